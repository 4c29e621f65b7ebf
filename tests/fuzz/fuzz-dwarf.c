// SPDX-License-Identifier: GPL-2.0-only
/*
 * fuzz-dwarf: the bytes are an ELF file with DWARF, a binary or a debug file that the
 * daemon reads (daemon/symbolize/elf.c for its symbols, dwarf.c for its lines and inlined
 * frames, with small caps). The file is read from a memfd as the daemon reads files; then
 * the source line and the inlined frames are looked up at the start, the middle and the
 * last byte of each of its first 64 symbols, and what comes out is checked: every string
 * NUL-terminated and within its bound, inlined frames within SYM_INLINED_MAX and named,
 * lines that fit. An input of odd length is opened as a file is when it is read
 * (dwarf_preopen()), one of even length by its first lookup, as in a snapshot job.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "symbolize/internal.h"

#define CHECK(cond)                                                                                          \
	do {                                                                                                 \
		if (!(cond)) {                                                                               \
			fprintf(stderr, "fuzz-dwarf: %s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
			abort();                                                                             \
		}                                                                                            \
	} while (0)

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	if (elf_version(EV_CURRENT) == EV_NONE)
		abort();
	return 0;
}

static void check_str(const char *s, size_t max)
{
	if (s)
		CHECK(strnlen(s, max + 1) <= max);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct debug_search ds = { .debug_dir = "/nonexistent", .root_fd = -1, .path = "/nonexistent/bin" };
	struct file_cache cache = {};
	struct name_table names = {};
	struct elf_file *f;
	Elf *e;
	int fd;

	fd = memfd_create("fuzz-dwarf", MFD_CLOEXEC);
	if (fd < 0 || write(fd, data, size) != (ssize_t)size || fstat(fd, &ds.st) < 0)
		abort();
	f = elf_file_new();
	if (!f)
		abort();
	if (elf_open(fd, &ds.st, &e) == 0) {
		elf_build_id(e, f->build_id);
		f->err = elf_load(&ds, fd, e, f);
		elf_end(e);
		if (size & 1)
			(void)dwarf_preopen(f);
	}
	for (size_t i = 0; f->dwarf_fd >= 0 && i < f->n_syms && i < 64; i++) {
		const struct elf_sym *s = &f->syms[i];
		uint64_t at[3] = { s->addr, s->addr + s->size / 2, s->addr + (s->size ? s->size - 1 : 0) };

		for (size_t k = 0; k < 3; k++) {
			struct sym_result r = {};

			(void)dwarf_lookup(&cache, &names, f, at[k], &r);
			CHECK(r.n_inlined <= SYM_INLINED_MAX);
			check_str(r.file, 1024);
			check_str(r.function, 4096);
			for (size_t j = 0; j < r.n_inlined; j++) {
				CHECK(r.inlined[j].function != NULL);
				check_str(r.inlined[j].function, 4096);
				check_str(r.inlined[j].file, 1024);
			}
		}
	}
	CHECK(cache.dwarf.bytes <= DWARF_HELD_BYTES_MAX);
	elf_file_unref(&cache, f);
	CHECK(!cache.dwarf.head && !cache.dwarf.bytes);
	CHECK(dwarf_preopened_bytes() == 0);
	name_table_done(&names);
	close(fd);
	return 0;
}
