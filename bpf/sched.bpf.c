// SPDX-License-Identifier: GPL-2.0-only
/*
 * The scheduler's view of watched processes, attached while some process is watched or
 * --cpus is set (task_rename while there are --watch-thread globs); tp_btf, or raw_tp
 * where the kernel has no BTF for the tracepoint. Collects:
 *  - every context switch in which a watched task goes out or in, with the task on the
 *    other side (so the preemptor of a watched thread is named), and for the task going
 *    in, how long it waited on the runqueue since its wakeup or its preemption;
 *  - while a watched thread waits preempted on a CPU's runqueue, every switch on that
 *    CPU, for its process: the tasks that ran there while it waited are named. With the
 *    --cpus mask, every switch on those CPUs;
 *  - off-CPU intervals of at least offcpu_min_ns (blocked, not preempted), with state,
 *    waker and the kernel stack, read as the thread runs again (stacks.bpf.h; tp_btf
 *    only);
 *  - wakeups of watched tasks with the waker (the task running at sched_waking;
 *    sched_wakeup may run on the target CPU, where it is not the waker), migrations;
 *  - thread names (task_rename fires on prctl, pthread_setname_np and exec), forks,
 *    execs and exits. A rename that matches a --watch-thread glob makes its process
 *    watched (its record wakes the daemon, which attaches the other hooks); a fork of a
 *    watched process makes its child watched; the exit of its last thread unwatches it
 *    (its pid may be reused before the daemon looks);
 *  - syscalls = blocking: at a watched thread's switch-out that blocks, the syscall it
 *    is in (number, first arguments) from its saved user registers and its user stack
 *    (stacks.bpf.h); as it runs again, a syscall record of the time it was blocked; and
 *    its waits for a CPython GIL, from those blocks (gil.bpf.h).
 * The switch-outs and the exits of watched threads also send their page fault counts
 * (faults.bpf.h, --interference faults), and the switches keep the watched thread
 * running on each CPU for the irq programs (interference.bpf.c).
 *
 * Filters: while attached, sched_switch runs at every switch of the machine; for
 * unwatched tasks it costs two watch_filter loads, the CPU's `victims` slot, its
 * switched_in slot and the --cpus mask, and returns. The other hooks return after one watch_filter load.
 *
 * Cost per event (bpf_stats at the watched pipe benchmark in a quieter run than the one
 * in bench/results/hotpath.md, whose machine was shared; an empty program measures ~42
 * ns there): a recorded switch is two task-storage lookups
 * and one 88-byte reservation (~190 ns; with syscalls = blocking ~215 ns, the saved
 * registers read and the user stack reused); an off-CPU interval over the threshold adds
 * a kernel stack walk and a copy out of the scratch slot; a wakeup of a watched task
 * ~155 ns. Renames, forks, execs and exits are rare.
 */
#include "hostprof.bpf.h"
#include "faults.bpf.h"
#include "glob.bpf.h"
#include "stacks.bpf.h"
#define GIL_HOOKS
#include "gil.bpf.h"

/*
 * Per CPU: the thread whose switch-in there was recorded last, until the next switch on
 * that CPU, which must name it as prev. A kernel may not report every switch (the
 * Firecracker guests these tests run in hide, from perf as from BPF, every switch whose
 * prev is a thread of their pid 1; the switches into those threads are reported): the
 * next switch then names another thread, and the switch not reported is counted
 * (HP_STAT_SWITCH_UNREPORTED), so that a reader knows that thread's time on the CPU
 * ended unseen. The same switch hides the switch-in of the task after it: a watched
 * thread's is counted at its next switch-out, which finds its off_ts (cleared as it
 * switches in) still set, unless this slot counted that switch already. epoch: set
 * before the
 * hooks were last attached, a slot says nothing. A slot is 64 bytes: each CPU writes only
 * its own.
 */
struct cpu_switched_in {
	__u32 tid;
	__u32 epoch;
	__u8 pad[56];
};

static struct cpu_switched_in switched_in[HP_MAX_CPUS];

static __always_inline bool cpu_recorded(__u32 cpu)
{
	if (!cpus_any || cpu >= HP_MAX_CPUS)
		return false;
	return cpus_mask[(cpu / 64) & (HP_MAX_CPUS / 64 - 1)] & (1ULL << (cpu % 64));
}

#define TASK_REPORT 0x7f
#define TASK_IDLE_STATE 0x402 /* TASK_UNINTERRUPTIBLE | TASK_NOLOAD */

