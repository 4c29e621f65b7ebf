// SPDX-License-Identifier: GPL-2.0-only
/*
 * The report's Python section (report_python.h). Threads are shown in the interpreter's
 * order, each with its tid, its name from the snapshot's thread table, whether it held the
 * GIL, and its frames innermost first as "function (file:line)"; a stack that stops early
 * says why. Names and files come from the watched process: control bytes are escaped.
 */
#include <inttypes.h>
#include <stdbool.h>
#include <string.h>

#include "escape.h"
#include "hps.h"
#include "report_python.h"

static const char *status_name(uint32_t status)
{
	switch (status) {
	case 1:
		return "ok";
	case 2:
		return "partial";
	case 3:
		return "unreadable";
	}
	return "unknown";
}

static void put_escaped(FILE *f, const char *s)
{
	char buf[ESCAPE_SIZE(256)];
	size_t n = s ? strlen(s) : 0;

	if (!s)
		return;
	if (!has_control(s)) {
		fputs(s, f);
		return;
	}
	for (size_t i = 0; i < n; i += 256) {
		char part[257];
		size_t k = n - i < 256 ? n - i : 256;

		memcpy(part, s + i, k);
		part[k] = 0;
		fputs(escape_control(part, buf, sizeof(buf)), f);
	}
}

static void text_frame(FILE *f, const Hostprof__PythonState *py, uint32_t idx)
{
	const Hostprof__PythonFrame *fr = idx < py->n_frames ? py->frames[idx] : NULL;

	fputs("    ", f);
	if (!fr) {
		fputs("?\n", f);
		return;
	}
	put_escaped(f, fr->function && fr->function[0] ? fr->function : "?");
	fputs(" (", f);
	put_escaped(f, fr->file && fr->file[0] ? fr->file : "?");
	if (fr->line)
		fprintf(f, ":%" PRIu32, fr->line);
	else
		fputs(":?", f);
	fputs(")\n", f);
}

static void text_thread(FILE *f, const Hostprof__Snapshot *snap, const Hostprof__PythonThread *t)
{
	const Hostprof__PythonState *py = snap->python;
	const char *comm = hps_thread_comm(snap, t->tid);
	size_t shown = t->n_frames < REPORT_PYTHON_FRAMES_MAX ? t->n_frames : REPORT_PYTHON_FRAMES_MAX;

	if (t->tid)
		fprintf(f, "\n  thread %" PRIu32, t->tid);
	else
		fprintf(f, "\n  thread 0x%" PRIx64 " (tid not known)", t->thread_id);
	if (comm) {
		fputs(" \"", f);
		put_escaped(f, comm);
		fputc('"', f);
	}
	if (t->interpreter)
		fprintf(f, ", interpreter %" PRId64, t->interpreter);
	if (t->gil)
		fputs(", holds the GIL", f);
	fputc('\n', f);
	if (!t->n_frames && !(t->error && t->error[0]))
		fputs("    (no Python frames)\n", f);
	for (size_t i = 0; i < shown; i++)
		text_frame(f, py, t->frames[i]);
	if (t->n_frames > shown)
		fprintf(f, "    ... %zu more frames\n", t->n_frames - shown);
	if (t->truncated)
		fputs("    ... deeper than the frames read\n", f);
	if (t->error && t->error[0]) {
		fputs("    (stack unreadable past here: ", f);
		put_escaped(f, t->error);
		fputs(")\n", f);
	}
}

/* The garbage collections of the window, per generation: count, total, longest. */
struct gc_sum {
	uint64_t n, total_ns, max_ns;
};

static bool gc_sums(const Hostprof__Snapshot *snap, struct gc_sum sum[3])
{
	const Hostprof__PythonGcTable *g = snap->python_gc;

	memset(sum, 0, 3 * sizeof(*sum));
	if (!g || !g->n_ts_delta)
		return false;
	for (size_t i = 0; i < g->n_ts_delta; i++) {
		int gen = i < g->n_generation ? g->generation[i] : 0;
		uint64_t d = i < g->n_dur_ns ? g->dur_ns[i] : 0;
		struct gc_sum *s = &sum[gen < 0 ? 0 : gen > 2 ? 2 : gen];

		s->n++;
		s->total_ns += d;
		if (d > s->max_ns)
			s->max_ns = d;
	}
	return true;
}

/* The kernel-walked stacks and the garbage collections: what the Python section says first. */
static void text_walks(const Hostprof__Snapshot *snap, FILE *f)
{
	const Hostprof__PythonStacks *ps = snap->python_stacks;
	struct gc_sum sum[3];

	if (ps) {
		fprintf(f, "  stacks            %" PRIu64 " samples and off-CPU intervals with Python frames", ps->merged);
		if (ps->unreadable) {
			fprintf(f, ", %" PRIu64 " python stack unreadable (", ps->unreadable);
			put_escaped(f, ps->reason && ps->reason[0] ? ps->reason : "?");
			fputc(')', f);
		}
		fputc('\n', f);
	}
	if (gc_sums(snap, sum))
		for (int gen = 0; gen < 3; gen++)
			if (sum[gen].n)
				fprintf(f, "  gc generation %d   %" PRIu64 " collections, %.3f ms in all, longest %.3f ms\n", gen,
					sum[gen].n, sum[gen].total_ns / 1e6, sum[gen].max_ns / 1e6);
}

