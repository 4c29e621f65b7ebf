// SPDX-License-Identifier: GPL-2.0-only
/*
 * fuzz-minidebug: the bytes are the .gnu_debugdata of a binary the daemon reads
 * (daemon/symbolize/minidebug.c and elf.c): when the first byte is even, the rest is the
 * xz stream as the section holds it, decompressed within small caps; when odd, the rest is
 * the ELF file inside it (so the fuzzer spends its time in the symbol table too). Either
 * way its symbols are loaded as the daemon loads them, and what comes out is checked:
 * symbols sorted and one per address, names inside the name buffer and NUL-terminated,
 * max_end monotone, every symbol found again at its start, the counts within the caps.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "symbolize/internal.h"

#define CHECK(cond)                                                                                      \
	do {                                                                                             \
		if (!(cond)) {                                                                           \
			fprintf(stderr, "fuzz-minidebug: %s:%d: check failed: %s\n", __FILE__, __LINE__, \
				#cond);                                                                  \
			abort();                                                                         \
		}                                                                                        \
	} while (0)

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	if (elf_version(EV_CURRENT) == EV_NONE)
		abort();
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct elf_file *f;
	void *mem = NULL;
	size_t len = 0;
	int r;

	if (size < 1)
		return 0;
	if (data[0] & 1) {
		len = size - 1;
		mem = malloc(len ? len : 1);
		if (!mem)
			abort();
		memcpy(mem, data + 1, len);
	} else {
		r = minidebug_decompress(data + 1, size - 1, 8u << 20, NSEC_PER_SEC / 10, &mem, &len);
		if (r < 0) {
			CHECK(r == -E2BIG || r == -ETIME || r == -EBADMSG || r == -ENOMEM);
			return 0;
		}
		CHECK(len <= (8u << 20));
	}
	f = elf_file_new();
	if (!f)
		abort();
	r = elf_load_memory(mem, len, NULL, f);
	if (r == 0) {
		CHECK(f->n_syms <= ELF_SYMS_MAX);
		CHECK(f->names_len <= ELF_NAMES_MAX);
		CHECK(!f->n_syms || (f->names && f->names[f->names_len - 1] == 0));
		for (size_t i = 0; i < f->n_syms; i++) {
			const struct elf_sym *s = &f->syms[i];

			CHECK(s->name < f->names_len);
			CHECK(strlen(f->names + s->name) <= 4096);
			if (i) {
				CHECK(f->syms[i - 1].addr < s->addr);
				CHECK(f->max_end[i - 1] <= f->max_end[i]);
			}
			if (s->size)
				CHECK(elf_file_find(f, s->addr) != NULL);
		}
	}
	elf_file_unref(NULL, f);
	free(mem);
	return 0;
}
