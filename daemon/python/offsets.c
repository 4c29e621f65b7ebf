// SPDX-License-Identifier: GPL-2.0-only
/*
 * The layouts of CPython 3.8-3.13, and the interpreter's own _Py_DebugOffsets from 3.13.
 *
 * Each row holds offsetof() of the fields the reader uses, for a release build on x86-64 and
 * arm64 (LP64), as CPython's headers lay them out: Include/cpython/pystate.h,
 * Include/cpython/code.h, Include/cpython/frameobject.h (3.8-3.10), Include/internal/
 * pycore_runtime.h, pycore_interp.h, pycore_frame.h, pycore_gil.h (3.11+). They were taken
 * by compiling those headers (tests/python/offsets-probe.c does it again in the python suite
 * and compares with this table for each interpreter installed). Structs of one minor version
 * do not change within it (CPython keeps internal layouts stable across patch releases; the
 * 3.13 header says so of _Py_DebugOffsets): one row per minor.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"
#include "macro.h"

static const struct py_offsets table[] = {
	{
		.minor = 8,
		.runtime_size = 1464,
		.rt_interp_head = 32,
		.rt_gil = 1152,
		.is_next = 0,
		.is_threads_head = 8,
		.is_id = 16,
		.is_gil_ptr = PY_NONE,
		.gil_holder = 8,
		.gil_locked = 16,
		.gil_switch_number = 24,
		.gil_cond = 32,
		.gil_mutex = 80,
		.gil_switch_cond = 120,
		.gil_switch_mutex = 168,
		.gil_size = 208,
		.ts_next = 8,
		.ts_interp = 16,
		.ts_frame = 24,
		.ts_cframe_frame = PY_NONE,
		.ts_thread_id = 176,
		.ts_native_tid = PY_NONE,
		.frames = PY_FRAMES_OBJECT,
		.fr_size = 112,
		.fr_back = 24,
		.fr_code = 32,
		.fr_instr = 104,
		.lasti_units = false,
		.fr_owner = PY_NONE,
		.fr_is_entry = PY_NONE,
		.owner_cstack = PY_NONE,
		.owner_generator = PY_NONE,
		.co_size = 128,
		.co_filename = 104,
		.co_name = 112,
		.co_firstlineno = 40,
		.co_linetable = 120, /* co_lnotab */
		.co_qualname = PY_NONE,
		.co_code_adaptive = PY_NONE,
		.co_firsttraceable = PY_NONE,
		.var_size = 16,
		.lines = PY_LINES_LNOTAB,
		.ob_type = 8,
		.bytes_size = 16,
		.bytes_sval = 32,
		.str_length = 16,
		.str_state = 32,
		.str_ascii_size = 48,
		.str_compact_size = 72,
	},
	{
		.minor = 9,
		.runtime_size = 656,
		.rt_interp_head = 32,
		.rt_gil = 352,
		.is_next = 0,
		.is_threads_head = 8,
		.is_id = 24,
		.is_gil_ptr = PY_NONE,
		.gil_holder = 8,
		.gil_locked = 16,
		.gil_switch_number = 24,
		.gil_cond = 32,
		.gil_mutex = 80,
		.gil_switch_cond = 120,
		.gil_switch_mutex = 168,
		.gil_size = 208,
		.ts_next = 8,
		.ts_interp = 16,
		.ts_frame = 24,
		.ts_cframe_frame = PY_NONE,
		.ts_thread_id = 176,
		.ts_native_tid = PY_NONE,
		.frames = PY_FRAMES_OBJECT,
		.fr_size = 112,
		.fr_back = 24,
		.fr_code = 32,
		.fr_instr = 104,
		.lasti_units = false,
		.fr_owner = PY_NONE,
		.fr_is_entry = PY_NONE,
		.owner_cstack = PY_NONE,
		.owner_generator = PY_NONE,
		.co_size = 128,
		.co_filename = 104,
		.co_name = 112,
		.co_firstlineno = 40,
		.co_linetable = 120, /* co_lnotab */
		.co_qualname = PY_NONE,
		.co_code_adaptive = PY_NONE,
		.co_firsttraceable = PY_NONE,
		.var_size = 16,
		.lines = PY_LINES_LNOTAB,
		.ob_type = 8,
		.bytes_size = 16,
		.bytes_sval = 32,
		.str_length = 16,
		.str_state = 32,
		.str_ascii_size = 48,
		.str_compact_size = 72,
	},
	{
		.minor = 10,
		.runtime_size = 672,
		.rt_interp_head = 32,
		.rt_gil = 352,
		.is_next = 0,
		.is_threads_head = 8,
		.is_id = 24,
		.is_gil_ptr = PY_NONE,
		.gil_holder = 8,
		.gil_locked = 16,
		.gil_switch_number = 24,
		.gil_cond = 32,
		.gil_mutex = 80,
		.gil_switch_cond = 120,
		.gil_switch_mutex = 168,
		.gil_size = 208,
		.ts_next = 8,
		.ts_interp = 16,
		.ts_frame = 24,
		.ts_cframe_frame = PY_NONE,
		.ts_thread_id = 176,
		.ts_native_tid = PY_NONE,
		.frames = PY_FRAMES_OBJECT,
		.fr_size = 104,
		.fr_back = 24,
		.fr_code = 32,
		.fr_instr = 96,
		.lasti_units = true,
		.fr_owner = PY_NONE,
		.fr_is_entry = PY_NONE,
		.owner_cstack = PY_NONE,
		.owner_generator = PY_NONE,
		.co_size = 128,
		.co_filename = 104,
		.co_name = 112,
		.co_firstlineno = 40,
		.co_linetable = 120,
		.co_qualname = PY_NONE,
		.co_code_adaptive = PY_NONE,
		.co_firsttraceable = PY_NONE,
		.var_size = 16,
		.lines = PY_LINES_310,
		.ob_type = 8,
		.bytes_size = 16,
		.bytes_sval = 32,
		.str_length = 16,
		.str_state = 32,
		.str_ascii_size = 48,
		.str_compact_size = 72,
	},
	{
		.minor = 11,
		.runtime_size = 166688,
		.rt_interp_head = 40,
		.rt_gil = 360,
		.is_next = 0,
		.is_threads_head = 16,
		.is_id = 48,
		.is_gil_ptr = PY_NONE,
		.gil_holder = 8,
		.gil_locked = 16,
		.gil_switch_number = 24,
		.gil_cond = 32,
		.gil_mutex = 80,
		.gil_switch_cond = 120,
		.gil_switch_mutex = 168,
		.gil_size = 208,
		.ts_next = 8,
		.ts_interp = 16,
		.ts_frame = 56, /* cframe */
		.ts_cframe_frame = 8,
		.ts_thread_id = 152,
		.ts_native_tid = 160,
		.frames = PY_FRAMES_INTERP,
		.fr_size = 72,
		.fr_back = 48,
		.fr_code = 32,
		.fr_instr = 56, /* prev_instr */
		.instr_is_prev = true,
		.fr_owner = 69,
		.fr_is_entry = 68,
		.owner_cstack = PY_NONE,
		.owner_generator = 1,
		.co_size = 184,
		.co_filename = 112,
		.co_name = 120,
		.co_firstlineno = 72,
		.co_linetable = 136,
		.co_qualname = 128,
		.co_code_adaptive = 184,
		.co_firsttraceable = 168,
		.var_size = 16,
		.lines = PY_LINES_311,
		.ob_type = 8,
		.bytes_size = 16,
		.bytes_sval = 32,
		.str_length = 16,
		.str_state = 32,
		.str_ascii_size = 48,
		.str_compact_size = 72,
	},
	{
		.minor = 12,
		.runtime_size = 459944,
		.rt_interp_head = 40,
		.rt_gil = PY_NONE,
		.is_next = 0,
		.is_threads_head = 72,
		.is_id = 8,
		.is_gil_ptr = 384,
		.gil_holder = 8,
		.gil_locked = 16,
		.gil_switch_number = 24,
		.gil_cond = 32,
		.gil_mutex = 80,
		.gil_switch_cond = 120,
		.gil_switch_mutex = 168,
		.gil_size = 208,
		.ts_next = 8,
		.ts_interp = 16,
		.ts_frame = 56, /* cframe */
		.ts_cframe_frame = 0,
		.ts_thread_id = 136,
		.ts_native_tid = 144,
		.frames = PY_FRAMES_INTERP,
		.fr_size = 72,
		.fr_back = 8,
		.fr_code = 0,
		.fr_instr = 56, /* prev_instr */
		.instr_is_prev = true,
		.fr_owner = 70,
		.fr_is_entry = PY_NONE,
		.owner_cstack = 3,
		.owner_generator = 1,
		.co_size = 192,
		.co_filename = 112,
		.co_name = 120,
		.co_firstlineno = 68,
		.co_linetable = 136,
		.co_qualname = 128,
		.co_code_adaptive = 192,
		.co_firsttraceable = 176,
		.var_size = 16,
		.lines = PY_LINES_311,
		.ob_type = 8,
		.bytes_size = 16,
		.bytes_sval = 32,
		.str_length = 16,
		.str_state = 32,
		.str_ascii_size = 40,
		.str_compact_size = 56,
	},
	{
		.minor = 13,
		.runtime_size = 283320,
		.rt_interp_head = 632,
		.rt_gil = PY_NONE,
		.is_next = 7264,
		.is_threads_head = 7344,
		.is_id = 7272,
		.is_gil_ptr = 16,
		.gil_holder = 8,
		.gil_locked = 16,
		.gil_switch_number = 24,
		.gil_cond = 32,
		.gil_mutex = 80,
		.gil_switch_cond = 120,
		.gil_switch_mutex = 168,
		.gil_size = 208,
		.ts_next = 8,
		.ts_interp = 16,
		.ts_frame = 72, /* current_frame */
		.ts_cframe_frame = PY_NONE,
		.ts_thread_id = 152,
		.ts_native_tid = 160,
		.frames = PY_FRAMES_INTERP,
		.fr_size = 72,
		.fr_back = 8,
		.fr_code = 0, /* f_executable */
		.fr_instr = 56, /* instr_ptr */
		.instr_is_prev = false,
		.fr_owner = 70,
		.fr_is_entry = PY_NONE,
		.owner_cstack = 3,
		.owner_generator = 1,
		.co_size = 200,
		.co_filename = 112,
		.co_name = 120,
		.co_firstlineno = 68,
		.co_linetable = 136,
		.co_qualname = 128,
		.co_code_adaptive = 200,
		.co_firsttraceable = 184,
		.var_size = 16,
		.lines = PY_LINES_311,
		.ob_type = 8,
		.bytes_size = 16,
		.bytes_sval = 32,
		.str_length = 16,
		.str_state = 32,
		.str_ascii_size = 40,
		.str_compact_size = 56,
	},
};

