/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Go test attribution: which test each goroutine of a followed Go test
 * binary works for, kept up to date by uprobes that user space attaches
 * per process, and read at every write.
 */
#ifndef WW_LIB_GOATTR_H
#define WW_LIB_GOATTR_H

#include "arch.h"
#include "record.h"

/* Go test binaries being followed, keyed by tgid; filled by user space
 * once it has attached the uprobes, or at the exec from gofiles; deleted
 * at exit. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, __u32);
	__type(value, struct goproc);
} goprocs SEC(".maps");

/* Go test binaries whose uprobes user space attached to the file itself,
 * for every process that runs it (tracer.PrepareGoTest), keyed by the
 * file: a process of the tree that executes one gets its goprocs entry
 * at the exec, and runs on unpaused. Its key's generation is 0: while
 * the uprobes hold the file's inode, its number is not reused, and the
 * entry goes before they do. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, struct file_key);
	__type(value, struct goproc);
} gofiles SEC(".maps");

struct gkey {
	__u32 tgid;
	__u32 _pad;
	__u64 goid;
};

struct gval {
	__u64 token; /* the test this goroutine works for */
	__u64 t;     /* the *testing.T whose tRunner runs on it; 0 if inherited */
	__u32 root;  /* the unnamed T that runs the package's tests: not inherited */
	__u32 _pad;
};

/* Which test each goroutine of a followed Go test binary works for. An
 * LRU map: a goroutine evicted is reported as unknown, never as another's. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, struct gkey);
	__type(value, struct gval);
} goroutines SEC(".maps");

/* Key 0: the last test token handed out. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} tokens SEC(".maps");

/*
 * Go test binaries. A goroutine is found from the g register (R14 under
 * Go's register ABI on amd64, R28 on arm64: GO_G in arch.h), checked against the stack it runs on: the
 * stack pointer must lie inside [g.stack.lo, g.stack.hi), the first two
 * words of runtime.g. A thread that runs no goroutine (a C thread, a
 * signal handler) fails the check and stays unknown.
 */
static __always_inline bool read_goid(const struct goproc *gp, __u64 g, __u64 sp, __u64 *goid)
{
	__u64 stack[2];

	if (!g || bpf_probe_read_user(stack, sizeof(stack), (void *)g))
		return false;
	if (sp < stack[0] || sp >= stack[1])
		return false;
	return bpf_probe_read_user(goid, sizeof(*goid), (void *)(g + gp->goid_off)) == 0;
}

/* Who the current goroutine works for, as go_attr finds it: the
 * fields of the same names in event_hdr. */
struct go_who {
	__u64 test;
	__u64 goid;
	__u32 go;
	__u32 _pad;
};

/* A record's header takes who: the fields of the same names. */
static __always_inline void put_who(struct event_hdr *h, const struct go_who *w)
{
	h->test = w->test;
	h->goid = w->goid;
	h->go = w->go;
}

/* go_attr of Go process gp (its goprocs entry), given its running g and
 * stack pointer: global, so verified once. */
__noinline int go_attr_of(struct go_who *w, const struct goproc *gp, __u64 g, __u64 sp)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	struct gkey k = { .tgid = tgid };
	struct gval *v;

	if (!w || !gp)
		return 0;
	w->go = WW_GO_PROC;
	if (!read_goid(gp, g, sp, &k.goid))
		return 0;
	w->go |= WW_GO_G;
	w->goid = k.goid;
	v = bpf_map_lookup_elem(&goroutines, &k);
	if (!v) {
		struct gkey pk = { .tgid = tgid };

		if (bpf_probe_read_user(&pk.goid, sizeof(pk.goid), (void *)(g + gp->parent_goid_off)))
			return 0;
		v = bpf_map_lookup_elem(&goroutines, &pk);
		if (!v || v->root)
			return 0;
		struct gval nv = { .token = v->token };
		if (bpf_map_update_elem(&goroutines, &k, &nv, BPF_NOEXIST) && !bpf_map_lookup_elem(&goroutines, &k))
			count(WW_STAT_GOROUTINE_FULL);
	}
	w->go |= WW_GO_TEST;
	w->test = v->token;
	return 0;
}

/* The test of the current goroutine: its own entry, or its creator's
 * (one level, for a goroutine created before the uprobes could see it).
 * Fills w (zeroed by the caller); returns its test's token, or 0. */
static __always_inline __u64 go_attr(struct go_who *w, struct pt_regs *regs)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	struct goproc *gp = bpf_map_lookup_elem(&goprocs, &tgid);

	if (!regs || !gp)
		return 0;
	go_attr_of(w, gp, GO_G_READ(regs), GO_SP_READ(regs));
	return w->test;
}

/*
 * Uprobes in Go test binaries, attached per process by user space. Go's
 * register ABI (arch.h): arguments in AX, BX, ... on amd64, R0, R1, ... on
 * arm64; the running g in R14 on amd64, R28 on arm64.
 */

/*
 * A test starts on the current goroutine: t identifies it (its *T, *B or
 * *F, or an example's name), name and name_len are its full name, fn
 * points at the func value it runs (0: unknown). The goroutine now works
 * for it.
 */
