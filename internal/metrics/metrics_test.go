package metrics

import (
	"bytes"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/writewatch/writewatch/internal/golden"

	dto "github.com/prometheus/client_model/go"
	"github.com/writewatch/writewatch/internal/live"
	"github.com/writewatch/writewatch/report"
)

// promtool returns the path of Debian's promtool, failing the test when
// it is missing: the metrics' lint is part of the suite.
func promtool(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("promtool")
	if err != nil {
		t.Fatal("promtool not found: run `make test-deps` (as root), or `apt-get install prometheus`")
	}
	return p
}

// promtoolCheck runs `promtool check metrics` on text.
func promtoolCheck(t *testing.T, text []byte) {
	t.Helper()
	cmd := exec.Command(promtool(t), "check", "metrics")
	cmd.Stdin = bytes.NewReader(text)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("promtool check metrics: %v\n%s\non:\n%s", err, out, text)
	}
}

var (
	t0 = time.Date(2026, 11, 30, 8, 46, 11, 500_000_000, time.UTC)
	t1 = t0.Add(61*time.Second + 250*time.Millisecond)
)

func cleanReport() *report.Report {
	return &report.Report{
		Version: report.SchemaVersion, Mode: report.ModeGate,
		Command: []string{"go", "test", "./..."}, ExitCode: 0, CommandExit: 0,
		Started: t0, Finished: t1, Processes: 17, Events: 1234,
		Violations: []report.Violation{}, Survivors: []report.Proc{},
	}
}

func dirtyReport() *report.Report {
	r := cleanReport()
	r.ExitCode, r.CommandExit = 86, 1
	r.Mode = report.ModeEnforce
	r.LostEvents = 7
	r.Lost = map[string]uint64{report.LostRingbufFull: 5, report.LostProcMapFull: 2}
	r.Incomplete = []string{"2 processes or threads were not followed"}
	r.TruncatedPaths = 1
	r.Violations = []report.Violation{
		{Op: "open", Path: "/home/dev/.config/x", Count: 3, Action: report.ActionReported, Severity: report.SeverityDataLoss},
		{Op: "open", Path: "/home/dev/src/stray.txt", Count: 1, Action: report.ActionReported, Severity: report.SeverityLeftBehind},
		{Op: "rename", Path: "/home/dev/a", Role: report.RoleOld, Count: 2, Action: report.ActionReported, Severity: report.SeverityDataLoss},
		{Op: "rename", Path: "/home/dev/b", Role: report.RoleNew, Count: 2, Action: report.ActionReported, Severity: report.SeverityDataLoss},
		// Count 0 stands for 1; no severity: unknown.
		{Op: "unlink", Path: "/home/dev/gone", Action: report.ActionReported},
		{Op: "chmod", Path: "/home/dev/.bashrc", Count: 2, Action: report.ActionBlockedKilled, Severity: report.SeverityAttempt},
		// Seen by the filesystem witness alone: no call record explains it.
		{Op: report.OpCreate, Path: "/home/dev/sock", Action: report.ActionReported, Severity: report.SeverityTransient},
	}
	r.Survivors = []report.Proc{{PID: 42, Comm: "sleep"}}
	r.Programs = []report.ProgramStat{
		{Name: "sys_exit", Runs: 120_000, RunNS: 13_800_000, Missed: 1},
		{Name: "go_probe", Missed: 4},
	}
	return r
}

func finished(rep *report.Report, traceErr error) *Run {
	r := New(new(live.Counters), rep.Mode, "v1.2.3")
	r.Finish(rep, traceErr)
	return r
}

