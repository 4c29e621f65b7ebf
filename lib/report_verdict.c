// SPDX-License-Identifier: GPL-2.0-only
/*
 * The verdict line, and the words both writers of the report describe tasks, syscalls,
 * interrupts, locks, reclaim, causes and their agents with (see report_internal.h).
 *
 * The verdict is about the dispatch thread that lost the most (report_causes.c): the
 * cause that cost it the most time in the window, the share of the window that thread
 * lost, the cause's total and its longest run. Totals rank, never a single event: a rare
 * long preemption does not outrank a cause that cost more. Nothing stands out when the
 * thread lost under 1% of the window and never stalled for EPISODE_MIN_NS; the line says
 * so, and names the most all the same. A second cause within 80% of the first is named
 * after it.
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

/* "hog (pid 200, SCHED_FIFO prio 49)"; the tid too when it is not the process; hostprof's own say so. */
void report_task_desc(const Hostprof__Snapshot *s, const struct culprit *c, char *buf, size_t len)
{
	char ids[48], pol[32] = "";

	if (c->tid == c->pid)
		snprintf(ids, sizeof(ids), "pid %" PRIu32, c->pid);
	else
		snprintf(ids, sizeof(ids), "tid %" PRIu32 ", pid %" PRIu32, c->tid, c->pid);
	if (c->has_policy)
		snprintf(pol, sizeof(pol), "%s ", report_policy_name(c->policy));
	snprintf(buf, len, "%s (%s, %sprio %" PRId32 "%s)", hps_str(s, c->comm), ids, pol, c->prio,
		 c->tid && model_is_hostprof(s, c->pid, hps_str(s, c->comm)) ? ", hostprof's own" : "");
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

/* The longest stall's cause, after "NAME (tid N) ". */
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

void report_longest_stall(const struct model *m, char *buf, size_t len)
{
	char cause[400], within[80];

	if (m->worst.kind == STALL_NONE) {
		snprintf(buf, len, "none: no watched thread was preempted, waited on a runqueue or blocked");
		return;
	}
	stall_cause(m, cause, sizeof(cause));
	explained_desc(m, within, sizeof(within));
	snprintf(buf, len, "%s (tid %" PRIu32 ") %s%s", m->t[m->worst.thread].comm, m->t[m->worst.thread].tid,
		 cause, within);
}

/* ---- causes, agents and the verdict ---- */

static const char *const cause_names[CAUSE_MAX] = {
	[CAUSE_RUNNING] = "running",
	[CAUSE_RT] = "CPU taken by realtime tasks",
	[CAUSE_CFS] = "CPU shared with other tasks",
	[CAUSE_RUNQ] = "waiting for its CPU after wakeups",
	[CAUSE_GIL] = "the GIL",
	[CAUSE_BLOCKED] = "blocked",
	[CAUSE_LOCK] = "kernel lock waits",
	[CAUSE_RECLAIM] = "memory reclaim",
	[CAUSE_FAULT] = "major page faults",
	[CAUSE_IRQ] = "interrupts",
	[CAUSE_THROTTLE] = "CFS bandwidth throttling",
	[CAUSE_MIGRATION] = "moved off its CPU",
	[CAUSE_HOSTPROF] = "hostprof itself",
	[CAUSE_UNKNOWN] = "not known",
};

static const char *const cause_keys[CAUSE_MAX] = {
	[CAUSE_RUNNING] = "running",   [CAUSE_RT] = "rt",
	[CAUSE_CFS] = "cfs",	       [CAUSE_RUNQ] = "runqueue",
	[CAUSE_GIL] = "gil",	       [CAUSE_BLOCKED] = "blocked",
	[CAUSE_LOCK] = "lock",	       [CAUSE_RECLAIM] = "reclaim",
	[CAUSE_FAULT] = "fault",       [CAUSE_IRQ] = "irq",
	[CAUSE_THROTTLE] = "throttle", [CAUSE_MIGRATION] = "migration",
	[CAUSE_HOSTPROF] = "hostprof", [CAUSE_UNKNOWN] = "unknown",
};

const char *report_cause_name(enum cause c)
{
	return c < CAUSE_MAX ? cause_names[c] : "?";
}

const char *report_cause_key(enum cause c)
{
	return c < CAUSE_MAX ? cause_keys[c] : "?";
}

/* "server (pid 300)", "server (tid 301, pid 300)", for a task known by its name and ids alone. */
static void waker_desc(const Hostprof__Snapshot *s, const struct agent *a, char *buf, size_t len)
{
	const char *comm = hps_str(s, a->task.comm);

	if (a->flags & 1)
		snprintf(buf, len, "until its timer");
	else if (!a->tid)
		snprintf(buf, len, "waker unknown");
	else if (a->tid == a->pid)
		snprintf(buf, len, "woken by %s (pid %" PRIu32 ")", comm[0] ? comm : "?", a->pid);
	else
		snprintf(buf, len, "woken by %s (tid %" PRIu32 ", pid %" PRIu32 ")", comm[0] ? comm : "?",
			 a->tid, a->pid);
}

/* "logger (tid 123) in flush_stats (train.py:42)": the GIL's holder and where it was, from
 * the snapshot's GIL table (gil_frame) or from a wait given by model_gil() (name, key) */
void report_gil_holder_desc(const Hostprof__Snapshot *s, const struct agent *a, char *buf, size_t len)
{
	const Hostprof__PythonFrame *fr = a->gil_frame && s->gil && a->gil_frame <= s->gil->n_frames ?
						  s->gil->frames[a->gil_frame - 1] :
						  NULL;
	const char *comm = hps_str(s, a->task.comm), *fn = hps_str(s, a->name);
	const char *file = hps_str(s, (uint32_t)(a->key >> 32));
	uint32_t line = (uint32_t)a->key;
	char who[64], where[320] = "", at[24] = "";

	if (!a->tid)
		snprintf(who, sizeof(who), "a thread not known");
	else if (comm[0])
		snprintf(who, sizeof(who), "%s (tid %" PRIu32 ")", comm, a->tid);
	else
		snprintf(who, sizeof(who), "tid %" PRIu32, a->tid);
	if (fr) {
		fn = fr->function && fr->function[0] ? fr->function : "?";
		file = fr->file && fr->file[0] ? fr->file : "?";
		line = fr->line;
	} else if (a->tid && !fn[0] && !file[0]) {
		snprintf(where, sizeof(where), " (its stack not read)");
	}
	if (line)
		snprintf(at, sizeof(at), ":%" PRIu32, line);
	if (fn[0] && file[0])
		snprintf(where, sizeof(where), " in %s (%s%s)", fn, file, at);
	else if (fn[0] || file[0])
		snprintf(where, sizeof(where), " in %s%s", fn[0] ? fn : file, fn[0] ? "" : at);
	snprintf(buf, len, "%s%s", who, where);
}

void report_agent_desc(const struct model *m, const struct wthread *w, const struct agent *a, char *buf,
		       size_t len)
{
	const Hostprof__Snapshot *s = m->snap;
	char sys[32], waker[96];
	const char *sc, *site;

	(void)w;
	switch (a->kind) {
	case AG_NONE:
		buf[0] = '\0';
		break;
	case AG_TASK:
		if (a->cause == CAUSE_GIL)
			report_gil_holder_desc(s, a, buf, len);
		else if (!a->tid)
			snprintf(buf, len, "an idle CPU, waking up");
		else
			report_task_desc(s, &a->task, buf, len);
		break;
	case AG_IRQ:
		report_irq_desc(s, (uint32_t)(a->key >> 32), (uint32_t)a->key, a->name, buf, len);
		break;
	case AG_LOCK:
		report_lock_desc(s, a->name, a->flags, a->key, buf, len);
		break;
	case AG_RECLAIM:
		snprintf(buf, len, "%s", hps_reclaim_kind_name((uint32_t)a->key));
		break;
	case AG_WAIT:
		sc = model_wait_syscall(m, a, sys, sizeof(sys));
		site = a->site ? m->fn.name[a->site - 1] : NULL;
		if (a->cause == CAUSE_FAULT) {
			snprintf(buf, len, "asleep in %s", site ? site : "the fault path");
			break;
		}
		waker_desc(s, a, waker, sizeof(waker));
		if (sc && site)
			snprintf(buf, len, "in %s (%s), %s", sc, site, waker);
		else if (sc || site)
			snprintf(buf, len, "in %s, %s", sc ? sc : site, waker);
		else
			snprintf(buf, len, "%s", waker);
		break;
	case AG_GIL:
		report_gil_holder_desc(s, a, buf, len);
		break;
	case AG_CPU:
		if (a->cause == CAUSE_MIGRATION)
			snprintf(buf, len, "off CPU %" PRIu32 ", waiting on CPU %" PRIu32,
				 (uint32_t)(a->key >> 32), (uint32_t)a->key);
		else if (a->flags & 1)
			snprintf(buf, len, "runnable while CPU %" PRIu32 " idled", (uint32_t)a->key);
		else
			snprintf(buf, len, "runnable on CPU %" PRIu32 " past its quota", (uint32_t)a->key);
		break;
	}
}

/* "412 ms", "31.0 ms", "0.25 ms" */
static void ms_desc(uint64_t ns, char *buf, size_t len)
{
	double v = ms(ns);

	snprintf(buf, len, v >= 10 ? "%.0f ms" : v >= 0.1 ? "%.1f ms" : "%.2f ms", v);
}

/* "5.0 s", "500 ms" */
static void window_desc(uint64_t ns, char *buf, size_t len)
{
	if (ns >= NSEC_PER_SEC)
		snprintf(buf, len, "%.1f s", (double)ns / 1e9);
	else
		ms_desc(ns, buf, len);
}

/* The cause c of w in words, after its top agent: "CPU taken by realtime task hog (...)". */
static void cause_phrase(const struct model *m, const struct wthread *w, enum cause c, char *buf, size_t len)
{
	const uint32_t *first;
	size_t n = model_cause_agents(w, c, &first);
	const struct agent *a = n ? &w->acc.ag[first[0]] : NULL;
	char ag[320] = "", more[80] = "";

	if (a)
		report_agent_desc(m, w, a, ag, sizeof(ag));
	if (n > 1 && c == CAUSE_GIL) {
		/* the same holder in other places is still that holder: say which is which */
		size_t places = 0, holders = 0;

		for (size_t i = 1; i < n; i++)
			w->acc.ag[first[i]].tid == a->tid ? places++ : holders++;
		if (places && holders)
			snprintf(more, sizeof(more), " (+%zu places) and %zu more", places, holders);
		else if (places)
			snprintf(more, sizeof(more), " and %zu more place%s", places, places > 1 ? "s" : "");
		else
			snprintf(more, sizeof(more), " and %zu more", holders);
	} else if (n > 1) {
		snprintf(more, sizeof(more), " and %zu more", n - 1);
	}
	switch (c) {
	case CAUSE_RT:
		snprintf(buf, len, "CPU taken by realtime task %s%s", ag, more);
		break;
	case CAUSE_CFS:
		snprintf(buf, len, "CPU shared with %s%s", ag, more);
		break;
	case CAUSE_RUNQ:
		snprintf(buf, len, "waiting for its CPU after wakeups, behind %s%s", ag, more);
		break;
	case CAUSE_GIL:
		snprintf(buf, len, "the GIL, held by %s%s", ag, more);
		break;
	case CAUSE_BLOCKED:
		snprintf(buf, len, "blocked %s", ag);
		break;
	case CAUSE_LOCK:
		snprintf(buf, len, "waiting for kernel lock %s%s", ag, more);
		break;
	case CAUSE_RECLAIM:
		snprintf(buf, len, "%s in its own allocations", ag);
		break;
	case CAUSE_FAULT:
		snprintf(buf, len, "major page faults, %s", ag);
		break;
	case CAUSE_IRQ:
		snprintf(buf, len, "interrupts: %s%s", ag, more);
		break;
	case CAUSE_THROTTLE:
		if (w->has_bandwidth && w->cpu_quota_us > 0)
			snprintf(
				buf, len,
				"CFS bandwidth throttling: its cgroup %s allows %.1f ms of every %.1f ms, %s%s",
				w->cgroup, (double)w->cpu_quota_us / 1e3, (double)w->cpu_period_us / 1e3, ag,
				more);
		else
			snprintf(buf, len, "CFS bandwidth throttling of its cgroup (cpu.max): %s%s", ag,
				 more);
		break;
	case CAUSE_MIGRATION:
		if (a && a->kind == AG_CPU)
			snprintf(buf, len,
				 "moved off CPU %" PRIu32 " (%" PRIu64 " time%s), waiting on CPU %" PRIu32,
				 (uint32_t)(a->key >> 32), w->acc.moves_off, w->acc.moves_off == 1 ? "" : "s",
				 (uint32_t)a->key);
		else
			snprintf(buf, len, "moved off its CPU by %s", ag);
		break;
	case CAUSE_HOSTPROF:
		snprintf(buf, len, "hostprof itself: %s", ag);
		break;
	default:
		snprintf(buf, len, "%s", report_cause_name(c));
		break;
	}
}

bool report_verdict_stands_out(const struct model *m)
{
	const struct wthread *w = m->verdict >= 0 ? &m->t[m->verdict] : NULL;
	enum cause top = w ? model_top_cause(w) : CAUSE_MAX;
	uint64_t win = window_ns(m->snap);

	if (top == CAUSE_MAX)
		return false;
	return w->acc.lost_ns * 100 >= win || w->acc.n_ep > 0;
}

/* The cause after the top one, when it comes within 80% of it; CAUSE_MAX otherwise. */
static enum cause close_second(const struct wthread *w, enum cause top)
{
	enum cause best = CAUSE_MAX;

	for (enum cause c = 0; c < CAUSE_MAX; c++)
		if (c != top && cause_lost(c) && w->acc.cause[c].time_ns &&
		    (best == CAUSE_MAX || w->acc.cause[c].time_ns > w->acc.cause[best].time_ns))
			best = c;
	if (best != CAUSE_MAX && w->acc.cause[best].time_ns * 5 >= w->acc.cause[top].time_ns * 4)
		return best;
	return CAUSE_MAX;
}

void report_verdict_line(const struct model *m, char *buf, size_t len)
{
	const struct wthread *w;
	char who[64], lost[32], win[32], total[32], longest[32], phrase[480], second[64] = "";
	enum cause top, c2;

	if (m->verdict < 0) {
		snprintf(buf, len, "no thread to report on: the snapshot has no thread of pid %" PRIu32,
			 m->snap->pid);
		return;
	}
	w = &m->t[m->verdict];
	if (m->n_dispatch > 1)
		snprintf(who, sizeof(who), "%s (tid %" PRIu32 ")", w->comm[0] ? w->comm : "?", w->tid);
	else
		snprintf(who, sizeof(who), "%s", w->comm[0] ? w->comm : "?");
	window_desc(window_ns(m->snap), win, sizeof(win));
	top = model_top_cause(w);
	if (!w->acc.switched) {
		snprintf(buf, len, "%s: nothing known of its %s: no switch of it in the window", who, win);
		return;
	}
	if (top == CAUSE_MAX) {
		snprintf(buf, len, "%s lost nothing in %s: it ran, or slept, whenever it asked to", who, win);
		return;
	}
	ms_desc(w->acc.lost_ns, lost, sizeof(lost));
	ms_desc(w->acc.cause[top].time_ns, total, sizeof(total));
	ms_desc(w->acc.cause[top].max_ns, longest, sizeof(longest));
	cause_phrase(m, w, top, phrase, sizeof(phrase));
	c2 = close_second(w, top);
	if (c2 != CAUSE_MAX) {
		char t2[32];

		ms_desc(w->acc.cause[c2].time_ns, t2, sizeof(t2));
		snprintf(second, sizeof(second), "; then %s, %s", report_cause_name(c2), t2);
	}
	snprintf(buf, len, "%s lost %s of %s (%.1f%%): %s%s, %s, longest %s%s", who, lost, win,
		 pct(w->acc.lost_ns, window_ns(m->snap)),
		 report_verdict_stands_out(m) ? "" : "nothing stands out; the most: ", phrase, total, longest,
		 second);
}
