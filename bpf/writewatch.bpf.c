// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * writewatch kernel side: follow one process tree and report every
 * write-intent filesystem syscall it makes.
 *
 * The sys_enter program stores a write's arguments in the calling
 * thread's task storage; the sys_exit program sends the record with the
 * return value and always clears the stored arguments. sched_process_fork
 * adds new threads and processes of the tree before they run;
 * sched_process_exit removes them.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_tracing.h>
#include "writewatch.h"
#include "syscalls.h"
#include "walk.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* Set by the loader. Writewatch's own PID namespace, to report ids the
 * user recognises; 0 means writewatch runs in the initial namespace. */
const volatile __u64 pidns_dev = 0;
const volatile __u64 pidns_ino = 0;
/* Set by the loader when the marks map holds the allowlist's inodes. */
const volatile bool use_marks = false;
/* Report metadata changes (chmod, chown, utimes, xattrs) too. */
const volatile bool watch_metadata = true;
/* Wake the reader once this much is waiting; below it, the reader polls. */
const volatile __u64 wakeup_bytes = 1 << 20;
/* Set by the loader: pause Go test binaries at exec so that user space
 * can attach the test-boundary uprobes before their first instruction. */
const volatile __u32 follow_go_tests = 0;
/* --enforce: enum ww_tier, and whether to kill the writer. */
const volatile __u32 enforce_tier = WW_TIER_NONE;
const volatile bool enforce_kill = false;
/* --enforce with the metadata guard (metaguard/): a seccomp filter hands
 * COMMAND's metadata changes to writewatch, which refuses those outside
 * the grants before they run. A refused call never reaches sys_enter;
 * sys_exit sees it (EPERM) and reports it. */
const volatile bool meta_guard = false;

#define O_WRONLY    00000001
#define O_RDWR      00000002
#define O_CREAT     00000100
#define O_TRUNC     00001000
#define O_APPEND    00002000
#define __O_TMPFILE 020000000
#define WRITE_FLAGS (O_WRONLY | O_RDWR | O_CREAT | O_TRUNC | O_APPEND | __O_TMPFILE)
#define AT_FDCWD    -100
#define AT_REMOVEDIR 0x200
#define SIGSTOP     19
#define EPERM       1
#define EACCES      13

struct proc {
	__u32 parent; /* tgid of the process of the tree that made this one */
	__u32 epoch;  /* test-boundary announcements it made (docs/protocol.md) */
};

/* Processes of the traced tree, keyed by tgid. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 32768);
	__type(key, __u32);
	__type(value, struct proc);
} procs SEC(".maps");

/*
 * Key 0 holds writewatch's own tgid in its PID namespace while it starts
 * COMMAND, 0 otherwise: the process it forks then is the tree's root.
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} launcher SEC(".maps");

/* Repeats of sent writes (see struct repeat_key): how many more times. A
 * plain hash, so no count is ever evicted; when it is full, repeats are
 * sent as records. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, struct repeat_key);
	__type(value, __u64);
} repeats SEC(".maps");

/* Go test binaries being followed, keyed by tgid; filled by user space
 * once it has attached the uprobes, deleted at exit. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, __u32);
	__type(value, struct goproc);
} goprocs SEC(".maps");

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

struct event {
	struct event_hdr hdr;
	char data[DATA_SZ + PATH_SLOT]; /* slack so masked offsets stay inside */
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct event);
} scratch SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 8 << 20); /* the loader may resize */
} events SEC(".maps");

/* Make the shared types visible to bpf2go. */
const struct event_hdr *unused_event_hdr __attribute__((unused));
const enum ww_op *unused_op __attribute__((unused));
const enum ww_event_kind *unused_kind __attribute__((unused));
const enum ww_stat *unused_stat __attribute__((unused));
const enum ww_slot *unused_slot __attribute__((unused));
const enum ww_mark *unused_mark __attribute__((unused));
const enum ww_via *unused_via __attribute__((unused));
const struct repeat_key *unused_repeat_key __attribute__((unused));
const enum ww_go_flag *unused_go_flag __attribute__((unused));
const enum ww_meta_flag *unused_meta_flag __attribute__((unused));
const struct goproc *unused_goproc __attribute__((unused));
const enum ww_tier *unused_tier __attribute__((unused));
const enum ww_action *unused_action __attribute__((unused));

/* An offset into event.data the verifier can see is in bounds: the
 * barrier keeps the compiler from dropping a mask it thinks redundant. */
static __always_inline __u32 at(__u32 off)
{
	barrier_var(off);
	return off & (DATA_SZ - 1);
}

/* The same question for programs that cannot reach task storage (raw
 * tracepoints), by process. */
static __always_inline bool proc_tracked(void)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;

	return bpf_map_lookup_elem(&procs, &tgid) != NULL;
}

/* The current process's tgid in writewatch's PID namespace (0: none). */
static __always_inline __u32 ns_tgid(void)
{
	struct bpf_pidns_info ns = {};

	if (!pidns_ino)
		return bpf_get_current_pid_tgid() >> 32;
	if (bpf_get_ns_current_pid_tgid(pidns_dev, pidns_ino, &ns, sizeof(ns)))
		return 0;
	return ns.tgid;
}

/* Is the current process writewatch, starting COMMAND right now? */
static __always_inline bool is_launcher(void)
{
	__u32 zero = 0;
	__u32 *self = bpf_map_lookup_elem(&launcher, &zero);

	return self && *self && *self == ns_tgid();
}

static __always_inline struct event *scratch_event(void)
{
	__u32 zero = 0;
	return bpf_map_lookup_elem(&scratch, &zero);
}

