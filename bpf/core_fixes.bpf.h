/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Kernel-version differences, in one place, resolved by CO-RE at load time.
 */
#ifndef HOSTPROF_CORE_FIXES_BPF_H
#define HOSTPROF_CORE_FIXES_BPF_H

#include <bpf/bpf_core_read.h>

/* task_struct::state was renamed __state in 5.14 (and became unsigned int). */
struct task_struct___pre514 {
	long state;
} __attribute__((preserve_access_index));

/*
 * A task's field: a direct load where the program holds a BTF pointer (tp_btf), a probe
 * read otherwise (raw_tp). `btf` is a constant at every call site: the other branch is
 * compiled out, so the raw_tp programs never dereference their (untyped) pointers.
 */
#define TASK_READ(btf, t, field) ((btf) ? (t)->field : BPF_CORE_READ(t, field))

static __always_inline __u32 task_state(struct task_struct *t, bool btf)
{
	if (bpf_core_field_exists(t->__state))
		return TASK_READ(btf, t, __state);
	return BPF_CORE_READ((struct task_struct___pre514 *)t, state);
}

/* The CPU a task is on: thread_info::cpu (x86, arm64: THREAD_INFO_IN_TASK), else task_struct::cpu. */
struct task_struct___cpu {
	unsigned int cpu;
} __attribute__((preserve_access_index));

static __always_inline __u32 task_cpu_of(struct task_struct *t)
{
	struct task_struct___cpu *tc = (void *)t;

	if (bpf_core_field_exists(t->thread_info.cpu))
		return BPF_CORE_READ(t, thread_info.cpu);
	return BPF_CORE_READ(tc, cpu);
}

/*
 * The syscall a task is in, from the user registers its kernel entry saved (its
 * task_pt_regs); -1 when it entered the kernel another way (an interrupt, an exception).
 */
#define HP_ENOSYS 38

static __always_inline long regs_syscall_nr(struct pt_regs *regs)
{
#if defined(__TARGET_ARCH_x86)
	/* a syscall's entry stores -ENOSYS in ax, where it stays until the call returns; an
	 * exception's orig_ax is its error code (or -1), an interrupt's the negated vector */
	long nr = regs->orig_ax;

	if (nr < 0 || regs->ax != (unsigned long)-HP_ENOSYS)
		return -1;
	return nr;
#elif defined(__TARGET_ARCH_arm64)
	return (int)BPF_CORE_READ(regs, syscallno); /* NO_SYSCALL (-1) outside a syscall */
#else
#error "unsupported architecture"
#endif
}

#endif /* HOSTPROF_CORE_FIXES_BPF_H */
