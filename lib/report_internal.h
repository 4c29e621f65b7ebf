/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The report's model of a snapshot, private to lib/report_*.c:
 *   report_model.c         builds it: the scheduler's tables, the longest stall;
 *   report_interference.c  adds the interference tables, and the cause they can name;
 *   report_causes.c        where each thread's time went, by cause and by who caused it;
 *                          its stall episodes; which threads dispatch, and the verdict's;
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
	const char *file; /* its line with the most of them (DWARF); NULL: not known */
	uint32_t line;
};

/* On-CPU samples whose leaf is in a file without symbols that a debug package would name. */
struct debug_hint {
	uint32_t mapping; /* index + 1 into Snapshot.mappings */
	uint64_t samples;
};

/*
 * Where a thread's time went (report_causes.c). Every nanosecond of the window is one
 * cause; all but CAUSE_RUNNING and CAUSE_UNKNOWN are time it lost. The order is the order
 * of the report's breakdown, and breaks ties in the verdict.
 */
enum cause {
	CAUSE_RUNNING, /* on its CPU, doing its own work */
	CAUSE_RT, /* runnable, its CPU taken by a realtime task (by task) */
	CAUSE_CFS, /* runnable, its CPU shared with a CFS task (by task) */
	CAUSE_RUNQ, /* woken, waiting for its CPU (by the task that ran there) */
	/* waiting for the Python GIL (by holder and the holder's function): blocked inside a
	 * take of it that the snapshot's GIL table has, or inside a wait given by model_gil() */
	CAUSE_GIL,
	CAUSE_BLOCKED, /* asleep: in which syscall, on what, woken by whom */
	CAUSE_LOCK, /* waiting for a kernel lock, spinning or asleep (by lock) */
	CAUSE_RECLAIM, /* memory reclaim or compaction in its own allocations (by kind) */
	CAUSE_FAULT, /* asleep in a page fault: major faults (by where) */
	CAUSE_IRQ, /* interrupts on its CPU, and their threads (ksoftirqd, irq/N) */
	CAUSE_THROTTLE, /* runnable while its CPU idled: its cgroup's CFS bandwidth (cpu.max) */
	CAUSE_MIGRATION, /* moved off the CPU it lives on: the waits elsewhere, the stopper */
	CAUSE_HOSTPROF, /* hostprof's own tasks had its CPU */
	CAUSE_UNKNOWN, /* not known: before its first switch in the window, after its exit */
	CAUSE_MAX
};

static inline bool cause_lost(enum cause c)
{
	return c != CAUSE_RUNNING && c != CAUSE_UNKNOWN;
}

/* Who or what caused time of one cause; which fields say who, by kind. */
enum agent_kind {
	AG_NONE, /* running, not known */
	AG_TASK, /* tid, pid, task: the task that had the CPU (tid 0: the CPU was idle) */
	AG_IRQ, /* key: kind << 32 | num, name: the interrupt */
	AG_LOCK, /* key: the lock, flags, name */
	AG_RECLAIM, /* key: the ReclaimTable kind */
	/* nr (-1: not known), sys_frame and site (frame + 1: the syscall's entry and where it
	 * slept; 0: none), tid, pid, task: the waker (tid 0: not known; flags 1: a timed sleep,
	 * which its timer ends) */
	AG_WAIT,
	AG_CPU, /* key: from << 32 | to (throttling: to alone; flags 1: the CPU idled) */
	/* tid, pid, task: the GIL's holder (tid 0: not known); name: the Python function it was
	 * in, key: its file << 32 | line (Snapshot.strings indexes, 0: not known) */
	AG_GIL,
};

struct agent {
	enum cause cause;
	enum agent_kind kind;
	uint32_t tid, pid;
	uint64_t key;
	uint32_t name, flags;
	int32_t nr;
	uint32_t sys_frame, site;
	struct culprit task; /* its name, policy and priority (tally unused) */
	struct tally sum; /* count: contiguous runs; time; max_ns: the longest run */
	uint64_t max_at; /* where the longest run began */
	uint64_t run_end, run_ns;
	/* CAUSE_GIL: key is the holder's function (a hash of its name, file and line; 0: its
	 * stack not read), this the GilTable frame (index + 1) that names it; not compared */
	uint32_t gil_frame;
};

/* A stall episode: a gap in the thread's running of EPISODE_MIN_NS or more, and its make-up. */
#define EPISODE_MIN_NS (1 * NSEC_PER_MSEC)
#define EPISODE_PARTS 4
struct episode_part {
	uint32_t agent; /* index into the thread's agents */
	uint64_t ns;
};

struct episode {
	uint64_t begin, end;
	struct episode_part part[EPISODE_PARTS];
	size_t n_parts;
	uint64_t rest_ns; /* parts past the first EPISODE_PARTS agents */
};

