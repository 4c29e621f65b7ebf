/* SPDX-License-Identifier: GPL-2.0-only */
/* Wall-clock instants as people and other nodes write them (`hostprofctl snapshot --at`). */
#ifndef HOSTPROF_WALLTIME_H
#define HOSTPROF_WALLTIME_H

#include <stddef.h>
#include <stdint.h>

/*
 * RFC 3339 ("2026-12-01T11:30:00Z", "2026-12-01T11:30:00.250+08:00", "2026-12-01 11:30:00Z";
 * the offset is required) or seconds since the epoch ("1764588600", "1764588600.25"), into
 * ns since the epoch (CLOCK_REALTIME). -EINVAL for anything else.
 */
int parse_wall_time(const char *s, uint64_t *ret_ns);
/* "2026-12-01T11:30:00.250Z" */
const char *format_wall_time(uint64_t ns, char *buf, size_t len);
/* "2026-12-01T11:30:00.250123Z": to the microsecond (cross-node comparisons) */
const char *format_wall_time_us(uint64_t ns, char *buf, size_t len);

#endif
