// SPDX-License-Identifier: GPL-2.0-only
/*
 * Compiled by offsets.sh against one CPython's own headers (Include/ and Include/internal/,
 * with Py_BUILD_CORE), never linked with it: prints offsetof() of each field of
 * daemon/python/offsets.c's table, "name value" per line, in offsets-table's format, so the
 * two can be compared line by line. A field the version does not have prints -1.
 */
#define Py_BUILD_CORE 1
#include <Python.h>
#include <stddef.h>
#include <stdio.h>
#if PY_VERSION_HEX < 0x03090000
#include "internal/pycore_pystate.h"
#else
#include "internal/pycore_interp.h"
#include "internal/pycore_runtime.h"
#endif
#if PY_VERSION_HEX >= 0x030b0000
#include "internal/pycore_code.h"
#include "internal/pycore_frame.h"
#else
#include "frameobject.h"
#endif

#define P(name, v) printf("%s %lld\n", name, (long long)(v))
#define NONE(name) printf("%s -1\n", name)

int main(void)
{
	P("runtime_size", sizeof(_PyRuntimeState));
	P("rt_interp_head", offsetof(_PyRuntimeState, interpreters.head));
#if PY_VERSION_HEX < 0x030c0000
	P("rt_gil", offsetof(_PyRuntimeState, ceval.gil));
	NONE("is_gil_ptr");
#else
	NONE("rt_gil");
	P("is_gil_ptr", offsetof(PyInterpreterState, ceval.gil));
#endif
	P("is_next", offsetof(PyInterpreterState, next));
#if PY_VERSION_HEX < 0x030b0000
	P("is_threads_head", offsetof(PyInterpreterState, tstate_head));
#else
	P("is_threads_head", offsetof(PyInterpreterState, threads.head));
#endif
	P("is_id", offsetof(PyInterpreterState, id));
	P("gil_holder", offsetof(struct _gil_runtime_state, last_holder));
	P("gil_locked", offsetof(struct _gil_runtime_state, locked));
	P("gil_switch_number", offsetof(struct _gil_runtime_state, switch_number));
	P("gil_cond", offsetof(struct _gil_runtime_state, cond));
	P("gil_mutex", offsetof(struct _gil_runtime_state, mutex));
	P("gil_switch_cond", offsetof(struct _gil_runtime_state, switch_cond));
	P("gil_switch_mutex", offsetof(struct _gil_runtime_state, switch_mutex));
	P("gil_size", sizeof(struct _gil_runtime_state));
	P("ts_next", offsetof(PyThreadState, next));
	P("ts_interp", offsetof(PyThreadState, interp));
#if PY_VERSION_HEX < 0x030b0000
	P("ts_frame", offsetof(PyThreadState, frame));
	NONE("ts_cframe_frame");
#elif PY_VERSION_HEX < 0x030d0000
	P("ts_frame", offsetof(PyThreadState, cframe));
	P("ts_cframe_frame", offsetof(_PyCFrame, current_frame));
#else
	P("ts_frame", offsetof(PyThreadState, current_frame));
	NONE("ts_cframe_frame");
#endif
	P("ts_thread_id", offsetof(PyThreadState, thread_id));
#if PY_VERSION_HEX >= 0x030b0000
	P("ts_native_tid", offsetof(PyThreadState, native_thread_id));
#else
	NONE("ts_native_tid");
#endif
#if PY_VERSION_HEX < 0x030b0000
	P("fr_back", offsetof(PyFrameObject, f_back));
	P("fr_code", offsetof(PyFrameObject, f_code));
	P("fr_instr", offsetof(PyFrameObject, f_lasti));
	NONE("fr_owner");
	NONE("fr_is_entry");
	NONE("owner_cstack");
	NONE("owner_generator");
#else
	P("fr_back", offsetof(_PyInterpreterFrame, previous));
#if PY_VERSION_HEX < 0x030d0000
	P("fr_code", offsetof(_PyInterpreterFrame, f_code));
	P("fr_instr", offsetof(_PyInterpreterFrame, prev_instr));
#else
	P("fr_code", offsetof(_PyInterpreterFrame, f_executable));
	P("fr_instr", offsetof(_PyInterpreterFrame, instr_ptr));
#endif
	P("fr_owner", offsetof(_PyInterpreterFrame, owner));
#if PY_VERSION_HEX < 0x030c0000
	P("fr_is_entry", offsetof(_PyInterpreterFrame, is_entry));
	NONE("owner_cstack");
#else
	NONE("fr_is_entry");
	P("owner_cstack", FRAME_OWNED_BY_CSTACK);
#endif
	P("owner_generator", FRAME_OWNED_BY_GENERATOR);
#endif
	P("co_filename", offsetof(PyCodeObject, co_filename));
	P("co_name", offsetof(PyCodeObject, co_name));
	P("co_firstlineno", offsetof(PyCodeObject, co_firstlineno));
#if PY_VERSION_HEX < 0x030a0000
	P("co_linetable", offsetof(PyCodeObject, co_lnotab));
#else
	P("co_linetable", offsetof(PyCodeObject, co_linetable));
#endif
#if PY_VERSION_HEX >= 0x030b0000
	P("co_qualname", offsetof(PyCodeObject, co_qualname));
	P("co_code_adaptive", offsetof(PyCodeObject, co_code_adaptive));
	P("co_firsttraceable", offsetof(PyCodeObject, _co_firsttraceable));
#else
	NONE("co_qualname");
	NONE("co_code_adaptive");
	NONE("co_firsttraceable");
#endif
	P("var_size", offsetof(PyVarObject, ob_size));
	P("ob_type", offsetof(PyObject, ob_type));
	P("bytes_size", offsetof(PyBytesObject, ob_base.ob_size));
	P("bytes_sval", offsetof(PyBytesObject, ob_sval));
	P("str_length", offsetof(PyASCIIObject, length));
	P("str_state", offsetof(PyASCIIObject, state));
	P("str_ascii_size", sizeof(PyASCIIObject));
	P("str_compact_size", sizeof(PyCompactUnicodeObject));
	P("str_data_any", offsetof(PyUnicodeObject, data.any));
	return 0;
}
