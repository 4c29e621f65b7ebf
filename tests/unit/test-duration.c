// SPDX-License-Identifier: GPL-2.0-only
/*
 * Unit test of lib/duration.c: parse_duration() with every unit and the inputs a user
 * gets wrong, format_duration() outputs and its round trip through parse_duration(),
 * parse_uint() at its bounds. A failed parse leaves the output untouched.
 */
#include <errno.h>
#include <stdint.h>

#include "check.h"
#include "duration.h"
#include "macro.h"

#define UNTOUCHED 0xdeadbeefcafef00dULL

static void expect_duration(const char *s, uint64_t want, int line)
{
	uint64_t ns = UNTOUCHED;
	int r = parse_duration(s, &ns);

	CHECKF(r == 0 && ns == want, "line %d: parse_duration(\"%s\") = %d, %" PRIu64
	       ", want 0, %" PRIu64, line, s, r, ns, want);
}

static void expect_duration_error(const char *s, int want, int line)
{
	uint64_t ns = UNTOUCHED;
	int r = parse_duration(s, &ns);

	CHECKF(r == want, "line %d: parse_duration(\"%s\") = %d, want %d", line,
	       s ? s : "(null)", r, want);
	CHECKF(ns == UNTOUCHED, "line %d: parse_duration(\"%s\") wrote %" PRIu64
	       " on failure", line, s ? s : "(null)", ns);
}

static void expect_uint(const char *s, uint64_t max, int want_r, uint64_t want, int line)
{
	uint64_t v = UNTOUCHED;
	int r = parse_uint(s, max, &v);

	CHECKF(r == want_r, "line %d: parse_uint(\"%s\", %" PRIu64 ") = %d, want %d", line,
	       s ? s : "(null)", max, r, want_r);
	if (want_r == 0)
		CHECKF(v == want, "line %d: parse_uint(\"%s\") gave %" PRIu64 ", want %" PRIu64,
		       line, s, v, want);
	else
		CHECKF(v == UNTOUCHED, "line %d: parse_uint(\"%s\") wrote %" PRIu64
		       " on failure", line, s ? s : "(null)", v);
}

static void expect_format(uint64_t ns, const char *want, int line)
{
	char buf[32];
	const char *s = format_duration(ns, buf, sizeof(buf));

	CHECKF(s == buf, "line %d: format_duration does not return its buffer", line);
	CHECKF(!strcmp(buf, want), "line %d: format_duration(%" PRIu64 ") = \"%s\", want \"%s\"",
	       line, ns, buf, want);
}

#define DUR(s, ns) expect_duration(s, ns, __LINE__)
#define DUR_ERR(s, e) expect_duration_error(s, e, __LINE__)
#define UINT(s, max, r, v) expect_uint(s, max, r, v, __LINE__)
#define FMT(ns, s) expect_format(ns, s, __LINE__)

static void test_parse_duration(void)
{
	DUR("500ms", 500 * NSEC_PER_MSEC);
	DUR("5s", 5 * NSEC_PER_SEC);
	DUR("2m", 120 * NSEC_PER_SEC);
	DUR("2min", 120 * NSEC_PER_SEC);
	DUR("1h", 3600 * NSEC_PER_SEC);
	DUR("250us", 250 * NSEC_PER_USEC);
	DUR("100ns", 100);
	DUR("30", 30 * NSEC_PER_SEC);
	DUR("0", 0);
	DUR("0ns", 0);
	DUR("0h", 0);
	DUR("007s", 7 * NSEC_PER_SEC);
	DUR("1ns", 1);
	DUR("18446744073709551615ns", UINT64_MAX);
	DUR("18446744073709551us", 18446744073709551ULL * NSEC_PER_USEC);
	DUR("18446744073s", 18446744073ULL * NSEC_PER_SEC);
	DUR("18446744073", 18446744073ULL * NSEC_PER_SEC);
	DUR("307445734m", 307445734ULL * 60 * NSEC_PER_SEC);
	DUR("5124095h", 5124095ULL * 3600 * NSEC_PER_SEC);

	DUR_ERR("", -EINVAL);
	DUR_ERR(NULL, -EINVAL);
	DUR_ERR("5x", -EINVAL);
	DUR_ERR("-1", -EINVAL);
	DUR_ERR("-1s", -EINVAL);
	DUR_ERR("+1s", -EINVAL);
	DUR_ERR("ms", -EINVAL);
	DUR_ERR("s", -EINVAL);
	DUR_ERR("1.5s", -EINVAL);
	DUR_ERR(".5s", -EINVAL);
	DUR_ERR(" 5s", -EINVAL);
	DUR_ERR("5 s", -EINVAL);
	DUR_ERR("5s ", -EINVAL);
	DUR_ERR("5S", -EINVAL);
	DUR_ERR("5sec", -EINVAL);
	DUR_ERR("5mss", -EINVAL);
	DUR_ERR("5h1m", -EINVAL);
	DUR_ERR("0x10", -EINVAL);
	DUR_ERR("1e3", -EINVAL);
	DUR_ERR("99999999999999999999s", -ERANGE);
	DUR_ERR("99999999999999999999", -ERANGE);
	DUR_ERR("18446744073709551616ns", -ERANGE);
	DUR_ERR("18446744073709551615m", -ERANGE);
	DUR_ERR("18446744073709552us", -ERANGE);
	DUR_ERR("18446744074s", -ERANGE);
	DUR_ERR("18446744074", -ERANGE);
	DUR_ERR("307445735m", -ERANGE);
	DUR_ERR("307445735min", -ERANGE);
	DUR_ERR("5124096h", -ERANGE);
}

