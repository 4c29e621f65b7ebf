// SPDX-License-Identifier: GPL-2.0-only
/*
 * Perfetto exporter: one snapshot as a Perfetto trace file (ui.perfetto.dev, trace_processor).
 *
 * A trace file is a serialized perfetto.protos.Trace: nothing but a sequence of TracePackets,
 * each one written as field 1 (length-delimited) of Trace. So the file can be streamed:
 * packets are encoded with pbwriter into one buffer that is written to the FILE and reused
 * whenever it passes EXPORT_FLUSH_BYTES, always between two packets. Memory stays bounded by
 * the largest packet, one batch of events per CPU, an index of the threads and stacks, and
 * the times and owners of the rows that go on thread tracks (20 bytes a row).
 *
 * The trace is made small the ways Perfetto's own producers make theirs: scheduler events
 * in CompactSched columns, names and stacks interned per packet sequence, timestamps as
 * deltas. Packets, in this order:
 *   1. ClockSnapshot: BOOTTIME, REALTIME and MONOTONIC read at the same instant (the ones
 *      that are known), primary_trace_clock = BOOTTIME. Packet timestamp = the BOOTTIME value.
 *   2. SystemInfo: utsname {sysname, version, release, machine} and num_cpus. Perfetto reads
 *      the kernel release to decide how to decode sched_switch prev_state; ours is the
 *      kernel's own sched_switch report encoding and is passed through unchanged.
 *   3. ProcessTree, in chunks of EXPORT_TREE_CHUNK entries (the tree is incremental):
 *      every Process {pid, ppid, cmdline (comm when the cmdline is empty), uid}, then every
 *      Thread {tid, tgid, name}. Packet timestamp = Snapshot.start_ns.
 *   Those three and the bundles are on one sequence (trusted_packet_sequence_id =
 *   PERFETTO_SEQUENCE_ID; 1 is the tracing service's own sequence, so we avoid it), and say
 *   timestamp_clock_id = BOOTTIME where they have a timestamp (the default, made explicit).
 *   4. FtraceEventBundle per CPU, up to EXPORT_BUNDLE_EVENTS events each (perfetto_sched.c):
 *      the sched_switch rows, the WakeupTable rows and the entries and exits of the IrqTable
 *      rows merged by timestamp (of one nanosecond: IRQ exits, wakeups, IRQ entries, then
 *      switches; a wakeup before a switch is how the kernel emits them). Snapshot timestamps
 *      only go forward (ts_delta is unsigned), so the events of a bundle, and the bundles of
 *      one CPU, come out in time order. Packet timestamp = the bundle's first event.
 *      - A switch or wakeup goes into the bundle's compact_sched where a reader, which takes
 *        the previous task of a compact switch and the waker of a compact wakeup from what
 *        the CPU's previous switch put on it, reads back what the row says (perfetto_sched.c
 *        says when): switch_timestamp (the first absolute, then deltas), switch_prev_state,
 *        switch_next_pid (a thread id), switch_next_prio, switch_next_comm_index; waking_
 *        timestamp, waking_pid (the task woken), waking_target_cpu, waking_prio,
 *        waking_comm_index; intern_table holds the bundle's comms. waking_common_flags is
 *        left out: the snapshot does not keep the tracepoint's flags.
 *      - Every other row is a full FtraceEvent with its timestamp (absolute BOOTTIME ns) and
 *        pid = the task running when the event fired:
 *        sched_switch {prev_comm, prev_pid, prev_prio, prev_state, next_comm, next_pid,
 *        next_prio}, *_pid are thread ids, FtraceEvent.pid = prev_tid;
 *        sched_waking {comm, pid, prio, success = 1, target_cpu}, FtraceEvent.pid = waker_tid.
 *      A wakeup is in the bundle of WakeupTable.cpu (where the waker ran). The table keeps no
 *      comm nor prio of the woken task: comm comes from the thread index (snapview.h), prio
 *      from its latest sched_switch row before the wakeup (else its first one; a wakeup of
 *      a task that never switched is a full event without prio). Rows of new tasks (flags &
 *      1, the kernel's sched_wakeup_new) are written as sched_waking too: trace_processor
 *      derives the waker and the runnable state from sched_waking only.
 *      - a hard IRQ (IrqTable.kind 1) as irq_handler_entry {irq, name = the handler} at its
 *        entry and irq_handler_exit {irq, ret = 1} at entry + dur_ns: the snapshot keeps no
 *        return value, and trace_processor calls every ret but 1 (IRQ_HANDLED) "unhandled";
 *      - a softirq (kind 2) as softirq_entry {vec} and softirq_exit {vec};
 *        FtraceEvent.pid = the thread interrupted (flags 1), none when a thread only waited
 *        on that CPU (flags 2: what ran there is not known). Rows of another kind, and
 *        softirqs past the last vector trace_processor names (RCU, 9: it stops on them in
 *        debug builds), are left out. trace_processor draws these as slices on the CPU's
 *        "Irq Cpu N" and "SoftIrq Cpu N" tracks ("IRQ (virtio3-rx)", "NET_RX"). The exits
 *        wait in a min-heap by time, which holds the interrupts open at one instant.
 *   5. Thread tracks (perfetto_tracks.c): the TrackEvents of each thread on a sequence of
 *      its own (ids from 2, around the two above), which begins with a packet that says
 *      SEQ_INCREMENTAL_STATE_CLEARED and holds TracePacketDefaults {track_event_defaults
 *      {track_uuid = THREAD_TRACK_UUID(tid)}, timestamp_clock_id = PERFETTO_TRACK_CLOCK_ID}
 *      and the TrackDescriptor {uuid, thread {pid, tid, thread_name}}, then a ClockSnapshot
 *      that ties the sequence's incremental clock PERFETTO_TRACK_CLOCK_ID to BOOTTIME at the
 *      thread's first event. Each event's packet timestamp is then the time since the
 *      sequence's previous packet, and its name, category, annotation names and string
 *      values are iids (name_iid, category_iids, name_iid, string_value_iid) into the
 *      sequence's InternedData {event_names, event_categories, debug_annotation_names,
 *      debug_annotation_string_values}, each entry sent in the first packet that uses it.
 *      Rows without a thread go on the process's track (TrackDescriptor {uuid =
 *      PROCESS_TRACK_UUID(pid), process {pid, process_name}}) of Snapshot.pid, on a sequence
 *      of their own. trace_processor merges a thread track with the thread's sched data, so
 *      the UI shows the slices in the thread's own row, under its state bar:
 *      - each slow syscall: a slice named Snapshot.syscall_names[nr] ("read"; "syscall_NR"
 *        when the name is unknown), category "syscall", annotations nr, arg0, arg1, arg2,
 *        ret, duration_ns, cpu;
 *      - each off-CPU interval: a slice "off-cpu S" (S = the state letter), category
 *        "sched", annotations state, duration_ns, waker_tid, waker_pid, waker_comm, cpu and
 *        kernel_stack / user_stack: the function names, innermost first, " <- " between
 *        them (module+0xoffset when not resolved, "[unknown]" without a mapping), interned
 *        once per stack;
 *      - each migration: an instant "migrate 0->1", annotations from_cpu, to_cpu;
 *      - each marker: an instant named Marker.name, category "marker", annotation detail;
 *      - each reclaim or compaction (ReclaimTable): a slice "direct reclaim", "memcg
 *        reclaim" or "compaction", category "memory", annotations order, gfp (hex), result,
 *        duration_ns, cpu;
 *      - each lock wait (LockTable): a slice "lock wait: mmap_lock (rwsem read)" (the lock:
 *        "mmap_lock" when flags has 0x10000, else LockTable.name, left out when ""; in
 *        parentheses hps_lock_kind_name()), category "lock", annotations lock (the address,
 *        hex), flags (hex), ret, duration_ns, cpu and kernel_stack as for off-CPU slices;
 *      - page faults (FaultTable), on a child track of the thread's, not on the thread's
 *        own: a TrackDescriptor {uuid = FAULTS_TRACK_UUID(tid), parent_uuid = the thread's
 *        track, name "page faults"}, and a slice per period, "page faults: 2000 (10 major)"
 *        (the tracepoint's count, or minor + major where it is 0; the name inline, not
 *        interned), category "memory", annotations faults, write, exec, prot, minor, major,
 *        duration_ns. Slices rather than a counter: the UI prints the count on the period
 *        itself, and periods of unequal length read right. Their own track because periods
 *        are long and would break the nesting of the thread's syscalls and off-CPU intervals.
 *      - stall episodes of the dispatch threads (report_episodes(), lib/report_causes.c:
 *        gaps of 1 ms or more in its running), on a child track "stall episodes" as for
 *        page faults (EPISODES_TRACK_UUID): a slice "stall 31.0 ms: 30.0 GIL, 1.0 runqueue"
 *        (inline, as page faults'), category "stall", annotations made_of (each part and
 *        who caused it), duration_ns. They come after every other thread track, each
 *        dispatch thread's on a sequence of its own whose first packet does not describe
 *        the thread's track again (one sequence before did, unless the thread had no other
 *        row): they come from the diagnosis model, which the client builds on another
 *        thread while the rest is written.
 *      - each GIL wait (GilTable): a slice "GIL wait" on the waiter's track, category
 *        "python", annotations holder_tid, holder_function ("hold_burst (gil.py:56)", and
 *        ", read after the wait" when the daemon read it as the record drained), futex_waits,
 *        blocked_ns, duration_ns, with a flow (flow_ids, 0x48504700_00000000 | row) to an
 *        instant "held the GIL" (terminating_flow_ids; annotations waiter_tid,
 *        holder_function) on the holder's track where the wait ended.
 *      - each Python garbage collection (PythonGcTable, --python-gc): a slice "Python GC
 *        (gen 2)" on its thread's track, category "python", annotations generation,
 *        collected (-1: it failed), duration_ns.
 *      A slice is a TYPE_SLICE_BEGIN packet and a TYPE_SLICE_END packet, written in time
 *      order on the thread's sequence. An off-CPU interval inside a syscall nests under it
 *      (read > off-cpu S), as does a lock wait or a reclaim inside a syscall; an END closes
 *      the innermost open slice of its track, so two intervals that overlap without nesting
 *      are drawn nested (duration_ns keeps each one's own length).
 *   6. On-CPU samples as PerfSample packets, on their own sequence
 *      (PERFETTO_PROFILE_SEQUENCE_ID), each {cpu, pid, tid, callstack_iid, cpu_mode (KERNEL
 *      when the sample has a kernel stack, else USER)}. The callstacks are interned: the
 *      first packet of that sequence says SEQ_INCREMENTAL_STATE_CLEARED, every packet of it
 *      SEQ_NEEDS_INCREMENTAL_STATE, and a packet carries in its InternedData the entries its
 *      sample uses that no earlier packet gave (so a packet stays small: one stack at most):
 *      - callstacks {iid, frame_ids}: one per distinct (kernel stack, user stack) pair of
 *        the SampleTable, root first: user frames outermost first, then kernel frames
 *        outermost first (our Stack lists the innermost first);
 *      - frames {iid = frame index + 1, function_name_id, mapping_id, rel_pc, kind}:
 *        rel_pc = Frame.module_offset, else the address within the mapping; kind KERNEL,
 *        JIT or NATIVE. An unresolved frame has no function_name_id, so Perfetto shows its
 *        mapping and can symbolize it later from the build id;
 *      - function_names {iid = frame index + 1, str};
 *      - mappings {iid = mapping index + 1, build_id, start, end, exact_offset,
 *        path_string_ids}: frames without a mapping get a "[unknown]" mapping (iid =
 *        n_mappings + 1): older trace_processors drop every callstack with a frame whose
 *        mapping_id is 0;
 *      - build_ids {iid, str = the raw bytes of Mapping.build_id (hex in the snapshot)},
 *        mapping_paths {iid, str = Mapping.file, one component: trace_processor strips the
 *        "/" it prepends when the path already starts with one}.
 *      Why PerfSample and not StreamingProfilePacket: trace_processor stores PerfSample in
 *      its perf_sample table and the UI (the Linux perf plugin) draws per-process and
 *      per-thread callstack tracks from it whose selection opens a flame graph; this is
 *      the message traced_perf writes for perf_event samples, the thing our samples are.
 *      A PerfSample carries its pid, tid and cpu and a BOOTTIME packet timestamp, so one
 *      sequence holds every thread's samples. StreamingProfilePacket (Chrome's sampler)
 *      takes pid and tid from a per-sequence ThreadDescriptor and its time as deltas in
 *      microseconds on the track-event clock: one sequence per thread, and a loss of
 *      precision.
 *
 * The snapshot is validated before a byte is written: hps_validate() (columns of a table
 * line up, every string, stack, frame and mapping index in range), no NULL entries, CPU
 * numbers (of switches, wakeups and IRQs) below EXPORT_MAX_CPUS, and no timestamp (nor
 * timestamp + duration) that overflows 64 bits. Otherwise: -EINVAL.
 *
 * Field numbers, from the public protos in the google/perfetto repository (checked against
 * its protos/perfetto tree):
 *   protos/perfetto/trace/trace.proto
 *     Trace.packet = 1
 *   protos/perfetto/trace/trace_packet.proto
 *     TracePacket.ftrace_events = 1, process_tree = 2, clock_snapshot = 6, timestamp = 8,
 *     trusted_packet_sequence_id = 10, track_event = 11, interned_data = 12,
 *     sequence_flags = 13, system_info = 45, timestamp_clock_id = 58,
 *     trace_packet_defaults = 59, track_descriptor = 60, perf_sample = 66, machine_id = 98
 *     TracePacket.SequenceFlags SEQ_INCREMENTAL_STATE_CLEARED = 1,
 *     SEQ_NEEDS_INCREMENTAL_STATE = 2
 *   protos/perfetto/trace/trace_packet_defaults.proto
 *     TracePacketDefaults.track_event_defaults = 11, timestamp_clock_id = 58
 *   protos/perfetto/trace/clock_snapshot.proto
 *     ClockSnapshot.clocks = 1, primary_trace_clock = 2
 *     ClockSnapshot.Clock.clock_id = 1, timestamp = 2, is_incremental = 3 (clock ids 64..127
 *     are the sequence's own)
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
 *     FtraceEventBundle.cpu = 1, event = 2, compact_sched = 4
 *     FtraceEventBundle.CompactSched (every column packed): switch_timestamp = 1 (uint64),
 *     switch_prev_state = 2 (int64), switch_next_pid = 3 (int32), switch_next_prio = 4
 *     (int32), intern_table = 5 (string), switch_next_comm_index = 6 (uint32),
 *     waking_timestamp = 7 (uint64), waking_pid = 8 (int32), waking_target_cpu = 9 (int32),
 *     waking_prio = 10 (int32), waking_comm_index = 11 (uint32), waking_common_flags = 12
 *   protos/perfetto/trace/ftrace/ftrace_event.proto
 *     FtraceEvent.timestamp = 1, pid = 2, sched_switch = 4, sched_waking = 20,
 *     softirq_entry = 24, softirq_exit = 25, irq_handler_entry = 36, irq_handler_exit = 37
 *   protos/perfetto/trace/ftrace/sched.proto
 *     SchedSwitchFtraceEvent.prev_comm = 1, prev_pid = 2, prev_prio = 3, prev_state = 4
 *     (int64), next_comm = 5, next_pid = 6, next_prio = 7
 *     SchedWakingFtraceEvent.comm = 1, pid = 2, prio = 3, success = 4, target_cpu = 5
 *   protos/perfetto/trace/ftrace/irq.proto
 *     IrqHandlerEntryFtraceEvent.irq = 1 (int32), name = 2
 *     IrqHandlerExitFtraceEvent.irq = 1 (int32), ret = 2 (int32)
 *     SoftirqEntryFtraceEvent.vec = 1, SoftirqExitFtraceEvent.vec = 1
 *   protos/perfetto/trace/track_event/track_descriptor.proto
 *     TrackDescriptor.uuid = 1, name = 2, process = 3, thread = 4, parent_uuid = 5
 *   protos/perfetto/trace/track_event/process_descriptor.proto
 *     ProcessDescriptor.pid = 1, process_name = 6
 *   protos/perfetto/trace/track_event/thread_descriptor.proto
 *     ThreadDescriptor.pid = 1, tid = 2, thread_name = 5
 *   protos/perfetto/trace/track_event/track_event.proto
 *     TrackEvent.category_iids = 3, debug_annotations = 4, type = 9, name_iid = 10,
 *     track_uuid = 11, name = 23
 *     TrackEvent.Type TYPE_SLICE_BEGIN = 1, TYPE_SLICE_END = 2, TYPE_INSTANT = 3
 *     TrackEventDefaults.track_uuid = 11
 *   protos/perfetto/trace/track_event/debug_annotation.proto
 *     DebugAnnotation.name_iid = 1, uint_value = 3, int_value = 4, string_value_iid = 17
 *     DebugAnnotationName.iid = 1, name = 2
 *   protos/perfetto/trace/track_event/track_event.proto
 *     EventCategory.iid = 1, name = 2; EventName.iid = 1, name = 2
 *   protos/perfetto/trace/interned_data/interned_data.proto
 *     InternedData.event_categories = 1, event_names = 2, debug_annotation_names = 3,
 *     function_names = 5, frames = 6, callstacks = 7, build_ids = 16, mapping_paths = 17,
 *     mappings = 19, debug_annotation_string_values = 29
 *   protos/perfetto/trace/profiling/profile_common.proto
 *     InternedString.iid = 1, str = 2 (bytes)
 *     Mapping.iid = 1, build_id = 2, start = 4, end = 5, path_string_ids = 7 (repeated,
 *     not packed), exact_offset = 8
 *     Frame.iid = 1, function_name_id = 2, mapping_id = 3, rel_pc = 4, kind = 7
 *     Frame.Kind KIND_NATIVE = 1, KIND_KERNEL = 2, KIND_JIT = 4
 *     Callstack.iid = 1, frame_ids = 2 (repeated, not packed; "bottom frame first")
 *   protos/perfetto/trace/profiling/profile_packet.proto
 *     PerfSample.cpu = 1, pid = 2, tid = 3, callstack_iid = 4, cpu_mode = 5
 *     Profiling.CpuMode MODE_KERNEL = 1, MODE_USER = 2
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "export.h"
#include "hps.h"
#include "macro.h"
#include "snapview.h"
#include "perfetto_internal.h"

#define EXPORT_TREE_CHUNK 1000
#define EXPORT_BUILD_ID_MAX 64 /* raw bytes */

