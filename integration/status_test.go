package integration

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// openPTY returns the two ends of a new pseudo-terminal of 100 columns
// and 24 rows.
func openPTY(t *testing.T) (master, tty *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	fd := int(m.Fd())
	if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(fd, unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.IoctlSetWinsize(int(s.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: 24, Col: 100}); err != nil {
		t.Fatal(err)
	}
	return m, s
}

// termEnv is the environment of a terminal with a scroll region: TERM
// names one, and nothing says it is one that drops the lines scrolled off
// a region (status.Unsupported).
var termEnv = []string{"TERM=xterm-256color", "LC_TERMINAL=", "TERM_PROGRAM=", "WT_SESSION=", "TMUX=", "STY="}

// wwOnTerminal runs writewatch with its stderr on a terminal of 24 rows
// (termEnv, then env) and returns its exit code and what the terminal
// showed.
func wwOnTerminal(t *testing.T, dir string, env []string, flags []string, command ...string) (int, string) {
	t.Helper()
	master, tty := openPTY(t)
	defer master.Close()
	cmd := exec.Command(wwBin, append(append(flags, "--"), command...)...)
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), termEnv...), env...)
	var stdout bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, tty
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	tty.Close() // the child has its copy; EOF comes when it exits
	var screen bytes.Buffer
	copied := make(chan error, 1)
	go func() {
		_, err := io.Copy(&screen, master)
		copied <- err
	}()
	err := cmd.Wait()
	if cerr := <-copied; cerr != nil && !errors.Is(cerr, syscall.EIO) {
		t.Fatalf("read the terminal: %v", cerr)
	}
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return code, screen.String()
}

// The sequences on a terminal of 24 rows (internal/status): the last row
// set apart (index, save, scroll region 1-23, restore, up), the line
// drawn in row 24, and the row erased and the full region given back.
const (
	reserveRow = "\x1bD\x1b7\x1b[1;23r\x1b8\x1b[A"
	drawRow    = "\x1b7\x1b[24;1H\x1b[0m\x1b[2K"
	releaseRow = "\x1b7\x1b[24;1H\x1b[0m\x1b[2K\x1b[r\x1b8"
)

// On a terminal, a status line is drawn in the last row, set apart for it
// while COMMAND runs, and taken down before the summary.
func TestStatusLineOnTerminal(t *testing.T) {
	root, _ := project(t)
	script := `echo x > stray.txt; sleep 0.6; echo y > tests/ok.txt; sleep 0.6`
	code, screen := wwOnTerminal(t, root, nil, nil, "sh", "-c", script)
	if code != 86 {
		t.Fatalf("exit code %d, want 86\n%q", code, screen)
	}
	if strings.Count(screen, reserveRow) != 1 {
		t.Fatalf("the last row is not set apart once:\n%q", screen)
	}
	if !strings.Contains(screen, drawRow+"\x1b[1mwritewatch\x1b[0m ") {
		t.Fatalf("no status line in the last row:\n%q", screen)
	}
	if !strings.Contains(screen, "1 violation") || !strings.Contains(screen, "processes") {
		t.Errorf("the status line lacks the counts:\n%q", screen)
	}
	summary := strings.Index(screen, "writewatch: 1 write outside the allowlist")
	if summary < 0 {
		t.Fatalf("no summary:\n%q", screen)
	}
	// The last thing before the summary is the line being taken down.
	before := screen[:summary]
	if !strings.HasSuffix(before, releaseRow) {
		t.Errorf("the status line is not taken down before the summary:\n%q", before)
	}
	if strings.ContainsAny(before, "\r\n") {
		t.Errorf("the status line moved the cursor by writing:\n%q", before)
	}
	for _, line := range strings.Split(before, drawRow)[1:] {
		line, _, _ = strings.Cut(line, "\x1b8")
		if n := len([]rune(stripColor(line))); n >= 100 {
			t.Errorf("a status line of %d columns on a terminal of 100: %q", n, line)
		}
	}
}

// NO_COLOR keeps the status line and drops its colours; --quiet drops it,
// and so does a terminal without a scroll region (TERM=dumb).
func TestStatusLineNoColorQuietDumb(t *testing.T) {
	root, _ := project(t)
	script := `echo x > stray.txt; sleep 0.4`
	_, screen := wwOnTerminal(t, root, []string{"NO_COLOR=1"}, nil, "sh", "-c", script)
	if !strings.Contains(screen, drawRow+"writewatch ") {
		t.Errorf("no plain status line with NO_COLOR:\n%q", screen)
	}
	if strings.Contains(screen, "\x1b[1m") || strings.Contains(screen, "\x1b[31m") {
		t.Errorf("colours with NO_COLOR:\n%q", screen)
	}

	for _, c := range []struct {
		name  string
		env   []string
		flags []string
	}{
		{"--quiet", nil, []string{"--quiet"}},
		{"TERM=dumb", []string{"TERM=dumb"}, nil},
		{"no TERM", []string{"TERM="}, nil},
	} {
		_, screen = wwOnTerminal(t, root, c.env, c.flags, "sh", "-c", script)
		if strings.Contains(screen, "\x1b7") || strings.Contains(screen, "·") {
			t.Errorf("%s: a status line:\n%q", c.name, screen)
		}
		if !strings.Contains(screen, "1 write outside the allowlist") {
			t.Errorf("%s: no summary of a failing run:\n%q", c.name, screen)
		}
	}
}

// When stderr is not a terminal, nothing of the status line is written.
func TestNoStatusLineWhenNotATerminal(t *testing.T) {
	root, _ := project(t)
	res := ww(t, root, nil, "sh", "-c", `echo x > stray.txt; sleep 0.4`)
	if strings.ContainsAny(res.stderr, "\r\x1b") {
		t.Errorf("terminal control in stderr that is not a terminal:\n%q", res.stderr)
	}
}

func stripColor(s string) string {
	for _, c := range []string{"\x1b[0m", "\x1b[1m", "\x1b[2m", "\x1b[31m", "\x1b[33m"} {
		s = strings.ReplaceAll(s, c, "")
	}
	return s
}
