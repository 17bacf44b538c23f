package policy

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"runtime"
	"strings"

	"github.com/writewatch/writewatch/internal/launch"
	"github.com/writewatch/writewatch/internal/metaguard"
	"golang.org/x/sys/unix"
)

// Support is what this machine offers for tracing and enforcing.
type Support struct {
	Kernel      string
	BTF         bool
	Tracefs     string   // where tracefs is mounted; "" when it is not (writewatch does not need it)
	LSMs        []string // active LSMs, in order
	LSMErr      error    // why LSMs could not be read
	BPFLSMErr   error    // nil when a BPF LSM program loads here
	LandlockABI int      // 0 when Landlock is not available
	LandlockErr error
	// MetadataGuardErr is nil when seccomp user notification works here,
	// so that the metadata guard can refuse metadata changes.
	MetadataGuardErr error
}

// Probe looks at the running kernel. Loading a BPF LSM program to see
// whether it would work needs root (or CAP_BPF and CAP_MAC_ADMIN).
func Probe() Support {
	var s Support
	var uts unix.Utsname
	if unix.Uname(&uts) == nil {
		s.Kernel = unix.ByteSliceToString(uts.Release[:])
	}
	_, err := os.Stat("/sys/kernel/btf/vmlinux")
	s.BTF = err == nil
	s.Tracefs = tracefsMount()
	s.LSMs, s.LSMErr = activeLSMs()
	s.BPFLSMErr = probeBPFLSM(s.LSMs, s.LSMErr)
	s.LandlockABI, s.LandlockErr = launch.LandlockABI()
	s.MetadataGuardErr = metaguard.Supported()
	return s
}

// tracefsMount returns where tracefs is mounted, or "".
func tracefsMount() string {
	data, err := os.ReadFile("/proc/self/mounts")
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) >= 3 && f[2] == "tracefs" {
			return f[1]
		}
	}
	return ""
}

const lsmFile = "/sys/kernel/security/lsm"

// activeLSMs reads the active LSMs from securityfs. When securityfs is not
// mounted, it is mounted read-only in a mount namespace of a thread of
// its own, which ends with the look-up, so the system is left as it was.
func activeLSMs() ([]string, error) {
	data, err := os.ReadFile(lsmFile)
	if errors.Is(err, fs.ErrNotExist) {
		data, err = lsmsPrivateMount()
	}
	if err != nil {
		return nil, err
	}
	return strings.Split(strings.TrimSpace(string(data)), ","), nil
}

func lsmsPrivateMount() ([]byte, error) {
	type result struct {
		data []byte
		err  error
	}
	ch := make(chan result, 1)
	go func() {
		// Never unlocked: the runtime ends the thread with the goroutine.
		runtime.LockOSThread()
		var r result
		defer func() { ch <- r }()
		if err := unix.Unshare(unix.CLONE_NEWNS); err != nil {
			r.err = fmt.Errorf("securityfs is not mounted and cannot be (unshare: %w)", err)
			return
		}
		if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
			r.err = fmt.Errorf("securityfs is not mounted and cannot be: %w", err)
			return
		}
		if err := unix.Mount("securityfs", "/sys/kernel/security", "securityfs",
			unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
			r.err = fmt.Errorf("securityfs is not mounted and cannot be: %w", err)
			return
		}
		r.data, r.err = os.ReadFile(lsmFile)
	}()
	r := <-ch
	return r.data, r.err
}
