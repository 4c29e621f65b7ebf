// SPDX-License-Identifier: GPL-2.0-only
/* Length-prefixed protobuf-c messages over a stream socket; see framing.h. */
#include <errno.h>
#include <poll.h>
#include <sys/socket.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "framing.h"
#include "macro.h"

int hp_buf_reserve(struct hp_buf *b, size_t extra)
{
	size_t cap;
	uint8_t *p;

	if (b->off && b->off == b->len)
		b->off = b->len = 0;
	if (extra > SIZE_MAX / 2 - b->len)
		return -ENOMEM;
	if (b->len + extra <= b->cap)
		return 0;
	/* reclaim consumed space before growing */
	if (b->off) {
		memmove(b->data, b->data + b->off, b->len - b->off);
		b->len -= b->off;
		b->off = 0;
		if (b->len + extra <= b->cap)
			return 0;
	}
	cap = MAX(b->cap * 2, b->len + extra);
	cap = MAX(cap, (size_t)4096);
	p = realloc(b->data, cap);
	if (!p)
		return -ENOMEM;
	b->data = p;
	b->cap = cap;
	return 0;
}

int hp_buf_append(struct hp_buf *b, const void *p, size_t n)
{
	int r = hp_buf_reserve(b, n);

	if (r < 0)
		return r;
	memcpy(b->data + b->len, p, n);
	b->len += n;
	return 0;
}

void hp_buf_consume(struct hp_buf *b, size_t n)
{
	b->off += n;
	if (b->off >= b->len)
		b->off = b->len = 0;
}

void hp_buf_free(struct hp_buf *b)
{
	free(b->data);
	*b = (struct hp_buf){};
}

static void put_le32(uint8_t *p, uint32_t v)
{
	p[0] = v;
	p[1] = v >> 8;
	p[2] = v >> 16;
	p[3] = v >> 24;
}

static uint32_t get_le32(const uint8_t *p)
{
	return p[0] | p[1] << 8 | p[2] << 16 | (uint32_t)p[3] << 24;
}

int frame_append(struct hp_buf *out, const ProtobufCMessage *msg, size_t max)
{
	size_t n = protobuf_c_message_get_packed_size(msg);
	int r;

	if (n == 0 || n > max)
		return -EMSGSIZE;
	r = hp_buf_reserve(out, HP_FRAME_HDR + n);
	if (r < 0)
		return r;
	put_le32(out->data + out->len, n);
	protobuf_c_message_pack(msg, out->data + out->len + HP_FRAME_HDR);
	out->len += HP_FRAME_HDR + n;
	return 0;
}

int frame_peek(const struct hp_buf *in, size_t max, const uint8_t **ret_payload, size_t *ret_len)
{
	size_t avail = hp_buf_pending(in);
	uint32_t n;

	if (avail < HP_FRAME_HDR)
		return 0;
	n = get_le32(in->data + in->off);
	if (n == 0)
		return -EBADMSG;
	if (n > max)
		return -EMSGSIZE;
	if (avail - HP_FRAME_HDR < n)
		return 0;
	*ret_payload = in->data + in->off + HP_FRAME_HDR;
	*ret_len = n;
	return 1;
}

static int write_all(int fd, const uint8_t *p, size_t n)
{
	while (n) {
		ssize_t w = send(fd, p, n, MSG_NOSIGNAL); /* a closed peer is -EPIPE, not SIGPIPE */

		if (w < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN) {
				struct pollfd pfd = { .fd = fd, .events = POLLOUT };

				poll(&pfd, 1, -1);
				continue;
			}
			return negative_errno();
		}
		p += w;
		n -= w;
	}
	return 0;
}

int frame_write_fd(int fd, const ProtobufCMessage *msg, size_t max)
{
	struct hp_buf b = {};
	int r;

	r = frame_append(&b, msg, max);
	if (r >= 0)
		r = write_all(fd, b.data, b.len);
	hp_buf_free(&b);
	return r;
}

/* The descriptors a message passed: the first into *passed (if it is -1), the rest closed. */
static void take_passed(struct msghdr *mh, int *passed)
{
	for (struct cmsghdr *c = CMSG_FIRSTHDR(mh); c; c = CMSG_NXTHDR(mh, c)) {
		size_t n;

		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS || c->cmsg_len < CMSG_LEN(0))
			continue;
		n = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (size_t i = 0; i < n; i++) {
			int fd;

			memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
			if (*passed < 0)
				*passed = fd;
			else
				close(fd);
		}
	}
}

/* passed NULL: read(), which drops any descriptor sent along */
static int read_exact(int fd, uint8_t *p, size_t n, int *passed)
{
	while (n) {
		union {
			struct cmsghdr h;
			char buf[CMSG_SPACE(4 * sizeof(int))];
		} cm;
		struct iovec iov = { p, n };
		struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cm.buf,
				     .msg_controllen = sizeof(cm.buf) };
		ssize_t got = passed ? recvmsg(fd, &mh, MSG_CMSG_CLOEXEC) : read(fd, p, n);

		if (got < 0) {
			if (errno == EINTR)
				continue;
			return negative_errno();
		}
		if (passed)
			take_passed(&mh, passed);
		if (got == 0)
			return -ECONNRESET;
		p += got;
		n -= got;
	}
	return 0;
}

int frame_read_fd(int fd, size_t max, struct hp_buf *buf, const uint8_t **ret_payload)
{
	int passed = -1, r = frame_read_fd_passed(fd, max, buf, ret_payload, &passed);

	if (passed >= 0)
		close(passed);
	return r;
}

int frame_read_fd_passed(int fd, size_t max, struct hp_buf *buf, const uint8_t **ret_payload, int *ret_passed)
{
	uint8_t hdr[HP_FRAME_HDR];
	uint32_t n;
	int r;

	*ret_passed = -1;
	r = read_exact(fd, hdr, sizeof(hdr), ret_passed);
	if (r < 0)
		goto fail;
	n = get_le32(hdr);
	r = n == 0 ? -EBADMSG : n > max || n > INT32_MAX ? -EMSGSIZE : 0;
	if (r < 0)
		goto fail;
	buf->off = buf->len = 0;
	r = hp_buf_reserve(buf, n);
	if (r < 0)
		goto fail;
	r = read_exact(fd, buf->data, n, ret_passed);
	if (r < 0)
		goto fail;
	buf->len = n;
	*ret_payload = buf->data;
	return (int)n;
fail:
	if (*ret_passed >= 0)
		close(*ret_passed);
	*ret_passed = -1;
	return r;
}
