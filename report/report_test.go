package report

import (
	"bytes"
	"testing"
	"time"

	"github.com/writewatch/writewatch/internal/golden"
)

var (
	t0       = time.Date(2025, 3, 14, 9, 26, 53, 589793238, time.UTC)
	goTest   = Proc{PID: 4100, PPID: 4000, Comm: "go", Exe: "/usr/local/go/bin/go", Cmdline: []string{"go", "test", "./..."}}
	makeTest = Proc{PID: 4000, PPID: 3999, Comm: "make", Exe: "/usr/bin/make", Cmdline: []string{"make", "test"}}
	pkgTest  = Proc{PID: 4242, PPID: 4100, Comm: "pkg.test", Cmdline: []string{
		"/tmp/go-build2854188/b001/pkg.test", "-test.paniconexit0", "-test.timeout=10m0s", "-test.v=true",
	}}
)

// emptyReport is a clean run.
func emptyReport() *Report {
	return &Report{
		Version:     SchemaVersion,
		Mode:        ModeGate,
		Command:     []string{"go", "test", "./..."},
		WorkDir:     "/home/dev/proj",
		Home:        "/home/dev",
		ConfigFile:  "/home/dev/proj/.writewatch.yaml",
		ExitCode:    0,
		CommandExit: 0,
		Started:     t0,
		Finished:    t0.Add(12*time.Second + 345*time.Millisecond),
		Processes:   17,
		Events:      1234,
	}
}

// richReport has one violation of each interesting kind.
func richReport() *Report {
	b := NewBuilder()
	chain := []Proc{goTest, makeTest}
	by := func(v Violation) Violation {
		v.PID, v.PPID, v.Comm, v.Cmdline, v.Chain = pkgTest.PID, pkgTest.PPID, pkgTest.Comm, pkgTest.Cmdline, chain
		return v
	}
	at := func(d time.Duration) time.Time { return t0.Add(d) }

	// Written three times; only the first occurrence's details are kept.
	b.Add(by(Violation{Op: "open", Path: "/home/dev/.cache/tool/state.json", RequestedPath: "/home/dev/.cache/tool/state.json",
		Flags: "O_WRONLY|O_CREAT|O_TRUNC", First: at(2 * time.Second), Severity: SeverityLeftBehind}))
	b.Add(by(Violation{Op: "open", Path: "/home/dev/.cache/tool/state.json", RequestedPath: "/home/dev/.cache/tool/state.json",
		Flags: "O_WRONLY|O_CREAT|O_TRUNC", First: at(3 * time.Second), Count: 2}))

	// A rename: both paths, one violation each.
	b.Add(by(Violation{Op: "rename", Role: RoleOld, Path: "/home/dev/proj/testdata/golden.txt.tmp", RequestedPath: "testdata/golden.txt.tmp",
		First: at(4 * time.Second), Severity: SeverityTransient}))
	b.Add(by(Violation{Op: "rename", Role: RoleNew, Path: "/home/dev/proj/testdata/golden.txt", RequestedPath: "testdata/golden.txt",
		First: at(4 * time.Second), Severity: SeverityDataLoss}))

	// A failed open that a deny rule matched.
	b.Add(by(Violation{Op: "open", Path: "/etc/hosts", RequestedPath: "/etc/hosts", Flags: "O_WRONLY|O_APPEND",
		Errno: "EACCES", DeniedBy: ".writewatch.yaml:7", First: at(5 * time.Second), Severity: SeverityAttempt}))

	// A path too long for the kernel buffers.
	b.Add(by(Violation{Op: "mkdir", Path: "/home/dev/proj/build/deep/deeper/deepest/and/then/some/more",
		RequestedPath: "build/deep/deeper/deepest/and/then/some/more", Truncated: true, First: at(6 * time.Second), Severity: SeverityLeftBehind}))

	// A newline and invalid UTF-8 in the path.
	b.Add(by(Violation{Op: "creat", Path: "/home/dev/proj/out/report\nfinal\xff.txt", RequestedPath: "out/report\nfinal\xff.txt",
		First: at(7 * time.Second), Severity: SeverityLeftBehind}))

	// A symlink: its role "new" goes without saying.
	b.Add(by(Violation{Op: "symlink", Role: RoleNew, Path: "/home/dev/.local/bin/tool", RequestedPath: "/home/dev/.local/bin/tool",
		First: at(8 * time.Second), Severity: SeverityLeftBehind}))

	// A shell with a long script, three levels below the command.
	sh := Proc{PID: 4300, PPID: 4242, Comm: "sh", Cmdline: []string{"sh", "-c",
		"set -e; for f in fixtures/*.json; do jq -S . \"$f\" > /var/tmp/normalized-$(basename \"$f\"); done; echo done with all of them",
		"extra", "args", "that", "do", "not", "fit"}}
	b.Add(Violation{Op: "unlink", Path: "/var/tmp/normalized-a.json", RequestedPath: "/var/tmp/normalized-a.json",
		PID: 4301, PPID: sh.PID, Comm: "rm", Cmdline: []string{"rm", "-f", "/var/tmp/normalized-a.json"},
		Chain: []Proc{sh, pkgTest, goTest, makeTest}, First: at(9 * time.Second), Severity: SeverityDataLoss})

	return &Report{
		Version:        SchemaVersion,
		Mode:           ModeGate,
		Command:        []string{"make", "test"},
		WorkDir:        "/home/dev/proj",
		Home:           "/home/dev",
		ConfigFile:     "/home/dev/proj/.writewatch.yaml",
		ExitCode:       1,
		CommandExit:    0,
		Started:        t0,
		Finished:       t0.Add(14 * time.Second),
		Processes:      42,
		Events:         5678,
		TruncatedPaths: 1,
		Violations:     sortedBySeverity(b.Violations()),
		Survivors:      []Proc{},
	}
}

