// SPDX-License-Identifier: GPL-2.0-only
/*
 * stall: a stand-in for a training process whose dispatch thread gets preempted.
 *
 * The process ("trainer") runs a thread named acl_thread, pinned to one CPU, that spins
 * in short work items, as a dispatch loop does. A neighbour process ("hog"), pinned to
 * the same CPU with SCHED_FIFO, wakes every --period-ms and spins for --burst-ms, so
 * each burst preempts acl_thread once, for about --burst-ms.
 *
 * It prints ground truth, from its own clocks (CLOCK_BOOTTIME, the clock of the traces):
 *   stall: trainer=PID acl_thread=TID hog=PID cpu=N     when it starts
 *   burst START END LAST                                each burst of the hog; LAST: acl_thread's
 *                                                       last clock read it published as the hog
 *                                                       woke (0: it did not spin yet): the gap
 *                                                       the burst opened or found began there
 *                                                       (or at the read after, if it lost the
 *                                                       CPU before publishing that one), however
 *                                                       long the hog's wakeup took (a slow VM:
 *                                                       0.5 ms)
 *   gap START END                                       each time acl_thread lost its CPU for
 *                                                       at least half a burst, as it saw it
 *   acl_thread switches VOLUNTARY INVOLUNTARY           the kernel's count of its switch-outs
 *                                                       (getrusage), when it ends
 *   acl_thread spun START END                           when its loop ran
 *   stall: bursts=N gaps=N                              at the end
 * --mode changes what acl_thread does, for the other trigger kinds:
 *   spin     (default) spins: a burst preempts it (preempt)
 *   syscall  spins in getppid() calls: a burst finds it in the kernel about as often as the
 *            kernel's share of the loop, and preempts it there (R+) on a preempt=full kernel,
 *            at its return to user mode (R) on a voluntary or none one
 *   sleep    sleeps 1 ms in a loop: a burst delays its wakeups (runq)
 *   block    blocks --block-ms in read() on a pipe each period (offcpu, syscall)
 *   migrate  moves between CPU 0 and --cpu every 20 ms (migrate); no hog
 *
 * Exit 0; 77 when SCHED_FIFO is refused (a kernel with RT group scheduling refuses it
 * inside a cpu cgroup without an RT budget), with the reason on stderr.
 */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int opt_cpu = 1;
static int opt_period_ms = 700;
static int opt_burst_ms = 25;
static double opt_duration_s = 3.0;
static int opt_prio = 50;
static int opt_start_delay_ms = 0;
static int opt_block_ms = 50;
static const char *opt_mode = "spin";
static atomic_bool stop;
static atomic_int acl_tid;

static struct switches {
	long vol, invol;
} acl_switches = { -1, -1 };
static uint64_t spun[2];
/* acl_thread's last clock read, in memory shared with the hog (a process of its own) */
static _Atomic uint64_t *acl_last;

#define MAX_GAPS 4096
static uint64_t gaps[MAX_GAPS][2];
static int n_gaps;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_BOOTTIME, &ts);
	return ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static int pin(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return sched_setaffinity(0, sizeof(set), &set) < 0 ? -errno : 0;
}

static void spin_until(uint64_t deadline)
{
	while (now_ns() < deadline)
		;
}

