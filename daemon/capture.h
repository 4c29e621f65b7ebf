/* SPDX-License-Identifier: GPL-2.0-only */
/* Loading, attaching and draining the BPF programs (bpf/, one object linked from a file per concern). */
#ifndef HOSTPROF_CAPTURE_H
#define HOSTPROF_CAPTURE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "counts.h"
#include "hostprof.h"

struct capture;

struct capture_opts {
	uint32_t ring_kb;     /* per CPU; a power of two, at least the page size */
	bool force_raw_tp;    /* attach raw_tp even where tp_btf works */
	bool force_task_hash; /* per-thread state in a hash map even where task storage works */
};

/* Called for every record drained that parses (record_check): rec->size is its size. */
typedef void (*capture_record_fn)(void *ud, const struct hp_hdr *rec);

/* -ENOTSUP: no BTF; -EPERM: not privileged. */
int capture_new(const struct capture_opts *opts, capture_record_fn fn, void *ud, struct capture **ret);
void capture_free(struct capture *c);

/* An fd that is readable when a program woke a ring buffer: once wakeup_bytes (an
 * eighth of the ring) are queued on it, or at a record the daemon acts on at once. Less
 * than that waits for the next capture_drain() (the daemon's 100 ms timer). */
int capture_fd(const struct capture *c);
/* Drain every ring to the last record; returns the number of records. */
int capture_drain(struct capture *c);
/* After capture_fd was readable: drain what each ring holds, and of what comes
 * meanwhile leave less than half of wakeup_bytes (the daemon does not chase the programs
 * record by record; a record that wakes it at once, HP_EV_WATCH, is drained). */
int capture_drain_woken(struct capture *c);

/* Watch pid in the kernel; the hooks that only matter while something is watched are
 * attached at once (capture_set_watching). */
int capture_watch(struct capture *c, uint32_t pid, uint32_t reason, uint32_t parent);
int capture_unwatch(struct capture *c, uint32_t pid);
/* The kernel stopped watching pid by itself (its last thread exited): clear its filter
 * slot unless a watched tgid uses it; the watched map is left alone (a new process with
 * that pid may be in it now). */
void capture_release_filter(struct capture *c, uint32_t pid);
/* Set pid's filter slot again (a slot cleared by an unwatch racing a fork in the kernel). */
void capture_filter_touch(struct capture *c, uint32_t pid);
int capture_set_globs(struct capture *c, char *const *globs, size_t n);
/* Sums of the per-CPU stats map, indexed by HP_STAT_*. */
int capture_stats(const struct capture *c, uint64_t ret[HP_STAT_MAX]);
/* A CPython process's GIL, for the kernel side to tell its GIL waits (bpf/gil.bpf.h); or no
 * more. Waits of at least min_ns are records. */
/* --unwind: on-CPU samples copy bytes of the user stack and the user registers
 * (HP_EV_RAWSAMPLE; 0: none, frame pointers only), with named only in threads a glob of
 * capture_set_globs names. -EOPNOTSUPP: the kernel lacks bpf_task_pt_regs (5.15). */
int capture_set_unwind(struct capture *c, uint32_t bytes, bool named);
int capture_gil_set(struct capture *c, uint32_t pid, const struct hp_gil_proc *g);
void capture_gil_clear(struct capture *c, uint32_t pid);
void capture_set_gil_min(struct capture *c, uint64_t min_ns);
/* A CPython process's Python stacks walked in the kernel (bpf/python.bpf.h), or no more;
 * the walk's own counts (HP_PYSTAT_*), summed over the CPUs. */
int capture_python_set(struct capture *c, uint32_t pid, const struct hp_py_proc *pp);
void capture_python_clear(struct capture *c, uint32_t pid);
/* --python-gc: its garbage collections, from the USDT probes of binary (the file with
 * _PyRuntime, as the process maps it); -ENOENT and the like: it has none. Detached by
 * capture_python_clear. */
