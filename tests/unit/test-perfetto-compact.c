// SPDX-License-Identifier: GPL-2.0-only
/*
 * compact_sched read back. The Perfetto exporter writes a switch or a wakeup into a bundle's
 * CompactSched only where a reader, which takes a compact switch's previous task and a
 * compact wakeup's waker from what the CPU's previous switch put on it, reads back what
 * the snapshot says (perfetto_sched.c). This test holds it to that, one event at a time:
 *
 *   1. A snapshot built here with every case that a CompactSched can and cannot carry,
 *      over four CPUs and many bundles: switches that chain, chains broken by switches the
 *      snapshot did not record, prios and names that changed while a task ran, several
 *      events of one CPU in one nanosecond, wakers that are not what their CPU ran (and
 *      the idle task, for a wakeup from an interrupt), wakeups of tasks that never
 *      switched (no prio to give).
 *   2. tests/fixtures/stall.hps.
 *   3. Any .hps named on the command line (bench/run's snapshots, for one).
 *
 * Each is exported, decoded by protoc against perfetto_subset.proto (the public field
 * numbers), the compact columns expanded as trace_processor expands them
 * (perfetto-decode.h), and every sched_switch and sched_waking compared with the
 * snapshot's row: time, CPU, prev and next task (tid, comm, prio), prev_state; the waker,
 * the task woken, its name and prio, the target CPU. Nothing may be missing, extra or
 * different; no compact event may come before its CPU's first switch (a reader drops
 * it). Most events must be compact, and every case above that a CompactSched cannot carry
 * must have come out as a full event (else the comparison would fail).
 *
 * Usage: test-perfetto-compact PROTO_DIR [FILE.hps...]   (the directory of perfetto_subset.proto)
 * Exit: 0 pass, 1 fail, 77 skip (no protoc; $PROTOC names another binary).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "export.h"
#include "hps.h"
#include "macro.h"
#include "perfetto-decode.h"
#include "snapview.h"

static int failures;

#define CHECK(cond, ...)                                                                \
	do {                                                                            \
		if (!(cond)) {                                                          \
			fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond); \
			fprintf(stderr, __VA_ARGS__);                                   \
			fputc('\n', stderr);                                            \
			failures++;                                                     \
		}                                                                       \
	} while (0)

/* ---- 1. A snapshot with every case ------------------------------------------------------ */

#define NCPUS 4
#define NTHREADS 24 /* tids 1000..1023, half of pid 1000 (the watched process), half of pid 2000 */
#define NSILENT 4 /* tids 1030..1033: woken, never switched */
#define NEVENTS 12000
#define T0 UINT64_C(7000000000000)

struct gen {
	Hostprof__Snapshot snap;
	Hostprof__SchedSwitchTable sw;
	Hostprof__WakeupTable wk;
	Hostprof__Process proc, *procs[1];
	Hostprof__Thread th[NTHREADS + NSILENT], *thp[NTHREADS + NSILENT];
	char *strings[1 + NCPUS + 2 * (NTHREADS + NSILENT)];
	size_t nstrings;
	uint64_t last_sw, last_wk; /* for the deltas */
	uint32_t x; /* the random state */
	/* what really runs */
	uint32_t cur[NCPUS];
	uint32_t comm[NTHREADS + NSILENT], renamed[NTHREADS + NSILENT];
	int32_t prio[NTHREADS + NSILENT];
	/* what the generator planted that a CompactSched cannot carry */
	size_t breaks, prio_changes, renames, ties, odd_wakers, silent_wakes;
};

static void *xcalloc(size_t n, size_t size)
{
	return pd_xcalloc(n, size);
}

static uint32_t rnd(struct gen *g, uint32_t n)
{
	g->x = g->x * 1103515245u + 12345u;
	return (g->x >> 8) % n;
}

