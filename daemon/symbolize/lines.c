// SPDX-License-Identifier: GPL-2.0-only
/*
 * What DWARF lookups found, kept per file, so that a snapshot job opens a file's DWARF only
 * for addresses no job before it looked up: opening is most of the cost (libdw reads and
 * decompresses the debug sections whole: libc6-dbg's 10 MiB took a job 80-130 ms of its
 * ~330 ms here, libpython3.11-dbg's 21 MiB more), a lookup in the cache a hash probe, and a
 * training job's stacks go through the same few hundred addresses snapshot after snapshot.
 *
 * A job is a fork of the daemon: it inherits the cache as it was, and writes down what it
 * finds beyond it (learned_add(), in o->learned); symbolizer_learned() hands that over with
 * the job's result (snapjob's trailer) and the daemon keeps it (lines_learn(), on the loop:
 * a hash probe and a few interned strings per address). In the process that made the
 * symbolizer (the daemon, a test) a lookup is kept at once. A result depends only on the
 * file's content and the address in it, so an entry is never stale: it goes with its file.
 *
 * Bounds: LINES_MAX addresses per file (past it nothing more is kept: lookups go on as
 * before), the names in the symbolizer's name table (NAMES_BYTES_MAX; an entry whose names
 * do not fit is not kept), LEARNED_BYTES_MAX written down per job. What a file's cache
 * holds counts in elf_file_bytes(), so in symbolizer_mb.
 *
 * The record a job writes (native byte order: the reader is the process it was forked from):
 *   u16 key length, key (the file's cache key), u64 vaddr, u32 line, u8 found, u8 inlined,
 *   str function, str system_name, str file, then per inlined function: str function,
 *   str system_name, str file, u32 line; a str is a u32 length (STR_NONE: none) and bytes.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define LINES_MAX (1u << 16) /* addresses kept per file */
#define LEARNED_BYTES_MAX (4u << 20) /* what one job writes down for the daemon */
#define LEARNED_STR_MAX 4096 /* longer names in a record: not a record a job writes */
#define STR_NONE UINT32_MAX

struct line_entry {
	uint64_t vaddr;
	const char *function, *system_name; /* what DWARF names the function, NULL: nothing */
	const char *file;
	struct sym_inline *inlined;
	uint32_t line;
	uint8_t n_inlined;
	bool used;
	bool found; /* dwarf_lookup() said 1 */
	uint8_t pad[1];
};

struct line_cache {
	struct line_entry *slots;
	size_t n, cap; /* cap: a power of two, at most half full */
	size_t inlined_bytes;
};

static size_t slot_of(uint64_t vaddr, size_t cap)
{
	return (size_t)((vaddr * 0x9e3779b97f4a7c15ULL) >> 17) & (cap - 1);
}

const struct line_entry *lines_find(const struct elf_file *f, uint64_t vaddr)
{
	const struct line_cache *lc = f->lines;

	if (!lc || !lc->n)
		return NULL;
	for (size_t i = slot_of(vaddr, lc->cap);; i = (i + 1) & (lc->cap - 1)) {
		const struct line_entry *e = &lc->slots[i];

		if (!e->used)
			return NULL;
		if (e->vaddr == vaddr)
			return e;
	}
}

void lines_merge(const struct sym_result *found, struct sym_result *ret)
{
	if (!ret->function && found->function) {
		ret->function = found->function;
		ret->system_name = found->system_name;
	}
	ret->file = found->file;
	ret->line = found->line;
	ret->n_inlined = found->n_inlined;
	memcpy(ret->inlined, found->inlined, found->n_inlined * sizeof(*found->inlined));
}

int lines_apply(const struct line_entry *e, struct sym_result *ret)
{
	if (!ret->function && e->function) {
		ret->function = e->function;
		ret->system_name = e->system_name;
	}
	ret->file = e->file;
	ret->line = e->line;
	ret->n_inlined = e->n_inlined;
	if (e->n_inlined)
		memcpy(ret->inlined, e->inlined, e->n_inlined * sizeof(*e->inlined));
	return e->found ? 1 : 0;
}

static int grow(struct line_cache *lc)
{
	size_t cap = lc->cap ? 2 * lc->cap : 64;
	struct line_entry *slots = calloc(cap, sizeof(*slots));

	if (!slots)
		return -ENOMEM;
	for (size_t k = 0; k < lc->cap; k++) {
		size_t i;

		if (!lc->slots[k].used)
			continue;
		for (i = slot_of(lc->slots[k].vaddr, cap); slots[i].used; i = (i + 1) & (cap - 1))
			;
		slots[i] = lc->slots[k];
	}
	free(lc->slots);
	lc->slots = slots;
	lc->cap = cap;
	return 0;
}

