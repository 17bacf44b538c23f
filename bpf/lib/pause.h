/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The pause of a writer as its record is sent, for the few writes whose
 * path user space must follow after the call (pause_for_path).
 */
#ifndef WW_LIB_PAUSE_H
#define WW_LIB_PAUSE_H

#include "uapi.h"
#include "arch.h"
#include "record.h"
#include "rows.h"
#include "mounts.h"

#define UTIME_OMIT ((1L << 30) - 2)

/* Does the current call, a change of times, leave exactly one of the two
 * as it is (utimensat with UTIME_OMIT)? The filesystem witness hears of
 * that as a modification or an access, not as an attribute change.
 * utime, utimes and futimesat set both. Read at the exit, as the record
 * is sent: the times are still in the caller's memory. */
static __always_inline bool one_time_alone(void)
{
	struct pt_regs *regs = syscall_regs();
	struct __kernel_timespec ts[2];
	__u64 times;

	if (SYSCALL_NR(regs) != NR_utimensat)
		return false;
	times = SYSCALL_ARG3(regs);
	if (!times || bpf_probe_read_user(ts, sizeof(ts), (const void *)times))
		return false;
	return (ts[0].tv_nsec == UTIME_OMIT) != (ts[1].tv_nsec == UTIME_OMIT);
}

/*
 * Pause the process (SIGSTOP) as its record e is sent, when user space
 * must follow the record's path after the call to find where it landed:
 * a write by name (that succeeded or not) of a process in a mount
 * namespace of the tree's own where a mount was made (WW_REC_OWN_VIEW,
 * lib/mounts.h), whose path user space follows through the process's
 * root; or, to find the file it changed, where the filesystem witness
 * may not see the change: a call whose row says so (UNSEEN: a
 * truncate, a change of times, a hard link's source) that followed a
 * symlink in the last component, that succeeded, by a name (no file in
 * the record's resolved slot), as a syscall (the judge's unseen); of a
 * change of times, only one of a single time (both are an attribute
 * change, which the witness hears of). User space resumes it once it
 * has followed the path: meanwhile the process cannot remove or replace
 * what the call went through (a test's temporary directory, removed as
 * it ends), and a path gone by then is one writewatch could not follow.
 * These are rare calls: a pause costs
 * a round trip to user space, 0.2 to 2 ms here. Marks the record
 * WW_REC_PAUSED (send takes the stop back if the record is lost).
 * Global, so verified once.
 */
__noinline int pause_for_path(struct event *e)
{
	__u32 op, flags;

	if (!e || e->hdr.via != WW_VIA_SYSCALL || (e->hdr.present & (1 << WW_SLOT_RESOLVED)))
		return 0;
	op = e->hdr.op;
	flags = e->hdr.flags;
	if (own_view()) {
		e->hdr.rec |= WW_REC_OWN_VIEW;
		e->hdr.gen = mount_calls_now();
	} else if (e->hdr.ret < 0 || !UNSEEN(op) || !FOLLOWS_LAST(op, flags) ||
		   (op == WW_OP_UTIMES && !one_time_alone()))
		return 0;
	if (bpf_send_signal(SIGSTOP))
		return 0;
	e->hdr.rec |= WW_REC_PAUSED;
	return 1;
}

#endif
