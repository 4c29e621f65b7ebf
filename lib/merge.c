// SPDX-License-Identifier: GPL-2.0-only
/*
 * The merged trace of many nodes (merge.h): one Perfetto trace, one Perfetto machine per
 * node, every node on the time line of the one that booted first.
 *
 * What Perfetto calls a multi-machine trace (traced_relay: a host and its guests) is one
 * trace whose packets say, in TracePacket.machine_id (field 98 of
 * protos/perfetto/trace/trace_packet.proto), which machine they come from; trace_processor
 * keeps each machine's CPUs, processes and threads apart (its machine table, and the
 * machine_id of cpu, process and thread). Each node here is written by the one Perfetto
 * exporter (export_perfetto.c, compact_sched, a sequence per thread) as machine i + 1
 * (the order of the files), with:
 *   - its own ClockSnapshot, SystemInfo (the node's uname) and ProcessTree, all carrying
 *     its machine_id; the ClockSnapshot ties its BOOTTIME, as moved, to its REALTIME, so
 *     every machine tells the same BOOTTIME-to-wall-clock relation;
 *   - sequence ids of its own: trusted_packet_sequence_id is unique in the trace, as
 *     traced makes it for the producers of every machine, the previous node's highest + 1
 *     onwards;
 *   - track uuids of its own (the machine in bits 22..43 of each uuid);
 *   - a track named for the node ("node-17 (rank 3, job 777)") with a slice "window" over
 *     its snapshot's window: the machine's identity in the UI, which has no hostname in
 *     SystemInfo to show.
 * Times: each node's BOOTTIME moves by its boot epoch (merge.h) minus the smallest one,
 * applied to the snapshot itself (its window start, which every table's ts_delta chains
 * from, and its absolute times) before it is written, so the exporter writes what it always
 * writes.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "export.h"
#include "hps.h"
#include "macro.h"
#include "merge.h"
#include "perfetto_internal.h"

int merge_boot_epoch(const Hostprof__Snapshot *snap, int64_t *ret_ns)
{
	const Hostprof__ClockAnchor *c = snap->clock;

	if (!c || !c->has_boottime_ns || !c->has_realtime_ns || !c->realtime_ns ||
	    c->boottime_ns > INT64_MAX || c->realtime_ns > INT64_MAX)
		return -EINVAL;
	*ret_ns = (int64_t)c->realtime_ns - (int64_t)c->boottime_ns;
	return 0;
}

static const char *host_of(const Hostprof__Snapshot *s)
{
	return s->host && s->host->hostname ? s->host->hostname : "";
}

/* The latest absolute time of the snapshot, before it is moved: what must stay within 64 bits. */
static uint64_t latest_time(const Hostprof__Snapshot *s)
{
	uint64_t t = s->end_ns;

	if (s->clock)
		t = MAX(t, MAX(s->clock->boottime_ns, s->clock->monotonic_ns));
	for (size_t i = 0; i < s->n_markers; i++)
		t = MAX(t, s->markers[i]->ts);
	for (size_t i = 0; i < s->n_processes; i++)
		t = MAX(t, MAX(s->processes[i]->exit_ns, s->processes[i]->cred_change_ns));
	if (s->python)
		t = MAX(t, s->python->ts);
	return t;
}

static const Hostprof__Process *main_process(const Hostprof__Snapshot *s)
{
	for (size_t i = 0; i < s->n_processes; i++)
		if (s->processes[i]->pid == s->pid)
			return s->processes[i];
	return NULL;
}

void merge_node_init(const Hostprof__Snapshot *s, struct merge_node *ret)
{
	const Hostprof__Process *p = main_process(s);
	const Hostprof__ClockAnchor *c = s->clock;

	*ret = (struct merge_node){ .pid = s->pid, .latest = latest_time(s) };
	snprintf(ret->host, sizeof(ret->host), "%s", host_of(s));
	merge_node_name(s, ret->name, sizeof(ret->name));
	if (p) {
		snprintf(ret->rank, sizeof(ret->rank), "%s", p->rank ? p->rank : "");
		snprintf(ret->job, sizeof(ret->job), "%s", p->job ? p->job : "");
		ret->start_time = p->start_time;
	}
	ret->has_anchor = merge_boot_epoch(s, &ret->epoch) == 0;
	if (c) {
		ret->clock_known = c->has_synced;
		ret->synced = c->synced;
		ret->max_error_ns = c->max_error_ns;
		ret->est_error_ns = c->est_error_ns;
	}
	ret->window_ns = s->end_ns > s->start_ns ? s->end_ns - s->start_ns : 0;
}

static bool same_process(const struct merge_node *a, const struct merge_node *b)
{
	return !strcmp(a->host, b->host) && a->pid == b->pid &&
	       (!a->start_time || !b->start_time || a->start_time == b->start_time);
}

