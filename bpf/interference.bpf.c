// SPDX-License-Identifier: GPL-2.0-only
/*
 * Interference beyond the scheduler (--interference), each group attached only while it
 * is asked for and some process is watched. Collects:
 *  - irq: hard IRQs (irq_handler_entry/exit) and softirqs (softirq_entry/exit) of at
 *    least irq_min_ns on a CPU where a watched thread runs (its time is stolen) or waits
 *    preempted (its return is delayed), with the handler's name or the vector;
 *  - reclaim: direct and memcg reclaim and compaction inside a watched thread, with the
 *    allocation's order and gfp flags and the result;
 *  - fault-types: exceptions:page_fault_user (x86 only) splits a watched thread's faults
 *    into write, exec and protection faults; they go out with its fault counts
 *    (faults.bpf.h). The `faults` group has no program: sched.bpf.c and samples.bpf.c
 *    read the thread's own counters;
 *  - locks: kernel lock contention (contention_begin/end) of at least lock_min_ns inside
 *    a watched thread, with the lock's address (the mmap_lock of its own process
 *    marked), and its kernel stack when it lasted at least offcpu_min_ns.
 *
 * Filters: the irq programs run for every interrupt of the machine and return unless the
 * CPU's running watched thread (kept by sched.bpf.c) or a waiting one is set: two
 * array lookups. The others return after one watch_filter load for unwatched tasks.
 * Contention inside an interrupt is the interrupt's, not the thread's, and is skipped.
 *
 * Cost per event (bench/results/interference.md): softirq entry and exit ~150 and
 * ~360 ns, reclaim begin and end ~370 and ~630 ns, page_fault_user ~60 ns a fault (the
 * clock is read once every 256), contention begin ~330 ns and end ~1.4 us with its stack
 * walk. A wait in progress is kept in `waits` (4096 threads); one that cannot be is
 * counted (HP_STAT_WAIT_FULL).
 */
#include "hostprof.bpf.h"
#include "faults.bpf.h"
#include "stacks.bpf.h"

/* Hard and soft interrupts on a CPU where a watched thread runs (its time is stolen) or
 * waits preempted (its return is delayed). Hard IRQs do not nest; a hard IRQ may run
 * inside a softirq, hence a slot each. */
static __always_inline bool irq_context(struct irq_cpu *s, __u32 *tid, __u32 *pid, __u32 *flags)
{
	__u32 cpu = bpf_get_smp_processor_id();
	struct victim *v = bpf_map_lookup_elem(&victims, &cpu);
	__u32 waiting = v ? v->waiting : 0;

	/* run_tid stays set after its process stops being watched, until the next switch of
	 * a watched thread here: asked again */
	if (s->run_tid && is_watched(s->run_pid)) {
		*tid = s->run_tid;
		*pid = s->run_pid;
		*flags = HP_IRQ_RUNNING | (waiting ? HP_IRQ_WAITING : 0);
		return true;
	}
	/* so does a count left by a thread whose process stopped being watched as it waited */
	if (waiting && is_watched(v->pid)) {
		*tid = 0;
		*pid = v->pid;
		*flags = HP_IRQ_WAITING;
		return true;
	}
	return false;
}

static __always_inline struct irq_cpu *irq_cpu(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&irq_state, &zero);
}

static __always_inline void emit_irq(__u64 ts, __u16 kind, __u32 num, __u32 tid, __u32 pid, __u32 flags,
				     const char *name)
{
	__u64 now = bpf_ktime_get_boot_ns();
	struct hp_irq *e;
	void *ring;

	if (now - ts < irq_min_ns)
		return;
	e = ring_reserve(&ring, sizeof(*e), HP_EV_IRQ, ts);
	if (!e)
		return;
	e->dur_ns = now - ts;
	e->tid = tid;
	e->pid = pid;
	e->kind = kind;
	e->flags = flags;
	e->num = num;
	__builtin_memset(e->name, 0, sizeof(e->name));
	if (name)
		bpf_probe_read_kernel_str(e->name, sizeof(e->name), name);
	ring_submit(ring, e);
}

