// SPDX-License-Identifier: GPL-2.0-only
/*
 * Folded-stack exporter: the input of FlameGraph's flamegraph.pl (and of speedscope,
 * inferno, and most flame graph tools), one line per distinct stack:
 *
 *	acl_thread;main;dispatch_loop;launch_kernel 6
 *
 * The root frame is the thread's name, then the user frames outermost first, then the
 * kernel frames with the suffix "_[k]", as stackcollapse-perf.pl writes them; functions
 * inlined at a frame (DWARF) follow it with the suffix "_[i]", as its --inline does. On-CPU the
 * count is samples; off-CPU it is microseconds blocked. The stacks themselves are made by
 * snapshot_fold() (fold.c), which the SVG flame graph shares.
 */
#include <errno.h>
#include <inttypes.h>

#include "export.h"
#include "fold.h"
#include "hps.h"
#include "macro.h"

int snapshot_export_folded(const Hostprof__Snapshot *snap, bool offcpu, FILE *out)
{
	struct folded fo;
	int r;

	r = hps_validate(snap);
	if (r < 0)
		return r;
	r = snapshot_fold(snap, offcpu, &fo);
	if (r < 0)
		return r;
	errno = 0;
	for (size_t i = 0; i < fo.n; i++)
		if (fprintf(out, "%s %" PRIu64 "\n", fo.stacks[i].frames, fo.stacks[i].count) < 0)
			break;
	folded_free(&fo);
	if (fflush(out) == EOF || ferror(out))
		return negative_errno();
	return 0;
}
