/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * File contents, watched on demand.
 *
 * The filesystem witness (internal/witness) watches creates, deletes,
 * renames and attribute changes from the start; watching writes to the
 * contents of files on a whole filesystem costs every writer there, so a
 * run outside --enforce starts without them (user space sets
 * contents_state.lazy). It needs them only for a file that no record
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
 *     the parent is paused; the child runs, and its own calls ask (a
 *     new namespace with no mount in it changes no path: lib/mounts.h);
 *   - an exec that gains privileges (the kernel's secure exec: setuid,
 *     setgid, file capabilities), or of a 32-bit program, whose calls
 *     the programs do not decode (proc_execed, in its exec record);
 *   - a privileged process (any effective capability: COMMAND as root)
 *     changing where paths lead (mount, umount2 and the new mount API,
 *     pivot_root, chroot), opening a file by its handle
 *     (open_by_handle_at) or turning on process accounting (acct,
 *     whose file the kernel writes at every exit). A mount is seen by
 *     every process of its namespace at once, and made before the call
 *     returns: its entry marks what it may change (lib/mounts.h), and
 *     opens the window for a truncate by name, whose file the record
 *     does not hold (WW_WINDOW_ALL); its exit asks for contents even
 *     when the call failed, which closes it. A process without
 *     capabilities is refused these calls, and asks nothing.
 *
 * Whether a write is one whose path may lead elsewhere than it does for
 * writewatch, with no event of the witness's to tell, is asked here too
 * (mount_bits): an open of a file whose mount is not what COMMAND's
 * namespace held at the start, while contents are not watched (counted
 * apart when the kernel settles it as allowed, WW_STAT_UNWATCHED_ALLOWED,
 * and its record marked unwatched: user space fails the run on such a
 * write it or the kernel found allowed); a truncate by name in the
 * window; a write through a shared mapping or AIO of such a file, which
 * the witness never sees. A write that lands on a filesystem in memory
 * of the tree's own namespaces is settled as allowed (lib/mounts.h).
 */
#ifndef WW_LIB_CONTENTS_H
#define WW_LIB_CONTENTS_H

#include "uapi.h"
#include "arch.h"
#include "record.h"
#include "paths.h"
#include "rows.h"
#include "mounts.h"

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

/* Set by user space (to 1) while the io_uring program (uring_submit) is
 * not attached yet: outside --enforce it loads beside COMMAND's start
 * (tracer/uring.go). A process of the tree that sets up a ring
 * meanwhile is paused at the exit of io_uring_setup, as for contents
 * (WW_WHY_IO_URING), until it is attached (uring_exited). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} uring_later SEC(".maps");

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

/* Is the current process's truncate by name one the window makes
 * unwatched: made while a privileged process changes mounts or roots? */
static __always_inline bool written_unwatched(void)
{
	struct contents_state *c = contents_lazy();

	return c && (c->window & WW_WINDOW_ALL);
}

/* mount_bits: what the mount a write lands on makes of it. */
enum {
	WM_UNWATCHED = 1, /* its path may lead elsewhere, unseen (below) */
	WM_PRIVATE   = 2, /* it lands on a filesystem in memory of the tree's own namespaces */
	WM_UNLOOKED  = 4, /* not asked yet (lib/write.h) */
};

/*
 * What the mount a write lands on makes of it (lib/mounts.h): the write
 * of args a that returned ret, through the file at addr (0: a write by
 * name, which has no file to tell), is unwatched when its path may lead
 * elsewhere with no event of the filesystem witness's to tell: an open
 * that succeeded of a file through a mount the run made or of another
 * namespace, while the witness does not see changes to file contents; a
 * truncate by name (or an open with no file) in the window; a write
 * through a shared mapping or AIO of such a file, which it never sees.
 * first: asked before the marks may settle the write, when only a write
 * that may be unwatched need be looked at (else WM_UNLOOKED). Global,
 * so verified once.
 */
__noinline int mount_bits(struct args *a, long ret, __u64 addr, int first)
{
	struct contents_state *c = contents_of_run();
	bool open;
	int class;

	if (!a || ret < 0)
		return 0;
	open = OPENS(a->op);
	/* Asked first, before the marks may settle the write: only when
	 * the answer may make it unwatched. */
	if (first && addr && !UNNOTIFIED(a->op) && !(c && c->lazy))
		return WM_UNLOOKED;
	if (!addr)
		return MODIFIES(a->op) && written_unwatched() ? WM_UNWATCHED : 0;
	class = mount_class(KREAD_WORD(&((struct file *)addr)->f_path.mnt), c ? c->mnt_ns : 0, c ? c->root : 0);
	if (class == MNT_PRIVATE)
		return WM_PRIVATE;
	if (class != MNT_UNSETTLED)
		return 0;
	if (UNNOTIFIED(a->op) || (open && c && c->lazy))
		return WM_UNWATCHED;
	return 0;
}

