/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The watched set: which processes are watched (by pid, by a thread-name pattern, as a
 * watched process's child), in the recorder and in the kernel at once, and the live
 * thread-name patterns. A process that exits or is unwatched keeps its syscall
 * histograms with its history; its frames stay resolvable until the history is gone.
 */
#ifndef HOSTPROF_WATCH_H
#define HOSTPROF_WATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "recorder.h"
#include "snapshot.pb-c.h"

struct capture;
struct symbolizer;
struct watch;
struct worker;

/* symbolizer may be NULL (stacks stay addresses); the mappings of watched processes are
 * read on worker, never in the loop. NULL + errno. */
struct watch *watch_new(struct capture *c, struct recorder *rec, struct symbolizer *sym, struct worker *worker);
void watch_free(struct watch *w);

/* Start watching pid (reason HP_WATCH_*): -ENOENT if there is no such process. A pid
 * watched already is left as it is (0). When the kernel's watched map is full, processes
 * of the user with the most that the kernel started watching by itself make room (the
 * caller asks for users' quotas: recorder_user_over_quota). */
int watch_pid(struct watch *w, uint32_t pid, uint32_t reason);
/* Stop watching a live process by request; its history stays for the window. */
void watch_stop(struct watch *w, struct proc_rec *p);

/* The thread-name patterns, replaced whole (start, reload): processes that have such a
 * thread now are watched at once, new ones as the kernel sees them. */
int watch_set_globs(struct watch *w, char *const *globs, size_t n);
/* One more or one less at run time (until the next reload). -EINVAL: not a valid
 * pattern; -E2BIG: HP_MAX_GLOBS already; -ENOENT (remove): not one of them. */
int watch_add_glob(struct watch *w, const char *glob);
int watch_remove_glob(struct watch *w, const char *glob);
char *const *watch_globs(const struct watch *w, size_t *ret_n);

/* Once a second: age the recorder, find processes that are gone, note the mappings of
 * processes that mapped code. */
/* Walk the Python stacks of the CPython processes watched (asked once per exec, on the
 * worker) in the kernel, or no more; gc: record their garbage collections too (USDT). */
void watch_set_python(struct watch *w, bool on, bool gc);
/* Where the names of their walked stacks are kept (read on the worker at each tick). */
struct py_names;
void watch_set_py_names(struct watch *w, struct py_names *names);

/* Every tick: the mappings of the processes watched since the last one, read at once. */
void watch_tick_new(struct watch *w, uint64_t now);
void watch_tick(struct watch *w, uint64_t now);
/* Reads of watched processes' files (their mappings, ELF and debug files, perf maps) on
 * the worker: done, abandoned past their time budget, put off because its queue was full
 * (tried again at the next tick). */
struct watch_reads {
	uint64_t done, abandoned, deferred;
	uint64_t made_room; /* users' processes unwatched to make room for one root asked for */
	uint64_t symbolizer_bytes, symbolizer_limit, over_budget, dwarf_bytes; /* symbolizer_info */
	uint64_t dwarf_lines, dwarf_lines_dropped; /* symbolizer_info's dwarf_lines, dwarf_learn_dropped */
};
void watch_reads(const struct watch *w, struct watch_reads *ret);

/* The kernel's Python walks (HP_PYSTAT_*) and the names read for them; false: python is off. */
struct watch_python {
	uint32_t processes;
	uint64_t walks, no_tstate, read_failures, scans;
	uint64_t offcpu_walks, sample_ns, offcpu_ns;
	uint64_t checked, unreadable, dropped;
};
bool watch_python_stats(const struct watch *w, struct watch_python *ret);
/* The symbolizer's user stacks unwound from CFI, for status: symbolizer_unwind_stats()'s,
 * with drops and ptrs of WATCH_UNWIND_STOPS each as its storage. */
#define WATCH_UNWIND_STOPS 16
void watch_unwind(const struct watch *w, Hostprof__UnwindStats *ret, Hostprof__Drop *drops, Hostprof__Drop **ptrs);

#endif
