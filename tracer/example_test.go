package tracer_test

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/writewatch/writewatch/tracer"
)

// follow runs sh -c script in a traced tree and returns the paths of
// its write records, as a caller of the tracer does: load the programs,
// arm them so that the next process this one starts is the tree's root,
// start it, disarm, then read records until the tree is done.
func follow(script string) ([]string, error) {
	t, err := tracer.New(tracer.Options{})
	if err != nil {
		return nil, err
	}
	defer t.Close()
	if err := t.Arm(); err != nil {
		return nil, err
	}
	cmd := exec.Command("sh", "-c", script)
	err = cmd.Start()
	if derr := t.Disarm(); err == nil {
		err = derr
	}
	if err != nil {
		return nil, err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var (
		paths  []string
		ev     tracer.Event
		exited bool
	)
	for {
		t.SetDeadline(time.Now().Add(50 * time.Millisecond))
		err := t.Next(&ev)
		switch {
		case err == nil:
			if ev.Kind == tracer.KindWrite {
				paths = append(paths, ev.String(tracer.SlotPath))
			}
			continue
		case !errors.Is(err, tracer.ErrTimeout):
			return paths, err
		case exited:
			if alive, err := t.Tracked(); err != nil || len(alive) == 0 {
				return paths, err
			}
		}
		select {
		case <-done:
			exited = true
		default:
		}
	}
}

// Follow a command's tree and list what it wrote. (It needs root, or
// CAP_BPF and CAP_PERFMON.)
func Example() {
	dir, _ := os.MkdirTemp("/var/tmp", "tracer-example-")
	defer os.RemoveAll(dir)
	paths, err := follow("cd " + dir + " && echo hello > greeting.txt && mkdir sub")
	if err != nil {
		fmt.Println("cannot trace here:", err)
		return
	}
	for _, p := range paths {
		fmt.Println(p)
	}
}

// The example's tree is followed: its open of greeting.txt and its mkdir
// are records.
func TestExample(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to load BPF programs")
	}
	dir := t.TempDir()
	paths, err := follow("cd " + dir + " && echo hello > greeting.txt && mkdir sub")
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, p := range paths {
		got[filepath.Base(p)] = true
	}
	if !got["greeting.txt"] || !got["sub"] {
		t.Errorf("records of %v, want greeting.txt and sub", paths)
	}
}