/* The state the sched_switch tracepoint reports for prev, as `perf sched` prints it. */
static __always_inline __u32 report_state(bool preempt, struct task_struct *prev, bool btf)
{
	__u32 state, report;

	if (preempt)
		return HP_STATE_PREEMPT;
	state = task_state(prev, btf);
	if (state == TASK_IDLE_STATE)
		return HP_STATE_IDLE;
	report = (state & TASK_REPORT) | TASK_READ(btf, prev, exit_state);
	return report ? 1u << highest_bit(report) : HP_STATE_RUNNING;
}

/* syscalls = blocking: next ran again after blocking in a syscall (blocked_switch_out). */
static __always_inline void emit_blocked_syscall(struct task *t, __u32 tid, __u32 pid, __u64 now)
{
	struct hp_syscall *e;
	void *ring;

	e = ring_reserve(&ring, sizeof(*e), HP_EV_SYSCALL, t->off_ts);
	if (!e)
		return;
	e->dur_ns = now - t->off_ts;
	e->tid = tid;
	e->pid = pid;
	e->nr = t->sys_nr;
	e->flags = HP_SYSCALL_BLOCKED | HP_SYSCALL_RET_UNKNOWN;
	e->ret = 0;
	e->args[0] = t->blk_args[0];
	e->args[1] = t->blk_args[1];
	e->args[2] = t->blk_args[2];
	ring_submit(ring, e);
}

