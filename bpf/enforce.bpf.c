// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * writewatch --enforce, LSM tier: refuse every write of the traced tree
 * that the allowlist's inode marks do not allow, in the kernel, before it
 * changes anything, and kill the writer unless --enforce=block.
 *
 * A separate object from writewatch.bpf.c, loaded only where BPF LSM
 * programs load. Its maps (lib/task.h, lib/marks.h) are replaced at load time by those of
 * the tracing object, so both see the same tree, marks and counters; the
 * refusal is noted in the thread's stored syscall arguments, and sys_exit
 * puts it in the record.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_tracing.h>
#include "writewatch.h"
#include "lib/uapi.h"
#include "lib/task.h"
#include "lib/marks.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* Set by the loader: kill the writer of a refused write. */
const volatile bool enforce_kill = true;

#define FMODE_WRITE 0x2
#define SB_NOUSER   (1U << 31)
#define S_PRIVATE   (1U << 9)

/* Refuse the current syscall of st's thread: note it for sys_exit, kill
 * if asked. */
static __always_inline int refuse(struct task_state *st)
{
	__u32 action = refuse_current(enforce_kill);

	if (st->pending)
		st->args.action |= action;
	else
		count(WW_STAT_UNMARKED);
	return -EPERM;
}

/* A hook's argument is a typed pointer, which a global function does not
 * take: hand it over as the plain number it is. */
static __always_inline __u64 scalar(const void *p)
{
	__u64 v = 0;

	bpf_probe_read_kernel(&v, sizeof(v), &p);
	return v;
}

/*
 * Is a write at dentry (on mnt) allowed by the marks: does the walk up
 * meet an allowed mark, with no denied one on the way? A dentry without
 * an inode (a name about to be created) has no mark of its own; its
 * directories decide. A denied inode is refused even when a hard link
 * puts it in an allowed directory.
 */
static __always_inline bool marks_allow(struct dentry *dentry, struct vfsmount *mnt)
{
	return file_allowed(scalar(dentry), scalar(mnt));
}

/*
 * Pipes, sockets and other kernel-internal files, reopened through
 * /proc/self/fd, have no place in the file system to judge: like
 * Landlock, leave them alone.
 */
static __always_inline bool internal(struct dentry *d)
{
	struct inode *inode = BPF_CORE_READ(d, d_inode);

	if (BPF_CORE_READ(d, d_sb, s_flags) & SB_NOUSER)
		return true;
	return inode && (BPF_CORE_READ(inode, i_flags) & S_PRIVATE);
}

/* A write at dentry (on mnt) by st's thread: allowed, or refused. */
static __always_inline int judge(struct task_state *st, struct dentry *dentry, struct vfsmount *mnt)
{
	if (marks_allow(dentry, mnt))
		return 0;
	return refuse(st);
}

SEC("lsm/file_open")
int BPF_PROG(ww_file_open, struct file *file, int ret)
{
	struct task_state *st = tracked_state();
	struct dentry *d;

	if (ret || !st)
		return ret;
	/* O_TRUNC truncates even a read-only open. */
	if (!(BPF_CORE_READ(file, f_mode) & FMODE_WRITE) && !(BPF_CORE_READ(file, f_flags) & O_TRUNC))
		return 0;
	d = BPF_CORE_READ(file, f_path.dentry);
	if (internal(d))
		return 0;
	/* A block device is every file on it: refused unless the allowlist
	 * names its node. */
	if (device_written(scalar(file))) {
		if (st->pending) {
			st->args.action |= WW_ACT_DEVICE;
			st->args.mode = BPF_CORE_READ(file, f_inode, i_rdev);
		}
		return refuse(st);
	}
	return judge(st, d, BPF_CORE_READ(file, f_path.mnt));
}

SEC("lsm/path_truncate")
int BPF_PROG(ww_path_truncate, const struct path *path, int ret)
{
	struct task_state *st = tracked_state();

	if (ret || !st)
		return ret;
	return judge(st, BPF_CORE_READ(path, dentry), BPF_CORE_READ(path, mnt));
}

/* An entry created or removed in dir: judged by the entry, whose walk
 * goes through dir. */
static __always_inline int entry(const struct path *dir, struct dentry *dentry, int ret)
{
	struct task_state *st = tracked_state();

	if (ret || !st)
		return ret;
	return judge(st, dentry, BPF_CORE_READ(dir, mnt));
}

SEC("lsm/path_unlink")
int BPF_PROG(ww_path_unlink, const struct path *dir, struct dentry *dentry, int ret)
{
	return entry(dir, dentry, ret);
}

SEC("lsm/path_rmdir")
int BPF_PROG(ww_path_rmdir, const struct path *dir, struct dentry *dentry, int ret)
{
	return entry(dir, dentry, ret);
}

