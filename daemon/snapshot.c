// SPDX-License-Identifier: GPL-2.0-only
/*
 * Snapshot: turn one process's flight recorder into a canonical .hps snapshot.
 *
 * This is where the per-CPU shards are merged and where the work that the drain path
 * skipped is done: records of the window are collected from the chunks by kind, sorted
 * by timestamp and written as columns; stacks are deduplicated and symbolized.
 *
 * Everything the message points into is allocated from one arena and freed at once.
 */
#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/timex.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "glob_match.h"
#include "hps.h"
#include "log.h"
#include "macro.h"
#include "prefault.h"
#include "procfs.h"
#include "snapshot.h"
#include "syscall_names.h"

/* ---- arena ---- */

struct arena_block {
	struct arena_block *next;
	size_t used, size;
	max_align_t data[];
};

struct arena {
	struct arena_block *head;
	int err;
};

static void *arena_alloc(struct arena *a, size_t size)
{
	struct arena_block *b = a->head;
	void *p;

	size = (size + 15) & ~(size_t)15;
	if (!size)
		size = 16;
	if (!b || b->size - b->used < size) {
		size_t bs = MAX(size, (size_t)256 * 1024);

		b = malloc(sizeof(*b) + bs);
		if (!b) {
			a->err = -ENOMEM;
			return NULL;
		}
		prefault(b->data, bs);
		b->next = a->head;
		b->used = 0;
		b->size = bs;
		a->head = b;
	}
	p = (char *)b->data + b->used;
	b->used += size;
	memset(p, 0, size);
	return p;
}

static void arena_free(struct arena *a)
{
	struct arena_block *b, *next;

	for (b = a->head; b; b = next) {
		next = b->next;
		free(b);
	}
	a->head = NULL;
}

/* A column of n elements of the column's type: *col = array, *n_col = n. */
#define COLUMN(a, table, col, n) ((table)->n_##col = (n), (table)->col = arena_alloc((a), (n) * sizeof(*(table)->col)))

/* ---- record vectors ---- */

struct recvec {
	const struct hp_hdr **v;
	size_t n, cap;
};

