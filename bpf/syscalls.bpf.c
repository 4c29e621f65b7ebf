// SPDX-License-Identifier: GPL-2.0-only
/*
 * Syscalls of watched processes, syscalls = exact: sys_enter/sys_exit, attached only
 * while some process is watched, since they put every task of the machine on the slow
 * syscall path (syscalls = blocking attaches none: sched.bpf.c sees the calls that block,
 * and mmap_lock_acquire_returned, below, the mapping changes). Collects:
 *  - every call of a watched thread, into its per-thread, per-number log2 histogram of
 *    durations (a slot of `hist_slots`, which the daemon reads at a snapshot);
 *  - a call that took at least syscall_min_ns as a record, with its first three
 *    arguments and its return value, and every mmap/munmap/mprotect/execve(at) whatever
 *    it took (the daemon reads the process's mappings again after those);
 *  - at the exit of a syscall inside which an off-CPU interval ended, the user stack of
 *    that interval (stacks.bpf.h: the user registers are intact there);
 *  - a CPython process's waits for its GIL, from their futex calls (gil.bpf.h).
 *
 * Filters: for tasks of unwatched processes both return after one watch_filter load.
 *
 * Cost per call of a watched thread (bpf_stats at the watched pipe benchmark in a
 * quieter run than bench/results/hotpath.md's, where an empty program measures ~42 ns): a task-storage
 * lookup and the clock at entry (~90 ns), the same and a histogram slot at exit (~120 ns;
 * the slot from the thread's cache of its recent syscall numbers), a 72-byte reservation
 * when it is recorded, and a user stack walk when one is pending.
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

#define GIL_HOOKS
#include "gil.bpf.h"

static __always_inline int on_sys_enter(struct pt_regs *regs, long id, bool btf)
{
	__u32 pid, tid;
	struct task *t;
	bool watched;

	t = watched_current(&pid, &tid, btf, &watched);
	if (!t)
		return 0;
	t->sys_ts = bpf_ktime_get_boot_ns();
	t->sys_nr = id;
	t->flags |= TASK_IN_SYSCALL;
	gil_sys_enter(t, pid, tid, id, regs, t->sys_ts);
	return 0;
}

static __always_inline bool always_recorded(__u32 nr)
{
	return nr == NR_MMAP || nr == NR_MUNMAP || nr == NR_MPROTECT || nr == NR_EXECVE || nr == NR_EXECVEAT;
}

static __always_inline int on_sys_exit(void *ctx, struct pt_regs *regs, long ret, bool btf)
{
	__u64 now, dur;
	struct hp_syscall *e;
	__u32 pid, tid;
	struct task *t;
	bool watched;
	void *ring;

	t = watched_current(&pid, &tid, btf, &watched);
	if (!t || !(t->flags & TASK_IN_SYSCALL))
		return 0;
	t->flags &= ~TASK_IN_SYSCALL;
	now = bpf_ktime_get_boot_ns();
	if (t->flags & TASK_USTACK_PENDING) {
		t->flags &= ~TASK_USTACK_PENDING;
		emit_ustack(ctx, regs, t, tid, pid, now, btf);
	}
	dur = now - t->sys_ts;
	hist_add(t, pid, tid, t->sys_nr, dur);
	gil_sys_exit(t, pid, tid, t->sys_nr, ret, now);
	if (dur < syscall_min_ns && !always_recorded(t->sys_nr))
		return 0;
	e = ring_reserve(&ring, sizeof(*e), HP_EV_SYSCALL, t->sys_ts);
	if (!e)
		return 0;
	e->dur_ns = dur;
	e->tid = tid;
	e->pid = pid;
	e->nr = t->sys_nr;
	e->flags = 0;
	e->ret = ret;
	/* only for the calls recorded: the argument registers are as the call found them */
	e->args[0] = PT_REGS_PARM1_CORE_SYSCALL(regs);
	e->args[1] = PT_REGS_PARM2_CORE_SYSCALL(regs);
	e->args[2] = PT_REGS_PARM3_CORE_SYSCALL(regs);
	ring_submit(ring, e);
	return 0;
}

/* The programs: tp_btf_ and raw_tp_ of each (HP_HOOK), attached while something is watched
 * with syscalls = exact. */
HP_HOOK(sys_enter, on_sys_enter(regs, id, btf), struct pt_regs *regs, long id)
HP_HOOK(sys_exit, on_sys_exit(ctx, regs, ret, btf), struct pt_regs *regs, long ret)

/*
 * syscalls = blocking: no syscall hooks, so the mapping changes symbolization needs (a
 * library dlopen'ed, code mapped or unmapped) are seen where every one of them takes its
 * process's mmap_lock to write (mmap, munmap, mprotect, mremap, brk, exec): the process's
 * maps_changes moves on, and the daemon reads its mappings again. No record: one number
 * per process, however often it maps. The tracepoint fires at every mmap_lock
 * acquisition of the machine (page faults mostly use per-VMA locks since 6.4): a read
 * acquisition returns at once, a write one of an unwatched process after one
 * watch_filter load.
 */
static __always_inline int on_mmap_lock(bool write, bool success)
{
	struct hp_watch *w;

	if (!write || !success)
		return 0;
	w = watch_of(bpf_get_current_pid_tgid() >> 32);
	if (w)
		w->maps_changes++;
	return 0;
}

/* Attached while something is watched with syscalls = blocking. */
HP_HOOK(mmap_lock_acquire_returned, on_mmap_lock(write, success), struct mm_struct *mm, bool write, bool success)
