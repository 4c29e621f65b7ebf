// SPDX-License-Identifier: GPL-2.0-only
/*
 * Diagnosis of a snapshot (see report.h and export.h), and the stack views it shares with
 * the exporters.
 *
 * The report is made in two steps. analyze() walks every table once and builds a model:
 * for each watched thread (a thread of Snapshot.pid seen in Snapshot.threads or in any
 * table) what the report says about it, and the worst stall of the window. The text and
 * JSON writers print that model and nothing else, so the two always agree.
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
 *    kernel frame.
 *  - interference, from the tables Snapshot.interference says were captured (a table
 *    whose bit is clear is ignored, and then the report says nothing of it but that it
 *    was not captured): the interrupts that stole its CPU time (IrqTable rows with flag 1
 *    and its tid) and those that ran on a CPU while it waited there (flag 2: the row
 *    names only the process, so a row goes to each thread that, by the switch table, was
 *    runnable and not running on that CPU at the time), grouped by kind, number and name;
 *    its reclaim and compaction by kind and order; its page-fault counts; its kernel lock
 *    waits by lock and kind. A hard IRQ nested in a softirq on the same CPU is counted in
 *    its own group but only once in a thread's total.
 *
 * The worst stall: every interval in which a watched thread could not run is a
 * candidate. A thread that wanted the CPU and did not get it (preempted, or woken and
 * left waiting on a runqueue) or that was blocked uninterruptibly (D) was stalled by
 * something else; one sleeping interruptibly (S) is most often waiting for work. So the
 * longest involuntary interval is the worst stall, and the longest blocked interval only
 * when there is no involuntary one. Ties go to the earlier interval.
 *
 * Interference can name the cause instead: a thread's single reclaim, lock wait or
 * interrupt, and the total time its top group of interrupts took from it while it ran
 * ("lost 18% of CPU 1 to softirq NET_RX"). All of them are involuntary. The longest single event wins over the scheduler's worst stall when it is
 * at least as long, a total when it is longer; and a single event wins regardless of its
 * length when it covers at least half of a runqueue wait or a blocked interval of the
 * same thread that is the worst stall (a lock wait is the D interval it slept in, a
 * softirq is why a woken thread found its CPU busy). A preemption is never explained
 * away: the task that preempted is its cause. Without interference data the verdict is
 * the scheduler's.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "export.h"
#include "glob.h"
#include "hps.h"
#include "jsonw.h"
#include "macro.h"
#include "report.h"
#include "snapview.h"

#define TOP_CULPRITS 10
#define TOP_SYSCALLS 5
#define TOP_HISTOGRAMS 10
#define TOP_STACKS 5
#define TOP_WAKERS 5
#define TOP_FUNCTIONS 10
#define TOP_MIGRATIONS 10
#define TOP_IDLE_THREADS 20
#define TOP_IRQS 10
#define TOP_RECLAIMS 10
#define TOP_LOCKS 5
#define LOCK_FRAMES 6 /* of the longest wait's kernel stack */
#define TOP_GROUP_CPUS 8 /* text: CPUs named after an interrupt group */

#define MAX_CPU_TRACKED 16384 /* interrupt nesting is followed on CPUs below this */

#define STACK_INDENT 32 /* text: frames under the off-CPU columns */


/* Room for one more element in *arrp, which holds n of *cap. */
static int reserve_one(void *arrp, size_t n, size_t *cap, size_t size)
{
	void **arr = arrp;
	size_t ncap;
	void *p;

	if (n < *cap)
		return 0;
	ncap = *cap ? *cap * 2 : 8;
	p = reallocarray(*arr, ncap, size);
	if (!p)
		return -ENOMEM;
	*arr = p;
	*cap = ncap;
	return 0;
}

/* ---- folded stacks ---------------------------------------------------------------------- */

struct fold_key {
	uint32_t tid, ustack, kstack;
	uint64_t value;
};

static int cmp_fold_key(const void *a, const void *b)
{
	const struct fold_key *x = a, *y = b;

	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	if (x->ustack != y->ustack)
		return x->ustack < y->ustack ? -1 : 1;
	if (x->kstack != y->kstack)
		return x->kstack < y->kstack ? -1 : 1;
	return 0;
}

static int cmp_folded_stack(const void *a, const void *b)
{
	const struct folded_stack *x = a, *y = b;

	return strcmp(x->frames, y->frames);
}

/* A frame name as folded stacks allow it: no ';' (the separator), no control characters. */
static void put_folded_name(FILE *f, const char *s)
{
	for (const unsigned char *p = (const unsigned char *)s; *p; p++)
		fputc(*p == ';' || *p < 0x20 || *p == 0x7f ? '_' : *p, f);
}

/* Appends the frames of stack idx1 (index + 1), outermost first. */
static void put_folded_stack(FILE *f, const Hostprof__Snapshot *snap, const struct frame_names *fn,
			     uint32_t idx1, bool kernel)
{
	const Hostprof__Stack *st;

	if (!idx1)
		return;
	st = snap->stacks[idx1 - 1];
	for (size_t j = st->n_frames; j-- > 0;) {
		fputc(';', f);
		put_folded_name(f, fn->name[st->frames[j]]);
		if (kernel)
			fputs("_[k]", f);
	}
}

static char *render_folded(const Hostprof__Snapshot *snap, const struct frame_names *fn,
			   const struct snapview *v, const struct fold_key *k)
{
	const char *comm = snapview_comm(v, k->tid);
	char *buf = NULL;
	size_t len = 0;
	FILE *f;

	f = open_memstream(&buf, &len);
	if (!f)
		return NULL;
	if (comm[0])
		put_folded_name(f, comm);
	else
		fprintf(f, "[tid %" PRIu32 "]", k->tid);
	put_folded_stack(f, snap, fn, k->ustack, false);
	put_folded_stack(f, snap, fn, k->kstack, true);
	if (fclose(f) != 0) {
		free(buf);
		return NULL;
	}
	return buf;
}

void folded_free(struct folded *f)
{
	if (!f)
		return;
	for (size_t i = 0; i < f->n; i++)
		free(f->stacks[i].frames);
	free(f->stacks);
	*f = (struct folded){};
}

int snapshot_fold(const Hostprof__Snapshot *snap, bool offcpu, struct folded *ret)
{
	_cleanup_free_ struct fold_key *keys = NULL;
	struct frame_names fn = {};
	struct snapview v = {};
	struct folded out = {};
	size_t n = 0, nk = 0;
	int r;

	if (offcpu && snap->offcpu)
		n = snap->offcpu->n_ts_delta;
	else if (!offcpu && snap->samples)
		n = snap->samples->n_ts_delta;
	keys = calloc(MAX(n, (size_t)1), sizeof(*keys));
	if (!keys)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		if (offcpu)
			keys[i] = (struct fold_key){ snap->offcpu->tid[i], snap->offcpu->ustack[i],
						     snap->offcpu->kstack[i], snap->offcpu->dur_ns[i] };
		else
			keys[i] = (struct fold_key){ snap->samples->tid[i], snap->samples->ustack[i],
						     snap->samples->kstack[i], 1 };
	}
	qsort_safe(keys, n, sizeof(*keys), cmp_fold_key);
	for (size_t i = 0; i < n; i++) {
		if (nk && !cmp_fold_key(&keys[nk - 1], &keys[i]))
			keys[nk - 1].value += keys[i].value;
		else
			keys[nk++] = keys[i];
	}

	r = frame_names_init(snap, &fn);
	if (r < 0)
		return r;
	r = snapview_init(snap, &v);
	if (r < 0)
		goto out;
	out.stacks = calloc(MAX(nk, (size_t)1), sizeof(*out.stacks));
	if (!out.stacks) {
		r = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < nk; i++) {
		out.stacks[i].frames = render_folded(snap, &fn, &v, &keys[i]);
		if (!out.stacks[i].frames) {
			r = -ENOMEM;
			goto out;
		}
		out.stacks[i].count = keys[i].value;
		out.n++;
	}
	/* different keys can render the same (threads of one name, frames of one function) */
	qsort_safe(out.stacks, out.n, sizeof(*out.stacks), cmp_folded_stack);
	nk = out.n;
	out.n = 0;
	for (size_t i = 0; i < nk; i++) {
		if (out.n && !strcmp(out.stacks[out.n - 1].frames, out.stacks[i].frames)) {
			out.stacks[out.n - 1].count += out.stacks[i].count;
			free(out.stacks[i].frames);
		} else {
			out.stacks[out.n++] = out.stacks[i];
		}
	}
	/* off-CPU: nanoseconds to microseconds, once the stacks are merged */
	nk = out.n;
	out.n = 0;
	for (size_t i = 0; i < nk; i++) {
		if (offcpu)
			out.stacks[i].count /= NSEC_PER_USEC;
		if (!out.stacks[i].count) {
			free(out.stacks[i].frames);
			continue;
		}
		out.total += out.stacks[i].count;
		out.stacks[out.n++] = out.stacks[i];
	}
	*ret = out;
	out = (struct folded){};
	r = 0;
out:
	folded_free(&out);
	snapview_free(&v);
	frame_names_free(&fn);
	return r;
}

/* ---- the model ------------------------------------------------------------------------- */

/* A task that preempted a watched thread. */
struct culprit {
	uint32_t tid, pid, comm, policy;
	int32_t prio;
	bool has_policy;
	uint64_t count, time_ns, max_ns;
};

struct waker {
	uint32_t tid, pid, comm;
	uint64_t count, time_ns;
};

/* Off-CPU intervals of one thread with the same stacks. */
struct offcpu_group {
	uint32_t ustack, kstack, states;
	uint64_t count, time_ns, max_ns;
	struct waker *wakers;
	size_t n_wakers, cap_wakers;
};

/* Interrupts of one kind, number and name that touched a thread one way. */
struct irq_group {
	uint32_t kind, num, name;
	uint64_t count, time_ns, max_ns;
	size_t max_row; /* the longest (the earliest of equals) */
	uint32_t *cpus; /* sorted, distinct */
	size_t n_cpus, cap_cpus;
};

/* Interrupts that touched a thread while it ran (stole its time) or while it waited. */
struct irq_side {
	struct irq_group *g; /* by total time */
	size_t n, cap;
	uint64_t count, time_ns; /* time_ns: a hard IRQ nested in a softirq counts once */
};

/* Reclaim or compaction of one kind and allocation order in one thread. */
struct reclaim_group {
	uint32_t kind;
	int32_t order;
	uint64_t count, time_ns, max_ns;
	int64_t pages; /* reclaim: pages reclaimed, summed */
	size_t max_row;
};

/* Waits of one thread for one lock, taken one way (LockTable.flags). */
struct lock_group {
	uint64_t lock;
	uint32_t flags, name;
	uint64_t count, time_ns, max_ns, failed;
	size_t max_row;
};

struct fault_sum {
	uint64_t periods, over_ns; /* over_ns: the periods' durations, summed */
	uint64_t faults, write, exec, prot, minor, major;
	uint64_t peak_major; /* the most major faults in one period */
	size_t peak_row;
};

/* A thread runnable and not running from begin to end: on CPU cpu_out's runqueue, then cpu_in's. */
struct rq_wait {
	uint64_t begin, end;
	uint32_t cpu_out, cpu_in;
	size_t thread;
};

/* On-CPU samples of one thread with the same leaf function. */
struct leaf_count {
	const char *name;
	bool kernel;
	uint64_t samples;
};

struct wthread {
	uint32_t tid;
	const char *comm;

	struct culprit *culprits;
	size_t n_culprits, cap_culprits;
	uint64_t preemptions, preempt_ns, preempt_max_ns;
	bool preempted; /* switched out runnable, not yet back */
	uint64_t preempted_at;
	size_t preempted_by, preempted_row;

	uint64_t *rq; /* next_wait_ns of its switch-ins, sorted */
	size_t n_rq, cap_rq;
	uint64_t rq_wakeup, rq_preempt;

	uint32_t *cpus; /* sorted, distinct */
	size_t n_cpus, cap_cpus;
	size_t *migrations; /* rows */
	size_t n_migrations, cap_migrations;

	size_t *syscalls; /* rows, slowest first */
	size_t n_syscalls, cap_syscalls;
	size_t *hists; /* indexes into Snapshot.syscall_hist, by total time */
	size_t n_hists, cap_hists;

	struct offcpu_group *off; /* by total time */
	size_t n_off, cap_off;
	uint64_t off_count, off_ns;

	struct leaf_count *leaves; /* by samples */
	size_t n_leaves, cap_leaves;
	uint64_t samples;

	struct irq_side irq_ran, irq_waited;
	struct reclaim_group *rcl; /* by total time */
	size_t n_rcl, cap_rcl;
	uint64_t rcl_count, rcl_ns, rcl_max_ns;
	struct fault_sum flt;
	struct lock_group *lck; /* by total time */
	size_t n_lck, cap_lck;
	uint64_t lck_count, lck_ns, lck_max_ns;
	bool interfered; /* a row of its own in a captured interference table */

