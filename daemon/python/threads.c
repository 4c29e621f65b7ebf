// SPDX-License-Identifier: GPL-2.0-only
/*
 * _PyRuntime -> interpreters -> thread states -> frames, for every thread state (those
 * waiting for the GIL, blocked in C, idle: each keeps its chain of frames while it runs
 * no Python).
 *
 * Threads to native tids: from 3.11 the thread state holds native_thread_id. Before, it holds
 * only thread_id, the pthread_t of the thread (PyThread_get_thread_ident() is pthread_self()),
 * which in glibc is the address of the thread's struct pthread; the kernel tid is a field of
 * it, at the offset glibc publishes for debuggers (_thread_db_pthread_tid; discover.c). Either
 * way the tid must be a thread of the process now (/proc/PID/task), else it is not known (0);
 * in a pid namespace of its own, it is that namespace's tid, mapped to the daemon's.
 *
 * Frames: 3.8-3.10, PyFrameObject and its f_back chain, each frame its own run of the eval
 * loop; 3.11+, _PyInterpreterFrame and its previous chain from the thread's current frame
 * (through its _PyCFrame in 3.11 and 3.12), skipping the eval loop's entry shims (3.12+,
 * owned by the C stack) and the frames not complete yet, as CPython's own walks do.
 *
 * Nothing stops the process meanwhile: a running thread's frames change under the walk. A
 * stack that stops at something unreadable is walked once more from its thread state; if it
 * stops again, it keeps the frames read and says why. Chains are bounded and checked for loops.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "internal.h"
#include "macro.h"

/* ---- a small set of addresses, for loops in the chains ---- */

struct addrset {
	uint64_t *v;
	size_t cap, n;
};

static void addrset_clear(struct addrset *s)
{
	if (s->v)
		memset(s->v, 0, s->cap * sizeof(*s->v));
	s->n = 0;
}

/* 1: added; 0: there already; -ENOMEM */
static int addrset_add(struct addrset *s, uint64_t a)
{
	size_t i;

	if ((s->n + 1) * 2 > s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 64;
		uint64_t *v = calloc(cap, sizeof(*v)), *old = s->v;

		if (!v)
			return -ENOMEM;
		for (size_t k = 0; k < s->cap; k++) {
			if (!old[k])
				continue;
			for (i = (old[k] >> 3) & (cap - 1); v[i]; i = (i + 1) & (cap - 1))
				;
			v[i] = old[k];
		}
		free(old);
		s->v = v;
		s->cap = cap;
	}
	for (i = (a >> 3) & (s->cap - 1); s->v[i]; i = (i + 1) & (s->cap - 1))
		if (s->v[i] == a)
			return 0;
	s->v[i] = a;
	s->n++;
	return 1;
}

/* ---- the process's threads ---- */

/*
 * A process in a pid namespace of its own (a container) knows its threads by the tids of
 * that namespace: native_thread_id, and glibc's struct pthread, hold those. Each task's
 * NSpid line (/proc/PID/task/TID/status: the tid in each namespace, the innermost last)
 * maps them to the daemon's.
 */
struct task {
	uint32_t ns_tid, tid; /* as the process sees it; as the daemon does */
};

struct tasks {
	struct task *v; /* by ns_tid */
	size_t n;
};

static int cmp_task(const void *a, const void *b)
{
	const struct task *x = a, *y = b;

	return x->ns_tid < y->ns_tid ? -1 : x->ns_tid > y->ns_tid;
}

/* The innermost tid of NSpid (the last of its fields); 0: no such line (before 4.1). */
static uint32_t read_nstid(uint32_t pid, uint32_t tid)
{
	char path[64], line[256];
	uint32_t ret = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%u/task/%u/status", pid, tid);
	f = fopen(path, "re");
	if (!f)
		return 0;
	for (int i = 0; i < 64 && fgets(line, sizeof(line), f); i++) {
		char *last;

		if (strncmp(line, "NSpid:", 6))
			continue;
		line[strcspn(line, "\n")] = 0;
		last = strrchr(line, '\t');
		if (!last)
			last = strrchr(line, ' ');
		ret = last ? strtoul(last + 1, NULL, 10) : 0;
		break;
	}
	fclose(f);
	return ret;
}

