// SPDX-License-Identifier: GPL-2.0-only
/*
 * JSON exporter: one snapshot as a Chrome trace-event file (the JSON object format that
 * chrome://tracing, Catapult's trace viewer and ui.perfetto.dev load), laid out like
 * perf-trace-viewer: what each thread was doing, what each CPU ran.
 *
 * {"traceEvents": [...], "displayTimeUnit": "ns", "otherData": {producer, host, kernel,
 * pid, reason, start_ns, end_ns}}. Every "ts" and "dur" is in microseconds since
 * Snapshot.start_ns, written as an exact decimal with nanosecond digits (jsonw_fixed):
 * a double would round them past a few seconds.
 *
 * Rows (pid, tid) and their metadata ("M": process_name, process_sort_index, thread_name,
 * thread_sort_index):
 *   - one process per pid the snapshot names, a thread row per thread of the thread index
 *     (snapview.h: every tid but 0, the idle task) whose pid is known. Process names from
 *     Snapshot.processes, else its main thread's name;
 *   - the pseudo-process "CPUs" (pid CPUS_PID, which no task can have: PID_MAX_LIMIT) with
 *     a row "CPU n" per CPU (tid CPUS_PID + 1 + n), sorted first.
 *
 * Events:
 *   - Thread states, "X" spans on the thread's row, derived from the sched_switch rows and
 *     the wakeups merged by time (a wakeup before a switch of the same nanosecond):
 *       "Running" (cat "sched"): from the switch that put the thread on a CPU to the one
 *         that took it off, args {cpu, prio, end_state, next}: end_state is the prev_state
 *         letter of the switch-out ("R" or "R+": preempted; "S", "D", "I"...: blocked),
 *         next the task that took the CPU, "comm:tid" (as perf sched prints it);
 *       "Runnable": from a preemption (switch-out in state R or R+) or a wakeup until the
 *         switch-in, args {state, cause "preempted" with preempted_by, or "wakeup" with
 *         waker}; a wait of JSON_LONG_WAIT_NS or more is named "Runnable (long)", category
 *         "sched,long_wait", colour "terrible", so it stands out;
 *       "Blocked": from a switch-out in a sleeping state until the wakeup (WakeupTable, or
 *         the switch-in's next_wait_ns when next_wait_kind says "from its wakeup"), args
 *         {state, waker}.
 *     A span needs both of its ends observed: nothing is drawn before a thread's first
 *     event nor after its last, and Runnable and Blocked only for the threads of
 *     Snapshot.pid, the ones whose every switch was captured (another task's sched_switch
 *     rows are only those that involve a watched one). Colours ("cname") are the trace
 *     viewer's thread_state_* ones.
 *   - Syscalls: an "X" span (cat "syscall") per SyscallTable row on the thread's row, named
 *     Snapshot.syscall_names[nr] ("syscall_NR" when unknown), args {nr, arg0, arg1, arg2
 *     (hex strings: JSON numbers lose bits past 2^53), ret, cpu}.
 *   - Reclaim and compaction: an "X" span (cat "memory") per ReclaimTable row on the thread's
 *     row, named "direct reclaim", "memcg reclaim" or "compaction", args {order, gfp (hex),
 *     result, cpu}.
 *   - Lock waits: an "X" span (cat "lock") per LockTable row on the thread's row, named
 *     "lock wait: mmap_lock (rwsem read)" (the lock: "mmap_lock" when flags has 0x10000,
 *     else LockTable.name, left out when ""; in parentheses hps_lock_kind_name()), args
 *     {lock (the address, hex), flags (hex), ret, cpu}.
 *     Slices on one row must nest, and these start and end while their thread runs or
 *     waits: a state span that the start or end of a syscall, reclaim or lock wait falls
 *     into is cut there, so the states nest under them. (Those three nest among themselves
 *     as the kernel's calls do: a lock wait or a reclaim inside a syscall.)
 *   - GIL waits: an "X" span (cat "python,gil") per GilTable row on the waiter's row, named
 *     "GIL wait", args {holder ("comm:tid", "not known"), holder_function ("hold_burst
 *     (gil.py:56)", where its stack was read), first_holder (where another thread held it
 *     as the wait began), waits, blocked_ns}; it cuts the waiter's state spans like the
 *     others, and nests around its futex syscalls. Where the holder is a thread of the
 *     view, a flow ("s" then "f" with "bp": "e", name "GIL", id the row + 1) from the
 *     middle of the wait to an instant "held the GIL" (args {waiter, holder_function}) on
 *     the holder's row at the wait's end, where it dropped the GIL to the waiter.
 *   - Python garbage collections (--python-gc): an "X" span (cat "python,gc") per
 *     PythonGcTable row on its thread's row, named "Python GC (gen 2)", args {generation,
 *     collected (-1: it failed)}; it cuts the state spans like the others.
 *   - CPU rows: an "X" span per Running span, named by the task, "comm:tid", args {tid, pid,
 *     prio, end_state}; and an "X" span per IrqTable row on the row of its CPU, nested in
 *     the task it interrupted: "IRQ 41 (virtio3-rx)" (cat "irq", args {irq, handler}) or
 *     "softirq NET_RX" (cat "softirq", args {vec}), with "interrupted" ("comm:tid", flags 1)
 *     or "waiting_pid" (a thread of that process waited for the CPU, flags 2). Rows of
 *     another kind are left out.
 *   - Page faults: counter events ("C", name "page faults comm:tid": a counter belongs to
 *     a process in this format, so the name says the thread), one per FaultTable row at
 *     the start of its period, args {minor, major} (the task's own counters, on every arch;
 *     the viewer stacks them to the total), and {minor 0, major 0} at its end unless the
 *     thread's next period starts there: each period reads as a step as high as its
 *     faults.
 *   - Instants ("i", thread scope): TaskEventTable rows ("fork" on the parent with args
 *     {child_tid, child_pid, comm}, "exit", "exec" and "rename" with {comm}), migrations
 *     ("migrate 0->1"), markers (named Marker.name, args {detail}; process scope without a
 *     thread).
 *
 * The snapshot is validated first (hps_validate(), no NULL entries, no timestamp that
 * overflows 64 bits): -EINVAL, and nothing is written. Output goes through stdio as it is
 * made; memory holds an index of the threads, the slice boundaries that cut state spans
 * and the order of the fault periods, not the events. A
 * failed write stops the export at the end of the event it fell in: its -errno.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "export.h"
#include "hps.h"
#include "jsonw.h"
#include "macro.h"
#include "snapview.h"

#define JSON_LONG_WAIT_NS (3 * NSEC_PER_MSEC)
#define CPUS_PID UINT32_C(4194304) /* PID_MAX_LIMIT: above every pid and tid */
#define CPUS_NAME "CPUs"

