/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * A reader's view of a decoded snapshot: every thread it names, by tid, with its pid and
 * name; the row of a process; and the display name of every frame. Built once from the
 * snapshot by each of its readers (the exporters and the report), so that all of them
 * name a thread the same way.
 *
 * Snapshot.threads lists the tasks of the window's switches and the process's own
 * threads, but a table can name others (a waker, a fork's child, a task that only ran an
 * interrupt...), so the view completes it from the tables. The threads are every tid of
 * Snapshot.threads, the markers and every tid column of the tables, but 0 (the idle task,
 * or no thread at all). A thread's pid and name come from its row in Snapshot.threads (a
 * row with Snapshot.pid first when a tid is listed twice, else the first); where that row
 * leaves one unknown (pid 0, name ""), from the first table row that knows it:
 *   - the pid from the switches, wakeups (the woken and the waker), syscalls, off-CPU
 *     intervals (the thread and its waker), migrations, samples, task events (the task
 *     and a fork's child), reclaims, lock waits, page faults, interrupts and syscall
 *     histograms, in that order;
 *   - the name from the switches (prev, then next, row by row), then the wakers of the
 *     wakeups, the wakers of the off-CPU intervals, and the children of forks.
 */
#ifndef HOSTPROF_SNAPVIEW_H
#define HOSTPROF_SNAPVIEW_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "snapshot.pb-c.h"

struct snapview_thread {
	uint32_t tid;
	uint32_t pid; /* 0: not known */
	const char *comm; /* "": not known; points into the snapshot */
};

struct snapview {
	const Hostprof__Snapshot *snap;
	struct snapview_thread *threads; /* by tid, each once */
	size_t n_threads;
	uint32_t *slots; /* open addressing by tid: its position in threads + 1, 0: empty */
	size_t n_slots; /* a power of 2, at least twice n_threads */
};

/* The snapshot must have passed hps_validate(); it must outlive the view. */
int snapview_init(const Hostprof__Snapshot *snap, struct snapview *ret);
void snapview_free(struct snapview *v);

/* The position of tid in v->threads, or -ENOENT (always for tid 0). */
ssize_t snapview_index(const struct snapview *v, uint32_t tid);
/* The thread's name, "" when not known. */
const char *snapview_comm(const struct snapview *v, uint32_t tid);
/* The first row of Snapshot.processes with this pid, or NULL. */
const Hostprof__Process *snapview_process(const struct snapview *v, uint32_t pid);

/*
 * The display name of every frame, by frame index: Frame.function when it is resolved,
 * else "FILE+0xOFFSET" (the basename of the mapping's file and the frame's
 * module_offset), else "[unknown 0xADDRESS]" when the frame has no mapping. name[i]
 * points into the snapshot or into memory owned here; valid until frame_names_free().
 */
struct frame_names {
	const char **name;
	char **owned;
	size_t n, n_owned;
};

int frame_names_init(const Hostprof__Snapshot *snap, struct frame_names *ret);
/* A Python frame (Frame.python) as every format shows it: "train_step (train.py:42)". */
int python_frame_text(const Hostprof__Frame *f, char *buf, size_t len);
void frame_names_free(struct frame_names *fn);

/* The display name of a function inlined at a frame (Frame.inlined): "[inlined]" when DWARF named none. */
const char *snapview_inlined_name(const Hostprof__InlinedFrame *in);
/*
 * Where a frame is in the source, as the report shows it: the last two parts of the path
 * and the line, "Python/ceval.c:1234" (the line left out when 0). NULL, and buf left alone,
 * when there is no file.
 */
const char *snapview_source(const char *file, uint32_t line, char *buf, size_t len);

#endif