static __always_inline int on_switch(void *ctx, bool preempt, struct task_struct *prev, struct task_struct *next,
				     bool btf)
{
	__u32 prev_pid = TASK_READ(btf, prev, tgid), prev_tid = TASK_READ(btf, prev, pid);
	__u32 next_pid = TASK_READ(btf, next, tgid), next_tid = TASK_READ(btf, next, pid);
	__u32 cpu = bpf_get_smp_processor_id(), victim_pid = 0;
	struct task *pt, *nt;
	bool prev_w, next_w;
	__u64 now, wait = 0;
	__u32 wait_kind = 0, state;
	struct cpu_switched_in *si = NULL;
	bool unreported = false, runnable;
	struct hp_switch *e;
	struct victim *v;
	__u16 flags = 0;
	void *ring;

	pt = watched_task(prev, prev_pid, prev_tid, btf, &prev_w);
	nt = watched_task(next, next_pid, next_tid, btf, &next_w);
	/*
	 * The hash fallback keeps an exited thread's state to its last switch-out (task
	 * storage goes with the task there; the entry goes then, below): the last thread's
	 * process is no longer in watched, its entry says it was.
	 */
	if (!(use_task_storage && btf) && !prev_w && !preempt && TASK_READ(btf, prev, exit_state)) {
		pt = bpf_map_lookup_elem(&tasks, &prev_tid);
		if (pt && (pt->flags & TASK_EXITED)) {
			prev_w = true;
		} else {
			/* its process was not watched by its exit (another thread's exit took
			 * it out first, or an unwatch): its entries go all the same */
			pt = NULL;
			task_hash_drop(prev_tid);
		}
	}
	if (prev_w)
		flags |= HP_SW_PREV_WATCHED;
	if (next_w)
		flags |= HP_SW_NEXT_WATCHED;
	v = bpf_map_lookup_elem(&victims, &cpu);
	if (cpu < HP_MAX_CPUS) {
		si = &switched_in[cpu & (HP_MAX_CPUS - 1)];
		if (si->tid) {
			if (si->tid != prev_tid && si->epoch == epoch) {
				stat_inc(HP_STAT_SWITCH_UNREPORTED);
				unreported = true;
			}
			si->tid = 0;
		}
	}
	if (!flags) {
		/* a count left by a thread whose process stopped being watched while it
		 * waited records nothing */
		if (v && v->waiting && is_watched(v->pid)) {
			flags |= HP_SW_VICTIM_CPU;
			victim_pid = v->pid;
		}
		if (cpu_recorded(cpu))
			flags |= HP_SW_HOST_CPU;
		if (!flags)
			return 0;
	}

	if (si && next_tid) {
		si->tid = next_tid;
		si->epoch = epoch;
	}
	now = bpf_ktime_get_boot_ns();
	state = report_state(preempt, prev, btf);
	/* only the irq programs read it: not kept while they are not attached (it is right
	 * again from the next watched switch on this CPU once they are) */
	if ((flags & (HP_SW_PREV_WATCHED | HP_SW_NEXT_WATCHED)) && (intf_mask & HP_INTF_IRQ)) {
		__u32 zero = 0;
		struct irq_cpu *ic = bpf_map_lookup_elem(&irq_state, &zero);

		if (ic) {
			ic->run_tid = flags & HP_SW_NEXT_WATCHED ? next_tid : 0;
			ic->run_pid = flags & HP_SW_NEXT_WATCHED ? next_pid : 0;
		}
	}
	if (pt) {
		/* its last switch-in was not reported (switched_in says why) */
		if (pt->off_ts && !unreported)
			stat_inc(HP_STAT_SWITCH_UNREPORTED);
		if (intf_mask & HP_INTF_FAULTS)
			faults_flush(prev, pt, prev_tid, prev_pid, now, !HP_STATE_RUNNABLE(state), btf);
		pt->off_ts = now;
		pt->off_state = state;
		pt->off_cpu = cpu;
		/* wake_ts is not cleared here but at the switch-in that uses it: a wakeup on
		 * another CPU may race this switch-out, and must not be lost */
		runnable = HP_STATE_RUNNABLE(state);
		if (runnable) {
			pt->flags |= TASK_OFF_RUNNABLE;
			/* it waits on this CPU's runqueue: record who runs here meanwhile */
			if (v && !(pt->flags & TASK_VICTIM)) {
				__sync_fetch_and_add(&v->waiting, 1);
				v->pid = prev_pid;
				pt->flags |= TASK_VICTIM;
			}
		} else {
			pt->flags &= ~TASK_OFF_RUNNABLE;
			if (blocking_ok && syscall_mode == HP_SYSCALLS_BLOCKING)
				blocked_switch_out(ctx, prev, pt, prev_pid, prev_tid, now, btf);
		}
		/* one call site (it is inlined, and this hook is near 6.1's verifier limit) */
		if (syscall_mode == HP_SYSCALLS_BLOCKING && (runnable || blocking_ok)) {
			gil_block_out(pt, prev_pid, prev_tid, !runnable, now);
			if (!runnable)
				blocked_python(pt, prev_pid, prev_tid, now);
		}
		if (!(use_task_storage && btf))
			task_hash_out(prev_tid, state);
	}
	if (nt) {
		/* it waited on the CPU it was switched out on (if it migrated meanwhile, that
		 * CPU's count is given back here all the same) */
		victim_done(nt);
		/* its fault counts start before its first fault: counters only it changes */
		if (!nt->flt_since && (intf_mask & HP_INTF_FAULTS))
			faults_base(next, nt, now, btf);
		if (nt->off_ts && (nt->flags & TASK_OFF_RUNNABLE)) {
			wait = now - nt->off_ts;
			wait_kind = HP_WAIT_PREEMPT;
		} else {
			/* a new thread has no off_ts: its wait is from sched_wakeup_new */
			if (nt->wake_ts && nt->wake_ts <= now) {
				wait = now - nt->wake_ts;
				wait_kind = HP_WAIT_WAKEUP;
			}
			if (nt->off_ts && (nt->flags & TASK_BLK_SYSCALL) && syscall_mode == HP_SYSCALLS_BLOCKING &&
			    now - nt->off_ts >= syscall_min_ns)
				emit_blocked_syscall(nt, next_tid, next_pid, now);
			if (syscall_mode == HP_SYSCALLS_BLOCKING)
				gil_block_in(nt, next_tid, now);
			if (nt->off_ts && now - nt->off_ts >= offcpu_min_ns)
				emit_offcpu(next, nt, next_tid, next_pid, now, btf);
		}
		nt->off_ts = 0;
		nt->wake_ts = 0;
		nt->waker_tid = 0;
		nt->waker_pid = 0;
		nt->flags &= ~TASK_BLK_SYSCALL;
	}

	e = ring_reserve(&ring, sizeof(*e), HP_EV_SWITCH, now);
	if (!e)
		return 0;
	e->prev_tid = prev_tid;
	e->prev_pid = prev_pid;
	e->next_tid = next_tid;
	e->next_pid = next_pid;
	e->next_wait_ns = wait;
	e->victim_pid = victim_pid;
	e->prev_prio = TASK_READ(btf, prev, prio);
	e->next_prio = TASK_READ(btf, next, prio);
	e->prev_state = state;
	e->flags = flags;
	e->prev_policy = TASK_READ(btf, prev, policy);
	e->next_policy = TASK_READ(btf, next, policy);
	e->next_wait_kind = wait_kind;
	e->pad = 0;
	if (btf) {
		__builtin_memcpy(e->prev_comm, prev->comm, HP_COMM_LEN);
		__builtin_memcpy(e->next_comm, next->comm, HP_COMM_LEN);
	} else {
		BPF_CORE_READ_STR_INTO(&e->prev_comm, prev, comm);
		BPF_CORE_READ_STR_INTO(&e->next_comm, next, comm);
	}
	ring_submit(ring, e);
	return 0;
}

