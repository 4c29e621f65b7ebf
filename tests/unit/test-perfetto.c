// SPDX-License-Identifier: GPL-2.0-only
/*
 * Unit test of lib/pbwriter.c and lib/export_perfetto.c.
 *
 * 1. pbwriter: edge-value varints, zigzag, fixed64, nested messages and packed fields,
 *    read back with a small decoder written here; sticky errors.
 * 2. The exporter rejects inconsistent snapshots with -EINVAL and writes nothing.
 * 3. Traces made from hand-built snapshots (the acl_thread preemption scene, an empty one,
 *    a large one that spans many bundles and flushes) are decoded by protoc against
 *    perfetto_subset.proto, a decoder independent of our encoder, and checked field by field.
 * 4. Large traces are written in bounded pieces, and a failed write returns its errno.
 * 5. The trace of tests/fixtures/stall.hps (see make-fixture.c for its story), decoded by
 *    protoc: its text must equal the golden file stall.pftrace.txt next to it, and the facts
 *    of the story are checked in it: hog's three preemptions of acl_thread, the wakeup of
 *    dataloader by writer, the syscall and off-CPU slices with their annotations, nested as
 *    trace_processor will nest them, the migration and marker instants, and the 8 samples
 *    whose interned callstacks resolve to their functions; and the interference: the IRQ
 *    and softirq entries and exits in CPU 1's bundles, the reclaim, compaction and lock-wait
 *    slices on the thread tracks (the spinlock nested in the ioctl, the mmap_lock wait with
 *    its kernel stack), the page-fault periods on dataloader's child track. Then the same
 *    snapshot with large tables streams in bounded writes, with 3000 overlapping IRQs keeps
 *    each CPU's events in time order, and broken copies of it are rejected.
 *
 * Usage: test-perfetto [PROTO_DIR [FIXTURE.hps]]   (the directory holding perfetto_subset.proto;
 * meson passes it, else $PERFETTO_SUBSET_PROTO_DIR, else the directory of this source file;
 * the fixture defaults to ../fixtures/stall.hps from there).
 * UPDATE_GOLDEN=1 writes the golden file instead of comparing (then inspect it by hand).
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
#include <sys/wait.h>
#include <unistd.h>

#include "export.h"
#include "hps.h"
#include "macro.h"
#include "pbwriter.h"
#include "perfetto-decode.h"

#define SEQUENCE_ID 0x4850         /* what export_perfetto.c writes */
#define PROFILE_SEQUENCE_ID 0x4851 /* its samples */
#define BUNDLE_MAX 1000

static int failures;

#define CHECK(cond, ...)                                                                   \
	do {                                                                               \
		if (!(cond)) {                                                             \
			fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond);    \
			fprintf(stderr, __VA_ARGS__);                                      \
			fputc('\n', stderr);                                               \
			failures++;                                                        \
		}                                                                          \
	} while (0)

/* ---- 1. pbwriter round trip ---------------------------------------------------------- */

struct reader {
	const uint8_t *p;
	size_t len, pos;
	bool bad;
};

static uint64_t rd_varint(struct reader *r, size_t *ret_nbytes)
{
	uint64_t v = 0;
	size_t start = r->pos;
	unsigned int shift = 0;

	for (;;) {
		uint8_t b;

		if (r->pos >= r->len || shift > 63) {
			r->bad = true;
			return 0;
		}
		b = r->p[r->pos++];
		v |= (uint64_t)(b & 0x7f) << shift;
		shift += 7;
		if (!(b & 0x80))
			break;
	}
	if (ret_nbytes)
		*ret_nbytes = r->pos - start;
	return v;
}

static void expect_tag(struct reader *r, uint32_t field, unsigned int wire_type)
{
	uint64_t tag = rd_varint(r, NULL);

	CHECK(tag == (((uint64_t)field << 3) | wire_type), "tag %" PRIu64 ", want field %u wt %u",
	      tag, field, wire_type);
}

static void test_pbwriter(void)
{
	static const uint64_t values[] = { 0, 127, 128, UINT64_C(1) << 32, UINT64_MAX };
	static const size_t sizes[] = { 1, 1, 2, 5, 10 };
	struct pbw w = PBW_INIT;
	struct reader r;
	size_t i, n, tok, packed, len, end;
	uint64_t v;

	for (i = 0; i < ARRAY_SIZE(values); i++)
		CHECK(pbw_varint(&w, (uint32_t)i + 1, values[i]) == 0, "varint %zu", i);
	CHECK(pbw_int(&w, 6, -1) == 0, "int");
	CHECK(pbw_sint(&w, 7, -1) == 0, "sint");
	CHECK(pbw_sint(&w, 8, INT64_MIN) == 0, "sint min");
	CHECK(pbw_fixed64(&w, 9, UINT64_C(0x0102030405060708)) == 0, "fixed64");
	tok = pbw_begin(&w, 1000);
	pbw_string(&w, 1, "abc");
	packed = pbw_begin(&w, 2);
	pbw_raw_varint(&w, 1);
	pbw_raw_varint(&w, 300);
	pbw_end(&w, packed);
	CHECK(pbw_end(&w, tok) == 0, "end");
	CHECK(w.err == 0, "err %d", w.err);

	r = (struct reader){ .p = w.buf, .len = w.len };
	for (i = 0; i < ARRAY_SIZE(values); i++) {
		expect_tag(&r, (uint32_t)i + 1, PBW_WT_VARINT);
		v = rd_varint(&r, &n);
		CHECK(v == values[i], "value %zu: %" PRIu64 " != %" PRIu64, i, v, values[i]);
		CHECK(n == sizes[i], "value %zu: %zu bytes, want %zu", i, n, sizes[i]);
	}
	expect_tag(&r, 6, PBW_WT_VARINT);
	v = rd_varint(&r, &n);
	CHECK(v == UINT64_MAX && n == 10, "int -1: %" PRIx64 " in %zu bytes", v, n);
	expect_tag(&r, 7, PBW_WT_VARINT);
	CHECK(rd_varint(&r, NULL) == 1, "zigzag -1");
	expect_tag(&r, 8, PBW_WT_VARINT);
	CHECK(rd_varint(&r, NULL) == UINT64_MAX, "zigzag INT64_MIN");
	expect_tag(&r, 9, PBW_WT_FIXED64);
	CHECK(r.pos + 8 <= r.len && r.p[r.pos] == 0x08 && r.p[r.pos + 7] == 0x01, "fixed64 order");
	r.pos += 8;

	expect_tag(&r, 1000, PBW_WT_LEN);
	len = rd_varint(&r, &n);
	CHECK(n == 1, "nested length takes %zu bytes, want 1 (the shortest)", n);
	end = r.pos + len;
	CHECK(end == r.len, "nested length %zu, %zu bytes follow", len, r.len - r.pos);
	expect_tag(&r, 1, PBW_WT_LEN);
	len = rd_varint(&r, NULL);
	CHECK(len == 3 && r.pos + 3 <= r.len && !memcmp(r.p + r.pos, "abc", 3), "string");
	r.pos += len;
	expect_tag(&r, 2, PBW_WT_LEN);
	len = rd_varint(&r, NULL);
	CHECK(len == 3, "packed length %zu, want 3", len);
	CHECK(rd_varint(&r, NULL) == 1, "packed[0]");
	CHECK(rd_varint(&r, NULL) == 300, "packed[1]");
	CHECK(r.pos == end && !r.bad, "trailing bytes or bad varint");

	/* Lengths of 128 and more move the message up, nested ones too: the shortest varint. */
	pbw_reset(&w);
	tok = pbw_begin(&w, 5);
	packed = pbw_begin(&w, 6);
	for (i = 0; i < 200; i++)
		pbw_raw_varint(&w, i);
	pbw_end(&w, packed);
	for (i = 0; i < 20000; i++)
		pbw_varint(&w, 7, 1);
	CHECK(pbw_end(&w, tok) == 0 && w.err == 0, "long nested: %d", w.err);
	r = (struct reader){ .p = w.buf, .len = w.len };
	expect_tag(&r, 5, PBW_WT_LEN);
	len = rd_varint(&r, &n);
	CHECK(n == 3 && r.pos + len == r.len, "outer length %zu in %zu bytes, %zu bytes follow", len, n,
	      r.len - r.pos);
	expect_tag(&r, 6, PBW_WT_LEN);
	len = rd_varint(&r, &n);
	CHECK(n == 2 && len == 128 + 2 * 72, "packed length %zu in %zu bytes", len, n);
	for (i = 0; i < 200; i++)
		CHECK(rd_varint(&r, NULL) == i, "packed[%zu]", i);
	for (i = 0; i < 20000 && !r.bad; i++) {
		expect_tag(&r, 7, PBW_WT_VARINT);
		if (rd_varint(&r, NULL) != 1) {
			CHECK(0, "field after the packed one, %zu", i);
			break;
		}
	}
	CHECK(r.pos == r.len && !r.bad, "long nested: trailing bytes or bad varint");

	/* Errors are sticky and later writes change nothing. */
	n = w.len;
	w.err = -ENOMEM;
	CHECK(pbw_varint(&w, 1, 5) == -ENOMEM, "sticky");
	CHECK(pbw_string(&w, 1, "x") == -ENOMEM, "sticky");
	tok = pbw_begin(&w, 3);
	CHECK(pbw_end(&w, tok) == -ENOMEM && w.len == n, "no-op after error");
	pbw_reset(&w);
	CHECK(w.len == 0 && w.err == 0, "reset");
	CHECK(pbw_varint(&w, 0, 1) == -EINVAL, "field 0 is invalid");
	pbw_free(&w);
	pbw_free(&w);
	CHECK(w.buf == NULL, "free");
}

/* ---- Building snapshots --------------------------------------------------------------- */

enum { S_EMPTY, S_SWAPPER0, S_SWAPPER1, S_TRAINER, S_ACL, S_HOG, S_COUNT };

static char *strings[S_COUNT] = { "", "swapper/0", "swapper/1", "trainer", "acl_thread", "hog" };

struct sw {
	uint64_t dt;
	uint32_t cpu;
	uint32_t prev_tid, prev_pid, prev_comm;
	int32_t prev_prio;
	uint32_t prev_state;
	uint32_t next_tid, next_pid, next_comm;
	int32_t next_prio;
};

#define START_NS UINT64_C(5000000000)

