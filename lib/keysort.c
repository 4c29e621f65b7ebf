// SPDX-License-Identifier: GPL-2.0-only
/* A stable LSD radix sort of (key, value) pairs; see keysort.h. */
#include <string.h>

#include "keysort.h"

/* One counting pass on byte b of the keys, from src into dst, stable. */
static void pass(const struct keyed *src, struct keyed *dst, size_t n, unsigned b)
{
	size_t count[256] = { 0 }, pos = 0;

	for (size_t i = 0; i < n; i++)
		count[(src[i].key >> (8 * b)) & 0xff]++;
	for (unsigned d = 0; d < 256; d++) {
		size_t c = count[d];

		count[d] = pos;
		pos += c;
	}
	for (size_t i = 0; i < n; i++)
		dst[count[(src[i].key >> (8 * b)) & 0xff]++] = src[i];
}

void keysort(struct keyed *v, struct keyed *tmp, size_t n)
{
	uint64_t all = UINT64_MAX, any = 0, differ;
	struct keyed *src = v, *dst = tmp, *t;

	if (n < 2)
		return;
	for (size_t i = 0; i < n; i++) {
		all &= v[i].key;
		any |= v[i].key;
	}
	differ = all ^ any; /* the bits in which some keys differ */
	for (unsigned b = 0; b < 8; b++) {
		if (!((differ >> (8 * b)) & 0xff))
			continue;
		pass(src, dst, n, b);
		t = src;
		src = dst;
		dst = t;
	}
	if (src != v)
		memcpy(v, src, n * sizeof(*v));
}
