package status

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/writewatch/writewatch/internal/live"
	"github.com/writewatch/writewatch/internal/tmuxtest"
)

// printed is the i-th line the helper prints: some wrap on a terminal of
// 80 columns, some (before the stop, whose "^Z" would split them) are
// written in two parts with a pause between, as pytest -v writes a
// test's name and then its outcome.
func printed(i int) (first, rest string) {
	switch {
	case i%7 == 0:
		return fmt.Sprintf("line %04d long %s", i, strings.Repeat("=", 70+i%30)), ""
	case i%5 == 0 && i <= partialsUpTo:
		return fmt.Sprintf("line %04d test_name_of_some_length ", i), "PASSED"
	}
	return fmt.Sprintf("line %04d", i), ""
}

const partialsUpTo = 100

// ticking is a Live whose event count moves on each snapshot, so that the
// line is redrawn at every tick.
type ticking struct{ n atomic.Uint64 }

func (l *ticking) Snapshot() live.Snapshot {
	return live.Snapshot{Started: time.Now().Add(-time.Second), Processes: 2, Events: l.n.Add(1), Test: "TestOnTerminal"}
}

// TestHelperOnTerminal is COMMAND and writewatch in one for
// TestStatusOnTerminal: it draws the line on stderr while it prints lines
// on stdout, the same terminal, until the file "stop" appears.
func TestHelperOnTerminal(t *testing.T) {
	if os.Getenv("WW_STATUS_HELPER") == "" {
		t.Skip("run by TestStatusOnTerminal, on a terminal")
	}
	st := Start(os.Stderr, new(ticking), Terminal(os.Stderr, true))
	for i := 1; i < 2000; i++ {
		first, rest := printed(i)
		if rest == "" {
			fmt.Println(first)
		} else {
			fmt.Print(first)
			time.Sleep(30 * time.Millisecond)
			fmt.Println(rest)
		}
		time.Sleep(15 * time.Millisecond)
		if _, err := os.Stat("stop"); err == nil {
			break
		}
	}
	st.Stop()
}

