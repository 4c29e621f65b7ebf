// SPDX-License-Identifier: GPL-2.0-only
/* See control-harness.h. */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <systemd/sd-daemon.h>
#include <time.h>
#include <unistd.h>

#include "control-harness.h"
#include "fakes.h"
#include "loop.h"
#include "macro.h"
#include "recorder.h"
#include "snapjob.h"
#include "metrics.h"
#include "snapstore.h"
#include "snapsvc.h"
#include "trigger.h"
#include "watch.h"

#define FAIL(r, ...) (fprintf(stderr, "control-harness: " __VA_ARGS__), fputc('\n', stderr), (r))

int harness_read_file(const char *path, uint8_t **ret_data, size_t *ret_len)
{
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
	uint8_t *data = NULL;
	size_t len = 0, cap = 0;

	if (fd < 0)
		return -errno;
	for (;;) {
		ssize_t n;

		if (len == cap) {
			uint8_t *p = realloc(data, cap = cap ? cap * 2 : 65536);

			if (!p) {
				free(data);
				return -ENOMEM;
			}
			data = p;
		}
		n = read(fd, data + len, cap - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int r = -errno;

			free(data);
			return r;
		}
		if (n == 0)
			break;
		len += n;
	}
	*ret_data = data;
	*ret_len = len;
	return 0;
}

/* Not root: a listening socket on fd 3, as systemd passes one. */
static int pass_socket(struct harness *h)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	_cleanup_close_ int fd = -1;
	char pid[32];

	if (fcntl(SD_LISTEN_FDS_START, F_GETFD) >= 0 || errno != EBADF)
		return FAIL(-EBUSY, "fd %d is open already: cannot pass the listening socket there",
			    SD_LISTEN_FDS_START);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return FAIL(-errno, "socket: %m");
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", h->socket);
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, 64) < 0)
		return FAIL(-errno, "bind/listen %s: %m", h->socket);
	if (fd == SD_LISTEN_FDS_START)
		(void)TAKE_FD(fd); /* it is there already */
	else if (dup2(fd, SD_LISTEN_FDS_START) < 0)
		return FAIL(-errno, "dup2: %m");
	snprintf(pid, sizeof(pid), "%d", getpid());
	setenv("LISTEN_PID", pid, 1);
	setenv("LISTEN_FDS", "1", 1);
	unsetenv("LISTEN_FDNAMES");
	h->passed_socket = true;
	return 0;
}

static void after_batch(void *ud)
{
	control_gc(ud);
}

