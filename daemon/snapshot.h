/* SPDX-License-Identifier: GPL-2.0-only */
#ifndef HOSTPROF_SNAPSHOT_H
#define HOSTPROF_SNAPSHOT_H

#include <stddef.h>
#include <stdint.h>

#include "recorder.h"

struct drop_count {
	const char *cause;
	uint64_t count;
};

/* What a snapshot needs besides the process's recorder. */
struct snapshot_ctx {
	uint64_t window_ns; /* 0: all the history kept */
	const char *reason; /* NULL: "request" */
	uint64_t events_total;
	const struct drop_count *drops;
	size_t n_drops;
};

/* Build the .hps bytes (magic + Snapshot) for p. */
int snapshot_build(const struct proc_rec *p, const struct snapshot_ctx *ctx, uint8_t **ret_data,
		   size_t *ret_len, uint64_t *ret_events);

#endif
