/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The names a call passed, read twice. A record's path is read from the
 * process's memory at the call's exit (lib/record.h, put_str), after
 * the kernel read it: another thread may have rewritten it meanwhile,
 * while the kernel walked a slow path, so that the record names an
 * allowed file and the call changed a protected one. So at the entry of
 * a write by name (all but an open, which is judged by the file it
 * opened), the name is summed (name_sum: 8 bytes at a time, keyed by
 * name_seed, which the loader draws at random, so that no name can be
 * made to sum as another), with its start directory when it is relative
 * (the working directory, or the dirfd's file, which another thread may
 * change too); at the exit, the name the record holds is summed the same
 * way (name_rewritten). When the two differ, the record is marked
 * (WW_REC_REWRITTEN), never settled in the kernel, and user space fails
 * the run as incomplete (88). A name that could not be read at the
 * entry (its page not faulted in yet) marks the record too, when
 * another thread shares the process's memory.
 *
 * A name rewritten to the same text around the kernel's own read (an
 * allowed name at the entry, a protected one as the kernel reads it, the
 * allowed one again by the exit) is not caught: only the kernel's copy
 * would tell, which no tracepoint sees (docs/limits.md).
 */
#ifndef WW_LIB_NAMES_H
#define WW_LIB_NAMES_H

#include "uapi.h"
#include "task.h"
#include "record.h"
#include "paths.h"
#include "rows.h"

/* Set by the loader: a random key, which every sum starts from. */
const volatile __u64 name_seed = 0;

/* The most 8-byte words summed of one name: PATH_SLOT's. */
#define NAME_WORDS (PATH_SLOT / 8)

static __always_inline __u64 sum_word(__u64 h, __u64 w)
{
	h ^= w;
	h *= 0x9e3779b97f4a7c15ULL;
	return h ^ (h >> 31);
}

/* The identity of the directory a relative name given with dfd starts
 * from: the working directory, or the dirfd's open file. */
static __always_inline __u64 start_of(int dfd)
{
	struct task_struct *t;

	if (dfd != AT_FDCWD)
		return fd_file_addr(dfd);
	t = (struct task_struct *)bpf_get_current_task();
	return (__u64)BPF_CORE_READ(t, fs, pwd.dentry) ^ (__u64)BPF_CORE_READ(t, fs, pwd.mnt);
}

struct user_sum {
	__u64 addr;
	__u64 h;
	__u8 first; /* the name's first byte */
	bool done;
};

/* Word i of the name at s->addr: summed; returns 1 to stop, at its end
 * or where it cannot be read (done unset). */
static long user_sum_step(__u32 i, void *ctx)
{
	struct user_sum *s = ctx;
	char buf[9] = {};
	__u64 w = 0;
	long n;

	n = bpf_probe_read_user_str(buf, sizeof(buf), (const void *)(s->addr + 8 * (__u64)i));
	if (n <= 0)
		return 1;
	if (i == 0)
		s->first = buf[0];
	__builtin_memcpy(&w, buf, 8);
	s->h = sum_word(s->h, w);
	if (n < (long)sizeof(buf)) {
		s->done = true;
		return 1;
	}
	return 0;
}

/* The sum of the user-space name at addr, given with dfd, or 0 when it
 * cannot be read now. Global, so verified once. */
__noinline __u64 name_sum(__u64 addr, int dfd)
{
	struct user_sum s = { .addr = addr, .h = name_seed };

	if (!addr)
		return 0;
	bpf_loop(NAME_WORDS, user_sum_step, &s, 0);
	if (!s.done)
		return 0;
	if (s.first != '/')
		s.h = sum_word(s.h, start_of(dfd));
	return s.h ? s.h : 1;
}

/* The length of record e's slot (a constant), 0 when absent or cut. */
#define whole_len(e, slot)                                                                 \
	(((e)->hdr.present & (1 << (slot))) && !((e)->hdr.truncated & (1 << (slot))) ? \
		 (e)->hdr.len[slot] :                                                      \
		 0)

struct slot_sum {
	__u32 start;
	__u32 len; /* NUL included */
	__u64 h;
};

/* Word i of the slot: summed, its bytes past the name's NUL as 0. */
static long slot_sum_step(__u32 i, void *ctx)
{
	struct slot_sum *s = ctx;
	struct event *e = scratch_event();
	__u64 w = 0;
	__u32 off = 8 * i;

	if (!e || off >= s->len)
		return 1;
	/* Little-endian, as the entry's words are read: byte b in bits 8b.
	 * data's slack keeps 8 bytes from any masked offset inside. */
	bpf_probe_read_kernel(&w, sizeof(w), &e->data[at(s->start + off)]);
	if (s->len - off < 8)
		w &= (1ULL << (8 * (s->len - off))) - 1;
	s->h = sum_word(s->h, w);
	return 0;
}

/*
 * Has the name the record holds at data[start], len bytes with its NUL
 * (0: none, or cut), with its start directory when relative, as dfd
 * gives it now, been rewritten since the entry, whose sum was entry (0:
 * not read then)? Global, so verified once.
 */
__noinline int name_rewritten(struct event *e, __u32 start, __u32 len, __u64 entry, int dfd)
{
	struct slot_sum s = { .start = start, .len = len, .h = name_seed };
	struct task_struct *t;

	if (!e || !len)
		return false;
	if (!entry) {
		/* Not read at the entry: only another thread (or a process
		 * sharing the memory) could have changed it. */
		t = (struct task_struct *)bpf_get_current_task();
		return BPF_CORE_READ(t, mm, mm_users.counter) > 1;
	}
	bpf_loop(NAME_WORDS, slot_sum_step, &s, 0);
	if (e->data[at(start)] != '/')
		s.h = sum_word(s.h, start_of(dfd));
	if (!s.h)
		s.h = 1;
	return s.h != entry;
}

/* Was a name of write record e rewritten since its call's entry (args
 * a; the sums at the entry in e->sums, which sys_exit put there)? An
 * open is judged by the file it opened. Global, so verified once. */
__noinline int names_rewritten(struct event *e, struct args *a)
{
	if (!e || !a || OPENS(a->op))
		return false;
	if (name_rewritten(e, 0, whole_len(e, WW_SLOT_PATH), e->sums.path, a->dfd))
		return true;
	return a->path2 && name_rewritten(e, e->hdr.len[WW_SLOT_PATH] + e->hdr.len[WW_SLOT_DIR],
					  whole_len(e, WW_SLOT_PATH2), e->sums.path2, a->dfd2);
}

#endif
