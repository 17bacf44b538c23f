/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* Constants of the kernel's user-space ABI that the programs use: vmlinux.h
 * holds the kernel's types, not its macros. */
#ifndef WW_LIB_UAPI_H
#define WW_LIB_UAPI_H

/* open flags */
#define O_WRONLY    00000001
#define O_RDWR      00000002
#define O_CREAT     00000100
#define O_EXCL      00000200
#define O_TRUNC     00001000
#define O_APPEND    00002000
#define __O_TMPFILE 020000000
#define O_PATH      010000000
/* O_NOFOLLOW differs per architecture: lib/arch.h. */
#define WRITE_FLAGS (O_WRONLY | O_RDWR | O_CREAT | O_TRUNC | O_APPEND | __O_TMPFILE)

/* openat2's resolve flags */
#define RESOLVE_IN_ROOT 0x10

/* *at() calls */
#define AT_FDCWD            -100
#define AT_SYMLINK_NOFOLLOW 0x100
#define AT_REMOVEDIR        0x200
#define AT_SYMLINK_FOLLOW   0x400
#define AT_EMPTY_PATH       0x1000

#define SIGKILL 9
#define SIGCONT 18
#define SIGSTOP 19

#define EPERM  1
#define EACCES 13
#define EEXIST 17

#endif
