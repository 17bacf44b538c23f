/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The mount a write lands on, and whether the path the kernel walks up
 * from it names, for writewatch, the file it names for the writer.
 *
 * A record names an opened file by its path, walked up from its dentry
 * through the mounts above it to the writer's root (lib/paths.h), and
 * user space judges that path as writewatch's own mount namespace sees
 * it. That is the file's place for writewatch when every mount on the
 * way is one COMMAND's namespace held when the run began, or a copy of
 * one: a mount elsewhere (a bind mount of the project onto tests/mnt)
 * makes an allowed path name a protected file. So a mount is judged
 * (mount_class):
 *
 *   - MNT_KNOWN: the path means the same for writewatch. In COMMAND's
 *     namespace, every mount from the file's up to the root was there at
 *     the start (map start_mounts, by mount id and device, from user
 *     space), or is of a filesystem in memory made during the run (a
 *     tmpfs the test mounted on a directory of its own: its files are
 *     the run's, at the path writewatch sees), as long as no process of
 *     the tree has mounted anything there, nothing needs looking at
 *     (views_changed). In a namespace the tree made (clone, unshare:
 *     map tree_ns) in which nothing was mounted since, and that copied
 *     one where nothing was, every mount is a copy of one COMMAND's
 *     held (a new namespace with no mount in it changes no path).
 *   - MNT_PRIVATE: the file lies on a filesystem in memory made during
 *     the run (tmpfs or ramfs, of no device mounted at the start),
 *     through a mount of a namespace the tree made: a fake home mounted
 *     in a namespace of the test's own. It is not the user's: the write
 *     is settled as allowed, whatever its path (WW_STAT_PRIVATE).
 *   - MNT_UNSETTLED: anything else (a mount made during the run, a
 *     namespace the tree joined, a writer whose root is not its
 *     namespace's, chroot): the path may lead elsewhere for writewatch.
 *
 * The calls that change mounts (contents_entered, lib/contents.h) mark
 * what they may change: their own namespace (map tree_ns), COMMAND's
 * (views_changed), and, from a process with capabilities in COMMAND's
 * user namespace, whose mounts may propagate to any namespace sharing
 * them, every namespace the tree made (copies_changed).
 *
 * A write by name (mkdir, unlink, rename, truncate...) has no file to
 * look at: user space finds where it landed (WW_REC_OWN_VIEW,
 * lib/write.h).
 */
#ifndef WW_LIB_MOUNTS_H
#define WW_LIB_MOUNTS_H

#include "uapi.h"
#include "task.h"
#include "marks.h"

#define TMPFS_MAGIC 0x01021994
#define RAMFS_MAGIC 0x858458f6

/* A mount of COMMAND's namespace at the start: its id (mountinfo's
 * first field) and its filesystem's device (the kernel's dev_t). */
struct mount_key {
	__u32 id;
	__u32 dev;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, struct mount_key);
	__type(value, __u8);
} start_mounts SEC(".maps");

/* The devices of the filesystems mounted at the start, and DEVS_KNOWN
 * once user space has told them: until then no filesystem is fresh. */
#define DEVS_KNOWN 0xffffffff
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, __u8);
} start_devs SEC(".maps");

/* A mount namespace the tree made, by its address: its inode number (an
 * address freed and reused by another namespace is not taken for it),
 * and whether every mount in it is still a copy of one COMMAND's held
 * at the start. */
struct ns_state {
	__u32 inum;
	__u32 clean;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u64);
	__type(value, struct ns_state);
} tree_ns SEC(".maps");

/* The tree's calls that change mounts so far, counted at their entry
 * (lib/contents.h): user space, having found through a process's root
 * where its write landed, asks whether any came since (WW_REC_OWN_VIEW). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} mount_calls SEC(".maps");

/* Set, and never cleared, once a process of the tree with capabilities
 * has called, in COMMAND's mount namespace or where its mounts may
 * propagate there, one of the calls that change where paths lead: a
 * mount, chroot, pivot_root... (lib/contents.h). From then on the
 * mounts of COMMAND's namespace are looked at one by one (mount_class). */
volatile __u32 views_changed;

/* Set, and never cleared, once a process of the tree that holds
 * capabilities in COMMAND's user namespace has called one of the calls
 * that change mounts (lib/contents.h): its mounts may propagate to every
 * namespace that shares them, those the tree made among them. */
volatile __u32 copies_changed;

/* The tree's count of calls that change mounts (mount_calls). */
static __always_inline __u32 mount_calls_now(void)
{
	__u32 zero = 0, *n = bpf_map_lookup_elem(&mount_calls, &zero);

	return n ? *n : 0;
}

/* What a mount is to a write that lands on it (see above). */
enum { MNT_KNOWN = 0, MNT_UNSETTLED = 1, MNT_PRIVATE = 2 };

/* Is sb a filesystem in memory that no mount held at the start: every
 * file on it was made during the run? */
static __always_inline bool fresh_fs(struct super_block *sb)
{
	unsigned long magic = BPF_CORE_READ(sb, s_magic);
	__u32 dev = BPF_CORE_READ(sb, s_dev), known = DEVS_KNOWN;

	return (magic == TMPFS_MAGIC || magic == RAMFS_MAGIC) && bpf_map_lookup_elem(&start_devs, &known) &&
	       !bpf_map_lookup_elem(&start_devs, &dev);
}

