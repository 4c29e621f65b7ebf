// SPDX-License-Identifier: GPL-2.0-only
/*
 * test-python-lines FILE...: daemon/python/linetable.c against the interpreters' own
 * answers. Each FILE is gen-lines.py's output for one CPython version: every code object of
 * tests/python/lines-sample.py with its first line, its raw line table, and the line of each
 * instruction offset as that interpreter computes it. Every one of them must decode the same.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../unit/check.h"
#include "python/internal.h"

static size_t unhex(const char *s, uint8_t *out, size_t max)
{
	size_t n = 0;

	if (!strcmp(s, "-"))
		return 0;
	for (; s[0] && s[1] && n < max; s += 2) {
		unsigned b;

		if (sscanf(s, "%2x", &b) != 1)
			break;
		out[n++] = b;
	}
	return n;
}

static int check_file(const char *path)
{
	static char line[1 << 20], name[256], hex[1 << 18];
	static uint8_t table[1 << 17];
	enum py_lines_kind kind = PY_LINES_311;
	unsigned major = 0, minor = 0, codes = 0, offsets = 0;
	uint32_t first = 0;
	size_t len = 0;
	FILE *f = fopen(path, "re");

	if (!f) {
		fprintf(stderr, "%s: %m\n", path);
		return -errno;
	}
	while (fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = 0;
		if (sscanf(line, "version %u.%u", &major, &minor) == 2) {
			kind = minor <= 9 ? PY_LINES_LNOTAB : minor == 10 ? PY_LINES_310 : PY_LINES_311;
			CHECK(py_offsets_for(minor) && py_offsets_for(minor)->lines == kind);
			continue;
		}
		if (sscanf(line, "code %255s %u %262143s", name, &first, hex) == 3) {
			len = unhex(hex, table, sizeof(table));
			codes++;
			continue;
		}
		for (char *tok = strtok(line, " "); tok; tok = strtok(NULL, " ")) {
			long long off;
			unsigned want, got;

			if (sscanf(tok, "%lld:%u", &off, &want) != 2)
				continue;
			got = py_line_for(kind, table, len, first, off);
			offsets++;
			CHECKF(got == want,
			       "%s: 3.%u %s (first line %u) at %lld: line %u, the interpreter says %u", path,
			       minor, name, first, off, got, want);
		}
		/* nothing run yet: the first line, as PyCode_Addr2Line says */
		CHECK_EQ_U64(py_line_for(kind, table, len, first, -1), first);
	}
	fclose(f);
	printf("%s: CPython %u.%u, %u code objects, %u instructions\n", path, major, minor, codes, offsets);
	CHECK(codes >= 10 && offsets >= 500);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: test-python-lines FILE...\n");
		return 2;
	}
	for (int i = 1; i < argc; i++)
		check_file(argv[i]);
	return check_summary();
}
