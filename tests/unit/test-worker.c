// SPDX-License-Identifier: GPL-2.0-only
/*
 * daemon/worker.c, without privileges. Items block on gates the test opens, so what is
 * running, queued or stuck is known when it is checked; budgets are short (100 ms) only
 * where the test waits for one to run out, and every wait ends after 10 s.
 *
 *   done     work runs on a worker thread, done on the thread that dispatches, with what
 *            work returned; worker_fd() wakes a poll() for it;
 *   full     a full queue refuses (-EAGAIN), counts it, and calls nothing for the refused item;
 *   budget   an item past its budget is abandoned: done gets -ETIME once work has returned,
 *            and the next item completes meanwhile on a new thread; when every thread is
 *            stuck, a queued item is dropped at its deadline without running, and once the
 *            stuck ones come back the queue runs again;
 *   free     worker_free with items finished, queued and running: done with the result,
 *            -ECANCELED, the result of one that finishes within its budget meanwhile; one
 *            stuck past its budget is left to its thread, never done;
 *   fork     in a forked child submit and dispatch fail with -ECHILD and free leaves the
 *            worker alone; the parent's worker goes on;
 *   forkgate worker_fork_begin is refused while an item runs, and from then on no item is
 *            taken: once the running one returns it succeeds, with the next item still
 *            queued, which runs after worker_fork_end; a begin given up (its end without a fork)
 *            lets the queue run again too; an item stuck past its budget does not close
 *            the gate.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "macro.h"
#include "worker.h"

#define SHORT_NS (100 * 1000000ULL)
#define LONG_NS (60 * 1000000000ULL)
#define WAIT_MS 10000

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t changed = PTHREAD_COND_INITIALIZER;
static pthread_t main_thread;
static unsigned done_count;

struct job {
	int ret; /* what work returns */
	bool gated; /* work waits until open */
	bool open;
	bool started, returned; /* work's progress */
	pthread_t ran_on;
	unsigned done_calls;
	int done_r;
	bool done_on_main;
};

static int work(void *arg)
{
	struct job *j = arg;

	pthread_mutex_lock(&lock);
	j->started = true;
	j->ran_on = pthread_self();
	pthread_cond_broadcast(&changed);
	while (j->gated && !j->open)
		pthread_cond_wait(&changed, &lock);
	j->returned = true;
	pthread_cond_broadcast(&changed);
	pthread_mutex_unlock(&lock);
	return j->ret;
}

static void done(void *arg, int r)
{
	struct job *j = arg;

	pthread_mutex_lock(&lock);
	j->done_calls++;
	j->done_r = r;
	j->done_on_main = pthread_equal(pthread_self(), main_thread);
	done_count++;
	pthread_mutex_unlock(&lock);
}

static void open_gate(struct job *j)
{
	pthread_mutex_lock(&lock);
	j->open = true;
	pthread_cond_broadcast(&changed);
	pthread_mutex_unlock(&lock);
}

static bool get(const bool *flag)
{
	bool v;

	pthread_mutex_lock(&lock);
	v = *flag;
	pthread_mutex_unlock(&lock);
	return v;
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000ULL + ts.tv_nsec / 1000000;
}

/* Polls worker_fd and dispatches until *flag is set (or, flag NULL, until done_count reaches
 * want); false after WAIT_MS. */
static bool pump_until(struct worker *w, const bool *flag, unsigned want)
{
	uint64_t end = now_ms() + WAIT_MS;

	for (;;) {
		struct pollfd pfd = { .fd = worker_fd(w), .events = POLLIN };
		bool reached;
		uint64_t now;

		pthread_mutex_lock(&lock);
		reached = flag ? *flag : done_count >= want;
		pthread_mutex_unlock(&lock);
		if (reached)
			return true;
		now = now_ms();
		if (now >= end)
			return false;
		/* a flag set by work wakes no fd: look again every 10 ms */
		if (poll(&pfd, 1, flag ? 10 : (int)(end - now)) > 0)
			CHECK(worker_dispatch(w) >= 0);
	}
}

/* The same, until st.stuck reaches want. */
static bool pump_until_stuck(struct worker *w, uint32_t want)
{
	uint64_t end = now_ms() + WAIT_MS;
	struct worker_stats st;

	for (;;) {
		struct pollfd pfd = { .fd = worker_fd(w), .events = POLLIN };

		worker_stats(w, &st);
		if (st.stuck >= want)
			return true;
		if (now_ms() >= end)
			return false;
		if (poll(&pfd, 1, 10) > 0)
			CHECK(worker_dispatch(w) >= 0);
	}
}

