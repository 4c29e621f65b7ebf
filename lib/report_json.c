// SPDX-License-Identifier: GPL-2.0-only
/*
 * The report as JSON (".report.json"): the same model as the text, with exact numbers.
 * "verdict" is the first line of the text and what it is made of; "dispatch" which threads
 * the report is about first; "longest_stall" the longest single stall of any thread.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>

#include "export.h"
#include "hps.h"
#include "jsonw.h"
#include "macro.h"
#include "report_internal.h"
#include "report_gil.h"
#include "report_python.h"

/* "count", "time_ns", "max_ns" */
static void json_tally(struct jsonw *j, const struct tally *t)
{
	jsonw_uint_field(j, "count", t->count);
	jsonw_uint_field(j, "time_ns", t->time_ns);
	jsonw_uint_field(j, "max_ns", t->max_ns);
}

static void json_cpus_field(struct jsonw *j, const char *name, const uint32_t *cpus, size_t n)
{
	jsonw_name(j, name);
	jsonw_begin_array(j);
	for (size_t i = 0; i < n; i++)
		jsonw_uint(j, cpus[i]);
	jsonw_end_array(j);
}

static void json_task(struct jsonw *j, const Hostprof__Snapshot *s, const struct culprit *c)
{
	jsonw_string_field(j, "comm", hps_str(s, c->comm));
	jsonw_uint_field(j, "tid", c->tid);
	jsonw_uint_field(j, "pid", c->pid);
	if (c->has_policy)
		jsonw_string_field(j, "policy", report_policy_name(c->policy));
	jsonw_int_field(j, "prio", c->prio);
}

/* "file" and "line" when DWARF gave them */
static void json_source(struct jsonw *j, const char *file, uint32_t line)
{
	if (!file || !file[0])
		return;
	jsonw_string_field(j, "file", file);
	if (line)
		jsonw_uint_field(j, "line", line);
}

static void json_stack(const struct model *m, uint32_t idx1, bool kernel, struct jsonw *j)
{
	const Hostprof__Stack *st;

	if (!idx1)
		return;
	st = m->snap->stacks[idx1 - 1];
	for (size_t k = 0; k < st->n_frames; k++) {
		const Hostprof__Frame *fr = m->snap->frames[st->frames[k]];

		/* the functions inlined there first, innermost first, as frames of their own */
		for (size_t i = 0; i < fr->n_inlined; i++) {
			jsonw_begin_object(j);
			jsonw_string_field(j, "function", snapview_inlined_name(fr->inlined[i]));
			jsonw_bool_field(j, "kernel", kernel);
			jsonw_bool_field(j, "inlined", true);
			json_source(j, fr->inlined[i]->file, fr->inlined[i]->line);
			jsonw_end_object(j);
		}
		jsonw_begin_object(j);
		jsonw_string_field(j, "function", m->fn.name[st->frames[k]]);
		jsonw_bool_field(j, "kernel", kernel);
		json_source(j, fr->file, fr->line);
		jsonw_end_object(j);
	}
}

static const char *irq_kind_name(uint32_t kind)
{
	return kind == HPS_IRQ_SOFT ? "softirq" : kind == HPS_IRQ_HARD ? "hardirq" : "?";
}

/* An IrqTable row's or group's kind, number and name. */
static void json_irq_id(struct jsonw *j, const Hostprof__Snapshot *s, uint32_t kind, uint32_t num,
			uint32_t name)
{
	const char *nm = hps_str(s, name);

	jsonw_string_field(j, "kind", irq_kind_name(kind));
	jsonw_uint_field(j, "num", num);
	jsonw_string_field(j, "name", !nm[0] && kind == HPS_IRQ_SOFT ? hps_softirq_name(num) : nm);
}

static void json_lock_id(struct jsonw *j, const Hostprof__Snapshot *s, uint64_t lock, uint32_t flags,
			 uint32_t name)
{
	jsonw_hex_field(j, "address", lock); /* JSON numbers lose bits above 2^53 in most readers */
	jsonw_string_field(j, "kind", hps_lock_kind_name(flags));
	jsonw_uint_field(j, "flags", flags);
	jsonw_string_field(j, "name",
			   hps_str(s, name)[0] || !(flags & HPS_LOCK_MMAP) ? hps_str(s, name) : "mmap_lock");
	jsonw_bool_field(j, "mmap_lock", flags & HPS_LOCK_MMAP);
}

static void json_errno_field(struct jsonw *j, int64_t ret)
{
	const char *e = errno_name(ret);

	if (e)
		jsonw_string_field(j, "errno", e);
}

static const char *const agent_kinds[] = { "none", "task", "irq", "lock", "reclaim", "wait", "cpu", "gil" };

/* Who or what an agent is, its words and its fields, and its tally. */
static void json_agent_fields(const struct model *m, const struct wthread *w, const struct agent *a,
			      struct jsonw *j)
{
	const Hostprof__Snapshot *s = m->snap;
	char desc[400], sys[32];
	const char *sc;

