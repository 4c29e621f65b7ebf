// SPDX-License-Identifier: GPL-2.0-only
/*
 * Perfetto exporter: one snapshot as a Perfetto trace file (ui.perfetto.dev, trace_processor).
 *
 * A trace file is a serialized perfetto.protos.Trace: nothing but a sequence of TracePackets,
 * each one written as field 1 (length-delimited) of Trace. So the file can be streamed:
 * packets are encoded with pbwriter into one buffer that is written to the FILE and reused
 * whenever it passes EXPORT_FLUSH_BYTES, always between two packets. Memory stays bounded by
 * the largest packet plus one batch of event indices per CPU and an index of the threads
 * and stacks, whatever the number of events.
 *
 * Packets, in this order. All but the samples are on one sequence (trusted_packet_sequence_id
 * = PERFETTO_SEQUENCE_ID; 1 is the tracing service's own sequence, so we avoid it):
 *   1. ClockSnapshot: BOOTTIME, REALTIME and MONOTONIC read at the same instant (the ones
 *      that are known), primary_trace_clock = BOOTTIME. Packet timestamp = the BOOTTIME value.
 *   2. SystemInfo: utsname {sysname, version, release, machine} and num_cpus. Perfetto reads
 *      the kernel release to decide how to decode sched_switch prev_state; ours is the
 *      kernel's own sched_switch report encoding and is passed through unchanged.
 *   3. ProcessTree, in chunks of EXPORT_TREE_CHUNK entries (the tree is incremental):
 *      every Process {pid, ppid, cmdline (comm when the cmdline is empty), uid}, then every
 *      Thread {tid, tgid, name}. Packet timestamp = Snapshot.start_ns.
 *   4. FtraceEventBundle per CPU, up to EXPORT_BUNDLE_EVENTS events each: the sched_switch
 *      rows, the WakeupTable rows and the entries and exits of the IrqTable rows merged by
 *      timestamp (of one nanosecond: IRQ exits, wakeups, IRQ entries, then switches; a
 *      wakeup before a switch is how the kernel emits them). Every FtraceEvent has its
 *      timestamp (absolute BOOTTIME ns) and pid = the task running when the event fired:
 *      - sched_switch {prev_comm, prev_pid, prev_prio, prev_state, next_comm, next_pid,
 *        next_prio}, *_pid are thread ids, FtraceEvent.pid = prev_tid;
 *      - sched_waking {comm, pid, prio, success = 1, target_cpu} of the task woken, in the
 *        bundle of WakeupTable.cpu (where the waker ran), FtraceEvent.pid = waker_tid. The
 *        table keeps no comm nor prio of the woken task: comm comes from the thread index
 *        (snapview.h), prio from its latest sched_switch row before the
 *        wakeup (else its first one; omitted when it never switched). Rows of new tasks
 *        (flags & 1, the kernel's sched_wakeup_new) are written as sched_waking too:
 *        trace_processor derives the waker and the runnable state from sched_waking only;
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
 *      Snapshot timestamps only go forward (ts_delta is unsigned), so events within a
 *      bundle, and the bundles of one CPU, come out in time order. Packet timestamp = the
 *      bundle's first event.
 *   5. Thread tracks: a TrackDescriptor {uuid = THREAD_TRACK_UUID(tid), thread {pid, tid,
 *      thread_name}} before the first event of each thread, and TrackEvents on it (names
 *      and annotation names inline, not interned, so these packets need no incremental
 *      state). trace_processor merges such a track with the thread's sched data, so the
 *      UI shows the slices in the thread's own row, under its state bar:
 *      - each slow syscall: a slice named Snapshot.syscall_names[nr] ("read"; "syscall_NR"
 *        when the name is unknown), category "syscall", annotations nr, arg0, arg1, arg2,
 *        ret, duration_ns, cpu;
 *      - each off-CPU interval: a slice "off-cpu S" (S = the state letter), category
 *        "sched", annotations state, duration_ns, waker_tid, waker_pid, waker_comm, cpu and
 *        kernel_stack / user_stack: the function names, innermost first, " <- " between
 *        them (module+0xoffset when not resolved, "[unknown]" without a mapping);
 *      - each migration: an instant "migrate 0->1", annotations from_cpu, to_cpu;
 *      - each marker: an instant named Marker.name, category "marker", annotation detail.
 *        A marker without a thread goes on a process track (TrackDescriptor {uuid =
 *        PROCESS_TRACK_UUID(pid), process {pid, process_name}}) of Snapshot.pid;
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
 *        (the tracepoint's count, or minor + major where it is 0), category "memory",
 *        annotations faults, write, exec, prot, minor, major, duration_ns. Slices rather than
 *        a counter: the UI prints the count on the period itself, and periods of unequal
 *        length read right. Their own track because periods are long and would break the
 *        nesting of the thread's syscalls and off-CPU intervals.
 *      A slice is a TYPE_SLICE_BEGIN packet and a TYPE_SLICE_END packet. An off-CPU interval
 *      inside a syscall nests under it (read > off-cpu S), as does a lock wait or a reclaim
 *      inside a syscall; an END closes the innermost open slice of its track, so two
 *      intervals that overlap without nesting are drawn nested.
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
 * Every packet that has a timestamp also says timestamp_clock_id = BOOTTIME (the default,
 * made explicit).
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
 *     track_descriptor = 60, perf_sample = 66
 *     TracePacket.SequenceFlags SEQ_INCREMENTAL_STATE_CLEARED = 1,
 *     SEQ_NEEDS_INCREMENTAL_STATE = 2
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
 *     TrackEvent.debug_annotations = 4, type = 9, track_uuid = 11, categories = 22,
 *     name = 23
 *     TrackEvent.Type TYPE_SLICE_BEGIN = 1, TYPE_SLICE_END = 2, TYPE_INSTANT = 3
 *   protos/perfetto/trace/track_event/debug_annotation.proto
 *     DebugAnnotation.uint_value = 3, int_value = 4, string_value = 6, name = 10
 *   protos/perfetto/trace/interned_data/interned_data.proto
 *     InternedData.function_names = 5, frames = 6, callstacks = 7, build_ids = 16,
 *     mapping_paths = 17, mappings = 19
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
#include "pbwriter.h"
#include "snapview.h"

#define PERFETTO_SEQUENCE_ID 0x4850 /* "HP"; any value but 0 and 1 */
#define PERFETTO_PROFILE_SEQUENCE_ID 0x4851 /* the samples and their interned stacks */

