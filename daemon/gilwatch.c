// SPDX-License-Identifier: GPL-2.0-only
/*
 * The GIL of watched CPython processes (gilwatch.h). Each live watched process gets an
 * entry; its py_proc (the Python reader, with its code object cache) lives on the worker
 * while a job has it, in the entry otherwise, so only one thread ever uses it.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "capture.h"
#include "gilwatch.h"
#include "log.h"
#include "macro.h"
#include "python.h"
#include "recorder.h"
#include "worker.h"

#define GIL_LOOK_BUDGET_NS (2 * NSEC_PER_SEC)
#define GIL_READ_BUDGET_NS (200 * NSEC_PER_MSEC)
#define GIL_LOOK_TRIES 10 /* ticks a CPython process that has no interpreter yet is looked at again */
#define GIL_PENDING_MAX 1024 /* waits whose holder's stack is to be read, per process */

/* A recorded wait whose holder's stack is to be read. */
struct gil_wait_ref {
	uint64_t wait_ts, wait_end;
	uint32_t tid, holder;
};

struct gil_proc {
	uint32_t pid;
	uint64_t start_time;
	struct py_proc *py; /* NULL while a job has it */
	bool busy, done, in_kernel;
	unsigned tries;
	/* waits drained while a read was going: the next read is for them */
	struct gil_wait_ref *pending;
	size_t n_pending;
};

struct gilwatch {
	struct capture *capture;
	struct recorder *recorder;
	struct worker *worker;
	struct gil_proc *v;
	size_t n, cap;
	bool enabled;
};

struct gil_job {
	struct gilwatch *g; /* NULL: its process was forgotten meanwhile */
	uint32_t pid;
	uint64_t start_time;
	struct py_proc *py;
	/* a look */
	int r;
	bool free_threaded;
	struct py_gil gil;
	char version[16], why[128];
	/* the holders' stacks of these waits: one read of every thread serves them all */
	bool read;
	struct gil_wait_ref *waits;
	size_t n_waits;
	struct gil_stack *stacks; /* [n_waits]; n_frames 0: its holder's not read */
};

struct gilwatch *gilwatch_new(struct capture *c, struct recorder *rec, struct worker *w)
{
	struct gilwatch *g = calloc(1, sizeof(*g));

	if (!g)
		return NULL;
	g->capture = c;
	g->recorder = rec;
	g->worker = w;
	g->enabled = true;
	return g;
}

void gilwatch_set_enabled(struct gilwatch *g, bool on)
{
	if (g)
		g->enabled = on;
}

void gilwatch_free(struct gilwatch *g)
{
	if (!g)
		return;
	for (size_t i = 0; i < g->n; i++) {
		py_proc_free(g->v[i].py);
		free(g->v[i].pending);
	}
	free(g->v);
	free(g);
}

static struct gil_proc *entry_of(struct gilwatch *g, uint32_t pid)
{
	for (size_t i = 0; i < g->n; i++)
		if (g->v[i].pid == pid)
			return &g->v[i];
	return NULL;
}

static struct proc_rec *live_proc(struct gilwatch *g, uint32_t pid, uint64_t start_time)
{
	struct proc_rec *p = recorder_find_live(g->recorder, pid);

	return p && p->info.start_time == start_time ? p : NULL;
}

static uint64_t boottime_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_BOOTTIME, &ts);
	return (uint64_t)ts.tv_sec * NSEC_PER_SEC + ts.tv_nsec;
}

/* On the worker. */
static int look_work(void *arg)
{
	struct gil_job *job = arg;
	const char *why = "";

	if (!job->py) {
		job->py = py_proc_open(job->pid);
		if (!job->py)
			return -errno;
	}
	job->r = py_proc_gil(job->py, &job->gil, &job->free_threaded);
	(void)py_proc_kind(job->py, &why);
	snprintf(job->why, sizeof(job->why), "%s", why);
	snprintf(job->version, sizeof(job->version), "%s", py_proc_version(job->py));
	return 0;
}

static void copy_frame(struct gil_frame *to, const Hostprof__PythonFrame *fr)
{
	to->function = strdup(fr->function ? fr->function : "");
	to->file = strdup(fr->file ? fr->file : "");
	to->line = fr->line;
	to->first_line = fr->first_line;
}