int merge_plan(const struct merge_node *nodes, size_t n, bool one_per_host, uint64_t *ret_shift,
	       struct merge_check *ret_check)
{
	int64_t first = INT64_MAX;

	*ret_check = (struct merge_check){ MERGE_OK, 0, 0 };
	if (n > MERGE_MAX_NODES) {
		ret_check->problem = MERGE_TOO_MANY;
		return -EINVAL;
	}
	for (size_t i = 0; i < n; i++) {
		if (!nodes[i].has_anchor) {
			*ret_check = (struct merge_check){ MERGE_NO_ANCHOR, i, i };
			return -EINVAL;
		}
		if (!nodes[i].host[0]) {
			*ret_check = (struct merge_check){ MERGE_NO_HOST, i, i };
			return -EINVAL;
		}
		for (size_t j = 0; j < i; j++) {
			if (one_per_host && !strcmp(nodes[i].host, nodes[j].host)) {
				*ret_check = (struct merge_check){ MERGE_SAME_HOST, j, i };
				return -EINVAL;
			}
			if (same_process(&nodes[i], &nodes[j])) {
				*ret_check = (struct merge_check){ MERGE_SAME_PROCESS, j, i };
				return -EINVAL;
			}
		}
		first = MIN(first, nodes[i].epoch);
	}
	for (size_t i = 0; i < n; i++) {
		ret_shift[i] = (uint64_t)(nodes[i].epoch - first); /* >= 0: first is the smallest */
		/* the tables' sums stay within start_ns..end_ns (hps_validate); so do they moved */
		if (nodes[i].latest > UINT64_MAX - ret_shift[i]) {
			*ret_check = (struct merge_check){ MERGE_OUT_OF_RANGE, i, i };
			return -EINVAL;
		}
	}
	return 0;
}

static void shift_opt(uint64_t *t, uint64_t shift)
{
	if (*t) /* 0: not set */
		*t += shift;
}

void merge_shift(Hostprof__Snapshot *s, uint64_t shift)
{
	s->start_ns += shift;
	s->end_ns += shift;
	if (s->clock) {
		shift_opt(&s->clock->boottime_ns, shift);
		shift_opt(&s->clock->monotonic_ns, shift);
	}
	for (size_t i = 0; i < s->n_markers; i++)
		shift_opt(&s->markers[i]->ts, shift);
	for (size_t i = 0; i < s->n_processes; i++) {
		shift_opt(&s->processes[i]->exit_ns, shift);
		shift_opt(&s->processes[i]->cred_change_ns, shift);
	}
	if (s->python)
		shift_opt(&s->python->ts, shift);
}

void merge_node_name(const Hostprof__Snapshot *s, char *buf, size_t len)
{
	const Hostprof__Process *p = main_process(s);

	if (p && p->rank && *p->rank && p->job && *p->job)
		snprintf(buf, len, "%s (rank %s, job %s)", host_of(s), p->rank, p->job);
	else if (p && p->rank && *p->rank)
		snprintf(buf, len, "%s (rank %s)", host_of(s), p->rank);
	else
		snprintf(buf, len, "%s (pid %" PRIu32 ")", host_of(s), s->pid);
}

int merge_write(struct merge_writer *w, Hostprof__Snapshot *snap, uint64_t shift)
{
	char name[320];
	uint32_t seq_end = 0;
	int r;

	r = hps_validate(snap);
	if (r < 0)
		return r;
	if (w->machines + 1 >= PF_MAX_MACHINES || w->seq_base > UINT32_MAX / 2)
		return -E2BIG;
	merge_shift(snap, shift);
	merge_node_name(snap, name, sizeof(name));
	r = pf_export_machine(snap, w->out, w->machines + 1, w->seq_base, name, &seq_end);
	if (r < 0)
		return r;
	w->machines++;
	w->seq_base = seq_end;
	return 0;
}

int snapshot_merge_perfetto(Hostprof__Snapshot *const *snaps, size_t n, FILE *out,
			    struct merge_check *ret_check)
{
	_cleanup_free_ struct merge_node *nodes = calloc(MAX(n, (size_t)1), sizeof(*nodes));
	_cleanup_free_ uint64_t *shift = calloc(MAX(n, (size_t)1), sizeof(*shift));
	struct merge_writer w = { .out = out };
	int r;

	if (!nodes || !shift)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		merge_node_init(snaps[i], &nodes[i]);
	r = merge_plan(nodes, n, true, shift, ret_check);
	if (r < 0)
		return r;
	/* every snapshot is checked before a byte is written */
	for (size_t i = 0; i < n; i++) {
		r = hps_validate(snaps[i]);
		if (r < 0)
			return r;
	}
	for (size_t i = 0; i < n && r >= 0; i++)
		r = merge_write(&w, snaps[i], shift[i]);
	return r;
}
