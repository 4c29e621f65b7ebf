// SPDX-License-Identifier: GPL-2.0-only
/*
 * hostprof's capture: scheduling, syscalls, off-CPU and on-CPU stacks.
 *
 * Collects, for watched processes (the `watched` hash, key tgid):
 *  - every context switch in which a watched task goes out or in, with the task on the
 *    other side (so the preemptor of a watched thread is named), and for the task going
 *    in, how long it waited on the runqueue since its wakeup or its preemption;
 *  - wakeups of watched tasks with the waker (the task running at sched_waking;
 *    sched_wakeup may run on the target CPU, where it is not the waker), migrations;
 *  - thread names (task_rename fires on prctl, pthread_setname_np and exec), forks,
 *    execs and exits;
 *  - syscalls (sys_enter/sys_exit, attached only while some process is watched): every
 *    call goes into a per-thread, per-number log2 histogram; a call that took at least
 *    syscall_min_ns is also a record, and so is every mmap/munmap/mprotect/exec;
 *  - off-CPU intervals of at least offcpu_min_ns (blocked, not preempted), with state,
 *    waker and stacks;
 *  - on-CPU stack samples (a perf_event program, cpu-clock on every CPU).
 * With the --cpus mask, every switch on those CPUs is recorded too. And while a watched
 * thread waits preempted on a CPU's runqueue, every switch on that CPU is recorded for
 * its process: the tasks that ran there while it waited are named.
 *
 * Filters in the kernel: each hook returns after one hash lookup for tasks of
 * unwatched processes. A process enters `watched` when the daemon adds it, when a
 * watched process forks it, or when one of its threads takes a name that matches a
 * --watch-thread glob (a shift-and automaton, glob.bpf.h).
 *
 * Cost per event: sched_switch (every switch of the machine) is two `watched` lookups
 * and returns there for unwatched tasks; a recorded switch is one 96-byte reservation
 * plus two task-map updates. sys_enter/sys_exit cost one lookup for unwatched tasks, a
 * histogram update for watched ones. Stacks are the expensive part and are taken only
 * where they are kept: the kernel stack of an off-CPU interval is read when the task
 * runs again and only if the interval passed the threshold (bpf_get_task_stack on the
 * task going in, tp_btf only); its user stack at the syscall's exit that follows (the
 * user registers are intact there); samples take both at the sample.
 *
 * Each CPU writes to its own ring buffer (`rings`), so producers never contend; the
 * daemon merges the shards by timestamp. Fixed-size records are reserved at their exact
 * size; records with stacks are built in a per-CPU scratch slot (one per nesting level:
 * a perf_event program can interrupt a tracepoint program on the same CPU) and copied
 * with bpf_ringbuf_output at their exact size.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "hostprof.h"
#include "core_fixes.bpf.h"
#include "glob.bpf.h"

char LICENSE[] SEC("license") = "GPL";

/* Fixed for the daemon's life, set before load. */
const volatile __u64 wakeup_bytes = 64 * 1024; /* wake the daemon once this much is queued */

/* What SIGHUP may change lives in .bss: the daemon writes it through the mmap. */
struct hp_glob globs[HP_MAX_GLOBS];
__u32 nr_globs;
__u64 syscall_min_ns = 200 * 1000;
__u64 offcpu_min_ns = 200 * 1000;
__u64 irq_min_ns = 0;
__u64 lock_min_ns = 0;
__u64 cpus_mask[HP_MAX_CPUS / 64];
__u32 cpus_any; /* some bit of cpus_mask is set */
__u32 intf_mask; /* HP_INTF_*: what --interference captures (its programs are attached too) */
/*
 * A filter in front of the `watched` hash: watch_filter[tgid & mask] is non-zero for
 * every watched tgid (and for the tgids that share its slot). Every hook of the machine
 * asks it first, so a task of an unwatched process costs one byte load, not a hash
 * lookup. Set here (plain stores: no atomics on older kernels) and by the daemon, which
 * also clears slots no watched tgid uses any more.
 */
__u8 watch_filter[HP_FILTER_SIZE];

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

struct ringbuf_map {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 256 * 1024); /* the daemon sets --ring-kb before load */
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, 1); /* one per possible CPU, set before load */
	__type(key, __u32);
	__array(values, struct ringbuf_map);
} rings SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, HP_MAX_WATCHED);
	__type(key, __u32);
	__type(value, struct hp_watch);
} watched SEC(".maps");

