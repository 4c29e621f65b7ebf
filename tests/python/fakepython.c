// SPDX-License-Identifier: GPL-2.0-only
/*
 * fakepython MODE [SECONDS]: a C program that passes for CPython, run as "python3". With
 * -rdynamic it exports what discovery looks for (_PyRuntime, Py_Version, the type objects);
 * built with -DFAKE_PLAIN it exports none of them (a C program merely named python). Modes:
 *   zero     _PyRuntime all zeros: 3.11.7 with no interpreter
 *   garbage  every word of _PyRuntime points somewhere else in it: chains to nowhere
 *   v314     Py_Version says 3.14.0, which no table here describes
 * It prints its pid, then blocks in fake_wait (nanosleep, 5 ms at a time) so that its
 * off-CPU intervals carry a native stack with that name, for SECONDS (default 60).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#ifndef FAKE_PLAIN
#define RUNTIME_WORDS 8192
uint64_t _PyRuntime[RUNTIME_WORDS];
unsigned long Py_Version = 0x030b07f0;
uint64_t PyCode_Type[64], PyUnicode_Type[64], PyBytes_Type[64], PyFrame_Type[64];

static void fake_runtime(const char *mode)
{
	uint64_t x = 88172645463325252ull;

	if (!strcmp(mode, "v314"))
		Py_Version = 0x030e00f0;
	if (strcmp(mode, "garbage"))
		return;
	for (size_t i = 0; i < RUNTIME_WORDS; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		_PyRuntime[i] = (uint64_t)(uintptr_t)&_PyRuntime[x % RUNTIME_WORDS];
	}
}
#else
static void fake_runtime(const char *mode)
{
	(void)mode;
}
#endif

/* libc keeps no frame pointer: a frame between it and fake_wait keeps fake_wait on the stack */
__attribute__((noinline)) static void fake_sleep(void)
{
	struct timespec ts = { 0, 5 * 1000 * 1000 };

	nanosleep(&ts, NULL);
	__asm__ volatile("" ::: "memory"); /* not a tail call */
}

__attribute__((noinline)) static void fake_wait(int seconds)
{
	for (int i = 0; i < seconds * 200; i++)
		fake_sleep();
	__asm__ volatile("" ::: "memory");
}

int main(int argc, char **argv)
{
	fake_runtime(argc > 1 ? argv[1] : "zero");
	printf("%d\n", getpid());
	fflush(stdout);
	fake_wait(argc > 2 ? atoi(argv[2]) : 60);
	return 0;
}
