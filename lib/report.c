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
 *
 * The worst stall: every interval in which a watched thread could not run is a
 * candidate. A thread that wanted the CPU and did not get it (preempted, or woken and
 * left waiting on a runqueue) or that was blocked uninterruptibly (D) was stalled by
 * something else; one sleeping interruptibly (S) is most often waiting for work. So the
 * longest involuntary interval is the worst stall, and the longest blocked interval only
 * when there is no involuntary one. Ties go to the earlier interval.
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

#define TOP_CULPRITS 10
#define TOP_SYSCALLS 5
#define TOP_HISTOGRAMS 10
#define TOP_STACKS 5
#define TOP_WAKERS 5
#define TOP_FUNCTIONS 10
#define TOP_MIGRATIONS 10
#define TOP_IDLE_THREADS 20

#define STACK_INDENT 32 /* text: frames under the off-CPU columns */

#define STATE_D 0x2 /* TASK_UNINTERRUPTIBLE in the sched_switch encoding */

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

/* ---- frame and thread names ------------------------------------------------------------ */

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');

	return s ? s + 1 : path;
}

int frame_names_init(const Hostprof__Snapshot *snap, struct frame_names *ret)
{
	struct frame_names fn = {};

	fn.name = calloc(MAX(snap->n_frames, (size_t)1), sizeof(*fn.name));
	fn.owned = calloc(MAX(snap->n_frames, (size_t)1), sizeof(*fn.owned));
	if (!fn.name || !fn.owned) {
		frame_names_free(&fn);
		return -ENOMEM;
	}
	fn.n = snap->n_frames;
	for (size_t i = 0; i < snap->n_frames; i++) {
		const Hostprof__Frame *f = snap->frames[i];
		const char *file = NULL;
		char *s;
		int r;

		if (f->function && f->function[0]) {
			fn.name[i] = f->function;
			continue;
		}
		if (f->mapping && f->mapping <= snap->n_mappings && snap->mappings[f->mapping - 1]->file)
			file = base_name(snap->mappings[f->mapping - 1]->file);
		if (file && file[0])
			r = asprintf(&s, "%s+0x%" PRIx64, file, f->module_offset);
		else
			r = asprintf(&s, "[unknown 0x%" PRIx64 "]", f->address);
		if (r < 0) {
			frame_names_free(&fn);
			return -ENOMEM;
		}
		fn.owned[fn.n_owned++] = s;
		fn.name[i] = s;
	}
	*ret = fn;
	return 0;
}

void frame_names_free(struct frame_names *fn)
{
	if (!fn)
		return;
	for (size_t i = 0; i < fn->n_owned; i++)
		free(fn->owned[i]);
	free(fn->owned);
	free(fn->name);
	*fn = (struct frame_names){};
}

struct thread_entry {
	uint32_t tid;
	bool own; /* a thread of snap->pid */
	size_t order;
	const char *comm;
};

static int cmp_thread_entry(const void *a, const void *b)
{
	const struct thread_entry *x = a, *y = b;

	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	if (x->own != y->own)
		return x->own ? -1 : 1;
	return x->order < y->order ? -1 : x->order > y->order;
}

int thread_names_init(const Hostprof__Snapshot *snap, struct thread_names *ret)
{
	_cleanup_free_ struct thread_entry *e = NULL;
	struct thread_names tn = {};

	e = calloc(MAX(snap->n_threads, (size_t)1), sizeof(*e));
	tn.v = calloc(MAX(snap->n_threads, (size_t)1), sizeof(*tn.v));
	if (!e || !tn.v) {
		free(tn.v);
		return -ENOMEM;
	}
	for (size_t i = 0; i < snap->n_threads; i++) {
		const Hostprof__Thread *th = snap->threads[i];

		e[i] = (struct thread_entry){ .tid = th->tid,
					      .own = th->pid == snap->pid,
					      .order = i,
					      .comm = th->comm ? th->comm : "" };
	}
	qsort_safe(e, snap->n_threads, sizeof(*e), cmp_thread_entry);
	for (size_t i = 0; i < snap->n_threads; i++)
		if (!tn.n || tn.v[tn.n - 1].tid != e[i].tid)
			tn.v[tn.n++] = (struct thread_name){ .tid = e[i].tid, .comm = e[i].comm };
	*ret = tn;
	return 0;
}

const char *thread_names_get(const struct thread_names *tn, uint32_t tid)
{
	size_t lo = 0, hi = tn->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (tn->v[mid].tid == tid)
			return tn->v[mid].comm;
		if (tn->v[mid].tid < tid)
			lo = mid + 1;
		else
			hi = mid;
	}
	return "";
}

