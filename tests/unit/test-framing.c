// SPDX-License-Identifier: GPL-2.0-only
/*
 * Unit test of lib/framing.c, the control socket's wire format.
 *
 * 1. Every Request and Response body round-trips through frame_append + frame_peek.
 * 2. frame_peek on hostile or partial input: byte by byte, oversized headers (refused
 *    before the payload arrives), a zero length, several frames back to back.
 * 3. struct hp_buf: consume, reserve reclaiming consumed space before growing.
 * 4. frame_write_fd/frame_read_fd over a socketpair: messages both ways, a large frame
 *    through a writer child, a peer that closes mid-header and mid-frame, oversized and
 *    zero-length headers.
 * 5. Random and mutated bytes given to the protobuf-c decoders never crash them.
 */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "framing.h"
#include "macro.h"

static void put_le32(uint8_t *p, uint32_t v)
{
	p[0] = v;
	p[1] = v >> 8;
	p[2] = v >> 16;
	p[3] = v >> 24;
}

static uint32_t get_le32(const uint8_t *p)
{
	return p[0] | p[1] << 8 | p[2] << 16 | (uint32_t)p[3] << 24;
}

/*
 * Frame msg alone into a fresh buffer, check the header, peek the payload and return it
 * unpacked with desc (NULL on any failure, already reported).
 */
static ProtobufCMessage *round_trip(const ProtobufCMessage *msg, size_t max)
{
	const ProtobufCMessageDescriptor *desc = msg->descriptor;
	size_t n = protobuf_c_message_get_packed_size(msg), len = 0;
	struct hp_buf b = {};
	const uint8_t *payload = NULL;
	ProtobufCMessage *out = NULL;
	int r;

	r = frame_append(&b, msg, max);
	CHECK_EQ_INT(r, 0);
	if (r < 0)
		goto out;
	CHECK_EQ_U64(hp_buf_pending(&b), HP_FRAME_HDR + n);
	CHECK_EQ_U64(get_le32(b.data), n);
	r = frame_peek(&b, max, &payload, &len);
	CHECK_EQ_INT(r, 1);
	if (r != 1)
		goto out;
	CHECK(payload == b.data + HP_FRAME_HDR);
	CHECK_EQ_U64(len, n);
	out = protobuf_c_message_unpack(desc, NULL, len, payload);
	CHECKF(out, "%s does not unpack", desc->name);
	hp_buf_consume(&b, HP_FRAME_HDR + len);
	CHECK_EQ_U64(hp_buf_pending(&b), 0);
out:
	hp_buf_free(&b);
	return out;
}

static void test_requests(void)
{
	Hostprof__Hello hello = HOSTPROF__HELLO__INIT;
	Hostprof__StatusRequest status = HOSTPROF__STATUS_REQUEST__INIT;
	Hostprof__SnapshotRequest snap = HOSTPROF__SNAPSHOT_REQUEST__INIT;
	Hostprof__Request req = HOSTPROF__REQUEST__INIT;
	Hostprof__Request *got;
	struct hp_buf b = {};

	hello.protocol = HP_PROTOCOL_VERSION;
	hello.version = "0.1.0";
	req.body_case = HOSTPROF__REQUEST__BODY_HELLO;
	req.hello = &hello;
	got = (Hostprof__Request *)round_trip(&req.base, HP_MAX_REQUEST);
	if (got) {
		CHECK_EQ_INT(got->body_case, HOSTPROF__REQUEST__BODY_HELLO);
		if (got->body_case == HOSTPROF__REQUEST__BODY_HELLO) {
			CHECK_EQ_U64(got->hello->protocol, HP_PROTOCOL_VERSION);
			CHECK_STR(got->hello->version, "0.1.0");
		}
		hostprof__request__free_unpacked(got, NULL);
	}

	/* an empty StatusRequest still makes a non-empty frame: the oneof tag */
	req.body_case = HOSTPROF__REQUEST__BODY_STATUS;
	req.status = &status;
	got = (Hostprof__Request *)round_trip(&req.base, HP_MAX_REQUEST);
	if (got) {
		CHECK_EQ_INT(got->body_case, HOSTPROF__REQUEST__BODY_STATUS);
		CHECK(got->status != NULL);
		hostprof__request__free_unpacked(got, NULL);
	}

	req.body_case = HOSTPROF__REQUEST__BODY_SNAPSHOT;
	req.snapshot = &snap;
	snap.pid = 4194304;
	got = (Hostprof__Request *)round_trip(&req.base, HP_MAX_REQUEST);
	if (got) {
		CHECK_EQ_INT(got->body_case, HOSTPROF__REQUEST__BODY_SNAPSHOT);
		if (got->body_case == HOSTPROF__REQUEST__BODY_SNAPSHOT) {
			CHECK_EQ_U64(got->snapshot->pid, 4194304);
			CHECK(!got->snapshot->has_window_ns);
		}
		hostprof__request__free_unpacked(got, NULL);
	}
	snap.has_window_ns = 1;
	snap.window_ns = UINT64_MAX;
	got = (Hostprof__Request *)round_trip(&req.base, HP_MAX_REQUEST);
	if (got) {
		CHECK_EQ_INT(got->body_case, HOSTPROF__REQUEST__BODY_SNAPSHOT);
		if (got->body_case == HOSTPROF__REQUEST__BODY_SNAPSHOT) {
			CHECK(got->snapshot->has_window_ns);
			CHECK_EQ_U64(got->snapshot->window_ns, UINT64_MAX);
		}
		hostprof__request__free_unpacked(got, NULL);
	}

	/* nothing set packs to nothing: no frame, since a zero length is refused on reading */
	req.body_case = HOSTPROF__REQUEST__BODY__NOT_SET;
	CHECK(frame_append(&b, &req.base, HP_MAX_REQUEST) < 0);
	CHECK_EQ_U64(b.len, 0);
	hp_buf_free(&b);
}

