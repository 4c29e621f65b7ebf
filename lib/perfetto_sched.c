// SPDX-License-Identifier: GPL-2.0-only
/*
 * Part 4 of the Perfetto trace (export_perfetto.c describes it): the sched_switch rows,
 * the WakeupTable rows and the entries and exits of the IrqTable rows, merged by time and
 * written per CPU in FtraceEventBundles.
 *
 * A switch or a wakeup goes into the bundle's CompactSched, which keeps of a switch only
 * its time, prev_state and next task (tid, prio, comm index) and of a wakeup the woken task
 * and its target CPU: a reader takes the previous task of a compact switch, and the waker
 * of a compact wakeup, from the task the CPU's previous switch put on it. So a row is
 * written compactly only when that reading gives back what the row says:
 *   - a switch whose prev (tid, comm, prio) is the next of the CPU's previous switch;
 *   - a wakeup whose waker is the task the CPU's previous switch put on it, and whose
 *     woken task's prio is known;
 * and when no other switch of that CPU falls on the same nanosecond (a reader orders the
 * compact and the full events of one instant as it likes). Every other row is a full
 * FtraceEvent in the same bundle, and a reader follows the CPU from its next as well. The
 * snapshot records every switch that involves a watched task, so on a CPU that runs one the
 * chain breaks only where two other tasks switched between themselves: in the bench's
 * training-like load, 3 switches in 1000.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "hps.h"
#include "macro.h"
#include "perfetto_internal.h"

#define EXPORT_BUNDLE_EVENTS 1000
#define SOFTIRQ_VECTORS 10 /* HI 0 .. RCU 9: the ones trace_processor has a name for */
#define COMM_SLOTS 2048 /* the bundle's comm intern table: a power of 2 above 2 * EXPORT_BUNDLE_EVENTS */

enum {
	BUNDLE_CPU = 1,
	BUNDLE_EVENT = 2,
	BUNDLE_COMPACT_SCHED = 4,
	FTRACE_EVENT_TIMESTAMP = 1,
	FTRACE_EVENT_PID = 2,
	FTRACE_EVENT_SCHED_SWITCH = 4,
	FTRACE_EVENT_SCHED_WAKING = 20,
	FTRACE_EVENT_SOFTIRQ_ENTRY = 24,
	FTRACE_EVENT_SOFTIRQ_EXIT = 25,
	FTRACE_EVENT_IRQ_HANDLER_ENTRY = 36,
	FTRACE_EVENT_IRQ_HANDLER_EXIT = 37,
};

enum {
	COMPACT_SWITCH_TIMESTAMP = 1,
	COMPACT_SWITCH_PREV_STATE = 2,
	COMPACT_SWITCH_NEXT_PID = 3,
	COMPACT_SWITCH_NEXT_PRIO = 4,
	COMPACT_INTERN_TABLE = 5,
	COMPACT_SWITCH_NEXT_COMM_INDEX = 6,
	COMPACT_WAKING_TIMESTAMP = 7,
	COMPACT_WAKING_PID = 8,
	COMPACT_WAKING_TARGET_CPU = 9,
	COMPACT_WAKING_PRIO = 10,
	COMPACT_WAKING_COMM_INDEX = 11,
};

enum {
	SCHED_SWITCH_PREV_COMM = 1,
	SCHED_SWITCH_PREV_PID = 2,
	SCHED_SWITCH_PREV_PRIO = 3,
	SCHED_SWITCH_PREV_STATE = 4,
	SCHED_SWITCH_NEXT_COMM = 5,
	SCHED_SWITCH_NEXT_PID = 6,
	SCHED_SWITCH_NEXT_PRIO = 7,
	SCHED_WAKING_COMM = 1,
	SCHED_WAKING_PID = 2,
	SCHED_WAKING_PRIO = 3,
	SCHED_WAKING_SUCCESS = 4,
	SCHED_WAKING_TARGET_CPU = 5,
	IRQ_HANDLER_ENTRY_IRQ = 1,
	IRQ_HANDLER_ENTRY_NAME = 2,
	IRQ_HANDLER_EXIT_IRQ = 1,
	IRQ_HANDLER_EXIT_RET = 2,
	SOFTIRQ_ENTRY_VEC = 1,
	SOFTIRQ_EXIT_VEC = 1,
};

