// SPDX-License-Identifier: GPL-2.0-only
/*
 * The watched set, kept the same in the recorder (history) and in the kernel (the
 * watched map the BPF programs filter on); see watch.h.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "capture.h"
#include "glob.h"
#include "log.h"
#include "macro.h"
#include "loop.h"
#include "procfs.h"
#include "symbolize.h"
#include "watch.h"
#include "worker.h"

struct watch {
	struct capture *capture;
	struct recorder *recorder;
	struct symbolizer *symbolizer;
	struct worker *worker;
	uint64_t refresh_deferred;
	char **globs;
	size_t n_globs;
};

struct watch *watch_new(struct capture *c, struct recorder *rec, struct symbolizer *sym, struct worker *worker)
{
	struct watch *w = calloc(1, sizeof(*w));

	if (!w)
		return NULL;
	w->capture = c;
	w->recorder = rec;
	w->symbolizer = sym;
	w->worker = worker;
	return w;
}

static void free_globs(struct watch *w)
{
	for (size_t i = 0; i < w->n_globs; i++)
		free(w->globs[i]);
	free(w->globs);
	w->globs = NULL;
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
	struct proc_rec *p;
	int r;

	if (recorder_find_live(w->recorder, pid))
		return 0;
	r = recorder_watch(w->recorder, pid, reason, 0, now_boottime_ns(), &p);
	if (r < 0)
		return r;
	r = capture_watch(w->capture, pid, reason, 0);
	if (r < 0)
		return r;
	log_info("watching pid %u (%s): %s", pid, p->info.comm, p->why);
	return 0;
}

/* Gone or unwatched: keep its syscall histograms with its history, and stop watching
 * its pid in the kernel. */
static void process_gone(struct watch *w, struct proc_rec *p)
{
	uint32_t pid = p->info.pid;
	int r;

	r = capture_histograms(w->capture, pid, &p->final_hists, &p->n_final_hists);
	if (r < 0)
		log_warning_errno(r, "Failed to save the syscall histograms of pid %u: %m, ignoring", pid);
	p->hists_saved = true;
	capture_forget_histograms(w->capture, pid);
	r = capture_unwatch(w->capture, pid);
	if (r < 0)
		log_warning_errno(r, "Failed to stop watching pid %u: %m, ignoring", pid);
}

void watch_stop(struct watch *w, struct proc_rec *p)
{
	recorder_stop(w->recorder, p, now_boottime_ns());
	process_gone(w, p);
}

struct scan_ctx {
	struct watch *w;
	uint32_t last_pid;
};

static int scan_thread(uint32_t pid, uint32_t tid, const char *comm, void *ud)
{
	struct scan_ctx *ctx = ud;
	struct watch *w = ctx->w;

	if (pid == ctx->last_pid || recorder_find_live(w->recorder, pid))
		return 0;
	for (size_t i = 0; i < w->n_globs; i++) {
		if (!thread_glob_match(w->globs[i], comm))
			continue;
		ctx->last_pid = pid;
		if (watch_pid(w, pid, HP_WATCH_GLOB) < 0)
			log_warning("pid %u went away while being added, ignoring", pid);
		break;
	}
	return 0;
}

/* Processes that already have a thread of a watched name. New ones the kernel catches. */
static int scan_proc(struct watch *w)
{
	struct scan_ctx ctx = { .w = w };

	if (!w->n_globs)
		return 0;
	return proc_for_each_thread(scan_thread, &ctx);
}

static int globs_changed(struct watch *w)
{
	int r = capture_set_globs(w->capture, w->globs, w->n_globs);

	return r < 0 ? r : scan_proc(w);
}

int watch_set_globs(struct watch *w, char *const *globs, size_t n)
{
	char **v;

	if (n > HP_MAX_GLOBS)
		return -E2BIG;
	v = calloc(n ? n : 1, sizeof(*v));
	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		v[i] = strdup(globs[i]);
		if (!v[i]) {
			while (i-- > 0)
				free(v[i]);
			free(v);
			return -ENOMEM;
		}
	}
	free_globs(w);
	w->globs = v;
	w->n_globs = n;
	return globs_changed(w);
}

int watch_add_glob(struct watch *w, const char *glob)
{
	char **v, *copy;

	if (!thread_glob_valid(glob))
		return -EINVAL;
	for (size_t i = 0; i < w->n_globs; i++)
		if (!strcmp(w->globs[i], glob))
			return 0;
	if (w->n_globs >= HP_MAX_GLOBS)
		return -E2BIG;
	copy = strdup(glob);
	if (!copy)
		return -ENOMEM;
	v = realloc(w->globs, (w->n_globs + 1) * sizeof(*v));
	if (!v) {
		free(copy);
		return -ENOMEM;
	}
	w->globs = v;
	w->globs[w->n_globs++] = copy;
	return globs_changed(w);
}

int watch_remove_glob(struct watch *w, const char *glob)
{
	for (size_t i = 0; i < w->n_globs; i++) {
		if (strcmp(w->globs[i], glob))
			continue;
		free(w->globs[i]);
		memmove(&w->globs[i], &w->globs[i + 1], (w->n_globs - i - 1) * sizeof(*w->globs));
		w->n_globs--;
		return capture_set_globs(w->capture, w->globs, w->n_globs);
	}
	return -ENOENT;
}

