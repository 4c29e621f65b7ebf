/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The daemon's log. Only the top layer logs; helpers return -errno.
 * log_error_errno(r, ...) logs with %m meaning strerror(-r) and returns r.
 *
 * Rate limited per message format: after LOG_RATELIMIT_BURST lines of one format within
 * LOG_RATELIMIT_INTERVAL_NS the rest of that interval is held back, and a later line
 * says "N similar messages suppressed". LOG_DEBUG is never held back.
 */
#ifndef HOSTPROF_LOG_H
#define HOSTPROF_LOG_H

#include <errno.h>
#include <stdint.h>
#include <syslog.h>

#define LOG_RATELIMIT_BURST 10
#define LOG_RATELIMIT_INTERVAL_NS (10 * 1000000000ULL)

/* Also forgets what the rate limit counted. */
void log_open(const char *ident);
void log_set_max_level(int level);
/* For tests: the clock of the rate limit (CLOCK_MONOTONIC ns); NULL restores it. */
void log_set_clock(uint64_t (*clock_ns)(void));
int log_internal(int level, int error, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#define log_error(...) log_internal(LOG_ERR, 0, __VA_ARGS__)
#define log_warning(...) log_internal(LOG_WARNING, 0, __VA_ARGS__)
#define log_notice(...) log_internal(LOG_NOTICE, 0, __VA_ARGS__)
#define log_info(...) log_internal(LOG_INFO, 0, __VA_ARGS__)
#define log_debug(...) log_internal(LOG_DEBUG, 0, __VA_ARGS__)
#define log_error_errno(r, ...) log_internal(LOG_ERR, (r), __VA_ARGS__)
#define log_warning_errno(r, ...) log_internal(LOG_WARNING, (r), __VA_ARGS__)

#endif
