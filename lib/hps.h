/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The canonical snapshot file (.hps): the 8-byte magic HPS_MAGIC, then one serialized
 * hostprof.Snapshot (proto/snapshot.proto).
 */
#ifndef HOSTPROF_HPS_H
#define HOSTPROF_HPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "snapshot.pb-c.h"

#define HPS_MAGIC "HPSNAP01"
#define HPS_MAGIC_LEN 8
#define HPS_FORMAT_VERSION 1
#define HPS_MAX_FILE (1ULL << 31) /* what a reader accepts */

/* Serialize with the magic in front, into a new malloc'ed buffer. */
int hps_pack(const Hostprof__Snapshot *snap, uint8_t **ret_data, size_t *ret_len);
/* The same, room bytes into the buffer (*ret_data: its start; *ret_len counts them): a
 * caller's header goes in front without a copy of the whole. */
int hps_pack_room(const Hostprof__Snapshot *snap, size_t room, uint8_t **ret_data, size_t *ret_len);
/* Parse bytes that start with the magic. -EBADMSG when they are not a snapshot. */
int hps_unpack(const uint8_t *data, size_t len, Hostprof__Snapshot **ret_snap);
/* The consistency checks of hps_unpack for a snapshot built in memory: -EINVAL. */
int hps_validate(const Hostprof__Snapshot *snap);
/* What of a snapshot built in memory fails those checks, in words; NULL when none does. */
const char *hps_inconsistency(const Hostprof__Snapshot *snap);
int hps_read_file(const char *path, Hostprof__Snapshot **ret_snap);

void hps_free(Hostprof__Snapshot *snap);

/*
 * What a summary line says of a snapshot, read off its encoding without decoding it (a
 * 10 s window of a busy process is ~9 MiB that a client writing it as it is need not
 * unpack): the top-level fields, and whether any name the snapshot holds (a string of
 * Snapshot.strings, which the tables' comm columns index, or a Thread.comm) matches
 * thread_glob. When none does, no thread of it is so named; when one does, one may be.
 * -EBADMSG when the bytes are not a snapshot's encoding.
 */
struct hps_peek {
	uint32_t pid;
	uint64_t start_ns, end_ns;
	size_t n_threads;
	bool named;
};
int hps_peek(const uint8_t *data, size_t len, const char *thread_glob, struct hps_peek *ret);

/*
 * Absolute timestamps of a table's ts_delta column (start_ns + running sum), malloc'ed.
 */
int hps_abs_times(uint64_t start_ns, const uint64_t *delta, size_t n, uint64_t **ret_ts);
/* Absolute timestamps of the sched_switch table (ts_delta accumulated), malloc'ed. */
int hps_switch_times(const Hostprof__Snapshot *snap, uint64_t **ret_ts);

/*
 * What the values of the snapshot's columns mean (proto/snapshot.proto says the same in
 * prose). Every reader of a snapshot takes them from here; the daemon writes the kernel's
 * values (bpf/hostprof.h) through unchanged, so the two agree by construction.
 */

/* SchedSwitchTable.prev_state, OffCpuTable.state: the sched_switch tracepoint's encoding */
#define HPS_STATE_RUNNING 0x0
#define HPS_STATE_UNINTERRUPTIBLE 0x2 /* D */
#define HPS_STATE_PREEMPTED 0x100 /* TASK_REPORT_MAX: preempted while runnable, "R+" */
#define HPS_STATE_KNOWN 0x1ff /* the bits of R+ and of S D T t X Z P I (0x1 .. 0x80) */
/* Switched out while still runnable (R or R+): preempted. */
#define HPS_STATE_RUNNABLE(s) ((s) == HPS_STATE_RUNNING || (s) == HPS_STATE_PREEMPTED)

/* SchedSwitchTable.next_wait_kind: where next's wait on the runqueue began; 0: not known */
#define HPS_WAIT_WAKEUP 1
#define HPS_WAIT_PREEMPT 2

