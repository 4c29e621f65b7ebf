/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * BPF-only: what the programs of hostprof's one object share. The maps and the settings
 * are defined once, in hostprof.bpf.c, and declared here for the files `bpftool gen
 * object` links with it; then the per-thread and per-CPU state, and the helpers every
 * program uses to filter, to count and to write records.
 */
#ifndef HOSTPROF_SHARED_BPF_H
#define HOSTPROF_SHARED_BPF_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "hostprof.h"
#include "core_fixes.bpf.h"

/* The settings, described where they are defined: in hostprof.bpf.c. */
extern const volatile __u64 wakeup_bytes;
extern const volatile bool use_task_storage, blocking_ok;
extern __u32 syscall_mode, watch_gen, epoch, hist_gen;
extern __u64 ustack_gap_ns, ustack_burst_ns, kstack_reuse_ns;
extern struct hp_glob globs[HP_MAX_GLOBS];
extern __u32 nr_globs;
extern __u64 syscall_min_ns, offcpu_min_ns, irq_min_ns, lock_min_ns;
extern __u64 cpus_mask[HP_MAX_CPUS / 64];
extern __u32 cpus_any, intf_mask;
extern __u32 unwind_bytes, unwind_named;
extern __u8 watch_filter[HP_FILTER_SIZE];

/*
 * The maps: each one's type here (`<name>_map`), its one definition in hostprof.bpf.c.
 * HP_MAP(name, type, max_entries, key, value) declares one of the plain kind.
 */
#define HP_MAP(name, map_type, max, key_type, value_type) \
	typedef struct {                                  \
		__uint(type, map_type);                   \
		__uint(max_entries, max);                 \
		__type(key, key_type);                    \
		__type(value, value_type);                \
	} name##_map;                                     \
	extern name##_map name SEC(".maps")

struct ringbuf_map {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 256 * 1024); /* the daemon sets --ring-kb before load */
};

typedef struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, 1); /* one per possible CPU, set before load */
	__type(key, __u32);
	__array(values, struct ringbuf_map);
} rings_map;
extern rings_map rings SEC(".maps");

HP_MAP(watched, BPF_MAP_TYPE_HASH, HP_MAX_WATCHED, __u32, struct hp_watch);

/*
 * Per-thread state of the tasks of watched processes: in task storage (`task_store`,
 * freed with the task) where the kernel has it and allocates it safely under the
 * runqueue lock; in the `tasks` hash (key: tid, removed at exit) otherwise, or with
 * --force-task-hash, and always in the raw_tp programs (their task pointers are untyped).
 */
#define TASK_IN_SYSCALL 0x1
#define TASK_USTACK_PENDING 0x2
#define TASK_OFF_RUNNABLE 0x4 /* off the CPU preempted, not blocked */
#define TASK_VICTIM 0x8       /* counted in victims[off_cpu].waiting */
#define TASK_EXITED 0x200     /* the hash fallback: past sched_process_exit, its state kept to its last switch */
#define TASK_GIL_TAKE 0x100   /* gil.bpf.h: a take of a CPython GIL is going on (gil_tasks has it) */
#define TASK_BLK_SYSCALL 0x10 /* syscalls = blocking: it went off the CPU inside syscall sys_nr */
#define TASK_BLK_USTACK 0x20  /* syscalls = blocking: its stack_cache user stack u_place is that switch-out's */
#define TASK_BLK_USKIP 0x40   /* syscalls = blocking: no walk at that switch-out (rate limit) */

#define HIST_CACHE 8 /* syscall numbers whose histogram slot a thread remembers (direct-mapped) */
/* user stacks a thread keeps, one per place it blocks from (struct stack_cache): a thread
 * that takes turns between a few (a dispatch thread waiting for work, then for the device)
 * walks none of them again */
#define USTACK_PLACES 4

