// Package reporttest holds the reports the report's tests render and
// compare with their golden files: a clean run, one with every kind of
// violation, lost records, survivors, tests, enforcement, the witness,
// cross-test reads.
package reporttest

import (
	"time"

	"github.com/writewatch/writewatch/internal/session"
	"github.com/writewatch/writewatch/report"
)

// The time the reports' runs start, and the processes that write.
var (
	T0       = time.Date(2025, 3, 14, 9, 26, 53, 589793238, time.UTC)
	GoTest   = report.Proc{PID: 4100, PPID: 4000, Comm: "go", Exe: "/usr/local/go/bin/go", Cmdline: []string{"go", "test", "./..."}}
	MakeTest = report.Proc{PID: 4000, PPID: 3999, Comm: "make", Exe: "/usr/bin/make", Cmdline: []string{"make", "test"}}
	PkgTest  = report.Proc{PID: 4242, PPID: 4100, Comm: "pkg.test", Cmdline: []string{
		"/tmp/go-build2854188/b001/pkg.test", "-test.paniconexit0", "-test.timeout=10m0s", "-test.v=true",
	}}
)

// Empty is a clean run.
func Empty() *report.Report {
	return &report.Report{
		Version:     report.SchemaVersion,
		Mode:        report.ModeGate,
		Command:     []string{"go", "test", "./..."},
		WorkDir:     "/home/dev/proj",
		Home:        "/home/dev",
		ConfigFile:  "/home/dev/proj/.writewatch.yaml",
		ExitCode:    0,
		CommandExit: 0,
		Started:     T0,
		Finished:    T0.Add(12*time.Second + 345*time.Millisecond),
		Processes:   17,
		Events:      1234,
	}
}

