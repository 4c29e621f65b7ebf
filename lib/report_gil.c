// SPDX-License-Identifier: GPL-2.0-only
/*
 * The report's GIL section (report_gil.h). Per waiting thread, by time waited: its waits
 * (GilTable.totals counts every one; the table's rows are those at least gil_min_ns) and
 * their share of the window, then who held the GIL meanwhile (the holder as the wait
 * ended, the one that dropped it to the waiter) and what each holder ran: the innermost
 * frame of its Python stack, as read for that wait. A stack read by the daemon after the
 * wait says so, with how much later: it is what the holder ran then, not at the wait.
 */
#include <inttypes.h>
#include <string.h>

#include "escape.h"
#include "hps.h"
#include "macro.h"
#include "report_gil.h"

static const char *status_name(uint32_t status)
{
	switch (status) {
	case 1:
		return "watched";
	case 2:
		return "free-threaded";
	case 3:
		return "not watched";
	}
	return "unknown";
}

static struct gil_waiter *waiter_of(struct gil_summary *s, uint32_t tid, size_t *cap)
{
	struct gil_waiter *v;

	for (size_t i = 0; i < s->n; i++)
		if (s->w[i].tid == tid)
			return &s->w[i];
	if (s->n == *cap) {
		v = realloc(s->w, (*cap ? *cap * 2 : 8) * sizeof(*v));
		if (!v)
			return NULL;
		s->w = v;
		*cap = *cap ? *cap * 2 : 8;
	}
	s->w[s->n] = (struct gil_waiter){ .tid = tid };
	return &s->w[s->n++];
}

static struct gil_holder *holder_of(struct gil_waiter *w, uint32_t tid)
{
	struct gil_holder *v;

	for (size_t i = 0; i < w->n_holders; i++)
		if (w->holders[i].tid == tid)
			return &w->holders[i];
	v = realloc(w->holders, (w->n_holders + 1) * sizeof(*v));
	if (!v)
		return NULL;
	w->holders = v;
	v[w->n_holders] = (struct gil_holder){ .tid = tid };
	return &v[w->n_holders++];
}

static bool same_frame(const Hostprof__PythonFrame *a, const Hostprof__PythonFrame *b)
{
	if (!a || !b)
		return a == b;
	return a->line == b->line && !strcmp(a->function ? a->function : "", b->function ? b->function : "") &&
	       !strcmp(a->file ? a->file : "", b->file ? b->file : "");
}

