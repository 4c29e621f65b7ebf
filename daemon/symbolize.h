/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Stack addresses to names, at snapshot time (never on the capture path).
 *
 * Kernel: /proc/kallsyms, text symbols in one sorted array, reloaded when /proc/modules
 * changes. User: per process, the executable mappings of /proc/PID/maps, each pointing at a
 * symbol table read once per ELF file (.symtab, else separate debug info's, else
 * MiniDebugInfo's with .dynsym, else .dynsym) and shared by build-id; JIT code from
 * /tmp/perf-PID.map. A process's mappings are noted while it lives
 * (symbolizer_refresh_process{,_async}) and kept until symbolizer_forget_process, so its
 * frames resolve after it exits. C++ and Rust names are demangled; where the file or its
 * debug file has DWARF, a frame gets its source file and line and the functions inlined at
 * it (read when the frame is resolved, in a snapshot job, within a budget). A file with no
 * symbol table names the Debian packages that would give it one.
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

#include "snapshot.pb-c.h"

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

#define SYM_INLINED_MAX 16 /* inlined frames kept per address, the innermost */

/* A function inlined at an address, and where in it the address is. */
struct sym_inline {
	const char *function; /* demangled; "" when DWARF names none */
	const char *system_name; /* its mangled name, NULL when it has none */
	const char *file; /* source file, NULL when not known */
	uint32_t line; /* 0 when not known */
};

struct sym_result {
	const char *function; /* NULL when unresolved; valid until symbolizer_free/forget */
	const char *
		system_name; /* the symbol's own (mangled) name when function is its demangled form, else NULL */
	uint64_t function_offset; /* addr - symbol start */
	const char *module; /* file path as mapped ("[kernel.kallsyms]" for the kernel,
				     "[name]" for a kernel module), NULL if no mapping */
	uint64_t module_offset; /* file offset of addr within module (kernel, JIT: addr) */
	const char *build_id; /* hex, "" when none */
	uint64_t map_start, map_limit, map_offset;
	bool jit; /* from a perf map */
	bool in_exec_mapping; /* false: the address lies outside every executable mapping */
	/* where addr is in function's source (DWARF); with inlined frames, the call site of the outermost */
	const char *file; /* NULL when not known */
	uint32_t line;
	struct sym_inline inlined[SYM_INLINED_MAX]; /* the functions inlined at addr, innermost first */
	size_t n_inlined;
	/* the module has no symbol table: Debian packages that would give it one, likelier first */
	const char *const *debug_packages;
	size_t n_debug_packages;
	bool debuginfo_failed; /* the module has debug information (MiniDebugInfo, DWARF) that could not be read */
};

/*
 * kernel = true for kernel addresses (pid ignored). Always fills ret; returns 1 if a function
 * was found, 0 if not, -errno.
 */
int symbolizer_resolve(struct symbolizer *s, uint32_t pid, uint64_t addr, bool kernel,
		       struct sym_result *ret);

/*
 * User stacks unwound from CFI (unwind.c): the registers and a copy of the top of the stack
 * taken at one instant (in BPF), walked through the .eh_frame of the files pid maps (read
 * when its mappings are noted). Touches nothing but memory: no file, no process.
 *
 * Registers by their DWARF numbers: x86_64 0-16 (rax, rdx, rcx, rbx, rsi, rdi, rbp, rsp,
 * r8-r15, then rip as 16), aarch64 0-32 (x0-x30, sp as 31, pc as 32).
 */
#define UNWIND_REGS 33

struct unwind_regs {
	uint64_t r[UNWIND_REGS];
	uint64_t valid; /* bit n: r[n] is known */
};

/* How an unwind ended; every one but UNWIND_END is a truncated stack. */
enum unwind_stop {
	UNWIND_END, /* the outermost frame: the CFI says it has no caller (_start, clone) */
	UNWIND_DEPTH, /* as many frames as asked for */
	UNWIND_STACK_END, /* a word beyond the copied stack was needed */
	UNWIND_NO_MAPPING, /* a pc in no executable mapping: a stack that points nowhere */
	UNWIND_NO_CFI, /* a pc in code with no CFI, and no frame pointer to follow */
	UNWIND_BAD_CFI, /* CFI that could not be evaluated (corrupt, an operation not known) */
	UNWIND_LOOP, /* the stack pointer did not move up */
	UNWIND_NO_REGS, /* a register it needed was not known */
	UNWIND_TIME, /* it took longer than its budget (CFI made to be slow) */
	UNWIND_STOP_MAX,
};
const char *unwind_stop_name(enum unwind_stop why); /* "complete", "depth", "stack_copy", ... */
/* Whether the unwind stopped at one of its own limits (the frames asked for, the copy's
 * length, its time), where callers may be left: the stack is marked truncated
 * (HP_STACK_UTRUNC), which the report and Perfetto show. The other stops are where it
 * could go no further. */
static inline bool unwind_cut(enum unwind_stop why)
{
	return why == UNWIND_DEPTH || why == UNWIND_STACK_END || why == UNWIND_TIME;
}

struct unwind_result {
	size_t n; /* frames: the pc, then return addresses, innermost first */
	enum unwind_stop stop;
	size_t fp_steps; /* of them, found by the frame pointer where no CFI covered a pc */
	bool fp_kept;    /* symbolizer_sample_stack: the frame-pointer walk's frames instead */
};

/*
 * Unwinds pid's stack from regs, with stack[0..stack_len) the copy of its memory from the
 * stack pointer up, into frames[0..max) (the pc first, then return addresses, as a frame
 * pointer walk gives them). Every unwind is counted in symbolizer_info by how it ended.
 * -EINVAL: max is 0.
 */
int symbolizer_unwind(struct symbolizer *s, uint32_t pid, const struct unwind_regs *regs, const void *stack,
		      size_t stack_len, uint64_t *frames, size_t max, struct unwind_result *ret);

/* The CPU time one unwind may take (UNWIND_TIME once it has taken that much; checked every
 * 4 frames), for tests: 0 makes every unwind of more than 4 frames run out of it. */
void symbolizer_set_unwind_budget(struct symbolizer *s, uint64_t ns);

/*
 * An on-CPU sample's user stack (an HP_EV_RAWSAMPLE's): symbolizer_unwind's frames, or
 * fp[0..n_fp), the frame-pointer walk taken with the copy, where the unwind stopped for
 * want of a mapping, CFI or registers before the walk did (counted in unwind_fp_kept).
 * Returns how many frames are in frames[0..max).
 */
size_t symbolizer_sample_stack(struct symbolizer *s, uint32_t pid, const struct unwind_regs *regs, const void *stack,
			       size_t stack_len, const uint64_t *fp, size_t n_fp, uint64_t *frames, size_t max,
			       struct unwind_result *ret);
/* That rule alone: whether a stack keeps its frame-pointer walk of n_fp frames over res's
 * (counted in unwind_fp_kept when it does). */
bool symbolizer_keep_fp(struct symbolizer *s, const struct unwind_result *res, size_t n_fp);
/* An off-CPU interval's user stack: given its unwound frames, or left to frame pointers
 * (no copy matched it). */
void symbolizer_count_offcpu(struct symbolizer *s, bool unwound);
/* A record with a stack copy drained (HP_EV_RAWSAMPLE, HP_EV_RAWUSTACK), of that size. */
void symbolizer_count_copy(struct symbolizer *s, uint64_t record_bytes);

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
	uint64_t minidebug_failed; /* files whose MiniDebugInfo could not be read (corrupt, over the caps) */
	uint64_t dwarf_files; /* files with DWARF, their fd kept */
	uint64_t dwarf_opened, dwarf_failed,
		dwarf_evicted; /* opened for lookups, unreadable (here and when read), closed for room */
	uint64_t dwarf_lookups, dwarf_over_budget;
	uint64_t dwarf_around; /* of the lookups, a job's of the rows beside one it looked up (handed back with it) */
	uint64_t dwarf_cached; /* lookups answered by what lookups before found (no DWARF opened for them) */
	uint64_t dwarf_lines; /* addresses, and address ranges, whose lookup is kept, in all files */
	uint64_t dwarf_learned; /* of them, handed back by snapshot jobs (symbolizer_learn) */
	uint64_t dwarf_learn_dropped; /* lookups a job could not write down, or the daemon could not read */
	uint64_t dwarf_bytes; /* what the DWARF files open in this process's lookups hold, about */
	uint64_t
		dwarf_preopened_bytes; /* what the DWARF files opened as they were read hold (jobs inherit them) */
	uint64_t names_bytes; /* demangled and DWARF names kept */
	uint64_t names_full; /* names not kept: NAMES_BYTES_MAX reached (shown as they are) */
	uint64_t bytes; /* heap held by symbol tables and maps (not DWARF's) */
	uint64_t cfi_files; /* files whose .eh_frame is held for unwinding */
	uint64_t cfi_failed; /* files whose .eh_frame could not be read (corrupt, over the cap) */
	uint64_t cfi_bytes; /* what those copies hold */
	uint64_t unwinds, unwind_frames, unwind_fp_steps;
	uint64_t unwind_fp_kept; /* stacks whose frame-pointer walk was kept (symbolizer_keep_fp) */
	uint64_t unwind_offcpu, unwind_offcpu_fp; /* off-CPU user stacks unwound, left to frame pointers */
	uint64_t unwind_copies, unwind_copy_bytes; /* records with a stack copy drained, their bytes */
	uint64_t unwind_stops[UNWIND_STOP_MAX]; /* unwinds by how they ended */
	uint64_t budget; /* symbolizer_set_budget; 0: none */
	uint64_t over_budget; /* files and perf maps read but not kept: bytes would pass budget */
};
void symbolizer_info(const struct symbolizer *s, struct symbolizer_info *ret);

