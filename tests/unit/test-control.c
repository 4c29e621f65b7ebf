// SPDX-License-Identifier: GPL-2.0-only
/*
 * daemon/control.c through its socket: the real control, loop, recorder, snapshot store
 * and triggers, the fakes of fakes.h for watch and snapsvc (control-harness.c), clients
 * that write frames and read what comes back while the test drives the loop.
 *
 *   test-control protocol FIXTURE   hello and versions, frames (split, pipelined, zero,
 *                                   oversized, exactly the limit), malformed and unknown
 *   test-control requests FIXTURE   status (every drop cause, each trigger's counts), the
 *                                   same in metrics,
 *                                   snapshot streams, watch/unwatch, the automatic
 *                                   snapshots, busy, a client gone mid-job, a client that
 *                                   stops reading, the client limit
 *   test-control auth FIXTURE       who may do what: a client of another uid than the
 *                                   processes and snapshots it is refused; its quota
 *                                   (user_watched) in status and refusing its watch,
 *                                   never root's
 *
 * FIXTURE is tests/fixtures/stall.hps: every snapshot job hands it back, and the
 * automatic snapshots are copies of it. As root the auth client drops to uid 65534 and
 * its own processes are children the test starts as that uid; otherwise the client is
 * the test's own uid and "another uid" is root's (pid 1, a snapshot indexed as root's).
 * Exits 77 when that cannot be set up, and says why.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "control-harness.h"
#include "fakes.h"
#include "formats.h"
#include "hps.h"
#include "log.h"
#include "loop.h"
#include "macro.h"
#include "procfs.h"
#include "recorder.h"
#include "snapstore.h"
#include "trigger.h"

#define TIMEOUT_MS 3000
#define NOBODY 65534
#define EXIT_SKIP 77

static struct harness H;

/* ---- what came back ---- */

static const char *describe(const Hostprof__Response *r)
{
	static char buf[640];

	if (!r)
		return "nothing";
	switch (r->body_case) {
	case HOSTPROF__RESPONSE__BODY_HELLO:
		return "hello";
	case HOSTPROF__RESPONSE__BODY_ERROR:
		snprintf(buf, sizeof(buf), "error %d: %s", r->error->code, r->error->message);
		return buf;
	case HOSTPROF__RESPONSE__BODY_STATUS:
		return "status";
	case HOSTPROF__RESPONSE__BODY_CHUNK:
		snprintf(buf, sizeof(buf), "a chunk of %zu bytes", r->chunk->data.len);
		return buf;
	case HOSTPROF__RESPONSE__BODY_END:
		return "a snapshot end";
	case HOSTPROF__RESPONSE__BODY_ACK:
		snprintf(buf, sizeof(buf), "ack: %s", r->ack->message ? r->ack->message : "");
		return buf;
	case HOSTPROF__RESPONSE__BODY_SNAPSHOT_LIST:
		return "a snapshot list";
	default:
		return "an empty response";
	}
}

/* The next response, or NULL (a failed check). */
static Hostprof__Response *next(struct hclient *c, const char *what)
{
	Hostprof__Response *resp = NULL;
	int r = hclient_recv(&H, c, TIMEOUT_MS, &resp);

	CHECKF(r == 1, "%s: no response (%s)", what, r == 0 ? "closed" : strerror(-r));
	return r == 1 ? resp : NULL;
}

/* The next response if it is a `body`, else NULL (a failed check). */
static Hostprof__Response *expect(struct hclient *c, Hostprof__Response__BodyCase body, const char *what)
{
	Hostprof__Response *resp = next(c, what);

	if (!resp)
		return NULL;
	CHECKF(resp->body_case == body, "%s: got %s", what, describe(resp));
	if (resp->body_case != body) {
		hostprof__response__free_unpacked(resp, NULL);
		return NULL;
	}
	return resp;
}

static void expect_error(struct hclient *c, Hostprof__Error__Code code, const char *needle, const char *what)
{
	Hostprof__Response *resp = next(c, what);

	if (!resp)
		return;
	CHECKF(resp->body_case == HOSTPROF__RESPONSE__BODY_ERROR && resp->error->code == code &&
		       strstr(resp->error->message, needle),
	       "%s: want error %d with \"%s\", got %s", what, code, needle, describe(resp));
	hostprof__response__free_unpacked(resp, NULL);
}

static void expect_ack(struct hclient *c, const char *needle, const char *what)
{
	Hostprof__Response *resp = next(c, what);

	if (!resp)
		return;
	CHECKF(resp->body_case == HOSTPROF__RESPONSE__BODY_ACK && resp->ack->message &&
		       strstr(resp->ack->message, needle),
	       "%s: want an ack with \"%s\", got %s", what, needle, describe(resp));
	hostprof__response__free_unpacked(resp, NULL);
}

/* Nothing more: control closed the connection. */
static void expect_closed(struct hclient *c, const char *what)
{
	Hostprof__Response *resp = NULL;
	int r = hclient_recv(&H, c, TIMEOUT_MS, &resp);

	CHECKF(r == 0, "%s: want the connection closed, got %s", what,
	       r == 1 ? describe(resp) :
	       r < 0  ? strerror(-r) :
			"?");
	if (r == 1)
		hostprof__response__free_unpacked(resp, NULL);
}

/* Chunks, then the end: their bytes are data, the end says len and pid. */
static void expect_stream(struct hclient *c, const uint8_t *data, size_t len, uint32_t pid, const char *what)
{
	struct hp_buf got = {};
	Hostprof__Response *resp;

	while ((resp = next(c, what))) {
		if (resp->body_case == HOSTPROF__RESPONSE__BODY_CHUNK) {
			CHECK(hp_buf_append(&got, resp->chunk->data.data, resp->chunk->data.len) == 0);
			CHECKF(resp->chunk->data.len > 0 && resp->chunk->data.len <= HP_CHUNK_SIZE,
			       "%s: a chunk of %zu bytes", what, resp->chunk->data.len);
			hostprof__response__free_unpacked(resp, NULL);
			continue;
		}
		CHECKF(resp->body_case == HOSTPROF__RESPONSE__BODY_END, "%s: want chunks and an end, got %s",
		       what, describe(resp));
		if (resp->body_case == HOSTPROF__RESPONSE__BODY_END) {
			CHECKF(resp->end->bytes == len && resp->end->pid == pid,
			       "%s: end says %llu bytes of pid %u", what,
			       (unsigned long long)resp->end->bytes, resp->end->pid);
			CHECKF(got.len == len && !memcmp(got.data, data, len),
			       "%s: %zu bytes streamed, want %zu", what, got.len, len);
		}
		hostprof__response__free_unpacked(resp, NULL);
		break;
	}
	hp_buf_free(&got);
}

/* One SnapshotFd, its frame with a memfd: sealed, len bytes, the hps in them. */
static void expect_snap_fd(struct hclient *c, const uint8_t *data, size_t len, uint32_t pid, const char *what)
{
	const int seals = F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL;
	unsigned before = c->n_passed;
	Hostprof__Response *resp = expect(c, HOSTPROF__RESPONSE__BODY_SNAPSHOT_FD, what);
	uint8_t *got = NULL;
	struct stat st;
	int fd;

	if (!resp)
		return;
	CHECKF(resp->snapshot_fd->bytes == len && resp->snapshot_fd->pid == pid, "%s: it says %llu bytes of pid %u",
	       what, (unsigned long long)resp->snapshot_fd->bytes, resp->snapshot_fd->pid);
	hostprof__response__free_unpacked(resp, NULL);
	CHECKF(c->n_passed == before + 1 && c->passed1, "%s: %u descriptors passed with it", what, c->n_passed - before);
	if (!c->passed1)
		return;
	fd = c->passed1 - 1;
	c->passed1 = 0;
	CHECKF(fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && (size_t)st.st_size == len, "%s: a file of %lld bytes",
	       what, (long long)st.st_size);
	CHECKF((fcntl(fd, F_GET_SEALS) & seals) == seals, "%s: seals %#x", what, fcntl(fd, F_GET_SEALS));
	CHECKF(pwrite(fd, "x", 1, 0) < 0 && errno == EPERM, "%s: the peer can write into it", what);
	got = malloc(len + 1);
	CHECK(got && pread(fd, got, len + 1, 0) == (ssize_t)len && !memcmp(got, data, len));
	free(got);
	close(fd);
}

