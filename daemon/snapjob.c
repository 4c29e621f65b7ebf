// SPDX-License-Identifier: GPL-2.0-only
/*
 * Snapshot jobs: the work of a snapshot (sorting, symbolizing, packing, exporting: up to
 * a second for a busy process) runs in a forked child, so the daemon's loop goes on
 * draining the ring buffers meanwhile and nothing is dropped for it.
 *
 * The child sees the daemon's memory as it was at the fork (copy-on-write: the parent
 * keeps appending to its own pages), runs the job's work function, writes
 * [int32 status][uint64 length][bytes...] into a pipe and exits. The length, not the
 * child's exit status, says the bytes are complete (a child under valgrind exits 99 for
 * the memory it never freed before _exit). The parent reads the pipe from its
 * epoll loop, non-blocking, and calls the job's done function with the bytes.
 *
 * hostprof must never cause the stalls it reports (the loop keeps its own priority: it
 * must keep draining). The child is
 * - born off the CPUs of the dispatch threads, where other CPUs are allowed: it is
 *   runnable as fork returns, at the daemon's priority, and a task the scheduler puts on
 *   a busy CPU may hold it for a slice (milliseconds) before it could lower itself; so
 *   the parent forks with that affinity, which the child copies, and takes its own back;
 * - put at nice 19 under SCHED_BATCH by the parent as soon as fork returns there (not
 *   SCHED_IDLE: the scheduler counts a CPU that runs only idle-policy tasks as idle and
 *   places waking tasks there, a dispatch thread among them: in e2e-causes' migrate
 *   scenario a job took over 1 ms from it in 1 run of 4 so, 1 in 13 at nice 19);
 * - moved off a dispatch thread's CPUs again, each tick of the loop, where that thread's
 *   affinity changed since the fork (snapjob_place_all());
 * - in a session of its own whose autogroup is at nice 19 too, its own first act: with
 *   autogroups a task's nice and policy weigh only against its own session's tasks, and
 *   a job left in the daemon's session would compete with the trainer's as an equal.
 * What could not be set is logged once per cause: the parent's own failures at once, the
 * child's ahead of its status ([uint32 placement][int32 errno]...[int32 status]...). A
 * unit whose system-call filter refuses setpriority(2), sched_setscheduler(2),
 * sched_setaffinity(2) or setsid(2) shows there, not in a silent slowdown of the trainer.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <malloc.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include "framing.h"
#include "hugepage.h"
#include "log.h"
#include "loop.h"
#include "macro.h"
#include "prefault.h"
#include "snapjob.h"

#define PLACE_CAUSES 5 /* SNAPJOB_PLACE_*, below */
/* the child's header: [uint32 placement][int32 errno]...[int32 status][uint64 length] */
#define SNAPJOB_HDR_MAX (sizeof(uint32_t) + sizeof(int32_t[PLACE_CAUSES]) + sizeof(int32_t) + sizeof(uint64_t))

struct snapjob {
	struct io_source io; /* the pipe from the child */
	struct loop *loop;
	unsigned cpu_limit_s;
	pid_t pid; /* 0: not forked yet, or reaped */
	uint8_t hdr[SNAPJOB_HDR_MAX]; /* the child's header */
	size_t hdr_len;
	uint8_t *data; /* its bytes, read straight in once the header gave their length */
	uint64_t want, got, past; /* past: bytes it sent past them (an error) */
	bool header_read;
	snapjob_done_fn done;
	void *ud;
	bool cancelled;
	bool oom;
	bool learn; /* forked with a learn hook: its bytes end in [learned][uint64 length] */
	/* until the fork (the gate was closed): what to fork with, and a timer to try again */
	snapjob_work_fn work;
	void *arg;
	void (*arg_free)(void *arg);
	cpu_set_t avoid;
	bool has_avoid;
	struct io_source retry;
	uint64_t deferred_ns; /* CLOCK_MONOTONIC, when the gate was first found closed */
	struct snapjob *next;
};

static struct snapjob *jobs; /* forked or waiting to be, for cancel-all at exit */