static void *acl_thread_main(void *arg)
{
	uint64_t min_gap = opt_burst_ms * 1000000ull / 2, last;
	bool in_kernel = !strcmp(opt_mode, "syscall");
	volatile uint64_t sink = 0;
	struct rusage ru;

	prctl(PR_SET_NAME, "acl_thread");
	if (pin(opt_cpu) < 0)
		fprintf(stderr, "stall: cannot pin acl_thread to CPU %d: %s\n", opt_cpu, strerror(errno));
	atomic_store(&acl_tid, (int)syscall(SYS_gettid));
	if (!strcmp(opt_mode, "sleep")) {
		struct timespec ts = { 0, 1000000 };

		while (!atomic_load(&stop))
			nanosleep(&ts, NULL);
		return NULL;
	}
	if (!strcmp(opt_mode, "block")) {
		int fd[2];
		char b;

		if (pipe(fd) < 0)
			return NULL;
		while (!atomic_load(&stop)) {
			/* a child process ("waker") writes after block-ms */
			struct timespec ts = { opt_block_ms / 1000, (opt_block_ms % 1000) * 1000000L };
			pid_t w = fork();

			if (w == 0) {
				prctl(PR_SET_NAME, "waker");
				nanosleep(&ts, NULL);
				if (write(fd[1], "x", 1) != 1)
					_exit(1);
				_exit(0);
			}
			if (read(fd[0], &b, 1) != 1)
				break;
			waitpid(w, NULL, 0);
			spin_until(now_ns() + 100 * 1000000ull);
		}
		return NULL;
	}
	if (!strcmp(opt_mode, "migrate")) {
		int target = 0;

		while (!atomic_load(&stop)) {
			struct timespec ts = { 0, 20 * 1000000L };

			pin(target);
			target = target ? 0 : opt_cpu;
			spin_until(now_ns() + 1000000ull);
			nanosleep(&ts, NULL);
		}
		return NULL;
	}
	/* dispatch loop: work items of ~10 us, never sleeping, so a preemption shows as R (or R+,
	 * in --mode syscall on a preemptible kernel, where the burst found it in the kernel) */
	spun[0] = last = now_ns();
	while (!atomic_load(&stop)) {
		uint64_t now;

		if (in_kernel)
			for (int i = 0; i < 20; i++)
				sink += syscall(SYS_getppid);
		else
			for (int i = 0; i < 2000; i++)
				sink += i;
		now = now_ns();
		atomic_store_explicit(acl_last, now, memory_order_relaxed);
		if (now - last >= min_gap && n_gaps < MAX_GAPS) {
			gaps[n_gaps][0] = last;
			gaps[n_gaps][1] = now;
			n_gaps++;
		}
		last = now;
	}
	spun[1] = last;
	if (getrusage(RUSAGE_THREAD, &ru) == 0)
		acl_switches = (struct switches){ ru.ru_nvcsw, ru.ru_nivcsw };
	return NULL;
}

/* The neighbour: SCHED_FIFO on the same CPU, a burst every period. */
static int run_hog(int ready_fd, FILE *bursts_out)
{
	struct sched_param sp = { .sched_priority = opt_prio };
	uint64_t end = now_ns() + (uint64_t)(opt_duration_s * 1e9);
	char status = 0;
	int bursts = 0;

	prctl(PR_SET_NAME, "hog");
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (pin(opt_cpu) < 0)
		status = 2;
	else if (sched_setscheduler(0, SCHED_FIFO, &sp) < 0)
		status = 1;
	if (write(ready_fd, &status, 1) != 1 || status)
		_exit(status == 1 ? 77 : 1);
	close(ready_fd);
	while (now_ns() + (uint64_t)opt_period_ms * 1000000ull < end) {
		struct timespec ts = { opt_period_ms / 1000, (opt_period_ms % 1000) * 1000000L };

		uint64_t start, last;

		nanosleep(&ts, NULL);
		start = now_ns();
		last = atomic_load_explicit(acl_last, memory_order_relaxed);
		spin_until(start + opt_burst_ms * 1000000ull);
		fprintf(bursts_out, "burst %llu %llu %llu\n", (unsigned long long)start, (unsigned long long)now_ns(),
			(unsigned long long)last);
		bursts++;
	}
	return bursts;
}

