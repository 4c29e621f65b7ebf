// SPDX-License-Identifier: GPL-2.0-only
/*
 * bench/peakrss: peak resident memory, for the snapshot phase of bench/run.
 *
 *   peakrss run CMD [ARG...]  runs CMD, and once it exits prints "maxrss_kb N" on stderr
 *                             (its getrusage ru_maxrss); exits with its status.
 *   peakrss children PID      until SIGINT/SIGTERM, watches the processes PID forks (the
 *                             daemon's snapshot jobs) and prints "children N hwm_kb H
 *                             rss_at_start_kb S parent_hwm_kb P": how many it saw, the
 *                             largest VmHWM among them, the VmRSS each began with (the
 *                             largest: what they share with PID, copy-on-write), and PID's
 *                             own VmHWM.
 *
 * New processes are found by the last pid the kernel gave out (/proc/loadavg), read
 * every millisecond, so nothing scans /proc; a child's VmHWM only grows, so the last
 * reading before it exits is its peak, to within a millisecond of allocation.
 */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_CHILDREN 64

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static long last_pid(void)
{
	FILE *f = fopen("/proc/loadavg", "re");
	long pid = -1;

	if (f) {
		if (fscanf(f, "%*s %*s %*s %*s %ld", &pid) != 1)
			pid = -1;
		fclose(f);
	}
	return pid;
}

/* A field of /proc/PID/status in kB, or -1. */
static long status_kb(long pid, const char *field)
{
	char path[64], line[256];
	size_t len = strlen(field);
	long v = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%ld/status", pid);
	f = fopen(path, "re");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, field, len) && line[len] == ':') {
			v = strtol(line + len + 1, NULL, 10);
			break;
		}
	fclose(f);
	return v;
}

static long parent_of(long pid)
{
	return status_kb(pid, "PPid"); /* a number without its unit all the same */
}

static int watch_children(long ppid)
{
	struct {
		long pid, hwm;
	} kids[MAX_CHILDREN];
	size_t nkids = 0, seen = 0;
	long last = last_pid(), hwm = 0, start_rss = 0;
	struct timespec ms = { 0, 1000000 };

	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	while (!stop) {
		long now = last_pid();

		for (long pid = last + 1; now > last && pid <= now; pid++) {
			long rss;

			if (parent_of(pid) != ppid || nkids == MAX_CHILDREN)
				continue;
			rss = status_kb(pid, "VmRSS");
			if (rss > start_rss)
				start_rss = rss;
			kids[nkids].pid = pid;
			kids[nkids++].hwm = 0;
			seen++;
		}
		if (now >= 0)
			last = now;
		for (size_t i = 0; i < nkids;) {
			long v = status_kb(kids[i].pid, "VmHWM");

			if (v < 0 || parent_of(kids[i].pid) != ppid) { /* gone */
				kids[i] = kids[--nkids];
				continue;
			}
			if (v > hwm)
				hwm = v;
			i++;
		}
		nanosleep(&ms, NULL);
	}
	printf("children %zu hwm_kb %ld rss_at_start_kb %ld parent_hwm_kb %ld\n", seen, hwm, start_rss,
	       status_kb(ppid, "VmHWM"));
	return 0;
}

static int run(char **argv)
{
	struct rusage ru;
	int status;
	pid_t pid = fork();

	if (pid < 0) {
		perror("peakrss: fork");
		return 127;
	}
	if (pid == 0) {
		execvp(argv[0], argv);
		perror("peakrss: exec");
		_exit(127);
	}
	if (wait4(pid, &status, 0, &ru) < 0) {
		perror("peakrss: wait4");
		return 127;
	}
	fprintf(stderr, "maxrss_kb %ld\n", ru.ru_maxrss);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

int main(int argc, char **argv)
{
	if (argc >= 3 && !strcmp(argv[1], "run"))
		return run(argv + 2);
	if (argc == 3 && !strcmp(argv[1], "children"))
		return watch_children(strtol(argv[2], NULL, 10));
	fprintf(stderr, "usage: peakrss run CMD [ARG...] | peakrss children PID\n");
	return 2;
}
