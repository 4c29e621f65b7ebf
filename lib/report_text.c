// SPDX-License-Identifier: GPL-2.0-only
/*
 * The report as text (".txt"): the verdict, the window and which threads dispatch, each
 * dispatch thread (where its time went, its stall episodes, then the details), the rest
 * of the process, the capture.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>

#include "export.h"
#include "hps.h"
#include "macro.h"
#include "report_internal.h"
#include "report_gil.h"
#include "report_python.h"

#define STACK_INDENT 32 /* frames under the off-CPU columns */
#define LOCK_STACK_INDENT 38 /* under the lock column */
#define LOCK_FRAMES 6 /* of the longest wait's kernel stack */
#define TOP_AGENTS 3 /* under each cause of the breakdown */
#define TOP_EPISODES 10

/* " at or above 10 us" for a threshold of 10000 ns; "" for none */
static void min_desc(uint64_t ns, char *buf, size_t len)
{
	if (!ns)
		buf[0] = '\0';
	else if (ns < NSEC_PER_MSEC)
		snprintf(buf, len, " at or above %g us", (double)ns / 1e3);
	else
		snprintf(buf, len, " at or above %g ms", (double)ns / 1e6);
}

/* Syscall arguments: small values in decimal, addresses and flags in hex. */
static void put_arg(FILE *f, uint64_t v)
{
	if (v < 0x10000)
		fprintf(f, "%" PRIu64, v);
	else
		fprintf(f, "0x%" PRIx64, v);
}

static void put_ret(FILE *f, int64_t ret)
{
	const char *e = errno_name(ret);

	fprintf(f, "%" PRId64, ret);
	if (e)
		fprintf(f, " %s", e);
}

static void cpu_list(FILE *f, const struct wthread *w)
{
	for (size_t i = 0; i < w->n_cpus; i++)
		fprintf(f, "%s%" PRIu32, i ? "," : "", w->cpus[i]);
}

/* Which interference tables the snapshot has, once; nothing when it has none. */
static void text_interference_header(const struct model *m, FILE *f)
{
	const Hostprof__Snapshot *s = m->snap;
	bool first = true;
	char min[48];

	if (!m->interference)
		return;
	fputs("interference  captured:", f);
	for (size_t b = 0; model_interference_name(b); b++) {
		if (!(m->interference & (1u << b)))
			continue;
		fprintf(f, "%s %s", first ? "" : ",", model_interference_name(b));
		first = false;
		min[0] = '\0';
		if (1u << b == HPS_INTERF_IRQ)
			min_desc(s->irq_min_ns, min, sizeof(min));
		else if (1u << b == HPS_INTERF_LOCKS)
			min_desc(s->lock_min_ns, min, sizeof(min));
		fputs(min, f);
	}
	first = true;
	for (size_t b = 0; model_interference_name(b); b++) {
		if (!model_interference_missing(m, b))
			continue;
		fprintf(f, "%s%s", first ? "; not captured: " : ", ", model_interference_name(b));
		first = false;
	}
	fprintf(f, "%s\n", first ? "" : " (--interference)");
	if (m->unmatched_count)
		fprintf(f,
			"interference  %" PRIu64 " interrupt%s, %.3f ms, ran where a thread waited;"
			" the switches name no thread waiting there\n",
			m->unmatched_count, m->unmatched_count == 1 ? "" : "s", ms(m->unmatched_ns));
}

/* The globs, as one list: "acl_thread, hccl_*" */
static void globs_desc(const struct model *m, FILE *f)
{
	if (!m->n_dispatch_globs)
		fputs("none", f);
	for (size_t g = 0; g < m->n_dispatch_globs; g++)
		fprintf(f, "%s%s", g ? ", " : "", m->dispatch_globs[g]);
}

/* Which threads the report is about first, and why those. */
static void text_dispatch_header(const struct model *m, FILE *f)
{
	char line[512];
	size_t n = 0;

	fputs("dispatch ", f);
	switch (m->dispatch_why) {
	case DISPATCH_MATCHED:
		for (size_t k = 0; k < m->n; k++)
			if (m->t[k].dispatch)
				fprintf(f, "%s%s (tid %" PRIu32 ")", n++ ? ", " : "", m->t[k].comm,
					m->t[k].tid);
		fputs(": the name matches dispatch_threads ", f);
		globs_desc(m, f);
		break;
	case DISPATCH_MOST_RUN:
	case DISPATCH_MAIN:
		fputs("no thread's name matches dispatch_threads ", f);
		globs_desc(m, f);
		fprintf(f, "; taking %s: %s (tid %" PRIu32 ")",
			m->dispatch_why == DISPATCH_MOST_RUN ? "the thread that ran the most" :
							       "the main thread",
			m->t[m->verdict].comm, m->t[m->verdict].tid);
		break;
	case DISPATCH_NONE:
		fputs("none: no thread of the process in the snapshot", f);
		break;
	}
	if (m->dispatch_default)
		fputs(" (the snapshot records no dispatch_threads: the default)", f);
	fputc('\n', f);
	report_longest_stall(m, line, sizeof(line));
	fprintf(f, "longest  %s\n", line);
}