// Rich has one violation of each interesting kind.
func Rich() *report.Report {
	b := session.NewGroups()
	chain := []report.Proc{GoTest, MakeTest}
	by := func(v report.Violation) report.Violation {
		v.PID, v.PPID, v.Comm, v.Cmdline, v.Chain = PkgTest.PID, PkgTest.PPID, PkgTest.Comm, PkgTest.Cmdline, chain
		return v
	}
	at := func(d time.Duration) time.Time { return T0.Add(d) }

	// Written three times; only the first occurrence's details are kept.
	b.Add(by(report.Violation{Op: "open", Path: "/home/dev/.cache/tool/state.json", RequestedPath: "/home/dev/.cache/tool/state.json",
		Flags: "O_WRONLY|O_CREAT|O_TRUNC", First: at(2 * time.Second), Severity: report.SeverityLeftBehind}))
	b.Add(by(report.Violation{Op: "open", Path: "/home/dev/.cache/tool/state.json", RequestedPath: "/home/dev/.cache/tool/state.json",
		Flags: "O_WRONLY|O_CREAT|O_TRUNC", First: at(3 * time.Second), Count: 2}))

	// A rename: both paths, one violation each.
	b.Add(by(report.Violation{Op: "rename", Role: report.RoleOld, Path: "/home/dev/proj/testdata/golden.txt.tmp", RequestedPath: "testdata/golden.txt.tmp",
		First: at(4 * time.Second), Severity: report.SeverityTransient}))
	b.Add(by(report.Violation{Op: "rename", Role: report.RoleNew, Path: "/home/dev/proj/testdata/golden.txt", RequestedPath: "testdata/golden.txt",
		First: at(4 * time.Second), Severity: report.SeverityDataLoss}))

	// A failed open that a deny rule matched.
	b.Add(by(report.Violation{Op: "open", Path: "/etc/hosts", RequestedPath: "/etc/hosts", Flags: "O_WRONLY|O_APPEND",
		Errno: "EACCES", DeniedBy: ".writewatch.yaml:7", First: at(5 * time.Second), Severity: report.SeverityAttempt}))

	// A path too long for the kernel buffers.
	b.Add(by(report.Violation{Op: "mkdir", Path: "/home/dev/proj/build/deep/deeper/deepest/and/then/some/more",
		RequestedPath: "build/deep/deeper/deepest/and/then/some/more", Truncated: true, First: at(6 * time.Second), Severity: report.SeverityLeftBehind}))

	// A newline and invalid UTF-8 in the path.
	b.Add(by(report.Violation{Op: "creat", Path: "/home/dev/proj/out/report\nfinal\xff.txt", RequestedPath: "out/report\nfinal\xff.txt",
		First: at(7 * time.Second), Severity: report.SeverityLeftBehind}))

	// A symlink: its role "new" goes without saying.
	b.Add(by(report.Violation{Op: "symlink", Role: report.RoleNew, Path: "/home/dev/.local/bin/tool", RequestedPath: "/home/dev/.local/bin/tool",
		First: at(8 * time.Second), Severity: report.SeverityLeftBehind}))

	// A shell with a long script, three levels below the command.
	sh := report.Proc{PID: 4300, PPID: 4242, Comm: "sh", Cmdline: []string{"sh", "-c",
		"set -e; for f in fixtures/*.json; do jq -S . \"$f\" > /var/tmp/normalized-$(basename \"$f\"); done; echo done with all of them",
		"extra", "args", "that", "do", "not", "fit"}}
	b.Add(report.Violation{Op: "unlink", Path: "/var/tmp/normalized-a.json", RequestedPath: "/var/tmp/normalized-a.json",
		PID: 4301, PPID: sh.PID, Comm: "rm", Cmdline: []string{"rm", "-f", "/var/tmp/normalized-a.json"},
		Chain: []report.Proc{sh, PkgTest, GoTest, MakeTest}, First: at(9 * time.Second), Severity: report.SeverityDataLoss})
	// The same unlink again, which failed: the group says how many did.
	b.Add(report.Violation{Op: "unlink", Path: "/var/tmp/normalized-a.json", RequestedPath: "/var/tmp/normalized-a.json",
		PID: 4302, PPID: sh.PID, Comm: "rm", Errno: "ENOENT", First: at(10 * time.Second)})

	return &report.Report{
		Version:        report.SchemaVersion,
		Mode:           report.ModeGate,
		Command:        []string{"make", "test"},
		WorkDir:        "/home/dev/proj",
		Home:           "/home/dev",
		ConfigFile:     "/home/dev/proj/.writewatch.yaml",
		ExitCode:       1,
		CommandExit:    0,
		Started:        T0,
		Finished:       T0.Add(14 * time.Second),
		Processes:      42,
		Events:         5678,
		TruncatedPaths: 1,
		Violations:     sortedBySeverity(b.Violations()),
		Survivors:      []report.Proc{},
	}
}

func sortedBySeverity(vs []report.Violation) []report.Violation {
	report.SortBySeverity(vs)
	return vs
}

// Lost is a run without violations that lost events, write
// records among them: it could not see everything.
func Lost() *report.Report {
	r := Empty()
	r.ExitCode = 88
	r.LostEvents, r.LostWrites = 37, 12
	r.Lost = map[string]uint64{report.LostProcMapFull: 7, report.LostRingbufFull: 30}
	r.Incomplete = []string{
		"12 write records were lost: the ring buffer was full",
		"7 processes or threads were not followed: the kernel's storage for them was full",
	}
	return r
}

// Survivors is an audit run without a config file, with processes
// left running.
func Survivors() *report.Report {
	r := Empty()
	r.Mode = report.ModeAudit
	r.ConfigFile = ""
	r.CommandExit = 130
	r.Violations = []report.Violation{{
		Op: "open", Path: "/home/dev/proj/server.log", RequestedPath: "server.log", Flags: "O_WRONLY|O_CREAT|O_APPEND",
		PID: 4100, PPID: 4000, Comm: "go", Cmdline: GoTest.Cmdline, Chain: []report.Proc{}, Count: 1, First: T0.Add(time.Second),
		Action: report.ActionReported,
	}}
	r.Survivors = []report.Proc{
		{PID: 4400, PPID: 1, Comm: "sleep", Cmdline: []string{"sleep", "1000"}},
		{PID: 4401, PPID: 1, Comm: "server", Exe: "/home/dev/proj/bin/server", Cmdline: []string{"/home/dev/proj/bin/server", "--listen=127.0.0.1:8080", "--log=server.log"}},
	}
	return r
}

