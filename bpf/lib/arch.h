/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * What differs per architecture, besides the syscall numbers (ops.h): where
 * a syscall's number and arguments are in the saved user registers, how to
 * tell a syscall of a compat (32-bit) program, and where Go's register ABI
 * keeps the running g and the first arguments (uprobes in Go test
 * binaries); and, the same on both, where those registers are
 * (syscall_regs).
 *
 * bpf2go's -target defines __TARGET_ARCH_x86 or __TARGET_ARCH_arm64.
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

#define O_NOFOLLOW 00400000 /* include/uapi/asm-generic/fcntl.h */

/*
 * A 32-bit syscall of an ia32 program: its numbers and argument registers
 * are not x86-64's, so it must not be read as one (ia32's fork is
 * x86-64's open). writewatch does not watch those (docs/limits.md).
 */
static __always_inline bool compat_syscall(void)
{
	struct task_struct *t = bpf_get_current_task_btf();

	return t->thread_info.status & TS_COMPAT; /* a direct load: t is a BTF pointer */
}

/* Go's register ABI: the running g in R14, arguments in AX, BX, ... */
#define GO_G(regs)      ((regs)->r14)
#define GO_G_READ(regs) BPF_CORE_READ(regs, r14)
#define GO_SP(regs)     ((regs)->sp)
#define GO_SP_READ(regs) BPF_CORE_READ(regs, sp)
#define GO_ARG1(regs)   ((regs)->ax)
#define GO_ARG2(regs)   ((regs)->bx)
#define GO_ARG3(regs)   ((regs)->cx)

#elif defined(__TARGET_ARCH_arm64)
/*
 * arm64's struct pt_regs (arch/arm64/include/asm/ptrace.h), the fields read
 * here: CO-RE finds them in the running kernel (vmlinux.h is x86-64's).
 * regs[0] is the return value by sys_exit; orig_x0 keeps the first
 * argument.
 */
struct pt_regs___ww_arm64 {
	__u64 regs[31];
	__u64 sp;
	__u64 pc;
	__u64 pstate;
	__u64 orig_x0;
	__s32 syscallno;
} __attribute__((preserve_access_index));

#define ARM64_REGS(r) ((struct pt_regs___ww_arm64 *)(r))

/* The syscall number, as sys_exit sees it. */
#define SYSCALL_NR(r) (ARM64_REGS(r)->syscallno)

#define SYSCALL_ARG1(r) (ARM64_REGS(r)->orig_x0)
#define SYSCALL_ARG2(r) (ARM64_REGS(r)->regs[1])
#define SYSCALL_ARG3(r) (ARM64_REGS(r)->regs[2])
#define SYSCALL_ARG4(r) (ARM64_REGS(r)->regs[3])
#define SYSCALL_ARG5(r) (ARM64_REGS(r)->regs[4])
#define SYSCALL_ARG6(r) (ARM64_REGS(r)->regs[5])

#define TIF_32BIT 22 /* arch/arm64/include/asm/thread_info.h */

#define O_NOFOLLOW 0100000 /* arch/arm64/include/uapi/asm/fcntl.h */

/*
 * A syscall of an AArch32 program: its numbers and argument registers are
 * not arm64's. writewatch does not watch those (docs/limits.md).
 */
static __always_inline bool compat_syscall(void)
{
	struct task_struct *t = bpf_get_current_task_btf();

	return t->thread_info.flags & (1UL << TIF_32BIT); /* a direct load: t is a BTF pointer */
}

/* Go's register ABI: the running g in R28, arguments in R0, R1, ... */
#define GO_G(r)      (ARM64_REGS(r)->regs[28])
#define GO_G_READ(r) BPF_CORE_READ(ARM64_REGS(r), regs[28])
#define GO_SP(r)     (ARM64_REGS(r)->sp)
#define GO_SP_READ(r) BPF_CORE_READ(ARM64_REGS(r), sp)
#define GO_ARG1(r)   (ARM64_REGS(r)->regs[0])
#define GO_ARG2(r)   (ARM64_REGS(r)->regs[1])
#define GO_ARG3(r)   (ARM64_REGS(r)->regs[2])

#else
#error "writewatch: only x86-64 and arm64 are supported (syscall registers, Go's ABI)"
#endif

/* The current syscall's registers, as sys_enter and sys_exit see them
 * (the task's user registers), for a global function, which cannot be
 * handed the kernel's pointer. */
static __always_inline struct pt_regs *syscall_regs(void)
{
	return (struct pt_regs *)bpf_task_pt_regs(bpf_get_current_task_btf());
}

#endif