static void text_header(const struct model *m, FILE *f)
{
	const Hostprof__Snapshot *s = m->snap;
	const Hostprof__Process *proc = NULL;

	for (size_t i = 0; i < s->n_processes; i++)
		if (s->processes[i]->pid == s->pid)
			proc = s->processes[i];
	fprintf(f, "process  %s (pid %" PRIu32 ")", proc && proc->comm ? proc->comm : "?", s->pid);
	if (proc && proc->n_cmdline) {
		fputs(":", f);
		for (size_t i = 0; i < proc->n_cmdline; i++)
			fprintf(f, " %s", proc->cmdline[i]);
	}
	fputc('\n', f);
	if (s->host)
		fprintf(f, "host     %s, %s %s %s, %" PRIu32 " CPUs\n",
			s->host->hostname ? s->host->hostname : "?", s->host->sysname ? s->host->sysname : "",
			s->host->kernel_release ? s->host->kernel_release : "",
			s->host->machine ? s->host->machine : "", s->host->ncpus);
	fprintf(f, "window   %.3f s from %" PRIu64 ".%09" PRIu64 " s CLOCK_BOOTTIME, reason: %s\n",
		s->end_ns > s->start_ns ? (double)(s->end_ns - s->start_ns) / 1e9 : 0.0,
		(uint64_t)(s->start_ns / NSEC_PER_SEC), (uint64_t)(s->start_ns % NSEC_PER_SEC),
		s->reason && s->reason[0] ? s->reason : "?");
	text_dispatch_header(m, f);
	text_interference_header(m, f);
	for (size_t i = 0; i < s->n_markers; i++) {
		const Hostprof__Marker *mk = s->markers[i];

		fprintf(f, "marker   %+.3f s  %s (tid %" PRIu32 ")%s%s\n", rel_s(m, mk->ts),
			mk->name ? mk->name : "", mk->tid, mk->detail && mk->detail[0] ? ": " : "",
			mk->detail ? mk->detail : "");
	}
}

static void text_preemptions(const struct model *m, const struct wthread *w, FILE *f)
{
	char task[160];

	if (!w->preempt.count) {
		fprintf(f, "  preemptions       none\n");
		return;
	}
	fprintf(f, "  preemptions       %" PRIu64 ", %.1f ms taken, max %.1f ms\n", w->preempt.count,
		ms(w->preempt.time_ns), ms(w->preempt.max_ns));
	fprintf(f, "    %8s %10s %10s  %s\n", "count", "total ms", "max ms", "by");
	for (size_t c = 0; c < w->n_culprits && c < TOP_CULPRITS; c++) {
		const struct culprit *cu = &w->culprits[c];

		report_task_desc(m->snap, cu, task, sizeof(task));
		fprintf(f, "    %8" PRIu64 " %10.1f %10.1f  %s\n", cu->sum.count, ms(cu->sum.time_ns),
			ms(cu->sum.max_ns), task);
	}
	if (w->n_culprits > TOP_CULPRITS)
		fprintf(f, "    ... %zu more tasks\n", w->n_culprits - TOP_CULPRITS);
}

static void text_cpus(const struct model *m, const struct wthread *w, FILE *f)
{
	const Hostprof__MigrationTable *mg = m->snap->migrations;

	fprintf(f, "  CPUs              ");
	if (!w->n_cpus)
		fprintf(f, "not seen running");
	else if (w->n_cpus == 1)
		fprintf(f, "ran only on CPU %" PRIu32, w->cpus[0]);
	else {
		fprintf(f, "ran on %zu CPUs: ", w->n_cpus);
		cpu_list(f, w);
	}
	if (!w->n_migrations)
		fprintf(f, "; no migrations\n");
	else
		fprintf(f, "; %zu migration%s\n", w->n_migrations, w->n_migrations == 1 ? "" : "s");
	for (size_t k = 0; k < w->n_migrations && k < TOP_MIGRATIONS; k++) {
		size_t i = w->migrations[k];

		fprintf(f, "    %+.3f s  CPU %" PRIu32 " -> %" PRIu32 "\n", rel_s(m, m->mg_ts[i]),
			mg->from_cpu[i], mg->to_cpu[i]);
	}
	if (w->n_migrations > TOP_MIGRATIONS)
		fprintf(f, "    ... %zu more\n", w->n_migrations - TOP_MIGRATIONS);
}

