// SPDX-License-Identifier: GPL-2.0-only
/*
 * daemon/python/ on a process that is not what it seems: a fake address space, laid out
 * with the table's own offsets for each version, read through py_walk as a real process
 * would be. Linked with the python module's objects alone (docs/ARCHITECTURE.md: python
 * uses no other daemon module).
 *
 *   chain-3.N      outer -> middle -> inner on two threads, names, files, lines, tids, the
 *                  GIL holder, eval entries; a second walk hits the cache
 *   loops          frames that loop, thread states that loop, an interpreter that loops
 *   nowhere        frame, code, string pointers into nothing or at the wrong type
 *   reused         a cached code object freed and another one made at its address: the
 *                  new name, counted stale, never the old one
 *   bounds         a string of 2^40 characters, a huge line table, 5000 frames, 1000
 *                  thread states: each cut at its bound, said so
 *   budget         a read that outlives the time budget ends the walk, said so
 *   versions       3.7, 3.14, 2.7 refused with the reason; 3.13's _Py_DebugOffsets used,
 *                  compared, refused when it lies
 *   lines          each line table format on tables made by hand, and malformed ones
 *   instants       reads on a real worker claimed by id, in flight, pushed out, orphaned
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../unit/check.h"
#include "macro.h"
#include "hostprof.h"
#include "python/internal.h"
#include "worker.h"

/* ---- a fake address space ---- */

#define FAKE_BASE 0x7f0000000000ull
#define FAKE_SIZE (8u << 20)

struct fake {
	uint8_t *mem;
	size_t used;
	unsigned delay_us; /* each read sleeps this long */
};

static struct fake fk;

static int fake_read(void *ud, uint64_t addr, void *buf, size_t len)
{
	struct fake *f = ud;

	if (f->delay_us)
		usleep(f->delay_us);
	size_t mapped = (f->used + 4095) & ~(size_t)4095; /* whole pages, as a process's memory */

	if (addr < FAKE_BASE || addr - FAKE_BASE > mapped || len > mapped - (addr - FAKE_BASE))
		return -EFAULT;
	memcpy(buf, f->mem + (addr - FAKE_BASE), len);
	return 0;
}

static uint64_t fake_alloc(size_t n)
{
	uint64_t a = FAKE_BASE + fk.used;

	n = (n + 15) & ~(size_t)15;
	if (fk.used + n > FAKE_SIZE) {
		fprintf(stderr, "fake address space full\n");
		exit(1);
	}
	fk.used += n;
	return a;
}

static void put64(uint64_t addr, uint64_t v)
{
	memcpy(fk.mem + (addr - FAKE_BASE), &v, 8);
}

static void put32(uint64_t addr, uint32_t v)
{
	memcpy(fk.mem + (addr - FAKE_BASE), &v, 4);
}

static void put8(uint64_t addr, uint8_t v)
{
	fk.mem[addr - FAKE_BASE] = v;
}

/* ---- the interpreter's objects, at the table's offsets ---- */

static struct py_target tg;

static uint64_t make_str(const char *s)
{
	const struct py_offsets *o = &tg.off;
	size_t n = strlen(s);
	uint64_t a = fake_alloc(o->str_ascii_size + n + 1);

	put64(a + o->ob_type, tg.unicode_type);
	put64(a + o->str_length, n);
	put32(a + o->str_state, 1u << 2 | 1u << 5 | 1u << 6 | 1u << 7); /* kind 1, compact, ascii, ready */
	memcpy(fk.mem + (a + o->str_ascii_size - FAKE_BASE), s, n + 1);
	return a;
}

static uint64_t make_bytes(const uint8_t *p, size_t n)
{
	const struct py_offsets *o = &tg.off;
	uint64_t a = fake_alloc(o->bytes_sval + n + 1);

	put64(a + o->ob_type, tg.bytes_type);
	put64(a + o->bytes_size, n);
	memcpy(fk.mem + (a + o->bytes_sval - FAKE_BASE), p, n);
	return a;
}

/*
 * A line table where instruction i (code units from 3.10, 2-byte instructions before) is on
 * line first + i: one entry per instruction.
 */
static size_t line_table(uint8_t *out, unsigned n_instr)
{
	size_t k = 0;

	for (unsigned i = 0; i < n_instr; i++) {
		switch (tg.off.lines) {
		case PY_LINES_LNOTAB: /* (address increment, line increment): instruction i starts line +i */
			if (i) {
				out[k++] = 2;
				out[k++] = 1;
			}
			break;
		case PY_LINES_310: /* (range length, line delta) */
			out[k++] = 2;
			out[k++] = i ? 1 : 0;
			break;
		case PY_LINES_311: /* code 13 (no column), length 1, delta i ? +1 : 0 */
			out[k++] = 0x80 | 13 << 3;
			out[k++] = i ? 2 : 0; /* svarint: +1 */
			break;
		}
	}
	return k;
}

#define CODE_UNITS 16

static uint64_t make_code_at(uint64_t a, const char *name, const char *qualname, const char *file,
			     uint32_t first)
{
	const struct py_offsets *o = &tg.off;
	uint8_t lt[4 * CODE_UNITS];

	memset(fk.mem + (a - FAKE_BASE), 0, o->co_size);
	put64(a + o->ob_type, tg.code_type);
	put64(a + o->co_filename, make_str(file));
	put64(a + o->co_name, make_str(name));
	if (o->co_qualname >= 0)
		put64(a + o->co_qualname, make_str(qualname));
	put64(a + o->co_linetable, make_bytes(lt, line_table(lt, CODE_UNITS)));
	put32(a + o->co_firstlineno, first);
	if (o->co_code_adaptive >= 0)
		put64(a + o->var_size, CODE_UNITS);
	if (o->co_firsttraceable >= 0)
		put32(a + o->co_firsttraceable, 0);
	return a;
}

