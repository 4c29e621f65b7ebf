// SPDX-License-Identifier: GPL-2.0-only
/*
 * pprof exporter: one snapshot as a gzip-compressed perftools.profiles.Profile (".pb.gz"),
 * which `go tool pprof`, Pyroscope and Parca read.
 *
 * One profile holds both kinds of samples, with three sample types:
 *   samples/count, cpu/nanoseconds   on-CPU: n samples, n × 1e9 / sample_hz ns
 *   offcpu/nanoseconds               off-CPU: the time blocked
 * A sample fills the slots of its kind and leaves 0 in the others; pprof sums values per
 * stack, so `-sample_index=samples|cpu|offcpu` picks one view and the zeros of the other
 * kind drop out of it (pprof hides zero-valued samples). default_sample_type is cpu.
 * Samples with the same thread and stacks are merged; each carries the labels
 * thread = the thread's name (when it has one) and tid = its number.
 *
 * A sample's location_ids go leaf first: the kernel frames, innermost first, then the user
 * frames. One Location per distinct (address, mapping, name, kernel, source line, inlined
 * frames) among the frames used, with one Line per function there: the inlined ones first,
 * innermost first, then the frame's own (pprof's order: the last Line is the caller the
 * others were inlined into), each with its line number. One Function per distinct (name,
 * system name, file): the name is the one snapview.h's frame_names gives (demangled;
 * unresolved frames read "libfoo.so+0x1234" here as in every other format), system_name
 * the symbol as the binary has it (mangled C++), the same as the name when there is no
 * other. Every Snapshot.mapping becomes a Mapping with id = index + 1; has_functions is set
 * when every frame used in it is resolved, so that pprof may symbolize the others itself
 * when it has the binary, and has_filenames, has_line_numbers and has_inline_frames when
 * every one has its source line.
 *
 * time_nanos is the window's start on CLOCK_REALTIME (from the ClockAnchor),
 * duration_nanos the window, period_type cpu/nanoseconds, period 1e9 / sample_hz.
 *
 * The message is built in memory with pbwriter (the string table last: fields may come in
 * any order) and written through zlib's deflate with a gzip header (mtime 0, so the same
 * snapshot always gives the same bytes).
 *
 * Field numbers, from google/pprof proto/profile.proto (checked against the decoder in
 * Go's vendored copy, cmd/vendor/github.com/google/pprof/profile/encode.go):
 *   Profile.sample_type = 1, sample = 2, mapping = 3, location = 4, function = 5,
 *     string_table = 6, time_nanos = 9, duration_nanos = 10, period_type = 11, period = 12,
 *     comment = 13, default_sample_type = 14
 *   ValueType.type = 1, unit = 2
 *   Sample.location_id = 1 (packed), value = 2 (packed), label = 3
 *   Label.key = 1, str = 2, num = 3
 *   Mapping.id = 1, memory_start = 2, memory_limit = 3, file_offset = 4, filename = 5,
 *     build_id = 6, has_functions = 7, has_filenames = 8, has_line_numbers = 9,
 *     has_inline_frames = 10
 *   Location.id = 1, mapping_id = 2, address = 3, line = 4
 *   Line.function_id = 1, line = 2
 *   Function.id = 1, name = 2, system_name = 3, filename = 4
 * String-valued fields hold indexes into string_table, whose entry 0 is "".
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "export.h"
#include "fold.h"
#include "hps.h"
#include "macro.h"
#include "pbwriter.h"
#include "snapview.h"

enum {
	PROFILE_SAMPLE_TYPE = 1,
	PROFILE_SAMPLE = 2,
	PROFILE_MAPPING = 3,
	PROFILE_LOCATION = 4,
	PROFILE_FUNCTION = 5,
	PROFILE_STRING_TABLE = 6,
	PROFILE_TIME_NANOS = 9,
	PROFILE_DURATION_NANOS = 10,
	PROFILE_PERIOD_TYPE = 11,
	PROFILE_PERIOD = 12,
	PROFILE_COMMENT = 13,
	PROFILE_DEFAULT_SAMPLE_TYPE = 14,
};

enum { VALUE_TYPE_TYPE = 1, VALUE_TYPE_UNIT = 2 };
enum { SAMPLE_LOCATION_ID = 1, SAMPLE_VALUE = 2, SAMPLE_LABEL = 3 };
enum { LABEL_KEY = 1, LABEL_STR = 2, LABEL_NUM = 3 };

enum {
	MAPPING_ID = 1,
	MAPPING_MEMORY_START = 2,
	MAPPING_MEMORY_LIMIT = 3,
	MAPPING_FILE_OFFSET = 4,
	MAPPING_FILENAME = 5,
	MAPPING_BUILD_ID = 6,
	MAPPING_HAS_FUNCTIONS = 7,
	MAPPING_HAS_FILENAMES = 8,
	MAPPING_HAS_LINE_NUMBERS = 9,
	MAPPING_HAS_INLINE_FRAMES = 10,
};

enum { LOCATION_ID = 1, LOCATION_MAPPING_ID = 2, LOCATION_ADDRESS = 3, LOCATION_LINE = 4 };
enum { LINE_FUNCTION_ID = 1, LINE_LINE = 2 };
enum { FUNCTION_ID = 1, FUNCTION_NAME = 2, FUNCTION_SYSTEM_NAME = 3, FUNCTION_FILENAME = 4 };

#define N_VALUES 3 /* samples, cpu, offcpu */
#define GZIP_CHUNK (64u * 1024)

