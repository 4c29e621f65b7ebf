// SPDX-License-Identifier: GPL-2.0-only
/*
 * bpf tier: load the real programs (daemon/capture.c), drive a workload whose
 * behaviour is known, and check what was captured against that ground truth.
 *
 * Usage: test-capture CASE [STALL_BINARY]
 *   sleep    a thread started after watching began sleeps N times: exactly N switch-outs
 *            in state S, none for an unwatched twin process
 *   rawtp    the same through the raw_tp fallback
 *   rename   a process becomes watched when one of its threads is renamed acl_thread
 *   fork     a child forked by a watched process is followed
 *   preempt  the stall workload: acl_thread is preempted (R or R+) by the SCHED_FIFO hog once
 *            per burst, and >= 95% of those preemptions are captured with the hog named
 *
 * Exit 0 pass, 1 fail, 77 skip (not root, no BTF, SCHED_FIFO refused).
 */
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <pthread.h>
#include <time.h>
#include <unistd.h>

#include "capture.h"
#include "hostprof.h"
#include "macro.h"

#define N_SLEEPS 50

static int failures;

#define EXPECT(cond, ...)                                                   \
	do {                                                                \
		if (!(cond)) {                                              \
			fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond); \
			fprintf(stderr, __VA_ARGS__);                       \
			fputc('\n', stderr);                                \
			failures++;                                         \
		}                                                           \
	} while (0)

/* Everything drained, in arrival order. */
static struct {
	uint8_t *data;
	size_t len, cap;
	size_t n;
} log_;

static void on_record(void *ud, const struct hp_hdr *h)
{
	if (log_.len + h->size > log_.cap) {
		log_.cap = (log_.cap + h->size) * 2;
		log_.data = realloc(log_.data, log_.cap);
		if (!log_.data)
			abort();
	}
	memcpy(log_.data + log_.len, h, h->size);
	log_.len += h->size;
	log_.n++;
}

#define for_each_record(h) \
	for (const struct hp_hdr *h = (const void *)log_.data; (const uint8_t *)h < log_.data + log_.len; \
	     h = (const void *)((const uint8_t *)h + h->size))

static uint64_t boot_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_BOOTTIME, &ts);
	return ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static struct capture *start_capture(bool raw_tp)
{
	struct capture_opts opts = { .ring_kb = 1024, .force_raw_tp = raw_tp };
	struct capture *c;
	int r;

	if (geteuid() != 0) {
		printf("SKIP: needs root to load BPF programs\n");
		exit(77);
	}
	r = capture_new(&opts, on_record, NULL, &c);
	if (r == -ENOTSUP) {
		printf("SKIP: kernel without BTF\n");
		exit(77);
	}
	if (r < 0) {
		fprintf(stderr, "capture_new: %s\n", strerror(-r));
		exit(1);
	}
	EXPECT(capture_uses_raw_tp(c) == raw_tp, "raw_tp=%d", capture_uses_raw_tp(c));
	return c;
}

static void drain(struct capture *c)
{
	int r = capture_drain(c);

	EXPECT(r >= 0, "drain: %s", strerror(-r));
}

/* Blocks until the parent writes a byte. */
static void wait_go(int fd)
{
	char b;

	if (read(fd, &b, 1) != 1)
		_exit(3);
}

static void go(int fd)
{
	if (write(fd, "g", 1) != 1)
		abort();
}

static void *sleeper_main(void *arg)
{
	struct timespec ts = { 0, 2 * 1000 * 1000 };

	prctl(PR_SET_NAME, "sleeper");
	*(pid_t *)arg = syscall(SYS_gettid);
	for (int i = 0; i < N_SLEEPS; i++)
		nanosleep(&ts, NULL);
	return NULL;
}

/* Child: on go, start a thread that sleeps N_SLEEPS times; report its tid; exit. */
static pid_t spawn_sleeper(int *ret_go, int *ret_tid_fd)
{
	int gofd[2], tidfd[2];
	pid_t pid;

	if (pipe(gofd) < 0 || pipe(tidfd) < 0)
		abort();
	pid = fork();
	if (pid == 0) {
		pthread_t t;
		pid_t tid = 0;

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		wait_go(gofd[0]);
		pthread_create(&t, NULL, sleeper_main, &tid);
		pthread_join(t, NULL);
		if (write(tidfd[1], &tid, sizeof(tid)) != sizeof(tid))
			_exit(1);
		_exit(0);
	}
	close(gofd[0]);
	close(tidfd[1]);
	*ret_go = gofd[1];
	*ret_tid_fd = tidfd[0];
	return pid;
}

