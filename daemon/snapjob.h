/* SPDX-License-Identifier: GPL-2.0-only */
/* Snapshot work in a forked child, off the drain path; see snapjob.c. */
#ifndef HOSTPROF_SNAPJOB_H
#define HOSTPROF_SNAPJOB_H

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
 * A child that uses more than cpu_limit_s seconds of CPU is killed (RLIMIT_CPU: CPU time,
 * so a busy node does not kill a job that merely waited), and done gets -ETIME. */
int snapjob_start(struct loop *loop, unsigned cpu_limit_s, snapjob_work_fn work, void *arg, snapjob_done_fn done, void *ud,
		  struct snapjob **ret);
/* done will not be called (the client went away); the child finishes on its own. */
void snapjob_cancel(struct snapjob *j);
/* At exit. */
void snapjob_kill_all(void);

#endif