	bool active; /* any event at all */
};

enum stall_kind {
	STALL_NONE,
	STALL_PREEMPTED, /* row: the switch-out */
	STALL_RUNQUEUE, /* row: the switch-in, after a wakeup */
	STALL_BLOCKED, /* row: the off-CPU interval */
	STALL_RECLAIM, /* row: the reclaim */
	STALL_LOCK, /* row: the lock wait */
	STALL_IRQ, /* row: the interrupt */
	STALL_IRQ_TOTAL, /* row: the group in the thread's irq_ran; dur: its total */
};

struct stall {
	enum stall_kind kind;
	bool involuntary, to_end; /* to_end: still waiting when the window closed */
	bool waited; /* STALL_IRQ: it ran while the thread waited on its CPU, not while it ran */
	size_t thread, row;
	uint64_t ts, dur;
};

struct model {
	const Hostprof__Snapshot *snap;
	struct frame_names fn;
	struct wthread *t;
	size_t n;
	uint64_t *sw_ts, *mg_ts, *sc_ts, *off_ts;
	uint64_t *irq_ts, *rcl_ts, *flt_ts, *lck_ts;
	struct rq_wait *waits; /* of every thread, by begin */
	size_t n_waits, cap_waits;
	uint64_t samples; /* of the process */
	uint32_t interference; /* HPS_INTERF_*: the tables captured */
	uint64_t unmatched_count, unmatched_ns; /* interrupts while a thread waited, matched to none */
	struct stall worst;
	/* interference: the longest candidate, and the one that best explains the worst stall */
	struct stall cause, explains;
	uint64_t explains_overlap;
	struct stall explained; /* when the verdict is an interference event: the stall it explains */
};

static void model_free(struct model *m)
{
	for (size_t i = 0; i < m->n; i++) {
		struct wthread *w = &m->t[i];

		free(w->culprits);
		free(w->rq);
		free(w->cpus);
		free(w->migrations);
		free(w->syscalls);
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
	*m = (struct model){};
}

static struct wthread *find_thread(const struct model *m, uint32_t pid, uint32_t tid)
{
	size_t lo = 0, hi = m->n;

	if (pid != m->snap->pid)
		return NULL;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (m->t[mid].tid == tid)
			return &m->t[mid];
		if (m->t[mid].tid < tid)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

/* Collects the tids of snap->pid from every table, then names them as the view does. */
static int model_threads(struct model *m)
{
	const Hostprof__Snapshot *s = m->snap;
	const Hostprof__SchedSwitchTable *sw = s->switches;
	_cleanup_free_ uint32_t *tids = NULL;
	struct snapview v;
	size_t n = 0, cap = 0;
	int r;

#define ADD_TID(p, t)                                                       \
	do {                                                                \
		if ((p) == s->pid) {                                        \
			if (reserve_one(&tids, n, &cap, sizeof(*tids)) < 0) \
				return -ENOMEM;                             \
			tids[n++] = (t);                                    \
		}                                                           \
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
	for (size_t i = 0; (m->interference & HPS_INTERF_RECLAIM) && s->reclaims && i < s->reclaims->n_ts_delta;
	     i++)
		ADD_TID(s->reclaims->pid[i], s->reclaims->tid[i]);
	for (size_t i = 0; (m->interference & HPS_INTERF_FAULTS) && s->faults && i < s->faults->n_ts_delta; i++)
		ADD_TID(s->faults->pid[i], s->faults->tid[i]);
	for (size_t i = 0; (m->interference & HPS_INTERF_LOCKS) && s->locks && i < s->locks->n_ts_delta; i++)
		ADD_TID(s->locks->pid[i], s->locks->tid[i]);
#undef ADD_TID

	qsort_safe(tids, n, sizeof(*tids), cmp_u32);
	m->t = calloc(MAX(n, (size_t)1), sizeof(*m->t));
	if (!m->t)
		return -ENOMEM;
	r = snapview_init(s, &v);
	if (r < 0)
		return r;
	for (size_t i = 0; i < n; i++)
		if (!m->n || m->t[m->n - 1].tid != tids[i]) {
			m->t[m->n].tid = tids[i];
			m->t[m->n].comm = snapview_comm(&v, tids[i]);
			m->n++;
		}
	snapview_free(&v);
	return 0;
}

/* Adds cpu to a sorted set of n of *cap. */
static int add_cpu_to(uint32_t **cpus, size_t *n, size_t *cap, uint32_t cpu)
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

static int add_cpu(struct wthread *w, uint32_t cpu)
{
	return add_cpu_to(&w->cpus, &w->n_cpus, &w->cap_cpus, cpu);
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

static size_t thread_index(const struct model *m, const struct wthread *w)
{
	return (size_t)(w - m->t);
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
	m->waits[m->n_waits++] = (struct rq_wait){
		.begin = begin, .end = end, .cpu_out = cpu_out, .cpu_in = cpu_in, .thread = thread_index(m, w)
	};
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
			    .thread = thread_index(m, w),
			    .row = w->preempted_row,
			    .ts = w->preempted_at,
			    .dur = wait };

	w->preempted = false;
	w->preempt_ns += wait;
	w->preempt_max_ns = MAX(w->preempt_max_ns, wait);
	c->time_ns += wait;
	c->max_ns = MAX(c->max_ns, wait);
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
		w->culprits[c] = (struct culprit){ .tid = sw->next_tid[i],
						   .pid = sw->next_pid[i],
						   .comm = sw->next_comm[i],
						   .prio = sw->next_prio[i],
						   .has_policy = sw->n_next_policy > 0,
						   .policy = sw->n_next_policy ? sw->next_policy[i] : 0 };
		w->n_culprits++;
	}
	w->culprits[c].count++;
	w->preemptions++;
	w->preempted = true;
	w->preempted_at = ts;
	w->preempted_by = c;
	w->preempted_row = i;
	return 0;
}

static int cmp_culprit(const void *a, const void *b)
{
	const struct culprit *x = a, *y = b;

	if (x->time_ns != y->time_ns)
		return x->time_ns > y->time_ns ? -1 : 1;
	if (x->count != y->count)
		return x->count > y->count ? -1 : 1;
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

		w = find_thread(m, sw->next_pid[i], sw->next_tid[i]);
		if (w) {
			uint32_t kind = sw->n_next_wait_kind ? sw->next_wait_kind[i] : 0;
			bool was_preempted = w->preempted;

			w->active = true;
			r = add_cpu(w, sw->cpu[i]);
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
							    .thread = thread_index(m, w),
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
		w = find_thread(m, sw->prev_pid[i], sw->prev_tid[i]);
		if (w) {
			w->active = true;
			r = add_cpu(w, sw->cpu[i]);
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
		qsort_safe(w->culprits, w->n_culprits, sizeof(*w->culprits), cmp_culprit);
		qsort_safe(w->rq, w->n_rq, sizeof(*w->rq), cmp_u64);
	}
	qsort_safe(m->waits, m->n_waits, sizeof(*m->waits), cmp_rq_wait);
	return 0;
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
		struct wthread *w = find_thread(m, mg->pid[i], mg->tid[i]);

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
		struct wthread *w = find_thread(m, sc->pid[i], sc->tid[i]);

		if (!w)
			continue;
		w->active = true;
		r = reserve_one(&w->syscalls, w->n_syscalls, &w->cap_syscalls, sizeof(*w->syscalls));
		if (r < 0)
			return r;
		w->syscalls[w->n_syscalls++] = i;
		r = add_cpu(w, sc->cpu[i]);
		if (r < 0)
			return r;
	}
	for (size_t i = 0; i < s->n_syscall_hist; i++) {
		struct wthread *w = find_thread(m, s->syscall_hist[i]->pid, s->syscall_hist[i]->tid);

		if (!w)
			continue;
		w->active = true;
		r = reserve_one(&w->hists, w->n_hists, &w->cap_hists, sizeof(*w->hists));
		if (r < 0)
			return r;
		w->hists[w->n_hists++] = i;
	}
	for (size_t i = 0; i < m->n; i++) {
		qsort_r_safe(m->t[i].syscalls, m->t[i].n_syscalls, sizeof(size_t), cmp_syscall_row,
			     (void *)sc);
		qsort_r_safe(m->t[i].hists, m->t[i].n_hists, sizeof(size_t), cmp_hist, (void *)s);
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

	if (x->time_ns != y->time_ns)
		return x->time_ns > y->time_ns ? -1 : 1;
	if (x->count != y->count)
		return x->count > y->count ? -1 : 1;
	if (x->ustack != y->ustack)
		return x->ustack < y->ustack ? -1 : 1;
	return x->kstack < y->kstack ? -1 : x->kstack > y->kstack;
}

static int cmp_waker(const void *a, const void *b)
{
	const struct waker *x = a, *y = b;

	if (x->time_ns != y->time_ns)
		return x->time_ns > y->time_ns ? -1 : 1;
	if (x->count != y->count)
		return x->count > y->count ? -1 : 1;
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
	g->wakers[k].count++;
	g->wakers[k].time_ns += t->dur_ns[i];
	return 0;
}

static int analyze_offcpu(struct model *m)
{
	const Hostprof__OffCpuTable *t = m->snap->offcpu;
	size_t n = t ? t->n_ts_delta : 0, nrows = 0;
	_cleanup_free_ size_t *rows = NULL;
	int r;

	r = hps_abs_times(m->snap->start_ns, t ? t->ts_delta : NULL, n, &m->off_ts);
	if (r < 0)
		return r;
	rows = calloc(MAX(n, (size_t)1), sizeof(*rows));
	if (!rows)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		if (find_thread(m, t->pid[i], t->tid[i]))
			rows[nrows++] = i;
	qsort_r_safe(rows, nrows, sizeof(*rows), cmp_offcpu_row, (void *)t);
	for (size_t k = 0; k < nrows; k++) {
		size_t i = rows[k];
		struct wthread *w = find_thread(m, t->pid[i], t->tid[i]);
		struct offcpu_group *g = w->n_off ? &w->off[w->n_off - 1] : NULL;
		struct stall st = { .kind = STALL_BLOCKED,
				    .involuntary = (t->state[i] & HPS_STATE_UNINTERRUPTIBLE) != 0,
				    .thread = thread_index(m, w),
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
		g->count++;
		g->time_ns += t->dur_ns[i];
		g->max_ns = MAX(g->max_ns, t->dur_ns[i]);
		r = add_waker(g, t, i);
		if (r < 0)
			return r;
		w->active = true;
		w->off_count++;
		w->off_ns += t->dur_ns[i];
		r = add_cpu(w, t->cpu[i]);
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

/* The innermost frame of stack idx1 (index + 1), or NULL. */
static const char *leaf_name(const struct model *m, uint32_t idx1)
{
	const Hostprof__Stack *st;

	if (!idx1)
		return NULL;
	st = m->snap->stacks[idx1 - 1];
	return st->n_frames ? m->fn.name[st->frames[0]] : NULL;
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
		const char *name;
		bool kernel = false;

		if (t->pid[i] != m->snap->pid)
			continue;
		m->samples++;
		w = find_thread(m, t->pid[i], t->tid[i]);
		if (!w)
			continue;
		w->active = true;
		w->samples++;
		r = add_cpu(w, t->cpu[i]);
		if (r < 0)
			return r;
		name = leaf_name(m, t->ustack[i]);
		if (!name) {
			name = leaf_name(m, t->kstack[i]);
			kernel = name != NULL;
		}
		e[ne++] = (struct leaf_entry){ .thread = thread_index(m, w),
					       .name = name ? name : "[no stack]",
					       .kernel = kernel };
	}
	qsort_safe(e, ne, sizeof(*e), cmp_leaf_entry);
	for (size_t i = 0; i < ne; i++) {
		struct wthread *w = &m->t[e[i].thread];

		if (!i || cmp_leaf_entry(&e[i - 1], &e[i])) {
			r = reserve_one(&w->leaves, w->n_leaves, &w->cap_leaves, sizeof(*w->leaves));
			if (r < 0)
				return r;
			w->leaves[w->n_leaves++] =
				(struct leaf_count){ .name = e[i].name, .kernel = e[i].kernel };
		}
		w->leaves[w->n_leaves - 1].samples++;
	}
	for (size_t i = 0; i < m->n; i++)
		qsort_safe(m->t[i].leaves, m->t[i].n_leaves, sizeof(struct leaf_count), cmp_leaf_count);
	return 0;
}

/* ---- interference ---------------------------------------------------------------------- */

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

	if (x->time_ns != y->time_ns)
		return x->time_ns > y->time_ns ? -1 : 1;
	if (x->count != y->count)
		return x->count > y->count ? -1 : 1;
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
		*g = (struct irq_group){
			.kind = t->kind[i], .num = t->num[i], .name = t->name[i], .max_row = i
		};
	}
	if (dur > g->max_ns) {
		g->max_ns = dur;
		g->max_row = i;
	}
	g->count++;
	g->time_ns += dur;
	side->count++;
	if (!nested)
		side->time_ns += dur;
	return add_cpu_to(&g->cpus, &g->n_cpus, &g->cap_cpus, t->cpu[i]);
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
		w = t->flags[i] & HPS_IRQ_INTERRUPTED ? find_thread(m, t->pid[i], t->tid[i]) : NULL;
		if (w) {
			struct stall st = { .kind = STALL_IRQ,
					    .involuntary = true,
					    .thread = thread_index(m, w),
					    .row = i,
					    .ts = ts,
					    .dur = t->dur_ns[i] };

			w->active = w->interfered = true;
			r = irq_side_add(&w->irq_ran, t, i, nested);
			if (r < 0)
				return r;
			r = add_cpu(w, cpu);
			if (r < 0)
				return r;
			consider_cause(m, &st);
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
					    .ts = m->irq_ts[w->irq_ran.g[0].max_row],
					    .dur = w->irq_ran.g[0].time_ns };

			consider_cause(m, &st);
		}
	}
	return 0;
}

static int cmp_reclaim_group(const void *a, const void *b)
{
	const struct reclaim_group *x = a, *y = b;

	if (x->time_ns != y->time_ns)
		return x->time_ns > y->time_ns ? -1 : 1;
	if (x->count != y->count)
		return x->count > y->count ? -1 : 1;
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
		struct wthread *w = find_thread(m, t->pid[i], t->tid[i]);
		struct reclaim_group *g = NULL;
		uint64_t dur = t->dur_ns[i];
		struct stall st;

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
			*g = (struct reclaim_group){ .kind = t->kind[i], .order = t->order[i], .max_row = i };
		}
		if (dur > g->max_ns) {
			g->max_ns = dur;
			g->max_row = i;
		}
		g->count++;
		g->time_ns += dur;
		if (t->kind[i] != HPS_RECLAIM_COMPACT) /* wraps rather than overflows on nonsense */
			g->pages = (int64_t)((uint64_t)g->pages + (uint64_t)t->result[i]);
		w->active = w->interfered = true;
		w->rcl_count++;
		w->rcl_ns += dur;
		w->rcl_max_ns = MAX(w->rcl_max_ns, dur);
		r = add_cpu(w, t->cpu[i]);
		if (r < 0)
			return r;
		st = (struct stall){ .kind = STALL_RECLAIM,
				     .involuntary = true,
				     .thread = thread_index(m, w),
				     .row = i,
				     .ts = m->rcl_ts[i],
				     .dur = dur };
		consider_cause(m, &st);
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
		struct wthread *w = find_thread(m, t->pid[i], t->tid[i]);
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

	if (x->time_ns != y->time_ns)
		return x->time_ns > y->time_ns ? -1 : 1;
	if (x->count != y->count)
		return x->count > y->count ? -1 : 1;
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
		struct wthread *w = find_thread(m, t->pid[i], t->tid[i]);
		struct lock_group *g = NULL;
		uint64_t dur = t->dur_ns[i];
		struct stall st;

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
			*g = (struct lock_group){
				.lock = t->lock[i], .flags = t->flags[i], .name = t->name[i], .max_row = i
			};
		}
		if (dur > g->max_ns) {
			g->max_ns = dur;
			g->max_row = i;
		}
		g->count++;
		g->time_ns += dur;
		if (t->ret[i])
			g->failed++;
		w->active = w->interfered = true;
		w->lck_count++;
		w->lck_ns += dur;
		w->lck_max_ns = MAX(w->lck_max_ns, dur);
		r = add_cpu(w, t->cpu[i]);
		if (r < 0)
			return r;
		st = (struct stall){ .kind = STALL_LOCK,
				     .involuntary = true,
				     .thread = thread_index(m, w),
				     .row = i,
				     .ts = m->lck_ts[i],
				     .dur = dur };
		consider_cause(m, &st);
	}
	for (size_t k = 0; k < m->n; k++)
		qsort_safe(m->t[k].lck, m->t[k].n_lck, sizeof(*m->t[k].lck), cmp_lock_group);
	return 0;
}