static int test_sleep(bool raw_tp)
{
	struct capture *c = start_capture(raw_tp);
	int go_w, go_u, tid_w_fd, tid_u_fd;
	pid_t w = spawn_sleeper(&go_w, &tid_w_fd), u = spawn_sleeper(&go_u, &tid_u_fd);
	pid_t tid_w = 0, tid_u = 0;
	unsigned sleeps = 0, ins = 0, foreign = 0, unwatched = 0, spawn = 0;
	uint64_t t0, t1, last_ts[1024] = {};
	bool ordered = true;
	int r;

	r = capture_watch(c, w, HP_WATCH_PID, 0);
	EXPECT(r == 0, "watch: %s", strerror(-r));
	t0 = boot_ns();
	go(go_w);
	go(go_u);
	EXPECT(read(tid_w_fd, &tid_w, sizeof(tid_w)) == sizeof(tid_w), "tid of the watched sleeper");
	EXPECT(read(tid_u_fd, &tid_u, sizeof(tid_u)) == sizeof(tid_u), "tid of the unwatched sleeper");
	waitpid(w, NULL, 0);
	waitpid(u, NULL, 0);
	t1 = boot_ns();
	drain(c);

	for_each_record(h)
	{
		if (h->type == HP_EV_FORK) {
			const struct hp_fork *f = (const void *)h;

			spawn += f->child_tid == (uint32_t)tid_w && f->child_pid == (uint32_t)w;
			continue;
		}
		if (h->type != HP_EV_SWITCH)
			continue;
		const struct hp_switch *e = (const void *)h;

		if (h->ts < t0 || h->ts > t1)
			ordered = false;
		if (h->cpu < 1024) {
			if (h->ts < last_ts[h->cpu])
				ordered = false;
			last_ts[h->cpu] = h->ts;
		}
		if (e->prev_pid != (uint32_t)w && e->next_pid != (uint32_t)w)
			foreign++;
		if (e->prev_pid == (uint32_t)u || e->next_pid == (uint32_t)u)
			unwatched++;
		if (e->prev_tid == (uint32_t)tid_w && e->prev_state == 0x1) {
			sleeps++;
			EXPECT(!strcmp(e->prev_comm, "sleeper"), "prev_comm %s", e->prev_comm);
			EXPECT(e->flags & HP_SW_PREV_WATCHED, "flags %#x", e->flags);
		}
		ins += e->next_tid == (uint32_t)tid_w;
	}
	printf("%zu records; sleeper %d: %u sleeps (S), %u switch-ins\n", log_.n, tid_w, sleeps, ins);
	EXPECT(sleeps == N_SLEEPS, "expected exactly %d switch-outs in S, got %u", N_SLEEPS, sleeps);
	EXPECT(ins >= N_SLEEPS, "expected at least %d switch-ins, got %u", N_SLEEPS, ins);
	EXPECT(foreign == 0, "%u switch records involve no watched process", foreign);
	EXPECT(unwatched == 0, "%u switch records of the unwatched twin", unwatched);
	EXPECT(spawn == 1, "the new thread's fork record (got %u)", spawn);
	EXPECT(ordered, "timestamps out of the test window or not monotonic per CPU");
	capture_free(c);
	return failures ? 1 : 0;
}

