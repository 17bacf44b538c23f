package tracer

// The kernel's counters: what it settled, what it lost, and why.

import (
	"fmt"
	"slices"
)

// Stats sums the kernel's per-CPU counters.
func (t *Tracer) Stats() (Stats, error) {
	t.mu.Lock()
	s := Stats{Unwatched: slices.Clone(t.unwatched)}
	t.mu.Unlock()
	if t.priorErr != nil {
		s.NoPrior = t.priorErr.Error()
	}
	fields := [writewatchWwStatWW_STAT_MAX]*uint64{
		writewatchWwStatWW_STAT_EVENTS:            &s.Events,
		writewatchWwStatWW_STAT_RINGBUF_FULL:      &s.RingbufFull,
		writewatchWwStatWW_STAT_PROC_FULL:         &s.ProcMapFull,
		writewatchWwStatWW_STAT_TRUNCATED:         &s.Truncated,
		writewatchWwStatWW_STAT_READ_ERR:          &s.ReadErrors,
		writewatchWwStatWW_STAT_ALLOWED:           &s.AllowedInKernel,
		writewatchWwStatWW_STAT_NOT_FILES:         &s.NotFiles,
		writewatchWwStatWW_STAT_REPEATS:           &s.Repeats,
		writewatchWwStatWW_STAT_LOST_WRITES:       &s.LostWrites,
		writewatchWwStatWW_STAT_GOROUTINE_FULL:    &s.GoroutineMapFull,
		writewatchWwStatWW_STAT_STOP_ERR:          &s.StopErrors,
		writewatchWwStatWW_STAT_KILLED:            &s.Killed,
		writewatchWwStatWW_STAT_BLOCKED:           &s.Blocked,
		writewatchWwStatWW_STAT_SIGNAL_ERR:        &s.SignalErrors,
		writewatchWwStatWW_STAT_UNMARKED:          &s.Unmarked,
		writewatchWwStatWW_STAT_READS:             &s.Reads,
		writewatchWwStatWW_STAT_READ_REPEATS:      &s.ReadRepeats,
		writewatchWwStatWW_STAT_WRITTEN_FULL:      &s.WrittenFull,
		writewatchWwStatWW_STAT_READS_FULL:        &s.ReadsFull,
		writewatchWwStatWW_STAT_OUTSIDE_TRACED:    &s.OutsideTraced,
		writewatchWwStatWW_STAT_FANOTIFY_WRITABLE: &s.FanotifyWritable,
		writewatchWwStatWW_STAT_CONTENTS_STOP_ERR: &s.ContentsStopErrors,
		writewatchWwStatWW_STAT_UNWATCHED_ALLOWED: &s.UnwatchedAllowed,
		writewatchWwStatWW_STAT_URING_UNWATCHED:   &s.URingUnwatched,
		writewatchWwStatWW_STAT_LOST_READS:        &s.LostReads,
		writewatchWwStatWW_STAT_PRIVATE:           &s.Private,
	}
	for i := range uint32(writewatchWwStatWW_STAT_MAX) {
		var per []uint64
		if err := t.objs.Stats.Lookup(i, &per); err != nil {
			return s, fmt.Errorf("read stats: %w", err)
		}
		for _, v := range per {
			*fields[i] += v
		}
	}
	return s, nil
}

