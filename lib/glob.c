// SPDX-License-Identifier: GPL-2.0-only
/* Compiling thread-name globs for the kernel's shift-and matcher; see hostprof.h. */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "glob.h"

bool thread_glob_valid(const char *pat)
{
	size_t n = strlen(pat);

	return n > 0 && n < HP_COMM_LEN;
}

int thread_glob_compile(const char *pat, struct hp_glob *ret)
{
	struct hp_glob g = {};
	char folded[HP_COMM_LEN];
	size_t m = 0;

	if (!thread_glob_valid(pat))
		return -EINVAL;
	/* "a**b" is "a*b": one epsilon step then covers every star */
	for (const char *p = pat; *p; p++)
		if (!(*p == '*' && m && folded[m - 1] == '*'))
			folded[m++] = *p;
	for (size_t j = 0; j < m; j++) {
		if (folded[j] == '*') {
			g.self_loop |= 1u << (j + 1);
			g.epsilon |= 1u << j;
		} else if (folded[j] == '?') {
			for (int c = 1; c < 256; c++)
				g.charmask[c] |= 1u << (j + 1);
		} else {
			g.charmask[(unsigned char)folded[j]] |= 1u << (j + 1);
		}
	}
	g.accept = 1u << m;
	*ret = g;
	return 0;
}

bool thread_glob_run(const struct hp_glob *g, const char *name)
{
	uint32_t state = 1;

	state |= (state & g->epsilon) << 1;
	for (int i = 0; i < HP_COMM_LEN && name[i]; i++) {
		state = ((state << 1) & g->charmask[(unsigned char)name[i]]) | (state & g->self_loop);
		state |= (state & g->epsilon) << 1;
	}
	return state & g->accept;
}

bool thread_glob_match(const char *pat, const char *name)
{
	struct hp_glob g;

	return thread_glob_compile(pat, &g) == 0 && thread_glob_run(&g, name);
}