/* Track uuids: global to the trace, not 0; tids and pids stay below 2^22. */
#define THREAD_TRACK_UUID(tid) (UINT64_C(0x4850000000000000) | (uint64_t)(tid))
#define PROCESS_TRACK_UUID(pid) (UINT64_C(0x4850100000000000) | (uint64_t)(pid))
#define FAULTS_TRACK_UUID(tid) (UINT64_C(0x4850200000000000) | (uint64_t)(tid))

#define EXPORT_FLUSH_BYTES (256u * 1024)
#define EXPORT_BUNDLE_EVENTS 1000
#define EXPORT_TREE_CHUNK 1000
#define EXPORT_MAX_CPUS 8192 /* the kernel's largest NR_CPUS */
#define EXPORT_STACK_TEXT 4096 /* the longest stack annotation, bytes */
#define EXPORT_BUILD_ID_MAX 64 /* raw bytes */

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
	PACKET_TIMESTAMP_CLOCK_ID = 58,
	PACKET_TRACK_DESCRIPTOR = 60,
	PACKET_PERF_SAMPLE = 66,
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
	FTRACE_EVENT_SCHED_WAKING = 20,
	FTRACE_EVENT_SOFTIRQ_ENTRY = 24,
	FTRACE_EVENT_SOFTIRQ_EXIT = 25,
	FTRACE_EVENT_IRQ_HANDLER_ENTRY = 36,
	FTRACE_EVENT_IRQ_HANDLER_EXIT = 37,
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

enum {
	SCHED_WAKING_COMM = 1,
	SCHED_WAKING_PID = 2,
	SCHED_WAKING_PRIO = 3,
	SCHED_WAKING_SUCCESS = 4,
	SCHED_WAKING_TARGET_CPU = 5,
};

enum {
	IRQ_HANDLER_ENTRY_IRQ = 1,
	IRQ_HANDLER_ENTRY_NAME = 2,
	IRQ_HANDLER_EXIT_IRQ = 1,
	IRQ_HANDLER_EXIT_RET = 2,
	SOFTIRQ_ENTRY_VEC = 1,
	SOFTIRQ_EXIT_VEC = 1,
};

enum {
	TRACK_DESCRIPTOR_UUID = 1,
	TRACK_DESCRIPTOR_NAME = 2,
	TRACK_DESCRIPTOR_PROCESS = 3,
	TRACK_DESCRIPTOR_THREAD = 4,
	TRACK_DESCRIPTOR_PARENT_UUID = 5,
	PROCESS_DESCRIPTOR_PID = 1,
	PROCESS_DESCRIPTOR_PROCESS_NAME = 6,
	THREAD_DESCRIPTOR_PID = 1,
	THREAD_DESCRIPTOR_TID = 2,
	THREAD_DESCRIPTOR_THREAD_NAME = 5,
};

