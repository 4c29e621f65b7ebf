// SPDX-License-Identifier: GPL-2.0-only
/*
 * Live time accounting of watched threads; see timeacct.h. Per record: a hash lookup of
 * the thread and a few additions; no allocation but when a thread is first seen.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "macro.h"
#include "timeacct.h"

#define IDLE_WAKE_MAX_NS (2 * NSEC_PER_MSEC) /* a wakeup behind an idle CPU for longer: throttled */
#define OUT_RUNNABLE 1
#define OUT_BLOCKED 2

const uint64_t timeacct_runq_bounds[RUNQ_BUCKETS - 1] = {
	10 * NSEC_PER_USEC,  25 * NSEC_PER_USEC,  50 * NSEC_PER_USEC, 100 * NSEC_PER_USEC,
	250 * NSEC_PER_USEC, 500 * NSEC_PER_USEC, 1 * NSEC_PER_MSEC,  2500 * NSEC_PER_USEC,
	5 * NSEC_PER_MSEC,   10 * NSEC_PER_MSEC,  50 * NSEC_PER_MSEC,
};

static const char *const cause_keys[LOST_MAX] = {
	[LOST_RT] = "rt",
	[LOST_CFS] = "cfs",
	[LOST_RUNQ] = "runqueue",
	[LOST_BLOCKED] = "blocked",
	[LOST_LOCK] = "lock",
	[LOST_RECLAIM] = "reclaim",
	[LOST_IRQ] = "irq",
	[LOST_THROTTLE] = "throttle",
	[LOST_MIGRATION] = "migration",
	[LOST_HOSTPROF] = "hostprof",
};

const char *timeacct_cause_key(enum lost_cause c)
{
	return c < LOST_MAX ? cause_keys[c] : "?";
}

/* S starts with the literal P: no call, no strlen (this runs at every switch drained) */
#define has_prefix(s, p) (!memcmp((s), (p), sizeof(p) - 1))

/* What kind of task had the CPU, as report_causes.c tells them apart (its emit_wait()).
 * Most names start with none of the letters below: one byte decides. */
static enum lost_cause task_class(uint32_t tid, uint32_t pid, const char *comm, int32_t prio, uint32_t policy)
{
	static pid_t self;

	if (!self)
		self = getpid();
	if (tid == 0)
		return LOST_THROTTLE; /* the idle task: nothing runnable there, it was throttled */
	if (pid == (uint32_t)self)
		return LOST_HOSTPROF;
	/* comm is HP_COMM_LEN bytes, NUL-padded: the prefixes below are shorter */
	switch (comm[0]) {
	case 'h':
		if (has_prefix(comm, "hostprofd") || !strncmp(comm, "hostprofctl", HP_COMM_LEN))
			return LOST_HOSTPROF;
		break;
	case 'k':
		if (has_prefix(comm, "ksoftirqd/"))
			return LOST_IRQ;
		break;
	case 'i':
		if (has_prefix(comm, "irq/"))
			return LOST_IRQ;
		break;
	case 'm':
		if (has_prefix(comm, "migration/"))
			return LOST_MIGRATION;
		break;
	}
	if (policy == 1 || policy == 2 || policy == 6 || prio < 100)
		return LOST_RT;
	return LOST_CFS;
}

/* The task that held the CPU before a thread woken by then was switched in: its wait is
 * the runqueue's, unless that task says otherwise. */
static enum lost_cause runq_class(enum lost_cause task, uint64_t wait)
{
	if (task == LOST_THROTTLE)
		return wait > IDLE_WAKE_MAX_NS ? LOST_THROTTLE : LOST_RUNQ;
	if (task == LOST_RT || task == LOST_CFS)
		return LOST_RUNQ;
	return task;
}

const struct thread_acct *timeacct_find(const struct proc_acct *a, uint32_t tid)
{
	size_t mask = a->n_slots - 1;

	if (!a->n_slots)
		return NULL;
	for (size_t i = (tid * 2654435761u) & mask; a->slots[i]; i = (i + 1) & mask)
		if (a->t[a->slots[i] - 1].tid == tid)
			return &a->t[a->slots[i] - 1];
	return NULL;
}

static struct thread_acct *thread_get(struct proc_acct *a, uint32_t tid)
{
	size_t mask = a->n_slots - 1, i;
	struct thread_acct *t;

