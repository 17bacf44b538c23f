package stream

import (
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/writewatch/writewatch/internal/session"
	"github.com/writewatch/writewatch/internal/witness"
	"github.com/writewatch/writewatch/tracer"
)

// fake is a source fed through a channel, with a ring buffer's deadline
// and wake-up semantics: events already waiting come first.
type fake struct {
	ch   chan session.Item
	wake chan struct{}
	err  error

	mu       sync.Mutex
	deadline time.Time
}

func newFake(stamps ...uint64) *fake {
	f := &fake{ch: make(chan session.Item, 64), wake: make(chan struct{}, 1)}
	for _, ts := range stamps {
		f.ch <- session.Item{Boot: ts}
	}
	return f
}

func (f *fake) SetDeadline(t time.Time) {
	f.mu.Lock()
	f.deadline = t
	f.mu.Unlock()
}

func (f *fake) Wake() error {
	select {
	case f.wake <- struct{}{}:
	default:
	}
	return nil
}

func (f *fake) Next(ev *session.Item) error {
	if f.err != nil {
		return f.err
	}
	select {
	case *ev = <-f.ch:
		return nil
	default:
	}
	f.mu.Lock()
	d := f.deadline
	f.mu.Unlock()
	var expired <-chan time.Time
	if !d.IsZero() {
		t := time.NewTimer(time.Until(d))
		defer t.Stop()
		expired = t.C
	}
	select {
	case *ev = <-f.ch:
		return nil
	case <-expired:
	case <-f.wake:
	}
	return tracer.ErrTimeout
}

// read returns the stamps of the events the stream gives until it times
// out.
func read(t *testing.T, s *Stream) []uint64 {
	t.Helper()
	var (
		got []uint64
		ev  session.Item
	)
	s.SetDeadline(time.Now())
	for {
		err := s.Next(&ev)
		if errors.Is(err, tracer.ErrTimeout) {
			return got
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, ev.Boot)
	}
}

func TestMergedByTimestamp(t *testing.T) {
	s := New(newFake(1, 4, 5, 9), newFake(2, 3, 6), newFake(7, 8))
	got := read(t, s)
	want := []uint64{1, 2, 3, 4, 5, 6, 7, 8, 9}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("got %v, want %v", got, want)
		}
	}
}

func TestOneSourcePassesThrough(t *testing.T) {
	src := newFake(5, 3)
	got := read(t, New(src))
	if len(got) != 2 || got[0] != 5 || got[1] != 3 {
		t.Errorf("got %v: one source's events come as it gives them", got)
	}
}

// A stream whose sources are all empty waits for whichever delivers
// first.
func TestWaitsForAnySource(t *testing.T) {
	a, b := newFake(), newFake()
	s := New(a, b)
	s.SetDeadline(time.Now().Add(time.Minute))
	go func() {
		time.Sleep(10 * time.Millisecond)
		b.ch <- session.Item{Boot: 42}
	}()
	var ev session.Item
	if err := s.Next(&ev); err != nil || ev.Boot != 42 {
		t.Fatalf("Next: %v, event %d; want the event of the second source", err, ev.Boot)
	}
	// The first source was woken, and the stream reads on.
	a.ch <- session.Item{Boot: 50}
	if got := read(t, s); len(got) != 1 || got[0] != 50 {
		t.Errorf("then %v", got)
	}
}

func TestDeadlineAndWake(t *testing.T) {
	s := New(newFake(), newFake())
	s.SetDeadline(time.Now().Add(10 * time.Millisecond))
	var ev session.Item
	if err := s.Next(&ev); !errors.Is(err, tracer.ErrTimeout) {
		t.Errorf("past the deadline: %v", err)
	}
	s.SetDeadline(time.Time{})
	go func() {
		time.Sleep(10 * time.Millisecond)
		s.Wake()
	}()
	if err := s.Next(&ev); !errors.Is(err, tracer.ErrTimeout) {
		t.Errorf("woken: %v", err)
	}
	// A wake-up while no Next waits makes the next one return once
	// the events waiting are read.
	s.SetDeadline(time.Time{})
	s.srcs[0].(*fake).ch <- session.Item{Boot: 1}
	s.Wake()
	if err := s.Next(&ev); err != nil || ev.Boot != 1 {
		t.Errorf("after a wake-up, the event waiting: %v, %d", err, ev.Boot)
	}
	if err := s.Next(&ev); !errors.Is(err, tracer.ErrTimeout) {
		t.Errorf("after a wake-up, then: %v", err)
	}
}

func TestSourceErrorEndsTheStream(t *testing.T) {
	broken := newFake()
	broken.err = errors.New("ring buffer gone")
	s := New(newFake(1), broken)
	var ev session.Item
	if err := s.Next(&ev); err != broken.err {
		t.Errorf("Next: %v, want the source's error", err)
	}
}

// Merged with records, the witness's changes take their place by stamp:
// a record stamped before a change comes before it.
func TestWitnessInStream(t *testing.T) {
	q := witness.NewQueue()
	fork := witness.BootNow()
	q.Handle(witness.Event{Pid: 9, Path: "/p/a"})
	later := witness.BootNow() + uint64(time.Second)
	s := New(newFake(fork, later), &Witness{Queue: q})
	var it session.Item
	s.SetDeadline(time.Now())
	var kinds []string
	for s.Next(&it) == nil {
		if it.Change != nil {
			kinds = append(kinds, "change")
		} else {
			kinds = append(kinds, "record")
		}
	}
	if strings.Join(kinds, " ") != "record change record" {
		t.Errorf("%v: want record, change, record", kinds)
	}
}