static __always_inline int on_irq_entry(void)
{
	struct irq_cpu *s = irq_cpu();
	__u32 tid, pid, flags;

	if (!s)
		return 0;
	if (!irq_context(s, &tid, &pid, &flags)) {
		s->hard_ts = 0; /* one left from a detach between an entry and its exit */
		return 0;
	}
	s->hard_ts = bpf_ktime_get_boot_ns();
	s->hard_tid = tid;
	s->hard_pid = pid;
	s->hard_flags = flags;
	return 0;
}

static __always_inline int on_irq_exit(int irq, struct irqaction *action)
{
	struct irq_cpu *s = irq_cpu();
	__u64 ts;

	if (!s || !s->hard_ts)
		return 0;
	ts = s->hard_ts;
	s->hard_ts = 0;
	emit_irq(ts, HP_IRQ_HARD, irq, s->hard_tid, s->hard_pid, s->hard_flags, BPF_CORE_READ(action, name));
	return 0;
}

static __always_inline int on_softirq_entry(void)
{
	struct irq_cpu *s = irq_cpu();
	__u32 tid, pid, flags;

	if (!s)
		return 0;
	if (!irq_context(s, &tid, &pid, &flags)) {
		s->soft_ts = 0;
		return 0;
	}
	s->soft_ts = bpf_ktime_get_boot_ns();
	s->soft_tid = tid;
	s->soft_pid = pid;
	s->soft_flags = flags;
	return 0;
}

static __always_inline int on_softirq_exit(unsigned int vec)
{
	struct irq_cpu *s = irq_cpu();
	__u64 ts;

	if (!s || !s->soft_ts)
		return 0;
	ts = s->soft_ts;
	s->soft_ts = 0;
	emit_irq(ts, HP_IRQ_SOFT, vec, s->soft_tid, s->soft_pid, s->soft_flags, NULL);
	return 0;
}

/* The wait state of the current thread, if it belongs to a watched process. */
static __always_inline struct wait *wait_get(__u32 *ret_tid, __u32 *ret_pid, bool create)
{
	__u64 cur = bpf_get_current_pid_tgid();
	__u32 tid = (__u32)cur, pid = cur >> 32;
	struct wait *w;

	if (!is_watched(pid))
		return NULL;
	*ret_tid = tid;
	*ret_pid = pid;
	w = bpf_map_lookup_elem(&waits, &tid);
	if (w || !create)
		return w;
	if (bpf_map_update_elem(&waits, &tid, &(struct wait){}, BPF_NOEXIST) && !bpf_map_lookup_elem(&waits, &tid)) {
		stat_inc(HP_STAT_WAIT_FULL);
		return NULL;
	}
	return bpf_map_lookup_elem(&waits, &tid);
}

/* A wait ended: forget the state once nothing is in progress. */
static __always_inline void wait_put(struct wait *w, __u32 tid)
{
	if (!w->reclaim_ts && !w->compact_ts && !w->lock_ts)
		bpf_map_delete_elem(&waits, &tid);
}

static __always_inline void emit_reclaim(__u64 ts, __u32 tid, __u32 pid, __u32 kind, __s32 order, __u32 gfp,
					 __s64 result)
{
	struct hp_reclaim *e;
	void *ring;

	e = ring_reserve(&ring, sizeof(*e), HP_EV_RECLAIM, ts);
	if (!e)
		return;
	e->dur_ns = bpf_ktime_get_boot_ns() - ts;
	e->tid = tid;
	e->pid = pid;
	e->kind = kind;
	e->order = order;
	e->gfp = gfp;
	e->pad = 0;
	e->result = result;
	ring_submit(ring, e);
}