bool py_offsets_sane(const struct py_offsets *o)
{
	uint32_t ts = MAX(o->ts_next, MAX(o->ts_interp, MAX(o->ts_frame, o->ts_thread_id)));
	uint32_t is = MAX(o->is_next, MAX(o->is_threads_head, o->is_id));

	ts = MAX(ts, o->ts_native_tid >= 0 ? (uint32_t)o->ts_native_tid : 0) + 8;
	is = MAX(is, o->is_gil_ptr >= 0 ? (uint32_t)o->is_gil_ptr : 0) + 8;
	return ts <= PY_TSTATE_HEAD_MAX && is <= PY_INTERP_HEAD_MAX && o->fr_size <= PY_HEAD_MAX &&
	       o->co_size <= PY_HEAD_MAX && o->ob_type + 8 <= MIN(o->bytes_sval, o->str_ascii_size) &&
	       o->ob_type + 8 <= MIN(o->fr_size, o->co_size) && o->bytes_size + 8 <= o->bytes_sval &&
	       o->bytes_sval <= 64 && o->str_length + 8 <= o->str_ascii_size &&
	       o->str_state + 4 <= o->str_ascii_size && o->str_ascii_size <= o->str_compact_size &&
	       o->str_compact_size + 8 <= PY_STR_HEAD_MAX && o->var_size + 8 <= o->co_size &&
	       (o->co_firsttraceable < 0 || (uint32_t)o->co_firsttraceable + 4 <= o->co_size) &&
	       (o->fr_is_entry < 0 || (uint32_t)o->fr_is_entry < o->fr_size) &&
	       /* the GIL: its fields in order within it (the kernel side tells a condition from a
	        * mutex by the ranges between them) */
	       o->gil_holder + 8 <= o->gil_cond && o->gil_locked + 4 <= o->gil_cond &&
	       o->gil_switch_number + 8 <= o->gil_cond && o->gil_cond < o->gil_mutex &&
	       o->gil_mutex < o->gil_switch_cond && o->gil_switch_cond < o->gil_switch_mutex &&
	       o->gil_switch_mutex < o->gil_size && o->gil_size <= 1024;
}