static void text_syscalls(const struct model *m, const struct wthread *w, FILE *f)
{
	const Hostprof__Snapshot *s = m->snap;
	const Hostprof__SyscallTable *sc = s->syscalls;
	char nbuf[32];

	if (hps_syscalls_blocking(s))
		fprintf(f, "  syscalls          = blocking: only calls that blocked; calls that never sleep, "
			   "totals and return values not covered\n");
	if (w->n_syscalls) {
		fprintf(f, "  slowest syscalls  %zu at or above %.1f ms%s\n", w->n_syscalls, ms(s->syscall_min_ns),
			hps_syscalls_blocking(s) ? " (time blocked)" : "");
		fprintf(f, "    %8s %10s  %s\n", "at s", "ms", "call");
		for (size_t k = 0; k < w->n_syscalls && k < TOP_SYSCALLS; k++) {
			size_t i = w->syscalls[k];

			fprintf(f, "    %+8.3f %10.1f  %s(", rel_s(m, m->sc_ts[i]), ms(sc->dur_ns[i]),
				report_syscall_name(s, sc->nr[i], nbuf, sizeof(nbuf)));
			put_arg(f, sc->arg0[i]);
			fputs(", ", f);
			put_arg(f, sc->arg1[i]);
			fputs(", ", f);
			put_arg(f, sc->arg2[i]);
			fputs(") = ", f);
			if (hps_syscall_flags(sc, i) & HPS_SYSCALL_RET_UNKNOWN)
				fputc('?', f);
			else
				put_ret(f, sc->ret[i]);
			fputc('\n', f);
		}
	} else {
		fprintf(f, "  slowest syscalls  none at or above %.1f ms\n", ms(s->syscall_min_ns));
	}
	if (hps_syscalls_blocking(s)) {
		fprintf(f, "  syscall totals    not covered (syscalls = blocking)\n");
		return;
	}
	if (!w->n_hists)
		return;
	fprintf(f, "  syscall totals    since watching began\n");
	fprintf(f, "    %8s %10s %10s  %s\n", "count", "total ms", "max ms", "syscall");
	for (size_t k = 0; k < w->n_hists && k < TOP_HISTOGRAMS; k++) {
		const Hostprof__SyscallHistogram *h = s->syscall_hist[w->hists[k]];

		fprintf(f, "    %8" PRIu64 " %10.1f %10.1f  %s\n", h->count, ms(h->total_ns), ms(h->max_ns),
			report_syscall_name(s, h->nr, nbuf, sizeof(nbuf)));
	}
	if (w->n_hists > TOP_HISTOGRAMS)
		fprintf(f, "    ... %zu more\n", w->n_hists - TOP_HISTOGRAMS);
}

/* The first max frames of stack idx1, innermost first, one per line, indented. */
static void text_stack(const struct model *m, uint32_t idx1, bool kernel, int indent, size_t max, FILE *f)
{
	const Hostprof__Stack *st;

	if (!idx1)
		return;
	st = m->snap->stacks[idx1 - 1];
	for (size_t j = 0; j < st->n_frames && j < max; j++) {
		const Hostprof__Frame *fr = m->snap->frames[st->frames[j]];
		const char *src;
		char buf[256];

		/* the functions inlined there first, innermost first: each a frame of the source */
		for (size_t k = 0; k < fr->n_inlined; k++) {
			src = snapview_source(fr->inlined[k]->file, fr->inlined[k]->line, buf, sizeof(buf));
			fprintf(f, "%*s%s (inlined%s%s)\n", indent, "", snapview_inlined_name(fr->inlined[k]),
				src ? ", " : "", src ? src : "");
		}
		src = snapview_source(fr->file, fr->line, buf, sizeof(buf));
		fprintf(f, "%*s%s%s%s%s%s\n", indent, "", m->fn.name[st->frames[j]], src ? " (" : "",
			src ? src : "", src ? ")" : "", kernel ? " [k]" : "");
	}
	if (st->n_frames > max)
		fprintf(f, "%*s... %zu more frame%s\n", indent, "", st->n_frames - max,
			st->n_frames - max == 1 ? "" : "s");
	else if (st->truncated)
		fprintf(f, "%*s... (truncated)\n", indent, "");
	if (st->suspect)
		fprintf(f, "%*s(suspect: a frame lies outside any executable mapping)\n", indent, "");
}

