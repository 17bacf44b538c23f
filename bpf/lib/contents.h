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
 *     the parent is paused, but the child runs, and may mount and write
 *     before contents are watched. Until they are (the window), an open
 *     or truncate of a process outside COMMAND's mount namespace that
 *     the kernel settles as allowed is counted apart
 *     (WW_STAT_UNWATCHED_ALLOWED), and its record, when it sends one, is
 *     marked unwatched: user space fails the run on such a write it or
 *     the kernel found allowed, since it cannot tell where such a path
 *     leads (a failed call, or one the filesystem witness sees from the
 *     start, such as an unlink, is no such write);
 *   - an exec that gains privileges (the kernel's secure exec: setuid,
 *     setgid, file capabilities), or of a 32-bit program, whose calls
 *     the programs do not decode (proc_execed, in its exec record);
 *   - a privileged process (any effective capability: COMMAND as root)
 *     changing where paths lead (mount and the new mount API,
 *     pivot_root, chroot), opening a file by its handle
 *     (open_by_handle_at) or turning on process accounting (acct,
 *     whose file the kernel writes at every exit). A mount is seen by
 *     every process of its namespace at once, and made before the call
 *     returns: the window opens at the entry of a call that changes
 *     mounts or roots, for every write (WW_WINDOW_ALL), and its exit
 *     asks for contents even when the call failed, which closes it. A
 *     privileged child made in new namespaces opens it for every write
 *     too: its mounts may propagate back to COMMAND's namespace. A
 *     process without capabilities is refused these calls, and asks
 *     nothing.
 *
 * Whether a write is one whose path may lead elsewhere than it does for
 * writewatch, with no event of the witness's to tell (made in the
 * window, of a file of another mount namespace, or through a shared
 * mapping or AIO once the writer's view may differ), is asked here too
 * (unwatched_write).
 */
#ifndef WW_LIB_CONTENTS_H
#define WW_LIB_CONTENTS_H

#include "uapi.h"
#include "arch.h"
#include "record.h"
#include "paths.h"
#include "rows.h"

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

/* Set, and never cleared, once a privileged process of the tree (any
 * effective capability) in COMMAND's mount namespace has called one of
 * the calls that change where paths lead there: a mount, chroot,
 * pivot_root... From then on a path the tree names may lead elsewhere
 * than it does for writewatch, and a write the filesystem witness never
 * hears of (a shared mapping, Linux AIO) cannot be judged by that path
 * (view_changed, below). A process in a mount namespace of its own
 * changes its own view, which view_changed tells by the namespace. */
volatile __u32 views_changed;

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

/* Is the current process's write one the window makes unwatched: made
 * while it is open for every write, or in a mount namespace other than
 * COMMAND's? */
static __always_inline bool written_unwatched(void)
{
	struct contents_state *c = contents_lazy();
	struct task_struct *t;

	if (!c || !c->window)
		return false;
	if (c->window & WW_WINDOW_ALL)
		return true;
	t = current_task();
	return (__u64)t->nsproxy->mnt_ns != c->mnt_ns; /* direct loads (lib/kread.h) */
}

/* The mount namespace of f's mount, as an address to compare, or 0 for
 * an internal mount (pipes, memfd), which belongs to none. */
static __always_inline unsigned long file_mnt_ns(struct file *f)
{
	struct mount *m = real_mount(KREAD(struct file, f, f_path.mnt));
	unsigned long ns = (unsigned long)KREAD(struct mount, m, mnt_ns);

	return internal_ns(ns) ? 0 : ns;
}

/* Is f's mount one of another mount namespace than the current task's
 * (a file reached through /proc/PID/root of a process outside the tree,
 * say, or a detached mount)? Its path, walked up to that namespace's
 * root, says nothing of where the file lies in ours. */
static __always_inline bool foreign_file(struct file *f)
{
	struct task_struct *t = current_task();
	unsigned long ns;

	if (!f)
		return false;
	ns = file_mnt_ns(f);
	/* The task's own namespace: direct loads (lib/kread.h). */
	return ns && ns != (unsigned long)t->nsproxy->mnt_ns;
}

/* May the path by which the current process reaches f lead elsewhere
 * than it does for writewatch: the process is in another mount
 * namespace than COMMAND's, f's mount is another namespace's, or a
 * privileged process of the tree changed where paths lead
 * (views_changed)? */
static __always_inline bool view_changed(struct file *f)
{
	struct contents_state *c = contents_of_run();
	struct task_struct *t = current_task();
	unsigned long ns;

	if (views_changed || !c || (__u64)t->nsproxy->mnt_ns != c->mnt_ns)
		return true;
	if (!f)
		return false;
	ns = file_mnt_ns(f);
	return ns && ns != c->mnt_ns;
}

/* Is the write one whose path may lead elsewhere with no event of the
 * filesystem witness's to tell: an open or truncate that succeeded,
 * made in the window, or of a file of another mount namespace, while
 * the witness does not see changes to file contents; or a write through
 * a shared mapping or AIO, which it never sees, when the writer's view
 * of paths may not be writewatch's? */
static __always_inline bool unwatched_write(struct args *a, long ret, struct file *f)
{
	if (ret < 0)
		return false;
	if (UNNOTIFIED(a->op))
		return view_changed(f);
	return MODIFIES(a->op) &&
	       (written_unwatched() || (contents_lazy() && foreign_file(f)));
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
	__sync_fetch_and_or(&c->window, capable_now() ? WW_WINDOW_ALL : WW_WINDOW_NS);
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
#define PRIVILEGED_CALLS(X) X(mount) X(move_mount) X(open_tree) X(open_tree_attr) X(fsmount) \
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
 * process of its mount namespace at once. open_by_handle_at's file is
 * judged as an open, and acct's writes are no opens: they open no
 * window. */
static __always_inline int contents_entered(long nr)
{
	struct contents_state *c;

	if (nr == NR_open_by_handle_at || nr == NR_acct)
		return 0;
	if (!capable_now() || compat_syscall() || !tracked_state())
		return 0;
	c = contents_of_run();
	if (c && (__u64)current_task()->nsproxy->mnt_ns == c->mnt_ns) /* direct loads (lib/kread.h) */
		views_changed = 1;
	c = contents_lazy();
	if (c)
		__sync_fetch_and_or(&c->window, WW_WINDOW_ALL);
	return 0;
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
		contents_needed(why, nr == NR_pidfd_getfd ? fd_file(ret) : NULL);
	return 0;
}

#endif