/* ---- the string table ------------------------------------------------------------------- */

/* Interned strings by index; slots is an open-addressing hash of index + 1 (0: empty). */
struct strtab {
	const char **v;
	size_t n, cap;
	uint32_t *slots;
	size_t nslots;
};

static uint64_t str_hash(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ULL; /* FNV-1a */

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ULL;
	return h;
}

static int strtab_rehash(struct strtab *t, size_t nslots)
{
	uint32_t *slots = calloc(nslots, sizeof(*slots));

	if (!slots)
		return -ENOMEM;
	for (size_t i = 0; i < t->n; i++) {
		size_t h = str_hash(t->v[i]) & (nslots - 1);

		while (slots[h])
			h = (h + 1) & (nslots - 1);
		slots[h] = (uint32_t)i + 1;
	}
	free(t->slots);
	t->slots = slots;
	t->nslots = nslots;
	return 0;
}

/* The index of s, which must outlive the table. */
static int strtab_add(struct strtab *t, const char *s, int64_t *ret_idx)
{
	size_t h;
	int r;

	if (!s)
		s = "";
	if ((t->n + 1) * 2 > t->nslots) {
		r = strtab_rehash(t, t->nslots ? t->nslots * 2 : 256);
		if (r < 0)
			return r;
	}
	for (h = str_hash(s) & (t->nslots - 1); t->slots[h]; h = (h + 1) & (t->nslots - 1))
		if (!strcmp(t->v[t->slots[h] - 1], s)) {
			*ret_idx = t->slots[h] - 1;
			return 0;
		}
	if (t->n >= UINT32_MAX - 1)
		return -E2BIG;
	if (t->n == t->cap) {
		size_t ncap = t->cap ? t->cap * 2 : 256;
		const char **v = reallocarray(t->v, ncap, sizeof(*v));

		if (!v)
			return -ENOMEM;
		t->v = v;
		t->cap = ncap;
	}
	t->v[t->n] = s;
	t->slots[h] = (uint32_t)++t->n;
	*ret_idx = (int64_t)t->n - 1;
	return 0;
}

static void strtab_free(struct strtab *t)
{
	free(t->v);
	free(t->slots);
	*t = (struct strtab){};
}

/* ---- the profile ------------------------------------------------------------------------ */

/* A Function, by the string indexes of its name, system name and file. */
struct func_slot {
	int64_t name, system, file;
	uint64_t id; /* 0: empty */
};

struct pprof {
	const Hostprof__Snapshot *snap;
	struct pbw w;
	struct strtab st;
	struct frame_names fn;
	struct snapview view;
	uint64_t *loc_of_frame; /* location id of each frame; 0: not used */
	struct func_slot *funcs; /* open addressing by the three */
	size_t n_func_slots;
	uint64_t n_functions;
	int err;
};

/* Interns s; on failure remembers the error and returns 0 (""). */
static int64_t str(struct pprof *p, const char *s)
{
	int64_t idx = 0;
	int r;

	if (p->err)
		return 0;
	r = strtab_add(&p->st, s, &idx);
	if (r < 0) {
		p->err = r;
		return 0;
	}
	return idx;
}

