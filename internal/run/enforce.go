package run

import (
	"syscall"

	"github.com/writewatch/writewatch/internal/launch"
	"github.com/writewatch/writewatch/internal/policy"
	"github.com/writewatch/writewatch/internal/report"
	"github.com/writewatch/writewatch/internal/tracer"
)

// enforceOptions turns the plan into what the kernel checks: an allowed
// mark on every grant, a denied mark on every denied path that exists
// (so a hard link into a granted directory does not free it), and the
// grants as strings for paths judged before they exist.
func enforceOptions(e *Enforce) ([]tracer.Mark, *tracer.EnforceOptions) {
	var marks []tracer.Mark
	add := func(path string, kind tracer.MarkKind) {
		var st syscall.Stat_t
		if syscall.Stat(path, &st) == nil {
			marks = append(marks, tracer.Mark{Dev: st.Dev, Ino: st.Ino, Kind: kind})
		}
	}
	// No grant lies at or under a denied path, so reaching a grant
	// decides: every grant is final.
	for _, g := range e.Plan.Grants {
		add(g.Path, tracer.MarkAllow|tracer.MarkFinal)
	}
	for _, d := range e.Plan.Denied {
		add(d, tracer.MarkDeny)
	}
	dirs, exact := e.Plan.Prefixes(tracer.PrefixMax)
	return marks, &tracer.EnforceOptions{Tier: string(e.Tier), LSM: e.Tier == policy.LSM, Kill: e.Kill, Prefixes: dirs, Exact: exact}
}

// landlockRules is the Landlock ruleset of the plan: every write right
// on each grant (the trampoline keeps only the file rights for a file).
func landlockRules(e *Enforce) *launch.Landlock {
	rights := launch.LandlockWriteRights(e.LandlockABI)
	l := &launch.Landlock{Handled: rights}
	for _, g := range e.Plan.Grants {
		l.Rules = append(l.Rules, launch.LandlockRule{Path: g.Path, Access: rights})
	}
	return l
}

// action names what enforcement did (tracer.Action* bits).
func action(bits uint32) string {
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
