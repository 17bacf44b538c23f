package witness

import (
	"os"
	"os/exec"
	"testing"
	"time"
)

// running: a live process is; a zombie (exited, not yet reaped) and a
// pid no process has are not.
func TestRunning(t *testing.T) {
	if !running(int32(os.Getpid())) {
		t.Errorf("running(self) = false")
	}
	cmd := exec.Command("true")
	if err := cmd.Start(); err != nil {
		t.Skip(err)
	}
	pid := int32(cmd.Process.Pid)
	for end := time.Now().Add(5 * time.Second); running(pid) && time.Now().Before(end); {
		time.Sleep(time.Millisecond)
	}
	if running(pid) {
		t.Errorf("running(%d) = true for a zombie", pid)
	}
	cmd.Wait()
	if running(pid) {
		t.Errorf("running(%d) = true once reaped", pid)
	}
}
