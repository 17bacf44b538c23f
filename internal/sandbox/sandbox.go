// Package sandbox runs COMMAND in a private mount namespace where every
// filesystem it could write outside the allowlist is a copy-on-write
// overlay over the real one (--sandbox). What the allowlist allows is the
// real filesystem, bound through, so allowed writes land and cost
// nothing more; the special filesystems (/proc, /sys, /dev, /run,
// cgroup) are bound through as they are. Nothing COMMAND writes outside
// the allowlist reaches the real files: processes outside the tree keep
// seeing them as they were. When the run ends, the overlays' upper
// layers are what changed (Changes): the kernel's own VFS resolved every
// path into them, so no argument race, symlink swap or unhooked call
// hides a change. A change the allowlist allows (a glob, a path missing
// at the start) is applied to the real filesystem then (Apply).
//
// The sandbox lives on one OS thread of writewatch's, locked to it: the
// thread leaves writewatch's mount namespace, mounts the overlays' layers
// on a tmpfs of its own, builds the tree and makes it its root. COMMAND
// is started from that thread (Do), so it starts inside; writewatch's
// other threads stay outside, and read the layers through descriptors
// the thread opened. The tmpfs and the overlays go when the thread and
// the last process of the tree are gone.
package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"

	"golang.org/x/sys/unix"
)

// ErrUnavailable means the sandbox cannot be made here: no privilege to
// make a mount namespace or mount, no overlayfs.
var ErrUnavailable = errors.New("the sandbox cannot be made here")

// ErrNoPrivilege means the sandbox cannot be made for lack of privilege:
// this process lacks CAP_SYS_ADMIN (root would have it). It wraps
// ErrUnavailable; any other reason (no overlayfs, say) root has too.
var ErrNoPrivilege = fmt.Errorf("%w: making a mount namespace and overlays needs CAP_SYS_ADMIN", ErrUnavailable)

// Sandbox is one run's sandbox.
type Sandbox struct {
	plan   *Plan
	layers []layer
	stage  string   // the directory the layers' tmpfs is mounted on, outside
	tmp    *os.File // the layers' tmpfs, opened before the tree became the root
	root   *os.File // the sandbox's root
	calls  chan func()
	done   chan struct{}
	// Notes say what the sandbox could not do as planned (a filesystem
	// that could not be overlaid, bound read-only instead).
	Notes []string
}

// layer is one overlay: its mount point, and its upper layer's name
// under the tmpfs.
type layer struct {
	point string
	n     int
}

// Start makes the sandbox on a thread of its own and returns once it is
// ready for COMMAND (Do). stageParent is where the directory the layers'
// tmpfs is mounted on is made.
func Start(plan *Plan, stageParent string) (*Sandbox, error) {
	if err := privileged(); err != nil {
		return nil, err
	}
	stage, err := os.MkdirTemp(stageParent, "writewatch-sandbox-")
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	sb := &Sandbox{plan: plan, stage: stage, calls: make(chan func()), done: make(chan struct{})}
	ready := make(chan error, 1)
	go func() {
		// Never unlocked: the thread, which left writewatch's mount
		// namespace, ends with this goroutine.
		runtime.LockOSThread()
		defer close(sb.done)
		if err := sb.build(); err != nil {
			ready <- err
			return
		}
		ready <- nil
		for f := range sb.calls {
			f()
		}
	}()
	if err := <-ready; err != nil {
		os.Remove(stage)
		return nil, err
	}
	return sb, nil
}

// Do runs f on the sandbox's thread: a process it starts starts inside
// the sandbox.
func (sb *Sandbox) Do(f func()) {
	done := make(chan struct{})
	sb.calls <- func() {
		defer close(done)
		f()
	}
	<-done
}

// Root is a path, of writewatch's, to the sandbox's root: a path of
// COMMAND's P is Root+P here.
func (sb *Sandbox) Root() string { return "/proc/self/fd/" + strconv.Itoa(int(sb.root.Fd())) }