static void text_offcpu(const struct model *m, const struct wthread *w, FILE *f)
{
	const Hostprof__Snapshot *s = m->snap;

	if (!w->off_sum.count) {
		fprintf(f, "  off-CPU           none at or above %.1f ms\n", ms(s->offcpu_min_ns));
		return;
	}
	fprintf(f, "  off-CPU           %" PRIu64 " interval%s, %.1f ms blocked\n", w->off_sum.count,
		w->off_sum.count == 1 ? "" : "s", ms(w->off_sum.time_ns));
	fprintf(f, "    %8s %10s  %-5s  %s\n", "count", "total ms", "state",
		"woken by; stack, innermost first");
	for (size_t g = 0; g < w->n_off && g < TOP_STACKS; g++) {
		const struct offcpu_group *og = &w->off[g];
		char state[16];

		report_state_name(og->states, state, sizeof(state));
		fprintf(f, "    %8" PRIu64 " %10.1f  %-5s  ", og->sum.count, ms(og->sum.time_ns), state);
		for (size_t k = 0; k < og->n_wakers && k < TOP_WAKERS; k++) {
			const struct waker *wk = &og->wakers[k];

			if (k)
				fputs(", ", f);
			if (wk->tid)
				fprintf(f, "%s (tid %" PRIu32 ")", hps_str(s, wk->comm), wk->tid);
			else
				fputs("unknown", f);
			if (og->n_wakers > 1)
				fprintf(f, " %" PRIu64 "x", wk->sum.count);
		}
		if (og->n_wakers > TOP_WAKERS)
			fprintf(f, ", %zu more", og->n_wakers - TOP_WAKERS);
		fputc('\n', f);
		if (!og->kstack && !og->ustack)
			fprintf(f, "%*s[no stack]\n", STACK_INDENT, "");
		text_stack(m, og->kstack, true, STACK_INDENT, SIZE_MAX, f);
		text_stack(m, og->ustack, false, STACK_INDENT, SIZE_MAX, f);
	}
	if (w->n_off > TOP_STACKS)
		fprintf(f, "    ... %zu more stacks\n", w->n_off - TOP_STACKS);
}

static void text_oncpu(const struct model *m, const struct wthread *w, FILE *f)
{
	if (!w->samples) {
		fprintf(f, "  on-CPU            no samples\n");
		return;
	}
	fprintf(f, "  on-CPU            %" PRIu64 " sample%s, %.1f%% of the process's %" PRIu64 "\n",
		w->samples, w->samples == 1 ? "" : "s", pct(w->samples, m->samples), m->samples);
	fprintf(f, "    %8s %10s  %s\n", "samples", "%", "function");
	for (size_t k = 0; k < w->n_leaves && k < TOP_FUNCTIONS; k++) {
		const struct leaf_count *l = &w->leaves[k];
		char buf[256];
		const char *src = snapview_source(l->file, l->line, buf, sizeof(buf));

		fprintf(f, "    %8" PRIu64 " %10.1f  %s%s%s%s%s\n", l->samples, pct(l->samples, m->samples),
			l->name, src ? " (" : "", src ? src : "", src ? ")" : "", l->kernel ? " [k]" : "");
	}
	if (w->n_leaves > TOP_FUNCTIONS)
		fprintf(f, "    ... %zu more functions\n", w->n_leaves - TOP_FUNCTIONS);
}

static void text_irq_groups(const struct model *m, const struct irq_side *side, const char *what, FILE *f)
{
	const Hostprof__Snapshot *s = m->snap;

	fprintf(f, "      %8s %10s %10s %9s  %s\n", "count", "total ms", "max ms", "% window", what);
	for (size_t k = 0; k < side->n && k < TOP_IRQS; k++) {
		const struct irq_group *g = &side->g[k];
		char irq[96], cpus[96];

		report_irq_desc(s, g->kind, g->num, g->name, irq, sizeof(irq));
		report_cpus_desc(g->cpus, g->n_cpus, cpus, sizeof(cpus));
		fprintf(f, "      %8" PRIu64 " %10.3f %10.3f %9.2f  %s on %s\n", g->sum.count,
			ms(g->sum.time_ns), ms(g->sum.max_ns), pct(g->sum.time_ns, window_ns(s)), irq, cpus);
	}
	if (side->n > TOP_IRQS)
		fprintf(f, "      ... %zu more\n", side->n - TOP_IRQS);
}