static void test_responses(void)
{
	Hostprof__Hello hello = HOSTPROF__HELLO__INIT;
	Hostprof__Error error = HOSTPROF__ERROR__INIT;
	Hostprof__Status status = HOSTPROF__STATUS__INIT;
	Hostprof__WatchedProcess wp[2] = { HOSTPROF__WATCHED_PROCESS__INIT,
					   HOSTPROF__WATCHED_PROCESS__INIT };
	Hostprof__WatchedProcess *wpp[2] = { &wp[0], &wp[1] };
	Hostprof__Drop drop = HOSTPROF__DROP__INIT, *dropp = &drop;
	char *globs[] = { "acl_*", "*worker?" };
	Hostprof__SnapshotChunk chunk = HOSTPROF__SNAPSHOT_CHUNK__INIT;
	Hostprof__SnapshotEnd end = HOSTPROF__SNAPSHOT_END__INIT;
	Hostprof__Response resp = HOSTPROF__RESPONSE__INIT, *got;
	uint8_t *data = malloc(HP_CHUNK_SIZE);
	uint64_t seed = 1;
	struct hp_buf b = {};

	if (!data) {
		CHECK(data != NULL);
		return;
	}
	for (size_t i = 0; i < HP_CHUNK_SIZE; i++)
		data[i] = check_rand(&seed);

	hello.protocol = HP_PROTOCOL_VERSION;
	resp.body_case = HOSTPROF__RESPONSE__BODY_HELLO;
	resp.hello = &hello;
	got = (Hostprof__Response *)round_trip(&resp.base, HP_MAX_RESPONSE);
	if (got) {
		CHECK_EQ_INT(got->body_case, HOSTPROF__RESPONSE__BODY_HELLO);
		if (got->body_case == HOSTPROF__RESPONSE__BODY_HELLO) {
			CHECK_EQ_U64(got->hello->protocol, HP_PROTOCOL_VERSION);
			CHECK(got->hello->version == NULL);
		}
		hostprof__response__free_unpacked(got, NULL);
	}

	error.code = HOSTPROF__ERROR__CODE__BUSY;
	error.message = "too many clients: \"x\"\n";
	resp.body_case = HOSTPROF__RESPONSE__BODY_ERROR;
	resp.error = &error;
	got = (Hostprof__Response *)round_trip(&resp.base, HP_MAX_RESPONSE);
	if (got) {
		CHECK_EQ_INT(got->body_case, HOSTPROF__RESPONSE__BODY_ERROR);
		if (got->body_case == HOSTPROF__RESPONSE__BODY_ERROR) {
			CHECK_EQ_INT(got->error->code, HOSTPROF__ERROR__CODE__BUSY);
			CHECK_STR(got->error->message, "too many clients: \"x\"\n");
		}
		hostprof__response__free_unpacked(got, NULL);
	}

	wp[0].has_pid = 1;
	wp[0].pid = 1234;
	wp[0].comm = "server";
	wp[0].has_events = 1;
	wp[0].events = 1ULL << 40;
	wp[0].has_bytes = 1;
	wp[0].bytes = 65536;
	wp[0].why = "thread acl_thread";
	wp[1].has_pid = 1;
	wp[1].pid = 99;
	wp[1].has_exited = 1;
	wp[1].exited = 1;
	wp[1].why = "child of 1234";
	drop.cause = "ring_full";
	drop.has_count = 1;
	drop.count = 7;
	status.version = "0.1.0";
	status.has_uptime_ns = 1;
	status.uptime_ns = 123456789012345ULL;
	status.has_pid = 1;
	status.pid = 42;
	status.n_processes = 2;
	status.processes = wpp;
	status.has_events = 1;
	status.events = 1000000;
	status.has_events_per_sec = 1;
	status.events_per_sec = 12345.5;
	status.n_drops = 1;
	status.drops = &dropp;
	status.has_memory_limit = 1;
	status.memory_limit = 256ULL << 20;
	status.has_ncpus = 1;
	status.ncpus = 64;
	status.n_watch_threads = 2;
	status.watch_threads = globs;
	resp.body_case = HOSTPROF__RESPONSE__BODY_STATUS;
	resp.status = &status;
	got = (Hostprof__Response *)round_trip(&resp.base, HP_MAX_RESPONSE);
	if (got) {
		CHECK_EQ_INT(got->body_case, HOSTPROF__RESPONSE__BODY_STATUS);
		if (got->body_case == HOSTPROF__RESPONSE__BODY_STATUS) {
			const Hostprof__Status *s = got->status;

			CHECK_STR(s->version, "0.1.0");
			CHECK_EQ_U64(s->uptime_ns, 123456789012345ULL);
			CHECK_EQ_U64(s->pid, 42);
			CHECK_EQ_U64(s->events, 1000000);
			CHECK(s->has_events_per_sec && s->events_per_sec == 12345.5);
			CHECK(!s->has_memory_bytes && !s->has_rss_bytes && !s->has_ring_kb);
			CHECK_EQ_U64(s->memory_limit, 256ULL << 20);
			CHECK_EQ_U64(s->ncpus, 64);
			CHECK_EQ_U64(s->n_processes, 2);
			if (s->n_processes == 2) {
				CHECK_EQ_U64(s->processes[0]->pid, 1234);
				CHECK_STR(s->processes[0]->comm, "server");
				CHECK_EQ_U64(s->processes[0]->events, 1ULL << 40);
				CHECK_EQ_U64(s->processes[0]->bytes, 65536);
				CHECK(!s->processes[0]->has_exited);
				CHECK_STR(s->processes[0]->why, "thread acl_thread");
				CHECK_EQ_U64(s->processes[1]->pid, 99);
				CHECK(s->processes[1]->has_exited && s->processes[1]->exited);
				CHECK(s->processes[1]->comm == NULL);
				CHECK_STR(s->processes[1]->why, "child of 1234");
			}
			CHECK_EQ_U64(s->n_drops, 1);
			if (s->n_drops == 1) {
				CHECK_STR(s->drops[0]->cause, "ring_full");
				CHECK_EQ_U64(s->drops[0]->count, 7);
			}
			CHECK_EQ_U64(s->n_watch_threads, 2);
			if (s->n_watch_threads == 2) {
				CHECK_STR(s->watch_threads[0], "acl_*");
				CHECK_STR(s->watch_threads[1], "*worker?");
			}
		}
		hostprof__response__free_unpacked(got, NULL);
	}

	/* a full chunk: fits a response, not a request */
	chunk.data.data = data;
	chunk.data.len = HP_CHUNK_SIZE;
	resp.body_case = HOSTPROF__RESPONSE__BODY_CHUNK;
	resp.chunk = &chunk;
	got = (Hostprof__Response *)round_trip(&resp.base, HP_MAX_RESPONSE);
	if (got) {
		CHECK_EQ_INT(got->body_case, HOSTPROF__RESPONSE__BODY_CHUNK);
		if (got->body_case == HOSTPROF__RESPONSE__BODY_CHUNK) {
			CHECK_EQ_U64(got->chunk->data.len, HP_CHUNK_SIZE);
			if (got->chunk->data.len == HP_CHUNK_SIZE)
				CHECK_MEM(got->chunk->data.data, data, HP_CHUNK_SIZE);
		}
		hostprof__response__free_unpacked(got, NULL);
	}
	CHECK_EQ_INT(frame_append(&b, &resp.base, HP_MAX_REQUEST), -EMSGSIZE);
	CHECK_EQ_U64(b.len, 0);
	/* the limit is on the payload: exactly max passes, one byte less refuses */
	{
		size_t n = protobuf_c_message_get_packed_size(&resp.base);

		CHECK_EQ_INT(frame_append(&b, &resp.base, n - 1), -EMSGSIZE);
		CHECK_EQ_U64(b.len, 0);
		CHECK_EQ_INT(frame_append(&b, &resp.base, n), 0);
		CHECK_EQ_U64(b.len, HP_FRAME_HDR + n);
	}
	hp_buf_free(&b);

	/* an empty chunk */
	chunk.data.len = 0;
	chunk.data.data = NULL;
	got = (Hostprof__Response *)round_trip(&resp.base, HP_MAX_RESPONSE);
	if (got) {
		CHECK_EQ_INT(got->body_case, HOSTPROF__RESPONSE__BODY_CHUNK);
		if (got->body_case == HOSTPROF__RESPONSE__BODY_CHUNK)
			CHECK_EQ_U64(got->chunk->data.len, 0);
		hostprof__response__free_unpacked(got, NULL);
	}

	end.has_bytes = 1;
	end.bytes = 5ULL << 30;
	end.has_events = 1;
	end.events = 77;
	end.has_pid = 1;
	end.pid = 1234;
	resp.body_case = HOSTPROF__RESPONSE__BODY_END;
	resp.end = &end;
	got = (Hostprof__Response *)round_trip(&resp.base, HP_MAX_RESPONSE);
	if (got) {
		CHECK_EQ_INT(got->body_case, HOSTPROF__RESPONSE__BODY_END);
		if (got->body_case == HOSTPROF__RESPONSE__BODY_END) {
			CHECK_EQ_U64(got->end->bytes, 5ULL << 30);
			CHECK_EQ_U64(got->end->events, 77);
			CHECK_EQ_U64(got->end->pid, 1234);
		}
		hostprof__response__free_unpacked(got, NULL);
	}
	free(data);
}

