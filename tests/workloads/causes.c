// SPDX-License-Identifier: GPL-2.0-only
/*
 * causes: one planted cause of lost time for a dispatch thread, with the ground truth
 * measured by the workload itself; and background noise to run beside it. The battery
 * tests/e2e/causes.sh runs each mode, watched by hostprofd, and checks that the report's
 * first line names the planted cause.
 *
 *   causes MODE --name NAME --cpu C --other-cpu O [--duration MS] [--start-delay MS]
 *          [--seed N] [--helper NAME] [mode options]
 *
 * The process runs a dispatch thread named NAME pinned to CPU C, at nice -20, in a session
 * of its own whose autogroup is at nice -20 too (so that the machine's other work, a build
 * or other tests, takes little of its time: a planted cause stands out on a shared
 * machine too; with autogroups, nice counts only within a session). Once everything is
 * set up it prints
 *
 *   ready pid=P tid=T
 *
 * then the dispatch thread spins (its own work: never blocked, never lost) for
 * --start-delay MS (default 600; a test watches P meanwhile), does the mode's work for
 * --duration MS (default 3000), measuring every gap of 20 us or more in its progress (its
 * CLOCK_BOOTTIME, the clock of the traces), and spins again until SIGTERM or SIGINT.
 * When the work is over the main thread prints the truth, one key=value a line, and
 * "done":
 *   mode=MODE start_ns= end_ns=      the work's window
 *   lost_ns= gaps= max_gap_ns=       the gaps in it, all of them, whatever caused them
 *   planted_ns=                      the part of the gaps the planted cause made, as the
 *                                    workload can tell (per mode, below)
 *   cause_ns=                        the planted cause's own measure (per mode, below)
 * and the mode's own keys. Helpers are other processes, forked before the dispatch
 * thread has its name (a watcher that follows forks does not follow them), but for
 * `lock`, whose helpers must share the dispatch thread's mm.
 *
 * rt --period-ms P --burst-ms B [--prio N]
 *	A SCHED_FIFO helper on C wakes every P ms and spins B ms. planted_ns: the gaps'
 *	overlap with its bursts; cause_ns: the bursts, by its clock.
 * cfs --period-ms P --burst-ms B
 *	A SCHED_OTHER helper on C, at nice -20 too, spins B ms of every P ms, sharing C with
 *	the dispatch thread. planted_ns: the gaps' overlap with its busy phases; cause_ns: the CPU time
 *	it got (its thread CPU clock).
 * syscall --period-ms P --burst-ms B
 *	The dispatch thread works P ms, writes a request into a pipe and blocks in read() on
 *	another until a helper process (on O) answers, B ms (+-25%) after the request.
 *	planted_ns: its time in those reads; cause_ns: the helper's delays, by its clock.
 * lock [--threads K]
 *	K helper threads (default 2, named after --helper) on O mmap and munmap in a loop, and
 *	the dispatch thread does the same between its own work: each call takes the mmap_lock
 *	for writing, and a holder preempted on O by the others makes the waits long.
 *	planted_ns: its time in the calls that slept (in this loop only a lock wait sleeps:
 *	getrusage's voluntary switches around each call); cause_ns: the same.
 * reclaim --mb N [--file PATH]
 *	Needs a memory cgroup with a limit under N MiB (the battery makes one). A helper
 *	process (on O) writes PATH (N MiB, made here in /var/tmp and unlinked) again and
 *	again, keeping the cgroup's page cache at the limit, and dirty; the dispatch thread
 *	maps and touches 16 MiB of anonymous memory and frees it, between its own work: each
 *	of its charges reclaims the helper's page cache, in its own context, and waits there
 *	for its writeback. planted_ns, cause_ns:
 *	its time in the touch loops (reclaim, and the faults and the zeroing themselves).
 *	enomem: the writes that found the cgroup full (a disk stall: nothing to free) and
 *	were tried again.
 * irq [--flood-cpu F]
 *	Needs a network namespace whose lo steers its receive work to C through RPS (the
 *	battery: hp_netns_exec C). Two helper threads on F (default O), --helper and
 *	--helper "-r", stream TCP to each other over 127.0.0.1: every segment and every ACK is
 *	received on C, in NET_RX, in interrupt context or in ksoftirqd/C. planted_ns: the
 *	gaps while the stream ran; cause_ns: NET_RX softirqs on C (count, /proc/softirqs),
 *	and sent (bytes).
 * migrate --period-ms P --burst-ms B
 *	A helper process (--helper, nice -20: at nice 0 a busy machine kept it from moving the
 *	thread back for hundreds of ms) moves the dispatch thread to O (sched_setaffinity) for
 *	B ms of every P ms, and back to C; a second one (--helper, "-b", nice -20) spins on O
 *	the whole time. planted_ns: the gaps while it was away from C; cause_ns: the time
 *	away; moves.
 * throttle --period-ms P --burst-ms Q --cgroup DIR --cgroup-home DIR [--cgroup-v1]
 *	DIR is a cpu cgroup made by the caller; for the work the dispatch thread moves into
 *	it (v1: its tid into DIR/tasks; v2: the process into DIR/cgroup.procs), with a CFS
 *	bandwidth of Q ms of every P ms (v1 cpu.cfs_quota_us and cpu.cfs_period_us; v2
 *	cpu.max), and back to --cgroup-home when it stops. planted_ns: the gaps; cause_ns: the
 *	cgroup's throttled time (cpu.stat throttled_time, v1, or throttled_usec).
 * noise --duration MS
 *	Not a dispatch thread: what a real node has besides the job, on C and O: a busy
 *	process on O the whole time; three processes on C (two SCHED_OTHER at nice -20, one
 *	SCHED_FIFO) that wake every 40..200 ms and spin 0.2..2 ms; and two single long ones on C,
 *	SCHED_FIFO: 8..12 ms and 16..24 ms, at random times. Names, times and lengths come
 *	from --seed; it prints what it did (noise: NAME PID ...) and stops after MS or at
 *	SIGTERM.
 *
 * Exit 0; 2 on a usage error; 1 when the work failed (said on stderr); 77 when this
 * machine cannot plant the cause (a CPU missing, SCHED_FIFO refused...), with the reason.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define GAP_NS 20000ull
#define MAX_GAPS 200000
#define MAX_IVS 100000
#define MS_NS 1000000ull

static const char *opt_mode, *opt_name = "acl_thread", *opt_helper = "helper", *opt_file;
static const char *opt_cgroup, *opt_cgroup_home;
static bool opt_cgroup_v1;
static int opt_cpu = -1, opt_other = -1, opt_flood_cpu = -1, opt_prio = 10, opt_threads = 2;
static long opt_duration_ms = 3000, opt_delay_ms = 600, opt_period_ms = 50, opt_burst_ms = 10, opt_mb = 256;
static unsigned long opt_seed = 1;

/* Shared with the helper processes (MAP_SHARED before the forks). */
struct shared {
	atomic_int phase; /* 0 before the work, 1 during, 2 after, 3 stop */
	uint64_t start_ns, end_ns;
	atomic_int n_ivs;
	uint64_t ivs[MAX_IVS][2]; /* what the planted cause did, when (by its clock) */
	atomic_ullong cause_ns;
	atomic_ullong count;
	atomic_int dispatch_tid;
	atomic_ullong enomem; /* reclaim: writes that found the cgroup full and were retried */
};

