// SPDX-License-Identifier: GPL-2.0-only
/*
 * daemon/recorder.c without BPF or root: records built here are appended as the drain
 * would append them, and the recorder's time is the `now` the test passes.
 *
 * Checked: records filed with their process (and the processes a switch, a fork or a
 * rename makes known), every type of HP_RECORDS accepted at its size and malformed
 * records refused and counted, window ageing, the per-process and the global byte
 * budgets evicting oldest first and counting what they drop, and a process that exited
 * kept until its data ages out of the window; the exit record of a process's last thread
 * ending it in the drain, and the records of a reused pid filed with its holder by time;
 * as root, with processes of three other uids, the per-user budgets (a user's history is
 * evicted only by its own processes or root's; user_procs refuses what the kernel starts
 * watching of a user at its limit; what goes when root needs room in the watched map).
 * A snapshot of records whose duration came out negative in the kernel (two programs'
 * clock reads racing) is still built, with those durations as none.
 *
 * recorder_watch reads /proc/PID: the processes are this test and children that wait in
 * pause() until they are killed.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "log.h"
#include "macro.h"
#include "hps.h"
#include "recorder.h"
#include "records.h"
#include "hugepage.h"
#include "snapshot.h"
#include "syscall_names.h"

#define SEC 1000000000ull
#define CHUNK_DATA (RECORDER_CHUNK - sizeof(struct chunk))
#define MIGRATES_PER_CHUNK (CHUNK_DATA / sizeof(struct hp_migrate))

/* A record of any type, 8-byte aligned as the ring buffers deliver them. */
union record {
	struct hp_hdr hdr;
	uint64_t words[HP_MAX_RECORD / 8 + 8];
};

static pid_t children[16];
static size_t n_children;

static const struct recorder_limits big = {
	.window_ns = 10 * SEC,
	.buffer_bytes = 64 * RECORDER_CHUNK,
	.memory_bytes = 256 * RECORDER_CHUNK,
	.host_bytes = 4 * RECORDER_CHUNK,
};

/* A child that waits until it is killed (or this test dies). */
static pid_t spawn_child(void)
{
	pid_t pid = fork();

	if (pid < 0) {
		perror("test-recorder: fork");
		exit(1);
	}
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		for (;;)
			pause();
	}
	children[n_children++] = pid;
	return pid;
}

static void kill_child(pid_t pid)
{
	kill(pid, SIGKILL);
	(void)waitpid(pid, NULL, 0);
	for (size_t i = 0; i < n_children; i++)
		if (children[i] == pid)
			children[i] = children[--n_children];
}

static void *rec_init(union record *r, uint16_t type, size_t size, uint64_t ts)
{
	memset(r, 0, sizeof(*r));
	r->hdr.type = type;
	r->hdr.size = size;
	r->hdr.ts = ts;
	return r;
}

static int append_migrate(struct recorder *rec, uint32_t pid, uint64_t ts)
{
	union record r;
	struct hp_migrate *e = rec_init(&r, HP_EV_MIGRATE, sizeof(*e), ts);

	e->tid = e->pid = pid;
	e->to_cpu = 1;
	return recorder_append(rec, &r.hdr);
}

/* Exactly one chunk of migrations for pid, all at ts + i ns. */
static void fill_chunk(struct recorder *rec, uint32_t pid, uint64_t ts)
{
	for (size_t i = 0; i < MIGRATES_PER_CHUNK; i++)
		append_migrate(rec, pid, ts + i);
}

static size_t chunks_of(const struct proc_rec *p)
{
	size_t n = 0;

	for (const struct chunk *c = p->head; c; c = c->next)
		n++;
	return n;
}

static uint64_t records_of(const struct proc_rec *p)
{
	uint64_t n = 0;

	for (const struct chunk *c = p->head; c; c = c->next)
		n += c->nrec;
	return n;
}

/* Every chunk is records back to back: their sizes add up to `used`. */
static void check_chunks(const struct proc_rec *p)
{
	for (const struct chunk *c = p->head; c; c = c->next) {
		uint32_t off = 0, n = 0;

		while (off < c->used) {
			const struct hp_hdr *h = (const void *)(c->data + off);

			CHECKF(record_check(h, h->size) == 0, "a stored %s record does not parse",
			       record_name(h->type));
			if (!h->size)
				break;
			off += h->size;
			n++;
		}
		CHECK_EQ_U64(off, c->used);
		CHECK_EQ_U64(n, c->nrec);
	}
}

static void test_append(void)
{
	struct recorder *rec = recorder_new(&big);
	uint32_t self = getpid(), child = spawn_child(), child2 = spawn_child();
	struct proc_rec *p, *q;
	union record r;
	int ret;

	ret = recorder_watch(rec, self, HP_WATCH_PID, 0, 1 * SEC, &p);
	CHECK_EQ_INT(ret, 0);
	CHECK(p && p->info.pid == self);
	CHECK_EQ_U64(recorder_count(rec), 1);
	CHECK_EQ_U64(recorder_live_count(rec), 1);
	ret = recorder_watch(rec, self, HP_WATCH_PID, 0, 2 * SEC, &q);
	CHECK(ret == 0 && q == p); /* watched already: the same record */

	/* a record of a watched process is filed with it, byte for byte */
	{
		struct hp_wake *e = rec_init(&r, HP_EV_WAKE, sizeof(*e), 2 * SEC);

		e->tid = e->pid = self;
		e->waker_tid = 77;
		memcpy(e->waker_comm, "waker", 6);
		CHECK_EQ_INT(recorder_append(rec, &r.hdr), 0);
		CHECK_EQ_U64(p->events, 1);
		CHECK(p->head && p->head->nrec == 1 && p->head->used == sizeof(*e));
		CHECK(p->head && !memcmp(p->head->data, e, sizeof(*e)));
		CHECK(p->head && p->head->min_ts == 2 * SEC && p->head->max_ts == 2 * SEC);
	}
	/* ... and one of a process not watched is counted, not kept */
	CHECK_EQ_INT(append_migrate(rec, 0x3ffffff0, 3 * SEC), 0);
	CHECK_EQ_U64(recorder_events(rec), 2);
	CHECK_EQ_U64(p->events, 1);
	CHECK_EQ_U64(recorder_count(rec), 1);

	/* a rename names the thread */
	{
		struct hp_comm *e = rec_init(&r, HP_EV_COMM, sizeof(*e), 3 * SEC);

		e->tid = self + 100000;
		e->pid = self;
		memcpy(e->comm, "renamed", 8);
		CHECK_EQ_INT(recorder_append(rec, &r.hdr), 0);
		CHECK_STR(proc_rec_thread_name(p, self + 100000), "renamed");
	}
	/* an exec renames the process, and its mappings are to be read again */
	{
		struct hp_exec *e = rec_init(&r, HP_EV_EXEC, sizeof(*e), 4 * SEC);

		e->tid = e->pid = self;
		memcpy(e->comm, "newimage", 9);
		p->maps_dirty = false;
		CHECK_EQ_INT(recorder_append(rec, &r.hdr), 0);
		CHECK_STR(p->info.comm, "newimage");
		CHECK(p->maps_dirty);
	}
	/* a syscall that maps memory makes the mappings stale, another does not */
	{
		struct hp_syscall *e = rec_init(&r, HP_EV_SYSCALL, sizeof(*e), 5 * SEC);
		uint32_t mmap_nr = 0;

		while (mmap_nr < syscall_names_len &&
		       !(syscall_names[mmap_nr] && !strcmp(syscall_names[mmap_nr], "mmap")))
			mmap_nr++;
		CHECK(mmap_nr < syscall_names_len);
		e->tid = e->pid = self;
		e->nr = 0x7fff; /* no syscall */
		p->maps_dirty = false;
		CHECK_EQ_INT(recorder_append(rec, &r.hdr), 0);
		CHECK(!p->maps_dirty);
		e->nr = mmap_nr;
		CHECK_EQ_INT(recorder_append(rec, &r.hdr), 0);
		CHECK(p->maps_dirty);
	}
	/* a switch between two threads of one process is filed once */
	{
		struct hp_switch *e = rec_init(&r, HP_EV_SWITCH, sizeof(*e), 6 * SEC);
		uint64_t before = p->events;

		e->prev_tid = e->prev_pid = self;
		e->next_tid = self + 1;
		e->next_pid = self;
		e->flags = HP_SW_PREV_WATCHED | HP_SW_NEXT_WATCHED;
		CHECK_EQ_INT(recorder_append(rec, &r.hdr), 0);
		CHECK_EQ_U64(p->events, before + 1);
	}
	/* a switch is the first the daemon hears of a process the kernel matched by name */
	{
		struct hp_switch *e = rec_init(&r, HP_EV_SWITCH, sizeof(*e), 7 * SEC);

		e->prev_tid = e->prev_pid = child;
		e->flags = HP_SW_PREV_WATCHED;
		CHECK_EQ_INT(recorder_append(rec, &r.hdr), 0);
		q = recorder_find_live(rec, child);
		CHECK(q && q->reason == HP_WATCH_GLOB && q->events == 1 && q->watch_ns == 7 * SEC);
		CHECK_EQ_U64(recorder_count(rec), 2);
	}
	/* a fork makes its child process watched, as the parent's child */
	{
		struct hp_fork *e = rec_init(&r, HP_EV_FORK, sizeof(*e), 8 * SEC);
		uint64_t before = p->events;

		e->parent_tid = e->parent_pid = self;
		e->child_tid = e->child_pid = child2;
		memcpy(e->comm, "forked", 7);
		CHECK_EQ_INT(recorder_append(rec, &r.hdr), 0);
		q = recorder_find_live(rec, child2);
		CHECK(q && q->reason == HP_WATCH_CHILD && q->parent == self);
		CHECK(q && q->events == 0); /* the record is the parent's */
		CHECK_STR(q ? proc_rec_thread_name(q, child2) : NULL, "forked");
		CHECK_EQ_U64(p->events, before + 1);
	}
	/* the host recorder (--cpus) keeps switches between unwatched tasks, outside the budget */
	{
		struct hp_switch *e = rec_init(&r, HP_EV_SWITCH, sizeof(*e), 9 * SEC);
		uint64_t bytes = recorder_bytes(rec);

		CHECK_EQ_INT(recorder_enable_host(rec, true), 0);
		e->flags = HP_SW_HOST_CPU;
		CHECK_EQ_INT(recorder_append(rec, &r.hdr), 0);
		CHECK(recorder_host(rec) && recorder_host(rec)->events == 1);
		CHECK_EQ_U64(recorder_bytes(rec), bytes);
	}
	CHECK_EQ_U64(recorder_refused(rec), 0);
	check_chunks(p);
	recorder_free(rec);
	kill_child(child);
	kill_child(child2);
}

