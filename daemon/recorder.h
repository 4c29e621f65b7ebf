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
#include "timeacct.h"

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

/*
 * A CPython process's GIL as daemon/gil.c found it, and the Python stacks of the holders
 * of its recorded GIL waits, read on the worker as each record drained (so lag_ns after
 * the wait ended: what the holder ran then). The newest GIL_STACKS_MAX are kept.
 */
#define GIL_STACKS_MAX 2048
#define GIL_FRAMES_MAX 16 /* innermost frames kept of a holder's stack */

#define GIL_STATUS_WATCHED 1 /* GilTable.status */
#define GIL_STATUS_FREE_THREADED 2
#define GIL_STATUS_UNWATCHED 3

struct gil_frame {
	char *function, *file;
	uint32_t line, first_line;
};

struct gil_stack {
	uint64_t wait_ts; /* the record's hdr.ts */
	uint32_t tid;     /* its waiter */
	uint32_t n_frames;
	uint64_t lag_ns;
	struct gil_frame frames[GIL_FRAMES_MAX];
};

struct gil_state {
	uint32_t status; /* GIL_STATUS_*; 0: not CPython (or not known yet) */
	char version[16];
	char reason[128];
	struct gil_stack *stacks; /* a ring of GIL_STACKS_MAX, next the slot to write */
	size_t n_stacks, next;
	uint64_t missed; /* recorded waits whose holder's stack was not read */
	uint64_t since_ns; /* BOOTTIME: in the kernel from here on */
};

/* Keeps s as the newest stack of g (its strings are taken); frees the one it replaces. */
int gil_state_add_stack(struct gil_state *g, struct gil_stack *s);
void gil_state_done(struct gil_state *g);

struct proc_rec {
	struct proc_info info; /* pid, ppid, start_time, uid, euid, comm */
	char *cmdline;         /* NUL-separated */
	size_t cmdline_len;
	uint32_t reason, parent; /* HP_WATCH_*, and the parent for HP_WATCH_CHILD */
	char why[48];
	uint64_t watch_ns; /* BOOTTIME when watching began */
	uint64_t exit_ns;  /* BOOTTIME when it exited, was found gone or stopped; 0 while watched */
	/* the exit of the pid's previous holder, as the kernel saw it (0: none seen): records
	 * of the pid up to then are that process's (the rings are drained unordered) */
	uint64_t pid_free_ns;
	struct chunk *head, *tail;
	uint64_t bytes;   /* chunk memory */
	uint64_t events;  /* records appended */
	uint64_t evicted; /* records dropped for space (budgets, no memory), not for age */
	struct task_name *threads;
	size_t n_threads, cap_threads;
	bool maps_dirty; /* an exec or a mapping change since its maps were last read */
	uint32_t maps_changes; /* capture_maps_changes when last looked at */
	struct hist_entry *final_hists; /* its syscall histograms, saved when it exited */
	size_t n_final_hists;
	bool hists_saved;
	bool unwatched; /* stopped by request (exit_ns is then when), not exited */
	bool exit_record; /* exit_ns is its exit record's: its dying threads may record after it */
	uint8_t unread_ticks; /* ticks in a row its /proc could not be read (not ENOENT) */
	/* Credentials: info has those it had when watching began. An exec that changed them
	 * (a set-uid program) is found at the next check (watch.c): cred_change_ns is then
	 * when, and what was recorded from there on is root's alone. */
	uint64_t exec_since_check_ns; /* the first exec since the last check; 0: none */
	uint64_t cred_change_ns;      /* 0: unchanged */
	/* its command line and the job and rank from its environment: read on the worker
	 * (watch.c), since both reads take the process's mmap_lock */
	struct proc_labels labels;
	bool labels_read, labels_pending;
	/* where its threads' time went, counted as its records are filed (timeacct.h) */
	struct proc_acct acct;
	struct gil_state gil; /* daemon/gil.c */
	bool py_checked, py_pending; /* asked whether it is CPython (watch.c), since its last exec */
	uint8_t py_tries;             /* asks that ran out of the worker's time, since then */
	bool py_walked; /* its Python stacks are walked in the kernel */
};

/*
 * Budgets. A user other than root (its processes: those whose real uid it is) holds at
 * most user_bytes of history and user_procs live watched processes (0: no limit). A
 * process of such a user makes room, under its own budgets, the user's budget and the
 * global one, only from that user's own history: when all it could drop is others', its
 * record is dropped (counted in its `evicted`). A root process makes room under the
 * global budget from the user that holds the most.
 */
