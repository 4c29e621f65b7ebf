/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The control socket's wire format: a 4-byte little-endian length, then one serialized
 * protobuf-c message (Request or Response, proto/control.proto).
 */
#ifndef HOSTPROF_FRAMING_H
#define HOSTPROF_FRAMING_H

#include <stddef.h>
#include <stdint.h>

#include "control.pb-c.h"

#define HP_PROTOCOL_VERSION 1
#define HP_FRAME_HDR 4
#define HP_MAX_REQUEST (64 * 1024)             /* client → daemon, checked before allocating */
#define HP_MAX_RESPONSE (8 * 1024 * 1024)       /* daemon → client */
#define HP_CHUNK_SIZE (256 * 1024)              /* snapshot bytes per SnapshotChunk */
#define HP_DEFAULT_SOCKET "/run/hostprof/hostprofd.sock"

/* A growable byte buffer; data[off..len) is what is still to be consumed. */
struct hp_buf {
	uint8_t *data;
	size_t off, len, cap;
};

int hp_buf_reserve(struct hp_buf *b, size_t extra);
int hp_buf_append(struct hp_buf *b, const void *p, size_t n);
void hp_buf_consume(struct hp_buf *b, size_t n);
static inline size_t hp_buf_pending(const struct hp_buf *b)
{
	return b->len - b->off;
}
void hp_buf_free(struct hp_buf *b);

/* Append one framed message. -EMSGSIZE when it would exceed max. */
int frame_append(struct hp_buf *out, const ProtobufCMessage *msg, size_t max);

/*
 * Look at the start of `in` for one complete frame. Returns 1 and the payload when there
 * is one, 0 when more bytes are needed, -EMSGSIZE as soon as the header announces more
 * than max (before anything is allocated for it), -EBADMSG for a zero length.
 */
int frame_peek(const struct hp_buf *in, size_t max, const uint8_t **ret_payload, size_t *ret_len);

/* Blocking helpers for the client side (sockets only: they send with MSG_NOSIGNAL). */
int frame_write_fd(int fd, const ProtobufCMessage *msg, size_t max);
/* Reads one frame into *buf (reused across calls). Returns payload length, -errno, or
 * -ECONNRESET when the peer closed. */
int frame_read_fd(int fd, size_t max, struct hp_buf *buf, const uint8_t **ret_payload);
/* The same, and the descriptor passed with the frame's bytes (SCM_RIGHTS), close-on-exec and
 * the caller's, in *ret_passed (-1: none; any more than one are closed). */
int frame_read_fd_passed(int fd, size_t max, struct hp_buf *buf, const uint8_t **ret_payload, int *ret_passed);

#endif
