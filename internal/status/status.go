// Package status draws writewatch's live status line on a terminal while
// COMMAND runs: elapsed time, processes traced, write events, violations
// so far and, where known, the test running now.
//
// COMMAND writes to the same terminal (its stderr is writewatch's), so the
// line keeps out of its way as apt's progress bar does: the terminal's
// scroll region is set to all rows but the last, COMMAND's output scrolls
// above, and the line is drawn in the last row between a save and a
// restore of the cursor (term.go). It is redrawn at most ten times a
// second, only when its text changes, and taken down before the summary
// is printed: the last row erased, the full scroll region back, the
// cursor where COMMAND left it. Where that cannot be done safely
// (Supported), there is no line.
package status

import (
	"fmt"
	"io"
	"os"
	"os/signal"
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
	// Size returns the terminal's columns and rows; nil means 80 by 24.
	Size func() (cols, rows int)
	// Foreground reports whether this process may draw on the terminal
	// now (it is not a background job); nil means always.
	Foreground func() bool
	// Signals, when set, is notified of SIGWINCH, SIGTSTP and SIGCONT
	// from Start to Stop: a resize redraws the line at once, a stop takes
	// it down first. Tests may send on it.
	Signals chan os.Signal
	// Suspend stops this process after SIGTSTP took the line down; nil
	// means SIGSTOP to itself, what SIGTSTP would have done.
	Suspend func()
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
	w    io.Writer
	p    Live
	opt  Options
	stop chan struct{}
	done chan struct{}
	once sync.Once

	// shown: the last row is set apart and the line drawn there, on a
	// terminal of cols by rows.
	shown      bool
	cols, rows int
	last       string
}

// Start draws p's status line on w, a terminal that Supported accepts,
// until Stop. Nothing is drawn, and the scroll region is left alone,
// before the run has started.
func Start(w io.Writer, p Live, opt Options) *Status {
	s := newStatus(w, p, opt)
	if s.opt.Signals != nil {
		signal.Notify(s.opt.Signals, unix.SIGWINCH, unix.SIGTSTP, unix.SIGCONT)
	}
	go s.loop()
	return s
}

func newStatus(w io.Writer, p Live, opt Options) *Status {
	if opt.Size == nil {
		opt.Size = func() (int, int) { return 80, 24 }
	}
	if opt.Foreground == nil {
		opt.Foreground = func() bool { return true }
	}
	if opt.Suspend == nil {
		opt.Suspend = func() { unix.Kill(os.Getpid(), unix.SIGSTOP) }
	}
	if opt.Now == nil {
		opt.Now = time.Now
	}
	if opt.Interval <= 0 {
		opt.Interval = Interval
	}
	return &Status{w: w, p: p, opt: opt, stop: make(chan struct{}), done: make(chan struct{})}
}

func (s *Status) loop() {
	defer close(s.done)
	t := time.NewTicker(s.opt.Interval)
	defer t.Stop()
	for {
		s.update()
		select {
		case <-s.stop:
			return
		case sig := <-s.opt.Signals: // never, when nil
			s.signal(sig)
			if sig == unix.SIGTSTP && !s.continued() {
				return
			}
		case <-t.C:
		}
	}
}

// continued waits for SIGCONT after a stop, and reports false if Stop
// came first. The other threads of this process stop a moment after the
// one that sent SIGSTOP returns: nothing is drawn before the shell has
// continued the job.
func (s *Status) continued() bool {
	for {
		select {
		case <-s.stop:
			return false
		case sig := <-s.opt.Signals:
			if sig == unix.SIGCONT {
				return true
			}
		}
	}
}

// signal handles one of Options.Signals. SIGWINCH and SIGCONT need
// nothing more than the update that follows, which reads the size and
// whether this process is in the foreground anew.
func (s *Status) signal(sig os.Signal) {
	if sig != unix.SIGTSTP {
		return
	}
	// Stopped, the shell takes the terminal back: it gets it whole.
	s.takeDown()
	s.opt.Suspend()
}

// update sets the last row apart if it is not, draws the line there if
// its text changed, and takes it down if the terminal has become too
// small for it.
func (s *Status) update() {
	snap := s.p.Snapshot()
	if snap.Started.IsZero() || !s.opt.Foreground() {
		return
	}
	cols, rows := s.opt.Size()
	var out strings.Builder
	resized := s.shown && (cols != s.cols || rows != s.rows)
	if resized {
		// The terminal may have moved, rewrapped or dropped the old line,
		// and reset the scroll region: erase what is left of it and start
		// anew.
		out.WriteString(eraseBelow)
		s.shown = false
	}
	if rows < MinRows {
		if resized {
			out.WriteString(fullRegion)
		}
		s.write(out.String())
		return
	}
	if !s.shown {
		out.WriteString(reserve(rows))
		s.shown, s.cols, s.rows, s.last = true, cols, rows, ""
	}
	if line := Line(snap, s.opt.Now().Sub(snap.Started), cols, s.opt.Color); line != s.last {
		out.WriteString(draw(rows, line))
		s.last = line
	}
	s.write(out.String())
}

// Say writes text on the terminal as a line of its own, where
// COMMAND's output goes, above the status line: on a new row when
// COMMAND left the cursor inside one (freshRow). In one write, so that
// it lands between two of COMMAND's writes; safe to call from any
// goroutine.
func (s *Status) Say(text string) {
	cols, _ := s.opt.Size()
	s.write(freshRow(cols) + text + "\n")
}

// takeDown erases the line and gives the terminal its full scroll region
// back, the cursor where COMMAND left it.
func (s *Status) takeDown() {
	if !s.shown || !s.opt.Foreground() {
		return
	}
	if cols, rows := s.opt.Size(); cols != s.cols || rows != s.rows {
		s.write(eraseBelow + fullRegion)
	} else {
		s.write(release(s.rows))
	}
	s.shown = false
}

// write writes seq in one write, so that it lands between two of
// COMMAND's writes, never inside one.
func (s *Status) write(seq string) {
	if seq != "" {
		io.WriteString(s.w, seq)
	}
}

// Stop stops drawing and takes the line down. It returns once the line
// is gone; calling it again does nothing.
func (s *Status) Stop() {
	s.once.Do(func() {
		close(s.stop)
		<-s.done
		if s.opt.Signals != nil {
			signal.Stop(s.opt.Signals)
		}
		s.takeDown()
	})
}