enum {
	PACKET_TIMESTAMP_CLOCK_ID = 58,
};

enum {
	NODE_TRACK_DESCRIPTOR_UUID = 1,
	NODE_TRACK_DESCRIPTOR_NAME = 2,
	NODE_TRACK_EVENT_TYPE = 9,
	NODE_TRACK_EVENT_TRACK_UUID = 11,
	NODE_TRACK_EVENT_NAME = 23,
	NODE_TYPE_SLICE_BEGIN = 1,
	NODE_TYPE_SLICE_END = 2,
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
	INTERNED_FUNCTION_NAMES = 5,
	INTERNED_FRAMES = 6,
	INTERNED_CALLSTACKS = 7,
	INTERNED_BUILD_IDS = 16,
	INTERNED_MAPPING_PATHS = 17,
	INTERNED_MAPPINGS = 19,
	INTERNED_STRING_IID = 1,
	INTERNED_STRING_STR = 2,
	MAPPING_IID = 1,
	MAPPING_BUILD_ID = 2,
	MAPPING_START = 4,
	MAPPING_END = 5,
	MAPPING_PATH_STRING_IDS = 7,
	MAPPING_EXACT_OFFSET = 8,
	FRAME_IID = 1,
	FRAME_FUNCTION_NAME_ID = 2,
	FRAME_MAPPING_ID = 3,
	FRAME_REL_PC = 4,
	FRAME_KIND = 7,
	FRAME_KIND_NATIVE = 1,
	FRAME_KIND_KERNEL = 2,
	FRAME_KIND_JIT = 4,
	CALLSTACK_IID = 1,
	CALLSTACK_FRAME_IDS = 2,
};

