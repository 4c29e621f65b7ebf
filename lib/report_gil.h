/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The report's GIL section (Snapshot.gil): per thread that waited for a CPython process's
 * GIL, its waits (every one counted; the recorded ones by holder and by what the holder ran)
 * and their share of the window. Nothing when the snapshot has no GilTable.
 */
#ifndef HOSTPROF_REPORT_GIL_H
#define HOSTPROF_REPORT_GIL_H

#include <stdint.h>
#include <stdio.h>

#include "jsonw.h"
#include "snapshot.pb-c.h"

/* What a holder ran while a thread waited: the innermost frame of its stack. */
struct gil_function {
	const Hostprof__PythonFrame *frame; /* NULL: not read */
	const Hostprof__GilStack *stack; /* the first wait's whole stack (frame is its innermost) */
	uint64_t ns, count;
};

struct gil_holder {
	uint32_t tid; /* 0: not known */
	uint64_t ns, count, max_ns;
	struct gil_function *fns; /* by time */
	size_t n_fns;
};

struct gil_waiter {
	uint32_t tid;
	uint64_t count, total_ns, max_ns; /* every wait (GilTotal), else the recorded ones */
	uint64_t recorded, recorded_ns;
	struct gil_holder *holders; /* by time */
	size_t n_holders;
};

struct gil_summary {
	struct gil_waiter *w; /* by total time */
	size_t n;
	uint64_t window_ns;
	uint64_t max_lag_ns; /* the latest holder stack read after its wait */
	uint64_t drain_stacks, kernel_stacks;
};

/* -ENOMEM, else 0 (an empty summary without a table). */
int gil_summary_build(const Hostprof__Snapshot *snap, struct gil_summary *ret);
void gil_summary_done(struct gil_summary *s);

/* Waiters shown in the text, holders per waiter, functions per holder. */
#define REPORT_GIL_THREADS 10
#define REPORT_GIL_HOLDERS 5
#define REPORT_GIL_FUNCTIONS 5

/* "function (file:line)", or "(its stack not read)" for NULL; escaped. */
void report_gil_frame_text(FILE *f, const Hostprof__PythonFrame *fr);
void report_gil_text(const Hostprof__Snapshot *snap, FILE *f);
/* A "gil" field of the report's object (none when the snapshot has no GilTable). */
void report_gil_json(const Hostprof__Snapshot *snap, struct jsonw *j);

#endif
