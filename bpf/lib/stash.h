/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Syscalls: the entry stores a write's arguments in the calling thread's
 * task storage; the exit sends the record with the return value and
 * always clears the stored arguments.
 */
#ifndef WW_LIB_STASH_H
#define WW_LIB_STASH_H

#include "uapi.h"
#include "arch.h"
#include "enforce.h"
#include "goattr.h"
#include "write.h"
#include "proc.h"
#include "names.h"

/* Enter of clone, fork or vfork: remember the forking goroutine's test
 * for sched_process_fork, which runs inside the same syscall. */
static __always_inline int stash_fork(struct pt_regs *regs)
{
	struct task_state *st = tracked_state();
	struct go_who who = {};

	if (st)
		st->fork_test = go_attr(&who, regs);
	return 0;
}

/* Is a write judged at its entry? The kill tier judges every write; the
 * other tiers judge only metadata changes, which they cannot refuse,
 * unless the metadata guard refuses those (then sys_exit reports what it
 * refused). Settings alone decide, so that without enforcement the
 * verifier drops the judgement from both programs. */
static __always_inline bool judged_at_entry(__u32 op)
{
	return enforce_tier != WW_TIER_NONE && (IS_METADATA(op) ? !meta_guard : enforce_tier == WW_TIER_KILL);
}

/* Enter: remember the arguments of a tracked thread's syscall. Global,
 * so that the verifier walks it once, not once for each syscall of
 * sys_enter's switch. */
__noinline int stash_args(const struct args *in)
{
	struct task_state *st = tracked_state();

	if (!in || !st || compat_syscall())
		return 0;
	st->args = *in;
	st->args.action = 0;
	st->prior.seen = 0;
	st->sums.path = 0;
	st->sums.path2 = 0;
	st->pending = WW_PENDING_WRITE;
	/* An open is judged by the file it opened (lib/names.h). */
	if (!OPENS(in->op)) {
		st->sums.path = name_sum(in->path, in->dfd);
		st->sums.path2 = name_sum(in->path2, in->dfd2);
	}
	if (judged_at_entry(in->op))
		st->args.action = judge_enter(in->path, in->dfd, in->path2, in->dfd2, false);
	/* The kill tier kills the maker of a block device's node, wherever
	 * it would be: through it the device is written. */
	if (enforce_tier == WW_TIER_KILL && block_node(&st->args) && !(st->args.action & WW_ACT_KILLED))
		st->args.action = kill_current() ? WW_ACT_KILLED : 0;
	return 0;
}

static __always_inline int stash(__u32 op, int dfd, const char *path, int dfd2,
				 const char *path2, __u32 flags, __u32 mode)
{
	struct args a = {
		.op = op, .dfd = dfd, .dfd2 = dfd2, .flags = flags, .mode = mode,
		.path = (__u64)path, .path2 = (__u64)path2,
	};

	return stash_args(&a);
}

static __always_inline int stash_open(int dfd, const char *path, __u32 flags, __u32 mode)
{
	if (!(flags & WRITE_FLAGS))
		return stash_read(flags); /* a read: of a file the run wrote? */
	return stash(WW_OP_OPEN, dfd, path, 0, NULL, flags, mode);
}

static __always_inline int stash_openat2(int dfd, const char *path, const struct open_how *uhow)
{
	struct open_how how = {};

	if (bpf_probe_read_user(&how, sizeof(how), uhow))
		return 0;
	/* RESOLVE_IN_ROOT: "/" is the start directory, so an absolute path
	 * is one relative to it; its leading slashes are left out. */
	if (how.resolve & RESOLVE_IN_ROOT) {
		for (int i = 0; i < 8; i++) {
			char c = 0;

			if (bpf_probe_read_user(&c, 1, path) || c != '/')
				break;
			path++;
		}
	}
	return stash_open(dfd, path, how.flags, how.mode);
}

#define AT_SYMLINK_NOFOLLOW 0x100

/* A metadata change, by path (dfd + path) or, with path NULL, by fd;
 * follow: whether it follows a symlink in the path's last component. */