enum { ST_UNKNOWN, ST_RUNNING, ST_RUNNABLE, ST_BLOCKED };

/* What the export keeps of a thread of the view, while it walks the switches. */
struct thread {
	const struct snapview_thread *id;
	bool watched; /* of Snapshot.pid: every one of its switches is in the table */
	uint8_t st; /* ST_*: what the thread is doing since `since` */
	bool woken; /* ST_RUNNABLE: after a wakeup, not a preemption */
	uint32_t cpu; /* ST_RUNNING: where */
	int32_t prio;
	uint32_t state; /* ST_RUNNABLE, ST_BLOCKED: prev_state of the switch-out */
	uint64_t since;
	uint32_t by_tid; /* who preempted or woke it; 0: not known */
	const char *by_comm;
	size_t cut_next, cut_end; /* where its state spans are cut: positions in json->cuts */
};

/* The start or end of a slice on a thread's row (a syscall, a reclaim, a lock wait, a GIL wait). */
struct cut {
	uint32_t tid;
	uint64_t ts;
};

/* A FaultTable row, for the walk through each thread's periods in time order. */
struct fault_ref {
	uint32_t tid;
	uint32_t idx;
	uint64_t ts;
};

struct json {
	const Hostprof__Snapshot *snap;
	FILE *out;
	int err; /* the first write error, -errno */
	struct jsonw *j;
	struct snapview view;
	struct thread *threads; /* by position in view.threads */
	struct cut *cuts; /* sorted by thread, then time */
	size_t ncuts;
	struct fault_ref *faults; /* sorted by thread, then time */
	size_t nfaults;
};

/* What a thread span says besides its times. */
struct span {
	const char *name, *cat, *cname;
	uint8_t kind; /* ST_RUNNING, ST_RUNNABLE, ST_BLOCKED */
	uint32_t cpu, state, by_tid;
	int32_t prio;
	bool woken;
	const char *by_comm;
};

/* ---- Validation ------------------------------------------------------------------------ */

/* ---- Small helpers --------------------------------------------------------------------- */

static const char *str_at(const Hostprof__Snapshot *s, uint32_t idx)
{
	const char *p = hps_str(s, idx);

	return p ? p : "";
}


/* "comm:tid" ("?:tid" when the name is not known) in buf, as snprintf() writes it. */
static const char *task_label(char *buf, size_t len, const char *comm, uint32_t tid)
{
	char num[10], *p = num + sizeof(num);
	size_t c, d;

	if (!comm || !*comm)
		comm = "?";
	do {
		*--p = (char)('0' + tid % 10);
		tid /= 10;
	} while (tid);
	c = strlen(comm);
	d = (size_t)(num + sizeof(num) - p);
	if (c + 1 + d >= len) { /* a name too long to fit: cut as snprintf cuts */
		snprintf(buf, len, "%s:%.*s", comm, (int)d, p);
		return buf;
	}
	memcpy(buf, comm, c);
	buf[c] = ':';
	memcpy(buf + c + 1, p, d);
	buf[c + 1 + d] = '\0';
	return buf;
}

/* The trace viewer's colour for a thread blocked in this state. */
static const char *blocked_cname(uint32_t state)
{
	return state == HPS_STATE_UNINTERRUPTIBLE ? "thread_state_uninterruptible" : "thread_state_sleeping";
}

static int cmp_cut(const void *a, const void *b)
{
	const struct cut *x = a, *y = b;

	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	return x->ts < y->ts ? -1 : x->ts > y->ts;
}

