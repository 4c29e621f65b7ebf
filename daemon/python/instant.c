// SPDX-License-Identifier: GPL-2.0-only
/*
 * Python stacks read at an instant that comes before the snapshot, such as a trigger firing
 * (the snapshot itself is built `after` later): the read goes to the worker at once, and its
 * result waits here, by id, until the snapshot claims it or it is pushed out by newer ones.
 *
 * Threads: py_instants_* run in the loop; the read runs on the worker thread and touches only
 * its own job (the pid it reads, the state it makes). A job still out when the table is freed
 * is orphaned: its done frees what it made.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "macro.h"
#include "worker.h"

#define INSTANTS_MAX 16
#define INSTANT_BUDGET_NS (PY_BUDGET_NS_DEFAULT + 500 * NSEC_PER_MSEC) /* the read's, and its discovery */

struct instant_job;

struct instant {
	uint64_t id;
	uint32_t pid;
	struct instant_job *job; /* on the worker; NULL once done */
	Hostprof__PythonState *state; /* done: what was read (NULL: nothing to show) */
	int err; /* done: the read failed, or ran out of its budget */
};

struct py_instants {
	struct worker *worker;
	struct instant v[INSTANTS_MAX];
	size_t n;
	uint64_t next_id;
};

struct instant_job {
	struct py_instants *owner; /* NULL: orphaned */
	uint64_t id;
	uint32_t pid;
	Hostprof__PythonState *state;
};

struct py_instants *py_instants_new(struct worker *w)
{
	struct py_instants *pi = calloc(1, sizeof(*pi));

	if (!pi)
		return NULL;
	pi->worker = w;
	pi->next_id = 1;
	return pi;
}

static void instant_drop(struct py_instants *pi, size_t i)
{
	if (pi->v[i].job)
		pi->v[i].job->owner = NULL;
	python_state_free(pi->v[i].state);
	memmove(&pi->v[i], &pi->v[i + 1], (pi->n - i - 1) * sizeof(pi->v[0]));
	pi->n--;
}

void py_instants_free(struct py_instants *pi)
{
	if (!pi)
		return;
	while (pi->n)
		instant_drop(pi, pi->n - 1);
	free(pi);
}

/* On the worker thread. */
static int instant_work(void *arg)
{
	struct instant_job *job = arg;

	return python_read_state(job->pid, NULL, &job->state);
}

/* In the loop. */
static void instant_done(void *arg, int r)
{
	struct instant_job *job = arg;
	struct py_instants *pi = job->owner;

	for (size_t i = 0; pi && i < pi->n; i++) {
		if (pi->v[i].id != job->id)
			continue;
		pi->v[i].job = NULL;
		pi->v[i].err = r < 0 ? r : 0;
		if (r >= 0)
			pi->v[i].state = TAKE_PTR(job->state);
		break;
	}
	python_state_free(job->state);
	free(job);
}

int py_instants_read(struct py_instants *pi, uint32_t pid, uint64_t *ret_id)
{
	struct instant_job *job;
	int r;

	if (!pi->worker)
		return -ENOTSUP;
	job = calloc(1, sizeof(*job));
	if (!job)
		return -ENOMEM;
	*job = (struct instant_job){ .owner = pi, .id = pi->next_id, .pid = pid };
	if (pi->n == INSTANTS_MAX)
		instant_drop(pi, 0); /* the oldest, never claimed */
	r = worker_submit(pi->worker, INSTANT_BUDGET_NS, instant_work, instant_done, job);
	if (r < 0) {
		free(job);
		return r;
	}
	pi->v[pi->n++] = (struct instant){ .id = job->id, .pid = pid, .job = job };
	*ret_id = pi->next_id++;
	return 0;
}

int py_instants_claim(struct py_instants *pi, uint64_t id, Hostprof__PythonState **ret)
{
	for (size_t i = 0; pi && i < pi->n; i++) {
		int r;

		if (pi->v[i].id != id)
			continue;
		if (pi->v[i].job) {
			instant_drop(pi, i); /* still on the worker: the caller reads at its own instant */
			return -EINPROGRESS;
		}
		r = pi->v[i].err;
		*ret = TAKE_PTR(pi->v[i].state);
		instant_drop(pi, i);
		return r;
	}
	return -ENOENT;
}
