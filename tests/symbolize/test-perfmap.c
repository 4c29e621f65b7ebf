// SPDX-License-Identifier: GPL-2.0-only
/*
 * perfmap_parse (daemon/symbolize/perfmap.c) on hostile input: bad lines are counted and skipped,
 * overlaps follow the documented rules, long lines are cut without being split, and the
 * entry and name caps bound what a map can make the daemon allocate:
 *
 * 1. one line of each kind: valid, 0x prefixes, tabs, CR, bad hex, too many digits, size 0,
 *    huge sizes, wrap-around, no name, NUL bytes, no newline at EOF;
 * 2. overlaps: equal starts (the later line wins) and ranges running into the next;
 * 3. a 1 MiB line (with a name, and as garbage): cut at PERFMAP_NAME_MAX, one line;
 * 4. 1 MiB of random bytes, from a fixed seed;
 * 5. more entries than PERFMAP_ENTRIES_MAX, more name bytes than PERFMAP_NAMES_MAX;
 * 6. an empty file, and lookups in an empty map.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../unit/check.h"
#include "symbolize/perfmap.h"

#define BOUND ((size_t)PERFMAP_ENTRIES_MAX * sizeof(struct perfmap_entry) + PERFMAP_NAMES_MAX)

static int parse_buf(const char *buf, size_t len, struct perfmap *ret)
{
	FILE *f = tmpfile();
	int r;

	if (!f)
		return -errno;
	if (len && fwrite(buf, 1, len, f) != len) {
		fclose(f);
		return -EIO;
	}
	rewind(f);
	r = perfmap_parse(f, ret);
	fclose(f);
	return r;
}

static int parse_str(const char *s, struct perfmap *ret)
{
	return parse_buf(s, strlen(s), ret);
}

static const char *name_at(const struct perfmap *m, uint64_t addr)
{
	const struct perfmap_entry *e = perfmap_find(m, addr);

	return e ? perfmap_name(m, e) : NULL;
}

#define CHECK_NAME(m, addr, want)                                                    \
	do {                                                                         \
		const char *_n_ = name_at(m, addr);                                  \
		if (want)                                                            \
			CHECK_STR(_n_, (const char *)want);                          \
		else                                                                 \
			CHECKF(!_n_, "0x%llx: %s", (unsigned long long)(addr), _n_); \
	} while (0)

static void test_lines(void)
{
	static const char text[] = "1000 10 a\n"
				   "zzz 10 bad\n"
				   "1100\n"
				   "2000 0 zero\n"
				   "0x3000 0X20 hex prefixed\n"
				   "12345678901234567 10 seventeen digits\n"
				   "ffffffffffffffff 10 wraps\n"
				   "4000 ffffffffff huge\n"
				   "5000 10    \n"
				   "6000 10 crlf name  \r\n"
				   "7000\t10\ttabbed\n"
				   "  7100 10 leading blanks\n"
				   "71g0 10 bad digit\n"
				   "7200 10x bad size\n"
				   "8000 10 last-no-newline";
	static const char nul_line[] = "9000 10 has\0nul\n9100 10 fine\n";
	struct perfmap m;

	CHECK_EQ_INT(parse_str(text, &m), 0);
	CHECK_EQ_U64(m.lines, 15);
	CHECK_EQ_U64(m.n, 6);
	CHECK_EQ_U64(m.rejected, 9);
	CHECK_NAME(&m, 0x1000, "a");
	CHECK_NAME(&m, 0x100f, "a");
	CHECK_NAME(&m, 0x1010, NULL);
	CHECK_NAME(&m, 0x2000, NULL);
	CHECK_NAME(&m, 0x301f, "hex prefixed");
	CHECK_NAME(&m, 0x6000, "crlf name");
	CHECK_NAME(&m, 0x7005, "tabbed");
	CHECK_NAME(&m, 0x7105, "leading blanks");
	CHECK_NAME(&m, 0x800f, "last-no-newline");
	CHECK_NAME(&m, 0x8010, NULL);
	CHECK_NAME(&m, 0, NULL);
	CHECK_NAME(&m, UINT64_MAX, NULL);
	CHECK(!m.capped);
	perfmap_done(&m);

	CHECK_EQ_INT(parse_buf(nul_line, sizeof(nul_line) - 1, &m), 0);
	CHECK_EQ_U64(m.n, 1);
	CHECK_NAME(&m, 0x9100, "fine");
	CHECK_NAME(&m, 0x9000, NULL);
	perfmap_done(&m);
}

static void test_overlaps(void)
{
	struct perfmap m;

	CHECK_EQ_INT(parse_str("1000 100 a\n"
			       "1050 100 b\n"
			       "1000 10 c\n"
			       "2000 100 x\n"
			       "2080 10 y\n"
			       "3000 10 first\n"
			       "3000 20 second\n"
			       "3000 8 third\n"
			       "ffffffffffffff00 ff at the top\n",
			       &m),
		     0);
	CHECK_EQ_U64(m.n, 6);
	CHECK_NAME(&m, 0x1000, "c");
	CHECK_NAME(&m, 0x100f, "c");
	CHECK_NAME(&m, 0x1020, NULL); /* a lost to c, which is shorter */
	CHECK_NAME(&m, 0x1050, "b");
	CHECK_NAME(&m, 0x114f, "b");
	CHECK_NAME(&m, 0x1150, NULL);
	CHECK_NAME(&m, 0x207f, "x"); /* x cut where y starts */
	CHECK_NAME(&m, 0x2080, "y");
	CHECK_NAME(&m, 0x2090, NULL);
	CHECK_NAME(&m, 0x3007, "third");
	CHECK_NAME(&m, 0x3008, NULL);
	CHECK_NAME(&m, UINT64_MAX - 1, "at the top");
	for (size_t i = 0; i + 1 < m.n; i++)
		CHECK(m.entries[i].start + m.entries[i].size <= m.entries[i + 1].start);
	perfmap_done(&m);
}