/* A record of every type of HP_RECORDS at its smallest size is kept; sizes that lie are not. */
static void test_sizes(void)
{
	static const struct {
		uint16_t type;
		size_t size;
	} types[] = {
#define X_TYPE(type, st, name, frames) { type, sizeof(struct st) },
		HP_RECORDS(X_TYPE)
#undef X_TYPE
	};
	struct recorder *rec = recorder_new(&big);
	uint32_t self = getpid();
	uint64_t events, mine = 0, refused = 0;
	struct proc_rec *p;
	union record r;

	CHECK_EQ_INT(recorder_watch(rec, self, HP_WATCH_PID, 0, SEC, &p), 0);
	CHECK_EQ_U64(ARRAY_SIZE(types), HP_EV_MAX - 1);
	for (size_t i = 0; i < ARRAY_SIZE(types); i++) {
		rec_init(&r, types[i].type, types[i].size, SEC + i);
		if (types[i].type == HP_EV_RAWSAMPLE || types[i].type == HP_EV_RAWUSTACK) {
			/* the drain makes samples of them: never recorded as they are */
			CHECK_EQ_INT(recorder_append(rec, &r.hdr), -EBADMSG);
			refused++;
		} else
			CHECKF(recorder_append(rec, &r.hdr) == 0, "%s record of %zu bytes refused",
			       record_name(types[i].type), types[i].size);
		CHECKF(strcmp(record_name(types[i].type), "unknown"), "type %u has no name", types[i].type);
		/* one word more or less is not that type */
		rec_init(&r, types[i].type, types[i].size + 8, SEC);
		CHECK_EQ_INT(recorder_append(rec, &r.hdr), -EBADMSG);
		rec_init(&r, types[i].type, types[i].size - 8, SEC);
		CHECK_EQ_INT(recorder_append(rec, &r.hdr), -EBADMSG);
		refused += 2;
	}
	CHECK_EQ_U64(recorder_events(rec), HP_EV_MAX - 3); /* all but HP_EV_RAWSAMPLE, HP_EV_RAWUSTACK */
	events = recorder_events(rec);

	/* no type, an unknown one */
	CHECK_EQ_INT(recorder_append(rec, rec_init(&r, 0, sizeof(struct hp_exit), SEC)), -EBADMSG);
	CHECK_EQ_INT(recorder_append(rec, rec_init(&r, HP_EV_MAX, sizeof(struct hp_exit), SEC)), -EBADMSG);
	CHECK_EQ_INT(recorder_append(rec, rec_init(&r, 999, sizeof(struct hp_exit), SEC)), -EBADMSG);
	/* a size of 0 would stop every walk of the chunk */
	CHECK_EQ_INT(recorder_append(rec, rec_init(&r, HP_EV_EXIT, 0, SEC)), -EBADMSG);
	refused += 4;
	/* frames: exactly as many as the record says */
	{
		struct hp_sample *e = rec_init(&r, HP_EV_SAMPLE, sizeof(*e) + 5 * sizeof(__u64), SEC);

		e->pid = self;
		e->kstack_len = 3;
		e->ustack_len = 2;
		CHECK_EQ_INT(recorder_append(rec, &r.hdr), 0);
		events++;
		mine++;
		e->ustack_len = 3; /* says 6 frames, holds 5 */
		CHECK_EQ_INT(recorder_append(rec, &r.hdr), -EBADMSG);
		e->ustack_len = 1; /* says 4 */
		CHECK_EQ_INT(recorder_append(rec, &r.hdr), -EBADMSG);
		refused += 2;
	}
	{
		struct hp_lock *e = rec_init(&r, HP_EV_LOCK, sizeof(*e) + 2 * sizeof(__u64), SEC);

		e->pid = self;
		e->kstack_len = 2;
		CHECK_EQ_INT(recorder_append(rec, &r.hdr), 0);
		events++;
		mine++;
		/* consistent, but larger than any record the programs write */
		e->kstack_len = 200;
		e->hdr.size = sizeof(*e) + 200 * sizeof(__u64);
		CHECK_EQ_INT(recorder_append(rec, &r.hdr), -EBADMSG);
		refused++;
	}
	CHECK_EQ_U64(recorder_refused(rec), refused);
	CHECK_EQ_U64(recorder_events(rec), events);
	CHECK_EQ_U64(p->events, mine); /* the others, of pid 0, are of no watched process */
	CHECK_EQ_U64(records_of(p), mine);
	check_chunks(p);
	recorder_free(rec);
}