	report_agent_desc(m, w, a, desc, sizeof(desc));
	jsonw_string_field(j, "kind", agent_kinds[a->kind]);
	jsonw_string_field(j, "text", desc);
	switch (a->kind) {
	case AG_TASK:
		if (a->cause == CAUSE_GIL) {
			const Hostprof__PythonFrame *fr = a->gil_frame && s->gil && a->gil_frame <= s->gil->n_frames ?
								  s->gil->frames[a->gil_frame - 1] :
								  NULL;

			jsonw_uint_field(j, "tid", a->tid);
			jsonw_uint_field(j, "pid", a->pid);
			jsonw_string_field(j, "comm", hps_str(s, a->task.comm));
			jsonw_name(j, "function");
			if (fr) {
				jsonw_begin_object(j);
				jsonw_string_field(j, "function", fr->function ? fr->function : "");
				jsonw_string_field(j, "file", fr->file ? fr->file : "");
				jsonw_uint_field(j, "line", fr->line);
				jsonw_end_object(j);
			} else {
				jsonw_null(j);
			}
		} else if (a->tid) {
			json_task(j, s, &a->task);
			jsonw_bool_field(j, "hostprof",
					 model_is_hostprof(s, a->pid, hps_str(s, a->task.comm)));
		} else {
			jsonw_uint_field(j, "tid", 0); /* the CPU was idle */
		}
		break;
	case AG_IRQ:
		json_irq_id(j, s, (uint32_t)(a->key >> 32), (uint32_t)a->key, a->name);
		break;
	case AG_LOCK:
		jsonw_name(j, "lock");
		jsonw_begin_object(j);
		json_lock_id(j, s, a->key, a->flags, a->name);
		jsonw_end_object(j);
		break;
	case AG_RECLAIM:
		jsonw_string_field(j, "reclaim", hps_reclaim_kind_name((uint32_t)a->key));
		break;
	case AG_WAIT:
		sc = model_wait_syscall(m, a, sys, sizeof(sys));
		if (sc)
			jsonw_string_field(j, "syscall", sc);
		if (a->site)
			jsonw_string_field(j, "site", m->fn.name[a->site - 1]);
		if (a->cause == CAUSE_FAULT)
			break;
		jsonw_bool_field(j, "timed", a->flags & 1);
		jsonw_name(j, "woken_by");
		if (a->tid) {
			jsonw_begin_object(j);
			jsonw_string_field(j, "comm", hps_str(s, a->task.comm));
			jsonw_uint_field(j, "tid", a->tid);
			jsonw_uint_field(j, "pid", a->pid);
			jsonw_end_object(j);
		} else {
			jsonw_null(j);
		}
		break;
	case AG_CPU:
		if (a->cause == CAUSE_MIGRATION) {
			jsonw_uint_field(j, "from_cpu", (uint32_t)(a->key >> 32));
			jsonw_uint_field(j, "cpu", (uint32_t)a->key);
		} else {
			jsonw_uint_field(j, "cpu", (uint32_t)a->key);
			jsonw_bool_field(j, "cpu_idled", a->flags & 1);
		}
		break;
	case AG_GIL:
		jsonw_name(j, "holder");
		if (a->tid) {
			jsonw_begin_object(j);
			jsonw_string_field(j, "comm", hps_str(s, a->task.comm));
			jsonw_uint_field(j, "tid", a->tid);
			jsonw_uint_field(j, "pid", a->pid);
			jsonw_end_object(j);
		} else {
			jsonw_null(j);
		}
		jsonw_string_field(j, "function", hps_str(s, a->name));
		jsonw_string_field(j, "file", hps_str(s, (uint32_t)(a->key >> 32)));
		jsonw_uint_field(j, "line", (uint32_t)a->key);
		break;
	case AG_NONE:
		break;
	}
}

/* The first line and what it is made of. */
static void json_verdict(const struct model *m, struct jsonw *j)
{
	const Hostprof__Snapshot *s = m->snap;
	const struct wthread *w = m->verdict >= 0 ? &m->t[m->verdict] : NULL;
	enum cause top = w ? model_top_cause(w) : CAUSE_MAX;
	char line[1024];

	report_verdict_line(m, line, sizeof(line));
	jsonw_name(j, "verdict");
	jsonw_begin_object(j);
	jsonw_string_field(j, "text", line);
	jsonw_bool_field(j, "stands_out", report_verdict_stands_out(m));
	jsonw_uint_field(j, "window_ns", window_ns(s));
	if (w) {
		jsonw_string_field(j, "thread", w->comm);
		jsonw_uint_field(j, "tid", w->tid);
		jsonw_uint_field(j, "lost_ns", w->acc.lost_ns);
		jsonw_float_field(j, "percent", pct(w->acc.lost_ns, window_ns(s)));
	}
	jsonw_string_field(j, "cause", top != CAUSE_MAX ? report_cause_key(top) : "none");
	if (top != CAUSE_MAX) {
		const struct tally *t = &w->acc.cause[top];
		const uint32_t *first;
		size_t n = model_cause_agents(w, top, &first);

		jsonw_string_field(j, "cause_text", report_cause_name(top));
		jsonw_uint_field(j, "time_ns", t->time_ns);
		jsonw_float_field(j, "cause_percent", pct(t->time_ns, window_ns(s)));
		jsonw_uint_field(j, "count", t->count);
		jsonw_uint_field(j, "longest_ns", t->max_ns);
		jsonw_int_field(j, "longest_at_ns", (int64_t)(w->acc.cause_max_at[top] - s->start_ns));
		jsonw_name(j, "by");
		if (n) {
			const struct agent *a = &w->acc.ag[first[0]];

			jsonw_begin_object(j);
			json_agent_fields(m, w, a, j);
			json_tally(j, &a->sum);
			jsonw_end_object(j);
		} else {
			jsonw_null(j);
		}
		jsonw_uint_field(j, "agents", n);
	}
	jsonw_end_object(j);
}

/* Which threads dispatch, and why those. */
static void json_dispatch(const struct model *m, struct jsonw *j)
{
	static const char *const why[] = { "matched", "ran_the_most", "main_thread", "none" };

	jsonw_name(j, "dispatch");
	jsonw_begin_object(j);
	jsonw_name(j, "globs");
	jsonw_begin_array(j);
	for (size_t g = 0; g < m->n_dispatch_globs; g++)
		jsonw_string(j, m->dispatch_globs[g]);
	jsonw_end_array(j);
	jsonw_bool_field(j, "default", m->dispatch_default);
	jsonw_string_field(j, "why", why[m->dispatch_why]);
	jsonw_name(j, "threads");
	jsonw_begin_array(j);
	for (size_t k = 0; k < m->n; k++)
		if (m->t[k].dispatch)
			jsonw_uint(j, m->t[k].tid);
	jsonw_end_array(j);
	jsonw_end_object(j);
}

/* The longest single stall of any watched thread (the first line of reports before the
 * dispatch threads). */