static uint64_t make_code(const char *name, const char *qualname, const char *file, uint32_t first)
{
	size_t size = tg.off.co_code_adaptive >= 0 ? (size_t)tg.off.co_code_adaptive + 2 * CODE_UNITS :
						     tg.off.co_size;

	return make_code_at(fake_alloc(size), name, qualname, file, first);
}

/* A frame of code at instruction i, below `back`. owner: 3.11+ only. */
static uint64_t make_frame(uint64_t code, uint64_t back, int instr, int owner)
{
	const struct py_offsets *o = &tg.off;
	uint64_t f = fake_alloc(o->fr_size);

	put64(f + o->fr_back, back);
	put64(f + o->fr_code, code);
	if (o->frames == PY_FRAMES_OBJECT) {
		put64(f + o->ob_type, tg.frame_type);
		put32(f + o->fr_instr, o->lasti_units ? instr : 2 * instr);
	} else {
		/* prev_instr points at the instruction started (3.11, 3.12), instr_ptr at the current one */
		put64(f + o->fr_instr, code + o->co_code_adaptive + 2 * instr);
		put8(f + o->fr_owner, owner);
	}
	return f;
}

/* A thread state whose innermost frame is `frame`. */
static uint64_t make_tstate(uint64_t interp, uint64_t next, uint64_t frame, uint64_t tid)
{
	const struct py_offsets *o = &tg.off;
	uint64_t ts = fake_alloc(512);

	put64(ts + o->ts_next, next);
	put64(ts + o->ts_interp, interp);
	put64(ts + o->ts_thread_id, 0x7f00deadbe00ull);
	if (o->ts_native_tid >= 0)
		put64(ts + o->ts_native_tid, tid);
	if (o->ts_cframe_frame >= 0) {
		uint64_t cf = fake_alloc(32);

		put64(cf + o->ts_cframe_frame, frame);
		put64(ts + o->ts_frame, cf);
	} else {
		put64(ts + o->ts_frame, frame);
	}
	return ts;
}

static uint64_t interp_addr, gil_addr;

/* A fresh space for 3.minor: types, the runtime, one interpreter with the threads given later. */
static void fake_reset(unsigned minor)
{
	const struct py_offsets *o = py_offsets_for(minor);

	if (!fk.mem)
		fk.mem = calloc(1, FAKE_SIZE);
	memset(fk.mem, 0, fk.used);
	fk.used = 0;
	fk.delay_us = 0;
	tg = (struct py_target){ .pid = getpid(), .off = *o, .pthread_tid_off = -1 };
	tg.hexversion = 3u << 24 | minor << 16;
	tg.code_type = fake_alloc(64);
	tg.unicode_type = fake_alloc(64);
	tg.bytes_type = fake_alloc(64);
	tg.frame_type = fake_alloc(64);
	tg.runtime = fake_alloc(o->rt_interp_head + 4096);
	interp_addr = fake_alloc(MAX(o->is_next, MAX(o->is_threads_head, o->is_id)) + 4096);
	put64(tg.runtime + o->rt_interp_head, interp_addr);
	gil_addr = o->rt_gil >= 0 ? tg.runtime + o->rt_gil : fake_alloc(64);
	if (o->is_gil_ptr >= 0)
		put64(interp_addr + o->is_gil_ptr, gil_addr);
}

static void set_threads(uint64_t head)
{
	put64(interp_addr + tg.off.is_threads_head, head);
}

static void set_gil(uint64_t holder)
{
	put64(gil_addr + tg.off.gil_holder, holder);
	put32(gil_addr + tg.off.gil_locked, holder != 0);
}

static struct py_counts counts;

static struct py_mem mem(uint64_t budget_ns)
{
	struct py_mem m = { .read = fake_read, .ud = &fk, .counts = &counts };

	py_mem_begin(&m, budget_ns);
	return m;
}

static const struct py_limits lim = { NSEC_PER_SEC, 64, 64 };

static int walk(struct py_code_cache *c, const struct py_limits *l, struct py_dump *d)
{
	struct py_mem m = mem(l->budget_ns);

	return py_walk(c, &m, &tg, l, d);
}

#define FILE_PY "/srv/train.py"

/* outer -> middle -> inner, at instructions 5, 3, 1 (lines first + i) */
static uint64_t chain(uint64_t *ret_codes)
{
	uint64_t outer = make_code("outer", "Trainer.outer", FILE_PY, 10);
	uint64_t middle = make_code("middle", "middle", FILE_PY, 20);
	uint64_t inner = make_code("inner", "inner", FILE_PY, 30);
	uint64_t f;

	f = make_frame(outer, 0, 5, 0);
	if (tg.off.owner_cstack >= 0)
		f = make_frame(0, f, 0, tg.off.owner_cstack); /* the eval loop's entry shim below outer... */
	f = make_frame(middle, f, 3, 0);
	f = make_frame(inner, f, 1, 0);
	if (ret_codes) {
		ret_codes[0] = inner;
		ret_codes[1] = middle;
		ret_codes[2] = outer;
	}
	return f;
}