// Enforced is a run under --enforce with the kill tier: one write
// blocked and its writer killed, one only killed.
func Enforced() *report.Report {
	r := Empty()
	r.Mode = report.ModeEnforce
	r.Enforcement = "kill"
	r.EnforcementNote = "the kill tier kills the writer at the syscall's entry; the call itself still runs"
	r.ExitCode = 86
	r.CommandExit = 128 + 9
	r.Violations = []report.Violation{{
		Op: "open", Path: "/home/dev/.config/tool/config.toml", RequestedPath: "/home/dev/.config/tool/config.toml",
		Flags: "O_WRONLY|O_TRUNC", PID: 4242, PPID: 4100, Comm: "pkg.test", Cmdline: PkgTest.Cmdline,
		Chain: []report.Proc{GoTest}, Count: 1, First: T0.Add(time.Second), Action: report.ActionKilled, Severity: report.SeverityDataLoss,
	}, {
		Op: "unlink", Path: "/home/dev/proj/go.mod", RequestedPath: "../go.mod", Errno: "EACCES",
		PID: 4243, PPID: 4100, Comm: "rm", Cmdline: []string{"rm", "../go.mod"},
		Chain: []report.Proc{GoTest}, Count: 1, First: T0.Add(2 * time.Second), Action: report.ActionBlockedKilled, Severity: report.SeverityAttempt,
	}, {
		Op: "creat", Path: "/home/dev/proj/gen/new.go", RequestedPath: "gen/new.go", Errno: "EACCES",
		PID: 4244, PPID: 4100, Comm: "gen", Cmdline: []string{"gen"}, NotEnforced: ".writewatch.yaml:3",
		Chain: []report.Proc{GoTest}, Count: 1, First: T0.Add(3 * time.Second), Action: report.ActionBlockedKilled, Severity: report.SeverityAttempt,
	}}
	return r
}

// LostRefusals is a run under --enforce whose one refused write
// lost its record: the kernel's count still fails it.
func LostRefusals() *report.Report {
	r := Empty()
	r.Mode = report.ModeEnforce
	r.Enforcement = "landlock"
	r.ExitCode = 86
	r.CommandExit = 128 + 9
	r.LostEvents, r.LostWrites = 5845, 5845
	r.Lost = map[string]uint64{report.LostRingbufFull: 5845}
	r.LostRefusals = 1
	return r
}

// Case is one report of the golden tests.
type Case struct {
	Name   string
	Report func() *report.Report
}

// Cases are the reports every format's golden test renders.
var Cases = []Case{
	{"empty", Empty},
	{"rich", Rich},
	{"lost", Lost},
	{"survivors", Survivors},
	{"tests", Tests},
	{"enforced", Enforced},
	{"lost-refusals", LostRefusals},
	{"witnessed", Witnessed},
	{"crosstest", CrossTest},
	{"sandboxed", Sandboxed},
	{"sandbox-landed", SandboxLanded},
	{"baseline", Baselined},
	{"killed", Killed},
}

// Baselined is Tests matched against a --baseline report: a write in
// it, one to a file its run left behind, new ones, a write no longer
// made, and one not made again whose path is still there.
func Baselined() *report.Report {
	r := Tests()
	r.ExitCode = 86
	r.Baseline = "base.json"
	r.Violations[0].Baselined = true // config.toml, the very path
	r.Violations[1].Baselined, r.Violations[1].BaselineLeftover = true, true
	r.Violations[1].Flags = "O_WRONLY|O_TRUNC"
	gone, kept := r.Violations[2], r.Violations[2]
	gone.Path, gone.RequestedPath, gone.Test = "/src/app/old.txt", "/src/app/old.txt", "TestOld"
	kept.Op, kept.Path, kept.RequestedPath, kept.Test, kept.Flags = "mkdir", "/src/app/cache", "cache", "TestCache", ""
	r.Fixed, r.Leftovers = []report.Violation{gone}, []report.Violation{kept}
	return r
}