enum {
	TRACK_EVENT_DEBUG_ANNOTATIONS = 4,
	TRACK_EVENT_TYPE = 9,
	TRACK_EVENT_TRACK_UUID = 11,
	TRACK_EVENT_CATEGORIES = 22,
	TRACK_EVENT_NAME = 23,
	TYPE_SLICE_BEGIN = 1,
	TYPE_SLICE_END = 2,
	TYPE_INSTANT = 3,
	DEBUG_ANNOTATION_UINT_VALUE = 3,
	DEBUG_ANNOTATION_INT_VALUE = 4,
	DEBUG_ANNOTATION_STRING_VALUE = 6,
	DEBUG_ANNOTATION_NAME = 10,
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

/* What a bundle holds: a sched_switch row, a WakeupTable row, an IrqTable row's entry or exit. */
enum { EV_SWITCH, EV_WAKING, EV_IRQ_ENTRY, EV_IRQ_EXIT };

#define SOFTIRQ_VECTORS 10 /* HI 0 .. RCU 9: the ones trace_processor has a name for */

#define PRIO_UNKNOWN INT32_MIN

/* The events of one CPU waiting to go out as one bundle. */
struct cpu_batch {
	uint32_t n;
	uint32_t idx[EXPORT_BUNDLE_EVENTS];
	uint64_t ts[EXPORT_BUNDLE_EVENTS];
	int32_t prio[EXPORT_BUNDLE_EVENTS]; /* sched_waking: the woken task's, or PRIO_UNKNOWN */
	uint8_t kind[EXPORT_BUNDLE_EVENTS];
};

/* An IRQ whose exit is still to be written. */
struct irq_exit {
	uint64_t ts;
	uint32_t idx;
};

/* What the export keeps of a thread of the view. */
struct thread_info {
	const struct snapview_thread *id;
	int32_t prio; /* latest seen in the sched_switch sweep; PRIO_UNKNOWN */
	bool described; /* its TrackDescriptor is out */
	bool faults_described; /* and the one of its "page faults" track */
};

struct exporter {
	const Hostprof__Snapshot *snap;
	FILE *out;
	struct pbw w;
	size_t ncpus; /* highest CPU number seen + 1 */
	struct cpu_batch **batches;
	struct snapview view;
	struct thread_info *threads; /* by position in view.threads */
	bool process_described;
	/* IRQs entered whose exit is not written yet: a min-heap by (ts, idx) */
	struct irq_exit *exits;
	size_t nexits, exits_cap;
	/* samples: the distinct (kstack << 32 | ustack) pairs, sorted; iid = position + 1 */
	uint64_t *stack_keys;
	size_t nkeys;
	bool *key_sent, *frame_sent, *mapping_sent; /* mapping_sent[n_mappings]: "[unknown]" */
	bool profile_started;
	char text[EXPORT_STACK_TEXT];
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
static size_t packet_begin_seq(struct pbw *w, uint64_t ts, uint32_t seq)
{
	size_t packet = pbw_begin(w, TRACE_PACKET);

	if (ts) {
		pbw_varint(w, PACKET_TIMESTAMP, ts);
		pbw_varint(w, PACKET_TIMESTAMP_CLOCK_ID, BUILTIN_CLOCK_BOOTTIME);
	}
	pbw_varint(w, PACKET_TRUSTED_PACKET_SEQUENCE_ID, seq);
	return packet;
}

static size_t packet_begin(struct pbw *w, uint64_t ts)
{
	return packet_begin_seq(w, ts, PERFETTO_SEQUENCE_ID);
}

static void write_opt_string(struct pbw *w, uint32_t field, const char *s)
{
	if (s && *s)
		pbw_string(w, field, s);
}

static const char *string_at(const Hostprof__Snapshot *s, uint32_t idx)
{
	/* validate() checked idx; a NULL entry in a hand-built table reads as "". */
	return s->strings[idx] ? s->strings[idx] : "";
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

/* ---- The thread index -------------------------------------------------------------------- */

static struct thread_info *thread_find(struct exporter *e, uint32_t tid)
{
	ssize_t k = snapview_index(&e->view, tid);

	return k < 0 ? NULL : &e->threads[k];
}

/* Every tid of the snapshot but 0, with its pid, name and first known prio. */
static int build_thread_index(struct exporter *e)
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
		e->threads[i] = (struct thread_info){ .id = &e->view.threads[i], .prio = PRIO_UNKNOWN };
	for (size_t i = 0; sw && i < sw->n_ts_delta; i++) {
		struct thread_info *p = thread_find(e, sw->prev_tid[i]), *q = thread_find(e, sw->next_tid[i]);

		if (p && p->prio == PRIO_UNKNOWN)
			p->prio = sw->prev_prio[i];
		if (q && q->prio == PRIO_UNKNOWN)
			q->prio = sw->next_prio[i];
	}
	return 0;
}

/* ---- 4. sched_switch, sched_waking and IRQs, bundled per CPU --------------------------- */

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

static void write_sched_waking(struct exporter *e, size_t i, uint64_t ts, int32_t prio)
{
	const Hostprof__WakeupTable *t = e->snap->wakeups;
	const struct thread_info *woken = thread_find(e, t->tid[i]);
	struct pbw *w = &e->w;
	size_t ev, wk;

	ev = pbw_begin(w, BUNDLE_EVENT);
	pbw_varint(w, FTRACE_EVENT_TIMESTAMP, ts);
	pbw_varint(w, FTRACE_EVENT_PID, t->waker_tid[i]);
	wk = pbw_begin(w, FTRACE_EVENT_SCHED_WAKING);
	pbw_string(w, SCHED_WAKING_COMM, woken ? woken->id->comm : "");
	pbw_varint(w, SCHED_WAKING_PID, t->tid[i]);
	if (prio != PRIO_UNKNOWN)
		pbw_int(w, SCHED_WAKING_PRIO, prio);
	pbw_varint(w, SCHED_WAKING_SUCCESS, 1);
	pbw_varint(w, SCHED_WAKING_TARGET_CPU, t->target_cpu[i]);
	pbw_end(w, wk);
	pbw_end(w, ev);
}

/* The entry (or exit) of IrqTable row i: irq_handler_* for a hard IRQ, softirq_* for a softirq. */
static void write_irq(struct exporter *e, size_t i, uint64_t ts, bool exit)
{
	const Hostprof__IrqTable *t = e->snap->irqs;
	struct pbw *w = &e->w;
	size_t ev, irq;

	ev = pbw_begin(w, BUNDLE_EVENT);
	pbw_varint(w, FTRACE_EVENT_TIMESTAMP, ts);
	if ((t->flags[i] & HPS_IRQ_INTERRUPTED) && t->tid[i])
		pbw_varint(w, FTRACE_EVENT_PID, t->tid[i]);
	if (t->kind[i] == HPS_IRQ_HARD) {
		if (exit) {
			irq = pbw_begin(w, FTRACE_EVENT_IRQ_HANDLER_EXIT);
			pbw_int(w, IRQ_HANDLER_EXIT_IRQ, (int32_t)t->num[i]);
			pbw_int(w, IRQ_HANDLER_EXIT_RET, 1); /* IRQ_HANDLED: see the top of the file */
		} else {
			irq = pbw_begin(w, FTRACE_EVENT_IRQ_HANDLER_ENTRY);
			pbw_int(w, IRQ_HANDLER_ENTRY_IRQ, (int32_t)t->num[i]);
			pbw_string(w, IRQ_HANDLER_ENTRY_NAME, string_at(e->snap, t->name[i]));
		}
	} else {
		irq = pbw_begin(w, exit ? FTRACE_EVENT_SOFTIRQ_EXIT : FTRACE_EVENT_SOFTIRQ_ENTRY);
		pbw_varint(w, exit ? SOFTIRQ_EXIT_VEC : SOFTIRQ_ENTRY_VEC, t->num[i]);
	}
	pbw_end(w, irq);
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
	for (k = 0; k < b->n; k++) {
		switch (b->kind[k]) {
		case EV_SWITCH:
			write_sched_switch(w, e->snap, b->idx[k], b->ts[k]);
			break;
		case EV_WAKING:
			write_sched_waking(e, b->idx[k], b->ts[k], b->prio[k]);
			break;
		default:
			write_irq(e, b->idx[k], b->ts[k], b->kind[k] == EV_IRQ_EXIT);
			break;
		}
	}
	pbw_end(w, bundle);
	b->n = 0;
	return packet_end(e, packet);
}

static int batch_add(struct exporter *e, uint32_t cpu, uint8_t kind, size_t idx, uint64_t ts, int32_t prio)
{
	struct cpu_batch *b = e->batches[cpu];

	if (!b) {
		b = malloc(sizeof(*b));
		if (!b)
			return -ENOMEM;
		b->n = 0;
		e->batches[cpu] = b;
	}
	b->idx[b->n] = (uint32_t)idx;
	b->ts[b->n] = ts;
	b->prio[b->n] = prio;
	b->kind[b->n] = kind;
	if (++b->n == EXPORT_BUNDLE_EVENTS)
		return write_bundle(e, cpu, b);
	return 0;
}

static bool exit_before(const struct irq_exit *a, const struct irq_exit *b)
{
	return a->ts < b->ts || (a->ts == b->ts && a->idx < b->idx);
}

static int exits_push(struct exporter *e, uint64_t ts, uint32_t idx)
{
	struct irq_exit x = { .ts = ts, .idx = idx };
	size_t i;

	if (e->nexits == e->exits_cap) {
		size_t cap = e->exits_cap ? 2 * e->exits_cap : 16;
		struct irq_exit *p = reallocarray(e->exits, cap, sizeof(*p));

		if (!p)
			return -ENOMEM;
		e->exits = p;
		e->exits_cap = cap;
	}
	for (i = e->nexits++; i > 0 && exit_before(&x, &e->exits[(i - 1) / 2]); i = (i - 1) / 2)
		e->exits[i] = e->exits[(i - 1) / 2];
	e->exits[i] = x;
	return 0;
}

static struct irq_exit exits_pop(struct exporter *e)
{
	struct irq_exit top = e->exits[0], last = e->exits[--e->nexits];
	size_t i = 0, child;

