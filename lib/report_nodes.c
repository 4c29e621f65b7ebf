// SPDX-License-Identifier: GPL-2.0-only
/*
 * The cross-node report (merge.h, `hostprofctl report A.hps B.hps ...`): snapshots of the
 * same instant on many nodes, one per rank (several ranks may share a node), and the two
 * questions of a job that one slow rank holds up at the next collective:
 *   - who stalled first: the node whose dispatch threads began their first stall episode
 *     (a gap of EPISODE_MIN_NS or more in the running) earliest by wall clock, each node's BOOTTIME
 *     put on its own wall clock through its anchor. Two nodes' clocks may be off by up to
 *     the sum of their max_error_ns (adjtimex's bound); a node is first only if every
 *     other node's first stall began later than that, and both clocks say they are
 *     synchronized (two ranks of one host share its clock: no error between them).
 *     Otherwise it is undecidable, and the report says between which nodes and why,
 *     rather than guess;
 *   - who lost the most: the node whose dispatch threads spent the most time in such
 *     stalls within its window;
 * and each node's own first line (the single-snapshot report's).
 * Dispatch threads and stalls are the single-snapshot report's (dispatch_threads, its
 * fallback, report_episodes()).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hps.h"
#include "jsonw.h"
#include "macro.h"
#include "merge.h"
#include "report.h"
#include "report_internal.h"
#include "walltime.h"

#define STALL_MIN_NS EPISODE_MIN_NS

/* What the report keeps of one snapshot (which may be freed after report_nodes_add()). */
struct node {
	struct merge_node mn; /* host, name, rank, pid, anchor, clock, window */
	char label[320]; /* "rank 3", else "node-17 pid 100" */
	/* the first stall of a dispatch thread, and all of them */
	bool stalled;
	uint32_t tid;
	char comm[16 * 4 + 1], first_name[96]; /* the thread, the episode's make-up */
	uint64_t first_begin, first_dur; /* BOOTTIME */
	uint64_t lost_ns, stalls;
	char first_line[1024];
};

/* The dispatch threads' stall episodes (report_episodes(): gaps of 1 ms or more in their
 * running, as the single-snapshot report finds them): the first, and all of them. */
static int node_stalls(struct node *nd, const struct model *m)
{
	_cleanup_free_ struct report_episode *ep = NULL;
	struct snapview v;
	size_t n = 0;
	int r;

	r = model_episodes(m, &ep, &n);
	if (r < 0)
		return r;
	r = snapview_init(m->snap, &v);
	if (r < 0)
		return r;
	for (size_t i = 0; i < n; i++) {
		nd->lost_ns += ep[i].end - ep[i].begin;
		nd->stalls++;
		if (nd->stalled && ep[i].begin >= nd->first_begin)
			continue;
		nd->stalled = true;
		nd->first_begin = ep[i].begin;
		nd->first_dur = ep[i].end - ep[i].begin;
		nd->tid = ep[i].tid;
		snprintf(nd->comm, sizeof(nd->comm), "%s", snapview_comm(&v, ep[i].tid));
		snprintf(nd->first_name, sizeof(nd->first_name), "%s", ep[i].name);
	}
	snapview_free(&v);
	return 0;
}

static int node_init(struct node *nd, const Hostprof__Snapshot *s)
{
	struct model m;
	int r;

	*nd = (struct node){};
	merge_node_init(s, &nd->mn);
	if (nd->mn.rank[0])
		snprintf(nd->label, sizeof(nd->label), "rank %s", nd->mn.rank);
	else
		snprintf(nd->label, sizeof(nd->label), "%s pid %" PRIu32, nd->mn.host, nd->mn.pid);
	r = model_build(s, &m);
	if (r < 0)
		return r;
	report_verdict_line(&m, nd->first_line, sizeof(nd->first_line));
	r = node_stalls(nd, &m);
	model_free(&m);
	return r;
}

static uint64_t wall(const struct node *nd, uint64_t boot)
{
	return boot + (uint64_t)nd->mn.epoch; /* modulo 2^64: a hostile file gets nonsense, not UB */
}

/* What two nodes' clocks may disagree by; UINT64_MAX: not known (not synchronized, or not
 * recorded). Two processes of one host read one clock: 0. */
