// SPDX-License-Identifier: GPL-2.0-only
/*
 * pingpong: thread pairs that hand a token back and forth through futexes, at a chosen
 * rate, to drive the scheduler (and hostprofd's capture) at a known switch rate.
 *
 *   pingpong [--pairs N] [--rate R] [--duration S] [--name NAME]
 *
 * Pair i is pinned to CPU i % ncpus, both threads on the same CPU, so each round trip
 * is two context switches on that CPU and two wakeups. --rate is the round trips per
 * second of each pair; 0 runs them flat out. A paced pair does its share of round trips
 * every millisecond, then sleeps to the next millisecond (clock_nanosleep, absolute).
 * Threads are named NAME-a<i> / NAME-b<i> (default "hpb-pp"), so hostprofd can watch
 * them with --watch-thread 'NAME*'.
 *
 * At the end it prints one line, from its own clocks and getrusage(RUSAGE_SELF):
 *   pingpong: pairs=N roundtrips=N elapsed_s=S nvcsw=N nivcsw=N switches_per_s=R
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

struct pair {
	_Atomic uint32_t turn; /* 0: a's turn, 1: b's turn, 2: stop */
	uint64_t roundtrips;
	int cpu;
	int index;
	pthread_t a, b;
};

static int opt_pairs = 2;
static double opt_rate;
static double opt_duration_s = 3.0;
static const char *opt_name = "hpb-pp";
static _Atomic int stop;

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

static void futex_wake(_Atomic uint32_t *addr)
{
	syscall(SYS_futex, addr, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

/* Hand the turn to `to` and wait until it comes back to `me` (or stop). */
static int hand_over(struct pair *p, uint32_t me, uint32_t to)
{
	uint32_t t;

	atomic_store(&p->turn, to);
	futex_wake(&p->turn);
	while ((t = atomic_load(&p->turn)) != me) {
		if (t == 2)
			return -1;
		futex_wait(&p->turn, t);
	}
	return 0;
}

static void setup_thread(struct pair *p, char side)
{
	char name[16];
	cpu_set_t set;

	snprintf(name, sizeof(name), "%.10s-%c%d", opt_name, side, p->index);
	pthread_setname_np(pthread_self(), name);
	CPU_ZERO(&set);
	CPU_SET(p->cpu, &set);
	pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

static void *run_b(void *arg)
{
	struct pair *p = arg;

	setup_thread(p, 'b');
	while (atomic_load(&p->turn) != 1) {
		if (atomic_load(&p->turn) == 2)
			return NULL;
		futex_wait(&p->turn, 0);
	}
	while (hand_over(p, 1, 0) == 0)
		;
	return NULL;
}

static void *run_a(void *arg)
{
	struct pair *p = arg;
	struct timespec next;
	double per_ms = opt_rate / 1000.0, owed = 0;

	setup_thread(p, 'a');
	clock_gettime(CLOCK_MONOTONIC, &next);
	while (!atomic_load(&stop)) {
		if (opt_rate <= 0) {
			if (hand_over(p, 0, 1))
				break;
			p->roundtrips++;
			continue;
		}
		owed += per_ms;
		while (owed >= 1 && !atomic_load(&stop)) {
			if (hand_over(p, 0, 1))
				break;
			p->roundtrips++;
			owed -= 1;
		}
		next.tv_nsec += 1000000;
		if (next.tv_nsec >= 1000000000) {
			next.tv_nsec -= 1000000000;
			next.tv_sec++;
		}
		clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL);
	}
	atomic_store(&p->turn, 2);
	futex_wake(&p->turn);
	return NULL;
}

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: pingpong [--pairs N] [--rate ROUNDTRIPS_PER_S_PER_PAIR] [--duration S] [--name NAME]\n");
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "pairs", required_argument, NULL, 'p' },    { "rate", required_argument, NULL, 'r' },
		{ "duration", required_argument, NULL, 'd' }, { "name", required_argument, NULL, 'n' },
		{ "help", no_argument, NULL, 'h' },	      {},
	};
	long ncpus = sysconf(_SC_NPROCESSORS_ONLN);
	struct timespec dur;
	struct rusage ru;
	struct pair *pairs;
	uint64_t t0, t1, total = 0;
	int opt;

	while ((opt = getopt_long(argc, argv, "p:r:d:n:h", opts, NULL)) != -1) {
		switch (opt) {
		case 'p':
			opt_pairs = atoi(optarg);
			break;
		case 'r':
			opt_rate = atof(optarg);
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
	if (opt_pairs < 1 || opt_pairs > 256 || opt_duration_s <= 0 || opt_rate < 0) {
		usage(stderr);
		return 2;
	}
	if (ncpus < 1)
		ncpus = 1;
	pairs = calloc(opt_pairs, sizeof(*pairs));
	if (!pairs)
		return 1;
	t0 = now_ns();
	for (int i = 0; i < opt_pairs; i++) {
		pairs[i].index = i;
		pairs[i].cpu = i % ncpus;
		if (pthread_create(&pairs[i].b, NULL, run_b, &pairs[i]) ||
		    pthread_create(&pairs[i].a, NULL, run_a, &pairs[i])) {
			fprintf(stderr, "pingpong: cannot create threads: %s\n", strerror(errno));
			return 1;
		}
	}
	dur.tv_sec = (time_t)opt_duration_s;
	dur.tv_nsec = (long)((opt_duration_s - dur.tv_sec) * 1e9);
	while (nanosleep(&dur, &dur) < 0 && errno == EINTR)
		;
	atomic_store(&stop, 1);
	for (int i = 0; i < opt_pairs; i++) {
		pthread_join(pairs[i].a, NULL);
		pthread_join(pairs[i].b, NULL);
		total += pairs[i].roundtrips;
	}
	t1 = now_ns();
	getrusage(RUSAGE_SELF, &ru);
	printf("pingpong: pairs=%d roundtrips=%llu elapsed_s=%.6f nvcsw=%ld nivcsw=%ld switches_per_s=%.0f\n",
	       opt_pairs, (unsigned long long)total, (t1 - t0) / 1e9, ru.ru_nvcsw, ru.ru_nivcsw,
	       (ru.ru_nvcsw + ru.ru_nivcsw) / ((t1 - t0) / 1e9));
	free(pairs);
	return 0;
}