/* What must hold still while the loop forks (snapjob_set_fork_gate()). */
static struct {
	int (*begin)(void *ud);
	void (*end)(void *ud);
	void *ud;
} gate;

/* What a child found that the daemon keeps (snapjob_set_learn()). */
static struct {
	void (*produce)(void *ud, uint8_t **ret, size_t *ret_len);
	void (*consume)(void *ud, const uint8_t *data, size_t len);
	void *ud;
} learn;

#define SNAPJOB_RETRY_NS (5 * 1000 * 1000ULL)  /* the gate tried again every 5 ms */
#define SNAPJOB_DEFER_NS (2500 * 1000 * 1000ULL) /* forked anyway after 2.5 s */
/* The pipe from the child: in the default 64 KiB, a 9 MiB snapshot blocked the child 140
 * times, each until the loop came round to read it: 270 ms of its 830 ms (bench trainload,
 * 10 s window). 1 MiB is the default fs.pipe-max-size, what any process may ask for, and
 * 256 of the 16384 pages a user may hold in pipes (fs.pipe-user-pages-soft). */
#define SNAPJOB_PIPE_SIZE (1024 * 1024)

/* What a child could not set up (SNAPJOB_PLACE_*): in the child, its own; in the
 * parent, what was logged already. */
#define SNAPJOB_PLACE_NICE 0x1
#define SNAPJOB_PLACE_BATCH 0x2
#define SNAPJOB_PLACE_AFFINITY 0x4
#define SNAPJOB_PLACE_CPULIMIT 0x8
#define SNAPJOB_PLACE_AUTOGROUP 0x10
static uint32_t place_failed;          /* child: what failed */
static int32_t place_errno[PLACE_CAUSES]; /* child: with which errno */
static uint32_t place_logged;          /* parent: what was logged already */

static void place_fail(uint32_t what, int err)
{
	for (unsigned b = 0; b < PLACE_CAUSES; b++)
		if (what == 1u << b && !(place_failed & what))
			place_errno[b] = err;
	place_failed |= what;
}

/* In the child: a session and autogroup of its own at nice 19. A kernel without
 * autogroups has no /proc/self/autogroup: nothing to lower there. */
static void lower_autogroup(void)
{
	int fd;

	if (setsid() < 0) {
		place_fail(SNAPJOB_PLACE_AUTOGROUP, errno);
		return;
	}
	fd = open("/proc/self/autogroup", O_WRONLY | O_CLOEXEC);
	if (fd < 0) {
		if (errno != ENOENT)
			place_fail(SNAPJOB_PLACE_AUTOGROUP, errno);
		return;
	}
	if (write(fd, "19", 2) < 0)
		place_fail(SNAPJOB_PLACE_AUTOGROUP, errno);
	close(fd);
}

/* The task pid (0: the calling thread) off the CPUs in avoid, where it may run on
 * others of those in allowed (NULL: its own). Its mask before, into ret_orig. Returns 1
 * when it moved, 0 when it stays (every CPU it may use is to be avoided, or none), -errno. */
static int leave_cpus(pid_t pid, const cpu_set_t *allowed, const cpu_set_t *avoid, cpu_set_t *ret_orig)
{
	cpu_set_t cur, keep;
	int n;

	if (sched_getaffinity(pid, sizeof(cur), &cur) < 0)
		return negative_errno();
	if (allowed)
		cur = *allowed;
	CPU_ZERO(&keep);
	for (int c = 0; c < CPU_SETSIZE; c++)
		if (CPU_ISSET(c, &cur) && !CPU_ISSET(c, avoid))
			CPU_SET(c, &keep);
	n = CPU_COUNT(&keep);
	if (!n || n == CPU_COUNT(&cur))
		return 0;
	if (sched_setaffinity(pid, sizeof(keep), &keep) < 0)
		return negative_errno();
	if (ret_orig)
		*ret_orig = cur;
	return 1;
}