/* A Hello request of about `pad` bytes, for frames of a chosen size. */
static void make_hello(Hostprof__Request *req, Hostprof__Hello *hello, char *version,
		       size_t pad, char fill)
{
	*hello = (Hostprof__Hello)HOSTPROF__HELLO__INIT;
	*req = (Hostprof__Request)HOSTPROF__REQUEST__INIT;
	memset(version, fill, pad);
	version[pad] = '\0';
	hello->protocol = HP_PROTOCOL_VERSION;
	hello->version = version;
	req->body_case = HOSTPROF__REQUEST__BODY_HELLO;
	req->hello = hello;
}

static void test_partial(void)
{
	Hostprof__Request req;
	Hostprof__Hello hello;
	char version[301];
	struct hp_buf whole = {}, in = {};
	const uint8_t *payload = NULL;
	size_t len = 0;
	bool early = false;

	make_hello(&req, &hello, version, 300, 'v');
	CHECK_EQ_INT(frame_append(&whole, &req.base, HP_MAX_REQUEST), 0);
	for (size_t i = 0; i < whole.len; i++) {
		int r = frame_peek(&in, HP_MAX_REQUEST, &payload, &len);

		if (r != 0 && !early) {
			CHECKF(r == 0, "frame_peek = %d with %zu of %zu bytes", r, i, whole.len);
			early = true;
		}
		CHECK_EQ_INT(hp_buf_append(&in, whole.data + i, 1), 0);
	}
	CHECK(!early);
	CHECK_EQ_INT(frame_peek(&in, HP_MAX_REQUEST, &payload, &len), 1);
	CHECK_EQ_U64(len, whole.len - HP_FRAME_HDR);
	CHECK_MEM(payload, whole.data + HP_FRAME_HDR, whole.len - HP_FRAME_HDR);
	hp_buf_free(&whole);
	hp_buf_free(&in);
}

