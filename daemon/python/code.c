// SPDX-License-Identifier: GPL-2.0-only
/*
 * Code objects: what a frame's code pointer names (qualified name, file, first line, line
 * table), cached per process by address.
 *
 * An address is not an identity: a code object can be freed and its memory given to another
 * one. So the cache keeps, with each entry, the fields that tell code objects apart (its type,
 * the addresses of its file name, name, qualified name and line table, its first line and its
 * length), and every use compares them with the object's head as it is now, read with the
 * frame. An entry that no longer matches is dropped (counted, code_stale) and the object read
 * anew. For two objects to pass as one, the second would have to sit at the same address and
 * point at the same string and bytes objects (which the first held alive) with the same first
 * line and length: then what it says is the same too.
 *
 * A BPF walk can read the same head fields in the kernel and hand them in with the pointer:
 * the check then needs no read at all, and works after the process is gone.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "macro.h"

void py_code_check_from(const struct py_target *t, const uint8_t *head, struct py_code_check *ret)
{
	const struct py_offsets *o = &t->off;

	*ret = (struct py_code_check){
		.type = py_u64(head, o->ob_type),
		.filename = py_u64(head, o->co_filename),
		.name = py_u64(head, o->co_name),
		.qualname = o->co_qualname >= 0 ? py_u64(head, o->co_qualname) : 0,
		.linetable = py_u64(head, o->co_linetable),
		.first_line = py_u32(head, o->co_firstlineno),
		.n_units = o->co_code_adaptive >= 0 ? py_u64(head, o->var_size) : 0,
	};
}

static bool check_same(const struct py_code_check *a, const struct py_code_check *b)
{
	return a->type == b->type && a->filename == b->filename && a->name == b->name &&
	       a->qualname == b->qualname && a->linetable == b->linetable && a->first_line == b->first_line &&
	       a->n_units == b->n_units;
}

static void code_free(struct py_code *code)
{
	free(code->function);
	free(code->file);
	free(code->lines);
	free(code);
}

struct py_code *py_code_copy(const struct py_code *code)
{
	struct py_code *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	*c = *code;
	c->refs = 1;
	c->function = strdup(code->function);
	c->file = strdup(code->file);
	c->lines = NULL;
	if (code->lines) {
		c->lines = malloc(code->n_lines ? code->n_lines : 1);
		if (c->lines)
			memcpy(c->lines, code->lines, code->n_lines);
	}
	if (!c->function || !c->file || (code->lines && !c->lines)) {
		code_free(c);
		return NULL;
	}
	return c;
}

bool py_code_same(const struct py_code *a, const struct py_code *b)
{
	return a->addr == b->addr && check_same(&a->check, &b->check) && !strcmp(a->function, b->function) &&
	       !strcmp(a->file, b->file);
}

void py_code_put(struct py_code *code)
{
	if (code && !--code->refs)
		code_free(code);
}

static size_t slot_of(const struct py_code_cache *c, uint64_t addr)
{
	uint64_t h = addr >> 3;

	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdull;
	h ^= h >> 33;
	return h & (c->cap - 1);
}

static struct py_code **cache_find(struct py_code_cache *c, uint64_t addr)
{
	if (!c->cap)
		return NULL;
	for (size_t i = slot_of(c, addr), n = 0; n < c->cap; i = (i + 1) & (c->cap - 1), n++) {
		if (!c->slots[i])
			return NULL;
		if (c->slots[i]->addr == addr)
			return &c->slots[i];
	}
	return NULL;
}

/* Removes the entry in *slot, moving back the ones after it (linear probing). */
static void cache_remove(struct py_code_cache *c, struct py_code **slot)
{
	size_t i = slot - c->slots, j = i;

	py_code_put(*slot);
	c->slots[i] = NULL;
	c->n--;
	for (;;) {
		size_t k;

		j = (j + 1) & (c->cap - 1);
		if (!c->slots[j])
			return;
		k = slot_of(c, c->slots[j]->addr);
		/* slots[j] may move to i when its home k does not lie in (i, j] */
		if ((j > i && (k <= i || k > j)) || (j < i && k <= i && k > j)) {
			c->slots[i] = c->slots[j];
			c->slots[j] = NULL;
			i = j;
		}
	}
}

