// SPDX-License-Identifier: GPL-2.0-only
/*
 * trainload: a training-like host load, for measuring what hostprofd costs at a
 * realistic switch rate rather than the worst case.
 *
 *   trainload [--workers N] [--target-cs R] [--duration S] [--name NAME]
 *
 * One dispatcher thread (named NAME, default "hpb-dispatch") runs a step loop: it posts
 * a work item to each of N workers (default 7, named hpb-worker<i>), waits on a futex
 * until all are done, reads a little from /dev/zero, and sleeps to the next step
 * (clock_nanosleep, absolute). A worker waits for its item on a futex, spins ~20 us,
 * reads 4 KiB from /dev/zero twice and writes it to /dev/null, and reports back. Every
 * 64th step one worker also sleeps 1 ms (a slow syscall). So there are short sleeps,
 * futex waits, small reads and writes, and the odd slow call, on 1 + N threads.
 *
 * The step period adapts once a second so that the process makes about --target-cs
 * context switches per second (getrusage voluntary + involuntary; default 20000).
 * At the end it prints, from getrusage(RUSAGE_SELF) and its own counters:
 *   trainload: threads=N steps=N elapsed_s=S nvcsw=N nivcsw=N switches_per_s=R syscalls_per_s=R period_us=P
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <linux/futex.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define MAX_WORKERS 64

struct worker {
	_Atomic uint32_t seq; /* step number posted to this worker */
	int index;
	pthread_t thread;
	char pad[64];
};

static int opt_workers = 7;
static double opt_target_cs = 20000;
static double opt_duration_s = 30;
static const char *opt_name = "hpb-dispatch";

static struct worker workers[MAX_WORKERS];
static _Atomic uint32_t pending; /* workers still busy with this step */
static _Atomic int stop;
static _Atomic uint64_t syscalls;
static int zero_fd = -1, null_fd = -1;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static void futex_wait(_Atomic uint32_t *addr, uint32_t val)
{
	syscall(SYS_futex, addr, FUTEX_WAIT_PRIVATE, val, NULL, NULL, 0);
}

static void futex_wake(_Atomic uint32_t *addr, int n)
{
	syscall(SYS_futex, addr, FUTEX_WAKE_PRIVATE, n, NULL, NULL, 0);
}

static void spin_us(unsigned us)
{
	uint64_t end = now_ns() + us * 1000ull;

	while (now_ns() < end)
		;
}

static void *run_worker(void *arg)
{
	struct worker *w = arg;
	uint32_t seen = 0, s;
	char name[16], buf[4096];

	snprintf(name, sizeof(name), "hpb-worker%d", w->index);
	pthread_setname_np(pthread_self(), name);
	for (;;) {
		while ((s = atomic_load(&w->seq)) == seen) {
			futex_wait(&w->seq, seen);
			atomic_fetch_add(&syscalls, 1);
		}
		if (atomic_load(&stop))
			break;
		seen = s;
		spin_us(20);
		if (read(zero_fd, buf, sizeof(buf)) < 0 || read(zero_fd, buf, sizeof(buf)) < 0 ||
		    write(null_fd, buf, sizeof(buf)) < 0)
			break;
		atomic_fetch_add(&syscalls, 3);
		if (s % 64 == (uint32_t)w->index) {
			struct timespec ms = { 0, 1000000 };

			nanosleep(&ms, NULL);
			atomic_fetch_add(&syscalls, 1);
		}
		if (atomic_fetch_sub(&pending, 1) == 1) {
			futex_wake(&pending, 1);
			atomic_fetch_add(&syscalls, 1);
		}
	}
	return NULL;
}

static long switches(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_nvcsw + ru.ru_nivcsw;
}

