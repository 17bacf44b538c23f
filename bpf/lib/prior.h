/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * What a call found before it changed a file, for severity: whether a
 * rename's target held a file, and a chmod's, chown's or utimes' file
 * as it was (mode, owner, modification time). The syscall tracepoints
 * see only the names a call was given; the VFS function that does the
 * change has the dentry, looked up and locked: vfs_rename its target's,
 * notify_change (chmod, chown, utimes, by path or descriptor) its
 * file's. A program at each one's entry notes what it holds in the
 * calling thread's task state, for the call the thread stored
 * (lib/stash.h), and write_record puts it in the record
 * (WW_REC_PRIOR). Only the first such call of a syscall counts: an
 * overlay's rename or setattr calls the same function again on its
 * upper layer.
 *
 * Where the kernel cannot attach them (fentry needs BPF trampolines), no
 * record carries WW_REC_PRIOR, and user space judges as before: a
 * rename replaced a file, a metadata change stayed.
 */
#ifndef WW_LIB_PRIOR_H
#define WW_LIB_PRIOR_H

#include "task.h"
#include "rows.h"

/* struct inode's modification time before Linux 6.11 (a timespec64),
 * named __i_mtime from 6.7: the kernel's BTF says which it has. */
struct inode___ts {
	struct timespec64 i_mtime;
} __attribute__((preserve_access_index));

struct inode___ts67 {
	struct timespec64 __i_mtime;
} __attribute__((preserve_access_index));

/* The modification time of inode, into p. */
static __always_inline void prior_mtime(struct prior *p, struct inode *inode)
{
	if (bpf_core_field_exists(struct inode, i_mtime_sec)) {
		p->mtime_sec = BPF_CORE_READ(inode, i_mtime_sec);
		p->mtime_nsec = BPF_CORE_READ(inode, i_mtime_nsec);
	} else if (bpf_core_field_exists(struct inode___ts67, __i_mtime)) {
		struct inode___ts67 *i = (void *)inode;

		p->mtime_sec = BPF_CORE_READ(i, __i_mtime.tv_sec);
		p->mtime_nsec = BPF_CORE_READ(i, __i_mtime.tv_nsec);
	} else {
		struct inode___ts *i = (void *)inode;

		p->mtime_sec = BPF_CORE_READ(i, i_mtime.tv_sec);
		p->mtime_nsec = BPF_CORE_READ(i, i_mtime.tv_nsec);
	}
}

/*
 * The VFS is about to change dentry d for the current thread's stored
 * call: a rename's target (rename), or the file of a metadata change.
 * Noted once per call, if the call is one of those.
 */
static __always_inline int prior_noted(struct dentry *d, bool rename)
{
	struct task_state *st = tracked_state();
	struct inode *inode;
	__u32 op;

	if (!st || st->pending != WW_PENDING_WRITE || st->prior.seen)
		return 0;
	op = st->args.op;
	if (rename ? !MOVES_ONTO(op) : !RESTORABLE(op))
		return 0;
	st->prior.seen = 1;
	inode = BPF_CORE_READ(d, d_inode);
	if (!inode) {
		st->prior.mode = 0; /* a negative dentry: nothing there */
		return 0;
	}
	st->prior.mode = BPF_CORE_READ(inode, i_mode);
	st->prior.uid = BPF_CORE_READ(inode, i_uid.val);
	st->prior.gid = BPF_CORE_READ(inode, i_gid.val);
	prior_mtime(&st->prior, inode);
	return 0;
}

#endif
