/* SPDX-License-Identifier: GPL-2.0-only */
/* Triggers and automatic snapshots; see trigger.c. */
#ifndef HOSTPROF_TRIGGER_H
#define HOSTPROF_TRIGGER_H

#include <stddef.h>
#include <stdint.h>

#include "hostprof.h"
#include "recorder.h"
#include "settings.h"

struct snapstore;
struct snapsvc;
struct triggers;

/* The triggers take their snapshots through svc, into st. NULL + errno. */
struct triggers *triggers_new(struct recorder *rec, struct snapsvc *svc, struct snapstore *st);
void triggers_free(struct triggers *ts);
/* Replace the definitions (start, reload); cooldowns of triggers that stay are kept.
 * formats: FMT_* of the files each automatic snapshot gets. */
int triggers_configure(struct triggers *ts, const struct trigger_def *defs, size_t n, unsigned formats);
/* On the drain path, after the record went into the recorder. */
void triggers_on_record(struct triggers *ts, struct recorder *rec, const struct hp_hdr *h);
/* From the timer: take the snapshots whose `after` has passed. */
void triggers_tick(struct triggers *ts, uint64_t now);

struct trigger_stat {
	const struct trigger_def *def;
	uint64_t fired;      /* snapshots asked for */
	uint64_t suppressed; /* fired within the cooldown */
};
size_t triggers_count(const struct triggers *ts);
void triggers_stat(const struct triggers *ts, size_t i, struct trigger_stat *ret);
/* Fired while too many snapshots were waiting for their `after`. */
uint64_t triggers_dropped(const struct triggers *ts);

#endif
