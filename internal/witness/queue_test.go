package witness

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/writewatch/writewatch/tracer"
)

// The witness's events come out in the order they went in, stamped on
// the kernel's boot clock, each with its change; a barrier after them.
func TestQueueOrder(t *testing.T) {
	s := NewQueue()
	before := BootNow()
	s.Handle(Event{Pid: 7, Op: Delete, Path: "/p/a", Ino: 11})
	s.Handle(Event{Pid: 8, Op: Create | Modify, Path: "/p/b"})
	s.Barrier(3)
	var (
		st   Stamped
		last uint64
	)
	s.SetDeadline(time.Now())
	for i, want := range []string{"/p/a", "/p/b", ""} {
		if err := s.Next(&st); err != nil {
			t.Fatalf("event %d: %v", i, err)
		}
		if st.Boot < before || st.Boot < last || st.Wall.IsZero() {
			t.Errorf("event %d: stamp %d after %d", i, st.Boot, max(before, last))
		}
		last = st.Boot
		switch {
		case want == "" && (st.Change != nil || st.Barrier != 3):
			t.Errorf("event %d: want barrier 3, got barrier %d change %v", i, st.Barrier, st.Change)
		case want != "" && (st.Change == nil || st.Change.Path != want || st.Barrier != 0):
			t.Errorf("event %d: want %s, got %+v", i, want, st)
		}
	}
	if err := s.Next(&st); !errors.Is(err, tracer.ErrTimeout) {
		t.Errorf("empty: %v, want ErrTimeout", err)
	}
}

// Next waits until the deadline, or until Wake; an event handed over
// meanwhile ends the wait.
func TestQueueWaits(t *testing.T) {
	s := NewQueue()
	var ev Stamped
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
		s.Handle(Event{Pid: 1, Path: "/x"})
	}()
	if err := s.Next(&ev); err != nil || ev.Change.Path != "/x" {
		t.Errorf("handed over: %v", err)
	}
	// Woken with events waiting: they come first.
	s.Handle(Event{Pid: 1, Path: "/y"})
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
	s.Handle(Event{Pid: 1}) // dropped, not blocking
}

// Past maxQueued events, Handle waits for Next instead of holding more.
func TestQueueBounded(t *testing.T) {
	s := NewQueue()
	for range maxQueued {
		s.Handle(Event{Pid: 1})
	}
	var done atomic.Bool
	go func() {
		s.Handle(Event{Pid: 2})
		done.Store(true)
	}()
	time.Sleep(20 * time.Millisecond)
	if done.Load() {
		t.Fatal("Handle did not wait with the queue full")
	}
	var ev Stamped
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