// Witnessed has a write the filesystem witness alone saw (a path
// the judge called allowed), one both saw, and the witness's account.
func Witnessed() *report.Report {
	r := Empty()
	r.ExitCode = 86
	rm := report.Proc{PID: 4301, PPID: 4300, Comm: "rm", Exe: "/usr/bin/rm", Cmdline: []string{"rm", "tests/x/../config.toml"}}
	r.Violations = []report.Violation{{
		Op: "unlink", Path: "/home/dev/proj/config.toml", RequestedPath: "tests/x/../config.toml",
		PID: rm.PID, PPID: rm.PPID, Comm: rm.Comm, Exe: rm.Exe, Cmdline: rm.Cmdline, Chain: []report.Proc{GoTest},
		Count: 1, First: T0.Add(time.Second), Action: report.ActionReported, SeenBy: []string{report.SeenByFilesystem},
	}, {
		Op: report.OpWrite, Path: "/home/dev/proj/out.log",
		PID: 4242, PPID: 4100, Comm: "pkg.test", Cmdline: PkgTest.Cmdline, Chain: []report.Proc{GoTest},
		Count: 2, First: T0.Add(2 * time.Second), Action: report.ActionReported, SeenBy: []string{report.SeenByFilesystem},
	}, {
		Op: "open", Path: "/home/dev/proj/state.json", RequestedPath: "state.json", Flags: "O_WRONLY|O_CREAT|O_TRUNC",
		PID: 4242, PPID: 4100, Comm: "pkg.test", Cmdline: PkgTest.Cmdline, Chain: []report.Proc{GoTest},
		Count: 1, First: T0.Add(3 * time.Second), Action: report.ActionReported, SeenBy: []string{report.SeenBySyscall, report.SeenByFilesystem},
	}}
	r.Witness = &report.WitnessInfo{
		Active: true, Events: 57, Unexplained: 3,
		Filesystems: []report.WitnessFilesystem{
			{Paths: []string{"/", "/home/dev", "/home/dev/proj"}, Type: "ext4", Watched: true},
			{Paths: []string{"/srv/data"}, Type: "overlay", Error: "the filesystem cannot encode or decode file handles: operation not supported"},
		},
	}
	return r
}

