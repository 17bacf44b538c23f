// Package metrics exposes a writewatch run as Prometheus metrics: live on
// an HTTP /metrics endpoint while COMMAND runs, and, once it has ended,
// pushed to a Pushgateway or written to a node_exporter textfile.
//
// # Metrics
//
// Every name starts with writewatch_. No label takes an unbounded set of
// values: violations are labelled by op (each operation's metric label in
// the table of operations, package ops), action and severity, lost events
// by cause. Every op and action the run's mode can have (the actions but
// reported only under --enforce) is always present, zero or not, with the
// severity unknown; the other severities when not zero.
//
// Severity is decided once the run has ended (package severity): while it
// lasts, /metrics counts every violation as unknown; the textfile and the
// push have the report's severities, unknown for a violation without one.
//
// Every metric is a gauge whose value is the run's: on /metrics, the run
// under way; pushed or in a textfile, the last run. None is a counter
// across runs: the Pushgateway keeps what was pushed last and adds
// nothing up, and per-run values answer what a CI job asks (what did its
// last run do). They are read as they are, not through rate() or
// increase().
//
//	writewatch_violations{op,action,severity}       writes outside the allowlist, every occurrence
//	writewatch_violation_groups{op,action,severity} violation groups, as the report lists them
//	writewatch_events                              write events examined
//	writewatch_events_lost{cause}                  events the kernel could not deliver
//	writewatch_truncated_paths                     paths cut to fit the kernel buffers
//	writewatch_traced_processes                    processes traced
//	writewatch_run_duration_seconds                time since COMMAND started; at the end, the run's length
//	writewatch_surviving_processes                 processes still running when writewatch finished (end only)
//	writewatch_exit_code                           writewatch's exit code (end only)
//	writewatch_incomplete                          1 when writewatch could not see everything, else 0 (end only)
//	writewatch_command_exit_code                   COMMAND's exit code, 128+N for signal N (end only)
//	writewatch_last_run_timestamp_seconds          when the run ended, Unix time (end only)
//	writewatch_last_clean_run_timestamp_seconds    when the last clean run ended (end only; see below)
//	writewatch_info{mode,version}                  always 1
//	writewatch_program_missed_runs{bpf_program}    runs of a BPF program the kernel skipped (end only)
//	writewatch_program_runs{bpf_program}           runs of a BPF program, while the kernel counted them (end only)
//	writewatch_program_run_seconds{bpf_program}    the time those runs took, summed over every process (end only)
//
// The program metrics have a sample for each of writewatch's BPF programs
// that the kernel counted a run or a skipped run of (the report's
// programs): runs and their time only while the kernel counts them
// (sysctl kernel.bpf_stats_enabled=1), skipped runs always. A skipped
// run of any program but the Go test probe (go_probe) makes the run
// incomplete.
//
// A run is clean when it found no write outside the allowlist, lost no
// event, saw everything (writewatch_incomplete is 0) and tracing did not
// fail. writewatch_last_clean_run_timestamp_seconds
// keeps the time of the last clean run of the same job across runs: a
// textfile carries the value over from the file it replaces, and a push
// uses the Pushgateway's POST (push-add) semantics, which replace only the
// metrics pushed: a run that is not clean does not push this metric, so
// the Pushgateway keeps the previous value. It is absent until a run has
// been clean.
//
// # The client library
//
// The metrics go through the Prometheus client library,
// github.com/prometheus/client_golang: each output (Serve, Push,
// WriteText) makes a registry of its own, holding writewatch's metrics
// alone, not the Go and process collectors of the library's default
// registry. New makes none, nor does anything at the package's
// initialisation; the library's own initialisation (its default registry
// among it) runs at every start of writewatch all the same
// (docs/performance.md).
package metrics

import (
	"slices"
	"sync"
	"time"

	"github.com/writewatch/writewatch/internal/live"
	"github.com/writewatch/writewatch/internal/ops"
	"github.com/writewatch/writewatch/report"
)

// Job is the job label under which runs are pushed.
const Job = "writewatch"

// Names of the metrics.
const (
	NameViolations    = "writewatch_violations"
	NameGroups        = "writewatch_violation_groups"
	NameEvents        = "writewatch_events"
	NameLost          = "writewatch_events_lost"
	NameTruncated     = "writewatch_truncated_paths"
	NameProcesses     = "writewatch_traced_processes"
	NameDuration      = "writewatch_run_duration_seconds"
	NameSurvivors     = "writewatch_surviving_processes"
	NameExitCode      = "writewatch_exit_code"
	NameIncomplete    = "writewatch_incomplete"
	NameCommandExit   = "writewatch_command_exit_code"
	NameLastRun       = "writewatch_last_run_timestamp_seconds"
	NameLastCleanRun  = "writewatch_last_clean_run_timestamp_seconds"
	NameInfo          = "writewatch_info"
	NameProgMissed    = "writewatch_program_missed_runs"
	NameProgRuns      = "writewatch_program_runs"
	NameProgSeconds   = "writewatch_program_run_seconds"
	labelOp           = "op"
	labelAction       = "action"
	labelCause        = "cause"
	labelMode         = "mode"
	labelVersion      = "version"
	labelProgram      = "bpf_program"
	labelSeverity     = "severity"
	reservedLabelJob  = "job"
	reservedLabelPref = "__"
)