static void json_longest_stall(const struct model *m, struct jsonw *j)
{
	static const char *const kinds[] = { "none",	"preempted", "runqueue", "blocked",
					     "reclaim", "lock",	     "irq",	 "irq_total" };
	const Hostprof__Snapshot *s = m->snap;
	const struct stall *st = &m->worst;
	char line[512], state[16], nbuf[32];
	struct culprit c;

	report_longest_stall(m, line, sizeof(line));
	jsonw_name(j, "longest_stall");
	jsonw_begin_object(j);
	jsonw_string_field(j, "kind", kinds[st->kind]);
	jsonw_string_field(j, "text", line);
	if (st->kind == STALL_NONE) {
		jsonw_end_object(j);
		return;
	}
	jsonw_string_field(j, "thread", m->t[st->thread].comm);
	jsonw_uint_field(j, "tid", m->t[st->thread].tid);
	if (st->kind != STALL_IRQ_TOTAL) /* a total has no one time */
		jsonw_int_field(j, "at_ns",
				(int64_t)(st->ts - s->start_ns)); /* a wait can start before the window */
	jsonw_uint_field(j, "dur_ns", st->dur);
	jsonw_bool_field(j, "involuntary", st->involuntary);
	switch (st->kind) {
	case STALL_PREEMPTED:
	case STALL_RUNQUEUE:
		c = st->kind == STALL_PREEMPTED ? model_next_task(s->switches, st->row) :
						  model_prev_task(s->switches, st->row);
		jsonw_uint_field(j, "cpu", s->switches->cpu[st->row]);
		if (st->kind == STALL_PREEMPTED)
			jsonw_bool_field(j, "until_window_end", st->to_end);
		jsonw_name(j, st->kind == STALL_PREEMPTED ? "preempted_by" : "cpu_ran");
		jsonw_begin_object(j);
		json_task(j, s, &c);
		jsonw_end_object(j);
		break;
	case STALL_BLOCKED: {
		const Hostprof__OffCpuTable *t = s->offcpu;
		ssize_t sc = model_blocking_syscall(m, &m->t[st->thread], st->ts);

		if (sc >= 0)
			jsonw_string_field(j, "syscall",
					   report_syscall_name(s, s->syscalls->nr[sc], nbuf, sizeof(nbuf)));
		report_state_name(t->state[st->row], state, sizeof(state));
		jsonw_string_field(j, "state", state);
		jsonw_name(j, "woken_by");
		if (t->waker_tid[st->row]) {
			jsonw_begin_object(j);
			jsonw_string_field(j, "comm", hps_str(s, t->waker_comm[st->row]));
			jsonw_uint_field(j, "tid", t->waker_tid[st->row]);
			jsonw_uint_field(j, "pid", t->waker_pid[st->row]);
			jsonw_end_object(j);
		} else {
			jsonw_null(j);
		}
		break;
	}
	case STALL_RECLAIM: {
		const Hostprof__ReclaimTable *t = s->reclaims;

		jsonw_uint_field(j, "cpu", t->cpu[st->row]);
		jsonw_name(j, "reclaim");
		jsonw_begin_object(j);
		jsonw_string_field(j, "kind", hps_reclaim_kind_name(t->kind[st->row]));
		jsonw_int_field(j, "order", t->order[st->row]);
		jsonw_uint_field(j, "gfp", t->gfp[st->row]);
		jsonw_int_field(j, "result", t->result[st->row]);
		jsonw_end_object(j);
		break;
	}
	case STALL_LOCK: {
		const Hostprof__LockTable *t = s->locks;

		jsonw_uint_field(j, "cpu", t->cpu[st->row]);
		jsonw_name(j, "lock");
		jsonw_begin_object(j);
		json_lock_id(j, s, t->lock[st->row], t->flags[st->row], t->name[st->row]);
		jsonw_int_field(j, "ret", t->ret[st->row]);
		json_errno_field(j, t->ret[st->row]);
		jsonw_name(j, "frames");
		jsonw_begin_array(j);
		json_stack(m, t->kstack[st->row], true, j);
		jsonw_end_array(j);
		jsonw_end_object(j);
		break;
	}
	case STALL_IRQ: {
		const Hostprof__IrqTable *t = s->irqs;

		jsonw_uint_field(j, "cpu", t->cpu[st->row]);
		jsonw_name(j, "irq");
		jsonw_begin_object(j);
		json_irq_id(j, s, t->kind[st->row], t->num[st->row], t->name[st->row]);
		jsonw_string_field(j, "thread_was", st->waited ? "waiting" : "running");
		jsonw_end_object(j);
		break;
	}
	case STALL_IRQ_TOTAL: {
		const struct irq_group *g = &m->t[st->thread].irq_ran.g[st->row];

		json_cpus_field(j, "cpus", g->cpus, g->n_cpus);
		jsonw_float_field(j, "percent", pct(g->sum.time_ns, window_ns(s)));
		jsonw_name(j, "irq");
		jsonw_begin_object(j);
		json_irq_id(j, s, g->kind, g->num, g->name);
		jsonw_string_field(j, "thread_was", "running");
		jsonw_uint_field(j, "count", g->sum.count);
		jsonw_uint_field(j, "max_ns", g->sum.max_ns);
		jsonw_end_object(j);
		break;
	}
	case STALL_NONE:
		break;
	}
	if (m->explained.kind != STALL_NONE) {
		const struct stall *e = &m->explained;

		jsonw_name(j, "within"); /* the scheduler's stall this explains */
		jsonw_begin_object(j);
		jsonw_string_field(j, "kind", kinds[e->kind]);
		jsonw_int_field(j, "at_ns", (int64_t)(e->ts - s->start_ns));
		jsonw_uint_field(j, "dur_ns", e->dur);
		if (e->kind == STALL_BLOCKED) {
			report_state_name(s->offcpu->state[e->row], state, sizeof(state));
			jsonw_string_field(j, "state", state);
		}
		jsonw_end_object(j);
	}
	jsonw_end_object(j);
}