void thread_names_free(struct thread_names *tn)
{
	if (!tn)
		return;
	free(tn->v);
	*tn = (struct thread_names){};
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
			   const struct thread_names *tn, const struct fold_key *k)
{
	const char *comm = thread_names_get(tn, k->tid);
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
	struct thread_names tn = {};
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
	r = thread_names_init(snap, &tn);
	if (r < 0)
		goto out;
	out.stacks = calloc(MAX(nk, (size_t)1), sizeof(*out.stacks));
	if (!out.stacks) {
		r = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < nk; i++) {
		out.stacks[i].frames = render_folded(snap, &fn, &tn, &keys[i]);
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
	thread_names_free(&tn);
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

	bool active; /* any event at all */
};

enum stall_kind {
	STALL_NONE,
	STALL_PREEMPTED, /* row: the switch-out */
	STALL_RUNQUEUE, /* row: the switch-in, after a wakeup */
	STALL_BLOCKED, /* row: the off-CPU interval */
};

struct stall {
	enum stall_kind kind;
	bool involuntary, to_end; /* to_end: still waiting when the window closed */
	size_t thread, row;
	uint64_t ts, dur;
};

struct model {
	const Hostprof__Snapshot *snap;
	struct frame_names fn;
	struct wthread *t;
	size_t n;
	uint64_t *sw_ts, *mg_ts, *sc_ts, *off_ts;
	uint64_t samples; /* of the process */
	struct stall worst;
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
	}
	free(m->t);
	free(m->sw_ts);
	free(m->mg_ts);
	free(m->sc_ts);
	free(m->off_ts);
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

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Collects the tids of snap->pid from every table, then names them. */
static int model_threads(struct model *m)
{
	const Hostprof__Snapshot *s = m->snap;
	const Hostprof__SchedSwitchTable *sw = s->switches;
	_cleanup_free_ uint32_t *tids = NULL;
	struct thread_names tn = {};
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
#undef ADD_TID

	qsort_safe(tids, n, sizeof(*tids), cmp_u32);
	m->t = calloc(MAX(n, (size_t)1), sizeof(*m->t));
	if (!m->t)
		return -ENOMEM;
	r = thread_names_init(s, &tn);
	if (r < 0)
		return r;
	for (size_t i = 0; i < n; i++)
		if (!m->n || m->t[m->n - 1].tid != tids[i]) {
			m->t[m->n].tid = tids[i];
			m->t[m->n].comm = thread_names_get(&tn, tids[i]);
			m->n++;
		}
	thread_names_free(&tn);
	/* a thread missing from Snapshot.threads: the name its switches carry */
	for (size_t i = 0; sw && i < sw->n_ts_delta; i++) {
		struct wthread *w = find_thread(m, sw->prev_pid[i], sw->prev_tid[i]);

		if (w && !w->comm[0])
			w->comm = hps_str(s, sw->prev_comm[i]);
		w = find_thread(m, sw->next_pid[i], sw->next_tid[i]);
		if (w && !w->comm[0])
			w->comm = hps_str(s, sw->next_comm[i]);
	}
	return 0;
}

static int add_cpu(struct wthread *w, uint32_t cpu)
{
	size_t i;
	int r;

	for (i = 0; i < w->n_cpus && w->cpus[i] < cpu; i++)
		;
	if (i < w->n_cpus && w->cpus[i] == cpu)
		return 0;
	r = reserve_one(&w->cpus, w->n_cpus, &w->cap_cpus, sizeof(*w->cpus));
	if (r < 0)
		return r;
	memmove(w->cpus + i + 1, w->cpus + i, (w->n_cpus - i) * sizeof(*w->cpus));
	w->cpus[i] = cpu;
	w->n_cpus++;
	return 0;
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

static void preemption_end(struct model *m, struct wthread *w, uint64_t ts, bool to_end)
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

			w->active = true;
			r = add_cpu(w, sw->cpu[i]);
			if (r < 0)
				return r;
			if (w->preempted)
				preemption_end(m, w, ts, false);
			if (kind && sw->n_next_wait_ns) {
				uint64_t wait = sw->next_wait_ns[i];

				r = reserve_one(&w->rq, w->n_rq, &w->cap_rq, sizeof(*w->rq));
				if (r < 0)
					return r;
				w->rq[w->n_rq++] = wait;
				if (kind == 1) {
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
			if (HP_STATE_RUNNABLE(sw->prev_state[i])) {
				r = preemption_begin(w, sw, i, ts);
				if (r < 0)
					return r;
			}
		}
	}
	for (size_t i = 0; i < m->n; i++) {
		struct wthread *w = &m->t[i];

		if (w->preempted)
			preemption_end(m, w, MAX(s->end_ns, w->preempted_at), true);
		qsort_safe(w->culprits, w->n_culprits, sizeof(*w->culprits), cmp_culprit);
		qsort_safe(w->rq, w->n_rq, sizeof(*w->rq), cmp_u64);
	}
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
		qsort_r_safe(m->t[i].syscalls, m->t[i].n_syscalls, sizeof(size_t), cmp_syscall_row, (void *)sc);
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
				    .involuntary = (t->state[i] & STATE_D) != 0,
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

static int analyze(const Hostprof__Snapshot *snap, struct model *ret)
{
	struct model m = { .snap = snap };
	int r;

	r = hps_validate(snap);
	if (r < 0)
		return r;
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

/* A sched_switch state as ps and the tracepoint print it: "R", "R+", "S", "D", "SD"... */
static void state_name(uint32_t state, char *buf, size_t len)
{
	static const char letters[] = "SDTtXZPI";
	size_t n = 0;

	if (state == 0 || state == 0x100) {
		snprintf(buf, len, "%s", state ? "R+" : "R");
		return;
	}
	for (size_t b = 0; b < sizeof(letters) - 1 && n + 1 < len; b++)
		if (state & (1u << b))
			buf[n++] = letters[b];
	if (state & ~0x1ffu && n + 1 < len)
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
	case STALL_NONE:
		snprintf(buf, len, "none");
		break;
	}
}

static void verdict_line(const struct model *m, char *buf, size_t len)
{
	char cause[400];

	if (m->worst.kind == STALL_NONE) {
		snprintf(
			buf, len,
			"worst stall: none: no watched thread was preempted, waited on a runqueue or blocked");
		return;
	}
	stall_cause(m, cause, sizeof(cause));
	snprintf(buf, len, "worst stall: %s (tid %" PRIu32 ") %s", m->t[m->worst.thread].comm,
		 m->t[m->worst.thread].tid, cause);
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

/* The frames of stack idx1, innermost first, one per line. */
static void text_stack(const struct model *m, uint32_t idx1, bool kernel, FILE *f)
{
	const Hostprof__Stack *st;

	if (!idx1)
		return;
	st = m->snap->stacks[idx1 - 1];
	for (size_t j = 0; j < st->n_frames; j++)
		fprintf(f, "%*s%s%s\n", STACK_INDENT, "", m->fn.name[st->frames[j]], kernel ? " [k]" : "");
	if (st->truncated)
		fprintf(f, "%*s... (truncated)\n", STACK_INDENT, "");
	if (st->suspect)
		fprintf(f, "%*s(suspect: a frame lies outside any executable mapping)\n", STACK_INDENT, "");
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
		text_stack(m, og->kstack, true, f);
		text_stack(m, og->ustack, false, f);
	}
	if (w->n_off > TOP_STACKS)
		fprintf(f, "    ... %zu more stacks\n", w->n_off - TOP_STACKS);
}

static double pct(uint64_t part, uint64_t whole)
{
	return whole ? 100.0 * (double)part / (double)whole : 0.0;
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

static void json_verdict(const struct model *m, struct jsonw *j)
{
	static const char *const kinds[] = { "none", "preempted", "runqueue", "blocked" };
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
	jsonw_int_field(j, "at_ns", (int64_t)(st->ts - s->start_ns)); /* a wait can start before the window */
	jsonw_uint_field(j, "dur_ns", st->dur);
	jsonw_bool_field(j, "involuntary", st->involuntary);
	if (st->kind == STALL_PREEMPTED || st->kind == STALL_RUNQUEUE) {
		c = st->kind == STALL_PREEMPTED ? next_task(s->switches, st->row) :
						  prev_task(s->switches, st->row);
		jsonw_uint_field(j, "cpu", s->switches->cpu[st->row]);
		if (st->kind == STALL_PREEMPTED)
			jsonw_bool_field(j, "until_window_end", st->to_end);
		jsonw_name(j, st->kind == STALL_PREEMPTED ? "preempted_by" : "cpu_ran");
		jsonw_begin_object(j);
		json_task(j, s, &c);
		jsonw_end_object(j);
	} else {
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
	}
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
