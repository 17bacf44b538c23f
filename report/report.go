// Package report is the result of a writewatch run: the Report, its
// Violations and the rest of its schema, written and read as JSON (the
// stable, machine-readable form), and the --baseline match. Programs that
// read writewatch's JSON report can import it.
//
// The package collects no events itself: callers feed occurrences to a
// Builder, which groups them into Violations, and fill in a Report. The
// summaries people read (text, JUnit, GitHub annotations, the suggested
// config) are rendered by writewatch's internal/render.
//
// # JSON schema (version 1)
//
// The JSON field names and their order are those of the struct tags on
// Report, Violation and Proc. Times are RFC 3339 with nanoseconds. Array
// fields ("command", "cmdline", "chain", "violations", "survivors") are
// always arrays, never null. "lost" is omitted when nothing was lost.
//
// JSON strings are UTF-8: a path that is not valid UTF-8 has each invalid
// byte written as U+FFFD in JSON. The text summary shows such paths escaped
// instead, byte for byte.
package report

import (
	"bytes"
	"cmp"
	"encoding/json"
	"slices"
	"strings"
	"time"
)

// SchemaVersion is the value of Report.Version for the schema described in
// the package documentation.
const SchemaVersion = 1

// Run modes (Report.Mode).
const (
	ModeGate  = "gate"  // violations fail the run
	ModeAudit = "audit" // violations are reported only
	// ModeEnforce: violations fail the run, and the kernel refuses them
	// (Report.Enforcement says how).
	ModeEnforce = "enforce"
)

// What writewatch did about a write (Violation.Action).
const (
	ActionReported      = "reported"       // reported only: the write may have taken effect
	ActionBlocked       = "blocked"        // the kernel refused it: it did not take effect
	ActionKilled        = "killed"         // its process was killed; the write itself may have taken effect
	ActionBlockedKilled = "blocked+killed" // refused, and its process killed
)

// Severities (Violation.Severity), worst first: how much harm a write
// did, from the kernel's facts at the time and what is on disk at the end
// of the run (package severity).
const (
	// SeverityDataLoss: a file or directory that was there before the run
	// was truncated, overwritten, appended to, removed, renamed, renamed
	// over, or had its xattrs changed, or its mode, owner or modification
	// time changed and not set back by the end.
	SeverityDataLoss = "data-loss"
	// SeverityLeftBehind: created during the run and still there at its end.
	SeverityLeftBehind = "left-behind"
	// SeverityTransient: created and removed during the run; or the mode,
	// owner or modification time of a file from before the run changed
	// and set back by its end.
	SeverityTransient = "transient"
	// SeverityAttempt: nothing changed: every call failed, or a file that was
	// there was opened for writing and not written.
	SeverityAttempt = "attempt"
)

// Severities lists the severities, worst first.
var Severities = []string{SeverityDataLoss, SeverityLeftBehind, SeverityTransient, SeverityAttempt}

// SeverityRank orders severities, worst first; an unknown one ("") comes
// first, as possibly the worst.
func SeverityRank(s string) int {
	switch s {
	case SeverityDataLoss:
		return 1
	case SeverityLeftBehind:
		return 2
	case SeverityTransient:
		return 3
	case SeverityAttempt:
		return 4
	}
	return 0
}

// ViaIOUring is the Violation.Via of a write submitted as an io_uring
// request: seen when submitted, its result unknown.
const ViaIOUring = "io_uring"

// BlockDeviceNode is the BlockDevice of a violation that made a block
// device's node (mknod), whose number the report does not keep.
const BlockDeviceNode = "node"

// How a violation was seen (Violation.SeenBy).
const (
	// SeenBySyscall: a record of the system call (or io_uring request)
	// that made the write, judged by the path it named.
	SeenBySyscall = "syscall"
	// SeenByFilesystem: the kernel's own notification that the file
	// changed (the filesystem witness), with the path the kernel acted on.
	SeenByFilesystem = "filesystem"
	// SeenBySandbox: the sandbox's overlay holds the change (--sandbox):
	// what the path would have become, with the path the kernel made.
	SeenBySandbox = "sandbox"
)

