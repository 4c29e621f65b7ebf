// SPDX-License-Identifier: GPL-2.0-only
/*
 * The report's model of a snapshot (report_internal.h). model_build() walks every table
 * once and finds, for each watched thread (a thread of Snapshot.pid seen in
 * Snapshot.threads or in any table), what the report says about it, and the worst stall
 * of the window. The text and JSON writers print that model and nothing else, so the two
 * always agree.
 *
 * What the model holds, per watched thread:
 *  - preemptions: switch-outs in state R or R+; the task switched in is the culprit, the
 *    time taken runs from the switch-out until the thread is switched in again (or until
 *    the end of the window, when it never is). Culprits are ranked by time taken.
 *  - runqueue latency: next_wait_ns of its switch-ins, after wakeups and after
 *    preemptions alike (rows whose next_wait_kind is 0 say nothing and are skipped);
 *    percentiles are nearest-rank.
 *  - the CPUs it ran on (switches, samples, syscall returns, off-CPU wake-ups) and its
 *    migrations.
 *  - its slow syscalls, slowest first; its syscall histograms, by total time.
 *  - its off-CPU intervals grouped by (user stack, kernel stack), by total time, each
 *    with its wakers.
 *  - its on-CPU samples by leaf function: the innermost user frame, else the innermost
 *    kernel frame; with the source line most of them are at, when DWARF said.
 * And for the process: the files without symbols its on-CPU leaf frames are in, unresolved,
 * with the Debian packages that would name them.
 *  - the interference it met: see report_interference.c.
 *
 * The worst stall: every interval in which a watched thread could not run is a
 * candidate. A thread that wanted the CPU and did not get it (preempted, or woken and
 * left waiting on a runqueue) or that was blocked uninterruptibly (D) was stalled by
 * something else; one sleeping interruptibly (S) is most often waiting for work. So the
 * longest involuntary interval is the worst stall, and the longest blocked interval only
 * when there is no involuntary one. Ties go to the earlier interval. Interference can
 * name another cause (report_interference.c).
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "hps.h"
#include "keysort.h"
#include "macro.h"
#include "report_internal.h"
#include "snapview.h"

void model_free(struct model *m)
{
	model_causes_free(m);
	for (size_t i = 0; i < m->n; i++) {
		struct wthread *w = &m->t[i];

		free(w->culprits);
		free(w->rq);
		free(w->cpus);
		free(w->migrations);
		free(w->syscalls);
		free(w->sc_by_ts);
		free(w->sc_end_max);
		free(w->hists);
		for (size_t g = 0; g < w->n_off; g++)
			free(w->off[g].wakers);
		free(w->off);
		free(w->leaves);
		for (size_t g = 0; g < w->irq_ran.n; g++)
			free(w->irq_ran.g[g].cpus);
		free(w->irq_ran.g);
		for (size_t g = 0; g < w->irq_waited.n; g++)
			free(w->irq_waited.g[g].cpus);
		free(w->irq_waited.g);
		free(w->rcl);
		free(w->lck);
	}
	free(m->t);
	free(m->tid_slots);
	free(m->sw_ts);
	free(m->mg_ts);
	free(m->sc_ts);
	free(m->off_ts);
	free(m->irq_ts);
	free(m->waits);
	free(m->rcl_ts);
	free(m->flt_ts);
	free(m->lck_ts);
	frame_names_free(&m->fn);
	free(m->hints);
	*m = (struct model){};
}

static size_t tid_hash(uint32_t tid, size_t mask)
{
	return (size_t)(tid * 2654435761u) & mask;
}

/* The threads' index by tid: each row of the switch table looks up two of them. */
static int index_tids(struct model *m)
{
	size_t n = 16;

	while (n < 2 * m->n)
		n *= 2;
	m->tid_slots = calloc(n, sizeof(*m->tid_slots));
	if (!m->tid_slots)
		return -ENOMEM;
	m->tid_mask = n - 1;
	for (size_t i = 0; i < m->n; i++) {
		size_t k = tid_hash(m->t[i].tid, m->tid_mask);

		while (m->tid_slots[k])
			k = (k + 1) & m->tid_mask;
		m->tid_slots[k] = (uint32_t)i + 1;
	}
	return 0;
}

struct wthread *model_thread(const struct model *m, uint32_t pid, uint32_t tid)
{
	if (pid != m->snap->pid || !m->tid_slots)
		return NULL;
	for (size_t k = tid_hash(tid, m->tid_mask); m->tid_slots[k]; k = (k + 1) & m->tid_mask)
		if (m->t[m->tid_slots[k] - 1].tid == tid)
			return &m->t[m->tid_slots[k] - 1];
	return NULL;
}

/*
 * The distinct tids of a snapshot: an open-addressed set (tid + 1, 0 = empty), so each
 * row of every table costs one probe instead of a place in an array sorted after.
 */
struct tidset {
	uint64_t *slots;
	size_t mask, n;
	uint32_t *tids; /* the members, in the order they came */
	size_t cap;
};

static size_t tid_slot(uint32_t tid, size_t mask)
{
	return (size_t)(((uint64_t)tid * 0x9e3779b97f4a7c15ull) >> 32) & mask;
}