static __always_inline int stash_meta(__u32 op, int dfd, const char *path, bool follow)
{
	if (!watch_metadata)
		return 0;
	return stash(op, dfd, path, 0, NULL, follow && path ? WW_META_FOLLOW : 0, 0);
}

/* A metadata *at call with flags: an empty name with AT_EMPTY_PATH is
 * the file open as dfd, stored as no name, so that a call the metadata
 * guard refused is judged by that file too (a failed call's empty name
 * names nothing). */
static __always_inline int stash_meta_at(__u32 op, int dfd, const char *path, __u32 flags)
{
	char c = 1;

	if ((flags & AT_EMPTY_PATH) && path && !bpf_probe_read_user(&c, 1, path) && !c)
		path = NULL;
	return stash_meta(op, dfd, path, !(flags & AT_SYMLINK_NOFOLLOW));
}

static __always_inline int stash_unlinkat(int dfd, const char *path, __u32 flags)
{
	return stash(flags & AT_REMOVEDIR ? WW_OP_RMDIR : WW_OP_UNLINK, dfd, path, 0, NULL, flags, 0);
}

#define MAP_TYPE_BITS 0x0f   /* MAP_SHARED 0x01, MAP_SHARED_VALIDATE 0x03 */
#define IOCB_CMD_PWRITE 1
#define IOCB_CMD_PWRITEV 8
#define AIO_SCAN_MAX 65536 /* fs.aio-max-nr, by default */

/* mmap: a shared mapping of a file open for writing changes the file
 * with every store, with no syscall (mprotect can add PROT_WRITE later,
 * so prot is not looked at). */
static __always_inline int stash_mmap(__u32 flags, int fd)
{
	__u32 type = flags & MAP_TYPE_BITS;

	if ((type != 0x01 && type != 0x03) || fd < 0 || !tracked_state() || !writes_file(fd_file(fd)))
		return 0;
	return stash(WW_OP_MMAP, fd, NULL, 0, NULL, 0, 0);
}

struct aio_scan {
	const struct iocb *const *iocbs;
	__u32 nr;
	int fd;
};

/* Request i: the one to judge? Returns 1 to stop. */
__noinline int aio_scan_one(struct aio_scan *s, __u32 i)
{
	const struct iocb *cb = NULL;
	__u16 opcode = 0;
	__u32 fd = 0;
	struct file *f;

	if (!s || i >= s->nr || bpf_probe_read_user(&cb, sizeof(cb), &s->iocbs[i]) || !cb)
		return 1;
	if (bpf_probe_read_user(&opcode, sizeof(opcode), &cb->aio_lio_opcode) ||
	    bpf_probe_read_user(&fd, sizeof(fd), &cb->aio_fildes))
		return 1;
	if (opcode != IOCB_CMD_PWRITE && opcode != IOCB_CMD_PWRITEV)
		return 0;
	f = fd_file(fd);
	if (!writes_file(f))
		return 0;
	if (s->fd < 0)
		s->fd = fd;
	/* The first request on a file the marks do not allow is the one
	 * judged; without marks, the first write request. */
	if (use_marks && write_file_allowed((__u64)f))
		return 0;
	s->fd = fd;
	return 1;
}

LOOP_STEP(aio_scan_step, aio_scan_one)

/* io_submit: Linux AIO write requests (IOCB_CMD_PWRITE, PWRITEV), which
 * fanotify does not hear of. One record per call: the first request on
 * a file the marks do not allow. */
static __always_inline int stash_aio(long nr, const struct iocb *const *iocbs)
{
	struct aio_scan s = { .iocbs = iocbs, .nr = nr > AIO_SCAN_MAX ? AIO_SCAN_MAX : nr, .fd = -1 };

	if (nr <= 0 || !tracked_state())
		return 0;
	bpf_loop(AIO_SCAN_MAX, aio_scan_step, &s, 0);
	if (s.fd < 0)
		return 0;
	return stash(WW_OP_AIO, s.fd, NULL, 0, NULL, 0, 0);
}

