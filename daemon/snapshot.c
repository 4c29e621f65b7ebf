// SPDX-License-Identifier: GPL-2.0-only
/*
 * Snapshot: turn one process's flight recorder into a canonical .hps snapshot. This is
 * where the per-CPU shards are merged: records are collected from the chunks, sorted by
 * timestamp and written as columns.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "hps.h"
#include "log.h"
#include "macro.h"
#include "snapshot.h"

static uint64_t clock_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return ts.tv_sec * NSEC_PER_SEC + ts.tv_nsec;
}

/* Interned task names: a small open-addressing table over the 16-byte comms. */
struct strtab {
	char **strs;
	size_t n, cap;
	uint32_t *slots; /* index + 1, 0 = empty */
	size_t nslots;
};

static uint32_t comm_hash(const char *s)
{
	uint32_t h = 2166136261u;

	for (size_t i = 0; i < HP_COMM_LEN && s[i]; i++)
		h = (h ^ (uint8_t)s[i]) * 16777619u;
	return h;
}

static int strtab_grow(struct strtab *t)
{
	size_t nslots = t->nslots ? t->nslots * 2 : 256;
	uint32_t *slots = calloc(nslots, sizeof(*slots));

	if (!slots)
		return -ENOMEM;
	for (size_t i = 0; i < t->n; i++) {
		size_t j = comm_hash(t->strs[i]) & (nslots - 1);

		while (slots[j])
			j = (j + 1) & (nslots - 1);
		slots[j] = i + 1;
	}
	free(t->slots);
	t->slots = slots;
	t->nslots = nslots;
	return 0;
}

