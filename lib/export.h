/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Exporters: each turns one Hostprof__Snapshot into a file format. They validate the
 * snapshot before writing anything, write to a caller-owned FILE, and return 0 or -errno.
 */
#ifndef HOSTPROF_EXPORT_H
#define HOSTPROF_EXPORT_H

#include <stdbool.h>
#include <stdio.h>

#include "snapshot.pb-c.h"

/*
 * Writes a Perfetto trace (a serialized perfetto.protos.Trace, ".pftrace"). Returns 0,
 * -EINVAL for an inconsistent snapshot (nothing is written then), -ENOMEM, or the errno
 * of a failed write.
 */
int snapshot_export_perfetto(const Hostprof__Snapshot *snap, FILE *out);

/* Chrome trace JSON with perf-trace-viewer's view (".json"). */
int snapshot_export_json(const Hostprof__Snapshot *snap, FILE *out);

/* FlameGraph folded stacks: on-CPU in samples, or off-CPU in microseconds blocked. */
int snapshot_export_folded(const Hostprof__Snapshot *snap, bool offcpu, FILE *out);

/* gzip-compressed pprof profile.proto (".pb.gz"). */
int snapshot_export_pprof(const Hostprof__Snapshot *snap, FILE *out);

/* Self-contained SVG flame graph, on-CPU or off-CPU. */
int snapshot_export_svg(const Hostprof__Snapshot *snap, bool offcpu, FILE *out);

/* The diagnosis: text (".txt") or JSON (".report.json"). */
int snapshot_report_text(const Hostprof__Snapshot *snap, FILE *out);
int snapshot_report_json(const Hostprof__Snapshot *snap, FILE *out);

#endif
