// SPDX-License-Identifier: GPL-2.0-only
/*
 * lib/promtext.c: label values escaped as the exposition format requires (\\, \", \n),
 * cut at PROM_VALUE_MAX bytes on a whole UTF-8 character, invalid UTF-8 and other control
 * bytes as '?'; families and samples in the format's layout; seconds exact to the ns.
 * promtool, an independent parser, reads the daemon's real output in e2e-metrics.
 */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "promtext.h"

static const char *esc(const char *in)
{
	static char out[PROM_ESCAPED_SIZE];

	return prom_escape_value(in, out);
}

static char *text(struct hp_buf *b)
{
	static char s[4096];
	size_t n = hp_buf_pending(b);

	n = n < sizeof(s) - 1 ? n : sizeof(s) - 1;
	memcpy(s, b->data + b->off, n);
	s[n] = 0;
	return s;
}

int main(void)
{
	char big[10 * 1024 + 1], want[PROM_ESCAPED_SIZE], v[32];
	struct hp_buf b = {};

	CHECK_STR(esc("acl_thread"), "acl_thread");
	CHECK_STR(esc("a\"b"), "a\\\"b");
	CHECK_STR(esc("a\\b"), "a\\\\b");
	CHECK_STR(esc("a\nb"), "a\\nb");
	CHECK_STR(esc("\"\\\n"), "\\\"\\\\\\n");
	CHECK_STR(esc("tab\there\rcr\x1b[2J\x7f"), "tab?here?cr?[2J?"); /* other control bytes */
	CHECK_STR(esc("caf\xc3\xa9 \xe6\x97\xa5 \xf0\x9f\x98\x80"),
		  "caf\xc3\xa9 \xe6\x97\xa5 \xf0\x9f\x98\x80");
	CHECK_STR(esc("bad\xff\xfe"), "bad??");
	CHECK_STR(esc("\xc3"), "?"); /* a truncated sequence */
	CHECK_STR(esc("\xc0\xaf"), "??"); /* an overlong '/' */
	CHECK_STR(esc("\xed\xa0\x80"), "???"); /* a surrogate */
	CHECK_STR(esc("\xf4\x90\x80\x80"), "????"); /* past U+10FFFF */
	CHECK_STR(esc(""), "");

	/* 10 KiB: cut to PROM_VALUE_MAX bytes */
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = 0;
	CHECK_EQ_U64(strlen(esc(big)), PROM_VALUE_MAX);
	/* 10 KiB of quotes: every kept byte doubles, and it still fits */
	memset(big, '"', sizeof(big) - 1);
	CHECK_EQ_U64(strlen(esc(big)), 2 * PROM_VALUE_MAX);
	memset(big, '\n', sizeof(big) - 1);
	CHECK_EQ_U64(strlen(esc(big)), 2 * PROM_VALUE_MAX);
	CHECK(!strchr(esc(big), '\n'));
	/* a character that the limit cuts is left out whole (as a '?', never half of it) */
	memset(big, 'x', PROM_VALUE_MAX - 1);
	memcpy(big + PROM_VALUE_MAX - 1, "\xc3\xa9tail", 7);
	memset(want, 'x', PROM_VALUE_MAX - 1);
	strcpy(want + PROM_VALUE_MAX - 1, "?");
	CHECK_STR(esc(big), want);

	/* a family, and samples with and without labels; NULL values are left out */
	CHECK(prom_family(&b, "hostprof_x_total", "counter", "Things\\done\nhere") >= 0);
	CHECK(prom_sample(&b, "hostprof_x_total",
			  (struct prom_label[]){ { "pid", "12" }, { "rank", NULL }, { "job_id", "a\"b\nc" } },
			  3, "7") >= 0);
	CHECK(prom_sample(&b, "hostprof_x_total", (struct prom_label[]){ { "rank", NULL } }, 1, "0") >= 0);
	CHECK(prom_sample(&b, "hostprof_x_total", NULL, 0, "1") >= 0);
	CHECK_STR(text(&b), "# HELP hostprof_x_total Things\\\\done\\nhere\n"
			    "# TYPE hostprof_x_total counter\n"
			    "hostprof_x_total{pid=\"12\",job_id=\"a\\\"b\\nc\"} 7\n"
			    "hostprof_x_total 0\n"
			    "hostprof_x_total 1\n");
	hp_buf_free(&b);

	CHECK_STR(prom_seconds(0, v), "0.000000000");
	CHECK_STR(prom_seconds(1, v), "0.000000001");
	CHECK_STR(prom_seconds(1234567890123ull, v), "1234.567890123");
	CHECK_STR(prom_seconds(UINT64_MAX, v), "18446744073.709551615");
	CHECK_STR(prom_uint(UINT64_MAX, v), "18446744073709551615");
	return check_summary();
}
