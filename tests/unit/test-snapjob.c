// SPDX-License-Identifier: GPL-2.0-only
/*
 * daemon/snapjob.c: real forks, the loop reading their pipes. What a child's work returns
 * reaches done whole and unchanged: a result larger than the pipe (read in many pieces,
 * straight into the buffer its header sized), an empty one, a failure's status, and a
 * child that dies before its header (-EIO, not a hang nor a partial result). With a learn
 * hook (snapjob_set_learn()), what the child's produce hands over reaches consume whole,
 * before done, and done still gets the work's bytes alone; a failed job learns nothing.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "framing.h"
#include "loop.h"
#include "snapjob.h"

struct result {
	bool called;
	int status;
	uint8_t *data;
	size_t len;
};

static uint8_t pattern(size_t i)
{
	return (uint8_t)(i * 2654435761u >> 13);
}

/* arg: how many bytes to return, as a size_t; SIZE_MAX: fail with -ENOENT; SIZE_MAX - 1:
 * die before writing anything */
static int work(void *arg, struct hp_buf *out)
{
	size_t n = *(size_t *)arg;

	if (n == SIZE_MAX)
		return -ENOENT;
	if (n == SIZE_MAX - 1)
		_exit(3);
	if (hp_buf_reserve(out, n ? n : 1) < 0)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		out->data[out->len + i] = pattern(i);
	out->len += n;
	return 0;
}

static void done(void *ud, int status, uint8_t *data, size_t len)
{
	struct result *res = ud;

	res->called = true;
	res->status = status;
	res->data = data;
	res->len = len;
}

/* The learn hook: the child hands over learned_n bytes of a pattern; the parent checks them. */
static size_t learned_n;
static size_t consumed_n, consumed_bad, consumed_calls;
static bool consumed_before_done;
static struct result *current;

static void learn_produce(void *ud, uint8_t **ret, size_t *ret_len)
{
	*ret = NULL;
	*ret_len = 0;
	if (!learned_n)
		return;
	*ret = malloc(learned_n);
	if (!*ret)
		return;
	for (size_t i = 0; i < learned_n; i++)
		(*ret)[i] = pattern(i + 7);
	*ret_len = learned_n;
}

static void learn_consume(void *ud, const uint8_t *data, size_t len)
{
	consumed_calls++;
	consumed_n = len;
	consumed_before_done = current && !current->called;
	for (size_t i = 0; i < len; i++)
		consumed_bad += data[i] != pattern(i + 7);
}

static struct result run_job(struct loop *l, size_t n)
{
	struct result res = {};
	size_t *arg = malloc(sizeof(*arg));
	int r;

	*arg = n;
	current = &res;
	r = snapjob_start(l, 10, NULL, work, arg, free, done, &res, NULL);
	CHECKF(r >= 0, "snapjob_start: %s", strerror(-r));
	for (int i = 0; r >= 0 && !res.called && i < 20000; i++)
		(void)loop_iterate(l, 1);
	CHECK(res.called);
	current = NULL;
	return res;
}

int main(void)
{
	struct loop *l = loop_new();
	/* 20 MiB: 20 times the 1 MiB pipe, so the loop reads it in many pieces */
	static const size_t sizes[] = { 0, 1, 4096, 1 << 20, (20 << 20) + 13 };
	struct result res;

	CHECK(l);
	if (!l)
		return check_summary();
	for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
		size_t n = sizes[k], bad = 0;

		res = run_job(l, n);
		CHECKF(res.status == 0, "%zu bytes: status %d", n, res.status);
		CHECK_EQ_U64(res.len, n);
		CHECK(res.data != NULL);
		for (size_t i = 0; res.data && i < res.len; i++)
			bad += res.data[i] != pattern(i);
		CHECKF(bad == 0, "%zu bytes: %zu of them differ", n, bad);
		free(res.data);
	}
	res = run_job(l, SIZE_MAX);
	CHECK_EQ_INT(res.status, -ENOENT);
	CHECK(res.data == NULL);
	res = run_job(l, SIZE_MAX - 1);
	CHECK_EQ_INT(res.status, -EIO);
	CHECK(res.data == NULL);

	/* a learn hook: its bytes go to consume, the work's to done, for every size of either */
	snapjob_set_learn(learn_produce, learn_consume, NULL);
	for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
		static const size_t learned_sizes[] = { 0, 1, 100000, (2 << 20) + 5 };

		for (size_t m = 0; m < sizeof(learned_sizes) / sizeof(learned_sizes[0]); m++) {
			size_t n = sizes[k], bad = 0;

			learned_n = learned_sizes[m];
			consumed_n = consumed_bad = consumed_calls = 0;
			res = run_job(l, n);
			CHECKF(res.status == 0, "%zu + %zu bytes: status %d", n, learned_n, res.status);
			CHECK_EQ_U64(res.len, n);
			for (size_t i = 0; res.data && i < res.len; i++)
				bad += res.data[i] != pattern(i);
			CHECK_EQ_U64(bad, 0);
			free(res.data);
			CHECK_EQ_U64(consumed_calls, learned_n ? 1 : 0);
			CHECK_EQ_U64(consumed_n, learned_n);
			CHECK_EQ_U64(consumed_bad, 0);
			CHECK(!learned_n || consumed_before_done);
		}
	}
	learned_n = 64;
	consumed_calls = 0;
	res = run_job(l, SIZE_MAX);
	CHECK_EQ_INT(res.status, -ENOENT);
	CHECK_EQ_U64(consumed_calls, 0);
	snapjob_set_learn(NULL, NULL, NULL);
	res = run_job(l, 10);
	CHECK_EQ_INT(res.status, 0);
	CHECK_EQ_U64(res.len, 10);
	free(res.data);
	CHECK_EQ_U64(consumed_calls, 0);
	CHECK(!snapjob_running());
	loop_free(l);
	return check_summary();
}