/* The waker is the task running now. */
static __always_inline int on_waking(struct task_struct *p, __u32 wake_flags, bool btf)
{
	__u32 pid = TASK_READ(btf, p, tgid), tid = TASK_READ(btf, p, pid);
	struct task_struct *waker = NULL;
	__u64 cur, now;
	struct hp_wake *e;
	struct task *t;
	bool watched;
	void *ring;

	t = watched_task(p, pid, tid, btf, &watched);
	if (!watched)
		return 0;
	/* the waker's ids and name from its task_struct where the programs have it (the
	 * helpers that return them cost more than the loads) */
	if (use_task_storage && btf) {
		waker = bpf_get_current_task_btf();
		cur = (__u64)waker->tgid << 32 | (__u32)waker->pid;
	} else {
		cur = bpf_get_current_pid_tgid();
	}
	now = bpf_ktime_get_boot_ns();
	/* the thread's state is kept even when the ring is full: it loses the record, not
	 * the wait it starts */
	if (t) {
		t->wake_ts = now;
		t->waker_tid = (__u32)cur;
		t->waker_pid = cur >> 32;
	}
	e = ring_reserve(&ring, sizeof(*e), HP_EV_WAKE, now);
	if (!e) {
		if (t && waker)
			__builtin_memcpy(t->waker_comm, waker->comm, HP_COMM_LEN);
		else if (t)
			bpf_get_current_comm(t->waker_comm, sizeof(t->waker_comm));
		return 0;
	}
	e->tid = tid;
	e->pid = pid;
	e->target_cpu = TASK_READ(btf, p, wake_cpu);
	e->flags = wake_flags;
	e->waker_tid = (__u32)cur;
	e->waker_pid = cur >> 32;
	if (waker)
		__builtin_memcpy(e->waker_comm, waker->comm, HP_COMM_LEN);
	else
		bpf_get_current_comm(e->waker_comm, sizeof(e->waker_comm));
	if (t)
		__builtin_memcpy(t->waker_comm, e->waker_comm, HP_COMM_LEN);
	ring_submit(ring, e);
	return 0;
}

static __always_inline int on_migrate(struct task_struct *p, __u32 dest_cpu)
{
	__u32 pid = BPF_CORE_READ(p, tgid);
	struct hp_migrate *e;
	void *ring;

	if (!is_watched(pid))
		return 0;
	e = ring_reserve(&ring, sizeof(*e), HP_EV_MIGRATE, bpf_ktime_get_boot_ns());
	if (!e)
		return 0;
	e->tid = BPF_CORE_READ(p, pid);
	e->pid = pid;
	e->from_cpu = task_cpu_of(p);
	e->to_cpu = dest_cpu;
	ring_submit(ring, e);
	return 0;
}

static __always_inline void emit_comm(__u16 type, __u32 tid, __u32 pid, __u32 glob, const char *comm)
{
	struct hp_comm *e;
	void *ring;

	e = ring_reserve(&ring, sizeof(*e), type, bpf_ktime_get_boot_ns());
	if (!e)
		return;
	e->tid = tid;
	e->pid = pid;
	e->glob = glob;
	e->pad = 0;
	__builtin_memcpy(e->comm, comm, HP_COMM_LEN);
	/* the daemon attaches the sched hooks for a process the kernel starts watching */
	if (type == HP_EV_WATCH)
		ring_submit_now(e);
	else
		ring_submit(ring, e);
}

static __always_inline int on_rename(struct task_struct *task, const char *newcomm)
{
	__u32 pid = BPF_CORE_READ(task, tgid), tid = BPF_CORE_READ(task, pid);
	char comm[HP_COMM_LEN] = {};
	__u32 n = nr_globs;

	bpf_probe_read_kernel_str(comm, sizeof(comm), newcomm);
	if (is_watched(pid)) {
		emit_comm(HP_EV_COMM, tid, pid, 0, comm);
		return 0;
	}
	for (__u32 i = 0; i < HP_MAX_GLOBS && i < n; i++) {
		struct hp_watch w = { .reason = HP_WATCH_GLOB };

		if (!glob_match(&globs[i], comm))
			continue;
		if (watch_add(pid, &w) && !is_watched(pid)) {
			stat_inc(HP_STAT_MAP_FULL);
			return 0;
		}
		emit_comm(HP_EV_WATCH, tid, pid, i, comm);
		return 0;
	}
	return 0;
}

