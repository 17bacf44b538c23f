/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The record of one write: built from the stored arguments and the
 * syscall's result, unless the kernel can tell that the write is allowed
 * or that it repeats one already sent.
 */
#ifndef WW_LIB_WRITE_H
#define WW_LIB_WRITE_H

#include "arch.h"
#include "uapi.h"
#include "paths.h"
#include "enforce.h"
#include "goattr.h"
#include "proc.h"
#include "reads.h"

/* Repeats of sent writes (see struct repeat_key): how many more times. A
 * plain hash, so no count is ever evicted; when it is full, repeats are
 * sent as records. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, struct repeat_key);
	__type(value, __u64);
} repeats SEC(".maps");

#define OR_OP(name) || op == WW_OP_##name

/* The current syscall's registers, as sys_enter and sys_exit see them
 * (the task's user registers), for a global function, which cannot be
 * handed the kernel's pointer. */
static __always_inline struct pt_regs *syscall_regs(void)
{
	return (struct pt_regs *)bpf_task_pt_regs(bpf_get_current_task_btf());
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

/* Does op write a file's contents with no event of the filesystem
 * witness's (a shared mapping, Linux AIO)? It hears of such a write at
 * the file's last close at best, which may come after the run, or from
 * a process outside the tree (ops.Unnotified). */
static __always_inline bool unnotified(__u32 op)
{
	return false WW_UNNOTIFIED_OPS(OR_OP);
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
 * filesystem witness's to tell (lib/contents.h): an open or truncate
 * that succeeded, made in the window, or of a file of another mount
 * namespace, while the witness does not see changes to file contents;
 * or a write through a shared mapping or AIO, which it never sees, when
 * the writer's view of paths may not be writewatch's? */
static __always_inline bool unwatched_write(struct args *a, long ret, struct file *f)
{
	if (ret < 0)
		return false;
	if (unnotified(a->op))
		return view_changed(f);
	return (a->op == WW_OP_OPEN || a->op == WW_OP_CREAT || a->op == WW_OP_TRUNCATE) &&
	       (written_unwatched() || (contents_lazy() && foreign_file(f)));
}

/* A write the kernel found allowed: counted, and counted apart when the
 * window made it unwatched, where an allowed path may lead elsewhere. */
static __always_inline void settled_allowed(bool unwatched)
{
	count(WW_STAT_ALLOWED);
	if (unwatched)
		count(WW_STAT_UNWATCHED_ALLOWED);
}

/* Does op change a file's metadata (ops.Metadata)? */
static __always_inline bool is_metadata(__u32 op)
{
	return false WW_METADATA_OPS(OR_OP);
}

/*
 * Does the call follow a symlink in the last component of its path, so
 * that the name says nothing of the file it writes? chmod and the like
 * (WW_META_FOLLOW), truncate, and an open unless O_NOFOLLOW or
 * O_CREAT|O_EXCL (one that succeeded is judged by the file it opened;
 * this is for one that failed, and for io_uring's).
 */
static __always_inline bool follows_last(struct args *a)
{
	if (is_metadata(a->op))
		return a->flags & WW_META_FOLLOW;
	if (a->op == WW_OP_TRUNCATE)
		return true;
	if (a->op != WW_OP_OPEN && a->op != WW_OP_CREAT)
		return false;
	return !(a->flags & O_NOFOLLOW) && (a->flags & (O_CREAT | O_EXCL)) != (O_CREAT | O_EXCL);
}

struct scan {
	__u32 start;
	__u32 len;
	bool slash;
};

static long scan_step(__u32 i, void *ctx)
{
	struct scan *s = ctx;
	struct event *e;

	if (i >= s->len)
		return 1;
	e = scratch_event();
	if (!e || e->data[at(s->start + i)] == '/') {
		s->slash = true;
		return 1;
	}
	return 0;
}

/* Is the string in data[start..start+len) (NUL included) one plain name,
 * so that it names an entry right inside its start directory? Global, so
 * verified once. */
__noinline int plain_name(struct event *e, __u32 start, __u32 len)
{
	struct scan s = { .start = start, .len = len - 1 };
	char c0, c1, c2;

	if (!e || len < 2 || len > NAME_SLOT)
		return false;
	c0 = e->data[at(start)];
	c1 = e->data[at(start + 1)];
	c2 = len > 2 ? e->data[at(start + 2)] : 0;
	if (c0 == '.' && (c1 == 0 || (c1 == '.' && c2 == 0)))
		return false;
	bpf_loop(NAME_SLOT, scan_step, &s, 0);
	return !s.slash;
}

/*
 * Can the kernel tell the write is allowed? Only when every path it
 * touches was walked and met an allowed mark and no deny mark: the file a
 * successful open opened, or a plain name right inside a walked
 * directory. Everything else goes to user space, which judges by path.
 */
static __always_inline bool allowed_here(struct event *e, struct args *a)
{
	__u16 clean = e->hdr.clean;

	if (!use_marks || e->hdr.truncated)
		return false;
	/* Judged by the file behind it (see emit_write); a link's new name
	 * is judged too, in user space. */
	if (e->hdr.present & (1 << WW_SLOT_RESOLVED))
		return a->op != WW_OP_LINK && (clean & (1 << WW_SLOT_RESOLVED));
	/* The name may be a symlink to anywhere: user space follows it. */
	if (follows_last(a))
		return false;
	if (!(clean & (1 << WW_SLOT_DIR)) || !plain_name(e, 0, e->hdr.len[WW_SLOT_PATH]))
		return false;
	if (!a->path2)
		return true;
	return (clean & (1 << WW_SLOT_DIR2)) &&
	       plain_name(e, e->hdr.len[WW_SLOT_PATH] + e->hdr.len[WW_SLOT_DIR],
			  e->hdr.len[WW_SLOT_PATH2]);
}

/* Is the path slot a test-boundary announcement (docs/protocol.md)?
 * Global, so verified once. */
static const char marker_prefix[] = "/dev/null/.writewatch/";

__noinline int is_marker(struct event *e)
{
	if (!e || e->hdr.len[WW_SLOT_PATH] < sizeof(marker_prefix))
		return false;
	return !bpf_strncmp(e->data, sizeof(marker_prefix) - 1, marker_prefix);
}

#define FMODE_CREATED (1u << 20) /* include/linux/fs.h: the open created the file */
#define AT_SYMLINK_FOLLOW 0x400

/*
 * The descriptor of the process's own whose file the call acts on
 * through the name it passed (data[0..len) of the record), or -1: a
 * metadata change that follows /dev/stdout, /proc/self/fd/N and the
 * like; a hard link of such a name with AT_SYMLINK_FOLLOW, or of ""
 * with AT_EMPTY_PATH (dfd's file). A file with no name of its own (an
 * O_TMPFILE, its dentry unhashed) is no other file than the new link:
 * -1. The empty name may not be readable at the exit (Linux 6.12 does
 * not read it); with AT_EMPTY_PATH, an unread name and dfd's file not a
 * directory say the same: a name relative to a file fails, and a
 * directory is never linked. Global, so verified once.
 */
__noinline int held_fd(__u32 op, __u32 flags, int dfd, __u32 len)
{
	struct file *f;
	int fd;

	if (op != WW_OP_LINK)
		return is_metadata(op) && (flags & WW_META_FOLLOW) ? record_fd_link(len) : -1;
	if ((flags & AT_EMPTY_PATH) && len <= 1)
		fd = dfd;
	else if (flags & AT_SYMLINK_FOLLOW)
		fd = record_fd_link(len);
	else
		return -1;
	f = fd_file(fd);
	if (!f || !BPF_CORE_READ(f, f_path.dentry, d_hash.pprev) ||
	    (BPF_CORE_READ(f, f_inode, i_mode) & S_IFMT_BITS) == S_IFDIR_BITS)
		return -1;
	return fd;
}

#define UTIME_OMIT ((1L << 30) - 2)

/* Does the current call, a change of times, leave exactly one of the two
 * as it is (utimensat with UTIME_OMIT)? The filesystem witness hears of
 * that as a modification or an access, not as an attribute change.
 * utime, utimes and futimesat set both. Read at the exit, as the record
 * is sent: the times are still in the caller's memory. */
static __always_inline bool one_time_alone(void)
{
	struct pt_regs *regs = syscall_regs();
	struct __kernel_timespec ts[2];
	__u64 times;

	if (SYSCALL_NR(regs) != NR_utimensat)
		return false;
	times = SYSCALL_ARG3(regs);
	if (!times || bpf_probe_read_user(ts, sizeof(ts), (const void *)times))
		return false;
	return (ts[0].tv_nsec == UTIME_OMIT) != (ts[1].tv_nsec == UTIME_OMIT);
}

/*
 * Pause the process (SIGSTOP) as its record e is sent, when user space
 * must follow the record's path after the call to find the file it
 * changed, and the filesystem witness may not see the change: a
 * truncate, a change of one of a file's times through a symlink (both
 * times are an attribute change, which the witness hears of), a hard
 * link with AT_SYMLINK_FOLLOW, that succeeded, by a name (no file in the
 * record's resolved slot), as a syscall (the judge's unseen). User space
 * resumes it once it has followed the path: meanwhile the process
 * cannot remove or replace what the call went through (a test's
 * temporary directory, removed as it ends), and a path gone by then is
 * one writewatch could not follow. These are rare calls: a pause costs
 * a round trip to user space, 0.2 to 2 ms here. Marks the record
 * WW_REC_PAUSED (send takes the stop back if the record is lost).
 * Global, so verified once.
 */
__noinline int pause_for_path(struct event *e)
{
	__u32 op, flags;

	if (!e || e->hdr.ret < 0 || e->hdr.via != WW_VIA_SYSCALL ||
	    (e->hdr.present & (1 << WW_SLOT_RESOLVED)))
		return 0;
	op = e->hdr.op;
	flags = e->hdr.flags;
	if (op != WW_OP_TRUNCATE &&
	    !(op == WW_OP_UTIMES && (flags & WW_META_FOLLOW) && one_time_alone()) &&
	    !(op == WW_OP_LINK && (flags & AT_SYMLINK_FOLLOW)))
		return 0;
	if (bpf_send_signal(SIGSTOP))
		return 0;
	e->hdr.rec |= WW_REC_PAUSED;
	return 1;
}

/*
 * A write to file (a struct file's address) that this process already
 * made the same way, for the same test, since its last test-boundary
 * announcement: counted in the repeats map, and nothing else to do. An
 * open that created its file (created) made a file no earlier write
 * touched, whatever its inode number says: it is always sent. A syscall's
 * (syscall) has its thread's registers for the Go test. Global: its key
 * is not on the stack of the calls that build a record (their chain must
 * fit Linux 6.1's 512 bytes).
 */
__noinline int counted_repeat(__u64 file, __u32 created, struct args *a, __u32 syscall)
{
	struct file *f = (struct file *)file;
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	struct proc *pr = bpf_map_lookup_elem(&procs, &tgid);
	struct go_who who = {};
	/* The file's identity is read with the helper here: through
	 * file_identity's direct loads, the verifier walked 1,100 more of
	 * sys_exit's instructions (11,418 against 12,516), a millisecond of
	 * every start, for a path only repeated violations take. */
	struct inode *inode;

	if (!a)
		return false;
	inode = BPF_CORE_READ(f, f_inode);
	struct repeat_key rk = {
		.ino = BPF_CORE_READ(inode, i_ino),
		.dev = BPF_CORE_READ(inode, i_sb, s_dev),
		.gen = BPF_CORE_READ(inode, i_generation),
		.tgid = tgid,
		.op = a->op,
		.flags = a->flags,
		.test = go_attr(&who, syscall ? syscall_regs() : NULL),
		.epoch = pr ? pr->epoch : 0,
	};
	__u64 *n;

	if (!rk.ino || created)
		return false;
	n = bpf_map_lookup_elem(&repeats, &rk);
	if (!n)
		return false;
	__sync_fetch_and_add(n, 1);
	count(WW_STAT_REPEATS);
	return true;
}

/* What emit_write found out before the record: the bits write_record
 * takes. */
enum {
	WR_OPENED = 1,	  /* an open that succeeded: judged by the file it opened */
	WR_CREATED = 2,	  /* and the open made the file */
	WR_UNWATCHED = 4, /* unwatched_write */
};

/*
 * Send the record of one write that the marks did not settle by its file
 * and that repeats none: its paths, the directories relative paths start
 * from, and file, the file an open opened or an fd-based call acted on
 * (0: none), unless the kernel can tell from the marks that it is
 * allowed. Paths of io_uring requests are kernel strings. Reached
 * through a global function for each via (syscall_record, uring_record):
 * the verifier walks it once, not once for each state of emit_write's
 * that reaches it. That took sys_exit from 11,728 verified instructions
 * to 9,334 and uring_submit from 6,322 to 5,505 (go test -run '^$' -bench
 * LoadProgram ./internal/tracer/).
 */
static __always_inline int write_record(struct args *a, long ret, __u16 via, __u64 file, __u32 bits)
{
	bool kstr = via == WW_VIA_IO_URING;
	bool opened = bits & WR_OPENED;
	/* Judged by a file rather than by its name: the file an open opened,
	 * the descriptor an fd-based call acted on, or (below, held_fd) the
	 * descriptor a metadata change names as /dev/stdout, /proc/self/fd/N
	 * and the like, which it follows, and the one a hard link is made
	 * from (the link's new name is judged too). What follows asks the record whether it
	 * holds such a file (its resolved slot), not a flag of its own: one
	 * more flag doubled the paths the verifier walks, and --enforce's
	 * start-up time. */
	bool by_file = opened || (a && !a->path);
	struct file *f = (struct file *)file;
	struct event *e;
	int link_fd;
	__u32 off = 0;

	if (!a)
		return 0;
	e = scratch_event();
	if (!e)
		return 0;
	fill_hdr(e, WW_EV_WRITE);
	e->hdr.op = a->op;
	e->hdr.ret = ret;
	e->hdr.flags = a->flags;
	e->hdr.mode = a->mode;
	e->hdr.via = via;

	/* An open that succeeded is judged by the file it opened: the
	 * directory of a relative name is not needed then. */
	off = put_target(e, off, WW_SLOT_PATH, WW_SLOT_DIR, a->path, a->dfd, !opened, kstr);
	if (a->path2)
		off = put_target(e, off, WW_SLOT_PATH2, WW_SLOT_DIR2, a->path2, a->dfd2,
				 true, kstr);
	if (by_file) {
		off = put_file(e, off, WW_SLOT_RESOLVED, (__u64)f);
		/* Whether the open made the file. */
		if (bits & WR_CREATED)
			e->hdr.flags |= WW_OPEN_CREATED;
	} else if (!kstr && (link_fd = held_fd(a->op, a->flags, a->dfd, e->hdr.len[WW_SLOT_PATH])) >= 0)
		off = put_file(e, off, WW_SLOT_RESOLVED, (__u64)(f = fd_file(link_fd)));

	/* Landlock refused it (or the file's permissions did): unless the
	 * kernel can tell the write was allowed, it was an attempt outside
	 * the allowlist, and the writer is killed before it returns. */
	if (enforce_tier == WW_TIER_LANDLOCK && !(a->action & WW_ACT_BLOCKED) &&
	    (ret == -EACCES || ret == -EPERM) && !kstr && a->path && !enforce_allowed(e, a->path2))
		a->action |= refuse_current(enforce_kill && !(a->action & WW_ACT_KILLED));
	e->hdr.action = a->action;
	/* Opening /dev/stdout when it is a pipe, or /proc/self/fd/N of a
	 * socket or memfd, writes no file. */
	if (!a->action && (e->hdr.detached & (1 << WW_SLOT_RESOLVED))) {
		count(WW_STAT_NOT_FILES);
		return 0;
	}
	/* For user space, which fails the run on one it finds allowed. */
	e->hdr.rec = bits & WR_UNWATCHED ? WW_REC_UNWATCHED : 0;
	if (!a->action && allowed_here(e, a)) {
		settled_allowed(bits & WR_UNWATCHED);
		return 0;
	}
	/* Who wrote: the goroutine's Go test, or the process's announcements
	 * so far; an announcement starts a new epoch. */
	__u32 tgid = e->hdr.tgid;
	struct proc *pr = bpf_map_lookup_elem(&procs, &tgid);
	struct go_who who = {};
	go_attr(&who, kstr ? NULL : syscall_regs());
	put_who(&e->hdr, &who);
	if (pr) {
		if (a->op == WW_OP_OPEN && ret < 0 && is_marker(e))
			__sync_fetch_and_add(&pr->epoch, 1);
		e->hdr.epoch = pr->epoch;
	}
	/* Later identical writes will be counted under this key (see
	 * counted_repeat). */
	struct repeat_key rk = {
		.ino = e->hdr.ino, .dev = e->hdr.dev, .gen = e->hdr.gen, .tgid = e->hdr.tgid,
		.op = a->op, .flags = a->flags, .test = e->hdr.test, .epoch = e->hdr.epoch,
	};
	pause_for_path(e);
	count(WW_STAT_EVENTS);
	if (!send(e, off))
		return 0;
	/* Reads of the file it wrote are looked at now (lib/reads.h). */
	if (f && ret >= 0)
		note_written(f);
	if (rk.ino && !e->hdr.truncated) {
		__u64 zero = 0;

		/* Full map: repeats keep coming as records, nothing is lost. */
		bpf_map_update_elem(&repeats, &rk, &zero, BPF_NOEXIST);
	}
	return 0;
}

/* The record of a syscall's write (write_record). */
__noinline int syscall_record(struct args *a, long ret, __u64 file, __u32 bits)
{
	return write_record(a, ret, WW_VIA_SYSCALL, file, bits);
}

/* The record of an io_uring request's write (write_record). */
__noinline int uring_record(struct args *a, __u64 file, __u32 bits)
{
	return write_record(a, 0, WW_VIA_IO_URING, file, bits);
}

/*
 * One write: settled in the kernel when the marks allow the file it
 * opened or acted on, or when it repeats one already sent; else sent as a
 * record (write_record).
 */
static __always_inline int emit_write(struct args *a, long ret, __u16 via)
{
	bool kstr = via == WW_VIA_IO_URING;
	bool opened = (a->op == WW_OP_OPEN || a->op == WW_OP_CREAT) && ret >= 0 && !kstr &&
		      !(a->flags & __O_TMPFILE);
	bool by_file = opened || !a->path;
	bool unwatched;
	struct file *f = NULL;
	bool created = false;
	__u32 bits;

	if (by_file)
		f = fd_file(opened ? ret : a->dfd);
	unwatched = unwatched_write(a, ret, f);
	/* Most writes of a test run go to allowed places, and a loop writes
	 * the same file again and again: settle both before building
	 * anything (unless enforcement acted on the write). Whether the open
	 * made its file is asked only past the first. */
	if (f && !a->action && use_marks && open_file_allowed(f)) {
		settled_allowed(unwatched);
		return 0;
	}
	if (f && opened)
		created = BPF_CORE_READ(f, f_mode) & FMODE_CREATED;
	if (f && !a->action && counted_repeat((__u64)f, created, a, !kstr))
		return 0;
	bits = (opened ? WR_OPENED : 0) | (created ? WR_CREATED : 0) | (unwatched ? WR_UNWATCHED : 0);
	if (kstr)
		return uring_record(a, (__u64)f, bits);
	return syscall_record(a, ret, (__u64)f, bits);
}

#endif
