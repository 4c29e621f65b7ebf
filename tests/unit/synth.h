/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Small snapshots built in memory for the exporter tests: one struct synth holds every
 * table as fixed arrays; rows are appended with absolute timestamps (in order, per table)
 * and synth_finish() turns them into a Hostprof__Snapshot that points into the struct.
 * Nothing is allocated; a struct synth is large, so make it static.
 */
#ifndef HOSTPROF_TESTS_SYNTH_H
#define HOSTPROF_TESTS_SYNTH_H

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "hps.h"

#define SY_ROWS 64
#define SY_T0 5000000000000ull /* 5000 s */
#define SY_MS 1000000ull
#define SY_PID 10

struct sy_task {
	uint32_t tid, pid;
	const char *comm;
	int32_t prio;
	uint32_t policy;
};

struct synth {
	Hostprof__Snapshot snap;
	Hostprof__Process proc, *procs[1];
	char *strings[SY_ROWS];
	Hostprof__Thread th[SY_ROWS], *thp[SY_ROWS];
	Hostprof__Frame fr[SY_ROWS], *frp[SY_ROWS];
	Hostprof__Stack st[SY_ROWS], *stp[SY_ROWS];
	uint32_t st_frames[SY_ROWS][8];
	Hostprof__Mapping mp[4], *mpp[4];
	char *sysnames[300];

	Hostprof__SchedSwitchTable sw;
	uint64_t sw_ts[SY_ROWS], sw_wait[SY_ROWS];
	uint32_t sw_cpu[SY_ROWS], sw_ptid[SY_ROWS], sw_ppid[SY_ROWS], sw_pcomm[SY_ROWS], sw_pstate[SY_ROWS],
		sw_ppol[SY_ROWS], sw_ntid[SY_ROWS], sw_npid[SY_ROWS], sw_ncomm[SY_ROWS], sw_npol[SY_ROWS],
		sw_kind[SY_ROWS];
	int32_t sw_pprio[SY_ROWS], sw_nprio[SY_ROWS];
	size_t n_sw;

	Hostprof__OffCpuTable off;
	uint64_t off_ts[SY_ROWS], off_dur[SY_ROWS];
	uint32_t off_tid[SY_ROWS], off_pid[SY_ROWS], off_state[SY_ROWS], off_wtid[SY_ROWS], off_wpid[SY_ROWS],
		off_wcomm[SY_ROWS], off_k[SY_ROWS], off_u[SY_ROWS], off_cpu[SY_ROWS];
	size_t n_off;

	Hostprof__SyscallTable sc;
	uint64_t sc_ts[SY_ROWS], sc_dur[SY_ROWS], sc_a0[SY_ROWS], sc_a1[SY_ROWS], sc_a2[SY_ROWS];
	uint32_t sc_tid[SY_ROWS], sc_pid[SY_ROWS], sc_nr[SY_ROWS], sc_cpu[SY_ROWS];
	int64_t sc_ret[SY_ROWS];
	size_t n_sc;

	Hostprof__SampleTable smp;
	uint64_t smp_ts[SY_ROWS];
	uint32_t smp_cpu[SY_ROWS], smp_tid[SY_ROWS], smp_pid[SY_ROWS], smp_k[SY_ROWS], smp_u[SY_ROWS];
	size_t n_smp;

	/* interference: rows count only with their bit in snap.interference (synth_interference) */
	Hostprof__IrqTable irq;
	uint64_t irq_ts[SY_ROWS], irq_dur[SY_ROWS];
	uint32_t irq_cpu[SY_ROWS], irq_kind[SY_ROWS], irq_num[SY_ROWS], irq_name[SY_ROWS], irq_tid[SY_ROWS],
		irq_pid[SY_ROWS], irq_flags[SY_ROWS];
	size_t n_irq;

	Hostprof__ReclaimTable rcl;
	uint64_t rcl_ts[SY_ROWS], rcl_dur[SY_ROWS];
	uint32_t rcl_tid[SY_ROWS], rcl_pid[SY_ROWS], rcl_kind[SY_ROWS], rcl_gfp[SY_ROWS], rcl_cpu[SY_ROWS];
	int32_t rcl_order[SY_ROWS];
	int64_t rcl_result[SY_ROWS];
	size_t n_rcl;

