package integration

import (
	"os"
	"strings"
	"testing"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"

	"github.com/writewatch/writewatch/report"
)

// While the kernel counts the runs of BPF programs (a BPF_ENABLE_STATS
// descriptor, as make bench holds one), the report says how often each
// of writewatch's programs ran and for how long, and that the kernel
// skipped none; without counting, it has no such entries.
func TestProgramStats(t *testing.T) {
	root, _ := project(t)
	closer, err := ebpf.EnableStats(unix.BPF_STATS_RUN_TIME)
	if err != nil {
		t.Fatalf("enable the kernel's counts of BPF programs: %v", err)
	}
	res := ww(t, root, nil, "sh", "-c", "cat /etc/hostname >/dev/null; echo x > tests/ok.txt")
	closer.Close()
	if res.code != 0 {
		t.Fatalf("exit code %d, want 0\n%s", res.code, res.stderr)
	}
	progs := map[string]report.ProgramStat{}
	for _, p := range res.rep.Programs {
		progs[p.Name] = p
	}
	for _, name := range []string{"sys_enter", "sys_exit", "sched_fork", "sched_exec", "sched_exit"} {
		if p := progs[name]; p.Runs == 0 || p.RunNS == 0 || p.Missed > 0 {
			t.Errorf("program %s: %+v, want runs, their time and none skipped (all: %+v)", name, p, res.rep.Programs)
		}
	}
	if on, err := os.ReadFile("/proc/sys/kernel/bpf_stats_enabled"); err != nil || strings.TrimSpace(string(on)) != "0" {
		return // counted all along: nothing to compare
	}
	res = ww(t, root, nil, "sh", "-c", "echo x > tests/ok.txt")
	if res.code != 0 || len(res.rep.Programs) > 0 {
		t.Errorf("not counting: exit code %d, programs %+v; want 0 and none\n%s", res.code, res.rep.Programs, res.stderr)
	}
}