/* Does the current task hold any effective capability (as root does)?
 * kernel_cap_t is 64 bits in every layout (two __u32 before Linux 6.3). */
static __always_inline bool capable_now(void)
{
	struct task_struct *t = (struct task_struct *)bpf_get_current_task();
	const struct cred *cred = BPF_CORE_READ(t, cred);
	__u64 caps = 0;

	bpf_core_read(&caps, sizeof(caps), &cred->cap_effective);
	return caps != 0;
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
 * mount and user namespaces are noted; a new mount namespace the child
 * got is the tree's (lib/mounts.h), and its creator asks for contents
 * when its clone returns. */
static __always_inline void contents_forked(struct task_struct *child, bool root)
{
	struct contents_state *c = contents_of_run();
	struct task_struct *t = (struct task_struct *)bpf_get_current_task();
	struct task_state *self;

	if (!c)
		return;
	if (root) {
		c->mnt_ns = (__u64)BPF_CORE_READ(child, nsproxy, mnt_ns);
		c->user_ns = (__u64)BPF_CORE_READ(child, cred, user_ns);
		c->root = (__u64)BPF_CORE_READ(child, fs, root.dentry);
		return;
	}
	tree_ns_made((unsigned long)BPF_CORE_READ(child, nsproxy, mnt_ns),
		     (unsigned long)BPF_CORE_READ(t, nsproxy, mnt_ns), c->mnt_ns);
	if (!c->lazy || !own_namespaces(child))
		return;
	self = tracked_state();
	if (self)
		self->ns_child = 1;
}

/* Did the exec give the task privileges it did not have (setuid,
 * setgid, file capabilities)? The kernel's own answer, the one behind
 * AT_SECURE; a root process's exec of a plain program gains nothing. */
static __always_inline bool privileged_exec(struct linux_binprm *bprm)
{
	return BPF_CORE_READ_BITFIELD_PROBED(bprm, secureexec);
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
	return privileged_exec(bprm) ? WW_WHY_PRIVILEGED : 0;
}

/* The calls contents_exited looks at, as X(name) for NR_name. */
#define CONTENTS_CALLS(X) X(socket) X(socketpair) X(io_uring_setup) X(io_uring_enter) X(pidfd_getfd) \
	X(seccomp) X(unshare) X(setns) X(clone) X(clone3)

/* The privileged calls, looked at on entry (contents_entered) and exit
 * (contents_privileged). */
#define PRIVILEGED_CALLS(X) X(mount) X(umount2) X(move_mount) X(open_tree) X(open_tree_attr) X(fsmount) \
	X(mount_setattr) X(pivot_root) X(chroot) X(open_by_handle_at) X(acct)

/*
 * Ask for contents: pause the current process and send the record. The
 * stop goes first, so that user space's SIGCONT cannot come before it; a
 * record that cannot be sent takes it back (SIGCONT drops a pending
 * stop), and its loss fails the run. True when the process is paused
 * and the record sent. taken is the file pidfd_getfd or
 * open_by_handle_at took (else NULL): when it can write a regular file,
 * the record holds it (WW_SLOT_RESOLVED, its open flags in mode), and
 * user space judges it as a file opened for writing, since another
 * thread may write through it before the process stops.
 */
static __always_inline bool contents_needed(__u32 why, struct file *taken)
{
	struct event *e = scratch_event();
	__u32 off = 0;

	if (!e) {
		count(WW_STAT_CONTENTS_STOP_ERR);
		return false;
	}
	fill_hdr(e, WW_EV_CONTENTS);
	e->hdr.op = why;
	if (writes_file(taken)) {
		e->hdr.mode = BPF_CORE_READ(taken, f_flags);
		off = put_file(e, 0, WW_SLOT_RESOLVED, (__u64)taken);
	}
	if (bpf_send_signal(SIGSTOP))
		count(WW_STAT_CONTENTS_STOP_ERR);
	else
		e->hdr.flags = WW_CONTENTS_STOPPED;
	if (!send(e, off)) {
		if (e->hdr.flags)
			bpf_send_signal(SIGCONT);
		return false;
	}
	return e->hdr.flags;
}

/* The entry of a privileged call (nr): a process that holds
 * capabilities may be about to change where paths lead, for every
 * process of its mount namespace at once: that namespace changes
 * (views_changed for COMMAND's, else lib/mounts.h's tree_ns), and with
 * capabilities in COMMAND's user namespace, whose mounts may propagate
 * to the namespaces that share them, COMMAND's and every one the tree
 * made (copies_changed). open_by_handle_at's file is judged as an
 * open, and acct's writes are no opens: they change nothing here. */
static __always_inline int contents_entered(long nr)
{
	struct contents_state *c;
	struct task_struct *t;
	unsigned long ns;

	if (nr == NR_open_by_handle_at || nr == NR_acct)
		return 0;
	if (!capable_now() || compat_syscall() || !tracked_state())
		return 0;
	c = contents_of_run();
	if (!c)
		return 0;
	t = current_task();
	ns = (unsigned long)t->nsproxy->mnt_ns; /* direct loads (lib/kread.h) */
	if (ns == c->mnt_ns)
		views_changed = 1;
	else
		tree_ns_changed(ns);
	if ((__u64)BPF_CORE_READ(t, cred, user_ns) == c->user_ns) {
		views_changed = 1;
		copies_changed = 1;
	}
	__u32 zero = 0, *n = bpf_map_lookup_elem(&mount_calls, &zero);
	if (n)
		__sync_fetch_and_add(n, 1);
	if (c->lazy)
		__sync_fetch_and_or(&c->window, WW_WINDOW_ALL);
	return 0;
}

/* The entry of unshare: the mount namespace it may leave, for its exit
 * (contents_unshared). */
static __always_inline int contents_unsharing(void)
{
	struct task_state *st = tracked_state();

	if (st)
		st->ns_before = (__u64)current_task()->nsproxy->mnt_ns; /* direct loads (lib/kread.h) */
	return 0;
}

/* The exit of unshare: a new mount namespace is the tree's, a copy of the
 * one it left (lib/mounts.h). */
static __always_inline void contents_unshared(struct task_state *st)
{
	struct contents_state *c = contents_of_run();

	if (c && st->ns_before)
		tree_ns_made((unsigned long)current_task()->nsproxy->mnt_ns, st->ns_before, c->mnt_ns);
	st->ns_before = 0;
}

/* The exit of a privileged call (nr, its result ret): one that changes
 * mounts or roots asks whatever it returned, since its entry opened the
 * window; open_by_handle_at and acct ask when they succeeded. */
static __always_inline int contents_privileged(long nr, long ret)
{
	__u32 why = WW_WHY_MOUNT;

	if ((nr == NR_open_by_handle_at || nr == NR_acct) && ret < 0)
		return 0;
	if (!contents_lazy() || !capable_now() || compat_syscall() || !tracked_state())
		return 0;
	if (nr == NR_chroot)
		why = WW_WHY_CHROOT;
	else if (nr == NR_open_by_handle_at)
		why = WW_WHY_HANDLE;
	else if (nr == NR_acct)
		why = WW_WHY_ACCT;
	/* The file it opened, like pidfd_getfd's, is judged as an open. */
	contents_needed(why, nr == NR_open_by_handle_at && ret >= 0 ? fd_file(ret) : NULL);
	return 0;
}

/* Is the io_uring program not attached yet (uring_later)? */
static __always_inline bool uring_unattached(void)
{
	__u32 zero = 0, *later = bpf_map_lookup_elem(&uring_later, &zero);

	return later && *later;
}

/* The exit of io_uring_setup or io_uring_enter (nr) while the io_uring
 * program is not attached: a process of the tree that set up a ring is
 * paused until it is (it asks for contents too, when they are watched
 * later). Requests submitted meanwhile through a ring from elsewhere
 * (inherited, or passed over a socket), or by a process that could not
 * be paused, go unseen: they are counted, and make the run incomplete. */
static __always_inline int uring_exited(long nr, long ret)
{
	if (ret < 0 || !tracked_state())
		return 0;
	if (nr == NR_io_uring_enter) {
		if (ret > 0)
			count(WW_STAT_URING_UNWATCHED);
		return 0;
	}
	if (!contents_needed(WW_WHY_IO_URING, NULL))
		count(WW_STAT_URING_UNWATCHED);
	return 0;
}

/* The exit of one of CONTENTS_CALLS (args in regs, result ret). */
static __always_inline int contents_exited(struct pt_regs *regs, long nr, long ret)
{
	struct task_state *st;
	__u32 why = 0;

	/* io_uring's calls have the same numbers for 32-bit processes. */
	if ((nr == NR_io_uring_setup || nr == NR_io_uring_enter) && uring_unattached())
		return uring_exited(nr, ret);
	/* A 32-bit process's calls have other numbers: it asked at exec. */
	if (compat_syscall())
		return 0;
	st = tracked_state();
	if (!st)
		return 0;
	if (nr == NR_unshare && ret == 0)
		contents_unshared(st);
	if (ret < 0 || !contents_lazy())
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
		contents_needed(why, nr == NR_pidfd_getfd ? fd_file(ret) : NULL);
	return 0;
}

#endif
