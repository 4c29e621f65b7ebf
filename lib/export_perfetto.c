// SPDX-License-Identifier: GPL-2.0-only
/*
 * Perfetto exporter: one snapshot as a Perfetto trace file (ui.perfetto.dev, trace_processor).
 *
 * A trace file is a serialized perfetto.protos.Trace: nothing but a sequence of TracePackets,
 * each one written as field 1 (length-delimited) of Trace. So the file can be streamed:
 * packets are encoded with pbwriter into one buffer that is written to the FILE and reused
 * whenever it passes EXPORT_FLUSH_BYTES, always between two packets. Memory stays bounded by
 * the largest packet plus one batch of event indices per CPU, whatever the snapshot's size.
 *
 * Packets, in this order, all on one sequence (trusted_packet_sequence_id =
 * PERFETTO_SEQUENCE_ID; 1 is the tracing service's own sequence, so we avoid it):
 *   1. ClockSnapshot: BOOTTIME, REALTIME and MONOTONIC read at the same instant (the ones
 *      that are known), primary_trace_clock = BOOTTIME. Packet timestamp = the BOOTTIME value.
 *   2. SystemInfo: utsname {sysname, version, release, machine} and num_cpus. Perfetto reads
 *      the kernel release to decide how to decode sched_switch prev_state; ours is the
 *      kernel's own sched_switch report encoding and is passed through unchanged.
 *   3. ProcessTree, in chunks of EXPORT_TREE_CHUNK entries (the tree is incremental):
 *      every Process {pid, ppid, cmdline (comm when the cmdline is empty), uid}, then every
 *      Thread {tid, tgid, name}. Packet timestamp = Snapshot.start_ns.
 *   4. FtraceEventBundle per CPU, up to EXPORT_BUNDLE_EVENTS events each, every
 *      FtraceEvent {timestamp (absolute BOOTTIME ns), pid (= prev_tid, the task running when
 *      the event fired), sched_switch {prev_comm, prev_pid, prev_prio, prev_state,
 *      next_comm, next_pid, next_prio}} where *_pid are thread ids. Snapshot timestamps only
 *      go forward (ts_delta is unsigned), so events within a bundle, and the bundles of one
 *      CPU, come out in time order. Packet timestamp = the bundle's first event.
 * Every packet that has a timestamp also says timestamp_clock_id = BOOTTIME (the default,
 * made explicit).
 *
 * The snapshot is validated before a byte is written: all SchedSwitchTable columns must have
 * the same length, every string index must be inside Snapshot.strings, CPU numbers below
 * EXPORT_MAX_CPUS, and the timestamps must not overflow 64 bits. Otherwise: -EINVAL.
 *
 * Field numbers, from the public protos in the google/perfetto repository:
 *   protos/perfetto/trace/trace.proto
 *     Trace.packet = 1
 *   protos/perfetto/trace/trace_packet.proto
 *     TracePacket.ftrace_events = 1, process_tree = 2, clock_snapshot = 6, timestamp = 8,
 *     trusted_packet_sequence_id = 10, system_info = 45, timestamp_clock_id = 58
 *   protos/perfetto/trace/clock_snapshot.proto
 *     ClockSnapshot.clocks = 1, primary_trace_clock = 2
 *     ClockSnapshot.Clock.clock_id = 1, timestamp = 2
 *   protos/perfetto/common/builtin_clock.proto
 *     BUILTIN_CLOCK_REALTIME = 1, BUILTIN_CLOCK_MONOTONIC = 3, BUILTIN_CLOCK_BOOTTIME = 6
 *   protos/perfetto/common/system_info.proto (formerly trace/system_info.proto)
 *     SystemInfo.utsname = 1, num_cpus = 8
 *     Utsname.sysname = 1, version = 2, release = 3, machine = 4
 *   protos/perfetto/trace/ps/process_tree.proto
 *     ProcessTree.processes = 1, threads = 2
 *     ProcessTree.Process.pid = 1, ppid = 2, cmdline = 3, uid = 5
 *     ProcessTree.Thread.tid = 1, name = 2, tgid = 3
 *   protos/perfetto/trace/ftrace/ftrace_event_bundle.proto
 *     FtraceEventBundle.cpu = 1, event = 2
 *   protos/perfetto/trace/ftrace/ftrace_event.proto
 *     FtraceEvent.timestamp = 1, pid = 2, sched_switch = 4
 *   protos/perfetto/trace/ftrace/sched.proto
 *     SchedSwitchFtraceEvent.prev_comm = 1, prev_pid = 2, prev_prio = 3, prev_state = 4
 *     (int64), next_comm = 5, next_pid = 6, next_prio = 7
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include "export.h"
#include "macro.h"
#include "pbwriter.h"

#define PERFETTO_SEQUENCE_ID 0x4850 /* "HP"; any value but 0 and 1 */

