// SPDX-License-Identifier: GPL-2.0-only
/*
 * On-CPU stack samples: a perf_event program on cpu-clock at --sample-hz on every CPU,
 * attached while sampling is on. A sample of a watched thread is its kernel and user
 * stacks; with --interference faults it also sends the thread's fault counts once their
 * period is over (faults.bpf.h), so a thread that faults without blocking still reports.
 *
 * Filters: a sample of an idle CPU or of an unwatched process returns after one
 * watch_filter load.
 *
 * Cost: two stack walks per sample of a watched thread (~2.4 us,
 * bench/results/latest.md), written in the scratch slot of its nesting level (it can
 * interrupt a tracepoint program on the same CPU) and copied out at its exact size.
 *
 * --unwind: the sample also copies the user registers and the top of the user stack
 * (unwind_bytes, in page-aligned chunks: bpf_probe_read_user reads all or nothing, and the
 * copy stops at the first page it cannot read), an HP_EV_RAWSAMPLE built in rawbuf, which
 * the daemon unwinds from CFI as it drains it (~1-3 us more here for 16 KiB, README).
 */
#include "hostprof.bpf.h"
#include "faults.bpf.h"
#include "python.bpf.h"
#include "stacks.bpf.h"
#include "ucopy.bpf.h"

/*
 * The sample as HP_EV_RAWSAMPLE: the stacks as on_cpu_sample takes them, then the
 * registers and the copy. false: not written for a reason the plain sample does not
 * share (the registers unreadable), so that one is taken instead.
 */
static __always_inline bool sample_raw(struct bpf_perf_event_data *ctx, __u32 pid, __u32 tid, __u64 ts)
{
	__u32 key = RAWBUF_SAMPLE, k, u, len;
	struct hp_rawsample *e;
	__u64 sp;
	long r;

	e = bpf_map_lookup_elem(&rawbuf, &key);
	if (!e)
		return false;
	sp = copy_regs(e);
	if (!sp)
		return false;
	fill_hdr(&e->hdr, HP_EV_RAWSAMPLE, 0, ts);
	e->tid = tid;
	e->pid = pid;
	e->stack_flags = 0;
	e->place = 0;
	r = bpf_get_stack(ctx, e->frames, HP_MAX_STACK * sizeof(__u64), 0);
	k = stack_frames(r, &e->stack_flags, HP_STACK_KTRUNC, HP_STACK_KFAIL);
	if (k > HP_MAX_STACK)
		k = HP_MAX_STACK;
	r = bpf_get_stack(ctx, &e->frames[k], HP_MAX_STACK * sizeof(__u64), BPF_F_USER_STACK);
	u = stack_frames(r, &e->stack_flags, HP_STACK_UTRUNC, HP_STACK_UFAIL);
	if (u > HP_MAX_STACK)
		u = HP_MAX_STACK;
	e->kstack_len = k;
	e->ustack_len = u;
	/* the copy, after the frames */
	len = copy_stack((__u8 *)e->frames + (k + u) * sizeof(__u64), sp);
	e->stack_len = len;
	len += sizeof(*e) + (k + u) * sizeof(__u64);
	e->hdr.size = len;
	ring_output_max(e, len, HP_MAX_RAW_RECORD);
	return true;
}

/* On-CPU sample: the task running on this CPU, with kernel and user stacks. */
SEC("perf_event")
int on_cpu_sample(struct bpf_perf_event_data *ctx)
{
	__u64 cur = bpf_get_current_pid_tgid();
	__u32 pid = cur >> 32, tid = (__u32)cur;
	const struct hp_py_proc *pp;
	struct hp_sample *e;
	struct scratch *s;
	__u32 k, u, size;
	__u64 ts;
	long r;

	if (!tid || !is_watched(pid))
		return 0;
	if (intf_mask & HP_INTF_FAULTS) {
		struct task *t = task_lookup(use_task_storage ? bpf_get_current_task_btf() : NULL, tid, true);

		if (t)
			faults_flush((struct task_struct *)bpf_get_current_task(), t, tid, pid,
				     bpf_ktime_get_boot_ns(), false, false);
	}
	ts = bpf_ktime_get_boot_ns();
	if (want_copy() && sample_raw(ctx, pid, tid, ts))
		goto python;
	e = scratch_get(&s);
	if (!e)
		return 0;
	fill_hdr(&e->hdr, HP_EV_SAMPLE, 0, ts);
	e->tid = tid;
	e->pid = pid;
	e->stack_flags = 0;
	r = bpf_get_stack(ctx, e->frames, HP_MAX_STACK * sizeof(__u64), 0);
	k = stack_frames(r, &e->stack_flags, HP_STACK_KTRUNC, HP_STACK_KFAIL);
	if (k > HP_MAX_STACK)
		k = HP_MAX_STACK;
	r = bpf_get_stack(ctx, &e->frames[k], HP_MAX_STACK * sizeof(__u64), BPF_F_USER_STACK);
	u = stack_frames(r, &e->stack_flags, HP_STACK_UTRUNC, HP_STACK_UFAIL);
	if (u > HP_MAX_STACK)
		u = HP_MAX_STACK;
	e->kstack_len = k;
	e->ustack_len = u;
	size = sizeof(*e) + (k + u) * sizeof(__u64);
	e->hdr.size = size;
	ring_output(e, size);
	scratch_put(s);
python:
	/* a CPython process: its Python stack too, keyed to the sample */
	pp = py_proc_of(pid);
	if (pp)
		py_emit(pp, HP_PY_FOR_SAMPLE, ts, pid, tid);
	return 0;
}