/* In the parent: what a child (or the parent, for it) could not set, once per cause. */
static void log_placement(uint32_t failed, const int32_t errs[PLACE_CAUSES])
{
	static const char *const what[PLACE_CAUSES] = { "lower their priority to nice 19 (setpriority)",
					    "switch to SCHED_BATCH (sched_setscheduler)",
					    "move off the dispatch threads' CPUs (sched_setaffinity)",
					    "limit their CPU time (setrlimit)",
					    "lower their session's autogroup to nice 19 (setsid, /proc/self/autogroup)" };

	for (unsigned b = 0; b < PLACE_CAUSES; b++) {
		if (!(failed & (1u << b)) || (place_logged & (1u << b)))
			continue;
		place_logged |= 1u << b;
		log_warning_errno(-errs[b],
				  "Snapshot jobs cannot %s: %m; they may take CPU time from the watched threads "
				  "(a unit's SystemCallFilter= must allow it), ignoring",
				  what[b]);
	}
}

/* In the parent: one cause it could not set for a child (err: -errno). */
static void log_parent_placement(uint32_t what, int err)
{
	int32_t errs[PLACE_CAUSES] = {};

	for (unsigned b = 0; b < PLACE_CAUSES; b++)
		if (what == 1u << b)
			errs[b] = -err;
	log_placement(what, errs);
}

/* In the parent, as soon as fork returns: the child at nice 19 under SCHED_BATCH. */
static void lower_child(pid_t pid)
{
	struct sched_param sp = { .sched_priority = 0 };

	if (setpriority(PRIO_PROCESS, pid, 19) < 0)
		log_parent_placement(SNAPJOB_PLACE_NICE, -errno);
	if (sched_setscheduler(pid, SCHED_BATCH, &sp) < 0)
		log_parent_placement(SNAPJOB_PLACE_BATCH, -errno);
}

