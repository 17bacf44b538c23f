package run

import (
	"fmt"
	"os"
	"strconv"

	"github.com/writewatch/writewatch/internal/launch"
	"github.com/writewatch/writewatch/internal/mountinfo"
	"github.com/writewatch/writewatch/internal/phases"
	"github.com/writewatch/writewatch/internal/sandbox"
	"github.com/writewatch/writewatch/internal/session"
	"github.com/writewatch/writewatch/report"
	"golang.org/x/sys/unix"
)

// stageParent is where the sandbox's layers are mounted from: /run,
// whose mounts COMMAND's tree does not carry, else the temporary
// directory.
func stageParent() string {
	if st, err := os.Stat("/run"); err == nil && st.IsDir() {
		return "/run"
	}
	return os.TempDir()
}

// startSandbox makes COMMAND's sandbox (--sandbox).
func startSandbox(cfg Config) (*sandbox.Sandbox, error) {
	defer phases.Start("sandbox")()
	mounts, err := mountinfo.Read()
	if err != nil {
		return nil, fmt.Errorf("%w: read the mounts: %w", sandbox.ErrUnavailable, err)
	}
	parent := stageParent()
	return sandbox.Start(sandbox.NewPlan(cfg.Allow, mounts, parent), parent)
}

// sandboxConfig is what the session knows of the sandbox.
func sandboxConfig(sb *sandbox.Sandbox) *session.SandboxConfig {
	overlaid, real := sb.Places()
	return &session.SandboxConfig{Overlaid: overlaid, Real: real}
}

// sandboxed hands the session what the sandbox's overlays hold once the
// tree is done: each change outside the allowlist, with what the path
// would have become; makes on the real filesystem those the allowlist
// allows; and keeps a copy of the others when asked (--sandbox-keep).
// It says all that in e.Sandbox.
func (r *runner) sandboxed(e *session.End) {
	defer phases.Start("sandbox: changes")()
	overlaid, real := r.sb.Places()
	e.Sandbox = report.SandboxInfo{Overlaid: overlaid, Real: real, Withheld: r.withheld}
	changes, err := r.sb.Changes()
	if err != nil {
		r.tell(session.Item{Incomplete: fmt.Sprintf("the sandbox's changes could not all be read: %v", err)})
	}
	for i := range changes {
		c := &changes[i]
		if c.Allowed {
			e.Sandbox.Applied = append(e.Sandbox.Applied, c.Path)
			continue
		}
		dir := c.After != nil && c.After.Type == "dir" || c.After == nil && c.Before != nil && c.Before.Type == "dir"
		r.tell(session.Item{Sandboxed: &session.Sandboxed{Path: []byte(c.Path), Dir: dir, Change: r.sb.Detail(c)}})
	}
	if err := r.sb.Apply(changes); err != nil {
		e.Sandbox.Unapplied = append(e.Sandbox.Unapplied, err.Error())
	}
	if r.cfg.SandboxKeep != "" {
		if err := r.sb.Keep(r.cfg.SandboxKeep, changes); err != nil {
			e.Sandbox.Unapplied = append(e.Sandbox.Unapplied, "--sandbox-keep: "+err.Error())
		} else {
			e.Sandbox.Kept = r.cfg.SandboxKeep
		}
	}
	e.Sandbox.ReadOnly = r.sb.Notes
}

// withhold keeps COMMAND from inheriting the descriptors, past its
// standard streams, that writewatch was started with open for writing on
// a regular file outside the allowlist: they lead to the real file, past
// the sandbox. It says which in r.withheld.
func (r *runner) withhold() {
	for _, fd := range launch.InheritedFDs() {
		if fd <= 2 {
			continue
		}
		var st unix.Stat_t
		fl, err := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0)
		if err != nil || unix.Fstat(fd, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFREG || fl&unix.O_ACCMODE == unix.O_RDONLY {
			continue
		}
		path, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(fd))
		if err == nil && r.cfg.Allow != nil && r.cfg.Allow.Allowed(path) {
			continue
		}
		unix.CloseOnExec(fd)
		r.withheld = append(r.withheld, fmt.Sprintf("descriptor %d, %s", fd, path))
	}
}