/* trainer (pid 100) with acl_thread (tid 101) preempted on CPU 1 by hog (pid 200, prio 49). */
static const struct sw scene[] = {
	{ 1000, 0, 0, 0, S_SWAPPER0, 120, 0x0, 100, 100, S_TRAINER, 120 },
	{ 1000, 1, 0, 0, S_SWAPPER1, 120, 0x0, 101, 100, S_ACL, 120 },
	{ 3000, 1, 101, 100, S_ACL, 120, 0x100, 200, 200, S_HOG, 49 },
	{ 3000, 0, 100, 100, S_TRAINER, 120, 0x1, 0, 0, S_SWAPPER0, 120 },
	{ 1000, 1, 200, 200, S_HOG, 49, 0x1, 101, 100, S_ACL, 120 },
	{ 3000, 1, 101, 100, S_ACL, 120, 0x2, 0, 0, S_SWAPPER1, 120 },
	{ 3000, 0, 0, 0, S_SWAPPER0, 120, 0x0, 100, 100, S_TRAINER, 120 },
	{ 2000, 1, 0, 0, S_SWAPPER1, 120, 0x0, 200, 200, S_HOG, 49 },
	{ 5000, 0, 100, 100, S_TRAINER, 120, 0x0, 0, 0, S_SWAPPER0, 120 },
};
#define SCENE_N ARRAY_SIZE(scene)

struct fixture {
	Hostprof__Snapshot snap;
	Hostprof__HostInfo host;
	Hostprof__ClockAnchor clock;
	Hostprof__Process proc[2], *procs[2];
	Hostprof__Thread thr[3], *thrs[3];
	Hostprof__SchedSwitchTable table;
};

static void *xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size);

	if (!p) {
		fprintf(stderr, "out of memory\n");
		exit(1);
	}
	return p;
}

static void table_fill(Hostprof__SchedSwitchTable *t, const struct sw *sw, size_t n)
{
	size_t i;

	*t = (Hostprof__SchedSwitchTable)HOSTPROF__SCHED_SWITCH_TABLE__INIT;
	t->n_ts_delta = t->n_cpu = t->n_prev_tid = t->n_prev_pid = t->n_prev_comm = n;
	t->n_prev_prio = t->n_prev_state = t->n_next_tid = t->n_next_pid = n;
	t->n_next_comm = t->n_next_prio = n;
	t->ts_delta = xcalloc(n, sizeof(*t->ts_delta));
	t->cpu = xcalloc(n, sizeof(uint32_t));
	t->prev_tid = xcalloc(n, sizeof(uint32_t));
	t->prev_pid = xcalloc(n, sizeof(uint32_t));
	t->prev_comm = xcalloc(n, sizeof(uint32_t));
	t->prev_prio = xcalloc(n, sizeof(int32_t));
	t->prev_state = xcalloc(n, sizeof(uint32_t));
	t->next_tid = xcalloc(n, sizeof(uint32_t));
	t->next_pid = xcalloc(n, sizeof(uint32_t));
	t->next_comm = xcalloc(n, sizeof(uint32_t));
	t->next_prio = xcalloc(n, sizeof(int32_t));
	for (i = 0; i < n; i++) {
		t->ts_delta[i] = sw[i].dt;
		t->cpu[i] = sw[i].cpu;
		t->prev_tid[i] = sw[i].prev_tid;
		t->prev_pid[i] = sw[i].prev_pid;
		t->prev_comm[i] = sw[i].prev_comm;
		t->prev_prio[i] = sw[i].prev_prio;
		t->prev_state[i] = sw[i].prev_state;
		t->next_tid[i] = sw[i].next_tid;
		t->next_pid[i] = sw[i].next_pid;
		t->next_comm[i] = sw[i].next_comm;
		t->next_prio[i] = sw[i].next_prio;
	}
}

static void table_free(Hostprof__SchedSwitchTable *t)
{
	free(t->ts_delta);
	free(t->cpu);
	free(t->prev_tid);
	free(t->prev_pid);
	free(t->prev_comm);
	free(t->prev_prio);
	free(t->prev_state);
	free(t->next_tid);
	free(t->next_pid);
	free(t->next_comm);
	free(t->next_prio);
}

static void fixture_init(struct fixture *f, const struct sw *sw, size_t n)
{
	static char *trainer_cmdline[] = { "python3", "train.py" };
	size_t i;

	memset(f, 0, sizeof(*f));
	f->snap = (Hostprof__Snapshot)HOSTPROF__SNAPSHOT__INIT;
	f->host = (Hostprof__HostInfo)HOSTPROF__HOST_INFO__INIT;
	f->clock = (Hostprof__ClockAnchor)HOSTPROF__CLOCK_ANCHOR__INIT;

	f->host.hostname = "node7";
	f->host.sysname = "Linux";
	f->host.kernel_release = "6.1.0-18-amd64";
	f->host.kernel_version = "#1 SMP PREEMPT_DYNAMIC Debian 6.1.76-1 (2024-02-01)";
	f->host.machine = "x86_64";
	f->host.has_ncpus = true;
	f->host.ncpus = 2;

	f->clock.has_boottime_ns = f->clock.has_realtime_ns = f->clock.has_monotonic_ns = true;
	f->clock.boottime_ns = START_NS;
	f->clock.realtime_ns = UINT64_C(1700000000000000000);
	f->clock.monotonic_ns = START_NS - 1234;

	for (i = 0; i < 2; i++) {
		f->proc[i] = (Hostprof__Process)HOSTPROF__PROCESS__INIT;
		f->proc[i].has_pid = f->proc[i].has_ppid = true;
		f->procs[i] = &f->proc[i];
	}
	f->proc[0].pid = 100;
	f->proc[0].ppid = 1;
	f->proc[0].comm = "trainer";
	f->proc[0].n_cmdline = 2;
	f->proc[0].cmdline = trainer_cmdline;
	f->proc[1].pid = 200;
	f->proc[1].ppid = 1;
	f->proc[1].comm = "hog"; /* no cmdline: the exporter falls back to comm */

	for (i = 0; i < 3; i++) {
		f->thr[i] = (Hostprof__Thread)HOSTPROF__THREAD__INIT;
		f->thr[i].has_tid = f->thr[i].has_pid = true;
		f->thrs[i] = &f->thr[i];
	}
	f->thr[0].tid = 100;
	f->thr[0].pid = 100;
	f->thr[0].comm = "trainer";
	f->thr[1].tid = 101;
	f->thr[1].pid = 100;
	f->thr[1].comm = "acl_thread";
	f->thr[2].tid = 200;
	f->thr[2].pid = 200;
	f->thr[2].comm = "hog";

	f->snap.has_format_version = true;
	f->snap.format_version = 1;
	f->snap.host = &f->host;
	f->snap.clock = &f->clock;
	f->snap.has_start_ns = f->snap.has_end_ns = true;
	f->snap.start_ns = START_NS;
	f->snap.end_ns = START_NS + 1000000000;
	f->snap.has_pid = true;
	f->snap.pid = 100;
	f->snap.n_strings = S_COUNT;
	f->snap.strings = strings;
	f->snap.n_processes = 2;
	f->snap.processes = f->procs;
	f->snap.n_threads = 3;
	f->snap.threads = f->thrs;
	if (sw) {
		table_fill(&f->table, sw, n);
		f->snap.switches = &f->table;
	}
}

static void fixture_free(struct fixture *f)
{
	if (f->snap.switches)
		table_free(&f->table);
}

/* ---- Exporting ------------------------------------------------------------------------- */

