// SPDX-License-Identifier: GPL-2.0-only
/*
 * daemon/trigger.c with the real recorder and snapshot store and the fake snapsvc of
 * fakes.h, linked with only what trigger may use. Records are made as the BPF side
 * writes them (bpf/hostprof.h) and fed through triggers_on_record as the drain does:
 *
 *   - each kind fires at its threshold and not under it, and not for what it does not
 *     look at (another wait kind, an interrupt that did not hit the thread, a thread
 *     name the pattern does not match, a process not watched);
 *   - the cooldown suppresses and counts, per process; it ends;
 *   - triggers_configure keeps the counts and cooldowns of the triggers that stay;
 *   - triggers_tick takes a snapshot once `after` has passed: the service is asked for
 *     window = before + after, end = due, a marker on the thread; the job's files land
 *     in the store, indexed as the process owner's; an exited process still has its
 *     history, a gone one is reported; a store that cannot be used is reported;
 *   - more than 64 waiting snapshots: the rest are counted as dropped.
 *
 *   test-trigger FIXTURE     (tests/fixtures/stall.hps: what each snapshot job hands back)
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "fakes.h"
#include "formats.h"
#include "log.h"
#include "loop.h"
#include "macro.h"
#include "recorder.h"
#include "snapjob.h"
#include "snapstore.h"
#include "snapsvc.h"
#include "syscall_names.h"
#include "trigger.h"

#define MS NSEC_PER_MSEC
#define BASE (1000 * NSEC_PER_SEC) /* record timestamps start here */

static struct loop *loop;
static struct recorder *rec;
static struct snapsvc *svc;
static struct snapstore *store;
static struct triggers *ts;
static uint8_t *fixture;
static size_t fixture_len;
static uint32_t self;
static char comm[HP_COMM_LEN];
static char dir[PATH_MAX];

/* ---- stderr, for what is reported ---- */

static int saved_stderr = -1, capture_fd = -1;

static void capture_start(void)
{
	fflush(stderr);
	capture_fd = memfd_create("stderr", MFD_CLOEXEC);
	if (capture_fd < 0 || (saved_stderr < 0 && (saved_stderr = dup(2)) < 0) || dup2(capture_fd, 2) < 0) {
		perror("test-trigger: cannot capture stderr");
		exit(1);
	}
}

static const char *capture_end(void)
{
	static char buf[1 << 16];
	ssize_t n;

	fflush(stderr);
	dup2(saved_stderr, 2);
	n = pread(capture_fd, buf, sizeof(buf) - 1, 0);
	buf[n > 0 ? n : 0] = 0;
	close(capture_fd);
	capture_fd = -1;
	fputs(buf, stderr); /* still in the test's log */
	return buf;
}

/* ---- records, as bpf/hostprof.h has them ---- */

static void feed(struct hp_hdr *h, uint16_t type, uint16_t size, uint64_t ts_ns)
{
	h->ts = ts_ns;
	h->type = type;
	h->size = size;
	triggers_on_record(ts, rec, h);
}

static void feed_switch(uint64_t ts_ns, uint32_t pid, uint16_t flags, uint32_t kind, uint64_t wait_ns,
			uint32_t prev_pid, const char *prev_comm)
{
	struct hp_switch e = {
		.prev_tid = prev_pid,
		.prev_pid = prev_pid,
		.next_tid = pid,
		.next_pid = pid,
		.flags = flags,
		.next_wait_ns = wait_ns,
		.next_wait_kind = kind,
	};

	snprintf(e.prev_comm, sizeof(e.prev_comm), "%s", prev_comm);
	memcpy(e.next_comm, comm, sizeof(e.next_comm));
	feed(&e.hdr, HP_EV_SWITCH, sizeof(e), ts_ns);
}

static void feed_preempt(uint64_t ts_ns, uint64_t v)
{
	feed_switch(ts_ns, self, HP_SW_NEXT_WATCHED, HP_WAIT_PREEMPT, v, 0, "swapper/0");
}

