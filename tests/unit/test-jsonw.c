// SPDX-License-Identifier: GPL-2.0-only
/*
 * Unit test of lib/jsonw.c: documents built with every value type, nested objects and
 * arrays, string escaping (quotes, backslash, control characters, UTF-8 passed through),
 * non-finite floats written as null, nesting down to JSONW_MAX_DEPTH; each checked
 * against the exact text written to an open_memstream(3) stream. Then what the buffer
 * must not change: strings and documents longer than JSONW_BUFFER (escapes across its
 * pieces), a caller's own write after a top-level value coming after it, fixed-point
 * numbers with leading zeros in their fraction, the hex field.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "check.h"
#include "jsonw.h"

/* "héllo → 世界 🎉": two-, three- and four-byte sequences, written as they are */
#define UTF8 "h\xc3\xa9llo \xe2\x86\x92 \xe4\xb8\x96\xe7\x95\x8c \xf0\x9f\x8e\x89"

typedef void (*build_fn)(struct jsonw *j);

/* What build writes, as a malloc'ed string (NULL on failure, reported). */
static char *render(build_fn build)
{
	char *text = NULL;
	size_t size = 0;
	FILE *f = open_memstream(&text, &size);
	struct jsonw *j;

	CHECK(f != NULL);
	if (!f)
		return NULL;
	j = jsonw_new(f);
	CHECK(j != NULL);
	if (j)
		build(j);
	jsonw_free(j);
	CHECK_EQ_INT(fclose(f), 0);
	return text;
}

static void expect(build_fn build, const char *want, int line)
{
	char *got = render(build);

	CHECKF(got && !strcmp(got, want), "line %d:\n  got  %s\n  want %s", line,
	       got ? got : "(null)", want);
	free(got);
}

#define EXPECT(build, want) expect(build, want, __LINE__)

static void empty_object(struct jsonw *j)
{
	jsonw_begin_object(j);
	jsonw_end_object(j);
}

static void empty_array(struct jsonw *j)
{
	jsonw_begin_array(j);
	jsonw_end_array(j);
}

static void scalars(struct jsonw *j)
{
	jsonw_begin_array(j);
	jsonw_uint(j, 0);
	jsonw_uint(j, UINT64_MAX);
	jsonw_int(j, INT64_MIN);
	jsonw_int(j, INT64_MAX);
	jsonw_int(j, -1);
	jsonw_bool(j, true);
	jsonw_bool(j, false);
	jsonw_string(j, "");
	jsonw_string(j, NULL);
	jsonw_end_array(j);
}

static void floats(struct jsonw *j)
{
	jsonw_begin_array(j);
	jsonw_float(j, 0.0);
	jsonw_float(j, 1.5);
	jsonw_float(j, -2.25);
	jsonw_float(j, 0.001);
	jsonw_float(j, 1e-7);
	jsonw_float(j, 1e21);
	jsonw_float(j, 123456);
	jsonw_float(j, NAN);
	jsonw_float(j, -NAN);
	jsonw_float(j, INFINITY);
	jsonw_float(j, -INFINITY);
	jsonw_float(j, 42);
	jsonw_end_array(j);
}

static void escapes(struct jsonw *j)
{
	jsonw_begin_object(j);
	jsonw_string_field(j, "quote\"key", "a\"b\\c/d");
	jsonw_string_field(j, "ctl", "\n\t\r\x01\x1f\b\f\x7f");
	jsonw_string_field(j, "utf8", UTF8);
	jsonw_string_field(j, "\\", "\"\"");
	jsonw_end_object(j);
}

