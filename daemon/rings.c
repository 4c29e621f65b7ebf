// SPDX-License-Identifier: GPL-2.0-only
/*
 * The capture's ring buffers, read from their mapped pages; see rings.h.
 *
 * The layout is the kernel's (kernel/bpf/ringbuf.c): the consumer position on the first
 * page, the only one user space may write; the producer position on the next, then the
 * data pages, mapped twice in a row so that a record that wraps reads as one. Each record
 * starts with an 8-byte header whose first word is its length, with BUSY set while the
 * program that reserved it is still writing it and DISCARD for one it threw away;
 * records start 8-byte aligned.
 *
 * Why not libbpf's ring_buffer: it stores the consumer position after every record, and
 * reads on until the ring is empty. A program reads the consumer position at every
 * reservation (free space, bpf_ringbuf_query), so while the daemon drains, each record
 * the program writes waits for the line the daemon has just written, and at the end of
 * every pass the daemon reads each record as it is being written. Measured at the
 * watched pipe benchmark on this project's 2-CPU VM, the sched_switch program spent
 * ~50 ns of its ~150 on its record, 13 ns of them with nobody reading the ring.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <unistd.h>
#include <linux/bpf.h>

#include "macro.h"
#include "rings.h"

/* A pass publishes its consumer position at least this often: the programs see the room
 * freed while a long pass goes on. */
#define RINGS_PUBLISH_BYTES (64 * 1024)

/* How many times a record still being written is looked at again before the pass stops
 * at it (a program writes its record within a microsecond; the next pass, at the latest
 * the daemon's 100 ms timer, takes it). */
#define BUSY_SPINS 2000

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield" ::: "memory");
#endif
}

struct ring {
	uint64_t *consumer_pos;       /* the page user space writes */
	const uint64_t *producer_pos; /* the page after it, then the data twice */
	const uint8_t *data;
	uint64_t mask;
};

struct rings {
	int epoll_fd;
	int n;
	size_t page, ring_bytes;
	rings_record_fn fn;
	void *ctx;
	struct ring ring[];
};

static void ring_unmap(struct rings *rs, struct ring *r)
{
	if (r->consumer_pos)
		munmap(r->consumer_pos, rs->page);
	if (r->producer_pos)
		munmap((void *)r->producer_pos, rs->page + 2 * rs->ring_bytes);
	r->consumer_pos = NULL;
	r->producer_pos = NULL;
}

static int ring_map(struct rings *rs, struct ring *r, int fd)
{
	void *p = mmap(NULL, rs->page, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		return -errno;
	r->consumer_pos = p;
	p = mmap(NULL, rs->page + 2 * rs->ring_bytes, PROT_READ, MAP_SHARED, fd, rs->page);
	if (p == MAP_FAILED)
		return -errno;
	r->producer_pos = p;
	r->data = (const uint8_t *)p + rs->page;
	r->mask = rs->ring_bytes - 1;
	return 0;
}

struct rings *rings_new(const int *fds, int n, size_t ring_bytes, rings_record_fn fn, void *ctx)
{
	struct rings *rs;
	long page = sysconf(_SC_PAGESIZE);
	int r;

	if (n <= 0 || page <= 0 || !ring_bytes || (ring_bytes & (ring_bytes - 1))) {
		errno = EINVAL;
		return NULL;
	}
	rs = calloc(1, sizeof(*rs) + (size_t)n * sizeof(rs->ring[0]));
	if (!rs)
		return NULL;
	rs->page = page;
	rs->ring_bytes = ring_bytes;
	rs->fn = fn;
	rs->ctx = ctx;
	rs->epoll_fd = epoll_create1(EPOLL_CLOEXEC);
	if (rs->epoll_fd < 0) {
		r = -errno;
		goto fail;
	}
	for (int i = 0; i < n; i++) {
		struct epoll_event ev = { .events = EPOLLIN | EPOLLET, .data.u32 = i };

		rs->n = i + 1;
		r = ring_map(rs, &rs->ring[i], fds[i]);
		if (r < 0)
			goto fail;
		if (epoll_ctl(rs->epoll_fd, EPOLL_CTL_ADD, fds[i], &ev) < 0) {
			r = -errno;
			goto fail;
		}
	}
	return rs;
fail:
	rings_free(rs);
	errno = -r;
	return NULL;
}

void rings_free(struct rings *rs)
{
	if (!rs)
		return;
	for (int i = 0; i < rs->n; i++)
		ring_unmap(rs, &rs->ring[i]);
	if (rs->epoll_fd >= 0)
		close(rs->epoll_fd);
	free(rs);
}

int rings_fd(const struct rings *rs)
{
	return rs->epoll_fd;
}

/* The length word of the record at cons, once no program is writing it; false if one
 * still is after BUSY_SPINS looks. */
static bool record_len(const struct ring *r, uint64_t cons, uint32_t *ret_len)
{
	const uint32_t *hdr = (const uint32_t *)(r->data + (cons & r->mask));

	for (int i = 0; i < BUSY_SPINS; i++) {
		uint32_t len = __atomic_load_n(hdr, __ATOMIC_ACQUIRE);

		if (!(len & BPF_RINGBUF_BUSY_BIT)) {
			*ret_len = len;
			return true;
		}
		cpu_relax();
	}
	return false;
}

/* Every record the ring holds now; then, of what came meanwhile, all but `leave` bytes. */
static int64_t ring_drain(struct rings *rs, struct ring *r, size_t leave)
{
	uint64_t cons = __atomic_load_n(r->consumer_pos, __ATOMIC_RELAXED), published = cons, prod;
	int64_t n = 0;
	int ret = 0;

	for (size_t keep = 0;; keep = leave) {
		prod = __atomic_load_n(r->producer_pos, __ATOMIC_ACQUIRE);
		if (prod - cons <= keep)
			break;
		while (cons < prod) {
			uint32_t len, size;

			if (!record_len(r, cons, &len))
				goto out;
			size = len & ~(BPF_RINGBUF_BUSY_BIT | BPF_RINGBUF_DISCARD_BIT);
			if (!(len & BPF_RINGBUF_DISCARD_BIT)) {
				ret = rs->fn(rs->ctx, (void *)(r->data + ((cons + BPF_RINGBUF_HDR_SZ) & r->mask)), size);
				n++;
			}
			cons += (size + BPF_RINGBUF_HDR_SZ + 7) & ~7ULL;
			if (ret < 0)
				goto out;
			if (cons - published >= RINGS_PUBLISH_BYTES) {
				__atomic_store_n(r->consumer_pos, cons, __ATOMIC_RELEASE);
				published = cons;
			}
		}
	}
out:
	if (cons != published)
		__atomic_store_n(r->consumer_pos, cons, __ATOMIC_RELEASE);
	return ret < 0 ? ret : n;
}

int64_t rings_drain(struct rings *rs, size_t leave)
{
	struct epoll_event ev[16];
	int64_t total = 0;

	/* the wakeups first: one that comes while the rings are read stays for the next
	 * pass (data this one leaves behind) */
	while (epoll_wait(rs->epoll_fd, ev, ARRAY_SIZE(ev), 0) == (int)ARRAY_SIZE(ev))
		;
	for (int i = 0; i < rs->n; i++) {
		int64_t n = ring_drain(rs, &rs->ring[i], leave);

		if (n < 0)
			return n;
		total += n;
	}
	return total;
}
