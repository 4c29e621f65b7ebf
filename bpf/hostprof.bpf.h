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
extern struct hp_glob globs[HP_MAX_GLOBS];
extern __u32 nr_globs;
extern __u64 syscall_min_ns, offcpu_min_ns, irq_min_ns, lock_min_ns;
extern __u64 cpus_mask[HP_MAX_CPUS / 64];
extern __u32 cpus_any, intf_mask;
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

HP_MAP(tasks, BPF_MAP_TYPE_HASH, HP_MAX_TASKS, __u32, struct task);

HP_MAP(syscall_hist, BPF_MAP_TYPE_HASH, 16384, struct hp_hist_key, struct hp_hist);

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
