// SPDX-License-Identifier: GPL-2.0-only
/*
 * Interference in the report's model (report_internal.h), from the tables
 * Snapshot.interference says were captured (a table whose bit is clear is ignored, and
 * then the report says nothing of it but that it was not captured). Per watched thread:
 * the interrupts that stole its CPU time (IrqTable rows with flag 1 and its tid) and those
 * that ran on a CPU while it waited there (flag 2: the row names only the process, so a
 * row goes to each thread that, by the switch table, was runnable and not running on that
 * CPU at the time), grouped by kind, number and name; its reclaim and compaction by kind
 * and order; its page-fault counts; its kernel lock waits by lock and kind. A hard IRQ
 * nested in a softirq on the same CPU is counted in its own group but only once in a
 * thread's total.
 *
 * Interference can name the cause instead of the scheduler's worst stall
 * (report_model.c): a thread's single reclaim, lock wait or interrupt, and the total time
 * its top group of interrupts took from it while it ran ("lost 18% of CPU 1 to softirq
 * NET_RX"). All of them are involuntary. The longest single event wins over the
 * scheduler's worst stall when it is at least as long, a total when it is longer; and a
 * single event wins regardless of its length when it covers at least half of a runqueue
 * wait or a blocked interval of the same thread that is the worst stall (a lock wait is
 * the D interval it slept in, a softirq is why a woken thread found its CPU busy). A
 * preemption is never explained away: the task that preempted is its cause. Without
 * interference data the verdict is the scheduler's.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>

#include "hps.h"
#include "macro.h"
#include "report_internal.h"

#define MAX_CPU_TRACKED 16384 /* interrupt nesting is followed on CPUs below this */

/* By HPS_INTERF_ bit. fault-types only refines faults (off by default): it is named when
 * captured, never as missing. */
static const char *const interference_names[] = { "irqs", "reclaim", "faults", "locks", "fault-types" };

const char *model_interference_name(size_t b)
{
	return b < ARRAY_SIZE(interference_names) ? interference_names[b] : NULL;
}

static uint64_t overlap(uint64_t a0, uint64_t a1, uint64_t b0, uint64_t b1)
{
	uint64_t lo = MAX(a0, b0), hi = MIN(a1, b1);

	return hi > lo ? hi - lo : 0;
}

/* An interference event (or total) as the verdict's candidate; see the top of this file. */
static void consider_cause(struct model *m, const struct stall *c)
{
	const struct stall *w = &m->worst;
	uint64_t ov;

	if (!c->dur)
		return;
	if (m->cause.kind == STALL_NONE || c->dur > m->cause.dur ||
	    (c->dur == m->cause.dur && c->ts < m->cause.ts))
		m->cause = *c;
	if (c->kind == STALL_IRQ_TOTAL || (w->kind != STALL_RUNQUEUE && w->kind != STALL_BLOCKED) ||
	    c->thread != w->thread)
		return;
	ov = overlap(c->ts, c->ts + c->dur, w->ts, w->ts + w->dur);
	if (!ov || ov < w->dur - ov)
		return;
	if (m->explains.kind == STALL_NONE || ov > m->explains_overlap ||
	    (ov == m->explains_overlap && c->ts < m->explains.ts)) {
		m->explains = *c;
		m->explains_overlap = ov;
	}
}

/* Row i of an interference table took thread w's time from ts for dur, ending on cpu. */
static int thread_event(struct model *m, struct wthread *w, enum stall_kind kind, size_t i, uint64_t ts,
			uint64_t dur, uint32_t cpu)
{
	struct stall st = { .kind = kind,
			    .involuntary = true,
			    .thread = model_thread_index(m, w),
			    .row = i,
			    .ts = ts,
			    .dur = dur };
	int r;

	w->active = w->interfered = true;
	r = model_add_cpu(w, cpu);
	if (r < 0)
		return r;
	consider_cause(m, &st);
	return 0;
}

static bool same_event(const struct stall *a, const struct stall *b)
{
	return a->kind == b->kind && a->thread == b->thread && a->row == b->row;
}

