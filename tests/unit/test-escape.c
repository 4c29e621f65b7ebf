// SPDX-License-Identifier: GPL-2.0-only
/* lib/escape.c: control bytes as \xNN, nothing else touched, cut only at a whole escape. */
#include <string.h>

#include "check.h"
#include "escape.h"

int main(void)
{
	char out[64];

	CHECK(!strcmp(escape_control("acl_thread", out, sizeof(out)), "acl_thread"));
	CHECK(!strcmp(escape_control("a\nb\tc\x7f" "d", out, sizeof(out)), "a\\x0ab\\x09c\\x7fd"));
	CHECK(!strcmp(escape_control("\033[31mred", out, sizeof(out)), "\\x1b[31mred"));
	CHECK(!strcmp(escape_control("caf\xc3\xa9", out, sizeof(out)), "caf\xc3\xa9")); /* UTF-8 stays */
	CHECK(!strcmp(escape_control("ab\ncd", out, 7), "ab\\x0a")); /* room for the whole escape */
	CHECK(!strcmp(escape_control("ab\ncd", out, 6), "ab"));      /* never half of one */
	CHECK(!strcmp(escape_control("abc", out, 1), ""));
	CHECK(has_control("x\ny") && !has_control("plain") && !has_control(""));
	return check_summary();
}