func text(t *testing.T, r *Run, labels Labels, carried float64) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := r.WriteText(&buf, labels, carried); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestTextGolden(t *testing.T) {
	live := New(new(live.Counters), report.ModeAudit, "dev")
	livePopulated := New(fixed(liveSnapshot()), report.ModeGate, "dev")
	livePopulated.now = func() time.Time { return t1 }
	for _, c := range []struct {
		name    string
		run     *Run
		labels  Labels
		carried float64
	}{
		{"clean", finished(cleanReport(), nil), nil, 0},
		{"dirty", finished(dirtyReport(), nil), Labels{"repo": "writewatch", "branch": "feature/x"}, unixSeconds(t0.Add(-24 * time.Hour))},
		{"dirty-never-clean", finished(dirtyReport(), nil), nil, 0},
		{"live-not-started", live, nil, 0},
		{"live", livePopulated, Labels{"repo": "writewatch"}, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := text(t, c.run, c.labels, c.carried)
			golden.Check(t, c.name+".prom", got)
			promtoolCheck(t, got)
		})
	}
}

// fixed is a Live whose counters do not move.
type fixed live.Snapshot

func (f fixed) Snapshot() live.Snapshot { return live.Snapshot(f) }

func liveSnapshot() live.Snapshot {
	s := live.Snapshot{Started: t0, Processes: 9, Events: 321, Truncated: 1, Test: "TestWritesConfig"}
	s.Lost[0] = 3
	open := live.OpIndex("open")
	s.Violations[open][0], s.Groups[open][0] = 5, 2
	return s
}

