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
#include "python.h"
#include "symbolize.h"
#include "watch.h"
#include "worker.h"

struct watch {
	struct capture *capture;
	struct recorder *recorder;
	struct symbolizer *symbolizer;
	struct worker *worker;
	uint64_t refresh_deferred;
	uint64_t new_since; /* watch_tick_new: processes watched since (less a second) */
	bool python; /* walk CPython processes' Python stacks in the kernel */
	bool python_gc; /* and record their garbage collections (USDT) */
	struct py_names *py_names; /* their names, read while they live; or NULL */
	uint64_t made_room; /* processes of users unwatched to make room for root's */
	char **globs;
	size_t n_globs;
};

static void on_exited(void *ud, struct proc_rec *p);
static void on_refused(void *ud, uint32_t pid, uint32_t uid);

struct watch *watch_new(struct capture *c, struct recorder *rec, struct symbolizer *sym, struct worker *worker)
{
	struct watch *w = calloc(1, sizeof(*w));

	if (!w)
		return NULL;
	w->capture = c;
	w->recorder = rec;
	w->symbolizer = sym;
	w->worker = worker;
	recorder_set_hooks(rec, &(struct recorder_hooks){ .gone = on_exited, .refused = on_refused, .ud = w });
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
	recorder_set_hooks(w->recorder, &(struct recorder_hooks){});
	free_globs(w);
	free(w);
}

/* Gone or unwatched: keep its syscall histograms with its history. */
static void save_histograms(struct watch *w, struct proc_rec *p)
{
	uint32_t pid = p->info.pid;
	int r;

	r = capture_histograms(w->capture, pid, &p->final_hists, &p->n_final_hists);
	if (r < 0)
		log_warning_errno(r, "Failed to save the syscall histograms of pid %u: %m, ignoring", pid);
	p->hists_saved = true;
	capture_forget_histograms(w->capture, pid);
}

/* ... and stop watching its pid in the kernel (unless kernel_told: done already), unless
 * the pid names a new process that is watched now. */
static void process_gone(struct watch *w, struct proc_rec *p, bool kernel_told)
{
	uint32_t pid = p->info.pid;
	int r;

	save_histograms(w, p);
	if (recorder_find_live(w->recorder, pid))
		return;
	r = kernel_told ? 0 : capture_unwatch(w->capture, pid);
	if (r < 0)
		log_warning_errno(r, "Failed to stop watching pid %u: %m, ignoring", pid);
	if (p->py_walked)
		capture_python_clear(w->capture, pid);
	p->py_walked = false;
}

/* The watched map is full: a process of the user with the most that the kernel started
 * watching by itself makes room. false: there is none. */
static bool make_room_for_root(struct watch *w)
{
	struct proc_rec *v = recorder_quota_victim(w->recorder);

	if (!v)
		return false;
	log_notice("the watched map is full: no longer watching pid %u (%s) of uid %u, to make room for root's",
		   v->info.pid, v->info.comm, v->info.cred.uid);
	watch_stop(w, v);
	w->made_room++;
	return true;
}

int watch_pid(struct watch *w, uint32_t pid, uint32_t reason)
{
	struct proc_rec *p = recorder_find_live(w->recorder, pid);
	struct proc_info now;
	int r;

	if (p) {
		if (proc_read_info(pid, &now) < 0 || now.start_time == p->info.start_time)
			return 0;
		/* the pid names a new process, and the drain has not seen the old one's exit yet */
		recorder_gone(w->recorder, p, now_boottime_ns());
		process_gone(w, p, false);
	}
	r = recorder_watch(w->recorder, pid, reason, 0, now_boottime_ns(), &p);
	if (r < 0)
		return r;
	r = capture_watch(w->capture, pid, reason, 0);
	/* the map holds what the kernel started watching too: a user's fork bomb fills it */
	while (r == -E2BIG && make_room_for_root(w))
		r = capture_watch(w->capture, pid, reason, 0);
	if (r < 0) {
		recorder_stop(w->recorder, p, now_boottime_ns());
		return r;
	}
	log_info("watching pid %u (%s): %s", pid, p->info.comm, p->why);
	return 0;
}

