// SPDX-License-Identifier: GPL-2.0-only
/*
 * daemon/timeacct.c on records built here, as the drain files them with process PID:
 * a preemption cut by the tasks that ran on its CPU (RT, then CFS), a blocked interval
 * with its wakeup wait and a lock wait carved out of it, a switch-in seen before its
 * switch-out (another CPU's ring), hostprof's own tasks, an idle CPU (throttled), a hard
 * IRQ inside a softirq counted once, the runqueue histogram, threads past
 * ACCT_MAX_THREADS counted together, and the wait of a thread first seen as it is switched
 * in counted from the start of the process's history only.
 */
#include <string.h>

#include "check.h"
#include "macro.h"
#include "timeacct.h"

#define PID 4242
#define MS NSEC_PER_MSEC

static struct proc_acct a;

struct task {
	uint32_t tid, pid;
	const char *comm;
	int32_t prio;
	uint8_t policy;
};

static const struct task acl = { 101, PID, "acl_thread", 120, 0 }, acl2 = { 102, PID, "acl_thread", 120, 0 },
			 hog = { 200, 200, "hog", 49, 1 }, cfs = { 300, 300, "make", 120, 0 },
			 prof = { 999, 998, "hostprofd-snap", 139, 3 }, idle = { 0, 0, "swapper/1", 120, 0 };

static void sw(uint64_t ts, uint32_t cpu, const struct task *prev, uint32_t state, const struct task *next,
	       uint64_t wait, uint32_t kind)
{
	struct hp_switch e = {
		.hdr = { .ts = ts, .type = HP_EV_SWITCH, .size = sizeof(e), .cpu = cpu },
		.prev_tid = prev->tid,
		.prev_pid = prev->pid,
		.next_tid = next->tid,
		.next_pid = next->pid,
		.prev_prio = prev->prio,
		.next_prio = next->prio,
		.prev_state = state,
		.prev_policy = prev->policy,
		.next_policy = next->policy,
		.next_wait_ns = wait,
		.next_wait_kind = kind,
	};

	strncpy(e.prev_comm, prev->comm, HP_COMM_LEN - 1);
	strncpy(e.next_comm, next->comm, HP_COMM_LEN - 1);
	if (prev->pid == PID)
		e.flags |= HP_SW_PREV_WATCHED;
	if (next->pid == PID)
		e.flags |= HP_SW_NEXT_WATCHED;
	if (!e.flags) {
		e.flags = HP_SW_VICTIM_CPU;
		e.victim_pid = PID;
	}
	timeacct_record(&a, PID, &e.hdr);
}

static const struct acct_counts *of(uint32_t tid)
{
	static const struct acct_counts none;
	const struct thread_acct *t = timeacct_find(&a, tid);

	return t ? &t->c : &none;
}

#define LOST(tid, c) (of(tid)->lost_ns[c])

