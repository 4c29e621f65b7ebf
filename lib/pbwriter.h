/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * pbwriter: a small protobuf encoder that appends fields to one growable buffer.
 *
 * Fields are written in the order the caller gives them; nothing is built in memory as
 * objects. A nested message is opened with pbw_begin(), which writes the tag and a 1-byte
 * length placeholder, and closed with pbw_end(), which writes the real length there: in
 * place when it is below 128, else by moving the message's bytes up by the length's extra
 * bytes. Every length is therefore the shortest varint, as protobuf encoders write it, and
 * the small messages that a trace is mostly made of are never moved. A nested message is
 * limited to PBW_NESTED_MAX bytes. Packed repeated fields are written the same way:
 * pbw_begin(), pbw_raw_varint() per element, pbw_end().
 *
 * Errors are sticky: the first failure (-ENOMEM, or -EMSGSIZE for an oversized nested
 * message) is kept in w->err and every later write is a no-op, so a caller checks once,
 * at the end. Every writer returns w->err.
 */
#ifndef HOSTPROF_PBWRITER_H
#define HOSTPROF_PBWRITER_H

#include <stddef.h>
#include <stdint.h>

/* Wire types. */
#define PBW_WT_VARINT 0
#define PBW_WT_FIXED64 1
#define PBW_WT_LEN 2
#define PBW_WT_FIXED32 5

/* Largest varint: 10 bytes. */
#define PBW_VARINT_MAX 10
/* Bytes of the length placeholder written by pbw_begin(), and the largest nested message. */
#define PBW_NESTED_LEN_BYTES 1
#define PBW_NESTED_MAX ((1u << 28) - 1)

struct pbw {
	uint8_t *buf;
	size_t len, cap;
	int err;
};

#define PBW_INIT { .buf = NULL, .len = 0, .cap = 0, .err = 0 }

/* Makes room for n more bytes; returns 0 or w->err. */
int pbw_grow(struct pbw *w, size_t n);

static inline int pbw_reserve(struct pbw *w, size_t n)
{
	if (w->err)
		return w->err;
	if (w->cap - w->len >= n)
		return 0;
	return pbw_grow(w, n);
}

/* Forgets the contents (and the error) but keeps the memory. Open tokens become invalid. */
void pbw_reset(struct pbw *w);
/* Frees the buffer; accepts NULL and an already freed writer. */
void pbw_free(struct pbw *w);

/* Appends v as a varint; the caller has reserved PBW_VARINT_MAX bytes. */
static inline void pbw_put_varint(struct pbw *w, uint64_t v)
{
	uint8_t *p = w->buf + w->len;

	while (v >= 0x80) {
		*p++ = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	*p++ = (uint8_t)v;
	w->len = (size_t)(p - w->buf);
}

/* A bare varint, no tag: for the elements of a packed field. */
static inline int pbw_raw_varint(struct pbw *w, uint64_t v)
{
	int r = pbw_reserve(w, PBW_VARINT_MAX);

	if (r < 0)
		return r;
	pbw_put_varint(w, v);
	return 0;
}

/* uint32, uint64, bool, enum, and non-negative int32/int64. */
int pbw_varint(struct pbw *w, uint32_t field, uint64_t v);
/* int32 and int64: negative values take 10 bytes, as the wire format wants. */
int pbw_int(struct pbw *w, uint32_t field, int64_t v);
/* sint32 and sint64 (zigzag). */
int pbw_sint(struct pbw *w, uint32_t field, int64_t v);
int pbw_fixed64(struct pbw *w, uint32_t field, uint64_t v);
int pbw_bytes(struct pbw *w, uint32_t field, const void *data, size_t len);
/* A NULL string is written as "". */
int pbw_string(struct pbw *w, uint32_t field, const char *s);

/*
 * Opens a length-delimited field (nested message or packed field) and returns a token
 * for pbw_end(). Tokens are buffer offsets: do not pbw_reset() while one is open.
 */
size_t pbw_begin(struct pbw *w, uint32_t field);
int pbw_end(struct pbw *w, size_t token);

static inline uint64_t pbw_zigzag(int64_t v)
{
	return ((uint64_t)v << 1) ^ (v < 0 ? UINT64_MAX : 0);
}

/* Bytes of v as a varint. */
static inline size_t pbw_varint_size(uint64_t v)
{
	size_t n = 1;

	while (v >= 0x80) {
		v >>= 7;
		n++;
	}
	return n;
}

#endif
