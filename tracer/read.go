package tracer

// Reading the ring buffer: one decoded record at a time.

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/cilium/ebpf/ringbuf"
	"golang.org/x/sys/unix"
)

// SetDeadline makes Next return ErrTimeout once t has passed and no record
// is waiting. A zero time waits forever.
func (t *Tracer) SetDeadline(d time.Time) { t.rd.SetDeadline(d) }

// Wake makes a Next that is waiting return ErrTimeout once the records
// already in the ring buffer are read. Records do not wake the reader one
// by one, so a caller that learns something (COMMAND exited, a signal)
// calls Wake instead of waiting for its deadline.
func (t *Tracer) Wake() error {
	if err := t.rd.Flush(); err != nil {
		return fmt.Errorf("wake reader: %w", err)
	}
	return nil
}

// Next reads the next record into ev. ev's byte slices point into a buffer
// reused by the following call.
func (t *Tracer) Next(ev *Event) error {
	if err := t.rd.ReadInto(&t.rec); err != nil {
		switch {
		case errors.Is(err, ringbuf.ErrClosed):
			return ErrClosed
		case errors.Is(err, os.ErrDeadlineExceeded), errors.Is(err, ringbuf.ErrFlushed):
			return ErrTimeout
		}
		return fmt.Errorf("read ring buffer: %w", err)
	}
	if err := ev.decode(t.rec.RawSample); err != nil {
		return err
	}
	if ev.Kind == KindContents && ev.Why == WhyIOURing {
		// Its process is paused until the io_uring program is attached:
		// the caller resumes it once it has this record.
		t.WaitURing()
	}
	ev.Time = time.Unix(0, int64(ev.BootNS)+t.offset)
	return nil
}

// bootOffset is the wall clock minus CLOCK_BOOTTIME, the kernel's clock
// for record timestamps.
func bootOffset() int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts); err != nil {
		return 0
	}
	return time.Now().UnixNano() - ts.Nano()
}
