// SPDX-License-Identifier: GPL-2.0-only
/*
 * The names of the code objects the kernel's walks name, read while the process lives,
 * so that its Python stacks resolve in snapshots taken after it exited.
 *
 * In the loop, each HP_EV_PYSTACK record as it is drained notes its code objects'
 * addresses (py_names_note). At each tick (py_names_flush) the addresses noted since the
 * last one go to the worker, one job per process at a time, which reads each code object
 * through the process's own cache (checked against the object each time) and hands back a
 * copy. Back in the loop, a copy that is the same object as the newest one kept for its
 * address moves that one's last check on; one that differs (the address was freed and
 * reused) is kept besides it. A frame of a record at ts takes the first name checked at
 * or after ts: an object named in a frame is alive then, so the first check after it is
 * of that object, and a later reuse of its address does not rename it.
 *
 * A snapshot job (a fork of the loop) reads the names as they were at its fork: the loop
 * alone changes them; the worker's job touches only its own process reader and results.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hostprof.h"
#include "internal.h"
#include "macro.h"
#include "worker.h"

#define NAMES_BUDGET_NS (2 * 1000 * 1000 * 1000ull)
#define NAMES_PENDING_MAX 65536 /* addresses queued for one process at once */
#define NAMES_MAX 262144        /* names kept per process */
#define NAMES_GRACE_NS (1000 * 1000 * 1000ull) /* a check this much before a record still names it */

struct py_name {
	uint64_t first_ns, last_ns; /* BOOTTIME of the first and the latest check that found it */
	struct py_code *code; /* a copy of its own */
	int32_t older; /* the name kept before it for the same address, index; -1 */
};

/* addresses -> index + 1 (0: empty), open addressing */
struct addr_map {
	uint64_t *addr;
	uint32_t *idx;
	size_t cap, n;
};

struct names_proc {
	uint32_t pid;
	uint64_t start_time;
	bool gone, in_flight, target_ok;
	struct py_target target; /* its layouts, once the worker found it CPython */
	struct py_name *names;
	size_t n_names, cap_names;
	struct addr_map newest; /* address -> its newest name */
	struct addr_map pending_set; /* addresses noted since the last job */
	uint64_t *pending;
	size_t n_pending, cap_pending;
	struct py_proc *proc; /* the worker's: touched only by the one job in flight */
	char why[PY_REASON_MAX]; /* when not CPython (any more) */
};

struct py_names {
	struct names_proc **procs;
	size_t n, cap;
	struct py_names_stats stats;
};

static uint64_t boottime_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_BOOTTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

/* ---- the address map ---- */

static size_t addr_slot(const struct addr_map *m, uint64_t a)
{
	uint64_t h = a >> 3;

	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdull;
	h ^= h >> 33;
	return h & (m->cap - 1);
}

static uint32_t addr_get(const struct addr_map *m, uint64_t a)
{
	if (!m->cap)
		return 0;
	for (size_t i = addr_slot(m, a); m->idx[i]; i = (i + 1) & (m->cap - 1))
		if (m->addr[i] == a)
			return m->idx[i];
	return 0;
}

static int addr_put(struct addr_map *m, uint64_t a, uint32_t idx)
{
	size_t i;

	if ((m->n + 1) * 2 > m->cap) {
		struct addr_map g = { .cap = m->cap ? m->cap * 2 : 256 };

		g.addr = calloc(g.cap, sizeof(*g.addr));
		g.idx = calloc(g.cap, sizeof(*g.idx));
		if (!g.addr || !g.idx) {
			free(g.addr);
			free(g.idx);
			return -ENOMEM;
		}
		for (size_t k = 0; k < m->cap; k++)
			if (m->idx[k])
				(void)addr_put(&g, m->addr[k], m->idx[k]);
		free(m->addr);
		free(m->idx);
		*m = g;
	}
	for (i = addr_slot(m, a); m->idx[i]; i = (i + 1) & (m->cap - 1))
		if (m->addr[i] == a) {
			m->idx[i] = idx;
			return 0;
		}
	m->addr[i] = a;
	m->idx[i] = idx;
	m->n++;
	return 0;
}

static void addr_clear(struct addr_map *m)
{
	if (m->cap) {
		memset(m->idx, 0, m->cap * sizeof(*m->idx));
		m->n = 0;
	}
}

static void addr_free(struct addr_map *m)
{
	free(m->addr);
	free(m->idx);
	*m = (struct addr_map){};
}

/* ---- processes ---- */

static void proc_free(struct names_proc *np)
{
	if (!np)
		return;
	for (size_t i = 0; i < np->n_names; i++)
		py_code_put(np->names[i].code);
	free(np->names);
	addr_free(&np->newest);
	addr_free(&np->pending_set);
	free(np->pending);
	py_proc_free(np->proc);
	free(np);
}

struct py_names *py_names_new(void)
{
	return calloc(1, sizeof(struct py_names));
}