static int tidset_add(struct tidset *t, uint32_t tid)
{
	size_t i;

	if (2 * (t->n + 1) > t->mask + 1) {
		size_t nslots = t->slots ? 2 * (t->mask + 1) : 64;
		uint64_t *slots = calloc(nslots, sizeof(*slots));

		if (!slots)
			return -ENOMEM;
		for (size_t k = 0; k < t->n; k++) {
			for (i = tid_slot(t->tids[k], nslots - 1); slots[i]; i = (i + 1) & (nslots - 1))
				;
			slots[i] = (uint64_t)t->tids[k] + 1;
		}
		free(t->slots);
		t->slots = slots;
		t->mask = nslots - 1;
	}
	for (i = tid_slot(tid, t->mask); t->slots[i]; i = (i + 1) & t->mask)
		if (t->slots[i] == (uint64_t)tid + 1)
			return 0;
	if (reserve_one(&t->tids, t->n, &t->cap, sizeof(*t->tids)) < 0)
		return -ENOMEM;
	t->slots[i] = (uint64_t)tid + 1;
	t->tids[t->n++] = tid;
	return 0;
}

/* Collects the tids of snap->pid from every table, then names them as the view does. */
static int model_threads(struct model *m)
{
	const Hostprof__Snapshot *s = m->snap;
	const Hostprof__SchedSwitchTable *sw = s->switches;
	struct tidset set = {};
	struct snapview v;
	uint32_t *tids;
	size_t n;
	int r;

#define ADD_TID(p, t)                                             \
	do {                                                      \
		if ((p) == s->pid && tidset_add(&set, (t)) < 0) { \
			free(set.slots);                          \
			free(set.tids);                           \
			return -ENOMEM;                           \
		}                                                 \
	} while (0)

	for (size_t i = 0; i < s->n_threads; i++)
		ADD_TID(s->threads[i]->pid, s->threads[i]->tid);
	for (size_t i = 0; sw && i < sw->n_ts_delta; i++) {
		ADD_TID(sw->prev_pid[i], sw->prev_tid[i]);
		ADD_TID(sw->next_pid[i], sw->next_tid[i]);
	}
	for (size_t i = 0; s->samples && i < s->samples->n_ts_delta; i++)
		ADD_TID(s->samples->pid[i], s->samples->tid[i]);
	for (size_t i = 0; s->offcpu && i < s->offcpu->n_ts_delta; i++)
		ADD_TID(s->offcpu->pid[i], s->offcpu->tid[i]);
	for (size_t i = 0; s->syscalls && i < s->syscalls->n_ts_delta; i++)
		ADD_TID(s->syscalls->pid[i], s->syscalls->tid[i]);
	for (size_t i = 0; s->migrations && i < s->migrations->n_ts_delta; i++)
		ADD_TID(s->migrations->pid[i], s->migrations->tid[i]);
	for (size_t i = 0; i < s->n_syscall_hist; i++)
		ADD_TID(s->syscall_hist[i]->pid, s->syscall_hist[i]->tid);
	for (size_t i = 0; (m->interference & HPS_INTERF_IRQ) && s->irqs && i < s->irqs->n_ts_delta; i++)
		if (s->irqs->flags[i] & HPS_IRQ_INTERRUPTED)
			ADD_TID(s->irqs->pid[i], s->irqs->tid[i]);
	for (size_t i = 0;
	     (m->interference & HPS_INTERF_RECLAIM) && s->reclaims && i < s->reclaims->n_ts_delta; i++)
		ADD_TID(s->reclaims->pid[i], s->reclaims->tid[i]);
	for (size_t i = 0; (m->interference & HPS_INTERF_FAULTS) && s->faults && i < s->faults->n_ts_delta;
	     i++)
		ADD_TID(s->faults->pid[i], s->faults->tid[i]);
	for (size_t i = 0; (m->interference & HPS_INTERF_LOCKS) && s->locks && i < s->locks->n_ts_delta; i++)
		ADD_TID(s->locks->pid[i], s->locks->tid[i]);
#undef ADD_TID

	free(set.slots);
	tids = set.tids;
	n = set.n;
	qsort_safe(tids, n, sizeof(*tids), cmp_u32);
	m->t = calloc(MAX(n, (size_t)1), sizeof(*m->t));
	if (!m->t) {
		free(tids);
		return -ENOMEM;
	}
	r = snapview_init(s, &v);
	if (r < 0) {
		free(tids);
		return r;
	}
	for (size_t i = 0; i < n; i++) {
		m->t[m->n].tid = tids[i];
		m->t[m->n].comm = snapview_comm(&v, tids[i]);
		m->t[m->n].cpu_quota_us = -1;
		m->n++;
	}
	free(tids);
	snapview_free(&v);
	if (m->n > UINT32_MAX - 1)
		return -E2BIG;
	r = index_tids(m);
	if (r < 0)
		return r;
	for (size_t i = 0; i < s->n_threads; i++) {
		const Hostprof__Thread *t = s->threads[i];
		struct wthread *w = model_thread(m, t->pid, t->tid);

		if (w && t->n_cpus_allowed) {
			w->cpus_allowed = t->cpus_allowed;
			w->n_cpus_allowed = t->n_cpus_allowed;
		}
		if (w && t->has_cpu_quota_us && t->has_cpu_period_us) {
			w->has_bandwidth = true;
			w->cgroup = t->cgroup ? t->cgroup : "";
			w->cpu_quota_us = t->cpu_quota_us;
			w->cpu_period_us = t->cpu_period_us;
		}
	}
	return 0;
}

/* Adds cpu to a sorted set of n of *cap. */
int model_cpus_add(uint32_t **cpus, size_t *n, size_t *cap, uint32_t cpu)
{
	size_t i;
	int r;

	for (i = 0; i < *n && (*cpus)[i] < cpu; i++)
		;
	if (i < *n && (*cpus)[i] == cpu)
		return 0;
	r = reserve_one(cpus, *n, cap, sizeof(**cpus));
	if (r < 0)
		return r;
	memmove(*cpus + i + 1, *cpus + i, (*n - i) * sizeof(**cpus));
	(*cpus)[i] = cpu;
	(*n)++;
	return 0;
}

