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

struct recorder {
	struct recorder_limits lim;
	struct proc_rec *host; /* --cpus: switches between unwatched tasks on recorded CPUs */
	struct proc_rec **procs; /* all, live and exited, in the order they were watched */
	size_t n_procs, cap_procs;
	struct pidmap live;
	uint64_t bytes;
	uint64_t events;
	uint64_t refused;
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

static void proc_rec_free(struct proc_rec *p)
{
	struct chunk *c, *next;

	if (!p)
		return;
	for (c = p->head; c; c = next) {
		next = c->next;
		free(c);
	}
	free(p->threads);
	free(p->cmdline);
	free(p->final_hists);
	free(p);
}

void recorder_free(struct recorder *rec)
{
	if (!rec)
		return;
	for (size_t i = 0; i < rec->n_procs; i++)
		proc_rec_free(rec->procs[i]);
	proc_rec_free(rec->host);
	free(rec->procs);
	pidmap_free(&rec->live);
	free(rec);
}

void recorder_set_limits(struct recorder *rec, const struct recorder_limits *lim)
{
	rec->lim = *lim;
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

int recorder_watch(struct recorder *rec, uint32_t pid, uint32_t reason, uint32_t parent, uint64_t now,
		   struct proc_rec **ret)
{
	struct proc_rec *p = pidmap_get(&rec->live, pid);
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
	/* not its cmdline: reading it takes the process's mmap_lock, which the process can
	 * hold as long as it likes; watch.c reads it on the worker */
	(void)proc_for_each_task(pid, add_task_name, p);
	p->reason = reason;
	p->parent = parent;
	p->watch_ns = now;
	p->maps_dirty = true; /* its mappings are read on the next tick */
	describe_reason(p);

	if (rec->n_procs == rec->cap_procs) {
		size_t cap = rec->cap_procs ? rec->cap_procs * 2 : 16;
		struct proc_rec **v = realloc(rec->procs, cap * sizeof(*v));

		if (!v) {
			proc_rec_free(p);
			return -ENOMEM;
		}
		rec->procs = v;
		rec->cap_procs = cap;
	}
	r = pidmap_put(&rec->live, pid, p);
	if (r < 0) {
		proc_rec_free(p);
		return r;
	}
	rec->procs[rec->n_procs++] = p;
	if (ret)
		*ret = p;
	return 0;
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
	for (size_t i = rec->n_procs; i-- > 0;)
		if (rec->procs[i]->info.pid == pid)
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
	if (p != rec->host)
		rec->bytes -= RECORDER_CHUNK;
	free(c);
}

/* Make room for one more chunk of p: under the per-process budget its own oldest chunks
 * go, then under the global one the chunks whose newest record is the oldest of all
 * processes. Each record dropped is counted in its process's `evicted`. The host
 * recorder (--cpus) has its own budget, outside memory_bytes. */
static void make_room(struct recorder *rec, struct proc_rec *p)
{
	if (p == rec->host) {
		while (p->head && p->bytes + RECORDER_CHUNK > rec->lim.host_bytes)
			drop_head(rec, p, true);
		return;
	}
	while (p->head && p->bytes + RECORDER_CHUNK > rec->lim.buffer_bytes)
		drop_head(rec, p, true);
	while (rec->bytes + RECORDER_CHUNK > rec->lim.memory_bytes) {
		struct proc_rec *oldest = NULL;

		for (size_t i = 0; i < rec->n_procs; i++) {
			struct proc_rec *q = rec->procs[i];

			if (q->head && (!oldest || q->head->max_ts < oldest->head->max_ts))
				oldest = q;
		}
		if (!oldest)
			break;
		drop_head(rec, oldest, true);
	}
}

static void append_to(struct recorder *rec, struct proc_rec *p, const struct hp_hdr *hdr)
{
	struct chunk *c = p->tail;

	if (!c || c->used + hdr->size > RECORDER_CHUNK - sizeof(struct chunk)) {
		make_room(rec, p);
		c = malloc(RECORDER_CHUNK);
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
		if (p != rec->host)
			rec->bytes += RECORDER_CHUNK;
	}
	memcpy(c->data + c->used, hdr, hdr->size);
	c->used += hdr->size;
	c->nrec++;
	c->min_ts = MIN(c->min_ts, hdr->ts);
	c->max_ts = MAX(c->max_ts, hdr->ts);
	p->events++;
}

/* The live record for pid; created on first sight of a process the kernel started watching. */
static struct proc_rec *live_or_new(struct recorder *rec, uint32_t pid, uint32_t reason, uint32_t parent,
				    uint64_t ts)
{
	struct proc_rec *p = pidmap_get(&rec->live, pid);

	if (p || recorder_watch(rec, pid, reason, parent, ts, &p) < 0)
		return p;
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
			p = pidmap_get(&rec->live, e->victim_pid);
			if (p)
				append_to(rec, p, hdr);
		}
		/* --cpus: a switch on a recorded CPU between unwatched tasks */
		if ((e->flags & HP_SW_HOST_CPU) && rec->host)
			append_to(rec, rec->host, hdr);
		return;
	}
	if (e->flags & HP_SW_PREV_WATCHED) {
		p = live_or_new(rec, e->prev_pid, HP_WATCH_GLOB, 0, hdr->ts);
		if (p)
			append_to(rec, p, hdr);
	}
	if ((e->flags & HP_SW_NEXT_WATCHED) && !((e->flags & HP_SW_PREV_WATCHED) && e->next_pid == e->prev_pid)) {
		p = live_or_new(rec, e->next_pid, HP_WATCH_GLOB, 0, hdr->ts);
		if (p)
			append_to(rec, p, hdr);
	}
}