static void put_value_type(struct pprof *p, uint32_t field, const char *type, const char *unit)
{
	size_t tok = pbw_begin(&p->w, field);

	pbw_varint(&p->w, VALUE_TYPE_TYPE, (uint64_t)str(p, type));
	pbw_varint(&p->w, VALUE_TYPE_UNIT, (uint64_t)str(p, unit));
	pbw_end(&p->w, tok);
}

static void put_stack_locations(struct pprof *p, uint32_t idx1)
{
	const Hostprof__Stack *s;

	if (!idx1)
		return;
	s = p->snap->stacks[idx1 - 1];
	for (size_t j = 0; j < s->n_frames; j++)
		pbw_raw_varint(&p->w, p->loc_of_frame[s->frames[j]]);
}

static void put_sample(struct pprof *p, const struct stack_count *k, bool offcpu, uint64_t period)
{
	const char *comm = snapview_comm(&p->view, k->tid);
	int64_t v[N_VALUES] = {};
	size_t tok, sub;

	if (offcpu) {
		v[2] = (int64_t)k->value;
	} else {
		v[0] = (int64_t)k->value;
		v[1] = (int64_t)(k->value * period);
	}
	tok = pbw_begin(&p->w, PROFILE_SAMPLE);
	sub = pbw_begin(&p->w, SAMPLE_LOCATION_ID);
	put_stack_locations(p, k->kstack);
	put_stack_locations(p, k->ustack);
	pbw_end(&p->w, sub);
	sub = pbw_begin(&p->w, SAMPLE_VALUE);
	for (size_t i = 0; i < N_VALUES; i++)
		pbw_raw_varint(&p->w, (uint64_t)v[i]);
	pbw_end(&p->w, sub);
	if (comm[0]) {
		sub = pbw_begin(&p->w, SAMPLE_LABEL);
		pbw_varint(&p->w, LABEL_KEY, (uint64_t)str(p, "thread"));
		pbw_varint(&p->w, LABEL_STR, (uint64_t)str(p, comm));
		pbw_end(&p->w, sub);
	}
	sub = pbw_begin(&p->w, SAMPLE_LABEL);
	pbw_varint(&p->w, LABEL_KEY, (uint64_t)str(p, "tid"));
	pbw_varint(&p->w, LABEL_NUM, k->tid);
	pbw_end(&p->w, sub);
	pbw_end(&p->w, tok);
}

/* Merges the rows of one table by (tid, stacks) and writes a Sample for each. */
static int put_samples(struct pprof *p, bool offcpu, uint64_t period)
{
	_cleanup_free_ struct stack_count *keys = NULL;
	size_t nk;
	int r;

	r = snapshot_stack_counts(p->snap, offcpu, &keys, &nk);
	if (r < 0)
		return r;
	for (size_t i = 0; i < nk; i++)
		put_sample(p, &keys[i], offcpu, period);
	return 0;
}

/* Marks the frames of stack idx1 as used. */
static void mark_stack(struct pprof *p, uint32_t idx1)
{
	const Hostprof__Stack *s;

	if (!idx1)
		return;
	s = p->snap->stacks[idx1 - 1];
	for (size_t j = 0; j < s->n_frames; j++)
		p->loc_of_frame[s->frames[j]] = 1;
}

static int cmp_source(const char *fa, uint32_t la, const char *fb, uint32_t lb)
{
	int c = strcmp(fa ? fa : "", fb ? fb : "");

	return c ? c : la < lb ? -1 : la > lb;
}

/* Frame indexes by what makes a Location: address, mapping, kernel, name, source. */
static int cmp_frame(const void *a, const void *b, void *pprof)
{
	const struct pprof *p = pprof;
	const Hostprof__Frame *x = p->snap->frames[*(const uint32_t *)a];
	const Hostprof__Frame *y = p->snap->frames[*(const uint32_t *)b];
	int c;

	if (x->address != y->address)
		return x->address < y->address ? -1 : 1;
	if (x->mapping != y->mapping)
		return x->mapping < y->mapping ? -1 : 1;
	if (x->kernel != y->kernel)
		return x->kernel ? 1 : -1;
	c = strcmp(p->fn.name[*(const uint32_t *)a], p->fn.name[*(const uint32_t *)b]);
	if (c)
		return c;
	/* a return address is looked up at the call before it: the line can differ from a leaf's */
	c = cmp_source(x->file, x->line, y->file, y->line);
	if (c || x->n_inlined != y->n_inlined)
		return c ? c : x->n_inlined < y->n_inlined ? -1 : 1;
	for (size_t k = 0; k < x->n_inlined; k++) {
		const Hostprof__InlinedFrame *u = x->inlined[k], *v = y->inlined[k];

		c = strcmp(snapview_inlined_name(u), snapview_inlined_name(v));
		if (!c)
			c = cmp_source(u->file, u->line, v->file, v->line);
		if (c)
			return c;
	}
	return 0;
}

