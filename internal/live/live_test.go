package live

import (
	"sync"
	"testing"
	"time"

	"github.com/writewatch/writewatch/internal/ops"
	"github.com/writewatch/writewatch/report"
)

// Every operation the tracer can name has its place in Ops, so no
// violation is left out of the counters.
func TestOpsCoverTracerOps(t *testing.T) {
	for _, op := range ops.All() {
		if OpIndex(op.String()) < 0 {
			t.Errorf("tracer op %v missing from live.Ops", op)
		}
	}
	if OpIndex("nope") != -1 || ActionIndex("nope") != -1 {
		t.Error("unknown names must give -1")
	}
	if ActionIndex(report.ActionReported) < 0 {
		t.Error("ActionReported missing from live.Actions")
	}
}

// Every action a violation can have is counted live: an action missing
// from Actions would be dropped without a word.
func TestActionsCoverReportActions(t *testing.T) {
	var p Counters
	for _, a := range []string{report.ActionReported, report.ActionBlocked, report.ActionKilled, report.ActionBlockedKilled} {
		if ActionIndex(a) < 0 {
			t.Errorf("action %q missing from Actions", a)
		}
		p.Violation("chmod", a, true)
	}
	if s := p.Snapshot(); s.TotalGroups() != 4 {
		t.Errorf("%d groups counted, want 4", s.TotalGroups())
	}
}

func TestSnapshot(t *testing.T) {
	var p Counters
	if s := p.Snapshot(); !s.Started.IsZero() || s.Events != 0 || s.Test != "" {
		t.Fatalf("zero Counters: %+v", s)
	}
	start := time.Unix(1700000000, 5)
	p.Start(start)
	p.SetProcesses(3)
	p.events.Add(7)
	p.Violation("rename", report.ActionReported, true)
	p.Violation("rename", report.ActionReported, false)
	p.Violation("mknod", report.ActionReported, true)
	p.Violation("op99", report.ActionReported, true) // not counted, not a crash
	p.SetKernel(Kernel{Lost: [len(LostCauses)]uint64{4, 11}, Truncated: 2, Settled: 20 + 3})
	p.SetTest("TestFoo/bar")

	s := p.Snapshot()
	if !s.Started.Equal(start) || s.Processes != 3 || s.Events != 7+20+3 || s.Truncated != 2 || s.Test != "TestFoo/bar" {
		t.Errorf("snapshot: %+v", s)
	}
	rename, mknod := OpIndex("rename"), OpIndex("mknod")
	if s.Violations[rename][0] != 2 || s.Groups[rename][0] != 1 || s.Violations[mknod][0] != 1 {
		t.Errorf("violations %v groups %v", s.Violations, s.Groups)
	}
	if totalViolations(&s) != 3 || s.TotalGroups() != 2 {
		t.Errorf("totals: %d violations, %d groups", totalViolations(&s), s.TotalGroups())
	}
	if s.Lost != [len(LostCauses)]uint64{4, 11} {
		t.Errorf("lost %v", s.Lost)
	}
	if s.TotalLost() != 15 {
		t.Errorf("total lost %d", s.TotalLost())
	}
	p.SetTest("")
	if s := p.Snapshot(); s.Test != "" {
		t.Errorf("test after SetTest(\"\"): %q", s.Test)
	}
}

// The event loop's updates allocate nothing.
func TestUpdatesDoNotAllocate(t *testing.T) {
	var p Counters
	n := testing.AllocsPerRun(1000, func() {
		p.AddEvent()
		p.SetProcesses(4)
		p.Violation("open", report.ActionReported, false)
		p.Violation("unlink", report.ActionReported, true)
	})
	if n != 0 {
		t.Errorf("%v allocations per update", n)
	}
	if n := testing.AllocsPerRun(100, func() { _ = p.Snapshot() }); n != 0 {
		t.Errorf("Snapshot: %v allocations", n)
	}
}

// Readers may snapshot while the loop writes (run with -race).
func TestConcurrentReaders(t *testing.T) {
	var p Counters
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for range 2 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
					s := p.Snapshot()
					if s.TotalGroups() > totalViolations(&s) {
						t.Error("more groups than violations")
						return
					}
				}
			}
		})
	}
	for i := range 10000 {
		p.AddEvent()
		p.Violation("open", report.ActionReported, i%10 == 0)
	}
	close(stop)
	wg.Wait()
	if s := p.Snapshot(); s.Events != 10000 || totalViolations(&s) != 10000 || s.TotalGroups() != 1000 {
		t.Errorf("after the loop: %+v", s)
	}
}

func BenchmarkEvent(b *testing.B) {
	var p Counters
	for b.Loop() {
		p.AddEvent()
		p.SetProcesses(4)
	}
}

// totalViolations is the number of writes outside the allowlist in s.
func totalViolations(s *Snapshot) uint64 {
	var n uint64
	for i := range s.Violations {
		for _, v := range s.Violations[i] {
			n += v
		}
	}
	return n
}
