// SPDX-License-Identifier: GPL-2.0-only
/*
 * Metrics; see metrics.h. The text is made from counters kept live (timeacct.c, the
 * recorder's, the triggers', the store's, capture's drops): a walk over the watched
 * processes and their dispatch threads, no snapshot. Each family's samples are written
 * together, as the format requires.
 *
 * The file is written in the loop: a few hundred KiB at most into a local directory that
 * no watched process controls, with the daemon's own cost of making and writing it
 * counted in hostprof_metrics_write_cpu_seconds_total. It is made as METRICS_FILE.PID.tmp
 * (O_EXCL, O_NOFOLLOW, through the directory's fd; node_exporter reads only *.prom), fchmod 0644 (node_exporter runs as its
 * own user; the unit's UMask=0077 does not apply to an explicit mode) and renamed over
 * METRICS_FILE.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "glob_match.h"
#include "log.h"
#include "macro.h"
#include "metrics.h"
#include "procfs.h"
#include "promtext.h"
#include "recorder.h"
#include "settings.h"
#include "snapstore.h"
#include "snapsvc.h"
#include "timeacct.h"
#include "trigger.h"

struct metrics {
	struct metrics_deps deps;
	struct hp_buf text;
	uint64_t last_ns; /* the last write attempt */
	uint64_t writes, write_errors;
	uint64_t write_cpu_ns; /* making and writing the file, the daemon's CPU time */
	uint64_t last_write_ns; /* the last one alone */
	int last_error; /* logged once until a write works */
	bool missing_logged;
};

/* The labels of one process, and room for those of a series. */
#define PROC_LABELS 8
struct labels {
	struct prom_label l[PROC_LABELS + 4];
	size_t n;
	char pid[16], tid[16];
};

static const char *nonempty(const char *s)
{
	return s && s[0] ? s : NULL;
}

static void proc_labels(const struct proc_rec *p, struct labels *ret)
{
	snprintf(ret->pid, sizeof(ret->pid), "%u", p->info.pid);
	ret->l[0] = (struct prom_label){ "pid", ret->pid };
	ret->l[1] = (struct prom_label){ "comm", p->info.comm };
	ret->l[2] = (struct prom_label){ "job_id", nonempty(p->labels.job) }; /* "job" is Prometheus' own */
	ret->l[3] = (struct prom_label){ "rank", nonempty(p->labels.rank) };
	ret->l[4] = (struct prom_label){ "local_rank", nonempty(p->labels.local_rank) };
	ret->l[5] = (struct prom_label){ "world_size", nonempty(p->labels.world_size) };
	ret->l[6] = (struct prom_label){ "container", nonempty(p->labels.container) };
	ret->l[7] = (struct prom_label){ "pod", nonempty(p->labels.pod) };
	ret->n = PROC_LABELS;
}

/* A thread of the dispatch_threads globs (the report's dispatch threads). */
static bool is_dispatch(const struct metrics *m, const char *name)
{
	const struct settings *s = m->deps.settings;

	for (size_t i = 0; name && i < s->n_dispatch_threads; i++)
		if (thread_glob_match(s->dispatch_threads[i], name))
			return true;
	return false;
}

/* One series of a watched process or thread. */
struct series {
	const struct proc_rec *p;
	const struct acct_counts *c;
	uint32_t tid;
	const char *thread;
};

struct gather {
	struct series *s;
	size_t n, cap;
	struct acct_counts *counts; /* by process, then by thread: s[i].c points here */
	size_t n_procs, n_threads;
	uint64_t omitted_procs, omitted_threads;
};

static int gather_add(struct gather *g, const struct proc_rec *p, const struct acct_counts *c, uint32_t tid,
		      const char *thread)
{
	if (g->n == g->cap) {
		size_t cap = g->cap ? g->cap * 2 : 64;
		struct series *v = reallocarray(g->s, cap, sizeof(*v));

		if (!v)
			return -ENOMEM;
		g->s = v;
		g->cap = cap;
	}
	g->s[g->n++] = (struct series){ .p = p, .c = c, .tid = tid, .thread = thread };
	return 0;
}