static int read_tasks(uint32_t pid, struct tasks *ret)
{
	char path[64];
	struct dirent *de;
	size_t cap = 0;
	bool nested;
	DIR *d;

	nested = read_nstid(pid, pid) != pid && read_nstid(pid, pid) != 0;
	snprintf(path, sizeof(path), "/proc/%u/task", pid);
	d = opendir(path);
	if (!d)
		return negative_errno();
	while ((de = readdir(d)) && ret->n < PY_TASKS_MAX) {
		char *end;
		unsigned long tid = strtoul(de->d_name, &end, 10);
		uint32_t ns_tid;

		if (de->d_name[0] < '0' || de->d_name[0] > '9' || *end || !tid || tid > UINT32_MAX)
			continue;
		ns_tid = nested ? read_nstid(pid, tid) : tid;
		if (!ns_tid)
			continue; /* gone meanwhile */
		if (ret->n == cap) {
			struct task *v = realloc(ret->v, (cap = cap ? cap * 2 : 64) * sizeof(*v));

			if (!v) {
				closedir(d);
				return -ENOMEM;
			}
			ret->v = v;
		}
		ret->v[ret->n++] = (struct task){ ns_tid, tid };
	}
	closedir(d);
	qsort_safe(ret->v, ret->n, sizeof(*ret->v), cmp_task);
	return 0;
}

/* The daemon's tid of the thread the process calls ns_tid; 0: none of its threads. */
static uint32_t task_tid(const struct tasks *t, uint64_t ns_tid)
{
	size_t lo = 0, hi = t->n;

	if (!ns_tid || ns_tid > UINT32_MAX)
		return 0;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (t->v[mid].ns_tid == ns_tid)
			return t->v[mid].tid;
		if (t->v[mid].ns_tid < ns_tid)
			lo = mid + 1;
		else
			hi = mid;
	}
	return 0;
}

/* ---- one walk ---- */

struct walk {
	struct py_code_cache *cache;
	struct py_mem *m;
	const struct py_target *t;
	const struct py_limits *lim;
	struct tasks tasks;
	struct addrset seen;
};

static void thread_clear(struct py_thread *th)
{
	for (size_t i = 0; i < th->n_frames; i++)
		py_code_put(th->frames[i].code);
	free(th->frames);
	th->frames = NULL;
	th->n_frames = 0;
	th->truncated = false;
	th->error = NULL;
}

void py_dump_done(struct py_dump *d)
{
	for (size_t i = 0; i < d->n_threads; i++)
		thread_clear(&d->threads[i]);
	free(d->threads);
	*d = (struct py_dump){};
}

static int push_frame(struct py_thread *th, size_t *cap, struct py_code *code, uint32_t line, bool entry)
{
	if (th->n_frames == *cap) {
		size_t n = *cap ? *cap * 2 : 16;
		struct py_frame *v = realloc(th->frames, n * sizeof(*v));

		if (!v)
			return -ENOMEM;
		th->frames = v;
		*cap = n;
	}
	th->frames[th->n_frames++] = (struct py_frame){ code, line, entry };
	return 0;
}

/* The code object at addr: its head read, its entry from the cache. */
static int frame_code(struct walk *w, uint64_t addr, struct py_code **ret)
{
	uint8_t head[PY_HEAD_MAX];
	int r;

	if (!py_ptr_ok(addr)) {
		w->m->counts->code_unreadable++;
		return -EBADMSG;
	}
	r = py_mem_read(w->m, addr, head, w->t->off.co_size);
	if (r == -EFAULT)
		w->m->counts->code_unreadable++;
	if (r < 0)
		return r == -EFAULT ? -EBADMSG : r;
	return py_code_get(w->cache, w->m, w->t, addr, head, ret);
}

/* Why a walk stopped at a read that failed: the whole read ends (time, process), or this stack. */
static const char *read_error(struct walk *w, int r, const char *what)
{
	if (w->m->err == -ETIME)
		return "the time budget ran out";
	if (w->m->err == -ESRCH)
		return "the process went away";
	if (w->m->err == -EPERM)
		return "its memory may not be read (EPERM)";
	(void)r;
	return what;
}

