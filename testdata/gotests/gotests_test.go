package gotests

import (
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

func TestMain(m *testing.M) {
	if err := Touch("testmain.txt"); err != nil {
		panic(err)
	}
	os.Exit(m.Run())
}

func TestSequentialWrites(t *testing.T) {
	if err := Touch("sequential.txt"); err != nil {
		t.Fatal(err)
	}
}

// The two parallel tests overlap: each waits until the other has
// started (with -count=N, the other of its round).
var (
	mu      sync.Mutex
	arrived int
)

func waitForPartner() {
	mu.Lock()
	arrived++
	want := (arrived + 1) / 2 * 2
	mu.Unlock()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		mu.Lock()
		n := arrived
		mu.Unlock()
		if n >= want {
			break
		}
	}
	time.Sleep(20 * time.Millisecond)
}

func TestParallelWriter(t *testing.T) {
	t.Parallel()
	waitForPartner()
	if err := Touch("parallel.txt"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond)
}

func TestParallelClean(t *testing.T) {
	t.Parallel()
	waitForPartner()
	if err := Touch(filepath.Join(t.TempDir(), "ok.txt")); err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond)
}

func TestWithSubtests(t *testing.T) {
	t.Run("clean", func(t *testing.T) {})
	t.Run("writes", func(t *testing.T) {
		if err := Touch("subtest.txt"); err != nil {
			t.Fatal(err)
		}
	})
}

func TestGoroutineWrites(t *testing.T) {
	done := make(chan error)
	go func() {
		inner := make(chan error)
		go func() { inner <- Touch("goroutine.txt") }()
		done <- <-inner
	}()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func TestChildProcessWrites(t *testing.T) {
	if out, err := exec.Command("sh", "-c", "echo x > child.txt").CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
}

func TestCleanupWrites(t *testing.T) {
	t.Cleanup(func() { Touch("cleanup.txt") })
}

func TestClean(t *testing.T) {
	if err := Touch(filepath.Join(t.TempDir(), "fine.txt")); err != nil {
		t.Fatal(err)
	}
}
