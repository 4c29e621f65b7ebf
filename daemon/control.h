/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The control socket: listening (a path, or the fd systemd passed), clients, requests,
 * and who may make them (one table, applied before a request is handled).
 */
#ifndef HOSTPROF_CONTROL_H
#define HOSTPROF_CONTROL_H

#include <stdint.h>

struct control;
struct loop;
struct metrics;
struct recorder;
struct settings;
struct snapstore;
struct snapsvc;
struct triggers;
struct watch;

/* Facts of the capture that do not change while the daemon runs. */
struct control_facts {
	uint32_t ncpus;
	unsigned interference_missing; /* HP_INTF_* groups this kernel lacks */
};

/* What control works with; every pointer outlives it. settings is the daemon's, as
 * each reload leaves it. */
struct control_deps {
	struct loop *loop;
	struct recorder *recorder;
	struct watch *watch;
	struct snapsvc *snapsvc;
	struct snapstore *snapstore;
	const struct triggers *triggers;
	const struct settings *settings;
	struct metrics *metrics;
	struct control_facts facts;
};

/* Listens and registers with the loop; logs why it could not. */
int control_new(const struct control_deps *deps, struct control **ret);
void control_free(struct control *ctl);
/* After each batch of events: free the clients closed in it. */
void control_gc(struct control *ctl);
/* Once a second: close clients that stopped reading, sample the event rate. */
void control_tick(struct control *ctl, uint64_t now);

#endif