const struct py_offsets *py_offsets_for(unsigned minor)
{
	for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++)
		if (table[i].minor == minor)
			return &table[i];
	return NULL;
}

/*
 * _Py_DebugOffsets of 3.13 (Include/internal/pycore_runtime.h): "xdebugpy", the version,
 * free_threaded, then groups of uint64_t, each starting with its struct's size. The byte
 * positions of the fields this reader takes, within _PyRuntime; the layout is fixed within
 * a minor version, and read only for 3.13.
 */
enum {
	DO_VERSION = 8,
	DO_FREE_THREADED = 16,
	DO_RT_SIZE = 24,
	DO_RT_INTERP_HEAD = 40,
	DO_IS_SIZE = 48,
	DO_IS_ID = 56,
	DO_IS_NEXT = 64,
	DO_IS_THREADS_HEAD = 72,
	DO_IS_CEVAL_GIL = 112,
	DO_TS_SIZE = 152,
	DO_TS_NEXT = 168,
	DO_TS_INTERP = 176,
	DO_TS_CURRENT_FRAME = 184,
	DO_TS_THREAD_ID = 192,
	DO_TS_NATIVE_TID = 200,
	DO_FR_SIZE = 224,
	DO_FR_PREVIOUS = 232,
	DO_FR_EXECUTABLE = 240,
	DO_FR_INSTR_PTR = 248,
	DO_FR_OWNER = 264,
	DO_CO_SIZE = 272,
	DO_CO_FILENAME = 280,
	DO_CO_NAME = 288,
	DO_CO_QUALNAME = 296,
	DO_CO_LINETABLE = 304,
	DO_CO_FIRSTLINENO = 312,
	DO_CO_CODE_ADAPTIVE = 344,
	DO_OB_TYPE = 360,
	DO_BYTES_OB_SIZE = 520,
	DO_BYTES_OB_SVAL = 528,
	DO_STR_STATE = 544,
	DO_STR_LENGTH = 552,
	DO_STR_ASCII_SIZE = 560,
};