// Operations only the filesystem witness names: a change that no system
// call record explains, whose call is not known.
const (
	OpCreate = "create" // a name was made: a file, a link, a socket, a device node
	OpWrite  = "write"  // the file's data changed (written, truncated, allocated)
	OpAttrib = "attrib" // its mode, owner, times or extended attributes changed
)

// Roles of a path in a two-path operation (Violation.Role).
const (
	RoleOld = "old" // rename: the path renamed away; link: the file linked
	RoleNew = "new" // rename, link, symlink: the path created
)

// Causes of lost events (keys of Report.Lost).
const (
	LostRingbufFull = "ringbuf_full"
	LostProcMapFull = "proc_map_full"
)

// Proc describes one process of the traced tree.
type Proc struct {
	PID     int      `json:"pid"` // as seen in writewatch's PID namespace
	PPID    int      `json:"ppid"`
	Comm    string   `json:"comm"`
	Exe     string   `json:"exe,omitempty"`
	Cmdline []string `json:"cmdline"`
}

// ProgramStat is the kernel's count for one of writewatch's programs.
type ProgramStat struct {
	Name string `json:"name"`
	Runs uint64 `json:"runs"`
	// RunNS is the time its runs took, in nanoseconds, summed over every
	// process that ran it.
	RunNS uint64 `json:"run_ns"`
	// Missed counts the runs the kernel skipped, the program being
	// already at work on that CPU; they make the run incomplete, but for
	// the Go test probe's (go_probe), which only blur which test wrote.
	Missed uint64 `json:"missed,omitempty"`
}

// Violation is one group of writes outside the allowlist: every occurrence
// of the same operation on the same path in the same role. The process,
// time and requested path are those of the first occurrence.
type Violation struct {
	// Op is the name of the operation (package ops: Op.String).
	Op string `json:"op"`
	// Path is absolute and clean; it is what was matched against the
	// allowlist.
	Path string `json:"path"`
	// RequestedPath is the path as the process passed it.
	RequestedPath string `json:"requested_path"`
	// Flags are the open flags of an open, e.g. "O_WRONLY|O_CREAT|O_TRUNC".
	Flags string `json:"flags,omitempty"`
	// Role is "old" or "new" for rename, "new" for link and symlink.
	Role string `json:"role,omitempty"`
	// Errno is "" when every call succeeded, else the name of the error
	// of the first call that failed, e.g. "ENOENT".
	Errno string `json:"errno,omitempty"`
	// Failed is how many of the Count calls failed: 0 when every call
	// succeeded, Count when every call failed (nothing was done). A
	// report written before it existed has none, and an Errno only when
	// every call failed: FailedCalls reads both.
	Failed int `json:"failed,omitempty"`
	// Truncated reports that the path did not fit the kernel buffers:
	// Path is then only a prefix of the real path.
	Truncated bool `json:"truncated,omitempty"`
	// Severity is one of the Severity constants, "" when unknown.
	Severity string `json:"severity,omitempty"`
	// Baselined reports that the --baseline report lists this write: it
	// fails nothing.
	Baselined bool `json:"baselined,omitempty"`
	// BaselineLeftover reports that the path held, before the run, what
	// an earlier run left there: the --baseline report lists the path
	// as left-behind (and never as data-loss). The kernel's facts made
	// the write data-loss; its Severity is that of a write to a file
	// the run made (left-behind, or transient when the path is gone at
	// the end), as the file it changed was not the user's.
	BaselineLeftover bool `json:"baseline_leftover,omitempty"`
	// PID and PPID are as seen in writewatch's PID namespace.
	PID     int      `json:"pid"`
	PPID    int      `json:"ppid"`
	Comm    string   `json:"comm"`
	Cmdline []string `json:"cmdline"`
	// Chain lists the ancestors, nearest first, ending at the process of
	// the traced command. It is empty when that process wrote itself.
	Chain []Proc `json:"chain"`
	// Count is how many times this (Op, Path, Role) happened with the
	// same test attribution (Runner, Package, Test, Phase, Fixture).
	Count int       `json:"count"`
	First time.Time `json:"first"`
	// Action is what writewatch did about the first occurrence: one of
	// the Action constants.
	Action string `json:"action"`
	// DeniedBy is the source of the deny entry that matched, e.g.
	// ".writewatch.yaml:7", or "" when no deny rule matched.
	DeniedBy string `json:"denied_by,omitempty"`
	// NotEnforced is the source of the allow entry that allows the
	// write, when --enforce refused it all the same: the kernel cannot
	// grant that entry exactly (a glob, a path missing at start, a deny
	// entry inside it; see --print-config). "" otherwise.
	NotEnforced string `json:"not_enforced,omitempty"`
	// BlockDevice is the number ("major:minor") of the block device
	// whose node Path is, when the write opened it for writing or made
	// the node (then "node"): a write of everything on the device,
	// reported wherever the node lies unless an allow entry names the
	// node's path exactly. "" otherwise.
	BlockDevice string `json:"block_device,omitempty"`
	// Via is "" for a syscall, ViaIOUring for an io_uring request.
	Via string `json:"via,omitempty"`
	// SeenBy says how the write was seen: SeenBySyscall,
	// SeenByFilesystem, or both, in that order. A write seen by the
	// filesystem alone has the path the kernel changed; its Op is that
	// of the system call record that explains it, when one does, else
	// one of the Op constants the witness names (OpCreate, OpWrite,
	// OpAttrib, or OpUnlink, OpRmdir, OpMkdir, OpRename).
	SeenBy []string `json:"seen_by,omitempty"`

	// Exe is the program file of the process that wrote, when known.
	Exe string `json:"exe,omitempty"`
	// Who is the test that wrote, as its runner named it.
	Who
	// Change is what the path would have become (--sandbox), when the
	// sandbox held a change of it.
	Change *Change `json:"change,omitempty"`
}

