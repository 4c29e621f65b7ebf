/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The daemon's one place for work that may block or run long: reading files a watched
 * process controls (perf maps, ELF and debug files, /proc/PID/...), later its memory. The
 * event loop hands such work over and goes on; the result comes back on the loop's thread.
 *
 * One worker thread takes items from a bounded queue, oldest first. Each item has a budget,
 * counted from its submit: an item still queued when its budget is spent is dropped, one
 * still running is abandoned (what it returns later is thrown away). A thread stuck in an
 * abandoned item is left to finish it, and a new thread takes the queue over, up to
 * WORKER_THREADS_MAX threads in all; when every one of them is stuck, the queue waits (its
 * items dropped as their budgets run out) until one comes back.
 *
 * The completions of finished items are handed to done on the thread that calls
 * worker_dispatch(): worker_fd() becomes readable (EPOLLIN) when there is one, or when a
 * budget has run out, so the loop watches one fd and never polls.
 *
 * Fork: threads do not survive fork(), and the child may inherit the queue's lock held. A
 * forked child must not use its copy of the worker: there, worker_submit() and
 * worker_dispatch() fail with -ECHILD and worker_free() returns without touching it (the
 * child leaves it to _exit).
 */
#ifndef HOSTPROF_WORKER_H
#define HOSTPROF_WORKER_H

#include <stdbool.h>
#include <stdint.h>

#define WORKER_THREADS_MAX 4 /* the one taking the queue, and those stuck in abandoned items */

struct worker;

/* Runs on a worker thread: it may block, and touches nothing the loop thread changes. */
typedef int (*worker_work_fn)(void *arg);
/*
 * Runs on the thread that calls worker_dispatch() (or worker_free()), exactly once for each
 * item submitted (but for one still stuck at worker_free(), see there), and owns arg from
 * then on. r is what work returned, or:
 *   -ETIME      the budget ran out: while queued (work never ran), or while running (work
 *               has returned since; what it produced is to be discarded);
 *   -ECANCELED  worker_free() came before work ran.
 */
typedef void (*worker_done_fn)(void *arg, int r);

struct worker_stats {
	uint64_t submitted; /* accepted into the queue */
	uint64_t completed; /* work returned within its budget */
	uint64_t rejected; /* refused: the queue was full */
	uint64_t abandoned; /* their budget ran out, queued or running */
	uint32_t queued; /* waiting now */
	uint32_t stuck; /* threads inside abandoned items now */
};

/* queue_max: items waiting at most (the running one not counted). NULL + errno on failure. */
struct worker *worker_new(unsigned queue_max);
/*
 * Stops the worker, on the thread that dispatches: queued items are done with -ECANCELED,
 * finished ones with their result, a running one is waited for while its budget lasts. One
 * still running then is left to its thread: its done is never called and its arg is not
 * freed (the daemon is exiting). A done called from here that calls worker_submit() or
 * worker_dispatch() gets -ESHUTDOWN.
 */
void worker_free(struct worker *w);

/* For the caller's epoll (EPOLLIN): readable when worker_dispatch() has something to do. */
int worker_fd(const struct worker *w);

/*
 * Queues work(arg), to be done within budget_ns (CLOCK_MONOTONIC) from now. 0: done(arg, r)
 * will be called; -EAGAIN: the queue is full (counted as rejected); -ECHILD: a forked child;
 * -ESHUTDOWN: in worker_free(); -ENOMEM. On failure nothing is called, arg stays the caller's.
 */
int worker_submit(struct worker *w, uint64_t budget_ns, worker_work_fn work, worker_done_fn done, void *arg);

/*
 * When worker_fd() is readable: abandons what ran out of budget, and calls done for each
 * finished item, in the calling thread. Returns how many were done, -ECHILD (a forked child)
 * or -ESHUTDOWN (in worker_free()).
 */
int worker_dispatch(struct worker *w);

void worker_stats(const struct worker *w, struct worker_stats *ret);

/*
 * Around a fork() of the owner: 0 when no thread runs an item within its budget, -EBUSY
 * when one does; either way no thread takes another item until worker_fork_end(), so the
 * gate opens as the running one ends. A thread running an item may hold a lock that the
 * child would inherit held, with nobody there to release it: the malloc arena of a runtime
 * without fork handlers (ASan's, in GCC 12: a snapshot job hung for ever in it), a
 * library's. A thread stuck past its budget does not close the gate: it is blocked
 * (a read that never returns), and would keep every fork waiting. worker_fork_end(w):
 * after each begin, whatever it returned, once the fork is made or the owner gives up
 * waiting. NULL w: 0, nothing.
 */
int worker_fork_begin(struct worker *w);
void worker_fork_end(struct worker *w);

#endif
