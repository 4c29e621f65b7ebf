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
 * under libc's frames. `chain turns`: middle calls turns instead, which blocks 2 ms at a
 * time by turns in nap (nanosleep) and in doze (poll, from a deeper frame): a thread that
 * blocks from two places by turns.
 */
#include <poll.h>
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

static int block, turns_mode;

__attribute__((noinline)) unsigned long sleeper(unsigned long x)
{
	struct timespec ts = { 0, 2000000 };

	while (!stop) {
		nanosleep(&ts, NULL);
		x++;
	}
	return x;
}

__attribute__((noinline)) unsigned long nap(unsigned long x)
{
	struct timespec ts = { 0, 2000000 };

	nanosleep(&ts, NULL);
	return x + 1;
}

__attribute__((noinline)) unsigned long doze(unsigned long x)
{
	char buf[256]; /* a deeper stack pointer than nap's */

	for (unsigned i = 0; i < sizeof(buf); i++)
		buf[i] = (char)(x >> (i % 8));
	poll(NULL, 0, 2);
	sink = buf[x % sizeof(buf)];
	return x + 1;
}

__attribute__((noinline)) unsigned long turns(unsigned long x)
{
	while (!stop) {
		x = nap(x);
		x = doze(x);
	}
	return x;
}

__attribute__((noinline)) unsigned long middle(unsigned long x)
{
	char buf[64]; /* a frame of its own */

	for (unsigned i = 0; i < sizeof(buf); i++)
		buf[i] = (char)(x >> (i % 8));
	sink = buf[x % sizeof(buf)];
	x = turns_mode ? turns(x + sink) : block ? sleeper(x + sink) : leaf(x + sink);
	return x ^ sink; /* work after the call: no tail call */
}

int main(int argc, char **argv)
{
	block = argc > 1 && !strcmp(argv[1], "block");
	turns_mode = argc > 1 && !strcmp(argv[1], "turns");
	printf("ready\n");
	fflush(stdout);
	sink = middle((unsigned long)getpid());
	return (int)(sink & 1);
}
