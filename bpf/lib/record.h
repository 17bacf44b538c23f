/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Records sent to user space: the per-CPU scratch record, its header, its
 * string slots, and the ring buffer.
 */
#ifndef WW_LIB_RECORD_H
#define WW_LIB_RECORD_H

#include "settings.h"
#include "uapi.h"
#include "task.h"
#include "loop.h"

struct event {
	struct event_hdr hdr;
	char data[DATA_SZ + PATH_SLOT]; /* slack so masked offsets stay inside */
	/* Not sent: a syscall's names' sums at its entry, for the record
	 * built at its exit (lib/names.h). */
	struct sums sums;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct event);
} scratch SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 8 << 20); /* the loader may resize */
} events SEC(".maps");

/* An offset into event.data the verifier can see is in bounds: the
 * barrier keeps the compiler from dropping a mask it thinks redundant. */
static __always_inline __u32 at(__u32 off)
{
	barrier_var(off);
	return off & (DATA_SZ - 1);
}

/* The levels a PID namespace can be at (MAX_PID_NS_LEVEL). */
#define PID_NS_LEVELS 32

/* A search of a struct pid's numbers for writewatch's namespace. */
struct ns_search {
	unsigned long numbers; /* the address of its numbers[] */
	unsigned int level;    /* the last index in numbers[] */
	__u32 nr;              /* found: the number there */
};

/* Level i: is its namespace writewatch's? Returns 1 to stop. */
__noinline int ns_search_one(struct ns_search *s, __u32 i)
{
	struct pid_namespace *ns = NULL;
	unsigned long at;
	int nr = 0;

	if (!s || i > s->level)
		return 1;
	at = s->numbers + i * bpf_core_type_size(struct upid);
	bpf_probe_read_kernel(&ns, sizeof(ns), (void *)at + bpf_core_field_offset(struct upid, ns));
	if (!ns || BPF_CORE_READ(ns, ns.inum) != pidns_ino)
		return 0;
	bpf_probe_read_kernel(&nr, sizeof(nr), (void *)at + bpf_core_field_offset(struct upid, nr));
	s->nr = nr;
	return 1;
}

LOOP_STEP(ns_search_step, ns_search_one)

/* The process of struct pid p (a process's, its tgid) as writewatch's
 * PID namespace numbers it, 0 when it is not visible there: its number
 * at the level of its namespaces that is writewatch's. The level is
 * looked for, not set by the loader: /proc/self/status counts levels
 * from the namespace /proc was mounted in, a container's own. A loop of
 * bpf_loop's: the verifier walks its step once. */
static __always_inline __u32 ns_nr(struct pid *p)
{
	struct ns_search s = {
		.numbers = (unsigned long)p + bpf_core_field_offset(struct pid, numbers),
		.level = BPF_CORE_READ(p, level),
	};

	if (!pidns_ino)
		return BPF_CORE_READ(p, numbers[0].nr);
	bpf_loop(PID_NS_LEVELS, ns_search_step, &s, 0);
	return s.nr;
}

/* The current process's tgid in writewatch's PID namespace (0: none).
 * The helper answers for a process of that namespace; one of a namespace
 * below it (a test's own, unshare -p) is found among its pid's levels. */
static __always_inline __u32 ns_tgid(void)
{
	struct bpf_pidns_info ns = {};
	struct task_struct *task;

	if (!pidns_ino)
		return bpf_get_current_pid_tgid() >> 32;
	if (!bpf_get_ns_current_pid_tgid(pidns_dev, pidns_ino, &ns, sizeof(ns)))
		return ns.tgid;
	task = (struct task_struct *)bpf_get_current_task();
	return ns_nr(BPF_CORE_READ(task, group_leader, thread_pid));
}

static __always_inline struct event *scratch_event(void)
{
	__u32 zero = 0;
	return bpf_map_lookup_elem(&scratch, &zero);
}

/* Start record e of kind: the header of the current thread, no slots.
 * Global, like send and put_str, so verified once. */