static void send_req(struct hclient *c, const Hostprof__Request *req, const char *what)
{
	int r = hclient_send(&H, c, req);

	CHECKF(r == 0, "%s: send failed: %s", what, strerror(-r));
}

/* A connected client that said hello. */
static bool open_client(struct hclient *c)
{
	Hostprof__Request req;
	Hostprof__Hello hello;
	Hostprof__Response *resp;
	int r = hclient_connect(&H, c);

	CHECKF(r == 0, "connect %s: %s", H.socket, strerror(-r));
	if (r < 0)
		return false;
	hreq_hello(&req, &hello, HP_PROTOCOL_VERSION);
	send_req(c, &req, "hello");
	resp = expect(c, HOSTPROF__RESPONSE__BODY_HELLO, "hello");
	if (!resp)
		return false;
	hostprof__response__free_unpacked(resp, NULL);
	return true;
}

static void send_frame_bytes(struct hclient *c, const void *p, size_t n, const char *what)
{
	int r = hclient_send_raw(&H, c, p, n);

	CHECKF(r == 0, "%s: send failed: %s", what, strerror(-r));
}

static void append_req(struct hp_buf *b, const Hostprof__Request *req)
{
	CHECK(frame_append(b, &req->base, HP_MAX_REQUEST) == 0);
}

/* ---- processes of our own ---- */

/* A child that does nothing, as uid (dropped to it when that is not ours). 0, or -errno
 * when it could not become uid. */
static int spawn_idle(uid_t uid, pid_t *ret)
{
	int fds[2], err = 0;
	pid_t pid;

	if (pipe2(fds, O_CLOEXEC) < 0)
		return -errno;
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		int e = 0;

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		close(fds[0]);
		if (uid != getuid() &&
		    (setgroups(0, NULL) < 0 || setresgid(uid, uid, uid) < 0 || setresuid(uid, uid, uid) < 0))
			e = errno;
		/* a credential change without an exec leaves a process undumpable (as
		 * suid_dumpable says); what a user runs is exec'd, and dumpable again */
		if (!e && prctl(PR_SET_DUMPABLE, 1) < 0)
			e = errno;
		(void)!write(fds[1], &e, sizeof(e));
		if (e)
			_exit(1);
		for (;;)
			pause();
	}
	close(fds[1]);
	if (read(fds[0], &err, sizeof(err)) != sizeof(err))
		err = EIO;
	close(fds[0]);
	if (err) {
		waitpid(pid, NULL, 0);
		return -err;
	}
	*ret = pid;
	return 0;
}

static void reap(pid_t pid)
{
	if (pid > 0) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
	}
}

static struct proc_rec *watch_in_recorder(uint32_t pid)
{
	struct proc_rec *p = NULL;
	int r = recorder_watch(H.recorder, pid, HP_WATCH_PID, 0, now_boottime_ns(), &p);

	CHECKF(r == 0, "recorder_watch(%u): %s", pid, strerror(-r));
	return r == 0 ? p : NULL;
}

/* An automatic snapshot of pid, indexed as uid's: the fixture, written by snapstore_write.
 * Its name goes to ret_name (entries move as the index is sorted and pruned). */
static bool add_entry(uint32_t pid, uint32_t uid, const char *trigger, uint64_t realtime_ns,
		      const char *summary, char ret_name[96])
{
	Hostprof__Snapshot *snap = NULL;
	const struct snap_entry *e = NULL;
	char name[96];
	int r;

	r = snapstore_ready(H.snapstore);
	if (r >= 0)
		r = hps_unpack(H.hps, H.hps_len, &snap);
	if (r >= 0)
		r = snapstore_write(H.snapstore, snap, H.hps, H.hps_len, 0, pid, trigger, realtime_ns, name);
	if (r >= 0)
		r = snapstore_add(H.snapstore, name, CRED(uid), summary, &e);
	hps_free(snap);
	CHECKF(r >= 0 && e, "an automatic snapshot of pid %u: %s", pid, strerror(-r));
	if (r < 0 || !e)
		return false;
	memcpy(ret_name, e->name, 96);
	return true;
}

static uint64_t days(unsigned n)
{
	return (1767225600ULL + n * 86400ULL) * NSEC_PER_SEC; /* 2026-01-01 + n days */
}

/* A syscall record of pid/tid that lasted dur_ns, through the triggers as the drain sends it. */
static void feed_syscall(uint32_t pid, uint64_t ts, uint64_t dur_ns)
{
	struct hp_syscall e = {
		.hdr = { .ts = ts, .type = HP_EV_SYSCALL, .size = sizeof(e) },
		.dur_ns = dur_ns,
		.tid = pid,
		.pid = pid,
		.nr = 0,
	};

	recorder_append(H.recorder, &e.hdr);
	triggers_on_record(H.triggers, H.recorder, &e.hdr);
}

/* ---- protocol ---- */