static int walk_objects(struct walk *w, uint64_t f, struct py_thread *th)
{
	const struct py_offsets *o = &w->t->off;
	uint8_t buf[PY_HEAD_MAX];
	size_t cap = 0;
	int r;

	addrset_clear(&w->seen);
	while (f) {
		struct py_code *code;
		int32_t lasti;
		uint32_t line;

		if (th->n_frames >= w->lim->max_frames) {
			th->truncated = true;
			return 0;
		}
		if (!py_ptr_ok(f)) {
			th->error = "a frame pointer points nowhere";
			return 0;
		}
		r = addrset_add(&w->seen, f);
		if (r <= 0) {
			if (!r)
				th->error = "the frames loop";
			return r;
		}
		r = py_mem_read(w->m, f, buf, o->fr_size);
		if (r < 0) {
			th->error = read_error(w, r, "a frame cannot be read");
			return 0;
		}
		if (py_u64(buf, o->ob_type) != w->t->frame_type) {
			th->error = "a frame is not a frame object";
			return 0;
		}
		r = frame_code(w, py_u64(buf, o->fr_code), &code);
		if (r == -ENOMEM)
			return r;
		if (r < 0) {
			th->error = read_error(w, r, "a frame's code is not a code object");
			return 0;
		}
		memcpy(&lasti, buf + o->fr_instr, sizeof(lasti));
		line = py_code_line(w->t, code, lasti);
		if (!line)
			w->m->counts->lines_unknown++;
		r = push_frame(th, &cap, code, line, true);
		if (r < 0) {
			py_code_put(code);
			return r;
		}
		f = py_u64(buf, o->fr_back);
	}
	return 0;
}

static int walk_interp_frames(struct walk *w, uint64_t f, struct py_thread *th)
{
	const struct py_offsets *o = &w->t->off;
	uint8_t buf[PY_HEAD_MAX];
	size_t cap = 0, steps = 0;
	int r;

	addrset_clear(&w->seen);
	while (f) {
		struct py_code *code;
		uint64_t exe, instr, start;
		int64_t lasti;
		uint8_t owner;
		uint32_t line;
		bool entry;

		if (th->n_frames >= w->lim->max_frames || ++steps > 2ull * w->lim->max_frames + 16) {
			th->truncated = true;
			return 0;
		}
		if (!py_ptr_ok(f)) {
			th->error = "a frame pointer points nowhere";
			return 0;
		}
		r = addrset_add(&w->seen, f);
		if (r <= 0) {
			if (!r)
				th->error = "the frames loop";
			return r;
		}
		r = py_mem_read(w->m, f, buf, o->fr_size);
		if (r < 0) {
			th->error = read_error(w, r, "a frame cannot be read");
			return 0;
		}
		owner = buf[o->fr_owner];
		f = py_u64(buf, o->fr_back);
		if (o->owner_cstack >= 0 && owner == o->owner_cstack) {
			/* the eval loop's entry shim: the frame above it was the first of that run */
			if (th->n_frames)
				th->frames[th->n_frames - 1].eval_entry = true;
			continue;
		}
		exe = py_u64(buf, o->fr_code);
		if (w->t->none && exe == w->t->none)
			continue; /* 3.13: a frame without code */
		r = frame_code(w, exe, &code);
		if (r == -ENOMEM)
			return r;
		if (r < 0) {
			th->error = read_error(w, r, "a frame's code is not a code object");
			return 0;
		}
		instr = py_u64(buf, o->fr_instr);
		start = exe + o->co_code_adaptive;
		lasti = ((int64_t)(instr - start)) / 2;
		if (instr < start - 2 || lasti > (int64_t)code->check.n_units) {
			lasti = INT64_MIN; /* not in its own code: the line is not known */
		} else if (owner != o->owner_generator && lasti < code->firsttraceable) {
			/* not complete yet (its first instructions set up cells and such): CPython skips it */
			py_code_put(code);
			continue;
		}
		line = lasti == INT64_MIN ? 0 : py_code_line(w->t, code, lasti);
		if (!line)
			w->m->counts->lines_unknown++;
		entry = o->fr_is_entry >= 0 && buf[o->fr_is_entry];
		r = push_frame(th, &cap, code, line, entry);
		if (r < 0) {
			py_code_put(code);
			return r;
		}
	}
	return 0;
}