// Live gives a run's live counters: *live.Counters does.
type Live interface {
	Snapshot() live.Snapshot
}

// Run is one writewatch run as the metrics see it: its live counters
// while it lasts, then its report. Its methods are safe for concurrent
// use.
type Run struct {
	progress Live
	mode     string
	version  string
	now      func() time.Time

	mu    sync.Mutex
	rep   *report.Report // nil while the run lasts
	clean bool
}

// New describes the run whose live counters are p, in mode (report.ModeGate
// or report.ModeAudit), by writewatch version.
func New(p Live, mode, version string) *Run {
	return &Run{progress: p, mode: mode, version: version, now: time.Now}
}

// Finish gives the run's report: from now on the metrics are its final
// values. traceErr is the error tracing ended with, if any; a run with one
// is not clean.
func (r *Run) Finish(rep *report.Report, traceErr error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.rep = rep
	r.clean = traceErr == nil && !rep.Failed() && !rep.Blind() && rep.LostEvents == 0
}

// Clean reports whether the run finished clean (see the package
// documentation); false while it lasts.
func (r *Run) Clean() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.rep != nil && r.clean
}

// values are the numbers the metrics show at one moment.
type values struct {
	live.Snapshot // but its Violations and Groups: see violations
	violations    bySeverity
	duration      float64
	final         bool
	// Only when final:
	survivors, exitCode, commandExit int
	incomplete                       bool
	finished                         time.Time
	lastClean                        float64 // Unix seconds; 0: unknown
	programs                         []report.ProgramStat
}

// values reads the run now. carried is the time of the last clean run
// known from before this one, in Unix seconds (0: none).
func (r *Run) values(carried float64) values {
	r.mu.Lock()
	rep, clean := r.rep, r.clean
	r.mu.Unlock()
	if rep == nil {
		v := values{Snapshot: r.progress.Snapshot()}
		v.violations = bySeverity{severityUnknown: liveViolations(&v.Snapshot)}
		if !v.Started.IsZero() {
			v.duration = r.now().Sub(v.Started).Seconds()
		}
		return v
	}
	v := values{final: true, Snapshot: fromReport(rep), violations: reportViolations(rep)}
	v.duration = rep.Finished.Sub(rep.Started).Seconds()
	v.survivors = len(rep.Survivors)
	v.exitCode, v.commandExit = rep.ExitCode, rep.CommandExit
	v.incomplete = rep.Blind()
	v.finished = rep.Finished
	v.programs = rep.Programs
	v.lastClean = carried
	if clean {
		v.lastClean = unixSeconds(rep.Finished)
	}
	return v
}

// fromReport computes the amounts from a finished run's report, so that
// the final metrics agree with the JSON report to the event; the
// violations are reportViolations'.
func fromReport(rep *report.Report) live.Snapshot {
	s := live.Snapshot{
		Started:   rep.Started,
		Processes: uint64(rep.Processes),
		Events:    rep.Events,
		Truncated: rep.TruncatedPaths,
	}
	for i, c := range live.LostCauses {
		s.Lost[i] = rep.Lost[c]
	}
	return s
}

// severityUnknown is the severity label of a violation not judged: every
// violation while the run lasts (severity is decided at its end, package
// severity), and at the end one writewatch could not judge.
const severityUnknown = "unknown"

// severities are the severity label's values, worst first.
var severities = append(slices.Clone(report.Severities), severityUnknown)

// counts are violations, every occurrence, and their groups.
type counts struct{ all, groups uint64 }

// byOp are the counts of each operation and action: indexes into
// live.Ops and live.Actions.
type byOp = [len(live.Ops)][len(live.Actions)]counts

// bySeverity are the counts by severity label.
type bySeverity map[string]*byOp

// liveViolations are the live counts, of unknown severity.
func liveViolations(s *live.Snapshot) *byOp {
	var c byOp
	for i := range c {
		for j := range c[i] {
			c[i][j] = counts{s.Violations[i][j], s.Groups[i][j]}
		}
	}
	return &c
}

// reportViolations counts a finished run's violations by severity.
func reportViolations(rep *report.Report) bySeverity {
	vs := bySeverity{}
	for _, v := range rep.Violations {
		i, j := live.OpIndex(v.Op), live.ActionIndex(v.Action)
		if i < 0 || j < 0 {
			continue
		}
		sev := v.Severity
		if !slices.Contains(report.Severities, sev) {
			sev = severityUnknown
		}
		if vs[sev] == nil {
			vs[sev] = new(byOp)
		}
		c := &vs[sev][i][j]
		c.all += uint64(max(v.Count, 1))
		c.groups++
	}
	return vs
}