static int analyze(const Hostprof__Snapshot *snap, struct model *ret)
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
		r = analyze_irqs(&m);
	if (r >= 0)
		r = analyze_reclaims(&m);
	if (r >= 0)
		r = analyze_faults(&m);
	if (r >= 0)
		r = analyze_locks(&m);
	if (r >= 0)
		decide_cause(&m);
	if (r < 0) {
		model_free(&m);
		return r;
	}
	*ret = m;
	return 0;
}

/* ---- the client's preemption summary ------------------------------------------------------ */

int report_preemptions(const Hostprof__Snapshot *snap, const char *thread_glob, struct preempt_summary *ret)
{
	_cleanup_free_ struct culprit *all = NULL;
	struct preempt_summary s = {};
	size_t n_all = 0, cap_all = 0;
	struct model m;
	struct hp_glob g;
	int r;

	r = thread_glob_compile(thread_glob, &g);
	if (r < 0)
		return r;
	r = analyze(snap, &m);
	if (r < 0)
		return r;
	for (size_t i = 0; i < m.n; i++) {
		const struct wthread *w = &m.t[i];

		if (!thread_glob_run(&g, w->comm))
			continue;
		s.threads++;
		s.preemptions += w->preemptions;
		s.wait_ns += w->preempt_ns;
		s.max_wait_ns = MAX(s.max_wait_ns, w->preempt_max_ns);
		for (size_t c = 0; c < w->n_culprits; c++) {
			const struct culprit *wc = &w->culprits[c];
			size_t k;

			for (k = 0; k < n_all; k++)
				if (all[k].tid == wc->tid && all[k].pid == wc->pid)
					break;
			if (k == n_all) {
				r = reserve_one(&all, n_all, &cap_all, sizeof(*all));
				if (r < 0)
					goto out;
				all[n_all++] = (struct culprit){
					.tid = wc->tid, .pid = wc->pid, .comm = wc->comm, .prio = wc->prio
				};
			}
			all[k].count += wc->count;
			all[k].time_ns += wc->time_ns;
		}
	}
	qsort_safe(all, n_all, sizeof(*all), cmp_culprit);
	if (n_all) {
		s.top_pid = all[0].pid;
		s.top_tid = all[0].tid;
		s.top_prio = all[0].prio;
		snprintf(s.top_comm, sizeof(s.top_comm), "%s", hps_str(snap, all[0].comm));
		s.top_count = all[0].count;
		s.top_wait_ns = all[0].time_ns;
	}
	*ret = s;
	r = 0;
out:
	model_free(&m);
	return r;
}

void report_preemptions_line(const struct preempt_summary *s, const char *thread_glob, char *buf, size_t len)
{
	if (!s->threads) {
		snprintf(buf, len, "no thread named %s in this snapshot", thread_glob);
		return;
	}
	if (!s->preemptions) {
		snprintf(buf, len, "%s: never preempted", thread_glob);
		return;
	}
	snprintf(
		buf, len,
		"%s: %llu preemptions, %.1f ms waited (max %.1f ms), most by %s (pid %u, prio %d): %llu, %.1f ms",
		thread_glob, (unsigned long long)s->preemptions, s->wait_ns / 1e6, s->max_wait_ns / 1e6,
		s->top_comm, s->top_pid, s->top_prio, (unsigned long long)s->top_count, s->top_wait_ns / 1e6);
}

/* ---- words for the writers ---------------------------------------------------------------- */

static double ms(uint64_t ns)
{
	return (double)ns / 1e6;
}

static double pct(uint64_t part, uint64_t whole)
{
	return whole ? 100.0 * (double)part / (double)whole : 0.0;
}

/* Seconds since the start of the window. */
static double rel_s(const struct model *m, uint64_t ts)
{
	return ts >= m->snap->start_ns ? (double)(ts - m->snap->start_ns) / 1e9 :
					 -(double)(m->snap->start_ns - ts) / 1e9;
}

static const char *policy_name(uint32_t policy)
{
	static const char *const names[] = { "SCHED_OTHER", "SCHED_FIFO", "SCHED_RR",	   "SCHED_BATCH",
					     "SCHED_ISO",   "SCHED_IDLE", "SCHED_DEADLINE" };

	return policy < ARRAY_SIZE(names) ? names[policy] : "SCHED_?";
}

/* Sched_switch states, one or several ORed, as ps prints them: "R", "R+", "S", "D", "SD"... */
static void state_name(uint32_t state, char *buf, size_t len)
{
	size_t n = 0;

	if (state == HPS_STATE_RUNNING || state == HPS_STATE_PREEMPTED) {
		snprintf(buf, len, "%s", hps_state_name(state, NULL, 0));
		return;
	}
	for (uint32_t bit = 0x1; bit < HPS_STATE_PREEMPTED && n + 1 < len; bit <<= 1)
		if (state & bit)
			buf[n++] = hps_state_name(bit, NULL, 0)[0]; /* one letter each */
	if (state & ~HPS_STATE_KNOWN && n + 1 < len)
		buf[n++] = '?';
	buf[n] = '\0';
}

static const char *syscall_name(const Hostprof__Snapshot *s, uint32_t nr, char *buf, size_t len)
{
	if (nr < s->n_syscall_names && s->syscall_names[nr][0])
		return s->syscall_names[nr];
	snprintf(buf, len, "syscall_%" PRIu32, nr);
	return buf;
}

/* "hog (pid 200, SCHED_FIFO prio 49)"; the tid too when it is not the process. */
static void task_desc(const Hostprof__Snapshot *s, const struct culprit *c, char *buf, size_t len)
{
	char ids[48], pol[32] = "";

	if (c->tid == c->pid)
		snprintf(ids, sizeof(ids), "pid %" PRIu32, c->pid);
	else
		snprintf(ids, sizeof(ids), "tid %" PRIu32 ", pid %" PRIu32, c->tid, c->pid);
	if (c->has_policy)
		snprintf(pol, sizeof(pol), "%s ", policy_name(c->policy));
	snprintf(buf, len, "%s (%s, %sprio %" PRId32 ")", hps_str(s, c->comm), ids, pol, c->prio);
}

/* The task switched out for row i's next, as a culprit. */
static struct culprit prev_task(const Hostprof__SchedSwitchTable *sw, size_t i)
{
	return (struct culprit){ .tid = sw->prev_tid[i],
				 .pid = sw->prev_pid[i],
				 .comm = sw->prev_comm[i],
				 .prio = sw->prev_prio[i],
				 .has_policy = sw->n_prev_policy > 0,
				 .policy = sw->n_prev_policy ? sw->prev_policy[i] : 0 };
}

static struct culprit next_task(const Hostprof__SchedSwitchTable *sw, size_t i)
{
	return (struct culprit){ .tid = sw->next_tid[i],
				 .pid = sw->next_pid[i],
				 .comm = sw->next_comm[i],
				 .prio = sw->next_prio[i],
				 .has_policy = sw->n_next_policy > 0,
				 .policy = sw->n_next_policy ? sw->next_policy[i] : 0 };
}

/* The slow syscall of this thread during which it went off the CPU at ts, or -1. */
static ssize_t blocking_syscall(const struct model *m, const struct wthread *w, uint64_t ts)
{
	const Hostprof__SyscallTable *sc = m->snap->syscalls;

	for (size_t k = 0; k < w->n_syscalls; k++) {
		size_t i = w->syscalls[k];

		if (m->sc_ts[i] <= ts && ts - m->sc_ts[i] <= sc->dur_ns[i])
			return (ssize_t)i;
	}
	return -1;
}

static uint64_t window_ns(const Hostprof__Snapshot *s)
{
	return s->end_ns > s->start_ns ? s->end_ns - s->start_ns : 0;
}

/* "softirq NET_RX", "irq 24 virtio3-rx", "irq 24" */
static void irq_desc(const Hostprof__Snapshot *s, uint32_t kind, uint32_t num, uint32_t name, char *buf,
		     size_t len)
{
	const char *nm = hps_str(s, name);

	if (kind == HPS_IRQ_SOFT)
		snprintf(buf, len, "softirq %s", nm[0] ? nm : hps_softirq_name(num));
	else if (nm[0])
		snprintf(buf, len, "irq %" PRIu32 " %s", num, nm);
	else
		snprintf(buf, len, "irq %" PRIu32, num);
}

/* "mmap_lock (rwsem read)"; a lock without a name by its kind and address: "mutex 0xffff8880..." */
static void lock_desc(const Hostprof__Snapshot *s, uint32_t name, uint32_t flags, uint64_t lock, char *buf,
		      size_t len)
{
	const char *nm = hps_str(s, name);

	if (!nm[0] && (flags & HPS_LOCK_MMAP))
		nm = "mmap_lock";
	if (nm[0])
		snprintf(buf, len, "%s (%s)", nm, hps_lock_kind_name(flags));
	else
		snprintf(buf, len, "%s 0x%" PRIx64, hps_lock_kind_name(flags), lock);
}

