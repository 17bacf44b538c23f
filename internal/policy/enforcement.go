package policy

import (
	"github.com/writewatch/writewatch/internal/launch"
	"github.com/writewatch/writewatch/report"
	"github.com/writewatch/writewatch/tracer"
	"golang.org/x/sys/unix"
)

// Enforcement is how one run enforces the allowlist.
type Enforcement struct {
	Tier Tier
	// Kill kills the process that tried a write outside the allowlist.
	Kill bool
	Plan *Plan
	// Support is what this machine offers, as Probe found it.
	Support Support
	// Dirs are the directories made for COMMAND, granted in Plan; nil
	// when none.
	Dirs *Dirs
}

// Env is COMMAND's environment env, pointed at the directories made for
// it (see Dirs).
func (e *Enforcement) Env(env []string) []string {
	if e.Dirs == nil {
		return env
	}
	return e.Dirs.Env(env)
}

// GuardMetadata says whether metadata changes outside the grants are
// refused before they run, by the metadata guard (package metaguard),
// rather than their writer killed at the syscall's entry, after which
// the change may still land.
func (e *Enforcement) GuardMetadata() bool { return e.Support.MetadataGuardErr == nil }

// Kernel is what the BPF programs enforce: the plan's marks, and the
// grants as strings for paths judged before they exist.
func (e *Enforcement) Kernel() ([]tracer.Mark, *tracer.EnforceOptions) {
	dirs, exact := e.Plan.Prefixes(tracer.PrefixMax)
	o := &tracer.EnforceOptions{Tier: e.Tier.String(), Kill: e.Kill, Prefixes: dirs, Exact: exact}
	e.Tier.Kernel(o)
	return e.Plan.Marks(), o
}

// LandlockSignalABI is the first Landlock ABI that scopes signals.
const LandlockSignalABI = 6

// Landlock is the Landlock ruleset COMMAND starts under, or nil: the
// tier's, and, where Landlock scopes signals, one that keeps the tree
// from signalling processes outside it, under every tier. When COMMAND
// runs as the user writewatch runs as (setcap, or both root), the tree
// could otherwise kill writewatch, and the BPF programs of the kill and
// lsm tiers go with it: the writes after that would be neither refused
// nor killed.
func (e *Enforcement) Landlock() *launch.Landlock {
	l := e.Tier.Launch(e)
	if e.Support.LandlockABI >= LandlockSignalABI {
		if l == nil {
			l = &launch.Landlock{}
		}
		l.Scoped |= unix.LANDLOCK_SCOPE_SIGNAL
	}
	return l
}

// Refusals counts the records of writes enforcement acted on, by what it
// did, to find those the kernel counted but whose records were lost.
type Refusals struct {
	Blocked, Killed uint64
}

// Count counts a record with the action bits action (tracer.Action*).
func (r *Refusals) Count(action uint32) {
	if action&tracer.ActionBlocked != 0 {
		r.Blocked++
	}
	if action&tracer.ActionKilled != 0 {
		r.Killed++
	}
}

// Action names what enforcement did about a write (tracer.Action* bits)
// the way the report does.
func Action(bits uint32) string {
	switch bits & (tracer.ActionBlocked | tracer.ActionKilled) {
	case tracer.ActionBlocked:
		return report.ActionBlocked
	case tracer.ActionKilled:
		return report.ActionKilled
	case tracer.ActionBlocked | tracer.ActionKilled:
		return report.ActionBlockedKilled
	}
	return report.ActionReported
}