func sortedBySeverity(vs []Violation) []Violation {
	SortBySeverity(vs)
	return vs
}

// lostReport is a run without violations that lost events, write
// records among them: it could not see everything.
func lostReport() *Report {
	r := emptyReport()
	r.ExitCode = 88
	r.LostEvents, r.LostWrites = 37, 12
	r.Lost = map[string]uint64{LostProcMapFull: 7, LostRingbufFull: 30}
	r.Incomplete = []string{
		"12 write records were lost: the ring buffer was full",
		"7 processes or threads were not followed: the kernel's storage for them was full",
	}
	return r
}

// survivorsReport is an audit run without a config file, with processes
// left running.
func survivorsReport() *Report {
	r := emptyReport()
	r.Mode = ModeAudit
	r.ConfigFile = ""
	r.CommandExit = 130
	r.Violations = []Violation{{
		Op: "open", Path: "/home/dev/proj/server.log", RequestedPath: "server.log", Flags: "O_WRONLY|O_CREAT|O_APPEND",
		PID: 4100, PPID: 4000, Comm: "go", Cmdline: goTest.Cmdline, Chain: []Proc{}, Count: 1, First: t0.Add(time.Second),
		Action: ActionReported,
	}}
	r.Survivors = []Proc{
		{PID: 4400, PPID: 1, Comm: "sleep", Cmdline: []string{"sleep", "1000"}},
		{PID: 4401, PPID: 1, Comm: "server", Exe: "/home/dev/proj/bin/server", Cmdline: []string{"/home/dev/proj/bin/server", "--listen=127.0.0.1:8080", "--log=server.log"}},
	}
	return r
}

// enforcedReport is a run under --enforce with the kill tier: one write
// blocked and its writer killed, one only killed.
func enforcedReport() *Report {
	r := emptyReport()
	r.Mode = ModeEnforce
	r.Enforcement = "kill"
	r.EnforcementNote = "the kill tier kills the writer at the syscall's entry; the call itself still runs"
	r.ExitCode = 86
	r.CommandExit = 128 + 9
	r.Violations = []Violation{{
		Op: "open", Path: "/home/dev/.config/tool/config.toml", RequestedPath: "/home/dev/.config/tool/config.toml",
		Flags: "O_WRONLY|O_TRUNC", PID: 4242, PPID: 4100, Comm: "pkg.test", Cmdline: pkgTest.Cmdline,
		Chain: []Proc{goTest}, Count: 1, First: t0.Add(time.Second), Action: ActionKilled, Severity: SeverityDataLoss,
	}, {
		Op: "unlink", Path: "/home/dev/proj/go.mod", RequestedPath: "../go.mod", Errno: "EACCES",
		PID: 4243, PPID: 4100, Comm: "rm", Cmdline: []string{"rm", "../go.mod"},
		Chain: []Proc{goTest}, Count: 1, First: t0.Add(2 * time.Second), Action: ActionBlockedKilled, Severity: SeverityAttempt,
	}, {
		Op: "creat", Path: "/home/dev/proj/gen/new.go", RequestedPath: "gen/new.go", Errno: "EACCES",
		PID: 4244, PPID: 4100, Comm: "gen", Cmdline: []string{"gen"}, NotEnforced: ".writewatch.yaml:3",
		Chain: []Proc{goTest}, Count: 1, First: t0.Add(3 * time.Second), Action: ActionBlockedKilled, Severity: SeverityAttempt,
	}}
	return r
}