/* A process that is not watched renames a thread acl_thread, then sleeps. */
static int test_rename(void)
{
	struct capture *c = start_capture(false);
	char *globs[] = { "acl_*" };
	int gofd[2];
	unsigned watch = 0, comm_evt = 0, after = 0;
	pid_t pid;
	int r;

	if (pipe(gofd) < 0)
		abort();
	pid = fork();
	if (pid == 0) {
		struct timespec ts = { 0, 2 * 1000 * 1000 };

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		prctl(PR_SET_NAME, "plain");
		nanosleep(&ts, NULL); /* not watched yet: not recorded */
		wait_go(gofd[0]);
		prctl(PR_SET_NAME, "acl_thread");
		for (int i = 0; i < 10; i++)
			nanosleep(&ts, NULL);
		prctl(PR_SET_NAME, "renamed");
		nanosleep(&ts, NULL);
		_exit(0);
	}
	r = capture_set_globs(c, globs, 1);
	EXPECT(r == 0, "set_globs: %s", strerror(-r));
	go(gofd[1]);
	waitpid(pid, NULL, 0);
	drain(c);
	for_each_record(h)
	{
		if (h->type == HP_EV_WATCH) {
			const struct hp_comm *e = (const void *)h;

			watch += e->pid == (uint32_t)pid && !strcmp(e->comm, "acl_thread") && e->glob == 0;
		} else if (h->type == HP_EV_COMM) {
			const struct hp_comm *e = (const void *)h;

			comm_evt += e->pid == (uint32_t)pid && !strcmp(e->comm, "renamed");
		} else if (h->type == HP_EV_SWITCH) {
			const struct hp_switch *e = (const void *)h;

			after += e->prev_pid == (uint32_t)pid && e->prev_state == 1;
		}
	}
	printf("watch events %u, rename events %u, sleeps recorded %u\n", watch, comm_evt, after);
	EXPECT(watch == 1, "one HP_EV_WATCH for the rename to acl_thread, got %u", watch);
	EXPECT(comm_evt == 1, "one HP_EV_COMM for the later rename, got %u", comm_evt);
	EXPECT(after == 11, "the 11 sleeps after the rename, got %u", after);
	capture_free(c);
	return failures ? 1 : 0;
}

/* A watched process forks; the child's sleeps are recorded. */
static int test_fork(void)
{
	struct capture *c = start_capture(false);
	unsigned forks = 0, child_sleeps = 0;
	int gofd[2], cfd[2];
	pid_t pid, child = 0;
	int r;

	if (pipe(gofd) < 0 || pipe(cfd) < 0)
		abort();
	pid = fork();
	if (pid == 0) {
		pid_t k;

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		wait_go(gofd[0]);
		k = fork();
		if (k == 0) {
			struct timespec ts = { 0, 2 * 1000 * 1000 };

			for (int i = 0; i < 5; i++)
				nanosleep(&ts, NULL);
			_exit(0);
		}
		if (write(cfd[1], &k, sizeof(k)) != sizeof(k))
			_exit(1);
		waitpid(k, NULL, 0);
		_exit(0);
	}
	r = capture_watch(c, pid, HP_WATCH_PID, 0);
	EXPECT(r == 0, "watch: %s", strerror(-r));
	go(gofd[1]);
	EXPECT(read(cfd[0], &child, sizeof(child)) == sizeof(child), "child pid");
	waitpid(pid, NULL, 0);
	drain(c);
	for_each_record(h)
	{
		if (h->type == HP_EV_FORK) {
			const struct hp_fork *e = (const void *)h;

			forks += e->parent_pid == (uint32_t)pid && e->child_pid == (uint32_t)child;
		} else if (h->type == HP_EV_SWITCH) {
			const struct hp_switch *e = (const void *)h;

			child_sleeps += e->prev_pid == (uint32_t)child && e->prev_state == 1 &&
					(e->flags & HP_SW_PREV_WATCHED);
		}
	}
	printf("fork records %u, child sleeps %u\n", forks, child_sleeps);
	EXPECT(forks == 1, "one fork record parent %d child %d, got %u", pid, child, forks);
	EXPECT(child_sleeps >= 5, "the child's 5 sleeps, got %u", child_sleeps);
	capture_free(c);
	return failures ? 1 : 0;
}

/*
 * The stall workload, watched by thread name. Ground truth comes from the workload's own
 * clock: the gaps acl_thread saw in its spin loop, and the hog's burst windows.
 */
#define MAX_TRUTH 4096
static uint64_t bursts_[MAX_TRUTH][2], gaps_[MAX_TRUTH][2];

struct preemption {
	uint64_t out, in;
	uint32_t by_pid;
	bool by_hog_named; /* hog, SCHED_FIFO, prio 49 */
};

