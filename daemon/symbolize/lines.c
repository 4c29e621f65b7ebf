// SPDX-License-Identifier: GPL-2.0-only
/*
 * What DWARF lookups found, kept per file, so that a snapshot job opens a file's DWARF only
 * for addresses no job before it looked up: opening is most of the cost (libdw reads and
 * decompresses the debug sections whole: libc6-dbg's 10 MiB took a job 80-130 ms of its
 * ~330 ms here, libpython3.11-dbg's 21 MiB more), a lookup in the cache a probe, and a
 * training job's stacks go through the same few hundred addresses snapshot after snapshot.
 *
 * A job is a fork of the daemon: it inherits the cache as it was, and writes down what it
 * finds beyond it (learned_add(), in o->learned), each result with the addresses around it
 * that look up alike (dwarf.c's lookup(): its line table row within the same function and
 * inlined scopes), since a profile's samples land on every instruction of a hot row, not on
 * the few addresses the last job saw. symbolizer_learned() hands that over with the job's
 * result (snapjob's trailer) and the daemon keeps the ranges (lines_learn(), on the loop:
 * a few interned strings a range, one sort of a file's ranges per job). In the process that
 * made the symbolizer (the daemon, a test), and within a job, a lookup is kept for its own
 * address. A result depends only on the file's content and the address in it, so nothing
 * kept goes stale: it goes with its file.
 *
 * Bounds: LINES_MAX addresses and LINES_MAX ranges per file (past it nothing more is kept:
 * lookups go on as before), the names in the symbolizer's name table (NAMES_BYTES_MAX; an
 * entry whose names do not fit is not kept), LEARNED_BYTES_MAX written down per job. What a
 * file's cache holds counts in elf_file_bytes(), so in symbolizer_mb.
 *
 * The record a job writes (native byte order: the reader is the process it was forked from):
 *   u16 key length, key (the file's cache key), u64 lo, u64 hi (the addresses [lo, hi)),
 *   u32 line, u8 found, u8 inlined, str function, str system_name, str file, then per inlined
 *   function: str function, str system_name, str file, u32 line; a str is a u32 length
 *   (STR_NONE: none) and its bytes.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define LINES_MAX (1u << 16) /* addresses, and ranges, kept per file */
#define LOCAL_MAX 4096 /* ranges a process keeps of its own lookups, per file (then their addresses) */
#define LEARNED_BYTES_MAX (4u << 20) /* what one job writes down for the daemon */
#define LEARNED_STR_MAX 4096 /* longer names in a record: not a record a job writes */
#define STR_NONE UINT32_MAX

struct line_entry {
	uint64_t lo, hi; /* the addresses it answers: [lo, hi) */
	const char *function, *system_name; /* what DWARF names the function, NULL: nothing */
	const char *file;
	struct sym_inline *inlined;
	uint32_t line;
	uint8_t n_inlined;
	bool used; /* (a slot of the table of addresses) */
	bool found; /* dwarf_lookup() said 1 */
	uint8_t pad[1];
};

/*
 * A file's: the ranges of this process's own lookups (sorted, put in one by one, at most
 * LOCAL_MAX; past them a lookup keeps its own address, in a hash table), and the ranges
 * jobs handed back (sorted by lo, none overlapping: put in by lines_learn() only, sorted
 * once for each job's bytes). A range answers every address in it.
 */
struct line_cache {
	struct line_entry *slots;
	size_t n, cap; /* cap: a power of two, at most half full */
	struct line_entry *local; /* this process's own lookups' ranges: sorted, apart */
	size_t n_local, cap_local;
	struct line_entry *ranges;
	size_t n_ranges, cap_ranges;
	size_t inlined_bytes;
	bool unsorted; /* ranges added since the last lines_sort() */
	bool touched; /* by the lines_learn() under way */
};

static size_t slot_of(uint64_t vaddr, size_t cap)
{
	return (size_t)((vaddr * 0x9e3779b97f4a7c15ULL) >> 17) & (cap - 1);
}

