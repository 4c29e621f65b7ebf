// SPDX-License-Identifier: GPL-2.0-only
/*
 * ftrace-record: the peer "ftrace drained the way trace-cmd record drains it", without
 * trace-cmd (which needs /proc/sys/kernel/ftrace_enabled, not writable here).
 *
 *   ftrace-record [-t TRACEFS] [-i INSTANCE] [-e SYSTEM/EVENT]... -o DIR -- COMMAND...
 *
 * It makes a tracefs instance (default "hostprof-bench": the top-level buffer stays as
 * it was), enables the events (default sched/sched_switch and sched/sched_wakeup), and
 * for each CPU starts a reader thread that does what trace-cmd's recorder does: poll(2)
 * on per_cpu/cpuN/trace_pipe_raw (the kernel wakes it once buffer_percent of the buffer
 * is full, or after 1 s), then splice(2) the full pages into a pipe and from the pipe
 * into DIR/cpuN.raw, until nothing is left. Then it turns tracing on, runs COMMAND,
 * and when COMMAND exits turns tracing off, drains what is left, disables the events,
 * removes the instance and prints one line:
 *   ftrace-record: bytes=N entries=N overrun=N dropped=N
 * (bytes written, and the sums of per_cpu/cpuN/stats). It exits with COMMAND's status.
 * SIGINT/SIGTERM end COMMAND and clean up the same way.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAX_EVENTS 16
#define MAX_CPUS 1024

struct reader {
	int cpu;
	int in_fd, out_fd, pipe_fd[2];
	uint64_t bytes;
	pthread_t thread;
	int err;
};

static const char *tracefs = "/sys/kernel/tracing";
static const char *instance = "hostprof-bench";
static const char *events[MAX_EVENTS];
static int nr_events;
static char inst_dir[1024];
static _Atomic int stopping;
static volatile sig_atomic_t got_signal;
static pid_t child = -1;

static int write_file(const char *dir, const char *name, const char *val)
{
	char path[4096];
	int fd, r = 0;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (write(fd, val, strlen(val)) < 0)
		r = -errno;
	close(fd);
	return r;
}

/* Move whatever full pages there are. */
static int drain(struct reader *rd)
{
	for (;;) {
		ssize_t n = splice(rd->in_fd, NULL, rd->pipe_fd[1], NULL, 64 * 4096,
				   SPLICE_F_MOVE | SPLICE_F_NONBLOCK);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return 0;
		if (n < 0)
			return -errno;
		if (n == 0)
			return 0;
		while (n > 0) {
			ssize_t m = splice(rd->pipe_fd[0], NULL, rd->out_fd, NULL, n, SPLICE_F_MOVE);

			if (m < 0 && errno == EINTR)
				continue;
			if (m <= 0)
				return m < 0 ? -errno : -EIO;
			n -= m;
			rd->bytes += m;
		}
	}
}

/* After tracing is off: the last, partial page (read(2) returns it, splice does not). */
static void flush(struct reader *rd)
{
	char page[65536];
	ssize_t n;

	drain(rd);
	while ((n = read(rd->in_fd, page, sizeof(page))) > 0)
		if (write(rd->out_fd, page, n) == n)
			rd->bytes += n;
}

static void *run_reader(void *arg)
{
	struct reader *rd = arg;
	struct pollfd pfd = { .fd = rd->in_fd, .events = POLLIN };

	while (!atomic_load(&stopping)) {
		int r = poll(&pfd, 1, 1000);

		if (r < 0 && errno != EINTR) {
			rd->err = -errno;
			return NULL;
		}
		r = drain(rd);
		if (r < 0) {
			rd->err = r;
			return NULL;
		}
	}
	return NULL;
}

static void on_signal(int sig)
{
	got_signal = sig;
	if (child > 0)
		kill(child, SIGTERM);
}

static uint64_t stat_field(const char *stats, const char *key)
{
	const char *p = strstr(stats, key);

	return p ? strtoull(p + strlen(key), NULL, 10) : 0;
}

