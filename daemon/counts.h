/* SPDX-License-Identifier: GPL-2.0-only */
/* Counters the capture side hands up, as the recorder keeps them and snapshots carry them. */
#ifndef HOSTPROF_COUNTS_H
#define HOSTPROF_COUNTS_H

#include <stdint.h>

#include "hostprof.h"

/* One thread's histogram of one syscall. */
struct hist_entry {
	struct hp_hist_key key;
	struct hp_hist h;
};

/* Records lost, by cause ("ring_full", ...). */
struct drop_count {
	const char *cause;
	uint64_t count;
};

/* Every cause capture_drops() reports: the kernel's HP_STAT_* drops, the daemon's bad
 * records, and the runs the kernel skipped (a program nested in itself on one CPU). */
#define HP_CAPTURE_DROP_CAUSES (HP_STAT_MAX + 1)
/* And snapsvc_drops(): those and the records of no process the recorder holds. */
#define HP_DROP_CAUSES (HP_CAPTURE_DROP_CAUSES + 1)

#endif
