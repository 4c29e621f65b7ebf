// SPDX-License-Identifier: GPL-2.0-only
/*
 * sleeper N MS: waits for a line on stdin, then sleeps MS milliseconds N times in its
 * main thread and exits: exactly N switch-outs in state S after the go. Prints its pid
 * first so a test can watch it before saying go.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 10, ms = argc > 2 ? atoi(argv[2]) : 5;
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
	char line[16];

	printf("%d\n", getpid());
	fflush(stdout);
	if (!fgets(line, sizeof(line), stdin))
		return 1;
	for (int i = 0; i < n; i++)
		nanosleep(&ts, NULL);
	return 0;
}
