// Package phases times the phases of writewatch's start-up, for
// WRITEWATCH_PHASES=1: each phase's start, from the process's start, and
// its length, printed once the run is over. Unset, a phase costs one
// branch.
package phases

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"
)

// Env is the environment variable that turns the timings on.
const Env = "WRITEWATCH_PHASES"

var (
	on    = os.Getenv(Env) != ""
	start = time.Now() // when the runtime initialised this package
	mu    sync.Mutex
	done  []phase
)

type phase struct {
	name       string
	begin, end time.Duration
}

// On says the timings are being taken.
func On() bool { return on }

// Start starts timing a phase; the function it returns ends it. Phases
// may overlap (work done in parallel).
func Start(name string) func() {
	if !on {
		return func() {}
	}
	begin := time.Since(start)
	return func() {
		end := time.Since(start)
		mu.Lock()
		done = append(done, phase{name, begin, end})
		mu.Unlock()
	}
}

// Since records a phase that began at begin and ends now.
func Since(name string, begin time.Time) {
	if on {
		end := time.Since(start)
		mu.Lock()
		done = append(done, phase{name, begin.Sub(start), end})
		mu.Unlock()
	}
}

// Mark records an instant, such as COMMAND's start.
func Mark(name string) {
	if on {
		d := time.Since(start)
		mu.Lock()
		done = append(done, phase{name, d, d})
		mu.Unlock()
	}
}

// Write writes the phases, in the order they ended, one a line.
func Write(w io.Writer) {
	if !on {
		return
	}
	mu.Lock()
	defer mu.Unlock()
	for _, p := range done {
		fmt.Fprintf(w, "writewatch: phase %-28s at %7.1f ms  took %7.1f ms\n", p.name,
			float64(p.begin)/float64(time.Millisecond), float64(p.end-p.begin)/float64(time.Millisecond))
	}
	fmt.Fprintf(w, "writewatch: phases written       at %7.1f ms\n", float64(time.Since(start))/float64(time.Millisecond))
}
