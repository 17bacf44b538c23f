/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The traced process tree: which processes belong to it, and the records
 * of its forks, execs and exits.
 */
#ifndef WW_LIB_PROC_H
#define WW_LIB_PROC_H

#include "uapi.h"
#include "record.h"
#include "goattr.h"
#include "arch.h"
#include "contents.h"

struct proc {
	__u32 parent; /* tgid of the process of the tree that made this one */
	__u32 epoch;  /* test-boundary announcements it made (docs/protocol.md) */
};

/* Processes of the traced tree, keyed by tgid. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 32768);
	__type(key, __u32);
	__type(value, struct proc);
} procs SEC(".maps");

/*
 * Key 0 holds writewatch's own tgid in its PID namespace while it starts
 * COMMAND, 0 otherwise: the process it forks then is the tree's root.
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} launcher SEC(".maps");

/* Is the current process in the tree? tracked_state's question (task.h)
 * for programs that cannot reach task storage (raw tracepoints). */
static __always_inline bool proc_tracked(void)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;

	return bpf_map_lookup_elem(&procs, &tgid) != NULL;
}

/* Is the current process writewatch, starting COMMAND right now? */
static __always_inline bool is_launcher(void)
{
	__u32 zero = 0;
	__u32 *self = bpf_map_lookup_elem(&launcher, &zero);

	return self && *self && *self == ns_tgid();
}

/*
 * A new thread or process: it belongs to the tree when its creator does,
 * or when writewatch itself is starting COMMAND. Runs before the child
 * runs a single instruction.
 */
static __always_inline int proc_forked(struct task_struct *child)
{
	__u32 parent = bpf_get_current_pid_tgid() >> 32;
	__u32 tgid = child->tgid;
	struct proc p = { .parent = parent };
	struct task_state *st;
	bool root = false;
	struct event *e;

	if (!is_tracked()) {
		if (tgid == parent || !is_launcher())
			return 0;
		root = true;
	}
	st = bpf_task_storage_get(&tasks, child, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!st) {
		count(WW_STAT_PROC_FULL);
		return 0;
	}
	st->tracked = 1;
	st->pending = 0;
	st->ns_child = 0;
	st->ns_before = 0;
	if (tgid == parent)
		return 0; /* a new thread of a process of the tree */
	contents_forked(child, root);
	if (bpf_map_update_elem(&procs, &tgid, &p, BPF_ANY)) {
		count(WW_STAT_PROC_FULL);
		return 0;
	}
	e = scratch_event();
	if (!e)
		return 0;
	fill_hdr(e, WW_EV_FORK);
	e->hdr.tgid = tgid;
	e->hdr.pid = child->pid;
	e->hdr.ppid = parent;
	/* Known here, at the fork: a process that exits before it makes a
	 * record of its own (writing as it dies: an accounting record, a
	 * core) is still known by the pid the witness reports. */
	e->hdr.ns_tgid = ns_nr(BPF_CORE_READ(child, thread_pid));
	e->hdr.flags = root;
	struct task_state *self = tracked_state();
	if (self && !root)
		e->hdr.test = self->fork_test;
	send(e, 0);
	return 0;
}

/* Does the file executed (data[0..n), NUL included) end in ".test", the
 * name go test gives a package's test binary? */
static __always_inline bool is_go_test_name(struct event *e, long n)
{
	const char want[] = ".test";
	__u32 start;

	if (n < 7)
		return false;
	start = n - 6;
	for (int i = 0; i < 5; i++)
		if (e->data[at(start + i)] != want[i])
			return false;
	return true;
}

/* A Go test binary executed by the tree: WW_EXEC_PREPARED when its
 * file's uprobes are attached (gofiles), its layout now the process's
 * (goprocs), and e's ino and dev name the file; else WW_EXEC_STOPPED,
 * to be paused until user space has attached them. A goprocs entry
 * that cannot be made pauses it too: nothing is lost. */
static __always_inline __u32 go_test_exec(struct event *e, struct linux_binprm *bprm)
{
	struct file_key k = {};
	__u32 tgid = e->hdr.tgid;
	struct goproc *gp;

	file_identity((__u64)BPF_CORE_READ(bprm, file), &k);
	k.gen = 0;
	gp = bpf_map_lookup_elem(&gofiles, &k);

	if (!gp || bpf_map_update_elem(&goprocs, &tgid, gp, BPF_ANY))
		return WW_EXEC_STOPPED;
	e->hdr.ino = k.ino;
	e->hdr.dev = k.dev;
	return WW_EXEC_PREPARED;
}

