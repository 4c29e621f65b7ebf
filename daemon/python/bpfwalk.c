// SPDX-License-Identifier: GPL-2.0-only
/*
 * The kernel's side of a Python stack (bpf/python.bpf.h): what its walk needs of a
 * process (struct hp_py_proc, from the checked offsets and the main interpreter's
 * address), and the (code object, instruction word) pairs it hands back made into
 * frames, the way threads.c walks them from memory: the eval loop's entry shims skipped
 * and marked, 3.13's frames without code skipped, frames not complete yet skipped, the
 * instruction offset from the instruction pointer. Every code object is checked through
 * the cache (code.c) before its name is used: a pair that is not a code object of this
 * interpreter (freed, reused, a torn walk) makes the whole stack unreadable, never a
 * wrong name.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "hostprof.h"
#include "internal.h"
#include "macro.h"

static bool span_ok(uint32_t off, uint32_t size)
{
	return off + size <= HP_PY_SPAN_MAX;
}

int py_proc_bpf_info(struct py_proc *p, struct hp_py_proc *ret, char *why, size_t why_len)
{
	const struct py_target *t = &p->target;
	const struct py_offsets *o = &t->off;
	uint64_t interp = 0, next;
	uint32_t span;
	int r;

	if (p->kind != PY_KIND_CPYTHON) {
		snprintf(why, why_len, "%s", p->why[0] ? p->why : "not CPython");
		return -EPROTO;
	}
	*ret = (struct hp_py_proc){ .max_threads = 1024 };
	/* the main interpreter: the oldest, at the end of interpreters.head's chain */
	py_mem_begin(&p->mem, PY_BUDGET_NS_DEFAULT);
	r = py_mem_ptr(&p->mem, t->runtime + o->rt_interp_head, &next);
	for (unsigned i = 0; r >= 0 && next && i < PY_INTERPS_MAX; i++) {
		if (!py_ptr_ok(next)) {
			r = -EFAULT;
			break;
		}
		interp = next;
		r = py_mem_ptr(&p->mem, interp + o->is_next, &next);
	}
	if (r < 0 || !interp) {
		snprintf(why, why_len, "python stack unreadable: its interpreters cannot be read");
		return -EPROTO;
	}
	ret->threads_head = interp + o->is_threads_head;
	ret->ts_next = o->ts_next;
	ret->ts_frame = o->ts_frame;
	if (o->ts_native_tid >= 0) {
		ret->flags |= HP_PY_NATIVE_TID;
		ret->ts_tid = o->ts_native_tid;
	} else {
		if (t->pthread_tid_off < 0) {
			snprintf(why, why_len, "python stack unreadable: glibc's pthread tid offset is not known");
			return -EPROTO;
		}
		ret->ts_tid = o->ts_thread_id;
		ret->pthread_tid_off = t->pthread_tid_off;
	}
	if (o->ts_cframe_frame >= 0) {
		ret->flags |= HP_PY_HAS_CFRAME;
		ret->ts_cframe_frame = o->ts_cframe_frame;
	}
	if (o->frames == PY_FRAMES_INTERP)
		ret->flags |= HP_PY_FRAMES_INTERP;
	else
		ret->flags |= HP_PY_INSTR_INT;
	ret->fr_back = o->fr_back;
	ret->fr_code = o->fr_code;
	ret->fr_instr = o->fr_instr;
	span = MAX(o->fr_back, o->fr_code) + 8;
	span = MAX(span, o->fr_instr + (o->frames == PY_FRAMES_INTERP ? 8u : 4u));
	if (o->fr_owner >= 0) {
		ret->flags |= HP_PY_HAS_OWNER;
		ret->fr_owner = o->fr_owner;
		span = MAX(span, (uint32_t)o->fr_owner + 1);
	}
	if (o->fr_is_entry >= 0) {
		ret->flags |= HP_PY_HAS_ENTRY;
		ret->fr_is_entry = o->fr_is_entry;
		span = MAX(span, (uint32_t)o->fr_is_entry + 1);
	}
	/* the kernel reads each field at its offset masked to its alignment within the span */
	if (!span_ok(span, 0) || (o->fr_back | o->fr_code) & 7 ||
	    (o->frames == PY_FRAMES_INTERP ? o->fr_instr & 7 : o->fr_instr & 3)) {
		snprintf(why, why_len, "python stack unreadable: its frames' layout is beyond the kernel walk's");
		return -EPROTO;
	}
	ret->frame_span = span;
	return 0;
}