static size_t func_slot(const struct pprof *p, int64_t name, int64_t system, int64_t file)
{
	size_t mask = p->n_func_slots - 1;
	size_t i = (size_t)(((uint64_t)name * 0x9e3779b97f4a7c15ULL) ^
			    ((uint64_t)system * 0xc2b2ae3d27d4eb4fULL) ^
			    ((uint64_t)file * 0x165667b19e3779f9ULL)) &
		   mask;

	while (p->funcs[i].id &&
	       (p->funcs[i].name != name || p->funcs[i].system != system || p->funcs[i].file != file))
		i = (i + 1) & mask;
	return i;
}

/* The Function of (name, system name, file), written the first time it is asked for. */
static uint64_t function_id(struct pprof *p, const char *name, const char *system, const char *file)
{
	int64_t n = str(p, name), sys = system && system[0] ? str(p, system) : n, fl = str(p, file);
	size_t i;

	if (p->err)
		return 0;
	if ((p->n_functions + 1) * 2 > p->n_func_slots) {
		size_t cap = p->n_func_slots ? 2 * p->n_func_slots : 1024;
		struct func_slot *old = p->funcs, *slots = calloc(cap, sizeof(*slots));
		size_t old_n = p->n_func_slots;

		if (!slots) {
			p->err = -ENOMEM;
			return 0;
		}
		p->funcs = slots;
		p->n_func_slots = cap;
		for (size_t k = 0; k < old_n; k++)
			if (old[k].id)
				p->funcs[func_slot(p, old[k].name, old[k].system, old[k].file)] = old[k];
		free(old);
	}
	i = func_slot(p, n, sys, fl);
	if (!p->funcs[i].id) {
		size_t tok = pbw_begin(&p->w, PROFILE_FUNCTION);

		p->funcs[i] =
			(struct func_slot){ .name = n, .system = sys, .file = fl, .id = ++p->n_functions };
		pbw_varint(&p->w, FUNCTION_ID, p->n_functions);
		pbw_varint(&p->w, FUNCTION_NAME, (uint64_t)n);
		pbw_varint(&p->w, FUNCTION_SYSTEM_NAME, (uint64_t)sys);
		if (fl)
			pbw_varint(&p->w, FUNCTION_FILENAME, (uint64_t)fl);
		pbw_end(&p->w, tok);
	}
	return p->funcs[i].id;
}

static void put_line(struct pprof *p, uint64_t func, uint32_t line)
{
	size_t tok = pbw_begin(&p->w, LOCATION_LINE);

	pbw_varint(&p->w, LINE_FUNCTION_ID, func);
	if (line)
		pbw_varint(&p->w, LINE_LINE, line);
	pbw_end(&p->w, tok);
}

/* Marks every frame that a sample or an off-CPU interval uses. */
static void mark_used(struct pprof *p)
{
	const Hostprof__Snapshot *s = p->snap;

	for (size_t i = 0; s->samples && i < s->samples->n_ts_delta; i++) {
		mark_stack(p, s->samples->ustack[i]);
		mark_stack(p, s->samples->kstack[i]);
	}
	for (size_t i = 0; s->offcpu && i < s->offcpu->n_ts_delta; i++) {
		mark_stack(p, s->offcpu->ustack[i]);
		mark_stack(p, s->offcpu->kstack[i]);
	}
}

