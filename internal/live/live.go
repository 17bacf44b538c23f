// Package live holds a run's live counters: the run's event loop updates
// them, and the metrics endpoint and the status line read them while the
// run lasts.
package live

import (
	"sync/atomic"
	"time"

	"github.com/writewatch/writewatch/internal/ops"
	"github.com/writewatch/writewatch/report"
)

// WitnessOps are the operations only the filesystem witness names: a
// change no system call record explains.
var WitnessOps = [...]string{report.OpCreate, report.OpWrite, report.OpAttrib}

// Ops lists every Violation.Op: the table of operations' (ops.Names), in
// its order, then WitnessOps. The index of an op in Ops is its index in
// Snapshot.Violations and Snapshot.Groups.
var Ops = func() (all [ops.Count + len(WitnessOps)]string) {
	names := ops.Names()
	n := copy(all[:], names[:])
	copy(all[n:], WitnessOps[:])
	return all
}()

// Actions lists every Violation.Action, in a fixed order: the index of an
// action in Actions is its second index in Snapshot.Violations and
// Snapshot.Groups.
var Actions = [...]string{report.ActionReported, report.ActionBlocked, report.ActionKilled, report.ActionBlockedKilled}

// LostCauses lists the causes of lost events (the keys of Report.Lost), in
// a fixed order: the index of a cause is its index in Snapshot.Lost.
var LostCauses = [...]string{report.LostRingbufFull, report.LostProcMapFull}

// OpIndex returns the index of op in Ops, or -1.
func OpIndex(op string) int {
	for i, o := range Ops {
		if o == op {
			return i
		}
	}
	return -1
}

// ActionIndex returns the index of action in Actions, or -1.
func ActionIndex(action string) int {
	for i, a := range Actions {
		if a == action {
			return i
		}
	}
	return -1
}

// Counters holds the live counters of a run. The run's event loop updates
// them with single atomic operations, and any goroutine may read them at
// any time with Snapshot: the metrics endpoint and the status line do.
// The zero value is ready to use; a Counters serves one run.
type Counters struct {
	started    atomic.Int64 // unix ns; 0 until COMMAND starts
	processes  atomic.Uint64
	events     atomic.Uint64 // write records examined in user space
	inKernel   atomic.Uint64 // write events settled in the kernel
	truncated  atomic.Uint64
	lost       [len(LostCauses)]atomic.Uint64
	violations [len(Ops)][len(Actions)]atomic.Uint64
	groups     [len(Ops)][len(Actions)]atomic.Uint64
	test       atomic.Pointer[string]
}

// Snapshot is a copy of the Counters at one moment. Each field is read
// atomically; together they may be a few events apart.
type Snapshot struct {
	// Started is when COMMAND started; zero before.
	Started time.Time
	// Processes is how many processes the tree has had so far.
	Processes uint64
	// Events is the number of write events examined so far, as the
	// report counts them: those sent to user space, and those the kernel
	// settled itself (allowed, or repeats), as of its last reading.
	Events uint64
	// Truncated counts paths cut to fit the kernel buffers.
	Truncated uint64
	// Lost counts events lost, by cause (indexed like LostCauses). The
	// kernel's counters are read every second or so while the run lasts.
	Lost [len(LostCauses)]uint64
	// Violations counts writes outside the allowlist, every occurrence,
	// by op and action (indexed like Ops and Actions). Repeats that the
	// kernel counts itself are added only when the run ends, in the
	// report.
	Violations [len(Ops)][len(Actions)]uint64
	// Groups counts the violation groups of the report (distinct op,
	// path and role), by op and action.
	Groups [len(Ops)][len(Actions)]uint64
	// Test is the test running now, where the per-test attribution knows
	// it; "" otherwise.
	Test string
}

// Snapshot reads the counters.
func (c *Counters) Snapshot() Snapshot {
	var s Snapshot
	if ns := c.started.Load(); ns != 0 {
		s.Started = time.Unix(0, ns)
	}
	s.Processes = c.processes.Load()
	s.Events = c.events.Load() + c.inKernel.Load()
	s.Truncated = c.truncated.Load()
	for i := range c.lost {
		s.Lost[i] = c.lost[i].Load()
	}
	for i := range c.violations {
		for j := range c.violations[i] {
			// Groups first: the loop counts a violation before its
			// group, so a snapshot never has more groups than violations.
			s.Groups[i][j] = c.groups[i][j].Load()
			s.Violations[i][j] = c.violations[i][j].Load()
		}
	}
	if t := c.test.Load(); t != nil {
		s.Test = *t
	}
	return s
}

// SetTest names the test running now ("" for none). It is the hook for
// the per-test attribution: the status line shows the name while it is
// set. Call it when the test changes, not for every event.
func (c *Counters) SetTest(name string) {
	if name == "" {
		c.test.Store(nil)
		return
	}
	c.test.Store(&name)
}

// TotalGroups is the number of violation groups so far, the number the
// summary's header gives as "writes outside the allowlist".
func (s *Snapshot) TotalGroups() uint64 {
	var n uint64
	for i := range s.Groups {
		for _, v := range s.Groups[i] {
			n += v
		}
	}
	return n
}

// TotalLost is the number of events lost so far.
func (s *Snapshot) TotalLost() uint64 {
	var n uint64
	for _, v := range s.Lost {
		n += v
	}
	return n
}

// Start records when COMMAND started.
func (c *Counters) Start(t time.Time) { c.started.Store(t.UnixNano()) }

// SetProcesses records how many processes the tree has had so far.
func (c *Counters) SetProcesses(n int) { c.processes.Store(uint64(n)) }

// AddEvent counts one write record examined in user space.
func (c *Counters) AddEvent() { c.events.Add(1) }

// Violation counts one write outside the allowlist; group tells whether
// it opened a new violation group.
func (c *Counters) Violation(op, action string, group bool) {
	i, j := OpIndex(op), ActionIndex(action)
	if i < 0 || j < 0 {
		return
	}
	c.violations[i][j].Add(1)
	if group {
		c.groups[i][j].Add(1)
	}
}

// Kernel are the counters the kernel keeps, as read from it.
type Kernel struct {
	// Lost counts events lost, by cause (indexed like LostCauses).
	Lost [len(LostCauses)]uint64
	// Truncated counts paths cut to fit the kernel buffers.
	Truncated uint64
	// Settled counts write events the kernel settled itself: allowed
	// by the marks, or repeats of a write already sent.
	Settled uint64
}

// SetKernel stores the kernel's counters.
func (c *Counters) SetKernel(k Kernel) {
	for i := range k.Lost {
		c.lost[i].Store(k.Lost[i])
	}
	c.truncated.Store(k.Truncated)
	c.inKernel.Store(k.Settled)
}