static void test_chain(unsigned minor)
{
	struct py_code_cache c = {};
	struct py_dump d;
	uint64_t tid, ts1, ts2;
	bool qual = minor >= 11;

	fake_reset(minor);
	tid = tg.off.ts_native_tid >= 0 ? (uint64_t)getpid() :
					  0; /* before 3.11 no tid without glibc's help */
	ts2 = make_tstate(interp_addr, 0, chain(NULL), 999999999); /* not a thread of ours: tid 0 */
	ts1 = make_tstate(interp_addr, ts2, chain(NULL), tid);
	set_threads(ts1);
	set_gil(ts2);
	memset(&counts, 0, sizeof(counts));
	CHECK_EQ_INT(walk(&c, &lim, &d), 0);
	CHECKF(!d.error, "3.%u: %s", minor, d.error);
	CHECK_EQ_U64(d.n_threads, 2);
	for (size_t i = 0; i < d.n_threads; i++) {
		const struct py_thread *th = &d.threads[i];

		CHECKF(th->n_frames == 3 && !th->error, "3.%u thread %zu: %zu frames, %s", minor, i,
		       th->n_frames, th->error ? th->error : "");
		if (th->n_frames != 3)
			continue;
		CHECK_STR(th->frames[0].code->function, "inner");
		CHECK_STR(th->frames[1].code->function, "middle");
		CHECK_STR(th->frames[2].code->function, qual ? "Trainer.outer" : "outer");
		CHECK_STR(th->frames[0].code->file, FILE_PY);
		CHECK_EQ_U64(th->frames[0].line, 31);
		CHECK_EQ_U64(th->frames[1].line, 23);
		CHECK_EQ_U64(th->frames[2].line, 15);
		CHECK_EQ_U64(th->frames[0].code->first_line, 30);
		/* eval entries: every frame before 3.11; 3.12+ the one above the shim */
		if (minor <= 10)
			CHECK(th->frames[0].eval_entry && th->frames[2].eval_entry);
		if (minor >= 12)
			CHECK(th->frames[1].eval_entry && !th->frames[0].eval_entry);
	}
	CHECK_EQ_U64(d.threads[0].tid, tid);
	CHECK_EQ_U64(d.threads[1].tid, 0);
	CHECK(!d.threads[0].gil && d.threads[1].gil);
	/* each thread's chain is three code objects of its own... */
	CHECK_EQ_U64(counts.code_misses, 6);
	py_dump_done(&d);
	/* ...and a second walk reads none anew */
	CHECK_EQ_INT(walk(&c, &lim, &d), 0);
	CHECK_EQ_U64(counts.code_misses, 6);
	CHECK_EQ_U64(counts.code_hits, 6);
	CHECK_EQ_U64(counts.code_stale, 0);
	py_dump_done(&d);
	py_code_cache_done(&c);
}

static void test_loops(void)
{
	struct py_code_cache c = {};
	struct py_dump d;
	uint64_t code, f1, f2, ts, i2;

	fake_reset(11);
	code = make_code("spin", "spin", FILE_PY, 1);
	f1 = make_frame(code, 0, 1, 0);
	f2 = make_frame(code, f1, 1, 0);
	put64(f1 + tg.off.fr_back, f2); /* f1 -> f2 -> f1 */
	ts = make_tstate(interp_addr, 0, f2, 0);
	set_threads(ts);
	CHECK_EQ_INT(walk(&c, &lim, &d), 0);
	CHECK_EQ_U64(d.n_threads, 1);
	CHECK(d.threads[0].error && !strcmp(d.threads[0].error, "the frames loop"));
	CHECK_EQ_U64(d.threads[0].n_frames, 2);
	py_dump_done(&d);

	/* thread states that loop */
	put64(f1 + tg.off.fr_back, 0);
	put64(ts + tg.off.ts_next, ts);
	CHECK_EQ_INT(walk(&c, &lim, &d), 0);
	CHECK_EQ_U64(d.n_threads, 1);
	CHECK(d.error && !strcmp(d.error, "the thread states loop"));
	py_dump_done(&d);

	/* interpreters that loop */
	put64(ts + tg.off.ts_next, 0);
	i2 = fake_alloc(4096);
	put64(interp_addr + tg.off.is_next, i2);
	put64(i2 + tg.off.is_next, interp_addr);
	CHECK_EQ_INT(walk(&c, &lim, &d), 0);
	CHECK(d.error && !strcmp(d.error, "the interpreters loop"));
	py_dump_done(&d);
	py_code_cache_done(&c);
}