// Change is what a path would have become (--sandbox): the change its
// overlay held, which never reached the real file.
type Change struct {
	// Kind is "created", "modified", "attrib", "removed", "replaced" or
	// "moved".
	Kind string `json:"kind"`
	// From is where a moved directory was.
	From string `json:"from,omitempty"`
	// Before is the real file, nil when there was none; After what it
	// would have become, nil when it would have been removed.
	Before *FileState `json:"before,omitempty"`
	After  *FileState `json:"after,omitempty"`
	// Diff is a unified diff of a text file's contents, cut at
	// DiffLines lines (DiffCut says how many more there were).
	Diff    string `json:"diff,omitempty"`
	DiffCut int    `json:"diff_cut,omitempty"`
}

// FileState is a file as a Change shows it.
type FileState struct {
	Type   string `json:"type"` // file, dir, symlink, ...
	Mode   string `json:"mode"` // as ls shows the permissions, e.g. "-rw-r--r--"
	UID    uint32 `json:"uid"`
	GID    uint32 `json:"gid"`
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256,omitempty"`
	Target string `json:"target,omitempty"` // a symlink's
}

// DiffLines bounds a Change's diff.
const DiffLines = 60

// SandboxInfo is how a run was sandboxed.
type SandboxInfo struct {
	// Overlaid are the mount points COMMAND saw as copy-on-write
	// overlays; Real those bound through (special filesystems, the
	// allowed paths, what is mounted read-only).
	Overlaid []string `json:"overlaid"`
	Real     []string `json:"real"`
	// Applied are the changes the allowlist allows that were made on
	// the real filesystem when the run ended (a glob's, a path missing
	// at the start); Unapplied those that could not be, with why.
	Applied   []string `json:"applied,omitempty"`
	Unapplied []string `json:"unapplied,omitempty"`
	// Kept is where --sandbox-keep kept what the run would have changed.
	Kept string `json:"kept,omitempty"`
	// ReadOnly are the filesystems that could not be overlaid, made
	// read-only in the sandbox instead, each with why.
	ReadOnly []string `json:"read_only,omitempty"`
	// Withheld are the descriptors writewatch was started with, open
	// for writing on files outside the allowlist, that COMMAND did not
	// inherit: through them it would have written the real files.
	Withheld []string `json:"withheld,omitempty"`
}

