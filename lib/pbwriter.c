// SPDX-License-Identifier: GPL-2.0-only
/*
 * pbwriter: protobuf encoding into one growable buffer (see pbwriter.h). The buffer grows
 * by doubling; there is no allocation per field.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "pbwriter.h"

#define PBW_MIN_CAP 4096
#define PBW_FIELD_MAX ((1u << 29) - 1)

int pbw_grow(struct pbw *w, size_t n)
{
	size_t need, cap;
	uint8_t *buf;

	if (w->err)
		return w->err;
	if (n > SIZE_MAX - w->len)
		return (w->err = -ENOMEM);
	need = w->len + n;
	if (need <= w->cap)
		return 0;

	cap = w->cap ? w->cap : PBW_MIN_CAP;
	while (cap < need) {
		if (cap > SIZE_MAX / 2) {
			cap = need;
			break;
		}
		cap *= 2;
	}

	buf = realloc(w->buf, cap);
	if (!buf)
		return (w->err = -ENOMEM);
	w->buf = buf;
	w->cap = cap;
	return 0;
}

void pbw_reset(struct pbw *w)
{
	w->len = 0;
	w->err = 0;
}

void pbw_free(struct pbw *w)
{
	if (!w)
		return;
	free(w->buf);
	w->buf = NULL;
	w->len = w->cap = 0;
}

/* Reserves room for the tag plus extra bytes, then writes the tag. */
static inline int put_tag(struct pbw *w, uint32_t field, unsigned int wire_type, size_t extra)
{
	int r;

	if (field == 0 || field > PBW_FIELD_MAX) {
		if (!w->err)
			w->err = -EINVAL;
		return w->err;
	}
	r = pbw_reserve(w, PBW_VARINT_MAX + extra);
	if (r < 0)
		return r;
	pbw_put_varint(w, ((uint64_t)field << 3) | wire_type);
	return 0;
}

int pbw_varint(struct pbw *w, uint32_t field, uint64_t v)
{
	int r;

	r = put_tag(w, field, PBW_WT_VARINT, PBW_VARINT_MAX);
	if (r < 0)
		return r;
	pbw_put_varint(w, v);
	return 0;
}

int pbw_int(struct pbw *w, uint32_t field, int64_t v)
{
	return pbw_varint(w, field, (uint64_t)v);
}

int pbw_sint(struct pbw *w, uint32_t field, int64_t v)
{
	return pbw_varint(w, field, pbw_zigzag(v));
}

int pbw_fixed64(struct pbw *w, uint32_t field, uint64_t v)
{
	uint8_t *p;
	int r, i;

	r = put_tag(w, field, PBW_WT_FIXED64, 8);
	if (r < 0)
		return r;
	p = w->buf + w->len;
	for (i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
	w->len += 8;
	return 0;
}

int pbw_bytes(struct pbw *w, uint32_t field, const void *data, size_t len)
{
	int r;

	if (len > SIZE_MAX - 2 * PBW_VARINT_MAX) {
		if (!w->err)
			w->err = -ENOMEM;
		return w->err;
	}
	r = put_tag(w, field, PBW_WT_LEN, PBW_VARINT_MAX + len);
	if (r < 0)
		return r;
	pbw_put_varint(w, len);
	if (len)
		memcpy(w->buf + w->len, data, len);
	w->len += len;
	return 0;
}

int pbw_string(struct pbw *w, uint32_t field, const char *s)
{
	if (!s)
		s = "";
	return pbw_bytes(w, field, s, strlen(s));
}

size_t pbw_begin(struct pbw *w, uint32_t field)
{
	size_t token;

	if (put_tag(w, field, PBW_WT_LEN, PBW_NESTED_LEN_BYTES) < 0)
		return 0;
	token = w->len;
	w->buf[w->len++] = 0;
	return token;
}

int pbw_end(struct pbw *w, size_t token)
{
	size_t size, n;
	uint8_t *p;
	int r;

	if (w->err)
		return w->err;
	if (token > w->len || w->len - token < PBW_NESTED_LEN_BYTES)
		return (w->err = -EINVAL);
	size = w->len - token - PBW_NESTED_LEN_BYTES;
	if (size > PBW_NESTED_MAX)
		return (w->err = -EMSGSIZE);
	if (size < 0x80) {
		w->buf[token] = (uint8_t)size;
		return 0;
	}

	/* a longer length: the message moves up by its extra bytes */
	n = pbw_varint_size(size);
	r = pbw_reserve(w, n - PBW_NESTED_LEN_BYTES);
	if (r < 0)
		return r;
	p = w->buf + token;
	memmove(p + n, p + PBW_NESTED_LEN_BYTES, size);
	w->len = token;
	pbw_put_varint(w, size);
	w->len += size;
	return 0;
}
