// SPDX-License-Identifier: GPL-2.0-only
/*
 * hostprof's scheduling capture.
 *
 * Collects: every context switch in which a watched process is switched out or in
 * (with the task on the other side, so the preemptor of a watched thread is named),
 * the names of watched threads (renames, exec), forks and exits of watched tasks.
 *
 * Filters in the kernel: the `watched` hash (key: tgid) decides. A process enters it
 * when the daemon adds it (--pid, /proc scan), when a watched process forks it, or when
 * one of its threads takes a name that matches a --watch-thread glob (task_rename fires
 * on prctl(PR_SET_NAME), pthread_setname_np and exec).
 *
 * Cost per event: sched_switch, on every switch of the machine, is two hash lookups
 * (prev and next tgid) and returns there for unwatched tasks; a recorded switch adds two
 * 16-byte comm copies and one 80-byte ring buffer reservation on the current CPU's
 * ring. task_rename runs the glob automaton (16 steps per pattern), but renames are rare.
 *
 * Each CPU writes to its own ring buffer (`rings`, an array of ring buffers), so
 * producers never contend; the daemon merges the shards by timestamp.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "hostprof.h"
#include "core_fixes.bpf.h"
#include "glob.bpf.h"

char LICENSE[] SEC("license") = "GPL";

/* Fixed for the daemon's life, set before load. */
const volatile __u64 wakeup_bytes = 64 * 1024; /* wake the daemon once this much is queued */

/* What SIGHUP may change lives in .bss: the daemon writes it through the mmap. */
struct hp_glob globs[HP_MAX_GLOBS];
__u32 nr_globs;

struct ringbuf_map {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 256 * 1024); /* the daemon sets --ring-kb before load */
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, 1); /* one per possible CPU, set before load */
	__type(key, __u32);
	__array(values, struct ringbuf_map);
} rings SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, HP_MAX_WATCHED);
	__type(key, __u32);
	__type(value, struct hp_watch);
} watched SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, HP_STAT_MAX);
	__type(key, __u32);
	__type(value, __u64);
} stats SEC(".maps");

static __always_inline void stat_inc(__u32 idx)
{
	__u64 *v = bpf_map_lookup_elem(&stats, &idx);

	if (v)
		*v += 1;
}

static __always_inline bool is_watched(__u32 tgid)
{
	return tgid && bpf_map_lookup_elem(&watched, &tgid);
}

/* Reserve exactly `size` bytes on this CPU's ring and fill in the header. */
static __always_inline void *ring_reserve(void **ret_ring, __u32 size, __u16 type)
{
	__u32 cpu = bpf_get_smp_processor_id();
	struct hp_hdr *hdr;
	void *ring;

	ring = bpf_map_lookup_elem(&rings, &cpu);
	if (!ring) {
		stat_inc(HP_STAT_NO_RING);
		return NULL;
	}
	hdr = bpf_ringbuf_reserve(ring, size, 0);
	if (!hdr) {
		stat_inc(HP_STAT_RING_FULL);
		return NULL;
	}
	hdr->ts = bpf_ktime_get_boot_ns();
	hdr->type = type;
	hdr->size = size;
	hdr->cpu = cpu;
	*ret_ring = ring;
	return hdr;
}

/* Submit, waking the daemon only once enough has queued up; its timer drains the rest. */
static __always_inline void ring_submit(void *ring, void *rec)
{
	__u64 flags = bpf_ringbuf_query(ring, BPF_RB_AVAIL_DATA) >= wakeup_bytes ? BPF_RB_FORCE_WAKEUP
										: BPF_RB_NO_WAKEUP;
	bpf_ringbuf_submit(rec, flags);
	stat_inc(HP_STAT_EVENTS);
}

/* fls()-style index of the highest set bit, with shifts (clang 14 and __builtin_clz). */
static __always_inline __u32 highest_bit(__u32 v)
{
	__u32 r = 0;

	if (v >= 1 << 16) {
		v >>= 16;
		r += 16;
	}
	if (v >= 1 << 8) {
		v >>= 8;
		r += 8;
	}
	if (v >= 1 << 4) {
		v >>= 4;
		r += 4;
	}
	if (v >= 1 << 2) {
		v >>= 2;
		r += 2;
	}
	if (v >= 1 << 1)
		r += 1;
	return 1u << r;
}

#define TASK_REPORT 0x7f
#define TASK_IDLE_STATE 0x402 /* TASK_UNINTERRUPTIBLE | TASK_NOLOAD */

/* The state the sched_switch tracepoint reports for prev, as `perf sched` prints it. */
static __always_inline __u32 report_state(bool preempt, struct task_struct *prev)
{
	__u32 state, report;

	if (preempt)
		return HP_STATE_PREEMPT;
	state = task_state(prev);
	if (state == TASK_IDLE_STATE)
		return HP_STATE_IDLE;
	report = (state & TASK_REPORT) | BPF_CORE_READ(prev, exit_state);
	return report ? highest_bit(report) : HP_STATE_RUNNING;
}

