// SPDX-License-Identifier: GPL-2.0-only
/*
 * Triggers: watch the record stream and, when one fires, save the window around it
 * (before, after) to the snapshot directory by itself, marked, logged to the journal
 * with structured fields, rate-limited per process and trigger by a cooldown.
 *
 * On the drain path a trigger costs a type test and a comparison per record: the
 * kernel already computed each switch-in's runqueue wait, and the durations of
 * off-CPU intervals and syscalls. Names are matched only for records past a threshold.
 * The snapshot itself is built once `after` has passed, from the timer.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <systemd/sd-journal.h>
#include <time.h>

#include "export.h"
#include "formats.h"
#include "glob.h"
#include "hps.h"
#include "log.h"
#include "macro.h"
#include "framing.h"
#include "snapstore.h"
#include "snapsvc.h"
#include "syscall_names.h"
#include "trigger.h"
#include "walltime.h"

/* journalctl MESSAGE_ID=... finds every automatic snapshot */
#define TRIGGER_MESSAGE_ID "c3a1f0e27d4b4b8e9a52d6f1e0b7a913"
#define MAX_PENDING 64
#define MAX_COOLDOWNS 256
#define MAX_MIGRATORS 256

struct cooldown {
	uint32_t pid;
	uint64_t start_time; /* a reused pid is another process */
	uint64_t last_ns;
};

struct migrator {
	uint32_t tid;
	uint64_t window_start;
	uint32_t moves;
};

struct trig {
	struct trigger_def def;
	struct hp_glob glob;
	struct cooldown cooldowns[MAX_COOLDOWNS];
	size_t n_cooldowns;
	struct migrator migrators[MAX_MIGRATORS];
	uint64_t fired, suppressed;
};

struct pending {
	struct trigger_def def; /* as it fired: a reload may reorder or drop the triggers */
	uint32_t pid, tid;
	uint64_t fire_ns, due_ns, realtime_ns;
	uint32_t culprit_pid;
	char culprit_comm[HP_COMM_LEN];
	char detail[192];
	uint64_t python_instant; /* its Python stacks, read as it fired (snapsvc); 0: none */
};

struct triggers {
	struct recorder *recorder;
	struct snapsvc *snapsvc;
	struct snapstore *snapstore;
	unsigned formats; /* FMT_* of the files each snapshot gets */
	struct trig t[HOSTPROF_MAX_TRIGGERS];
	size_t n;
	struct pending pending[MAX_PENDING];
	size_t n_pending;
	uint64_t dropped; /* fired while MAX_PENDING were waiting */
};

struct triggers *triggers_new(struct recorder *rec, struct snapsvc *svc, struct snapstore *st)
{
	struct triggers *ts = calloc(1, sizeof(struct triggers));

	if (!ts)
		return NULL;
	ts->recorder = rec;
	ts->snapsvc = svc;
	ts->snapstore = st;
	return ts;
}

void triggers_free(struct triggers *ts)
{
	free(ts);
}

int triggers_configure(struct triggers *ts, const struct trigger_def *defs, size_t n, unsigned formats)
{
	struct triggers fresh = {
		.recorder = ts->recorder,
		.snapsvc = ts->snapsvc,
		.snapstore = ts->snapstore,
		.formats = formats,
	};
	int r;

	if (n > HOSTPROF_MAX_TRIGGERS)
		return -E2BIG;
	for (size_t i = 0; i < n; i++) {
		fresh.t[i].def = defs[i];
		r = thread_glob_compile(defs[i].threads, &fresh.t[i].glob);
		if (r < 0)
			return r;
		/* keep the cooldowns of a trigger that stays */
		for (size_t k = 0; k < ts->n; k++)
			if (!strcmp(ts->t[k].def.name, defs[i].name)) {
				memcpy(fresh.t[i].cooldowns, ts->t[k].cooldowns, sizeof(fresh.t[i].cooldowns));
				fresh.t[i].n_cooldowns = ts->t[k].n_cooldowns;
				fresh.t[i].fired = ts->t[k].fired;
				fresh.t[i].suppressed = ts->t[k].suppressed;
			}
	}
	fresh.n = n;
	/* snapshots waiting for their `after` are taken still */
	memcpy(fresh.pending, ts->pending, sizeof(fresh.pending));
	fresh.n_pending = ts->n_pending;
	fresh.dropped = ts->dropped;
	*ts = fresh;
	return 0;
}

