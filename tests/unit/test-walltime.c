// SPDX-License-Identifier: GPL-2.0-only
/* lib/walltime.c: RFC 3339 with its offset, or epoch seconds; everything else refused. */
#include <errno.h>
#include <string.h>

#include "check.h"
#include "walltime.h"

static uint64_t at(const char *s)
{
	uint64_t ns = 0;
	int r = parse_wall_time(s, &ns);

	CHECKF(r == 0, "'%s': %d", s, r);
	return ns;
}

int main(void)
{
	const uint64_t t = 1764588600ULL * 1000000000ULL; /* 2025-12-01T11:30:00Z */
	char buf[64];
	uint64_t ns;

	CHECK_EQ_U64(at("2025-12-01T11:30:00Z"), t);
	CHECK_EQ_U64(at("2025-12-01 11:30:00z"), t);
	CHECK_EQ_U64(at("2025-12-01T11:30:00.250Z"), t + 250000000);
	CHECK_EQ_U64(at("2025-12-01T19:30:00+08:00"), t);
	CHECK_EQ_U64(at("2025-12-01T06:00:00.5-05:30"), t + 500000000);
	CHECK_EQ_U64(at("1764588600"), t);
	CHECK_EQ_U64(at("1764588600.000000001"), t + 1);
	static const char *const bad[] = { "", "yesterday", "2025-12-01T11:30:00", "2025-12-01", "2025-12-01T11:30Z",
					   "2025-12-01T11:30:00+8", "1764588600s", "1.2.3", "-5", "2025-13-01T00:00:00Z",
					   "99999999999999999999" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++)
		CHECKF(parse_wall_time(bad[i], &ns) == -EINVAL, "'%s' accepted", bad[i]);
	CHECK(!strcmp(format_wall_time(t + 250000000, buf, sizeof(buf)), "2025-12-01T11:30:00.250Z"));
	return check_summary();
}