static void part_protocol(void)
{
	Hostprof__Request req;
	Hostprof__Hello hello;
	Hostprof__StatusRequest st;
	Hostprof__WatchRequest w;
	Hostprof__SnapshotsRequest sl;
	Hostprof__FetchRequest f;
	Hostprof__Response *resp;
	struct hclient c = { .fd = -1 };
	struct hp_buf b;

	/* hello: both ways, with the version */
	CHECK(hclient_connect(&H, &c) == 0);
	hreq_hello(&req, &hello, HP_PROTOCOL_VERSION);
	send_req(&c, &req, "hello");
	resp = expect(&c, HOSTPROF__RESPONSE__BODY_HELLO, "hello");
	if (resp) {
		CHECK_EQ_U64(resp->hello->protocol, HP_PROTOCOL_VERSION);
		CHECK_STR(resp->hello->version, HOSTPROF_VERSION);
		hostprof__response__free_unpacked(resp, NULL);
	}
	/* a second hello breaks the protocol */
	send_req(&c, &req, "second hello");
	expect_error(&c, HOSTPROF__ERROR__CODE__PROTOCOL, "a second hello", "second hello");
	expect_closed(&c, "after a second hello");
	hclient_close(&c);

	/* another protocol version: one error that says what to do, then closed */
	CHECK(hclient_connect(&H, &c) == 0);
	hreq_hello(&req, &hello, 999);
	send_req(&c, &req, "hello 999");
	expect_error(&c, HOSTPROF__ERROR__CODE__PROTOCOL, "protocol mismatch: the client speaks 999",
		     "hello 999");
	expect_closed(&c, "after hello 999");
	hclient_close(&c);

	/* a request before the hello; what follows it is not read */
	CHECK(hclient_connect(&H, &c) == 0);
	b = (struct hp_buf){};
	hreq_status(&req, &st);
	append_req(&b, &req);
	hreq_hello(&req, &hello, HP_PROTOCOL_VERSION);
	append_req(&b, &req);
	send_frame_bytes(&c, b.data, b.len, "status, then hello");
	hp_buf_free(&b);
	expect_error(&c, HOSTPROF__ERROR__CODE__PROTOCOL, "the first message must be a hello",
		     "status before hello");
	expect_closed(&c, "after status before hello");
	hclient_close(&c);

	/* a zero-length frame */
	if (open_client(&c)) {
		send_frame_bytes(&c, "\0\0\0\0", 4, "zero-length frame");
		expect_error(&c, HOSTPROF__ERROR__CODE__PROTOCOL, "malformed frame", "zero-length frame");
		expect_closed(&c, "after a zero-length frame");
	}
	hclient_close(&c);

	/* longer than the limit: refused on the header alone, nothing more is waited for */
	for (int i = 0; i < 2; i++) {
		static const uint8_t hdrs[2][4] = { { 0x01, 0x00, 0x01, 0x00 }, { 0xff, 0xff, 0xff, 0xff } };

		if (open_client(&c)) {
			send_frame_bytes(&c, hdrs[i], 4, "oversized header");
			expect_error(&c, HOSTPROF__ERROR__CODE__PROTOCOL,
				     "request larger than the 64 KiB limit",
				     i ? "a 4 GiB frame" : "a frame of 64 KiB + 1");
			expect_closed(&c, "after an oversized frame");
		}
		hclient_close(&c);
	}

	/* exactly the limit is a request: a fetch of a 64 KiB name is answered, and the
	 * connection goes on */
	if (open_client(&c)) {
		size_t n = HP_MAX_REQUEST - 8;
		char *name = malloc(HP_MAX_REQUEST);

		CHECK(name != NULL);
		if (name) {
			hreq_fetch(&req, &f, name);
			for (;;) {
				memset(name, 'a', n);
				name[n] = 0;
				if (hostprof__request__get_packed_size(&req) >= HP_MAX_REQUEST)
					break;
				n++;
			}
			CHECK_EQ_U64(hostprof__request__get_packed_size(&req), HP_MAX_REQUEST);
			send_req(&c, &req, "a 64 KiB request");
			expect_error(&c, HOSTPROF__ERROR__CODE__NOT_FOUND, "no automatic snapshot",
				     "a 64 KiB request");
			free(name);
		}
		hreq_status(&req, &st);
		send_req(&c, &req, "status after a 64 KiB request");
		resp = expect(&c, HOSTPROF__RESPONSE__BODY_STATUS, "status after a 64 KiB request");
		if (resp)
			hostprof__response__free_unpacked(resp, NULL);
	}
	hclient_close(&c);

	/* bytes that are not a Request */
	if (open_client(&c)) {
		static const uint8_t bad[] = { 3, 0, 0, 0, 0x0a, 0x05, 0x01 }; /* field 1, 5 bytes, has 1 */

		send_frame_bytes(&c, bad, sizeof(bad), "malformed request");
		expect_error(&c, HOSTPROF__ERROR__CODE__PROTOCOL, "malformed request", "malformed request");
		expect_closed(&c, "after a malformed request");
	}
	hclient_close(&c);

	/* a Request with no body this daemon knows (field 15) */
	if (open_client(&c)) {
		static const uint8_t unknown[] = { 2, 0, 0, 0, 0x78, 0x01 };

		send_frame_bytes(&c, unknown, sizeof(unknown), "unknown request");
		expect_error(&c, HOSTPROF__ERROR__CODE__PROTOCOL, "unknown request", "unknown request");
		expect_closed(&c, "after an unknown request");
	}
	hclient_close(&c);

	/* one byte at a time, the loop running between them */
	CHECK(hclient_connect(&H, &c) == 0);
	b = (struct hp_buf){};
	hreq_hello(&req, &hello, HP_PROTOCOL_VERSION);
	append_req(&b, &req);
	hreq_status(&req, &st);
	append_req(&b, &req);
	for (size_t i = 0; i < b.len; i++) {
		send_frame_bytes(&c, b.data + i, 1, "byte by byte");
		while (harness_pump(&H, 0) > 0)
			;
	}
	hp_buf_free(&b);
	resp = expect(&c, HOSTPROF__RESPONSE__BODY_HELLO, "hello byte by byte");
	if (resp)
		hostprof__response__free_unpacked(resp, NULL);
	resp = expect(&c, HOSTPROF__RESPONSE__BODY_STATUS, "status byte by byte");
	if (resp)
		hostprof__response__free_unpacked(resp, NULL);
	hclient_close(&c);

	/* several in one write: answered one by one, in order */
	CHECK(hclient_connect(&H, &c) == 0);
	b = (struct hp_buf){};
	hreq_hello(&req, &hello, HP_PROTOCOL_VERSION);
	append_req(&b, &req);
	hreq_status(&req, &st);
	append_req(&b, &req);
	hreq_watch(&req, &w, 0, NULL);
	append_req(&b, &req);
	hreq_snapshots(&req, &sl);
	append_req(&b, &req);
	send_frame_bytes(&c, b.data, b.len, "pipelined");
	hp_buf_free(&b);
	resp = expect(&c, HOSTPROF__RESPONSE__BODY_HELLO, "pipelined hello");
	if (resp)
		hostprof__response__free_unpacked(resp, NULL);
	resp = expect(&c, HOSTPROF__RESPONSE__BODY_STATUS, "pipelined status");
	if (resp)
		hostprof__response__free_unpacked(resp, NULL);
	expect_error(&c, HOSTPROF__ERROR__CODE__BAD_REQUEST, "watch needs a pid or a thread pattern",
		     "pipelined watch");
	resp = expect(&c, HOSTPROF__RESPONSE__BODY_SNAPSHOT_LIST, "pipelined snapshots");
	if (resp)
		hostprof__response__free_unpacked(resp, NULL);
	hclient_close(&c);
}

/* ---- requests ---- */

static void check_status(uint32_t self, size_t n_visible, const char *glob)
{
	Hostprof__Request req;
	Hostprof__StatusRequest st;
	Hostprof__Response *resp;
	struct hclient c = { .fd = -1 };
	char intf[64], missing[64];

	if (!open_client(&c)) {
		hclient_close(&c);
		return;
	}
	hreq_status(&req, &st);
	send_req(&c, &req, "status");
	resp = expect(&c, HOSTPROF__RESPONSE__BODY_STATUS, "status");
	if (resp) {
		const Hostprof__Status *s = resp->status;
		bool self_seen = false;

		CHECK_STR(s->version, HOSTPROF_VERSION);
		CHECK_EQ_U64(s->pid, getpid());
		/* every drop cause snapsvc reports, in its order, with its count */
		CHECK_EQ_U64(s->n_drops, HP_DROP_CAUSES);
		for (size_t i = 0; i < s->n_drops && i < HP_DROP_CAUSES; i++) {
			char cause[16];

			snprintf(cause, sizeof(cause), "cause%zu", i);
			CHECK_STR(s->drops[i]->cause, cause);
			CHECK(s->drops[i]->has_count);
			CHECK_EQ_U64(s->drops[i]->count, 1000 + i);
		}
		/* each trigger: the syscall one fired once, then once in its cooldown */
		CHECK_EQ_U64(s->n_triggers, 2);
		if (s->n_triggers == 2) {
			CHECK_STR(s->triggers[0]->name, HARNESS_TRIGGER_SYSCALL);
			CHECK_STR(s->triggers[0]->kind, trigger_kind_name(TRIGGER_SYSCALL));
			CHECK_EQ_U64(s->triggers[0]->fired, 1);
			CHECK_EQ_U64(s->triggers[0]->suppressed, 1);
			CHECK_STR(s->triggers[1]->name, HARNESS_TRIGGER_PREEMPT);
			CHECK_STR(s->triggers[1]->kind, trigger_kind_name(TRIGGER_PREEMPT));
			CHECK(s->triggers[1]->has_fired && s->triggers[1]->has_suppressed);
			CHECK_EQ_U64(s->triggers[1]->fired, 0);
			CHECK_EQ_U64(s->triggers[1]->suppressed, 0);
		}
		CHECK(s->has_triggers_dropped);
		CHECK_EQ_U64(s->triggers_dropped, 0);
		/* the unwinder's counters, as the watch gives them (fake-watch.c: 5, 4, stack_copy 1) */
		CHECK(s->unwind != NULL);
		if (s->unwind) {
			CHECK_EQ_U64(s->unwind->stacks, 5);
			CHECK_EQ_U64(s->unwind->complete, 4);
			CHECK_EQ_U64(s->unwind->n_truncated, 1);
			if (s->unwind->n_truncated == 1) {
				CHECK_STR(s->unwind->truncated[0]->cause, "stack_copy");
				CHECK_EQ_U64(s->unwind->truncated[0]->count, 1);
			}
		}
		CHECK_EQ_U64(s->n_processes, n_visible);
		for (size_t i = 0; i < s->n_processes; i++)
			if (s->processes[i]->pid == self) {
				self_seen = true;
				CHECK_STR(s->processes[i]->why, "pid");
				CHECK(s->processes[i]->has_exited && !s->processes[i]->exited);
				CHECK_EQ_U64(s->processes[i]->events, 2);
			}
		CHECKF(self_seen, "status does not list pid %u", self);
		CHECK_EQ_U64(s->events, recorder_events(H.recorder));
		CHECK_EQ_U64(s->memory_bytes, recorder_bytes(H.recorder));
		CHECK_EQ_U64(s->memory_limit, 64 << 20);
		CHECK_EQ_U64(s->ncpus, HARNESS_NCPUS);
		CHECK_EQ_U64(s->ring_kb, HARNESS_RING_KB);
		CHECK_STR(s->interference,
			  interference_text(HARNESS_INTF & ~HARNESS_INTF_MISSING, intf, sizeof(intf)));
		CHECK_STR(s->interference_missing,
			  interference_text(HARNESS_INTF_MISSING, missing, sizeof(missing)));
		CHECK_EQ_U64(s->n_watch_threads, glob ? 1 : 0);
		if (glob && s->n_watch_threads == 1)
			CHECK_STR(s->watch_threads[0], glob);
		hostprof__response__free_unpacked(resp, NULL);
	}
	hclient_close(&c);
}

