// SPDX-License-Identifier: GPL-2.0-only
/*
 * The worker (worker.h). One lock guards what the threads share: the queue, the list of
 * finished items and the thread slots.
 *
 * Each thread has a slot. The consumer, the one thread that takes items, is the slot that is
 * IDLE or BUSY; there is at most one. The owner (the thread that dispatches) looks at the
 * running item's deadline whenever it dispatches: past it, the slot becomes STUCK, the item
 * is abandoned, and a new consumer is started in an EMPTY slot if there is one. A STUCK
 * thread that comes back hands its item in as abandoned, then takes the queue over again if
 * nobody holds it, or leaves (EXITED; the owner joins it at its next dispatch).
 *
 * The owner is woken through one epoll fd, worker_fd(), holding an eventfd (written when the
 * finished list stops being empty) and a timerfd (armed, by the owner, at the earliest
 * deadline among the queued and the running items).
 *
 * worker_free() hands what it cannot wait for to the threads still stuck: they are detached,
 * and the last of them to come back (or worker_free itself, if it is later) frees the worker.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "macro.h"
#include "worker.h"

struct item {
	struct item *next;
	worker_work_fn work;
	worker_done_fn done;
	void *arg;
	uint64_t deadline; /* CLOCK_MONOTONIC */
	int r;
};

struct item_list {
	struct item *head, *tail;
	unsigned n;
};

enum slot_state {
	SLOT_EMPTY, /* no thread */
	SLOT_IDLE, /* the consumer, waiting for an item */
	SLOT_BUSY, /* the consumer, running item */
	SLOT_STUCK, /* running item past its deadline */
	SLOT_EXITED, /* its thread has returned: to be joined */
};

struct slot {
	struct worker *w;
	pthread_t thread;
	enum slot_state state;
	struct item *item;
};

struct worker {
	pthread_mutex_t lock;
	pthread_cond_t wake; /* to the consumer: an item was queued, or stop */
	pthread_cond_t left; /* to worker_free: an item finished, or a thread exited */
	struct item_list queue, finished;
	unsigned queue_max;
	struct slot slots[WORKER_THREADS_MAX];
	unsigned refs; /* after worker_free: it and the stuck threads still out; the last frees w */
	bool stopping, orphaned;
	bool fork_pending; /* the owner waits to fork: no new item is taken */
	pid_t owner;
	int epoll_fd, event_fd, timer_fd;
	uint64_t armed; /* the timer's deadline; 0: disarmed */
	uint64_t submitted, completed, rejected, abandoned;
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * NSEC_PER_SEC + ts.tv_nsec;
}

static struct timespec ns_to_timespec(uint64_t ns)
{
	return (struct timespec){ .tv_sec = ns / NSEC_PER_SEC, .tv_nsec = ns % NSEC_PER_SEC };
}

static void list_push(struct item_list *l, struct item *it)
{
	it->next = NULL;
	if (l->tail)
		l->tail->next = it;
	else
		l->head = it;
	l->tail = it;
	l->n++;
}

static struct item *list_pop(struct item_list *l)
{
	struct item *it = l->head;

	if (!it)
		return NULL;
	l->head = it->next;
	if (!l->head)
		l->tail = NULL;
	l->n--;
	return it;
}

static struct item_list list_take(struct item_list *l)
{
	struct item_list taken = *l;

	*l = (struct item_list){};
	return taken;
}

static void call_done(struct item_list *l, bool cancel)
{
	struct item *it;

	while ((it = list_pop(l))) {
		it->done(it->arg, cancel ? -ECANCELED : it->r);
		free(it);
	}
}

static bool has_consumer(const struct worker *w)
{
	for (size_t i = 0; i < ARRAY_SIZE(w->slots); i++)
		if (w->slots[i].state == SLOT_IDLE || w->slots[i].state == SLOT_BUSY)
			return true;
	return false;
}

/* An item's end, under the lock: to the owner, or (nobody left to tell) dropped with its arg. */
static void finish(struct worker *w, struct item *it, int r)
{
	uint64_t one = 1;

	if (w->orphaned) {
		free(it);
		return;
	}
	it->r = r;
	list_push(&w->finished, it);
	if (w->finished.n == 1)
		(void)!write(w->event_fd, &one, sizeof(one));
}