// While the run lasts the metrics follow the live counters; the values
// known only at the end are absent.
func TestLiveValues(t *testing.T) {
	r := New(fixed(liveSnapshot()), report.ModeGate, "dev")
	r.now = func() time.Time { return t0.Add(2500 * time.Millisecond) }
	mfs := parse(t, text(t, r, nil, unixSeconds(t0)))
	for name, want := range map[string]float64{NameEvents: 321, NameProcesses: 9, NameTruncated: 1, NameDuration: 2.5} {
		if got, _ := value(mfs, name, nil); got != want {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	if got, _ := value(mfs, NameViolations, map[string]string{"op": "open", "action": "reported", "severity": "unknown"}); got != 5 {
		t.Errorf("open violations %v, want 5", got)
	}
	if got, _ := value(mfs, NameLost, map[string]string{"cause": live.LostCauses[0]}); got != 3 {
		t.Errorf("lost %v, want 3", got)
	}
	for _, name := range []string{NameExitCode, NameIncomplete, NameCommandExit, NameLastRun, NameLastCleanRun, NameSurvivors} {
		if _, ok := mfs[name]; ok {
			t.Errorf("%s present while the run lasts", name)
		}
	}
}

func TestFinalValuesMatchTheReport(t *testing.T) {
	rep := dirtyReport()
	mfs := parse(t, text(t, finished(rep, nil), nil, 0))
	for _, c := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{NameViolations, map[string]string{"op": "open", "action": "reported", "severity": "data-loss"}, 3},
		{NameViolations, map[string]string{"op": "open", "action": "reported", "severity": "left-behind"}, 1},
		{NameViolations, map[string]string{"op": "open", "action": "reported", "severity": "unknown"}, 0},
		{NameViolations, map[string]string{"op": "rename", "action": "reported", "severity": "data-loss"}, 4},
		{NameViolations, map[string]string{"op": "unlink", "action": "reported", "severity": "unknown"}, 1},
		{NameViolations, map[string]string{"op": "mkdir", "action": "reported", "severity": "unknown"}, 0},
		{NameGroups, map[string]string{"op": "open", "action": "reported", "severity": "data-loss"}, 1},
		{NameGroups, map[string]string{"op": "open", "action": "reported", "severity": "left-behind"}, 1},
		{NameGroups, map[string]string{"op": "rename", "action": "reported", "severity": "data-loss"}, 2},
		{NameViolations, map[string]string{"op": "chmod", "action": "blocked+killed", "severity": "attempt"}, 2},
		{NameGroups, map[string]string{"op": "chmod", "action": "blocked+killed", "severity": "attempt"}, 1},
		{NameViolations, map[string]string{"op": "chmod", "action": "reported", "severity": "unknown"}, 0},
		{NameViolations, map[string]string{"op": "create", "action": "reported", "severity": "transient"}, 1},
		{NameGroups, map[string]string{"op": "create", "action": "reported", "severity": "transient"}, 1},
		{NameLost, map[string]string{"cause": "ringbuf_full"}, 5},
		{NameLost, map[string]string{"cause": "proc_map_full"}, 2},
		{NameEvents, nil, 1234},
		{NameProcesses, nil, 17},
		{NameTruncated, nil, 1},
		{NameDuration, nil, 61.25},
		{NameSurvivors, nil, 1},
		{NameExitCode, nil, 86},
		{NameIncomplete, nil, 1},
		{NameCommandExit, nil, 1},
		{NameLastRun, nil, float64(t1.Unix()) + 0.75},
	} {
		if got, ok := value(mfs, c.name, c.labels); !ok || got != c.want {
			t.Errorf("%s%v = %v (found %v), want %v", c.name, c.labels, got, ok, c.want)
		}
	}
	if _, ok := mfs[NameLastCleanRun]; ok {
		t.Errorf("a dirty run with nothing carried over has %s", NameLastCleanRun)
	}
	// The severities add up to the report's groups and occurrences.
	for name, want := range map[string]float64{NameViolations: 12, NameGroups: 7} {
		if got, _ := sum(mfs, name, nil); got != want {
			t.Errorf("%s: %v in all, want %v", name, got, want)
		}
	}
	// Under --enforce, every op and action is there with the unknown
	// severity, so a series never vanishes; the other severities when
	// not 0: here 5 of them.
	if n := len(mfs[NameViolations].GetMetric()); n != len(live.Ops)*len(live.Actions)+5 {
		t.Errorf("%d violation series, want %d", n, len(live.Ops)*len(live.Actions)+5)
	}
	if _, n := sum(mfs, NameViolations, map[string]string{"op": "mkdir", "severity": "data-loss"}); n != 0 {
		t.Errorf("%d mkdir data-loss series at 0", n)
	}
}

// While the run lasts every violation's severity is unknown; once it has
// ended, the severities are the report's: an alert on data loss alone
// sees the run's data loss, and only once.
func TestSeverityLiveThenFinal(t *testing.T) {
	snap := liveSnapshot()
	r := New(fixed(snap), report.ModeGate, "dev")
	mfs := parse(t, text(t, r, nil, 0))
	if got, _ := sum(mfs, NameViolations, map[string]string{"severity": "unknown"}); got != 5 {
		t.Errorf("live: %v unknown violations, want 5", got)
	}
	for _, sev := range report.Severities {
		if _, n := sum(mfs, NameViolations, map[string]string{"severity": sev}); n != 0 {
			t.Errorf("live: %d %s series", n, sev)
		}
	}
	rep := cleanReport()
	rep.Violations = []report.Violation{
		{Op: "open", Path: "/home/dev/.config/x", Count: 4, Action: report.ActionReported, Severity: report.SeverityDataLoss},
		{Op: "open", Path: "/home/dev/new", Count: 1, Action: report.ActionReported, Severity: report.SeverityLeftBehind},
	}
	r.Finish(rep, nil)
	mfs = parse(t, text(t, r, nil, 0))
	if got, _ := sum(mfs, NameGroups, map[string]string{"severity": "data-loss"}); got != 1 {
		t.Errorf("final: %v data-loss groups, want 1", got)
	}
	if got, _ := sum(mfs, NameViolations, map[string]string{"severity": "unknown"}); got != 0 {
		t.Errorf("final: %v unknown violations, want 0", got)
	}
}

// Outside --enforce nothing is blocked or killed: only the reported
// series are there, unless a violation says otherwise.
func TestActionsOfTheMode(t *testing.T) {
	for _, mode := range []string{report.ModeGate, report.ModeAudit} {
		rep := cleanReport()
		rep.Mode = mode
		mfs := parse(t, text(t, finished(rep, nil), nil, 0))
		for _, name := range []string{NameViolations, NameGroups} {
			if n := len(mfs[name].GetMetric()); n != len(live.Ops) {
				t.Errorf("%s: %d %s series, want one per op (%d)", mode, n, name, len(live.Ops))
			}
			if _, ok := value(mfs, name, map[string]string{"action": report.ActionBlocked}); ok {
				t.Errorf("%s: %s has a blocked series", mode, name)
			}
		}
		rep.Violations = []report.Violation{{Op: "chmod", Path: "/x", Count: 1, Action: report.ActionKilled}}
		mfs = parse(t, text(t, finished(rep, nil), nil, 0))
		if v, _ := sum(mfs, NameViolations, map[string]string{"op": "chmod", "action": report.ActionKilled}); v != 1 {
			t.Errorf("%s: a killed violation is counted %v, want 1", mode, v)
		}
	}
}

func TestCleanness(t *testing.T) {
	for _, c := range []struct {
		name  string
		rep   func() *report.Report
		err   error
		clean bool
	}{
		{"clean", cleanReport, nil, true},
		{"violations", dirtyReport, nil, false},
		{"lost events", func() *report.Report { r := cleanReport(); r.LostEvents = 1; return r }, nil, false},
		{"incomplete", func() *report.Report { r := cleanReport(); r.Incomplete = []string{"records lost"}; return r }, nil, false},
		{"tracing failed", cleanReport, os.ErrClosed, false},
		{"command failed, no violations", func() *report.Report { r := cleanReport(); r.CommandExit, r.ExitCode = 1, 1; return r }, nil, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := finished(c.rep(), c.err)
			if r.Clean() != c.clean {
				t.Errorf("Clean() = %v, want %v", r.Clean(), c.clean)
			}
			_, has := parse(t, text(t, r, nil, 0))[NameLastCleanRun]
			if has != c.clean {
				t.Errorf("%s present: %v, want %v", NameLastCleanRun, has, c.clean)
			}
		})
	}
	if New(new(live.Counters), "gate", "dev").Clean() {
		t.Error("a run not finished is not clean")
	}
}

