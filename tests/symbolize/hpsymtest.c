// SPDX-License-Identifier: GPL-2.0-only
/* The shared library of the symbolizer tests' child: one function with a known name. */
#include <stdint.h>

__attribute__((noinline, used)) uint64_t hpsym_lib_target(uint64_t x)
{
	volatile uint64_t acc = x;

	for (int i = 0; i < 16; i++)
		acc = acc * 31 + i;
	return acc;
}