/* On the worker: every thread's stack (one read), each wait's holder's kept. */
static int read_work(void *arg)
{
	struct py_limits lim = { .budget_ns = GIL_READ_BUDGET_NS / 2, .max_threads = PY_THREADS_MAX_DEFAULT,
				 .max_frames = GIL_FRAMES_MAX };
	struct gil_job *job = arg;
	Hostprof__PythonState *st = NULL;
	uint64_t now;
	int r;

	r = py_proc_read_state(job->py, &lim, &st);
	if (r < 0 || !st)
		return r < 0 ? r : -ESRCH;
	now = boottime_ns();
	for (size_t w = 0; w < job->n_waits; w++) {
		struct gil_stack *gs = &job->stacks[w];

		*gs = (struct gil_stack){ .wait_ts = job->waits[w].wait_ts, .tid = job->waits[w].tid };
		gs->lag_ns = now > job->waits[w].wait_end ? now - job->waits[w].wait_end : 0;
		for (size_t i = 0; i < st->n_threads; i++) {
			const Hostprof__PythonThread *t = st->threads[i];

			if (t->tid != job->waits[w].holder)
				continue;
			for (size_t k = 0; k < t->n_frames && gs->n_frames < GIL_FRAMES_MAX; k++)
				if (t->frames[k] < st->n_frames)
					copy_frame(&gs->frames[gs->n_frames++], st->frames[t->frames[k]]);
			break;
		}
	}
	python_state_free(st);
	return 0;
}

static void look_done(struct gil_job *job, int r, struct gil_proc *e, struct proc_rec *p)
{
	struct hp_gil_proc hp;

	e->tries++;
	if (r < 0 || !p)
		goto again;
	snprintf(p->gil.version, sizeof(p->gil.version), "%s", job->version);
	if (job->free_threaded) {
		p->gil.status = GIL_STATUS_FREE_THREADED;
		snprintf(p->gil.reason, sizeof(p->gil.reason), "a free-threaded build: it has no GIL");
		e->done = true;
		return;
	}
	if (job->r == -EBADMSG) {
		/* not CPython, or not one that is read: no table (unless it says why) */
		if (e->py && py_proc_kind(e->py, NULL) == PY_STATUS_UNREADABLE) {
			p->gil.status = GIL_STATUS_UNWATCHED;
			snprintf(p->gil.reason, sizeof(p->gil.reason), "%s", job->why);
		}
		e->done = true;
		return;
	}
	if (job->r == -ENOTSUP) {
		p->gil.status = GIL_STATUS_UNWATCHED;
		snprintf(p->gil.reason, sizeof(p->gil.reason),
			 "CPython %s before 3.11 without glibc's struct pthread layout: no holder's tid", job->version);
		e->done = true;
		return;
	}
	if (job->r < 0)
		goto again;
	hp = (struct hp_gil_proc){
		.start = job->gil.start,
		.end = job->gil.end,
		.holder = job->gil.holder,
		.switch_number = job->gil.switch_number,
		.cond_start = job->gil.cond_start,
		.cond_end = job->gil.cond_end,
		.switch_start = job->gil.switch_start,
		.switch_end = job->gil.switch_end,
		.ts_native_tid = job->gil.ts_native_tid,
		.ts_thread_id = job->gil.ts_thread_id,
		.pthread_tid = job->gil.pthread_tid,
	};
	r = capture_gil_set(job->g->capture, job->pid, &hp);
	if (r < 0) {
		p->gil.status = GIL_STATUS_UNWATCHED;
		snprintf(p->gil.reason, sizeof(p->gil.reason), "the kernel side did not take it (%s)", strerror(-r));
		e->done = true;
		return;
	}
	e->in_kernel = true;
	e->done = true;
	p->gil.status = GIL_STATUS_WATCHED;
	p->gil.reason[0] = 0;
	p->gil.since_ns = boottime_ns();
	log_info("pid %u: CPython %s, its GIL watched", job->pid, job->version);
	return;
again:
	if (e->tries >= GIL_LOOK_TRIES) {
		e->done = true;
		if (p && e->py && py_proc_kind(e->py, NULL) == PY_STATUS_OK) {
			p->gil.status = GIL_STATUS_UNWATCHED;
			snprintf(p->gil.reason, sizeof(p->gil.reason), "its GIL was not found (%s)",
				 strerror(-(job->r < 0 ? job->r : r)));
		}
	}
}

static void read_pending(struct gilwatch *g, struct gil_proc *e, struct proc_rec *p);

/* In the loop. */
static void job_done(void *arg, int r)
{
	struct gil_job *job = arg;
	struct gil_proc *e = job->g ? entry_of(job->g, job->pid) : NULL;
	struct proc_rec *p = job->g ? live_proc(job->g, job->pid, job->start_time) : NULL;

	if (!e || e->start_time != job->start_time) {
		py_proc_free(job->py);
		goto out;
	}
	e->busy = false;
	e->py = job->py;
	if (!job->read) {
		look_done(job, r, e, p);
	} else if (p) {
		for (size_t w = 0; w < job->n_waits; w++) {
			if (r >= 0 && job->stacks[w].n_frames)
				(void)gil_state_add_stack(&p->gil, &job->stacks[w]);
			else
				p->gil.missed++;
		}
		if (e->n_pending)
			read_pending(job->g, e, p);
	}
out:
	for (size_t w = 0; job->stacks && w < job->n_waits; w++)
		for (uint32_t i = 0; i < job->stacks[w].n_frames; i++) {
			free(job->stacks[w].frames[i].function);
			free(job->stacks[w].frames[i].file);
		}
	free(job->stacks);
	free(job->waits);
	free(job);
}

