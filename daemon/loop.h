/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The one epoll loop of the daemon. It knows fds and callbacks, nothing of what they
 * are: the modules that own an fd register an io_source for it.
 */
#ifndef HOSTPROF_LOOP_H
#define HOSTPROF_LOOP_H

#include <stdbool.h>
#include <stdint.h>

struct loop;

/* Something the loop watches: data.ptr of each epoll registration points here. */
struct io_source {
	int fd;
	int (*dispatch)(struct io_source *src, uint32_t events); /* < 0 stops the loop */
};

struct loop *loop_new(void); /* NULL + errno */
void loop_free(struct loop *l);

int loop_add(struct loop *l, struct io_source *src, uint32_t events);
int loop_mod(struct loop *l, struct io_source *src, uint32_t events);
void loop_del(struct loop *l, struct io_source *src);

/* Called after each batch of events (e.g. to free what a dispatch closed). One. */
void loop_set_after_batch(struct loop *l, void (*fn)(void *ud), void *ud);

/* Runs until loop_quit() or a dispatch fails (its -errno is returned). */
int loop_run(struct loop *l);
/* One batch: waits up to timeout_ms (epoll_wait's: -1 for ever, 0 not at all), dispatches
 * what came and calls the after-batch function. Returns the events dispatched, or the
 * -errno of a dispatch that failed. For a caller that drives the loop itself (tests). */
int loop_iterate(struct loop *l, int timeout_ms);
void loop_quit(struct loop *l);

uint64_t now_boottime_ns(void);

#endif
