/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The symbolizer's parts and the state they share; private to daemon/symbolize/. The API
 * is daemon/symbolize.h.
 *
 *   symbolize.c  the front: constructors, the per-process table, resolve, statistics
 *   refresh.c    noting a process: a read phase (the worker's, or inline) and an apply phase
 *   maps.c       /proc/PID/maps and NSpid; a process's mapping lists
 *   elf.c        one ELF file: its symbols, segments and build-id; the vDSO
 *   debuginfo.c  separate debug files: by build-id, by .gnu_debuglink
 *   minidebug.c  MiniDebugInfo: the xz-compressed symbol table in .gnu_debugdata
 *   dwarf.c      source file and line, and inlined frames, from DWARF (elfutils' libdw)
 *   lines.c      what DWARF lookups found, kept per file; a job's handed back to the daemon
 *   demangle.c   C++ and Rust names demangled (libiberty), bounded
 *   cfi.c        a file's .eh_frame, copied into memory for the unwinder
 *   unwind.c     user stacks unwound from CFI over a copy of the stack
 *   debugpkg.c   the Debian package that would give a stripped file its symbols (dpkg's lists)
 *   filecache.c  ELF files shared by key (device and inode, build-id)
 *   jit.c        a process's perf map versions
 *   perfmap.c    the perf map parser (perfmap.h)
 *   kernel.c     kallsyms and /proc/modules
 *   procfile.c   opening files a watched process controls
 *   strbuf.c     the string tables names are kept in, and the interned names of results
 */
#ifndef HOSTPROF_SYMBOLIZE_INTERNAL_H
#define HOSTPROF_SYMBOLIZE_INTERNAL_H

#include <gelf.h>
#include <libelf.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <time.h>

#include "macro.h"
#include "perfmap.h"
#include "procfs.h"
#include "symbolize.h"

#define BUILD_ID_MAX 64 /* bytes; GNU ld writes 20 */
#define ELF_SYMS_MAX (16u << 20) /* symbols kept from one file */
#define ELF_NAMES_MAX (1u << 30) /* bytes of names from one file */
#define MAPPINGS_MAX 65536 /* executable mappings noted per process */
#define RETIRED_MAX 4096 /* mappings kept per process after they went away */
#define PROC_PERFMAP_BYTES_MAX (64u << 20) /* perf map versions kept per process */
#define KSYM_TAIL 4096 /* assumed size of a kernel symbol nothing bounds */
#define SYM_SCAN_MAX 64 /* enclosing symbols looked at behind the nearest one */
#define KERNEL_CHECK_NS NSEC_PER_SEC
#define PERFMAP_CHECK_NS NSEC_PER_SEC
#define MAPS_BYTES_MAX (64u << 20) /* bytes read from /proc/PID/maps */
#define STATUS_LINES_MAX 256 /* lines read from /proc/PID/status */
#define ELF_FILE_BYTES_MAX (4ull << 30) /* larger ELF and debug files are not read */
#define ELF_SECTIONS_MAX 65536 /* files with more sections are not read */
#define ELF_SMALL_MAX (1u << 20) /* larger notes, section name tables, debug links are not read */
#define HUNG_MAX 64 /* files remembered as ones a read hung in */
#ifndef MINIDEBUG_BYTES_MAX /* the fuzz targets set smaller ones */
#define MINIDEBUG_BYTES_MAX (64u << 20) /* MiniDebugInfo decompressed past this is not used */
#endif
#define MINIDEBUG_NS (2 * NSEC_PER_SEC) /* nor one that takes longer to decompress */
#ifndef DWARF_FILE_BYTES_MAX /* the fuzz targets set smaller ones */
#define DWARF_FILE_BYTES_MAX (512ull << 20) /* debug sections (decompressed) of one file */
#endif
#ifndef DWARF_HELD_BYTES_MAX /* the fuzz targets set smaller ones */
#define DWARF_HELD_BYTES_MAX (768ull << 20) /* of the files open at once; the least used go */
#endif
#define DWARF_FDS_MAX 512 /* files kept open for their DWARF, in all */
/* a file's DWARF is opened as it is read when it comes to at most this, and the daemon then
 * holds at most this of such files, counted in symbolizer_mb; the rest each snapshot job
 * opens (and decompresses) for itself. Not more: it is opened on the worker, which then
 * does nothing else, and a trigger's Python read waits behind it (libc6-dbg's and
 * libpython3.11-dbg's 10 and 21 MiB took it 400 ms, seconds under ASan) */
#define DWARF_PREOPEN_FILE_MAX (8ull << 20)
#define DWARF_PREOPEN_BYTES_MAX (8ull << 20)
#define DWARF_UNITS_MAX (1u << 20) /* compilation units indexed per file (no .debug_aranges) */
#define DWARF_RANGES_MAX (4u << 20) /* their address ranges, and the functions' */
#define DWARF_DIES_MAX (16u << 20) /* DIEs looked at to index a file's functions */
#define AROUND_MAX 32 /* ranges a job learns each way beside one it looked up, in its function */
#define AROUND_NS (2 * NSEC_PER_MSEC) /* CPU time for them, per lookup */
#define DWARF_BUDGET_NS (10 * NSEC_PER_SEC) /* CPU time for DWARF per process that resolves (a snapshot job) */
#define NAMES_BYTES_MAX (64u << 20) /* demangled and interned names kept */
#define DEMANGLE_IN_MAX 4096 /* longer mangled names are not demangled */
#define DEMANGLE_OUT_MAX 1024 /* longer demangled names lose their parameters, then are cut */
#ifndef CFI_BYTES_MAX /* the fuzz targets set smaller ones */
#define CFI_BYTES_MAX (64u << 20) /* of one file's .eh_frame (and of its .eh_frame_hdr) */
#endif
/* CPU time of one unwind (15-35 us for 13 frames of python3.11; the first in a process
 * costs more: libdw caches nothing yet). An ASan build runs it 6-8 times slower (134-200 us
 * each), and its first unwind past 1 ms in 4 runs of 5: its budget is ten times as long. */
#if defined(__SANITIZE_ADDRESS__)
#define UNWIND_BUDGET_NS (10 * NSEC_PER_MSEC)
#else
#define UNWIND_BUDGET_NS (1 * NSEC_PER_MSEC)
#endif
#define DEBUGPKG_BYTES_MAX (256u << 20) /* of dpkg's file lists read per lookup */
#define DEBUGPKG_NS NSEC_PER_SEC /* time for one lookup */

/* ---- small helpers ---- */

struct strbuf {
	char *p;
	size_t len, cap;
};

/* Appends s[0..n) and a NUL; returns its offset or -errno (-E2BIG past max bytes). */
int64_t strbuf_add(struct strbuf *b, const char *s, size_t n, size_t max);
/* Shrinks the buffer to its length and hands it over. */
char *strbuf_take(struct strbuf *b);

/* Strings that never move, in chunks, with a hash set to find one again. */
struct name_chunk;

struct name_entry {
	uint64_t hash;
	const char *key, *value;
};

struct name_table {
	struct name_chunk *chunks;
	size_t bytes; /* in the chunks */
	struct name_entry *slots;
	size_t n, cap;
	uint64_t full; /* strings refused: the table reached NAMES_BYTES_MAX */
};

/* The value stored under key[0..n), or NULL. */
const char *name_table_get(const struct name_table *t, const char *key, size_t n);
/* Stores key[0..n) → value[0..vn) (value NULL: the key itself) and returns the stored value;
 * NULL when the table is full or out of memory. */
const char *name_table_put(struct name_table *t, const char *key, size_t n, const char *value, size_t vn);
/* key[0..n) interned: its stored copy (NULL: full). */
const char *name_intern(struct name_table *t, const char *key, size_t n);
size_t name_table_bytes(const struct name_table *t);
void name_table_done(struct name_table *t);

#define FNV_OFFSET 0xcbf29ce484222325ULL

static inline uint64_t fnv1a(uint64_t h, const void *data, size_t n)
{
	const unsigned char *p = data;

	for (size_t i = 0; i < n; i++) {
		h ^= p[i];
		h *= 0x100000001b3ULL;
	}
	return h;
}

static inline uint64_t now_mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return ts.tv_sec * NSEC_PER_SEC + ts.tv_nsec;
}

/* procfile.c */
/* A regular file read-only (path resolved in dirfd's root when in_root); -EINVAL for anything else. */
int open_regular_at(int dirfd, const char *path, bool in_root);
/* A file the process itself made, for a reader that trusts nothing of it (perf maps): a
 * regular file owned by one of owners, reached without any symlink inside root_fd, not on
 * proc, sys, tracefs, debugfs or the like, at most max_bytes, opened non-blocking. -EPERM:
 * another owner; -EFBIG: too large; -EINVAL: not a plain file. */
int open_owned_file_at(int root_fd, const char *path, const uint32_t *owners, size_t n_owners, uint64_t max_bytes,
		       struct stat *ret_st);
bool same_root_as_daemon(int root_fd);

/* ---- ELF files ---- */

struct elf_sym {
	uint64_t addr, size;
	uint32_t name;
};

struct load_seg {
	uint64_t offset, vaddr, filesz;
	bool exec;
};

struct file_key;
struct dwarf_handle;
struct line_cache;
struct line_entry;
struct cfi;

#define DEBUG_PACKAGES 2

struct elf_file {
	unsigned refs;
	int err; /* < 0: not read (not ELF, unreadable), no symbols */
	char build_id[2 * BUILD_ID_MAX + 1];
	struct elf_sym *syms;
	uint64_t *max_end; /* max_end[i]: the furthest end of syms[0..i] */
	size_t n_syms;
	char *names;
	size_t names_len;
	struct load_seg *segs;
	size_t n_segs;
	struct file_key **keys; /* the cache keys that lead here */
	size_t n_keys;
	bool no_symtab; /* symbols from .dynsym alone, or none: a debug package would name more */
	int minidebug_err; /* < 0: it has MiniDebugInfo that could not be read */
	int dwarf_fd; /* the file with its DWARF (itself, or its debug file); -1: none */
	struct dwarf_handle *dwarf; /* that DWARF, open in this process (dwarf.c); NULL: not yet */
	int dwarf_err; /* < 0: it could not be read in this process; not tried again */
	struct line_cache *lines; /* what lookups of its DWARF found (lines.c) */
	char *debug_package[DEBUG_PACKAGES]; /* Debian packages that would give it symbols, or NULL */
	struct cfi *cfi; /* its .eh_frame for the unwinder; NULL: none */
	int cfi_err; /* < 0: it has an .eh_frame that could not be read */
};

/* Where the debug files of one binary are looked for. */
struct debug_search {
	const char *debug_dir; /* "/usr/lib/debug" */
	int root_fd; /* /proc/PID/root, or -1 */
	bool same_root; /* the process sees the daemon's root: search once */
	const char *path; /* of the binary, as mapped */
	struct stat st; /* of the binary */
};

/* elf.c */
/* An empty file: one reference, no DWARF. NULL: no memory. */
struct elf_file *elf_file_new(void);
/* libelf's handle on fd when it is an ELF file within the caps: -EFBIG, -E2BIG, -ENOEXEC. */
int elf_open(int fd, const struct stat *st, Elf **ret);
size_t elf_file_bytes(const struct elf_file *f);
/* The symbol covering vaddr: the innermost of those that enclose it. */
const struct elf_sym *elf_file_find(const struct elf_file *f, uint64_t vaddr);
/* A file offset (mapping offset + distance into the mapping) to the ELF's virtual address. */
bool elf_file_vaddr(const struct elf_file *f, uint64_t file_off, uint64_t *ret);
/* The build-id as hex, "" when the file has none: note sections, else PT_NOTE segments. */
void elf_build_id(Elf *e, char ret[2 * BUILD_ID_MAX + 1]);
/* The first section of the given type that has contents. */
Elf_Scn *elf_find_section(Elf *e, uint32_t type, GElf_Shdr *ret);
Elf_Scn *elf_find_section_named(Elf *e, const char *name, GElf_Shdr *ret);
/*
 * Symbols of the binary (bin, read from bin_fd) into f: its .symtab, else its separate debug
 * file's, else MiniDebugInfo's with its .dynsym, else its .dynsym; and where its DWARF is (the
 * binary, else its debug file), kept open in f->dwarf_fd.
 */
int elf_load(const struct debug_search *ds, int bin_fd, Elf *bin, struct elf_file *f);
/* e's .eh_frame into f->cfi for the unwinder; < 0 when it has one that could not be read. */
int elf_load_cfi(Elf *e, struct elf_file *f);
/* e has DWARF of its own (a .debug_info with contents). */
bool elf_has_dwarf(Elf *e);
/* The code symbols of the ELF file in mem[0..len) (a MiniDebugInfo) and of bin's .dynsym (bin may be NULL) into f. */
int elf_load_memory(void *mem, size_t len, Elf *bin, struct elf_file *f);
/* The daemon's own vDSO, copied and read: the kernel maps one image into every process. */
struct elf_file *vdso_load(void);

/* minidebug.c */
/* data[0..n) (xz) decompressed into *ret (malloc'ed), within max_bytes and max_ns: -E2BIG, -ETIME, -EBADMSG. */
int minidebug_decompress(const void *data, size_t n, uint64_t max_bytes, uint64_t max_ns, void **ret,
			 size_t *ret_len);
/* bin's .gnu_debugdata decompressed (an ELF file) into *ret, malloc'ed. -ENOENT: none. */
int minidebug_read(Elf *bin, void **ret, size_t *ret_len);

/* demangle.c */
/* name demangled into buf (cap bytes, at least 16), bounded; 1: done, 0: not a name it knows. */
int demangle(const char *name, char *buf, size_t cap);
/* The demangled form of name, kept in t; NULL when it is not a mangled name (or t is full). */
const char *demangle_cached(struct name_table *t, const char *name);

/* debuginfo.c: the debug file of bin with a symbol table, and its fd; NULL if none. */
Elf *debug_find(const struct debug_search *ds, Elf *bin, const char *build_id, int *ret_fd);

/* filecache.c */
struct file_key {
	struct file_key *next;
	struct elf_file *file;
	char key[];
};

/* The keys of the cache at one moment: read-only, so that a read phase can look into it. */
struct known_files {
	unsigned refs; /* taken and dropped on the loop thread only */
	uint64_t gen; /* of the cache it was taken from */
	size_t n;
	const char **keys; /* sorted */
};

/* The DWARF files open in this process (dwarf.c), most recently used first. */
struct dwarf_open {
	struct dwarf_handle *head, *tail;
	uint64_t bytes; /* what libdw holds of them, about */
	pid_t pid; /* the process spent_ns is of */
	uint64_t spent_ns;
	uint64_t opened, failed, evicted, lookups, over_budget;
	uint64_t cached; /* lookups answered by a file's line cache */
	uint64_t around; /* of the lookups, those of rows beside one a job looked up (learn_around) */
	pid_t owner; /* the process whose lookups are kept at once; others (jobs) write them down */
	uint8_t *learned; /* written down, for symbolizer_learned() (lines.c) */
	size_t learned_len, learned_cap;
	uint64_t learn_dropped; /* not written down (LEARNED_BYTES_MAX, no memory, no key) */
};

struct file_cache {
	struct dwarf_open dwarf;
	struct file_key **buckets;
	size_t n_buckets, n_keys, n_files;
	uint64_t gen; /* changes with every key put or removed */
	struct known_files *known; /* of some gen, made on demand */
};

#define FILE_KEY_MAX (2 * BUILD_ID_MAX + 3)
/* "i:DEV:INO:SIZE:MTIME", the key of a file by what stat says of it */
void file_key_inode(const struct stat *st, char ret[FILE_KEY_MAX]);
/* "b:HEX", the key of a file by build-id */
void file_key_build_id(const char *build_id, char ret[FILE_KEY_MAX]);

struct elf_file *cache_get(struct file_cache *c, const char *key);
/* Makes key lead to f. */
int cache_put(struct file_cache *c, const char *key, struct elf_file *f);
/* Puts f under each key that is not NULL, and counts it as a file of the cache. */
int cache_put_file(struct file_cache *c, const char *const *keys, size_t n_keys, struct elf_file *f);
void file_cache_done(struct file_cache *c);
struct elf_file *elf_file_ref(struct elf_file *f);
/* Drops a reference; the last one takes f's keys out of c (which may be NULL for a file in none). */
void elf_file_unref(struct file_cache *c, struct elf_file *f);
/* The keys of c now, a reference for the caller; NULL + -ENOMEM. */
int known_files_get(struct file_cache *c, struct known_files **ret);
void known_files_unref(struct known_files *k);
/* Thread-safe: k is never written once made. k may be NULL (nothing known). */
bool known_files_has(const struct known_files *k, const char *key);

/* dwarf.c */
/* A copy of fd kept for a file's DWARF; -1 past DWARF_FDS_MAX open in all. */
int dwarf_keep_fd(int fd);
void dwarf_drop_fd(int fd);
unsigned dwarf_fds_held(void);
/* Closes f's DWARF if it is open: o is the list it is in, NULL when it is in none. */
void dwarf_close(struct dwarf_open *o, struct elf_file *f);
/*
 * Opens f's DWARF where its file is read (the worker): 1 when it is open, 0 when it is left to
 * the jobs (too large, or the daemon holds enough), -errno when it cannot be read (then it is
 * not tried again). Touches no symbolizer state: dwarf_adopt() puts it in o on the loop thread.
 */
int dwarf_preopen(struct elf_file *f);
void dwarf_adopt(struct dwarf_open *o, struct elf_file *f);
/* What the files opened by dwarf_preopen() hold, in all; how many it could not open. */
uint64_t dwarf_preopened_bytes(void);
/* What f's DWARF, opened as it was read, holds (in elf_file_bytes: symbolizer_mb); 0 otherwise. */
uint64_t dwarf_file_preopened_bytes(const struct elf_file *f);
uint64_t dwarf_preopen_failed(void);
/*
 * File and line of vaddr in f, and the functions inlined there, into ret (names kept in
 * names). 1: found; 0: f has no DWARF for it; -errno: its DWARF could not be read
 * (-ETIME: this process's DWARF budget is spent).
 */
int dwarf_lookup(struct file_cache *c, struct name_table *names, struct elf_file *f, uint64_t vaddr,
		 struct sym_result *ret);

/* lines.c */
/* What a lookup of vaddr in f's DWARF found, kept (the address itself, or a range of a job's
 * that holds it); NULL: not looked up, or not kept. */
const struct line_entry *lines_find(const struct elf_file *f, uint64_t vaddr);
/* e into ret, as dwarf_lookup() would have put it; what it returned. */
int lines_apply(const struct line_entry *e, struct sym_result *ret);
/* The addresses e answers: [*lo, *hi). */
void lines_extent(const struct line_entry *e, uint64_t *lo, uint64_t *hi);
/* What a lookup found (its function: the one DWARF names) into ret, which may name one already. */
void lines_merge(const struct sym_result *found, struct sym_result *ret);
/* A lookup of vaddr (found: it said 1) kept, for the addresses [lo, hi) that look up alike
 * (past LOCAL_MAX of them, or where lo, hi do not hold vaddr: for vaddr alone); res's names
 * live as long as f. 1: kept, 0: not (held already, or f holds LINES_MAX), -ENOMEM. */
int lines_put(struct elf_file *f, uint64_t vaddr, uint64_t lo, uint64_t hi, bool found, const struct sym_result *res);
void lines_free(struct elf_file *f);
size_t lines_bytes(const struct elf_file *f);
/* Addresses and ranges kept. */
size_t lines_count(const struct elf_file *f);
/* The ranges sorted and apart (for the tests and the fuzz target). */
bool lines_sorted(const struct elf_file *f);
/* In a job: a lookup written down in o->learned for the daemon, with [lo, hi), the addresses
 * that look up alike (counted in learn_dropped where not). */
/* Half of what a job may write down is taken: the rest is kept for the addresses it looks up. */
bool learned_half_full(const struct dwarf_open *o);
void learned_add(struct dwarf_open *o, const struct elf_file *f, uint64_t lo, uint64_t hi, bool found,
		 const struct sym_result *res);
/* What o->learned holds, handed over (with what could not be written down, counted). */
void learned_take(struct dwarf_open *o, uint8_t **ret, size_t *ret_len);
/* A job's learned_take() bytes kept in c's files (names in names), each file sorted once:
 * how many ranges were new in *ret_kept, how many the job or this could not keep in
 * *ret_dropped; -EBADMSG past the first malformed record, -ENOMEM. */
int lines_learn(struct file_cache *c, struct name_table *names, const uint8_t *p, size_t n, size_t *ret_kept,
		uint64_t *ret_dropped);

/* cfi.c */
/* e's .eh_frame (and .eh_frame_hdr) copied and opened: -ENOENT none, -EFBIG over CFI_BYTES_MAX,
 * -EPROTONOSUPPORT not this machine's code, -EBADMSG libdw refused it. */
int cfi_read(Elf *e, struct cfi **ret);
/* The same from the sections' bytes and addresses (hdr may be empty): for the fuzz target. */
int cfi_build(const void *hdr, size_t hdr_len, uint64_t hdr_addr, const void *eh, size_t eh_len, uint64_t eh_addr,
	      uint16_t machine, struct cfi **ret);
struct Dwarf_CFI_s;
struct Dwarf_Frame_s;
struct Dwarf_CFI_s *cfi_handle(const struct cfi *c);
/* libdw's frame state at vaddr, kept in c (the loop's thread only): 0, *ret c's own; 1,
 * *ret the caller's to free (no memory for the cache); -ENOENT: no CFI covers vaddr. */
int cfi_frame(struct cfi *c, uint64_t vaddr, struct Dwarf_Frame_s **ret);
size_t cfi_bytes(const struct cfi *c);
/* Its .eh_frame_hdr's table was checked and is used (else libdw searches .eh_frame). */
bool cfi_indexed(const struct cfi *c);
void cfi_free(struct cfi *c);

/* unwind.c */
#if defined(__aarch64__)
#define UNWIND_ARCH_REGS 33
#define UNWIND_PC 32
#define UNWIND_SP 31
#define UNWIND_FP 29
#else
#define UNWIND_ARCH_REGS 17
#define UNWIND_PC 16
#define UNWIND_SP 7
#define UNWIND_FP 6
#endif

/* The copy of a stack: data[0..len) is the process's memory at base. */
struct unwind_mem {
	const unsigned char *data;
	size_t len;
	uint64_t base;
};

/*
 * One frame: regs at a pc whose file address (the lookup address: the pc, or a return
 * address less one) is vaddr, to the caller's, through cfi. UNWIND_DEPTH: a step made;
 * UNWIND_END: no caller; else why not. *ret_signal: the caller's pc is exact.
 */
enum unwind_stop unwind_step_cfi(struct cfi *cfi, uint64_t vaddr, const struct unwind_mem *mem,
				 struct unwind_regs *regs, bool *ret_signal);

/* No CFI for the pc: the caller through the frame pointer, if it points into the copy above sp. */
enum unwind_stop unwind_step_fp(const struct unwind_mem *mem, struct unwind_regs *regs);
/* regs->r[regno] when it is known: -ENODATA when not. */
int unwind_reg_get(const struct unwind_regs *r, uint64_t regno, uint64_t *ret);

/* debugpkg.c */
/*
 * The Debian packages that would give the files at paths[0..n) their symbols, from dpkg's
 * database under root_fd (-1: the daemon's root): the package each file belongs to, and
 * the debug packages that name them, into ret[i][0..DEBUG_PACKAGES) (malloc'ed strings,
 * NULL when none). Reads at most DEBUGPKG_BYTES_MAX, for at most DEBUGPKG_NS.
 */
int debugpkg_find(int root_fd, const char *const *paths, size_t n, char *(*ret)[DEBUG_PACKAGES]);

/* ---- the process's view ---- */

struct mapping {
	uint64_t start, limit, offset;
	uint64_t dev, ino;
	char *path; /* as mapped; NULL: anonymous */
	struct elf_file *file; /* NULL: no symbols to be had */
	bool anon; /* anonymous or a named anonymous region: JIT code may live here */
	bool pending; /* its file is still to be looked at (the last refresh ran out of time) */
};

struct proc {
	uint32_t pid, nspid;
	uint64_t start_time;
	struct mapping *maps; /* current, sorted by start */
	size_t n_maps;
	struct mapping *old; /* retired, oldest first */
	size_t n_old;
	struct perfmap *jit; /* versions, oldest first */
	size_t n_jit;
	size_t jit_bytes;
	char *perfmap_path; /* "/tmp/perf-NSPID.map", the module of JIT frames */
	struct stat jit_st; /* of the version parsed last */
	uint64_t jit_checked_ns;
	uint64_t seq; /* refreshes applied: a read phase that started from another is stale */
	bool alive;
};

struct ksym {
	uint64_t addr, end;
	uint32_t name, module;
};

struct kernel {
	char *kallsyms_path, *modules_path;
	struct ksym *syms;
	size_t n;
	char *names;
	size_t names_len;
	uint64_t modules_hash;
	uint64_t checked_ns;
	uint64_t loads;
	int err; /* of the last load */
	bool loaded, hidden;
};

struct file_id {
	uint64_t dev, ino;
};

struct refresh;

struct symbolizer {
	struct file_cache cache;
	struct proc **procs; /* sorted by pid */
	size_t n_procs;
	struct proc *last;
	struct kernel kernel;
	struct elf_file *vdso; /* the daemon's own: the kernel maps the same image everywhere */
	bool vdso_tried;
	char *debug_dir;
	pid_t owner; /* the process that made it: a forked child's copy has no worker */
	struct refresh *inflight; /* on the worker */
	struct file_id hung[HUNG_MAX]; /* files a read hung in, newest at hung_next - 1 */
	size_t n_hung, hung_next;
	struct name_table demangled; /* mangled name -> demangled ("": not mangled) */
	struct name_table names; /* DWARF's file and function names */
	uint64_t resolved, unresolved, kernel_unresolved, elf_failed, perfmap_rejected, minidebug_failed;
	uint64_t refreshes, refresh_abandoned, refresh_rejected;
	uint64_t unwinds, unwind_frames, unwind_fp_steps, unwind_stops[UNWIND_STOP_MAX];
	uint64_t unwind_fp_kept; /* symbolizer_keep_fp: the frame-pointer walk kept */
	uint64_t unwind_offcpu, unwind_offcpu_fp; /* symbolizer_count_offcpu */
	uint64_t unwind_copies, unwind_copy_bytes; /* symbolizer_count_copy */
	uint64_t unwind_budget_ns; /* CPU time of one unwind: UNWIND_BUDGET_NS, or a test's */
	uint64_t budget, over_budget; /* symbolizer_set_budget */
	uint64_t learned, learn_rejected; /* symbolizer_learn: ranges kept, messages refused */
	uint64_t learn_dropped; /* symbolizer_learn: lookups the jobs or the daemon could not keep */
};

/* The heap held by symbol tables, mappings and perf maps (symbolizer_info's bytes). */
uint64_t symbolizer_bytes(const struct symbolizer *s);
/* size more bytes would take s past its budget (counted in over_budget). */
bool symbolizer_over_budget(struct symbolizer *s, uint64_t size);

/* symbolize.c: the per-process table */
struct proc *proc_find(struct symbolizer *s, uint32_t pid);
/* The entry of pid, made (empty) if there is none. */
int proc_add(struct symbolizer *s, uint32_t pid, struct proc **ret);

/* maps.c */
/* pid's pid in its own PID namespace. */
int read_nspid(uint32_t pid, uint32_t *ret);
/* The executable mappings of /proc/PID/maps, sorted by start as the kernel lists them. */
int read_maps(uint32_t pid, struct mapping **ret, size_t *ret_n);
bool mapping_same(const struct mapping *a, const struct mapping *b);
void mapping_done(struct symbolizer *s, struct mapping *m);
/* Moves a mapping that went away to the history; the oldest drops out past RETIRED_MAX. */
int proc_retire(struct symbolizer *s, struct proc *p, struct mapping *m);
/* The current mapping covering addr, else the newest retired one. */
const struct mapping *proc_find_mapping(const struct proc *p, uint64_t addr);

/* jit.c */
/*
 * The perf map at path, in root_fd's root, parsed into *ret and its stat into *ret_st unless
 * it is the version prev describes (NULL: none). 1: read; 0: missing or unchanged; -errno.
 */
int perfmap_read_at(int root_fd, const char *path, const struct proc_cred *cred, const struct stat *prev,
		    struct perfmap *ret,
		    struct stat *ret_st);
/* Takes m as p's newest version, read from a file st describes; older ones go past the cap. */
int proc_add_perfmap(struct symbolizer *s, struct proc *p, struct perfmap *m, const struct stat *st);
const struct perfmap_entry *proc_find_jit(const struct proc *p, uint64_t addr,
					  const struct perfmap **ret_map);
/* JIT code appears without mmaps: on a miss, look at the perf map again (once a second, while the process lives). */
void proc_recheck_perfmap(struct symbolizer *s, struct proc *p);

/* refresh.c */
/* What is on the worker for pid (forgotten), or for any (the symbolizer goes), is dropped when it is back. */
void refresh_cancel(struct symbolizer *s, uint32_t pid);
void refresh_cancel_all(struct symbolizer *s);

/* kernel.c */
extern const char KERNEL_MODULE[];
int kernel_init(struct kernel *k);
void kernel_done(struct kernel *k);
int kernel_set_files(struct kernel *k, const char *kallsyms, const char *modules);
int resolve_kernel(struct symbolizer *s, uint64_t addr, struct sym_result *ret);

#endif