static void worker_destroy(struct worker *w)
{
	pthread_cond_destroy(&w->left);
	pthread_cond_destroy(&w->wake);
	pthread_mutex_destroy(&w->lock);
	free(w);
}

static void *thread_main(void *arg)
{
	struct slot *sl = arg;
	struct worker *w = sl->w;
	bool last = false;

	pthread_mutex_lock(&w->lock);
	for (;;) {
		struct item *it;
		int r;

		while (!w->stopping && (!w->queue.head || w->fork_pending))
			pthread_cond_wait(&w->wake, &w->lock);
		if (w->stopping)
			break;
		it = list_pop(&w->queue);
		if (now_ns() >= it->deadline) {
			w->abandoned++;
			finish(w, it, -ETIME);
			continue;
		}
		sl->state = SLOT_BUSY;
		sl->item = it;
		pthread_mutex_unlock(&w->lock);
		r = it->work(it->arg);
		pthread_mutex_lock(&w->lock);
		sl->item = NULL;
		if (sl->state == SLOT_BUSY) {
			sl->state = SLOT_IDLE;
			if (now_ns() > it->deadline) {
				w->abandoned++; /* late, though nobody noticed yet */
				r = -ETIME;
			} else {
				w->completed++;
			}
			finish(w, it, r);
			pthread_cond_broadcast(&w->left);
			continue;
		}
		/* abandoned while it ran, and counted then */
		finish(w, it, -ETIME);
		if (w->stopping || has_consumer(w))
			break;
		sl->state = SLOT_IDLE; /* nobody took the queue over: this thread does again */
	}
	if (w->orphaned) {
		last = --w->refs == 0;
	} else {
		sl->state = SLOT_EXITED;
		pthread_cond_broadcast(&w->left);
	}
	pthread_mutex_unlock(&w->lock);
	if (last)
		worker_destroy(w);
	return NULL;
}

/* A thread for an EMPTY slot, under the lock; it blocks no signal less than all (signalfd). */
static int spawn(struct worker *w, struct slot *sl)
{
	sigset_t all, old;
	int r;

	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	sl->w = w;
	sl->state = SLOT_IDLE;
	r = -pthread_create(&sl->thread, NULL, thread_main, sl);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (r < 0) {
		sl->state = SLOT_EMPTY;
		return r;
	}
	(void)pthread_setname_np(sl->thread, "hostprofd-work");
	return 0;
}

/* Under the lock, on the owner: joins the threads that left; starts a consumer if none. */
static void ensure_consumer(struct worker *w)
{
	struct slot *empty = NULL;

	for (size_t i = 0; i < ARRAY_SIZE(w->slots); i++) {
		struct slot *sl = &w->slots[i];

		if (sl->state == SLOT_EXITED) {
			/* it set EXITED under the lock, so it is past its last use of it */
			pthread_join(sl->thread, NULL);
			sl->state = SLOT_EMPTY;
		}
		if (sl->state == SLOT_IDLE || sl->state == SLOT_BUSY)
			return;
		if (sl->state == SLOT_EMPTY && !empty)
			empty = sl;
	}
	/* a failure is tried again at the next submit or dispatch */
	if (empty && !w->stopping)
		(void)spawn(w, empty);
}

/* Under the lock: the timer at the earliest deadline of what is queued or running. */
static void rearm(struct worker *w)
{
	struct itimerspec its = {};
	uint64_t next = UINT64_MAX;

	for (size_t i = 0; i < ARRAY_SIZE(w->slots); i++)
		if (w->slots[i].state == SLOT_BUSY)
			next = MIN(next, w->slots[i].item->deadline);
	for (const struct item *it = w->queue.head; it; it = it->next)
		next = MIN(next, it->deadline);
	if (next == UINT64_MAX)
		next = 0;
	if (next == w->armed)
		return;
	its.it_value = ns_to_timespec(next);
	if (timerfd_settime(w->timer_fd, TFD_TIMER_ABSTIME, &its, NULL) == 0)
		w->armed = next;
}

