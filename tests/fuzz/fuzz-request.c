// SPDX-License-Identifier: GPL-2.0-only
/*
 * fuzz-request: the bytes are what a client writes to hostprofd's socket, and they go to
 * the real daemon/control.c: a control listening in a temporary directory with the real
 * loop, recorder, snapshot store and triggers behind it and the fakes of
 * tests/unit/fakes.h for watch and snapsvc (tests/unit/control-harness.c, as test-control
 * runs it). Pid 1 is watched (a snapshot of it is a real snapshot job, forked) and the
 * store holds 20260101T000000Z-1-preempt (the fixture) to fetch.
 *
 * Each input is written to a fresh connection. The first byte says how many bytes each
 * write carries (0: all that the socket takes), so frames arrive split at every point;
 * after each write the loop runs until control is idle (nothing to do, no job running),
 * reading what it answers. Then the client hangs up and control lets it go.
 *
 * Besides ASan and UBSan, it checks
 *   - that control never buffers more than one request frame: no allocation while it
 *     runs is larger than HP_FRAME_HDR + HP_MAX_REQUEST, but for the snapshot job's read
 *     buffer (snapjob.c reserves 256 KiB more at each read: 256 or 512 KiB for the
 *     fixture, whatever the input);
 *   - that what one input makes control allocate is bounded: the peak of the heap
 *     above where it started stays under PEAK_MAX (an unpacked request may cost up to 64
 *     times the largest frame, as before, plus the client's buffers and a snapshot);
 *   - that what comes back is framed Responses of at most HP_MAX_RESPONSE, streams are
 *     chunks closed by an end that counts their bytes, and nothing follows a protocol
 *     error but the end of the connection;
 *   - that control settles: an input that keeps it busy for 5 s is a hang.
 */
#include <errno.h>
#include <pthread.h>
#include <sanitizer/allocator_interface.h>
#include <sanitizer/common_interface_defs.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "control-harness.h"
#include "fakes.h"
#include "hps.h"
#include "log.h"
#include "loop.h"
#include "macro.h"
#include "recorder.h"
#include "snapstore.h"

#ifndef FUZZ_FIXTURE
#error "build.sh defines FUZZ_FIXTURE: the path of tests/fixtures/stall.hps"
#endif

#define IN_BUF_MAX ((size_t)HP_FRAME_HDR + HP_MAX_REQUEST)
#define JOB_READ_BUF ((size_t)256 * 1024)
#define REQUEST_ALLOC_MAX (64 * (size_t)HP_MAX_REQUEST)
#define PEAK_MAX (REQUEST_ALLOC_MAX + IN_BUF_MAX + 3 * JOB_READ_BUF + 4 * (size_t)HP_CHUNK_SIZE)
#define SETTLE_MS 5000

#define CHECK(cond)                                                                                    \
	do {                                                                                           \
		if (!(cond)) {                                                                         \
			fprintf(stderr, "fuzz-request: %s:%d: check failed: %s\n", __FILE__, __LINE__, \
				#cond);                                                                \
			abort();                                                                       \
		}                                                                                      \
	} while (0)

static struct harness H;

/* ---- what control allocates while it runs (in the loop) ---- */

static bool counting;
static int64_t live, peak;

static void on_malloc(const volatile void *p, size_t size)
{
	if (!__atomic_load_n(&counting, __ATOMIC_RELAXED))
		return;
	if (size > IN_BUF_MAX && size != JOB_READ_BUF && size != 2 * JOB_READ_BUF) {
		fprintf(stderr, "fuzz-request: an allocation of %zu bytes (one request frame is %zu)\n", size,
			IN_BUF_MAX);
		__sanitizer_print_stack_trace();
		abort();
	}
	int64_t now = __atomic_add_fetch(&live, (int64_t)size, __ATOMIC_RELAXED);

	if (now > __atomic_load_n(&peak, __ATOMIC_RELAXED))
		__atomic_store_n(&peak, now, __ATOMIC_RELAXED);
}

static void on_free(const volatile void *p)
{
	if (!__atomic_load_n(&counting, __ATOMIC_RELAXED) || !p ||
	    !__sanitizer_get_ownership((const void *)p))
		return;
	__atomic_sub_fetch(&live, (int64_t)__sanitizer_get_allocated_size((const void *)p), __ATOMIC_RELAXED);
}

/* A snapshot job's child is not control. */
static void on_fork_child(void)
{
	__atomic_store_n(&counting, false, __ATOMIC_RELAXED);
}

static void count_start(void)
{
	__atomic_store_n(&live, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&peak, 0, __ATOMIC_RELAXED);
}

/* One batch of the loop: control runs, and only then is counted (the client side of
 * this process is not control). */
static int pump(int timeout_ms)
{
	int n;

	__atomic_store_n(&counting, true, __ATOMIC_RELAXED);
	n = harness_pump(&H, timeout_ms);
	__atomic_store_n(&counting, false, __ATOMIC_RELAXED);
	return n;
}

static void count_stop(void)
{
	if (peak > (int64_t)PEAK_MAX) {
		fprintf(stderr,
			"fuzz-request: one input made control allocate %lld bytes at once (at most %zu)\n",
			(long long)peak, PEAK_MAX);
		abort();
	}
}

/* ---- what comes back ---- */

struct session {
	bool refused; /* a protocol error came: nothing may follow */
	bool streaming; /* chunks came, no end yet */
	uint64_t streamed; /* their bytes */
};

static void check_response(struct session *s, const Hostprof__Response *resp)
{
	CHECK(!s->refused);
	switch (resp->body_case) {
	case HOSTPROF__RESPONSE__BODY_CHUNK:
		CHECK(resp->chunk->data.len > 0 && resp->chunk->data.len <= HP_CHUNK_SIZE);
		s->streaming = true;
		s->streamed += resp->chunk->data.len;
		return;
	case HOSTPROF__RESPONSE__BODY_END:
		CHECK(resp->end->has_bytes && resp->end->bytes == s->streamed);
		s->streaming = false;
		s->streamed = 0;
		return;
	case HOSTPROF__RESPONSE__BODY_ERROR:
		CHECK(resp->error->message);
		s->refused = resp->error->code == HOSTPROF__ERROR__CODE__PROTOCOL;
		break;
	case HOSTPROF__RESPONSE__BODY_HELLO:
	case HOSTPROF__RESPONSE__BODY_STATUS:
	case HOSTPROF__RESPONSE__BODY_ACK:
	case HOSTPROF__RESPONSE__BODY_SNAPSHOT_LIST:
		break;
	case HOSTPROF__RESPONSE__BODY_METRICS:
		CHECK(resp->metrics);
		break;
	default:
		CHECK(!"a response with no body");
	}
	CHECK(!s->streaming); /* nothing comes between a stream's chunks and its end */
}

static void read_responses(struct hclient *c, struct session *s)
{
	Hostprof__Response *resp;
	int r;

	r = hclient_fill(c); /* all there is, up to EOF */
	CHECK(r >= 0 || r == -EAGAIN);
	while ((r = hclient_pop(c, &resp)) == 1) {
		check_response(s, resp);
		hostprof__response__free_unpacked(resp, NULL);
	}
	CHECK(r == 0); /* -EBADMSG: not a framed Response */
}

static uint64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000ULL + ts.tv_nsec / 1000000;
}

