// SPDX-License-Identifier: GPL-2.0-only
/*
 * fuzz-config: the bytes are hostprofd's config file. They are written to a temporary
 * file and loaded as `hostprofd --config FILE` loads them (settings_load() of
 * daemon/settings.c, libinih underneath); what loads is checked against the limits the
 * settings promise, then freed. The parser's complaints go to stderr, which is
 * /dev/null here.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "glob.h"
#include "hostprof.h"
#include "settings.h"

#define CHECK(cond)                                                                          \
	do {                                                                                 \
		if (!(cond)) {                                                               \
			fprintf(report, "fuzz-config: %s:%d: check failed: %s\n", __FILE__, \
				__LINE__, #cond);                                           \
			abort();                                                             \
		}                                                                            \
	} while (0)

static FILE *report; /* the real stderr, for CHECK */
static char path[] = "/tmp/hostprof-fuzz-config.XXXXXX";
static int fd = -1;

static void remove_tmp(void)
{
	unlink(path);
}

/*
 * settings.c complains with fprintf(stderr), and so does getopt: point the stdio stream
 * stderr at /dev/null. File descriptor 2 stays open, for the sanitizers' reports, and
 * libFuzzer prints through its own copy of the old FILE pointer.
 */
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	FILE *null = fopen("/dev/null", "we");

	fd = mkstemp(path);
	if (fd < 0 || !null) {
		perror("fuzz-config");
		exit(1);
	}
	atexit(remove_tmp);
	report = stderr;
	stderr = null;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *argv[] = { "hostprofd", "--config", path, NULL };
	struct settings s;

	if (ftruncate(fd, 0) < 0 || pwrite(fd, data, size, 0) != (ssize_t)size)
		abort();
	if (settings_load(3, argv, &s) != 0)
		return 0;
	CHECK(s.socket && s.socket[0] == '/');
	CHECK(s.n_watch_threads <= HP_MAX_GLOBS);
	for (size_t i = 0; i < s.n_watch_threads; i++)
		CHECK(thread_glob_valid(s.watch_threads[i]));
	for (size_t i = 0; i < s.n_pids; i++)
		CHECK(s.pids[i] > 0 && s.pids[i] <= INT32_MAX);
	CHECK(s.ring_kb >= 4 && s.ring_kb <= (1u << 20) && !(s.ring_kb & (s.ring_kb - 1)));
	CHECK(s.window_ns >= 1000000000ull && s.window_ns <= 3600 * 1000000000ull);
	CHECK(s.buffer_mb >= 1 && s.buffer_mb <= (1u << 20));
	CHECK(s.memory_mb >= 1 && s.memory_mb <= (1u << 20));
	CHECK(s.sample_hz <= 10000);
	settings_free(&s);
	return 0;
}