void py_names_free(struct py_names *pn)
{
	if (!pn)
		return;
	for (size_t i = 0; i < pn->n; i++) {
		/* one still in a job is freed when the job is done (or left to exit) */
		if (pn->procs[i]->in_flight)
			pn->procs[i]->gone = true;
		else
			proc_free(pn->procs[i]);
	}
	free(pn->procs);
	free(pn);
}

/* The newest record of pid (a pid reused later makes a new one). */
static struct names_proc *find_proc(const struct py_names *pn, uint32_t pid)
{
	for (size_t i = pn->n; i > 0; i--)
		if (pn->procs[i - 1]->pid == pid)
			return pn->procs[i - 1];
	return NULL;
}

int py_names_watch(struct py_names *pn, uint32_t pid, uint64_t start_time)
{
	struct names_proc *np = find_proc(pn, pid);

	if (np && np->start_time == start_time)
		return 0;
	if (pn->n == pn->cap) {
		size_t cap = pn->cap ? pn->cap * 2 : 16;
		void *v = reallocarray(pn->procs, cap, sizeof(*pn->procs));

		if (!v)
			return -ENOMEM;
		pn->procs = v;
		pn->cap = cap;
	}
	np = calloc(1, sizeof(*np));
	if (!np)
		return -ENOMEM;
	np->pid = pid;
	np->start_time = start_time;
	pn->procs[pn->n++] = np;
	return 0;
}

void py_names_forget(struct py_names *pn, uint32_t pid)
{
	for (size_t i = 0; i < pn->n;) {
		struct names_proc *np = pn->procs[i];

		if (np->pid != pid) {
			i++;
			continue;
		}
		memmove(&pn->procs[i], &pn->procs[i + 1], (pn->n - i - 1) * sizeof(*pn->procs));
		pn->n--;
		if (np->in_flight)
			np->gone = true; /* the job's done frees it */
		else
			proc_free(np);
	}
}

void py_names_note(struct py_names *pn, const struct hp_pystack *e)
{
	struct names_proc *np = find_proc(pn, e->pid);
	size_t n = MIN((size_t)e->n_frames, (size_t)HP_PY_MAX_FRAMES);

	if (!np)
		return;
	for (size_t i = 0; i < n; i++) {
		uint64_t a = e->frames[2 * i];

		if (!a || addr_get(&np->pending_set, a))
			continue;
		if (np->n_pending >= NAMES_PENDING_MAX) {
			pn->stats.dropped++;
			continue;
		}
		if (np->n_pending == np->cap_pending) {
			size_t cap = np->cap_pending ? np->cap_pending * 2 : 256;
			void *v = reallocarray(np->pending, cap, sizeof(*np->pending));

			if (!v) {
				pn->stats.dropped++;
				continue;
			}
			np->pending = v;
			np->cap_pending = cap;
		}
		if (addr_put(&np->pending_set, a, 1) < 0) {
			pn->stats.dropped++;
			continue;
		}
		np->pending[np->n_pending++] = a;
	}
}

/* ---- the worker's job ---- */

struct names_job {
	struct py_names *pn;
	struct names_proc *np;
	uint64_t *addrs;
	struct py_code **codes; /* copies; NULL: not a code object (any more) */
	size_t n;
	uint64_t ts; /* BOOTTIME when the checks began */
	struct py_target target;
	char why[PY_REASON_MAX];
};

static int names_work(void *arg)
{
	struct names_job *j = arg;
	struct names_proc *np = j->np;
	struct py_proc *p;
	uint8_t head[PY_HEAD_MAX];

	if (!np->proc) {
		np->proc = py_proc_open(np->pid);
		if (!np->proc)
			return -errno;
	}
	p = np->proc;
	if (p->kind != PY_KIND_CPYTHON) {
		snprintf(j->why, sizeof(j->why), "%s", p->why);
		return -EPROTO;
	}
	j->target = p->target;
	j->ts = boottime_ns();
	py_mem_begin(&p->mem, NAMES_BUDGET_NS / 2);
	for (size_t i = 0; i < j->n; i++) {
		struct py_code *code;

		if (!py_ptr_ok(j->addrs[i]) || py_mem_read(&p->mem, j->addrs[i], head, p->target.off.co_size) < 0)
			continue;
		if (py_code_get(&p->cache, &p->mem, &p->target, j->addrs[i], head, &code) < 0)
			continue;
		j->codes[i] = py_code_copy(code);
		py_code_put(code);
		if (p->mem.err)
			break; /* gone, or out of time */
	}
	return p->mem.err == -ESRCH ? -ESRCH : 0;
}

static void job_free(struct names_job *j)
{
	for (size_t i = 0; i < j->n; i++)
		py_code_put(j->codes[i]);
	free(j->codes);
	free(j->addrs);
	free(j);
}