struct task {
	__u64 off_ts;  /* switched out at */
	__u64 wake_ts; /* woken at (0: not since it went off) */
	__u64 sys_ts;  /* exact: in a syscall since */
	__u64 pending_off_ts; /* TASK_USTACK_PENDING: the interval the user stack is for */
	__u32 sys_nr;
	__u32 off_state;
	__u32 waker_tid;
	__u32 waker_pid;
	__u32 flags;
	__u32 off_cpu;   /* where it was switched out */
	__u32 watch_gen;      /* task storage: its process was found watched at this watch_gen */
	__u32 epoch;          /* the state is valid for this epoch of the hooks only */
	__u32 watch_gen_proc; /* and for this watch of its process (hp_watch.gen) */
	__u32 pad0;
	char waker_comm[HP_COMM_LEN];
	/* page faults since flt_since (0: the counters are not based yet) */
	__u64 flt_since;
	__u32 flt_min0; /* task->min_flt at flt_since (low 32 bits: deltas wrap safely) */
	__u32 flt_maj0;
	__u32 flt_faults;
	__u32 flt_write;
	__u32 flt_exec;
	__u32 flt_prot;
	/* syscalls = blocking: the first arguments of the syscall it blocked in; and the user
	 * registers each of its stack_cache user stacks was walked at */
	__u64 blk_args[HP_SYSCALL_ARGS];
	__u64 u_ip[USTACK_PLACES], u_sp[USTACK_PLACES];
	__u64 u_tat;    /* blocking: when its next walk is due (ustack_gap_ns apart, ustack_burst_ns ahead at most) */
	__u8 u_walked;  /* bit p: u_ip[p], u_sp[p] are set */
	__u8 u_place;   /* TASK_BLK_USTACK: the place of that switch-out's user stack */
	__u8 u_next;    /* the place the next walk takes (round robin) */
	__u8 pad1[5];
	__u64 py_tat; /* blocking: when its next Python walk at a switch-out is due (the same rate as u_tat) */
	/* exact: histogram slots of recent syscall numbers, valid while hist_gen is */
	__u32 hist_gen;
	__u16 hist_nr[HIST_CACHE]; /* nr + 1; 0: empty */
	__u16 hist_slot[HIST_CACHE];
	__u32 pad;
};

struct task_storage_map {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct task);
};
extern struct task_storage_map task_store SEC(".maps");

HP_MAP(tasks, BPF_MAP_TYPE_HASH, HP_MAX_TASKS, __u32, struct task); /* 1 entry when task_store is used */

/*
 * A thread's latest stack walks, for its off-CPU intervals (stacks.bpf.h). The user
 * stacks: one per place (USTACK_PLACES), struct task has the user instruction and stack
 * pointers each was walked at; a later block with the same two has the same stack (same
 * call site, same frame), and reuses it. The kernel stack: with the user registers and the syscall it was walked
 * in; a later block from the same place in the same syscall reuses it for
 * kstack_reuse_ns after the walk, then walks again (HP_STACK_KREUSED marks a reuse).
 */
struct stack_cache {
	__u16 len[USTACK_PLACES];         /* user frames */
	__u32 stack_flags[USTACK_PLACES]; /* HP_STACK_UTRUNC/UFAIL of the user walk */
	__u16 klen;
	__u16 pad;
	__u32 kstack_flags; /* HP_STACK_KTRUNC/KFAIL of the kernel walk */
	__s32 k_nr;         /* the syscall it was walked in, -1: none */
	__u32 pad1;
	__u64 k_ip, k_sp;   /* the user registers it was walked at */
	__u64 k_ts;         /* when (0: never) */
	__u64 frames[USTACK_PLACES][HP_MAX_STACK];
	__u64 kframes[HP_MAX_STACK];
};

struct stack_storage_map {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct stack_cache);
};
extern struct stack_storage_map stack_store SEC(".maps");

HP_MAP(stack_cache, BPF_MAP_TYPE_HASH, 4096, __u32, struct stack_cache); /* the hash fallback (1 entry otherwise) */

