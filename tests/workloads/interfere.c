// SPDX-License-Identifier: GPL-2.0-only
/*
 * interfere: provokes, on demand and measurably, the interference that a thread suffers
 * beyond the scheduler, so that tests can check that hostprof sees it.
 *
 *   interfere MODE [--name N] [--start-delay MS] [--duration MS] [mode options]
 *
 * Every mode runs one watched thread, named N (default acl_thread), beside helper threads
 * where the mode needs them. Once everything is set up it prints one line
 *
 *   ready pid=P tid=T            (T: the watched thread)
 *
 * then sleeps --start-delay MS (default 0; the only start mechanism: a test attaches to P/T
 * within that time), does the work for --duration MS (default 2000) and prints the ground
 * truth, one key=value a line, starting with mode=MODE and the window of the work,
 * start_ns= and end_ns= (CLOCK_BOOTTIME, the clock of the traces).
 *
 * softirq --cpu C --flood-cpu F [--no-flood]
 *	Needs a fresh network namespace whose lo steers its receive work to CPU C through RPS
 *	(interfere-env.sh: hp_netns_exec C interfere softirq ...); it checks that datagrams
 *	sent from F are received on C before it says ready. The watched thread, pinned on C,
 *	reads CLOCK_MONOTONIC in a tight loop; any gap over 5 us is time it lost. A "flood"
 *	thread, pinned on F, sends 16-byte UDP datagrams (sendmmsg, 64 at a time) to a socket
 *	on 127.0.0.1 that nobody reads: each datagram costs C the whole receive path in NET_RX
 *	(IP, UDP, the socket lookup, the drop at the full socket), and no reader's wake-ups or
 *	copies land anywhere, so the flood's CPU only sends. Prints spun_ns (the time it
 *	spun), lost_ns, gaps and max_gap_ns (gaps over 5 us), split by whether the thread
 *	was switched out during the gap (getrusage's context switches): irq_lost_ns and
 *	irq_gaps (it kept the CPU: interrupts and softirqs), switched_lost_ns and
 *	switched_gaps (another task ran, ksoftirqd included); sent (datagrams), netrx_c
 *	(NET_RX softirqs on C, from /proc/softirqs), rps_ipis_c and rx_packets_c (from
 *	/proc/net/softnet_stat: RPS wake-ups of C, packets C processed), udp_rcvbuf_errors
 *	(datagrams dropped at the socket, /proc/net/snmp of the namespace); start_mono_ns and
 *	end_mono_ns, the window in CLOCK_MONOTONIC (perf's -k monotonic). --no-flood: the
 *	same without the flood, the baseline.
 *
 * reclaim [--mb N] [--dir D]
 *	Needs to run in a memory cgroup (v2 memory.max or v1 memory.limit_in_bytes) whose limit
 *	is under N MiB (interfere-env.sh: hp_memcg_run 64 interfere reclaim ...; a limit over
 *	N MiB makes a baseline, with a note on stderr). The watched thread writes a file of
 *	N MiB (default 512) in D (default /var/tmp; not tmpfs) with write() in 1 MiB chunks,
 *	whole even if it takes longer than --duration, then reads it back with read() from
 *	the start, over and over, until --duration ends: the cgroup's page cache goes over the
 *	limit, so the thread reclaims it in its own context (memcg direct reclaim, in its
 *	writes and reads). The file is unlinked as soon as it is created: nothing is left
 *	behind. Prints bytes (written + read), bytes_written, bytes_read, passes (whole
 *	reads), write_ns and read_ns (time in the calls), max_call_ns, memcg=v1|v2, limit
 *	(bytes), and the deltas over the run of the cgroup's counters that exist: failcnt (v1
 *	memory.failcnt: charges that hit the limit), events_max (v2 memory.events max), and
 *	from memory.stat pgscan, pgsteal, pgscan_direct, pgsteal_direct (v2), pgpgin, pgpgout
 *	(v1: charge events, folios not pages), pgmajfault, workingset_refault_file (pages
 *	read again after reclaim).
 *
 * faults [--mb N]
 *	The watched thread maps N MiB (default 256) of fresh anonymous private memory, without
 *	MAP_POPULATE and with MADV_NOHUGEPAGE (one fault = one 4 KiB page), writes one byte
 *	in each page, unmaps it, and starts again until --duration ends (--duration 0: once).
 *	Prints mb, rounds, pages (pages touched), minflt and majflt (deltas of its own
 *	counters, getrusage(RUSAGE_THREAD) around the touches: minflt == pages), fault_ns
 *	(time in the touches), fault_max_ns and fault_p99_ns (each touch is timed).
 *
 * lock [--threads K] [--cpu C]
 *	K threads named "mapper" (default 2), pinned off CPU C, mmap 64 KiB..1 MiB, write one
 *	page, munmap, in a tight loop: each mmap and munmap takes mmap_lock for writing. The
 *	watched thread, pinned on C (default: the last CPU), mmaps 256 KiB, writes each of
 *	its 64 pages, and munmaps it, in a loop, timing each call and each touch. Its mmap and
 *	munmap wait for mmap_lock (write) while a mapper holds it; its page faults wait for it
 *	(read) when they cannot make do with the per-VMA lock: when a mapper's new mapping,
 *	placed next to its own, merges with it (write-locking its VMA), and at some first
 *	touches (making the anon_vma). A holder that waits for its CPU behind the other
 *	mappers makes the waits long (K >= 2 on 2 CPUs: waits of ms). Prints threads, cpu,
 *	iterations, mapper_iterations, max_ns and max_op (the slowest call: mmap, fault or
 *	munmap); which calls slept (getrusage(RUSAGE_THREAD) around each call, and around
 *	each mapping's 64 touches: in this loop only a wait for the lock sleeps):
 *	mmap_blocked, fault_blocked (touch loops), munmap_blocked, blocked_ns (the time of the
 *	calls and touch loops that slept), nvcsw and nivcsw (voluntary and involuntary
 *	context switches in them); and for each of mmap, fault and munmap: _n, _ns (total),
 *	_p50_ns, _p99_ns, _p999_ns, _max_ns (from a histogram, 6% resolution), _slow_100us
 *	(calls or touches of 100 us or more). --threads 0: the baseline.
 *
 * Exit 0; 1 when the work failed (an mmap, write or read: said on stderr); 2 on a usage
 * error; 77, with the reason on stderr, when the environment cannot give what the mode
 * needs (no RPS, not in a fresh network namespace, no memory cgroup with a limit, a tmpfs
 * directory, a CPU that is not online or not allowed).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <pthread.h>
#include <sched.h>
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
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#ifndef TMPFS_MAGIC
#define TMPFS_MAGIC 0x01021994
#endif
#ifndef RAMFS_MAGIC
#define RAMFS_MAGIC 0x858458f6
#endif

/* the initial network namespace's inode, fixed since Linux 6.18 (uapi linux/nsfs.h) */
#ifndef NET_NS_INIT_INO
#define NET_NS_INIT_INO 0xEFFFFFF9u
#endif