static __always_inline int proc_execed(struct task_struct *task, struct linux_binprm *bprm)
{
	unsigned long arg_start, arg_end;
	struct event *e;
	__u32 off = 0;
	long n;

	if (!is_tracked())
		return 0;
	e = scratch_event();
	if (!e)
		return 0;
	fill_hdr(e, WW_EV_EXEC);

	n = bpf_probe_read_kernel_str(&e->data[0], PATH_SLOT, BPF_CORE_READ(bprm, filename));
	if (n > 0) {
		mark(e, WW_SLOT_PATH, 0, n, false);
		off = n;
	}
	/* Paused for user space: a Go test binary, to attach its uprobes; a
	 * program that asks for contents (e->hdr.op says why), until they
	 * are watched. */
	e->hdr.op = contents_exec(task, bprm);
	if (e->hdr.op)
		e->hdr.flags = WW_EXEC_CONTENTS;
	if (follow_go_tests && n > 0 && is_go_test_name(e, n))
		e->hdr.flags |= go_test_exec(e, bprm);
	if (e->hdr.flags & WW_EXEC_PAUSED && bpf_send_signal(SIGSTOP)) {
		count(e->hdr.op ? WW_STAT_CONTENTS_STOP_ERR : WW_STAT_STOP_ERR);
		e->hdr.flags &= ~WW_EXEC_PAUSED;
	}

	arg_start = BPF_CORE_READ(task, mm, arg_start);
	arg_end = BPF_CORE_READ(task, mm, arg_end);
	if (arg_end > arg_start) {
		__u64 len = arg_end - arg_start;
		bool cut = len > ARGS_SLOT;

		if (cut)
			len = ARGS_SLOT;
		off &= PATH_SLOT - 1;
		if (bpf_probe_read_user(&e->data[off], len & (ARGS_SLOT * 2 - 1), (void *)arg_start) == 0) {
			mark(e, WW_SLOT_DIR, off, off + len, cut);
			off += len;
		}
	}
	/* Lost, it would leave the process paused for good. */
	if (!send(e, off) && e->hdr.flags & WW_EXEC_PAUSED)
		bpf_send_signal(SIGCONT);
	return 0;
}

/* Is comm (a task's, NUL-padded) "link", the Go linker's name? */
static __always_inline bool is_linker(const char *comm)
{
	return comm[0] == 'l' && comm[1] == 'i' && comm[2] == 'n' && comm[3] == 'k' && comm[4] == 0;
}

static __always_inline int proc_exited(struct task_struct *task)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	struct event *e;

	if (!is_tracked())
		return 0;
	/* Threads leave one by one; the process is gone with the last. */
	if (BPF_CORE_READ(task, signal, live.counter) != 0)
		return 0;
	bool go_test = bpf_map_lookup_elem(&goprocs, &tgid) != NULL;
	bpf_map_delete_elem(&procs, &tgid);
	bpf_map_delete_elem(&goprocs, &tgid);
	e = scratch_event();
	if (!e)
		return 0;
	fill_hdr(e, WW_EV_EXIT);
	e->hdr.ret = BPF_CORE_READ(task, exit_code);
	if (go_test)
		e->hdr.flags = WW_EXIT_GO_TEST;
	else if (is_linker(e->hdr.comm))
		e->hdr.flags = WW_EXIT_LINKER;
	send(e, 0);
	return 0;
}

/* The ptrace requests that make the caller another task's tracer. */
#define PTRACE_ATTACH 16
#define PTRACE_SEIZE  0x4206

/*
 * The exit of ptrace: a process of the tree that became the tracer of a
 * process outside it (PTRACE_ATTACH, PTRACE_SEIZE) can make that process
 * write (inject the calls, or change its memory), and that process's
 * writes make no records: the run cannot see everything, so it is
 * counted. The new tracee is the first entry of the caller's list of
 * tracees, its ptrace_entry linked at the head of current->ptraced; its
 * tgid is the kernel's own, so a tree inside a PID namespace is judged
 * alike.
 */
