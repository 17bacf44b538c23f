/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Paths judged by their string's prefix: under --enforce, before the file
 * exists, against the allowlist's absolute path prefixes; and a
 * test-boundary announcement, by its marker prefix (is_marker).
 */
#ifndef WW_LIB_PREFIX_H
#define WW_LIB_PREFIX_H

#include "record.h"

/* --enforce: the allowed absolute path prefixes (value 1), for paths the
 * kernel judges as strings, before they exist. */
struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(max_entries, 8192);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct prefix_key);
	__type(value, __u32);
} prefixes SEC(".maps");

/* Room for a path built from a directory slot and a relative path: the
 * first PREFIX_SLOT bytes are the key, the slack keeps masked copies
 * inside; starts holds where each component of the directory slot begins. */
#define MAX_COMPS 64
struct prefix_scratch {
	struct prefix_key key;
	char slack[PREFIX_SLOT];
	__u16 starts[MAX_COMPS];
	__u32 ncomps;
	__u32 pos;
	bool overflow;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct prefix_scratch);
} prefix_scratch SEC(".maps");

static __always_inline struct prefix_scratch *prefix_buf(void)
{
	__u32 zero = 0;
	return bpf_map_lookup_elem(&prefix_scratch, &zero);
}

struct dots {
	__u32 start;
	__u32 len;  /* bytes, NUL excluded */
	__u32 comp; /* bytes of the current component so far */
	bool only_dots;
	bool dotdot;
};

static long dots_step(__u32 i, void *ctx)
{
	struct dots *s = ctx;
	struct event *e;
	char c = '/';

	if (i < s->len) {
		e = scratch_event();
		if (!e) {
			s->dotdot = true;
			return 1;
		}
		c = e->data[at(s->start + i)];
	}
	if (c == '/') {
		if (s->comp == 2 && s->only_dots) {
			s->dotdot = true;
			return 1;
		}
		s->comp = 0;
		s->only_dots = true;
		return i >= s->len;
	}
	s->comp++;
	if (c != '.')
		s->only_dots = false;
	return 0;
}

/* Has the string in data[start..start+len) (NUL included) a ".." component? */
static __always_inline bool has_dotdot(struct event *e, __u32 start, __u32 len)
{
	struct dots s = { .start = start, .len = len - 1, .only_dots = true };

	bpf_loop(PATH_SLOT + 1, dots_step, &s, 0);
	return s.dotdot;
}

/* Is the absolute path in data[start..start+len) (NUL included) under an
 * allowed prefix? Only its first PREFIX_SLOT bytes are compared, and no
 * prefix is longer, so a longer path can still match a directory. */
static __always_inline bool prefix_allowed(struct event *e, __u32 start, __u32 len)
{
	struct prefix_scratch *b = prefix_buf();
	struct prefix_key *k;
	__u32 n = len;

	if (!b)
		return false;
	k = &b->key;
	if (n > PREFIX_SLOT)
		n = PREFIX_SLOT;
	barrier_var(n);
	if (n > PREFIX_SLOT)
		return false;
	if (bpf_probe_read_kernel(k->data, n, &e->data[at(start)]))
		return false;
	k->prefixlen = n * 8;
	return bpf_map_lookup_elem(&prefixes, k) != NULL;
}

struct comps {
	__u32 dstart; /* the directory slot in event.data */
	__u32 dlen;
};

/* Pass 1: note where each component of the directory slot begins. */
static long comp_start_step(__u32 i, void *ctx)
{
	struct comps *c = ctx;
	struct prefix_scratch *b = prefix_buf();
	struct event *e = scratch_event();

	if (i >= c->dlen || !b || !e)
		return 1;
	if (i == 0 || e->data[at(c->dstart + i - 1)] == 0) {
		__u32 n = b->ncomps;

		if (n >= MAX_COMPS) {
			b->overflow = true;
			return 1;
		}
		b->starts[n & (MAX_COMPS - 1)] = i;
		b->ncomps = n + 1;
	}
	return 0;
}

/* Pass 2: copy component ncomps-1-k (outermost first) after a '/'. */
static long comp_copy_step(__u32 k, void *ctx)
{
	struct comps *c = ctx;
	struct prefix_scratch *b = prefix_buf();
	struct event *e = scratch_event();
	__u32 idx, start, end, n, pos;

	if (!b || !e || k >= b->ncomps || b->pos >= PREFIX_SLOT)
		return 1;
	idx = (b->ncomps - 1 - k) & (MAX_COMPS - 1);
	start = b->starts[idx];
	end = idx + 1 < b->ncomps ? b->starts[(idx + 1) & (MAX_COMPS - 1)] : c->dlen;
	if (end <= start + 1)
		return 1;
	n = end - start - 1; /* without its NUL */
	pos = b->pos;
	b->key.data[pos & (PREFIX_SLOT - 1)] = '/';
	pos++;
	barrier_var(n);
	n &= PREFIX_SLOT - 1;
	barrier_var(pos);
	pos &= PREFIX_SLOT - 1;
	if (n && bpf_probe_read_kernel(&b->key.data[pos], n, &e->data[at(c->dstart + start)])) {
		b->overflow = true;
		return 1;
	}
	b->pos = b->pos + 1 + n;
	return 0;
}

/*
 * Is the relative path in data[start..start+len) (NUL included), taken
 * from the directory in data[dstart..dstart+dlen) (components innermost
 * first), under an allowed prefix? The absolute path is put together
 * from both, as far as the first PREFIX_SLOT bytes, and looked up.
 */
static __always_inline bool relative_allowed(struct event *e, __u32 start, __u32 len,
					    __u32 dstart, __u32 dlen)
{
	struct prefix_scratch *b = prefix_buf();
	struct comps c = { .dstart = dstart, .dlen = dlen };
	__u32 pos, n;

	if (!b)
		return false;
	b->ncomps = 0;
	b->pos = 0;
	b->overflow = false;
	bpf_loop(PATH_SLOT, comp_start_step, &c, 0);
	if (b->overflow)
		return false;
	bpf_loop(MAX_COMPS, comp_copy_step, &c, 0);
	if (b->overflow)
		return false;
	pos = b->pos;
	if (pos < PREFIX_SLOT) {
		b->key.data[pos & (PREFIX_SLOT - 1)] = '/';
		pos++;
		n = len;
		if (n > PREFIX_SLOT)
			n = PREFIX_SLOT;
		barrier_var(n);
		n &= 2 * PREFIX_SLOT - 1;
		barrier_var(pos);
		pos &= PREFIX_SLOT - 1;
		if (bpf_probe_read_kernel(&b->key.data[pos], n, &e->data[at(start)]))
			return false;
		pos += len;
	}
	if (pos > PREFIX_SLOT)
		pos = PREFIX_SLOT;
	b->key.prefixlen = pos * 8;
	return bpf_map_lookup_elem(&prefixes, &b->key) != NULL;
}

/* Is the path slot a test-boundary announcement (docs/protocol.md)?
 * Global, so verified once. */
static const char marker_prefix[] = "/dev/null/.writewatch/";

__noinline int is_marker(struct event *e)
{
	if (!e || e->hdr.len[WW_SLOT_PATH] < sizeof(marker_prefix))
		return false;
	return !bpf_strncmp(e->data, sizeof(marker_prefix) - 1, marker_prefix);
}

#endif