/* Which interference tables were captured, and with what thresholds; nothing without any. */
static void json_interference_header(const struct model *m, struct jsonw *j)
{
	const Hostprof__Snapshot *s = m->snap;

	if (!m->interference)
		return;
	jsonw_name(j, "interference");
	jsonw_begin_object(j);
	for (int captured = 1; captured >= 0; captured--) {
		jsonw_name(j, captured ? "captured" : "not_captured");
		jsonw_begin_array(j);
		for (size_t b = 0; model_interference_name(b); b++)
			if (captured ? !!(m->interference & (1u << b)) : model_interference_missing(m, b))
				jsonw_string(j, model_interference_name(b));
		jsonw_end_array(j);
	}
	jsonw_uint_field(j, "irq_min_ns", s->irq_min_ns);
	jsonw_uint_field(j, "lock_min_ns", s->lock_min_ns);
	jsonw_name(j, "unmatched_irqs"); /* ran where a thread waited; the switches name none */
	jsonw_begin_object(j);
	jsonw_uint_field(j, "count", m->unmatched_count);
	jsonw_uint_field(j, "time_ns", m->unmatched_ns);
	jsonw_end_object(j);
	jsonw_end_object(j);
}

static void json_header(const struct model *m, struct jsonw *j)
{
	const Hostprof__Snapshot *s = m->snap;

	jsonw_name(j, "process");
	jsonw_begin_object(j);
	jsonw_uint_field(j, "pid", s->pid);
	for (size_t i = 0; i < s->n_processes; i++) {
		const Hostprof__Process *p = s->processes[i];

		if (p->pid != s->pid)
			continue;
		jsonw_string_field(j, "comm", p->comm);
		jsonw_name(j, "cmdline");
		jsonw_begin_array(j);
		for (size_t k = 0; k < p->n_cmdline; k++)
			jsonw_string(j, p->cmdline[k]);
		jsonw_end_array(j);
		break;
	}
	jsonw_end_object(j);
	if (s->host) {
		jsonw_name(j, "host");
		jsonw_begin_object(j);
		jsonw_string_field(j, "hostname", s->host->hostname);
		jsonw_string_field(j, "sysname", s->host->sysname);
		jsonw_string_field(j, "kernel_release", s->host->kernel_release);
		jsonw_string_field(j, "machine", s->host->machine);
		jsonw_uint_field(j, "ncpus", s->host->ncpus);
		jsonw_end_object(j);
	}
	jsonw_name(j, "window");
	jsonw_begin_object(j);
	jsonw_uint_field(j, "start_ns", s->start_ns);
	jsonw_uint_field(j, "end_ns", s->end_ns);
	jsonw_uint_field(j, "dur_ns", s->end_ns > s->start_ns ? s->end_ns - s->start_ns : 0);
	jsonw_string_field(j, "reason", s->reason);
	jsonw_uint_field(j, "syscall_min_ns", s->syscall_min_ns);
	jsonw_uint_field(j, "offcpu_min_ns", s->offcpu_min_ns);
	jsonw_uint_field(j, "sample_hz", s->sample_hz);
	jsonw_end_object(j);
	json_interference_header(m, j);
	jsonw_name(j, "markers");
	jsonw_begin_array(j);
	for (size_t i = 0; i < s->n_markers; i++) {
		const Hostprof__Marker *mk = s->markers[i];

		jsonw_begin_object(j);
		jsonw_int_field(j, "at_ns", (int64_t)(mk->ts - s->start_ns));
		jsonw_uint_field(j, "tid", mk->tid);
		jsonw_string_field(j, "name", mk->name);
		jsonw_string_field(j, "detail", mk->detail);
		jsonw_end_object(j);
	}
	jsonw_end_array(j);
}

static void json_preemptions(const struct model *m, const struct wthread *w, struct jsonw *j)
{
	jsonw_name(j, "preemptions");
	jsonw_begin_object(j);
	json_tally(j, &w->preempt);
	jsonw_uint_field(j, "tasks", w->n_culprits);
	jsonw_name(j, "by");
	jsonw_begin_array(j);
	for (size_t c = 0; c < w->n_culprits && c < TOP_CULPRITS; c++) {
		const struct culprit *cu = &w->culprits[c];

		jsonw_begin_object(j);
		json_task(j, m->snap, cu);
		json_tally(j, &cu->sum);
		jsonw_end_object(j);
	}
	jsonw_end_array(j);
	jsonw_end_object(j);

	jsonw_name(j, "runqueue_latency");
	jsonw_begin_object(j);
	jsonw_uint_field(j, "switch_ins", w->n_rq);
	jsonw_uint_field(j, "after_wakeup", w->rq_wakeup);
	jsonw_uint_field(j, "after_preemption", w->rq_preempt);
	if (w->n_rq) {
		jsonw_uint_field(j, "p50_ns", percentile(w->rq, w->n_rq, 50));
		jsonw_uint_field(j, "p99_ns", percentile(w->rq, w->n_rq, 99));
		jsonw_uint_field(j, "max_ns", w->rq[w->n_rq - 1]);
	}
	jsonw_end_object(j);
}

static void json_cpus(const struct model *m, const struct wthread *w, struct jsonw *j)
{
	const Hostprof__MigrationTable *mg = m->snap->migrations;

	jsonw_name(j, "cpus");
	jsonw_begin_object(j);
	json_cpus_field(j, "ran_on", w->cpus, w->n_cpus);
	jsonw_bool_field(j, "single_cpu", w->n_cpus == 1);
	jsonw_uint_field(j, "migration_count", w->n_migrations);
	jsonw_name(j, "migrations");
	jsonw_begin_array(j);
	for (size_t k = 0; k < w->n_migrations && k < TOP_MIGRATIONS; k++) {
		size_t i = w->migrations[k];

		jsonw_begin_object(j);
		jsonw_uint_field(j, "at_ns", m->mg_ts[i] - m->snap->start_ns);
		jsonw_uint_field(j, "from", mg->from_cpu[i]);
		jsonw_uint_field(j, "to", mg->to_cpu[i]);
		jsonw_end_object(j);
	}
	jsonw_end_array(j);
	jsonw_end_object(j);
}

