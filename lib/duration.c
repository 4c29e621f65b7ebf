// SPDX-License-Identifier: GPL-2.0-only
/* Durations and integers as users type them on the command line and in the config. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "duration.h"
#include "macro.h"

int parse_uint(const char *s, uint64_t max, uint64_t *ret)
{
	unsigned long long v;
	char *end;

	if (!s || !isdigit((unsigned char)*s))
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno == ERANGE || v > max)
		return -ERANGE;
	if (*end)
		return -EINVAL;
	*ret = v;
	return 0;
}

int parse_duration(const char *s, uint64_t *ret_ns)
{
	static const struct {
		const char *suffix;
		uint64_t mult;
	} units[] = {
		{ "ns", 1 },
		{ "us", NSEC_PER_USEC },
		{ "ms", NSEC_PER_MSEC },
		{ "s", NSEC_PER_SEC },
		{ "", NSEC_PER_SEC },
		{ "m", 60 * NSEC_PER_SEC },
		{ "min", 60 * NSEC_PER_SEC },
		{ "h", 3600 * NSEC_PER_SEC },
	};
	unsigned long long v;
	char *end;

	if (!s || !isdigit((unsigned char)*s))
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno == ERANGE)
		return -ERANGE;
	for (size_t i = 0; i < ARRAY_SIZE(units); i++) {
		if (strcmp(end, units[i].suffix))
			continue;
		if (v > UINT64_MAX / units[i].mult)
			return -ERANGE;
		*ret_ns = v * units[i].mult;
		return 0;
	}
	return -EINVAL;
}

const char *format_duration(uint64_t ns, char *buf, size_t len)
{
	if (ns && ns % (3600 * NSEC_PER_SEC) == 0)
		snprintf(buf, len, "%lluh", (unsigned long long)(ns / (3600 * NSEC_PER_SEC)));
	else if (ns && ns % (60 * NSEC_PER_SEC) == 0)
		snprintf(buf, len, "%llum", (unsigned long long)(ns / (60 * NSEC_PER_SEC)));
	else if (ns % NSEC_PER_SEC == 0)
		snprintf(buf, len, "%llus", (unsigned long long)(ns / NSEC_PER_SEC));
	else if (ns % NSEC_PER_MSEC == 0)
		snprintf(buf, len, "%llums", (unsigned long long)(ns / NSEC_PER_MSEC));
	else if (ns % NSEC_PER_USEC == 0)
		snprintf(buf, len, "%lluus", (unsigned long long)(ns / NSEC_PER_USEC));
	else
		snprintf(buf, len, "%lluns", (unsigned long long)ns);
	return buf;
}