/* ReclaimTable.result: "1234 pages reclaimed", or a compaction's "status 2" */
static void reclaim_result(uint32_t kind, int64_t result, char *buf, size_t len)
{
	if (kind == HPS_RECLAIM_COMPACT)
		snprintf(buf, len, "status %" PRId64, result);
	else
		snprintf(buf, len, "%" PRId64 " page%s reclaimed", result, result == 1 ? "" : "s");
}

/* "CPU 1", "CPUs 0,1,2", "CPUs 0,1,...,7 and 4 more" */
static void cpus_desc(const uint32_t *cpus, size_t n, char *buf, size_t len)
{
	size_t off;

	off = (size_t)snprintf(buf, len, "CPU%s ", n == 1 ? "" : "s");
	for (size_t i = 0; i < n && i < TOP_GROUP_CPUS && off < len; i++)
		off += (size_t)snprintf(buf + off, len - off, "%s%" PRIu32, i ? "," : "", cpus[i]);
	if (n > TOP_GROUP_CPUS && off < len)
		snprintf(buf + off, len - off, " and %zu more", n - TOP_GROUP_CPUS);
}

/* " at or above 10 us" for a threshold of 10000 ns; "" for none */
static void min_desc(uint64_t ns, char *buf, size_t len)
{
	if (!ns)
		buf[0] = '\0';
	else if (ns < NSEC_PER_MSEC)
		snprintf(buf, len, " at or above %g us", (double)ns / 1e3);
	else
		snprintf(buf, len, " at or above %g ms", (double)ns / 1e6);
}

/* " (then gave up: -4 EINTR)" for a lock wait that did not acquire, else "" */
static void lock_ret(int32_t ret, char *buf, size_t len)
{
	const char *e = ret < 0 && ret > -4096 ? strerrorname_np(-ret) : NULL;

	if (!ret)
		buf[0] = '\0';
	else
		snprintf(buf, len, ", then gave up: %" PRId32 "%s%s", ret, e ? " " : "", e ? e : "");
}

/* The verdict's cause, after "worst stall: NAME (tid N) ". */
static void stall_cause(const struct model *m, char *buf, size_t len)
{
	const Hostprof__Snapshot *s = m->snap;
	const struct stall *st = &m->worst;
	const struct wthread *w = &m->t[st->thread];
	char task[160], state[16], nbuf[32];
	struct culprit c;

	switch (st->kind) {
	case STALL_PREEMPTED:
		c = next_task(s->switches, st->row);
		task_desc(s, &c, task, sizeof(task));
		snprintf(buf, len, "waited %.1f ms at %+.3f s: preempted by %s%s", ms(st->dur),
			 rel_s(m, st->ts), task, st->to_end ? ", still waiting when the window closed" : "");
		break;
	case STALL_RUNQUEUE:
		c = prev_task(s->switches, st->row);
		if (c.tid == 0) {
			snprintf(buf, len,
				 "waited %.1f ms at %+.3f s: runnable after a wakeup while CPU %" PRIu32
				 " was idle",
				 ms(st->dur), rel_s(m, st->ts), s->switches->cpu[st->row]);
			break;
		}
		task_desc(s, &c, task, sizeof(task));
		snprintf(buf, len,
			 "waited %.1f ms at %+.3f s: runnable after a wakeup, CPU %" PRIu32 " ran %s",
			 ms(st->dur), rel_s(m, st->ts), s->switches->cpu[st->row], task);
		break;
	case STALL_BLOCKED: {
		const Hostprof__OffCpuTable *t = s->offcpu;
		ssize_t sc = blocking_syscall(m, w, st->ts);
		char in[64] = "", waker[64];

		if (sc >= 0)
			snprintf(in, sizeof(in), " in %s",
				 syscall_name(s, s->syscalls->nr[sc], nbuf, sizeof(nbuf)));
		state_name(t->state[st->row], state, sizeof(state));
		if (t->waker_tid[st->row])
			snprintf(waker, sizeof(waker), "woken by %s tid %" PRIu32,
				 hps_str(s, t->waker_comm[st->row]), t->waker_tid[st->row]);
		else
			snprintf(waker, sizeof(waker), "waker unknown");
		snprintf(buf, len, "blocked %.1f ms%s at %+.3f s (off-CPU %s, %s)", ms(st->dur), in,
			 rel_s(m, st->ts), state, waker);
		break;
	}
	case STALL_RECLAIM: {
		const Hostprof__ReclaimTable *t = s->reclaims;
		char res[64];

		reclaim_result(t->kind[st->row], t->result[st->row], res, sizeof(res));
		snprintf(buf, len, "spent %.1f ms in %s at %+.3f s (order %" PRId32 ", %s)", ms(st->dur),
			 hps_reclaim_kind_name(t->kind[st->row]), rel_s(m, st->ts), t->order[st->row], res);
		break;
	}
	case STALL_LOCK: {
		const Hostprof__LockTable *t = s->locks;
		char lock[160], ret[64];

		lock_desc(s, t->name[st->row], t->flags[st->row], t->lock[st->row], lock, sizeof(lock));
		lock_ret(t->ret[st->row], ret, sizeof(ret));
		snprintf(buf, len, "waited %.1f ms for %s at %+.3f s%s", ms(st->dur), lock, rel_s(m, st->ts),
			 ret);
		break;
	}
	case STALL_IRQ: {
		const Hostprof__IrqTable *t = s->irqs;
		char irq[96];

		irq_desc(s, t->kind[st->row], t->num[st->row], t->name[st->row], irq, sizeof(irq));
		if (st->waited)
			snprintf(buf, len, "was kept waiting %.1f ms by %s on CPU %" PRIu32 " at %+.3f s",
				 ms(st->dur), irq, t->cpu[st->row], rel_s(m, st->ts));
		else
			snprintf(buf, len, "was interrupted %.1f ms by %s on CPU %" PRIu32 " at %+.3f s",
				 ms(st->dur), irq, t->cpu[st->row], rel_s(m, st->ts));
		break;
	}
	case STALL_IRQ_TOTAL: {
		const struct irq_group *g = &w->irq_ran.g[st->row];
		char irq[96], cpus[96];

		irq_desc(s, g->kind, g->num, g->name, irq, sizeof(irq));
		cpus_desc(g->cpus, g->n_cpus, cpus, sizeof(cpus));
		snprintf(buf, len,
			 "lost %.1f%% of %s%s to %s (%.1f ms over %.3f s, %" PRIu64 " times, max %.1f ms)",
			 pct(g->time_ns, window_ns(s)), g->n_cpus == 1 ? "" : "the window on ", cpus, irq,
			 ms(g->time_ns), (double)window_ns(s) / 1e9, g->count, ms(g->max_ns));
		break;
	}
	case STALL_NONE:
		snprintf(buf, len, "none");
		break;
	}
}

/* ", within its 10.0 ms off-CPU D interval" when the verdict explains a scheduler stall, else "" */
static void explained_desc(const struct model *m, char *buf, size_t len)
{
	const struct stall *e = &m->explained;
	char state[16];

	buf[0] = '\0';
	if (e->kind == STALL_RUNQUEUE) {
		snprintf(buf, len, ", within its %.1f ms runqueue wait", ms(e->dur));
	} else if (e->kind == STALL_BLOCKED) {
		state_name(m->snap->offcpu->state[e->row], state, sizeof(state));
		snprintf(buf, len, ", within its %.1f ms off-CPU %s interval", ms(e->dur), state);
	}
}

static void verdict_line(const struct model *m, char *buf, size_t len)
{
	char cause[400], within[80];

	if (m->worst.kind == STALL_NONE) {
		snprintf(
			buf, len,
			"worst stall: none: no watched thread was preempted, waited on a runqueue or blocked");
		return;
	}
	stall_cause(m, cause, sizeof(cause));
	explained_desc(m, within, sizeof(within));
	snprintf(buf, len, "worst stall: %s (tid %" PRIu32 ") %s%s", m->t[m->worst.thread].comm,
		 m->t[m->worst.thread].tid, cause, within);
}

static uint64_t percentile(const uint64_t *sorted, size_t n, unsigned int p)
{
	size_t rank = (p * n + 99) / 100; /* nearest rank, 1-based */

	if (!n)
		return 0;
	return sorted[rank ? rank - 1 : 0];
}

/* Syscall arguments: small values in decimal, addresses and flags in hex. */
static void put_arg(FILE *f, uint64_t v)
{
	if (v < 0x10000)
		fprintf(f, "%" PRIu64, v);
	else
		fprintf(f, "0x%" PRIx64, v);
}

static void put_ret(FILE *f, int64_t ret)
{
	const char *e = ret < 0 && ret > -4096 ? strerrorname_np((int)-ret) : NULL;

	fprintf(f, "%" PRId64, ret);
	if (e)
		fprintf(f, " %s", e);
}

static uint64_t drops_total(const Hostprof__CaptureStats *st)
{
	uint64_t sum = 0;

	for (size_t i = 0; st && i < st->n_drops; i++)
		sum += st->drops[i]->count;
	return sum;
}

static void cpu_list(FILE *f, const struct wthread *w)
{
	for (size_t i = 0; i < w->n_cpus; i++)
		fprintf(f, "%s%" PRIu32, i ? "," : "", w->cpus[i]);
}

/* ---- text ------------------------------------------------------------------------------- */

/* By HPS_INTERF_ bit. fault-types only refines faults (off by default): it is named when
 * captured, never as missing. */
static const char *const interference_names[] = { "irqs", "reclaim", "faults", "locks", "fault-types" };

static bool interference_missing(const struct model *m, size_t b)
{
	return !(m->interference & (1u << b)) && 1u << b != HPS_INTERF_FAULT_TYPES;
}

/* Which interference tables the snapshot has, once; nothing when it has none. */
static void text_interference_header(const struct model *m, FILE *f)
{
	const Hostprof__Snapshot *s = m->snap;
	bool first = true;
	char min[48];

	if (!m->interference)
		return;
	fputs("interference  captured:", f);
	for (size_t b = 0; b < ARRAY_SIZE(interference_names); b++) {
		if (!(m->interference & (1u << b)))
			continue;
		fprintf(f, "%s %s", first ? "" : ",", interference_names[b]);
		first = false;
		min[0] = '\0';
		if (1u << b == HPS_INTERF_IRQ)
			min_desc(s->irq_min_ns, min, sizeof(min));
		else if (1u << b == HPS_INTERF_LOCKS)
			min_desc(s->lock_min_ns, min, sizeof(min));
		fputs(min, f);
	}
	first = true;
	for (size_t b = 0; b < ARRAY_SIZE(interference_names); b++) {
		if (!interference_missing(m, b))
			continue;
		fprintf(f, "%s%s", first ? "; not captured: " : ", ", interference_names[b]);
		first = false;
	}
	fprintf(f, "%s\n", first ? "" : " (--interference)");
	if (m->unmatched_count)
		fprintf(f,
			"interference  %" PRIu64 " interrupt%s, %.3f ms, ran where a thread waited;"
			" the switches name no thread waiting there\n",
			m->unmatched_count, m->unmatched_count == 1 ? "" : "s", ms(m->unmatched_ns));
}

static void text_header(const struct model *m, FILE *f)
{
	const Hostprof__Snapshot *s = m->snap;
	const Hostprof__Process *proc = NULL;

	for (size_t i = 0; i < s->n_processes; i++)
		if (s->processes[i]->pid == s->pid)
			proc = s->processes[i];
	fprintf(f, "process  %s (pid %" PRIu32 ")", proc && proc->comm ? proc->comm : "?", s->pid);
	if (proc && proc->n_cmdline) {
		fputs(":", f);
		for (size_t i = 0; i < proc->n_cmdline; i++)
			fprintf(f, " %s", proc->cmdline[i]);
	}
	fputc('\n', f);
	if (s->host)
		fprintf(f, "host     %s, %s %s %s, %" PRIu32 " CPUs\n",
			s->host->hostname ? s->host->hostname : "?", s->host->sysname ? s->host->sysname : "",
			s->host->kernel_release ? s->host->kernel_release : "",
			s->host->machine ? s->host->machine : "", s->host->ncpus);
	fprintf(f, "window   %.3f s from %" PRIu64 ".%09" PRIu64 " s CLOCK_BOOTTIME, reason: %s\n",
		s->end_ns > s->start_ns ? (double)(s->end_ns - s->start_ns) / 1e9 : 0.0,
		(uint64_t)(s->start_ns / NSEC_PER_SEC), (uint64_t)(s->start_ns % NSEC_PER_SEC),
		s->reason && s->reason[0] ? s->reason : "?");
	text_interference_header(m, f);
	for (size_t i = 0; i < s->n_markers; i++) {
		const Hostprof__Marker *mk = s->markers[i];

		fprintf(f, "marker   %+.3f s  %s (tid %" PRIu32 ")%s%s\n", rel_s(m, mk->ts),
			mk->name ? mk->name : "", mk->tid, mk->detail && mk->detail[0] ? ": " : "",
			mk->detail ? mk->detail : "");
	}
}

