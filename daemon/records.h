/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The record types of bpf/hostprof.h as the daemon reads them, all from its HP_RECORDS
 * table: whether a record drained from a ring buffer parses, and the name of its type.
 */
#ifndef HOSTPROF_RECORDS_H
#define HOSTPROF_RECORDS_H

#include <stddef.h>
#include <stdint.h>

#include "hostprof.h"

/*
 * 0 when data[0, size) is one whole record of a known type: its header says `size`, it
 * holds at least its type's struct and exactly the frames that struct says follow it (a
 * fixed-size record: exactly its struct), and it is at most HP_MAX_RECORD bytes
 * (HP_MAX_RAW_RECORD for HP_EV_RAWSAMPLE and HP_EV_RAWUSTACK, which the drain unwinds and
 * never records).
 * -EBADMSG otherwise.
 */
int record_check(const void *data, size_t size);

/* "switch", "offcpu", ...; "unknown" for a type not in HP_RECORDS. */
const char *record_name(uint32_t type);

#endif
