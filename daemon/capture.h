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
	uint32_t ring_kb;  /* per CPU; a power of two, at least the page size */
	bool force_raw_tp; /* attach raw_tp even where tp_btf works */
};

/* Called for every record drained that parses (record_check): rec->size is its size. */
typedef void (*capture_record_fn)(void *ud, const struct hp_hdr *rec);

/* -ENOTSUP: no BTF; -EPERM: not privileged. */
int capture_new(const struct capture_opts *opts, capture_record_fn fn, void *ud, struct capture **ret);
void capture_free(struct capture *c);

/* An fd that is readable when some ring buffer has data. */
int capture_fd(const struct capture *c);
/* Drain every ring; returns the number of records. */
int capture_drain(struct capture *c);

int capture_watch(struct capture *c, uint32_t pid, uint32_t reason, uint32_t parent);
int capture_unwatch(struct capture *c, uint32_t pid);
/* Set pid's filter slot again (a slot cleared by an unwatch racing a fork in the kernel). */
void capture_filter_touch(struct capture *c, uint32_t pid);
int capture_set_globs(struct capture *c, char *const *globs, size_t n);
/* Sums of the per-CPU stats map, indexed by HP_STAT_*. */
int capture_stats(const struct capture *c, uint64_t ret[HP_STAT_MAX]);
/* Records drained that did not parse, and were dropped. */
uint64_t capture_bad_records(const struct capture *c);

/* The hooks that matter only while some process is watched, attached (on) or detached:
 * sys_enter/sys_exit, which put every task of the machine on the slow syscall path, and
 * the --interference groups asked for. */
int capture_set_watching(struct capture *c, bool on);
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
 * (at most HP_DROP_CAUSES entries). */
size_t capture_drops(const struct capture *c, struct drop_count ret[HP_DROP_CAUSES]);

int capture_nr_cpus(const struct capture *c);
bool capture_uses_raw_tp(const struct capture *c);

#endif