static void feed_runq(uint64_t ts_ns, uint64_t v)
{
	feed_switch(ts_ns, self, HP_SW_NEXT_WATCHED | HP_SW_PREV_WATCHED, HP_WAIT_WAKEUP, v, 4321, "waker");
}

static void feed_offcpu_of(uint32_t pid, uint64_t ts_ns, uint64_t v)
{
	struct hp_offcpu e = { .dur_ns = v, .tid = pid, .pid = pid, .waker_tid = 99, .waker_pid = 99 };

	snprintf(e.waker_comm, sizeof(e.waker_comm), "kworker");
	feed(&e.hdr, HP_EV_OFFCPU, sizeof(e), ts_ns);
}

static void feed_offcpu(uint64_t ts_ns, uint64_t v)
{
	feed_offcpu_of(self, ts_ns, v);
}

static void feed_syscall_of(uint32_t pid, uint64_t ts_ns, uint64_t v)
{
	struct hp_syscall e = { .dur_ns = v, .tid = pid, .pid = pid, .nr = 0, .ret = 7 };

	feed(&e.hdr, HP_EV_SYSCALL, sizeof(e), ts_ns);
}

static void feed_syscall(uint64_t ts_ns, uint64_t v)
{
	feed_syscall_of(self, ts_ns, v);
}

/* v moves, 1 ms apart */
static void feed_migrate(uint64_t ts_ns, uint64_t v)
{
	for (uint64_t i = 0; i < v; i++) {
		struct hp_migrate e = { .tid = self, .pid = self, .from_cpu = i % 2, .to_cpu = (i + 1) % 2 };

		feed(&e.hdr, HP_EV_MIGRATE, sizeof(e), ts_ns + i * MS);
	}
}

static void feed_reclaim(uint64_t ts_ns, uint64_t v)
{
	struct hp_reclaim e = {
		.dur_ns = v, .tid = self, .pid = self, .kind = HP_RECLAIM_DIRECT, .order = 2
	};

	feed(&e.hdr, HP_EV_RECLAIM, sizeof(e), ts_ns);
}

static void feed_lock(uint64_t ts_ns, uint64_t v)
{
	struct hp_lock e = {
		.dur_ns = v, .lock = 0xffff888012345678ULL, .tid = self, .pid = self, .flags = HP_LOCK_MMAP
	};

	feed(&e.hdr, HP_EV_LOCK, sizeof(e), ts_ns);
}

static void feed_irq_flags(uint64_t ts_ns, uint64_t v, uint16_t flags)
{
	struct hp_irq e = {
		.dur_ns = v, .tid = self, .pid = self, .kind = HP_IRQ_HARD, .flags = flags, .num = 42
	};

	snprintf(e.name, sizeof(e.name), "nvme0q1");
	feed(&e.hdr, HP_EV_IRQ, sizeof(e), ts_ns);
}

static void feed_irq(uint64_t ts_ns, uint64_t v)
{
	feed_irq_flags(ts_ns, v, HP_IRQ_RUNNING);
}

static void feed_gil(uint64_t ts_ns, uint64_t v)
{
	struct hp_gil e = { .dur_ns = v, .tid = self, .pid = self, .holder_tid = self, .waits = 1 };

	feed(&e.hdr, HP_EV_GIL, sizeof(e), ts_ns);
}

/* ---- triggers ---- */

static struct trigger_def def(const char *name, enum trigger_kind kind, const char *threads,
			      uint64_t threshold, uint64_t cooldown_ns)
{
	struct trigger_def d = {
		.kind = kind,
		.threshold = threshold,
		.before_ns = 3 * NSEC_PER_SEC,
		.after_ns = 2 * NSEC_PER_SEC,
		.cooldown_ns = cooldown_ns,
	};

	snprintf(d.name, sizeof(d.name), "%s", name);
	snprintf(d.threads, sizeof(d.threads), "%s", threads);
	return d;
}