int main(void)
{
	struct acct_counts sum;
	uint64_t n;

	/* acl_thread runs on CPU 1; the RT hog preempts it for 10 ms, then a CFS task runs
	 * there for 5 ms before acl_thread gets its CPU back */
	sw(1 * MS, 1, &idle, 0, &acl, 0, 0);
	sw(100 * MS, 1, &acl, 0 /* R */, &hog, 0, 0);
	sw(110 * MS, 1, &hog, 0, &cfs, 0, 0);
	sw(115 * MS, 1, &cfs, 0, &acl, 15 * MS, HP_WAIT_PREEMPT);
	CHECK_EQ_U64(LOST(101, LOST_RT), 10 * MS);
	CHECK_EQ_U64(LOST(101, LOST_CFS), 5 * MS);
	CHECK_EQ_U64(of(101)->preemptions, 1);

	/* it blocks in S for 50 ms; 2 ms of that is its wait for the CPU after its wakeup,
	 * 20 ms a kernel lock it slept on */
	sw(200 * MS, 1, &acl, 1 /* S */, &idle, 0, 0);
	sw(250 * MS, 1, &cfs, 0, &acl, 2 * MS, HP_WAIT_WAKEUP);
	{
		struct hp_lock l = {
			.hdr = { .ts = 210 * MS, .type = HP_EV_LOCK, .size = sizeof(l), .cpu = 1 },
			.dur_ns = 20 * MS,
			.tid = 101,
			.pid = PID
		};

		timeacct_record(&a, PID, &l.hdr);
	}
	CHECK_EQ_U64(LOST(101, LOST_RUNQ), 2 * MS);
	CHECK_EQ_U64(LOST(101, LOST_LOCK), 20 * MS);
	CHECK_EQ_U64(LOST(101, LOST_BLOCKED), 0); /* final at its next switch-out */
	sw(260 * MS, 1, &acl, 0x2 /* D */, &idle, 0, 0);
	CHECK_EQ_U64(LOST(101, LOST_BLOCKED), 28 * MS);
	CHECK_EQ_U64(of(101)->preemptions, 1);

	/* woken after 30 ms in D; an idle CPU for 3 ms before it ran: throttled, not the runqueue */
	sw(290 * MS, 0, &idle, 0, &acl, 3 * MS, HP_WAIT_WAKEUP);
	CHECK_EQ_U64(LOST(101, LOST_THROTTLE), 3 * MS);
	CHECK_EQ_U64(LOST(101, LOST_RUNQ), 2 * MS);

	/* preempted while the CPU goes idle: throttled by its cgroup */
	sw(300 * MS, 0, &acl, 0, &idle, 0, 0);
	sw(350 * MS, 0, &idle, 0, &acl, 50 * MS, HP_WAIT_PREEMPT);
	CHECK_EQ_U64(LOST(101, LOST_THROTTLE), 53 * MS);

	/* the second thread: its switch-in (on CPU 0's ring) is drained before its
	 * switch-out on CPU 1, where a snapshot job of hostprof's took its CPU */
	sw(405 * MS, 0, &prof, 0, &acl2, 10 * MS, HP_WAIT_PREEMPT);
	sw(395 * MS, 1, &acl2, 0, &prof, 0, 0);
	CHECK_EQ_U64(LOST(102, LOST_HOSTPROF), 10 * MS);
	CHECK_EQ_U64(of(102)->preemptions, 1);

	/* a hard IRQ of 3 ms inside a softirq of 10 ms while acl_thread ran: 10 ms, once */
	{
		struct hp_irq h = { .hdr = { .ts = 501 * MS, .type = HP_EV_IRQ, .size = sizeof(h), .cpu = 0 },
				    .dur_ns = 3 * MS,
				    .tid = 101,
				    .pid = PID,
				    .kind = HP_IRQ_HARD,
				    .flags = HP_IRQ_RUNNING };
		struct hp_irq s = h;

		timeacct_record(&a, PID, &h.hdr);
		s.hdr.ts = 500 * MS;
		s.dur_ns = 10 * MS;
		s.kind = HP_IRQ_SOFT;
		timeacct_record(&a, PID, &s.hdr);
		/* one that ran while a thread waited delays whoever ran: not acl_thread's */
		s.flags = HP_IRQ_WAITING;
		timeacct_record(&a, PID, &s.hdr);
	}
	CHECK_EQ_U64(LOST(101, LOST_IRQ), 10 * MS);

	/* the runqueue histogram: every switch-in with a wait, in its bucket */
	n = 0;
	for (size_t b = 0; b < RUNQ_BUCKETS; b++)
		n += of(101)->runq[b];
	CHECK_EQ_U64(n, 4);
	CHECK_EQ_U64(of(101)->runq[10], 2); /* 15 ms and 50 ms: (10, 50] ms */
	CHECK_EQ_U64(of(101)->runq[7], 1); /* 2 ms: (1, 2.5] ms */
	CHECK_EQ_U64(of(101)->runq[8], 1); /* 3 ms: (2.5, 5] ms */
	CHECK_EQ_U64(of(101)->runq_ns, 70 * MS);

	/* threads past ACCT_MAX_THREADS: counted together, by what each record says */
	for (uint32_t i = 0; i < ACCT_MAX_THREADS + 10; i++) {
		struct task t = { 10000 + i, PID, "worker", 120, 0 };

		sw(1000 * MS + 2 * i, 0, &cfs, 0, &t, 1 * MS, HP_WAIT_WAKEUP);
		/* a switch-in with no switch-out before it waits for one (another CPU's ring
		 * may hold it); the next switch-out tells it came first */
		sw(1000 * MS + 2 * i + 1, 0, &t, 1, &cfs, 0, 0);
	}
	CHECK(a.other != NULL);
	timeacct_sum(&a, &sum);
	n = 0;
	for (size_t b = 0; b < RUNQ_BUCKETS; b++)
		n += sum.runq[b];
	CHECK_EQ_U64(n, 4 + 1 + ACCT_MAX_THREADS + 10);
	CHECK_EQ_U64(sum.lost_ns[LOST_RUNQ], 2 * MS + (ACCT_MAX_THREADS + 10) * MS);
	CHECK_EQ_U64(sum.lost_ns[LOST_RT], 10 * MS);
	CHECK_EQ_U64(sum.preemptions, 3);
	CHECK_STR(timeacct_cause_key(LOST_RUNQ), "runqueue");

	timeacct_free(&a);
	memset(&a, 0, sizeof(a));
	/* a thread first seen as it is switched in, preempted 50 ms before, 30 ms of them
	 * before the history starts (the process was watched at 5000 ms): 20 ms lost, as a
	 * report of that history says; counted at its next switch-out */
	{
		const struct task late = { 103, PID, "acl_thread", 120, 0 };

		a.since_ns = 5000 * MS;
		sw(5020 * MS, 1, &cfs, 0, &late, 50 * MS, HP_WAIT_PREEMPT);
		sw(5100 * MS, 1, &late, 1 /* S */, &idle, 0, 0);
		CHECK_EQ_U64(LOST(103, LOST_CFS), 20 * MS);
		/* preempted by a CFS task whose switch back to it the kernel did not report:
		 * switched out again 12 ms on, it ran meanwhile for a time not known: nothing
		 * of those 12 ms is lost to the CFS task (the report: not known) */
		sw(5200 * MS, 1, &idle, 0, &late, 0, 0);
		sw(5300 * MS, 1, &late, 0 /* R */, &cfs, 0, 0);
		sw(5312 * MS, 1, &late, 0 /* R */, &hog, 0, 0);
		CHECK_EQ_U64(LOST(103, LOST_CFS), 20 * MS);
		sw(5322 * MS, 1, &hog, 0, &late, 10 * MS, HP_WAIT_PREEMPT);
		CHECK_EQ_U64(LOST(103, LOST_RT), 10 * MS);
		CHECK_EQ_U64(LOST(103, LOST_CFS), 20 * MS);
		/* a record older than the start moves it back */
		sw(4990 * MS, 0, &cfs, 0, &idle, 0, 0);
		CHECK_EQ_U64(a.since_ns, 4990 * MS);
	}
	timeacct_free(&a);
	return check_summary();
}