/* The first of v[0..n) (sorted by lo) that starts past vaddr. */
static size_t upper(const struct line_entry *v, size_t n, uint64_t vaddr)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (v[mid].lo <= vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

const struct line_entry *lines_find(const struct elf_file *f, uint64_t vaddr)
{
	const struct line_cache *lc = f->lines;
	size_t i;

	if (!lc)
		return NULL;
	for (i = lc->n ? slot_of(vaddr, lc->cap) : 0; lc->n; i = (i + 1) & (lc->cap - 1)) {
		const struct line_entry *e = &lc->slots[i];

		if (!e->used)
			break;
		if (e->lo == vaddr)
			return e;
	}
	i = upper(lc->local, lc->n_local, vaddr);
	if (i > 0 && vaddr < lc->local[i - 1].hi)
		return &lc->local[i - 1];
	if (lc->unsorted)
		return NULL; /* only while lines_learn() adds them */
	i = upper(lc->ranges, lc->n_ranges, vaddr);
	return i > 0 && vaddr < lc->ranges[i - 1].hi ? &lc->ranges[i - 1] : NULL;
}

void lines_extent(const struct line_entry *e, uint64_t *lo, uint64_t *hi)
{
	*lo = e->lo;
	*hi = e->hi;
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

static struct line_cache *cache_of(struct elf_file *f)
{
	if (!f->lines)
		f->lines = calloc(1, sizeof(*f->lines));
	return f->lines;
}

/* e's fields from a lookup's result (names as they are: they must live as long as f). */
static int entry_make(struct line_cache *lc, struct line_entry *e, uint64_t lo, uint64_t hi, bool found,
		      const struct sym_result *res)
{
	*e = (struct line_entry){
		.lo = lo,
		.hi = hi,
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
			return -ENOMEM;
		memcpy(e->inlined, res->inlined, n * sizeof(*e->inlined));
		e->n_inlined = (uint8_t)n;
		lc->inlined_bytes += n * sizeof(*e->inlined);
	}
	return 0;
}

static void entry_drop(struct line_cache *lc, struct line_entry *e)
{
	lc->inlined_bytes -= e->n_inlined * sizeof(*e->inlined);
	free(e->inlined);
	e->inlined = NULL;
	e->n_inlined = 0;
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
		for (i = slot_of(lc->slots[k].lo, cap); slots[i].used; i = (i + 1) & (cap - 1))
			;
		slots[i] = lc->slots[k];
	}
	free(lc->slots);
	lc->slots = slots;
	lc->cap = cap;
	return 0;
}

/* [lo, hi) into the local ranges, clipped to what they do not hold yet; 1: kept, 0: not
 * (LOCAL_MAX, or nothing left of it). */
static int local_put(struct line_cache *lc, uint64_t lo, uint64_t hi, bool found, const struct sym_result *res)
{
	size_t i = upper(lc->local, lc->n_local, lo);
	int r;

	if (lc->n_local >= LOCAL_MAX)
		return 0;
	if (i > 0 && lc->local[i - 1].hi > lo)
		lo = lc->local[i - 1].hi;
	if (i < lc->n_local && lc->local[i].lo < hi)
		hi = lc->local[i].lo;
	if (lo >= hi)
		return 0;
	if (lc->n_local == lc->cap_local) {
		size_t cap = lc->cap_local ? 2 * lc->cap_local : 64;
		struct line_entry *p = reallocarray(lc->local, cap, sizeof(*p));

		if (!p)
			return -ENOMEM;
		lc->local = p;
		lc->cap_local = cap;
	}
	memmove(lc->local + i + 1, lc->local + i, (lc->n_local - i) * sizeof(*lc->local));
	r = entry_make(lc, &lc->local[i], lo, hi, found, res);
	if (r < 0) {
		memmove(lc->local + i, lc->local + i + 1, (lc->n_local - i) * sizeof(*lc->local));
		return r;
	}
	lc->n_local++;
	return 1;
}

int lines_put(struct elf_file *f, uint64_t vaddr, uint64_t lo, uint64_t hi, bool found, const struct sym_result *res)
{
	struct line_cache *lc = cache_of(f);
	struct line_entry e;
	size_t i;
	int r;

	if (!lc)
		return -ENOMEM;
	if (lines_find(f, vaddr))
		return 0;
	if (lo <= vaddr && vaddr < hi) {
		r = local_put(lc, lo, hi, found, res);
		if (r != 0)
			return r;
	}
	if (lc->n >= LINES_MAX)
		return 0;
	if (2 * (lc->n + 1) > lc->cap && grow(lc) < 0)
		return -ENOMEM;
	r = entry_make(lc, &e, vaddr, vaddr + 1, found, res);
	if (r < 0)
		return r;
	e.used = true;
	for (i = slot_of(vaddr, lc->cap); lc->slots[i].used; i = (i + 1) & (lc->cap - 1))
		;
	lc->slots[i] = e;
	lc->n++;
	return 1;
}

/* A job's range, added (unsorted: lines_sort() after). 1: added, 0: not (LINES_MAX). */
static int range_add(struct elf_file *f, uint64_t lo, uint64_t hi, bool found, const struct sym_result *res)
{
	struct line_cache *lc = cache_of(f);
	int r;

	if (!lc)
		return -ENOMEM;
	if (lc->n_ranges >= LINES_MAX)
		return 0;
	if (lc->n_ranges == lc->cap_ranges) {
		size_t cap = lc->cap_ranges ? 2 * lc->cap_ranges : 64;
		struct line_entry *p = reallocarray(lc->ranges, cap, sizeof(*p));

		if (!p)
			return -ENOMEM;
		lc->ranges = p;
		lc->cap_ranges = cap;
	}
	r = entry_make(lc, &lc->ranges[lc->n_ranges], lo, hi, found, res);
	if (r < 0)
		return r;
	lc->n_ranges++;
	lc->unsorted = true;
	return 1;
}

static int cmp_range(const void *a, const void *b)
{
	const struct line_entry *x = a, *y = b;

	if (x->lo != y->lo)
		return x->lo < y->lo ? -1 : 1;
	return x->hi < y->hi ? 1 : x->hi > y->hi ? -1 : 0; /* the wider first */
}

/* The ranges sorted, none overlapping: where two do, both answer the same (each is part of
 * the addresses that look up alike), and the later loses what the earlier holds. */
static void lines_sort(struct line_cache *lc)
{
	size_t out = 0;

	if (!lc->unsorted)
		return;
	qsort(lc->ranges, lc->n_ranges, sizeof(*lc->ranges), cmp_range);
	for (size_t i = 0; i < lc->n_ranges; i++) {
		struct line_entry *e = &lc->ranges[i];

		if (out && e->lo < lc->ranges[out - 1].hi)
			e->lo = lc->ranges[out - 1].hi;
		if (e->lo >= e->hi) {
			entry_drop(lc, e);
			continue;
		}
		lc->ranges[out++] = *e;
	}
	lc->n_ranges = out;
	lc->unsorted = false;
}

void lines_free(struct elf_file *f)
{
	struct line_cache *lc = f->lines;

	if (!lc)
		return;
	for (size_t i = 0; i < lc->cap; i++)
		free(lc->slots[i].inlined);
	for (size_t i = 0; i < lc->n_local; i++)
		free(lc->local[i].inlined);
	for (size_t i = 0; i < lc->n_ranges; i++)
		free(lc->ranges[i].inlined);
	free(lc->slots);
	free(lc->local);
	free(lc->ranges);
	free(lc);
	f->lines = NULL;
}

size_t lines_bytes(const struct elf_file *f)
{
	const struct line_cache *lc = f->lines;

	return lc ? sizeof(*lc) + (lc->cap + lc->cap_local + lc->cap_ranges) * sizeof(*lc->slots) + lc->inlined_bytes :
		    0;
}

size_t lines_count(const struct elf_file *f)
{
	return f->lines ? f->lines->n + f->lines->n_local + f->lines->n_ranges : 0;
}

bool lines_sorted(const struct elf_file *f)
{
	const struct line_cache *lc = f->lines;

	for (size_t i = 0; lc && i < lc->n_ranges; i++)
		if (lc->ranges[i].lo >= lc->ranges[i].hi || (i && lc->ranges[i].lo < lc->ranges[i - 1].hi))
			return false;
	for (size_t i = 0; lc && i < lc->n_local; i++)
		if (lc->local[i].lo >= lc->local[i].hi || (i && lc->local[i].lo < lc->local[i - 1].hi))
			return false;
	return !lc || !lc->unsorted;
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

void learned_add(struct dwarf_open *o, const struct elf_file *f, uint64_t lo, uint64_t hi, bool found,
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
	need = sizeof(kl) + key_len + sizeof(lo) + sizeof(hi) + sizeof(line) + sizeof(flags) + str_size(res->function) +
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
	put_bytes(o, &lo, sizeof(lo));
	put_bytes(o, &hi, sizeof(hi));
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

bool learned_half_full(const struct dwarf_open *o)
{
	return o->learned_len > LEARNED_BYTES_MAX / 2;
}

void learned_take(struct dwarf_open *o, uint8_t **ret, size_t *ret_len)
{
	/* what could not be written down, counted for the daemon: a record with no key */
	if (o->learn_dropped) {
		size_t need = o->learned_len + sizeof(uint16_t) + sizeof(uint64_t);
		uint8_t *p = need > o->learned_cap ? realloc(o->learned, need) : o->learned;

		if (p) {
			uint16_t kl = 0;
			uint64_t n = o->learn_dropped;

			o->learned = p;
			o->learned_cap = MAX(o->learned_cap, need);
			put_bytes(o, &kl, sizeof(kl));
			put_bytes(o, &n, sizeof(n));
		}
	}
	*ret = o->learned;
	*ret_len = o->learned_len;
	o->learned = NULL;
	o->learned_len = o->learned_cap = 0;
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

int lines_learn(struct file_cache *c, struct name_table *names, const uint8_t *p, size_t n, size_t *ret_kept,
		uint64_t *ret_dropped)
{
	struct reader rd = { p, p + n, false };
	struct elf_file **touched = NULL;
	size_t n_touched = 0, cap_touched = 0, *before = NULL, kept = 0;
	uint64_t dropped = 0;
	int r = 0;

	*ret_kept = 0;
	*ret_dropped = 0;
	if (n > LEARNED_BYTES_MAX + 64)
		return -EBADMSG; /* more than a job writes */
	while (rd.p < rd.end && !rd.bad) {
		char key[FILE_KEY_MAX];
		size_t kl = (size_t)take_uint(&rd, sizeof(uint16_t));
		const void *k;
		struct sym_result res = {};
		uint64_t lo, hi;
		const uint8_t *flags;
		struct elf_file *f;
		bool ok;

		if (!rd.bad && kl == 0) {
			dropped += take_uint(&rd, sizeof(uint64_t)); /* what the job could not write down */
			continue;
		}
		k = kl < sizeof(key) ? take(&rd, kl) : NULL;
		if (!k) {
			rd.bad = true;
			break;
		}
		memcpy(key, k, kl);
		key[kl] = '\0';
		lo = take_uint(&rd, sizeof(uint64_t));
		hi = take_uint(&rd, sizeof(uint64_t));
		res.line = (uint32_t)take_uint(&rd, sizeof(uint32_t));
		flags = take(&rd, 2);
		if (!flags || flags[0] > 1 || flags[1] > SYM_INLINED_MAX || lo >= hi) {
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
		if (!f || f->dwarf_fd < 0)
			continue; /* the file is gone meanwhile */
		if (!ok) {
			dropped++; /* its names did not fit */
			continue;
		}
		if (!f->lines || !f->lines->touched) {
			/* each file sorted once, at the end: a job's records go from file to file */
			if (n_touched == cap_touched) {
				size_t cap = cap_touched ? 2 * cap_touched : 16;
				struct elf_file **t = reallocarray(touched, cap, sizeof(*t));
				size_t *b = reallocarray(before, cap, sizeof(*b));

				if (t)
					touched = t;
				if (b)
					before = b;
				if (!t || !b) {
					r = -ENOMEM;
					break;
				}
				cap_touched = cap;
			}
			if (!cache_of(f)) {
				r = -ENOMEM;
				break;
			}
			touched[n_touched] = f;
			before[n_touched++] = f->lines->n_ranges;
			f->lines->touched = true;
		}
		r = range_add(f, lo, hi, flags[0], &res);
		if (r < 0)
			break;
		dropped += r == 0; /* LINES_MAX */
		r = 0;
	}
	for (size_t i = 0; i < n_touched; i++) {
		struct line_cache *lc = touched[i]->lines;

		lines_sort(lc);
		lc->touched = false;
		kept += lc->n_ranges > before[i] ? lc->n_ranges - before[i] : 0;
	}
	free(touched);
	free(before);
	*ret_kept = kept;
	*ret_dropped = dropped;
	if (r < 0)
		return r;
	return rd.bad ? -EBADMSG : 0;
}