static int add_name(struct names_proc *np, struct py_code *code, uint64_t ts)
{
	uint32_t newest = addr_get(&np->newest, code->addr);
	struct py_name *nm;

	if (newest && py_code_same(np->names[newest - 1].code, code)) {
		np->names[newest - 1].last_ns = ts;
		py_code_put(code);
		return 0;
	}
	if (np->n_names >= NAMES_MAX) {
		py_code_put(code);
		return -E2BIG;
	}
	if (np->n_names == np->cap_names) {
		size_t cap = np->cap_names ? np->cap_names * 2 : 256;
		void *v = reallocarray(np->names, cap, sizeof(*np->names));

		if (!v) {
			py_code_put(code);
			return -ENOMEM;
		}
		np->names = v;
		np->cap_names = cap;
	}
	nm = &np->names[np->n_names];
	*nm = (struct py_name){ .first_ns = ts, .last_ns = ts, .code = code, .older = (int32_t)newest - 1 };
	if (addr_put(&np->newest, code->addr, np->n_names + 1) < 0) {
		py_code_put(code);
		return -ENOMEM;
	}
	np->n_names++;
	return 0;
}

static void names_done(void *arg, int r)
{
	struct names_job *j = arg;
	struct names_proc *np = j->np;

	np->in_flight = false;
	if (np->gone) {
		job_free(j);
		proc_free(np);
		return;
	}
	j->pn->stats.jobs++;
	if (r == -EPROTO) {
		snprintf(np->why, sizeof(np->why), "%s", j->why);
	} else if (r < 0 && r != -ESRCH) {
		j->pn->stats.failed++;
	}
	if (r >= 0 || r == -ESRCH) {
		if (!np->target_ok) {
			np->target = j->target;
			np->target_ok = true;
		}
		for (size_t i = 0; i < j->n; i++) {
			if (!j->codes[i]) {
				j->pn->stats.unreadable++;
				continue;
			}
			j->pn->stats.checked++;
			if (add_name(np, j->codes[i], j->ts) < 0)
				j->pn->stats.dropped++;
			j->codes[i] = NULL;
		}
	}
	job_free(j);
}

int py_names_flush(struct py_names *pn, struct worker *w)
{
	int ret = 0;

	for (size_t i = 0; i < pn->n; i++) {
		struct names_proc *np = pn->procs[i];
		struct names_job *j;
		int r;

		if (np->in_flight || !np->n_pending)
			continue;
		j = calloc(1, sizeof(*j));
		if (!j)
			return -ENOMEM;
		j->pn = pn;
		j->np = np;
		j->n = np->n_pending;
		j->addrs = TAKE_PTR(np->pending);
		j->codes = calloc(j->n, sizeof(*j->codes));
		np->n_pending = np->cap_pending = 0;
		addr_clear(&np->pending_set);
		if (!j->codes) {
			job_free(j);
			return -ENOMEM;
		}
		r = worker_submit(w, NAMES_BUDGET_NS, names_work, names_done, j);
		if (r < 0) {
			/* the queue is full: these are lost (a snapshot reads them from the process, if it lives) */
			pn->stats.dropped += j->n;
			job_free(j);
			ret = r;
			continue;
		}
		np->in_flight = true;
	}
	return ret;
}

void py_names_get_stats(const struct py_names *pn, struct py_names_stats *ret)
{
	*ret = pn->stats;
	ret->processes = pn->n;
	ret->names = 0;
	for (size_t i = 0; i < pn->n; i++)
		ret->names += pn->procs[i]->n_names;
}

/* ---- in a snapshot job ---- */

struct names_lookup {
	const struct names_proc *np;
	uint64_t ts;
};

static int names_lookup(void *ud, uint64_t addr, struct py_code **ret, const char **why)
{
	const struct names_lookup *l = ud;
	const struct names_proc *np = l->np;
	uint32_t idx = addr_get(&np->newest, addr);
	const struct py_name *pick = NULL;

	/* the first check at or after the record: newest first, so the last one that qualifies */
	for (int32_t i = (int32_t)idx - 1; i >= 0; i = np->names[i].older)
		if (np->names[i].last_ns >= l->ts)
			pick = &np->names[i];
	/* none after it: the process exited before its last records were read. The newest
	 * check, if it came at most NAMES_GRACE_NS before: only a code object freed and its
	 * address taken by another one within that time, in a process about to exit, would
	 * be named wrongly */
	if (!pick && idx && l->ts - np->names[idx - 1].last_ns <= NAMES_GRACE_NS)
		pick = &np->names[idx - 1];
	if (!pick) {
		*why = "a frame's code object was not read while the process lived";
		return -ENOENT;
	}
	pick->code->refs++;
	*ret = pick->code;
	return 0;
}

int py_names_resolve_stack(const struct py_names *pn, uint32_t pid, uint64_t ts, const uint64_t *pairs, size_t n,
			   struct py_stack_frame *out, size_t *ret_n, const char **ret_why)
{
	const struct names_proc *np = find_proc(pn, pid);
	struct names_lookup l = { .np = np, .ts = ts };

	*ret_n = 0;
	if (!np || !np->target_ok) {
		*ret_why = np && np->why[0] ? np->why : "its code objects were not read while it lived";
		return -ENOENT;
	}
	return py_stack_from_pairs(&np->target, names_lookup, &l, pairs, n, out, ret_n, ret_why);
}
