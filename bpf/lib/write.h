/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The record of one write: built from the stored arguments and the
 * syscall's result, unless the kernel can tell that the write is allowed
 * or that it repeats one already sent (lib/repeats.h). Its writer may be
 * paused as it is sent (lib/pause.h); whether the window makes it
 * unwatched is asked of lib/contents.h, whether it is an announcement of
 * lib/prefix.h.
 */
#ifndef WW_LIB_WRITE_H
#define WW_LIB_WRITE_H

#include "arch.h"
#include "uapi.h"
#include "paths.h"
#include "enforce.h"
#include "prefix.h"
#include "goattr.h"
#include "proc.h"
#include "contents.h"
#include "reads.h"
#include "repeats.h"
#include "pause.h"
#include "rows.h"
#include "names.h"

/* A write the kernel found allowed: counted, and counted apart when the
 * window made it unwatched, where an allowed path may lead elsewhere. */
static __always_inline void settled_allowed(bool unwatched)
{
	count(WW_STAT_ALLOWED);
	if (unwatched)
		count(WW_STAT_UNWATCHED_ALLOWED);
}

/* Does the stored call make a block device's node (mknod)? Landlock
 * grants no such node (WW_TIER_LANDLOCK refuses it), the LSM and kill
 * tiers refuse it wherever it would be. */
static __always_inline bool block_node(struct args *a)
{
	return a->op == WW_OP_MKNOD && (a->mode & S_IFMT_BITS) == S_IFBLK_BITS;
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

	/* A path string cut to fit says nothing of where it leads; a
	 * directory or file walked for the slot was walked for its marks to
	 * the end even when its names did not fit (put_path). */
	if (!use_marks || (e->hdr.truncated & (1 << WW_SLOT_PATH | 1 << WW_SLOT_PATH2)))
		return false;
	/* Renaming an entry of a directory above what a deny rule protects
	 * may move it: user space judges what lies below (WW_MARK_MOVES). */
	if (MOVES(a->op) &&
	    (clean & (WW_CLEAN_MOVES << WW_SLOT_DIR | WW_CLEAN_MOVES << WW_SLOT_DIR2)))
		return false;
	/* Judged by the file behind it (see emit_write); a link's new name
	 * is judged too, in user space. */
	if (e->hdr.present & (1 << WW_SLOT_RESOLVED))
		return !LINKS_FILE(a->op) && (clean & (1 << WW_SLOT_RESOLVED));
	/* The name may be a symlink to anywhere: user space follows it
	 * (chmod and the like, truncate, an open: one that failed, or
	 * io_uring's; a hard link's source with AT_SYMLINK_FOLLOW, which
	 * links the file the symlink leads to). */
	if (FOLLOWS_LAST(a->op, a->flags))
		return false;
	if (!(clean & (1 << WW_SLOT_DIR)) || !plain_name(e, 0, e->hdr.len[WW_SLOT_PATH]))
		return false;
	if (!a->path2)
		return true;
	return (clean & (1 << WW_SLOT_DIR2)) &&
	       plain_name(e, e->hdr.len[WW_SLOT_PATH] + e->hdr.len[WW_SLOT_DIR],
			  e->hdr.len[WW_SLOT_PATH2]);
}

#define FMODE_CREATED (1u << 20) /* include/linux/fs.h: the open created the file */

/* What the syscall of record e found before it changed its file, when
 * the VFS reached it (lib/prior.h). Global, so verified once: inlined,
 * the landlock tier's sys_exit verified 734 more instructions (9,293
 * against 8,559), not 136 as the others. */
__noinline int put_prior(struct event *e)
{
	struct task_state *st = tracked_state();

	if (!e || !st || !st->prior.seen)
		return 0;
	e->hdr.rec |= WW_REC_PRIOR;
	e->hdr.prior_mode = st->prior.mode;
	e->hdr.prior_uid = st->prior.uid;
	e->hdr.prior_gid = st->prior.gid;
	e->hdr.prior_mtime_sec = st->prior.mtime_sec;
	e->hdr.prior_mtime_nsec = st->prior.mtime_nsec;
	return 0;
}

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

	if (!LINKS_FILE(op))
		return IS_METADATA(op) && FOLLOWS_LAST(op, flags) ? record_fd_link(len) : -1;
	if ((flags & AT_EMPTY_PATH) && len <= 1)
		fd = dfd;
	else if (FOLLOWS_LAST(op, flags))
		fd = record_fd_link(len);
	else
		return -1;
	f = fd_file(fd);
	if (!f || !BPF_CORE_READ(f, f_path.dentry, d_hash.pprev) ||
	    (BPF_CORE_READ(f, f_inode, i_mode) & S_IFMT_BITS) == S_IFDIR_BITS)
		return -1;
	return fd;
}

/* Mark record e as the write of a block device (WW_REC_DEVICE), whose
 * number, when the call opened it (the file at addr), replaces the
 * open's mode: else the LSM tier refused the open and left the number
 * there. Global, so that its frame is not write_record's. */
__noinline int put_device(struct event *e, __u64 addr)
{
	struct file *f = (struct file *)addr;

	if (!e)
		return 0;
	e->hdr.rec |= WW_REC_DEVICE;
	if (f)
		e->hdr.mode = BPF_CORE_READ(f, f_inode, i_rdev);
	return 0;
}

/* What emit_write found out before the record: the bits write_record
 * takes. */