static uint32_t str(struct gen *g, const char *s)
{
	g->strings[g->nstrings] = pd_xstrdup(s);
	return (uint32_t)g->nstrings++;
}

/* Task k: 0 the idle task, 1..NTHREADS the threads, then the silent ones. */
static uint32_t tid_of(uint32_t k)
{
	return k == 0 ? 0 : k <= NTHREADS ? 999 + k : 1029 + k - NTHREADS;
}

static uint32_t pid_of(uint32_t k)
{
	return k == 0 ? 0 : k <= NTHREADS / 2 ? 1000 : k <= NTHREADS ? 2000 : 3000;
}

static void add_switch(struct gen *g, uint64_t ts, uint32_t cpu, uint32_t prev, uint32_t prev_comm,
		       int32_t prev_prio, uint32_t state, uint32_t next)
{
	Hostprof__SchedSwitchTable *t = &g->sw;
	size_t i = t->n_ts_delta++;

	t->ts_delta[i] = ts - g->last_sw;
	g->last_sw = ts;
	t->cpu[i] = cpu;
	t->prev_tid[i] = tid_of(prev);
	t->prev_pid[i] = pid_of(prev);
	t->prev_comm[i] = prev_comm;
	t->prev_prio[i] = prev_prio;
	t->prev_state[i] = state;
	t->next_tid[i] = tid_of(next);
	t->next_pid[i] = pid_of(next);
	t->next_comm[i] = next ? g->comm[next - 1] : 1 + cpu;
	t->next_prio[i] = next ? g->prio[next - 1] : 120;
}

static void add_waking(struct gen *g, uint64_t ts, uint32_t cpu, uint32_t waker, uint32_t woken,
		       uint32_t target)
{
	Hostprof__WakeupTable *t = &g->wk;
	size_t i = t->n_ts_delta++;

	t->ts_delta[i] = ts - g->last_wk;
	g->last_wk = ts;
	t->cpu[i] = cpu;
	t->tid[i] = tid_of(woken);
	t->pid[i] = pid_of(woken);
	t->target_cpu[i] = target;
	t->waker_tid[i] = tid_of(waker);
	t->waker_pid[i] = pid_of(waker);
	t->waker_comm[i] = waker ? g->comm[waker - 1] : 1 + cpu;
	t->flags[i] = 0;
}

static void gen_alloc(struct gen *g)
{
	Hostprof__SchedSwitchTable *s = &g->sw;
	Hostprof__WakeupTable *w = &g->wk;

	*s = (Hostprof__SchedSwitchTable)HOSTPROF__SCHED_SWITCH_TABLE__INIT;
	s->ts_delta = xcalloc(NEVENTS, sizeof(uint64_t));
	s->cpu = xcalloc(NEVENTS, sizeof(uint32_t));
	s->prev_tid = xcalloc(NEVENTS, sizeof(uint32_t));
	s->prev_pid = xcalloc(NEVENTS, sizeof(uint32_t));
	s->prev_comm = xcalloc(NEVENTS, sizeof(uint32_t));
	s->prev_prio = xcalloc(NEVENTS, sizeof(int32_t));
	s->prev_state = xcalloc(NEVENTS, sizeof(uint32_t));
	s->next_tid = xcalloc(NEVENTS, sizeof(uint32_t));
	s->next_pid = xcalloc(NEVENTS, sizeof(uint32_t));
	s->next_comm = xcalloc(NEVENTS, sizeof(uint32_t));
	s->next_prio = xcalloc(NEVENTS, sizeof(int32_t));
	*w = (Hostprof__WakeupTable)HOSTPROF__WAKEUP_TABLE__INIT;
	w->ts_delta = xcalloc(NEVENTS, sizeof(uint64_t));
	w->cpu = xcalloc(NEVENTS, sizeof(uint32_t));
	w->tid = xcalloc(NEVENTS, sizeof(uint32_t));
	w->pid = xcalloc(NEVENTS, sizeof(uint32_t));
	w->target_cpu = xcalloc(NEVENTS, sizeof(uint32_t));
	w->waker_tid = xcalloc(NEVENTS, sizeof(uint32_t));
	w->waker_pid = xcalloc(NEVENTS, sizeof(uint32_t));
	w->waker_comm = xcalloc(NEVENTS, sizeof(uint32_t));
	w->flags = xcalloc(NEVENTS, sizeof(uint32_t));
}