/* Under the lock: what ran out of budget is abandoned, running or queued. */
static void expire(struct worker *w, uint64_t now)
{
	struct item **pp = &w->queue.head, *prev = NULL;

	for (size_t i = 0; i < ARRAY_SIZE(w->slots); i++) {
		struct slot *sl = &w->slots[i];

		if (sl->state == SLOT_BUSY && now >= sl->item->deadline) {
			sl->state = SLOT_STUCK;
			w->abandoned++;
		}
	}
	while (*pp) {
		struct item *it = *pp;

		if (now < it->deadline) {
			prev = it;
			pp = &it->next;
			continue;
		}
		*pp = it->next;
		if (w->queue.tail == it)
			w->queue.tail = prev;
		w->queue.n--;
		w->abandoned++;
		finish(w, it, -ETIME);
	}
}

struct worker *worker_new(unsigned queue_max)
{
	struct epoll_event ev = { .events = EPOLLIN };
	pthread_condattr_t attr;
	struct worker *w;
	int r;

	if (!queue_max) {
		errno = EINVAL;
		return NULL;
	}
	w = calloc(1, sizeof(*w));
	if (!w)
		return NULL;
	w->queue_max = queue_max;
	w->refs = 1;
	w->owner = getpid();
	pthread_mutex_init(&w->lock, NULL);
	pthread_cond_init(&w->wake, NULL);
	pthread_condattr_init(&attr);
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	pthread_cond_init(&w->left, &attr);
	pthread_condattr_destroy(&attr);
	w->epoll_fd = epoll_create1(EPOLL_CLOEXEC);
	w->event_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	w->timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	if (w->epoll_fd < 0 || w->event_fd < 0 || w->timer_fd < 0)
		goto fail_errno;
	ev.data.fd = w->event_fd;
	if (epoll_ctl(w->epoll_fd, EPOLL_CTL_ADD, w->event_fd, &ev) < 0)
		goto fail_errno;
	ev.data.fd = w->timer_fd;
	if (epoll_ctl(w->epoll_fd, EPOLL_CTL_ADD, w->timer_fd, &ev) < 0)
		goto fail_errno;
	pthread_mutex_lock(&w->lock);
	r = spawn(w, &w->slots[0]);
	pthread_mutex_unlock(&w->lock);
	if (r < 0)
		goto fail;
	return w;

fail_errno:
	r = negative_errno();
fail:
	if (w->epoll_fd >= 0)
		close(w->epoll_fd);
	if (w->event_fd >= 0)
		close(w->event_fd);
	if (w->timer_fd >= 0)
		close(w->timer_fd);
	worker_destroy(w);
	errno = -r;
	return NULL;
}

void worker_free(struct worker *w)
{
	struct item_list queued, finished;
	bool last;

	if (!w || getpid() != w->owner)
		return; /* a forked child's copy: its threads are not there, its lock may be held */
	pthread_mutex_lock(&w->lock);
	w->stopping = true;
	pthread_cond_broadcast(&w->wake);
	queued = list_take(&w->queue);
	/* idle threads leave at once; a running item is waited for while its budget lasts */
	for (;;) {
		uint64_t now = now_ns(), next = UINT64_MAX;
		bool wait = false;

		expire(w, now);
		for (size_t i = 0; i < ARRAY_SIZE(w->slots); i++) {
			const struct slot *sl = &w->slots[i];

			if (sl->state == SLOT_IDLE)
				wait = true;
			if (sl->state == SLOT_BUSY) {
				wait = true;
				next = MIN(next, sl->item->deadline);
			}
		}
		if (!wait)
			break;
		if (next == UINT64_MAX) {
			pthread_cond_wait(&w->left, &w->lock);
		} else {
			struct timespec ts = ns_to_timespec(next);

			pthread_cond_timedwait(&w->left, &w->lock, &ts);
		}
	}
	for (size_t i = 0; i < ARRAY_SIZE(w->slots); i++) {
		struct slot *sl = &w->slots[i];

		if (sl->state == SLOT_EXITED) {
			pthread_join(sl->thread, NULL);
			sl->state = SLOT_EMPTY;
		} else if (sl->state == SLOT_STUCK) {
			pthread_detach(sl->thread);
			w->refs++;
		}
	}
	w->orphaned = w->refs > 1;
	finished = list_take(&w->finished);
	close(w->epoll_fd);
	close(w->event_fd);
	close(w->timer_fd);
	pthread_mutex_unlock(&w->lock);
	/* done may call in: w is stopping, and refuses */
	call_done(&finished, false);
	call_done(&queued, true);
	pthread_mutex_lock(&w->lock);
	last = --w->refs == 0;
	pthread_mutex_unlock(&w->lock);
	if (last)
		worker_destroy(w);
}

