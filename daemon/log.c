// SPDX-License-Identifier: GPL-2.0-only
/*
 * Log lines go to stderr. Under systemd (JOURNAL_STREAM set) each line carries a
 * "<N>" priority prefix, which journald turns into the entry's priority.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"

static const char *log_ident = "hostprofd";
static int log_max_level = LOG_INFO;
static int log_prefix_priority;

void log_open(const char *ident)
{
	log_ident = ident;
	log_prefix_priority = getenv("JOURNAL_STREAM") != NULL;
}

void log_set_max_level(int level)
{
	log_max_level = level;
}

int log_internal(int level, int error, const char *fmt, ...)
{
	int saved = errno;
	char msg[1024];
	va_list ap;

	if (level > log_max_level)
		return error;
	if (error)
		errno = error < 0 ? -error : error;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (log_prefix_priority)
		fprintf(stderr, "<%d>%s\n", level, msg);
	else
		fprintf(stderr, "%s: %s\n", log_ident, msg);
	errno = saved;
	return error;
}