static void test_window(void)
{
	struct recorder *rec = recorder_new(&big);
	struct proc_rec *p;
	uint32_t self = getpid();

	CHECK_EQ_INT(recorder_watch(rec, self, HP_WATCH_PID, 0, SEC, &p), 0);
	fill_chunk(rec, self, 1 * SEC);
	fill_chunk(rec, self, 5 * SEC);
	fill_chunk(rec, self, 20 * SEC);
	CHECK_EQ_U64(chunks_of(p), 3);
	CHECK_EQ_U64(recorder_bytes(rec), 3 * RECORDER_CHUNK);

	/* the window is 10 s: at 14 s, the chunk of 1 s goes; at 25 s, the one of 5 s */
	recorder_tick(rec, 14 * SEC, NULL, NULL, NULL);
	CHECK_EQ_U64(chunks_of(p), 2);
	CHECK(p->head && p->head->min_ts == 5 * SEC);
	recorder_tick(rec, 25 * SEC, NULL, NULL, NULL);
	CHECK_EQ_U64(chunks_of(p), 1);
	CHECK(p->head && p->head->min_ts == 20 * SEC);
	CHECK_EQ_U64(p->bytes, RECORDER_CHUNK);
	CHECK_EQ_U64(recorder_bytes(rec), RECORDER_CHUNK);
	/* what ages out is not evicted */
	CHECK_EQ_U64(p->evicted, 0);
	CHECK_EQ_U64(p->events, 3 * MIGRATES_PER_CHUNK);
	/* a chunk goes only when its newest record is out of the window */
	append_migrate(rec, self, 40 * SEC);
	recorder_tick(rec, 45 * SEC, NULL, NULL, NULL);
	CHECK_EQ_U64(chunks_of(p), 1);
	recorder_tick(rec, 50 * SEC + 1, NULL, NULL, NULL);
	CHECK_EQ_U64(chunks_of(p), 0);
	CHECK_EQ_U64(recorder_bytes(rec), 0);
	CHECK_EQ_U64(recorder_count(rec), 1); /* alive: kept without data */
	recorder_free(rec);
}

static void test_process_budget(void)
{
	struct recorder_limits lim = big;
	struct recorder *rec;
	struct proc_rec *p;
	uint32_t self = getpid();

	lim.buffer_bytes = 2 * RECORDER_CHUNK;
	rec = recorder_new(&lim);
	CHECK_EQ_INT(recorder_watch(rec, self, HP_WATCH_PID, 0, SEC, &p), 0);
	for (int k = 1; k <= 5; k++)
		fill_chunk(rec, self, k * SEC);
	/* the newest two chunks stay; the three oldest went, each record counted */
	CHECK_EQ_U64(chunks_of(p), 2);
	CHECK_EQ_U64(p->bytes, 2 * RECORDER_CHUNK);
	CHECK_EQ_U64(recorder_bytes(rec), 2 * RECORDER_CHUNK);
	CHECK(p->head && p->head->min_ts == 4 * SEC && p->tail->max_ts == 5 * SEC + MIGRATES_PER_CHUNK - 1);
	CHECK_EQ_U64(p->evicted, 3 * MIGRATES_PER_CHUNK);
	CHECK_EQ_U64(p->events, 5 * MIGRATES_PER_CHUNK);
	CHECK_EQ_U64(records_of(p) + p->evicted, p->events);
	/* one record more starts a chunk, and the oldest goes */
	append_migrate(rec, self, 6 * SEC);
	CHECK_EQ_U64(chunks_of(p), 2);
	CHECK(p->head && p->head->min_ts == 5 * SEC);
	CHECK_EQ_U64(p->evicted, 4 * MIGRATES_PER_CHUNK);
	check_chunks(p);

	/* a smaller budget by SIGHUP applies from the next chunk on */
	lim.buffer_bytes = RECORDER_CHUNK;
	recorder_set_limits(rec, &lim);
	fill_chunk(rec, self, 7 * SEC);
	CHECK_EQ_U64(chunks_of(p), 1);
	CHECK_EQ_U64(records_of(p) + p->evicted, p->events);
	recorder_free(rec);
}

static void test_global_budget(void)
{
	struct recorder_limits lim = big;
	uint32_t a = getpid(), b = spawn_child();
	struct proc_rec *pa, *pb;
	struct recorder *rec;

	lim.memory_bytes = 3 * RECORDER_CHUNK;
	rec = recorder_new(&lim);
	CHECK_EQ_INT(recorder_watch(rec, a, HP_WATCH_PID, 0, SEC, &pa), 0);
	CHECK_EQ_INT(recorder_watch(rec, b, HP_WATCH_PID, 0, SEC, &pb), 0);
	fill_chunk(rec, a, 1 * SEC);
	fill_chunk(rec, a, 2 * SEC);
	fill_chunk(rec, b, 3 * SEC);
	CHECK_EQ_U64(recorder_bytes(rec), 3 * RECORDER_CHUNK);
	CHECK_EQ_U64(pa->evicted + pb->evicted, 0);

	/* full: the chunk whose newest record is the oldest of all goes, whoever needs room */
	fill_chunk(rec, a, 4 * SEC); /* a's of 1 s */
	CHECK_EQ_U64(pa->evicted, MIGRATES_PER_CHUNK);
	CHECK(pa->head && pa->head->min_ts == 2 * SEC);
	fill_chunk(rec, b, 5 * SEC); /* a's of 2 s, not b's own of 3 s */
	CHECK_EQ_U64(pa->evicted, 2 * MIGRATES_PER_CHUNK);
	CHECK_EQ_U64(pb->evicted, 0);
	CHECK(pa->head && pa->head->min_ts == 4 * SEC);
	fill_chunk(rec, a, 6 * SEC); /* b's of 3 s */
	CHECK_EQ_U64(pb->evicted, MIGRATES_PER_CHUNK);
	CHECK(pb->head && pb->head->min_ts == 5 * SEC);
	CHECK_EQ_U64(chunks_of(pa), 2);
	CHECK_EQ_U64(chunks_of(pb), 1);
	CHECK_EQ_U64(recorder_bytes(rec), 3 * RECORDER_CHUNK);
	CHECK_EQ_U64(pa->bytes + pb->bytes, recorder_bytes(rec));
	CHECK_EQ_U64(records_of(pa) + pa->evicted, pa->events);
	CHECK_EQ_U64(records_of(pb) + pb->evicted, pb->events);

	/* the host recorder has a budget of its own, outside memory_bytes */
	CHECK_EQ_INT(recorder_enable_host(rec, true), 0);
	for (int k = 0; k < 6; k++) {
		union record r;
		struct hp_switch *e = rec_init(&r, HP_EV_SWITCH, sizeof(*e), (10 + k) * SEC);

		e->flags = HP_SW_HOST_CPU;
		for (size_t i = 0; i < CHUNK_DATA / sizeof(*e); i++) {
			e->hdr.ts++;
			recorder_append(rec, &r.hdr);
		}
	}
	CHECK_EQ_U64(recorder_host(rec)->bytes, lim.host_bytes);
	CHECK_EQ_U64(recorder_host(rec)->evicted, 2 * (CHUNK_DATA / sizeof(struct hp_switch)));
	CHECK_EQ_U64(recorder_bytes(rec), 3 * RECORDER_CHUNK);
	CHECK_EQ_U64(pa->evicted, 2 * MIGRATES_PER_CHUNK);
	recorder_free(rec);
	kill_child(b);
}

static unsigned gone_calls, freed_calls;
static uint32_t freed_pid;

static void on_gone(void *ud, struct proc_rec *p)
{
	gone_calls++;
	CHECK(p == ud);
}

static struct recorder *freed_rec;

/* As watch.c's: is any history of pid left? (Under ASan or valgrind: the freed process
 * is not looked at.) */
