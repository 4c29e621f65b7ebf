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
 */
#include "hostprof.bpf.h"
#include "faults.bpf.h"
#include "stacks.bpf.h"

/* On-CPU sample: the task running on this CPU, with kernel and user stacks. */
SEC("perf_event")
int on_cpu_sample(struct bpf_perf_event_data *ctx)
{
	__u64 cur = bpf_get_current_pid_tgid();
	__u32 pid = cur >> 32, tid = (__u32)cur;
	struct hp_sample *e;
	struct scratch *s;
	__u32 k, u, size;
	long r;

	if (!tid || !is_watched(pid))
		return 0;
	if (intf_mask & HP_INTF_FAULTS) {
		struct task *t = task_get(tid, false);

		if (t)
			faults_flush((struct task_struct *)bpf_get_current_task(), t, tid, pid,
				     bpf_ktime_get_boot_ns(), false, false);
	}
	e = scratch_get(&s);
	if (!e)
		return 0;
	fill_hdr(&e->hdr, HP_EV_SAMPLE, 0, bpf_ktime_get_boot_ns());
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
	return 0;
}