// lostRefusalsReport is a run under --enforce whose one refused write
// lost its record: the kernel's count still fails it.
func lostRefusalsReport() *Report {
	r := emptyReport()
	r.Mode = ModeEnforce
	r.Enforcement = "landlock"
	r.ExitCode = 86
	r.CommandExit = 128 + 9
	r.LostEvents, r.LostWrites = 5845, 5845
	r.Lost = map[string]uint64{LostRingbufFull: 5845}
	r.LostRefusals = 1
	return r
}

var cases = []struct {
	name   string
	report func() *Report
}{
	{"empty", emptyReport},
	{"rich", richReport},
	{"lost", lostReport},
	{"survivors", survivorsReport},
	{"tests", testsReport},
	{"enforced", enforcedReport},
	{"lost-refusals", lostRefusalsReport},
	{"witnessed", witnessedReport},
	{"crosstest", crossTestReport},
}

// witnessedReport has a write the filesystem witness alone saw (a path
// the judge called allowed), one both saw, and the witness's account.
func witnessedReport() *Report {
	r := emptyReport()
	r.ExitCode = 86
	rm := Proc{PID: 4301, PPID: 4300, Comm: "rm", Exe: "/usr/bin/rm", Cmdline: []string{"rm", "tests/x/../config.toml"}}
	r.Violations = []Violation{{
		Op: "unlink", Path: "/home/dev/proj/config.toml", RequestedPath: "tests/x/../config.toml",
		PID: rm.PID, PPID: rm.PPID, Comm: rm.Comm, Exe: rm.Exe, Cmdline: rm.Cmdline, Chain: []Proc{goTest},
		Count: 1, First: t0.Add(time.Second), Action: ActionReported, SeenBy: []string{SeenByFilesystem},
	}, {
		Op: OpWrite, Path: "/home/dev/proj/out.log",
		PID: 4242, PPID: 4100, Comm: "pkg.test", Cmdline: pkgTest.Cmdline, Chain: []Proc{goTest},
		Count: 2, First: t0.Add(2 * time.Second), Action: ActionReported, SeenBy: []string{SeenByFilesystem},
	}, {
		Op: "open", Path: "/home/dev/proj/state.json", RequestedPath: "state.json", Flags: "O_WRONLY|O_CREAT|O_TRUNC",
		PID: 4242, PPID: 4100, Comm: "pkg.test", Cmdline: pkgTest.Cmdline, Chain: []Proc{goTest},
		Count: 1, First: t0.Add(3 * time.Second), Action: ActionReported, SeenBy: []string{SeenBySyscall, SeenByFilesystem},
	}}
	r.Witness = &WitnessInfo{
		Active: true, Events: 57, Unexplained: 3,
		Filesystems: []WitnessFilesystem{
			{Paths: []string{"/", "/home/dev", "/home/dev/proj"}, Type: "ext4", Watched: true},
			{Paths: []string{"/srv/data"}, Type: "overlay", Error: "the filesystem cannot encode or decode file handles: operation not supported"},
		},
	}
	return r
}

