// SPDX-License-Identifier: GPL-2.0-only
/*
 * Where each watched thread's time went (report_internal.h: enum cause). The window is
 * cut, for each thread, into pieces that follow one another without a gap or an overlap,
 * each with one cause and one agent (who or what caused it); their sums by cause and by
 * agent are the report's breakdown, and their runs of lost time its stall episodes.
 *
 * The pieces follow the thread's switches:
 *  - from a switch-in to the next switch-out it ran, but for what interference took from
 *    it meanwhile: an interrupt on its CPU (IrqTable rows of the thread; a hard IRQ nested
 *    in a softirq is inside the softirq's piece), a contended kernel lock it spun on
 *    (LockTable), reclaim or compaction it did in its own allocation (ReclaimTable);
 *  - switched out runnable (R, R+), until switched in again: cut by the tasks that ran on
 *    that CPU meanwhile (the capture records every switch on a CPU where a watched thread
 *    waits preempted); after a migration during the wait, the task that ran before it on
 *    the CPU where it ran again. An interrupt that ran there meanwhile delayed that task,
 *    not the thread, but on an idle CPU it is what the thread waited for (IrqTable rows
 *    flagged as run while a thread waited);
 *  - switched out blocked (S, D...), until its wakeup: a lock wait or reclaim inside it
 *    where the tables have one; else, asleep in a page fault when its kernel stack
 *    (OffCpuTable, for intervals at or above offcpu_min_ns) is in the fault path; else
 *    blocked, in the syscall it was in (SyscallTable, else the syscall's entry in its
 *    kernel stack), where its stack slept, woken by its waker (WakeupTable, else the
 *    OffCpuTable's); from its wakeup (next_wait_ns of the switch-in) until switched in,
 *    waiting for its CPU behind the task that ran there before it;
 *  - before its first switch in the window, and after it exited: not known (but the time
 *    its first switch-in says it waited); so is the time between the last switch the table
 *    has on its CPU and its next switch-out, when its switch-in is missing (a capture
 *    that lost it).
 *
 * A task that had the thread's CPU is, in this order: the idle task (nothing ran: a
 * runnable thread on a CPU's runqueue never leaves it idle, so it was off the runqueue,
 * throttled by its cgroup's CFS bandwidth; and so was it for the whole of a preemption
 * during which its CPU idled at any time, whoever ran there otherwise; a wakeup that
 * waits up to 2 ms behind an idle CPU is only that CPU waking up); hostprof's own (the daemon's pid, a name starting with "hostprofd", or the client, "hostprofctl"); an
 * interrupt's thread (ksoftirqd/N, irq/N-...); the migration stopper (migration/N); a
 * realtime task (SCHED_FIFO, SCHED_RR, SCHED_DEADLINE, or prio under 100 where the
 * snapshot has no policy), or another. The names are the kernel's for its own threads.
 *
 * A thread in a cgroup with a CFS bandwidth (the snapshot records a dispatch thread's) is
 * throttled, too, while CFS tasks run on its CPU in a wait of at least half of what its
 * quota leaves of a period: see throttled_wait().
 *
 * A thread lives on a CPU (home_cpu) when it ran at least two thirds of its running time
 * there and migrated off it in the window, and, where the snapshot has its affinity
 * (Thread.cpus_allowed), that affinity binds it to fewer CPUs than the host has, that one
 * among them (without it, it must have moved off twice): every wait elsewhere is then
 * time lost to the migration, whoever ran there (a bound thread that something else
 * moved). A thread free to run anywhere lives nowhere.
 *
 * The Python GIL is a cause of its own (CAUSE_GIL): a blocked interval inside a take of
 * the GIL that the snapshot's GIL table has (its futex waits on the GIL, merged) waited
 * for it; its agent is the holder as the take ended, and the holder's function (the
 * innermost frame of its stack as read for that take). A snapshot without the table
 * (not CPython, or the GIL not found) has it as what the kernel saw: a futex wait.
 * Waits given by a caller (model_gil(): struct gil_wait) lie over the thread's pieces
 * instead, like an interference row of the lowest precedence, over its running (the loop
 * that takes the GIL, between its timed waits) and its blocked time; the time it waited
 * for its CPU after a wakeup, or preempted, stays the scheduler's.
 *
 * The dispatch threads are the threads of the process whose names match the snapshot's
 * dispatch_threads globs (acl_thread for a snapshot that records none). Where none
 * matches, the report takes the main thread (the one that dispatches in a GPU PyTorch job
 * watched by --pid) when it switched in the window, else the thread that ran the most,
 * and says so. The verdict is about the dispatch thread that lost the most.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "glob_match.h"
#include "hps.h"
#include "macro.h"
#include "report.h"
#include "report_internal.h"

#define HOME_SHARE_NUM 2 /* a thread lives on a CPU where it ran 2/3 of its time */
#define HOME_SHARE_DEN 3
#define IDLE_WAKE_MAX_NS (2 * NSEC_PER_MSEC) /* a wakeup behind an idle CPU for longer: throttled */
#define STATE_DEAD 0x30 /* X, Z: its last switch-out */

/* Rows of one table that concern one thread (or one CPU), by start time. */
struct rows {
	size_t *r;
	size_t n, cap;
	uint64_t max_dur; /* the longest row's: rows that start this much before a time may cover it */
	size_t cur; /* where rows_seek() last ended */
};

/* What one thread's walk through the switches keeps. */
enum wstate { W_UNKNOWN, W_RUN, W_PREEMPT, W_BLOCK, W_DEAD };

struct walk {
	enum wstate st;
	uint64_t since;
	uint32_t cpu;
	size_t row; /* the switch-out */
	struct rows irq, lck, rcl, off, wake, mig, sc, gil;
	uint64_t *cpu_run; /* by w->cpus: its running time on each */
	uint64_t born; /* its fork in the window, else the window's start */
	size_t sc_hint; /* model_blocking_syscall_from()'s */
};

/* An interval of interference laid over a piece: the one of highest precedence wins. */
struct overlay {
	uint64_t a, b;
	enum cause cause;
	int prec;
	struct agent ag;
};

/* The GIL table's rows by (tid, start). */
struct gil_rows {
	size_t *r;
	uint64_t *ts; /* by row: absolute start */
	size_t n;
	uint32_t *holder_comm; /* by row: the holder's name in Snapshot.strings (0: not known) */
};

struct causes {
	struct model *m;
	struct walk *wk;
	struct gil_rows gil;
	struct rows *cpu_sw, *cpu_irq; /* by CPU: switch rows; interrupts that ran while pid waited there */
	size_t n_cpus;
	struct overlay *ov;
	size_t n_ov, cap_ov;
	uint64_t *bounds;
	size_t cap_bounds;
	uint8_t *fcls; /* FC_* of each frame name, 0: not looked at yet */
};

/* What a kernel frame's name says of a blocked interval (emit_block()). */
#define FC_SEEN 0x1
#define FC_SLEEP 0x2 /* the scheduler's own: sleep_frame() */
#define FC_FAULT 0x4 /* in_fault_path() */
#define FC_SYSCALL 0x8 /* a syscall's entry: syscall_entry() */

static const char *const irq_thread_prefixes[] = { "ksoftirqd/", "irq/" };

static bool has_prefix(const char *s, const char *p)
{
	return !strncmp(s, p, strlen(p));
}

bool model_is_hostprof(const Hostprof__Snapshot *s, uint32_t pid, const char *comm)
{
	/* the daemon, its workers and jobs, and the client, which writes a snapshot's formats
	 * with up to 4 threads wherever it runs */
	return (s->has_producer_pid && s->producer_pid && pid == s->producer_pid) ||
	       has_prefix(comm, "hostprofd") || !strcmp(comm, "hostprofctl");
}

/* ---- rows by thread and by CPU ---- */

static int rows_add(struct rows *l, size_t i, uint64_t dur)
{
	int r = reserve_one(&l->r, l->n, &l->cap, sizeof(*l->r));

	if (r < 0)
		return r;
	l->r[l->n++] = i;
	l->max_dur = MAX(l->max_dur, dur);
	return 0;
}

static int cmp_row_ts(const void *a, const void *b, void *ts)
{
	const uint64_t *t = ts;
	size_t x = *(const size_t *)a, y = *(const size_t *)b;

	if (t[x] != t[y])
		return t[x] < t[y] ? -1 : 1;
	return x < y ? -1 : x > y;
}

/* By start, then row. A snapshot's tables are in time order, so a list made in row order
 * mostly is already: looked at first, sorted only if not. */
static void rows_sort(struct rows *l, const uint64_t *ts)
{
	for (size_t i = 1; i < l->n; i++)
		if (cmp_row_ts(&l->r[i - 1], &l->r[i], (void *)ts) > 0) {
			qsort_r_safe(l->r, l->n, sizeof(*l->r), cmp_row_ts, (void *)ts);
			return;
		}
}