static void on_freed(void *ud, uint32_t pid)
{
	freed_calls++;
	freed_pid = pid;
	if (freed_rec)
		CHECK(recorder_find(freed_rec, pid) == NULL);
}

static void test_exited(void)
{
	struct recorder *rec = freed_rec = recorder_new(&big);
	uint32_t self = getpid(), child = spawn_child();
	struct proc_rec *p, *me;

	CHECK_EQ_INT(recorder_watch(rec, self, HP_WATCH_PID, 0, SEC, &me), 0);
	CHECK_EQ_INT(recorder_watch(rec, child, HP_WATCH_PID, 0, SEC, &p), 0);
	append_migrate(rec, child, 100 * SEC);
	append_migrate(rec, self, 100 * SEC);

	/* alive: nothing happens */
	recorder_tick(rec, 101 * SEC, on_gone, on_freed, NULL);
	CHECK_EQ_U64(gone_calls, 0);
	CHECK_EQ_U64(p->exit_ns, 0);

	kill_child(child);
	recorder_tick(rec, 102 * SEC, on_gone, on_freed, p);
	CHECK_EQ_U64(gone_calls, 1);
	CHECK_EQ_U64(p->exit_ns, 102 * SEC);
	CHECK(!p->unwatched);
	CHECK(recorder_find_live(rec, child) == NULL);
	CHECK(recorder_find(rec, child) == p);
	CHECK_EQ_U64(recorder_live_count(rec), 1);
	CHECK_EQ_U64(recorder_count(rec), 2);
	/* what comes for it after that is not kept */
	append_migrate(rec, child, 103 * SEC);
	CHECK_EQ_U64(p->events, 1);

	/* its history stays while it is in the window, found only once */
	recorder_tick(rec, 108 * SEC, on_gone, on_freed, p);
	CHECK_EQ_U64(gone_calls, 1);
	CHECK_EQ_U64(freed_calls, 0);
	CHECK(recorder_find(rec, child) == p && p->head && p->head->nrec == 1);
	CHECK_EQ_U64(recorder_bytes(rec), 2 * RECORDER_CHUNK);

	/* 10 s after its last record it ages out, and with it the process */
	recorder_tick(rec, 110 * SEC + 1, on_gone, on_freed, NULL);
	CHECK_EQ_U64(freed_calls, 0); /* its data went at this tick, its exit is still in the window */
	recorder_tick(rec, 112 * SEC + 1, on_gone, on_freed, NULL);
	CHECK_EQ_U64(freed_calls, 1);
	CHECK_EQ_U64(freed_pid, child);
	CHECK(recorder_find(rec, child) == NULL);
	CHECK_EQ_U64(recorder_count(rec), 1);
	CHECK(recorder_at(rec, 0) == me);
	CHECK_EQ_U64(recorder_bytes(rec), 0);

	/* stopped by request: the same, but not exited */
	recorder_stop(rec, me, 113 * SEC);
	CHECK(me->unwatched && me->exit_ns == 113 * SEC);
	CHECK(recorder_find_live(rec, self) == NULL && recorder_find(rec, self) == me);
	recorder_tick(rec, 124 * SEC, on_gone, on_freed, NULL);
	CHECK_EQ_U64(freed_calls, 2);
	CHECK_EQ_U64(freed_pid, self);
	CHECK_EQ_U64(recorder_count(rec), 0);
	CHECK_EQ_U64(gone_calls, 1);
	freed_rec = NULL;
	recorder_free(rec);
}

static int append_exit(struct recorder *rec, uint32_t pid, uint32_t tid, uint32_t flags, uint64_t ts)
{
	union record r;
	struct hp_exit *e = rec_init(&r, HP_EV_EXIT, sizeof(*e), ts);

	e->tid = tid;
	e->pid = pid;
	e->flags = flags;
	return recorder_append(rec, &r.hdr);
}

static int append_fork(struct recorder *rec, uint32_t parent, uint32_t child, uint64_t ts)
{
	union record r;
	struct hp_fork *e = rec_init(&r, HP_EV_FORK, sizeof(*e), ts);

	e->parent_tid = e->parent_pid = parent;
	e->child_tid = e->child_pid = child;
	memcpy(e->comm, "child", 6);
	return recorder_append(rec, &r.hdr);
}

static struct recorder *hook_rec;

static bool recorder_find_live_in_hook(const struct proc_rec *p)
{
	return recorder_find_live(hook_rec, p->info.pid) == p;
}

static size_t exited_calls;
static struct proc_rec *exited_last;

static void on_exited(void *ud, struct proc_rec *p)
{
	exited_calls++;
	exited_last = p;
	CHECK(ud == &exited_calls);
	CHECK(p->exit_ns && !recorder_find_live_in_hook(p));
}

/*
 * The exit of a process's last thread, seen in the drain: the process ends there (not at
 * the next tick), and records of its pid are filed by time: those older than the exit
 * with it (the rings are drained unordered), newer ones with the pid's next holder.
 */