static void gen_free(struct gen *g)
{
	Hostprof__SchedSwitchTable *s = &g->sw;
	Hostprof__WakeupTable *w = &g->wk;

	free(s->ts_delta), free(s->cpu), free(s->prev_tid), free(s->prev_pid), free(s->prev_comm);
	free(s->prev_prio), free(s->prev_state), free(s->next_tid), free(s->next_pid), free(s->next_comm);
	free(s->next_prio);
	free(w->ts_delta), free(w->cpu), free(w->tid), free(w->pid), free(w->target_cpu), free(w->waker_tid);
	free(w->waker_pid), free(w->waker_comm), free(w->flags);
	for (size_t i = 0; i < g->nstrings; i++)
		free(g->strings[i]);
}

static void generate(struct gen *g)
{
	static const uint32_t states[] = { 0x0, 0x1, 0x2, 0x100, 0x1, 0x80 };
	uint64_t ts = T0;
	char name[32];

	memset(g, 0, sizeof(*g));
	g->x = 20261201;
	gen_alloc(g);
	str(g, "");
	for (uint32_t c = 0; c < NCPUS; c++) {
		snprintf(name, sizeof(name), "swapper/%u", c);
		str(g, name);
	}
	for (uint32_t k = 1; k <= NTHREADS + NSILENT; k++) {
		snprintf(name, sizeof(name), "t%u", tid_of(k));
		g->comm[k - 1] = str(g, name);
		snprintf(name, sizeof(name), "t%u-renamed", tid_of(k));
		g->renamed[k - 1] = str(g, name);
		g->prio[k - 1] = 100 + (int32_t)(k % 40);
	}
	/* CPU 3 starts on a thread, the others idle */
	g->cur[3] = 5;

	for (size_t ev = 0; ev < NEVENTS; ev++) {
		uint32_t cpu = rnd(g, NCPUS), dt = rnd(g, 25) == 0 ? 0 : rnd(g, 20000);

		ts += dt;
		g->ties += dt == 0;
		if (rnd(g, 100) < 55) {
			uint32_t prev = g->cur[cpu], next, prev_comm,
				 state = states[rnd(g, ARRAY_SIZE(states))];
			int32_t prev_prio;

			if (rnd(g, 40) == 0) { /* two other tasks switched between themselves: not recorded */
				prev = rnd(g, NTHREADS + 1);
				g->breaks += prev != g->cur[cpu];
			}
			if (prev && rnd(g, 50) == 0) { /* setpriority() while it ran */
				g->prio[prev - 1] += 1;
				g->prio_changes++;
			}
			if (prev && rnd(g, 80) == 0 &&
			    g->comm[prev - 1] != g->renamed[prev - 1]) { /* a rename */
				g->comm[prev - 1] = g->renamed[prev - 1];
				g->renames++;
			}
			prev_comm = prev ? g->comm[prev - 1] : 1 + cpu;
			prev_prio = prev ? g->prio[prev - 1] : 120;
			do
				next = rnd(g, NTHREADS + 1);
			while (next == prev);
			if (!prev && !state)
				state = 0; /* the idle task leaves runnable */
			add_switch(g, ts, cpu, prev, prev_comm, prev_prio, prev ? state : 0, next);
			g->cur[cpu] = next;
		} else {
			uint32_t waker = g->cur[cpu], woken = 1 + rnd(g, NTHREADS);

			if (rnd(g, 30) == 0) { /* from an interrupt, or a task the snapshot saw elsewhere */
				waker = rnd(g, 3) == 0 ? 0 : rnd(g, NTHREADS + 1);
				g->odd_wakers += waker != g->cur[cpu];
			}
			if (rnd(g, 20) == 0) {
				woken = NTHREADS + 1 + rnd(g, NSILENT);
				g->silent_wakes++;
			}
			add_waking(g, ts, cpu, waker, woken, rnd(g, NCPUS));
		}
	}
	g->sw.n_cpu = g->sw.n_prev_tid = g->sw.n_prev_pid = g->sw.n_prev_comm = g->sw.n_prev_prio =
		g->sw.n_ts_delta;
	g->sw.n_prev_state = g->sw.n_next_tid = g->sw.n_next_pid = g->sw.n_next_comm = g->sw.n_ts_delta;
	g->sw.n_next_prio = g->sw.n_ts_delta;
	g->wk.n_cpu = g->wk.n_tid = g->wk.n_pid = g->wk.n_target_cpu = g->wk.n_waker_tid = g->wk.n_ts_delta;
	g->wk.n_waker_pid = g->wk.n_waker_comm = g->wk.n_flags = g->wk.n_ts_delta;

	/* every thread with its latest name: what the exporter calls the task a wakeup wakes */
	for (uint32_t k = 1; k <= NTHREADS + NSILENT; k++) {
		Hostprof__Thread *t = &g->th[k - 1];

		*t = (Hostprof__Thread)HOSTPROF__THREAD__INIT;
		t->has_tid = t->has_pid = true;
		t->tid = tid_of(k);
		t->pid = pid_of(k);
		t->comm = g->strings[g->comm[k - 1]];
		g->thp[k - 1] = t;
	}
	g->proc = (Hostprof__Process)HOSTPROF__PROCESS__INIT;
	g->proc.has_pid = true;
	g->proc.pid = 1000;
	g->proc.comm = "trainer";
	g->procs[0] = &g->proc;

	g->snap = (Hostprof__Snapshot)HOSTPROF__SNAPSHOT__INIT;
	g->snap.has_start_ns = g->snap.has_end_ns = g->snap.has_pid = true;
	g->snap.start_ns = T0;
	g->snap.end_ns = ts + 1;
	g->snap.pid = 1000;
	g->snap.n_strings = g->nstrings;
	g->snap.strings = g->strings;
	g->snap.n_processes = 1;
	g->snap.processes = g->procs;
	g->snap.n_threads = NTHREADS + NSILENT;
	g->snap.threads = g->thp;
	g->snap.switches = &g->sw;
	g->snap.wakeups = &g->wk;
}

