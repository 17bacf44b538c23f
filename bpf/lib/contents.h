/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * File contents, watched on demand.
 *
 * The filesystem witness (internal/witness) watches creates, deletes,
 * renames and attribute changes from the start; watching writes to the
 * contents of files on a whole filesystem costs every writer there, so a
 * run whose COMMAND has no privileges starts without them (user space
 * sets contents_state.lazy). It needs them only for a file that no record
 * judges: every file the tree opens for writing is judged from its
 * record, and the files COMMAND inherits are watched one by one. What is
 * left is a file that comes from outside the tree later, or a path to a
 * file that the tree makes its own: the calls after which either can
 * happen are caught here. The process that made one is paused (SIGSTOP)
 * on its way back to user space, and a record asks user space to watch
 * contents; it resumes the process once they are watched:
 *
 *   - socket(AF_UNIX), socketpair(AF_UNIX): descriptors may come through
 *     it (SCM_RIGHTS), once a process outside the tree holds it;
 *   - io_uring_setup: its requests can take files from other rings;
 *   - pidfd_getfd: a descriptor of another process;
 *   - seccomp with a listener: its supervisor can add descriptors;
 *   - unshare of a user or mount namespace, setns: mounts of its own;
 *   - a fork that made a child in namespaces of its own (proc_forked):
 *     the parent is paused, but the child runs, and may mount and write
 *     before contents are watched. Until they are (the window), a write
 *     of a process outside COMMAND's mount namespace that the kernel
 *     settles as allowed is counted apart (WW_STAT_UNWATCHED_ALLOWED),
 *     and its record, when it sends one, is marked unwatched: user space
 *     fails the run on such a write it or the kernel found allowed, since
 *     it cannot tell where such a path leads;
 *   - an exec that gains privileges, or of a 32-bit program, whose calls
 *     the programs do not decode (proc_execed, in its exec record).
 */
#ifndef WW_LIB_CONTENTS_H
#define WW_LIB_CONTENTS_H

#include "uapi.h"
#include "arch.h"
#include "record.h"
#include "paths.h"

#define AF_UNIX 1
#define SECCOMP_SET_MODE_FILTER 1
#define SECCOMP_FILTER_FLAG_NEW_LISTENER (1UL << 3)
#define CLONE_NEWNS   0x00020000
#define CLONE_NEWUSER 0x10000000

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct contents_state);
} contents SEC(".maps");

static __always_inline struct contents_state *contents_of_run(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&contents, &zero);
}

/* The run's state while contents are not watched, NULL once they are. */
static __always_inline struct contents_state *contents_lazy(void)
{
	struct contents_state *c = contents_of_run();

	return c && c->lazy ? c : NULL;
}

/* Is the current process's write made in a mount namespace other than
 * COMMAND's, during the window? */
static __always_inline bool written_unwatched(void)
{
	struct contents_state *c = contents_lazy();
	struct task_struct *t;

	if (!c || !c->window)
		return false;
	t = (struct task_struct *)bpf_get_current_task();
	return (__u64)BPF_CORE_READ(t, nsproxy, mnt_ns) != c->mnt_ns;
}

/* Do the child's namespaces differ from its creator's (the current
 * task's)? */
static __always_inline bool own_namespaces(struct task_struct *child)
{
	struct task_struct *t = (struct task_struct *)bpf_get_current_task();

	return BPF_CORE_READ(child, nsproxy, mnt_ns) != BPF_CORE_READ(t, nsproxy, mnt_ns) ||
	       BPF_CORE_READ(child, cred, user_ns) != BPF_CORE_READ(t, cred, user_ns);
}

/* A new process of the tree, before it runs (proc_forked): COMMAND's own
 * mount namespace is noted; a child made in namespaces of its own opens
 * the window, and its creator asks for contents when its clone returns. */
static __always_inline void contents_forked(struct task_struct *child, bool root)
{
	struct contents_state *c = contents_of_run();
	struct task_state *self;

	if (!c)
		return;
	if (root) {
		c->mnt_ns = (__u64)BPF_CORE_READ(child, nsproxy, mnt_ns);
		return;
	}
	if (!c->lazy || !own_namespaces(child))
		return;
	c->window = 1;
	self = tracked_state();
	if (self)
		self->ns_child = 1;
}

/* Did the exec give the task privileges: effective uid 0, or any
 * permitted capability (the effective ones can be raised up to those)?
 * kernel_cap_t is 64 bits in every layout (two __u32 before Linux 6.3). */
