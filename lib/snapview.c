// SPDX-License-Identifier: GPL-2.0-only
/* The threads, processes and frames of a snapshot as its readers name them; see snapview.h. */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hps.h"
#include "macro.h"
#include "snapview.h"

/* ---- the thread index ------------------------------------------------------------------ */

/* What one column of a table says of a thread: its tid, pid and name (NULL: none). */
struct tid_column {
	const uint32_t *tid, *pid, *comm; /* comm: indexes into Snapshot.strings */
};

/* A table's rows as the threads they name: one or two columns of n rows. */
struct tid_table {
	size_t n, ncol;
	struct tid_column col[2];
};

#define TID_TABLES 13

/* A table whose rows name one thread each: its tid and pid columns. */
#define ONE_THREAD_A_ROW(tb) \
	((struct tid_table){ .n = (tb)->n_ts_delta, .ncol = 1, .col = { { (tb)->tid, (tb)->pid, NULL } } })

/* Every table that names threads, in the order that decides where a pid or a name comes from. */
static size_t tid_tables(const Hostprof__Snapshot *s, struct tid_table *t)
{
	const Hostprof__SchedSwitchTable *sw = s->switches;
	const Hostprof__WakeupTable *wk = s->wakeups;
	const Hostprof__OffCpuTable *off = s->offcpu;
	const Hostprof__TaskEventTable *te = s->task_events;
	size_t n = 0;

	if (sw)
		t[n++] = (struct tid_table){ .n = sw->n_ts_delta,
					     .ncol = 2,
					     .col = { { sw->prev_tid, sw->prev_pid, sw->prev_comm },
						      { sw->next_tid, sw->next_pid, sw->next_comm } } };
	if (wk)
		t[n++] = (struct tid_table){ .n = wk->n_ts_delta,
					     .ncol = 2,
					     .col = { { wk->tid, wk->pid, NULL },
						      { wk->waker_tid, wk->waker_pid, wk->waker_comm } } };
	if (s->syscalls)
		t[n++] = ONE_THREAD_A_ROW(s->syscalls);
	if (off)
		t[n++] = (struct tid_table){ .n = off->n_ts_delta,
					     .ncol = 2,
					     .col = { { off->tid, off->pid, NULL },
						      { off->waker_tid, off->waker_pid, off->waker_comm } } };
	if (s->migrations)
		t[n++] = ONE_THREAD_A_ROW(s->migrations);
	if (s->samples)
		t[n++] = ONE_THREAD_A_ROW(s->samples);
	if (te) /* TaskEventTable.comm names a fork's child only in a fork: see snapview_init() */
		t[n++] = (struct tid_table){ .n = te->n_ts_delta,
					     .ncol = 2,
					     .col = { { te->tid, te->pid, NULL },
						      { te->child_tid, te->child_pid, NULL } } };
	if (s->reclaims)
		t[n++] = ONE_THREAD_A_ROW(s->reclaims);
	if (s->locks)
		t[n++] = ONE_THREAD_A_ROW(s->locks);
	if (s->faults)
		t[n++] = ONE_THREAD_A_ROW(s->faults);
	if (s->irqs)
		t[n++] = ONE_THREAD_A_ROW(s->irqs);
	if (s->gil) /* the waiter, and its holder (of the same process) */
		t[n++] = (struct tid_table){ .n = s->gil->n_ts_delta,
					     .ncol = 2,
					     .col = { { s->gil->tid, s->gil->pid, NULL },
						      { s->gil->holder_tid, s->gil->pid, NULL } } };
	if (s->python_gc)
		t[n++] = ONE_THREAD_A_ROW(s->python_gc);
	return n;
}

static struct snapview_thread *find(const struct snapview *v, uint32_t tid)
{
	ssize_t i = snapview_index(v, tid);

	return i < 0 ? NULL : &v->threads[i];
}

/* What a row says of tid, where nothing said it before. */
static void learn(struct snapview *v, uint32_t tid, uint32_t pid, const char *comm)
{
	struct snapview_thread *t = find(v, tid);

	if (!t)
		return;
	if (!t->pid)
		t->pid = pid;
	if (!t->comm[0] && comm)
		t->comm = comm;
}

