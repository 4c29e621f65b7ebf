// SPDX-License-Identifier: GPL-2.0-only
/*
 * Unit test of lib/hps.c, the .hps snapshot file.
 *
 * 1. A snapshot built by hand (strings, host, clock, a process, threads, a sched_switch
 *    table, stats) survives hps_pack → hps_unpack, and a file → hps_read_file, field by field.
 * 2. hps_switch_times accumulates start_ns and the deltas.
 * 3. Rejections, with the output left untouched: wrong magic, short and truncated data,
 *    every column one entry short or long, string indices out of range, a directory,
 *    a missing file, an oversized (sparse) file.
 * 4. The interference tables (IrqTable, ReclaimTable, FaultTable, LockTable): a consistent
 *    set round-trips; each column of each table one entry short, a string or stack index
 *    out of range and an end past 2^64 are rejected, by hps_unpack and by hps_validate.
 * 5. The GIL table: a consistent one round-trips; each row column one short, a holder
 *    stack or a stack's frame past its table, an end past 2^64 are rejected.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "hps.h"
#include "macro.h"

#define NEV 6
#define START_NS 1000000000000ULL
#define LAST_TS (START_NS + 5 + 10 + 1000 + (1ULL << 32) + 7) /* start + sum(ts_delta) */

static char *strings[] = { "", "main", "acl_thread", "kworker/0:1", "h\xc3\xa9llo" };
static uint64_t ts_delta[NEV] = { 5, 10, 0, 1000, 1ULL << 32, 7 };
static uint32_t cpu[NEV] = { 0, 1, 1, 63, 0, 2 };
static uint32_t prev_tid[NEV] = { 100, 101, 0, 100, 4194304, 101 };
static uint32_t prev_pid[NEV] = { 100, 100, 0, 100, 4194304, 100 };
static uint32_t prev_comm[NEV] = { 1, 2, 0, 1, 3, 4 };
static int32_t prev_prio[NEV] = { 120, 0, 139, -1, 99, 100 };
static uint32_t prev_state[NEV] = { 0, 1, 2, 0x100, 0x80, 0x40 };
static uint32_t next_tid[NEV] = { 101, 0, 100, 200, 100, 100 };
static uint32_t next_pid[NEV] = { 100, 0, 100, 200, 100, 100 };
static uint32_t next_comm[NEV] = { 2, 0, 1, 3, 1, 1 };
static int32_t next_prio[NEV] = { 120, 120, 120, 49, 120, -100 };

/* Everything a snapshot holds, with the pieces it points to. */
struct scene {
	Hostprof__Snapshot snap;
	Hostprof__HostInfo host;
	Hostprof__ClockAnchor clock;
	Hostprof__Process proc, *procp;
	Hostprof__Thread thr[2], *thrp[2];
	Hostprof__SchedSwitchTable sw;
	Hostprof__CaptureStats stats;
	Hostprof__Drop drop[2], *dropp[2];
	char *cmdline[3];
	/* private copies of the columns, for the tests that break them */
	uint64_t ts_delta[NEV + 1];
	uint32_t cpu[NEV + 1], prev_tid[NEV + 1], prev_pid[NEV + 1], prev_comm[NEV + 1];
	int32_t prev_prio[NEV + 1];
	uint32_t prev_state[NEV + 1], next_tid[NEV + 1], next_pid[NEV + 1], next_comm[NEV + 1];
	int32_t next_prio[NEV + 1];
};

#define COPY_COLUMN(s, name)                                                   \
	do {                                                                   \
		memcpy((s)->name, name, sizeof(name));                         \
		(s)->name[NEV] = 0;                                            \
		(s)->sw.n_##name = NEV;                                        \
		(s)->sw.name = (s)->name;                                      \
	} while (0)