void report_python_text(const Hostprof__Snapshot *snap, FILE *f)
{
	const Hostprof__PythonState *py = snap->python;

	if (!py) {
		if (snap->python_stacks || (snap->python_gc && snap->python_gc->n_ts_delta)) {
			fputs("\nPython\n", f);
			text_walks(snap, f);
		}
		return;
	}
	fprintf(f, "\nPython threads at the instant");
	if (py->version && py->version[0])
		fprintf(f, " (CPython %s)", py->version);
	fputc('\n', f);
	if (py->binary && py->binary[0]) {
		fputs("  interpreter       ", f);
		put_escaped(f, py->binary);
		fputc('\n', f);
	}
	if (py->has_ts) {
		fprintf(f, "  read at           +%.3f s",
			py->ts >= snap->start_ns ? (py->ts - snap->start_ns) / 1e9 : 0.0);
		if (snap->end_ns >= snap->start_ns)
			fprintf(f, " (the window ends at +%.3f s)", (snap->end_ns - snap->start_ns) / 1e9);
		fprintf(f, ", in %.1f ms, %zu threads\n", py->duration_ns / 1e6, py->n_threads);
	}
	if (py->status != 1) {
		fprintf(f, "  status            %s: ", status_name(py->status));
		put_escaped(f, py->reason && py->reason[0] ? py->reason : "?");
		fputc('\n', f);
	}
	text_walks(snap, f);
	for (size_t i = 0; i < py->n_threads; i++)
		text_thread(f, snap, py->threads[i]);
}

static void json_walks(const Hostprof__Snapshot *snap, struct jsonw *j)
{
	const Hostprof__PythonStacks *ps = snap->python_stacks;
	struct gc_sum sum[3];

	jsonw_name(j, "python_stacks");
	jsonw_begin_object(j);
	jsonw_uint_field(j, "merged", ps ? ps->merged : 0);
	jsonw_uint_field(j, "unreadable", ps ? ps->unreadable : 0);
	jsonw_string_field(j, "reason", ps && ps->reason ? ps->reason : "");
	jsonw_uint_field(j, "read_failures", ps ? ps->read_failures : 0);
	jsonw_uint_field(j, "truncated", ps ? ps->truncated : 0);
	jsonw_uint_field(j, "unanchored", ps ? ps->unanchored : 0);
	jsonw_end_object(j);
	jsonw_name(j, "python_gc");
	jsonw_begin_array(j);
	if (gc_sums(snap, sum))
		for (int gen = 0; gen < 3; gen++) {
			jsonw_begin_object(j);
			jsonw_int_field(j, "generation", gen);
			jsonw_uint_field(j, "collections", sum[gen].n);
			jsonw_uint_field(j, "total_ns", sum[gen].total_ns);
			jsonw_uint_field(j, "max_ns", sum[gen].max_ns);
			jsonw_end_object(j);
		}
	jsonw_end_array(j);
}

void report_python_json(const Hostprof__Snapshot *snap, struct jsonw *j)
{
	const Hostprof__PythonState *py = snap->python;

	if (snap->python_stacks || (snap->python_gc && snap->python_gc->n_ts_delta))
		json_walks(snap, j);
	if (!py)
		return;
	jsonw_name(j, "python");
	jsonw_begin_object(j);
	jsonw_string_field(j, "status", status_name(py->status));
	jsonw_string_field(j, "reason", py->reason ? py->reason : "");
	jsonw_string_field(j, "version", py->version ? py->version : "");
	jsonw_string_field(j, "binary", py->binary ? py->binary : "");
	jsonw_string_field(j, "offsets", py->offsets ? py->offsets : "");
	if (py->has_ts)
		jsonw_uint_field(j, "ts", py->ts);
	jsonw_uint_field(j, "duration_ns", py->duration_ns);
	jsonw_uint_field(j, "stacks_unreadable", py->stacks_unreadable);
	jsonw_uint_field(j, "code_stale", py->code_stale);
	jsonw_name(j, "threads");
	jsonw_begin_array(j);
	for (size_t i = 0; i < py->n_threads; i++) {
		const Hostprof__PythonThread *t = py->threads[i];
		const char *comm = hps_thread_comm(snap, t->tid);

		jsonw_begin_object(j);
		jsonw_uint_field(j, "tid", t->tid);
		jsonw_hex_field(j, "thread_id", t->thread_id);
		jsonw_string_field(j, "comm", comm ? comm : "");
		jsonw_int_field(j, "interpreter", t->interpreter);
		jsonw_bool_field(j, "gil", t->gil);
		jsonw_bool_field(j, "truncated", t->truncated);
		jsonw_string_field(j, "error", t->error ? t->error : "");
		jsonw_name(j, "frames");
		jsonw_begin_array(j);
		for (size_t k = 0; k < t->n_frames; k++) {
			const Hostprof__PythonFrame *fr =
				t->frames[k] < py->n_frames ? py->frames[t->frames[k]] : NULL;

			jsonw_begin_object(j);
			jsonw_string_field(j, "function", fr && fr->function ? fr->function : "");
			jsonw_string_field(j, "file", fr && fr->file ? fr->file : "");
			jsonw_uint_field(j, "line", fr ? fr->line : 0);
			jsonw_uint_field(j, "first_line", fr ? fr->first_line : 0);
			jsonw_bool_field(j, "eval_entry", k < t->n_eval_entry && t->eval_entry[k]);
			jsonw_end_object(j);
		}
		jsonw_end_array(j);
		jsonw_end_object(j);
	}
	jsonw_end_array(j);
	jsonw_end_object(j);
}