/* Index of s (at most HP_COMM_LEN bytes, maybe unterminated) in the table. */
static int strtab_intern(struct strtab *t, const char *s, uint32_t *ret)
{
	char name[HP_COMM_LEN + 1];
	size_t j;

	memcpy(name, s, HP_COMM_LEN);
	name[HP_COMM_LEN] = 0;
	if ((t->n + 1) * 2 > t->nslots && strtab_grow(t) < 0)
		return -ENOMEM;
	for (j = comm_hash(name) & (t->nslots - 1); t->slots[j]; j = (j + 1) & (t->nslots - 1))
		if (!strcmp(t->strs[t->slots[j] - 1], name)) {
			*ret = t->slots[j] - 1;
			return 0;
		}
	if (t->n == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 64;
		char **v = realloc(t->strs, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		t->strs = v;
		t->cap = cap;
	}
	t->strs[t->n] = strdup(name);
	if (!t->strs[t->n])
		return -ENOMEM;
	t->slots[j] = t->n + 1;
	*ret = t->n++;
	return 0;
}

static void strtab_free(struct strtab *t)
{
	for (size_t i = 0; i < t->n; i++)
		free(t->strs[i]);
	free(t->strs);
	free(t->slots);
}

static int cmp_switch_ts(const void *a, const void *b)
{
	const struct hp_switch *x = *(const struct hp_switch *const *)a;
	const struct hp_switch *y = *(const struct hp_switch *const *)b;

	if (x->hdr.ts != y->hdr.ts)
		return x->hdr.ts < y->hdr.ts ? -1 : 1;
	/* equal stamps: keep arrival order, which is per-CPU order */
	return x < y ? -1 : x > y;
}

/* All of everything the snapshot message points into, freed in one place. */
struct snap_build {
	Hostprof__Snapshot snap;
	Hostprof__HostInfo host;
	Hostprof__ClockAnchor clock;
	Hostprof__Process proc;
	Hostprof__Process *procs[1];
	Hostprof__Thread *thread_buf;
	Hostprof__Thread **threads;
	Hostprof__SchedSwitchTable sw;
	Hostprof__CaptureStats stats;
	Hostprof__Drop *drop_buf;
	Hostprof__Drop **drops;
	char **cmdline;
	struct strtab strs;
	struct utsname uts;
	char hostname[256];
	char producer[64];
	const struct hp_switch **events;
};

static void snap_build_free(struct snap_build *b)
{
	free(b->thread_buf);
	free(b->threads);
	free(b->drop_buf);
	free(b->drops);
	free(b->cmdline);
	free(b->sw.ts_delta);
	free(b->sw.cpu);
	free(b->sw.prev_tid);
	free(b->sw.prev_pid);
	free(b->sw.prev_comm);
	free(b->sw.prev_prio);
	free(b->sw.prev_state);
	free(b->sw.next_tid);
	free(b->sw.next_pid);
	free(b->sw.next_comm);
	free(b->sw.next_prio);
	free(b->events);
	strtab_free(&b->strs);
}

static int collect_switches(struct snap_build *b, const struct proc_rec *p, uint64_t from, uint64_t to,
			    size_t *ret_n)
{
	size_t n = 0, cap = 0;

	for (const struct chunk *c = p->head; c; c = c->next) {
		if (c->max_ts < from || c->min_ts > to)
			continue;
		for (uint32_t off = 0; off < c->used;) {
			const struct hp_hdr *h = (const void *)(c->data + off);

			off += h->size;
			if (h->type != HP_EV_SWITCH || h->ts < from || h->ts > to)
				continue;
			if (n == cap) {
				size_t ncap = cap ? cap * 2 : 4096;
				const struct hp_switch **v = realloc(b->events, ncap * sizeof(*v));

				if (!v)
					return -ENOMEM;
				b->events = v;
				cap = ncap;
			}
			b->events[n++] = (const void *)h;
		}
	}
	qsort(b->events, n, sizeof(*b->events), cmp_switch_ts);
	*ret_n = n;
	return 0;
}

static int fill_switch_table(struct snap_build *b, size_t n, uint64_t start)
{
	Hostprof__SchedSwitchTable *t = &b->sw;
	uint64_t prev_ts = start;
	int r;

	hostprof__sched_switch_table__init(t);
	t->n_ts_delta = t->n_cpu = t->n_prev_tid = t->n_prev_pid = t->n_prev_comm = t->n_prev_prio =
		t->n_prev_state = t->n_next_tid = t->n_next_pid = t->n_next_comm = t->n_next_prio = n;
	t->ts_delta = malloc(MAX(n, (size_t)1) * sizeof(uint64_t));
	t->cpu = malloc(MAX(n, (size_t)1) * sizeof(uint32_t));
	t->prev_tid = malloc(MAX(n, (size_t)1) * sizeof(uint32_t));
	t->prev_pid = malloc(MAX(n, (size_t)1) * sizeof(uint32_t));
	t->prev_comm = malloc(MAX(n, (size_t)1) * sizeof(uint32_t));
	t->prev_prio = malloc(MAX(n, (size_t)1) * sizeof(int32_t));
	t->prev_state = malloc(MAX(n, (size_t)1) * sizeof(uint32_t));
	t->next_tid = malloc(MAX(n, (size_t)1) * sizeof(uint32_t));
	t->next_pid = malloc(MAX(n, (size_t)1) * sizeof(uint32_t));
	t->next_comm = malloc(MAX(n, (size_t)1) * sizeof(uint32_t));
	t->next_prio = malloc(MAX(n, (size_t)1) * sizeof(int32_t));
	if (!t->ts_delta || !t->cpu || !t->prev_tid || !t->prev_pid || !t->prev_comm || !t->prev_prio ||
	    !t->prev_state || !t->next_tid || !t->next_pid || !t->next_comm || !t->next_prio)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		const struct hp_switch *e = b->events[i];

		t->ts_delta[i] = e->hdr.ts - prev_ts;
		prev_ts = e->hdr.ts;
		t->cpu[i] = e->hdr.cpu;
		t->prev_tid[i] = e->prev_tid;
		t->prev_pid[i] = e->prev_pid;
		t->prev_prio[i] = e->prev_prio;
		t->prev_state[i] = e->prev_state;
		t->next_tid[i] = e->next_tid;
		t->next_pid[i] = e->next_pid;
		t->next_prio[i] = e->next_prio;
		r = strtab_intern(&b->strs, e->prev_comm, &t->prev_comm[i]);
		if (r < 0)
			return r;
		r = strtab_intern(&b->strs, e->next_comm, &t->next_comm[i]);
		if (r < 0)
			return r;
	}
	return 0;
}

/* tid → slot in thread_buf, open addressing; slots hold index + 1 */
struct tidset {
	uint32_t *keys, *vals;
	size_t cap;
};

static uint32_t *tidset_slot(struct tidset *t, uint32_t tid)
{
	size_t i = (tid * 2654435761u) & (t->cap - 1);

	while (t->keys[i] && t->keys[i] != tid)
		i = (i + 1) & (t->cap - 1);
	t->keys[i] = tid;
	return &t->vals[i];
}

