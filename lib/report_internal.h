/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The report's model of a snapshot, private to lib/report_*.c:
 *   report_model.c         builds it: the scheduler's tables, the worst stall;
 *   report_interference.c  adds the interference tables, and the cause they can name;
 *   report_verdict.c       the verdict line and the words both writers describe things with;
 *   report_text.c, report_json.c  the two writers, which print the model and nothing else;
 *   report_preempt.c       the client's one-line preemption summary.
 */
#ifndef HOSTPROF_REPORT_INTERNAL_H
#define HOSTPROF_REPORT_INTERNAL_H

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "snapshot.pb-c.h"
#include "snapview.h"

/* How many of each the writers show */
#define TOP_CULPRITS 10
#define TOP_SYSCALLS 5
#define TOP_HISTOGRAMS 10
#define TOP_STACKS 5
#define TOP_WAKERS 5
#define TOP_FUNCTIONS 10
#define TOP_MIGRATIONS 10
#define TOP_IDLE_THREADS 20
#define TOP_IRQS 10
#define TOP_RECLAIMS 10
#define TOP_LOCKS 5
#define TOP_GROUP_CPUS 8 /* text: CPUs named after an interrupt group */

/* Events counted together: how many, their time, the longest and its row (the first of equals). */
struct tally {
	uint64_t count, time_ns, max_ns;
	size_t max_row;
};

/* A task that preempted a watched thread. */
struct culprit {
	uint32_t tid, pid, comm, policy;
	int32_t prio;
	bool has_policy;
	struct tally sum; /* the preemptions, and the time they took */
};

struct waker {
	uint32_t tid, pid, comm;
	struct tally sum; /* the intervals it ended */
};

/* Off-CPU intervals of one thread with the same stacks. */
struct offcpu_group {
	uint32_t ustack, kstack, states;
	struct tally sum;
	struct waker *wakers;
	size_t n_wakers, cap_wakers;
};

/* Interrupts of one kind, number and name that touched a thread one way. */
struct irq_group {
	uint32_t kind, num, name;
	struct tally sum;
	uint32_t *cpus; /* sorted, distinct */
	size_t n_cpus, cap_cpus;
};

/* Interrupts that touched a thread while it ran (stole its time) or while it waited. */
struct irq_side {
	struct irq_group *g; /* by total time */
	size_t n, cap;
	uint64_t count, time_ns; /* time_ns: a hard IRQ nested in a softirq counts once */
};

/* Reclaim or compaction of one kind and allocation order in one thread. */
struct reclaim_group {
	uint32_t kind;
	int32_t order;
	struct tally sum;
	int64_t pages; /* reclaim: pages reclaimed, summed */
};

/* Waits of one thread for one lock, taken one way (LockTable.flags). */
struct lock_group {
	uint64_t lock;
	uint32_t flags, name;
	struct tally sum;
	uint64_t failed;
};

struct fault_sum {
	uint64_t periods, over_ns; /* over_ns: the periods' durations, summed */
	uint64_t faults, write, exec, prot, minor, major;
	uint64_t peak_major; /* the most major faults in one period */
	size_t peak_row;
};

/* A thread runnable and not running from begin to end: on CPU cpu_out's runqueue, then cpu_in's. */
struct rq_wait {
	uint64_t begin, end;
	uint32_t cpu_out, cpu_in;
	size_t thread;
};

/* On-CPU samples of one thread with the same leaf function. */
struct leaf_count {
	const char *name;
	bool kernel;
	uint64_t samples;
};

struct wthread {
	uint32_t tid;
	const char *comm;

	struct culprit *culprits;
	size_t n_culprits, cap_culprits;
	struct tally preempt;
	bool preempted; /* switched out runnable, not yet back */
	uint64_t preempted_at;
	size_t preempted_by, preempted_row;

	uint64_t *rq; /* next_wait_ns of its switch-ins, sorted */
	size_t n_rq, cap_rq;
	uint64_t rq_wakeup, rq_preempt;

	uint32_t *cpus; /* sorted, distinct */
	size_t n_cpus, cap_cpus;
	size_t *migrations; /* rows */
	size_t n_migrations, cap_migrations;

	size_t *syscalls; /* rows, slowest first */
	size_t n_syscalls, cap_syscalls;
	size_t *hists; /* indexes into Snapshot.syscall_hist, by total time */
	size_t n_hists, cap_hists;

