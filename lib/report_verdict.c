// SPDX-License-Identifier: GPL-2.0-only
/*
 * The verdict line, and the words both writers of the report describe tasks, syscalls,
 * interrupts, locks and reclaim with (see report_internal.h).
 */
#include <inttypes.h>
#include <stdio.h>

#include "hps.h"
#include "macro.h"
#include "report_internal.h"

const char *report_policy_name(uint32_t policy)
{
	static const char *const names[] = { "SCHED_OTHER", "SCHED_FIFO", "SCHED_RR",	   "SCHED_BATCH",
					     "SCHED_ISO",   "SCHED_IDLE", "SCHED_DEADLINE" };

	return policy < ARRAY_SIZE(names) ? names[policy] : "SCHED_?";
}

/* Sched_switch states, one or several ORed, as ps prints them: "R", "R+", "S", "D", "SD"... */
void report_state_name(uint32_t state, char *buf, size_t len)
{
	size_t n = 0;

	if (state == HPS_STATE_RUNNING || state == HPS_STATE_PREEMPTED) {
		snprintf(buf, len, "%s", hps_state_name(state, NULL, 0));
		return;
	}
	for (uint32_t bit = 0x1; bit < HPS_STATE_PREEMPTED && n + 1 < len; bit <<= 1)
		if (state & bit)
			buf[n++] = hps_state_name(bit, NULL, 0)[0]; /* one letter each */
	if (state & ~HPS_STATE_KNOWN && n + 1 < len)
		buf[n++] = '?';
	buf[n] = '\0';
}

const char *report_syscall_name(const Hostprof__Snapshot *s, uint32_t nr, char *buf, size_t len)
{
	if (nr < s->n_syscall_names && s->syscall_names[nr][0])
		return s->syscall_names[nr];
	snprintf(buf, len, "syscall_%" PRIu32, nr);
	return buf;
}

/* "hog (pid 200, SCHED_FIFO prio 49)"; the tid too when it is not the process. */
void report_task_desc(const Hostprof__Snapshot *s, const struct culprit *c, char *buf, size_t len)
{
	char ids[48], pol[32] = "";

	if (c->tid == c->pid)
		snprintf(ids, sizeof(ids), "pid %" PRIu32, c->pid);
	else
		snprintf(ids, sizeof(ids), "tid %" PRIu32 ", pid %" PRIu32, c->tid, c->pid);
	if (c->has_policy)
		snprintf(pol, sizeof(pol), "%s ", report_policy_name(c->policy));
	snprintf(buf, len, "%s (%s, %sprio %" PRId32 ")", hps_str(s, c->comm), ids, pol, c->prio);
}

/* "softirq NET_RX", "irq 24 virtio3-rx", "irq 24" */
void report_irq_desc(const Hostprof__Snapshot *s, uint32_t kind, uint32_t num, uint32_t name, char *buf,
		     size_t len)
{
	const char *nm = hps_str(s, name);

	if (kind == HPS_IRQ_SOFT)
		snprintf(buf, len, "softirq %s", nm[0] ? nm : hps_softirq_name(num));
	else if (nm[0])
		snprintf(buf, len, "irq %" PRIu32 " %s", num, nm);
	else
		snprintf(buf, len, "irq %" PRIu32, num);
}

/* "mmap_lock (rwsem read)"; a lock without a name by its kind and address: "mutex 0xffff8880..." */
void report_lock_desc(const Hostprof__Snapshot *s, uint32_t name, uint32_t flags, uint64_t lock, char *buf,
		      size_t len)
{
	const char *nm = hps_str(s, name);

	if (!nm[0] && (flags & HPS_LOCK_MMAP))
		nm = "mmap_lock";
	if (nm[0])
		snprintf(buf, len, "%s (%s)", nm, hps_lock_kind_name(flags));
	else
		snprintf(buf, len, "%s 0x%" PRIx64, hps_lock_kind_name(flags), lock);
}

