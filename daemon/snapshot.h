/* SPDX-License-Identifier: GPL-2.0-only */
#ifndef HOSTPROF_SNAPSHOT_H
#define HOSTPROF_SNAPSHOT_H

#include <stddef.h>
#include <stdint.h>

#include "counts.h"
#include "recorder.h"
#include "snapshot.pb-c.h"
#include "symbolize.h"

/* What a snapshot needs besides the process's recorder. */
struct snapshot_ctx {
	uint64_t window_ns; /* 0: all the history kept */
	uint64_t end_ns;    /* 0: now, or when the process exited */
	const char *reason; /* NULL: "request" */
	bool hide_kernel_addresses; /* for a peer that is not root: names and offsets only */
	uint64_t events_total;
	const struct drop_count *drops;
	size_t n_drops;
	const struct proc_rec *host; /* --cpus switches to merge in, or NULL */
	const struct hist_entry *hists;
	size_t n_hists;
	uint64_t syscall_min_ns, offcpu_min_ns;
	uint32_t sample_hz;
	unsigned interference; /* HP_INTF_*: what was captured */
	uint64_t irq_min_ns, lock_min_ns;
	Hostprof__Marker *const *markers;
	size_t n_markers;
	/* Every thread's Python stack, read at the build (daemon/python.h), or NULL. */
	const Hostprof__PythonState *python;
	/* Symbolization, or NULL for bare addresses: returns 1 with a function, 0 without. */
	int (*resolve)(void *ud, uint32_t pid, uint64_t addr, bool kernel, struct sym_result *ret);
	void *resolve_ud;
};

/* Build the .hps bytes (magic + Snapshot) for p. *ret_events: records in it. */
int snapshot_build(const struct proc_rec *p, const struct snapshot_ctx *ctx, uint8_t **ret_data,
		   size_t *ret_len, uint64_t *ret_events);

#endif