/* ---- What the trace must say ------------------------------------------------------------ */

/* An event as the comparison sees it: switches and wakings alike. */
struct row {
	int kind;
	uint32_t cpu;
	uint64_t ts;
	int64_t pid; /* prev, or waker */
	int64_t a, b, c, d, e,
		f; /* switch: prev_prio, prev_state, next_pid, next_prio; waking: woken, prio, target */
	const char *s1, *s2; /* switch: prev_comm, next_comm; waking: comm */
};

static int cmp_str(const char *a, const char *b)
{
	return strcmp(a ? a : "", b ? b : "");
}

static int cmp_row(const void *x, const void *y)
{
	const struct row *a = x, *b = y;
	int r;

	if (a->cpu != b->cpu)
		return a->cpu < b->cpu ? -1 : 1;
	if (a->ts != b->ts)
		return a->ts < b->ts ? -1 : 1;
	if (a->kind != b->kind)
		return a->kind < b->kind ? -1 : 1;
#define CMP_FIELD(f)      \
	if (a->f != b->f) \
		return a->f < b->f ? -1 : 1;
	CMP_FIELD(pid)
	CMP_FIELD(a)
	CMP_FIELD(b)
	CMP_FIELD(c)
	CMP_FIELD(d)
	CMP_FIELD(e)
	CMP_FIELD(f)
#undef CMP_FIELD
	if ((r = cmp_str(a->s1, b->s1)))
		return r;
	return cmp_str(a->s2, b->s2);
}