/* The verdict: the scheduler's worst stall, or the interference that caused it or beats it. */
static void decide_cause(struct model *m)
{
	const struct stall *w = &m->worst, *c = &m->cause;

	if (c->kind != STALL_NONE && (w->kind == STALL_NONE || !w->involuntary || c->dur > w->dur ||
				      (c->dur == w->dur && c->kind != STALL_IRQ_TOTAL))) {
		if (m->explains.kind != STALL_NONE && same_event(c, &m->explains))
			m->explained = *w;
		m->worst = *c;
	} else if (m->explains.kind != STALL_NONE) {
		m->explained = *w;
		m->worst = m->explains;
	}
}

static int cmp_irq_group(const void *a, const void *b)
{
	const struct irq_group *x = a, *y = b;
	int c;

	c = tally_cmp(&x->sum, &y->sum);
	if (c)
		return c;
	if (x->kind != y->kind)
		return x->kind > y->kind ? -1 : 1; /* softirqs first */
	if (x->num != y->num)
		return x->num < y->num ? -1 : 1;
	return x->name < y->name ? -1 : x->name > y->name;
}

static int irq_side_add(struct irq_side *side, const Hostprof__IrqTable *t, size_t i, bool nested)
{
	uint64_t dur = t->dur_ns[i];
	struct irq_group *g = NULL;
	int r;

	for (size_t k = 0; k < side->n && !g; k++)
		if (side->g[k].kind == t->kind[i] && side->g[k].num == t->num[i] &&
		    side->g[k].name == t->name[i])
			g = &side->g[k];
	if (!g) {
		r = reserve_one(&side->g, side->n, &side->cap, sizeof(*side->g));
		if (r < 0)
			return r;
		g = &side->g[side->n++];
		*g = (struct irq_group){ .kind = t->kind[i], .num = t->num[i], .name = t->name[i] };
	}
	tally_add(&g->sum, dur, i);
	side->count++;
	if (!nested)
		side->time_ns += dur;
	return model_cpus_add(&g->cpus, &g->n_cpus, &g->cap_cpus, t->cpu[i]);
}

/* The interrupt in row i ran on a CPU while a thread of the process waited there: each such thread. */
static int irq_waited(struct model *m, size_t i, bool nested, const struct rq_wait *const *active,
		      size_t n_active)
{
	const Hostprof__IrqTable *t = m->snap->irqs;
	uint64_t ts = m->irq_ts[i], end = ts + t->dur_ns[i];
	bool matched = false;
	int r;

	for (size_t k = 0; k < n_active; k++) {
		const struct rq_wait *q = active[k];
		struct wthread *w = &m->t[q->thread];
		struct stall st = { .kind = STALL_IRQ,
				    .involuntary = true,
				    .waited = true,
				    .thread = q->thread,
				    .row = i,
				    .ts = ts,
				    .dur = t->dur_ns[i] };

		if (q->begin >= end || q->end <= ts || (q->cpu_out != t->cpu[i] && q->cpu_in != t->cpu[i]))
			continue;
		matched = true;
		w->active = w->interfered = true;
		r = irq_side_add(&w->irq_waited, t, i, nested);
		if (r < 0)
			return r;
		consider_cause(m, &st);
	}
	if (!matched) {
		m->unmatched_count++;
		if (!nested)
			m->unmatched_ns += t->dur_ns[i];
	}
	return 0;
}