static void write_all_blocking(int fd, const void *p, size_t n)
{
	const uint8_t *b = p;

	while (n) {
		ssize_t w = write(fd, b, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			_exit(1);
		b += w;
		n -= w;
	}
}

static void unlink_job(struct snapjob *j)
{
	for (struct snapjob **pp = &jobs; *pp; pp = &(*pp)->next)
		if (*pp == j) {
			*pp = j->next;
			break;
		}
}

static void stop_retry(struct snapjob *j)
{
	if (j->retry.fd < 0)
		return;
	loop_del(j->loop, &j->retry);
	close(j->retry.fd);
	j->retry.fd = -1;
}

static void job_free(struct snapjob *j)
{
	unlink_job(j);
	stop_retry(j);
	if (j->arg_free && j->arg)
		j->arg_free(j->arg);
	if (j->io.fd >= 0) {
		loop_del(j->loop, &j->io);
		close(j->io.fd);
	}
	if (j->pid > 0) {
		kill(j->pid, SIGKILL);
		(void)waitpid(j->pid, NULL, 0);
	}
	free(j->data);
	free(j);
}

/* The bytes of the header in hdr ([uint32 placement][int32 errno]...[int32 status], and
 * [uint64 length] after a status >= 0), or 0 while it is incomplete; *ret_want: that
 * length (0 after a status < 0). */
static size_t header_size(const struct snapjob *j, uint64_t *ret_want)
{
	size_t have = j->hdr_len, n = sizeof(uint32_t);
	uint32_t placement;
	int32_t status;

	*ret_want = 0;
	if (have < n)
		return 0;
	memcpy(&placement, j->hdr, sizeof(placement));
	if (placement)
		n += sizeof(int32_t[PLACE_CAUSES]);
	if (have < n + sizeof(status))
		return 0;
	memcpy(&status, j->hdr + n, sizeof(status));
	n += sizeof(status);
	if (status < 0)
		return n;
	if (have < n + sizeof(*ret_want))
		return 0;
	memcpy(ret_want, j->hdr + n, sizeof(*ret_want));
	return n + sizeof(*ret_want);
}

/*
 * Once the header is in: a buffer for the child's bytes, of the length it announced, and
 * what of them came with the header moved there. A 10 s window of a busy process is
 * ~9 MiB: read into a buffer that grows, it was copied twice more on the loop's thread
 * (growing, then out to done), into pages faulted in one by one (bench: ~35 ms of the
 * loop's time a snapshot).
 */
static void take_header(struct snapjob *j, size_t hsize, uint64_t want)
{
	size_t extra = j->hdr_len - hsize;

	j->header_read = true;
	j->hdr_len = hsize; /* the header stays for finish() */
	if (!want) {
		j->past = extra;
		return;
	}
	j->data = malloc(want);
	if (!j->data) {
		j->oom = true;
		return;
	}
	prefault(j->data, want);
	j->want = want;
	j->got = MIN((uint64_t)extra, want);
	j->past = extra - j->got;
	memcpy(j->data, j->hdr + hsize, j->got);
}

static void finish(struct snapjob *j)
{
	int32_t status = -EIO;
	uint32_t placement = 0;
	int wstatus = 0;
	bool timed_out = false;
	uint8_t *data;
	size_t len;

	if (j->oom && j->pid > 0)
		kill(j->pid, SIGKILL); /* it may be blocked writing what will not be read */
	if (j->pid > 0 && waitpid(j->pid, &wstatus, 0) == j->pid) {
		j->pid = 0;
		if (WIFSIGNALED(wstatus) && WTERMSIG(wstatus) == SIGXCPU) {
			log_error("snapshot job: the child used up its %u s of CPU time and was killed", j->cpu_limit_s);
			timed_out = true;
		} else if (j->oom) {
			log_error("snapshot job: no memory for the child's result, which was killed");
		} else if (WIFSIGNALED(wstatus) && WTERMSIG(wstatus) == SIGKILL) {
			log_error("snapshot job: the child was killed (SIGKILL: the OOM killer, or 1 s past its %u s of CPU)",
				  j->cpu_limit_s);
		} else if (WIFSIGNALED(wstatus)) {
			log_error("snapshot job: the child died of signal %d", WTERMSIG(wstatus));
		}
	}
	if (!timed_out && !j->oom && j->header_read) {
		size_t at = 0;

		memcpy(&placement, j->hdr, sizeof(placement));
		at += sizeof(placement);
		if (placement) {
			int32_t errs[PLACE_CAUSES];

			memcpy(errs, j->hdr + at, sizeof(errs));
			at += sizeof(errs);
			log_placement(placement, errs);
		}
		memcpy(&status, j->hdr + at, sizeof(status));
		if (status >= 0 && (j->got != j->want || j->past)) {
			log_error("snapshot job: the child sent %llu of %llu bytes",
				  (unsigned long long)(j->got + j->past), (unsigned long long)j->want);
			status = -EIO;
		}
	} else if (timed_out) {
		status = -ETIME;
	} else if (j->oom) {
		status = -ENOMEM;
	}
	if (status >= 0) {
		/* the bytes go to done as they are; none is a valid (empty) result */
		data = j->data ? j->data : malloc(1);
		len = j->want;
		j->data = NULL;
		if (!data)
			status = -ENOMEM;
	}
	if (status >= 0 && j->learn) {
		/* [result][learned][uint64 its length]: the trailer to the learn hook, the rest to done */
		uint64_t n;

		if (len < sizeof(n)) {
			status = -EIO;
		} else {
			memcpy(&n, data + len - sizeof(n), sizeof(n));
			if (n > len - sizeof(n)) {
				status = -EIO;
			} else {
				len -= sizeof(n) + n;
				if (n && learn.consume)
					learn.consume(learn.ud, data + len, n);
			}
		}
		if (status < 0) {
			log_error("snapshot job: the child's result ended in no trailer");
			free(data);
		}
	}
	if (status < 0) {
		data = NULL;
		len = 0;
	}
	if (!j->cancelled)
		j->done(j->ud, status, data, len);
	else
		free(data);
	job_free(j);
}

static int on_pipe(struct io_source *src, uint32_t events)
{
	struct snapjob *j = (struct snapjob *)src;

	for (;;) {
		uint8_t past[256];
		ssize_t n;

		if (j->data && j->got < j->want)
			n = read(src->fd, j->data + j->got, MIN(j->want - j->got, (uint64_t)SSIZE_MAX));
		else if (!j->header_read)
			n = read(src->fd, j->hdr + j->hdr_len, sizeof(j->hdr) - j->hdr_len);
		else
			n = read(src->fd, past, sizeof(past)); /* past its bytes: counted, an error */
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return 0;
		if (n <= 0)
			break;
		if (j->data && j->got < j->want) {
			j->got += n;
		} else if (!j->header_read) {
			uint64_t want;
			size_t hsize;

			j->hdr_len += n;
			hsize = header_size(j, &want);
			if (hsize)
				take_header(j, hsize, want); /* hdr holds the longest header */
			if (j->oom)
				break;
		} else {
			j->past += n;
		}
	}
	finish(j);
	return 0;
}

/*
 * In the child: its heap grown at once by CHILD_HEAP_BYTES, and that on transparent huge
 * pages (MADV_HUGEPAGE), when the kernel has free blocks of a huge page's size for all of
 * it. A 10 s window of a busy process takes the job ~60 MiB of new memory (columns, sort
 * arrays, packed output, DWARF): in 4 KiB pages that is ~14,000 page faults, each an
 * exception that costs microseconds on a paravirtualized VM (bench trainload, daemons
 * alternated: job CPU 410 -> 280 ms, the request's latency 800 -> 665 ms, medians of 9).
 * Only with free blocks: a huge-page fault in an madvised region otherwise reclaims and
 * compacts memory first (THP defrag "madvise", the default), which can take far longer
 * than the faults it saves (MADV_COLLAPSE, which always does, took 6.6 s once here).
 * Allocations up to 32 MiB (glibc's largest mmap threshold) come from the heap; it is
 * never trimmed (the child exits). Only what is touched is faulted in, a huge page at a
 * time; where THP is off or the memory cannot be had (strict overcommit), the heap stays
 * as it was.
 * First the free memory of the heap the child inherited is given back (malloc_trim, in
 * the child only): the daemon's heap keeps free space at its top and between its blocks
 * (~10 MiB at the bench's load, pages the daemon once touched), and the child's
 * allocations there wrote the parent's pages, a copy-on-write fault per 4 KiB that can
 * never be a huge page (bench trainload, the recorder on slabs: job faults ~3,300 ->
 * ~1,100).
 */
#define CHILD_HEAP_BYTES (96u << 20)
#define CHILD_HEAP_PROBE (31u << 20) /* below the mmap threshold: from the heap */

static void child_heap(void)
{
	size_t huge = huge_pages_free_for(CHILD_HEAP_BYTES);
	uintptr_t lo, hi;
	void *probe;

	if (!huge)
		return;
	(void)mallopt(M_MMAP_THRESHOLD, 32 << 20);
	(void)mallopt(M_TRIM_THRESHOLD, INT_MAX);
	(void)malloc_trim(0);
	(void)mallopt(M_TOP_PAD, CHILD_HEAP_BYTES - CHILD_HEAP_PROBE);
	/* larger than the free chunks a daemon's heap holds, so the heap grows by probe + pad
	 * (where one did hold it, the hint covers part of the heap as it was: no harm) */
	probe = malloc(CHILD_HEAP_PROBE);
	if (!probe)
		return;
	lo = ((uintptr_t)probe + huge - 1) & ~(uintptr_t)(huge - 1);
	hi = (uintptr_t)sbrk(0) & ~(uintptr_t)(huge - 1);
	free(probe);
	(void)mallopt(M_TOP_PAD, 128 * 1024); /* back to the default */
	/* under a sanitizer or valgrind, malloc is not the heap's: probe lies elsewhere */
	if (hi > lo && (uintptr_t)probe < hi)
		(void)madvise((void *)lo, hi - lo, MADV_HUGEPAGE);
}

/* The child: compute, write, exit; SIGXCPU past its CPU time, SIGKILL a second later. */
static _Noreturn void child_main(unsigned cpu_limit_s, snapjob_work_fn work, void *arg, int fd)
{
	struct rlimit cpu = { cpu_limit_s, cpu_limit_s + 1 }, core = { 0, 0 };
	struct hp_buf out = {};
	uint8_t *learned = NULL;
	size_t learned_len = 0;
	int32_t status;

	place_failed = 0;
	memset(place_errno, 0, sizeof(place_errno));
	lower_autogroup();
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	prctl(PR_SET_NAME, "hostprofd-snap");
	(void)setrlimit(RLIMIT_CORE, &core);
	if (cpu_limit_s && setrlimit(RLIMIT_CPU, &cpu) < 0)
		place_fail(SNAPJOB_PLACE_CPULIMIT, errno);
	signal(SIGPIPE, SIG_IGN);
	child_heap();
	status = work(arg, &out);
	if (status >= 0 && learn.produce)
		learn.produce(learn.ud, &learned, &learned_len);
	write_all_blocking(fd, &place_failed, sizeof(place_failed));
	if (place_failed)
		write_all_blocking(fd, place_errno, sizeof(place_errno));
	write_all_blocking(fd, &status, sizeof(status));
	if (status >= 0) {
		uint64_t len = hp_buf_pending(&out), n = learned_len;

		if (learn.produce)
			len += learned_len + sizeof(n);
		write_all_blocking(fd, &len, sizeof(len));
		write_all_blocking(fd, out.data + out.off, hp_buf_pending(&out));
		if (learn.produce) {
			write_all_blocking(fd, learned, learned_len);
			write_all_blocking(fd, &n, sizeof(n));
		}
	}
	_exit(0);
}

/* Fork j's child, now. */
static int job_fork(struct snapjob *j)
{
	cpu_set_t orig;
	int fds[2], r, moved = 0;
	pid_t pid;

	if (pipe2(fds, O_CLOEXEC) < 0)
		return negative_errno();
	/* smaller where fs.pipe-max-size is: then the default, only slower */
	(void)fcntl(fds[1], F_SETPIPE_SZ, SNAPJOB_PIPE_SIZE);
	fflush(NULL);
	/* born off the dispatch threads' CPUs (see the top of this file) */
	if (j->has_avoid) {
		moved = leave_cpus(0, NULL, &j->avoid, &orig);
		if (moved < 0)
			log_parent_placement(SNAPJOB_PLACE_AFFINITY, moved);
	}
	j->learn = learn.produce != NULL;
	pid = fork();
	if (pid == 0) {
		close(fds[0]);
		child_main(j->cpu_limit_s, j->work, j->arg, fds[1]);
	}
	if (pid > 0)
		lower_child(pid);
	if (moved > 0 && sched_setaffinity(0, sizeof(orig), &orig) < 0)
		log_warning_errno(-errno, "Failed to give the event loop its CPUs back after a snapshot job's fork: %m, ignoring");
	close(fds[1]);
	if (pid < 0) {
		r = negative_errno();
		close(fds[0]);
		return r;
	}
	j->pid = pid;
	if (j->arg_free)
		j->arg_free(j->arg); /* the child has its copy */
	j->arg = NULL;
	(void)fcntl(fds[0], F_SETFL, O_NONBLOCK);
	j->io.fd = fds[0];
	j->io.dispatch = on_pipe;
	return loop_add(j->loop, &j->io, EPOLLIN);
}

/* Fork j's child if the gate lets it, or force. 1: forked; 0: the gate is closed; -errno. */
static int job_try_fork(struct snapjob *j, bool force)
{
	int r;

	if (gate.begin && gate.begin(gate.ud) < 0) {
		if (!force)
			return 0;
		log_warning("Snapshot job: forked while the worker still runs an item %.1f s on: the child may "
			    "inherit a lock held, ignoring",
			    (double)SNAPJOB_DEFER_NS / NSEC_PER_SEC);
	}
	r = job_fork(j);
	if (gate.end)
		gate.end(gate.ud);
	return r < 0 ? r : 1;
}

static uint64_t now_mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * NSEC_PER_SEC + ts.tv_nsec;
}