/* syscall histograms (exact): key -> slot, the slots, and the free ones (the daemon
 * fills the queue, and refills it with the slots of processes it forgets). */
HP_MAP(hist_index, BPF_MAP_TYPE_HASH, HP_HIST_SLOTS, struct hp_hist_key, __u32);
HP_MAP(hist_slots, BPF_MAP_TYPE_ARRAY, HP_HIST_SLOTS, __u32, struct hp_hist_slot);

typedef struct {
	__uint(type, BPF_MAP_TYPE_QUEUE);
	__uint(max_entries, HP_HIST_SLOTS);
	__type(value, __u32);
} hist_free_map;
extern hist_free_map hist_free SEC(".maps");

HP_MAP(stats, BPF_MAP_TYPE_PERCPU_ARRAY, HP_STAT_MAX, __u32, __u64);

/* Scratch for records with stacks: [0] for tracepoints, [1] for a perf_event program
 * that interrupted one on the same CPU. */
#define SCRATCH_LEVELS 2
struct scratch {
	__u32 depth;
	__u32 pad;
	__u8 buf[SCRATCH_LEVELS][HP_MAX_RECORD];
};

HP_MAP(scratch, BPF_MAP_TYPE_PERCPU_ARRAY, 1, __u32, struct scratch);

/* A record with a stack copy (ucopy.bpf.h), per CPU: [0] for the perf_event program, [1]
 * for the tracepoints' (neither interrupts itself; the first may interrupt the second).
 * Room for a page-sized copy past the record's end, which the copy loop's bounds allow
 * (the verifier follows its offset, not the length it stops at). */
struct rawbuf {
	__u8 buf[HP_MAX_RAW_RECORD + 4096];
};

HP_MAP(rawbuf, BPF_MAP_TYPE_PERCPU_ARRAY, 2, __u32, struct rawbuf);

/* Per CPU: watched threads preempted on it and waiting to run again, and the process of
 * the latest one. While waiting > 0, every switch on the CPU is recorded. */
struct victim {
	__u32 waiting;
	__u32 pid;
};

HP_MAP(victims, BPF_MAP_TYPE_ARRAY, 1, __u32, struct victim); /* one per possible CPU, set before load */

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

HP_MAP(irq_state, BPF_MAP_TYPE_PERCPU_ARRAY, 1, __u32, struct irq_cpu);

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

HP_MAP(waits, BPF_MAP_TYPE_HASH, 4096, __u32, struct wait);

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
static const struct stack_cache zero_stack_cache;

static __always_inline void stat_inc(__u32 idx)
{
	__u64 *v = bpf_map_lookup_elem(&stats, &idx);

	if (v)
		*v += 1;
}

static __always_inline bool filter_says_maybe(__u32 tgid)
{
	return tgid && watch_filter[tgid & (HP_FILTER_SIZE - 1)];
}

static __always_inline struct hp_watch *watch_of(__u32 tgid)
{
	if (!filter_says_maybe(tgid))
		return NULL;
	return bpf_map_lookup_elem(&watched, &tgid);
}

static __always_inline bool is_watched(__u32 tgid)
{
	return watch_of(tgid);
}