/* Per-thread state of watched tasks (key: tid). */
#define TASK_IN_SYSCALL 0x1
#define TASK_USTACK_PENDING 0x2
#define TASK_OFF_RUNNABLE 0x4 /* off the CPU preempted, not blocked */
#define TASK_VICTIM 0x8       /* counted in victims[off_cpu].waiting */

struct task {
	__u64 off_ts;  /* switched out at */
	__u64 wake_ts; /* woken at (0: not since it went off) */
	__u64 sys_ts;  /* in a syscall since */
	__u64 pending_off_ts; /* TASK_USTACK_PENDING: the interval the user stack is for */
	__u32 sys_nr;
	__u32 off_state;
	__u32 waker_tid;
	__u32 waker_pid;
	__u32 flags;
	__u32 off_cpu; /* where it was switched out */
	char waker_comm[HP_COMM_LEN];
	/* page faults since flt_since (0: the counters are not based yet) */
	__u64 flt_since;
	__u32 flt_min0; /* task->min_flt at flt_since (low 32 bits: deltas wrap safely) */
	__u32 flt_maj0;
	__u32 flt_faults;
	__u32 flt_write;
	__u32 flt_exec;
	__u32 flt_prot;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, HP_MAX_TASKS);
	__type(key, __u32);
	__type(value, struct task);
} tasks SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, struct hp_hist_key);
	__type(value, struct hp_hist);
} syscall_hist SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, HP_STAT_MAX);
	__type(key, __u32);
	__type(value, __u64);
} stats SEC(".maps");

/* Scratch for records with stacks: [0] for tracepoints, [1] for a perf_event program
 * that interrupted one on the same CPU. */
#define SCRATCH_LEVELS 2
struct scratch {
	__u32 depth;
	__u32 pad;
	__u8 buf[SCRATCH_LEVELS][HP_MAX_RECORD];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct scratch);
} scratch SEC(".maps");

/* Per CPU: watched threads preempted on it and waiting to run again, and the process of
 * the latest one. While waiting > 0, every switch on the CPU is recorded. */
struct victim {
	__u32 waiting;
	__u32 pid;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1); /* one per possible CPU, set before load */
	__type(key, __u32);
	__type(value, struct victim);
} victims SEC(".maps");

/*
 * Per CPU, written only by that CPU: the watched thread running on it (run_tid 0: none),
 * set at the switches of watched threads, and the interrupt running now, entered while a
 * watched thread ran or waited here. A separate per-CPU map, not `victims`: written at
 * every switch of a watched thread, it must not share cache lines between CPUs.
 */
struct irq_cpu {
	__u64 hard_ts; /* 0: none */
	__u64 soft_ts;
	__u32 hard_tid, hard_pid, hard_flags;
	__u32 soft_tid, soft_pid, soft_flags;
	__u32 run_tid, run_pid;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct irq_cpu);
} irq_state SEC(".maps");

/* Waits in progress inside a watched thread (key: tid), kept only while one is. */
struct wait {
	__u64 reclaim_ts; /* 0: not in reclaim */
	__u64 compact_ts;
	__u64 lock_ts;
	__u64 lock;
	__u32 reclaim_kind;
	__s32 reclaim_order;
	__u32 reclaim_gfp;
	__s32 compact_order;
	__u32 lock_flags;
	__u32 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, struct wait);
} waits SEC(".maps");

/* A watched thread that waited on off_cpu runs again, or exits. */
static __always_inline void victim_done(struct task *t)
{
	struct victim *v;
	__u32 oc;

	if (!(t->flags & TASK_VICTIM))
		return;
	t->flags &= ~TASK_VICTIM;
	oc = t->off_cpu;
	v = bpf_map_lookup_elem(&victims, &oc);
	if (v && v->waiting)
		__sync_fetch_and_add(&v->waiting, -1);
}

static const struct task zero_task;

static __always_inline void stat_inc(__u32 idx)
{
	__u64 *v = bpf_map_lookup_elem(&stats, &idx);

	if (v)
		*v += 1;
}

static __always_inline bool is_watched(__u32 tgid)
{
	if (!tgid || !watch_filter[tgid & (HP_FILTER_SIZE - 1)])
		return false;
	return bpf_map_lookup_elem(&watched, &tgid);
}

