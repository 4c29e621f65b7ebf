/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The daemon as main.c wires it: its settings and the modules it made. Only the top
 * layer (main.c, reload.c, record.c) sees this; every module below gets the
 * collaborators it needs when it is made, and never this.
 */
#ifndef HOSTPROF_DAEMON_H
#define HOSTPROF_DAEMON_H

#include <stdbool.h>
#include <stdint.h>

#include "loop.h"
#include "settings.h"

struct daemon {
	struct settings settings;
	int argc;
	char **argv;
	struct loop *loop;
	struct capture *capture;
	struct recorder *recorder;
	struct symbolizer *symbolizer;
	struct rawustacks *rawustacks; /* off-CPU user stacks unwound (rawsample.h) */
	struct worker *worker;
	struct watch *watch;
	struct gilwatch *gilwatch;
	struct py_names *py_names; /* names of the kernel-walked Python stacks (daemon/python.h) */
	struct snapsvc *snapsvc;
	struct snapstore *snapstore;
	struct triggers *triggers;
	struct control *control;
	struct metrics *metrics;
	struct io_source signal_src, timer_src, capture_src, worker_src;
	uint64_t ticks;
	uint64_t watchdog_ticks;  /* ping systemd's watchdog every this many ticks; 0: off */
	uint64_t record_deadline; /* --record: BOOTTIME when to stop; 0: not recording */
};

/* Settings into the modules (start and SIGHUP): what can change while running. */
int daemon_apply_settings(struct daemon *d);
/* Why the snapshot directory cannot be used (snapstore_ready's error), and what to do. */
void daemon_log_snapdir_error(int r, const char *dir);
/* SIGHUP: re-read the config file (flags still win). reload.c */
int daemon_reload(struct daemon *d);
/* --record: capture for the duration, write the formats; an exit status. record.c */
int daemon_record(struct daemon *d);

#endif