/* A fresh set of triggers: nothing fired, nothing waiting. */
static void fresh(const struct trigger_def *defs, size_t n, unsigned formats)
{
	triggers_free(ts);
	ts = triggers_new(rec, svc, store);
	CHECK(ts != NULL);
	if (!ts)
		exit(1);
	CHECK_EQ_INT(triggers_configure(ts, defs, n, formats), 0);
	fake_snapsvc_reset(svc);
}

static struct trigger_stat stat_of(size_t i)
{
	struct trigger_stat st = {};

	if (i < triggers_count(ts))
		triggers_stat(ts, i, &st);
	return st;
}

static uint64_t fired(size_t i)
{
	return stat_of(i).fired;
}

static uint64_t suppressed(size_t i)
{
	return stat_of(i).suppressed;
}

/* Pumps the loop until no snapshot job is left. */
static void wait_jobs(void)
{
	for (int i = 0; i < 500 && fake_snapsvc_in_flight(svc); i++)
		loop_iterate(loop, 10);
	CHECKF(fake_snapsvc_in_flight(svc) == 0, "snapshot jobs did not finish");
}

/* ---- the checks ---- */

static const struct kind_case {
	enum trigger_kind kind;
	uint64_t threshold;
	void (*feed)(uint64_t ts_ns, uint64_t v);
	const char *detail; /* in the marker of the snapshot it takes */
} kinds[] = {
	{ TRIGGER_PREEMPT, 2 * MS, feed_preempt, "waited 2.0 ms after hog (pid 777, prio 5) preempted it" },
	{ TRIGGER_RUNQ, 2 * MS, feed_runq,
	  "waited 2.0 ms on the runqueue after its wakeup; waker (pid 4321) ran" },
	{ TRIGGER_OFFCPU, 2 * MS, feed_offcpu, "was blocked 2.0 ms; woken by kworker (pid 99)" },
	{ TRIGGER_SYSCALL, 2 * MS, feed_syscall, "spent 2.0 ms in" },
	{ TRIGGER_MIGRATE, 3, feed_migrate, "moved 3 times within 1 s, last from CPU 0 to 1" },
	{ TRIGGER_RECLAIM, 2 * MS, feed_reclaim, "spent 2.0 ms in direct reclaim (order 2)" },
	{ TRIGGER_LOCK, 2 * MS, feed_lock, "waited 2.0 ms for a kernel mmap_lock" },
	{ TRIGGER_IRQ, 2 * MS, feed_irq, "lost 2.0 ms of CPU 0 to nvme0q1 IRQ 42" },
	{ TRIGGER_GIL, 2 * MS, feed_gil, "waited 2.0 ms for the GIL, held by" },
};

/* Each kind: under its threshold nothing, at it one snapshot, whose marker says why. */
static void check_kinds(void)
{
	for (size_t k = 0; k < ARRAY_SIZE(kinds); k++) {
		const struct kind_case *kc = &kinds[k];
		const char *name = trigger_kind_name(kc->kind);
		struct trigger_def d = def(name, kc->kind, "test-tr*", kc->threshold, 60 * NSEC_PER_SEC);
		const struct fake_snap_req *req;
		uint64_t t = BASE + k * 100 * NSEC_PER_SEC;
		size_t n;

		fresh(&d, 1, 0);
		if (kc->kind == TRIGGER_PREEMPT) {
			/* who took the CPU: the switch that put the thread off it last */
			struct hp_switch out = {
				.hdr = { .ts = t - 5 * MS, .type = HP_EV_SWITCH, .size = sizeof(out) },
				.prev_tid = self,
				.prev_pid = self,
				.next_tid = 777,
				.next_pid = 777,
				.next_prio = 5,
				.flags = HP_SW_PREV_WATCHED
			};

			snprintf(out.next_comm, sizeof(out.next_comm), "hog");
			recorder_append(rec, &out.hdr);
		}
		kc->feed(t, kc->threshold - 1);
		CHECKF(fired(0) == 0, "%s fired under its threshold", name);
		kc->feed(t + 10 * MS, kc->threshold);
		CHECKF(fired(0) == 1 && suppressed(0) == 0,
		       "%s at its threshold: fired %llu, suppressed %llu", name, (unsigned long long)fired(0),
		       (unsigned long long)suppressed(0));
		triggers_tick(ts, t + 10 * NSEC_PER_SEC);
		n = fake_snapsvc_requests(svc, &req);
		CHECKF(n == 1, "%s: %zu snapshots asked for", name, n);
		if (n == 1)
			CHECKF(strstr(req[0].marker_detail, kc->detail) && req[0].marker_tid == self,
			       "%s: marker of tid %u says \"%s\", want \"%s\"", name, req[0].marker_tid,
			       req[0].marker_detail, kc->detail);
		wait_jobs();
	}
}