static void test_nowhere(void)
{
	struct py_code_cache c = {};
	struct py_dump d;
	uint64_t code, f, ts, bad;

	fake_reset(12);
	memset(&counts, 0, sizeof(counts));
	code = make_code("inner", "inner", FILE_PY, 1);
	/* a frame's back pointer into nothing */
	f = make_frame(code, 0x10000, 1, 0);
	ts = make_tstate(interp_addr, 0, f, 0);
	set_threads(ts);
	CHECK_EQ_INT(walk(&c, &lim, &d), 0);
	CHECK(d.threads[0].error && !strcmp(d.threads[0].error, "a frame cannot be read"));
	CHECK_EQ_U64(d.threads[0].n_frames, 1);
	py_dump_done(&d);
	/* misaligned */
	put64(f + tg.off.fr_back, FAKE_BASE + 3);
	CHECK_EQ_INT(walk(&c, &lim, &d), 0);
	CHECK(d.threads[0].error && !strcmp(d.threads[0].error, "a frame pointer points nowhere"));
	py_dump_done(&d);
	/* a code pointer at a string */
	put64(f + tg.off.fr_back, 0);
	put64(f + tg.off.fr_code, make_str("not code"));
	CHECK_EQ_INT(walk(&c, &lim, &d), 0);
	CHECK(d.threads[0].error && !strcmp(d.threads[0].error, "a frame's code is not a code object"));
	CHECK_EQ_U64(d.threads[0].n_frames, 0);
	CHECK(counts.code_unreadable >= 1);
	CHECK(counts.stacks_unreadable >= 1);
	py_dump_done(&d);
	/* a code object whose name is no str: no name at all rather than a wrong one */
	bad = make_code("x", "x", FILE_PY, 1);
	put64(bad + tg.off.co_qualname, make_bytes((const uint8_t *)"inner", 5));
	put64(f + tg.off.fr_code, bad);
	CHECK_EQ_INT(walk(&c, &lim, &d), 0);
	CHECK(d.threads[0].error && d.threads[0].n_frames == 0);
	py_dump_done(&d);
	/* an ASCII string with a byte past 0x7f is no string either */
	bad = make_code("x", "x", FILE_PY, 1);
	fk.mem[py_u64(fk.mem + (bad - FAKE_BASE), tg.off.co_filename) - FAKE_BASE + tg.off.str_ascii_size] =
		0xc3;
	put64(f + tg.off.fr_code, bad);
	CHECK_EQ_INT(walk(&c, &lim, &d), 0);
	CHECK(d.threads[0].error && d.threads[0].n_frames == 0);
	py_dump_done(&d);
	/* an interpreter state pointer into nothing */
	put64(tg.runtime + tg.off.rt_interp_head, 0x1000);
	CHECK_EQ_INT(walk(&c, &lim, &d), 0);
	CHECK(d.error && d.n_threads == 0);
	py_dump_done(&d);
	/* not initialized: no interpreter */
	put64(tg.runtime + tg.off.rt_interp_head, 0);
	CHECK_EQ_INT(walk(&c, &lim, &d), 0);
	CHECK(d.error && strstr(d.error, "no interpreter"));
	py_dump_done(&d);
	/* a thread state of another interpreter: the layout is not this build's */
	put64(tg.runtime + tg.off.rt_interp_head, interp_addr);
	put64(ts + tg.off.ts_interp, interp_addr + 8);
	CHECK_EQ_INT(walk(&c, &lim, &d), 0);
	CHECK(d.error && strstr(d.error, "does not point back"));
	CHECK_EQ_U64(d.n_threads, 0);
	py_dump_done(&d);
	py_code_cache_done(&c);
}

static void test_reused(void)
{
	struct py_code_cache c = {};
	struct py_dump d;
	uint64_t codes[3], f, ts;

	fake_reset(11);
	memset(&counts, 0, sizeof(counts));
	f = chain(codes);
	ts = make_tstate(interp_addr, 0, f, 0);
	set_threads(ts);
	CHECK_EQ_INT(walk(&c, &lim, &d), 0);
	CHECK_STR(d.threads[0].frames[0].code->function, "inner");
	py_dump_done(&d);
	/* inner's object is freed, and another code object made at its address */
	make_code_at(codes[0], "other", "Other.method", "/srv/other.py", 300);
	CHECK_EQ_INT(walk(&c, &lim, &d), 0);
	CHECKF(d.n_threads == 1 && d.threads[0].n_frames == 3, "%zu threads, %s", d.n_threads,
	       d.n_threads && d.threads[0].error ? d.threads[0].error : "");
	if (d.n_threads != 1 || d.threads[0].n_frames != 3) {
		py_dump_done(&d);
		py_code_cache_done(&c);
		return;
	}
	CHECK_STR(d.threads[0].frames[0].code->function, "Other.method");
	CHECK_STR(d.threads[0].frames[0].code->file, "/srv/other.py");
	CHECK_EQ_U64(d.threads[0].frames[0].line, 301);
	CHECK_EQ_U64(counts.code_stale, 1);
	py_dump_done(&d);
	/* the same name and file objects, only the first line changed: stale too */
	put32(codes[0] + tg.off.co_firstlineno, 400);
	CHECK_EQ_INT(walk(&c, &lim, &d), 0);
	CHECK_EQ_U64(d.threads[0].frames[0].line, 401);
	CHECK_EQ_U64(counts.code_stale, 2);
	py_dump_done(&d);
	/* and memory that is no code object any more */
	put64(codes[0] + tg.off.ob_type, tg.bytes_type);
	CHECK_EQ_INT(walk(&c, &lim, &d), 0);
	CHECK(d.threads[0].error && d.threads[0].n_frames == 0);
	py_dump_done(&d);
	py_code_cache_done(&c);
}

/* ---- the kernel walk's pairs (bpfwalk.c), as bpf/python.bpf.h hands them over ---- */

struct pairs_ctx {
	struct py_code_cache *c;
	struct py_mem *m;
};

static int pairs_lookup(void *ud, uint64_t addr, struct py_code **ret, const char **why)
{
	struct pairs_ctx *p = ud;
	uint8_t head[PY_HEAD_MAX];
	int r = py_mem_read(p->m, addr, head, tg.off.co_size);

	if (r < 0) {
		*why = "unreadable";
		return -EBADMSG;
	}
	r = py_code_get(p->c, p->m, &tg, addr, head, ret);
	if (r < 0)
		*why = "not code";
	return r < 0 ? -EBADMSG : 0;
}