func parse(t *testing.T, text []byte) map[string]*dto.MetricFamily {
	t.Helper()
	mfs, err := ParseText(bytes.NewReader(text))
	if err != nil {
		t.Fatalf("parse: %v\n%s", err, text)
	}
	return mfs
}

// sum adds up the samples of name whose labels include want, and says
// how many there were.
func sum(mfs map[string]*dto.MetricFamily, name string, want map[string]string) (float64, int) {
	var total float64
	var n int
	for _, m := range mfs[name].GetMetric() {
		if hasLabels(m, want) {
			total += m.GetGauge().GetValue() + m.GetCounter().GetValue() + m.GetUntyped().GetValue()
			n++
		}
	}
	return total, n
}

func hasLabels(m *dto.Metric, want map[string]string) bool {
	have := map[string]string{}
	for _, l := range m.GetLabel() {
		have[l.GetName()] = l.GetValue()
	}
	for k, v := range want {
		if have[k] != v {
			return false
		}
	}
	return true
}

// value finds the sample of name whose labels include want.
func value(mfs map[string]*dto.MetricFamily, name string, want map[string]string) (float64, bool) {
	mf := mfs[name]
	if mf == nil {
		return 0, false
	}
next:
	for _, m := range mf.GetMetric() {
		have := map[string]string{}
		for _, l := range m.GetLabel() {
			have[l.GetName()] = l.GetValue()
		}
		for k, v := range want {
			if have[k] != v {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			return m.GetCounter().GetValue(), true
		case m.Gauge != nil:
			return m.GetGauge().GetValue(), true
		}
		return m.GetUntyped().GetValue(), true
	}
	return 0, false
}

func TestLabels(t *testing.T) {
	var l Labels
	for _, ok := range []string{"repo=writewatch", "branch=feature/x", "empty=", "_x=1", "eq=a=b"} {
		if err := l.Set(ok); err != nil {
			t.Errorf("Set(%q): %v", ok, err)
		}
	}
	if l["eq"] != "a=b" || l["empty"] != "" || len(l) != 5 {
		t.Errorf("labels: %v", l)
	}
	for _, bad := range []string{"novalue", "=x", "1a=x", "a-b=x", "job=x", "__name__=x", "op=x", "severity=x", "cause=x", "bpf_program=x", "repo=again"} {
		if err := l.Set(bad); err == nil {
			t.Errorf("Set(%q) accepted", bad)
		}
	}
	if s := (&Labels{"a": "1"}).String(); s != "a=1" {
		t.Errorf("String() = %q", s)
	}
}

func TestCheckPushURL(t *testing.T) {
	for _, ok := range []string{"127.0.0.1:9091", "http://pushgateway:9091", "https://pgw.example/prefix/"} {
		if err := CheckPushURL(ok); err != nil {
			t.Errorf("CheckPushURL(%q): %v", ok, err)
		}
	}
	for _, bad := range []string{"ftp://x", "http://", "http://pgw:9091/metrics/job/x", "http://pgw:9091/?a=b", "http://[::1"} {
		if err := CheckPushURL(bad); err == nil {
			t.Errorf("CheckPushURL(%q) accepted", bad)
		}
	}
}

func TestMetricNamesFollowConventions(t *testing.T) {
	mfs := parse(t, text(t, finished(dirtyReport(), nil), nil, unixSeconds(t0)))
	for name, mf := range mfs {
		if !strings.HasPrefix(name, "writewatch_") || strings.Count(name, "writewatch") != 1 {
			t.Errorf("%s: one writewatch_ prefix", name)
		}
		isCounter := mf.GetType() == dto.MetricType_COUNTER
		if isCounter != strings.HasSuffix(name, "_total") {
			t.Errorf("%s: _total if and only if a counter", name)
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				switch l.GetName() {
				case "op", "action", "severity", "cause", "mode", "version", "bpf_program":
				default:
					t.Errorf("%s: unexpected label %s", name, l.GetName())
				}
			}
		}
	}
	if len(mfs) != 17 {
		t.Errorf("%d metric families, want 17", len(mfs))
	}
}