char *const *watch_globs(const struct watch *w, size_t *ret_n)
{
	*ret_n = w->n_globs;
	return w->globs;
}

static void on_gone(void *ud, struct proc_rec *p)
{
	process_gone(ud, p);
}

/* Its history aged out: the symbols only it needed can go. */
static void on_freed(void *ud, uint32_t pid)
{
	struct watch *w = ud;

	if (w->symbolizer && !recorder_find(w->recorder, pid))
		symbolizer_forget_process(w->symbolizer, pid);
}

/* A process that execed since the last check: did the exec change its credentials (a
 * set-uid or set-gid program, file capabilities)? Then what it records from that exec
 * on is root's alone (control.c cuts non-root peers' snapshots there). */
static void check_cred(struct proc_rec *p)
{
	uint64_t exec_ns = p->exec_since_check_ns;
	struct proc_info now;

	if (!exec_ns)
		return;
	p->exec_since_check_ns = 0;
	if (p->cred_change_ns || proc_read_info(p->info.pid, &now) < 0 || now.start_time != p->info.start_time)
		return;
	if (proc_same_cred(&now.cred, &p->info.cred))
		return;
	p->cred_change_ns = exec_ns;
	log_notice("pid %u (%s) changed credentials at an exec (uid %u euid %u, was %u %u): what it records from "
		   "there on is root's alone",
		   p->info.pid, now.comm, now.cred.uid, now.cred.euid, p->info.cred.uid, p->info.cred.euid);
}

/* What is read of a process on the worker: its command line and its job and rank labels
 * (both reads wait for the process's mmap_lock, which it may hold as long as it likes). */
struct label_read {
	struct watch *w;
	uint32_t pid;
	uint64_t start_time;
	struct proc_labels labels;
	char *cmdline;
	size_t cmdline_len;
};

#define LABELS_BUDGET_NS (2 * NSEC_PER_SEC)

static int label_work(void *arg)
{
	struct label_read *lr = arg;
	struct proc_info info;
	int r = proc_read_labels(lr->pid, &lr->labels);

	(void)proc_read_cmdline(lr->pid, &lr->cmdline, &lr->cmdline_len);
	/* the environment read is this process's, not one that took its pid since */
	if (r >= 0 && (proc_read_info(lr->pid, &info) < 0 || info.start_time != lr->start_time))
		r = -ESRCH;
	return r;
}

static void label_done(void *arg, int r)
{
	struct label_read *lr = arg;
	struct proc_rec *p = recorder_find(lr->w->recorder, lr->pid);

	if (p && p->info.start_time == lr->start_time) {
		p->labels_pending = false;
		p->labels_read = true; /* tried once: a process that hides its environment has none */
		if (r >= 0) {
			p->labels = lr->labels;
			if (!p->cmdline) {
				p->cmdline = TAKE_PTR(lr->cmdline);
				p->cmdline_len = lr->cmdline_len;
			}
		}
	}
	free(lr->cmdline);
	free(lr);
}

static void read_labels(struct watch *w, struct proc_rec *p)
{
	struct label_read *lr;

	if (p->labels_read || p->labels_pending || !w->worker)
		return;
	lr = calloc(1, sizeof(*lr));
	if (!lr)
		return;
	*lr = (struct label_read){ .w = w, .pid = p->info.pid, .start_time = p->info.start_time };
	if (worker_submit(w->worker, LABELS_BUDGET_NS, label_work, label_done, lr) < 0) {
		free(lr); /* the queue is full: the next tick tries again */
		w->refresh_deferred++;
		return;
	}
	p->labels_pending = true;
}

/* Note the mappings of processes that execed or mapped code since the last tick, so
 * their frames resolve even after they exit: read on the worker, applied when it is done. */
static void refresh_maps(struct watch *w)
{
	for (size_t i = 0; i < recorder_count(w->recorder); i++) {
		struct proc_rec *p = recorder_at(w->recorder, i);
		int r;

		if (p->exit_ns)
			continue;
		capture_filter_touch(w->capture, p->info.pid);
		check_cred(p);
		read_labels(w, p);
		if (!p->maps_dirty || !w->symbolizer)
			continue;
		r = symbolizer_refresh_process_async(w->symbolizer, w->worker, p->info.pid);
		if (r == -EAGAIN) {
			w->refresh_deferred++; /* the queue is full: the next tick tries again */
			continue;
		}
		p->maps_dirty = false;
		if (r < 0 && r != -ENOENT && r != -ESRCH)
			log_debug("Failed to read the mappings of pid %u: %s", p->info.pid, strerror(-r));
	}
}

void watch_reads(const struct watch *w, struct watch_reads *ret)
{
	struct symbolizer_info si = {};

	if (w->symbolizer)
		symbolizer_info(w->symbolizer, &si);
	*ret = (struct watch_reads){
		.done = si.refreshes,
		.abandoned = si.refresh_abandoned,
		.deferred = w->refresh_deferred + si.refresh_rejected,
	};
}

void watch_tick(struct watch *w, uint64_t now)
{
	recorder_tick(w->recorder, now, on_gone, on_freed, w);
	refresh_maps(w);
}