static __always_inline int test_started(struct pt_regs *ctx, __u64 t, __u64 name, __u64 name_len, __u64 fn)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	struct goproc *gp = bpf_map_lookup_elem(&goprocs, &tgid);
	struct gkey k = { .tgid = tgid };
	struct gval v = {};
	struct gval *old;
	struct event *e;
	__u32 zero = 0;
	__u64 *seq;
	__u32 len;

	if (!gp || !read_goid(gp, GO_G(ctx), GO_SP(ctx), &k.goid))
		return 0;
	v.t = t;
	old = bpf_map_lookup_elem(&goroutines, &k);
	if (old && old->t == v.t)
		return 0; /* entered again after growing its stack */
	seq = bpf_map_lookup_elem(&tokens, &zero);
	if (!seq)
		return 0;
	v.token = __sync_fetch_and_add(seq, 1) + 1;
	v.root = name_len == 0;
	if (bpf_map_update_elem(&goroutines, &k, &v, BPF_ANY))
		count(WW_STAT_GOROUTINE_FULL);

	e = scratch_event();
	if (!e)
		return 0;
	fill_hdr(e, WW_EV_TEST_START);
	e->hdr.test = v.token;
	e->hdr.goid = k.goid;
	e->hdr.go = WW_GO_PROC | WW_GO_G | WW_GO_TEST;
	len = name_len > PATH_SLOT - 1 ? PATH_SLOT - 1 : name_len;
	if (len && bpf_probe_read_user(&e->data[0], len & (PATH_SLOT - 1), (void *)name) == 0)
		mark(e, WW_SLOT_PATH, 0, len, name_len > len);
	else
		len = 0;
	/* fn's code pointer, for the test's source file and line. */
	__u64 pc = 0;
	barrier_var(len); /* bounded here, for older verifiers (Linux 6.1) */
	len &= PATH_SLOT - 1;
	if (fn && bpf_probe_read_user(&pc, sizeof(pc), (void *)fn) == 0 &&
	    bpf_probe_read_kernel(&e->data[len], sizeof(pc), &pc) == 0) {
		mark(e, WW_SLOT_PATH2, len, len + sizeof(pc), false);
		len += sizeof(pc);
	}
	send(e, len);
	return 0;
}

/* The name (a Go string: pointer and length) of the *T, *B or *F at t:
 * its common.name; a zero length when it cannot be read. */
static __always_inline void common_name(__u64 t, __u64 name[2])
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	struct goproc *gp = bpf_map_lookup_elem(&goprocs, &tgid);

	if (!gp || bpf_probe_read_user(name, 2 * sizeof(__u64), (void *)(t + gp->name_off)))
		name[0] = name[1] = 0;
}

/* Entry of testing.tRunner(t *T, fn func(*T)), or of testing.fRunner(f
 * *F, fn func(*F)), which runs a fuzz target the same way. */
static __always_inline int runner_started(struct pt_regs *ctx)
{
	__u64 name[2];

	common_name(GO_ARG1(ctx), name);
	return test_started(ctx, GO_ARG1(ctx), name[0], name[1], GO_ARG2(ctx));
}

/* Entry of testing.(*B).runN(b *B, n int): a round of a benchmark runs,
 * on its own goroutine. */
static __always_inline int bench_started(struct pt_regs *ctx)
{
	__u64 name[2];

	common_name(GO_ARG1(ctx), name);
	return test_started(ctx, GO_ARG1(ctx), name[0], name[1], 0);
}

/* Entry of testing.runExample(eg InternalExample): the struct comes in
 * registers, Name (a string) in the first two, F (a func value) in the
 * third. The name's pointer identifies the example. */
static __always_inline int example_started(struct pt_regs *ctx)
{
	return test_started(ctx, GO_ARG1(ctx), GO_ARG1(ctx), GO_ARG2(ctx), GO_ARG3(ctx));
}

/* Entry of testing.(*common).runCleanup, which tRunner, fRunner and runN
 * defer, or of testing.(*InternalExample).processRunResult, which
 * runExample defers: the test function has returned (or panicked); its
 * cleanups run next. */
static __always_inline int test_ended(struct pt_regs *ctx)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	struct goproc *gp = bpf_map_lookup_elem(&goprocs, &tgid);
	struct gkey k = { .tgid = tgid };
	struct gval *v;
	struct event *e;

	if (!gp || !read_goid(gp, GO_G(ctx), GO_SP(ctx), &k.goid))
		return 0;
	v = bpf_map_lookup_elem(&goroutines, &k);
	if (!v || !v->t)
		return 0;
	e = scratch_event();
	if (!e)
		return 0;
	fill_hdr(e, WW_EV_TEST_END);
	e->hdr.test = v->token;
	e->hdr.goid = k.goid;
	e->hdr.go = WW_GO_PROC | WW_GO_G | WW_GO_TEST;
	send(e, 0);
	return 0;
}

/* Entry of runtime.runqput(pp *p, gp *g, next bool), which newproc calls
 * with each new goroutine: a goroutine created by one working for a test
 * works for that test too. */
static __always_inline int goroutine_created(struct pt_regs *ctx)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	struct goproc *gp = bpf_map_lookup_elem(&goprocs, &tgid);
	struct gkey k = { .tgid = tgid }, pk = { .tgid = tgid };
	struct gval *pv;
	__u64 g = GO_ARG2(ctx);

	if (!gp || !g)
		return 0;
	if (bpf_probe_read_user(&k.goid, sizeof(k.goid), (void *)(g + gp->goid_off)) ||
	    bpf_probe_read_user(&pk.goid, sizeof(pk.goid), (void *)(g + gp->parent_goid_off)))
		return 0;
	if (!pk.goid || bpf_map_lookup_elem(&goroutines, &k))
		return 0;
	pv = bpf_map_lookup_elem(&goroutines, &pk);
	if (!pv || pv->root)
		return 0;
	struct gval v = { .token = pv->token };
	if (bpf_map_update_elem(&goroutines, &k, &v, BPF_NOEXIST) && !bpf_map_lookup_elem(&goroutines, &k))
		count(WW_STAT_GOROUTINE_FULL);
	return 0;
}

#endif
