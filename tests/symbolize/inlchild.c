// SPDX-License-Identifier: GPL-2.0-only
/*
 * The process the DWARF tests look at: built -O2 -g (and frame pointers), with a call
 * chain in which two functions are inlined: inl_outer (a real function) inlines inl_mid,
 * which inlines inl_leaf. inl_leaf calls inl_probe, which notes its return address: an
 * address inside inl_leaf's inlined code. It prints, one "name=VALUE" a line, then "ready":
 *   ret         that return address (hex)
 *   leafline    the line of inl_leaf's call of inl_probe
 *   midline     the line of inl_mid's call of inl_leaf
 *   outerline   the line of inl_outer's call of inl_mid
 *   outer       inl_outer's address (hex)
 * With "spin": then runs inl_outer in a loop (for on-CPU samples in inlined code).
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static volatile uintptr_t probe_ret;
static volatile uint64_t sink;
static int leaf_line, mid_line, outer_line;

__attribute__((noinline)) void inl_probe(void)
{
	probe_ret = (uintptr_t)__builtin_return_address(0);
	__asm__ volatile("" ::: "memory");
}

static inline __attribute__((always_inline)) uint64_t inl_leaf(uint64_t x)
{
	for (int i = 0; i < 2000; i++)
		sink = sink * 31 + x + i;
	leaf_line = __LINE__ + 1;
	inl_probe();
	return sink;
}

static inline __attribute__((always_inline)) uint64_t inl_mid(uint64_t x)
{
	mid_line = __LINE__ + 1;
	uint64_t v = inl_leaf(x + 1);

	return v ^ x;
}

__attribute__((noinline)) uint64_t inl_outer(uint64_t x)
{
	outer_line = __LINE__ + 1;
	uint64_t v = inl_mid(x * 3);

	return v + 1;
}

int main(int argc, char **argv)
{
	uint64_t (*volatile outer)(uint64_t) = inl_outer;

	outer(1);
	printf("ret=0x%lx\n", (unsigned long)probe_ret);
	printf("leafline=%d\nmidline=%d\nouterline=%d\n", leaf_line, mid_line, outer_line);
	printf("outer=0x%lx\n", (unsigned long)(uintptr_t)inl_outer);
	printf("ready\n");
	fflush(stdout);
	if (argc > 1 && !strcmp(argv[1], "spin"))
		for (uint64_t i = 0;; i++)
			outer(i);
	for (;;)
		pause();
}