#define MIB (1024 * 1024ull)
#define GAP_NS 5000ull		/* softirq: a clock gap longer than this is lost time */
#define SLOW_NS 100000ull	/* lock: a call this slow counts in slow_100us */

enum mode { M_SOFTIRQ, M_RECLAIM, M_FAULTS, M_LOCK };
static const char *const mode_names[] = { "softirq", "reclaim", "faults", "lock" };

static enum mode mode;
static const char *opt_name = "acl_thread";
static long opt_start_delay_ms;
static long opt_duration_ms = 2000;
static long opt_cpu = -1;
static long opt_flood_cpu = -1;
static bool opt_no_flood;
static long opt_mb = -1;
static const char *opt_dir = "/var/tmp";
static long opt_threads = 2;

/* start protocol: each thread sets itself up, says so, and waits for go */
static pthread_mutex_t go_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t go_cv = PTHREAD_COND_INITIALIZER;
static int n_set_up;
static bool go;
static atomic_bool stop;		/* helpers: end of the run */
static uint64_t deadline_mono;		/* watched thread: end of the work (CLOCK_MONOTONIC) */
static atomic_int watched_tid;
static int setup_err;			/* first failure of a thread's set-up: exit status */
static bool work_failed;		/* the watched thread's work failed (said on stderr) */
static char setup_msg[256];

static void __attribute__((noreturn, format(printf, 1, 2))) usage(const char *fmt, ...)
{
	va_list ap;

	if (fmt) {
		fprintf(stderr, "interfere: ");
		va_start(ap, fmt);
		vfprintf(stderr, fmt, ap);
		va_end(ap);
		fprintf(stderr, "\n");
	}
	fprintf(stderr,
		"usage: interfere MODE [--name N] [--start-delay MS] [--duration MS] [options]\n"
		"  softirq --cpu C --flood-cpu F [--no-flood]   (in hp_netns_exec C)\n"
		"  reclaim [--mb N] [--dir D]                    (in hp_memcg_run LIMIT_MB)\n"
		"  faults [--mb N]\n"
		"  lock [--threads K] [--cpu C]\n");
	exit(2);
}

/* exit 77: the environment cannot give what the mode needs */
static void __attribute__((noreturn, format(printf, 1, 2))) skip(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "interfere %s: skipped: ", mode_names[mode]);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n");
	exit(77);
}

static void __attribute__((noreturn, format(printf, 1, 2))) die(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "interfere %s: ", mode_names[mode]);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n");
	exit(1);
}

static uint64_t clock_ns(clockid_t clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static uint64_t mono_ns(void)
{
	return clock_ns(CLOCK_MONOTONIC);
}

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

static int pin(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return sched_setaffinity(0, sizeof(set), &set) < 0 ? -errno : 0;
}

static int online_cpus(void)
{
	return (int)sysconf(_SC_NPROCESSORS_ONLN);
}

/* A thread's set-up failed: remembers why (77: the environment), for main to report. */
static void __attribute__((format(printf, 2, 3))) setup_failed(int status, const char *fmt, ...)
{
	va_list ap;

	pthread_mutex_lock(&go_mu);
	if (!setup_err) {
		setup_err = status;
		va_start(ap, fmt);
		vsnprintf(setup_msg, sizeof(setup_msg), fmt, ap);
		va_end(ap);
	}
	pthread_mutex_unlock(&go_mu);
}

/*
 * Called by each thread once set up, or after its set-up failed (setup_failed()): main waits
 * for all of them. Returns false when the run is called off.
 */
static bool set_up_and_wait(void)
{
	bool ok;

	pthread_mutex_lock(&go_mu);
	n_set_up++;
	pthread_cond_broadcast(&go_cv);
	while (!go && !atomic_load(&stop))
		pthread_cond_wait(&go_cv, &go_mu);
	ok = go && !atomic_load(&stop);
	pthread_mutex_unlock(&go_mu);
	return ok;
}

/* Makes the calling thread the watched one: named, pinned if cpu >= 0; then waits for go. */
static bool set_up_and_wait_as_watched(int cpu)
{
	int err;

	if (cpu >= 0 && (err = pin(cpu)) < 0)
		setup_failed(77, "cannot pin the watched thread on CPU %d: %s", cpu, strerror(-err));
	pthread_setname_np(pthread_self(), opt_name);
	atomic_store(&watched_tid, (int)syscall(SYS_gettid));
	return set_up_and_wait();
}

/* --- latency histogram: 16 sub-buckets per power of two (6% resolution) --- */

#define HSUB 16
struct hist {
	uint64_t n, sum, max, over;	/* over: samples >= SLOW_NS */
	uint64_t b[64 * HSUB];
};

static unsigned int hist_idx(uint64_t v)
{
	int msb;

	if (v < HSUB)
		return v;
	msb = 63 - __builtin_clzll(v);
	return (msb - 3) * HSUB + ((v >> (msb - 4)) & (HSUB - 1));
}

static uint64_t hist_upper(unsigned int idx)
{
	int msb;

	if (idx < HSUB)
		return idx;
	msb = idx / HSUB + 3;
	return ((HSUB + idx % HSUB + 1ull) << (msb - 4)) - 1;
}

static void hist_add(struct hist *h, uint64_t v)
{
	h->n++;
	h->sum += v;
	if (v > h->max)
		h->max = v;
	if (v >= SLOW_NS)
		h->over++;
	h->b[hist_idx(v)]++;
}

/* the value under which a fraction p of the samples lie (a bucket's upper bound) */
static uint64_t hist_pct(const struct hist *h, double p)
{
	uint64_t want = (uint64_t)(p * h->n + 0.999999), seen = 0;

	if (!h->n)
		return 0;
	for (unsigned int i = 0; i < 64 * HSUB; i++) {
		seen += h->b[i];
		if (seen >= want) {
			uint64_t u = hist_upper(i);

			return u < h->max ? u : h->max;
		}
	}
	return h->max;
}

static void hist_print(const char *name, const struct hist *h)
{
	printf("%s_n=%llu\n", name, (unsigned long long)h->n);
	printf("%s_ns=%llu\n", name, (unsigned long long)h->sum);
	printf("%s_p50_ns=%llu\n", name, (unsigned long long)hist_pct(h, 0.50));
	printf("%s_p99_ns=%llu\n", name, (unsigned long long)hist_pct(h, 0.99));
	printf("%s_p999_ns=%llu\n", name, (unsigned long long)hist_pct(h, 0.999));
	printf("%s_max_ns=%llu\n", name, (unsigned long long)h->max);
	printf("%s_slow_100us=%llu\n", name, (unsigned long long)h->over);
}

/* --- reading /proc and /sys --- */

static int read_file(const char *path, char *buf, size_t size)
{
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	n = read(fd, buf, size - 1);
	if (n < 0) {
		n = -errno;
		close(fd);
		return (int)n;
	}
	close(fd);
	buf[n] = 0;
	return (int)n;
}

/* "key value" lines (memory.stat, memory.events): value of key, or -1 */
static long long read_key(const char *path, const char *key)
{
	char line[256];
	size_t len = strlen(key);
	long long v = -1;
	FILE *f = fopen(path, "re");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		if (!strncmp(line, key, len) && line[len] == ' ') {
			v = strtoll(line + len + 1, NULL, 10);
			break;
		}
	}
	fclose(f);
	return v;
}

