// SPDX-License-Identifier: GPL-2.0-only
/*
 * Log lines go to stderr. Under systemd (JOURNAL_STREAM set) each line carries a
 * "<N>" priority prefix, which journald turns into the entry's priority.
 *
 * Rate limit: a message format (the fmt pointer: one call site, or several sharing a
 * literal) printed LOG_RATELIMIT_BURST times within LOG_RATELIMIT_INTERVAL_NS is quiet
 * for the rest of that interval, so a fault that repeats on every event (a full disk, a
 * hostile client) cannot flood the journal. What was held back is never silent: the
 * first line after the interval (of any format), or exit, says "N similar messages
 * suppressed" with the last of them. Debug messages (-v, asked for) are not limited.
 *
 * Control bytes in a message (a thread name or a client's glob with a newline in it)
 * are written as \xNN: a message is one line, at the priority it was logged with.
 */
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "escape.h"
#include "log.h"

#define LOG_RATELIMIT_SLOTS 64
#define LOG_LINE_MAX 1024
#define LOG_LAST_MAX 160

struct ratelimit {
	const char *fmt;   /* NULL: a free slot */
	uint64_t start_ns; /* of the current interval */
	unsigned int printed, suppressed;
	int level;                /* of the suppressed messages */
	char last[LOG_LAST_MAX]; /* the last suppressed message, cut short */
};

static const char *log_ident = "hostprofd";
static int log_max_level = LOG_INFO;
static int log_prefix_priority;
static struct ratelimit slots[LOG_RATELIMIT_SLOTS];
static uint64_t (*log_clock)(void);

static uint64_t monotonic_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

static uint64_t now_ns(void)
{
	return log_clock ? log_clock() : monotonic_ns();
}

static void write_line(int level, const char *msg)
{
	if (log_prefix_priority)
		fprintf(stderr, "<%d>%s\n", level, msg);
	else
		fprintf(stderr, "%s: %s\n", log_ident, msg);
}

/* Says what a slot held back, and forgets it. */
static void flush_slot(struct ratelimit *rl)
{
	char line[LOG_LINE_MAX];

	if (!rl->suppressed)
		return;
	snprintf(line, sizeof(line), "%u similar messages suppressed, the last: %s", rl->suppressed, rl->last);
	write_line(rl->level, line);
	rl->suppressed = 0;
}

/* Reports every interval that ended with messages held back. */
static void flush_expired(uint64_t now)
{
	for (size_t i = 0; i < LOG_RATELIMIT_SLOTS; i++)
		if (slots[i].fmt && slots[i].suppressed && now - slots[i].start_ns >= LOG_RATELIMIT_INTERVAL_NS)
			flush_slot(&slots[i]);
}

static void flush_all(void)
{
	for (size_t i = 0; i < LOG_RATELIMIT_SLOTS; i++)
		flush_slot(&slots[i]);
}

/* The slot of fmt: its own, else a free one, else the one whose interval began first. */
static struct ratelimit *slot_of(const char *fmt, uint64_t now)
{
	struct ratelimit *pick = NULL;

	for (size_t i = 0; i < LOG_RATELIMIT_SLOTS; i++)
		if (slots[i].fmt == fmt)
			return &slots[i];
	for (size_t i = 0; i < LOG_RATELIMIT_SLOTS && (!pick || pick->fmt); i++)
		if (!pick || !slots[i].fmt || slots[i].start_ns < pick->start_ns)
			pick = &slots[i];
	flush_slot(pick);
	*pick = (struct ratelimit){ .fmt = fmt, .start_ns = now };
	return pick;
}

/* true: print the message; false: it is one too many in this interval. */
static bool ratelimit_pass(int level, const char *fmt, const char *msg, uint64_t now)
{
	struct ratelimit *rl = slot_of(fmt, now);
	size_t n;

	if (now - rl->start_ns >= LOG_RATELIMIT_INTERVAL_NS) {
		rl->start_ns = now;
		rl->printed = 0;
	}
	if (rl->printed < LOG_RATELIMIT_BURST) {
		rl->printed++;
		return true;
	}
	rl->suppressed++;
	rl->level = level;
	n = strnlen(msg, sizeof(rl->last) - 1);
	memcpy(rl->last, msg, n);
	rl->last[n] = 0;
	return false;
}

void log_open(const char *ident)
{
	static bool registered;

	log_ident = ident;
	log_prefix_priority = getenv("JOURNAL_STREAM") != NULL;
	memset(slots, 0, sizeof(slots));
	if (!registered)
		registered = atexit(flush_all) == 0;
}

void log_set_max_level(int level)
{
	log_max_level = level;
}

void log_set_clock(uint64_t (*clock_ns)(void))
{
	log_clock = clock_ns;
}

int log_internal(int level, int error, const char *fmt, ...)
{
	int saved = errno;
	char raw[LOG_LINE_MAX], msg[LOG_LINE_MAX];
	uint64_t now;
	va_list ap;

	if (level > log_max_level)
		return error;
	if (error)
		errno = error < 0 ? -error : error;
	va_start(ap, fmt);
	vsnprintf(raw, sizeof(raw), fmt, ap);
	va_end(ap);
	/* names and patterns from processes and clients: one line each, no terminal codes */
	escape_control(raw, msg, sizeof(msg));
	if (level < LOG_DEBUG) {
		now = now_ns();
		flush_expired(now);
		if (!ratelimit_pass(level, fmt, msg, now)) {
			errno = saved;
			return error;
		}
	}
	write_line(level, msg);
	errno = saved;
	return error;
}