static __always_inline int on_fork(struct task_struct *parent, struct task_struct *child)
{
	__u32 ppid = BPF_CORE_READ(parent, tgid);
	__u32 cpid = BPF_CORE_READ(child, tgid);
	struct hp_fork *e;
	void *ring;

	if (!is_watched(ppid))
		return 0;
	if (cpid != ppid) {
		struct hp_watch w = { .reason = HP_WATCH_CHILD, .parent = ppid };

		if (watch_add(cpid, &w) && !is_watched(cpid))
			stat_inc(HP_STAT_MAP_FULL);
	}
	e = ring_reserve(&ring, sizeof(*e), HP_EV_FORK, bpf_ktime_get_boot_ns());
	if (!e)
		return 0;
	e->parent_tid = BPF_CORE_READ(parent, pid);
	e->parent_pid = ppid;
	e->child_tid = BPF_CORE_READ(child, pid);
	e->child_pid = cpid;
	BPF_CORE_READ_STR_INTO(&e->comm, child, comm);
	ring_submit(ring, e);
	return 0;
}

static __always_inline int on_exec(struct task_struct *p, __u32 old_tid)
{
	__u32 pid = BPF_CORE_READ(p, tgid);
	struct hp_exec *e;
	void *ring;

	if (!is_watched(pid))
		return 0;
	e = ring_reserve(&ring, sizeof(*e), HP_EV_EXEC, bpf_ktime_get_boot_ns());
	if (!e)
		return 0;
	e->tid = BPF_CORE_READ(p, pid);
	e->pid = pid;
	e->old_tid = old_tid;
	e->pad = 0;
	BPF_CORE_READ_STR_INTO(&e->comm, p, comm);
	ring_submit(ring, e);
	return 0;
}

static __always_inline int on_exit(struct task_struct *task, bool btf)
{
	__u32 pid = TASK_READ(btf, task, tgid), tid = TASK_READ(btf, task, pid);
	struct hp_exit *e;
	struct task *t;
	bool group_dead;
	void *ring;
	__u64 now;

	if (!is_watched(pid))
		return 0;
	t = task_lookup(task, tid, btf);
	now = bpf_ktime_get_boot_ns();
	if (t) {
		victim_done(t);
		if (intf_mask & HP_INTF_FAULTS)
			faults_flush(task, t, tid, pid, now, true, false);
	}
	/* task storage goes with the task; the hash fallback's entries at its last switch-out */
	if (t && !(use_task_storage && btf))
		t->flags |= TASK_EXITED;
	bpf_map_delete_elem(&waits, &tid);
	/* the last thread of the process: its pid may name another process before the daemon looks */
	group_dead = !BPF_CORE_READ(task, signal, live.counter);
	if (group_dead)
		bpf_map_delete_elem(&watched, &pid);
	e = ring_reserve(&ring, sizeof(*e), HP_EV_EXIT, now);
	if (!e)
		return 0;
	e->tid = tid;
	e->pid = pid;
	e->exit_code = BPF_CORE_READ(task, exit_code);
	e->flags = group_dead ? HP_EXIT_GROUP : 0;
	ring_submit(ring, e);
	return 0;
}

/* The programs: tp_btf_<tracepoint> and raw_tp_<tracepoint> of each (HP_HOOK), always attached. */
HP_HOOK(sched_switch, on_switch(ctx, preempt, prev, next, btf), bool preempt, struct task_struct *prev,
	struct task_struct *next)
HP_HOOK(sched_waking, on_waking(p, 0, btf), struct task_struct *p)
HP_HOOK(sched_wakeup_new, on_waking(p, HP_WAKE_NEW, btf), struct task_struct *p)
HP_HOOK(sched_migrate_task, on_migrate(p, dest_cpu), struct task_struct *p, int dest_cpu)
HP_HOOK(task_rename, on_rename(task, comm), struct task_struct *task, const char *comm)
HP_HOOK(sched_process_fork, on_fork(parent, child), struct task_struct *parent, struct task_struct *child)
HP_HOOK(sched_process_exec, on_exec(p, old_pid), struct task_struct *p, pid_t old_pid)
HP_HOOK(sched_process_exit, on_exit(task, btf), struct task_struct *task)
