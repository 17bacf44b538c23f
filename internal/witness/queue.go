package witness

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/writewatch/writewatch/tracer"
	"golang.org/x/sys/unix"
)

// maxQueued bounds the events a Queue holds for the stream:
// past it, the witness's reader waits, and the kernel queues the events
// instead (they are not lost).
const maxQueued = 1 << 16

// Queue queues the witness's changes, and its barriers, for the run's
// stream, where they and the tracer's records are read in the order of
// their kernel time. The witness names no time: a change is stamped with
// CLOCK_BOOTTIME when the witness hands it over, which is after the
// kernel queued it, in the changing process's system call, and so after
// the fork record of that process, which the tracer sends before the
// process runs. The stream therefore returns a process's fork before
// any change of it the witness saw.
//
// Set Handle as the witness's Options.Handle.
type Queue struct {
	mu       sync.Mutex
	space    *sync.Cond // signalled when the queue shrinks or closes
	queue    []witnessItem
	head     int
	deadline time.Time
	closed   bool
	notify   chan struct{} // one pending wake-up of Next
	woken    atomic.Bool
	seq      uint64
	// cur holds the last changes Next handed out, by sequence number:
	// the stream keeps at most one of them while the caller handles
	// another.
	cur [2]witnessItem
}

type witnessItem struct {
	seq     uint64
	boot    uint64
	wall    time.Time
	barrier uint64
	ev      Event
}

// NewQueue returns an empty source.
func NewQueue() *Queue {
	s := &Queue{notify: make(chan struct{}, 1)}
	s.space = sync.NewCond(&s.mu)
	return s
}

// Handle queues one event of the witness, stamped now. It waits while
// the source holds maxQueued events.
func (s *Queue) Handle(ev Event) {
	s.push(witnessItem{ev: ev})
}

// Barrier queues barrier id behind every event handed to Handle so far:
// when Next returns it, the stream has returned every one of them. With
// Sync, it tells when the stream has returned every change the
// kernel queued before Sync was called.
func (s *Queue) Barrier(id uint64) {
	s.push(witnessItem{barrier: id})
}

func (s *Queue) push(it witnessItem) {
	it.boot, it.wall = BootNow(), time.Now()
	s.mu.Lock()
	for len(s.queue)-s.head >= maxQueued && !s.closed {
		s.space.Wait()
	}
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.seq++
	it.seq = s.seq
	s.queue = append(s.queue, it)
	s.mu.Unlock()
	s.signal()
}

func (s *Queue) signal() {
	select {
	case s.notify <- struct{}{}:
	default:
	}
}

// BootNow is CLOCK_BOOTTIME, the clock of the kernel's record stamps,
// in nanoseconds.
func BootNow() uint64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts); err != nil {
		return 0
	}
	return uint64(ts.Nano())
}

// SetDeadline bounds how long Next waits (see Source).
func (s *Queue) SetDeadline(t time.Time) {
	s.mu.Lock()
	s.deadline = t
	s.mu.Unlock()
}

// Wake makes a Next that is waiting return tracer.ErrTimeout once the
// events already queued are read.
func (s *Queue) Wake() error {
	s.woken.Store(true)
	s.signal()
	return nil
}

// Close ends the source: Next returns tracer.ErrClosed once the queue
// is empty, and Handle drops what it is given.
func (s *Queue) Close() {
	s.mu.Lock()
	s.closed = true
	s.space.Broadcast()
	s.mu.Unlock()
	s.signal()
}

// Stamped is a change, or a barrier, as the Queue hands it over.
type Stamped struct {
	// Boot is its stamp on the kernel's boot clock (the records' clock),
	// Wall on the wall clock.
	Boot uint64
	Wall time.Time
	// Change is the change, valid until Next is called twice more; nil
	// for a barrier.
	Change *Event
	// Barrier is a barrier's id (Barrier, FinalBarrier).
	Barrier uint64
}

// Next reads the next change or barrier into st. It waits until the
// deadline, then returns tracer.ErrTimeout; it returns tracer.ErrTimeout
// too once Wake was called and what was waiting then was read; and
// tracer.ErrClosed once the source is closed and empty.
func (s *Queue) Next(st *Stamped) error {
	for {
		s.mu.Lock()
		if s.head < len(s.queue) {
			it := s.queue[s.head]
			s.queue[s.head] = witnessItem{}
			s.head++
			if s.head == len(s.queue) || s.head > maxQueued {
				s.queue = append(s.queue[:0], s.queue[s.head:]...)
				s.head = 0
			}
			s.space.Signal()
			cur := &s.cur[it.seq%2]
			*cur = it
			s.mu.Unlock()
			*st = Stamped{Boot: it.boot, Wall: it.wall, Barrier: it.barrier}
			if it.barrier == 0 {
				st.Change = &cur.ev
			}
			return nil
		}
		closed, deadline := s.closed, s.deadline
		s.mu.Unlock()
		switch {
		case s.woken.Swap(false):
			return tracer.ErrTimeout
		case closed:
			return tracer.ErrClosed
		}
		if !s.wait(deadline) {
			return tracer.ErrTimeout
		}
	}
}

// wait waits for a wake-up until the deadline (zero: none) and reports
// whether one came first.
func (s *Queue) wait(deadline time.Time) bool {
	if deadline.IsZero() {
		<-s.notify
		return true
	}
	d := time.Until(deadline)
	if d <= 0 {
		return false
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-s.notify:
		return true
	case <-t.C:
		return false
	}
}