/* Whether thread t of p is one of the dispatch threads metrics shows: those whose name
 * matches; where none does, its main thread, as the report falls back to (the dispatcher
 * of a GPU PyTorch job watched by --pid). any: whether one matches. */
static bool shown_thread(const struct metrics *m, const struct proc_rec *p, size_t t, bool any)
{
	return any ? is_dispatch(m, p->threads[t].comm) : p->threads[t].tid == p->info.pid;
}

static bool any_dispatch(const struct metrics *m, const struct proc_rec *p)
{
	for (size_t t = 0; t < p->n_threads; t++)
		if (is_dispatch(m, p->threads[t].comm))
			return true;
	return false;
}

static int gather(struct metrics *m, bool (*may_see)(void *ud, const struct proc_rec *p), void *ud,
		  struct gather *g)
{
	struct recorder *rec = m->deps.recorder;
	size_t n = recorder_count(rec), k = 0, want_procs = 0, want_threads = 0;
	int r;

	/* first the processes, then their dispatch threads; the counts of each in one array,
	 * sized to what there is (a request allocates what it answers, not the limits) */
	for (size_t i = 0; i < n && want_procs < METRICS_MAX_PROCS; i++) {
		const struct proc_rec *p = recorder_at(rec, i);
		bool any;

		if (may_see && !may_see(ud, p))
			continue;
		want_procs++;
		any = any_dispatch(m, p);
		for (size_t t = 0; t < p->n_threads && want_threads < METRICS_MAX_THREADS; t++)
			if (shown_thread(m, p, t, any) && timeacct_find(&p->acct, p->threads[t].tid))
				want_threads++;
	}
	g->counts = calloc(MAX(want_procs + want_threads, (size_t)1), sizeof(*g->counts));
	if (!g->counts)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		struct proc_rec *p = recorder_at(rec, i);

		if (may_see && !may_see(ud, p))
			continue;
		if (g->n_procs == want_procs) {
			g->omitted_procs++;
			continue;
		}
		timeacct_sum(&p->acct, &g->counts[k]);
		r = gather_add(g, p, &g->counts[k++], 0, NULL);
		if (r < 0)
			return r;
		g->n_procs++;
	}
	for (size_t i = 0, np = g->n_procs; i < np; i++) {
		const struct proc_rec *p = g->s[i].p;
		bool any = any_dispatch(m, p);

		for (size_t t = 0; t < p->n_threads; t++) {
			const struct thread_acct *ta;

			if (!shown_thread(m, p, t, any))
				continue;
			if (!(ta = timeacct_find(&p->acct, p->threads[t].tid)))
				continue;
			if (g->n_threads == want_threads) {
				g->omitted_threads++;
				continue;
			}
			g->counts[k] = ta->c;
			r = gather_add(g, p, &g->counts[k++], ta->tid, p->threads[t].comm);
			if (r < 0)
				return r;
			g->n_threads++;
		}
	}
	return 0;
}

static void gather_free(struct gather *g)
{
	free(g->s);
	free(g->counts);
}

/* The labels of series s, and one more (NULL name: none). */
static size_t series_labels(const struct series *s, struct labels *l, const char *name, const char *value)
{
	proc_labels(s->p, l);
	if (s->tid) {
		snprintf(l->tid, sizeof(l->tid), "%u", s->tid);
		l->l[l->n++] = (struct prom_label){ "tid", l->tid };
		l->l[l->n++] = (struct prom_label){ "thread", s->thread };
	}
	if (name)
		l->l[l->n++] = (struct prom_label){ name, value };
	return l->n;
}

/* The causes counted with what is captured now: an interference group's cause is only
 * shown where its records are captured (never an unmeasured 0). */
static bool cause_measured(const struct metrics *m, enum lost_cause c)
{
	unsigned on = m->deps.settings->interference & ~m->deps.interference_missing;

	switch (c) {
	case LOST_LOCK:
		return on & HP_INTF_LOCKS;
	case LOST_RECLAIM:
		return on & HP_INTF_RECLAIM;
	case LOST_IRQ:
		return on & HP_INTF_IRQ;
	default:
		return true;
	}
}

