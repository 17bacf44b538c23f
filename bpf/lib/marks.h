/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The allowlist's inode marks, and the walk from a dentry up to the root
 * that finds them, shared by the tracing programs (writewatch.bpf.c) and
 * the enforcing LSM programs (enforce.bpf.c); the loader hands the
 * tracing object's maps to the enforcing one.
 */
#ifndef WW_LIB_MARKS_H
#define WW_LIB_MARKS_H

#include "kread.h"
#include "loop.h"

/*
 * The verdict of the walk above a directory, keyed by its dentry: whether
 * it lies under a deciding allowed mark. The inode number is checked on
 * every hit, so a dentry freed and reused for another directory is not
 * taken for it. Files in a known directory are settled in one step.
 * Verdicts follow directories the way marks do: renaming an allowed one
 * keeps it allowed; a directory not known to be allowed only sends its
 * writes the slow way (or, enforcing, refuses them: the safe side).
 */
struct dir_verdict {
	__u64 ino;
	__u32 allowed;
	__u32 _pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u64);
	__type(value, struct dir_verdict);
} dir_verdicts SEC(".maps");

/* The allowlist's marked inodes (enum ww_mark bits). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, struct inode_key);
	__type(value, __u32);
} marks SEC(".maps");

static __always_inline struct mount *real_mount(struct vfsmount *m)
{
	return (struct mount *)((void *)m - bpf_core_field_offset(struct mount, mnt));
}

/* Is ns, a mount's mnt_ns, none? Internal mounts (pipes, sockets,
 * memfd, anonymous inodes) belong to no mount namespace: the kernel marks
 * them with an error pointer. */
static __always_inline bool internal_ns(unsigned long ns)
{
	return !ns || ns >= (unsigned long)-4095;
}

static __always_inline bool internal_mount(struct mount *m)
{
	return internal_ns((unsigned long)BPF_CORE_READ(m, mnt_ns));
}

static __always_inline __u32 mark_of(struct dentry *d)
{
	struct inode *inode = KREAD(struct dentry, d, d_inode);
	struct inode_key key = {};
	__u32 *m;

	if (!inode)
		return 0;
	key.ino = KREAD(struct inode, inode, i_ino);
	key.dev = KREAD(struct inode, inode, i_sb, s_dev);
	m = bpf_map_lookup_elem(&marks, &key);
	return m ? *m : 0;
}

enum { UP_NAME, UP_MOUNT, UP_END };

/*
 * Where one step up from dentry d on mount *mnt leads: across a mount
 * point (UP_MOUNT: *next and *mnt are the mount point and its mount), past
 * the top of the tree (UP_END: *detached says whether that was a
 * kernel-internal mount, so the file has no path), or to d's parent
 * (UP_NAME: d's name is a component of the path, *next is the parent).
 */
static __always_inline int step_up(struct dentry *d, struct vfsmount **mnt,
				   struct dentry **next, bool *detached)
{
	struct vfsmount *m = *mnt;

	if (d == BPF_CORE_READ(m, mnt_root)) {
		struct mount *mt = real_mount(m);
		struct mount *parent = BPF_CORE_READ(mt, mnt_parent);

		if (mt == parent) {
			*detached = internal_mount(mt);
			return UP_END;
		}
		*next = BPF_CORE_READ(mt, mnt_mountpoint);
		*mnt = (struct vfsmount *)((void *)parent + bpf_core_field_offset(struct mount, mnt));
		return UP_MOUNT;
	}
	*next = BPF_CORE_READ(d, d_parent);
	if (*next == d) {
		*detached = internal_mount(real_mount(m));
		return UP_END;
	}
	return UP_NAME;
}

struct mark_walk {
	struct dentry *dentry;
	struct vfsmount *mnt;
	bool allowed;
};

/* One step of the quick check: the marks of one dentry, then up. Step i
 * of MAX_DEPTH: returns 1 to stop. */
__noinline int mark_one(struct mark_walk *w, __u32 i)
{
	if (!w || i >= MAX_DEPTH)
		return 1;
	struct dentry *d = w->dentry;
	__u32 m = mark_of(d);
	bool detached;

	if (m & WW_MARK_DENY)
		return 1;
	if ((m & WW_MARK_ALLOW) && (m & WW_MARK_FINAL)) {
		w->allowed = true;
		return 1;
	}
	return step_up(d, &w->mnt, &w->dentry, &detached) == UP_END;
}

LOOP_STEP(mark_step, mark_one)

/*
 * The quick check for a file the kernel already resolved, dentry on mount
 * mnt: does it lie under an allowed mark with no deny mark on the way?
 * Copies no names, and stops at the first deciding mark. A global
 * function, verified once: it takes the pointers as numbers.
 */
__noinline int file_allowed(__u64 dentry, __u64 mnt)
{
	struct dentry *file = (struct dentry *)dentry;
	struct mark_walk w = {
		.mnt = (struct vfsmount *)mnt,
	};
	struct dir_verdict v = {}, *cached;
	struct dentry *dir;
	__u64 key;
	__u32 m;

	if (!dentry || !mnt)
		return 0;
	/* The file's own mark first: a deny rule, or an allowed file. */
	m = mark_of(file);
	if (m & WW_MARK_DENY)
		return 0;
	if ((m & WW_MARK_ALLOW) && (m & WW_MARK_FINAL))
		return 1;
	dir = KREAD(struct dentry, file, d_parent);
	if ((__u64)dir == dentry)
		return 0;
	key = (__u64)dir;
	v.ino = KREAD(struct dentry, dir, d_inode, i_ino);
	cached = bpf_map_lookup_elem(&dir_verdicts, &key);
	if (cached && cached->ino == v.ino)
		return cached->allowed;
	w.dentry = dir;
	struct vfsmount *vm = (struct vfsmount *)mnt;

	if (BPF_CORE_READ(vm, mnt_root) == file) {
		/* The file is a mount's root: walk from it instead. */
		w.dentry = file;
		bpf_loop(MAX_DEPTH, mark_step, &w, 0);
		return w.allowed;
	}
	bpf_loop(MAX_DEPTH, mark_step, &w, 0);
	v.allowed = w.allowed;
	/* A full cache only means the next file walks again. */
	bpf_map_update_elem(&dir_verdicts, &key, &v, BPF_ANY);
	return w.allowed;
}

#define FMODE_WRITE_BIT 0x2  /* include/linux/fs.h: FMODE_WRITE */
#define S_IFMT_BITS 0170000
#define S_IFBLK_BITS 0060000

/* Is the file open at addr a block device opened for writing whose
 * node the allowlist does not name: no allowed mark of its own, which
 * only an allow entry naming its path exactly gives? Writing it writes
 * every file on the device, wherever its node lies. Global, so that its
 * locals are not on its callers' stack (sys_exit's is at Linux 6.1's
 * limit). */
__noinline int device_written(__u64 addr)
{
	struct file *f = (struct file *)addr;

	return f && (BPF_CORE_READ(f, f_mode) & FMODE_WRITE_BIT) &&
	       (BPF_CORE_READ(f, f_inode, i_mode) & S_IFMT_BITS) == S_IFBLK_BITS &&
	       !(mark_of(BPF_CORE_READ(f, f_path.dentry)) & WW_MARK_ALLOW);
}

static __always_inline bool writes_device(struct file *f)
{
	return device_written((__u64)f);
}

/* The quick check for open file f: its dentry and mount loaded as numbers
 * (lib/kread.h). */
static __always_inline int open_file_allowed(struct file *f)
{
	return file_allowed(KREAD_WORD(&f->f_path.dentry), KREAD_WORD(&f->f_path.mnt));
}

#endif
