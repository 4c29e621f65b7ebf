// SPDX-License-Identifier: GPL-2.0-only
/*
 * The C++ process the debug-info tests look at (g++, frame pointers, -g). It prints the
 * addresses of functions whose mangled names are known, one "name=0xADDR" a line, then
 * "ready", and waits to be killed:
 *   kernel   at::native::add_kernel(at::native::Tensor<long> const&, float)
 *            (_ZN2at6native10add_kernelERKNS0_6TensorIlEEf)
 *   release  c10::intrusive_ptr_release(long) (_ZN3c1021intrusive_ptr_releaseEl)
 * With "spin": instead of waiting, it runs c10::intrusive_ptr_release, which calls
 * at::native::add_kernel, in a loop (for on-CPU samples).
 */
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <unistd.h>

namespace at
{
namespace native
{
template <typename T> struct Tensor {
	T v;
};

__attribute__((noinline)) long add_kernel(const Tensor<long> &a, float b)
{
	/* unsigned: it wraps, and UBSan (the sanitizer pass) stays quiet */
	volatile unsigned long acc = (unsigned long)a.v;

	for (int i = 0; i < 1000; i++)
		acc = acc * 33 + (unsigned long)b + (unsigned long)i;
	return (long)acc;
}
} // namespace native
} // namespace at

namespace c10
{
__attribute__((noinline)) long intrusive_ptr_release(long x)
{
	at::native::Tensor<long> t = { x };

	return (long)((unsigned long)at::native::add_kernel(t, 1.5f) + 1);
}
} // namespace c10

int main(int argc, char **argv)
{
	long (*volatile k)(const at::native::Tensor<long> &, float) = at::native::add_kernel;
	long (*volatile r)(long) = c10::intrusive_ptr_release;
	volatile long sink = 0;

	printf("kernel=%p\n", (void *)k);
	printf("release=%p\n", (void *)r);
	printf("ready\n");
	fflush(stdout);
	if (argc > 1 && !strcmp(argv[1], "spin"))
		for (;;)
			sink = (long)((unsigned long)sink + (unsigned long)r(sink));
	for (;;)
		pause();
}