// Holds says whether the sandbox held path's changes, and where: the
// deepest of its places (Overlaid, Real) that path lies in, and whether
// that place is an overlay, whose upper layer kept every change there
// from the real file. A path on a place bound through (a special
// filesystem, an allowed directory) is written for real.
func (s *SandboxInfo) Holds(path string) (place string, overlaid bool) {
	best := -1
	for i, places := range [][]string{s.Overlaid, s.Real} {
		for _, p := range places {
			if (path == p || p == "/" || strings.HasPrefix(path, p+"/")) && len(p) > best {
				best, place, overlaid = len(p), p, i == 0
			}
		}
	}
	return place, overlaid
}

// FailedCalls is how many of v's calls failed (Failed; in a report
// written before Failed existed, Count when Errno is set).
func (v *Violation) FailedCalls() int {
	if v.Failed == 0 && v.Errno != "" {
		return max(v.Count, 1)
	}
	return v.Failed
}

// AllFailed reports whether every call of v failed: it changed nothing.
func (v *Violation) AllFailed() bool {
	return v.Errno != "" && v.FailedCalls() >= max(v.Count, 1)
}

// PartlyFailed reports whether some of v's calls failed and others did
// not.
func (v *Violation) PartlyFailed() bool {
	n := v.FailedCalls()
	return n > 0 && n < max(v.Count, 1)
}

// Who is who made a write (or read) besides its process: the test, as
// its runner named it, and when in the test. Violation and Access carry
// it; Key names it for grouping.
type Who struct {
	// Runner is the test runner that announced Test: RunnerGo, RunnerPytest
	// or the name another runner gave through the boundary protocol.
	Runner string `json:"runner,omitempty"`
	// Package is the Go package (import path) or the test suite (pytest:
	// the test file) the write belongs to, when known.
	Package string `json:"package,omitempty"`
	// Test is the id of the test that wrote: "TestSave/sub" for Go, the
	// node id for pytest. "" outside any test, or when ambiguous.
	Test string `json:"test,omitempty"`
	// Phase is when it wrote: for a test "test", "cleanup" (Go) or
	// "setup", "call", "teardown" (pytest), and "setUp", "tearDown" for
	// a unittest.TestCase's own methods (pytest); outside tests the runner's
	// phase, e.g. PhaseSetup (Go init and TestMain before the tests),
	// PhaseTeardown, "collect".
	Phase string `json:"phase,omitempty"`
	// Fixture is the pytest fixture being set up, when one was.
	Fixture string `json:"fixture,omitempty"`
	// AmbiguousTests lists the tests running when a goroutine that no
	// test is known to have started wrote: one of them, or none, did it.
	AmbiguousTests []string `json:"ambiguous_tests,omitempty"`
	// TestFile and TestLine locate the test's source, when known: the
	// place its runner announced with the phase, which for a unittest
	// setUp or tearDown is that method's.
	TestFile string `json:"test_file,omitempty"`
	TestLine int    `json:"test_line,omitempty"`
}

// Key is w as one string, for grouping: the same write by two tests is
// two groups. "" when nothing is known of who wrote.
func (w *Who) Key() string {
	if w.Package == "" && w.Test == "" && w.Phase == "" && len(w.AmbiguousTests) == 0 {
		return ""
	}
	return strings.Join(append([]string{w.Runner, w.Package, w.Test, w.Phase, w.Fixture}, w.AmbiguousTests...), "\x00")
}

// Test runners (Violation.Runner, TestResult.Runner).
const (
	RunnerGo     = "go"
	RunnerPytest = "pytest"
)

// Phases outside a test (Violation.Phase).
const (
	PhaseSetup    = "setup"    // Go: package init and TestMain before the tests
	PhaseTeardown = "teardown" // Go: TestMain after the tests
	// PhaseInit and PhaseAfter are PhaseSetup and PhaseTeardown of a
	// package without TestMain.
	PhaseInit    = "init"    // Go: package init before the tests
	PhaseAfter   = "after"   // Go: after the tests: the testing package, goroutines left running
	PhaseTest    = "test"    // Go: the test function (also an example's, a benchmark's, a fuzz target's)
	PhaseCleanup = "cleanup" // Go: the test's Cleanup functions and after
)