	if (a->n_slots) {
		for (i = (tid * 2654435761u) & mask; a->slots[i]; i = (i + 1) & mask)
			if (a->t[a->slots[i] - 1].tid == tid)
				return &a->t[a->slots[i] - 1];
	}
	if (a->n >= ACCT_MAX_THREADS) {
		if (!a->other)
			a->other = calloc(1, sizeof(*a->other));
		return a->other;
	}
	if (a->n == a->cap) {
		size_t cap = a->cap ? a->cap * 2 : 8;
		struct thread_acct *v = reallocarray(a->t, cap, sizeof(*v));

		if (!v)
			return NULL;
		a->t = v;
		a->cap = cap;
	}
	if ((a->n + 1) * 2 > a->n_slots) {
		size_t ns = a->n_slots ? a->n_slots * 2 : 16;
		uint32_t *s = calloc(ns, sizeof(*s));

		if (!s)
			return NULL;
		for (size_t k = 0; k < a->n; k++) {
			for (i = (a->t[k].tid * 2654435761u) & (ns - 1); s[i]; i = (i + 1) & (ns - 1))
				;
			s[i] = k + 1;
		}
		free(a->slots);
		a->slots = s;
		a->n_slots = ns;
	}
	mask = a->n_slots - 1;
	for (i = (tid * 2654435761u) & mask; a->slots[i]; i = (i + 1) & mask)
		;
	t = &a->t[a->n];
	*t = (struct thread_acct){ .tid = tid };
	a->slots[i] = ++a->n;
	return t;
}

static void lose(struct thread_acct *t, enum lost_cause c, uint64_t ns)
{
	t->c.lost_ns[c] += ns;
}

/* A switch-in seen without its switch-out: what its own wait says, within the history. */
static void in_alone(const struct proc_acct *a, struct thread_acct *t, const struct acct_half *in)
{
	uint64_t wait = in->wait_ns;

	if (a->since_ns && in->ts - wait < a->since_ns)
		wait = in->ts > a->since_ns ? in->ts - a->since_ns : 0;
	if (in->kind == HP_WAIT_WAKEUP)
		lose(t, runq_class(in->cls, in->wait_ns), wait);
	else if (in->kind == HP_WAIT_PREEMPT)
		lose(t, in->cls, wait);
}

/* The previous blocked interval is final: what no lock or reclaim record took from it. */
static void commit_blocked(struct thread_acct *t)
{
	lose(t, LOST_BLOCKED, t->blk_left);
	t->blk_left = 0;
	t->blk_a = t->blk_b = 0;
}

static void waiter_add(struct proc_acct *a, struct thread_acct *t, const struct acct_half *o)
{
	if (a->n_waiters == a->cap_waiters) {
		size_t cap = a->cap_waiters ? a->cap_waiters * 2 : 8;
		uint32_t *v = reallocarray(a->waiters, cap, sizeof(*v));

		if (!v)
			return; /* then the task that took its CPU has all of the wait */
		a->waiters = v;
		a->cap_waiters = cap;
	}
	a->waiters[a->n_waiters++] = t - a->t;
	t->waiting = true;
	t->wait_cpu = o->cpu;
	t->wait_since = o->ts;
	t->wait_cls = o->cls;
}

static void waiter_del(struct proc_acct *a, struct thread_acct *t)
{
	for (size_t i = 0; i < a->n_waiters; i++)
		if (a->waiters[i] == (uint32_t)(t - a->t)) {
			a->waiters[i] = a->waiters[--a->n_waiters];
			break;
		}
	t->waiting = false;
}

/* A switch on a CPU where threads wait preempted: the task that ran there until now had
 * their time, the one switched in has it from now on. */
static void cut_waits(struct proc_acct *a, const struct hp_switch *e, uint8_t next_cls)
{
	for (size_t i = 0; i < a->n_waiters; i++) {
		struct thread_acct *t = &a->t[a->waiters[i]];

		/* its own switch-out: its switch-in was not reported (a kernel that hides the
		 * switches of some tasks); it ran since, for how long is not known, as the
		 * report says too */
		if (t->wait_cpu != e->hdr.cpu || e->hdr.ts < t->wait_since || t->tid == e->next_tid ||
		    t->tid == e->prev_tid)
			continue;
		lose(t, t->wait_cls, e->hdr.ts - t->wait_since);
		t->wait_since = e->hdr.ts;
		t->wait_cls = next_cls;
	}
}

