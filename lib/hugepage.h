/* SPDX-License-Identifier: GPL-2.0-only */
#ifndef HOSTPROF_HUGEPAGE_H
#define HOSTPROF_HUGEPAGE_H

#include <stddef.h>

/*
 * Transparent huge pages, for memory the daemon or a snapshot job is about to touch whole
 * (on a paravirtualized VM each 4 KiB page costs microseconds to fault in, and more to
 * walk for the first time in a forked child). An madvised range must only be faulted
 * in while the kernel has free blocks of the huge page's size: otherwise the fault
 * reclaims and compacts memory first (THP defrag "madvise", the default), which can take
 * far longer than the faults it saves (MADV_COLLAPSE, which always does, took 6.6 s once
 * on the bench's VM).
 */

/* The huge page's size (hpage_pmd_size) where THP is not "never"; 0 otherwise. */
size_t huge_page_size(void);

/* The huge page's size, when the kernel has free blocks of it for bytes (/proc/buddyinfo:
 * per zone, the free blocks of each order from 0 up); 0 otherwise. */
size_t huge_pages_free_for(size_t bytes);

#endif