static int cmp_fault(const void *a, const void *b)
{
	const struct fault_ref *x = a, *y = b;

	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	if (x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	return x->idx < y->idx ? -1 : x->idx > y->idx;
}

/* Sorts and removes duplicates; returns the new length. */
static size_t sort_unique(uint32_t *v, size_t n)
{
	size_t i, m = 0;

	qsort_safe(v, n, sizeof(*v), cmp_u32);
	for (i = 0; i < n; i++)
		if (!m || v[m - 1] != v[i])
			v[m++] = v[i];
	return m;
}

#define CPU_SET_MAX 65536 /* CPU numbers below this are sorted by a bitmap, not by qsort */

/* The distinct CPU numbers of v (one per event: many times the same few), sorted. */
static size_t unique_cpus(uint32_t *v, size_t n)
{
	_cleanup_free_ uint8_t *seen = NULL;
	uint32_t max = 0;
	size_t m = 0;

	for (size_t i = 0; i < n; i++)
		max = MAX(max, v[i]);
	if (n == 0 || max >= CPU_SET_MAX || !(seen = calloc((size_t)max + 1, 1)))
		return sort_unique(v, n);
	for (size_t i = 0; i < n; i++)
		seen[v[i]] = 1;
	for (uint32_t c = 0; c <= max; c++)
		if (seen[c])
			v[m++] = c;
	return m;
}

static struct thread *thread_find(struct json *x, uint32_t tid)
{
	ssize_t k = snapview_index(&x->view, tid);

	return k < 0 ? NULL : &x->threads[k];
}

static void append(uint32_t *v, size_t *n, const uint32_t *col, size_t len)
{
	if (len) /* an empty column may be NULL */
		memcpy(v + *n, col, len * sizeof(*col));
	*n += len;
}

/* Every thread the snapshot names but the idle task, with its pid and name. */
static int build_threads(struct json *x)
{
	int r;

	r = snapview_init(x->snap, &x->view);
	if (r < 0)
		return r;
	x->threads = calloc(MAX(x->view.n_threads, (size_t)1), sizeof(*x->threads));
	if (!x->threads)
		return -ENOMEM;
	for (size_t i = 0; i < x->view.n_threads; i++)
		x->threads[i] = (struct thread){ .id = &x->view.threads[i],
						 .watched = x->view.threads[i].pid == x->snap->pid };
	return 0;
}

/* The start and end of each slice of a table (absolute start ts, duration dur) on tid's row. */
static void add_cuts(struct json *x, uint64_t start, const uint64_t *delta, const uint64_t *dur,
		     const uint32_t *tid, size_t n)
{
	uint64_t ts = start;
	size_t i;

	for (i = 0; i < n; i++) {
		ts += delta[i];
		x->cuts[x->ncuts++] = (struct cut){ .tid = tid[i], .ts = ts };
		x->cuts[x->ncuts++] = (struct cut){ .tid = tid[i], .ts = ts + dur[i] };
	}
}

#define CUT_TS_BITS 42 /* 73 minutes of ns since start_ns, under the thread's position */
#define RADIX_BITS 11

/*
 * The cuts by thread, then time. They are keys of 64 bits where they fit (the thread's
 * position in the view above the time since start_ns: every window the daemon keeps), and
 * then an LSD radix sort puts them in order in a few passes; else qsort.
 */
static void sort_cuts(struct json *x)
{
	const uint64_t start = x->snap->start_ns, limit = UINT64_C(1) << CUT_TS_BITS;
	_cleanup_free_ uint64_t *keys = NULL, *tmp = NULL;
	_cleanup_free_ size_t *count = NULL;
	size_t n = x->ncuts, nthreads = x->view.n_threads;
	unsigned int passes, shift;

	if (n < 2)
		return;
	keys = malloc(n * sizeof(*keys));
	tmp = malloc(n * sizeof(*tmp));
	count = malloc(((size_t)1 << RADIX_BITS) * sizeof(*count));
	if (!keys || !tmp || !count || nthreads + 1 >= (UINT64_C(1) << (64 - CUT_TS_BITS)))
		goto fallback;
	for (size_t i = 0; i < n; i++) {
		ssize_t k = snapview_index(&x->view, x->cuts[i].tid);
		uint64_t rel = x->cuts[i].ts - start;

		if (x->cuts[i].ts < start || rel >= limit)
			goto fallback;
		/* tids the view does not know (0) sort last, among themselves by tid and time */
		if (k < 0)
			goto fallback;
		keys[i] = (uint64_t)k << CUT_TS_BITS | rel;
	}
	passes = (64 + RADIX_BITS - 1) / RADIX_BITS;
	for (unsigned int p = 0; p < passes; p++) {
		uint64_t *t;
		size_t sum = 0;

		shift = p * RADIX_BITS;
		memset(count, 0, ((size_t)1 << RADIX_BITS) * sizeof(*count));
		for (size_t i = 0; i < n; i++)
			count[keys[i] >> shift & ((1u << RADIX_BITS) - 1)]++;
		if (count[keys[0] >> shift & ((1u << RADIX_BITS) - 1)] == n)
			continue; /* this digit is the same everywhere */
		for (size_t d = 0; d < ((size_t)1 << RADIX_BITS); d++) {
			size_t c = count[d];

			count[d] = sum;
			sum += c;
		}
		for (size_t i = 0; i < n; i++)
			tmp[count[keys[i] >> shift & ((1u << RADIX_BITS) - 1)]++] = keys[i];
		t = keys;
		keys = tmp;
		tmp = t;
	}
	for (size_t i = 0; i < n; i++)
		x->cuts[i] = (struct cut){ .tid = x->view.threads[keys[i] >> CUT_TS_BITS].tid,
					   .ts = start + (keys[i] & (limit - 1)) };
	return;
fallback:
	qsort_safe(x->cuts, n, sizeof(*x->cuts), cmp_cut);
}

/* Where the thread slices begin and end, sorted by thread and time; each thread learns its range. */
static int build_cuts(struct json *x)
{
	const Hostprof__Snapshot *s = x->snap;
	const Hostprof__SyscallTable *sc = s->syscalls;
	const Hostprof__ReclaimTable *rc = s->reclaims;
	const Hostprof__LockTable *lk = s->locks;
	const Hostprof__GilTable *gl = s->gil;
	const Hostprof__PythonGcTable *gc = s->python_gc;
	size_t i, n = (sc ? sc->n_ts_delta : 0) + (rc ? rc->n_ts_delta : 0) + (lk ? lk->n_ts_delta : 0) +
		      (gl ? gl->n_ts_delta : 0) + (gc ? gc->n_ts_delta : 0);

	if (n > SIZE_MAX / 2 / sizeof(*x->cuts))
		return -EINVAL;
	x->cuts = malloc(MAX(2 * n, (size_t)1) * sizeof(*x->cuts));
	if (!x->cuts)
		return -ENOMEM;
	if (sc)
		add_cuts(x, s->start_ns, sc->ts_delta, sc->dur_ns, sc->tid, sc->n_ts_delta);
	if (rc)
		add_cuts(x, s->start_ns, rc->ts_delta, rc->dur_ns, rc->tid, rc->n_ts_delta);
	if (lk)
		add_cuts(x, s->start_ns, lk->ts_delta, lk->dur_ns, lk->tid, lk->n_ts_delta);
	if (gl)
		add_cuts(x, s->start_ns, gl->ts_delta, gl->dur_ns, gl->tid, gl->n_ts_delta);
	if (gc)
		add_cuts(x, s->start_ns, gc->ts_delta, gc->dur_ns, gc->tid, gc->n_ts_delta);
	sort_cuts(x);
	for (i = 0; i < x->ncuts; i++) {
		struct thread *th = thread_find(x, x->cuts[i].tid);

		if (!th)
			continue;
		if (th->cut_end == 0)
			th->cut_next = i;
		th->cut_end = i + 1;
	}
	return 0;
}

/* The fault periods sorted by thread and time. */
static int build_faults(struct json *x)
{
	const Hostprof__FaultTable *t = x->snap->faults;
	uint64_t ts = x->snap->start_ns;
	size_t i, n = t ? t->n_ts_delta : 0;

	if (n > UINT32_MAX)
		return -EINVAL;
	x->faults = malloc(MAX(n, (size_t)1) * sizeof(*x->faults));
	if (!x->faults)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		ts += t->ts_delta[i];
		x->faults[i] = (struct fault_ref){ .tid = t->tid[i], .idx = (uint32_t)i, .ts = ts };
	}
	x->nfaults = n;
	qsort_safe(x->faults, n, sizeof(*x->faults), cmp_fault);
	return 0;
}

/* ---- Writing events -------------------------------------------------------------------- */

/*
 * Whether a write failed. jsonw does not report errors: stdio keeps them, and errno still
 * says why when this is asked after each event.
 */
static bool failed(struct json *x)
{
	if (!x->err && ferror(x->out))
		x->err = errno > 0 ? -errno : -EIO;
	return x->err != 0;
}

static void event_begin(struct json *x, const char *ph, const char *name, const char *cat, uint64_t pid,
			uint64_t tid, uint64_t ts)
{
	struct jsonw *j = x->j;

	jsonw_begin_object(j);
	jsonw_key(j, "name");
	jsonw_string(j, name);
	if (cat) {
		jsonw_key(j, "cat");
		jsonw_string(j, cat);
	}
	jsonw_key(j, "ph");
	jsonw_string(j, ph);
	jsonw_key(j, "ts");
	jsonw_fixed(j, (int64_t)(ts - x->snap->start_ns), 3);
	jsonw_key(j, "pid");
	jsonw_uint(j, pid);
	jsonw_key(j, "tid");
	jsonw_uint(j, tid);
}