static void text_preemptions(const struct model *m, const struct wthread *w, FILE *f)
{
	char task[160];

	if (!w->preemptions) {
		fprintf(f, "  preemptions       none\n");
		return;
	}
	fprintf(f, "  preemptions       %" PRIu64 ", %.1f ms taken, max %.1f ms\n", w->preemptions,
		ms(w->preempt_ns), ms(w->preempt_max_ns));
	fprintf(f, "    %8s %10s %10s  %s\n", "count", "total ms", "max ms", "by");
	for (size_t c = 0; c < w->n_culprits && c < TOP_CULPRITS; c++) {
		const struct culprit *cu = &w->culprits[c];

		task_desc(m->snap, cu, task, sizeof(task));
		fprintf(f, "    %8" PRIu64 " %10.1f %10.1f  %s\n", cu->count, ms(cu->time_ns), ms(cu->max_ns),
			task);
	}
	if (w->n_culprits > TOP_CULPRITS)
		fprintf(f, "    ... %zu more tasks\n", w->n_culprits - TOP_CULPRITS);
}

static void text_cpus(const struct model *m, const struct wthread *w, FILE *f)
{
	const Hostprof__MigrationTable *mg = m->snap->migrations;

	fprintf(f, "  CPUs              ");
	if (!w->n_cpus)
		fprintf(f, "not seen running");
	else if (w->n_cpus == 1)
		fprintf(f, "ran only on CPU %" PRIu32, w->cpus[0]);
	else {
		fprintf(f, "ran on %zu CPUs: ", w->n_cpus);
		cpu_list(f, w);
	}
	if (!w->n_migrations)
		fprintf(f, "; no migrations\n");
	else
		fprintf(f, "; %zu migration%s\n", w->n_migrations, w->n_migrations == 1 ? "" : "s");
	for (size_t k = 0; k < w->n_migrations && k < TOP_MIGRATIONS; k++) {
		size_t i = w->migrations[k];

		fprintf(f, "    %+.3f s  CPU %" PRIu32 " -> %" PRIu32 "\n", rel_s(m, m->mg_ts[i]),
			mg->from_cpu[i], mg->to_cpu[i]);
	}
	if (w->n_migrations > TOP_MIGRATIONS)
		fprintf(f, "    ... %zu more\n", w->n_migrations - TOP_MIGRATIONS);
}

static void text_syscalls(const struct model *m, const struct wthread *w, FILE *f)
{
	const Hostprof__Snapshot *s = m->snap;
	const Hostprof__SyscallTable *sc = s->syscalls;
	char nbuf[32];

	if (w->n_syscalls) {
		fprintf(f, "  slowest syscalls  %zu at or above %.1f ms\n", w->n_syscalls,
			ms(s->syscall_min_ns));
		fprintf(f, "    %8s %10s  %s\n", "at s", "ms", "call");
		for (size_t k = 0; k < w->n_syscalls && k < TOP_SYSCALLS; k++) {
			size_t i = w->syscalls[k];

			fprintf(f, "    %+8.3f %10.1f  %s(", rel_s(m, m->sc_ts[i]), ms(sc->dur_ns[i]),
				syscall_name(s, sc->nr[i], nbuf, sizeof(nbuf)));
			put_arg(f, sc->arg0[i]);
			fputs(", ", f);
			put_arg(f, sc->arg1[i]);
			fputs(", ", f);
			put_arg(f, sc->arg2[i]);
			fputs(") = ", f);
			put_ret(f, sc->ret[i]);
			fputc('\n', f);
		}
	} else {
		fprintf(f, "  slowest syscalls  none at or above %.1f ms\n", ms(s->syscall_min_ns));
	}
	if (!w->n_hists)
		return;
	fprintf(f, "  syscall totals    since watching began\n");
	fprintf(f, "    %8s %10s %10s  %s\n", "count", "total ms", "max ms", "syscall");
	for (size_t k = 0; k < w->n_hists && k < TOP_HISTOGRAMS; k++) {
		const Hostprof__SyscallHistogram *h = s->syscall_hist[w->hists[k]];

		fprintf(f, "    %8" PRIu64 " %10.1f %10.1f  %s\n", h->count, ms(h->total_ns), ms(h->max_ns),
			syscall_name(s, h->nr, nbuf, sizeof(nbuf)));
	}
	if (w->n_hists > TOP_HISTOGRAMS)
		fprintf(f, "    ... %zu more\n", w->n_hists - TOP_HISTOGRAMS);
}

/* The first max frames of stack idx1, innermost first, one per line, indented. */
static void text_stack(const struct model *m, uint32_t idx1, bool kernel, int indent, size_t max, FILE *f)
{
	const Hostprof__Stack *st;

	if (!idx1)
		return;
	st = m->snap->stacks[idx1 - 1];
	for (size_t j = 0; j < st->n_frames && j < max; j++)
		fprintf(f, "%*s%s%s\n", indent, "", m->fn.name[st->frames[j]], kernel ? " [k]" : "");
	if (st->n_frames > max)
		fprintf(f, "%*s... %zu more frame%s\n", indent, "", st->n_frames - max,
			st->n_frames - max == 1 ? "" : "s");
	else if (st->truncated)
		fprintf(f, "%*s... (truncated)\n", indent, "");
	if (st->suspect)
		fprintf(f, "%*s(suspect: a frame lies outside any executable mapping)\n", indent, "");
}

static void text_offcpu(const struct model *m, const struct wthread *w, FILE *f)
{
	const Hostprof__Snapshot *s = m->snap;

	if (!w->off_count) {
		fprintf(f, "  off-CPU           none at or above %.1f ms\n", ms(s->offcpu_min_ns));
		return;
	}
	fprintf(f, "  off-CPU           %" PRIu64 " interval%s, %.1f ms blocked\n", w->off_count,
		w->off_count == 1 ? "" : "s", ms(w->off_ns));
	fprintf(f, "    %8s %10s  %-5s  %s\n", "count", "total ms", "state",
		"woken by; stack, innermost first");
	for (size_t g = 0; g < w->n_off && g < TOP_STACKS; g++) {
		const struct offcpu_group *og = &w->off[g];
		char state[16];

		state_name(og->states, state, sizeof(state));
		fprintf(f, "    %8" PRIu64 " %10.1f  %-5s  ", og->count, ms(og->time_ns), state);
		for (size_t k = 0; k < og->n_wakers && k < TOP_WAKERS; k++) {
			const struct waker *wk = &og->wakers[k];

			if (k)
				fputs(", ", f);
			if (wk->tid)
				fprintf(f, "%s (tid %" PRIu32 ")", hps_str(s, wk->comm), wk->tid);
			else
				fputs("unknown", f);
			if (og->n_wakers > 1)
				fprintf(f, " %" PRIu64 "x", wk->count);
		}
		if (og->n_wakers > TOP_WAKERS)
			fprintf(f, ", %zu more", og->n_wakers - TOP_WAKERS);
		fputc('\n', f);
		if (!og->kstack && !og->ustack)
			fprintf(f, "%*s[no stack]\n", STACK_INDENT, "");
		text_stack(m, og->kstack, true, STACK_INDENT, SIZE_MAX, f);
		text_stack(m, og->ustack, false, STACK_INDENT, SIZE_MAX, f);
	}
	if (w->n_off > TOP_STACKS)
		fprintf(f, "    ... %zu more stacks\n", w->n_off - TOP_STACKS);
}

static void text_oncpu(const struct model *m, const struct wthread *w, FILE *f)
{
	if (!w->samples) {
		fprintf(f, "  on-CPU            no samples\n");
		return;
	}
	fprintf(f, "  on-CPU            %" PRIu64 " sample%s, %.1f%% of the process's %" PRIu64 "\n",
		w->samples, w->samples == 1 ? "" : "s", pct(w->samples, m->samples), m->samples);
	fprintf(f, "    %8s %10s  %s\n", "samples", "%", "function");
	for (size_t k = 0; k < w->n_leaves && k < TOP_FUNCTIONS; k++) {
		const struct leaf_count *l = &w->leaves[k];

		fprintf(f, "    %8" PRIu64 " %10.1f  %s%s\n", l->samples, pct(l->samples, m->samples),
			l->name, l->kernel ? " [k]" : "");
	}
	if (w->n_leaves > TOP_FUNCTIONS)
		fprintf(f, "    ... %zu more functions\n", w->n_leaves - TOP_FUNCTIONS);
}

static void text_irq_groups(const struct model *m, const struct irq_side *side, const char *what, FILE *f)
{
	const Hostprof__Snapshot *s = m->snap;

	fprintf(f, "      %8s %10s %10s %9s  %s\n", "count", "total ms", "max ms", "% window", what);
	for (size_t k = 0; k < side->n && k < TOP_IRQS; k++) {
		const struct irq_group *g = &side->g[k];
		char irq[96], cpus[96];

		irq_desc(s, g->kind, g->num, g->name, irq, sizeof(irq));
		cpus_desc(g->cpus, g->n_cpus, cpus, sizeof(cpus));
		fprintf(f, "      %8" PRIu64 " %10.3f %10.3f %9.2f  %s on %s\n", g->count, ms(g->time_ns),
			ms(g->max_ns), pct(g->time_ns, window_ns(s)), irq, cpus);
	}
	if (side->n > TOP_IRQS)
		fprintf(f, "      ... %zu more\n", side->n - TOP_IRQS);
}

static void text_irqs(const struct model *m, const struct wthread *w, FILE *f)
{
	const Hostprof__Snapshot *s = m->snap;
	char min[48];

	if (!w->irq_ran.count && !w->irq_waited.count) {
		min_desc(s->irq_min_ns, min, sizeof(min));
		fprintf(f, "    interrupts      none%s\n", min);
		return;
	}
	fprintf(f, "    interrupts      ");
	if (w->irq_ran.count)
		fprintf(f, "%" PRIu64 " while it ran: %.3f ms taken (%.2f%% of the window)", w->irq_ran.count,
			ms(w->irq_ran.time_ns), pct(w->irq_ran.time_ns, window_ns(s)));
	if (w->irq_waited.count)
		fprintf(f, "%s%" PRIu64 " while it waited on a CPU: %.3f ms", w->irq_ran.count ? "; " : "",
			w->irq_waited.count, ms(w->irq_waited.time_ns));
	fputc('\n', f);
	if (w->irq_ran.n)
		text_irq_groups(m, &w->irq_ran, "interrupted it", f);
	if (w->irq_waited.n)
		text_irq_groups(m, &w->irq_waited, "ran while it waited", f);
}

static void text_reclaim(const struct model *m, const struct wthread *w, FILE *f)
{
	const Hostprof__ReclaimTable *t = m->snap->reclaims;

	if (!w->rcl_count) {
		fprintf(f, "    reclaim         none\n");
		return;
	}
	fprintf(f, "    reclaim         %" PRIu64 ", %.3f ms, max %.3f ms\n", w->rcl_count, ms(w->rcl_ns),
		ms(w->rcl_max_ns));
	fprintf(f, "      %8s %10s %10s  %s\n", "count", "total ms", "max ms", "kind");
	for (size_t k = 0; k < w->n_rcl && k < TOP_RECLAIMS; k++) {
		const struct reclaim_group *g = &w->rcl[k];
		char res[64];

		if (g->kind == HPS_RECLAIM_COMPACT)
			reclaim_result(g->kind, t->result[g->max_row], res, sizeof(res));
		else
			reclaim_result(g->kind, g->pages, res, sizeof(res));
		fprintf(f, "      %8" PRIu64 " %10.3f %10.3f  %s, order %" PRId32 ": %s%s\n", g->count,
			ms(g->time_ns), ms(g->max_ns), hps_reclaim_kind_name(g->kind), g->order, res,
			g->kind == HPS_RECLAIM_COMPACT && g->count > 1 ? " (the longest)" : "");
	}
	if (w->n_rcl > TOP_RECLAIMS)
		fprintf(f, "      ... %zu more\n", w->n_rcl - TOP_RECLAIMS);
}

/* Per second over the periods the counts cover (the window when they say nothing). */
static double fault_rate(const struct model *m, const struct fault_sum *fs)
{
	uint64_t over = fs->over_ns ? fs->over_ns : window_ns(m->snap);

	return over ? (double)(fs->minor + fs->major) * 1e9 / (double)over : 0.0;
}