/* TaskEventTable.kind */
#define HPS_TASK_FORK 1
#define HPS_TASK_EXIT 2
#define HPS_TASK_EXEC 3
#define HPS_TASK_RENAME 4

/* IrqTable.kind and IrqTable.flags */
#define HPS_IRQ_HARD 1
#define HPS_IRQ_SOFT 2
#define HPS_IRQ_INTERRUPTED 0x1 /* it ran while tid ran there */
#define HPS_IRQ_WAITED 0x2 /* a thread of pid waited for that CPU meanwhile */

/* ReclaimTable.kind; result counts pages reclaimed, but for a compaction, its status */
#define HPS_RECLAIM_DIRECT 1
#define HPS_RECLAIM_MEMCG 2
#define HPS_RECLAIM_COMPACT 3

/* LockTable.flags: the kernel's LCB_F_* bits, and hostprof's own for the mmap_lock */
#define HPS_LOCK_SPIN 0x1
#define HPS_LOCK_READ 0x2
#define HPS_LOCK_WRITE 0x4
#define HPS_LOCK_RT 0x8
#define HPS_LOCK_PERCPU 0x10
#define HPS_LOCK_MUTEX 0x20
#define HPS_LOCK_MMAP 0x10000 /* the lock is the mmap_lock of the thread's own process */

/* SyscallTable.flags (hps_syscall_flags) */
#define HPS_SYSCALL_BLOCKED 0x1     /* syscalls = blocking: dur_ns is the time it was blocked */
#define HPS_SYSCALL_RET_UNKNOWN 0x2 /* ret is not known */

static inline uint32_t hps_syscall_flags(const Hostprof__SyscallTable *t, size_t i)
{
	return i < t->n_flags ? t->flags[i] : 0;
}

/* syscalls = blocking: syscalls that never sleep, per-call counts (syscall_hist) and
 * return values are not covered (Snapshot.not_covered says it in words). */
static inline bool hps_syscalls_blocking(const Hostprof__Snapshot *snap)
{
	return snap->has_syscall_mode && snap->syscall_mode == HOSTPROF__SYSCALL_MODE__SYSCALLS_BLOCKING;
}

/* Snapshot.interference: the tables captured */
#define HPS_INTERF_IRQ 0x1
#define HPS_INTERF_RECLAIM 0x2
#define HPS_INTERF_FAULTS 0x4
#define HPS_INTERF_LOCKS 0x8
#define HPS_INTERF_FAULT_TYPES 0x10 /* FaultTable.faults/write/exec/prot are filled */
#define HPS_INTERF_ALL 0x1f

/* "R", "R+", "S", "D", "I"...: a prev_state value as ps and the tracepoint print it; others as 0x.. in buf. */
const char *hps_state_name(uint32_t state, char *buf, size_t len);

/* "NET_RX", "TIMER"...: a softirq vector's name as the kernel prints it; "?" past the known ones. */
const char *hps_softirq_name(uint32_t vec);
/* "direct reclaim", "memcg reclaim", "compaction" for ReclaimTable.kind. */
const char *hps_reclaim_kind_name(uint32_t kind);
/* "mutex", "rwsem write", "spinlock"...: LockTable.flags as a kind of lock. */
const char *hps_lock_kind_name(uint32_t flags);

/* "lock wait: mmap_lock (rwsem read)" for row i of the lock table, or without the lock's
 * name when it has none. */
void hps_lock_wait_name(const Hostprof__Snapshot *snap, size_t i, char *buf, size_t len);

/* String table lookup that never goes out of range. */
/* The name Snapshot.threads gives thread tid, NULL when no entry names it. */
const char *hps_thread_comm(const Hostprof__Snapshot *snap, uint32_t tid);

static inline const char *hps_str(const Hostprof__Snapshot *snap, uint32_t idx)
{
	return idx < snap->n_strings ? snap->strings[idx] : "";
}

#endif
