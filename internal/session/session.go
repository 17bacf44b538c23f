// Package session turns one run's inputs into its report, with no
// kernel and no root: the tracer's records (who wrote what, as each
// call named it), the filesystem witness's changes and barriers (what
// changed on disk), the run's own announcements (COMMAND started, a Go
// test binary followed, a reason the run cannot see everything), and at
// the end what the kernel counted. They come as one stream of Items, in
// the order the run read them; Finish returns the report.
//
// Records attribute: the process tree, the test of each write, its
// operation and the path as passed. The sources of what changed decide
// what the report holds: a record the judge finds outside the allowlist
// is a violation, and a change the witness saw outside the allowlist is
// one too, explained by a record or not (witness.Checker). Another
// source of changes (the sandbox's overlay) feeds the same Items.
//
// What the session asks of the machine (where a path leads now, what a
// file is at the end) goes through a host.Host: a live run asks this
// machine; a recording keeps every answer with the items (Config.Record),
// so that Replay gives the same report on any machine.
package session

import (
	"io"
	"time"

	"github.com/writewatch/writewatch/internal/allowlist"
	"github.com/writewatch/writewatch/internal/attribution"
	"github.com/writewatch/writewatch/internal/host"
	"github.com/writewatch/writewatch/internal/incomplete"
	"github.com/writewatch/writewatch/internal/judge"
	"github.com/writewatch/writewatch/internal/live"
	"github.com/writewatch/writewatch/internal/policy"
	"github.com/writewatch/writewatch/internal/runners"
	"github.com/writewatch/writewatch/internal/severity"
	"github.com/writewatch/writewatch/internal/status"
	"github.com/writewatch/writewatch/internal/witness"
	"github.com/writewatch/writewatch/report"
	"github.com/writewatch/writewatch/tracer"
)

// Config is what the session knows of the run before its first item.
// A recording keeps it whole (Allow as its entries).
type Config struct {
	Mode    string    `json:"mode"` // report.ModeGate, ModeAudit or ModeEnforce
	Command []string  `json:"-"`    // COMMAND and its arguments
	WorkDir string    `json:"-"`
	Home    string    `json:"-"`
	Started time.Time `json:"started"`
	// Allow is the allowlist writes are judged against.
	Allow *allowlist.List `json:"-"`
	// MaxViolations caps the violations listed (0: no cap).
	MaxViolations int `json:"max_violations,omitempty"`
	// Tier is the enforcement tier's name under --enforce, "" otherwise.
	Tier string `json:"tier,omitempty"`
	// KillSurvivors: the processes left after the grace period are
	// killed.
	KillSurvivors bool `json:"kill_survivors,omitempty"`
	// Witness says the filesystem witness watches (its changes come as
	// items); InitialPIDNS that writewatch runs in the initial PID
	// namespace, where the witness's pids are the tracer's tgids.
	Witness      bool `json:"witness,omitempty"`
	InitialPIDNS bool `json:"initial_pid_ns,omitempty"`
	// Self is writewatch's own pid.
	Self int32 `json:"self,omitempty"`
	// StartDevs are the devices of the filesystems mounted in COMMAND's
	// mount namespace as the run began (st_dev): a filesystem in memory
	// of another device was made during the run (see ownView).
	StartDevs []uint64 `json:"start_devs,omitempty"`
	// Roots are where the other names of a file linked from a held
	// descriptor are looked for: the project, the home directory.
	Roots []string `json:"-"`
	// GoFlags is what was done to GOFLAGS, for the notes.
	GoFlags runners.GoFlags `json:"go_flags"`
	// Sandbox is how COMMAND was sandboxed (--sandbox); nil when it was
	// not. Its overlays' changes then come as items (Sandboxed).
	Sandbox *SandboxConfig `json:"sandbox,omitempty"`
	// Baseline is the --baseline report the violations are matched
	// against (report.ApplyBaseline), BaselineFile its name as the user
	// gave it; nil without one.
	Baseline     *report.Report `json:"baseline,omitempty"`
	BaselineFile string         `json:"-"`

	// Tracked asks the kernel whether a process is of the tree, for the
	// witness (witness.CheckOptions.Tracked); nil: it cannot be asked.
	Tracked func(tgid uint32) bool `json:"-"`
	// Live, when not nil, receives the live counters while the run
	// lasts (the status line, /metrics).
	Live *live.Counters `json:"-"`
	// Resume lets a process the kernel paused go on once its record is
	// judged (tracer.Event.Resume); nil: nothing to resume (a replay).
	Resume func(ev *tracer.Event) `json:"-"`
	// Record, when not nil, receives a recording of the run: this
	// config, every item, every answer of the host, and the end.
	Record io.Writer `json:"-"`
	// Killed, when not nil, is told of each process enforcement kills,
	// as soon as its record is handled (its RanTests set, not yet what
	// its death ended): for a line on the terminal.
	Killed func(k *report.Kill) `json:"-"`
}

