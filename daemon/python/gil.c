// SPDX-License-Identifier: GPL-2.0-only
/*
 * Where the GIL is (daemon/python.h: py_proc_gil). Up to 3.11 it lies in _PyRuntime
 * (ceval.gil); from 3.12 each interpreter's ceval.gil points at its own or at the main
 * interpreter's, and the main interpreter's is the one taken here: the last of the
 * interpreters list (new interpreters are put at its head).
 */
#include <errno.h>

#include "internal.h"
#include "macro.h"

static int main_interp_gil(struct py_proc *p, uint64_t *ret)
{
	const struct py_offsets *o = &p->target.off;
	uint64_t interp, next, gil;
	int r;

	r = py_mem_ptr(&p->mem, p->target.runtime + o->rt_interp_head, &interp);
	if (r < 0)
		return r;
	if (!interp)
		return -ENOENT;
	for (unsigned i = 0;; i++) {
		if (i >= PY_INTERPS_MAX || !py_ptr_ok(interp))
			return -EFAULT;
		r = py_mem_ptr(&p->mem, interp + o->is_next, &next);
		if (r < 0)
			return r;
		if (!next)
			break;
		interp = next;
	}
	r = py_mem_ptr(&p->mem, interp + (uint32_t)o->is_gil_ptr, &gil);
	if (r < 0)
		return r;
	if (!gil)
		return -ENOENT;
	if (!py_ptr_ok(gil))
		return -EFAULT;
	*ret = gil;
	return 0;
}

int py_proc_gil(struct py_proc *p, struct py_gil *ret, bool *ret_free_threaded)
{
	const struct py_offsets *o = &p->target.off;
	uint64_t gil;
	int r;

	*ret_free_threaded = p->target.free_threaded;
	if (p->target.free_threaded)
		return -ENOENT;
	if (p->kind != PY_KIND_CPYTHON)
		return -EBADMSG;
	if (o->ts_native_tid < 0 && p->target.pthread_tid_off < 0)
		return -ENOTSUP;
	py_mem_begin(&p->mem, PY_BUDGET_NS_DEFAULT);
	if (o->rt_gil >= 0) {
		gil = p->target.runtime + (uint32_t)o->rt_gil;
	} else {
		r = main_interp_gil(p, &gil);
		if (r < 0)
			return r;
	}
	*ret = (struct py_gil){
		.start = gil,
		.end = gil + o->gil_size,
		.holder = gil + o->gil_holder,
		.locked = gil + o->gil_locked,
		.switch_number = gil + o->gil_switch_number,
		.cond_start = gil + o->gil_cond,
		.cond_end = gil + o->gil_mutex,
		.switch_start = gil + o->gil_switch_cond,
		.switch_end = gil + o->gil_switch_mutex,
		.ts_native_tid = o->ts_native_tid,
		.ts_thread_id = o->ts_thread_id,
		.pthread_tid = o->ts_native_tid < 0 ? (int32_t)p->target.pthread_tid_off : -1,
	};
	return 0;
}

int py_proc_gil_holder(struct py_proc *p, const struct py_gil *g, uint32_t *ret_tid)
{
	uint64_t ts, v;
	int32_t locked;
	int r;

	*ret_tid = 0;
	py_mem_begin(&p->mem, PY_BUDGET_NS_DEFAULT);
	r = py_mem_read(&p->mem, g->locked, &locked, sizeof(locked));
	if (r < 0)
		return r;
	if (locked <= 0)
		return 0;
	r = py_mem_ptr(&p->mem, g->holder, &ts);
	if (r < 0 || !py_ptr_ok(ts))
		return r < 0 ? r : -EFAULT;
	if (g->ts_native_tid >= 0)
		return py_mem_read(&p->mem, ts + (uint32_t)g->ts_native_tid, ret_tid, sizeof(*ret_tid));
	r = py_mem_ptr(&p->mem, ts + g->ts_thread_id, &v);
	if (r < 0 || !py_ptr_ok(v))
		return r < 0 ? r : -EFAULT;
	return py_mem_read(&p->mem, v + (uint32_t)g->pthread_tid, ret_tid, sizeof(*ret_tid));
}