int worker_fork_begin(struct worker *w)
{
	bool busy = false;

	if (!w)
		return 0;
	pthread_mutex_lock(&w->lock);
	w->fork_pending = true; /* no thread takes an item until worker_fork_end() */
	for (size_t i = 0; i < WORKER_THREADS_MAX; i++)
		busy |= w->slots[i].state == SLOT_BUSY;
	pthread_mutex_unlock(&w->lock);
	return busy ? -EBUSY : 0;
}

void worker_fork_end(struct worker *w)
{
	if (!w)
		return;
	pthread_mutex_lock(&w->lock);
	w->fork_pending = false;
	pthread_cond_broadcast(&w->wake);
	pthread_mutex_unlock(&w->lock);
}

int worker_fd(const struct worker *w)
{
	return w->epoll_fd;
}

int worker_submit(struct worker *w, uint64_t budget_ns, worker_work_fn work, worker_done_fn done, void *arg)
{
	uint64_t now = now_ns();
	struct item *it;

	if (getpid() != w->owner)
		return -ECHILD;
	it = calloc(1, sizeof(*it));
	if (!it)
		return -ENOMEM;
	*it = (struct item){
		.work = work,
		.done = done,
		.arg = arg,
		.deadline = budget_ns > UINT64_MAX - now ? UINT64_MAX : now + budget_ns,
	};
	pthread_mutex_lock(&w->lock);
	if (w->stopping) {
		pthread_mutex_unlock(&w->lock);
		free(it);
		return -ESHUTDOWN;
	}
	if (w->queue.n >= w->queue_max) {
		w->rejected++;
		pthread_mutex_unlock(&w->lock);
		free(it);
		return -EAGAIN;
	}
	list_push(&w->queue, it);
	w->submitted++;
	ensure_consumer(w);
	rearm(w);
	pthread_cond_signal(&w->wake);
	pthread_mutex_unlock(&w->lock);
	return 0;
}

int worker_dispatch(struct worker *w)
{
	struct item_list finished;
	uint64_t v;
	int n;

	if (getpid() != w->owner)
		return -ECHILD;
	pthread_mutex_lock(&w->lock);
	if (w->stopping) {
		pthread_mutex_unlock(&w->lock);
		return -ESHUTDOWN;
	}
	(void)!read(w->event_fd, &v, sizeof(v));
	if (read(w->timer_fd, &v, sizeof(v)) > 0)
		w->armed = 0; /* it fired, and is disarmed */
	expire(w, now_ns());
	ensure_consumer(w);
	rearm(w);
	finished = list_take(&w->finished);
	pthread_mutex_unlock(&w->lock);
	n = finished.n;
	call_done(&finished, false);
	return n;
}

static void stats_locked(const struct worker *w, struct worker_stats *ret)
{
	*ret = (struct worker_stats){
		.submitted = w->submitted,
		.completed = w->completed,
		.rejected = w->rejected,
		.abandoned = w->abandoned,
		.queued = w->queue.n,
	};
	for (size_t i = 0; i < ARRAY_SIZE(w->slots); i++)
		if (w->slots[i].state == SLOT_STUCK)
			ret->stuck++;
}

void worker_stats(const struct worker *w, struct worker_stats *ret)
{
	struct worker *mw = (struct worker *)w; /* the lock, only */

	if (getpid() != w->owner) {
		stats_locked(w, ret); /* a forked child: no other thread, and the lock may be held */
		return;
	}
	pthread_mutex_lock(&mw->lock);
	stats_locked(w, ret);
	pthread_mutex_unlock(&mw->lock);
}
