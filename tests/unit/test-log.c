// SPDX-License-Identifier: GPL-2.0-only
/*
 * daemon/log.c: the line format (plain and journald "<N>" prefixes), %m and the return
 * value of log_*_errno, and the rate limit: 10 lines of one format per 10 s, then
 * "N similar messages suppressed" once the interval is over (or at the next line of any
 * format, or at exit).
 *
 * stderr is captured by pointing fd 2 at a memfd and reading it back; the rate limit's
 * clock is a variable the test moves (log_set_clock), so nothing sleeps.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "log.h"

static uint64_t fake_now;
static int saved_stderr = -1;
static int capture_fd = -1;

static uint64_t fake_clock(void)
{
	return fake_now;
}

/* From here on, what goes to stderr is kept for captured(). */
static void capture_start(void)
{
	fflush(stderr);
	capture_fd = memfd_create("stderr", MFD_CLOEXEC);
	if (capture_fd < 0 || (saved_stderr < 0 && (saved_stderr = dup(2)) < 0) || dup2(capture_fd, 2) < 0) {
		perror("test-log: cannot capture stderr");
		exit(1);
	}
}

/* Puts stderr back and returns what was written to it (static buffer). */
static const char *capture_end(void)
{
	static char buf[1 << 16];
	ssize_t n;

	fflush(stderr);
	dup2(saved_stderr, 2);
	n = pread(capture_fd, buf, sizeof(buf) - 1, 0);
	buf[n > 0 ? n : 0] = 0;
	close(capture_fd);
	capture_fd = -1;
	return buf;
}

static unsigned count_substr(const char *s, const char *what)
{
	unsigned n = 0;

	for (const char *p = strstr(s, what); p; p = strstr(p + 1, what))
		n++;
	return n;
}

static unsigned count_lines(const char *s)
{
	return count_substr(s, "\n");
}

static void reset(bool journal)
{
	if (journal)
		setenv("JOURNAL_STREAM", "8:1234", 1);
	else
		unsetenv("JOURNAL_STREAM");
	log_open("hostprofd");
	log_set_max_level(LOG_INFO);
	fake_now = 1000;
}

static void test_format(void)
{
	const char *out;
	int r;

	reset(false);
	capture_start();
	errno = EAGAIN;
	r = log_error_errno(-EIO, "Failed to read %s: %m", "x");
	CHECK_EQ_INT(r, -EIO);
	CHECK_EQ_INT(errno, EAGAIN); /* the caller's errno survives */
	log_info("plain %d", 7);
	log_debug("not shown at LOG_INFO");
	out = capture_end();
	CHECKF(!strcmp(out, "hostprofd: Failed to read x: Input/output error\nhostprofd: plain 7\n"), "got [%s]",
	       out);

	reset(true);
	capture_start();
	log_error("e");
	log_warning("w");
	log_info("i");
	out = capture_end();
	CHECKF(!strcmp(out, "<3>e\n<4>w\n<6>i\n"), "journal prefixes: got [%s]", out);
}

static void test_burst(void)
{
	const char *out;

	reset(false);
	capture_start();
	for (int i = 0; i < 25; i++)
		log_error("Failed to drain the ring buffers: attempt %d", i);
	out = capture_end();
	CHECK_EQ_INT(count_lines(out), LOG_RATELIMIT_BURST);
	CHECK(strstr(out, "attempt 9\n") && !strstr(out, "attempt 10\n"));
	CHECK(!strstr(out, "suppressed"));

	/* still inside the interval: still quiet */
	fake_now += LOG_RATELIMIT_INTERVAL_NS - 1;
	capture_start();
	log_error("Failed to drain the ring buffers: attempt %d", 25);
	out = capture_end();
	CHECKF(!strcmp(out, ""), "got [%s]", out);

	/* the next interval: first the count, with the last one held back, then the line */
	fake_now += 1;
	capture_start();
	log_error("Failed to drain the ring buffers: attempt %d", 26);
	out = capture_end();
	CHECKF(!strcmp(out, "hostprofd: 16 similar messages suppressed, the last: Failed to drain the ring "
			    "buffers: attempt 25\nhostprofd: Failed to drain the ring buffers: attempt 26\n"),
	       "got [%s]", out);

	/* and a fresh burst of 10 */
	capture_start();
	for (int i = 0; i < 20; i++)
		log_error("Failed to drain the ring buffers: attempt %d", i);
	out = capture_end();
	CHECK_EQ_INT(count_lines(out), LOG_RATELIMIT_BURST - 1);
}