/* res's names must live as long as f (in the symbolizer's name table). 1: kept; 0: not
 * (f holds vaddr already, or LINES_MAX); -ENOMEM. */
int lines_put(struct elf_file *f, uint64_t vaddr, bool found, const struct sym_result *res)
{
	struct line_cache *lc = f->lines;
	struct line_entry *e;
	size_t i;

	if (!lc) {
		lc = f->lines = calloc(1, sizeof(*lc));
		if (!lc)
			return -ENOMEM;
	}
	if (lc->n >= LINES_MAX || lines_find(f, vaddr))
		return 0;
	if (2 * (lc->n + 1) > lc->cap && grow(lc) < 0)
		return -ENOMEM;
	for (i = slot_of(vaddr, lc->cap); lc->slots[i].used; i = (i + 1) & (lc->cap - 1))
		;
	e = &lc->slots[i];
	*e = (struct line_entry){
		.vaddr = vaddr,
		.function = res->function,
		.system_name = res->function ? res->system_name : NULL,
		.file = res->file,
		.line = res->line,
		.found = found,
	};
	if (res->n_inlined) {
		size_t n = MIN(res->n_inlined, (size_t)SYM_INLINED_MAX);

		e->inlined = malloc(n * sizeof(*e->inlined));
		if (!e->inlined)
			return -ENOMEM; /* e is not used yet */
		memcpy(e->inlined, res->inlined, n * sizeof(*e->inlined));
		e->n_inlined = (uint8_t)n;
		lc->inlined_bytes += n * sizeof(*e->inlined);
	}
	e->used = true;
	lc->n++;
	return 1;
}

void lines_free(struct elf_file *f)
{
	struct line_cache *lc = f->lines;

	if (!lc)
		return;
	for (size_t i = 0; i < lc->cap; i++)
		free(lc->slots[i].inlined);
	free(lc->slots);
	free(lc);
	f->lines = NULL;
}

size_t lines_bytes(const struct elf_file *f)
{
	const struct line_cache *lc = f->lines;

	return lc ? sizeof(*lc) + lc->cap * sizeof(*lc->slots) + lc->inlined_bytes : 0;
}

size_t lines_count(const struct elf_file *f)
{
	return f->lines ? f->lines->n : 0;
}

/* ---- written down in a job, kept by the daemon ---- */

static void put_bytes(struct dwarf_open *o, const void *p, size_t n)
{
	memcpy(o->learned + o->learned_len, p, n);
	o->learned_len += n;
}

static size_t str_size(const char *s)
{
	return sizeof(uint32_t) + (s ? MIN(strlen(s), (size_t)LEARNED_STR_MAX) : 0);
}

static void put_str(struct dwarf_open *o, const char *s)
{
	uint32_t n = s ? (uint32_t)MIN(strlen(s), (size_t)LEARNED_STR_MAX) : STR_NONE;

	put_bytes(o, &n, sizeof(n));
	if (s)
		put_bytes(o, s, n);
}

void learned_add(struct dwarf_open *o, const struct elf_file *f, uint64_t vaddr, bool found,
		 const struct sym_result *res)
{
	const char *key = f->n_keys ? f->keys[0]->key : NULL;
	size_t key_len = key ? strlen(key) : 0, need, n_in = MIN(res->n_inlined, (size_t)SYM_INLINED_MAX);
	const char *system = res->function ? res->system_name : NULL;
	uint16_t kl = (uint16_t)key_len;
	uint32_t line = res->line;
	uint8_t flags[2] = { found, (uint8_t)n_in };

	if (!key || key_len > UINT16_MAX) {
		o->learn_dropped++;
		return;
	}
	need = sizeof(kl) + key_len + sizeof(vaddr) + sizeof(line) + sizeof(flags) + str_size(res->function) +
	       str_size(system) + str_size(res->file);
	for (size_t i = 0; i < n_in; i++)
		need += str_size(res->inlined[i].function) + str_size(res->inlined[i].system_name) +
			str_size(res->inlined[i].file) + sizeof(uint32_t);
	if (o->learned_len + need > LEARNED_BYTES_MAX) {
		o->learn_dropped++;
		return;
	}
	if (o->learned_len + need > o->learned_cap) {
		size_t cap = MAX(o->learned_cap * 2, o->learned_len + need);
		uint8_t *p;

		cap = MIN(MAX(cap, (size_t)4096), (size_t)LEARNED_BYTES_MAX);
		p = realloc(o->learned, cap);
		if (!p) {
			o->learn_dropped++;
			return;
		}
		o->learned = p;
		o->learned_cap = cap;
	}
	put_bytes(o, &kl, sizeof(kl));
	put_bytes(o, key, key_len);
	put_bytes(o, &vaddr, sizeof(vaddr));
	put_bytes(o, &line, sizeof(line));
	put_bytes(o, flags, sizeof(flags));
	put_str(o, res->function);
	put_str(o, system);
	put_str(o, res->file);
	for (size_t i = 0; i < n_in; i++) {
		line = res->inlined[i].line;
		put_str(o, res->inlined[i].function);
		put_str(o, res->inlined[i].system_name);
		put_str(o, res->inlined[i].file);
		put_bytes(o, &line, sizeof(line));
	}
}

