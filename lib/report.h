/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Diagnosis of a snapshot, and the folded stacks that the report shares with the stack
 * exporters (folded, svg, pprof).
 *
 * The full diagnosis is snapshot_report_text() / snapshot_report_json() (export.h). The
 * client's one-line summary of the preemptions of the threads matching a glob is
 * report_preemptions() + report_preemptions_line().
 */
#ifndef HOSTPROF_REPORT_H
#define HOSTPROF_REPORT_H

#include <stdbool.h>
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

int report_preemptions(const Hostprof__Snapshot *snap, const char *thread_glob, struct preempt_summary *ret);
/* One line: "acl_thread: 14 preemptions, 140.2 ms waited (max 10.1 ms), most by hog (pid 7, prio 49): 14, 140.2 ms" */
void report_preemptions_line(const struct preempt_summary *s, const char *thread_glob, char *buf, size_t len);

/*
 * Folded stacks, as FlameGraph's stackcollapse scripts write them: the thread's name
 * ("[tid N]" when it has none) as the root frame, then the user frames outermost first,
 * then the kernel frames outermost first with the suffix "_[k]". Frame names have ';'
 * and control characters replaced by '_'. On-CPU, count is samples; off-CPU, the
 * microseconds blocked (the sum of dur_ns of identical stacks, divided by 1000; stacks
 * that come to 0 us are left out). Stacks are sorted bytewise and each appears once.
 */
struct folded_stack {
	char *frames; /* "root;outer;...;inner" */
	uint64_t count;
};

struct folded {
	struct folded_stack *stacks;
	size_t n;
	uint64_t total; /* sum of count */
};

int snapshot_fold(const Hostprof__Snapshot *snap, bool offcpu, struct folded *ret);
void folded_free(struct folded *f);

#endif
