// SPDX-License-Identifier: GPL-2.0-only
/* Streaming JSON writer; see jsonw.h. */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>

#include "jsonw.h"

struct jsonw {
	FILE *f;
	int depth;
	bool first[JSONW_MAX_DEPTH]; /* nothing written yet at this level */
	bool after_name;
};

struct jsonw *jsonw_new(FILE *f)
{
	struct jsonw *j = calloc(1, sizeof(*j));

	if (j) {
		j->f = f;
		j->first[0] = true;
	}
	return j;
}

void jsonw_free(struct jsonw *j)
{
	free(j);
}

/* Before any value or name: a comma unless it is the first at its level. */
static void sep(struct jsonw *j)
{
	if (j->after_name) {
		j->after_name = false;
		return;
	}
	if (!j->first[j->depth])
		fputc(',', j->f);
	j->first[j->depth] = false;
}

static void push(struct jsonw *j, char c)
{
	sep(j);
	fputc(c, j->f);
	if (j->depth < JSONW_MAX_DEPTH - 1)
		j->depth++;
	j->first[j->depth] = true;
}

static void pop(struct jsonw *j, char c)
{
	fputc(c, j->f);
	if (j->depth > 0)
		j->depth--;
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

static void put_string(FILE *f, const char *s)
{
	fputc('"', f);
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		switch (*p) {
		case '"':
			fputs("\\\"", f);
			break;
		case '\\':
			fputs("\\\\", f);
			break;
		case '\n':
			fputs("\\n", f);
			break;
		case '\t':
			fputs("\\t", f);
			break;
		case '\r':
			fputs("\\r", f);
			break;
		default:
			if (*p < 0x20)
				fprintf(f, "\\u%04x", *p);
			else
				fputc(*p, f);
		}
	}
	fputc('"', f);
}

void jsonw_name(struct jsonw *j, const char *name)
{
	sep(j);
	put_string(j->f, name);
	fputc(':', j->f);
	j->after_name = true;
}

void jsonw_string(struct jsonw *j, const char *s)
{
	sep(j);
	put_string(j->f, s ? s : "");
}

void jsonw_uint(struct jsonw *j, uint64_t v)
{
	sep(j);
	fprintf(j->f, "%" PRIu64, v);
}

void jsonw_int(struct jsonw *j, int64_t v)
{
	sep(j);
	fprintf(j->f, "%" PRId64, v);
}

void jsonw_float(struct jsonw *j, double v)
{
	sep(j);
	if (isfinite(v))
		fprintf(j->f, "%.9g", v);
	else
		fputs("null", j->f);
}

void jsonw_bool(struct jsonw *j, bool v)
{
	sep(j);
	fputs(v ? "true" : "false", j->f);
}

void jsonw_null(struct jsonw *j)
{
	sep(j);
	fputs("null", j->f);
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

void jsonw_hex_field(struct jsonw *j, const char *name, uint64_t v)
{
	char buf[24];

	snprintf(buf, sizeof(buf), "0x%" PRIx64, v);
	jsonw_string_field(j, name, buf);
}

void jsonw_fixed(struct jsonw *j, int64_t v, unsigned int decimals)
{
	uint64_t mag = v < 0 ? -(uint64_t)v : (uint64_t)v, scale = 1, frac;
	unsigned int i, digits = decimals;

	if (decimals > 18)
		decimals = digits = 18;
	for (i = 0; i < decimals; i++)
		scale *= 10;
	frac = mag % scale;
	while (digits && frac % 10 == 0) {
		frac /= 10;
		digits--;
	}
	sep(j);
	fprintf(j->f, "%s%" PRIu64, v < 0 ? "-" : "", mag / scale);
	if (digits)
		fprintf(j->f, ".%0*" PRIu64, (int)digits, frac);
}

void jsonw_fixed_field(struct jsonw *j, const char *name, int64_t v, unsigned int decimals)
{
	jsonw_name(j, name);
	jsonw_fixed(j, v, decimals);
}
