/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* Structures shared by the BPF programs and the Go tracer (via bpf2go). */
#ifndef WRITEWATCH_H
#define WRITEWATCH_H

/*
 * Naming of ids, in kernel terms, used everywhere in bpf/ and tracer/:
 *   pid  - the kernel's id of one task (a thread); what gettid() returns.
 *   tgid - the thread group id: the process id that ps and getpid() show.
 * Processes of the traced tree are keyed by tgid in the init PID namespace.
 * ns_tgid is the same process as writewatch's own PID namespace numbers it.
 */

#define PATH_SLOT 4096    /* bytes kept of one path string */
#define NAME_SLOT 256     /* one path component, NUL included */
#define ARGS_SLOT 2048    /* bytes kept of a new program's argv */
#define DATA_SZ   16384   /* power of two; the most any record needs (rename: 4 slots) */
#define NSLOTS    5
#define MAX_DEPTH 2048    /* components walked for one path */

enum ww_event_kind {
	WW_EV_WRITE = 1, /* a write-intent syscall returned */
	WW_EV_EXEC  = 2, /* a process of the tree ran execve */
	WW_EV_FORK  = 3, /* a process of the tree (or writewatch, for COMMAND) made a process */
	WW_EV_EXIT  = 4, /* the last thread of a process of the tree exited */
	WW_EV_TEST_START = 5, /* a Go test binary entered testing.tRunner: a test starts */
	WW_EV_TEST_END   = 6, /* its test function returned: cleanups may follow */
	WW_EV_READ       = 7, /* a read-only open of a file in the written set (struct file_key) */
	WW_EV_CONTENTS   = 8, /* file contents must be watched from now on (enum ww_contents_why in op) */
};

/*
 * Why a WW_EV_CONTENTS record asks for file contents to be watched: a
 * process of the tree did something after which it may hold a file from
 * outside the tree, or reach a file by a path of its own (lib/contents.h).
 */
enum ww_contents_why {
	WW_WHY_UNIX_SOCKET = 1, /* made a Unix socket: descriptors may come through it */
	WW_WHY_IO_URING    = 2, /* made an io_uring: its requests may take files from elsewhere */
	WW_WHY_PIDFD_GETFD = 3, /* took a descriptor of another process */
	WW_WHY_SECCOMP     = 4, /* made a seccomp listener, through which descriptors are added */
	WW_WHY_NAMESPACE   = 5, /* entered or made a user or mount namespace */
	WW_WHY_PRIVILEGED  = 6, /* ran a program that gained privileges at exec */
	WW_WHY_COMPAT      = 7, /* ran a 32-bit program, whose calls the programs do not decode */
	/* A privileged process (any effective capability) called: */
	WW_WHY_MOUNT       = 8, /* mount, move_mount, open_tree(_attr), fsmount, mount_setattr or pivot_root */
	WW_WHY_CHROOT      = 9, /* chroot: its paths start elsewhere */
	WW_WHY_HANDLE      = 10, /* open_by_handle_at: a file opened by no path */
	WW_WHY_ACCT        = 11, /* acct: the kernel writes the file it names at every exit */
};

/* event_hdr.flags of a WW_EV_CONTENTS record. */
#define WW_CONTENTS_STOPPED 1 /* the process was sent SIGSTOP; user space sends
			       * SIGCONT once contents are watched */

/* The one value of map contents (lib/contents.h), shared with user space. */
struct contents_state {
	__u64 lazy;    /* set by user space: contents are not watched yet */
	__u64 window;  /* enum ww_window bits, set while lazy (atomically: 64 bits); cleared with it */
	__u64 mnt_ns;  /* COMMAND's mount namespace, as the kernel points to it */
	__u64 user_ns; /* COMMAND's user namespace, as the kernel points to it */
	__u64 root;    /* COMMAND's root directory (a dentry), as the kernel points to it */
};

/* Which writes contents_state.window makes unwatched (lib/contents.h). */
enum ww_window {
	WW_WINDOW_ALL = 2, /* a privileged process is changing mounts or roots: every truncate by name */
};

