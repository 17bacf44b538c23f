package policy

import (
	"errors"
	"fmt"

	"github.com/writewatch/writewatch/internal/launch"
	"github.com/writewatch/writewatch/tracer"
	"golang.org/x/sys/unix"
)

// landlockTier: COMMAND runs under a Landlock ruleset built from the
// plan; the kernel refuses writes outside it, and the BPF programs see
// the refusal at the syscall's exit (and kill the writer).
type landlockTier struct{}

func init() { register(20, landlockTier{}) }

// MinLandlockABI is the first Landlock ABI that restricts truncate(2):
// before it, a file could be emptied outside the ruleset.
const MinLandlockABI = 3

func (landlockTier) String() string { return "landlock" }

func (landlockTier) Probe(s *Support) (string, error) {
	switch {
	case s.LandlockErr != nil:
		return "", errors.New("Landlock unavailable: " + s.LandlockErr.Error())
	case s.LandlockABI < MinLandlockABI:
		return "", fmt.Errorf("Landlock ABI %d is older than %d, which restricts truncate(2)", s.LandlockABI, MinLandlockABI)
	}
	return fmt.Sprintf("Landlock ABI %d", s.LandlockABI), nil
}

// Kernel: Landlock has no right for extended attributes, and io_uring's
// requests pass no seccomp filter, so the metadata guard cannot refuse
// IORING_OP_SETXATTR: COMMAND gets no io_uring instead.
func (landlockTier) Kernel(o *tracer.EnforceOptions) { o.NoIOURing = true }

// Launch is the ruleset of the plan: every write right on each grant,
// those that apply to a file on a file, but for making a block device's
// node, which no grant has: through one, the device is written.
func (landlockTier) Launch(e *Enforcement) *launch.Landlock {
	rights := launch.LandlockWriteRights(e.Support.LandlockABI)
	l := &launch.Landlock{Handled: rights, Rules: make([]launch.LandlockRule, 0, len(e.Plan.Grants))}
	for _, g := range e.Plan.Grants {
		access := rights &^ unix.LANDLOCK_ACCESS_FS_MAKE_BLOCK
		if !g.Dir {
			access &= launch.LandlockFileRights
		}
		l.Rules = append(l.Rules, launch.LandlockRule{Path: g.Path, Access: access})
	}
	return l
}

func (landlockTier) Explain() string {
	return "COMMAND runs under a Landlock ruleset: the kernel refuses writes outside the grants below (EACCES), and kills the writer; io_uring_setup fails (ENOSYS), as Landlock cannot refuse io_uring's extended-attribute requests"
}

func (landlockTier) Refuses() bool { return true }

func (landlockTier) Note() string { return "" }

// LostRefusals counts the refusals seen at the syscall's exit.
func (landlockTier) LostRefusals(st tracer.Stats, seen Refusals) uint64 {
	return lost(st.Blocked, seen.Blocked)
}