static long long read_number(const char *path)
{
	char buf[64];

	if (read_file(path, buf, sizeof(buf)) <= 0)
		return -1;
	if (!strncmp(buf, "max", 3))
		return LLONG_MAX;
	return strtoll(buf, NULL, 10);
}

/* NET_RX softirqs on a CPU so far, from /proc/softirqs; -1 when unreadable */
static long long netrx_count(int cpu)
{
	char line[4096], *tok, *save;
	int col = -1, i;
	long long v = -1;
	FILE *f = fopen("/proc/softirqs", "re");

	if (!f)
		return -1;
	if (fgets(line, sizeof(line), f)) {
		for (i = 0, tok = strtok_r(line, " \t\n", &save); tok;
		     i++, tok = strtok_r(NULL, " \t\n", &save))
			if (!strncmp(tok, "CPU", 3) && atoi(tok + 3) == cpu)
				col = i;
	}
	while (col >= 0 && fgets(line, sizeof(line), f)) {
		tok = strtok_r(line, " \t\n", &save);
		if (!tok || strcmp(tok, "NET_RX:"))
			continue;
		for (i = 0; (tok = strtok_r(NULL, " \t\n", &save)); i++)
			if (i == col)
				v = strtoll(tok, NULL, 10);
		break;
	}
	fclose(f);
	return v;
}

/* /proc/net/softnet_stat of a CPU: packets processed, RPS wake-ups received */
struct softnet {
	long long processed, received_rps;
};

static struct softnet softnet_of(int cpu)
{
	struct softnet s = { -1, -1 };
	char line[512];
	FILE *f = fopen("/proc/net/softnet_stat", "re");
	int row = 0;

	if (!f)
		return s;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long c[16];
		int n = 0, at = row++;
		char *p = line, *end;

		while (n < 16) {
			c[n] = strtoull(p, &end, 16);
			if (end == p)
				break;
			n++;
			p = end;
		}
		if (n >= 13)
			at = (int)c[12];	/* the CPU's index, since 5.x */
		if (at == cpu && n >= 10) {
			s.processed = (long long)c[0];
			s.received_rps = (long long)c[9];
			break;
		}
	}
	fclose(f);
	return s;
}

/* a field of the Udp: lines of /proc/net/snmp (this network namespace), or -1 */
static long long udp_stat(const char *field)
{
	char names[1024], values[1024], *n, *v, *sn, *sv;
	long long r = -1;
	FILE *f = fopen("/proc/net/snmp", "re");

	if (!f)
		return -1;
	while (fgets(names, sizeof(names), f)) {
		if (strncmp(names, "Udp: ", 5) || !fgets(values, sizeof(values), f))
			continue;
		for (n = strtok_r(names, " \n", &sn), v = strtok_r(values, " \n", &sv); n && v;
		     n = strtok_r(NULL, " \n", &sn), v = strtok_r(NULL, " \n", &sv))
			if (!strcmp(n, field))
				r = strtoll(v, NULL, 10);
		break;
	}
	fclose(f);
	return r;
}

static long long delta(long long after, long long before)
{
	return after < 0 || before < 0 ? -1 : after - before;
}

/* --- softirq --- */

static int rx_fd = -1, tx_fd = -1;
static uint64_t sent;
static uint64_t spun_ns, lost_ns, n_gaps, max_gap_ns, switched_ns, n_switched;

static long thread_switches(void)
{
	struct rusage ru;

	getrusage(RUSAGE_THREAD, &ru);
	return ru.ru_nvcsw + ru.ru_nivcsw;
}

static void *spinner_main(void *arg)
{
	uint64_t start, last, now;
	long switches;

	(void)arg;
	if (!set_up_and_wait_as_watched((int)opt_cpu))
		return NULL;
	switches = thread_switches();
	start = last = mono_ns();
	while (last < deadline_mono) {
		now = mono_ns();
		if (now - last > GAP_NS) {
			/* did it lose the CPU to another task, or only to interrupts? */
			long sw = thread_switches();

			lost_ns += now - last;
			n_gaps++;
			if (now - last > max_gap_ns)
				max_gap_ns = now - last;
			if (sw != switches) {
				switched_ns += now - last;
				n_switched++;
				switches = sw;
			}
			now = mono_ns();	/* getrusage's time is not lost */
		}
		last = now;
	}
	spun_ns = last - start;
	return NULL;
}

