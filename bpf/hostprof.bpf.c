// SPDX-License-Identifier: GPL-2.0-only
/*
 * hostprof's capture, for the processes the daemon watches: scheduling, syscalls,
 * off-CPU and on-CPU stacks, and interference beyond the scheduler (interrupts, reclaim,
 * page faults, kernel lock waits). One BPF object, which `bpftool gen object` links from
 * a file per concern:
 *
 *   hostprof.bpf.c      this file: the maps and the settings the programs share
 *                       (declared for the other files in hostprof.bpf.h)
 *   sched.bpf.c         switches, off-CPU intervals, wakeups, migrations, names, forks,
 *                       execs, exits
 *   syscalls.bpf.c      syscall histograms, slow syscalls
 *   samples.bpf.c       on-CPU stack samples
 *   interference.bpf.c  --interference: hard and soft IRQs, reclaim and compaction,
 *                       page fault types, kernel lock contention
 *
 * with stacks.bpf.h and faults.bpf.h for the off-CPU stacks and the fault counts that
 * several of them write.
 *
 * Filters in the kernel: a process is watched when the daemon adds it to `watched`, when
 * a watched process forks it, or when one of its threads takes a name that matches a
 * --watch-thread glob (a shift-and automaton, glob.bpf.h). Every hook asks watch_filter
 * first: a task of an unwatched process costs a byte load, not a hash lookup.
 *
 * Each CPU writes to its own ring buffer (`rings`), so producers never contend; the
 * daemon merges the shards by timestamp. Fixed-size records are reserved at their exact
 * size; records with stacks are built in a per-CPU scratch slot (one per nesting level:
 * a perf_event program can interrupt a tracepoint program on the same CPU) and copied
 * with bpf_ringbuf_output at their exact size. Every record lost is counted in `stats`,
 * by cause.
 *
 * This file has no programs of its own and costs nothing per event; each program file
 * says what its hooks cost (measured in bench/results/).
 */
#include "hostprof.bpf.h"

char LICENSE[] SEC("license") = "GPL";

/* Fixed for the daemon's life, set before load. */
const volatile __u64 wakeup_bytes = 64 * 1024; /* wake the daemon once this much is queued */

/* What SIGHUP may change lives in .bss: the daemon writes it through the mmap. */
struct hp_glob globs[HP_MAX_GLOBS];
__u32 nr_globs;
__u64 syscall_min_ns = 200 * 1000;
__u64 offcpu_min_ns = 200 * 1000;
__u64 irq_min_ns = 0;
__u64 lock_min_ns = 0;
__u64 cpus_mask[HP_MAX_CPUS / 64];
__u32 cpus_any; /* some bit of cpus_mask is set */
__u32 intf_mask; /* HP_INTF_*: what --interference captures (its programs are attached too) */
/*
 * A filter in front of the `watched` hash: watch_filter[tgid & mask] is non-zero for
 * every watched tgid (and for the tgids that share its slot). Every hook of the machine
 * asks it first, so a task of an unwatched process costs one byte load, not a hash
 * lookup. Set by the programs (watch_add: plain stores, no atomics on older kernels)
 * and by the daemon, which also clears slots no watched tgid uses any more.
 */
__u8 watch_filter[HP_FILTER_SIZE];

/* The maps, as hostprof.bpf.h describes them. */
rings_map rings SEC(".maps");
watched_map watched SEC(".maps");
tasks_map tasks SEC(".maps");
syscall_hist_map syscall_hist SEC(".maps");
stats_map stats SEC(".maps");
scratch_map scratch SEC(".maps");
victims_map victims SEC(".maps");
irq_state_map irq_state SEC(".maps");
waits_map waits SEC(".maps");