static uint64_t combined_error(const struct node *a, const struct node *b)
{
	if (!strcmp(a->mn.host, b->mn.host))
		return 0;
	if (!a->mn.clock_known || !b->mn.clock_known || !a->mn.synced || !b->mn.synced)
		return UINT64_MAX;
	if (a->mn.max_error_ns > UINT64_MAX - b->mn.max_error_ns)
		return UINT64_MAX;
	return a->mn.max_error_ns + b->mn.max_error_ns;
}

struct verdict {
	ssize_t first; /* the node that stalled first, by wall clock; -1: none stalled */
	bool decided;
	ssize_t rival; /* undecided: the other node closest to first that the clocks cannot order */
	uint64_t gap_ns, error_ns; /* between first and rival (decided: the next one) */
	ssize_t most; /* the node that lost the most; -1: none */
};

static struct verdict decide(const struct node *nd, size_t n)
{
	struct verdict v = { .first = -1, .rival = -1, .most = -1 };

	for (size_t i = 0; i < n; i++) {
		if (!nd[i].stalled)
			continue;
		if (v.first < 0 ||
		    wall(&nd[i], nd[i].first_begin) < wall(&nd[v.first], nd[v.first].first_begin))
			v.first = (ssize_t)i;
		if (v.most < 0 || nd[i].lost_ns > nd[v.most].lost_ns)
			v.most = (ssize_t)i;
	}
	if (v.first < 0)
		return v;
	/* decided when every other node's first stall is later than the clocks can blur; the
	 * rival is then the runner-up, else the closest node the clocks cannot order */
	v.decided = true;
	for (int pass = 0; pass < 2 && v.rival < 0; pass++)
		for (size_t i = 0; i < n; i++) {
			const struct node *f = &nd[v.first];
			uint64_t gap, err;

			if ((ssize_t)i == v.first || !nd[i].stalled)
				continue;
			gap = wall(&nd[i], nd[i].first_begin) - wall(f, f->first_begin);
			err = combined_error(f, &nd[i]);
			if (pass == 0 && gap > err)
				continue;
			if (v.rival < 0 || gap < v.gap_ns) {
				v.rival = (ssize_t)i;
				v.gap_ns = gap;
				v.error_ns = err;
			}
			v.decided = pass == 1;
		}
	return v;
}

static const char *clock_desc(const struct node *nd, char *buf, size_t len)
{
	if (!nd->mn.clock_known)
		snprintf(buf, len, "sync not recorded");
	else if (!nd->mn.synced)
		snprintf(buf, len, "NOT synchronized");
	else
		snprintf(buf, len, "synced, max error %.3f ms, est. %.3f ms",
			 (double)nd->mn.max_error_ns / NSEC_PER_MSEC,
			 (double)nd->mn.est_error_ns / NSEC_PER_MSEC);
	return buf;
}

static void error_desc(uint64_t err, char *buf, size_t len)
{
	if (err == UINT64_MAX)
		snprintf(buf, len, "unknown: a clock is not synchronized or its sync state was not recorded");
	else
		snprintf(buf, len, "%.3f ms", (double)err / NSEC_PER_MSEC);
}

/* "25.0 RT, 1.0 runqueue": what an episode's name says it was made of */
static const char *made_of(const struct node *x)
{
	const char *p = strchr(x->first_name, ':');

	return p ? p + 2 : x->first_name;
}

