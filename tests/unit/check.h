/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The assertions of the lib/ unit tests. Every check is counted; a failed one prints
 * file:line, the expression and the values, and the test goes on. check_summary() prints
 * the totals and returns the exit status: 0 when every check passed, 1 otherwise.
 * After CHECK_MAX_REPORTS failures only the count goes on, so that a broken invariant
 * checked a million times does not drown the log.
 */
#ifndef HOSTPROF_TESTS_CHECK_H
#define HOSTPROF_TESTS_CHECK_H

#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define CHECK_MAX_REPORTS 100

static unsigned long check_count, check_failures;

/* Counts a check; true when its failure should be printed. */
static inline bool check_fail(const char *file, int line, const char *expr)
{
	check_failures++;
	if (check_failures > CHECK_MAX_REPORTS)
		return false;
	fflush(stdout);
	fprintf(stderr, "FAIL %s:%d: %s", file, line, expr);
	return true;
}

#define CHECK(cond)                                                                \
	do {                                                                       \
		check_count++;                                                     \
		if (!(cond) && check_fail(__FILE__, __LINE__, #cond))             \
			fputc('\n', stderr);                                       \
	} while (0)

/* CHECK with a printf-style explanation of the values involved. */
#define CHECKF(cond, ...)                                                          \
	do {                                                                       \
		check_count++;                                                     \
		if (!(cond) && check_fail(__FILE__, __LINE__, #cond)) {            \
			fputs(": ", stderr);                                       \
			fprintf(stderr, __VA_ARGS__);                              \
			fputc('\n', stderr);                                       \
		}                                                                  \
	} while (0)

#define CHECK_EQ_U64(a, b)                                                         \
	do {                                                                       \
		uint64_t _chk_a_ = (uint64_t)(a), _chk_b_ = (uint64_t)(b);        \
		check_count++;                                                     \
		if (_chk_a_ != _chk_b_ && check_fail(__FILE__, __LINE__, #a " == " #b)) \
			fprintf(stderr, ": %" PRIu64 " != %" PRIu64 "\n", _chk_a_, _chk_b_); \
	} while (0)

#define CHECK_EQ_INT(a, b)                                                         \
	do {                                                                       \
		int64_t _chk_a_ = (int64_t)(a), _chk_b_ = (int64_t)(b);           \
		check_count++;                                                     \
		if (_chk_a_ != _chk_b_ && check_fail(__FILE__, __LINE__, #a " == " #b)) \
			fprintf(stderr, ": %" PRId64 " != %" PRId64 "\n", _chk_a_, _chk_b_); \
	} while (0)

#define CHECK_STR(a, b)                                                            \
	do {                                                                       \
		const char *_chk_a_ = (a), *_chk_b_ = (b);                         \
		check_count++;                                                     \
		if (!(_chk_a_ && _chk_b_ && !strcmp(_chk_a_, _chk_b_)) &&          \
		    check_fail(__FILE__, __LINE__, #a " == " #b))                  \
			fprintf(stderr, ": \"%s\" != \"%s\"\n",                   \
				_chk_a_ ? _chk_a_ : "(null)", _chk_b_ ? _chk_b_ : "(null)"); \
	} while (0)

#define CHECK_MEM(a, b, n)                                                         \
	do {                                                                       \
		size_t _chk_n_ = (n);                                              \
		check_count++;                                                     \
		if (memcmp((a), (b), _chk_n_) &&                                   \
		    check_fail(__FILE__, __LINE__, "memcmp(" #a ", " #b ", " #n ") == 0")) \
			fprintf(stderr, ": %zu bytes differ\n", _chk_n_);         \
	} while (0)

static inline int check_summary(void)
{
	if (check_failures > CHECK_MAX_REPORTS)
		fprintf(stderr, "... %lu more failures not shown\n",
			check_failures - CHECK_MAX_REPORTS);
	fflush(stderr);
	printf("%lu checks, %lu failed\n", check_count, check_failures);
	return check_failures ? 1 : 0;
}

/* A small deterministic generator (xorshift64*), the same on every libc. */
static inline uint64_t check_rand(uint64_t *state)
{
	uint64_t x = *state;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*state = x;
	return x * 0x2545F4914F6CDD1DULL;
}

#endif /* HOSTPROF_TESTS_CHECK_H */
