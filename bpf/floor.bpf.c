// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The floor of `make bench`: empty programs on the syscall tracepoints
 * writewatch uses. Attaching anything there sends every syscall through
 * the kernel's syscall-tracing path; this measures that cost alone.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

char LICENSE[] SEC("license") = "Dual BSD/GPL";

SEC("tp_btf/sys_enter")
int BPF_PROG(floor_enter, struct pt_regs *regs, long id)
{
	return 0;
}

SEC("tp_btf/sys_exit")
int BPF_PROG(floor_exit, struct pt_regs *regs, long ret)
{
	return 0;
}

/* The same for a path without syscall tracepoints (floor -hooks): empty
 * programs that the loader attaches to kernel functions it names, one
 * load per function (internal names in bench/floor/main.go). */
SEC("fentry/vfs_open")
int floor_fentry(void *ctx)
{
	return 0;
}

SEC("fexit/vfs_open")
int floor_fexit(void *ctx)
{
	return 0;
}
