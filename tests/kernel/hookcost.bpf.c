// SPDX-License-Identifier: GPL-2.0-only
/*
 * hookcost: the same syscall hook attached two ways, to measure what each costs a syscall
 * (tests/kernel/hookcost.c drives it; nothing of hostprof's daemon loads this object).
 *
 * The hook does what hostprof's sys_enter/sys_exit do for one call, in miniature: at entry
 * one lookup of the caller's tgid in `watched` (the only work for an unwatched caller),
 * and for a watched one its entry time and syscall number in `start`; at exit the same
 * lookup, then the duration into the thread's log2 histogram of that syscall in `hist`.
 *  - rawtp_*: raw_tp on sys_enter/sys_exit, as hostprof attaches today: every syscall of
 *    every task of the machine runs it (and takes the kernel's slow syscall path).
 *  - fentry_* / fexit_*: a BPF trampoline on the one syscall function, getppid's (its
 *    name differs by kernel and architecture, hookcost.c picks it from the kernel's BTF):
 *    only calls of that syscall run it.
 * Cost per event: a hash lookup (unwatched); at entry one more update, at exit two more
 * lookups and a few adds (watched).
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

char LICENSE[] SEC("license") = "GPL";

#define HIST_BUCKETS 32

struct start {
	__u64 ts;
	__u32 nr;
	__u32 pad;
};

struct hist_key {
	__u32 tid;
	__u32 nr;
};

struct hist {
	__u64 count;
	__u64 total_ns;
	__u64 buckets[HIST_BUCKETS];
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 64);
	__type(key, __u32);
	__type(value, __u32);
} watched SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, __u32);
	__type(value, struct start);
} start SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, struct hist_key);
	__type(value, struct hist);
} hist SEC(".maps");

/* floor(log2(v)) for v > 0, with shifts (clang 14 miscompiles __builtin_clz for BPF) */
static __always_inline __u32 log2_u64(__u64 v)
{
	__u32 r = 0;

	for (__u32 s = 32; s; s >>= 1) {
		if (v >> s) {
			v >>= s;
			r += s;
		}
	}
	return r;
}

static __always_inline int enter(__u32 nr)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tgid = id >> 32, tid = (__u32)id;
	struct start st = { .nr = nr };

	if (!bpf_map_lookup_elem(&watched, &tgid))
		return 0;
	st.ts = bpf_ktime_get_ns();
	bpf_map_update_elem(&start, &tid, &st, BPF_ANY);
	return 0;
}

static __always_inline int leave(void)
{
	__u64 id = bpf_get_current_pid_tgid(), dur;
	__u32 tgid = id >> 32, b;
	struct hist_key key = { .tid = (__u32)id };
	struct start *st;
	struct hist *h;

	if (!bpf_map_lookup_elem(&watched, &tgid))
		return 0;
	st = bpf_map_lookup_elem(&start, &key.tid);
	if (!st)
		return 0;
	dur = bpf_ktime_get_ns() - st->ts;
	key.nr = st->nr;
	h = bpf_map_lookup_elem(&hist, &key);
	if (!h) {
		struct hist zero = {};

		bpf_map_update_elem(&hist, &key, &zero, BPF_NOEXIST);
		h = bpf_map_lookup_elem(&hist, &key);
		if (!h)
			return 0;
	}
	h->count++;
	h->total_ns += dur;
	b = dur ? log2_u64(dur) : 0;
	if (b < HIST_BUCKETS)
		h->buckets[b]++;
	return 0;
}

SEC("raw_tp/sys_enter")
int BPF_PROG(rawtp_enter, struct pt_regs *regs, long id)
{
	return enter(id);
}

SEC("raw_tp/sys_exit")
int rawtp_exit(void *ctx)
{
	return leave();
}

#if defined(__TARGET_ARCH_x86)
#define NR_GETPPID 110
#elif defined(__TARGET_ARCH_arm64)
#define NR_GETPPID 173
#else
#error "hookcost: no getppid number for this architecture"
#endif

/* attached to getppid's function by name: bpf_program__set_attach_target() in hookcost.c */
SEC("fentry")
int fentry_getppid(void *ctx)
{
	return enter(NR_GETPPID);
}

SEC("fexit")
int fexit_getppid(void *ctx)
{
	return leave();
}
