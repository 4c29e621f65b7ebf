// SPDX-License-Identifier: GPL-2.0-only
/*
 * A workload for tests/e2e/syscalls.sh, started before it is watched; it prints its pid
 * and waits for a line on stdin, then:
 *   dlchild dlopen LIB MS   dlopens LIB (tests/bpf/dllib.c), blocks MS ms inside its
 *                           hpdl_blocking_call, and exits: a library mapped after the
 *                           watch began, which must still resolve after the exit
 *   dlchild busy MS         reads /dev/zero into a buffer already faulted in, 64 MiB a
 *                           call, for MS ms: syscalls that never sleep
 */
#include <dlfcn.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define BUSY_BYTES (64u << 20)

static long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int main(int argc, char **argv)
{
	char line[16];

	bool dl = argc > 1 && !strcmp(argv[1], "dlopen");

	if (argc < 3 || (!dl && strcmp(argv[1], "busy")) || (dl && argc < 4)) {
		fprintf(stderr, "usage: dlchild dlopen LIB MS | dlchild busy MS\n");
		return 2;
	}
	printf("pid %d\n", getpid());
	fflush(stdout);
	if (!fgets(line, sizeof(line), stdin))
		return 1;
	if (dl) {
		void *lib = dlopen(argv[2], RTLD_NOW);
		long (*call)(long);

		if (!lib) {
			fprintf(stderr, "dlchild: %s\n", dlerror());
			return 1;
		}
		call = (long (*)(long))dlsym(lib, "hpdl_blocking_call");
		if (!call)
			return 1;
		printf("called %ld\n", call(atol(argv[3])));
	} else {
		char *buf = malloc(BUSY_BYTES);
		long end = now_ms() + atol(argv[2]), calls = 0;
		int fd = open("/dev/zero", O_RDONLY | O_CLOEXEC);

		if (!buf || fd < 0)
			return 1;
		memset(buf, 1, BUSY_BYTES);
		while (now_ms() < end) {
			if (read(fd, buf, BUSY_BYTES) != (ssize_t)BUSY_BYTES)
				return 1;
			calls++;
		}
		printf("reads %ld\n", calls);
		close(fd);
		free(buf); /* LeakSanitizer, in the sanitizer pass, fails an exit that leaks it */
	}
	fflush(stdout);
	return 0;
}