	Hostprof__FaultTable flt;
	uint64_t flt_ts[SY_ROWS], flt_dur[SY_ROWS];
	uint32_t flt_tid[SY_ROWS], flt_pid[SY_ROWS], flt_faults[SY_ROWS], flt_write[SY_ROWS],
		flt_exec[SY_ROWS], flt_prot[SY_ROWS], flt_minor[SY_ROWS], flt_major[SY_ROWS];
	size_t n_flt;

	Hostprof__LockTable lck;
	uint64_t lck_ts[SY_ROWS], lck_dur[SY_ROWS], lck_lock[SY_ROWS];
	uint32_t lck_tid[SY_ROWS], lck_pid[SY_ROWS], lck_flags[SY_ROWS], lck_k[SY_ROWS], lck_cpu[SY_ROWS],
		lck_name[SY_ROWS];
	int32_t lck_ret[SY_ROWS];
	size_t n_lck;
};

static inline void synth_init(struct synth *sy)
{
	memset(sy, 0, sizeof(*sy));
	hostprof__snapshot__init(&sy->snap);
	sy->snap.has_start_ns = sy->snap.has_end_ns = sy->snap.has_pid = sy->snap.has_sample_hz = 1;
	sy->snap.start_ns = SY_T0;
	sy->snap.end_ns = SY_T0 + 1000 * SY_MS;
	sy->snap.pid = SY_PID;
	sy->snap.sample_hz = 100;
	sy->snap.reason = "test";
	sy->strings[0] = "";
	sy->snap.n_strings = 1;
	hostprof__process__init(&sy->proc);
	sy->proc.pid = SY_PID;
	sy->proc.comm = "synth";
	sy->procs[0] = &sy->proc;
	sy->snap.processes = sy->procs;
	sy->snap.n_processes = 1;
	for (size_t i = 0; i < 300; i++)
		sy->sysnames[i] = "";
	sy->sysnames[0] = "read";
	sy->sysnames[202] = "futex";
	sy->snap.syscall_names = sy->sysnames;
	sy->snap.n_syscall_names = 300;
	sy->snap.offcpu_min_ns = 1 * SY_MS;
	sy->snap.syscall_min_ns = 1 * SY_MS;
	for (size_t i = 0; i < 4; i++) {
		static const char *files[4] = { "/usr/bin/synth", "/lib/libc.so.6", "[kernel.kallsyms]",
						"/lib/libx.so" };

		hostprof__mapping__init(&sy->mp[i]);
		sy->mp[i].start = 0x400000ull + i * 0x1000000ull;
		sy->mp[i].limit = sy->mp[i].start + 0x100000;
		sy->mp[i].file = (char *)files[i];
		sy->mpp[i] = &sy->mp[i];
	}
	sy->snap.mappings = sy->mpp;
	sy->snap.n_mappings = 4;
}

static inline uint32_t synth_str(struct synth *sy, const char *s)
{
	for (size_t i = 0; i < sy->snap.n_strings; i++)
		if (!strcmp(sy->strings[i], s))
			return (uint32_t)i;
	if (sy->snap.n_strings == SY_ROWS)
		abort();
	sy->strings[sy->snap.n_strings] = (char *)s;
	return (uint32_t)sy->snap.n_strings++;
}

static inline void synth_thread(struct synth *sy, uint32_t tid, uint32_t pid, const char *comm)
{
	Hostprof__Thread *t = &sy->th[sy->snap.n_threads];

	hostprof__thread__init(t);
	t->tid = tid;
	t->pid = pid;
	t->comm = (char *)comm;
	sy->thp[sy->snap.n_threads++] = t;
}

/* A frame: kernel frames in mapping 3, user ones in mapping 1 (or none with mapping 0). */
static inline uint32_t synth_frame(struct synth *sy, const char *fn, uint64_t addr, bool kernel,
				   uint32_t mapping)
{
	Hostprof__Frame *f = &sy->fr[sy->snap.n_frames];

	hostprof__frame__init(f);
	f->address = addr;
	f->function = (char *)fn;
	f->mapping = mapping;
	f->module_offset = addr & 0xfffff;
	f->kernel = kernel;
	sy->frp[sy->snap.n_frames] = f;
	return (uint32_t)sy->snap.n_frames++;
}

