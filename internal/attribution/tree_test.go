package attribution

import (
	"slices"
	"testing"

	"github.com/writewatch/writewatch/tracer"
)

func record(t *testing.T, h tracer.RecordHeader, comm string, slots ...[]byte) *tracer.Event {
	t.Helper()
	h.SetComm(comm)
	var ev tracer.Event
	if err := tracer.Decode(tracer.AppendRecord(nil, h, slots...), &ev); err != nil {
		t.Fatal(err)
	}
	return &ev
}

func fork(t *testing.T, parent, child uint32) *tracer.Event {
	return record(t, tracer.RecordHeader{Kind: uint32(tracer.KindFork), Tgid: child, Ppid: parent}, "")
}

func exec(t *testing.T, tgid, nsTgid uint32, comm, exe string, args string) *tracer.Event {
	return record(t, tracer.RecordHeader{Kind: uint32(tracer.KindExec), Tgid: tgid, NsTgid: nsTgid}, comm, []byte(exe+"\x00"), []byte(args))
}

func TestTreeChainAndSurvivors(t *testing.T) {
	tree := NewTree(50, 40, []string{"make", "test"})
	tree.SetRoot(1000)
	tree.Observe(exec(t, 1000, 50, "make", "/usr/bin/make", "make\x00test\x00"))
	tree.Observe(fork(t, 1000, 1001))
	tree.Observe(exec(t, 1001, 51, "sh", "/bin/sh", "sh\x00-c\x00go test\x00"))
	tree.Observe(fork(t, 1001, 1002))
	// 1002 never execs: it keeps its parent's command line, and its pid
	// in writewatch's namespace comes from its first own record.
	tree.Observe(record(t, tracer.RecordHeader{Kind: uint32(tracer.KindWrite), Tgid: 1002, NsTgid: 52}, "sh"))

	got := tree.Report(1002)
	if got.PID != 52 || got.PPID != 51 || got.Comm != "sh" || !slices.Equal(got.Cmdline, []string{"sh", "-c", "go test"}) {
		t.Errorf("Report(1002) = %+v", got)
	}
	chain := tree.Chain(1002)
	if len(chain) != 2 || chain[0].PID != 51 || chain[1].PID != 50 || chain[1].PPID != 40 {
		t.Errorf("chain %+v, want 51 then 50 (whose parent is writewatch, 40)", chain)
	}
	if len(tree.Chain(1000)) != 0 {
		t.Error("COMMAND's own chain should be empty")
	}
	if tree.Seen() != 3 {
		t.Errorf("seen %d processes, want 3", tree.Seen())
	}

	tree.Observe(record(t, tracer.RecordHeader{Kind: uint32(tracer.KindExit), Tgid: 1002}, "sh"))
	if tree.Proc(1002).Alive {
		t.Error("1002 still alive after its exit record")
	}
	surv := tree.Survivors([]uint32{1001})
	if len(surv) != 1 || surv[0].PID != 51 {
		t.Errorf("survivors %+v", surv)
	}
}

// A process whose fork record was lost still gets attributed.
func TestTreeUnknownProcess(t *testing.T) {
	tree := NewTree(50, 40, []string{"sh"})
	tree.SetRoot(1000)
	tree.Observe(record(t, tracer.RecordHeader{Kind: uint32(tracer.KindWrite), Tgid: 2000, NsTgid: 60, Ppid: 1000}, "stray"))
	p := tree.Report(2000)
	if p.PID != 60 || p.Comm != "stray" || p.PPID != 50 {
		t.Errorf("Report = %+v", p)
	}
	if p.Cmdline == nil {
		t.Error("cmdline must be [] not nil")
	}
}
