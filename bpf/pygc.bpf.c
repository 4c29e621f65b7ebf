// SPDX-License-Identifier: GPL-2.0-only
/*
 * CPython's garbage-collection pauses (--python-gc, off by default): the interpreter's
 * USDT probes gc__start(int generation) and gc__done(Py_ssize_t collected), where its
 * build has them (Debian's python3.11 does; pyenv's builds without --with-dtrace do
 * not). The daemon attaches them per walked CPython process (a uprobe with that pid:
 * other processes of the same binary take no breakpoint), so a collection costs the
 * process two uprobe hits (~4 us each on this kernel) and one record.
 */
#include "hostprof.bpf.h"
#include "python.bpf.h"
#include <bpf/usdt.bpf.h> /* its <linux/errno.h> finds bpf/include-bpf/asm/errno.h */

struct py_gc_open {
	__u64 ts;
	__s32 generation;
	__u32 pad;
};

/* Collections in progress (key: tid): one per thread at most; removed at gc__done. */
HP_MAP(py_gc_open, BPF_MAP_TYPE_HASH, 4096, __u32, struct py_gc_open);
py_gc_open_map py_gc_open SEC(".maps");

SEC("usdt")
int BPF_USDT(py_gc_start, int generation)
{
	__u64 cur = bpf_get_current_pid_tgid();
	__u32 pid = cur >> 32, tid = (__u32)cur;
	struct py_gc_open o = { .generation = generation };

	if (!py_proc_of(pid))
		return 0;
	o.ts = bpf_ktime_get_boot_ns();
	if (bpf_map_update_elem(&py_gc_open, &tid, &o, BPF_ANY))
		stat_inc(HP_STAT_WAIT_FULL);
	return 0;
}

SEC("usdt")
int BPF_USDT(py_gc_done, long collected)
{
	__u64 cur = bpf_get_current_pid_tgid(), now = bpf_ktime_get_boot_ns();
	__u32 pid = cur >> 32, tid = (__u32)cur;
	struct py_gc_open *o = bpf_map_lookup_elem(&py_gc_open, &tid);
	struct hp_pygc *e;
	void *ring;

	if (!o)
		return 0;
	e = ring_reserve(&ring, sizeof(*e), HP_EV_PYGC, o->ts);
	if (e) {
		e->dur_ns = now - o->ts;
		e->tid = tid;
		e->pid = pid;
		e->generation = o->generation;
		e->pad = 0;
		e->collected = collected;
		ring_submit(ring, e);
	}
	bpf_map_delete_elem(&py_gc_open, &tid);
	return 0;
}
