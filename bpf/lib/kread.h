/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Loads of kernel fields: directly where the kernel allows it, with a
 * helper call where it does not, from one source.
 */
#ifndef WW_LIB_KREAD_H
#define WW_LIB_KREAD_H

/*
 * Set by the loader where the kernel has bpf_rdonly_cast (Linux 6.2):
 * there the fields of files, dentries, inodes and mounts are loaded
 * directly, a load each (one that faults reads 0), rather than through
 * bpf_probe_read_kernel, a helper call each. The verifier makes the cast
 * a move, and drops the branch a kernel cannot take.
 */
const volatile bool direct_loads = false;

extern void *bpf_rdonly_cast(const void *obj, __u32 btf_id) __ksym __weak;

/* Field chain ... of the kernel object of type at addr: loaded directly
 * where direct_loads, else read with the helper. */
#define KREAD(type, addr, ...)                                                          \
	(direct_loads ? ___arrow(((type *)bpf_rdonly_cast((void *)(addr), bpf_core_type_id_kernel(type))), \
				 __VA_ARGS__)                                                     \
		      : BPF_CORE_READ((type *)(addr), __VA_ARGS__))

/* The 8 bytes at addr, as a number (a pointer loaded this way is one that
 * a global function may return). A cast needs a struct of the kernel's:
 * struct rb_node, whose first field, an unsigned long, is read, its offset
 * taken away so that addr is read wherever the field lies. */
#define KREAD_WORD(addr) \
	KREAD(struct rb_node, (void *)(addr) - bpf_core_field_offset(struct rb_node, __rb_parent_color), \
	      __rb_parent_color)

/*
 * The current task, for loading its fields directly. From Linux 6.5 the
 * verifier asks, at each load of a pointer field through a trusted
 * pointer (bpf_get_current_task_btf's), whether the field keeps its
 * parent's trust: four lookups by name in the kernel's BTF, each a
 * linear search of its types, in every state that reaches the load (a
 * quarter of sys_exit's load time on Linux 6.18). The same loads through
 * bpf_rdonly_cast's untrusted pointer are the same instructions, and
 * are not asked about. Where the kfunc is missing (6.1) so are the
 * lookups, and the trusted pointer is used.
 */
static __always_inline struct task_struct *current_task(void)
{
	struct task_struct *t = bpf_get_current_task_btf();

	if (direct_loads)
		return bpf_rdonly_cast(t, bpf_core_type_id_kernel(struct task_struct));
	return t;
}

#endif