/* A case for syscall NR_name, for the lists of syscalls (X macros). */
#define NR_CASE(name) case NR_##name:
#define OR_CMD(cmd) || (__u32)ARG(2) == cmd
#define ARG(n) ((unsigned long)SYSCALL_ARG##n(regs))
#define STR(n) ((const char *)ARG(n))
/* Where open and openat keep their flags: read at their entry, and again
 * at the exit of a read-only open that stored nothing (unstashed_read). */
#define OPEN_FLAGS   ARG(2)
#define OPENAT_FLAGS ARG(3)

/* The metadata changes, from sys_enter, and from sys_exit for those the
 * metadata guard refused. Returns whether id is one. */
static __always_inline bool stash_meta_call(struct pt_regs *regs, long id)
{
	switch (id) {
	case NR_chmod:      stash_meta(WW_OP_CHMOD, AT_FDCWD, STR(1), true); return true;
	case NR_fchmod:     stash_meta(WW_OP_CHMOD, ARG(1), NULL, false); return true;
	case NR_fchmodat:   stash_meta(WW_OP_CHMOD, ARG(1), STR(2), true); return true;
	case NR_fchmodat2:  stash_meta_at(WW_OP_CHMOD, ARG(1), STR(2), ARG(4)); return true;
	case NR_chown:      stash_meta(WW_OP_CHOWN, AT_FDCWD, STR(1), true); return true;
	case NR_lchown:     stash_meta(WW_OP_CHOWN, AT_FDCWD, STR(1), false); return true;
	case NR_fchown:     stash_meta(WW_OP_CHOWN, ARG(1), NULL, false); return true;
	case NR_fchownat:   stash_meta_at(WW_OP_CHOWN, ARG(1), STR(2), ARG(5)); return true;
	case NR_utime:
	case NR_utimes:     stash_meta(WW_OP_UTIMES, AT_FDCWD, STR(1), true); return true;
	case NR_futimesat:  stash_meta(WW_OP_UTIMES, ARG(1), STR(2), true); return true; /* NULL path: the fd */
	case NR_utimensat:  stash_meta_at(WW_OP_UTIMES, ARG(1), STR(2), ARG(4)); return true;
	case NR_setxattr:   stash_meta(WW_OP_SETXATTR, AT_FDCWD, STR(1), true); return true;
	case NR_lsetxattr:  stash_meta(WW_OP_SETXATTR, AT_FDCWD, STR(1), false); return true;
	case NR_fsetxattr:  stash_meta(WW_OP_SETXATTR, ARG(1), NULL, false); return true;
	case NR_setxattrat: stash_meta_at(WW_OP_SETXATTR, ARG(1), STR(2), ARG(3)); return true;
	case NR_removexattr: stash_meta(WW_OP_REMOVEXATTR, AT_FDCWD, STR(1), true); return true;
	case NR_lremovexattr: stash_meta(WW_OP_REMOVEXATTR, AT_FDCWD, STR(1), false); return true;
	case NR_fremovexattr: stash_meta(WW_OP_REMOVEXATTR, ARG(1), NULL, false); return true;
	case NR_removexattrat: stash_meta_at(WW_OP_REMOVEXATTR, ARG(1), STR(2), ARG(3)); return true;
	case NR_file_setattr: stash_meta_at(WW_OP_SETFLAGS, ARG(1), STR(2), ARG(5)); return true;
	case NR_ioctl:
		/* Only the commands that change inode flags (chattr). */
		if (false WW_SETFLAGS_IOCTLS(OR_CMD))
			stash_meta(WW_OP_SETFLAGS, ARG(1), NULL, false);
		return true;
	}
	return false;
}

/*
 * Entry of every syscall of every process: the syscall number is checked
 * first, so everything else costs one switch. link and symlink create
 * only their new name, which is the one judged.
 */
