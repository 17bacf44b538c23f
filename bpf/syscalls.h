/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* Numbers of the syscalls writewatch watches, per architecture. */
#ifndef WRITEWATCH_SYSCALLS_H
#define WRITEWATCH_SYSCALLS_H

#if defined(__TARGET_ARCH_x86)
/* x86-64 (arch/x86/entry/syscalls/syscall_64.tbl) */
#define NR_open       2
#define NR_truncate   76
#define NR_rename     82
#define NR_mkdir      83
#define NR_rmdir      84
#define NR_creat      85
#define NR_link       86
#define NR_unlink     87
#define NR_symlink    88
#define NR_mknod      133
#define NR_openat     257
#define NR_mkdirat    258
#define NR_mknodat    259
#define NR_unlinkat   263
#define NR_renameat   264
#define NR_linkat     265
#define NR_symlinkat  266
#define NR_renameat2  316
#define NR_openat2    437
#define NR_clone      56
#define NR_fork       57
#define NR_vfork      58
#define NR_clone3     435
#define NR_chmod      90
#define NR_fchmod     91
#define NR_chown      92
#define NR_fchown     93
#define NR_lchown     94
#define NR_utime      132
#define NR_setxattr   188
#define NR_lsetxattr  189
#define NR_fsetxattr  190
#define NR_removexattr 197
#define NR_lremovexattr 198
#define NR_fremovexattr 199
#define NR_utimes     235
#define NR_fchownat   260
#define NR_futimesat  261
#define NR_fchmodat   268
#define NR_utimensat  280
#define NR_fchmodat2  452
#define NR_setxattrat 463
#define NR_removexattrat 466
/* The metadata changes: their cases in sys_enter, and stash_meta_call. */
#define META_SYSCALLS(X) \
	X(chmod) X(fchmod) X(fchmodat) X(fchmodat2) X(chown) X(lchown) X(fchown) \
	X(fchownat) X(utime) X(utimes) X(futimesat) X(utimensat) X(setxattr) \
	X(lsetxattr) X(fsetxattr) X(setxattrat) X(removexattr) X(lremovexattr) \
	X(fremovexattr) X(removexattrat)

/* The syscalls whose arguments sys_enter stores for sys_exit: every case of
 * sys_enter's switch but the fork family. Keep the two in step. */
#define STASHING_SYSCALLS(X) \
	X(open) X(openat) X(openat2) X(creat) X(truncate) X(rename) X(renameat) \
	X(renameat2) X(unlink) X(unlinkat) X(rmdir) X(mkdir) X(mkdirat) X(link) \
	X(linkat) X(symlink) X(symlinkat) X(mknod) X(mknodat) META_SYSCALLS(X)

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
#else
#error "writewatch: syscall numbers for this architecture are not defined"
#endif

#endif
