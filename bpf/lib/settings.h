/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* The tracing object's settings (writewatch.bpf.c), set by the loader
 * before load: the verifier sees each as a constant. */
#ifndef WW_LIB_SETTINGS_H
#define WW_LIB_SETTINGS_H

/* Set by the loader. Writewatch's own PID namespace, to report ids the
 * user recognises; 0 means writewatch runs in the initial namespace. */
const volatile __u64 pidns_dev = 0;
const volatile __u64 pidns_ino = 0;
/* Set by the loader when the marks map holds the allowlist's inodes. */
const volatile bool use_marks = false;
/* Report metadata changes (chmod, chown, utimes, xattrs) too. */
const volatile bool watch_metadata = true;
/* Wake the reader once this much is waiting; below it, the reader polls. */
const volatile __u64 wakeup_bytes = 1 << 20;
/* Set by the loader: pause Go test binaries at exec so that user space
 * can attach the test-boundary uprobes before their first instruction. */
const volatile __u32 follow_go_tests = 0;
/* --enforce: enum ww_tier, and whether to kill the writer. */
const volatile __u32 enforce_tier = WW_TIER_NONE;
const volatile bool enforce_kill = false;
/* --enforce with the metadata guard (metaguard/): a seccomp filter hands
 * COMMAND's metadata changes to writewatch, which refuses those outside
 * the grants before they run. A refused call never reaches sys_enter;
 * sys_exit sees it (EPERM) and reports it. */
const volatile bool meta_guard = false;

#endif
