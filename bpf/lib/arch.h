/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * What differs per architecture, besides the syscall numbers (ops.h): where
 * a syscall's number and arguments are in the saved user registers, and
 * how to tell a syscall of a compat (32-bit) program.
 */
#ifndef WW_LIB_ARCH_H
#define WW_LIB_ARCH_H

#if defined(__TARGET_ARCH_x86)
/* The syscall number, as sys_exit sees it. */
#define SYSCALL_NR(regs) ((regs)->orig_ax)

/* Syscall arguments in the saved user registers (direct loads: regs is a
 * BTF pointer in tp_btf programs). */
#define SYSCALL_ARG1(regs) ((regs)->di)
#define SYSCALL_ARG2(regs) ((regs)->si)
#define SYSCALL_ARG3(regs) ((regs)->dx)
#define SYSCALL_ARG4(regs) ((regs)->r10)
#define SYSCALL_ARG5(regs) ((regs)->r8)
#define SYSCALL_ARG6(regs) ((regs)->r9)

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
#else
#error "writewatch: syscall registers for this architecture are not defined"
#endif

#endif
