// SPDX-License-Identifier: GPL-2.0-only
/*
 * Streaming JSON writer; see jsonw.h. Everything goes through a buffer of its own and is
 * formatted here (integers, escapes) rather than by stdio, which locks the FILE and parses
 * a format for every character or number: a Chrome trace is millions of small values.
 */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "jsonw.h"

struct jsonw {
	FILE *f;
	int depth;
	bool first[JSONW_MAX_DEPTH]; /* nothing written yet at this level */
	bool after_name;
	size_t len;
	char buf[JSONW_BUFFER];
};

struct jsonw *jsonw_new(FILE *f)
{
	struct jsonw *j = malloc(sizeof(*j));

	if (j) {
		j->f = f;
		j->depth = 0;
		j->first[0] = true;
		j->after_name = false;
		j->len = 0;
	}
	return j;
}

void jsonw_flush(struct jsonw *j)
{
	if (j->len)
		fwrite(j->buf, 1, j->len, j->f); /* a short write leaves ferror() set */
	j->len = 0;
}

void jsonw_free(struct jsonw *j)
{
	if (!j)
		return;
	jsonw_flush(j);
	free(j);
}

/* Room for n more bytes (n <= JSONW_BUFFER). */
static inline char *room(struct jsonw *j, size_t n)
{
	if (JSONW_BUFFER - j->len < n)
		jsonw_flush(j);
	return j->buf + j->len;
}

static inline void put_char(struct jsonw *j, char c)
{
	*room(j, 1) = c;
	j->len++;
}

static void put_bytes(struct jsonw *j, const char *s, size_t n)
{
	while (n) {
		size_t k = JSONW_BUFFER - j->len;

		if (k == 0) {
			jsonw_flush(j);
			k = JSONW_BUFFER;
		}
		if (k > n)
			k = n;
		memcpy(j->buf + j->len, s, k);
		j->len += k;
		s += k;
		n -= k;
	}
}

/* The decimal digits of v, at the end of a 20-byte buffer; returns where they start. */
static inline char *digits(uint64_t v, char *end)
{
	static const char pairs[] = "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
				    "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
				    "8081828384858687888990919293949596979899";
	char *p = end;

	while (v >= 100) {
		unsigned int k = (unsigned int)(v % 100) * 2;

		v /= 100;
		*--p = pairs[k + 1];
		*--p = pairs[k];
	}
	if (v >= 10) {
		*--p = pairs[v * 2 + 1];
		*--p = pairs[v * 2];
	} else {
		*--p = (char)('0' + v);
	}
	return p;
}

/* Short copies, without a call. */
static inline void put_short(struct jsonw *j, const char *p, size_t n)
{
	char *o = room(j, n);

	for (size_t i = 0; i < n; i++)
		o[i] = p[i];
	j->len += n;
}

static void put_uint(struct jsonw *j, uint64_t v)
{
	char buf[20], *p = digits(v, buf + sizeof(buf));

	put_short(j, p, (size_t)(buf + sizeof(buf) - p));
}

/* Before any value or name: a comma unless it is the first at its level. */
static inline void sep(struct jsonw *j)
{
	if (j->after_name) {
		j->after_name = false;
		return;
	}
	if (!j->first[j->depth])
		put_char(j, ',');
	j->first[j->depth] = false;
}

/* A value is complete; at the top level it goes out now. */
static inline void done(struct jsonw *j)
{
	if (j->depth == 0)
		jsonw_flush(j);
}

static void push(struct jsonw *j, char c)
{
	sep(j);
	put_char(j, c);
	if (j->depth < JSONW_MAX_DEPTH - 1)
		j->depth++;
	j->first[j->depth] = true;
}

static void pop(struct jsonw *j, char c)
{
	put_char(j, c);
	if (j->depth > 0)
		j->depth--;
	done(j);
}

void jsonw_begin_object(struct jsonw *j)
{
	push(j, '{');
}

void jsonw_end_object(struct jsonw *j)
{
	pop(j, '}');
}

void jsonw_begin_array(struct jsonw *j)
{
	push(j, '[');
}

void jsonw_end_array(struct jsonw *j)
{
	pop(j, ']');
}

/* Characters a JSON string cannot hold as they are: how they are written ('u': \u00XX). */
static const char escapes[256] = {
	['\0'] = 'u', [0x01] = 'u', [0x02] = 'u', [0x03] = 'u', [0x04] = 'u', [0x05] = 'u', [0x06] = 'u',
	[0x07] = 'u', [0x08] = 'u', ['\t'] = 't', ['\n'] = 'n', [0x0b] = 'u', [0x0c] = 'u', ['\r'] = 'r',
	[0x0e] = 'u', [0x0f] = 'u', [0x10] = 'u', [0x11] = 'u', [0x12] = 'u', [0x13] = 'u', [0x14] = 'u',
	[0x15] = 'u', [0x16] = 'u', [0x17] = 'u', [0x18] = 'u', [0x19] = 'u', [0x1a] = 'u', [0x1b] = 'u',
	[0x1c] = 'u', [0x1d] = 'u', [0x1e] = 'u', [0x1f] = 'u', ['"'] = '"', ['\\'] = '\\',
};