static struct shared *sh;
static uint64_t gaps[MAX_GAPS][2];
static size_t n_gaps;
static uint64_t lost_ns, max_gap_ns, planted_extra_ns;
static atomic_bool stop;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_BOOTTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void sleep_until(uint64_t t)
{
	struct timespec ts = { (time_t)(t / 1000000000ull), (long)(t % 1000000000ull) };

	while (clock_nanosleep(CLOCK_BOOTTIME, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

static void sleep_ns(uint64_t ns)
{
	sleep_until(now_ns() + ns);
}

static void spin_until(uint64_t t)
{
	while (now_ns() < t)
		;
}

static uint64_t thread_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int pin(pid_t tid, int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return sched_setaffinity(tid, sizeof(set), &set) < 0 ? -errno : 0;
}

static _Noreturn void skip(const char *why)
{
	fprintf(stderr, "causes %s: skipped: %s\n", opt_mode, why);
	exit(77);
}

static _Noreturn void die(const char *what)
{
	fprintf(stderr, "causes %s: %s: %s\n", opt_mode, what, strerror(errno));
	exit(1);
}

/* xorshift: the seed's numbers, the same on every machine */
static uint64_t rng_state;

static uint64_t rnd(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

static uint64_t rnd_between(uint64_t lo, uint64_t hi)
{
	return hi > lo ? lo + rnd() % (hi - lo + 1) : lo;
}

static void iv_add(uint64_t a, uint64_t b)
{
	int i = atomic_fetch_add(&sh->n_ivs, 1);

	if (i < MAX_IVS) {
		sh->ivs[i][0] = a;
		sh->ivs[i][1] = b;
	}
}

/* The gaps' overlap with the intervals the helpers recorded. */
static uint64_t gaps_in_ivs(void)
{
	int n = atomic_load(&sh->n_ivs);
	uint64_t sum = 0;

	n = n < MAX_IVS ? n : MAX_IVS;
	for (size_t g = 0; g < n_gaps; g++)
		for (int i = 0; i < n; i++) {
			uint64_t lo = gaps[g][0] > sh->ivs[i][0] ? gaps[g][0] : sh->ivs[i][0];
			uint64_t hi = gaps[g][1] < sh->ivs[i][1] ? gaps[g][1] : sh->ivs[i][1];

			if (hi > lo)
				sum += hi - lo;
		}
	return sum;
}

static void set_name(const char *name)
{
	prctl(PR_SET_NAME, name);
}

static bool work_on(void)
{
	return atomic_load(&sh->phase) == 1;
}

static bool helpers_stop(void)
{
	return atomic_load(&sh->phase) >= 2 || getppid() == 1;
}

/* ---- the dispatch thread's measure ---- */

static uint64_t last_ts;

static void gap_reset(void)
{
	last_ts = now_ns();
}

/* One step of progress: a gap since the last one is time lost. */
static void progress(void)
{
	uint64_t t = now_ns();

	if (t - last_ts >= GAP_NS) {
		if (n_gaps < MAX_GAPS) {
			gaps[n_gaps][0] = last_ts;
			gaps[n_gaps][1] = t;
			n_gaps++;
		}
		lost_ns += t - last_ts;
		if (t - last_ts > max_gap_ns)
			max_gap_ns = t - last_ts;
	}
	last_ts = t;
}

/* Its own work, for ns (or until the work ends), measuring. */
static void work_for(uint64_t ns)
{
	uint64_t end = now_ns() + ns;

	while (now_ns() < end && work_on())
		progress();
}

/* ---- helpers ---- */

/* Forks a helper process running fn, with policy and prio (SCHED_OTHER: prio is the nice
 * value); it exits when the work is over or its parent is gone. */
static pid_t helper(const char *name, int cpu, int policy, int prio, void (*fn)(void))
{
	pid_t pid = fork();

	if (pid < 0)
		die("fork");
	if (pid)
		return pid;
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	set_name(name);
	if (cpu >= 0 && pin(0, cpu) < 0)
		_exit(1);
	if (policy != SCHED_OTHER) {
		struct sched_param sp = { .sched_priority = prio };

		if (sched_setscheduler(0, policy, &sp) < 0)
			_exit(77);
	} else if (prio) {
		setpriority(PRIO_PROCESS, 0, prio); /* prio: the nice value */
	}
	while (atomic_load(&sh->phase) == 0 && getppid() != 1)
		sleep_ns(MS_NS);
	fn();
	_exit(0);
}

static void rt_helper(void)
{
	uint64_t next = sh->start_ns + (uint64_t)opt_period_ms * MS_NS / 2;

	while (!helpers_stop()) {
		uint64_t a, b;

		sleep_until(next);
		if (helpers_stop())
			break;
		a = now_ns();
		spin_until(a + (uint64_t)opt_burst_ms * MS_NS);
		b = now_ns();
		iv_add(a, b);
		atomic_fetch_add(&sh->cause_ns, b - a);
		next += (uint64_t)opt_period_ms * MS_NS;
	}
}

static void cfs_helper(void)
{
	uint64_t next = now_ns();

	while (!helpers_stop()) {
		uint64_t a = now_ns(), c0 = thread_cpu_ns();

		spin_until(a + (uint64_t)opt_burst_ms * MS_NS);
		iv_add(a, now_ns());
		atomic_fetch_add(&sh->cause_ns, thread_cpu_ns() - c0);
		next += (uint64_t)opt_period_ms * MS_NS;
		sleep_until(next);
	}
}

static int req_pipe[2], rep_pipe[2];

static void syscall_helper(void)
{
	char b;

	close(req_pipe[1]); /* so that the dispatcher's end closing is the end */
	close(rep_pipe[0]);
	while (read(req_pipe[0], &b, 1) == 1) {
		uint64_t a = now_ns(), d = (uint64_t)opt_burst_ms * MS_NS;

		d = d * 3 / 4 + rnd() % (d / 2 + 1);
		sleep_ns(d);
		atomic_fetch_add(&sh->cause_ns, now_ns() - a);
		if (write(rep_pipe[1], "r", 1) != 1)
			break;
	}
}

static void migrate_mover(void)
{
	uint64_t next = sh->start_ns + (uint64_t)opt_period_ms * MS_NS / 3;
	pid_t tid = atomic_load(&sh->dispatch_tid);

	while (!helpers_stop()) {
		uint64_t a, b;

		sleep_until(next);
		if (helpers_stop())
			break;
		a = now_ns();
		if (pin(tid, opt_other) < 0)
			break;
		sleep_ns((uint64_t)opt_burst_ms * MS_NS);
		b = now_ns();
		if (pin(tid, opt_cpu) < 0)
			break;
		iv_add(a, b);
		atomic_fetch_add(&sh->cause_ns, b - a);
		atomic_fetch_add(&sh->count, 1);
		next += (uint64_t)opt_period_ms * MS_NS;
	}
	pin(tid, opt_cpu);
}

static void busy_helper(void)
{
	while (!helpers_stop())
		spin_until(now_ns() + MS_NS);
}

/* Writes 1 MiB at off. A write that finds the cgroup full, with nothing it can free (a
 * stalled disk, its page cache all under writeback; the battery's cgroup does not OOM-kill,
 * hp_memcg_run) fails with ENOMEM, and is tried again a millisecond later: the retries
 * are what frees the cgroup again when writeback completes. */
static bool reclaim_write(int fd, const char *buf, off_t off)
{
	size_t done = 0;

	while (done < (1 << 20)) {
		ssize_t n = pwrite(fd, buf + done, (1 << 20) - done, off + (off_t)done);

		if (n < 0 && (errno == ENOMEM || errno == EINTR)) {
			atomic_fetch_add(&sh->enomem, 1);
			sleep_ns(MS_NS);
			continue;
		}
		if (n <= 0)
			return false;
		done += (size_t)n;
	}
	return true;
}

/* Writes the file over and over: the cgroup fills with dirty page cache, which its
 * reclaim must write back, or wait for, before it can reuse it. */
static void reclaim_helper(void)
{
	static char buf[1 << 20];
	int fd = open(opt_file, O_WRONLY | O_CLOEXEC);

	if (fd < 0)
		_exit(1);
	unlink(opt_file);
	memset(buf, 'y', sizeof(buf));
	while (!(atomic_load(&sh->phase) >= 3 || getppid() == 1)) {
		for (long i = 0; i < opt_mb && atomic_load(&sh->phase) < 3; i++)
			if (!reclaim_write(fd, buf, (off_t)i << 20))
				_exit(1);
	}
}

/* ---- lock: mappers, threads of this process ---- */

static void *mapper_main(void *arg)
{
	uint64_t x = (uintptr_t)arg * 0x9e3779b97f4a7c15ull + opt_seed;

	set_name(opt_helper);
	pin(0, opt_other);
	while (atomic_load(&sh->phase) < 2) {
		size_t len;
		char *p;

		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		len = (size_t)(16 + x % 241) << 12;

		if (!work_on()) {
			sleep_ns(MS_NS);
			continue;
		}
		p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED)
			continue;
		p[0] = 1;
		munmap(p, len);
	}
	return NULL;
}

static long nvcsw(void)
{
	struct rusage ru;

	getrusage(RUSAGE_THREAD, &ru);
	return ru.ru_nvcsw;
}

/* ---- irq: the flood ---- */

/* A TCP stream over lo, both ends on F: with lo's receive work steered to C, every
 * segment and every ACK is processed there, in NET_RX. */
static int flood_fds[2];
static atomic_ullong sent;

static long opt_flood_bytes = 1024;
static bool opt_flood_udp;
static int udp_fd;
static struct sockaddr_in udp_to;

/* UDP datagrams of opt_flood_bytes to a socket on lo that nobody reads, 64 a call. */
static void *flood_udp(void *arg)
{
	static char buf[64 << 10];
	struct mmsghdr msgs[64];
	struct iovec iov = { buf, 0 };

	(void)arg;
	iov.iov_len = (size_t)opt_flood_bytes;
	set_name(opt_helper);
	pin(0, opt_flood_cpu);
	setpriority(PRIO_PROCESS, 0, -20);
	memset(msgs, 0, sizeof(msgs));
	for (int i = 0; i < 64; i++) {
		msgs[i].msg_hdr.msg_name = &udp_to;
		msgs[i].msg_hdr.msg_namelen = sizeof(udp_to);
		msgs[i].msg_hdr.msg_iov = &iov;
		msgs[i].msg_hdr.msg_iovlen = 1;
	}
	while (atomic_load(&sh->phase) < 2) {
		int n;

		if (!work_on()) {
			sleep_ns(MS_NS);
			continue;
		}
		n = sendmmsg(udp_fd, msgs, 64, 0);
		if (n > 0)
			atomic_fetch_add(&sent, (unsigned long long)n);
	}
	return NULL;
}

static void *flood_send(void *arg)
{
	static char buf[64 << 10];
	int one = 1;

	(void)arg;
	set_name(opt_helper);
	pin(0, opt_flood_cpu);
	setpriority(PRIO_PROCESS, 0, -20);
	setsockopt(flood_fds[0], IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	while (atomic_load(&sh->phase) < 2) {
		ssize_t n;

		if (!work_on()) {
			sleep_ns(MS_NS);
			continue;
		}
		n = send(flood_fds[0], buf, (size_t)opt_flood_bytes, MSG_DONTWAIT);
		if (n > 0)
			atomic_fetch_add(&sent, (unsigned long long)n);
		else if (n < 0 && errno == EAGAIN)
			sched_yield();
	}
	shutdown(flood_fds[0], SHUT_WR);
	return NULL;
}

static void *flood_recv(void *arg)
{
	static char buf[256 << 10];
	char name[16];

	(void)arg;
	snprintf(name, sizeof(name), "%.12s-r", opt_helper);
	set_name(name);
	pin(0, opt_flood_cpu);
	setpriority(PRIO_PROCESS, 0, -20);
	while (recv(flood_fds[1], buf, sizeof(buf), 0) > 0)
		;
	return NULL;
}

/* The two ends of a TCP connection on 127.0.0.1. */
static int tcp_pair(int fds[2])
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t al = sizeof(a);
	int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (l < 0 || bind(l, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(l, 1) < 0 ||
	    getsockname(l, (struct sockaddr *)&a, &al) < 0)
		return -1;
	fds[0] = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fds[0] < 0 || connect(fds[0], (struct sockaddr *)&a, sizeof(a)) < 0)
		return -1;
	fds[1] = accept4(l, NULL, NULL, SOCK_CLOEXEC);
	close(l);
	return fds[1] < 0 ? -1 : 0;
}

/* NET_RX softirqs of CPU cpu so far, from /proc/softirqs. */
static uint64_t netrx_count(int cpu)
{
	FILE *f = fopen("/proc/softirqs", "re");
	char line[4096];
	uint64_t v = 0;

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		char *p = strstr(line, "NET_RX:");

		if (!p)
			continue;
		p += 7;
		for (int c = 0; c <= cpu; c++)
			v = strtoull(p, &p, 10);
	}
	fclose(f);
	return v;
}

/* ---- throttle: the cgroup ---- */

static int write_file(const char *dir, const char *name, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int write_file(const char *dir, const char *name, const char *fmt, ...)
{
	char path[4096];
	va_list ap;
	FILE *f;
	int r;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "we");
	if (!f)
		return -errno;
	va_start(ap, fmt);
	vfprintf(f, fmt, ap);
	va_end(ap);
	r = fclose(f) == 0 ? 0 : -errno;
	return r;
}

/* cpu.stat's throttled time, ns */
static uint64_t throttled_ns(void)
{
	char path[4096], key[64];
	unsigned long long v, res = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/cpu.stat", opt_cgroup);
	f = fopen(path, "re");
	if (!f)
		return 0;
	while (fscanf(f, "%63s %llu", key, &v) == 2) {
		if (!strcmp(key, "throttled_time")) /* v1, ns */
			res = v;
		else if (!strcmp(key, "throttled_usec"))
			res = v * 1000;
	}
	fclose(f);
	return res;
}

static void cgroup_enter(pid_t tid, const char *dir)
{
	int r = opt_cgroup_v1 ? write_file(dir, "tasks", "%d\n", tid) :
				write_file(dir, "cgroup.procs", "%d\n", getpid());

	if (r < 0) {
		errno = -r;
		die(dir);
	}
}

/* ---- the dispatch thread ---- */

static void *dispatch_main(void *arg)
{
	pid_t tid = (pid_t)syscall(SYS_gettid);
	uint64_t t_end, thr0 = 0;
	char *region = NULL;
	size_t region_len = 16u << 20;
	uint64_t netrx0 = 0;

	(void)arg;
	if (pin(0, opt_cpu) < 0)
		skip("cannot pin to the dispatch CPU");
	if (setpriority(PRIO_PROCESS, 0, -20) < 0)
		skip("cannot take nice -20 (not root?)");
	set_name(opt_name);
	atomic_store(&sh->dispatch_tid, tid);
	/* spin until the work starts */
	while (atomic_load(&sh->phase) == 0)
		spin_until(now_ns() + 100000);
	t_end = sh->end_ns;
	if (!strcmp(opt_mode, "throttle")) {
		thr0 = throttled_ns();
		cgroup_enter(tid, opt_cgroup);
	}
	if (!strcmp(opt_mode, "irq"))
		netrx0 = netrx_count(opt_cpu);
	gap_reset();
	while (now_ns() < t_end) {
		if (!strcmp(opt_mode, "syscall")) {
			char b;
			uint64_t a;

			work_for((uint64_t)opt_period_ms * MS_NS);
			if (now_ns() >= t_end)
				break;
			a = now_ns();
			if (write(req_pipe[1], "q", 1) != 1 || read(rep_pipe[0], &b, 1) != 1)
				die("pipe");
			planted_extra_ns += now_ns() - a;
			progress();
		} else if (!strcmp(opt_mode, "lock")) {
			for (int k = 0; k < 8; k++) {
				uint64_t a = now_ns();
				long v0 = nvcsw();
				char *p = mmap(NULL, 256 << 10, PROT_READ | PROT_WRITE,
					       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

				if (p == MAP_FAILED)
					die("mmap");
				p[0] = 1;
				munmap(p, 256 << 10);
				if (nvcsw() != v0) {
					planted_extra_ns += now_ns() - a;
					atomic_fetch_add(&sh->count, 1);
				}
				progress();
			}
			work_for(200000);
		} else if (!strcmp(opt_mode, "reclaim")) {
			uint64_t a = now_ns();

			region = mmap(NULL, region_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
				      -1, 0);
			if (region == MAP_FAILED)
				die("mmap");
			madvise(region, region_len, MADV_NOHUGEPAGE);
			for (size_t off = 0; off < region_len; off += 4096) {
				region[off] = 1;
				if (!(off & 0xffff))
					progress();
			}
			munmap(region, region_len);
			planted_extra_ns += now_ns() - a;
			progress();
			work_for((uint64_t)opt_period_ms * MS_NS);
		} else {
			work_for(MS_NS);
		}
	}
	if (!strcmp(opt_mode, "throttle"))
		atomic_store(&sh->cause_ns, throttled_ns() - thr0);
	if (!strcmp(opt_mode, "irq"))
		atomic_store(&sh->count, netrx_count(opt_cpu) - netrx0);
	atomic_store(&sh->phase, 2);
	/* its own work again, until told to stop (throttle: still in the cgroup, where a
	 * snapshot finds it) */
	while (!atomic_load(&stop))
		spin_until(now_ns() + 100000);
	if (!strcmp(opt_mode, "throttle"))
		cgroup_enter(tid, opt_cgroup_home);
	return NULL;
}

/* ---- noise ---- */

static const char *const noise_names[] = { "python3",	  "kdamond.0",	"node_exporter", "containerd",
					   "kworker-ish", "sshd",	"rsyslogd",	 "dockerd",
					   "prometheus",  "nvidia-smi", "chronyd",	 "irqbalance" };

struct noise_task {
	char name[16];
	int policy;
	uint64_t min_period, max_period, min_burst, max_burst;
	bool once;
};

static struct noise_task nt;

static void noise_main(void)
{
	uint64_t end = sh->end_ns;

	rng_state ^= (uint64_t)getpid() * 0x9e3779b97f4a7c15ull;
	if (nt.once) {
		uint64_t at =
			sh->start_ns + rnd_between(sh->end_ns - sh->start_ns > 400 * MS_NS ? 100 * MS_NS : 0,
						   (sh->end_ns - sh->start_ns) * 3 / 4);

		sleep_until(at);
		spin_until(now_ns() + rnd_between(nt.min_burst, nt.max_burst));
		return;
	}
	while (now_ns() < end && getppid() != 1) {
		sleep_ns(rnd_between(nt.min_period, nt.max_period));
		spin_until(now_ns() + rnd_between(nt.min_burst, nt.max_burst));
	}
}

static int run_noise(void)
{
	struct noise_task tasks[] = {
		{ "", SCHED_OTHER, 40 * MS_NS, 200 * MS_NS, 200000, 2 * MS_NS, false },
		{ "", SCHED_OTHER, 40 * MS_NS, 200 * MS_NS, 200000, 2 * MS_NS, false },
		{ "", SCHED_FIFO, 40 * MS_NS, 200 * MS_NS, 200000, 2 * MS_NS, false },
		{ "", SCHED_FIFO, 0, 0, 8 * MS_NS, 12 * MS_NS, true },
		{ "", SCHED_FIFO, 0, 0, 16 * MS_NS, 24 * MS_NS, true },
	};
	pid_t pids[8];
	size_t n = 0;
	int status;

	sh->start_ns = now_ns();
	sh->end_ns = sh->start_ns + (uint64_t)opt_duration_ms * MS_NS;
	pids[n] = helper("busy", opt_other, SCHED_OTHER, 0, busy_helper);
	printf("noise: busy %d on CPU %d, the whole time\n", pids[n], opt_other);
	n++;
	for (size_t i = 0; i < sizeof(tasks) / sizeof(tasks[0]); i++) {
		nt = tasks[i];
		snprintf(nt.name, sizeof(nt.name), "%s",
			 noise_names[rnd() % (sizeof(noise_names) / sizeof(noise_names[0]))]);
		if (nt.once && i == 4)
			snprintf(nt.name, sizeof(nt.name), "python3");
		pids[n] = helper(nt.name, opt_cpu, nt.policy,
				 nt.policy == SCHED_FIFO ? 1 + (int)(rnd() % 5) : -20, noise_main);
		printf("noise: %s %d on CPU %d, %s, %s %.1f..%.1f ms\n", nt.name, pids[n], opt_cpu,
		       nt.policy == SCHED_FIFO ? "SCHED_FIFO" : "SCHED_OTHER",
		       nt.once ? "once" : "every so often,", (double)nt.min_burst / 1e6,
		       (double)nt.max_burst / 1e6);
		n++;
	}
	fflush(stdout);
	atomic_store(&sh->phase, 1);
	sleep_until(sh->end_ns);
	atomic_store(&sh->phase, 2);
	for (size_t i = 0; i < n; i++) {
		waitpid(pids[i], &status, 0);
		if (WIFEXITED(status) && WEXITSTATUS(status) == 77)
			fprintf(stderr, "causes noise: note: SCHED_FIFO refused for one task\n");
	}
	printf("noise: done\n");
	return 0;
}

/* A session of its own, with its autogroup (where the kernel has them) at nice -20. */
static void own_session(void)
{
	FILE *f;

	if (setsid() < 0 && errno != EPERM)
		die("setsid");
	f = fopen("/proc/self/autogroup", "we");
	if (f) {
		fputs("-20\n", f);
		fclose(f);
	}
}

/* ---- main ---- */

static void on_signal(int sig)
{
	(void)sig;
	atomic_store(&stop, true);
}

static void usage(void)
{
	fprintf(stderr,
		"usage: causes rt|cfs|syscall|lock|reclaim|irq|migrate|throttle|noise --name NAME --cpu C "
		"--other-cpu O [options] (see the comment at the top of tests/workloads/causes.c)\n");
	exit(2);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "name", required_argument, NULL, 'n' },
		{ "cpu", required_argument, NULL, 'c' },
		{ "other-cpu", required_argument, NULL, 'o' },
		{ "duration", required_argument, NULL, 'd' },
		{ "start-delay", required_argument, NULL, 's' },
		{ "seed", required_argument, NULL, 'S' },
		{ "helper", required_argument, NULL, 'h' },
		{ "period-ms", required_argument, NULL, 'p' },
		{ "burst-ms", required_argument, NULL, 'b' },
		{ "prio", required_argument, NULL, 'P' },
		{ "threads", required_argument, NULL, 't' },
		{ "mb", required_argument, NULL, 'm' },
		{ "file", required_argument, NULL, 'f' },
		{ "flood-cpu", required_argument, NULL, 'F' },
		{ "cgroup", required_argument, NULL, 'g' },
		{ "cgroup-home", required_argument, NULL, 'G' },
		{ "cgroup-v1", no_argument, NULL, '1' },
		{ "flood-bytes", required_argument, NULL, 'B' },
		{ "flood-udp", no_argument, NULL, 'U' },
		{},
	};
	pthread_t disp, helpers[16];
	size_t n_helpers = 0;
	char path[4096];
	int c, status;
	pid_t kids[4];
	size_t n_kids = 0;
	struct sigaction sa = { .sa_handler = on_signal };

	if (argc < 2)
		usage();
	opt_mode = argv[1];
	optind = 2;
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'n':
			opt_name = optarg;
			break;
		case 'c':
			opt_cpu = atoi(optarg);
			break;
		case 'o':
			opt_other = atoi(optarg);
			break;
		case 'd':
			opt_duration_ms = atol(optarg);
			break;
		case 's':
			opt_delay_ms = atol(optarg);
			break;
		case 'S':
			opt_seed = strtoul(optarg, NULL, 0);
			break;
		case 'h':
			opt_helper = optarg;
			break;
		case 'p':
			opt_period_ms = atol(optarg);
			break;
		case 'b':
			opt_burst_ms = atol(optarg);
			break;
		case 'P':
			opt_prio = atoi(optarg);
			break;
		case 't':
			opt_threads = atoi(optarg);
			break;
		case 'm':
			opt_mb = atol(optarg);
			break;
		case 'f':
			opt_file = optarg;
			break;
		case 'F':
			opt_flood_cpu = atoi(optarg);
			break;
		case 'g':
			opt_cgroup = optarg;
			break;
		case 'G':
			opt_cgroup_home = optarg;
			break;
		case '1':
			opt_cgroup_v1 = true;
			break;
		case 'B':
			opt_flood_bytes = atol(optarg);
			break;
		case 'U':
			opt_flood_udp = true;
			break;
		default:
			usage();
		}
	}
	if (opt_cpu < 0 || opt_other < 0 || opt_cpu == opt_other || opt_duration_ms <= 0 ||
	    opt_period_ms <= 0 || opt_burst_ms <= 0 || opt_threads < 0 || opt_threads > 15)
		usage();
	if (opt_flood_cpu < 0)
		opt_flood_cpu = opt_other;
	rng_state = opt_seed * 0x2545f4914f6cdd1dull + 1;
	if (pin(0, opt_cpu) < 0 || pin(0, opt_other) < 0)
		skip("the dispatch CPU or the other CPU is not there");
	{
		cpu_set_t all;

		CPU_ZERO(&all);
		CPU_SET(opt_cpu, &all);
		CPU_SET(opt_other, &all);
		sched_setaffinity(0, sizeof(all), &all);
	}
	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED)
		die("mmap");
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	own_session();
	if (!strcmp(opt_mode, "noise"))
		return run_noise();

	/* the helpers that are processes, before the dispatch thread has its name */
	if (!strcmp(opt_mode, "rt")) {
		struct sched_param sp = { .sched_priority = opt_prio };

		if (sched_setscheduler(0, SCHED_FIFO, &sp) < 0)
			skip("SCHED_FIFO refused (RT group scheduling without a budget?)");
		sp.sched_priority = 0;
		sched_setscheduler(0, SCHED_OTHER, &sp);
		kids[n_kids++] = helper(opt_helper, opt_cpu, SCHED_FIFO, opt_prio, rt_helper);
	} else if (!strcmp(opt_mode, "cfs")) {
		kids[n_kids++] = helper(opt_helper, opt_cpu, SCHED_OTHER, -20, cfs_helper);
	} else if (!strcmp(opt_mode, "syscall")) {
		if (pipe2(req_pipe, O_CLOEXEC) < 0 || pipe2(rep_pipe, O_CLOEXEC) < 0)
			die("pipe");
		kids[n_kids++] = helper(opt_helper, opt_other, SCHED_OTHER, 0, syscall_helper);
	} else if (!strcmp(opt_mode, "migrate")) {
		char busy[16];

		snprintf(busy, sizeof(busy), "%.12s-b", opt_helper);
		kids[n_kids++] = helper(busy, opt_other, SCHED_OTHER, -20, busy_helper);
	} else if (!strcmp(opt_mode, "reclaim")) {
		static char buf[1 << 20];
		int fd;

		if (!opt_file) {
			snprintf(path, sizeof(path), "/var/tmp/hostprof-causes-%d", getpid());
			opt_file = path;
		}
		fd = open(opt_file, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
		if (fd < 0)
			die(opt_file);
		memset(buf, 'x', sizeof(buf));
		for (long i = 0; i < opt_mb; i++)
			if (!reclaim_write(fd, buf, (off_t)i << 20)) {
				unlink(opt_file);
				die("write");
			}
		fsync(fd);
		close(fd);
		kids[n_kids++] = helper(opt_helper, opt_other, SCHED_OTHER, 0, reclaim_helper);
	} else if (!strcmp(opt_mode, "throttle")) {
		if (!opt_cgroup || !opt_cgroup_home)
			usage();
		if ((opt_cgroup_v1 ?
			     (write_file(opt_cgroup, "cpu.cfs_period_us", "%ld\n", opt_period_ms * 1000) <
				      0 ||
			      write_file(opt_cgroup, "cpu.cfs_quota_us", "%ld\n", opt_burst_ms * 1000) < 0) :
			     write_file(opt_cgroup, "cpu.max", "%ld %ld\n", opt_burst_ms * 1000,
					opt_period_ms * 1000) < 0))
			skip("cannot set the cgroup's CPU bandwidth");
	} else if (!strcmp(opt_mode, "irq") && opt_flood_udp) {
		int rx = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
		socklen_t al = sizeof(udp_to);

		udp_to = (struct sockaddr_in){ .sin_family = AF_INET,
					       .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
		udp_fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
		if (rx < 0 || udp_fd < 0 || bind(rx, (struct sockaddr *)&udp_to, sizeof(udp_to)) < 0 ||
		    getsockname(rx, (struct sockaddr *)&udp_to, &al) < 0)
			skip("no UDP socket on 127.0.0.1 (not in a network namespace with lo up?)");
	} else if (!strcmp(opt_mode, "irq")) {
		if (tcp_pair(flood_fds) < 0)
			skip("no TCP connection on 127.0.0.1 (not in a network namespace with lo up?)");
	} else if (strcmp(opt_mode, "lock")) {
		usage();
	}
	if (!strcmp(opt_mode, "migrate")) /* it reads the dispatch thread's tid when the work starts */
		kids[n_kids++] = helper(opt_helper, -1, SCHED_OTHER, -20, migrate_mover);
	if (pthread_create(&disp, NULL, dispatch_main, NULL))
		die("pthread_create");
	while (!atomic_load(&sh->dispatch_tid))
		sleep_ns(MS_NS);
	for (int k = 0; !strcmp(opt_mode, "lock") && k < opt_threads; k++)
		if (!pthread_create(&helpers[n_helpers], NULL, mapper_main, (void *)(uintptr_t)(k + 1)))
			n_helpers++;
	if (!strcmp(opt_mode, "irq") && opt_flood_udp &&
	    !pthread_create(&helpers[n_helpers], NULL, flood_udp, NULL))
		n_helpers++;
	if (!strcmp(opt_mode, "irq") && !opt_flood_udp &&
	    !pthread_create(&helpers[n_helpers], NULL, flood_send, NULL))
		n_helpers++;
	if (!strcmp(opt_mode, "irq") && !opt_flood_udp &&
	    !pthread_create(&helpers[n_helpers], NULL, flood_recv, NULL))
		n_helpers++;
	printf("ready pid=%d tid=%d\n", getpid(), atomic_load(&sh->dispatch_tid));
	fflush(stdout);
	set_name("main");
	sleep_ns((uint64_t)opt_delay_ms * MS_NS);
	sh->start_ns = now_ns();
	sh->end_ns = sh->start_ns + (uint64_t)opt_duration_ms * MS_NS;
	atomic_store(&sh->phase, 1);
	while (atomic_load(&sh->phase) < 2)
		sleep_ns(MS_NS);
	for (size_t k = 0; k < n_kids; k++) {
		if (!strcmp(opt_mode, "syscall")) {
			close(req_pipe[1]);
		}
		if (!strcmp(opt_mode, "reclaim"))
			atomic_store(&sh->phase, 3);
		waitpid(kids[k], &status, 0);
		if (WIFEXITED(status) && WEXITSTATUS(status) == 77)
			skip("a helper could not take its policy (SCHED_FIFO refused?)");
	}
	for (size_t k = 0; k < n_helpers; k++)
		pthread_join(helpers[k], NULL);
	{
		uint64_t planted = planted_extra_ns;

		if (!strcmp(opt_mode, "rt") || !strcmp(opt_mode, "cfs") || !strcmp(opt_mode, "migrate"))
			planted = gaps_in_ivs();
		else if (!strcmp(opt_mode, "throttle") || !strcmp(opt_mode, "irq"))
			planted = lost_ns;
		printf("mode=%s\nstart_ns=%llu\nend_ns=%llu\nlost_ns=%llu\ngaps=%zu\nmax_gap_ns=%llu\nplanted_ns=%llu\n",
		       opt_mode, (unsigned long long)sh->start_ns, (unsigned long long)sh->end_ns,
		       (unsigned long long)lost_ns, n_gaps, (unsigned long long)max_gap_ns,
		       (unsigned long long)planted);
		if (!strcmp(opt_mode, "lock") || !strcmp(opt_mode, "reclaim"))
			printf("cause_ns=%llu\n", (unsigned long long)planted);
		else if (strcmp(opt_mode, "irq"))
			printf("cause_ns=%llu\n", (unsigned long long)atomic_load(&sh->cause_ns));
		if (!strcmp(opt_mode, "irq"))
			printf("netrx=%llu\nsent=%llu\n", (unsigned long long)atomic_load(&sh->count),
			       (unsigned long long)atomic_load(&sent));
		else
			printf("count=%llu\n", (unsigned long long)atomic_load(&sh->count));
		if (!strcmp(opt_mode, "reclaim"))
			printf("enomem=%llu\n", (unsigned long long)atomic_load(&sh->enomem));
		printf("done\n");
		fflush(stdout);
	}
	while (!atomic_load(&stop))
		sleep_ns(10 * MS_NS);
	pthread_join(disp, NULL);
	return 0;
}