enum {
	PERF_SAMPLE_CPU = 1,
	PERF_SAMPLE_PID = 2,
	PERF_SAMPLE_TID = 3,
	PERF_SAMPLE_CALLSTACK_IID = 4,
	PERF_SAMPLE_CPU_MODE = 5,
	CPU_MODE_KERNEL = 1,
	CPU_MODE_USER = 2,
};

struct exporter {
	struct pf_exporter pf;
	/* samples: the distinct (kstack << 32 | ustack) pairs, sorted; iid = position + 1 */
	uint64_t *stack_keys;
	size_t nkeys;
	bool *key_sent, *frame_sent, *mapping_sent; /* mapping_sent[n_mappings]: "[unknown]" */
	bool profile_started;
};

/* ---- Validation ------------------------------------------------------------------------ */

/* start + the running sum of delta (+ dur) stays within 64 bits. */
static int check_cpus(const uint32_t *cpu, size_t n, size_t *ncpus)
{
	size_t i;

	if (n && !cpu)
		return -EINVAL;
	for (i = 0; i < n; i++) {
		if (cpu[i] >= EXPORT_MAX_CPUS)
			return -EINVAL;
		if (cpu[i] >= *ncpus)
			*ncpus = cpu[i] + 1;
	}
	return 0;
}