/* The escaped form of n bytes at p, written at o (room for 6 bytes per byte); returns the end. */
static char *escape_into(char *o, const unsigned char *p, size_t n)
{
	static const char hex[] = "0123456789abcdef";

	for (size_t i = 0; i < n; i++) {
		unsigned char c = p[i];
		char e = escapes[c];

		if (!e) {
			*o++ = (char)c;
		} else if (e != 'u') {
			*o++ = '\\';
			*o++ = e;
		} else {
			memcpy(o, "\\u00", 4);
			o[4] = hex[c >> 4];
			o[5] = hex[c & 0xf];
			o += 6;
		}
	}
	return o;
}

#define STRING_CHUNK ((JSONW_BUFFER - 2) / 6) /* bytes escaped at once */

static void put_string(struct jsonw *j, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t n = strlen(s);
	char *o;

	if (n <= STRING_CHUNK) { /* nearly always: in one piece, quotes and all */
		o = room(j, 6 * n + 2);
		*o++ = '"';
		o = escape_into(o, p, n);
		*o++ = '"';
		j->len = (size_t)(o - j->buf);
		return;
	}
	put_char(j, '"');
	while (n) {
		size_t k = n < STRING_CHUNK ? n : STRING_CHUNK;

		o = room(j, 6 * k);
		j->len = (size_t)(escape_into(o, p, k) - j->buf);
		p += k;
		n -= k;
	}
	put_char(j, '"');
}

void jsonw_name(struct jsonw *j, const char *name)
{
	sep(j);
	put_string(j, name);
	put_char(j, ':');
	j->after_name = true;
}

void jsonw_name_raw(struct jsonw *j, const char *quoted_colon, size_t len)
{
	sep(j);
	put_short(j, quoted_colon, len);
	j->after_name = true;
}

void jsonw_string(struct jsonw *j, const char *s)
{
	sep(j);
	put_string(j, s ? s : "");
	done(j);
}

void jsonw_uint(struct jsonw *j, uint64_t v)
{
	sep(j);
	put_uint(j, v);
	done(j);
}

void jsonw_int(struct jsonw *j, int64_t v)
{
	sep(j);
	if (v < 0) {
		put_char(j, '-');
		put_uint(j, -(uint64_t)v);
	} else {
		put_uint(j, (uint64_t)v);
	}
	done(j);
}

void jsonw_float(struct jsonw *j, double v)
{
	char buf[32];
	int n;

	sep(j);
	if (isfinite(v)) {
		n = snprintf(buf, sizeof(buf), "%.9g", v);
		put_bytes(j, buf, n > 0 ? (size_t)n : 0);
	} else {
		put_bytes(j, "null", 4);
	}
	done(j);
}

void jsonw_bool(struct jsonw *j, bool v)
{
	sep(j);
	if (v)
		put_bytes(j, "true", 4);
	else
		put_bytes(j, "false", 5);
	done(j);
}

void jsonw_null(struct jsonw *j)
{
	sep(j);
	put_bytes(j, "null", 4);
	done(j);
}

void jsonw_string_field(struct jsonw *j, const char *name, const char *s)
{
	jsonw_name(j, name);
	jsonw_string(j, s);
}

void jsonw_uint_field(struct jsonw *j, const char *name, uint64_t v)
{
	jsonw_name(j, name);
	jsonw_uint(j, v);
}

void jsonw_int_field(struct jsonw *j, const char *name, int64_t v)
{
	jsonw_name(j, name);
	jsonw_int(j, v);
}

void jsonw_float_field(struct jsonw *j, const char *name, double v)
{
	jsonw_name(j, name);
	jsonw_float(j, v);
}

void jsonw_bool_field(struct jsonw *j, const char *name, bool v)
{
	jsonw_name(j, name);
	jsonw_bool(j, v);
}

void jsonw_hex(struct jsonw *j, uint64_t v)
{
	static const char hex[] = "0123456789abcdef";
	char buf[20], *p = buf + sizeof(buf);

	*--p = '"';
	do {
		*--p = hex[v & 0xf];
		v >>= 4;
	} while (v);
	*--p = 'x';
	*--p = '0';
	*--p = '"';
	sep(j);
	put_short(j, p, (size_t)(buf + sizeof(buf) - p));
	done(j);
}

void jsonw_hex_field(struct jsonw *j, const char *name, uint64_t v)
{
	jsonw_name(j, name);
	jsonw_hex(j, v);
}

void jsonw_fixed(struct jsonw *j, int64_t v, unsigned int decimals)
{
	uint64_t mag = v < 0 ? -(uint64_t)v : (uint64_t)v, scale = 1, frac;
	unsigned int i, ndigits = decimals;

	if (decimals > 18)
		decimals = ndigits = 18;
	for (i = 0; i < decimals; i++)
		scale *= 10;
	frac = mag % scale;
	while (ndigits && frac % 10 == 0) {
		frac /= 10;
		ndigits--;
	}
	sep(j);
	if (v < 0)
		put_char(j, '-');
	put_uint(j, mag / scale);
	if (ndigits) {
		char buf[20], *end = buf + sizeof(buf), *p = digits(frac, end);

		put_char(j, '.');
		for (size_t k = (size_t)(end - p); k < ndigits; k++)
			put_char(j, '0');
		put_short(j, p, (size_t)(end - p));
	}
	done(j);
}

void jsonw_fixed_field(struct jsonw *j, const char *name, int64_t v, unsigned int decimals)
{
	jsonw_name(j, name);
	jsonw_fixed(j, v, decimals);
}