static int emit_lost(struct metrics *m, struct hp_buf *out, const struct gather *g, bool threads)
{
	const char *name =
		threads ? "hostprof_thread_lost_seconds_total" : "hostprof_process_lost_seconds_total";
	char v[32];
	int r;

	r = prom_family(
		out, name, "counter",
		threads ?
			"Time a dispatch thread could not run, by cause (the report's causes, counted live)" :
			"Time the threads of a watched process could not run, by cause (summed over its threads)");
	for (size_t i = 0; r >= 0 && i < g->n; i++) {
		const struct series *s = &g->s[i];

		if (!!s->tid != threads)
			continue;
		for (enum lost_cause c = 0; r >= 0 && c < LOST_MAX; c++) {
			struct labels l;

			if (!cause_measured(m, c))
				continue;
			series_labels(s, &l, "cause", timeacct_cause_key(c));
			r = prom_sample(out, name, l.l, l.n, prom_seconds(s->c->lost_ns[c], v));
		}
	}
	return r;
}

static int emit_count(struct hp_buf *out, const struct gather *g, bool threads, const char *name,
		      const char *help, size_t off)
{
	char v[32];
	int r = prom_family(out, name, "counter", help);

	for (size_t i = 0; r >= 0 && i < g->n; i++) {
		const struct series *s = &g->s[i];
		struct labels l;

		if (!!s->tid != threads)
			continue;
		series_labels(s, &l, NULL, NULL);
		r = prom_sample(out, name, l.l, l.n,
				prom_uint(*(const uint64_t *)((const char *)s->c + off), v));
	}
	return r;
}

static int emit_runq(struct hp_buf *out, const struct gather *g, bool threads)
{
	const char *base = threads ? "hostprof_thread_runqueue_latency_seconds" :
				     "hostprof_process_runqueue_latency_seconds";
	char name[80], v[32], le[32];
	int r = prom_family(
		out, base, "histogram",
		"Time from a wakeup or a preemption until the thread ran again (next_wait_ns of its switch-ins)");

	for (size_t i = 0; r >= 0 && i < g->n; i++) {
		const struct series *s = &g->s[i];
		uint64_t cum = 0;
		struct labels l;

		if (!!s->tid != threads)
			continue;
		snprintf(name, sizeof(name), "%s_bucket", base);
		for (size_t b = 0; r >= 0 && b < RUNQ_BUCKETS; b++) {
			cum += s->c->runq[b];
			if (b < RUNQ_BUCKETS - 1) {
				uint64_t ns = timeacct_runq_bounds[b];

				snprintf(le, sizeof(le), "%g", (double)ns / 1e9);
			} else {
				snprintf(le, sizeof(le), "+Inf");
			}
			series_labels(s, &l, "le", le);
			r = prom_sample(out, name, l.l, l.n, prom_uint(cum, v));
		}
		series_labels(s, &l, NULL, NULL);
		snprintf(name, sizeof(name), "%s_sum", base);
		if (r >= 0)
			r = prom_sample(out, name, l.l, l.n, prom_seconds(s->c->runq_ns, v));
		snprintf(name, sizeof(name), "%s_count", base);
		if (r >= 0)
			r = prom_sample(out, name, l.l, l.n, prom_uint(cum, v));
	}
	return r;
}

/* A process's own figures from the recorder. */
static int emit_proc_field(struct hp_buf *out, const struct gather *g, const char *name, const char *type,
			   const char *help, uint64_t (*get)(const struct proc_rec *p))
{
	char v[32];
	int r = prom_family(out, name, type, help);

	for (size_t i = 0; r >= 0 && i < g->n; i++) {
		struct labels l;

		if (g->s[i].tid)
			continue;
		series_labels(&g->s[i], &l, NULL, NULL);
		r = prom_sample(out, name, l.l, l.n, prom_uint(get(g->s[i].p), v));
	}
	return r;
}

static uint64_t get_events(const struct proc_rec *p)
{
	return p->events;
}

static uint64_t get_evicted(const struct proc_rec *p)
{
	return p->evicted;
}

static uint64_t get_bytes(const struct proc_rec *p)
{
	return p->bytes;
}

static uint64_t get_exited(const struct proc_rec *p)
{
	return p->exit_ns != 0;
}