/* ReclaimTable.result: "1234 pages reclaimed", or a compaction's "status 2" */
void report_reclaim_result(uint32_t kind, int64_t result, char *buf, size_t len)
{
	if (kind == HPS_RECLAIM_COMPACT)
		snprintf(buf, len, "status %" PRId64, result);
	else
		snprintf(buf, len, "%" PRId64 " page%s reclaimed", result, result == 1 ? "" : "s");
}

/* "CPU 1", "CPUs 0,1,2", "CPUs 0,1,...,7 and 4 more" */
void report_cpus_desc(const uint32_t *cpus, size_t n, char *buf, size_t len)
{
	size_t off;

	off = (size_t)snprintf(buf, len, "CPU%s ", n == 1 ? "" : "s");
	for (size_t i = 0; i < n && i < TOP_GROUP_CPUS && off < len; i++)
		off += (size_t)snprintf(buf + off, len - off, "%s%" PRIu32, i ? "," : "", cpus[i]);
	if (n > TOP_GROUP_CPUS && off < len)
		snprintf(buf + off, len - off, " and %zu more", n - TOP_GROUP_CPUS);
}

/* " (then gave up: -4 EINTR)" for a lock wait that did not acquire, else "" */
static void lock_ret(int32_t ret, char *buf, size_t len)
{
	const char *e = errno_name(ret);

	if (!ret)
		buf[0] = '\0';
	else
		snprintf(buf, len, ", then gave up: %" PRId32 "%s%s", ret, e ? " " : "", e ? e : "");
}