static void pair(struct proc_acct *a, struct thread_acct *t, const struct acct_half *out,
		 const struct acct_half *in)
{
	uint64_t d = in->ts - out->ts, wait;

	if (out->kind == OUT_RUNNABLE) {
		if (!t->waiting || in->ts < t->wait_since) {
			lose(t, out->cls, d); /* the task that took its CPU has all of it */
			if (t->waiting)
				waiter_del(a, t);
			return;
		}
		/* the rest of the wait: on its CPU, the task running there; after a migration,
		 * the one that ran before it where it runs now */
		lose(t, in->cpu == t->wait_cpu ? t->wait_cls : in->cls, in->ts - t->wait_since);
		waiter_del(a, t);
		return;
	}
	wait = in->kind == HP_WAIT_WAKEUP ? MIN(in->wait_ns, d) : 0;
	commit_blocked(t);
	t->blk_a = out->ts;
	t->blk_b = in->ts - wait;
	t->blk_left = d - wait;
	if (wait)
		lose(t, runq_class(in->cls, wait), wait);
}

/* The threads past ACCT_MAX_THREADS, together: only what each record says alone. */
static void folded_switch(const struct proc_acct *a, struct thread_acct *t, const struct acct_half *h, bool in)
{
	if (!in) {
		t->c.preemptions += h->kind == OUT_RUNNABLE;
		return;
	}
	in_alone(a, t, h);
}

static void on_out(struct proc_acct *a, struct thread_acct *t, const struct acct_half *o)
{
	if (o->kind == OUT_RUNNABLE)
		t->c.preemptions++;
	if (t->waiting) /* an older switch-out whose switch-in was lost, or comes later */
		waiter_del(a, t);
	if (t->in.valid) {
		t->in.valid = false;
		if (t->in.ts > o->ts) { /* its switch-in came first, from another CPU's ring */
			pair(a, t, o, &t->in);
			return;
		}
		in_alone(a, t, &t->in);
	}
	commit_blocked(t);
	t->out = *o;
	if (o->kind == OUT_RUNNABLE)
		waiter_add(a, t, o);
}

static void count_runq(struct thread_acct *t, const struct acct_half *i)
{
	size_t b = 0;

	if (!i->kind)
		return;
	while (b < RUNQ_BUCKETS - 1 && i->wait_ns > timeacct_runq_bounds[b])
		b++;
	t->c.runq[b]++;
	t->c.runq_ns += i->wait_ns;
}

static void on_in(struct proc_acct *a, struct thread_acct *t, const struct acct_half *i)
{
	count_runq(t, i);
	if (t->out.valid && t->out.ts < i->ts) {
		t->out.valid = false;
		pair(a, t, &t->out, i);
		return;
	}
	if (t->in.valid)
		in_alone(a, t, &t->in);
	t->in = *i; /* its switch-out may still come, from another CPU's ring */
}

/* A lock wait or reclaim of [a, a + d): its own cause, and out of the blocked interval it lies in. */
static void carve(struct thread_acct *t, enum lost_cause c, uint64_t a, uint64_t d)
{
	uint64_t lo = MAX(a, t->blk_a), hi = MIN(a + d, t->blk_b);

	lose(t, c, d);
	if (t->blk_left && hi > lo)
		t->blk_left -= MIN(t->blk_left, hi - lo);
}