static __always_inline bool privileged_exec(struct task_struct *task)
{
	const struct cred *cred = BPF_CORE_READ(task, cred);
	__u64 caps = 0;

	if (BPF_CORE_READ(cred, euid.val) == 0)
		return true;
	bpf_core_read(&caps, sizeof(caps), &cred->cap_permitted);
	return caps != 0;
}

/* Is the program an ELF of 32-bit class (its first bytes, in bprm->buf)? */
static __always_inline bool compat_exec(struct linux_binprm *bprm)
{
	unsigned char id[5] = {};

	bpf_core_read(&id, sizeof(id), &bprm->buf);
	return id[0] == 0x7f && id[1] == 'E' && id[2] == 'L' && id[3] == 'F' && id[4] == 1;
}

/* Why an exec asks for contents (enum ww_contents_why), 0 when it does
 * not. */
static __always_inline __u32 contents_exec(struct task_struct *task, struct linux_binprm *bprm)
{
	if (!contents_lazy())
		return 0;
	if (compat_exec(bprm))
		return WW_WHY_COMPAT;
	return privileged_exec(task) ? WW_WHY_PRIVILEGED : 0;
}

/* Is nr one of the calls contents_exited looks at? */
static __always_inline bool contents_call(long nr)
{
	return nr == NR_socket || nr == NR_socketpair || nr == NR_io_uring_setup || nr == NR_pidfd_getfd || nr == NR_seccomp ||
	       nr == NR_unshare || nr == NR_setns || nr == NR_clone || nr == NR_clone3;
}

/*
 * Ask for contents: pause the current process and send the record. The
 * stop goes first, so that user space's SIGCONT cannot come before it; a
 * record that cannot be sent takes it back (SIGCONT drops a pending
 * stop), and its loss fails the run. taken is the file pidfd_getfd took
 * (else NULL): when it can write a regular file, the record holds it
 * (WW_SLOT_RESOLVED, its open flags in mode), and user space judges it
 * as a file opened for writing, since another thread may write through
 * it before the process stops.
 */
static __always_inline void contents_needed(void *ctx, __u32 why, struct file *taken)
{
	struct event *e = scratch_event();
	__u32 off = 0;

	if (!e) {
		count(WW_STAT_CONTENTS_STOP_ERR);
		return;
	}
	fill_hdr(e, WW_EV_CONTENTS);
	e->hdr.op = why;
	if (writes_file(taken)) {
		e->hdr.mode = BPF_CORE_READ(taken, f_flags);
		off = put_file(e, 0, WW_SLOT_RESOLVED, taken);
	}
	if (bpf_send_signal(SIGSTOP))
		count(WW_STAT_CONTENTS_STOP_ERR);
	else
		e->hdr.flags = WW_CONTENTS_STOPPED;
	if (!send(ctx, e, off) && e->hdr.flags)
		bpf_send_signal(SIGCONT);
}

/* The exit of one of contents_call's calls (args in regs, result ret). */
static __always_inline int contents_exited(void *ctx, struct pt_regs *regs, long nr, long ret)
{
	struct task_state *st;
	__u32 why = 0;

	/* A 32-bit process's calls have other numbers: it asked at exec. */
	if (ret < 0 || !contents_lazy() || compat_syscall())
		return 0;
	st = tracked_state();
	if (!st)
		return 0;
	if ((nr == NR_socket || nr == NR_socketpair) && SYSCALL_ARG1(regs) == AF_UNIX)
		why = WW_WHY_UNIX_SOCKET;
	else if (nr == NR_io_uring_setup)
		why = WW_WHY_IO_URING;
	else if (nr == NR_pidfd_getfd)
		why = WW_WHY_PIDFD_GETFD;
	else if (nr == NR_seccomp && SYSCALL_ARG1(regs) == SECCOMP_SET_MODE_FILTER &&
		 (SYSCALL_ARG2(regs) & SECCOMP_FILTER_FLAG_NEW_LISTENER))
		why = WW_WHY_SECCOMP;
	else if ((nr == NR_unshare && (SYSCALL_ARG1(regs) & (CLONE_NEWUSER | CLONE_NEWNS))) || nr == NR_setns)
		why = WW_WHY_NAMESPACE;
	else if ((nr == NR_clone || nr == NR_clone3) && st->ns_child) {
		st->ns_child = 0;
		why = WW_WHY_NAMESPACE;
	}
	if (why)
		contents_needed(ctx, why, nr == NR_pidfd_getfd ? fd_file(ret) : NULL);
	return 0;
}

#endif
