// SPDX-License-Identifier: GPL-2.0-only
#include <stdio.h>

#include "escape.h"

static bool is_control(unsigned char c)
{
	return c < 0x20 || c == 0x7f;
}

bool has_control(const char *s)
{
	for (; *s; s++)
		if (is_control(*s))
			return true;
	return false;
}

char *escape_control(const char *in, char *out, size_t out_size)
{
	size_t o = 0;

	if (!out_size)
		return out;
	for (; *in; in++) {
		unsigned char c = *in;

		if (!is_control(c)) {
			if (o + 1 >= out_size)
				break;
			out[o++] = c;
			continue;
		}
		if (o + 4 >= out_size)
			break;
		snprintf(out + o, 5, "\\x%02x", c);
		o += 4;
	}
	out[o] = 0;
	return out;
}