/* The distinct pids of hostprof_process_events_total lines in text, and whether pid's is "events". */
static size_t metrics_pids(const char *text, uint32_t pid, const char *events, bool *ret_found)
{
	const char *p = text;
	uint32_t seen[64];
	size_t n = 0;
	char want[64];

	snprintf(want, sizeof(want), "pid=\"%u\",", pid);
	*ret_found = false;
	while ((p = strstr(p, "\nhostprof_process_events_total{pid=\""))) {
		const char *line = p + 1, *end = strchrnul(line, '\n');
		uint32_t q = strtoul(line + strlen("hostprof_process_events_total{pid=\""), NULL, 10);
		bool dup = false;

		for (size_t i = 0; i < n; i++)
			dup |= seen[i] == q;
		if (!dup && n < ARRAY_SIZE(seen))
			seen[n++] = q;
		if (strstr(line, want) && strstr(line, want) < end && end - line > (ptrdiff_t)strlen(events) + 1 &&
		    !strncmp(end - strlen(events) - 1, " ", 1) && !strncmp(end - strlen(events), events, strlen(events)))
			*ret_found = true;
		p = end;
	}
	return n;
}

/* `hostprofctl metrics`: what status says, in the exposition format; the causes of the
 * interference groups captured, and only those. */
static void check_metrics(uint32_t self, size_t n_visible)
{
	Hostprof__Request req;
	Hostprof__MetricsRequest mr;
	Hostprof__Response *resp;
	struct hclient c = { .fd = -1 };
	char line[128];
	bool found;

	if (!open_client(&c)) {
		hclient_close(&c);
		return;
	}
	hreq_metrics(&req, &mr);
	send_req(&c, &req, "metrics");
	resp = expect(&c, HOSTPROF__RESPONSE__BODY_METRICS, "metrics");
	if (resp) {
		const char *t = resp->metrics->text;

		CHECK_EQ_U64(metrics_pids(t, self, "2", &found), n_visible);
		CHECKF(found, "no hostprof_process_events_total of pid %u with 2 events", self);
		for (size_t i = 0; i < HP_DROP_CAUSES; i++) {
			snprintf(line, sizeof(line), "\nhostprof_drops_total{cause=\"cause%zu\"} %zu\n", i, 1000 + i);
			CHECKF(strstr(t, line), "no line %s", line + 1);
		}
		snprintf(line, sizeof(line), "\nhostprof_trigger_fired_total{trigger=\"%s\",kind=\"syscall\"} 1\n",
			 HARNESS_TRIGGER_SYSCALL);
		CHECKF(strstr(t, line), "no line %s", line + 1);
		snprintf(line, sizeof(line), "\nhostprof_trigger_suppressed_total{trigger=\"%s\",kind=\"syscall\"} 1\n",
			 HARNESS_TRIGGER_SYSCALL);
		CHECKF(strstr(t, line), "no line %s", line + 1);
		/* HARNESS_INTF less HARNESS_INTF_MISSING: irq and reclaim, not locks (missing), not faults */
		CHECK(strstr(t, "cause=\"irq\"") && strstr(t, "cause=\"reclaim\"") && strstr(t, "cause=\"rt\""));
		CHECK(!strstr(t, "cause=\"lock\"") && !strstr(t, "_major_faults_total") && !strstr(t, "cause=\"gil\""));
		snprintf(line, sizeof(line), "\nhostprof_info{version=\"%s\"} 1\n", HOSTPROF_VERSION);
		CHECKF(strstr(t, line), "no line %s", line + 1);
		hostprof__response__free_unpacked(resp, NULL);
	}
	hclient_close(&c);
}

static void check_snapshot(uint32_t self, uint32_t unwatched)
{
	Hostprof__Request req;
	Hostprof__SnapshotRequest sr;
	Hostprof__StatusRequest st;
	const struct fake_snap_req *fr;
	Hostprof__Response *resp;
	struct hclient c = { .fd = -1 };
	struct hp_buf b = {};
	size_t n;

	fake_snapsvc_reset(H.snapsvc);
	if (!open_client(&c))
		goto out;
	/* a status request written behind it waits for the stream to end */
	hreq_snapshot(&req, &sr, self, 5 * NSEC_PER_SEC);
	append_req(&b, &req);
	hreq_status(&req, &st);
	append_req(&b, &req);
	send_frame_bytes(&c, b.data, b.len, "snapshot + status");
	expect_stream(&c, H.hps, H.hps_len, self, "snapshot of a watched process");
	resp = expect(&c, HOSTPROF__RESPONSE__BODY_STATUS, "status after the stream");
	if (resp)
		hostprof__response__free_unpacked(resp, NULL);
	n = fake_snapsvc_requests(H.snapsvc, &fr);
	CHECK_EQ_U64(n, 1);
	if (n == 1) {
		CHECK_EQ_U64(fr[0].pid, self);
		CHECK_EQ_U64(fr[0].window_ns, 5 * NSEC_PER_SEC);
		CHECK_EQ_U64(fr[0].end_ns, 0);
		CHECK_EQ_U64(fr[0].n_markers, 0);
	}
	CHECKF(fake_snapsvc_catch_ups(H.snapsvc) >= 1, "control did not bring the recorder up to date first");

	/* a process that is not watched: said so, the connection goes on */
	hreq_snapshot(&req, &sr, unwatched, 0);
	send_req(&c, &req, "snapshot of an unwatched process");
	expect_error(&c, HOSTPROF__ERROR__CODE__NOT_FOUND, "is not watched",
		     "snapshot of an unwatched process");

	/* the service cannot start it */
	fake_snapsvc_set_start_result(H.snapsvc, -ENOMEM);
	hreq_snapshot(&req, &sr, self, 0);
	send_req(&c, &req, "snapshot that cannot start");
	expect_error(&c, HOSTPROF__ERROR__CODE__INTERNAL, "failed to start the snapshot",
		     "snapshot that cannot start");
	fake_snapsvc_set_start_result(H.snapsvc, 0);
	hreq_snapshot(&req, &sr, self, 0);
	send_req(&c, &req, "snapshot after a failed one");
	expect_stream(&c, H.hps, H.hps_len, self, "snapshot after a failed one");

	/* as hostprofctl asks: the hps in a memfd, passed; the connection goes on after it */
	hreq_snapshot(&req, &sr, self, 0);
	sr.has_fd = sr.fd = true;
	send_req(&c, &req, "snapshot as a memfd");
	expect_snap_fd(&c, H.hps, H.hps_len, self, "snapshot as a memfd");
	hreq_status(&req, &st);
	send_req(&c, &req, "status after the memfd");
	resp = expect(&c, HOSTPROF__RESPONSE__BODY_STATUS, "status after the memfd");
	if (resp)
		hostprof__response__free_unpacked(resp, NULL);
out:
	hp_buf_free(&b);
	hclient_close(&c);
}

static size_t calls_since(size_t from, const struct fake_watch_call **ret)
{
	const struct fake_watch_call *v;
	size_t n = fake_watch_calls(H.watch, &v);

	*ret = v + MIN(from, n);
	return n > from ? n - from : 0;
}

