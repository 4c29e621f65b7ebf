// SPDX-License-Identifier: GPL-2.0-only
/* The client's one-line summary of the preemptions of the threads matching a glob; see report.h. */
#include <errno.h>
#include <stdio.h>

#include "glob_match.h"
#include "hps.h"
#include "macro.h"
#include "report.h"
#include "report_internal.h"
#include "snapview.h"

/* Whether any thread the snapshot knows has a name matching the glob. A model's threads
 * take their names from the same view, and one it has no name for is "": with a glob that
 * does not match "", no match here means none in the model, and the model (a quarter of a
 * second for a busy 10 s window, which the summary line of a snapshot in any format that
 * does not need it would otherwise build) need not be built to say so. */
static int any_thread_named(const Hostprof__Snapshot *snap, const char *thread_glob)
{
	struct snapview v;
	bool found = false;
	int r;

	if (thread_glob_match(thread_glob, ""))
		return 1;
	r = snapview_init(snap, &v);
	if (r < 0)
		return r;
	for (size_t i = 0; i < v.n_threads && !found; i++)
		found = thread_glob_match(thread_glob, v.threads[i].comm);
	snapview_free(&v);
	return found;
}

int report_preemptions(const Hostprof__Snapshot *snap, const char *thread_glob, struct preempt_summary *ret)
{
	_cleanup_free_ struct culprit *all = NULL;
	struct preempt_summary s = {};
	size_t n_all = 0, cap_all = 0;
	const struct model *m;
	int r;

	if (!thread_glob_valid(thread_glob))
		return -EINVAL;
	r = any_thread_named(snap, thread_glob);
	if (r <= 0) {
		if (r == 0)
			*ret = s;
		return r;
	}
	r = model_get(snap, &m);
	if (r < 0)
		return r;
	for (size_t i = 0; i < m->n; i++) {
		const struct wthread *w = &m->t[i];

		if (!thread_glob_match(thread_glob, w->comm))
			continue;
		s.threads++;
		s.preemptions += w->preempt.count;
		s.wait_ns += w->preempt.time_ns;
		s.max_wait_ns = MAX(s.max_wait_ns, w->preempt.max_ns);
		for (size_t c = 0; c < w->n_culprits; c++) {
			const struct culprit *wc = &w->culprits[c];
			size_t k;

			for (k = 0; k < n_all; k++)
				if (all[k].tid == wc->tid && all[k].pid == wc->pid)
					break;
			if (k == n_all) {
				r = reserve_one(&all, n_all, &cap_all, sizeof(*all));
				if (r < 0)
					goto out;
				all[n_all++] = (struct culprit){
					.tid = wc->tid, .pid = wc->pid, .comm = wc->comm, .prio = wc->prio
				};
			}
			all[k].sum.count += wc->sum.count;
			all[k].sum.time_ns += wc->sum.time_ns;
		}
	}
	qsort_safe(all, n_all, sizeof(*all), model_cmp_culprit);
	if (n_all) {
		s.top_pid = all[0].pid;
		s.top_tid = all[0].tid;
		s.top_prio = all[0].prio;
		snprintf(s.top_comm, sizeof(s.top_comm), "%s", hps_str(snap, all[0].comm));
		s.top_count = all[0].sum.count;
		s.top_wait_ns = all[0].sum.time_ns;
	}
	*ret = s;
	r = 0;
out:
	model_put(m);
	return r;
}

void report_preemptions_line(const struct preempt_summary *s, const char *thread_glob, char *buf, size_t len)
{
	if (!s->threads) {
		snprintf(buf, len, "no thread named %s in this snapshot", thread_glob);
		return;
	}
	if (!s->preemptions) {
		snprintf(buf, len, "%s: never preempted", thread_glob);
		return;
	}
	snprintf(
		buf, len,
		"%s: %llu preemptions, %.1f ms waited (max %.1f ms), most by %s (pid %u, prio %d): %llu, %.1f ms",
		thread_glob, (unsigned long long)s->preemptions, s->wait_ns / 1e6, s->max_wait_ns / 1e6,
		s->top_comm, s->top_pid, s->top_prio, (unsigned long long)s->top_count, s->top_wait_ns / 1e6);
}