/* A stack of n frames, innermost first; returns its index + 1. */
static inline uint32_t synth_stack(struct synth *sy, bool user, const uint32_t *frames, size_t n)
{
	size_t i = sy->snap.n_stacks;
	Hostprof__Stack *s = &sy->st[i];

	hostprof__stack__init(s);
	memcpy(sy->st_frames[i], frames, n * sizeof(*frames));
	s->frames = sy->st_frames[i];
	s->n_frames = n;
	s->user = user;
	sy->stp[i] = s;
	sy->snap.n_stacks++;
	return (uint32_t)i + 1;
}

static inline void synth_switch(struct synth *sy, uint64_t ts, uint32_t cpu, const struct sy_task *prev,
				uint32_t prev_state, const struct sy_task *next, uint64_t wait, uint32_t kind)
{
	size_t i = sy->n_sw++;

	sy->sw_ts[i] = ts;
	sy->sw_cpu[i] = cpu;
	sy->sw_ptid[i] = prev->tid;
	sy->sw_ppid[i] = prev->pid;
	sy->sw_pcomm[i] = synth_str(sy, prev->comm);
	sy->sw_pprio[i] = prev->prio;
	sy->sw_pstate[i] = prev_state;
	sy->sw_ppol[i] = prev->policy;
	sy->sw_ntid[i] = next->tid;
	sy->sw_npid[i] = next->pid;
	sy->sw_ncomm[i] = synth_str(sy, next->comm);
	sy->sw_nprio[i] = next->prio;
	sy->sw_npol[i] = next->policy;
	sy->sw_wait[i] = wait;
	sy->sw_kind[i] = kind;
}

static inline void synth_offcpu(struct synth *sy, uint64_t ts, uint64_t dur, uint32_t tid, uint32_t state,
				uint32_t waker_tid, const char *waker_comm, uint32_t kstack, uint32_t ustack)
{
	size_t i = sy->n_off++;

	sy->off_ts[i] = ts;
	sy->off_dur[i] = dur;
	sy->off_tid[i] = tid;
	sy->off_pid[i] = SY_PID;
	sy->off_state[i] = state;
	sy->off_wtid[i] = waker_tid;
	sy->off_wpid[i] = waker_tid ? SY_PID : 0;
	sy->off_wcomm[i] = synth_str(sy, waker_comm);
	sy->off_k[i] = kstack;
	sy->off_u[i] = ustack;
}

static inline void synth_syscall(struct synth *sy, uint64_t ts, uint64_t dur, uint32_t tid, uint32_t nr,
				 int64_t ret)
{
	size_t i = sy->n_sc++;

	sy->sc_ts[i] = ts;
	sy->sc_dur[i] = dur;
	sy->sc_tid[i] = tid;
	sy->sc_pid[i] = SY_PID;
	sy->sc_nr[i] = nr;
	sy->sc_ret[i] = ret;
	sy->sc_a0[i] = 3;
	sy->sc_a1[i] = 0x7f0000000000;
	sy->sc_a2[i] = 64;
}

static inline void synth_sample(struct synth *sy, uint64_t ts, uint32_t tid, uint32_t ustack, uint32_t kstack)
{
	size_t i = sy->n_smp++;

	sy->smp_ts[i] = ts;
	sy->smp_tid[i] = tid;
	sy->smp_pid[i] = SY_PID;
	sy->smp_u[i] = ustack;
	sy->smp_k[i] = kstack;
}

/* What the snapshot says it captured: 1 irqs, 2 reclaim, 4 faults, 8 locks; and the thresholds. */
static inline void synth_interference(struct synth *sy, uint32_t mask, uint64_t irq_min_ns,
				      uint64_t lock_min_ns)
{
	sy->snap.has_interference = sy->snap.has_irq_min_ns = sy->snap.has_lock_min_ns = 1;
	sy->snap.interference = mask;
	sy->snap.irq_min_ns = irq_min_ns;
	sy->snap.lock_min_ns = lock_min_ns;
}

