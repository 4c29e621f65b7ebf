/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * What the three parts of the Perfetto exporter share: export_perfetto.c (the trace, its
 * header packets and the samples), perfetto_sched.c (the scheduler and IRQ events, per-CPU
 * ftrace bundles) and perfetto_tracks.c (the slices and instants on thread tracks). The
 * format itself is described at the top of export_perfetto.c.
 */
#ifndef HOSTPROF_PERFETTO_INTERNAL_H
#define HOSTPROF_PERFETTO_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "pbwriter.h"
#include "snapshot.pb-c.h"
#include "snapview.h"

#define PERFETTO_SEQUENCE_ID 0x4850 /* "HP": header packets and ftrace bundles; not 0 or 1 */
#define PERFETTO_PROFILE_SEQUENCE_ID 0x4851 /* the samples and their interned stacks */
#define PERFETTO_TRACK_CLOCK_ID 64 /* a track sequence's own incremental clock (64..127) */

/* Track uuids: global to the trace, not 0; tids and pids stay below 2^22, and bits 22..43
 * hold the machine (pf_exporter.machine_id, 0 in a trace of one snapshot). */
#define PF_MACHINE_BITS(e) ((uint64_t)(e)->machine_id << 22)
#define THREAD_TRACK_UUID(e, tid) (UINT64_C(0x4850000000000000) | PF_MACHINE_BITS(e) | (uint64_t)(tid))
#define PROCESS_TRACK_UUID(e, pid) (UINT64_C(0x4850100000000000) | PF_MACHINE_BITS(e) | (uint64_t)(pid))
#define FAULTS_TRACK_UUID(e, tid) (UINT64_C(0x4850200000000000) | PF_MACHINE_BITS(e) | (uint64_t)(tid))
#define EPISODES_TRACK_UUID(e, tid) (UINT64_C(0x4850300000000000) | PF_MACHINE_BITS(e) | (uint64_t)(tid))
#define NODE_TRACK_UUID(e) (UINT64_C(0x4850400000000000) | PF_MACHINE_BITS(e))
#define PF_MAX_MACHINES (1u << 22)

#define EXPORT_FLUSH_BYTES (256u * 1024)
#define EXPORT_MAX_CPUS 8192 /* the kernel's largest NR_CPUS */

#define PRIO_UNKNOWN INT32_MIN

/* Field numbers of the public protos, as export_perfetto.c lists them. */
enum {
	TRACE_PACKET = 1,
};

enum {
	PACKET_FTRACE_EVENTS = 1,
	PACKET_PROCESS_TREE = 2,
	PACKET_CLOCK_SNAPSHOT = 6,
	PACKET_TIMESTAMP = 8,
	PACKET_TRUSTED_PACKET_SEQUENCE_ID = 10,
	PACKET_TRACK_EVENT = 11,
	PACKET_INTERNED_DATA = 12,
	PACKET_SEQUENCE_FLAGS = 13,
	PACKET_SYSTEM_INFO = 45,
	PACKET_TRACE_PACKET_DEFAULTS = 59,
	PACKET_TRACK_DESCRIPTOR = 60,
	PACKET_PERF_SAMPLE = 66,
	PACKET_MACHINE_ID = 98,
};

enum {
	SEQ_INCREMENTAL_STATE_CLEARED = 1,
	SEQ_NEEDS_INCREMENTAL_STATE = 2,
};

enum {
	CLOCK_SNAPSHOT_CLOCKS = 1,
	CLOCK_SNAPSHOT_PRIMARY_TRACE_CLOCK = 2,
	CLOCK_CLOCK_ID = 1,
	CLOCK_TIMESTAMP = 2,
	CLOCK_IS_INCREMENTAL = 3,
};

enum {
	BUILTIN_CLOCK_REALTIME = 1,
	BUILTIN_CLOCK_MONOTONIC = 3,
	BUILTIN_CLOCK_BOOTTIME = 6,
};

/* What every part sees of the export. */
struct pf_thread {
	const struct snapview_thread *id;
	int32_t prio; /* the latest seen in the sched_switch sweep; PRIO_UNKNOWN */
};

struct pf_exporter {
	const Hostprof__Snapshot *snap;
	FILE *out;
	/* One machine of a multi-machine trace (merge.c): every packet says machine_id, and
	 * its sequence ids are seq_base + the ones of a trace of its own; 0 and 0 otherwise. */
	uint32_t machine_id, seq_base;
	uint32_t seq_end; /* the highest sequence id written, + 1 */
	const char *node_name; /* that machine's track name; NULL: no node track */
	struct pbw w;
	size_t ncpus; /* highest CPU number seen + 1 */
	struct snapview view;
	struct pf_thread *threads; /* by position in view.threads */
};

/* Writes out what the buffer holds. */
int pf_flush(struct pf_exporter *e);
/* Opens a packet: the Trace.packet field, if ts is set the time, then pf_packet_ids(). */
size_t pf_packet_begin(struct pf_exporter *e, uint64_t ts, uint32_t seq);
/* A packet's sequence id (seq_base added) and, in a multi-machine trace, its machine. */
void pf_packet_ids(struct pf_exporter *e, uint32_t seq);
/* Closes a packet and writes the buffer out once it is large enough. */
int pf_packet_end(struct pf_exporter *e, size_t packet);
/* The thread of tid (NULL for tid 0 and tids the view does not know). */
struct pf_thread *pf_thread(struct pf_exporter *e, uint32_t tid);
/* Snapshot.strings[idx]; validate() checked idx, a NULL entry reads as "". */
const char *pf_string(const Hostprof__Snapshot *s, uint32_t idx);

/*
 * The trace of one snapshot as machine machine_id (0: the only one, no machine_id field) of
 * a multi-machine trace, its sequence ids from seq_base + 2: snapshot_export_perfetto()
 * with those, for merge.c. *ret_seq_end: the highest sequence id it wrote + 1.
 */
int pf_export_machine(const Hostprof__Snapshot *snap, FILE *out, uint32_t machine_id, uint32_t seq_base,
		      const char *node_name, uint32_t *ret_seq_end);

/* perfetto_sched.c: part 4, the per-CPU bundles. */
int pf_write_sched(struct pf_exporter *e);
/* perfetto_tracks.c: part 5, the thread tracks. */
int pf_write_tracks(struct pf_exporter *e);

#endif