	struct offcpu_group *off; /* by total time */
	size_t n_off, cap_off;
	struct tally off_sum;

	struct leaf_count *leaves; /* by samples */
	size_t n_leaves, cap_leaves;
	uint64_t samples;

	struct irq_side irq_ran, irq_waited;
	struct reclaim_group *rcl; /* by total time */
	size_t n_rcl, cap_rcl;
	struct tally rcl_sum;
	struct fault_sum flt;
	struct lock_group *lck; /* by total time */
	size_t n_lck, cap_lck;
	struct tally lck_sum;
	bool interfered; /* a row of its own in a captured interference table */

	bool active; /* any event at all */
};

enum stall_kind {
	STALL_NONE,
	STALL_PREEMPTED, /* row: the switch-out */
	STALL_RUNQUEUE, /* row: the switch-in, after a wakeup */
	STALL_BLOCKED, /* row: the off-CPU interval */
	STALL_RECLAIM, /* row: the reclaim */
	STALL_LOCK, /* row: the lock wait */
	STALL_IRQ, /* row: the interrupt */
	STALL_IRQ_TOTAL, /* row: the group in the thread's irq_ran; dur: its total */
};

struct stall {
	enum stall_kind kind;
	bool involuntary, to_end; /* to_end: still waiting when the window closed */
	bool waited; /* STALL_IRQ: it ran while the thread waited on its CPU, not while it ran */
	size_t thread, row;
	uint64_t ts, dur;
};

struct model {
	const Hostprof__Snapshot *snap;
	struct frame_names fn;
	struct wthread *t;
	size_t n;
	uint64_t *sw_ts, *mg_ts, *sc_ts, *off_ts;
	uint64_t *irq_ts, *rcl_ts, *flt_ts, *lck_ts;
	struct rq_wait *waits; /* of every thread, by begin */
	size_t n_waits, cap_waits;
	uint64_t samples; /* of the process */
	uint32_t interference; /* HPS_INTERF_*: the tables captured */
	uint64_t unmatched_count, unmatched_ns; /* interrupts while a thread waited, matched to none */
	struct stall worst;
	/* interference: the longest candidate, and the one that best explains the worst stall */
	struct stall cause, explains;
	uint64_t explains_overlap;
	struct stall explained; /* when the verdict is an interference event: the stall it explains */
};

/* ---- report_model.c ---- */

/* The model of a snapshot, which must pass hps_validate() (-EINVAL otherwise). */
int model_build(const Hostprof__Snapshot *snap, struct model *ret);
void model_free(struct model *m);
/* The watched thread tid, or NULL when pid is not Snapshot.pid or tid is not one of its threads. */
struct wthread *model_thread(const struct model *m, uint32_t pid, uint32_t tid);
/* Adds cpu to a sorted set of n of *cap. */
int model_cpus_add(uint32_t **cpus, size_t *n, size_t *cap, uint32_t cpu);
/* The thread was seen on cpu. */
int model_add_cpu(struct wthread *w, uint32_t cpu);
/* Culprits by time taken, then count, then pid and tid. */
int model_cmp_culprit(const void *a, const void *b);
/* The task switched out for row i's next, and the one switched in, as culprits. */
struct culprit model_prev_task(const Hostprof__SchedSwitchTable *sw, size_t i);
struct culprit model_next_task(const Hostprof__SchedSwitchTable *sw, size_t i);
/* The slow syscall of this thread during which it went off the CPU at ts, or -1. */
ssize_t model_blocking_syscall(const struct model *m, const struct wthread *w, uint64_t ts);

/* ---- report_interference.c ---- */

/* After the scheduler's tables: the interference tables captured, and the verdict. */
int model_interference(struct model *m);
/* "irqs", "reclaim"...: the name of Snapshot.interference bit b, NULL past the last. */
const char *model_interference_name(size_t b);
/* Whether bit b's tables were not captured (fault-types is never missing: it only refines). */
bool model_interference_missing(const struct model *m, size_t b);
/* Faults per second over the periods the counts cover (the window when they say nothing). */
double model_fault_rate(const struct model *m, const struct fault_sum *fs);

/* ---- report_verdict.c ---- */