static __always_inline int proc_ptraced(long request, long ret)
{
	unsigned long cur, head, first;
	__u32 tgid;

	if (ret != 0 || (request != PTRACE_ATTACH && request != PTRACE_SEIZE))
		return 0;
	if (!is_tracked() || compat_syscall())
		return 0;
	cur = bpf_get_current_task();
	head = cur + bpf_core_field_offset(struct task_struct, ptraced);
	first = (unsigned long)BPF_CORE_READ((struct task_struct *)cur, ptraced.next);
	if (!first || first == head)
		return 0;
	tgid = BPF_CORE_READ((struct task_struct *)(first - bpf_core_field_offset(struct task_struct, ptrace_entry)), tgid);
	if (!bpf_map_lookup_elem(&procs, &tgid))
		count(WW_STAT_OUTSIDE_TRACED);
	return 0;
}

/* The calling task's PID namespace, in which the pids it passes are
 * read: the last of its struct pid's numbers (task_active_pid_ns). */
static __always_inline struct pid_namespace *own_pid_ns(void)
{
	struct pid *own = BPF_CORE_READ((struct task_struct *)bpf_get_current_task(), thread_pid);
	unsigned int level = BPF_CORE_READ(own, level);
	struct pid_namespace *ns = NULL;

	bpf_probe_read_kernel(&ns, sizeof(ns), (void *)own + bpf_core_field_offset(struct pid, numbers) +
				(level & 63) * bpf_core_type_size(struct upid) + bpf_core_field_offset(struct upid, ns));
	return ns;
}

/* The xarray's internal entries (include/linux/xarray.h): a pointer to a
 * node is tagged 2 and above 4096; a node has 64 slots. */
#define XA_CHUNK_SHIFT 6
#define XA_NODE_DEPTH  8 /* pid_max is at most 2^22: 4 levels */

/*
 * The process (its tgid, the kernel's own) whose thread nr is in the PID
 * namespace ns, 0 when there is none: what find_task_by_pid_ns finds,
 * walking the namespace's idr of struct pid, a radix tree, from its head
 * as idr_find does, and taking the pid's task.
 */
static __always_inline __u32 tgid_in_ns(struct pid_namespace *ns, __u32 nr)
{
	unsigned long index = nr - BPF_CORE_READ(ns, idr.idr_base);
	unsigned long entry = (unsigned long)BPF_CORE_READ(ns, idr.idr_rt.xa_head);
	unsigned long slots = bpf_core_field_offset(struct xa_node, slots);
	struct hlist_node *first;
	int depth;

	for (depth = 0; depth < XA_NODE_DEPTH; depth++) {
		struct xa_node *node;
		unsigned char shift;

		if ((entry & 3) != 2 || entry <= 4096)
			break;
		node = (struct xa_node *)(entry - 2);
		shift = BPF_CORE_READ(node, shift);
		if (depth == 0 && (index >> shift) >> XA_CHUNK_SHIFT)
			return 0;
		entry = 0;
		bpf_probe_read_kernel(&entry, sizeof(entry),
				      (void *)node + slots + ((index >> shift) & 63) * sizeof(void *));
	}
	if ((depth == 0 && index != 0) || !entry || (entry & 3))
		return 0;
	first = BPF_CORE_READ((struct pid *)entry, tasks[PIDTYPE_PID].first);
	if (!first)
		return 0;
	return BPF_CORE_READ((struct task_struct *)((void *)first - bpf_core_field_offset(struct task_struct, pid_links)), tgid);
}

/*
 * The exit of process_vm_writev: a process of the tree that wrote into
 * the memory of a process outside it can make that process write
 * anything (its code, its return addresses), as a ptrace tracer can:
 * counted alike. The pid it named is read in its own PID namespace, as
 * the kernel read it. Writing into a process of the tree is harmless,
 * that process's writes being seen; one that left the tree between the
 * call and its exit is counted as outside. A call that wrote no byte is
 * not counted.
 */
static __always_inline int proc_vm_written(long nr, long ret)
{
	__u32 tgid;

	if (ret <= 0 || !is_tracked() || compat_syscall())
		return 0;
	tgid = tgid_in_ns(own_pid_ns(), nr);
	if (!tgid || !bpf_map_lookup_elem(&procs, &tgid))
		count(WW_STAT_OUTSIDE_TRACED);
	return 0;
}

#endif
