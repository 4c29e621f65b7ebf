/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * BPF-only: stacks. How many frames a stack read gave, and the off-CPU interval's
 * record, which the scheduler's and the syscalls' programs write between them: its
 * kernel stack when the thread runs again (the stack it blocked with: it has not run
 * since), and its user stack: with syscalls = exact at the syscall's exit that follows
 * (the user registers are intact there), with syscalls = blocking the one walked at the
 * switch-out (struct stack_cache: walked at most once per ustack_gap_ns a thread, and reused
 * while the thread blocks with the same user registers as at one of its last
 * USTACK_PLACES walks).
 */
#ifndef HOSTPROF_STACKS_BPF_H
#define HOSTPROF_STACKS_BPF_H

#include "hostprof.bpf.h"
#include "python.bpf.h"
#include "ucopy.bpf.h"

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

/* Send an off-CPU record built in scratch with both its stacks, and give the slot back. */
static __always_inline void offcpu_output(struct scratch *s, struct hp_offcpu *e)
{
	__u32 k = e->kstack_len, u = e->ustack_len, size;

	if (k > HP_MAX_STACK || u > HP_MAX_STACK) {
		scratch_put(s);
		return;
	}
	size = sizeof(*e) + (k + u) * sizeof(__u64);
	e->hdr.size = size;
	ring_output(e, size);
	scratch_put(s);
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

/* syscalls = blocking: a thread's walked user stack. */
static __always_inline struct stack_cache *stack_cache_of(struct task_struct *task, __u32 tid, bool btf, bool create)
{
	struct stack_cache *u;

	if (use_task_storage && btf)
		return bpf_task_storage_get(&stack_store, task, NULL, create ? BPF_LOCAL_STORAGE_GET_F_CREATE : 0);
	u = bpf_map_lookup_elem(&stack_cache, &tid);
	if (u || !create)
		return u;
	if (bpf_map_update_elem(&stack_cache, &tid, &zero_stack_cache, BPF_NOEXIST) && !bpf_map_lookup_elem(&stack_cache, &tid))
		return NULL;
	return bpf_map_lookup_elem(&stack_cache, &tid);
}

/* The place of t's user stacks walked at ip and sp; USTACK_PLACES: none. */
static __always_inline __u32 ustack_place(const struct task *t, __u64 ip, __u64 sp)
{
	__u32 p;

	for (p = 0; p < USTACK_PLACES; p++)
		if ((t->u_walked & (1u << p)) && t->u_ip[p] == ip && t->u_sp[p] == sp)
			break;
	return p;
}

/*
 * syscalls = blocking, at the switch-out of a watched thread that blocks (prev, the
 * current task): the syscall it blocked in, from its saved user registers, and its user
 * stack, unless one of its last USTACK_PLACES walks was at the same place (same
 * instruction and stack pointers) or the thread has used up its walks (one per
 * ustack_gap_ns, in bursts of ustack_burst_ns: a thread that blocks at ever new places
 * costs at most that; one that takes turns between a few places, nothing). A walk takes
 * the places in turn.
 */
static __always_inline void blocked_switch_out(void *ctx, struct task_struct *prev, struct task *t, __u32 pid,
					       __u32 tid, __u64 now, bool btf)
{
	struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(bpf_get_current_task_btf());
	__u64 ip, sp, tat;
	struct stack_cache *u;
	long nr, r;
	__u32 p;

	t->flags &= ~(TASK_BLK_SYSCALL | TASK_BLK_USTACK | TASK_BLK_USKIP);
	if (!regs)
		return;
	nr = regs_syscall_nr(regs);
	if (nr >= 0) {
		t->flags |= TASK_BLK_SYSCALL;
		t->sys_nr = nr;
		t->blk_args[0] = PT_REGS_PARM1_SYSCALL(regs);
		t->blk_args[1] = PT_REGS_PARM2_SYSCALL(regs);
		t->blk_args[2] = PT_REGS_PARM3_SYSCALL(regs);
	}
	/* (not the frame pointer: code built without one keeps anything in it) */
	ip = PT_REGS_IP(regs);
	sp = PT_REGS_SP(regs);
	p = ustack_place(t, ip, sp);
	if (p < USTACK_PLACES) {
		t->u_place = p;
		t->flags |= TASK_BLK_USTACK;
		return;
	}
	/* a walk per ustack_gap_ns on average, ustack_burst_ns worth of them at once (the
	 * generic cell rate algorithm: u_tat is when the next walk is due) */
	tat = t->u_tat > now ? t->u_tat : now;
	if (tat - now > ustack_burst_ns) {
		t->flags |= TASK_BLK_USKIP;
		return;
	}
	t->u_tat = tat + ustack_gap_ns;
	u = stack_cache_of(prev, tid, btf, true);
	if (!u) {
		stat_inc(HP_STAT_STACK_FAILED);
		return;
	}
	p = t->u_next & (USTACK_PLACES - 1);
	t->u_next = (p + 1) & (USTACK_PLACES - 1);
	u->stack_flags[p] = 0;
	r = bpf_get_stack(ctx, u->frames[p], HP_MAX_STACK * sizeof(__u64), BPF_F_USER_STACK);
	u->len[p] = stack_frames(r, &u->stack_flags[p], HP_STACK_UTRUNC, HP_STACK_UFAIL);
	t->u_walked |= 1u << p;
	t->u_ip[p] = ip;
	t->u_sp[p] = sp;
	t->u_place = p;
	t->flags |= TASK_BLK_USTACK;
	/* --unwind: the same stack for the CFI unwinder, which the intervals that take this
	 * place's walk take if it is one */
	ustack_copy_out(pid, tid, now, p + 1);
}

/*
 * syscalls = blocking, at the same switch-out: a CPython thread's Python stack, as an
 * HP_EV_PYSTACK record for the off-CPU interval that begins now (the daemon keeps it when
 * the interval reaches offcpu_min_ns, where it joins the interval's record). Not reused
 * like the native stack: the same native place (the eval loop's call into a blocking C
 * function) runs under ever other Python frames. Rate-limited as the native walks are, on
 * a budget of its own.
 */
static __always_inline void blocked_python(struct task *t, __u32 pid, __u32 tid, __u64 now)
{
	const struct hp_py_proc *pp = py_proc_of(pid);
	__u64 tat;

	if (!pp || (t->flags & TASK_BLK_USKIP))
		return;
	tat = t->py_tat > now ? t->py_tat : now;
	if (tat - now > ustack_burst_ns)
		return;
	t->py_tat = tat + ustack_gap_ns;
	py_emit(pp, HP_PY_FOR_OFFCPU, now, pid, tid);
}

/* The user stack of the switch-out, after the k kernel frames of an off-CPU record. */
static __always_inline __u16 blocked_ustack(struct hp_offcpu *e, struct task_struct *next, struct task *t,
					    __u32 tid, __u16 k, bool btf)
{
	__u32 p = t->u_place & (USTACK_PLACES - 1);
	struct stack_cache *u;
	__u32 n;

	if (t->flags & TASK_BLK_USKIP) {
		e->stack_flags |= HP_STACK_USKIPPED;
		stat_inc(HP_STAT_USTACK_SKIPPED);
		return 0;
	}
	if (!(t->flags & TASK_BLK_USTACK))
		return 0;
	u = stack_cache_of(next, tid, btf, false);
	if (!u)
		return 0;
	e->stack_flags |= u->stack_flags[p];
	n = u->len[p];
	if (n > HP_MAX_STACK)
		n = HP_MAX_STACK;
	if (k > HP_MAX_STACK)
		return 0;
	if (n && bpf_probe_read_kernel(&e->frames[k], n * sizeof(__u64), u->frames[p]))
		return 0;
	e->place = p + 1;
	return n;
}

/* Copy n (at most HP_MAX_STACK) frames between a stack_cache and a record. */
static __always_inline int frames_copy(__u64 *dst, const __u64 *src, __u32 n)
{
	if (n > HP_MAX_STACK)
		n = HP_MAX_STACK;
	return n ? bpf_probe_read_kernel(dst, n * sizeof(__u64), src) : 0;
}

/*
 * The kernel stack of next's off-CPU interval into frames[]: the one walked at its last
 * block, if that was from the same user instruction and stack pointer in the same
 * syscall less than kstack_reuse_ns ago (HP_STACK_KREUSED), else walked now
 * (bpf_get_task_stack: next has not run since it blocked) and kept for the next block.
 * The user registers are its saved ones (bpf_task_pt_regs, where blocking_ok says the
 * kernel has it; else every interval is walked).
 */
static __always_inline __u16 offcpu_kstack(struct hp_offcpu *e, struct task_struct *next, __u32 tid, __u64 now)
{
	struct pt_regs *regs = blocking_ok ? (struct pt_regs *)bpf_task_pt_regs(next) : NULL;
	struct stack_cache *c = regs ? stack_cache_of(next, tid, true, true) : NULL;
	__u64 ip = 0, sp = 0;
	__s32 nr = -1;
	__u16 k;
	long r;

	if (c) {
		ip = PT_REGS_IP(regs);
		sp = PT_REGS_SP(regs);
		nr = regs_syscall_nr(regs);
		if (c->k_ts && now - c->k_ts < kstack_reuse_ns && c->k_ip == ip && c->k_sp == sp && c->k_nr == nr &&
		    !frames_copy(e->frames, c->kframes, c->klen)) {
			e->stack_flags |= c->kstack_flags | HP_STACK_KREUSED;
			return c->klen > HP_MAX_STACK ? HP_MAX_STACK : c->klen;
		}
	}
	r = bpf_get_task_stack(next, e->frames, HP_MAX_STACK * sizeof(__u64), 0);
	k = stack_frames(r, &e->stack_flags, HP_STACK_KTRUNC, HP_STACK_KFAIL);
	if (c && !frames_copy(c->kframes, e->frames, k)) {
		c->klen = k;
		c->kstack_flags = e->stack_flags & (HP_STACK_KTRUNC | HP_STACK_KFAIL);
		c->k_ip = ip;
		c->k_sp = sp;
		c->k_nr = nr;
		c->k_ts = now;
	}
	return k;
}

/*
 * An off-CPU interval of next just ended (it was blocked at least offcpu_min_ns):
 * emit it with next's kernel stack, read now with bpf_get_task_stack (tp_btf only;
 * `btf` is a compile-time constant of each caller), and its user stack: walked at the
 * switch-out (syscalls = blocking), or asked of sys_exit (exact).
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
	e->place = 0;
	if (btf)
		e->kstack_len = offcpu_kstack(e, next, tid, now);
	else
		e->stack_flags |= HP_STACK_KFAIL;
	if (syscall_mode == HP_SYSCALLS_BLOCKING) {
		e->ustack_len = blocked_ustack(e, next, t, tid, e->kstack_len, btf);
		offcpu_output(s, e);
		return;
	}
	if (t->flags & TASK_IN_SYSCALL) {
		e->stack_flags |= HP_STACK_USTACK_LATER;
		t->flags |= TASK_USTACK_PENDING;
		t->pending_off_ts = t->off_ts;
	}
	stack_record_output(s, &e->hdr, sizeof(*e), e->kstack_len);
}

/*
 * The user stack of an off-CPU interval that ended while this thread was in a syscall,
 * at that syscall's exit (regs: its user registers): the one walked last if the
 * instruction and stack pointers are the same, else walked now and kept (in place 0:
 * syscalls = exact walks only for the blocks that last, few enough to need one place).
 */
static __always_inline void emit_ustack(void *ctx, struct pt_regs *regs, struct task *t, __u32 tid, __u32 pid,
					__u64 now, bool btf)
{
	struct stack_cache *c = stack_cache_of(use_task_storage && btf ? bpf_get_current_task_btf() : NULL, tid, btf,
					       true);
	__u64 ip = PT_REGS_IP_CORE(regs), sp = PT_REGS_SP_CORE(regs);
	struct scratch *s;
	struct hp_ustack *e = scratch_get(&s);
	const struct hp_py_proc *pp;
	long r;

	if (!e)
		return;
	fill_hdr(&e->hdr, HP_EV_USTACK, 0, now);
	e->off_ts = t->pending_off_ts;
	e->tid = tid;
	e->pid = pid;
	e->place = 1;
	e->stack_flags = 0;
	if (c && (t->u_walked & 1) && t->u_ip[0] == ip && t->u_sp[0] == sp &&
	    !frames_copy(e->frames, c->frames[0], c->len[0])) {
		e->stack_flags = c->stack_flags[0];
		e->ustack_len = c->len[0] > HP_MAX_STACK ? HP_MAX_STACK : c->len[0];
	} else {
		r = bpf_get_stack(ctx, e->frames, HP_MAX_STACK * sizeof(__u64), BPF_F_USER_STACK);
		e->ustack_len = stack_frames(r, &e->stack_flags, HP_STACK_UTRUNC, HP_STACK_UFAIL);
		/* --unwind: the same stack for the CFI unwinder, drained before this record */
		ustack_copy_out(pid, tid, t->pending_off_ts, 1);
		if (c && !frames_copy(c->frames[0], e->frames, e->ustack_len)) {
			c->len[0] = e->ustack_len;
			c->stack_flags[0] = e->stack_flags;
			t->u_ip[0] = ip;
			t->u_sp[0] = sp;
			t->u_walked |= 1;
		}
	}
	stack_record_output(s, &e->hdr, sizeof(*e), e->ustack_len);
	/* the same place's Python stack, when the process is CPython */
	pp = py_proc_of(pid);
	if (pp)
		py_emit(pp, HP_PY_FOR_OFFCPU, t->pending_off_ts, pid, tid);
}

#endif /* HOSTPROF_STACKS_BPF_H */
