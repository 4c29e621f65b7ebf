/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Diagnosis of a snapshot. The full diagnosis is snapshot_report_text() /
 * snapshot_report_json() (export.h); the client's one-line summary of the preemptions of
 * the threads matching a glob is report_preemptions() + report_preemptions_line().
 * lib/report_internal.h says which file does what.
 */
#ifndef HOSTPROF_REPORT_H
#define HOSTPROF_REPORT_H

#include <stddef.h>
#include <stdint.h>

#include "snapshot.pb-c.h"

struct preempt_summary {
	uint32_t threads; /* threads of snap->pid whose name matched */
	uint64_t preemptions; /* switched out while runnable (R or R+) */
	uint64_t wait_ns; /* from those switch-outs until each ran again (or the window's end) */
	uint64_t max_wait_ns;
	/* the task that took the most time from them */
	uint32_t top_pid, top_tid;
	int32_t top_prio;
	char top_comm[16];
	uint64_t top_count, top_wait_ns;
};

/*
 * While held, every diagnosis of snap (the report, its JSON, the summary line, the
 * Perfetto trace's episodes) reads one model of it, built the first time one is asked
 * for, instead of building its own. Release before snap is freed. -EBUSY: another
 * snapshot is held (nothing is shared then; each builds its own, as without a hold).
 */
int report_model_hold(const Hostprof__Snapshot *snap);
/*
 * Builds the held model of snap on a thread of its own, while the caller goes on with what
 * needs no model (a Perfetto trace's scheduler bundles, say); the first model_get() of it
 * waits for that build instead of making its own. The release that follows waits for the
 * thread. -ESRCH: snap is not held; else 0 or what pthread_create() said (nothing started).
 */
int report_model_prebuild(const Hostprof__Snapshot *snap);
void report_model_release(const Hostprof__Snapshot *snap);

int report_preemptions(const Hostprof__Snapshot *snap, const char *thread_glob, struct preempt_summary *ret);
/* One line: "acl_thread: 14 preemptions, 140.2 ms waited (max 10.1 ms), most by hog (pid 7, prio 49): 14, 140.2 ms" */
void report_preemptions_line(const struct preempt_summary *s, const char *thread_glob, char *buf, size_t len);

/*
 * The stall episodes of the dispatch threads (lib/report_causes.c), for an exporter to
 * draw: each a gap of 1 ms or more in a dispatch thread's running, by time, with its
 * make-up in words. *ret is malloc'ed.
 */
struct report_episode {
	uint32_t tid, pid;
	uint64_t begin, end;
	char name[96]; /* "stall 31.0 ms: 30.0 the GIL, 1.0 waiting after a wakeup" */
	char detail[512]; /* each part with who: "30.0 ms the GIL: logger (tid 123, ...); ..." */
};

int report_episodes(const Hostprof__Snapshot *snap, struct report_episode **ret, size_t *ret_n);

#endif
