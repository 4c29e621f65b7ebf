// SPDX-License-Identifier: GPL-2.0-only
/*
 * Unit test of lib/glob.c, the thread-name globs the kernel matches with a shift-and
 * automaton. Without '[' and '\\', fnmatch(3) with flags 0 has the same semantics ('*' any
 * run, '?' one byte), so it is the reference:
 *
 * 1. every pattern over {a,b,c,_,*,?} up to 5 characters against every name over
 *    {a,b,c,_} up to 6 characters;
 * 2. random patterns up to 15 characters against random names and names made to match
 *    them (and near misses), from a fixed seed;
 * 3. edge cases: exact names, prefixes, suffixes, star runs, bytes above 0x7f, the
 *    compiled form of a few patterns, and the invalid patterns ("", 16+ characters).
 */
#include <errno.h>
#include <fnmatch.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "glob.h"

#define MAX_LEN (HP_COMM_LEN - 1) /* longest pattern and longest thread name */

static const char pat_alphabet[] = "abc_*?";
static const char name_alphabet[] = "abc_";

/* g is pat compiled once; thread_glob_run (and, if asked, thread_glob_match) agree with fnmatch. */
static void compare(const char *pat, const struct hp_glob *g, const char *name, bool check_match)
{
	bool want = fnmatch(pat, name, 0) == 0;
	bool got = thread_glob_run(g, name);

	CHECKF(got == want, "pattern \"%s\" name \"%s\": thread_glob_run %d, fnmatch %d", pat,
	       name, got, want);
	if (check_match)
		CHECKF(thread_glob_match(pat, name) == want,
		       "pattern \"%s\" name \"%s\": thread_glob_match %d, fnmatch %d", pat, name,
		       !want, want);
}

/* The idx-th string over alphabet a (k letters) with length len: idx in base k. */
static void nth_string(char *buf, const char *a, size_t k, size_t len, unsigned long idx)
{
	for (size_t i = 0; i < len; i++) {
		buf[i] = a[idx % k];
		idx /= k;
	}
	buf[len] = '\0';
}

static unsigned long ipow(unsigned long b, unsigned int e)
{
	unsigned long r = 1;

	while (e--)
		r *= b;
	return r;
}

static void test_exhaustive(void)
{
	const size_t npa = strlen(pat_alphabet), nna = strlen(name_alphabet);
	unsigned long pairs = 0;

	for (unsigned int plen = 1; plen <= 5; plen++) {
		for (unsigned long pi = 0; pi < ipow(npa, plen); pi++) {
			char pat[HP_COMM_LEN], name[HP_COMM_LEN];
			struct hp_glob g;

			nth_string(pat, pat_alphabet, npa, plen, pi);
			CHECKF(thread_glob_compile(pat, &g) == 0, "\"%s\" does not compile", pat);
			for (unsigned int nlen = 0; nlen <= 6; nlen++) {
				for (unsigned long ni = 0; ni < ipow(nna, nlen); ni++) {
					nth_string(name, name_alphabet, nna, nlen, ni);
					/* thread_glob_match compiles again: check it on a sample */
					compare(pat, &g, name, ni % 17 == 0);
					pairs++;
				}
			}
		}
	}
	printf("exhaustive: %lu pattern/name pairs\n", pairs);
}

/* A name the pattern matches: each '*' becomes 0..3 characters, each '?' one. */
static bool matching_name(const char *pat, char *name, uint64_t *seed)
{
	size_t n = 0;

	for (const char *p = pat; *p; p++) {
		unsigned int run = 1;

		if (*p == '*')
			run = check_rand(seed) % 4;
		for (unsigned int i = 0; i < run; i++) {
			if (n >= MAX_LEN)
				return false;
			if (*p == '*' || *p == '?')
				name[n++] = name_alphabet[check_rand(seed) % strlen(name_alphabet)];
			else
				name[n++] = *p;
		}
	}
	name[n] = '\0';
	return true;
}