static uint64_t realtime_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return ts.tv_sec * NSEC_PER_SEC + ts.tv_nsec;
}

/* The cooldown of (trigger, process) allows one more now; it starts now. */
static bool cooldown_pass(struct trig *t, const struct proc_rec *p, uint64_t now)
{
	struct cooldown *c = NULL, *oldest = &t->cooldowns[0];

	for (size_t i = 0; i < t->n_cooldowns; i++) {
		if (t->cooldowns[i].pid == p->info.pid && t->cooldowns[i].start_time == p->info.start_time)
			c = &t->cooldowns[i];
		if (t->cooldowns[i].last_ns < oldest->last_ns)
			oldest = &t->cooldowns[i];
	}
	if (c && now - c->last_ns < t->def.cooldown_ns)
		return false;
	if (!c)
		c = t->n_cooldowns < MAX_COOLDOWNS ? &t->cooldowns[t->n_cooldowns++] : oldest;
	*c = (struct cooldown){ .pid = p->info.pid, .start_time = p->info.start_time, .last_ns = now };
	return true;
}

static void fire(struct triggers *ts, size_t ti, const struct proc_rec *p, uint32_t tid, uint64_t ts_ns,
		 uint32_t culprit_pid, const char *culprit_comm, const char *fmt, ...) __attribute__((format(printf, 8, 9)));

static void fire(struct triggers *ts, size_t ti, const struct proc_rec *p, uint32_t tid, uint64_t ts_ns,
		 uint32_t culprit_pid, const char *culprit_comm, const char *fmt, ...)
{
	struct trig *t = &ts->t[ti];
	struct pending *pd;
	va_list ap;

	if (!cooldown_pass(t, p, ts_ns)) {
		t->suppressed++;
		return;
	}
	if (ts->n_pending >= MAX_PENDING) {
		ts->dropped++;
		return;
	}
	pd = &ts->pending[ts->n_pending++];
	*pd = (struct pending){
		.def = t->def,
		.pid = p->info.pid,
		.tid = tid,
		.fire_ns = ts_ns,
		.due_ns = ts_ns + t->def.after_ns,
		.realtime_ns = realtime_now(),
		.culprit_pid = culprit_pid,
	};
	snprintf(pd->culprit_comm, sizeof(pd->culprit_comm), "%s", culprit_comm ? culprit_comm : "");
	va_start(ap, fmt);
	vsnprintf(pd->detail, sizeof(pd->detail), fmt, ap);
	va_end(ap);
	/* every thread's Python stack as it is now, not `after` from now when the snapshot is built */
	if (snapsvc_python_instant(ts->snapsvc, p->info.pid, &pd->python_instant) < 0)
		pd->python_instant = 0;
	t->fired++;
	log_notice("trigger %s fired for pid %u (%s): %s", t->def.name, p->info.pid, p->info.comm, pd->detail);
}

struct last_out {
	uint32_t tid;
	uint64_t ts;
	const struct hp_switch *best;
};

static void note_switch_out(void *ud, const struct hp_hdr *h)
{
	struct last_out *lo = ud;
	const struct hp_switch *e = (const void *)h;

	if (h->type == HP_EV_SWITCH && e->prev_tid == lo->tid && h->ts <= lo->ts &&
	    (!lo->best || h->ts > lo->best->hdr.ts))
		lo->best = e;
}

