/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * BPF-only: the per-thread, per-number log2 histograms of syscall durations (hist_slots),
 * for syscalls.bpf.c and for the GIL's waits (gil.bpf.h, from syscalls.bpf.c or, with
 * syscalls = blocking, sched.bpf.c).
 */
#ifndef HOSTPROF_HIST_BPF_H
#define HOSTPROF_HIST_BPF_H

#include "hostprof.bpf.h"

static __always_inline __u32 hist_bucket(__u64 ns)
{
	__u64 us = ns / 1000;
	__u32 b;

	if (us == 0)
		return 0;
	b = us >> 32 ? 31 : highest_bit(us);
	return b < HP_HIST_BUCKETS ? b : HP_HIST_BUCKETS - 1;
}

/*
 * The histogram slot of (pid, tid, nr): from the thread's cache of its recent syscall
 * numbers, else from hist_index, else a free slot taken for it. 0 with *ret_slot set, or
 * -1 (counted when no slot is left: HP_STAT_HIST_FULL).
 */
static __always_inline int hist_slot(struct task *t, __u32 pid, __u32 tid, __u32 nr, __u32 *ret_slot)
{
	struct hp_hist_key key = { .pid = pid, .tid = tid, .nr = nr };
	__u32 c = nr & (HIST_CACHE - 1), gen = hist_gen, slot, *found;

	if (t->hist_gen != gen) {
		/* slots were given back since it cached them: forget them all */
		for (int i = 0; i < HIST_CACHE; i++)
			t->hist_nr[i] = 0;
		t->hist_gen = gen;
	}
	if (t->hist_nr[c] == nr + 1) {
		*ret_slot = t->hist_slot[c];
		return 0;
	}
	found = bpf_map_lookup_elem(&hist_index, &key);
	if (found) {
		slot = *found;
	} else {
		if (bpf_map_pop_elem(&hist_free, &slot)) {
			stat_inc(HP_STAT_HIST_FULL);
			return -1;
		}
		if (bpf_map_update_elem(&hist_index, &key, &slot, BPF_NOEXIST)) {
			/* the index is full: the slot goes back */
			bpf_map_push_elem(&hist_free, &slot, 0);
			stat_inc(HP_STAT_HIST_FULL);
			return -1;
		}
	}
	/* (x32's numbers, with bit 30 set, do not fit the cache: always looked up) */
	if (nr < 0xffff) {
		t->hist_nr[c] = nr + 1;
		t->hist_slot[c] = slot;
	}
	*ret_slot = slot;
	return 0;
}

/* Only this thread writes its own slots: no atomics needed. */
static __always_inline void hist_add(struct task *t, __u32 pid, __u32 tid, __u32 nr, __u64 dur)
{
	struct hp_hist_slot *h;
	__u32 slot, b;

	if (hist_slot(t, pid, tid, nr, &slot))
		return;
	h = bpf_map_lookup_elem(&hist_slots, &slot);
	if (!h)
		return;
	h->total_ns += dur;
	if (dur > h->max_ns)
		h->max_ns = dur;
	b = hist_bucket(dur);
	if (b < HP_HIST_BUCKETS)
		h->buckets[b]++;
}

#endif
