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
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "framing.h"
#include "log.h"
#include "loop.h"
#include "macro.h"
#include "snapjob.h"

struct snapjob {
	struct io_source io;
	struct loop *loop;
	unsigned cpu_limit_s;
	pid_t pid;
	struct hp_buf buf;
	snapjob_done_fn done;
	void *ud;
	bool cancelled;
	bool oom;
	struct snapjob *next;
};

static struct snapjob *jobs; /* running, for cancel-all at exit */

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

static void job_free(struct snapjob *j)
{
	unlink_job(j);
	if (j->io.fd >= 0) {
		loop_del(j->loop, &j->io);
		close(j->io.fd);
	}
	if (j->pid > 0) {
		kill(j->pid, SIGKILL);
		(void)waitpid(j->pid, NULL, 0);
	}
	hp_buf_free(&j->buf);
	free(j);
}

static void finish(struct snapjob *j)
{
	int32_t status = -EIO;
	uint64_t want = 0;
	int wstatus = 0;
	bool timed_out = false;
	uint8_t *data;
	size_t len;

	if (j->pid > 0 && waitpid(j->pid, &wstatus, 0) == j->pid) {
		j->pid = 0;
		if (WIFSIGNALED(wstatus) && WTERMSIG(wstatus) == SIGXCPU) {
			log_error("snapshot job: the child used up its %u s of CPU time and was killed", j->cpu_limit_s);
			timed_out = true;
		} else if (WIFSIGNALED(wstatus) && WTERMSIG(wstatus) == SIGKILL) {
			log_error("snapshot job: the child was killed (SIGKILL: the OOM killer, or 1 s past its %u s of CPU)",
				  j->cpu_limit_s);
		} else if (WIFSIGNALED(wstatus)) {
			log_error("snapshot job: the child died of signal %d", WTERMSIG(wstatus));
		}
	}
	if (timed_out)
		status = -ETIME;
	else if (j->oom)
		status = -ENOMEM;
	else if (hp_buf_pending(&j->buf) >= sizeof(status))
		memcpy(&status, j->buf.data + j->buf.off, sizeof(status));
	if (status >= 0) {
		hp_buf_consume(&j->buf, sizeof(status));
		if (hp_buf_pending(&j->buf) >= sizeof(want))
			memcpy(&want, j->buf.data + j->buf.off, sizeof(want));
		hp_buf_consume(&j->buf, sizeof(want));
		len = hp_buf_pending(&j->buf);
		if (len != want) {
			log_error("snapshot job: the child sent %zu of %llu bytes", len, (unsigned long long)want);
			status = -EIO;
		}
	}
	if (status >= 0) {
		data = malloc(len ? len : 1);
		if (data)
			memcpy(data, j->buf.data + j->buf.off, len);
		else
			status = -ENOMEM;
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
		ssize_t n;

		if (hp_buf_reserve(&j->buf, 256 * 1024) < 0) {
			j->oom = true;
			break;
		}
		n = read(src->fd, j->buf.data + j->buf.len, j->buf.cap - j->buf.len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return 0;
		if (n <= 0)
			break;
		j->buf.len += n;
	}
	finish(j);
	return 0;
}

int snapjob_start(struct loop *loop, unsigned cpu_limit_s, snapjob_work_fn work, void *arg, snapjob_done_fn done, void *ud,
		  struct snapjob **ret)
{
	struct snapjob *j;
	int fds[2], r;
	pid_t pid;

	j = calloc(1, sizeof(*j));
	if (!j)
		return -ENOMEM;
	j->io.fd = -1;
	if (pipe2(fds, O_CLOEXEC) < 0) {
		free(j);
		return negative_errno();
	}
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		r = negative_errno();
		close(fds[0]);
		close(fds[1]);
		free(j);
		return r;
	}
	if (pid == 0) {
		struct hp_buf out = {};
		int32_t status;

		struct rlimit cpu = { cpu_limit_s, cpu_limit_s + 1 }, core = { 0, 0 };

		/* the child: compute, write, exit; SIGXCPU past its CPU time, SIGKILL a second later */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		prctl(PR_SET_NAME, "hostprofd-snap");
		(void)setrlimit(RLIMIT_CORE, &core);
		if (cpu_limit_s)
			(void)setrlimit(RLIMIT_CPU, &cpu);
		close(fds[0]);
		signal(SIGPIPE, SIG_IGN);
		status = work(arg, &out);
		write_all_blocking(fds[1], &status, sizeof(status));
		if (status >= 0) {
			uint64_t len = hp_buf_pending(&out);

			write_all_blocking(fds[1], &len, sizeof(len));
			write_all_blocking(fds[1], out.data + out.off, len);
		}
		_exit(0);
	}
	close(fds[1]);
	(void)fcntl(fds[0], F_SETFL, O_NONBLOCK);
	j->loop = loop;
	j->cpu_limit_s = cpu_limit_s;
	j->pid = pid;
	j->done = done;
	j->ud = ud;
	j->io.fd = fds[0];
	j->io.dispatch = on_pipe;
	r = loop_add(loop, &j->io, EPOLLIN);
	if (r < 0) {
		close(j->io.fd);
		j->io.fd = -1;
		job_free(j);
		return r;
	}
	j->next = jobs;
	jobs = j;
	if (ret)
		*ret = j;
	return 0;
}

void snapjob_cancel(struct snapjob *j)
{
	if (j)
		j->cancelled = true; /* it finishes on its own; nobody is told */
}

void snapjob_kill_all(void)
{
	while (jobs)
		job_free(jobs);
}