static int emit_one(struct hp_buf *out, const char *name, const char *type, const char *help,
		    const char *value)
{
	int r = prom_family(out, name, type, help);

	return r < 0 ? r : prom_sample(out, name, NULL, 0, value);
}

static uint64_t tv_ns(const struct timeval *tv)
{
	return (uint64_t)tv->tv_sec * NSEC_PER_SEC + (uint64_t)tv->tv_usec * NSEC_PER_USEC;
}

static int emit_daemon(struct metrics *m, struct hp_buf *out, const struct gather *g)
{
	const struct metrics_deps *d = &m->deps;
	struct drop_count drops[HP_DROP_CAUSES];
	struct rusage self = {}, children = {};
	uint64_t saved, pruned;
	size_t nd, nt;
	char v[32];
	int r;

	r = prom_family(out, "hostprof_info", "gauge", "hostprofd's version");
	if (r >= 0)
		r = prom_sample(out, "hostprof_info",
				(struct prom_label[]){ { "version", HOSTPROF_VERSION } }, 1, "1");
	if (r >= 0)
		r = emit_one(out, "hostprof_events_total", "counter", "Records received from the kernel",
			     prom_uint(recorder_events(d->recorder), v));
	if (r >= 0)
		r = emit_one(out, "hostprof_events_refused_total", "counter",
			     "Records that did not parse, refused",
			     prom_uint(recorder_refused(d->recorder), v));
	nd = snapsvc_drops(d->snapsvc, drops);
	if (r >= 0)
		r = prom_family(out, "hostprof_drops_total", "counter", "Records and state lost, by cause");
	for (size_t i = 0; r >= 0 && i < nd; i++)
		r = prom_sample(out, "hostprof_drops_total",
				(struct prom_label[]){ { "cause", drops[i].cause } }, 1,
				prom_uint(drops[i].count, v));
	if (r >= 0)
		r = emit_one(out, "hostprof_recorder_bytes", "gauge",
			     "Flight recorder memory in use, all processes",
			     prom_uint(recorder_bytes(d->recorder), v));
	if (r >= 0)
		r = emit_one(out, "hostprof_recorder_limit_bytes", "gauge",
			     "Flight recorder memory limit (memory_mb)",
			     prom_uint(recorder_limits(d->recorder)->memory_bytes, v));
	nt = triggers_count(d->triggers);
	for (int pass = 0; pass < 2; pass++) {
		const char *name =
			pass ? "hostprof_trigger_suppressed_total" : "hostprof_trigger_fired_total";

		if (r >= 0)
			r = prom_family(out, name, "counter",
					pass ? "Trigger firings within the cooldown, no snapshot" :
					       "Trigger firings that asked for an automatic snapshot");
		for (size_t i = 0; r >= 0 && i < nt; i++) {
			struct trigger_stat ts;

			triggers_stat(d->triggers, i, &ts);
			r = prom_sample(out, name,
					(struct prom_label[]){ { "trigger", ts.def->name },
							       { "kind", trigger_kind_name(ts.def->kind) } },
					2, prom_uint(pass ? ts.suppressed : ts.fired, v));
		}
	}
	if (r >= 0)
		r = emit_one(out, "hostprof_triggers_dropped_total", "counter",
			     "Trigger firings dropped: too many snapshots waited for their after",
			     prom_uint(triggers_dropped(d->triggers), v));
	snapstore_counts(d->snapstore, &saved, &pruned);
	if (r >= 0)
		r = emit_one(out, "hostprof_snapshots_saved_total", "counter", "Automatic snapshots saved",
			     prom_uint(saved, v));
	if (r >= 0)
		r = emit_one(out, "hostprof_snapshots_pruned_total", "counter",
			     "Automatic snapshots removed to keep max_snapshots and max_snapshot_mb",
			     prom_uint(pruned, v));
	if (r >= 0)
		r = emit_one(out, "hostprof_snapshots_stored", "gauge",
			     "Automatic snapshots in the snapshot directory",
			     prom_uint(snapstore_count(d->snapstore), v));
	(void)getrusage(RUSAGE_SELF, &self);
	(void)getrusage(RUSAGE_CHILDREN, &children);
	if (r >= 0)
		r = prom_family(
			out, "hostprof_daemon_cpu_seconds_total", "counter",
			"hostprofd's CPU time (its snapshot jobs: hostprof_snapshot_jobs_cpu_seconds_total)");
	if (r >= 0)
		r = prom_sample(out, "hostprof_daemon_cpu_seconds_total",
				(struct prom_label[]){ { "mode", "user" } }, 1,
				prom_seconds(tv_ns(&self.ru_utime), v));
	if (r >= 0)
		r = prom_sample(out, "hostprof_daemon_cpu_seconds_total",
				(struct prom_label[]){ { "mode", "system" } }, 1,
				prom_seconds(tv_ns(&self.ru_stime), v));
	if (r >= 0)
		r = emit_one(out, "hostprof_snapshot_jobs_cpu_seconds_total", "counter",
			     "CPU time of the snapshot jobs that have finished (forked children)",
			     prom_seconds(tv_ns(&children.ru_utime) + tv_ns(&children.ru_stime), v));
	if (r >= 0)
		r = emit_one(out, "hostprof_daemon_resident_bytes", "gauge", "hostprofd's resident set",
			     prom_uint(proc_self_rss(), v));
	if (r >= 0)
		r = emit_one(out, "hostprof_watched_processes", "gauge", "Processes watched now (alive)",
			     prom_uint(recorder_live_count(d->recorder), v));
	if (r >= 0)
		r = prom_family(out, "hostprof_metrics_omitted", "gauge",
				"Series left out of this text by its bounds, processes and dispatch threads");
	if (r >= 0)
		r = prom_sample(out, "hostprof_metrics_omitted",
				(struct prom_label[]){ { "what", "processes" } }, 1,
				prom_uint(g->omitted_procs, v));
	if (r >= 0)
		r = prom_sample(out, "hostprof_metrics_omitted",
				(struct prom_label[]){ { "what", "threads" } }, 1,
				prom_uint(g->omitted_threads, v));
	if (r >= 0)
		r = emit_one(out, "hostprof_metrics_writes_total", "counter", "Metrics files written",
			     prom_uint(m->writes, v));
	if (r >= 0)
		r = emit_one(out, "hostprof_metrics_write_errors_total", "counter",
			     "Metrics files that could not be written", prom_uint(m->write_errors, v));
	if (r >= 0)
		r = emit_one(out, "hostprof_metrics_write_cpu_seconds_total", "counter",
			     "hostprofd's CPU time making and writing the metrics file",
			     prom_seconds(m->write_cpu_ns, v));
	return r;
}