int harness_start(struct harness *h, const char *fixture)
{
	static const struct trigger_def defs[] = {
		{ .name = HARNESS_TRIGGER_SYSCALL,
		  .kind = TRIGGER_SYSCALL,
		  .threads = "*",
		  .threshold = 1 * NSEC_PER_MSEC,
		  .before_ns = NSEC_PER_SEC,
		  .after_ns = NSEC_PER_SEC,
		  .cooldown_ns = 60 * NSEC_PER_SEC },
		{ .name = HARNESS_TRIGGER_PREEMPT,
		  .kind = TRIGGER_PREEMPT,
		  .threads = "*",
		  .threshold = 2 * NSEC_PER_MSEC,
		  .before_ns = NSEC_PER_SEC,
		  .after_ns = NSEC_PER_SEC,
		  .cooldown_ns = 60 * NSEC_PER_SEC },
	};
	const struct recorder_limits lim = {
		.window_ns = 30 * NSEC_PER_SEC,
		.buffer_bytes = 4 << 20,
		.memory_bytes = 64 << 20,
		.host_bytes = 4 << 20,
	};
	const char *tmp = getenv("TMPDIR");
	struct control_deps deps;
	int r;

	*h = (struct harness){};
	signal(SIGPIPE, SIG_IGN);
	r = harness_read_file(fixture, &h->hps, &h->hps_len);
	if (r < 0)
		return FAIL(r, "cannot read %s: %s", fixture, strerror(-r));
	snprintf(h->dir, sizeof(h->dir), "%s/hp-control-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(h->dir))
		return FAIL(-errno, "mkdtemp %s: %m", h->dir);
	/* sticky and world-writable, like /tmp: control accepts it, a dropped client gets in */
	if (chmod(h->dir, 01777) < 0)
		return FAIL(-errno, "chmod %s: %m", h->dir);
	if ((size_t)snprintf(h->socket, sizeof(h->socket), "%s/hostprofd.sock", h->dir) >= sizeof(h->socket))
		return FAIL(-ENAMETOOLONG, "%s: too long for a socket path", h->dir);
	if ((size_t)snprintf(h->store_dir, sizeof(h->store_dir), "%s/snapshots", h->dir) >=
	    sizeof(h->store_dir))
		return FAIL(-ENAMETOOLONG, "%s: too long", h->dir);

	h->settings.socket = h->socket;
	h->settings.ring_kb = HARNESS_RING_KB;
	h->settings.interference = HARNESS_INTF;
	if (geteuid() == 0) {
		struct group *gr = getgrgid(65534);

		h->socket_group = gr ? strdup(gr->gr_name) : NULL;
		h->settings.socket_group = (char *)h->socket_group;
	} else {
		r = pass_socket(h);
		if (r < 0)
			return r;
	}

	h->loop = loop_new();
	h->recorder = recorder_new(&lim);
	h->watch = watch_new(NULL, h->recorder, NULL, NULL);
	h->snapsvc = snapsvc_new(h->loop, NULL, h->recorder, NULL);
	h->snapstore = snapstore_new(h->store_dir, 16, 64 << 20);
	h->triggers = h->snapsvc && h->snapstore ? triggers_new(h->recorder, h->snapsvc, h->snapstore) : NULL;
	if (!h->loop || !h->recorder || !h->watch || !h->snapsvc || !h->snapstore || !h->triggers)
		return FAIL(-ENOMEM, "out of memory");
	r = fake_snapsvc_set_snapshot(h->snapsvc, h->hps, h->hps_len, 4242);
	if (r >= 0)
		r = triggers_configure(h->triggers, defs, ARRAY_SIZE(defs), 0);
	if (r < 0)
		return FAIL(r, "setting up the fakes: %s", strerror(-r));
	h->metrics = metrics_new(&(struct metrics_deps){ .recorder = h->recorder,
							 .snapsvc = h->snapsvc,
							 .snapstore = h->snapstore,
							 .triggers = h->triggers,
							 .settings = &h->settings,
							 .interference_missing = HARNESS_INTF_MISSING });
	if (!h->metrics)
		return FAIL(-ENOMEM, "out of memory");
	deps = (struct control_deps){
		.metrics = h->metrics,
		.loop = h->loop,
		.recorder = h->recorder,
		.watch = h->watch,
		.snapsvc = h->snapsvc,
		.snapstore = h->snapstore,
		.triggers = h->triggers,
		.settings = &h->settings,
		.facts = { .ncpus = HARNESS_NCPUS, .interference_missing = HARNESS_INTF_MISSING },
	};
	r = control_new(&deps, &h->control);
	if (r < 0)
		return FAIL(r, "control_new failed: %s", strerror(-r));
	loop_set_after_batch(h->loop, after_batch, h->control);
	if (h->passed_socket || !h->socket_group) {
		/* nobody else may reach it but what the test starts: open it to them */
		if (chmod(h->socket, 0666) < 0)
			return FAIL(-errno, "chmod %s: %m", h->socket);
	}
	return 0;
}

static int remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)remove(path);
	return 0;
}

