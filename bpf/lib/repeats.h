/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Repeats of sent writes: a write that a process already made the same
 * way, to the same file, for the same test, is counted under its record's
 * key (struct repeat_key) rather than sent again.
 */
#ifndef WW_LIB_REPEATS_H
#define WW_LIB_REPEATS_H

#include "arch.h"
#include "record.h"
#include "goattr.h"
#include "proc.h"

/* Repeats of sent writes (see struct repeat_key): how many more times. A
 * plain hash, so no count is ever evicted; when it is full, repeats are
 * sent as records. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, struct repeat_key);
	__type(value, __u64);
} repeats SEC(".maps");

/*
 * A write to file (a struct file's address) that this process already
 * made the same way, with the same outcome (failed: the call failed),
 * for the same test, since its last test-boundary announcement: counted
 * in the repeats map, and nothing else to do. An
 * open that created its file (created) made a file no earlier write
 * touched, whatever its inode number says: it is always sent. A syscall's
 * (syscall) has its thread's registers for the Go test. Global: its key
 * is not on the stack of the calls that build a record (their chain must
 * fit Linux 6.1's 512 bytes).
 */
__noinline int counted_repeat(__u64 file, __u32 created, struct args *a, __u32 syscall, __u32 failed)
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
		.flags = a->flags | (failed ? WW_REPEAT_FAILED : 0),
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

/* Into rk, the key the repeats of write record e, of the call a, are
 * counted under once it is sent (counted_repeat): its file, process,
 * operation, flags and writer, as the record's header says them. */
static __always_inline void repeat_key_of(struct repeat_key *rk, struct event *e, struct args *a)
{
	*rk = (struct repeat_key){
		.ino = e->hdr.ino, .dev = e->hdr.dev, .gen = e->hdr.gen, .tgid = e->hdr.tgid,
		.op = a->op, .test = e->hdr.test, .epoch = e->hdr.epoch,
		/* WW_REPEAT_FAILED when the call failed (an io_uring request's
		 * record has no result: ret 0), without a branch. */
		.flags = a->flags | ((__u32)e->hdr.ret >> 31) << 30,
	};
}

/* Write record e was sent: its later repeats are counted under rk (its
 * repeat_key_of), when it names a file and was not cut. */
static __always_inline void note_sent(struct repeat_key *rk, struct event *e)
{
	if (rk->ino && !e->hdr.truncated) {
		__u64 zero = 0;

		/* Full map: repeats keep coming as records, nothing is lost. */
		bpf_map_update_elem(&repeats, rk, &zero, BPF_NOEXIST);
	}
}

#endif