int py_stack_from_pairs(const struct py_target *t, py_code_lookup_fn lookup, void *ud, const uint64_t *pairs,
			size_t n, struct py_stack_frame *out, size_t *ret_n, const char **ret_why)
{
	const struct py_offsets *o = &t->off;
	size_t k = 0;
	int r;

	*ret_n = 0;
	*ret_why = NULL;
	for (size_t i = 0; i < n; i++) {
		uint64_t exe = pairs[2 * i], word = pairs[2 * i + 1], instr = word & HP_PY_INSTR_MASK;
		unsigned owner = HP_PY_INSTR_OWNER(word);
		struct py_code *code;
		int64_t lasti;

		if (o->frames == PY_FRAMES_INTERP && o->owner_cstack >= 0 && owner == (unsigned)o->owner_cstack) {
			/* the eval loop's entry shim: the frame above it was the first of that run */
			if (k)
				out[k - 1].eval_entry = true;
			continue;
		}
		if (t->none && exe == t->none)
			continue; /* 3.13: a frame without code */
		if (!py_ptr_ok(exe)) {
			*ret_why = "a frame's code points nowhere";
			r = -EBADMSG;
			goto fail;
		}
		r = lookup(ud, exe, &code, ret_why);
		if (r < 0)
			goto fail;
		if (o->frames == PY_FRAMES_OBJECT) {
			lasti = (int32_t)(uint32_t)instr;
		} else {
			uint64_t start = exe + o->co_code_adaptive;

			lasti = ((int64_t)(instr - start)) / 2;
			if (instr < start - 2 || lasti > (int64_t)code->check.n_units) {
				lasti = INT64_MIN;
			} else if ((int)owner != o->owner_generator && lasti < code->firsttraceable) {
				py_code_put(code);
				continue; /* not complete yet: CPython skips it */
			}
		}
		out[k] = (struct py_stack_frame){
			.code = exe,
			.line = lasti == INT64_MIN ? 0 : py_code_line(t, code, lasti),
			.first_line = code->first_line,
			.eval_entry = o->frames == PY_FRAMES_OBJECT || (word & HP_PY_INSTR_ENTRY),
		};
		out[k].function = strdup(code->function);
		out[k].file = strdup(code->file);
		py_code_put(code);
		k++;
		if (!out[k - 1].function || !out[k - 1].file) {
			r = -ENOMEM;
			goto fail;
		}
	}
	*ret_n = k;
	return 0;
fail:
	py_stack_frames_free(out, k);
	return r;
}

/* A code object of the live process, through its cache. */
static int live_lookup(void *ud, uint64_t addr, struct py_code **ret, const char **why)
{
	struct py_proc *p = ud;
	uint8_t head[PY_HEAD_MAX];
	int r;

	r = py_mem_read(&p->mem, addr, head, p->target.off.co_size);
	if (r < 0) {
		*why = r == -EFAULT ? "a frame's code cannot be read" : "the process cannot be read";
		return r == -EFAULT ? -EBADMSG : r;
	}
	r = py_code_get(&p->cache, &p->mem, &p->target, addr, head, ret);
	if (r < 0 && r != -ENOMEM) {
		*why = "a frame's code is not a code object";
		p->counts.code_unreadable++;
		return -EBADMSG;
	}
	return r;
}

int py_proc_resolve_stack(struct py_proc *p, const uint64_t *pairs, size_t n, struct py_stack_frame *out,
			  size_t *ret_n, const char **ret_why)
{
	*ret_n = 0;
	if (p->kind != PY_KIND_CPYTHON) {
		*ret_why = "not CPython";
		return -EPROTO;
	}
	py_mem_begin(&p->mem, PY_BUDGET_NS_DEFAULT);
	return py_stack_from_pairs(&p->target, live_lookup, p, pairs, n, out, ret_n, ret_why);
}

void py_stack_frames_free(struct py_stack_frame *f, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(f[i].function);
		free(f[i].file);
		f[i].function = f[i].file = NULL;
	}
}