static void text_irqs(const struct model *m, const struct wthread *w, FILE *f)
{
	const Hostprof__Snapshot *s = m->snap;
	char min[48];

	if (!w->irq_ran.count && !w->irq_waited.count) {
		min_desc(s->irq_min_ns, min, sizeof(min));
		fprintf(f, "    interrupts      none%s\n", min);
		return;
	}
	fprintf(f, "    interrupts      ");
	if (w->irq_ran.count)
		fprintf(f, "%" PRIu64 " while it ran: %.3f ms taken (%.2f%% of the window)", w->irq_ran.count,
			ms(w->irq_ran.time_ns), pct(w->irq_ran.time_ns, window_ns(s)));
	if (w->irq_waited.count)
		fprintf(f, "%s%" PRIu64 " while it waited on a CPU: %.3f ms", w->irq_ran.count ? "; " : "",
			w->irq_waited.count, ms(w->irq_waited.time_ns));
	fputc('\n', f);
	if (w->irq_ran.n)
		text_irq_groups(m, &w->irq_ran, "interrupted it", f);
	if (w->irq_waited.n)
		text_irq_groups(m, &w->irq_waited, "ran while it waited", f);
}

static void text_reclaim(const struct model *m, const struct wthread *w, FILE *f)
{
	const Hostprof__ReclaimTable *t = m->snap->reclaims;

	if (!w->rcl_sum.count) {
		fprintf(f, "    reclaim         none\n");
		return;
	}
	fprintf(f, "    reclaim         %" PRIu64 ", %.3f ms, max %.3f ms\n", w->rcl_sum.count,
		ms(w->rcl_sum.time_ns), ms(w->rcl_sum.max_ns));
	fprintf(f, "      %8s %10s %10s  %s\n", "count", "total ms", "max ms", "kind");
	for (size_t k = 0; k < w->n_rcl && k < TOP_RECLAIMS; k++) {
		const struct reclaim_group *g = &w->rcl[k];
		char res[64];

		if (g->kind == HPS_RECLAIM_COMPACT)
			report_reclaim_result(g->kind, t->result[g->sum.max_row], res, sizeof(res));
		else
			report_reclaim_result(g->kind, g->pages, res, sizeof(res));
		fprintf(f, "      %8" PRIu64 " %10.3f %10.3f  %s, order %" PRId32 ": %s%s\n", g->sum.count,
			ms(g->sum.time_ns), ms(g->sum.max_ns), hps_reclaim_kind_name(g->kind), g->order, res,
			g->kind == HPS_RECLAIM_COMPACT && g->sum.count > 1 ? " (the longest)" : "");
	}
	if (w->n_rcl > TOP_RECLAIMS)
		fprintf(f, "      ... %zu more\n", w->n_rcl - TOP_RECLAIMS);
}

static void text_faults(const struct model *m, const struct wthread *w, FILE *f)
{
	const Hostprof__FaultTable *t = m->snap->faults;
	const struct fault_sum *fs = &w->flt;

	if (!fs->faults && !fs->minor && !fs->major) {
		fprintf(f, "    page faults     none\n");
		return;
	}
	fprintf(f, "    page faults     %" PRIu64 " minor, %" PRIu64 " major: %.0f/s over %.3f s", fs->minor,
		fs->major, model_fault_rate(m, fs),
		(double)(fs->over_ns ? fs->over_ns : window_ns(m->snap)) / 1e9);
	if (fs->peak_major)
		fprintf(f, "; most major at once: %" PRIu64 " in %.3f s at %+.3f s", fs->peak_major,
			(double)t->dur_ns[fs->peak_row] / 1e9, rel_s(m, m->flt_ts[fs->peak_row]));
	fputc('\n', f);
	if (fs->faults)
		fprintf(f,
			"                    %" PRIu64 " user faults taken: %" PRIu64 " write, %" PRIu64
			" exec, %" PRIu64 " prot\n",
			fs->faults, fs->write, fs->exec, fs->prot);
}