static __always_inline int syscall_entered(struct pt_regs *regs, long id)
{
	switch (id) {
	case NR_open:       return stash_open(AT_FDCWD, STR(1), OPEN_FLAGS, ARG(3));
	case NR_openat:     return stash_open(ARG(1), STR(2), OPENAT_FLAGS, ARG(4));
	case NR_openat2:    return stash_openat2(ARG(1), STR(2), (const struct open_how *)ARG(3));
	case NR_creat:      return stash(WW_OP_CREAT, AT_FDCWD, STR(1), 0, NULL, O_CREAT | O_WRONLY | O_TRUNC, ARG(2));
	case NR_truncate:   return stash(WW_OP_TRUNCATE, AT_FDCWD, STR(1), 0, NULL, 0, 0);
	case NR_rename:     return stash(WW_OP_RENAME, AT_FDCWD, STR(1), AT_FDCWD, STR(2), 0, 0);
	case NR_renameat:   return stash(WW_OP_RENAME, ARG(1), STR(2), ARG(3), STR(4), 0, 0);
	case NR_renameat2:  return stash(WW_OP_RENAME, ARG(1), STR(2), ARG(3), STR(4), ARG(5), 0);
	case NR_unlink:     return stash(WW_OP_UNLINK, AT_FDCWD, STR(1), 0, NULL, 0, 0);
	case NR_unlinkat:   return stash_unlinkat(ARG(1), STR(2), ARG(3));
	case NR_rmdir:      return stash(WW_OP_RMDIR, AT_FDCWD, STR(1), 0, NULL, 0, 0);
	case NR_mkdir:      return stash(WW_OP_MKDIR, AT_FDCWD, STR(1), 0, NULL, 0, ARG(2));
	case NR_mkdirat:    return stash(WW_OP_MKDIR, ARG(1), STR(2), 0, NULL, 0, ARG(3));
	case NR_link:       return stash(WW_OP_LINK, AT_FDCWD, STR(1), AT_FDCWD, STR(2), 0, 0);
	case NR_linkat:     return stash(WW_OP_LINK, ARG(1), STR(2), ARG(3), STR(4), ARG(5), 0);
	case NR_symlink:    return stash(WW_OP_SYMLINK, AT_FDCWD, STR(2), 0, NULL, 0, 0);
	case NR_symlinkat:  return stash(WW_OP_SYMLINK, ARG(2), STR(3), 0, NULL, 0, 0);
	case NR_mknod:      return stash(WW_OP_MKNOD, AT_FDCWD, STR(1), 0, NULL, 0, ARG(2));
	case NR_mknodat:    return stash(WW_OP_MKNOD, ARG(1), STR(2), 0, NULL, 0, ARG(3));
	case NR_mmap:       return stash_mmap(ARG(4), ARG(5));
	case NR_io_submit:  return stash_aio(ARG(2), (const struct iocb *const *)ARG(3));
	META_SYSCALLS(NR_CASE)
		stash_meta_call(regs, id);
		return 0;
	case NR_clone: case NR_clone3: case NR_fork: case NR_vfork:
		return stash_fork(regs);
	NR_CASE(unshare)
		return contents_unsharing();
	PRIVILEGED_CALLS(NR_CASE)
		return contents_entered(id);
	}
	return 0;
}

static __always_inline bool stashing(long nr)
{
	switch (nr) {
	STASHING_SYSCALLS(NR_CASE)
		return true;
	}
	return false;
}

/* A tracked process made a fanotify group whose events hand it
 * descriptors open for writing (event_f_flags O_WRONLY or O_RDWR): each
 * opens a file with no open call, and writes through it make no
 * fanotify event (the kernel opens them FMODE_NONOTIFY). Neither the
 * records nor the filesystem witness can see those writes: counted, and
 * the run is incomplete. */
static __always_inline int fanotify_made(struct pt_regs *regs, long ret)
{
	if (ret < 0 || !(ARG(2) & 3 /* O_ACCMODE */) || compat_syscall() || !tracked_state())
		return 0;
	count(WW_STAT_FANOTIFY_WRITABLE);
	return 0;
}

/* The record of a stored call that returned ret. Global, so that the
 * verifier walks emit_write once, whichever state of sys_exit reaches it. */