static struct worker *new_worker(unsigned queue_max)
{
	struct worker *w = worker_new(queue_max);

	if (!w) {
		perror("worker_new");
		exit(1);
	}
	done_count = 0;
	return w;
}

static void test_done(void)
{
	struct worker *w = new_worker(4);
	struct job j = { .ret = 42 };
	struct worker_stats st;

	CHECK_EQ_INT(worker_submit(w, LONG_NS, work, done, &j), 0);
	CHECK(pump_until(w, NULL, 1));
	CHECK_EQ_INT(j.done_calls, 1);
	CHECK_EQ_INT(j.done_r, 42);
	CHECK(j.done_on_main);
	CHECK(!pthread_equal(j.ran_on, main_thread));
	worker_stats(w, &st);
	CHECK_EQ_U64(st.submitted, 1);
	CHECK_EQ_U64(st.completed, 1);
	CHECK_EQ_U64(st.rejected + st.abandoned + st.queued + st.stuck, 0);
	/* nothing more to do: the fd is quiet */
	CHECK_EQ_INT(worker_dispatch(w), 0);
	worker_free(w);
	CHECK_EQ_INT(j.done_calls, 1);
}

static void test_full(void)
{
	struct worker *w = new_worker(2);
	struct job a = { .gated = true, .ret = 1 }, b = { .ret = 2 }, c = { .ret = 3 }, d = { .ret = 4 };
	struct worker_stats st;

	CHECK_EQ_INT(worker_submit(w, LONG_NS, work, done, &a), 0);
	CHECK(pump_until(w, &a.started, 0));
	CHECK_EQ_INT(worker_submit(w, LONG_NS, work, done, &b), 0);
	CHECK_EQ_INT(worker_submit(w, LONG_NS, work, done, &c), 0);
	CHECK_EQ_INT(worker_submit(w, LONG_NS, work, done, &d), -EAGAIN);
	worker_stats(w, &st);
	CHECK_EQ_U64(st.rejected, 1);
	CHECK_EQ_U64(st.queued, 2);
	CHECK_EQ_U64(st.submitted, 3);
	open_gate(&a);
	CHECK(pump_until(w, NULL, 3));
	CHECK_EQ_INT(a.done_r, 1);
	CHECK_EQ_INT(b.done_r, 2);
	CHECK_EQ_INT(c.done_r, 3);
	CHECK(!d.started && !d.done_calls);
	worker_stats(w, &st);
	CHECK_EQ_U64(st.completed, 3);
	worker_free(w);
}

static void test_budget(void)
{
	struct worker *w = new_worker(8);
	struct job a = { .gated = true, .ret = 1 }, b = { .ret = 2 }, stuck[WORKER_THREADS_MAX - 1];
	struct job late = { .ret = 3 }, after = { .ret = 4 };
	struct worker_stats st;

	/* a is stuck past its budget; b, behind it, completes on another thread */
	CHECK_EQ_INT(worker_submit(w, SHORT_NS, work, done, &a), 0);
	CHECK(pump_until(w, &a.started, 0));
	CHECK_EQ_INT(worker_submit(w, LONG_NS, work, done, &b), 0);
	CHECK(pump_until(w, NULL, 1));
	CHECK_EQ_INT(b.done_calls, 1);
	CHECK_EQ_INT(b.done_r, 2);
	CHECK(!pthread_equal(a.ran_on, b.ran_on));
	CHECK_EQ_INT(a.done_calls, 0); /* work has not returned: done waits for it */
	worker_stats(w, &st);
	CHECK_EQ_U64(st.abandoned, 1);
	CHECK_EQ_U64(st.stuck, 1);
	CHECK_EQ_U64(st.completed, 1);

	/* every other thread stuck too, one after the other */
	for (size_t i = 0; i < ARRAY_SIZE(stuck); i++) {
		stuck[i] = (struct job){ .gated = true, .ret = 10 };
		CHECK_EQ_INT(worker_submit(w, SHORT_NS, work, done, &stuck[i]), 0);
		CHECK(pump_until_stuck(w, 2 + i));
		CHECK(get(&stuck[i].started));
	}
	/* nobody is left to run late: it is dropped at its deadline, unrun */
	CHECK_EQ_INT(worker_submit(w, SHORT_NS, work, done, &late), 0);
	CHECK(pump_until(w, NULL, 2));
	CHECK_EQ_INT(late.done_calls, 1);
	CHECK_EQ_INT(late.done_r, -ETIME);
	CHECK(!get(&late.started));
	worker_stats(w, &st);
	CHECK_EQ_U64(st.stuck, WORKER_THREADS_MAX);
	CHECK_EQ_U64(st.abandoned, 1 + ARRAY_SIZE(stuck) + 1);

	/* they come back: their results are discarded, and the queue runs again */
	open_gate(&a);
	for (size_t i = 0; i < ARRAY_SIZE(stuck); i++)
		open_gate(&stuck[i]);
	CHECK(pump_until(w, NULL, 2 + 1 + ARRAY_SIZE(stuck)));
	CHECK_EQ_INT(a.done_calls, 1);
	CHECK_EQ_INT(a.done_r, -ETIME);
	CHECK(a.done_on_main);
	for (size_t i = 0; i < ARRAY_SIZE(stuck); i++)
		CHECK_EQ_INT(stuck[i].done_r, -ETIME);
	CHECK_EQ_INT(worker_submit(w, LONG_NS, work, done, &after), 0);
	CHECK(pump_until(w, NULL, 3 + 1 + ARRAY_SIZE(stuck)));
	CHECK_EQ_INT(after.done_r, 4);
	worker_stats(w, &st);
	CHECK_EQ_U64(st.stuck, 0);
	CHECK_EQ_U64(st.completed, 2);
	CHECK_EQ_U64(st.submitted, 4 + ARRAY_SIZE(stuck));
	worker_free(w);
}