/* What a bundle holds: a sched_switch row, a WakeupTable row, an IrqTable row's entry or exit. */
enum { EV_SWITCH, EV_WAKING, EV_IRQ_ENTRY, EV_IRQ_EXIT };
#define EV_COMPACT 0x80 /* a switch or a wakeup that goes into the CompactSched */

/* The events of one CPU waiting to go out as one bundle. */
struct cpu_batch {
	uint32_t n;
	uint32_t idx[EXPORT_BUNDLE_EVENTS];
	uint64_t ts[EXPORT_BUNDLE_EVENTS];
	int32_t prio[EXPORT_BUNDLE_EVENTS]; /* sched_waking: the woken task's, or PRIO_UNKNOWN */
	uint8_t kind[EXPORT_BUNDLE_EVENTS];
};

/* What a reader will take a CPU to be running: the next task of its latest switch. */
struct cpu_chain {
	bool seen;
	uint32_t tid, comm;
	int32_t prio;
};

/* An IRQ whose exit is still to be written. */
struct irq_exit {
	uint64_t ts;
	uint32_t idx;
};

struct sched {
	struct pf_exporter *e;
	struct cpu_batch **batches;
	struct cpu_chain *chain;
	uint8_t *switch_tie, *waking_tie; /* per row: another switch of its CPU at its nanosecond */
	/* IRQs entered whose exit is not written yet: a min-heap by (ts, idx) */
	struct irq_exit *exits;
	size_t nexits, exits_cap;
	/* the comm intern table of the bundle being written */
	const char *comms[EXPORT_BUNDLE_EVENTS];
	uint32_t ncomms, gen;
	uint32_t comm_index[EXPORT_BUNDLE_EVENTS]; /* per event of the batch */
	struct {
		const char *s;
		uint32_t gen, idx;
	} slots[COMM_SLOTS];
};

/* ---- Full events -------------------------------------------------------------------------- */

static void write_sched_switch(struct pbw *w, const Hostprof__Snapshot *s, size_t i, uint64_t ts)
{
	const Hostprof__SchedSwitchTable *t = s->switches;
	size_t ev, sw;

	ev = pbw_begin(w, BUNDLE_EVENT);
	pbw_varint(w, FTRACE_EVENT_TIMESTAMP, ts);
	pbw_varint(w, FTRACE_EVENT_PID, t->prev_tid[i]);
	sw = pbw_begin(w, FTRACE_EVENT_SCHED_SWITCH);
	pbw_string(w, SCHED_SWITCH_PREV_COMM, pf_string(s, t->prev_comm[i]));
	pbw_varint(w, SCHED_SWITCH_PREV_PID, t->prev_tid[i]);
	pbw_int(w, SCHED_SWITCH_PREV_PRIO, t->prev_prio[i]);
	pbw_int(w, SCHED_SWITCH_PREV_STATE, t->prev_state[i]);
	pbw_string(w, SCHED_SWITCH_NEXT_COMM, pf_string(s, t->next_comm[i]));
	pbw_varint(w, SCHED_SWITCH_NEXT_PID, t->next_tid[i]);
	pbw_int(w, SCHED_SWITCH_NEXT_PRIO, t->next_prio[i]);
	pbw_end(w, sw);
	pbw_end(w, ev);
}

/* The name of the task a WakeupTable row wakes: its thread's (snapview.h). */
static const char *woken_comm(struct pf_exporter *e, size_t i)
{
	const struct pf_thread *woken = pf_thread(e, e->snap->wakeups->tid[i]);

	return woken ? woken->id->comm : "";
}