void harness_stop(struct harness *h)
{
	control_free(h->control);
	metrics_free(h->metrics);
	if (h->passed_socket)
		(void)unlink(h->socket);
	snapjob_kill_all();
	triggers_free(h->triggers);
	snapsvc_free(h->snapsvc);
	watch_free(h->watch);
	recorder_free(h->recorder);
	snapstore_free(h->snapstore);
	loop_free(h->loop);
	free((char *)h->socket_group);
	free(h->hps);
	if (h->dir[0])
		(void)nftw(h->dir, remove_one, 16, FTW_DEPTH | FTW_PHYS);
	*h = (struct harness){};
}

int harness_pump(struct harness *h, int timeout_ms)
{
	return loop_iterate(h->loop, timeout_ms);
}

int hclient_connect(const struct harness *h, struct hclient *ret)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);

	if (fd < 0)
		return -errno;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", h->socket);
	/* a Unix socket connects at once while the backlog has room: accept() comes later */
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		int r = -errno;

		close(fd);
		return r;
	}
	*ret = (struct hclient){ .fd = fd };
	return 0;
}

void hclient_close(struct hclient *c)
{
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
	if (c->passed1)
		close(c->passed1 - 1);
	c->passed1 = 0;
	hp_buf_free(&c->in);
}

/* Descriptors a message passed: the last one kept (passed1), others closed, all counted. */
static void hclient_take_passed(struct hclient *c, struct msghdr *mh)
{
	for (struct cmsghdr *m = CMSG_FIRSTHDR(mh); m; m = CMSG_NXTHDR(mh, m)) {
		if (m->cmsg_level != SOL_SOCKET || m->cmsg_type != SCM_RIGHTS)
			continue;
		for (size_t i = 0; i < (m->cmsg_len - CMSG_LEN(0)) / sizeof(int); i++) {
			int fd;

			memcpy(&fd, CMSG_DATA(m) + i * sizeof(int), sizeof(int));
			if (c->passed1)
				close(c->passed1 - 1);
			c->passed1 = fd + 1;
			c->n_passed++;
		}
	}
}

int hclient_send_raw(struct harness *h, struct hclient *c, const void *p, size_t n)
{
	const uint8_t *b = p;

	while (n) {
		ssize_t w = send(c->fd, b, n, MSG_NOSIGNAL | MSG_DONTWAIT);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && errno == EAGAIN) {
			int r = harness_pump(h, 10);

			if (r < 0)
				return r;
			continue;
		}
		if (w < 0)
			return -errno;
		b += w;
		n -= w;
	}
	return 0;
}

int hclient_send(struct harness *h, struct hclient *c, const Hostprof__Request *req)
{
	struct hp_buf b = {};
	int r = frame_append(&b, &req->base, HP_MAX_REQUEST);

	if (r >= 0)
		r = hclient_send_raw(h, c, b.data, b.len);
	hp_buf_free(&b);
	return r;
}

int hclient_fill(struct hclient *c)
{
	size_t got = 0;

	for (;;) {
		ssize_t n;

		union {
			struct cmsghdr h;
			char buf[CMSG_SPACE(4 * sizeof(int))];
		} cm;
		struct iovec iov;
		struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cm.buf,
				     .msg_controllen = sizeof(cm.buf) };

		if (hp_buf_reserve(&c->in, 65536) < 0)
			return -ENOMEM;
		iov = (struct iovec){ c->in.data + c->in.len, c->in.cap - c->in.len };
		n = recvmsg(c->fd, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
		if (n >= 0)
			hclient_take_passed(c, &mh);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return got ? (int)MIN(got, (size_t)INT_MAX) : -EAGAIN;
		if (n < 0 && errno != ECONNRESET)
			return -errno;
		if (n <= 0) {
			c->eof = true;
			return got ? (int)MIN(got, (size_t)INT_MAX) : 0;
		}
		c->in.len += n;
		got += n;
	}
}