/* What the kernel reads of a frame made by make_frame: (code, instruction word). */
static void frame_pair(uint64_t f, uint64_t *pair)
{
	const struct py_offsets *o = &tg.off;
	uint32_t v32;
	uint64_t v;

	memcpy(&pair[0], fk.mem + (f + o->fr_code - FAKE_BASE), 8);
	if (o->frames == PY_FRAMES_OBJECT) {
		memcpy(&v32, fk.mem + (f + o->fr_instr - FAKE_BASE), 4);
		pair[1] = v32;
		return;
	}
	memcpy(&v, fk.mem + (f + o->fr_instr - FAKE_BASE), 8);
	pair[1] = (v & HP_PY_INSTR_MASK) | (uint64_t)(fk.mem[f + o->fr_owner - FAKE_BASE] & 0x7f) << 56;
	if (o->fr_is_entry >= 0 && fk.mem[f + o->fr_is_entry - FAKE_BASE])
		pair[1] |= HP_PY_INSTR_ENTRY;
}

/* The frames from f outwards as the kernel's pairs, innermost first: how many. */
static size_t chain_pairs(uint64_t f, uint64_t *pairs, size_t max)
{
	size_t n = 0;

	for (; f && n < max; n++) {
		frame_pair(f, &pairs[2 * n]);
		memcpy(&f, fk.mem + (f + tg.off.fr_back - FAKE_BASE), 8);
	}
	return n;
}

static void test_pairs(unsigned minor)
{
	struct py_code_cache c = {};
	struct py_mem m;
	struct pairs_ctx pc = { .c = &c, .m = &m };
	struct py_stack_frame out[HP_PY_MAX_FRAMES];
	uint64_t pairs[2 * HP_PY_MAX_FRAMES], codes[3];
	const char *why = NULL;
	size_t n, k;
	int r;

	fake_reset(minor);
	m = mem(0);
	memset(&counts, 0, sizeof(counts));
	n = chain_pairs(chain(codes), pairs, HP_PY_MAX_FRAMES);
	r = py_stack_from_pairs(&tg, pairs_lookup, &pc, pairs, n, out, &k, &why);
	CHECKF(r == 0 && k == 3, "3.%u: %d, %zu frames, %s", minor, r, k, why ? why : "");
	if (r == 0 && k == 3) {
		CHECK_STR(out[0].function, "inner");
		CHECK_STR(out[1].function, "middle");
		CHECK_STR(out[2].function, minor >= 11 ? "Trainer.outer" : "outer");
		CHECK_STR(out[0].file, FILE_PY);
		CHECK_EQ_U64(out[0].line, 31);
		CHECK_EQ_U64(out[1].line, 23);
		CHECK_EQ_U64(out[2].line, 15);
		CHECK_EQ_U64(out[0].code, codes[0]);
		/* the same eval entries as the walk from memory */
		if (minor <= 10)
			CHECK(out[0].eval_entry && out[2].eval_entry);
		if (minor >= 12)
			CHECK(out[1].eval_entry && !out[0].eval_entry);
		py_stack_frames_free(out, k);
	}
	/* a pair that points nowhere, or at what is not a code object: none of it is trusted */
	pairs[2] = 0x10;
	CHECK_EQ_INT(py_stack_from_pairs(&tg, pairs_lookup, &pc, pairs, n, out, &k, &why), -EBADMSG);
	CHECK_EQ_U64(k, 0);
	pairs[2] = tg.bytes_type;
	CHECK_EQ_INT(py_stack_from_pairs(&tg, pairs_lookup, &pc, pairs, n, out, &k, &why), -EBADMSG);
	CHECK_EQ_U64(k, 0);
	/* a code object freed and another made at its address: the new one's name, never the old */
	n = chain_pairs(chain(codes), pairs, HP_PY_MAX_FRAMES);
	CHECK_EQ_INT(py_stack_from_pairs(&tg, pairs_lookup, &pc, pairs, n, out, &k, &why), 0);
	py_stack_frames_free(out, k);
	make_code_at(codes[0], "other", "Other.method", "/srv/other.py", 300);
	r = py_stack_from_pairs(&tg, pairs_lookup, &pc, pairs, n, out, &k, &why);
	CHECKF(r == 0 && k == 3, "3.%u reused: %d, %zu", minor, r, k);
	if (r == 0 && k) {
		CHECK_STR(out[0].function, minor >= 11 ? "Other.method" : "other");
		CHECK_EQ_U64(out[0].line, 301);
		py_stack_frames_free(out, k);
	}
	/* an instruction outside its code (3.11+): the frame, its line not known */
	if (minor >= 11) {
		pairs[1] = (pairs[1] & ~HP_PY_INSTR_MASK) | ((codes[0] + (1u << 20)) & HP_PY_INSTR_MASK);
		r = py_stack_from_pairs(&tg, pairs_lookup, &pc, pairs, n, out, &k, &why);
		CHECK(r == 0 && k == 3 && out[0].line == 0);
		if (r == 0)
			py_stack_frames_free(out, k);
	}
	py_code_cache_done(&c);
}

