// SPDX-License-Identifier: GPL-2.0-only
/* Diagnosis of a snapshot; see report.h. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "glob.h"
#include "hps.h"
#include "macro.h"
#include "report.h"

struct culprit {
	uint32_t pid, tid;
	int32_t prio;
	uint32_t comm;
	uint64_t count, wait_ns;
};

/* A matched thread: when it was preempted, and by whom (index into culprits), if it is waiting. */
struct victim {
	uint32_t tid;
	uint64_t since;
	size_t culprit;
	bool waiting;
};

static ssize_t find_victim(const struct victim *v, size_t n, uint32_t tid)
{
	for (size_t i = 0; i < n; i++)
		if (v[i].tid == tid)
			return i;
	return -1;
}

int report_preemptions(const Hostprof__Snapshot *snap, const char *thread_glob, struct preempt_summary *ret)
{
	const Hostprof__SchedSwitchTable *t = snap->switches;
	_cleanup_free_ struct victim *victims = NULL;
	_cleanup_free_ struct culprit *culprits = NULL;
	_cleanup_free_ uint64_t *ts = NULL;
	struct preempt_summary s = {};
	size_t nv = 0, nc = 0, cap_c = 0, n = t ? t->n_ts_delta : 0;
	struct hp_glob g;
	int r;

	r = thread_glob_compile(thread_glob, &g);
	if (r < 0)
		return r;
	victims = calloc(MAX(snap->n_threads, (size_t)1), sizeof(*victims));
	if (!victims)
		return -ENOMEM;
	for (size_t i = 0; i < snap->n_threads; i++) {
		const Hostprof__Thread *th = snap->threads[i];

		if (th->pid == snap->pid && th->comm && thread_glob_run(&g, th->comm))
			victims[nv++] = (struct victim){ .tid = th->tid };
	}
	s.threads = nv;
	r = hps_switch_times(snap, &ts);
	if (r < 0)
		return r;
	for (size_t i = 0; i < n; i++) {
		ssize_t v = find_victim(victims, nv, t->next_tid[i]);

		/* a preempted thread runs again: its wait ends */
		if (v >= 0 && victims[v].waiting) {
			uint64_t wait = ts[i] - victims[v].since;

			victims[v].waiting = false;
			s.wait_ns += wait;
			s.max_wait_ns = MAX(s.max_wait_ns, wait);
			culprits[victims[v].culprit].wait_ns += wait;
		}
		v = find_victim(victims, nv, t->prev_tid[i]);
		if (v < 0 || !HP_STATE_RUNNABLE(t->prev_state[i]) || t->prev_pid[i] != snap->pid)
			continue;
		size_t c;

		for (c = 0; c < nc; c++)
			if (culprits[c].tid == t->next_tid[i] && culprits[c].pid == t->next_pid[i])
				break;
		if (c == nc) {
			if (nc == cap_c) {
				size_t ncap = cap_c ? cap_c * 2 : 16;
				struct culprit *p = realloc(culprits, ncap * sizeof(*p));

				if (!p)
					return -ENOMEM;
				culprits = p;
				cap_c = ncap;
			}
			culprits[nc++] = (struct culprit){ .pid = t->next_pid[i], .tid = t->next_tid[i],
							  .prio = t->next_prio[i], .comm = t->next_comm[i] };
		}
		culprits[c].count++;
		s.preemptions++;
		victims[v].waiting = true;
		victims[v].since = ts[i];
		victims[v].culprit = c;
	}
	for (size_t c = 0; c < nc; c++) {
		if (s.top_count && culprits[c].wait_ns <= s.top_wait_ns)
			continue;
		s.top_pid = culprits[c].pid;
		s.top_tid = culprits[c].tid;
		s.top_prio = culprits[c].prio;
		snprintf(s.top_comm, sizeof(s.top_comm), "%s", hps_str(snap, culprits[c].comm));
		s.top_count = culprits[c].count;
		s.top_wait_ns = culprits[c].wait_ns;
	}
	*ret = s;
	return 0;
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
	snprintf(buf, len,
		 "%s: %llu preemptions, %.1f ms waited (max %.1f ms), most by %s (pid %u, prio %d): %llu, %.1f ms",
		 thread_glob, (unsigned long long)s->preemptions, s->wait_ns / 1e6, s->max_wait_ns / 1e6, s->top_comm,
		 s->top_pid, s->top_prio, (unsigned long long)s->top_count, s->top_wait_ns / 1e6);
}
