// SPDX-License-Identifier: GPL-2.0-only
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "macro.h"
#include "walltime.h"

/* ".250" after the seconds: its ns, and where it ends */
static const char *fraction(const char *p, uint64_t *ret_ns)
{
	uint64_t ns = 0, scale = 100000000;

	*ret_ns = 0;
	if (*p != '.' && *p != ',')
		return p;
	p++;
	if (!isdigit((unsigned char)*p))
		return NULL;
	for (; isdigit((unsigned char)*p); p++, scale /= 10)
		ns += (uint64_t)(*p - '0') * scale;
	*ret_ns = ns;
	return p;
}

static int parse_epoch(const char *s, uint64_t *ret_ns)
{
	uint64_t sec = 0, ns;
	const char *p = s;

	for (; isdigit((unsigned char)*p); p++) {
		if (sec > (UINT64_MAX / NSEC_PER_SEC - 9) / 10)
			return -EINVAL;
		sec = sec * 10 + (*p - '0');
	}
	if (p == s)
		return -EINVAL;
	p = fraction(p, &ns);
	if (!p || *p)
		return -EINVAL;
	*ret_ns = sec * NSEC_PER_SEC + ns;
	return 0;
}

int parse_wall_time(const char *s, uint64_t *ret_ns)
{
	struct tm tm = {};
	uint64_t ns;
	const char *p;
	long off = 0;
	time_t t;

	if (!strchr(s, '-'))
		return parse_epoch(s, ret_ns);
	p = strptime(s, "%Y-%m-%d", &tm);
	if (!p || (*p != 'T' && *p != 't' && *p != ' '))
		return -EINVAL;
	p = strptime(p + 1, "%H:%M:%S", &tm);
	if (!p)
		return -EINVAL;
	p = fraction(p, &ns);
	if (!p)
		return -EINVAL;
	if (*p == 'Z' || *p == 'z') {
		p++;
	} else if ((*p == '+' || *p == '-') && isdigit((unsigned char)p[1]) && isdigit((unsigned char)p[2]) &&
		   p[3] == ':' && isdigit((unsigned char)p[4]) && isdigit((unsigned char)p[5])) {
		off = ((p[1] - '0') * 10 + (p[2] - '0')) * 3600 + ((p[4] - '0') * 10 + (p[5] - '0')) * 60;
		if (*p == '-')
			off = -off;
		p += 6;
	} else {
		return -EINVAL; /* no offset: which zone is meant is a guess */
	}
	if (*p)
		return -EINVAL;
	t = timegm(&tm);
	if (t == (time_t)-1 || t - off < 0)
		return -EINVAL;
	*ret_ns = (uint64_t)(t - off) * NSEC_PER_SEC + ns;
	return 0;
}

const char *format_wall_time(uint64_t ns, char *buf, size_t len)
{
	time_t t = ns / NSEC_PER_SEC;
	struct tm tm;
	char base[32];

	gmtime_r(&t, &tm);
	strftime(base, sizeof(base), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf, len, "%s.%03uZ", base, (unsigned)(ns % NSEC_PER_SEC / NSEC_PER_MSEC));
	return buf;
}

const char *format_wall_time_us(uint64_t ns, char *buf, size_t len)
{
	time_t t = ns / NSEC_PER_SEC;
	struct tm tm;
	char base[32];

	gmtime_r(&t, &tm);
	strftime(base, sizeof(base), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf, len, "%s.%06uZ", base, (unsigned)(ns % NSEC_PER_SEC / 1000));
	return buf;
}
