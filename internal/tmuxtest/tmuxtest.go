// Package tmuxtest runs programs on a real terminal for tests: a shell in
// a tmux session of a set size, on a tmux server of the test's own, whose
// screen and scrollback the test reads (capture-pane). Tests that use it
// skip when tmux is not installed (make test-deps installs it).
package tmuxtest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Prompt is the shell's prompt.
const Prompt = "$ "

// Session is one tmux session running bash.
type Session struct {
	t      testing.TB
	socket string
}

// Start starts a tmux server of its own with a session of cols by rows
// running bash (none of the user's startup files, the prompt Prompt) in dir, with env
// added to the environment; the server is killed when the test ends.
func Start(t testing.TB, cols, rows int, dir string, env ...string) *Session {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux is not installed (make test-deps installs it)")
	}
	// The server's socket in the test's own directory, removed with it.
	s := &Session{t: t, socket: filepath.Join(t.TempDir(), "tmux")}
	args := []string{"-f", "/dev/null", "new-session", "-d", "-x", fmt.Sprint(cols), "-y", fmt.Sprint(rows), "-c", dir}
	for _, e := range env {
		args = append(args, "-e", e)
	}
	rc := filepath.Join(t.TempDir(), "bashrc")
	// No history file: the shell would write it in the home directory.
	if err := os.WriteFile(rc, []byte("PS1='"+Prompt+"'\nunset HISTFILE\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	args = append(args, "bash --noprofile --rcfile "+rc)
	s.tmux(args...)
	t.Cleanup(func() { exec.Command("tmux", "-S", s.socket, "kill-server").Run() })
	// The size stays what the test sets, whatever clients attach.
	s.tmux("set-option", "-g", "window-size", "manual")
	s.WaitFor("the first prompt", time.Minute, Prompted)
	return s
}

func (s *Session) tmux(args ...string) string {
	s.t.Helper()
	cmd := exec.Command("tmux", append([]string{"-S", s.socket}, args...)...)
	// Not a client of the tmux these tests may run in.
	for _, e := range os.Environ() {
		if !strings.HasPrefix(e, "TMUX=") {
			cmd.Env = append(cmd.Env, e)
		}
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		s.t.Fatalf("tmux %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// Record appends all the pane's output from now on, escape sequences
// and all, to the file path.
func (s *Session) Record(path string) {
	s.t.Helper()
	s.tmux("pipe-pane", "-o", "cat >> '"+path+"'")
}

// Run types command and Enter.
func (s *Session) Run(command string) {
	s.t.Helper()
	s.tmux("send-keys", "-l", command)
	s.tmux("send-keys", "Enter")
}

// Keys sends keys as tmux names them (C-z, Enter).
func (s *Session) Keys(keys ...string) {
	s.t.Helper()
	s.tmux(append([]string{"send-keys"}, keys...)...)
}

// Resize sets the terminal's size; the programs on it get SIGWINCH.
func (s *Session) Resize(cols, rows int) {
	s.t.Helper()
	s.tmux("resize-window", "-x", fmt.Sprint(cols), "-y", fmt.Sprint(rows))
}

// Screen returns the rows on the screen now, as text.
func (s *Session) Screen() []string {
	s.t.Helper()
	return lines(s.tmux("capture-pane", "-p"))
}

// History returns the scrollback and the screen, as text, the rows that
// a line wrapped onto joined to it, blank rows at the end left out.
func (s *Session) History() []string {
	s.t.Helper()
	l := lines(s.tmux("capture-pane", "-p", "-J", "-S", "-"))
	for i := range l {
		l[i] = strings.TrimRight(l[i], " ") // -J keeps them
	}
	for len(l) > 0 && l[len(l)-1] == "" {
		l = l[:len(l)-1]
	}
	return l
}

// Format returns what tmux's format (display-message -p) says of the
// pane: #{cursor_y}, #{scroll_region_lower} and so on.
func (s *Session) Format(format string) string {
	s.t.Helper()
	return strings.TrimSpace(s.tmux("display-message", "-p", format))
}

// WaitFor waits until done holds of the screen, and fails the test with
// the screen after timeout.
func (s *Session) WaitFor(what string, timeout time.Duration, done func(screen []string) bool) {
	s.t.Helper()
	var screen []string
	for deadline := time.Now().Add(timeout); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if screen = s.Screen(); done(screen) {
			return
		}
	}
	s.t.Fatalf("waited %v for %s; the screen:\n%s", timeout, what, strings.Join(screen, "\n"))
}

// Prompted reports whether the last non-blank row of screen is a bare
// prompt.
func Prompted(screen []string) bool {
	for i := len(screen) - 1; i >= 0; i-- {
		if screen[i] != "" {
			// capture-pane leaves out the blanks at the end of a row.
			return screen[i] == strings.TrimRight(Prompt, " ")
		}
	}
	return false
}

func lines(out string) []string {
	return strings.Split(strings.TrimSuffix(out, "\n"), "\n")
}