// Item is one input of the run, in the order the run read it. Exactly
// one of Record, Change, Barrier, Tick, Launched, GoBinary and
// Incomplete is set.
type Item struct {
	// Now is when the run handed it to the session.
	Now time.Time `json:"now"`
	// Boot is its stamp on the kernel's boot clock: a record's, or when
	// the witness handed over a change or barrier; a tick's is the boot
	// clock then.
	Boot uint64 `json:"boot,omitempty"`
	// Time is Boot on the wall clock, for a change or barrier (a record
	// has its own).
	Time time.Time `json:"time,omitzero"`

	// Record is a record of the tracer: a write, fork, exec, exit, test
	// start or end, read, or a call after which contents are watched.
	// Its slices may be views of the tracer's buffers.
	Record *tracer.Event `json:"record,omitempty"`
	// Change is a change on disk the filesystem witness saw.
	Change *witness.Event `json:"change,omitempty"`
	// Barrier: every change the witness queued before barrier Barrier
	// was placed has come (witness.FinalBarrier: the run's end).
	Barrier uint64 `json:"barrier,omitempty"`
	// Tick: time passed with nothing to read; held changes may be
	// decided.
	Tick bool `json:"tick,omitempty"`
	// Launched: COMMAND started.
	Launched *Launched `json:"launched,omitempty"`
	// GoBinary: a Go test binary of the tree was followed, or could not
	// be.
	GoBinary *GoBinary `json:"go_binary,omitempty"`
	// Incomplete is a reason the run could not see everything, found
	// outside the session (the witness's start, its end).
	Incomplete string `json:"incomplete,omitempty"`
	// Sandboxed is a change the sandbox's overlay held (--sandbox).
	Sandboxed *Sandboxed `json:"sandboxed,omitempty"`
}

// Launched is COMMAND's start.
type Launched struct {
	// PID is COMMAND's process in writewatch's PID namespace, Launcher
	// writewatch's own.
	PID      uint32 `json:"pid"`
	Launcher uint32 `json:"launcher"`
}

// GoBinary is a Go test binary of the tree, as the run followed it
// (attribution.Tests.GoBinary).
type GoBinary struct {
	TGID     uint32 `json:"tgid"`
	PID      int    `json:"pid"`
	Package  string `json:"package"`
	Followed bool   `json:"followed"`
	Problem  string `json:"problem,omitempty"`
	TestMain bool   `json:"test_main,omitempty"`
}

// End is what the run knows once COMMAND and its tree are done.
type End struct {
	Finished    time.Time `json:"finished"`
	CommandExit int       `json:"command_exit"`
	// Alive are the processes of the tree still running (the kernel's).
	Alive []uint32 `json:"alive,omitempty"`
	// Repeats are the kernel's counts of the repeats of sent writes.
	Repeats []Repeat `json:"repeats,omitempty"`
	// Stats are the kernel's counters, with its programs'; StatsErr says
	// why they could not be read.
	Stats    tracer.Stats `json:"stats"`
	StatsErr string       `json:"stats_err,omitempty"`
	// Witness is the filesystem witness's account as its Watch kept it
	// (the session adds what it counted).
	Witness report.WitnessInfo `json:"witness"`
	// Sandbox is the sandbox's account (--sandbox).
	Sandbox report.SandboxInfo `json:"sandbox,omitzero"`
	// TestResults are the runner's own results (go test -json).
	TestResults []report.TestResult `json:"test_results,omitempty"`
	PeakRSS     uint64              `json:"peak_rss,omitempty"`
}

