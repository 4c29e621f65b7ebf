/* SPDX-License-Identifier: GPL-2.0-only */
/* Folded stacks of a snapshot (the folded and SVG exporters), and the stack counts under them (pprof too). */
#ifndef HOSTPROF_FOLD_H
#define HOSTPROF_FOLD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "snapshot.pb-c.h"

/*
 * The rows of the samples (on-CPU; 1 each) or of the off-CPU intervals (their dur_ns)
 * summed by thread and stacks: each (tid, ustack, kstack) once, sorted so. *ret is
 * malloc'ed.
 */
struct stack_count {
	uint32_t tid, ustack, kstack; /* stacks: index + 1 into Snapshot.stacks, 0: none */
	uint64_t value;
};

int snapshot_stack_counts(const Hostprof__Snapshot *snap, bool offcpu, struct stack_count **ret,
			  size_t *ret_n);

/*
 * Folded stacks, as FlameGraph's stackcollapse scripts write them: the thread's name
 * ("[tid N]" when it has none) as the root frame, then the user frames outermost first,
 * then the kernel frames outermost first with the suffix "_[k]"; the functions inlined at
 * a user frame follow it as frames of their own, with the suffix "_[i]" (FlameGraph's
 * annotations: flamegraph.pl colors them and strips the suffix). Frames are named by
 * function only, not file:line, so that a function's samples stay one frame. Frame names
 * have ';' and control characters replaced by '_'. On-CPU, count is samples; off-CPU, the
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