int main(int argc, char **argv)
{
	const char *outdir = NULL;
	struct reader *rd;
	uint64_t bytes = 0, entries = 0, overrun = 0, dropped = 0;
	struct sigaction sa = { .sa_handler = on_signal };
	long ncpus = sysconf(_SC_NPROCESSORS_CONF);
	int opt, status = 0, rc = 0;
	char path[4096];

	while ((opt = getopt(argc, argv, "+t:i:e:o:h")) != -1) {
		switch (opt) {
		case 't':
			tracefs = optarg;
			break;
		case 'i':
			instance = optarg;
			break;
		case 'e':
			if (nr_events < MAX_EVENTS)
				events[nr_events++] = optarg;
			break;
		case 'o':
			outdir = optarg;
			break;
		case 'h':
			printf("Usage: ftrace-record [-t TRACEFS] [-i INSTANCE] [-e SYSTEM/EVENT]... -o DIR -- COMMAND...\n");
			return 0;
		default:
			return 2;
		}
	}
	if (!outdir || optind >= argc) {
		fprintf(stderr,
			"Usage: ftrace-record [-t TRACEFS] [-i INSTANCE] [-e SYSTEM/EVENT]... -o DIR -- COMMAND...\n");
		return 2;
	}
	if (!nr_events) {
		events[nr_events++] = "sched/sched_switch";
		events[nr_events++] = "sched/sched_wakeup";
	}
	if (ncpus < 1 || ncpus > MAX_CPUS)
		ncpus = 1;

	snprintf(inst_dir, sizeof(inst_dir), "%s/instances/%s", tracefs, instance);
	if (mkdir(inst_dir, 0700) < 0) {
		fprintf(stderr, "ftrace-record: cannot make %s: %s\n", inst_dir, strerror(errno));
		return 1;
	}
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	write_file(inst_dir, "tracing_on", "0");
	for (int i = 0; i < nr_events; i++) {
		char name[512];

		snprintf(name, sizeof(name), "events/%s/enable", events[i]);
		if (write_file(inst_dir, name, "1") < 0) {
			fprintf(stderr, "ftrace-record: cannot enable %s\n", events[i]);
			rc = 1;
			goto out_events;
		}
	}

	rd = calloc(ncpus, sizeof(*rd));
	if (!rd) {
		rc = 1;
		goto out_events;
	}
	for (int cpu = 0; cpu < ncpus; cpu++) {
		rd[cpu].cpu = cpu;
		rd[cpu].in_fd = rd[cpu].out_fd = rd[cpu].pipe_fd[0] = rd[cpu].pipe_fd[1] = -1;
		snprintf(path, sizeof(path), "%s/per_cpu/cpu%d/trace_pipe_raw", inst_dir, cpu);
		rd[cpu].in_fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
		if (rd[cpu].in_fd < 0)
			continue; /* offline CPU */
		snprintf(path, sizeof(path), "%s/cpu%d.raw", outdir, cpu);
		rd[cpu].out_fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
		if (rd[cpu].out_fd < 0 || pipe2(rd[cpu].pipe_fd, O_CLOEXEC) < 0) {
			fprintf(stderr, "ftrace-record: cannot open %s: %s\n", path, strerror(errno));
			rc = 1;
			goto out_readers;
		}
		fcntl(rd[cpu].pipe_fd[0], F_SETPIPE_SZ, 1 << 20);
		if (pthread_create(&rd[cpu].thread, NULL, run_reader, &rd[cpu])) {
			rd[cpu].in_fd = -1;
			rc = 1;
			goto out_readers;
		}
	}

	write_file(inst_dir, "tracing_on", "1");
	child = fork();
	if (child == 0) {
		execvp(argv[optind], argv + optind);
		fprintf(stderr, "ftrace-record: cannot run %s: %s\n", argv[optind], strerror(errno));
		_exit(127);
	}
	if (child < 0) {
		rc = 1;
	} else {
		while (waitpid(child, &status, 0) < 0 && errno == EINTR)
			;
		rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
	}
	write_file(inst_dir, "tracing_on", "0");

out_readers:
	atomic_store(&stopping, 1);
	for (int cpu = 0; cpu < ncpus; cpu++) {
		char stats[1024];
		ssize_t n;
		int fd;

		if (rd[cpu].in_fd < 0)
			continue;
		if (rd[cpu].thread)
			pthread_join(rd[cpu].thread, NULL);
		if (rd[cpu].out_fd >= 0)
			flush(&rd[cpu]);
		if (rd[cpu].err)
			fprintf(stderr, "ftrace-record: cpu%d: %s\n", cpu, strerror(-rd[cpu].err));
		bytes += rd[cpu].bytes;
		snprintf(path, sizeof(path), "%s/per_cpu/cpu%d/stats", inst_dir, cpu);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd >= 0) {
			n = read(fd, stats, sizeof(stats) - 1);
			if (n > 0) {
				stats[n] = 0;
				entries += stat_field(stats, "entries: ");
				overrun += stat_field(stats, "overrun: ");
				dropped += stat_field(stats, "dropped events: ");
			}
			close(fd);
		}
		close(rd[cpu].in_fd);
		if (rd[cpu].out_fd >= 0)
			close(rd[cpu].out_fd);
		if (rd[cpu].pipe_fd[0] >= 0) {
			close(rd[cpu].pipe_fd[0]);
			close(rd[cpu].pipe_fd[1]);
		}
	}
	free(rd);
out_events:
	for (int i = 0; i < nr_events; i++) {
		char name[512];

		snprintf(name, sizeof(name), "events/%s/enable", events[i]);
		write_file(inst_dir, name, "0");
	}
	if (rmdir(inst_dir) < 0)
		fprintf(stderr, "ftrace-record: cannot remove %s: %s\n", inst_dir, strerror(errno));
	printf("ftrace-record: bytes=%llu entries=%llu overrun=%llu dropped=%llu\n",
	       (unsigned long long)bytes, (unsigned long long)entries, (unsigned long long)overrun,
	       (unsigned long long)dropped);
	if (got_signal && !rc)
		rc = 128 + got_signal;
	return rc;
}
