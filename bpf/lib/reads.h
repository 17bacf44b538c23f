/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Reads of files the run wrote, for cross-test reads: one test reading
 * what another wrote. The kernel keeps the set of files whose write
 * records it sent (the written set); a read-only open of one of them by a
 * process of the tree sends one small record, once per file and reader
 * (process, Go test or announcement epoch), and counts its repeats. User
 * space tells which of those files were written outside the allowlist,
 * and by which test.
 *
 * While the set is empty, a read-only open costs sys_enter and sys_exit
 * one load of written_files each (stash_read, unstashed_read); then, a
 * tracked thread's costs each a lookup of its task storage, and sys_exit
 * one hash lookup.
 */
#ifndef WW_LIB_READS_H
#define WW_LIB_READS_H

#include "uapi.h"
#include "paths.h"
#include "goattr.h"
#include "proc.h"

/* The written set. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, struct file_key);
	__type(value, __u8);
} written SEC(".maps");

/* Reads sent once (see struct read_key): how many more times. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, struct read_key);
	__type(value, __u64);
} reads SEC(".maps");

/* How many files the written set holds: 0 keeps reads on their fast path. */
volatile __u32 written_files;

static __always_inline struct file_key file_key_of(struct file *f)
{
	struct file_key k = {};

	file_identity((__u64)f, &k);
	return k;
}

/* A write record of file f was sent: add f to the written set. */
static __always_inline void note_written(struct file *f)
{
	struct file_key k = file_key_of(f);
	__u8 one = 1;
	long err;

	if (!k.ino)
		return;
	err = bpf_map_update_elem(&written, &k, &one, BPF_NOEXIST);
	if (!err)
		__sync_fetch_and_add(&written_files, 1);
	else if (err != -EEXIST)
		count(WW_STAT_WRITTEN_FULL);
}

/* Enter of an open without write flags: note it for sys_exit when the
 * written set holds a file and the thread is ours. An O_PATH open reads
 * nothing. */
static __always_inline int stash_read(__u32 flags)
{
	struct task_state *st;

	if (!written_files || (flags & O_PATH))
		return 0;
	st = tracked_state();
	if (!st || compat_syscall())
		return 0;
	st->pending = WW_PENDING_READ;
	return 0;
}

/*
 * Exit of a read-only open that returned ret: when the file it opened is
 * in the written set, send its record (the reader, and the file's path),
 * unless this reader's read of it was sent already: then count it.
 */
static __always_inline int read_opened(long ret, struct pt_regs *regs)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	struct go_who who = {};
	struct read_key rk = {};
	struct file *f;
	struct proc *pr;
	struct event *e;
	__u64 *n, zero = 0;
	__u32 off;
	long err;

	if (ret < 0)
		return 0;
	f = fd_file(ret);
	if (!f)
		return 0;
	rk.file = file_key_of(f);
	if (!bpf_map_lookup_elem(&written, &rk.file))
		return 0;
	pr = bpf_map_lookup_elem(&procs, &tgid);
	rk.tgid = tgid;
	rk.test = go_attr(&who, regs);
	rk.epoch = pr ? pr->epoch : 0;
	n = bpf_map_lookup_elem(&reads, &rk);
	if (n) {
		__sync_fetch_and_add(n, 1);
		count(WW_STAT_READ_REPEATS);
		return 0;
	}
	e = scratch_event();
	if (!e)
		return 0;
	fill_hdr(e, WW_EV_READ);
	e->hdr.ret = ret;
	put_who(&e->hdr, &who);
	e->hdr.epoch = rk.epoch;
	off = put_file(e, 0, WW_SLOT_RESOLVED, (__u64)f);
	count(WW_STAT_READS);
	if (!send(e, off))
		return 0;
	err = bpf_map_update_elem(&reads, &rk, &zero, BPF_NOEXIST);
	/* Full map: repeats keep coming as records, nothing is lost. */
	if (err && err != -EEXIST)
		count(WW_STAT_READS_FULL);
	return 0;
}

#endif