static void write_sched_waking(struct pf_exporter *e, size_t i, uint64_t ts, int32_t prio)
{
	const Hostprof__WakeupTable *t = e->snap->wakeups;
	struct pbw *w = &e->w;
	size_t ev, wk;

	ev = pbw_begin(w, BUNDLE_EVENT);
	pbw_varint(w, FTRACE_EVENT_TIMESTAMP, ts);
	pbw_varint(w, FTRACE_EVENT_PID, t->waker_tid[i]);
	wk = pbw_begin(w, FTRACE_EVENT_SCHED_WAKING);
	pbw_string(w, SCHED_WAKING_COMM, woken_comm(e, i));
	pbw_varint(w, SCHED_WAKING_PID, t->tid[i]);
	if (prio != PRIO_UNKNOWN)
		pbw_int(w, SCHED_WAKING_PRIO, prio);
	pbw_varint(w, SCHED_WAKING_SUCCESS, 1);
	pbw_varint(w, SCHED_WAKING_TARGET_CPU, t->target_cpu[i]);
	pbw_end(w, wk);
	pbw_end(w, ev);
}

/* The entry (or exit) of IrqTable row i: irq_handler_* for a hard IRQ, softirq_* for a softirq. */
static void write_irq(struct pf_exporter *e, size_t i, uint64_t ts, bool exit)
{
	const Hostprof__IrqTable *t = e->snap->irqs;
	struct pbw *w = &e->w;
	size_t ev, irq;

	ev = pbw_begin(w, BUNDLE_EVENT);
	pbw_varint(w, FTRACE_EVENT_TIMESTAMP, ts);
	if ((t->flags[i] & HPS_IRQ_INTERRUPTED) && t->tid[i])
		pbw_varint(w, FTRACE_EVENT_PID, t->tid[i]);
	if (t->kind[i] == HPS_IRQ_HARD) {
		if (exit) {
			irq = pbw_begin(w, FTRACE_EVENT_IRQ_HANDLER_EXIT);
			pbw_int(w, IRQ_HANDLER_EXIT_IRQ, (int32_t)t->num[i]);
			pbw_int(w, IRQ_HANDLER_EXIT_RET, 1); /* IRQ_HANDLED: see export_perfetto.c */
		} else {
			irq = pbw_begin(w, FTRACE_EVENT_IRQ_HANDLER_ENTRY);
			pbw_int(w, IRQ_HANDLER_ENTRY_IRQ, (int32_t)t->num[i]);
			pbw_string(w, IRQ_HANDLER_ENTRY_NAME, pf_string(e->snap, t->name[i]));
		}
	} else {
		irq = pbw_begin(w, exit ? FTRACE_EVENT_SOFTIRQ_EXIT : FTRACE_EVENT_SOFTIRQ_ENTRY);
		pbw_varint(w, exit ? SOFTIRQ_EXIT_VEC : SOFTIRQ_ENTRY_VEC, t->num[i]);
	}
	pbw_end(w, irq);
	pbw_end(w, ev);
}

/* ---- The CompactSched of a bundle ----------------------------------------------------------- */

/* The position of comm in the bundle's intern table, added on first use (by pointer: a
 * string the snapshot holds twice is interned twice, which a reader does not mind). */
static uint32_t comm_intern(struct sched *sc, const char *comm)
{
	size_t i = ((uintptr_t)comm >> 3) * UINT64_C(0x9e3779b97f4a7c15) >> 53 & (COMM_SLOTS - 1);

	while (sc->slots[i].gen == sc->gen) {
		if (sc->slots[i].s == comm)
			return sc->slots[i].idx;
		i = (i + 1) & (COMM_SLOTS - 1);
	}
	sc->slots[i].gen = sc->gen;
	sc->slots[i].s = comm;
	sc->slots[i].idx = sc->ncomms;
	sc->comms[sc->ncomms] = comm;
	return sc->ncomms++;
}

