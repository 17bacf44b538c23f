package main

import (
	"runtime/debug"
	"testing"
)

// Garbage collection is off while paused, bounded by startupHeap, and
// back to the settings found once resumed, however often resume is called.
func TestPauseGC(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(150))
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(1 << 40))
	resume := pauseGC()
	if got := debug.SetGCPercent(-1); got != -1 {
		t.Errorf("paused: GC percent %d, want -1 (off)", got)
	}
	if got := debug.SetMemoryLimit(-1); got != startupHeap {
		t.Errorf("paused: memory limit %d, want %d", got, startupHeap)
	}
	resume()
	resume()
	if got := debug.SetGCPercent(-1); got != 150 {
		t.Errorf("resumed: GC percent %d, want 150", got)
	}
	if got := debug.SetMemoryLimit(-1); got != 1<<40 {
		t.Errorf("resumed: memory limit %d, want %d", got, int64(1<<40))
	}
}

// A memory limit lower than startupHeap stays while paused.
func TestPauseGCKeepsLowerLimit(t *testing.T) {
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(64 << 20))
	resume := pauseGC()
	defer resume()
	if got := debug.SetMemoryLimit(-1); got != 64<<20 {
		t.Errorf("paused: memory limit %d, want %d", got, 64<<20)
	}
}