int metrics_format(struct metrics *m, bool (*may_see)(void *ud, const struct proc_rec *p), void *ud,
		   struct hp_buf *out)
{
	unsigned on = m->deps.settings->interference & ~m->deps.interference_missing;
	struct gather g = {};
	int r = gather(m, may_see, ud, &g);

	for (int threads = 0; r >= 0 && threads < 2; threads++) {
		r = emit_lost(m, out, &g, threads);
		if (r >= 0)
			r = emit_count(out, &g, threads,
				       threads ? "hostprof_thread_preemptions_total" :
						 "hostprof_process_preemptions_total",
				       "Switched out while runnable (R, R+)",
				       offsetof(struct acct_counts, preemptions));
		if (r >= 0)
			r = emit_runq(out, &g, threads);
		if (r >= 0 && (on & HP_INTF_FAULTS)) {
			r = emit_count(out, &g, threads,
				       threads ? "hostprof_thread_major_faults_total" :
						 "hostprof_process_major_faults_total",
				       "Page faults that needed I/O",
				       offsetof(struct acct_counts, major_faults));
			if (r >= 0)
				r = emit_count(out, &g, threads,
					       threads ? "hostprof_thread_minor_faults_total" :
							 "hostprof_process_minor_faults_total",
					       "Page faults resolved without I/O",
					       offsetof(struct acct_counts, minor_faults));
		}
	}
	if (r >= 0)
		r = emit_proc_field(out, &g, "hostprof_process_events_total", "counter",
				    "Records filed with the process", get_events);
	if (r >= 0)
		r = emit_proc_field(out, &g, "hostprof_process_evicted_events_total", "counter",
				    "Records dropped for space (buffer_mb, memory_mb), not for age",
				    get_evicted);
	if (r >= 0)
		r = emit_proc_field(out, &g, "hostprof_process_recorder_bytes", "gauge",
				    "Flight recorder memory of the process", get_bytes);
	if (r >= 0)
		r = emit_proc_field(out, &g, "hostprof_process_exited", "gauge",
				    "1: it exited or was unwatched, its history is kept for the window",
				    get_exited);
	if (r >= 0)
		r = emit_daemon(m, out, &g);
	gather_free(&g);
	return r;
}