static void scene_init(struct scene *s)
{
	memset(s, 0, sizeof(*s));
	s->snap = (Hostprof__Snapshot)HOSTPROF__SNAPSHOT__INIT;
	s->host = (Hostprof__HostInfo)HOSTPROF__HOST_INFO__INIT;
	s->clock = (Hostprof__ClockAnchor)HOSTPROF__CLOCK_ANCHOR__INIT;
	s->proc = (Hostprof__Process)HOSTPROF__PROCESS__INIT;
	s->thr[0] = (Hostprof__Thread)HOSTPROF__THREAD__INIT;
	s->thr[1] = (Hostprof__Thread)HOSTPROF__THREAD__INIT;
	s->sw = (Hostprof__SchedSwitchTable)HOSTPROF__SCHED_SWITCH_TABLE__INIT;
	s->stats = (Hostprof__CaptureStats)HOSTPROF__CAPTURE_STATS__INIT;
	s->drop[0] = (Hostprof__Drop)HOSTPROF__DROP__INIT;
	s->drop[1] = (Hostprof__Drop)HOSTPROF__DROP__INIT;

	s->host.hostname = "node-7";
	s->host.sysname = "Linux";
	s->host.kernel_release = "6.1.0-18-amd64";
	s->host.kernel_version = "#1 SMP PREEMPT_DYNAMIC Debian 6.1.76-1";
	s->host.machine = "x86_64";
	s->host.has_ncpus = 1;
	s->host.ncpus = 64;
	s->clock.has_boottime_ns = 1;
	s->clock.boottime_ns = START_NS;
	s->clock.has_realtime_ns = 1;
	s->clock.realtime_ns = 1700000000000000000ULL;
	s->clock.has_monotonic_ns = 1;
	s->clock.monotonic_ns = START_NS - 5;

	s->cmdline[0] = "/usr/bin/server";
	s->cmdline[1] = "--port=80";
	s->cmdline[2] = "";
	s->proc.has_pid = 1;
	s->proc.pid = 100;
	s->proc.has_ppid = 1;
	s->proc.ppid = 1;
	s->proc.comm = "main";
	s->proc.n_cmdline = 3;
	s->proc.cmdline = s->cmdline;
	s->proc.has_start_time = 1;
	s->proc.start_time = 123456;
	s->proc.has_uid = 1;
	s->proc.uid = 0;
	s->procp = &s->proc;

	s->thr[0].has_tid = 1;
	s->thr[0].tid = 100;
	s->thr[0].has_pid = 1;
	s->thr[0].pid = 100;
	s->thr[0].comm = "main";
	s->thr[1].has_tid = 1;
	s->thr[1].tid = 101;
	s->thr[1].has_pid = 1;
	s->thr[1].pid = 100;
	s->thr[1].comm = "acl_thread";
	s->thrp[0] = &s->thr[0];
	s->thrp[1] = &s->thr[1];

	COPY_COLUMN(s, ts_delta);
	COPY_COLUMN(s, cpu);
	COPY_COLUMN(s, prev_tid);
	COPY_COLUMN(s, prev_pid);
	COPY_COLUMN(s, prev_comm);
	COPY_COLUMN(s, prev_prio);
	COPY_COLUMN(s, prev_state);
	COPY_COLUMN(s, next_tid);
	COPY_COLUMN(s, next_pid);
	COPY_COLUMN(s, next_comm);
	COPY_COLUMN(s, next_prio);

	s->drop[0].cause = "ring_full";
	s->drop[0].has_count = 1;
	s->drop[0].count = 3;
	s->drop[1].cause = "map_full";
	s->drop[1].has_count = 1;
	s->drop[1].count = 0;
	s->dropp[0] = &s->drop[0];
	s->dropp[1] = &s->drop[1];
	s->stats.has_events = 1;
	s->stats.events = NEV;
	s->stats.has_events_total = 1;
	s->stats.events_total = 1ULL << 33;
	s->stats.n_drops = 2;
	s->stats.drops = s->dropp;
	s->stats.has_evicted = 1;
	s->stats.evicted = 11;

	s->snap.has_format_version = 1;
	s->snap.format_version = HPS_FORMAT_VERSION;
	s->snap.producer = "hostprofd 0.1.0";
	s->snap.host = &s->host;
	s->snap.clock = &s->clock;
	s->snap.has_start_ns = 1;
	s->snap.start_ns = START_NS;
	s->snap.has_end_ns = 1;
	s->snap.end_ns = START_NS + 60 * 1000000000ULL;
	s->snap.has_pid = 1;
	s->snap.pid = 100;
	s->snap.reason = "request";
	s->snap.n_strings = ARRAY_SIZE(strings);
	s->snap.strings = strings;
	s->snap.n_processes = 1;
	s->snap.processes = &s->procp;
	s->snap.n_threads = 2;
	s->snap.threads = s->thrp;
	s->snap.switches = &s->sw;
	s->snap.stats = &s->stats;
}

