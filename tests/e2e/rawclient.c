// SPDX-License-Identifier: GPL-2.0-only
/*
 * rawclient: a misbehaving client of hostprofd's socket, for the hostile-input tests.
 *
 *   rawclient SOCKET garbage        random bytes, then wait for the daemon to close
 *   rawclient SOCKET bigprefix      a 4 GiB length prefix
 *   rawclient SOCKET truncated      a frame header for 100 bytes, 10 bytes, then close
 *   rawclient SOCKET nohello        a status request without a hello first
 *   rawclient SOCKET badversion     a hello with protocol 999
 *   rawclient SOCKET flood N SECS PID  N connections that ask for a snapshot of PID and
 *                                   never read, held open SECS seconds
 *   rawclient SOCKET midstream PID  ask for a snapshot of PID, read one chunk, hang up
 *   rawclient SOCKET statusflood SECS  status requests as fast as the socket takes them,
 *                                   for SECS seconds, never reading a reply
 *
 * Prints what the daemon answered ("error CODE: message", "closed") and exits 0 when the
 * daemon behaved: answered with an error and/or closed the connection.
 */
#include <errno.h>
#include <fcntl.h>
#include <time.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "framing.h"

static int connect_to(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);

	strncpy(sa.sun_path, path, sizeof(sa.sun_path) - 1);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		perror("connect");
		exit(2);
	}
	return fd;
}

static void send_request(int fd, Hostprof__Request *req)
{
	if (frame_write_fd(fd, &req->base, HP_MAX_REQUEST) < 0) {
		perror("write");
		exit(2);
	}
}

static void send_hello(int fd, uint32_t protocol)
{
	Hostprof__Request req = HOSTPROF__REQUEST__INIT;
	Hostprof__Hello hello = HOSTPROF__HELLO__INIT;

	hello.protocol = protocol;
	req.body_case = HOSTPROF__REQUEST__BODY_HELLO;
	req.hello = &hello;
	send_request(fd, &req);
}

/* Read replies until the daemon closes; 0 if it closed within 5 s. */
static int expect_close(int fd, int need_error)
{
	struct hp_buf buf = {};
	int got_error = 0;

	for (;;) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		const uint8_t *payload;
		Hostprof__Response *resp;
		int n;

		if (poll(&pfd, 1, 5000) <= 0) {
			printf("still open after 5 s\n");
			return 1;
		}
		n = frame_read_fd(fd, HP_MAX_RESPONSE, &buf, &payload);
		if (n == -ECONNRESET) {
			printf("closed\n");
			break;
		}
		if (n < 0) {
			printf("read: %s\n", strerror(-n));
			break;
		}
		resp = hostprof__response__unpack(NULL, n, payload);
		if (resp && resp->body_case == HOSTPROF__RESPONSE__BODY_ERROR) {
			printf("error %d: %s\n", resp->error->code, resp->error->message);
			got_error = 1;
		} else {
			printf("reply %d\n", resp ? (int)resp->body_case : -1);
		}
		if (resp)
			hostprof__response__free_unpacked(resp, NULL);
	}
	hp_buf_free(&buf);
	return need_error && !got_error ? 1 : 0;
}

