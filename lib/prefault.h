/* SPDX-License-Identifier: GPL-2.0-only */
#ifndef HOSTPROF_PREFAULT_H
#define HOSTPROF_PREFAULT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/mman.h>

/*
 * Fault in the pages that [p, p + len) covers whole, writable, in one call, for memory
 * about to be written all through (a snapshot job's columns, its packed output): on a
 * paravirtualized VM each page fault is an exception that costs several microseconds, and
 * a busy 10 s window's job takes 14,000 of them. Where the kernel lacks
 * MADV_POPULATE_WRITE (before 5.14) the pages fault one by one, as without it.
 */
static inline void prefault(void *p, size_t len)
{
	uintptr_t a = ((uintptr_t)p + 4095) & ~(uintptr_t)4095;
	uintptr_t e = ((uintptr_t)p + len) & ~(uintptr_t)4095;

	if (e > a)
		(void)madvise((void *)a, e - a, MADV_POPULATE_WRITE);
}

#endif
