// SPDX-License-Identifier: GPL-2.0-only
/*
 * A fake of daemon/watch.c (see fakes.h): the calls are recorded, the thread patterns
 * kept and checked as the real module does (1..15 characters, HP_MAX_GLOBS), and
 * nothing goes to the kernel or the recorder.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fakes.h"
#include "glob.h"
#include "watch.h"

struct watch {
	char *globs[HP_MAX_GLOBS];
	size_t n_globs;
	struct fake_watch_call calls[FAKE_WATCH_MAX_CALLS];
	size_t n_calls;
	int pid_result;
};

static int note(struct watch *w, enum fake_watch_op op, uint32_t pid, uint32_t reason, const char *glob,
		int ret)
{
	struct fake_watch_call *c;

	if (w->n_calls < FAKE_WATCH_MAX_CALLS) {
		c = &w->calls[w->n_calls];
		*c = (struct fake_watch_call){ .op = op, .pid = pid, .reason = reason, .ret = ret };
		snprintf(c->glob, sizeof(c->glob), "%s", glob ? glob : "");
	}
	w->n_calls++;
	return ret;
}

struct watch *watch_new(struct capture *c, struct recorder *rec, struct symbolizer *sym, struct worker *worker)
{
	return calloc(1, sizeof(struct watch));
}

static void free_globs(struct watch *w)
{
	for (size_t i = 0; i < w->n_globs; i++)
		free(w->globs[i]);
	w->n_globs = 0;
}

void watch_free(struct watch *w)
{
	if (!w)
		return;
	free_globs(w);
	free(w);
}

int watch_pid(struct watch *w, uint32_t pid, uint32_t reason)
{
	return note(w, FAKE_WATCH_PID, pid, reason, NULL, w->pid_result);
}

void watch_stop(struct watch *w, struct proc_rec *p)
{
	(void)note(w, FAKE_WATCH_STOP, p->info.pid, 0, NULL, 0);
}

int watch_set_globs(struct watch *w, char *const *globs, size_t n)
{
	if (n > HP_MAX_GLOBS)
		return note(w, FAKE_WATCH_SET_GLOBS, 0, 0, NULL, -E2BIG);
	free_globs(w);
	for (size_t i = 0; i < n; i++) {
		w->globs[i] = strdup(globs[i]);
		if (!w->globs[i])
			return note(w, FAKE_WATCH_SET_GLOBS, 0, 0, NULL, -ENOMEM);
		w->n_globs++;
	}
	return note(w, FAKE_WATCH_SET_GLOBS, 0, 0, NULL, 0);
}

int watch_add_glob(struct watch *w, const char *glob)
{
	if (!thread_glob_valid(glob))
		return note(w, FAKE_WATCH_ADD_GLOB, 0, 0, glob, -EINVAL);
	for (size_t i = 0; i < w->n_globs; i++)
		if (!strcmp(w->globs[i], glob))
			return note(w, FAKE_WATCH_ADD_GLOB, 0, 0, glob, 0);
	if (w->n_globs >= HP_MAX_GLOBS)
		return note(w, FAKE_WATCH_ADD_GLOB, 0, 0, glob, -E2BIG);
	w->globs[w->n_globs] = strdup(glob);
	if (!w->globs[w->n_globs])
		return note(w, FAKE_WATCH_ADD_GLOB, 0, 0, glob, -ENOMEM);
	w->n_globs++;
	return note(w, FAKE_WATCH_ADD_GLOB, 0, 0, glob, 0);
}

int watch_remove_glob(struct watch *w, const char *glob)
{
	for (size_t i = 0; i < w->n_globs; i++) {
		if (strcmp(w->globs[i], glob))
			continue;
		free(w->globs[i]);
		memmove(&w->globs[i], &w->globs[i + 1], (w->n_globs - i - 1) * sizeof(*w->globs));
		w->n_globs--;
		return note(w, FAKE_WATCH_REMOVE_GLOB, 0, 0, glob, 0);
	}
	return note(w, FAKE_WATCH_REMOVE_GLOB, 0, 0, glob, -ENOENT);
}

char *const *watch_globs(const struct watch *w, size_t *ret_n)
{
	*ret_n = w->n_globs;
	return w->globs;
}

void watch_reads(const struct watch *w, struct watch_reads *ret)
{
	*ret = (struct watch_reads){ .done = 3, .abandoned = 2, .deferred = 1 };
}

bool watch_python_stats(const struct watch *w, struct watch_python *ret)
{
	*ret = (struct watch_python){ .processes = 1, .walks = 7, .read_failures = 1, .unreadable = 2 };
	return true;
}

void watch_unwind(const struct watch *w, Hostprof__UnwindStats *ret, Hostprof__Drop *drops, Hostprof__Drop **ptrs)
{
	hostprof__unwind_stats__init(ret);
	ret->has_stacks = ret->has_complete = true;
	ret->stacks = 5;
	ret->complete = 4;
	hostprof__drop__init(&drops[0]);
	drops[0].cause = "stack_copy";
	drops[0].has_count = true;
	drops[0].count = 1;
	ptrs[0] = &drops[0];
	ret->truncated = ptrs;
	ret->n_truncated = 1;
}

void watch_tick(struct watch *w, uint64_t now)
{
}

size_t fake_watch_calls(const struct watch *w, const struct fake_watch_call **ret)
{
	*ret = w->calls;
	return w->n_calls < FAKE_WATCH_MAX_CALLS ? w->n_calls : FAKE_WATCH_MAX_CALLS;
}

void fake_watch_reset(struct watch *w)
{
	free_globs(w);
	w->n_calls = 0;
}

void fake_watch_set_pid_result(struct watch *w, int r)
{
	w->pid_result = r;
}