/*
 * The snapshot's switches and wakings as the trace must give them back. A waking's comm is
 * the woken thread's name in the snapshot's thread index; its prio that of the task's latest
 * switch before it (wakings before switches within one nanosecond), else of its first switch,
 * else none (INT64_MIN).
 */
static size_t expected_rows(const Hostprof__Snapshot *s, struct row **ret)
{
	const Hostprof__SchedSwitchTable *sw = s->switches;
	const Hostprof__WakeupTable *wk = s->wakeups;
	size_t nsw = sw ? sw->n_ts_delta : 0, nwk = wk ? wk->n_ts_delta : 0, i = 0, j = 0, n = 0;
	struct row *rows = xcalloc(nsw + nwk, sizeof(*rows));
	uint64_t tsw = s->start_ns + (nsw ? sw->ts_delta[0] : 0),
		 twk = s->start_ns + (nwk ? wk->ts_delta[0] : 0);
	struct snapview v;
	int32_t *prio;
	int r;

	r = snapview_init(s, &v);
	CHECK(r == 0, "snapview_init %d", r);
	prio = xcalloc(v.n_threads, sizeof(*prio));
	for (size_t k = 0; k < v.n_threads; k++)
		prio[k] = INT32_MIN;
	for (size_t k = 0; k < nsw; k++) {
		ssize_t p = snapview_index(&v, sw->prev_tid[k]), q = snapview_index(&v, sw->next_tid[k]);

		if (p >= 0 && prio[p] == INT32_MIN)
			prio[p] = sw->prev_prio[k];
		if (q >= 0 && prio[q] == INT32_MIN)
			prio[q] = sw->next_prio[k];
	}
	while (i < nsw || j < nwk) {
		struct row *x = &rows[n++];

		if (j < nwk && (i == nsw || twk <= tsw)) {
			ssize_t w = snapview_index(&v, wk->tid[j]);

			*x = (struct row){ .kind = PD_WAKING,
					   .cpu = wk->cpu[j],
					   .ts = twk,
					   .pid = wk->waker_tid[j],
					   .a = wk->tid[j],
					   .b = w >= 0 && prio[w] != INT32_MIN ? prio[w] : INT64_MIN,
					   .c = wk->target_cpu[j],
					   .s1 = snapview_comm(&v, wk->tid[j]) };
			if (++j < nwk)
				twk += wk->ts_delta[j];
		} else {
			ssize_t p = snapview_index(&v, sw->prev_tid[i]),
				q = snapview_index(&v, sw->next_tid[i]);

			*x = (struct row){ .kind = PD_SWITCH,
					   .cpu = sw->cpu[i],
					   .ts = tsw,
					   .pid = sw->prev_tid[i],
					   .a = sw->prev_prio[i],
					   .b = sw->prev_state[i],
					   .c = sw->next_tid[i],
					   .d = sw->next_prio[i],
					   .e = sw->prev_tid[i],
					   .s1 = hps_str(s, sw->prev_comm[i]),
					   .s2 = hps_str(s, sw->next_comm[i]) };
			if (p >= 0)
				prio[p] = sw->prev_prio[i];
			if (q >= 0)
				prio[q] = sw->next_prio[i];
			if (++i < nsw)
				tsw += sw->ts_delta[i];
		}
	}
	/* the names outlive the view: they point into the snapshot */
	snapview_free(&v);
	free(prio);
	*ret = rows;
	return n;
}

