package integration

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/writewatch/writewatch/internal/tmuxtest"
)

// slowLine is the i-th line testdata/slowlines prints.
func slowLine(i int) string {
	switch {
	case i%7 == 0:
		return fmt.Sprintf("slow %02d %s", i, strings.Repeat("=", 90))
	case i%5 == 0:
		return fmt.Sprintf("slow %02d test_name_of_some_length PASSED", i)
	}
	return fmt.Sprintf("slow %02d", i)
}

// On a real terminal (tmux, 80 by 24), writewatch runs a Go test suite
// that prints lines slowly: the status line stays in the last row while
// the suite's output scrolls above it; at the end every line the suite
// printed is on the terminal whole, in order, none with status text on
// it, nothing of the status line is left, and the shell's prompt comes on
// a clean row with the full scroll region.
func TestStatusLineInTmux(t *testing.T) {
	root, _ := project(t)
	copyDir(t, "testdata/slowlines", root)
	tm := tmuxtest.Start(t, 80, 24, root, "TERM=screen")
	tm.Run(wwBin + ` -- go test -count=1 -v ./...; echo "exit=$?"`)
	done := func(screen []string) bool {
		return tmuxtest.Prompted(screen) && strings.Contains(strings.Join(screen, "\n"), "exit=")
	}
	tm.WaitFor("the status line in the last row, with the suite's output above", 2*time.Minute, func(screen []string) bool {
		return done(screen) || len(screen) == 24 && strings.HasPrefix(screen[23], "writewatch ") &&
			strings.Contains(strings.Join(screen, "\n"), "slow 03")
	})
	screen := tm.Screen()
	if done(screen) {
		t.Fatalf("no status line seen in the last row while the suite ran:\n%s", strings.Join(tm.History(), "\n"))
	}
	for i, row := range screen[:23] {
		if strings.Contains(row, "·") {
			t.Errorf("status text in row %d: %q", i+1, row)
		}
	}
	tm.WaitFor("the prompt", 2*time.Minute, done)

	history := tm.History()
	all := strings.Join(history, "\n")
	want := []string{"=== RUN   TestSlowLines"}
	for i := 1; i <= 30; i++ {
		want = append(want, slowLine(i))
	}
	want = append(want, "=== RUN   TestSlowStray", "stray start", "stray end", "writewatch: 1 write outside the allowlist", "exit=86", "$")
	at := 0
	for _, w := range want {
		for at < len(history) && !strings.HasPrefix(history[at], w) {
			at++
		}
		if at == len(history) {
			t.Fatalf("%q is not on the terminal whole, in its place:\n%s", w, all)
		}
		if strings.HasPrefix(w, "slow ") && history[at] != w {
			t.Errorf("row %q, want %q", history[at], w)
		}
	}
	if strings.Contains(all, "·") {
		t.Errorf("status text left on the terminal:\n%s", all)
	}
	if history[len(history)-1] != "$" {
		t.Errorf("the last row is %q, not the prompt:\n%s", history[len(history)-1], all)
	}
	if got := tm.Format("#{cursor_x} #{cursor_y} #{scroll_region_upper} #{scroll_region_lower}"); !strings.HasPrefix(got, "2 ") || !strings.HasSuffix(got, " 0 23") {
		t.Errorf("cursor column and row, scroll region: %s, want 2 (after the prompt), 0 23 (all 24 rows)", got)
	}
}