static void on_switch(struct proc_acct *a, uint32_t pid, const struct hp_switch *e)
{
	struct thread_acct *t;

	if (a->n_waiters)
		cut_waits(a, e,
			  task_class(e->next_tid, e->next_pid, e->next_comm, e->next_prio, e->next_policy));

	if ((e->flags & HP_SW_PREV_WATCHED) && e->prev_pid == pid && e->prev_tid) {
		struct acct_half o = {
			.ts = e->hdr.ts,
			.cpu = e->hdr.cpu,
			.kind = HP_STATE_RUNNABLE(e->prev_state) ? OUT_RUNNABLE : OUT_BLOCKED,
			.cls = task_class(e->next_tid, e->next_pid, e->next_comm, e->next_prio,
					  e->next_policy),
			.valid = true,
		};

		t = thread_get(a, e->prev_tid);
		if (t && t == a->other)
			folded_switch(a, t, &o, false);
		else if (t)
			on_out(a, t, &o);
	}
	if ((e->flags & HP_SW_NEXT_WATCHED) && e->next_pid == pid && e->next_tid) {
		struct acct_half i = {
			.ts = e->hdr.ts,
			.cpu = e->hdr.cpu,
			.wait_ns = e->next_wait_kind ? e->next_wait_ns : 0,
			.kind = e->next_wait_kind,
			.cls = task_class(e->prev_tid, e->prev_pid, e->prev_comm, e->prev_prio,
					  e->prev_policy),
			.valid = true,
		};

		t = thread_get(a, e->next_tid);
		if (t && t == a->other) {
			count_runq(t, &i);
			folded_switch(a, t, &i, true);
		} else if (t) {
			on_in(a, t, &i);
		}
	}
}

static void on_irq(struct proc_acct *a, const struct hp_irq *e)
{
	struct thread_acct *t;
	uint64_t d = e->dur_ns;

	if (!(e->flags & HP_IRQ_RUNNING) || !e->tid || !(t = thread_get(a, e->tid)))
		return;
	if (e->kind == HP_IRQ_HARD) {
		if (!t->hirq_b || e->hdr.ts < t->hirq_a)
			t->hirq_a = e->hdr.ts;
		t->hirq_b = MAX(t->hirq_b, e->hdr.ts + d);
		lose(t, LOST_IRQ, d);
		return;
	}
	/* a softirq: the hard IRQs inside it are counted already */
	if (t->hirq_b && t->hirq_a >= e->hdr.ts && t->hirq_b <= e->hdr.ts + d)
		d -= MIN(d, t->hirq_b - t->hirq_a);
	t->hirq_a = t->hirq_b = 0;
	lose(t, LOST_IRQ, d);
}

void timeacct_record(struct proc_acct *a, uint32_t pid, const struct hp_hdr *h)
{
	struct thread_acct *t;

	if (a->since_ns && h->ts < a->since_ns)
		a->since_ns = h->ts;
	switch (h->type) {
	case HP_EV_SWITCH:
		on_switch(a, pid, (const struct hp_switch *)h);
		break;
	case HP_EV_IRQ:
		on_irq(a, (const struct hp_irq *)h);
		break;
	case HP_EV_LOCK: {
		const struct hp_lock *e = (const void *)h;

		if (e->pid == pid && (t = thread_get(a, e->tid)))
			carve(t, LOST_LOCK, h->ts, e->dur_ns);
		break;
	}
	case HP_EV_RECLAIM: {
		const struct hp_reclaim *e = (const void *)h;

		if (e->pid == pid && (t = thread_get(a, e->tid)))
			carve(t, LOST_RECLAIM, h->ts, e->dur_ns);
		break;
	}
	case HP_EV_FAULTS: {
		const struct hp_faults *e = (const void *)h;

		if (e->pid == pid && (t = thread_get(a, e->tid))) {
			t->c.minor_faults += e->minor;
			t->c.major_faults += e->major;
		}
		break;
	}
	}
}

static void counts_add(struct acct_counts *s, const struct thread_acct *t)
{
	for (size_t c = 0; c < LOST_MAX; c++)
		s->lost_ns[c] += t->c.lost_ns[c];
	for (size_t b = 0; b < RUNQ_BUCKETS; b++)
		s->runq[b] += t->c.runq[b];
	s->preemptions += t->c.preemptions;
	s->runq_ns += t->c.runq_ns;
	s->minor_faults += t->c.minor_faults;
	s->major_faults += t->c.major_faults;
}

void timeacct_sum(const struct proc_acct *a, struct acct_counts *ret)
{
	struct acct_counts s = {};

	for (size_t i = 0; i < a->n; i++)
		counts_add(&s, &a->t[i]);
	if (a->other)
		counts_add(&s, a->other);
	*ret = s;
}

void timeacct_free(struct proc_acct *a)
{
	free(a->t);
	free(a->slots);
	free(a->other);
	free(a->waiters);
	*a = (struct proc_acct){};
}