static int cmp_ts(const void *a, const void *b)
{
	const struct hp_hdr *x = *(const struct hp_hdr *const *)a;
	const struct hp_hdr *y = *(const struct hp_hdr *const *)b;

	if (x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	/* equal stamps: keep arrival order, which is per-CPU order */
	return x < y ? -1 : x > y;
}

#define SORT_MAX_CPUS 8192 /* more than the kernel's NR_CPUS: qsort */

struct sort_rec {
	uint64_t ts;
	const struct hp_hdr *h;
};

static int cmp_sort_rec(const void *a, const void *b)
{
	const struct sort_rec *x = a, *y = b;

	if (x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	return x->h < y->h ? -1 : x->h > y->h;
}

/*
 * Sort one CPU's records, which arrive nearly in order: one emitted at a switch-in for a
 * time before it (an off-CPU interval, a blocking syscall) or by a program nested in
 * another comes a few places late. Insertion sort puts those back in O(n + moves): at the
 * bench's training load ~40% of the syscall and off-CPU rows came late, none by more than
 * 7 places, and the qsort of their whole runs was most of the sort's time (20 -> 8 ms of
 * CPU for ~380k records). Past a budget of moves, qsort. Either gives the one order of
 * (ts, address).
 */
#define RUN_SORT_MOVES 16 /* per record */

static void run_sort(struct sort_rec *r, size_t n)
{
	size_t budget = n * RUN_SORT_MOVES;

	for (size_t i = 1; i < n; i++) {
		struct sort_rec x = r[i];
		size_t j = i;

		if (cmp_sort_rec(&r[i - 1], &x) <= 0)
			continue;
		while (j > 0 && cmp_sort_rec(&r[j - 1], &x) > 0) {
			if (!budget--) {
				r[j] = x;
				qsort(r, n, sizeof(*r), cmp_sort_rec);
				return;
			}
			r[j] = r[j - 1];
			j--;
		}
		r[j] = x;
	}
}

/* A min-heap of CPUs by the time of their next record (the lower CPU first at one ns). */
static bool heap_before(const struct sort_rec *r, const size_t *pos, uint32_t a, uint32_t b)
{
	return r[pos[a]].ts < r[pos[b]].ts || (r[pos[a]].ts == r[pos[b]].ts && a < b);
}

static void heap_down(uint32_t *heap, size_t n, size_t i, const struct sort_rec *r, const size_t *pos)
{
	for (;;) {
		size_t c = 2 * i + 1;
		uint32_t t;

		if (c >= n)
			return;
		if (c + 1 < n && heap_before(r, pos, heap[c + 1], heap[c]))
			c++;
		if (!heap_before(r, pos, heap[c], heap[i]))
			return;
		t = heap[i];
		heap[i] = heap[c];
		heap[c] = t;
		i = c;
	}
}

/*
 * By timestamp. A CPU's records arrive in time order (its ring is a FIFO), so a table is
 * its CPUs' sorted sequences interleaved: the records are split by CPU in arrival order,
 * each CPU's checked (and sorted where one came in late, as a record of a program nested
 * in another can), and the CPUs merged. That reads each record once; qsort reached them at
 * random through their pointers, log2(n) times. Records of one nanosecond keep their CPU's
 * arrival order, the lower CPU first. Without the memory for it, qsort as before.
 */
static void recvec_sort(struct recvec *rv)
{
	const size_t n = rv->n;
	_cleanup_free_ struct sort_rec *r = NULL;
	_cleanup_free_ size_t *pos = NULL, *end = NULL;
	_cleanup_free_ uint32_t *heap = NULL;
	uint32_t ncpus = 0;
	size_t nheap = 0;

	if (n < 2)
		return;
	for (size_t i = 0; i < n; i++)
		ncpus = MAX(ncpus, rv->v[i]->cpu + 1);
	if (ncpus > SORT_MAX_CPUS)
		goto fallback;
	r = malloc(n * sizeof(*r));
	pos = calloc(ncpus + 1, sizeof(*pos));
	end = malloc((ncpus + 1) * sizeof(*end));
	heap = malloc(ncpus * sizeof(*heap));
	if (!r || !pos || !end || !heap)
		goto fallback;
	for (size_t i = 0; i < n; i++)
		pos[rv->v[i]->cpu + 1]++;
	for (uint32_t c = 0; c < ncpus; c++)
		pos[c + 1] += pos[c];
	memcpy(end, pos, (ncpus + 1) * sizeof(*end));
	for (size_t i = 0; i < n; i++) {
		const struct hp_hdr *h = rv->v[i];

		r[end[h->cpu]++] = (struct sort_rec){ .ts = h->ts, .h = h };
	}
	for (uint32_t c = 0; c < ncpus; c++) {
		run_sort(r + pos[c], end[c] - pos[c]);
		if (pos[c] < end[c])
			heap[nheap++] = c;
	}
	for (size_t i = nheap; i-- > 0;)
		heap_down(heap, nheap, i, r, pos);
	for (size_t i = 0; i < n; i++) {
		uint32_t c = heap[0];

		rv->v[i] = r[pos[c]++].h;
		if (pos[c] == end[c])
			heap[0] = heap[--nheap];
		heap_down(heap, nheap, 0, r, pos);
	}
	return;
fallback:
	qsort_safe(rv->v, n, sizeof(*rv->v), cmp_ts);
}

/* ---- interned strings ---- */

#define COMM_CACHE 256

struct strtab {
	char **strs;
	size_t n, cap;
	uint32_t *slots; /* index + 1, 0 = empty */
	size_t nslots;
	/* the records' own comm arrays → index: most rows name a task met just before */
	struct comm_cached {
		char comm[HP_COMM_LEN];
		uint32_t idx; /* index + 1, 0 = empty */
	} cache[COMM_CACHE];
};

static uint32_t str_hash(const char *s)
{
	uint32_t h = 2166136261u;

	for (; *s; s++)
		h = (h ^ (uint8_t)*s) * 16777619u;
	return h;
}

static int strtab_grow(struct strtab *t)
{
	size_t nslots = t->nslots ? t->nslots * 2 : 256;
	uint32_t *slots = calloc(nslots, sizeof(*slots));

	if (!slots)
		return -ENOMEM;
	for (size_t i = 0; i < t->n; i++) {
		size_t j = str_hash(t->strs[i]) & (nslots - 1);

		while (slots[j])
			j = (j + 1) & (nslots - 1);
		slots[j] = i + 1;
	}
	free(t->slots);
	t->slots = slots;
	t->nslots = nslots;
	return 0;
}

/* Index of a task name (at most HP_COMM_LEN bytes, maybe unterminated). */
static int strtab_intern(struct strtab *t, struct arena *a, const char *s, uint32_t *ret)
{
	char name[HP_COMM_LEN + 1] = {};
	size_t j;

	strncpy(name, s, HP_COMM_LEN); /* s may be shorter than a comm ("" for index 0) */
	if ((t->n + 1) * 2 > t->nslots && strtab_grow(t) < 0)
		return -ENOMEM;
	for (j = str_hash(name) & (t->nslots - 1); t->slots[j]; j = (j + 1) & (t->nslots - 1))
		if (!strcmp(t->strs[t->slots[j] - 1], name)) {
			*ret = t->slots[j] - 1;
			return 0;
		}
	if (t->n == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 64;
		char **v = realloc(t->strs, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		t->strs = v;
		t->cap = cap;
	}
	t->strs[t->n] = arena_alloc(a, strlen(name) + 1);
	if (!t->strs[t->n])
		return -ENOMEM;
	strcpy(t->strs[t->n], name);
	t->slots[j] = t->n + 1;
	*ret = t->n++;
	return 0;
}

/* The index of a record's comm (HP_COMM_LEN bytes, maybe unterminated): strtab_intern()
 * once per distinct array, a 16-byte compare in a direct-mapped cache after that. */
static int strtab_intern_comm(struct strtab *t, struct arena *a, const char comm[HP_COMM_LEN], uint32_t *ret)
{
	struct comm_cached *c;
	uint64_t w[2];
	int r;

	memcpy(w, comm, sizeof(w));
	c = &t->cache[((w[0] ^ (w[1] * 0x9e3779b97f4a7c15ull)) * 0x9e3779b97f4a7c15ull) >> 56];
	if (c->idx && !memcmp(c->comm, comm, HP_COMM_LEN)) {
		*ret = c->idx - 1;
		return 0;
	}
	r = strtab_intern(t, a, comm, ret);
	if (r < 0)
		return r;
	memcpy(c->comm, comm, HP_COMM_LEN);
	c->idx = *ret + 1;
	return 0;
}

/* ---- stacks, frames, mappings ---- */

/* Open-addressing table from a 64-bit hash to an index; the caller compares keys. */
struct idxmap {
	uint64_t *hashes;
	uint32_t *idx; /* index + 1 */
	size_t cap, n;
};

static int idxmap_grow(struct idxmap *m)
{
	size_t cap = m->cap ? m->cap * 2 : 1024;
	uint64_t *hashes = calloc(cap, sizeof(*hashes));
	uint32_t *idx = calloc(cap, sizeof(*idx));

	if (!hashes || !idx) {
		free(hashes);
		free(idx);
		return -ENOMEM;
	}
	for (size_t i = 0; i < m->cap; i++) {
		size_t j;

		if (!m->idx[i])
			continue;
		for (j = m->hashes[i] & (cap - 1); idx[j]; j = (j + 1) & (cap - 1))
			;
		hashes[j] = m->hashes[i];
		idx[j] = m->idx[i];
	}
	free(m->hashes);
	free(m->idx);
	m->hashes = hashes;
	m->idx = idx;
	m->cap = cap;
	return 0;
}

static void idxmap_free(struct idxmap *m)
{
	free(m->hashes);
	free(m->idx);
}

static uint64_t mix64(uint64_t h, uint64_t v)
{
	h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
	return h * 0xff51afd7ed558ccdULL;
}

struct frame_key {
	uint64_t addr; /* a Python frame's: its code object's */
	uint32_t pid; /* 0 for kernel frames */
	uint32_t line; /* a Python frame's */
	bool kernel, leaf, python;
	bool outside; /* not a key: the symbolizer found no executable mapping for it */
};

/*
 * The snapshot's tables, in the order they are filled, which is the order in which their
 * strings and stacks are interned. Each is filled from the records of one or more types
 * (kinds[]), collected from the window and sorted by time.
 */
enum {
	TBL_SWITCHES,
	TBL_WAKEUPS,
	TBL_MIGRATIONS,
	TBL_SYSCALLS,
	TBL_OFFCPU,
	TBL_SAMPLES,
	TBL_TASK_EVENTS,
	TBL_IRQS,
	TBL_RECLAIMS,
	TBL_FAULTS,
	TBL_LOCKS,
	TBL_GIL,
	TBL_USTACKS, /* not a table: the user stacks that TBL_OFFCPU's rows join */
	TBL_PYSTACKS, /* not a table: the Python stacks that TBL_OFFCPU's and TBL_SAMPLES' rows join */
	TBL_PYGC,
	TBL_NONE, /* not a table: a type the recorder never holds */
	TBL_MAX
};

/* A native stack as a record holds it (its addresses stay in the recorder while the build
 * runs) and the stack it became: a stack met again is one lookup, not one per frame. */
struct raw_stack {
	const __u64 *addrs;
	uint32_t pid;
	uint16_t n;
	bool user, truncated;
	uint32_t stack; /* index + 1 into the stacks */
};

struct snap_build {
	struct arena a;
	const struct snapshot_ctx *ctx;
	const struct proc_rec *p;
	Hostprof__Snapshot snap;
	struct strtab strs;
	struct recvec recs[TBL_MAX]; /* the records of each table */
	/* stacks */
	struct idxmap stack_map, frame_map, mapping_map, raw_map;
	struct raw_stack *raws;
	size_t n_raws, cap_raws;
	Hostprof__Stack **stacks;
	size_t n_stacks, cap_stacks;
	Hostprof__Frame **frames;
	struct frame_key *frame_keys;
	size_t n_frames, cap_frames, cap_frame_keys;
	Hostprof__Mapping **mappings;
	size_t n_mappings, cap_mappings;
	uint64_t resolved, unresolved, suspect, lines, inlined, debuginfo_failed;
	/* Python stacks merged into user stacks */
	bool pystacks_sorted;
	uint64_t py_merged, py_unreadable, py_read_failures, py_truncated, py_unanchored;
	const char *py_reason;
};

static void snap_build_free(struct snap_build *b)
{
	for (size_t i = 0; i < TBL_MAX; i++)
		free(b->recs[i].v);
	free(b->strs.strs);
	free(b->strs.slots);
	idxmap_free(&b->stack_map);
	idxmap_free(&b->frame_map);
	idxmap_free(&b->mapping_map);
	idxmap_free(&b->raw_map);
	free(b->raws);
	free(b->stacks);
	free(b->frames);
	free(b->frame_keys);
	free(b->mappings);
	arena_free(&b->a);
}

static int grow_array(void *pp, size_t *cap, size_t n, size_t elem)
{
	void **p = pp;
	void *np;
	size_t ncap;

	if (n < *cap)
		return 0;
	ncap = *cap ? *cap * 2 : 256;
	np = realloc(*p, ncap * elem);
	if (!np)
		return -ENOMEM;
	*p = np;
	*cap = ncap;
	return 0;
}

static char *arena_strdup(struct arena *a, const char *s)
{
	char *d = arena_alloc(a, strlen(s) + 1);

	if (d)
		strcpy(d, s);
	return d;
}

static int intern_mapping(struct snap_build *b, const struct sym_result *res, uint32_t *ret)
{
	const char *id = res->build_id ? res->build_id : "";
	uint64_t h = mix64(mix64(str_hash(res->module), res->map_start), str_hash(id));
	Hostprof__Mapping *m;
	size_t j;

	if ((b->mapping_map.n + 1) * 2 > b->mapping_map.cap && idxmap_grow(&b->mapping_map) < 0)
		return -ENOMEM;
	for (j = h & (b->mapping_map.cap - 1); b->mapping_map.idx[j]; j = (j + 1) & (b->mapping_map.cap - 1)) {
		m = b->mappings[b->mapping_map.idx[j] - 1];
		if (b->mapping_map.hashes[j] == h && m->start == res->map_start && !strcmp(m->file, res->module) &&
		    !strcmp(m->build_id, id)) {
			*ret = b->mapping_map.idx[j];
			return 0;
		}
	}
	if (grow_array(&b->mappings, &b->cap_mappings, b->n_mappings, sizeof(*b->mappings)) < 0)
		return -ENOMEM;
	m = arena_alloc(&b->a, sizeof(*m));
	if (!m)
		return -ENOMEM;
	hostprof__mapping__init(m);
	m->has_start = m->has_limit = m->has_offset = true;
	m->start = res->map_start;
	m->limit = res->map_limit;
	m->offset = res->map_offset;
	m->file = arena_strdup(&b->a, res->module);
	m->build_id = arena_strdup(&b->a, id);
	if (!m->file || !m->build_id)
		return -ENOMEM;
	if (res->n_debug_packages) {
		m->debug_packages = arena_alloc(&b->a, res->n_debug_packages * sizeof(*m->debug_packages));
		if (!m->debug_packages)
			return -ENOMEM;
		for (size_t i = 0; i < res->n_debug_packages; i++)
			if (!(m->debug_packages[i] = arena_strdup(&b->a, res->debug_packages[i])))
				return -ENOMEM;
		m->n_debug_packages = res->n_debug_packages;
	}
	b->mappings[b->n_mappings++] = m;
	b->mapping_map.hashes[j] = h;
	b->mapping_map.idx[j] = b->n_mappings;
	b->mapping_map.n++;
	*ret = b->n_mappings;
	return 0;
}

/* What DWARF says of a frame: its source line and the functions inlined at it. */
static int frame_debuginfo(struct snap_build *b, Hostprof__Frame *f, const struct sym_result *res)
{
	struct arena *a = &b->a;

	b->debuginfo_failed += res->debuginfo_failed;
	if (res->system_name && !(f->system_name = arena_strdup(a, res->system_name)))
		return -ENOMEM;
	if (res->file) {
		f->file = arena_strdup(a, res->file);
		if (!f->file)
			return -ENOMEM;
		f->has_line = true;
		f->line = res->line;
		b->lines++;
	}
	if (!res->n_inlined)
		return 0;
	f->inlined = arena_alloc(a, res->n_inlined * sizeof(*f->inlined));
	if (!f->inlined)
		return -ENOMEM;
	for (size_t i = 0; i < res->n_inlined; i++) {
		const struct sym_inline *in = &res->inlined[i];
		Hostprof__InlinedFrame *x = arena_alloc(a, sizeof(*x));

		if (!x)
			return -ENOMEM;
		hostprof__inlined_frame__init(x);
		x->function = arena_strdup(a, in->function);
		x->system_name = in->system_name ? arena_strdup(a, in->system_name) : NULL;
		x->file = in->file ? arena_strdup(a, in->file) : NULL;
		if (!x->function || (in->system_name && !x->system_name) || (in->file && !x->file))
			return -ENOMEM;
		x->has_line = in->line > 0;
		x->line = in->line;
		f->inlined[f->n_inlined++] = x;
	}
	b->inlined += res->n_inlined;
	return 0;
}

/* The frame for one address: deduplicated, symbolized once. *ret_outside: not in any
 * executable mapping (the user stack walk likely went wrong). */
static int intern_frame(struct snap_build *b, const struct frame_key *k, uint32_t *ret, bool *ret_outside)
{
	uint64_t h = mix64(mix64(mix64(k->addr, k->pid), k->kernel), k->leaf);
	const struct snapshot_ctx *ctx = b->ctx;
	struct sym_result res = {};
	Hostprof__Frame *f;
	size_t j;
	int r;

	if ((b->frame_map.n + 1) * 2 > b->frame_map.cap && idxmap_grow(&b->frame_map) < 0)
		return -ENOMEM;
	for (j = h & (b->frame_map.cap - 1); b->frame_map.idx[j]; j = (j + 1) & (b->frame_map.cap - 1)) {
		const struct frame_key *o = &b->frame_keys[b->frame_map.idx[j] - 1];

		if (o->addr == k->addr && o->pid == k->pid && o->kernel == k->kernel && o->leaf == k->leaf &&
		    !o->python) {
			*ret = b->frame_map.idx[j] - 1;
			*ret_outside = o->outside;
			return 0;
		}
	}
	if (grow_array(&b->frames, &b->cap_frames, b->n_frames, sizeof(*b->frames)) < 0 ||
	    grow_array(&b->frame_keys, &b->cap_frame_keys, b->n_frames, sizeof(*b->frame_keys)) < 0)
		return -ENOMEM;
	f = arena_alloc(&b->a, sizeof(*f));
	if (!f)
		return -ENOMEM;
	hostprof__frame__init(f);
	f->has_address = f->has_kernel = true;
	f->address = k->addr;
	f->kernel = k->kernel;
	f->function = "";
	res.in_exec_mapping = true;
	/* a return address points after the call: look up the call itself */
	r = ctx->resolve ? ctx->resolve(ctx->resolve_ud, k->pid, k->leaf ? k->addr : k->addr - 1, k->kernel, &res)
			 : 0;
	if (r > 0 && res.function) {
		f->function = arena_strdup(&b->a, res.function);
		f->has_function_offset = true;
		f->function_offset = res.function_offset + (k->leaf ? 0 : 1);
		b->resolved++;
	} else {
		b->unresolved++;
	}
	if (res.module) {
		r = intern_mapping(b, &res, &f->mapping);
		if (r < 0)
			return r;
		f->has_mapping = f->has_module_offset = true;
		f->module_offset = res.module_offset;
	}
	r = frame_debuginfo(b, f, &res);
	if (r < 0)
		return r;
	f->has_jit = res.jit;
	f->jit = res.jit;
	if (!f->function)
		return -ENOMEM;
	b->frames[b->n_frames] = f;
	b->frame_keys[b->n_frames] = *k;
	b->frame_keys[b->n_frames].outside = ctx->resolve && !k->kernel && !res.in_exec_mapping;
	*ret_outside = b->frame_keys[b->n_frames].outside;
	b->n_frames++;
	b->frame_map.hashes[j] = h;
	b->frame_map.idx[j] = b->n_frames;
	b->frame_map.n++;
	*ret = b->n_frames - 1;
	return 0;
}

/* A Python frame (Frame.python): by code object, line and process. */
static int intern_py_frame(struct snap_build *b, uint32_t pid, const struct snap_pyframe *pf, uint32_t *ret)
{
	struct frame_key k = { .addr = pf->code, .pid = pid, .line = pf->line, .python = true };
	uint64_t h = mix64(mix64(mix64(k.addr, k.pid), k.line), 0x5079);
	Hostprof__Frame *f;
	size_t j;

	if ((b->frame_map.n + 1) * 2 > b->frame_map.cap && idxmap_grow(&b->frame_map) < 0)
		return -ENOMEM;
	for (j = h & (b->frame_map.cap - 1); b->frame_map.idx[j]; j = (j + 1) & (b->frame_map.cap - 1)) {
		const struct frame_key *o = &b->frame_keys[b->frame_map.idx[j] - 1];
		const Hostprof__Frame *of = b->frames[b->frame_map.idx[j] - 1];

		/* the same code object's address may hold another one later: names compared too */
		if (o->python && o->addr == k.addr && o->pid == k.pid && o->line == k.line &&
		    !strcmp(of->function, pf->function) && !strcmp(of->file, pf->file)) {
			*ret = b->frame_map.idx[j] - 1;
			return 0;
		}
	}
	if (grow_array(&b->frames, &b->cap_frames, b->n_frames, sizeof(*b->frames)) < 0 ||
	    grow_array(&b->frame_keys, &b->cap_frame_keys, b->n_frames, sizeof(*b->frame_keys)) < 0)
		return -ENOMEM;
	f = arena_alloc(&b->a, sizeof(*f));
	if (!f)
		return -ENOMEM;
	hostprof__frame__init(f);
	f->has_address = f->has_python = f->has_line = true;
	f->address = pf->code;
	f->python = true;
	f->line = pf->line;
	f->function = arena_strdup(&b->a, pf->function);
	f->file = arena_strdup(&b->a, pf->file);
	if (!f->function || !f->file)
		return -ENOMEM;
	b->resolved++;
	b->frames[b->n_frames] = f;
	b->frame_keys[b->n_frames] = k;
	b->n_frames++;
	b->frame_map.hashes[j] = h;
	b->frame_map.idx[j] = b->n_frames;
	b->frame_map.n++;
	*ret = b->n_frames - 1;
	return 0;
}

/* The stack of frames fidx[0..n) (indexes into frames, innermost first): index + 1 into
 * the stacks, 0 when empty. */
static int intern_stack_frames(struct snap_build *b, const uint32_t *fidx, size_t n, bool user, bool truncated,
			       bool suspect, uint32_t *ret)
{
	uint64_t h = mix64(user, n);
	Hostprof__Stack *s;
	size_t j;

	*ret = 0;
	if (!n)
		return 0;
	for (size_t i = 0; i < n; i++)
		h = mix64(h, fidx[i]);
	if ((b->stack_map.n + 1) * 2 > b->stack_map.cap && idxmap_grow(&b->stack_map) < 0)
		return -ENOMEM;
	for (j = h & (b->stack_map.cap - 1); b->stack_map.idx[j]; j = (j + 1) & (b->stack_map.cap - 1)) {
		if (b->stack_map.hashes[j] != h)
			continue;
		s = b->stacks[b->stack_map.idx[j] - 1];
		if (s->n_frames == n && s->user == user && s->truncated == truncated &&
		    !memcmp(s->frames, fidx, n * sizeof(*fidx))) {
			*ret = b->stack_map.idx[j];
			return 0;
		}
	}
	if (grow_array(&b->stacks, &b->cap_stacks, b->n_stacks, sizeof(*b->stacks)) < 0)
		return -ENOMEM;
	s = arena_alloc(&b->a, sizeof(*s));
	if (!s)
		return -ENOMEM;
	hostprof__stack__init(s);
	s->n_frames = n;
	s->frames = arena_alloc(&b->a, n * sizeof(*s->frames));
	if (!s->frames)
		return -ENOMEM;
	memcpy(s->frames, fidx, n * sizeof(*fidx));
	s->has_user = s->has_truncated = true;
	s->user = user;
	s->truncated = truncated;
	if (suspect) {
		s->has_suspect = s->suspect = true;
		b->suspect++;
	}
	b->stacks[b->n_stacks++] = s;
	b->stack_map.hashes[j] = h;
	b->stack_map.idx[j] = b->n_stacks;
	b->stack_map.n++;
	*ret = b->n_stacks;
	return 0;
}

/* The native frames of addrs[0..n) into fidx; *ret_suspect: one lies outside any executable mapping. */
static int intern_native(struct snap_build *b, const __u64 *addrs, size_t n, bool user, uint32_t pid,
			 uint32_t *fidx, bool *ret_suspect)
{
	*ret_suspect = false;
	for (size_t i = 0; i < n; i++) {
		struct frame_key k = { .addr = addrs[i], .pid = user ? pid : 0, .kernel = !user, .leaf = i == 0 };
		bool outside = false;
		int r = intern_frame(b, &k, &fidx[i], &outside);

		if (r < 0)
			return r;
		*ret_suspect |= outside;
	}
	return 0;
}

/* The stack of addrs[0..n) (innermost first), native frames only: index + 1 into the
 * stacks, 0 when empty; the same addresses of the same process give the same stack. */
static int intern_stack(struct snap_build *b, const __u64 *addrs, size_t n, bool user, uint32_t pid,
			bool truncated, uint32_t *ret)
{
	uint32_t fidx[2 * HP_MAX_STACK];
	uint64_t h;
	bool suspect;
	size_t j;
	int r;

	*ret = 0;
	n = MIN(n, (size_t)HP_MAX_STACK * 2);
	if (!n)
		return 0;
	pid = user ? pid : 0;
	h = mix64(mix64(mix64(pid, n), user), truncated);
	for (size_t i = 0; i < n; i++)
		h = mix64(h, addrs[i]);
	if ((b->raw_map.n + 1) * 2 > b->raw_map.cap && idxmap_grow(&b->raw_map) < 0)
		return -ENOMEM;
	for (j = h & (b->raw_map.cap - 1); b->raw_map.idx[j]; j = (j + 1) & (b->raw_map.cap - 1)) {
		const struct raw_stack *s = &b->raws[b->raw_map.idx[j] - 1];

		if (b->raw_map.hashes[j] == h && s->n == n && s->pid == pid && s->user == user &&
		    s->truncated == truncated && !memcmp(s->addrs, addrs, n * sizeof(*addrs))) {
			*ret = s->stack;
			return 0;
		}
	}
	r = intern_native(b, addrs, n, user, pid, fidx, &suspect);
	if (r < 0)
		return r;
	r = intern_stack_frames(b, fidx, n, user, truncated, suspect, ret);
	if (r < 0 || grow_array(&b->raws, &b->cap_raws, b->n_raws, sizeof(*b->raws)) < 0)
		return r < 0 ? r : -ENOMEM;
	b->raws[b->n_raws++] = (struct raw_stack){
		.addrs = addrs, .pid = pid, .n = (uint16_t)n, .user = user, .truncated = truncated, .stack = *ret
	};
	b->raw_map.hashes[j] = h;
	b->raw_map.idx[j] = b->n_raws;
	b->raw_map.n++;
	return 0;
}

static int cmp_pystack(const void *a, const void *b)
{
	const struct hp_pystack *x = *(const struct hp_pystack *const *)a;
	const struct hp_pystack *y = *(const struct hp_pystack *const *)b;

	if (x->kind != y->kind)
		return x->kind < y->kind ? -1 : 1;
	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	return x->key_ts < y->key_ts ? -1 : x->key_ts > y->key_ts;
}

static const struct hp_pystack *find_pystack(struct snap_build *b, unsigned kind, uint32_t tid, uint64_t key_ts)
{
	struct recvec *pys = &b->recs[TBL_PYSTACKS];
	size_t lo = 0, hi = pys->n;

	if (!b->pystacks_sorted) {
		qsort_safe(pys->v, pys->n, sizeof(*pys->v), cmp_pystack);
		b->pystacks_sorted = true;
	}
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		const struct hp_pystack *u = (const void *)pys->v[mid];
		int c = u->kind != kind ? (u->kind < kind ? -1 : 1) :
			u->tid != tid	? (u->tid < tid ? -1 : 1) :
			u->key_ts != key_ts ? (u->key_ts < key_ts ? -1 : 1) : 0;

		if (!c)
			return u;
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

static bool is_eval_frame(const Hostprof__Frame *f)
{
	return f->function && !strcmp(f->function, "_PyEval_EvalFrameDefault");
}

/*
 * A user stack with the Python stack the kernel walked for it (py, or NULL): the Python
 * frames in place of the native _PyEval_EvalFrameDefault frames that ran them, one run of
 * the eval loop each (the innermost run for the innermost eval frame). Python frames
 * left over when the native stack has no more eval frames (it ends early: no frame
 * pointers in the interpreter) go outermost. A Python stack that cannot be resolved
 * (not code objects any more, the process gone) is counted and left out: the native
 * stack stays alone, never a wrong name.
 */
static int intern_user_stack(struct snap_build *b, const __u64 *addrs, size_t n, uint32_t pid, bool truncated,
			     const struct hp_pystack *py, uint32_t *ret)
{
	const struct snapshot_ctx *ctx = b->ctx;
	struct snap_pyframe pf[HP_PY_MAX_FRAMES];
	uint32_t nat[HP_MAX_STACK * 2], out[HP_MAX_STACK * 2 + HP_PY_MAX_FRAMES];
	size_t m = 0, k = 0, next = 0;
	bool suspect, anchored = false;
	const char *why = NULL;
	int r;

	if (!py)
		return intern_stack(b, addrs, n, true, pid, truncated, ret);
	n = MIN(n, (size_t)HP_MAX_STACK * 2);
	r = intern_native(b, addrs, n, true, pid, nat, &suspect);
	if (r < 0)
		return r;
	if (py->flags & HP_PY_LOOP) {
		b->py_unreadable++;
		if (!b->py_reason)
			b->py_reason = "python stack unreadable: the frames loop";
	} else if (ctx->py_resolve) {
		r = ctx->py_resolve(ctx->py_ud, pid, py->hdr.ts, (const uint64_t *)py->frames, MIN((size_t)py->n_frames, (size_t)HP_PY_MAX_FRAMES), pf,
				    &m, &why);
		if (r == -ENOMEM)
			return r;
		if (r < 0) {
			m = 0;
			b->py_unreadable++;
			if (!b->py_reason)
				b->py_reason = why ? why : "python stack unreadable";
		} else {
			b->py_merged++;
			b->py_read_failures += !!(py->flags & HP_PY_READ_FAIL);
			b->py_truncated += !!(py->flags & HP_PY_TRUNC);
		}
	}
	for (size_t i = 0; i < n; i++) {
		if (next < m && is_eval_frame(b->frames[nat[i]])) {
			/* this run of the eval loop: the frames up to its entry frame */
			anchored = true;
			while (next < m) {
				r = intern_py_frame(b, pid, &pf[next], &out[k]);
				if (r < 0)
					return r;
				k++;
				if (pf[next++].eval_entry)
					break;
			}
			continue;
		}
		out[k++] = nat[i];
	}
	if (next < m && !anchored)
		b->py_unanchored++;
	for (; next < m; next++) {
		r = intern_py_frame(b, pid, &pf[next], &out[k]);
		if (r < 0)
			return r;
		k++;
	}
	return intern_stack_frames(b, out, k, true, truncated, suspect, ret);
}

/* ---- the tables: one `new` per table, one `row` per record type ---- */

/* The table of each record type, and how one of its records becomes row i of it. */
struct snap_kind {
	unsigned table; /* TBL_* */
	int (*row)(struct snap_build *b, size_t i, const struct hp_hdr *h);
};

/* A record's duration as its row holds it. One that came out negative in the kernel (its
 * program's two clock reads raced with another's) is none: wrapped, it would make the
 * snapshot inconsistent (hps_validate()) and every later one of the process with it. */
static uint64_t row_dur(uint64_t dur)
{
	return (int64_t)dur < 0 ? 0 : dur;
}

/* ts_delta of sorted records, chained from start */
static void fill_deltas(uint64_t *delta, const struct recvec *rv, uint64_t start)
{
	uint64_t prev = start;

	for (size_t i = 0; i < rv->n; i++) {
		uint64_t ts = MAX(rv->v[i]->ts, prev); /* never negative: start may be later than a record */

		delta[i] = ts - prev;
		prev = ts;
	}
}

static uint64_t *switches_new(struct snap_build *b, size_t n)
{
	Hostprof__SchedSwitchTable *t = arena_alloc(&b->a, sizeof(*t));

	if (!t)
		return NULL;
	hostprof__sched_switch_table__init(t);
	COLUMN(&b->a, t, ts_delta, n);
	COLUMN(&b->a, t, cpu, n);
	COLUMN(&b->a, t, prev_tid, n);
	COLUMN(&b->a, t, prev_pid, n);
	COLUMN(&b->a, t, prev_comm, n);
	COLUMN(&b->a, t, prev_prio, n);
	COLUMN(&b->a, t, prev_state, n);
	COLUMN(&b->a, t, next_tid, n);
	COLUMN(&b->a, t, next_pid, n);
	COLUMN(&b->a, t, next_comm, n);
	COLUMN(&b->a, t, next_prio, n);
	COLUMN(&b->a, t, prev_policy, n);
	COLUMN(&b->a, t, next_policy, n);
	COLUMN(&b->a, t, next_wait_ns, n);
	COLUMN(&b->a, t, next_wait_kind, n);
	b->snap.switches = t;
	return t->ts_delta;
}

static int switch_row(struct snap_build *b, size_t i, const struct hp_hdr *h)
{
	Hostprof__SchedSwitchTable *t = b->snap.switches;
	const struct hp_switch *e = (const void *)h;
	int r;

	t->cpu[i] = e->hdr.cpu;
	t->prev_tid[i] = e->prev_tid;
	t->prev_pid[i] = e->prev_pid;
	t->prev_prio[i] = e->prev_prio;
	t->prev_state[i] = e->prev_state;
	t->next_tid[i] = e->next_tid;
	t->next_pid[i] = e->next_pid;
	t->next_prio[i] = e->next_prio;
	t->prev_policy[i] = e->prev_policy;
	t->next_policy[i] = e->next_policy;
	t->next_wait_ns[i] = e->next_wait_ns;
	t->next_wait_kind[i] = e->next_wait_kind;
	r = strtab_intern_comm(&b->strs, &b->a, e->prev_comm, &t->prev_comm[i]);
	if (r >= 0)
		r = strtab_intern_comm(&b->strs, &b->a, e->next_comm, &t->next_comm[i]);
	return r;
}

static const struct snap_kind kind_switch = { TBL_SWITCHES, switch_row };

static uint64_t *wakeups_new(struct snap_build *b, size_t n)
{
	Hostprof__WakeupTable *t = arena_alloc(&b->a, sizeof(*t));

	if (!t)
		return NULL;
	hostprof__wakeup_table__init(t);
	COLUMN(&b->a, t, ts_delta, n);
	COLUMN(&b->a, t, cpu, n);
	COLUMN(&b->a, t, tid, n);
	COLUMN(&b->a, t, pid, n);
	COLUMN(&b->a, t, target_cpu, n);
	COLUMN(&b->a, t, waker_tid, n);
	COLUMN(&b->a, t, waker_pid, n);
	COLUMN(&b->a, t, waker_comm, n);
	COLUMN(&b->a, t, flags, n);
	b->snap.wakeups = t;
	return t->ts_delta;
}

static int wake_row(struct snap_build *b, size_t i, const struct hp_hdr *h)
{
	Hostprof__WakeupTable *t = b->snap.wakeups;
	const struct hp_wake *e = (const void *)h;

	t->cpu[i] = e->hdr.cpu;
	t->tid[i] = e->tid;
	t->pid[i] = e->pid;
	t->target_cpu[i] = e->target_cpu;
	t->waker_tid[i] = e->waker_tid;
	t->waker_pid[i] = e->waker_pid;
	t->flags[i] = e->flags;
	return strtab_intern_comm(&b->strs, &b->a, e->waker_comm, &t->waker_comm[i]);
}

static const struct snap_kind kind_wake = { TBL_WAKEUPS, wake_row };

static uint64_t *migrations_new(struct snap_build *b, size_t n)
{
	Hostprof__MigrationTable *t = arena_alloc(&b->a, sizeof(*t));

	if (!t)
		return NULL;
	hostprof__migration_table__init(t);
	COLUMN(&b->a, t, ts_delta, n);
	COLUMN(&b->a, t, tid, n);
	COLUMN(&b->a, t, pid, n);
	COLUMN(&b->a, t, from_cpu, n);
	COLUMN(&b->a, t, to_cpu, n);
	b->snap.migrations = t;
	return t->ts_delta;
}

static int migrate_row(struct snap_build *b, size_t i, const struct hp_hdr *h)
{
	Hostprof__MigrationTable *t = b->snap.migrations;
	const struct hp_migrate *e = (const void *)h;

	t->tid[i] = e->tid;
	t->pid[i] = e->pid;
	t->from_cpu[i] = e->from_cpu;
	t->to_cpu[i] = e->to_cpu;
	return 0;
}

static const struct snap_kind kind_migrate = { TBL_MIGRATIONS, migrate_row };

static uint64_t *syscalls_new(struct snap_build *b, size_t n)
{
	Hostprof__SyscallTable *t = arena_alloc(&b->a, sizeof(*t));

	if (!t)
		return NULL;
	hostprof__syscall_table__init(t);
	COLUMN(&b->a, t, ts_delta, n);
	COLUMN(&b->a, t, dur_ns, n);
	COLUMN(&b->a, t, tid, n);
	COLUMN(&b->a, t, pid, n);
	COLUMN(&b->a, t, nr, n);
	COLUMN(&b->a, t, ret, n);
	COLUMN(&b->a, t, arg0, n);
	COLUMN(&b->a, t, arg1, n);
	COLUMN(&b->a, t, arg2, n);
	COLUMN(&b->a, t, cpu, n);
	/* flags only where some row has them (syscalls = blocking) */
	for (size_t i = 0; i < n; i++)
		if (((const struct hp_syscall *)b->recs[TBL_SYSCALLS].v[i])->flags) {
			COLUMN(&b->a, t, flags, n);
			break;
		}
	b->snap.syscalls = t;
	return t->ts_delta;
}

static int syscall_row(struct snap_build *b, size_t i, const struct hp_hdr *h)
{
	Hostprof__SyscallTable *t = b->snap.syscalls;
	const struct hp_syscall *e = (const void *)h;

	t->dur_ns[i] = row_dur(e->dur_ns);
	t->tid[i] = e->tid;
	t->pid[i] = e->pid;
	t->nr[i] = e->nr;
	t->ret[i] = e->ret;
	t->arg0[i] = e->args[0];
	t->arg1[i] = e->args[1];
	t->arg2[i] = e->args[2];
	t->cpu[i] = e->hdr.cpu;
	if (t->n_flags)
		t->flags[i] = e->flags;
	return 0;
}

static const struct snap_kind kind_syscall = { TBL_SYSCALLS, syscall_row };

static int cmp_ustack(const void *a, const void *b)
{
	const struct hp_ustack *x = *(const struct hp_ustack *const *)a;
	const struct hp_ustack *y = *(const struct hp_ustack *const *)b;

	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	return x->off_ts < y->off_ts ? -1 : x->off_ts > y->off_ts;
}

static const struct hp_ustack *find_ustack(const struct snap_build *b, uint32_t tid, uint64_t off_ts)
{
	const struct recvec *ust = &b->recs[TBL_USTACKS];
	size_t lo = 0, hi = ust->n;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		const struct hp_ustack *u = (const void *)ust->v[mid];

		if (u->tid < tid || (u->tid == tid && u->off_ts < off_ts))
			lo = mid + 1;
		else if (u->tid == tid && u->off_ts == off_ts)
			return u;
		else
			hi = mid;
	}
	return NULL;
}

static uint64_t *offcpu_new(struct snap_build *b, size_t n)
{
	Hostprof__OffCpuTable *t = arena_alloc(&b->a, sizeof(*t));
	struct recvec *ust = &b->recs[TBL_USTACKS];

	if (!t)
		return NULL;
	hostprof__off_cpu_table__init(t);
	COLUMN(&b->a, t, ts_delta, n);
	COLUMN(&b->a, t, dur_ns, n);
	COLUMN(&b->a, t, tid, n);
	COLUMN(&b->a, t, pid, n);
	COLUMN(&b->a, t, state, n);
	COLUMN(&b->a, t, waker_tid, n);
	COLUMN(&b->a, t, waker_pid, n);
	COLUMN(&b->a, t, waker_comm, n);
	COLUMN(&b->a, t, kstack, n);
	COLUMN(&b->a, t, ustack, n);
	COLUMN(&b->a, t, cpu, n);
	/* syscalls = exact: user stacks came separately, at the syscall's exit: join on (tid, off_ts) */
	qsort_safe(ust->v, ust->n, sizeof(*ust->v), cmp_ustack);
	b->snap.offcpu = t;
	return t->ts_delta;
}

static int offcpu_row(struct snap_build *b, size_t i, const struct hp_hdr *h)
{
	Hostprof__OffCpuTable *t = b->snap.offcpu;
	const struct hp_offcpu *e = (const void *)h;
	const struct hp_ustack *u = NULL;
	int r;

	t->dur_ns[i] = row_dur(e->dur_ns);
	t->tid[i] = e->tid;
	t->pid[i] = e->pid;
	t->state[i] = e->state;
	t->waker_tid[i] = e->waker_tid;
	t->waker_pid[i] = e->waker_pid;
	t->cpu[i] = e->hdr.cpu;
	r = strtab_intern_comm(&b->strs, &b->a, e->waker_comm, &t->waker_comm[i]);
	if (r < 0)
		return r;
	r = intern_stack(b, e->frames, e->kstack_len, false, e->pid, e->stack_flags & HP_STACK_KTRUNC,
			 &t->kstack[i]);
	if (r < 0)
		return r;
	/* syscalls = blocking: the user stack came with it, after the kernel's */
	if (e->ustack_len)
		return intern_user_stack(b, e->frames + e->kstack_len, e->ustack_len, e->pid,
					 e->stack_flags & HP_STACK_UTRUNC,
					 find_pystack(b, HP_PY_FOR_OFFCPU, e->tid, e->hdr.ts), &t->ustack[i]);
	if (e->stack_flags & HP_STACK_USTACK_LATER)
		u = find_ustack(b, e->tid, e->hdr.ts);
	if (u)
		r = intern_user_stack(b, u->frames, u->ustack_len, e->pid, u->stack_flags & HP_STACK_UTRUNC,
				      find_pystack(b, HP_PY_FOR_OFFCPU, e->tid, e->hdr.ts), &t->ustack[i]);
	return r;
}

static const struct snap_kind kind_offcpu = { TBL_OFFCPU, offcpu_row };
/* no rows of its own: joined into the off-CPU interval's (offcpu_row) */
static const struct snap_kind kind_ustack = { TBL_USTACKS, NULL };
/* no rows of its own: joined into the sample's or the off-CPU interval's (intern_user_stack) */
static const struct snap_kind kind_pystack = { TBL_PYSTACKS, NULL };

static uint64_t *pygc_new(struct snap_build *b, size_t n)
{
	Hostprof__PythonGcTable *t = arena_alloc(&b->a, sizeof(*t));

	if (!t)
		return NULL;
	hostprof__python_gc_table__init(t);
	COLUMN(&b->a, t, ts_delta, n);
	COLUMN(&b->a, t, dur_ns, n);
	COLUMN(&b->a, t, tid, n);
	COLUMN(&b->a, t, pid, n);
	COLUMN(&b->a, t, generation, n);
	COLUMN(&b->a, t, collected, n);
	b->snap.python_gc = t;
	return t->ts_delta;
}

static int pygc_row(struct snap_build *b, size_t i, const struct hp_hdr *h)
{
	Hostprof__PythonGcTable *t = b->snap.python_gc;
	const struct hp_pygc *e = (const void *)h;

	t->dur_ns[i] = row_dur(e->dur_ns);
	t->tid[i] = e->tid;
	t->pid[i] = e->pid;
	t->generation[i] = e->generation;
	t->collected[i] = e->collected;
	return 0;
}

static const struct snap_kind kind_pygc = { TBL_PYGC, pygc_row };

static uint64_t *irqs_new(struct snap_build *b, size_t n)
{
	Hostprof__IrqTable *t = arena_alloc(&b->a, sizeof(*t));

	if (!t)
		return NULL;
	hostprof__irq_table__init(t);
	COLUMN(&b->a, t, ts_delta, n);
	COLUMN(&b->a, t, dur_ns, n);
	COLUMN(&b->a, t, cpu, n);
	COLUMN(&b->a, t, kind, n);
	COLUMN(&b->a, t, num, n);
	COLUMN(&b->a, t, name, n);
	COLUMN(&b->a, t, tid, n);
	COLUMN(&b->a, t, pid, n);
	COLUMN(&b->a, t, flags, n);
	b->snap.irqs = t;
	return t->ts_delta;
}

static int irq_row(struct snap_build *b, size_t i, const struct hp_hdr *h)
{
	Hostprof__IrqTable *t = b->snap.irqs;
	const struct hp_irq *e = (const void *)h;
	char name[HP_COMM_LEN + 1];

	t->dur_ns[i] = row_dur(e->dur_ns);
	t->cpu[i] = e->hdr.cpu;
	t->kind[i] = e->kind;
	t->num[i] = e->num;
	t->tid[i] = e->tid;
	t->pid[i] = e->pid;
	t->flags[i] = e->flags;
	if (e->kind == HP_IRQ_SOFT)
		snprintf(name, sizeof(name), "%s", hps_softirq_name(e->num));
	else
		snprintf(name, sizeof(name), "%.*s", HP_COMM_LEN, e->name);
	return strtab_intern(&b->strs, &b->a, name, &t->name[i]);
}

static const struct snap_kind kind_irq = { TBL_IRQS, irq_row };

static uint64_t *reclaims_new(struct snap_build *b, size_t n)
{
	Hostprof__ReclaimTable *t = arena_alloc(&b->a, sizeof(*t));

	if (!t)
		return NULL;
	hostprof__reclaim_table__init(t);
	COLUMN(&b->a, t, ts_delta, n);
	COLUMN(&b->a, t, dur_ns, n);
	COLUMN(&b->a, t, tid, n);
	COLUMN(&b->a, t, pid, n);
	COLUMN(&b->a, t, kind, n);
	COLUMN(&b->a, t, order, n);
	COLUMN(&b->a, t, gfp, n);
	COLUMN(&b->a, t, result, n);
	COLUMN(&b->a, t, cpu, n);
	b->snap.reclaims = t;
	return t->ts_delta;
}

static int reclaim_row(struct snap_build *b, size_t i, const struct hp_hdr *h)
{
	Hostprof__ReclaimTable *t = b->snap.reclaims;
	const struct hp_reclaim *e = (const void *)h;

	t->dur_ns[i] = row_dur(e->dur_ns);
	t->tid[i] = e->tid;
	t->pid[i] = e->pid;
	t->kind[i] = e->kind;
	t->order[i] = e->order;
	t->gfp[i] = e->gfp;
	t->result[i] = e->result;
	t->cpu[i] = e->hdr.cpu;
	return 0;
}

static const struct snap_kind kind_reclaim = { TBL_RECLAIMS, reclaim_row };

static uint64_t *faults_new(struct snap_build *b, size_t n)
{
	Hostprof__FaultTable *t = arena_alloc(&b->a, sizeof(*t));

	if (!t)
		return NULL;
	hostprof__fault_table__init(t);
	COLUMN(&b->a, t, ts_delta, n);
	COLUMN(&b->a, t, dur_ns, n);
	COLUMN(&b->a, t, tid, n);
	COLUMN(&b->a, t, pid, n);
	COLUMN(&b->a, t, faults, n);
	COLUMN(&b->a, t, write, n);
	COLUMN(&b->a, t, exec, n);
	COLUMN(&b->a, t, prot, n);
	COLUMN(&b->a, t, minor, n);
	COLUMN(&b->a, t, major, n);
	b->snap.faults = t;
	return t->ts_delta;
}

static int faults_row(struct snap_build *b, size_t i, const struct hp_hdr *h)
{
	Hostprof__FaultTable *t = b->snap.faults;
	const struct hp_faults *e = (const void *)h;

	t->dur_ns[i] = row_dur(e->dur_ns);
	t->tid[i] = e->tid;
	t->pid[i] = e->pid;
	t->faults[i] = e->faults;
	t->write[i] = e->write;
	t->exec[i] = e->exec;
	t->prot[i] = e->prot;
	t->minor[i] = e->minor;
	t->major[i] = e->major;
	return 0;
}

static const struct snap_kind kind_faults = { TBL_FAULTS, faults_row };

/*
 * A stack read inside a tracepoint program begins with the tracing machinery: the BPF
 * program itself, bpf_trace_run<N>, and on kernels without static calls
 * __bpf_trace_<event> and __traceiter_<event>. The frames to skip, up to the first
 * that is none of those.
 */
static size_t tracing_frames(const struct snap_build *b, const __u64 *addrs, size_t n, uint32_t pid)
{
	static const char *const prefixes[] = { "bpf_prog_", "bpf_trace_run", "__bpf_trace_", "__traceiter_" };
	const struct snapshot_ctx *ctx = b->ctx;
	size_t skip = 0;

	if (!ctx->resolve)
		return 0;
	while (skip < n && skip < 6) {
		struct sym_result res = {};
		bool tracing = false;

		if (ctx->resolve(ctx->resolve_ud, pid, addrs[skip], true, &res) < 0)
			break;
		if (!res.function) {
			/* the JIT'd program: unresolved, or outside every kernel text symbol */
			tracing = skip == 0;
		} else {
			for (size_t i = 0; i < ARRAY_SIZE(prefixes) && !tracing; i++)
				tracing = !strncmp(res.function, prefixes[i], strlen(prefixes[i]));
		}
		if (!tracing)
			break;
		skip++;
	}
	return skip == n ? 0 : skip;
}

static uint64_t *locks_new(struct snap_build *b, size_t n)
{
	Hostprof__LockTable *t = arena_alloc(&b->a, sizeof(*t));

	if (!t)
		return NULL;
	hostprof__lock_table__init(t);
	COLUMN(&b->a, t, ts_delta, n);
	COLUMN(&b->a, t, dur_ns, n);
	COLUMN(&b->a, t, tid, n);
	COLUMN(&b->a, t, pid, n);
	COLUMN(&b->a, t, lock, n);
	COLUMN(&b->a, t, flags, n);
	COLUMN(&b->a, t, ret, n);
	COLUMN(&b->a, t, kstack, n);
	COLUMN(&b->a, t, cpu, n);
	COLUMN(&b->a, t, name, n);
	b->snap.locks = t;
	return t->ts_delta;
}

static int lock_row(struct snap_build *b, size_t i, const struct hp_hdr *h)
{
	Hostprof__LockTable *t = b->snap.locks;
	const struct hp_lock *e = (const void *)h;
	size_t skip;
	int r;

	t->dur_ns[i] = row_dur(e->dur_ns);
	t->tid[i] = e->tid;
	t->pid[i] = e->pid;
	t->lock[i] = e->lock;
	t->flags[i] = e->flags;
	t->ret[i] = e->ret;
	t->cpu[i] = e->hdr.cpu;
	r = strtab_intern(&b->strs, &b->a, e->flags & HP_LOCK_MMAP ? "mmap_lock" : "", &t->name[i]);
	if (r < 0 || !e->kstack_len)
		return r;
	skip = tracing_frames(b, e->frames, e->kstack_len, e->pid);
	return intern_stack(b, e->frames + skip, e->kstack_len - skip, false, e->pid,
			    e->stack_flags & HP_STACK_KTRUNC, &t->kstack[i]);
}

static const struct snap_kind kind_lock = { TBL_LOCKS, lock_row };

static uint64_t *gil_new(struct snap_build *b, size_t n)
{
	Hostprof__GilTable *t = arena_alloc(&b->a, sizeof(*t));

	if (!t)
		return NULL;
	hostprof__gil_table__init(t);
	COLUMN(&b->a, t, ts_delta, n);
	COLUMN(&b->a, t, dur_ns, n);
	COLUMN(&b->a, t, tid, n);
	COLUMN(&b->a, t, pid, n);
	COLUMN(&b->a, t, holder_tid, n);
	COLUMN(&b->a, t, first_holder_tid, n);
	COLUMN(&b->a, t, waits, n);
	COLUMN(&b->a, t, blocked_ns, n);
	COLUMN(&b->a, t, holder_stack, n);
	/* at most a stack per row, GIL_FRAMES_MAX frames each: n_ counts what is used */
	t->stacks = arena_alloc(&b->a, n * sizeof(*t->stacks));
	t->frames = arena_alloc(&b->a, n * GIL_FRAMES_MAX * sizeof(*t->frames));
	b->snap.gil = t;
	return t->ts_delta;
}

/* The holder's stack the daemon read for the wait of tid that began at ts, or NULL. */
static const struct gil_stack *gil_stack_for(const struct gil_state *g, uint64_t ts, uint32_t tid)
{
	for (size_t i = 0; i < g->n_stacks; i++) {
		const struct gil_stack *s = &g->stacks[(g->next + GIL_STACKS_MAX - 1 - i) % GIL_STACKS_MAX];

		if (s->wait_ts == ts && s->tid == tid)
			return s;
	}
	return NULL;
}

#define GIL_SAMPLE_SCAN 4096 /* samples looked at inside one wait, at most */

/*
 * The holder's own CPU sample taken inside the wait [ts, end) that has Python frames (the
 * latest such), as a user stack of the snapshot; NULL if none. The samples' rows are their
 * records' order (sorted by time), and their stacks are interned already: TBL_SAMPLES is
 * filled before TBL_GIL.
 */
static const Hostprof__Stack *gil_sampled_stack(const struct snap_build *b, uint32_t holder, uint64_t ts,
						uint64_t end, uint64_t *ret_sample_ts)
{
	const struct recvec *rv = &b->recs[TBL_SAMPLES];
	const Hostprof__SampleTable *t = b->snap.samples;
	const Hostprof__Stack *best = NULL;
	size_t lo = 0, hi = rv->n;

	if (!t || !holder || t->n_ustack != rv->n)
		return NULL;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (rv->v[mid]->ts < ts)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (size_t k = lo, seen = 0; k < rv->n && rv->v[k]->ts < end && seen < GIL_SAMPLE_SCAN; k++, seen++) {
		const Hostprof__Stack *st;

		if (t->tid[k] != holder || !t->ustack[k] || t->ustack[k] > b->n_stacks)
			continue;
		st = b->stacks[t->ustack[k] - 1];
		for (size_t f = 0; f < st->n_frames; f++)
			if (st->frames[f] < b->n_frames && b->frames[st->frames[f]]->python) {
				best = st;
				*ret_sample_ts = rv->v[k]->ts;
				break;
			}
	}
	return best;
}

/* GilTable row i's holder stack from a sample of the holder inside the wait (when 3). */
static int gil_row_sampled(struct snap_build *b, size_t i, const Hostprof__Stack *us, uint64_t lag_ns)
{
	Hostprof__GilTable *t = b->snap.gil;
	Hostprof__GilStack *st;
	size_t n = 0;

	st = arena_alloc(&b->a, sizeof(*st));
	if (!st)
		return -ENOMEM;
	hostprof__gil_stack__init(st);
	st->has_when = st->has_lag_ns = true;
	st->when = 3;
	st->lag_ns = lag_ns;
	COLUMN(&b->a, st, frames, GIL_FRAMES_MAX);
	if (!st->frames)
		return -ENOMEM;
	for (size_t f = 0; f < us->n_frames && n < GIL_FRAMES_MAX; f++) {
		const Hostprof__Frame *nf = us->frames[f] < b->n_frames ? b->frames[us->frames[f]] : NULL;
		Hostprof__PythonFrame *fr;

		if (!nf || !nf->python)
			continue;
		fr = arena_alloc(&b->a, sizeof(*fr));
		if (!fr)
			return -ENOMEM;
		hostprof__python_frame__init(fr);
		fr->function = arena_strdup(&b->a, nf->function ? nf->function : "");
		fr->file = arena_strdup(&b->a, nf->file ? nf->file : "");
		fr->has_line = true;
		fr->line = nf->line;
		st->frames[n++] = t->n_frames;
		t->frames[t->n_frames++] = fr;
	}
	st->n_frames = n;
	t->stacks[t->n_stacks++] = st;
	t->holder_stack[i] = t->n_stacks;
	return 0;
}

static int gil_row(struct snap_build *b, size_t i, const struct hp_hdr *h)
{
	Hostprof__GilTable *t = b->snap.gil;
	const struct hp_gil *e = (const void *)h;
	const struct gil_stack *gs;
	const Hostprof__Stack *us;
	Hostprof__GilStack *st;
	uint64_t sample_ts = 0;

	t->dur_ns[i] = row_dur(e->dur_ns);
	t->tid[i] = e->tid;
	t->pid[i] = e->pid;
	t->holder_tid[i] = e->holder_tid;
	t->first_holder_tid[i] = e->first_holder_tid;
	t->waits[i] = e->waits;
	t->blocked_ns[i] = e->blocked_ns;
	t->holder_stack[i] = 0;
	/* what the holder ran while it held the GIL: its own sample inside the wait, where
	 * there is one; else what the daemon read after the wait */
	us = gil_sampled_stack(b, e->holder_tid, e->hdr.ts, e->hdr.ts + row_dur(e->dur_ns), &sample_ts);
	if (us)
		return gil_row_sampled(b, i, us, e->hdr.ts + row_dur(e->dur_ns) - sample_ts);
	gs = b->p ? gil_stack_for(&b->p->gil, e->hdr.ts, e->tid) : NULL;
	if (!gs || !gs->n_frames) {
		t->stacks_missed++;
		return 0;
	}
	st = arena_alloc(&b->a, sizeof(*st));
	if (!st)
		return -ENOMEM;
	hostprof__gil_stack__init(st);
	st->has_when = st->has_lag_ns = true;
	st->when = 1;
	st->lag_ns = gs->lag_ns;
	COLUMN(&b->a, st, frames, gs->n_frames);
	if (!st->frames)
		return -ENOMEM;
	for (uint32_t k = 0; k < gs->n_frames; k++) {
		Hostprof__PythonFrame *fr = arena_alloc(&b->a, sizeof(*fr));

		if (!fr)
			return -ENOMEM;
		hostprof__python_frame__init(fr);
		fr->function = arena_strdup(&b->a, gs->frames[k].function ? gs->frames[k].function : "");
		fr->file = arena_strdup(&b->a, gs->frames[k].file ? gs->frames[k].file : "");
		fr->has_line = fr->has_first_line = true;
		fr->line = gs->frames[k].line;
		fr->first_line = gs->frames[k].first_line;
		st->frames[k] = t->n_frames;
		t->frames[t->n_frames++] = fr;
	}
	t->stacks[t->n_stacks++] = st;
	t->holder_stack[i] = t->n_stacks;
	return 0;
}

static const struct snap_kind kind_gil = { TBL_GIL, gil_row };

static uint64_t *samples_new(struct snap_build *b, size_t n)
{
	Hostprof__SampleTable *t = arena_alloc(&b->a, sizeof(*t));

	if (!t)
		return NULL;
	hostprof__sample_table__init(t);
	COLUMN(&b->a, t, ts_delta, n);
	COLUMN(&b->a, t, cpu, n);
	COLUMN(&b->a, t, tid, n);
	COLUMN(&b->a, t, pid, n);
	COLUMN(&b->a, t, kstack, n);
	COLUMN(&b->a, t, ustack, n);
	b->snap.samples = t;
	return t->ts_delta;
}

static int sample_row(struct snap_build *b, size_t i, const struct hp_hdr *h)
{
	Hostprof__SampleTable *t = b->snap.samples;
	const struct hp_sample *e = (const void *)h;
	int r;

	t->cpu[i] = e->hdr.cpu;
	t->tid[i] = e->tid;
	t->pid[i] = e->pid;
	r = intern_stack(b, e->frames, e->kstack_len, false, e->pid, e->stack_flags & HP_STACK_KTRUNC,
			 &t->kstack[i]);
	if (r >= 0)
		r = intern_user_stack(b, e->frames + e->kstack_len, e->ustack_len, e->pid,
				      e->stack_flags & HP_STACK_UTRUNC,
				      find_pystack(b, HP_PY_FOR_SAMPLE, e->tid, e->hdr.ts), &t->ustack[i]);
	return r;
}

static const struct snap_kind kind_sample = { TBL_SAMPLES, sample_row };

/* Forks, exits, execs and renames, one table; kind 1 fork, 2 exit, 3 exec, 4 rename. */
static uint64_t *task_events_new(struct snap_build *b, size_t n)
{
	Hostprof__TaskEventTable *t = arena_alloc(&b->a, sizeof(*t));

	if (!t)
		return NULL;
	hostprof__task_event_table__init(t);
	COLUMN(&b->a, t, ts_delta, n);
	COLUMN(&b->a, t, kind, n);
	COLUMN(&b->a, t, tid, n);
	COLUMN(&b->a, t, pid, n);
	COLUMN(&b->a, t, child_tid, n);
	COLUMN(&b->a, t, child_pid, n);
	COLUMN(&b->a, t, comm, n);
	b->snap.task_events = t;
	return t->ts_delta;
}

/* Row i of the task events: its kind, the task, and the name it took (NULL: none). */
static int task_event_row(struct snap_build *b, size_t i, uint32_t kind, uint32_t tid, uint32_t pid,
			  const char *comm)
{
	Hostprof__TaskEventTable *t = b->snap.task_events;

	t->kind[i] = kind;
	t->tid[i] = tid;
	t->pid[i] = pid;
	return comm ? strtab_intern(&b->strs, &b->a, comm, &t->comm[i]) : 0;
}

static int fork_row(struct snap_build *b, size_t i, const struct hp_hdr *h)
{
	const struct hp_fork *e = (const void *)h;

	b->snap.task_events->child_tid[i] = e->child_tid;
	b->snap.task_events->child_pid[i] = e->child_pid;
	return task_event_row(b, i, 1, e->parent_tid, e->parent_pid, e->comm);
}

static int exit_row(struct snap_build *b, size_t i, const struct hp_hdr *h)
{
	const struct hp_exit *e = (const void *)h;

	return task_event_row(b, i, 2, e->tid, e->pid, NULL);
}

static int exec_row(struct snap_build *b, size_t i, const struct hp_hdr *h)
{
	const struct hp_exec *e = (const void *)h;

	return task_event_row(b, i, 3, e->tid, e->pid, e->comm);
}

static int comm_row(struct snap_build *b, size_t i, const struct hp_hdr *h)
{
	const struct hp_comm *e = (const void *)h;

	return task_event_row(b, i, 4, e->tid, e->pid, e->comm);
}

static const struct snap_kind kind_fork = { TBL_TASK_EVENTS, fork_row };
static const struct snap_kind kind_exit = { TBL_TASK_EVENTS, exit_row };
static const struct snap_kind kind_exec = { TBL_TASK_EVENTS, exec_row };
static const struct snap_kind kind_comm = { TBL_TASK_EVENTS, comm_row };
/* the rename that made its process watched: a rename */
static const struct snap_kind kind_watch = { TBL_TASK_EVENTS, comm_row };

/* refused by the recorder: the drain made samples of them */
static const struct snap_kind kind_rawsample = { TBL_NONE, NULL };
static const struct snap_kind kind_rawustack = { TBL_NONE, NULL };

/* Every record type's kind_<name>: a type of HP_RECORDS without one does not compile. */
static const struct snap_kind *const kinds[HP_EV_MAX] = {
#define X_KIND(type, st, name, frames) [type] = &kind_##name,
	HP_RECORDS(X_KIND)
#undef X_KIND
};

/*
 * The tables in TBL_* order. new: allocate the table for n rows, hang it on the snapshot,
 * return its ts_delta column (NULL: not a table of its own). host: the --cpus host
 * recorder's records go in too (it holds switches only).
 */
static const struct snap_table {
	uint64_t *(*new)(struct snap_build *b, size_t n);
	bool host;
} tables[TBL_MAX] = {
	[TBL_SWITCHES] = { switches_new, true },
	[TBL_WAKEUPS] = { wakeups_new, false },
	[TBL_MIGRATIONS] = { migrations_new, false },
	[TBL_SYSCALLS] = { syscalls_new, false },
	[TBL_OFFCPU] = { offcpu_new, false },
	[TBL_SAMPLES] = { samples_new, false },
	[TBL_TASK_EVENTS] = { task_events_new, false },
	[TBL_IRQS] = { irqs_new, false },
	[TBL_RECLAIMS] = { reclaims_new, false },
	[TBL_FAULTS] = { faults_new, false },
	[TBL_LOCKS] = { locks_new, false },
	[TBL_GIL] = { gil_new, false },
	[TBL_USTACKS] = { NULL, false },
	[TBL_PYSTACKS] = { NULL, false },
	[TBL_PYGC] = { pygc_new, false },
	[TBL_NONE] = { NULL, false },
};

/* ---- collecting ---- */

/* The records of the window, by table; the recorder keeps only records that parse. */
/*
 * Walk p's records in the window, each table's in arrival order: count them (b->recs[].cap
 * grows) or, with fill, put them in the vectors allocated at those counts.
 */
static void collect_walk(struct snap_build *b, const struct proc_rec *p, uint64_t from, uint64_t to, bool host,
			 bool fill)
{
	for (const struct chunk *c = p->head; c; c = c->next) {
		if (c->max_ts < from || c->min_ts > to)
			continue;
		for (uint32_t off = 0; off < c->used;) {
			const struct hp_hdr *h = (const void *)(c->data + off);
			unsigned table = kinds[h->type]->table;
			struct recvec *rv = &b->recs[table];

			off += h->size;
			if (h->ts < from || h->ts > to || (host && !tables[table].host))
				continue;
			if (!fill)
				rv->cap++;
			else if (rv->n < rv->cap)
				rv->v[rv->n++] = h;
		}
	}
}

/*
 * The window's records of p (and of the host recorder's, where there is one), into each
 * table's vector in arrival order. Counted first, so that each vector is allocated once,
 * at its size, and faulted in at once: grown by doubling, each growth copied the vector
 * into pages touched for the first time (a fault each, microseconds on a paravirtualized
 * VM). The second walk finds the records in the cache and in the page tables: ~3 ms for
 * ~380k records, against ~30 ms for the first.
 */
static int collect(struct snap_build *b, const struct proc_rec *p, const struct proc_rec *host, uint64_t from,
		   uint64_t to)
{
	collect_walk(b, p, from, to, false, false);
	if (host)
		collect_walk(b, host, from, to, true, false);
	for (size_t i = 0; i < TBL_MAX; i++) {
		struct recvec *rv = &b->recs[i];

		if (!rv->cap)
			continue;
		rv->v = malloc(rv->cap * sizeof(*rv->v));
		if (!rv->v)
			return -ENOMEM;
		prefault(rv->v, rv->cap * sizeof(*rv->v));
	}
	collect_walk(b, p, from, to, false, true);
	if (host)
		collect_walk(b, host, from, to, true, true);
	return 0;
}

/* One table: its rows, in the order of its records (sorted by time). */
static int fill_table(struct snap_build *b, unsigned table, uint64_t start)
{
	const struct recvec *rv = &b->recs[table];
	uint64_t *delta;
	int r;

	if (!tables[table].new)
		return 0;
	delta = tables[table].new(b, rv->n);
	if (b->a.err)
		return b->a.err;
	fill_deltas(delta, rv, start);
	for (size_t i = 0; i < rv->n; i++) {
		r = kinds[rv->v[i]->type]->row(b, i, rv->v[i]);
		if (r < 0)
			return r;
	}
	return 0;
}

/* The GIL's histograms (HP_HIST_NR_GIL): its table's totals, not syscalls. */
static int gil_total(struct snap_build *b, const struct hist_entry *e)
{
	Hostprof__GilTable *t = b->snap.gil;
	Hostprof__GilTotal *g;

	if (!t)
		return 0;
	if (!t->totals) {
		t->totals = arena_alloc(&b->a, b->ctx->n_hists * sizeof(*t->totals));
		if (!t->totals)
			return -ENOMEM;
	}
	g = arena_alloc(&b->a, sizeof(*g));
	if (!g)
		return -ENOMEM;
	hostprof__gil_total__init(g);
	g->has_tid = g->has_pid = g->has_count = g->has_total_ns = g->has_max_ns = true;
	g->tid = e->key.tid;
	g->pid = e->key.pid;
	g->count = e->h.count;
	g->total_ns = e->h.total_ns;
	g->max_ns = e->h.max_ns;
	COLUMN(&b->a, g, buckets, HP_HIST_BUCKETS);
	if (!g->buckets)
		return -ENOMEM;
	for (int k = 0; k < HP_HIST_BUCKETS; k++)
		g->buckets[k] = e->h.buckets[k];
	t->totals[t->n_totals++] = g;
	return 0;
}

/* The GIL table's head: what daemon/gil.c found; none at all for a process that is not
 * CPython and has no GIL waits. */
static void fill_gil(struct snap_build *b, const struct proc_rec *p)
{
	Hostprof__GilTable *t = b->snap.gil;

	if (!t)
		return;
	if (!p->gil.status && !t->n_ts_delta && !t->n_totals) {
		b->snap.gil = NULL;
		return;
	}
	t->has_status = t->has_gil_min_ns = t->has_stacks_missed = true;
	t->status = p->gil.status ? p->gil.status : GIL_STATUS_UNWATCHED;
	t->reason = arena_strdup(&b->a, p->gil.reason);
	t->version = arena_strdup(&b->a, p->gil.version);
	t->gil_min_ns = b->ctx->gil_min_ns;
	t->has_watched_since = p->gil.since_ns != 0;
	t->watched_since = p->gil.since_ns;
}

static int fill_histograms(struct snap_build *b)
{
	const struct snapshot_ctx *ctx = b->ctx;
	Hostprof__SyscallHistogram **v;
	size_t n = 0;
	int r;

	v = arena_alloc(&b->a, ctx->n_hists * sizeof(*v));
	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < ctx->n_hists; i++) {
		const struct hist_entry *e = &ctx->hists[i];
		Hostprof__SyscallHistogram *h;

		if (e->key.nr == HP_HIST_NR_GIL) {
			r = gil_total(b, e);
			if (r < 0)
				return r;
			continue;
		}
		h = arena_alloc(&b->a, sizeof(*h));
		if (!h)
			return -ENOMEM;
		hostprof__syscall_histogram__init(h);
		h->has_tid = h->has_pid = h->has_nr = h->has_count = h->has_total_ns = h->has_max_ns = true;
		h->tid = e->key.tid;
		h->pid = e->key.pid;
		h->nr = e->key.nr;
		h->count = e->h.count;
		h->total_ns = e->h.total_ns;
		h->max_ns = e->h.max_ns;
		COLUMN(&b->a, h, buckets, HP_HIST_BUCKETS);
		if (!h->buckets)
			return -ENOMEM;
		for (int k = 0; k < HP_HIST_BUCKETS; k++)
			h->buckets[k] = e->h.buckets[k];
		v[n++] = h;
	}
	b->snap.syscall_hist = v;
	b->snap.n_syscall_hist = n;
	b->snap.syscall_names = (char **)syscall_names;
	b->snap.n_syscall_names = syscall_names_len;
	/* the generated table has holes: the message needs a string everywhere */
	{
		char **names = arena_alloc(&b->a, syscall_names_len * sizeof(*names));

		if (!names)
			return -ENOMEM;
		for (unsigned int i = 0; i < syscall_names_len; i++)
			names[i] = (char *)(syscall_names[i] ? syscall_names[i] : "");
		b->snap.syscall_names = names;
	}
	return 0;
}

/* tid → slot in the thread array, open addressing; slots hold index + 1. It grows with the
 * threads met, as the array does: sized for the most a window may name (65,536 and more),
 * both took ~9 MiB of fresh memory a snapshot for the few dozen threads a job has. */
struct tidset {
	uint32_t *keys, *vals;
	size_t cap;
};

static uint32_t *tidset_slot(struct tidset *t, uint32_t tid)
{
	size_t i = (tid * 2654435761u) & (t->cap - 1);

	while (t->vals[i] && t->keys[i] != tid)
		i = (i + 1) & (t->cap - 1);
	t->keys[i] = tid;
	return &t->vals[i];
}

static int tidset_grow(struct tidset *t)
{
	struct tidset n = { .cap = t->cap ? t->cap * 2 : 64 };

	n.keys = calloc(n.cap, sizeof(*n.keys));
	n.vals = calloc(n.cap, sizeof(*n.vals));
	if (!n.keys || !n.vals) {
		free(n.keys);
		free(n.vals);
		return -ENOMEM;
	}
	for (size_t i = 0; i < t->cap; i++)
		if (t->vals[i])
			*tidset_slot(&n, t->keys[i]) = t->vals[i];
	free(t->keys);
	free(t->vals);
	*t = n;
	return 0;
}

struct threads {
	struct tidset set;
	Hostprof__Thread *v;
	size_t n, cap;
};

static int add_thread(struct threads *th, uint32_t tid, uint32_t pid, char *comm)
{
	Hostprof__Thread *t;
	uint32_t *slot;

	if ((th->n + 1) * 2 > th->set.cap && tidset_grow(&th->set) < 0)
		return -ENOMEM;
	slot = tidset_slot(&th->set, tid);
	if (*slot)
		return 0;
	if (th->n == th->cap) {
		size_t cap = th->cap ? th->cap * 2 : 64;

		t = realloc(th->v, cap * sizeof(*t));
		if (!t)
			return -ENOMEM;
		th->v = t;
		th->cap = cap;
	}
	t = &th->v[th->n];
	hostprof__thread__init(t);
	t->has_tid = t->has_pid = true;
	t->tid = tid;
	t->pid = pid;
	t->comm = comm;
	*slot = ++th->n;
	return 0;
}

/* A live dispatch thread's affinity, and its cpu cgroup and CFS bandwidth, for the report
 * (moves off a bound CPU; throttling). */
static int fill_bandwidth(struct snap_build *b, const struct proc_rec *p, const struct snapshot_ctx *ctx,
			  Hostprof__Thread *t)
{
	struct cpu_bandwidth bw;
	bool dispatch = false;

	for (size_t g = 0; g < ctx->n_dispatch_threads && !dispatch; g++)
		dispatch = thread_glob_match(ctx->dispatch_threads[g], t->comm);
	if (!dispatch || p->exit_ns || t->pid != p->info.pid)
		return 0;
	{
		cpu_set_t set;
		size_t n = 0;

		if (sched_getaffinity((pid_t)t->tid, sizeof(set), &set) == 0 && CPU_COUNT(&set) > 0) {
			t->cpus_allowed = arena_alloc(&b->a, (size_t)CPU_COUNT(&set) * sizeof(*t->cpus_allowed));
			if (!t->cpus_allowed)
				return -ENOMEM;
			for (int c = 0; c < CPU_SETSIZE; c++)
				if (CPU_ISSET(c, &set))
					t->cpus_allowed[n++] = (uint32_t)c;
			t->n_cpus_allowed = n;
		}
	}
	if (proc_read_cpu_bandwidth(t->pid, t->tid, &bw) < 0)
		return 0; /* gone, or no cpu controller: nothing said */
	t->cgroup = arena_alloc(&b->a, strlen(bw.cgroup) + 1);
	if (!t->cgroup)
		return -ENOMEM;
	memcpy(t->cgroup, bw.cgroup, strlen(bw.cgroup) + 1);
	t->has_cpu_quota_us = t->has_cpu_period_us = true;
	t->cpu_quota_us = bw.quota_us;
	t->cpu_period_us = bw.period_us;
	return 0;
}

/* Threads: every task in a switch of the window, named by its latest name, plus the
 * process's own. */
static int fill_threads(struct snap_build *b, const struct proc_rec *p, const struct snapshot_ctx *ctx)
{
	const Hostprof__SchedSwitchTable *sw = b->snap.switches;
	size_t n = b->recs[TBL_SWITCHES].n, max = p->n_threads + MIN(2 * n, (size_t)65536);
	struct threads th = {};
	Hostprof__Thread *buf;
	Hostprof__Thread **ptrs;
	int r = 0;

	/* newest first, so the first time a tid is met it carries its latest name */
	for (size_t k = n * 2; k-- > 0 && th.n < max && r >= 0;) {
		bool next = k % 2;
		uint32_t tid = next ? sw->next_tid[k / 2] : sw->prev_tid[k / 2];

		if (tid == 0)
			continue; /* the idle task */
		r = add_thread(&th, tid, next ? sw->next_pid[k / 2] : sw->prev_pid[k / 2],
			       b->strs.strs[next ? sw->next_comm[k / 2] : sw->prev_comm[k / 2]]);
	}
	for (size_t i = 0; i < p->n_threads && th.n < max && r >= 0; i++)
		r = add_thread(&th, p->threads[i].tid, p->info.pid, (char *)p->threads[i].comm);
	buf = arena_alloc(&b->a, MAX(th.n, (size_t)1) * sizeof(*buf));
	ptrs = arena_alloc(&b->a, MAX(th.n, (size_t)1) * sizeof(*ptrs));
	if (r >= 0 && (!buf || !ptrs))
		r = -ENOMEM;
	for (size_t j = 0; j < th.n && r >= 0; j++) {
		buf[j] = th.v[j];
		ptrs[j] = &buf[j];
		r = fill_bandwidth(b, p, ctx, &buf[j]);
	}
	free(th.set.keys);
	free(th.set.vals);
	free(th.v);
	if (r < 0)
		return r;
	b->snap.threads = ptrs;
	b->snap.n_threads = th.n;
	return 0;
}

static int fill_process(struct snap_build *b, const struct proc_rec *p)
{
	Hostprof__Process *proc = arena_alloc(&b->a, sizeof(*proc));
	Hostprof__Process **procs = arena_alloc(&b->a, sizeof(*procs));
	size_t nargs = 0;
	char **args;

	if (!proc || !procs)
		return -ENOMEM;
	hostprof__process__init(proc);
	proc->has_pid = proc->has_ppid = proc->has_start_time = proc->has_uid = true;
	proc->pid = p->info.pid;
	proc->ppid = p->info.ppid;
	proc->comm = (char *)p->info.comm;
	proc->start_time = p->info.start_time;
	proc->uid = p->info.cred.uid;
	proc->has_euid = proc->has_suid = proc->has_fsuid = proc->has_gid = proc->has_egid = proc->has_sgid =
		proc->has_fsgid = proc->has_dumpable = true;
	proc->euid = p->info.cred.euid;
	proc->suid = p->info.cred.suid;
	proc->fsuid = p->info.cred.fsuid;
	proc->gid = p->info.cred.gid;
	proc->egid = p->info.cred.egid;
	proc->sgid = p->info.cred.sgid;
	proc->fsgid = p->info.cred.fsgid;
	proc->dumpable = p->info.cred.dumpable;
	proc->has_cred_change_ns = p->cred_change_ns != 0;
	proc->cred_change_ns = p->cred_change_ns;
	proc->has_exit_ns = p->exit_ns != 0;
	proc->exit_ns = p->exit_ns;
	if (p->labels_read) { /* read on the worker (watch.c); until then, not known */
		proc->rank = (char *)p->labels.rank;
		proc->job = (char *)p->labels.job;
		proc->local_rank = (char *)p->labels.local_rank;
	}
	/* only NUL-terminated arguments: a truncated last one is dropped */
	for (size_t i = 0; i < p->cmdline_len; i++)
		nargs += p->cmdline[i] == 0;
	args = arena_alloc(&b->a, MAX(nargs, (size_t)1) * sizeof(*args));
	if (!args)
		return -ENOMEM;
	for (size_t i = 0, k = 0; k < nargs; k++) {
		args[k] = p->cmdline + i;
		i += strlen(p->cmdline + i) + 1;
	}
	proc->cmdline = args;
	proc->n_cmdline = nargs;
	procs[0] = proc;
	b->snap.processes = procs;
	b->snap.n_processes = 1;
	return 0;
}

static int fill_stats(struct snap_build *b, const struct proc_rec *p)
{
	const struct snapshot_ctx *ctx = b->ctx;
	Hostprof__CaptureStats *s = arena_alloc(&b->a, sizeof(*s));
	Hostprof__SymbolStats *sym = arena_alloc(&b->a, sizeof(*sym));
	Hostprof__Drop **drops = arena_alloc(&b->a, ctx->n_drops * sizeof(*drops));

	if (!s || !sym || !drops)
		return -ENOMEM;
	hostprof__capture_stats__init(s);
	s->has_events = s->has_events_total = s->has_evicted = s->has_stack_frames_max = true;
	s->events = p->events;
	s->events_total = ctx->events_total;
	s->evicted = p->evicted;
	s->stack_frames_max = HP_MAX_STACK;
	for (size_t i = 0; i < ctx->n_drops; i++) {
		drops[i] = arena_alloc(&b->a, sizeof(**drops));
		if (!drops[i])
			return -ENOMEM;
		hostprof__drop__init(drops[i]);
		drops[i]->cause = (char *)ctx->drops[i].cause;
		drops[i]->has_count = true;
		drops[i]->count = ctx->drops[i].count;
	}
	s->drops = drops;
	s->n_drops = ctx->n_drops;
	b->snap.stats = s;
	hostprof__symbol_stats__init(sym);
	sym->has_resolved = sym->has_unresolved = sym->has_suspect_stacks = true;
	sym->resolved = b->resolved;
	sym->unresolved = b->unresolved;
	sym->suspect_stacks = b->suspect;
	sym->has_lines = sym->has_inlined = sym->has_debuginfo_failed = true;
	sym->lines = b->lines;
	sym->inlined = b->inlined;
	sym->debuginfo_failed = b->debuginfo_failed;
	sym->unwind = (Hostprof__UnwindStats *)ctx->unwind;
	b->snap.symbol_stats = sym;
	if (b->py_merged || b->py_unreadable) {
		Hostprof__PythonStacks *ps = arena_alloc(&b->a, sizeof(*ps));

		if (!ps)
			return -ENOMEM;
		hostprof__python_stacks__init(ps);
		ps->has_merged = ps->has_unreadable = ps->has_read_failures = ps->has_truncated = true;
		ps->has_unanchored = true;
		ps->merged = b->py_merged;
		ps->unreadable = b->py_unreadable;
		ps->read_failures = b->py_read_failures;
		ps->truncated = b->py_truncated;
		ps->unanchored = b->py_unanchored;
		ps->reason = (char *)(b->py_reason ? b->py_reason : "");
		b->snap.python_stacks = ps;
	}
	return 0;
}

static uint64_t clock_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return ts.tv_sec * NSEC_PER_SEC + ts.tv_nsec;
}

/* The dispatch_threads globs and hostprofd's pid, for the report (which reads a saved file). */
static int fill_dispatch(struct snap_build *b, const struct snapshot_ctx *ctx)
{
	char **globs = arena_alloc(&b->a, (ctx->n_dispatch_threads + 1) * sizeof(*globs));

	if (!globs)
		return -ENOMEM;
	for (size_t i = 0; i < ctx->n_dispatch_threads; i++) {
		globs[i] = arena_alloc(&b->a, sizeof(ctx->dispatch_threads[i]));
		if (!globs[i])
			return -ENOMEM;
		snprintf(globs[i], sizeof(ctx->dispatch_threads[i]), "%s", ctx->dispatch_threads[i]);
	}
	b->snap.dispatch_threads = globs;
	b->snap.n_dispatch_threads = ctx->n_dispatch_threads;
	b->snap.has_dispatch_set = b->snap.dispatch_set = true; /* also when empty: see the .proto */
	b->snap.has_producer_pid = ctx->producer_pid != 0;
	b->snap.producer_pid = ctx->producer_pid;
	return 0;
}

static int fill_host(struct snap_build *b)
{
	Hostprof__HostInfo *host = arena_alloc(&b->a, sizeof(*host));
	Hostprof__ClockAnchor *clock = arena_alloc(&b->a, sizeof(*clock));
	struct utsname *uts = arena_alloc(&b->a, sizeof(*uts));
	char *hostname = arena_alloc(&b->a, 256);

	if (!host || !clock || !uts || !hostname)
		return -ENOMEM;
	hostprof__host_info__init(host);
	uname(uts);
	if (gethostname(hostname, 255) < 0)
		hostname[0] = 0;
	host->hostname = hostname;
	host->sysname = uts->sysname;
	host->kernel_release = uts->release;
	host->kernel_version = uts->version;
	host->machine = uts->machine;
	host->has_ncpus = true;
	host->ncpus = sysconf(_SC_NPROCESSORS_CONF);
	b->snap.host = host;

	hostprof__clock_anchor__init(clock);
	clock->has_boottime_ns = clock->has_realtime_ns = clock->has_monotonic_ns = true;
	clock->boottime_ns = clock_ns(CLOCK_BOOTTIME);
	clock->realtime_ns = clock_ns(CLOCK_REALTIME);
	clock->monotonic_ns = clock_ns(CLOCK_MONOTONIC);
	{
		/* the clock's quality, as the time daemon told the kernel: read only (modes 0) */
		struct timex tx = { .modes = 0 };
		int state = adjtimex(&tx);

		if (state >= 0) {
			clock->has_synced = clock->has_max_error_ns = clock->has_est_error_ns = true;
			clock->synced = state != TIME_ERROR && !(tx.status & STA_UNSYNC);
			clock->max_error_ns = (uint64_t)tx.maxerror * NSEC_PER_USEC;
			clock->est_error_ns = (uint64_t)tx.esterror * NSEC_PER_USEC;
		}
	}
	b->snap.clock = clock;
	return 0;
}

/* Which syscall mode, and what it does not see: said in the header, for every reader. */
static void fill_syscall_mode(struct snap_build *b, uint64_t start)
{
	static const char *const blocking_misses[] = {
		"syscalls that never sleep (seen only when a call blocks)",
		"per-call syscall counts and histograms",
		"syscall return values",
	};
	const struct snapshot_ctx *ctx = b->ctx;
	bool blocking = ctx->syscall_mode == HP_SYSCALLS_BLOCKING;

	b->snap.has_syscall_mode = b->snap.has_syscall_mode_since_ns = true;
	b->snap.syscall_mode =
		blocking ? HOSTPROF__SYSCALL_MODE__SYSCALLS_BLOCKING : HOSTPROF__SYSCALL_MODE__SYSCALLS_EXACT;
	b->snap.syscall_mode_since_ns = ctx->syscall_mode_since_ns > start ? ctx->syscall_mode_since_ns : 0;
	if (blocking) {
		b->snap.not_covered = (char **)blocking_misses;
		b->snap.n_not_covered = ARRAY_SIZE(blocking_misses);
	}
}

/*
 * For a peer that is not root: no absolute kernel address (KASLR holds where kptr_restrict
 * hides them): kernel frames keep their function and the offset within it, lock addresses
 * become small numbers that only tell locks apart within this snapshot. Done once the
 * tables are built, so stacks were deduplicated by their real addresses.
 */
struct addr_row {
	uint64_t addr;
	size_t row;
};

static int addr_row_cmp(const void *a, const void *b)
{
	const struct addr_row *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

static void hide_kernel_addresses(Hostprof__Snapshot *snap)
{
	Hostprof__LockTable *t = snap->locks;
	struct addr_row *order;

	for (size_t i = 0; i < snap->n_frames; i++) {
		Hostprof__Frame *f = snap->frames[i];

		if (!f->kernel)
			continue;
		f->address = 0;
		f->has_address = false;
		f->module_offset = f->has_function_offset ? f->function_offset : 0;
		f->has_module_offset = f->has_function_offset;
	}
	if (!t || !t->n_lock)
		return;
	order = malloc(t->n_lock * sizeof(*order));
	if (!order) {
		memset(t->lock, 0, t->n_lock * sizeof(*t->lock)); /* no memory: no numbers either */
		return;
	}
	for (size_t i = 0; i < t->n_lock; i++)
		order[i] = (struct addr_row){ t->lock[i], i };
	qsort_safe(order, t->n_lock, sizeof(*order), addr_row_cmp);
	for (size_t i = 0, id = 0; i < t->n_lock; i++) {
		if (!i || order[i].addr != order[i - 1].addr)
			id++;
		t->lock[order[i].row] = id;
	}
	free(order);
}

int snapshot_build(const struct proc_rec *p, const struct snapshot_ctx *ctx, uint8_t **ret_data,
		   size_t *ret_len, uint64_t *ret_events)
{
	struct snap_build b = { .ctx = ctx, .p = p };
	uint64_t now = clock_ns(CLOCK_BOOTTIME);
	uint64_t end = ctx->end_ns ? ctx->end_ns : p->exit_ns ? p->exit_ns : now;
	uint64_t start = ctx->window_ns && end > ctx->window_ns ? end - ctx->window_ns : 0;
	const char *why;
	uint32_t empty;
	char *producer;
	int r;

	hostprof__snapshot__init(&b.snap);
	r = strtab_intern(&b.strs, &b.a, "", &empty); /* index 0 is "" */
	if (r < 0)
		goto out;
	r = collect(&b, p, ctx->host, start, end);
	if (r < 0)
		goto out;
	for (size_t i = 0; i < TBL_MAX; i++)
		if (tables[i].new)
			recvec_sort(&b.recs[i]);
	/* all the history kept: the window opens at the oldest record */
	if (!ctx->window_ns || !start) {
		start = p->watch_ns;
		if (b.recs[TBL_SWITCHES].n)
			start = MIN(start, b.recs[TBL_SWITCHES].v[0]->ts);
		if (p->head)
			start = MIN(start, p->head->min_ts);
	}

	for (unsigned i = 0; i < TBL_MAX && r >= 0; i++)
		r = fill_table(&b, i, start);
	if (r >= 0)
		r = fill_histograms(&b);
	if (r >= 0)
		fill_gil(&b, p);
	if (r >= 0)
		r = fill_threads(&b, p, ctx);
	if (r >= 0)
		r = fill_process(&b, p);
	if (r >= 0)
		r = fill_stats(&b, p);
	if (r >= 0)
		r = fill_host(&b);
	producer = arena_alloc(&b.a, 64);
	if (r < 0 || !producer) {
		r = r < 0 ? r : -ENOMEM;
		goto out;
	}
	snprintf(producer, 64, "hostprofd %s", HOSTPROF_VERSION);
	b.snap.has_format_version = b.snap.has_start_ns = b.snap.has_end_ns = b.snap.has_pid = true;
	b.snap.format_version = HPS_FORMAT_VERSION;
	b.snap.producer = producer;
	b.snap.start_ns = start;
	b.snap.end_ns = end;
	b.snap.pid = p->info.pid;
	b.snap.reason = (char *)(ctx->reason ? ctx->reason : "request");
	b.snap.strings = b.strs.strs;
	b.snap.n_strings = b.strs.n;
	b.snap.stacks = b.stacks;
	b.snap.n_stacks = b.n_stacks;
	b.snap.frames = b.frames;
	b.snap.n_frames = b.n_frames;
	b.snap.mappings = b.mappings;
	b.snap.n_mappings = b.n_mappings;
	b.snap.has_syscall_min_ns = b.snap.has_offcpu_min_ns = b.snap.has_sample_hz = true;
	b.snap.syscall_min_ns = ctx->syscall_min_ns;
	b.snap.offcpu_min_ns = ctx->offcpu_min_ns;
	b.snap.sample_hz = ctx->sample_hz;
	b.snap.has_interference = b.snap.has_irq_min_ns = b.snap.has_lock_min_ns = true;
	b.snap.interference = ctx->interference;
	b.snap.irq_min_ns = ctx->irq_min_ns;
	b.snap.lock_min_ns = ctx->lock_min_ns;
	b.snap.markers = (Hostprof__Marker **)ctx->markers;
	b.snap.n_markers = ctx->n_markers;
	r = fill_dispatch(&b, ctx);
	if (r < 0)
		goto out;
	fill_syscall_mode(&b, start);
	b.snap.python = (Hostprof__PythonState *)ctx->python;
	if (b.a.err) {
		r = b.a.err;
		goto out;
	}
	if (ctx->hide_kernel_addresses)
		hide_kernel_addresses(&b.snap);
	why = hps_inconsistency(&b.snap);
	if (why) {
		log_error("Internal error: the snapshot of pid %u is inconsistent: %s", p->info.pid, why);
		r = -EINVAL;
		goto out;
	}
	r = hps_pack_room(&b.snap, ctx->pack_room, ret_data, ret_len);
	if (r >= 0 && ret_events) {
		*ret_events = 0;
		for (size_t i = 0; i < TBL_MAX; i++)
			if (tables[i].new)
				*ret_events += b.recs[i].n;
	}
out:
	snap_build_free(&b);
	return r;
}
