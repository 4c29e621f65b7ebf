// SPDX-License-Identifier: GPL-2.0-only
/*
 * The process the symbolizer tests look at. It prints the addresses of functions with known
 * names, one "name=0xADDR" a line, then "ready", and waits to be killed:
 *   main     hpsym_main_target, in this PIE executable (global)
 *   static   hpsym_static_target, in this executable (local symbol, .symtab only)
 *   lib      hpsym_lib_target, in libhpsymtest.so
 *   libc     getpid, in libc
 *   vdso     __vdso_clock_gettime, in the vDSO (0 when it cannot be found)
 * With "jit": also maps an anonymous executable page and writes /tmp/perf-PID.map naming
 * two functions in it ("jit" is the page's address, jit_one at +0, jit_two at +0x40); on
 * SIGUSR1 it appends jit_three at +0x80 and prints "appended".
 */
#include <dlfcn.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

uint64_t hpsym_lib_target(uint64_t x);

__attribute__((noinline, used)) uint64_t hpsym_main_target(uint64_t x)
{
	volatile uint64_t acc = x;

	for (int i = 0; i < 16; i++)
		acc = acc * 33 + i;
	return acc + hpsym_lib_target(x);
}

__attribute__((noinline, used)) static uint64_t hpsym_static_target(uint64_t x)
{
	volatile uint64_t acc = x;

	for (int i = 0; i < 16; i++)
		acc = acc * 37 + i;
	return acc;
}

static volatile sig_atomic_t append_requested;

static void on_usr1(int sig)
{
	append_requested = 1;
}

static void *vdso_function(void)
{
	void *h = dlopen("linux-vdso.so.1", RTLD_NOW | RTLD_NOLOAD);
	void *fn;

	if (!h)
		return NULL;
	fn = dlsym(h, "__vdso_clock_gettime");
	dlclose(h);
	return fn;
}

int main(int argc, char **argv)
{
	uint64_t (*volatile s)(uint64_t) = hpsym_static_target;
	char path[64];
	uint8_t *jit = NULL;
	FILE *f;

	signal(SIGUSR1, on_usr1);
	printf("main=%p\n", (void *)hpsym_main_target);
	printf("static=%p\n", (void *)s);
	printf("lib=%p\n", (void *)hpsym_lib_target);
	printf("libc=%p\n", (void *)getpid);
	printf("vdso=%p\n", vdso_function());
	snprintf(path, sizeof(path), "/tmp/perf-%d.map", getpid());
	if (argc > 1 && !strcmp(argv[1], "jit")) {
		jit = mmap(NULL, 4096, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1,
			   0);
		if (jit == MAP_FAILED)
			return 2;
		memset(jit, 0xc3, 4096);
		f = fopen(path, "w");
		if (!f)
			return 2;
		fprintf(f, "%lx 40 jit_one\n", (unsigned long)jit);
		fprintf(f, "not a line\n");
		fprintf(f, "%lx 40 jit_two [tier 1]\n", (unsigned long)jit + 0x40);
		fclose(f);
		printf("jit=%p\n", (void *)jit);
	}
	printf("ready\n");
	fflush(stdout);
	for (;;) {
		usleep(10000);
		if (append_requested && jit) {
			append_requested = 0;
			f = fopen(path, "a");
			if (!f)
				return 2;
			fprintf(f, "%lx 40 jit_three\n", (unsigned long)jit + 0x80);
			fclose(f);
			printf("appended\n");
			fflush(stdout);
		}
	}
	return s(0) + hpsym_main_target(0) == 42;
}