__noinline int fill_hdr(struct event *e, __u32 kind)
{
	struct task_struct *task = (struct task_struct *)bpf_get_current_task();
	__u64 id = bpf_get_current_pid_tgid();

	if (!e)
		return 0;

	e->hdr.ts = bpf_ktime_get_boot_ns();
	e->hdr.test = 0;
	e->hdr.goid = 0;
	e->hdr.go = 0;
	e->hdr.epoch = 0;
	e->hdr.kind = kind;
	e->hdr.op = 0;
	e->hdr.tgid = id >> 32;
	e->hdr.pid = (__u32)id;
	e->hdr.ppid = BPF_CORE_READ(task, real_parent, tgid);
	e->hdr.ret = 0;
	e->hdr.flags = 0;
	e->hdr.mode = 0;
	e->hdr.truncated = 0;
	e->hdr.present = 0;
	e->hdr.clean = 0;
	e->hdr.via = WW_VIA_SYSCALL;
	e->hdr.detached = 0;
	e->hdr.rec = 0;
	e->hdr.ino = 0;
	e->hdr.dev = 0;
	e->hdr.gen = 0;
	e->hdr.action = 0;
	for (int i = 0; i < NSLOTS; i++)
		e->hdr.len[i] = 0;
	e->hdr.ns_tgid = ns_tgid();
	bpf_get_current_comm(e->hdr.comm, sizeof(e->hdr.comm));
	return 0;
}

/* Send record e with off bytes of slots: 1 when it went out. */
__noinline int send(struct event *e, __u32 off)
{
	__u64 size = sizeof(e->hdr) + off;

	if (!e)
		return 0;
	if (size > sizeof(*e))
		size = sizeof(*e);
	/* Waking the reader for every record costs more than the record;
	 * it polls, and is woken only when the buffer fills up. */
	__u64 flags = bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA) >= wakeup_bytes ?
		      BPF_RB_FORCE_WAKEUP : BPF_RB_NO_WAKEUP;
	bool paused_write = e->hdr.kind == WW_EV_WRITE && (e->hdr.rec & WW_REC_PAUSED);

	/* A paused process waits for user space: wake it now; so does the
	 * detach of an exited Go test binary's uprobes (WW_EXIT_GO_TEST). */
	if (((e->hdr.kind == WW_EV_EXEC || e->hdr.kind == WW_EV_EXIT) && e->hdr.flags) || e->hdr.kind == WW_EV_CONTENTS ||
	    paused_write)
		flags = BPF_RB_FORCE_WAKEUP;
	if (bpf_ringbuf_output(&events, e, size, flags)) {
		/* Its process waits for no record: SIGCONT drops the stop
		 * still pending (pause_for_path, lib/pause.h). */
		if (paused_write)
			bpf_send_signal(SIGCONT);
		count(WW_STAT_RINGBUF_FULL);
		if (e->hdr.kind == WW_EV_WRITE)
			count(WW_STAT_LOST_WRITES);
		else if (e->hdr.kind == WW_EV_READ)
			count(WW_STAT_LOST_READS);
		return 0;
	}
	return 1;
}

static __always_inline void mark(struct event *e, int slot, __u32 start, __u32 end, bool truncated)
{
	e->hdr.len[slot] = end - start;
	e->hdr.present |= 1 << slot;
	if (truncated) {
		e->hdr.truncated |= 1 << slot;
		count(WW_STAT_TRUNCATED);
	}
}

/* Copy a NUL-terminated string (user memory, or kernel memory when
 * kernel is set) at addr into a slot. Returns the new offset. Global, so
 * verified once. */
__noinline int put_str(struct event *e, __u32 off, __u32 slot, __u64 addr, int kernel)
{
	const char *s = (const char *)addr;
	char next = 0;
	long n;

	if (!e || !s || off > DATA_SZ - PATH_SLOT)
		return off;
	if (kernel)
		n = bpf_probe_read_kernel_str(&e->data[at(off)], PATH_SLOT, s);
	else
		n = bpf_probe_read_user_str(&e->data[at(off)], PATH_SLOT, s);
	if (n <= 0) {
		count(WW_STAT_READ_ERR);
		return off;
	}
	/* A full slot is a cut string unless the byte after it is NUL. */
	if (n == PATH_SLOT) {
		if (kernel)
			bpf_probe_read_kernel(&next, 1, s + PATH_SLOT - 1);
		else
			bpf_probe_read_user(&next, 1, s + PATH_SLOT - 1);
	}
	barrier_var(slot);
	if (slot >= NSLOTS)
		return off;
	mark(e, slot, off, off + n, next != 0);
	return off + n;
}

#endif