/* The switch that put tid off the CPU last before ts: who took it. */
static const struct hp_switch *last_switch_out(const struct proc_rec *p, uint32_t tid, uint64_t ts)
{
	struct last_out lo = { .tid = tid, .ts = ts };

	recorder_for_each_record(p, note_switch_out, &lo);
	return lo.best;
}

static bool name_matches(const struct trig *t, const struct proc_rec *p, uint32_t tid)
{
	const char *name = proc_rec_thread_name(p, tid);

	return name && thread_glob_run(&t->glob, name);
}

void triggers_on_record(struct triggers *ts, struct recorder *rec, const struct hp_hdr *h)
{
	for (size_t i = 0; i < ts->n; i++) {
		struct trig *t = &ts->t[i];
		const struct proc_rec *p;

		switch (t->def.kind) {
		case TRIGGER_PREEMPT:
		case TRIGGER_RUNQ: {
			const struct hp_switch *e = (const void *)h;
			uint32_t kind = t->def.kind == TRIGGER_PREEMPT ? HP_WAIT_PREEMPT : HP_WAIT_WAKEUP;

			if (h->type != HP_EV_SWITCH || !(e->flags & HP_SW_NEXT_WATCHED) || e->next_wait_kind != kind ||
			    e->next_wait_ns < t->def.threshold || !thread_glob_run(&t->glob, e->next_comm))
				break;
			p = recorder_find_live(rec, e->next_pid);
			if (!p)
				break;
			if (kind == HP_WAIT_PREEMPT) {
				const struct hp_switch *out = last_switch_out(p, e->next_tid, h->ts);

				fire(ts, i, p, e->next_tid, h->ts, out ? out->next_pid : 0, out ? out->next_comm : "",
				     "%s (tid %u) waited %.1f ms after %s (pid %u, prio %d) preempted it", e->next_comm,
				     e->next_tid, e->next_wait_ns / 1e6, out ? out->next_comm : "?", out ? out->next_pid : 0,
				     out ? out->next_prio : 0);
			} else {
				fire(ts, i, p, e->next_tid, h->ts, e->prev_pid, e->prev_comm,
				     "%s (tid %u) waited %.1f ms on the runqueue after its wakeup; %s (pid %u) ran before it",
				     e->next_comm, e->next_tid, e->next_wait_ns / 1e6, e->prev_comm, e->prev_pid);
			}
			break;
		}
		case TRIGGER_OFFCPU: {
			const struct hp_offcpu *e = (const void *)h;

			if (h->type != HP_EV_OFFCPU || e->dur_ns < t->def.threshold)
				break;
			p = recorder_find_live(rec, e->pid);
			if (!p || !name_matches(t, p, e->tid))
				break;
			fire(ts, i, p, e->tid, h->ts + e->dur_ns, e->waker_pid, e->waker_comm,
			     "%s (tid %u) was blocked %.1f ms; woken by %s (pid %u)", proc_rec_thread_name(p, e->tid),
			     e->tid, e->dur_ns / 1e6, e->waker_tid ? e->waker_comm : "?", e->waker_pid);
			break;
		}
		case TRIGGER_SYSCALL: {
			const struct hp_syscall *e = (const void *)h;
			const char *name;

			if (h->type != HP_EV_SYSCALL || e->dur_ns < t->def.threshold)
				break;
			p = recorder_find_live(rec, e->pid);
			if (!p || !name_matches(t, p, e->tid))
				break;
			name = e->nr < syscall_names_len && syscall_names[e->nr] ? syscall_names[e->nr] : "?";
			fire(ts, i, p, e->tid, h->ts + e->dur_ns, 0, name, "%s (tid %u) spent %.1f ms in %s = %lld",
			     proc_rec_thread_name(p, e->tid), e->tid, e->dur_ns / 1e6, name, (long long)e->ret);
			break;
		}
		case TRIGGER_MIGRATE: {
			const struct hp_migrate *e = (const void *)h;
			struct migrator *m;

			if (h->type != HP_EV_MIGRATE)
				break;
			m = &t->migrators[e->tid % MAX_MIGRATORS];
			if (m->tid != e->tid || h->ts - m->window_start > NSEC_PER_SEC)
				*m = (struct migrator){ .tid = e->tid, .window_start = h->ts };
			if (++m->moves < t->def.threshold)
				break;
			p = recorder_find_live(rec, e->pid);
			if (!p || !name_matches(t, p, e->tid))
				break;
			fire(ts, i, p, e->tid, h->ts, 0, "", "%s (tid %u) moved %u times within 1 s, last from CPU %u to %u",
			     proc_rec_thread_name(p, e->tid), e->tid, m->moves, e->from_cpu, e->to_cpu);
			m->moves = 0;
			m->window_start = h->ts;
			break;
		}
		case TRIGGER_RECLAIM: {
			const struct hp_reclaim *e = (const void *)h;
			static const char *const what[] = { "?", "direct reclaim", "memcg reclaim", "compaction" };

			if (h->type != HP_EV_RECLAIM || e->dur_ns < t->def.threshold)
				break;
			p = recorder_find_live(rec, e->pid);
			if (!p || !name_matches(t, p, e->tid))
				break;
			fire(ts, i, p, e->tid, h->ts + e->dur_ns, 0, "", "%s (tid %u) spent %.1f ms in %s (order %d)",
			     proc_rec_thread_name(p, e->tid), e->tid, e->dur_ns / 1e6, what[e->kind < 4 ? e->kind : 0],
			     e->order);
			break;
		}
		case TRIGGER_LOCK: {
			const struct hp_lock *e = (const void *)h;

			if (h->type != HP_EV_LOCK || e->dur_ns < t->def.threshold)
				break;
			p = recorder_find_live(rec, e->pid);
			if (!p || !name_matches(t, p, e->tid))
				break;
			fire(ts, i, p, e->tid, h->ts + e->dur_ns, 0, "", "%s (tid %u) waited %.1f ms for a kernel %s",
			     proc_rec_thread_name(p, e->tid), e->tid, e->dur_ns / 1e6,
			     e->flags & HP_LOCK_MMAP ? "mmap_lock" : "lock"); /* no address: a user may read it */
			break;
		}
		case TRIGGER_GIL: {
			const struct hp_gil *e = (const void *)h;

			/* a take of the GIL that waited >= threshold (gil_min_us: shorter ones are
			 * not records) */
			if (h->type != HP_EV_GIL || e->dur_ns < t->def.threshold)
				break;
			p = recorder_find_live(rec, e->pid);
			if (!p || !name_matches(t, p, e->tid))
				break;
			fire(ts, i, p, e->tid, h->ts + e->dur_ns, e->holder_tid ? e->pid : 0,
			     e->holder_tid ? proc_rec_thread_name(p, e->holder_tid) : "",
			     "%s (tid %u) waited %.1f ms for the GIL, held by %s (tid %u)", proc_rec_thread_name(p, e->tid),
			     e->tid, e->dur_ns / 1e6, e->holder_tid ? proc_rec_thread_name(p, e->holder_tid) : "?",
			     e->holder_tid);
			break;
		}
		case TRIGGER_IRQ: {
			const struct hp_irq *e = (const void *)h;
			char name[HP_COMM_LEN + 1];

			if (h->type != HP_EV_IRQ || !(e->flags & HP_IRQ_RUNNING) || e->dur_ns < t->def.threshold)
				break;
			p = recorder_find_live(rec, e->pid);
			if (!p || !name_matches(t, p, e->tid))
				break;
			if (e->kind == HP_IRQ_SOFT)
				snprintf(name, sizeof(name), "%s", hps_softirq_name(e->num));
			else
				snprintf(name, sizeof(name), "%.*s", HP_COMM_LEN, e->name);
			fire(ts, i, p, e->tid, h->ts + e->dur_ns, 0, name, "%s (tid %u) lost %.1f ms of CPU %u to %s %s %u",
			     proc_rec_thread_name(p, e->tid), e->tid, e->dur_ns / 1e6, e->hdr.cpu, name,
			     e->kind == HP_IRQ_SOFT ? "softirq" : "IRQ", e->num);
			break;
		}
		}
	}
}