static void text_locks(const struct model *m, const struct wthread *w, FILE *f)
{
	const Hostprof__Snapshot *s = m->snap;
	const Hostprof__LockTable *t = s->locks;
	char min[48];

	if (!w->lck_sum.count) {
		min_desc(s->lock_min_ns, min, sizeof(min));
		fprintf(f, "    lock waits      none%s\n", min);
		return;
	}
	fprintf(f, "    lock waits      %" PRIu64 ", %.3f ms, max %.3f ms\n", w->lck_sum.count,
		ms(w->lck_sum.time_ns), ms(w->lck_sum.max_ns));
	fprintf(f, "      %8s %10s %10s  %s\n", "count", "total ms", "max ms",
		"lock; the longest wait's kernel stack, innermost first");
	for (size_t k = 0; k < w->n_lck && k < TOP_LOCKS; k++) {
		const struct lock_group *g = &w->lck[k];
		char lock[160];

		report_lock_desc(s, g->name, g->flags, g->lock, lock, sizeof(lock));
		fprintf(f, "      %8" PRIu64 " %10.3f %10.3f  %s", g->sum.count, ms(g->sum.time_ns),
			ms(g->sum.max_ns), lock);
		if (g->failed)
			fprintf(f, "; %" PRIu64 " gave up", g->failed);
		fputc('\n', f);
		text_stack(m, t->kstack[g->sum.max_row], true, LOCK_STACK_INDENT, LOCK_FRAMES, f);
	}
	if (w->n_lck > TOP_LOCKS)
		fprintf(f, "      ... %zu more locks\n", w->n_lck - TOP_LOCKS);
}

/* What interfered with the thread, for each table captured (the header names the others). */
static void text_interference(const struct model *m, const struct wthread *w, FILE *f)
{
	if (!m->interference)
		return;
	if (!w->interfered) {
		fprintf(f, "  interference      none\n");
		return;
	}
	fprintf(f, "  interference\n");
	if (m->interference & HPS_INTERF_IRQ)
		text_irqs(m, w, f);
	if (m->interference & HPS_INTERF_RECLAIM)
		text_reclaim(m, w, f);
	if (m->interference & HPS_INTERF_FAULTS)
		text_faults(m, w, f);
	if (m->interference & HPS_INTERF_LOCKS)
		text_locks(m, w, f);
}

/* Where the thread's time went: each cause, its share and runs, and who caused it. */
static void text_breakdown(const struct model *m, const struct wthread *w, FILE *f)
{
	uint64_t win = window_ns(m->snap);
	char desc[400];

	fprintf(f, "  where the time went  lost %.1f ms of %.3f s (%.1f%%)", ms(w->acc.lost_ns),
		(double)win / 1e9, pct(w->acc.lost_ns, win));
	if (w->acc.home_cpu >= 0)
		fprintf(f, "; it lives on CPU %" PRId64 " and was moved off it %" PRIu64 " time%s",
			w->acc.home_cpu, w->acc.moves_off, w->acc.moves_off == 1 ? "" : "s");
	if (w->has_bandwidth && w->cpu_quota_us > 0)
		fprintf(f, "; its cgroup %s: %.1f ms of CPU every %.1f ms", w->cgroup,
			(double)w->cpu_quota_us / 1e3, (double)w->cpu_period_us / 1e3);
	fputc('\n', f);
	fprintf(f, "    %-34s %10s %7s %7s %10s\n", "cause; by", "ms", "%", "times", "longest ms");
	for (enum cause c = 0; c < CAUSE_MAX; c++) {
		const struct tally *t = &w->acc.cause[c];
		const uint32_t *first;
		size_t n;

		if (!t->time_ns)
			continue;
		fprintf(f, "    %-34s %10.1f %7.1f %7" PRIu64 " %10.1f\n", report_cause_name(c),
			ms(t->time_ns), pct(t->time_ns, win), t->count, ms(t->max_ns));
		n = model_cause_agents(w, c, &first);
		for (size_t k = 0; k < n && k < TOP_AGENTS && c != CAUSE_RUNNING && c != CAUSE_UNKNOWN; k++) {
			const struct agent *a = &w->acc.ag[first[k]];

			report_agent_desc(m, w, a, desc, sizeof(desc));
			fprintf(f, "      %10.1f %7.1f %7" PRIu64 " %10.1f  %s\n", ms(a->sum.time_ns),
				pct(a->sum.time_ns, win), a->sum.count, ms(a->sum.max_ns), desc);
		}
		if (n > TOP_AGENTS && c != CAUSE_RUNNING && c != CAUSE_UNKNOWN)
			fprintf(f, "      ... %zu more\n", n - TOP_AGENTS);
	}
}

static int cmp_episode_len(const void *a, const void *b)
{
	const struct episode *x = *(const struct episode *const *)a, *y = *(const struct episode *const *)b;
	uint64_t lx = x->end - x->begin, ly = y->end - y->begin;

	if (lx != ly)
		return lx > ly ? -1 : 1;
	return x->begin < y->begin ? -1 : x->begin > y->begin;
}

