// SPDX-License-Identifier: GPL-2.0-only
/*
 * The one epoll loop: whatever fds the modules register (ring buffers, signalfd, the
 * tick's timerfd, the listening socket and its clients, snapshot jobs' pipes, the
 * worker's eventfd). Nothing here blocks but epoll_wait().
 */
#include <errno.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "loop.h"
#include "macro.h"

struct loop {
	int epoll_fd;
	bool quit;
	void (*after_batch)(void *ud);
	void *after_batch_ud;
};

uint64_t now_boottime_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_BOOTTIME, &ts);
	return ts.tv_sec * NSEC_PER_SEC + ts.tv_nsec;
}

struct loop *loop_new(void)
{
	struct loop *l = calloc(1, sizeof(*l));

	if (!l)
		return NULL;
	l->epoll_fd = epoll_create1(EPOLL_CLOEXEC);
	if (l->epoll_fd < 0) {
		int e = errno;

		free(l);
		errno = e;
		return NULL;
	}
	return l;
}

void loop_free(struct loop *l)
{
	if (!l)
		return;
	close(l->epoll_fd);
	free(l);
}

int loop_add(struct loop *l, struct io_source *src, uint32_t events)
{
	struct epoll_event ev = { .events = events, .data.ptr = src };

	return epoll_ctl(l->epoll_fd, EPOLL_CTL_ADD, src->fd, &ev) < 0 ? -errno : 0;
}

int loop_mod(struct loop *l, struct io_source *src, uint32_t events)
{
	struct epoll_event ev = { .events = events, .data.ptr = src };

	return epoll_ctl(l->epoll_fd, EPOLL_CTL_MOD, src->fd, &ev) < 0 ? -errno : 0;
}

void loop_del(struct loop *l, struct io_source *src)
{
	(void)epoll_ctl(l->epoll_fd, EPOLL_CTL_DEL, src->fd, NULL);
}

void loop_set_after_batch(struct loop *l, void (*fn)(void *ud), void *ud)
{
	l->after_batch = fn;
	l->after_batch_ud = ud;
}

void loop_quit(struct loop *l)
{
	l->quit = true;
}

int loop_iterate(struct loop *l, int timeout_ms)
{
	struct epoll_event events[64];
	int n = epoll_wait(l->epoll_fd, events, ARRAY_SIZE(events), timeout_ms);

	if (n < 0) {
		if (errno == EINTR)
			return 0;
		return log_error_errno(-errno, "epoll_wait failed: %m");
	}
	for (int i = 0; i < n; i++) {
		struct io_source *src = events[i].data.ptr;
		int r = src->dispatch(src, events[i].events);

		if (r < 0)
			return r;
	}
	/* what a dispatch closed is freed only now: a later event of the batch may name it */
	if (l->after_batch)
		l->after_batch(l->after_batch_ud);
	return n;
}

int loop_run(struct loop *l)
{
	while (!l->quit) {
		int r = loop_iterate(l, -1);

		if (r < 0)
			return r;
	}
	return 0;
}
