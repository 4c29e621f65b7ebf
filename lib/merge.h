/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Snapshots of many nodes, taken of the same wall-clock instant (`snapshot --at`), put side
 * by side: one Perfetto trace with a Perfetto machine per node (`hostprofctl merge`), and
 * the cross-node report (`hostprofctl report A.hps B.hps ...`, report_nodes.c).
 *
 * Each node's times are CLOCK_BOOTTIME of its own kernel; its ClockAnchor says what its
 * REALTIME read at one BOOTTIME instant. A node's BOOTTIME t is wall-clock time
 * t + (anchor.realtime - anchor.boottime) on that node's clock: its "boot epoch". In the
 * merged trace every node is on one time line, the BOOTTIME of the node that booted first
 * (the smallest boot epoch): node i's times move by its boot epoch minus that one, so two
 * events at the same wall-clock instant on two nodes get the same timestamp (to the
 * nanosecond; how well the nodes' REALTIME clocks agree is another matter, which
 * ClockAnchor.max_error_ns says and the cross-node report takes into account).
 */
#ifndef HOSTPROF_MERGE_H
#define HOSTPROF_MERGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "snapshot.pb-c.h"

#define MERGE_MAX_NODES 4096

/* Why a set of snapshots cannot be put side by side: which one (and which other). */
enum merge_problem {
	MERGE_OK,
	MERGE_NO_ANCHOR, /* node a has no ClockAnchor with both BOOTTIME and REALTIME */
	MERGE_SAME_HOST, /* nodes a and b name the same host (merge: a machine per host) */
	MERGE_SAME_PROCESS, /* a and b are snapshots of one process of one host */
	MERGE_NO_HOST, /* node a names no host */
	MERGE_OUT_OF_RANGE, /* node a's times, moved onto the merged time line, pass 64 bits */
	MERGE_TOO_MANY, /* more than MERGE_MAX_NODES */
};

struct merge_check {
	enum merge_problem problem;
	size_t a, b;
};

/* Node i's boot epoch: anchor REALTIME - BOOTTIME, in ns; -EINVAL without an anchor. */
int merge_boot_epoch(const Hostprof__Snapshot *snap, int64_t *ret_ns);

/* What the merge and the report need to know of a snapshot to plan, so that it can be
 * freed meanwhile: a job of many nodes is read one snapshot at a time. */
struct merge_node {
	char host[256]; /* "" when it names none */
	char name[320]; /* merge_node_name() */
	char rank[64], job[64]; /* "" when not recorded */
	uint32_t pid;
	uint64_t start_time; /* its process's (0: not known) */
	bool has_anchor;
	int64_t epoch; /* boot epoch */
	bool clock_known, synced;
	uint64_t max_error_ns, est_error_ns;
	uint64_t window_ns;
	uint64_t latest; /* its latest absolute time */
};

void merge_node_init(const Hostprof__Snapshot *snap, struct merge_node *ret);

/*
 * Checks the set and computes each snapshot's shift onto the merged time line
 * (ret_shift[i], >= 0, n entries). one_per_host: two snapshots of one host are an error
 * (merge: one Perfetto machine per host); else only two of one process are (the report:
 * ranks that share a node). 0, or -EINVAL with *ret_check saying what is wrong.
 */
int merge_plan(const struct merge_node *nodes, size_t n, bool one_per_host, uint64_t *ret_shift,
	       struct merge_check *ret_check);

/* Moves every absolute time of the snapshot (its window, its tables through the window's
 * start, its anchor, markers, exits...) by shift ns. */
void merge_shift(Hostprof__Snapshot *snap, uint64_t shift);

/* "node-17 (rank 3, job 777)": a node's name for the trace and the report. */
void merge_node_name(const Hostprof__Snapshot *snap, char *buf, size_t len);

/*
 * The merged trace, one machine at a time: merge_write() moves snap by shift (in place) and
 * writes it as the next Perfetto machine (machine_id 1, 2, ...) with sequence ids after
 * the previous machine's. Returns what snapshot_export_perfetto() returns.
 */
struct merge_writer {
	FILE *out;
	uint32_t machines, seq_base;
};

int merge_write(struct merge_writer *w, Hostprof__Snapshot *snap, uint64_t shift);

/* All at once, for snapshots in memory: merge_plan(), then merge_write() of each. -EINVAL
 * with *ret_check set for a bad set (nothing written). */
int snapshot_merge_perfetto(Hostprof__Snapshot *const *snaps, size_t n, FILE *out,
			    struct merge_check *ret_check);

/*
 * The cross-node report (report_nodes.c): per process (rank, else host and pid; several
 * may share a host, whose clock then orders them exactly) when its dispatch threads first
 * stalled and how much they lost, which stalled first (or that the clocks cannot tell),
 * which lost the most, and each one's own first line. One snapshot at a time:
 * report_nodes_add() takes what it needs of each (they may be freed after), then
 * report_nodes_write() checks the set (-EINVAL with *ret_check set) and writes it.
 */
struct report_nodes;

struct report_nodes *report_nodes_new(void);
void report_nodes_free(struct report_nodes *r);
int report_nodes_add(struct report_nodes *r, const Hostprof__Snapshot *snap);
int report_nodes_write(struct report_nodes *r, bool json, FILE *out, struct merge_check *ret_check);

/* All at once, for snapshots in memory (they are not changed). */
int snapshot_report_nodes(Hostprof__Snapshot *const *snaps, size_t n, bool json, FILE *out,
			  struct merge_check *ret_check);

#endif
