/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * What the tracing programs (writewatch.bpf.c) and the enforcing LSM
 * programs (enforce.bpf.c) share about the current thread: its state in
 * the traced tree, the counters, and the refusal of its syscall.
 *
 * Each object defines these maps; the loader hands the tracing object's
 * maps to the enforcing one, so both see the same tree and counters.
 */
#ifndef WW_LIB_TASK_H
#define WW_LIB_TASK_H

#include "uapi.h"

struct args {
	__u32 op;
	__s32 dfd;
	__s32 dfd2;
	__u32 flags;
	__u32 mode;
	__u32 action; /* enum ww_action bits: what enforcement did */
	__u64 path;  /* user pointer */
	__u64 path2; /* user pointer */
};

/* The sums of a write's names at its entry (lib/names.h); 0: not read. */
struct sums {
	__u64 path;
	__u64 path2;
};

/* task_state.pending: what the thread's current syscall is. */
enum ww_pending {
	WW_PENDING_NONE  = 0,
	WW_PENDING_WRITE = 1, /* args hold a write's arguments */
	WW_PENDING_READ  = 2, /* a read-only open (lib/reads.h): no arguments kept */
};

/* What the stored call found before it changed its file (lib/prior.h). */
struct prior {
	__u32 seen; /* the fields below hold it */
	__u32 mode; /* 0: a rename's target held nothing */
	__u32 uid;
	__u32 gid;
	__s64 mtime_sec;
	__u32 mtime_nsec;
	__u32 _pad;
};

/*
 * Per-thread state, in the kernel's task local storage: whether the thread
 * belongs to the traced tree, and the arguments of the write-intent
 * syscall it is in. Every thread of the tree gets it when it is forked;
 * the kernel frees it with the thread.
 */
struct task_state {
	__u32 tracked;
	__u32 pending; /* enum ww_pending: a syscall entered and not yet exited */
	struct args args;
	__u64 fork_test; /* in clone/fork/vfork: the forking goroutine's test */
	__u32 ns_child;  /* in clone: it made a child in namespaces of its own (lib/contents.h) */
	__u32 _pad;
	struct prior prior; /* of the stored call, once the VFS reached its file */
	__u64 ns_before; /* in unshare: the mount namespace it may leave (lib/contents.h) */
	struct sums sums; /* in a write by name: its names' sums at the entry (lib/names.h) */
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct task_state);
} tasks SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, WW_STAT_MAX);
	__type(key, __u32);
	__type(value, __u64);
} stats SEC(".maps");

/*
 * The tree's io_uring extended-attribute changes, submitted and not yet
 * made: keyed by the address of the request's attribute name, which the
 * kernel hands to the LSM hooks when it makes the change (the LSM tier
 * refuses it there); the value is the submitting process.
 */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, __u64);
	__type(value, __u32);
} uring_xattrs SEC(".maps");

/* Count one of enum ww_stat. A global function, verified once rather than
 * at each of its many callers. */
__noinline int count(__u32 which)
{
	__u64 *v = bpf_map_lookup_elem(&stats, &which);
	if (v)
		*v += 1;
	return 0;
}

/* The one place that decides whether the current thread is ours: its
 * state, or NULL. */
static __always_inline struct task_state *tracked_state(void)
{
	struct task_state *st = bpf_task_storage_get(&tasks, bpf_get_current_task_btf(), 0, 0);

	return st && st->tracked ? st : NULL;
}

static __always_inline bool is_tracked(void)
{
	return tracked_state() != NULL;
}

/* Kill the current process; the kernel delivers it on the way back to
 * user space, after the current syscall. */
static __always_inline bool kill_current(void)
{
	if (bpf_send_signal(SIGKILL)) {
		count(WW_STAT_SIGNAL_ERR);
		return false;
	}
	count(WW_STAT_KILLED);
	return true;
}

/* Enforcement refused the current syscall: count it, once, and kill the
 * writer when asked. Returns the enum ww_action bits. */
static __always_inline __u32 refuse_current(bool kill)
{
	__u32 action = WW_ACT_BLOCKED;

	count(WW_STAT_BLOCKED);
	if (kill && kill_current())
		action |= WW_ACT_KILLED;
	return action;
}

#endif