static int analyze_irqs(struct model *m)
{
	const Hostprof__Snapshot *s = m->snap;
	const Hostprof__IrqTable *t = s->irqs;
	size_t n = (m->interference & HPS_INTERF_IRQ) && t ? t->n_ts_delta : 0, n_cpus = 0;
	_cleanup_free_ uint64_t *soft_end = NULL; /* by CPU: when its latest softirq ended */
	_cleanup_free_ const struct rq_wait **active = NULL; /* waits that may hold the rows to come */
	size_t n_active = 0, cap_active = 0, next_wait = 0, keep;
	int r;

	r = hps_abs_times(s->start_ns, t ? t->ts_delta : NULL, n, &m->irq_ts);
	if (r < 0)
		return r;
	for (size_t i = 0; i < n; i++)
		if (t->cpu[i] < MAX_CPU_TRACKED)
			n_cpus = MAX(n_cpus, (size_t)t->cpu[i] + 1);
	soft_end = calloc(MAX(n_cpus, (size_t)1), sizeof(*soft_end));
	if (!soft_end)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		uint64_t ts = m->irq_ts[i], end = ts + t->dur_ns[i];
		uint32_t cpu = t->cpu[i];
		bool nested = false;
		struct wthread *w;

		/* rows come in order of entry: a softirq before the hard IRQs nested in it */
		if (cpu < n_cpus) {
			if (t->kind[i] == HPS_IRQ_SOFT)
				soft_end[cpu] = MAX(soft_end[cpu], end);
			else
				nested = ts < soft_end[cpu];
		}
		w = t->flags[i] & HPS_IRQ_INTERRUPTED ? model_thread(m, t->pid[i], t->tid[i]) : NULL;
		if (w) {
			r = irq_side_add(&w->irq_ran, t, i, nested);
			if (r < 0)
				return r;
			r = thread_event(m, w, STALL_IRQ, i, ts, t->dur_ns[i], cpu);
			if (r < 0)
				return r;
		}
		if (!(t->flags[i] & HPS_IRQ_WAITED) || t->pid[i] != s->pid)
			continue;
		/* rows come by ts: a wait that ended before this row ended before every later one */
		keep = 0;
		for (size_t k = 0; k < n_active; k++)
			if (active[k]->end > ts)
				active[keep++] = active[k];
		n_active = keep;
		for (; next_wait < m->n_waits && m->waits[next_wait].begin < end; next_wait++) {
			if (m->waits[next_wait].end <= ts)
				continue;
			r = reserve_one(&active, n_active, &cap_active, sizeof(*active));
			if (r < 0)
				return r;
			active[n_active++] = &m->waits[next_wait];
		}
		r = irq_waited(m, i, nested, active, n_active);
		if (r < 0)
			return r;
	}
	for (size_t k = 0; k < m->n; k++) {
		struct wthread *w = &m->t[k];

		qsort_safe(w->irq_ran.g, w->irq_ran.n, sizeof(*w->irq_ran.g), cmp_irq_group);
		qsort_safe(w->irq_waited.g, w->irq_waited.n, sizeof(*w->irq_waited.g), cmp_irq_group);
		if (w->irq_ran.n) {
			struct stall st = { .kind = STALL_IRQ_TOTAL,
					    .involuntary = true,
					    .thread = k,
					    .row = 0,
					    .ts = m->irq_ts[w->irq_ran.g[0].sum.max_row],
					    .dur = w->irq_ran.g[0].sum.time_ns };

			consider_cause(m, &st);
		}
	}
	return 0;
}

static int cmp_reclaim_group(const void *a, const void *b)
{
	const struct reclaim_group *x = a, *y = b;
	int c;

	c = tally_cmp(&x->sum, &y->sum);
	if (c)
		return c;
	if (x->kind != y->kind)
		return x->kind < y->kind ? -1 : 1;
	return x->order < y->order ? -1 : x->order > y->order;
}

static int analyze_reclaims(struct model *m)
{
	const Hostprof__Snapshot *s = m->snap;
	const Hostprof__ReclaimTable *t = s->reclaims;
	size_t n = (m->interference & HPS_INTERF_RECLAIM) && t ? t->n_ts_delta : 0;
	int r;

	r = hps_abs_times(s->start_ns, t ? t->ts_delta : NULL, n, &m->rcl_ts);
	if (r < 0)
		return r;
	for (size_t i = 0; i < n; i++) {
		struct wthread *w = model_thread(m, t->pid[i], t->tid[i]);
		struct reclaim_group *g = NULL;
		uint64_t dur = t->dur_ns[i];

		if (!w)
			continue;
		for (size_t k = 0; k < w->n_rcl && !g; k++)
			if (w->rcl[k].kind == t->kind[i] && w->rcl[k].order == t->order[i])
				g = &w->rcl[k];
		if (!g) {
			r = reserve_one(&w->rcl, w->n_rcl, &w->cap_rcl, sizeof(*w->rcl));
			if (r < 0)
				return r;
			g = &w->rcl[w->n_rcl++];
			*g = (struct reclaim_group){ .kind = t->kind[i], .order = t->order[i] };
		}
		tally_add(&g->sum, dur, i);
		if (t->kind[i] != HPS_RECLAIM_COMPACT) /* wraps rather than overflows on nonsense */
			g->pages = (int64_t)((uint64_t)g->pages + (uint64_t)t->result[i]);
		tally_add(&w->rcl_sum, dur, i);
		r = thread_event(m, w, STALL_RECLAIM, i, m->rcl_ts[i], dur, t->cpu[i]);
		if (r < 0)
			return r;
	}
	for (size_t k = 0; k < m->n; k++)
		qsort_safe(m->t[k].rcl, m->t[k].n_rcl, sizeof(*m->t[k].rcl), cmp_reclaim_group);
	return 0;
}

