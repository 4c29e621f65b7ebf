// SPDX-License-Identifier: GPL-2.0-only
/*
 * Reading a process's memory: process_vm_readv (the caller holds CAP_SYS_PTRACE, or is the
 * process's own uid), never ptrace: the process does not stop. Every read has a size bound,
 * is counted, and fails once the read's time budget is spent; a process that is gone or
 * refused ends every read after it at once. On top: str and bytes objects, their types
 * checked against the interpreter's own type objects before their fields are believed.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"
#include "macro.h"

int py_read_process(void *ud, uint64_t addr, void *buf, size_t len)
{
	const uint32_t *pid = ud;
	struct iovec local = { .iov_base = buf, .iov_len = len };
	struct iovec remote = { .iov_base = (void *)(uintptr_t)addr, .iov_len = len };
	ssize_t n;

	n = process_vm_readv(*pid, &local, 1, &remote, 1, 0);
	if (n < 0)
		return errno == ENOMEM ? -EFAULT : negative_errno();
	return (size_t)n == len ? 0 : -EFAULT;
}

static uint64_t monotonic_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * NSEC_PER_SEC + ts.tv_nsec;
}

void py_mem_begin(struct py_mem *m, uint64_t budget_ns)
{
	m->err = 0;
	m->deadline_ns = budget_ns ? monotonic_ns() + budget_ns : 0;
}

bool py_mem_expired(struct py_mem *m)
{
	if (!m->err && m->deadline_ns && monotonic_ns() >= m->deadline_ns)
		m->err = -ETIME;
	return m->err != 0;
}

int py_mem_read(struct py_mem *m, uint64_t addr, void *buf, size_t len)
{
	int r;

	if (py_mem_expired(m))
		return m->err;
	if (!len || len > PY_READ_MAX || !addr || addr + len < addr)
		return -EFAULT;
	r = m->read(m->ud, addr, buf, len);
	m->counts->reads++;
	if (r < 0) {
		m->counts->read_failures++;
		if (r == -ESRCH || r == -EPERM)
			m->err = r; /* gone, or not ours to read: nothing after this would work */
		return r;
	}
	m->counts->bytes_read += len;
	return 0;
}

int py_mem_read_upto(struct py_mem *m, uint64_t addr, void *buf, size_t min, size_t len, size_t *ret_len)
{
	long page = sysconf(_SC_PAGESIZE);
	uint64_t end;
	int r;

	r = py_mem_read(m, addr, buf, len);
	if (r != -EFAULT || min >= len || page <= 0) {
		if (r >= 0)
			*ret_len = len;
		return r;
	}
	/* the object may end just before an unmapped page: read to the end of min's page */
	end = (addr + min + page - 1) & ~((uint64_t)page - 1);
	if (end - addr >= len)
		return -EFAULT;
	r = py_mem_read(m, addr, buf, end - addr);
	if (r >= 0)
		*ret_len = end - addr;
	return r;
}

int py_mem_ptr(struct py_mem *m, uint64_t addr, uint64_t *ret)
{
	uint64_t v;
	int r;

	r = py_mem_read(m, addr, &v, sizeof(v));
	if (r >= 0)
		*ret = v;
	return r;
}

/* One code point as UTF-8; what is no character (surrogates, past U+10FFFF) as U+FFFD, and
 * the controls that would move a terminal's cursor as '?'. */
static size_t put_utf8(uint32_t c, char *out)
{
	if (c < 0x20 || c == 0x7f)
		c = '?';
	if ((c >= 0xd800 && c <= 0xdfff) || c > 0x10ffff)
		c = 0xfffd;
	if (c < 0x80) {
		out[0] = c;
		return 1;
	}
	if (c < 0x800) {
		out[0] = 0xc0 | c >> 6;
		out[1] = 0x80 | (c & 0x3f);
		return 2;
	}
	if (c < 0x10000) {
		out[0] = 0xe0 | c >> 12;
		out[1] = 0x80 | ((c >> 6) & 0x3f);
		out[2] = 0x80 | (c & 0x3f);
		return 3;
	}
	out[0] = 0xf0 | c >> 18;
	out[1] = 0x80 | ((c >> 12) & 0x3f);
	out[2] = 0x80 | ((c >> 6) & 0x3f);
	out[3] = 0x80 | (c & 0x3f);
	return 4;
}