int model_add_cpu(struct wthread *w, uint32_t cpu)
{
	return model_cpus_add(&w->cpus, &w->n_cpus, &w->cap_cpus, cpu);
}

/* Keeps the worst stall: involuntary before voluntary, then longer, then earlier. */
static void consider_stall(struct model *m, const struct stall *c)
{
	const struct stall *w = &m->worst;

	if (!c->dur)
		return;
	if (w->kind != STALL_NONE) {
		if (w->involuntary != c->involuntary) {
			if (w->involuntary)
				return;
		} else if (w->dur != c->dur) {
			if (w->dur > c->dur)
				return;
		} else if (w->ts <= c->ts) {
			return;
		}
	}
	m->worst = *c;
}

static int add_wait(struct model *m, const struct wthread *w, uint64_t begin, uint64_t end, uint32_t cpu_out,
		    uint32_t cpu_in)
{
	int r;

	if (end <= begin)
		return 0;
	r = reserve_one(&m->waits, m->n_waits, &m->cap_waits, sizeof(*m->waits));
	if (r < 0)
		return r;
	m->waits[m->n_waits++] = (struct rq_wait){ .begin = begin,
						   .end = end,
						   .cpu_out = cpu_out,
						   .cpu_in = cpu_in,
						   .thread = model_thread_index(m, w) };
	return 0;
}

/* The thread preempted at w->preempted_at runs again at ts on cpu_in. */
static int preemption_end(struct model *m, struct wthread *w, uint64_t ts, uint32_t cpu_in, bool to_end)
{
	struct culprit *c = &w->culprits[w->preempted_by];
	uint64_t wait = ts > w->preempted_at ? ts - w->preempted_at : 0;
	struct stall st = { .kind = STALL_PREEMPTED,
			    .involuntary = true,
			    .to_end = to_end,
			    .thread = model_thread_index(m, w),
			    .row = w->preempted_row,
			    .ts = w->preempted_at,
			    .dur = wait };

	w->preempted = false;
	w->preempt.time_ns += wait;
	w->preempt.max_ns = MAX(w->preempt.max_ns, wait);
	c->sum.time_ns += wait;
	c->sum.max_ns = MAX(c->sum.max_ns, wait);
	consider_stall(m, &st);
	return add_wait(m, w, w->preempted_at, ts, m->snap->switches->cpu[w->preempted_row], cpu_in);
}

static int preemption_begin(struct wthread *w, const Hostprof__SchedSwitchTable *sw, size_t i, uint64_t ts)
{
	size_t c;
	int r;

	for (c = 0; c < w->n_culprits; c++)
		if (w->culprits[c].tid == sw->next_tid[i] && w->culprits[c].pid == sw->next_pid[i])
			break;
	if (c == w->n_culprits) {
		r = reserve_one(&w->culprits, w->n_culprits, &w->cap_culprits, sizeof(*w->culprits));
		if (r < 0)
			return r;
		w->culprits[w->n_culprits++] = model_next_task(sw, i);
	}
	w->culprits[c].sum.count++;
	w->preempt.count++;
	w->preempted = true;
	w->preempted_at = ts;
	w->preempted_by = c;
	w->preempted_row = i;
	return 0;
}

int model_cmp_culprit(const void *a, const void *b)
{
	const struct culprit *x = a, *y = b;
	int c;

	c = tally_cmp(&x->sum, &y->sum);
	if (c)
		return c;
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	return x->tid < y->tid ? -1 : x->tid > y->tid;
}

static int cmp_rq_wait(const void *a, const void *b)
{
	const struct rq_wait *x = a, *y = b;

	if (x->begin != y->begin)
		return x->begin < y->begin ? -1 : 1;
	if (x->thread != y->thread)
		return x->thread < y->thread ? -1 : 1;
	return x->end < y->end ? -1 : x->end > y->end;
}

/* Fewer than this: qsort (keysort's counting passes cost more for a few). */
#define KEYSORT_MIN 64

/* Pairs for keysort(), and the room it needs; NULL without memory: the caller sorts as before. */
static struct keyed *keyed_new(size_t n)
{
	return malloc(2 * MAX(n, (size_t)1) * sizeof(struct keyed));
}

/* A thread's runqueue waits, ascending (for the percentiles). */
static void sort_rq(uint64_t *rq, size_t n)
{
	_cleanup_free_ struct keyed *v = n >= KEYSORT_MIN ? keyed_new(n) : NULL;

	if (!v) {
		qsort_safe(rq, n, sizeof(*rq), cmp_u64);
		return;
	}
	for (size_t i = 0; i < n; i++)
		v[i] = (struct keyed){ rq[i], 0 };
	keysort(v, v + n, n);
	for (size_t i = 0; i < n; i++)
		rq[i] = v[i].key;
}

static int cmp_wait_tie(const void *a, const void *b, void *waits)
{
	const struct keyed *x = a, *y = b;
	const struct rq_wait *w = waits;
	int c = cmp_rq_wait(&w[x->val], &w[y->val]);

	return c ? c : (x->val < y->val ? -1 : x->val > y->val);
}

/* m->waits as cmp_rq_wait orders them (ties as they came): by begin, stable, then the few
 * that begin together by thread and end. */
