/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Paths into a record's slots: strings as the process passed them, and
 * the components of a file's or directory's path, walked from its dentry
 * up to the process's root.
 */
#ifndef WW_LIB_PATHS_H
#define WW_LIB_PATHS_H

#include "uapi.h"
#include "marks.h"
#include "record.h"
#include "loop.h"

struct walk {
	struct dentry *dentry;
	struct vfsmount *mnt;
	struct dentry *root_dentry;
	struct vfsmount *root_mnt;
	__u32 off;
	__u32 end;
	__u32 marks; /* enum ww_mark bits met on the way up */
	__u32 own;   /* those of the first dentry */
	bool truncated; /* the names did not fit: only marks are gathered from there */
	bool done;
	bool detached; /* ended on a kernel-internal mount: no path */
	bool read_err; /* a name could not be read (counted once the walk ends) */
};

/* One step up from w->dentry: emit its name, or cross a mount point.
 * Step i of MAX_DEPTH: returns 1 to stop. */
__noinline int walk_one(struct walk *w, __u32 i)
{
	if (!w || i >= MAX_DEPTH)
		return 1;
	struct dentry *d = w->dentry;
	struct vfsmount *mnt = w->mnt;
	struct event *e;

	if (use_marks) {
		__u32 m = mark_of(d);

		w->marks |= m;
		if (!i)
			w->own = m;
	}
	if (d == w->root_dentry && mnt == w->root_mnt) {
		w->done = true;
		return 1;
	}
	struct dentry *up;
	switch (step_up(d, &w->mnt, &up, &w->detached)) {
	case UP_END:
		w->done = true;
		return 1;
	case UP_MOUNT:
		w->dentry = up;
		return 0;
	}
	/* A path too long for the slot is still walked to its end for its
	 * marks: the directory of a deep tree is judged by where it lies. */
	if (w->truncated) {
		w->dentry = up;
		return !use_marks;
	}

	__u32 need = BPF_CORE_READ(d, d_name.len) + 1;
	if (need > NAME_SLOT || w->off + need > w->end) {
		w->truncated = true;
		w->dentry = up;
		return !use_marks;
	}
	e = scratch_event();
	if (!e)
		return 1;
	/* need <= NAME_SLOT already; the mask shows the verifier a bound. */
	barrier_var(need);
	need &= 2 * NAME_SLOT - 1;
	long n = bpf_probe_read_kernel_str(&e->data[at(w->off)], need,
					   BPF_CORE_READ(d, d_name.name));
	if (n <= 0) {
		w->read_err = true;
		w->truncated = true;
		return 1;
	}
	w->off += n;
	w->dentry = up;
	return 0;
}

LOOP_STEP(walk_step, walk_one)

/*
 * Write the components of a path (innermost first) into a slot. A global
 * function, so the verifier checks it once rather than at every caller;
 * kernel pointers therefore arrive as plain numbers.
 */
__noinline int put_path(struct event *e, __u32 off, __u32 slot, __u64 dentry, __u64 mnt)
{
	struct task_struct *task = (struct task_struct *)bpf_get_current_task();
	struct walk w = {
		.dentry = (struct dentry *)dentry,
		.mnt = (struct vfsmount *)mnt,
		.root_dentry = BPF_CORE_READ(task, fs, root.dentry),
		.root_mnt = BPF_CORE_READ(task, fs, root.mnt),
		.off = off,
		.end = off + PATH_SLOT,
	};

	if (!e || !dentry || !mnt || off > DATA_SZ - PATH_SLOT)
		return off;
	bpf_loop(MAX_DEPTH, walk_step, &w, 0);
	/* Counted here, so that the step's frame (walk_one), the deepest
	 * of sys_exit's chain, calls nothing. */
	if (w.read_err)
		count(WW_STAT_READ_ERR);
	barrier_var(slot);
	if (slot >= NSLOTS)
		return off;
	e->hdr.len[slot] = w.off - off;
	e->hdr.present |= 1 << slot;
	/* Clean only once every mark up to the root was met; and whether
	 * the slot's own directory has WW_MARK_MOVES, without a branch. */
	if (w.done && (w.marks & (WW_MARK_ALLOW | WW_MARK_DENY)) == WW_MARK_ALLOW)
		e->hdr.clean |= 1 << slot;
	e->hdr.clean |= (w.own & WW_MARK_MOVES) * (WW_CLEAN_MOVES / WW_MARK_MOVES) << slot;
	if (w.detached)
		e->hdr.detached |= 1 << slot;
	if (w.truncated || !w.done) {
		e->hdr.truncated |= 1 << slot;
		count(WW_STAT_TRUNCATED);
	}
	return w.off;
}

