// SPDX-License-Identifier: GPL-2.0-only
/* String tables: names appended NUL-terminated to one buffer, referred to by offset. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* Appends s[0..n) and a NUL; returns its offset or -errno. */
int64_t strbuf_add(struct strbuf *b, const char *s, size_t n, size_t max)
{
	size_t off = b->len;

	if (n + 1 > max - MIN(max, b->len))
		return -E2BIG;
	if (b->len + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 4096;
		char *p;

		while (cap < b->len + n + 1)
			cap *= 2;
		p = realloc(b->p, cap);
		if (!p)
			return -ENOMEM;
		b->p = p;
		b->cap = cap;
	}
	memcpy(b->p + off, s, n);
	b->p[off + n] = 0;
	b->len += n + 1;
	return off;
}

/* Shrinks the buffer to its length and hands it over. */
char *strbuf_take(struct strbuf *b)
{
	char *p = b->len ? realloc(b->p, b->len) : NULL;

	if (!p)
		p = b->p;
	if (!b->len) {
		free(b->p);
		p = NULL;
	}
	*b = (struct strbuf){};
	return p;
}