__noinline int syscall_emit(struct args *a, long ret)
{
	if (!a)
		return 0;
	return emit_write(a, ret, WW_VIA_SYSCALL);
}

/* A read-only open that returned ret (lib/reads.h): global, so that its
 * locals are not on the stack of sys_exit's deepest calls. */
__noinline int syscall_read(long ret)
{
	return read_opened(ret, syscall_regs());
}

/* An open without write flags while the written set is empty: its entry
 * stored nothing (stash_read), and the set only grows, so its exit has
 * no stored call to look up. */
static __always_inline bool unstashed_read(struct pt_regs *regs, long nr)
{
	if (written_files)
		return false;
	switch (nr) {
	case NR_open:
		return !(OPEN_FLAGS & WRITE_FLAGS);
	case NR_openat:
		return !(OPENAT_FLAGS & WRITE_FLAGS);
	}
	return false;
}

/* Exit of every syscall: send the record of a stored call, always
 * clearing its arguments; a ptrace attach and a process_vm_writev go to
 * lib/proc.h, a fanotify group to fanotify_made, the calls after which
 * contents must be watched to lib/contents.h. Any other syscall costs one switch. */
static __always_inline int syscall_exited(struct pt_regs *regs, long ret)
{
	struct task_state *st;
	struct event *e;
	struct args *a;

	switch (SYSCALL_NR(regs)) {
	NR_CASE(ptrace)
		return proc_ptraced(ARG(1), ret);
	NR_CASE(process_vm_writev)
		return proc_vm_written(ARG(1), ret);
	NR_CASE(fanotify_init)
		return fanotify_made(regs, ret);
	CONTENTS_CALLS(NR_CASE)
		return contents_exited(regs, SYSCALL_NR(regs), ret);
	PRIVILEGED_CALLS(NR_CASE)
		return contents_privileged(SYSCALL_NR(regs), ret);
	}
	if (!stashing(SYSCALL_NR(regs)) || unstashed_read(regs, SYSCALL_NR(regs)))
		return 0;
	/* Of the ioctls, only inode flag changes. */
	if (SYSCALL_NR(regs) == NR_ioctl && !(false WW_SETFLAGS_IOCTLS(OR_CMD)))
		return 0;
	st = bpf_task_storage_get(&tasks, bpf_get_current_task_btf(), 0, 0);
	if (!st)
		return 0;
	if (!st->pending) {
		/* Refused by the metadata guard before sys_enter could see it:
		 * its arguments are still in the registers. */
		if (!meta_guard || ret != -EPERM || !st->tracked || compat_syscall())
			return 0;
		if (!stash_meta_call(regs, SYSCALL_NR(regs)) || !st->pending)
			return 0;
		st->args.action = refuse_current(enforce_kill);
	}
	if (st->pending == WW_PENDING_READ) {
		st->pending = WW_PENDING_NONE;
		return syscall_read(ret);
	}
	/* The record is built from the stored arguments in place: a copy on
	 * the stack would take 40 of sys_exit's bytes, and its deepest chain
	 * of calls (judge_enter's) is at Linux 6.1's limit of 512. Nothing
	 * else reads them once pending is cleared. */
	a = &st->args;
	st->pending = WW_PENDING_NONE;
	/* The path could not be read at the entry: judged now (asked of the
	 * settings first, so that without enforcement the verifier does not
	 * walk judge_enter here). */
	if (judged_at_entry(a->op) && (a->action & WW_ACT_UNREAD))
		a->action = ret < 0 ? 0 : judge_exit(a->path, a->dfd, a->path2, a->dfd2,
						     OPENS(a->op) &&
						     !(a->flags & __O_TMPFILE) ? ret : -1);
	/* mmap returns an address: the record keeps an int, 0 or -errno. */
	if (a->op == WW_OP_MMAP && ret > 0)
		ret = 0;
	/* The names' sums at the entry, for the record (lib/names.h). */
	e = scratch_event();
	if (e)
		e->sums = st->sums;
	return syscall_emit(a, ret);
}

#endif