/* The report's first line of a snapshot: its verdict. */
static void verdict(const Hostprof__Snapshot *snap, char *buf, size_t len)
{
	char *text = NULL;
	size_t size = 0;
	FILE *f = open_memstream(&text, &size);

	buf[0] = 0;
	if (!f)
		return;
	if (snapshot_report_text(snap, f) == 0 && fflush(f) == 0 && text) {
		size_t n = strcspn(text, "\n");

		snprintf(buf, len, "%.*s", (int)MIN(n, len - 1), text);
	}
	fclose(f);
	free(text);
}

/* A trigger's snapshot being taken in a snapshot job. */
struct take {
	struct triggers *ts;
	struct trigger_def def;
	struct pending pd;
	struct proc_cred owner;
	char comm[HP_COMM_LEN];
	Hostprof__Marker marker, *markers[1];
	struct snapshot_req req;
};

/* In the child: write the files, hand back "name\0summary". */
static int take_then(void *arg, uint8_t *data, size_t len, uint64_t events, struct hp_buf *out)
{
	struct take *tk = arg;
	Hostprof__Snapshot *snap = NULL;
	char summary[256] = "", name[96];
	int r;

	r = hps_unpack(data, len, &snap);
	if (r >= 0) {
		verdict(snap, summary, sizeof(summary));
		r = snapstore_write(tk->ts->snapstore, snap, data, len, tk->ts->formats, tk->pd.pid, tk->def.name,
				    tk->pd.realtime_ns, name);
	}
	if (r >= 0)
		r = hp_buf_append(out, name, strlen(name) + 1);
	if (r >= 0)
		r = hp_buf_append(out, summary, strlen(summary) + 1);
	hps_free(snap);
	return r;
}

