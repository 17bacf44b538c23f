// Package status draws writewatch's live status line on a terminal while
// COMMAND runs: elapsed time, processes traced, write events, violations
// so far and, where known, the test running now.
//
// The line is redrawn in place ("\r", then erase to the end of the line)
// at most ten times a second, and only when its text changes. It goes to
// stderr only and is erased before the summary is printed. COMMAND's own
// output to the same terminal may still land beside it: nothing tells
// when COMMAND is about to write.
package status

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/writewatch/writewatch/internal/live"
	"golang.org/x/sys/unix"
)

// Interval is the least time between two redraws.
const Interval = 100 * time.Millisecond

const (
	clearLine  = "\r\x1b[K"
	ansiBold   = "\x1b[1m"
	ansiRed    = "\x1b[31m"
	ansiYellow = "\x1b[33m"
	ansiDim    = "\x1b[2m"
	ansiReset  = "\x1b[0m"
)

// Line renders the status line for s, elapsed into the run, in at most
// width-1 columns (the last column would wrap on some terminals), with
// ANSI colours when color is set. The test name is shortened first when
// the line is too long.
func Line(s live.Snapshot, elapsed time.Duration, width int, color bool) string {
	paint := func(code, text string) string {
		if !color {
			return text
		}
		return code + text + ansiReset
	}
	parts := []string{
		paint(ansiBold, "writewatch") + " " + Elapsed(elapsed),
		plural(s.Processes, "process", "processes"),
		plural(s.Events, "event", "events"),
	}
	v := plural(s.TotalGroups(), "violation", "violations")
	if s.TotalGroups() > 0 {
		v = paint(ansiRed+ansiBold, v)
	}
	parts = append(parts, v)
	if lost := s.TotalLost(); lost > 0 {
		parts = append(parts, paint(ansiYellow, strconv.FormatUint(lost, 10)+" lost"))
	}
	sep := " · "
	if color {
		sep = paint(ansiDim, sep)
	}
	line := strings.Join(parts, sep)
	const sepLen, minTest = 3, 8 // " · ", and the least of a test name worth showing
	if room := width - 1 - visibleLen(line) - sepLen - len("running "); s.Test != "" && room >= minTest {
		line += sep + "running " + shorten(s.Test, room)
	}
	if width > 1 && visibleLen(line) > width-1 {
		// Too narrow even without the test: plain text, cut.
		line = cut(stripANSI(line), width-1)
	}
	return line
}

// Running names the tests running now for the line: the first, and how
// many more.
func Running(running []string) string {
	switch len(running) {
	case 0:
		return ""
	case 1:
		return running[0]
	}
	return fmt.Sprintf("%s (+%d more)", running[0], len(running)-1)
}

// Elapsed formats d as 9s, 1m05s or 2h03m04s.
func Elapsed(d time.Duration) string {
	sec := int64(d / time.Second)
	switch {
	case sec < 60:
		return fmt.Sprintf("%ds", sec)
	case sec < 3600:
		return fmt.Sprintf("%dm%02ds", sec/60, sec%60)
	}
	return fmt.Sprintf("%dh%02dm%02ds", sec/3600, sec/60%60, sec%60)
}

func plural(n uint64, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.FormatUint(n, 10) + " " + many
}

// shorten cuts s to n runes, ending with "…" when cut. Test names are
// most telling at their end (the subtest), so the start goes.
func shorten(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return "…" + string(r[len(r)-(n-1):])
}

func cut(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

func visibleLen(s string) int {
	return utf8.RuneCountInString(stripANSI(s))
}

func stripANSI(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == 0x1b && i+1 < len(s) && s[i+1] == '[' {
			j := i + 2
			for j < len(s) && (s[j] < 0x40 || s[j] > 0x7e) {
				j++
			}
			i = j
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// Options tune a Status.
type Options struct {
	// Color enables ANSI colours (not with NO_COLOR).
	Color bool
	// Width returns the terminal's width in columns; nil means 80.
	Width func() int
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Interval is the least time between redraws; 0 means Interval.
	Interval time.Duration
}

// Live gives a run's live counters: *live.Counters does.
type Live interface {
	Snapshot() live.Snapshot
}

// Status draws the line for one run until Stop.
type Status struct {
	w     io.Writer
	p     Live
	opt   Options
	stop  chan struct{}
	done  chan struct{}
	once  sync.Once
	drawn bool
	last  string
}

// Start draws p's status line on w, which should be a terminal, until
// Stop. Nothing is drawn before the run has started.
func Start(w io.Writer, p Live, opt Options) *Status {
	if opt.Width == nil {
		opt.Width = func() int { return 80 }
	}
	if opt.Now == nil {
		opt.Now = time.Now
	}
	if opt.Interval <= 0 {
		opt.Interval = Interval
	}
	s := &Status{w: w, p: p, opt: opt, stop: make(chan struct{}), done: make(chan struct{})}
	go s.loop()
	return s
}

func (s *Status) loop() {
	defer close(s.done)
	t := time.NewTicker(s.opt.Interval)
	defer t.Stop()
	for {
		s.draw()
		select {
		case <-s.stop:
			return
		case <-t.C:
		}
	}
}

func (s *Status) draw() {
	snap := s.p.Snapshot()
	if snap.Started.IsZero() {
		return
	}
	line := Line(snap, s.opt.Now().Sub(snap.Started), s.opt.Width(), s.opt.Color)
	if line == s.last {
		return
	}
	s.last, s.drawn = line, true
	io.WriteString(s.w, clearLine+line)
}

// Stop stops drawing and erases the line. It returns once the line is
// gone; calling it again does nothing.
func (s *Status) Stop() {
	s.once.Do(func() {
		close(s.stop)
		<-s.done
		if s.drawn {
			io.WriteString(s.w, clearLine)
		}
	})
}

// IsTerminal reports whether f is a terminal.
func IsTerminal(f *os.File) bool {
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}

// Width returns a function reading f's width in columns, 80 when it
// cannot be read.
func Width(f *os.File) func() int {
	return func() int {
		ws, err := unix.IoctlGetWinsize(int(f.Fd()), unix.TIOCGWINSZ)
		if err != nil || ws.Col == 0 {
			return 80
		}
		return int(ws.Col)
	}
}