static void document(struct jsonw *j)
{
	jsonw_begin_object(j);
	jsonw_string_field(j, "name", "acl_thread");
	jsonw_uint_field(j, "pid", 1234);
	jsonw_int_field(j, "prio", -51);
	jsonw_float_field(j, "rate", 2.5);
	jsonw_float_field(j, "nan", NAN);
	jsonw_bool_field(j, "exited", false);
	jsonw_bool_field(j, "ok", true);
	jsonw_string_field(j, "none", NULL);
	jsonw_name(j, "arr");
	jsonw_begin_array(j);
	jsonw_uint(j, 1);
	jsonw_string(j, "two");
	jsonw_float(j, 3.25);
	jsonw_bool(j, false);
	jsonw_begin_array(j);
	jsonw_end_array(j);
	jsonw_begin_object(j);
	jsonw_end_object(j);
	jsonw_begin_array(j);
	jsonw_int(j, -4);
	jsonw_begin_array(j);
	jsonw_uint(j, 5);
	jsonw_end_array(j);
	jsonw_end_array(j);
	jsonw_begin_object(j);
	jsonw_string_field(j, "k", "v");
	jsonw_name(j, "n");
	jsonw_begin_object(j);
	jsonw_end_object(j);
	jsonw_end_object(j);
	jsonw_float(j, INFINITY);
	jsonw_end_array(j);
	jsonw_name(j, "nested");
	jsonw_begin_object(j);
	jsonw_name(j, "a");
	jsonw_begin_object(j);
	jsonw_name(j, "b");
	jsonw_begin_array(j);
	jsonw_begin_object(j);
	jsonw_uint_field(j, "c", 1);
	jsonw_end_object(j);
	jsonw_begin_object(j);
	jsonw_uint_field(j, "c", 2);
	jsonw_name(j, "d");
	jsonw_begin_array(j);
	jsonw_end_array(j);
	jsonw_end_object(j);
	jsonw_end_array(j);
	jsonw_end_object(j);
	jsonw_uint_field(j, "after", 7);
	jsonw_end_object(j);
	jsonw_int_field(j, "last", 0);
	jsonw_end_object(j);
}

/* [0,[1,[2,...[d-1,d-1]...,2],1],0]: a value before and after each nested level */
static void nest(struct jsonw *j, int level, int depth)
{
	jsonw_begin_array(j);
	jsonw_uint(j, level);
	if (level + 1 < depth)
		nest(j, level + 1, depth);
	jsonw_uint(j, level);
	jsonw_end_array(j);
}

static void nest_max(struct jsonw *j)
{
	nest(j, 0, JSONW_MAX_DEPTH);
}

/* the same with objects: {"v":0,"o":{"v":1,...},"w":0} */
static void nest_obj(struct jsonw *j, int level, int depth)
{
	jsonw_begin_object(j);
	jsonw_uint_field(j, "v", level);
	if (level + 1 < depth) {
		jsonw_name(j, "o");
		nest_obj(j, level + 1, depth);
	}
	jsonw_uint_field(j, "w", level);
	jsonw_end_object(j);
}

static void nest_obj_max(struct jsonw *j)
{
	nest_obj(j, 0, JSONW_MAX_DEPTH);
}

static char *nest_text(bool obj, int depth)
{
	size_t cap = 64 * depth + 1, n = 0;
	char *s = malloc(cap);

	if (!s)
		return NULL;
	for (int i = 0; i < depth; i++)
		n += snprintf(s + n, cap - n, obj ? "{\"v\":%d%s" : "[%d%s", i,
			      i + 1 < depth ? (obj ? ",\"o\":" : ",") : "");
	for (int i = depth - 1; i >= 0; i--)
		n += snprintf(s + n, cap - n, obj ? ",\"w\":%d}" : ",%d]", i);
	return s;
}

