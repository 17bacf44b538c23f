package tracer

import (
	"strings"
	"testing"
)

// Only the counters that mean a write may have gone unseen make a run
// incomplete; those that weaken attribution or exactness do not.
func TestIncomplete(t *testing.T) {
	for _, tc := range []struct {
		name      string
		st        Stats
		enforcing bool
		witness   bool
		want      []string // a part of each reason, in order
	}{
		{"nothing", Stats{Events: 10, AllowedInKernel: 5, Repeats: 3, NotFiles: 1}, false, false, nil},
		{"write records lost", Stats{RingbufFull: 7, LostWrites: 5}, false, false, []string{"5 write records were lost: the ring buffer was full"}},
		{"one write record lost", Stats{RingbufFull: 1, LostWrites: 1}, false, false, []string{"1 write record was lost"}},
		{"process records lost only", Stats{RingbufFull: 4}, false, false, nil},
		{"process records lost, witness on", Stats{RingbufFull: 7, LostWrites: 5}, false, true,
			[]string{"5 write records", "2 fork, exec, exit, test or contents records were lost"}},
		{"read records lost, witness on", Stats{RingbufFull: 3, LostReads: 3}, false, true, nil},
		{"read and process records lost, witness on", Stats{RingbufFull: 4, LostReads: 3}, false, true,
			[]string{"1 fork, exec, exit, test or contents record was lost"}},
		{"processes not followed", Stats{ProcMapFull: 2}, false, false, []string{"2 processes or threads were not followed"}},
		{"attribution only", Stats{GoroutineMapFull: 3, StopErrors: 1, Truncated: 2, ReadErrors: 1}, false, false, nil},
		{"a kill failed", Stats{SignalErrors: 1, Blocked: 1}, true, false, []string{"1 writer outside the allowlist could not be killed"}},
		{"refusals only", Stats{Blocked: 3, Killed: 3, Unmarked: 1}, true, false, nil},
		{"everything", Stats{RingbufFull: 9, LostWrites: 9, ProcMapFull: 1, SignalErrors: 2}, true, false,
			[]string{"9 write records", "1 process or thread was not followed", "2 writers"}},
		{"a process outside attached to or written into", Stats{OutsideTraced: 1}, false, false,
			[]string{"1 call of the tree attached with ptrace to, or wrote with process_vm_writev into, a process outside the tree"}},
		{"processes outside attached to or written into", Stats{OutsideTraced: 3}, false, false,
			[]string{"3 calls of the tree attached with ptrace to, or wrote with process_vm_writev into, processes outside the tree: what they wrote"}},
		{"programs that ran, none skipped", Stats{Programs: []ProgramStat{{Name: "sys_exit", Runs: 9}}}, false, false, nil},
		{"a syscall program skipped", Stats{Programs: []ProgramStat{{Name: "sys_enter", Runs: 9}, {Name: "sys_exit", Runs: 9, Missed: 2}}}, false, false,
			[]string{"the kernel skipped 2 runs of its program sys_exit"}},
		{"the Go test probe skipped", Stats{Programs: []ProgramStat{{Name: goProbeName, Missed: 1}}}, false, false, nil},
		{"an io_uring call before the io_uring program", Stats{URingUnwatched: 1}, false, false,
			[]string{"1 io_uring call of the tree came before writewatch's io_uring program was attached"}},
		{"io_uring unwatched", Stats{Events: 3, Unwatched: []string{"io_uring requests are not watched: x"}}, false, false,
			[]string{"io_uring requests are not watched"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.st.Incomplete(tc.enforcing, tc.witness)
			if len(got) != len(tc.want) {
				t.Fatalf("reasons %q, want %d", got, len(tc.want))
			}
			for i, w := range tc.want {
				if !strings.Contains(got[i], w) {
					t.Errorf("reason %q, want it to say %q", got[i], w)
				}
			}
		})
	}
}
