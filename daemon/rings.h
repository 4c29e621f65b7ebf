/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The capture's BPF ring buffers (one per CPU), read from their mapped pages: what
 * libbpf's ring_buffer does, but the consumer position is published once per pass (and
 * every RINGS_PUBLISH_BYTES), not after every record, and a pass woken by a ring may
 * leave a little of what came in while it ran instead of chasing the producer to the
 * last record. Both keep the daemon off the cache lines the programs write at every
 * record (see rings.c).
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

struct rings;

/* Called for each record, in each ring's order; a negative return stops the pass with it. */
typedef int (*rings_record_fn)(void *ctx, void *data, size_t size);

/* Map the n rings (BPF_MAP_TYPE_RINGBUF fds of ring_bytes each; the fds stay the
 * caller's). NULL with errno set. */
struct rings *rings_new(const int *fds, int n, size_t ring_bytes, rings_record_fn fn, void *ctx);
void rings_free(struct rings *rs);

/* Readable after a program woke a ring (BPF_RB_FORCE_WAKEUP); edge-triggered: a
 * rings_drain() takes the wakeups first. */
int rings_fd(const struct rings *rs);

/* Read every record each ring holds, then go on while more than `leave` bytes came
 * meanwhile (0: until it is empty). The number of records passed to fn, or the first
 * negative return of fn. */
int64_t rings_drain(struct rings *rs, size_t leave);