/* frame_peek on a buffer holding just these header bytes (and maybe some payload). */
static int peek_header(uint32_t n, size_t payload_bytes, size_t max)
{
	struct hp_buf b = {};
	const uint8_t *payload = (const uint8_t *)"untouched";
	size_t len = 12345;
	uint8_t hdr[HP_FRAME_HDR];
	int r;

	put_le32(hdr, n);
	hp_buf_append(&b, hdr, sizeof(hdr));
	hp_buf_reserve(&b, payload_bytes);
	memset(b.data + b.len, 'p', payload_bytes);
	b.len += payload_bytes;
	r = frame_peek(&b, max, &payload, &len);
	if (r != 1) {
		CHECK_STR((const char *)payload, "untouched");
		CHECK_EQ_U64(len, 12345);
	}
	hp_buf_free(&b);
	return r;
}

static void test_hostile_headers(void)
{
	struct hp_buf b = {};
	const uint8_t *payload;
	size_t len;

	/* announcing one byte too many is refused from the header alone */
	CHECK_EQ_INT(peek_header(HP_MAX_REQUEST + 1, 0, HP_MAX_REQUEST), -EMSGSIZE);
	CHECK_EQ_INT(peek_header(HP_MAX_REQUEST + 1, 100, HP_MAX_REQUEST), -EMSGSIZE);
	CHECK_EQ_INT(peek_header(0xffffffff, 0, HP_MAX_REQUEST), -EMSGSIZE);
	CHECK_EQ_INT(peek_header(0xffffffff, 0, HP_MAX_RESPONSE), -EMSGSIZE);
	CHECK_EQ_INT(peek_header(0x80000000, 0, HP_MAX_RESPONSE), -EMSGSIZE);
	/* exactly the maximum is allowed and waits for its payload */
	CHECK_EQ_INT(peek_header(HP_MAX_REQUEST, 0, HP_MAX_REQUEST), 0);
	CHECK_EQ_INT(peek_header(HP_MAX_REQUEST, HP_MAX_REQUEST - 1, HP_MAX_REQUEST), 0);
	CHECK_EQ_INT(peek_header(HP_MAX_REQUEST, HP_MAX_REQUEST, HP_MAX_REQUEST), 1);
	CHECK_EQ_INT(peek_header(1, 1, HP_MAX_REQUEST), 1);
	/* zero length */
	CHECK_EQ_INT(peek_header(0, 0, HP_MAX_REQUEST), -EBADMSG);
	CHECK_EQ_INT(peek_header(0, 10, HP_MAX_REQUEST), -EBADMSG);

	/* fewer than four header bytes: wait, whatever they say */
	for (size_t i = 0; i < HP_FRAME_HDR; i++) {
		static const uint8_t ff[HP_FRAME_HDR] = { 0xff, 0xff, 0xff, 0xff };

		CHECK_EQ_INT(frame_peek(&b, HP_MAX_REQUEST, &payload, &len), 0);
		CHECK_EQ_INT(hp_buf_append(&b, ff + i, 1), 0);
	}
	CHECK_EQ_INT(frame_peek(&b, HP_MAX_REQUEST, &payload, &len), -EMSGSIZE);
	hp_buf_free(&b);
}

