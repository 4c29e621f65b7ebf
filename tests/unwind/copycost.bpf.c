// SPDX-License-Identifier: GPL-2.0-only
/*
 * copycost: what the DWARF unwinder's BPF side would cost a sample, measured on the
 * sampled thread itself (tests/unwind/copycost.c drives it; the daemon does not load it).
 * A perf_event program on cpu-clock of one process does, per sample, what hostprof's
 * on_cpu_sample does today (the user stack by frame pointers, bpf_get_stack) and then what
 * the copy would add: the user registers (bpf_task_pt_regs) and copy_bytes of the stack
 * from the stack pointer up, in page-aligned chunks so that the copy stops at the first
 * page not mapped (bpf_probe_read_user is all or nothing: copy_cut counts copies that
 * reached the stack's end), into a per-CPU buffer, and,
 * with to_ring, the record through a ring buffer as the daemon would drain it. Each
 * part's time goes into per-CPU sums (bpf_ktime_get_ns around it).
 */
#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

char LICENSE[] SEC("license") = "GPL";

#define COPY_MAX 16384
#define FP_MAX 64
#define CHUNK 4096

const volatile __u32 target_tgid = 0;
const volatile __u32 copy_bytes = 0;
const volatile bool to_ring = false;

struct record {
	__u32 size, len, fp_len, pad;
	__u64 regs[18]; /* the pt_regs words the unwinder takes, by DWARF number (x86_64: 17) */
	__u64 fp[FP_MAX];
	__u8 stack[COPY_MAX + CHUNK];
};

struct stats {
	__u64 samples, fp_ns, regs_ns, copy_ns, ring_ns, bytes, copy_cut, ring_failed;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct record);
} bufs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct stats);
} stats SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 16 << 20);
} ring SEC(".maps");

SEC("perf_event")
int sample(struct bpf_perf_event_data *ctx)
{
	__u32 zero = 0;
	__u64 len = 0, want;
	struct pt_regs *regs;
	struct record *r;
	struct stats *st;
	__u64 t0, t1, t2, t3, sp;

	if (bpf_get_current_pid_tgid() >> 32 != target_tgid)
		return 0;
	r = bpf_map_lookup_elem(&bufs, &zero);
	st = bpf_map_lookup_elem(&stats, &zero);
	if (!r || !st)
		return 0;
	t0 = bpf_ktime_get_ns();
	{
		long n = bpf_get_stack(ctx, r->fp, sizeof(r->fp), BPF_F_USER_STACK);

		r->fp_len = n > 0 ? (__u64)n / 8 : 0;
	}
	t1 = bpf_ktime_get_ns();
	regs = (struct pt_regs *)bpf_task_pt_regs(bpf_get_current_task_btf());
#if defined(__TARGET_ARCH_x86)
	{
		struct pt_regs u; /* one read of the whole set, then in DWARF's order */

		if (bpf_probe_read_kernel(&u, sizeof(u), regs))
			return 0;
		r->regs[0] = u.ax;
		r->regs[1] = u.dx;
		r->regs[2] = u.cx;
		r->regs[3] = u.bx;
		r->regs[4] = u.si;
		r->regs[5] = u.di;
		r->regs[6] = u.bp;
		r->regs[7] = u.sp;
		r->regs[8] = u.r8;
		r->regs[9] = u.r9;
		r->regs[10] = u.r10;
		r->regs[11] = u.r11;
		r->regs[12] = u.r12;
		r->regs[13] = u.r13;
		r->regs[14] = u.r14;
		r->regs[15] = u.r15;
		r->regs[16] = u.ip;
		sp = u.sp;
	}
#else
	sp = PT_REGS_SP_CORE(regs);
	r->regs[0] = sp;
	r->regs[1] = PT_REGS_IP_CORE(regs);
#endif
	t2 = bpf_ktime_get_ns();
	/* page-aligned chunks: the first up to sp's page end, then whole pages */
	want = copy_bytes > COPY_MAX ? COPY_MAX : copy_bytes;
	for (int i = 0; i < COPY_MAX / CHUNK + 1; i++) {
		__u64 n;

		if (len >= want)
			break;
		n = CHUNK - ((sp + len) & (CHUNK - 1));
		if (n > want - len)
			n = want - len;
		n &= 2 * CHUNK - 1; /* bounds the verifier can follow */
		len &= 2 * COPY_MAX - 1;
		if (n == 0 || n > CHUNK || len > COPY_MAX)
			break;
		if (bpf_probe_read_user(&r->stack[len], n, (void *)(sp + len))) {
			st->copy_cut++;
			break;
		}
		len += n;
	}
	r->len = len;
	t3 = bpf_ktime_get_ns();
	st->samples++;
	st->fp_ns += t1 - t0;
	st->regs_ns += t2 - t1;
	st->copy_ns += t3 - t2;
	st->bytes += len;
	if (to_ring) {
		__u32 size = offsetof(struct record, stack) + len;

		if (size > sizeof(*r))
			size = sizeof(*r);
		r->size = size;
		t0 = bpf_ktime_get_ns();
		if (bpf_ringbuf_output(&ring, r, size, BPF_RB_NO_WAKEUP))
			st->ring_failed++;
		st->ring_ns += bpf_ktime_get_ns() - t0;
	}
	return 0;
}