static int validate(const Hostprof__Snapshot *snap, size_t *ret_ncpus)
{
	const Hostprof__SchedSwitchTable *sw = snap->switches;
	const Hostprof__WakeupTable *wk = snap->wakeups;
	const Hostprof__IrqTable *irq = snap->irqs;
	size_t ncpus = 0;
	int r;

	r = hps_validate(snap); /* pointers, columns, indexes, times */
	if (r < 0)
		return r;

	if (sw) {
		if (sw->n_ts_delta > UINT32_MAX) /* struct cpu_batch keeps 32-bit event indices */
			return -EINVAL;
		r = check_cpus(sw->cpu, sw->n_ts_delta, &ncpus);
		if (r < 0)
			return r;
	}
	if (wk) {
		if (wk->n_ts_delta > UINT32_MAX)
			return -EINVAL;
		r = check_cpus(wk->cpu, wk->n_ts_delta, &ncpus);
		if (r < 0)
			return r;
	}
	if (irq) {
		if (irq->n_ts_delta > UINT32_MAX)
			return -EINVAL;
		r = check_cpus(irq->cpu, irq->n_ts_delta, &ncpus);
		if (r < 0)
			return r;
	}

	*ret_ncpus = ncpus;
	return 0;
}

/* ---- Writing packets ------------------------------------------------------------------- */

