/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * BPF-only: the user registers and the top of the user stack of the current task, copied
 * for the daemon's CFI unwinder (--unwind: unwind_bytes, 0 off), into an hp_rawsample in
 * rawbuf: on-CPU samples (samples.bpf.c, rawbuf[0]) and the switch-outs and syscall exits
 * whose user stack an off-CPU interval takes (ustack_copy_out, rawbuf[1]: tracepoint
 * programs do not nest with each other; the perf_event program may interrupt them).
 */
#ifndef HOSTPROF_UCOPY_BPF_H
#define HOSTPROF_UCOPY_BPF_H

#include "hostprof.bpf.h"
#include "glob.bpf.h"

#define RAWBUF_SAMPLE 0
#define RAWBUF_TRACEPOINT 1

/* Whether the current task copies its stack: --unwind, and for `named`, a thread a glob names. */
static __always_inline bool want_copy(void)
{
	char comm[HP_COMM_LEN];
	__u32 n = nr_globs;

	if (!blocking_ok || !unwind_bytes) /* blocking_ok: bpf_task_pt_regs (5.15) */
		return false;
	if (!unwind_named)
		return true;
	if (bpf_get_current_comm(comm, sizeof(comm)))
		return false;
	for (__u32 i = 0; i < HP_MAX_GLOBS; i++) {
		if (i >= n)
			break;
		if (glob_match(&globs[i], comm))
			return true;
	}
	return false;
}

/* The user registers in DWARF's numbering; the stack pointer, 0 when they cannot be read. */
static __always_inline __u64 copy_regs(struct hp_rawsample *e)
{
	struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(bpf_get_current_task_btf());

#if defined(__TARGET_ARCH_x86)
	/* one read of the whole set, then in DWARF's order; read into the record's frames,
	 * which the stacks overwrite after, not onto the BPF stack: the switch hook that
	 * calls ustack_copy_out leaves it too little of its 512 bytes (6.1) */
	struct pt_regs *u = (struct pt_regs *)e->frames;

	if (bpf_probe_read_kernel(u, sizeof(*u), regs))
		return 0;
	e->regs[0] = u->ax;
	e->regs[1] = u->dx;
	e->regs[2] = u->cx;
	e->regs[3] = u->bx;
	e->regs[4] = u->si;
	e->regs[5] = u->di;
	e->regs[6] = u->bp;
	e->regs[7] = u->sp;
	e->regs[8] = u->r8;
	e->regs[9] = u->r9;
	e->regs[10] = u->r10;
	e->regs[11] = u->r11;
	e->regs[12] = u->r12;
	e->regs[13] = u->r13;
	e->regs[14] = u->r14;
	e->regs[15] = u->r15;
	e->regs[16] = u->ip;
	e->regs_valid = (1ull << 17) - 1;
	return u->sp;
#elif defined(__TARGET_ARCH_arm64)
	/* pt_regs begins with user_pt_regs: x0-x30, sp, pc, which are DWARF's 0-32 */
	if (bpf_probe_read_kernel(e->regs, HP_RAW_REGS * sizeof(__u64), regs))
		return 0;
	e->regs_valid = (1ull << HP_RAW_REGS) - 1;
	return e->regs[31];
#else
	return 0;
#endif
}

/*
 * unwind_bytes of the stack from sp up into base (at most HP_MAX_STACK * 2 frames into
 * a rawbuf's record): the first chunk up to the end of sp's page, then pages, stopping at
 * the first page that cannot be read (bpf_probe_read_user reads all or nothing). Returns
 * the bytes copied, whole words.
 */
static __always_inline __u32 copy_stack(__u8 *base, __u64 sp)
{
	__u32 off, want = unwind_bytes > HP_RAW_STACK_MAX ? HP_RAW_STACK_MAX : unwind_bytes;
	__u64 len = 0;

	for (int i = 0; i < HP_RAW_STACK_MAX / 4096 + 1; i++) {
		__u64 n;

		if (len >= want)
			break;
		n = 4096 - ((sp + len) & 4095);
		if (n > want - len)
			n = want - len;
		/* bounds the verifier can follow: clang would drop the n > 4096 test (it knows n is
		 * at most 4096 on both ways here; 6.1's verifier does not), unless n is opaque */
		barrier_var(n);
		off = len & (2 * HP_RAW_STACK_MAX - 1);
		barrier_var(off);
		if (n == 0 || n > 4096 || off > HP_RAW_STACK_MAX)
			break;
		if (bpf_probe_read_user(base + off, n, (void *)(sp + off)))
			break; /* past the stack's top, or a page not in memory */
		len += n;
	}
	return len & ~7u; /* a stack pointer not 8-aligned: the record counts whole words */
}

/*
 * HP_EV_RAWUSTACK: the current task's registers and stack for the off-CPU interval of tid
 * that begins (began) at ts, whose user stack was just walked by frame pointers into the
 * thread's place `place` (1 + index): the daemon unwinds it and gives the interval those
 * frames, and every later interval that reuses that place's walk. A global function, verified on
 * its own (the switch hook is near 6.1's verifier limits); weak: sched.bpf.c and
 * syscalls.bpf.c both have it. 0 always.
 */
__attribute__((noinline, weak)) int ustack_copy_out(__u32 pid, __u32 tid, __u64 ts, __u32 place)
{
	__u32 key = RAWBUF_TRACEPOINT, len;
	struct hp_rawsample *e;
	__u64 sp;

	if (!want_copy())
		return 0;
	e = bpf_map_lookup_elem(&rawbuf, &key);
	if (!e)
		return 0;
	sp = copy_regs(e);
	if (!sp)
		return 0;
	fill_hdr(&e->hdr, HP_EV_RAWUSTACK, 0, ts);
	e->tid = tid;
	e->pid = pid;
	e->kstack_len = 0;
	e->ustack_len = 0;
	e->stack_flags = 0;
	e->place = place;
	len = copy_stack((__u8 *)e->frames, sp);
	e->stack_len = len;
	len += sizeof(*e);
	e->hdr.size = len;
	ring_output_max(e, len, HP_MAX_RAW_RECORD);
	return 0;
}

#endif /* HOSTPROF_UCOPY_BPF_H */