/* One packed column over the compact events of one kind: the value of event k by `value`. */
#define PACKED_COLUMN(w, field, b, want, value)                       \
	do {                                                          \
		size_t col_ = pbw_begin(w, field);                    \
		for (uint32_t k = 0; k < (b)->n; k++)                 \
			if ((b)->kind[k] == (want))                   \
				pbw_raw_varint(w, (uint64_t)(value)); \
		pbw_end(w, col_);                                     \
	} while (0)

/* The timestamps of the compact events of one kind: the first absolute, then deltas. */
static void packed_times(struct pbw *w, uint32_t field, const struct cpu_batch *b, uint8_t want)
{
	size_t col = pbw_begin(w, field);
	uint64_t last = 0;

	for (uint32_t k = 0; k < b->n; k++) {
		if (b->kind[k] != want)
			continue;
		pbw_raw_varint(w, b->ts[k] - last);
		last = b->ts[k];
	}
	pbw_end(w, col);
}

static void write_compact(struct sched *sc, const struct cpu_batch *b, uint32_t nswitch, uint32_t nwaking)
{
	const Hostprof__Snapshot *s = sc->e->snap;
	const Hostprof__SchedSwitchTable *sw = s->switches;
	const Hostprof__WakeupTable *wk = s->wakeups;
	const uint8_t cs = EV_SWITCH | EV_COMPACT, cw = EV_WAKING | EV_COMPACT;
	struct pbw *w = &sc->e->w;
	size_t compact;

	sc->gen++;
	sc->ncomms = 0;
	for (uint32_t k = 0; k < b->n; k++) {
		if (b->kind[k] == cs)
			sc->comm_index[k] = comm_intern(sc, pf_string(s, sw->next_comm[b->idx[k]]));
		else if (b->kind[k] == cw)
			sc->comm_index[k] = comm_intern(sc, woken_comm(sc->e, b->idx[k]));
	}

	compact = pbw_begin(w, BUNDLE_COMPACT_SCHED);
	for (uint32_t k = 0; k < sc->ncomms; k++)
		pbw_string(w, COMPACT_INTERN_TABLE, sc->comms[k]);
	if (nswitch) {
		packed_times(w, COMPACT_SWITCH_TIMESTAMP, b, cs);
		PACKED_COLUMN(w, COMPACT_SWITCH_PREV_STATE, b, cs, sw->prev_state[b->idx[k]]);
		PACKED_COLUMN(w, COMPACT_SWITCH_NEXT_PID, b, cs, sw->next_tid[b->idx[k]]);
		PACKED_COLUMN(w, COMPACT_SWITCH_NEXT_PRIO, b, cs, (int64_t)sw->next_prio[b->idx[k]]);
		PACKED_COLUMN(w, COMPACT_SWITCH_NEXT_COMM_INDEX, b, cs, sc->comm_index[k]);
	}
	if (nwaking) {
		packed_times(w, COMPACT_WAKING_TIMESTAMP, b, cw);
		PACKED_COLUMN(w, COMPACT_WAKING_PID, b, cw, wk->tid[b->idx[k]]);
		PACKED_COLUMN(w, COMPACT_WAKING_TARGET_CPU, b, cw, wk->target_cpu[b->idx[k]]);
		PACKED_COLUMN(w, COMPACT_WAKING_PRIO, b, cw, (int64_t)b->prio[k]);
		PACKED_COLUMN(w, COMPACT_WAKING_COMM_INDEX, b, cw, sc->comm_index[k]);
	}
	pbw_end(w, compact);
}

