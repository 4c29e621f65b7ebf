// SPDX-License-Identifier: GPL-2.0-only
/*
 * merge-check PROTO_DIR MERGED.pftrace NODES [--planted W_NS] [--twin A:B:NS]...: reads a
 * trace of `hostprofctl merge` back the way a reader of the public protos does (protoc
 * --decode against tests/unit/perfetto_subset.proto, tests/unit/perfetto-decode.h) and
 * checks it, printing one line per check ("ok: ..." or "FAIL: ..."):
 *   - machines: every packet carries a machine_id, the ids are 1..NODES, each machine has
 *     its header ClockSnapshot (BOOTTIME and REALTIME) and one SystemInfo, and no sequence
 *     id is used by two machines;
 *   - --planted W: each machine holds one TrackEvent "planted" (tests/e2e/hps-node.c puts
 *     one at wall-clock instant W on each node's own clock); their times in the trace lie
 *     within 1 us of each other, and each machine's ClockSnapshot reads that time as W on
 *     REALTIME (within 1 us);
 *   - --twin A:B:NS: machine B's snapshot is a copy of machine A's whose REALTIME runs NS
 *     ahead: its scheduler events (compact_sched and full ones, completed as a reader
 *     does) are A's, one for one, each NS later in the trace (within 1 us);
 *   --gaps COMM PID,PID...: prints, per machine, "gaps MACHINE COUNT TOTAL_NS FIRST_TS
 *     FIRST_REALTIME FIRST_DUR": the gaps of 1 ms or more in the running of the threads named
 *     COMM of process PID (the Nth for machine N; the ProcessTree's tgid says whose), from
 *     each switch-out (but an exiting one, X or Z) to its next switch-in (or the end of the
 *     machine's "window" slice on
 *     its node track), as the trace's scheduler events show them; FIRST_REALTIME is the
 *     first one's time read on the machine's clock (the cross-node report's numbers,
 *     found another way);
 *   --episodes: prints, per machine, "episodes MACHINE COUNT TOTAL_NS FIRST_REALTIME
 *     FIRST_DUR": the slices of its "stall episodes" tracks (the report's stall episodes of
 *     the dispatch threads, as the exporter draws them), their duration_ns annotations.
 * Prints each machine's planted time and the spread. Exit 0 when every check passes, 1
 * otherwise (or when protoc cannot decode the file), 2 on usage.
 */
#include <stdarg.h>
#include <stdio.h>

#include "../unit/perfetto-decode.h"

#define TOLERANCE_NS 1000

static int fails;