static void write_text(const struct node *nd, size_t n, const struct verdict *v, FILE *out)
{
	char t[64], err[128], c[96];

	if (v->first < 0) {
		fprintf(out,
			"first stall: none: no node's dispatch thread stalled %.1f ms or more in its window\n",
			(double)STALL_MIN_NS / NSEC_PER_MSEC);
	} else {
		const struct node *f = &nd[v->first];

		format_wall_time_us(wall(f, f->first_begin), t, sizeof(t));
		if (v->decided && v->rival < 0) {
			fprintf(out,
				"first stall: %s on %s: %s (tid %" PRIu32
				") stalled %.1f ms (%s) at %s, the only node "
				"whose dispatch thread stalled\n",
				f->label, f->mn.host, f->comm, f->tid, (double)f->first_dur / NSEC_PER_MSEC,
				made_of(f), t);
		} else if (v->decided) {
			error_desc(v->error_ns, err, sizeof(err));
			fprintf(out,
				"first stall: %s on %s: %s (tid %" PRIu32
				") stalled %.1f ms (%s) at %s, %.3f ms before "
				"the next (%s on %s), more than the clocks' combined error (%s)\n",
				f->label, f->mn.host, f->comm, f->tid, (double)f->first_dur / NSEC_PER_MSEC,
				made_of(f), t, (double)v->gap_ns / NSEC_PER_MSEC, nd[v->rival].label,
				nd[v->rival].mn.host, err);
		} else {
			const struct node *r = &nd[v->rival];
			char t2[64];

			format_wall_time_us(wall(r, r->first_begin), t2, sizeof(t2));
			error_desc(v->error_ns, err, sizeof(err));
			fprintf(out,
				"first stall: undecidable: %s on %s at %s and %s on %s at %s are %.3f ms apart, "
				"within the clocks' combined error (%s)\n",
				f->label, f->mn.host, t, r->label, r->mn.host, t2,
				(double)v->gap_ns / NSEC_PER_MSEC, err);
		}
	}
	if (v->most >= 0) {
		const struct node *m = &nd[v->most];
		size_t tied = 0;

		for (size_t i = 0; i < n; i++)
			tied += nd[i].stalled && nd[i].lost_ns == m->lost_ns;
		if (tied > 1) {
			fprintf(out, "most lost: a tie of %zu nodes, %.1f ms each:", tied,
				(double)m->lost_ns / NSEC_PER_MSEC);
			for (size_t i = 0, k = 0; i < n; i++)
				if (nd[i].stalled && nd[i].lost_ns == m->lost_ns)
					fprintf(out, "%s %s on %s", k++ ? "," : "", nd[i].label,
						nd[i].mn.host);
			fputc('\n', out);
		} else {
			fprintf(out,
				"most lost: %s on %s: %.1f ms in %" PRIu64
				" stalls of its dispatch threads (%.1f%% of its window)\n",
				m->label, m->mn.host, (double)m->lost_ns / NSEC_PER_MSEC, m->stalls,
				pct(m->lost_ns, m->mn.window_ns));
		}
	}
	fprintf(out, "\n%-10s %-20s %8s %-28s %9s %9s %6s  %s\n", "rank", "host", "pid", "first stall (UTC)",
		"stall ms", "lost ms", "stalls", "clock");
	for (size_t i = 0; i < n; i++) {
		const struct node *x = &nd[i];

		if (x->stalled)
			format_wall_time_us(wall(x, x->first_begin), t, sizeof(t));
		else
			snprintf(t, sizeof(t), "-");
		fprintf(out, "%-10s %-20s %8" PRIu32 " %-28s %9.1f %9.1f %6" PRIu64 "  %s\n",
			x->mn.rank[0] ? x->mn.rank : "-", x->mn.host, x->mn.pid, t,
			(double)x->first_dur / NSEC_PER_MSEC, (double)x->lost_ns / NSEC_PER_MSEC, x->stalls,
			clock_desc(x, c, sizeof(c)));
	}
	fprintf(out, "\neach node's first line:\n");
	for (size_t i = 0; i < n; i++)
		fprintf(out, "  %s: %s\n", nd[i].mn.name, nd[i].first_line);
}