static int cache_grow(struct py_code_cache *c)
{
	size_t cap = c->cap ? c->cap * 2 : 256;
	struct py_code **old = c->slots, **slots = calloc(cap, sizeof(*slots));
	size_t old_cap = c->cap;

	if (!slots)
		return -ENOMEM;
	c->slots = slots;
	c->cap = cap;
	for (size_t i = 0; i < old_cap; i++) {
		size_t j;

		if (!old[i])
			continue;
		for (j = slot_of(c, old[i]->addr); slots[j]; j = (j + 1) & (cap - 1))
			;
		slots[j] = old[i];
	}
	free(old);
	return 0;
}

static void cache_add(struct py_code_cache *c, struct py_code *code)
{
	size_t j;

	if (c->n >= PY_CODE_CACHE_MAX)
		return; /* full: this one is used uncached */
	if ((c->n + 1) * 2 > c->cap && cache_grow(c) < 0)
		return;
	for (j = slot_of(c, code->addr); c->slots[j]; j = (j + 1) & (c->cap - 1))
		;
	c->slots[j] = code;
	code->refs++;
	c->n++;
}

void py_code_cache_done(struct py_code_cache *c)
{
	for (size_t i = 0; i < c->cap; i++)
		py_code_put(c->slots[i]);
	free(c->slots);
	*c = (struct py_code_cache){};
}

static int code_read(struct py_mem *m, const struct py_target *t, uint64_t addr,
		     const struct py_code_check *check, const uint8_t *head, struct py_code **ret)
{
	char buf[PY_STR_BYTES_MAX + 8];
	struct py_code *code;
	int r;

	code = calloc(1, sizeof(*code));
	if (!code)
		return -ENOMEM;
	code->addr = addr;
	code->check = *check;
	code->first_line = check->first_line;
	code->firsttraceable =
		t->off.co_firsttraceable >= 0 ? (int32_t)py_u32(head, t->off.co_firsttraceable) : 0;
	code->refs = 1;
	/* a code object whose name, file or line table is not what it should be is no code object */
	r = py_read_str(m, t, check->qualname ? check->qualname : check->name, buf, sizeof(buf));
	if (r >= 0 && !(code->function = strdup(buf)))
		r = -ENOMEM;
	if (r >= 0)
		r = py_read_str(m, t, check->filename, buf, sizeof(buf));
	if (r >= 0 && !(code->file = strdup(buf)))
		r = -ENOMEM;
	if (r >= 0) {
		r = py_read_bytes(m, t, check->linetable, PY_LINETABLE_MAX, &code->lines, &code->n_lines);
		if (r == -E2BIG) /* a line table too large to read: its lines are not known */
			r = 0;
	}
	if (r < 0) {
		code_free(code);
		return r;
	}
	*ret = code;
	return 0;
}

int py_code_get(struct py_code_cache *c, struct py_mem *m, const struct py_target *t, uint64_t addr,
		const uint8_t *head, struct py_code **ret)
{
	struct py_code_check check;
	struct py_code **slot, *code;
	int r;

	py_code_check_from(t, head, &check);
	if (check.type != t->code_type) {
		m->counts->code_unreadable++;
		return -EBADMSG;
	}
	slot = cache_find(c, addr);
	if (slot && check_same(&(*slot)->check, &check)) {
		m->counts->code_hits++;
		(*slot)->refs++;
		*ret = *slot;
		return 0;
	}
	if (slot) {
		m->counts->code_stale++;
		cache_remove(c, slot);
	}
	m->counts->code_misses++;
	r = code_read(m, t, addr, &check, head, &code);
	if (r < 0) {
		if (r == -EBADMSG)
			m->counts->code_unreadable++;
		return r;
	}
	cache_add(c, code);
	*ret = code;
	return 0;
}

uint32_t py_code_line(const struct py_target *t, const struct py_code *code, int64_t lasti)
{
	if (!code->lines)
		return lasti < 0 ? code->first_line : 0;
	return py_line_for(t->off.lines, code->lines, code->n_lines, code->first_line, lasti);
}