/* Locations and functions of every frame used, in (address, mapping, kernel, name) order. */
static int put_locations(struct pprof *p)
{
	const Hostprof__Snapshot *s = p->snap;
	_cleanup_free_ uint32_t *used = NULL;
	size_t n = 0;
	uint64_t id = 0;

	used = calloc(MAX(s->n_frames, (size_t)1), sizeof(*used));
	if (!used)
		return -ENOMEM;
	for (size_t i = 0; i < s->n_frames; i++)
		if (p->loc_of_frame[i])
			used[n++] = (uint32_t)i;
	qsort_r_safe(used, n, sizeof(*used), cmp_frame, p);
	for (size_t k = 0; k < n; k++) {
		const Hostprof__Frame *f = s->frames[used[k]];
		size_t tok;

		if (k && !cmp_frame(&used[k - 1], &used[k], p)) {
			p->loc_of_frame[used[k]] = id;
			continue;
		}
		/* the Functions first: each is a message of its own, not inside the Location */
		_cleanup_free_ uint64_t *funcs = calloc(f->n_inlined + 1, sizeof(*funcs));

		if (!funcs)
			return -ENOMEM;
		for (size_t i = 0; i < f->n_inlined; i++)
			funcs[i] = function_id(p, snapview_inlined_name(f->inlined[i]),
					       f->inlined[i]->system_name, f->inlined[i]->file);
		/* a Python frame: its qualified name in its file (the name shown elsewhere has the line) */
		funcs[f->n_inlined] = f->python ? function_id(p, f->function ? f->function : "?", NULL, f->file)
						: function_id(p, p->fn.name[used[k]], f->system_name, f->file);
		p->loc_of_frame[used[k]] = ++id;
		tok = pbw_begin(&p->w, PROFILE_LOCATION);
		pbw_varint(&p->w, LOCATION_ID, id);
		if (f->mapping)
			pbw_varint(&p->w, LOCATION_MAPPING_ID, f->mapping);
		pbw_varint(&p->w, LOCATION_ADDRESS, f->address);
		for (size_t i = 0; i < f->n_inlined; i++)
			put_line(p, funcs[i], f->inlined[i]->line);
		put_line(p, funcs[f->n_inlined], f->line);
		pbw_end(&p->w, tok);
	}
	return p->err;
}

/* Every mapping; has_functions when each frame used in it is resolved. */
static int put_mappings(struct pprof *p)
{
	const Hostprof__Snapshot *s = p->snap;
	_cleanup_free_ bool *unresolved = NULL, *no_lines = NULL;

	unresolved = calloc(MAX(s->n_mappings, (size_t)1), sizeof(*unresolved));
	no_lines = calloc(MAX(s->n_mappings, (size_t)1), sizeof(*no_lines));
	if (!unresolved || !no_lines)
		return -ENOMEM;
	for (size_t i = 0; i < s->n_frames; i++) {
		const Hostprof__Frame *f = s->frames[i];

		if (!p->loc_of_frame[i] || !f->mapping)
			continue;
		if (!(f->function && f->function[0]))
			unresolved[f->mapping - 1] = true;
		if (!(f->file && f->file[0]))
			no_lines[f->mapping - 1] = true;
	}
	for (size_t i = 0; i < s->n_mappings; i++) {
		const Hostprof__Mapping *m = s->mappings[i];
		size_t tok = pbw_begin(&p->w, PROFILE_MAPPING);

		pbw_varint(&p->w, MAPPING_ID, i + 1);
		pbw_varint(&p->w, MAPPING_MEMORY_START, m->start);
		pbw_varint(&p->w, MAPPING_MEMORY_LIMIT, m->limit);
		pbw_varint(&p->w, MAPPING_FILE_OFFSET, m->offset);
		pbw_varint(&p->w, MAPPING_FILENAME, (uint64_t)str(p, m->file));
		if (m->build_id && m->build_id[0])
			pbw_varint(&p->w, MAPPING_BUILD_ID, (uint64_t)str(p, m->build_id));
		if (!unresolved[i])
			pbw_varint(&p->w, MAPPING_HAS_FUNCTIONS, 1);
		if (!no_lines[i]) {
			pbw_varint(&p->w, MAPPING_HAS_FILENAMES, 1);
			pbw_varint(&p->w, MAPPING_HAS_LINE_NUMBERS, 1);
			pbw_varint(&p->w, MAPPING_HAS_INLINE_FRAMES, 1);
		}
		pbw_end(&p->w, tok);
	}
	return p->err;
}