// Test outcomes (TestResult.Outcome).
const (
	OutcomePassed  = "passed"
	OutcomeFailed  = "failed"
	OutcomeSkipped = "skipped"
)

// TestResult is one test that ran under the traced command, with the
// runner's own result when the runner told it.
type TestResult struct {
	Runner  string `json:"runner"`
	Package string `json:"package,omitempty"`
	ID      string `json:"id"`
	File    string `json:"file,omitempty"`
	Line    int    `json:"line,omitempty"`
	// Outcome is one of the Outcome constants, or "" when unknown.
	Outcome string `json:"outcome,omitempty"`
	// Seconds is the runner's duration, when known.
	Seconds float64 `json:"seconds,omitempty"`
	// Message is the runner's failure or skip message, when known.
	Message string `json:"message,omitempty"`
}

// PackageRun is one Go test binary that ran and was traced.
type PackageRun struct {
	Package string `json:"package"`
	PID     int    `json:"pid"`
	// Followed reports whether its tests could be told apart; when false,
	// Problem says why and its writes carry the package only.
	Followed bool   `json:"followed"`
	Problem  string `json:"problem,omitempty"`
	// TestMain reports that the package defines TestMain.
	TestMain bool `json:"test_main,omitempty"`
}

// Report is the result of one run.
type Report struct {
	Version int    `json:"version"` // SchemaVersion
	Mode    string `json:"mode"`    // ModeGate, ModeAudit or ModeEnforce
	// Enforcement is the name of the tier that enforced the allowlist
	// (lsm, landlock or kill: package policy), "" when the run did not
	// enforce.
	Enforcement string `json:"enforcement"`
	// EnforcementNote says what the tier cannot prevent, if anything.
	EnforcementNote string   `json:"enforcement_note,omitempty"`
	Command         []string `json:"command"`
	WorkDir         string   `json:"workdir"`
	// Home is the home directory of the user COMMAND ran as (its HOME),
	// which "How to fix" writes as "~".
	Home       string `json:"home,omitempty"`
	ConfigFile string `json:"config_file"` // "" when none
	// ExitCode is writewatch's own exit code.
	ExitCode int `json:"exit_code"`
	// CommandExit is the traced command's exit code, 128+N for signal N;
	// NotStarted when it never ran.
	CommandExit int       `json:"command_exit_code"`
	Started     time.Time `json:"started"`
	Finished    time.Time `json:"finished"`
	// Processes is the number of processes traced.
	Processes int `json:"processes"`
	// Events is the number of write events examined.
	Events     uint64 `json:"events"`
	LostEvents uint64 `json:"lost_events"`
	// LostWrites is the part of LostEvents that were write events (the
	// rest are process records).
	LostWrites uint64 `json:"lost_writes"`
	// Lost breaks LostEvents down by cause (the Lost constants).
	Lost map[string]uint64 `json:"lost,omitempty"`
	// TruncatedPaths counts events whose path did not fit the kernel
	// buffers.
	TruncatedPaths uint64 `json:"truncated_paths"`
	// AllowedInKernel counts the write events (part of Events) that the
	// kernel itself found allowed and never sent to user space.
	AllowedInKernel uint64      `json:"allowed_in_kernel"`
	Violations      []Violation `json:"violations"`
	// Survivors are the processes of the tree still alive when writewatch
	// finished.
	Survivors []Proc `json:"survivors"`
	// UnlistedViolations counts writes outside the allowlist to paths
	// beyond the --max-violations first ones, which are not listed.
	UnlistedViolations uint64 `json:"unlisted_violations,omitempty"`
	// LostRefusals counts writes --enforce refused (the kernel's own
	// count) whose records were lost: they are violations this report
	// cannot list.
	LostRefusals uint64 `json:"lost_refusals,omitempty"`
	// Incomplete says why writewatch could not see everything the tree
	// did, one reason per entry in words a user understands ("312 write
	// records were lost: the ring buffer was full"). A run with a reason
	// has no verdict: it never passes (exit 88) unless the user accepts
	// it (--accept-incomplete). Empty when writewatch saw everything.
	Incomplete []string `json:"incomplete,omitempty"`
	// PeakRSS is writewatch's own peak resident memory, in bytes.
	PeakRSS uint64 `json:"peak_rss_bytes"`
	// Programs are the kernel's counts for writewatch's programs, those
	// that ran while the kernel counted runs (sysctl
	// kernel.bpf_stats_enabled=1) or that it skipped: what watching cost
	// every process that ran them (docs/performance.md).
	Programs []ProgramStat `json:"programs,omitempty"`
	// SurvivorsKilled says writewatch killed the survivors (SIGKILL,
	// --kill-survivors); otherwise they were left running.
	SurvivorsKilled bool `json:"survivors_killed"`

	// Tests lists every test seen, in the order they started; then
	// those a kill kept from running (Kills), as skipped.
	Tests []TestResult `json:"tests,omitempty"`
	// Kills are the processes --enforce killed, in the order it killed
	// them, each with the test it worked for and the tests its death
	// ended.
	Kills []Kill `json:"kills,omitempty"`
	// Packages lists the Go test binaries that ran. A package that go
	// test did not run (its result came from the cache) is not traced;
	// see Notes.
	Packages []PackageRun `json:"packages,omitempty"`
	// Unattributed counts, by cause, what kept writewatch from telling
	// which test wrote; such writes are reported as ambiguous.
	Unattributed map[string]uint64 `json:"unattributed,omitempty"`
	// Notes are things writewatch did or saw that the reader should
	// know, e.g. that it disabled go test's result cache.
	Notes []string `json:"notes,omitempty"`
	// Witness says what the filesystem witness watched; nil when the run
	// did not try it.
	Witness *WitnessInfo `json:"witness,omitempty"`
	// Sandbox says how the run was sandboxed (--sandbox); nil when it
	// was not.
	Sandbox *SandboxInfo `json:"sandbox,omitempty"`
	// Baseline is the --baseline report the violations were matched
	// against, "" without one.
	Baseline string `json:"baseline,omitempty"`
	// Fixed are the baseline's violations that this run did not make
	// again, as the baseline lists them; but for those in Leftovers.
	Fixed []Violation `json:"fixed,omitempty"`
	// Leftovers are the baseline's left-behind violations that this run
	// did not make again, whose paths are still there at its end: not
	// fixed, as far as this run can tell, since a test may skip a write
	// when it finds the file an earlier run left. Removing them, and
	// running again, tells.
	Leftovers []Violation `json:"leftovers,omitempty"`
	// CrossTestReads are the reads by one test of a file outside the
	// allowlist that another test of the run had written: tests whose
	// outcome may depend on the order they run in.
	CrossTestReads []CrossTestRead `json:"cross_test_reads,omitempty"`
	// UnlistedCrossTestReads counts those beyond the first ones listed.
	UnlistedCrossTestReads uint64 `json:"unlisted_cross_test_reads,omitempty"`
}

