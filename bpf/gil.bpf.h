/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * BPF-only: a watched thread's waits for a CPython GIL, from its futex calls. The daemon
 * puts each CPython process's GIL in gil_procs (key: tgid; struct hp_gil_proc); a futex
 * wait (FUTEX_WAIT, FUTEX_WAIT_BITSET) of one of its threads on a word inside the GIL's
 * struct is a GIL wait: glibc's pthread_cond_t and pthread_mutex_t keep their futex words
 * within them, and CPython's take_gil waits on the GIL's condition (and its mutex), a
 * thread that dropped it on its switch condition until another took it.
 *
 * One take of the GIL is several waits: CPython's condition wait times out every switch
 * interval (5 ms by default), asks the holder to drop the GIL, and waits again. So a
 * thread's consecutive GIL waits are merged into one (gil_tasks keeps the one going, by
 * tid), which ends when
 *   - a wait on the GIL's condition is woken (returns 0): the holder dropped it to it;
 *   - the thread makes any other syscall, or a GIL wait begins more than GIL_GAP_NS after
 *     the last one ended (it took the GIL between them without a futex call).
 * It ends at its last wait's end. Its holder is last_holder read as that wait ended
 * (CPython sets last_holder when a thread takes the GIL, so at a waiter's wakeup it still
 * names the thread that dropped it), and as the first began; both read with
 * bpf_probe_read_user in the waiter's own address space (a page not present reads as
 * not known, HP_GIL_HOLDER_UNREAD). A read that names the waiter itself is stale (its
 * own drop_gil set it, and no taker yet) and keeps the holder read before.
 *
 * Every take that waited goes into the thread's syscall histogram of HP_HIST_NR_GIL
 * (count, time, log2 buckets); one of at least gil_min_ns is a record (struct hp_gil).
 *
 * Cost: a watched thread's futex call pays one gil_procs lookup (failed for a process that
 * is not CPython), a CPython thread's futex call a gil_tasks lookup too; other calls pay a
 * flag test, and the lookups only while a take is going on (TASK_GIL_TAKE: the next call
 * ends it), and a GIL wait's end two reads of user memory (the holder).
 */
#ifndef HOSTPROF_GIL_BPF_H
#define HOSTPROF_GIL_BPF_H

#include "hist.bpf.h"
#include "hostprof.bpf.h"

#if defined(__TARGET_ARCH_x86)
#define NR_FUTEX 202
#elif defined(__TARGET_ARCH_arm64)
#define NR_FUTEX 98
#endif

#define GIL_FUTEX_WAIT 0
#define GIL_FUTEX_WAIT_BITSET 9
#define GIL_FUTEX_CMD_MASK 0x7f /* without FUTEX_PRIVATE_FLAG (128), FUTEX_CLOCK_REALTIME (256) */
#define GIL_GAP_NS (2 * 1000 * 1000ULL)

extern __u64 gil_min_ns;

HP_MAP(gil_procs, BPF_MAP_TYPE_HASH, HP_MAX_WATCHED, __u32, struct hp_gil_proc);

/* A take of the GIL going on (key: tid). */
struct gil_task {
	__u64 start;      /* the first wait began */
	__u64 enter_ts;   /* the current wait began (0: not in one) */
	__u64 last_exit;  /* the last wait ended */
	__u64 blocked_ns;
	__u64 holder_ts;
	__u64 uaddr;      /* the current wait's futex word */
	__u32 pid;
	__u32 first_holder;
	__u32 holder;
	__u32 waits;
	__u32 flags;
	__u32 pad;
	__u64 switch_no;  /* blocking: the GIL's switch_number at the last block (0: not read) */
};

HP_MAP(gil_tasks, BPF_MAP_TYPE_LRU_HASH, HP_MAX_TASKS, __u32, struct gil_task);
HP_MAP(gil_tzero, BPF_MAP_TYPE_ARRAY, 1, __u32, struct gil_task); /* a new slot's value: all zero */

/* The hooks: for syscalls.bpf.c and sched.bpf.c (hostprof.bpf.c, which defines the maps,
 * includes them without GIL_HOOKS). */
#ifdef GIL_HOOKS

static __always_inline bool gil_futex_waits(__u64 op)
{
	__u64 cmd = op & GIL_FUTEX_CMD_MASK;

	return cmd == GIL_FUTEX_WAIT || cmd == GIL_FUTEX_WAIT_BITSET;
}

/* last_holder's native tid, and its thread state; 0 when not readable. */
static __always_inline __u32 gil_holder_tid(const struct hp_gil_proc *g, __u64 *ret_ts)
{
	__u64 ts = 0, pt = 0;
	__u32 tid = 0;

	*ret_ts = 0;
	if (bpf_probe_read_user(&ts, sizeof(ts), (void *)g->holder) || !ts || (ts & 7))
		return 0;
	*ret_ts = ts;
	if (g->ts_native_tid >= 0) {
		if (bpf_probe_read_user(&tid, sizeof(tid), (void *)(ts + g->ts_native_tid)))
			return 0;
		return tid;
	}
	if (g->pthread_tid < 0 || bpf_probe_read_user(&pt, sizeof(pt), (void *)(ts + g->ts_thread_id)) || !pt)
		return 0;
	if (bpf_probe_read_user(&tid, sizeof(tid), (void *)(pt + g->pthread_tid)))
		return 0;
	return tid;
}