// On a real terminal (tmux), the line stays in the last row while the
// lines printed on the same terminal scroll above it, through a resize
// and a stop and continue (Ctrl-Z, fg); at the end every line printed is
// there whole, in the scrollback or on the screen, nothing of the status
// line is, and the shell's prompt comes on a clean row with the full
// scroll region.
func TestStatusOnTerminal(t *testing.T) {
	dir := t.TempDir()
	tm := tmuxtest.Start(t, 80, 24, dir, "TERM=screen")
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if raw := os.Getenv("WW_STATUS_RAW"); raw != "" {
		tm.Record(raw)
	}
	// Ctrl-Z would otherwise throw away the output the terminal has not
	// shown yet (the line discipline's flush on a signal character).
	tm.Run("stty noflsh; WW_STATUS_HELPER=1 " + self + " -test.run='^TestHelperOnTerminal$'")
	// The line in the last of rows, and line n printed.
	at := func(rows, n int) func([]string) bool {
		return func(screen []string) bool {
			if len(screen) != rows || !strings.HasPrefix(screen[rows-1], "writewatch 1s · 2 processes") {
				return false
			}
			for _, row := range screen {
				var i int
				if _, err := fmt.Sscanf(row, "line %d", &i); err == nil && i >= n {
					return true
				}
			}
			return false
		}
	}
	tm.WaitFor("the line in row 24", 30*time.Second, at(24, 30))
	checkScreen(t, tm.Screen(), 80)

	tm.Resize(60, 20)
	tm.WaitFor("the line in row 20", 10*time.Second, at(20, 60))
	checkScreen(t, tm.Screen(), 60)

	tm.WaitFor("the last of the lines in two parts", 10*time.Second, at(20, partialsUpTo+5))
	tm.Keys("C-z")
	tm.WaitFor("the job stopped", 10*time.Second, func(screen []string) bool {
		return strings.Contains(strings.Join(screen, "\n"), "Stopped") && tmuxtest.Prompted(screen)
	})
	if region := tm.Format("#{scroll_region_upper} #{scroll_region_lower}"); region != "0 19" {
		t.Errorf("stopped, the scroll region is %s, want 0 19 (all 20 rows)", region)
	}
	if screen := strings.Join(tm.Screen(), "\n"); strings.Contains(screen, "·") {
		t.Errorf("stopped, the status line is still on the screen:\n%s", screen)
	}
	tm.Run("fg")
	tm.WaitFor("the line back in row 20", 10*time.Second, at(20, partialsUpTo+40))
	checkScreen(t, tm.Screen(), 60)

	if err := os.WriteFile(filepath.Join(dir, "stop"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	tm.WaitFor("the prompt", 30*time.Second, tmuxtest.Prompted)
	checkEnd(t, tm)
}

// checkScreen checks that the status line is in the last row alone, fits
// it, and that every other row holds a line as printed, or part of one.
func checkScreen(t *testing.T, screen []string, cols int) {
	t.Helper()
	for i, row := range screen[:len(screen)-1] {
		if strings.Contains(row, "·") {
			t.Errorf("status text in row %d of %d:\n%s", i+1, len(screen), strings.Join(screen, "\n"))
		}
	}
	if n := len([]rune(screen[len(screen)-1])); n >= cols {
		t.Errorf("a status line of %d columns on %d", n, cols)
	}
}

// checkEnd checks the terminal after the helper has exited: every line
// it printed, in order and whole; no status text anywhere; the cursor
// after the prompt, in the full scroll region.
func checkEnd(t *testing.T, tm *tmuxtest.Session) {
	t.Helper()
	history := tm.History()
	all := strings.Join(history, "\n")
	if strings.Contains(all, "·") {
		t.Errorf("status text left on the terminal:\n%s", all)
	}
	next := 1
	for _, row := range history {
		// The terminal echoes Ctrl-Z where the cursor is; the program may
		// print a line more before it stops.
		row = strings.TrimPrefix(row, "^Z")
		if !strings.HasPrefix(row, "line ") {
			continue
		}
		first, rest := printed(next)
		if want := strings.TrimRight(first+rest, " "); row != want {
			t.Fatalf("row %q, want %q; the terminal:\n%s", row, want, all)
		}
		next++
	}
	if next <= partialsUpTo+40 {
		t.Errorf("only %d lines printed:\n%s", next-1, all)
	}
	last := len(history) - 1
	if history[last] != "$" {
		t.Errorf("the last row is %q, not the prompt", history[last])
	}
	rows := tm.Format("#{pane_height}")
	if got, want := tm.Format("#{cursor_x} #{scroll_region_upper} #{scroll_region_lower}"), "2 0 "+fmt.Sprint(atoi(rows)-1); got != want {
		t.Errorf("cursor column, scroll region: %s, want %s", got, want)
	}
}

func atoi(s string) int {
	var n int
	fmt.Sscan(s, &n)
	return n
}

// TestHelperSays is COMMAND and writewatch in one for TestSayOnTerminal:
// it prints a line in two parts, as pytest does a test's name and its
// outcome, and a kill's line comes between them; then another at the
// start of a row.
func TestHelperSays(t *testing.T) {
	if os.Getenv("WW_STATUS_HELPER") == "" {
		t.Skip("run by TestSayOnTerminal, on a terminal")
	}
	st := Start(os.Stderr, new(ticking), Terminal(os.Stderr, true))
	time.Sleep(3 * Interval)
	fmt.Print("test_a.py::test_save ")
	st.Say("writewatch: killed pid 1 (python3)")
	fmt.Println("line after")
	st.Say("writewatch: killed pid 2 (app.test)")
	fmt.Println("last line")
	time.Sleep(3 * Interval)
	st.Stop()
}

// A line writewatch says goes on a row of its own, where COMMAND's
// output goes, never after what COMMAND left on the cursor's row, never
// with an empty row before it, never in the status line's row.
func TestSayOnTerminal(t *testing.T) {
	dir := t.TempDir()
	tm := tmuxtest.Start(t, 80, 24, dir, "TERM=screen")
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	tm.Run("WW_STATUS_HELPER=1 " + self + " -test.run='^TestHelperSays$'")
	tm.WaitFor("the prompt", 30*time.Second, func(screen []string) bool {
		return strings.Contains(strings.Join(screen, "\n"), "last line") && tmuxtest.Prompted(screen)
	})
	history := tm.History()
	start := slices.IndexFunc(history, func(row string) bool { return strings.HasPrefix(row, "test_a.py") })
	if start < 0 {
		t.Fatalf("nothing printed:\n%s", strings.Join(history, "\n"))
	}
	want := []string{"test_a.py::test_save", "writewatch: killed pid 1 (python3)", "line after", "writewatch: killed pid 2 (app.test)", "last line", "PASS", "$"}
	if got := history[start:]; !slices.Equal(got, want) {
		t.Errorf("rows %q, want %q", got, want)
	}
}
