// SPDX-License-Identifier: GPL-2.0-only
/*
 * fuzz-perfmap: the bytes are a /tmp/perf-PID.map that a watched process wrote. They are
 * parsed with perfmap_parse() (daemon/symbolize/perfmap.c) from a memory stream, and what it
 * returns is checked against its header's promises: entries sorted by start, no
 * overlaps, no empty or oversized ranges, names inside the name buffer and
 * NUL-terminated, within the caps; perfmap_find() finds each entry by its first and last
 * address and nothing just past its end.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "symbolize/perfmap.h"

#define CHECK(cond)                                                                           \
	do {                                                                                  \
		if (!(cond)) {                                                                \
			fprintf(stderr, "fuzz-perfmap: %s:%d: check failed: %s\n", __FILE__, \
				__LINE__, #cond);                                            \
			abort();                                                              \
		}                                                                             \
	} while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct perfmap m = { .n = 12345 }; /* must be left alone on failure */
	FILE *f;
	int r;

	if (size == 0)
		f = fopen("/dev/null", "re");
	else
		f = fmemopen((void *)data, size, "r");
	if (!f)
		abort();
	r = perfmap_parse(f, &m);
	fclose(f);
	if (r < 0) {
		CHECK(m.n == 12345);
		return 0;
	}
	CHECK(m.n <= PERFMAP_ENTRIES_MAX);
	CHECK(m.names_len <= PERFMAP_NAMES_MAX);
	CHECK(m.lines >= m.n);
	CHECK(!m.n || (m.names_len && m.names[m.names_len - 1] == 0));
	CHECK(perfmap_bytes(&m) == m.n * sizeof(*m.entries) + m.names_len);
	for (size_t i = 0; i < m.n; i++) {
		const struct perfmap_entry *e = &m.entries[i];
		const char *name;

		CHECK(e->size > 0 && e->size <= PERFMAP_SIZE_MAX);
		CHECK(e->start <= UINT64_MAX - e->size);
		CHECK(e->name < m.names_len);
		CHECK(e->line >= 1);
		if (i + 1 < m.n) {
			CHECK(e->start < m.entries[i + 1].start);
			CHECK(e->start + e->size <= m.entries[i + 1].start);
		}
		name = perfmap_name(&m, e);
		CHECK(strnlen(name, m.names_len - e->name) < m.names_len - e->name);
		CHECK(strlen(name) <= PERFMAP_NAME_MAX);
		CHECK(perfmap_find(&m, e->start) == e);
		CHECK(perfmap_find(&m, e->start + e->size - 1) == e);
		if (i + 1 == m.n || e->start + e->size < m.entries[i + 1].start)
			CHECK(!perfmap_find(&m, e->start + e->size) || e->start + e->size == 0);
	}
	CHECK(!m.n || m.entries[0].start == 0 || !perfmap_find(&m, m.entries[0].start - 1));
	perfmap_done(&m);
	CHECK(!m.entries && !m.names && !m.n);
	perfmap_done(&m);
	return 0;
}