/*
 * A process forked from the one that made s (a snapshot job) looks up source lines in DWARF
 * that its parent has not; what it found, written down, is handed over in *ret (malloc'ed;
 * NULL and 0 when nothing) for the parent's symbolizer_learn(), so that the next job need
 * not open that DWARF for those addresses again. In the process that made s: nothing (its
 * lookups are kept as they are made).
 */
void symbolizer_learned(struct symbolizer *s, uint8_t **ret, size_t *ret_len);
/* The bytes of a job's symbolizer_learned() kept: 0, or -EBADMSG (what came before the
 * bad part is kept), -ENOMEM. Counted in symbolizer_info's dwarf_learned, dwarf_learn_dropped. */
int symbolizer_learn(struct symbolizer *s, const uint8_t *data, size_t len);

/*
 * info's unwinding counters as the snapshot and status carry them; drops and ptrs (each of
 * UNWIND_STOP_MAX) are the storage of ret->truncated, one for each reason that counted.
 */
void symbolizer_unwind_stats(const struct symbolizer_info *info, Hostprof__UnwindStats *ret, Hostprof__Drop *drops,
			     Hostprof__Drop **ptrs);

/* At most bytes (symbolizer_info's): an ELF file or a perf map version that would take it
 * past that is not kept (frames in it stay module and offset) and is counted in
 * over_budget; what is kept already stays. 0: no limit. One budget for every process:
 * what one user's processes map can take all of it (their frames then resolve, others'
 * new files do not). */
void symbolizer_set_budget(struct symbolizer *s, uint64_t bytes);

/* Where separate debug info lives, "/usr/lib/debug" unless set (tests, configuration). */
int symbolizer_set_debug_dir(struct symbolizer *s, const char *dir);
/* Read kallsyms and modules from other files (tests). Takes effect on the next kernel resolve. */
int symbolizer_set_kernel_files(struct symbolizer *s, const char *kallsyms, const char *modules);

#endif
