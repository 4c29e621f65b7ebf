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
/* Parse bytes that start with the magic. -EBADMSG when they are not a snapshot. */
int hps_unpack(const uint8_t *data, size_t len, Hostprof__Snapshot **ret_snap);
/* The consistency checks of hps_unpack for a snapshot built in memory: -EINVAL. */
int hps_validate(const Hostprof__Snapshot *snap);
int hps_read_file(const char *path, Hostprof__Snapshot **ret_snap);
void hps_free(Hostprof__Snapshot *snap);

/*
 * Absolute timestamps of a table's ts_delta column (start_ns + running sum), malloc'ed.
 */
int hps_abs_times(uint64_t start_ns, const uint64_t *delta, size_t n, uint64_t **ret_ts);
/* Absolute timestamps of the sched_switch table (ts_delta accumulated), malloc'ed. */
int hps_switch_times(const Hostprof__Snapshot *snap, uint64_t **ret_ts);

/* "R", "R+", "S", "D", "I"...: a prev_state value as ps and the tracepoint print it; others as 0x.. in buf. */
const char *hps_state_name(uint32_t state, char *buf, size_t len);

/* "NET_RX", "TIMER"...: a softirq vector's name as the kernel prints it; "?" past the known ones. */
const char *hps_softirq_name(uint32_t vec);
/* "direct reclaim", "memcg reclaim", "compaction" for ReclaimTable.kind. */
const char *hps_reclaim_kind_name(uint32_t kind);
/* "mutex", "rwsem write", "spinlock"...: LockTable.flags as a kind of lock. */
const char *hps_lock_kind_name(uint32_t flags);

/* LockTable.flags: hostprof's bit for "the lock is its process's mmap_lock" */
#define HPS_LOCK_MMAP 0x10000

/* "lock wait: mmap_lock (rwsem read)" for row i of the lock table, or without the lock's
 * name when it has none. */
void hps_lock_wait_name(const Hostprof__Snapshot *snap, size_t i, char *buf, size_t len);

/* String table lookup that never goes out of range. */
static inline const char *hps_str(const Hostprof__Snapshot *snap, uint32_t idx)
{
	return idx < snap->n_strings ? snap->strings[idx] : "";
}

#endif