/* The thread state's head: the largest offset read in it, and the field after. */
static uint32_t tstate_size(const struct py_offsets *o)
{
	uint32_t n = MAX(o->ts_next, MAX(o->ts_interp, MAX(o->ts_frame, o->ts_thread_id)));

	if (o->ts_native_tid >= 0)
		n = MAX(n, (uint32_t)o->ts_native_tid);
	return n + 8;
}

static int walk_thread(struct walk *w, uint64_t ts, const uint8_t *tsbuf, struct py_thread *th)
{
	const struct py_offsets *o = &w->t->off;
	uint64_t frame = py_u64(tsbuf, o->ts_frame);

	(void)ts;
	if (o->frames == PY_FRAMES_OBJECT)
		return walk_objects(w, frame, th);
	if (o->ts_cframe_frame >= 0 && frame) {
		uint64_t cframe = frame;

		if (!py_ptr_ok(cframe) || py_mem_ptr(w->m, cframe + o->ts_cframe_frame, &frame) < 0) {
			th->error = read_error(w, -EFAULT, "its _PyCFrame cannot be read");
			return 0;
		}
	}
	return walk_interp_frames(w, frame, th);
}

static uint32_t thread_tid(struct walk *w, const uint8_t *tsbuf)
{
	const struct py_offsets *o = &w->t->off;
	uint64_t pthread = py_u64(tsbuf, o->ts_thread_id);
	uint32_t tid;

	if (o->ts_native_tid >= 0)
		return task_tid(&w->tasks, py_u64(tsbuf, o->ts_native_tid));
	if (w->t->pthread_tid_off < 0 || !py_ptr_ok(pthread) ||
	    py_mem_read(w->m, pthread + w->t->pthread_tid_off, &tid, sizeof(tid)) < 0)
		return 0;
	return task_tid(&w->tasks, tid);
}

/* The GIL's state: its last holder, when it is held. */
static uint64_t gil_holder(struct walk *w, uint64_t gil)
{
	const struct py_offsets *o = &w->t->off;
	uint64_t holder;
	int32_t locked;

	if (!py_ptr_ok(gil) || py_mem_ptr(w->m, gil + o->gil_holder, &holder) < 0 ||
	    py_mem_read(w->m, gil + o->gil_locked, &locked, sizeof(locked)) < 0)
		return 0;
	return locked ? holder : 0;
}

static int add_thread(struct py_dump *d, size_t *cap, struct py_thread **ret)
{
	if (d->n_threads == *cap) {
		size_t n = *cap ? *cap * 2 : 16;
		struct py_thread *v = realloc(d->threads, n * sizeof(*v));

		if (!v)
			return -ENOMEM;
		d->threads = v;
		*cap = n;
	}
	*ret = &d->threads[d->n_threads++];
	**ret = (struct py_thread){};
	return 0;
}

static int walk_interp(struct walk *w, uint64_t interp, const uint8_t *isbuf, uint64_t holder,
		       struct addrset *states, struct py_dump *d, size_t *cap)
{
	const struct py_offsets *o = &w->t->off;
	uint64_t ts = py_u64(isbuf, o->is_threads_head);
	int64_t id = (int64_t)py_u64(isbuf, o->is_id);
	uint8_t buf[PY_TSTATE_HEAD_MAX];
	int r;