// Stats are the kernel side's counters.
type Stats struct {
	// Programs are the kernel's counts for each program (ProgramStats):
	// filled in by the caller, at the end of a run.
	Programs    []ProgramStat
	Events      uint64 // write records sent
	RingbufFull uint64 // records dropped: ring buffer full
	ProcMapFull uint64 // threads or processes not followed: storage or map full
	Truncated   uint64 // path slots cut to fit
	ReadErrors  uint64 // strings the kernel could not read
	// AllowedInKernel counts write events the kernel found allowed by
	// the marks and did not send.
	AllowedInKernel uint64
	// NotFiles counts opens of pipes, sockets, memfds and the like.
	NotFiles uint64
	// Repeats counts writes counted in the repeats map, not sent.
	Repeats uint64
	// LostWrites is the part of RingbufFull that were write records.
	LostWrites uint64
	// LostReads is the part of RingbufFull that were read records (reads
	// of files the run wrote): cross-test reads that may not be listed.
	LostReads uint64
	// GoroutineMapFull counts goroutines whose test could not be
	// recorded: their writes are reported as ambiguous, never misnamed.
	GoroutineMapFull uint64
	// StopErrors counts Go test binaries the kernel could not pause at
	// exec: their first tests may be reported as ambiguous.
	StopErrors uint64

	Killed       uint64 // SIGKILLs sent by enforcement
	Blocked      uint64 // writes refused, as seen at sys_exit (Landlock) or by the LSM programs
	SignalErrors uint64 // SIGKILLs that could not be sent
	// Unmarked counts refusals by the LSM programs of syscalls
	// writewatch does not record (ftruncate, ...).
	Unmarked uint64

	// Reads counts KindRead records sent: read-only opens of a file the
	// run wrote; ReadRepeats the same reads again, counted, not sent.
	Reads, ReadRepeats uint64
	// WrittenFull counts written files the kernel could not add to the
	// set it checks reads against (map full): reads of them go unseen.
	WrittenFull uint64
	// ReadsFull counts reads whose repeats could not be counted (map
	// full): they are sent again, nothing is lost.
	ReadsFull uint64
	// OutsideTraced counts the calls by which a process of the tree
	// became the tracer of a process outside it (ptrace PTRACE_ATTACH,
	// PTRACE_SEIZE) or wrote into its memory (process_vm_writev).
	OutsideTraced uint64
	// FanotifyWritable counts fanotify groups the tree made whose event
	// descriptors are open for writing: writes through them are seen
	// neither by a record nor by the filesystem witness.
	FanotifyWritable uint64
	// ContentsStopErrors counts processes that asked for file contents
	// to be watched (KindContents) and that the kernel could not pause
	// until they were: they ran on while the witness did not watch them.
	ContentsStopErrors uint64
	// UnwatchedAllowed counts the writes of AllowedInKernel that
	// Event.Unwatched would mark (bpf/lib/contents.h, mount_bits):
	// where their paths led cannot be told.
	UnwatchedAllowed uint64
	// URingUnwatched counts the io_uring calls of the tree, before the
	// io_uring program was attached (it loads beside COMMAND's start),
	// whose requests it may not have seen: an io_uring_enter that
	// submitted some, or an io_uring_setup whose process could not be
	// paused until then (bpf/lib/contents.h).
	URingUnwatched uint64
	// Private counts the writes of AllowedInKernel that landed on a
	// filesystem in memory made during the run, through a mount
	// namespace the tree made (a fake home): not the user's, whatever
	// their paths (bpf/lib/mounts.h).
	Private uint64

	// Unwatched says what the tracer could not attach on this kernel,
	// so that writes made through it go unseen: io_uring requests on a
	// kernel that has no tracepoint for them.
	Unwatched []string
	// NoPrior says why records cannot say what a call found before it
	// changed its file (Event.Prior, Tracer.PriorErr): "" when they can.
	NoPrior string `json:",omitempty"`
}

// Unattributed names each non-zero cause of writes whose test could not be
// told exactly (they are reported as ambiguous instead).
func (s Stats) Unattributed() map[string]uint64 {
	m := map[string]uint64{}
	for k, v := range map[string]uint64{"goroutine_map_full": s.GoroutineMapFull, "test_binary_not_paused": s.StopErrors} {
		if v > 0 {
			m[k] = v
		}
	}
	return m
}

// Lost is the number of records or syscalls that never reached user space.
func (s Stats) Lost() uint64 { return s.RingbufFull + s.ProcMapFull }

// LostByCause names each non-zero cause of loss.
func (s Stats) LostByCause() map[string]uint64 {
	m := map[string]uint64{}
	for k, v := range map[string]uint64{"ringbuf_full": s.RingbufFull, "proc_map_full": s.ProcMapFull} {
		if v > 0 {
			m[k] = v
		}
	}
	return m
}