static void check_watch(uint32_t self, uint32_t kid)
{
	Hostprof__Request req;
	Hostprof__WatchRequest w;
	Hostprof__UnwatchRequest u;
	const struct fake_watch_call *calls;
	struct hclient c = { .fd = -1 };
	struct proc_rec *mine;
	size_t n;

	fake_watch_reset(H.watch);
	if (!open_client(&c))
		goto out;
	hreq_watch(&req, &w, kid, NULL);
	send_req(&c, &req, "watch a process");
	expect_ack(&c, "watching pid", "watch a process");
	n = calls_since(0, &calls);
	CHECKF(n == 1 && calls[0].op == FAKE_WATCH_PID && calls[0].pid == kid &&
		       calls[0].reason == HP_WATCH_PID,
	       "watch did not reach watch_pid(%u, HP_WATCH_PID) once (%zu calls)", kid, n);

	/* watched already: nothing to do */
	hreq_watch(&req, &w, self, NULL);
	send_req(&c, &req, "watch a watched process");
	expect_ack(&c, "is watched already", "watch a watched process");
	/* its pid names another process now (the drain has not seen the exit yet): watched anew */
	mine = recorder_find_live(H.recorder, self);
	if (mine) {
		mine->info.start_time++;
		hreq_watch(&req, &w, self, NULL);
		send_req(&c, &req, "watch a pid taken by a new process");
		expect_ack(&c, "watching pid", "watch a pid taken by a new process");
		mine->info.start_time--;
		n = calls_since(1, &calls);
		CHECKF(n == 1 && calls[0].op == FAKE_WATCH_PID && calls[0].pid == self,
		       "watch of a pid taken anew did not reach watch_pid(%u) (%zu calls)", self, n);
	}
	hreq_watch(&req, &w, 0, NULL);
	send_req(&c, &req, "watch without a pid");
	expect_error(&c, HOSTPROF__ERROR__CODE__BAD_REQUEST, "watch needs a pid or a thread pattern",
		     "watch pid 0");
	hreq_watch(&req, &w, 0x3fffffff, NULL);
	send_req(&c, &req, "watch no such process");
	expect_error(&c, HOSTPROF__ERROR__CODE__NOT_FOUND, "no process with pid", "watch no such process");
	/* gone between the look and the watch */
	fake_watch_set_pid_result(H.watch, -ENOENT);
	hreq_watch(&req, &w, kid, NULL);
	send_req(&c, &req, "watch a process that exits");
	expect_error(&c, HOSTPROF__ERROR__CODE__NOT_FOUND, "failed to watch pid",
		     "watch a process that exits");
	fake_watch_set_pid_result(H.watch, 0);
	CHECK_EQ_U64(calls_since(2, &calls), 1); /* only that last one */

	hreq_unwatch(&req, &u, self, NULL);
	send_req(&c, &req, "unwatch");
	expect_ack(&c, "stopped watching pid", "unwatch");
	n = calls_since(3, &calls);
	CHECKF(n == 1 && calls[0].op == FAKE_WATCH_STOP && calls[0].pid == self,
	       "unwatch did not reach watch_stop(%u) once", self);
	hreq_unwatch(&req, &u, kid, NULL);
	send_req(&c, &req, "unwatch a process not watched");
	expect_error(&c, HOSTPROF__ERROR__CODE__NOT_FOUND, "is not watched", "unwatch a process not watched");
	hreq_unwatch(&req, &u, 0, NULL);
	send_req(&c, &req, "unwatch without a pid");
	expect_error(&c, HOSTPROF__ERROR__CODE__BAD_REQUEST, "unwatch needs a pid", "unwatch pid 0");

	if (geteuid() != 0) {
		printf("not root: the thread patterns are root's; their refusal is checked by `test-control auth`\n");
		goto out;
	}
	fake_watch_reset(H.watch);
	hreq_watch(&req, &w, 0, "acl_*");
	send_req(&c, &req, "watch a thread pattern");
	expect_ack(&c, "watching processes with a thread named acl_*", "watch a thread pattern");
	n = calls_since(0, &calls);
	CHECKF(n == 1 && calls[0].op == FAKE_WATCH_ADD_GLOB && !strcmp(calls[0].glob, "acl_*"),
	       "watch --thread did not reach watch_add_glob(\"acl_*\")");
	hreq_watch(&req, &w, 0, "a_pattern_of_20_chars");
	send_req(&c, &req, "watch a long thread pattern");
	expect_error(&c, HOSTPROF__ERROR__CODE__BAD_REQUEST, "1 to 15 characters",
		     "watch a long thread pattern");
	for (int i = 1; i < HP_MAX_GLOBS; i++) {
		char g[16];

		snprintf(g, sizeof(g), "t%d_*", i);
		hreq_watch(&req, &w, 0, g);
		send_req(&c, &req, "watch thread patterns");
		expect_ack(&c, "watching processes with a thread named", "watch thread patterns");
	}
	hreq_watch(&req, &w, 0, "one_too_many");
	send_req(&c, &req, "watch a ninth pattern");
	expect_error(&c, HOSTPROF__ERROR__CODE__BAD_REQUEST, "at most 8 thread patterns", "a ninth pattern");
	hreq_unwatch(&req, &u, 0, "not_one");
	send_req(&c, &req, "unwatch a pattern not watched");
	expect_error(&c, HOSTPROF__ERROR__CODE__NOT_FOUND, "is not a watched thread pattern",
		     "unwatch not_one");
	for (int i = 1; i < HP_MAX_GLOBS; i++) {
		char g[16];

		snprintf(g, sizeof(g), "t%d_*", i);
		hreq_unwatch(&req, &u, 0, g);
		send_req(&c, &req, "unwatch thread patterns");
		expect_ack(&c, "no longer watching new threads named", "unwatch thread patterns");
	}
	hclient_close(&c);
	check_status(self, recorder_count(H.recorder), "acl_*");
	if (!open_client(&c))
		goto out;
	hreq_unwatch(&req, &u, 0, "acl_*");
	send_req(&c, &req, "unwatch a thread pattern");
	expect_ack(&c, "no longer watching new threads named acl_*", "unwatch a thread pattern");
out:
	hclient_close(&c);
}

static void check_snapshots(uint32_t self)
{
	Hostprof__Request req;
	Hostprof__SnapshotsRequest sl;
	Hostprof__FetchRequest f;
	Hostprof__Response *resp;
	char names[3][96];
	struct hclient c = { .fd = -1 };

	if (!add_entry(self, getuid(), "older", days(1), "the older one", names[0]) ||
	    !add_entry(self, getuid(), "newer", days(2), "the newer one", names[1]) ||
	    !add_entry(self + 1, getuid(), "oldest", days(0), "", names[2]) || !open_client(&c)) {
		hclient_close(&c);
		return;
	}
	hreq_snapshots(&req, &sl);
	send_req(&c, &req, "snapshots");
	resp = expect(&c, HOSTPROF__RESPONSE__BODY_SNAPSHOT_LIST, "snapshots");
	if (resp) {
		const Hostprof__SnapshotList *l = resp->snapshot_list;
		static const char *const order[] = { "newer", "older", "oldest" };

		CHECK_STR(l->dir, H.store_dir);
		CHECK_EQ_U64(l->n_entries, 3);
		for (size_t i = 0; i < l->n_entries && i < 3; i++) {
			const Hostprof__SnapshotEntry *x = l->entries[i];
			const struct snap_entry *want = snapstore_find(H.snapstore, x->name);

			CHECK_STR(x->trigger, order[i]); /* newest first */
			CHECKF(want != NULL, "listed %s is not in the store", x->name);
			if (!want)
				continue;
			CHECK_EQ_U64(x->pid, want->pid);
			CHECK_EQ_U64(x->uid, getuid());
			CHECK_EQ_U64(x->realtime_ns, want->realtime_ns);
			CHECK_EQ_U64(x->bytes, H.hps_len);
			CHECK(x->n_files == 1 && !strcmp(x->files[0], ".hps"));
			CHECK_STR(x->summary, want->summary);
		}
		hostprof__response__free_unpacked(resp, NULL);
	}
	hreq_fetch(&req, &f, names[1]);
	send_req(&c, &req, "fetch");
	expect_stream(&c, H.hps, H.hps_len, self, "fetch");
	/* a client never names a file: only names from the index */
	hreq_fetch(&req, &f, "../../../../etc/passwd");
	send_req(&c, &req, "fetch a path");
	expect_error(&c, HOSTPROF__ERROR__CODE__NOT_FOUND, "no automatic snapshot", "fetch a path");
	hreq_fetch(&req, &f, "20260101T000000Z-1-nothing");
	send_req(&c, &req, "fetch a name not indexed");
	expect_error(&c, HOSTPROF__ERROR__CODE__NOT_FOUND, "no automatic snapshot",
		     "fetch a name not indexed");
	hclient_close(&c);
}