int pf_flush(struct pf_exporter *e)
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

int pf_packet_end(struct pf_exporter *e, size_t packet)
{
	int r;

	r = pbw_end(&e->w, packet);
	if (r < 0)
		return r;
	if (e->w.len >= EXPORT_FLUSH_BYTES)
		return pf_flush(e);
	return 0;
}

void pf_packet_ids(struct pf_exporter *e, uint32_t seq)
{
	seq += e->seq_base;
	pbw_varint(&e->w, PACKET_TRUSTED_PACKET_SEQUENCE_ID, seq);
	if (e->machine_id)
		pbw_varint(&e->w, PACKET_MACHINE_ID, e->machine_id);
	if (seq >= e->seq_end)
		e->seq_end = seq + 1;
}

size_t pf_packet_begin(struct pf_exporter *e, uint64_t ts, uint32_t seq)
{
	size_t packet = pbw_begin(&e->w, TRACE_PACKET);

	if (ts) {
		pbw_varint(&e->w, PACKET_TIMESTAMP, ts);
		pbw_varint(&e->w, PACKET_TIMESTAMP_CLOCK_ID, BUILTIN_CLOCK_BOOTTIME);
	}
	pf_packet_ids(e, seq);
	return packet;
}

static void write_opt_string(struct pbw *w, uint32_t field, const char *s)
{
	if (s && *s)
		pbw_string(w, field, s);
}

const char *pf_string(const Hostprof__Snapshot *s, uint32_t idx)
{
	/* validate() checked idx; a NULL entry in a hand-built table reads as "". */
	return s->strings[idx] ? s->strings[idx] : "";
}

struct pf_thread *pf_thread(struct pf_exporter *e, uint32_t tid)
{
	ssize_t k = snapview_index(&e->view, tid);

	return k < 0 ? NULL : &e->threads[k];
}

/* ---- 1-3. Clocks, system, process tree --------------------------------------------------- */

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

static int write_clock_snapshot(struct pf_exporter *e)
{
	const Hostprof__ClockAnchor *c = e->snap->clock;
	struct pbw *w = &e->w;
	size_t packet, cs;

	packet = pf_packet_begin(e, c ? c->boottime_ns : 0, PERFETTO_SEQUENCE_ID);
	cs = pbw_begin(w, PACKET_CLOCK_SNAPSHOT);
	if (c) {
		write_clock(w, BUILTIN_CLOCK_BOOTTIME, c->boottime_ns);
		write_clock(w, BUILTIN_CLOCK_REALTIME, c->realtime_ns);
		write_clock(w, BUILTIN_CLOCK_MONOTONIC, c->monotonic_ns);
	}
	pbw_varint(w, CLOCK_SNAPSHOT_PRIMARY_TRACE_CLOCK, BUILTIN_CLOCK_BOOTTIME);
	pbw_end(w, cs);
	return pf_packet_end(e, packet);
}

static int write_system_info(struct pf_exporter *e)
{
	const Hostprof__HostInfo *h = e->snap->host;
	struct pbw *w = &e->w;
	size_t packet, si, uts;

	if (!h)
		return 0;

	packet = pf_packet_begin(e, 0, PERFETTO_SEQUENCE_ID);
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
	return pf_packet_end(e, packet);
}

