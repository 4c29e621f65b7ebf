// SPDX-License-Identifier: GPL-2.0-only
/*
 * One read of every thread, as the snapshot's PythonState (proto/snapshot.proto): threads in
 * the interpreter's order, each frame an index into one table of (function, file, line)
 * shared by all threads. Every part is malloc'ed on its own, so that protobuf-c's
 * free_unpacked frees the whole.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "macro.h"

void python_state_free(Hostprof__PythonState *st)
{
	if (st)
		hostprof__python_state__free_unpacked(st, NULL);
}

static char *dup_or_null(const char *s, int *err)
{
	char *d = strdup(s ? s : "");

	if (!d)
		*err = -ENOMEM;
	return d;
}

/* (code, line) -> index into st->frames */
struct frame_index {
	struct {
		const struct py_code *code;
		uint32_t line;
		uint32_t idx1; /* index + 1; 0: empty */
	} * slots;
	size_t cap;
};

static size_t frame_hash(const struct py_code *code, uint32_t line, size_t cap)
{
	uint64_t h = (uint64_t)(uintptr_t)code * 0x9e3779b97f4a7c15ull ^ line * 0xff51afd7ed558ccdull;

	return (h ^ (h >> 29)) & (cap - 1);
}

static int frame_intern(struct frame_index *fx, Hostprof__PythonState *st, size_t *cap_frames,
			const struct py_frame *f, uint32_t *ret)
{
	Hostprof__PythonFrame *pf;
	size_t i;
	int err = 0;

	if ((st->n_frames + 1) * 2 > fx->cap) {
		size_t cap = fx->cap ? fx->cap * 2 : 256;
		__typeof__(fx->slots) slots = calloc(cap, sizeof(*slots));

		if (!slots)
			return -ENOMEM;
		for (size_t k = 0; k < fx->cap; k++) {
			if (!fx->slots[k].idx1)
				continue;
			for (i = frame_hash(fx->slots[k].code, fx->slots[k].line, cap); slots[i].idx1;
			     i = (i + 1) & (cap - 1))
				;
			slots[i] = fx->slots[k];
		}
		free(fx->slots);
		fx->slots = slots;
		fx->cap = cap;
	}
	for (i = frame_hash(f->code, f->line, fx->cap); fx->slots[i].idx1; i = (i + 1) & (fx->cap - 1))
		if (fx->slots[i].code == f->code && fx->slots[i].line == f->line) {
			*ret = fx->slots[i].idx1 - 1;
			return 0;
		}
	if (st->n_frames == *cap_frames) {
		size_t n = *cap_frames ? *cap_frames * 2 : 64;
		Hostprof__PythonFrame **v = realloc(st->frames, n * sizeof(*v));

		if (!v)
			return -ENOMEM;
		st->frames = v;
		*cap_frames = n;
	}
	pf = malloc(sizeof(*pf));
	if (!pf)
		return -ENOMEM;
	hostprof__python_frame__init(pf);
	st->frames[st->n_frames] = pf;
	pf->function = dup_or_null(f->code->function, &err);
	pf->file = dup_or_null(f->code->file, &err);
	pf->has_line = pf->has_first_line = true;
	pf->line = f->line;
	pf->first_line = f->code->first_line;
	st->n_frames++;
	if (err)
		return err;
	fx->slots[i].code = f->code;
	fx->slots[i].line = f->line;
	fx->slots[i].idx1 = st->n_frames;
	*ret = st->n_frames - 1;
	return 0;
}