struct recorder_limits {
	uint64_t window_ns;
	uint64_t buffer_bytes; /* per process */
	uint64_t memory_bytes; /* all processes */
	uint64_t host_bytes;   /* --cpus: the host-wide recorder, on its own */
	uint64_t user_bytes;   /* per user other than root; 0: no limit */
	uint32_t user_procs;   /* live watched processes per user other than root; 0: no limit */
};

struct recorder;

struct recorder *recorder_new(const struct recorder_limits *lim);
void recorder_free(struct recorder *rec);
void recorder_set_limits(struct recorder *rec, const struct recorder_limits *lim);

/* Start recording pid (reads its /proc metadata). Returns the record, existing or new.
 * Not limited by user_procs: the caller asks recorder_user_over_quota() where it applies
 * (a request of a user's own; the processes the kernel starts watching by itself are
 * checked here, in the drain, and handed to the `refused` hook). */
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

/*
 * What the drain tells the code that watches: gone, when a record shows that a process
 * exited (the exit of its last thread; a fork that hands out its pid again), with
 * exit_ns set and the process no longer live. The kernel has stopped watching its pid
 * by then: whatever is in the watched map under that pid now is a new process.
 */
struct recorder_hooks {
	void (*gone)(void *ud, struct proc_rec *p);
	/* a process the kernel started watching by itself (a child, a thread name) that its
	 * user's user_procs has no room for: not recorded, to be unwatched in the kernel */
	void (*refused)(void *ud, uint32_t pid, uint32_t uid);
	void *ud;
};
void recorder_set_hooks(struct recorder *rec, const struct recorder_hooks *hooks);

/* Iteration over all processes, live and exited, oldest watch first. */
size_t recorder_count(const struct recorder *rec);
struct proc_rec *recorder_at(const struct recorder *rec, size_t i);

/* Chunk memory of the processes (the --cpus host recorder is not counted). */
uint64_t recorder_bytes(const struct recorder *rec);
/* The huge-page slabs that chunks come from, free chunks in them too (0 where the kernel
 * has no transparent huge pages, or had no free blocks of them). */
size_t recorder_slab_bytes(const struct recorder *rec);
/* Records appended, and refused. */
uint64_t recorder_events(const struct recorder *rec);
uint64_t recorder_refused(const struct recorder *rec);
/* Records of no process held here, not kept (the drop cause no_process): a pid's records
 * drained after its process was unwatched or exited (its dying threads' switches aside). */
uint64_t recorder_unowned(const struct recorder *rec);
const struct recorder_limits *recorder_limits(const struct recorder *rec);

/* Stop recording a live process; its history stays until it ages out. */
void recorder_stop(struct recorder *rec, struct proc_rec *p, uint64_t now);
/* A live process found gone outside the tick (its pid names another process now): as the
 * tick would, it is exited at now, no longer live. */
void recorder_gone(struct recorder *rec, struct proc_rec *p, uint64_t now);

/* --cpus: keep switches between unwatched tasks on the recorded CPUs, host-wide. */
int recorder_enable_host(struct recorder *rec, bool on);
const struct proc_rec *recorder_host(const struct recorder *rec);
/* Processes alive and watched. */
size_t recorder_live_count(const struct recorder *rec);

/* What one user holds: live watched processes, history bytes, and what its budgets cost
 * it: records dropped for its budget (user_bytes, or the global one full of others'),
 * processes not watched for user_procs. */
struct recorder_user {
	uint32_t uid;
	uint32_t live;
	uint64_t bytes;
	uint64_t dropped;
	uint64_t refused;
};
/* Those of uid (zeros if it has none). */
void recorder_user(const struct recorder *rec, uint32_t uid, struct recorder_user *ret);
/* Every uid that had a process watched, root's too. */
size_t recorder_users(const struct recorder *rec, const struct recorder_user **ret);
/* uid is not root and has user_procs live watched processes already. */
bool recorder_user_over_quota(const struct recorder *rec, uint32_t uid);
/* A live process that the kernel started watching by itself (a child, a thread name),
 * of the user other than root with the most, its newest: what goes when the watched map
 * is full and root asks for a process. NULL if none. */
struct proc_rec *recorder_quota_victim(const struct recorder *rec);

/* The time span of what p holds now (BOOTTIME); false when it holds nothing. */
bool recorder_history_span(const struct proc_rec *p, uint64_t *ret_first, uint64_t *ret_last);

/* Every record p holds, chunk by chunk (not in time order: shards arrive unordered). */
void recorder_for_each_record(const struct proc_rec *p, void (*fn)(void *ud, const struct hp_hdr *h), void *ud);

/* Thread name of tid within p, or NULL. */
const char *proc_rec_thread_name(const struct proc_rec *p, uint32_t tid);

#endif