static int sort_waits(struct model *m)
{
	size_t n = m->n_waits;
	_cleanup_free_ struct keyed *v = n >= KEYSORT_MIN ? keyed_new(n) : NULL;
	struct rq_wait *sorted;

	sorted = v ? malloc(n * sizeof(*sorted)) : NULL;
	if (!sorted) {
		qsort_safe(m->waits, n, sizeof(*m->waits), cmp_rq_wait);
		return 0;
	}
	for (size_t i = 0; i < n; i++)
		v[i] = (struct keyed){ m->waits[i].begin, i };
	keysort(v, v + n, n);
	for (size_t i = 0, j; i < n; i = j) {
		for (j = i + 1; j < n && v[j].key == v[i].key; j++)
			;
		qsort_r_safe(v + i, j - i, sizeof(*v), cmp_wait_tie, m->waits);
	}
	for (size_t i = 0; i < n; i++)
		sorted[i] = m->waits[v[i].val];
	free(m->waits);
	m->waits = sorted;
	m->cap_waits = n;
	return 0;
}

static int analyze_switches(struct model *m)
{
	const Hostprof__Snapshot *s = m->snap;
	const Hostprof__SchedSwitchTable *sw = s->switches;
	size_t n = sw ? sw->n_ts_delta : 0;
	int r;

	r = hps_switch_times(s, &m->sw_ts);
	if (r < 0)
		return r;
	for (size_t i = 0; i < n; i++) {
		uint64_t ts = m->sw_ts[i];
		struct wthread *w;

		w = model_thread(m, sw->next_pid[i], sw->next_tid[i]);
		if (w) {
			uint32_t kind = sw->n_next_wait_kind ? sw->next_wait_kind[i] : 0;
			bool was_preempted = w->preempted;

			w->active = true;
			r = model_add_cpu(w, sw->cpu[i]);
			if (r < 0)
				return r;
			if (w->preempted) {
				r = preemption_end(m, w, ts, sw->cpu[i], false);
				if (r < 0)
					return r;
			}
			if (kind && sw->n_next_wait_ns) {
				uint64_t wait = sw->next_wait_ns[i];

				r = reserve_one(&w->rq, w->n_rq, &w->cap_rq, sizeof(*w->rq));
				if (r < 0)
					return r;
				w->rq[w->n_rq++] = wait;
				/* a preemption seen in the window is a wait already */
				if (kind == HPS_WAIT_WAKEUP || !was_preempted) {
					r = add_wait(m, w, ts > wait ? ts - wait : 0, ts, sw->cpu[i],
						     sw->cpu[i]);
					if (r < 0)
						return r;
				}
				if (kind == HPS_WAIT_WAKEUP) {
					struct stall st = { .kind = STALL_RUNQUEUE,
							    .involuntary = true,
							    .thread = model_thread_index(m, w),
							    .row = i,
							    .ts = ts > wait ? ts - wait : 0,
							    .dur = wait };

					w->rq_wakeup++;
					consider_stall(m, &st);
				} else {
					w->rq_preempt++;
				}
			}
		}
		w = model_thread(m, sw->prev_pid[i], sw->prev_tid[i]);
		if (w) {
			w->active = true;
			r = model_add_cpu(w, sw->cpu[i]);
			if (r < 0)
				return r;
			if (HPS_STATE_RUNNABLE(sw->prev_state[i])) {
				r = preemption_begin(w, sw, i, ts);
				if (r < 0)
					return r;
			}
		}
	}
	for (size_t i = 0; i < m->n; i++) {
		struct wthread *w = &m->t[i];

		if (w->preempted) {
			r = preemption_end(m, w, MAX(s->end_ns, w->preempted_at), sw->cpu[w->preempted_row],
					   true);
			if (r < 0)
				return r;
		}
		qsort_safe(w->culprits, w->n_culprits, sizeof(*w->culprits), model_cmp_culprit);
		sort_rq(w->rq, w->n_rq);
	}
	return sort_waits(m);
}

static int analyze_migrations(struct model *m)
{
	const Hostprof__MigrationTable *mg = m->snap->migrations;
	size_t n = mg ? mg->n_ts_delta : 0;
	int r;

	r = hps_abs_times(m->snap->start_ns, mg ? mg->ts_delta : NULL, n, &m->mg_ts);
	if (r < 0)
		return r;
	for (size_t i = 0; i < n; i++) {
		struct wthread *w = model_thread(m, mg->pid[i], mg->tid[i]);

		if (!w)
			continue;
		w->active = true;
		r = reserve_one(&w->migrations, w->n_migrations, &w->cap_migrations, sizeof(*w->migrations));
		if (r < 0)
			return r;
		w->migrations[w->n_migrations++] = i;
	}
	return 0;
}

/* Rows of the syscall table, slowest first. */
static int cmp_syscall_row(const void *a, const void *b, void *table)
{
	const Hostprof__SyscallTable *sc = table;
	size_t x = *(const size_t *)a, y = *(const size_t *)b;
	uint64_t dx = sc->dur_ns[x], dy = sc->dur_ns[y];

	if (dx != dy)
		return dx > dy ? -1 : 1;
	return x < y ? -1 : x > y;
}

/* Indexes into Snapshot.syscall_hist, most total time first. */
static int cmp_hist(const void *a, const void *b, void *snap)
{
	const Hostprof__Snapshot *s = snap;
	const Hostprof__SyscallHistogram *x = s->syscall_hist[*(const size_t *)a];
	const Hostprof__SyscallHistogram *y = s->syscall_hist[*(const size_t *)b];

	if (x->total_ns != y->total_ns)
		return x->total_ns > y->total_ns ? -1 : 1;
	if (x->count != y->count)
		return x->count > y->count ? -1 : 1;
	return x->nr < y->nr ? -1 : x->nr > y->nr;
}