static void json_syscalls(const struct model *m, const struct wthread *w, struct jsonw *j)
{
	const Hostprof__Snapshot *s = m->snap;
	const Hostprof__SyscallTable *sc = s->syscalls;
	char nbuf[32];

	jsonw_name(j, "syscalls");
	jsonw_begin_object(j);
	jsonw_uint_field(j, "slow_count", w->n_syscalls);
	jsonw_name(j, "slowest");
	jsonw_begin_array(j);
	for (size_t k = 0; k < w->n_syscalls && k < TOP_SYSCALLS; k++) {
		size_t i = w->syscalls[k];

		jsonw_begin_object(j);
		jsonw_string_field(j, "name", report_syscall_name(s, sc->nr[i], nbuf, sizeof(nbuf)));
		jsonw_uint_field(j, "nr", sc->nr[i]);
		jsonw_uint_field(j, "at_ns", m->sc_ts[i] - s->start_ns);
		jsonw_uint_field(j, "dur_ns", sc->dur_ns[i]);
		jsonw_name(j, "args");
		jsonw_begin_array(j);
		jsonw_uint(j, sc->arg0[i]);
		jsonw_uint(j, sc->arg1[i]);
		jsonw_uint(j, sc->arg2[i]);
		jsonw_end_array(j);
		if (hps_syscall_flags(sc, i) & HPS_SYSCALL_RET_UNKNOWN) {
			jsonw_name(j, "ret");
			jsonw_null(j);
		} else {
			jsonw_int_field(j, "ret", sc->ret[i]);
			json_errno_field(j, sc->ret[i]);
		}
		if (hps_syscall_flags(sc, i) & HPS_SYSCALL_BLOCKED)
			jsonw_bool_field(j, "blocked", true);
		jsonw_uint_field(j, "cpu", sc->cpu[i]);
		jsonw_end_object(j);
	}
	jsonw_end_array(j);
	/* syscalls = blocking: what is not seen is said, not shown as empty */
	if (hps_syscalls_blocking(s)) {
		jsonw_string_field(j, "mode", "blocking");
		jsonw_bool_field(j, "totals_covered", false);
		jsonw_bool_field(j, "non_sleeping_covered", false);
	}
	jsonw_name(j, "totals");
	jsonw_begin_array(j);
	for (size_t k = 0; k < w->n_hists && k < TOP_HISTOGRAMS; k++) {
		const Hostprof__SyscallHistogram *h = s->syscall_hist[w->hists[k]];

		jsonw_begin_object(j);
		jsonw_string_field(j, "name", report_syscall_name(s, h->nr, nbuf, sizeof(nbuf)));
		jsonw_uint_field(j, "nr", h->nr);
		jsonw_uint_field(j, "count", h->count);
		jsonw_uint_field(j, "total_ns", h->total_ns);
		jsonw_uint_field(j, "max_ns", h->max_ns);
		jsonw_end_object(j);
	}
	jsonw_end_array(j);
	jsonw_end_object(j);
}

/* Whether stack idx1 is suspect (or, with !suspect, truncated). */
static bool stack_flag(const struct model *m, uint32_t idx1, bool suspect)
{
	const Hostprof__Stack *st = idx1 ? m->snap->stacks[idx1 - 1] : NULL;

	return st && (suspect ? st->suspect : st->truncated);
}

static void json_offcpu(const struct model *m, const struct wthread *w, struct jsonw *j)
{
	const Hostprof__Snapshot *s = m->snap;

	jsonw_name(j, "offcpu");
	jsonw_begin_object(j);
	jsonw_uint_field(j, "count", w->off_sum.count);
	jsonw_uint_field(j, "time_ns", w->off_sum.time_ns);
	jsonw_name(j, "stacks");
	jsonw_begin_array(j);
	for (size_t g = 0; g < w->n_off && g < TOP_STACKS; g++) {
		const struct offcpu_group *og = &w->off[g];
		char state[16];

		report_state_name(og->states, state, sizeof(state));
		jsonw_begin_object(j);
		json_tally(j, &og->sum);
		jsonw_string_field(j, "state", state);
		jsonw_name(j, "wakers");
		jsonw_begin_array(j);
		for (size_t k = 0; k < og->n_wakers && k < TOP_WAKERS; k++) {
			const struct waker *wk = &og->wakers[k];

			jsonw_begin_object(j);
			jsonw_string_field(j, "comm", hps_str(s, wk->comm));
			jsonw_uint_field(j, "tid", wk->tid);
			jsonw_uint_field(j, "pid", wk->pid);
			jsonw_uint_field(j, "count", wk->sum.count);
			jsonw_uint_field(j, "time_ns", wk->sum.time_ns);
			jsonw_end_object(j);
		}
		jsonw_end_array(j);
		jsonw_bool_field(j, "suspect",
				 stack_flag(m, og->kstack, true) || stack_flag(m, og->ustack, true));
		jsonw_bool_field(j, "truncated",
				 stack_flag(m, og->kstack, false) || stack_flag(m, og->ustack, false));
		jsonw_name(j, "frames"); /* innermost first: kernel, then user */
		jsonw_begin_array(j);
		json_stack(m, og->kstack, true, j);
		json_stack(m, og->ustack, false, j);
		jsonw_end_array(j);
		jsonw_end_object(j);
	}
	jsonw_end_array(j);
	jsonw_end_object(j);
}

static void json_oncpu(const struct model *m, const struct wthread *w, struct jsonw *j)
{
	jsonw_name(j, "oncpu");
	jsonw_begin_object(j);
	jsonw_uint_field(j, "samples", w->samples);
	jsonw_float_field(j, "percent", pct(w->samples, m->samples));
	jsonw_name(j, "top_functions");
	jsonw_begin_array(j);
	for (size_t k = 0; k < w->n_leaves && k < TOP_FUNCTIONS; k++) {
		const struct leaf_count *l = &w->leaves[k];

		jsonw_begin_object(j);
		jsonw_string_field(j, "function", l->name);
		jsonw_bool_field(j, "kernel", l->kernel);
		json_source(j, l->file, l->line);
		jsonw_uint_field(j, "samples", l->samples);
		jsonw_float_field(j, "percent", pct(l->samples, m->samples));
		jsonw_end_object(j);
	}
	jsonw_end_array(j);
	jsonw_end_object(j);
}