/* What each kind does not look at. */
static void check_not_fired(void)
{
	struct trigger_def d[] = {
		def("preempt", TRIGGER_PREEMPT, "*", 2 * MS, 0),
		def("runq", TRIGGER_RUNQ, "*", 2 * MS, 0),
		def("irq", TRIGGER_IRQ, "*", 2 * MS, 0),
		def("named", TRIGGER_OFFCPU, "nomatch*", 2 * MS, 0),
		def("migrate", TRIGGER_MIGRATE, "*", 3, 0),
	};
	uint64_t t = BASE + 2000 * NSEC_PER_SEC;

	fresh(d, ARRAY_SIZE(d), 0);
	/* a wakeup wait is not a preemption, nor the other way round */
	feed_switch(t, self, HP_SW_NEXT_WATCHED, HP_WAIT_WAKEUP, 0, 0, "x");
	feed_switch(t + MS, self, HP_SW_NEXT_WATCHED, 0, 50 * MS, 0, "x");
	CHECK_EQ_U64(fired(0), 0);
	CHECK_EQ_U64(fired(1), 0);
	feed_switch(t + 2 * MS, self, HP_SW_NEXT_WATCHED, HP_WAIT_PREEMPT, 50 * MS, 0, "x");
	CHECK_EQ_U64(fired(0), 1);
	CHECK_EQ_U64(fired(1), 0);
	/* next not watched */
	feed_switch(t + 3 * MS, self, HP_SW_PREV_WATCHED, HP_WAIT_WAKEUP, 50 * MS, 0, "x");
	CHECK_EQ_U64(fired(1), 0);
	/* an interrupt on the CPU where the thread waited did not take its time */
	feed_irq_flags(t, 50 * MS, HP_IRQ_WAITING);
	CHECK_EQ_U64(fired(2), 0);
	/* a thread name the pattern does not match */
	feed_offcpu(t, 50 * MS);
	CHECK_EQ_U64(fired(3), 0);
	/* a process that is not watched (pid 1 is not, here) */
	feed_offcpu_of(1, t, 50 * MS);
	CHECK_EQ_U64(fired(3), 0);
	/* moves spread over more than a second */
	feed_migrate(t, 2);
	feed_migrate(t + 2 * NSEC_PER_SEC, 2);
	CHECK_EQ_U64(fired(4), 0);
	feed_migrate(t + 2 * NSEC_PER_SEC + 10 * MS, 1);
	CHECK_EQ_U64(fired(4), 1);
}