static void test_exit_record(void)
{
	struct recorder *rec = recorder_new(&big);
	uint32_t self = getpid(), child = spawn_child();
	struct proc_rec *p, *next;

	recorder_set_hooks(rec, &(struct recorder_hooks){ .gone = on_exited, .ud = &exited_calls });
	hook_rec = rec;
	CHECK_EQ_INT(recorder_watch(rec, self, HP_WATCH_PID, 0, SEC, NULL), 0);
	CHECK_EQ_INT(recorder_watch(rec, child, HP_WATCH_PID, 0, SEC, &p), 0);
	append_migrate(rec, child, 2 * SEC);

	/* a thread that is not the last: nothing ends */
	append_exit(rec, child, child + 1, 0, 3 * SEC);
	CHECK_EQ_U64(exited_calls, 0);
	CHECK(recorder_find_live(rec, child) == p);
	/* its last thread */
	append_exit(rec, child, child, HP_EXIT_GROUP, 4 * SEC);
	CHECK_EQ_U64(exited_calls, 1);
	CHECK(exited_last == p);
	CHECK_EQ_U64(p->exit_ns, 4 * SEC);
	CHECK(recorder_find_live(rec, child) == NULL);
	CHECK_EQ_U64(p->events, 3);
	/* a record from before its exit, drained after it, is still its */
	append_migrate(rec, child, 4 * SEC - 1);
	CHECK_EQ_U64(p->events, 4);
	/* after it, from a thread still exiting (another that took itself for the last: its
	 * wakeup, off-CPU interval, blocked syscall as it runs again): /proc still shows the
	 * same process, so they are its own, and nothing is counted lost */
	{
		uint64_t unowned = recorder_unowned(rec);

		append_migrate(rec, child, 5 * SEC);
		CHECK_EQ_U64(p->events, 5);
		CHECK_EQ_U64(recorder_unowned(rec), unowned);
		CHECK(recorder_find_live(rec, child) == NULL);
	}
	/* its dying thread's switch after the exit record (it frees its memory, blocks in D):
	 * its own too, and watches nothing new */
	{
		union record r;
		struct hp_switch *sw = rec_init(&r, HP_EV_SWITCH, sizeof(*sw), 5 * SEC);

		sw->prev_tid = sw->prev_pid = child;
		sw->prev_state = 0x2;
		sw->flags = HP_SW_PREV_WATCHED;
		CHECK_EQ_INT(recorder_append(rec, &r.hdr), 0);
		CHECK(recorder_find_live(rec, child) == NULL);
		CHECK_EQ_U64(p->events, 6);
	}
	/* the tick does not find it gone again */
	recorder_tick(rec, 5 * SEC, on_gone, on_freed, NULL);
	CHECK_EQ_U64(gone_calls, 1); /* test_exited's one */

	/* a watched process forks a child that gets the pid again: a new process (its first
	 * switch, on another CPU's ring, drained before the fork: still a child). The old
	 * holder is made another process than the one /proc shows now (its start time). */
	p->info.start_time--;
	/* but its dying thread's last switch-out (Z), drained after that: still its own */
	{
		union record r;
		struct hp_switch *sw = rec_init(&r, HP_EV_SWITCH, sizeof(*sw), 5 * SEC + 5);

		sw->prev_tid = sw->prev_pid = child;
		sw->prev_state = 0x20;
		sw->flags = HP_SW_PREV_WATCHED;
		CHECK_EQ_INT(recorder_append(rec, &r.hdr), 0);
		CHECK(recorder_find_live(rec, child) == NULL);
		CHECK_EQ_U64(p->events, 7);
	}
	/* any other record after the exit, /proc showing another process: the new holder's,
	 * which the kernel watches (a child whose fork record is in another CPU's ring, drained
	 * after this one): watched here from it, as from a switch, and nothing counted lost */
	{
		uint64_t unowned = recorder_unowned(rec);

		append_migrate(rec, child, 6 * SEC + 5);
		CHECK_EQ_U64(p->events, 7);
		CHECK_EQ_U64(recorder_unowned(rec), unowned);
		CHECK(recorder_find_live(rec, child) && recorder_find_live(rec, child) != p &&
		      recorder_find_live(rec, child)->reason == HP_WATCH_GLOB);
	}
	{
		union record r;
		struct hp_switch *sw = rec_init(&r, HP_EV_SWITCH, sizeof(*sw), 6 * SEC + 10);

		sw->prev_tid = sw->prev_pid = child;
		sw->flags = HP_SW_PREV_WATCHED;
		CHECK_EQ_INT(recorder_append(rec, &r.hdr), 0);
		CHECK(recorder_find_live(rec, child) && recorder_find_live(rec, child)->reason == HP_WATCH_GLOB);
	}
	append_fork(rec, self, child, 6 * SEC);
	next = recorder_find_live(rec, child);
	CHECK(next && next != p);
	CHECK_EQ_U64(next->pid_free_ns, 4 * SEC);
	CHECK_EQ_U64(next->reason, HP_WATCH_CHILD);
	CHECK_EQ_U64(next->parent, self);
	{
		char why[48];

		snprintf(why, sizeof(why), "child of %u", self);
		CHECK_STR(next->why, why);
	}
	append_migrate(rec, child, 7 * SEC);
	CHECK_EQ_U64(next->events, 3);
	append_migrate(rec, child, 4 * SEC - 2); /* the old holder's, drained late */
	CHECK_EQ_U64(next->events, 3);
	CHECK_EQ_U64(p->events, 8);
	CHECK_EQ_U64(exited_calls, 1);

	/* a fork that hands out the pid of a live process watched before it: that one's
	 * exit record was lost, but it is the same process here (its start time): kept */
	append_fork(rec, self, child, 8 * SEC);
	CHECK(recorder_find_live(rec, child) == next);
	CHECK_EQ_U64(exited_calls, 1);
	kill_child(child);
	recorder_free(rec);
}

/*
 * Two threads that each took themselves for the last (both exit records flagged group):
 * the second is the process's, and ends nothing more. After it, a thread still exiting
 * whose process /proc no longer shows (reaped) is the process's for a while, then nobody's.
 */
static void test_dying_threads(void)
{
	struct recorder *rec = recorder_new(&big);
	uint32_t child = spawn_child();
	uint64_t unowned;
	struct proc_rec *p;

	recorder_set_hooks(rec, &(struct recorder_hooks){ .gone = on_exited, .ud = &exited_calls });
	hook_rec = rec;
	exited_calls = 0;
	CHECK_EQ_INT(recorder_watch(rec, child, HP_WATCH_PID, 0, SEC, &p), 0);
	append_exit(rec, child, child + 1, HP_EXIT_GROUP, 2 * SEC);
	CHECK_EQ_U64(exited_calls, 1);
	CHECK(p->exit_record && p->exit_ns == 2 * SEC);
	append_exit(rec, child, child, HP_EXIT_GROUP, 2 * SEC + 1000);
	CHECK_EQ_U64(exited_calls, 1);
	CHECK_EQ_U64(p->exit_ns, 2 * SEC);
	CHECK_EQ_U64(p->events, 2);
	kill_child(child); /* reaped: /proc has no such pid (until another process takes it) */
	unowned = recorder_unowned(rec);
	append_migrate(rec, child, 2 * SEC + 50 * 1000 * 1000);
	CHECK_EQ_U64(p->events, 3);
	append_migrate(rec, child, 4 * SEC);
	CHECK_EQ_U64(p->events, 3);
	CHECK_EQ_U64(recorder_unowned(rec), unowned + 1);
	CHECK(recorder_find_live(rec, child) == NULL);
	recorder_free(rec);
}

/*
 * A watch by request finds the pid taken by a new process before the drain saw the old
 * one's exit record: the old one is gone there, and its exit record, drained after,
 * is the old one's; the new one stays watched.
 */
static void test_gone_then_exit_record(void)
{
	struct recorder *rec = recorder_new(&big);
	uint32_t child = spawn_child();
	struct proc_rec *old, *p;

	recorder_set_hooks(rec, &(struct recorder_hooks){ .gone = on_exited, .ud = &exited_calls });
	hook_rec = rec;
	exited_calls = 0;
	CHECK_EQ_INT(recorder_watch(rec, child, HP_WATCH_PID, 0, SEC, &old), 0);
	old->info.start_time--; /* /proc shows another process with its pid now */
	recorder_gone(rec, old, 3 * SEC);
	CHECK_EQ_INT(recorder_watch(rec, child, HP_WATCH_PID, 0, 3 * SEC, &p), 0);
	CHECK(p != old && recorder_find_live(rec, child) == p);
	append_exit(rec, child, child, HP_EXIT_GROUP, 2 * SEC);
	CHECK(recorder_find_live(rec, child) == p);
	CHECK_EQ_U64(p->exit_ns, 0);
	CHECK_EQ_U64(old->events, 1);
	CHECK_EQ_U64(exited_calls, 0);
	append_migrate(rec, child, 4 * SEC);
	CHECK_EQ_U64(p->events, 1);
	kill_child(child);
	recorder_free(rec);
}

/* A switch-out of pid's thread tid at ts, as the kernel records a watched one. */
static void append_switch_out(struct recorder *rec, uint32_t pid, uint64_t ts)
{
	union record r;
	struct hp_switch *sw = rec_init(&r, HP_EV_SWITCH, sizeof(*sw), ts);

	sw->prev_tid = sw->prev_pid = pid;
	sw->prev_state = 0x1;
	sw->flags = HP_SW_PREV_WATCHED;
	CHECK_EQ_INT(recorder_append(rec, &r.hdr), 0);
}

/*
 * Unwatched by request: the records the kernel wrote before it stopped, drained after,
 * are the stopped process's; so are those it wrote as it was told to stop (ts just after
 * the stop). Neither watches the process again (it was: "thread name", and the hooks
 * stayed on for a process nobody watched). Long after, records mean the kernel watches
 * it still: watched again.
 */