static int add_thread(Hostprof__PythonState *st, struct frame_index *fx, size_t *cap_frames,
		      const struct py_thread *th)
{
	Hostprof__PythonThread *pt = malloc(sizeof(*pt));
	int r, err = 0;

	if (!pt)
		return -ENOMEM;
	hostprof__python_thread__init(pt);
	st->threads[st->n_threads++] = pt;
	pt->has_tid = pt->has_thread_id = pt->has_interpreter = pt->has_gil = pt->has_truncated = true;
	pt->tid = th->tid;
	pt->thread_id = th->thread_id;
	pt->interpreter = th->interp_id;
	pt->gil = th->gil;
	pt->truncated = th->truncated;
	pt->error = dup_or_null(th->error, &err);
	if (err)
		return err;
	if (!th->n_frames)
		return 0;
	pt->frames = malloc(th->n_frames * sizeof(*pt->frames));
	pt->eval_entry = malloc(th->n_frames * sizeof(*pt->eval_entry));
	if (!pt->frames || !pt->eval_entry)
		return -ENOMEM;
	for (size_t i = 0; i < th->n_frames; i++) {
		r = frame_intern(fx, st, cap_frames, &th->frames[i], &pt->frames[i]);
		if (r < 0)
			return r;
		pt->eval_entry[i] = th->frames[i].eval_entry;
		pt->n_frames = pt->n_eval_entry = i + 1;
	}
	return 0;
}

static int fill(Hostprof__PythonState *st, const struct py_proc *p, const struct py_dump *d)
{
	struct frame_index fx = {};
	size_t cap_frames = 0, partial = 0;
	char reason[2 * PY_REASON_MAX];
	int r = 0, err = 0;

	st->has_status = true;
	reason[0] = 0;
	if (p->kind != PY_KIND_CPYTHON) {
		st->status = PY_STATUS_UNREADABLE;
		snprintf(reason, sizeof(reason), "python stack unreadable: %s", p->why);
	} else {
		st->has_ts = st->has_duration_ns = true;
		st->ts = d->ts_ns;
		st->duration_ns = d->duration_ns;
		st->threads = d->n_threads ? calloc(d->n_threads, sizeof(*st->threads)) : NULL;
		if (d->n_threads && !st->threads)
			return -ENOMEM;
		for (size_t i = 0; i < d->n_threads && r >= 0; i++) {
			r = add_thread(st, &fx, &cap_frames, &d->threads[i]);
			partial += !!d->threads[i].error;
		}
		free(fx.slots);
		if (r < 0)
			return r;
		if (d->error && !d->n_threads) {
			st->status = PY_STATUS_UNREADABLE;
			snprintf(reason, sizeof(reason), "python stack unreadable: %s", d->error);
		} else if (d->error || partial || d->threads_truncated) {
			st->status = PY_STATUS_PARTIAL;
			snprintf(reason, sizeof(reason), "%s%s%zu of %zu thread stacks stop early%s",
				 d->error ? d->error : "", d->error ? "; " : "", partial, d->n_threads,
				 d->threads_truncated ? "; more threads than were read" : "");
		} else {
			st->status = PY_STATUS_OK;
		}
	}
	st->reason = dup_or_null(reason, &err);
	st->version = dup_or_null(p->target.version, &err);
	st->binary = dup_or_null(p->target.binary, &err);
	st->offsets = dup_or_null(p->target.offsets_note, &err);
	st->has_stacks_unreadable = st->has_reads = st->has_read_failures = st->has_code_stale = true;
	st->stacks_unreadable = partial;
	st->reads = p->counts.reads;
	st->read_failures = p->counts.read_failures;
	st->code_stale = p->counts.code_stale;
	return err;
}

int py_proc_read_state(struct py_proc *p, const struct py_limits *lim, Hostprof__PythonState **ret)
{
	struct py_limits l = lim ? *lim :
				   (struct py_limits){ PY_BUDGET_NS_DEFAULT, PY_THREADS_MAX_DEFAULT,
						       PY_FRAMES_MAX_DEFAULT };
	struct py_dump d = {};
	Hostprof__PythonState *st;
	int r;

	*ret = NULL;
	if (p->kind == PY_KIND_NOT_PYTHON)
		return 0;
	if (p->kind == PY_KIND_CPYTHON) {
		py_mem_begin(&p->mem, l.budget_ns);
		r = py_walk(&p->cache, &p->mem, &p->target, &l, &d);
		if (r < 0) {
			py_dump_done(&d);
			return r;
		}
	}
	st = malloc(sizeof(*st));
	if (!st) {
		py_dump_done(&d);
		return -ENOMEM;
	}
	hostprof__python_state__init(st);
	r = fill(st, p, &d);
	py_dump_done(&d);
	if (r < 0) {
		python_state_free(st);
		return r;
	}
	*ret = st;
	return 0;
}