struct debug_field {
	const char *name;
	unsigned pos; /* in _Py_DebugOffsets */
	unsigned size_pos; /* its struct's size there (0: none checked) */
	size_t field; /* offsetof(struct py_offsets, the field) */
	bool is_signed; /* an int32_t field (PY_NONE possible), else uint32_t */
	unsigned width; /* bytes the reader reads at that offset */
};

#define U(f) offsetof(struct py_offsets, f), false
#define S(f) offsetof(struct py_offsets, f), true

static const struct debug_field debug_fields[] = {
	{ "runtime_state.interpreters_head", DO_RT_INTERP_HEAD, DO_RT_SIZE, U(rt_interp_head), 8 },
	{ "interpreter_state.id", DO_IS_ID, DO_IS_SIZE, U(is_id), 8 },
	{ "interpreter_state.next", DO_IS_NEXT, DO_IS_SIZE, U(is_next), 8 },
	{ "interpreter_state.threads_head", DO_IS_THREADS_HEAD, DO_IS_SIZE, U(is_threads_head), 8 },
	{ "interpreter_state.ceval_gil", DO_IS_CEVAL_GIL, DO_IS_SIZE, S(is_gil_ptr), 8 },
	{ "thread_state.next", DO_TS_NEXT, DO_TS_SIZE, U(ts_next), 8 },
	{ "thread_state.interp", DO_TS_INTERP, DO_TS_SIZE, U(ts_interp), 8 },
	{ "thread_state.current_frame", DO_TS_CURRENT_FRAME, DO_TS_SIZE, U(ts_frame), 8 },
	{ "thread_state.thread_id", DO_TS_THREAD_ID, DO_TS_SIZE, U(ts_thread_id), 8 },
	{ "thread_state.native_thread_id", DO_TS_NATIVE_TID, DO_TS_SIZE, S(ts_native_tid), 8 },
	{ "interpreter_frame.previous", DO_FR_PREVIOUS, DO_FR_SIZE, U(fr_back), 8 },
	{ "interpreter_frame.executable", DO_FR_EXECUTABLE, DO_FR_SIZE, U(fr_code), 8 },
	{ "interpreter_frame.instr_ptr", DO_FR_INSTR_PTR, DO_FR_SIZE, U(fr_instr), 8 },
	{ "interpreter_frame.owner", DO_FR_OWNER, DO_FR_SIZE, S(fr_owner), 1 },
	{ "code_object.filename", DO_CO_FILENAME, DO_CO_SIZE, U(co_filename), 8 },
	{ "code_object.name", DO_CO_NAME, DO_CO_SIZE, U(co_name), 8 },
	{ "code_object.qualname", DO_CO_QUALNAME, DO_CO_SIZE, S(co_qualname), 8 },
	{ "code_object.linetable", DO_CO_LINETABLE, DO_CO_SIZE, U(co_linetable), 8 },
	{ "code_object.firstlineno", DO_CO_FIRSTLINENO, DO_CO_SIZE, U(co_firstlineno), 4 },
	{ "code_object.co_code_adaptive", DO_CO_CODE_ADAPTIVE, DO_CO_SIZE, S(co_code_adaptive), 0 },
	{ "pyobject.ob_type", DO_OB_TYPE, 0, U(ob_type), 8 },
	{ "bytes_object.ob_size", DO_BYTES_OB_SIZE, 0, U(bytes_size), 8 },
	{ "bytes_object.ob_sval", DO_BYTES_OB_SVAL, 0, U(bytes_sval), 0 },
	{ "unicode_object.state", DO_STR_STATE, 0, U(str_state), 4 },
	{ "unicode_object.length", DO_STR_LENGTH, 0, U(str_length), 8 },
	{ "unicode_object.asciiobject_size", DO_STR_ASCII_SIZE, 0, U(str_ascii_size), 0 },
};