static __always_inline int on_reclaim_begin(__u32 kind, int order, gfp_t gfp)
{
	__u32 tid, pid;
	struct wait *w = wait_get(&tid, &pid, true);

	if (!w)
		return 0;
	w->reclaim_ts = bpf_ktime_get_boot_ns();
	w->reclaim_kind = kind;
	w->reclaim_order = order;
	w->reclaim_gfp = gfp;
	return 0;
}

static __always_inline int on_reclaim_end(__u32 kind, unsigned long reclaimed)
{
	__u32 tid, pid;
	struct wait *w = wait_get(&tid, &pid, false);

	if (!w || !w->reclaim_ts || w->reclaim_kind != kind)
		return 0;
	emit_reclaim(w->reclaim_ts, tid, pid, kind, w->reclaim_order, w->reclaim_gfp, reclaimed);
	w->reclaim_ts = 0;
	wait_put(w, tid);
	return 0;
}

static __always_inline int on_compaction_begin(struct compact_control *cc)
{
	__u32 tid, pid;
	struct wait *w = wait_get(&tid, &pid, true);

	if (!w)
		return 0;
	w->compact_ts = bpf_ktime_get_boot_ns();
	w->compact_order = BPF_CORE_READ(cc, order);
	return 0;
}

static __always_inline int on_compaction_end(int status)
{
	__u32 tid, pid;
	struct wait *w = wait_get(&tid, &pid, false);

	if (!w || !w->compact_ts)
		return 0;
	emit_reclaim(w->compact_ts, tid, pid, HP_RECLAIM_COMPACT, w->compact_order, 0, status);
	w->compact_ts = 0;
	wait_put(w, tid);
	return 0;
}

/* User page faults of watched threads (x86: exceptions:page_fault_user). */
static __always_inline int on_page_fault(unsigned long error_code, bool btf)
{
	struct task *t;
	__u32 tid, pid;
	bool watched;
	__u64 now;

	t = watched_current(&pid, &tid, btf, &watched);
	if (!t)
		return 0;
	if (!t->flt_since)
		faults_base((struct task_struct *)bpf_get_current_task(), t, bpf_ktime_get_boot_ns(), false);
	t->flt_faults++;
	if (error_code & 0x1) /* X86_PF_PROT */
		t->flt_prot++;
	if (error_code & 0x2) /* X86_PF_WRITE */
		t->flt_write++;
	if (error_code & 0x10) /* X86_PF_INSTR */
		t->flt_exec++;
	/* A thread that faults on and on without blocking still reports every FLT_PERIOD_NS
	 * (and at its samples): the clock is read once every 256 faults, not at each. */
	if (t->flt_faults & 255)
		return 0;
	now = bpf_ktime_get_boot_ns();
	if (now - t->flt_since >= FLT_PERIOD_NS)
		faults_flush((struct task_struct *)bpf_get_current_task(), t, tid, pid, now, false, false);
	return 0;
}

/*
 * Kernel lock contention inside watched threads. One wait may report several begins
 * (a mutex: optimistic spin, then sleep) and nest other locks' waits (an rwsem's
 * wait_lock): the first begin of a lock opens the wait, its end closes it, and the
 * waits of other locks inside it are not separate records. Contention inside an
 * interrupt on the thread's CPU is the interrupt's, not the thread's: skipped while
 * the irq programs see one running here.
 */
static __always_inline bool in_irq_here(void)
{
	struct irq_cpu *s;

	if (!(intf_mask & HP_INTF_IRQ))
		return false;
	s = irq_cpu();
	return s && (s->hard_ts || s->soft_ts);
}

static __always_inline int on_contention_begin(void *lock, unsigned int flags)
{
	__u32 tid, pid;
	struct wait *w;

	if (!is_watched(bpf_get_current_pid_tgid() >> 32) || in_irq_here())
		return 0;
	w = wait_get(&tid, &pid, true);
	if (!w)
		return 0;
	if (w->lock_ts) {
		if (w->lock == (__u64)lock)
			w->lock_flags |= flags;
		return 0;
	}
	w->lock_ts = bpf_ktime_get_boot_ns();
	w->lock = (__u64)lock;
	w->lock_flags = flags;
	return 0;
}

