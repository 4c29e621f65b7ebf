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
 *   filecache.c  ELF files shared by key (device and inode, build-id)
 *   jit.c        a process's perf map versions
 *   perfmap.c    the perf map parser (perfmap.h)
 *   kernel.c     kallsyms and /proc/modules
 *   procfile.c   opening files a watched process controls
 *   strbuf.c     the string tables names are kept in
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

/* ---- small helpers ---- */

struct strbuf {
	char *p;
	size_t len, cap;
};

/* Appends s[0..n) and a NUL; returns its offset or -errno (-E2BIG past max bytes). */
int64_t strbuf_add(struct strbuf *b, const char *s, size_t n, size_t max);
/* Shrinks the buffer to its length and hands it over. */
char *strbuf_take(struct strbuf *b);

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
/* Symbols of the binary into f: its .symtab, else separate debug info's, else its .dynsym. */
int elf_load(const struct debug_search *ds, Elf *bin, struct elf_file *f);
/* The daemon's own vDSO, copied and read: the kernel maps one image into every process. */
struct elf_file *vdso_load(void);

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

struct file_cache {
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
	uint64_t resolved, unresolved, kernel_unresolved, elf_failed, perfmap_rejected;
	uint64_t refreshes, refresh_abandoned, refresh_rejected;
};

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