#define BATCH 64

static void *flood_main(void *arg)
{
	static char payload[BATCH][16];
	struct mmsghdr msgs[BATCH];
	struct iovec iov[BATCH];
	int err, n;

	(void)arg;
	prctl(PR_SET_NAME, "flood");
	if ((err = pin((int)opt_flood_cpu)) < 0)
		setup_failed(77, "cannot pin the flood thread on CPU %ld: %s", opt_flood_cpu,
			     strerror(-err));
	memset(msgs, 0, sizeof(msgs));
	for (int i = 0; i < BATCH; i++) {
		iov[i].iov_base = payload[i];
		iov[i].iov_len = sizeof(payload[i]);
		msgs[i].msg_hdr.msg_iov = &iov[i];
		msgs[i].msg_hdr.msg_iovlen = 1;
	}
	if (!set_up_and_wait())
		return NULL;
	while (!atomic_load(&stop)) {
		n = sendmmsg(tx_fd, msgs, BATCH, 0);
		if (n > 0)
			sent += n;
		else if (n < 0 && errno != ENOBUFS && errno != EAGAIN && errno != EINTR)
			break;
	}
	return NULL;
}

/* Sends a few hundred datagrams from CPU F: do they land on CPU C? */
static void softirq_check_steering(void)
{
	struct softnet before, after;
	cpu_set_t old;
	char b[16] = { 0 };
	int err;

	sched_getaffinity(0, sizeof(old), &old);
	if ((err = pin((int)opt_flood_cpu)) < 0)
		skip("cannot run on CPU %ld: %s", opt_flood_cpu, strerror(-err));
	before = softnet_of((int)opt_cpu);
	if (before.processed < 0)
		skip("cannot read /proc/net/softnet_stat for CPU %ld", opt_cpu);
	for (int i = 0; i < 500; i++) {
		if (send(tx_fd, b, sizeof(b), 0) < 0) {
			if (errno == ENETUNREACH || errno == ENETDOWN)
				skip("lo is down in this network namespace (ip link set lo up)");
			die("send to 127.0.0.1: %s", strerror(errno));
		}
	}
	sleep_ms(50);
	after = softnet_of((int)opt_cpu);
	sched_setaffinity(0, sizeof(old), &old);
	if (after.processed - before.processed < 100)
		skip("datagrams sent on lo from CPU %ld are not received on CPU %ld (%lld of 500): "
		     "RPS does not steer lo to it", opt_flood_cpu, opt_cpu,
		     after.processed - before.processed);
	/* empty the socket, so that the run starts from the same state */
	while (recv(rx_fd, b, sizeof(b), MSG_DONTWAIT) > 0)
		;
}

static void softirq_prepare(void)
{
	const char *rps = "/sys/class/net/lo/queues/rx-0/rps_cpus";
	struct stat self_ns, init_ns;
	struct sockaddr_in addr = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(addr);
	char mask[256];
	int n = online_cpus();

	if (opt_cpu < 0 || opt_flood_cpu < 0)
		usage("softirq needs --cpu C and --flood-cpu F");
	if (opt_cpu == opt_flood_cpu)
		usage("--cpu and --flood-cpu must differ (the flood must not share the CPU)");
	if (opt_cpu >= n || opt_flood_cpu >= n)
		skip("CPU %ld is not online (%d CPUs)", opt_cpu >= n ? opt_cpu : opt_flood_cpu, n);
	if (stat("/proc/self/ns/net", &self_ns) < 0)
		skip("cannot read /proc/self/ns/net: %s", strerror(errno));
	/* init's namespace, or where /proc/1 is out of reach the fixed number of the initial one */
	if (stat("/proc/1/ns/net", &init_ns) < 0)
		init_ns.st_ino = NET_NS_INIT_INO;
	if (self_ns.st_ino == init_ns.st_ino)
		skip("not in a fresh network namespace (run it under hp_netns_exec, "
		     "tests/workloads/interfere-env.sh)");
	if (read_file(rps, mask, sizeof(mask)) < 0)
		skip("no %s: a kernel without CONFIG_RPS, or /sys is not this namespace's", rps);
	if (netrx_count((int)opt_cpu) < 0)
		skip("cannot read NET_RX of CPU %ld in /proc/softirqs", opt_cpu);

	rx_fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	tx_fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (rx_fd < 0 || tx_fd < 0)
		die("socket: %s", strerror(errno));
	if (bind(rx_fd, (struct sockaddr *)&addr, sizeof(addr)) < 0) {
		if (errno == EADDRNOTAVAIL)
			skip("cannot bind 127.0.0.1: lo is down (ip link set lo up)");
		die("bind 127.0.0.1: %s", strerror(errno));
	}
	if (getsockname(rx_fd, (struct sockaddr *)&addr, &len) < 0 ||
	    connect(tx_fd, (struct sockaddr *)&addr, sizeof(addr)) < 0) {
		if (errno == ENETUNREACH || errno == ENETDOWN)
			skip("lo is down in this network namespace (ip link set lo up)");
		die("connect to 127.0.0.1: %s", strerror(errno));
	}
	softirq_check_steering();
}

/* --- reclaim --- */

struct memcg {
	int version;		/* 1 or 2; 0: none found */
	char dir[PATH_MAX];
	long long limit;	/* bytes */
};

static struct memcg cg;

