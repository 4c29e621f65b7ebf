/* SPDX-License-Identifier: GPL-2.0-only */
/* Snapshot work in a forked child, off the drain path; see snapjob.c. */
#ifndef HOSTPROF_SNAPJOB_H
#define HOSTPROF_SNAPJOB_H

#include <sched.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct loop;
struct hp_buf;
struct snapjob;

/* Runs in the child: fills out, returns >= 0 or -errno. */
typedef int (*snapjob_work_fn)(void *arg, struct hp_buf *out);
/* Runs in the parent's loop: status of the work, and its bytes (malloc'ed, owned by the callee). */
typedef void (*snapjob_done_fn)(void *ud, int status, uint8_t *data, size_t len);

/* Whoever starts a job drains what it wants the child to see first: the fork is a copy.
 * The child runs off the CPUs set in avoid (NULL: none) where others are allowed, from
 * its first instruction on; a failure to place it is logged once per cause. A child that
 * uses more than cpu_limit_s seconds of CPU is killed (RLIMIT_CPU: CPU time, so a busy
 * node does not kill a job that merely waited), and done gets -ETIME.
 * The job owns arg: arg_free(arg) (NULL: nothing) once the child has its copy, or when the
 * job ends without one, on failure here too. While the fork gate is closed the fork waits
 * (tried again every 5 ms; past 2.5 s it is forked all the same, and logged). */
int snapjob_start(struct loop *loop, unsigned cpu_limit_s, const cpu_set_t *avoid, snapjob_work_fn work, void *arg,
		  void (*arg_free)(void *arg), snapjob_done_fn done, void *ud, struct snapjob **ret);
/* What must hold still while the loop forks a job: begin returns 0 or < 0 (the fork
 * waits); end follows each begin, whatever it returned, once the fork is made or given up.
 * The worker's: worker_fork_begin(), worker_fork_end(). */
void snapjob_set_fork_gate(int (*begin)(void *ud), void (*end)(void *ud), void *ud);
/*
 * What a job's child found that the daemon keeps for the jobs after it (the symbolizer's
 * DWARF lookups): produce runs in the child once its work succeeded and hands over bytes
 * (malloc'ed, or NULL and 0), which go after the work's bytes; consume runs in the loop
 * with them before done (which sees only the work's). NULL, NULL: none.
 */
void snapjob_set_learn(void (*produce)(void *ud, uint8_t **ret, size_t *ret_len),
		       void (*consume)(void *ud, const uint8_t *data, size_t len), void *ud);
/* Whether some job is running. */
bool snapjob_running(void);
/* The running jobs off the CPUs in avoid, where the loop's CPUs leave them others (a
 * dispatch thread moved onto a job's CPU after its fork). */
void snapjob_place_all(const cpu_set_t *avoid);
/* done will not be called (the client went away); the child finishes on its own. */
void snapjob_cancel(struct snapjob *j);
/* At exit, before the modules that started jobs are freed: each job's child killed and
 * its done called with -ECANCELED (unless cancelled). */
void snapjob_kill_all(void);

#endif