/* MAX_STREAMS (8) snapshots being built at once; the next is told to wait. */
static void check_busy(uint32_t self)
{
	Hostprof__Request req;
	Hostprof__SnapshotRequest sr;
	Hostprof__FetchRequest f;
	struct hclient c[9];
	size_t base = fake_snapsvc_in_flight(H.snapsvc);
	const struct snap_entry *e = snapstore_at(H.snapstore, 0);
	bool ok = true;

	for (int i = 0; i < 9; i++)
		c[i] = (struct hclient){ .fd = -1 };
	CHECK(fake_snapsvc_hold(H.snapsvc) == 0);
	for (int i = 0; i < 9; i++)
		ok &= open_client(&c[i]);
	if (!ok)
		goto out;
	hreq_snapshot(&req, &sr, self, 0);
	for (int i = 0; i < 8; i++)
		send_req(&c[i], &req, "a held snapshot");
	for (int i = 0; i < 1000 && fake_snapsvc_in_flight(H.snapsvc) < base + 8; i++)
		harness_pump(&H, 10);
	CHECK_EQ_U64(fake_snapsvc_in_flight(H.snapsvc), base + 8);
	send_req(&c[8], &req, "a ninth snapshot");
	expect_error(&c[8], HOSTPROF__ERROR__CODE__BUSY, "snapshots are being sent already",
		     "a ninth snapshot");
	if (e) {
		hreq_fetch(&req, &f, e->name);
		send_req(&c[8], &req, "a fetch while busy");
		expect_error(&c[8], HOSTPROF__ERROR__CODE__BUSY, "snapshots are being sent already",
			     "a fetch while busy");
	}
	fake_snapsvc_release(H.snapsvc);
	for (int i = 0; i < 8; i++)
		expect_stream(&c[i], H.hps, H.hps_len, self, "a held snapshot, released");
	CHECK_EQ_U64(fake_snapsvc_in_flight(H.snapsvc), base);
out:
	fake_snapsvc_release(H.snapsvc);
	for (int i = 0; i < 9; i++)
		hclient_close(&c[i]);
}

/* A client that hangs up while its snapshot is built: the job is cancelled, the slot
 * given back (eight more fit). */
static void check_gone_mid_job(uint32_t self)
{
	Hostprof__Request req;
	Hostprof__SnapshotRequest sr;
	struct hclient c = { .fd = -1 };
	size_t base = fake_snapsvc_in_flight(H.snapsvc);

	CHECK(fake_snapsvc_hold(H.snapsvc) == 0);
	if (!open_client(&c))
		goto out;
	hreq_snapshot(&req, &sr, self, 0);
	send_req(&c, &req, "a snapshot, then hang up");
	for (int i = 0; i < 1000 && fake_snapsvc_in_flight(H.snapsvc) == base; i++)
		harness_pump(&H, 10);
	CHECK_EQ_U64(fake_snapsvc_in_flight(H.snapsvc), base + 1);
	/* shutdown, not only close: the job's child has a copy of this end (it forked after
	 * the connect, in this one process) */
	(void)shutdown(c.fd, SHUT_RDWR);
	hclient_close(&c);
	for (int i = 0; i < 10; i++)
		harness_pump(&H, 10);
	fake_snapsvc_release(H.snapsvc);
	for (int i = 0; i < 20; i++)
		harness_pump(&H, 10);
	/* cancelled: its done never ran */
	CHECK_EQ_U64(fake_snapsvc_in_flight(H.snapsvc), base + 1);
	check_busy(self);
out:
	fake_snapsvc_release(H.snapsvc);
	hclient_close(&c);
}

/* A client that stops reading a large stream: kept while it is recent, closed after 10 s. */
static void check_stalled(uint32_t self)
{
	const size_t big = 8 << 20;
	char name[96], path[PATH_MAX];
	Hostprof__Request req;
	Hostprof__FetchRequest f;
	Hostprof__Response *resp;
	const struct snap_entry *e = NULL;
	struct hclient c = { .fd = -1 };
	size_t got = 0;
	bool end = false;
	uint8_t *data = calloc(1, big);
	FILE *fp;

	snprintf(name, sizeof(name), "20260201T000000Z-%u-big", self);
	CHECK((size_t)snprintf(path, sizeof(path), "%s/%s.hps", H.store_dir, name) < sizeof(path));
	CHECK(snapstore_ready(H.snapstore) == 0);
	fp = fopen(path, "we");
	CHECK(fp && data && fwrite(data, 1, big, fp) == big);
	if (fp)
		fclose(fp);
	CHECK(snapstore_add(H.snapstore, name, CRED(getuid()), "", &e) == 0 && e);
	if (!e || !open_client(&c))
		goto out;
	hreq_fetch(&req, &f, name);
	send_req(&c, &req, "fetch a large snapshot");
	for (int i = 0; i < 50; i++)
		harness_pump(&H, 1);
	control_tick(H.control, now_boottime_ns() + 2 * NSEC_PER_SEC);
	/* read some: still open */
	while (got < 2 * HP_CHUNK_SIZE && (resp = next(&c, "a stalled stream, kept"))) {
		if (resp->body_case == HOSTPROF__RESPONSE__BODY_CHUNK)
			got += resp->chunk->data.len;
		hostprof__response__free_unpacked(resp, NULL);
	}
	for (int i = 0; i < 50; i++)
		harness_pump(&H, 1);
	control_tick(H.control, now_boottime_ns() + 12 * NSEC_PER_SEC);
	for (;;) {
		int r = hclient_recv(&H, &c, TIMEOUT_MS, &resp);

		if (r != 1) {
			CHECKF(r == 0, "a stalled stream: %s", strerror(-r));
			break;
		}
		if (resp->body_case == HOSTPROF__RESPONSE__BODY_CHUNK)
			got += resp->chunk->data.len;
		end |= resp->body_case == HOSTPROF__RESPONSE__BODY_END;
		hostprof__response__free_unpacked(resp, NULL);
	}
	CHECKF(!end && got >= 2 * HP_CHUNK_SIZE && got < big,
	       "a client that stopped reading got %zu of %zu bytes%s, want it closed part way", got, big,
	       end ? " and the end" : "");
out:
	hclient_close(&c);
	free(data);
}

/* 256 clients at once; one more is closed at once. */
static void check_client_limit(void)
{
	enum { N = 256 };
	struct hclient *c;
	struct rlimit rl;
	int opened = 0;

	/* both ends of 257 connections live in this process */
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < 4 * N) {
		rl.rlim_cur = MIN(rl.rlim_max, (rlim_t)4 * N);
		(void)setrlimit(RLIMIT_NOFILE, &rl);
	}
	if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur < 3 * N) {
		printf("the client limit is not checked: %llu fds are allowed here, it takes %d\n",
		       (unsigned long long)rl.rlim_cur, 3 * N);
		return;
	}
	c = calloc(N + 1, sizeof(*c));
	if (!c)
		return;
	for (int i = 0; i <= N; i++)
		c[i].fd = -1;
	while (harness_pump(&H, 0) > 0) /* the clients closed before are gone */
		;
	while (opened < N && open_client(&c[opened]))
		opened++;
	CHECK_EQ_INT(opened, N);
	if (opened == N && hclient_connect(&H, &c[N]) == 0)
		expect_closed(&c[N], "client 257");
	for (int i = 0; i <= N; i++)
		hclient_close(&c[i]);
	while (harness_pump(&H, 0) > 0)
		;
	/* and the count came down again */
	if (open_client(&c[0]))
		hclient_close(&c[0]);
	free(c);
}

static void part_requests(void)
{
	struct drop_count drops[HP_DROP_CAUSES];
	static char causes[HP_DROP_CAUSES][16];
	uint32_t self = getpid();
	uint64_t t0 = now_boottime_ns();
	pid_t kid = -1;
	int r;

	for (size_t i = 0; i < HP_DROP_CAUSES; i++) {
		snprintf(causes[i], sizeof(causes[i]), "cause%zu", i);
		drops[i] = (struct drop_count){ .cause = causes[i], .count = 1000 + i };
	}
	fake_snapsvc_set_drops(H.snapsvc, drops, HP_DROP_CAUSES);
	r = spawn_idle(getuid(), &kid);
	CHECKF(r == 0, "a child process: %s", strerror(-r));
	if (!watch_in_recorder(self))
		goto out;
	/* over the syscall trigger's threshold, then again within its cooldown */
	feed_syscall(self, t0, 5 * NSEC_PER_MSEC);
	feed_syscall(self, t0 + NSEC_PER_SEC, 5 * NSEC_PER_MSEC);
	if (geteuid() == 0 && watch_in_recorder(1)) {
		check_status(self, 2, NULL);
		check_metrics(self, 2);
	} else {
		check_status(self, 1, NULL);
		check_metrics(self, 1);
	}
	check_snapshot(self, kid > 0 ? (uint32_t)kid : 0x3fffffff);
	if (kid > 0)
		check_watch(self, kid);
	check_snapshots(self);
	check_busy(self);
	check_gone_mid_job(self);
	check_stalled(self);
	check_client_limit();
out:
	reap(kid);
}

