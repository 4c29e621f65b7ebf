/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The flight recorder: for each watched process, the records of the last `window`
 * seconds, in 64 KiB chunks, within a per-process and a global byte budget. The oldest
 * chunk goes first. A process that exited stays until its data ages out.
 */
#ifndef HOSTPROF_RECORDER_H
#define HOSTPROF_RECORDER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "counts.h"
#include "hostprof.h"
#include "procfs.h"

#define RECORDER_CHUNK (64 * 1024)

struct chunk {
	struct chunk *next;
	uint64_t min_ts, max_ts; /* shards arrive unordered: a chunk's records are not sorted */
	uint32_t used;
	uint32_t nrec; /* records in it; data[] 8-byte aligned (record sizes are multiples of 8) */
	uint8_t data[] __attribute__((aligned(8)));
};

struct task_name {
	uint32_t tid;
	char comm[HP_COMM_LEN];
};

struct proc_rec {
	struct proc_info info; /* pid, ppid, start_time, uid, euid, comm */
	char *cmdline;         /* NUL-separated */
	size_t cmdline_len;
	uint32_t reason, parent; /* HP_WATCH_*, and the parent for HP_WATCH_CHILD */
	char why[48];
	uint64_t watch_ns; /* BOOTTIME when watching began */
	uint64_t exit_ns;  /* BOOTTIME when it was found gone or stopped; 0 while watched */
	struct chunk *head, *tail;
	uint64_t bytes;   /* chunk memory */
	uint64_t events;  /* records appended */
	uint64_t evicted; /* records dropped for space (budgets, no memory), not for age */
	struct task_name *threads;
	size_t n_threads, cap_threads;
	bool maps_dirty; /* an exec or a mapping change since its maps were last read */
	struct hist_entry *final_hists; /* its syscall histograms, saved when it exited */
	size_t n_final_hists;
	bool hists_saved;
	bool unwatched; /* stopped by request (exit_ns is then when), not exited */
	/* Credentials: info has those it had when watching began. An exec that changed them
	 * (a set-uid program) is found at the next check (watch.c): cred_change_ns is then
	 * when, and what was recorded from there on is root's alone. */
	uint64_t exec_since_check_ns; /* the first exec since the last check; 0: none */
	uint64_t cred_change_ns;      /* 0: unchanged */
	/* its command line and the job and rank from its environment: read on the worker
	 * (watch.c), since both reads take the process's mmap_lock */
	struct proc_labels labels;
	bool labels_read, labels_pending;
};

struct recorder_limits {
	uint64_t window_ns;
	uint64_t buffer_bytes; /* per process */
	uint64_t memory_bytes; /* all processes */
	uint64_t host_bytes;   /* --cpus: the host-wide recorder, on its own */
};

struct recorder;

struct recorder *recorder_new(const struct recorder_limits *lim);
void recorder_free(struct recorder *rec);
void recorder_set_limits(struct recorder *rec, const struct recorder_limits *lim);

/* Start recording pid (reads its /proc metadata). Returns the record, existing or new. */
int recorder_watch(struct recorder *rec, uint32_t pid, uint32_t reason, uint32_t parent, uint64_t now,
		   struct proc_rec **ret);
/* The live process with this pid, else the most recent one that exited; NULL if none. */
struct proc_rec *recorder_find(const struct recorder *rec, uint32_t pid);
struct proc_rec *recorder_find_live(const struct recorder *rec, uint32_t pid);

/*
 * One record from the ring buffers, hdr->size bytes, filed with the process(es) it
 * belongs to. A record that does not parse (record_check) is refused and counted
 * (recorder_refused): chunks are walked by hdr->size and decoded by snapshots, so only
 * records that parse are kept. -EBADMSG when refused.
 */
int recorder_append(struct recorder *rec, const struct hp_hdr *hdr);

/*
 * Once a second or so: age data out of the window, find processes that are gone (their
 * pid is free or now names another process), free the exited ones whose data has all
 * aged out and whose exit is older than the window.
 * gone_fn is called for each process found gone, so the caller can stop watching it;
 * freed_fn when its history is gone too.
 */
void recorder_tick(struct recorder *rec, uint64_t now, void (*gone_fn)(void *ud, struct proc_rec *p),
		   void (*freed_fn)(void *ud, uint32_t pid), void *ud);

/* Iteration over all processes, live and exited, oldest watch first. */
size_t recorder_count(const struct recorder *rec);
struct proc_rec *recorder_at(const struct recorder *rec, size_t i);

/* Chunk memory of the processes (the --cpus host recorder is not counted). */
uint64_t recorder_bytes(const struct recorder *rec);
/* Records appended, and refused. */
uint64_t recorder_events(const struct recorder *rec);
uint64_t recorder_refused(const struct recorder *rec);
const struct recorder_limits *recorder_limits(const struct recorder *rec);

/* Stop recording a live process; its history stays until it ages out. */
void recorder_stop(struct recorder *rec, struct proc_rec *p, uint64_t now);

/* --cpus: keep switches between unwatched tasks on the recorded CPUs, host-wide. */
int recorder_enable_host(struct recorder *rec, bool on);
const struct proc_rec *recorder_host(const struct recorder *rec);
/* Processes alive and watched. */
size_t recorder_live_count(const struct recorder *rec);

/* The time span of what p holds now (BOOTTIME); false when it holds nothing. */
bool recorder_history_span(const struct proc_rec *p, uint64_t *ret_first, uint64_t *ret_last);

/* Every record p holds, chunk by chunk (not in time order: shards arrive unordered). */
void recorder_for_each_record(const struct proc_rec *p, void (*fn)(void *ud, const struct hp_hdr *h), void *ud);

/* Thread name of tid within p, or NULL. */
const char *proc_rec_thread_name(const struct proc_rec *p, uint32_t tid);

#endif