/* An interrupt (kind 1 hard, 2 soft) on cpu: flags 1, it interrupted tid; 2, a thread of SY_PID waited. */
static inline void synth_irq(struct synth *sy, uint64_t ts, uint64_t dur, uint32_t cpu, uint32_t kind,
			     uint32_t num, const char *name, uint32_t tid, uint32_t flags)
{
	size_t i = sy->n_irq++;

	sy->irq_ts[i] = ts;
	sy->irq_dur[i] = dur;
	sy->irq_cpu[i] = cpu;
	sy->irq_kind[i] = kind;
	sy->irq_num[i] = num;
	sy->irq_name[i] = synth_str(sy, name);
	sy->irq_tid[i] = tid;
	sy->irq_pid[i] = SY_PID;
	sy->irq_flags[i] = flags;
}

/* Reclaim (kind 1 direct, 2 memcg) or compaction (3) in tid, on CPU 0. */
static inline void synth_reclaim(struct synth *sy, uint64_t ts, uint64_t dur, uint32_t tid, uint32_t kind,
				 int32_t order, uint32_t gfp, int64_t result)
{
	size_t i = sy->n_rcl++;

	sy->rcl_ts[i] = ts;
	sy->rcl_dur[i] = dur;
	sy->rcl_tid[i] = tid;
	sy->rcl_pid[i] = SY_PID;
	sy->rcl_kind[i] = kind;
	sy->rcl_order[i] = order;
	sy->rcl_gfp[i] = gfp;
	sy->rcl_result[i] = result;
}

/* The page faults of tid over [ts, ts + dur): the tracepoint's (faults, write, exec, prot), the counters'. */
static inline void synth_faults(struct synth *sy, uint64_t ts, uint64_t dur, uint32_t tid,
				const uint32_t tp[4], uint32_t minor, uint32_t major)
{
	size_t i = sy->n_flt++;

	sy->flt_ts[i] = ts;
	sy->flt_dur[i] = dur;
	sy->flt_tid[i] = tid;
	sy->flt_pid[i] = SY_PID;
	sy->flt_faults[i] = tp[0];
	sy->flt_write[i] = tp[1];
	sy->flt_exec[i] = tp[2];
	sy->flt_prot[i] = tp[3];
	sy->flt_minor[i] = minor;
	sy->flt_major[i] = major;
}

/* tid waited for the kernel lock at address lock (flags LCB_F_*, 0x10000 mmap_lock), on CPU 0. */
static inline void synth_lock(struct synth *sy, uint64_t ts, uint64_t dur, uint32_t tid, uint64_t lock,
			      uint32_t flags, int32_t ret, uint32_t kstack, const char *name)
{
	size_t i = sy->n_lck++;

	sy->lck_ts[i] = ts;
	sy->lck_dur[i] = dur;
	sy->lck_tid[i] = tid;
	sy->lck_pid[i] = SY_PID;
	sy->lck_lock[i] = lock;
	sy->lck_flags[i] = flags;
	sy->lck_ret[i] = ret;
	sy->lck_k[i] = kstack;
	sy->lck_name[i] = synth_str(sy, name);
}

/* Absolute times to ts_delta, in place. */
static inline void synth_deltas(uint64_t *ts, size_t n)
{
	for (size_t i = n; i-- > 0;)
		ts[i] -= i ? ts[i - 1] : SY_T0;
}

