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
/* A Python frame of a walked stack, resolved (daemon/python.h's, as the builder takes it). */
struct snap_pyframe {
	uint64_t code;
	const char *function, *file;
	uint32_t line;
	bool eval_entry; /* the outermost frame of one run of the eval loop */
};

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
	uint64_t gil_min_ns;
	uint32_t syscall_mode;          /* HP_SYSCALLS_*; 0: exact */
	uint64_t syscall_mode_since_ns; /* BOOTTIME when it took effect; 0: at the start */
	Hostprof__Marker *const *markers;
	size_t n_markers;
	const char (*dispatch_threads)[16]; /* the dispatch_threads globs, recorded as they are */
	size_t n_dispatch_threads;
	uint32_t producer_pid; /* hostprofd's */
	/* Every thread's Python stack, read at the build (daemon/python.h), or NULL. */
	const Hostprof__PythonState *python;
	/* The daemon's user stacks unwound from CFI, or NULL. */
	const Hostprof__UnwindStats *unwind;
	/* Symbolization, or NULL for bare addresses: returns 1 with a function, 0 without. */
	int (*resolve)(void *ud, uint32_t pid, uint64_t addr, bool kernel, struct sym_result *ret);
	void *resolve_ud;
	/*
	 * The Python stacks the kernel walked (HP_EV_PYSTACK's pairs, taken at ts) as frames, or NULL: 0 and
	 * *ret_n frames in out[HP_PY_MAX_FRAMES] (strings valid until the next call), or < 0 with
	 * *ret_why (-ENOMEM ends the build).
	 */
	int (*py_resolve)(void *ud, uint32_t pid, uint64_t ts, const uint64_t *pairs, size_t n,
			  struct snap_pyframe *out, size_t *ret_n, const char **ret_why);
	void *py_ud;
	size_t pack_room; /* bytes before the .hps in the buffer built (hps_pack_room()) */
};

/* Build the .hps bytes (magic + Snapshot) for p, ctx->pack_room bytes into the buffer
 * *ret_data (*ret_len counts them). *ret_events: records in it. */
int snapshot_build(const struct proc_rec *p, const struct snapshot_ctx *ctx, uint8_t **ret_data,
		   size_t *ret_len, uint64_t *ret_events);

#endif
