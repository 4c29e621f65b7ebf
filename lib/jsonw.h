/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * A streaming JSON writer: values are written as they come, commas and escaping are
 * handled here. Nesting is tracked up to JSONW_MAX_DEPTH levels.
 *
 * Output is gathered in a buffer of JSONW_BUFFER bytes and handed to the FILE when it
 * fills, when a top-level value is complete (nesting back at depth 0) and at jsonw_free()
 * or jsonw_flush(): so a caller may write to the FILE itself between top-level values
 * (a newline after the document), not inside one. Write errors stay in the FILE (ferror).
 */
#ifndef HOSTPROF_JSONW_H
#define HOSTPROF_JSONW_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#define JSONW_MAX_DEPTH 32

struct jsonw;

#define JSONW_BUFFER (64 * 1024)

struct jsonw *jsonw_new(FILE *f);
/* Flushes, then frees; accepts NULL. */
void jsonw_free(struct jsonw *j);
/* Hands what is buffered to the FILE (not fflush()). */
void jsonw_flush(struct jsonw *j);

void jsonw_begin_object(struct jsonw *j);
void jsonw_end_object(struct jsonw *j);
void jsonw_begin_array(struct jsonw *j);
void jsonw_end_array(struct jsonw *j);
void jsonw_name(struct jsonw *j, const char *name);
void jsonw_string(struct jsonw *j, const char *s);
void jsonw_uint(struct jsonw *j, uint64_t v);
void jsonw_int(struct jsonw *j, int64_t v);
void jsonw_float(struct jsonw *j, double v);
void jsonw_bool(struct jsonw *j, bool v);
void jsonw_null(struct jsonw *j);

/*
 * A name known to need no escape, given as a string literal, written as it is (no scan):
 * jsonw_key(j, "ts"). For the names a writer repeats millions of times. Only literals
 * compile here (the literal is pasted between quotes).
 */
#define jsonw_key(j, lit) jsonw_name_raw((j), "\"" lit "\":", sizeof("\"" lit "\":") - 1)
void jsonw_name_raw(struct jsonw *j, const char *quoted_colon, size_t len);

void jsonw_string_field(struct jsonw *j, const char *name, const char *s);
void jsonw_uint_field(struct jsonw *j, const char *name, uint64_t v);
void jsonw_int_field(struct jsonw *j, const char *name, int64_t v);
void jsonw_float_field(struct jsonw *j, const char *name, double v);
void jsonw_bool_field(struct jsonw *j, const char *name, bool v);
/* "0x1f" as a string: addresses and flags, which JSON numbers would round past 2^53 */
void jsonw_hex(struct jsonw *j, uint64_t v);
void jsonw_hex_field(struct jsonw *j, const char *name, uint64_t v);

/*
 * A fixed-point number written exactly: v / 10^decimals (decimals <= 18), without a
 * trailing zero or point: (1500, 3) "1.5", (-7, 3) "-0.007", (42000, 3) "42". For values
 * that a double would round, such as nanoseconds written as microseconds.
 */
void jsonw_fixed(struct jsonw *j, int64_t v, unsigned int decimals);
void jsonw_fixed_field(struct jsonw *j, const char *name, int64_t v, unsigned int decimals);

#endif