static Hostprof__Thread *add_thread(struct snap_build *b, struct tidset *set, size_t *nt, uint32_t tid,
				    uint32_t pid, char *comm)
{
	uint32_t *slot = tidset_slot(set, tid);
	Hostprof__Thread *t;

	if (*slot)
		return NULL;
	t = &b->thread_buf[*nt];
	hostprof__thread__init(t);
	t->has_tid = t->has_pid = true;
	t->tid = tid;
	t->pid = pid;
	t->comm = comm;
	*slot = ++*nt;
	return t;
}

/* Threads: every task seen in the window, named by its latest name, plus the process's. */
static int fill_threads(struct snap_build *b, const struct proc_rec *p, size_t n)
{
	size_t cap = p->n_threads + MIN(2 * n, (size_t)65536), nt = 0;
	struct tidset set = {};
	int r = 0;

	for (set.cap = 64; set.cap < 2 * (cap + 1); set.cap *= 2)
		;
	set.keys = calloc(set.cap, sizeof(uint32_t));
	set.vals = calloc(set.cap, sizeof(uint32_t));
	b->thread_buf = calloc(MAX(cap, (size_t)1), sizeof(*b->thread_buf));
	b->threads = calloc(MAX(cap, (size_t)1), sizeof(*b->threads));
	if (!set.keys || !set.vals || !b->thread_buf || !b->threads) {
		r = -ENOMEM;
		goto out;
	}
	/* newest first, so the first time a tid is met it carries its latest name */
	for (size_t k = n * 2; k-- > 0 && nt < cap;) {
		const struct hp_switch *e = b->events[k / 2];
		bool next = k % 2;
		uint32_t tid = next ? e->next_tid : e->prev_tid;
		uint32_t name = next ? b->sw.next_comm[k / 2] : b->sw.prev_comm[k / 2];

		if (tid == 0)
			continue; /* the idle task */
		add_thread(b, &set, &nt, tid, next ? e->next_pid : e->prev_pid, b->strs.strs[name]);
	}
	for (size_t i = 0; i < p->n_threads && nt < cap; i++)
		add_thread(b, &set, &nt, p->threads[i].tid, p->info.pid, (char *)p->threads[i].comm);
	for (size_t j = 0; j < nt; j++)
		b->threads[j] = &b->thread_buf[j];
	b->snap.threads = b->threads;
	b->snap.n_threads = nt;
out:
	free(set.keys);
	free(set.vals);
	return r;
}

static int fill_process(struct snap_build *b, const struct proc_rec *p)
{
	Hostprof__Process *proc = &b->proc;
	size_t nargs = 0;

	hostprof__process__init(proc);
	proc->has_pid = proc->has_ppid = proc->has_start_time = proc->has_uid = true;
	proc->pid = p->info.pid;
	proc->ppid = p->info.ppid;
	proc->comm = (char *)p->info.comm;
	proc->start_time = p->info.start_time;
	proc->uid = p->info.uid;
	proc->has_exit_ns = p->exit_ns != 0;
	proc->exit_ns = p->exit_ns;
	for (size_t i = 0; i < p->cmdline_len; i++)
		nargs += p->cmdline[i] == 0;
	if (p->cmdline_len && p->cmdline[p->cmdline_len - 1] != 0)
		nargs++; /* truncated last argument */
	b->cmdline = calloc(MAX(nargs, (size_t)1), sizeof(char *));
	if (!b->cmdline)
		return -ENOMEM;
	for (size_t i = 0, k = 0; i < p->cmdline_len && k < nargs; k++) {
		b->cmdline[k] = p->cmdline + i;
		i += strnlen(p->cmdline + i, p->cmdline_len - i) + 1;
	}
	proc->cmdline = b->cmdline;
	/* a truncated last argument is not NUL-terminated: drop it rather than overrun */
	proc->n_cmdline = p->cmdline_len && p->cmdline[p->cmdline_len - 1] != 0 ? nargs - 1 : nargs;
	b->procs[0] = proc;
	b->snap.processes = b->procs;
	b->snap.n_processes = 1;
	return 0;
}