/* event_hdr.go: what the kernel learned about the writing goroutine. */
enum ww_go_flag {
	WW_GO_PROC = 1, /* the process is a Go test binary whose tests are followed */
	WW_GO_G    = 2, /* the current goroutine was identified: event_hdr.goid */
	WW_GO_TEST = 4, /* ...and it belongs to a test: event_hdr.test */
};

/* The cookie of each function the Go test uprobe (go_probe) is attached
 * to: which of them it is. */
enum ww_go_probe {
	WW_GO_TEST_START = 1,   /* testing.tRunner, testing.fRunner */
	WW_GO_BENCH_START,      /* testing.(*B).runN */
	WW_GO_EXAMPLE_START,    /* testing.runExample */
	WW_GO_TEST_END,         /* testing.(*common).runCleanup,
				 * testing.(*InternalExample).processRunResult */
	WW_GO_NEW_GOROUTINE,    /* runtime.runqput */
};

/* event_hdr.flags of a WW_EV_EXEC record. */
#define WW_EXEC_STOPPED 1 /* the new program looks like a Go test binary and
			   * was sent SIGSTOP; user space sends SIGCONT */
#define WW_EXEC_CONTENTS 2 /* it asks for contents (op: enum ww_contents_why) and
			    * was sent SIGSTOP; SIGCONT once they are watched */
#define WW_EXEC_PREPARED 4 /* a Go test binary whose file has its uprobes
			    * (map gofiles, by ino and dev): its goprocs entry
			    * was made at the exec, and it was not paused */
#define WW_EXEC_PAUSED (WW_EXEC_STOPPED | WW_EXEC_CONTENTS)

/* event_hdr.flags of a WW_EV_EXIT record. */
#define WW_EXIT_GO_TEST 1 /* a followed Go test binary: the reader is woken to
			   * detach its uprobes, which takes the kernel a while */
#define WW_EXIT_LINKER 2  /* a program named link, as the Go linker is: the
			   * reader is woken to ready the uprobes of the test
			   * binary it wrote before go test runs it */

/* Where a Go test binary keeps what the uprobes read, from its DWARF;
 * set by user space per process (map goprocs) before it continues, or
 * per file (map gofiles), copied to goprocs at the exec. */
struct goproc {
	__u32 goid_off;        /* runtime.g.goid */
	__u32 parent_goid_off; /* runtime.g.parentGoid */
	__u32 name_off;        /* testing.common.name (a Go string) from *testing.T */
	__u32 _pad;
};

/* enum ww_op, the operation of a write, what each is and does (lists
 * of operations, read through lib/rows.h), enum ww_meta_flag, and the
 * syscalls that produce each: generated from the table of operations
 * (internal/ops). */
#include "ops.h"

/* Is o one of a list of ops.h's operations, WW_..._OPS? Spelled out in
 * place, o read for each (o == WW_OP_A || o == WW_OP_B ...): as the bool
 * of a helper function, inlined, the opened of emit_write made sys_exit
 * verify 5,978 instructions rather than 5,854. */
#define OR_OP(o, name) || (o) == WW_OP_##name
#define OP_IN(list, o) (false list(OR_OP, o))

/* How a write reached the kernel. */
enum ww_via {
	WW_VIA_SYSCALL = 0,
	WW_VIA_IO_URING = 1, /* an io_uring request, seen at submission: no result yet */
};

/*
 * Data slots of an WW_EV_WRITE record, in this order. A slot of length 0
 * is absent. Directory slots hold the components of a directory,
 * innermost first, each NUL-terminated; the others hold one string.
 */
