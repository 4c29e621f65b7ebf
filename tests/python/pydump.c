// SPDX-License-Identifier: GPL-2.0-only
/*
 * pydump PID [--json]: daemon/python/ on its own, as `py-spy dump` would be: every thread's
 * Python stack of PID, printed as the report's section "Python threads at the instant"
 * (lib/report_python.c), or its JSON. The python suite reads live interpreters through it
 * before it reads them through hostprofd, and the unreadable cases too. Exit 0 whatever it
 * found (the output says), 1 on an error of its own.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jsonw.h"
#include "python.h"
#include "report_python.h"

int main(int argc, char **argv)
{
	Hostprof__PythonState *st = NULL;
	Hostprof__Snapshot snap;
	bool json = argc > 2 && !strcmp(argv[2], "--json");
	int r;

	if (argc < 2) {
		fprintf(stderr, "usage: pydump PID [--json]\n");
		return 1;
	}
	r = python_read_state(strtoul(argv[1], NULL, 10), NULL, &st);
	if (r < 0) {
		fprintf(stderr, "pydump: %s\n", strerror(-r));
		return 1;
	}
	if (!st) {
		printf(json ? "{}\n" : "not python\n");
		return 0;
	}
	hostprof__snapshot__init(&snap);
	snap.python = st;
	if (json) {
		struct jsonw *j = jsonw_new(stdout);

		jsonw_begin_object(j);
		report_python_json(&snap, j);
		jsonw_end_object(j);
		jsonw_free(j);
		putchar('\n');
	} else {
		report_python_text(&snap, stdout);
		printf("  reads             %llu, %llu failed; offsets: %s\n", (unsigned long long)st->reads,
		       (unsigned long long)st->read_failures, st->offsets);
	}
	python_state_free(st);
	return 0;
}