#define EXPORT_FLUSH_BYTES (256u * 1024)
#define EXPORT_BUNDLE_EVENTS 1000
#define EXPORT_TREE_CHUNK 1000
#define EXPORT_MAX_CPUS 8192 /* the kernel's largest NR_CPUS */

enum {
	TRACE_PACKET = 1,
};

enum {
	PACKET_FTRACE_EVENTS = 1,
	PACKET_PROCESS_TREE = 2,
	PACKET_CLOCK_SNAPSHOT = 6,
	PACKET_TIMESTAMP = 8,
	PACKET_TRUSTED_PACKET_SEQUENCE_ID = 10,
	PACKET_SYSTEM_INFO = 45,
	PACKET_TIMESTAMP_CLOCK_ID = 58,
};

enum {
	CLOCK_SNAPSHOT_CLOCKS = 1,
	CLOCK_SNAPSHOT_PRIMARY_TRACE_CLOCK = 2,
	CLOCK_CLOCK_ID = 1,
	CLOCK_TIMESTAMP = 2,
};

enum {
	BUILTIN_CLOCK_REALTIME = 1,
	BUILTIN_CLOCK_MONOTONIC = 3,
	BUILTIN_CLOCK_BOOTTIME = 6,
};

enum {
	SYSTEM_INFO_UTSNAME = 1,
	SYSTEM_INFO_NUM_CPUS = 8,
	UTSNAME_SYSNAME = 1,
	UTSNAME_VERSION = 2,
	UTSNAME_RELEASE = 3,
	UTSNAME_MACHINE = 4,
};

enum {
	PROCESS_TREE_PROCESSES = 1,
	PROCESS_TREE_THREADS = 2,
	PROCESS_PID = 1,
	PROCESS_PPID = 2,
	PROCESS_CMDLINE = 3,
	PROCESS_UID = 5,
	THREAD_TID = 1,
	THREAD_NAME = 2,
	THREAD_TGID = 3,
};

enum {
	BUNDLE_CPU = 1,
	BUNDLE_EVENT = 2,
	FTRACE_EVENT_TIMESTAMP = 1,
	FTRACE_EVENT_PID = 2,
	FTRACE_EVENT_SCHED_SWITCH = 4,
};

enum {
	SCHED_SWITCH_PREV_COMM = 1,
	SCHED_SWITCH_PREV_PID = 2,
	SCHED_SWITCH_PREV_PRIO = 3,
	SCHED_SWITCH_PREV_STATE = 4,
	SCHED_SWITCH_NEXT_COMM = 5,
	SCHED_SWITCH_NEXT_PID = 6,
	SCHED_SWITCH_NEXT_PRIO = 7,
};

/* The events of one CPU waiting to go out as one bundle. */
struct cpu_batch {
	uint32_t n;
	uint32_t idx[EXPORT_BUNDLE_EVENTS];
	uint64_t ts[EXPORT_BUNDLE_EVENTS];
};

struct exporter {
	const Hostprof__Snapshot *snap;
	FILE *out;
	struct pbw w;
	size_t ncpus; /* highest CPU number seen + 1 */
	struct cpu_batch **batches;
};

static int check_string_column(const uint32_t *col, size_t n, size_t n_strings)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (col[i] >= n_strings)
			return -EINVAL;
	return 0;
}