static void test_unwatch_strays(void)
{
	struct recorder *rec = recorder_new(&big);
	uint32_t child = spawn_child();
	uint64_t unowned = recorder_unowned(rec);
	struct proc_rec *p;

	CHECK_EQ_INT(recorder_watch(rec, child, HP_WATCH_PID, 0, SEC, &p), 0);
	append_switch_out(rec, child, SEC + 1);
	recorder_stop(rec, p, 2 * SEC);
	CHECK(recorder_find_live(rec, child) == NULL);
	append_switch_out(rec, child, 2 * SEC - 1);
	append_migrate(rec, child, 2 * SEC - 1);
	CHECK_EQ_U64(p->events, 3);
	append_switch_out(rec, child, 2 * SEC + 1000);
	append_migrate(rec, child, 2 * SEC + 2000);
	CHECK_EQ_U64(p->events, 5);
	CHECK(recorder_find_live(rec, child) == NULL);
	CHECK_EQ_U64(recorder_count(rec), 1);
	CHECK_EQ_U64(recorder_unowned(rec), unowned);
	/* watched again by request: its records from then on are the new watch's */
	{
		struct proc_rec *again;

		CHECK_EQ_INT(recorder_watch(rec, child, HP_WATCH_PID, 0, 3 * SEC, &again), 0);
		CHECK(again && again != p);
		append_migrate(rec, child, 3 * SEC + 1);
		CHECK_EQ_U64(again->events, 1);
		recorder_stop(rec, again, 4 * SEC);
	}
	/* a second and more after the stop: the kernel watches it still */
	append_switch_out(rec, child, 5 * SEC + 1);
	CHECK(recorder_find_live(rec, child) != NULL && recorder_find_live(rec, child)->reason == HP_WATCH_GLOB);
	kill_child(child);
	recorder_free(rec);
}

/* A child that waits, as uid (root only). */
static pid_t spawn_child_as(uid_t uid)
{
	pid_t pid = fork();

	if (pid < 0) {
		perror("test-recorder: fork");
		exit(1);
	}
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (setresgid(uid, uid, uid) < 0 || setresuid(uid, uid, uid) < 0)
			_exit(1);
		for (;;)
			pause();
	}
	children[n_children++] = pid;
	/* until it is uid's (it may not have dropped yet) */
	for (int i = 0; i < 1000; i++) {
		struct proc_info info;

		if (proc_read_info(pid, &info) == 0 && info.cred.uid == uid)
			break;
		usleep(1000);
	}
	return pid;
}

static size_t refused_calls;
static uint32_t refused_pid, refused_uid;

static void on_refused(void *ud, uint32_t pid, uint32_t uid)
{
	refused_calls++;
	refused_pid = pid;
	refused_uid = uid;
}

#define UID_A 65534
#define UID_B 65533
#define UID_C 65532

/*
 * Per-user budgets: a user's history is evicted only by that user's own processes or by
 * root's (from the user that holds the most); a user with no room it may take loses its
 * own records, counted; user_procs limits what the kernel starts watching by itself.
 */
static void test_user_quotas(void)
{
	const struct recorder_limits lim = {
		.window_ns = 1000 * SEC,
		.buffer_bytes = 64 * RECORDER_CHUNK,
		.memory_bytes = 8 * RECORDER_CHUNK,
		.host_bytes = RECORDER_CHUNK,
		.user_bytes = 3 * RECORDER_CHUNK,
		.user_procs = 2,
	};
	struct recorder *rec;
	uint32_t self = getpid(), a1, a2, a3, b1, b2, c1;
	struct proc_rec *pa1, *pa2, *pb1, *pc1, *me, *pb2;
	struct recorder_user ua, ub, uc;
	uint64_t ts = 10 * SEC;

	if (geteuid() != 0) {
		printf("test-recorder: not root: the per-user quotas need processes of other uids, not checked\n");
		return;
	}
	rec = recorder_new(&lim);
	recorder_set_hooks(rec, &(struct recorder_hooks){ .refused = on_refused });
	a1 = spawn_child_as(UID_A);
	a2 = spawn_child_as(UID_A);
	a3 = spawn_child_as(UID_A);
	b1 = spawn_child_as(UID_B);
	b2 = spawn_child_as(UID_B);
	c1 = spawn_child_as(UID_C);
	CHECK_EQ_INT(recorder_watch(rec, self, HP_WATCH_PID, 0, SEC, &me), 0);
	CHECK_EQ_INT(recorder_watch(rec, a1, HP_WATCH_PID, 0, SEC, &pa1), 0);
	CHECK_EQ_INT(recorder_watch(rec, a2, HP_WATCH_PID, 0, SEC, &pa2), 0);
	CHECK_EQ_INT(recorder_watch(rec, b1, HP_WATCH_PID, 0, SEC, &pb1), 0);
	CHECK_EQ_INT(recorder_watch(rec, c1, HP_WATCH_PID, 0, SEC, &pc1), 0);
	CHECK_EQ_U64(pa1->info.cred.uid, UID_A);

	/* B holds 2 chunks; A writes 5: its budget is 3, B keeps its 2 */
	fill_chunk(rec, b1, ts);
	fill_chunk(rec, b1, ts += SEC);
	for (int i = 0; i < 5; i++)
		fill_chunk(rec, i % 2 ? a2 : a1, ts += SEC);
	recorder_user(rec, UID_A, &ua);
	recorder_user(rec, UID_B, &ub);
	CHECK_EQ_U64(ua.bytes, 3 * RECORDER_CHUNK);
	CHECK_EQ_U64(ub.bytes, 2 * RECORDER_CHUNK);
	CHECK_EQ_U64(chunks_of(pb1), 2);
	CHECK_EQ_U64(pb1->evicted, 0);
	CHECK_EQ_U64(pa1->evicted + pa2->evicted, 2 * MIGRATES_PER_CHUNK);
	CHECK_EQ_U64(ua.live, 2);

	/* root fills the rest (3 chunks: 8 in all), then 2 more: each from the user with the
	 * most, A (3, as much as root) and then root itself (3 to A's 2) */
	for (int i = 0; i < 3; i++)
		fill_chunk(rec, self, ts += SEC);
	CHECK_EQ_U64(recorder_bytes(rec), 8 * RECORDER_CHUNK);
	fill_chunk(rec, self, ts += SEC);
	fill_chunk(rec, self, ts += SEC);
	recorder_user(rec, UID_A, &ua);
	recorder_user(rec, UID_B, &ub);
	CHECK_EQ_U64(ua.bytes, 2 * RECORDER_CHUNK);
	CHECK_EQ_U64(ub.bytes, 2 * RECORDER_CHUNK);
	CHECK_EQ_U64(chunks_of(me), 4);

	/* the memory is full: B's next chunk is made of its own oldest, nobody else's */
	fill_chunk(rec, b1, ts += SEC);
	recorder_user(rec, UID_A, &ua);
	recorder_user(rec, UID_B, &ub);
	CHECK_EQ_U64(ub.bytes, 2 * RECORDER_CHUNK);
	CHECK_EQ_U64(pb1->evicted, MIGRATES_PER_CHUNK);
	CHECK_EQ_U64(ua.bytes, 2 * RECORDER_CHUNK);
	CHECK_EQ_U64(chunks_of(me), 4);
	/* C holds nothing: with the memory full of others' history, its record is dropped */
	CHECK_EQ_INT(append_migrate(rec, c1, ts += SEC), 0);
	recorder_user(rec, UID_C, &uc);
	CHECK_EQ_U64(pc1->evicted, 1);
	CHECK_EQ_U64(pc1->events, 0);
	CHECK_EQ_U64(uc.dropped, 1);
	CHECK_EQ_U64(uc.bytes, 0);
	CHECK_EQ_U64(recorder_bytes(rec), 8 * RECORDER_CHUNK);
	CHECK_EQ_U64(chunks_of(pb1) + chunks_of(pa1) + chunks_of(pa2) + chunks_of(me), 8);

	/* user_procs: A has 2 live; what the kernel starts watching of A's is refused */
	CHECK(recorder_user_over_quota(rec, UID_A));
	CHECK(!recorder_user_over_quota(rec, UID_B));
	CHECK(!recorder_user_over_quota(rec, 0));
	append_fork(rec, a1, a3, ts += SEC);
	CHECK_EQ_U64(refused_calls, 1);
	CHECK_EQ_U64(refused_pid, a3);
	CHECK_EQ_U64(refused_uid, UID_A);
	CHECK(recorder_find(rec, a3) == NULL);
	append_migrate(rec, a3, ts += SEC);
	CHECK_EQ_U64(refused_calls, 1); /* a record of a pid that is not watched: no process made */
	append_fork(rec, a1, a3, ts += SEC);
	CHECK_EQ_U64(refused_calls, 2); /* watched anew in the kernel: refused anew */
	recorder_user(rec, UID_A, &ua);
	CHECK_EQ_U64(ua.refused, 2);
	CHECK_EQ_U64(ua.live, 2);
	/* B has room for one more: its child is watched, and is what goes for root's watch */
	CHECK(recorder_quota_victim(rec) == NULL); /* A's are by request, B has none from the kernel */
	append_fork(rec, b1, b2, ts += SEC);
	pb2 = recorder_find_live(rec, b2);
	CHECK(pb2 && pb2->reason == HP_WATCH_CHILD);
	CHECK(recorder_quota_victim(rec) == pb2);
	recorder_stop(rec, pb2, ts);
	recorder_user(rec, UID_B, &ub);
	CHECK_EQ_U64(ub.live, 1);
	CHECK(recorder_quota_victim(rec) == NULL);

	recorder_free(rec);
	kill_child(a1);
	kill_child(a2);
	kill_child(a3);
	kill_child(b1);
	kill_child(b2);
	kill_child(c1);
}