// Repeat is the kernel's count of the repeats of one sent write.
type Repeat struct {
	Key tracer.RepeatKey `json:"key"`
	N   uint64           `json:"n"`
}

// Session is one run, from its first item to its report. Not safe for
// concurrent use, but for Checker's Wanted (see witness.Checker).
type Session struct {
	cfg     Config
	host    host.Host
	live    *live.Counters
	ledger  incomplete.Ledger
	checker *witness.Checker
	judge   *judge.Judge
	tree    *attribution.Tree
	tests   *attribution.Tests
	groups  *Groups
	xreads  CrossReads
	sev     *severity.Tracker
	tier    policy.Tier
	rec     *recorder
	// repeatOf maps a sent write's repeat key to the violations it made,
	// so the kernel's counts of its repeats can be added at the end.
	repeatOf map[tracer.RepeatKey][]group
	// refused counts the records of writes enforcement acted on.
	refused policy.Refusals
	writes  uint64
	seen    int       // processes, as last stored in the live counters
	settled bool      // the witness handed over every change of the tree
	now     time.Time // the item being handled's Now
	pid     uint32    // COMMAND's, in writewatch's PID namespace
	// barrier is the id of a barrier the witness is to place, when
	// placeBarrier says so (Barrier).
	barrier      uint64
	placeBarrier bool
	// sandboxed are the sandbox's changes, by path, in the order they
	// came (sandboxOrder).
	sandboxed    map[string]*Sandboxed
	sandboxOrder []string
	// kills are the processes enforcement killed, in order;
	// killedProcs, their tgids.
	kills       []*killed
	killedProcs map[uint32]bool
}

// group names one violation group, and the error of the record whose
// repeats the kernel counts for it ("" when the call succeeded).
type group struct{ op, path, role, who, errno string }

// New starts a session. h answers its questions about the machine.
func New(cfg Config, h host.Host) (*Session, error) {
	s := &Session{cfg: cfg, live: cfg.Live, repeatOf: map[tracer.RepeatKey][]group{}, now: cfg.Started}
	if s.live == nil {
		s.live = new(live.Counters)
	}
	s.live.Start(cfg.Started)
	if cfg.Record != nil {
		s.rec = newRecorder(cfg.Record, &s.cfg)
		h = &host.Recorder{Host: h, Keep: s.rec.fact}
	}
	if cfg.Tier != "" {
		tier, err := policy.ParseTier(cfg.Tier)
		if err != nil {
			return nil, err
		}
		s.tier = tier
	}
	s.host = h
	s.checker = witness.NewChecker(witness.CheckOptions{
		Allow: cfg.Allow, Self: cfg.Self, InitialPIDNS: cfg.InitialPIDNS, Roots: cfg.Roots, Tracked: cfg.Tracked,
		Host: h, Ledger: &s.ledger, Now: func() time.Time { return s.now },
	})
	s.judge = judge.New(cfg.Allow, h)
	s.judge.Held, s.judge.Landlock = s.checker.HeldFile, cfg.Tier == "landlock"
	s.judge.Replaced = func(*tracer.Event, string) {
		s.ledger.Add("a truncate, a change of a file's times or a hard link followed a path whose symlink was replaced after the call, or that was gone when writewatch followed it: writewatch could not tell which file it changed")
	}
	s.groups = &Groups{Limit: cfg.MaxViolations}
	s.xreads.Limit = cfg.MaxViolations
	s.xreads.UsesFixture = func(runner, pkg, id, fixture string) bool { return s.tests.UsesFixture(runner, pkg, id, fixture) }
	s.sev = severity.New(cfg.Started, h)
	if cfg.Sandbox != nil {
		s.sev.Changed = s.sandboxChanged
		s.sandboxed = map[string]*Sandboxed{}
	}
	// Whether a rename replaced a file, when its record does not say: the
	// witness's queue may (witness.Checker.RenamedOnto).
	s.sev.Replaced = func(path string) (bool, bool) {
		if !s.cfg.Witness {
			return false, false
		}
		return s.checker.RenamedOnto(path)
	}
	return s, nil
}