static inline Hostprof__Snapshot *synth_finish(struct synth *sy)
{
	Hostprof__Snapshot *s = &sy->snap;

#define SY_COL(t, f, arr, n) ((t)->n_##f = (n), (t)->f = (arr))
	hostprof__sched_switch_table__init(&sy->sw);
	synth_deltas(sy->sw_ts, sy->n_sw);
	SY_COL(&sy->sw, ts_delta, sy->sw_ts, sy->n_sw);
	SY_COL(&sy->sw, cpu, sy->sw_cpu, sy->n_sw);
	SY_COL(&sy->sw, prev_tid, sy->sw_ptid, sy->n_sw);
	SY_COL(&sy->sw, prev_pid, sy->sw_ppid, sy->n_sw);
	SY_COL(&sy->sw, prev_comm, sy->sw_pcomm, sy->n_sw);
	SY_COL(&sy->sw, prev_prio, sy->sw_pprio, sy->n_sw);
	SY_COL(&sy->sw, prev_state, sy->sw_pstate, sy->n_sw);
	SY_COL(&sy->sw, prev_policy, sy->sw_ppol, sy->n_sw);
	SY_COL(&sy->sw, next_tid, sy->sw_ntid, sy->n_sw);
	SY_COL(&sy->sw, next_pid, sy->sw_npid, sy->n_sw);
	SY_COL(&sy->sw, next_comm, sy->sw_ncomm, sy->n_sw);
	SY_COL(&sy->sw, next_prio, sy->sw_nprio, sy->n_sw);
	SY_COL(&sy->sw, next_policy, sy->sw_npol, sy->n_sw);
	SY_COL(&sy->sw, next_wait_ns, sy->sw_wait, sy->n_sw);
	SY_COL(&sy->sw, next_wait_kind, sy->sw_kind, sy->n_sw);
	s->switches = &sy->sw;

	hostprof__off_cpu_table__init(&sy->off);
	synth_deltas(sy->off_ts, sy->n_off);
	SY_COL(&sy->off, ts_delta, sy->off_ts, sy->n_off);
	SY_COL(&sy->off, dur_ns, sy->off_dur, sy->n_off);
	SY_COL(&sy->off, tid, sy->off_tid, sy->n_off);
	SY_COL(&sy->off, pid, sy->off_pid, sy->n_off);
	SY_COL(&sy->off, state, sy->off_state, sy->n_off);
	SY_COL(&sy->off, waker_tid, sy->off_wtid, sy->n_off);
	SY_COL(&sy->off, waker_pid, sy->off_wpid, sy->n_off);
	SY_COL(&sy->off, waker_comm, sy->off_wcomm, sy->n_off);
	SY_COL(&sy->off, kstack, sy->off_k, sy->n_off);
	SY_COL(&sy->off, ustack, sy->off_u, sy->n_off);
	SY_COL(&sy->off, cpu, sy->off_cpu, sy->n_off);
	s->offcpu = &sy->off;

	hostprof__syscall_table__init(&sy->sc);
	synth_deltas(sy->sc_ts, sy->n_sc);
	SY_COL(&sy->sc, ts_delta, sy->sc_ts, sy->n_sc);
	SY_COL(&sy->sc, dur_ns, sy->sc_dur, sy->n_sc);
	SY_COL(&sy->sc, tid, sy->sc_tid, sy->n_sc);
	SY_COL(&sy->sc, pid, sy->sc_pid, sy->n_sc);
	SY_COL(&sy->sc, nr, sy->sc_nr, sy->n_sc);
	SY_COL(&sy->sc, ret, sy->sc_ret, sy->n_sc);
	SY_COL(&sy->sc, arg0, sy->sc_a0, sy->n_sc);
	SY_COL(&sy->sc, arg1, sy->sc_a1, sy->n_sc);
	SY_COL(&sy->sc, arg2, sy->sc_a2, sy->n_sc);
	SY_COL(&sy->sc, cpu, sy->sc_cpu, sy->n_sc);
	s->syscalls = &sy->sc;

	hostprof__sample_table__init(&sy->smp);
	synth_deltas(sy->smp_ts, sy->n_smp);
	SY_COL(&sy->smp, ts_delta, sy->smp_ts, sy->n_smp);
	SY_COL(&sy->smp, cpu, sy->smp_cpu, sy->n_smp);
	SY_COL(&sy->smp, tid, sy->smp_tid, sy->n_smp);
	SY_COL(&sy->smp, pid, sy->smp_pid, sy->n_smp);
	SY_COL(&sy->smp, kstack, sy->smp_k, sy->n_smp);
	SY_COL(&sy->smp, ustack, sy->smp_u, sy->n_smp);
	s->samples = &sy->smp;

	hostprof__irq_table__init(&sy->irq);
	synth_deltas(sy->irq_ts, sy->n_irq);
	SY_COL(&sy->irq, ts_delta, sy->irq_ts, sy->n_irq);
	SY_COL(&sy->irq, dur_ns, sy->irq_dur, sy->n_irq);
	SY_COL(&sy->irq, cpu, sy->irq_cpu, sy->n_irq);
	SY_COL(&sy->irq, kind, sy->irq_kind, sy->n_irq);
	SY_COL(&sy->irq, num, sy->irq_num, sy->n_irq);
	SY_COL(&sy->irq, name, sy->irq_name, sy->n_irq);
	SY_COL(&sy->irq, tid, sy->irq_tid, sy->n_irq);
	SY_COL(&sy->irq, pid, sy->irq_pid, sy->n_irq);
	SY_COL(&sy->irq, flags, sy->irq_flags, sy->n_irq);
	s->irqs = &sy->irq;

	hostprof__reclaim_table__init(&sy->rcl);
	synth_deltas(sy->rcl_ts, sy->n_rcl);
	SY_COL(&sy->rcl, ts_delta, sy->rcl_ts, sy->n_rcl);
	SY_COL(&sy->rcl, dur_ns, sy->rcl_dur, sy->n_rcl);
	SY_COL(&sy->rcl, tid, sy->rcl_tid, sy->n_rcl);
	SY_COL(&sy->rcl, pid, sy->rcl_pid, sy->n_rcl);
	SY_COL(&sy->rcl, kind, sy->rcl_kind, sy->n_rcl);
	SY_COL(&sy->rcl, order, sy->rcl_order, sy->n_rcl);
	SY_COL(&sy->rcl, gfp, sy->rcl_gfp, sy->n_rcl);
	SY_COL(&sy->rcl, result, sy->rcl_result, sy->n_rcl);
	SY_COL(&sy->rcl, cpu, sy->rcl_cpu, sy->n_rcl);
	s->reclaims = &sy->rcl;

	hostprof__fault_table__init(&sy->flt);
	synth_deltas(sy->flt_ts, sy->n_flt);
	SY_COL(&sy->flt, ts_delta, sy->flt_ts, sy->n_flt);
	SY_COL(&sy->flt, dur_ns, sy->flt_dur, sy->n_flt);
	SY_COL(&sy->flt, tid, sy->flt_tid, sy->n_flt);
	SY_COL(&sy->flt, pid, sy->flt_pid, sy->n_flt);
	SY_COL(&sy->flt, faults, sy->flt_faults, sy->n_flt);
	SY_COL(&sy->flt, write, sy->flt_write, sy->n_flt);
	SY_COL(&sy->flt, exec, sy->flt_exec, sy->n_flt);
	SY_COL(&sy->flt, prot, sy->flt_prot, sy->n_flt);
	SY_COL(&sy->flt, minor, sy->flt_minor, sy->n_flt);
	SY_COL(&sy->flt, major, sy->flt_major, sy->n_flt);
	s->faults = &sy->flt;

	hostprof__lock_table__init(&sy->lck);
	synth_deltas(sy->lck_ts, sy->n_lck);
	SY_COL(&sy->lck, ts_delta, sy->lck_ts, sy->n_lck);
	SY_COL(&sy->lck, dur_ns, sy->lck_dur, sy->n_lck);
	SY_COL(&sy->lck, tid, sy->lck_tid, sy->n_lck);
	SY_COL(&sy->lck, pid, sy->lck_pid, sy->n_lck);
	SY_COL(&sy->lck, lock, sy->lck_lock, sy->n_lck);
	SY_COL(&sy->lck, flags, sy->lck_flags, sy->n_lck);
	SY_COL(&sy->lck, ret, sy->lck_ret, sy->n_lck);
	SY_COL(&sy->lck, kstack, sy->lck_k, sy->n_lck);
	SY_COL(&sy->lck, cpu, sy->lck_cpu, sy->n_lck);
	SY_COL(&sy->lck, name, sy->lck_name, sy->n_lck);
	s->locks = &sy->lck;
#undef SY_COL

	s->strings = sy->strings;
	s->threads = sy->thp;
	s->frames = sy->frp;
	s->stacks = sy->stp;
	return s;
}

#endif /* HOSTPROF_TESTS_SYNTH_H */