static int analyze_syscalls(struct model *m)
{
	const Hostprof__Snapshot *s = m->snap;
	const Hostprof__SyscallTable *sc = s->syscalls;
	size_t n = sc ? sc->n_ts_delta : 0;
	int r;

	r = hps_abs_times(s->start_ns, sc ? sc->ts_delta : NULL, n, &m->sc_ts);
	if (r < 0)
		return r;
	for (size_t i = 0; i < n; i++) {
		struct wthread *w = model_thread(m, sc->pid[i], sc->tid[i]);

		if (!w)
			continue;
		w->active = true;
		r = reserve_one(&w->syscalls, w->n_syscalls, &w->cap_syscalls, sizeof(*w->syscalls));
		if (r < 0)
			return r;
		w->syscalls[w->n_syscalls++] = i;
		r = model_add_cpu(w, sc->cpu[i]);
		if (r < 0)
			return r;
	}
	for (size_t i = 0; i < s->n_syscall_hist; i++) {
		struct wthread *w = model_thread(m, s->syscall_hist[i]->pid, s->syscall_hist[i]->tid);

		if (!w)
			continue;
		w->active = true;
		r = reserve_one(&w->hists, w->n_hists, &w->cap_hists, sizeof(*w->hists));
		if (r < 0)
			return r;
		w->hists[w->n_hists++] = i;
	}
	/* the rows are in time order: each thread's, by start, before they go slowest first */
	for (size_t i = 0; i < m->n; i++) {
		struct wthread *w = &m->t[i];
		uint64_t end = 0;

		if (!w->n_syscalls)
			continue;
		w->sc_by_ts = malloc(w->n_syscalls * sizeof(*w->sc_by_ts));
		w->sc_end_max = malloc(w->n_syscalls * sizeof(*w->sc_end_max));
		if (!w->sc_by_ts || !w->sc_end_max)
			return -ENOMEM;
		memcpy(w->sc_by_ts, w->syscalls, w->n_syscalls * sizeof(*w->sc_by_ts));
		for (size_t k = 0; k < w->n_syscalls; k++) {
			size_t row = w->sc_by_ts[k];
			uint64_t e = m->sc_ts[row] + sc->dur_ns[row];

			if (e < m->sc_ts[row])
				e = UINT64_MAX;
			end = MAX(end, e);
			w->sc_end_max[k] = end;
		}
	}
	for (size_t i = 0; i < m->n; i++) {
		struct wthread *w = &m->t[i];
		size_t ns = w->n_syscalls;
		_cleanup_free_ struct keyed *v = ns >= KEYSORT_MIN ? keyed_new(ns) : NULL;

		if (v) {
			/* longest first: the complement ascending; rows in order, so ties by row */
			for (size_t k = 0; k < ns; k++)
				v[k] = (struct keyed){ ~sc->dur_ns[w->syscalls[k]], w->syscalls[k] };
			keysort(v, v + ns, ns);
			for (size_t k = 0; k < ns; k++)
				w->syscalls[k] = v[k].val;
		} else {
			qsort_r_safe(w->syscalls, ns, sizeof(size_t), cmp_syscall_row, (void *)sc);
		}
		qsort_r_safe(w->hists, w->n_hists, sizeof(size_t), cmp_hist, (void *)s);
	}
	return 0;
}

/* Rows of the off-CPU table by thread, then stacks, then time. */
static int cmp_offcpu_row(const void *a, const void *b, void *table)
{
	size_t x = *(const size_t *)a, y = *(const size_t *)b;
	const Hostprof__OffCpuTable *t = table;

	if (t->tid[x] != t->tid[y])
		return t->tid[x] < t->tid[y] ? -1 : 1;
	if (t->ustack[x] != t->ustack[y])
		return t->ustack[x] < t->ustack[y] ? -1 : 1;
	if (t->kstack[x] != t->kstack[y])
		return t->kstack[x] < t->kstack[y] ? -1 : 1;
	return x < y ? -1 : x > y;
}

static int cmp_offcpu_group(const void *a, const void *b)
{
	const struct offcpu_group *x = a, *y = b;
	int c;

	c = tally_cmp(&x->sum, &y->sum);
	if (c)
		return c;
	if (x->ustack != y->ustack)
		return x->ustack < y->ustack ? -1 : 1;
	return x->kstack < y->kstack ? -1 : x->kstack > y->kstack;
}

static int cmp_waker(const void *a, const void *b)
{
	const struct waker *x = a, *y = b;
	int c;

	c = tally_cmp(&x->sum, &y->sum);
	if (c)
		return c;
	return x->tid < y->tid ? -1 : x->tid > y->tid;
}

static int add_waker(struct offcpu_group *g, const Hostprof__OffCpuTable *t, size_t i)
{
	size_t k;
	int r;

	for (k = 0; k < g->n_wakers; k++)
		if (g->wakers[k].tid == t->waker_tid[i] && g->wakers[k].pid == t->waker_pid[i])
			break;
	if (k == g->n_wakers) {
		r = reserve_one(&g->wakers, g->n_wakers, &g->cap_wakers, sizeof(*g->wakers));
		if (r < 0)
			return r;
		g->wakers[k] = (struct waker){ .tid = t->waker_tid[i],
					       .pid = t->waker_pid[i],
					       .comm = t->waker_comm[i] };
		g->n_wakers++;
	}
	tally_add(&g->wakers[k].sum, t->dur_ns[i], i);
	return 0;
}

