/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The GIL of watched CPython processes: found on the worker (daemon/python.h: py_proc_gil)
 * and handed to the kernel side (capture_gil_set; bpf/gil.bpf.h tells GIL waits by it), its
 * status kept with the process's history (proc_rec.gil) for the snapshot's GilTable; and,
 * for each GIL wait record drained, the holder's Python stack read on the worker, at most
 * one read per process at a time (a wait drained while one is going gets none: counted in
 * proc_rec.gil.missed). Such a stack is read after the wait, when the record drains, and the
 * snapshot says so (GilStack.when, lag_ns).
 */
#ifndef HOSTPROF_GILWATCH_H
#define HOSTPROF_GILWATCH_H

#include <stdbool.h>

#include "hostprof.h"

struct capture;
struct recorder;
struct worker;
struct gilwatch;

struct gilwatch *gilwatch_new(struct capture *c, struct recorder *rec, struct worker *w);
void gilwatch_free(struct gilwatch *g);
/* Off (the python setting): nothing new is looked at or read; NULL g: nothing. */
void gilwatch_set_enabled(struct gilwatch *g, bool on);
/* At every tick of the loop: look at processes watched since, forget those gone. */
void gilwatch_tick(struct gilwatch *g, uint64_t now);
/* Every record drained, after the recorder filed it. */
void gilwatch_on_record(struct gilwatch *g, const struct hp_hdr *hdr);

#endif