static void *open_later(void *arg)
{
	usleep(100 * 1000);
	open_gate(arg);
	return NULL;
}

static void test_free(void)
{
	struct job fin = { .ret = 5 }, run = { .gated = true, .ret = 6 }, q1 = { .ret = 7 },
		   q2 = { .ret = 8 };
	struct job stuck = { .gated = true, .ret = 9 }, q3 = { .ret = 10 };
	struct pollfd pfd;
	struct worker *w;
	pthread_t t;

	/* finished but not dispatched, running (done within its budget), queued */
	w = new_worker(8);
	CHECK_EQ_INT(worker_submit(w, LONG_NS, work, done, &fin), 0);
	pfd = (struct pollfd){ .fd = worker_fd(w), .events = POLLIN };
	CHECK(poll(&pfd, 1, WAIT_MS) == 1); /* fin is finished; not dispatched */
	CHECK_EQ_INT(worker_submit(w, LONG_NS, work, done, &run), 0);
	while (!get(&run.started))
		usleep(1000);
	CHECK_EQ_INT(worker_submit(w, LONG_NS, work, done, &q1), 0);
	CHECK_EQ_INT(worker_submit(w, LONG_NS, work, done, &q2), 0);
	CHECK_EQ_INT(pthread_create(&t, NULL, open_later, &run), 0);
	worker_free(w);
	pthread_join(t, NULL);
	CHECK_EQ_INT(fin.done_r, 5);
	CHECK_EQ_INT(run.done_r, 6);
	CHECK_EQ_INT(q1.done_r, -ECANCELED);
	CHECK_EQ_INT(q2.done_r, -ECANCELED);
	CHECK(fin.done_on_main && run.done_on_main && q1.done_on_main && q2.done_on_main);
	CHECK(!get(&q1.started) && !get(&q2.started));
	CHECK_EQ_INT(done_count, 4);

	/* stuck past its budget: left to its thread, which frees the worker when it returns */
	w = new_worker(8);
	CHECK_EQ_INT(worker_submit(w, SHORT_NS, work, done, &stuck), 0);
	while (!get(&stuck.started))
		usleep(1000);
	CHECK_EQ_INT(worker_submit(w, LONG_NS, work, done, &q3), 0);
	worker_free(w);
	CHECK_EQ_INT(q3.done_r, -ECANCELED);
	CHECK_EQ_INT(done_count, 1);
	open_gate(&stuck);
	while (!get(&stuck.returned))
		usleep(1000);
	usleep(50 * 1000); /* let it leave (ASan would see it touch a freed worker) */
	CHECK_EQ_INT(stuck.done_calls, 0);
}

