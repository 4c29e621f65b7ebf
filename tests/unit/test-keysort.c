// SPDX-License-Identifier: GPL-2.0-only
/*
 * lib/keysort.c against qsort: random keys of every width (one byte varying, the high ones,
 * all eight, all equal), many duplicates, sizes from 0 to a few thousand; the order is
 * qsort's on (key, position), so stable, and a two-key sort done as two keysorts is the
 * order of both keys.
 */
#include <stdlib.h>

#include "check.h"
#include "keysort.h"

static uint64_t rnd_state = 0x9e3779b97f4a7c15ull;

static uint64_t rnd(void)
{
	rnd_state ^= rnd_state << 13;
	rnd_state ^= rnd_state >> 7;
	rnd_state ^= rnd_state << 17;
	return rnd_state;
}

static int cmp_key_pos(const void *a, const void *b)
{
	const struct keyed *x = a, *y = b;

	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	return x->val < y->val ? -1 : x->val > y->val;
}

struct two {
	uint64_t hi, lo, pos;
};

static int cmp_two(const void *a, const void *b)
{
	const struct two *x = a, *y = b;

	if (x->hi != y->hi)
		return x->hi < y->hi ? -1 : 1;
	if (x->lo != y->lo)
		return x->lo < y->lo ? -1 : 1;
	return x->pos < y->pos ? -1 : x->pos > y->pos;
}

/* keys: rnd() & mask, shifted left by shift */
static void one(size_t n, uint64_t mask, unsigned shift)
{
	struct keyed *v = malloc((n + 1) * sizeof(*v)), *tmp = malloc((n + 1) * sizeof(*tmp)),
		     *want = malloc((n + 1) * sizeof(*want));
	bool same = true;

	for (size_t i = 0; i < n; i++)
		want[i] = v[i] = (struct keyed){ (rnd() & mask) << shift, i }; /* val: its position */
	qsort(want, n, sizeof(*want), cmp_key_pos);
	keysort(v, tmp, n);
	for (size_t i = 0; i < n; i++)
		same &= v[i].key == want[i].key && v[i].val == want[i].val;
	CHECKF(same, "n %zu mask %#llx shift %u", n, (unsigned long long)mask, shift);
	free(v);
	free(tmp);
	free(want);
}

static void two_keys(size_t n)
{
	struct keyed *v = malloc((n + 1) * sizeof(*v)), *tmp = malloc((n + 1) * sizeof(*tmp));
	struct two *t = malloc((n + 1) * sizeof(*t)), *want = malloc((n + 1) * sizeof(*want));
	bool same = true;

	for (size_t i = 0; i < n; i++)
		want[i] = t[i] = (struct two){ rnd() % 7, rnd() % 1000 << 20, i };
	qsort(want, n, sizeof(*want), cmp_two);
	for (size_t i = 0; i < n; i++)
		v[i] = (struct keyed){ t[i].lo, i }; /* the less significant key first */
	keysort(v, tmp, n);
	for (size_t i = 0; i < n; i++)
		v[i].key = t[v[i].val].hi;
	keysort(v, tmp, n);
	for (size_t i = 0; i < n; i++)
		same &= v[i].val == want[i].pos;
	CHECKF(same, "two keys, n %zu", n);
	free(v);
	free(tmp);
	free(t);
	free(want);
}

int main(void)
{
	static const size_t sizes[] = { 0, 1, 2, 3, 17, 64, 255, 256, 1000, 4099 };
	static const uint64_t masks[] = { 0, 1, 0xff, 0xfff, 0xffffffff, UINT64_MAX };

	for (size_t s = 0; s < sizeof(sizes) / sizeof(*sizes); s++) {
		for (size_t m = 0; m < sizeof(masks) / sizeof(*masks); m++) {
			one(sizes[s], masks[m], 0);
			if (masks[m] != UINT64_MAX)
				one(sizes[s], masks[m], 40); /* the high bytes vary, the low ones not */
		}
		two_keys(sizes[s]);
	}
	return check_summary();
}
