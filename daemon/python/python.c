// SPDX-License-Identifier: GPL-2.0-only
/*
 * The front of the Python reader (daemon/python.h): one py_proc per process, made by
 * discovery, holding its layouts and its code object cache for as long as it is kept.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "macro.h"

struct py_proc *py_proc_open(uint32_t pid)
{
	struct py_proc *p = calloc(1, sizeof(*p));
	int r;

	if (!p)
		return NULL;
	p->target.pid = pid;
	p->mem = (struct py_mem){ .read = py_read_process, .ud = &p->target.pid, .counts = &p->counts };
	py_mem_begin(&p->mem, PY_BUDGET_NS_DEFAULT);
	r = py_discover(pid, &p->mem, &p->target, &p->kind, p->why, sizeof(p->why));
	if (r < 0) {
		free(p);
		errno = -r;
		return NULL;
	}
	p->target.pid = pid; /* py_discover starts *t afresh */
	return p;
}

void py_proc_free(struct py_proc *p)
{
	if (!p)
		return;
	py_code_put(p->last);
	py_code_cache_done(&p->cache);
	free(p);
}

int py_proc_kind(const struct py_proc *p, const char **ret_why)
{
	if (ret_why)
		*ret_why = p->why;
	switch (p->kind) {
	case PY_KIND_NOT_PYTHON:
		return 0;
	case PY_KIND_UNREADABLE:
		return PY_STATUS_UNREADABLE;
	case PY_KIND_CPYTHON:
		break;
	}
	return PY_STATUS_OK;
}

const char *py_proc_version(const struct py_proc *p)
{
	return p->target.version;
}

const char *py_proc_binary(const struct py_proc *p)
{
	return p->target.binary;
}

const struct py_counts *py_proc_counts(const struct py_proc *p)
{
	return &p->counts;
}

int py_proc_resolve(struct py_proc *p, uint64_t code_addr, int64_t lasti, struct py_location *ret)
{
	uint8_t head[PY_HEAD_MAX];
	struct py_code *code;
	int r;

	if (p->kind != PY_KIND_CPYTHON)
		return -EBADMSG;
	if (!py_ptr_ok(code_addr))
		return -EBADMSG;
	py_mem_begin(&p->mem, PY_BUDGET_NS_DEFAULT);
	r = py_mem_read(&p->mem, code_addr, head, p->target.off.co_size);
	if (r < 0)
		return r == -EFAULT ? -EBADMSG : r;
	r = py_code_get(&p->cache, &p->mem, &p->target, code_addr, head, &code);
	if (r < 0)
		return r;
	/* the cache holds it (the strings stay until it is dropped) unless it was full */
	*ret = (struct py_location){
		.function = code->function,
		.file = code->file,
		.line = py_code_line(&p->target, code, lasti),
		.first_line = code->first_line,
	};
	if (code->refs == 1) {
		/* not cached: keep it as the last one resolved, so the strings outlive this call */
		py_code_put(p->last);
		p->last = code;
	} else {
		py_code_put(code);
	}
	return 0;
}

int python_read_state(uint32_t pid, const struct py_limits *lim, Hostprof__PythonState **ret)
{
	struct py_proc *p = py_proc_open(pid);
	int r;

	if (!p)
		return -errno;
	r = py_proc_read_state(p, lim, ret);
	py_proc_free(p);
	return r;
}