/* The cooldown: per (trigger, process), counted, ending. */
static void check_cooldown(uint32_t kid)
{
	struct trigger_def d = def("slow", TRIGGER_SYSCALL, "*", 2 * MS, 10 * NSEC_PER_SEC);
	struct trigger_def again[] = {
		def("new_one", TRIGGER_OFFCPU, "*", 2 * MS, 0),
		def("slow", TRIGGER_SYSCALL, "*", 4 * MS, 10 * NSEC_PER_SEC),
	};
	struct trigger_def gone = def("other", TRIGGER_LOCK, "*", 2 * MS, 0);
	uint64_t t = BASE + 3000 * NSEC_PER_SEC;

	fresh(&d, 1, 0);
	feed_syscall(t, 5 * MS);
	feed_syscall(t + NSEC_PER_SEC, 5 * MS);
	feed_syscall(t + 9 * NSEC_PER_SEC, 5 * MS);
	CHECK_EQ_U64(fired(0), 1);
	CHECK_EQ_U64(suppressed(0), 2);
	/* another process has a cooldown of its own */
	feed_syscall_of(kid, t + NSEC_PER_SEC, 5 * MS);
	CHECK_EQ_U64(fired(0), 2);
	/* it ended: 10 s after the first (which ended at t + 5 ms) */
	feed_syscall(t + 10 * NSEC_PER_SEC + 5 * MS, 5 * MS);
	CHECK_EQ_U64(fired(0), 3);
	CHECK_EQ_U64(suppressed(0), 2);

	/* reconfigured: "slow" stays (at a new threshold), "new_one" comes, "other" went */
	CHECK_EQ_INT(triggers_configure(ts, &gone, 1, 0), 0);
	CHECK_EQ_INT(triggers_configure(ts, (struct trigger_def[]){ d, gone }, 2, 0), 0);
	CHECK_EQ_INT(triggers_configure(ts, again, ARRAY_SIZE(again), 0), 0);
	CHECK_EQ_U64(triggers_count(ts), 2);
	CHECK_STR(stat_of(0).def->name, "new_one");
	CHECK_EQ_U64(fired(0), 0);
	CHECK_STR(stat_of(1).def->name, "slow");
	/* what was counted before "other" replaced it is not kept through "other" */
	CHECK_EQ_U64(fired(1), 0);
	CHECK_EQ_U64(suppressed(1), 0);

	/* now straight: kept across a reconfigure that keeps it */
	fresh(&d, 1, 0);
	feed_syscall(t, 5 * MS);
	feed_syscall(t + NSEC_PER_SEC, 5 * MS);
	CHECK_EQ_INT(triggers_configure(ts, again, ARRAY_SIZE(again), 0), 0);
	CHECK_EQ_U64(triggers_count(ts), 2);
	CHECK_EQ_U64(fired(1), 1);
	CHECK_EQ_U64(suppressed(1), 1);
	CHECK_EQ_U64(stat_of(1).def->threshold, 4 * MS);
	/* its cooldown still runs: suppressed, not fired */
	feed_syscall(t + 2 * NSEC_PER_SEC, 5 * MS);
	CHECK_EQ_U64(fired(1), 1);
	CHECK_EQ_U64(suppressed(1), 2);
	/* the new threshold holds */
	feed_syscall(t + 20 * NSEC_PER_SEC, 3 * MS);
	CHECK_EQ_U64(fired(1), 1);
	feed_syscall(t + 21 * NSEC_PER_SEC, 4 * MS);
	CHECK_EQ_U64(fired(1), 2);
	/* the snapshots it asked for before wait still (not built here: both are of one
	 * process and trigger within the same second of this fast test) */
	fake_snapsvc_set_start_result(svc, -ECANCELED);
	triggers_tick(ts, t + 60 * NSEC_PER_SEC);
	fake_snapsvc_set_start_result(svc, 0);
	CHECK_EQ_U64(fake_snapsvc_requests(svc, &(const struct fake_snap_req *){ NULL }), 2);
	/* a bad pattern is refused, the triggers stay as they were */
	again[0].threads[0] = 0;
	CHECK(triggers_configure(ts, again, ARRAY_SIZE(again), 0) < 0);
	CHECK_EQ_U64(fired(1), 2);
}

/* A child that waits, as uid (root drops it there); -1 if it cannot be made. */
static pid_t spawn_as(uid_t uid)
{
	int fds[2], err = 0;
	pid_t pid;

	if (pipe2(fds, O_CLOEXEC) < 0)
		return -1;
	pid = fork();
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (uid != getuid() && (setresgid(uid, uid, uid) < 0 || setresuid(uid, uid, uid) < 0 ||
					prctl(PR_SET_DUMPABLE, 1) < 0)) /* as after an exec */
			err = errno;
		(void)!write(fds[1], &err, sizeof(err));
		for (;;)
			pause();
	}
	close(fds[1]);
	if (pid < 0 || read(fds[0], &err, sizeof(err)) != sizeof(err) || err) {
		if (pid > 0) {
			kill(pid, SIGKILL);
			waitpid(pid, NULL, 0);
		}
		pid = -1;
	}
	close(fds[0]);
	return pid;
}