static int analyze_offcpu(struct model *m)
{
	const Hostprof__OffCpuTable *t = m->snap->offcpu;
	size_t n = t ? t->n_ts_delta : 0, nrows = 0;
	_cleanup_free_ size_t *rows = NULL;
	_cleanup_free_ struct keyed *v = NULL;
	int r;

	r = hps_abs_times(m->snap->start_ns, t ? t->ts_delta : NULL, n, &m->off_ts);
	if (r < 0)
		return r;
	rows = calloc(MAX(n, (size_t)1), sizeof(*rows));
	if (!rows)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		if (model_thread(m, t->pid[i], t->tid[i]))
			rows[nrows++] = i;
	if (nrows >= KEYSORT_MIN && (v = keyed_new(nrows))) {
		/* as cmp_offcpu_row: by stacks, then (stable) by thread; rows are in order */
		for (size_t k = 0; k < nrows; k++)
			v[k] = (struct keyed){ (uint64_t)t->ustack[rows[k]] << 32 | t->kstack[rows[k]], rows[k] };
		keysort(v, v + nrows, nrows);
		for (size_t k = 0; k < nrows; k++)
			v[k].key = t->tid[v[k].val];
		keysort(v, v + nrows, nrows);
		for (size_t k = 0; k < nrows; k++)
			rows[k] = v[k].val;
	} else {
		qsort_r_safe(rows, nrows, sizeof(*rows), cmp_offcpu_row, (void *)t);
	}
	for (size_t k = 0; k < nrows; k++) {
		size_t i = rows[k];
		struct wthread *w = model_thread(m, t->pid[i], t->tid[i]);
		struct offcpu_group *g = w->n_off ? &w->off[w->n_off - 1] : NULL;
		struct stall st = { .kind = STALL_BLOCKED,
				    .involuntary = (t->state[i] & HPS_STATE_UNINTERRUPTIBLE) != 0,
				    .thread = model_thread_index(m, w),
				    .row = i,
				    .ts = m->off_ts[i],
				    .dur = t->dur_ns[i] };

		if (!g || g->ustack != t->ustack[i] || g->kstack != t->kstack[i]) {
			r = reserve_one(&w->off, w->n_off, &w->cap_off, sizeof(*w->off));
			if (r < 0)
				return r;
			g = &w->off[w->n_off++];
			*g = (struct offcpu_group){ .ustack = t->ustack[i], .kstack = t->kstack[i] };
		}
		g->states |= t->state[i];
		tally_add(&g->sum, t->dur_ns[i], i);
		r = add_waker(g, t, i);
		if (r < 0)
			return r;
		w->active = true;
		tally_add(&w->off_sum, t->dur_ns[i], i);
		r = model_add_cpu(w, t->cpu[i]);
		if (r < 0)
			return r;
		consider_stall(m, &st);
	}
	for (size_t i = 0; i < m->n; i++) {
		struct wthread *w = &m->t[i];

		for (size_t g = 0; g < w->n_off; g++)
			qsort_safe(w->off[g].wakers, w->off[g].n_wakers, sizeof(struct waker), cmp_waker);
		qsort_safe(w->off, w->n_off, sizeof(*w->off), cmp_offcpu_group);
	}
	return 0;
}

struct leaf_entry {
	size_t thread;
	const char *name;
	bool kernel;
	const char *file;
	uint32_t line;
};

static int cmp_leaf_entry(const void *a, const void *b)
{
	const struct leaf_entry *x = a, *y = b;
	int c;

	if (x->thread != y->thread)
		return x->thread < y->thread ? -1 : 1;
	if (x->kernel != y->kernel)
		return x->kernel ? 1 : -1;
	c = strcmp(x->name, y->name);
	return c;
}

/* The same function, then by source line. */
static int cmp_leaf_line(const void *a, const void *b)
{
	const struct leaf_entry *x = a, *y = b;
	int c = cmp_leaf_entry(a, b);

	if (!c)
		c = strcmp(x->file ? x->file : "", y->file ? y->file : "");
	return c ? c : x->line < y->line ? -1 : x->line > y->line;
}

static int cmp_debug_hint(const void *a, const void *b)
{
	const struct debug_hint *x = a, *y = b;

	if (x->samples != y->samples)
		return x->samples > y->samples ? -1 : 1;
	return x->mapping < y->mapping ? -1 : x->mapping > y->mapping;
}

/* A sample whose innermost user frame is unresolved in a file a debug package would name. */
static int count_debug_hint(struct model *m, uint32_t ustack)
{
	const Hostprof__Snapshot *s = m->snap;
	const Hostprof__Frame *f;
	size_t k;

	if (!ustack || !s->stacks[ustack - 1]->n_frames)
		return 0;
	f = s->frames[s->stacks[ustack - 1]->frames[0]];
	if ((f->function && f->function[0]) || !f->mapping || !s->mappings[f->mapping - 1]->n_debug_packages)
		return 0;
	for (k = 0; k < m->n_hints && m->hints[k].mapping != f->mapping; k++)
		;
	if (k == m->n_hints) {
		struct debug_hint *h = reallocarray(m->hints, m->n_hints + 1, sizeof(*h));

		if (!h)
			return -ENOMEM;
		m->hints = h;
		m->hints[m->n_hints++] = (struct debug_hint){ .mapping = f->mapping };
	}
	m->hints[k].samples++;
	return 0;
}

static int cmp_leaf_count(const void *a, const void *b)
{
	const struct leaf_count *x = a, *y = b;
	int c;

	if (x->samples != y->samples)
		return x->samples > y->samples ? -1 : 1;
	if (x->kernel != y->kernel)
		return x->kernel ? 1 : -1;
	c = strcmp(x->name, y->name);
	return c;
}