static void test_fork(void)
{
	struct worker *w = new_worker(4);
	struct job gate = { .gated = true, .ret = 1 }, child_job = {}, after = { .ret = 2 };
	int status;
	pid_t pid;

	/* the fork comes while the worker thread runs an item */
	CHECK_EQ_INT(worker_submit(w, LONG_NS, work, done, &gate), 0);
	CHECK(pump_until(w, &gate.started, 0));
	fflush(NULL);
	pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		struct worker_stats st;
		bool ok;

		ok = worker_submit(w, LONG_NS, work, done, &child_job) == -ECHILD &&
		     worker_dispatch(w) == -ECHILD;
		worker_stats(w, &st);
		ok = ok && st.submitted == 1;
		worker_free(w);
		_exit(ok ? 0 : 1);
	}
	CHECK(waitpid(pid, &status, 0) == pid);
	CHECKF(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child status 0x%x", status);
	open_gate(&gate);
	CHECK_EQ_INT(worker_submit(w, LONG_NS, work, done, &after), 0);
	CHECK(pump_until(w, NULL, 2));
	CHECK_EQ_INT(gate.done_r, 1);
	CHECK_EQ_INT(after.done_r, 2);
	CHECK(!child_job.started);
	worker_free(w);
}

static void test_forkgate(void)
{
	struct worker *w = new_worker(4);
	struct job a = { .gated = true, .ret = 1 }, b = { .ret = 2 }, c = { .gated = true, .ret = 3 }, d = { .ret = 4 };
	struct job e = { .gated = true, .ret = 5 };
	uint64_t end;
	int r;

	/* nothing runs: the gate opens at once */
	CHECK_EQ_INT(worker_fork_begin(w), 0);
	worker_fork_end(w);
	CHECK_EQ_INT(worker_fork_begin(NULL), 0);
	worker_fork_end(NULL);

	CHECK_EQ_INT(worker_submit(w, LONG_NS, work, done, &a), 0);
	CHECK(pump_until(w, &a.started, 0));
	CHECK_EQ_INT(worker_fork_begin(w), -EBUSY);
	CHECK_EQ_INT(worker_submit(w, LONG_NS, work, done, &b), 0);
	open_gate(&a);
	CHECK(pump_until(w, NULL, 1));
	/* a is done; b is not taken while the fork waits: the gate opens */
	end = now_ms() + WAIT_MS;
	while ((r = worker_fork_begin(w)) == -EBUSY && now_ms() < end)
		usleep(1000);
	CHECK_EQ_INT(r, 0);
	usleep(50 * 1000);
	CHECK(!get(&b.started));
	worker_fork_end(w);
	CHECK(pump_until(w, NULL, 2));
	CHECK_EQ_INT(b.done_r, 2);

	/* a begin given up: the queue runs again */
	CHECK_EQ_INT(worker_submit(w, LONG_NS, work, done, &c), 0);
	CHECK(pump_until(w, &c.started, 0));
	CHECK_EQ_INT(worker_fork_begin(w), -EBUSY);
	CHECK_EQ_INT(worker_submit(w, LONG_NS, work, done, &d), 0);
	open_gate(&c);
	CHECK(pump_until(w, NULL, 3));
	usleep(50 * 1000);
	CHECK(!get(&d.started));
	worker_fork_end(w);
	CHECK(pump_until(w, NULL, 4));
	CHECK_EQ_INT(d.done_r, 4);

	/* a thread stuck past its budget (a read that never returns) keeps no fork waiting */
	CHECK_EQ_INT(worker_submit(w, SHORT_NS, work, done, &e), 0);
	CHECK(pump_until_stuck(w, 1));
	CHECK_EQ_INT(worker_fork_begin(w), 0);
	worker_fork_end(w);
	open_gate(&e);
	CHECK(pump_until(w, NULL, 5));
	CHECK_EQ_INT(e.done_r, -ETIME);
	worker_free(w);
}

int main(int argc, char **argv)
{
	static const struct {
		const char *name;
		void (*fn)(void);
	} tests[] = {
		{ "done", test_done }, { "full", test_full }, { "budget", test_budget },
		{ "free", test_free }, { "fork", test_fork }, { "forkgate", test_forkgate },
	};

	main_thread = pthread_self();
	for (size_t i = 0; i < ARRAY_SIZE(tests); i++) {
		if (argc > 1 && strcmp(argv[1], tests[i].name))
			continue;
		printf("# %s\n", tests[i].name);
		tests[i].fn();
	}
	return check_summary();
}
