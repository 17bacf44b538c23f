package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"

	"github.com/writewatch/writewatch/report"
)

// programTable runs each micro row once more, at a hundredth of its
// size, under the empty hooks and under writewatch --audit, while the
// kernel counts the runs of BPF programs and their time, and prints each
// syscall program's average time per run: writewatch's own part of a
// row's cost, beside the kernel's path to the hooks, which the empty
// hooks' programs show (their runs are empty). These figures move less
// with the machine's spells than the times above. The kernel counts only
// while a BPF_ENABLE_STATS descriptor is open, and counting slows every
// program it counts, so the timed rows run without it.
func (b *bench) programTable(out io.Writer, ws []workload) error {
	closer, err := ebpf.EnableStats(unix.BPF_STATS_RUN_TIME)
	if err != nil {
		fmt.Fprintf(out, "\nNo table of the programs' time: the kernel does not count their runs here (%v).\n", err)
		return nil
	}
	defer closer.Close()
	fmt.Fprintf(out, "\nTime per run of the syscall programs, counted by the kernel (micro rows at N/100, once; ns per run):\n\n")
	fmt.Fprintf(out, "| workload | empty hooks: entry | empty hooks: exit | writewatch: sys_enter | writewatch: sys_exit | writewatch: other programs, in all |\n")
	fmt.Fprintf(out, "|---|---|---|---|---|---|\n")
	for _, w := range ws {
		if w.small == nil {
			continue
		}
		stats := reportPath("writewatch-bench-programs")
		floor, err := b.programStats(w, []string{b.floor}, "FLOOR_STATS="+stats, stats)
		if err != nil {
			return fmt.Errorf("%s under the empty hooks: %w", w.name, err)
		}
		ww, err := b.programStats(w, []string{b.ww, "--audit", "--quiet", "--json", stats, "--"}, "", stats)
		if err != nil {
			return fmt.Errorf("%s under writewatch: %w", w.name, err)
		}
		var others time.Duration
		for name, st := range ww {
			if name != "sys_enter" && name != "sys_exit" {
				others += time.Duration(st.RunNS)
			}
		}
		fmt.Fprintf(out, "| %s | %s | %s | %s | %s | %s |\n", strings.ReplaceAll(w.name, "|", `\|`),
			perRun(floor["floor_enter"]), perRun(floor["floor_exit"]), perRun(ww["sys_enter"]), perRun(ww["sys_exit"]), fmtDur(others))
	}
	return nil
}

// programStats runs w at its small size under prefix, with env added,
// and reads the programs' counts from the JSON file at path.
func (b *bench) programStats(w workload, prefix []string, env, path string) (map[string]report.ProgramStat, error) {
	defer os.Remove(path)
	if w.prepare != nil {
		if err := w.prepare(); err != nil {
			return nil, err
		}
	}
	argv := append(prefix, w.small...)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = w.dir
	if env != "" {
		cmd.Env = append(os.Environ(), env)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	var ee *exec.ExitError
	if err := cmd.Run(); err != nil && (!errors.As(err, &ee) || !w.violates) {
		return nil, fmt.Errorf("%v: %s", err, stderr.String())
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var rep struct {
		Programs []report.ProgramStat `json:"programs"`
	}
	if err := json.Unmarshal(data, &rep); err != nil {
		return nil, err
	}
	m := map[string]report.ProgramStat{}
	for _, p := range rep.Programs {
		m[p.Name] = p
	}
	return m, nil
}

// perRun is st's average time per run, in nanoseconds.
func perRun(st report.ProgramStat) string {
	if st.Runs == 0 {
		return "–"
	}
	return fmt.Sprintf("%.0f ns (%d runs)", float64(st.RunNS)/float64(st.Runs), st.Runs)
}