static int function_add(struct gil_holder *h, const Hostprof__PythonFrame *fr, const Hostprof__GilStack *st,
			uint64_t ns)
{
	struct gil_function *v;

	for (size_t i = 0; i < h->n_fns; i++) {
		if (same_frame(h->fns[i].frame, fr)) {
			h->fns[i].ns += ns;
			h->fns[i].count++;
			return 0;
		}
	}
	v = realloc(h->fns, (h->n_fns + 1) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	h->fns = v;
	v[h->n_fns++] = (struct gil_function){ .frame = fr, .stack = fr ? st : NULL, .ns = ns, .count = 1 };
	return 0;
}

static const Hostprof__PythonFrame *holder_frame(const Hostprof__GilTable *t, size_t row, struct gil_summary *s,
						const Hostprof__GilStack **ret_stack)
{
	const Hostprof__GilStack *st;
	uint32_t k;

	*ret_stack = NULL;
	if (row >= t->n_holder_stack || !t->holder_stack[row] || t->holder_stack[row] > t->n_stacks)
		return NULL;
	st = t->stacks[t->holder_stack[row] - 1];
	*ret_stack = st;
	if (st->when == 1) {
		s->drain_stacks++;
		s->max_lag_ns = MAX(s->max_lag_ns, st->lag_ns);
	} else {
		s->kernel_stacks++;
	}
	if (!st->n_frames)
		return NULL;
	k = st->frames[0];
	return k < t->n_frames ? t->frames[k] : NULL;
}

static int cmp_waiter(const void *a, const void *b)
{
	const struct gil_waiter *x = a, *y = b;

	return x->total_ns < y->total_ns ? 1 : x->total_ns > y->total_ns ? -1 : (x->tid > y->tid) - (x->tid < y->tid);
}

static int cmp_holder(const void *a, const void *b)
{
	const struct gil_holder *x = a, *y = b;

	return x->ns < y->ns ? 1 : x->ns > y->ns ? -1 : (x->tid > y->tid) - (x->tid < y->tid);
}

static int cmp_function(const void *a, const void *b)
{
	const struct gil_function *x = a, *y = b;

	/* the unread ones last among equals */
	return x->ns < y->ns ? 1 : x->ns > y->ns ? -1 : (!x->frame) - (!y->frame);
}

int gil_summary_build(const Hostprof__Snapshot *snap, struct gil_summary *ret)
{
	const Hostprof__GilTable *t = snap->gil;
	size_t cap = 0;

	*ret = (struct gil_summary){ .window_ns = snap->end_ns > snap->start_ns ? snap->end_ns - snap->start_ns : 0 };
	if (!t)
		return 0;
	for (size_t i = 0; i < t->n_totals; i++) {
		const Hostprof__GilTotal *g = t->totals[i];
		struct gil_waiter *w = waiter_of(ret, g->tid, &cap);

		if (!w)
			goto oom;
		w->count += g->count;
		w->total_ns += g->total_ns;
		w->max_ns = MAX(w->max_ns, g->max_ns);
	}
	for (size_t i = 0; i < t->n_ts_delta; i++) {
		uint32_t tid = i < t->n_tid ? t->tid[i] : 0;
		uint64_t dur = i < t->n_dur_ns ? t->dur_ns[i] : 0;
		struct gil_waiter *w = waiter_of(ret, tid, &cap);
		const Hostprof__PythonFrame *fr;
		const Hostprof__GilStack *st;
		struct gil_holder *h;

		if (!w)
			goto oom;
		w->recorded++;
		w->recorded_ns += dur;
		h = holder_of(w, i < t->n_holder_tid ? t->holder_tid[i] : 0);
		fr = holder_frame(t, i, ret, &st);
		if (!h || function_add(h, fr, st, dur) < 0)
			goto oom;
		h->ns += dur;
		h->count++;
		h->max_ns = MAX(h->max_ns, dur);
	}
	for (size_t i = 0; i < ret->n; i++) {
		struct gil_waiter *w = &ret->w[i];

		/* a snapshot without totals (or a thread gone before they were read): the rows */
		if (w->recorded_ns > w->total_ns) {
			w->total_ns = w->recorded_ns;
			w->count = MAX(w->count, w->recorded);
		}
		qsort_safe(w->holders, w->n_holders, sizeof(*w->holders), cmp_holder);
		for (size_t k = 0; k < w->n_holders; k++)
			qsort_safe(w->holders[k].fns, w->holders[k].n_fns, sizeof(*w->holders[k].fns), cmp_function);
	}
	qsort_safe(ret->w, ret->n, sizeof(*ret->w), cmp_waiter);
	return 0;
oom:
	gil_summary_done(ret);
	return -ENOMEM;
}

void gil_summary_done(struct gil_summary *s)
{
	for (size_t i = 0; i < s->n; i++) {
		for (size_t k = 0; k < s->w[i].n_holders; k++)
			free(s->w[i].holders[k].fns);
		free(s->w[i].holders);
	}
	free(s->w);
	*s = (struct gil_summary){};
}

static void put_escaped(FILE *f, const char *s)
{
	char buf[ESCAPE_SIZE(256)];
	char part[257];
	size_t n = s ? strlen(s) : 0;

	for (size_t i = 0; i < n; i += 256) {
		size_t k = n - i < 256 ? n - i : 256;

		memcpy(part, s + i, k);
		part[k] = 0;
		fputs(escape_control(part, buf, sizeof(buf)), f);
	}
}

static void put_thread(FILE *f, const Hostprof__Snapshot *snap, uint32_t tid)
{
	const char *comm = hps_thread_comm(snap, tid);

	if (!tid) {
		fputs("a thread not known", f);
		return;
	}
	if (comm) {
		put_escaped(f, comm);
		fprintf(f, " (tid %" PRIu32 ")", tid);
	} else {
		fprintf(f, "tid %" PRIu32, tid);
	}
}

void report_gil_frame_text(FILE *f, const Hostprof__PythonFrame *fr)
{
	if (!fr) {
		fputs("(its stack not read)", f);
		return;
	}
	put_escaped(f, fr->function && fr->function[0] ? fr->function : "?");
	fputs(" (", f);
	put_escaped(f, fr->file && fr->file[0] ? fr->file : "?");
	if (fr->line)
		fprintf(f, ":%" PRIu32 ")", fr->line);
	else
		fputs(":?)", f);
}

static double pct(uint64_t part, uint64_t whole)
{
	return whole ? 100.0 * part / whole : 0.0;
}

void report_gil_text(const Hostprof__Snapshot *snap, FILE *f)
{
	const Hostprof__GilTable *t = snap->gil;
	struct gil_summary s;

	if (!t)
		return;
	fputs("\nGIL waits", f);
	if (t->version && t->version[0])
		fprintf(f, " (CPython %s)", t->version);
	fputc('\n', f);
	if (t->status != 1) {
		fprintf(f, "  %s", status_name(t->status));
		if (t->reason && t->reason[0]) {
			fputs(": ", f);
			put_escaped(f, t->reason);
		}
		fputc('\n', f);
		return;
	}
	if (gil_summary_build(snap, &s) < 0) {
		fputs("  (out of memory)\n", f);
		return;
	}
	fprintf(f, "  recorded          waits of %.3f ms and longer (gil_min_us); every wait counted\n",
		t->gil_min_ns / 1e6);
	if (t->watched_since > snap->start_ns)
		fprintf(f, "  watched from      +%.3f s (its GIL found after the window began)\n",
			(t->watched_since - snap->start_ns) / 1e9);
	if (!s.n)
		fputs("  no thread waited for the GIL\n", f);
	for (size_t i = 0; i < s.n && i < REPORT_GIL_THREADS; i++) {
		const struct gil_waiter *w = &s.w[i];

		fputs("\n  ", f);
		put_thread(f, snap, w->tid);
		fprintf(f, ": waited %.1f ms for the GIL of %.3f s (%.1f%%), %" PRIu64 " waits, longest %.1f ms\n",
			w->total_ns / 1e6, s.window_ns / 1e9, pct(w->total_ns, s.window_ns), w->count, w->max_ns / 1e6);
		if (w->recorded < w->count)
			fprintf(f, "    recorded %" PRIu64 " of them, %.1f ms\n", w->recorded, w->recorded_ns / 1e6);
		for (size_t k = 0; k < w->n_holders && k < REPORT_GIL_HOLDERS; k++) {
			const struct gil_holder *h = &w->holders[k];

			fputs("    held by ", f);
			put_thread(f, snap, h->tid);
			fprintf(f, ": %.1f ms (%.1f%%), %" PRIu64 " waits, longest %.1f ms\n", h->ns / 1e6,
				pct(h->ns, w->recorded_ns), h->count, h->max_ns / 1e6);
			for (size_t m = 0; m < h->n_fns && m < REPORT_GIL_FUNCTIONS; m++) {
				fputs("      ", f);
				report_gil_frame_text(f, h->fns[m].frame);
				fprintf(f, ": %.1f ms, %" PRIu64 " waits\n", h->fns[m].ns / 1e6, h->fns[m].count);
			}
		}
	}
	if (s.n > REPORT_GIL_THREADS)
		fprintf(f, "\n  ... %zu more threads\n", s.n - REPORT_GIL_THREADS);
	if (s.drain_stacks)
		fprintf(f,
			"\n  (the holders' stacks were read by the daemon after each wait, up to %.1f ms later:"
			" what the holder ran then)\n",
			s.max_lag_ns / 1e6);
	if (t->stacks_missed)
		fprintf(f, "  (%" PRIu64 " waits without their holder's stack: the worker busy, the stack unreadable)\n",
			t->stacks_missed);
	gil_summary_done(&s);
}

static void json_frame(struct jsonw *j, const Hostprof__PythonFrame *fr)
{
	jsonw_string_field(j, "function", fr && fr->function ? fr->function : "");
	jsonw_string_field(j, "file", fr && fr->file ? fr->file : "");
	jsonw_uint_field(j, "line", fr ? fr->line : 0);
	jsonw_bool_field(j, "read", fr != NULL);
}

void report_gil_json(const Hostprof__Snapshot *snap, struct jsonw *j)
{
	const Hostprof__GilTable *t = snap->gil;
	struct gil_summary s = {};

	if (!t)
		return;
	jsonw_name(j, "gil");
	jsonw_begin_object(j);
	jsonw_string_field(j, "status", status_name(t->status));
	jsonw_string_field(j, "reason", t->reason ? t->reason : "");
	jsonw_string_field(j, "version", t->version ? t->version : "");
	jsonw_uint_field(j, "gil_min_ns", t->gil_min_ns);
	jsonw_uint_field(j, "stacks_missed", t->stacks_missed);
	jsonw_uint_field(j, "watched_since", t->watched_since);
	if (t->status == 1 && gil_summary_build(snap, &s) == 0) {
		jsonw_uint_field(j, "window_ns", s.window_ns);
		jsonw_uint_field(j, "stacks_read_after", s.drain_stacks);
		jsonw_uint_field(j, "stacks_at_wait", s.kernel_stacks);
		jsonw_uint_field(j, "max_stack_lag_ns", s.max_lag_ns);
	}
	jsonw_name(j, "threads");
	jsonw_begin_array(j);
	for (size_t i = 0; i < s.n; i++) {
		const struct gil_waiter *w = &s.w[i];
		const char *comm = hps_thread_comm(snap, w->tid);

		jsonw_begin_object(j);
		jsonw_uint_field(j, "tid", w->tid);
		jsonw_string_field(j, "comm", comm ? comm : "");
		jsonw_uint_field(j, "count", w->count);
		jsonw_uint_field(j, "total_ns", w->total_ns);
		jsonw_uint_field(j, "max_ns", w->max_ns);
		jsonw_float_field(j, "share", s.window_ns ? (double)w->total_ns / s.window_ns : 0.0);
		jsonw_uint_field(j, "recorded", w->recorded);
		jsonw_uint_field(j, "recorded_ns", w->recorded_ns);
		jsonw_name(j, "holders");
		jsonw_begin_array(j);
		for (size_t k = 0; k < w->n_holders; k++) {
			const struct gil_holder *h = &w->holders[k];
			const char *hc = hps_thread_comm(snap, h->tid);

			jsonw_begin_object(j);
			jsonw_uint_field(j, "tid", h->tid);
			jsonw_string_field(j, "comm", hc ? hc : "");
			jsonw_uint_field(j, "ns", h->ns);
			jsonw_uint_field(j, "count", h->count);
			jsonw_uint_field(j, "max_ns", h->max_ns);
			jsonw_name(j, "functions");
			jsonw_begin_array(j);
			for (size_t m = 0; m < h->n_fns; m++) {
				const Hostprof__GilStack *st = h->fns[m].stack;

				jsonw_begin_object(j);
				json_frame(j, h->fns[m].frame);
				jsonw_uint_field(j, "ns", h->fns[m].ns);
				jsonw_uint_field(j, "count", h->fns[m].count);
				/* the first such wait's stack, innermost first, and how late it was read */
				jsonw_uint_field(j, "lag_ns", st ? st->lag_ns : 0);
				jsonw_name(j, "stack");
				jsonw_begin_array(j);
				for (size_t q = 0; st && q < st->n_frames; q++) {
					jsonw_begin_object(j);
					json_frame(j, st->frames[q] < t->n_frames ? t->frames[st->frames[q]] : NULL);
					jsonw_end_object(j);
				}
				jsonw_end_array(j);
				jsonw_end_object(j);
			}
			jsonw_end_array(j);
			jsonw_end_object(j);
		}
		jsonw_end_array(j);
		jsonw_end_object(j);
	}
	jsonw_end_array(j);
	jsonw_end_object(j);
	gil_summary_done(&s);
}