// Tests has violations attributed to Go and pytest tests, a
// parallel write that is ambiguous, package setup, and notes.
func Tests() *report.Report {
	r := Empty()
	r.Command = []string{"go", "test", "./..."}
	r.Home = "/home/u"
	bin := report.Proc{PID: 5000, PPID: 4990, Comm: "app.test", Exe: "/tmp/go-build1/b001/app.test", Cmdline: []string{"/tmp/go-build1/b001/app.test", "-test.paniconexit0"}}
	chain := []report.Proc{{PID: 4990, PPID: 4900, Comm: "go", Exe: "/usr/local/go/bin/go", Cmdline: []string{"go", "test", "./..."}}}
	v := func(path, exe string, mod func(*report.Violation)) report.Violation {
		v := report.Violation{Op: "open", Path: path, RequestedPath: path, Flags: "O_WRONLY|O_CREAT|O_TRUNC",
			PID: bin.PID, PPID: bin.PPID, Comm: bin.Comm, Exe: exe, Cmdline: bin.Cmdline, Chain: chain,
			Count: 1, First: T0, Action: report.ActionReported, Who: report.Who{Runner: report.RunnerGo, Package: "example.com/app"}}
		mod(&v)
		return v
	}
	r.Violations = []report.Violation{
		v("/home/u/.config/app/config.toml", "/usr/bin/git", func(v *report.Violation) {
			v.Test, v.Phase, v.TestFile, v.TestLine = "TestSaveConfig", report.PhaseTest, "/src/app/app_test.go", 12
			v.Comm, v.Cmdline = "git", []string{"git", "config", "--global", "x.y", "z"}
			v.Severity = report.SeverityDataLoss
		}),
		v("/src/app/main.txt", bin.Exe, func(v *report.Violation) { v.Phase, v.Severity = report.PhaseSetup, report.SeverityLeftBehind }),
		v("/src/app/sub.txt", bin.Exe, func(v *report.Violation) {
			v.Test, v.Phase, v.Severity = "TestOuter/inner", report.PhaseCleanup, report.SeverityLeftBehind
		}),
		v("/src/app/parallel.txt", bin.Exe, func(v *report.Violation) {
			v.AmbiguousTests, v.Severity = []string{"TestA", "TestB"}, report.SeverityTransient
		}),
		v("/src/py/fixture.db", "/usr/bin/python3.11", func(v *report.Violation) {
			v.Runner, v.Package, v.Test, v.Phase, v.Fixture = report.RunnerPytest, "test_app.py", "test_app.py::test_db", "setup", "db"
			v.Comm, v.Cmdline, v.Chain = "python3", []string{"python3", "-m", "pytest"}, []report.Proc{}
			v.Severity = report.SeverityTransient
		}),
	}
	r.Events = 40
	r.Packages = []report.PackageRun{{Package: "example.com/app", PID: 5000, Followed: true}, {Package: "example.com/old", PID: 5001, Problem: "go1.19: field offsets unknown"}}
	r.Notes = []string{"GOFLAGS=-count=1 was added"}
	r.Tests = []report.TestResult{{Runner: report.RunnerGo, Package: "example.com/app", ID: "TestSaveConfig", Outcome: report.OutcomePassed}}
	return r
}

// GoTestAccess is a Go test's access to a file by pkg.test.
func GoTestAccess(test, op string, at time.Duration) report.Access {
	return report.Access{Op: op, Who: report.Who{Runner: report.RunnerGo, Package: "example.com/app", Test: test, Phase: report.PhaseTest},
		PID: PkgTest.PID, Comm: PkgTest.Comm, First: T0.Add(at)}
}

// Two files the tests of CrossTest write and read.
var (
	StateFile = session.FileID{Dev: 8<<20 | 1, Ino: 4242}
	CacheFile = session.FileID{Dev: 8<<20 | 1, Ino: 4343}
)