/* The first position of l in [lo, hi) whose row starts at or after t (hi: none there). */
static size_t rows_lower_in(const struct rows *l, const uint64_t *ts, uint64_t t, size_t lo, size_t hi)
{
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (ts[l->r[mid]] < t)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* The first position of l whose row starts at or after t. */
static size_t rows_lower(const struct rows *l, const uint64_t *ts, uint64_t t)
{
	return rows_lower_in(l, ts, t, 0, l->n);
}

/*
 * rows_lower(), from where the last seek of l ended: the walk asks of each thread's lists
 * in time order, so a seek is mostly a step or two forward (a binary search per piece was
 * some 5% of the model). Further on it searches what is left, backwards what is before.
 */
static size_t rows_seek(struct rows *l, const uint64_t *ts, uint64_t t)
{
	size_t k = MIN(l->cur, l->n);

	if (k && ts[l->r[k - 1]] >= t)
		return (l->cur = rows_lower_in(l, ts, t, 0, k));
	for (size_t step = 0; step < 8; step++, k++)
		if (k == l->n || ts[l->r[k]] >= t)
			return (l->cur = k);
	return (l->cur = rows_lower_in(l, ts, t, k, l->n));
}

static void rows_free(struct rows *l)
{
	free(l->r);
	*l = (struct rows){};
}

static struct walk *walk_of(struct causes *cs, const struct wthread *w)
{
	return &cs->wk[model_thread_index(cs->m, w)];
}

static int index_rows(struct causes *cs)
{
	struct model *m = cs->m;
	const Hostprof__Snapshot *s = m->snap;
	const Hostprof__SchedSwitchTable *sw = s->switches;
	const Hostprof__IrqTable *irq = s->irqs;
	const Hostprof__LockTable *lck = s->locks;
	const Hostprof__ReclaimTable *rcl = s->reclaims;
	const Hostprof__OffCpuTable *off = s->offcpu;
	const Hostprof__WakeupTable *wk = s->wakeups;
	const Hostprof__MigrationTable *mg = s->migrations;
	const Hostprof__SyscallTable *sc = s->syscalls;
	size_t n_sw = sw ? sw->n_ts_delta : 0;
	struct wthread *w;
	int r;

	r = hps_abs_times(s->start_ns, wk ? wk->ts_delta : NULL, wk ? wk->n_ts_delta : 0, &m->wk_ts);
	if (r < 0)
		return r;
	for (size_t i = 0; i < n_sw; i++)
		cs->n_cpus = MAX(cs->n_cpus, (size_t)sw->cpu[i] + 1);
	for (size_t i = 0; (m->interference & HPS_INTERF_IRQ) && irq && i < irq->n_ts_delta; i++)
		cs->n_cpus = MAX(cs->n_cpus, (size_t)irq->cpu[i] + 1);
	cs->n_cpus = MIN(cs->n_cpus, (size_t)16384);
	cs->cpu_sw = calloc(MAX(cs->n_cpus, (size_t)1), sizeof(*cs->cpu_sw));
	cs->cpu_irq = calloc(MAX(cs->n_cpus, (size_t)1), sizeof(*cs->cpu_irq));
	if (!cs->cpu_sw || !cs->cpu_irq)
		return -ENOMEM;
	for (size_t i = 0; i < n_sw; i++)
		if (sw->cpu[i] < cs->n_cpus && (r = rows_add(&cs->cpu_sw[sw->cpu[i]], i, 0)) < 0)
			return r;
	for (size_t i = 0; (m->interference & HPS_INTERF_IRQ) && irq && i < irq->n_ts_delta; i++) {
		if ((irq->flags[i] & HPS_IRQ_INTERRUPTED) &&
		    (w = model_thread(m, irq->pid[i], irq->tid[i])) &&
		    (r = rows_add(&walk_of(cs, w)->irq, i, irq->dur_ns[i])) < 0)
			return r;
		if ((irq->flags[i] & HPS_IRQ_WAITED) && irq->pid[i] == s->pid && irq->cpu[i] < cs->n_cpus &&
		    (r = rows_add(&cs->cpu_irq[irq->cpu[i]], i, irq->dur_ns[i])) < 0)
			return r;
	}
	for (size_t i = 0; (m->interference & HPS_INTERF_LOCKS) && lck && i < lck->n_ts_delta; i++)
		if ((w = model_thread(m, lck->pid[i], lck->tid[i])) &&
		    (r = rows_add(&walk_of(cs, w)->lck, i, lck->dur_ns[i])) < 0)
			return r;
	for (size_t i = 0; (m->interference & HPS_INTERF_RECLAIM) && rcl && i < rcl->n_ts_delta; i++)
		if ((w = model_thread(m, rcl->pid[i], rcl->tid[i])) &&
		    (r = rows_add(&walk_of(cs, w)->rcl, i, rcl->dur_ns[i])) < 0)
			return r;
	for (size_t i = 0; off && i < off->n_ts_delta; i++)
		if ((w = model_thread(m, off->pid[i], off->tid[i])) &&
		    (r = rows_add(&walk_of(cs, w)->off, i, off->dur_ns[i])) < 0)
			return r;
	for (size_t i = 0; wk && i < wk->n_ts_delta; i++)
		if ((w = model_thread(m, wk->pid[i], wk->tid[i])) &&
		    (r = rows_add(&walk_of(cs, w)->wake, i, 0)) < 0)
			return r;
	for (size_t i = 0; mg && i < mg->n_ts_delta; i++)
		if ((w = model_thread(m, mg->pid[i], mg->tid[i])) &&
		    (r = rows_add(&walk_of(cs, w)->mig, i, 0)) < 0)
			return r;
	for (size_t i = 0; sc && i < sc->n_ts_delta; i++)
		if ((w = model_thread(m, sc->pid[i], sc->tid[i])) &&
		    (r = rows_add(&walk_of(cs, w)->sc, i, sc->dur_ns[i])) < 0)
			return r;
	m->gil_ts = malloc(MAX(m->n_gil, (size_t)1) * sizeof(*m->gil_ts));
	m->gil_dur = malloc(MAX(m->n_gil, (size_t)1) * sizeof(*m->gil_dur));
	if (!m->gil_ts || !m->gil_dur)
		return -ENOMEM;
	for (size_t i = 0; i < m->n_gil; i++) {
		m->gil_ts[i] = m->gil[i].begin;
		m->gil_dur[i] = m->gil[i].end - m->gil[i].begin;
		if ((w = model_thread(m, m->gil[i].pid, m->gil[i].tid)) &&
		    (r = rows_add(&walk_of(cs, w)->gil, i, m->gil_dur[i])) < 0)
			return r;
	}
	for (size_t k = 0; k < m->n; k++) {
		struct walk *x = &cs->wk[k];

		rows_sort(&x->irq, m->irq_ts);
		rows_sort(&x->lck, m->lck_ts);
		rows_sort(&x->rcl, m->rcl_ts);
		rows_sort(&x->off, m->off_ts);
		rows_sort(&x->wake, m->wk_ts);
		rows_sort(&x->mig, m->mg_ts);
		rows_sort(&x->sc, m->sc_ts);
		rows_sort(&x->gil, m->gil_ts);
		x->cpu_run = calloc(MAX(m->t[k].n_cpus, (size_t)1), sizeof(*x->cpu_run));
		if (!x->cpu_run)
			return -ENOMEM;
	}
	for (size_t c = 0; c < cs->n_cpus; c++)
		rows_sort(&cs->cpu_irq[c], m->irq_ts);
	return 0;
}

/* ---- agents and pieces ---- */

static bool agent_eq(const struct agent *x, const struct agent *y)
{
	return x->cause == y->cause && x->kind == y->kind && x->tid == y->tid && x->pid == y->pid &&
	       x->key == y->key && x->name == y->name && x->flags == y->flags && x->nr == y->nr &&
	       x->sys_frame == y->sys_frame && x->site == y->site;
}

/* Of what agent_eq() compares: four independent products rather than a chain of ten. */
static uint64_t agent_hash(const struct agent *a)
{
	uint64_t h = ((uint64_t)a->tid << 32 | a->pid) * 0x9e3779b97f4a7c15ull;

	h ^= (a->key + ((uint64_t)a->name << 32 | a->flags)) * 0xc2b2ae3d27d4eb4full;
	h ^= ((uint64_t)(uint32_t)a->nr << 32 | a->sys_frame) * 0x165667b19e3779f9ull;
	h ^= ((uint64_t)a->site << 16 | (uint64_t)a->cause << 8 | (uint64_t)a->kind) * 0x27d4eb2f165667c5ull;
	return h ^ (h >> 29);
}

/* Puts agent i in its slot; the table has room. */
static void agent_slot(struct account *acc, size_t i)
{
	size_t k = agent_hash(&acc->ag[i]) & (acc->n_slots - 1);

	while (acc->slots[k])
		k = (k + 1) & (acc->n_slots - 1);
	acc->slots[k] = (uint32_t)i + 1;
}

static ssize_t agent_get(struct account *acc, enum cause c, const struct agent *t)
{
	struct agent key = *t;
	size_t k;
	int r;

	key.cause = c;
	/* a thread's pieces of one cause come mostly from one agent in a row */
	if (acc->last_ag[c] && agent_eq(&acc->ag[acc->last_ag[c] - 1], &key))
		return (ssize_t)acc->last_ag[c] - 1;
	if (acc->n_slots) {
		for (k = agent_hash(&key) & (acc->n_slots - 1); acc->slots[k];
		     k = (k + 1) & (acc->n_slots - 1))
			if (agent_eq(&acc->ag[acc->slots[k] - 1], &key)) {
				acc->last_ag[c] = acc->slots[k];
				return (ssize_t)acc->slots[k] - 1;
			}
	}
	if (acc->n_ag >= UINT32_MAX - 1)
		return -E2BIG;
	r = reserve_one(&acc->ag, acc->n_ag, &acc->cap_ag, sizeof(*acc->ag));
	if (r < 0)
		return r;
	key.sum = (struct tally){};
	key.max_at = key.run_end = key.run_ns = 0;
	acc->ag[acc->n_ag++] = key;
	if (2 * acc->n_ag > acc->n_slots) {
		size_t n = acc->n_slots ? 2 * acc->n_slots : 16;
		uint32_t *p = calloc(n, sizeof(*p));

		if (!p)
			return -ENOMEM;
		free(acc->slots);
		acc->slots = p;
		acc->n_slots = n;
		for (size_t i = 0; i < acc->n_ag; i++)
			agent_slot(acc, i);
	} else {
		agent_slot(acc, acc->n_ag - 1);
	}
	acc->last_ag[c] = (uint32_t)acc->n_ag;
	return (ssize_t)acc->n_ag - 1;
}

/* One more piece [a, b) of a run of the same thing, or the start of a new run. */
static void run_add(struct tally *t, uint64_t *end, uint64_t *run, uint64_t *max_at, uint64_t a, uint64_t b)
{
	if (t->count && *end == a) {
		*run += b - a;
	} else {
		t->count++;
		*run = b - a;
	}
	*end = b;
	t->time_ns += b - a;
	if (*run > t->max_ns) {
		t->max_ns = *run;
		*max_at = b - *run;
	}
}

static int episode_close(struct account *acc)
{
	int r;

	if (!acc->in_ep)
		return 0;
	acc->in_ep = false;
	if (acc->cur.end - acc->cur.begin < EPISODE_MIN_NS)
		return 0;
	r = reserve_one(&acc->ep, acc->n_ep, &acc->cap_ep, sizeof(*acc->ep));
	if (r < 0)
		return r;
	acc->ep[acc->n_ep++] = acc->cur;
	acc->ep_ns += acc->cur.end - acc->cur.begin;
	return 0;
}

static int episode_add(struct account *acc, size_t agent, uint64_t a, uint64_t b)
{
	struct episode *e = &acc->cur;
	size_t k;
	int r;

	if (!acc->in_ep || e->end != a) {
		r = episode_close(acc);
		if (r < 0)
			return r;
		*e = (struct episode){ .begin = a, .end = a };
		acc->in_ep = true;
	}
	e->end = b;
	for (k = 0; k < e->n_parts && e->part[k].agent != agent; k++)
		;
	if (k < e->n_parts)
		e->part[k].ns += b - a;
	else if (e->n_parts < EPISODE_PARTS)
		e->part[e->n_parts++] = (struct episode_part){ .agent = (uint32_t)agent, .ns = b - a };
	else
		e->rest_ns += b - a;
	return 0;
}

/* Piece [a, b) of w's time, clipped to the window, went to cause c, agent t. */
static int emit(struct model *m, struct wthread *w, enum cause c, const struct agent *t, uint64_t a,
		uint64_t b)
{
	struct account *acc = &w->acc;
	struct agent *ag;
	ssize_t i;

	a = MAX(a, m->snap->start_ns);
	b = MIN(b, MAX(m->snap->end_ns, m->snap->start_ns));
	if (b <= a)
		return 0;
	i = agent_get(acc, c, t);
	if (i < 0)
		return (int)i;
	ag = &acc->ag[i];
	run_add(&acc->cause[c], &acc->run_end[c], &acc->run_ns[c], &acc->cause_max_at[c], a, b);
	run_add(&ag->sum, &ag->run_end, &ag->run_ns, &ag->max_at, a, b);
	if (!cause_lost(c))
		return episode_close(acc);
	acc->lost_ns += b - a;
	return episode_add(acc, (size_t)i, a, b);
}

static const struct agent no_agent = { .kind = AG_NONE, .nr = -1 };

/* ---- interference laid over a piece ---- */

static int overlay_add(struct causes *cs, uint64_t a, uint64_t b, enum cause c, int prec,
		       const struct agent *ag)
{
	int r;

	if (b <= a)
		return 0;
	r = reserve_one(&cs->ov, cs->n_ov, &cs->cap_ov, sizeof(*cs->ov));
	if (r < 0)
		return r;
	cs->ov[cs->n_ov++] = (struct overlay){ .a = a, .b = b, .cause = c, .prec = prec, .ag = *ag };
	return 0;
}

static struct agent irq_agent(const Hostprof__IrqTable *t, size_t i)
{
	return (struct agent){
		.kind = AG_IRQ, .key = (uint64_t)t->kind[i] << 32 | t->num[i], .name = t->name[i], .nr = -1
	};
}

/* The rows of l that overlap [a, b), as overlays. */
static int overlay_rows(struct causes *cs, struct rows *l, const uint64_t *ts, const uint64_t *dur,
			uint64_t a, uint64_t b, enum cause c, int prec,
			struct agent (*agent)(const void *, size_t), const void *table)
{
	/* from the first row that may overlap [a, ...) */
	for (size_t k = rows_seek(l, ts, a > l->max_dur ? a - l->max_dur : 0); k < l->n && ts[l->r[k]] < b;
	     k++) {
		size_t i = l->r[k];
		struct agent ag;
		int r;

		if (ts[i] + dur[i] <= a)
			continue;
		ag = agent(table, i);
		r = overlay_add(cs, MAX(ts[i], a), MIN(ts[i] + dur[i], b), c, prec, &ag);
		if (r < 0)
			return r;
	}
	return 0;
}

static struct agent irq_row_agent(const void *t, size_t i)
{
	return irq_agent(t, i);
}

static struct agent lock_row_agent(const void *table, size_t i)
{
	const Hostprof__LockTable *t = table;

	return (struct agent){
		.kind = AG_LOCK, .key = t->lock[i], .flags = t->flags[i], .name = t->name[i], .nr = -1
	};
}

static struct agent reclaim_row_agent(const void *table, size_t i)
{
	const Hostprof__ReclaimTable *t = table;

	return (struct agent){ .kind = AG_RECLAIM, .key = t->kind[i], .nr = -1 };
}

static struct agent gil_row_agent(const void *table, size_t i)
{
	const struct gil_wait *g = &((const struct gil_wait *)table)[i];

	return (struct agent){ .kind = AG_GIL,
			       .tid = g->holder_tid,
			       .pid = g->holder_pid,
			       .task = { .tid = g->holder_tid, .pid = g->holder_pid, .comm = g->holder_comm },
			       .name = g->function,
			       .key = (uint64_t)g->file << 32 | g->line,
			       .nr = -1 };
}

enum { OV_IRQ = 1, OV_LOCK = 2, OV_RECLAIM = 4, OV_IRQ_CPU = 8, OV_GIL = 16 };

static int cmp_u64_sort(const void *a, const void *b)
{
	return cmp_u64(a, b);
}

/* Piece [a, b) of w: the overlays asked for where they lie, the base cause elsewhere. */
static int emit_over(struct causes *cs, struct wthread *w, uint64_t a, uint64_t b, unsigned what,
		     uint32_t cpu, enum cause base, const struct agent *base_ag)
{
	struct model *m = cs->m;
	const Hostprof__Snapshot *s = m->snap;
	struct walk *x = walk_of(cs, w);
	size_t nb = 0;
	int r = 0;

	a = MAX(a, s->start_ns);
	b = MIN(b, MAX(s->end_ns, s->start_ns));
	if (b <= a)
		return 0;
	cs->n_ov = 0;
	if ((what & OV_IRQ) && x->irq.n)
		r = overlay_rows(cs, &x->irq, m->irq_ts, s->irqs->dur_ns, a, b, CAUSE_IRQ, 3, irq_row_agent,
				 s->irqs);
	if (r >= 0 && (what & OV_IRQ_CPU) && cpu < cs->n_cpus && cs->cpu_irq[cpu].n)
		r = overlay_rows(cs, &cs->cpu_irq[cpu], m->irq_ts, s->irqs->dur_ns, a, b, CAUSE_IRQ, 3,
				 irq_row_agent, s->irqs);
	if (r >= 0 && (what & OV_LOCK) && x->lck.n)
		r = overlay_rows(cs, &x->lck, m->lck_ts, s->locks->dur_ns, a, b, CAUSE_LOCK, 2,
				 lock_row_agent, s->locks);
	if (r >= 0 && (what & OV_RECLAIM) && x->rcl.n)
		r = overlay_rows(cs, &x->rcl, m->rcl_ts, s->reclaims->dur_ns, a, b, CAUSE_RECLAIM, 1,
				 reclaim_row_agent, s->reclaims);
	if (r >= 0 && (what & OV_GIL) && x->gil.n)
		r = overlay_rows(cs, &x->gil, m->gil_ts, m->gil_dur, a, b, CAUSE_GIL, 0, gil_row_agent,
				 m->gil);
	if (r < 0)
		return r;
	if (!cs->n_ov)
		return emit(m, w, base, base_ag, a, b);
	if (2 * cs->n_ov + 2 > cs->cap_bounds) {
		uint64_t *p = reallocarray(cs->bounds, 2 * cs->n_ov + 2, sizeof(*p));

		if (!p)
			return -ENOMEM;
		cs->bounds = p;
		cs->cap_bounds = 2 * cs->n_ov + 2;
	}
	cs->bounds[nb++] = a;
	cs->bounds[nb++] = b;
	for (size_t k = 0; k < cs->n_ov; k++) {
		cs->bounds[nb++] = cs->ov[k].a;
		cs->bounds[nb++] = cs->ov[k].b;
	}
	qsort_safe(cs->bounds, nb, sizeof(*cs->bounds), cmp_u64_sort);
	for (size_t k = 0; k + 1 < nb; k++) {
		uint64_t p = cs->bounds[k], q = cs->bounds[k + 1];
		const struct overlay *best = NULL;

		if (q <= p)
			continue;
		for (size_t o = 0; o < cs->n_ov; o++)
			if (cs->ov[o].a <= p && cs->ov[o].b >= q && (!best || cs->ov[o].prec > best->prec))
				best = &cs->ov[o];
		r = best ? emit(m, w, best->cause, &best->ag, p, q) : emit(m, w, base, base_ag, p, q);
		if (r < 0)
			return r;
	}
	return 0;
}

/* ---- the kinds of piece ---- */

static bool is_rt(const struct culprit *c)
{
	if (c->has_policy)
		return c->policy == 1 || c->policy == 2 || c->policy == 6;
	return c->prio < 100;
}

static struct agent task_agent(const struct culprit *c)
{
	return (struct agent){ .kind = AG_TASK, .tid = c->tid, .pid = c->pid, .task = *c, .nr = -1 };
}

static bool off_home(const struct wthread *w, uint32_t cpu)
{
	return w->acc.home_cpu >= 0 && (uint32_t)w->acc.home_cpu != cpu;
}

/* [a, b) waiting for CPU cpu, which runner had; runq: after a wakeup, not a preemption. */
static int emit_wait(struct causes *cs, struct wthread *w, uint64_t a, uint64_t b, uint32_t cpu,
		     const struct culprit *runner, bool runq)
{
	const Hostprof__Snapshot *s = cs->m->snap;
	const char *comm = hps_str(s, runner->comm);
	struct agent ag = task_agent(runner);
	enum cause c;

	if (off_home(w, cpu)) {
		c = CAUSE_MIGRATION;
		ag = (struct agent){ .kind = AG_CPU, .key = (uint64_t)w->acc.home_cpu << 32 | cpu, .nr = -1 };
	} else if (runner->tid == 0) {
		c = !runq || b - a > IDLE_WAKE_MAX_NS ? CAUSE_THROTTLE : CAUSE_RUNQ;
		if (c == CAUSE_THROTTLE)
			ag = (struct agent){ .kind = AG_CPU, .key = cpu, .flags = 1, .nr = -1 };
	} else if (model_is_hostprof(s, runner->pid, comm)) {
		c = CAUSE_HOSTPROF;
	} else if (has_prefix(comm, irq_thread_prefixes[0]) || has_prefix(comm, irq_thread_prefixes[1])) {
		c = CAUSE_IRQ;
	} else if (has_prefix(comm, "migration/")) {
		c = CAUSE_MIGRATION;
	} else if (runq) {
		c = CAUSE_RUNQ;
	} else {
		c = is_rt(runner) ? CAUSE_RT : CAUSE_CFS;
	}
	/* an interrupt that ran there delays the runner, not the thread; but on an idle CPU
	 * it is what the thread waits for */
	return emit_over(cs, w, a, b, runner->tid ? 0 : OV_IRQ_CPU, cpu, c, &ag);
}

/* Whether a runner is a task that a throttled thread's wait could have run behind: not
 * realtime, not hostprof's, not an interrupt's thread, not the stopper. */
static bool plain_cfs(const Hostprof__Snapshot *s, const struct culprit *c)
{
	const char *comm = hps_str(s, c->comm);

	return c->tid && !is_rt(c) && !model_is_hostprof(s, c->pid, comm) &&
	       !has_prefix(comm, irq_thread_prefixes[0]) && !has_prefix(comm, irq_thread_prefixes[1]) &&
	       !has_prefix(comm, "migration/");
}

/*
 * A thread whose cgroup has a CFS bandwidth (Thread.cpu_quota_us) and that waited on its
 * CPU for at least half of what its quota leaves of a period (2 ms at least) was
 * throttled while CFS tasks ran there: a thread on a runqueue is passed over for a slice
 * at a time (a few ms), not for most of a period. A realtime task, an interrupt's thread
 * or hostprof that ran meanwhile keeps its own part. (One whose CPU idled meanwhile was
 * throttled all along, whatever its cgroup says: emit_preempt().)
 */
static bool throttled_wait(const struct wthread *w, uint64_t len)
{
	uint64_t period, quota, left;

	if (!w->has_bandwidth || w->cpu_quota_us <= 0 || !w->cpu_period_us)
		return false;
	period = w->cpu_period_us * NSEC_PER_USEC;
	quota = (uint64_t)w->cpu_quota_us * NSEC_PER_USEC;
	left = quota < period ? period - quota : period;
	return len >= MAX(left / 2, 2 * NSEC_PER_MSEC);
}

static struct agent throttle_agent(uint32_t cpu, bool idled)
{
	return (struct agent){ .kind = AG_CPU, .key = cpu, .flags = idled, .nr = -1 };
}

/* A piece of a preempted wait, which runner had: throttling where the thread was
 * throttled and the runner is a plain CFS task, else what that runner makes it. */
static int emit_runner(struct causes *cs, struct wthread *w, uint64_t a, uint64_t b, uint32_t cpu,
		       const struct culprit *runner, bool throttled)
{
	if (throttled && plain_cfs(cs->m->snap, runner)) {
		struct agent ag = throttle_agent(cpu, false);

		return emit_over(cs, w, a, b, 0, cpu, CAUSE_THROTTLE, &ag);
	}
	return emit_wait(cs, w, a, b, cpu, runner, false);
}

/* The first migration of w at or after a and before b, or -1. */
static ssize_t migration_in(struct causes *cs, const struct wthread *w, uint64_t a, uint64_t b)
{
	struct walk *x = walk_of(cs, w);
	size_t k = rows_seek(&x->mig, cs->m->mg_ts, a);

	return k < x->mig.n && cs->m->mg_ts[x->mig.r[k]] < b ? (ssize_t)x->mig.r[k] : -1;
}

/* Switched out runnable at a on cpu_out (row out, or none: SIZE_MAX), in again at b on
 * cpu_in (row in, or none). */
static int emit_preempt(struct causes *cs, struct wthread *w, uint64_t a, uint64_t b, uint32_t cpu_out,
			size_t out, uint32_t cpu_in, size_t in)
{
	const struct model *m = cs->m;
	const Hostprof__SchedSwitchTable *sw = m->snap->switches;
	struct culprit runner = out != SIZE_MAX ? model_next_task(sw, out) : model_prev_task(sw, in);
	ssize_t mg = migration_in(cs, w, a, b);
	uint64_t moved = mg >= 0 ? m->mg_ts[mg] : in != SIZE_MAX && cpu_in != cpu_out ? a : b;
	uint64_t at = a;
	bool throttled = false;
	int r;

	/* on cpu_out until it moved: each task that ran there meanwhile; but if the CPU idled
	 * at any time, the thread was not on its runqueue: throttled all along */
	if (cpu_out < cs->n_cpus && moved > a) {
		const struct rows *l = &cs->cpu_sw[cpu_out];
		bool idled = runner.tid == 0;

		for (size_t k = rows_lower(l, m->sw_ts, a); k < l->n && m->sw_ts[l->r[k]] < moved && !idled;
		     k++)
			idled = l->r[k] != out && l->r[k] != in && sw->next_tid[l->r[k]] == 0;
		/* or, in a cgroup with a CFS bandwidth, it waited long: behind CFS tasks, it was throttled */
		throttled = !idled && !off_home(w, cpu_out) && throttled_wait(w, moved - a);
		if (idled) {
			struct culprit idle = { .tid = 0 };

			r = emit_wait(cs, w, a, moved, cpu_out, &idle, false);
			if (r < 0 || moved >= b)
				return r;
			at = moved;
		}
		for (size_t k = rows_lower(l, m->sw_ts, a); !idled && k < l->n && m->sw_ts[l->r[k]] < moved;
		     k++) {
			size_t i = l->r[k];

			if (i == out || i == in)
				continue;
			r = emit_runner(cs, w, at, m->sw_ts[i], cpu_out, &runner, throttled);
			if (r < 0)
				return r;
			at = MAX(at, m->sw_ts[i]);
			runner = model_next_task(sw, i);
		}
	}
	if (at < moved) {
		r = emit_runner(cs, w, at, moved, cpu_out, &runner, throttled);
		if (r < 0)
			return r;
	}
	if (moved >= b)
		return 0;
	/* moved: on cpu_in, the task that ran there before it */
	if (in != SIZE_MAX)
		runner = model_prev_task(sw, in);
	return emit_wait(cs, w, moved, b, in != SIZE_MAX ? cpu_in : cpu_out, &runner, false);
}

/* Row of w's OffCpuTable that went off the CPU at a, or -1. */
static ssize_t offcpu_at(struct causes *cs, const struct wthread *w, uint64_t a)
{
	struct walk *x = walk_of(cs, w);
	size_t k = rows_seek(&x->off, cs->m->off_ts, a);

	return k < x->off.n && cs->m->off_ts[x->off.r[k]] == a ? (ssize_t)x->off.r[k] : -1;
}

static const char *frame_name(const struct model *m, uint32_t frame)
{
	return frame < m->fn.n ? m->fn.name[frame] : "";
}

static bool in_fault_path(const char *f)
{
	static const char *const fault[] = { "handle_mm_fault", "exc_page_fault", "do_user_addr_fault",
					     "do_page_fault",	"do_mem_abort",	  "do_translation_fault" };

	for (size_t i = 0; i < ARRAY_SIZE(fault); i++)
		if (!strcmp(f, fault[i]))
			return true;
	return false;
}

/* The scheduler's own frames, above where a thread slept. */
static bool sleep_frame(const char *f)
{
	static const char *const skip[] = {
		"__schedule",	      "schedule",    "io_schedule",  "preempt_schedule", "__cond_resched",
		"finish_task_switch", "__switch_to", "__traceiter_", "__bpf_trace_",	 "bpf_"
	};

	for (size_t i = 0; i < ARRAY_SIZE(skip); i++)
		if (has_prefix(f, skip[i]))
			return true;
	return false;
}

/* A syscall's entry frame ("__x64_sys_read"): the position of its name, else NULL. */
static const char *syscall_entry(const char *f)
{
	static const char *const entry[] = { "__x64_sys_", "__arm64_sys_", "__ia32_sys_", "__do_sys_",
					     "__se_sys_" };

	for (size_t i = 0; i < ARRAY_SIZE(entry); i++)
		if (has_prefix(f, entry[i]))
			return f + strlen(entry[i]);
	return NULL;
}

/* The FC_* of a frame: its name compared once per snapshot, not once per interval. */
static unsigned frame_class(struct causes *cs, uint32_t frame)
{
	const char *name;
	uint8_t c;

	if (frame >= cs->m->fn.n)
		return 0; /* "": none of them */
	if (cs->fcls[frame])
		return cs->fcls[frame];
	name = frame_name(cs->m, frame);
	c = FC_SEEN | (sleep_frame(name) ? FC_SLEEP : 0) | (in_fault_path(name) ? FC_FAULT : 0) |
	    (syscall_entry(name) ? FC_SYSCALL : 0);
	cs->fcls[frame] = c;
	return c;
}

const char *model_wait_syscall(const struct model *m, const struct agent *a, char *buf, size_t len)
{
	if (a->nr >= 0)
		return report_syscall_name(m->snap, (uint32_t)a->nr, buf, len);
	if (a->sys_frame)
		return syscall_entry(frame_name(m, a->sys_frame - 1));
	return NULL;
}

static const Hostprof__GilTable *gil_table(const Hostprof__Snapshot *s)
{
	return s->gil && s->gil->status == 1 ? s->gil : NULL;
}

/* The name of thread tid in Snapshot.strings, from its Thread entry: 0 when none has it. */
static uint32_t comm_string(const Hostprof__Snapshot *s, uint32_t tid)
{
	const char *comm = hps_thread_comm(s, tid);

	for (size_t i = 1; comm && i < s->n_strings; i++)
		if (s->strings[i] && !strcmp(s->strings[i], comm))
			return (uint32_t)i;
	return 0;
}

struct gil_cmp_ctx {
	const Hostprof__GilTable *t;
	const uint64_t *ts;
};

static int gil_cmp(const void *x, const void *y, void *ud)
{
	const struct gil_cmp_ctx *c = ud;
	size_t i = *(const size_t *)x, k = *(const size_t *)y;
	uint32_t ti = c->t->tid[i], tk = c->t->tid[k];

	if (ti != tk)
		return ti < tk ? -1 : 1;
	return c->ts[i] < c->ts[k] ? -1 : c->ts[i] > c->ts[k];
}

/* The GIL table's rows, by thread and time, and its holders' names. */
static int index_gil(struct causes *cs)
{
	const Hostprof__Snapshot *s = cs->m->snap;
	const Hostprof__GilTable *t = gil_table(s);
	struct gil_rows *g = &cs->gil;
	uint64_t ts = s->start_ns;
	uint64_t *abs;

	if (!t || !t->n_ts_delta)
		return 0;
	g->r = malloc(t->n_ts_delta * sizeof(*g->r));
	g->ts = abs = malloc(t->n_ts_delta * sizeof(*g->ts));
	g->holder_comm = calloc(t->n_ts_delta, sizeof(*g->holder_comm));
	if (!g->r || !g->ts || !g->holder_comm)
		return -ENOMEM;
	for (size_t i = 0; i < t->n_ts_delta; i++) {
		ts += t->ts_delta[i];
		abs[i] = ts;
		g->r[i] = i;
		/* the previous row's holder is often this one's */
		if (i && t->holder_tid[i] == t->holder_tid[i - 1])
			g->holder_comm[i] = g->holder_comm[i - 1];
		else
			g->holder_comm[i] = comm_string(s, t->holder_tid[i]);
	}
	g->n = t->n_ts_delta;
	qsort_r_safe(g->r, g->n, sizeof(*g->r), gil_cmp, &(struct gil_cmp_ctx){ .t = t, .ts = abs });
	return 0;
}

static uint64_t gil_frame_key(const Hostprof__PythonFrame *fr)
{
	uint64_t h = 1469598103934665603ull;
	const char *parts[] = { fr->function ? fr->function : "", fr->file ? fr->file : "" };

	for (size_t p = 0; p < ARRAY_SIZE(parts); p++) {
		for (const char *c = parts[p]; *c; c++)
			h = (h ^ (uint8_t)*c) * 1099511628211ull;
		h = (h ^ 0xff) * 1099511628211ull;
	}
	h = (h ^ fr->line) * 1099511628211ull;
	return h | 1; /* 0: not read */
}

/*
 * A blocked interval [a, b) of w that lies inside a take of the GIL (a GilTable row of w)
 * waited for the GIL: CAUSE_GIL, its agent the holder (as the take ended) and the holder's
 * function (the innermost frame of its stack, read for that take).
 */
static bool gil_wait(const struct causes *cs, const struct wthread *w, uint64_t a, uint64_t b,
		     struct agent *ret)
{
	const Hostprof__Snapshot *s = cs->m->snap;
	const Hostprof__GilTable *t = gil_table(s);
	const struct gil_rows *g = &cs->gil;
	size_t lo = 0, hi = g->n, i;
	uint32_t st;

	if (!t || !g->n || b <= a)
		return false;
	/* the first row of w that starts after a: the one before it may hold [a, b) */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2, r = g->r[mid];

		if (t->tid[r] < w->tid || (t->tid[r] == w->tid && g->ts[r] <= a))
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return false;
	i = g->r[lo - 1];
	/* at least half of [a, b) inside the take (its clock reads differ by microseconds) */
	if (t->tid[i] != w->tid || g->ts[i] + t->dur_ns[i] <= a ||
	    MIN(b, g->ts[i] + t->dur_ns[i]) - a < (b - a) / 2)
		return false;
	*ret = (struct agent){ .kind = AG_TASK, .tid = t->holder_tid[i], .pid = t->pid[i], .nr = -1 };
	ret->task = (struct culprit){ .tid = ret->tid, .pid = ret->pid, .comm = g->holder_comm[i] };
	st = t->holder_stack[i];
	if (st && t->stacks[st - 1]->n_frames) {
		uint32_t k = t->stacks[st - 1]->frames[0];

		ret->key = gil_frame_key(t->frames[k]);
		ret->gil_frame = k + 1;
	}
	return true;
}

/*
 * A sleep that its timer ended: its "waker" is whatever ran when the timer fired (a task of
 * any process). A sleep that only a timer ends, or a wait whose syscall row (row sc, or -1)
 * says it timed out: a futex wait that returned ETIMEDOUT (CPython's GIL waits, every
 * 5 ms while another thread holds it), a poll, select or epoll wait that returned 0.
 */
static bool timed_sleep(const struct model *m, const struct agent *ag, ssize_t row)
{
	static const char *const polls[] = { "poll",	   "ppoll",	  "select",	 "pselect6",
					     "epoll_wait", "epoll_pwait", "epoll_pwait2" };
	const Hostprof__SyscallTable *t = m->snap->syscalls;
	char buf[32];
	const char *sc = model_wait_syscall(m, ag, buf, sizeof(buf));

	if ((sc && (!strcmp(sc, "nanosleep") || !strcmp(sc, "clock_nanosleep"))) ||
	    (ag->site && strstr(frame_name(m, ag->site - 1), "nanosleep")))
		return true;
	if (!sc || row < 0)
		return false;
	if (!strcmp(sc, "futex"))
		return t->ret[row] == -ETIMEDOUT;
	for (size_t i = 0; i < ARRAY_SIZE(polls); i++)
		if (!strcmp(sc, polls[i]))
			return t->ret[row] == 0;
	return false;
}

/* The waker of w's sleep from a to b (in the syscall of row sc, or -1): its last wakeup in
 * (a, b], else the off-CPU row's; none for a sleep its timer ended (AG_WAIT flags 1). */
static void blocked_waker(struct causes *cs, const struct wthread *w, uint64_t a, uint64_t b, ssize_t off,
			  ssize_t sc, struct agent *ag)
{
	if (timed_sleep(cs->m, ag, sc)) {
		ag->flags = 1;
		return;
	}
	const Hostprof__Snapshot *s = cs->m->snap;
	struct walk *x = walk_of(cs, w);
	size_t k = rows_seek(&x->wake, cs->m->wk_ts, b + 1);

	if (k > 0 && cs->m->wk_ts[x->wake.r[k - 1]] > a) {
		size_t i = x->wake.r[k - 1];

		ag->tid = s->wakeups->waker_tid[i];
		ag->pid = s->wakeups->waker_pid[i];
		ag->task.comm = s->wakeups->waker_comm[i];
	} else if (off >= 0) {
		ag->tid = s->offcpu->waker_tid[off];
		ag->pid = s->offcpu->waker_pid[off];
		ag->task.comm = s->offcpu->waker_comm[off];
	}
	ag->task.tid = ag->tid;
	ag->task.pid = ag->pid;
}

/* Blocked from a (switch-out row out, or none) until b (switch-in row in, or none). */
static int emit_block(struct causes *cs, struct wthread *w, uint64_t a, uint64_t b, size_t in,
		      uint32_t cpu_in)
{
	struct model *m = cs->m;
	const Hostprof__Snapshot *s = m->snap;
	const Hostprof__SchedSwitchTable *sw = s->switches;
	uint32_t kind = in != SIZE_MAX && sw->n_next_wait_kind ? sw->next_wait_kind[in] : 0;
	uint64_t wait = kind == HPS_WAIT_WAKEUP && sw->n_next_wait_ns ? sw->next_wait_ns[in] : 0;
	uint64_t woken = b - MIN(wait, b - a);
	ssize_t off = offcpu_at(cs, w, a), sc;
	uint32_t ks = off >= 0 ? s->offcpu->kstack[off] : 0;
	const Hostprof__Stack *st = ks ? s->stacks[ks - 1] : NULL;
	struct agent ag = { .kind = AG_WAIT, .nr = -1 };
	enum cause c = CAUSE_BLOCKED;
	int r;

	/* inside a take of the GIL that the snapshot's GIL table has: the holder's */
	if (gil_wait(cs, w, a, woken, &ag)) {
		r = emit_over(cs, w, a, woken, OV_LOCK | OV_RECLAIM, 0, CAUSE_GIL, &ag);
		goto woken;
	}
	for (size_t f = 0; st && f < st->n_frames; f++) {
		unsigned fc = frame_class(cs, st->frames[f]);

		if (!ag.site && !(fc & FC_SLEEP))
			ag.site = st->frames[f] + 1;
		if (fc & FC_FAULT)
			c = CAUSE_FAULT;
		if (!ag.sys_frame && (fc & FC_SYSCALL))
			ag.sys_frame = st->frames[f] + 1;
	}
	if (c == CAUSE_FAULT) {
		ag = (struct agent){ .kind = AG_WAIT, .nr = -1, .site = ag.site };
	} else {
		sc = model_blocking_syscall_from(m, w, a, &walk_of(cs, w)->sc_hint);
		if (sc >= 0) {
			ag.nr = (int32_t)s->syscalls->nr[sc];
			ag.sys_frame = 0;
		}
		blocked_waker(cs, w, a, woken, off, sc, &ag);
	}
	/* a GIL wait in it is the GIL's: the futex it slept in, its waker, are how it waited */
	r = emit_over(cs, w, a, woken, OV_LOCK | OV_RECLAIM | OV_GIL, 0, c, &ag);
woken:
	if (r < 0 || woken >= b)
		return r;
	{
		struct culprit runner = model_prev_task(sw, in);

		if (!off_home(w, cpu_in) && plain_cfs(s, &runner) && throttled_wait(w, b - woken)) {
			struct agent th = throttle_agent(cpu_in, false);

			return emit_over(cs, w, woken, b, 0, cpu_in, CAUSE_THROTTLE, &th);
		}
		return emit_wait(cs, w, woken, b, cpu_in, &runner, true);
	}
}

static int emit_run(struct causes *cs, struct wthread *w, uint64_t a, uint64_t b, uint32_t cpu)
{
	struct walk *x = walk_of(cs, w);
	ssize_t k;

	for (k = 0; k < (ssize_t)w->n_cpus && w->cpus[k] != cpu; k++)
		;
	if (k < (ssize_t)w->n_cpus && b > a)
		x->cpu_run[k] += b - a;
	/* inside a GIL wait, it ran the loop that takes the GIL: the GIL's time too */
	return emit_over(cs, w, a, b, OV_IRQ | OV_LOCK | OV_RECLAIM | OV_GIL, cpu, CAUSE_RUNNING, &no_agent);
}

/* ---- the walk ---- */

/* When each thread came to be in the window: its fork's time, else the window's start. */
static void find_births(struct causes *cs)
{
	const struct model *m = cs->m;
	const Hostprof__TaskEventTable *t = m->snap->task_events;
	uint64_t ts = m->snap->start_ns;

	for (size_t k = 0; k < m->n; k++)
		cs->wk[k].born = m->snap->start_ns;
	for (size_t i = 0; t && i < t->n_ts_delta; i++) {
		struct wthread *w;

		ts += t->ts_delta[i];
		if (t->kind[i] == HPS_TASK_FORK && (w = model_thread(m, t->child_pid[i], t->child_tid[i])) &&
		    cs->wk[model_thread_index(m, w)].born == m->snap->start_ns)
			cs->wk[model_thread_index(m, w)].born = ts;
	}
}

/* A switch-in at ts (row i) of a thread the window has not seen yet. */
static int first_switch_in(struct causes *cs, struct wthread *w, size_t i, uint64_t ts)
{
	struct model *m = cs->m;
	const Hostprof__SchedSwitchTable *sw = m->snap->switches;
	uint32_t kind = sw->n_next_wait_kind ? sw->next_wait_kind[i] : 0;
	uint64_t wait = sw->n_next_wait_ns ? MIN(sw->next_wait_ns[i], ts) : 0;
	const struct walk *x = walk_of(cs, w);
	int r;

	if (kind == HPS_WAIT_WAKEUP) {
		/* an off-CPU row that ends here says when it went off */
		for (size_t k = 0; k < x->off.n; k++) {
			size_t o = x->off.r[k];

			if (m->off_ts[o] + m->snap->offcpu->dur_ns[o] == ts && m->off_ts[o] <= ts - wait) {
				r = emit(m, w, CAUSE_UNKNOWN, &no_agent, m->snap->start_ns, m->off_ts[o]);
				return r < 0 ? r : emit_block(cs, w, m->off_ts[o], ts, i, sw->cpu[i]);
			}
		}
		r = emit(m, w, CAUSE_UNKNOWN, &no_agent, m->snap->start_ns, ts - wait);
		if (r >= 0) {
			struct culprit runner = model_prev_task(sw, i);

			r = emit_wait(cs, w, ts - wait, ts, sw->cpu[i], &runner, true);
		}
		return r;
	}
	if (kind == HPS_WAIT_PREEMPT) {
		r = emit(m, w, CAUSE_UNKNOWN, &no_agent, m->snap->start_ns, ts - wait);
		return r < 0 ? r : emit_preempt(cs, w, ts - wait, ts, sw->cpu[i], SIZE_MAX, sw->cpu[i], i);
	}
	return emit(m, w, CAUSE_UNKNOWN, &no_agent, m->snap->start_ns, ts);
}

static int switch_out(struct causes *cs, struct wthread *w, size_t i, uint64_t ts)
{
	struct model *m = cs->m;
	const Hostprof__SchedSwitchTable *sw = m->snap->switches;
	struct walk *x = walk_of(cs, w);
	uint32_t state = sw->prev_state[i];
	int r = 0;

	w->acc.switched = true;
	switch (x->st) {
	case W_UNKNOWN: {
		uint64_t b0 = x->born;

		if (b0 > ts)
			b0 = m->snap->start_ns;
		r = emit(m, w, CAUSE_UNKNOWN, &no_agent, m->snap->start_ns, b0);
		if (r >= 0)
			r = emit_run(cs, w, b0, ts, sw->cpu[i]);
		break;
	}
	case W_RUN:
		r = emit_run(cs, w, x->since, ts, x->cpu);
		break;
	case W_PREEMPT: {
		/* its switch-in is not in the table: it waited at least while the tasks the table
		 * names ran on its CPU, and then ran; when it came back is not known */
		uint64_t last = x->since;

		if (x->cpu < cs->n_cpus) {
			const struct rows *l = &cs->cpu_sw[x->cpu];

			for (size_t k = rows_lower(l, m->sw_ts, x->since); k < l->n && m->sw_ts[l->r[k]] < ts;
			     k++)
				if (l->r[k] != x->row)
					last = m->sw_ts[l->r[k]];
		}
		r = last > x->since ? emit_preempt(cs, w, x->since, last, x->cpu, x->row, x->cpu, SIZE_MAX) :
				      0;
		if (r >= 0)
			r = emit(m, w, CAUSE_UNKNOWN, &no_agent, last, ts);
		break;
	}
	default: /* a switch-in was lost */
		r = emit(m, w, CAUSE_UNKNOWN, &no_agent, x->since, ts);
		break;
	}
	x->since = ts;
	x->cpu = sw->cpu[i];
	x->row = i;
	x->st = HPS_STATE_RUNNABLE(state) ? W_PREEMPT : (state & STATE_DEAD) ? W_DEAD : W_BLOCK;
	return r;
}

static int switch_in(struct causes *cs, struct wthread *w, size_t i, uint64_t ts)
{
	struct model *m = cs->m;
	const Hostprof__SchedSwitchTable *sw = m->snap->switches;
	struct walk *x = walk_of(cs, w);
	int r;

	w->acc.switched = true;
	switch (x->st) {
	case W_UNKNOWN:
		r = first_switch_in(cs, w, i, ts);
		break;
	case W_PREEMPT:
		r = emit_preempt(cs, w, x->since, ts, x->cpu, x->row, sw->cpu[i], i);
		break;
	case W_BLOCK:
		r = emit_block(cs, w, x->since, ts, i, sw->cpu[i]);
		break;
	default: /* a switch-out was lost, or a tid came back */
		r = emit(m, w, CAUSE_UNKNOWN, &no_agent, x->since, ts);
		break;
	}
	x->st = W_RUN;
	x->since = ts;
	x->cpu = sw->cpu[i];
	return r;
}

/* The window's end: each thread's last state runs to it. */
static int walk_end(struct causes *cs, struct wthread *w)
{
	struct model *m = cs->m;
	uint64_t end = MAX(m->snap->end_ns, m->snap->start_ns);
	struct walk *x = walk_of(cs, w);

	switch (x->st) {
	case W_RUN:
		return emit_run(cs, w, x->since, end, x->cpu);
	case W_PREEMPT:
		return emit_preempt(cs, w, x->since, end, x->cpu, x->row, x->cpu, SIZE_MAX);
	case W_BLOCK:
		return emit_block(cs, w, x->since, end, SIZE_MAX, x->cpu);
	case W_DEAD:
		return emit(m, w, CAUSE_UNKNOWN, &no_agent, x->since, end);
	case W_UNKNOWN:
		break;
	}
	return emit(m, w, CAUSE_UNKNOWN, &no_agent, m->snap->start_ns, end);
}

static int walk_switches(struct causes *cs)
{
	struct model *m = cs->m;
	const Hostprof__SchedSwitchTable *sw = m->snap->switches;
	size_t n = sw ? sw->n_ts_delta : 0;
	int r;

	for (size_t i = 0; i < n; i++) {
		struct wthread *w = model_thread(m, sw->prev_pid[i], sw->prev_tid[i]);

		/* the switch-out first: a thread switched to itself (a tracepoint quirk) ends and
		 * starts again */
		if (w && (r = switch_out(cs, w, i, m->sw_ts[i])) < 0)
			return r;
		w = model_thread(m, sw->next_pid[i], sw->next_tid[i]);
		if (w && (r = switch_in(cs, w, i, m->sw_ts[i])) < 0)
			return r;
	}
	for (size_t k = 0; k < m->n; k++) {
		r = walk_end(cs, &m->t[k]);
		if (r >= 0)
			r = episode_close(&m->t[k].acc);
		if (r < 0)
			return r;
	}
	return 0;
}

/* Whether w may live on cpu: its affinity (when the snapshot has it) is bound to fewer
 * CPUs than the host has, and cpu is one of them. */
static bool bound_to(const struct model *m, const struct wthread *w, uint32_t cpu)
{
	uint32_t ncpus = m->snap->host ? m->snap->host->ncpus : 0;

	if (!w->n_cpus_allowed)
		return true; /* not known: what it ran on says */
	if (ncpus && w->n_cpus_allowed >= ncpus)
		return false; /* free to run anywhere */
	for (size_t i = 0; i < w->n_cpus_allowed; i++)
		if (w->cpus_allowed[i] == cpu)
			return true;
	return false;
}

/* Running time of w on cpu, in [a, b) (as emit_run() counts it). */
static void run_time(struct causes *cs, struct wthread *w, uint64_t a, uint64_t b, uint32_t cpu)
{
	struct walk *x = walk_of(cs, w);

	for (size_t k = 0; k < w->n_cpus; k++) {
		if (w->cpus[k] == cpu) {
			if (b > a)
				x->cpu_run[k] += b - a;
			return;
		}
	}
}

/*
 * The first walk, for find_homes(): the threads' states through the switches as
 * walk_switches() takes them (switch_out(), switch_in(), walk_end()), and their running
 * time by CPU, which is all that walk's emit_run() counts and all find_homes() reads of
 * it; nothing emitted (what the full walk emitted then was thrown away: half the model's
 * time on a busy window).
 */
static void walk_runs(struct causes *cs)
{
	struct model *m = cs->m;
	const Hostprof__SchedSwitchTable *sw = m->snap->switches;
	uint64_t end = MAX(m->snap->end_ns, m->snap->start_ns);
	size_t n = sw ? sw->n_ts_delta : 0;

	for (size_t i = 0; i < n; i++) {
		uint64_t ts = m->sw_ts[i];
		struct wthread *w = model_thread(m, sw->prev_pid[i], sw->prev_tid[i]);
		struct walk *x;

		if (w) {
			uint32_t state = sw->prev_state[i];

			x = walk_of(cs, w);
			if (x->st == W_UNKNOWN)
				run_time(cs, w, x->born > ts ? m->snap->start_ns : x->born, ts, sw->cpu[i]);
			else if (x->st == W_RUN)
				run_time(cs, w, x->since, ts, x->cpu);
			x->since = ts;
			x->cpu = sw->cpu[i];
			x->row = i;
			x->st = HPS_STATE_RUNNABLE(state) ? W_PREEMPT : (state & STATE_DEAD) ? W_DEAD : W_BLOCK;
		}
		w = model_thread(m, sw->next_pid[i], sw->next_tid[i]);
		if (w) {
			x = walk_of(cs, w);
			x->st = W_RUN;
			x->since = ts;
			x->cpu = sw->cpu[i];
		}
	}
	for (size_t k = 0; k < m->n; k++)
		if (cs->wk[k].st == W_RUN)
			run_time(cs, &m->t[k], cs->wk[k].since, end, cs->wk[k].cpu);
}

/* The CPU each thread lives on, from a first walk: see the top of this file. */
static int find_homes(struct causes *cs)
{
	struct model *m = cs->m;
	const Hostprof__MigrationTable *mg = m->snap->migrations;

	for (size_t k = 0; k < m->n; k++)
		m->t[k].acc.home_cpu = -1;
	walk_runs(cs);
	for (size_t k = 0; k < m->n; k++) {
		struct wthread *w = &m->t[k];
		struct walk *x = &cs->wk[k];
		uint64_t total = 0, best = 0;
		size_t at = 0;

		for (size_t c = 0; c < w->n_cpus; c++) {
			total += x->cpu_run[c];
			if (x->cpu_run[c] > best) {
				best = x->cpu_run[c];
				at = c;
			}
		}
		if (total && best * HOME_SHARE_DEN >= total * HOME_SHARE_NUM && bound_to(m, w, w->cpus[at])) {
			for (size_t i = 0; i < x->mig.n; i++)
				if (mg->from_cpu[x->mig.r[i]] == w->cpus[at] &&
				    mg->to_cpu[x->mig.r[i]] != w->cpus[at])
					w->acc.moves_off++;
			if (w->acc.moves_off >= (w->n_cpus_allowed ? 1u : 2u))
				w->acc.home_cpu = w->cpus[at];
		}
		/* start again for the real walk */
		free(w->acc.ag);
		free(w->acc.slots);
		free(w->acc.ep);
		w->acc = (struct account){ .home_cpu = w->acc.home_cpu, .moves_off = w->acc.moves_off };
		x->st = W_UNKNOWN;
	}
	return 0;
}

/* ---- results ---- */

/* (qsort_r: the formats of a snapshot are written by several threads at once) */
static int cmp_by_cause(const void *a, const void *b, void *ud)
{
	const struct wthread *sort_thread = ud;
	const struct agent *x = &sort_thread->acc.ag[*(const uint32_t *)a];
	const struct agent *y = &sort_thread->acc.ag[*(const uint32_t *)b];
	int c;

	if (x->cause != y->cause)
		return x->cause < y->cause ? -1 : 1;
	c = tally_cmp(&x->sum, &y->sum);
	if (c)
		return c;
	return *(const uint32_t *)a < *(const uint32_t *)b ? -1 : 1;
}

static int sort_agents(struct wthread *w)
{
	struct account *acc = &w->acc;

	acc->by_cause = calloc(MAX(acc->n_ag, (size_t)1), sizeof(*acc->by_cause));
	if (!acc->by_cause)
		return -ENOMEM;
	for (size_t i = 0; i < acc->n_ag; i++)
		acc->by_cause[i] = (uint32_t)i;
	qsort_r_safe(acc->by_cause, acc->n_ag, sizeof(*acc->by_cause), cmp_by_cause, w);
	return 0;
}

size_t model_cause_agents(const struct wthread *w, enum cause c, const uint32_t **ret_first)
{
	const struct account *acc = &w->acc;
	size_t i = 0, n = 0;

	while (i < acc->n_ag && acc->ag[acc->by_cause[i]].cause < c)
		i++;
	while (i + n < acc->n_ag && acc->ag[acc->by_cause[i + n]].cause == c)
		n++;
	*ret_first = acc->by_cause + i;
	return n;
}

enum cause model_top_cause(const struct wthread *w)
{
	enum cause best = CAUSE_MAX;

	for (enum cause c = 0; c < CAUSE_MAX; c++)
		if (cause_lost(c) && w->acc.cause[c].time_ns &&
		    (best == CAUSE_MAX || w->acc.cause[c].time_ns > w->acc.cause[best].time_ns))
			best = c;
	return best;
}

static int cmp_part(const void *a, const void *b)
{
	const struct episode_part *x = a, *y = b;

	if (x->ns != y->ns)
		return x->ns > y->ns ? -1 : 1;
	return x->agent < y->agent ? -1 : x->agent > y->agent;
}

size_t model_episode_parts(const struct episode *e, struct episode_part ret[EPISODE_PARTS])
{
	memcpy(ret, e->part, e->n_parts * sizeof(*ret));
	qsort_safe(ret, e->n_parts, sizeof(*ret), cmp_part);
	return e->n_parts;
}

static const char *const default_globs[] = { "acl_thread" };

/* The dispatch threads: see the top of this file. */
static void pick_dispatch(struct model *m)
{
	const Hostprof__Snapshot *s = m->snap;
	struct wthread *best = NULL;

	m->dispatch_default = !s->has_dispatch_set || !s->dispatch_set;
	m->dispatch_globs = m->dispatch_default ? default_globs : (const char *const *)s->dispatch_threads;
	m->n_dispatch_globs = m->dispatch_default ? ARRAY_SIZE(default_globs) : s->n_dispatch_threads;
	m->n_dispatch = 0;
	m->verdict = -1;
	for (size_t k = 0; k < m->n; k++)
		for (size_t g = 0; g < m->n_dispatch_globs && !m->t[k].dispatch; g++)
			if (thread_glob_match(m->dispatch_globs[g], m->t[k].comm)) {
				m->t[k].dispatch = true;
				m->n_dispatch++;
			}
	m->dispatch_why = DISPATCH_MATCHED;
	if (!m->n_dispatch) {
		/* the main thread, where it switched in the window (a Python job's training loop
		 * dispatches from it); else the thread that ran the most */
		best = model_thread(m, s->pid, s->pid);
		m->dispatch_why = DISPATCH_MAIN;
		if (!best || !best->acc.switched) {
			best = NULL;
			for (size_t k = 0; k < m->n; k++)
				if (m->t[k].acc.cause[CAUSE_RUNNING].time_ns &&
				    (!best || m->t[k].acc.cause[CAUSE_RUNNING].time_ns >
						      best->acc.cause[CAUSE_RUNNING].time_ns))
					best = &m->t[k];
			m->dispatch_why = DISPATCH_MOST_RUN;
		}
		if (!best && m->n) {
			best = &m->t[0];
			m->dispatch_why = DISPATCH_MAIN;
		}
		if (!best) {
			m->dispatch_why = DISPATCH_NONE;
			return;
		}
		best->dispatch = true;
		m->n_dispatch = 1;
	}
	for (size_t k = 0; k < m->n; k++)
		if (m->t[k].dispatch &&
		    (m->verdict < 0 || m->t[k].acc.lost_ns > m->t[m->verdict].acc.lost_ns))
			m->verdict = (ssize_t)k;
}

static void causes_free(struct causes *cs)
{
	for (size_t k = 0; cs->wk && k < cs->m->n; k++) {
		struct walk *x = &cs->wk[k];

		rows_free(&x->irq);
		rows_free(&x->lck);
		rows_free(&x->rcl);
		rows_free(&x->off);
		rows_free(&x->wake);
		rows_free(&x->mig);
		rows_free(&x->sc);
		rows_free(&x->gil);
		free(x->cpu_run);
	}
	for (size_t c = 0; c < cs->n_cpus; c++) {
		if (cs->cpu_sw)
			rows_free(&cs->cpu_sw[c]);
		if (cs->cpu_irq)
			rows_free(&cs->cpu_irq[c]);
	}
	free(cs->cpu_sw);
	free(cs->cpu_irq);
	free(cs->gil.r);
	free(cs->gil.ts);
	free(cs->gil.holder_comm);
	free(cs->wk);
	free(cs->ov);
	free(cs->bounds);
	free(cs->fcls);
}

int model_causes(struct model *m)
{
	struct causes cs = { .m = m };
	int r;

	cs.wk = calloc(MAX(m->n, (size_t)1), sizeof(*cs.wk));
	cs.fcls = calloc(MAX(m->fn.n, (size_t)1), sizeof(*cs.fcls));
	if (!cs.wk || !cs.fcls) {
		free(cs.wk);
		free(cs.fcls);
		return -ENOMEM;
	}
	r = index_rows(&cs);
	if (r >= 0)
		r = index_gil(&cs);
	if (r >= 0) {
		find_births(&cs);
		r = find_homes(&cs);
	}
	if (r >= 0)
		r = walk_switches(&cs);
	for (size_t k = 0; r >= 0 && k < m->n; k++)
		r = sort_agents(&m->t[k]);
	causes_free(&cs);
	if (r < 0)
		return r;
	pick_dispatch(m);
	return 0;
}

void model_causes_free(struct model *m)
{
	for (size_t k = 0; k < m->n; k++) {
		free(m->t[k].acc.ag);
		free(m->t[k].acc.slots);
		free(m->t[k].acc.by_cause);
		free(m->t[k].acc.ep);
		m->t[k].acc = (struct account){};
	}
	free(m->wk_ts);
	m->wk_ts = NULL;
	free(m->gil);
	free(m->gil_ts);
	free(m->gil_dur);
	m->gil = NULL;
	m->gil_ts = m->gil_dur = NULL;
	m->n_gil = 0;
}

static int cmp_gil(const void *a, const void *b)
{
	const struct gil_wait *x = a, *y = b;

	if (x->begin != y->begin)
		return x->begin < y->begin ? -1 : 1;
	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	return x->end < y->end ? -1 : x->end > y->end;
}

int model_gil(struct model *m, const struct gil_wait *gil, size_t n)
{
	const Hostprof__Snapshot *s = m->snap;

	if (!gil) /* the GIL capture's table (issue 21) goes here: no snapshot has one yet */
		return 0;
	for (size_t i = 0; i < n; i++)
		if (gil[i].end < gil[i].begin || (gil[i].holder_comm && gil[i].holder_comm >= s->n_strings) ||
		    (gil[i].function && gil[i].function >= s->n_strings) ||
		    (gil[i].file && gil[i].file >= s->n_strings))
			return -EINVAL;
	m->gil = malloc(MAX(n, (size_t)1) * sizeof(*m->gil));
	if (!m->gil)
		return -ENOMEM;
	memcpy(m->gil, gil, n * sizeof(*gil));
	m->n_gil = n;
	qsort_safe(m->gil, n, sizeof(*m->gil), cmp_gil);
	return 0;
}

/* Short names of the causes, for an episode's name. */
static const char *const cause_short[CAUSE_MAX] = {
	[CAUSE_RUNNING] = "running",
	[CAUSE_RT] = "RT",
	[CAUSE_CFS] = "CFS",
	[CAUSE_RUNQ] = "runqueue",
	[CAUSE_GIL] = "GIL",
	[CAUSE_BLOCKED] = "blocked",
	[CAUSE_LOCK] = "lock",
	[CAUSE_RECLAIM] = "reclaim",
	[CAUSE_FAULT] = "fault",
	[CAUSE_IRQ] = "irq",
	[CAUSE_THROTTLE] = "throttled",
	[CAUSE_MIGRATION] = "moved",
	[CAUSE_HOSTPROF] = "hostprof",
	[CAUSE_UNKNOWN] = "not known",
};

int report_episodes(const Hostprof__Snapshot *snap, struct report_episode **ret, size_t *ret_n)
{
	const struct model *m;
	int r;

	r = model_get(snap, &m);
	if (r < 0)
		return r;
	r = model_episodes(m, ret, ret_n);
	model_put(m);
	return r;
}

int model_episodes(const struct model *m, struct report_episode **ret, size_t *ret_n)
{
	const Hostprof__Snapshot *snap = m->snap;
	struct report_episode *out = NULL;
	size_t n = 0, cap = 0;
	int r = 0;

	for (size_t k = 0; k < m->n && r >= 0; k++) {
		const struct wthread *w = &m->t[k];

		for (size_t i = 0; w->dispatch && i < w->acc.n_ep; i++) {
			const struct episode *e = &w->acc.ep[i];
			struct episode_part parts[EPISODE_PARTS];
			size_t np = model_episode_parts(e, parts), on = 0, od = 0;
			struct report_episode *x;

			r = reserve_one(&out, n, &cap, sizeof(*out));
			if (r < 0)
				break;
			x = &out[n++];
			*x = (struct report_episode){
				.tid = w->tid, .pid = snap->pid, .begin = e->begin, .end = e->end
			};
			on = (size_t)snprintf(x->name, sizeof(x->name),
					      "stall %.1f ms:", ms(e->end - e->begin));
			for (size_t p = 0; p < np; p++) {
				const struct agent *a = &w->acc.ag[parts[p].agent];
				char desc[320];

				report_agent_desc(m, w, a, desc, sizeof(desc));
				if (on < sizeof(x->name))
					on += (size_t)snprintf(x->name + on, sizeof(x->name) - on,
							       "%s %.1f %s", p ? "," : "", ms(parts[p].ns),
							       cause_short[a->cause]);
				if (od < sizeof(x->detail))
					od += (size_t)snprintf(x->detail + od, sizeof(x->detail) - od,
							       "%s%.1f ms %s%s%s", p ? "; " : "",
							       ms(parts[p].ns), report_cause_name(a->cause),
							       desc[0] ? ": " : "", desc);
			}
			if (e->rest_ns && od < sizeof(x->detail))
				snprintf(x->detail + od, sizeof(x->detail) - od, "; %.1f ms more",
					 ms(e->rest_ns));
		}
	}
	if (r < 0) {
		free(out);
		return r;
	}
	*ret = out;
	*ret_n = n;
	return 0;
}