static __always_inline int watch_add(__u32 tgid, struct hp_watch *w)
{
	int r = bpf_map_update_elem(&watched, &tgid, w, BPF_NOEXIST);

	/* set even when it was there: the daemon may have just cleared a shared slot */
	watch_filter[tgid & (HP_FILTER_SIZE - 1)] = 1;
	return r;
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

/*
 * Wake the daemon when the data queued on this ring reaches wakeup_bytes: once, at the
 * record that crosses it (queued holds the record and its header, reserved or about to
 * be output).
 * Above it the daemon is awake or about to drain (its epoll sees data until the ring is
 * empty), below it its 100 ms timer drains: a wakeup at every record above it would cost
 * an interrupt each (irq_work; in a VM, a self-IPI and an exit: microseconds a record).
 */
#define RINGBUF_HDR 8 /* the ring's own header before each record (BPF_RINGBUF_HDR_SZ) */

static __always_inline __u64 wakeup_flags(__u64 queued, __u32 size)
{
	return queued >= wakeup_bytes && queued - size - RINGBUF_HDR < wakeup_bytes ? BPF_RB_FORCE_WAKEUP
										 : BPF_RB_NO_WAKEUP;
}

/* Submit, waking the daemon only once enough has queued up; its timer drains the rest. */
static __always_inline void ring_submit(void *ring, void *rec)
{
	__u32 size = ((struct hp_hdr *)rec)->size;

	bpf_ringbuf_submit(rec, wakeup_flags(bpf_ringbuf_query(ring, BPF_RB_AVAIL_DATA), size));
	stat_inc(HP_STAT_EVENTS);
}

/* The same, waking the daemon at once: a record it acts on (a process the kernel starts watching). */
static __always_inline void ring_submit_now(void *rec)
{
	bpf_ringbuf_submit(rec, BPF_RB_FORCE_WAKEUP);
	stat_inc(HP_STAT_EVENTS);
}

/* A record built in scratch (or rawbuf, max HP_MAX_RAW_RECORD), copied out at its exact size. */
static __always_inline void ring_output_max(void *rec, __u32 size, __u32 max)
{
	void *ring = this_ring();

	if (!ring)
		return;
	if (size > max)
		return;
	if (bpf_ringbuf_output(ring, rec, size,
			       wakeup_flags(bpf_ringbuf_query(ring, BPF_RB_AVAIL_DATA) + size + RINGBUF_HDR, size))) {
		stat_inc(HP_STAT_RING_FULL);
		return;
	}
	stat_inc(HP_STAT_EVENTS);
}

static __always_inline void ring_output(void *rec, __u32 size)
{
	ring_output_max(rec, size, HP_MAX_RECORD);
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

/*
 * The hash fallback: a thread's entries, at its last switch-out. Functions of their own:
 * the verifier looks at them once, not on every path of the switch hook, which is near
 * 6.1's limit.
 */
__attribute__((noinline, weak)) int task_hash_drop(__u32 tid)
{
	bpf_map_delete_elem(&tasks, &tid);
	bpf_map_delete_elem(&stack_cache, &tid);
	return 0;
}

/* At a watched thread's switch-out in `state`: its last (X, Z: past exit_notify; one
 * preempted there is R+) takes its entries. */
__attribute__((noinline, weak)) int task_hash_out(__u32 tid, __u32 state)
{
	if (state != HP_STATE_EXIT_DEAD && state != HP_STATE_EXIT_ZOMBIE)
		return 0;
	return task_hash_drop(tid);
}

/* The hash fallback's per-thread state (key: tid). */
static __always_inline struct task *task_hash_get(__u32 tid)
{
	struct task *t = bpf_map_lookup_elem(&tasks, &tid);

	if (t)
		return t;
	if (bpf_map_update_elem(&tasks, &tid, &zero_task, BPF_NOEXIST) && !bpf_map_lookup_elem(&tasks, &tid)) {
		stat_inc(HP_STAT_TASK_FULL);
		return NULL;
	}
	return bpf_map_lookup_elem(&tasks, &tid);
}

/*
 * State written before the hooks were last attached (epoch), or during an earlier watch
 * of the process (gen), describes intervals nobody timed: start again. Fault counts and
 * histogram slots stay (they have checks of their own); a victims count it held was
 * cleared with the map when the epoch changed.
 */
static __always_inline void task_check_fresh(struct task *t, const struct hp_watch *w)
{
	__u32 gen = w->gen;

	if (t->epoch == epoch && t->watch_gen_proc == gen)
		return;
	t->off_ts = 0;
	t->wake_ts = 0;
	t->waker_tid = 0;
	t->waker_pid = 0;
	t->flags = 0;
	t->epoch = epoch;
	t->watch_gen_proc = gen;
}

/*
 * The per-thread state of `task` (tgid, tid) if its process is watched. *ret_watched says
 * whether it is; the state is NULL for a watched task whose state could not be kept
 * (counted: HP_STAT_TASK_FULL). `btf` (a constant of each program) says whether task is
 * a BTF pointer, which task storage needs.
 *
 * With task storage, a task of a watched process carries the watch_gen at which that was
 * last checked: while it is current (the daemon moves it on at every unwatch), one
 * storage lookup answers. Every other task of the machine costs one watch_filter load.
 */
static __always_inline struct task *watched_task(struct task_struct *task, __u32 tgid, __u32 tid, bool btf,
						 bool *ret_watched)
{
	struct hp_watch *w;
	struct task *t;

	*ret_watched = false;
	if (!filter_says_maybe(tgid))
		return NULL;
	if (use_task_storage && btf) {
		__u32 gen = watch_gen;

		t = bpf_task_storage_get(&task_store, task, NULL, 0);
		if (t && t->watch_gen == gen) {
			*ret_watched = true;
			return t;
		}
		w = bpf_map_lookup_elem(&watched, &tgid);
		if (!w)
			return NULL;
		*ret_watched = true;
		if (!t)
			t = bpf_task_storage_get(&task_store, task, NULL, BPF_LOCAL_STORAGE_GET_F_CREATE);
		if (!t) {
			stat_inc(HP_STAT_TASK_FULL);
			return NULL;
		}
		task_check_fresh(t, w);
		t->watch_gen = gen;
		return t;
	}
	w = bpf_map_lookup_elem(&watched, &tgid);
	if (!w)
		return NULL;
	*ret_watched = true;
	t = task_hash_get(tid);
	if (t)
		task_check_fresh(t, w);
	return t;
}

/* The state task already has, without the checks of watched_task (its exit). */
static __always_inline struct task *task_lookup(struct task_struct *task, __u32 tid, bool btf)
{
	if (use_task_storage && btf)
		return bpf_task_storage_get(&task_store, task, NULL, 0);
	return bpf_map_lookup_elem(&tasks, &tid);
}

/* watched_task for the task running now (its ids from its task_struct where it has one). */
static __always_inline struct task *watched_current(__u32 *ret_tgid, __u32 *ret_tid, bool btf, bool *ret_watched)
{
	struct task_struct *task = NULL;
	__u64 cur;

	if (use_task_storage && btf) {
		task = bpf_get_current_task_btf();
		*ret_tgid = task->tgid;
		*ret_tid = task->pid;
	} else {
		cur = bpf_get_current_pid_tgid();
		*ret_tgid = cur >> 32;
		*ret_tid = (__u32)cur;
	}
	return watched_task(task, *ret_tgid, *ret_tid, btf, ret_watched);
}

/*
 * A hook twice: tp_btf_<tp> where the kernel has BTF for the tracepoint, raw_tp_<tp>
 * otherwise; the daemon turns off the autoload of one of each pair before loading.
 * `call` sees the hook's arguments, ctx, and `btf`, a constant in each of the two (for
 * TASK_READ: the raw_tp one never dereferences its untyped pointers).
 */
#define HP_HOOK(tp, call, ...)                                  \
	SEC("tp_btf/" #tp)                                      \
	int BPF_PROG(tp_btf_##tp, __VA_ARGS__)                  \
	{                                                       \
		const bool btf __attribute__((unused)) = true;  \
                                                                \
		return call;                                    \
	}                                                       \
	SEC("raw_tp/" #tp)                                      \
	int BPF_PROG(raw_tp_##tp, __VA_ARGS__)                  \
	{                                                       \
		const bool btf __attribute__((unused)) = false; \
                                                                \
		return call;                                    \
	}

#endif /* HOSTPROF_SHARED_BPF_H */