/* ---- authorization ---- */

struct auth_setup {
	uid_t peer; /* the client's uid */
	uint32_t root_pid; /* a watched process of root's */
	pid_t own, own2; /* processes of the peer's: watched, not watched */
	char mine_name[96], roots_name[96];
};

/* Blocking, in the client child. */
static Hostprof__Response *crecv(int fd, struct hp_buf *buf, const char *what)
{
	const uint8_t *payload;
	int n = frame_read_fd(fd, HP_MAX_RESPONSE, buf, &payload);
	Hostprof__Response *resp;

	CHECKF(n > 0, "%s: no response: %s", what, n < 0 ? strerror(-n) : "empty");
	if (n <= 0)
		return NULL;
	resp = hostprof__response__unpack(NULL, n, payload);
	CHECKF(resp != NULL, "%s: a response that does not unpack", what);
	return resp;
}

static Hostprof__Response *ask(int fd, struct hp_buf *buf, const Hostprof__Request *req, const char *what)
{
	int r = frame_write_fd(fd, &req->base, HP_MAX_REQUEST);

	CHECKF(r >= 0, "%s: send failed: %s", what, strerror(-r));
	return r >= 0 ? crecv(fd, buf, what) : NULL;
}

static void ask_error(int fd, struct hp_buf *buf, const Hostprof__Request *req, Hostprof__Error__Code code,
		      const char *needle, const char *what)
{
	Hostprof__Response *resp = ask(fd, buf, req, what);

	if (!resp)
		return;
	CHECKF(resp->body_case == HOSTPROF__RESPONSE__BODY_ERROR && resp->error->code == code &&
		       strstr(resp->error->message, needle),
	       "%s: want error %d with \"%s\", got %s", what, code, needle, describe(resp));
	hostprof__response__free_unpacked(resp, NULL);
}

static void ask_ack(int fd, struct hp_buf *buf, const Hostprof__Request *req, const char *what)
{
	Hostprof__Response *resp = ask(fd, buf, req, what);

	if (!resp)
		return;
	CHECKF(resp->body_case == HOSTPROF__RESPONSE__BODY_ACK, "%s: want an ack, got %s", what,
	       describe(resp));
	hostprof__response__free_unpacked(resp, NULL);
}

static void ask_stream(int fd, struct hp_buf *buf, const Hostprof__Request *req, uint32_t pid,
		       const char *what)
{
	Hostprof__Response *resp = ask(fd, buf, req, what);
	struct hp_buf got = {};

	for (; resp; resp = crecv(fd, buf, what)) {
		Hostprof__Response__BodyCase body = resp->body_case;

		if (body == HOSTPROF__RESPONSE__BODY_CHUNK)
			CHECK(hp_buf_append(&got, resp->chunk->data.data, resp->chunk->data.len) == 0);
		else if (body == HOSTPROF__RESPONSE__BODY_END)
			CHECKF(resp->end->pid == pid && got.len == H.hps_len &&
				       !memcmp(got.data, H.hps, got.len),
			       "%s: %zu bytes of pid %u, want the fixture's %zu of %u", what, got.len,
			       resp->end->pid, H.hps_len, pid);
		else
			CHECKF(0, "%s: want a stream, got %s", what, describe(resp));
		hostprof__response__free_unpacked(resp, NULL);
		if (body != HOSTPROF__RESPONSE__BODY_CHUNK)
			break;
	}
	hp_buf_free(&got);
}

/* In the client child, as a.peer: every refusal, then what it may do. Exits 0 or 1. */
static void auth_client(const struct auth_setup *a)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct timeval tv = { .tv_sec = 5 };
	Hostprof__Request req;
	Hostprof__Hello hello;
	Hostprof__StatusRequest st;
	Hostprof__SnapshotRequest sr;
	Hostprof__WatchRequest w;
	Hostprof__UnwatchRequest u;
	Hostprof__SnapshotsRequest sl;
	Hostprof__FetchRequest f;
	Hostprof__Response *resp;
	struct hp_buf buf = {};
	char needle[192];
	int fd, r;

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (a->peer != getuid() && (setgroups(0, NULL) < 0 || setresgid(a->peer, a->peer, a->peer) < 0 ||
				    setresuid(a->peer, a->peer, a->peer) < 0)) {
		fprintf(stderr, "client: cannot become uid %u: %m\n", a->peer);
		_exit(1);
	}
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", H.socket);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		fprintf(stderr, "client: uid %u cannot connect to %s: %m\n", a->peer, H.socket);
		_exit(1);
	}
	(void)setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));

	hreq_hello(&req, &hello, HP_PROTOCOL_VERSION);
	resp = ask(fd, &buf, &req, "hello");
	CHECKF(resp && resp->body_case == HOSTPROF__RESPONSE__BODY_HELLO, "hello: got %s", describe(resp));
	if (resp)
		hostprof__response__free_unpacked(resp, NULL);

	/* status: only its own processes */
	hreq_status(&req, &st);
	resp = ask(fd, &buf, &req, "status");
	CHECKF(resp && resp->body_case == HOSTPROF__RESPONSE__BODY_STATUS, "status: got %s", describe(resp));
	if (resp && resp->body_case == HOSTPROF__RESPONSE__BODY_STATUS) {
		const Hostprof__Status *s = resp->status;

		CHECKF(s->n_processes == 1 && s->processes[0]->pid == (uint32_t)a->own,
		       "status lists %zu processes (the first %u), want only pid %d of uid %u",
		       s->n_processes, s->n_processes ? s->processes[0]->pid : 0, a->own, a->peer);
		/* its quota: its own use and limits (user_watched 1 here) */
		CHECKF(s->quota && s->quota->uid == a->peer && s->quota->watched == 1 &&
			       s->quota->watched_limit == (a->peer ? 1 : 0),
		       "status quota: uid %u, %u watched of %u; want uid %u, 1 of %u", s->quota ? s->quota->uid : 0,
		       s->quota ? s->quota->watched : 0, s->quota ? s->quota->watched_limit : 0, a->peer,
		       a->peer ? 1 : 0);
	}
	if (resp)
		hostprof__response__free_unpacked(resp, NULL);

	/* metrics: like status, the series of its own processes only */
	{
		Hostprof__MetricsRequest mr;
		char own[32], root[32];

		hreq_metrics(&req, &mr);
		resp = ask(fd, &buf, &req, "metrics");
		CHECKF(resp && resp->body_case == HOSTPROF__RESPONSE__BODY_METRICS, "metrics: got %s", describe(resp));
		snprintf(own, sizeof(own), "{pid=\"%d\",", a->own);
		snprintf(root, sizeof(root), "{pid=\"%u\",", a->root_pid);
		if (resp && resp->body_case == HOSTPROF__RESPONSE__BODY_METRICS) {
			CHECKF(strstr(resp->metrics->text, own), "metrics lack its own pid %d", a->own);
			CHECKF(!strstr(resp->metrics->text, root), "metrics show root's pid %u", a->root_pid);
			CHECK(strstr(resp->metrics->text, "\nhostprof_events_total "));
		}
		if (resp)
			hostprof__response__free_unpacked(resp, NULL);
	}

	/* another user's process */
	snprintf(needle, sizeof(needle), "pid %u belongs to uid 0", a->root_pid);
	hreq_watch(&req, &w, a->root_pid, NULL);
	ask_error(fd, &buf, &req, HOSTPROF__ERROR__CODE__DENIED, needle, "watch root's process");
	if (a->root_pid != 1) {
		hreq_watch(&req, &w, 1, NULL);
		ask_error(fd, &buf, &req, HOSTPROF__ERROR__CODE__DENIED, "pid 1 belongs to uid 0",
			  "watch pid 1");
	}
	hreq_unwatch(&req, &u, a->root_pid, NULL);
	ask_error(fd, &buf, &req, HOSTPROF__ERROR__CODE__DENIED, needle, "unwatch root's process");
	hreq_snapshot(&req, &sr, a->root_pid, 0);
	ask_error(fd, &buf, &req, HOSTPROF__ERROR__CODE__DENIED, needle, "snapshot root's process");
	/* the thread patterns watch everyone's processes */
	hreq_watch(&req, &w, 0, "acl_*");
	ask_error(fd, &buf, &req, HOSTPROF__ERROR__CODE__DENIED, "only root may change thread patterns",
		  "watch --thread");
	hreq_unwatch(&req, &u, 0, "acl_*");
	ask_error(fd, &buf, &req, HOSTPROF__ERROR__CODE__DENIED, "only root may change thread patterns",
		  "unwatch --thread");
	/* root's automatic snapshot: as if there were none */
	snprintf(needle, sizeof(needle), "no automatic snapshot '%s' that you may see", a->roots_name);
	hreq_fetch(&req, &f, a->roots_name);
	ask_error(fd, &buf, &req, HOSTPROF__ERROR__CODE__NOT_FOUND, needle, "fetch root's snapshot");
	/* the list: its own only */
	hreq_snapshots(&req, &sl);
	resp = ask(fd, &buf, &req, "snapshots");
	CHECKF(resp && resp->body_case == HOSTPROF__RESPONSE__BODY_SNAPSHOT_LIST, "snapshots: got %s",
	       describe(resp));
	if (resp && resp->body_case == HOSTPROF__RESPONSE__BODY_SNAPSHOT_LIST) {
		const Hostprof__SnapshotList *l = resp->snapshot_list;

		CHECKF(l->n_entries == 1 && !strcmp(l->entries[0]->name, a->mine_name) &&
			       l->entries[0]->uid == a->peer,
		       "snapshots lists %zu entries (the first %s), want only %s", l->n_entries,
		       l->n_entries ? l->entries[0]->name : "-", a->mine_name);
	}
	if (resp)
		hostprof__response__free_unpacked(resp, NULL);

	/* what is its own */
	hreq_fetch(&req, &f, a->mine_name);
	ask_stream(fd, &buf, &req, a->own, "fetch its own snapshot");
	hreq_snapshot(&req, &sr, a->own, 0);
	ask_stream(fd, &buf, &req, a->own, "snapshot its own process");
	/* one process at once (user_watched 1): own is watched, own2 waits */
	hreq_watch(&req, &w, a->own2, NULL);
	if (a->peer != 0)
		ask_error(fd, &buf, &req, HOSTPROF__ERROR__CODE__BUSY,
			  "you may have 1 processes watched at once (user_watched) and have 1", "watch past its quota");
	else
		ask_ack(fd, &buf, &req, "watch its own process");
	hreq_unwatch(&req, &u, a->own, NULL);
	ask_ack(fd, &buf, &req, "unwatch its own process");

	close(fd);
	hp_buf_free(&buf);
	printf("client (uid %u): ", a->peer);
	r = check_summary();
	fflush(NULL);
	_exit(r);
}

