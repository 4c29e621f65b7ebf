/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The report's section "Python threads at the instant": every thread's Python stack as the
 * daemon read it from a CPython process's memory at the snapshot (Snapshot.python), like
 * `py-spy dump`. Nothing when the snapshot has none (the process is not Python).
 */
#ifndef HOSTPROF_REPORT_PYTHON_H
#define HOSTPROF_REPORT_PYTHON_H

#include <stdio.h>

#include "jsonw.h"
#include "snapshot.pb-c.h"

/* Frames shown per thread in the text (the JSON has them all). */
#define REPORT_PYTHON_FRAMES_MAX 64

void report_python_text(const Hostprof__Snapshot *snap, FILE *f);
/* A "python" field of the report's object (none when the snapshot has no PythonState). */
void report_python_json(const Hostprof__Snapshot *snap, struct jsonw *j);

#endif
