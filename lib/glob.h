/* SPDX-License-Identifier: GPL-2.0-only */
#ifndef HOSTPROF_GLOB_H
#define HOSTPROF_GLOB_H

#include <stdbool.h>

#include "hostprof.h"

/*
 * Thread-name globs: '*' any run of characters, '?' one character, anything else
 * itself. The kernel matches the compiled form (bpf/glob.bpf.h); user space runs the
 * same automaton, so both agree on every name.
 */
int thread_glob_compile(const char *pat, struct hp_glob *ret);
bool thread_glob_run(const struct hp_glob *g, const char *name);
/* Compile and run; false for an invalid pattern. */
bool thread_glob_match(const char *pat, const char *name);
/* A pattern the kernel can hold: 1..15 characters. */
bool thread_glob_valid(const char *pat);

#endif
