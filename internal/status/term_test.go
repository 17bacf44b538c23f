package status

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/writewatch/writewatch/internal/golden"
	"golang.org/x/sys/unix"
)

// screen is a terminal for the tests: its size and whether this process
// is in its foreground, as the test sets them.
type screen struct {
	cols, rows int
	foreground bool
}

func (sc *screen) options() Options {
	return Options{
		Size:       func() (int, int) { return sc.cols, sc.rows },
		Foreground: func() bool { return sc.foreground },
		Now:        func() time.Time { return start.Add(2 * time.Second) },
	}
}

// visible spells out the escape character.
func visible(s string) string {
	return strings.ReplaceAll(s, "\x1b", `\e`)
}

// What is written to the terminal, step by step, through a run: the
// escape sequences of the scroll region, the line, a resize, a stop and a
// continue, a background job, a terminal too small.
func TestSequencesGolden(t *testing.T) {
	var (
		l         fake
		out       syncBuffer
		sc        = &screen{cols: 80, rows: 24, foreground: true}
		suspended int
	)
	opt := sc.options()
	opt.Suspend = func() { suspended++ }
	s := newStatus(&out, &l, opt)
	var buf strings.Builder
	step := func(name string, do func()) {
		before := len(out.String())
		do()
		wrote := visible(out.String()[before:])
		if wrote == "" {
			wrote = "(nothing)"
		}
		fmt.Fprintf(&buf, "%s\n  %s\n", name, wrote)
	}
	step("before the run starts", s.update)
	l.set(snapshot(3, 10, 0, 0, ""))
	step("the first line", s.update)
	step("the same text again", s.update)
	l.set(snapshot(4, 12, 1, 0, "TestX"))
	step("new counts", s.update)
	sc.cols, sc.rows = 100, 30
	step("resized to 100x30 (SIGWINCH)", func() { s.signal(unix.SIGWINCH); s.update() })
	step("stopped (SIGTSTP)", func() { s.signal(unix.SIGTSTP) })
	if suspended != 1 {
		t.Errorf("SIGTSTP suspended %d times", suspended)
	}
	step("continued (SIGCONT)", func() { s.signal(unix.SIGCONT); s.update() })
	sc.foreground = false
	l.set(snapshot(5, 13, 1, 0, "TestY"))
	step("in the background", s.update)
	sc.foreground = true
	sc.cols, sc.rows = 80, 3
	step("resized to 80x3", s.update)
	step("still 80x3", s.update)
	sc.rows = 24
	step("resized to 80x24", s.update)
	step("taken down", s.takeDown)
	step("taken down again", s.takeDown)
	l.set(snapshot(5, 14, 1, 0, "TestY"))
	step("shown again", s.update)
	sc.rows = 25
	step("taken down after an unseen resize", s.takeDown)
	golden.Check(t, "sequences.txt", []byte(buf.String()))
}

// Signals reach the drawing goroutine: a resize redraws at once, in the
// new last row; a stop takes the line down before it suspends; Stop
// unregisters the channel.
func TestStatusSignals(t *testing.T) {
	var (
		l   fake
		out syncBuffer
		sc  = &screen{cols: 80, rows: 24, foreground: true}
	)
	l.set(snapshot(3, 10, 0, 0, ""))
	opt := sc.options()
	opt.Interval = time.Hour // only signals redraw
	opt.Signals = make(chan os.Signal, 1)
	suspended, resume := make(chan string, 1), make(chan struct{})
	opt.Suspend = func() { // stopped until the test continues it
		suspended <- out.String()
		<-resume
	}
	st := Start(&out, &l, opt)
	defer st.Stop()
	waitFor(t, &out, "3 processes")

	// The test's writes to sc race with nothing: the goroutine reads it
	// only after a signal, which the channel orders.
	sc.rows = 30
	opt.Signals <- unix.SIGWINCH
	waitFor(t, &out, draw(30, "writewatch 2s · 3 processes · 10 events · 0 violations"))

	opt.Signals <- unix.SIGTSTP
	var got string
	select {
	case got = <-suspended:
	case <-time.After(5 * time.Second):
		t.Fatal("SIGTSTP did not suspend")
	}
	if !strings.HasSuffix(got, release(30)) {
		t.Errorf("suspended before the line was taken down: %q", got)
	}
	before := len(got)
	close(resume)
	opt.Signals <- unix.SIGCONT
	for i := 0; !strings.Contains(out.String()[before:], restCursor); i++ {
		if i == 1000 {
			t.Fatalf("nothing drawn after SIGCONT: %q", out.String()[before:])
		}
		time.Sleep(5 * time.Millisecond)
	}
	time.Sleep(20 * time.Millisecond)
	if got, want := out.String()[before:], reserve(30)+draw(30, "writewatch 2s · 3 processes · 10 events · 0 violations"); got != want {
		t.Errorf("after SIGCONT:\n%q, want\n%q", got, want)
	}
}

func TestUnsupported(t *testing.T) {
	for _, c := range []struct {
		env  map[string]string
		want bool // supported
	}{
		{map[string]string{"TERM": "xterm-256color"}, true},
		{map[string]string{"TERM": "linux"}, true},
		{map[string]string{}, false},
		{map[string]string{"TERM": "dumb"}, false},
		{map[string]string{"TERM": "dumb-emacs-ansi"}, false},
		{map[string]string{"TERM": "unknown"}, false},
		{map[string]string{"TERM": "vt52"}, false},
		{map[string]string{"TERM": "xterm-256color", "LC_TERMINAL": "iTerm2"}, false},
		{map[string]string{"TERM": "xterm-256color", "TERM_PROGRAM": "iTerm.app"}, false},
		{map[string]string{"TERM": "xterm-256color", "WT_SESSION": "0c6b"}, false},
		// tmux keeps the lines whatever the terminal outside.
		{map[string]string{"TERM": "tmux-256color", "LC_TERMINAL": "iTerm2"}, true},
		{map[string]string{"TERM": "xterm-256color", "TMUX": "/tmp/tmux-0/default,1,0", "LC_TERMINAL": "iTerm2"}, true},
		{map[string]string{"TERM": "screen", "WT_SESSION": "0c6b"}, true},
	} {
		why := Unsupported(func(k string) string { return c.env[k] })
		if (why == "") != c.want {
			t.Errorf("%v: %q, want supported %v", c.env, why, c.want)
		}
	}
}
