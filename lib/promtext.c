// SPDX-License-Identifier: GPL-2.0-only
/* The Prometheus text exposition format; see promtext.h. */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "promtext.h"

/* Length of the valid UTF-8 sequence at s (n bytes left), 0 if none starts there. */
static size_t utf8_len(const unsigned char *s, size_t n)
{
	size_t len;
	uint32_t cp;

	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		len = 2, cp = s[0] & 0x1f;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		len = 3, cp = s[0] & 0x0f;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		len = 4, cp = s[0] & 0x07;
	else
		return 0;
	if (len > n)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	/* overlong forms, surrogates, past U+10FFFF */
	if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
	    (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return len;
}

char *prom_escape_value(const char *in, char out[PROM_ESCAPED_SIZE])
{
	const unsigned char *s = (const unsigned char *)in;
	size_t n = strnlen(in, PROM_VALUE_MAX), o = 0;

	for (size_t i = 0; i < n;) {
		size_t len = utf8_len(s + i, n - i);

		if (len > 1) {
			memcpy(out + o, s + i, len);
			o += len;
			i += len;
			continue;
		}
		if (!len) /* a byte that starts no valid character, or one cut by the limit */
			out[o++] = '?';
		else if (s[i] == '\\' || s[i] == '"')
			out[o++] = '\\', out[o++] = s[i];
		else if (s[i] == '\n')
			out[o++] = '\\', out[o++] = 'n';
		else if (s[i] < 0x20 || s[i] == 0x7f)
			out[o++] = '?';
		else
			out[o++] = s[i];
		i++;
	}
	out[o] = 0;
	return out;
}

static int append_str(struct hp_buf *out, const char *s)
{
	return hp_buf_append(out, s, strlen(s));
}

int prom_family(struct hp_buf *out, const char *name, const char *type, const char *help)
{
	int r;

	if ((r = append_str(out, "# HELP ")) < 0 || (r = append_str(out, name)) < 0 ||
	    (r = hp_buf_append(out, " ", 1)) < 0)
		return r;
	for (const char *h = help; *h; h++) {
		/* HELP escapes backslash and newline */
		r = *h == '\\' ? append_str(out, "\\\\") :
		    *h == '\n' ? append_str(out, "\\n") :
				 hp_buf_append(out, h, 1);
		if (r < 0)
			return r;
	}
	if ((r = append_str(out, "\n# TYPE ")) < 0 || (r = append_str(out, name)) < 0 ||
	    (r = hp_buf_append(out, " ", 1)) < 0 || (r = append_str(out, type)) < 0)
		return r;
	return hp_buf_append(out, "\n", 1);
}

int prom_sample(struct hp_buf *out, const char *name, const struct prom_label *labels, size_t n,
		const char *value)
{
	char esc[PROM_ESCAPED_SIZE];
	bool first = true;
	int r = append_str(out, name);

	for (size_t i = 0; r >= 0 && i < n; i++) {
		if (!labels[i].value)
			continue;
		if ((r = hp_buf_append(out, first ? "{" : ",", 1)) < 0 ||
		    (r = append_str(out, labels[i].name)) < 0 || (r = append_str(out, "=\"")) < 0 ||
		    (r = append_str(out, prom_escape_value(labels[i].value, esc))) < 0 ||
		    (r = hp_buf_append(out, "\"", 1)) < 0)
			return r;
		first = false;
	}
	if (r >= 0 && !first)
		r = hp_buf_append(out, "}", 1);
	if (r >= 0)
		r = hp_buf_append(out, " ", 1);
	if (r >= 0)
		r = append_str(out, value);
	return r < 0 ? r : hp_buf_append(out, "\n", 1);
}

char *prom_seconds(uint64_t ns, char buf[32])
{
	snprintf(buf, 32, "%" PRIu64 ".%09" PRIu64, ns / 1000000000u, ns % 1000000000u);
	return buf;
}

char *prom_uint(uint64_t v, char buf[32])
{
	snprintf(buf, 32, "%" PRIu64, v);
	return buf;
}