static void text_faults(const struct model *m, const struct wthread *w, FILE *f)
{
	const Hostprof__FaultTable *t = m->snap->faults;
	const struct fault_sum *fs = &w->flt;

	if (!fs->faults && !fs->minor && !fs->major) {
		fprintf(f, "    page faults     none\n");
		return;
	}
	fprintf(f, "    page faults     %" PRIu64 " minor, %" PRIu64 " major: %.0f/s over %.3f s", fs->minor,
		fs->major, fault_rate(m, fs), (double)(fs->over_ns ? fs->over_ns : window_ns(m->snap)) / 1e9);
	if (fs->peak_major)
		fprintf(f, "; most major at once: %" PRIu64 " in %.3f s at %+.3f s", fs->peak_major,
			(double)t->dur_ns[fs->peak_row] / 1e9, rel_s(m, m->flt_ts[fs->peak_row]));
	fputc('\n', f);
	if (fs->faults)
		fprintf(f,
			"                    %" PRIu64 " user faults taken: %" PRIu64 " write, %" PRIu64
			" exec, %" PRIu64 " prot\n",
			fs->faults, fs->write, fs->exec, fs->prot);
}

#define LOCK_STACK_INDENT 38 /* text: under the lock column */

static void text_locks(const struct model *m, const struct wthread *w, FILE *f)
{
	const Hostprof__Snapshot *s = m->snap;
	const Hostprof__LockTable *t = s->locks;
	char min[48];

	if (!w->lck_count) {
		min_desc(s->lock_min_ns, min, sizeof(min));
		fprintf(f, "    lock waits      none%s\n", min);
		return;
	}
	fprintf(f, "    lock waits      %" PRIu64 ", %.3f ms, max %.3f ms\n", w->lck_count, ms(w->lck_ns),
		ms(w->lck_max_ns));
	fprintf(f, "      %8s %10s %10s  %s\n", "count", "total ms", "max ms",
		"lock; the longest wait's kernel stack, innermost first");
	for (size_t k = 0; k < w->n_lck && k < TOP_LOCKS; k++) {
		const struct lock_group *g = &w->lck[k];
		char lock[160];

		lock_desc(s, g->name, g->flags, g->lock, lock, sizeof(lock));
		fprintf(f, "      %8" PRIu64 " %10.3f %10.3f  %s", g->count, ms(g->time_ns), ms(g->max_ns),
			lock);
		if (g->failed)
			fprintf(f, "; %" PRIu64 " gave up", g->failed);
		fputc('\n', f);
		text_stack(m, t->kstack[g->max_row], true, LOCK_STACK_INDENT, LOCK_FRAMES, f);
	}
	if (w->n_lck > TOP_LOCKS)
		fprintf(f, "      ... %zu more locks\n", w->n_lck - TOP_LOCKS);
}

/* What interfered with the thread, for each table captured (the header names the others). */
static void text_interference(const struct model *m, const struct wthread *w, FILE *f)
{
	if (!m->interference)
		return;
	if (!w->interfered) {
		fprintf(f, "  interference      none\n");
		return;
	}
	fprintf(f, "  interference\n");
	if (m->interference & HPS_INTERF_IRQ)
		text_irqs(m, w, f);
	if (m->interference & HPS_INTERF_RECLAIM)
		text_reclaim(m, w, f);
	if (m->interference & HPS_INTERF_FAULTS)
		text_faults(m, w, f);
	if (m->interference & HPS_INTERF_LOCKS)
		text_locks(m, w, f);
}

static void text_thread(const struct model *m, const struct wthread *w, FILE *f)
{
	fprintf(f, "\nthread %s (tid %" PRIu32 ")\n", w->comm[0] ? w->comm : "?", w->tid);
	text_preemptions(m, w, f);
	if (w->n_rq)
		fprintf(f,
			"  runqueue latency  p50 %.1f ms, p99 %.1f ms, max %.1f ms over %zu switch-ins (%" PRIu64
			" after a wakeup, %" PRIu64 " after a preemption)\n",
			ms(percentile(w->rq, w->n_rq, 50)), ms(percentile(w->rq, w->n_rq, 99)),
			ms(w->rq[w->n_rq - 1]), w->n_rq, w->rq_wakeup, w->rq_preempt);
	else
		fprintf(f, "  runqueue latency  not known\n");
	text_cpus(m, w, f);
	text_syscalls(m, w, f);
	text_offcpu(m, w, f);
	text_oncpu(m, w, f);
	text_interference(m, w, f);
}

/* The watched threads with nothing to report, on one line. */
static void text_idle_threads(const struct model *m, FILE *f)
{
	size_t n = 0;

	for (size_t i = 0; i < m->n; i++) {
		const struct wthread *w = &m->t[i];

		if (w->active)
			continue;
		if (n < TOP_IDLE_THREADS)
			fprintf(f, "%s%s (tid %" PRIu32 ")",
				n ? ", " : "\nno events in this window: ", w->comm[0] ? w->comm : "?",
				w->tid);
		n++;
	}
	if (n > TOP_IDLE_THREADS)
		fprintf(f, " and %zu more threads", n - TOP_IDLE_THREADS);
	if (n)
		fputc('\n', f);
}

static void text_capture(const struct model *m, FILE *f)
{
	const Hostprof__Snapshot *s = m->snap;
	const Hostprof__CaptureStats *st = s->stats;
	const Hostprof__SymbolStats *sy = s->symbol_stats;

	fprintf(f, "\ncapture\n");
	fprintf(f, "  events            %" PRIu64 " for this process, %" PRIu64 " in all\n",
		st ? st->events : 0, st ? st->events_total : 0);
	fprintf(f, "  drops             %" PRIu64 " (host-wide)\n", drops_total(st));
	for (size_t i = 0; st && i < st->n_drops; i++)
		fprintf(f, "    %-16s %" PRIu64 "\n", st->drops[i]->cause ? st->drops[i]->cause : "?",
			st->drops[i]->count);
	fprintf(f, "  evicted           %" PRIu64 "\n", st ? st->evicted : 0);
	fprintf(f,
		"  symbols           frames resolved %" PRIu64 ", unresolved %" PRIu64
		"; suspect stacks %" PRIu64 "\n",
		sy ? sy->resolved : 0, sy ? sy->unresolved : 0, sy ? sy->suspect_stacks : 0);
	if (st && st->has_stack_frames_max)
		fprintf(f, "  stack depth       %" PRIu64 " frames at most\n", st->stack_frames_max);
}

static int finish(FILE *out)
{
	errno = 0;
	if (fflush(out) == EOF || ferror(out))
		return errno ? -errno : -EIO;
	return 0;
}

int snapshot_report_text(const Hostprof__Snapshot *snap, FILE *out)
{
	char line[512];
	struct model m;
	int r;

	r = analyze(snap, &m);
	if (r < 0)
		return r;
	verdict_line(&m, line, sizeof(line));
	fprintf(out, "%s\n\n", line);
	text_header(&m, out);
	for (size_t i = 0; i < m.n; i++)
		if (m.t[i].active)
			text_thread(&m, &m.t[i], out);
	text_idle_threads(&m, out);
	text_capture(&m, out);
	model_free(&m);
	return finish(out);
}

/* ---- JSON ------------------------------------------------------------------------------- */

static void json_task(struct jsonw *j, const Hostprof__Snapshot *s, const struct culprit *c)
{
	jsonw_string_field(j, "comm", hps_str(s, c->comm));
	jsonw_uint_field(j, "tid", c->tid);
	jsonw_uint_field(j, "pid", c->pid);
	if (c->has_policy)
		jsonw_string_field(j, "policy", policy_name(c->policy));
	jsonw_int_field(j, "prio", c->prio);
}

static void json_stack(const struct model *m, uint32_t idx1, bool kernel, struct jsonw *j)
{
	const Hostprof__Stack *st;

	if (!idx1)
		return;
	st = m->snap->stacks[idx1 - 1];
	for (size_t k = 0; k < st->n_frames; k++) {
		jsonw_begin_object(j);
		jsonw_string_field(j, "function", m->fn.name[st->frames[k]]);
		jsonw_bool_field(j, "kernel", kernel);
		jsonw_end_object(j);
	}
}

static const char *irq_kind_name(uint32_t kind)
{
	return kind == HPS_IRQ_SOFT ? "softirq" : kind == HPS_IRQ_HARD ? "hardirq" : "?";
}

/* An IrqTable row's or group's kind, number and name. */
static void json_irq_id(struct jsonw *j, const Hostprof__Snapshot *s, uint32_t kind, uint32_t num,
			uint32_t name)
{
	const char *nm = hps_str(s, name);

	jsonw_string_field(j, "kind", irq_kind_name(kind));
	jsonw_uint_field(j, "num", num);
	jsonw_string_field(j, "name", !nm[0] && kind == HPS_IRQ_SOFT ? hps_softirq_name(num) : nm);
}

/* A kernel address as a string: JSON numbers lose bits above 2^53 in most readers. */
static void json_address_field(struct jsonw *j, const char *name, uint64_t addr)
{
	char buf[24];

	snprintf(buf, sizeof(buf), "0x%" PRIx64, addr);
	jsonw_string_field(j, name, buf);
}

static void json_lock_id(struct jsonw *j, const Hostprof__Snapshot *s, uint64_t lock, uint32_t flags,
			 uint32_t name)
{
	json_address_field(j, "address", lock);
	jsonw_string_field(j, "kind", hps_lock_kind_name(flags));
	jsonw_uint_field(j, "flags", flags);
	jsonw_string_field(j, "name",
			   hps_str(s, name)[0] || !(flags & HPS_LOCK_MMAP) ? hps_str(s, name) : "mmap_lock");
	jsonw_bool_field(j, "mmap_lock", flags & HPS_LOCK_MMAP);
}

static void json_errno_field(struct jsonw *j, int64_t ret)
{
	const char *e = ret < 0 && ret > -4096 ? strerrorname_np((int)-ret) : NULL;

	if (e)
		jsonw_string_field(j, "errno", e);
}

static void json_verdict(const struct model *m, struct jsonw *j)
{
	static const char *const kinds[] = { "none",	"preempted", "runqueue", "blocked",
					     "reclaim", "lock",	     "irq",	 "irq_total" };
	const Hostprof__Snapshot *s = m->snap;
	const struct stall *st = &m->worst;
	char line[512], state[16], nbuf[32];
	struct culprit c;

	verdict_line(m, line, sizeof(line));
	jsonw_name(j, "verdict");
	jsonw_begin_object(j);
	jsonw_string_field(j, "kind", kinds[st->kind]);
	jsonw_string_field(j, "text", line);
	if (st->kind == STALL_NONE) {
		jsonw_end_object(j);
		return;
	}
	jsonw_string_field(j, "thread", m->t[st->thread].comm);
	jsonw_uint_field(j, "tid", m->t[st->thread].tid);
	if (st->kind != STALL_IRQ_TOTAL) /* a total has no one time */
		jsonw_int_field(j, "at_ns",
				(int64_t)(st->ts - s->start_ns)); /* a wait can start before the window */
	jsonw_uint_field(j, "dur_ns", st->dur);
	jsonw_bool_field(j, "involuntary", st->involuntary);
	switch (st->kind) {
	case STALL_PREEMPTED:
	case STALL_RUNQUEUE:
		c = st->kind == STALL_PREEMPTED ? next_task(s->switches, st->row) :
						  prev_task(s->switches, st->row);
		jsonw_uint_field(j, "cpu", s->switches->cpu[st->row]);
		if (st->kind == STALL_PREEMPTED)
			jsonw_bool_field(j, "until_window_end", st->to_end);
		jsonw_name(j, st->kind == STALL_PREEMPTED ? "preempted_by" : "cpu_ran");
		jsonw_begin_object(j);
		json_task(j, s, &c);
		jsonw_end_object(j);
		break;
	case STALL_BLOCKED: {
		const Hostprof__OffCpuTable *t = s->offcpu;
		ssize_t sc = blocking_syscall(m, &m->t[st->thread], st->ts);

		if (sc >= 0)
			jsonw_string_field(j, "syscall",
					   syscall_name(s, s->syscalls->nr[sc], nbuf, sizeof(nbuf)));
		state_name(t->state[st->row], state, sizeof(state));
		jsonw_string_field(j, "state", state);
		jsonw_name(j, "woken_by");
		if (t->waker_tid[st->row]) {
			jsonw_begin_object(j);
			jsonw_string_field(j, "comm", hps_str(s, t->waker_comm[st->row]));
			jsonw_uint_field(j, "tid", t->waker_tid[st->row]);
			jsonw_uint_field(j, "pid", t->waker_pid[st->row]);
			jsonw_end_object(j);
		} else {
			jsonw_null(j);
		}
		break;
	}
	case STALL_RECLAIM: {
		const Hostprof__ReclaimTable *t = s->reclaims;

		jsonw_uint_field(j, "cpu", t->cpu[st->row]);
		jsonw_name(j, "reclaim");
		jsonw_begin_object(j);
		jsonw_string_field(j, "kind", hps_reclaim_kind_name(t->kind[st->row]));
		jsonw_int_field(j, "order", t->order[st->row]);
		jsonw_uint_field(j, "gfp", t->gfp[st->row]);
		jsonw_int_field(j, "result", t->result[st->row]);
		jsonw_end_object(j);
		break;
	}
	case STALL_LOCK: {
		const Hostprof__LockTable *t = s->locks;

		jsonw_uint_field(j, "cpu", t->cpu[st->row]);
		jsonw_name(j, "lock");
		jsonw_begin_object(j);
		json_lock_id(j, s, t->lock[st->row], t->flags[st->row], t->name[st->row]);
		jsonw_int_field(j, "ret", t->ret[st->row]);
		json_errno_field(j, t->ret[st->row]);
		jsonw_name(j, "frames");
		jsonw_begin_array(j);
		json_stack(m, t->kstack[st->row], true, j);
		jsonw_end_array(j);
		jsonw_end_object(j);
		break;
	}
	case STALL_IRQ: {
		const Hostprof__IrqTable *t = s->irqs;

		jsonw_uint_field(j, "cpu", t->cpu[st->row]);
		jsonw_name(j, "irq");
		jsonw_begin_object(j);
		json_irq_id(j, s, t->kind[st->row], t->num[st->row], t->name[st->row]);
		jsonw_string_field(j, "thread_was", st->waited ? "waiting" : "running");
		jsonw_end_object(j);
		break;
	}
	case STALL_IRQ_TOTAL: {
		const struct irq_group *g = &m->t[st->thread].irq_ran.g[st->row];

		jsonw_name(j, "cpus");
		jsonw_begin_array(j);
		for (size_t i = 0; i < g->n_cpus; i++)
			jsonw_uint(j, g->cpus[i]);
		jsonw_end_array(j);
		jsonw_float_field(j, "percent", pct(g->time_ns, window_ns(s)));
		jsonw_name(j, "irq");
		jsonw_begin_object(j);
		json_irq_id(j, s, g->kind, g->num, g->name);
		jsonw_string_field(j, "thread_was", "running");
		jsonw_uint_field(j, "count", g->count);
		jsonw_uint_field(j, "max_ns", g->max_ns);
		jsonw_end_object(j);
		break;
	}
	case STALL_NONE:
		break;
	}
	if (m->explained.kind != STALL_NONE) {
		const struct stall *e = &m->explained;

		jsonw_name(j, "within"); /* the scheduler's stall this explains */
		jsonw_begin_object(j);
		jsonw_string_field(j, "kind", kinds[e->kind]);
		jsonw_int_field(j, "at_ns", (int64_t)(e->ts - s->start_ns));
		jsonw_uint_field(j, "dur_ns", e->dur);
		if (e->kind == STALL_BLOCKED) {
			state_name(s->offcpu->state[e->row], state, sizeof(state));
			jsonw_string_field(j, "state", state);
		}
		jsonw_end_object(j);
	}
	jsonw_end_object(j);
}

