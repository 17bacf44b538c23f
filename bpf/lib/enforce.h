/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * --enforce in the tracing programs: whether the kernel can tell, from a
 * write's paths or its descriptor, that it is allowed, and the kill tier's
 * verdict at syscall entry.
 */
#ifndef WW_LIB_ENFORCE_H
#define WW_LIB_ENFORCE_H

#include "marks.h"
#include "paths.h"
#include "prefix.h"

/* Is a write to the file behind descriptor fd allowed? A pipe, socket or
 * other kernel-internal file is no file-system write. */
static __always_inline bool fd_allowed(int fd)
{
	struct file *f = fd_file(fd);
	struct vfsmount *mnt;

	if (!f)
		return true; /* no such descriptor: the call fails, nothing is written */
	mnt = BPF_CORE_READ(f, f_path.mnt);
	if (internal_mount(real_mount(mnt)))
		return true;
	return file_allowed((__u64)BPF_CORE_READ(f, f_path.dentry), (__u64)mnt);
}

/*
 * --enforce: can the kernel tell, from the strings alone, that the path
 * in slot ps (starting at data[start], directory slot ds) is allowed,
 * even before it exists? An absolute path by the allowed prefixes (or,
 * for a link to a descriptor, by the descriptor's file); a relative one
 * by the marks met above its start directory (a granted directory holds
 * nothing a deny entry names), or else by the prefixes, put together
 * with that directory. Never a path with a ".." component, nor one cut
 * to fit. Symbolic links inside an allowed directory are taken at their
 * word. Global, so verified once rather than for each slot and caller.
 */
__noinline int target_allowed(struct event *e, __u32 start, __u64 ps, __u64 ds)
{
	__u32 len;
	int fd;

	if (!e || ps >= NSLOTS || ds >= NSLOTS)
		return false;
	len = e->hdr.len[ps];
	if (!(e->hdr.present & (1 << ps)) || (e->hdr.truncated & (1 << ps | 1 << ds)) || len < 2)
		return false;
	if (has_dotdot(e, start, len))
		return false;
	if (e->data[at(start)] != '/') {
		if (e->hdr.clean & (1 << ds))
			return true;
		return (e->hdr.present & (1 << ds)) &&
		       relative_allowed(e, start, len, start + len, e->hdr.len[ds]);
	}
	if (prefix_allowed(e, start, len))
		return true;
	fd = fd_link(e, start, len);
	return fd >= 0 && fd_allowed(fd);
}

static __always_inline bool enforce_allowed(struct event *e, __u64 path2)
{
	if (!target_allowed(e, 0, WW_SLOT_PATH, WW_SLOT_DIR))
		return false;
	return !path2 || target_allowed(e, e->hdr.len[WW_SLOT_PATH] + e->hdr.len[WW_SLOT_DIR],
					 WW_SLOT_PATH2, WW_SLOT_DIR2);
}

/*
 * --enforce: judge a write at its entry, before it runs, and kill the
 * writer unless the kernel can tell it is allowed (the kill tier, and
 * metadata changes under every tier: neither Landlock nor the LSM
 * programs refuse those). A call on a descriptor is judged by its file.
 * The paths are the process's, or kernel strings (kstr: an io_uring
 * request's). A global function, checked once by the verifier. Returns
 * enum ww_action.
 */
__noinline int judge_enter(__u64 path, __s32 dfd, __u64 path2, __s32 dfd2, int kstr)
{
	struct event *e = scratch_event();
	__u32 off;

	if (!path) {
		if (fd_allowed(dfd))
			return 0;
		return kill_current() ? WW_ACT_KILLED : 0;
	}
	if (!e)
		return kill_current() ? WW_ACT_KILLED : 0;
	e->hdr.present = 0;
	e->hdr.truncated = 0;
	e->hdr.clean = 0;
	for (int i = 0; i < NSLOTS; i++)
		e->hdr.len[i] = 0;
	off = put_target(e, 0, WW_SLOT_PATH, WW_SLOT_DIR, path, dfd, true, kstr);
	if (path2)
		put_target(e, off, WW_SLOT_PATH2, WW_SLOT_DIR2, path2, dfd2, true, kstr);
	/* A path in a page of the process's not yet faulted in (a string
	 * of a program that just started) cannot be read here, though the
	 * call will read it: judge it at the exit instead. */
	if (!kstr && (!(e->hdr.present & (1 << WW_SLOT_PATH)) ||
		      (path2 && !(e->hdr.present & (1 << WW_SLOT_PATH2)))))
		return WW_ACT_UNREAD;
	if (enforce_allowed(e, path2))
		return 0;
	return kill_current() ? WW_ACT_KILLED : 0;
}

/*
 * The exit of a write judge_enter could not read the path of: judged now,
 * once the call has brought its page in, as judge_enter would have; an
 * open that succeeded (opened: its descriptor, else -1) by the file it
 * opened. The call has run either way (the kill tier kills at entry, and
 * the call still runs), so only who is told changes; a path that still
 * cannot be read kills. A call that failed changed nothing and is not
 * judged (the caller). Inlined into sys_exit, so that judge_enter's
 * chain of calls (its own, put_path's, its loop's) is no deeper there
 * than it is from sys_enter: on Linux 6.1 one more frame takes the
 * combined stack past 512 bytes. Returns enum ww_action.
 */
static __always_inline int judge_exit(__u64 path, __s32 dfd, __u64 path2, __s32 dfd2, long opened)
{
	int act;

	if (opened >= 0)
		act = fd_allowed(opened) ? 0 : WW_ACT_UNREAD;
	else
		act = judge_enter(path, dfd, path2, dfd2, 0);
	if (act & WW_ACT_UNREAD)
		return kill_current() ? WW_ACT_KILLED : 0;
	return act;
}

#endif
