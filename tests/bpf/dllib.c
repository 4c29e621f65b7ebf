// SPDX-License-Identifier: GPL-2.0-only
/*
 * The library tests/bpf/dlchild dlopens: one function that blocks in a syscall it makes
 * itself, so the user stack of that off-CPU interval starts inside it.
 */
#include <stdint.h>
#include <sys/syscall.h>
#include <time.h>

__attribute__((noinline, used)) long hpdl_blocking_call(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
	long ret;

#if defined(__x86_64__)
	__asm__ volatile("syscall" : "=a"(ret) : "0"(SYS_nanosleep), "D"(&ts), "S"(0L) : "rcx", "r11", "memory");
#elif defined(__aarch64__)
	register long x8 __asm__("x8") = SYS_nanosleep;
	register long x0 __asm__("x0") = (long)&ts;
	register long x1 __asm__("x1") = 0;

	__asm__ volatile("svc 0" : "+r"(x0) : "r"(x8), "r"(x1) : "memory");
	ret = x0;
#else
#error "unsupported architecture"
#endif
	return ret;
}