/* Which interference tables were captured, and with what thresholds; nothing without any. */
static void json_interference_header(const struct model *m, struct jsonw *j)
{
	const Hostprof__Snapshot *s = m->snap;

	if (!m->interference)
		return;
	jsonw_name(j, "interference");
	jsonw_begin_object(j);
	for (int captured = 1; captured >= 0; captured--) {
		jsonw_name(j, captured ? "captured" : "not_captured");
		jsonw_begin_array(j);
		for (size_t b = 0; b < ARRAY_SIZE(interference_names); b++)
			if (captured ? !!(m->interference & (1u << b)) : interference_missing(m, b))
				jsonw_string(j, interference_names[b]);
		jsonw_end_array(j);
	}
	jsonw_uint_field(j, "irq_min_ns", s->irq_min_ns);
	jsonw_uint_field(j, "lock_min_ns", s->lock_min_ns);
	jsonw_name(j, "unmatched_irqs"); /* ran where a thread waited; the switches name none */
	jsonw_begin_object(j);
	jsonw_uint_field(j, "count", m->unmatched_count);
	jsonw_uint_field(j, "time_ns", m->unmatched_ns);
	jsonw_end_object(j);
	jsonw_end_object(j);
}

static void json_header(const struct model *m, struct jsonw *j)
{
	const Hostprof__Snapshot *s = m->snap;

	jsonw_name(j, "process");
	jsonw_begin_object(j);
	jsonw_uint_field(j, "pid", s->pid);
	for (size_t i = 0; i < s->n_processes; i++) {
		const Hostprof__Process *p = s->processes[i];

		if (p->pid != s->pid)
			continue;
		jsonw_string_field(j, "comm", p->comm);
		jsonw_name(j, "cmdline");
		jsonw_begin_array(j);
		for (size_t k = 0; k < p->n_cmdline; k++)
			jsonw_string(j, p->cmdline[k]);
		jsonw_end_array(j);
		break;
	}
	jsonw_end_object(j);
	if (s->host) {
		jsonw_name(j, "host");
		jsonw_begin_object(j);
		jsonw_string_field(j, "hostname", s->host->hostname);
		jsonw_string_field(j, "sysname", s->host->sysname);
		jsonw_string_field(j, "kernel_release", s->host->kernel_release);
		jsonw_string_field(j, "machine", s->host->machine);
		jsonw_uint_field(j, "ncpus", s->host->ncpus);
		jsonw_end_object(j);
	}
	jsonw_name(j, "window");
	jsonw_begin_object(j);
	jsonw_uint_field(j, "start_ns", s->start_ns);
	jsonw_uint_field(j, "end_ns", s->end_ns);
	jsonw_uint_field(j, "dur_ns", s->end_ns > s->start_ns ? s->end_ns - s->start_ns : 0);
	jsonw_string_field(j, "reason", s->reason);
	jsonw_uint_field(j, "syscall_min_ns", s->syscall_min_ns);
	jsonw_uint_field(j, "offcpu_min_ns", s->offcpu_min_ns);
	jsonw_uint_field(j, "sample_hz", s->sample_hz);
	jsonw_end_object(j);
	json_interference_header(m, j);
	jsonw_name(j, "markers");
	jsonw_begin_array(j);
	for (size_t i = 0; i < s->n_markers; i++) {
		const Hostprof__Marker *mk = s->markers[i];

		jsonw_begin_object(j);
		jsonw_int_field(j, "at_ns", (int64_t)(mk->ts - s->start_ns));
		jsonw_uint_field(j, "tid", mk->tid);
		jsonw_string_field(j, "name", mk->name);
		jsonw_string_field(j, "detail", mk->detail);
		jsonw_end_object(j);
	}
	jsonw_end_array(j);
}

static void json_preemptions(const struct model *m, const struct wthread *w, struct jsonw *j)
{
	jsonw_name(j, "preemptions");
	jsonw_begin_object(j);
	jsonw_uint_field(j, "count", w->preemptions);
	jsonw_uint_field(j, "time_ns", w->preempt_ns);
	jsonw_uint_field(j, "max_ns", w->preempt_max_ns);
	jsonw_uint_field(j, "tasks", w->n_culprits);
	jsonw_name(j, "by");
	jsonw_begin_array(j);
	for (size_t c = 0; c < w->n_culprits && c < TOP_CULPRITS; c++) {
		const struct culprit *cu = &w->culprits[c];

		jsonw_begin_object(j);
		json_task(j, m->snap, cu);
		jsonw_uint_field(j, "count", cu->count);
		jsonw_uint_field(j, "time_ns", cu->time_ns);
		jsonw_uint_field(j, "max_ns", cu->max_ns);
		jsonw_end_object(j);
	}
	jsonw_end_array(j);
	jsonw_end_object(j);

	jsonw_name(j, "runqueue_latency");
	jsonw_begin_object(j);
	jsonw_uint_field(j, "switch_ins", w->n_rq);
	jsonw_uint_field(j, "after_wakeup", w->rq_wakeup);
	jsonw_uint_field(j, "after_preemption", w->rq_preempt);
	if (w->n_rq) {
		jsonw_uint_field(j, "p50_ns", percentile(w->rq, w->n_rq, 50));
		jsonw_uint_field(j, "p99_ns", percentile(w->rq, w->n_rq, 99));
		jsonw_uint_field(j, "max_ns", w->rq[w->n_rq - 1]);
	}
	jsonw_end_object(j);
}

static void json_cpus(const struct model *m, const struct wthread *w, struct jsonw *j)
{
	const Hostprof__MigrationTable *mg = m->snap->migrations;

	jsonw_name(j, "cpus");
	jsonw_begin_object(j);
	jsonw_name(j, "ran_on");
	jsonw_begin_array(j);
	for (size_t i = 0; i < w->n_cpus; i++)
		jsonw_uint(j, w->cpus[i]);
	jsonw_end_array(j);
	jsonw_bool_field(j, "single_cpu", w->n_cpus == 1);
	jsonw_uint_field(j, "migration_count", w->n_migrations);
	jsonw_name(j, "migrations");
	jsonw_begin_array(j);
	for (size_t k = 0; k < w->n_migrations && k < TOP_MIGRATIONS; k++) {
		size_t i = w->migrations[k];

		jsonw_begin_object(j);
		jsonw_uint_field(j, "at_ns", m->mg_ts[i] - m->snap->start_ns);
		jsonw_uint_field(j, "from", mg->from_cpu[i]);
		jsonw_uint_field(j, "to", mg->to_cpu[i]);
		jsonw_end_object(j);
	}
	jsonw_end_array(j);
	jsonw_end_object(j);
}

static void json_syscalls(const struct model *m, const struct wthread *w, struct jsonw *j)
{
	const Hostprof__Snapshot *s = m->snap;
	const Hostprof__SyscallTable *sc = s->syscalls;
	char nbuf[32];

	jsonw_name(j, "syscalls");
	jsonw_begin_object(j);
	jsonw_uint_field(j, "slow_count", w->n_syscalls);
	jsonw_name(j, "slowest");
	jsonw_begin_array(j);
	for (size_t k = 0; k < w->n_syscalls && k < TOP_SYSCALLS; k++) {
		size_t i = w->syscalls[k];
		const char *e =
			sc->ret[i] < 0 && sc->ret[i] > -4096 ? strerrorname_np((int)-sc->ret[i]) : NULL;

		jsonw_begin_object(j);
		jsonw_string_field(j, "name", syscall_name(s, sc->nr[i], nbuf, sizeof(nbuf)));
		jsonw_uint_field(j, "nr", sc->nr[i]);
		jsonw_uint_field(j, "at_ns", m->sc_ts[i] - s->start_ns);
		jsonw_uint_field(j, "dur_ns", sc->dur_ns[i]);
		jsonw_name(j, "args");
		jsonw_begin_array(j);
		jsonw_uint(j, sc->arg0[i]);
		jsonw_uint(j, sc->arg1[i]);
		jsonw_uint(j, sc->arg2[i]);
		jsonw_end_array(j);
		jsonw_int_field(j, "ret", sc->ret[i]);
		if (e)
			jsonw_string_field(j, "errno", e);
		jsonw_uint_field(j, "cpu", sc->cpu[i]);
		jsonw_end_object(j);
	}
	jsonw_end_array(j);
	jsonw_name(j, "totals");
	jsonw_begin_array(j);
	for (size_t k = 0; k < w->n_hists && k < TOP_HISTOGRAMS; k++) {
		const Hostprof__SyscallHistogram *h = s->syscall_hist[w->hists[k]];

		jsonw_begin_object(j);
		jsonw_string_field(j, "name", syscall_name(s, h->nr, nbuf, sizeof(nbuf)));
		jsonw_uint_field(j, "nr", h->nr);
		jsonw_uint_field(j, "count", h->count);
		jsonw_uint_field(j, "total_ns", h->total_ns);
		jsonw_uint_field(j, "max_ns", h->max_ns);
		jsonw_end_object(j);
	}
	jsonw_end_array(j);
	jsonw_end_object(j);
}

/* Whether stack idx1 is suspect (or, with !suspect, truncated). */
static bool stack_flag(const struct model *m, uint32_t idx1, bool suspect)
{
	const Hostprof__Stack *st = idx1 ? m->snap->stacks[idx1 - 1] : NULL;

	return st && (suspect ? st->suspect : st->truncated);
}

