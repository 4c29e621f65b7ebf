// SPDX-License-Identifier: GPL-2.0-only
/*
 * gen-corpus: writes the seed inputs of fuzz-request and fuzz-hps that are binary, the
 * way hostprofctl and hostprofd make them (frame_append, hps_pack).
 *
 *   gen-corpus CORPUSDIR STALL_HPS
 *
 * writes CORPUSDIR/fuzz-request/<name> and CORPUSDIR/fuzz-hps/<name>. The first byte of
 * each input is the fuzz target's own (fuzz-request: bytes per read, 0 = all;
 * fuzz-hps: odd = put HPS_MAGIC in front). The outputs are checked in; run it again
 * after control.proto or snapshot.proto change:
 *   build-fuzz/gen-corpus tests/fuzz/corpus tests/fixtures/stall.hps
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "framing.h"
#include "hps.h"

static const char *dir;

static void write_file(const char *target, const char *name, uint8_t first, const void *p, size_t n)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s/%s", dir, target, name);
	f = fopen(path, "we");
	if (!f || fputc(first, f) == EOF || fwrite(p, 1, n, f) != n || fclose(f) != 0) {
		fprintf(stderr, "gen-corpus: cannot write %s: %m\n", path);
		exit(1);
	}
}

static void add_hello(struct hp_buf *b, uint32_t protocol)
{
	Hostprof__Request req = HOSTPROF__REQUEST__INIT;
	Hostprof__Hello hello = HOSTPROF__HELLO__INIT;

	hello.protocol = protocol;
	hello.version = (char *)HOSTPROF_VERSION;
	req.body_case = HOSTPROF__REQUEST__BODY_HELLO;
	req.hello = &hello;
	if (frame_append(b, &req.base, HP_MAX_REQUEST) < 0)
		abort();
}

static void add_status(struct hp_buf *b)
{
	Hostprof__Request req = HOSTPROF__REQUEST__INIT;
	Hostprof__StatusRequest st = HOSTPROF__STATUS_REQUEST__INIT;

	req.body_case = HOSTPROF__REQUEST__BODY_STATUS;
	req.status = &st;
	if (frame_append(b, &req.base, HP_MAX_REQUEST) < 0)
		abort();
}

static void add_snapshot(struct hp_buf *b, uint32_t pid, uint64_t window_ns)
{
	Hostprof__Request req = HOSTPROF__REQUEST__INIT;
	Hostprof__SnapshotRequest sr = HOSTPROF__SNAPSHOT_REQUEST__INIT;

	sr.pid = pid;
	sr.has_window_ns = window_ns != 0;
	sr.window_ns = window_ns;
	req.body_case = HOSTPROF__REQUEST__BODY_SNAPSHOT;
	req.snapshot = &sr;
	if (frame_append(b, &req.base, HP_MAX_REQUEST) < 0)
		abort();
}

static void add_watch(struct hp_buf *b, bool unwatch, uint32_t pid, const char *thread)
{
	Hostprof__Request req = HOSTPROF__REQUEST__INIT;
	Hostprof__WatchRequest w = HOSTPROF__WATCH_REQUEST__INIT;
	Hostprof__UnwatchRequest u = HOSTPROF__UNWATCH_REQUEST__INIT;

	if (unwatch) {
		u.has_pid = pid != 0;
		u.pid = pid;
		u.thread = (char *)thread;
		req.body_case = HOSTPROF__REQUEST__BODY_UNWATCH;
		req.unwatch = &u;
	} else {
		w.has_pid = pid != 0;
		w.pid = pid;
		w.thread = (char *)thread;
		req.body_case = HOSTPROF__REQUEST__BODY_WATCH;
		req.watch = &w;
	}
	if (frame_append(b, &req.base, HP_MAX_REQUEST) < 0)
		abort();
}

static void add_snapshots_fetch(struct hp_buf *b, const char *name)
{
	Hostprof__Request req = HOSTPROF__REQUEST__INIT;
	Hostprof__SnapshotsRequest list = HOSTPROF__SNAPSHOTS_REQUEST__INIT;
	Hostprof__FetchRequest fetch = HOSTPROF__FETCH_REQUEST__INIT;

	req.body_case = HOSTPROF__REQUEST__BODY_SNAPSHOTS;
	req.snapshots = &list;
	if (frame_append(b, &req.base, HP_MAX_REQUEST) < 0)
		abort();
	fetch.name = (char *)name;
	req.body_case = HOSTPROF__REQUEST__BODY_FETCH;
	req.fetch = &fetch;
	if (frame_append(b, &req.base, HP_MAX_REQUEST) < 0)
		abort();
}

static void request(const char *name, uint8_t chunk, const struct hp_buf *b)
{
	write_file("fuzz-request", name, chunk, b->data, b->len);
	free(b->data);
}

int main(int argc, char **argv)
{
	Hostprof__Snapshot empty = HOSTPROF__SNAPSHOT__INIT;
	Hostprof__Snapshot *snap;
	struct hp_buf b;
	uint8_t *data;
	size_t len;
	int r;

	if (argc != 3) {
		fprintf(stderr, "usage: gen-corpus CORPUSDIR STALL_HPS\n");
		return 2;
	}
	dir = argv[1];

	b = (struct hp_buf){};
	add_hello(&b, HP_PROTOCOL_VERSION);
	request("hello", 0, &b);

	b = (struct hp_buf){};
	add_hello(&b, HP_PROTOCOL_VERSION);
	add_status(&b);
	request("hello-status", 0, &b);

	b = (struct hp_buf){};
	add_hello(&b, HP_PROTOCOL_VERSION);
	add_snapshot(&b, 4242, 5000000000ull);
	add_status(&b);
	add_snapshot(&b, 1, 0);
	request("hello-snapshot-status-snapshot", 0, &b);

	b = (struct hp_buf){};
	add_hello(&b, HP_PROTOCOL_VERSION);
	add_snapshot(&b, 4242, 0);
	request("hello-snapshot-3-byte-reads", 3, &b);

	b = (struct hp_buf){};
	add_hello(&b, HP_PROTOCOL_VERSION);
	add_watch(&b, false, 4242, NULL);
	add_watch(&b, false, 0, "hccl_*");
	add_watch(&b, true, 0, "acl_?hread");
	add_watch(&b, true, 4242, NULL);
	request("hello-watch-unwatch", 0, &b);

	b = (struct hp_buf){};
	add_hello(&b, HP_PROTOCOL_VERSION);
	add_snapshots_fetch(&b, "20260101T000000Z-1-preempt");
	add_snapshots_fetch(&b, "../../etc/passwd");
	request("hello-snapshots-fetch", 0, &b);

	b = (struct hp_buf){};
	add_hello(&b, 999);
	request("hello-version-999", 0, &b);

	b = (struct hp_buf){};
	add_status(&b);
	request("status-without-hello", 1, &b);

	b = (struct hp_buf){};
	add_hello(&b, HP_PROTOCOL_VERSION);
	add_hello(&b, HP_PROTOCOL_VERSION);
	request("two-hellos", 0, &b);

	b = (struct hp_buf){};
	add_hello(&b, HP_PROTOCOL_VERSION);
	if (hp_buf_append(&b, "\xff\xff\xff\xff", 4) < 0)
		abort();
	request("4g-length", 0, &b);

	b = (struct hp_buf){};
	add_hello(&b, HP_PROTOCOL_VERSION);
	if (hp_buf_append(&b, "\x00\x00\x00\x00", 4) < 0)
		abort();
	request("zero-length", 0, &b);

	/* fuzz-hps: the fixture as it is, and without its magic; an empty snapshot */
	r = hps_read_file(argv[2], &snap);
	if (r < 0) {
		fprintf(stderr, "gen-corpus: %s: %s\n", argv[2], strerror(-r));
		return 1;
	}
	if (hps_pack(snap, &data, &len) < 0)
		abort();
	write_file("fuzz-hps", "stall", 0, data, len);
	write_file("fuzz-hps", "stall-nomagic", 1, data + HPS_MAGIC_LEN, len - HPS_MAGIC_LEN);
	free(data);
	hps_free(snap);
	if (hps_pack(&empty, &data, &len) < 0)
		abort();
	write_file("fuzz-hps", "empty", 0, data, len);
	free(data);
	return 0;
}