static void json_irq_side(const struct model *m, const struct irq_side *side, const char *name,
			  struct jsonw *j)
{
	const Hostprof__Snapshot *s = m->snap;

	jsonw_name(j, name);
	jsonw_begin_object(j);
	jsonw_uint_field(j, "count", side->count);
	jsonw_uint_field(j, "time_ns", side->time_ns);
	jsonw_float_field(j, "percent", pct(side->time_ns, window_ns(s)));
	jsonw_uint_field(j, "groups", side->n);
	jsonw_name(j, "by");
	jsonw_begin_array(j);
	for (size_t k = 0; k < side->n && k < TOP_IRQS; k++) {
		const struct irq_group *g = &side->g[k];

		jsonw_begin_object(j);
		json_irq_id(j, s, g->kind, g->num, g->name);
		json_tally(j, &g->sum);
		jsonw_float_field(j, "percent", pct(g->sum.time_ns, window_ns(s)));
		json_cpus_field(j, "cpus", g->cpus, g->n_cpus);
		jsonw_name(j, "longest");
		jsonw_begin_object(j);
		jsonw_uint_field(j, "at_ns", m->irq_ts[g->sum.max_row] - s->start_ns);
		jsonw_uint_field(j, "dur_ns", s->irqs->dur_ns[g->sum.max_row]);
		jsonw_uint_field(j, "cpu", s->irqs->cpu[g->sum.max_row]);
		jsonw_end_object(j);
		jsonw_end_object(j);
	}
	jsonw_end_array(j);
	jsonw_end_object(j);
}

static void json_reclaim(const struct model *m, const struct wthread *w, struct jsonw *j)
{
	const Hostprof__Snapshot *s = m->snap;
	const Hostprof__ReclaimTable *t = s->reclaims;

	jsonw_name(j, "reclaim");
	jsonw_begin_object(j);
	json_tally(j, &w->rcl_sum);
	jsonw_name(j, "by");
	jsonw_begin_array(j);
	for (size_t k = 0; k < w->n_rcl && k < TOP_RECLAIMS; k++) {
		const struct reclaim_group *g = &w->rcl[k];
		size_t i = g->sum.max_row;

		jsonw_begin_object(j);
		jsonw_string_field(j, "kind", hps_reclaim_kind_name(g->kind));
		jsonw_int_field(j, "order", g->order);
		json_tally(j, &g->sum);
		if (g->kind != HPS_RECLAIM_COMPACT)
			jsonw_int_field(j, "pages_reclaimed", g->pages);
		jsonw_name(j, "longest");
		jsonw_begin_object(j);
		jsonw_uint_field(j, "at_ns", m->rcl_ts[i] - s->start_ns);
		jsonw_uint_field(j, "dur_ns", t->dur_ns[i]);
		jsonw_uint_field(j, "gfp", t->gfp[i]);
		jsonw_int_field(j, "result", t->result[i]);
		jsonw_uint_field(j, "cpu", t->cpu[i]);
		jsonw_end_object(j);
		jsonw_end_object(j);
	}
	jsonw_end_array(j);
	jsonw_end_object(j);
}

static void json_faults(const struct model *m, const struct wthread *w, struct jsonw *j)
{
	const Hostprof__Snapshot *s = m->snap;
	const struct fault_sum *fs = &w->flt;

	jsonw_name(j, "faults");
	jsonw_begin_object(j);
	jsonw_uint_field(j, "minor", fs->minor);
	jsonw_uint_field(j, "major", fs->major);
	jsonw_float_field(j, "per_second", model_fault_rate(m, fs));
	jsonw_uint_field(j, "periods", fs->periods);
	jsonw_uint_field(j, "over_ns", fs->over_ns);
	jsonw_uint_field(j, "faults", fs->faults); /* the tracepoint's: 0 where there is none */
	jsonw_uint_field(j, "write", fs->write);
	jsonw_uint_field(j, "exec", fs->exec);
	jsonw_uint_field(j, "prot", fs->prot);
	jsonw_name(j, "peak_major");
	if (fs->peak_major) {
		jsonw_begin_object(j);
		jsonw_uint_field(j, "at_ns", m->flt_ts[fs->peak_row] - s->start_ns);
		jsonw_uint_field(j, "dur_ns", s->faults->dur_ns[fs->peak_row]);
		jsonw_uint_field(j, "major", fs->peak_major);
		jsonw_end_object(j);
	} else {
		jsonw_null(j);
	}
	jsonw_end_object(j);
}

static void json_locks(const struct model *m, const struct wthread *w, struct jsonw *j)
{
	const Hostprof__Snapshot *s = m->snap;
	const Hostprof__LockTable *t = s->locks;

	jsonw_name(j, "locks");
	jsonw_begin_object(j);
	json_tally(j, &w->lck_sum);
	jsonw_uint_field(j, "locks", w->n_lck);
	jsonw_name(j, "by");
	jsonw_begin_array(j);
	for (size_t k = 0; k < w->n_lck && k < TOP_LOCKS; k++) {
		const struct lock_group *g = &w->lck[k];
		size_t i = g->sum.max_row;

		jsonw_begin_object(j);
		json_lock_id(j, s, g->lock, g->flags, g->name);
		json_tally(j, &g->sum);
		jsonw_uint_field(j, "gave_up", g->failed);
		jsonw_name(j, "longest");
		jsonw_begin_object(j);
		jsonw_uint_field(j, "at_ns", m->lck_ts[i] - s->start_ns);
		jsonw_uint_field(j, "dur_ns", t->dur_ns[i]);
		jsonw_int_field(j, "ret", t->ret[i]);
		json_errno_field(j, t->ret[i]);
		jsonw_uint_field(j, "cpu", t->cpu[i]);
		jsonw_bool_field(j, "truncated", stack_flag(m, t->kstack[i], false));
		jsonw_name(j, "frames"); /* kernel, innermost first */
		jsonw_begin_array(j);
		json_stack(m, t->kstack[i], true, j);
		jsonw_end_array(j);
		jsonw_end_object(j);
		jsonw_end_object(j);
	}
	jsonw_end_array(j);
	jsonw_end_object(j);
}