/* Exports into a new temporary file; returns the exporter's result, the path and its size. */
static int export_to_file(const Hostprof__Snapshot *snap, char *path, size_t path_len,
			  long *ret_size)
{
	const char *tmp = getenv("TMPDIR");
	struct stat st;
	FILE *f;
	int fd, r;

	snprintf(path, path_len, "%s/test-perfetto-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	fd = mkstemp(path);
	if (fd < 0) {
		fprintf(stderr, "mkstemp %s: %s\n", path, strerror(errno));
		exit(1);
	}
	f = fdopen(fd, "w");
	if (!f) {
		fprintf(stderr, "fdopen: %s\n", strerror(errno));
		exit(1);
	}
	r = snapshot_export_perfetto(snap, f);
	if (fclose(f) != 0)
		CHECK(0, "fclose: %s", strerror(errno));
	if (stat(path, &st) < 0) {
		fprintf(stderr, "stat %s: %s\n", path, strerror(errno));
		exit(1);
	}
	*ret_size = (long)st.st_size;
	return r;
}

/* ---- 2. Rejected input ----------------------------------------------------------------- */

static void expect_einval(struct fixture *f, const char *what)
{
	char path[4096];
	long size;
	int r;

	r = export_to_file(&f->snap, path, sizeof(path), &size);
	CHECK(r == -EINVAL, "%s: got %d, want -EINVAL", what, r);
	CHECK(size == 0, "%s: %ld bytes written for rejected input", what, size);
	unlink(path);
}

static void test_invalid(void)
{
	struct fixture f;
	uint32_t saved;

	fixture_init(&f, scene, SCENE_N);
	f.table.n_next_prio--;
	expect_einval(&f, "short next_prio column");
	f.table.n_next_prio++;
	f.table.n_cpu++;
	expect_einval(&f, "long cpu column");
	f.table.n_cpu--;

	saved = f.table.next_comm[4];
	f.table.next_comm[4] = S_COUNT;
	expect_einval(&f, "next_comm index out of range");
	f.table.next_comm[4] = saved;
	saved = f.table.prev_comm[0];
	f.table.prev_comm[0] = 0xffffffff;
	expect_einval(&f, "prev_comm index out of range");
	f.table.prev_comm[0] = saved;

	f.snap.n_strings = 0;
	expect_einval(&f, "events without a string table");
	f.snap.n_strings = S_COUNT;

	saved = f.table.cpu[2];
	f.table.cpu[2] = 1u << 20;
	expect_einval(&f, "absurd cpu number");
	f.table.cpu[2] = saved;

	f.table.ts_delta[3] = UINT64_MAX;
	expect_einval(&f, "timestamp overflow");
	fixture_free(&f);

	CHECK(snapshot_export_perfetto(NULL, stdout) == -EINVAL, "NULL snapshot");
}

/* ---- 3. Decoding with protoc ----------------------------------------------------------- */

struct named {
	int64_t id, parent;
	char name[64];
};

struct decoded {
	size_t packets, packets_with_seq, packets_with_ts, bad_seq, bad_clock_id, unknown_fields;
	struct pd_node *root; /* protoc's text as a tree */
	struct pd_sched sched; /* every ftrace event, as a reader sees it (perfetto-decode.h) */
	size_t nclocks;
	int64_t clock_id[64];
	uint64_t clock_ts[64];
	char primary_clock[64];
	size_t system_infos;
	char sysname[64], version[128], release[64], machine[64];
	int64_t num_cpus;
	size_t nproc, nthr;
	struct named proc[8], thr[8];
};

#define MAX_DEPTH 8

/* Copies a protoc text value: strips the quotes of a string. */
static void copy_value(char *dst, size_t len, const char *v)
{
	size_t n = strlen(v);

	if (n >= 2 && v[0] == '"' && v[n - 1] == '"') {
		v++;
		n -= 2;
	}
	if (n >= len)
		n = len - 1;
	memcpy(dst, v, n);
	dst[n] = '\0';
}

static void on_open(struct decoded *d, const char *name)
{
	if (!strcmp(name, "packet")) {
		d->packets++;
	} else if (!strcmp(name, "clocks") && d->nclocks < ARRAY_SIZE(d->clock_id)) {
		d->clock_id[d->nclocks] = -1;
		d->nclocks++;
	} else if (!strcmp(name, "system_info")) {
		d->system_infos++;
	} else if (!strcmp(name, "processes") && d->nproc < 8) {
		memset(&d->proc[d->nproc++], 0, sizeof(struct named));
	} else if (!strcmp(name, "threads") && d->nthr < 8) {
		memset(&d->thr[d->nthr++], 0, sizeof(struct named));
	}
}

static void on_field(struct decoded *d, const char *msg, const char *key, const char *val,
		     bool *packet_has_seq, bool *packet_has_ts)
{
	long long i = strtoll(val, NULL, 0);

	if (key[0] >= '0' && key[0] <= '9') {
		d->unknown_fields++;
	} else if (!strcmp(msg, "packet")) {
		if (!strcmp(key, "trusted_packet_sequence_id")) {
			*packet_has_seq = true;
			if (i < 2) /* 0: none, 1: the tracing service's */
				d->bad_seq++;
		} else if (!strcmp(key, "timestamp")) {
			*packet_has_ts = true;
		} else if (!strcmp(key, "timestamp_clock_id") && i != 6) {
			d->bad_clock_id++;
		}
	} else if (!strcmp(msg, "clocks") && d->nclocks) {
		if (!strcmp(key, "clock_id"))
			d->clock_id[d->nclocks - 1] = i;
		else if (!strcmp(key, "timestamp"))
			d->clock_ts[d->nclocks - 1] = strtoull(val, NULL, 0);
	} else if (!strcmp(msg, "clock_snapshot") && !strcmp(key, "primary_trace_clock")) {
		copy_value(d->primary_clock, sizeof(d->primary_clock), val);
	} else if (!strcmp(msg, "utsname")) {
		if (!strcmp(key, "sysname"))
			copy_value(d->sysname, sizeof(d->sysname), val);
		else if (!strcmp(key, "version"))
			copy_value(d->version, sizeof(d->version), val);
		else if (!strcmp(key, "release"))
			copy_value(d->release, sizeof(d->release), val);
		else if (!strcmp(key, "machine"))
			copy_value(d->machine, sizeof(d->machine), val);
	} else if (!strcmp(msg, "system_info") && !strcmp(key, "num_cpus")) {
		d->num_cpus = i;
	} else if (!strcmp(msg, "processes") && d->nproc) {
		struct named *p = &d->proc[d->nproc - 1];

		if (!strcmp(key, "pid"))
			p->id = i;
		else if (!strcmp(key, "ppid"))
			p->parent = i;
		else if (!strcmp(key, "cmdline") && !p->name[0])
			copy_value(p->name, sizeof(p->name), val);
	} else if (!strcmp(msg, "threads") && d->nthr) {
		struct named *t = &d->thr[d->nthr - 1];

		if (!strcmp(key, "tid"))
			t->id = i;
		else if (!strcmp(key, "tgid"))
			t->parent = i;
		else if (!strcmp(key, "name"))
			copy_value(t->name, sizeof(t->name), val);
	}
}

/* Parses protoc's text output into d. */
static int decode_text(const char *text, size_t len, struct decoded *d)
{
	char line[4096];
	char stack[MAX_DEPTH][32];
	bool has_seq = false, has_ts = false;
	size_t depth = 0;
	FILE *p;

	memset(d, 0, sizeof(*d));
	p = fmemopen((void *)text, len ? len : 1, "r");
	if (!p) {
		fprintf(stderr, "fmemopen: %s\n", strerror(errno));
		return -1;
	}

	while (len && fgets(line, sizeof(line), p)) {
		char *s = line, *end, *colon;

		while (*s == ' ')
			s++;
		end = s + strlen(s);
		while (end > s && (end[-1] == '\n' || end[-1] == ' '))
			*--end = '\0';
		if (!*s)
			continue;

		if (end - s >= 2 && end[-1] == '{') {
			end[-2] = '\0';
			if (depth == MAX_DEPTH) {
				fprintf(stderr, "protoc output nests too deep\n");
				break;
			}
			snprintf(stack[depth], sizeof(stack[0]), "%s", s);
			if (depth == 0) {
				has_seq = has_ts = false;
			}
			on_open(d, s);
			depth++;
		} else if (!strcmp(s, "}")) {
			if (depth == 0) {
				fprintf(stderr, "unbalanced protoc output\n");
				break;
			}
			depth--;
			if (!strcmp(stack[depth], "packet")) {
				d->packets_with_seq += has_seq;
				d->packets_with_ts += has_ts;
			}
		} else if ((colon = strstr(s, ": "))) {
			*colon = '\0';
			on_field(d, depth ? stack[depth - 1] : "", s, colon + 2, &has_seq, &has_ts);
		} else {
			fprintf(stderr, "unexpected protoc output: %s\n", s);
			d->unknown_fields++;
		}
	}
	fclose(p);
	if (depth != 0) {
		fprintf(stderr, "protoc output ended inside a message\n");
		return -1;
	}
	return 0;
}

/* Runs protoc --decode on the trace file and parses its text output into d. */
static int decode(const char *proto_dir, const char *path, struct decoded *d)
{
	char *text;
	size_t len;
	int r;

	memset(d, 0, sizeof(*d));
	if (pd_run_protoc(proto_dir, path, &text, &len) < 0)
		return -1;
	r = decode_text(text, len, d);
	if (r == 0) {
		d->root = pd_tree_parse(text);
		if (d->root)
			pd_read_sched(d->root, &d->sched);
		else
			r = -1;
	}
	free(text);
	return r;
}

static void decoded_free(struct decoded *d)
{
	pd_sched_free(&d->sched);
	pd_tree_free(d->root);
	d->root = NULL;
}

/* What every trace made from a fixture has, events or not. */
static void check_metadata(const struct decoded *d, const char *what)
{
	bool boot = false, real = false, mono = false;
	size_t i, track_clocks = 0;

	CHECK(d->unknown_fields == 0, "%s: %zu fields unknown to the subset proto", what,
	      d->unknown_fields);
	CHECK(d->packets > 0 && d->packets_with_seq == d->packets && d->bad_seq == 0,
	      "%s: %zu packets, %zu with our sequence id", what, d->packets, d->packets_with_seq);
	CHECK(d->bad_clock_id == 0, "%s: timestamp_clock_id is not BOOTTIME", what);

	for (i = 0; i < d->nclocks; i++) {
		if (d->clock_id[i] == 6 && d->clock_ts[i] == START_NS)
			boot = true;
		if (d->clock_id[i] == 1 && d->clock_ts[i] == UINT64_C(1700000000000000000))
			real = true;
		if (d->clock_id[i] == 3 && d->clock_ts[i] == START_NS - 1234)
			mono = true;
		if (d->clock_id[i] == 64) /* a track sequence's, with the BOOTTIME it starts at */
			track_clocks++;
	}
	CHECK(d->nclocks == 3 + 2 * track_clocks && boot && real && mono,
	      "%s: clocks %zu (%zu of track sequences) boot %d real %d mono %d", what, d->nclocks, track_clocks, boot,
	      real, mono);
	CHECK(!strcmp(d->primary_clock, "BUILTIN_CLOCK_BOOTTIME"), "%s: primary clock '%s'", what,
	      d->primary_clock);

	CHECK(d->system_infos == 1, "%s: %zu SystemInfo", what, d->system_infos);
	CHECK(!strcmp(d->sysname, "Linux"), "%s: sysname '%s'", what, d->sysname);
	CHECK(!strcmp(d->release, "6.1.0-18-amd64"), "%s: release '%s'", what, d->release);
	CHECK(!strncmp(d->version, "#1 SMP PREEMPT_DYNAMIC", 22), "%s: version '%s'", what,
	      d->version);
	CHECK(!strcmp(d->machine, "x86_64"), "%s: machine '%s'", what, d->machine);
	CHECK(d->num_cpus == 2, "%s: num_cpus %" PRId64, what, d->num_cpus);

	CHECK(d->nproc == 2, "%s: %zu processes", what, d->nproc);
	if (d->nproc == 2) {
		CHECK(d->proc[0].id == 100 && d->proc[0].parent == 1 &&
			      !strcmp(d->proc[0].name, "python3"),
		      "%s: process 0 is %" PRId64 " '%s'", what, d->proc[0].id, d->proc[0].name);
		CHECK(d->proc[1].id == 200 && !strcmp(d->proc[1].name, "hog"),
		      "%s: process 1 is %" PRId64 " '%s' (cmdline from comm)", what, d->proc[1].id,
		      d->proc[1].name);
	}
	CHECK(d->nthr == 3, "%s: %zu threads", what, d->nthr);
	if (d->nthr == 3) {
		CHECK(d->thr[0].id == 100 && d->thr[0].parent == 100 &&
			      !strcmp(d->thr[0].name, "trainer"),
		      "%s: thread 0", what);
		CHECK(d->thr[1].id == 101 && d->thr[1].parent == 100 &&
			      !strcmp(d->thr[1].name, "acl_thread"),
		      "%s: thread 1 is %" PRId64 "/%" PRId64 " '%s'", what, d->thr[1].id,
		      d->thr[1].parent, d->thr[1].name);
		CHECK(d->thr[2].id == 200 && d->thr[2].parent == 200 &&
			      !strcmp(d->thr[2].name, "hog"),
		      "%s: thread 2", what);
	}
}

static bool event_matches(const struct pd_sched_ev *e, const struct sw *s, uint64_t ts)
{
	return e->ts == ts && e->kind == PD_SWITCH && e->pid == s->prev_tid &&
	       e->prev_pid == s->prev_tid && e->next_pid == s->next_tid &&
	       e->prev_prio == s->prev_prio && e->next_prio == s->next_prio &&
	       e->prev_state == s->prev_state && e->prev_comm && !strcmp(e->prev_comm, strings[s->prev_comm]) &&
	       e->next_comm && !strcmp(e->next_comm, strings[s->next_comm]);
}

/*
 * The switches of each CPU, as a reader reads them (the compact ones completed from the
 * CPU's previous switch), must be the input's switches of that CPU, in input order.
 */
static void check_events(const struct decoded *d, const struct sw *sw, size_t n, const char *what)
{
	const struct pd_sched *sc = &d->sched;
	size_t i, k, matched = 0;
	uint32_t cpu, max_cpu = 0;
	const struct pd_sched_ev *e;

	CHECK(sc->n == n, "%s: %zu events decoded, %zu exported", what, sc->n, n);
	CHECK(sc->max_bundle <= BUNDLE_MAX, "%s: a bundle holds %zu events", what, sc->max_bundle);
	CHECK(sc->disorder == 0 && sc->bad_columns == 0 && sc->dropped == 0,
	      "%s: %zu events out of time order, %zu bad compact columns, %zu compact events a reader drops", what,
	      sc->disorder, sc->bad_columns, sc->dropped);
	for (i = 0; i < n; i++)
		max_cpu = MAX(max_cpu, sw[i].cpu);

	for (cpu = 0; cpu <= max_cpu; cpu++) {
		uint64_t ts = START_NS;

		for (i = 0, k = 0; i < n; i++) {
			ts += sw[i].dt;
			if (sw[i].cpu != cpu)
				continue;
			while (k < sc->n && sc->ev[k].cpu != cpu)
				k++;
			if (k == sc->n) {
				CHECK(0, "%s: cpu %u: input event %zu missing", what, cpu, i);
				break;
			}
			e = &sc->ev[k++];
			if (event_matches(e, &sw[i], ts))
				matched++;
			else
				CHECK(0, "%s: cpu %u event %zu: ts %" PRIu64 " (want %" PRIu64 ") %s -> %s", what, cpu, i,
				      e->ts, ts, e->prev_comm ? e->prev_comm : "?", e->next_comm ? e->next_comm : "?");
		}
	}
	CHECK(matched == n, "%s: %zu of %zu events match the input", what, matched, n);
}

/* The moment that matters: hog preempts acl_thread on CPU 1; S and D pass through as is. */
static void check_scene(const struct decoded *d)
{
	size_t i, preempts = 0;
	const struct pd_sched_ev *e;

	for (i = 0; i < d->sched.n; i++) {
		e = &d->sched.ev[i];
		if (e->prev_pid == 200)
			CHECK(e->prev_state == 1 && e->prev_prio == 49, "hog sleeps (S)");
		if (e->prev_pid == 101 && e->ts == START_NS + 12000)
			CHECK(e->prev_state == 2, "acl_thread blocks (D): %" PRId64, e->prev_state);
		if (e->prev_pid != 101 || e->prev_state != 256)
			continue;
		preempts++;
		CHECK(e->cpu == 1 && e->ts == START_NS + 5000 && e->pid == 101,
		      "preempt at cpu %u ts %" PRIu64, e->cpu, e->ts);
		CHECK(!strcmp(e->prev_comm, "acl_thread") && e->prev_prio == 120,
		      "preempt prev %s/%" PRId64, e->prev_comm, e->prev_prio);
		CHECK(!strcmp(e->next_comm, "hog") && e->next_pid == 200 && e->next_prio == 49,
		      "preempt next %s/%" PRId64 " prio %" PRId64, e->next_comm, e->next_pid,
		      e->next_prio);
	}
	CHECK(preempts == 1, "%zu preemptions of acl_thread, want 1", preempts);
}

static void test_scene(const char *proto_dir)
{
	struct fixture f;
	struct decoded d;
	char path[4096];
	long size;
	int r;

	fixture_init(&f, scene, SCENE_N);
	r = export_to_file(&f.snap, path, sizeof(path), &size);
	CHECK(r == 0, "export: %d", r);
	r = decode(proto_dir, path, &d);
	CHECK(r == 0, "decode %s", path);
	if (r == 0) {
		check_metadata(&d, "scene");
		check_events(&d, scene, SCENE_N, "scene");
		CHECK(d.sched.bundles == 2, "scene: %zu bundles, want one per CPU", d.sched.bundles);
		check_scene(&d);
		/* swapper/1 -> acl_thread, acl_thread -> hog, hog -> acl_thread, ...: the chain holds
		 * after each CPU's first switch */
		CHECK(d.sched.compact_switches == SCENE_N - 2, "scene: %zu compact switches, want %zu",
		      d.sched.compact_switches, SCENE_N - 2);
		printf("scene: %ld bytes, %zu packets, %zu bundles, %zu sched_switch (%zu compact)\n", size,
		       d.packets, d.sched.bundles, d.sched.n, d.sched.compact_switches);
	}
	decoded_free(&d);
	unlink(path);
	fixture_free(&f);
}

static void test_empty(const char *proto_dir)
{
	struct fixture f;
	struct decoded d;
	char path[4096];
	long size;
	int pass, r;

	/* No table at all, then a table with zero rows. */
	for (pass = 0; pass < 2; pass++) {
		fixture_init(&f, pass ? scene : NULL, 0);
		r = export_to_file(&f.snap, path, sizeof(path), &size);
		CHECK(r == 0, "empty %d: export %d", pass, r);
		r = decode(proto_dir, path, &d);
		CHECK(r == 0, "empty %d: decode", pass);
		if (r == 0) {
			check_metadata(&d, pass ? "empty table" : "no table");
			CHECK(d.sched.n == 0 && d.sched.bundles == 0, "empty %d: %zu events", pass, d.sched.n);
			/* ClockSnapshot, SystemInfo, ProcessTree */
			CHECK(d.packets == 3, "empty %d: %zu packets, want 3", pass, d.packets);
		}
		decoded_free(&d);
		unlink(path);
		fixture_free(&f);
	}
	printf("empty: ok\n");
}

/* Many events on three CPUs: several bundles per CPU and several buffer flushes. */
static void test_large(const char *proto_dir)
{
	const size_t n = 30000;
	struct fixture f;
	struct decoded d;
	struct sw *sw;
	char path[4096];
	uint32_t x = 12345;
	long size;
	size_t i;
	int r;

	sw = xcalloc(n, sizeof(*sw));
	for (i = 0; i < n; i++) {
		x = x * 1103515245 + 12345;
		sw[i] = (struct sw){ .dt = (x >> 8) % 5000, .cpu = (x >> 4) % 3,
				     .prev_tid = 100 + (uint32_t)(i % 2), .prev_pid = 100,
				     .prev_comm = i % 2 ? S_ACL : S_TRAINER, .prev_prio = 120,
				     .prev_state = (x >> 12) % 3, .next_tid = 200, .next_pid = 200,
				     .next_comm = S_HOG, .next_prio = (int32_t)(i % 140) - 1 };
	}
	fixture_init(&f, sw, n);
	r = export_to_file(&f.snap, path, sizeof(path), &size);
	CHECK(r == 0, "large: export %d", r);
	CHECK(size > 3 * 256 * 1024, "large: only %ld bytes, no flush exercised", size);
	r = decode(proto_dir, path, &d);
	CHECK(r == 0, "large: decode");
	if (r == 0) {
		CHECK(d.unknown_fields == 0 && d.packets_with_seq == d.packets, "large: packets");
		check_events(&d, sw, n, "large");
		CHECK(d.sched.bundles >= n / BUNDLE_MAX, "large: %zu bundles", d.sched.bundles);
		printf("large: %ld bytes, %zu packets, %zu bundles, %zu sched_switch (%zu compact)\n", size,
		       d.packets, d.sched.bundles, d.sched.n, d.sched.compact_switches);
	}
	decoded_free(&d);
	unlink(path);
	fixture_free(&f);
	free(sw);
}

/* ---- 4. Streaming: bounded writes, write errors ---------------------------------------- */

struct sink {
	size_t writes, bytes, max_write, fail_after;
};

static ssize_t sink_write(void *cookie, const char *buf, size_t size)
{
	struct sink *k = cookie;

	(void)buf;
	if (k->fail_after && k->bytes + size > k->fail_after) {
		errno = ENOSPC;
		return -1;
	}
	k->writes++;
	k->bytes += size;
	if (size > k->max_write)
		k->max_write = size;
	return (ssize_t)size;
}

static int export_to_sink(const Hostprof__Snapshot *snap, struct sink *k)
{
	cookie_io_functions_t io = { .write = sink_write };
	FILE *f;
	int r;

	f = fopencookie(k, "w", io);
	if (!f) {
		fprintf(stderr, "fopencookie: %s\n", strerror(errno));
		exit(1);
	}
	setvbuf(f, NULL, _IONBF, 0);
	r = snapshot_export_perfetto(snap, f);
	fclose(f);
	return r;
}

static void test_streaming(void)
{
	const size_t n = 50000;
	struct sink k = { 0 };
	struct fixture f;
	struct sw *sw;
	size_t i;
	int r;

	sw = xcalloc(n, sizeof(*sw));
	for (i = 0; i < n; i++)
		sw[i] = (struct sw){ .dt = 1000, .cpu = (uint32_t)(i % 2), .prev_tid = 101,
				     .prev_pid = 100, .prev_comm = S_ACL, .prev_prio = 120,
				     .next_tid = 200, .next_pid = 200, .next_comm = S_HOG,
				     .next_prio = 49 };
	fixture_init(&f, sw, n);

	/* The trace goes out in pieces of about EXPORT_FLUSH_BYTES, never all at once. */
	r = export_to_sink(&f.snap, &k);
	CHECK(r == 0, "streaming: export %d", r);
	CHECK(k.bytes > 1024 * 1024, "streaming: %zu bytes", k.bytes);
	CHECK(k.writes >= 4 && k.max_write < 512 * 1024,
	      "streaming: %zu writes, largest %zu bytes: not flushed while exporting", k.writes,
	      k.max_write);
	printf("streaming: %zu bytes in %zu writes, largest %zu\n", k.bytes, k.writes, k.max_write);

	/* A failing write is reported with its errno. */
	k = (struct sink){ .fail_after = 600 * 1024 };
	r = export_to_sink(&f.snap, &k);
	CHECK(r == -ENOSPC, "streaming: failed write returned %d, want -ENOSPC", r);

	fixture_free(&f);
	free(sw);
}

/* ---- 5. The fixture: tests/fixtures/stall.hps ------------------------------------------ */

#define T0 UINT64_C(1000000000000) /* make-fixture.c: the window starts at 1000 s */
#define MS UINT64_C(1000000)
#define US UINT64_C(1000)

/* protoc's C escapes (\NNN octal, \", \\, \n...) back to bytes; returns the length. */
static size_t unescape(const char *s, uint8_t *out, size_t max)
{
	size_t n = 0;

	while (*s && n < max) {
		if (*s != '\\') {
			out[n++] = (uint8_t)*s++;
			continue;
		}
		s++;
		if (*s >= '0' && *s <= '7') {
			unsigned int v = 0, k;

			for (k = 0; k < 3 && *s >= '0' && *s <= '7'; k++)
				v = v * 8 + (unsigned int)(*s++ - '0');
			out[n++] = (uint8_t)v;
		} else if (*s) {
			out[n++] = (uint8_t)(*s == 'n' ? '\n' : *s == 't' ? '\t' : *s == 'r' ? '\r' : *s);
			s++;
		}
	}
	return n;
}

#define MAX_IID 64

/* The interned tables of the profile sequence, by iid. */
struct interned {
	const char *fname[MAX_IID], *path[MAX_IID], *build_id[MAX_IID];
	const struct pd_node *frame[MAX_IID], *callstack[MAX_IID], *mapping[MAX_IID];
	size_t redefined, out_of_range;
};

static void intern_table(struct interned *in, const struct pd_node *data)
{
	const struct pd_node *e;

	for (e = data->child; e; e = e->next) {
		uint64_t iid = pd_u64(e, "iid");
		const void **slot = NULL;

		if (iid == 0 || iid >= MAX_IID) {
			in->out_of_range++;
			continue;
		}
		if (!strcmp(e->name, "function_names"))
			slot = (const void **)&in->fname[iid];
		else if (!strcmp(e->name, "mapping_paths"))
			slot = (const void **)&in->path[iid];
		else if (!strcmp(e->name, "build_ids"))
			slot = (const void **)&in->build_id[iid];
		else if (!strcmp(e->name, "frames"))
			slot = (const void **)&in->frame[iid];
		else if (!strcmp(e->name, "callstacks"))
			slot = (const void **)&in->callstack[iid];
		else if (!strcmp(e->name, "mappings"))
			slot = (const void **)&in->mapping[iid];
		if (!slot)
			continue;
		if (*slot)
			in->redefined++;
		*slot = strstr(e->name, "names") || strstr(e->name, "paths") || strstr(e->name, "ids") ?
				(const void *)pd_value(e, "str") :
				(const void *)e;
	}
}

/* A callstack as "root;...;leaf" (unresolved frames: mapping file name+0xrel_pc); "" if broken. */
static void resolve_callstack(const struct interned *in, uint64_t iid, char *buf, size_t len)
{
	const struct pd_node *cs = iid < MAX_IID ? in->callstack[iid] : NULL, *f;
	size_t used = 0;

	buf[0] = '\0';
	for (f = cs ? cs->child : NULL; f; f = f->next) {
		const struct pd_node *fr;
		uint64_t fid, fn, map;
		char name[256];

		if (strcmp(f->name, "frame_ids"))
			continue;
		fid = strtoull(f->value, NULL, 0);
		fr = fid < MAX_IID ? in->frame[fid] : NULL;
		if (!fr) {
			buf[0] = '\0';
			return;
		}
		fn = pd_u64(fr, "function_name_id");
		map = pd_u64(fr, "mapping_id");
		if (fn < MAX_IID && in->fname[fn]) {
			snprintf(name, sizeof(name), "%s", in->fname[fn]);
		} else if (map < MAX_IID && in->mapping[map]) {
			uint64_t path = pd_u64(in->mapping[map], "path_string_ids");
			const char *file = path < MAX_IID && in->path[path] ? in->path[path] : "?";
			const char *slash = strrchr(file, '/');

			snprintf(name, sizeof(name), "%s+0x%" PRIx64, slash ? slash + 1 : file,
				 pd_u64(fr, "rel_pc"));
		} else {
			buf[0] = '\0';
			return;
		}
		used += snprintf(buf + used, len - used, "%s%s", used ? ";" : "", name);
		if (used >= len)
			return;
	}
}

/* The hex build id of the mapping of the frame named fn, "" without one. */
static void frame_build_id(const struct interned *in, const char *fn, char *hex, size_t len)
{
	uint8_t raw[64];
	size_t i, k, n;

	hex[0] = '\0';
	for (i = 1; i < MAX_IID; i++) {
		const struct pd_node *fr = in->frame[i], *mp;
		uint64_t f, m, b;

		if (!fr)
			continue;
		f = pd_u64(fr, "function_name_id");
		if (f >= MAX_IID || !in->fname[f] || strcmp(in->fname[f], fn))
			continue;
		m = pd_u64(fr, "mapping_id");
		mp = m < MAX_IID ? in->mapping[m] : NULL;
		b = mp ? pd_u64(mp, "build_id") : UINT64_MAX;
		if (b >= MAX_IID || !in->build_id[b])
			return;
		n = unescape(in->build_id[b], raw, sizeof(raw));
		for (k = 0; k < n && 2 * k + 2 < len; k++)
			snprintf(hex + 2 * k, 3, "%02x", raw[k]);
		return;
	}
}

/* The slices trace_processor will make of the track events. */
struct slice {
	uint64_t uuid, start, end;
	int depth;
	const char *name, *category;
	const struct pd_tev *ev; /* the BEGIN, or the instant */
};

static int cmp_tev(const void *a, const void *b)
{
	const struct pd_tev *x = *(const struct pd_tev *const *)a, *y = *(const struct pd_tev *const *)b;

	if (x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	return x->order < y->order ? -1 : x->order > y->order;
}

/*
 * Pairs BEGIN and END per track as trace_processor does: in time order (file order for
 * equal times), an END closes the innermost open slice of its track. Instants are slices
 * of length 0.
 */
static size_t make_slices(const struct pd_tracks *tr, struct slice *out, size_t max, size_t *ret_unmatched)
{
	struct {
		uint64_t uuid;
		size_t depth, open[16];
	} tracks[16];
	const struct pd_tev **ev = xcalloc(tr->n, sizeof(*ev));
	size_t i, k, ntracks = 0, nslices = 0, unmatched = 0, n = tr->n;

	for (i = 0; i < n; i++)
		ev[i] = &tr->ev[i];
	qsort(ev, n, sizeof(*ev), cmp_tev);
	for (i = 0; i < n; i++) {
		for (k = 0; k < ntracks && tracks[k].uuid != ev[i]->uuid; k++)
			;
		if (k == ntracks) {
			if (ntracks == ARRAY_SIZE(tracks) || nslices == max)
				break;
			tracks[ntracks].uuid = ev[i]->uuid;
			tracks[ntracks++].depth = 0;
		}
		if (!strcmp(ev[i]->type, "TYPE_SLICE_END")) {
			if (tracks[k].depth == 0) {
				unmatched++;
				continue;
			}
			out[tracks[k].open[--tracks[k].depth]].end = ev[i]->ts;
			continue;
		}
		if (nslices == max || tracks[k].depth == ARRAY_SIZE(tracks[k].open))
			break;
		out[nslices] = (struct slice){ .uuid = ev[i]->uuid, .start = ev[i]->ts, .end = ev[i]->ts,
					       .depth = (int)tracks[k].depth, .name = ev[i]->name,
					       .category = ev[i]->category, .ev = ev[i] };
		if (!strcmp(ev[i]->type, "TYPE_SLICE_BEGIN"))
			tracks[k].open[tracks[k].depth++] = nslices;
		nslices++;
	}
	for (k = 0; k < ntracks; k++)
		unmatched += tracks[k].depth;
	free(ev);
	*ret_unmatched = unmatched;
	return nslices;
}

static const struct slice *find_slice(const struct slice *s, size_t n, uint64_t uuid, const char *name)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (s[i].uuid == uuid && s[i].name && !strcmp(s[i].name, name))
			return &s[i];
	return NULL;
}

static const struct pd_tracks *fixture_tracks; /* what annotation() reads */

static const char *annotation(const struct slice *sl, const char *name)
{
	return pd_annotation(fixture_tracks, sl->ev, name);
}

static bool annotation_is(const struct slice *sl, const char *name, const char *want)
{
	const char *v = annotation(sl, name);

	return v && !strcmp(v, want);
}

/* An IRQ event the fixture's trace must hold (make-fixture.c: the interference). */
struct want_irq {
	uint64_t ts;
	const char *event; /* irq_handler_entry, irq_handler_exit, softirq_entry, softirq_exit */
	int64_t num;       /* irq, or vec */
	uint64_t pid;      /* FtraceEvent.pid; UINT64_MAX: none */
	size_t seen;
};

/* Whether ev is one of the IRQ events in want (counted there), else false. */
static bool match_irq(const struct pd_node *ev, uint64_t cpu, struct want_irq *want, size_t n)
{
	const char *events[] = { "irq_handler_entry", "irq_handler_exit", "softirq_entry", "softirq_exit" };
	const struct pd_node *irq = NULL;
	char path[64];
	size_t i, k;

	for (k = 0; k < ARRAY_SIZE(events) && !irq; k++)
		irq = pd_child(ev, events[k]);
	if (!irq)
		return false;
	for (i = 0; i < n; i++) {
		bool hard = !strncmp(want[i].event, "irq_", 4);

		if (strcmp(irq->name, want[i].event) || cpu != 1 || pd_u64(ev, "timestamp") != want[i].ts ||
		    pd_u64(ev, "pid") != want[i].pid)
			continue;
		snprintf(path, sizeof(path), "%s.%s", want[i].event, hard ? "irq" : "vec");
		if (pd_i64(ev, path) != want[i].num)
			continue;
		if (!strcmp(want[i].event, "irq_handler_entry") && !pd_str_is(irq, "name", "virtio3-rx"))
			continue;
		if (!strcmp(want[i].event, "irq_handler_exit") && pd_i64(irq, "ret") != 1)
			continue;
		want[i].seen++;
		break;
	}
	return true;
}

static void check_fixture_sched(const struct pd_node *root)
{
	struct want_irq irqs[] = {
		{ T0 + 200 * MS - 10 * US, "irq_handler_entry", 41, 101, 0 },
		{ T0 + 200 * MS - 4 * US, "irq_handler_exit", 41, 101, 0 },
		{ T0 + 200 * MS, "softirq_entry", 3, 101, 0 },
		{ T0 + 202 * MS, "softirq_exit", 3, 101, 0 },
		{ T0 + 250 * MS, "softirq_entry", 3, 101, 0 },
		{ T0 + 250 * MS + 150 * US, "softirq_exit", 3, 101, 0 },
		{ T0 + 800 * MS, "softirq_entry", 3, 101, 0 },
		{ T0 + 800 * MS + 80 * US, "softirq_exit", 3, 101, 0 },
		/* while acl_thread waits behind hog: no task of ours was interrupted */
		{ T0 + 910 * MS, "softirq_entry", 3, UINT64_MAX, 0 },
		{ T0 + 910 * MS + 300 * US, "softirq_exit", 3, UINT64_MAX, 0 },
	};
	struct pd_sched sc;
	size_t switches = 0, wakings = 0, preempts = 0, nirq = 0, irq_ok = 0, i;
	uint64_t preempt_ts[3] = { 0 };
	bool writer_wakes_loader = false, trainer_wakes_acl = false;

	pd_read_sched(root, &sc);
	for (i = 0; i < sc.n; i++) {
		const struct pd_sched_ev *e = &sc.ev[i];

		if (e->kind == PD_IRQ) {
			nirq += match_irq(e->node, e->cpu, irqs, ARRAY_SIZE(irqs));
		} else if (e->kind == PD_SWITCH) {
			switches++;
			if (e->prev_pid == 101 && e->pid == 101 && e->prev_state == 0 && e->next_comm &&
			    !strcmp(e->next_comm, "hog") && e->next_pid == 200 && e->next_prio == 49 && e->cpu == 1) {
				if (preempts < 3)
					preempt_ts[preempts] = e->ts;
				preempts++;
			}
		} else {
			wakings++;
			if (e->cpu == 1 && e->ts == T0 + 450 * MS - 10 * US && e->pid == 103 && !strcmp(e->comm, "dataloader") &&
			    e->woken == 102 && e->prio == 120 && e->success == 1 && e->target_cpu == 0)
				writer_wakes_loader = true;
			if (e->cpu == 0 && e->ts == T0 + 5 * MS && e->pid == 100 && !strcmp(e->comm, "acl_thread") &&
			    e->woken == 101 && e->target_cpu == 1)
				trainer_wakes_acl = true;
		}
	}
	CHECK(sc.disorder == 0 && sc.bad_columns == 0 && sc.dropped == 0,
	      "fixture: %zu events out of time order, %zu bad compact columns, %zu compact events a reader drops",
	      sc.disorder, sc.bad_columns, sc.dropped);
	/* the first switch of each CPU is full: a reader cannot know what ran before it. Both
	 * wakers run on CPUs whose recorded switches never put them there: full wakings. */
	CHECK(sc.compact_switches == 11 && sc.full_switches == 2 && sc.full_wakings == 2,
	      "fixture: %zu compact and %zu full switches, %zu full wakings", sc.compact_switches,
	      sc.full_switches, sc.full_wakings);
	pd_sched_free(&sc);
	CHECK(switches == 13 && wakings == 2, "fixture: %zu sched_switch, %zu sched_waking, want 13 and 2", switches,
	      wakings);
	CHECK(preempts == 3 && preempt_ts[0] == T0 + 100 * MS && preempt_ts[1] == T0 + 500 * MS &&
		      preempt_ts[2] == T0 + 900 * MS,
	      "fixture: %zu preemptions of acl_thread by hog at %" PRIu64 ", %" PRIu64 ", %" PRIu64, preempts,
	      preempt_ts[0], preempt_ts[1], preempt_ts[2]);
	CHECK(writer_wakes_loader, "fixture: no sched_waking of dataloader by writer on CPU 1 at 449.99 ms");
	CHECK(trainer_wakes_acl, "fixture: no sched_waking of acl_thread by trainer on CPU 0 at 5 ms");
	for (i = 0; i < ARRAY_SIZE(irqs); i++) {
		CHECK(irqs[i].seen == 1, "fixture: %s at %" PRIu64 " seen %zu times", irqs[i].event, irqs[i].ts,
		      irqs[i].seen);
		irq_ok += irqs[i].seen == 1;
	}
	CHECK(nirq == ARRAY_SIZE(irqs) && irq_ok == nirq, "fixture: %zu IRQ events, %zu as expected, want %zu", nirq,
	      irq_ok, ARRAY_SIZE(irqs));
}

static void check_fixture_tracks(const struct pd_node *root)
{
	const uint64_t acl = UINT64_C(0x4850000000000000) | 101, loader = UINT64_C(0x4850000000000000) | 102;
	const uint64_t loader_faults = UINT64_C(0x4850200000000000) | 102;
	const uint64_t acl_episodes = UINT64_C(0x4850300000000000) | 101;
	struct slice sl[64];
	const struct slice *read, *off, *futex, *ioctl, *mig, *mark, *memcg, *compact, *mmap, *spin, *f1, *f2;
	size_t nsl, unmatched, described_acl = 0, described_loader = 0, described_faults = 0, described_episodes = 0;
	size_t early = 0, i, order = 0;
	size_t acl_at = SIZE_MAX, loader_at = SIZE_MAX, faults_at = SIZE_MAX, episodes_at = SIZE_MAX;
	const struct pd_node *pk, *td;
	struct pd_tracks tr;

	for (pk = root->child; pk; pk = pk->next, order++) {
		td = pd_child(pk, "track_descriptor");
		if (!td)
			continue;
		if (pd_u64(td, "uuid") == acl && pd_u64(td, "thread.pid") == 100 && pd_u64(td, "thread.tid") == 101 &&
		    pd_str_is(td, "thread.thread_name", "acl_thread")) {
			described_acl++;
			acl_at = order;
		}
		if (pd_u64(td, "uuid") == loader && pd_u64(td, "thread.pid") == 100 && pd_u64(td, "thread.tid") == 102 &&
		    pd_str_is(td, "thread.thread_name", "dataloader")) {
			described_loader++;
			loader_at = order;
		}
		/* a child of dataloader's track, after it */
		if (pd_u64(td, "uuid") == loader_faults && pd_u64(td, "parent_uuid") == loader &&
		    pd_str_is(td, "name", "page faults") && !pd_child(td, "thread") && described_loader) {
			described_faults++;
			faults_at = order;
		}
		/* and acl_thread's stall episodes, on a child of its track */
		if (pd_u64(td, "uuid") == acl_episodes && pd_u64(td, "parent_uuid") == acl &&
		    pd_str_is(td, "name", "stall episodes") && !pd_child(td, "thread") && described_acl) {
			described_episodes++;
			episodes_at = order;
		}
	}
	pd_read_tracks(root, &tr);
	fixture_tracks = &tr;
	CHECK(tr.redefined == 0 && tr.unresolved == 0 && tr.before_cleared == 0,
	      "fixture: %zu interned entries redefined, %zu names or times unresolved, %zu before the state was "
	      "cleared",
	      tr.redefined, tr.unresolved, tr.before_cleared);
	for (i = 0; i < tr.n; i++) {
		const struct pd_tev *e = &tr.ev[i];

		if ((e->uuid == acl && e->order < acl_at) || (e->uuid == loader && e->order < loader_at) ||
		    (e->uuid == loader_faults && e->order < faults_at) || (e->uuid == acl_episodes && e->order < episodes_at))
			early++;
		/* interned entries come with the packet that first uses them: no packet needs more */
		CHECK(pd_value(e->packet, "sequence_flags") == NULL, "fixture: a track event needs incremental state");
		CHECK(e->type, "fixture: a track event without a type");
		CHECK(e->name || !strcmp(e->type, "TYPE_SLICE_END"), "fixture: a track event without a name");
	}
	CHECK(described_acl == 1 && described_loader == 1 && described_faults == 1 && described_episodes == 1,
	      "fixture: thread tracks described %zu and %zu times, dataloader's page-fault track %zu times, "
	      "acl_thread's stall episodes %zu times",
	      described_acl, described_loader, described_faults, described_episodes);
	CHECK(early == 0, "fixture: %zu track events before their track's descriptor", early);

	nsl = make_slices(&tr, sl, ARRAY_SIZE(sl), &unmatched);
	/* 12 slices, and 6 stall episodes of acl_thread on its own track */
	CHECK(tr.n == 34 && nsl == 18 && unmatched == 0, "fixture: %zu track events, %zu slices, %zu unmatched", tr.n,
	      nsl, unmatched);
	{
		const struct slice *st = find_slice(sl, nsl, acl_episodes, "stall 30.0 ms: 30.0 RT");

		CHECK(st && st->start == T0 + 900 * MS && st->end - st->start == 30 * MS && st->category &&
			      !strcmp(st->category, "stall") && annotation_is(st, "duration_ns", "30000000"),
		      "fixture: acl_thread's 30 ms stall episode, on its stall episodes track");
	}

	read = find_slice(sl, nsl, loader, "read");
	CHECK(read && read->start == T0 + 400 * MS - 2 * US && read->end - read->start == 50 * MS + 12 * US &&
		      read->depth == 0,
	      "fixture: the read slice on dataloader's track");
	if (read) {
		CHECK((read->category && !strcmp(read->category, "syscall")), "fixture: read category");
		CHECK(annotation_is(read, "arg0", "7") && annotation_is(read, "arg1", "139637976731648") &&
			      annotation_is(read, "arg2", "4096") && annotation_is(read, "ret", "4096") &&
			      annotation_is(read, "duration_ns", "50012000") &&
			      annotation_is(read, "nr", "0"),
		      "fixture: read's args");
	}
	off = find_slice(sl, nsl, loader, "off-cpu S");
	CHECK(off && off->start == T0 + 400 * MS && off->end == T0 + 450 * MS && off->depth == 1,
	      "fixture: the off-CPU slice nests in read, 400..450 ms");
	if (off) {
		CHECK(annotation_is(off, "state", "S") && annotation_is(off, "waker_tid", "103") &&
			      annotation_is(off, "waker_comm", "writer") && annotation_is(off, "cpu", "0"),
		      "fixture: off-CPU state and waker");
		CHECK(annotation_is(off, "kernel_stack", "pipe_read <- vfs_read <- ksys_read") &&
			      annotation_is(off, "user_stack", "load_batch <- [unknown]"),
		      "fixture: off-CPU stacks '%s' / '%s'", annotation(off, "kernel_stack"),
		      annotation(off, "user_stack"));
	}
	futex = find_slice(sl, nsl, loader, "futex");
	CHECK(futex && futex->start == T0 + 600 * MS - 2 * US && futex->end == T0 + 603 * MS + 3 * US &&
		      futex->depth == 0,
	      "fixture: the futex slice");
	ioctl = find_slice(sl, nsl, acl, "ioctl");
	CHECK(ioctl && ioctl->end - ioctl->start == 1500 * US && annotation_is(ioctl, "ret", "-11"),
	      "fixture: the ioctl slice on acl_thread's track");
	mig = find_slice(sl, nsl, acl, "migrate 0->1");
	CHECK(mig && mig->start == T0 + 5 * MS && !strcmp(mig->ev->type, "TYPE_INSTANT") &&
		      annotation_is(mig, "from_cpu", "0") && annotation_is(mig, "to_cpu", "1"),
	      "fixture: the migration instant");
	mark = find_slice(sl, nsl, acl, "acl_preempt");
	CHECK(mark && mark->start == T0 + 930 * MS && !strcmp(mark->ev->type, "TYPE_INSTANT") &&
		      annotation_is(mark, "detail", "acl_thread waited 30.0 ms after hog (pid 200) preempted it"),
	      "fixture: the marker instant");

	/* interference on the thread tracks */
	memcg = find_slice(sl, nsl, loader, "memcg reclaim");
	CHECK(memcg && memcg->start == T0 + 470 * MS && memcg->end == T0 + 482 * MS && memcg->depth == 0 &&
		      (memcg->category && !strcmp(memcg->category, "memory")) && annotation_is(memcg, "order", "0") &&
		      annotation_is(memcg, "gfp", "0xcc0") && annotation_is(memcg, "result", "32") &&
		      annotation_is(memcg, "duration_ns", "12000000") && annotation_is(memcg, "cpu", "0"),
	      "fixture: the memcg reclaim slice on dataloader's track");
	compact = find_slice(sl, nsl, loader, "compaction");
	CHECK(compact && compact->start == T0 + 700 * MS && compact->end == T0 + 703 * MS && compact->depth == 0 &&
		      annotation_is(compact, "order", "9") && annotation_is(compact, "result", "5"),
	      "fixture: the compaction slice on dataloader's track");
	mmap = find_slice(sl, nsl, acl, "lock wait: mmap_lock (rwsem read)");
	CHECK(mmap && mmap->start == T0 + 350 * MS && mmap->end == T0 + 356 * MS && mmap->depth == 0 &&
		      (mmap->category && !strcmp(mmap->category, "lock")) && annotation_is(mmap, "lock", "0xffff888104a3c0e8") &&
		      annotation_is(mmap, "flags", "0x10002") && annotation_is(mmap, "ret", "0") &&
		      annotation_is(mmap, "cpu", "1"),
	      "fixture: the mmap_lock wait on acl_thread's track");
	CHECK(mmap && annotation_is(mmap, "kernel_stack",
				    "rwsem_down_read_slowpath <- down_read <- lock_mm_and_find_vma <- "
				    "do_user_addr_fault <- exc_page_fault"),
	      "fixture: the mmap_lock wait's kernel stack '%s'", mmap ? annotation(mmap, "kernel_stack") : "");
	spin = find_slice(sl, nsl, acl, "lock wait: spinlock");
	CHECK(spin && spin->start == T0 + 700 * MS + 500 * US && spin->end - spin->start == 40 * US &&
		      spin->depth == 1 && ioctl && spin->start > ioctl->start && spin->end < ioctl->end &&
		      annotation_is(spin, "flags", "0x1") && !annotation(spin, "kernel_stack"),
	      "fixture: the spinlock wait nests in the ioctl, without a stack");
	f1 = find_slice(sl, nsl, loader_faults, "page faults: 2000 (10 major)");
	f2 = find_slice(sl, nsl, loader_faults, "page faults: 300 (0 major)");
	CHECK(f1 && f1->start == T0 + 450 * MS && f1->end == T0 + 550 * MS && f1->depth == 0 &&
		      annotation_is(f1, "faults", "2000") && annotation_is(f1, "write", "1200") &&
		      annotation_is(f1, "exec", "5") && annotation_is(f1, "prot", "40") &&
		      annotation_is(f1, "minor", "1990") && annotation_is(f1, "major", "10"),
	      "fixture: dataloader's first page-fault period");
	CHECK(f2 && f2->start == T0 + 550 * MS && f2->end == T0 + 650 * MS && f2->depth == 0 &&
		      annotation_is(f2, "minor", "300") && annotation_is(f2, "major", "0"),
	      "fixture: dataloader's second page-fault period follows the first, not nested in it");
	fixture_tracks = NULL;
	pd_tracks_free(&tr);
}

static void check_fixture_samples(const struct pd_node *root)
{
	struct interned in = { 0 };
	const struct pd_node *pk, *ps;
	size_t samples = 0, acl = 0, loader = 0, bad_flags = 0, unresolved = 0, first = 1;
	char stack[512], hex[160];

	for (pk = root->child; pk; pk = pk->next) {
		const struct pd_node *data = pd_child(pk, "interned_data");
		uint64_t flags = pd_u64(pk, "sequence_flags");

		bool profile = pd_u64(pk, "trusted_packet_sequence_id") == PROFILE_SEQUENCE_ID;

		ps = pd_child(pk, "perf_sample");
		if (data && profile)
			intern_table(&in, data);
		if (!ps) {
			/* the track sequences intern their names; the profile's stacks come with samples */
			CHECK(!data || !profile, "fixture: interned data outside the samples");
			CHECK(!data || !pd_child(data, "callstacks"), "fixture: callstacks interned outside the samples");
			continue;
		}
		samples++;
		/* the first packet of the sequence clears its state, all of them need it */
		if (pd_u64(pk, "trusted_packet_sequence_id") != PROFILE_SEQUENCE_ID ||
		    flags != (first ? 3 : 2))
			bad_flags++;
		first = 0;
		resolve_callstack(&in, pd_u64(ps, "callstack_iid"), stack, sizeof(stack));
		if (!pd_str_is(ps, "cpu_mode", "MODE_USER") || pd_u64(ps, "pid") != 100)
			unresolved++;
		else if (!strcmp(stack, "main;dispatch_loop;launch_kernel") && pd_u64(ps, "tid") == 101 &&
			 pd_u64(ps, "cpu") == 1)
			acl++;
		else if (!strcmp(stack, "libfoo.so+0x1234;load_batch;memcpy_avx") && pd_u64(ps, "tid") == 102 &&
			 pd_u64(ps, "cpu") == 0)
			loader++;
		else
			unresolved++;
	}
	CHECK(samples == 8 && acl == 6 && loader == 2 && unresolved == 0,
	      "fixture: %zu samples, %zu of acl_thread in main;dispatch_loop;launch_kernel, %zu of dataloader, "
	      "%zu other",
	      samples, acl, loader, unresolved);
	CHECK(bad_flags == 0, "fixture: %zu samples with wrong sequence id or flags", bad_flags);
	CHECK(in.redefined == 0 && in.out_of_range == 0, "fixture: %zu interned entries redefined, %zu bad iids",
	      in.redefined, in.out_of_range);
	frame_build_id(&in, "launch_kernel", hex, sizeof(hex));
	CHECK(!strcmp(hex, "0123456789abcdef0123456789abcdef01234567"), "fixture: trainer's build id '%s'", hex);
	frame_build_id(&in, "memcpy_avx", hex, sizeof(hex));
	CHECK(!strcmp(hex, "fedcba9876543210fedcba9876543210fedcba98"), "fixture: libc's build id '%s'", hex);
}

static int write_file(const char *path, const char *data, size_t len)
{
	FILE *f = fopen(path, "we");

	if (!f)
		return -1;
	if (fwrite(data, 1, len, f) != len) {
		fclose(f);
		return -1;
	}
	return fclose(f) ? -1 : 0;
}

/* The text equals the golden file; on a mismatch, keeps it for a diff. */
static void check_golden(const char *golden, const char *text, size_t len)
{
	const char *tmp = getenv("TMPDIR");
	char actual[4096], *want = NULL;
	size_t wlen = 0, line = 1, i;
	FILE *f;
	int fd;

	if (getenv("UPDATE_GOLDEN")) {
		CHECK(write_file(golden, text, len) == 0, "cannot write %s: %s", golden, strerror(errno));
		printf("fixture: wrote %s (%zu bytes): inspect it before committing\n", golden, len);
		return;
	}
	f = fopen(golden, "re");
	if (f) {
		want = xcalloc(len + 2, 1);
		wlen = fread(want, 1, len + 1, f);
		fclose(f);
	}
	if (want && wlen == len && !memcmp(want, text, len)) {
		free(want);
		return;
	}
	for (i = 0; want && i < MIN(wlen, len) && want[i] == text[i]; i++)
		line += text[i] == '\n';
	snprintf(actual, sizeof(actual), "%s/test-perfetto-actual-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	fd = mkstemp(actual);
	if (fd >= 0) {
		close(fd);
		write_file(actual, text, len);
	}
	CHECK(0, "%s: %s, first difference on line %zu; see: diff -u %s %s (UPDATE_GOLDEN=1 rewrites it)",
	      golden, want ? "differs" : "cannot be read", line, golden, actual);
	free(want);
}

/* The fixture with tables large enough to need many flushes. */
static void check_fixture_streaming(Hostprof__Snapshot *snap)
{
	const size_t n = 30000;
	Hostprof__SyscallTable sc = HOSTPROF__SYSCALL_TABLE__INIT, *saved_sc = snap->syscalls;
	Hostprof__SampleTable smp = HOSTPROF__SAMPLE_TABLE__INIT, *saved_smp = snap->samples;
	struct sink k = { 0 };
	size_t i;
	int r;

	sc.n_ts_delta = sc.n_dur_ns = sc.n_tid = sc.n_pid = sc.n_nr = sc.n_ret = n;
	sc.n_arg0 = sc.n_arg1 = sc.n_arg2 = sc.n_cpu = n;
	sc.ts_delta = xcalloc(n, sizeof(uint64_t));
	sc.dur_ns = xcalloc(n, sizeof(uint64_t));
	sc.tid = xcalloc(n, sizeof(uint32_t));
	sc.pid = xcalloc(n, sizeof(uint32_t));
	sc.nr = xcalloc(n, sizeof(uint32_t));
	sc.ret = xcalloc(n, sizeof(int64_t));
	sc.arg0 = xcalloc(n, sizeof(uint64_t));
	sc.arg1 = xcalloc(n, sizeof(uint64_t));
	sc.arg2 = xcalloc(n, sizeof(uint64_t));
	sc.cpu = xcalloc(n, sizeof(uint32_t));
	smp.n_ts_delta = smp.n_cpu = smp.n_tid = smp.n_pid = smp.n_kstack = smp.n_ustack = n;
	smp.ts_delta = xcalloc(n, sizeof(uint64_t));
	smp.cpu = xcalloc(n, sizeof(uint32_t));
	smp.tid = xcalloc(n, sizeof(uint32_t));
	smp.pid = xcalloc(n, sizeof(uint32_t));
	smp.kstack = xcalloc(n, sizeof(uint32_t));
	smp.ustack = xcalloc(n, sizeof(uint32_t));
	for (i = 0; i < n; i++) {
		sc.ts_delta[i] = 40 * US;
		sc.dur_ns[i] = 20 * US;
		sc.tid[i] = i % 2 ? 101 : 102;
		sc.pid[i] = 100;
		sc.nr[i] = i % 2 ? 16 : 0;
		smp.ts_delta[i] = 40 * US;
		smp.cpu[i] = (uint32_t)(i % 2);
		smp.tid[i] = 101;
		smp.pid[i] = 100;
		smp.kstack[i] = i % 3 ? 3 : 0;
		smp.ustack[i] = (uint32_t)(1 + i % 2);
	}
	snap->syscalls = &sc;
	snap->samples = &smp;
	r = export_to_sink(snap, &k);
	CHECK(r == 0, "fixture streaming: export %d", r);
	CHECK(k.bytes > 2 * 1024 * 1024 && k.writes >= 8 && k.max_write < 512 * 1024,
	      "fixture streaming: %zu bytes in %zu writes, largest %zu", k.bytes, k.writes, k.max_write);
	printf("fixture streaming: %zu syscalls and %zu samples, %zu bytes in %zu writes, largest %zu\n", n, n,
	       k.bytes, k.writes, k.max_write);
	snap->syscalls = saved_sc;
	snap->samples = saved_smp;
	free(sc.ts_delta);
	free(sc.dur_ns);
	free(sc.tid);
	free(sc.pid);
	free(sc.nr);
	free(sc.ret);
	free(sc.arg0);
	free(sc.arg1);
	free(sc.arg2);
	free(sc.cpu);
	free(smp.ts_delta);
	free(smp.cpu);
	free(smp.tid);
	free(smp.pid);
	free(smp.kstack);
	free(smp.ustack);
}

/*
 * The fixture with many IRQs on both CPUs, nested and overlapping, some at the same
 * nanosecond, some of length 0, some of an unknown kind or a softirq vector past RCU (9):
 * each CPU's events come out in time order, every entry with its exit, the unknown ones
 * left out.
 */
static void check_fixture_irq_order(const char *proto_dir, Hostprof__Snapshot *snap)
{
	const size_t n = 3000;
	Hostprof__IrqTable t = HOSTPROF__IRQ_TABLE__INIT, *saved = snap->irqs;
	size_t i, want = 0;
	struct decoded d;
	char path[4096];
	long size;
	int r;

	t.n_ts_delta = t.n_dur_ns = t.n_cpu = t.n_kind = t.n_num = t.n_name = t.n_tid = t.n_pid = t.n_flags = n;
	t.ts_delta = xcalloc(n, sizeof(uint64_t));
	t.dur_ns = xcalloc(n, sizeof(uint64_t));
	t.cpu = xcalloc(n, sizeof(uint32_t));
	t.kind = xcalloc(n, sizeof(uint32_t));
	t.num = xcalloc(n, sizeof(uint32_t));
	t.name = xcalloc(n, sizeof(uint32_t));
	t.tid = xcalloc(n, sizeof(uint32_t));
	t.pid = xcalloc(n, sizeof(uint32_t));
	t.flags = xcalloc(n, sizeof(uint32_t));
	for (i = 0; i < n; i++) {
		t.ts_delta[i] = i ? (i % 4) * US : 100 * MS;
		t.dur_ns[i] = i % 5 == 0 ? 50 * US : (i % 3) * US;
		t.cpu[i] = (uint32_t)(i / 3 % 2);
		t.kind[i] = i % 11 == 0 ? 7 : 1 + (uint32_t)(i % 2);
		t.num[i] = (uint32_t)(i % 13);
		t.tid[i] = 101;
		t.pid[i] = 100;
		t.flags[i] = 1;
		want += t.kind[i] == 1 || (t.kind[i] == 2 && t.num[i] < 10);
	}
	snap->irqs = &t;
	r = export_to_file(snap, path, sizeof(path), &size);
	CHECK(r == 0, "fixture with %zu IRQs: export %d", n, r);
	r = decode(proto_dir, path, &d);
	CHECK(r == 0, "fixture with %zu IRQs: decode %s", n, path);
	unlink(path);
	/* each CPU's full events, and each of its compact columns, go forward in time */
	CHECK(r == 0 && d.unknown_fields == 0 && d.sched.n == 13 + 2 + 2 * want && d.sched.disorder == 0 &&
		      d.sched.bad_columns == 0 && d.sched.dropped == 0,
	      "fixture with %zu IRQs: %zu ftrace events, want %zu; %zu out of order; %zu unknown fields", n, d.sched.n,
	      13 + 2 + 2 * want, d.sched.disorder, d.unknown_fields);
	printf("fixture with %zu IRQs (%zu written): %ld bytes, %zu bundles\n", n, want, size, d.sched.bundles);
	decoded_free(&d);
	snap->irqs = saved;
	free(t.ts_delta);
	free(t.dur_ns);
	free(t.cpu);
	free(t.kind);
	free(t.num);
	free(t.name);
	free(t.tid);
	free(t.pid);
	free(t.flags);
}

static void expect_rejected(const Hostprof__Snapshot *snap, const char *what)
{
	char path[4096];
	long size;
	int r;

	r = export_to_file(snap, path, sizeof(path), &size);
	CHECK(r == -EINVAL, "%s: got %d, want -EINVAL", what, r);
	CHECK(size == 0, "%s: %ld bytes written for rejected input", what, size);
	unlink(path);
}

/* Copies of the fixture broken in the tables the new parts of the trace read. */
static void check_fixture_invalid(Hostprof__Snapshot *snap)
{
	uint64_t saved64;
	uint32_t saved;
	Hostprof__Marker *saved_marker;

	saved = snap->wakeups->cpu[1];
	snap->wakeups->cpu[1] = 1u << 20;
	expect_rejected(snap, "wakeup on an absurd CPU");
	snap->wakeups->cpu[1] = saved;
	snap->wakeups->n_target_cpu--;
	expect_rejected(snap, "short wakeup column");
	snap->wakeups->n_target_cpu++;
	saved64 = snap->syscalls->dur_ns[2];
	snap->syscalls->dur_ns[2] = UINT64_MAX - T0;
	expect_rejected(snap, "syscall end past 2^64");
	snap->syscalls->dur_ns[2] = saved64;
	saved = snap->offcpu->kstack[0];
	snap->offcpu->kstack[0] = (uint32_t)snap->n_stacks + 1;
	expect_rejected(snap, "off-CPU stack out of range");
	snap->offcpu->kstack[0] = saved;
	saved = snap->samples->ustack[3];
	snap->samples->ustack[3] = 1000;
	expect_rejected(snap, "sample stack out of range");
	snap->samples->ustack[3] = saved;
	saved_marker = snap->markers[0];
	snap->markers[0] = NULL;
	expect_rejected(snap, "NULL marker");
	snap->markers[0] = saved_marker;

	saved = snap->irqs->cpu[2];
	snap->irqs->cpu[2] = 1u << 20;
	expect_rejected(snap, "IRQ on an absurd CPU");
	snap->irqs->cpu[2] = saved;
	saved = snap->irqs->name[0];
	snap->irqs->name[0] = (uint32_t)snap->n_strings;
	expect_rejected(snap, "IRQ name out of range");
	snap->irqs->name[0] = saved;
	snap->reclaims->n_gfp--;
	expect_rejected(snap, "short reclaim column");
	snap->reclaims->n_gfp++;
	saved64 = snap->reclaims->dur_ns[1];
	snap->reclaims->dur_ns[1] = UINT64_MAX - T0;
	expect_rejected(snap, "reclaim end past 2^64");
	snap->reclaims->dur_ns[1] = saved64;
	snap->faults->n_major--;
	expect_rejected(snap, "short fault column");
	snap->faults->n_major++;
	saved = snap->locks->kstack[0];
	snap->locks->kstack[0] = (uint32_t)snap->n_stacks + 1;
	expect_rejected(snap, "lock stack out of range");
	snap->locks->kstack[0] = saved;
}

static void test_fixture(const char *proto_dir, const char *hps)
{
	char path[4096], golden[4300], *text = NULL, *slash;
	Hostprof__Snapshot *snap = NULL;
	struct decoded d;
	struct pd_node *root;
	size_t len;
	long size;
	int r;

	r = hps_read_file(hps, &snap);
	if (r < 0) {
		CHECK(0, "cannot read the fixture %s: %s", hps, strerror(-r));
		return;
	}
	snprintf(golden, sizeof(golden), "%s", hps);
	slash = strrchr(golden, '/');
	snprintf(slash ? slash + 1 : golden, sizeof(golden) - (size_t)(slash ? slash + 1 - golden : 0),
		 "stall.pftrace.txt");

	r = export_to_file(snap, path, sizeof(path), &size);
	CHECK(r == 0, "fixture: export %d", r);
	r = pd_run_protoc(proto_dir, path, &text, &len);
	CHECK(r == 0, "fixture: decode %s", path);
	unlink(path);
	if (r < 0)
		goto out;

	r = decode_text(text, len, &d);
	CHECK(r == 0 && d.unknown_fields == 0 && d.bad_seq == 0 && d.packets_with_seq == d.packets &&
		      d.bad_clock_id == 0,
	      "fixture: %zu packets, %zu with a known sequence id, %zu unknown fields", d.packets,
	      d.packets_with_seq, d.unknown_fields);
	decoded_free(&d);
	root = pd_tree_parse(text);
	CHECK(root, "fixture: protoc output does not nest");
	if (root) {
		check_fixture_sched(root);
		check_fixture_tracks(root);
		check_fixture_samples(root);
		pd_tree_free(root);
	}
	check_golden(golden, text, len);
	printf("fixture: %ld bytes, %zu packets\n", size, d.packets);

	check_fixture_streaming(snap);
	check_fixture_irq_order(proto_dir, snap);
	check_fixture_invalid(snap);
out:
	free(text);
	hps_free(snap);
}

int main(int argc, char **argv)
{
	char dir[4096], proto[4200], fixture[4200];
	const char *env = getenv("PERFETTO_SUBSET_PROTO_DIR");

	if (argc > 1) {
		snprintf(dir, sizeof(dir), "%s", argv[1]);
	} else if (env && *env) {
		snprintf(dir, sizeof(dir), "%s", env);
	} else {
		char *slash;

		snprintf(dir, sizeof(dir), "%s", __FILE__);
		slash = strrchr(dir, '/');
		if (slash)
			*slash = '\0';
		else
			snprintf(dir, sizeof(dir), ".");
	}

	test_pbwriter();
	test_invalid();
	test_streaming();
	printf("pbwriter, invalid input, streaming: %s\n", failures ? "FAILED" : "ok");
	if (failures)
		return 1;

	if (!pd_have_protoc()) {
		printf("SKIP: %s not found: the trace checks need protoc (apt-get install "
		       "protobuf-compiler)\n",
		       pd_protoc());
		return 77;
	}
	snprintf(proto, sizeof(proto), "%s/perfetto_subset.proto", dir);
	if (access(proto, R_OK) < 0) {
		fprintf(stderr, "FAIL: cannot read %s: %s (pass the directory as argv[1])\n", proto,
			strerror(errno));
		return 1;
	}

	if (argc > 2)
		snprintf(fixture, sizeof(fixture), "%s", argv[2]);
	else
		snprintf(fixture, sizeof(fixture), "%s/../fixtures/stall.hps", dir);

	test_scene(dir);
	test_empty(dir);
	test_large(dir);
	test_fixture(dir, fixture);

	if (failures) {
		printf("%d check(s) failed\n", failures);
		return 1;
	}
	printf("all checks passed\n");
	return 0;
}
