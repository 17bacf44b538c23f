package session

import (
	"errors"
	"fmt"
	"io/fs"
	"strconv"
	"strings"

	"github.com/writewatch/writewatch/internal/live"
	"github.com/writewatch/writewatch/internal/runners"
	"github.com/writewatch/writewatch/internal/witness"
	"github.com/writewatch/writewatch/report"
	"github.com/writewatch/writewatch/tracer"
)

// Finish ends the session with what the run knows at its end, and
// returns the report. The witness's changes held until then are decided
// first: call it once every item is handled.
func (s *Session) Finish(end End) *report.Report {
	if s.rec != nil {
		s.rec.end(&end)
	}
	s.now = end.Finished
	if s.cfg.Witness {
		s.found(s.checker.Flush())
	}
	if s.tree == nil { // COMMAND never started
		s.launched(&Launched{})
	}
	rep := s.header()
	if s.cfg.Sandbox != nil {
		s.sandboxFindings()
	}
	for _, r := range end.Repeats {
		for _, g := range s.repeatOf[r.Key] {
			s.groups.RepeatN(g.op, g.path, g.role, g.who, int(r.N), g.errno)
		}
	}
	stats := end.Stats
	rep.Finished = end.Finished
	rep.CommandExit = end.CommandExit
	rep.Processes = s.tree.Seen()
	rep.Events = s.writes + stats.AllowedInKernel + stats.Repeats
	rep.Violations = s.groups.Violations()
	s.sev.Survivors = len(end.Alive) > 0
	s.sev.Assign(rep.Violations)
	if s.cfg.Baseline != nil {
		report.ApplyBaseline(rep, s.cfg.Baseline, s.cfg.BaselineFile, s.there)
	}
	rep.Notes = append(rep.Notes, assumedNote(s.sev.Assumed.Renames, s.sev.Assumed.Metadata, end.Stats.NoPrior)...)
	report.SortBySeverity(rep.Violations)
	rep.UnlistedViolations = s.groups.Unlisted
	s.xreads.fill(rep)
	rep.Survivors = s.tree.Survivors(end.Alive)
	rep.SurvivorsKilled = s.cfg.KillSurvivors && len(end.Alive) > 0
	rep.PeakRSS = end.PeakRSS
	for _, p := range stats.Programs {
		if p.Runs > 0 || p.Missed > 0 {
			rep.Programs = append(rep.Programs, report.ProgramStat{Name: p.Name, Runs: p.Runs, RunNS: uint64(p.Runtime), Missed: p.Missed})
		}
	}
	if end.StatsErr == "" {
		s.kernel(rep, stats)
	}
	for _, r := range end.TestResults {
		s.tests.Result(r.Runner, r.Package, r.ID, r.Outcome, r.Seconds, r.Message)
	}
	s.finishKills(rep)
	rep.Tests = s.tests.Results()
	rep.Notes = append(rep.Notes, s.tests.Notes()...)
	rep.Packages = s.tests.Packages()
	if s.cfg.Sandbox == nil {
		s.witness(rep, end.Witness)
	} else {
		rep.Incomplete = append(rep.Incomplete, s.ledger.Reasons()...)
		rep.Sandbox = &end.Sandbox
	}
	rep.Notes = append(rep.Notes, s.cfg.GoFlags.Notes(runners.GoTests(s.tree.Cmdlines()))...)
	if s.rec != nil {
		s.rec.flush()
	}
	return rep
}

// there reports whether something is at path at the end of the run (an
// error other than not found: assume it is).
func (s *Session) there(path string) bool {
	_, err := s.host.Lstat(path)
	return !errors.Is(err, fs.ErrNotExist)
}

// assumedNote says which severities are data-loss because nothing told
// what a call found: renames onto paths that may have held nothing, and
// metadata changes that may have been set back; why (the kernel's
// reason, noPrior) when it is known.
func assumedNote(renames, metadata int, noPrior string) []string {
	if renames == 0 && metadata == 0 {
		return nil
	}
	var what []string
	if renames > 0 {
		what = append(what, plural(renames, "rename onto a path", "renames onto paths")+" counted as replacing a file from before the run")
	}
	if metadata > 0 {
		what = append(what, plural(metadata, "change of a file's mode, owner or times", "changes of files' modes, owners or times")+" counted as lasting")
	}
	why := "nothing told what was there before the call"
	if noPrior != "" {
		why += " (the kernel's VFS could not be hooked: " + noPrior + "; the filesystem witness tells of renames)"
	}
	return []string{fmt.Sprintf("%s, as data-loss: %s", strings.Join(what, "; "), why)}
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}

// header starts the report with what was known before the run.
func (s *Session) header() *report.Report {
	rep := &report.Report{
		Version: report.SchemaVersion,
		Mode:    s.cfg.Mode,
		Command: s.cfg.Command,
		WorkDir: s.cfg.WorkDir,
		Home:    s.cfg.Home,
		Started: s.cfg.Started,
	}
	if s.tier != nil {
		rep.Enforcement = s.tier.String()
		rep.EnforcementNote = s.tier.Note()
	}
	if s.cfg.Allow != nil {
		rep.ConfigFile = s.cfg.Allow.ConfigFile()
	}
	return rep
}

// kernel adds the kernel's counters to the report: what it lost, what it
// settled, why the run could not see everything.
func (s *Session) kernel(rep *report.Report, stats tracer.Stats) {
	s.live.SetKernel(KernelCounters(stats))
	rep.LostEvents = stats.Lost()
	rep.LostWrites = stats.LostWrites
	rep.Lost = stats.LostByCause()
	rep.TruncatedPaths = stats.Truncated
	rep.AllowedInKernel = stats.AllowedInKernel
	if u := stats.Unattributed(); len(u) > 0 {
		rep.Unattributed = u
	}
	if s.tier != nil {
		rep.LostRefusals = s.tier.LostRefusals(stats, s.refused)
	}
	rep.Incomplete = stats.Incomplete(s.tier != nil, s.cfg.Witness)
	if stats.LostReads > 0 {
		rep.Notes = append(rep.Notes, fmt.Sprintf("%d reads of files the run wrote were not seen (the kernel's ring buffer was full): cross-test reads among them are not listed", stats.LostReads))
	}
	if stats.WrittenFull > 0 {
		rep.Notes = append(rep.Notes, fmt.Sprintf("%d written files were not watched for reads by other tests (the kernel's set of written files was full): cross-test reads of them are not listed", stats.WrittenFull))
	}
}

// witness adds the witness's account to the report, info its Watch's
// part, and the reasons the run could not see everything from the
// ledger.
func (s *Session) witness(rep *report.Report, info report.WitnessInfo) {
	st := s.checker.Stats()
	info.Events, info.Unexplained = st.Changes, st.Unexplained
	info.Overflows, info.Unresolved, info.OverlayLayers = st.Overflows, st.Unresolved, st.OverlayLayers
	rep.Witness = &info
	rep.Notes = append(rep.Notes, witness.Notes(&info)...)
	rep.Incomplete = append(rep.Incomplete, s.ledger.Reasons()...)
	rep.Incomplete = append(rep.Incomplete, s.checker.Incomplete()...)
}

// KernelCounters are the kernel's counters the live counters show.
func KernelCounters(st tracer.Stats) live.Kernel {
	return live.Kernel{
		Lost:      [len(live.LostCauses)]uint64{st.RingbufFull, st.ProcMapFull},
		Truncated: st.Truncated,
		Settled:   st.AllowedInKernel + st.Repeats,
	}
}
