package tracer

import (
	"cmp"
	"reflect"
	"slices"
	"time"

	"github.com/cilium/ebpf"
)

// ProgramStat is the kernel's count for one of the loaded programs.
type ProgramStat struct {
	// Name is the program's, as the object names it (sys_exit).
	Name string
	// Runs and Runtime count its runs and the time they took, summed over
	// every process that ran it; both are 0 unless the kernel counted them
	// (sysctl kernel.bpf_stats_enabled=1, or a BPF_ENABLE_STATS descriptor
	// held open, as make bench does).
	Runs    uint64
	Runtime time.Duration
	// Missed counts the times the kernel skipped the program because it
	// was already running on that CPU (its recursion misses): what that
	// run would have seen went unseen. The kernel counts them always.
	Missed uint64
}

// ProgramStats are the kernel's counts for the programs loaded, in the
// order of their names: call it before Close.
func (t *Tracer) ProgramStats() []ProgramStat {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return nil
	}
	progs := namedPrograms(&t.objs.writewatchPrograms)
	if t.lsm != nil {
		progs = append(progs, namedPrograms(&t.lsm.enforcePrograms)...)
	}
	var out []ProgramStat
	for _, np := range progs {
		st, err := np.prog.Stats()
		if err != nil {
			continue
		}
		out = append(out, ProgramStat{Name: np.name, Runs: st.RunCount, Runtime: st.Runtime, Missed: st.RecursionMisses})
	}
	slices.SortFunc(out, func(a, b ProgramStat) int { return cmp.Compare(a.Name, b.Name) })
	return out
}

// goProbeName is the Go test uprobe program's name (goTestObjects).
const goProbeName = "go_probe"

type namedProgram struct {
	name string
	prog *ebpf.Program
}

// namedPrograms are the loaded programs of objs, a pointer to a struct
// bpf2go generated, by the names of their ebpf tags. Read once, at the
// end of a run.
func namedPrograms(objs any) []namedProgram {
	v := reflect.ValueOf(objs).Elem()
	var out []namedProgram
	for i := range v.NumField() {
		p, ok := v.Field(i).Interface().(*ebpf.Program)
		if name := v.Type().Field(i).Tag.Get("ebpf"); ok && p != nil && name != "" {
			out = append(out, namedProgram{name, p})
		}
	}
	return out
}