/* Run the loop until control has nothing to do and no job is running. */
static void settle(struct hclient *c, struct session *s)
{
	uint64_t deadline = mono_ms() + SETTLE_MS;

	for (;;) {
		bool jobs = fake_snapsvc_in_flight(H.snapsvc) > 0;
		int n = pump(jobs ? 5 : 0);

		CHECK(n >= 0);
		if (c)
			read_responses(c, s);
		if (n == 0 && !jobs)
			return;
		if (mono_ms() > deadline) {
			fprintf(stderr, "fuzz-request: control did not settle in %d ms\n", SETTLE_MS);
			abort();
		}
	}
}

static void stop(void)
{
	harness_stop(&H);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	Hostprof__Snapshot *snap = NULL;
	struct proc_rec *p;
	char name[96];

	log_open("fuzz-request");
	log_set_max_level(getenv("FUZZ_REQUEST_LOG") ? LOG_DEBUG : LOG_CRIT);
	if (harness_start(&H, FUZZ_FIXTURE) < 0)
		abort();
	atexit(stop);
	CHECK(recorder_watch(H.recorder, 1, HP_WATCH_PID, 0, now_boottime_ns(), &p) == 0);
	CHECK(snapstore_ready(H.snapstore) == 0 && hps_unpack(H.hps, H.hps_len, &snap) == 0);
	CHECK(snapstore_write(H.snapstore, snap, H.hps, H.hps_len, 0, 1, "preempt",
			      1767225600ULL * NSEC_PER_SEC, name) == 0);
	CHECK(snapstore_add(H.snapstore, name, CRED(0), "", NULL) == 0);
	CHECK(!strcmp(name, "20260101T000000Z-1-preempt"));
	hps_free(snap);
	CHECK(__sanitizer_install_malloc_and_free_hooks(on_malloc, on_free));
	CHECK(pthread_atfork(NULL, NULL, on_fork_child) == 0);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct session s = {};
	struct hclient c;
	size_t chunk, off = 1;

	if (size < 1)
		return 0;
	chunk = data[0] ? data[0] : SIZE_MAX;
	fake_watch_reset(H.watch);
	fake_snapsvc_reset(H.snapsvc);
	count_start();
	CHECK(hclient_connect(&H, &c) == 0);
	while (off < size && !c.eof) {
		ssize_t w = send(c.fd, data + off, MIN(chunk, size - off), MSG_NOSIGNAL | MSG_DONTWAIT);

		if (w > 0)
			off += w;
		else if (w < 0 && (errno == EPIPE || errno == ECONNRESET))
			break; /* control closed it */
		else
			CHECK(w < 0 && (errno == EAGAIN || errno == EINTR)); /* full: control runs first */
		settle(&c, &s);
	}
	settle(&c, &s);
	hclient_close(&c);
	settle(NULL, NULL); /* the hang-up: control frees the client */
	count_stop();
	return 0;
}