SEC("lsm/path_mkdir")
int BPF_PROG(ww_path_mkdir, const struct path *dir, struct dentry *dentry, umode_t mode, int ret)
{
	return entry(dir, dentry, ret);
}

/* Also every regular file an open creates. A node of a block device is
 * refused wherever it would be made: through it the device is written. */
SEC("lsm/path_mknod")
int BPF_PROG(ww_path_mknod, const struct path *dir, struct dentry *dentry, umode_t mode,
	     unsigned int dev, int ret)
{
	struct task_state *st;

	if (!ret && (mode & S_IFMT_BITS) == S_IFBLK_BITS && (st = tracked_state()))
		return refuse(st);
	return entry(dir, dentry, ret);
}

SEC("lsm/path_symlink")
int BPF_PROG(ww_path_symlink, const struct path *dir, struct dentry *dentry, const char *old_name, int ret)
{
	return entry(dir, dentry, ret);
}

/* A hard link is judged at both ends: a new name for a protected file in
 * an allowed directory would make it writable. */
SEC("lsm/path_link")
int BPF_PROG(ww_path_link, struct dentry *old_dentry, const struct path *new_dir,
	     struct dentry *new_dentry, int ret)
{
	struct vfsmount *mnt = BPF_CORE_READ(new_dir, mnt);
	struct task_state *st = tracked_state();

	if (ret || !st)
		return ret;
	if (!marks_allow(new_dentry, mnt) || !marks_allow(old_dentry, mnt))
		return refuse(st);
	return 0;
}

SEC("lsm/path_rename")
int BPF_PROG(ww_path_rename, const struct path *old_dir, struct dentry *old_dentry,
	     const struct path *new_dir, struct dentry *new_dentry, unsigned int flags, int ret)
{
	struct task_state *st = tracked_state();

	if (ret || !st)
		return ret;
	if (!marks_allow(old_dentry, BPF_CORE_READ(old_dir, mnt)) ||
	    !marks_allow(new_dentry, BPF_CORE_READ(new_dir, mnt)))
		return refuse(st);
	return 0;
}

struct up_walk {
	struct dentry *d;
	bool allowed;
};

/* One step of dentry_allowed: the marks of one dentry, then its parent. */
static long up_step(__u32 i, void *ctx)
{
	struct up_walk *w = ctx;
	struct dentry *d = w->d; /* a local first: not a CO-RE access of up_walk */
	__u32 m = mark_of(d);
	struct dentry *parent;

	if (m & WW_MARK_DENY)
		return 1;
	if ((m & WW_MARK_ALLOW) && (m & WW_MARK_FINAL)) {
		w->allowed = true;
		return 1;
	}
	parent = BPF_CORE_READ(d, d_parent);
	if (parent == d)
		return 1;
	w->d = parent;
	return 0;
}

/*
 * Is a change to dentry allowed by the marks, judged without its mount
 * (the extended-attribute hooks are given none)? The walk goes up its
 * own filesystem and stops at its root, which decides when nothing
 * below did: a file on a filesystem mounted inside an allowed directory
 * is refused, on the safe side.
 */
static __always_inline bool dentry_allowed(struct dentry *dentry)
{
	struct up_walk w = { .d = dentry };

	bpf_loop(MAX_DEPTH, up_step, &w, 0);
	return w.allowed;
}

/*
 * An extended attribute (or POSIX ACL) change that an io_uring request
 * of the tree makes: the request was noted at submission under the
 * address of its attribute name, which the kernel hands to these hooks.
 * Other xattr changes pass: the metadata guard answers for the syscalls.
 */
static __always_inline int uring_xattr(struct dentry *dentry, const char *name, int ret)
{
	__u64 key = scalar(name);
	struct task_state *st;

	if (ret || !bpf_map_lookup_elem(&uring_xattrs, &key))
		return ret;
	bpf_map_delete_elem(&uring_xattrs, &key);
	if (dentry_allowed(dentry))
		return 0;
	st = tracked_state();
	if (st)
		return refuse(st);
	count(WW_STAT_UNMARKED);
	refuse_current(enforce_kill);
	return -EPERM;
}

SEC("lsm/inode_setxattr")
int BPF_PROG(ww_inode_setxattr, void *idmap, struct dentry *dentry, const char *name,
	     const void *value, size_t size, int flags, int ret)
{
	return uring_xattr(dentry, name, ret);
}

/* Linux 6.2 and later set POSIX ACLs here, not through inode_setxattr
 * (the loader leaves this program unattached where the hook is missing). */
SEC("lsm/inode_set_acl")
int BPF_PROG(ww_inode_set_acl, void *idmap, struct dentry *dentry, const char *acl_name,
	     void *kacl, int ret)
{
	return uring_xattr(dentry, acl_name, ret);
}
