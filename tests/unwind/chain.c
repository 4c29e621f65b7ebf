// SPDX-License-Identifier: GPL-2.0-only
/*
 * A known call chain for the unwinder's tests: main -> middle -> leaf, leaf spinning in a
 * loop that never ends (a volatile flag nothing sets), so that a stop finds the thread in
 * leaf with middle and main below it. Built twice (tests/meson.build): -O2
 * -fomit-frame-pointer (no frame pointers at all: only CFI unwinds it), and -O2
 * -fno-omit-frame-pointer -momit-leaf-frame-pointer (frame pointers, but leaf sets up no
 * frame: a frame-pointer walk from leaf skips middle). Prints "ready" once it spins.
 * `chain block`: middle calls sleeper instead, which sleeps 2 ms at a time in nanosleep
 * (glibc's, without frame pointers): off-CPU intervals with main -> middle -> sleeper
 * under libc's frames.
 */
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static volatile int stop;
static volatile unsigned long sink;

__attribute__((noinline)) unsigned long leaf(unsigned long x)
{
	while (!stop)
		x = x * 6364136223846793005ul + 1442695040888963407ul;
	return x;
}

static int block;

__attribute__((noinline)) unsigned long sleeper(unsigned long x)
{
	struct timespec ts = { 0, 2000000 };

	while (!stop) {
		nanosleep(&ts, NULL);
		x++;
	}
	return x;
}

__attribute__((noinline)) unsigned long middle(unsigned long x)
{
	char buf[64]; /* a frame of its own */

	for (unsigned i = 0; i < sizeof(buf); i++)
		buf[i] = (char)(x >> (i % 8));
	sink = buf[x % sizeof(buf)];
	x = block ? sleeper(x + sink) : leaf(x + sink);
	return x ^ sink; /* work after the call: no tail call */
}

int main(int argc, char **argv)
{
	block = argc > 1 && !strcmp(argv[1], "block");
	printf("ready\n");
	fflush(stdout);
	sink = middle((unsigned long)getpid());
	return (int)(sink & 1);
}