/* The memory cgroup of this process: v1 when a v1 hierarchy has the memory controller. */
static void memcg_find(struct memcg *m)
{
	char line[4096], v1path[PATH_MAX] = "", v2path[PATH_MAX] = "", v1mnt[PATH_MAX] = "",
	     v2mnt[PATH_MAX] = "", v1root[PATH_MAX] = "/", v2root[PATH_MAX] = "/";
	bool have_v1 = false, have_v2 = false;
	const char *path, *root, *rel;
	FILE *f;

	memset(m, 0, sizeof(*m));
	f = fopen("/proc/self/cgroup", "re");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		/* ID:CONTROLLERS:PATH; the v2 line is 0::PATH */
		char *ctl = strchr(line, ':'), *p;

		if (!ctl)
			continue;
		*ctl++ = 0;
		p = strchr(ctl, ':');
		if (!p)
			continue;
		*p++ = 0;
		p[strcspn(p, "\n")] = 0;
		if (!strcmp(line, "0") && !*ctl) {
			snprintf(v2path, sizeof(v2path), "%s", p);
			continue;
		}
		for (char *t, *s = ctl; (t = strsep(&s, ","));)
			if (!strcmp(t, "memory"))
				snprintf(v1path, sizeof(v1path), "%s", p);
	}
	fclose(f);

	f = fopen("/proc/self/mountinfo", "re");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		char root_s[PATH_MAX], mnt[PATH_MAX], *sep = strstr(line, " - "), fstype[64],
		     src[PATH_MAX], opts[1024];

		if (!sep || sscanf(line, "%*s %*s %*s %4095s %4095s", root_s, mnt) != 2 ||
		    sscanf(sep + 3, "%63s %4095s %1023s", fstype, src, opts) != 3)
			continue;
		if (!strcmp(fstype, "cgroup2") && !have_v2) {
			snprintf(v2mnt, sizeof(v2mnt), "%s", mnt);
			snprintf(v2root, sizeof(v2root), "%s", root_s);
			have_v2 = true;
		} else if (!strcmp(fstype, "cgroup") && !have_v1) {
			for (char *t, *s = opts; (t = strsep(&s, ","));)
				if (!strcmp(t, "memory")) {
					snprintf(v1mnt, sizeof(v1mnt), "%s", mnt);
					snprintf(v1root, sizeof(v1root), "%s", root_s);
					have_v1 = true;
				}
		}
	}
	fclose(f);

	if (have_v1 && *v1path) {
		m->version = 1;
		path = v1path;
		root = v1root;
		snprintf(m->dir, sizeof(m->dir), "%s", v1mnt);
	} else if (have_v2) {
		m->version = 2;
		path = v2path;
		root = v2root;
		snprintf(m->dir, sizeof(m->dir), "%s", v2mnt);
	} else {
		return;
	}
	/* a mount of a sub-tree (containers): the path is relative to the mount's root */
	rel = path;
	if (strcmp(root, "/") && !strncmp(path, root, strlen(root)))
		rel = path + strlen(root);
	if (strlen(m->dir) + strlen(rel) + 1 >= sizeof(m->dir)) {
		m->version = 0;
		return;
	}
	strcat(m->dir, rel);
	snprintf(line, sizeof(line), "%s/%s", m->dir,
		 m->version == 1 ? "memory.limit_in_bytes" : "memory.max");
	m->limit = read_number(line);
	if (m->limit < 0)
		m->version = 0;
}

static const char *const stat_keys[] = {
	"pgscan", "pgsteal", "pgscan_direct", "pgsteal_direct", "pgpgin", "pgpgout", "pgmajfault",
	"workingset_refault_file",
};
#define N_STAT_KEYS (sizeof(stat_keys) / sizeof(stat_keys[0]))

struct memcg_counters {
	long long stat[N_STAT_KEYS];
	long long failcnt, events_max;
};

static void memcg_read(struct memcg_counters *c)
{
	char path[PATH_MAX + 32];

	snprintf(path, sizeof(path), "%s/memory.stat", cg.dir);
	for (size_t i = 0; i < N_STAT_KEYS; i++)
		c->stat[i] = read_key(path, stat_keys[i]);
	snprintf(path, sizeof(path), "%s/memory.failcnt", cg.dir);
	c->failcnt = cg.version == 1 ? read_number(path) : -1;
	snprintf(path, sizeof(path), "%s/memory.events", cg.dir);
	c->events_max = cg.version == 2 ? read_key(path, "max") : -1;
}

static int file_fd = -1;
static char *iobuf;
static uint64_t bytes_written, bytes_read, passes, write_ns, read_ns, max_call_ns;

/* one write() or read() of 1 MiB (more if short) at the file's offset, timed */
static bool timed_io(bool do_write, uint64_t off)
{
	uint64_t t0 = mono_ns(), t;
	size_t done = 0;
	ssize_t n;

	while (done < MIB) {
		n = do_write ? write(file_fd, iobuf + done, MIB - done)
			     : read(file_fd, iobuf + done, MIB - done);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			fprintf(stderr, "interfere reclaim: %s at %llu: %s\n", do_write ? "write" : "read",
				(unsigned long long)off, n < 0 ? strerror(errno) : "end of file");
			work_failed = true;
			return false;
		}
		done += n;
	}
	t = mono_ns() - t0;
	*(do_write ? &write_ns : &read_ns) += t;
	if (t > max_call_ns)
		max_call_ns = t;
	if (do_write)
		bytes_written += MIB;
	else
		bytes_read += MIB;
	return true;
}

static void *reclaimer_main(void *arg)
{
	uint64_t off;

	(void)arg;
	if (!set_up_and_wait_as_watched(-1))
		return NULL;
	/* the whole file, even past the deadline: its size is what goes over the limit */
	for (off = 0; off < opt_mb * MIB; off += MIB) {
		memset(iobuf, (int)(off / MIB) | 1, MIB);
		if (!timed_io(true, off))
			return NULL;
	}
	while (mono_ns() < deadline_mono) {
		if (lseek(file_fd, 0, SEEK_SET) < 0) {
			fprintf(stderr, "interfere reclaim: lseek: %s\n", strerror(errno));
			work_failed = true;
			return NULL;
		}
		for (off = 0; off < bytes_written && mono_ns() < deadline_mono; off += MIB)
			if (!timed_io(false, off))
				return NULL;
		if (off >= bytes_written)
			passes++;
	}
	return NULL;
}

