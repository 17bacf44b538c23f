package status

import (
	"bytes"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/writewatch/writewatch/internal/golden"

	"github.com/writewatch/writewatch/internal/live"
)

var start = time.Date(2026, 11, 30, 8, 46, 11, 0, time.UTC)

func snapshot(processes, events, groups, lost uint64, test string) live.Snapshot {
	s := live.Snapshot{Started: start, Processes: processes, Events: events, Test: test}
	open := live.OpIndex("open")
	s.Groups[open][0], s.Violations[open][0] = groups, groups*2
	s.Lost[0] = lost
	return s
}

var lineCases = []struct {
	name    string
	s       live.Snapshot
	elapsed time.Duration
	width   int
}{
	{"just started", snapshot(1, 0, 0, 0, ""), 0, 80},
	{"one of each", snapshot(1, 1, 1, 0, ""), 1500 * time.Millisecond, 80},
	{"busy", snapshot(214, 48213, 3, 0, ""), 75 * time.Second, 120},
	{"lost events", snapshot(9, 1000, 0, 17, ""), 3*time.Hour + 2*time.Minute + 1*time.Second, 120},
	{"test", snapshot(12, 345, 2, 0, "TestConfigIsWritten"), 9 * time.Second, 120},
	{"long test, narrow", snapshot(12, 345, 2, 0, "TestTable/case_with_a_very_long_name_that_goes_on/and_on"), 9 * time.Second, 80},
	{"no room for the test", snapshot(12, 345, 2, 0, "TestConfigIsWritten"), 9 * time.Second, 58},
	{"too narrow", snapshot(12, 345, 2, 3, ""), 9 * time.Second, 30},
}

func TestLineGolden(t *testing.T) {
	for _, color := range []bool{false, true} {
		var buf bytes.Buffer
		for _, c := range lineCases {
			line := Line(c.s, c.elapsed, c.width, color)
			if n := utf8.RuneCountInString(stripANSI(line)); n > c.width-1 {
				t.Errorf("%s: %d columns, terminal has %d", c.name, n, c.width)
			}
			if strings.ContainsAny(line, "\r\n") {
				t.Errorf("%s: line breaks in %q", c.name, line)
			}
			if has := strings.Contains(line, "\x1b["); has != color && c.width > 30 {
				t.Errorf("%s: ANSI escapes %v with color %v", c.name, has, color)
			}
			fmt.Fprintf(&buf, "%-22s|%s|\n", c.name, line)
		}
		name := "lines.txt"
		if color {
			name = "lines.color.txt"
		}
		golden.Check(t, name, buf.Bytes())
	}
}

func TestElapsed(t *testing.T) {
	for d, want := range map[time.Duration]string{
		0: "0s", 999 * time.Millisecond: "0s", 59 * time.Second: "59s", time.Minute: "1m00s",
		65 * time.Second: "1m05s", time.Hour: "1h00m00s", 25*time.Hour + 61*time.Second: "25h01m01s",
	} {
		if got := Elapsed(d); got != want {
			t.Errorf("Elapsed(%v) = %q, want %q", d, got, want)
		}
	}
}

// fake is a Live whose snapshot the test sets.
type fake struct{ s atomic.Pointer[live.Snapshot] }

func (l *fake) Snapshot() live.Snapshot {
	if s := l.s.Load(); s != nil {
		return *s
	}
	return live.Snapshot{}
}

func (l *fake) set(s live.Snapshot) { l.s.Store(&s) }

// syncBuffer is a bytes.Buffer safe for the drawing goroutine and the
// test.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// A run on a terminal of 24 rows: the last row set apart before the first
// draw, the line drawn there once per change, and the terminal given its
// full scroll region back at the end, nothing else written.
func TestStatusDrawsAndErases(t *testing.T) {
	var (
		l   fake
		out syncBuffer
	)
	now := start.Add(2 * time.Second)
	st := Start(&out, &l, Options{Interval: 5 * time.Millisecond, Now: func() time.Time { return now }})
	time.Sleep(30 * time.Millisecond)
	if out.String() != "" {
		t.Fatalf("drew before the run started: %q", out.String())
	}
	l.set(snapshot(3, 10, 0, 0, ""))
	waitFor(t, &out, "3 processes · 10 events · 0 violations")
	l.set(snapshot(4, 11, 1, 0, "TestX"))
	waitFor(t, &out, "running TestX")
	time.Sleep(50 * time.Millisecond) // several ticks with nothing new
	st.Stop()
	st.Stop() // a second Stop does nothing

	got := out.String()
	if !strings.HasPrefix(got, reserve(24)) || strings.Count(got, reserve(24)) != 1 {
		t.Errorf("the last row is not set apart once, first: %q", got)
	}
	if draws := draws(got, 24); draws != 2 {
		t.Errorf("%d draws, want 2 (one per change)\n%q", draws, got)
	}
	if !strings.HasSuffix(got, release(24)) {
		t.Errorf("the line is not taken down at the end: %q", got)
	}
	if strings.ContainsAny(got, "\r\n") {
		t.Errorf("the status line moved the cursor by writing: %q", got)
	}
	if strings.Contains(got, "\x1b[1m") {
		t.Errorf("colours without Color: %q", got)
	}
}

// Stop erases nothing when nothing was drawn.
func TestStatusStopBeforeStart(t *testing.T) {
	var out syncBuffer
	st := Start(&out, new(fake), Options{})
	st.Stop()
	if out.String() != "" {
		t.Errorf("wrote %q", out.String())
	}
}

// Redraws come at most once an Interval, however fast the counters move.
func TestStatusRedrawRate(t *testing.T) {
	var (
		l   fake
		out syncBuffer
	)
	l.set(snapshot(1, 0, 0, 0, ""))
	st := Start(&out, &l, Options{Now: func() time.Time { return start }})
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := uint64(1); ; i++ {
			select {
			case <-stop:
				return
			default:
				l.set(snapshot(1, i, 0, 0, ""))
			}
		}
	}()
	time.Sleep(550 * time.Millisecond)
	close(stop)
	<-done
	st.Stop()
	if draws := draws(out.String(), 24); draws > 7 || draws < 3 {
		t.Errorf("%d draws in 550ms at 10 a second", draws)
	}
}

// draws counts the lines drawn in row in out.
func draws(out string, row int) int {
	at := strings.TrimSuffix(draw(row, ""), restCursor)
	return strings.Count(out, at) - strings.Count(out, release(row))
}

func waitFor(t *testing.T, out *syncBuffer, want string) {
	t.Helper()
	for range 200 {
		if strings.Contains(out.String(), want) {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("never drew %q; got %q", want, out.String())
}

func TestRunning(t *testing.T) {
	for _, c := range []struct {
		in   []string
		want string
	}{{nil, ""}, {[]string{"TestA"}, "TestA"}, {[]string{"TestA", "TestB", "TestC"}, "TestA (+2 more)"}} {
		if got := Running(c.in); got != c.want {
			t.Errorf("Running(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
