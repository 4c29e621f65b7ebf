// SPDX-License-Identifier: GPL-2.0-only
/*
 * fuzz-cfi: the unwinder's CFI reader and one step of it (daemon/symbolize/cfi.c, unwind.c),
 * on CFI and stacks as hostile as the bytes make them. The input:
 *
 *   u64 eh_addr, u64 hdr_addr, u64 pc   where .eh_frame and .eh_frame_hdr are, the pc
 *   u32 eh_len, u32 hdr_len             (each taken modulo what is left)
 *   hdr_len bytes of .eh_frame_hdr, eh_len bytes of .eh_frame, then the stack copy
 *
 * The sections are opened as the daemon opens a file's (cfi_build), the registers are the
 * stack's first words (the stack pointer: the copy's address), and the CFI is stepped
 * through, each caller from the last, at most 64 steps, as symbolizer_unwind does:
 * every step ends with a known reason, and a step made has a pc and a stack pointer.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "symbolize/internal.h"

#define CHECK(cond)                                                                                  \
	do {                                                                                         \
		if (!(cond)) {                                                                       \
			fprintf(stderr, "fuzz-cfi: %s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
			abort();                                                                     \
		}                                                                                    \
	} while (0)

#if defined(__aarch64__)
#define MACHINE EM_AARCH64
#else
#define MACHINE EM_X86_64
#endif

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	if (elf_version(EV_CURRENT) == EV_NONE)
		abort();
	return 0;
}

static uint64_t get64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return v;
}

static uint32_t get32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return v;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint64_t eh_addr, hdr_addr, pc;
	size_t eh_len, hdr_len, left;
	struct unwind_regs regs = {};
	struct unwind_mem mem;
	struct cfi *c = NULL;
	const uint8_t *p;
	bool exact = true;
	int r;

	if (size < 32)
		return 0;
	eh_addr = get64(data);
	hdr_addr = get64(data + 8);
	pc = get64(data + 16);
	p = data + 32;
	left = size - 32;
	hdr_len = left ? get32(data + 28) % (left + 1) : 0;
	left -= hdr_len;
	eh_len = left ? get32(data + 24) % (left + 1) : 0;
	left -= eh_len;
	r = cfi_build(p, hdr_len, hdr_addr, p + hdr_len, eh_len, eh_addr, MACHINE, &c);
	if (r < 0) {
		CHECK(r == -ENOENT || r == -EFBIG || r == -EBADMSG || r == -ENOMEM);
		return 0;
	}
	CHECK(cfi_handle(c));
	mem = (struct unwind_mem){ .data = p + hdr_len + eh_len, .len = left, .base = 0x7ff000000000ull };
	for (int i = 0; i < UNWIND_ARCH_REGS; i++) {
		if ((size_t)(i + 1) * 8 <= left)
			memcpy(&regs.r[i], mem.data + i * 8, 8);
		regs.valid |= 1ull << i;
	}
	regs.r[UNWIND_SP] = mem.base;
	regs.r[UNWIND_PC] = pc;
	for (int step = 0; step < 64; step++) {
		uint64_t sp = regs.r[UNWIND_SP];
		enum unwind_stop why;
		bool signal = false;

		why = unwind_step_cfi(c, exact ? pc : pc - 1, &mem, &regs, &signal);
		CHECK(why < UNWIND_STOP_MAX);
		if (why == UNWIND_NO_CFI)
			why = unwind_step_fp(&mem, &regs);
		if (why != UNWIND_DEPTH)
			break;
		CHECK(regs.valid & (1ull << UNWIND_PC));
		CHECK(regs.valid & (1ull << UNWIND_SP));
		pc = regs.r[UNWIND_PC];
		if (!pc || regs.r[UNWIND_SP] < sp)
			break;
		exact = signal;
	}
	CHECK(cfi_bytes(c) >= eh_len + (cfi_indexed(c) ? hdr_len : 0));
	cfi_free(c);
	return 0;
}