static void reclaim_prepare(void)
{
	char path[PATH_MAX];
	struct statfs sfs;
	long long ram = (long long)sysconf(_SC_PHYS_PAGES) * sysconf(_SC_PAGESIZE);

	if (opt_mb < 0)
		opt_mb = 512;
	memcg_find(&cg);
	if (!cg.version)
		skip("no memory cgroup found (/proc/self/cgroup, /proc/self/mountinfo)");
	if (cg.limit <= 0 || cg.limit >= ram)
		skip("the memory cgroup %s (v%d) has no limit under the RAM (%lld): run it under "
		     "hp_memcg_run LIMIT_MB (tests/workloads/interfere-env.sh)", cg.dir, cg.version,
		     cg.limit);
	/* allowed, for a baseline: the same I/O without (or with much less) reclaim */
	if ((unsigned long long)opt_mb * MIB <= (unsigned long long)cg.limit)
		fprintf(stderr, "interfere reclaim: note: --mb %ld is not over the cgroup's limit "
				"(%lld MiB): little or nothing to reclaim\n", opt_mb,
			cg.limit / (long long)MIB);
	if (statfs(opt_dir, &sfs) < 0) {
		if (errno == ENOENT || errno == ENOTDIR)
			usage("--dir %s: %s", opt_dir, strerror(errno));
		skip("--dir %s: %s", opt_dir, strerror(errno));
	}
	if (sfs.f_type == TMPFS_MAGIC || sfs.f_type == RAMFS_MAGIC)
		skip("--dir %s is in memory (tmpfs/ramfs): its pages cannot be reclaimed without swap",
		     opt_dir);
	if ((unsigned long long)sfs.f_bavail * sfs.f_bsize < (opt_mb + 64) * MIB)
		skip("--dir %s has less than %ld MiB free", opt_dir, opt_mb + 64);
	snprintf(path, sizeof(path), "%s/interfere-reclaim.XXXXXX", opt_dir);
	file_fd = mkostemp(path, O_CLOEXEC);
	if (file_fd < 0)
		skip("cannot create a file in %s: %s", opt_dir, strerror(errno));
	unlink(path);	/* gone when the process is, whatever happens */
	iobuf = aligned_alloc(4096, MIB);
	if (!iobuf)
		die("out of memory");
}

/* --- faults --- */

static uint64_t rounds, pages_touched, minflt, majflt;
static struct hist fault_hist;

static void *faulter_main(void *arg)
{
	long page = sysconf(_SC_PAGESIZE);
	size_t len = opt_mb * MIB;
	struct rusage r0, r1;
	char *p;

	(void)arg;
	memset(&fault_hist, 0, sizeof(fault_hist));	/* its faults now, not in the count */
	if (!set_up_and_wait_as_watched(-1))
		return NULL;
	do {
		p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED) {
			fprintf(stderr, "interfere faults: mmap %zu: %s\n", len, strerror(errno));
			work_failed = true;
			return NULL;
		}
		madvise(p, len, MADV_NOHUGEPAGE);	/* EINVAL without THP: fine */
		getrusage(RUSAGE_THREAD, &r0);
		for (size_t off = 0; off < len; off += page) {
			uint64_t t0 = mono_ns();

			*(volatile char *)(p + off) = 1;
			hist_add(&fault_hist, mono_ns() - t0);
		}
		getrusage(RUSAGE_THREAD, &r1);
		munmap(p, len);
		minflt += r1.ru_minflt - r0.ru_minflt;
		majflt += r1.ru_majflt - r0.ru_majflt;
		pages_touched += len / page;
		rounds++;
	} while (mono_ns() < deadline_mono);
	return NULL;
}

/* --- lock --- */

#define WATCHED_LEN (256 * 1024)

static struct hist mmap_hist, touch_hist, munmap_hist;
static uint64_t iterations, mapper_iterations;
static uint64_t max_ns;
static const char *max_op = "none";

static void note_max(uint64_t t, const char *op)
{
	if (t > max_ns) {
		max_ns = t;
		max_op = op;
	}
}

/*
 * The watched thread's calls, each in a span between two getrusage(RUSAGE_THREAD): a span
 * whose voluntary context switches rose slept (in this loop, a wait for mmap_lock: nothing
 * else here sleeps), one whose involuntary ones rose was preempted.
 */
enum { OP_MMAP, OP_FAULT, OP_MUNMAP, N_OPS };
static const char *const op_names[N_OPS] = { "mmap", "fault", "munmap" };
static uint64_t op_blocked[N_OPS], blocked_ns, n_nvcsw, n_nivcsw;

static void span_end(int op, struct rusage *last, uint64_t ns)
{
	struct rusage now;

	getrusage(RUSAGE_THREAD, &now);
	if (now.ru_nvcsw != last->ru_nvcsw) {
		op_blocked[op]++;
		blocked_ns += ns;
		n_nvcsw += now.ru_nvcsw - last->ru_nvcsw;
	}
	n_nivcsw += now.ru_nivcsw - last->ru_nivcsw;
	*last = now;
}

static void *locker_main(void *arg)
{
	long page = sysconf(_SC_PAGESIZE);
	uint64_t t0, t, touches;
	struct rusage ru;
	char *p;

	(void)arg;
	if (!set_up_and_wait_as_watched((int)opt_cpu))
		return NULL;
	getrusage(RUSAGE_THREAD, &ru);
	while (mono_ns() < deadline_mono) {
		t0 = mono_ns();
		p = mmap(NULL, WATCHED_LEN, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		t = mono_ns() - t0;
		if (p == MAP_FAILED) {
			fprintf(stderr, "interfere lock: mmap: %s\n", strerror(errno));
			work_failed = true;
			return NULL;
		}
		span_end(OP_MMAP, &ru, t);
		hist_add(&mmap_hist, t);
		note_max(t, "mmap");
		touches = 0;
		for (size_t off = 0; off < WATCHED_LEN; off += page) {
			t0 = mono_ns();
			*(volatile char *)(p + off) = 1;
			t = mono_ns() - t0;
			touches += t;
			hist_add(&touch_hist, t);
			note_max(t, "fault");
		}
		span_end(OP_FAULT, &ru, touches);
		t0 = mono_ns();
		munmap(p, WATCHED_LEN);
		t = mono_ns() - t0;
		span_end(OP_MUNMAP, &ru, t);
		hist_add(&munmap_hist, t);
		note_max(t, "munmap");
		iterations++;
	}
	return NULL;
}

static void *mapper_main(void *arg)
{
	long page = sysconf(_SC_PAGESIZE);
	uint64_t x = 88172645463325252ull ^ (uintptr_t)arg, n = 0;
	cpu_set_t set;
	int ncpu = online_cpus();

	prctl(PR_SET_NAME, "mapper");
	/* off the watched thread's CPU: contention for the lock, not for the CPU */
	CPU_ZERO(&set);
	for (int c = 0; c < ncpu; c++)
		if (c != opt_cpu)
			CPU_SET(c, &set);
	if (CPU_COUNT(&set) && sched_setaffinity(0, sizeof(set), &set) < 0)
		setup_failed(77, "cannot pin a mapper off CPU %ld: %s", opt_cpu, strerror(errno));
	if (!set_up_and_wait())
		return NULL;
	while (!atomic_load(&stop)) {
		size_t len;
		char *p;

		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		len = (16 + x % 241) * 4096;	/* 64 KiB .. 1 MiB */
		p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED)
			continue;
		p[(x >> 20) % (len / page) * page] = 1;
		munmap(p, len);
		n++;
	}
	__atomic_fetch_add(&mapper_iterations, n, __ATOMIC_RELAXED);
	return NULL;
}

