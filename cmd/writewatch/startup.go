package main

import (
	"runtime/debug"
	"sync"
	"time"
)

// startupHeap bounds the heap while garbage collection waits for
// COMMAND's start (pauseGC): past it, the collector runs as usual.
const startupHeap = 256 << 20

// gcAfterLaunch is how long after COMMAND's start garbage collection
// stays paused (resumeAfterLaunch).
const gcAfterLaunch = 250 * time.Millisecond

// pauseGC stops garbage collection until the returned function is called,
// soon after COMMAND has started (resumeAfterLaunch), and then restores the settings it found. The
// start-up allocates much that it drops soon after (the BPF object and the
// kernel's BTF, parsed) and keeps little: collecting meanwhile took CPU
// from the work on the path to COMMAND's start, on both cores, and saved
// about 1 MB of peak RSS. A heap past startupHeap is collected anyway.
func pauseGC() (resume func()) {
	percent := debug.SetGCPercent(-1)
	limit := debug.SetMemoryLimit(-1)
	debug.SetMemoryLimit(min(limit, startupHeap))
	return sync.OnceFunc(func() {
		debug.SetMemoryLimit(limit)
		debug.SetGCPercent(percent)
	})
}

// resumeAfterLaunch calls resume gcAfterLaunch from now: COMMAND has just
// started. The first collection then finds the start-up's garbage (tens of
// MB of parsed BTF); right at the launch it competed for the two cores
// with COMMAND's own start, the end of a short run and the io_uring
// program loading in the background, and a run shorter than the delay
// never collects. Alternated runs of `writewatch --audit --quiet -- true`,
// 40 of each build, medians: 79.1 and 74.9 ms collecting at the launch,
// 75.9 and 72.9 ms after the delay.
func resumeAfterLaunch(resume func()) func() {
	return func() { time.AfterFunc(gcAfterLaunch, resume) }
}