/* Back in the loop: index it, tell the journal. */
static void take_done(void *ud, int status, uint8_t *data, size_t len)
{
	struct take *tk = ud;
	struct snapstore *st = tk->ts->snapstore;
	const struct snap_entry *entry = NULL;
	const char *name = (const char *)data, *summary;
	char path[PATH_MAX], when[40];

	if (status == -ECANCELED) {
		log_warning("trigger %s: the snapshot of pid %u was not finished: hostprofd is stopping", tk->def.name,
			    tk->pd.pid);
		goto out;
	}
	if (status < 0 || !data || !memchr(data, 0, len)) {
		/* a full or unwritable disk: said, nothing partial left, capture goes on */
		log_error_errno(status < 0 ? status : -EIO,
				"trigger %s: failed to write the snapshot of pid %u to %s: %m; capture goes on",
				tk->def.name, tk->pd.pid, snapstore_dir(st));
		goto out;
	}
	summary = name + strlen(name) + 1;
	if ((const uint8_t *)summary >= data + len || !memchr(summary, 0, data + len - (const uint8_t *)summary))
		summary = "";
	status = snapstore_add(st, name, &tk->owner, summary, &entry);
	if (status < 0)
		log_warning_errno(status, "trigger %s: failed to index %s: %m, ignoring", tk->def.name, name);
	snprintf(path, sizeof(path), "%s/%s.hps", snapstore_dir(st), name);
	log_notice("automatic snapshot %s: %s", path, summary);
	/* the wall-clock instant, to ask every other node of the job for the same one */
	format_wall_time(tk->pd.realtime_ns, when, sizeof(when));
	(void)sd_journal_send("MESSAGE=hostprof: trigger %s on pid %u (%s): %s", tk->def.name, tk->pd.pid, tk->comm,
			      tk->pd.detail, "MESSAGE_ID=" TRIGGER_MESSAGE_ID, "PRIORITY=%i", LOG_WARNING,
			      "SYSLOG_IDENTIFIER=hostprofd", "HOSTPROF_PID=%u", tk->pd.pid, "HOSTPROF_COMM=%s", tk->comm,
			      "HOSTPROF_TID=%u", tk->pd.tid, "HOSTPROF_TIME=%s", when, "HOSTPROF_REALTIME_NS=%llu",
			      (unsigned long long)tk->pd.realtime_ns, "HOSTPROF_TRIGGER=%s", tk->def.name, "HOSTPROF_KIND=%s",
			      trigger_kind_name(tk->def.kind), "HOSTPROF_FILE=%s", path, "HOSTPROF_CULPRIT_PID=%u",
			      tk->pd.culprit_pid, "HOSTPROF_CULPRIT_COMM=%s", tk->pd.culprit_comm, "HOSTPROF_SUMMARY=%s",
			      summary, NULL);
out:
	free(data);
	free(tk);
}