int capture_python_gc(struct capture *c, uint32_t pid, const char *binary);
int capture_python_stats(const struct capture *c, uint64_t ret[HP_PYSTAT_MAX]);
/* Records drained that did not parse, and were dropped. */
uint64_t capture_bad_records(const struct capture *c);
/* Runs of the programs the kernel skipped: a program that an interrupt entered again on
 * the CPU it was running on (an IRQ's wakeup inside a task's sched_waking) is not run
 * again there (recursion_misses); what that run would have recorded is lost. */
uint64_t capture_runs_skipped(const struct capture *c);

/* The hooks that matter only while some process is watched, attached (on) or detached:
 * the sched hooks (kept while --cpus is set), the syscall mode's (sys_enter/sys_exit,
 * which put every task of the machine on the slow syscall path, or the mapping hooks),
 * and the --interference groups asked for. A record of the kernel starting to watch a
 * process turns it on as it is drained. */
int capture_set_watching(struct capture *c, bool on);
/* `syscalls`: HP_SYSCALLS_EXACT or HP_SYSCALLS_BLOCKING; -EOPNOTSUPP where blocking
 * cannot work (no bpf_task_pt_regs). */
int capture_set_syscall_mode(struct capture *c, uint32_t mode);
/* The mode, and since when (CLOCK_BOOTTIME; 0: since the start). */
uint32_t capture_syscall_mode(const struct capture *c, uint64_t *ret_since_ns);
bool capture_blocking_supported(const struct capture *c);
/* syscalls = blocking: whether this kernel lacks the hook that sees mapping changes
 * (mmap_lock_acquire_returned, 5.12): mappings are then read again only at an exec. */
bool capture_maps_hook_missing(const struct capture *c);
/* How many times pid changed its mappings, as far as the blocking mode's hook saw (a
 * number that moves on; 0 in exact mode, whose syscall records say it instead). */
int capture_maps_changes(const struct capture *c, uint32_t pid, uint32_t *ret);
/* --interference (HP_INTF_*) and its thresholds; attached while capture_set_watching is on. */
void capture_set_interference(struct capture *c, unsigned mask, uint64_t irq_min_ns, uint64_t lock_min_ns);
/* What is captured (or will be, once something is watched): HP_INTF_*. */
unsigned capture_interference(const struct capture *c);
/* Groups of which some tracepoint is missing from this kernel. */
unsigned capture_interference_missing(const struct capture *c);
/* On-CPU sampling at hz on every CPU; 0 stops it. */
int capture_set_sampling(struct capture *c, uint32_t hz);
void capture_set_thresholds(struct capture *c, uint64_t syscall_min_ns, uint64_t offcpu_min_ns);
/* --cpus: record every switch on these CPUs (bit i of mask[i / 64]). */
int capture_set_cpus(struct capture *c, const uint64_t *mask, size_t words);
/* The syscall histograms of pid's threads. */
int capture_for_each_histogram(const struct capture *c, uint32_t pid,
			       void (*fn)(void *ud, const struct hp_hist_key *key, const struct hp_hist *h), void *ud);
void capture_forget_histograms(struct capture *c, uint32_t pid);
/* The same, collected into a malloc'ed array. */
int capture_histograms(const struct capture *c, uint32_t pid, struct hist_entry **ret, size_t *ret_n);
/* Drops by cause, host-wide, as status and snapshots show them: every cause, zeros too
 * (HP_CAPTURE_DROP_CAUSES entries). */
size_t capture_drops(const struct capture *c, struct drop_count ret[HP_CAPTURE_DROP_CAUSES]);

int capture_nr_cpus(const struct capture *c);
bool capture_uses_raw_tp(const struct capture *c);
bool capture_uses_task_storage(const struct capture *c);
/* The hash fallback's per-thread entries in use (threads with state); -EOPNOTSUPP with task storage. */
int capture_task_entries(const struct capture *c);

#endif