static void test_long_lines(void)
{
	size_t big = 1 << 20;
	char *buf = malloc(big + 64);
	struct perfmap m;
	int n;

	if (!buf) {
		CHECK(0);
		return;
	}
	n = sprintf(buf, "9000 10 ");
	memset(buf + n, 'A', big);
	strcpy(buf + n + big, "\na000 10 after\n");
	CHECK_EQ_INT(parse_str(buf, &m), 0);
	CHECK_EQ_U64(m.lines, 2);
	CHECK_EQ_U64(m.n, 2);
	CHECK_EQ_U64(m.truncated, 1);
	CHECK_EQ_U64(strlen(name_at(&m, 0x9000)), PERFMAP_NAME_MAX);
	CHECK_NAME(&m, 0xa000, "after");
	CHECK(m.names_len <= PERFMAP_NAME_MAX + 16);
	perfmap_done(&m);

	/* garbage, no newline at the end */
	memset(buf, 'x', big);
	buf[big] = 0;
	CHECK_EQ_INT(parse_str(buf, &m), 0);
	CHECK_EQ_U64(m.lines, 1);
	CHECK_EQ_U64(m.n, 0);
	CHECK_EQ_U64(m.rejected, 1);
	CHECK(!m.entries && !m.names);
	perfmap_done(&m);

	/* a long name whose line fits: cut all the same */
	n = sprintf(buf, "b000 10 ");
	memset(buf + n, 'B', 3000);
	strcpy(buf + n + 3000, "\n");
	CHECK_EQ_INT(parse_str(buf, &m), 0);
	CHECK_EQ_U64(m.n, 1);
	CHECK_EQ_U64(strlen(name_at(&m, 0xb000)), PERFMAP_NAME_MAX);
	perfmap_done(&m);
	free(buf);
}

static void test_random(void)
{
	size_t len = 1 << 20;
	unsigned char *buf = malloc(len);
	uint64_t seed = 0x5eed;
	struct perfmap m;

	if (!buf) {
		CHECK(0);
		return;
	}
	for (int round = 0; round < 4; round++) {
		for (size_t i = 0; i < len; i++) {
			uint64_t x = check_rand(&seed);

			/* from all bytes to mostly hex digits, blanks and newlines */
			if (round == 0)
				buf[i] = x;
			else
				buf[i] = "0123456789abcdefx  \t\n\n"[x % (round == 1 ? 23 : 21)];
		}
		CHECK_EQ_INT(parse_buf((char *)buf, len, &m), 0);
		CHECK(perfmap_bytes(&m) <= BOUND);
		CHECK(m.n <= m.lines);
		for (size_t i = 0; i + 1 < m.n; i++)
			CHECK(m.entries[i].start + m.entries[i].size <= m.entries[i + 1].start);
		printf("random round %d: %llu lines, %zu entries, %llu rejected\n", round,
		       (unsigned long long)m.lines, m.n, (unsigned long long)m.rejected);
		perfmap_done(&m);
	}
	free(buf);
}

static void test_caps(void)
{
	FILE *f = tmpfile();
	struct perfmap m;
	char name[PERFMAP_NAME_MAX + 1];
	size_t lines = PERFMAP_ENTRIES_MAX + 1000;

	if (!f) {
		CHECK(0);
		return;
	}
	for (size_t i = 0; i < lines; i++)
		fprintf(f, "%zx 10 f%zu\n", 0x100000 + i * 0x10, i);
	rewind(f);
	CHECK_EQ_INT(perfmap_parse(f, &m), 0);
	CHECK_EQ_U64(m.n, PERFMAP_ENTRIES_MAX);
	CHECK(m.capped);
	CHECK(perfmap_bytes(&m) <= BOUND);
	CHECK_NAME(&m, 0x100000, "f0");
	perfmap_done(&m);
	fclose(f);

	f = tmpfile();
	if (!f) {
		CHECK(0);
		return;
	}
	memset(name, 'n', PERFMAP_NAME_MAX);
	name[PERFMAP_NAME_MAX] = 0;
	lines = PERFMAP_NAMES_MAX / PERFMAP_NAME_MAX + 100;
	for (size_t i = 0; i < lines; i++)
		fprintf(f, "%zx 10 %s\n", 0x100000 + i * 0x10, name);
	rewind(f);
	CHECK_EQ_INT(perfmap_parse(f, &m), 0);
	CHECK(m.capped);
	CHECK(m.names_len <= PERFMAP_NAMES_MAX);
	CHECK(m.n < lines);
	CHECK(perfmap_bytes(&m) <= BOUND);
	perfmap_done(&m);
	fclose(f);
}

static void test_empty(void)
{
	struct perfmap m = {};

	CHECK(!perfmap_find(&m, 0));
	CHECK(!perfmap_find(&m, UINT64_MAX));
	CHECK_EQ_INT(parse_str("", &m), 0);
	CHECK_EQ_U64(m.n, 0);
	CHECK_EQ_U64(m.lines, 0);
	CHECK(!perfmap_find(&m, 0));
	perfmap_done(&m);
	perfmap_done(&m);
}

int main(void)
{
	test_lines();
	test_overlaps();
	test_long_lines();
	test_random();
	test_caps();
	test_empty();
	return check_summary();
}