// testsReport has violations attributed to Go and pytest tests, a
// parallel write that is ambiguous, package setup, and notes.
func testsReport() *Report {
	r := emptyReport()
	r.Command = []string{"go", "test", "./..."}
	r.Home = "/home/u"
	bin := Proc{PID: 5000, PPID: 4990, Comm: "app.test", Exe: "/tmp/go-build1/b001/app.test", Cmdline: []string{"/tmp/go-build1/b001/app.test", "-test.paniconexit0"}}
	chain := []Proc{{PID: 4990, PPID: 4900, Comm: "go", Exe: "/usr/local/go/bin/go", Cmdline: []string{"go", "test", "./..."}}}
	v := func(path, exe string, mod func(*Violation)) Violation {
		v := Violation{Op: "open", Path: path, RequestedPath: path, Flags: "O_WRONLY|O_CREAT|O_TRUNC",
			PID: bin.PID, PPID: bin.PPID, Comm: bin.Comm, Exe: exe, Cmdline: bin.Cmdline, Chain: chain,
			Count: 1, First: t0, Action: ActionReported, Runner: RunnerGo, Package: "example.com/app"}
		mod(&v)
		return v
	}
	r.Violations = []Violation{
		v("/home/u/.config/app/config.toml", "/usr/bin/git", func(v *Violation) {
			v.Test, v.Phase, v.TestFile, v.TestLine = "TestSaveConfig", PhaseTest, "/src/app/app_test.go", 12
			v.Comm, v.Cmdline = "git", []string{"git", "config", "--global", "x.y", "z"}
			v.Severity = SeverityDataLoss
		}),
		v("/src/app/main.txt", bin.Exe, func(v *Violation) { v.Phase, v.Severity = PhaseSetup, SeverityLeftBehind }),
		v("/src/app/sub.txt", bin.Exe, func(v *Violation) { v.Test, v.Phase, v.Severity = "TestOuter/inner", PhaseCleanup, SeverityLeftBehind }),
		v("/src/app/parallel.txt", bin.Exe, func(v *Violation) { v.AmbiguousTests, v.Severity = []string{"TestA", "TestB"}, SeverityTransient }),
		v("/src/py/fixture.db", "/usr/bin/python3.11", func(v *Violation) {
			v.Runner, v.Package, v.Test, v.Phase, v.Fixture = RunnerPytest, "test_app.py", "test_app.py::test_db", "setup", "db"
			v.Comm, v.Cmdline, v.Chain = "python3", []string{"python3", "-m", "pytest"}, []Proc{}
			v.Severity = SeverityTransient
		}),
	}
	r.Events = 40
	r.Packages = []PackageRun{{Package: "example.com/app", PID: 5000, Followed: true}, {Package: "example.com/old", PID: 5001, Problem: "go1.19: field offsets unknown"}}
	r.Notes = []string{"GOFLAGS=-count=1 was added"}
	r.Tests = []TestResult{{Runner: RunnerGo, Package: "example.com/app", ID: "TestSaveConfig", Outcome: OutcomePassed}}
	return r
}

func TestFailed(t *testing.T) {
	if emptyReport().Failed() {
		t.Error("empty report: Failed() = true")
	}
	if !richReport().Failed() {
		t.Error("rich report: Failed() = false")
	}
	if !lostRefusalsReport().Failed() {
		t.Error("a refused write whose record was lost: Failed() = false")
	}
	// A failed call that changed nothing is reported only, unless
	// enforcement refused it.
	r := emptyReport()
	r.Violations = []Violation{{Op: "unlink", Path: "/d", Errno: "ENOENT", Severity: SeverityAttempt, Action: ActionReported}}
	if r.Failed() {
		t.Error("an attempt alone: Failed() = true")
	}
	r.Violations[0].Action = ActionBlocked
	if !r.Failed() {
		t.Error("a refused attempt: Failed() = false")
	}
	if !enforcedReport().Failed() {
		t.Error("enforced report: Failed() = false")
	}
	if lostReport().Failed() {
		t.Error("a run that lost records but found no violation: Failed() = true")
	}
}

// Blind is about what writewatch could see, whatever it found.
func TestBlind(t *testing.T) {
	for _, c := range cases {
		if got, want := c.report().Blind(), len(c.report().Incomplete) > 0; got != want {
			t.Errorf("%s: Blind() = %v, want %v", c.name, got, want)
		}
	}
	if !lostReport().Blind() {
		t.Error("lost write records: Blind() = false")
	}
	if emptyReport().Blind() {
		t.Error("a run that saw everything: Blind() = true")
	}
}

func TestWriteJUnitGolden(t *testing.T) {
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := WriteJUnit(&buf, c.report()); err != nil {
				t.Fatal(err)
			}
			golden.Check(t, c.name+".junit.xml", buf.Bytes())
		})
	}
}

func TestWriteGitHubGolden(t *testing.T) {
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := WriteGitHubAnnotations(&buf, c.report(), "/src"); err != nil {
				t.Fatal(err)
			}
			if err := WriteGitHubSummary(&buf, c.report()); err != nil {
				t.Fatal(err)
			}
			golden.Check(t, c.name+".github.txt", buf.Bytes())
		})
	}
}