/* Long strings and documents, and the FILE shared with the caller between top-level values. */
static void test_buffering(void)
{
	size_t n = 3 * JSONW_BUFFER + 17, size = 0, i, len;
	char *in = malloc(n + 1), *want = malloc(6 * n + 64), *text = NULL;
	FILE *f = open_memstream(&text, &size);
	struct jsonw *j;

	if (!in || !want || !f) {
		CHECK(in && want && f);
		free(in), free(want);
		return;
	}
	/* every 7th byte needs an escape: they fall on both sides of each piece's end */
	len = 0;
	want[len++] = '[';
	want[len++] = '"';
	for (i = 0; i < n; i++) {
		in[i] = i % 7 == 3 ? '"' : i % 7 == 5 ? '\x01' : (char)('a' + i % 26);
		if (in[i] == '"') {
			want[len++] = '\\';
			want[len++] = '"';
		} else if (in[i] == '\x01') {
			memcpy(want + len, "\\u0001", 6);
			len += 6;
		} else {
			want[len++] = in[i];
		}
	}
	in[n] = '\0';
	j = jsonw_new(f);
	CHECK(j != NULL);
	if (j) {
		jsonw_begin_array(j);
		jsonw_string(j, in);
		jsonw_fixed(j, 12000100, 6);
		jsonw_fixed(j, -7, 3);
		jsonw_begin_object(j);
		jsonw_hex_field(j, "h", 0xdeadbeef);
		jsonw_end_object(j);
		jsonw_end_array(j);
		fputc('\n', f); /* the caller's own, after the complete value: after it in the file */
		jsonw_free(j);
	}
	CHECK_EQ_INT(fclose(f), 0);
	CHECKF(text && size > len, "a %zu-byte string: %zu bytes written", n, size);
	if (text && size > len) {
		CHECKF(!memcmp(text, want, len), "a %zu-byte string with escapes comes out whole", n);
		CHECK_STR(text + len, "\",12.0001,-0.007,{\"h\":\"0xdeadbeef\"}]\n");
	}
	free(text);
	free(in);
	free(want);
}

/* Two writers on two streams do not share state. */
static void test_independent(void)
{
	char *t1 = NULL, *t2 = NULL;
	size_t s1 = 0, s2 = 0;
	FILE *f1 = open_memstream(&t1, &s1), *f2 = open_memstream(&t2, &s2);
	struct jsonw *j1, *j2;

	if (!f1 || !f2) {
		CHECK(f1 && f2);
		return;
	}
	j1 = jsonw_new(f1);
	j2 = jsonw_new(f2);
	jsonw_begin_array(j1);
	jsonw_begin_object(j2);
	jsonw_uint(j1, 1);
	jsonw_uint_field(j2, "a", 1);
	jsonw_uint(j1, 2);
	jsonw_uint_field(j2, "b", 2);
	jsonw_end_array(j1);
	jsonw_end_object(j2);
	jsonw_free(j1);
	jsonw_free(j2);
	fclose(f1);
	fclose(f2);
	CHECK_STR(t1, "[1,2]");
	CHECK_STR(t2, "{\"a\":1,\"b\":2}");
	free(t1);
	free(t2);
	jsonw_free(NULL);
}

int main(void)
{
	char *want;

	EXPECT(empty_object, "{}");
	EXPECT(empty_array, "[]");
	EXPECT(scalars, "[0,18446744073709551615,-9223372036854775808,9223372036854775807,-1,"
			"true,false,\"\",\"\"]");
	EXPECT(floats, "[0,1.5,-2.25,0.001,1e-07,1e+21,123456,null,null,null,null,42]");
	EXPECT(escapes, "{\"quote\\\"key\":\"a\\\"b\\\\c/d\","
			"\"ctl\":\"\\n\\t\\r\\u0001\\u001f\\u0008\\u000c\x7f\","
			"\"utf8\":\"" UTF8 "\","
			"\"\\\\\":\"\\\"\\\"\"}");
	EXPECT(document, "{\"name\":\"acl_thread\",\"pid\":1234,\"prio\":-51,\"rate\":2.5,"
			 "\"nan\":null,\"exited\":false,\"ok\":true,\"none\":\"\","
			 "\"arr\":[1,\"two\",3.25,false,[],{},[-4,[5]],"
			 "{\"k\":\"v\",\"n\":{}},null],"
			 "\"nested\":{\"a\":{\"b\":[{\"c\":1},{\"c\":2,\"d\":[]}]},\"after\":7},"
			 "\"last\":0}");

	want = nest_text(false, JSONW_MAX_DEPTH);
	if (want)
		EXPECT(nest_max, want);
	free(want);
	want = nest_text(true, JSONW_MAX_DEPTH);
	if (want)
		EXPECT(nest_obj_max, want);
	free(want);

	test_independent();
	test_buffering();
	return check_summary();
}
