/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The Python reader's parts and what they share; private to daemon/python/. The API is
 * daemon/python.h.
 *
 *   offsets.c    the layouts of CPython 3.8-3.13 (the table), _Py_DebugOffsets of 3.13+
 *   discover.c   is this process CPython, which version, where its runtime and types are
 *   elfsym.c     symbols by name from one ELF file's .dynsym, its load segments, .rodata
 *   memory.c     bounded reads of the process's memory; its strings and bytes objects
 *   linetable.c  instruction offset -> line: co_lnotab, the 3.10 and the 3.11+ tables
 *   code.c       code objects -> name, file, lines, cached and checked before each use
 *   threads.c    interpreters -> thread states -> native tids -> frames
 *   state.c      one read of every thread as the snapshot's PythonState message
 *   python.c     the front: a process's reader, resolving code objects for others
 *   instant.c    reads on the worker at an instant before the snapshot (a trigger)
 *   gil.c        where the GIL is: what the kernel side needs to tell a GIL wait
 *   bpfwalk.c    the kernel walk's offsets (bpf/python.bpf.h), its frames made into names
 *   names.c      those names read on the worker while the process lives, kept past its exit
 *
 * Nothing here trusts the process: every pointer it hands us is read through py_mem
 * (bounded, counted, within a time budget), every object's type is checked against the
 * interpreter's own type objects before a field of it is used, every list and chain is
 * bounded, and what cannot be read is said, never guessed.
 */
#ifndef HOSTPROF_PYTHON_INTERNAL_H
#define HOSTPROF_PYTHON_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "python.h"

#define PY_MAPS_BYTES_MAX (64u << 20) /* read from /proc/PID/maps */
#define PY_ELF_BYTES_MAX (4ull << 30) /* larger files are not opened */
#define PY_DYNSYMS_MAX (1u << 20) /* .dynsym entries looked at */
#define PY_RODATA_SCAN_MAX (64u << 20) /* bytes of .rodata searched for a version string */
#define PY_READ_MAX (1u << 20) /* one read of the process's memory */
#define PY_STR_BYTES_MAX 1024 /* UTF-8 bytes kept of a name or a file name */
#define PY_LINETABLE_MAX (1u << 20) /* bytes of one code object's line table */
#define PY_CODE_CACHE_MAX 65536 /* code objects cached per process */
#define PY_INTERPS_MAX 64 /* interpreters walked (subinterpreters) */
#define PY_TASKS_MAX 65536 /* threads of the process looked up for a tid */
#define PY_REASON_MAX 256

/* Where the frames are */
enum py_frames_kind {
	PY_FRAMES_OBJECT, /* 3.8-3.10: PyFrameObject, f_back chain, int f_lasti */
	PY_FRAMES_INTERP, /* 3.11+: _PyInterpreterFrame, previous chain, instruction pointer */
};

/* How code objects map instructions to lines */
enum py_lines_kind {
	PY_LINES_LNOTAB, /* 3.8, 3.9: co_lnotab, (address delta, line delta) pairs, bytes */
	PY_LINES_310, /* 3.10: co_linetable, (range length, line delta) pairs, bytes */
	PY_LINES_311, /* 3.11+: co_linetable location entries, code units */
};

#define PY_NONE (-1) /* an offset this version does not have */

/*
 * One CPython minor version's layouts: byte offsets of the fields the reader uses, from
 * the interpreter's own headers (Include/cpython/, Include/internal/pycore_*.h) of a
 * release build (no Py_TRACE_REFS, not free-threaded) on a 64-bit platform.
 */