static void metadata(struct json *x, const char *what, uint64_t pid, uint64_t tid, const char *name,
		     int64_t sort_index)
{
	struct jsonw *j = x->j;
	char sort_what[32];

	jsonw_begin_object(j);
	jsonw_key(j, "name");
	jsonw_string(j, what);
	jsonw_key(j, "ph");
	jsonw_string(j, "M");
	jsonw_key(j, "pid");
	jsonw_uint(j, pid);
	jsonw_key(j, "tid");
	jsonw_uint(j, tid);
	jsonw_key(j, "args");
	jsonw_begin_object(j);
	jsonw_key(j, "name");
	jsonw_string(j, name);
	jsonw_end_object(j);
	jsonw_end_object(j);

	snprintf(sort_what, sizeof(sort_what), "%s_sort_index",
		 !strcmp(what, "process_name") ? "process" : "thread");
	jsonw_begin_object(j);
	jsonw_key(j, "name");
	jsonw_string(j, sort_what);
	jsonw_key(j, "ph");
	jsonw_string(j, "M");
	jsonw_key(j, "pid");
	jsonw_uint(j, pid);
	jsonw_key(j, "tid");
	jsonw_uint(j, tid);
	jsonw_key(j, "args");
	jsonw_begin_object(j);
	jsonw_key(j, "sort_index");
	jsonw_int(j, sort_index);
	jsonw_end_object(j);
	jsonw_end_object(j);
}

static const char *process_name(struct json *x, uint32_t pid, char *buf, size_t len)
{
	const Hostprof__Process *p = snapview_process(&x->view, pid);

	if (p && p->comm && *p->comm)
		return p->comm;
	if (*snapview_comm(&x->view, pid)) /* its main thread's */
		return snapview_comm(&x->view, pid);
	snprintf(buf, len, "pid %" PRIu32, pid);
	return buf;
}

static int write_metadata(struct json *x)
{
	const Hostprof__Snapshot *s = x->snap;
	const Hostprof__SchedSwitchTable *sw = s->switches;
	const Hostprof__IrqTable *irq = s->irqs;
	_cleanup_free_ uint32_t *pids = NULL, *cpus = NULL;
	size_t i, npids = 0, ncpus = 0;
	char buf[32];

	pids = malloc((x->view.n_threads + s->n_processes + 1) * sizeof(*pids));
	cpus = malloc(MAX((sw ? sw->n_ts_delta : 0) + (irq ? irq->n_ts_delta : 0), (size_t)1) * sizeof(*cpus));
	if (!pids || !cpus)
		return -ENOMEM;
	for (i = 0; i < x->view.n_threads; i++)
		if (x->view.threads[i].pid)
			pids[npids++] = x->view.threads[i].pid;
	for (i = 0; i < s->n_processes; i++)
		if (s->processes[i]->pid)
			pids[npids++] = s->processes[i]->pid;
	npids = sort_unique(pids, npids);
	if (sw)
		append(cpus, &ncpus, sw->cpu, sw->n_ts_delta);
	if (irq)
		append(cpus, &ncpus, irq->cpu, irq->n_ts_delta);
	ncpus = unique_cpus(cpus, ncpus);

	if (ncpus)
		metadata(x, "process_name", CPUS_PID, 0, CPUS_NAME, 0);
	for (i = 0; i < ncpus && !failed(x); i++) {
		snprintf(buf, sizeof(buf), "CPU %" PRIu32, cpus[i]);
		metadata(x, "thread_name", CPUS_PID, (uint64_t)CPUS_PID + 1 + cpus[i], buf, cpus[i]);
	}
	for (i = 0; i < npids && !failed(x); i++)
		metadata(x, "process_name", pids[i], 0, process_name(x, pids[i], buf, sizeof(buf)),
			 pids[i] == s->pid ? 1 : 2);
	for (i = 0; i < x->view.n_threads && !failed(x); i++) {
		const struct snapview_thread *t = &x->view.threads[i];

		if (!t->pid)
			continue;
		if (*t->comm) {
			metadata(x, "thread_name", t->pid, t->tid, t->comm, t->tid);
		} else {
			snprintf(buf, sizeof(buf), "tid %" PRIu32, t->tid);
			metadata(x, "thread_name", t->pid, t->tid, buf, t->tid);
		}
	}
	return x->err;
}

static void write_syscalls(struct json *x)
{
	const Hostprof__Snapshot *s = x->snap;
	const Hostprof__SyscallTable *t = s->syscalls;
	struct jsonw *j = x->j;
	uint64_t ts = s->start_ns;
	size_t i, n = t ? t->n_ts_delta : 0;
	char buf[32];

	for (i = 0; i < n && !failed(x); i++) {
		const char *name = t->nr[i] < s->n_syscall_names ? s->syscall_names[t->nr[i]] : NULL;

		ts += t->ts_delta[i];
		if (!name || !*name) {
			snprintf(buf, sizeof(buf), "syscall_%" PRIu32, t->nr[i]);
			name = buf;
		}
		event_begin(x, "X", name, "syscall", t->pid[i], t->tid[i], ts);
		jsonw_key(j, "dur");
		jsonw_fixed(j, (int64_t)t->dur_ns[i], 3);
		jsonw_key(j, "args");
		jsonw_begin_object(j);
		jsonw_key(j, "nr");
		jsonw_uint(j, t->nr[i]);
		jsonw_hex_field(j, "arg0", t->arg0[i]);
		jsonw_hex_field(j, "arg1", t->arg1[i]);
		jsonw_hex_field(j, "arg2", t->arg2[i]);
		if (!(hps_syscall_flags(t, i) & HPS_SYSCALL_RET_UNKNOWN)) {
			jsonw_key(j, "ret");
			jsonw_int(j, t->ret[i]);
		}
		if (hps_syscall_flags(t, i) & HPS_SYSCALL_BLOCKED) {
			jsonw_key(j, "blocked");
			jsonw_bool(j, true);
		}
		jsonw_key(j, "cpu");
		jsonw_uint(j, t->cpu[i]);
		jsonw_end_object(j);
		jsonw_end_object(j);
	}
}

static void instant_begin(struct json *x, const char *name, const char *cat, uint32_t pid, uint32_t tid,
			  uint64_t ts)
{
	event_begin(x, "i", name, cat, pid, tid, ts);
	jsonw_key(x->j, "s");
	jsonw_string(x->j, tid ? "t" : "p");
	jsonw_key(x->j, "args");
	jsonw_begin_object(x->j);
}

static void instant_end(struct json *x)
{
	jsonw_end_object(x->j);
	jsonw_end_object(x->j);
}