static void test_back_to_back(void)
{
	struct hp_buf b = {};
	char version[2000];
	static const size_t sizes[] = { 0, 1, 127, 128, 1000, 1999, 5 };
	const uint8_t *payload;
	size_t len, i = 0;
	int r;

	for (size_t k = 0; k < ARRAY_SIZE(sizes); k++) {
		Hostprof__Request req;
		Hostprof__Hello hello;

		make_hello(&req, &hello, version, sizes[k], 'a' + k);
		CHECK_EQ_INT(frame_append(&b, &req.base, HP_MAX_REQUEST), 0);
	}
	/* a partial eighth frame at the end */
	CHECK_EQ_INT(hp_buf_append(&b, "\x10\x00\x00\x00\x0a", 5), 0);

	while ((r = frame_peek(&b, HP_MAX_REQUEST, &payload, &len)) == 1) {
		Hostprof__Request *got = hostprof__request__unpack(NULL, len, payload);

		CHECKF(got && got->body_case == HOSTPROF__REQUEST__BODY_HELLO,
		       "frame %zu does not unpack to a Hello", i);
		if (got && got->body_case == HOSTPROF__REQUEST__BODY_HELLO &&
		    i < ARRAY_SIZE(sizes)) {
			const char *v = got->hello->version;
			bool same = strlen(v) == sizes[i];

			for (size_t j = 0; same && j < sizes[i]; j++)
				same = v[j] == (char)('a' + i);
			CHECKF(same, "frame %zu: version of %zu bytes, want %zu of '%c'", i,
			       strlen(v), sizes[i], (char)('a' + i));
		}
		hostprof__request__free_unpacked(got, NULL);
		hp_buf_consume(&b, HP_FRAME_HDR + len);
		i++;
	}
	CHECK_EQ_INT(r, 0);
	CHECK_EQ_U64(i, ARRAY_SIZE(sizes));
	CHECK_EQ_U64(hp_buf_pending(&b), 5);
	CHECK_EQ_U64(get_le32(b.data + b.off), 0x10);
	hp_buf_free(&b);
	CHECK(b.data == NULL && b.len == 0 && b.off == 0 && b.cap == 0);
}

static uint8_t stream_byte(size_t pos)
{
	return pos * 7 + pos / 251;
}

