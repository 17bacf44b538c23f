package tracer

import (
	"fmt"
)

// Incomplete says, from the kernel's counters, why writewatch could not
// see everything the tree did: one reason per counter that means a write
// outside the allowlist may have gone unseen (report.Report.Incomplete).
// enforcing says the run was under --enforce; witnessing, that the
// filesystem witness was on.
//
// Each counter of Stats (enum ww_stat, bpf/writewatch.h), and what
// it does to the verdict:
//
//   - LostWrites (of RingbufFull): write records dropped, the ring buffer
//     being full. Their writes are unseen: blind.
//   - LostReads (of RingbufFull): read records dropped. A read changes
//     nothing: some cross-test reads may not be listed (a note in the
//     report), the verdict is not weakened.
//   - RingbufFull less LostWrites and LostReads: fork, exec, exit, test
//     and contents records dropped. The kernel keeps following the tree (a process is tracked
//     before its fork record is sent, and survivors are read from the
//     kernel's map), so no write record goes unseen; who wrote may be
//     misnamed: attribution. But the filesystem witness tells the tree's
//     changes by the fork records (and by the kernel's map, which an
//     exited process has left): a change with no record of its own (a
//     write through a descriptor inherited from outside the tree) by a
//     process whose fork record was lost and that has exited is not the
//     tree's to it: blind, when the witness is on.
//   - ProcMapFull: a thread or process whose task storage or process
//     entry could not be made. A thread without storage is not followed,
//     and a process missing from the map is not waited for at the end:
//     its writes may go unseen: blind.
//   - SignalErrors: under --enforce, a writer the kernel tried to kill
//     kept running. Its further writes are still seen, but enforcement
//     did not do what it promised: blind, so that the run says so even
//     when every record arrived.
//   - OutsideTraced: calls by which a process of the tree attached with
//     ptrace to a process outside it, or wrote into its memory with
//     process_vm_writev. Either can make that process write anything,
//     and its writes make no records: blind.
//   - Truncated: a path cut to fit the kernel's buffers. The record is
//     still sent, and the judge reports a cut path rather than let it
//     pass: the report is less exact, the verdict is not weakened.
//   - ReadErrors: a string the kernel could not read. A write record then
//     lacks its path and start directory, and the judge reports it as cut;
//     an exec record lacks its file or arguments: attribution.
//   - GoroutineMapFull, StopErrors: a goroutine or test binary whose test
//     could not be told; its writes are reported as ambiguous:
//     attribution.
//   - Events, AllowedInKernel, NotFiles, Repeats: writes sent, settled in
//     the kernel as allowed, not writes to files, or counted as repeats
//     of a sent record: nothing unseen.
//   - Killed, Blocked: what enforcement did. Refusals whose records were
//     lost fail the run by themselves (report.Report.LostRefusals).
//   - Unmarked: refusals by the LSM programs of calls no record
//     describes: refusals, counted with the tier's unseen refusals.
//   - ContentsStopErrors: processes that made a call after which file
//     contents must be watched, and that the kernel could not pause
//     until they were: what they wrote meanwhile through a file from
//     outside the tree went unseen: blind, when the witness is on.
//   - UnwatchedAllowed: opens for writing the kernel found allowed,
//     made while file contents were not watched, of a file reached
//     through a mount that was not there at the start (or a copy of
//     one), of a namespace the tree did not make, or from a chroot; a
//     truncate by name while a privileged process changed mounts; and
//     writes through a shared mapping or Linux AIO of such a file,
//     which the witness never sees (bpf/lib/contents.h, mount_bits;
//     bpf/lib/mounts.h): the allowed path may have led to a protected
//     file: blind.
//   - FanotifyWritable: fanotify groups whose events hand the tree
//     descriptors open for writing, of any file the group watches, with
//     no open call; the kernel makes no fanotify event for writes
//     through them, so the filesystem witness does not see them either:
//     blind.
//   - URingUnwatched: io_uring calls of the tree before the io_uring
//     program was attached (it loads beside COMMAND's start): requests
//     submitted through a ring from elsewhere, or by a process that
//     could not be paused until then, went unseen: blind.
//
// And of Programs, the runs the kernel skipped (Missed) of a program
// that sees syscalls, processes, io_uring requests, or refuses writes:
// what they would have seen or refused went unseen: blind. The Go test
// probe's skipped runs weaken attribution only.
//
// And Unwatched, what the tracer could not attach on this kernel: the
// writes made through it go unseen, and, under --enforce, unrefused by
// the LSM tier where it needed them (io_uring's extended attributes):
// blind, each reason as it is.
func (st Stats) Incomplete(enforcing, witnessing bool) []string {
	why := append([]string(nil), st.Unwatched...)
	if st.LostWrites > 0 {
		why = append(why, fmt.Sprintf("%s lost: the ring buffer was full (writewatch fell behind, or was stopped)",
			plural(st.LostWrites, "write record was", "write records were")))
	}
	if lost := st.RingbufFull - min(st.LostWrites+st.LostReads, st.RingbufFull); witnessing && lost > 0 {
		why = append(why, fmt.Sprintf("%s lost: the ring buffer was full, and the filesystem witness may not tell which changes on disk were the tree's",
			plural(lost, "fork, exec, exit, test or contents record was", "fork, exec, exit, test or contents records were")))
	}
	if st.ProcMapFull > 0 {
		why = append(why, fmt.Sprintf("%s not followed: the kernel's storage for them was full",
			plural(st.ProcMapFull, "process or thread was", "processes or threads were")))
	}
	if st.OutsideTraced > 0 {
		why = append(why, fmt.Sprintf("%s of the tree attached with ptrace to, or wrote with process_vm_writev into, %s outside the tree: what %s wrote was not followed",
			plural(st.OutsideTraced, "call", "calls"), pick(st.OutsideTraced == 1, "a process", "processes"), pick(st.OutsideTraced == 1, "it", "they")))
	}
	if st.FanotifyWritable > 0 {
		why = append(why, fmt.Sprintf("%s with writable event descriptors (fanotify_init with O_WRONLY or O_RDWR): writes through them are seen neither by the syscall records nor by the filesystem witness",
			plural(st.FanotifyWritable, "fanotify group was made", "fanotify groups were made")))
	}
	if witnessing && st.ContentsStopErrors > 0 {
		why = append(why, fmt.Sprintf("%s not be paused until the filesystem witness watched file contents: what %s wrote meanwhile through a file from outside the tree was not seen",
			plural(st.ContentsStopErrors, "process could", "processes could"), pick(st.ContentsStopErrors == 1, "it", "they")))
	}
	if st.UnwatchedAllowed > 0 {
		why = append(why, fmt.Sprintf("%s where the path seemed allowed, through a mount made during the run, a mount namespace the tree did not make, or a change of root, which could lead that path elsewhere, unseen by the filesystem witness",
			plural(st.UnwatchedAllowed, "file was opened or mapped for writing", "files were opened or mapped for writing")))
	}
	if st.URingUnwatched > 0 {
		why = append(why, fmt.Sprintf("%s of the tree came before writewatch's io_uring program was attached: the requests %s submitted were not seen",
			plural(st.URingUnwatched, "io_uring call", "io_uring calls"), pick(st.URingUnwatched == 1, "it", "they")))
	}
	for _, p := range st.Programs {
		if p.Missed > 0 && p.Name != goProbeName {
			why = append(why, fmt.Sprintf("the kernel skipped %s of its program %s (it was already running on that CPU): what %s would have seen was not seen",
				plural(p.Missed, "run", "runs"), p.Name, pick(p.Missed == 1, "it", "they")))
		}
	}
	if enforcing && st.SignalErrors > 0 {
		why = append(why, fmt.Sprintf("%s not be killed: --enforce did not stop %s",
			plural(st.SignalErrors, "writer outside the allowlist could", "writers outside the allowlist could"),
			pick(st.SignalErrors == 1, "it", "them")))
	}
	return why
}

// plural is "1 thing" or "N things".
func plural(n uint64, one, many string) string {
	return fmt.Sprintf("%d %s", n, pick(n == 1, one, many))
}

func pick(cond bool, a, b string) string {
	if cond {
		return a
	}
	return b
}