/* What the trace says, from the decoder, in the same shape. */
static size_t decoded_rows(const struct pd_sched *sc, struct row **ret)
{
	struct row *rows = xcalloc(sc->n, sizeof(*rows));
	size_t n = 0;

	for (size_t i = 0; i < sc->n; i++) {
		const struct pd_sched_ev *e = &sc->ev[i];

		if (e->kind == PD_SWITCH)
			rows[n++] = (struct row){ .kind = PD_SWITCH,
						  .cpu = e->cpu,
						  .ts = e->ts,
						  .pid = e->pid,
						  .a = e->prev_prio,
						  .b = e->prev_state,
						  .c = e->next_pid,
						  .d = e->next_prio,
						  .e = e->prev_pid,
						  .s1 = e->prev_comm,
						  .s2 = e->next_comm };
		else if (e->kind == PD_WAKING)
			rows[n++] = (struct row){ .kind = PD_WAKING,
						  .cpu = e->cpu,
						  .ts = e->ts,
						  .pid = e->pid,
						  .a = e->woken,
						  .b = e->prio,
						  .c = e->target_cpu,
						  .s1 = e->comm };
		if (e->kind == PD_WAKING)
			CHECK(e->success == 1, "a sched_waking with success %" PRId64, e->success);
	}
	*ret = rows;
	return n;
}

static void print_row(const char *what, const struct row *r)
{
	if (r->kind == PD_SWITCH)
		fprintf(stderr,
			"  %s: cpu %u ts %" PRIu64 " switch %" PRId64 " (%s, prio %" PRId64
			", state %#" PRIx64 ") -> %" PRId64 " (%s, prio %" PRId64 "), event pid %" PRId64
			"\n",
			what, r->cpu, r->ts, r->e, r->s1 ? r->s1 : "?", r->a, (uint64_t)r->b, r->c,
			r->s2 ? r->s2 : "?", r->d, r->pid);
	else
		fprintf(stderr,
			"  %s: cpu %u ts %" PRIu64 " waking of %" PRId64 " (%s, prio %" PRId64 ") by %" PRId64
			", target cpu %" PRId64 "\n",
			what, r->cpu, r->ts, r->a, r->s1 ? r->s1 : "?", r->b, r->pid, r->c);
}

struct result {
	size_t switches, wakings, compact_switches, compact_wakings, mismatches;
};

/* Exports snap, reads the trace back, compares one for one. */
static void round_trip(const char *proto_dir, const Hostprof__Snapshot *snap, const char *what,
		       struct result *res)
{
	const char *tmp = getenv("TMPDIR");
	struct row *want = NULL, *got = NULL;
	size_t nwant, ngot, shown = 0;
	struct pd_node *root = NULL;
	struct pd_sched sc = { 0 };
	char path[4096], *text = NULL;
	size_t len;
	FILE *f;
	int fd, r;