static void test_buf(void)
{
	struct hp_buf b = {};
	uint8_t bytes[4096];
	uint8_t *before;

	for (size_t i = 0; i < sizeof(bytes); i++)
		bytes[i] = i * 7;

	CHECK_EQ_INT(hp_buf_append(&b, bytes, sizeof(bytes)), 0);
	CHECK_EQ_U64(b.len, 4096);
	CHECK(b.cap >= 4096);
	CHECK_MEM(b.data, bytes, 4096);

	/* consumed space is reclaimed before growing, and what was pending moves to the front */
	hp_buf_consume(&b, 4000);
	CHECK_EQ_U64(hp_buf_pending(&b), 96);
	CHECK_EQ_U64(b.off, 4000);
	before = b.data;
	{
		size_t cap = b.cap, want = cap - 96;

		CHECK_EQ_INT(hp_buf_reserve(&b, want), 0);
		CHECK_EQ_U64(b.cap, cap);
		CHECK(b.data == before);
		CHECK_EQ_U64(b.off, 0);
		CHECK_EQ_U64(b.len, 96);
		CHECK_MEM(b.data, bytes + 4000, 96);
		CHECK(b.len + want <= b.cap);
	}

	/* reserving more than fits grows and keeps the pending bytes */
	hp_buf_consume(&b, 6);
	CHECK_EQ_INT(hp_buf_reserve(&b, b.cap), 0);
	CHECK_EQ_U64(b.off, 0);
	CHECK_EQ_U64(hp_buf_pending(&b), 90);
	CHECK_MEM(b.data, bytes + 4006, 90);
	CHECK(b.len + 90 <= b.cap);

	/* consuming everything (or more) empties it, keeping the memory */
	hp_buf_consume(&b, 90);
	CHECK_EQ_U64(hp_buf_pending(&b), 0);
	CHECK_EQ_U64(b.off, 0);
	CHECK_EQ_U64(b.len, 0);
	CHECK(b.data != NULL);
	CHECK_EQ_INT(hp_buf_append(&b, "xyz", 3), 0);
	hp_buf_consume(&b, 1000);
	CHECK_EQ_U64(hp_buf_pending(&b), 0);
	CHECK_EQ_U64(b.len, 0);

	/* interleaved appends and partial consumes keep the byte order; memory stays bounded */
	{
		uint64_t seed = 7;
		size_t in = 0, out = 0, bad = SIZE_MAX;
		uint8_t chunk[700];

		for (int k = 0; k < 2000; k++) {
			size_t a = check_rand(&seed) % sizeof(chunk), c;

			for (size_t j = 0; j < a; j++)
				chunk[j] = stream_byte(in + j);
			if (hp_buf_append(&b, chunk, a) < 0)
				break;
			in += a;
			c = check_rand(&seed) % sizeof(chunk);
			c = MIN(c, hp_buf_pending(&b));
			for (size_t j = 0; j < c && bad == SIZE_MAX; j++)
				if (b.data[b.off + j] != stream_byte(out + j))
					bad = out + j;
			hp_buf_consume(&b, c);
			out += c;
		}
		CHECKF(bad == SIZE_MAX, "stream byte %zu changed", bad);
		CHECK_EQ_U64(hp_buf_pending(&b), in - out);
		CHECKF(b.cap <= 64 * 1024, "cap %zu for at most %zu pending bytes", b.cap,
		       in - out);
	}
	hp_buf_free(&b);
	hp_buf_free(&b); /* twice is harmless */

	/* a size that does not fit in memory fails instead of wrapping around */
	CHECK_EQ_INT(hp_buf_append(&b, "0123456789", 10), 0);
	{
		int r = hp_buf_reserve(&b, SIZE_MAX - 5);

		CHECKF(r == -ENOMEM, "hp_buf_reserve(len %zu, SIZE_MAX - 5) = %d, cap %zu", b.len,
		       r, b.cap);
		CHECK_MEM(b.data, "0123456789", 10);
	}
	hp_buf_free(&b);
}

/*
 * A connected pair whose reads give up after two seconds: a reader that waits for bytes
 * that never come fails with -EAGAIN instead of hanging the test.
 */
static int make_pair(int sv[2])
{
	struct timeval tv = { .tv_sec = 2 };

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		return -errno;
	for (int i = 0; i < 2; i++)
		if (setsockopt(sv[i], SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) < 0)
			return -errno;
	return 0;
}

/* Waits for a writer child of the socketpair tests; its exit status is a check. */
static void wait_child(pid_t pid, const char *what)
{
	int status = 0;

	CHECK_EQ_INT(waitpid(pid, &status, 0), pid);
	CHECKF(WIFEXITED(status) && WEXITSTATUS(status) == 0, "%s child: status %#x", what, status);
}