enum {
	WR_OPENED = 1,	  /* an open that succeeded: judged by the file it opened */
	WR_CREATED = 2,	  /* and the open made the file */
	WR_UNWATCHED = 4, /* its path may lead elsewhere, unseen (mount_bits, lib/contents.h) */
	WR_DEVICE = 8,	  /* a block device opened for writing (writes_device) */
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
 * LoadProgram ./tracer/).
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
	    (ret == -EACCES || ret == -EPERM) && !kstr && a->path &&
	    (block_node(a) || !enforce_allowed(e, a->path2)))
		a->action |= refuse_current(enforce_kill && !(a->action & WW_ACT_KILLED));
	e->hdr.action = a->action & ~WW_ACT_DEVICE;
	/* Opening /dev/stdout when it is a pipe, or /proc/self/fd/N of a
	 * socket or memfd, writes no file. */
	if (!a->action && (e->hdr.detached & (1 << WW_SLOT_RESOLVED))) {
		count(WW_STAT_NOT_FILES);
		return 0;
	}
	/* For user space, which fails the run on one it finds allowed. */
	e->hdr.rec = bits & WR_UNWATCHED ? WW_REC_UNWATCHED : 0;
	if (!kstr)
		put_prior(e);
	/* A name rewritten during the call is never settled here
	 * (lib/names.h); an open is judged by its file. */
	if (!kstr && names_rewritten(e, a))
		e->hdr.rec |= WW_REC_REWRITTEN;
	/* A block device is judged by what it holds, not by its node's
	 * path: its number for user space. */
	if (bits & WR_DEVICE)
		put_device(e, (__u64)f);
	else if (!a->action && !(e->hdr.rec & WW_REC_REWRITTEN) && allowed_here(e, a)) {
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
	 * counted_repeat). Taken before the record is sent: taken after,
	 * sys_exit verified 6,087 instructions rather than 5,953. */
	struct repeat_key rk;
	repeat_key_of(&rk, e, a);
	/* An io_uring request's submitter is never paused: not asked, so
	 * that uring_submit's verifier does not walk pause_for_path (3,231
	 * verified instructions rather than 3,296; 4,754 rather than 4,819
	 * under --enforce). */
	if (!kstr)
		pause_for_path(e);
	count(WW_STAT_EVENTS);
	if (!send(e, off))
		return 0;
	/* Reads of the file it wrote are looked at now (lib/reads.h). */
	if (f && ret >= 0)
		note_written(f);
	note_sent(&rk, e);
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
 * opened or acted on, when it repeats one already sent, or when that
 * file lies on a filesystem in memory of the tree's own namespaces
 * (lib/mounts.h); else sent as a record (write_record).
 */
static __always_inline int emit_write(struct args *a, long ret, __u16 via)
{
	bool kstr = via == WW_VIA_IO_URING;
	struct file *f = NULL;
	/* What is known of the write so far, as write_record takes it; the
	 * fewer values live across the calls below, the less of sys_exit's
	 * stack they take (Linux 6.1's 512 bytes, tracer's stack test). */
	__u32 bits = OPENS(a->op) && ret >= 0 && !kstr &&
		     !(a->flags & __O_TMPFILE) ? WR_OPENED : 0;
	__u32 wm;

	if ((bits & WR_OPENED) || !a->path)
		f = fd_file(bits & WR_OPENED ? ret : a->dfd);
	/* The mount a write lands on is looked at when its path may have to
	 * be doubted (lib/contents.h, mount_bits), and, below, for a write
	 * of a file the marks do not settle. */
	wm = mount_bits(a, ret, (__u64)f, true);
	if (wm & WM_UNWATCHED)
		bits |= WR_UNWATCHED;
	/* A block device opened for writing is never settled here. Under
	 * the landlock and kill tiers, whose kernel side cannot refuse the
	 * open, its writer is killed before the call returns (the LSM tier
	 * refused it in file_open). */
	if (((bits & WR_OPENED) && writes_device(f)) || (a->action & WW_ACT_DEVICE)) {
		bits |= WR_DEVICE;
		if ((enforce_tier == WW_TIER_LANDLOCK || enforce_tier == WW_TIER_KILL) &&
		    !(a->action & WW_ACT_KILLED))
			a->action |= refuse_current(true);
	}
	/* Most writes of a test run go to allowed places, and a loop writes
	 * the same file again and again: settle both before building
	 * anything (unless enforcement acted on the write, or it writes a
	 * block device). Whether the open made its file is asked only past
	 * the first. */
	if (f && !a->action && !(bits & WR_DEVICE) && use_marks && write_file_allowed((__u64)f)) {
		settled_allowed(bits & WR_UNWATCHED);
		return 0;
	}
	if (wm & WM_UNLOOKED)
		wm = mount_bits(a, ret, (__u64)f, false);
	/* A filesystem in memory of the tree's own namespaces is not the
	 * user's (a fake home): whatever the path, nothing of the user's
	 * changed. */
	if ((wm & WM_PRIVATE) && !a->action && !(bits & WR_DEVICE)) {
		count(WW_STAT_PRIVATE);
		settled_allowed(false);
		return 0;
	}
	if (f && (bits & WR_OPENED) && (BPF_CORE_READ(f, f_mode) & FMODE_CREATED))
		bits |= WR_CREATED;
	if (f && !a->action && counted_repeat((__u64)f, bits & WR_CREATED, a, !kstr, ret < 0))
		return 0;
	if (kstr)
		return uring_record(a, (__u64)f, bits);
	return syscall_record(a, ret, (__u64)f, bits);
}

#endif