static __always_inline void fill_hdr(struct event *e, __u32 kind)
{
	struct task_struct *task = (struct task_struct *)bpf_get_current_task();
	__u64 id = bpf_get_current_pid_tgid();

	e->hdr.ts = bpf_ktime_get_boot_ns();
	e->hdr.test = 0;
	e->hdr.goid = 0;
	e->hdr.go = 0;
	e->hdr.epoch = 0;
	e->hdr.kind = kind;
	e->hdr.op = 0;
	e->hdr.tgid = id >> 32;
	e->hdr.pid = (__u32)id;
	e->hdr.ppid = BPF_CORE_READ(task, real_parent, tgid);
	e->hdr.ret = 0;
	e->hdr.flags = 0;
	e->hdr.mode = 0;
	e->hdr.truncated = 0;
	e->hdr.present = 0;
	e->hdr.clean = 0;
	e->hdr.via = WW_VIA_SYSCALL;
	e->hdr.detached = 0;
	e->hdr.ino = 0;
	e->hdr.dev = 0;
	e->hdr.action = 0;
	for (int i = 0; i < NSLOTS; i++)
		e->hdr.len[i] = 0;
	e->hdr.ns_tgid = ns_tgid();
	bpf_get_current_comm(e->hdr.comm, sizeof(e->hdr.comm));
}

static __always_inline bool send(void *ctx, struct event *e, __u32 off)
{
	__u64 size = sizeof(e->hdr) + off;

	if (size > sizeof(*e))
		size = sizeof(*e);
	/* Waking the reader for every record costs more than the record;
	 * it polls, and is woken only when the buffer fills up. */
	__u64 flags = bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA) >= wakeup_bytes ?
		      BPF_RB_FORCE_WAKEUP : BPF_RB_NO_WAKEUP;
	/* A paused test binary waits for user space: wake it now. */
	if (e->hdr.kind == WW_EV_EXEC && (e->hdr.flags & WW_EXEC_STOPPED))
		flags = BPF_RB_FORCE_WAKEUP;
	if (bpf_ringbuf_output(&events, e, size, flags)) {
		count(WW_STAT_RINGBUF_FULL);
		if (e->hdr.kind == WW_EV_WRITE)
			count(WW_STAT_LOST_WRITES);
		return false;
	}
	return true;
}

static __always_inline void mark(struct event *e, int slot, __u32 start, __u32 end, bool truncated)
{
	e->hdr.len[slot] = end - start;
	e->hdr.present |= 1 << slot;
	if (truncated) {
		e->hdr.truncated |= 1 << slot;
		count(WW_STAT_TRUNCATED);
	}
}

/* Copy a NUL-terminated string (user memory, or kernel memory when
 * kernel is set) into a slot. Returns the new offset. */
static __always_inline __u32 put_str(struct event *e, __u32 off, int slot, const char *s, bool kernel)
{
	char next = 0;
	long n;

	if (!s || off > DATA_SZ - PATH_SLOT)
		return off;
	if (kernel)
		n = bpf_probe_read_kernel_str(&e->data[at(off)], PATH_SLOT, s);
	else
		n = bpf_probe_read_user_str(&e->data[at(off)], PATH_SLOT, s);
	if (n <= 0) {
		count(WW_STAT_READ_ERR);
		return off;
	}
	/* A full slot is a cut string unless the byte after it is NUL. */
	if (n == PATH_SLOT) {
		if (kernel)
			bpf_probe_read_kernel(&next, 1, s + PATH_SLOT - 1);
		else
			bpf_probe_read_user(&next, 1, s + PATH_SLOT - 1);
	}
	mark(e, slot, off, off + n, next != 0);
	return off + n;
}

struct walk {
	struct dentry *dentry;
	struct vfsmount *mnt;
	struct dentry *root_dentry;
	struct vfsmount *root_mnt;
	__u32 off;
	__u32 end;
	__u32 marks; /* enum ww_mark bits met on the way up */
	bool truncated;
	bool done;
	bool detached; /* ended on a kernel-internal mount: no path */
};

/* One step up from w->dentry: emit its name, or cross a mount point. */
static long walk_step(__u32 i, void *ctx)
{
	struct walk *w = ctx;
	struct dentry *d = w->dentry;
	struct vfsmount *mnt = w->mnt;
	struct event *e;

	if (use_marks)
		w->marks |= mark_of(d);
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

	__u32 need = BPF_CORE_READ(d, d_name.len) + 1;
	if (need > NAME_SLOT || w->off + need > w->end) {
		w->truncated = true;
		return 1;
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
		count(WW_STAT_READ_ERR);
		w->truncated = true;
		return 1;
	}
	w->off += n;
	w->dentry = up;
	return 0;
}

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
	barrier_var(slot);
	if (slot >= NSLOTS)
		return off;
	e->hdr.len[slot] = w.off - off;
	e->hdr.present |= 1 << slot;
	if ((w.marks & WW_MARK_ALLOW) && !(w.marks & WW_MARK_DENY))
		e->hdr.clean |= 1 << slot;
	if (w.detached)
		e->hdr.detached |= 1 << slot;
	if (w.truncated || !w.done) {
		e->hdr.truncated |= 1 << slot;
		count(WW_STAT_TRUNCATED);
	}
	return w.off;
}

static __always_inline struct file *fd_file(int fd)
{
	struct task_struct *task = (struct task_struct *)bpf_get_current_task();
	struct fdtable *fdt = BPF_CORE_READ(task, files, fdt);
	struct file **fds;
	struct file *f = NULL;

	if (fd < 0 || !fdt || (unsigned int)fd >= BPF_CORE_READ(fdt, max_fds))
		return NULL;
	fds = BPF_CORE_READ(fdt, fd);
	bpf_probe_read_kernel(&f, sizeof(f), &fds[fd]);
	return f;
}