/*
 * A machine of a merged trace: a track named for the node ("node-17 (rank 3 of job 777)",
 * pf_exporter.node_name) with one slice "window" over the snapshot's window, so that the
 * UI shows each node's name and what its snapshot covers.
 */
static int write_node_track(struct pf_exporter *e)
{
	const Hostprof__Snapshot *s = e->snap;
	struct pbw *w = &e->w;
	size_t packet, d;
	int r;

	if (!e->node_name)
		return 0;
	packet = pf_packet_begin(e, 0, PERFETTO_SEQUENCE_ID);
	d = pbw_begin(w, PACKET_TRACK_DESCRIPTOR);
	pbw_varint(w, NODE_TRACK_DESCRIPTOR_UUID, NODE_TRACK_UUID(e));
	pbw_string(w, NODE_TRACK_DESCRIPTOR_NAME, e->node_name);
	pbw_end(w, d);
	r = pf_packet_end(e, packet);
	for (int k = 0; k < 2 && r >= 0; k++) {
		packet = pf_packet_begin(e, k ? s->end_ns : s->start_ns, PERFETTO_SEQUENCE_ID);
		d = pbw_begin(w, PACKET_TRACK_EVENT);
		pbw_varint(w, NODE_TRACK_EVENT_TYPE, k ? NODE_TYPE_SLICE_END : NODE_TYPE_SLICE_BEGIN);
		pbw_varint(w, NODE_TRACK_EVENT_TRACK_UUID, NODE_TRACK_UUID(e));
		if (!k)
			pbw_string(w, NODE_TRACK_EVENT_NAME, "window");
		pbw_end(w, d);
		r = pf_packet_end(e, packet);
	}
	return r;
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

static int write_process_tree(struct pf_exporter *e)
{
	const Hostprof__Snapshot *s = e->snap;
	size_t total = s->n_processes + s->n_threads;
	struct pbw *w = &e->w;
	size_t i, packet = 0, tree = 0;
	int r;

	for (i = 0; i < total; i++) {
		if (i % EXPORT_TREE_CHUNK == 0) {
			packet = pf_packet_begin(e, s->start_ns, PERFETTO_SEQUENCE_ID);
			tree = pbw_begin(w, PACKET_PROCESS_TREE);
		}
		if (i < s->n_processes)
			write_process(w, s->processes[i]);
		else
			write_thread(w, s->threads[i - s->n_processes]);
		if (i % EXPORT_TREE_CHUNK == EXPORT_TREE_CHUNK - 1 || i == total - 1) {
			pbw_end(w, tree);
			r = pf_packet_end(e, packet);
			if (r < 0)
				return r;
		}
	}
	return 0;
}
/* ---- 6. Samples ------------------------------------------------------------------------ */

static int hex_value(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* The raw bytes of a hex build id; 0 when there is none or it is not hex. */
static size_t build_id_bytes(const char *hex, uint8_t *out, size_t max)
{
	size_t i, len = hex ? strlen(hex) : 0;

	if (len == 0 || len % 2 || len / 2 > max)
		return 0;
	for (i = 0; i < len / 2; i++) {
		int hi = hex_value(hex[2 * i]), lo = hex_value(hex[2 * i + 1]);

		if (hi < 0 || lo < 0)
			return 0;
		out[i] = (uint8_t)(hi << 4 | lo);
	}
	return len / 2;
}

static void intern_string(struct pbw *w, uint32_t field, uint64_t iid, const void *data, size_t len)
{
	size_t entry = pbw_begin(w, field);

	pbw_varint(w, INTERNED_STRING_IID, iid);
	pbw_bytes(w, INTERNED_STRING_STR, data, len);
	pbw_end(w, entry);
}

/* The mapping of a frame (mapping index + 1; 0: none, the "[unknown]" one) into InternedData. */
static uint64_t intern_mapping(struct exporter *e, uint32_t mapping)
{
	const Hostprof__Snapshot *s = e->pf.snap;
	size_t idx = mapping ? mapping - 1 : s->n_mappings;
	uint64_t iid = idx + 1;
	uint8_t id[EXPORT_BUILD_ID_MAX];
	struct pbw *w = &e->pf.w;
	const char *path = "[unknown]";
	size_t id_len = 0, m;

	if (e->mapping_sent[idx])
		return iid;
	if (mapping) {
		const Hostprof__Mapping *mp = s->mappings[idx];

		if (mp->file && *mp->file)
			path = mp->file;
		id_len = build_id_bytes(mp->build_id, id, sizeof(id));
	}
	if (id_len)
		intern_string(w, INTERNED_BUILD_IDS, iid, id, id_len);
	intern_string(w, INTERNED_MAPPING_PATHS, iid, path, strlen(path));
	m = pbw_begin(w, INTERNED_MAPPINGS);
	pbw_varint(w, MAPPING_IID, iid);
	if (id_len)
		pbw_varint(w, MAPPING_BUILD_ID, iid);
	if (mapping) {
		const Hostprof__Mapping *mp = s->mappings[idx];

		pbw_varint(w, MAPPING_START, mp->start);
		pbw_varint(w, MAPPING_END, mp->limit);
		if (mp->offset)
			pbw_varint(w, MAPPING_EXACT_OFFSET, mp->offset);
	}
	pbw_varint(w, MAPPING_PATH_STRING_IDS, iid);
	pbw_end(w, m);
	e->mapping_sent[idx] = true;
	return iid;
}

static void intern_frame(struct exporter *e, uint32_t idx)
{
	const Hostprof__Snapshot *s = e->pf.snap;
	const Hostprof__Frame *f = s->frames[idx];
	struct pbw *w = &e->pf.w;
	uint64_t mapping_iid, rel_pc = f->address;
	const char *name = f->function;
	char pyname[1024];
	size_t fr;

	if (e->frame_sent[idx])
		return;
	mapping_iid = intern_mapping(e, f->mapping);
	if (f->module_offset) {
		rel_pc = f->module_offset;
	} else if (f->mapping) {
		const Hostprof__Mapping *mp = s->mappings[f->mapping - 1];

		if (f->address >= mp->start && f->address < mp->limit)
			rel_pc = f->address - mp->start + mp->offset;
	}
	if (f->python && python_frame_text(f, pyname, sizeof(pyname)) > 0)
		name = pyname; /* "train_step (train.py:42)" */
	if (name && *name)
		intern_string(w, INTERNED_FUNCTION_NAMES, idx + 1, name, strlen(name));
	fr = pbw_begin(w, INTERNED_FRAMES);
	pbw_varint(w, FRAME_IID, idx + 1);
	if (name && *name)
		pbw_varint(w, FRAME_FUNCTION_NAME_ID, idx + 1);
	pbw_varint(w, FRAME_MAPPING_ID, mapping_iid);
	pbw_varint(w, FRAME_REL_PC, rel_pc);
	pbw_varint(w, FRAME_KIND,
		   f->kernel ? FRAME_KIND_KERNEL :
		   f->jit    ? FRAME_KIND_JIT :
			       FRAME_KIND_NATIVE);
	pbw_end(w, fr);
	e->frame_sent[idx] = true;
}

/* Frame ids of a stack (index + 1; 0: none), outermost first. */
static void write_frame_ids(struct pbw *w, const Hostprof__Snapshot *s, uint32_t stack_ref)
{
	const Hostprof__Stack *st;
	size_t i;

	if (!stack_ref)
		return;
	st = s->stacks[stack_ref - 1];
	for (i = st->n_frames; i > 0; i--)
		pbw_varint(w, CALLSTACK_FRAME_IDS, (uint64_t)st->frames[i - 1] + 1);
}

static void intern_stack_frames(struct exporter *e, uint32_t stack_ref)
{
	const Hostprof__Stack *st;
	size_t i;

	if (!stack_ref)
		return;
	st = e->pf.snap->stacks[stack_ref - 1];
	for (i = 0; i < st->n_frames; i++)
		intern_frame(e, st->frames[i]);
}

/* The callstack of key (kstack << 32 | ustack), interned in this packet unless sent before. */
static uint64_t intern_callstack(struct exporter *e, uint64_t key)
{
	const uint64_t *found = bsearch(&key, e->stack_keys, e->nkeys, sizeof(key), cmp_u64);
	uint32_t kstack = (uint32_t)(key >> 32), ustack = (uint32_t)key;
	size_t pos = (size_t)(found - e->stack_keys), data, cs;
	struct pbw *w = &e->pf.w;

	if (e->key_sent[pos])
		return pos + 1;
	data = pbw_begin(w, PACKET_INTERNED_DATA);
	intern_stack_frames(e, ustack);
	intern_stack_frames(e, kstack);
	cs = pbw_begin(w, INTERNED_CALLSTACKS);
	pbw_varint(w, CALLSTACK_IID, pos + 1);
	write_frame_ids(w, e->pf.snap, ustack);
	write_frame_ids(w, e->pf.snap, kstack);
	pbw_end(w, cs);
	pbw_end(w, data);
	e->key_sent[pos] = true;
	return pos + 1;
}

static int prepare_samples(struct exporter *e)
{
	const Hostprof__Snapshot *s = e->pf.snap;
	const Hostprof__SampleTable *t = s->samples;
	size_t i, n = t->n_ts_delta;

	e->stack_keys = malloc(MAX(n, (size_t)1) * sizeof(*e->stack_keys));
	e->frame_sent = calloc(MAX(s->n_frames, (size_t)1), sizeof(*e->frame_sent));
	e->mapping_sent = calloc(s->n_mappings + 1, sizeof(*e->mapping_sent));
	if (!e->stack_keys || !e->frame_sent || !e->mapping_sent)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		uint64_t key = (uint64_t)t->kstack[i] << 32 | t->ustack[i];

		if (key)
			e->stack_keys[e->nkeys++] = key;
	}
	qsort_safe(e->stack_keys, e->nkeys, sizeof(*e->stack_keys), cmp_u64);
	n = e->nkeys;
	e->nkeys = 0;
	for (i = 0; i < n; i++)
		if (!e->nkeys || e->stack_keys[e->nkeys - 1] != e->stack_keys[i])
			e->stack_keys[e->nkeys++] = e->stack_keys[i];
	e->key_sent = calloc(MAX(e->nkeys, (size_t)1), sizeof(*e->key_sent));
	if (!e->key_sent)
		return -ENOMEM;
	return 0;
}

static int write_samples(struct exporter *e)
{
	const Hostprof__SampleTable *t = e->pf.snap->samples;
	uint64_t ts = e->pf.snap->start_ns;
	struct pbw *w = &e->pf.w;
	size_t i, packet, ps;
	int r;

	if (!t || t->n_ts_delta == 0)
		return 0;
	r = prepare_samples(e);
	if (r < 0)
		return r;

	for (i = 0; i < t->n_ts_delta; i++) {
		uint64_t key = (uint64_t)t->kstack[i] << 32 | t->ustack[i], iid = 0;
		uint32_t flags = SEQ_NEEDS_INCREMENTAL_STATE;

		ts += t->ts_delta[i];
		if (!e->profile_started) {
			flags |= SEQ_INCREMENTAL_STATE_CLEARED;
			e->profile_started = true;
		}
		packet = pf_packet_begin(&e->pf, ts, PERFETTO_PROFILE_SEQUENCE_ID);
		pbw_varint(w, PACKET_SEQUENCE_FLAGS, flags);
		if (key)
			iid = intern_callstack(e, key);
		ps = pbw_begin(w, PACKET_PERF_SAMPLE);
		pbw_varint(w, PERF_SAMPLE_CPU, t->cpu[i]);
		pbw_varint(w, PERF_SAMPLE_PID, t->pid[i]);
		pbw_varint(w, PERF_SAMPLE_TID, t->tid[i]);
		if (iid)
			pbw_varint(w, PERF_SAMPLE_CALLSTACK_IID, iid);
		pbw_varint(w, PERF_SAMPLE_CPU_MODE, t->kstack[i] ? CPU_MODE_KERNEL : CPU_MODE_USER);
		pbw_end(w, ps);
		r = pf_packet_end(&e->pf, packet);
		if (r < 0)
			return r;
	}
	return 0;
}
/* ---- The thread index -------------------------------------------------------------------- */

/* Every tid of the snapshot but 0, with its pid, name and first known prio. */
static int build_thread_index(struct pf_exporter *e)
{
	const Hostprof__SchedSwitchTable *sw = e->snap->switches;
	int r;

	r = snapview_init(e->snap, &e->view);
	if (r < 0)
		return r;
	e->threads = calloc(MAX(e->view.n_threads, (size_t)1), sizeof(*e->threads));
	if (!e->threads)
		return -ENOMEM;
	for (size_t i = 0; i < e->view.n_threads; i++)
		e->threads[i] = (struct pf_thread){ .id = &e->view.threads[i], .prio = PRIO_UNKNOWN };
	for (size_t i = 0; sw && i < sw->n_ts_delta; i++) {
		struct pf_thread *p = pf_thread(e, sw->prev_tid[i]), *q = pf_thread(e, sw->next_tid[i]);

		if (p && p->prio == PRIO_UNKNOWN)
			p->prio = sw->prev_prio[i];
		if (q && q->prio == PRIO_UNKNOWN)
			q->prio = sw->next_prio[i];
	}
	return 0;
}

/* ---- The whole trace ------------------------------------------------------------------- */

static int write_trace(struct exporter *e)
{
	struct pf_exporter *pf = &e->pf;
	int r;

	r = build_thread_index(pf);
	if (r < 0)
		return r;
	r = write_clock_snapshot(pf);
	if (r < 0)
		return r;
	r = write_system_info(pf);
	if (r < 0)
		return r;
	r = write_node_track(pf);
	if (r < 0)
		return r;
	r = write_process_tree(pf);
	if (r < 0)
		return r;
	r = pf_write_sched(pf);
	if (r < 0)
		return r;
	r = pf_write_tracks(pf);
	if (r < 0)
		return r;
	r = write_samples(e);
	if (r < 0)
		return r;
	r = pf_flush(pf);
	if (r < 0)
		return r;
	errno = 0;
	if (fflush(pf->out) == EOF)
		return negative_errno();
	return 0;
}

static void exporter_free(struct exporter *e)
{
	snapview_free(&e->pf.view);
	free(e->pf.threads);
	free(e->stack_keys);
	free(e->key_sent);
	free(e->frame_sent);
	free(e->mapping_sent);
	pbw_free(&e->pf.w);
}

int pf_export_machine(const Hostprof__Snapshot *snap, FILE *out, uint32_t machine_id, uint32_t seq_base,
		      const char *node_name, uint32_t *ret_seq_end)
{
	_cleanup_(exporter_free) struct exporter e = {
		.pf = { .snap = snap, .out = out, .w = PBW_INIT, .machine_id = machine_id, .seq_base = seq_base,
			.node_name = node_name },
	};
	int r;

	if (!snap || !out || machine_id >= PF_MAX_MACHINES)
		return -EINVAL;

	r = validate(snap, &e.pf.ncpus);
	if (r < 0)
		return r;

	r = write_trace(&e);
	if (r < 0)
		return r;
	if (ret_seq_end)
		*ret_seq_end = e.pf.seq_end;
	return 0;
}

int snapshot_export_perfetto(const Hostprof__Snapshot *snap, FILE *out)
{
	return pf_export_machine(snap, out, 0, 0, NULL, NULL);
}
