// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * writewatch kernel side: follow one process tree and report every
 * write-intent filesystem syscall it makes.
 *
 * The programs, each a thin wrapper of its logic in lib/. The sys_enter
 * program stores a write's arguments in the calling thread's task storage;
 * the sys_exit program sends the record with the return value and always
 * clears the stored arguments (lib/stash.h, lib/write.h).
 * sched_process_fork adds new threads and processes of the tree before
 * they run; sched_process_exit removes them (lib/proc.h). io_uring
 * requests are seen at submission (lib/uring.h), and uprobes in Go test
 * binaries tell which test each goroutine works for (lib/goattr.h).
 * Read-only opens of files the run wrote are sent too (lib/reads.h).
 * Two programs at the entry of the VFS's rename and setattr note what a
 * call found before it changed its file (lib/prior.h).
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_tracing.h>
#include "writewatch.h"
#include "lib/stash.h"
#include "lib/proc.h"
#include "lib/uring.h"
#include "lib/goattr.h"
#include "lib/prior.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* Make the shared types visible to bpf2go. */
const struct event_hdr *unused_event_hdr __attribute__((unused));
const enum ww_op *unused_op __attribute__((unused));
const enum ww_event_kind *unused_kind __attribute__((unused));
const enum ww_stat *unused_stat __attribute__((unused));
const enum ww_slot *unused_slot __attribute__((unused));
const enum ww_mark *unused_mark __attribute__((unused));
const enum ww_via *unused_via __attribute__((unused));
const struct repeat_key *unused_repeat_key __attribute__((unused));
const struct read_key *unused_read_key __attribute__((unused));
const enum ww_go_flag *unused_go_flag __attribute__((unused));
const enum ww_go_probe *unused_go_probe __attribute__((unused));
const enum ww_meta_flag *unused_meta_flag __attribute__((unused));
const enum ww_rec *unused_rec __attribute__((unused));
const struct goproc *unused_goproc __attribute__((unused));
const enum ww_tier *unused_tier __attribute__((unused));
const enum ww_action *unused_action __attribute__((unused));
const enum ww_contents_why *unused_contents_why __attribute__((unused));

/*
 * Entry of every syscall of every process: the syscall number is checked
 * first, so everything else costs one switch.
 */
SEC("tp_btf/sys_enter")
int BPF_PROG(sys_enter, struct pt_regs *regs, long id)
{
	return syscall_entered(regs, id);
}

/* Exit of every syscall: send the record of a stored call, always
 * clearing its arguments. Any other syscall costs one switch. */
SEC("tp_btf/sys_exit")
int BPF_PROG(sys_exit, struct pt_regs *regs, long ret)
{
	return syscall_exited(regs, ret);
}

/* A new thread or process, before it runs a single instruction. */
SEC("tp_btf/sched_process_fork")
int BPF_PROG(sched_fork, struct task_struct *parent_task, struct task_struct *child)
{
	return proc_forked(child);
}

SEC("tp_btf/sched_process_exec")
int BPF_PROG(sched_exec, struct task_struct *task, pid_t old_pid, struct linux_binprm *bprm)
{
	return proc_execed(task, bprm);
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(sched_exit, struct task_struct *task)
{
	return proc_exited(task);
}

/* A rename, once its target is looked up and locked: did it hold a file?
 * (lib/prior.h) */
SEC("fentry/vfs_rename")
int BPF_PROG(rename_target, struct renamedata *rd)
{
	return prior_noted(BPF_CORE_READ(rd, new_dentry), true);
}

/* A chmod, chown or utimes, before it changes the file: its mode, owner
 * and modification time (lib/prior.h). */
SEC("fentry/notify_change")
int BPF_PROG(setattr_target, void *idmap, struct dentry *dentry)
{
	return prior_noted(dentry, false);
}

/* An io_uring request, at submission: no syscall of its own to see. The
 * loader attaches it to io_uring_submit_req, or where the kernel has the
 * older io_uring_submit_sqe (Linux 6.1), there: both pass the request
 * first (tracer/uring.go). */
SEC("raw_tracepoint/io_uring_submit_req")
int uring_submit(struct bpf_raw_tracepoint_args *ctx)
{
	return uring_submitted(ctx);
}

/*
 * The uprobe in Go test binaries, attached per process by user space to
 * each function below, with the function's cookie (enum ww_go_probe):
 * one program, so that a binary's uprobes are one link, and closing it
 * waits for one grace period of the kernel's, not one per program.
 */
SEC("uprobe/go")
int go_probe(struct pt_regs *ctx)
{
	switch (bpf_get_attach_cookie(ctx)) {
	/* Entry of testing.tRunner(t *T, fn func(*T)) and testing.fRunner(f *F,
	 * fn func(*F)). */
	case WW_GO_TEST_START:
		return runner_started(ctx);
	/* Entry of testing.(*B).runN(b *B, n int). */
	case WW_GO_BENCH_START:
		return bench_started(ctx);
	/* Entry of testing.runExample(eg InternalExample). */
	case WW_GO_EXAMPLE_START:
		return example_started(ctx);
	/* Entry of testing.(*common).runCleanup, or of
	 * testing.(*InternalExample).processRunResult. */
	case WW_GO_TEST_END:
		return test_ended(ctx);
	/* Entry of runtime.runqput(pp *p, gp *g, next bool). */
	case WW_GO_NEW_GOROUTINE:
		return goroutine_created(ctx);
	}
	return 0;
}
