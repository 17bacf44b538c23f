package main

import (
	"runtime/debug"
	"sync"
)

// startupHeap bounds the heap while garbage collection waits for
// COMMAND's start (pauseGC): past it, the collector runs as usual.
const startupHeap = 256 << 20

// pauseGC stops garbage collection until the returned function is called,
// once COMMAND has started, and then restores the settings it found. The
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