/* Ends the take going on: into the histogram, and a record when long enough. */
static __always_inline void gil_flush(struct task *t, __u32 tid, struct gil_task *w)
{
	/* a take whose end was not seen (a switch-in or an exit missed) is no wait */
	__u64 dur = w->last_exit > w->start ? w->last_exit - w->start : 0;
	struct hp_gil *e;
	void *ring;

	if (dur)
		hist_add(t, w->pid, tid, HP_HIST_NR_GIL, dur);
	if (dur && dur >= gil_min_ns) {
		e = ring_reserve(&ring, sizeof(*e), HP_EV_GIL, w->start);
		if (e) {
			e->dur_ns = dur;
			e->blocked_ns = w->blocked_ns;
			e->holder_ts = w->holder_ts;
			e->tid = tid;
			e->pid = w->pid;
			e->holder_tid = w->holder;
			e->first_holder_tid = w->first_holder;
			e->waits = w->waits;
			e->flags = w->flags;
			ring_submit(ring, e);
		}
	}
	w->start = 0;
	w->waits = 0;
	t->flags &= ~TASK_GIL_TAKE;
}

/* At a syscall's entry of a watched thread of pid: other calls than futex return at once
 * unless a take of the GIL is going on. */
static __always_inline void gil_sys_enter(struct task *t, __u32 pid, __u32 tid, long nr, struct pt_regs *regs,
					  __u64 now)
{
	const struct hp_gil_proc *g;
	struct gil_task *w, fresh = {};
	__u64 uaddr = 0, op, ts;
	bool gil;

	if (nr != NR_FUTEX && !(t->flags & TASK_GIL_TAKE))
		return;
	g = bpf_map_lookup_elem(&gil_procs, &pid);
	if (!g)
		return;
	w = (t->flags & TASK_GIL_TAKE) || nr == NR_FUTEX ? bpf_map_lookup_elem(&gil_tasks, &tid) : NULL;
	gil = false;
	if (nr == NR_FUTEX) {
		uaddr = PT_REGS_PARM1_CORE_SYSCALL(regs);
		op = PT_REGS_PARM2_CORE_SYSCALL(regs);
		gil = uaddr >= g->start && uaddr < g->end && gil_futex_waits(op);
	}
	if (w && w->start && (!gil || now - w->last_exit > GIL_GAP_NS))
		gil_flush(t, tid, w);
	if (!gil)
		return;
	if (!w) {
		fresh.pid = pid;
		if (bpf_map_update_elem(&gil_tasks, &tid, &fresh, BPF_NOEXIST) && !bpf_map_lookup_elem(&gil_tasks, &tid)) {
			stat_inc(HP_STAT_WAIT_FULL);
			return;
		}
		w = bpf_map_lookup_elem(&gil_tasks, &tid);
		if (!w)
			return;
	}
	if (!w->start) {
		t->flags |= TASK_GIL_TAKE;
		w->start = now;
		w->blocked_ns = 0;
		w->pid = pid;
		w->flags = 0;
		w->holder = 0;
		w->holder_ts = 0;
		w->first_holder = gil_holder_tid(g, &ts);
		if (w->first_holder == tid)
			w->first_holder = 0;
		if (!w->first_holder)
			w->flags |= HP_GIL_HOLDER_UNREAD;
	}
	w->enter_ts = now;
	w->uaddr = uaddr;
}

/* At a syscall's exit (nr: what it entered with). */
static __always_inline void gil_sys_exit(struct task *t, __u32 pid, __u32 tid, long nr, long ret, __u64 now)
{
	const struct hp_gil_proc *g;
	struct gil_task *w;
	__u64 hts;
	__u32 h;
	bool cond;

	if (nr != NR_FUTEX || !(t->flags & TASK_GIL_TAKE))
		return;
	g = bpf_map_lookup_elem(&gil_procs, &pid);
	if (!g)
		return;
	w = bpf_map_lookup_elem(&gil_tasks, &tid);
	if (!w || !w->start || !w->enter_ts)
		return;
	w->blocked_ns += now - w->enter_ts;
	w->last_exit = now;
	w->enter_ts = 0;
	w->waits++;
	h = gil_holder_tid(g, &hts);
	if (h && h != tid) {
		w->holder = h;
		w->holder_ts = hts;
	}
	if (w->holder)
		w->flags &= ~HP_GIL_HOLDER_UNREAD;
	else
		w->flags |= HP_GIL_HOLDER_UNREAD;
	cond = (w->uaddr >= g->cond_start && w->uaddr < g->cond_end) ||
	       (w->uaddr >= g->switch_start && w->uaddr < g->switch_end);
	if (cond && ret == 0) {
		w->flags |= HP_GIL_WOKEN;
		gil_flush(t, tid, w);
	}
}

