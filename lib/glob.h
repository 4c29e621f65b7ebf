/* SPDX-License-Identifier: GPL-2.0-only */
#ifndef HOSTPROF_GLOB_H
#define HOSTPROF_GLOB_H

#include <stdbool.h>

#include "../bpf/hostprof.h" /* struct hp_glob: the form the kernel holds; lib/ has no BPF include path */
#include "glob_match.h"

/*
 * Thread-name globs: '*' any run of characters, '?' one character, anything else
 * itself. The kernel matches the compiled form (bpf/glob.bpf.h); user space runs the
 * same automaton, so both agree on every name. thread_glob_match() and
 * thread_glob_valid() are in glob_match.h.
 */
int thread_glob_compile(const char *pat, struct hp_glob *ret);
bool thread_glob_run(const struct hp_glob *g, const char *name);

#endif