struct account {
	struct tally cause[CAUSE_MAX]; /* count: contiguous runs; max_ns: the longest */
	uint64_t cause_max_at[CAUSE_MAX], run_end[CAUSE_MAX], run_ns[CAUSE_MAX];
	struct agent *ag;
	size_t n_ag, cap_ag;
	uint32_t *slots; /* open addressing over ag by identity: index + 1, 0: empty */
	size_t n_slots; /* a power of 2, at least twice n_ag */
	uint32_t last_ag[CAUSE_MAX]; /* of each cause, the agent found last (index + 1) */
	uint32_t *by_cause; /* agent indexes by cause, then time taken; set when done */
	uint64_t lost_ns;
	struct episode *ep; /* in time order */
	size_t n_ep, cap_ep;
	uint64_t ep_ns; /* their time, summed */
	struct episode cur;
	bool in_ep;
	int64_t home_cpu; /* the CPU it lives on (-1: none): CAUSE_MIGRATION is time lost elsewhere */
	uint64_t moves_off; /* migrations away from it */
	bool switched; /* any switch in the window: without one, the time is not known */
};

struct wthread {
	uint32_t tid;
	const char *comm;
	bool dispatch; /* one of the dispatch threads the report is about first */
	/* its cpu cgroup's CFS bandwidth, when the snapshot says (Thread.cpu_quota_us) */
	const char *cgroup;
	int64_t cpu_quota_us; /* -1: no limit */
	uint64_t cpu_period_us;
	bool has_bandwidth;
	const uint32_t *cpus_allowed; /* its affinity when the snapshot was taken; NULL: not known */
	size_t n_cpus_allowed;
	struct account acc;

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
	size_t *sc_by_ts; /* the same rows by start (n_syscalls), for model_blocking_syscall() */
	uint64_t *sc_end_max; /* the latest end of sc_by_ts[0..k] */
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

/*
 * A wait of a thread for the Python GIL from begin to end, and who held it meanwhile: the
 * holder thread and the Python function it was in, with its file and line (names are
 * Snapshot.strings indexes, 0: not known; holder_tid 0: not known). The GIL capture
 * (issue 21) makes them: model_gil() takes a snapshot's, model_build_gil() a caller's.
 * Laid over the waiter's time (report_causes.c), a wait makes its running (the loop that
 * takes the GIL) and its blocked time CAUSE_GIL, by holder and function; the time it
 * waited for its CPU stays the scheduler's.
 */
struct gil_wait {
	uint32_t tid, pid; /* the waiter */
	uint64_t begin, end;
	uint32_t holder_tid, holder_pid, holder_comm;
	uint32_t function, file, line;
};

struct model {
	const Hostprof__Snapshot *snap;
	struct frame_names fn;
	struct wthread *t;
	size_t n;
	uint32_t *tid_slots; /* index + 1 of each tid in t, open addressed (0: empty) */
	size_t tid_mask;
	uint64_t *sw_ts, *mg_ts, *sc_ts, *off_ts;
	uint64_t *irq_ts, *rcl_ts, *flt_ts, *lck_ts;
	struct rq_wait *waits; /* of every thread, by begin */
	size_t n_waits, cap_waits;
	uint64_t samples; /* of the process */
	struct debug_hint *hints; /* by samples */
	size_t n_hints;
	uint32_t interference; /* HPS_INTERF_*: the tables captured */
	uint64_t unmatched_count, unmatched_ns; /* interrupts while a thread waited, matched to none */
	struct stall worst;
	/* interference: the longest candidate, and the one that best explains the worst stall */
	struct stall cause, explains;
	uint64_t explains_overlap;
	struct stall explained; /* when the verdict is an interference event: the stall it explains */
	/* report_causes.c */
	uint64_t *wk_ts; /* WakeupTable times */
	struct gil_wait *gil; /* by begin */
	size_t n_gil;
	uint64_t *gil_ts, *gil_dur; /* their begins and lengths, as the tables' rows */
	enum dispatch_why {
		DISPATCH_MATCHED, /* the threads whose names the globs match */
		DISPATCH_MOST_RUN, /* none matched: the thread that ran the most */
		DISPATCH_MAIN, /* none matched, none ran: the main thread */
		DISPATCH_NONE, /* no thread at all */
	} dispatch_why;
	const char *const *dispatch_globs;
	size_t n_dispatch_globs;
	bool dispatch_default; /* the snapshot records none: acl_thread, as before the setting */
	size_t n_dispatch;
	ssize_t verdict; /* the dispatch thread that lost the most, -1: none */
};

/* ---- report_model.c ---- */

/* The model of a snapshot, which must pass hps_validate() (-EINVAL otherwise). */
int model_build(const Hostprof__Snapshot *snap, struct model *ret);
/* The same, with the GIL waits gil (n of them) instead of the snapshot's: -EINVAL for a
 * wait that ends before it begins or names a string the snapshot has not. */
int model_build_gil(const Hostprof__Snapshot *snap, const struct gil_wait *gil, size_t n, struct model *ret);
void model_free(struct model *m);
/* The model of snap, shared while report_model_hold() holds snap (report.h), else its own;
 * read only; model_put() when done. */
int model_get(const Hostprof__Snapshot *snap, const struct model **ret);
void model_put(const struct model *m);
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
/* The same, for a caller that asks in time order: *hint (0 at first) keeps where the last
 * search ended, and the next one starts there. */
ssize_t model_blocking_syscall_from(const struct model *m, const struct wthread *w, uint64_t ts, size_t *hint);

/* ---- report_interference.c ---- */

/* After the scheduler's tables: the interference tables captured, and the verdict. */
int model_interference(struct model *m);
/* "irqs", "reclaim"...: the name of Snapshot.interference bit b, NULL past the last. */
const char *model_interference_name(size_t b);
/* Whether bit b's tables were not captured (fault-types is never missing: it only refines). */
bool model_interference_missing(const struct model *m, size_t b);
/* Faults per second over the periods the counts cover (the window when they say nothing). */
double model_fault_rate(const struct model *m, const struct fault_sum *fs);

/* ---- report_causes.c ---- */

/* The GIL waits of the snapshot, or gil (n of them) when not NULL, into m->gil. No
 * snapshot has them yet: the GIL capture's table (issue 21) is read here. */
int model_gil(struct model *m, const struct gil_wait *gil, size_t n);
/* After the rest of the model: where each thread's time went, the dispatch threads. */
int model_causes(struct model *m);
void model_causes_free(struct model *m);
/* The cause that cost thread w the most (CAUSE_MAX: it lost nothing). */
enum cause model_top_cause(const struct wthread *w);
/* The agents of cause c of w, most time first: [*ret_first, *ret_first + n). */
size_t model_cause_agents(const struct wthread *w, enum cause c, const uint32_t **ret_first);
/* Whether a task is hostprof's own (hostprofd, its snapshot jobs). */
bool model_is_hostprof(const Hostprof__Snapshot *s, uint32_t pid, const char *comm);
/* The episode parts of e, most time first, into ret (EPISODE_PARTS). */
size_t model_episode_parts(const struct episode *e, struct episode_part ret[EPISODE_PARTS]);
/* The name of the syscall of a wait agent ("read"), or NULL when not known. */
const char *model_wait_syscall(const struct model *m, const struct agent *a, char *buf, size_t len);

/* ---- report_text.c, report_json.c: the report of a model (snapshot_report_text() and
 * snapshot_report_json() of the model they build) ---- */

int report_text_model(const struct model *m, FILE *out);
int report_json_model(const struct model *m, FILE *out);

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
/* "acl_thread (tid 101) waited 30.0 ms at +0.900 s: preempted by hog (...)": the longest stall */
void report_longest_stall(const struct model *m, char *buf, size_t len);
/* The first line: "acl_thread lost 412.0 ms of 5.0 s (8.2%): CPU taken by realtime task hog
 * (pid 200, SCHED_FIFO prio 49), 390.0 ms, longest 31.0 ms" */
void report_verdict_line(const struct model *m, char *buf, size_t len);
/* Whether the verdict names a cause (false: nothing stands out, or nothing to say). */
bool report_verdict_stands_out(const struct model *m);
/* "running", "CPU taken by realtime tasks"...: a cause, as the breakdown names it. */
const char *report_cause_name(enum cause c);
/* "rt", "cfs"...: a cause, as the JSON names it. */
const char *report_cause_key(enum cause c);
/* Who or what an agent is: "hog (pid 200, SCHED_FIFO prio 49)", "read in pipe_read, woken by
 * server (pid 300, ...)", "softirq NET_RX", "CPU 1 -> CPU 0"... */
/* CAUSE_GIL's agent: its holder and the holder's function. */
void report_gil_holder_desc(const Hostprof__Snapshot *s, const struct agent *a, char *buf, size_t len);
/* report_episodes() of a model already built. */
struct report_episode;
int model_episodes(const struct model *m, struct report_episode **ret, size_t *ret_n);
void report_agent_desc(const struct model *m, const struct wthread *w, const struct agent *a, char *buf,
		       size_t len);
/* An AG_GIL agent: "logger (tid 123) in flush_stats (train.py:42)". */
void report_gil_holder_desc(const Hostprof__Snapshot *s, const struct agent *a, char *buf, size_t len);

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