static void test_fd(void)
{
	Hostprof__Response resp = HOSTPROF__RESPONSE__INIT;
	Hostprof__Error error = HOSTPROF__ERROR__INIT;
	Hostprof__SnapshotChunk chunk = HOSTPROF__SNAPSHOT_CHUNK__INIT;
	Hostprof__Request req;
	Hostprof__Hello hello;
	struct hp_buf buf = {};
	const uint8_t *payload;
	char version[64];
	uint8_t hdr[HP_FRAME_HDR + 10], *big;
	int sv[2], r;
	pid_t pid;

	/* both ways, several frames, the buffer reused */
	CHECK_EQ_INT(make_pair(sv), 0);
	make_hello(&req, &hello, version, 10, 'q');
	CHECK_EQ_INT(frame_write_fd(sv[0], &req.base, HP_MAX_REQUEST), 0);
	error.code = HOSTPROF__ERROR__CODE__NOT_FOUND;
	error.message = "no such process";
	resp.body_case = HOSTPROF__RESPONSE__BODY_ERROR;
	resp.error = &error;
	CHECK_EQ_INT(frame_write_fd(sv[1], &resp.base, HP_MAX_RESPONSE), 0);
	CHECK_EQ_INT(frame_write_fd(sv[1], &resp.base, HP_MAX_RESPONSE), 0);

	r = frame_read_fd(sv[1], HP_MAX_REQUEST, &buf, &payload);
	CHECK_EQ_INT(r, protobuf_c_message_get_packed_size(&req.base));
	if (r > 0) {
		Hostprof__Request *got = hostprof__request__unpack(NULL, r, payload);

		CHECK(got && got->body_case == HOSTPROF__REQUEST__BODY_HELLO);
		if (got && got->body_case == HOSTPROF__REQUEST__BODY_HELLO)
			CHECK_STR(got->hello->version, "qqqqqqqqqq");
		hostprof__request__free_unpacked(got, NULL);
	}
	for (int k = 0; k < 2; k++) {
		r = frame_read_fd(sv[0], HP_MAX_RESPONSE, &buf, &payload);
		CHECK_EQ_INT(r, protobuf_c_message_get_packed_size(&resp.base));
		if (r > 0) {
			Hostprof__Response *got = hostprof__response__unpack(NULL, r, payload);

			CHECK(got && got->body_case == HOSTPROF__RESPONSE__BODY_ERROR);
			if (got && got->body_case == HOSTPROF__RESPONSE__BODY_ERROR) {
				CHECK_EQ_INT(got->error->code, HOSTPROF__ERROR__CODE__NOT_FOUND);
				CHECK_STR(got->error->message, "no such process");
			}
			hostprof__response__free_unpacked(got, NULL);
		}
	}

	/* too big for max: refused and nothing written */
	CHECK_EQ_INT(frame_write_fd(sv[0], &resp.base, 3), -EMSGSIZE);
	CHECK_EQ_INT(recv(sv[1], hdr, sizeof(hdr), MSG_DONTWAIT), -1);
	CHECK_EQ_INT(errno, EAGAIN);

	/* a header announcing more than max: refused before reading the payload */
	put_le32(hdr, HP_MAX_REQUEST + 1);
	memset(hdr + HP_FRAME_HDR, 'x', 10);
	CHECK_EQ_INT(write(sv[0], hdr, sizeof(hdr)), sizeof(hdr));
	CHECK_EQ_INT(frame_read_fd(sv[1], HP_MAX_REQUEST, &buf, &payload), -EMSGSIZE);
	CHECK_EQ_INT(recv(sv[1], hdr, sizeof(hdr), MSG_DONTWAIT), 10);
	put_le32(hdr, 0xffffffff);
	CHECK_EQ_INT(write(sv[0], hdr, HP_FRAME_HDR), HP_FRAME_HDR);
	CHECK_EQ_INT(frame_read_fd(sv[1], SIZE_MAX, &buf, &payload), -EMSGSIZE);
	put_le32(hdr, 0);
	CHECK_EQ_INT(write(sv[0], hdr, HP_FRAME_HDR), HP_FRAME_HDR);
	CHECK_EQ_INT(frame_read_fd(sv[1], HP_MAX_REQUEST, &buf, &payload), -EBADMSG);

	/* a frame larger than the socket buffer, written by a child while we read */
	big = malloc(HP_MAX_RESPONSE / 2);
	if (big) {
		uint64_t seed = 99;

		for (size_t i = 0; i < HP_MAX_RESPONSE / 2; i++)
			big[i] = check_rand(&seed);
		chunk.data.data = big;
		chunk.data.len = HP_MAX_RESPONSE / 2;
		resp.body_case = HOSTPROF__RESPONSE__BODY_CHUNK;
		resp.chunk = &chunk;
		pid = fork();
		if (pid == 0) {
			close(sv[1]);
			_exit(frame_write_fd(sv[0], &resp.base, HP_MAX_RESPONSE) == 0 ? 0 : 1);
		}
		CHECK(pid > 0);
		r = frame_read_fd(sv[1], HP_MAX_RESPONSE, &buf, &payload);
		CHECK_EQ_INT(r, protobuf_c_message_get_packed_size(&resp.base));
		if (r > 0) {
			Hostprof__Response *got = hostprof__response__unpack(NULL, r, payload);

			CHECK(got && got->body_case == HOSTPROF__RESPONSE__BODY_CHUNK);
			if (got && got->body_case == HOSTPROF__RESPONSE__BODY_CHUNK) {
				CHECK_EQ_U64(got->chunk->data.len, HP_MAX_RESPONSE / 2);
				if (got->chunk->data.len == HP_MAX_RESPONSE / 2)
					CHECK_MEM(got->chunk->data.data, big, HP_MAX_RESPONSE / 2);
			}
			hostprof__response__free_unpacked(got, NULL);
		}
		if (pid > 0)
			wait_child(pid, "large frame");
		free(big);
	}
	close(sv[0]);
	close(sv[1]);

	/* the peer closes before, in the header, and in the payload */
	for (int cut = 0; cut < 3; cut++) {
		static const size_t sent[] = { 0, 2, HP_FRAME_HDR + 5 };

		CHECK_EQ_INT(make_pair(sv), 0);
		put_le32(hdr, 100);
		memset(hdr + HP_FRAME_HDR, 'y', 10);
		CHECK_EQ_INT(write(sv[0], hdr, sent[cut]), sent[cut]);
		close(sv[0]);
		CHECKF((r = frame_read_fd(sv[1], HP_MAX_REQUEST, &buf, &payload)) == -ECONNRESET,
		       "closed after %zu bytes: %d", sent[cut], r);
		close(sv[1]);
	}

	/* writing to a closed peer is an error, not a success (with SIGPIPE ignored) */
	CHECK_EQ_INT(make_pair(sv), 0);
	close(sv[1]);
	signal(SIGPIPE, SIG_IGN);
	CHECK_EQ_INT(frame_write_fd(sv[0], &req.base, HP_MAX_REQUEST), -EPIPE);
	signal(SIGPIPE, SIG_DFL);
	close(sv[0]);

	/* a bad fd */
	CHECK_EQ_INT(frame_read_fd(-1, HP_MAX_REQUEST, &buf, &payload), -EBADF);
	CHECK_EQ_INT(frame_write_fd(-1, &req.base, HP_MAX_REQUEST), -EBADF);
	hp_buf_free(&buf);
}

