/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * BPF-only: stacks. How many frames a stack read gave, and the off-CPU interval's
 * record, which the scheduler's and the syscalls' programs write between them: its
 * kernel stack when the thread runs again, its user stack at the syscall's exit that
 * follows (the user registers are intact there).
 */
#ifndef HOSTPROF_STACKS_BPF_H
#define HOSTPROF_STACKS_BPF_H

#include "hostprof.bpf.h"

/* bpf_get_stack's result as a frame count; flags say truncated or failed. */
static __always_inline __u16 stack_frames(long r, __u32 *flags, __u32 trunc_flag, __u32 fail_flag)
{
	if (r < 0) {
		*flags |= fail_flag;
		stat_inc(HP_STAT_STACK_FAILED);
		return 0;
	}
	if (r >= HP_MAX_STACK * (long)sizeof(__u64))
		*flags |= trunc_flag; /* filled: likely deeper */
	return r / sizeof(__u64);
}

/*
 * Send a record built in scratch that ends with one stack of n frames (at most
 * HP_MAX_STACK, in a form the verifier can bound) at its exact size, and give the
 * scratch slot back.
 */
static __always_inline void stack_record_output(struct scratch *s, struct hp_hdr *hdr, __u32 base, __u16 n)
{
	__u32 size = base + (n & (HP_MAX_STACK - 1)) * sizeof(__u64);

	if (n == HP_MAX_STACK)
		size = base + HP_MAX_STACK * sizeof(__u64);
	hdr->size = size;
	ring_output(hdr, size);
	scratch_put(s);
}

/*
 * An off-CPU interval of next just ended (it was blocked at least offcpu_min_ns):
 * emit it with next's kernel stack, read now with bpf_get_task_stack (tp_btf only;
 * `btf` is a compile-time constant of each caller), and ask sys_exit for the user stack.
 */
static __always_inline void emit_offcpu(struct task_struct *next, struct task *t, __u32 tid, __u32 pid, __u64 now,
					bool btf)
{
	struct scratch *s;
	struct hp_offcpu *e = scratch_get(&s);

	if (!e)
		return;
	fill_hdr(&e->hdr, HP_EV_OFFCPU, 0, t->off_ts);
	e->dur_ns = now - t->off_ts;
	e->tid = tid;
	e->pid = pid;
	e->state = t->off_state;
	e->waker_tid = t->waker_tid;
	e->waker_pid = t->waker_pid;
	__builtin_memcpy(e->waker_comm, t->waker_comm, HP_COMM_LEN);
	e->stack_flags = 0;
	e->kstack_len = 0;
	e->ustack_len = 0;
	e->pad = 0;
	if (btf) {
		long r = bpf_get_task_stack(next, e->frames, HP_MAX_STACK * sizeof(__u64), 0);

		e->kstack_len = stack_frames(r, &e->stack_flags, HP_STACK_KTRUNC, HP_STACK_KFAIL);
	} else {
		e->stack_flags |= HP_STACK_KFAIL;
	}
	if (t->flags & TASK_IN_SYSCALL) {
		e->stack_flags |= HP_STACK_USTACK_LATER;
		t->flags |= TASK_USTACK_PENDING;
		t->pending_off_ts = t->off_ts;
	}
	stack_record_output(s, &e->hdr, sizeof(*e), e->kstack_len);
}

/* The user stack of an off-CPU interval that ended while this thread was in a syscall. */
static __always_inline void emit_ustack(void *ctx, struct task *t, __u32 tid, __u32 pid)
{
	struct scratch *s;
	struct hp_ustack *e = scratch_get(&s);
	long r;

	if (!e)
		return;
	fill_hdr(&e->hdr, HP_EV_USTACK, 0, bpf_ktime_get_boot_ns());
	e->off_ts = t->pending_off_ts;
	e->tid = tid;
	e->pid = pid;
	e->pad16 = 0;
	e->stack_flags = 0;
	r = bpf_get_stack(ctx, e->frames, HP_MAX_STACK * sizeof(__u64), BPF_F_USER_STACK);
	e->ustack_len = stack_frames(r, &e->stack_flags, HP_STACK_UTRUNC, HP_STACK_UFAIL);
	stack_record_output(s, &e->hdr, sizeof(*e), e->ustack_len);
}

#endif /* HOSTPROF_STACKS_BPF_H */