/* One snapshot, end to end: due, asked for, built, written, indexed as the owner's (a
 * process of uid 65534 as root, so that root's own uid cannot pass for it). */
static void check_tick(void)
{
	struct trigger_def d = def("slow", TRIGGER_SYSCALL, "*", 2 * MS, 60 * NSEC_PER_SEC);
	const struct fake_snap_req *req;
	const struct snap_entry *e;
	uint64_t t = BASE + 4000 * NSEC_PER_SEC, fire_ns = t + 5 * MS, due = fire_ns + d.after_ns;
	uid_t uid = geteuid() == 0 ? 65534 : getuid();
	pid_t kid = uid == getuid() ? -1 : spawn_as(uid);
	uint32_t pid = kid > 0 ? (uint32_t)kid : self;
	uint8_t *data = NULL;
	size_t n, len = 0, before = snapstore_count(store);
	struct proc_rec *p;

	if (geteuid() == 0 && kid < 0) {
		printf("root, but no process of uid %u could be made: the owner is checked against root's\n",
		       uid);
		uid = 0;
	}
	if (kid > 0)
		CHECK_EQ_INT(recorder_watch(rec, pid, HP_WATCH_PID, 0, now_boottime_ns(), &p), 0);
	fresh(&d, 1, 1u << FMT_REPORT);
	feed_syscall_of(pid, t, 5 * MS);
	triggers_tick(ts, due - 1);
	CHECK_EQ_U64(fake_snapsvc_requests(svc, &req), 0);
	triggers_tick(ts, due);
	n = fake_snapsvc_requests(svc, &req);
	CHECK_EQ_U64(n, 1);
	if (n == 1) {
		char want[64];

		snprintf(want, sizeof(want), "spent 5.0 ms in %s = 7", syscall_names[0]);
		CHECK_EQ_U64(req[0].pid, pid);
		CHECK_EQ_U64(req[0].window_ns, d.before_ns + d.after_ns);
		CHECK_EQ_U64(req[0].end_ns, due);
		CHECK_STR(req[0].reason, "slow");
		CHECK_EQ_U64(req[0].n_markers, 1);
		CHECK_EQ_U64(req[0].marker_ts, fire_ns);
		CHECK_EQ_U64(req[0].marker_tid, pid);
		CHECK_STR(req[0].marker_name, "slow");
		CHECKF(strstr(req[0].marker_detail, want), "marker \"%s\", want \"%s\"", req[0].marker_detail,
		       want);
	}
	/* taken once */
	triggers_tick(ts, due + NSEC_PER_SEC);
	CHECK_EQ_U64(fake_snapsvc_requests(svc, &req), 1);
	wait_jobs();
	CHECK_EQ_U64(snapstore_count(store), before + 1);
	e = NULL;
	for (size_t i = 0; i < snapstore_count(store); i++)
		if (!strcmp(snapstore_at(store, i)->trigger, "slow") && snapstore_at(store, i)->pid == pid)
			e = snapstore_at(store, i);
	CHECKF(e != NULL, "no snapshot of trigger slow for pid %u in the store", pid);
	if (e) {
		CHECK_EQ_U64(e->owner.uid, uid);
		CHECKF(e->summary[0], "the snapshot has no summary (the report's first line)");
		CHECKF(e->n_exts == 2, "%zu files, want .hps and .txt", e->n_exts);
		CHECK_EQ_INT(snapstore_read_hps(store, e, &data, &len), 0);
		CHECK(len == fixture_len && data && !memcmp(data, fixture, len));
		free(data);
	}
	if (kid > 0) {
		kill(kid, SIGKILL);
		waitpid(kid, NULL, 0);
	}
}

