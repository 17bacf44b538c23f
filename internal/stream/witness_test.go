package stream

import (
	"errors"
	"github.com/writewatch/writewatch/internal/ops"
	"sync/atomic"
	"testing"
	"time"

	"github.com/writewatch/writewatch/tracer"
	"github.com/writewatch/writewatch/internal/witness"
)

// The witness's events come out in the order they went in, stamped on
// the kernel's boot clock, each with its change; a barrier after them.
func TestWitnessSourceOrder(t *testing.T) {
	s := NewWitnessSource()
	before := BootNow()
	s.Handle(witness.Event{Pid: 7, Op: witness.Delete, Path: "/p/a", Ino: 11})
	s.Handle(witness.Event{Pid: 8, Op: witness.Create | witness.Modify, Path: "/p/b"})
	s.Barrier(3)
	var (
		ev   tracer.Event
		last uint64
	)
	s.SetDeadline(time.Now())
	for i, want := range []string{"/p/a", "/p/b", ""} {
		if err := s.Next(&ev); err != nil {
			t.Fatalf("event %d: %v", i, err)
		}
		if ev.Kind != KindFilesystem || ev.BootNS < before || ev.BootNS < last || ev.Time.IsZero() {
			t.Errorf("event %d: kind %d, stamp %d after %d", i, ev.Kind, ev.BootNS, max(before, last))
		}
		last = ev.BootNS
		we := s.Event(&ev)
		switch {
		case want == "" && (we != nil || ev.Flags&FlagBarrier == 0 || ev.Test != 3):
			t.Errorf("event %d: want barrier 3, got flags %d test %d change %v", i, ev.Flags, ev.Test, we)
		case want != "" && (we == nil || we.Path != want || int32(ev.TGID) != we.Pid || ev.Op != ops.Op(we.Op)):
			t.Errorf("event %d: want %s, got %+v (%+v)", i, want, we, ev)
		}
	}
	if err := s.Next(&ev); !errors.Is(err, tracer.ErrTimeout) {
		t.Errorf("empty: %v, want ErrTimeout", err)
	}
}

// Next waits until the deadline, or until Wake; an event handed over
// meanwhile ends the wait.
func TestWitnessSourceWaits(t *testing.T) {
	s := NewWitnessSource()
	var ev tracer.Event
	start := time.Now()
	s.SetDeadline(start.Add(30 * time.Millisecond))
	if err := s.Next(&ev); !errors.Is(err, tracer.ErrTimeout) || time.Since(start) < 30*time.Millisecond {
		t.Errorf("deadline: %v after %v", err, time.Since(start))
	}
	s.SetDeadline(time.Time{})
	go func() {
		time.Sleep(10 * time.Millisecond)
		s.Wake()
	}()
	if err := s.Next(&ev); !errors.Is(err, tracer.ErrTimeout) {
		t.Errorf("woken: %v", err)
	}
	go func() {
		time.Sleep(10 * time.Millisecond)
		s.Handle(witness.Event{Pid: 1, Path: "/x"})
	}()
	if err := s.Next(&ev); err != nil || s.Event(&ev).Path != "/x" {
		t.Errorf("handed over: %v", err)
	}
	// Woken with events waiting: they come first.
	s.Handle(witness.Event{Pid: 1, Path: "/y"})
	s.Wake()
	if err := s.Next(&ev); err != nil {
		t.Errorf("waiting event after Wake: %v", err)
	}
	if err := s.Next(&ev); !errors.Is(err, tracer.ErrTimeout) {
		t.Errorf("after the waiting events: %v", err)
	}
	s.Close()
	if err := s.Next(&ev); !errors.Is(err, tracer.ErrClosed) {
		t.Errorf("closed: %v", err)
	}
	s.Handle(witness.Event{Pid: 1}) // dropped, not blocking
}

// Merged with records, the witness's events take their place by stamp:
// a record stamped before a change comes before it.
func TestWitnessSourceInStream(t *testing.T) {
	w := NewWitnessSource()
	fork := BootNow()
	w.Handle(witness.Event{Pid: 9, Path: "/p/a"})
	later := BootNow() + uint64(time.Second)
	tr := newFake(fork, later)
	s := New(tr, w)
	var ev tracer.Event
	s.SetDeadline(time.Now())
	var kinds []tracer.Kind
	for s.Next(&ev) == nil {
		kinds = append(kinds, ev.Kind)
	}
	if len(kinds) != 3 || kinds[0] == KindFilesystem || kinds[1] != KindFilesystem || kinds[2] == KindFilesystem {
		t.Errorf("kinds %v: want record, change, record", kinds)
	}
}

// Past maxQueued events, Handle waits for Next instead of holding more.
func TestWitnessSourceBounded(t *testing.T) {
	s := NewWitnessSource()
	for range maxQueued {
		s.Handle(witness.Event{Pid: 1})
	}
	var done atomic.Bool
	go func() {
		s.Handle(witness.Event{Pid: 2})
		done.Store(true)
	}()
	time.Sleep(20 * time.Millisecond)
	if done.Load() {
		t.Fatal("Handle did not wait with the queue full")
	}
	var ev tracer.Event
	s.SetDeadline(time.Now().Add(time.Second))
	if err := s.Next(&ev); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(5 * time.Second); !done.Load(); {
		if time.Now().After(deadline) {
			t.Fatal("Handle still waits after Next made room")
		}
		time.Sleep(time.Millisecond)
	}
}
