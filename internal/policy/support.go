package policy

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"runtime"
	"slices"
	"strings"

	"github.com/writewatch/writewatch/internal/launch"
	"github.com/writewatch/writewatch/internal/metaguard"
	"github.com/writewatch/writewatch/internal/tracer"
	"golang.org/x/sys/unix"
)

// Tier is the mechanism that enforces the allowlist.
type Tier string

const (
	// LSM: BPF LSM programs refuse the write in the kernel, for the
	// processes of the traced tree only.
	LSM Tier = "lsm"
	// Landlock: COMMAND runs under a Landlock ruleset built from the
	// allowlist; the kernel refuses writes outside it.
	Landlock Tier = "landlock"
	// Kill: the process is killed at the entry of the syscall. The call
	// itself still runs: the first offending write may take effect.
	Kill Tier = "kill"
)

// ParseTier reads the value of --enforce-with: a tier name, or "" or
// "auto" for the strongest this kernel offers (returned as "").
func ParseTier(s string) (Tier, error) {
	switch s {
	case "", "auto":
		return "", nil
	case string(LSM), string(Landlock), string(Kill):
		return Tier(s), nil
	}
	return "", fmt.Errorf("--enforce-with %q: want lsm, landlock, kill or auto", s)
}

// MinLandlockABI is the first Landlock ABI that restricts truncate(2):
// before it, a file could be emptied outside the ruleset.
const MinLandlockABI = 3

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
	switch {
	case s.LSMErr != nil:
		s.BPFLSMErr = fmt.Errorf("active LSMs unknown: %w", s.LSMErr)
	case !slices.Contains(s.LSMs, "bpf"):
		s.BPFLSMErr = errors.New("bpf is not an active LSM (boot with lsm=...,bpf)")
	default:
		s.BPFLSMErr = tracer.ProbeLSM()
	}
	s.LandlockABI, s.LandlockErr = launch.LandlockABI()
	s.MetadataGuardErr = metaguard.Supported()
	return s
}

// Choose picks the tier: forced when not "", else the strongest
// available. why explains the choice; an error means the forced tier is
// not available here.
func (s Support) Choose(forced Tier) (tier Tier, why string, err error) {
	lsmWhy := "BPF LSM programs load here"
	if s.BPFLSMErr != nil {
		lsmWhy = "BPF LSM unavailable: " + s.BPFLSMErr.Error()
	}
	llWhy := fmt.Sprintf("Landlock ABI %d", s.LandlockABI)
	llOK := s.LandlockABI >= MinLandlockABI
	switch {
	case s.LandlockErr != nil:
		llWhy = "Landlock unavailable: " + s.LandlockErr.Error()
	case !llOK:
		llWhy = fmt.Sprintf("Landlock ABI %d is older than %d, which restricts truncate(2)", s.LandlockABI, MinLandlockABI)
	}
	switch forced {
	case LSM:
		if s.BPFLSMErr != nil {
			return "", "", errors.New("--enforce-with lsm: " + lsmWhy)
		}
		return LSM, "forced by --enforce-with; " + lsmWhy, nil
	case Landlock:
		if !llOK {
			return "", "", errors.New("--enforce-with landlock: " + llWhy)
		}
		return Landlock, "forced by --enforce-with; " + llWhy, nil
	case Kill:
		return Kill, "forced by --enforce-with", nil
	}
	if s.BPFLSMErr == nil {
		return LSM, lsmWhy, nil
	}
	if llOK {
		return Landlock, lsmWhy + "; " + llWhy, nil
	}
	return Kill, lsmWhy + "; " + llWhy, nil
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