/* The slot of tid in v->slots: the one that holds it, or the empty one where it goes. */
static size_t slot_of(const struct snapview *v, uint32_t tid)
{
	size_t mask = v->n_slots - 1, i = (tid * UINT32_C(2654435761)) & mask;

	while (v->slots[i] && v->threads[v->slots[i] - 1].tid != tid)
		i = (i + 1) & mask;
	return i;
}

/* Slots for every thread in v->threads, at most half of them used. */
static int index_threads(struct snapview *v, size_t n_slots)
{
	free(v->slots);
	v->slots = calloc(n_slots, sizeof(*v->slots));
	if (!v->slots)
		return -ENOMEM;
	v->n_slots = n_slots;
	for (size_t k = 0; k < v->n_threads; k++)
		v->slots[slot_of(v, v->threads[k].tid)] = (uint32_t)k + 1;
	return 0;
}

static int add_tid(struct snapview *v, uint32_t tid)
{
	size_t i;
	int r;

	if (!tid)
		return 0;
	i = slot_of(v, tid);
	if (v->slots[i])
		return 0;
	if (2 * (v->n_threads + 1) > v->n_slots) { /* twice the slots, and room for half of them */
		struct snapview_thread *p = reallocarray(v->threads, v->n_slots, sizeof(*p));

		if (!p)
			return -ENOMEM;
		v->threads = p;
		r = index_threads(v, 2 * v->n_slots);
		if (r < 0)
			return r;
		i = slot_of(v, tid);
	}
	v->threads[v->n_threads] = (struct snapview_thread){ .tid = tid, .comm = "" };
	v->slots[i] = (uint32_t)++v->n_threads;
	return 0;
}

static int cmp_thread(const void *a, const void *b)
{
	return cmp_u32(&((const struct snapview_thread *)a)->tid, &((const struct snapview_thread *)b)->tid);
}

/* Every tid but 0, sorted, each once, with no pid and no name yet. */
static int collect_tids(struct snapview *v, const struct tid_table *t, size_t nt)
{
	const Hostprof__Snapshot *s = v->snap;
	int r;

	v->threads = calloc(32, sizeof(*v->threads)); /* room for half the slots */
	if (!v->threads)
		return -ENOMEM;
	r = index_threads(v, 64);
	for (size_t i = 0; r >= 0 && i < s->n_threads; i++)
		r = add_tid(v, s->threads[i]->tid);
	for (size_t i = 0; r >= 0 && i < s->n_markers; i++)
		r = add_tid(v, s->markers[i]->tid);
	for (size_t i = 0; r >= 0 && i < s->n_syscall_hist; i++)
		r = add_tid(v, s->syscall_hist[i]->tid);
	for (size_t k = 0; k < nt; k++)
		for (size_t c = 0; c < t[k].ncol; c++)
			for (size_t i = 0; r >= 0 && i < t[k].n; i++)
				r = add_tid(v, t[k].col[c].tid[i]);
	if (r < 0)
		return r;
	qsort_safe(v->threads, v->n_threads, sizeof(*v->threads), cmp_thread);
	return index_threads(v, v->n_slots);
}

/* Snapshot.threads: the first row of a tid, or its first with Snapshot.pid. */
static int learn_listed(struct snapview *v)
{
	const Hostprof__Snapshot *s = v->snap;
	_cleanup_free_ bool *listed = NULL;

	listed = calloc(MAX(v->n_threads, (size_t)1), sizeof(*listed));
	if (!listed)
		return -ENOMEM;
	for (size_t i = 0; i < s->n_threads; i++) {
		const Hostprof__Thread *th = s->threads[i];
		ssize_t k = snapview_index(v, th->tid);

		if (k < 0 || (listed[k] && (v->threads[k].pid == s->pid || th->pid != s->pid)))
			continue;
		listed[k] = true;
		v->threads[k].pid = th->pid;
		v->threads[k].comm = th->comm ? th->comm : "";
	}
	return 0;
}

