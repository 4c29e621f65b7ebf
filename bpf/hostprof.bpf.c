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
 *                       execs, exits; syscalls = blocking: the syscalls that block
 *   syscalls.bpf.c      syscalls = exact: syscall histograms, slow syscalls, GIL waits
 *                       (gil.bpf.h); syscalls =
 *                       blocking: the mapping changes symbolization needs
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
 * first: a task of an unwatched process costs a byte load, not a hash lookup. A task of a
 * watched process keeps its state in task storage (hostprof.bpf.h), which also remembers
 * that it is watched: one storage lookup, no hash. When nothing is watched and no --cpus
 * is set, the daemon detaches every hook but task_rename (the globs): nothing runs at a
 * context switch.
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
#include "gil.bpf.h"
#include "python.bpf.h"

char LICENSE[] SEC("license") = "GPL";

/* Fixed for the daemon's life, set before load. */
const volatile __u64 wakeup_bytes = 64 * 1024; /* wake the daemon once this much is queued */
const volatile bool use_task_storage = false;  /* per-thread state in task_store, not the tasks hash */
const volatile bool blocking_ok = false;       /* syscalls = blocking works: bpf_task_pt_regs (5.15) */

/* What SIGHUP may change lives in .bss: the daemon writes it through the mmap. */
struct hp_glob globs[HP_MAX_GLOBS];
__u32 nr_globs;
__u64 syscall_min_ns = 200 * 1000;
__u64 offcpu_min_ns = 200 * 1000;
__u64 irq_min_ns = 0;
__u64 lock_min_ns = 0;
__u64 gil_min_ns = 1000 * 1000; /* gil.bpf.h: takes of the GIL that waited this long are records */
__u64 cpus_mask[HP_MAX_CPUS / 64];
__u32 cpus_any; /* some bit of cpus_mask is set */
__u32 intf_mask; /* HP_INTF_*: what --interference captures (its programs are attached too) */
__u32 syscall_mode = HP_SYSCALLS_EXACT; /* HP_SYSCALLS_*: the daemon attaches the hooks of the mode */
/* --unwind: on-CPU samples copy this many bytes of the user stack (HP_EV_RAWSAMPLE; 0: off,
 * frame pointers only); with unwind_named, only in threads named by a --watch-thread glob */
__u32 unwind_bytes;
__u32 unwind_named;
/* The daemon moves watch_gen on at every unwatch (a task's cached "watched" is then asked
 * again), epoch at every attach of the sched hooks (per-thread state from before is
 * stale), hist_gen when it forgets histograms (a thread's cached slots are then too). */
__u32 watch_gen = 1;
__u32 epoch = 1;
__u32 hist_gen = 1;
/* syscalls = blocking: a thread's user stack is walked at most once per ustack_gap_ns on
 * average, ustack_burst_ns worth at once (a walk is reused while the thread blocks with
 * the same registers): at ~1-3 us a walk, at most 0.1-0.3% of a CPU per thread */
__u64 ustack_gap_ns = 1000 * 1000;
__u64 ustack_burst_ns = 32 * 1000 * 1000;
/* a thread's kernel stack is walked again this long after its last walk, even when it
 * blocks from the same place in the same syscall (stack_cache) */
__u64 kstack_reuse_ns = 10 * 1000 * 1000;
/*
 * A filter in front of the `watched` hash: watch_filter[tgid & mask] is non-zero for
 * every watched tgid (and for the tgids that share its slot). Every hook of the machine
 * asks it first, so a task of an unwatched process costs one byte load, not a hash
 * lookup. Set by the programs (watch_add: plain stores, no atomics on older kernels)
 * and by the daemon, which also clears slots no watched tgid uses any more.
 */
__u8 watch_filter[HP_FILTER_SIZE];
/* The same for the CPython processes whose Python stacks are walked (python.bpf.h): set
 * and cleared by the daemon only, with their py_procs entries. */
__u8 py_filter[HP_FILTER_SIZE];

/* The maps, as hostprof.bpf.h describes them. */
rings_map rings SEC(".maps");
watched_map watched SEC(".maps");
struct task_storage_map task_store SEC(".maps");
tasks_map tasks SEC(".maps");
struct stack_storage_map stack_store SEC(".maps");
stack_cache_map stack_cache SEC(".maps");
hist_index_map hist_index SEC(".maps");
hist_slots_map hist_slots SEC(".maps");
hist_free_map hist_free SEC(".maps");
stats_map stats SEC(".maps");
scratch_map scratch SEC(".maps");
rawbuf_map rawbuf SEC(".maps");
victims_map victims SEC(".maps");
irq_state_map irq_state SEC(".maps");
waits_map waits SEC(".maps");
gil_procs_map gil_procs SEC(".maps");
gil_tasks_map gil_tasks SEC(".maps");
gil_tzero_map gil_tzero SEC(".maps");
py_procs_map py_procs SEC(".maps");
py_tstates_map py_tstates SEC(".maps");
py_stats_map py_stats SEC(".maps");
