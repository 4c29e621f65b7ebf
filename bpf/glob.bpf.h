/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Glob match of a task name against a pattern compiled by lib/glob.c (struct hp_glob):
 * a shift-and automaton, one step per name character, at most HP_COMM_LEN steps of
 * constant work, so the verifier sees a short bounded loop.
 */
#ifndef HOSTPROF_GLOB_BPF_H
#define HOSTPROF_GLOB_BPF_H

#include "hostprof.h"

static __always_inline bool glob_match(const struct hp_glob *g, const char *name)
{
	__u32 state = 1;

	state |= (state & g->epsilon) << 1;
	for (int i = 0; i < HP_COMM_LEN; i++) {
		__u8 c = name[i];

		if (!c)
			break;
		state = ((state << 1) & g->charmask[c]) | (state & g->self_loop);
		state |= (state & g->epsilon) << 1;
	}
	return state & g->accept;
}

#endif /* HOSTPROF_GLOB_BPF_H */