static void test_random(void)
{
	uint64_t seed = 0x61c0ffee;
	unsigned long pairs = 0, matched = 0;

	for (int i = 0; i < 100000; i++) {
		char pat[HP_COMM_LEN], name[HP_COMM_LEN];
		size_t plen = 1 + check_rand(&seed) % MAX_LEN;
		struct hp_glob g;

		/* literals more often than wildcards, so that some names match */
		for (size_t j = 0; j < plen; j++) {
			unsigned int c = check_rand(&seed) % 10;

			pat[j] = c < 6 ? name_alphabet[c % 4] : c < 8 ? '*' : '?';
		}
		pat[plen] = '\0';
		CHECKF(thread_glob_compile(pat, &g) == 0, "\"%s\" does not compile", pat);

		for (int k = 0; k < 8; k++) {
			size_t nlen = check_rand(&seed) % (MAX_LEN + 1);

			if (k < 4 && matching_name(pat, name, &seed)) {
				/* and a near miss: one character changed */
				if (k & 1 && name[0]) {
					size_t at = check_rand(&seed) % strlen(name);

					name[at] = name_alphabet[check_rand(&seed) % 4];
				}
			} else {
				for (size_t j = 0; j < nlen; j++)
					name[j] = name_alphabet[check_rand(&seed) % 4];
				name[nlen] = '\0';
			}
			matched += fnmatch(pat, name, 0) == 0;
			compare(pat, &g, name, k == 0);
			pairs++;
		}
	}
	printf("random: %lu pattern/name pairs, %lu of them matching\n", pairs, matched);
	/* the generator must give the matching side real coverage */
	CHECKF(matched > pairs / 5, "only %lu of %lu random pairs match", matched, pairs);
}

static void expect(const char *pat, const char *name, bool want, int line)
{
	bool got = thread_glob_match(pat, name);

	CHECKF(got == want, "line %d: thread_glob_match(\"%s\", \"%s\") = %d, want %d", line, pat,
	       name, got, want);
	if (thread_glob_valid(pat))
		CHECKF((fnmatch(pat, name, 0) == 0) == want,
		       "line %d: fnmatch(\"%s\", \"%s\") disagrees with the expectation", line, pat,
		       name);
}

#define MATCH(p, n) expect(p, n, true, __LINE__)
#define NO_MATCH(p, n) expect(p, n, false, __LINE__)

static void test_edges(void)
{
	MATCH("acl_thread", "acl_thread");
	NO_MATCH("acl_thread", "acl_threads");
	NO_MATCH("acl_thread", "acl_threa");
	NO_MATCH("acl_thread", "xacl_thread");
	NO_MATCH("acl_thread", "");
	NO_MATCH("acl_thread", "ACL_THREAD");

	MATCH("acl_*", "acl_");
	MATCH("acl_*", "acl_thread");
	MATCH("acl_*", "acl_*");
	NO_MATCH("acl_*", "acl");
	NO_MATCH("acl_*", "xacl_thread");

	MATCH("*thread", "thread");
	MATCH("*thread", "acl_thread");
	MATCH("*thread", "threadthread");
	NO_MATCH("*thread", "thread2");
	NO_MATCH("*thread", "hread");

	MATCH("*", "");
	MATCH("*", "x");
	MATCH("*", "fifteen_chars!!");
	MATCH("***************", "");
	MATCH("***************", "anything");

	MATCH("?", "x");
	MATCH("?", "*");
	MATCH("?", "\xff");
	NO_MATCH("?", "");
	NO_MATCH("?", "xy");
	MATCH("???", "abc");
	NO_MATCH("???", "ab");
	MATCH("?*", "a");
	NO_MATCH("?*", "");
	MATCH("*?", "ab");
	MATCH("*?*?*", "ab");
	NO_MATCH("*?*?*", "a");

	MATCH("a**b", "ab");
	MATCH("a**b", "axxb");
	MATCH("a**b", "abbb");
	NO_MATCH("a**b", "a");
	NO_MATCH("a**b", "ba");
	NO_MATCH("a**b", "abc");
	MATCH("a*b*c", "abc");
	MATCH("a*b*c", "aXbYc");
	MATCH("a*b*c", "acbcc");
	NO_MATCH("a*b*c", "acb");

	/* a literal '*' or '?' in a name is just a character */
	MATCH("a?c", "a*c");
	MATCH("a*", "a?");

	/* bytes above 0x7f (UTF-8 names) match themselves and '?' */
	MATCH("\xc3\xa9t\xc3\xa9", "\xc3\xa9t\xc3\xa9");
	MATCH("*\xc3\xa9", "caf\xc3\xa9");
	MATCH("caf??", "caf\xc3\xa9");
	NO_MATCH("caf?", "caf\xc3\xa9");

	/* 15 characters, the longest thread name */
	MATCH("kworker/u64:123", "kworker/u64:123");
	MATCH("kworker/*", "kworker/u64:123");
	MATCH("???????????????", "kworker/u64:123");
	NO_MATCH("??????????????", "kworker/u64:123");
}