/* Random bytes, and valid frames with bytes flipped, given to the decoders. */
static void test_fuzz_unpack(void)
{
	uint64_t seed = 0xf00d;
	uint8_t bytes[256], valid[256];
	unsigned long decoded = 0;
	Hostprof__Request req;
	Hostprof__Hello hello;
	char version[40];
	size_t vlen;

	make_hello(&req, &hello, version, 30, 'z');
	vlen = protobuf_c_message_pack(&req.base, valid);

	for (int i = 0; i < 20000; i++) {
		size_t len = check_rand(&seed) % sizeof(bytes);
		Hostprof__Request *rq;
		Hostprof__Response *rs;

		if (i % 2) {
			for (size_t j = 0; j < len; j++)
				bytes[j] = check_rand(&seed);
		} else {
			/* mostly-valid input reaches deeper into the decoder */
			len = vlen;
			memcpy(bytes, valid, vlen);
			for (int f = 0; f < 1 + (int)(check_rand(&seed) % 3); f++)
				bytes[check_rand(&seed) % vlen] = check_rand(&seed);
			len = check_rand(&seed) % 4 ? vlen : check_rand(&seed) % vlen;
		}
		rq = hostprof__request__unpack(NULL, len, bytes);
		if (rq) {
			decoded++;
			CHECKF(rq->body_case <= HOSTPROF__REQUEST__BODY_FETCH, "body_case %d",
			       rq->body_case);
			/* what decodes packs again */
			CHECK(protobuf_c_message_get_packed_size(&rq->base) <= 2 * len + 16);
			hostprof__request__free_unpacked(rq, NULL);
		}
		rs = hostprof__response__unpack(NULL, len, bytes);
		if (rs) {
			CHECKF(rs->body_case <= HOSTPROF__RESPONSE__BODY_END, "body_case %d",
			       rs->body_case);
			hostprof__response__free_unpacked(rs, NULL);
		}
	}
	printf("fuzz: %lu of 20000 inputs decoded as a Request\n", decoded);
	CHECK(decoded > 0);
}

static void on_alarm(int sig)
{
	static const char msg[] = "FAIL: still running after 20 s: a blocking helper hangs\n";

	(void)!write(STDERR_FILENO, msg, sizeof(msg) - 1);
	_exit(1);
}

int main(void)
{
	/* a helper that spins or blocks fails the test, instead of waiting for meson's timeout */
	signal(SIGALRM, on_alarm);
	alarm(20);

	test_requests();
	test_responses();
	test_partial();
	test_hostile_headers();
	test_back_to_back();
	test_buf();
	test_fd();
	test_fuzz_unpack();
	return check_summary();
}