static int fill_stats(struct snap_build *b, const struct proc_rec *p, const struct snapshot_ctx *ctx)
{
	Hostprof__CaptureStats *s = &b->stats;

	hostprof__capture_stats__init(s);
	s->has_events = s->has_events_total = s->has_evicted = true;
	s->events = p->events;
	s->events_total = ctx->events_total;
	s->evicted = p->evicted;
	b->drop_buf = calloc(MAX(ctx->n_drops, (size_t)1), sizeof(*b->drop_buf));
	b->drops = calloc(MAX(ctx->n_drops, (size_t)1), sizeof(*b->drops));
	if (!b->drop_buf || !b->drops)
		return -ENOMEM;
	for (size_t i = 0; i < ctx->n_drops; i++) {
		hostprof__drop__init(&b->drop_buf[i]);
		b->drop_buf[i].cause = (char *)ctx->drops[i].cause;
		b->drop_buf[i].has_count = true;
		b->drop_buf[i].count = ctx->drops[i].count;
		b->drops[i] = &b->drop_buf[i];
	}
	s->drops = b->drops;
	s->n_drops = ctx->n_drops;
	b->snap.stats = s;
	return 0;
}

static void fill_host(struct snap_build *b)
{
	hostprof__host_info__init(&b->host);
	uname(&b->uts);
	if (gethostname(b->hostname, sizeof(b->hostname) - 1) < 0)
		b->hostname[0] = 0;
	b->host.hostname = b->hostname;
	b->host.sysname = b->uts.sysname;
	b->host.kernel_release = b->uts.release;
	b->host.kernel_version = b->uts.version;
	b->host.machine = b->uts.machine;
	b->host.has_ncpus = true;
	b->host.ncpus = sysconf(_SC_NPROCESSORS_CONF);
	b->snap.host = &b->host;

	hostprof__clock_anchor__init(&b->clock);
	b->clock.has_boottime_ns = b->clock.has_realtime_ns = b->clock.has_monotonic_ns = true;
	b->clock.boottime_ns = clock_ns(CLOCK_BOOTTIME);
	b->clock.realtime_ns = clock_ns(CLOCK_REALTIME);
	b->clock.monotonic_ns = clock_ns(CLOCK_MONOTONIC);
	b->snap.clock = &b->clock;
}

int snapshot_build(const struct proc_rec *p, const struct snapshot_ctx *ctx, uint8_t **ret_data,
		   size_t *ret_len, uint64_t *ret_events)
{
	struct snap_build b = {};
	uint64_t now = clock_ns(CLOCK_BOOTTIME);
	uint64_t end = p->exit_ns ? p->exit_ns : now;
	uint64_t start = ctx->window_ns && end > ctx->window_ns ? end - ctx->window_ns : 0;
	uint32_t empty;
	size_t n = 0;
	int r;

	hostprof__snapshot__init(&b.snap);
	r = strtab_intern(&b.strs, "", &empty); /* index 0 is "" */
	if (r < 0)
		goto out;
	r = collect_switches(&b, p, start, end, &n);
	if (r < 0)
		goto out;
	/* all the history kept: the window opens at the oldest record */
	if (!ctx->window_ns || !start)
		start = n ? b.events[0]->hdr.ts : p->watch_ns;
	r = fill_switch_table(&b, n, start);
	if (r < 0)
		goto out;
	r = fill_threads(&b, p, n);
	if (r < 0)
		goto out;
	r = fill_process(&b, p);
	if (r < 0)
		goto out;
	r = fill_stats(&b, p, ctx);
	if (r < 0)
		goto out;
	fill_host(&b);

	snprintf(b.producer, sizeof(b.producer), "hostprofd %s", HOSTPROF_VERSION);
	b.snap.has_format_version = b.snap.has_start_ns = b.snap.has_end_ns = b.snap.has_pid = true;
	b.snap.format_version = HPS_FORMAT_VERSION;
	b.snap.producer = b.producer;
	b.snap.start_ns = start;
	b.snap.end_ns = end;
	b.snap.pid = p->info.pid;
	b.snap.reason = (char *)(ctx->reason ? ctx->reason : "request");
	b.snap.strings = b.strs.strs;
	b.snap.n_strings = b.strs.n;
	b.snap.switches = &b.sw;
	r = hps_pack(&b.snap, ret_data, ret_len);
	if (r >= 0 && ret_events)
		*ret_events = n;
out:
	snap_build_free(&b);
	return r;
}