static void test_format_duration(void)
{
	char small[4];
	uint64_t seed = 0x5eed;

	FMT(0, "0s");
	FMT(1, "1ns");
	FMT(999, "999ns");
	FMT(1000, "1us");
	FMT(250 * NSEC_PER_USEC, "250us");
	FMT(1001, "1001ns");
	FMT(NSEC_PER_MSEC, "1ms");
	FMT(500 * NSEC_PER_MSEC, "500ms");
	FMT(1500 * NSEC_PER_MSEC, "1500ms");
	FMT(1500 * NSEC_PER_USEC + 1, "1500001ns");
	FMT(NSEC_PER_SEC, "1s");
	FMT(30 * NSEC_PER_SEC, "30s");
	FMT(59 * NSEC_PER_SEC, "59s");
	FMT(60 * NSEC_PER_SEC, "1m");
	FMT(90 * NSEC_PER_SEC, "90s");
	FMT(120 * NSEC_PER_SEC, "2m");
	FMT(NSEC_PER_SEC + 1, "1000000001ns");
	FMT(UINT64_MAX, "18446744073709551615ns");

	/* a short buffer is truncated and still terminated */
	CHECK_STR(format_duration(1500 * NSEC_PER_MSEC, small, sizeof(small)), "150");

	/* whatever it prints, parse_duration reads back the same value */
	for (int i = 0; i < 20000; i++) {
		uint64_t v = check_rand(&seed), back = UNTOUCHED;
		char buf[32];
		int r;

		switch (i % 6) {
		case 0:
			break;
		case 1:
			v %= 1000000;
			break;
		case 2:
			v = (v % 100000) * NSEC_PER_USEC;
			break;
		case 3:
			v = (v % 100000) * NSEC_PER_MSEC;
			break;
		case 4:
			v = (v % 100000) * NSEC_PER_SEC;
			break;
		case 5:
			v = (v % 100000) * 60 * NSEC_PER_SEC;
			break;
		}
		format_duration(v, buf, sizeof(buf));
		r = parse_duration(buf, &back);
		CHECKF(r == 0 && back == v,
		       "%" PRIu64 " formats as \"%s\", parsed back as %d, %" PRIu64, v, buf, r,
		       back);
	}
}

static void test_parse_uint(void)
{
	UINT("0", 0, 0, 0);
	UINT("1", 0, -ERANGE, 0);
	UINT("42", 42, 0, 42);
	UINT("43", 42, -ERANGE, 0);
	UINT("007", 10, 0, 7);
	UINT("4294967295", UINT32_MAX, 0, UINT32_MAX);
	UINT("4294967296", UINT32_MAX, -ERANGE, 0);
	UINT("18446744073709551615", UINT64_MAX, 0, UINT64_MAX);
	UINT("18446744073709551616", UINT64_MAX, -ERANGE, 0);
	UINT("99999999999999999999999", UINT64_MAX, -ERANGE, 0);
	UINT("", 100, -EINVAL, 0);
	UINT(NULL, 100, -EINVAL, 0);
	UINT("-1", UINT64_MAX, -EINVAL, 0);
	UINT("+1", 100, -EINVAL, 0);
	UINT(" 1", 100, -EINVAL, 0);
	UINT("1 ", 100, -EINVAL, 0);
	UINT("12a", 100, -EINVAL, 0);
	UINT("0x10", 100, -EINVAL, 0);
	UINT("1.0", 100, -EINVAL, 0);
	UINT("5s", 100, -EINVAL, 0);
}

int main(void)
{
	test_parse_duration();
	test_format_duration();
	test_parse_uint();
	return check_summary();
}