const char *report_policy_name(uint32_t policy);
/* Sched_switch states, one or several ORed, as ps prints them: "R", "R+", "S", "D", "SD"... */
void report_state_name(uint32_t state, char *buf, size_t len);
const char *report_syscall_name(const Hostprof__Snapshot *s, uint32_t nr, char *buf, size_t len);
/* "hog (pid 200, SCHED_FIFO prio 49)"; the tid too when it is not the process. */
void report_task_desc(const Hostprof__Snapshot *s, const struct culprit *c, char *buf, size_t len);
/* "softirq NET_RX", "irq 24 virtio3-rx", "irq 24" */
void report_irq_desc(const Hostprof__Snapshot *s, uint32_t kind, uint32_t num, uint32_t name, char *buf,
		     size_t len);
/* "mmap_lock (rwsem read)"; a lock without a name by its kind and address: "mutex 0xffff8880..." */
void report_lock_desc(const Hostprof__Snapshot *s, uint32_t name, uint32_t flags, uint64_t lock, char *buf,
		      size_t len);
/* ReclaimTable.result: "1234 pages reclaimed", or a compaction's "status 2" */
void report_reclaim_result(uint32_t kind, int64_t result, char *buf, size_t len);
/* "CPU 1", "CPUs 0,1,2", "CPUs 0,1,...,7 and 4 more" */
void report_cpus_desc(const uint32_t *cpus, size_t n, char *buf, size_t len);
/* "worst stall: acl_thread (tid 101) waited 30.0 ms at +0.900 s: preempted by hog (...)" */
void report_verdict_line(const struct model *m, char *buf, size_t len);

/* ---- small words ---- */

static inline void tally_add(struct tally *t, uint64_t dur, size_t row)
{
	if (!t->count || dur > t->max_ns) {
		t->max_ns = dur;
		t->max_row = row;
	}
	t->count++;
	t->time_ns += dur;
}

/* More time first, then more events; 0 for a tie. */
static inline int tally_cmp(const struct tally *x, const struct tally *y)
{
	if (x->time_ns != y->time_ns)
		return x->time_ns > y->time_ns ? -1 : 1;
	if (x->count != y->count)
		return x->count > y->count ? -1 : 1;
	return 0;
}

/* Room for one more element in *arrp, which holds n of *cap. */
static inline int reserve_one(void *arrp, size_t n, size_t *cap, size_t size)
{
	void **arr = arrp;
	size_t ncap;
	void *p;

	if (n < *cap)
		return 0;
	ncap = *cap ? *cap * 2 : 8;
	p = reallocarray(*arr, ncap, size);
	if (!p)
		return -ENOMEM;
	*arr = p;
	*cap = ncap;
	return 0;
}

static inline size_t model_thread_index(const struct model *m, const struct wthread *w)
{
	return (size_t)(w - m->t);
}

static inline double ms(uint64_t ns)
{
	return (double)ns / 1e6;
}

static inline double pct(uint64_t part, uint64_t whole)
{
	return whole ? 100.0 * (double)part / (double)whole : 0.0;
}

/* Seconds since the start of the window. */
static inline double rel_s(const struct model *m, uint64_t ts)
{
	return ts >= m->snap->start_ns ? (double)(ts - m->snap->start_ns) / 1e9 :
					 -(double)(m->snap->start_ns - ts) / 1e9;
}

static inline uint64_t window_ns(const Hostprof__Snapshot *s)
{
	return s->end_ns > s->start_ns ? s->end_ns - s->start_ns : 0;
}

static inline uint64_t percentile(const uint64_t *sorted, size_t n, unsigned int p)
{
	size_t rank = (p * n + 99) / 100; /* nearest rank, 1-based */

	if (!n)
		return 0;
	return sorted[rank ? rank - 1 : 0];
}

static inline uint64_t capture_drops(const Hostprof__CaptureStats *st)
{
	uint64_t sum = 0;

	for (size_t i = 0; st && i < st->n_drops; i++)
		sum += st->drops[i]->count;
	return sum;
}

static inline int report_flush(FILE *out)
{
	errno = 0;
	if (fflush(out) == EOF || ferror(out))
		return errno ? -errno : -EIO;
	return 0;
}

/* "EINTR" for a negative errno return value, else NULL */
static inline const char *errno_name(int64_t ret)
{
	return ret < 0 && ret > -4096 ? strerrorname_np((int)-ret) : NULL;
}

#endif
