package stream

import (
	"github.com/writewatch/writewatch/internal/ops"
	"sync"
	"sync/atomic"
	"time"

	"github.com/writewatch/writewatch/tracer"
	"github.com/writewatch/writewatch/internal/witness"
	"golang.org/x/sys/unix"
)

// KindFilesystem is the Kind of the events a WitnessSource delivers: a
// change the filesystem witness saw, or one of its barriers. No kernel
// record has this kind.
const KindFilesystem = tracer.Kind(0x10000)

// FlagBarrier, in a KindFilesystem event's Flags, marks a barrier
// (WitnessSource.Barrier) rather than a change; its Test field holds the
// barrier's id.
const FlagBarrier = 1

// maxQueued bounds the events a WitnessSource holds for the stream:
// past it, the witness's reader waits, and the kernel queues the events
// instead (they are not lost).
const maxQueued = 1 << 16

// WitnessSource turns the filesystem witness's events into a Source, so
// that they and the tracer's records form one stream ordered by kernel
// time. The witness names no time: an event is stamped with
// CLOCK_BOOTTIME when the witness hands it over, which is after the
// kernel queued it, in the changing process's system call, and so after
// the fork record of that process, which the tracer sends before the
// process runs. The stream therefore returns a process's fork before
// any change of it the witness saw.
//
// Set Handle as the witness's Options.Handle. Event gives the
// witness.Event behind a KindFilesystem event.
type WitnessSource struct {
	mu       sync.Mutex
	space    *sync.Cond // signalled when the queue shrinks or closes
	queue    []witnessItem
	head     int
	deadline time.Time
	closed   bool
	notify   chan struct{} // one pending wake-up of Next
	woken    atomic.Bool
	seq      uint64
	// cur holds the last events Next handed out, by sequence number: the
	// stream keeps at most one of them while the caller handles another.
	cur [2]witnessItem
}

type witnessItem struct {
	seq     uint64
	boot    uint64
	wall    time.Time
	barrier uint64
	ev      witness.Event
}

// NewWitnessSource returns an empty source.
func NewWitnessSource() *WitnessSource {
	s := &WitnessSource{notify: make(chan struct{}, 1)}
	s.space = sync.NewCond(&s.mu)
	return s
}

// Handle queues one event of the witness, stamped now. It waits while
// the source holds maxQueued events.
func (s *WitnessSource) Handle(ev witness.Event) {
	s.push(witnessItem{ev: ev})
}

// Barrier queues barrier id behind every event handed to Handle so far:
// when Next returns it, the stream has returned every one of them. With
// witness.Sync, it tells when the stream has returned every change the
// kernel queued before Sync was called.
func (s *WitnessSource) Barrier(id uint64) {
	s.push(witnessItem{barrier: id})
}

func (s *WitnessSource) push(it witnessItem) {
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

func (s *WitnessSource) signal() {
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
func (s *WitnessSource) SetDeadline(t time.Time) {
	s.mu.Lock()
	s.deadline = t
	s.mu.Unlock()
}

// Wake makes a Next that is waiting return tracer.ErrTimeout once the
// events already queued are read.
func (s *WitnessSource) Wake() error {
	s.woken.Store(true)
	s.signal()
	return nil
}

// Close ends the source: Next returns tracer.ErrClosed once the queue
// is empty, and Handle drops what it is given.
func (s *WitnessSource) Close() {
	s.mu.Lock()
	s.closed = true
	s.space.Broadcast()
	s.mu.Unlock()
	s.signal()
}

// Next reads the next event into ev (see Source): Kind KindFilesystem,
// BootNS and Time its stamp, TGID and NSTGID the acting process as the
// witness numbers it, Op the witness's ops, Ino the object's inode, and
// Goid a number for Event.
func (s *WitnessSource) Next(ev *tracer.Event) error {
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
			s.cur[it.seq%2] = it
			s.mu.Unlock()
			fill(ev, &it)
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
func (s *WitnessSource) wait(deadline time.Time) bool {
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

func fill(ev *tracer.Event, it *witnessItem) {
	*ev = tracer.Event{Kind: KindFilesystem, BootNS: it.boot, Time: it.wall, Goid: it.seq}
	if it.barrier != 0 {
		ev.Flags, ev.Test = FlagBarrier, it.barrier
		return
	}
	pid := uint32(max(it.ev.Pid, 0))
	ev.TGID, ev.NSTGID, ev.Op, ev.Ino = pid, pid, ops.Op(it.ev.Op), it.ev.Ino
}

// Event returns the change behind a KindFilesystem event that Next
// returned, nil for a barrier or an event no longer held: it is valid
// until Next is called twice more.
func (s *WitnessSource) Event(ev *tracer.Event) *witness.Event {
	if ev.Kind != KindFilesystem || ev.Flags&FlagBarrier != 0 {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	it := &s.cur[ev.Goid%2]
	if it.seq != ev.Goid {
		return nil
	}
	return &it.ev
}