// WitnessInfo is what the filesystem witness, the second account of
// what changed on disk, watched and saw.
type WitnessInfo struct {
	// Active: it watched at least one filesystem for the whole run.
	Active bool `json:"active"`
	// Unavailable says why it watched nothing ("" when Active), e.g.
	// that watching whole filesystems needs CAP_SYS_ADMIN.
	Unavailable string `json:"unavailable,omitempty"`
	// Filesystems are those it was asked to watch, watched or not.
	Filesystems []WitnessFilesystem `json:"filesystems,omitempty"`
	// Events counts the changes by the tree it saw.
	Events uint64 `json:"events"`
	// Unexplained counts those no system call record explained whose
	// path is outside the allowlist: each is in Violations.
	Unexplained uint64 `json:"unexplained,omitempty"`
	// Overflows counts the times the kernel's queue overflowed and
	// changes were lost; Unresolved the tree's changes whose path could
	// not be found. Either makes the run Incomplete.
	Overflows  uint64 `json:"overflows,omitempty"`
	Unresolved uint64 `json:"unresolved,omitempty"`
	// OverlayLayers counts the tree's changes that were an overlay
	// writing its upper or work directory, as it does for each write
	// made through it (a container's root): those writes are judged by
	// their system calls, which name the overlay's paths.
	OverlayLayers uint64 `json:"overlay_layers,omitempty"`
	// Contents says when it watched writes to the contents of files on
	// the whole of each filesystem: ContentsFromStart, or
	// ContentsOnDemand (the files COMMAND inherited alone, until a
	// process of the tree did what ContentsSince says, if it did: see
	// docs/architecture.md).
	Contents      string `json:"contents,omitempty"`
	ContentsSince string `json:"contents_since,omitempty"`
}