static void write_task_events(struct json *x)
{
	const Hostprof__Snapshot *s = x->snap;
	const Hostprof__TaskEventTable *t = s->task_events;
	static const char *const names[] = {
		[HPS_TASK_FORK] = "fork",
		[HPS_TASK_EXIT] = "exit",
		[HPS_TASK_EXEC] = "exec",
		[HPS_TASK_RENAME] = "rename",
	};
	uint64_t ts = s->start_ns;
	size_t i, n = t ? t->n_ts_delta : 0;
	char buf[32];

	for (i = 0; i < n && !failed(x); i++) {
		const char *name = t->kind[i] < ARRAY_SIZE(names) ? names[t->kind[i]] : NULL;

		ts += t->ts_delta[i];
		if (!name) {
			snprintf(buf, sizeof(buf), "task_event_%" PRIu32, t->kind[i]);
			name = buf;
		}
		instant_begin(x, name, "task", t->pid[i], t->tid[i], ts);
		if (t->kind[i] == HPS_TASK_FORK) {
			jsonw_key(x->j, "child_tid");
			jsonw_uint(x->j, t->child_tid[i]);
			jsonw_key(x->j, "child_pid");
			jsonw_uint(x->j, t->child_pid[i]);
		}
		if (*str_at(s, t->comm[i])) {
			jsonw_key(x->j, "comm");
			jsonw_string(x->j, str_at(s, t->comm[i]));
		}
		instant_end(x);
	}
}

static void write_migrations(struct json *x)
{
	const Hostprof__MigrationTable *t = x->snap->migrations;
	uint64_t ts = x->snap->start_ns;
	size_t i, n = t ? t->n_ts_delta : 0;
	char name[48];

	for (i = 0; i < n && !failed(x); i++) {
		ts += t->ts_delta[i];
		snprintf(name, sizeof(name), "migrate %" PRIu32 "->%" PRIu32, t->from_cpu[i], t->to_cpu[i]);
		instant_begin(x, name, "sched", t->pid[i], t->tid[i], ts);
		jsonw_key(x->j, "from_cpu");
		jsonw_uint(x->j, t->from_cpu[i]);
		jsonw_key(x->j, "to_cpu");
		jsonw_uint(x->j, t->to_cpu[i]);
		instant_end(x);
	}
}

static void write_markers(struct json *x)
{
	const Hostprof__Snapshot *s = x->snap;
	size_t i;

	for (i = 0; i < s->n_markers && !failed(x); i++) {
		const Hostprof__Marker *m = s->markers[i];
		const struct thread *t = m->tid ? thread_find(x, m->tid) : NULL;

		instant_begin(x, m->name && *m->name ? m->name : "marker", "marker",
			      t && t->id->pid ? t->id->pid : s->pid, m->tid, m->ts);
		if (m->detail && *m->detail) {
			jsonw_key(x->j, "detail");
			jsonw_string(x->j, m->detail);
		}
		instant_end(x);
	}
}

/* "comm:tid" of a thread, "?:tid" when its name is not known. */
static void task_name(struct json *x, uint32_t tid, char *buf, size_t len)
{
	task_label(buf, len, snapview_comm(&x->view, tid), tid);
}

static void write_irqs(struct json *x)
{
	const Hostprof__Snapshot *s = x->snap;
	const Hostprof__IrqTable *t = s->irqs;
	struct jsonw *j = x->j;
	uint64_t ts = s->start_ns;
	size_t i, n = t ? t->n_ts_delta : 0;
	char name[96], task[64];

	for (i = 0; i < n && !failed(x); i++) {
		const char *what = str_at(s, t->name[i]);

		ts += t->ts_delta[i];
		if (t->kind[i] == HPS_IRQ_HARD && *what)
			snprintf(name, sizeof(name), "IRQ %" PRIu32 " (%s)", t->num[i], what);
		else if (t->kind[i] == HPS_IRQ_HARD)
			snprintf(name, sizeof(name), "IRQ %" PRIu32, t->num[i]);
		else if (t->kind[i] == HPS_IRQ_SOFT)
			snprintf(name, sizeof(name), "softirq %s", *what ? what : hps_softirq_name(t->num[i]));
		else
			continue;
		event_begin(x, "X", name, t->kind[i] == HPS_IRQ_HARD ? "irq" : "softirq", CPUS_PID,
			    (uint64_t)CPUS_PID + 1 + t->cpu[i], ts);
		jsonw_key(j, "dur");
		jsonw_fixed(j, (int64_t)t->dur_ns[i], 3);
		jsonw_key(j, "args");
		jsonw_begin_object(j);
		if (t->kind[i] == HPS_IRQ_HARD) {
			jsonw_key(j, "irq");
			jsonw_uint(j, t->num[i]);
			jsonw_key(j, "handler");
			jsonw_string(j, what);
		} else {
			jsonw_key(j, "vec");
			jsonw_uint(j, t->num[i]);
		}
		if ((t->flags[i] & HPS_IRQ_INTERRUPTED) && t->tid[i]) {
			task_name(x, t->tid[i], task, sizeof(task));
			jsonw_key(j, "interrupted");
			jsonw_string(j, task);
		}
		if (t->flags[i] & HPS_IRQ_WAITED) {
			jsonw_key(j, "waiting_pid");
			jsonw_uint(j, t->pid[i]);
		}
		jsonw_end_object(j);
		jsonw_end_object(j);
	}
}

static void write_reclaims(struct json *x)
{
	const Hostprof__ReclaimTable *t = x->snap->reclaims;
	struct jsonw *j = x->j;
	uint64_t ts = x->snap->start_ns;
	size_t i, n = t ? t->n_ts_delta : 0;

	for (i = 0; i < n && !failed(x); i++) {
		ts += t->ts_delta[i];
		event_begin(x, "X", hps_reclaim_kind_name(t->kind[i]), "memory", t->pid[i], t->tid[i], ts);
		jsonw_key(j, "dur");
		jsonw_fixed(j, (int64_t)t->dur_ns[i], 3);
		jsonw_key(j, "args");
		jsonw_begin_object(j);
		jsonw_key(j, "order");
		jsonw_int(j, t->order[i]);
		jsonw_key(j, "gfp");
		jsonw_hex(j, t->gfp[i]);
		jsonw_key(j, "result");
		jsonw_int(j, t->result[i]);
		jsonw_key(j, "cpu");
		jsonw_uint(j, t->cpu[i]);
		jsonw_end_object(j);
		jsonw_end_object(j);
	}
}