static int validate(const Hostprof__Snapshot *snap, size_t *ret_ncpus)
{
	const Hostprof__SchedSwitchTable *t = snap->switches;
	size_t i, n, ncpus = 0;
	uint64_t ts;
	int r;

	if (snap->n_strings && !snap->strings)
		return -EINVAL;
	if (snap->n_processes && !snap->processes)
		return -EINVAL;
	for (i = 0; i < snap->n_processes; i++) {
		const Hostprof__Process *p = snap->processes[i];

		if (!p || (p->n_cmdline && !p->cmdline))
			return -EINVAL;
	}
	if (snap->n_threads && !snap->threads)
		return -EINVAL;
	for (i = 0; i < snap->n_threads; i++)
		if (!snap->threads[i])
			return -EINVAL;

	if (!t) {
		*ret_ncpus = 0;
		return 0;
	}

	n = t->n_ts_delta;
	if (n > UINT32_MAX) /* struct cpu_batch keeps 32-bit event indices */
		return -EINVAL;
	if (t->n_cpu != n || t->n_prev_tid != n || t->n_prev_pid != n || t->n_prev_comm != n ||
	    t->n_prev_prio != n || t->n_prev_state != n || t->n_next_tid != n ||
	    t->n_next_pid != n || t->n_next_comm != n || t->n_next_prio != n)
		return -EINVAL;
	if (n && (!t->ts_delta || !t->cpu || !t->prev_tid || !t->prev_comm || !t->prev_prio ||
		  !t->prev_state || !t->next_tid || !t->next_comm || !t->next_prio))
		return -EINVAL;

	r = check_string_column(t->prev_comm, n, snap->n_strings);
	if (r < 0)
		return r;
	r = check_string_column(t->next_comm, n, snap->n_strings);
	if (r < 0)
		return r;

	ts = snap->start_ns;
	for (i = 0; i < n; i++) {
		if (t->ts_delta[i] > UINT64_MAX - ts)
			return -EINVAL;
		ts += t->ts_delta[i];
		if (t->cpu[i] >= EXPORT_MAX_CPUS)
			return -EINVAL;
		if (t->cpu[i] >= ncpus)
			ncpus = t->cpu[i] + 1;
	}

	*ret_ncpus = ncpus;
	return 0;
}

static int flush(struct exporter *e)
{
	if (e->w.err)
		return e->w.err;
	if (e->w.len == 0)
		return 0;
	errno = 0;
	if (fwrite(e->w.buf, 1, e->w.len, e->out) != e->w.len)
		return negative_errno();
	pbw_reset(&e->w);
	return 0;
}

/* Closes a packet and writes the buffer out once it is large enough. */
static int packet_end(struct exporter *e, size_t packet)
{
	int r;

	r = pbw_end(&e->w, packet);
	if (r < 0)
		return r;
	if (e->w.len >= EXPORT_FLUSH_BYTES)
		return flush(e);
	return 0;
}

/* Opens a packet: the Trace.packet field, the sequence id and, if ts is set, the time. */
static size_t packet_begin(struct pbw *w, uint64_t ts)
{
	size_t packet = pbw_begin(w, TRACE_PACKET);

	if (ts) {
		pbw_varint(w, PACKET_TIMESTAMP, ts);
		pbw_varint(w, PACKET_TIMESTAMP_CLOCK_ID, BUILTIN_CLOCK_BOOTTIME);
	}
	pbw_varint(w, PACKET_TRUSTED_PACKET_SEQUENCE_ID, PERFETTO_SEQUENCE_ID);
	return packet;
}

static void write_clock(struct pbw *w, uint32_t clock_id, uint64_t ts)
{
	size_t clock;

	if (!ts)
		return;
	clock = pbw_begin(w, CLOCK_SNAPSHOT_CLOCKS);
	pbw_varint(w, CLOCK_CLOCK_ID, clock_id);
	pbw_varint(w, CLOCK_TIMESTAMP, ts);
	pbw_end(w, clock);
}