static uint64_t thread_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * NSEC_PER_SEC + ts.tv_nsec;
}

static int write_all(int fd, const uint8_t *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n);

		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += w;
		n -= w;
	}
	return 0;
}

static int write_file(const char *dir, const struct hp_buf *text)
{
	_cleanup_close_ int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	_cleanup_close_ int fd = -1;
	char tmp[64];
	int r;

	if (dfd < 0)
		return -errno;
	/* the daemon's own temporary name: two daemons on one directory (tests) never
	 * rename each other's half-written file */
	snprintf(tmp, sizeof(tmp), "%s.%d.tmp", METRICS_FILE, (int)getpid());
	if (unlinkat(dfd, tmp, 0) < 0 && errno != ENOENT)
		return -errno;
	fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	r = fchmod(fd, 0644) < 0 ? -errno : 0;
	if (r >= 0)
		r = write_all(fd, text->data + text->off, hp_buf_pending(text));
	if (r >= 0 && close(TAKE_FD(fd)) < 0)
		r = -errno;
	if (r >= 0 && renameat(dfd, tmp, dfd, METRICS_FILE) < 0)
		r = -errno;
	if (r < 0)
		(void)unlinkat(dfd, tmp, 0);
	return r;
}

int metrics_write(struct metrics *m)
{
	const char *dir = m->deps.settings->metrics_dir;
	uint64_t t0 = thread_cpu_ns();
	struct stat st;
	int r;

	if (!dir || !dir[0])
		return -ENOENT;
	if (stat(dir, &st) < 0)
		return -errno;
	if (!S_ISDIR(st.st_mode))
		return -ENOTDIR;
	m->text.off = m->text.len = 0;
	r = metrics_format(m, NULL, NULL, &m->text);
	if (r >= 0)
		r = write_file(dir, &m->text);
	if (r >= 0)
		m->writes++;
	else
		m->write_errors++;
	m->last_write_ns = thread_cpu_ns() - t0;
	m->write_cpu_ns += m->last_write_ns;
	return r;
}

void metrics_tick(struct metrics *m, uint64_t now)
{
	const struct settings *s;
	int r;

	if (!m)
		return;
	s = m->deps.settings;
	if (!s->metrics_dir || !s->metrics_dir[0])
		return;
	if (m->last_ns && now - m->last_ns < s->metrics_interval_ns)
		return;
	m->last_ns = now;
	r = metrics_write(m);
	if (r == -ENOENT) {
		/* by default only where node_exporter's directory exists */
		if (!m->missing_logged)
			log_info("No directory %s: no metrics file (metrics_dir)", s->metrics_dir);
		m->missing_logged = true;
		return;
	}
	m->missing_logged = false;
	if (r >= 0 && m->writes == 1)
		log_info("Writing the metrics to %s/%s every %llu s", s->metrics_dir, METRICS_FILE,
			 (unsigned long long)(s->metrics_interval_ns / NSEC_PER_SEC));
	if (r < 0 && r != m->last_error)
		log_warning_errno(r, "Failed to write %s/%s: %m, ignoring", s->metrics_dir, METRICS_FILE);
	else if (r >= 0 && m->last_error)
		log_info("Wrote %s/%s again", s->metrics_dir, METRICS_FILE);
	m->last_error = r < 0 ? r : 0;
}

struct metrics *metrics_new(const struct metrics_deps *deps)
{
	struct metrics *m = calloc(1, sizeof(*m));

	if (!m)
		return NULL;
	m->deps = *deps;
	return m;
}

void metrics_free(struct metrics *m)
{
	if (!m)
		return;
	hp_buf_free(&m->text);
	free(m);
}