static int build_profile(struct pprof *p)
{
	const Hostprof__Snapshot *s = p->snap;
	const Hostprof__ClockAnchor *c = s->clock;
	uint64_t period = s->sample_hz ? NSEC_PER_SEC / s->sample_hz : 0;
	_cleanup_free_ char *comment = NULL;
	int r;

	if (asprintf(&comment, "hostprof snapshot of pid %" PRIu32 ", reason: %s", s->pid,
		     s->reason && s->reason[0] ? s->reason : "?") < 0)
		return -ENOMEM;
	str(p, ""); /* string_table[0] */
	put_value_type(p, PROFILE_SAMPLE_TYPE, "samples", "count");
	put_value_type(p, PROFILE_SAMPLE_TYPE, "cpu", "nanoseconds");
	put_value_type(p, PROFILE_SAMPLE_TYPE, "offcpu", "nanoseconds");
	mark_used(p);
	r = put_mappings(p);
	if (r >= 0)
		r = put_locations(p);
	if (r >= 0)
		r = put_samples(p, false, period);
	if (r >= 0)
		r = put_samples(p, true, period);
	if (r < 0)
		return r;
	/* the window's start on CLOCK_REALTIME, when the anchor allows it */
	if (c && c->has_realtime_ns && c->has_boottime_ns && c->boottime_ns >= s->start_ns &&
	    c->realtime_ns >= c->boottime_ns - s->start_ns)
		pbw_int(&p->w, PROFILE_TIME_NANOS,
			(int64_t)(c->realtime_ns - (c->boottime_ns - s->start_ns)));
	if (s->end_ns > s->start_ns)
		pbw_int(&p->w, PROFILE_DURATION_NANOS, (int64_t)(s->end_ns - s->start_ns));
	put_value_type(p, PROFILE_PERIOD_TYPE, "cpu", "nanoseconds");
	if (period)
		pbw_int(&p->w, PROFILE_PERIOD, (int64_t)period);
	pbw_varint(&p->w, PROFILE_COMMENT, (uint64_t)str(p, comment));
	pbw_varint(&p->w, PROFILE_DEFAULT_SAMPLE_TYPE, (uint64_t)str(p, "cpu"));
	if (p->err)
		return p->err;
	/* last: every string is interned by now */
	for (size_t i = 0; i < p->st.n; i++)
		pbw_string(&p->w, PROFILE_STRING_TABLE, p->st.v[i]);
	return p->w.err;
}

/* gzip (deflate with a gzip header, mtime 0) of data into out. */
static int write_gzip(const uint8_t *data, size_t len, FILE *out)
{
	_cleanup_free_ uint8_t *chunk = NULL;
	z_stream z = {};
	int r = 0, zr;

	chunk = malloc(GZIP_CHUNK);
	if (!chunk)
		return -ENOMEM;
	/* windowBits 15 + 16: a gzip wrapper instead of zlib's */
	zr = deflateInit2(&z, Z_BEST_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY);
	if (zr != Z_OK)
		return zr == Z_MEM_ERROR ? -ENOMEM : -EINVAL;
	z.next_in = (Bytef *)data;
	do {
		size_t have;

		/* avail_in is 32 bits: feed at most 1 GiB at a time */
		if (!z.avail_in && len) {
			z.avail_in = (uInt)MIN(len, (size_t)1 << 30);
			len -= z.avail_in;
		}
		z.next_out = chunk;
		z.avail_out = GZIP_CHUNK;
		zr = deflate(&z, len || z.avail_in ? Z_NO_FLUSH : Z_FINISH);
		if (zr == Z_STREAM_ERROR) {
			r = -EINVAL;
			break;
		}
		have = GZIP_CHUNK - z.avail_out;
		errno = 0;
		if (have && fwrite(chunk, 1, have, out) != have) {
			r = negative_errno();
			break;
		}
	} while (zr != Z_STREAM_END);
	deflateEnd(&z);
	return r;
}

int snapshot_export_pprof(const Hostprof__Snapshot *snap, FILE *out)
{
	struct pprof p = { .snap = snap, .w = PBW_INIT };
	int r;

	r = hps_validate(snap);
	if (r < 0)
		return r;
	p.loc_of_frame = calloc(MAX(snap->n_frames, (size_t)1), sizeof(*p.loc_of_frame));
	if (!p.loc_of_frame) {
		r = -ENOMEM;
		goto out;
	}
	r = frame_names_init(snap, &p.fn);
	if (r < 0)
		goto out;
	r = snapview_init(snap, &p.view);
	if (r < 0)
		goto out;
	r = build_profile(&p);
	if (r < 0)
		goto out;
	r = write_gzip(p.w.buf, p.w.len, out);
	if (r < 0)
		goto out;
	errno = 0;
	if (fflush(out) == EOF || ferror(out))
		r = negative_errno();
out:
	pbw_free(&p.w);
	strtab_free(&p.st);
	frame_names_free(&p.fn);
	snapview_free(&p.view);
	free(p.loc_of_frame);
	free(p.funcs);
	return r;
}