/* A record whose duration wrapped (its program read the clock before another of the
 * thread's own, which it raced) must not make the snapshot of its process inconsistent:
 * once, every later snapshot of the process failed with EINVAL. */
static void test_negative_duration(void)
{
	struct recorder *rec = recorder_new(&big);
	struct snapshot_ctx ctx = { .end_ns = 4 * SEC };
	uint32_t self = getpid();
	Hostprof__Snapshot *snap = NULL;
	uint8_t *data = NULL;
	uint64_t events = 0;
	struct proc_rec *p;
	size_t len = 0;
	union record r;
	struct hp_faults *f;
	struct hp_offcpu *o;

	CHECK_EQ_INT(recorder_watch(rec, self, HP_WATCH_PID, 0, SEC, &p), 0);
	f = rec_init(&r, HP_EV_FAULTS, sizeof(*f), 2 * SEC);
	f->tid = f->pid = self;
	f->minor = 3;
	f->dur_ns = (uint64_t)-1500; /* 1.5 us before it began */
	CHECK_EQ_INT(recorder_append(rec, &r.hdr), 0);
	f = rec_init(&r, HP_EV_FAULTS, sizeof(*f), 3 * SEC);
	f->tid = f->pid = self;
	f->minor = 1;
	f->dur_ns = 7000;
	CHECK_EQ_INT(recorder_append(rec, &r.hdr), 0);
	o = rec_init(&r, HP_EV_OFFCPU, sizeof(*o), 3 * SEC);
	o->tid = o->pid = self;
	o->dur_ns = UINT64_MAX;
	CHECK_EQ_INT(recorder_append(rec, &r.hdr), 0);

	CHECK_EQ_INT(snapshot_build(p, &ctx, &data, &len, &events), 0);
	CHECK_EQ_U64(events, 3);
	CHECK_EQ_INT(hps_unpack(data, len, &snap), 0);
	CHECK(snap && snap->faults && snap->faults->n_dur_ns == 2);
	if (snap && snap->faults && snap->faults->n_dur_ns == 2) {
		CHECK_EQ_U64(snap->faults->dur_ns[0], 0);
		CHECK_EQ_U64(snap->faults->minor[0], 3); /* the counts are kept */
		CHECK_EQ_U64(snap->faults->dur_ns[1], 7000);
	}
	CHECK(snap && snap->offcpu && snap->offcpu->n_dur_ns == 1 && snap->offcpu->dur_ns[0] == 0);
	hps_free(snap);
	free(data);
	recorder_free(rec);
}

/*
 * Chunks come from huge-page slabs where the kernel has them free: 40 chunks fill two
 * slabs, all but one of them go back when the chunks go (the spare is kept), and the next
 * chunks take the spare before a new slab. Where the kernel has no free huge pages (or no
 * THP), chunks come from malloc and no slab is held.
 */
#define SLAB_CHUNKS 40

static void test_slabs(void)
{
	struct recorder *rec = recorder_new(&big);
	size_t huge = huge_pages_free_for(4u << 20), per_slab = huge / RECORDER_CHUNK;
	uint32_t self = getpid();
	struct proc_rec *p;

	CHECK_EQ_INT(recorder_watch(rec, self, HP_WATCH_PID, 0, SEC, &p), 0);
	for (size_t i = 0; i < SLAB_CHUNKS; i++)
		fill_chunk(rec, self, SEC + i * MIGRATES_PER_CHUNK);
	CHECK_EQ_U64(chunks_of(p), SLAB_CHUNKS);
	if (!huge || per_slab < 2 || per_slab > 64 || huge % RECORDER_CHUNK) {
		printf("test-recorder: no free transparent huge pages here: chunks from malloc, slabs not checked\n");
		CHECK_EQ_U64(recorder_slab_bytes(rec), 0);
		recorder_free(rec);
		return;
	}
	CHECK_EQ_U64(recorder_slab_bytes(rec), ((SLAB_CHUNKS + per_slab - 1) / per_slab) * huge);
	{
		uintptr_t first = (uintptr_t)p->head & ~(uintptr_t)(huge - 1);
		size_t in_first = 0, misaligned = 0;

		for (const struct chunk *c = p->head; c; c = c->next) {
			in_first += ((uintptr_t)c & ~(uintptr_t)(huge - 1)) == first;
			misaligned += (uintptr_t)c % RECORDER_CHUNK != 0;
		}
		CHECK_EQ_U64(in_first, per_slab); /* the first slab, whole, before the next */
		CHECK_EQ_U64(misaligned, 0);
	}
	/* every chunk ages out: one slab is kept */
	recorder_tick(rec, 100 * SEC, NULL, NULL, NULL);
	CHECK_EQ_U64(chunks_of(p), 0);
	CHECK_EQ_U64(recorder_slab_bytes(rec), huge);
	for (size_t i = 0; i < per_slab; i++)
		fill_chunk(rec, self, 100 * SEC + i * MIGRATES_PER_CHUNK);
	CHECK_EQ_U64(recorder_slab_bytes(rec), huge);
	fill_chunk(rec, self, 101 * SEC);
	CHECK_EQ_U64(recorder_slab_bytes(rec), 2 * huge);
	recorder_free(rec);
}

/*
 * A table's rows come out in time order however late each CPU's records arrived: CPU 0's a
 * few places late (put back in place), CPU 1's in reverse (past the budget of moves: the
 * whole run sorted), the two CPUs' records interleaved in arrival order and across chunks.
 * Each record once, with its own time (its id in from_cpu).
 */
#define SORT_N0 3000
#define SORT_N1 1000