/* The drain saw it exit: the kernel stopped watching its pid already, and a new process
 * with that pid may be watched in its place. */
static void on_exited(void *ud, struct proc_rec *p)
{
	struct watch *w = ud;

	save_histograms(w, p);
	capture_release_filter(w->capture, p->info.pid);
}

/* The kernel started watching a process whose user has its user_watched already. */
static void on_refused(void *ud, uint32_t pid, uint32_t uid)
{
	struct watch *w = ud;
	int r;

	r = capture_unwatch(w->capture, pid);
	if (r < 0)
		log_warning_errno(r, "Failed to stop watching pid %u: %m, ignoring", pid);
	log_debug("not watching pid %u: uid %u watches its user_watched processes already", pid, uid);
}

void watch_stop(struct watch *w, struct proc_rec *p)
{
	int r;

	/* the kernel first: what it wrote of the process is older than the stop (but for a
	 * program writing its record as it stopped), so it stays the stopped process's */
	r = capture_unwatch(w->capture, p->info.pid);
	if (r < 0)
		log_warning_errno(r, "Failed to stop watching pid %u: %m, ignoring", p->info.pid);
	recorder_stop(w->recorder, p, now_boottime_ns());
	process_gone(w, p, true);
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
	process_gone(ud, p, false);
}