int main(int argc, char **argv)
{
	const char *mode;
	int fd;

	if (argc < 3) {
		fprintf(stderr, "usage: rawclient SOCKET MODE [ARGS]\n");
		return 2;
	}
	mode = argv[2];
	if (!strcmp(mode, "flood")) {
		int n = argc > 3 ? atoi(argv[3]) : 200, secs = argc > 4 ? atoi(argv[4]) : 5;
		Hostprof__Request req = HOSTPROF__REQUEST__INIT;
		Hostprof__SnapshotRequest sreq = HOSTPROF__SNAPSHOT_REQUEST__INIT;

		sreq.pid = argc > 5 ? atoi(argv[5]) : 1;
		req.body_case = HOSTPROF__REQUEST__BODY_SNAPSHOT;
		req.snapshot = &sreq;
		for (int i = 0; i < n; i++) {
			fd = connect_to(argv[1]);
			send_hello(fd, HP_PROTOCOL_VERSION);
			send_request(fd, &req);
			/* and never read: the fd stays open until we exit */
		}
		printf("flood: %d connections open\n", n);
		fflush(stdout);
		sleep(secs);
		return 0;
	}

	fd = connect_to(argv[1]);
	if (!strcmp(mode, "statusflood")) {
		int secs = argc > 3 ? atoi(argv[3]) : 5;
		Hostprof__Request req = HOSTPROF__REQUEST__INIT;
		Hostprof__StatusRequest st = HOSTPROF__STATUS_REQUEST__INIT;
		uint8_t frame[64];
		size_t len = hostprof__request__get_packed_size(&req);
		long sent = 0;
		time_t end = time(NULL) + secs;

		send_hello(fd, HP_PROTOCOL_VERSION);
		req.body_case = HOSTPROF__REQUEST__BODY_STATUS;
		req.status = &st;
		len = hostprof__request__get_packed_size(&req);
		frame[0] = len, frame[1] = frame[2] = frame[3] = 0;
		hostprof__request__pack(&req, frame + 4);
		(void)fcntl(fd, F_SETFL, O_NONBLOCK);
		for (size_t off = 0; time(NULL) < end;) {
			ssize_t n = write(fd, frame + off, 4 + len - off);

			if (n < 0) {
				usleep(1000); /* the daemon stopped reading us */
				continue;
			}
			off += n;
			if (off == 4 + len) {
				sent++;
				off = 0;
			}
		}
		printf("statusflood: %ld requests sent\n", sent);
		return 0;
	}
	if (!strcmp(mode, "midstream")) {
		Hostprof__Request req = HOSTPROF__REQUEST__INIT;
		Hostprof__SnapshotRequest sreq = HOSTPROF__SNAPSHOT_REQUEST__INIT;
		struct hp_buf buf = {};
		const uint8_t *payload;
		int n;

		sreq.pid = argc > 3 ? atoi(argv[3]) : 1;
		req.body_case = HOSTPROF__REQUEST__BODY_SNAPSHOT;
		req.snapshot = &sreq;
		send_hello(fd, HP_PROTOCOL_VERSION);
		send_request(fd, &req);
		for (int i = 0; i < 2; i++) { /* the hello, then the first chunk */
			n = frame_read_fd(fd, HP_MAX_RESPONSE, &buf, &payload);
			if (n < 0) {
				printf("read: %s\n", strerror(-n));
				return 1;
			}
		}
		printf("hung up after the first chunk\n");
		close(fd);
		hp_buf_free(&buf);
		return 0;
	}
	if (!strcmp(mode, "garbage")) {
		uint8_t junk[1024];

		srand(42);
		for (size_t i = 0; i < sizeof(junk); i++)
			junk[i] = rand();
		junk[0] = 0x10; /* a plausible small length, so the junk is parsed, not just refused */
		junk[1] = junk[2] = junk[3] = 0;
		if (write(fd, junk, sizeof(junk)) != sizeof(junk))
			return 2;
		return expect_close(fd, 0);
	}
	if (!strcmp(mode, "bigprefix")) {
		static const uint8_t hdr[4] = { 0xff, 0xff, 0xff, 0xff };

		if (write(fd, hdr, 4) != 4)
			return 2;
		return expect_close(fd, 1);
	}
	if (!strcmp(mode, "truncated")) {
		static const uint8_t frame[14] = { 100, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10 };

		if (write(fd, frame, sizeof(frame)) != sizeof(frame))
			return 2;
		shutdown(fd, SHUT_WR);
		return expect_close(fd, 0);
	}
	if (!strcmp(mode, "nohello")) {
		Hostprof__Request req = HOSTPROF__REQUEST__INIT;
		Hostprof__StatusRequest st = HOSTPROF__STATUS_REQUEST__INIT;

		req.body_case = HOSTPROF__REQUEST__BODY_STATUS;
		req.status = &st;
		send_request(fd, &req);
		return expect_close(fd, 1);
	}
	if (!strcmp(mode, "badversion")) {
		send_hello(fd, 999);
		return expect_close(fd, 1);
	}
	fprintf(stderr, "unknown mode %s\n", mode);
	return 2;
}