enum ww_slot {
	WW_SLOT_PATH     = 0, /* path as passed by the process */
	WW_SLOT_DIR      = 1, /* directory a relative WW_SLOT_PATH starts from */
	WW_SLOT_PATH2    = 2, /* second path: rename's and link's new name */
	WW_SLOT_DIR2     = 3, /* directory a relative WW_SLOT_PATH2 starts from */
	WW_SLOT_RESOLVED = 4, /* the file a successful open opened, or an fd-based
			       * call's file (components) */
};
/* WW_EV_EXEC uses WW_SLOT_PATH for the file executed and WW_SLOT_DIR for argv.
 * WW_EV_TEST_START uses WW_SLOT_PATH for the test's full name (TestX/sub) and
 * WW_SLOT_PATH2 for the entry PC (8 bytes) of the function tRunner runs. */

/*
 * Marks on inodes, set by user space from the allowlist: a directory (or
 * file) the allowlist allows with everything under it, or one where a deny
 * rule applies at or below it, so that user space must decide.
 */
enum ww_mark {
	WW_MARK_ALLOW = 1,
	WW_MARK_DENY  = 2,
	WW_MARK_FINAL = 4, /* with ALLOW: no deny mark above it, so reaching it decides */
	/* A directory above what a deny rule protects: renaming one of its
	 * entries may move what the rule protects, so user space judges the
	 * renames of its own entries (not of those further down). */
	WW_MARK_MOVES = 8,
};

/* hdr.rec of a WW_EV_WRITE record. */
enum ww_rec {
	/* Its path may lead elsewhere for writewatch, which the filesystem
	 * witness would not tell: an open of a file through a mount the
	 * run made, or of another namespace, while contents were not
	 * watched; a truncate by name while a privileged process changed
	 * mounts; a shared mapping or AIO write of such a file
	 * (lib/contents.h, lib/mounts.h). */
	WW_REC_UNWATCHED = 1,
	/* The process was sent SIGSTOP as the record was sent: user space
	 * follows the record's path, then sends SIGCONT (pause_for_path,
	 * lib/pause.h). */
	WW_REC_PAUSED = 2,
	/* The prior_* fields hold what the call found before it changed its
	 * file (lib/prior.h): a rename's target, a chmod's, chown's or
	 * utimes' file. */
	WW_REC_PRIOR = 4,
	/* An open that succeeded of a block device, for writing, whose node
	 * the allowlist does not name (no allowed mark of its own): a write
	 * of everything on the device. hdr.mode holds its device number
	 * (the kernel's dev_t) instead of the open's mode (writes_device,
	 * lib/write.h). */
	WW_REC_DEVICE = 8,
	/* A write by name (that succeeded or not), by a process in a mount namespace
	 * the tree made and mounted in since: its path may lead, for the
	 * process, elsewhere than for writewatch. The process is paused
	 * (WW_REC_PAUSED) while user space finds, through its root, where
	 * the write landed; hdr.gen holds the tree's count of calls that
	 * change mounts when the record was sent (map mount_calls), which
	 * tells user space whether a mount may have moved since
	 * (lib/mounts.h, lib/pause.h). */
	WW_REC_OWN_VIEW = 16,
	/* A write by name whose name (or start directory) in the process's
	 * memory changed between the call's entry and its exit, as another
	 * thread can change it while the kernel walks the path: the record
	 * may not name what the call wrote (lib/names.h). */
	WW_REC_REWRITTEN = 32,
};

/* repeat_key.flags of a call that failed, besides its own flags (which
 * leave this bit alone): its repeats are counted apart from those of the
 * same call that succeeded, so that a success is sent, and judged. */
#define WW_REPEAT_FAILED (1u << 30)

/* hdr.flags of an open (or creat) that succeeded, besides its open flags:
 * the open created the file (the kernel's FMODE_CREATED), rather than
 * opening one that was there. No open flag uses this bit. */
#define WW_OPEN_CREATED (1u << 31)

/* event_hdr.clean << slot: the slot's own directory has WW_MARK_MOVES. */
#define WW_CLEAN_MOVES (1u << 8)