struct py_offsets {
	unsigned minor; /* 3.minor */
	uint64_t runtime_size; /* sizeof(_PyRuntimeState) of the build the table was taken from */
	/* _PyRuntimeState */
	uint32_t rt_interp_head; /* interpreters.head */
	int32_t rt_gil; /* <= 3.11: ceval.gil (struct _gil_runtime_state) */
	/* PyInterpreterState */
	uint32_t is_next, is_threads_head, is_id;
	int32_t is_gil_ptr; /* 3.12+: ceval.gil, a pointer to the GIL's state */
	/* struct _gil_runtime_state */
	uint32_t gil_holder, gil_locked; /* last_holder (a PyThreadState *), locked (int) */
	uint32_t gil_switch_number; /* switch_number (unsigned long): +1 each time the GIL changes hands */
	/* the condition and mutexes a thread waits on for the GIL (pthread_cond_t, pthread_mutex_t:
	 * glibc's futex words lie within them), and the struct's size: a futex word in
	 * [gil, gil + gil_size) is a GIL wait */
	uint32_t gil_cond, gil_mutex, gil_switch_cond, gil_switch_mutex, gil_size;
	/* PyThreadState */
	uint32_t ts_next, ts_interp, ts_frame; /* frame / cframe / current_frame */
	int32_t ts_cframe_frame; /* 3.11, 3.12: ts_frame is a _PyCFrame *, current_frame here in it */
	uint32_t ts_thread_id; /* unsigned long: PyThread_get_thread_ident(), a pthread_t */
	int32_t ts_native_tid; /* 3.11+: native_thread_id */
	/* frames */
	enum py_frames_kind frames;
	uint32_t fr_size; /* bytes read of one frame */
	uint32_t fr_back, fr_code; /* f_back / previous; f_code / f_executable */
	uint32_t fr_instr; /* f_lasti (int) / prev_instr / instr_ptr (pointers) */
	bool instr_is_prev; /* 3.11, 3.12: prev_instr, the last one started; 3.13: the current one */
	bool lasti_units; /* 3.10: f_lasti counts 2-byte code units; 3.8, 3.9: bytes */
	int32_t fr_owner; /* 3.11+: char owner */
	int32_t fr_is_entry; /* 3.11: bool is_entry */
	int32_t owner_cstack; /* 3.12+: FRAME_OWNED_BY_CSTACK, the eval loop's entry shim */
	int32_t owner_generator; /* FRAME_OWNED_BY_GENERATOR */
	/* PyCodeObject */
	uint32_t co_size; /* bytes read of its head: every field below lies within */
	uint32_t co_filename, co_name, co_firstlineno, co_linetable;
	int32_t co_qualname; /* 3.11+ */
	int32_t co_code_adaptive; /* 3.11+: the instructions, inline; Py_SIZE(code) of them */
	int32_t co_firsttraceable; /* 3.11+: instructions before it do not make a frame complete */
	uint32_t var_size; /* PyVarObject.ob_size */
	enum py_lines_kind lines;
	/* objects */
	uint32_t ob_type;
	uint32_t bytes_size, bytes_sval;
	uint32_t str_length, str_state, str_ascii_size, str_compact_size; /* data.any: at compact_size */
};

/* What the reader reads of a thread state, an interpreter state, a frame or code object, a
 * str: every offset in use must lie within (the table's rows do; _Py_DebugOffsets must). */
#define PY_TSTATE_HEAD_MAX 512
#define PY_INTERP_HEAD_MAX 8192
#define PY_HEAD_MAX 4096
#define PY_STR_HEAD_MAX 256

/* The table's entry for 3.minor, or NULL. */
const struct py_offsets *py_offsets_for(unsigned minor);
bool py_offsets_sane(const struct py_offsets *o);

/*
 * 3.13+: _PyRuntime starts with _Py_DebugOffsets. raw: its first bytes as read from the
 * process (at least PY_DEBUG_OFFSETS_SIZE). Checks the cookie and version, fills *o from it
 * where it says, and writes what differs from the table into note. 1: used; 0: not there
 * (a version before it, no cookie); -EPROTO: there but unusable (free-threaded, offsets out of
 * their structs), with the reason in note.
 */
#define PY_DEBUG_OFFSETS_SIZE 584
int py_offsets_from_debug(const uint8_t *raw, size_t len, uint32_t hexversion, struct py_offsets *o,
			  char *note, size_t note_len);
/* Whether _Py_DebugOffsets at raw says a free-threaded build. */
bool py_debug_free_threaded(const uint8_t *raw, size_t len);

/* ---- the process: what discovery found ---- */

struct py_target {
	uint32_t pid;
	uint32_t hexversion; /* PY_VERSION_HEX: 0x030b07f0 */
	char version[16]; /* "3.11.7", or "3.9" when only the minor is known */
	char binary[256]; /* the file that holds _PyRuntime, as mapped */
	char offsets_note[PY_REASON_MAX]; /* where the offsets came from */
	struct py_offsets off;
	uint64_t runtime; /* &_PyRuntime */
	uint64_t runtime_size; /* its st_size in .dynsym */
	uint64_t code_type, frame_type, unicode_type, bytes_type; /* &PyCode_Type, ... */
	uint64_t none; /* &_Py_NoneStruct: 3.13's f_executable of a frame without code; 0 */
	int64_t pthread_tid_off; /* glibc: struct pthread's tid, from _thread_db_pthread_tid; -1 */
	bool free_threaded; /* a free-threaded build (3.13t): not read, and it has no GIL */
};