// Watching says whether the filesystem witness watches, once it has
// started: its changes then come as items. Call it before the first
// item.
func (s *Session) Watching(active bool) { s.cfg.Witness = active }

// Repeated says whether the kernel's count of the repeats of the sent
// write k adds to a violation (End.Repeats need hold no others).
func (s *Session) Repeated(k tracer.RepeatKey) bool { return len(s.repeatOf[k]) > 0 }

// Checker is the session's account of the witness's changes, which the
// witness asks which processes' changes it wants (witness.WatchOptions).
func (s *Session) Checker() *witness.Checker { return s.checker }

// Handle takes one item into account. A record's slices may be views of
// buffers reused after Handle returns.
func (s *Session) Handle(it *Item) {
	s.now = it.Now
	if s.rec != nil {
		s.rec.item(it)
	}
	switch {
	case it.Record != nil:
		s.record(it.Record)
	case it.Change != nil:
		s.found(s.checker.Change(it.Change, it.Boot, it.Time))
	case it.Barrier != 0:
		s.checker.BarrierReached(it.Barrier)
		s.settled = s.settled || it.Barrier == witness.FinalBarrier
	case it.Tick:
		s.tick(it.Boot)
	case it.Launched != nil:
		s.launched(it.Launched)
	case it.GoBinary != nil:
		g := it.GoBinary
		s.tests.GoBinary(g.TGID, g.PID, g.Package, g.Followed, g.Problem, g.TestMain)
	case it.Incomplete != "":
		s.ledger.Add(it.Incomplete)
	case it.Sandboxed != nil && s.sandboxed != nil:
		c := *it.Sandboxed
		path := string(c.Path)
		if _, ok := s.sandboxed[path]; !ok {
			s.sandboxOrder = append(s.sandboxOrder, path)
		}
		s.sandboxed[path] = &c
	}
}

// Settled says the witness has handed over every change the kernel
// queued before the final barrier (witness.Watch.Finish).
func (s *Session) Settled() bool { return s.settled }

// Processes are the command lines of the processes the tree has had.
func (s *Session) Processes() [][]string {
	if s.tree == nil {
		return nil
	}
	return s.tree.Cmdlines()
}

// Tests are the tests seen, for the runner that reads their results
// (runners.GoJSON).
func (s *Session) Tests() *attribution.Tests { return s.tests }

// launched starts the tree with COMMAND.
func (s *Session) launched(l *Launched) {
	s.pid = l.PID
	if s.cfg.Witness {
		s.checker.Joined(0, l.PID)
	}
	s.tree = attribution.NewTree(l.PID, l.Launcher, s.cfg.Command)
	s.tests = attribution.NewTests(s.tree)
	s.tests.OnCurrent = func(running []string) { s.live.SetTest(status.Running(running)) }
	s.seen = s.tree.Seen()
	s.live.SetProcesses(s.seen)
}

// tick lets the witness's held changes go when they waited enough, and
// asks for the barrier that lets processes that left go (Barrier).
func (s *Session) tick(boot uint64) {
	if !s.cfg.Witness {
		return
	}
	s.found(s.checker.Caught(boot))
	s.found(s.checker.Expire(s.now))
	if id, ok := s.checker.Barrier(); ok {
		s.barrier, s.placeBarrier = id, true
	}
}

// Barrier is the barrier the last tick asked the witness to place, once:
// witness.Watch.PlaceBarrier places it.
func (s *Session) Barrier() (id uint64, ok bool) {
	id, ok = s.barrier, s.placeBarrier
	s.placeBarrier = false
	return id, ok
}
