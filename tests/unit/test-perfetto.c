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
 *
 * Usage: test-perfetto [PROTO_DIR]   (the directory holding perfetto_subset.proto; meson passes
 * it, else $PERFETTO_SUBSET_PROTO_DIR, else the directory of this source file).
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
#include "macro.h"
#include "pbwriter.h"

#define SEQUENCE_ID 0x4850 /* what export_perfetto.c writes */
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
	CHECK(n == 4, "nested length takes %zu bytes, want 4", n);
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

struct ev {
	uint32_t cpu;
	size_t bundle;
	uint64_t ts;
	int64_t pid;
	bool has_switch;
	char prev_comm[32], next_comm[32];
	int64_t prev_pid, prev_prio, prev_state, next_pid, next_prio;
};

struct named {
	int64_t id, parent;
	char name[64];
};

struct decoded {
	size_t packets, packets_with_seq, packets_with_ts, bad_seq, bad_clock_id, unknown_fields;
	size_t bundles, max_bundle;
	size_t nev, cap;
	struct ev *ev;
	size_t nclocks;
	int64_t clock_id[8];
	uint64_t clock_ts[8];
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

static void on_open(struct decoded *d, const char *name, const char *parent, uint32_t bundle_cpu)
{
	if (!strcmp(name, "packet")) {
		d->packets++;
	} else if (!strcmp(name, "ftrace_events")) {
		d->bundles++;
	} else if (!strcmp(name, "event") && !strcmp(parent, "ftrace_events")) {
		if (d->nev == d->cap) {
			d->cap = d->cap ? 2 * d->cap : 1024;
			d->ev = realloc(d->ev, d->cap * sizeof(*d->ev));
			if (!d->ev) {
				fprintf(stderr, "out of memory\n");
				exit(1);
			}
		}
		memset(&d->ev[d->nev], 0, sizeof(d->ev[0]));
		d->ev[d->nev].cpu = bundle_cpu;
		d->ev[d->nev].bundle = d->bundles;
		d->ev[d->nev].pid = -1;
		d->nev++;
	} else if (!strcmp(name, "clocks") && d->nclocks < 8) {
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
		     bool *packet_has_seq, bool *packet_has_ts, uint32_t *bundle_cpu,
		     size_t *bundle_events)
{
	struct ev *e = d->nev ? &d->ev[d->nev - 1] : NULL;
	long long i = strtoll(val, NULL, 0);

	if (key[0] >= '0' && key[0] <= '9') {
		d->unknown_fields++;
	} else if (!strcmp(msg, "packet")) {
		if (!strcmp(key, "trusted_packet_sequence_id")) {
			*packet_has_seq = true;
			if (i != SEQUENCE_ID)
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
	} else if (!strcmp(msg, "ftrace_events") && !strcmp(key, "cpu")) {
		*bundle_cpu = (uint32_t)i;
		*bundle_events = 0;
	} else if (!strcmp(msg, "event") && e) {
		if (!strcmp(key, "timestamp"))
			e->ts = strtoull(val, NULL, 0);
		else if (!strcmp(key, "pid"))
			e->pid = i;
	} else if (!strcmp(msg, "sched_switch") && e) {
		e->has_switch = true;
		if (!strcmp(key, "prev_comm"))
			copy_value(e->prev_comm, sizeof(e->prev_comm), val);
		else if (!strcmp(key, "prev_pid"))
			e->prev_pid = i;
		else if (!strcmp(key, "prev_prio"))
			e->prev_prio = i;
		else if (!strcmp(key, "prev_state"))
			e->prev_state = i;
		else if (!strcmp(key, "next_comm"))
			copy_value(e->next_comm, sizeof(e->next_comm), val);
		else if (!strcmp(key, "next_pid"))
			e->next_pid = i;
		else if (!strcmp(key, "next_prio"))
			e->next_prio = i;
	}
}

static void shell_quote(char *dst, size_t len, const char *s)
{
	size_t n = 0;

	dst[n++] = '\'';
	for (; *s && n + 6 < len; s++) {
		if (*s == '\'') {
			memcpy(dst + n, "'\\''", 4);
			n += 4;
		} else {
			dst[n++] = *s;
		}
	}
	dst[n++] = '\'';
	dst[n] = '\0';
}

static const char *protoc(void)
{
	const char *p = getenv("PROTOC");

	return p && *p ? p : "protoc";
}

/* Runs protoc --decode on the trace file and parses its text output into d. */
static int decode(const char *proto_dir, const char *path, struct decoded *d)
{
	char qdir[8192], qpath[8192], qprotoc[8192], cmd[32768], line[4096];
	char stack[MAX_DEPTH][32];
	bool has_seq = false, has_ts = false;
	uint32_t bundle_cpu = UINT32_MAX;
	size_t depth = 0, bundle_events = 0;
	FILE *p;
	int status;

	memset(d, 0, sizeof(*d));
	shell_quote(qdir, sizeof(qdir), proto_dir);
	shell_quote(qpath, sizeof(qpath), path);
	shell_quote(qprotoc, sizeof(qprotoc), protoc());
	snprintf(cmd, sizeof(cmd),
		 "%s --proto_path=%s --decode=perfetto.protos.Trace perfetto_subset.proto < %s",
		 qprotoc, qdir, qpath);
	p = popen(cmd, "r");
	if (!p) {
		fprintf(stderr, "popen %s: %s\n", cmd, strerror(errno));
		return -1;
	}

	while (fgets(line, sizeof(line), p)) {
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
			on_open(d, s, depth ? stack[depth - 1] : "", bundle_cpu);
			if (!strcmp(s, "event"))
				bundle_events++;
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
			} else if (!strcmp(stack[depth], "ftrace_events")) {
				if (bundle_events > d->max_bundle)
					d->max_bundle = bundle_events;
				bundle_cpu = UINT32_MAX;
			}
		} else if ((colon = strstr(s, ": "))) {
			*colon = '\0';
			on_field(d, depth ? stack[depth - 1] : "", s, colon + 2, &has_seq, &has_ts,
				 &bundle_cpu, &bundle_events);
		} else {
			fprintf(stderr, "unexpected protoc output: %s\n", s);
			d->unknown_fields++;
		}
	}

	status = pclose(p);
	if (status == -1 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		fprintf(stderr, "protoc --decode failed (status %d): %s\n", status, cmd);
		return -1;
	}
	if (depth != 0) {
		fprintf(stderr, "protoc output ended inside a message\n");
		return -1;
	}
	return 0;
}

static void decoded_free(struct decoded *d)
{
	free(d->ev);
	d->ev = NULL;
}

/* What every trace made from a fixture has, events or not. */
static void check_metadata(const struct decoded *d, const char *what)
{
	bool boot = false, real = false, mono = false;
	size_t i;

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
	}
	CHECK(d->nclocks == 3 && boot && real && mono, "%s: clocks %zu boot %d real %d mono %d",
	      what, d->nclocks, boot, real, mono);
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

static bool event_matches(const struct ev *e, const struct sw *s, uint64_t ts)
{
	return e->ts == ts && e->has_switch && e->pid == s->prev_tid &&
	       e->prev_pid == s->prev_tid && e->next_pid == s->next_tid &&
	       e->prev_prio == s->prev_prio && e->next_prio == s->next_prio &&
	       e->prev_state == s->prev_state && !strcmp(e->prev_comm, strings[s->prev_comm]) &&
	       !strcmp(e->next_comm, strings[s->next_comm]);
}

/* Events per CPU in file order must be the input's events of that CPU, in input order. */
static void check_events(const struct decoded *d, const struct sw *sw, size_t n, const char *what)
{
	size_t i, k, matched = 0;
	uint32_t cpu, max_cpu = 0;
	const struct ev *e;

	CHECK(d->nev == n, "%s: %zu events decoded, %zu exported", what, d->nev, n);
	CHECK(d->max_bundle <= BUNDLE_MAX, "%s: a bundle holds %zu events", what, d->max_bundle);
	for (i = 0; i < n; i++)
		max_cpu = MAX(max_cpu, sw[i].cpu);

	for (cpu = 0; cpu <= max_cpu; cpu++) {
		uint64_t ts = START_NS, last = 0;

		for (i = 0, k = 0; i < n; i++) {
			ts += sw[i].dt;
			if (sw[i].cpu != cpu)
				continue;
			while (k < d->nev && d->ev[k].cpu != cpu)
				k++;
			if (k == d->nev) {
				CHECK(0, "%s: cpu %u: input event %zu missing", what, cpu, i);
				break;
			}
			e = &d->ev[k++];
			CHECK(e->ts >= last, "%s: cpu %u: time goes back at %zu", what, cpu, i);
			last = e->ts;
			if (event_matches(e, &sw[i], ts))
				matched++;
			else
				CHECK(0, "%s: cpu %u event %zu: ts %" PRIu64 " (want %" PRIu64
				      ") %s -> %s", what, cpu, i, e->ts, ts, e->prev_comm,
				      e->next_comm);
		}
	}
	CHECK(matched == n, "%s: %zu of %zu events match the input", what, matched, n);
}

/* The moment that matters: hog preempts acl_thread on CPU 1; S and D pass through as is. */
static void check_scene(const struct decoded *d)
{
	size_t i, preempts = 0;
	const struct ev *e;

	for (i = 0; i < d->nev; i++) {
		e = &d->ev[i];
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
		CHECK(d.bundles == 2, "scene: %zu bundles, want one per CPU", d.bundles);
		check_scene(&d);
		printf("scene: %ld bytes, %zu packets, %zu bundles, %zu sched_switch\n", size,
		       d.packets, d.bundles, d.nev);
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
			CHECK(d.nev == 0 && d.bundles == 0, "empty %d: %zu events", pass, d.nev);
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
		CHECK(d.bundles >= n / BUNDLE_MAX, "large: %zu bundles", d.bundles);
		printf("large: %ld bytes, %zu packets, %zu bundles, %zu sched_switch\n", size,
		       d.packets, d.bundles, d.nev);
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

static bool have_protoc(void)
{
	char q[8192], cmd[8300];
	int status;

	shell_quote(q, sizeof(q), protoc());
	snprintf(cmd, sizeof(cmd), "%s --version >/dev/null 2>&1", q);
	status = system(cmd);
	return status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

int main(int argc, char **argv)
{
	char dir[4096], proto[4200];
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

	if (!have_protoc()) {
		printf("SKIP: %s not found: the trace checks need protoc (apt-get install "
		       "protobuf-compiler)\n",
		       protoc());
		return 77;
	}
	snprintf(proto, sizeof(proto), "%s/perfetto_subset.proto", dir);
	if (access(proto, R_OK) < 0) {
		fprintf(stderr, "FAIL: cannot read %s: %s (pass the directory as argv[1])\n", proto,
			strerror(errno));
		return 1;
	}

	test_scene(dir);
	test_empty(dir);
	test_large(dir);

	if (failures) {
		printf("%d check(s) failed\n", failures);
		return 1;
	}
	printf("all checks passed\n");
	return 0;
}
