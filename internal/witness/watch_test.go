package witness

import (
	"os"
	"testing"
	"time"
)

// Once Finish's Sync has returned, the witness holds no marks (it starts
// the kernel's release of them early); contents asked for then, by a
// process that outlived the run, leave the run complete, while before it
// they are watched.
func TestContentsAfterFinish(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root (CAP_SYS_ADMIN) for fanotify filesystem marks")
	}
	dir := t.TempDir()
	var reasons []string
	c := NewChecker(CheckOptions{Self: int32(os.Getpid())})
	w := StartWatch(WatchOptions{Checker: c, ContentsLater: true, Incomplete: func(r string) { reasons = append(reasons, r) }}, []string{dir}, t.TempDir())
	defer w.Close()
	if !w.Active() {
		t.Fatalf("witness inactive: %s", w.Info().Unavailable)
	}
	if err := <-w.Finish(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	w.WatchContents("a survivor's call")
	if len(reasons) != 0 {
		t.Errorf("contents asked for after the final Sync made the run incomplete: %q", reasons)
	}
	if got := w.Info().ContentsSince; got != "a survivor's call" {
		t.Errorf("contents_since %q", got)
	}
}