/* --- main --- */

enum { O_NAME = 1, O_DELAY, O_DURATION, O_CPU, O_FLOOD_CPU, O_NO_FLOOD, O_MB, O_DIR, O_THREADS };

/* which modes take which option */
static const unsigned int opt_modes[] = {
	[O_CPU] = 1 << M_SOFTIRQ | 1 << M_LOCK,
	[O_FLOOD_CPU] = 1 << M_SOFTIRQ,
	[O_NO_FLOOD] = 1 << M_SOFTIRQ,
	[O_MB] = 1 << M_RECLAIM | 1 << M_FAULTS,
	[O_DIR] = 1 << M_RECLAIM,
	[O_THREADS] = 1 << M_LOCK,
};

static long parse_long(const char *opt, const char *s, long min, long max)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < min || v > max)
		usage("--%s %s: want an integer in %ld..%ld", opt, s, min, max);
	return v;
}

static void parse_args(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "name", required_argument, NULL, O_NAME },
		{ "start-delay", required_argument, NULL, O_DELAY },
		{ "duration", required_argument, NULL, O_DURATION },
		{ "cpu", required_argument, NULL, O_CPU },
		{ "flood-cpu", required_argument, NULL, O_FLOOD_CPU },
		{ "no-flood", no_argument, NULL, O_NO_FLOOD },
		{ "mb", required_argument, NULL, O_MB },
		{ "dir", required_argument, NULL, O_DIR },
		{ "threads", required_argument, NULL, O_THREADS },
		{},
	};
	int opt, idx;
	unsigned int i;

	if (argc < 2 || argv[1][0] == '-')
		usage("no mode");
	for (i = 0; i < sizeof(mode_names) / sizeof(mode_names[0]); i++)
		if (!strcmp(argv[1], mode_names[i]))
			break;
	if (i == sizeof(mode_names) / sizeof(mode_names[0]))
		usage("unknown mode %s", argv[1]);
	mode = i;
	optind = 2;
	while ((opt = getopt_long(argc, argv, "", opts, &idx)) != -1) {
		if (opt == '?')
			usage(NULL);
		if ((size_t)opt < sizeof(opt_modes) / sizeof(opt_modes[0]) && opt_modes[opt] &&
		    !(opt_modes[opt] & 1u << mode))
			usage("--%s does not apply to %s", opts[idx].name, mode_names[mode]);
		switch (opt) {
		case O_NAME:
			if (!*optarg || strlen(optarg) > 15)
				usage("--name %s: 1 to 15 characters (a thread's comm)", optarg);
			opt_name = optarg;
			break;
		case O_DELAY:
			opt_start_delay_ms = parse_long("start-delay", optarg, 0, 3600 * 1000);
			break;
		case O_DURATION:
			opt_duration_ms = parse_long("duration", optarg, 0, 24 * 3600 * 1000);
			break;
		case O_CPU:
			opt_cpu = parse_long("cpu", optarg, 0, CPU_SETSIZE - 1);
			break;
		case O_FLOOD_CPU:
			opt_flood_cpu = parse_long("flood-cpu", optarg, 0, CPU_SETSIZE - 1);
			break;
		case O_NO_FLOOD:
			opt_no_flood = true;
			break;
		case O_MB:
			opt_mb = parse_long("mb", optarg, 1, 1024 * 1024);
			break;
		case O_DIR:
			opt_dir = optarg;
			break;
		case O_THREADS:
			opt_threads = parse_long("threads", optarg, 0, 1024);
			break;
		}
	}
	if (optind < argc)
		usage("unexpected argument %s", argv[optind]);
}

