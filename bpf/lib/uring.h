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

#endif