/* "30.0 ms CPU taken by realtime tasks: hog (pid 200, ...)" for each part, then the rest. */
static void text_episode(const struct model *m, const struct wthread *w, const struct episode *e, FILE *f)
{
	struct episode_part parts[EPISODE_PARTS];
	size_t n = model_episode_parts(e, parts);
	char desc[400];

	fprintf(f, "    %+8.3f %10.1f ", rel_s(m, e->begin), ms(e->end - e->begin));
	for (size_t k = 0; k < n; k++) {
		const struct agent *a = &w->acc.ag[parts[k].agent];

		report_agent_desc(m, w, a, desc, sizeof(desc));
		fprintf(f, "%s%.1f ms %s%s%s", k ? "; " : " ", ms(parts[k].ns), report_cause_name(a->cause),
			desc[0] ? ": " : "", desc);
	}
	if (e->rest_ns)
		fprintf(f, "; %.1f ms more", ms(e->rest_ns));
	fputc('\n', f);
}

static void text_episodes(const struct model *m, const struct wthread *w, FILE *f)
{
	const struct account *acc = &w->acc;
	_cleanup_free_ const struct episode **by_len = NULL;

	if (!acc->n_ep) {
		fprintf(f, "  stall episodes    none of %.0f ms or more\n", ms(EPISODE_MIN_NS));
		return;
	}
	fprintf(f, "  stall episodes    %zu of %.0f ms or more, %.1f ms in all%s\n", acc->n_ep,
		ms(EPISODE_MIN_NS), ms(acc->ep_ns), acc->n_ep > TOP_EPISODES ? "; the longest:" : "");
	by_len = calloc(acc->n_ep, sizeof(*by_len));
	if (!by_len)
		return;
	for (size_t i = 0; i < acc->n_ep; i++)
		by_len[i] = &acc->ep[i];
	qsort_safe(by_len, acc->n_ep, sizeof(*by_len), cmp_episode_len);
	fprintf(f, "    %8s %10s  %s\n", "at s", "ms", "made of");
	for (size_t i = 0; i < acc->n_ep && i < TOP_EPISODES; i++)
		text_episode(m, w, by_len[i], f);
}

/* For a thread that is not a dispatch thread: its loss in one line. */
static void text_loss_line(const struct model *m, const struct wthread *w, FILE *f)
{
	enum cause top = model_top_cause(w);

	if (!w->acc.switched || top == CAUSE_MAX)
		return;
	fprintf(f, "  lost              %.1f ms (%.1f%%), the most to %s: %.1f ms, longest %.1f ms\n",
		ms(w->acc.lost_ns), pct(w->acc.lost_ns, window_ns(m->snap)), report_cause_name(top),
		ms(w->acc.cause[top].time_ns), ms(w->acc.cause[top].max_ns));
}

static void text_thread(const struct model *m, const struct wthread *w, FILE *f)
{
	fprintf(f, "\n%s %s (tid %" PRIu32 ")\n", w->dispatch ? "dispatch thread" : "thread",
		w->comm[0] ? w->comm : "?", w->tid);
	if (w->dispatch) {
		text_breakdown(m, w, f);
		text_episodes(m, w, f);
	} else {
		text_loss_line(m, w, f);
	}
	text_preemptions(m, w, f);
	if (w->n_rq)
		fprintf(f,
			"  runqueue latency  p50 %.1f ms, p99 %.1f ms, max %.1f ms over %zu switch-ins (%" PRIu64
			" after a wakeup, %" PRIu64 " after a preemption)\n",
			ms(percentile(w->rq, w->n_rq, 50)), ms(percentile(w->rq, w->n_rq, 99)),
			ms(w->rq[w->n_rq - 1]), w->n_rq, w->rq_wakeup, w->rq_preempt);
	else
		fprintf(f, "  runqueue latency  not known\n");
	text_cpus(m, w, f);
	text_syscalls(m, w, f);
	text_offcpu(m, w, f);
	text_oncpu(m, w, f);
	text_interference(m, w, f);
}

/* The watched threads with nothing to report, on one line. */
static void text_idle_threads(const struct model *m, FILE *f)
{
	size_t n = 0;

	for (size_t i = 0; i < m->n; i++) {
		const struct wthread *w = &m->t[i];

		if (w->active || w->dispatch)
			continue;
		if (n < TOP_IDLE_THREADS)
			fprintf(f, "%s%s (tid %" PRIu32 ")",
				n ? ", " : "\nno events in this window: ", w->comm[0] ? w->comm : "?",
				w->tid);
		n++;
	}
	if (n > TOP_IDLE_THREADS)
		fprintf(f, " and %zu more threads", n - TOP_IDLE_THREADS);
	if (n)
		fputc('\n', f);
}

