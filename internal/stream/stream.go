// Package stream merges the sources of a run's items into the one
// stream the run hands to its session, ordered by kernel time.
//
// A source is anything that delivers session.Items stamped with the
// kernel's CLOCK_BOOTTIME (Item.Boot): the tracer's records (Tracer) are
// one, the filesystem witness's changes and barriers (Witness) another.
// Programs with a ring buffer of their own, or the metadata guard's
// refusals, would each be one more; a source that learns of an event in
// user space stamps it with CLOCK_BOOTTIME when it does.
package stream

import (
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/writewatch/writewatch/internal/session"
	"github.com/writewatch/writewatch/internal/witness"
	"github.com/writewatch/writewatch/tracer"
)

// Source is one producer of events.
type Source interface {
	// Next reads the source's next item into it. What it points to may
	// be the source's buffers until its next call to Next. Next
	// waits until the deadline, then returns tracer.ErrTimeout; it
	// returns tracer.ErrTimeout too once Wake was called and the events
	// waiting then were read. Other errors end the stream.
	Next(it *session.Item) error
	// SetDeadline bounds how long Next waits. A zero time waits forever;
	// a time passed reads only the events already waiting.
	SetDeadline(t time.Time)
	// Wake makes a Next that is waiting return tracer.ErrTimeout. It may
	// be called from any goroutine.
	Wake() error
}

// Stream reads several sources as one: each call to Next returns the
// earliest of the events waiting at each source, so the events of one
// source keep their order and those of different sources come in the
// order of their timestamps. An event that reaches its source after a
// later event of another source was returned comes late; sources deliver
// within microseconds of their timestamp.
//
// A Stream is itself a Source. Next and SetDeadline are for one
// goroutine; Wake is for any.
type Stream struct {
	srcs     []Source
	heads    []session.Item // the next item of each source, where has
	has      []bool
	deadline time.Time
	woken    atomic.Bool
}

// New merges the sources, of which there is at least one.
func New(srcs ...Source) *Stream {
	return &Stream{srcs: srcs, heads: make([]session.Item, len(srcs)), has: make([]bool, len(srcs))}
}

// SetDeadline bounds how long Next waits (see Source).
func (s *Stream) SetDeadline(t time.Time) {
	if len(s.srcs) == 1 {
		s.srcs[0].SetDeadline(t)
		return
	}
	s.deadline = t
}

// Wake makes a Next that is waiting return tracer.ErrTimeout.
func (s *Stream) Wake() error {
	s.woken.Store(true)
	var errs []error
	for _, src := range s.srcs {
		errs = append(errs, src.Wake())
	}
	return errors.Join(errs...)
}

// Next reads the next item of the stream into it (see Source).
func (s *Stream) Next(it *session.Item) error {
	if len(s.srcs) == 1 {
		return s.srcs[0].Next(it)
	}
	if err := s.poll(); err != nil {
		return err
	}
	i := s.earliest()
	if i < 0 {
		if s.woken.Swap(false) {
			return tracer.ErrTimeout
		}
		if err := s.wait(); err != nil {
			return err
		}
		i = s.earliest()
	}
	*it = s.heads[i]
	s.has[i] = false
	return nil
}

// poll reads the event waiting at each source that has none read yet,
// without waiting.
func (s *Stream) poll() error {
	past := time.Unix(0, 1)
	for i, src := range s.srcs {
		if s.has[i] {
			continue
		}
		src.SetDeadline(past)
		if err := s.read(i); err != nil {
			return err
		}
	}
	return nil
}

// wait waits, until the deadline, for any source to deliver an event;
// then the others are woken, and each keeps the event it read, if any.
func (s *Stream) wait() error {
	errs := make([]error, len(s.srcs))
	var (
		first sync.Once
		wg    sync.WaitGroup
	)
	for i, src := range s.srcs {
		src.SetDeadline(s.deadline)
		wg.Go(func() {
			errs[i] = s.read(i)
			first.Do(func() {
				for j, other := range s.srcs {
					if j != i {
						other.Wake()
					}
				}
			})
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if s.earliest() < 0 {
		return tracer.ErrTimeout
	}
	return nil
}

// read reads source i's next event into its head; a timeout is no error.
func (s *Stream) read(i int) error {
	err := s.srcs[i].Next(&s.heads[i])
	switch {
	case err == nil:
		s.has[i] = true
	case errors.Is(err, tracer.ErrTimeout):
	default:
		return err
	}
	return nil
}

// earliest is the source whose head has the smallest timestamp, or -1
// when no source has one.
func (s *Stream) earliest() int {
	best := -1
	for i := range s.srcs {
		if s.has[i] && (best < 0 || s.heads[i].Boot < s.heads[best].Boot) {
			best = i
		}
	}
	return best
}

// Tracer is the tracer's records as a Source.
type Tracer struct {
	*tracer.Tracer
	ev tracer.Event
}

// Next reads the next record: it.Record is valid until the next call.
func (t *Tracer) Next(it *session.Item) error {
	if err := t.Tracer.Next(&t.ev); err != nil {
		return err
	}
	*it = session.Item{Boot: t.ev.BootNS, Record: &t.ev}
	return nil
}

// Witness is the filesystem witness's changes and barriers as a Source.
type Witness struct {
	*witness.Queue
	st witness.Stamped
}

// Next reads the next change or barrier.
func (w *Witness) Next(it *session.Item) error {
	if err := w.Queue.Next(&w.st); err != nil {
		return err
	}
	*it = session.Item{Boot: w.st.Boot, Time: w.st.Wall, Change: w.st.Change, Barrier: w.st.Barrier}
	return nil
}