static void json_offcpu(const struct model *m, const struct wthread *w, struct jsonw *j)
{
	const Hostprof__Snapshot *s = m->snap;

	jsonw_name(j, "offcpu");
	jsonw_begin_object(j);
	jsonw_uint_field(j, "count", w->off_count);
	jsonw_uint_field(j, "time_ns", w->off_ns);
	jsonw_name(j, "stacks");
	jsonw_begin_array(j);
	for (size_t g = 0; g < w->n_off && g < TOP_STACKS; g++) {
		const struct offcpu_group *og = &w->off[g];
		char state[16];

		state_name(og->states, state, sizeof(state));
		jsonw_begin_object(j);
		jsonw_uint_field(j, "count", og->count);
		jsonw_uint_field(j, "time_ns", og->time_ns);
		jsonw_uint_field(j, "max_ns", og->max_ns);
		jsonw_string_field(j, "state", state);
		jsonw_name(j, "wakers");
		jsonw_begin_array(j);
		for (size_t k = 0; k < og->n_wakers && k < TOP_WAKERS; k++) {
			const struct waker *wk = &og->wakers[k];

			jsonw_begin_object(j);
			jsonw_string_field(j, "comm", hps_str(s, wk->comm));
			jsonw_uint_field(j, "tid", wk->tid);
			jsonw_uint_field(j, "pid", wk->pid);
			jsonw_uint_field(j, "count", wk->count);
			jsonw_uint_field(j, "time_ns", wk->time_ns);
			jsonw_end_object(j);
		}
		jsonw_end_array(j);
		jsonw_bool_field(j, "suspect",
				 stack_flag(m, og->kstack, true) || stack_flag(m, og->ustack, true));
		jsonw_bool_field(j, "truncated",
				 stack_flag(m, og->kstack, false) || stack_flag(m, og->ustack, false));
		jsonw_name(j, "frames"); /* innermost first: kernel, then user */
		jsonw_begin_array(j);
		json_stack(m, og->kstack, true, j);
		json_stack(m, og->ustack, false, j);
		jsonw_end_array(j);
		jsonw_end_object(j);
	}
	jsonw_end_array(j);
	jsonw_end_object(j);
}

static void json_oncpu(const struct model *m, const struct wthread *w, struct jsonw *j)
{
	jsonw_name(j, "oncpu");
	jsonw_begin_object(j);
	jsonw_uint_field(j, "samples", w->samples);
	jsonw_float_field(j, "percent", pct(w->samples, m->samples));
	jsonw_name(j, "top_functions");
	jsonw_begin_array(j);
	for (size_t k = 0; k < w->n_leaves && k < TOP_FUNCTIONS; k++) {
		const struct leaf_count *l = &w->leaves[k];

		jsonw_begin_object(j);
		jsonw_string_field(j, "function", l->name);
		jsonw_bool_field(j, "kernel", l->kernel);
		jsonw_uint_field(j, "samples", l->samples);
		jsonw_float_field(j, "percent", pct(l->samples, m->samples));
		jsonw_end_object(j);
	}
	jsonw_end_array(j);
	jsonw_end_object(j);
}

static void json_irq_side(const struct model *m, const struct irq_side *side, const char *name,
			  struct jsonw *j)
{
	const Hostprof__Snapshot *s = m->snap;

	jsonw_name(j, name);
	jsonw_begin_object(j);
	jsonw_uint_field(j, "count", side->count);
	jsonw_uint_field(j, "time_ns", side->time_ns);
	jsonw_float_field(j, "percent", pct(side->time_ns, window_ns(s)));
	jsonw_uint_field(j, "groups", side->n);
	jsonw_name(j, "by");
	jsonw_begin_array(j);
	for (size_t k = 0; k < side->n && k < TOP_IRQS; k++) {
		const struct irq_group *g = &side->g[k];

		jsonw_begin_object(j);
		json_irq_id(j, s, g->kind, g->num, g->name);
		jsonw_uint_field(j, "count", g->count);
		jsonw_uint_field(j, "time_ns", g->time_ns);
		jsonw_uint_field(j, "max_ns", g->max_ns);
		jsonw_float_field(j, "percent", pct(g->time_ns, window_ns(s)));
		jsonw_name(j, "cpus");
		jsonw_begin_array(j);
		for (size_t i = 0; i < g->n_cpus; i++)
			jsonw_uint(j, g->cpus[i]);
		jsonw_end_array(j);
		jsonw_name(j, "longest");
		jsonw_begin_object(j);
		jsonw_uint_field(j, "at_ns", m->irq_ts[g->max_row] - s->start_ns);
		jsonw_uint_field(j, "dur_ns", s->irqs->dur_ns[g->max_row]);
		jsonw_uint_field(j, "cpu", s->irqs->cpu[g->max_row]);
		jsonw_end_object(j);
		jsonw_end_object(j);
	}
	jsonw_end_array(j);
	jsonw_end_object(j);
}

static void json_reclaim(const struct model *m, const struct wthread *w, struct jsonw *j)
{
	const Hostprof__Snapshot *s = m->snap;
	const Hostprof__ReclaimTable *t = s->reclaims;

	jsonw_name(j, "reclaim");
	jsonw_begin_object(j);
	jsonw_uint_field(j, "count", w->rcl_count);
	jsonw_uint_field(j, "time_ns", w->rcl_ns);
	jsonw_uint_field(j, "max_ns", w->rcl_max_ns);
	jsonw_name(j, "by");
	jsonw_begin_array(j);
	for (size_t k = 0; k < w->n_rcl && k < TOP_RECLAIMS; k++) {
		const struct reclaim_group *g = &w->rcl[k];
		size_t i = g->max_row;

		jsonw_begin_object(j);
		jsonw_string_field(j, "kind", hps_reclaim_kind_name(g->kind));
		jsonw_int_field(j, "order", g->order);
		jsonw_uint_field(j, "count", g->count);
		jsonw_uint_field(j, "time_ns", g->time_ns);
		jsonw_uint_field(j, "max_ns", g->max_ns);
		if (g->kind != HPS_RECLAIM_COMPACT)
			jsonw_int_field(j, "pages_reclaimed", g->pages);
		jsonw_name(j, "longest");
		jsonw_begin_object(j);
		jsonw_uint_field(j, "at_ns", m->rcl_ts[i] - s->start_ns);
		jsonw_uint_field(j, "dur_ns", t->dur_ns[i]);
		jsonw_uint_field(j, "gfp", t->gfp[i]);
		jsonw_int_field(j, "result", t->result[i]);
		jsonw_uint_field(j, "cpu", t->cpu[i]);
		jsonw_end_object(j);
		jsonw_end_object(j);
	}
	jsonw_end_array(j);
	jsonw_end_object(j);
}

static void json_faults(const struct model *m, const struct wthread *w, struct jsonw *j)
{
	const Hostprof__Snapshot *s = m->snap;
	const struct fault_sum *fs = &w->flt;

	jsonw_name(j, "faults");
	jsonw_begin_object(j);
	jsonw_uint_field(j, "minor", fs->minor);
	jsonw_uint_field(j, "major", fs->major);
	jsonw_float_field(j, "per_second", fault_rate(m, fs));
	jsonw_uint_field(j, "periods", fs->periods);
	jsonw_uint_field(j, "over_ns", fs->over_ns);
	jsonw_uint_field(j, "faults", fs->faults); /* the tracepoint's: 0 where there is none */
	jsonw_uint_field(j, "write", fs->write);
	jsonw_uint_field(j, "exec", fs->exec);
	jsonw_uint_field(j, "prot", fs->prot);
	jsonw_name(j, "peak_major");
	if (fs->peak_major) {
		jsonw_begin_object(j);
		jsonw_uint_field(j, "at_ns", m->flt_ts[fs->peak_row] - s->start_ns);
		jsonw_uint_field(j, "dur_ns", s->faults->dur_ns[fs->peak_row]);
		jsonw_uint_field(j, "major", fs->peak_major);
		jsonw_end_object(j);
	} else {
		jsonw_null(j);
	}
	jsonw_end_object(j);
}

static void json_locks(const struct model *m, const struct wthread *w, struct jsonw *j)
{
	const Hostprof__Snapshot *s = m->snap;
	const Hostprof__LockTable *t = s->locks;

	jsonw_name(j, "locks");
	jsonw_begin_object(j);
	jsonw_uint_field(j, "count", w->lck_count);
	jsonw_uint_field(j, "time_ns", w->lck_ns);
	jsonw_uint_field(j, "max_ns", w->lck_max_ns);
	jsonw_uint_field(j, "locks", w->n_lck);
	jsonw_name(j, "by");
	jsonw_begin_array(j);
	for (size_t k = 0; k < w->n_lck && k < TOP_LOCKS; k++) {
		const struct lock_group *g = &w->lck[k];
		size_t i = g->max_row;

		jsonw_begin_object(j);
		json_lock_id(j, s, g->lock, g->flags, g->name);
		jsonw_uint_field(j, "count", g->count);
		jsonw_uint_field(j, "time_ns", g->time_ns);
		jsonw_uint_field(j, "max_ns", g->max_ns);
		jsonw_uint_field(j, "gave_up", g->failed);
		jsonw_name(j, "longest");
		jsonw_begin_object(j);
		jsonw_uint_field(j, "at_ns", m->lck_ts[i] - s->start_ns);
		jsonw_uint_field(j, "dur_ns", t->dur_ns[i]);
		jsonw_int_field(j, "ret", t->ret[i]);
		json_errno_field(j, t->ret[i]);
		jsonw_uint_field(j, "cpu", t->cpu[i]);
		jsonw_bool_field(j, "truncated", stack_flag(m, t->kstack[i], false));
		jsonw_name(j, "frames"); /* kernel, innermost first */
		jsonw_begin_array(j);
		json_stack(m, t->kstack[i], true, j);
		jsonw_end_array(j);
		jsonw_end_object(j);
		jsonw_end_object(j);
	}
	jsonw_end_array(j);
	jsonw_end_object(j);
}

static void json_interference(const struct model *m, const struct wthread *w, struct jsonw *j)
{
	if (!m->interference)
		return;
	jsonw_name(j, "interference");
	jsonw_begin_object(j);
	if (m->interference & HPS_INTERF_IRQ) {
		jsonw_name(j, "irqs");
		jsonw_begin_object(j);
		json_irq_side(m, &w->irq_ran, "while_running", j);
		json_irq_side(m, &w->irq_waited, "while_waiting", j);
		jsonw_end_object(j);
	}
	if (m->interference & HPS_INTERF_RECLAIM)
		json_reclaim(m, w, j);
	if (m->interference & HPS_INTERF_FAULTS)
		json_faults(m, w, j);
	if (m->interference & HPS_INTERF_LOCKS)
		json_locks(m, w, j);
	jsonw_end_object(j);
}

static void json_capture(const struct model *m, struct jsonw *j)
{
	const Hostprof__CaptureStats *st = m->snap->stats;
	const Hostprof__SymbolStats *sy = m->snap->symbol_stats;

	jsonw_name(j, "capture");
	jsonw_begin_object(j);
	jsonw_uint_field(j, "events", st ? st->events : 0);
	jsonw_uint_field(j, "events_total", st ? st->events_total : 0);
	jsonw_uint_field(j, "drops_total", drops_total(st));
	jsonw_name(j, "drops");
	jsonw_begin_array(j);
	for (size_t i = 0; st && i < st->n_drops; i++) {
		jsonw_begin_object(j);
		jsonw_string_field(j, "cause", st->drops[i]->cause);
		jsonw_uint_field(j, "count", st->drops[i]->count);
		jsonw_end_object(j);
	}
	jsonw_end_array(j);
	jsonw_uint_field(j, "evicted", st ? st->evicted : 0);
	jsonw_uint_field(j, "stack_frames_max", st ? st->stack_frames_max : 0);
	jsonw_name(j, "symbols");
	jsonw_begin_object(j);
	jsonw_uint_field(j, "resolved", sy ? sy->resolved : 0);
	jsonw_uint_field(j, "unresolved", sy ? sy->unresolved : 0);
	jsonw_uint_field(j, "suspect_stacks", sy ? sy->suspect_stacks : 0);
	jsonw_end_object(j);
	jsonw_end_object(j);
}

int snapshot_report_json(const Hostprof__Snapshot *snap, FILE *out)
{
	struct jsonw *j;
	struct model m;
	int r;

	r = analyze(snap, &m);
	if (r < 0)
		return r;
	j = jsonw_new(out);
	if (!j) {
		model_free(&m);
		return -ENOMEM;
	}
	jsonw_begin_object(j);
	json_verdict(&m, j);
	json_header(&m, j);
	jsonw_name(j, "threads");
	jsonw_begin_array(j);
	for (size_t i = 0; i < m.n; i++) {
		const struct wthread *w = &m.t[i];

		if (!w->active)
			continue;
		jsonw_begin_object(j);
		jsonw_uint_field(j, "tid", w->tid);
		jsonw_string_field(j, "comm", w->comm);
		json_preemptions(&m, w, j);
		json_cpus(&m, w, j);
		json_syscalls(&m, w, j);
		json_offcpu(&m, w, j);
		json_oncpu(&m, w, j);
		json_interference(&m, w, j);
		jsonw_end_object(j);
	}
	jsonw_end_array(j);
	jsonw_name(j, "idle_threads"); /* watched, and no event in the window */
	jsonw_begin_array(j);
	for (size_t i = 0; i < m.n; i++) {
		if (m.t[i].active)
			continue;
		jsonw_begin_object(j);
		jsonw_uint_field(j, "tid", m.t[i].tid);
		jsonw_string_field(j, "comm", m.t[i].comm);
		jsonw_end_object(j);
	}
	jsonw_end_array(j);
	json_capture(&m, j);
	jsonw_end_object(j);
	fputc('\n', out);
	jsonw_free(j);
	model_free(&m);
	return finish(out);
}