/* Exited with its history: still taken. Gone with it: said so, nothing asked. */
static void check_gone(void)
{
	struct trigger_def d = def("slow", TRIGGER_SYSCALL, "*", 2 * MS, 60 * NSEC_PER_SEC);
	const struct fake_snap_req *req;
	uint64_t t = BASE + 5000 * NSEC_PER_SEC, now = now_boottime_ns();
	const struct recorder_limits *lim = recorder_limits(rec);
	struct proc_rec *p;
	pid_t a = -1, b = -1;
	const char *out;
	char want[96];
	size_t n;

	fresh(&d, 1, 0);
	for (int i = 0; i < 2; i++) {
		pid_t pid = fork();

		if (pid == 0) {
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			for (;;)
				pause();
		}
		CHECK(pid > 0);
		if (pid < 0)
			return;
		CHECK_EQ_INT(recorder_watch(rec, pid, HP_WATCH_PID, 0, now, &p), 0);
		if (i == 0)
			a = pid;
		else
			b = pid;
	}
	feed_syscall_of(a, t, 5 * MS);
	feed_syscall_of(b, t, 5 * MS);
	CHECK_EQ_U64(fired(0), 2);
	kill(a, SIGKILL);
	kill(b, SIGKILL);
	waitpid(a, NULL, 0);
	waitpid(b, NULL, 0);
	/* a keeps its history (a record late in the window), b has none: it goes after the window */
	{
		struct hp_syscall e = {
			.hdr = { .ts = now + 20 * NSEC_PER_SEC, .type = HP_EV_SYSCALL, .size = sizeof(e) },
			.tid = a,
			.pid = a
		};

		recorder_append(rec, &e.hdr);
	}
	recorder_tick(rec, now + NSEC_PER_SEC, NULL, NULL, NULL);
	CHECK(recorder_find(rec, a) && recorder_find(rec, a)->exit_ns);
	CHECK(recorder_find(rec, b) && recorder_find(rec, b)->exit_ns);
	recorder_tick(rec, now + lim->window_ns / 2 + 2 * NSEC_PER_SEC, NULL, NULL, NULL);
	recorder_tick(rec, now + lim->window_ns + 2 * NSEC_PER_SEC, NULL, NULL, NULL);
	CHECKF(recorder_find(rec, b) == NULL, "pid %d: its history did not go", b);
	CHECKF(recorder_find(rec, a) != NULL, "pid %d: its history went with the window", a);

	capture_start();
	triggers_tick(ts, t + 60 * NSEC_PER_SEC);
	out = capture_end();
	snprintf(want, sizeof(want), "pid %d is gone and its history with it, no snapshot", b);
	CHECKF(strstr(out, want), "a gone process was not reported (\"%s\")", want);
	n = fake_snapsvc_requests(svc, &req);
	CHECKF(n == 1 && req[0].pid == (uint32_t)a, "%zu snapshots asked for, want one of exited pid %d", n,
	       a);
	wait_jobs();
}

/* A snapshot directory that cannot be made: said so, nothing asked, capture goes on. */
static void check_bad_store(void)
{
	struct trigger_def d = def("slow", TRIGGER_SYSCALL, "*", 2 * MS, 60 * NSEC_PER_SEC);
	struct snapstore *bad;
	char file[PATH_MAX + 16], path[PATH_MAX + 32];
	const char *out;
	FILE *f;

	snprintf(file, sizeof(file), "%s/not-a-dir", dir);
	snprintf(path, sizeof(path), "%s/store", file);
	f = fopen(file, "we");
	CHECK(f != NULL);
	if (f)
		fclose(f);
	bad = snapstore_new(path, 10, 1 << 30);
	triggers_free(ts);
	ts = triggers_new(rec, svc, bad);
	CHECK(ts && bad);
	if (!ts || !bad)
		exit(1);
	CHECK_EQ_INT(triggers_configure(ts, &d, 1, 0), 0);
	fake_snapsvc_reset(svc);
	feed_syscall(BASE + 6000 * NSEC_PER_SEC, 5 * MS);
	capture_start();
	triggers_tick(ts, BASE + 7000 * NSEC_PER_SEC);
	out = capture_end();
	CHECKF(strstr(out, "cannot use the snapshot directory") && strstr(out, "is lost"),
	       "an unusable snapshot directory was not reported");
	CHECK_EQ_U64(fake_snapsvc_requests(svc, &(const struct fake_snap_req *){ NULL }), 0);
	triggers_free(ts);
	ts = NULL;
	snapstore_free(bad);
}