static void json_interference(const struct model *m, const struct wthread *w, struct jsonw *j)
{
	if (!m->interference)
		return;
	jsonw_name(j, "interference");
	jsonw_begin_object(j);
	if (m->interference & HPS_INTERF_IRQ) {
		jsonw_name(j, "irqs");
		jsonw_begin_object(j);
		json_irq_side(m, &w->irq_ran, "while_running", j);
		json_irq_side(m, &w->irq_waited, "while_waiting", j);
		jsonw_end_object(j);
	}
	if (m->interference & HPS_INTERF_RECLAIM)
		json_reclaim(m, w, j);
	if (m->interference & HPS_INTERF_FAULTS)
		json_faults(m, w, j);
	if (m->interference & HPS_INTERF_LOCKS)
		json_locks(m, w, j);
	jsonw_end_object(j);
}

/* Where the thread's time went, by cause and agent. */
static void json_time(const struct model *m, const struct wthread *w, struct jsonw *j)
{
	const Hostprof__Snapshot *s = m->snap;

	jsonw_name(j, "time");
	jsonw_begin_object(j);
	jsonw_uint_field(j, "window_ns", window_ns(s));
	if (w->has_bandwidth) {
		jsonw_name(j, "cgroup");
		jsonw_begin_object(j);
		jsonw_string_field(j, "path", w->cgroup);
		jsonw_int_field(j, "cpu_quota_us", w->cpu_quota_us);
		jsonw_uint_field(j, "cpu_period_us", w->cpu_period_us);
		jsonw_end_object(j);
	}
	jsonw_uint_field(j, "lost_ns", w->acc.lost_ns);
	jsonw_bool_field(j, "switched", w->acc.switched);
	if (w->acc.home_cpu >= 0) {
		jsonw_int_field(j, "home_cpu", w->acc.home_cpu);
		jsonw_uint_field(j, "moves_off", w->acc.moves_off);
	}
	jsonw_name(j, "causes");
	jsonw_begin_array(j);
	for (enum cause c = 0; c < CAUSE_MAX; c++) {
		const struct tally *t = &w->acc.cause[c];
		const uint32_t *first;
		size_t n;

		if (!t->time_ns)
			continue;
		jsonw_begin_object(j);
		jsonw_string_field(j, "cause", report_cause_key(c));
		jsonw_string_field(j, "text", report_cause_name(c));
		jsonw_bool_field(j, "lost", cause_lost(c));
		json_tally(j, t);
		jsonw_int_field(j, "max_at_ns", (int64_t)(w->acc.cause_max_at[c] - s->start_ns));
		jsonw_name(j, "by");
		jsonw_begin_array(j);
		n = model_cause_agents(w, c, &first);
		for (size_t k = 0; k < n && k < TOP_CULPRITS && cause_lost(c); k++) {
			const struct agent *a = &w->acc.ag[first[k]];

			jsonw_begin_object(j);
			json_agent_fields(m, w, a, j);
			json_tally(j, &a->sum);
			jsonw_int_field(j, "max_at_ns", (int64_t)(a->max_at - s->start_ns));
			jsonw_end_object(j);
		}
		jsonw_end_array(j);
		jsonw_uint_field(j, "agents", cause_lost(c) ? n : 0);
		jsonw_end_object(j);
	}
	jsonw_end_array(j);
	jsonw_end_object(j);
}

#define JSON_EPISODES 100 /* the longest, of each dispatch thread */

static int cmp_episode_len(const void *a, const void *b)
{
	const struct episode *x = *(const struct episode *const *)a, *y = *(const struct episode *const *)b;
	uint64_t lx = x->end - x->begin, ly = y->end - y->begin;

	if (lx != ly)
		return lx > ly ? -1 : 1;
	return x->begin < y->begin ? -1 : x->begin > y->begin;
}

static void json_episodes(const struct model *m, const struct wthread *w, struct jsonw *j)
{
	const struct account *acc = &w->acc;
	const Hostprof__Snapshot *s = m->snap;
	_cleanup_free_ const struct episode **by_len = calloc(MAX(acc->n_ep, (size_t)1), sizeof(*by_len));

	jsonw_name(j, "episodes");
	jsonw_begin_object(j);
	jsonw_uint_field(j, "min_ns", EPISODE_MIN_NS);
	jsonw_uint_field(j, "count", acc->n_ep);
	jsonw_uint_field(j, "time_ns", acc->ep_ns);
	jsonw_name(j, "longest");
	jsonw_begin_array(j);
	for (size_t i = 0; by_len && i < acc->n_ep; i++)
		by_len[i] = &acc->ep[i];
	if (by_len)
		qsort_safe(by_len, acc->n_ep, sizeof(*by_len), cmp_episode_len);
	for (size_t i = 0; by_len && i < acc->n_ep && i < JSON_EPISODES; i++) {
		const struct episode *e = by_len[i];
		struct episode_part parts[EPISODE_PARTS];
		size_t n = model_episode_parts(e, parts);

		jsonw_begin_object(j);
		jsonw_int_field(j, "at_ns", (int64_t)(e->begin - s->start_ns));
		jsonw_uint_field(j, "dur_ns", e->end - e->begin);
		jsonw_name(j, "parts");
		jsonw_begin_array(j);
		for (size_t k = 0; k < n; k++) {
			const struct agent *a = &acc->ag[parts[k].agent];

			jsonw_begin_object(j);
			jsonw_string_field(j, "cause", report_cause_key(a->cause));
			jsonw_uint_field(j, "ns", parts[k].ns);
			jsonw_name(j, "by");
			jsonw_begin_object(j);
			json_agent_fields(m, w, a, j);
			jsonw_end_object(j);
			jsonw_end_object(j);
		}
		jsonw_end_array(j);
		jsonw_uint_field(j, "rest_ns", e->rest_ns);
		jsonw_end_object(j);
	}
	jsonw_end_array(j);
	jsonw_end_object(j);
}