static void test_bounds(void)
{
	struct py_code_cache c = {};
	struct py_dump d;
	uint64_t code, f = 0, ts = 0, s;
	char buf[PY_STR_BYTES_MAX + 8];

	fake_reset(13);
	/* a str that claims 2^40 characters: the first PY_STR_BYTES_MAX, and "..." */
	s = make_str("x");
	put64(s + tg.off.str_length, 1ull << 40);
	{
		struct py_mem m = mem(0);

		fk.used += PY_STR_BYTES_MAX; /* its first characters: "x", then zeros ('?') */
		CHECK_EQ_INT(py_read_str(&m, &tg, s, buf, sizeof(buf)), 0);
		CHECK(strlen(buf) <= PY_STR_BYTES_MAX + 3 && !strcmp(buf + strlen(buf) - 3, "..."));
		put64(s + tg.off.str_length, 1ull << 41);
		CHECK_EQ_INT(py_read_str(&m, &tg, s, buf, sizeof(buf)), -EBADMSG);
	}
	/* a line table over its bound: the name stays, the line is not known */
	code = make_code("big", "big", FILE_PY, 7);
	put64(py_u64(fk.mem + (code - FAKE_BASE), tg.off.co_linetable) + tg.off.bytes_size,
	      PY_LINETABLE_MAX + 1);
	f = make_frame(code, 0, 3, 0);
	/* 5000 frames below it */
	{
		uint64_t deep = make_code("deep", "deep", FILE_PY, 1), below = 0;

		for (int i = 0; i < 5000; i++)
			below = make_frame(deep, below, 0 + (i & 1), 0);
		put64(f + tg.off.fr_back, below);
	}
	ts = make_tstate(interp_addr, 0, f, 0);
	set_threads(ts);
	CHECK_EQ_INT(walk(&c, &lim, &d), 0);
	CHECK_EQ_U64(d.threads[0].n_frames, lim.max_frames);
	CHECK(d.threads[0].truncated && !d.threads[0].error);
	CHECK_STR(d.threads[0].frames[0].code->function, "big");
	CHECK_EQ_U64(d.threads[0].frames[0].line, 0);
	py_dump_done(&d);
	/* 10000 thread states */
	for (int i = 0; i < 1000; i++)
		ts = make_tstate(interp_addr, ts, 0, 0);
	set_threads(ts);
	CHECK_EQ_INT(walk(&c, &lim, &d), 0);
	CHECK_EQ_U64(d.n_threads, lim.max_threads);
	CHECK(d.threads_truncated);
	py_dump_done(&d);
	py_code_cache_done(&c);
}

static void test_budget(void)
{
	struct py_code_cache c = {};
	struct py_limits l = { 20 * NSEC_PER_MSEC, 64, 64 };
	struct py_dump d;
	uint64_t ts = 0;
	struct timespec t0, t1;

	fake_reset(11);
	for (int i = 0; i < 50; i++)
		ts = make_tstate(interp_addr, ts, chain(NULL), 0);
	set_threads(ts);
	fk.delay_us = 2000;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	CHECK_EQ_INT(walk(&c, &l, &d), 0);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	CHECK(d.error && !strcmp(d.error, "the time budget ran out"));
	CHECK(d.n_threads < 50);
	/* it stops at the first read after the budget: one read late at most */
	CHECK((t1.tv_sec - t0.tv_sec) * NSEC_PER_SEC + t1.tv_nsec - t0.tv_nsec < 200 * NSEC_PER_MSEC);
	py_dump_done(&d);
	py_code_cache_done(&c);
}

/* _Py_DebugOffsets as 3.13.0 lays it out (the values of the table) */
static void debug_offsets(uint8_t *raw, const struct py_offsets *o, uint32_t hex)
{
	memset(raw, 0, PY_DEBUG_OFFSETS_SIZE);
	memcpy(raw, "xdebugpy", 8);
	{
		uint64_t v[][2] = {
			{ 8, hex },
			{ 24, o->runtime_size },
			{ 40, o->rt_interp_head },
			{ 48, 194968 },
			{ 56, o->is_id },
			{ 64, o->is_next },
			{ 72, o->is_threads_head },
			{ 112, (uint64_t)o->is_gil_ptr },
			{ 152, 304 },
			{ 168, o->ts_next },
			{ 176, o->ts_interp },
			{ 184, o->ts_frame },
			{ 192, o->ts_thread_id },
			{ 200, (uint64_t)o->ts_native_tid },
			{ 224, 80 },
			{ 232, o->fr_back },
			{ 240, o->fr_code },
			{ 248, o->fr_instr },
			{ 264, (uint64_t)o->fr_owner },
			{ 272, 208 },
			{ 280, o->co_filename },
			{ 288, o->co_name },
			{ 296, (uint64_t)o->co_qualname },
			{ 304, o->co_linetable },
			{ 312, o->co_firstlineno },
			{ 344, (uint64_t)o->co_code_adaptive },
			{ 360, o->ob_type },
			{ 520, o->bytes_size },
			{ 528, o->bytes_sval },
			{ 544, o->str_state },
			{ 552, o->str_length },
			{ 560, o->str_ascii_size },
		};

		for (size_t i = 0; i < ARRAY_SIZE(v); i++)
			memcpy(raw + v[i][0], &v[i][1], 8);
	}
}

