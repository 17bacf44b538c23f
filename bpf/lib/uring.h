/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* io_uring requests of the traced tree. */
#ifndef WW_LIB_URING_H
#define WW_LIB_URING_H

#include "uapi.h"
#include "proc.h"
#include "write.h"

/*
 * io_uring requests do their work in the kernel, with no syscall of their
 * own for the syscall tracepoints to see. Each filesystem request of the
 * tree is reported when it is submitted, with its paths from the prepared
 * request; its result is not known then.
 */
static __always_inline void *uring_cmd(struct io_kiocb *req)
{
	return (void *)req + bpf_core_field_offset(struct io_kiocb, cmd);
}

/*
 * An extended attribute set by path (SETXATTR, which follows a symlink
 * in the last component) or on a descriptor (FSETXATTR; a registered
 * file, not in the descriptor table, is judged as no file at all).
 * Under --enforce it is noted for the LSM tier, which refuses it when
 * the kernel makes it; the other tiers have no hook that could, and kill
 * the submitter now unless the kernel can tell it is allowed: it may
 * still take effect.
 */
static __always_inline void uring_xattr(struct io_kiocb *req, __u8 opcode, struct args *a)
{
	struct io_xattr *x = uring_cmd(req);
	__u64 name = (__u64)BPF_CORE_READ(x, ctx.kname);
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;

	a->op = WW_OP_SETXATTR;
	if (opcode == bpf_core_enum_value(enum io_uring_op, IORING_OP_SETXATTR)) {
		a->flags = WW_META_FOLLOW;
		a->dfd = AT_FDCWD;
		a->path = (__u64)BPF_CORE_READ(x, filename, name);
	} else {
		/* REQ_F_FIXED_FILE is bit 0 of req->flags (as IOSQE_FIXED_FILE
		 * is of the request's), whose width varies: its first byte. */
		__u8 low = 0;

		bpf_probe_read_kernel(&low, 1, (void *)req + bpf_core_field_offset(struct io_kiocb, flags));
		a->dfd = low & 1 ? -1 : BPF_CORE_READ(req, cqe.fd);
	}
	if (enforce_tier == WW_TIER_NONE)
		return;
	if (enforce_tier == WW_TIER_LSM) {
		if (bpf_map_update_elem(&uring_xattrs, &name, &tgid, BPF_ANY))
			count(WW_STAT_PROC_FULL);
		return;
	}
	if (!a->path && a->dfd < 0)
		a->action = kill_current() ? WW_ACT_KILLED : 0;
	else
		a->action = judge_enter(a->path, a->dfd, 0, 0, true);
}

/* The record of a request: a global function, so that the verifier
 * walks emit_write once, not once for each kind of request above. */
__noinline int uring_emit(struct args *a)
{
	if (!a)
		return 0;
	return emit_write(a, 0, WW_VIA_IO_URING);
}

static __always_inline int uring_submitted(struct bpf_raw_tracepoint_args *ctx)
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
		/* LINKAT's request (struct io_link) is laid out as io_rename:
		 * its flags are linkat's (AT_SYMLINK_FOLLOW). */
		if (a.op == WW_OP_LINK)
			a.flags = BPF_CORE_READ(r, flags);
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
	} else if (opcode == bpf_core_enum_value(enum io_uring_op, IORING_OP_SETXATTR) ||
		   opcode == bpf_core_enum_value(enum io_uring_op, IORING_OP_FSETXATTR)) {
		if (!watch_metadata)
			return 0; /* --ignore-metadata */
		uring_xattr(req, opcode, &a);
	} else {
		return 0;
	}
	return uring_emit(&a);
}

#endif