/* The retry timer of a job waiting for the gate. */
static int on_retry(struct io_source *src, uint32_t events)
{
	struct snapjob *j = (struct snapjob *)((char *)src - offsetof(struct snapjob, retry));
	uint64_t ticks;
	int r;

	(void)!read(src->fd, &ticks, sizeof(ticks));
	if (j->cancelled) {
		if (gate.end)
			gate.end(gate.ud); /* the worker takes items again */
		job_free(j); /* nobody waits for it: it is not made at all */
		return 0;
	}
	r = job_try_fork(j, now_mono_ns() - j->deferred_ns >= SNAPJOB_DEFER_NS);
	if (r == 0)
		return 0;
	stop_retry(j);
	if (r < 0) {
		log_error_errno(r, "Failed to start a snapshot job: %m");
		j->done(j->ud, r, NULL, 0);
		job_free(j);
	}
	return 0;
}

static int defer(struct snapjob *j)
{
	struct itimerspec its = {
		.it_interval = { .tv_nsec = SNAPJOB_RETRY_NS },
		.it_value = { .tv_nsec = SNAPJOB_RETRY_NS },
	};
	int r;

	j->retry.fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	if (j->retry.fd < 0)
		return negative_errno();
	j->retry.dispatch = on_retry;
	if (timerfd_settime(j->retry.fd, 0, &its, NULL) < 0) {
		r = negative_errno();
		close(j->retry.fd);
		j->retry.fd = -1;
		return r;
	}
	r = loop_add(j->loop, &j->retry, EPOLLIN);
	if (r < 0) {
		close(j->retry.fd);
		j->retry.fd = -1;
		return r;
	}
	j->deferred_ns = now_mono_ns();
	return 0;
}

