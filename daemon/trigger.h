/* SPDX-License-Identifier: GPL-2.0-only */
/* Triggers and automatic snapshots; see trigger.c. */
#ifndef HOSTPROF_TRIGGER_H
#define HOSTPROF_TRIGGER_H

#include <stddef.h>
#include <stdint.h>

#include "hostprof.h"
#include "recorder.h"
#include "settings.h"

struct triggers;
struct daemon;

struct triggers *triggers_new(void);
void triggers_free(struct triggers *ts);
/* Replace the definitions (start, reload); cooldowns of triggers that stay are kept. */
int triggers_configure(struct triggers *ts, const struct trigger_def *defs, size_t n);
/* On the drain path, after the record went into the recorder. */
void triggers_on_record(struct triggers *ts, struct recorder *rec, const struct hp_hdr *h);
/* From the timer: take the snapshots whose `after` has passed. */
void triggers_tick(struct triggers *ts, struct daemon *d, uint64_t now);
void triggers_stats(const struct triggers *ts, uint64_t *ret_fired, uint64_t *ret_suppressed, uint64_t *ret_dropped);

#endif