struct reader {
	const uint8_t *p, *end;
	bool bad;
};

static const void *take(struct reader *rd, size_t n)
{
	const uint8_t *at = rd->p;

	if (rd->bad || (size_t)(rd->end - rd->p) < n) {
		rd->bad = true;
		return NULL;
	}
	rd->p += n;
	return at;
}

static uint64_t take_uint(struct reader *rd, size_t n)
{
	const void *at = take(rd, n);
	uint64_t v = 0;
	uint32_t v32;
	uint16_t v16;

	if (!at)
		return 0;
	switch (n) {
	case sizeof(v16):
		memcpy(&v16, at, n);
		return v16;
	case sizeof(v32):
		memcpy(&v32, at, n);
		return v32;
	default:
		memcpy(&v, at, n);
		return v;
	}
}

/* A name of the record, interned (*ret NULL: none). false: the record cannot be kept
 * (malformed: rd->bad; or the name table is full). */
static bool take_str(struct reader *rd, struct name_table *names, const char **ret)
{
	uint32_t n = (uint32_t)take_uint(rd, sizeof(uint32_t));
	const void *s;

	*ret = NULL;
	if (rd->bad)
		return false;
	if (n == STR_NONE)
		return true;
	if (n > LEARNED_STR_MAX || !(s = take(rd, n))) {
		rd->bad = true;
		return false;
	}
	*ret = name_intern(names, s, n);
	return *ret != NULL;
}

int lines_learn(struct file_cache *c, struct name_table *names, const uint8_t *p, size_t n, size_t *ret_kept)
{
	struct reader rd = { p, p + n, false };
	size_t kept = 0;
	int r = 0;

	while (rd.p < rd.end && !rd.bad) {
		char key[FILE_KEY_MAX];
		size_t kl = (size_t)take_uint(&rd, sizeof(uint16_t));
		const void *k = kl < sizeof(key) ? take(&rd, kl) : NULL;
		struct sym_result res = {};
		uint64_t vaddr = take_uint(&rd, sizeof(uint64_t));
		const uint8_t *flags;
		struct elf_file *f;
		bool ok;

		if (!k) {
			rd.bad = true;
			break;
		}
		memcpy(key, k, kl);
		key[kl] = '\0';
		res.line = (uint32_t)take_uint(&rd, sizeof(uint32_t));
		flags = take(&rd, 2);
		if (!flags || flags[0] > 1 || flags[1] > SYM_INLINED_MAX) {
			rd.bad = true;
			break;
		}
		res.n_inlined = flags[1];
		/* every name read, so that the next record starts where it should */
		ok = take_str(&rd, names, &res.function);
		ok &= take_str(&rd, names, &res.system_name);
		ok &= take_str(&rd, names, &res.file);
		for (size_t i = 0; i < res.n_inlined; i++) {
			ok &= take_str(&rd, names, &res.inlined[i].function);
			ok &= take_str(&rd, names, &res.inlined[i].system_name);
			ok &= take_str(&rd, names, &res.inlined[i].file);
			res.inlined[i].line = (uint32_t)take_uint(&rd, sizeof(uint32_t));
			if (!res.inlined[i].function)
				res.inlined[i].function = ""; /* as dwarf.c names one DWARF does not */
		}
		if (rd.bad)
			break;
		f = cache_get(c, key);
		if (!ok || !f || f->dwarf_fd < 0)
			continue; /* the names did not fit; the file is gone */
		r = lines_put(f, vaddr, flags[0], &res);
		if (r < 0)
			break;
		kept += r;
		r = 0;
	}
	*ret_kept = kept;
	if (r < 0)
		return r;
	return rd.bad ? -EBADMSG : 0;
}
