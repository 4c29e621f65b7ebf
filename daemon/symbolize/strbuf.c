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

/* ---- names that never move: demangled names, DWARF's file and function names ---- */

#define NAME_CHUNK_BYTES 65536

struct name_chunk {
	struct name_chunk *next;
	size_t used, cap;
	char data[];
};

static const char *name_store(struct name_table *t, const char *s, size_t n)
{
	struct name_chunk *c = t->chunks;
	char *p;

	if (!c || c->cap - c->used < n + 1) {
		size_t cap = MAX((size_t)NAME_CHUNK_BYTES, n + 1);

		if (t->bytes + cap > NAMES_BYTES_MAX)
			return NULL;
		c = malloc(sizeof(*c) + cap);
		if (!c)
			return NULL;
		c->used = 0;
		c->cap = cap;
		c->next = t->chunks;
		t->chunks = c;
		t->bytes += cap;
	}
	p = c->data + c->used;
	memcpy(p, s, n);
	p[n] = 0;
	c->used += n + 1;
	return p;
}

static size_t name_slot(const struct name_table *t, uint64_t h, const char *key, size_t n)
{
	size_t mask = t->cap - 1, i = h & mask;

	while (t->slots[i].key &&
	       (t->slots[i].hash != h || strncmp(t->slots[i].key, key, n) || t->slots[i].key[n]))
		i = (i + 1) & mask;
	return i;
}

const char *name_table_get(const struct name_table *t, const char *key, size_t n)
{
	uint64_t h = fnv1a(FNV_OFFSET, key, n);
	size_t i;

	if (!t->cap)
		return NULL;
	i = name_slot(t, h, key, n);
	return t->slots[i].key ? t->slots[i].value : NULL;
}

static int name_grow(struct name_table *t)
{
	size_t cap = t->cap ? 2 * t->cap : 1024;
	struct name_entry *slots = calloc(cap, sizeof(*slots));

	if (!slots)
		return -ENOMEM;
	for (size_t i = 0; i < t->cap; i++) {
		const struct name_entry *e = &t->slots[i];
		size_t j;

		if (!e->key)
			continue;
		for (j = e->hash & (cap - 1); slots[j].key; j = (j + 1) & (cap - 1))
			;
		slots[j] = *e;
	}
	free(t->slots);
	t->slots = slots;
	t->cap = cap;
	return 0;
}

const char *name_table_put(struct name_table *t, const char *key, size_t n, const char *value, size_t vn)
{
	uint64_t h = fnv1a(FNV_OFFSET, key, n);
	const char *k, *v;
	size_t i;

	if ((t->n + 1) * 2 > t->cap && name_grow(t) < 0)
		return NULL;
	i = name_slot(t, h, key, n);
	if (t->slots[i].key)
		return t->slots[i].value;
	k = name_store(t, key, n);
	v = k && value ? name_store(t, value, vn) : k;
	if (!k || !v) {
		t->full++;
		return NULL;
	}
	t->slots[i] = (struct name_entry){ .hash = h, .key = k, .value = v };
	t->n++;
	return v;
}

const char *name_intern(struct name_table *t, const char *key, size_t n)
{
	return name_table_put(t, key, n, NULL, 0);
}

size_t name_table_bytes(const struct name_table *t)
{
	return t->bytes + t->cap * sizeof(*t->slots);
}

void name_table_done(struct name_table *t)
{
	while (t->chunks) {
		struct name_chunk *c = t->chunks;

		t->chunks = c->next;
		free(c);
	}
	free(t->slots);
	*t = (struct name_table){};
}