static void take(struct triggers *ts, const struct pending *pd)
{
	const struct trigger_def *def = &pd->def;
	struct proc_rec *p = recorder_find(ts->recorder, pd->pid);
	struct take *tk;
	int r;

	if (!p) {
		log_warning("trigger %s: pid %u is gone and its history with it, no snapshot", def->name, pd->pid);
		return;
	}
	r = snapstore_ready(ts->snapstore);
	if (r < 0) {
		log_error_errno(r, "trigger %s: cannot use the snapshot directory %s (%m), the snapshot of pid %u is lost",
				def->name, snapstore_dir(ts->snapstore), pd->pid);
		return;
	}
	tk = calloc(1, sizeof(*tk));
	if (!tk)
		return;
	*tk = (struct take){ .ts = ts, .def = *def, .pd = *pd, .owner = p->info.cred };
	/* a process that changed credentials at an exec: its snapshots are root's alone */
	if (p->cred_change_ns)
		tk->owner.dumpable = false;
	memcpy(tk->comm, p->info.comm, sizeof(tk->comm));
	hostprof__marker__init(&tk->marker);
	tk->marker.has_ts = tk->marker.has_tid = true;
	tk->marker.ts = tk->pd.fire_ns;
	tk->marker.tid = tk->pd.tid;
	tk->marker.name = tk->def.name;
	tk->marker.detail = tk->pd.detail;
	tk->markers[0] = &tk->marker;
	tk->req = (struct snapshot_req){
		.p = p,
		.window_ns = tk->def.before_ns + tk->def.after_ns,
		.end_ns = tk->pd.due_ns,
		.reason = tk->def.name,
		/* a user may fetch it: no kernel address in what it may see */
		.hide_kernel_addresses = tk->owner.uid != 0 || tk->owner.euid != 0,
		.markers = tk->markers,
		.n_markers = 1,
		.python_instant = tk->pd.python_instant,
	};
	/* built and written in a child: the loop goes on draining meanwhile */
	r = snapsvc_start(ts->snapsvc, &tk->req, take_then, tk, take_done, tk, NULL);
	if (r < 0) {
		log_error_errno(r, "trigger %s: failed to start the snapshot of pid %u: %m", def->name, pd->pid);
		free(tk);
	}
}

void triggers_tick(struct triggers *ts, uint64_t now)
{
	size_t keep = 0;

	for (size_t i = 0; i < ts->n_pending; i++) {
		if (ts->pending[i].due_ns > now) {
			ts->pending[keep++] = ts->pending[i];
			continue;
		}
		take(ts, &ts->pending[i]);
	}
	ts->n_pending = keep;
}

size_t triggers_count(const struct triggers *ts)
{
	return ts->n;
}

void triggers_stat(const struct triggers *ts, size_t i, struct trigger_stat *ret)
{
	*ret = (struct trigger_stat){
		.def = &ts->t[i].def,
		.fired = ts->t[i].fired,
		.suppressed = ts->t[i].suppressed,
	};
}

uint64_t triggers_dropped(const struct triggers *ts)
{
	return ts->dropped;
}