static void test_versions(void)
{
	struct py_mem m = mem(0);
	struct py_offsets o;
	uint8_t raw[PY_DEBUG_OFFSETS_SIZE];
	char why[PY_REASON_MAX], note[PY_REASON_MAX];
	uint64_t v;

	fake_reset(11);
	for (unsigned minor = 0; minor < 20; minor++) {
		CHECKF(!py_offsets_for(minor) == (minor < 8 || minor > 13), "3.%u", minor);
		if (py_offsets_for(minor))
			CHECKF(py_offsets_sane(py_offsets_for(minor)),
			       "3.%u: the table's row reads out of its heads", minor);
	}
	tg.hexversion = 0x030710f0;
	strcpy(tg.version, "3.7.16");
	CHECK_EQ_INT(py_target_set_offsets(&tg, &m, why, sizeof(why)), -EPROTONOSUPPORT);
	CHECK_STR(why, "CPython 3.7.16 is not one this hostprofd reads (3.8-3.13)");
	tg.hexversion = 0x030e00f0;
	strcpy(tg.version, "3.14.0");
	CHECK_EQ_INT(py_target_set_offsets(&tg, &m, why, sizeof(why)), -EPROTONOSUPPORT);
	tg.hexversion = 0x020712f0;
	CHECK_EQ_INT(py_target_set_offsets(&tg, &m, why, sizeof(why)), -EPROTONOSUPPORT);

	/* 3.13: the interpreter's own offsets, as the table has them */
	o = *py_offsets_for(13);
	debug_offsets(raw, &o, 0x030d00f0);
	CHECK_EQ_INT(py_offsets_from_debug(raw, sizeof(raw), 0x030d00f0, &o, note, sizeof(note)), 1);
	CHECK_STR(note, "_Py_DebugOffsets, as the table says");
	CHECK(!memcmp(&o, py_offsets_for(13), sizeof(o)));
	/* a later 3.13.x that moved native_thread_id: used, and said */
	v = 168;
	memcpy(raw + 200, &v, 8);
	CHECK_EQ_INT(py_offsets_from_debug(raw, sizeof(raw), 0x030d05f0, &o, note, sizeof(note)), 1);
	CHECK_EQ_INT(o.ts_native_tid, 168);
	CHECKF(strstr(note, "thread_state.native_thread_id 168 (table 160)"), "%s", note);
	/* an offset outside its struct: refused */
	o = *py_offsets_for(13);
	v = 1000;
	memcpy(raw + 200, &v, 8);
	CHECK_EQ_INT(py_offsets_from_debug(raw, sizeof(raw), 0x030d00f0, &o, note, sizeof(note)), -EPROTO);
	CHECKF(strstr(note, "lies outside its struct"), "%s", note);
	CHECK(!memcmp(&o, py_offsets_for(13), sizeof(o)));
	/* within its struct's size, but past what the reader reads of a head: refused */
	debug_offsets(raw, &o, 0x030d00f0);
	v = 4096;
	memcpy(raw + 360, &v, 8); /* pyobject.ob_type */
	CHECK_EQ_INT(py_offsets_from_debug(raw, sizeof(raw), 0x030d00f0, &o, note, sizeof(note)), -EPROTO);
	debug_offsets(raw, &o, 0x030d00f0);
	v = 190000;
	memcpy(raw + 72, &v, 8); /* interpreter_state.threads_head, its struct 194968 bytes */
	CHECK_EQ_INT(py_offsets_from_debug(raw, sizeof(raw), 0x030d00f0, &o, note, sizeof(note)), -EPROTO);
	v = 300;
	memcpy(raw + 72, &v, 8);
	memcpy(raw + 552, &v, 8); /* unicode_object.length */
	CHECK_EQ_INT(py_offsets_from_debug(raw, sizeof(raw), 0x030d00f0, &o, note, sizeof(note)), -EPROTO);
	CHECK(!memcmp(&o, py_offsets_for(13), sizeof(o)));
	/* free-threaded, or another version than the binary's: refused */
	debug_offsets(raw, &o, 0x030d00f0);
	CHECK(!py_debug_free_threaded(raw, sizeof(raw)));
	v = 1;
	memcpy(raw + 16, &v, 8);
	CHECK_EQ_INT(py_offsets_from_debug(raw, sizeof(raw), 0x030d00f0, &o, note, sizeof(note)), -EPROTO);
	CHECK(py_debug_free_threaded(raw, sizeof(raw))); /* the GIL table says: no GIL */
	CHECK(!py_debug_free_threaded(raw, sizeof(raw) - 1));
	debug_offsets(raw, &o, 0x030c00f0);
	CHECK_EQ_INT(py_offsets_from_debug(raw, sizeof(raw), 0x030d00f0, &o, note, sizeof(note)), -EPROTO);
	/* no cookie: the table alone */
	raw[0] = 'X';
	CHECK_EQ_INT(py_offsets_from_debug(raw, sizeof(raw), 0x030d00f0, &o, note, sizeof(note)), 0);
}

