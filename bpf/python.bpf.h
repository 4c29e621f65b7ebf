/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * BPF-only: the Python stack of the current thread of a CPython 3.8-3.13 process, walked
 * from its thread state and handed over as (code object, instruction word) pairs
 * (struct hp_pystack in hostprof.h); the daemon makes names, files and lines of them
 * (daemon/python/), where every pointer is checked against the interpreter's own types.
 * Here nothing is trusted either: every read is bpf_probe_read_user (a fault is a failed
 * read, never a crash), every chain is bounded (bpf_loop), and a walk that stops at
 * something unreadable says so (HP_PY_READ_FAIL).
 *
 * Gate: py_filter[tgid & mask] (a byte in .bss, set by the daemon for the processes it
 * found to be CPython) before the py_procs hash: a process that is not Python pays one
 * byte load.
 *
 * Which thread state is this thread's: the interpreter's list of them (the main
 * interpreter's threads.head, then each one's next), matched by the thread's tid in its
 * own pid namespace: 3.11+ keep native_thread_id in the thread state; before, thread_id
 * is the thread's pthread_t, the address of glibc's struct pthread, whose tid field is
 * at the offset glibc publishes for debuggers. Not the TLS: 3.8-3.11 keep the current
 * thread state in a pthread key (autoTSSkey), which would need glibc's private layout
 * of the key blocks, and 3.12+ in a C11 thread-local (_Py_tss_tstate) whose TLS offset is
 * only in the symbols Debian strips; the list is the interpreter's own data, laid out by
 * the same checked table as the frames, the same on every libc and architecture, and
 * holds every thread that has a thread state, with or without the GIL. A thread's state
 * is cached (py_tstates, by tid) and checked on every use: the cached state must still
 * name this thread; a thread with none (a native thread) is looked for again after
 * HP_PY_MISS_RETRY_NS.
 *
 * The interface, for other programs (a GIL holder's stack): py_proc_of(tgid) says
 * whether and how the process is walked; py_thread_state() finds the current thread's
 * state; py_walk() walks any thread state's frames into pairs; py_emit() does all three
 * and writes the record.
 */
#ifndef HOSTPROF_PYTHON_BPF_H
#define HOSTPROF_PYTHON_BPF_H

#include "hostprof.bpf.h"

extern __u8 py_filter[HP_FILTER_SIZE];

HP_MAP(py_procs, BPF_MAP_TYPE_HASH, HP_MAX_WATCHED, __u32, struct hp_py_proc);

/* A thread's state (tstate 0: none found at miss_ts), and what names it as this thread's. */
struct py_tcache {
	__u64 tstate;
	__u64 miss_ts;
	__u64 ident; /* what the thread state holds at ts_tid: native tid (3.11+) or pthread_t */
	__u32 pid;
	__u32 pad;
};

HP_MAP(py_tstates, BPF_MAP_TYPE_LRU_HASH, HP_MAX_TASKS, __u32, struct py_tcache);
HP_MAP(py_stats, BPF_MAP_TYPE_PERCPU_ARRAY, HP_PYSTAT_MAX, __u32, __u64);

#define HP_PY_MISS_RETRY_NS (1000 * 1000 * 1000ULL)
#define HP_PY_MAX_THREADS 1024 /* thread states looked at at most (hp_py_proc.max_threads) */

static __always_inline void py_stat_add(__u32 idx, __u64 n)
{
	__u64 *v = bpf_map_lookup_elem(&py_stats, &idx);

	if (v)
		*v += n;
}

static __always_inline void py_stat_inc(__u32 idx)
{
	py_stat_add(idx, 1);
}

static __always_inline const struct hp_py_proc *py_proc_of(__u32 tgid)
{
	if (!tgid || !py_filter[tgid & (HP_FILTER_SIZE - 1)])
		return NULL;
	return bpf_map_lookup_elem(&py_procs, &tgid);
}

/* Fields of a head read into buf (offsets the daemon checked to lie within HP_PY_SPAN_MAX). */
#define PY_U64(buf, off) (*(__u64 *)((buf) + ((off) & (HP_PY_SPAN_MAX - 8))))
#define PY_U32(buf, off) (*(__u32 *)((buf) + ((off) & (HP_PY_SPAN_MAX - 4))))
#define PY_U8(buf, off) (*(__u8 *)((buf) + ((off) & (HP_PY_SPAN_MAX - 1))))

static __always_inline bool py_ptr_ok(__u64 p)
{
	return p && !(p & 7) && p < (1ULL << 56);
}

/* The head of the object at addr, span bytes (at most HP_PY_SPAN_MAX); 0 or < 0. */
static __always_inline long py_read_head(__u8 *buf, __u32 span, __u64 addr)
{
	if (!py_ptr_ok(addr))
		return -1;
	if (span > HP_PY_SPAN_MAX)
		span = HP_PY_SPAN_MAX;
	if (span < 8)
		span = 8;
	return bpf_probe_read_user(buf, span, (void *)addr);
}

/* The thread's tid in its own pid namespace, which the interpreter and glibc know it by. */
static __always_inline __u32 py_ns_tid(struct task_struct *task, __u32 tid)
{
	struct pid *p = BPF_CORE_READ(task, thread_pid);
	unsigned int level = BPF_CORE_READ(p, level);
	int nr = 0;

	if (!level)
		return tid;
	bpf_probe_read_kernel(&nr, sizeof(nr), &p->numbers[level & 31].nr);
	return nr;
}

/* What the walk reads of a thread state: three fields, three reads (they lie far apart). */
struct py_ts {
	__u64 next, ident, frame;
};

static __always_inline long py_read_ts(const struct hp_py_proc *pp, __u64 ts, struct py_ts *ret, bool next)
{
	if (!py_ptr_ok(ts))
		return -1;
	if (bpf_probe_read_user(&ret->ident, sizeof(ret->ident), (void *)(ts + pp->ts_tid)) ||
	    bpf_probe_read_user(&ret->frame, sizeof(ret->frame), (void *)(ts + pp->ts_frame)))
		return -1;
	if (next && bpf_probe_read_user(&ret->next, sizeof(ret->next), (void *)(ts + pp->ts_next)))
		return -1;
	return 0;
}

/* Whether a thread state with this ident is the thread's: native_thread_id, or the pthread_t's tid. */
static __always_inline bool py_ident_is(const struct hp_py_proc *pp, __u64 ident, __u32 ns_tid)
{
	__u32 tid = 0;

	if (pp->flags & HP_PY_NATIVE_TID)
		return (__u32)ident == ns_tid && ident >> 32 == 0;
	if (!py_ptr_ok(ident) || bpf_probe_read_user(&tid, sizeof(tid), (void *)(ident + pp->pthread_tid_off)))
		return false;
	return tid == ns_tid;
}

struct py_scan {
	const struct hp_py_proc *pp;
	__u64 ts;    /* the thread state looked at next */
	__u64 found; /* this thread's */
	struct py_ts head;
	__u32 ns_tid;
	__u32 left; /* max_threads */
};

static long py_scan_step(__u32 i, void *arg)
{
	struct py_scan *c = arg;
	const struct hp_py_proc *pp = c->pp;
	struct py_ts h = {};

	if (!c->ts || !c->left)
		return 1;
	c->left--;
	if (py_read_ts(pp, c->ts, &h, true))
		return 1;
	if (py_ident_is(pp, h.ident, c->ns_tid)) {
		c->found = c->ts;
		c->head = h;
		return 1;
	}
	c->ts = h.next;
	return 0;
}

/*
 * The current thread's state (task: the current task), 0 when it has none (a thread
 * that never ran Python) or it cannot be read; *head: what was read of it.
 */
static __always_inline __u64 py_thread_state(const struct hp_py_proc *pp, struct task_struct *task, __u32 pid,
					     __u32 tid, struct py_ts *head)
{
	struct py_tcache *tc = bpf_map_lookup_elem(&py_tstates, &tid), fresh = {};
	struct py_scan c = { .pp = pp };
	__u64 now = 0;

	if (tc && tc->pid == pid) {
		if (tc->tstate) {
			/* still this thread's: it holds what it held when it was found */
			if (!py_read_ts(pp, tc->tstate, head, false) && head->ident == tc->ident)
				return tc->tstate;
		} else {
			now = bpf_ktime_get_boot_ns();
			if (now - tc->miss_ts < HP_PY_MISS_RETRY_NS)
				return 0;
		}
	}
	py_stat_inc(HP_PYSTAT_SCANS);
	c.ns_tid = py_ns_tid(task, tid);
	c.left = pp->max_threads < HP_PY_MAX_THREADS ? pp->max_threads : HP_PY_MAX_THREADS;
	if (bpf_probe_read_user(&c.ts, sizeof(c.ts), (void *)pp->threads_head))
		return 0;
	bpf_loop(HP_PY_MAX_THREADS, py_scan_step, &c, 0);
	fresh.pid = pid;
	fresh.tstate = c.found;
	fresh.ident = c.head.ident;
	if (!c.found)
		fresh.miss_ts = now ? now : bpf_ktime_get_boot_ns();
	bpf_map_update_elem(&py_tstates, &tid, &fresh, BPF_ANY);
	*head = c.head;
	return c.found;
}

struct py_walk_ctx {
	const struct hp_py_proc *pp;
	__u64 *out; /* 2 * HP_PY_MAX_FRAMES words */
	__u64 frame;
	__u64 mark; /* loops: the frame seen at the last power of two (Brent) */
	__u32 n;
	__u8 flags;
};

static long py_walk_step(__u32 i, void *arg)
{
	struct py_walk_ctx *c = arg;
	const struct hp_py_proc *pp = c->pp;
	__u8 buf[HP_PY_SPAN_MAX] = {};
	__u64 code, word;
	__u32 n = c->n;

	if (!c->frame)
		return 1;
	if (n >= HP_PY_MAX_FRAMES) {
		c->flags |= HP_PY_TRUNC;
		return 1;
	}
	if (c->frame == c->mark) {
		c->flags |= HP_PY_LOOP;
		return 1;
	}
	if (!(n & (n + 1)))
		c->mark = c->frame; /* at 0, 1, 3, 7, ...: a loop is met within twice its length */
	if (py_read_head(buf, pp->frame_span, c->frame)) {
		c->flags |= HP_PY_READ_FAIL;
		return 1;
	}
	code = PY_U64(buf, pp->fr_code);
	if (pp->flags & HP_PY_INSTR_INT)
		word = PY_U32(buf, pp->fr_instr);
	else
		word = PY_U64(buf, pp->fr_instr) & HP_PY_INSTR_MASK;
	if (pp->flags & HP_PY_HAS_OWNER)
		word |= (__u64)(PY_U8(buf, pp->fr_owner) & 0x7f) << 56;
	if ((pp->flags & HP_PY_HAS_ENTRY) && PY_U8(buf, pp->fr_is_entry))
		word |= HP_PY_INSTR_ENTRY;
	c->out[(2 * n) & (2 * HP_PY_MAX_FRAMES - 1)] = code;
	c->out[(2 * n + 1) & (2 * HP_PY_MAX_FRAMES - 1)] = word;
	c->n = n + 1;
	c->frame = PY_U64(buf, pp->fr_back);
	return 0;
}

/*
 * The frames of a thread state (what py_read_ts read of it), innermost first, into out[2 *
 * HP_PY_MAX_FRAMES]: how many; *flags gets HP_PY_TRUNC, HP_PY_READ_FAIL.
 */
static __always_inline __u32 py_walk(const struct hp_py_proc *pp, const struct py_ts *head, __u64 *out,
				      __u8 *flags)
{
	struct py_walk_ctx c = { .pp = pp, .out = out };

	c.frame = head->frame;
	if ((pp->flags & HP_PY_HAS_CFRAME) && c.frame &&
	    (!py_ptr_ok(c.frame) ||
	     bpf_probe_read_user(&c.frame, sizeof(c.frame), (void *)(c.frame + pp->ts_cframe_frame)))) {
		*flags |= HP_PY_READ_FAIL;
		return 0;
	}
	bpf_loop(HP_PY_MAX_FRAMES + 1, py_walk_step, &c, 0);
	*flags |= c.flags;
	return c.n;
}

/*
 * The current thread's Python stack as an HP_EV_PYSTACK record for the sample or off-CPU
 * interval (kind) at key_ts, built in a scratch slot of its own. Nothing when the thread
 * has no thread state (counted), or when the slot or the ring is not there (counted).
 */
static __always_inline void py_emit_walk(const struct hp_py_proc *pp, __u8 kind, __u64 key_ts, __u32 pid,
					 __u32 tid)
{
	struct task_struct *task = (struct task_struct *)bpf_get_current_task();
	struct py_ts head = {};
	struct hp_pystack *e;
	struct scratch *s;
	__u64 ts;
	__u32 n, size;

	py_stat_inc(HP_PYSTAT_WALKS);
	ts = py_thread_state(pp, task, pid, tid, &head);
	if (!ts) {
		py_stat_inc(HP_PYSTAT_NO_TSTATE);
		return;
	}
	e = scratch_get(&s);
	if (!e)
		return;
	fill_hdr(&e->hdr, HP_EV_PYSTACK, 0, bpf_ktime_get_boot_ns());
	e->key_ts = key_ts;
	e->tid = tid;
	e->pid = pid;
	e->kind = kind;
	e->flags = 0;
	e->pad = 0;
	n = py_walk(pp, &head, e->frames, &e->flags);
	if (e->flags & HP_PY_READ_FAIL)
		py_stat_inc(HP_PYSTAT_READ_FAIL);
	/* in a form the verifier can bound */
	size = sizeof(*e) + (n & (HP_PY_MAX_FRAMES - 1)) * 2 * sizeof(__u64);
	if (n >= HP_PY_MAX_FRAMES) {
		n = HP_PY_MAX_FRAMES;
		size = sizeof(*e) + HP_PY_MAX_FRAMES * 2 * sizeof(__u64);
	}
	barrier_var(size);
	e->n_frames = n;
	e->hdr.size = size;
	ring_output(e, size);
	scratch_put(s);
}

/* py_emit_walk, timed: its cost per sample and per off-CPU interval is in py_stats. */
static __always_inline void py_emit(const struct hp_py_proc *pp, __u8 kind, __u64 key_ts, __u32 pid, __u32 tid)
{
	__u64 t0 = bpf_ktime_get_ns();

	py_emit_walk(pp, kind, key_ts, pid, tid);
	if (kind == HP_PY_FOR_OFFCPU)
		py_stat_inc(HP_PYSTAT_OFFCPU);
	py_stat_add(kind == HP_PY_FOR_OFFCPU ? HP_PYSTAT_NS_OFFCPU : HP_PYSTAT_NS_SAMPLE, bpf_ktime_get_ns() - t0);
}

#endif /* HOSTPROF_PYTHON_BPF_H */