/* The innermost frame of stack idx1 (index + 1), or NULL; and where it is in the source. */
static const char *leaf_name(const struct model *m, uint32_t idx1, const char **ret_file, uint32_t *ret_line)
{
	const Hostprof__Stack *st;
	const Hostprof__Frame *f;

	if (!idx1)
		return NULL;
	st = m->snap->stacks[idx1 - 1];
	if (!st->n_frames)
		return NULL;
	f = m->snap->frames[st->frames[0]];
	*ret_file = f->file && f->file[0] ? f->file : NULL;
	*ret_line = f->line;
	return m->fn.name[st->frames[0]];
}

static int analyze_samples(struct model *m)
{
	const Hostprof__SampleTable *t = m->snap->samples;
	size_t n = t ? t->n_ts_delta : 0, ne = 0;
	_cleanup_free_ struct leaf_entry *e = NULL;
	int r;

	e = calloc(MAX(n, (size_t)1), sizeof(*e));
	if (!e)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		struct wthread *w;
		const char *name, *file = NULL;
		uint32_t line = 0;
		bool kernel = false;

		if (t->pid[i] != m->snap->pid)
			continue;
		m->samples++;
		r = count_debug_hint(m, t->ustack[i]);
		if (r < 0)
			return r;
		w = model_thread(m, t->pid[i], t->tid[i]);
		if (!w)
			continue;
		w->active = true;
		w->samples++;
		r = model_add_cpu(w, t->cpu[i]);
		if (r < 0)
			return r;
		name = leaf_name(m, t->ustack[i], &file, &line);
		if (!name) {
			name = leaf_name(m, t->kstack[i], &file, &line);
			kernel = name != NULL;
		}
		e[ne++] = (struct leaf_entry){ .thread = model_thread_index(m, w),
					       .name = name ? name : "[no stack]",
					       .kernel = kernel,
					       .file = file,
					       .line = line };
	}
	qsort_safe(e, ne, sizeof(*e), cmp_leaf_line);
	qsort_safe(m->hints, m->n_hints, sizeof(*m->hints), cmp_debug_hint);
	for (size_t i = 0, run = 0, best = 0; i < ne; i++) {
		struct wthread *w = &m->t[e[i].thread];
		struct leaf_count *l;

		if (!i || cmp_leaf_entry(&e[i - 1], &e[i])) {
			r = reserve_one(&w->leaves, w->n_leaves, &w->cap_leaves, sizeof(*w->leaves));
			if (r < 0)
				return r;
			w->leaves[w->n_leaves++] =
				(struct leaf_count){ .name = e[i].name, .kernel = e[i].kernel };
			best = 0;
		}
		l = &w->leaves[w->n_leaves - 1];
		l->samples++;
		/* the line with the most samples of the function (the first of equals) */
		run = i && !cmp_leaf_line(&e[i - 1], &e[i]) ? run + 1 : 1;
		if (e[i].file && run > best) {
			best = run;
			l->file = e[i].file;
			l->line = e[i].line;
		}
	}
	for (size_t i = 0; i < m->n; i++)
		qsort_safe(m->t[i].leaves, m->t[i].n_leaves, sizeof(struct leaf_count), cmp_leaf_count);
	return 0;
}

/* The task switched out for row i's next, as a culprit. */
struct culprit model_prev_task(const Hostprof__SchedSwitchTable *sw, size_t i)
{
	return (struct culprit){ .tid = sw->prev_tid[i],
				 .pid = sw->prev_pid[i],
				 .comm = sw->prev_comm[i],
				 .prio = sw->prev_prio[i],
				 .has_policy = sw->n_prev_policy > 0,
				 .policy = sw->n_prev_policy ? sw->prev_policy[i] : 0 };
}

struct culprit model_next_task(const Hostprof__SchedSwitchTable *sw, size_t i)
{
	return (struct culprit){ .tid = sw->next_tid[i],
				 .pid = sw->next_pid[i],
				 .comm = sw->next_comm[i],
				 .prio = sw->next_prio[i],
				 .has_policy = sw->n_next_policy > 0,
				 .policy = sw->n_next_policy ? sw->next_policy[i] : 0 };
}

/*
 * The slow syscall of this thread during which it went off the CPU at ts, or -1: of those
 * that span ts, the first of w->syscalls (the slowest, then the earliest row). The rows
 * that start at or before ts are found by bisection in sc_by_ts, and walked back only
 * while one of them may still end at or after ts.
 */
ssize_t model_blocking_syscall(const struct model *m, const struct wthread *w, uint64_t ts)
{
	size_t hint = 0;

	return model_blocking_syscall_from(m, w, ts, &hint);
}

ssize_t model_blocking_syscall_from(const struct model *m, const struct wthread *w, uint64_t ts, size_t *hint)
{
	const Hostprof__SyscallTable *sc = m->snap->syscalls;
	size_t lo = 0, hi = w->n_syscalls, k = MIN(*hint, w->n_syscalls);
	ssize_t best = -1;

	/* the first row that starts after ts: a few steps on from the hint, else a search */
	if (k && m->sc_ts[w->sc_by_ts[k - 1]] <= ts) {
		for (size_t step = 0; step < 8 && k < hi && m->sc_ts[w->sc_by_ts[k]] <= ts; step++)
			k++;
		if (k == hi || m->sc_ts[w->sc_by_ts[k]] > ts)
			lo = hi = k;
		else
			lo = k;
	}
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (m->sc_ts[w->sc_by_ts[mid]] <= ts)
			lo = mid + 1;
		else
			hi = mid;
	}
	*hint = lo;
	for (k = lo; k-- > 0 && w->sc_end_max[k] >= ts;) {
		size_t i = w->sc_by_ts[k];

		if (ts - m->sc_ts[i] > sc->dur_ns[i])
			continue;
		if (best < 0 || sc->dur_ns[i] > sc->dur_ns[best] ||
		    (sc->dur_ns[i] == sc->dur_ns[best] && i < (size_t)best))
			best = (ssize_t)i;
	}
	return best;
}

