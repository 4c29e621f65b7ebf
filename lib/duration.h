/* SPDX-License-Identifier: GPL-2.0-only */
#ifndef HOSTPROF_DURATION_H
#define HOSTPROF_DURATION_H

#include <stdint.h>
#include <stddef.h>

/* "500ms", "5s", "2m", "1h", "250us", "100ns"; a bare number is seconds. */
int parse_duration(const char *s, uint64_t *ret_ns);
/* Shortest exact form: "1500ms", "30s", "2m". */
const char *format_duration(uint64_t ns, char *buf, size_t len);
/* A non-negative integer with no trailing garbage, at most max. */
int parse_uint(const char *s, uint64_t max, uint64_t *ret);

#endif