/* Its history aged out: the symbols only it needed can go. */
static void on_freed(void *ud, uint32_t pid)
{
	struct watch *w = ud;

	if (w->symbolizer && !recorder_find(w->recorder, pid))
		symbolizer_forget_process(w->symbolizer, pid);
	if (w->py_names && !recorder_find(w->recorder, pid))
		py_names_forget(w->py_names, pid);
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

/*
 * Is a watched process CPython, and can the kernel walk its Python stacks? Asked on the
 * worker once per exec (discovery reads its maps, ELF files and memory); the answer
 * fills its py_procs entry, the gate of the BPF walk, in the loop.
 */
struct py_check {
	struct watch *w;
	uint32_t pid;
	uint64_t start_time;
	struct hp_py_proc info;
	char why[256];
	char binary[256]; /* the file with _PyRuntime, for the GC probes */
};

#define PY_CHECK_BUDGET_NS (2 * NSEC_PER_SEC)
/* A check that ran out of its budget (on the worker, or queued behind other reads there:
 * a job whose DataLoader workers fork at once queues the mappings of libtorch for each) is
 * asked again at the next tick, this many times in all. */
#define PY_CHECK_TRIES 4

static int py_check_work(void *arg)
{
	struct py_check *pc = arg;
	struct py_proc *pp = py_proc_open(pc->pid);
	struct proc_info info;
	int r;

	if (!pp)
		return -errno;
	r = py_proc_kind(pp, NULL) ? py_proc_bpf_info(pp, &pc->info, pc->why, sizeof(pc->why)) : -ENOENT;
	snprintf(pc->binary, sizeof(pc->binary), "%s", py_proc_binary(pp));
	py_proc_free(pp);
	if (r >= 0 && (proc_read_info(pc->pid, &info) < 0 || info.start_time != pc->start_time))
		r = -ESRCH;
	return r;
}

static void py_check_done(void *arg, int r)
{
	struct py_check *pc = arg;
	struct proc_rec *p = recorder_find_live(pc->w->recorder, pc->pid);

	if (p && p->info.start_time == pc->start_time) {
		p->py_pending = false;
		if (r == -ETIME && ++p->py_tries < PY_CHECK_TRIES) {
			log_info("pid %u: whether it is CPython was not read within %llu s on the worker; asking again",
				 pc->pid, (unsigned long long)(PY_CHECK_BUDGET_NS / NSEC_PER_SEC));
			free(pc);
			return;
		}
		p->py_checked = true;
		if (r >= 0) {
			r = capture_python_set(pc->w->capture, pc->pid, &pc->info);
			if (r < 0)
				log_warning_errno(r, "Failed to walk the Python stacks of pid %u: %m", pc->pid);
			else
				log_info("pid %u is CPython: its Python stacks are walked in samples and off-CPU",
					 pc->pid);
			p->py_walked = r >= 0;
			if (r >= 0 && pc->w->python_gc) {
				int g = capture_python_gc(pc->w->capture, pc->pid, pc->binary);

				if (g < 0)
					log_info("pid %u: no garbage-collection pauses (the USDT probes of %s: %s)",
						 pc->pid, pc->binary, strerror(-g));
				else
					log_info("pid %u: its garbage-collection pauses are recorded (USDT in %s)", pc->pid,
						 pc->binary);
			}
			if (r >= 0 && pc->w->py_names && py_names_watch(pc->w->py_names, pc->pid, pc->start_time) < 0)
				log_warning("Out of memory for the Python names of pid %u", pc->pid);
		} else if (r == -EPROTO) {
			log_info("pid %u: %s", pc->pid, pc->why);
		} else if (r == -ETIME) {
			log_warning("pid %u: whether it is CPython was not read within %llu s, %u times: its Python "
				    "stacks are not walked, ignoring",
				    pc->pid, (unsigned long long)(PY_CHECK_BUDGET_NS / NSEC_PER_SEC), PY_CHECK_TRIES);
		}
	}
	free(pc);
}

static void check_python(struct watch *w, struct proc_rec *p)
{
	struct py_check *pc;

	if (!w->python || p->py_checked || p->py_pending || !w->worker)
		return;
	if (p->py_walked) {
		/* it execed: ask again */
		capture_python_clear(w->capture, p->info.pid);
		p->py_walked = false;
	}
	pc = calloc(1, sizeof(*pc));
	if (!pc)
		return;
	pc->w = w;
	pc->pid = p->info.pid;
	pc->start_time = p->info.start_time;
	if (worker_submit(w->worker, PY_CHECK_BUDGET_NS, py_check_work, py_check_done, pc) < 0) {
		free(pc);
		w->refresh_deferred++;
		return;
	}
	p->py_pending = true;
}

void watch_set_py_names(struct watch *w, struct py_names *names)
{
	w->py_names = names;
}

void watch_set_python(struct watch *w, bool on, bool gc)
{
	bool was = w->python_gc;

	w->python = on;
	w->python_gc = on && gc;
	if (w->python_gc != was) /* ask again: (de)tach the probes */
		on = false;
	for (size_t i = 0; !on && i < recorder_count(w->recorder); i++) {
		struct proc_rec *p = recorder_at(w->recorder, i);

		if (p->py_walked)
			capture_python_clear(w->capture, p->info.pid);
		p->py_walked = p->py_checked = false;
	}
}

static void refresh_one(struct watch *w, struct proc_rec *p)
{
	int r;

	if (!p->maps_dirty || !w->symbolizer)
		return;
	r = symbolizer_refresh_process_async(w->symbolizer, w->worker, p->info.pid);
	if (r == -EAGAIN) {
		w->refresh_deferred++; /* the queue is full: the next tick tries again */
		return;
	}
	p->maps_dirty = false;
	if (r < 0 && r != -ENOENT && r != -ESRCH)
		log_debug("Failed to read the mappings of pid %u: %s", p->info.pid, strerror(-r));
}

/* Note the mappings of processes that execed or mapped code since the last tick, so
 * their frames resolve even after they exit: read on the worker, applied when it is done. */
static void refresh_maps(struct watch *w)
{
	for (size_t i = 0; i < recorder_count(w->recorder); i++) {
		struct proc_rec *p = recorder_at(w->recorder, i);
		uint32_t changes;

		if (p->exit_ns)
			continue;
		capture_filter_touch(w->capture, p->info.pid);
		check_cred(p);
		/* syscalls = blocking has no mmap records: the kernel counts mapping changes */
		if (capture_maps_changes(w->capture, p->info.pid, &changes) >= 0 && changes != p->maps_changes) {
			p->maps_changes = changes;
			p->maps_dirty = true;
		}
		read_labels(w, p);
		check_python(w, p);
		refresh_one(w, p);
	}
}

/*
 * Every tick (100 ms), not every second: the mappings of the processes watched lately
 * (in the recorder's order, the newest last), so that the unwinder knows their code from
 * their first samples on.
 */
void watch_tick_new(struct watch *w, uint64_t now)
{
	for (size_t i = recorder_count(w->recorder); i-- > 0;) {
		struct proc_rec *p = recorder_at(w->recorder, i);

		if (p->watch_ns + NSEC_PER_SEC < w->new_since)
			break;
		if (!p->exit_ns)
			refresh_one(w, p);
	}
	w->new_since = now;
}

void watch_reads(const struct watch *w, struct watch_reads *ret)
{
	struct symbolizer_info si = {};

	if (w->symbolizer)
		symbolizer_info(w->symbolizer, &si);
	*ret = (struct watch_reads){
		.made_room = w->made_room,
		.symbolizer_bytes = si.bytes,
		.dwarf_bytes = si.dwarf_preopened_bytes,
		.dwarf_lines = si.dwarf_lines,
		.dwarf_lines_dropped = si.dwarf_learn_dropped,
		.symbolizer_limit = si.budget,
		.over_budget = si.over_budget,
		.done = si.refreshes,
		.abandoned = si.refresh_abandoned,
		.deferred = w->refresh_deferred + si.refresh_rejected,
	};
}

bool watch_python_stats(const struct watch *w, struct watch_python *ret)
{
	uint64_t st[HP_PYSTAT_MAX] = {};
	struct py_names_stats ns = {};

	*ret = (struct watch_python){};
	if (!w->python)
		return false;
	(void)capture_python_stats(w->capture, st);
	if (w->py_names)
		py_names_get_stats(w->py_names, &ns);
	for (size_t i = 0; i < recorder_count(w->recorder); i++)
		ret->processes += recorder_at(w->recorder, i)->py_walked;
	ret->walks = st[HP_PYSTAT_WALKS];
	ret->no_tstate = st[HP_PYSTAT_NO_TSTATE];
	ret->read_failures = st[HP_PYSTAT_READ_FAIL];
	ret->scans = st[HP_PYSTAT_SCANS];
	ret->offcpu_walks = st[HP_PYSTAT_OFFCPU];
	ret->sample_ns = st[HP_PYSTAT_NS_SAMPLE];
	ret->offcpu_ns = st[HP_PYSTAT_NS_OFFCPU];
	ret->checked = ns.checked;
	ret->unreadable = ns.unreadable;
	ret->dropped = ns.dropped;
	return true;
}

_Static_assert(UNWIND_STOP_MAX <= WATCH_UNWIND_STOPS, "WATCH_UNWIND_STOPS");

void watch_unwind(const struct watch *w, Hostprof__UnwindStats *ret, Hostprof__Drop *drops, Hostprof__Drop **ptrs)
{
	struct symbolizer_info si = {};

	if (w->symbolizer)
		symbolizer_info(w->symbolizer, &si);
	symbolizer_unwind_stats(&si, ret, drops, ptrs);
}

void watch_tick(struct watch *w, uint64_t now)
{
	recorder_tick(w->recorder, now, on_gone, on_freed, w);
	refresh_maps(w);
	if (w->py_names && w->worker && py_names_flush(w->py_names, w->worker) == -EAGAIN)
		w->refresh_deferred++;
}