/* The address of the current process's open file fd, or 0. Global, like
 * the functions below: each is verified once rather than at every caller,
 * so kernel pointers pass as plain numbers (fd_file gives back the type).
 * The task's fields are loaded directly, as the verifier knows its type
 * (a faulting load reads 0), a fraction of a helper call each: this runs
 * for every open of the tree; the slot of the array of files too, where
 * the kernel allows it (lib/kread.h). */
__noinline __u64 fd_file_addr(int fd)
{
	struct task_struct *task = current_task();
	struct fdtable *fdt = task->files->fdt;

	if (fd < 0 || !fdt || (unsigned int)fd >= fdt->max_fds)
		return 0;
	return KREAD_WORD(&fdt->fd[fd]);
}

static __always_inline struct file *fd_file(int fd)
{
	return (struct file *)fd_file_addr(fd);
}

#define S_IFREG_BITS 0100000
#define S_IFDIR_BITS 0040000

/* Can a write through open file f change a regular file? */
static __always_inline bool writes_file(struct file *f)
{
	return f && (BPF_CORE_READ(f, f_mode) & FMODE_WRITE_BIT) &&
	       (BPF_CORE_READ(f, f_inode, i_mode) & S_IFMT_BITS) == S_IFREG_BITS;
}

/* The file open at addr, as its inode's number, device and generation
 * (all 0 without a file). Global, so that its loads are verified once,
 * not in every state of every caller. */
__noinline int file_identity(__u64 addr, struct file_key *k)
{
	struct file *f = (struct file *)addr;
	struct inode *inode;

	if (!k)
		return 0;
	k->ino = 0;
	k->dev = 0;
	k->gen = 0;
	if (!f)
		return 0;
	inode = KREAD(struct file, f, f_inode);
	k->ino = KREAD(struct inode, inode, i_ino);
	k->dev = KREAD(struct inode, inode, i_sb, s_dev);
	k->gen = KREAD(struct inode, inode, i_generation);
	return 0;
}

/*
 * Does open file addr have more than one name (a file, not a directory,
 * with more than one link)? A write through a name the marks allow may
 * then change a file whose other name the allowlist protects: a hard
 * link made during the run is not reported, the writes through it are
 * (internal/judge/links.go), so the marks do not settle them. Global,
 * so verified once.
 */
__noinline int shared_file(__u64 addr)
{
	struct file *f = (struct file *)addr;
	struct inode *inode;

	if (!f)
		return 0;
	inode = KREAD(struct file, f, f_inode);
	return (KREAD(struct inode, inode, i_mode) & S_IFMT_BITS) != S_IFDIR_BITS &&
	       KREAD(struct inode, inode, __i_nlink) > 1;
}

/* The quick check of a write through open file addr: the marks allow
 * its file (open_file_allowed), and it has one name (shared_file).
 * Global, so verified once. */
__noinline int write_file_allowed(__u64 addr)
{
	struct file *f = (struct file *)addr;

	return f && !shared_file(addr) && open_file_allowed(f);
}

/* The path of open file addr, and its inode in the header. A file with
 * more than one name is never clean (shared_file). */
