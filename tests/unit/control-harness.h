/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * daemon/control.c as the daemon runs it, for test-control and fuzz-request: the real
 * control, loop, recorder, snapshot store and triggers, with the fakes of fakes.h for
 * watch and snapsvc, listening in a temporary directory, and a client side that talks
 * to it through the socket while the caller drives the loop (loop_iterate).
 *
 * As root, control listens on a path of its own (its directory and socket checks run;
 * the socket is given to the group of uid 65534, so a client that drops to that uid can
 * connect). Otherwise control cannot make a socket that passes its own checks (root's,
 * mode 0600/0660), so it is handed a listening socket the way systemd passes one
 * (LISTEN_FDS, fd 3): `passed_socket` says so.
 */
#ifndef HOSTPROF_TESTS_CONTROL_HARNESS_H
#define HOSTPROF_TESTS_CONTROL_HARNESS_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/un.h>

#include "control.h"
#include "framing.h"
#include "settings.h"

struct harness {
	char dir[PATH_MAX]; /* temporary, mode 01777: the socket and snapshots/ */
	char socket[sizeof(((struct sockaddr_un *)0)->sun_path)];
	char store_dir[PATH_MAX];
	bool passed_socket; /* not root: LISTEN_FDS, see above */
	const char *socket_group; /* root: the group the socket was given, or NULL (then it is 0666) */
	struct settings settings;
	struct loop *loop;
	struct recorder *recorder;
	struct watch *watch;
	struct snapsvc *snapsvc;
	struct snapstore *snapstore;
	struct triggers *triggers;
	struct metrics *metrics;
	struct control *control;
	uint8_t *hps; /* the fixture every snapshot job hands back */
	size_t hps_len;
};

/* The triggers the harness configures (status reports them). */
#define HARNESS_TRIGGER_SYSCALL "slow_syscall"
#define HARNESS_TRIGGER_PREEMPT "preempted"
#define HARNESS_NCPUS 2
#define HARNESS_RING_KB 512
#define HARNESS_INTF (HP_INTF_IRQ | HP_INTF_RECLAIM | HP_INTF_LOCKS)
#define HARNESS_INTF_MISSING HP_INTF_LOCKS

/* Everything made and listening; on failure the reason is printed and -errno returned. */
int harness_start(struct harness *h, const char *fixture);
void harness_stop(struct harness *h);
/* One batch of the loop: loop_iterate()'s value. */
int harness_pump(struct harness *h, int timeout_ms);
/* Reads a whole file (the fixture). */
int harness_read_file(const char *path, uint8_t **ret_data, size_t *ret_len);

/* A client in this process: non-blocking, its input parsed into Responses. */
struct hclient {
	int fd;
	struct hp_buf in;
	bool eof;
	int passed1; /* the last descriptor passed (SCM_RIGHTS) + 1, the client's; 0: none */
	unsigned n_passed; /* descriptors passed in all */
};

int hclient_connect(const struct harness *h, struct hclient *ret);
void hclient_close(struct hclient *c);
/* Writes all of it, pumping the loop while the socket is full. -EPIPE: control closed. */
int hclient_send_raw(struct harness *h, struct hclient *c, const void *p, size_t n);
int hclient_send(struct harness *h, struct hclient *c, const Hostprof__Request *req);
/* Reads what is there: > 0 bytes, 0 at EOF (c->eof), -EAGAIN when nothing is. */
int hclient_fill(struct hclient *c);
/* One whole response from what was read: 1, 0 when it is not all there, -EBADMSG for a
 * frame that is not a Response of at most HP_MAX_RESPONSE bytes. */
int hclient_pop(struct hclient *c, Hostprof__Response **ret);
/* The next response, pumping the loop meanwhile: 1, 0 at EOF, -ETIMEDOUT, -EBADMSG. */
int hclient_recv(struct harness *h, struct hclient *c, int timeout_ms, Hostprof__Response **ret);

/* Requests, as hostprofctl makes them. */
void hreq_hello(Hostprof__Request *req, Hostprof__Hello *hello, uint32_t protocol);
void hreq_status(Hostprof__Request *req, Hostprof__StatusRequest *st);
void hreq_metrics(Hostprof__Request *req, Hostprof__MetricsRequest *mr);
void hreq_snapshot(Hostprof__Request *req, Hostprof__SnapshotRequest *sr, uint32_t pid, uint64_t window_ns);
void hreq_watch(Hostprof__Request *req, Hostprof__WatchRequest *w, uint32_t pid, const char *thread);
void hreq_unwatch(Hostprof__Request *req, Hostprof__UnwatchRequest *u, uint32_t pid, const char *thread);
void hreq_snapshots(Hostprof__Request *req, Hostprof__SnapshotsRequest *l);
void hreq_fetch(Hostprof__Request *req, Hostprof__FetchRequest *f, const char *name);

#endif