static void check(bool cond, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void check(bool cond, const char *fmt, ...)
{
	va_list ap;

	fputs(cond ? "ok: " : "FAIL: ", stdout);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fails += !cond;
}

static uint64_t absdiff(uint64_t a, uint64_t b)
{
	return a > b ? a - b : b - a;
}

#define GAP_MIN_NS 1000000
#define NODE_TRACK_KIND UINT64_C(0x4850400000000000) /* lib/perfetto_internal.h: NODE_TRACK_UUID */

static int cmp_time(const void *x, const void *y)
{
	const struct pd_sched_ev *a = *(const struct pd_sched_ev *const *)x,
				 *b = *(const struct pd_sched_ev *const *)y;

	if (a->ts != b->ts)
		return a->ts < b->ts ? -1 : 1;
	return a->order < b->order ? -1 : a->order > b->order;
}

/* The tgid of tid on machine mi, from the ProcessTree packets; -1: not listed. */
static int64_t tgid_of(const struct pd_node *root, uint32_t mi, int64_t tid)
{
	for (const struct pd_node *pk = root->child; pk; pk = pk->next) {
		const struct pd_node *pt = pd_child(pk, "process_tree");

		if (!pt || pd_machine_of(pk) != mi)
			continue;
		for (const struct pd_node *c = pt->child; c; c = c->next)
			if (!strcmp(c->name, "threads") && pd_i64(c, "tid") == tid)
				return pd_i64(c, "tgid");
	}
	return -1;
}

static void print_gaps(const struct pd_node *root, const struct pd_sched *sc, const struct pd_tracks *tr,
		       const struct pd_machine *m, unsigned long nodes, const char *comm, const char *pids)
{
	for (uint32_t mi = 1; mi <= nodes; mi++) {
		const char *p = pids;
		int64_t pid;

		for (uint32_t k = 1; k < mi && p; k++)
			p = strchr(p, ','), p = p ? p + 1 : NULL;
		pid = p ? strtoll(p, NULL, 10) : -1;
		struct {
			int64_t tid;
			uint64_t out;
		} t[64];
		size_t nt = 0, count = 0;
		uint64_t total = 0, first = UINT64_MAX, first_dur = 0, end = 0;

		for (size_t i = 0; i < tr->n; i++)
			if (tr->ev[i].machine == mi &&
			    (tr->ev[i].uuid & ~((UINT64_C(1) << 44) - 1)) == NODE_TRACK_KIND &&
			    tr->ev[i].type && !strcmp(tr->ev[i].type, "TYPE_SLICE_END"))
				end = tr->ev[i].ts;
		/* by time across CPUs (the reader gives them by CPU, then time) */
		size_t nsw = 0;
		const struct pd_sched_ev **sw = pd_xcalloc(sc->n, sizeof(*sw));

		for (size_t i = 0; i < sc->n; i++)
			if (sc->ev[i].machine == mi && sc->ev[i].kind == PD_SWITCH)
				sw[nsw++] = &sc->ev[i];
		qsort(sw, nsw, sizeof(*sw), cmp_time);
		for (size_t si = 0; si < nsw; si++) {
			const struct pd_sched_ev *best = sw[si];

			if (best->prev_comm && !strcmp(best->prev_comm, comm) &&
			    tgid_of(root, mi, best->prev_pid) == pid) {
				size_t k;

				for (k = 0; k < nt && t[k].tid != best->prev_pid; k++)
					;
				if (k == nt && nt < 64)
					t[nt++] = (typeof(t[0])){ best->prev_pid, 0 };
				/* a task switched out dead (X, Z) has exited: no gap after it */
				if (k < nt)
					t[k].out = best->prev_state & 0x30 ? 0 : best->ts;
			}
			if (best->next_comm && !strcmp(best->next_comm, comm) &&
			    tgid_of(root, mi, best->next_pid) == pid) {
				for (size_t k = 0; k < nt; k++)
					if (t[k].tid == best->next_pid && t[k].out) {
						uint64_t d = best->ts - t[k].out;

						if (d >= GAP_MIN_NS) {
							count++;
							total += d;
							if (t[k].out < first)
								first = t[k].out, first_dur = d;
						}
						t[k].out = 0;
					}
			}
		}
		free(sw);
		for (size_t k = 0; k < nt; k++)
			if (t[k].out && end > t[k].out && end - t[k].out >= GAP_MIN_NS) {
				count++;
				total += end - t[k].out;
				if (t[k].out < first)
					first = t[k].out, first_dur = end - t[k].out;
			}
		printf("gaps %u %zu %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 "\n", mi, count, total,
		       first == UINT64_MAX ? 0 : first,
		       first == UINT64_MAX ? 0 : first - m[mi].boottime + m[mi].realtime, first_dur);
	}
}

#define EPISODES_TRACK_KIND UINT64_C(0x4850300000000000) /* EPISODES_TRACK_UUID */

static void print_episodes(const struct pd_tracks *tr, const struct pd_machine *m, unsigned long nodes)
{
	for (uint32_t mi = 1; mi <= nodes; mi++) {
		size_t count = 0;
		uint64_t total = 0, first = UINT64_MAX, first_dur = 0;

		for (size_t i = 0; i < tr->n; i++) {
			const struct pd_tev *ev = &tr->ev[i];
			const char *d;
			uint64_t dur;

			if (ev->machine != mi ||
			    (ev->uuid & ~((UINT64_C(1) << 44) - 1)) != EPISODES_TRACK_KIND || !ev->type ||
			    strcmp(ev->type, "TYPE_SLICE_BEGIN"))
				continue;
			d = pd_annotation(tr, ev, "duration_ns");
			dur = d ? strtoull(d, NULL, 10) : 0;
			count++;
			total += dur;
			if (ev->ts < first)
				first = ev->ts, first_dur = dur;
		}
		printf("episodes %u %zu %" PRIu64 " %" PRIu64 " %" PRIu64 "\n", mi, count, total,
		       first == UINT64_MAX ? 0 : first - m[mi].boottime + m[mi].realtime, first_dur);
	}
}

static void check_twin(const struct pd_sched *sc, uint32_t a, uint32_t b, int64_t ns)
{
	size_t ia = 0, ib = 0, na = 0, nb = 0, bad = 0;
	uint64_t worst = 0;

	for (size_t i = 0; i < sc->n; i++) {
		na += sc->ev[i].machine == a;
		nb += sc->ev[i].machine == b;
	}
	check(na == nb && na > 0, "machine %u has %zu scheduler events, machine %u %zu", b, nb, a, na);
	if (na != nb || !na)
		return;
	/* both runs are in (cpu, time, kind, file) order: walk them in step */
	for (;;) {
		while (ia < sc->n && sc->ev[ia].machine != a)
			ia++;
		while (ib < sc->n && sc->ev[ib].machine != b)
			ib++;
		if (ia == sc->n || ib == sc->n)
			break;
		const struct pd_sched_ev *x = &sc->ev[ia++], *y = &sc->ev[ib++];
		uint64_t d = absdiff(y->ts, (uint64_t)((int64_t)x->ts + ns));

		worst = d > worst ? d : worst;
		bad += d > TOLERANCE_NS || x->cpu != y->cpu || x->kind != y->kind ||
		       x->next_pid != y->next_pid || x->prev_pid != y->prev_pid;
	}
	check(bad == 0,
	      "machine %u's scheduler events are machine %u's, each %+" PRId64 " ns later (worst %" PRIu64
	      " ns off; %zu differ)",
	      b, a, ns, worst, bad);
}

int main(int argc, char **argv)
{
	struct pd_machine m[PD_MAX_MACHINES];
	struct pd_node *root;
	struct pd_tracks tr;
	struct pd_sched sc;
	char *text;
	size_t len, shared;
	uint64_t planted = 0;
	bool has_planted = false, episodes = false;
	const char *gaps_comm = NULL, *gaps_pids = NULL;
	unsigned long nodes;

	if (argc < 4) {
		fprintf(stderr,
			"usage: merge-check PROTO_DIR MERGED.pftrace NODES [--planted W_NS] [--twin A:B:NS]...\n");
		return 2;
	}
	nodes = strtoul(argv[3], NULL, 10);
	if (nodes < 1 || nodes >= PD_MAX_MACHINES) {
		fprintf(stderr, "merge-check: NODES must be 1..%d\n", PD_MAX_MACHINES - 1);
		return 2;
	}
	if (pd_run_protoc(argv[1], argv[2], &text, &len) < 0)
		return 1;
	root = pd_tree_parse(text);
	if (!root) {
		fprintf(stderr, "merge-check: protoc output does not nest\n");
		return 1;
	}

	pd_read_machines(root, m, &shared);
	check(m[0].packets == 0, "every packet names its machine (%zu without machine_id)", m[0].packets);
	for (uint32_t i = 1; i < PD_MAX_MACHINES; i++) {
		if (i > nodes) {
			if (m[i].seen)
				check(false, "no machine %u: %zu packets", i, m[i].packets);
			continue;
		}
		check(m[i].seen && m[i].boottime != UINT64_MAX && m[i].realtime != UINT64_MAX &&
			      m[i].system_infos == 1,
		      "machine %u: %zu packets, sequences %" PRIu64 "..%" PRIu64
		      ", ClockSnapshot BOOTTIME %" PRIu64 " REALTIME %" PRIu64 ", %zu SystemInfo (%s %s)",
		      i, m[i].packets, m[i].seq_min, m[i].seq_max, m[i].boottime, m[i].realtime,
		      m[i].system_infos, m[i].sysname ? m[i].sysname : "?",
		      m[i].release ? m[i].release : "?");
	}
	check(shared == 0, "no sequence id is used by two machines (%zu are)", shared);

	pd_read_tracks(root, &tr);
	pd_read_sched(root, &sc);
	check(tr.unresolved == 0 && sc.bad_columns == 0 && sc.dropped == 0,
	      "every event reads back (%zu unresolved, %zu bad compact columns, %zu dropped)", tr.unresolved,
	      sc.bad_columns, sc.dropped);

	for (int i = 4; i < argc; i++) {
		if (!strcmp(argv[i], "--planted") && i + 1 < argc) {
			planted = strtoull(argv[++i], NULL, 10);
			has_planted = true;
		} else if (!strcmp(argv[i], "--twin") && i + 1 < argc) {
			unsigned a, b;
			long long ns;

			if (sscanf(argv[++i], "%u:%u:%lld", &a, &b, &ns) != 3 || a >= PD_MAX_MACHINES ||
			    b >= PD_MAX_MACHINES) {
				fprintf(stderr, "merge-check: --twin A:B:NS\n");
				return 2;
			}
			check_twin(&sc, a, b, ns);
		} else if (!strcmp(argv[i], "--episodes")) {
			episodes = true;
		} else if (!strcmp(argv[i], "--gaps") && i + 2 < argc) {
			gaps_comm = argv[++i];
			gaps_pids = argv[++i];
		} else {
			fprintf(stderr, "merge-check: unknown argument %s\n", argv[i]);
			return 2;
		}
	}

	if (has_planted) {
		uint64_t at[PD_MAX_MACHINES] = { 0 }, lo = UINT64_MAX, hi = 0;
		size_t count[PD_MAX_MACHINES] = { 0 };

		for (size_t i = 0; i < tr.n; i++)
			if (tr.ev[i].name && !strcmp(tr.ev[i].name, "planted")) {
				count[tr.ev[i].machine]++;
				at[tr.ev[i].machine] = tr.ev[i].ts;
			}
		for (uint32_t i = 1; i <= nodes; i++) {
			uint64_t wall = at[i] - m[i].boottime + m[i].realtime;

			check(count[i] == 1, "machine %u has %zu planted events, at %" PRIu64 " in the trace",
			      i, count[i], at[i]);
			if (count[i] != 1)
				continue;
			lo = at[i] < lo ? at[i] : lo;
			hi = at[i] > hi ? at[i] : hi;
			check(absdiff(wall, planted) <= TOLERANCE_NS,
			      "machine %u's clock reads its planted event at REALTIME %" PRIu64 " (%+" PRId64
			      " ns from the instant planted)",
			      i, wall, (int64_t)(wall - planted));
		}
		check(lo != UINT64_MAX && hi - lo <= TOLERANCE_NS,
		      "the planted events of the %lu machines lie within %" PRIu64
		      " ns of each other in the trace",
		      nodes, lo == UINT64_MAX ? 0 : hi - lo);
	}

	if (episodes)
		print_episodes(&tr, m, nodes);
	if (gaps_comm)
		print_gaps(root, &sc, &tr, m, nodes, gaps_comm, gaps_pids);

	pd_sched_free(&sc);
	pd_tracks_free(&tr);
	pd_tree_free(root);
	free(text);
	return fails ? 1 : 0;
}