// CrossTest is a Go and a pytest suite whose tests read what other
// tests wrote: one reader with one writer, one with many, package code
// after the tests, and a pytest test.
func CrossTest() *report.Report {
	r := Empty()
	r.ExitCode = 86
	var c session.CrossReads
	c.Wrote(StateFile, GoTestAccess("TestA", "open", time.Second))
	c.Read(StateFile, "/home/dev/proj/state.json", GoTestAccess("TestB", "", 2*time.Second))
	for i, name := range []string{"TestC", "TestD", "TestE", "TestF", "TestG"} {
		c.Wrote(CacheFile, GoTestAccess(name, "open", time.Duration(3+i)*time.Second))
		r.Violations = append(r.Violations, report.Violation{Op: "open", Path: "/home/dev/.cache/app/index", RequestedPath: "/home/dev/.cache/app/index",
			Flags: "O_WRONLY|O_CREAT", PID: PkgTest.PID, PPID: PkgTest.PPID, Comm: PkgTest.Comm, Cmdline: PkgTest.Cmdline, Chain: []report.Proc{GoTest}, Count: 1,
			First: T0.Add(time.Duration(3+i) * time.Second), Action: report.ActionReported, Severity: report.SeverityLeftBehind,
			Who: report.Who{Runner: report.RunnerGo, Package: "example.com/app", Test: name, Phase: report.PhaseTest}})
	}
	c.Read(CacheFile, "/home/dev/.cache/app/index", GoTestAccess("TestH", "", 9*time.Second))
	after := GoTestAccess("", "", 10*time.Second)
	after.Phase = report.PhaseAfter
	c.Read(StateFile, "/home/dev/proj/state.json", after)

	py := report.Access{Who: report.Who{Runner: report.RunnerPytest, Package: "tests/test_state.py", Test: "tests/test_state.py::test_b", Phase: "call",
		TestFile: "/src/tests/test_state.py", TestLine: 9}, PID: 5100, Comm: "python3", First: T0.Add(11 * time.Second)}
	pyFile := session.FileID{Dev: 8<<20 | 1, Ino: 5151}
	w := py
	w.Op, w.Test, w.TestLine, w.First = "open", "tests/test_state.py::test_a", 5, T0.Add(10*time.Second)
	c.Wrote(pyFile, w)
	c.Read(pyFile, "/home/dev/proj/state.db", py)
	r.CrossTestReads = c.Reads()

	r.Violations = append([]report.Violation{{Op: "open", Path: "/home/dev/proj/state.json", RequestedPath: "state.json",
		Flags: "O_WRONLY|O_CREAT|O_TRUNC", PID: PkgTest.PID, PPID: PkgTest.PPID, Comm: PkgTest.Comm, Cmdline: PkgTest.Cmdline, Chain: []report.Proc{GoTest}, Count: 1,
		First: T0.Add(time.Second), Action: report.ActionReported, Severity: report.SeverityLeftBehind,
		Who: report.Who{Runner: report.RunnerGo, Package: "example.com/app", Test: "TestA", Phase: report.PhaseTest}}, {
		Op: "open", Path: "/home/dev/proj/state.db", RequestedPath: "state.db", Flags: "O_WRONLY|O_CREAT|O_TRUNC",
		PID: 5100, PPID: 5000, Comm: "python3", Cmdline: []string{"python3", "-m", "pytest"}, Chain: []report.Proc{}, Count: 1,
		First: T0.Add(10 * time.Second), Action: report.ActionReported, Severity: report.SeverityLeftBehind,
		Who: report.Who{Runner: report.RunnerPytest, Package: "tests/test_state.py", Test: "tests/test_state.py::test_a", Phase: "call"}}}, r.Violations...)
	return r
}

// Sandboxed is a --sandbox run: a config overwritten, with its diff, a
// file left in the project, one removed, a change no record named, and
// a descriptor COMMAND did not inherit.
func Sandboxed() *report.Report {
	r := Empty()
	r.ExitCode = 86
	r.Home = "/home/dev"
	v := func(op, path, req, severity string, c *report.Change, seen ...string) report.Violation {
		return report.Violation{Op: op, Path: path, RequestedPath: req, PID: PkgTest.PID, PPID: PkgTest.PPID, Comm: PkgTest.Comm,
			Cmdline: PkgTest.Cmdline, Chain: []report.Proc{GoTest}, Count: 1, First: T0.Add(time.Second), Action: report.ActionReported,
			Severity: severity, SeenBy: seen, Change: c, Who: report.Who{Runner: report.RunnerGo, Package: "example.com/app", Test: "TestSave", Phase: report.PhaseTest}}
	}
	file := func(size int64, sum string) *report.FileState {
		return &report.FileState{Type: "file", Mode: "-rw-r--r--", UID: 1000, GID: 1000, Size: size, SHA256: sum}
	}
	cfg := v("open", "/home/dev/.config/app/config.toml", "/home/dev/.config/app/config.toml", report.SeverityDataLoss,
		&report.Change{Kind: "modified", Before: file(25, "85eb"), After: file(26, "0e15"),
			Diff: "--- a/home/dev/.config/app/config.toml\n+++ b/home/dev/.config/app/config.toml\n@@ -1,2 +1,2 @@\n-theme = \"dark\"\n+theme = \"test\"\n size = 12\n"},
		report.SeenBySyscall, report.SeenBySandbox)
	cfg.Flags = "O_WRONLY|O_CREAT|O_TRUNC"
	litter := v("open", "/home/dev/proj/debug.txt", "debug.txt", report.SeverityLeftBehind,
		&report.Change{Kind: "created", After: file(6, "43ba"), Diff: "--- a/home/dev/proj/debug.txt\n+++ b/home/dev/proj/debug.txt\n@@ -0,0 +1 @@\n+debug\n"},
		report.SeenBySyscall, report.SeenBySandbox)
	gone := v("unlink", "/home/dev/proj/go.sum", "go.sum", report.SeverityDataLoss,
		&report.Change{Kind: "removed", Before: file(4096, "9f86")}, report.SeenBySyscall, report.SeenBySandbox)
	unnamed := report.Violation{Op: report.OpWrite, Path: "/home/dev/proj/state.db", Cmdline: []string{}, Chain: []report.Proc{},
		Count: 1, First: T0.Add(2 * time.Second), Action: report.ActionReported, Severity: report.SeverityDataLoss,
		SeenBy: []string{report.SeenBySandbox}, Change: &report.Change{Kind: "modified", Before: file(8192, "aaaa"), After: file(8192, "bbbb")}}
	r.Violations = []report.Violation{cfg, gone, unnamed, litter}
	r.Sandbox = &report.SandboxInfo{Overlaid: []string{"/", "/home"}, Real: []string{"/proc", "/sys", "/dev", "/run", "/tmp", "/home/dev/proj/tests"},
		Applied: []string{"/home/dev/proj/gen/x.out"}, Withheld: []string{"descriptor 3, /home/dev/notes.txt"}}
	return r
}

