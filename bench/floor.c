// SPDX-License-Identifier: GPL-2.0-only
/*
 * bench/floor OBJECT HOOK... — attach the empty programs of bench/floor.bpf.c on the
 * hooks named (sched_switch, sched_waking, sys_enter, sys_exit), print "floor: attached"
 * and wait for SIGTERM or SIGINT; every link goes with the process.
 */
#include <bpf/libbpf.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static int silent(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	return level == LIBBPF_WARN ? vfprintf(stderr, fmt, ap) : 0;
}

int main(int argc, char **argv)
{
	struct bpf_object *obj;
	struct bpf_program *prog;
	sigset_t set;
	int sig, n = 0;

	if (argc < 3) {
		fprintf(stderr, "usage: floor OBJECT HOOK...\n");
		return 2;
	}
	libbpf_set_print(silent);
	obj = bpf_object__open_file(argv[1], NULL);
	if (!obj) {
		perror("floor: open");
		return 1;
	}
	/* load only the programs asked for */
	bpf_object__for_each_program(prog, obj)
	{
		bool want = false;

		for (int i = 2; i < argc; i++)
			want |= !strcmp(bpf_program__name(prog) + strlen("floor_"), argv[i]);
		bpf_program__set_autoload(prog, want);
		n += want;
	}
	if (n != argc - 2) {
		fprintf(stderr, "floor: unknown hook among the arguments\n");
		return 2;
	}
	if (bpf_object__load(obj)) {
		perror("floor: load");
		return 1;
	}
	bpf_object__for_each_program(prog, obj)
	{
		if (bpf_program__autoload(prog) && !bpf_program__attach(prog)) {
			fprintf(stderr, "floor: cannot attach %s\n", bpf_program__name(prog));
			return 1;
		}
	}
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigprocmask(SIG_BLOCK, &set, NULL);
	printf("floor: attached\n");
	fflush(stdout);
	sigwait(&set, &sig);
	bpf_object__close(obj);
	return 0;
}