static int test_preempt(const char *stall)
{
	struct capture *c = start_capture(false);
	char *globs[] = { "acl_thread" };
	int trainer = 0, acl = 0, hog = 0, cpu = 0, nb = 0, ng = 0, status;
	static struct preemption pre[65536];
	size_t np = 0, captured = 0, gaps_in_bursts = 0, hog_named = 0;
	unsigned long long a, b;
	bool waiting = false;
	char line[256];
	FILE *out;
	int r;

	r = capture_set_globs(c, globs, 1);
	EXPECT(r == 0, "set_globs: %s", strerror(-r));
	snprintf(line, sizeof(line), "%s --duration 3 --period-ms 200 --burst-ms 10 --cpu 1", stall);
	out = popen(line, "r");
	if (!out)
		abort();
	while (fgets(line, sizeof(line), out)) {
		sscanf(line, "stall: trainer=%d acl_thread=%d hog=%d cpu=%d", &trainer, &acl, &hog, &cpu);
		if (sscanf(line, "burst %llu %llu", &a, &b) == 2 && nb < MAX_TRUTH) {
			bursts_[nb][0] = a;
			bursts_[nb++][1] = b;
		}
		if (sscanf(line, "gap %llu %llu", &a, &b) == 2 && ng < MAX_TRUTH) {
			gaps_[ng][0] = a;
			gaps_[ng++][1] = b;
		}
	}
	status = pclose(out);
	if (WIFEXITED(status) && WEXITSTATUS(status) == 77) {
		printf("SKIP: the stall workload could not get SCHED_FIFO\n");
		exit(77);
	}
	EXPECT(WIFEXITED(status) && WEXITSTATUS(status) == 0, "stall exited with %#x", status);
	drain(c);

	/* acl_thread's preemptions as captured: switched out runnable, until it runs again */
	for_each_record(h)
	{
		if (h->type != HP_EV_SWITCH)
			continue;
		const struct hp_switch *e = (const void *)h;

		if (waiting && e->next_tid == (uint32_t)acl) {
			pre[np++].in = h->ts;
			waiting = false;
		}
		if (e->prev_tid == (uint32_t)acl && HP_STATE_RUNNABLE(e->prev_state) && np < ARRAY_SIZE(pre)) {
			pre[np] = (struct preemption){
				.out = h->ts,
				.by_pid = e->next_pid,
				.by_hog_named = e->next_pid == (uint32_t)hog && !strcmp(e->next_comm, "hog") &&
						e->next_policy == 1 /* SCHED_FIFO */ && e->next_prio == 99 - 50,
			};
			waiting = true;
		}
	}
	/* every gap the thread saw must hold a captured preemption; in a burst, the hog's */
	for (int g = 0; g < ng; g++) {
		bool found = false, hog_found = false, in_burst = false;

		/*
		 * The hog took the CPU from acl_thread itself when the gap began as the burst
		 * did: acl_thread reads its clock every ~10 us, the hog right after it wakes.
		 * A gap that began earlier was some other task's (a loaded machine).
		 */
		for (int k = 0; k < nb; k++)
			in_burst |= gaps_[g][0] + 200000 >= bursts_[k][0] && gaps_[g][0] <= bursts_[k][1];
		for (size_t i = 0; i < np; i++) {
			if (pre[i].out < gaps_[g][0] || pre[i].in > gaps_[g][1])
				continue;
			found = true;
			hog_found |= pre[i].by_hog_named;
		}
		captured += found;
		gaps_in_bursts += in_burst;
		hog_named += in_burst && hog_found;
	}
	printf("trainer %d acl_thread %d hog %d: %d bursts; acl_thread saw %d gaps >= 5 ms, %zu opened by a burst; "
	       "captured %zu preemptions, %zu gaps matched, %zu with the hog named right\n",
	       trainer, acl, hog, nb, ng, gaps_in_bursts, np, captured, hog_named);
	EXPECT(nb > 5, "the workload ran %d bursts", nb);
	EXPECT(gaps_in_bursts > 5, "acl_thread saw %zu gaps during bursts", gaps_in_bursts);
	EXPECT(captured * 100 >= (size_t)ng * 95, "captured %zu of %d gaps (< 95%%)", captured, ng);
	EXPECT(hog_named * 100 >= gaps_in_bursts * 95, "the hog named in %zu of %zu burst gaps (< 95%%)", hog_named,
	       gaps_in_bursts);
	capture_free(c);
	return failures ? 1 : 0;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: test-capture sleep|rawtp|rename|fork|preempt [STALL]\n");
		return 2;
	}
	if (!strcmp(argv[1], "sleep"))
		return test_sleep(false);
	if (!strcmp(argv[1], "rawtp"))
		return test_sleep(true);
	if (!strcmp(argv[1], "rename"))
		return test_rename();
	if (!strcmp(argv[1], "fork"))
		return test_fork();
	if (!strcmp(argv[1], "preempt") && argc > 2)
		return test_preempt(argv[2]);
	fprintf(stderr, "unknown case %s\n", argv[1]);
	return 2;
}