static void append_comm(struct recorder *rec, const struct hp_hdr *hdr)
{
	const struct hp_comm *e = (const void *)hdr;
	struct proc_rec *p = live_or_new(rec, e->pid, HP_WATCH_GLOB, 0, hdr->ts);

	if (!p)
		return;
	set_thread_name(p, e->tid, e->comm);
	append_to(rec, p, hdr);
}

/* The rename that made a process watched: kept as a rename. */
static void append_watch(struct recorder *rec, const struct hp_hdr *hdr)
{
	append_comm(rec, hdr);
}

static void append_fork(struct recorder *rec, const struct hp_hdr *hdr)
{
	const struct hp_fork *e = (const void *)hdr;
	struct proc_rec *p;

	if (e->child_pid != e->parent_pid) {
		p = live_or_new(rec, e->child_pid, HP_WATCH_CHILD, e->parent_pid, hdr->ts);
		if (p)
			set_thread_name(p, e->child_tid, e->comm);
	}
	p = live_or_new(rec, e->parent_pid, HP_WATCH_GLOB, 0, hdr->ts);
	if (!p)
		return;
	if (e->child_pid == e->parent_pid)
		set_thread_name(p, e->child_tid, e->comm);
	append_to(rec, p, hdr);
}

/* File a record with the live process pid, if it is one (no /proc reads here); that process. */
static struct proc_rec *append_to_live(struct recorder *rec, uint32_t pid, const struct hp_hdr *hdr)
{
	struct proc_rec *p = pidmap_get(&rec->live, pid);

	if (p)
		append_to(rec, p, hdr);
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
	if (!p->exec_since_check_ns)
		p->exec_since_check_ns = hdr->ts; /* credentials may have changed here (watch.c) */
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
APPEND_TO_LIVE(exit, hp_exit)
APPEND_TO_LIVE(wake, hp_wake)
APPEND_TO_LIVE(migrate, hp_migrate)
APPEND_TO_LIVE(offcpu, hp_offcpu)
APPEND_TO_LIVE(sample, hp_sample)
APPEND_TO_LIVE(ustack, hp_ustack)
APPEND_TO_LIVE(irq, hp_irq)
APPEND_TO_LIVE(reclaim, hp_reclaim)
APPEND_TO_LIVE(faults, hp_faults)
APPEND_TO_LIVE(lock, hp_lock)
#undef APPEND_TO_LIVE

static void (*const append_fn[HP_EV_MAX])(struct recorder *rec, const struct hp_hdr *hdr) = {
#define X_APPEND(type, st, name, frames) [type] = append_##name,
	HP_RECORDS(X_APPEND)
#undef X_APPEND
};

int recorder_append(struct recorder *rec, const struct hp_hdr *hdr)
{
	if (record_check(hdr, hdr->size) < 0) {
		rec->refused++;
		return -EBADMSG;
	}
	rec->events++;
	append_fn[hdr->type](rec, hdr);
	return 0;
}

static bool proc_gone(const struct proc_rec *p)
{
	struct proc_info now;

	if (proc_read_info(p->info.pid, &now) < 0)
		return true;
	return now.start_time != p->info.start_time;
}

void recorder_tick(struct recorder *rec, uint64_t now, void (*gone_fn)(void *ud, struct proc_rec *p),
		   void (*freed_fn)(void *ud, uint32_t pid), void *ud)
{
	uint64_t horizon = now > rec->lim.window_ns ? now - rec->lim.window_ns : 0;
	size_t keep = 0;

	while (rec->host && rec->host->head && rec->host->head->max_ts < horizon)
		drop_head(rec, rec->host, false);

	for (size_t i = 0; i < rec->n_procs; i++) {
		struct proc_rec *p = rec->procs[i];

		while (p->head && p->head->max_ts < horizon)
			drop_head(rec, p, false);
		if (!p->exit_ns && proc_gone(p)) {
			p->exit_ns = now;
			pidmap_del(&rec->live, p->info.pid);
			log_info("pid %u (%s) exited; its history stays for the window", p->info.pid,
				 p->info.comm);
			if (gone_fn)
				gone_fn(ud, p);
		}
		if (p->exit_ns && !p->head && p->exit_ns < horizon) {
			uint32_t pid = p->info.pid;

			proc_rec_free(p);
			if (freed_fn)
				freed_fn(ud, pid);
			continue;
		}
		rec->procs[keep++] = p;
	}
	rec->n_procs = keep;
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

const struct recorder_limits *recorder_limits(const struct recorder *rec)
{
	return &rec->lim;
}

void recorder_stop(struct recorder *rec, struct proc_rec *p, uint64_t now)
{
	if (p->exit_ns)
		return;
	p->exit_ns = now;
	p->unwatched = true;
	pidmap_del(&rec->live, p->info.pid);
}

int recorder_enable_host(struct recorder *rec, bool on)
{
	if (!on) {
		proc_rec_free(rec->host);
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
