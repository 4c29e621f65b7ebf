/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The daemon's log. Only the top layer logs; helpers return -errno.
 * log_error_errno(r, ...) logs with %m meaning strerror(-r) and returns r.
 */
#ifndef HOSTPROF_LOG_H
#define HOSTPROF_LOG_H

#include <errno.h>
#include <syslog.h>

void log_open(const char *ident);
void log_set_max_level(int level);
int log_internal(int level, int error, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#define log_error(...) log_internal(LOG_ERR, 0, __VA_ARGS__)
#define log_warning(...) log_internal(LOG_WARNING, 0, __VA_ARGS__)
#define log_notice(...) log_internal(LOG_NOTICE, 0, __VA_ARGS__)
#define log_info(...) log_internal(LOG_INFO, 0, __VA_ARGS__)
#define log_debug(...) log_internal(LOG_DEBUG, 0, __VA_ARGS__)
#define log_error_errno(r, ...) log_internal(LOG_ERR, (r), __VA_ARGS__)
#define log_warning_errno(r, ...) log_internal(LOG_WARNING, (r), __VA_ARGS__)

#endif