/* The count comes at the next line of another format too, with the held-back level. */
static void test_flush_by_other(void)
{
	const char *out;

	reset(true);
	capture_start();
	for (int i = 0; i < 12; i++)
		log_warning("client %d refused", i);
	fake_now += LOG_RATELIMIT_INTERVAL_NS;
	log_info("something else");
	out = capture_end();
	CHECK_EQ_INT(count_substr(out, "<4>client"), LOG_RATELIMIT_BURST);
	CHECKF(strstr(out, "<4>2 similar messages suppressed, the last: client 11 refused\n<6>something else\n"),
	       "got [%s]", out);
}

/* Formats are counted apart: 10 of each pass. */
static void test_per_format(void)
{
	const char *out;

	reset(false);
	capture_start();
	for (int i = 0; i < LOG_RATELIMIT_BURST; i++) {
		log_error("a %d", i);
		log_error("b %d", i);
	}
	out = capture_end();
	CHECK_EQ_INT(count_lines(out), 2 * LOG_RATELIMIT_BURST);
	CHECK(!strstr(out, "suppressed"));
}

/* More formats than slots: none is lost, and what an evicted slot held back is told. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
#pragma GCC diagnostic ignored "-Wformat-security"
static void test_many_formats(void)
{
	static char fmts[200][16];
	const char *out;

	reset(false);
	for (int i = 0; i < 200; i++)
		snprintf(fmts[i], sizeof(fmts[i]), "format %d", i);
	capture_start();
	for (int i = 0; i < 12; i++)
		log_error(fmts[0]); /* 2 held back in slot 0 */
	for (int i = 1; i < 200; i++) {
		fake_now++;
		log_error(fmts[i]);
	}
	out = capture_end();
	CHECK_EQ_INT(count_lines(out), 10 + 199 + 1);
	CHECK(strstr(out, "2 similar messages suppressed, the last: format 0\n"));
}
#pragma GCC diagnostic pop

static void test_debug_unlimited(void)
{
	const char *out;

	reset(false);
	log_set_max_level(LOG_DEBUG);
	capture_start();
	for (int i = 0; i < 50; i++)
		log_debug("debug %d", i);
	out = capture_end();
	CHECK_EQ_INT(count_lines(out), 50);
}

/* What is held back at exit is told at exit. */
static void test_exit(void)
{
	const char *out;
	pid_t pid;
	int status;

	reset(false);
	capture_start();
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		for (int i = 0; i < 15; i++)
			log_error("at exit %d", i);
		exit(0);
	}
	waitpid(pid, &status, 0);
	out = capture_end();
	CHECKF(strstr(out, "hostprofd: 5 similar messages suppressed, the last: at exit 14\n"), "got [%s]", out);
}

/* A glob or a thread name with a newline cannot forge a line, nor send terminal codes. */
static void test_escape(void)
{
	const char *out;

	reset(true);
	capture_start();
	log_info("watching processes with a thread named %s", "x\n<0>hostprofd: root login\033[2J");
	out = capture_end();
	CHECKF(!strcmp(out, "<6>watching processes with a thread named x\\x0a<0>hostprofd: root login\\x1b[2J\n"),
	       "got [%s]", out);
	CHECK_EQ_INT(count_lines(out), 1);
}

int main(void)
{
	log_set_clock(fake_clock);
	test_format();
	test_burst();
	test_flush_by_other();
	test_per_format();
	test_many_formats();
	test_debug_unlimited();
	test_escape();
	test_exit();
	return check_summary();
}