/* The verdict's cause, after "worst stall: NAME (tid N) ". */
static void stall_cause(const struct model *m, char *buf, size_t len)
{
	const Hostprof__Snapshot *s = m->snap;
	const struct stall *st = &m->worst;
	const struct wthread *w = &m->t[st->thread];
	char task[160], state[16], nbuf[32];
	struct culprit c;

	switch (st->kind) {
	case STALL_PREEMPTED:
		c = model_next_task(s->switches, st->row);
		report_task_desc(s, &c, task, sizeof(task));
		snprintf(buf, len, "waited %.1f ms at %+.3f s: preempted by %s%s", ms(st->dur),
			 rel_s(m, st->ts), task, st->to_end ? ", still waiting when the window closed" : "");
		break;
	case STALL_RUNQUEUE:
		c = model_prev_task(s->switches, st->row);
		if (c.tid == 0) {
			snprintf(buf, len,
				 "waited %.1f ms at %+.3f s: runnable after a wakeup while CPU %" PRIu32
				 " was idle",
				 ms(st->dur), rel_s(m, st->ts), s->switches->cpu[st->row]);
			break;
		}
		report_task_desc(s, &c, task, sizeof(task));
		snprintf(buf, len,
			 "waited %.1f ms at %+.3f s: runnable after a wakeup, CPU %" PRIu32 " ran %s",
			 ms(st->dur), rel_s(m, st->ts), s->switches->cpu[st->row], task);
		break;
	case STALL_BLOCKED: {
		const Hostprof__OffCpuTable *t = s->offcpu;
		ssize_t sc = model_blocking_syscall(m, w, st->ts);
		char in[64] = "", waker[64];

		if (sc >= 0)
			snprintf(in, sizeof(in), " in %s",
				 report_syscall_name(s, s->syscalls->nr[sc], nbuf, sizeof(nbuf)));
		report_state_name(t->state[st->row], state, sizeof(state));
		if (t->waker_tid[st->row])
			snprintf(waker, sizeof(waker), "woken by %s tid %" PRIu32,
				 hps_str(s, t->waker_comm[st->row]), t->waker_tid[st->row]);
		else
			snprintf(waker, sizeof(waker), "waker unknown");
		snprintf(buf, len, "blocked %.1f ms%s at %+.3f s (off-CPU %s, %s)", ms(st->dur), in,
			 rel_s(m, st->ts), state, waker);
		break;
	}
	case STALL_RECLAIM: {
		const Hostprof__ReclaimTable *t = s->reclaims;
		char res[64];

		report_reclaim_result(t->kind[st->row], t->result[st->row], res, sizeof(res));
		snprintf(buf, len, "spent %.1f ms in %s at %+.3f s (order %" PRId32 ", %s)", ms(st->dur),
			 hps_reclaim_kind_name(t->kind[st->row]), rel_s(m, st->ts), t->order[st->row], res);
		break;
	}
	case STALL_LOCK: {
		const Hostprof__LockTable *t = s->locks;
		char lock[160], ret[64];

		report_lock_desc(s, t->name[st->row], t->flags[st->row], t->lock[st->row], lock,
				 sizeof(lock));
		lock_ret(t->ret[st->row], ret, sizeof(ret));
		snprintf(buf, len, "waited %.1f ms for %s at %+.3f s%s", ms(st->dur), lock, rel_s(m, st->ts),
			 ret);
		break;
	}
	case STALL_IRQ: {
		const Hostprof__IrqTable *t = s->irqs;
		char irq[96];

		report_irq_desc(s, t->kind[st->row], t->num[st->row], t->name[st->row], irq, sizeof(irq));
		if (st->waited)
			snprintf(buf, len, "was kept waiting %.1f ms by %s on CPU %" PRIu32 " at %+.3f s",
				 ms(st->dur), irq, t->cpu[st->row], rel_s(m, st->ts));
		else
			snprintf(buf, len, "was interrupted %.1f ms by %s on CPU %" PRIu32 " at %+.3f s",
				 ms(st->dur), irq, t->cpu[st->row], rel_s(m, st->ts));
		break;
	}
	case STALL_IRQ_TOTAL: {
		const struct irq_group *g = &w->irq_ran.g[st->row];
		char irq[96], cpus[96];

		report_irq_desc(s, g->kind, g->num, g->name, irq, sizeof(irq));
		report_cpus_desc(g->cpus, g->n_cpus, cpus, sizeof(cpus));
		snprintf(buf, len,
			 "lost %.1f%% of %s%s to %s (%.1f ms over %.3f s, %" PRIu64 " times, max %.1f ms)",
			 pct(g->sum.time_ns, window_ns(s)), g->n_cpus == 1 ? "" : "the window on ", cpus, irq,
			 ms(g->sum.time_ns), (double)window_ns(s) / 1e9, g->sum.count, ms(g->sum.max_ns));
		break;
	}
	case STALL_NONE:
		snprintf(buf, len, "none");
		break;
	}
}

/* ", within its 10.0 ms off-CPU D interval" when the verdict explains a scheduler stall, else "" */
static void explained_desc(const struct model *m, char *buf, size_t len)
{
	const struct stall *e = &m->explained;
	char state[16];

	buf[0] = '\0';
	if (e->kind == STALL_RUNQUEUE) {
		snprintf(buf, len, ", within its %.1f ms runqueue wait", ms(e->dur));
	} else if (e->kind == STALL_BLOCKED) {
		report_state_name(m->snap->offcpu->state[e->row], state, sizeof(state));
		snprintf(buf, len, ", within its %.1f ms off-CPU %s interval", ms(e->dur), state);
	}
}

void report_verdict_line(const struct model *m, char *buf, size_t len)
{
	char cause[400], within[80];

	if (m->worst.kind == STALL_NONE) {
		snprintf(
			buf, len,
			"worst stall: none: no watched thread was preempted, waited on a runqueue or blocked");
		return;
	}
	stall_cause(m, cause, sizeof(cause));
	explained_desc(m, within, sizeof(within));
	snprintf(buf, len, "worst stall: %s (tid %" PRIu32 ") %s%s", m->t[m->worst.thread].comm,
		 m->t[m->worst.thread].tid, cause, within);
}
