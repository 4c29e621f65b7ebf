/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * JIT symbol maps, /tmp/perf-PID.map: one "START SIZE name" line per function, START and
 * SIZE in hex (an optional 0x). The file is written by the watched process, so it is
 * hostile input: lines, names, entry counts and bytes read are all capped, and whatever
 * does not parse is counted and skipped.
 */
#ifndef HOSTPROF_PERFMAP_H
#define HOSTPROF_PERFMAP_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define PERFMAP_LINE_MAX 4096 /* longer lines: the name is cut, the rest skipped */
#define PERFMAP_NAME_MAX 1024 /* bytes of a name that are kept */
#define PERFMAP_ENTRIES_MAX (1u << 19) /* entries of one map */
#define PERFMAP_NAMES_MAX (32u << 20) /* bytes of names of one map */
#define PERFMAP_BYTES_MAX (256ull << 20) /* bytes read from one file */
#define PERFMAP_SIZE_MAX (1ull << 32) /* a larger SIZE is not a function */

struct perfmap_entry {
	uint64_t start, size;
	uint32_t name; /* offset into perfmap.names */
	uint32_t line; /* 1-based line number it came from */
};

/*
 * Sorted by start, without overlaps: where two lines start at the same address the later
 * line wins (the JIT reused the address); where one range runs into the next, it is cut
 * at the next one's start.
 */
struct perfmap {
	struct perfmap_entry *entries;
	size_t n;
	char *names;
	size_t names_len;
	uint64_t lines; /* lines read */
	uint64_t rejected; /* lines that did not parse, or were dropped as overlapped */
	uint64_t truncated; /* names cut at PERFMAP_NAME_MAX */
	int capped; /* stopped early: a cap was reached */
};

/* Parses f to its end (or a cap); *ret is written only on success. -ENOMEM, -EIO. */
int perfmap_parse(FILE *f, struct perfmap *ret);
/* The entry covering addr, or NULL. */
const struct perfmap_entry *perfmap_find(const struct perfmap *m, uint64_t addr);
static inline const char *perfmap_name(const struct perfmap *m, const struct perfmap_entry *e)
{
	return m->names + e->name;
}
/* Heap bytes m holds. */
size_t perfmap_bytes(const struct perfmap *m);
/* Frees what m holds and zeroes it; a zeroed perfmap is valid and empty. */
void perfmap_done(struct perfmap *m);

#endif