// upper is a path, of writewatch's, to the upper layer of overlay l.
func (sb *Sandbox) upper(l layer) string {
	return fmt.Sprintf("/proc/self/fd/%d/upper/%d", sb.tmp.Fd(), l.n)
}

// Close lets the sandbox go: its thread ends, and the layers with the
// last process of the tree.
func (sb *Sandbox) Close() error {
	close(sb.calls)
	<-sb.done
	err := errors.Join(sb.tmp.Close(), sb.root.Close())
	return errors.Join(err, os.Remove(sb.stage))
}

// build makes the sandbox on the calling thread: a mount namespace of
// its own, the layers' tmpfs, the tree, then the tree as its root.
func (sb *Sandbox) build() error {
	if err := unix.Unshare(unix.CLONE_NEWNS); err != nil {
		return fmt.Errorf("%w: make a mount namespace: %w", ErrUnavailable, err)
	}
	// Nothing mounted here reaches writewatch's namespace, nor the
	// other way.
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("%w: make the mounts private: %w", ErrUnavailable, err)
	}
	if err := unix.Mount("writewatch-sandbox", sb.stage, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=0700"); err != nil {
		return fmt.Errorf("%w: mount a tmpfs for the layers: %w", ErrUnavailable, err)
	}
	for _, d := range []string{"root", "lower", "upper", "work"} {
		if err := os.Mkdir(filepath.Join(sb.stage, d), 0o700); err != nil {
			return fmt.Errorf("%w: %w", ErrUnavailable, err)
		}
	}
	for i, pl := range sb.plan.Places {
		if err := sb.mount(i, pl); err != nil {
			if pl.Path == "/" {
				return err
			}
			sb.Notes = append(sb.Notes, err.Error())
		}
	}
	var err error
	if sb.tmp, err = os.OpenFile(sb.stage, unix.O_PATH|unix.O_DIRECTORY, 0); err != nil {
		return fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	if sb.root, err = os.OpenFile(filepath.Join(sb.stage, "root"), unix.O_PATH|unix.O_DIRECTORY, 0); err != nil {
		return fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	return sb.enter()
}

// mount makes place i of the tree.
func (sb *Sandbox) mount(i int, pl Place) error {
	target := filepath.Join(sb.stage, "root", pl.Path)
	if pl.How == Real {
		if err := unix.Mount(pl.Path, target, "", unix.MS_BIND, ""); err != nil {
			return fmt.Errorf("%s (%s) could not be bound into the sandbox: %w", pl.Path, pl.FSType, err)
		}
		if pl.Why == "allowed" {
			// Device nodes there do not work (a node of the disk would
			// write the filesystem itself).
			return remount(target, unix.MS_NODEV)
		}
		return nil
	}
	lower := filepath.Join(sb.stage, "lower", strconv.Itoa(i))
	upper := filepath.Join(sb.stage, "upper", strconv.Itoa(i))
	work := filepath.Join(sb.stage, "work", strconv.Itoa(i))
	for _, d := range []string{lower, upper, work} {
		if err := os.Mkdir(d, 0o755); err != nil {
			return err
		}
	}
	if err := unix.Mount(pl.Path, lower, "", unix.MS_BIND, ""); err != nil {
		return fmt.Errorf("%w: %s: %w", ErrUnavailable, pl.Path, err)
	}
	opts := "lowerdir=" + lower + ",upperdir=" + upper + ",workdir=" + work
	err := unix.Mount("writewatch", target, "overlay", unix.MS_NODEV, opts+",redirect_dir=on,index=off,metacopy=off")
	if err != nil {
		err = unix.Mount("writewatch", target, "overlay", unix.MS_NODEV, opts)
	}
	if err != nil {
		if pl.Path == "/" {
			return rootRefused("the root filesystem ("+pl.FSType+")", err)
		}
		// Bound read-only instead: nothing written there lands.
		if berr := unix.Mount(pl.Path, target, "", unix.MS_BIND, ""); berr != nil {
			return fmt.Errorf("%s (%s) could not be overlaid (%v) nor bound: %w", pl.Path, pl.FSType, err, berr)
		}
		remount(target, unix.MS_RDONLY)
		return fmt.Errorf("%s (%s) could not be overlaid (%v): it is read-only in the sandbox", pl.Path, pl.FSType, err)
	}
	sb.layers = append(sb.layers, layer{point: pl.Path, n: i})
	return nil
}

// rootRefused says why the root filesystem (what) could not be
// overlaid: the kernel has no overlayfs at all (ENODEV: not built, or
// built as a module that is not loaded and that nothing loaded on
// demand, as in an initramfs without modprobe), or it refused that
// filesystem as a lower layer.
func rootRefused(what string, err error) error {
	if errors.Is(err, unix.ENODEV) {
		return fmt.Errorf("%w: the kernel has no overlayfs (modprobe overlay)", ErrUnavailable)
	}
	return fmt.Errorf("%w: %s could not be overlaid: %w", ErrUnavailable, what, err)
}

// remount adds flags to the bind mount at target, keeping its own.
func remount(target string, flags uintptr) error {
	var st unix.Statfs_t
	if err := unix.Statfs(target, &st); err != nil {
		return err
	}
	keep := uintptr(0)
	for _, f := range []struct{ st, ms uintptr }{
		{unix.ST_RDONLY, unix.MS_RDONLY}, {unix.ST_NOSUID, unix.MS_NOSUID}, {unix.ST_NODEV, unix.MS_NODEV},
		{unix.ST_NOEXEC, unix.MS_NOEXEC}, {unix.ST_NOATIME, unix.MS_NOATIME}, {unix.ST_NODIRATIME, unix.MS_NODIRATIME},
		{unix.ST_RELATIME, unix.MS_RELATIME},
	} {
		if uintptr(st.Flags)&f.st != 0 {
			keep |= f.ms
		}
	}
	return unix.Mount("", target, "", unix.MS_BIND|unix.MS_REMOUNT|keep|flags, "")
}

// enter makes the tree the thread's root: the old root is stacked over
// it and detached, so that no path of COMMAND's leads to it.
func (sb *Sandbox) enter() error {
	cwd, _ := os.Getwd()
	if err := unix.Chdir(filepath.Join(sb.stage, "root")); err != nil {
		return fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	switch err := unix.PivotRoot(".", "."); {
	case errors.Is(err, unix.EINVAL):
		// The root is the initramfs (rootfs), which cannot be pivoted
		// away: the tree is moved over it instead, as switch_root does,
		// and made the root.
		if err := unix.Mount(".", "/", "", unix.MS_MOVE, ""); err != nil {
			return fmt.Errorf("%w: move the tree over the initramfs: %w", ErrUnavailable, err)
		}
		if err := unix.Chroot("."); err != nil {
			return fmt.Errorf("%w: make the tree the root: %w", ErrUnavailable, err)
		}
	case err != nil:
		return fmt.Errorf("%w: make the tree the root: %w", ErrUnavailable, err)
	default:
		if err := unix.Unmount(".", unix.MNT_DETACH); err != nil {
			return fmt.Errorf("%w: leave the old root: %w", ErrUnavailable, err)
		}
	}
	if err := unix.Chdir(cwd); err != nil {
		unix.Chdir("/")
	}
	return nil
}

// privileged says why this process cannot make a sandbox for lack of
// privilege: CAP_SYS_ADMIN, which mount namespaces and mounts need.
func privileged() error {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return fmt.Errorf("%w: read capabilities: %w", ErrUnavailable, err)
	}
	if data[unix.CAP_SYS_ADMIN/32].Effective&(1<<(unix.CAP_SYS_ADMIN%32)) == 0 {
		return fmt.Errorf("%w, which this process lacks", ErrNoPrivilege)
	}
	return nil
}