/* 64 snapshots may wait for their `after`; the 65th is counted, not kept. */
static void check_dropped(void)
{
	struct trigger_def d = def("every", TRIGGER_SYSCALL, "*", 2 * MS, 0);
	uint64_t t = BASE + 8000 * NSEC_PER_SEC;

	fresh(&d, 1, 0);
	for (int i = 0; i < 65; i++)
		feed_syscall(t + i * MS, 5 * MS);
	CHECK_EQ_U64(fired(0), 64);
	CHECK_EQ_U64(triggers_dropped(ts), 1);
}

static int remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)remove(path);
	return 0;
}

static int read_file(const char *path)
{
	FILE *f = fopen(path, "re");
	long n;

	if (!f || fseek(f, 0, SEEK_END) < 0 || (n = ftell(f)) <= 0 || fseek(f, 0, SEEK_SET) < 0)
		return -1;
	fixture = malloc(n);
	fixture_len = n;
	if (!fixture || fread(fixture, 1, n, f) != (size_t)n)
		return -1;
	fclose(f);
	return 0;
}

int main(int argc, char **argv)
{
	const struct recorder_limits lim = {
		.window_ns = 30 * NSEC_PER_SEC,
		.buffer_bytes = 4 << 20,
		.memory_bytes = 64 << 20,
		.host_bytes = 4 << 20,
	};
	const char *tmp = getenv("TMPDIR");
	char store_dir[PATH_MAX + 16];
	struct proc_rec *p = NULL;
	pid_t kid;
	int rc;

	if (argc != 2) {
		fprintf(stderr, "usage: test-trigger FIXTURE\n");
		return 2;
	}
	if (read_file(argv[1]) < 0) {
		fprintf(stderr, "test-trigger: cannot read %s: %m\n", argv[1]);
		return 1;
	}
	log_open("test-trigger");
	log_set_max_level(LOG_WARNING);
	prctl(PR_SET_NAME, "test-trigger");
	snprintf(comm, sizeof(comm), "test-trigger");
	self = getpid();
	snprintf(dir, sizeof(dir), "%s/hp-trigger-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(dir)) {
		fprintf(stderr, "test-trigger: mkdtemp: %m\n");
		return 1;
	}
	snprintf(store_dir, sizeof(store_dir), "%s/snapshots", dir);
	loop = loop_new();
	rec = recorder_new(&lim);
	svc = snapsvc_new(loop, NULL, rec, NULL);
	store = snapstore_new(store_dir, 100, 1 << 30);
	if (!loop || !rec || !svc || !store || fake_snapsvc_set_snapshot(svc, fixture, fixture_len, 7) < 0 ||
	    recorder_watch(rec, self, HP_WATCH_PID, 0, now_boottime_ns(), &p) < 0) {
		fprintf(stderr, "test-trigger: setting up failed\n");
		return 1;
	}
	kid = fork();
	if (kid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		for (;;)
			pause();
	}
	CHECK(kid > 0 && recorder_watch(rec, kid, HP_WATCH_PID, 0, now_boottime_ns(), &p) == 0);

	check_kinds();
	check_not_fired();
	if (kid > 0)
		check_cooldown(kid);
	check_tick();
	check_gone();
	check_bad_store();
	check_dropped();

	if (kid > 0) {
		kill(kid, SIGKILL);
		waitpid(kid, NULL, 0);
	}
	snapjob_kill_all();
	triggers_free(ts);
	snapsvc_free(svc);
	snapstore_free(store);
	recorder_free(rec);
	loop_free(loop);
	free(fixture);
	nftw(dir, remove_one, 16, FTW_DEPTH | FTW_PHYS);
	rc = check_summary();
	return rc;
}