static void test_sort_late(void)
{
	struct recorder *rec = recorder_new(&big);
	struct snapshot_ctx ctx = { .end_ns = 9 * SEC };
	uint64_t want[SORT_N0 + SORT_N1], cpu0[SORT_N0];
	bool seen[SORT_N0 + SORT_N1] = {};
	uint32_t self = getpid();
	Hostprof__Snapshot *snap = NULL;
	uint8_t *data = NULL;
	uint64_t events = 0;
	struct proc_rec *p;
	size_t len = 0;

	CHECK_EQ_INT(recorder_watch(rec, self, HP_WATCH_PID, 0, SEC, &p), 0);
	/* CPU 0: in order, but each third record swapped with the one up to 5 places on */
	for (size_t i = 0; i < SORT_N0; i++)
		cpu0[i] = i;
	for (size_t i = 0; i + 5 < SORT_N0; i += 3) {
		size_t j = i + 1 + i % 5;
		uint64_t t = cpu0[i];

		cpu0[i] = cpu0[j];
		cpu0[j] = t;
	}
	for (size_t i = 0, i0 = 0, i1 = 0; i < SORT_N0 + SORT_N1; i++) {
		bool one = i % 3 == 2 && i1 < SORT_N1;
		uint64_t id = one ? SORT_N0 + (SORT_N1 - 1 - i1++) : cpu0[i0++];
		uint64_t ts = 2 * SEC + (id < SORT_N0 ? id * 10 : (id - SORT_N0) * 20 + 5);
		union record r;
		struct hp_migrate *e = rec_init(&r, HP_EV_MIGRATE, sizeof(*e), ts);

		r.hdr.cpu = one;
		e->tid = e->pid = self;
		e->from_cpu = id;
		want[id] = ts;
		CHECK_EQ_INT(recorder_append(rec, &r.hdr), 0);
	}
	CHECK(chunks_of(p) > 1);
	CHECK_EQ_INT(snapshot_build(p, &ctx, &data, &len, &events), 0);
	CHECK_EQ_U64(events, SORT_N0 + SORT_N1);
	CHECK_EQ_INT(hps_unpack(data, len, &snap), 0);
	CHECK(snap && snap->migrations && snap->migrations->n_ts_delta == SORT_N0 + SORT_N1 &&
	      snap->migrations->n_from_cpu == SORT_N0 + SORT_N1);
	if (snap && snap->migrations && snap->migrations->n_ts_delta == SORT_N0 + SORT_N1 &&
	    snap->migrations->n_from_cpu == SORT_N0 + SORT_N1) {
		const Hostprof__MigrationTable *t = snap->migrations;
		uint64_t ts = snap->start_ns;
		size_t bad = 0;

		for (size_t i = 0; i < t->n_ts_delta; i++) {
			uint32_t id = t->from_cpu[i];

			ts += t->ts_delta[i];
			if (i && !t->ts_delta[i])
				bad++; /* all times differ here: a zero delta is a row out of order */
			if (id >= SORT_N0 + SORT_N1 || seen[id] || want[id] != ts) {
				bad++;
				continue;
			}
			seen[id] = true;
		}
		CHECK_EQ_U64(bad, 0);
	}
	hps_free(snap);
	free(data);
	recorder_free(rec);
}

/* An off-CPU record of self at ts: kernel frames k[0..nk), user frames u[0..nu). */
static void append_offcpu(struct recorder *rec, uint64_t ts, const __u64 *k, size_t nk, const __u64 *u, size_t nu,
			  uint32_t flags)
{
	union record r;
	struct hp_offcpu *o = rec_init(&r, HP_EV_OFFCPU, sizeof(*o) + (nk + nu) * sizeof(__u64), ts);

	o->tid = o->pid = getpid();
	o->dur_ns = 1000;
	o->kstack_len = nk;
	o->ustack_len = nu;
	o->stack_flags = flags;
	memcpy(o->frames, k, nk * sizeof(*k));
	memcpy(o->frames + nk, u, nu * sizeof(*u));
	CHECK_EQ_INT(recorder_append(rec, &r.hdr), 0);
}

/* Rows with the same frames share one stack (the builder looks a stack it met up by its
 * addresses); frames alike but truncated, or a prefix, are stacks of their own, and the
 * frames are shared between stacks. */
static void test_shared_stacks(void)
{
	static const __u64 k[] = { 0xffffffff81000010, 0xffffffff81000020, 0xffffffff81000030 };
	static const __u64 u[] = { 0x401010, 0x402020, 0x403030 };
	struct recorder *rec = recorder_new(&big);
	struct snapshot_ctx ctx = { .end_ns = 4 * SEC };
	Hostprof__Snapshot *snap = NULL;
	uint8_t *data = NULL;
	uint64_t events = 0;
	struct proc_rec *p;
	size_t len = 0;

	CHECK_EQ_INT(recorder_watch(rec, getpid(), HP_WATCH_PID, 0, SEC, &p), 0);
	append_offcpu(rec, 2 * SEC, k, 3, u, 3, 0);
	append_offcpu(rec, 2 * SEC + 1, k, 3, u, 3, 0);		   /* the same as row 0 */
	append_offcpu(rec, 2 * SEC + 2, k, 3, u, 3, HP_STACK_UTRUNC); /* its user stack truncated */
	append_offcpu(rec, 2 * SEC + 3, k, 2, u, 2, 0);		   /* prefixes */
	append_offcpu(rec, 2 * SEC + 4, k, 3, u, 3, 0);		   /* row 0's again, after others */
	append_offcpu(rec, 2 * SEC + 5, u, 3, k, 3, 0);		   /* user addresses as kernel ones */
	CHECK_EQ_INT(snapshot_build(p, &ctx, &data, &len, &events), 0);
	CHECK_EQ_U64(events, 6);
	CHECK_EQ_INT(hps_unpack(data, len, &snap), 0);
	CHECK(snap && snap->offcpu && snap->offcpu->n_kstack == 6 && snap->offcpu->n_ustack == 6);
	if (snap && snap->offcpu && snap->offcpu->n_kstack == 6 && snap->offcpu->n_ustack == 6) {
		const uint32_t *ks = snap->offcpu->kstack, *us = snap->offcpu->ustack;

		CHECK(ks[0] && us[0] && ks[0] != us[0]);
		CHECK(ks[1] == ks[0] && us[1] == us[0] && ks[4] == ks[0] && us[4] == us[0]);
		CHECK(ks[2] == ks[0] && us[2] != us[0]);
		CHECK(ks[3] != ks[0] && us[3] != us[0] && us[3] != us[2]);
		CHECK(ks[5] != ks[0] && ks[5] != us[0] && us[5] != us[0] && us[5] != ks[0]);
		/* 3 kernel stacks and 4 user ones, 6 + 6 frames (kernel and user ones apart) */
		CHECK_EQ_U64(snap->n_stacks, 7);
		CHECK_EQ_U64(snap->n_frames, 12);
		if (us[2] && us[2] <= snap->n_stacks && us[0] && us[0] <= snap->n_stacks) {
			const Hostprof__Stack *a = snap->stacks[us[0] - 1], *t = snap->stacks[us[2] - 1];

			CHECK(!a->truncated && t->truncated && a->n_frames == 3 && t->n_frames == 3 &&
			      !memcmp(a->frames, t->frames, 3 * sizeof(*a->frames)));
		}
	}
	hps_free(snap);
	free(data);
	recorder_free(rec);
}

int main(void)
{
	struct proc_info self;

	if (proc_read_info(getpid(), &self) < 0) {
		printf("test-recorder: /proc/self is not readable here, skipping\n");
		return 77;
	}
	log_set_max_level(LOG_WARNING); /* "watching pid ..." is not news here */
	test_append();
	test_sizes();
	test_window();
	test_process_budget();
	test_global_budget();
	test_exited();
	test_exit_record();
	test_dying_threads();
	test_gone_then_exit_record();
	test_unwatch_strays();
	test_user_quotas();
	test_negative_duration();
	test_sort_late();
	test_slabs();
	test_shared_stacks();
	while (n_children)
		kill_child(children[0]);
	return check_summary();
}