__noinline int put_file(struct event *e, __u32 off, __u32 slot, __u64 addr)
{
	struct file *f = (struct file *)addr;
	struct file_key id = {};

	if (!e || !f)
		return off;
	file_identity(addr, &id);
	e->hdr.ino = id.ino;
	e->hdr.dev = id.dev;
	e->hdr.gen = id.gen;
	/* As numbers: put_path is a global function. */
	off = put_path(e, off, slot, KREAD_WORD(&f->f_path.dentry), KREAD_WORD(&f->f_path.mnt));
	if (slot == WW_SLOT_RESOLVED && shared_file(addr))
		e->hdr.clean &= ~(1 << WW_SLOT_RESOLVED);
	return off;
}

/* The directory a relative path given with dfd starts from. */
__noinline int put_dir(struct event *e, __u32 off, __u32 slot, int dfd)
{
	struct task_struct *task = (struct task_struct *)bpf_get_current_task();

	if (dfd == AT_FDCWD)
		return put_path(e, off, slot, (__u64)BPF_CORE_READ(task, fs, pwd.dentry),
				(__u64)BPF_CORE_READ(task, fs, pwd.mnt));
	return put_file(e, off, slot, fd_file_addr(dfd));
}

/* A path string at addr, with its start directory when it is relative
 * and the directory is wanted. */
static __always_inline __u32 put_target(struct event *e, __u32 off, int pslot, int dslot,
					__u64 addr, int dfd, bool dir, bool kernel)
{
	__u32 start = off;

	off = put_str(e, off, pslot, addr, kernel);
	if (dir && off > start && e->data[at(start)] != '/')
		off = put_dir(e, off, dslot, dfd);
	return off;
}

/* The kernel's links to a process's own descriptors, for fd_link:
 * constant strings, as bpf_strncmp wants them. */
static const char fdl_stdin[] = "/dev/stdin", fdl_stdout[] = "/dev/stdout",
		  fdl_stderr[] = "/dev/stderr", fdl_dev[] = "/dev/fd/", fdl_proc[] = "/proc/self/fd/";

/*
 * The descriptor an absolute path stands for when it is one of the
 * kernel's links to the process's own descriptors (/dev/stdin,
 * /dev/stdout, /dev/stderr, /dev/fd/N, /proc/self/fd/N), or -1. Opening one reopens
 * what the descriptor holds, often a pipe or a terminal. The names are
 * compared by bpf_strncmp (Linux 5.17), not byte by byte: unrolled, those
 * comparisons were a sixth of what the verifier walked in sys_exit.
 */
static __always_inline int fd_link(struct event *e, __u32 start, __u32 len)
{
	const char *p = &e->data[at(start)];
	__u32 skip = 0;
	int fd = 0;

	if (len == sizeof(fdl_stdin) && !bpf_strncmp(p, sizeof(fdl_stdin), fdl_stdin))
		return 0;
	if (len == sizeof(fdl_stdout) && !bpf_strncmp(p, sizeof(fdl_stdout), fdl_stdout))
		return 1;
	if (len == sizeof(fdl_stderr) && !bpf_strncmp(p, sizeof(fdl_stderr), fdl_stderr))
		return 2;
	if (len > sizeof(fdl_dev) && !bpf_strncmp(p, sizeof(fdl_dev) - 1, fdl_dev))
		skip = sizeof(fdl_dev) - 1;
	else if (len > sizeof(fdl_proc) && !bpf_strncmp(p, sizeof(fdl_proc) - 1, fdl_proc))
		skip = sizeof(fdl_proc) - 1;
	if (!skip || len - 1 - skip > 6)
		return -1;
	for (int i = 0; i < 7; i++) {
		char c = e->data[at(start + skip + i)];

		if (c == 0)
			return i ? fd : -1;
		if (c < '0' || c > '9')
			return -1;
		fd = fd * 10 + (c - '0');
	}
	return -1;
}

/*
 * The descriptor the record's path (data[0..len)) names as /dev/stdout,
 * /proc/self/fd/N and the like, or -1. A global function, checked once by
 * the verifier rather than on every path of the write's record.
 */
__noinline int record_fd_link(__u32 len)
{
	struct event *e = scratch_event();

	return e ? fd_link(e, 0, len) : -1;
}

#endif
