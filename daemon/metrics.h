/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Metrics in the Prometheus text format: per watched process and per dispatch thread,
 * the time lost by cause, preemptions and runqueue latency (timeacct.h), the events and
 * recorder memory; for the daemon, triggers fired and suppressed, automatic snapshots
 * saved and pruned, drops by cause, its CPU and resident set. Written every
 * metrics_interval as metrics_dir/hostprofd.prom for node_exporter's textfile collector
 * (atomically: a temporary file renamed over it), and the same text is what
 * `hostprofctl metrics` prints. README, "Metrics", lists the names.
 */
#ifndef HOSTPROF_METRICS_H
#define HOSTPROF_METRICS_H

#include <stdbool.h>
#include <stdint.h>

#include "framing.h"

struct metrics;
struct proc_rec;
struct recorder;
struct settings;
struct snapstore;
struct snapsvc;
struct triggers;

#define METRICS_FILE "hostprofd.prom"
/* Bounds on the series: processes, and dispatch threads in all, past which the text says
 * how many it left out (hostprof_metrics_omitted). */
#define METRICS_MAX_PROCS 512
#define METRICS_MAX_THREADS 1024

/* What metrics reads; every pointer outlives it. settings is the daemon's, as each
 * reload leaves it. */
struct metrics_deps {
	struct recorder *recorder;
	struct snapsvc *snapsvc;
	const struct snapstore *snapstore;
	const struct triggers *triggers;
	const struct settings *settings;
	unsigned interference_missing; /* HP_INTF_* groups this kernel lacks */
};

struct metrics *metrics_new(const struct metrics_deps *deps);
void metrics_free(struct metrics *m);

/* The text, appended to out: the processes may_see admits (NULL: all) and the daemon's
 * own figures. */
int metrics_format(struct metrics *m, bool (*may_see)(void *ud, const struct proc_rec *p), void *ud,
		   struct hp_buf *out);

/* Once a second: write the file when metrics_interval has passed since the last time
 * and metrics_dir exists. Logs a failure once until a write works again. */
void metrics_tick(struct metrics *m, uint64_t now);

/* Write it now; -ENOENT when metrics_dir does not exist, -ENOTDIR... */
int metrics_write(struct metrics *m);

#endif