	for (; (child = 2 * i + 1) < e->nexits; i = child) {
		if (child + 1 < e->nexits && exit_before(&e->exits[child + 1], &e->exits[child]))
			child++;
		if (!exit_before(&e->exits[child], &last))
			break;
		e->exits[i] = e->exits[child];
	}
	if (e->nexits)
		e->exits[i] = last;
	return top;
}

/* A table's rows in time order: row i and its absolute time. */
struct cursor {
	const uint64_t *delta;
	size_t i, n;
	uint64_t ts;
};

static void cursor_init(struct cursor *c, uint64_t start, const uint64_t *delta, size_t n)
{
	*c = (struct cursor){ .delta = delta, .n = n, .ts = start };
	if (n)
		c->ts += delta[0];
}

static void cursor_next(struct cursor *c)
{
	if (++c->i < c->n)
		c->ts += c->delta[c->i];
}

static bool cursor_at(const struct cursor *c, uint64_t ts)
{
	return c->i < c->n && c->ts == ts;
}

static int add_switch(struct exporter *e, size_t i, uint64_t ts)
{
	const Hostprof__SchedSwitchTable *t = e->snap->switches;
	struct thread_info *p = thread_find(e, t->prev_tid[i]), *q = thread_find(e, t->next_tid[i]);

	/* the prio a later sched_waking of these tasks reports (the idle task is not woken) */
	if (p)
		p->prio = t->prev_prio[i];
	if (q)
		q->prio = t->next_prio[i];
	return batch_add(e, t->cpu[i], EV_SWITCH, i, ts, 0);
}

static int add_waking(struct exporter *e, size_t i, uint64_t ts)
{
	const Hostprof__WakeupTable *t = e->snap->wakeups;
	const struct thread_info *woken = thread_find(e, t->tid[i]);

	return batch_add(e, t->cpu[i], EV_WAKING, i, ts, woken ? woken->prio : PRIO_UNKNOWN);
}

/* An IRQ's entry now, its exit once everything before it is out. */
static int add_irq_entry(struct exporter *e, size_t i, uint64_t ts)
{
	const Hostprof__IrqTable *t = e->snap->irqs;
	int r;

	if (t->kind[i] != HPS_IRQ_HARD && !(t->kind[i] == HPS_IRQ_SOFT && t->num[i] < SOFTIRQ_VECTORS))
		return 0;
	r = batch_add(e, t->cpu[i], EV_IRQ_ENTRY, i, ts, 0);
	if (r < 0)
		return r;
	return exits_push(e, ts + t->dur_ns[i], (uint32_t)i);
}

static int write_sched(struct exporter *e)
{
	const Hostprof__Snapshot *s = e->snap;
	struct cursor sw, wk, irq;
	uint32_t cpu;
	int r;

	cursor_init(&sw, s->start_ns, s->switches ? s->switches->ts_delta : NULL,
		    s->switches ? s->switches->n_ts_delta : 0);
	cursor_init(&wk, s->start_ns, s->wakeups ? s->wakeups->ts_delta : NULL, s->wakeups ? s->wakeups->n_ts_delta : 0);
	cursor_init(&irq, s->start_ns, s->irqs ? s->irqs->ts_delta : NULL, s->irqs ? s->irqs->n_ts_delta : 0);
	if (sw.n + wk.n + irq.n == 0)
		return 0;

	e->batches = calloc(e->ncpus, sizeof(*e->batches));
	if (!e->batches)
		return -ENOMEM;

	while (sw.i < sw.n || wk.i < wk.n || irq.i < irq.n || e->nexits) {
		uint64_t next = UINT64_MAX;

		if (sw.i < sw.n)
			next = MIN(next, sw.ts);
		if (wk.i < wk.n)
			next = MIN(next, wk.ts);
		if (irq.i < irq.n)
			next = MIN(next, irq.ts);
		if (e->nexits && e->exits[0].ts <= next) {
			struct irq_exit x = exits_pop(e);

			r = batch_add(e, s->irqs->cpu[x.idx], EV_IRQ_EXIT, x.idx, x.ts, 0);
		} else if (cursor_at(&wk, next)) {
			r = add_waking(e, wk.i, next);
			cursor_next(&wk);
		} else if (cursor_at(&irq, next)) {
			r = add_irq_entry(e, irq.i, next);
			cursor_next(&irq);
		} else {
			r = add_switch(e, sw.i, next);
			cursor_next(&sw);
		}
		if (r < 0)
			return r;
	}

	for (cpu = 0; cpu < e->ncpus; cpu++) {
		struct cpu_batch *b = e->batches[cpu];

		if (!b || b->n == 0)
			continue;
		r = write_bundle(e, cpu, b);
		if (r < 0)
			return r;
	}
	return 0;
}

/* ---- 5. Thread tracks: syscalls, off-CPU, migrations, markers, reclaim, locks, faults -- */

static int describe_thread(struct exporter *e, struct thread_info *t, uint32_t pid)
{
	struct pbw *w = &e->w;
	size_t packet, td, thread;

	packet = packet_begin(w, 0);
	td = pbw_begin(w, PACKET_TRACK_DESCRIPTOR);
	pbw_varint(w, TRACK_DESCRIPTOR_UUID, THREAD_TRACK_UUID(t->id->tid));
	thread = pbw_begin(w, TRACK_DESCRIPTOR_THREAD);
	pbw_varint(w, THREAD_DESCRIPTOR_PID, t->id->pid ? t->id->pid : pid);
	pbw_varint(w, THREAD_DESCRIPTOR_TID, t->id->tid);
	write_opt_string(w, THREAD_DESCRIPTOR_THREAD_NAME, t->id->comm);
	pbw_end(w, thread);
	pbw_end(w, td);
	t->described = true;
	return packet_end(e, packet);
}

static int describe_process(struct exporter *e)
{
	const Hostprof__Snapshot *s = e->snap;
	const Hostprof__Process *p = snapview_process(&e->view, s->pid);
	struct pbw *w = &e->w;
	size_t packet, td, proc;

	packet = packet_begin(w, 0);
	td = pbw_begin(w, PACKET_TRACK_DESCRIPTOR);
	pbw_varint(w, TRACK_DESCRIPTOR_UUID, PROCESS_TRACK_UUID(s->pid));
	proc = pbw_begin(w, TRACK_DESCRIPTOR_PROCESS);
	pbw_varint(w, PROCESS_DESCRIPTOR_PID, s->pid);
	write_opt_string(w, PROCESS_DESCRIPTOR_PROCESS_NAME, p ? p->comm : NULL);
	pbw_end(w, proc);
	pbw_end(w, td);
	e->process_described = true;
	return packet_end(e, packet);
}

/* The uuid of tid's track (of the process's when tid is 0), described on first use. */
static int track_of(struct exporter *e, uint32_t tid, uint32_t pid, uint64_t *ret_uuid)
{
	struct thread_info *t;
	int r;

	if (tid == 0) {
		if (!e->process_described) {
			r = describe_process(e);
			if (r < 0)
				return r;
		}
		*ret_uuid = PROCESS_TRACK_UUID(e->snap->pid);
		return 0;
	}
	t = thread_find(e, tid);
	if (!t) /* build_thread_index() saw every tid */
		return -EINVAL;
	if (!t->described) {
		r = describe_thread(e, t, pid);
		if (r < 0)
			return r;
	}
	*ret_uuid = THREAD_TRACK_UUID(tid);
	return 0;
}

/* Opens a TrackEvent packet; returns the track_event token, the packet's in *ret_packet. */
static size_t event_begin(struct pbw *w, uint64_t ts, uint64_t uuid, uint32_t type, const char *category,
			  const char *name, size_t *ret_packet)
{
	size_t packet = packet_begin(w, ts), ev = pbw_begin(w, PACKET_TRACK_EVENT);

	pbw_varint(w, TRACK_EVENT_TYPE, type);
	pbw_varint(w, TRACK_EVENT_TRACK_UUID, uuid);
	if (category)
		pbw_string(w, TRACK_EVENT_CATEGORIES, category);
	if (name)
		pbw_string(w, TRACK_EVENT_NAME, name);
	*ret_packet = packet;
	return ev;
}

static int event_end(struct exporter *e, size_t packet, size_t ev)
{
	pbw_end(&e->w, ev);
	return packet_end(e, packet);
}

static int slice_end(struct exporter *e, uint64_t ts, uint64_t uuid)
{
	size_t packet, ev = event_begin(&e->w, ts, uuid, TYPE_SLICE_END, NULL, NULL, &packet);

	return event_end(e, packet, ev);
}

static void annotate_uint(struct pbw *w, const char *name, uint64_t v)
{
	size_t a = pbw_begin(w, TRACK_EVENT_DEBUG_ANNOTATIONS);

	pbw_string(w, DEBUG_ANNOTATION_NAME, name);
	pbw_varint(w, DEBUG_ANNOTATION_UINT_VALUE, v);
	pbw_end(w, a);
}

static void annotate_int(struct pbw *w, const char *name, int64_t v)
{
	size_t a = pbw_begin(w, TRACK_EVENT_DEBUG_ANNOTATIONS);

	pbw_string(w, DEBUG_ANNOTATION_NAME, name);
	pbw_int(w, DEBUG_ANNOTATION_INT_VALUE, v);
	pbw_end(w, a);
}

static void annotate_string(struct pbw *w, const char *name, const char *v)
{
	size_t a = pbw_begin(w, TRACK_EVENT_DEBUG_ANNOTATIONS);

	pbw_string(w, DEBUG_ANNOTATION_NAME, name);
	pbw_string(w, DEBUG_ANNOTATION_STRING_VALUE, v);
	pbw_end(w, a);
}

static int write_syscalls(struct exporter *e)
{
	const Hostprof__Snapshot *s = e->snap;
	const Hostprof__SyscallTable *t = s->syscalls;
	struct pbw *w = &e->w;
	uint64_t ts = s->start_ns, uuid;
	char name[32];
	size_t i, n, packet, ev;
	int r;

	n = t ? t->n_ts_delta : 0;
	for (i = 0; i < n; i++) {
		const char *sys = t->nr[i] < s->n_syscall_names ? s->syscall_names[t->nr[i]] : NULL;

		ts += t->ts_delta[i];
		if (!sys || !*sys) {
			snprintf(name, sizeof(name), "syscall_%" PRIu32, t->nr[i]);
			sys = name;
		}
		r = track_of(e, t->tid[i], t->pid[i], &uuid);
		if (r < 0)
			return r;
		ev = event_begin(w, ts, uuid, TYPE_SLICE_BEGIN, "syscall", sys, &packet);
		annotate_uint(w, "nr", t->nr[i]);
		annotate_uint(w, "arg0", t->arg0[i]);
		annotate_uint(w, "arg1", t->arg1[i]);
		annotate_uint(w, "arg2", t->arg2[i]);
		annotate_int(w, "ret", t->ret[i]);
		annotate_uint(w, "duration_ns", t->dur_ns[i]);
		annotate_uint(w, "cpu", t->cpu[i]);
		r = event_end(e, packet, ev);
		if (r < 0)
			return r;
		r = slice_end(e, ts + t->dur_ns[i], uuid);
		if (r < 0)
			return r;
	}
	return 0;
}

/* One frame as text: its function, else module+0xoffset, else "[unknown]". */
static int frame_text(const Hostprof__Snapshot *s, uint32_t idx, char *buf, size_t len)
{
	const Hostprof__Frame *f = s->frames[idx];
	const char *file, *slash;

	if (f->function && *f->function)
		return snprintf(buf, len, "%s", f->function);
	if (f->mapping) {
		file = s->mappings[f->mapping - 1]->file;
		if (file && *file) {
			slash = strrchr(file, '/');
			return snprintf(buf, len, "%s+0x%" PRIx64, slash ? slash + 1 : file,
					f->module_offset);
		}
	}
	return snprintf(buf, len, "[unknown]");
}

/*
 * Stack stack_ref (index + 1) as text in e->text: innermost first, " <- " between frames,
 * " ..." at the end of a stack that was cut, at capture or here for its length.
 */
static const char *stack_text(struct exporter *e, uint32_t stack_ref)
{
	static const char more[] = " ...";
	const Hostprof__Stack *st = e->snap->stacks[stack_ref - 1];
	size_t i, len = 0, cap = sizeof(e->text) - sizeof(more);
	int n;

	for (i = 0; i < st->n_frames; i++) {
		if (i) {
			n = snprintf(e->text + len, cap - len, " <- ");
			if (n < 0 || (size_t)n >= cap - len)
				break;
			len += n;
		}
		n = frame_text(e->snap, st->frames[i], e->text + len, cap - len);
		if (n < 0 || (size_t)n >= cap - len)
			break;
		len += n;
	}
	e->text[len] = '\0'; /* drops a part that did not fit */
	if (i < st->n_frames || st->truncated)
		memcpy(e->text + len, more, sizeof(more));
	return e->text;
}

static int write_offcpu(struct exporter *e)
{
	const Hostprof__Snapshot *s = e->snap;
	const Hostprof__OffCpuTable *t = s->offcpu;
	struct pbw *w = &e->w;
	uint64_t ts = s->start_ns, uuid;
	char name[32], buf[16];
	size_t i, n, packet, ev;
	const char *state;
	int r;

	n = t ? t->n_ts_delta : 0;
	for (i = 0; i < n; i++) {
		ts += t->ts_delta[i];
		r = track_of(e, t->tid[i], t->pid[i], &uuid);
		if (r < 0)
			return r;
		state = hps_state_name(t->state[i], buf, sizeof(buf));
		snprintf(name, sizeof(name), "off-cpu %s", state);
		ev = event_begin(w, ts, uuid, TYPE_SLICE_BEGIN, "sched", name, &packet);
		annotate_string(w, "state", state);
		annotate_uint(w, "duration_ns", t->dur_ns[i]);
		if (t->waker_tid[i]) {
			annotate_uint(w, "waker_tid", t->waker_tid[i]);
			annotate_uint(w, "waker_pid", t->waker_pid[i]);
			annotate_string(w, "waker_comm", string_at(s, t->waker_comm[i]));
		}
		annotate_uint(w, "cpu", t->cpu[i]);
		if (t->kstack[i])
			annotate_string(w, "kernel_stack", stack_text(e, t->kstack[i]));
		if (t->ustack[i])
			annotate_string(w, "user_stack", stack_text(e, t->ustack[i]));
		r = event_end(e, packet, ev);
		if (r < 0)
			return r;
		r = slice_end(e, ts + t->dur_ns[i], uuid);
		if (r < 0)
			return r;
	}
	return 0;
}

static int write_migrations(struct exporter *e)
{
	const Hostprof__MigrationTable *t = e->snap->migrations;
	struct pbw *w = &e->w;
	uint64_t ts = e->snap->start_ns, uuid;
	size_t i, n, packet, ev;
	char name[48];
	int r;

	n = t ? t->n_ts_delta : 0;
	for (i = 0; i < n; i++) {
		ts += t->ts_delta[i];
		r = track_of(e, t->tid[i], t->pid[i], &uuid);
		if (r < 0)
			return r;
		snprintf(name, sizeof(name), "migrate %" PRIu32 "->%" PRIu32, t->from_cpu[i], t->to_cpu[i]);
		ev = event_begin(w, ts, uuid, TYPE_INSTANT, "sched", name, &packet);
		annotate_uint(w, "from_cpu", t->from_cpu[i]);
		annotate_uint(w, "to_cpu", t->to_cpu[i]);
		r = event_end(e, packet, ev);
		if (r < 0)
			return r;
	}
	return 0;
}

static int write_markers(struct exporter *e)
{
	const Hostprof__Snapshot *s = e->snap;
	struct pbw *w = &e->w;
	size_t i, packet, ev;
	uint64_t uuid;
	int r;

	for (i = 0; i < s->n_markers; i++) {
		const Hostprof__Marker *m = s->markers[i];

		r = track_of(e, m->tid, s->pid, &uuid);
		if (r < 0)
			return r;
		ev = event_begin(w, m->ts, uuid, TYPE_INSTANT, "marker",
				 m->name && *m->name ? m->name : "marker", &packet);
		if (m->detail && *m->detail)
			annotate_string(w, "detail", m->detail);
		r = event_end(e, packet, ev);
		if (r < 0)
			return r;
	}
	return 0;
}

static int write_reclaims(struct exporter *e)
{
	const Hostprof__ReclaimTable *t = e->snap->reclaims;
	struct pbw *w = &e->w;
	uint64_t ts = e->snap->start_ns, uuid;
	size_t i, n, packet, ev;
	char gfp[16];
	int r;

	n = t ? t->n_ts_delta : 0;
	for (i = 0; i < n; i++) {
		ts += t->ts_delta[i];
		r = track_of(e, t->tid[i], t->pid[i], &uuid);
		if (r < 0)
			return r;
		ev = event_begin(w, ts, uuid, TYPE_SLICE_BEGIN, "memory", hps_reclaim_kind_name(t->kind[i]), &packet);
		annotate_int(w, "order", t->order[i]);
		snprintf(gfp, sizeof(gfp), "0x%" PRIx32, t->gfp[i]);
		annotate_string(w, "gfp", gfp);
		annotate_int(w, "result", t->result[i]);
		annotate_uint(w, "duration_ns", t->dur_ns[i]);
		annotate_uint(w, "cpu", t->cpu[i]);
		r = event_end(e, packet, ev);
		if (r < 0)
			return r;
		r = slice_end(e, ts + t->dur_ns[i], uuid);
		if (r < 0)
			return r;
	}
	return 0;
}

static int write_locks(struct exporter *e)
{
	const Hostprof__Snapshot *s = e->snap;
	const Hostprof__LockTable *t = s->locks;
	struct pbw *w = &e->w;
	uint64_t ts = s->start_ns, uuid;
	size_t i, n, packet, ev;
	char name[128], hex[24];
	int r;

	n = t ? t->n_ts_delta : 0;
	for (i = 0; i < n; i++) {
		ts += t->ts_delta[i];
		r = track_of(e, t->tid[i], t->pid[i], &uuid);
		if (r < 0)
			return r;
		hps_lock_wait_name(s, i, name, sizeof(name));
		ev = event_begin(w, ts, uuid, TYPE_SLICE_BEGIN, "lock", name, &packet);
		snprintf(hex, sizeof(hex), "0x%" PRIx64, t->lock[i]);
		annotate_string(w, "lock", hex);
		snprintf(hex, sizeof(hex), "0x%" PRIx32, t->flags[i]);
		annotate_string(w, "flags", hex);
		annotate_int(w, "ret", t->ret[i]);
		annotate_uint(w, "duration_ns", t->dur_ns[i]);
		annotate_uint(w, "cpu", t->cpu[i]);
		if (t->kstack[i])
			annotate_string(w, "kernel_stack", stack_text(e, t->kstack[i]));
		r = event_end(e, packet, ev);
		if (r < 0)
			return r;
		r = slice_end(e, ts + t->dur_ns[i], uuid);
		if (r < 0)
			return r;
	}
	return 0;
}

/* The "page faults" track of tid, a child of its thread track, described on first use. */
static int faults_track_of(struct exporter *e, uint32_t tid, uint32_t pid, uint64_t *ret_uuid)
{
	struct pbw *w = &e->w;
	struct thread_info *t;
	size_t packet, td;
	uint64_t parent;
	int r;

	r = track_of(e, tid, pid, &parent);
	if (r < 0)
		return r;
	if (tid == 0) { /* no thread: the process track holds them */
		*ret_uuid = parent;
		return 0;
	}
	t = thread_find(e, tid);
	if (!t->faults_described) {
		packet = packet_begin(w, 0);
		td = pbw_begin(w, PACKET_TRACK_DESCRIPTOR);
		pbw_varint(w, TRACK_DESCRIPTOR_UUID, FAULTS_TRACK_UUID(tid));
		pbw_varint(w, TRACK_DESCRIPTOR_PARENT_UUID, parent);
		pbw_string(w, TRACK_DESCRIPTOR_NAME, "page faults");
		pbw_end(w, td);
		t->faults_described = true;
		r = packet_end(e, packet);
		if (r < 0)
			return r;
	}
	*ret_uuid = FAULTS_TRACK_UUID(tid);
	return 0;
}

static int write_faults(struct exporter *e)
{
	const Hostprof__FaultTable *t = e->snap->faults;
	struct pbw *w = &e->w;
	uint64_t ts = e->snap->start_ns, uuid;
	size_t i, n, packet, ev;
	char name[80];
	int r;

	n = t ? t->n_ts_delta : 0;
	for (i = 0; i < n; i++) {
		uint64_t total = t->faults[i] ? t->faults[i] : (uint64_t)t->minor[i] + t->major[i];

		ts += t->ts_delta[i];
		r = faults_track_of(e, t->tid[i], t->pid[i], &uuid);
		if (r < 0)
			return r;
		snprintf(name, sizeof(name), "page faults: %" PRIu64 " (%" PRIu32 " major)", total, t->major[i]);
		ev = event_begin(w, ts, uuid, TYPE_SLICE_BEGIN, "memory", name, &packet);
		annotate_uint(w, "faults", t->faults[i]);
		annotate_uint(w, "write", t->write[i]);
		annotate_uint(w, "exec", t->exec[i]);
		annotate_uint(w, "prot", t->prot[i]);
		annotate_uint(w, "minor", t->minor[i]);
		annotate_uint(w, "major", t->major[i]);
		annotate_uint(w, "duration_ns", t->dur_ns[i]);
		r = event_end(e, packet, ev);
		if (r < 0)
			return r;
		r = slice_end(e, ts + t->dur_ns[i], uuid);
		if (r < 0)
			return r;
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
	const Hostprof__Snapshot *s = e->snap;
	size_t idx = mapping ? mapping - 1 : s->n_mappings;
	uint64_t iid = idx + 1;
	uint8_t id[EXPORT_BUILD_ID_MAX];
	struct pbw *w = &e->w;
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
	const Hostprof__Snapshot *s = e->snap;
	const Hostprof__Frame *f = s->frames[idx];
	struct pbw *w = &e->w;
	uint64_t mapping_iid, rel_pc = f->address;
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
	if (f->function && *f->function)
		intern_string(w, INTERNED_FUNCTION_NAMES, idx + 1, f->function, strlen(f->function));
	fr = pbw_begin(w, INTERNED_FRAMES);
	pbw_varint(w, FRAME_IID, idx + 1);
	if (f->function && *f->function)
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
	st = e->snap->stacks[stack_ref - 1];
	for (i = 0; i < st->n_frames; i++)
		intern_frame(e, st->frames[i]);
}

/* The callstack of key (kstack << 32 | ustack), interned in this packet unless sent before. */
static uint64_t intern_callstack(struct exporter *e, uint64_t key)
{
	const uint64_t *found = bsearch(&key, e->stack_keys, e->nkeys, sizeof(key), cmp_u64);
	uint32_t kstack = (uint32_t)(key >> 32), ustack = (uint32_t)key;
	size_t pos = (size_t)(found - e->stack_keys), data, cs;
	struct pbw *w = &e->w;

	if (e->key_sent[pos])
		return pos + 1;
	data = pbw_begin(w, PACKET_INTERNED_DATA);
	intern_stack_frames(e, ustack);
	intern_stack_frames(e, kstack);
	cs = pbw_begin(w, INTERNED_CALLSTACKS);
	pbw_varint(w, CALLSTACK_IID, pos + 1);
	write_frame_ids(w, e->snap, ustack);
	write_frame_ids(w, e->snap, kstack);
	pbw_end(w, cs);
	pbw_end(w, data);
	e->key_sent[pos] = true;
	return pos + 1;
}

static int prepare_samples(struct exporter *e)
{
	const Hostprof__Snapshot *s = e->snap;
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
	const Hostprof__SampleTable *t = e->snap->samples;
	uint64_t ts = e->snap->start_ns;
	struct pbw *w = &e->w;
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
		packet = packet_begin_seq(w, ts, PERFETTO_PROFILE_SEQUENCE_ID);
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
		r = packet_end(e, packet);
		if (r < 0)
			return r;
	}
	return 0;
}

/* ---- The whole trace ------------------------------------------------------------------- */

static int write_trace(struct exporter *e)
{
	int r;

	r = build_thread_index(e);
	if (r < 0)
		return r;
	r = write_clock_snapshot(e);
	if (r < 0)
		return r;
	r = write_system_info(e);
	if (r < 0)
		return r;
	r = write_process_tree(e);
	if (r < 0)
		return r;
	r = write_sched(e);
	if (r < 0)
		return r;
	r = write_syscalls(e);
	if (r < 0)
		return r;
	r = write_offcpu(e);
	if (r < 0)
		return r;
	r = write_migrations(e);
	if (r < 0)
		return r;
	r = write_markers(e);
	if (r < 0)
		return r;
	r = write_reclaims(e);
	if (r < 0)
		return r;
	r = write_locks(e);
	if (r < 0)
		return r;
	r = write_faults(e);
	if (r < 0)
		return r;
	r = write_samples(e);
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
	snapview_free(&e->view);
	free(e->threads);
	free(e->exits);
	free(e->stack_keys);
	free(e->key_sent);
	free(e->frame_sent);
	free(e->mapping_sent);
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