static void usage(FILE *f)
{
	fprintf(f, "Usage: trainload [--workers N] [--target-cs R] [--duration S] [--name NAME]\n");
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "workers", required_argument, NULL, 'w' },  { "target-cs", required_argument, NULL, 't' },
		{ "duration", required_argument, NULL, 'd' }, { "name", required_argument, NULL, 'n' },
		{ "help", no_argument, NULL, 'h' },	      {},
	};
	uint64_t t0, t_adj, period_ns = 400000, steps = 0;
	long cs_adj, cs0;
	struct timespec next;
	struct rusage ru;
	char buf[512];
	int opt;

	while ((opt = getopt_long(argc, argv, "w:t:d:n:h", opts, NULL)) != -1) {
		switch (opt) {
		case 'w':
			opt_workers = atoi(optarg);
			break;
		case 't':
			opt_target_cs = atof(optarg);
			break;
		case 'd':
			opt_duration_s = atof(optarg);
			break;
		case 'n':
			opt_name = optarg;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (opt_workers < 1 || opt_workers > MAX_WORKERS || opt_target_cs <= 0 || opt_duration_s <= 0) {
		usage(stderr);
		return 2;
	}
	zero_fd = open("/dev/zero", O_RDONLY | O_CLOEXEC);
	null_fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
	if (zero_fd < 0 || null_fd < 0) {
		fprintf(stderr, "trainload: cannot open /dev/zero or /dev/null: %s\n", strerror(errno));
		return 1;
	}
	pthread_setname_np(pthread_self(), opt_name);
	for (int i = 0; i < opt_workers; i++) {
		workers[i].index = i;
		if (pthread_create(&workers[i].thread, NULL, run_worker, &workers[i])) {
			fprintf(stderr, "trainload: cannot create threads\n");
			return 1;
		}
	}
	t0 = t_adj = now_ns();
	cs0 = cs_adj = switches();
	clock_gettime(CLOCK_MONOTONIC, &next);
	while (now_ns() - t0 < (uint64_t)(opt_duration_s * 1e9)) {
		uint32_t p;

		steps++;
		atomic_store(&pending, opt_workers);
		for (int i = 0; i < opt_workers; i++) {
			atomic_store(&workers[i].seq, (uint32_t)steps);
			futex_wake(&workers[i].seq, 1);
		}
		while ((p = atomic_load(&pending)) != 0) {
			futex_wait(&pending, p);
			atomic_fetch_add(&syscalls, 1);
		}
		if (read(zero_fd, buf, sizeof(buf)) < 0)
			break;
		atomic_fetch_add(&syscalls, opt_workers + 2);
		next.tv_nsec += period_ns;
		while (next.tv_nsec >= 1000000000) {
			next.tv_nsec -= 1000000000;
			next.tv_sec++;
		}
		clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL);
		/* once a second, steer the period toward the target switch rate */
		if (now_ns() - t_adj >= 1000000000ull) {
			uint64_t t = now_ns();
			long cs = switches();
			double rate = (cs - cs_adj) / ((t - t_adj) / 1e9), f = rate / opt_target_cs;

			if (f > 0) {
				if (f > 2)
					f = 2;
				if (f < 0.5)
					f = 0.5;
				period_ns = (uint64_t)(period_ns * f);
				if (period_ns < 20000)
					period_ns = 20000;
				if (period_ns > 100000000)
					period_ns = 100000000;
			}
			t_adj = t;
			cs_adj = cs;
			clock_gettime(CLOCK_MONOTONIC, &next); /* no catch-up burst after a change */
		}
	}
	atomic_store(&stop, 1);
	for (int i = 0; i < opt_workers; i++) {
		atomic_fetch_add(&workers[i].seq, 1);
		futex_wake(&workers[i].seq, 1);
	}
	for (int i = 0; i < opt_workers; i++)
		pthread_join(workers[i].thread, NULL);
	{
		double el = (now_ns() - t0) / 1e9;

		getrusage(RUSAGE_SELF, &ru);
		printf("trainload: threads=%d steps=%llu elapsed_s=%.3f nvcsw=%ld nivcsw=%ld switches_per_s=%.0f "
		       "syscalls_per_s=%.0f period_us=%.0f\n",
		       opt_workers + 1, (unsigned long long)steps, el, ru.ru_nvcsw, ru.ru_nivcsw,
		       (ru.ru_nvcsw + ru.ru_nivcsw - cs0) / el, atomic_load(&syscalls) / el, period_ns / 1e3);
	}
	return 0;
}