/* PyASCIIObject.state: interned:2, kind:3, compact:1, ascii:1, then ready (to 3.11) or
 * statically_allocated (3.12, 3.13) */
#define STR_KIND(s) (((s) >> 2) & 7)
#define STR_COMPACT(s) (((s) >> 5) & 1)
#define STR_ASCII(s) (((s) >> 6) & 1)
#define STR_READY(s) (((s) >> 7) & 1)

int py_read_str(struct py_mem *m, const struct py_target *t, uint64_t addr, char *buf, size_t len)
{
	const struct py_offsets *o = &t->off;
	uint8_t head[PY_STR_HEAD_MAX], data[PY_STR_BYTES_MAX * 4];
	size_t got, chars, bytes, out = 0, inline_off;
	uint64_t length, data_addr;
	uint32_t state, kind;
	int r;

	if (len < 8 || !py_ptr_ok(addr) || o->str_compact_size + 8 > sizeof(head))
		return -EBADMSG;
	r = py_mem_read_upto(m, addr, head, o->str_compact_size + 8, sizeof(head), &got);
	if (r < 0)
		return r;
	if (py_u64(head, o->ob_type) != t->unicode_type)
		return -EBADMSG;
	length = py_u64(head, o->str_length);
	state = py_u32(head, o->str_state);
	kind = STR_KIND(state);
	if (length > (1ull << 40) || (kind != 1 && kind != 2 && kind != 4) || (STR_ASCII(state) && kind != 1))
		return -EBADMSG;
	if (STR_COMPACT(state)) {
		inline_off = STR_ASCII(state) ? o->str_ascii_size : o->str_compact_size;
		data_addr = addr + inline_off;
	} else {
		/* a legacy string: its characters elsewhere (data.any), once it is ready */
		if (t->off.minor <= 11 && !STR_READY(state))
			return -EBADMSG;
		inline_off = 0;
		data_addr = py_u64(head, o->str_compact_size);
		if (!data_addr)
			return -EBADMSG;
	}
	chars = MIN(length, (uint64_t)PY_STR_BYTES_MAX);
	bytes = chars * kind;
	if (inline_off && inline_off + bytes <= got)
		memcpy(data, head + inline_off, bytes);
	else if (bytes && (r = py_mem_read(m, data_addr, data, bytes)) < 0)
		return r;
	for (size_t i = 0; i < chars; i++) {
		uint16_t c2;
		uint32_t c;
		char u[4];
		size_t n;

		if (kind == 1) {
			c = data[i];
		} else if (kind == 2) {
			memcpy(&c2, data + 2 * i, 2);
			c = c2;
		} else {
			memcpy(&c, data + 4 * i, 4);
		}

		if (STR_ASCII(state) && c >= 0x80)
			return -EBADMSG; /* not what an ASCII string holds: not a string */
		n = put_utf8(c, u);
		if (out + n + 4 > len) {
			length = SIZE_MAX; /* cut */
			break;
		}
		memcpy(buf + out, u, n);
		out += n;
	}
	if (length > chars) {
		memcpy(buf + out, "...", 3);
		out += 3;
	}
	buf[out] = 0;
	return 0;
}

int py_read_bytes(struct py_mem *m, const struct py_target *t, uint64_t addr, size_t max, uint8_t **ret,
		  size_t *ret_len)
{
	const struct py_offsets *o = &t->off;
	uint8_t head[64];
	uint64_t size;
	uint8_t *data;
	int r;

	if (!py_ptr_ok(addr) || o->bytes_sval > sizeof(head))
		return -EBADMSG;
	r = py_mem_read(m, addr, head, o->bytes_sval);
	if (r < 0)
		return r;
	if (py_u64(head, o->ob_type) != t->bytes_type)
		return -EBADMSG;
	size = py_u64(head, o->bytes_size);
	if ((int64_t)size < 0)
		return -EBADMSG;
	if (size > max)
		return -E2BIG;
	data = malloc(size ? size : 1);
	if (!data)
		return -ENOMEM;
	if (size && (r = py_mem_read(m, addr + o->bytes_sval, data, size)) < 0) {
		free(data);
		return r;
	}
	*ret = data;
	*ret_len = size;
	return 0;
}