static __always_inline int on_switch(bool preempt, struct task_struct *prev, struct task_struct *next)
{
	__u32 prev_pid = BPF_CORE_READ(prev, tgid);
	__u32 next_pid = BPF_CORE_READ(next, tgid);
	struct hp_switch *e;
	__u16 flags = 0;
	void *ring;

	if (is_watched(prev_pid))
		flags |= HP_SW_PREV_WATCHED;
	if (is_watched(next_pid))
		flags |= HP_SW_NEXT_WATCHED;
	if (!flags)
		return 0;

	e = ring_reserve(&ring, sizeof(*e), HP_EV_SWITCH);
	if (!e)
		return 0;
	e->prev_tid = BPF_CORE_READ(prev, pid);
	e->prev_pid = prev_pid;
	e->next_tid = BPF_CORE_READ(next, pid);
	e->next_pid = next_pid;
	e->prev_prio = BPF_CORE_READ(prev, prio);
	e->next_prio = BPF_CORE_READ(next, prio);
	e->prev_state = report_state(preempt, prev);
	e->prev_policy = BPF_CORE_READ(prev, policy);
	e->next_policy = BPF_CORE_READ(next, policy);
	e->flags = flags;
	BPF_CORE_READ_STR_INTO(&e->prev_comm, prev, comm);
	BPF_CORE_READ_STR_INTO(&e->next_comm, next, comm);
	ring_submit(ring, e);
	return 0;
}

static __always_inline void emit_comm(__u16 type, __u32 tid, __u32 pid, __u32 glob, const char *comm)
{
	struct hp_comm *e;
	void *ring;

	e = ring_reserve(&ring, sizeof(*e), type);
	if (!e)
		return;
	e->tid = tid;
	e->pid = pid;
	e->glob = glob;
	e->pad = 0;
	__builtin_memcpy(e->comm, comm, HP_COMM_LEN);
	ring_submit(ring, e);
}

static __always_inline int on_rename(struct task_struct *task, const char *newcomm)
{
	__u32 pid = BPF_CORE_READ(task, tgid), tid = BPF_CORE_READ(task, pid);
	char comm[HP_COMM_LEN] = {};
	__u32 n = nr_globs;

	bpf_probe_read_kernel_str(comm, sizeof(comm), newcomm);
	if (is_watched(pid)) {
		emit_comm(HP_EV_COMM, tid, pid, 0, comm);
		return 0;
	}
	for (__u32 i = 0; i < HP_MAX_GLOBS && i < n; i++) {
		struct hp_watch w = { .reason = HP_WATCH_GLOB };

		if (!glob_match(&globs[i], comm))
			continue;
		if (bpf_map_update_elem(&watched, &pid, &w, BPF_NOEXIST) && !is_watched(pid)) {
			stat_inc(HP_STAT_MAP_FULL);
			return 0;
		}
		emit_comm(HP_EV_WATCH, tid, pid, i, comm);
		return 0;
	}
	return 0;
}

static __always_inline int on_fork(struct task_struct *parent, struct task_struct *child)
{
	__u32 ppid = BPF_CORE_READ(parent, tgid);
	__u32 cpid = BPF_CORE_READ(child, tgid);
	struct hp_fork *e;
	void *ring;

	if (!is_watched(ppid))
		return 0;
	if (cpid != ppid) {
		struct hp_watch w = { .reason = HP_WATCH_CHILD, .parent = ppid };

		if (bpf_map_update_elem(&watched, &cpid, &w, BPF_NOEXIST) && !is_watched(cpid))
			stat_inc(HP_STAT_MAP_FULL);
	}
	e = ring_reserve(&ring, sizeof(*e), HP_EV_FORK);
	if (!e)
		return 0;
	e->parent_tid = BPF_CORE_READ(parent, pid);
	e->parent_pid = ppid;
	e->child_tid = BPF_CORE_READ(child, pid);
	e->child_pid = cpid;
	BPF_CORE_READ_STR_INTO(&e->comm, child, comm);
	ring_submit(ring, e);
	return 0;
}

static __always_inline int on_exit(struct task_struct *task)
{
	__u32 pid = BPF_CORE_READ(task, tgid);
	struct hp_exit *e;
	void *ring;

	if (!is_watched(pid))
		return 0;
	e = ring_reserve(&ring, sizeof(*e), HP_EV_EXIT);
	if (!e)
		return 0;
	e->tid = BPF_CORE_READ(task, pid);
	e->pid = pid;
	e->exit_code = BPF_CORE_READ(task, exit_code);
	e->pad = 0;
	ring_submit(ring, e);
	return 0;
}

/*
 * Each hook twice: tp_btf where the kernel has BTF for the tracepoint, raw_tp otherwise.
 * The daemon turns off the autoload of one of each pair before loading.
 */
SEC("tp_btf/sched_switch")
int BPF_PROG(tp_btf_sched_switch, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	return on_switch(preempt, prev, next);
}

SEC("raw_tp/sched_switch")
int BPF_PROG(raw_tp_sched_switch, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	return on_switch(preempt, prev, next);
}

SEC("tp_btf/task_rename")
int BPF_PROG(tp_btf_task_rename, struct task_struct *task, const char *comm)
{
	return on_rename(task, comm);
}

SEC("raw_tp/task_rename")
int BPF_PROG(raw_tp_task_rename, struct task_struct *task, const char *comm)
{
	return on_rename(task, comm);
}

SEC("tp_btf/sched_process_fork")
int BPF_PROG(tp_btf_sched_process_fork, struct task_struct *parent, struct task_struct *child)
{
	return on_fork(parent, child);
}

SEC("raw_tp/sched_process_fork")
int BPF_PROG(raw_tp_sched_process_fork, struct task_struct *parent, struct task_struct *child)
{
	return on_fork(parent, child);
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(tp_btf_sched_process_exit, struct task_struct *task)
{
	return on_exit(task);
}

SEC("raw_tp/sched_process_exit")
int BPF_PROG(raw_tp_sched_process_exit, struct task_struct *task)
{
	return on_exit(task);
}