static void write_json(const struct node *nd, size_t n, const struct verdict *v, FILE *out)
{
	struct jsonw *j = jsonw_new(out);
	char t[64];

	if (!j)
		return;
	jsonw_begin_object(j);
	jsonw_name(j, "first_stall");
	jsonw_begin_object(j);
	jsonw_string_field(j, "verdict", v->first < 0 ? "none" : v->decided ? "decided" : "undecidable");
	if (v->first >= 0)
		jsonw_uint_field(j, "node", (uint64_t)v->first);
	if (v->rival >= 0) {
		jsonw_uint_field(j, v->decided ? "next" : "rival", (uint64_t)v->rival);
		jsonw_uint_field(j, "gap_ns", v->gap_ns);
		if (v->error_ns == UINT64_MAX)
			jsonw_name(j, "error_ns"), jsonw_null(j);
		else
			jsonw_uint_field(j, "error_ns", v->error_ns);
	}
	jsonw_end_object(j);
	if (v->most >= 0)
		jsonw_uint_field(j, "most_lost", (uint64_t)v->most);
	else
		jsonw_name(j, "most_lost"), jsonw_null(j);
	jsonw_name(j, "nodes");
	jsonw_begin_array(j);
	for (size_t i = 0; i < n; i++) {
		const struct node *x = &nd[i];

		jsonw_begin_object(j);
		jsonw_string_field(j, "host", x->mn.host);
		jsonw_uint_field(j, "pid", x->mn.pid);
		if (x->mn.rank[0])
			jsonw_string_field(j, "rank", x->mn.rank);
		else
			jsonw_name(j, "rank"), jsonw_null(j);
		jsonw_string_field(j, "name", x->mn.name);
		jsonw_name(j, "clock");
		jsonw_begin_object(j);
		if (x->mn.clock_known) {
			jsonw_bool_field(j, "synced", x->mn.synced);
			jsonw_uint_field(j, "max_error_ns", x->mn.max_error_ns);
			jsonw_uint_field(j, "est_error_ns", x->mn.est_error_ns);
		} else {
			jsonw_name(j, "synced"), jsonw_null(j);
		}
		jsonw_int_field(j, "boot_epoch_ns", x->mn.epoch);
		jsonw_end_object(j);
		if (x->stalled) {
			jsonw_name(j, "first_stall");
			jsonw_begin_object(j);
			jsonw_uint_field(j, "tid", x->tid);
			jsonw_string_field(j, "comm", x->comm);
			jsonw_uint_field(j, "boottime_ns", x->first_begin);
			jsonw_uint_field(j, "realtime_ns", wall(x, x->first_begin));
			jsonw_string_field(j, "utc",
					   format_wall_time_us(wall(x, x->first_begin), t, sizeof(t)));
			jsonw_uint_field(j, "duration_ns", x->first_dur);
			jsonw_string_field(j, "made_of", made_of(x));
			jsonw_end_object(j);
		} else {
			jsonw_name(j, "first_stall"), jsonw_null(j);
		}
		jsonw_uint_field(j, "lost_ns", x->lost_ns);
		jsonw_uint_field(j, "stalls", x->stalls);
		jsonw_uint_field(j, "window_ns", x->mn.window_ns);
		jsonw_string_field(j, "first_line", x->first_line);
		jsonw_end_object(j);
	}
	jsonw_end_array(j);
	jsonw_end_object(j);
	jsonw_flush(j);
	fputc('\n', out);
	jsonw_free(j);
}

struct report_nodes {
	struct node *v;
	size_t n, cap;
};

struct report_nodes *report_nodes_new(void)
{
	return calloc(1, sizeof(struct report_nodes));
}

void report_nodes_free(struct report_nodes *r)
{
	if (!r)
		return;
	free(r->v);
	free(r);
}

int report_nodes_add(struct report_nodes *r, const Hostprof__Snapshot *snap)
{
	int k;

	if (r->n >= MERGE_MAX_NODES)
		return -E2BIG;
	k = hps_validate(snap);
	if (k < 0)
		return k;
	k = reserve_one(&r->v, r->n, &r->cap, sizeof(*r->v));
	if (k < 0)
		return k;
	k = node_init(&r->v[r->n], snap);
	if (k < 0)
		return k;
	r->n++;
	return 0;
}

int report_nodes_write(struct report_nodes *r, bool json, FILE *out, struct merge_check *ret_check)
{
	_cleanup_free_ uint64_t *shift = calloc(MAX(r->n, (size_t)1), sizeof(*shift));
	_cleanup_free_ struct merge_node *mn = calloc(MAX(r->n, (size_t)1), sizeof(*mn));
	struct verdict v;
	int k;

	if (!shift || !mn)
		return -ENOMEM;
	for (size_t i = 0; i < r->n; i++)
		mn[i] = r->v[i].mn;
	k = merge_plan(mn, r->n, false, shift, ret_check);
	if (k < 0)
		return k;
	v = decide(r->v, r->n);
	if (json)
		write_json(r->v, r->n, &v, out);
	else
		write_text(r->v, r->n, &v, out);
	return report_flush(out);
}

int snapshot_report_nodes(Hostprof__Snapshot *const *snaps, size_t n, bool json, FILE *out,
			  struct merge_check *ret_check)
{
	struct report_nodes *r = report_nodes_new();
	int k = r ? 0 : -ENOMEM;

	*ret_check = (struct merge_check){ MERGE_OK, 0, 0 };
	for (size_t i = 0; i < n && k >= 0; i++)
		k = report_nodes_add(r, snaps[i]);
	if (k >= 0)
		k = report_nodes_write(r, json, out, ret_check);
	report_nodes_free(r);
	return k;
}
