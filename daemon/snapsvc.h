/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The snapshot service: everything a snapshot takes, in one place. In the loop it drains
 * the rings once and collects what lives in the kernel (syscall histograms, drops); a
 * forked job (snapjob.c) then symbolizes and builds the .hps from the recorder as it was
 * at the fork, and runs the caller's next step on it, so the loop keeps draining.
 */
#ifndef HOSTPROF_SNAPSVC_H
#define HOSTPROF_SNAPSVC_H

#include <stddef.h>
#include <stdint.h>

#include "counts.h"
#include "recorder.h"
#include "snapjob.h"
#include "snapshot.pb-c.h"

/* The CPU time a snapshot job may use (a 32 MiB recorder, every format: ~2 s here). */
#define SNAPSVC_CPU_LIMIT_S 30

struct capture;
struct hp_buf;
struct loop;
struct symbolizer;
struct snapsvc;

/* The settings a snapshot records (what was captured, at which thresholds). */
struct snapsvc_params {
	uint64_t syscall_min_ns, offcpu_min_ns;
	uint32_t sample_hz;
	uint64_t irq_min_ns, lock_min_ns;
	uint64_t gil_min_ns;
	/* dispatch_threads: recorded in each snapshot, and the threads whose CPUs a job leaves */
	char dispatch_threads[HP_MAX_GLOBS][16];
	size_t n_dispatch_threads;
	bool python; /* read a CPython process's Python stacks at the build (the `python` setting) */
};

struct snapshot_req {
	const struct proc_rec *p;
	uint64_t window_ns; /* 0: all the history kept */
	uint64_t end_ns;    /* 0: now, or when the process exited */
	const char *reason; /* NULL: "request" */
	bool hide_kernel_addresses; /* for a peer that is not root: no absolute kernel address */
	Hostprof__Marker *const *markers;
	size_t n_markers;
	uint64_t python_instant; /* the Python stacks read then (snapsvc_python_instant); 0: at the build */
};

/* In the job's child: what to do with the snapshot built (write files, frame it for a
 * client); whatever goes into out comes back to the done function. The hps is
 * SNAPSVC_ROOM bytes into a malloc'ed buffer, which then may take as out's own, with a
 * header of its own in those bytes (out->data = hps - SNAPSVC_ROOM), rather than copy it. */
#define SNAPSVC_ROOM 8
typedef int (*snapsvc_then_fn)(void *arg, uint8_t *hps, size_t len, uint64_t events, struct hp_buf *out);

struct worker;

/* symbolizer may be NULL (frames stay addresses). NULL + errno. */
struct snapsvc *snapsvc_new(struct loop *l, struct capture *c, struct recorder *rec, struct symbolizer *sym);
void snapsvc_free(struct snapsvc *svc);
void snapsvc_set_params(struct snapsvc *svc, const struct snapsvc_params *params);
/* The names of the kernel-walked Python stacks read while the processes lived (the loop's). */
struct py_names;
void snapsvc_set_py_names(struct snapsvc *svc, const struct py_names *names);
/* Where Python stacks are read at an instant before the snapshot (snapsvc_python_instant). */
int snapsvc_set_worker(struct snapsvc *svc, struct worker *w);
/* Read pid's Python stacks now, on the worker, for the snapshot whose req names *ret_id
 * (a trigger firing: its snapshot is built `after` it). -ENOTSUP: no worker, or the python
 * setting is off; -EAGAIN: the worker is busy; the snapshot then reads them at its build. */
int snapsvc_python_instant(struct snapsvc *svc, uint32_t pid, uint64_t *ret_id);

/* Bring the recorder up to date with the rings (a process that just appeared). */
void snapsvc_catch_up(struct snapsvc *svc);
/* Drops by cause, as snapshots carry them. */
size_t snapsvc_drops(const struct snapsvc *svc, struct drop_count ret[HP_DROP_CAUSES]);

/* Build req's snapshot in a job, then `then` in the child, then done in the loop. The
 * req (and its markers) must stay valid until done is called. */
int snapsvc_start(struct snapsvc *svc, const struct snapshot_req *req, snapsvc_then_fn then, void *arg,
		  snapjob_done_fn done, void *ud, struct snapjob **ret);
/* Each tick: the running jobs off the CPUs the dispatch threads may use now (a thread's
 * affinity changed since a job was forked). */
void snapsvc_tick(struct snapsvc *svc);
/* The caller is gone: done will not be called; the job finishes on its own. */
void snapsvc_cancel(struct snapjob *job);
/* Build it here and now, for a caller outside the loop (--record). */
int snapsvc_build(struct snapsvc *svc, const struct snapshot_req *req, uint8_t **ret_data, size_t *ret_len,
		  uint64_t *ret_events);

#endif
