/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * BPF-only: a watched thread's page faults over a period, from its own min_flt/maj_flt
 * counters plus the split page_fault_user adds, sent at its switch-outs, its samples and
 * its exit: from programs that run anyway, so the `faults` group has none of its own.
 */
#ifndef HOSTPROF_FAULTS_BPF_H
#define HOSTPROF_FAULTS_BPF_H

#include "hostprof.bpf.h"

#define FLT_PERIOD_NS (10 * 1000 * 1000ULL) /* a faulting thread's counts go out at most this often */

/* The fault counters of a thread start counting now. */
static __always_inline void faults_base(struct task_struct *p, struct task *t, __u64 now, bool btf)
{
	t->flt_since = now;
	t->flt_min0 = TASK_READ(btf, p, min_flt);
	t->flt_maj0 = TASK_READ(btf, p, maj_flt);
	t->flt_faults = t->flt_write = t->flt_exec = t->flt_prot = 0;
}

/*
 * Emit the page faults of thread p since flt_since: when `force` (it blocks or exits: the
 * period ends here) or once FLT_PERIOD_NS has passed. p is the current task, or one whose
 * counters only it changes.
 */
static __always_inline void faults_flush(struct task_struct *p, struct task *t, __u32 tid, __u32 pid, __u64 now,
					 bool force, bool btf)
{
	struct hp_faults *e;
	__u32 minor, major;
	__u64 since = t->flt_since;
	void *ring;

	if (!since) {
		faults_base(p, t, now, btf);
		return;
	}
	/* A sample's program can interrupt one of the thread's own that read `now` earlier
	 * (its exit, in process context) and start a period after it: that period ends here,
	 * empty of time. */
	if ((__s64)(now - since) < 0)
		now = since;
	if (!force && now - since < FLT_PERIOD_NS)
		return;
	minor = (__u32)TASK_READ(btf, p, min_flt) - t->flt_min0;
	major = (__u32)TASK_READ(btf, p, maj_flt) - t->flt_maj0;
	if (minor || major || t->flt_faults) {
		e = ring_reserve(&ring, sizeof(*e), HP_EV_FAULTS, since);
		if (e) {
			e->dur_ns = now - since;
			e->tid = tid;
			e->pid = pid;
			e->faults = t->flt_faults;
			e->write = t->flt_write;
			e->exec = t->flt_exec;
			e->prot = t->flt_prot;
			e->minor = minor;
			e->major = major;
			ring_submit(ring, e);
		}
	}
	faults_base(p, t, now, btf);
}

#endif /* HOSTPROF_FAULTS_BPF_H */
