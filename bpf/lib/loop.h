/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * bpf_loop's callbacks, each one step in a global function.
 */
#ifndef WW_LIB_LOOP_H
#define WW_LIB_LOOP_H

/*
 * The callback name of bpf_loop, whose step is the global function
 * step(ctx, i), returning 1 to stop and 0 to go on. The verifier walks a
 * callback's body at each of its passes over it, until the states it
 * reaches repeat: the path's step took 1,893 of sys_exit's verified
 * instructions inlined in its callback, 196 as a global function, which
 * it walks once (docs/performance.md). The result of a global function
 * is any int to it, and a callback's must be 0 or 1. A step must read i:
 * the compiler leaves an argument the callee ignores unset, and the
 * verifier refuses that call.
 */
#define LOOP_STEP(name, step)                   \
	static long name(__u32 i, void *ctx)    \
	{                                       \
		int stop = step(ctx, i);        \
                                                \
		barrier_var(stop);              \
		return stop & 1;                \
	}

#endif
