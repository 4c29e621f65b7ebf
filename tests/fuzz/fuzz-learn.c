// SPDX-License-Identifier: GPL-2.0-only
/*
 * fuzz-learn: the bytes are what a snapshot job hands back to the daemon of its DWARF
 * lookups (daemon/symbolize/lines.c: lines_learn()), kept against a cache that holds one
 * file under the key the seeds use ("b:0123456789abcdef"). What is kept is then looked
 * up again and checked: the ranges sorted and apart, the names NUL-terminated and within
 * their bound, inlined frames within SYM_INLINED_MAX and named; the same bytes learned
 * twice keep nothing new.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "symbolize/internal.h"

#define CHECK(cond)                                                                                          \
	do {                                                                                                 \
		if (!(cond)) {                                                                               \
			fprintf(stderr, "fuzz-learn: %s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
			abort();                                                                             \
		}                                                                                            \
	} while (0)

#define KEY "b:0123456789abcdef"
#define NAME_MAX_BYTES 4096

static void check_str(const char *s)
{
	if (s)
		CHECK(strnlen(s, NAME_MAX_BYTES + 1) <= NAME_MAX_BYTES);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *keys[] = { KEY };
	struct file_cache cache = {};
	struct name_table names = {};
	size_t kept = 0, again = 0;
	uint64_t dropped = 0;
	struct elf_file *f;
	int r;

	f = elf_file_new();
	if (!f)
		abort();
	f->dwarf_fd = 0; /* has DWARF (never opened here: learning reads no file) */
	if (cache_put_file(&cache, keys, 1, f) < 0)
		abort();
	r = lines_learn(&cache, &names, data, size, &kept, &dropped);
	CHECK(r == 0 || r == -EBADMSG || r == -ENOMEM);
	CHECK(kept == lines_count(f));
	CHECK(lines_sorted(f));
	/* every address a record named: what comes back out is whole */
	for (size_t off = 0; off + 8 <= size; off++) {
		const struct line_entry *e;
		struct sym_result res = {};
		uint64_t vaddr;

		memcpy(&vaddr, data + off, sizeof(vaddr));
		e = lines_find(f, vaddr);
		if (!e)
			continue;
		r = lines_apply(e, &res);
		CHECK(r == 0 || r == 1);
		check_str(res.function);
		check_str(res.system_name);
		check_str(res.file);
		CHECK(res.n_inlined <= SYM_INLINED_MAX);
		for (size_t i = 0; i < res.n_inlined; i++) {
			CHECK(res.inlined[i].function);
			check_str(res.inlined[i].function);
			check_str(res.inlined[i].system_name);
			check_str(res.inlined[i].file);
		}
	}
	(void)lines_learn(&cache, &names, data, size, &again, &dropped);
	CHECK(again == 0);
	f->dwarf_fd = -1;
	elf_file_unref(&cache, f);
	file_cache_done(&cache);
	name_table_done(&names);
	return 0;
}
