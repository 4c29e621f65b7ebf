/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Fakes of the daemon modules whose real versions need the kernel (watch.c, snapsvc.c:
 * they call capture.c, which loads BPF). Each implements its module's header as it is,
 * so the module under test links against it unchanged; what is declared here is what a
 * test reads and sets on the fake.
 *
 * fake-watch.c records the calls (watch_pid, watch_stop, the thread patterns) and keeps
 * the patterns as the real one does; it changes nothing in the recorder (tests watch
 * processes with recorder_watch() themselves).
 *
 * fake-snapsvc.c runs each snapshot in a real snapshot job (snapjob.c: a forked child):
 * the job's work hands the bytes it was given (a fixture .hps) to the caller's `then`.
 * It records each request and reports the drops it was given.
 */
#ifndef HOSTPROF_TESTS_FAKES_H
#define HOSTPROF_TESTS_FAKES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <unistd.h>

#include "counts.h"
#include "hostprof.h"
#include "procfs.h"

/* The credentials of an ordinary process of uid (its gid: the test's own, or uid's own
 * number, as the tests' children take it), dumpable: whom an automatic snapshot belongs to. */
static inline struct proc_cred test_cred(uint32_t uid)
{
	uint32_t gid = uid == getuid() ? getgid() : uid;

	return (struct proc_cred){ uid, uid, uid, uid, gid, gid, gid, gid, true };
}
#define CRED(uid) (&(struct proc_cred[1]){ test_cred(uid) }[0])

struct snapsvc;
struct watch;

enum fake_watch_op {
	FAKE_WATCH_PID,
	FAKE_WATCH_STOP,
	FAKE_WATCH_SET_GLOBS,
	FAKE_WATCH_ADD_GLOB,
	FAKE_WATCH_REMOVE_GLOB,
};

struct fake_watch_call {
	enum fake_watch_op op;
	uint32_t pid, reason; /* FAKE_WATCH_PID, FAKE_WATCH_STOP */
	char glob[HP_COMM_LEN + 8]; /* the *_GLOB ones (cut) */
	int ret; /* what the fake returned */
};

#define FAKE_WATCH_MAX_CALLS 64

/* The calls since the last reset, oldest first (the first FAKE_WATCH_MAX_CALLS). */
size_t fake_watch_calls(const struct watch *w, const struct fake_watch_call **ret);
/* Forget the calls and the patterns. */
void fake_watch_reset(struct watch *w);
/* watch_pid's answer from now on (0, or -ENOENT to play a process that just exited). */
void fake_watch_set_pid_result(struct watch *w, int r);

/* One request snapsvc_start was given, copied (its pointers do not outlive the call). */
struct fake_snap_req {
	uint32_t pid;
	uint64_t window_ns, end_ns;
	char reason[32]; /* "" for NULL */
	size_t n_markers;
	uint64_t marker_ts;
	uint32_t marker_tid;
	char marker_name[32];
	char marker_detail[192];
};

#define FAKE_SNAPSVC_MAX_REQS 128

/* The bytes every job hands to `then` (copied), and the event count it reports. */
int fake_snapsvc_set_snapshot(struct snapsvc *svc, const uint8_t *data, size_t len, uint64_t events);
/* What snapsvc_drops() returns. */
void fake_snapsvc_set_drops(struct snapsvc *svc, const struct drop_count *drops, size_t n);
/* snapsvc_start's answer from now on: 0 (start a job), or the -errno it fails with. */
void fake_snapsvc_set_start_result(struct snapsvc *svc, int r);
/* Held: jobs started from now on wait in their child until fake_snapsvc_release(). */
int fake_snapsvc_hold(struct snapsvc *svc);
void fake_snapsvc_release(struct snapsvc *svc);
/* The requests since the last reset, oldest first. */
size_t fake_snapsvc_requests(const struct snapsvc *svc, const struct fake_snap_req **ret);
void fake_snapsvc_reset(struct snapsvc *svc);
/* Jobs started whose done function has not run yet. */
size_t fake_snapsvc_in_flight(const struct snapsvc *svc);
/* snapsvc_catch_up() calls. */
uint64_t fake_snapsvc_catch_ups(const struct snapsvc *svc);

#endif