static void text_capture(const struct model *m, FILE *f)
{
	const Hostprof__Snapshot *s = m->snap;
	const Hostprof__CaptureStats *st = s->stats;
	const Hostprof__SymbolStats *sy = s->symbol_stats;

	fprintf(f, "\ncapture\n");
	fprintf(f, "  events            %" PRIu64 " for this process, %" PRIu64 " in all\n",
		st ? st->events : 0, st ? st->events_total : 0);
	fprintf(f, "  drops             %" PRIu64 " (host-wide)\n", capture_drops(st));
	for (size_t i = 0; st && i < st->n_drops; i++)
		fprintf(f, "    %-16s %" PRIu64 "\n", st->drops[i]->cause ? st->drops[i]->cause : "?",
			st->drops[i]->count);
	fprintf(f, "  evicted           %" PRIu64 "\n", st ? st->evicted : 0);
	fprintf(f,
		"  symbols           frames resolved %" PRIu64 ", unresolved %" PRIu64
		"; suspect stacks %" PRIu64 "\n",
		sy ? sy->resolved : 0, sy ? sy->unresolved : 0, sy ? sy->suspect_stacks : 0);
	if (sy && (sy->lines || sy->inlined || sy->debuginfo_failed))
		fprintf(f,
			"                    with source lines %" PRIu64 ", inlined frames %" PRIu64
			"; debug info unreadable for %" PRIu64 "\n",
			sy->lines, sy->inlined, sy->debuginfo_failed);
	if (sy && sy->unwind && sy->unwind->stacks) {
		const Hostprof__UnwindStats *u = sy->unwind;

		fprintf(f, "  unwinding         %" PRIu64 " user stacks from CFI (the daemon's), %" PRIu64 " complete",
			u->stacks, u->complete);
		for (size_t i = 0; i < u->n_truncated; i++)
			fprintf(f, "%s%s %" PRIu64, i ? ", " : "; truncated: ", u->truncated[i]->cause ? u->truncated[i]->cause : "?",
				u->truncated[i]->count);
		if (u->fp_kept)
			fprintf(f, "; frame pointers kept for %" PRIu64, u->fp_kept);
		if (u->offcpu || u->offcpu_fp)
			fprintf(f, "; off-CPU user stacks %" PRIu64 " unwound, %" PRIu64 " by frame pointers", u->offcpu,
				u->offcpu_fp);
		fprintf(f, "\n");
	}
	/* hot code in files without symbols: the debug package that would name it */
	for (size_t k = 0; k < m->n_hints; k++) {
		const Hostprof__Mapping *mp = s->mappings[m->hints[k].mapping - 1];

		fprintf(f, "  no symbols        %s: %" PRIu64 " samples (%.1f%%); debug package %s", mp->file,
			m->hints[k].samples, pct(m->hints[k].samples, m->samples), mp->debug_packages[0]);
		for (size_t i = 1; i < mp->n_debug_packages; i++)
			fprintf(f, " or %s", mp->debug_packages[i]);
		fputc('\n', f);
	}
	if (st && st->has_stack_frames_max)
		fprintf(f, "  stack depth       %" PRIu64 " frames at most\n", st->stack_frames_max);
}

int report_text_model(const struct model *m, FILE *out)
{
	char line[512];

	report_verdict_line(m, line, sizeof(line));
	fprintf(out, "%s\n\n", line);
	text_header(m, out);
	for (size_t i = 0; i < m->n; i++) /* the dispatch threads first, then the rest of the process */
		if (m->t[i].dispatch)
			text_thread(m, &m->t[i], out);
	for (size_t i = 0; i < m->n; i++)
		if (m->t[i].active && !m->t[i].dispatch)
			text_thread(m, &m->t[i], out);
	text_idle_threads(m, out);
	report_gil_text(m->snap, out);
	report_python_text(m->snap, out);
	text_capture(m, out);
	return report_flush(out);
}

int snapshot_report_text(const Hostprof__Snapshot *snap, FILE *out)
{
	const struct model *m;
	int r;

	r = model_get(snap, &m);
	if (r < 0)
		return r;
	r = report_text_model(m, out);
	model_put(m);
	return r;
}
