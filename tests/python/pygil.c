// SPDX-License-Identifier: GPL-2.0-only
/*
 * pygil PID [SAMPLES [INTERVAL_US]]: daemon/python/gil.c on its own. Prints where PID's GIL is
 * ("gil START END holder HOLDER_ADDR"), or why there is none ("no gil: ..."), then samples its
 * holder SAMPLES times INTERVAL_US apart, the way the kernel side reads it at a wait's end
 * (last_holder -> thread state -> native tid), and prints "holder TID COUNT" per tid seen
 * (0: not held). Exit 0 whatever it found, 1 on an error of its own.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "python.h"

#define TIDS_MAX 64

int main(int argc, char **argv)
{
	struct {
		uint32_t tid;
		unsigned n;
	} seen[TIDS_MAX] = {};
	unsigned samples = argc > 2 ? strtoul(argv[2], NULL, 10) : 0;
	unsigned interval = argc > 3 ? strtoul(argv[3], NULL, 10) : 1000;
	unsigned n_seen = 0, failed = 0;
	bool free_threaded;
	struct py_proc *p;
	struct py_gil g;
	const char *why;
	int r;

	if (argc < 2) {
		fprintf(stderr, "usage: pygil PID [SAMPLES [INTERVAL_US]]\n");
		return 1;
	}
	p = py_proc_open(strtoul(argv[1], NULL, 10));
	if (!p) {
		fprintf(stderr, "pygil: %s\n", strerror(errno));
		return 1;
	}
	r = py_proc_gil(p, &g, &free_threaded);
	if (r < 0) {
		py_proc_kind(p, &why);
		printf("no gil: %s%s%s\n", free_threaded ? "free-threaded" : strerror(-r), *why ? ": " : "", why);
		py_proc_free(p);
		return 0;
	}
	printf("gil %#llx %#llx holder %#llx\n", (unsigned long long)g.start, (unsigned long long)g.end,
	       (unsigned long long)g.holder);
	for (unsigned i = 0; i < samples; i++) {
		uint32_t tid;
		unsigned j;

		int e = py_proc_gil_holder(p, &g, &tid);

		if (e < 0) {
			if (!failed++ && getenv("PYGIL_DEBUG"))
				fprintf(stderr, "pygil: %s\n", strerror(-e));
		} else {
			for (j = 0; j < n_seen && seen[j].tid != tid; j++)
				;
			if (j == n_seen && n_seen < TIDS_MAX)
				seen[n_seen++].tid = tid;
			if (j < n_seen)
				seen[j].n++;
		}
		usleep(interval);
	}
	for (unsigned j = 0; j < n_seen; j++)
		printf("holder %u %u\n", seen[j].tid, seen[j].n);
	if (failed)
		printf("failed %u\n", failed);
	py_proc_free(p);
	return 0;
}
