/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Python stacks of CPython 3.8-3.13 processes, read from their memory.
 *
 * A process is CPython when its executable or a mapped libpython defines _PyRuntime in
 * .dynsym (Debian's stripped build too). Its version comes from Py_Version (3.11+), the
 * libpython file name, or the PY_VERSION string in .rodata; the layouts of that version from
 * a table taken from CPython's headers, checked against the interpreter's own
 * _Py_DebugOffsets from 3.13. Each thread state of each interpreter (not only the GIL holder)
 * gives its native tid and its frames, innermost first; each frame's code object gives the
 * qualified name, the file, and the current line through its line table.
 *
 * Memory is read with process_vm_readv (CAP_SYS_PTRACE): the process is never stopped, so a
 * thread that runs while it is read may show a torn innermost frame, which the checks then
 * catch (every object's type is compared with the interpreter's own type objects). Every read
 * is bounded, every chain has a limit, and the whole read has a time budget. What cannot be
 * read is said ("python stack unreadable", and why), never guessed: the process keeps its
 * native stacks.
 *
 * This reads memory and files the watched process controls: call it off the event loop (a
 * snapshot job's child, the worker). The code objects are cached per py_proc, and each cached
 * entry is checked against the object's current fields before it is used again.
 */
#ifndef HOSTPROF_PYTHON_H
#define HOSTPROF_PYTHON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "snapshot.pb-c.h"

struct py_limits {
	uint64_t budget_ns; /* the whole read, from its start */
	uint32_t max_threads; /* thread states, all interpreters */
	uint32_t max_frames; /* per thread */
};

#define PY_BUDGET_NS_DEFAULT (500 * 1000 * 1000ull)
#define PY_THREADS_MAX_DEFAULT 4096
#define PY_FRAMES_MAX_DEFAULT 1024 /* above CPython's default recursion limit (1000) */

/* Counted per process over its py_proc's life. */
struct py_counts {
	uint64_t reads, bytes_read, read_failures;
	uint64_t code_hits, code_misses, code_stale; /* stale: a cached code object had changed */
	uint64_t code_unreadable; /* a frame's code pointer was not a code object */
	uint64_t stacks_unreadable; /* thread stacks that stopped at something unreadable */
	uint64_t lines_unknown; /* frames whose line could not be found */
};

/* PythonState.status (proto/snapshot.proto) */
#define PY_STATUS_OK 1
#define PY_STATUS_PARTIAL 2 /* some threads' stacks, or some threads, could not be read */
#define PY_STATUS_UNREADABLE 3

struct py_proc;

/*
 * Looks at pid: its maps, the ELF files of its executable and libpython, and its runtime.
 * Always makes a py_proc (NULL + errno only for ENOMEM); py_proc_kind() says what it found.
 */
struct py_proc *py_proc_open(uint32_t pid);
void py_proc_free(struct py_proc *p);

/* 0: not Python (nothing to show); PY_STATUS_UNREADABLE with why; PY_STATUS_OK: CPython. */
int py_proc_kind(const struct py_proc *p, const char **ret_why);
/* "3.11.7", and the file with _PyRuntime, once it is CPython */
const char *py_proc_version(const struct py_proc *p);
const char *py_proc_binary(const struct py_proc *p);
const struct py_counts *py_proc_counts(const struct py_proc *p);

/*
 * Where a BPF walk's (code object, instruction offset) pairs come in: the function, file and
 * line of code object `code` at offset lasti (what the frame holds: from 3.11 the instruction
 * pointer minus the code's first instruction in code units; 3.10 f_lasti; 3.8/3.9 f_lasti in
 * bytes). The cache is checked against the object's current fields first. Strings are valid
 * until the next call on p. -EBADMSG: not a code object (any more); -ESRCH: gone.
 */
struct py_location {
	const char *function, *file;
	uint32_t line, first_line;
};
int py_proc_resolve(struct py_proc *p, uint64_t code, int64_t lasti, struct py_location *ret);

/*
 * Where the GIL is, for the kernel side to tell a futex wait on it from any other
 * (bpf/hostprof.h's hp_gil_proc): the interpreter's struct _gil_runtime_state (of the main
 * interpreter from 3.12, where each interpreter points at its own or the shared one), whose
 * condition variables and mutexes hold the futex words a thread waits on for the GIL, and
 * how its last holder's native tid is found: last_holder -> PyThreadState ->
 * native_thread_id (3.11+), or -> thread_id (a pthread_t) -> glibc's struct pthread's tid.
 */
struct py_gil {
	uint64_t start, end; /* [start, end) */
	uint64_t holder, locked; /* &last_holder (a PyThreadState *), &locked (int) */
	uint64_t switch_number; /* &switch_number (unsigned long): +1 each time it changes hands */
	uint64_t cond_start, cond_end; /* its condition variable: a waiter woken there got its turn */
	uint64_t switch_start, switch_end; /* the switch condition: a dropper woken there saw it taken */
	int32_t ts_native_tid; /* offset of native_thread_id in PyThreadState; -1 */
	uint32_t ts_thread_id; /* offset of thread_id */
	int32_t pthread_tid; /* offset of tid in struct pthread where ts_native_tid is -1; else -1 */
};

/*
 * 0 and *ret; -ENOENT: the interpreter has no GIL (*ret_free_threaded: a free-threaded
 * build), or not yet (not initialized); -EBADMSG: not CPython, or not read (py_proc_kind says
 * why); -ESRCH: gone; -EFAULT: its runtime cannot be read; -ENOTSUP: 3.8-3.10 without a known
 * struct pthread layout (no holder tid).
 */
int py_proc_gil(struct py_proc *p, struct py_gil *ret, bool *ret_free_threaded);

/* The GIL's holder now: its native tid (0: not held). A user-space read of what the kernel
 * side reads at a wait's end; for tests and tools. */
int py_proc_gil_holder(struct py_proc *p, const struct py_gil *g, uint32_t *ret_tid);

/*
 * The kernel walk (bpf/python.bpf.h): what it needs of p, a CPython process (-EPROTO with
 * why: not one, or one it cannot walk); and the (code, instruction word) pairs of one of
 * its records, innermost first, as frames into out[n] (*ret_n of them, at most n; their
 * strings the caller's, py_stack_frames_free). -EBADMSG with *ret_why: a pair that is not
 * a code object of this interpreter (freed, reused, a torn walk): none of it is to be
 * trusted; -ESRCH: the process is gone; -ENOMEM.
 */
struct hp_py_proc;
struct py_stack_frame {
	uint64_t code;
	char *function, *file;
	uint32_t line, first_line;
	bool eval_entry; /* the outermost frame of one run of the eval loop */
};
int py_proc_bpf_info(struct py_proc *p, struct hp_py_proc *ret, char *why, size_t why_len);
int py_proc_resolve_stack(struct py_proc *p, const uint64_t *pairs, size_t n, struct py_stack_frame *out,
			  size_t *ret_n, const char **ret_why);
void py_stack_frames_free(struct py_stack_frame *f, size_t n);

/*
 * Names read while the process lives (names.c), so that its kernel-walked stacks resolve
 * after it exited. In the loop: py_names_watch (a CPython process whose stacks are
 * walked), py_names_note (each HP_EV_PYSTACK record drained), py_names_flush (each tick:
 * the addresses noted go to the worker), py_names_forget (its history is gone). In a
 * snapshot job: py_names_resolve_stack, the frames of a record at ts from the names
 * checked at or after ts (-ENOENT: not all of them read: ask the live process).
 */
struct py_names;
struct hp_pystack;
struct worker;
struct py_names_stats {
	uint64_t processes, names; /* now */
	uint64_t jobs, checked; /* code objects read on the worker */
	uint64_t unreadable; /* addresses that were not code objects when read */
	uint64_t failed, dropped; /* jobs that failed; addresses not read (queues full) */
};
struct py_names *py_names_new(void);
void py_names_free(struct py_names *pn);
int py_names_watch(struct py_names *pn, uint32_t pid, uint64_t start_time);
void py_names_forget(struct py_names *pn, uint32_t pid);
void py_names_note(struct py_names *pn, const struct hp_pystack *e);
int py_names_flush(struct py_names *pn, struct worker *w);
void py_names_get_stats(const struct py_names *pn, struct py_names_stats *ret);
int py_names_resolve_stack(const struct py_names *pn, uint32_t pid, uint64_t ts, const uint64_t *pairs, size_t n,
			   struct py_stack_frame *out, size_t *ret_n, const char **ret_why);

/*
 * Every thread's Python stack at this instant, as the snapshot's message: *ret is NULL when
 * the process is not Python at all, else a PythonState whose status says what could be read.
 * -ENOMEM only. Free it with python_state_free.
 */
int py_proc_read_state(struct py_proc *p, const struct py_limits *lim, Hostprof__PythonState **ret);
void python_state_free(Hostprof__PythonState *st);

/* The same for a pid, with a py_proc of its own (a snapshot job). */
int python_read_state(uint32_t pid, const struct py_limits *lim, Hostprof__PythonState **ret);

/*
 * Reads at an instant before the snapshot (a trigger firing; the snapshot is built `after`
 * it), on the worker, kept by id until the snapshot claims them (the INSTANTS_MAX newest).
 * In the loop. py_instants_read: 0 and *ret_id, or -EAGAIN (the worker's queue is full),
 * -ENOTSUP (no worker), -ENOMEM. py_instants_claim: 0 and *ret (NULL: not Python), or
 * -EINPROGRESS (not done yet), -ENOENT (no such id, or pushed out), the read's error
 * (-ETIME: over its budget); either way the id is done with.
 */
struct worker;
struct py_instants;
struct py_instants *py_instants_new(struct worker *w);
void py_instants_free(struct py_instants *pi);
int py_instants_read(struct py_instants *pi, uint32_t pid, uint64_t *ret_id);
int py_instants_claim(struct py_instants *pi, uint64_t id, Hostprof__PythonState **ret);

#endif