static void write_locks(struct json *x)
{
	const Hostprof__Snapshot *s = x->snap;
	const Hostprof__LockTable *t = s->locks;
	struct jsonw *j = x->j;
	uint64_t ts = s->start_ns;
	size_t i, n = t ? t->n_ts_delta : 0;
	char name[128];

	for (i = 0; i < n && !failed(x); i++) {
		ts += t->ts_delta[i];
		hps_lock_wait_name(s, i, name, sizeof(name));
		event_begin(x, "X", name, "lock", t->pid[i], t->tid[i], ts);
		jsonw_key(j, "dur");
		jsonw_fixed(j, (int64_t)t->dur_ns[i], 3);
		jsonw_key(j, "args");
		jsonw_begin_object(j);
		jsonw_key(j, "lock");
		jsonw_hex(j, t->lock[i]);
		jsonw_key(j, "flags");
		jsonw_hex(j, t->flags[i]);
		jsonw_key(j, "ret");
		jsonw_int(j, t->ret[i]);
		jsonw_key(j, "cpu");
		jsonw_uint(j, t->cpu[i]);
		jsonw_end_object(j);
		jsonw_end_object(j);
	}
}

/* The holder's function of GilTable row i, "hold_burst (gil.py:56)"; false: not read. */
static bool gil_function(const Hostprof__GilTable *g, size_t i, char *buf, size_t len)
{
	const Hostprof__GilStack *st = g->holder_stack[i] ? g->stacks[g->holder_stack[i] - 1] : NULL;
	const Hostprof__PythonFrame *fr = st && st->n_frames ? g->frames[st->frames[0]] : NULL;

	if (!fr)
		return false;
	snprintf(buf, len, "%s (%s:%" PRIu32 ")", fr->function ? fr->function : "?", fr->file ? fr->file : "?",
		 fr->line);
	return true;
}

/*
 * GIL waits: a "GIL wait" span on the waiter's row and, where the holder is a thread of
 * the view, a flow ("s" inside the wait, "f" on the holder's row at its end, where an
 * instant "held the GIL" stands: the holder dropped the GIL to the waiter there).
 */
static void write_gil(struct json *x)
{
	const Hostprof__Snapshot *s = x->snap;
	const Hostprof__GilTable *g = s->gil;
	struct jsonw *j = x->j;
	uint64_t ts = s->start_ns;
	size_t i, n = g ? g->n_ts_delta : 0;
	char holder[64], waiter[64], fn[256];

	for (i = 0; i < n && !failed(x); i++) {
		bool known = g->holder_tid[i] && snapview_index(&x->view, g->holder_tid[i]) >= 0;
		bool has_fn = gil_function(g, i, fn, sizeof(fn));
		uint64_t end = ts + g->ts_delta[i] + g->dur_ns[i];

		ts += g->ts_delta[i];
		event_begin(x, "X", "GIL wait", "python,gil", g->pid[i], g->tid[i], ts);
		jsonw_key(j, "dur");
		jsonw_fixed(j, (int64_t)g->dur_ns[i], 3);
		jsonw_key(j, "args");
		jsonw_begin_object(j);
		if (g->holder_tid[i]) {
			task_name(x, g->holder_tid[i], holder, sizeof(holder));
			jsonw_string_field(j, "holder", holder);
		} else {
			jsonw_string_field(j, "holder", "not known");
		}
		if (has_fn)
			jsonw_string_field(j, "holder_function", fn);
		if (g->first_holder_tid[i] && g->first_holder_tid[i] != g->holder_tid[i]) {
			task_name(x, g->first_holder_tid[i], holder, sizeof(holder));
			jsonw_string_field(j, "first_holder", holder);
		}
		jsonw_uint_field(j, "waits", g->waits[i]);
		jsonw_uint_field(j, "blocked_ns", g->blocked_ns[i]);
		jsonw_end_object(j);
		jsonw_end_object(j);
		if (!known)
			continue;
		/* the flow starts inside the wait, at its middle: it binds to the wait's span */
		event_begin(x, "s", "GIL", "python,gil", g->pid[i], g->tid[i], ts + g->dur_ns[i] / 2);
		jsonw_uint_field(j, "id", i + 1);
		jsonw_end_object(j);
		task_name(x, g->tid[i], waiter, sizeof(waiter));
		instant_begin(x, "held the GIL", "python,gil", g->pid[i], g->holder_tid[i], end);
		jsonw_string_field(j, "waiter", waiter);
		if (has_fn)
			jsonw_string_field(j, "holder_function", fn);
		instant_end(x);
		event_begin(x, "f", "GIL", "python,gil", g->pid[i], g->holder_tid[i], end);
		jsonw_uint_field(j, "id", i + 1);
		jsonw_string_field(j, "bp", "e");
		jsonw_end_object(j);
	}
}

/* Python garbage collections (--python-gc): "Python GC (gen N)" on the thread's row. */
static void write_pygc(struct json *x)
{
	const Hostprof__Snapshot *s = x->snap;
	const Hostprof__PythonGcTable *g = s->python_gc;
	struct jsonw *j = x->j;
	uint64_t ts = s->start_ns;
	size_t i, n = g ? g->n_ts_delta : 0;
	char name[32];

	for (i = 0; i < n && !failed(x); i++) {
		ts += g->ts_delta[i];
		snprintf(name, sizeof(name), "Python GC (gen %" PRId32 ")", g->generation[i]);
		event_begin(x, "X", name, "python,gc", g->pid[i], g->tid[i], ts);
		jsonw_key(j, "dur");
		jsonw_fixed(j, (int64_t)g->dur_ns[i], 3);
		jsonw_key(j, "args");
		jsonw_begin_object(j);
		jsonw_key(j, "generation");
		jsonw_int(j, g->generation[i]);
		jsonw_key(j, "collected");
		jsonw_int(j, g->collected[i]);
		jsonw_end_object(j);
		jsonw_end_object(j);
	}
}

static void fault_counter(struct json *x, const char *name, uint32_t pid, uint32_t tid, uint64_t ts,
			  uint32_t minor, uint32_t major)
{
	struct jsonw *j = x->j;

	event_begin(x, "C", name, "memory", pid, tid, ts);
	jsonw_key(j, "args");
	jsonw_begin_object(j);
	jsonw_key(j, "minor");
	jsonw_uint(j, minor);
	jsonw_key(j, "major");
	jsonw_uint(j, major);
	jsonw_end_object(j);
	jsonw_end_object(j);
}

/* Each thread's fault periods in time order: a step per period, back to 0 after a gap. */
static void write_faults(struct json *x)
{
	const Hostprof__FaultTable *t = x->snap->faults;
	const struct fault_ref *f = x->faults;
	char name[96], task[64];
	size_t i;

	for (i = 0; i < x->nfaults && !failed(x); i++) {
		uint32_t k = f[i].idx;
		uint64_t end = f[i].ts + t->dur_ns[k];

		task_name(x, t->tid[k], task, sizeof(task));
		snprintf(name, sizeof(name), "page faults %s", task);
		fault_counter(x, name, t->pid[k], t->tid[k], f[i].ts, t->minor[k], t->major[k]);
		if (i + 1 < x->nfaults && f[i + 1].tid == f[i].tid && f[i + 1].ts <= end)
			continue;
		fault_counter(x, name, t->pid[k], t->tid[k], end, 0, 0);
	}
}

