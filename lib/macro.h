/* SPDX-License-Identifier: GPL-2.0-only */
/* Small helpers every hostprof source uses: cleanup attributes, array sizes. */
#ifndef HOSTPROF_MACRO_H
#define HOSTPROF_MACRO_H

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define MIN(a, b) ((a) < (b) ? (a) : (b))
#define MAX(a, b) ((a) > (b) ? (a) : (b))

#define NSEC_PER_USEC 1000ULL
#define NSEC_PER_MSEC 1000000ULL
#define NSEC_PER_SEC 1000000000ULL

static inline void freep(void *p)
{
	free(*(void **)p);
}

static inline void closep(int *fd)
{
	if (*fd >= 0)
		close(*fd);
}

static inline void fclosep(FILE **f)
{
	if (*f)
		fclose(*f);
}

#define _cleanup_(f) __attribute__((cleanup(f)))
#define _cleanup_free_ _cleanup_(freep)
#define _cleanup_close_ _cleanup_(closep)
#define _cleanup_fclose_ _cleanup_(fclosep)

/* Hand a cleanup-owned pointer or fd over to the caller. */
#define TAKE_PTR(p)                          \
	({                                   \
		__typeof__(p) _p_ = (p);     \
		(p) = NULL;                  \
		_p_;                         \
	})
#define TAKE_FD(fd)                          \
	({                                   \
		int _fd_ = (fd);             \
		(fd) = -1;                   \
		_fd_;                        \
	})

/* qsort() for arrays that may be empty: qsort's base must not be NULL, even for 0 items */
static inline void qsort_safe(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *))
{
	if (n > 1)
		qsort(base, n, size, cmp);
}

static inline void qsort_r_safe(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *, void *),
				void *arg)
{
	if (n > 1)
		qsort_r(base, n, size, cmp, arg);
}

/* qsort comparators of plain unsigned integers */
static inline int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

static inline int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* libc's -1/errno convention to ours: -errno */
static inline int negative_errno(void)
{
	return errno > 0 ? -errno : -EIO;
}

#endif /* HOSTPROF_MACRO_H */