static __always_inline int watch_add(__u32 tgid, struct hp_watch *w)
{
	int r = bpf_map_update_elem(&watched, &tgid, w, BPF_NOEXIST);

	/* set even when it was there: the daemon may have just cleared a shared slot */
	watch_filter[tgid & (HP_FILTER_SIZE - 1)] = 1;
	return r;
}

static __always_inline bool cpu_recorded(__u32 cpu)
{
	if (!cpus_any || cpu >= HP_MAX_CPUS)
		return false;
	return cpus_mask[(cpu / 64) & (HP_MAX_CPUS / 64 - 1)] & (1ULL << (cpu % 64));
}

static __always_inline void *this_ring(void)
{
	__u32 cpu = bpf_get_smp_processor_id();
	void *ring = bpf_map_lookup_elem(&rings, &cpu);

	if (!ring)
		stat_inc(HP_STAT_NO_RING);
	return ring;
}

static __always_inline void fill_hdr(struct hp_hdr *hdr, __u16 type, __u32 size, __u64 ts)
{
	hdr->ts = ts;
	hdr->type = type;
	hdr->size = size;
	hdr->cpu = bpf_get_smp_processor_id();
}

/* Reserve exactly `size` bytes on this CPU's ring and fill in the header. */
static __always_inline void *ring_reserve(void **ret_ring, __u32 size, __u16 type, __u64 ts)
{
	struct hp_hdr *hdr;
	void *ring = this_ring();

	if (!ring)
		return NULL;
	hdr = bpf_ringbuf_reserve(ring, size, 0);
	if (!hdr) {
		stat_inc(HP_STAT_RING_FULL);
		return NULL;
	}
	fill_hdr(hdr, type, size, ts);
	*ret_ring = ring;
	return hdr;
}

static __always_inline __u64 wakeup_flags(void *ring)
{
	return bpf_ringbuf_query(ring, BPF_RB_AVAIL_DATA) >= wakeup_bytes ? BPF_RB_FORCE_WAKEUP : BPF_RB_NO_WAKEUP;
}

/* Submit, waking the daemon only once enough has queued up; its timer drains the rest. */
static __always_inline void ring_submit(void *ring, void *rec)
{
	bpf_ringbuf_submit(rec, wakeup_flags(ring));
	stat_inc(HP_STAT_EVENTS);
}

/* A record built in scratch, copied out at its exact size. */
static __always_inline void ring_output(void *rec, __u32 size)
{
	void *ring = this_ring();

	if (!ring)
		return;
	if (size > HP_MAX_RECORD)
		return;
	if (bpf_ringbuf_output(ring, rec, size, wakeup_flags(ring))) {
		stat_inc(HP_STAT_RING_FULL);
		return;
	}
	stat_inc(HP_STAT_EVENTS);
}

/* Take a scratch slot for this nesting level; scratch_put() gives it back. */
static __always_inline void *scratch_get(struct scratch **ret_s)
{
	__u32 zero = 0, depth;
	struct scratch *s = bpf_map_lookup_elem(&scratch, &zero);

	if (!s)
		return NULL;
	depth = s->depth++;
	if (depth >= SCRATCH_LEVELS) {
		s->depth--;
		stat_inc(HP_STAT_NESTED);
		return NULL;
	}
	*ret_s = s;
	return s->buf[depth & (SCRATCH_LEVELS - 1)];
}

static __always_inline void scratch_put(struct scratch *s)
{
	s->depth--;
}

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