static int write_bundle(struct sched *sc, uint32_t cpu, struct cpu_batch *b)
{
	struct pf_exporter *e = sc->e;
	struct pbw *w = &e->w;
	uint32_t nswitch = 0, nwaking = 0;
	size_t packet, bundle;

	packet = pf_packet_begin(e, b->ts[0], PERFETTO_SEQUENCE_ID);
	bundle = pbw_begin(w, PACKET_FTRACE_EVENTS);
	pbw_varint(w, BUNDLE_CPU, cpu);
	for (uint32_t k = 0; k < b->n; k++) {
		switch (b->kind[k]) {
		case EV_SWITCH:
			write_sched_switch(w, e->snap, b->idx[k], b->ts[k]);
			break;
		case EV_WAKING:
			write_sched_waking(e, b->idx[k], b->ts[k], b->prio[k]);
			break;
		case EV_SWITCH | EV_COMPACT:
			nswitch++;
			break;
		case EV_WAKING | EV_COMPACT:
			nwaking++;
			break;
		default:
			write_irq(e, b->idx[k], b->ts[k], b->kind[k] == EV_IRQ_EXIT);
			break;
		}
	}
	if (nswitch + nwaking)
		write_compact(sc, b, nswitch, nwaking);
	pbw_end(w, bundle);
	b->n = 0;
	return pf_packet_end(e, packet);
}

/* ---- Merging the tables by time -------------------------------------------------------------- */

static int batch_add(struct sched *sc, uint32_t cpu, uint8_t kind, size_t idx, uint64_t ts, int32_t prio)
{
	struct cpu_batch *b = sc->batches[cpu];

	if (!b) {
		b = malloc(sizeof(*b));
		if (!b)
			return -ENOMEM;
		b->n = 0;
		sc->batches[cpu] = b;
	}
	b->idx[b->n] = (uint32_t)idx;
	b->ts[b->n] = ts;
	b->prio[b->n] = prio;
	b->kind[b->n] = kind;
	if (++b->n == EXPORT_BUNDLE_EVENTS)
		return write_bundle(sc, cpu, b);
	return 0;
}

static bool exit_before(const struct irq_exit *a, const struct irq_exit *b)
{
	return a->ts < b->ts || (a->ts == b->ts && a->idx < b->idx);
}

static int exits_push(struct sched *sc, uint64_t ts, uint32_t idx)
{
	struct irq_exit x = { .ts = ts, .idx = idx };
	size_t i;

	if (sc->nexits == sc->exits_cap) {
		size_t cap = sc->exits_cap ? 2 * sc->exits_cap : 16;
		struct irq_exit *p = reallocarray(sc->exits, cap, sizeof(*p));

		if (!p)
			return -ENOMEM;
		sc->exits = p;
		sc->exits_cap = cap;
	}
	for (i = sc->nexits++; i > 0 && exit_before(&x, &sc->exits[(i - 1) / 2]); i = (i - 1) / 2)
		sc->exits[i] = sc->exits[(i - 1) / 2];
	sc->exits[i] = x;
	return 0;
}

static struct irq_exit exits_pop(struct sched *sc)
{
	struct irq_exit top = sc->exits[0], last = sc->exits[--sc->nexits];
	size_t i = 0, child;

	for (; (child = 2 * i + 1) < sc->nexits; i = child) {
		if (child + 1 < sc->nexits && exit_before(&sc->exits[child + 1], &sc->exits[child]))
			child++;
		if (!exit_before(&sc->exits[child], &last))
			break;
		sc->exits[i] = sc->exits[child];
	}
	if (sc->nexits)
		sc->exits[i] = last;
	return top;
}

/* A table's rows in time order: row i and its absolute time. */
struct cursor {
	const uint64_t *delta;
	size_t i, n;
	uint64_t ts;
};

static void cursor_init(struct cursor *c, uint64_t start, const uint64_t *delta, size_t n)
{
	*c = (struct cursor){ .delta = delta, .n = n, .ts = start };
	if (n)
		c->ts += delta[0];
}

static void cursor_next(struct cursor *c)
{
	if (++c->i < c->n)
		c->ts += c->delta[c->i];
}

