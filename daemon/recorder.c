// SPDX-License-Identifier: GPL-2.0-only
/*
 * The per-process flight recorder; see recorder.h.
 *
 * The drain path (recorder_append) checks the record's size against its type's, calls
 * the type's handler, and that does a hash lookup per watched side of the record and a
 * memcpy into the tail chunk; nothing is sorted or decoded until a snapshot asks. Only
 * the first record of a process the kernel began to watch by itself (a fork, a
 * --watch-thread name) reads /proc, for its metadata.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "hugepage.h"
#include "log.h"
#include "syscall_names.h"
#include "macro.h"
#include "recorder.h"
#include "records.h"

/* Records are stored back to back in chunks: each size a multiple of 8 keeps them
 * aligned (the frames that follow some are __u64), and the largest fits in a chunk. */
#define X_ALIGNED(type, st, name, frames) \
	_Static_assert(sizeof(struct st) % 8 == 0, "struct " #st ": not a multiple of 8 bytes");
HP_RECORDS(X_ALIGNED)
#undef X_ALIGNED
_Static_assert(HP_MAX_RECORD <= RECORDER_CHUNK - sizeof(struct chunk), "a record must fit in a chunk");

/* Open addressing, linear probing: live pid → proc_rec. Rebuilt on removal (rare). */
struct pidmap {
	uint32_t *keys;
	struct proc_rec **vals;
	size_t cap, n; /* cap: a power of two */
};

/* Processes whose exit the kernel reported lately (or the tick found, or that were
 * unwatched): records of their pid drained after the exit record, but older than it, are
 * still theirs. */
#define RECENT_EXITS 64
struct recent_exit {
	uint32_t pid;
	uint64_t ts;
	struct proc_rec *p; /* NULL: free slot */
};

/* pids the user quota refused lately: their records drained after the refusal are not
 * looked up in /proc again (a fork or a rename that watches the pid anew clears it) */
#define RECENT_REFUSED 64

/* Where chunks come from: see chunk_get() */
struct chunk_pool {
	struct chunk_slab *slabs;
	size_t n, cap;
	size_t huge;	 /* a slab's size, the huge page's; 0: no slabs, malloc */
	size_t per_slab; /* chunks in a slab */
	unsigned skip;	 /* chunks from malloc before the kernel is asked again */
	bool probed;
};

struct recorder {
	struct recorder_limits lim;
	struct recorder_hooks hooks;
	struct recent_exit recent[RECENT_EXITS];
	size_t recent_next, n_recent;
	uint32_t refused_pids[RECENT_REFUSED];
	size_t refused_next;
	struct recorder_user *users; /* every uid that had a process here; few */
	size_t n_users, cap_users;
	struct proc_rec *host; /* --cpus: switches between unwatched tasks on recorded CPUs */
	struct proc_rec **procs; /* all, live and exited, in the order they were watched */
	size_t n_procs, cap_procs;
	struct pidmap live;
	struct chunk_pool pool;
	uint64_t bytes;
	uint64_t events;
	uint64_t refused;
	uint64_t unowned; /* recorder_unowned */
};

static size_t pidmap_slot(const struct pidmap *m, uint32_t pid)
{
	return (pid * 2654435761u) & (m->cap - 1);
}

static struct proc_rec *pidmap_get(const struct pidmap *m, uint32_t pid)
{
	if (!m->cap)
		return NULL;
	for (size_t i = pidmap_slot(m, pid);; i = (i + 1) & (m->cap - 1)) {
		if (m->keys[i] == pid)
			return m->vals[i];
		if (m->keys[i] == 0)
			return NULL;
	}
}

static void pidmap_put_nogrow(struct pidmap *m, uint32_t pid, struct proc_rec *p)
{
	size_t i = pidmap_slot(m, pid);

	while (m->keys[i] && m->keys[i] != pid)
		i = (i + 1) & (m->cap - 1);
	if (!m->keys[i])
		m->n++;
	m->keys[i] = pid;
	m->vals[i] = p;
}

static int pidmap_rebuild(struct pidmap *m, size_t cap, uint32_t skip)
{
	struct pidmap nm = { .cap = cap };

	nm.keys = calloc(cap, sizeof(*nm.keys));
	nm.vals = calloc(cap, sizeof(*nm.vals));
	if (!nm.keys || !nm.vals) {
		free(nm.keys);
		free(nm.vals);
		return -ENOMEM;
	}
	for (size_t i = 0; i < m->cap; i++)
		if (m->keys[i] && m->keys[i] != skip)
			pidmap_put_nogrow(&nm, m->keys[i], m->vals[i]);
	free(m->keys);
	free(m->vals);
	*m = nm;
	return 0;
}

static int pidmap_put(struct pidmap *m, uint32_t pid, struct proc_rec *p)
{
	if ((m->n + 1) * 2 > m->cap) {
		int r = pidmap_rebuild(m, m->cap ? m->cap * 2 : 64, 0);

		if (r < 0)
			return r;
	}
	pidmap_put_nogrow(m, pid, p);
	return 0;
}

static void pidmap_del(struct pidmap *m, uint32_t pid)
{
	if (pidmap_get(m, pid))
		(void)pidmap_rebuild(m, m->cap, pid); /* on ENOMEM the old map stays valid */
}

static void pidmap_free(struct pidmap *m)
{
	free(m->keys);
	free(m->vals);
	*m = (struct pidmap){};
}

struct recorder *recorder_new(const struct recorder_limits *lim)
{
	struct recorder *rec = calloc(1, sizeof(*rec));

	if (!rec)
		return NULL;
	rec->lim = *lim;
	return rec;
}

static void gil_stack_clear(struct gil_stack *s)
{
	for (uint32_t i = 0; i < s->n_frames; i++) {
		free(s->frames[i].function);
		free(s->frames[i].file);
	}
	s->n_frames = 0;
}

int gil_state_add_stack(struct gil_state *g, struct gil_stack *s)
{
	if (!g->stacks) {
		g->stacks = calloc(GIL_STACKS_MAX, sizeof(*g->stacks));
		if (!g->stacks) {
			gil_stack_clear(s);
			return -ENOMEM;
		}
	}
	if (g->n_stacks == GIL_STACKS_MAX)
		gil_stack_clear(&g->stacks[g->next]);
	else
		g->n_stacks++;
	g->stacks[g->next] = *s;
	g->next = (g->next + 1) % GIL_STACKS_MAX;
	s->n_frames = 0;
	return 0;
}

void gil_state_done(struct gil_state *g)
{
	for (size_t i = 0; g->stacks && i < GIL_STACKS_MAX; i++)
		gil_stack_clear(&g->stacks[i]);
	free(g->stacks);
	g->stacks = NULL;
	g->n_stacks = g->next = 0;
}

/*
 * Chunk memory. A snapshot's job, a child forked from the daemon, reads the window's
 * chunks, and the first read of each of their pages in the child costs far more than the
 * read on a paravirtualized VM, faults or not (its copied page tables walked for the
 * first time: ~40 ms of the job's CPU for 25 MiB of 4 KiB pages at the bench's training
 * load, ~15 ms on 2 MiB pages). So chunks come from slabs of the size of a transparent
 * huge page each (x86-64: 2 MiB, 32 chunks), aligned to it, where the kernel has free
 * blocks of that size (hugepage.h); else from malloc, as they all did before. A slab is
 * faulted in 4 KiB at a time as its chunks are written, and madvised for huge pages once
 * all of them have been handed out: khugepaged then puts it on one, on its own thread. A
 * huge page faulted in whole in the loop stalled it for 5-10 ms a slab on the bench's VM
 * (the hypervisor backing 2 MiB at once): 16 of them while the recorder filled, and the
 * ring dropped records at the pipe benchmark's rate.
 * A free chunk of a slab is taken before a new slab is made, so the slabs hold no more
 * than the most chunks held at once, plus one; a slab goes back when all its chunks are
 * free and another empty one is kept (a full recorder drops and takes a chunk in turn:
 * without the spare it would make and unmake a slab every 32 chunks). After a failed
 * check, the next is RECHECK chunks later (each reads /proc/buddyinfo).
 */
#define CHUNK_POOL_RECHECK 64

struct chunk_slab {
	uint8_t *base;
	uint64_t free; /* a bit per chunk: free */
	bool advised; /* MADV_HUGEPAGE said: every chunk was handed out once */
};

static uint64_t slab_all(const struct chunk_pool *pool)
{
	return pool->per_slab == 64 ? UINT64_MAX : (UINT64_C(1) << pool->per_slab) - 1;
}

static void pool_init(struct chunk_pool *pool)
{
	size_t huge = huge_page_size();

	pool->probed = true;
	if (huge && huge % RECORDER_CHUNK == 0 && huge / RECORDER_CHUNK >= 2 && huge / RECORDER_CHUNK <= 64) {
		pool->huge = huge;
		pool->per_slab = huge / RECORDER_CHUNK;
	}
}

static struct chunk_slab *slab_new(struct chunk_pool *pool)
{
	struct chunk_slab *s;
	uint8_t *m, *a;

	if (pool->n == pool->cap) {
		size_t cap = pool->cap ? pool->cap * 2 : 16;

		s = realloc(pool->slabs, cap * sizeof(*s));
		if (!s)
			return NULL;
		pool->slabs = s;
		pool->cap = cap;
	}
	m = mmap(NULL, 2 * pool->huge, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED)
		return NULL;
	a = (uint8_t *)(((uintptr_t)m + pool->huge - 1) & ~(uintptr_t)(pool->huge - 1));
	if (a > m)
		(void)munmap(m, a - m);
	if (a + pool->huge < m + 2 * pool->huge)
		(void)munmap(a + pool->huge, m + 2 * pool->huge - (a + pool->huge));
	s = &pool->slabs[pool->n++];
	s->base = a;
	s->free = slab_all(pool);
	s->advised = false;
	return s;
}

static struct chunk *chunk_get(struct chunk_pool *pool)
{
	struct chunk_slab *s = NULL;
	unsigned bit;

	if (!pool->probed)
		pool_init(pool);
	for (size_t i = 0; i < pool->n && !s; i++)
		if (pool->slabs[i].free)
			s = &pool->slabs[i];
	if (!s && pool->huge) {
		if (pool->skip)
			pool->skip--;
		else if (huge_pages_free_for(pool->huge))
			s = slab_new(pool);
		else
			pool->skip = CHUNK_POOL_RECHECK;
	}
	if (!s)
		return malloc(RECORDER_CHUNK);
	bit = (unsigned)__builtin_ctzll(s->free);
	s->free &= ~(UINT64_C(1) << bit);
	if (!s->free && !s->advised) {
		(void)madvise(s->base, pool->huge, MADV_HUGEPAGE);
		s->advised = true;
	}
	return (struct chunk *)(s->base + (size_t)bit * RECORDER_CHUNK);
}

static void chunk_put(struct chunk_pool *pool, struct chunk *c)
{
	const uint64_t all = slab_all(pool);
	size_t i, empty = 0;

	for (i = 0; i < pool->n; i++)
		if ((uint8_t *)c >= pool->slabs[i].base && (uint8_t *)c < pool->slabs[i].base + pool->huge)
			break;
	if (i == pool->n) {
		free(c);
		return;
	}
	pool->slabs[i].free |= UINT64_C(1) << (((uint8_t *)c - pool->slabs[i].base) / RECORDER_CHUNK);
	if (pool->slabs[i].free != all)
		return;
	for (size_t k = 0; k < pool->n; k++)
		empty += pool->slabs[k].free == all;
	if (empty < 2)
		return;
	(void)munmap(pool->slabs[i].base, pool->huge);
	pool->slabs[i] = pool->slabs[--pool->n];
}

static void pool_free(struct chunk_pool *pool)
{
	for (size_t i = 0; i < pool->n; i++)
		(void)munmap(pool->slabs[i].base, pool->huge);
	free(pool->slabs);
	*pool = (struct chunk_pool){};
}

size_t recorder_slab_bytes(const struct recorder *rec)
{
	return rec->pool.n * rec->pool.huge;
}

static void proc_rec_free(struct recorder *rec, struct proc_rec *p)
{
	struct chunk *c, *next;

	if (!p)
		return;
	gil_state_done(&p->gil);
	for (c = p->head; c; c = next) {
		next = c->next;
		chunk_put(&rec->pool, c);
	}
	free(p->threads);
	free(p->cmdline);
	free(p->final_hists);
	timeacct_free(&p->acct);
	free(p);
}

void recorder_free(struct recorder *rec)
{
	if (!rec)
		return;
	for (size_t i = 0; i < rec->n_procs; i++)
		proc_rec_free(rec, rec->procs[i]);
	proc_rec_free(rec, rec->host);
	free(rec->procs);
	free(rec->users);
	pidmap_free(&rec->live);
	pool_free(&rec->pool);
	free(rec);
}

void recorder_set_limits(struct recorder *rec, const struct recorder_limits *lim)
{
	rec->lim = *lim;
}

void recorder_set_hooks(struct recorder *rec, const struct recorder_hooks *hooks)
{
	rec->hooks = *hooks;
}

static struct recorder_user *user_find(const struct recorder *rec, uint32_t uid)
{
	for (size_t i = 0; i < rec->n_users; i++)
		if (rec->users[i].uid == uid)
			return &rec->users[i];
	return NULL;
}

/* The entry of uid, made if there is none; NULL: no memory. */
static struct recorder_user *user_get(struct recorder *rec, uint32_t uid)
{
	struct recorder_user *u = user_find(rec, uid);

	if (u)
		return u;
	if (rec->n_users == rec->cap_users) {
		size_t cap = rec->cap_users ? rec->cap_users * 2 : 8;
		struct recorder_user *v = realloc(rec->users, cap * sizeof(*v));

		if (!v)
			return NULL;
		rec->users = v;
		rec->cap_users = cap;
	}
	u = &rec->users[rec->n_users++];
	*u = (struct recorder_user){ .uid = uid };
	return u;
}

static uint32_t owner_of(const struct proc_rec *p)
{
	return p->info.cred.uid;
}

/* p is no longer live: its pid is out of the live map, its user has one less. */
static void live_del(struct recorder *rec, struct proc_rec *p)
{
	struct recorder_user *u = user_find(rec, owner_of(p));

	pidmap_del(&rec->live, p->info.pid);
	if (u && u->live)
		u->live--;
}

void recorder_user(const struct recorder *rec, uint32_t uid, struct recorder_user *ret)
{
	const struct recorder_user *u = user_find(rec, uid);

	*ret = u ? *u : (struct recorder_user){ .uid = uid };
}

size_t recorder_users(const struct recorder *rec, const struct recorder_user **ret)
{
	*ret = rec->users;
	return rec->n_users;
}

bool recorder_user_over_quota(const struct recorder *rec, uint32_t uid)
{
	const struct recorder_user *u = user_find(rec, uid);

	return uid != 0 && rec->lim.user_procs && u && u->live >= rec->lim.user_procs;
}

struct proc_rec *recorder_quota_victim(const struct recorder *rec)
{
	struct proc_rec *victim = NULL;
	const struct recorder_user *most = NULL;

	for (size_t i = 0; i < rec->n_users; i++) {
		const struct recorder_user *u = &rec->users[i];
		struct proc_rec *newest = NULL;

		if (u->uid == 0 || (most && u->live <= most->live))
			continue;
		for (size_t j = rec->n_procs; j-- > 0 && !newest;) {
			struct proc_rec *p = rec->procs[j];

			if (!p->exit_ns && owner_of(p) == u->uid && p->reason != HP_WATCH_PID)
				newest = p;
		}
		if (newest) {
			most = u;
			victim = newest;
		}
	}
	return victim;
}

static bool recently_refused(const struct recorder *rec, uint32_t pid)
{
	for (size_t i = 0; i < RECENT_REFUSED; i++)
		if (rec->refused_pids[i] == pid)
			return true;
	return false;
}

static void refused_forget(struct recorder *rec, uint32_t pid)
{
	for (size_t i = 0; i < RECENT_REFUSED; i++)
		if (rec->refused_pids[i] == pid)
			rec->refused_pids[i] = 0;
}

static void recent_add(struct recorder *rec, struct proc_rec *p, uint64_t ts)
{
	struct recent_exit *x = &rec->recent[rec->recent_next++ % RECENT_EXITS];

	if (!x->p)
		rec->n_recent++;
	*x = (struct recent_exit){ .pid = p->info.pid, .ts = ts, .p = p };
}

static void recent_forget(struct recorder *rec, const struct proc_rec *p)
{
	for (size_t i = 0; i < RECENT_EXITS; i++)
		if (rec->recent[i].p == p) {
			rec->recent[i] = (struct recent_exit){};
			rec->n_recent--;
		}
}

/* The process that exited lately as pid's holder at ts (the earliest exit at or after
 * ts), NULL if none. */
static struct proc_rec *recent_holder(const struct recorder *rec, uint32_t pid, uint64_t ts)
{
	const struct recent_exit *best = NULL;

	for (size_t i = 0; i < RECENT_EXITS; i++) {
		const struct recent_exit *x = &rec->recent[i];

		if (x->p && x->pid == pid && ts <= x->ts && (!best || x->ts < best->ts))
			best = x;
	}
	return best ? best->p : NULL;
}

/* The holder of pid that exited last among the recent exits; NULL if none. */
static struct proc_rec *recent_last(const struct recorder *rec, uint32_t pid)
{
	const struct recent_exit *best = NULL;

	for (size_t i = 0; i < RECENT_EXITS; i++) {
		const struct recent_exit *x = &rec->recent[i];

		if (x->p && x->pid == pid && (!best || x->ts > best->ts))
			best = x;
	}
	return best ? best->p : NULL;
}

/* The latest exit of pid's holders the kernel reported lately; 0 if none. */
static uint64_t recent_exit_of(const struct recorder *rec, uint32_t pid)
{
	uint64_t ts = 0;

	for (size_t i = 0; i < RECENT_EXITS; i++)
		if (rec->recent[i].p && rec->recent[i].pid == pid)
			ts = MAX(ts, rec->recent[i].ts);
	return ts;
}

/* The process a record of pid at ts belongs to: the live one with that pid, unless the
 * record is older than the exit of the pid's previous holder (then that one's, while it
 * is among the recent exits); NULL if none. */
static struct proc_rec *holder(const struct recorder *rec, uint32_t pid, uint64_t ts)
{
	struct proc_rec *p = pidmap_get(&rec->live, pid);

	if (p && ts > p->pid_free_ns)
		return p;
	if (!rec->n_recent)
		return NULL;
	return recent_holder(rec, pid, ts);
}

static void set_thread_name(struct proc_rec *p, uint32_t tid, const char *comm)
{
	for (size_t i = 0; i < p->n_threads; i++)
		if (p->threads[i].tid == tid) {
			memcpy(p->threads[i].comm, comm, HP_COMM_LEN);
			p->threads[i].comm[HP_COMM_LEN - 1] = 0;
			return;
		}
	if (p->n_threads == p->cap_threads) {
		size_t cap = p->cap_threads ? p->cap_threads * 2 : 16;
		struct task_name *t = realloc(p->threads, cap * sizeof(*t));

		if (!t)
			return; /* the name is also in the switch records */
		p->threads = t;
		p->cap_threads = cap;
	}
	p->threads[p->n_threads].tid = tid;
	memcpy(p->threads[p->n_threads].comm, comm, HP_COMM_LEN);
	p->threads[p->n_threads].comm[HP_COMM_LEN - 1] = 0;
	p->n_threads++;
}

const char *proc_rec_thread_name(const struct proc_rec *p, uint32_t tid)
{
	for (size_t i = 0; i < p->n_threads; i++)
		if (p->threads[i].tid == tid)
			return p->threads[i].comm;
	return NULL;
}

static int add_task_name(uint32_t pid, uint32_t tid, const char *comm, void *ud)
{
	char name[HP_COMM_LEN] = {};

	strncpy(name, comm, HP_COMM_LEN - 1);
	set_thread_name(ud, tid, name);
	return 0;
}

static void describe_reason(struct proc_rec *p)
{
	switch (p->reason) {
	case HP_WATCH_PID:
		snprintf(p->why, sizeof(p->why), "pid");
		break;
	case HP_WATCH_GLOB:
		snprintf(p->why, sizeof(p->why), "thread name");
		break;
	case HP_WATCH_CHILD:
		snprintf(p->why, sizeof(p->why), "child of %u", p->parent);
		break;
	default:
		snprintf(p->why, sizeof(p->why), "?");
	}
}

/* recorder_watch, and with ret_refused_uid set, refused (-EDQUOT, and whose it is) when
 * its user has no room. */
static int watch_proc(struct recorder *rec, uint32_t pid, uint32_t reason, uint32_t parent, uint64_t now,
		      uint32_t *ret_refused_uid, struct proc_rec **ret)
{
	struct proc_rec *p = pidmap_get(&rec->live, pid);
	struct recorder_user *u;
	int r;

	if (p) {
		if (ret)
			*ret = p;
		return 0;
	}
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	r = proc_read_info(pid, &p->info);
	if (r < 0) {
		free(p);
		return r;
	}
	u = user_get(rec, owner_of(p));
	if (!u) {
		free(p);
		return -ENOMEM;
	}
	if (ret_refused_uid && recorder_user_over_quota(rec, u->uid)) {
		u->refused++;
		*ret_refused_uid = u->uid;
		free(p);
		return -EDQUOT;
	}
	/* not its cmdline: reading it takes the process's mmap_lock, which the process can
	 * hold as long as it likes; watch.c reads it on the worker */
	(void)proc_for_each_task(pid, add_task_name, p);
	p->reason = reason;
	p->parent = parent;
	p->watch_ns = now;
	p->acct.since_ns = now;
	p->pid_free_ns = recent_exit_of(rec, pid);
	p->maps_dirty = true; /* its mappings are read on the next tick */
	describe_reason(p);

	if (rec->n_procs == rec->cap_procs) {
		size_t cap = rec->cap_procs ? rec->cap_procs * 2 : 16;
		struct proc_rec **v = realloc(rec->procs, cap * sizeof(*v));

		if (!v) {
			proc_rec_free(rec, p);
			return -ENOMEM;
		}
		rec->procs = v;
		rec->cap_procs = cap;
	}
	r = pidmap_put(&rec->live, pid, p);
	if (r < 0) {
		proc_rec_free(rec, p);
		return r;
	}
	rec->procs[rec->n_procs++] = p;
	u->live++;
	if (ret)
		*ret = p;
	return 0;
}

int recorder_watch(struct recorder *rec, uint32_t pid, uint32_t reason, uint32_t parent, uint64_t now,
		   struct proc_rec **ret)
{
	return watch_proc(rec, pid, reason, parent, now, NULL, ret);
}

struct proc_rec *recorder_find_live(const struct recorder *rec, uint32_t pid)
{
	return pidmap_get(&rec->live, pid);
}

struct proc_rec *recorder_find(const struct recorder *rec, uint32_t pid)
{
	struct proc_rec *p = pidmap_get(&rec->live, pid);

	if (p)
		return p;
	/* NULL: freed by the tick that calls freed_fn now */
	for (size_t i = rec->n_procs; i-- > 0;)
		if (rec->procs[i] && rec->procs[i]->info.pid == pid)
			return rec->procs[i];
	return NULL;
}

static void drop_head(struct recorder *rec, struct proc_rec *p, bool for_space)
{
	struct chunk *c = p->head;

	if (!c)
		return;
	if (for_space)
		p->evicted += c->nrec;
	p->head = c->next;
	if (!p->head)
		p->tail = NULL;
	p->bytes -= RECORDER_CHUNK;
	if (p != rec->host) {
		struct recorder_user *u = user_find(rec, owner_of(p));

		rec->bytes -= RECORDER_CHUNK;
		if (u)
			u->bytes -= RECORDER_CHUNK;
	}
	chunk_put(&rec->pool, c);
}

/* The process, of uid's (any's: NULL), whose oldest chunk is the oldest; NULL if none. */
static struct proc_rec *oldest_of(const struct recorder *rec, const uint32_t *uid)
{
	struct proc_rec *oldest = NULL;

	for (size_t i = 0; i < rec->n_procs; i++) {
		struct proc_rec *q = rec->procs[i];

		if (!q->head || (uid && owner_of(q) != *uid))
			continue;
		if (!oldest || q->head->max_ts < oldest->head->max_ts)
			oldest = q;
	}
	return oldest;
}

/* Where a root process's new chunk comes from under the global budget: the oldest chunk of
 * the user (root too) that holds the most. */
static struct proc_rec *oldest_of_largest(const struct recorder *rec)
{
	const struct recorder_user *most = NULL;

	for (size_t i = 0; i < rec->n_users; i++) {
		const struct recorder_user *u = &rec->users[i];

		/* a user that holds as much as root goes before root */
		if (u->bytes && (!most || u->bytes > most->bytes || (u->bytes == most->bytes && most->uid == 0)))
			most = u;
	}
	return most ? oldest_of(rec, &most->uid) : NULL;
}

/*
 * Make room for one more chunk of p: under the per-process budget its own oldest chunks
 * go; under its user's budget (not root's) the oldest of that user's; under the global
 * one the oldest of that user's too, or for a root process the oldest of the user that
 * holds the most. Each record dropped is counted in its process's `evicted`. false: no
 * room that p's user may take (the global budget is full of others' history). The host
 * recorder (--cpus) has its own budget, outside memory_bytes.
 */
static bool make_room(struct recorder *rec, struct proc_rec *p)
{
	uint32_t uid = owner_of(p);
	struct recorder_user *u;
	struct proc_rec *q;

	if (p == rec->host) {
		while (p->head && p->bytes + RECORDER_CHUNK > rec->lim.host_bytes)
			drop_head(rec, p, true);
		return true;
	}
	while (p->head && p->bytes + RECORDER_CHUNK > rec->lim.buffer_bytes)
		drop_head(rec, p, true);
	u = user_find(rec, uid);
	if (uid != 0 && u && rec->lim.user_bytes)
		while (u->bytes + RECORDER_CHUNK > rec->lim.user_bytes && (q = oldest_of(rec, &uid)))
			drop_head(rec, q, true);
	while (rec->bytes + RECORDER_CHUNK > rec->lim.memory_bytes) {
		q = uid == 0 ? oldest_of_largest(rec) : oldest_of(rec, &uid);
		if (!q)
			break;
		drop_head(rec, q, true);
	}
	if (uid == 0 || !u)
		return true;
	if ((rec->lim.user_bytes && u->bytes + RECORDER_CHUNK > rec->lim.user_bytes) ||
	    (rec->bytes && rec->bytes + RECORDER_CHUNK > rec->lim.memory_bytes)) {
		u->dropped++;
		return false;
	}
	return true;
}

static void append_to(struct recorder *rec, struct proc_rec *p, const struct hp_hdr *hdr)
{
	struct chunk *c = p->tail;

	if (p != rec->host)
		timeacct_record(&p->acct, p->info.pid, hdr);
	if (!c || c->used + hdr->size > RECORDER_CHUNK - sizeof(struct chunk)) {
		if (!make_room(rec, p)) {
			p->evicted++;
			return;
		}
		c = chunk_get(&rec->pool);
		if (!c) {
			p->evicted++;
			return;
		}
		c->next = NULL;
		c->used = 0;
		c->nrec = 0;
		c->min_ts = UINT64_MAX;
		c->max_ts = 0;
		if (p->tail)
			p->tail->next = c;
		else
			p->head = c;
		p->tail = c;
		p->bytes += RECORDER_CHUNK;
		if (p != rec->host) {
			struct recorder_user *u = user_find(rec, owner_of(p));

			rec->bytes += RECORDER_CHUNK;
			if (u)
				u->bytes += RECORDER_CHUNK;
		}
	}
	memcpy(c->data + c->used, hdr, hdr->size);
	c->used += hdr->size;
	c->nrec++;
	c->min_ts = MIN(c->min_ts, hdr->ts);
	c->max_ts = MAX(c->max_ts, hdr->ts);
	p->events++;
}

/* How long after its exit record a reaped process may still be sent records of its dying
 * threads (seen: up to ~50 ms, a thread freeing its memory in a memory cgroup at its limit) */
#define DYING_REAPED_NS (NSEC_PER_SEC)
/* How much newer than an unwatch a record of the process may be: one a program was
 * writing as the kernel was told to stop (watch_stop stops the kernel first) */
#define UNWATCH_INFLIGHT_NS (NSEC_PER_MSEC)

/*
 * A record of pid newer than the exit record of its last holder, none live: its dying
 * threads' last records, or a new holder's drained before its fork. The kernel's exit
 * record comes as the last thread begins to exit, and more than one thread may take
 * itself for the last (each reads the live count its own decrement and the others' left);
 * one that is still exiting frees its memory and files, switches in D and runs again ms
 * later, with its wakeup, its off-CPU interval and its blocked syscall. The pid is free
 * once it is reaped. So the old holder's while /proc shows it still (the same start time)
 * or nothing (reaped since, no new holder yet: within DYING_REAPED_NS of the exit); NULL
 * when /proc shows another process, or the holder was found gone by the tick (its exit_ns
 * is then the tick's, after the process was). A /proc read for each such record: a few
 * per exit, and those of a pid the kernel watches that the daemon has not heard of yet.
 */
static struct proc_rec *dying_holder(const struct recorder *rec, uint32_t pid, uint64_t ts)
{
	struct proc_rec *p;
	struct proc_info now;
	int r;

	if (pidmap_get(&rec->live, pid) || ts <= recent_exit_of(rec, pid))
		return NULL;
	p = recent_last(rec, pid);
	/* unwatched (after the kernel was told to stop): a program that looked before, still
	 * writing its record; past that, the kernel is watching the process still */
	if (p && p->unwatched && !p->exit_record)
		return ts - p->exit_ns <= UNWATCH_INFLIGHT_NS ? p : NULL;
	if (!p || !p->exit_record)
		return NULL;
	r = proc_read_info(pid, &now);
	if (r >= 0)
		return now.start_time == p->info.start_time ? p : NULL;
	if ((r == -ENOENT || r == -ESRCH) && ts - p->exit_ns <= DYING_REAPED_NS)
		return p;
	return NULL;
}

/* The live record for pid; created on first sight of a process the kernel started
 * watching, if its user has room (else the kernel is told to stop). birth: the record that
 * made it watched in the kernel (a fork, a rename), not one of its later ones. */
static struct proc_rec *live_or_new(struct recorder *rec, uint32_t pid, uint32_t reason, uint32_t parent,
				    uint64_t ts, bool birth)
{
	struct proc_rec *p = holder(rec, pid, ts);
	uint32_t uid;
	int r;

	if (p || pidmap_get(&rec->live, pid) || ts <= recent_exit_of(rec, pid))
		return p; /* a record of a holder of pid that is gone from here */
	/* not a birth: the old holder's if it is dying still, a new process otherwise */
	if (!birth && (p = dying_holder(rec, pid, ts)))
		return p;
	p = NULL;
	if (birth)
		refused_forget(rec, pid);
	else if (recently_refused(rec, pid))
		return NULL;
	r = watch_proc(rec, pid, reason, parent, ts, &uid, &p);
	if (r == -EDQUOT) {
		rec->refused_pids[rec->refused_next++ % RECENT_REFUSED] = pid;
		if (rec->hooks.refused)
			rec->hooks.refused(rec->hooks.ud, pid, uid);
		return NULL;
	}
	if (r < 0)
		return NULL;
	log_info("watching pid %u (%s): %s", pid, p->info.comm, p->why);
	return p;
}

static bool syscall_changes_maps(uint32_t nr)
{
	static const char *const names[] = { "mmap", "munmap", "mprotect", "execve", "execveat" };

	if (nr >= syscall_names_len || !syscall_names[nr])
		return false;
	for (size_t i = 0; i < ARRAY_SIZE(names); i++)
		if (!strcmp(syscall_names[nr], names[i]))
			return true;
	return false;
}

/*
 * The drain's dispatch: one handler per record type, append_<name> for each type of
 * HP_RECORDS. Those of switches, names, forks, execs and syscalls do more than file the
 * record with its process.
 */
static void append_switch(struct recorder *rec, const struct hp_hdr *hdr)
{
	const struct hp_switch *e = (const void *)hdr;
	struct proc_rec *p;

	if (!(e->flags & (HP_SW_PREV_WATCHED | HP_SW_NEXT_WATCHED))) {
		/* who ran on the CPU where a watched thread waited: kept with its process */
		if (e->flags & HP_SW_VICTIM_CPU) {
			p = holder(rec, e->victim_pid, hdr->ts);
			if (p)
				append_to(rec, p, hdr);
		}
		/* --cpus: a switch on a recorded CPU between unwatched tasks */
		if ((e->flags & HP_SW_HOST_CPU) && rec->host)
			append_to(rec, rec->host, hdr);
		return;
	}
	if (e->flags & HP_SW_PREV_WATCHED) {
		p = NULL;
		/* its last switch-out as it died (X, Z): its last holder's, whoever has taken
		 * the pid since (drained after a new process took it, /proc shows that one) */
		if ((e->prev_state & (HP_STATE_EXIT_DEAD | HP_STATE_EXIT_ZOMBIE)) && !pidmap_get(&rec->live, e->prev_pid) &&
		    hdr->ts > recent_exit_of(rec, e->prev_pid))
			p = recent_last(rec, e->prev_pid);
		if (!p)
			p = live_or_new(rec, e->prev_pid, HP_WATCH_GLOB, 0, hdr->ts, false);
		if (p)
			append_to(rec, p, hdr);
	}
	if ((e->flags & HP_SW_NEXT_WATCHED) && !((e->flags & HP_SW_PREV_WATCHED) && e->next_pid == e->prev_pid)) {
		p = live_or_new(rec, e->next_pid, HP_WATCH_GLOB, 0, hdr->ts, false);
		if (p)
			append_to(rec, p, hdr);
	}
}

static void file_comm(struct recorder *rec, const struct hp_hdr *hdr, bool birth)
{
	const struct hp_comm *e = (const void *)hdr;
	struct proc_rec *p = live_or_new(rec, e->pid, HP_WATCH_GLOB, 0, hdr->ts, birth);

	if (!p)
		return;
	set_thread_name(p, e->tid, e->comm);
	append_to(rec, p, hdr);
}

static void append_comm(struct recorder *rec, const struct hp_hdr *hdr)
{
	file_comm(rec, hdr, false);
}

/* The rename that made a process watched: kept as a rename. */
static void append_watch(struct recorder *rec, const struct hp_hdr *hdr)
{
	file_comm(rec, hdr, true);
}

/* p exited at ts (the kernel said so): no longer live, and its pid is free. */
static void end_process(struct recorder *rec, struct proc_rec *p, uint64_t ts, const char *how)
{
	p->exit_ns = ts;
	live_del(rec, p);
	recent_add(rec, p, ts);
	log_info("pid %u (%s) %s; its history stays for the window", p->info.pid, p->info.comm, how);
	if (rec->hooks.gone)
		rec->hooks.gone(rec->hooks.ud, p);
}

/* A new process got pid: a live one of that pid watched before the fork is gone (its
 * exit record was lost), unless it is the child itself, watched by request in between. */
static void end_previous_holder(struct recorder *rec, uint32_t pid, uint64_t ts)
{
	struct proc_rec *p = pidmap_get(&rec->live, pid);
	struct proc_info now;

	if (!p || p->watch_ns >= ts)
		return;
	if (proc_read_info(pid, &now) >= 0 && now.start_time == p->info.start_time)
		return;
	end_process(rec, p, ts, "exited (its pid went to a new process)");
}

static void append_fork(struct recorder *rec, const struct hp_hdr *hdr)
{
	const struct hp_fork *e = (const void *)hdr;
	struct proc_rec *p;

	if (e->child_pid != e->parent_pid) {
		end_previous_holder(rec, e->child_pid, hdr->ts);
		p = live_or_new(rec, e->child_pid, HP_WATCH_CHILD, e->parent_pid, hdr->ts, true);
		if (p && p->reason == HP_WATCH_GLOB && p->watch_ns >= hdr->ts) {
			/* made by one of its own records, drained before this one */
			p->reason = HP_WATCH_CHILD;
			p->parent = e->parent_pid;
			describe_reason(p);
		}
		if (p)
			set_thread_name(p, e->child_tid, e->comm);
	}
	p = live_or_new(rec, e->parent_pid, HP_WATCH_GLOB, 0, hdr->ts, false);
	if (!p)
		return;
	if (e->child_pid == e->parent_pid)
		set_thread_name(p, e->child_tid, e->comm);
	append_to(rec, p, hdr);
}

/*
 * File a record with the process that holds pid, or held it until its exit record (or its
 * unwatch) and is dying still (dying_holder), or one the kernel started watching that the
 * drain has not heard of yet: as a switch does, the first record of a child whose fork
 * record is in another CPU's ring, drained after this one's, makes it watched here (the
 * fork record then says it is a child); that process.
 */
static struct proc_rec *append_to_live(struct recorder *rec, uint32_t pid, const struct hp_hdr *hdr)
{
	struct proc_rec *p = holder(rec, pid, hdr->ts);

	if (!p)
		p = live_or_new(rec, pid, HP_WATCH_GLOB, 0, hdr->ts, false);
	if (p)
		append_to(rec, p, hdr);
	else
		rec->unowned++; /* shown as the drop cause no_process */
	return p;
}

static void append_exec(struct recorder *rec, const struct hp_hdr *hdr)
{
	const struct hp_exec *e = (const void *)hdr;
	struct proc_rec *p = append_to_live(rec, e->pid, hdr);

	if (!p)
		return;
	set_thread_name(p, e->tid, e->comm);
	memcpy(p->info.comm, e->comm, HP_COMM_LEN);
	p->info.comm[HP_COMM_LEN - 1] = 0;
	p->maps_dirty = true;
	p->py_checked = false; /* it may be CPython now, or no more */
	p->py_tries = 0;
	if (!p->exec_since_check_ns)
		p->exec_since_check_ns = hdr->ts; /* credentials may have changed here (watch.c) */
}

/* The exit of a process's last thread: the kernel stopped watching its pid, which may
 * name another process before the next tick. */
static void append_exit(struct recorder *rec, const struct hp_hdr *hdr)
{
	const struct hp_exit *e = (const void *)hdr;
	struct proc_rec *p = append_to_live(rec, e->pid, hdr);

	if (p && (e->flags & HP_EXIT_GROUP) && !p->exit_ns) {
		p->exit_record = true;
		end_process(rec, p, hdr->ts, "exited");
	}
}

static void append_syscall(struct recorder *rec, const struct hp_hdr *hdr)
{
	const struct hp_syscall *e = (const void *)hdr;
	struct proc_rec *p = append_to_live(rec, e->pid, hdr);

	if (p && syscall_changes_maps(e->nr))
		p->maps_dirty = true;
}

/* The other types go to the process in their `pid`. */
#define APPEND_TO_LIVE(name, st)                                                  \
	static void append_##name(struct recorder *rec, const struct hp_hdr *hdr) \
	{                                                                         \
		(void)append_to_live(rec, ((const struct st *)hdr)->pid, hdr);    \
	}
APPEND_TO_LIVE(wake, hp_wake)
APPEND_TO_LIVE(migrate, hp_migrate)
APPEND_TO_LIVE(offcpu, hp_offcpu)
APPEND_TO_LIVE(sample, hp_sample)
APPEND_TO_LIVE(ustack, hp_ustack)
APPEND_TO_LIVE(irq, hp_irq)
APPEND_TO_LIVE(reclaim, hp_reclaim)
APPEND_TO_LIVE(faults, hp_faults)
APPEND_TO_LIVE(lock, hp_lock)
APPEND_TO_LIVE(gil, hp_gil)
APPEND_TO_LIVE(pystack, hp_pystack)
APPEND_TO_LIVE(pygc, hp_pygc)
#undef APPEND_TO_LIVE

/* The drain turns these into samples (rawsample.c) before they come here: recorder_append
 * refuses one that does come, as it refuses a record that does not parse. */
static void append_rawsample(struct recorder *rec, const struct hp_hdr *hdr)
{
}

static void append_rawustack(struct recorder *rec, const struct hp_hdr *hdr)
{
}

static void (*const append_fn[HP_EV_MAX])(struct recorder *rec, const struct hp_hdr *hdr) = {
#define X_APPEND(type, st, name, frames) [type] = append_##name,
	HP_RECORDS(X_APPEND)
#undef X_APPEND
};

int recorder_append(struct recorder *rec, const struct hp_hdr *hdr)
{
	if (record_check(hdr, hdr->size) < 0 || hdr->type == HP_EV_RAWSAMPLE || hdr->type == HP_EV_RAWUSTACK) {
		rec->refused++;
		return -EBADMSG;
	}
	rec->events++;
	append_fn[hdr->type](rec, hdr);
	return 0;
}

#define PROC_UNREAD_TICKS 5

static bool proc_gone(struct proc_rec *p)
{
	struct proc_info now;
	int r = proc_read_info(p->info.pid, &now);

	/* gone when /proc says so; a read that failed otherwise (no memory, no file
	 * descriptors, a line not parsed) is tried again for a few ticks first */
	if (r == -ENOENT || r == -ESRCH)
		return true;
	if (r < 0) {
		if (++p->unread_ticks >= PROC_UNREAD_TICKS) {
			log_internal(LOG_WARNING, r, "pid %u: /proc/%u unreadable %u ticks in a row: %m; taken as gone",
				     p->info.pid, p->info.pid, p->unread_ticks);
			return true;
		}
		return false;
	}
	p->unread_ticks = 0;
	return now.start_time != p->info.start_time;
}

void recorder_tick(struct recorder *rec, uint64_t now, void (*gone_fn)(void *ud, struct proc_rec *p),
		   void (*freed_fn)(void *ud, uint32_t pid), void *ud)
{
	uint64_t horizon = now > rec->lim.window_ns ? now - rec->lim.window_ns : 0;
	_cleanup_free_ uint32_t *freed = NULL; /* told after the array is whole again */
	size_t keep = 0, n_freed = 0;

	while (rec->host && rec->host->head && rec->host->head->max_ts < horizon)
		drop_head(rec, rec->host, false);

	for (size_t i = 0; i < rec->n_procs; i++) {
		struct proc_rec *p = rec->procs[i];

		while (p->head && p->head->max_ts < horizon)
			drop_head(rec, p, false);
		if (!p->exit_ns && proc_gone(p)) {
			p->exit_ns = now;
			live_del(rec, p);
			/* its records still queued in the rings, older than now, stay its own: a
			 * rename among them must not watch its pid again (a zombie still reads) */
			recent_add(rec, p, now);
			log_info("pid %u (%s) exited; its history stays for the window", p->info.pid,
				 p->info.comm);
			if (gone_fn)
				gone_fn(ud, p);
		}
		if (p->exit_ns && !p->head && p->exit_ns < horizon) {
			uint32_t pid = p->info.pid;

			recent_forget(rec, p);
			/* out of the array before freed_fn looks into it (recorder_find) */
			rec->procs[i] = NULL;
			proc_rec_free(rec, p);
			/* freed_fn may look processes up (recorder_find): not while procs[] still
			 * holds this one */
			if (freed_fn && !freed)
				freed = malloc(rec->n_procs * sizeof(*freed));
			if (freed)
				freed[n_freed++] = pid;
			continue;
		}
		rec->procs[keep++] = p;
	}
	rec->n_procs = keep;
	for (size_t i = 0; i < n_freed; i++)
		freed_fn(ud, freed[i]);
}

size_t recorder_count(const struct recorder *rec)
{
	return rec->n_procs;
}

struct proc_rec *recorder_at(const struct recorder *rec, size_t i)
{
	return i < rec->n_procs ? rec->procs[i] : NULL;
}

uint64_t recorder_bytes(const struct recorder *rec)
{
	return rec->bytes;
}

uint64_t recorder_events(const struct recorder *rec)
{
	return rec->events;
}

uint64_t recorder_refused(const struct recorder *rec)
{
	return rec->refused;
}

uint64_t recorder_unowned(const struct recorder *rec)
{
	return rec->unowned;
}

const struct recorder_limits *recorder_limits(const struct recorder *rec)
{
	return &rec->lim;
}

void recorder_gone(struct recorder *rec, struct proc_rec *p, uint64_t now)
{
	if (p->exit_ns)
		return;
	p->exit_ns = now;
	live_del(rec, p);
	/* as the tick does: the exit record of this holder, drained after a new process took
	 * the pid, is this one's, not the new holder's end */
	recent_add(rec, p, now);
	log_info("pid %u (%s) exited; its history stays for the window", p->info.pid, p->info.comm);
}

void recorder_stop(struct recorder *rec, struct proc_rec *p, uint64_t now)
{
	if (p->exit_ns)
		return;
	p->exit_ns = now;
	p->unwatched = true;
	live_del(rec, p);
	/* its records still in the rings are its own (recent_holder, dying_holder), not a
	 * new watch of its pid */
	recent_add(rec, p, now);
}

int recorder_enable_host(struct recorder *rec, bool on)
{
	if (!on) {
		proc_rec_free(rec, rec->host);
		rec->host = NULL;
		return 0;
	}
	if (rec->host)
		return 0;
	rec->host = calloc(1, sizeof(*rec->host));
	if (!rec->host)
		return -ENOMEM;
	snprintf(rec->host->info.comm, sizeof(rec->host->info.comm), "[cpus]");
	snprintf(rec->host->why, sizeof(rec->host->why), "--cpus");
	return 0;
}

const struct proc_rec *recorder_host(const struct recorder *rec)
{
	return rec->host;
}

size_t recorder_live_count(const struct recorder *rec)
{
	return rec->live.n;
}

void recorder_for_each_record(const struct proc_rec *p, void (*fn)(void *ud, const struct hp_hdr *h), void *ud)
{
	for (const struct chunk *c = p->head; c; c = c->next)
		for (uint32_t off = 0; off < c->used;) {
			const struct hp_hdr *h = (const void *)(c->data + off);

			off += h->size;
			fn(ud, h);
		}
}

bool recorder_history_span(const struct proc_rec *p, uint64_t *ret_first, uint64_t *ret_last)
{
	uint64_t first = UINT64_MAX, last = 0;

	for (const struct chunk *c = p->head; c; c = c->next) {
		if (!c->nrec)
			continue;
		first = MIN(first, c->min_ts);
		last = MAX(last, c->max_ts);
	}
	if (first > last)
		return false;
	*ret_first = first;
	*ret_last = last;
	return true;
}