	memset(res, 0, sizeof(*res));
	snprintf(path, sizeof(path), "%s/test-perfetto-compact-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	fd = mkstemp(path);
	if (fd < 0 || !(f = fdopen(fd, "w"))) {
		fprintf(stderr, "cannot make %s: %s\n", path, strerror(errno));
		exit(1);
	}
	r = snapshot_export_perfetto(snap, f);
	fclose(f);
	CHECK(r == 0, "%s: export %d", what, r);
	r = r == 0 ? pd_run_protoc(proto_dir, path, &text, &len) : -1;
	unlink(path);
	CHECK(r == 0, "%s: protoc cannot decode the trace", what);
	if (r < 0)
		goto out;
	root = pd_tree_parse(text);
	CHECK(root, "%s: protoc output does not nest", what);
	if (!root)
		goto out;
	pd_read_sched(root, &sc);
	CHECK(sc.bad_columns == 0 && sc.disorder == 0 && sc.dropped == 0,
	      "%s: %zu bad compact columns, %zu events back in time, %zu compact events before their CPU's first "
	      "switch",
	      what, sc.bad_columns, sc.disorder, sc.dropped);

	nwant = expected_rows(snap, &want);
	ngot = decoded_rows(&sc, &got);
	qsort(want, nwant, sizeof(*want), cmp_row);
	qsort(got, ngot, sizeof(*got), cmp_row);
	CHECK(nwant == ngot, "%s: %zu switches and wakings in the snapshot, %zu in the trace", what, nwant,
	      ngot);
	for (size_t i = 0; i < MIN(nwant, ngot); i++) {
		if (!cmp_row(&want[i], &got[i]))
			continue;
		res->mismatches++;
		if (shown++ < 5) {
			fprintf(stderr, "%s: event %zu differs\n", what, i);
			print_row("snapshot", &want[i]);
			print_row("trace   ", &got[i]);
		}
	}
	CHECK(res->mismatches == 0, "%s: %zu of %zu events differ", what, res->mismatches, nwant);
	res->switches = sc.compact_switches + sc.full_switches;
	res->wakings = sc.compact_wakings + sc.full_wakings;
	res->compact_switches = sc.compact_switches;
	res->compact_wakings = sc.compact_wakings;
	printf("%s: %zu switches (%zu compact), %zu wakings (%zu compact), %zu bundles: all as in the snapshot\n",
	       what, res->switches, res->compact_switches, res->wakings, res->compact_wakings, sc.bundles);
out:
	free(want);
	free(got);
	pd_sched_free(&sc);
	pd_tree_free(root);
	free(text);
}

int main(int argc, char **argv)
{
	static struct gen g;
	struct result res;
	char fixture[4200];
	Hostprof__Snapshot *snap;
	int r;

	if (argc < 2) {
		fprintf(stderr, "usage: test-perfetto-compact PROTO_DIR [FILE.hps...]\n");
		return 1;
	}
	if (!pd_have_protoc()) {
		printf("SKIP: %s not found: the trace is read back with protoc (apt-get install protobuf-compiler)\n",
		       pd_protoc());
		return 77;
	}

	generate(&g);
	printf("generated: %zu switches, %zu wakings on %d CPUs; planted: %zu broken chains, %zu prio changes, "
	       "%zu renames, %zu events at the nanosecond of the one before, %zu odd wakers, %zu wakings of tasks that "
	       "never switched\n",
	       g.sw.n_ts_delta, g.wk.n_ts_delta, NCPUS, g.breaks, g.prio_changes, g.renames, g.ties,
	       g.odd_wakers, g.silent_wakes);
	CHECK(g.breaks && g.prio_changes && g.renames && g.ties && g.odd_wakers && g.silent_wakes,
	      "the generator planted every case");
	round_trip(argv[1], &g.snap, "generated", &res);
	/* what cannot be compact is a few percent of it */
	CHECK(res.compact_switches * 10 >= res.switches * 8 && res.compact_wakings * 10 >= res.wakings * 8,
	      "generated: only %zu of %zu switches and %zu of %zu wakings compact", res.compact_switches,
	      res.switches, res.compact_wakings, res.wakings);
	gen_free(&g);

	snprintf(fixture, sizeof(fixture), "%s/../fixtures/stall.hps", argv[1]);
	r = hps_read_file(fixture, &snap);
	CHECK(r == 0, "cannot read %s: %s", fixture, strerror(-r));
	if (r == 0) {
		round_trip(argv[1], snap, "stall.hps", &res);
		CHECK(res.switches == 13 && res.compact_switches == 11,
		      "stall.hps: %zu switches, %zu compact", res.switches, res.compact_switches);
		hps_free(snap);
	}

	for (int i = 2; i < argc; i++) {
		r = hps_read_file(argv[i], &snap);
		CHECK(r == 0, "cannot read %s: %s", argv[i], strerror(-r));
		if (r < 0)
			continue;
		round_trip(argv[1], snap, argv[i], &res);
		hps_free(snap);
	}

	if (failures) {
		printf("%d check(s) failed\n", failures);
		return 1;
	}
	printf("all checks passed\n");
	return 0;
}