static bool cursor_at(const struct cursor *c, uint64_t ts)
{
	return c->i < c->n && c->ts == ts;
}

static bool same_comm(const Hostprof__Snapshot *s, uint32_t a, uint32_t b)
{
	return a == b || !strcmp(pf_string(s, a), pf_string(s, b));
}

static int add_switch(struct sched *sc, size_t i, uint64_t ts)
{
	const Hostprof__SchedSwitchTable *t = sc->e->snap->switches;
	struct pf_thread *p = pf_thread(sc->e, t->prev_tid[i]), *q = pf_thread(sc->e, t->next_tid[i]);
	struct cpu_chain *c = &sc->chain[t->cpu[i]];
	uint8_t kind = EV_SWITCH;

	if (c->seen && c->tid == t->prev_tid[i] && c->prio == t->prev_prio[i] &&
	    same_comm(sc->e->snap, c->comm, t->prev_comm[i]) && !sc->switch_tie[i])
		kind |= EV_COMPACT;
	*c = (struct cpu_chain){
		.seen = true, .tid = t->next_tid[i], .comm = t->next_comm[i], .prio = t->next_prio[i]
	};
	/* the prio a later sched_waking of these tasks reports (the idle task is not woken) */
	if (p)
		p->prio = t->prev_prio[i];
	if (q)
		q->prio = t->next_prio[i];
	return batch_add(sc, t->cpu[i], kind, i, ts, 0);
}

static int add_waking(struct sched *sc, size_t i, uint64_t ts)
{
	const Hostprof__WakeupTable *t = sc->e->snap->wakeups;
	const struct pf_thread *woken = pf_thread(sc->e, t->tid[i]);
	const struct cpu_chain *c = &sc->chain[t->cpu[i]];
	int32_t prio = woken ? woken->prio : PRIO_UNKNOWN;
	uint8_t kind = EV_WAKING;

	if (c->seen && c->tid == t->waker_tid[i] && prio != PRIO_UNKNOWN && !sc->waking_tie[i])
		kind |= EV_COMPACT;
	return batch_add(sc, t->cpu[i], kind, i, ts, prio);
}

/* An IRQ's entry now, its exit once everything before it is out. */
static int add_irq_entry(struct sched *sc, size_t i, uint64_t ts)
{
	const Hostprof__IrqTable *t = sc->e->snap->irqs;
	int r;

	if (t->kind[i] != HPS_IRQ_HARD && !(t->kind[i] == HPS_IRQ_SOFT && t->num[i] < SOFTIRQ_VECTORS))
		return 0;
	r = batch_add(sc, t->cpu[i], EV_IRQ_ENTRY, i, ts, 0);
	if (r < 0)
		return r;
	return exits_push(sc, ts + t->dur_ns[i], (uint32_t)i);
}

/*
 * The rows that cannot be compact for their time: the switches that share their CPU and
 * nanosecond with another switch, the wakeups that share them with a switch. One pass over
 * both tables by time, switches before wakeups at one nanosecond.
 */