static __always_inline int on_contention_end(void *ctx, void *lock, int ret)
{
	struct task_struct *task;
	struct hp_lock *e;
	struct scratch *s;
	__u32 tid, pid;
	struct wait *w;
	__u64 dur, mm;

	w = wait_get(&tid, &pid, false);
	if (!w || !w->lock_ts || w->lock != (__u64)lock)
		return 0;
	dur = bpf_ktime_get_boot_ns() - w->lock_ts;
	if (dur < lock_min_ns)
		goto done;
	e = scratch_get(&s);
	if (!e)
		goto done;
	fill_hdr(&e->hdr, HP_EV_LOCK, 0, w->lock_ts);
	e->dur_ns = dur;
	e->lock = w->lock;
	e->tid = tid;
	e->pid = pid;
	e->flags = w->lock_flags;
	task = (struct task_struct *)bpf_get_current_task();
	mm = (__u64)BPF_CORE_READ(task, mm);
	/* mmap_lock was mmap_sem before 5.8 (no contention tracepoints there, but a raw_tp
	 * program is loaded all the same: the guard keeps the relocation from failing) */
	if (bpf_core_field_exists(struct mm_struct, mmap_lock) && mm &&
	    e->lock == mm + bpf_core_field_offset(struct mm_struct, mmap_lock))
		e->flags |= HP_LOCK_MMAP;
	e->ret = ret;
	e->kstack_len = 0;
	e->pad16 = 0;
	e->stack_flags = 0;
	if (dur >= offcpu_min_ns) {
		long r = bpf_get_stack(ctx, e->frames, HP_MAX_STACK * sizeof(__u64), 0);

		e->kstack_len = stack_frames(r, &e->stack_flags, HP_STACK_KTRUNC, HP_STACK_KFAIL);
	}
	stack_record_output(s, &e->hdr, sizeof(*e), e->kstack_len);
done:
	w->lock_ts = 0;
	wait_put(w, tid);
	return 0;
}

/* The programs: tp_btf_ and raw_tp_ of each (HP_HOOK), attached by capture_set_interference. */
HP_HOOK(irq_handler_entry, on_irq_entry(), int irq, struct irqaction *action)
HP_HOOK(irq_handler_exit, on_irq_exit(irq, action), int irq, struct irqaction *action, int ret)
HP_HOOK(softirq_entry, on_softirq_entry(), unsigned int vec)
HP_HOOK(softirq_exit, on_softirq_exit(vec), unsigned int vec)
HP_HOOK(mm_vmscan_direct_reclaim_begin, on_reclaim_begin(HP_RECLAIM_DIRECT, order, gfp), int order, gfp_t gfp)
HP_HOOK(mm_vmscan_direct_reclaim_end, on_reclaim_end(HP_RECLAIM_DIRECT, reclaimed), unsigned long reclaimed)
HP_HOOK(mm_vmscan_memcg_reclaim_begin, on_reclaim_begin(HP_RECLAIM_MEMCG, order, gfp), int order, gfp_t gfp)
HP_HOOK(mm_vmscan_memcg_reclaim_end, on_reclaim_end(HP_RECLAIM_MEMCG, reclaimed), unsigned long reclaimed)
HP_HOOK(mm_compaction_begin, on_compaction_begin(cc), struct compact_control *cc, unsigned long zone_start,
	unsigned long zone_end, bool sync)
HP_HOOK(mm_compaction_end, on_compaction_end(status), struct compact_control *cc, unsigned long zone_start,
	unsigned long zone_end, bool sync, int status)
HP_HOOK(page_fault_user, on_page_fault(error_code, btf), unsigned long address, struct pt_regs *regs,
	unsigned long error_code)
HP_HOOK(contention_begin, on_contention_begin(lock, flags), void *lock, unsigned int flags)
HP_HOOK(contention_end, on_contention_end(ctx, lock, ret), void *lock, int ret)