/* Set the offsets of t->hexversion, and read _Py_DebugOffsets where the version has them. */
struct py_mem;
int py_target_set_offsets(struct py_target *t, struct py_mem *m, char *why, size_t why_len);

/* What discovery says about pid */
enum py_kind {
	PY_KIND_NOT_PYTHON, /* nothing that looks like Python: no section in the snapshot */
	PY_KIND_UNREADABLE, /* looks like Python (its name, or _PyRuntime) but is not read: why says */
	PY_KIND_CPYTHON,
};

/* Fills *t. Never fails but for -ENOMEM; *ret_kind says what pid is. */
int py_discover(uint32_t pid, struct py_mem *m, struct py_target *t, enum py_kind *ret_kind, char *why,
		size_t why_len);

/* ---- ELF files ---- */

struct py_elf_sym {
	const char *name;
	uint64_t value, size;
	bool found;
};

struct py_elf_load {
	uint64_t vaddr, offset, filesz;
};

struct py_elf {
	int fd;
	void *elf; /* Elf * */
	struct py_elf_load loads[16];
	size_t n_loads;
};

/* fd is the caller's; on success the py_elf uses it until py_elf_close. */
int py_elf_open(int fd, struct py_elf *ret);
void py_elf_close(struct py_elf *e);
/* Looks up each of syms[] by name among .dynsym's defined symbols. */
int py_elf_dynsyms(struct py_elf *e, struct py_elf_sym *syms, size_t n);
/* The load bias of a mapping of the file at file offset map_offset that starts at map_start. */
int py_elf_bias(const struct py_elf *e, uint64_t map_start, uint64_t map_offset, uint64_t *ret);
/* The minors 6..15 of "3.N.M" strings in .rodata (PY_VERSION, often the tail of a path):
 * a bit per minor, and the micro of the last one seen per minor. */
int py_elf_version_strings(struct py_elf *e, uint32_t *ret_minors, unsigned ret_micro[16]);

/* ---- memory ---- */

/* Reads all of len at addr, or fails (-EFAULT for a partial read). */
typedef int (*py_read_fn)(void *ud, uint64_t addr, void *buf, size_t len);

struct py_mem {
	py_read_fn read;
	void *ud;
	uint64_t deadline_ns; /* CLOCK_MONOTONIC; 0: none */
	struct py_counts *counts;
	int err; /* the first error that ends everything: -ETIME, -ESRCH, -EPERM */
};

/* A new read: its time budget starts now (0: none), what ended the last one is forgotten. */
void py_mem_begin(struct py_mem *m, uint64_t budget_ns);

/* process_vm_readv of *(uint32_t *)ud. */
int py_read_process(void *ud, uint64_t addr, void *buf, size_t len);

/* 0, -EFAULT (not mapped, partial), -ETIME (budget spent), -ESRCH/-EPERM (sticky: m->err). */
int py_mem_read(struct py_mem *m, uint64_t addr, void *buf, size_t len);
/* As many bytes as can be read from addr up to len (at least min): for heads of objects
 * whose size is not known yet, which may end just before an unmapped page. */
int py_mem_read_upto(struct py_mem *m, uint64_t addr, void *buf, size_t min, size_t len, size_t *ret_len);
int py_mem_ptr(struct py_mem *m, uint64_t addr, uint64_t *ret);
bool py_mem_expired(struct py_mem *m);

/* A field of a buffer read from the process (offsets from the table: always within). */
static inline uint64_t py_u64(const uint8_t *b, uint32_t off)
{
	uint64_t v;

	__builtin_memcpy(&v, b + off, sizeof(v));
	return v;
}

static inline uint32_t py_u32(const uint8_t *b, uint32_t off)
{
	uint32_t v;

	__builtin_memcpy(&v, b + off, sizeof(v));
	return v;
}

/* A plausible user-space object address: non-zero, 8-aligned, below the x86-64/arm64 user limit. */
static inline bool py_ptr_ok(uint64_t p)
{
	return p && !(p & 7) && p < (1ull << 56);
}

/* The str object at addr as UTF-8 into buf (NUL-terminated, at most len - 1 bytes; longer
 * ones end in "..."). -EBADMSG: not a str of this interpreter. */