/* ---- Thread states and CPU rows -------------------------------------------------------- */

static void task_field(struct jsonw *j, const char *name, const char *comm, uint32_t tid)
{
	char buf[64];

	jsonw_string_field(j, name, task_label(buf, sizeof(buf), comm, tid));
}

static void span_piece(struct json *x, const struct thread *t, const struct span *sp, uint64_t start,
		       uint64_t end)
{
	struct jsonw *j = x->j;
	char buf[16];

	event_begin(x, "X", sp->name, sp->cat, t->id->pid, t->id->tid, start);
	jsonw_key(j, "dur");
	jsonw_fixed(j, (int64_t)(end - start), 3);
	jsonw_key(j, "cname");
	jsonw_string(j, sp->cname);
	jsonw_key(j, "args");
	jsonw_begin_object(j);
	switch (sp->kind) {
	case ST_RUNNING:
		jsonw_key(j, "cpu");
		jsonw_uint(j, sp->cpu);
		jsonw_key(j, "prio");
		jsonw_int(j, sp->prio);
		jsonw_key(j, "end_state");
		jsonw_string(j, hps_state_name(sp->state, buf, sizeof(buf)));
		task_field(j, "next", sp->by_comm, sp->by_tid);
		break;
	case ST_RUNNABLE:
		jsonw_key(j, "state");
		jsonw_string(j, sp->woken ? "R" : hps_state_name(sp->state, buf, sizeof(buf)));
		jsonw_key(j, "cause");
		jsonw_string(j, sp->woken ? "wakeup" : "preempted");
		if (sp->by_tid)
			task_field(j, sp->woken ? "waker" : "preempted_by", sp->by_comm, sp->by_tid);
		break;
	case ST_BLOCKED:
		jsonw_key(j, "state");
		jsonw_string(j, hps_state_name(sp->state, buf, sizeof(buf)));
		if (sp->by_tid)
			task_field(j, "waker", sp->by_comm, sp->by_tid);
		break;
	}
	jsonw_end_object(j);
	jsonw_end_object(j);
}

/*
 * A span on the thread's row, cut where one of the thread's syscalls, reclaims or lock waits
 * begins or ends inside it, so that it nests under them. Spans of a thread come in time
 * order, and so does the cursor into its cuts.
 */
static void thread_span(struct json *x, struct thread *t, const struct span *sp, uint64_t start, uint64_t end)
{
	uint64_t cur = start;

	if (end <= start)
		return;
	while (t->cut_next < t->cut_end && x->cuts[t->cut_next].ts <= start)
		t->cut_next++;
	for (; t->cut_next < t->cut_end && x->cuts[t->cut_next].ts < end; t->cut_next++) {
		uint64_t at = x->cuts[t->cut_next].ts;

		if (at > cur) {
			span_piece(x, t, sp, cur, at);
			cur = at;
		}
	}
	span_piece(x, t, sp, cur, end);
}

static void cpu_span(struct json *x, const struct thread *t, uint32_t end_state, uint64_t end)
{
	struct jsonw *j = x->j;
	char name[64], buf[16];

	task_label(name, sizeof(name), t->id->comm, t->id->tid);
	event_begin(x, "X", name, "cpu", CPUS_PID, (uint64_t)CPUS_PID + 1 + t->cpu, t->since);
	jsonw_key(j, "dur");
	jsonw_fixed(j, (int64_t)(end - t->since), 3);
	jsonw_key(j, "cname");
	jsonw_string(j, "thread_state_running");
	jsonw_key(j, "args");
	jsonw_begin_object(j);
	jsonw_key(j, "tid");
	jsonw_uint(j, t->id->tid);
	jsonw_key(j, "pid");
	jsonw_uint(j, t->id->pid);
	jsonw_key(j, "prio");
	jsonw_int(j, t->prio);
	jsonw_key(j, "end_state");
	jsonw_string(j, hps_state_name(end_state, buf, sizeof(buf)));
	jsonw_end_object(j);
	jsonw_end_object(j);
}

static void runnable_span(struct json *x, struct thread *t, uint64_t start, uint64_t end)
{
	bool long_wait = end - start >= JSON_LONG_WAIT_NS;
	struct span sp = {
		.name = long_wait ? "Runnable (long)" : "Runnable",
		.cat = long_wait ? "sched,long_wait" : "sched",
		.cname = long_wait ? "terrible" : "thread_state_runnable",
		.kind = ST_RUNNABLE,
		.state = t->state,
		.woken = t->woken,
		.by_tid = t->by_tid,
		.by_comm = t->by_comm,
	};

	thread_span(x, t, &sp, start, end);
}

static void blocked_span(struct json *x, struct thread *t, uint64_t end, uint32_t waker_tid,
			 const char *waker_comm)
{
	struct span sp = {
		.name = "Blocked",
		.cat = "sched",
		.cname = blocked_cname(t->state),
		.kind = ST_BLOCKED,
		.state = t->state,
		.by_tid = waker_tid,
		.by_comm = waker_comm,
	};

	thread_span(x, t, &sp, t->since, end);
}

static void on_wakeup(struct json *x, size_t i, uint64_t ts)
{
	const Hostprof__WakeupTable *wk = x->snap->wakeups;
	struct thread *t = thread_find(x, wk->tid[i]);
	const char *waker_comm = str_at(x->snap, wk->waker_comm[i]);

	if (!t || !t->watched)
		return;
	if (t->st == ST_BLOCKED)
		blocked_span(x, t, ts, wk->waker_tid[i], waker_comm);
	else if (t->st != ST_UNKNOWN)
		return; /* running or runnable already: nothing changes */
	t->st = ST_RUNNABLE;
	t->woken = true;
	t->by_tid = wk->waker_tid[i];
	t->by_comm = waker_comm;
	t->since = ts;
}