// definition is one of writewatch's metrics: its name, help and own
// labels. Every metric is a gauge: its value is the run's (see the package
// documentation).
type definition struct {
	name, help string
	labels     []string
}

// definitions are writewatch's metrics. They are made when a registry is
// (collector.go), never at the package's initialisation.
func definitions() []definition {
	return []definition{
		{NameViolations, "Writes outside the allowlist in the run, every occurrence, by operation, action and severity (unknown until the run has ended).", []string{labelOp, labelAction, labelSeverity}},
		{NameGroups, "Violation groups in the run (distinct operation, path and role, as the report lists them), by operation, action and severity (unknown until the run has ended).", []string{labelOp, labelAction, labelSeverity}},
		{NameEvents, "Write events the run examined.", nil},
		{NameLost, "Events the kernel could not deliver in the run, by cause.", []string{labelCause}},
		{NameTruncated, "Paths the run cut to fit the kernel buffers.", nil},
		{NameProcesses, "Processes the run traced: COMMAND and every process it started.", nil},
		{NameDuration, "Time since COMMAND started; once the run has ended, its length.", nil},
		{NameSurvivors, "Processes of the tree still running when writewatch finished.", nil},
		{NameExitCode, "writewatch's exit code.", nil},
		{NameIncomplete, "1 when writewatch could not see everything the run did (records lost, processes not followed): its verdict is unknown; else 0.", nil},
		{NameCommandExit, "COMMAND's exit code, 128+N when it died of signal N.", nil},
		{NameLastRun, "When the last run ended, in seconds since the Unix epoch.", nil},
		{NameLastCleanRun, "When the last run without violations, lost events or tracing errors ended, in seconds since the Unix epoch.", nil},
		{NameInfo, "Always 1: the writewatch version and mode of the run.", []string{labelMode, labelVersion}},
		{NameProgMissed, "Runs of a writewatch BPF program the kernel skipped in the run, the program being already at work on that CPU; but for go_probe's, they make the run incomplete.", []string{labelProgram}},
		{NameProgRuns, "Runs of a writewatch BPF program in the run, counted while the kernel counts them (kernel.bpf_stats_enabled=1).", []string{labelProgram}},
		{NameProgSeconds, "The time the counted runs of a writewatch BPF program took in the run, summed over every process that ran it.", []string{labelProgram}},
	}
}

// putFunc takes one sample: the metric's name, its value and the values
// of the metric's own labels, in the order of its definition.
type putFunc func(name string, x float64, lv ...string)

// collect gives put the run's samples now; carried is the last clean
// run's time from before this run, in Unix seconds (0: none). A metric
// without a sample is left out of the exposition.
func (r *Run) collect(carried float64, put putFunc) {
	v := r.values(carried)
	r.putViolations(put, v.violations)
	put(NameEvents, float64(v.Events))
	for i, cause := range live.LostCauses {
		put(NameLost, float64(v.Lost[i]), cause)
	}
	put(NameTruncated, float64(v.Truncated))
	put(NameProcesses, float64(v.Processes))
	put(NameDuration, v.duration)
	put(NameInfo, 1, r.mode, r.version)
	if !v.final {
		return
	}
	put(NameSurvivors, float64(v.survivors))
	put(NameExitCode, float64(v.exitCode))
	put(NameIncomplete, b2f(v.incomplete))
	if v.commandExit != report.NotStarted {
		put(NameCommandExit, float64(v.commandExit))
	}
	put(NameLastRun, unixSeconds(v.finished))
	if v.lastClean > 0 {
		put(NameLastCleanRun, v.lastClean)
	}
	for _, p := range v.programs {
		put(NameProgMissed, float64(p.Missed), p.Name)
		if p.Runs > 0 {
			put(NameProgRuns, float64(p.Runs), p.Name)
			put(NameProgSeconds, float64(p.RunNS)/1e9, p.Name)
		}
	}
}

// putViolations puts the violation samples: for each operation and
// each action the run can take (possible), the unknown severity's, zero or
// not; the others' when not zero. A push thus replaces every series of the
// previous run, and the families are never empty.
func (r *Run) putViolations(put putFunc, vs bySeverity) {
	for i, name := range live.Ops {
		// The table's label for its operations; the witness's own are
		// named as the report names them.
		label := name
		if op, ok := ops.ByName(name); ok {
			label = op.Metric()
		}
		for j, action := range live.Actions {
			for _, sev := range severities {
				var c counts
				if vs[sev] != nil {
					c = vs[sev][i][j]
				}
				if c == (counts{}) && (sev != severityUnknown || !r.possible(action)) {
					continue
				}
				put(NameViolations, float64(c.all), label, action, sev)
				put(NameGroups, float64(c.groups), label, action, sev)
			}
		}
	}
}

// possible reports whether the run can take action on a write: only
// --enforce blocks or kills, so outside it every violation is reported.
func (r *Run) possible(action string) bool {
	return r.mode == report.ModeEnforce || action == report.ActionReported
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

func unixSeconds(t time.Time) float64 {
	return float64(t.Unix()) + float64(t.Nanosecond())/1e9
}
