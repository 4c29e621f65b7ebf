/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Where each watched thread's time went, counted live as the drain files records with
 * their process (recorder.c calls timeacct_record() for each), for the metrics: the time
 * lost by cause, the preemptions, the runqueue latency. Nothing is kept but counters and
 * the last switch of each thread; the same records, in a snapshot, make the report's
 * breakdown, and these counters are classified the way the report classifies them
 * (lib/report_causes.c), with what one record at a time can tell:
 *
 *  - switched out runnable (R, R+) until switched in again: a preemption, cut by the
 *    tasks that ran on its CPU meanwhile (the capture records every switch on a CPU where
 *    a watched thread waits preempted, and files it with that thread's process), each
 *    piece to the kind of task that ran: the idle task (nothing ran: throttled by the
 *    cgroup's CFS bandwidth), hostprof's own (the daemon, its snapshot jobs), an
 *    interrupt's thread (ksoftirqd/N, irq/N-...), the migration stopper (migration/N), a
 *    realtime task (SCHED_FIFO, SCHED_RR, SCHED_DEADLINE), any other (CFS); after a
 *    migration, the task that ran before it where it ran again has the rest;
 *  - switched out blocked (S, D...) until its wakeup: blocked, less the lock waits and
 *    the reclaim the records of that interval show; from its wakeup until switched in
 *    (next_wait_ns): the runqueue, or the same classes of the task that ran before it
 *    (an idle CPU for more than 2 ms: throttled);
 *  - while it ran: interrupts that ran on its CPU (a hard IRQ inside a softirq once),
 *    kernel lock waits, reclaim and compaction, from their own records.
 *
 * Switch records come from per-CPU rings, in no order across CPUs (a thread woken on
 * another CPU may be seen switched in before it is seen switched out): each thread keeps
 * its last unmatched switch-out and switch-in, and pairs them by time (a switch-in that
 * came without its switch-out is counted once the thread's next switch-out shows none
 * will come). Such a switch-in's wait counts from the start of the process's history
 * only (since_ns), as a snapshot's report of that history counts it: a thread first seen
 * as it is switched in may have waited since before anything watched it.
 */
#ifndef HOSTPROF_TIMEACCT_H
#define HOSTPROF_TIMEACCT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hostprof.h"

/* The causes of lost time counted live, the report's JSON keys (lib/report_verdict.c).
 * Not counted live: the GIL, major faults' time, migration off a thread's home CPU. */
enum lost_cause {
	LOST_RT,
	LOST_CFS,
	LOST_RUNQ,
	LOST_BLOCKED,
	LOST_LOCK,
	LOST_RECLAIM,
	LOST_IRQ,
	LOST_THROTTLE,
	LOST_MIGRATION,
	LOST_HOSTPROF,
	LOST_MAX
};

/* Runqueue latency buckets: upper bounds, ns (the last bucket is +Inf). */
#define RUNQ_BUCKETS 12
extern const uint64_t timeacct_runq_bounds[RUNQ_BUCKETS - 1];

struct acct_counts {
	uint64_t lost_ns[LOST_MAX];
	uint64_t preemptions;
	uint64_t runq[RUNQ_BUCKETS]; /* switch-ins by next_wait_ns, each in its bucket */
	uint64_t runq_ns;
	uint64_t minor_faults, major_faults;
};

/* A switch not yet matched with its other half. */
struct acct_half {
	uint64_t ts, wait_ns;
	uint32_t cpu;
	uint32_t kind; /* out: 1 runnable, 2 blocked; in: HP_WAIT_* or 0 */
	uint8_t cls; /* enum lost_cause of the task that took (out) or held (in) the CPU */
	bool valid;
};

struct thread_acct {
	uint32_t tid;
	struct acct_counts c;
	struct acct_half out, in;
	/* the last blocked interval: what lock and reclaim records carve out of it */
	uint64_t blk_a, blk_b, blk_left;
	uint64_t hirq_a, hirq_b; /* the last hard IRQ, so a softirq around it counts it once */
	/* preempted, waiting on wait_cpu: lost to wait_cls since wait_since, the task running there */
	bool waiting;
	uint8_t wait_cls;
	uint32_t wait_cpu;
	uint64_t wait_since;
};

/* Threads beyond this many in one process are counted together (tid 0). */
#define ACCT_MAX_THREADS 4096

struct proc_acct {
	struct thread_acct *t;
	size_t n, cap;
	uint32_t *slots; /* open addressing by tid: index + 1 */
	size_t n_slots;
	struct thread_acct *other; /* threads past ACCT_MAX_THREADS */
	uint32_t *waiters; /* indexes into t of the threads waiting preempted */
	size_t n_waiters, cap_waiters;
	/* where the history starts: when the process was watched (the recorder sets it),
	 * or the oldest record filed since, if that is older; 0: not known */
	uint64_t since_ns;
};

/* Account one record filed with process pid. */
void timeacct_record(struct proc_acct *a, uint32_t pid, const struct hp_hdr *h);
void timeacct_free(struct proc_acct *a);
/* Thread tid's counts, NULL when none (or it is among the folded ones). */
const struct thread_acct *timeacct_find(const struct proc_acct *a, uint32_t tid);
/* Sum of every thread's counts, the folded ones included. */
void timeacct_sum(const struct proc_acct *a, struct acct_counts *ret);
/* "rt", "cfs", "runqueue"... */
const char *timeacct_cause_key(enum lost_cause c);

#endif
