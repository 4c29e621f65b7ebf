/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Thread-name globs, matched in user space exactly as the kernel matches them (glob.h has
 * the compiled form, which the kernel holds): '*' any run of characters, '?' one
 * character, anything else itself. This header needs no BPF header, so the snapshot's
 * readers can match names without one.
 */
#ifndef HOSTPROF_GLOB_MATCH_H
#define HOSTPROF_GLOB_MATCH_H

#include <stdbool.h>

/* Compile and run; false for an invalid pattern. */
bool thread_glob_match(const char *pat, const char *name);
/* A pattern the kernel can hold: 1..15 characters. */
bool thread_glob_valid(const char *pat);

#endif