/* The state of mount namespace ns, when the tree made it; else NULL. */
static __always_inline struct ns_state *tree_ns_of(unsigned long ns)
{
	__u64 key = ns;
	struct ns_state *s = bpf_map_lookup_elem(&tree_ns, &key);

	if (!s || s->inum != BPF_CORE_READ((struct mnt_namespace *)ns, ns.inum))
		return NULL;
	return s;
}

/* Is mount namespace ns, COMMAND's (cmd) or one the tree made, one in
 * which every mount is what it was (or a copy of what COMMAND's held)
 * when the run began? */
static __always_inline bool ns_clean(unsigned long ns, __u64 cmd)
{
	struct ns_state *s;

	if (ns == cmd)
		return !views_changed;
	s = tree_ns_of(ns);
	return s && s->clean && !copies_changed;
}

/* Note the mount namespace child_ns, made by the tree as a copy of
 * parent_ns: clean when that one was. */
static __always_inline void tree_ns_made(unsigned long child_ns, unsigned long parent_ns, __u64 cmd)
{
	struct ns_state s = {
		.inum = BPF_CORE_READ((struct mnt_namespace *)child_ns, ns.inum),
		.clean = ns_clean(parent_ns, cmd),
	};
	__u64 key = child_ns;

	if (child_ns && child_ns != parent_ns)
		bpf_map_update_elem(&tree_ns, &key, &s, BPF_ANY);
}

/* A call that may change the mounts of namespace ns was entered: it is
 * no longer clean. */
static __always_inline void tree_ns_changed(unsigned long ns)
{
	struct ns_state *s = tree_ns_of(ns);

	if (s)
		s->clean = 0;
}

/* Is the current process in a mount namespace the tree made, and
 * mounted in (or where a mount may have propagated) since: where its
 * paths may lead elsewhere than they do for writewatch? A namespace the
 * tree did not make (setns) is another matter (docs/limits.md). */
static __always_inline bool own_view(void)
{
	unsigned long ns = (unsigned long)BPF_CORE_READ((struct task_struct *)bpf_get_current_task(), nsproxy, mnt_ns);
	struct ns_state *s = tree_ns_of(ns);

	return s && (!s->clean || copies_changed);
}

struct mount_walk {
	struct mount *m;
	struct mount *root; /* the mount of the writer's root: the walk ends there */
	bool known;
};

/* Step i up the mounts of COMMAND's namespace: was mount w->m there at
 * the start, or is it of a filesystem in memory made since? Returns 1 to
 * stop: at the writer's root or the namespace's top (w->known then), or
 * at a mount neither. */
static long mount_step(__u32 i, void *ctx)
{
	struct mount_walk *w = ctx;
	struct mount *m = w->m, *parent;
	struct super_block *sb = BPF_CORE_READ(m, mnt.mnt_sb);
	struct mount_key key = {
		.id = BPF_CORE_READ(m, mnt_id),
		.dev = BPF_CORE_READ(sb, s_dev),
	};

	if (!bpf_map_lookup_elem(&start_mounts, &key) && !fresh_fs(sb))
		return 1;
	parent = BPF_CORE_READ(m, mnt_parent);
	if (m == w->root || !parent || parent == m) {
		w->known = true;
		return 1;
	}
	w->m = parent;
	return 0;
}

/* The most mounts walked up from one: more, and the path is not
 * trusted. */
#define MOUNT_DEPTH 64

/*
 * What the mount at addr (a struct vfsmount) is to a write that lands on
 * it, as seen from the current task, whose paths end at its root; cmd is
 * COMMAND's mount namespace, root COMMAND's root directory (a dentry). A
 * writer whose root is another directory (chroot) names files from
 * there. Global, so verified once.
 */
__noinline int mount_class(__u64 addr, __u64 cmd, __u64 root)
{
	struct task_struct *t = (struct task_struct *)bpf_get_current_task();
	struct mount *m = real_mount((struct vfsmount *)addr);
	struct mount_walk w = { .m = m };
	unsigned long ns;

	if (!addr)
		return MNT_KNOWN;
	ns = (unsigned long)BPF_CORE_READ(m, mnt_ns);
	if (internal_ns(ns))
		return MNT_KNOWN; /* pipes, memfds: no path at all */
	if (ns != cmd && fresh_fs(BPF_CORE_READ(m, mnt.mnt_sb)) && tree_ns_of(ns))
		return MNT_PRIVATE;
	if ((__u64)BPF_CORE_READ(t, fs, root.dentry) != root)
		return MNT_UNSETTLED;
	if (ns_clean(ns, cmd))
		return MNT_KNOWN;
	if (ns != cmd)
		return MNT_UNSETTLED;
	w.root = real_mount(BPF_CORE_READ(t, fs, root.mnt));
	bpf_loop(MOUNT_DEPTH, mount_step, &w, 0);
	return w.known ? MNT_KNOWN : MNT_UNSETTLED;
}

#endif