	if (o->is_gil_ptr >= 0)
		holder = gil_holder(w, py_u64(isbuf, o->is_gil_ptr));
	while (ts) {
		struct py_thread *th;

		if (d->n_threads >= w->lim->max_threads) {
			d->threads_truncated = true;
			return 0;
		}
		if (!py_ptr_ok(ts)) {
			d->error = "a thread state pointer points nowhere";
			return 0;
		}
		r = addrset_add(states, ts);
		if (r <= 0) {
			if (!r)
				d->error = "the thread states loop";
			return r;
		}
		r = py_mem_read(w->m, ts, buf, tstate_size(o));
		if (r < 0) {
			d->error = read_error(w, r, "a thread state cannot be read");
			return 0;
		}
		if (py_u64(buf, o->ts_interp) != interp) {
			d->error =
				"a thread state does not point back to its interpreter (not the layout of this build?)";
			return 0;
		}
		r = add_thread(d, cap, &th);
		if (r < 0)
			return r;
		th->thread_id = py_u64(buf, o->ts_thread_id);
		th->tid = thread_tid(w, buf);
		th->interp_id = id;
		th->gil = holder && holder == ts;
		for (int attempt = 0; attempt < 2; attempt++) {
			if (attempt) {
				/* it ran meanwhile: once more, from its thread state as it is now */
				thread_clear(th);
				if (py_mem_read(w->m, ts, buf, tstate_size(o)) < 0 ||
				    py_u64(buf, o->ts_interp) != interp)
					break;
			}
			r = walk_thread(w, ts, buf, th);
			if (r < 0)
				return r;
			if (!th->error || w->m->err)
				break;
		}
		if (th->error)
			w->m->counts->stacks_unreadable++;
		if (w->m->err) {
			d->error = read_error(w, w->m->err, "");
			return 0;
		}
		ts = py_u64(buf, o->ts_next);
	}
	return 0;
}

static uint64_t boottime_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_BOOTTIME, &ts);
	return ts.tv_sec * NSEC_PER_SEC + ts.tv_nsec;
}

int py_walk(struct py_code_cache *c, struct py_mem *m, const struct py_target *t, const struct py_limits *lim,
	    struct py_dump *d)
{
	const struct py_offsets *o = &t->off;
	struct walk w = { .cache = c, .m = m, .t = t, .lim = lim };
	struct addrset interps = {}, states = {};
	uint64_t interp, holder = 0;
	uint8_t isbuf[PY_INTERP_HEAD_MAX];
	size_t cap = 0, n_interps = 0;
	uint32_t is_size;
	int r;

	*d = (struct py_dump){ .ts_ns = boottime_ns() };
	is_size = MAX(o->is_next, MAX(o->is_threads_head, o->is_id)) + 8;
	if (o->is_gil_ptr >= 0)
		is_size = MAX(is_size, (uint32_t)o->is_gil_ptr + 8);
	if (is_size > sizeof(isbuf) || tstate_size(o) > PY_TSTATE_HEAD_MAX || o->fr_size > PY_HEAD_MAX ||
	    o->co_size > PY_HEAD_MAX) {
		d->error = "its layout puts fields further out than this reader reads";
		return 0;
	}
	r = read_tasks(t->pid, &w.tasks);
	if (r == -ENOMEM)
		goto out;
	r = 0; /* without the task list no tid is known; the reads say whether it is gone */
	r = py_mem_ptr(m, t->runtime + o->rt_interp_head, &interp);
	if (r < 0) {
		d->error = read_error(&w, r, "its _PyRuntime cannot be read");
		r = 0;
		goto out;
	}
	if (!interp) {
		d->error = "no interpreter: not initialized yet, or finalized";
		goto out;
	}
	if (o->rt_gil >= 0)
		holder = gil_holder(&w, t->runtime + o->rt_gil);
	while (interp) {
		if (n_interps++ >= PY_INTERPS_MAX) {
			d->threads_truncated = true;
			break;
		}
		if (!py_ptr_ok(interp)) {
			d->error = "an interpreter pointer points nowhere";
			break;
		}
		r = addrset_add(&interps, interp);
		if (r <= 0) {
			if (!r)
				d->error = "the interpreters loop";
			break;
		}
		r = py_mem_read(m, interp, isbuf, is_size);
		if (r < 0) {
			d->error = read_error(&w, r, "an interpreter state cannot be read");
			r = 0;
			break;
		}
		r = walk_interp(&w, interp, isbuf, holder, &states, d, &cap);
		if (r < 0 || d->error || d->threads_truncated)
			break;
		interp = py_u64(isbuf, o->is_next);
	}
out:
	d->duration_ns = boottime_ns() - d->ts_ns;
	free(w.tasks.v);
	free(w.seen.v);
	free(interps.v);
	free(states.v);
	return r < 0 ? r : 0;
}