int py_read_str(struct py_mem *m, const struct py_target *t, uint64_t addr, char *buf, size_t len);
/* The bytes object at addr, malloc'ed into *ret. -EBADMSG: not bytes; -E2BIG: over max. */
int py_read_bytes(struct py_mem *m, const struct py_target *t, uint64_t addr, size_t max, uint8_t **ret,
		  size_t *ret_len);

/* ---- line tables ---- */

/*
 * The line of the instruction at offset lasti (in code units from 3.10, bytes before; -1:
 * none started yet) from a code object's line table. 0 when the table says the instruction
 * has no line, or is malformed.
 */
uint32_t py_line_for(enum py_lines_kind kind, const uint8_t *table, size_t len, uint32_t first_line,
		     int64_t lasti);

/* ---- code objects ---- */

/* The fields of a code object that tell it from another one at the same address. */
struct py_code_check {
	uint64_t type, filename, name, qualname, linetable;
	uint32_t first_line;
	uint64_t n_units; /* 3.11+: Py_SIZE */
};

/* What a code object says, kept (and shared by frames) while it is referenced. */
struct py_code {
	uint64_t addr;
	struct py_code_check check;
	char *function, *file; /* "?" when unreadable */
	uint32_t first_line;
	int32_t firsttraceable; /* 3.11+ */
	uint8_t *lines; /* the line table; NULL: not read (lines are 0) */
	size_t n_lines;
	unsigned refs;
};

struct py_code_cache {
	struct py_code **slots; /* open addressing by address */
	size_t cap, n;
};

void py_code_cache_done(struct py_code_cache *c);
/* Fills *ret from a code object's head (co_size bytes at addr, read by the caller). */
void py_code_check_from(const struct py_target *t, const uint8_t *head, struct py_code_check *ret);
/*
 * The code object at addr whose head is head: the cached entry when its check still matches
 * (a hit), else read anew (a stale entry is dropped first). A reference the caller puts
 * with py_code_put. -EBADMSG: not a code object of this interpreter.
 */
int py_code_get(struct py_code_cache *c, struct py_mem *m, const struct py_target *t, uint64_t addr,
		const uint8_t *head, struct py_code **ret);
void py_code_put(struct py_code *code);
/* A copy of its own (refs 1), for another thread than the cache's; NULL: no memory. */
struct py_code *py_code_copy(const struct py_code *code);
/* The same object, read twice: same address, same check, same strings. */
bool py_code_same(const struct py_code *a, const struct py_code *b);

/*
 * The kernel walk's pairs as frames (bpfwalk.c), with the code objects from lookup: a
 * reference (put after use), or < 0 with *why.
 */
typedef int (*py_code_lookup_fn)(void *ud, uint64_t addr, struct py_code **ret, const char **why);
int py_stack_from_pairs(const struct py_target *t, py_code_lookup_fn lookup, void *ud, const uint64_t *pairs,
			size_t n, struct py_stack_frame *out, size_t *ret_n, const char **ret_why);
/* The line for lasti (units from 3.10, bytes before). */
uint32_t py_code_line(const struct py_target *t, const struct py_code *code, int64_t lasti);

/* ---- threads and frames ---- */

struct py_frame {
	struct py_code *code;
	uint32_t line; /* 0: not known */
	bool eval_entry; /* the outermost frame of one run of the eval loop */
};

struct py_thread {
	uint32_t tid; /* 0: not known */
	uint64_t thread_id;
	int64_t interp_id;
	bool gil;
	bool truncated;
	const char *error; /* static text: why the stack stops early; NULL */
	struct py_frame *frames; /* innermost first */
	size_t n_frames;
};

struct py_dump {
	uint64_t ts_ns, duration_ns; /* CLOCK_BOOTTIME at the start, and how long it took */
	struct py_thread *threads;
	size_t n_threads;
	bool threads_truncated; /* more thread states than max_threads */
	const char *error; /* static text: why no (more) threads could be read; NULL */
};

void py_dump_done(struct py_dump *d);
/* Every thread state of every interpreter, within lim. -ENOMEM only: what failed is in d. */
int py_walk(struct py_code_cache *c, struct py_mem *m, const struct py_target *t, const struct py_limits *lim,
	    struct py_dump *d);

/* ---- the whole ---- */

struct py_proc {
	struct py_target target;
	enum py_kind kind;
	char why[PY_REASON_MAX];
	struct py_mem mem;
	struct py_counts counts;
	struct py_code_cache cache;
	struct py_code *last; /* py_proc_resolve's, when the cache would not take it */
};

#endif