int hclient_pop(struct hclient *c, Hostprof__Response **ret)
{
	const uint8_t *payload;
	size_t len;
	int r = frame_peek(&c->in, HP_MAX_RESPONSE, &payload, &len);
	Hostprof__Response *resp;

	if (r <= 0)
		return r == 0 ? 0 : -EBADMSG;
	resp = hostprof__response__unpack(NULL, len, payload);
	hp_buf_consume(&c->in, HP_FRAME_HDR + len);
	if (!resp)
		return -EBADMSG;
	*ret = resp;
	return 1;
}

static uint64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000ULL + ts.tv_nsec / 1000000;
}

int hclient_recv(struct harness *h, struct hclient *c, int timeout_ms, Hostprof__Response **ret)
{
	uint64_t deadline = mono_ms() + timeout_ms;

	for (;;) {
		int r = hclient_pop(c, ret);

		if (r != 0)
			return r;
		if (c->eof)
			return 0;
		r = hclient_fill(c);
		if (r == -EAGAIN) {
			if (mono_ms() > deadline)
				return -ETIMEDOUT;
			r = harness_pump(h, 10);
		}
		if (r < 0 && r != -EAGAIN)
			return r;
	}
}

void hreq_hello(Hostprof__Request *req, Hostprof__Hello *hello, uint32_t protocol)
{
	hostprof__request__init(req);
	hostprof__hello__init(hello);
	hello->protocol = protocol;
	hello->version = (char *)HOSTPROF_VERSION;
	req->body_case = HOSTPROF__REQUEST__BODY_HELLO;
	req->hello = hello;
}

void hreq_status(Hostprof__Request *req, Hostprof__StatusRequest *st)
{
	hostprof__request__init(req);
	hostprof__status_request__init(st);
	req->body_case = HOSTPROF__REQUEST__BODY_STATUS;
	req->status = st;
}

void hreq_metrics(Hostprof__Request *req, Hostprof__MetricsRequest *mr)
{
	hostprof__request__init(req);
	hostprof__metrics_request__init(mr);
	req->body_case = HOSTPROF__REQUEST__BODY_METRICS;
	req->metrics = mr;
}

void hreq_snapshot(Hostprof__Request *req, Hostprof__SnapshotRequest *sr, uint32_t pid, uint64_t window_ns)
{
	hostprof__request__init(req);
	hostprof__snapshot_request__init(sr);
	sr->pid = pid;
	sr->has_window_ns = window_ns != 0;
	sr->window_ns = window_ns;
	req->body_case = HOSTPROF__REQUEST__BODY_SNAPSHOT;
	req->snapshot = sr;
}

void hreq_watch(Hostprof__Request *req, Hostprof__WatchRequest *w, uint32_t pid, const char *thread)
{
	hostprof__request__init(req);
	hostprof__watch_request__init(w);
	w->has_pid = pid != 0;
	w->pid = pid;
	w->thread = (char *)thread;
	req->body_case = HOSTPROF__REQUEST__BODY_WATCH;
	req->watch = w;
}

void hreq_unwatch(Hostprof__Request *req, Hostprof__UnwatchRequest *u, uint32_t pid, const char *thread)
{
	hostprof__request__init(req);
	hostprof__unwatch_request__init(u);
	u->has_pid = pid != 0;
	u->pid = pid;
	u->thread = (char *)thread;
	req->body_case = HOSTPROF__REQUEST__BODY_UNWATCH;
	req->unwatch = u;
}

void hreq_snapshots(Hostprof__Request *req, Hostprof__SnapshotsRequest *l)
{
	hostprof__request__init(req);
	hostprof__snapshots_request__init(l);
	req->body_case = HOSTPROF__REQUEST__BODY_SNAPSHOTS;
	req->snapshots = l;
}

void hreq_fetch(Hostprof__Request *req, Hostprof__FetchRequest *f, const char *name)
{
	hostprof__request__init(req);
	hostprof__fetch_request__init(f);
	f->name = (char *)name;
	req->body_case = HOSTPROF__REQUEST__BODY_FETCH;
	req->fetch = f;
}
