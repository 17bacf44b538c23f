package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"

	"golang.org/x/sys/unix"
)

// Probe says whether a sandbox can be made here: a mount namespace of
// its own, a tmpfs in it, and an overlay over a directory of the root
// filesystem, tried on a thread that ends with the try. nil when it can;
// else an error wrapping ErrUnavailable that says why, in a user's words.
func Probe(stageParent string) error {
	if err := privileged(); err != nil {
		return err
	}
	errc := make(chan error, 1)
	go func() {
		// Never unlocked: the thread ends with the goroutine.
		runtime.LockOSThread()
		errc <- probe(stageParent)
	}()
	return <-errc
}

func probe(stageParent string) error {
	stage, err := os.MkdirTemp(stageParent, "writewatch-probe-")
	if err != nil {
		return fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	defer os.Remove(stage)
	if err := unix.Unshare(unix.CLONE_NEWNS); err != nil {
		if errors.Is(err, unix.EPERM) {
			return fmt.Errorf("%w: making a mount namespace needs CAP_SYS_ADMIN (root, or sudo)", ErrUnavailable)
		}
		return fmt.Errorf("%w: make a mount namespace: %w", ErrUnavailable, err)
	}
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("%w: make the mounts private: %w", ErrUnavailable, err)
	}
	if err := unix.Mount("writewatch-probe", stage, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=0700"); err != nil {
		return fmt.Errorf("%w: mount a tmpfs: %w", ErrUnavailable, err)
	}
	for _, d := range []string{"upper", "work", "merged"} {
		if err := os.Mkdir(filepath.Join(stage, d), 0o700); err != nil {
			return fmt.Errorf("%w: %w", ErrUnavailable, err)
		}
	}
	opts := "lowerdir=/,upperdir=" + filepath.Join(stage, "upper") + ",workdir=" + filepath.Join(stage, "work")
	if err := unix.Mount("writewatch-probe", filepath.Join(stage, "merged"), "overlay", unix.MS_NODEV, opts); err != nil {
		return rootRefused("the root filesystem", err)
	}
	return nil
}
