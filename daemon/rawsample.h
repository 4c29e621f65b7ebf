/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * On-CPU samples with their user stack copied (HP_EV_RAWSAMPLE, --unwind) made into the
 * samples the recorder keeps (HP_EV_SAMPLE), as the drain reads them: the user frames
 * unwound from CFI over the copy (symbolizer_sample_stack), the kernel frames as they came.
 * The stack bytes go no further than this.
 */
#ifndef HOSTPROF_RAWSAMPLE_H
#define HOSTPROF_RAWSAMPLE_H

#include "hostprof.h"

struct symbolizer;

/* Room for the sample made of one: at most HP_MAX_STACK frames of each stack. */
union rawsample_out {
	struct hp_sample sample;
	__u64 words[(sizeof(struct hp_sample) + 2 * HP_MAX_STACK * sizeof(__u64)) / sizeof(__u64)];
};

/*
 * raw (a record record_check passed) as an HP_EV_SAMPLE in *out, which the return value
 * points into. sym NULL: the frame-pointer walk's frames, as if no copy had been taken.
 */
const struct hp_hdr *rawsample_unwind(struct symbolizer *sym, const struct hp_rawsample *raw,
				      union rawsample_out *out);

/*
 * Off-CPU intervals' user stacks. An HP_EV_RAWUSTACK comes when a watched thread's user
 * stack is walked by frame pointers for an interval (at a switch-out where it blocks,
 * syscalls = blocking; at the syscall's exit, exact), before the interval's record
 * (HP_EV_OFFCPU, or HP_EV_USTACK), which may reuse that walk for later intervals from the
 * same place: each thread's latest copy is unwound as it comes and kept (by tid, in a
 * table of fixed size: a thread whose slot another took keeps frame pointers), and a
 * record whose user stack begins at the copy's pc takes its frames.
 */
struct rawustacks;
struct rawustacks *rawustacks_new(void);
void rawustacks_free(struct rawustacks *u);
void rawustack_note(struct rawustacks *u, struct symbolizer *sym, const struct hp_rawsample *raw);

union rawustack_out {
	struct hp_hdr hdr;
	__u64 words[HP_MAX_RECORD / sizeof(__u64)];
};

/* rec (HP_EV_OFFCPU or HP_EV_USTACK, record_check passed) with the unwound user frames in
 * *out, or rec itself (no copy matched, or the frame-pointer walk is better: counted). */
const struct hp_hdr *rawustack_apply(struct rawustacks *u, struct symbolizer *sym, const struct hp_hdr *rec,
				     union rawustack_out *out);

#endif