static void on_switch_out(struct json *x, size_t i, uint64_t ts)
{
	const Hostprof__Snapshot *s = x->snap;
	const Hostprof__SchedSwitchTable *sw = s->switches;
	struct thread *t = thread_find(x, sw->prev_tid[i]);

	if (!t)
		return;
	if (t->st == ST_RUNNING && t->cpu == sw->cpu[i] && ts > t->since) {
		struct span sp = {
			.name = "Running",
			.cat = "sched",
			.cname = "thread_state_running",
			.kind = ST_RUNNING,
			.cpu = t->cpu,
			.prio = t->prio,
			.state = sw->prev_state[i],
			.by_tid = sw->next_tid[i],
			.by_comm = str_at(s, sw->next_comm[i]),
		};

		thread_span(x, t, &sp, t->since, ts);
		cpu_span(x, t, sw->prev_state[i], ts);
	}
	t->st = HPS_STATE_RUNNABLE(sw->prev_state[i]) ? ST_RUNNABLE : ST_BLOCKED;
	t->woken = false;
	t->state = sw->prev_state[i];
	t->by_tid = sw->next_tid[i];
	t->by_comm = str_at(s, sw->next_comm[i]);
	t->since = ts;
}

static void on_switch_in(struct json *x, size_t i, uint64_t ts)
{
	const Hostprof__Snapshot *s = x->snap;
	const Hostprof__SchedSwitchTable *sw = s->switches;
	struct thread *t = thread_find(x, sw->next_tid[i]);
	uint64_t wait = sw->n_next_wait_ns ? sw->next_wait_ns[i] : 0;
	uint32_t kind = sw->n_next_wait_kind ? sw->next_wait_kind[i] : 0;

	if (!t)
		return;
	if (t->watched) {
		switch (t->st) {
		case ST_RUNNABLE:
			runnable_span(x, t, t->since, ts);
			break;
		case ST_BLOCKED:
			/* woken by what the wakeup table did not keep: the wait says when */
			if (kind == HPS_WAIT_WAKEUP && wait && wait <= ts - t->since) {
				blocked_span(x, t, ts - wait, 0, NULL);
				t->woken = true;
				t->by_tid = 0;
				runnable_span(x, t, ts - wait, ts);
			} else {
				blocked_span(x, t, ts, 0, NULL);
			}
			break;
		case ST_UNKNOWN:
			/* its first event: the wait measured in the kernel is still known */
			if ((kind == HPS_WAIT_WAKEUP || kind == HPS_WAIT_PREEMPT) && wait &&
			    wait <= ts - s->start_ns) {
				t->woken = kind == HPS_WAIT_WAKEUP;
				t->state = HPS_STATE_RUNNING;
				t->by_tid = 0;
				runnable_span(x, t, ts - wait, ts);
			}
			break;
		}
	}
	t->st = ST_RUNNING;
	t->cpu = sw->cpu[i];
	t->prio = sw->next_prio[i];
	t->since = ts;
}

static void write_sched(struct json *x)
{
	const Hostprof__SchedSwitchTable *sw = x->snap->switches;
	const Hostprof__WakeupTable *wk = x->snap->wakeups;
	uint64_t ts_sw = x->snap->start_ns, ts_wk = x->snap->start_ns;
	size_t i = 0, k = 0, nsw = sw ? sw->n_ts_delta : 0, nwk = wk ? wk->n_ts_delta : 0;

	if (nsw)
		ts_sw += sw->ts_delta[0];
	if (nwk)
		ts_wk += wk->ts_delta[0];
	while ((i < nsw || k < nwk) && !failed(x)) {
		if (k < nwk && (i == nsw || ts_wk <= ts_sw)) {
			on_wakeup(x, k, ts_wk);
			if (++k < nwk)
				ts_wk += wk->ts_delta[k];
		} else {
			if (sw->prev_tid[i])
				on_switch_out(x, i, ts_sw);
			if (sw->next_tid[i])
				on_switch_in(x, i, ts_sw);
			if (++i < nsw)
				ts_sw += sw->ts_delta[i];
		}
	}
}

/* ---- The whole file -------------------------------------------------------------------- */

static void write_other_data(struct json *x)
{
	const Hostprof__Snapshot *s = x->snap;
	struct jsonw *j = x->j;

	jsonw_key(j, "otherData");
	jsonw_begin_object(j);
	if (s->producer) {
		jsonw_key(j, "producer");
		jsonw_string(j, s->producer);
	}
	if (s->host) {
		if (s->host->hostname) {
			jsonw_key(j, "hostname");
			jsonw_string(j, s->host->hostname);
		}
		if (s->host->kernel_release) {
			jsonw_key(j, "kernel");
			jsonw_string(j, s->host->kernel_release);
		}
		jsonw_key(j, "ncpus");
		jsonw_uint(j, s->host->ncpus);
	}
	jsonw_key(j, "pid");
	jsonw_uint(j, s->pid);
	if (s->reason) {
		jsonw_key(j, "reason");
		jsonw_string(j, s->reason);
	}
	jsonw_key(j, "start_ns");
	jsonw_uint(j, s->start_ns);
	jsonw_key(j, "end_ns");
	jsonw_uint(j, s->end_ns);
	jsonw_key(j, "clock");
	jsonw_string(j, "CLOCK_BOOTTIME; ts 0 = start_ns");
	jsonw_end_object(j);
}

static int write_json(struct json *x)
{
	struct jsonw *j = x->j;
	int r;

	r = build_threads(x);
	if (r < 0)
		return r;
	r = build_cuts(x);
	if (r < 0)
		return r;
	r = build_faults(x);
	if (r < 0)
		return r;

	jsonw_begin_object(j);
	jsonw_key(j, "traceEvents");
	jsonw_begin_array(j);
	r = write_metadata(x);
	if (r < 0)
		return r;
	write_syscalls(x);
	write_reclaims(x);
	write_locks(x);
	write_gil(x);
	write_pygc(x);
	write_task_events(x);
	write_migrations(x);
	write_markers(x);
	write_irqs(x);
	write_faults(x);
	write_sched(x);
	jsonw_end_array(j);
	jsonw_key(j, "displayTimeUnit");
	jsonw_string(j, "ns");
	write_other_data(x);
	jsonw_end_object(j);
	fputc('\n', x->out);
	if (failed(x))
		return x->err;
	errno = 0;
	if (fflush(x->out) == EOF)
		x->err = negative_errno();
	failed(x);
	return x->err;
}

static void json_free(struct json *x)
{
	jsonw_free(x->j);
	snapview_free(&x->view);
	free(x->threads);
	free(x->cuts);
	free(x->faults);
}

int snapshot_export_json(const Hostprof__Snapshot *snap, FILE *out)
{
	_cleanup_(json_free) struct json x = { .snap = snap, .out = out };
	int r;

	if (!snap || !out)
		return -EINVAL;
	r = hps_validate(snap);
	if (r < 0)
		return r;
	if (ferror(out)) /* an earlier error would be taken for ours */
		return -EIO;
	x.j = jsonw_new(out);
	if (!x.j)
		return -ENOMEM;

	return write_json(&x);
}