/* No struct the reader reads is larger: bounds what offsets the process may claim. */
#define DEBUG_STRUCT_MAX (1u << 20)

static int64_t get_field(const struct py_offsets *o, const struct debug_field *f)
{
	const char *p = (const char *)o + f->field;

	if (f->is_signed)
		return *(const int32_t *)p;
	return *(const uint32_t *)p;
}

static void set_field(struct py_offsets *o, const struct debug_field *f, uint64_t v)
{
	char *p = (char *)o + f->field;

	if (f->is_signed)
		*(int32_t *)p = (int32_t)v;
	else
		*(uint32_t *)p = (uint32_t)v;
}

bool py_debug_free_threaded(const uint8_t *raw, size_t len)
{
	return len >= PY_DEBUG_OFFSETS_SIZE && !memcmp(raw, "xdebugpy", 8) && py_u64(raw, DO_FREE_THREADED);
}

int py_offsets_from_debug(const uint8_t *raw, size_t len, uint32_t hexversion, struct py_offsets *o,
			  char *note, size_t note_len)
{
	struct py_offsets from = *o;
	char diffs[PY_REASON_MAX] = "";
	unsigned differ = 0;
	uint64_t v;

	note[0] = 0;
	if (o->minor != 13 || len < PY_DEBUG_OFFSETS_SIZE || memcmp(raw, "xdebugpy", 8))
		return 0;
	v = py_u64(raw, DO_VERSION);
	if ((v >> 16) != (hexversion >> 16)) {
		snprintf(note, note_len, "_Py_DebugOffsets says version %#llx, the binary %#x",
			 (unsigned long long)v, hexversion);
		return -EPROTO;
	}
	if (py_u64(raw, DO_FREE_THREADED)) {
		snprintf(note, note_len, "a free-threaded build (its objects are laid out differently)");
		return -EPROTO;
	}
	for (size_t i = 0; i < ARRAY_SIZE(debug_fields); i++) {
		const struct debug_field *f = &debug_fields[i];
		uint64_t size = f->size_pos ? py_u64(raw, f->size_pos) : DEBUG_STRUCT_MAX;
		size_t n = strlen(diffs);

		v = py_u64(raw, f->pos);
		if (size > DEBUG_STRUCT_MAX || v > DEBUG_STRUCT_MAX || v + f->width > size) {
			snprintf(note, note_len, "_Py_DebugOffsets %s = %llu lies outside its struct",
				 f->name, (unsigned long long)v);
			return -EPROTO;
		}
		if ((int64_t)v == get_field(o, f))
			continue;
		snprintf(diffs + n, sizeof(diffs) - n, "%s%s %llu (table %lld)", differ ? ", " : "", f->name,
			 (unsigned long long)v, (long long)get_field(o, f));
		set_field(&from, f, v);
		if (!strncmp(f->name, "code_object.", 12))
			from.co_firsttraceable =
				PY_NONE; /* not in _Py_DebugOffsets: the table's is off too */
		differ++;
	}
	/* the reader reads this much of a code object and a frame: cover what it says now */
	from.co_size = MAX(from.co_size, MAX(from.co_filename, MAX(from.co_name, from.co_linetable)) + 8);
	from.co_size = MAX(from.co_size, (uint32_t)from.co_qualname + 8);
	from.co_size = MAX(from.co_size, from.co_firstlineno + 4);
	from.fr_size = MAX(from.fr_size, MAX(from.fr_back, MAX(from.fr_code, from.fr_instr)) + 8);
	from.fr_size = MAX(from.fr_size, (uint32_t)from.fr_owner + 1);
	from.str_compact_size = from.str_ascii_size + 16; /* 3.12+: utf8_length and utf8 follow */
	if (!py_offsets_sane(&from)) {
		snprintf(note, note_len, "_Py_DebugOffsets puts fields further out than this reader reads");
		return -EPROTO;
	}
	*o = from;
	if (differ)
		snprintf(note, note_len, "_Py_DebugOffsets; differs from the table in %s", diffs);
	else
		snprintf(note, note_len, "_Py_DebugOffsets, as the table says");
	return 1;
}