#define CHECK_COLUMN(t, name)                                                          \
	do {                                                                           \
		CHECK_EQ_U64((t)->n_##name, NEV);                                      \
		if ((t)->n_##name == NEV)                                              \
			CHECK_MEM((t)->name, name, sizeof(name));                      \
	} while (0)

/* Every field of a snapshot made from scene_init(). */
static void check_scene(const Hostprof__Snapshot *s)
{
	const Hostprof__SchedSwitchTable *t = s->switches;

	CHECK(s->has_format_version);
	CHECK_EQ_U64(s->format_version, HPS_FORMAT_VERSION);
	CHECK_STR(s->producer, "hostprofd 0.1.0");
	CHECK(s->host != NULL);
	if (s->host) {
		CHECK_STR(s->host->hostname, "node-7");
		CHECK_STR(s->host->sysname, "Linux");
		CHECK_STR(s->host->kernel_release, "6.1.0-18-amd64");
		CHECK_STR(s->host->kernel_version, "#1 SMP PREEMPT_DYNAMIC Debian 6.1.76-1");
		CHECK_STR(s->host->machine, "x86_64");
		CHECK_EQ_U64(s->host->ncpus, 64);
	}
	CHECK(s->clock != NULL);
	if (s->clock) {
		CHECK_EQ_U64(s->clock->boottime_ns, START_NS);
		CHECK_EQ_U64(s->clock->realtime_ns, 1700000000000000000ULL);
		CHECK_EQ_U64(s->clock->monotonic_ns, START_NS - 5);
	}
	CHECK_EQ_U64(s->start_ns, START_NS);
	CHECK_EQ_U64(s->end_ns, START_NS + 60 * 1000000000ULL);
	CHECK_EQ_U64(s->pid, 100);
	CHECK_STR(s->reason, "request");

	CHECK_EQ_U64(s->n_strings, ARRAY_SIZE(strings));
	for (size_t i = 0; i < s->n_strings && i < ARRAY_SIZE(strings); i++)
		CHECK_STR(s->strings[i], strings[i]);
	CHECK_STR(hps_str(s, 2), "acl_thread");
	CHECK_STR(hps_str(s, ARRAY_SIZE(strings)), "");
	CHECK_STR(hps_str(s, UINT32_MAX), "");

	CHECK_EQ_U64(s->n_processes, 1);
	if (s->n_processes == 1) {
		const Hostprof__Process *p = s->processes[0];

		CHECK_EQ_U64(p->pid, 100);
		CHECK_EQ_U64(p->ppid, 1);
		CHECK_STR(p->comm, "main");
		CHECK_EQ_U64(p->n_cmdline, 3);
		if (p->n_cmdline == 3) {
			CHECK_STR(p->cmdline[0], "/usr/bin/server");
			CHECK_STR(p->cmdline[1], "--port=80");
			CHECK_STR(p->cmdline[2], "");
		}
		CHECK_EQ_U64(p->start_time, 123456);
		CHECK(p->has_uid);
		CHECK_EQ_U64(p->uid, 0);
		CHECK(!p->has_exit_ns);
	}
	CHECK_EQ_U64(s->n_threads, 2);
	if (s->n_threads == 2) {
		CHECK_EQ_U64(s->threads[0]->tid, 100);
		CHECK_STR(s->threads[0]->comm, "main");
		CHECK_EQ_U64(s->threads[1]->tid, 101);
		CHECK_EQ_U64(s->threads[1]->pid, 100);
		CHECK_STR(s->threads[1]->comm, "acl_thread");
	}

	CHECK(t != NULL);
	if (t) {
		CHECK_COLUMN(t, ts_delta);
		CHECK_COLUMN(t, cpu);
		CHECK_COLUMN(t, prev_tid);
		CHECK_COLUMN(t, prev_pid);
		CHECK_COLUMN(t, prev_comm);
		CHECK_COLUMN(t, prev_prio);
		CHECK_COLUMN(t, prev_state);
		CHECK_COLUMN(t, next_tid);
		CHECK_COLUMN(t, next_pid);
		CHECK_COLUMN(t, next_comm);
		CHECK_COLUMN(t, next_prio);
	}

	CHECK(s->stats != NULL);
	if (s->stats) {
		CHECK_EQ_U64(s->stats->events, NEV);
		CHECK_EQ_U64(s->stats->events_total, 1ULL << 33);
		CHECK_EQ_U64(s->stats->evicted, 11);
		CHECK_EQ_U64(s->stats->n_drops, 2);
		if (s->stats->n_drops == 2) {
			CHECK_STR(s->stats->drops[0]->cause, "ring_full");
			CHECK_EQ_U64(s->stats->drops[0]->count, 3);
			CHECK_STR(s->stats->drops[1]->cause, "map_full");
			CHECK(s->stats->drops[1]->has_count);
			CHECK_EQ_U64(s->stats->drops[1]->count, 0);
		}
	}
}

/* hps_unpack of the packed scene; the return value of hps_unpack. */
static int pack_unpack(const struct scene *sc, Hostprof__Snapshot **ret)
{
	uint8_t *data = NULL;
	size_t len = 0;
	int r;

	r = hps_pack(&sc->snap, &data, &len);
	CHECK_EQ_INT(r, 0);
	if (r < 0)
		return r;
	r = hps_unpack(data, len, ret);
	free(data);
	return r;
}

static Hostprof__Snapshot *const UNTOUCHED = (Hostprof__Snapshot *)0x1;

/* Expect hps_unpack to refuse the packed scene, and to leave the output alone. */
static void expect_rejected(const struct scene *sc, const char *what)
{
	Hostprof__Snapshot *s = UNTOUCHED;
	int r = pack_unpack(sc, &s);

	CHECKF(r == -EBADMSG, "%s: hps_unpack = %d, want -EBADMSG", what, r);
	CHECKF(s == UNTOUCHED, "%s: output written on failure", what);
	if (r == 0 && s != UNTOUCHED)
		hps_free(s);
}

static void test_round_trip(void)
{
	struct scene sc;
	Hostprof__Snapshot *s = NULL;
	uint8_t *data = NULL;
	size_t len = 0;

	scene_init(&sc);
	CHECK_EQ_INT(hps_pack(&sc.snap, &data, &len), 0);
	CHECK(len > HPS_MAGIC_LEN);
	CHECK_EQ_U64(len, HPS_MAGIC_LEN + protobuf_c_message_get_packed_size(&sc.snap.base));
	if (data) {
		CHECK_MEM(data, "HPSNAP01", 8);
		CHECK_EQ_INT(hps_unpack(data, len, &s), 0);
		if (s) {
			check_scene(s);
			hps_free(s);
		}
	}
	free(data);

	/* just the magic: an empty snapshot */
	s = NULL;
	CHECK_EQ_INT(hps_unpack((const uint8_t *)HPS_MAGIC, HPS_MAGIC_LEN, &s), 0);
	if (s) {
		CHECK(s->switches == NULL);
		CHECK_EQ_U64(s->n_strings, 0);
		CHECK(!s->has_start_ns);
		hps_free(s);
	}
	hps_free(NULL);

	/* an empty table is consistent */
	scene_init(&sc);
	sc.sw = (Hostprof__SchedSwitchTable)HOSTPROF__SCHED_SWITCH_TABLE__INIT;
	s = NULL;
	CHECK_EQ_INT(pack_unpack(&sc, &s), 0);
	if (s) {
		CHECK(s->switches != NULL);
		if (s->switches)
			CHECK_EQ_U64(s->switches->n_ts_delta, 0);
		hps_free(s);
	}

	/* the last string is the highest index allowed */
	scene_init(&sc);
	sc.prev_comm[0] = ARRAY_SIZE(strings) - 1;
	sc.next_comm[NEV - 1] = ARRAY_SIZE(strings) - 1;
	s = NULL;
	CHECK_EQ_INT(pack_unpack(&sc, &s), 0);
	hps_free(s);
}

/* hps_peek: the summary's fields as hps_unpack reads them, the names it holds, and bytes
 * that end early or are not a snapshot's */
static void test_peek(void)
{
	struct scene sc;
	Hostprof__Snapshot *s = NULL;
	struct hps_peek pk;
	uint8_t *data = NULL;
	size_t len = 0, ok = 0, bad = 0;

	scene_init(&sc);
	sc.thr[0].comm = "listed_only"; /* a Thread.comm, in no string of the table */
	CHECK_EQ_INT(hps_pack(&sc.snap, &data, &len), 0);
	if (!data)
		return;
	CHECK_EQ_INT(hps_unpack(data, len, &s), 0);
	CHECK_EQ_INT(hps_peek(data, len, "acl_thread", &pk), 0);
	if (s) {
		CHECK_EQ_U64(pk.pid, s->pid);
		CHECK_EQ_U64(pk.start_ns, s->start_ns);
		CHECK_EQ_U64(pk.end_ns, s->end_ns);
		CHECK_EQ_U64(pk.n_threads, s->n_threads);
		CHECK(pk.n_threads == 2);
		hps_free(s);
	}
	CHECK(pk.named);
	CHECK_EQ_INT(hps_peek(data, len, "listed_only", &pk), 0);
	CHECK(pk.named);
	CHECK_EQ_INT(hps_peek(data, len, "kworker/*", &pk), 0); /* a string of the table */
	CHECK(pk.named);
	CHECK_EQ_INT(hps_peek(data, len, "nosuchthread", &pk), 0);
	CHECK(!pk.named);
	CHECK_EQ_INT(hps_peek(data, len, "*", &pk), 0); /* strings[0], "", matches */
	CHECK(pk.named);
	/* every shorter length: a field cut off is -EBADMSG, one that ends between fields
	 * reads as far as it goes; never past the bytes (ASan) */
	for (size_t n = 0; n < len; n++) {
		int r = hps_peek(data, n, "acl_thread", &pk);

		CHECKF(r == 0 || r == -EBADMSG, "%zu bytes: %d", n, r);
		if (r == 0)
			ok++;
		else
			bad++;
	}
	CHECK(bad > 0 && ok > 0);
	CHECK_EQ_INT(hps_peek(data, HPS_MAGIC_LEN - 1, "acl_thread", &pk), -EBADMSG);
	data[0] = 'X';
	CHECK_EQ_INT(hps_peek(data, len, "acl_thread", &pk), -EBADMSG);
	free(data);
}

static void test_switch_times(void)
{
	struct scene sc;
	uint64_t *ts = NULL, want = START_NS;

	scene_init(&sc);
	CHECK_EQ_INT(hps_switch_times(&sc.snap, &ts), 0);
	if (ts) {
		for (int i = 0; i < NEV; i++) {
			want += ts_delta[i];
			CHECKF(ts[i] == want, "ts[%d] = %" PRIu64 ", want %" PRIu64, i, ts[i],
			       want);
		}
		CHECK_EQ_U64(ts[0], START_NS + 5);
		CHECK_EQ_U64(ts[2], ts[1]);
		CHECK_EQ_U64(ts[NEV - 1], LAST_TS);
	}
	free(ts);

	/* after a round trip too */
	{
		Hostprof__Snapshot *s = NULL;

		CHECK_EQ_INT(pack_unpack(&sc, &s), 0);
		if (s) {
			ts = NULL;
			CHECK_EQ_INT(hps_switch_times(s, &ts), 0);
			if (ts)
				CHECK_EQ_U64(ts[NEV - 1], LAST_TS);
			free(ts);
			hps_free(s);
		}
	}

	/* no table, and a start of 0: an empty (but freeable) array */
	sc.snap.switches = NULL;
	ts = NULL;
	CHECK_EQ_INT(hps_switch_times(&sc.snap, &ts), 0);
	CHECK(ts != NULL);
	free(ts);

	scene_init(&sc);
	sc.snap.has_start_ns = 0;
	sc.snap.start_ns = 0;
	ts = NULL;
	CHECK_EQ_INT(hps_switch_times(&sc.snap, &ts), 0);
	if (ts)
		CHECK_EQ_U64(ts[0], 5);
	free(ts);
}

/* Each column, one short and one long, in turn. */
static void test_columns(void)
{
	static const char *const names[] = {
		"ts_delta", "cpu", "prev_tid", "prev_pid", "prev_comm", "prev_prio",
		"prev_state", "next_tid", "next_pid", "next_comm", "next_prio",
	};

	for (size_t c = 0; c < ARRAY_SIZE(names); c++) {
		for (int delta = -1; delta <= 1; delta += 2) {
			struct scene sc;
			size_t *n[] = {
				&sc.sw.n_ts_delta, &sc.sw.n_cpu, &sc.sw.n_prev_tid,
				&sc.sw.n_prev_pid, &sc.sw.n_prev_comm, &sc.sw.n_prev_prio,
				&sc.sw.n_prev_state, &sc.sw.n_next_tid, &sc.sw.n_next_pid,
				&sc.sw.n_next_comm, &sc.sw.n_next_prio,
			};
			char what[64];

			scene_init(&sc);
			*n[c] += delta;
			snprintf(what, sizeof(what), "%s has %zu entries of %d", names[c], *n[c],
				 NEV);
			expect_rejected(&sc, what);
		}
	}

	/* only one column, the others empty */
	{
		struct scene sc;

		scene_init(&sc);
		sc.sw = (Hostprof__SchedSwitchTable)HOSTPROF__SCHED_SWITCH_TABLE__INIT;
		sc.sw.n_next_prio = NEV;
		sc.sw.next_prio = sc.next_prio;
		expect_rejected(&sc, "next_prio alone");
		sc.sw = (Hostprof__SchedSwitchTable)HOSTPROF__SCHED_SWITCH_TABLE__INIT;
		sc.sw.n_ts_delta = NEV;
		sc.sw.ts_delta = sc.ts_delta;
		expect_rejected(&sc, "ts_delta alone");
	}
}

static void test_string_index(void)
{
	static const uint32_t bad[] = {
		ARRAY_SIZE(strings),
		ARRAY_SIZE(strings) + 100,
		UINT32_MAX,
	};

	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		for (int at = 0; at < NEV; at += NEV - 1) {
			struct scene sc;
			char what[64];

			scene_init(&sc);
			sc.prev_comm[at] = bad[i];
			snprintf(what, sizeof(what), "prev_comm[%d] = %u", at, bad[i]);
			expect_rejected(&sc, what);

			scene_init(&sc);
			sc.next_comm[at] = bad[i];
			snprintf(what, sizeof(what), "next_comm[%d] = %u", at, bad[i]);
			expect_rejected(&sc, what);
		}
	}

	/* events but no string table at all: even index 0 is out of range */
	{
		struct scene sc;

		scene_init(&sc);
		for (int i = 0; i < NEV; i++)
			sc.prev_comm[i] = sc.next_comm[i] = 0;
		sc.snap.n_strings = 0;
		sc.snap.strings = NULL;
		expect_rejected(&sc, "no strings");
	}
}

static void test_bad_bytes(void)
{
	struct scene sc;
	Hostprof__Snapshot *s;
	uint8_t *data = NULL, garbage[64];
	size_t len = 0, accepted = 0;
	int r;

	scene_init(&sc);
	CHECK_EQ_INT(hps_pack(&sc.snap, &data, &len), 0);
	if (!data)
		return;

	/* wrong magic, in each of its bytes */
	for (size_t i = 0; i < HPS_MAGIC_LEN; i++) {
		data[i] ^= 0x20;
		s = UNTOUCHED;
		r = hps_unpack(data, len, &s);
		CHECKF(r == -EBADMSG && s == UNTOUCHED, "magic byte %zu changed: %d", i, r);
		data[i] ^= 0x20;
	}

	/* shorter than the magic */
	for (size_t l = 0; l < HPS_MAGIC_LEN; l++) {
		s = UNTOUCHED;
		r = hps_unpack(data, l, &s);
		CHECKF(r == -EBADMSG && s == UNTOUCHED, "%zu bytes: %d", l, r);
	}

	/* cut inside the last field */
	s = UNTOUCHED;
	CHECK_EQ_INT(hps_unpack(data, len - 1, &s), -EBADMSG);
	CHECK(s == UNTOUCHED);

	/* cut anywhere: never a crash, and what is accepted is consistent */
	for (size_t l = HPS_MAGIC_LEN; l < len; l++) {
		s = NULL;
		r = hps_unpack(data, l, &s);
		CHECKF(r == 0 || r == -EBADMSG, "cut at %zu: %d", l, r);
		if (r == 0) {
			const Hostprof__SchedSwitchTable *t = s->switches;

			accepted++;
			if (t)
				CHECKF(t->n_cpu == t->n_ts_delta && t->n_next_prio == t->n_ts_delta,
				       "cut at %zu: inconsistent columns accepted", l);
			hps_free(s);
		}
	}
	printf("truncation: %zu of %zu cuts end on a field boundary and are accepted\n", accepted,
	       len - HPS_MAGIC_LEN);
	CHECK(accepted < (len - HPS_MAGIC_LEN) / 4);

	/* garbage after the magic */
	memcpy(garbage, HPS_MAGIC, HPS_MAGIC_LEN);
	memset(garbage + HPS_MAGIC_LEN, 0xff, sizeof(garbage) - HPS_MAGIC_LEN);
	s = UNTOUCHED;
	CHECK_EQ_INT(hps_unpack(garbage, sizeof(garbage), &s), -EBADMSG);
	CHECK(s == UNTOUCHED);
	free(data);
}

static int write_file(const char *path, const void *p, size_t n)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	ssize_t w;

	if (fd < 0)
		return -errno;
	w = write(fd, p, n);
	close(fd);
	return w == (ssize_t)n ? 0 : -EIO;
}