static void test_invalid(void)
{
	struct hp_glob g, untouched;
	char long_pat[64];

	CHECK(!thread_glob_valid(""));
	CHECK(thread_glob_valid("a"));
	CHECK(thread_glob_valid("*"));
	CHECK(thread_glob_valid("123456789012345"));
	CHECK(!thread_glob_valid("1234567890123456"));
	CHECK(!thread_glob_valid("****************"));

	memset(&untouched, 0xa5, sizeof(untouched));
	g = untouched;
	CHECK_EQ_INT(thread_glob_compile("", &g), -EINVAL);
	CHECK_MEM(&g, &untouched, sizeof(g));
	CHECK_EQ_INT(thread_glob_compile("1234567890123456", &g), -EINVAL);
	CHECK_MEM(&g, &untouched, sizeof(g));
	memset(long_pat, '*', sizeof(long_pat) - 1);
	long_pat[sizeof(long_pat) - 1] = '\0';
	CHECK_EQ_INT(thread_glob_compile(long_pat, &g), -EINVAL);
	CHECK_MEM(&g, &untouched, sizeof(g));

	/* an invalid pattern matches nothing, not even the name it spells */
	CHECK(!thread_glob_match("", ""));
	CHECK(!thread_glob_match("", "a"));
	CHECK(!thread_glob_match("1234567890123456", "1234567890123456"));
	CHECK(!thread_glob_match(long_pat, "x"));
}

/* The compiled form the kernel runs, as bpf/hostprof.h documents it. */
static void test_compiled(void)
{
	struct hp_glob g, g2;

	CHECK_EQ_INT(thread_glob_compile("a*b", &g), 0);
	CHECK_EQ_U64(g.accept, 1u << 3);
	CHECK_EQ_U64(g.epsilon, 1u << 1);
	CHECK_EQ_U64(g.self_loop, 1u << 2);
	CHECK_EQ_U64(g.charmask['a'], 1u << 1);
	CHECK_EQ_U64(g.charmask['b'], 1u << 3);
	CHECK_EQ_U64(g.charmask['c'], 0);
	CHECK_EQ_U64(g.charmask[0], 0);
	CHECK_EQ_U64(g.pad, 0);

	/* runs of '*' fold: "a**b" compiles exactly like "a*b" */
	CHECK_EQ_INT(thread_glob_compile("a**b", &g2), 0);
	CHECK_MEM(&g, &g2, sizeof(g));
	CHECK_EQ_INT(thread_glob_compile("a*****b", &g2), 0);
	CHECK_MEM(&g, &g2, sizeof(g));

	/* '?' takes every byte but NUL */
	CHECK_EQ_INT(thread_glob_compile("?", &g), 0);
	CHECK_EQ_U64(g.accept, 1u << 1);
	CHECK_EQ_U64(g.charmask[0], 0);
	for (int c = 1; c < 256; c++)
		CHECKF(g.charmask[c] == 1u << 1, "charmask[%d] = %#x", c, g.charmask[c]);

	/* the longest pattern still fits the 32-bit state */
	CHECK_EQ_INT(thread_glob_compile("abcdefghijklmno", &g), 0);
	CHECK_EQ_U64(g.accept, 1u << 15);
	CHECK_EQ_U64(g.charmask['o'], 1u << 15);
}

int main(void)
{
	test_edges();
	test_invalid();
	test_compiled();
	test_exhaustive();
	test_random();
	return check_summary();
}