static int part_auth(void)
{
	struct auth_setup a = { .peer = geteuid() == 0 ? NOBODY : getuid(), .own = -1, .own2 = -1 };
	struct recorder_limits lim;
	Hostprof__Request req;
	Hostprof__WatchRequest w;
	struct hclient rc = { .fd = -1 };
	const struct fake_watch_call *calls;
	const struct fake_snap_req *reqs;
	struct proc_info init;
	pid_t client;
	int r, status = 0;
	size_t n;

	if (proc_read_info(1, &init) < 0 || init.cred.uid != 0 || init.cred.euid != 0) {
		printf("SKIP: pid 1 is not root's here: no process of another uid to be refused\n");
		return EXIT_SKIP;
	}
	a.root_pid = geteuid() == 0 ? (uint32_t)getpid() : 1;
	r = spawn_idle(a.peer, &a.own);
	if (r == 0)
		r = spawn_idle(a.peer, &a.own2);
	if (r < 0) {
		printf("SKIP: cannot start a process as uid %u: %s\n", a.peer, strerror(-r));
		reap(a.own);
		return EXIT_SKIP;
	}
	if (geteuid() == 0)
		printf("root: the client drops to uid %u; its processes %d, %d are that uid's\n", a.peer,
		       a.own, a.own2);
	else
		printf("not root: the client is uid %u itself; another user's is root's (pid 1, a snapshot indexed "
		       "as uid 0)\n",
		       a.peer);
	if (!watch_in_recorder(a.own) || !watch_in_recorder(a.root_pid) || !watch_in_recorder(1))
		goto out;
	if (!add_entry(a.own, a.peer, "mine", days(3), "", a.mine_name) ||
	    !add_entry(a.root_pid, 0, "roots", days(4), "", a.roots_name))
		goto out;
	fake_watch_reset(H.watch);
	fake_snapsvc_reset(H.snapsvc);
	lim = *recorder_limits(H.recorder);
	lim.user_procs = 1;
	recorder_set_limits(H.recorder, &lim);

	fflush(NULL);
	client = fork();
	if (client < 0) {
		CHECKF(0, "fork: %m");
		goto out;
	}
	if (client == 0)
		auth_client(&a);
	for (int i = 0; i < 1000; i++) {
		r = waitpid(client, &status, WNOHANG);
		if (r != 0)
			break;
		harness_pump(&H, 10);
	}
	if (r == 0) {
		kill(client, SIGKILL);
		waitpid(client, &status, 0);
		CHECKF(0, "the client (uid %u) did not finish in 10 s", a.peer);
	} else {
		CHECKF(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		       "the client (uid %u) failed (its checks above; status %#x)", a.peer, status);
	}
	/* what reached the modules behind control: only what it may do */
	n = fake_watch_calls(H.watch, &calls);
	if (a.peer != 0)
		CHECKF(n == 1 && calls[0].op == FAKE_WATCH_STOP && calls[0].pid == (uint32_t)a.own,
		       "watch saw %zu calls, want watch_stop(%d) only (watch_pid(%d) was past the quota)", n, a.own,
		       a.own2);
	else
		CHECKF(n == 2 && calls[0].op == FAKE_WATCH_PID && calls[0].pid == (uint32_t)a.own2 &&
			       calls[1].op == FAKE_WATCH_STOP && calls[1].pid == (uint32_t)a.own,
		       "watch saw %zu calls, want watch_pid(%d) and watch_stop(%d)", n, a.own2, a.own);
	/* root is not limited: it watches the user's process past the user's quota */
	if (a.peer != 0 && geteuid() == 0 && open_client(&rc)) {
		fake_watch_reset(H.watch);
		hreq_watch(&req, &w, a.own2, NULL);
		send_req(&rc, &req, "root watches past the user's quota");
		expect_ack(&rc, "watching pid", "root watches past the user's quota");
		n = fake_watch_calls(H.watch, &calls);
		CHECKF(n == 1 && calls[0].op == FAKE_WATCH_PID && calls[0].pid == (uint32_t)a.own2,
		       "watch saw %zu calls, want watch_pid(%d)", n, a.own2);
		hclient_close(&rc);
	}
	lim.user_procs = 0;
	recorder_set_limits(H.recorder, &lim);
	n = fake_snapsvc_requests(H.snapsvc, &reqs);
	CHECKF(n == 1 && reqs[0].pid == (uint32_t)a.own, "snapsvc saw %zu requests, want one of pid %d", n,
	       a.own);
out:
	reap(a.own);
	reap(a.own2);
	return -1;
}

int main(int argc, char **argv)
{
	int r = -1;

	if (argc != 3 ||
	    (strcmp(argv[1], "protocol") && strcmp(argv[1], "requests") && strcmp(argv[1], "auth"))) {
		fprintf(stderr, "usage: test-control protocol|requests|auth FIXTURE\n");
		return 2;
	}
	log_open("test-control");
	log_set_max_level(LOG_WARNING);
	if (harness_start(&H, argv[2]) < 0)
		return 1;
	if (H.passed_socket)
		printf("not root: control listens on a socket passed as systemd does (LISTEN_FDS); its own socket "
		       "path and mode checks need root\n");
	if (!strcmp(argv[1], "protocol"))
		part_protocol();
	else if (!strcmp(argv[1], "requests"))
		part_requests();
	else
		r = part_auth();
	harness_stop(&H);
	if (r == EXIT_SKIP)
		return EXIT_SKIP;
	return check_summary();
}
