/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Stack addresses to names, at snapshot time (never on the capture path).
 *
 * Kernel: /proc/kallsyms, text symbols in one sorted array, reloaded when /proc/modules
 * changes. User: per process, the executable mappings of /proc/PID/maps, each pointing at a
 * symbol table read once per ELF file (.symtab, else .dynsym; from separate debug info when
 * there is some) and shared by build-id; JIT code from /tmp/perf-PID.map. A process's
 * mappings are noted while it lives (symbolizer_refresh_process{,_async}) and kept until
 * symbolizer_forget_process, so its frames resolve after it exits.
 *
 * Strings in a sym_result stay valid until symbolizer_free or symbolizer_forget_process of
 * that pid, with two bounded exceptions: a process keeps at most 4096 mappings that went
 * away (the oldest goes first) and 64 MiB of older perf map versions. Copy them before
 * the next refresh of a process whose code churns that much.
 */
#ifndef HOSTPROF_SYMBOLIZE_H
#define HOSTPROF_SYMBOLIZE_H

#include <stdbool.h>
#include <stdint.h>

struct symbolizer;
struct worker;

struct symbolizer *symbolizer_new(void); /* NULL + errno on failure */
/* Refreshes still on a worker are dropped when it hands them back: free s before or after it. */
void symbolizer_free(struct symbolizer *s);

/*
 * Note pid's executable mappings now (on watch, and on its mmap/munmap/exec events), reading
 * /proc/PID/maps and the ELF files through /proc/PID/root, so its frames resolve after it
 * exits. Mappings that are gone from maps are kept as history (addresses that no current
 * mapping covers still resolve through them). -ENOENT/-ESRCH: the process is gone, what was
 * noted before stays.
 *
 * This reads, in the calling thread, files the process controls: the event loop calls the
 * _async one instead. Here: snapshot children, tests.
 */
int symbolizer_refresh_process(struct symbolizer *s, uint32_t pid);
/*
 * The same, with the reads on w's thread (within a budget) and the result noted when
 * worker_dispatch() hands it back. A refresh of pid already on the worker is made to run
 * again after it instead (0). -EAGAIN: w's queue is full, ask again later; -ECHILD: called
 * in a forked child (use symbolizer_refresh_process there); -ENOMEM. A refresh that ran out
 * of its budget is dropped (refresh_abandoned), the file it hung in not opened again.
 */
int symbolizer_refresh_process_async(struct symbolizer *s, struct worker *w, uint32_t pid);
/* A refresh of pid is on the worker: what it reads is not noted yet. */
bool symbolizer_refresh_in_flight(const struct symbolizer *s, uint32_t pid);
/* Drop what only pid needed (called when its history has aged out). */
void symbolizer_forget_process(struct symbolizer *s, uint32_t pid);

struct sym_result {
	const char *function; /* NULL when unresolved; valid until symbolizer_free/forget */
	uint64_t function_offset; /* addr - symbol start */
	const char *module; /* file path as mapped ("[kernel.kallsyms]" for the kernel,
				     "[name]" for a kernel module), NULL if no mapping */
	uint64_t module_offset; /* file offset of addr within module (kernel, JIT: addr) */
	const char *build_id; /* hex, "" when none */
	uint64_t map_start, map_limit, map_offset;
	bool jit; /* from a perf map */
	bool in_exec_mapping; /* false: the address lies outside every executable mapping */
};

/*
 * kernel = true for kernel addresses (pid ignored). Always fills ret; returns 1 if a function
 * was found, 0 if not, -errno.
 */
int symbolizer_resolve(struct symbolizer *s, uint32_t pid, uint64_t addr, bool kernel,
		       struct sym_result *ret);

/* counts for the snapshot */
void symbolizer_stats(const struct symbolizer *s, uint64_t *ret_resolved, uint64_t *ret_unresolved);

struct symbolizer_info {
	uint64_t resolved, unresolved;
	uint64_t kernel_unresolved; /* of unresolved: kernel frames */
	bool kernel_hidden; /* kallsyms showed zeros (kptr_restrict, no CAP_SYSLOG) or is unreadable */
	uint64_t kernel_symbols;
	uint64_t kernel_loads; /* kallsyms (re)loads */
	uint64_t processes, mappings, elf_files;
	uint64_t elf_failed; /* files that could not be read or parsed */
	uint64_t perfmap_rejected; /* perf map lines that did not parse */
	uint64_t refreshes; /* noted */
	uint64_t refresh_abandoned; /* async refreshes dropped: over budget, or the worker went */
	uint64_t refresh_rejected; /* follow-up refreshes the worker's queue refused */
	uint64_t bytes; /* heap held by symbol tables and maps */
};
void symbolizer_info(const struct symbolizer *s, struct symbolizer_info *ret);

/* Where separate debug info lives, "/usr/lib/debug" unless set (tests, configuration). */
int symbolizer_set_debug_dir(struct symbolizer *s, const char *dir);
/* Read kallsyms and modules from other files (tests). Takes effect on the next kernel resolve. */
int symbolizer_set_kernel_files(struct symbolizer *s, const char *kallsyms, const char *modules);

#endif