// SandboxLanded is Sandboxed where a test also wrote a block device
// through /dev, which the sandbox binds through: that write reached the
// real device, and the summary must not say that none did.
func SandboxLanded() *report.Report {
	r := Sandboxed()
	dev := report.Violation{Op: "open", Path: "/dev/loop0", RequestedPath: "/dev/loop0", Flags: "O_WRONLY|O_CREAT|O_TRUNC",
		PID: PkgTest.PID, PPID: PkgTest.PPID, Comm: PkgTest.Comm, Cmdline: PkgTest.Cmdline, Chain: []report.Proc{GoTest},
		Count: 1, First: T0.Add(3 * time.Second), Action: report.ActionReported, Severity: report.SeverityDataLoss,
		SeenBy: []string{report.SeenBySyscall}, BlockDevice: "7:0",
		Who: report.Who{Runner: report.RunnerGo, Package: "example.com/app", Test: "TestDisk", Phase: report.PhaseTest}}
	r.Violations = append([]report.Violation{dev}, r.Violations...)
	return r
}

// Killed is a run under --enforce whose kills ended tests: a Go test
// binary killed in TestSave, a parallel test not finished and two tests
// not run; pytest killed in a test before it said which tests it would
// run; and a command a test started, killed alone.
func Killed() *report.Report {
	r := Empty()
	r.Mode, r.Enforcement, r.ExitCode, r.CommandExit = report.ModeEnforce, "landlock", 86, 1
	r.Command = []string{"make", "test"}
	bin := report.Proc{PID: 5000, PPID: 4990, Comm: "app.test", Exe: "/tmp/go-build1/b001/app.test",
		Cmdline: []string{"/tmp/go-build1/b001/app.test", "-test.paniconexit0", "-test.timeout=10m0s"}}
	py := report.Proc{PID: 5100, PPID: 4000, Comm: "python3", Exe: "/usr/bin/python3.11", Cmdline: []string{"python3", "-m", "pytest"}}
	rm := report.Proc{PID: 5200, PPID: 5001, Comm: "rm", Exe: "/usr/bin/rm", Cmdline: []string{"rm", "-f", "/src/gen/go.sum"}}
	save := report.Who{Runner: report.RunnerGo, Package: "example.com/app", Test: "TestSave", Phase: report.PhaseTest, TestFile: "/src/app/app_test.go", TestLine: 20}
	pyTest := report.Who{Runner: report.RunnerPytest, Package: "tests/test_b.py", Test: "tests/test_b.py::test_export", Phase: "call", TestFile: "/src/tests/test_b.py", TestLine: 7}
	gen := report.Who{Runner: report.RunnerGo, Package: "example.com/gen", Test: "TestGenerate", Phase: report.PhaseTest}
	viol := func(p report.Proc, who report.Who, op, path, flags string, at time.Duration) report.Violation {
		return report.Violation{Op: op, Path: path, RequestedPath: path, Flags: flags, Errno: "EACCES", Failed: 1, PID: p.PID, PPID: p.PPID,
			Comm: p.Comm, Exe: p.Exe, Cmdline: p.Cmdline, Chain: []report.Proc{MakeTest}, Count: 1, First: T0.Add(at),
			Action: report.ActionBlockedKilled, Severity: report.SeverityAttempt, Who: who}
	}
	kill := func(p report.Proc, who report.Who, op, path, flags string, at time.Duration) report.Kill {
		return report.Kill{PID: p.PID, Comm: p.Comm, Exe: p.Exe, Cmdline: p.Cmdline, Time: T0.Add(at), Op: op, Path: path, Flags: flags,
			Action: report.ActionBlockedKilled, Who: who}
	}
	config := "/home/dev/.config/app/config.toml"
	r.Violations = []report.Violation{
		viol(bin, save, "open", config, "O_WRONLY|O_CREAT|O_TRUNC", time.Second),
		viol(py, pyTest, "open", "/src/export.csv", "O_WRONLY|O_CREAT|O_TRUNC", 2*time.Second),
		viol(rm, gen, "unlink", "/src/gen/go.sum", "", 3*time.Second),
	}
	goKill := kill(bin, save, "open", config, "O_WRONLY|O_CREAT|O_TRUNC", time.Second)
	goKill.RanTests = true
	goKill.Interrupted = []report.TestRef{{Package: "example.com/app", ID: "TestParallel"}}
	goKill.NotRun = []report.TestRef{{Package: "example.com/app", ID: "TestAfter"}, {Package: "example.com/app", ID: "FuzzLast"}}
	pyKill := kill(py, pyTest, "open", "/src/export.csv", "O_WRONLY|O_CREAT|O_TRUNC", 2*time.Second)
	pyKill.RanTests = true
	pyKill.NotRunUnknown = "the runner had not announced which tests it would run (docs/protocol.md: plan)"
	r.Kills = []report.Kill{goKill, pyKill, kill(rm, gen, "unlink", "/src/gen/go.sum", "", 3*time.Second)}
	by := "writewatch --enforce killed app.test (pid 5000) in TestSave: " + goKill.Reason()
	r.Tests = []report.TestResult{
		{Runner: report.RunnerGo, Package: "example.com/app", ID: "TestFirst", File: "/src/app/app_test.go", Line: 10, Outcome: report.OutcomePassed},
		{Runner: report.RunnerGo, Package: "example.com/app", ID: "TestParallel", File: "/src/app/app_test.go", Line: 14, Outcome: report.OutcomeSkipped,
			Message: "did not finish: " + by},
		{Runner: report.RunnerGo, Package: "example.com/app", ID: "TestSave", File: "/src/app/app_test.go", Line: 20, Outcome: report.OutcomeFailed,
			Message: "killed by writewatch --enforce: " + goKill.Reason()},
		{Runner: report.RunnerPytest, Package: "tests/test_b.py", ID: "tests/test_b.py::test_export", File: "/src/tests/test_b.py", Line: 7,
			Outcome: report.OutcomeFailed, Message: "killed by writewatch --enforce: " + pyKill.Reason()},
		{Runner: report.RunnerGo, Package: "example.com/gen", ID: "TestGenerate", Outcome: report.OutcomeFailed, Message: "exit status 1"},
		{Runner: report.RunnerGo, Package: "example.com/app", ID: "TestAfter", File: "/src/app/app_test.go", Line: 30, Outcome: report.OutcomeSkipped,
			Message: "not run: " + by},
		{Runner: report.RunnerGo, Package: "example.com/app", ID: "FuzzLast", File: "/src/app/fuzz_test.go", Line: 5, Outcome: report.OutcomeSkipped,
			Message: "not run: " + by},
	}
	return r
}