static int write_clock_snapshot(struct exporter *e)
{
	const Hostprof__ClockAnchor *c = e->snap->clock;
	struct pbw *w = &e->w;
	size_t packet, cs;

	packet = packet_begin(w, c ? c->boottime_ns : 0);
	cs = pbw_begin(w, PACKET_CLOCK_SNAPSHOT);
	if (c) {
		write_clock(w, BUILTIN_CLOCK_BOOTTIME, c->boottime_ns);
		write_clock(w, BUILTIN_CLOCK_REALTIME, c->realtime_ns);
		write_clock(w, BUILTIN_CLOCK_MONOTONIC, c->monotonic_ns);
	}
	pbw_varint(w, CLOCK_SNAPSHOT_PRIMARY_TRACE_CLOCK, BUILTIN_CLOCK_BOOTTIME);
	pbw_end(w, cs);
	return packet_end(e, packet);
}

static void write_opt_string(struct pbw *w, uint32_t field, const char *s)
{
	if (s && *s)
		pbw_string(w, field, s);
}

static int write_system_info(struct exporter *e)
{
	const Hostprof__HostInfo *h = e->snap->host;
	struct pbw *w = &e->w;
	size_t packet, si, uts;

	if (!h)
		return 0;

	packet = packet_begin(w, 0);
	si = pbw_begin(w, PACKET_SYSTEM_INFO);
	uts = pbw_begin(w, SYSTEM_INFO_UTSNAME);
	write_opt_string(w, UTSNAME_SYSNAME, h->sysname);
	write_opt_string(w, UTSNAME_VERSION, h->kernel_version);
	write_opt_string(w, UTSNAME_RELEASE, h->kernel_release);
	write_opt_string(w, UTSNAME_MACHINE, h->machine);
	pbw_end(w, uts);
	if (h->ncpus)
		pbw_varint(w, SYSTEM_INFO_NUM_CPUS, h->ncpus);
	pbw_end(w, si);
	return packet_end(e, packet);
}

static void write_process(struct pbw *w, const Hostprof__Process *p)
{
	size_t proc = pbw_begin(w, PROCESS_TREE_PROCESSES);
	size_t i;

	pbw_varint(w, PROCESS_PID, p->pid);
	pbw_varint(w, PROCESS_PPID, p->ppid);
	if (p->n_cmdline > 0)
		for (i = 0; i < p->n_cmdline; i++)
			pbw_string(w, PROCESS_CMDLINE, p->cmdline[i]);
	else
		write_opt_string(w, PROCESS_CMDLINE, p->comm);
	if (p->has_uid)
		pbw_varint(w, PROCESS_UID, p->uid);
	pbw_end(w, proc);
}

static void write_thread(struct pbw *w, const Hostprof__Thread *t)
{
	size_t thread = pbw_begin(w, PROCESS_TREE_THREADS);

	pbw_varint(w, THREAD_TID, t->tid);
	write_opt_string(w, THREAD_NAME, t->comm);
	pbw_varint(w, THREAD_TGID, t->pid);
	pbw_end(w, thread);
}

static int write_process_tree(struct exporter *e)
{
	const Hostprof__Snapshot *s = e->snap;
	size_t total = s->n_processes + s->n_threads;
	struct pbw *w = &e->w;
	size_t i, packet = 0, tree = 0;
	int r;

	for (i = 0; i < total; i++) {
		if (i % EXPORT_TREE_CHUNK == 0) {
			packet = packet_begin(w, s->start_ns);
			tree = pbw_begin(w, PACKET_PROCESS_TREE);
		}
		if (i < s->n_processes)
			write_process(w, s->processes[i]);
		else
			write_thread(w, s->threads[i - s->n_processes]);
		if (i % EXPORT_TREE_CHUNK == EXPORT_TREE_CHUNK - 1 || i == total - 1) {
			pbw_end(w, tree);
			r = packet_end(e, packet);
			if (r < 0)
				return r;
		}
	}
	return 0;
}

static const char *string_at(const Hostprof__Snapshot *s, uint32_t idx)
{
	/* validate() checked idx; a NULL entry in a hand-built table reads as "". */
	return s->strings[idx] ? s->strings[idx] : "";
}