static int submit(struct gilwatch *g, struct gil_proc *e, struct gil_job *job, worker_work_fn work, uint64_t budget)
{
	int r;

	job->g = g;
	job->pid = e->pid;
	job->start_time = e->start_time;
	job->py = e->py;
	r = worker_submit(g->worker, budget, work, job_done, job);
	if (r < 0)
		return r;
	e->py = NULL;
	e->busy = true;
	return 0;
}

/* A read for the waits pending (they are the job's from here on, read or missed). */
static void read_pending(struct gilwatch *g, struct gil_proc *e, struct proc_rec *p)
{
	struct gil_job *job = calloc(1, sizeof(*job));
	size_t n = e->n_pending;

	if (job) {
		job->waits = malloc(n * sizeof(*job->waits));
		job->stacks = calloc(n, sizeof(*job->stacks));
	}
	if (!job || !job->waits || !job->stacks || !e->py) {
		if (job) {
			free(job->waits);
			free(job->stacks);
		}
		free(job);
		p->gil.missed += n;
		e->n_pending = 0;
		return;
	}
	memcpy(job->waits, e->pending, n * sizeof(*job->waits));
	job->n_waits = n;
	job->read = true;
	e->n_pending = 0;
	if (submit(g, e, job, read_work, GIL_READ_BUDGET_NS) < 0) {
		free(job->waits);
		free(job->stacks);
		free(job);
		p->gil.missed += n;
	}
}

static void forget(struct gilwatch *g, size_t i)
{
	struct gil_proc *e = &g->v[i];

	if (e->in_kernel)
		capture_gil_clear(g->capture, e->pid);
	py_proc_free(e->py); /* NULL while a job has it: job_done frees it then */
	free(e->pending);
	g->v[i] = g->v[--g->n];
}

void gilwatch_tick(struct gilwatch *g, uint64_t now)
{
	if (!g->worker)
		return;
	/* gone (or another process's pid now) */
	for (size_t i = 0; i < g->n;) {
		if (live_proc(g, g->v[i].pid, g->v[i].start_time))
			i++;
		else
			forget(g, i);
	}
	for (size_t i = 0; i < recorder_count(g->recorder); i++) {
		struct proc_rec *p = recorder_at(g->recorder, i);
		struct gil_proc *e;
		struct gil_job *job;

		if (p->exit_ns)
			continue;
		e = entry_of(g, p->info.pid);
		if (e && e->start_time != p->info.start_time) {
			forget(g, e - g->v);
			e = NULL;
		}
		if (!e) {
			if (g->n == g->cap) {
				size_t cap = g->cap ? g->cap * 2 : 16;
				struct gil_proc *v = realloc(g->v, cap * sizeof(*v));

				if (!v)
					return;
				g->v = v;
				g->cap = cap;
			}
			e = &g->v[g->n++];
			*e = (struct gil_proc){ .pid = p->info.pid, .start_time = p->info.start_time };
		}
		if (e->done || e->busy || !g->enabled)
			continue;
		job = calloc(1, sizeof(*job));
		if (!job)
			return;
		if (submit(g, e, job, look_work, GIL_LOOK_BUDGET_NS) < 0)
			free(job); /* the queue is full: the next tick */
	}
	(void)now;
}

void gilwatch_on_record(struct gilwatch *g, const struct hp_hdr *hdr)
{
	const struct hp_gil *e = (const void *)hdr;
	struct gil_proc *gp;
	struct proc_rec *p;

	if (hdr->type != HP_EV_GIL || !g->worker || !g->enabled)
		return;
	p = recorder_find_live(g->recorder, e->pid);
	gp = entry_of(g, e->pid);
	if (!p || !gp || gp->start_time != p->info.start_time)
		return;
	if (!e->holder_tid || gp->n_pending == GIL_PENDING_MAX || !(gp->py || gp->busy)) {
		p->gil.missed++;
		return;
	}
	if (!gp->pending) {
		gp->pending = calloc(GIL_PENDING_MAX, sizeof(*gp->pending));
		if (!gp->pending) {
			p->gil.missed++;
			return;
		}
	}
	gp->pending[gp->n_pending++] = (struct gil_wait_ref){
		.wait_ts = hdr->ts, .wait_end = hdr->ts + e->dur_ns, .tid = e->tid, .holder = e->holder_tid
	};
	if (!gp->busy)
		read_pending(g, gp, p);
}