static void test_lines(void)
{
	/* 3.8: (address increment, line increment); addresses in bytes */
	static const uint8_t lnotab[] = { 0, 1, 6, 1, 44, 5, 255, 0, 45, 127, 0, 73, 11, 1, 4, (uint8_t)-3 };
	/* 3.10: (range length, line delta); -128 no line; a 0-length range carries a big delta */
	static const uint8_t t310[] = { 6, 1, 4, (uint8_t)-128, 0, 127, 8, 100, 2, (uint8_t)-5 };
	/* 3.11: short (code 0), one-line +1 (11), no-column +300 (13), long -2 (14), none (15) */
	static const uint8_t t311[] = {
		0x80 | 0 << 3 | 1,  0x12, /* units 0-1: line first */
		0x80 | 11 << 3 | 0, 4,	  9, /* unit 2: +1 */
		0x80 | 13 << 3 | 2, 0x58, 0x09, /* units 3-5: +300 (svarint 600 = 0x58 | 0x40, 9) */
		0x80 | 14 << 3 | 0, 0x05, 0x01, 0x02, 0x03, /* unit 6: -2 */
		0x80 | 15 << 3 | 1, /* units 7-8: none */
		0x80 | 10 << 3 | 0, 1,	  2, /* unit 9: +0 */
	};
	static const uint8_t bad311[] = { 0x80 | 13 << 3, 0x7f, 0x7f, 0x7f, 0x7f, 0x7f, 0x7f };

	CHECK_EQ_U64(py_line_for(PY_LINES_LNOTAB, lnotab, sizeof(lnotab), 1, -1), 1);
	CHECK_EQ_U64(py_line_for(PY_LINES_LNOTAB, lnotab, sizeof(lnotab), 1, 0), 2);
	CHECK_EQ_U64(py_line_for(PY_LINES_LNOTAB, lnotab, sizeof(lnotab), 1, 5), 2);
	CHECK_EQ_U64(py_line_for(PY_LINES_LNOTAB, lnotab, sizeof(lnotab), 1, 6), 3);
	CHECK_EQ_U64(py_line_for(PY_LINES_LNOTAB, lnotab, sizeof(lnotab), 1, 50), 8);
	CHECK_EQ_U64(py_line_for(PY_LINES_LNOTAB, lnotab, sizeof(lnotab), 1, 349), 8);
	CHECK_EQ_U64(py_line_for(PY_LINES_LNOTAB, lnotab, sizeof(lnotab), 1, 350), 208);
	CHECK_EQ_U64(py_line_for(PY_LINES_LNOTAB, lnotab, sizeof(lnotab), 1, 361), 209);
	CHECK_EQ_U64(py_line_for(PY_LINES_LNOTAB, lnotab, sizeof(lnotab), 1, 365), 206);
	CHECK_EQ_U64(py_line_for(PY_LINES_LNOTAB, lnotab, 3, 1, 1000), 2); /* an odd byte is ignored */

	/* units: 3.10 ranges are bytes, lasti counts 2-byte units */
	CHECK_EQ_U64(py_line_for(PY_LINES_310, t310, sizeof(t310), 10, 0), 11);
	CHECK_EQ_U64(py_line_for(PY_LINES_310, t310, sizeof(t310), 10, 2), 11);
	CHECK_EQ_U64(py_line_for(PY_LINES_310, t310, sizeof(t310), 10, 3), 0); /* no line */
	CHECK_EQ_U64(py_line_for(PY_LINES_310, t310, sizeof(t310), 10, 5), 238);
	CHECK_EQ_U64(py_line_for(PY_LINES_310, t310, sizeof(t310), 10, 8), 238);
	CHECK_EQ_U64(py_line_for(PY_LINES_310, t310, sizeof(t310), 10, 9), 233);
	CHECK_EQ_U64(py_line_for(PY_LINES_310, t310, sizeof(t310), 10, 10), 0); /* past the table */

	CHECK_EQ_U64(py_line_for(PY_LINES_311, t311, sizeof(t311), 50, 0), 50);
	CHECK_EQ_U64(py_line_for(PY_LINES_311, t311, sizeof(t311), 50, 1), 50);
	CHECK_EQ_U64(py_line_for(PY_LINES_311, t311, sizeof(t311), 50, 2), 51);
	CHECK_EQ_U64(py_line_for(PY_LINES_311, t311, sizeof(t311), 50, 5), 351);
	CHECK_EQ_U64(py_line_for(PY_LINES_311, t311, sizeof(t311), 50, 6), 349);
	CHECK_EQ_U64(py_line_for(PY_LINES_311, t311, sizeof(t311), 50, 7), 0);
	CHECK_EQ_U64(py_line_for(PY_LINES_311, t311, sizeof(t311), 50, 9), 349);
	CHECK_EQ_U64(py_line_for(PY_LINES_311, t311, sizeof(t311), 50, 10), 0);
	CHECK_EQ_U64(py_line_for(PY_LINES_311, t311, 6, 50, 3), 0); /* cut in a varint */
	CHECK_EQ_U64(py_line_for(PY_LINES_311, bad311, sizeof(bad311), 50, 0), 0); /* a varint without end */
	CHECK_EQ_U64(py_line_for(PY_LINES_311, t311 + 1, sizeof(t311) - 1, 50, 0), 0); /* not at an entry */
}

static uint64_t completed(struct worker *w)
{
	struct worker_stats st;

	worker_stats(w, &st);
	return st.completed;
}

/* Reads of this very process (no Python: nothing to show) through a real worker. */
static void test_instants(void)
{
	struct worker *w = worker_new(64);
	struct py_instants *pi = py_instants_new(w);
	Hostprof__PythonState *st = (Hostprof__PythonState *)1;
	uint64_t id, first = 0;

	CHECK(w && pi);
	if (!w || !pi)
		return;
	CHECK_EQ_INT(py_instants_read(pi, getpid(), &id), 0);
	CHECK_EQ_INT(py_instants_claim(pi, id, &st), -EINPROGRESS); /* not dispatched yet: dropped */
	CHECK_EQ_INT(py_instants_claim(pi, id, &st), -ENOENT);
	CHECK_EQ_INT(py_instants_read(pi, getpid(), &id), 0);
	for (int i = 0; i < 200 && completed(w) < 2; i++) {
		usleep(10000);
		worker_dispatch(w);
	}
	CHECK_EQ_INT(py_instants_claim(pi, id, &st), 0);
	CHECK(st == NULL); /* not Python */
	/* 20 reads: the 16 newest are kept */
	for (int i = 0; i < 20; i++) {
		CHECK_EQ_INT(py_instants_read(pi, getpid(), &id), 0);
		if (!i)
			first = id;
	}
	CHECK_EQ_INT(py_instants_claim(pi, first, &st), -ENOENT);
	/* freed with reads still out: their results are freed when they come back */
	py_instants_free(pi);
	worker_free(w);
}

int main(void)
{
	for (unsigned minor = 8; minor <= 13; minor++)
		test_chain(minor);
	for (unsigned minor = 8; minor <= 13; minor++)
		test_pairs(minor);
	test_loops();
	test_nowhere();
	test_reused();
	test_bounds();
	test_budget();
	test_versions();
	test_lines();
	test_instants();
	free(fk.mem);
	return check_summary();
}