// The values of WitnessInfo.Contents.
const (
	ContentsFromStart = "from the start"
	ContentsOnDemand  = "on demand"
)

// WitnessFilesystem is one filesystem the witness was asked to watch.
type WitnessFilesystem struct {
	// Paths are the paths it was asked to watch that lie on it.
	Paths   []string `json:"paths"`
	Type    string   `json:"type,omitempty"`
	Watched bool     `json:"watched"`
	// Error says why it is not watched.
	Error string `json:"error,omitempty"`
}

// Failed reports whether the run found writes outside the allowlist that
// fail it (see Violation.Fails).
func (r *Report) Failed() bool {
	for i := range r.Violations {
		if r.Violations[i].Fails() {
			return true
		}
	}
	return r.UnlistedViolations > 0 || r.LostRefusals > 0
}

// Fails reports whether v fails the run: every write outside the
// allowlist does, except one the --baseline report lists, and an attempt that enforcement did not refuse (a
// call that failed by itself and changed nothing, such as
// os.Remove("/does/not/exist")), which is reported only.
func (v *Violation) Fails() bool {
	if v.Baselined {
		return false
	}
	return v.Severity != SeverityAttempt || (v.Action != "" && v.Action != ActionReported)
}

// Blind reports whether writewatch could not see everything the tree did
// (Incomplete): writes outside the allowlist may have gone unseen, so a
// run that found none has no verdict.
func (r *Report) Blind() bool { return len(r.Incomplete) > 0 }

// MarshalJSON encodes p with "cmdline" as an array even when nil.
func (p Proc) MarshalJSON() ([]byte, error) {
	type plain Proc
	q := plain(p)
	q.Cmdline = nonNil(q.Cmdline)
	return marshal(q)
}

// MarshalJSON encodes v with "cmdline" and "chain" as arrays even when nil.
func (v Violation) MarshalJSON() ([]byte, error) {
	type plain Violation
	q := plain(v)
	q.Cmdline = nonNil(q.Cmdline)
	q.Chain = nonNil(q.Chain)
	return marshal(q)
}

// MarshalJSON encodes r with "command", "violations" and "survivors" as
// arrays even when nil.
func (r Report) MarshalJSON() ([]byte, error) {
	type plain Report
	q := plain(r)
	q.Command = nonNil(q.Command)
	q.Violations = nonNil(q.Violations)
	q.Survivors = nonNil(q.Survivors)
	return marshal(q)
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// marshal encodes v compactly without HTML escaping, so that paths keep
// '<', '>' and '&' readable whatever encoder the result is embedded in.
func marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// The exit codes of a run's verdict, among writewatch's (the README's
// "Exit codes" lists them all).
const (
	ExitViolations = 86 // writes outside the allowlist fail the run
	ExitIncomplete = 88 // writewatch could not see everything: the verdict is unknown
)

// Verdict is the exit code the run ends with when every output asked for
// was written and tracing held: ExitViolations when it found writes that
// fail it (Failed), unless audit; else ExitIncomplete when it could not
// see everything (Blind), unless audit or acceptIncomplete; else
// COMMAND's own.
func (r *Report) Verdict(audit, acceptIncomplete bool) int {
	switch {
	case !audit && r.Failed():
		return ExitViolations
	case !audit && !acceptIncomplete && r.Blind():
		return ExitIncomplete
	}
	return r.CommandExit
}

// NotStarted is Report.CommandExit when COMMAND never ran.
const NotStarted = -1

// SortBySeverity orders violations by severity, worst first (see
// SeverityRank), keeping the order of those of the same severity.
func SortBySeverity(vs []Violation) {
	slices.SortStableFunc(vs, func(a, b Violation) int {
		return cmp.Compare(SeverityRank(a.Severity), SeverityRank(b.Severity))
	})
}