/* How --enforce enforces (set by the loader): WW_TIER_<NAME> is the tier internal/policy/<name>.go declares (checked by a test there). */
enum ww_tier {
	WW_TIER_NONE     = 0, /* report only */
	WW_TIER_LSM      = 1, /* BPF LSM programs refuse the write (bpf/enforce.bpf.c) */
	WW_TIER_LANDLOCK = 2, /* Landlock refuses it; sys_exit kills the writer */
	WW_TIER_KILL     = 3, /* sys_enter kills the writer; the call still runs */
};

/* What enforcement did about one write (event_hdr.action bits). */
enum ww_action {
	WW_ACT_BLOCKED = 1, /* the kernel refused the call */
	WW_ACT_KILLED  = 2, /* the process was sent SIGKILL */
	/* Not in records: judge_enter could not read the path (its page not
	 * yet faulted in); the call is judged at its exit (judge_exit). */
	WW_ACT_UNREAD  = 4,
	/* Not in records: the LSM tier refused an open of a block device
	 * for writing (file_open), whose number it left in the stored
	 * mode; the record says so with WW_REC_DEVICE. */
	WW_ACT_DEVICE  = 8,
};

/* Key of the allowed-prefix trie: absolute path strings, compared byte by
 * byte. A directory is stored as "DIR/" (everything under it), a file or a
 * directory itself with its NUL ("PATH\0"), so it matches only itself. */
#define PREFIX_SLOT 256
struct prefix_key {
	__u32 prefixlen; /* in bits */
	char data[PREFIX_SLOT];
};

struct inode_key {
	__u64 ino;
	__u32 dev;  /* the kernel's dev_t: major << 20 | minor */
	__u32 _pad;
};

/*
 * A write already sent once: the same process, operation, flags and file.
 * Its repeats are counted here instead of being sent again. A file is its
 * inode number, device and generation: a number freed by a delete and
 * given to a new file comes back with another generation (on filesystems
 * that keep one; an open that creates its file is never a repeat).
 */
struct repeat_key {
	__u64 ino;
	__u32 dev;
	__u32 tgid;
	__u32 op;
	__u32 flags;
	__u64 test;  /* the Go test of the writing goroutine (event_hdr.test) */
	__u32 epoch; /* the process's test-boundary announcements so far */
	__u32 gen;   /* the inode's i_generation */
};

/*
 * A file whose write record was sent (lib/reads.h): the written set. The
 * generation tells a file from a later one that reuses its inode number.
 */
struct file_key {
	__u64 ino;
	__u32 dev;
	__u32 gen; /* the inode's i_generation */
};

/*
 * A read already sent once: the same file, process and reader (Go test
 * of the goroutine, or the process's announcement epoch). Its repeats
 * are counted here instead of being sent again.
 */
struct read_key {
	struct file_key file;
	__u64 test;
	__u32 tgid;
	__u32 epoch;
};