/* fls()-style index of the highest set bit, with shifts (clang 14 and __builtin_clz). */
static __always_inline __u32 highest_bit(__u32 v)
{
	__u32 r = 0;

	if (v >= 1 << 16) {
		v >>= 16;
		r += 16;
	}
	if (v >= 1 << 8) {
		v >>= 8;
		r += 8;
	}
	if (v >= 1 << 4) {
		v >>= 4;
		r += 4;
	}
	if (v >= 1 << 2) {
		v >>= 2;
		r += 2;
	}
	if (v >= 1 << 1)
		r += 1;
	return r;
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

static __always_inline struct task *task_get(__u32 tid, bool create)
{
	struct task *t = bpf_map_lookup_elem(&tasks, &tid);

	if (t || !create)
		return t;
	if (bpf_map_update_elem(&tasks, &tid, &zero_task, BPF_NOEXIST) && !bpf_map_lookup_elem(&tasks, &tid)) {
		stat_inc(HP_STAT_TASK_FULL);
		return NULL;
	}
	return bpf_map_lookup_elem(&tasks, &tid);
}

#define FLT_PERIOD_NS (10 * 1000 * 1000ULL) /* a faulting thread's counts go out at most this often */

/* The fault counters of a thread start counting now. */
static __always_inline void faults_base(struct task_struct *p, struct task *t, __u64 now, bool btf)
{
	t->flt_since = now;
	t->flt_min0 = TASK_READ(btf, p, min_flt);
	t->flt_maj0 = TASK_READ(btf, p, maj_flt);
	t->flt_faults = t->flt_write = t->flt_exec = t->flt_prot = 0;
}

/*
 * Emit the page faults of thread p since flt_since: when `force` (it blocks or exits: the
 * period ends here) or once FLT_PERIOD_NS has passed. p is the current task, or one whose
 * counters only it changes.
 */
static __always_inline void faults_flush(struct task_struct *p, struct task *t, __u32 tid, __u32 pid, __u64 now,
					 bool force, bool btf)
{
	struct hp_faults *e;
	__u32 minor, major;
	void *ring;

	if (!t->flt_since) {
		faults_base(p, t, now, btf);
		return;
	}
	if (!force && now - t->flt_since < FLT_PERIOD_NS)
		return;
	minor = (__u32)TASK_READ(btf, p, min_flt) - t->flt_min0;
	major = (__u32)TASK_READ(btf, p, maj_flt) - t->flt_maj0;
	if (minor || major || t->flt_faults) {
		e = ring_reserve(&ring, sizeof(*e), HP_EV_FAULTS, t->flt_since);
		if (e) {
			e->dur_ns = now - t->flt_since;
			e->tid = tid;
			e->pid = pid;
			e->faults = t->flt_faults;
			e->write = t->flt_write;
			e->exec = t->flt_exec;
			e->prot = t->flt_prot;
			e->minor = minor;
			e->major = major;
			ring_submit(ring, e);
		}
	}
	faults_base(p, t, now, btf);
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
	__u32 size;

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
	size = sizeof(*e) + (e->kstack_len & (HP_MAX_STACK - 1)) * sizeof(__u64);
	if (e->kstack_len == HP_MAX_STACK)
		size = sizeof(*e) + HP_MAX_STACK * sizeof(__u64);
	e->hdr.size = size;
	ring_output(e, size);
	scratch_put(s);
}

static __always_inline int on_switch(bool preempt, struct task_struct *prev, struct task_struct *next, bool btf)
{
	__u32 prev_pid = TASK_READ(btf, prev, tgid), prev_tid = TASK_READ(btf, prev, pid);
	__u32 next_pid = TASK_READ(btf, next, tgid), next_tid = TASK_READ(btf, next, pid);
	__u32 cpu = bpf_get_smp_processor_id(), victim_pid = 0;
	__u64 now, wait = 0;
	__u32 wait_kind = 0, state;
	struct hp_switch *e;
	struct victim *v;
	struct task *t;
	__u16 flags = 0;
	void *ring;

	if (is_watched(prev_pid))
		flags |= HP_SW_PREV_WATCHED;
	if (is_watched(next_pid))
		flags |= HP_SW_NEXT_WATCHED;
	v = bpf_map_lookup_elem(&victims, &cpu);
	if (!flags) {
		if (v && v->waiting) {
			flags |= HP_SW_VICTIM_CPU;
			victim_pid = v->pid;
		}
		if (cpu_recorded(cpu))
			flags |= HP_SW_HOST_CPU;
		if (!flags)
			return 0;
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
	if (flags & HP_SW_PREV_WATCHED) {
		t = task_get(prev_tid, true);
		if (t && (intf_mask & HP_INTF_FAULTS))
			faults_flush(prev, t, prev_tid, prev_pid, now, !HP_STATE_RUNNABLE(state), btf);
		if (t) {
			t->off_ts = now;
			t->off_state = state;
			t->off_cpu = cpu;
			/* wake_ts is not cleared here but at the switch-in that uses it: a wakeup on
			 * another CPU may race this switch-out, and must not be lost */
			if (HP_STATE_RUNNABLE(state)) {
				t->flags |= TASK_OFF_RUNNABLE;
				/* it waits on this CPU's runqueue: record who runs here meanwhile */
				if (v && !(t->flags & TASK_VICTIM)) {
					__sync_fetch_and_add(&v->waiting, 1);
					v->pid = prev_pid;
					t->flags |= TASK_VICTIM;
				}
			} else {
				t->flags &= ~TASK_OFF_RUNNABLE;
			}
		}
	}
	if (flags & HP_SW_NEXT_WATCHED) {
		t = task_get(next_tid, false);
		/* it waited on the CPU it was switched out on (if it migrated meanwhile, that
		 * CPU's count is given back here all the same) */
		if (t)
			victim_done(t);
		/* its fault counts start before its first fault: counters only it changes */
		if (t && !t->flt_since && (intf_mask & HP_INTF_FAULTS))
			faults_base(next, t, now, btf);
		if (t) {
			if (t->off_ts && (t->flags & TASK_OFF_RUNNABLE)) {
				wait = now - t->off_ts;
				wait_kind = HP_WAIT_PREEMPT;
			} else {
				/* a new thread has no off_ts: its wait is from sched_wakeup_new */
				if (t->wake_ts && t->wake_ts <= now) {
					wait = now - t->wake_ts;
					wait_kind = HP_WAIT_WAKEUP;
				}
				if (t->off_ts && now - t->off_ts >= offcpu_min_ns)
					emit_offcpu(next, t, next_tid, next_pid, now, btf);
			}
			t->off_ts = 0;
			t->wake_ts = 0;
			t->waker_tid = 0;
			t->waker_pid = 0;
		}
	}

	e = ring_reserve(&ring, sizeof(*e), HP_EV_SWITCH, now);
	if (!e)
		return 0;
	e->prev_tid = prev_tid;
	e->prev_pid = prev_pid;
	e->next_tid = next_tid;
	e->next_pid = next_pid;
	e->prev_prio = TASK_READ(btf, prev, prio);
	e->next_prio = TASK_READ(btf, next, prio);
	e->prev_state = state;
	e->prev_policy = TASK_READ(btf, prev, policy);
	e->next_policy = TASK_READ(btf, next, policy);
	e->flags = flags;
	e->next_wait_ns = wait;
	e->next_wait_kind = wait_kind;
	e->victim_pid = victim_pid;
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
	__u64 cur = bpf_get_current_pid_tgid(), now;
	struct hp_wake *e;
	struct task *t;
	void *ring;

	if (!is_watched(pid))
		return 0;
	now = bpf_ktime_get_boot_ns();
	/* the thread's state first: a full ring loses the record, not the wait it starts */
	t = task_get(tid, true);
	if (t) {
		t->wake_ts = now;
		t->waker_tid = (__u32)cur;
		t->waker_pid = cur >> 32;
		bpf_get_current_comm(t->waker_comm, sizeof(t->waker_comm));
	}
	e = ring_reserve(&ring, sizeof(*e), HP_EV_WAKE, now);
	if (!e)
		return 0;
	e->tid = tid;
	e->pid = pid;
	e->target_cpu = TASK_READ(btf, p, wake_cpu);
	e->flags = wake_flags;
	e->waker_tid = (__u32)cur;
	e->waker_pid = cur >> 32;
	bpf_get_current_comm(e->waker_comm, sizeof(e->waker_comm));
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

static __always_inline int on_exit(struct task_struct *task)
{
	__u32 pid = BPF_CORE_READ(task, tgid), tid = BPF_CORE_READ(task, pid);
	struct hp_exit *e;
	struct task *t;
	void *ring;

	if (!is_watched(pid))
		return 0;
	t = task_get(tid, false);
	if (t) {
		victim_done(t);
		if (intf_mask & HP_INTF_FAULTS)
			faults_flush(task, t, tid, pid, bpf_ktime_get_boot_ns(), true, false);
	}
	bpf_map_delete_elem(&tasks, &tid);
	bpf_map_delete_elem(&waits, &tid);
	e = ring_reserve(&ring, sizeof(*e), HP_EV_EXIT, bpf_ktime_get_boot_ns());
	if (!e)
		return 0;
	e->tid = tid;
	e->pid = pid;
	e->exit_code = BPF_CORE_READ(task, exit_code);
	e->pad = 0;
	ring_submit(ring, e);
	return 0;
}

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

/* The user stack of an off-CPU interval that ended while this thread was in a syscall. */
static __always_inline void emit_ustack(void *ctx, struct task *t, __u32 tid, __u32 pid)
{
	struct scratch *s;
	struct hp_ustack *e = scratch_get(&s);
	__u32 size;
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
	size = sizeof(*e) + (e->ustack_len & (HP_MAX_STACK - 1)) * sizeof(__u64);
	if (e->ustack_len == HP_MAX_STACK)
		size = sizeof(*e) + HP_MAX_STACK * sizeof(__u64);
	e->hdr.size = size;
	ring_output(e, size);
	scratch_put(s);
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

/* On-CPU sample: the task running on this CPU, with kernel and user stacks. */
SEC("perf_event")
int on_cpu_sample(struct bpf_perf_event_data *ctx)
{
	__u64 cur = bpf_get_current_pid_tgid();
	__u32 pid = cur >> 32, tid = (__u32)cur;
	struct hp_sample *e;
	struct scratch *s;
	__u32 k, u, size;
	long r;

	if (!tid || !is_watched(pid))
		return 0;
	if (intf_mask & HP_INTF_FAULTS) {
		struct task *t = task_get(tid, false);

		if (t)
			faults_flush((struct task_struct *)bpf_get_current_task(), t, tid, pid,
				     bpf_ktime_get_boot_ns(), false, false);
	}
	e = scratch_get(&s);
	if (!e)
		return 0;
	fill_hdr(&e->hdr, HP_EV_SAMPLE, 0, bpf_ktime_get_boot_ns());
	e->tid = tid;
	e->pid = pid;
	e->stack_flags = 0;
	r = bpf_get_stack(ctx, e->frames, HP_MAX_STACK * sizeof(__u64), 0);
	k = stack_frames(r, &e->stack_flags, HP_STACK_KTRUNC, HP_STACK_KFAIL);
	if (k > HP_MAX_STACK)
		k = HP_MAX_STACK;
	r = bpf_get_stack(ctx, &e->frames[k], HP_MAX_STACK * sizeof(__u64), BPF_F_USER_STACK);
	u = stack_frames(r, &e->stack_flags, HP_STACK_UTRUNC, HP_STACK_UFAIL);
	if (u > HP_MAX_STACK)
		u = HP_MAX_STACK;
	e->kstack_len = k;
	e->ustack_len = u;
	size = sizeof(*e) + (k + u) * sizeof(__u64);
	e->hdr.size = size;
	ring_output(e, size);
	scratch_put(s);
	return 0;
}


/*
 * Interference beyond the scheduler (--interference). Each group is attached only while
 * it is asked for and some process is watched; each returns after a byte or two of
 * state for everything else.
 */

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
	if (waiting) {
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
static __always_inline int on_page_fault(unsigned long error_code)
{
	__u64 cur = bpf_get_current_pid_tgid(), now;
	__u32 tid = (__u32)cur, pid = cur >> 32;
	struct task *t;

	if (!is_watched(pid))
		return 0;
	t = task_get(tid, true);
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
	__u32 tid, pid, size;
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
	size = sizeof(*e) + (e->kstack_len & (HP_MAX_STACK - 1)) * sizeof(__u64);
	if (e->kstack_len == HP_MAX_STACK)
		size = sizeof(*e) + HP_MAX_STACK * sizeof(__u64);
	e->hdr.size = size;
	ring_output(e, size);
	scratch_put(s);
done:
	w->lock_ts = 0;
	wait_put(w, tid);
	return 0;
}


/*
 * Each hook twice: tp_btf where the kernel has BTF for the tracepoint, raw_tp otherwise.
 * The daemon turns off the autoload of one of each pair before loading.
 */
SEC("tp_btf/sched_switch")
int BPF_PROG(tp_btf_sched_switch, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	return on_switch(preempt, prev, next, true);
}

SEC("raw_tp/sched_switch")
int BPF_PROG(raw_tp_sched_switch, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	return on_switch(preempt, prev, next, false);
}

SEC("tp_btf/sched_waking")
int BPF_PROG(tp_btf_sched_waking, struct task_struct *p)
{
	return on_waking(p, 0, true);
}

SEC("raw_tp/sched_waking")
int BPF_PROG(raw_tp_sched_waking, struct task_struct *p)
{
	return on_waking(p, 0, false);
}

SEC("tp_btf/sched_wakeup_new")
int BPF_PROG(tp_btf_sched_wakeup_new, struct task_struct *p)
{
	return on_waking(p, HP_WAKE_NEW, true);
}

SEC("raw_tp/sched_wakeup_new")
int BPF_PROG(raw_tp_sched_wakeup_new, struct task_struct *p)
{
	return on_waking(p, HP_WAKE_NEW, false);
}

SEC("tp_btf/sched_migrate_task")
int BPF_PROG(tp_btf_sched_migrate_task, struct task_struct *p, int dest_cpu)
{
	return on_migrate(p, dest_cpu);
}

SEC("raw_tp/sched_migrate_task")
int BPF_PROG(raw_tp_sched_migrate_task, struct task_struct *p, int dest_cpu)
{
	return on_migrate(p, dest_cpu);
}

SEC("tp_btf/task_rename")
int BPF_PROG(tp_btf_task_rename, struct task_struct *task, const char *comm)
{
	return on_rename(task, comm);
}

SEC("raw_tp/task_rename")
int BPF_PROG(raw_tp_task_rename, struct task_struct *task, const char *comm)
{
	return on_rename(task, comm);
}

SEC("tp_btf/sched_process_fork")
int BPF_PROG(tp_btf_sched_process_fork, struct task_struct *parent, struct task_struct *child)
{
	return on_fork(parent, child);
}

SEC("raw_tp/sched_process_fork")
int BPF_PROG(raw_tp_sched_process_fork, struct task_struct *parent, struct task_struct *child)
{
	return on_fork(parent, child);
}

SEC("tp_btf/sched_process_exec")
int BPF_PROG(tp_btf_sched_process_exec, struct task_struct *p, pid_t old_pid)
{
	return on_exec(p, old_pid);
}

SEC("raw_tp/sched_process_exec")
int BPF_PROG(raw_tp_sched_process_exec, struct task_struct *p, pid_t old_pid)
{
	return on_exec(p, old_pid);
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(tp_btf_sched_process_exit, struct task_struct *task)
{
	return on_exit(task);
}

SEC("raw_tp/sched_process_exit")
int BPF_PROG(raw_tp_sched_process_exit, struct task_struct *task)
{
	return on_exit(task);
}

/* Attached by the daemon only while some process is watched. */
SEC("tp_btf/sys_enter")
int BPF_PROG(tp_btf_sys_enter, struct pt_regs *regs, long id)
{
	return on_sys_enter(regs, id);
}

SEC("raw_tp/sys_enter")
int BPF_PROG(raw_tp_sys_enter, struct pt_regs *regs, long id)
{
	return on_sys_enter(regs, id);
}

SEC("tp_btf/sys_exit")
int BPF_PROG(tp_btf_sys_exit, struct pt_regs *regs, long ret)
{
	return on_sys_exit(ctx, regs, ret);
}

SEC("raw_tp/sys_exit")
int BPF_PROG(raw_tp_sys_exit, struct pt_regs *regs, long ret)
{
	return on_sys_exit(ctx, regs, ret);
}

/* --interference hooks, attached on demand (capture_set_interference). */
SEC("tp_btf/irq_handler_entry")
int BPF_PROG(tp_btf_irq_handler_entry, int irq, struct irqaction *action)
{
	return on_irq_entry();
}

SEC("raw_tp/irq_handler_entry")
int BPF_PROG(raw_tp_irq_handler_entry, int irq, struct irqaction *action)
{
	return on_irq_entry();
}

SEC("tp_btf/irq_handler_exit")
int BPF_PROG(tp_btf_irq_handler_exit, int irq, struct irqaction *action, int ret)
{
	return on_irq_exit(irq, action);
}

SEC("raw_tp/irq_handler_exit")
int BPF_PROG(raw_tp_irq_handler_exit, int irq, struct irqaction *action, int ret)
{
	return on_irq_exit(irq, action);
}

SEC("tp_btf/softirq_entry")
int BPF_PROG(tp_btf_softirq_entry, unsigned int vec)
{
	return on_softirq_entry();
}

SEC("raw_tp/softirq_entry")
int BPF_PROG(raw_tp_softirq_entry, unsigned int vec)
{
	return on_softirq_entry();
}

SEC("tp_btf/softirq_exit")
int BPF_PROG(tp_btf_softirq_exit, unsigned int vec)
{
	return on_softirq_exit(vec);
}

SEC("raw_tp/softirq_exit")
int BPF_PROG(raw_tp_softirq_exit, unsigned int vec)
{
	return on_softirq_exit(vec);
}

SEC("tp_btf/mm_vmscan_direct_reclaim_begin")
int BPF_PROG(tp_btf_mm_vmscan_direct_reclaim_begin, int order, gfp_t gfp)
{
	return on_reclaim_begin(HP_RECLAIM_DIRECT, order, gfp);
}

SEC("raw_tp/mm_vmscan_direct_reclaim_begin")
int BPF_PROG(raw_tp_mm_vmscan_direct_reclaim_begin, int order, gfp_t gfp)
{
	return on_reclaim_begin(HP_RECLAIM_DIRECT, order, gfp);
}

SEC("tp_btf/mm_vmscan_direct_reclaim_end")
int BPF_PROG(tp_btf_mm_vmscan_direct_reclaim_end, unsigned long reclaimed)
{
	return on_reclaim_end(HP_RECLAIM_DIRECT, reclaimed);
}

SEC("raw_tp/mm_vmscan_direct_reclaim_end")
int BPF_PROG(raw_tp_mm_vmscan_direct_reclaim_end, unsigned long reclaimed)
{
	return on_reclaim_end(HP_RECLAIM_DIRECT, reclaimed);
}

SEC("tp_btf/mm_vmscan_memcg_reclaim_begin")
int BPF_PROG(tp_btf_mm_vmscan_memcg_reclaim_begin, int order, gfp_t gfp)
{
	return on_reclaim_begin(HP_RECLAIM_MEMCG, order, gfp);
}

SEC("raw_tp/mm_vmscan_memcg_reclaim_begin")
int BPF_PROG(raw_tp_mm_vmscan_memcg_reclaim_begin, int order, gfp_t gfp)
{
	return on_reclaim_begin(HP_RECLAIM_MEMCG, order, gfp);
}

SEC("tp_btf/mm_vmscan_memcg_reclaim_end")
int BPF_PROG(tp_btf_mm_vmscan_memcg_reclaim_end, unsigned long reclaimed)
{
	return on_reclaim_end(HP_RECLAIM_MEMCG, reclaimed);
}

SEC("raw_tp/mm_vmscan_memcg_reclaim_end")
int BPF_PROG(raw_tp_mm_vmscan_memcg_reclaim_end, unsigned long reclaimed)
{
	return on_reclaim_end(HP_RECLAIM_MEMCG, reclaimed);
}

SEC("tp_btf/mm_compaction_begin")
int BPF_PROG(tp_btf_mm_compaction_begin, struct compact_control *cc, unsigned long zone_start, unsigned long zone_end, bool sync)
{
	return on_compaction_begin(cc);
}

SEC("raw_tp/mm_compaction_begin")
int BPF_PROG(raw_tp_mm_compaction_begin, struct compact_control *cc, unsigned long zone_start, unsigned long zone_end, bool sync)
{
	return on_compaction_begin(cc);
}

SEC("tp_btf/mm_compaction_end")
int BPF_PROG(tp_btf_mm_compaction_end, struct compact_control *cc, unsigned long zone_start, unsigned long zone_end, bool sync, int status)
{
	return on_compaction_end(status);
}

SEC("raw_tp/mm_compaction_end")
int BPF_PROG(raw_tp_mm_compaction_end, struct compact_control *cc, unsigned long zone_start, unsigned long zone_end, bool sync, int status)
{
	return on_compaction_end(status);
}

SEC("tp_btf/page_fault_user")
int BPF_PROG(tp_btf_page_fault_user, unsigned long address, struct pt_regs *regs, unsigned long error_code)
{
	return on_page_fault(error_code);
}

SEC("raw_tp/page_fault_user")
int BPF_PROG(raw_tp_page_fault_user, unsigned long address, struct pt_regs *regs, unsigned long error_code)
{
	return on_page_fault(error_code);
}

SEC("tp_btf/contention_begin")
int BPF_PROG(tp_btf_contention_begin, void *lock, unsigned int flags)
{
	return on_contention_begin(lock, flags);
}

SEC("raw_tp/contention_begin")
int BPF_PROG(raw_tp_contention_begin, void *lock, unsigned int flags)
{
	return on_contention_begin(lock, flags);
}

SEC("tp_btf/contention_end")
int BPF_PROG(tp_btf_contention_end, void *lock, int ret)
{
	return on_contention_end(ctx, lock, ret);
}

SEC("raw_tp/contention_end")
int BPF_PROG(raw_tp_contention_end, void *lock, int ret)
{
	return on_contention_end(ctx, lock, ret);
}