static __always_inline __u32 put_file(struct event *e, __u32 off, int slot, struct file *f)
{
	if (!f)
		return off;
	e->hdr.ino = BPF_CORE_READ(f, f_inode, i_ino);
	e->hdr.dev = BPF_CORE_READ(f, f_inode, i_sb, s_dev);
	return put_path(e, off, slot, (__u64)BPF_CORE_READ(f, f_path.dentry),
			(__u64)BPF_CORE_READ(f, f_path.mnt));
}

/* The directory a relative path given with dfd starts from. */
static __always_inline __u32 put_dir(struct event *e, __u32 off, int slot, int dfd)
{
	struct task_struct *task = (struct task_struct *)bpf_get_current_task();

	if (dfd == AT_FDCWD)
		return put_path(e, off, slot, (__u64)BPF_CORE_READ(task, fs, pwd.dentry),
				(__u64)BPF_CORE_READ(task, fs, pwd.mnt));
	return put_file(e, off, slot, fd_file(dfd));
}

/* A path string, with its start directory when it is relative and the
 * directory is wanted. */
static __always_inline __u32 put_target(struct event *e, __u32 off, int pslot, int dslot,
					const char *path, int dfd, bool dir, bool kernel)
{
	__u32 start = off;

	off = put_str(e, off, pslot, path, kernel);
	if (dir && off > start && e->data[at(start)] != '/')
		off = put_dir(e, off, dslot, dfd);
	return off;
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

/*
 * The descriptor an absolute path stands for when it is one of the
 * kernel's links to the process's own descriptors (/dev/stdin,
 * /dev/stdout, /dev/stderr, /dev/fd/N, /proc/self/fd/N), or -1. Opening one reopens
 * what the descriptor holds, often a pipe or a terminal.
 */
static __always_inline int fd_link(struct event *e, __u32 start, __u32 len)
{
	const char in[] = "/dev/stdin", out[] = "/dev/stdout", err[] = "/dev/stderr";
	const char dev[] = "/dev/fd/", proc[] = "/proc/self/fd/";
	__u32 skip = 0;
	int fd = 0;
	bool match;

	if (len == sizeof(in)) {
		match = true;
		for (int i = 0; i < sizeof(in); i++)
			match = match && e->data[at(start + i)] == in[i];
		if (match)
			return 0;
	}
	if (len == sizeof(out)) {
		match = true;
		for (int i = 0; i < sizeof(out); i++)
			match = match && e->data[at(start + i)] == out[i];
		if (match)
			return 1;
		match = true;
		for (int i = 0; i < sizeof(err); i++)
			match = match && e->data[at(start + i)] == err[i];
		if (match)
			return 2;
	}
	match = len > sizeof(dev);
	for (int i = 0; i < sizeof(dev) - 1 && match; i++)
		match = e->data[at(start + i)] == dev[i];
	if (match)
		skip = sizeof(dev) - 1;
	match = !skip && len > sizeof(proc);
	for (int i = 0; i < sizeof(proc) - 1 && match; i++)
		match = e->data[at(start + i)] == proc[i];
	if (match)
		skip = sizeof(proc) - 1;
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

/* Is a write to the file behind descriptor fd allowed? A pipe, socket or
 * other kernel-internal file is no file-system write. */
static __always_inline bool fd_allowed(int fd)
{
	struct file *f = fd_file(fd);
	struct vfsmount *mnt;

	if (!f)
		return true; /* no such descriptor: the call fails, nothing is written */
	mnt = BPF_CORE_READ(f, f_path.mnt);
	if (internal_mount(real_mount(mnt)))
		return true;
	return file_allowed((__u64)BPF_CORE_READ(f, f_path.dentry), (__u64)mnt);
}

/*
 * --enforce: can the kernel tell, from the strings alone, that the path
 * in slot ps (starting at data[start], directory slot ds) is allowed,
 * even before it exists? An absolute path by the allowed prefixes (or,
 * for a link to a descriptor, by the descriptor's file); a relative one
 * by the marks met above its start directory (a granted directory holds
 * nothing a deny entry names), or else by the prefixes, put together
 * with that directory. Never a path with a ".." component, nor one cut
 * to fit. Symbolic links inside an allowed directory are taken at their
 * word.
 */
static __always_inline bool target_allowed(struct event *e, __u32 start, int ps, int ds)
{
	__u32 len = e->hdr.len[ps];
	int fd;

	if (!(e->hdr.present & (1 << ps)) || (e->hdr.truncated & (1 << ps | 1 << ds)) || len < 2)
		return false;
	if (has_dotdot(e, start, len))
		return false;
	if (e->data[at(start)] != '/') {
		if (e->hdr.clean & (1 << ds))
			return true;
		return (e->hdr.present & (1 << ds)) &&
		       relative_allowed(e, start, len, start + len, e->hdr.len[ds]);
	}
	if (prefix_allowed(e, start, len))
		return true;
	fd = fd_link(e, start, len);
	return fd >= 0 && fd_allowed(fd);
}

static __always_inline bool enforce_allowed(struct event *e, __u64 path2)
{
	if (!target_allowed(e, 0, WW_SLOT_PATH, WW_SLOT_DIR))
		return false;
	return !path2 || target_allowed(e, e->hdr.len[WW_SLOT_PATH] + e->hdr.len[WW_SLOT_DIR],
					 WW_SLOT_PATH2, WW_SLOT_DIR2);
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

/*
 * --enforce: judge a write at its entry, before it runs, and kill the
 * writer unless the kernel can tell it is allowed (the kill tier, and
 * metadata changes under every tier: neither Landlock nor the LSM
 * programs refuse those). A call on a descriptor is judged by its file.
 * A global function, checked once by the verifier. Returns enum ww_action.
 */
__noinline int judge_enter(__u64 path, __s32 dfd, __u64 path2, __s32 dfd2)
{
	struct event *e = scratch_event();
	__u32 off;

	if (!path) {
		if (fd_allowed(dfd))
			return 0;
		return kill_current() ? WW_ACT_KILLED : 0;
	}
	if (!e)
		return kill_current() ? WW_ACT_KILLED : 0;
	e->hdr.present = 0;
	e->hdr.truncated = 0;
	e->hdr.clean = 0;
	for (int i = 0; i < NSLOTS; i++)
		e->hdr.len[i] = 0;
	off = put_target(e, 0, WW_SLOT_PATH, WW_SLOT_DIR, (const char *)path, dfd, true, false);
	if (path2)
		put_target(e, off, WW_SLOT_PATH2, WW_SLOT_DIR2, (const char *)path2, dfd2, true, false);
	if (enforce_allowed(e, path2))
		return 0;
	return kill_current() ? WW_ACT_KILLED : 0;
}

static __always_inline bool is_metadata(__u32 op)
{
	return op == WW_OP_CHMOD || op == WW_OP_CHOWN || op == WW_OP_UTIMES ||
	       op == WW_OP_SETXATTR || op == WW_OP_REMOVEXATTR;
}

/*
 * Go test binaries. A goroutine is found from the g register (R14 under
 * Go's register ABI on amd64), checked against the stack it runs on: the
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

/* The test of the current goroutine: its own entry, or its creator's
 * (one level, for a goroutine created before the uprobes could see it).
 * Fills h->go, goid and test; returns the token or 0. */
static __always_inline __u64 go_attr(struct event_hdr *h, struct pt_regs *regs)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	struct goproc *gp = bpf_map_lookup_elem(&goprocs, &tgid);
	struct gkey k = { .tgid = tgid };
	struct gval *v;
	__u64 g, sp;

	if (!gp || !regs)
		return 0;
	h->go = WW_GO_PROC;
	g = BPF_CORE_READ(regs, r14);
	sp = BPF_CORE_READ(regs, sp);
	if (!read_goid(gp, g, sp, &k.goid))
		return 0;
	h->go |= WW_GO_G;
	h->goid = k.goid;
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
	h->go |= WW_GO_TEST;
	h->test = v->token;
	return v->token;
}

/* Enter of clone, fork or vfork: remember the forking goroutine's test
 * for sched_process_fork, which runs inside the same syscall. */
static __always_inline int stash_fork(struct pt_regs *regs)
{
	struct task_state *st = tracked_state();
	struct event_hdr h = {};

	if (st)
		st->fork_test = go_attr(&h, regs);
	return 0;
}

#define TS_COMPAT 0x0002 /* arch/x86/include/asm/thread_info.h */

/*
 * A 32-bit syscall of an ia32 program: its numbers and argument registers
 * are not x86-64's, so it must not be read as one (ia32's fork is
 * x86-64's open). writewatch does not watch those (docs/limits.md).
 */
static __always_inline bool compat_syscall(void)
{
	struct task_struct *t = bpf_get_current_task_btf();

	return BPF_CORE_READ(t, thread_info.status) & TS_COMPAT;
}

/* Enter: remember the arguments of a tracked thread's syscall. */
static __always_inline int stash(__u32 op, int dfd, const char *path, int dfd2,
				 const char *path2, __u32 flags, __u32 mode)
{
	struct task_state *st = tracked_state();

	if (!st || compat_syscall())
		return 0;
	st->args.op = op;
	st->args.dfd = dfd;
	st->args.dfd2 = dfd2;
	st->args.flags = flags;
	st->args.mode = mode;
	st->args.path = (__u64)path;
	st->args.path2 = (__u64)path2;
	st->args.action = 0;
	st->pending = 1;
	/* The kill tier judges every write here; the other tiers judge only
	 * metadata changes, which they cannot refuse, unless the metadata
	 * guard refuses those (then sys_exit reports what it refused). */
	if (enforce_tier != WW_TIER_NONE && (is_metadata(op) ? !meta_guard : enforce_tier == WW_TIER_KILL))
		st->args.action = judge_enter(st->args.path, dfd, st->args.path2, dfd2);
	return 0;
}

static __always_inline int stash_open(int dfd, const char *path, __u32 flags, __u32 mode)
{
	if (!(flags & WRITE_FLAGS))
		return 0; /* a read: never reported */
	return stash(WW_OP_OPEN, dfd, path, 0, NULL, flags, mode);
}

static __always_inline int stash_openat2(int dfd, const char *path, const struct open_how *uhow)
{
	struct open_how how = {};

	if (bpf_probe_read_user(&how, sizeof(how), uhow))
		return 0;
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

static __always_inline int stash_unlinkat(int dfd, const char *path, __u32 flags)
{
	return stash(flags & AT_REMOVEDIR ? WW_OP_RMDIR : WW_OP_UNLINK, dfd, path, 0, NULL, flags, 0);
}

#define STASHING_CASE(name) case NR_##name:
#define ARG(n) ((unsigned long)SYSCALL_ARG##n(regs))
#define STR(n) ((const char *)ARG(n))

/* The metadata changes, from sys_enter, and from sys_exit for those the
 * metadata guard refused. Returns whether id is one. */
static __always_inline bool stash_meta_call(struct pt_regs *regs, long id)
{
	switch (id) {
	case NR_chmod:      stash_meta(WW_OP_CHMOD, AT_FDCWD, STR(1), true); return true;
	case NR_fchmod:     stash_meta(WW_OP_CHMOD, ARG(1), NULL, false); return true;
	case NR_fchmodat:   stash_meta(WW_OP_CHMOD, ARG(1), STR(2), true); return true;
	case NR_fchmodat2:  stash_meta(WW_OP_CHMOD, ARG(1), STR(2), !(ARG(4) & AT_SYMLINK_NOFOLLOW)); return true;
	case NR_chown:      stash_meta(WW_OP_CHOWN, AT_FDCWD, STR(1), true); return true;
	case NR_lchown:     stash_meta(WW_OP_CHOWN, AT_FDCWD, STR(1), false); return true;
	case NR_fchown:     stash_meta(WW_OP_CHOWN, ARG(1), NULL, false); return true;
	case NR_fchownat:   stash_meta(WW_OP_CHOWN, ARG(1), STR(2), !(ARG(5) & AT_SYMLINK_NOFOLLOW)); return true;
	case NR_utime:
	case NR_utimes:     stash_meta(WW_OP_UTIMES, AT_FDCWD, STR(1), true); return true;
	case NR_futimesat:  stash_meta(WW_OP_UTIMES, ARG(1), STR(2), true); return true; /* NULL path: the fd */
	case NR_utimensat:  stash_meta(WW_OP_UTIMES, ARG(1), STR(2), !(ARG(4) & AT_SYMLINK_NOFOLLOW)); return true;
	case NR_setxattr:   stash_meta(WW_OP_SETXATTR, AT_FDCWD, STR(1), true); return true;
	case NR_lsetxattr:  stash_meta(WW_OP_SETXATTR, AT_FDCWD, STR(1), false); return true;
	case NR_fsetxattr:  stash_meta(WW_OP_SETXATTR, ARG(1), NULL, false); return true;
	case NR_setxattrat: stash_meta(WW_OP_SETXATTR, ARG(1), STR(2), !(ARG(3) & AT_SYMLINK_NOFOLLOW)); return true;
	case NR_removexattr: stash_meta(WW_OP_REMOVEXATTR, AT_FDCWD, STR(1), true); return true;
	case NR_lremovexattr: stash_meta(WW_OP_REMOVEXATTR, AT_FDCWD, STR(1), false); return true;
	case NR_fremovexattr: stash_meta(WW_OP_REMOVEXATTR, ARG(1), NULL, false); return true;
	case NR_removexattrat: stash_meta(WW_OP_REMOVEXATTR, ARG(1), STR(2), !(ARG(3) & AT_SYMLINK_NOFOLLOW)); return true;
	}
	return false;
}

/*
 * Entry of every syscall of every process: the syscall number is checked
 * first, so everything else costs one switch. link and symlink create
 * only their new name, which is the one judged.
 */
SEC("tp_btf/sys_enter")
int BPF_PROG(sys_enter, struct pt_regs *regs, long id)
{
	switch (id) {
	case NR_open:       return stash_open(AT_FDCWD, STR(1), ARG(2), ARG(3));
	case NR_openat:     return stash_open(ARG(1), STR(2), ARG(3), ARG(4));
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
	META_SYSCALLS(STASHING_CASE)
		stash_meta_call(regs, id);
		return 0;
	case NR_clone: case NR_clone3: case NR_fork: case NR_vfork:
		return stash_fork(regs);
	}
	return 0;
}

struct scan {
	__u32 start;
	__u32 len;
	bool slash;
};

static long scan_step(__u32 i, void *ctx)
{
	struct scan *s = ctx;
	struct event *e;

	if (i >= s->len)
		return 1;
	e = scratch_event();
	if (!e || e->data[at(s->start + i)] == '/') {
		s->slash = true;
		return 1;
	}
	return 0;
}

/* Is the string in data[start..start+len) (NUL included) one plain name,
 * so that it names an entry right inside its start directory? */
static __always_inline bool plain_name(struct event *e, __u32 start, __u32 len)
{
	struct scan s = { .start = start, .len = len - 1 };
	char c0, c1, c2;

	if (len < 2 || len > NAME_SLOT)
		return false;
	c0 = e->data[at(start)];
	c1 = e->data[at(start + 1)];
	c2 = len > 2 ? e->data[at(start + 2)] : 0;
	if (c0 == '.' && (c1 == 0 || (c1 == '.' && c2 == 0)))
		return false;
	bpf_loop(NAME_SLOT, scan_step, &s, 0);
	return !s.slash;
}

/*
 * Can the kernel tell the write is allowed? Only when every path it
 * touches was walked and met an allowed mark and no deny mark: the file a
 * successful open opened, or a plain name right inside a walked
 * directory. Everything else goes to user space, which judges by path.
 */
static __always_inline bool allowed_here(struct event *e, struct args *a)
{
	__u16 clean = e->hdr.clean;

	if (!use_marks || e->hdr.truncated)
		return false;
	/* Judged by the file behind it (see emit_write). */
	if (e->hdr.present & (1 << WW_SLOT_RESOLVED))
		return clean & (1 << WW_SLOT_RESOLVED);
	/* The name may be a symlink to anywhere: user space follows it. */
	if (is_metadata(a->op) && (a->flags & WW_META_FOLLOW))
		return false;
	if (!(clean & (1 << WW_SLOT_DIR)) || !plain_name(e, 0, e->hdr.len[WW_SLOT_PATH]))
		return false;
	if (!a->path2)
		return true;
	return (clean & (1 << WW_SLOT_DIR2)) &&
	       plain_name(e, e->hdr.len[WW_SLOT_PATH] + e->hdr.len[WW_SLOT_DIR],
			  e->hdr.len[WW_SLOT_PATH2]);
}

/* Is the path slot a test-boundary announcement (docs/protocol.md)? */
static __always_inline bool is_marker(struct event *e)
{
	const char want[] = "/dev/null/.writewatch/";

	if (e->hdr.len[WW_SLOT_PATH] < sizeof(want))
		return false;
	for (int i = 0; i < sizeof(want) - 1; i++)
		if (e->data[i] != want[i])
			return false;
	return true;
}

/*
 * A write to file f that this process already made the same way, for the
 * same test, since its last test-boundary announcement: counted in the
 * repeats map, and nothing else to do.
 */
static __always_inline bool counted_repeat(struct file *f, struct args *a, struct pt_regs *regs)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	struct proc *pr = bpf_map_lookup_elem(&procs, &tgid);
	struct event_hdr h = {};
	struct repeat_key rk = {
		.ino = BPF_CORE_READ(f, f_inode, i_ino),
		.dev = BPF_CORE_READ(f, f_inode, i_sb, s_dev),
		.tgid = tgid,
		.op = a->op,
		.flags = a->flags,
		.test = go_attr(&h, regs),
		.epoch = pr ? pr->epoch : 0,
	};
	__u64 *n;

	if (!rk.ino)
		return false;
	n = bpf_map_lookup_elem(&repeats, &rk);
	if (!n)
		return false;
	__sync_fetch_and_add(n, 1);
	count(WW_STAT_REPEATS);
	return true;
}

/*
 * Send the record of one write: its paths, the directories relative paths
 * start from, and the file an open opened or an fd-based call acted on,
 * unless the kernel can tell from the marks that it is allowed. Paths of
 * io_uring requests are kernel strings.
 */
static __always_inline int emit_write(void *ctx, struct args *a, long ret, __u16 via,
				      struct pt_regs *regs)
{
	bool kstr = via == WW_VIA_IO_URING;
	bool opened = (a->op == WW_OP_OPEN || a->op == WW_OP_CREAT) && ret >= 0 && !kstr &&
		      !(a->flags & __O_TMPFILE);
	/* Judged by a file rather than by its name: the file an open opened,
	 * the descriptor an fd-based call acted on, or (below) the descriptor
	 * a metadata change names as /dev/stdout, /proc/self/fd/N and the
	 * like, which it follows. What follows asks the record whether it
	 * holds such a file (its resolved slot), not a flag of its own: one
	 * more flag doubled the paths the verifier walks, and --enforce's
	 * start-up time. */
	bool by_file = opened || !a->path;
	struct file *f = NULL;
	struct event *e;
	int link_fd;
	__u32 off = 0;

	if (by_file)
		f = fd_file(opened ? ret : a->dfd);
	/* Most writes of a test run go to allowed places, and a loop writes
	 * the same file again and again: settle both before building
	 * anything (unless enforcement acted on the write). */
	if (f && !a->action) {
		if (use_marks && file_allowed((__u64)BPF_CORE_READ(f, f_path.dentry),
					      (__u64)BPF_CORE_READ(f, f_path.mnt))) {
			count(WW_STAT_ALLOWED);
			return 0;
		}
		if (counted_repeat(f, a, regs))
			return 0;
	}
	e = scratch_event();
	if (!e)
		return 0;
	fill_hdr(e, WW_EV_WRITE);
	e->hdr.op = a->op;
	e->hdr.ret = ret;
	e->hdr.flags = a->flags;
	e->hdr.mode = a->mode;
	e->hdr.via = via;

	/* An open that succeeded is judged by the file it opened: the
	 * directory of a relative name is not needed then. */
	off = put_target(e, off, WW_SLOT_PATH, WW_SLOT_DIR, (const char *)a->path, a->dfd, !opened, kstr);
	if (a->path2)
		off = put_target(e, off, WW_SLOT_PATH2, WW_SLOT_DIR2, (const char *)a->path2, a->dfd2,
				 true, kstr);
	if (by_file)
		off = put_file(e, off, WW_SLOT_RESOLVED, f);
	else if (is_metadata(a->op) && (a->flags & WW_META_FOLLOW) && !kstr &&
		 (link_fd = record_fd_link(e->hdr.len[WW_SLOT_PATH])) >= 0)
		off = put_file(e, off, WW_SLOT_RESOLVED, fd_file(link_fd));

	/* Landlock refused it (or the file's permissions did): unless the
	 * kernel can tell the write was allowed, it was an attempt outside
	 * the allowlist, and the writer is killed before it returns. */
	if (enforce_tier == WW_TIER_LANDLOCK && !(a->action & WW_ACT_BLOCKED) &&
	    (ret == -EACCES || ret == -EPERM) && !kstr && a->path && !enforce_allowed(e, a->path2))
		a->action |= refuse_current(enforce_kill && !(a->action & WW_ACT_KILLED));
	e->hdr.action = a->action;
	/* Opening /dev/stdout when it is a pipe, or /proc/self/fd/N of a
	 * socket or memfd, writes no file. */
	if (!a->action && (e->hdr.detached & (1 << WW_SLOT_RESOLVED))) {
		count(WW_STAT_NOT_FILES);
		return 0;
	}
	if (!a->action && allowed_here(e, a)) {
		count(WW_STAT_ALLOWED);
		return 0;
	}
	/* Who wrote: the goroutine's Go test, or the process's announcements
	 * so far; an announcement starts a new epoch. */
	__u32 tgid = e->hdr.tgid;
	struct proc *pr = bpf_map_lookup_elem(&procs, &tgid);
	go_attr(&e->hdr, regs);
	if (pr) {
		if (a->op == WW_OP_OPEN && ret < 0 && is_marker(e))
			__sync_fetch_and_add(&pr->epoch, 1);
		e->hdr.epoch = pr->epoch;
	}
	/* Later identical writes will be counted under this key (see
	 * counted_repeat). */
	struct repeat_key rk = {
		.ino = e->hdr.ino, .dev = e->hdr.dev, .tgid = e->hdr.tgid,
		.op = a->op, .flags = a->flags, .test = e->hdr.test, .epoch = e->hdr.epoch,
	};
	count(WW_STAT_EVENTS);
	if (send(ctx, e, off) && rk.ino && !e->hdr.truncated) {
		__u64 zero = 0;

		/* Full map: repeats keep coming as records, nothing is lost. */
		bpf_map_update_elem(&repeats, &rk, &zero, BPF_NOEXIST);
	}
	return 0;
}

static __always_inline bool stashing(long nr)
{
	switch (nr) {
	STASHING_SYSCALLS(STASHING_CASE)
		return true;
	}
	return false;
}

/* Exit of every syscall: send the record of a stored call, always
 * clearing its arguments. Any other syscall costs one switch. */
SEC("tp_btf/sys_exit")
int BPF_PROG(sys_exit, struct pt_regs *regs, long ret)
{
	struct task_state *st;
	struct args a;

	if (!stashing(SYSCALL_NR(regs)))
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
	a = st->args;
	st->pending = 0;
	return emit_write(ctx, &a, ret, WW_VIA_SYSCALL, regs);
}

/*
 * A new thread or process: it belongs to the tree when its creator does,
 * or when writewatch itself is starting COMMAND. Runs before the child
 * runs a single instruction.
 */
SEC("tp_btf/sched_process_fork")
int BPF_PROG(sched_fork, struct task_struct *parent_task, struct task_struct *child)
{
	__u32 parent = bpf_get_current_pid_tgid() >> 32;
	__u32 tgid = child->tgid;
	struct proc p = { .parent = parent };
	struct task_state *st;
	bool root = false;
	struct event *e;

	if (!is_tracked()) {
		if (tgid == parent || !is_launcher())
			return 0;
		root = true;
	}
	st = bpf_task_storage_get(&tasks, child, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!st) {
		count(WW_STAT_PROC_FULL);
		return 0;
	}
	st->tracked = 1;
	st->pending = 0;
	if (tgid == parent)
		return 0; /* a new thread of a process of the tree */
	if (bpf_map_update_elem(&procs, &tgid, &p, BPF_ANY)) {
		count(WW_STAT_PROC_FULL);
		return 0;
	}
	e = scratch_event();
	if (!e)
		return 0;
	fill_hdr(e, WW_EV_FORK);
	e->hdr.tgid = tgid;
	e->hdr.pid = child->pid;
	e->hdr.ppid = parent;
	e->hdr.ns_tgid = 0;
	e->hdr.flags = root;
	struct task_state *self = tracked_state();
	if (self && !root)
		e->hdr.test = self->fork_test;
	send(ctx, e, 0);
	return 0;
}

/* Does the file executed (data[0..n), NUL included) end in ".test", the
 * name go test gives a package's test binary? */
static __always_inline bool is_go_test_name(struct event *e, long n)
{
	const char want[] = ".test";
	__u32 start;

	if (n < 7)
		return false;
	start = n - 6;
	for (int i = 0; i < 5; i++)
		if (e->data[at(start + i)] != want[i])
			return false;
	return true;
}

SEC("tp_btf/sched_process_exec")
int BPF_PROG(sched_exec, struct task_struct *task, pid_t old_pid, struct linux_binprm *bprm)
{
	unsigned long arg_start, arg_end;
	struct event *e;
	__u32 off = 0;
	long n;

	if (!is_tracked())
		return 0;
	e = scratch_event();
	if (!e)
		return 0;
	fill_hdr(e, WW_EV_EXEC);

	n = bpf_probe_read_kernel_str(&e->data[0], PATH_SLOT, BPF_CORE_READ(bprm, filename));
	if (n > 0) {
		mark(e, WW_SLOT_PATH, 0, n, false);
		off = n;
	}
	if (follow_go_tests && n > 0 && is_go_test_name(e, n)) {
		if (bpf_send_signal(SIGSTOP))
			count(WW_STAT_STOP_ERR);
		else
			e->hdr.flags = WW_EXEC_STOPPED;
	}

	arg_start = BPF_CORE_READ(task, mm, arg_start);
	arg_end = BPF_CORE_READ(task, mm, arg_end);
	if (arg_end > arg_start) {
		__u64 len = arg_end - arg_start;
		bool cut = len > ARGS_SLOT;

		if (cut)
			len = ARGS_SLOT;
		off &= PATH_SLOT - 1;
		if (bpf_probe_read_user(&e->data[off], len & (ARGS_SLOT * 2 - 1), (void *)arg_start) == 0) {
			mark(e, WW_SLOT_DIR, off, off + len, cut);
			off += len;
		}
	}
	send(ctx, e, off);
	return 0;
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(sched_exit, struct task_struct *task)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	struct event *e;

	if (!is_tracked())
		return 0;
	/* Threads leave one by one; the process is gone with the last. */
	if (BPF_CORE_READ(task, signal, live.counter) != 0)
		return 0;
	bpf_map_delete_elem(&procs, &tgid);
	bpf_map_delete_elem(&goprocs, &tgid);
	e = scratch_event();
	if (!e)
		return 0;
	fill_hdr(e, WW_EV_EXIT);
	e->hdr.ret = BPF_CORE_READ(task, exit_code);
	send(ctx, e, 0);
	return 0;
}

/*
 * io_uring requests do their work in the kernel, with no syscall of their
 * own for the tracepoints above to see. Each filesystem request of the
 * tree is reported when it is submitted, with its paths from the prepared
 * request; its result is not known then.
 */
static __always_inline void *uring_cmd(struct io_kiocb *req)
{
	return (void *)req + bpf_core_field_offset(struct io_kiocb, cmd);
}

SEC("raw_tracepoint/io_uring_submit_req")
int uring_submit(struct bpf_raw_tracepoint_args *ctx)
{
	struct io_kiocb *req = (struct io_kiocb *)ctx->args[0];
	struct args a = {};
	__u8 opcode;

	if (!proc_tracked())
		return 0;
	opcode = BPF_CORE_READ(req, opcode);
	if (opcode == bpf_core_enum_value(enum io_uring_op, IORING_OP_OPENAT) ||
	    opcode == bpf_core_enum_value(enum io_uring_op, IORING_OP_OPENAT2)) {
		struct io_open *o = uring_cmd(req);

		a.flags = BPF_CORE_READ(o, how.flags);
		if (!(a.flags & WRITE_FLAGS))
			return 0;
		a.op = WW_OP_OPEN;
		a.dfd = BPF_CORE_READ(o, dfd);
		a.path = (__u64)BPF_CORE_READ(o, filename, name);
	} else if (opcode == bpf_core_enum_value(enum io_uring_op, IORING_OP_RENAMEAT) ||
		   opcode == bpf_core_enum_value(enum io_uring_op, IORING_OP_LINKAT)) {
		struct io_rename *r = uring_cmd(req);

		a.op = opcode == bpf_core_enum_value(enum io_uring_op, IORING_OP_RENAMEAT) ?
			WW_OP_RENAME : WW_OP_LINK;
		a.dfd = BPF_CORE_READ(r, old_dfd);
		a.path = (__u64)BPF_CORE_READ(r, oldpath, name);
		a.dfd2 = BPF_CORE_READ(r, new_dfd);
		a.path2 = (__u64)BPF_CORE_READ(r, newpath, name);
	} else if (opcode == bpf_core_enum_value(enum io_uring_op, IORING_OP_UNLINKAT)) {
		struct io_unlink *u = uring_cmd(req);

		a.flags = BPF_CORE_READ(u, flags);
		a.op = a.flags & AT_REMOVEDIR ? WW_OP_RMDIR : WW_OP_UNLINK;
		a.dfd = BPF_CORE_READ(u, dfd);
		a.path = (__u64)BPF_CORE_READ(u, filename, name);
	} else if (opcode == bpf_core_enum_value(enum io_uring_op, IORING_OP_MKDIRAT)) {
		struct io_mkdir *m = uring_cmd(req);

		a.op = WW_OP_MKDIR;
		a.dfd = BPF_CORE_READ(m, dfd);
		a.path = (__u64)BPF_CORE_READ(m, filename, name);
	} else if (opcode == bpf_core_enum_value(enum io_uring_op, IORING_OP_SYMLINKAT)) {
		struct io_link *l = uring_cmd(req);

		a.op = WW_OP_SYMLINK;
		a.dfd = BPF_CORE_READ(l, new_dfd);
		a.path = (__u64)BPF_CORE_READ(l, newpath, name);
	} else {
		return 0;
	}
	return emit_write(ctx, &a, 0, WW_VIA_IO_URING, NULL);
}

/*
 * Uprobes in Go test binaries, attached per process by user space. Go's
 * register ABI on amd64: arguments in AX, BX, CX, ...; the running g in
 * R14.
 */

/* Entry of testing.tRunner(t *T, fn func(*T)): the goroutine it runs on
 * now works for test t. */
SEC("uprobe/tRunner")
int go_test_start(struct pt_regs *ctx)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	struct goproc *gp = bpf_map_lookup_elem(&goprocs, &tgid);
	struct gkey k = { .tgid = tgid };
	struct gval v = {};
	struct gval *old;
	struct event *e;
	__u32 zero = 0;
	__u64 *seq, name[2];
	__u32 len;

	if (!gp || !read_goid(gp, ctx->r14, ctx->sp, &k.goid))
		return 0;
	v.t = ctx->ax;
	old = bpf_map_lookup_elem(&goroutines, &k);
	if (old && old->t == v.t)
		return 0; /* tRunner entered again after growing its stack */
	seq = bpf_map_lookup_elem(&tokens, &zero);
	if (!seq)
		return 0;
	v.token = __sync_fetch_and_add(seq, 1) + 1;
	if (bpf_probe_read_user(name, sizeof(name), (void *)(v.t + gp->name_off)))
		name[1] = 0;
	v.root = name[1] == 0;
	if (bpf_map_update_elem(&goroutines, &k, &v, BPF_ANY))
		count(WW_STAT_GOROUTINE_FULL);

	e = scratch_event();
	if (!e)
		return 0;
	fill_hdr(e, WW_EV_TEST_START);
	e->hdr.test = v.token;
	e->hdr.goid = k.goid;
	e->hdr.go = WW_GO_PROC | WW_GO_G | WW_GO_TEST;
	len = name[1] > PATH_SLOT - 1 ? PATH_SLOT - 1 : name[1];
	if (len && bpf_probe_read_user(&e->data[0], len & (PATH_SLOT - 1), (void *)name[0]) == 0)
		mark(e, WW_SLOT_PATH, 0, len, name[1] > len);
	else
		len = 0;
	/* fn's code pointer, for the test's source file and line. */
	__u64 pc = 0;
	len &= PATH_SLOT - 1;
	if (bpf_probe_read_user(&pc, sizeof(pc), (void *)ctx->bx) == 0 &&
	    bpf_probe_read_kernel(&e->data[len], sizeof(pc), &pc) == 0) {
		mark(e, WW_SLOT_PATH2, len, len + sizeof(pc), false);
		len += sizeof(pc);
	}
	send(ctx, e, len);
	return 0;
}

/* Entry of testing.(*common).runCleanup or testing.tRunner.func1, which
 * tRunner defers: the test function has returned (or panicked); its
 * cleanups run next. */
SEC("uprobe/tRunner.func1")
int go_test_end(struct pt_regs *ctx)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	struct goproc *gp = bpf_map_lookup_elem(&goprocs, &tgid);
	struct gkey k = { .tgid = tgid };
	struct gval *v;
	struct event *e;

	if (!gp || !read_goid(gp, ctx->r14, ctx->sp, &k.goid))
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
	send(ctx, e, 0);
	return 0;
}

/* Entry of runtime.runqput(pp *p, gp *g, next bool), which newproc calls
 * with each new goroutine: a goroutine created by one working for a test
 * works for that test too. */
SEC("uprobe/runqput")
int go_new_goroutine(struct pt_regs *ctx)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	struct goproc *gp = bpf_map_lookup_elem(&goprocs, &tgid);
	struct gkey k = { .tgid = tgid }, pk = { .tgid = tgid };
	struct gval *pv;
	__u64 g = ctx->bx;

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