static int analyze_faults(struct model *m)
{
	const Hostprof__Snapshot *s = m->snap;
	const Hostprof__FaultTable *t = s->faults;
	size_t n = (m->interference & HPS_INTERF_FAULTS) && t ? t->n_ts_delta : 0;
	int r;

	r = hps_abs_times(s->start_ns, t ? t->ts_delta : NULL, n, &m->flt_ts);
	if (r < 0)
		return r;
	for (size_t i = 0; i < n; i++) {
		struct wthread *w = model_thread(m, t->pid[i], t->tid[i]);
		struct fault_sum *f;

		if (!w)
			continue;
		f = &w->flt;
		f->periods++;
		f->over_ns += t->dur_ns[i];
		f->faults += t->faults[i];
		f->write += t->write[i];
		f->exec += t->exec[i];
		f->prot += t->prot[i];
		f->minor += t->minor[i];
		f->major += t->major[i];
		if (t->major[i] > f->peak_major) {
			f->peak_major = t->major[i];
			f->peak_row = i;
		}
		if (t->faults[i] || t->minor[i] || t->major[i])
			w->active = w->interfered = true;
	}
	return 0;
}

static int cmp_lock_group(const void *a, const void *b)
{
	const struct lock_group *x = a, *y = b;
	int c;

	c = tally_cmp(&x->sum, &y->sum);
	if (c)
		return c;
	if (x->lock != y->lock)
		return x->lock < y->lock ? -1 : 1;
	return x->flags < y->flags ? -1 : x->flags > y->flags;
}

static int analyze_locks(struct model *m)
{
	const Hostprof__Snapshot *s = m->snap;
	const Hostprof__LockTable *t = s->locks;
	size_t n = (m->interference & HPS_INTERF_LOCKS) && t ? t->n_ts_delta : 0;
	int r;

	r = hps_abs_times(s->start_ns, t ? t->ts_delta : NULL, n, &m->lck_ts);
	if (r < 0)
		return r;
	for (size_t i = 0; i < n; i++) {
		struct wthread *w = model_thread(m, t->pid[i], t->tid[i]);
		struct lock_group *g = NULL;
		uint64_t dur = t->dur_ns[i];

		if (!w)
			continue;
		for (size_t k = 0; k < w->n_lck && !g; k++)
			if (w->lck[k].lock == t->lock[i] && w->lck[k].flags == t->flags[i])
				g = &w->lck[k];
		if (!g) {
			r = reserve_one(&w->lck, w->n_lck, &w->cap_lck, sizeof(*w->lck));
			if (r < 0)
				return r;
			g = &w->lck[w->n_lck++];
			*g = (struct lock_group){ .lock = t->lock[i],
						  .flags = t->flags[i],
						  .name = t->name[i] };
		}
		tally_add(&g->sum, dur, i);
		if (t->ret[i])
			g->failed++;
		tally_add(&w->lck_sum, dur, i);
		r = thread_event(m, w, STALL_LOCK, i, m->lck_ts[i], dur, t->cpu[i]);
		if (r < 0)
			return r;
	}
	for (size_t k = 0; k < m->n; k++)
		qsort_safe(m->t[k].lck, m->t[k].n_lck, sizeof(*m->t[k].lck), cmp_lock_group);
	return 0;
}

bool model_interference_missing(const struct model *m, size_t b)
{
	return !(m->interference & (1u << b)) && 1u << b != HPS_INTERF_FAULT_TYPES;
}

/* Per second over the periods the counts cover (the window when they say nothing). */
double model_fault_rate(const struct model *m, const struct fault_sum *fs)
{
	uint64_t over = fs->over_ns ? fs->over_ns : window_ns(m->snap);

	return over ? (double)(fs->minor + fs->major) * 1e9 / (double)over : 0.0;
}

int model_interference(struct model *m)
{
	int r;

	r = analyze_irqs(m);
	if (r >= 0)
		r = analyze_reclaims(m);
	if (r >= 0)
		r = analyze_faults(m);
	if (r >= 0)
		r = analyze_locks(m);
	if (r < 0)
		return r;
	decide_cause(m);
	return 0;
}