int snapview_init(const Hostprof__Snapshot *snap, struct snapview *ret)
{
	const Hostprof__TaskEventTable *te = snap->task_events;
	struct snapview v = { .snap = snap };
	struct tid_table t[TID_TABLES];
	size_t nt = tid_tables(snap, t);
	int r;

	r = collect_tids(&v, t, nt);
	if (r >= 0)
		r = learn_listed(&v);
	if (r < 0) {
		snapview_free(&v);
		return r;
	}
	/* then the tables, row by row, for what the list left unknown */
	for (size_t k = 0; k < nt; k++)
		for (size_t i = 0; i < t[k].n; i++)
			for (size_t c = 0; c < t[k].ncol; c++) {
				const struct tid_column *col = &t[k].col[c];

				learn(&v, col->tid[i], col->pid[i],
				      col->comm ? hps_str(snap, col->comm[i]) : NULL);
			}
	for (size_t i = 0; te && i < te->n_ts_delta; i++)
		if (te->kind[i] == HPS_TASK_FORK)
			learn(&v, te->child_tid[i], 0, hps_str(snap, te->comm[i]));
	for (size_t i = 0; i < snap->n_syscall_hist; i++)
		learn(&v, snap->syscall_hist[i]->tid, snap->syscall_hist[i]->pid, NULL);
	*ret = v;
	return 0;
}

void snapview_free(struct snapview *v)
{
	if (!v)
		return;
	free(v->threads);
	free(v->slots);
	*v = (struct snapview){};
}

ssize_t snapview_index(const struct snapview *v, uint32_t tid)
{
	size_t i;

	if (!v->n_slots)
		return -ENOENT;
	i = slot_of(v, tid);
	return v->slots[i] ? (ssize_t)v->slots[i] - 1 : -ENOENT;
}

const char *snapview_comm(const struct snapview *v, uint32_t tid)
{
	const struct snapview_thread *t = find(v, tid);

	return t ? t->comm : "";
}

const Hostprof__Process *snapview_process(const struct snapview *v, uint32_t pid)
{
	for (size_t i = 0; i < v->snap->n_processes; i++)
		if (v->snap->processes[i]->pid == pid)
			return v->snap->processes[i];
	return NULL;
}

/* ---- frame names ----------------------------------------------------------------------- */

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');

	return s ? s + 1 : path;
}

int python_frame_text(const Hostprof__Frame *f, char *buf, size_t len)
{
	const char *file = f->file && f->file[0] ? base_name(f->file) : "?";
	const char *fn = f->function && f->function[0] ? f->function : "?";

	if (f->line)
		return snprintf(buf, len, "%s (%s:%" PRIu32 ")", fn, file, f->line);
	return snprintf(buf, len, "%s (%s)", fn, file);
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

		if (f->python) {
			/* a Python frame: "train_step (train.py:42)" */
			const char *pf = f->file && f->file[0] ? base_name(f->file) : "?";

			r = f->line ? asprintf(&s, "%s (%s:%" PRIu32 ")", f->function ? f->function : "?", pf, f->line)
				    : asprintf(&s, "%s (%s)", f->function ? f->function : "?", pf);
			if (r < 0) {
				frame_names_free(&fn);
				return -ENOMEM;
			}
			fn.owned[fn.n_owned++] = s;
			fn.name[i] = s;
			continue;
		}
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

const char *snapview_inlined_name(const Hostprof__InlinedFrame *in)
{
	return in->function && in->function[0] ? in->function : "[inlined]";
}

const char *snapview_source(const char *file, uint32_t line, char *buf, size_t len)
{
	const char *p;
	int slashes = 0;

	if (!file || !file[0] || !len)
		return NULL;
	for (p = file + strlen(file); p > file; p--)
		if (p[-1] == '/' && ++slashes == 2)
			break;
	if (line)
		snprintf(buf, len, "%s:%" PRIu32, p, line);
	else
		snprintf(buf, len, "%s", p);
	return buf;
}