static int mark_ties(struct sched *sc)
{
	const Hostprof__Snapshot *s = sc->e->snap;
	_cleanup_free_ uint64_t *last_ts = NULL;
	_cleanup_free_ size_t *last_row = NULL;
	struct cursor sw, wk;

	cursor_init(&sw, s->start_ns, s->switches ? s->switches->ts_delta : NULL,
		    s->switches ? s->switches->n_ts_delta : 0);
	cursor_init(&wk, s->start_ns, s->wakeups ? s->wakeups->ts_delta : NULL,
		    s->wakeups ? s->wakeups->n_ts_delta : 0);
	sc->switch_tie = calloc(MAX(sw.n, (size_t)1), 1);
	sc->waking_tie = calloc(MAX(wk.n, (size_t)1), 1);
	last_ts = calloc(sc->e->ncpus, sizeof(*last_ts));
	last_row = malloc(sc->e->ncpus * sizeof(*last_row));
	if (!sc->switch_tie || !sc->waking_tie || !last_ts || !last_row)
		return -ENOMEM;
	for (size_t c = 0; c < sc->e->ncpus; c++)
		last_row[c] = SIZE_MAX;

	while (sw.i < sw.n || wk.i < wk.n) {
		if (sw.i < sw.n && (wk.i == wk.n || sw.ts <= wk.ts)) {
			uint32_t c = s->switches->cpu[sw.i];

			if (last_row[c] != SIZE_MAX && last_ts[c] == sw.ts)
				sc->switch_tie[sw.i] = sc->switch_tie[last_row[c]] = 1;
			last_ts[c] = sw.ts;
			last_row[c] = sw.i;
			cursor_next(&sw);
		} else {
			uint32_t c = s->wakeups->cpu[wk.i];

			if (last_row[c] != SIZE_MAX && last_ts[c] == wk.ts)
				sc->waking_tie[wk.i] = 1;
			cursor_next(&wk);
		}
	}
	return 0;
}

static void sched_free(struct sched *sc)
{
	if (sc->batches)
		for (size_t cpu = 0; cpu < sc->e->ncpus; cpu++)
			free(sc->batches[cpu]);
	free(sc->batches);
	free(sc->chain);
	free(sc->switch_tie);
	free(sc->waking_tie);
	free(sc->exits);
	free(sc);
}

int pf_write_sched(struct pf_exporter *e)
{
	const Hostprof__Snapshot *s = e->snap;
	struct cursor sw, wk, irq;
	struct sched *sc;
	int r;

	cursor_init(&sw, s->start_ns, s->switches ? s->switches->ts_delta : NULL,
		    s->switches ? s->switches->n_ts_delta : 0);
	cursor_init(&wk, s->start_ns, s->wakeups ? s->wakeups->ts_delta : NULL,
		    s->wakeups ? s->wakeups->n_ts_delta : 0);
	cursor_init(&irq, s->start_ns, s->irqs ? s->irqs->ts_delta : NULL, s->irqs ? s->irqs->n_ts_delta : 0);
	if (sw.n + wk.n + irq.n == 0)
		return 0;

	sc = calloc(1, sizeof(*sc));
	if (!sc)
		return -ENOMEM;
	sc->e = e;
	sc->batches = calloc(e->ncpus, sizeof(*sc->batches));
	sc->chain = calloc(e->ncpus, sizeof(*sc->chain));
	r = sc->batches && sc->chain ? mark_ties(sc) : -ENOMEM;

	while (r >= 0 && (sw.i < sw.n || wk.i < wk.n || irq.i < irq.n || sc->nexits)) {
		uint64_t next = UINT64_MAX;

		if (sw.i < sw.n)
			next = MIN(next, sw.ts);
		if (wk.i < wk.n)
			next = MIN(next, wk.ts);
		if (irq.i < irq.n)
			next = MIN(next, irq.ts);
		/* of one nanosecond: IRQ exits, wakeups, IRQ entries, then switches */
		if (sc->nexits && sc->exits[0].ts <= next) {
			struct irq_exit x = exits_pop(sc);

			r = batch_add(sc, s->irqs->cpu[x.idx], EV_IRQ_EXIT, x.idx, x.ts, 0);
		} else if (cursor_at(&wk, next)) {
			r = add_waking(sc, wk.i, next);
			cursor_next(&wk);
		} else if (cursor_at(&irq, next)) {
			r = add_irq_entry(sc, irq.i, next);
			cursor_next(&irq);
		} else {
			r = add_switch(sc, sw.i, next);
			cursor_next(&sw);
		}
	}

	for (uint32_t cpu = 0; r >= 0 && cpu < e->ncpus; cpu++) {
		struct cpu_batch *b = sc->batches[cpu];

		if (b && b->n)
			r = write_bundle(sc, cpu, b);
	}
	sched_free(sc);
	return r;
}