int model_build(const Hostprof__Snapshot *snap, struct model *ret)
{
	return model_build_gil(snap, NULL, 0, ret);
}

int model_build_gil(const Hostprof__Snapshot *snap, const struct gil_wait *gil, size_t n, struct model *ret)
{
	struct model m = { .snap = snap };
	int r;

	r = hps_validate(snap);
	if (r < 0)
		return r;
	m.interference = snap->interference & HPS_INTERF_ALL;
	r = frame_names_init(snap, &m.fn);
	if (r >= 0)
		r = model_threads(&m);
	if (r >= 0)
		r = analyze_switches(&m);
	if (r >= 0)
		r = analyze_migrations(&m);
	if (r >= 0)
		r = analyze_syscalls(&m);
	if (r >= 0)
		r = analyze_offcpu(&m);
	if (r >= 0)
		r = analyze_samples(&m);
	/* after the scheduler's tables: the worst stall is known, and the waits */
	if (r >= 0)
		r = model_interference(&m);
	/* after everything: where each thread's time went */
	if (r >= 0)
		r = model_gil(&m, gil, n);
	if (r >= 0)
		r = model_causes(&m);
	if (r < 0) {
		model_free(&m);
		return r;
	}
	*ret = m;
	return 0;
}

/*
 * One model shared by every writer of a snapshot: `--format all` writes the report, its
 * JSON and the Perfetto trace's episodes, and the client its summary line, from the same
 * snapshot, on up to four threads; each built the model again. While report_model_hold()
 * holds a snapshot, model_get() of it returns the model built the first time (its writers
 * only read it); the last model_put() frees it. Any other snapshot gets a model of its own.
 */
static struct {
	pthread_mutex_t lock;
	const Hostprof__Snapshot *snap;
	struct model m;
	bool built;
	size_t refs;
	pthread_t prebuild; /* report_model_prebuild()'s thread, while prebuilding */
	bool prebuilding;
} shared = { .lock = PTHREAD_MUTEX_INITIALIZER };

int model_get(const Hostprof__Snapshot *snap, const struct model **ret)
{
	struct model *m;
	int r;

	pthread_mutex_lock(&shared.lock);
	if (shared.refs && shared.snap == snap) {
		if (!shared.built) {
			r = model_build(snap, &shared.m);
			if (r < 0) {
				pthread_mutex_unlock(&shared.lock);
				return r;
			}
			shared.built = true;
		}
		shared.refs++;
		*ret = &shared.m;
		pthread_mutex_unlock(&shared.lock);
		return 0;
	}
	pthread_mutex_unlock(&shared.lock);
	m = malloc(sizeof(*m));
	if (!m)
		return -ENOMEM;
	r = model_build(snap, m);
	if (r < 0) {
		free(m);
		return r;
	}
	*ret = m;
	return 0;
}

static void shared_put_locked(void)
{
	if (--shared.refs)
		return;
	if (shared.built)
		model_free(&shared.m);
	shared.built = false;
	shared.snap = NULL;
}

void model_put(const struct model *m)
{
	if (!m)
		return;
	if (m == &shared.m) {
		pthread_mutex_lock(&shared.lock);
		shared_put_locked();
		pthread_mutex_unlock(&shared.lock);
		return;
	}
	model_free((struct model *)m);
	free((struct model *)m);
}

int report_model_hold(const Hostprof__Snapshot *snap)
{
	int r = 0;

	pthread_mutex_lock(&shared.lock);
	if (!shared.refs) {
		shared.snap = snap;
		shared.refs = 1;
	} else if (shared.snap == snap) {
		shared.refs++;
	} else {
		r = -EBUSY; /* another snapshot holds it: its users build their own */
	}
	pthread_mutex_unlock(&shared.lock);
	return r;
}

static void *prebuild_main(void *arg)
{
	const struct model *m;

	/* model_get() builds under the lock: a writer that asks meanwhile waits for this one */
	if (model_get(arg, &m) >= 0)
		model_put(m);
	return NULL;
}

int report_model_prebuild(const Hostprof__Snapshot *snap)
{
	int r = 0;

	pthread_mutex_lock(&shared.lock);
	if (!shared.refs || shared.snap != snap)
		r = -ESRCH;
	else if (!shared.built && !shared.prebuilding) {
		r = -pthread_create(&shared.prebuild, NULL, prebuild_main, (void *)snap);
		shared.prebuilding = r == 0;
	}
	pthread_mutex_unlock(&shared.lock);
	return r;
}

void report_model_release(const Hostprof__Snapshot *snap)
{
	pthread_t t = 0;
	bool join = false;

	pthread_mutex_lock(&shared.lock);
	if (shared.refs && shared.snap == snap && shared.prebuilding) {
		t = shared.prebuild;
		shared.prebuilding = false;
		join = true;
	}
	pthread_mutex_unlock(&shared.lock);
	/* the build's own reference is dropped when it ends: before this one */
	if (join)
		pthread_join(t, NULL);
	pthread_mutex_lock(&shared.lock);
	if (shared.refs && shared.snap == snap)
		shared_put_locked();
	pthread_mutex_unlock(&shared.lock);
}