/*
 * syscalls = blocking: no syscall hooks; the scheduler's hooks see the futex calls that
 * block (blocked_switch_out: the number and arguments from the saved user registers).
 * A GIL wait is then its blocks: one begins at the switch-out (the holder read there, in
 * the waiter's own address space: at the switch-in the current task is another one), ends
 * at the switch-in. A take ends at the thread's next block on something else, or its next
 * switch-out (any) more than GIL_GAP_NS after its last GIL block ended, or a GIL block
 * after the GIL changed hands (its switch_number) or with another holder: without the
 * syscalls that do not block, two takes less than GIL_GAP_NS apart with the GIL held by
 * one thread throughout are one.
 */
/* A global function, verified on its own (inlined, the switch hook's paths multiply its
 * own past 6.1's verifier limit of a million instructions); weak: sched.bpf.c and
 * syscalls.bpf.c both have it. t is memory to the verifier, maybe NULL. 0 always. */
__attribute__((noinline, weak)) int gil_block_out(struct task *t, __u32 pid, __u32 tid, __u32 blocked, __u64 now)
{
	const struct hp_gil_proc *g;
	struct gil_task *w;
	__u64 uaddr, hts = 0, sn = 0;
	__u32 h = 0;
	bool gil, cut = false;

	if (!t)
		return 0;
	uaddr = t->blk_args[0];
	gil = blocked && (t->flags & TASK_BLK_SYSCALL) && t->sys_nr == NR_FUTEX && gil_futex_waits(t->blk_args[1]);
	if (!gil && !(t->flags & TASK_GIL_TAKE))
		return 0;
	g = bpf_map_lookup_elem(&gil_procs, &pid);
	if (!g)
		return 0;
	gil = gil && uaddr >= g->start && uaddr < g->end;
	/*
	 * The holder this block waits for. last_holder names the thread itself where it
	 * waits on the switch condition (it dropped the GIL, CPython's drop_gil set it, and
	 * nobody took it yet) or on the GIL's mutex before a taker set it: then the holder
	 * stays the one known. Two blocks less than GIL_GAP_NS apart are one take unless the
	 * GIL changed hands between them (its switch_number moved: this thread took it and
	 * lost it again, or it went to another holder) or the holder they wait for changed.
	 */
	if (gil) {
		h = gil_holder_tid(g, &hts);
		if (h == tid)
			h = 0;
		if (g->switch_number && bpf_probe_read_user(&sn, sizeof(sn), (void *)g->switch_number))
			sn = 0;
	}
	w = bpf_map_lookup_elem(&gil_tasks, &tid);
	if (w && w->start && (t->flags & TASK_GIL_TAKE)) {
		if (now - w->last_exit > GIL_GAP_NS)
			cut = true;
		else if (!gil)
			cut = blocked;
		else
			cut = (h && w->holder && w->holder != h) || (sn && w->switch_no && sn != w->switch_no);
	}
	if (cut)
		gil_flush(t, tid, w);
	if (!gil)
		return 0;
	if (!w) {
		/* a new slot's value from gil_tzero, not the stack (the switch hook's frame and
		 * this one together stay within 512 bytes) */
		__u32 zero = 0;
		const struct gil_task *z = bpf_map_lookup_elem(&gil_tzero, &zero);

		if (!z)
			return 0;
		if (bpf_map_update_elem(&gil_tasks, &tid, z, BPF_NOEXIST) && !bpf_map_lookup_elem(&gil_tasks, &tid)) {
			stat_inc(HP_STAT_WAIT_FULL);
			return 0;
		}
		w = bpf_map_lookup_elem(&gil_tasks, &tid);
		if (!w)
			return 0;
	}
	w->switch_no = sn;
	if (!w->start || !(t->flags & TASK_GIL_TAKE)) {
		t->flags |= TASK_GIL_TAKE;
		w->start = now;
		w->blocked_ns = 0;
		w->pid = pid;
		w->flags = 0;
		w->waits = 0;
		w->holder = 0;
		w->holder_ts = 0;
		w->first_holder = h;
	}
	if (h) {
		w->holder = h;
		w->holder_ts = hts;
	}
	if (w->holder)
		w->flags &= ~HP_GIL_HOLDER_UNREAD;
	else
		w->flags |= HP_GIL_HOLDER_UNREAD;
	w->enter_ts = now;
	w->uaddr = uaddr;
	return 0;
}

/* syscalls = blocking: the thread runs again (its switch-in). */
static __always_inline void gil_block_in(struct task *t, __u32 tid, __u64 now)
{
	struct gil_task *w;

	if (!(t->flags & TASK_GIL_TAKE))
		return;
	w = bpf_map_lookup_elem(&gil_tasks, &tid);
	if (!w || !w->start || !w->enter_ts)
		return;
	w->blocked_ns += now - w->enter_ts;
	w->last_exit = now;
	w->enter_ts = 0;
	w->waits++;
}

#endif /* GIL_HOOKS */

#endif