static void test_files(void)
{
	char dir[] = "/tmp/test-hps.XXXXXX";
	char path[128], missing[128], big[128];
	struct scene sc;
	Hostprof__Snapshot *s;
	uint8_t *data = NULL;
	size_t len = 0;
	int fd, r;

	if (!mkdtemp(dir)) {
		CHECKF(false, "mkdtemp: %m");
		return;
	}
	snprintf(path, sizeof(path), "%s/snap.hps", dir);
	snprintf(missing, sizeof(missing), "%s/missing.hps", dir);
	snprintf(big, sizeof(big), "%s/big.hps", dir);

	scene_init(&sc);
	CHECK_EQ_INT(hps_pack(&sc.snap, &data, &len), 0);
	CHECK_EQ_INT(write_file(path, data, len), 0);
	s = NULL;
	CHECK_EQ_INT(hps_read_file(path, &s), 0);
	if (s) {
		check_scene(s);
		hps_free(s);
	}

	/* the file cut short, then with its magic broken, then empty */
	CHECK_EQ_INT(write_file(path, data, len - 1), 0);
	s = UNTOUCHED;
	CHECK_EQ_INT(hps_read_file(path, &s), -EBADMSG);
	CHECK(s == UNTOUCHED);
	data[7] = '2';
	CHECK_EQ_INT(write_file(path, data, len), 0);
	CHECK_EQ_INT(hps_read_file(path, &s), -EBADMSG);
	CHECK(s == UNTOUCHED);
	CHECK_EQ_INT(write_file(path, "", 0), 0);
	CHECK_EQ_INT(hps_read_file(path, &s), -EBADMSG);
	CHECK(s == UNTOUCHED);
	free(data);

	/* not a file, no file */
	r = hps_read_file(dir, &s);
	CHECKF(r == -EINVAL || r == -EISDIR, "a directory: %d", r);
	CHECK(s == UNTOUCHED);
	CHECK_EQ_INT(hps_read_file(missing, &s), -ENOENT);
	CHECK(s == UNTOUCHED);
	CHECK_EQ_INT(hps_read_file("", &s), -ENOENT);
	CHECK(s == UNTOUCHED);

	/* larger than a reader accepts: refused from its size, before reading (sparse file) */
	fd = open(big, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	CHECK(fd >= 0);
	if (fd >= 0) {
		if (ftruncate(fd, HPS_MAX_FILE + 1) == 0) {
			CHECK_EQ_INT(hps_read_file(big, &s), -EFBIG);
			CHECK(s == UNTOUCHED);
		} else {
			printf("ftruncate to %llu bytes: %m; skipping the oversized file check\n",
			       HPS_MAX_FILE + 1);
		}
		close(fd);
	}

	unlink(big);
	unlink(path);
	CHECK_EQ_INT(rmdir(dir), 0);
}

/* ---- 4. Interference tables ----------------------------------------------------------- */

#define NINT 2

/* The scene with two rows in each interference table, and one kernel stack. */
struct intf {
	struct scene sc;
	Hostprof__IrqTable irq;
	Hostprof__ReclaimTable rc;
	Hostprof__FaultTable ft;
	Hostprof__LockTable lk;
	Hostprof__Stack stack, *stackp;
	Hostprof__Frame frame, *framep;
	uint32_t frames[1];
	uint64_t irq_ts[NINT], irq_dur[NINT];
	uint32_t irq_cpu[NINT], irq_kind[NINT], irq_num[NINT], irq_name[NINT], irq_tid[NINT], irq_pid[NINT],
		irq_flags[NINT];
	uint64_t rc_ts[NINT], rc_dur[NINT];
	uint32_t rc_tid[NINT], rc_pid[NINT], rc_kind[NINT], rc_gfp[NINT], rc_cpu[NINT];
	int32_t rc_order[NINT];
	int64_t rc_result[NINT];
	uint64_t ft_ts[NINT], ft_dur[NINT];
	uint32_t ft_tid[NINT], ft_pid[NINT], ft_faults[NINT], ft_write[NINT], ft_exec[NINT], ft_prot[NINT],
		ft_minor[NINT], ft_major[NINT];
	uint64_t lk_ts[NINT], lk_dur[NINT], lk_lock[NINT];
	uint32_t lk_tid[NINT], lk_pid[NINT], lk_flags[NINT], lk_kstack[NINT], lk_cpu[NINT], lk_name[NINT];
	int32_t lk_ret[NINT];
};

#define INTF_COLUMN(table, col, arr, a, b)                       \
	do {                                                     \
		(arr)[0] = (a);                                  \
		(arr)[1] = (b);                                  \
		(table)->n_##col = NINT;                         \
		(table)->col = (arr);                            \
	} while (0)

static void intf_init(struct intf *f)
{
	memset(f, 0, sizeof(*f));
	scene_init(&f->sc);
	f->irq = (Hostprof__IrqTable)HOSTPROF__IRQ_TABLE__INIT;
	f->rc = (Hostprof__ReclaimTable)HOSTPROF__RECLAIM_TABLE__INIT;
	f->ft = (Hostprof__FaultTable)HOSTPROF__FAULT_TABLE__INIT;
	f->lk = (Hostprof__LockTable)HOSTPROF__LOCK_TABLE__INIT;
	f->stack = (Hostprof__Stack)HOSTPROF__STACK__INIT;
	f->frame = (Hostprof__Frame)HOSTPROF__FRAME__INIT;

	INTF_COLUMN(&f->irq, ts_delta, f->irq_ts, 100, 5000);
	INTF_COLUMN(&f->irq, dur_ns, f->irq_dur, 2000, 40);
	INTF_COLUMN(&f->irq, cpu, f->irq_cpu, 1, 63);
	INTF_COLUMN(&f->irq, kind, f->irq_kind, 1, 2);
	INTF_COLUMN(&f->irq, num, f->irq_num, 41, 3);
	INTF_COLUMN(&f->irq, name, f->irq_name, 1, ARRAY_SIZE(strings) - 1);
	INTF_COLUMN(&f->irq, tid, f->irq_tid, 101, 0);
	INTF_COLUMN(&f->irq, pid, f->irq_pid, 100, 100);
	INTF_COLUMN(&f->irq, flags, f->irq_flags, 1, 2);

	INTF_COLUMN(&f->rc, ts_delta, f->rc_ts, 0, 1000000);
	INTF_COLUMN(&f->rc, dur_ns, f->rc_dur, 12000000, 3000000);
	INTF_COLUMN(&f->rc, tid, f->rc_tid, 101, 101);
	INTF_COLUMN(&f->rc, pid, f->rc_pid, 100, 100);
	INTF_COLUMN(&f->rc, kind, f->rc_kind, 2, 3);
	INTF_COLUMN(&f->rc, order, f->rc_order, 0, 9);
	INTF_COLUMN(&f->rc, gfp, f->rc_gfp, 0xcc0, 0);
	INTF_COLUMN(&f->rc, result, f->rc_result, 32, -1);
	INTF_COLUMN(&f->rc, cpu, f->rc_cpu, 0, 1);

	INTF_COLUMN(&f->ft, ts_delta, f->ft_ts, 7, 100000000);
	INTF_COLUMN(&f->ft, dur_ns, f->ft_dur, 100000000, 100000000);
	INTF_COLUMN(&f->ft, tid, f->ft_tid, 101, 101);
	INTF_COLUMN(&f->ft, pid, f->ft_pid, 100, 100);
	INTF_COLUMN(&f->ft, faults, f->ft_faults, 2000, 0);
	INTF_COLUMN(&f->ft, write, f->ft_write, 1200, 0);
	INTF_COLUMN(&f->ft, exec, f->ft_exec, 5, 0);
	INTF_COLUMN(&f->ft, prot, f->ft_prot, 40, 0);
	INTF_COLUMN(&f->ft, minor, f->ft_minor, 1990, 300);
	INTF_COLUMN(&f->ft, major, f->ft_major, 10, 0);

	INTF_COLUMN(&f->lk, ts_delta, f->lk_ts, 50, 50);
	INTF_COLUMN(&f->lk, dur_ns, f->lk_dur, 6000000, 40000);
	INTF_COLUMN(&f->lk, tid, f->lk_tid, 101, 100);
	INTF_COLUMN(&f->lk, pid, f->lk_pid, 100, 100);
	INTF_COLUMN(&f->lk, lock, f->lk_lock, 0xffff888104a3c0e8ULL, 0xffffffff83a1b2c0ULL);
	INTF_COLUMN(&f->lk, flags, f->lk_flags, 0x10002, 0x1);
	INTF_COLUMN(&f->lk, ret, f->lk_ret, 0, -4);
	INTF_COLUMN(&f->lk, kstack, f->lk_kstack, 1, 0); /* index + 1: the one stack */
	INTF_COLUMN(&f->lk, cpu, f->lk_cpu, 1, 0);
	INTF_COLUMN(&f->lk, name, f->lk_name, 0, 1);

	f->frame.has_address = 1;
	f->frame.address = 0xffffffff81a3d012ULL;
	f->frame.function = "down_read";
	f->framep = &f->frame;
	f->frames[0] = 0;
	f->stack.n_frames = 1;
	f->stack.frames = f->frames;
	f->stackp = &f->stack;
	f->sc.snap.n_frames = 1;
	f->sc.snap.frames = &f->framep;
	f->sc.snap.n_stacks = 1;
	f->sc.snap.stacks = &f->stackp;

	f->sc.snap.irqs = &f->irq;
	f->sc.snap.reclaims = &f->rc;
	f->sc.snap.faults = &f->ft;
	f->sc.snap.locks = &f->lk;
	f->sc.snap.has_interference = 1;
	f->sc.snap.interference = 15;
}

/* Rejected by hps_unpack (packed) and by hps_validate (in memory). */
static void expect_invalid(const struct intf *f, const char *what)
{
	expect_rejected(&f->sc, what);
	CHECKF(hps_validate(&f->sc.snap) == -EINVAL, "%s: hps_validate accepts it", what);
}

/* The table of an intf by number: 0 irqs, 1 reclaims, 2 faults, 3 locks. */
static ProtobufCMessage *intf_table(struct intf *f, int which)
{
	switch (which) {
	case 0:
		return &f->irq.base;
	case 1:
		return &f->rc.base;
	case 2:
		return &f->ft.base;
	default:
		return &f->lk.base;
	}
}

static void test_interference(void)
{
	static const char *const tables[] = { "irqs", "reclaims", "faults", "locks" };
	Hostprof__Snapshot *s = NULL;
	struct intf f;

	intf_init(&f);
	CHECK_EQ_INT(hps_validate(&f.sc.snap), 0);
	CHECK_EQ_INT(pack_unpack(&f.sc, &s), 0);
	if (s) {
		CHECK(s->irqs && s->irqs->n_ts_delta == NINT && s->irqs->name[1] == ARRAY_SIZE(strings) - 1);
		CHECK(s->reclaims && s->reclaims->n_cpu == NINT && s->reclaims->result[1] == -1);
		CHECK(s->faults && s->faults->n_major == NINT && s->faults->minor[0] == 1990);
		CHECK(s->locks && s->locks->n_name == NINT && s->locks->kstack[0] == 1 && s->locks->ret[1] == -4);
		CHECK(s->has_interference && s->interference == 15);
		hps_free(s);
	}

	/* every column of every table one entry short (a table's columns are all required) */
	for (int k = 0; k < 4; k++) {
		const ProtobufCMessageDescriptor *d;

		intf_init(&f);
		d = intf_table(&f, k)->descriptor;
		for (unsigned int c = 0; c < d->n_fields; c++) {
			size_t *n = (size_t *)((char *)intf_table(&f, k) + d->fields[c].quantifier_offset);
			char what[96];

			CHECK(d->fields[c].label == PROTOBUF_C_LABEL_REPEATED);
			(*n)--;
			snprintf(what, sizeof(what), "%s.%s one short", tables[k], d->fields[c].name);
			expect_invalid(&f, what);
			(*n)++;
		}
		/* and all of a table's columns empty is an empty table */
		for (unsigned int c = 0; c < d->n_fields; c++)
			*(size_t *)((char *)intf_table(&f, k) + d->fields[c].quantifier_offset) = 0;
		CHECKF(hps_validate(&f.sc.snap) == 0, "%s: an empty table is rejected", tables[k]);
	}

	/* indexes */
	intf_init(&f);
	f.irq_name[0] = ARRAY_SIZE(strings);
	expect_invalid(&f, "irq name past the strings");
	intf_init(&f);
	f.lk_name[1] = UINT32_MAX;
	expect_invalid(&f, "lock name past the strings");
	intf_init(&f);
	f.lk_kstack[1] = 2;
	expect_invalid(&f, "lock kstack past the stacks");
	intf_init(&f);
	f.sc.snap.n_stacks = 0;
	f.sc.snap.stacks = NULL;
	expect_invalid(&f, "lock kstack without stacks");
	intf_init(&f);
	f.lk_kstack[0] = 0; /* 0: none, even without stacks */
	f.sc.snap.n_stacks = 0;
	f.sc.snap.stacks = NULL;
	CHECK_EQ_INT(hps_validate(&f.sc.snap), 0);

	/* times: the start of a row, or its end, past 2^64 */
	intf_init(&f);
	f.irq_dur[1] = UINT64_MAX - START_NS - 100 - 5000 + 1;
	expect_invalid(&f, "irq end past 2^64");
	intf_init(&f);
	f.irq_dur[1] = UINT64_MAX - START_NS - 100 - 5000; /* ends at 2^64 - 1 exactly */
	CHECK_EQ_INT(hps_validate(&f.sc.snap), 0);
	intf_init(&f);
	f.rc_dur[0] = UINT64_MAX - START_NS + 1;
	expect_invalid(&f, "reclaim end past 2^64");
	intf_init(&f);
	f.ft_ts[1] = UINT64_MAX - START_NS;
	expect_invalid(&f, "fault period start past 2^64");
	intf_init(&f);
	f.lk_dur[0] = UINT64_MAX;
	expect_invalid(&f, "lock wait end past 2^64");
}

/* ---- 5. The GIL table ----------------------------------------------------------------- */

struct gil {
	struct scene sc;
	Hostprof__GilTable t;
	Hostprof__GilStack st, *stp;
	Hostprof__PythonFrame fr[2], *frp[2];
	Hostprof__GilTotal tot, *totp;
	uint32_t st_frames[2];
	uint64_t ts[NINT], dur[NINT], blocked[NINT];
	uint32_t tid[NINT], pid[NINT], holder[NINT], first[NINT], waits[NINT], hstack[NINT];
};

static void gil_init(struct gil *g)
{
	memset(g, 0, sizeof(*g));
	scene_init(&g->sc);
	g->t = (Hostprof__GilTable)HOSTPROF__GIL_TABLE__INIT;
	g->st = (Hostprof__GilStack)HOSTPROF__GIL_STACK__INIT;
	g->tot = (Hostprof__GilTotal)HOSTPROF__GIL_TOTAL__INIT;
	for (int i = 0; i < 2; i++) {
		g->fr[i] = (Hostprof__PythonFrame)HOSTPROF__PYTHON_FRAME__INIT;
		g->fr[i].function = i ? "train" : "flush_stats";
		g->fr[i].file = "train.py";
		g->fr[i].has_line = 1;
		g->fr[i].line = 42 + i;
		g->frp[i] = &g->fr[i];
	}
	g->st_frames[0] = 0;
	g->st_frames[1] = 1;
	g->st.n_frames = 2;
	g->st.frames = g->st_frames;
	g->st.has_when = 1;
	g->st.when = 1;
	g->stp = &g->st;
	g->tot.has_tid = g->tot.has_count = g->tot.has_total_ns = 1;
	g->tot.tid = 101;
	g->tot.count = 9;
	g->tot.total_ns = 7000000;
	g->totp = &g->tot;
	INTF_COLUMN(&g->t, ts_delta, g->ts, 10, 6000000);
	INTF_COLUMN(&g->t, dur_ns, g->dur, 5000000, 1500000);
	INTF_COLUMN(&g->t, tid, g->tid, 101, 101);
	INTF_COLUMN(&g->t, pid, g->pid, 100, 100);
	INTF_COLUMN(&g->t, holder_tid, g->holder, 102, 0);
	INTF_COLUMN(&g->t, first_holder_tid, g->first, 102, 102);
	INTF_COLUMN(&g->t, waits, g->waits, 1, 3);
	INTF_COLUMN(&g->t, blocked_ns, g->blocked, 4900000, 1400000);
	INTF_COLUMN(&g->t, holder_stack, g->hstack, 1, 0);
	g->t.has_status = 1;
	g->t.status = 1;
	g->t.n_stacks = 1;
	g->t.stacks = &g->stp;
	g->t.n_frames = 2;
	g->t.frames = g->frp;
	g->t.n_totals = 1;
	g->t.totals = &g->totp;
	g->sc.snap.gil = &g->t;
}

static void gil_invalid(const struct gil *g, const char *what)
{
	expect_rejected(&g->sc, what);
	CHECKF(hps_validate(&g->sc.snap) == -EINVAL, "%s: hps_validate accepts it", what);
}

static void test_gil(void)
{
	static const char *const cols[] = { "ts_delta", "dur_ns", "tid", "pid", "holder_tid", "first_holder_tid",
					    "waits", "blocked_ns", "holder_stack" };
	Hostprof__Snapshot *s = NULL;
	struct gil g;

	gil_init(&g);
	CHECK_EQ_INT(hps_validate(&g.sc.snap), 0);
	CHECK_EQ_INT(pack_unpack(&g.sc, &s), 0);
	if (s) {
		CHECK(s->gil && s->gil->n_ts_delta == NINT && s->gil->holder_tid[0] == 102 && s->gil->holder_stack[0] == 1);
		CHECK(s->gil && s->gil->n_stacks == 1 && s->gil->stacks[0]->n_frames == 2 &&
		      !strcmp(s->gil->frames[s->gil->stacks[0]->frames[0]]->function, "flush_stats"));
		CHECK(s->gil && s->gil->n_totals == 1 && s->gil->totals[0]->count == 9);
		hps_free(s);
	}
	for (size_t c = 0; c < ARRAY_SIZE(cols); c++) {
		const ProtobufCFieldDescriptor *fd;
		char what[64];
		size_t *n;

		gil_init(&g);
		fd = protobuf_c_message_descriptor_get_field_by_name(g.t.base.descriptor, cols[c]);
		CHECK(fd != NULL);
		if (!fd)
			continue;
		n = (size_t *)((char *)&g.t + fd->quantifier_offset);
		(*n)--;
		snprintf(what, sizeof(what), "gil.%s one short", cols[c]);
		gil_invalid(&g, what);
	}
	gil_init(&g);
	g.hstack[1] = 2;
	gil_invalid(&g, "gil holder_stack past the stacks");
	gil_init(&g);
	g.st_frames[1] = 2;
	gil_invalid(&g, "gil stack frame past the frames");
	gil_init(&g);
	g.dur[1] = UINT64_MAX - START_NS - 6000010 + 1;
	gil_invalid(&g, "gil wait end past 2^64");
	gil_init(&g);
	g.t.n_stacks = 0;
	g.t.stacks = NULL;
	gil_invalid(&g, "gil holder_stack without stacks");
}

int main(void)
{
	test_round_trip();
	test_peek();
	test_switch_times();
	test_columns();
	test_string_index();
	test_bad_bytes();
	test_files();
	test_interference();
	test_gil();
	return check_summary();
}
