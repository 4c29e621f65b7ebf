/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * A stable sort of (key, value) pairs by key: least significant byte first, one counting
 * pass per byte, the bytes in which no two keys differ skipped. For the report's model,
 * whose large sorts (waits by start, rows by stack or by duration) went through qsort's
 * comparator calls: a sort on several keys is one keysort() per key, the least
 * significant first.
 */
#ifndef HOSTPROF_KEYSORT_H
#define HOSTPROF_KEYSORT_H

#include <stddef.h>
#include <stdint.h>

struct keyed {
	uint64_t key;
	uint64_t val;
};

/* v[0..n) stably by key; tmp: room for n. */
void keysort(struct keyed *v, struct keyed *tmp, size_t n);

#endif