/* Per-CPU counters, indexes of the stats map. */
enum ww_stat {
	WW_STAT_EVENTS = 0,      /* write events sent to user space */
	WW_STAT_RINGBUF_FULL,    /* records dropped: ring buffer full */
	WW_STAT_PROC_FULL,       /* threads or processes not followed: storage or map full */
	WW_STAT_TRUNCATED,       /* path slots that did not fit */
	WW_STAT_READ_ERR,        /* strings the kernel could not read */
	WW_STAT_ALLOWED,         /* write events found allowed in the kernel, not sent */
	WW_STAT_NOT_FILES,       /* opens of pipes, sockets, memfds...: not file writes */
	WW_STAT_REPEATS,         /* write events counted in the repeats map, not sent */
	WW_STAT_LOST_WRITES,     /* of WW_STAT_RINGBUF_FULL: write records */
	WW_STAT_GOROUTINE_FULL,  /* goroutines not followed: goroutine map update failed */
	WW_STAT_STOP_ERR,        /* test binaries not paused at exec: bpf_send_signal failed */
	WW_STAT_KILLED,          /* SIGKILLs sent by enforcement */
	WW_STAT_BLOCKED,         /* writes refused by enforcement */
	WW_STAT_SIGNAL_ERR,      /* SIGKILLs that could not be sent */
	WW_STAT_UNMARKED,        /* LSM refusals of a syscall writewatch does not record */
	WW_STAT_READS,           /* read records sent: opens of a file in the written set */
	WW_STAT_READ_REPEATS,    /* such reads counted in the reads map, not sent */
	WW_STAT_WRITTEN_FULL,    /* files not added to the written set: map full */
	WW_STAT_READS_FULL,      /* reads not added to the reads map (full): repeats are sent */
	WW_STAT_OUTSIDE_TRACED,  /* calls of the tree that attached to (ptrace) or wrote into (process_vm_writev) a process outside it */
	WW_STAT_FANOTIFY_WRITABLE, /* fanotify groups made by the tree with writable event fds */
	WW_STAT_CONTENTS_STOP_ERR, /* processes not paused until contents were watched: bpf_send_signal failed */
	WW_STAT_UNWATCHED_ALLOWED, /* of WW_STAT_ALLOWED: whose path may lead elsewhere, unseen (mount_bits, lib/contents.h) */
	WW_STAT_URING_UNWATCHED, /* io_uring calls of the tree before the io_uring program was attached that it did not pause (lib/contents.h) */
	WW_STAT_LOST_READS,      /* of WW_STAT_RINGBUF_FULL: read records (cross-test reads only) */
	WW_STAT_PRIVATE,         /* of WW_STAT_ALLOWED: writes to a filesystem in memory made during the run, through a mount namespace the tree made (lib/mounts.h) */
	WW_STAT_MAX,
};

struct event_hdr {
	__u64 ts;           /* CLOCK_BOOTTIME, nanoseconds */
	__u64 test;         /* Go: token of the test of the goroutine (WW_GO_TEST); a
			     * FORK record: of the goroutine that forked; TEST_*: the test */
	__u64 goid;         /* Go: the goroutine (WW_GO_G) */
	__u32 kind;         /* enum ww_event_kind */
	__u32 op;           /* enum ww_op */
	__u32 tgid;         /* process, init PID namespace */
	__u32 pid;          /* thread, init PID namespace */
	__u32 ns_tgid;      /* process, writewatch's PID namespace (0 = not visible) */
	__u32 ppid;         /* WW_EV_FORK: parent tgid; else real parent tgid */
	__s32 ret;          /* syscall return, or exit code for WW_EV_EXIT */
	__u32 flags;        /* open, renameat2, linkat or unlinkat flags; EV_FORK: 1 = COMMAND itself */
	__u32 mode;
	__u32 truncated;    /* bit n: slot n did not fit */
	__u16 len[NSLOTS];  /* bytes of each slot, in order after the header */
	__u16 present;     /* bit n: slot n was filled */
	__u16 clean;       /* bit n: the walk of slot n met an allowed mark and no denied one,
			    * up to its end (also when its names did not fit); bit n + 8
			    * (WW_CLEAN_MOVES): slot n's own directory has WW_MARK_MOVES */
	__u16 via;         /* enum ww_via */
	__u16 detached;    /* bit n: slot n's file has no path: a pipe, socket, memfd... */
	__u16 rec;         /* WRITE: enum ww_rec bits */
	__u32 gen;         /* the file of WW_SLOT_RESOLVED, when known (ino 0: none), */
	__u64 ino;         /* by inode generation, number and device: repeats of */
	__u32 dev;         /* this record are counted in the repeats map */
	__u32 go;          /* enum ww_go_flag bits */
	__u32 epoch;       /* WRITE: the process's boundary announcements so far */
	__u32 action;      /* enum ww_action bits: what enforcement did */
	/* WRITE with WW_REC_PRIOR: what the call found before it changed its
	 * file (lib/prior.h). prior_mode 0: a rename's target held nothing. */
	__u32 prior_mode;
	__u32 prior_uid;
	__u32 prior_gid;
	__u32 prior_mtime_nsec;
	__s64 prior_mtime_sec;
	char comm[16];
};

#endif
