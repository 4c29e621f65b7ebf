/* SPDX-License-Identifier: GPL-2.0-only */
/* The daemon's state, shared by its parts: main.c, loop.c, control.c. */
#ifndef HOSTPROF_HOSTPROFD_H
#define HOSTPROF_HOSTPROFD_H

#include <stdbool.h>
#include <stdint.h>

#include "capture.h"
#include "recorder.h"
#include "settings.h"
#include "snapshot.h"
#include "snapstore.h"
#include "trigger.h"

/* Something the epoll loop watches: data.ptr of each epoll registration points here. */
struct io_source {
	int fd;
	int (*dispatch)(struct io_source *src, uint32_t events);
};

struct control;

struct daemon {
	struct settings settings;
	int argc;
	char **argv;
	struct capture *capture;
	struct recorder *recorder;
	struct control *control;
	struct symbolizer *symbolizer;
	struct triggers *triggers;
	struct snapstore *snapstore; /* NULL while the snapshot directory cannot be used */
	int epoll_fd;
	struct io_source signal_src, timer_src, capture_src;
	uint64_t start_ns;      /* BOOTTIME */
	uint64_t ticks;
	uint64_t watchdog_ticks; /* ping systemd's watchdog every this many ticks; 0: off */
	uint64_t record_deadline; /* --record: BOOTTIME when to stop; 0: not recording */
	bool in_snapjob;          /* this is a snapshot job's child: never touch the rings */
	uint64_t rate_events;   /* recorder events at the last rate sample */
	uint64_t rate_ns;
	double events_per_sec;
	bool quit;
};

int loop_add(struct daemon *d, struct io_source *src, uint32_t events);
int loop_mod(struct daemon *d, struct io_source *src, uint32_t events);
void loop_del(struct daemon *d, struct io_source *src);
int loop_setup(struct daemon *d);
int loop_run(struct daemon *d);
void loop_teardown(struct daemon *d);

uint64_t now_boottime_ns(void);

/* The snapshot directory, opened (again) if it is not yet. */
struct snapstore *daemon_snapstore(struct daemon *d);

/* A watched process exited or was unwatched. */
void daemon_process_gone(struct daemon *d, struct proc_rec *p);
/* Start watching pid (reason HP_WATCH_*); -ENOENT if there is no such process. */
int daemon_watch_pid(struct daemon *d, uint32_t pid, uint32_t reason);
/* Thread-name globs at run time (until the next reload). */
int daemon_add_glob(struct daemon *d, const char *glob);
int daemon_remove_glob(struct daemon *d, const char *glob);

/* SIGHUP: re-read the config file (flags still win). */
int daemon_reload(struct daemon *d);

/* Drops by cause, host-wide, as status and snapshots show them. */
size_t daemon_drops(struct daemon *d, struct drop_count *ret, size_t max);

/* Collect pid's syscall histograms: from the kernel while it lives, saved ones after. */
int daemon_histograms(struct daemon *d, const struct proc_rec *p, struct hist_entry **ret, size_t *ret_n);
/* Build the .hps snapshot of p over the window (0: all kept) ending at end_ns (0: now). */
int daemon_build_snapshot(struct daemon *d, const struct proc_rec *p, uint64_t window_ns, uint64_t end_ns,
			  const char *reason, Hostprof__Marker *const *markers, size_t n_markers, uint8_t **ret_data,
			  size_t *ret_len, uint64_t *ret_events);

int control_new(struct daemon *d, struct control **ret);
void control_free(struct control *ctl);
void control_gc(struct control *ctl);
void control_tick(struct control *ctl, uint64_t now);

#endif