// docs/metrics.md lists every metric a finished run has, with its
// labels, and no other.
func TestDocsListEveryMetric(t *testing.T) {
	doc, err := os.ReadFile("../../docs/metrics.md")
	if err != nil {
		t.Fatal(err)
	}
	documented := map[string]string{}
	for _, m := range regexp.MustCompile("(?m)^\\| `(writewatch_\\w+)(?:\\{([^}]*)\\})?`").FindAllSubmatch(doc, -1) {
		labels := strings.Split(string(m[2]), ",")
		slices.Sort(labels)
		documented[string(m[1])] = strings.Join(labels, ",")
	}
	mfs := parse(t, text(t, finished(dirtyReport(), nil), nil, unixSeconds(t0)))
	for name, mf := range mfs {
		var labels []string
		for _, l := range mf.GetMetric()[0].GetLabel() {
			labels = append(labels, l.GetName())
		}
		slices.Sort(labels)
		if got, ok := documented[name]; !ok || got != strings.Join(labels, ",") {
			t.Errorf("docs/metrics.md: %s{%s} is not in the table (found: %v, labels %q)", name, strings.Join(labels, ","), ok, got)
		}
	}
	for name := range documented {
		if _, ok := mfs[name]; !ok {
			t.Errorf("docs/metrics.md lists %s, which a finished run does not have", name)
		}
	}
}
