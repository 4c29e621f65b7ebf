// SPDX-License-Identifier: GPL-2.0-only
/*
 * fuzz-request: the bytes are what a client writes to hostprofd's socket. They go
 * through the daemon's input path as daemon/control.c runs it (client_read,
 * process_input, handle_request): reads of at most one request frame into a struct
 * hp_buf, frame_peek() with HP_MAX_REQUEST, hostprof__request__unpack(), the hello /
 * version / body checks, the thread globs of watch and unwatch requests (checked and
 * compiled as the daemon does), and hp_buf_consume().
 *
 * The first byte picks how many bytes each read() returns (0: all there is room for),
 * so frames arrive split at every point. Besides ASan and UBSan, it checks that the
 * input buffer never grows past one request frame and that unpacking a request never
 * allocates more than REQUEST_ALLOC_MAX (protobuf-c is given a counting allocator, the
 * daemon passes NULL: the same code path).
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "framing.h"
#include "glob.h"

/* What one unpacked request may cost: 64 times the largest frame. */
#define REQUEST_ALLOC_MAX (64 * (size_t)HP_MAX_REQUEST)
#define IN_CAP_MAX (2 * (size_t)(HP_FRAME_HDR + HP_MAX_REQUEST))

#define CHECK(cond)                                                                           \
	do {                                                                                  \
		if (!(cond)) {                                                                \
			fprintf(stderr, "fuzz-request: %s:%d: check failed: %s\n", __FILE__, \
				__LINE__, #cond);                                            \
			abort();                                                              \
		}                                                                             \
	} while (0)

struct counting {
	size_t live, peak;
};

struct alloc_hdr {
	size_t n;
	max_align_t pad[];
};

static void *count_alloc(void *data, size_t n)
{
	struct counting *c = data;
	struct alloc_hdr *h = malloc(sizeof(*h) + n);

	if (!h)
		return NULL;
	h->n = n;
	c->live += n;
	if (c->live > c->peak)
		c->peak = c->live;
	return h + 1;
}

static void count_free(void *data, void *p)
{
	struct counting *c = data;
	struct alloc_hdr *h;

	if (!p)
		return;
	h = (struct alloc_hdr *)p - 1;
	c->live -= h->n;
	free(h);
}

struct client {
	struct hp_buf in;
	bool hello, closing, streaming;
};

/* A thread glob from a watch or unwatch request: daemon_add_glob() checks it and
 * capture_set_globs() compiles it for the kernel; user space runs the same automaton. */
static void use_glob(const char *pat)
{
	struct hp_glob g;

	if (!thread_glob_valid(pat))
		return;
	CHECK(strlen(pat) < HP_COMM_LEN);
	if (thread_glob_compile(pat, &g) < 0)
		return;
	(void)thread_glob_run(&g, "acl_thread");
	(void)thread_glob_run(&g, pat);
}

/* handle_request() of daemon/control.c, without the daemon behind it. */
static void handle_request(struct client *cl, const uint8_t *data, size_t len)
{
	struct counting cnt = {};
	ProtobufCAllocator alloc = { count_alloc, count_free, &cnt };
	Hostprof__Request *req = hostprof__request__unpack(&alloc, len, data);

	CHECK(cnt.peak <= REQUEST_ALLOC_MAX);
	if (!req) {
		CHECK(cnt.live == 0);
		cl->closing = true; /* "malformed request" */
		return;
	}
	if (!cl->hello && req->body_case != HOSTPROF__REQUEST__BODY_HELLO) {
		cl->closing = true; /* "the first message must be a hello" */
		goto out;
	}
	switch (req->body_case) {
	case HOSTPROF__REQUEST__BODY_HELLO:
		CHECK(req->hello);
		if (cl->hello || req->hello->protocol != HP_PROTOCOL_VERSION)
			cl->closing = true;
		else
			cl->hello = true;
		/* the daemon logs the version string it is given */
		if (req->hello->version)
			(void)strlen(req->hello->version);
		break;
	case HOSTPROF__REQUEST__BODY_STATUS:
		CHECK(req->status);
		break;
	case HOSTPROF__REQUEST__BODY_SNAPSHOT:
		CHECK(req->snapshot);
		(void)(req->snapshot->pid + (req->snapshot->has_window_ns ? req->snapshot->window_ns : 0));
		cl->streaming = true; /* the daemon reads nothing more until the stream ends */
		break;
	case HOSTPROF__REQUEST__BODY_WATCH:
		CHECK(req->watch);
		if (req->watch->thread)
			use_glob(req->watch->thread);
		break;
	case HOSTPROF__REQUEST__BODY_UNWATCH:
		CHECK(req->unwatch);
		if (req->unwatch->thread)
			use_glob(req->unwatch->thread);
		break;
	case HOSTPROF__REQUEST__BODY_SNAPSHOTS:
		CHECK(req->snapshots);
		break;
	case HOSTPROF__REQUEST__BODY_FETCH:
		CHECK(req->fetch && req->fetch->name);
		/* snapstore_find(): a name from the index, compared, never made a path */
		if (!strcmp(req->fetch->name, "hostprof-1-20260101T000000Z-preempt"))
			cl->streaming = true;
		break;
	default:
		cl->closing = true; /* "unknown request" */
	}
out:
	hostprof__request__free_unpacked(req, &alloc);
	CHECK(cnt.live == 0);
}

/* process_input() of daemon/control.c */
static void process_input(struct client *cl)
{
	const uint8_t *payload;
	size_t len;
	int r;

	while (!cl->closing && !cl->streaming) {
		r = frame_peek(&cl->in, HP_MAX_REQUEST, &payload, &len);
		if (r == 0)
			return;
		if (r < 0) {
			CHECK(r == -EMSGSIZE || r == -EBADMSG);
			cl->closing = true;
			return;
		}
		CHECK(r == 1 && len > 0 && len <= HP_MAX_REQUEST);
		CHECK(payload >= cl->in.data + cl->in.off && payload + len <= cl->in.data + cl->in.len);
		handle_request(cl, payload, len);
		hp_buf_consume(&cl->in, HP_FRAME_HDR + len);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct client cl = {};
	size_t chunk, off;

	if (size < 1)
		return 0;
	chunk = data[0] ? data[0] : SIZE_MAX;
	off = 1;
	/* client_read(): never buffer more than one request frame */
	while (off < size && !cl.closing) {
		size_t room = HP_FRAME_HDR + HP_MAX_REQUEST - hp_buf_pending(&cl.in);
		size_t n;

		if (cl.streaming)
			cl.streaming = false; /* the snapshot was sent: on_client() reads again */
		if (room == 0) {
			process_input(&cl);
			if (hp_buf_pending(&cl.in) == HP_FRAME_HDR + HP_MAX_REQUEST && !cl.closing &&
			    !cl.streaming) {
				/* a full buffer that holds no complete frame cannot happen */
				CHECK(0);
			}
			continue;
		}
		CHECK(hp_buf_reserve(&cl.in, room) == 0);
		CHECK(cl.in.cap <= IN_CAP_MAX);
		n = size - off;
		if (n > room)
			n = room;
		if (n > chunk)
			n = chunk;
		memcpy(cl.in.data + cl.in.len, data + off, n);
		cl.in.len += n;
		off += n;
		process_input(&cl);
	}
	hp_buf_free(&cl.in);
	return 0;
}