int main(int argc, char **argv)
{
	pthread_t watched, helpers[1024];
	int n_helpers = 0, err;
	long long netrx0 = -1, netrx1 = -1, rcverr0 = -1;
	struct softnet sn0 = { -1, -1 }, sn1 = { -1, -1 };
	struct memcg_counters mc0, mc1;
	uint64_t start_ns, end_ns, start_mono = 0, end_mono = 0;
	void *(*watched_main)(void *) = NULL;

	parse_args(argc, argv);
	setvbuf(stdout, NULL, _IOLBF, 0);

	switch (mode) {
	case M_SOFTIRQ:
		softirq_prepare();
		watched_main = spinner_main;
		break;
	case M_RECLAIM:
		reclaim_prepare();
		watched_main = reclaimer_main;
		break;
	case M_FAULTS:
		if (opt_mb < 0)
			opt_mb = 256;
		watched_main = faulter_main;
		break;
	case M_LOCK:
		if (opt_cpu < 0)
			opt_cpu = online_cpus() - 1;
		if (opt_cpu >= online_cpus())
			skip("CPU %ld is not online (%d CPUs)", opt_cpu, online_cpus());
		watched_main = locker_main;
		break;
	}

	err = pthread_create(&watched, NULL, watched_main, NULL);
	if (!err && mode == M_SOFTIRQ && !opt_no_flood)
		err = pthread_create(&helpers[n_helpers++], NULL, flood_main, NULL);
	for (long i = 0; !err && mode == M_LOCK && i < opt_threads; i++)
		err = pthread_create(&helpers[n_helpers++], NULL, mapper_main, (void *)i);
	if (err)
		die("pthread_create: %s", strerror(err));

	/* every thread set up (or failed), the watched one named: ready */
	pthread_mutex_lock(&go_mu);
	while (n_set_up < 1 + n_helpers)
		pthread_cond_wait(&go_cv, &go_mu);
	if (setup_err) {
		atomic_store(&stop, true);
		pthread_cond_broadcast(&go_cv);
	}
	pthread_mutex_unlock(&go_mu);
	if (setup_err) {
		if (setup_err == 77)
			skip("%s", setup_msg);
		die("%s", setup_msg);
	}

	printf("ready pid=%d tid=%d\n", getpid(), atomic_load(&watched_tid));
	sleep_ms(opt_start_delay_ms);

	if (mode == M_SOFTIRQ) {
		netrx0 = netrx_count((int)opt_cpu);
		sn0 = softnet_of((int)opt_cpu);
		rcverr0 = udp_stat("RcvbufErrors");
	} else if (mode == M_RECLAIM) {
		memcg_read(&mc0);
	}
	pthread_mutex_lock(&go_mu);
	start_ns = clock_ns(CLOCK_BOOTTIME);
	start_mono = mono_ns();
	deadline_mono = start_mono + opt_duration_ms * 1000000ull;
	go = true;
	pthread_cond_broadcast(&go_cv);
	pthread_mutex_unlock(&go_mu);

	pthread_join(watched, NULL);
	end_ns = clock_ns(CLOCK_BOOTTIME);
	end_mono = mono_ns();
	if (mode == M_SOFTIRQ) {
		/* the flood's last softirqs count: read before it stops */
		netrx1 = netrx_count((int)opt_cpu);
		sn1 = softnet_of((int)opt_cpu);
	}
	atomic_store(&stop, true);
	for (int i = 0; i < n_helpers; i++)
		pthread_join(helpers[i], NULL);

	printf("mode=%s\n", mode_names[mode]);
	printf("start_ns=%llu\nend_ns=%llu\n", (unsigned long long)start_ns, (unsigned long long)end_ns);
	switch (mode) {
	case M_SOFTIRQ:
		printf("cpu=%ld\nflood_cpu=%ld\n", opt_cpu, opt_flood_cpu);
		printf("start_mono_ns=%llu\nend_mono_ns=%llu\n", (unsigned long long)start_mono,
		       (unsigned long long)end_mono);
		printf("spun_ns=%llu\n", (unsigned long long)spun_ns);
		printf("lost_ns=%llu\n", (unsigned long long)lost_ns);
		printf("gaps=%llu\n", (unsigned long long)n_gaps);
		printf("max_gap_ns=%llu\n", (unsigned long long)max_gap_ns);
		printf("irq_lost_ns=%llu\nirq_gaps=%llu\n", (unsigned long long)(lost_ns - switched_ns),
		       (unsigned long long)(n_gaps - n_switched));
		printf("switched_lost_ns=%llu\nswitched_gaps=%llu\n", (unsigned long long)switched_ns,
		       (unsigned long long)n_switched);
		printf("sent=%llu\n", (unsigned long long)sent);
		printf("netrx_c=%lld\n", delta(netrx1, netrx0));
		printf("rps_ipis_c=%lld\n", delta(sn1.received_rps, sn0.received_rps));
		printf("rx_packets_c=%lld\n", delta(sn1.processed, sn0.processed));
		printf("udp_rcvbuf_errors=%lld\n", delta(udp_stat("RcvbufErrors"), rcverr0));
		break;
	case M_RECLAIM:
		memcg_read(&mc1);
		printf("bytes=%llu\n", (unsigned long long)(bytes_written + bytes_read));
		printf("bytes_written=%llu\nbytes_read=%llu\n", (unsigned long long)bytes_written,
		       (unsigned long long)bytes_read);
		printf("passes=%llu\n", (unsigned long long)passes);
		printf("write_ns=%llu\nread_ns=%llu\nmax_call_ns=%llu\n", (unsigned long long)write_ns,
		       (unsigned long long)read_ns, (unsigned long long)max_call_ns);
		printf("memcg=v%d\nlimit=%lld\n", cg.version, cg.limit);
		if (mc0.failcnt >= 0)
			printf("failcnt=%lld\n", delta(mc1.failcnt, mc0.failcnt));
		if (mc0.events_max >= 0)
			printf("events_max=%lld\n", delta(mc1.events_max, mc0.events_max));
		for (size_t i = 0; i < N_STAT_KEYS; i++)
			if (mc0.stat[i] >= 0)
				printf("%s=%lld\n", stat_keys[i], delta(mc1.stat[i], mc0.stat[i]));
		break;
	case M_FAULTS:
		printf("mb=%ld\nrounds=%llu\npages=%llu\n", opt_mb, (unsigned long long)rounds,
		       (unsigned long long)pages_touched);
		printf("minflt=%llu\nmajflt=%llu\n", (unsigned long long)minflt,
		       (unsigned long long)majflt);
		printf("fault_ns=%llu\n", (unsigned long long)fault_hist.sum);
		printf("fault_max_ns=%llu\n", (unsigned long long)fault_hist.max);
		printf("fault_p99_ns=%llu\n", (unsigned long long)hist_pct(&fault_hist, 0.99));
		break;
	case M_LOCK:
		printf("threads=%ld\ncpu=%ld\n", opt_threads, opt_cpu);
		printf("iterations=%llu\nmapper_iterations=%llu\n", (unsigned long long)iterations,
		       (unsigned long long)mapper_iterations);
		printf("max_ns=%llu\nmax_op=%s\n", (unsigned long long)max_ns, max_op);
		printf("blocked_ns=%llu\nnvcsw=%llu\nnivcsw=%llu\n", (unsigned long long)blocked_ns,
		       (unsigned long long)n_nvcsw, (unsigned long long)n_nivcsw);
		for (int i = 0; i < N_OPS; i++)
			printf("%s_blocked=%llu\n", op_names[i], (unsigned long long)op_blocked[i]);
		hist_print("mmap", &mmap_hist);
		hist_print("fault", &touch_hist);
		hist_print("munmap", &munmap_hist);
		break;
	}
	return work_failed ? 1 : 0;
}