void snapjob_set_learn(void (*produce)(void *ud, uint8_t **ret, size_t *ret_len),
		       void (*consume)(void *ud, const uint8_t *data, size_t len), void *ud)
{
	learn.produce = produce;
	learn.consume = consume;
	learn.ud = ud;
}

void snapjob_set_fork_gate(int (*begin)(void *ud), void (*end)(void *ud), void *ud)
{
	gate.begin = begin;
	gate.end = end;
	gate.ud = ud;
}

int snapjob_start(struct loop *loop, unsigned cpu_limit_s, const cpu_set_t *avoid, snapjob_work_fn work, void *arg,
		  void (*arg_free)(void *arg), snapjob_done_fn done, void *ud, struct snapjob **ret)
{
	struct snapjob *j;
	int r;

	j = calloc(1, sizeof(*j));
	if (!j) {
		if (arg_free)
			arg_free(arg);
		return -ENOMEM;
	}
	*j = (struct snapjob){
		.io.fd = -1,
		.retry.fd = -1,
		.loop = loop,
		.cpu_limit_s = cpu_limit_s,
		.done = done,
		.ud = ud,
		.work = work,
		.arg = arg,
		.arg_free = arg_free,
		.has_avoid = avoid,
	};
	if (avoid)
		j->avoid = *avoid;
	r = job_try_fork(j, false);
	if (r == 0) {
		r = defer(j);
		if (r < 0 && gate.end)
			gate.end(gate.ud); /* it will not wait for the gate */
	}
	if (r < 0) {
		job_free(j); /* arg_free(arg) too */
		return r;
	}
	j->next = jobs;
	jobs = j;
	if (ret)
		*ret = j;
	return 0;
}

bool snapjob_running(void)
{
	return jobs;
}

void snapjob_place_all(const cpu_set_t *avoid)
{
	cpu_set_t loop_cpus;

	if (!jobs || sched_getaffinity(0, sizeof(loop_cpus), &loop_cpus) < 0)
		return;
	for (struct snapjob *j = jobs; j; j = j->next)
		if (j->pid > 0)
			(void)leave_cpus(j->pid, &loop_cpus, avoid, NULL); /* gone meanwhile: it is reaped */
}

void snapjob_cancel(struct snapjob *j)
{
	if (j)
		j->cancelled = true; /* it finishes on its own; nobody is told */
}

void snapjob_kill_all(void)
{
	while (jobs) {
		struct snapjob *j = jobs;

		if (j->pid > 0) {
			kill(j->pid, SIGKILL);
			(void)waitpid(j->pid, NULL, 0);
			j->pid = 0;
		}
		if (!j->pid && j->retry.fd >= 0 && gate.end)
			gate.end(gate.ud); /* it waited for the gate */
		/* its owner frees what it gave the job (a trigger's snapshot, a client's request) */
		if (j->done && !j->cancelled)
			j->done(j->ud, -ECANCELED, NULL, 0);
		job_free(j);
	}
}