static void write_sched_switch(struct pbw *w, const Hostprof__Snapshot *s, size_t i, uint64_t ts)
{
	const Hostprof__SchedSwitchTable *t = s->switches;
	size_t ev, sw;

	ev = pbw_begin(w, BUNDLE_EVENT);
	pbw_varint(w, FTRACE_EVENT_TIMESTAMP, ts);
	pbw_varint(w, FTRACE_EVENT_PID, t->prev_tid[i]);
	sw = pbw_begin(w, FTRACE_EVENT_SCHED_SWITCH);
	pbw_string(w, SCHED_SWITCH_PREV_COMM, string_at(s, t->prev_comm[i]));
	pbw_varint(w, SCHED_SWITCH_PREV_PID, t->prev_tid[i]);
	pbw_int(w, SCHED_SWITCH_PREV_PRIO, t->prev_prio[i]);
	pbw_int(w, SCHED_SWITCH_PREV_STATE, t->prev_state[i]);
	pbw_string(w, SCHED_SWITCH_NEXT_COMM, string_at(s, t->next_comm[i]));
	pbw_varint(w, SCHED_SWITCH_NEXT_PID, t->next_tid[i]);
	pbw_int(w, SCHED_SWITCH_NEXT_PRIO, t->next_prio[i]);
	pbw_end(w, sw);
	pbw_end(w, ev);
}

static int write_bundle(struct exporter *e, uint32_t cpu, struct cpu_batch *b)
{
	struct pbw *w = &e->w;
	size_t packet, bundle;
	uint32_t k;

	packet = packet_begin(w, b->ts[0]);
	bundle = pbw_begin(w, PACKET_FTRACE_EVENTS);
	pbw_varint(w, BUNDLE_CPU, cpu);
	for (k = 0; k < b->n; k++)
		write_sched_switch(w, e->snap, b->idx[k], b->ts[k]);
	pbw_end(w, bundle);
	b->n = 0;
	return packet_end(e, packet);
}

static int write_switches(struct exporter *e)
{
	const Hostprof__SchedSwitchTable *t = e->snap->switches;
	uint64_t ts = e->snap->start_ns;
	struct cpu_batch *b;
	size_t i, n;
	uint32_t cpu;
	int r;

	n = t ? t->n_ts_delta : 0;
	if (n == 0)
		return 0;

	e->batches = calloc(e->ncpus, sizeof(*e->batches));
	if (!e->batches)
		return -ENOMEM;

	for (i = 0; i < n; i++) {
		ts += t->ts_delta[i];
		cpu = t->cpu[i];
		b = e->batches[cpu];
		if (!b) {
			b = malloc(sizeof(*b));
			if (!b)
				return -ENOMEM;
			b->n = 0;
			e->batches[cpu] = b;
		}
		b->idx[b->n] = (uint32_t)i;
		b->ts[b->n] = ts;
		if (++b->n == EXPORT_BUNDLE_EVENTS) {
			r = write_bundle(e, cpu, b);
			if (r < 0)
				return r;
		}
	}

	for (cpu = 0; cpu < e->ncpus; cpu++) {
		b = e->batches[cpu];
		if (!b || b->n == 0)
			continue;
		r = write_bundle(e, cpu, b);
		if (r < 0)
			return r;
	}
	return 0;
}

static int write_trace(struct exporter *e)
{
	int r;

	r = write_clock_snapshot(e);
	if (r < 0)
		return r;
	r = write_system_info(e);
	if (r < 0)
		return r;
	r = write_process_tree(e);
	if (r < 0)
		return r;
	r = write_switches(e);
	if (r < 0)
		return r;
	r = flush(e);
	if (r < 0)
		return r;
	errno = 0;
	if (fflush(e->out) == EOF)
		return negative_errno();
	return 0;
}

static void exporter_free(struct exporter *e)
{
	size_t cpu;

	if (e->batches)
		for (cpu = 0; cpu < e->ncpus; cpu++)
			free(e->batches[cpu]);
	free(e->batches);
	pbw_free(&e->w);
}

int snapshot_export_perfetto(const Hostprof__Snapshot *snap, FILE *out)
{
	_cleanup_(exporter_free) struct exporter e = { .snap = snap, .out = out, .w = PBW_INIT };
	int r;

	if (!snap || !out)
		return -EINVAL;

	r = validate(snap, &e.ncpus);
	if (r < 0)
		return r;

	return write_trace(&e);
}