static void usage(void)
{
	fprintf(stderr, "usage: stall [--cpu N] [--period-ms N] [--burst-ms N] [--duration S] [--prio N]"
			" [--start-delay-ms N] [--mode spin|syscall|sleep|block|migrate] [--block-ms N]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "cpu", required_argument, NULL, 'c' },
		{ "period-ms", required_argument, NULL, 'p' },
		{ "burst-ms", required_argument, NULL, 'b' },
		{ "duration", required_argument, NULL, 'd' },
		{ "prio", required_argument, NULL, 'P' },
		{ "start-delay-ms", required_argument, NULL, 's' },
		{ "mode", required_argument, NULL, 'm' },
		{ "block-ms", required_argument, NULL, 'B' },
		{},
	};
	int pipefd[2], opt, wstatus, bursts_pipe[2];
	pthread_t thr;
	char status;
	pid_t hog;
	int bursts = 0;

	while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (opt) {
		case 'c':
			opt_cpu = atoi(optarg);
			break;
		case 'p':
			opt_period_ms = atoi(optarg);
			break;
		case 'b':
			opt_burst_ms = atoi(optarg);
			break;
		case 'd':
			opt_duration_s = atof(optarg);
			break;
		case 'P':
			opt_prio = atoi(optarg);
			break;
		case 's':
			opt_start_delay_ms = atoi(optarg);
			break;
		case 'm':
			opt_mode = optarg;
			break;
		case 'B':
			opt_block_ms = atoi(optarg);
			break;
		default:
			usage();
		}
	}
	if (opt_period_ms <= 0 || opt_burst_ms <= 0 || opt_duration_s <= 0 || opt_cpu < 0)
		usage();
	if (opt_cpu >= sysconf(_SC_NPROCESSORS_ONLN)) {
		fprintf(stderr, "stall: CPU %d is not online\n", opt_cpu);
		return 77;
	}
	prctl(PR_SET_NAME, "trainer");
	if (opt_start_delay_ms) {
		/* gives a watcher time to start before the thread gets its name */
		struct timespec ts = { opt_start_delay_ms / 1000, (opt_start_delay_ms % 1000) * 1000000L };

		nanosleep(&ts, NULL);
	}

	acl_last = mmap(NULL, sizeof(*acl_last), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (acl_last == MAP_FAILED || pipe(pipefd) < 0 || pipe(bursts_pipe) < 0)
		return 1;
	hog = fork();
	if (hog < 0)
		return 1;
	if (hog == 0) {
		close(pipefd[0]);
		close(bursts_pipe[0]);
		bursts = run_hog(pipefd[1], stdout);
		fflush(stdout);
		if (write(bursts_pipe[1], &bursts, sizeof(bursts)) != sizeof(bursts))
			_exit(1);
		_exit(0);
	}
	close(pipefd[1]);
	close(bursts_pipe[1]);
	if (read(pipefd[0], &status, 1) != 1)
		status = 3;
	if (status) {
		waitpid(hog, NULL, 0);
		if (status == 1) {
			fprintf(stderr, "stall: SCHED_FIFO refused (%s): RT group scheduling without an RT "
					"budget for this cgroup, or not root\n",
				strerror(EPERM));
			return 77;
		}
		fprintf(stderr, "stall: the neighbour could not start (%d)\n", status);
		return 1;
	}

	pthread_create(&thr, NULL, acl_thread_main, NULL);
	while (!atomic_load(&acl_tid))
		usleep(1000);
	printf("stall: trainer=%d acl_thread=%d hog=%d cpu=%d\n", getpid(), atomic_load(&acl_tid), hog, opt_cpu);
	fflush(stdout);

	if (read(bursts_pipe[0], &bursts, sizeof(bursts)) != sizeof(bursts))
		bursts = -1;
	waitpid(hog, &wstatus, 0);
	atomic_store(&stop, true);
	pthread_join(thr, NULL);
	for (int i = 0; i < n_gaps; i++)
		printf("gap %llu %llu\n", (unsigned long long)gaps[i][0], (unsigned long long)gaps[i][1]);
	if (acl_switches.vol >= 0)
		printf("acl_thread switches %ld %ld\nacl_thread spun %llu %llu\n", acl_switches.vol,
		       acl_switches.invol, (unsigned long long)spun[0], (unsigned long long)spun[1]);
	printf("stall: bursts=%d gaps=%d\n", bursts, n_gaps);
	fflush(stdout);
	return bursts < 0 ? 1 : 0;
}
