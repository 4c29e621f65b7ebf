// SPDX-License-Identifier: GPL-2.0-only
/*
 * Syscalls of watched processes: sys_enter/sys_exit, attached only while some process
 * is watched, since they put every task of the machine on the slow syscall path.
 * Collects:
 *  - every call of a watched thread, into its per-thread, per-number log2 histogram of
 *    durations (`syscall_hist`, which the daemon reads at a snapshot);
 *  - a call that took at least syscall_min_ns as a record, with its first three
 *    arguments and its return value, and every mmap/munmap/mprotect/execve(at) whatever
 *    it took (the daemon reads the process's mappings again after those);
 *  - at the exit of a syscall inside which an off-CPU interval ended, the user stack of
 *    that interval (stacks.bpf.h: the user registers are intact there).
 *
 * Filters: for tasks of unwatched processes both return after one watch_filter load
 * (~32 ns each, bench/results/latest.md).
 *
 * Cost per call of a watched thread: a task-map lookup at entry (~75 ns), a histogram
 * update at exit (~100 ns), a 72-byte reservation when it is recorded, and a user stack
 * walk when one is pending.
 */
#include "hostprof.bpf.h"
#include "stacks.bpf.h"

/* Syscall numbers always recorded, for symbolization: the running arch's. */
#if defined(__TARGET_ARCH_x86)
#define NR_MMAP 9
#define NR_MPROTECT 10
#define NR_MUNMAP 11
#define NR_EXECVE 59
#define NR_EXECVEAT 322
#elif defined(__TARGET_ARCH_arm64)
#define NR_MMAP 222
#define NR_MPROTECT 226
#define NR_MUNMAP 215
#define NR_EXECVE 221
#define NR_EXECVEAT 281
#else
#error "unsupported architecture"
#endif

static __always_inline int on_sys_enter(struct pt_regs *regs, long id)
{
	__u64 cur = bpf_get_current_pid_tgid();
	struct task *t;

	if (!is_watched(cur >> 32))
		return 0;
	t = task_get((__u32)cur, true);
	if (!t)
		return 0;
	t->sys_ts = bpf_ktime_get_boot_ns();
	t->sys_nr = id;
	t->flags |= TASK_IN_SYSCALL;
	return 0;
}

static __always_inline __u32 hist_bucket(__u64 ns)
{
	__u64 us = ns / 1000;
	__u32 b;

	if (us == 0)
		return 0;
	b = us >> 32 ? 31 : highest_bit(us);
	return b < HP_HIST_BUCKETS ? b : HP_HIST_BUCKETS - 1;
}

static __always_inline void hist_add(__u32 pid, __u32 tid, __u32 nr, __u64 dur)
{
	struct hp_hist_key key = { .pid = pid, .tid = tid, .nr = nr };
	struct hp_hist *h = bpf_map_lookup_elem(&syscall_hist, &key);
	__u32 b;

	if (!h) {
		struct hp_hist zero = {};

		if (bpf_map_update_elem(&syscall_hist, &key, &zero, BPF_NOEXIST) &&
		    !bpf_map_lookup_elem(&syscall_hist, &key)) {
			stat_inc(HP_STAT_HIST_FULL);
			return;
		}
		h = bpf_map_lookup_elem(&syscall_hist, &key);
		if (!h)
			return;
	}
	/* only this thread updates its own key: no atomics needed */
	h->count++;
	h->total_ns += dur;
	if (dur > h->max_ns)
		h->max_ns = dur;
	b = hist_bucket(dur);
	if (b < HP_HIST_BUCKETS)
		h->buckets[b]++;
}

static __always_inline bool always_recorded(__u32 nr)
{
	return nr == NR_MMAP || nr == NR_MUNMAP || nr == NR_MPROTECT || nr == NR_EXECVE || nr == NR_EXECVEAT;
}

static __always_inline int on_sys_exit(void *ctx, struct pt_regs *regs, long ret)
{
	__u64 cur = bpf_get_current_pid_tgid(), now, dur;
	__u32 pid = cur >> 32, tid = (__u32)cur;
	struct hp_syscall *e;
	struct task *t;
	void *ring;

	if (!is_watched(pid))
		return 0;
	t = task_get(tid, false);
	if (!t || !(t->flags & TASK_IN_SYSCALL))
		return 0;
	t->flags &= ~TASK_IN_SYSCALL;
	if (t->flags & TASK_USTACK_PENDING) {
		t->flags &= ~TASK_USTACK_PENDING;
		emit_ustack(ctx, t, tid, pid);
	}
	now = bpf_ktime_get_boot_ns();
	dur = now - t->sys_ts;
	hist_add(pid, tid, t->sys_nr, dur);
	if (dur < syscall_min_ns && !always_recorded(t->sys_nr))
		return 0;
	e = ring_reserve(&ring, sizeof(*e), HP_EV_SYSCALL, t->sys_ts);
	if (!e)
		return 0;
	e->dur_ns = dur;
	e->tid = tid;
	e->pid = pid;
	e->nr = t->sys_nr;
	e->pad = 0;
	e->ret = ret;
	/* only for the calls recorded: the argument registers are as the call found them */
	e->args[0] = PT_REGS_PARM1_CORE_SYSCALL(regs);
	e->args[1] = PT_REGS_PARM2_CORE_SYSCALL(regs);
	e->args[2] = PT_REGS_PARM3_CORE_SYSCALL(regs);
	ring_submit(ring, e);
	return 0;
}

/* The programs: tp_btf_ and raw_tp_ of each (HP_HOOK), attached while something is watched. */
HP_HOOK(sys_enter, on_sys_enter(regs, id), struct pt_regs *regs, long id)
HP_HOOK(sys_exit, on_sys_exit(ctx, regs, ret), struct pt_regs *regs, long ret)