static void json_capture(const struct model *m, struct jsonw *j)
{
	const Hostprof__CaptureStats *st = m->snap->stats;
	const Hostprof__SymbolStats *sy = m->snap->symbol_stats;

	jsonw_name(j, "capture");
	jsonw_begin_object(j);
	jsonw_uint_field(j, "events", st ? st->events : 0);
	jsonw_uint_field(j, "events_total", st ? st->events_total : 0);
	jsonw_uint_field(j, "drops_total", capture_drops(st));
	jsonw_name(j, "drops");
	jsonw_begin_array(j);
	for (size_t i = 0; st && i < st->n_drops; i++) {
		jsonw_begin_object(j);
		jsonw_string_field(j, "cause", st->drops[i]->cause);
		jsonw_uint_field(j, "count", st->drops[i]->count);
		jsonw_end_object(j);
	}
	jsonw_end_array(j);
	jsonw_uint_field(j, "evicted", st ? st->evicted : 0);
	jsonw_uint_field(j, "stack_frames_max", st ? st->stack_frames_max : 0);
	jsonw_name(j, "symbols");
	jsonw_begin_object(j);
	jsonw_uint_field(j, "resolved", sy ? sy->resolved : 0);
	jsonw_uint_field(j, "unresolved", sy ? sy->unresolved : 0);
	jsonw_uint_field(j, "suspect_stacks", sy ? sy->suspect_stacks : 0);
	if (sy && (sy->lines || sy->inlined || sy->debuginfo_failed)) {
		jsonw_uint_field(j, "lines", sy->lines);
		jsonw_uint_field(j, "inlined", sy->inlined);
		jsonw_uint_field(j, "debuginfo_failed", sy->debuginfo_failed);
	}
	if (sy && sy->unwind && sy->unwind->stacks) {
		const Hostprof__UnwindStats *u = sy->unwind;

		jsonw_name(j, "unwind");
		jsonw_begin_object(j);
		jsonw_uint_field(j, "stacks", u->stacks);
		jsonw_uint_field(j, "complete", u->complete);
		jsonw_uint_field(j, "fp_kept", u->fp_kept);
		jsonw_uint_field(j, "offcpu", u->offcpu);
		jsonw_uint_field(j, "offcpu_fp", u->offcpu_fp);
		jsonw_name(j, "truncated");
		jsonw_begin_object(j);
		for (size_t i = 0; i < u->n_truncated; i++)
			jsonw_uint_field(j, u->truncated[i]->cause ? u->truncated[i]->cause : "?", u->truncated[i]->count);
		jsonw_end_object(j);
		jsonw_end_object(j);
	}
	if (m->n_hints) {
		/* hot code in files without symbols: the debug packages that would name it */
		jsonw_name(j, "missing");
		jsonw_begin_array(j);
		for (size_t k = 0; k < m->n_hints; k++) {
			const Hostprof__Mapping *mp = m->snap->mappings[m->hints[k].mapping - 1];

			jsonw_begin_object(j);
			jsonw_string_field(j, "file", mp->file);
			jsonw_uint_field(j, "samples", m->hints[k].samples);
			jsonw_float_field(j, "percent", pct(m->hints[k].samples, m->samples));
			jsonw_name(j, "debug_packages");
			jsonw_begin_array(j);
			for (size_t i = 0; i < mp->n_debug_packages; i++)
				jsonw_string(j, mp->debug_packages[i]);
			jsonw_end_array(j);
			jsonw_end_object(j);
		}
		jsonw_end_array(j);
	}
	jsonw_end_object(j);
	jsonw_end_object(j);
}

int report_json_model(const struct model *m, FILE *out)
{
	const Hostprof__Snapshot *snap = m->snap;
	struct jsonw *j;

	j = jsonw_new(out);
	if (!j)
		return -ENOMEM;
	jsonw_begin_object(j);
	json_verdict(m, j);
	json_dispatch(m, j);
	json_longest_stall(m, j);
	json_header(m, j);
	jsonw_name(j, "threads"); /* the dispatch threads first */
	jsonw_begin_array(j);
	for (size_t o = 0; o < 2 * m->n; o++) {
		const struct wthread *w = &m->t[o % m->n];

		if (o < m->n ? !w->dispatch : !w->active || w->dispatch)
			continue;
		jsonw_begin_object(j);
		jsonw_uint_field(j, "tid", w->tid);
		jsonw_string_field(j, "comm", w->comm);
		jsonw_bool_field(j, "dispatch", w->dispatch);
		json_time(m, w, j);
		if (w->dispatch)
			json_episodes(m, w, j);
		json_preemptions(m, w, j);
		json_cpus(m, w, j);
		json_syscalls(m, w, j);
		json_offcpu(m, w, j);
		json_oncpu(m, w, j);
		json_interference(m, w, j);
		jsonw_end_object(j);
	}
	jsonw_end_array(j);
	jsonw_name(j, "idle_threads"); /* watched, and no event in the window */
	jsonw_begin_array(j);
	for (size_t i = 0; i < m->n; i++) {
		if (m->t[i].active || m->t[i].dispatch)
			continue;
		jsonw_begin_object(j);
		jsonw_uint_field(j, "tid", m->t[i].tid);
		jsonw_string_field(j, "comm", m->t[i].comm);
		jsonw_end_object(j);
	}
	jsonw_end_array(j);
	report_gil_json(snap, j);
	report_python_json(snap, j);
	json_capture(m, j);
	jsonw_end_object(j);
	fputc('\n', out);
	jsonw_free(j);
	return report_flush(out);
}

int snapshot_report_json(const Hostprof__Snapshot *snap, FILE *out)
{
	const struct model *m;
	int r;

	r = model_get(snap, &m);
	if (r < 0)
		return r;
	r = report_json_model(m, out);
	model_put(m);
	return r;
}
