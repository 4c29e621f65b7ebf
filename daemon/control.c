// SPDX-License-Identifier: GPL-2.0-only
/*
 * The control socket: listening, clients, requests, authorization.
 *
 * Every client is non-blocking with bounded buffers: at most one request frame
 * (HP_MAX_REQUEST) is buffered in, and a snapshot is streamed out one HP_CHUNK_SIZE
 * chunk at a time, only as fast as the client reads. A slow or silent client costs its
 * own buffers and never stalls the drain. A client that asks for it (SnapshotRequest.fd)
 * gets the snapshot as a memfd instead: the job writes the .hps into it, the loop seals it
 * and passes it in one small frame, and never touches the bytes.
 *
 * Peers are identified by SO_PEERCRED and SO_PEERGROUPS. Who may make which request is
 * one table (`request_rules` below) applied before the request is handled: root may do
 * everything; another user sees, watches, unwatches, snapshots and fetches only the
 * processes it owns (peer_owns: every uid its own, every gid one of its groups, and
 * dumpable), and never changes the thread patterns. A process that changed credentials
 * at an exec is root's from there on: what it does now, and what was recorded since.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <malloc.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include "control.h"
#include "framing.h"
#include "log.h"
#include "loop.h"
#include "macro.h"
#include "metrics.h"
#include "procfs.h"
#include "recorder.h"
#include "settings.h"
#include "snapstore.h"
#include "snapsvc.h"
#include "trigger.h"
#include "walltime.h"
#include "watch.h"

#define MAX_CLIENTS 256
#define MAX_STREAMS 8 /* snapshots being built or sent at once */
#define MAX_STREAMS_PER_USER 2 /* of one user other than root */
#define ROOT_STREAMS 2         /* kept for root */
#define STALL_NS (10 * NSEC_PER_SEC) /* a client with output that reads nothing this long is closed */
/* Replies waiting beyond this: its next requests wait unread until it takes them. */
#define OUT_HIGH (4 * HP_CHUNK_SIZE)

struct client {
	struct io_source io;
	struct control *ctl;
	struct client *next;
	struct ucred cred;
	gid_t *groups; /* supplementary groups */
	size_t n_groups;
	bool hello;
	bool closing; /* close once the output is flushed */
	bool dead;    /* closed; freed by control_gc() */
	uint32_t epoll_events;
	struct hp_buf in, out;
	struct snapjob *job; /* a snapshot being built for it */
	struct snapshot_req snap_req; /* what job builds */
	uint64_t progress_ns; /* when it last took output (or had none pending) */
	/* the snapshot being streamed */
	uint8_t *snap;
	size_t snap_start, snap_len, snap_off; /* the bytes [snap_start, snap_len) of snap */
	uint64_t snap_events;
	uint32_t snap_pid;
	/* or passed as a memfd (SnapshotRequest.fd): the job writes it, the loop sends it once
	 * the job is done (and the memfd sealed, snap_len bytes) */
	int snap_fd; /* -1: none */
};

struct control {
	struct io_source io;
	struct control_deps deps;
	uint64_t start_ns;
	uint64_t rate_events, rate_ns; /* recorder events at the last rate sample */
	double events_per_sec;
	bool owned; /* we made the socket file: remove it at exit */
	char *path;
	struct client *clients;
	size_t n_clients, n_streams;
};

static int client_update_events(struct client *cl);

/* A snapshot being built or sent to it. */
static bool client_streaming(const struct client *cl)
{
	return cl->snap || cl->job || cl->snap_fd >= 0;
}

/* Its memfd, written and sealed, to be sent. */
static bool snap_fd_ready(const struct client *cl)
{
	return cl->snap_fd >= 0 && !cl->job;
}

static void snap_fd_close(struct client *cl)
{
	if (cl->snap_fd >= 0)
		close(cl->snap_fd);
	cl->snap_fd = -1;
}

/* Its replies pile up: a peer that writes requests faster than it reads the answers
 * costs at most OUT_HIGH plus one reply, never what it asks for. */
static bool client_backlogged(const struct client *cl)
{
	return hp_buf_pending(&cl->out) > OUT_HIGH;
}

static void client_close(struct client *cl)
{
	if (cl->dead)
		return;
	loop_del(cl->ctl->deps.loop, &cl->io);
	close(cl->io.fd);
	cl->io.fd = -1;
	if (client_streaming(cl))
		cl->ctl->n_streams--;
	snapsvc_cancel(cl->job);
	cl->job = NULL;
	free(cl->snap);
	cl->snap = NULL;
	snap_fd_close(cl);
	cl->dead = true;
	cl->ctl->n_clients--;
}

static void client_free(struct client *cl)
{
	free(cl->groups);
	hp_buf_free(&cl->in);
	hp_buf_free(&cl->out);
	free(cl);
}

void control_gc(struct control *ctl)
{
	struct client **pp;

	if (!ctl)
		return;
	for (pp = &ctl->clients; *pp;) {
		struct client *cl = *pp;

		if (cl->dead) {
			*pp = cl->next;
			client_free(cl);
		} else {
			pp = &cl->next;
		}
	}
}

static int send_response(struct client *cl, const Hostprof__Response *resp)
{
	int r = frame_append(&cl->out, &resp->base, HP_MAX_RESPONSE);

	if (r < 0)
		log_error_errno(r, "Failed to queue a response for pid %d: %m", cl->cred.pid);
	return r;
}

static int send_error(struct client *cl, Hostprof__Error__Code code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int send_error(struct client *cl, Hostprof__Error__Code code, const char *fmt, ...)
{
	Hostprof__Response resp = HOSTPROF__RESPONSE__INIT;
	Hostprof__Error err = HOSTPROF__ERROR__INIT;
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	err.code = code;
	err.message = msg;
	resp.body_case = HOSTPROF__RESPONSE__BODY_ERROR;
	resp.error = &err;
	if (code == HOSTPROF__ERROR__CODE__DENIED)
		log_notice("refused uid %u (pid %d): %s", cl->cred.uid, cl->cred.pid, msg);
	return send_response(cl, &resp);
}

/* A peer that broke the protocol gets one error and is closed once it is sent. */
static void protocol_error(struct client *cl, const char *what)
{
	log_notice("client pid %d uid %u: %s; closing", cl->cred.pid, cl->cred.uid, what);
	(void)send_error(cl, HOSTPROF__ERROR__CODE__PROTOCOL, "%s", what);
	cl->closing = true;
}

static bool peer_in_group(const struct client *cl, uint32_t gid)
{
	if (gid == cl->cred.gid)
		return true;
	for (size_t i = 0; i < cl->n_groups; i++)
		if (cl->groups[i] == gid)
			return true;
	return false;
}

/* The one ownership rule: root, or a peer that is every uid of the process, is in every
 * group it runs with, and the process is dumpable (what ptrace(2) would ask of it). */
static bool peer_owns(const struct client *cl, const struct proc_cred *c)
{
	uint32_t u = cl->cred.uid;

	if (u == 0)
		return true;
	return c->uid == u && c->euid == u && c->suid == u && c->fsuid == u && peer_in_group(cl, c->gid) &&
	       peer_in_group(cl, c->egid) && peer_in_group(cl, c->sgid) && peer_in_group(cl, c->fsgid) &&
	       c->dumpable;
}

static bool may_see(const struct client *cl, const struct proc_rec *p)
{
	return peer_owns(cl, &p->info.cred);
}

static bool may_see_entry(const struct client *cl, const struct snap_entry *e)
{
	return peer_owns(cl, &e->owner);
}

/*
 * What a request acts on, found before it is authorized. A request on no target (hello,
 * status, the snapshot list: each filters what it shows by peer_owns) is anyone's.
 */
struct target {
	enum {
		TARGET_NONE,      /* anyone */
		TARGET_ROOT_ONLY, /* the thread patterns: they watch every user's processes */
		TARGET_OWNED,     /* a process or a snapshot: root or its owner */
	} kind;
	struct proc_cred owner; /* TARGET_OWNED: as recorded (or now, for a process not yet watched) */
	bool has_live;          /* a live process whose credentials are not owner any more */
	struct proc_cred live;
	bool hide_denial; /* refused like not found: the peer learns nothing of it */
	const char *glob; /* TARGET_ROOT_ONLY */
	uint32_t pid;
	struct proc_info info;      /* watch: the live process */
	struct proc_rec *p;         /* unwatch, snapshot */
	const struct snap_entry *e; /* fetch */
};

/* A watched process that lives: its credentials now, if they are not those recorded. */
static void target_live_cred(struct target *t, const struct proc_rec *p)
{
	struct proc_info now;

	if (p->exit_ns || proc_read_info(p->info.pid, &now) < 0 || now.start_time != p->info.start_time)
		return;
	if (!proc_same_cred(&now.cred, &p->info.cred)) {
		t->has_live = true;
		t->live = now.cred;
	}
}

static void handle_hello(struct client *cl, const Hostprof__Request *req, struct target *t)
{
	const Hostprof__Hello *hello = req->hello;
	Hostprof__Response resp = HOSTPROF__RESPONSE__INIT;
	Hostprof__Hello mine = HOSTPROF__HELLO__INIT;

	if (cl->hello) {
		protocol_error(cl, "a second hello");
		return;
	}
	if (hello->protocol != HP_PROTOCOL_VERSION) {
		char why[160];

		snprintf(why, sizeof(why),
			 "protocol mismatch: the client speaks %u, hostprofd %s speaks %u; use the "
			 "hostprofctl that came with this hostprofd",
			 hello->protocol, HOSTPROF_VERSION, HP_PROTOCOL_VERSION);
		protocol_error(cl, why);
		return;
	}
	mine.protocol = HP_PROTOCOL_VERSION;
	mine.version = (char *)HOSTPROF_VERSION;
	resp.body_case = HOSTPROF__RESPONSE__BODY_HELLO;
	resp.hello = &mine;
	cl->hello = true;
	(void)send_response(cl, &resp);
}

static void handle_status(struct client *cl, const Hostprof__Request *req, struct target *t)
{
	const struct control_deps *deps = &cl->ctl->deps;
	const struct settings *s = deps->settings;
	Hostprof__Response resp = HOSTPROF__RESPONSE__INIT;
	Hostprof__Status st = HOSTPROF__STATUS__INIT;
	size_t n = recorder_count(deps->recorder), nw = 0, nd, nt = triggers_count(deps->triggers);
	_cleanup_free_ Hostprof__WatchedProcess *wp = calloc(MAX(n, (size_t)1), sizeof(*wp));
	_cleanup_free_ Hostprof__WatchedProcess **wpp = calloc(MAX(n, (size_t)1), sizeof(*wpp));
	struct drop_count drops[HP_DROP_CAUSES];
	Hostprof__Drop drop_msgs[HP_DROP_CAUSES], *drop_ptrs[HP_DROP_CAUSES];
	Hostprof__TriggerStats trig_msgs[HOSTPROF_MAX_TRIGGERS], *trig_ptrs[HOSTPROF_MAX_TRIGGERS];
	char intf[64], intf_missing[64];
	unsigned missing = deps->facts.interference_missing;
	struct watch_reads reads;
	struct watch_python wpy;
	Hostprof__PythonWalkStats pys = HOSTPROF__PYTHON_WALK_STATS__INIT;
	Hostprof__Drop unwind_stops[WATCH_UNWIND_STOPS], *unwind_ptrs[WATCH_UNWIND_STOPS];
	Hostprof__UnwindStats unwind;
	struct recorder_user use;
	Hostprof__UserQuota quota;
	const struct recorder_user *users = NULL;
	size_t nu = cl->cred.uid == 0 ? recorder_users(deps->recorder, &users) : 0;
	_cleanup_free_ Hostprof__UserQuota *user_msgs = calloc(MAX(nu, (size_t)1), sizeof(*user_msgs));
	_cleanup_free_ Hostprof__UserQuota **user_ptrs = calloc(MAX(nu, (size_t)1), sizeof(*user_ptrs));
	size_t n_globs;

	if (!wp || !wpp || !user_msgs || !user_ptrs) {
		(void)send_error(cl, HOSTPROF__ERROR__CODE__INTERNAL, "out of memory");
		return;
	}
	for (size_t i = 0; i < n; i++) {
		struct proc_rec *p = recorder_at(deps->recorder, i);

		if (!may_see(cl, p))
			continue;
		hostprof__watched_process__init(&wp[nw]);
		wp[nw].has_pid = wp[nw].has_events = wp[nw].has_bytes = wp[nw].has_exited = true;
		wp[nw].pid = p->info.pid;
		wp[nw].comm = p->info.comm;
		wp[nw].events = p->events;
		wp[nw].bytes = p->bytes;
		wp[nw].exited = p->exit_ns != 0 && !p->unwatched; /* unwatched: may run on */
		wp[nw].why = p->unwatched ? "unwatched" : p->why;
		wp[nw].rank = p->labels.rank;
		wp[nw].job = p->labels.job;
		wp[nw].local_rank = p->labels.local_rank;
		wp[nw].world_size = p->labels.world_size;
		wpp[nw] = &wp[nw];
		nw++;
	}
	nd = snapsvc_drops(deps->snapsvc, drops);
	for (size_t i = 0; i < nd; i++) {
		hostprof__drop__init(&drop_msgs[i]);
		drop_msgs[i].cause = (char *)drops[i].cause;
		drop_msgs[i].has_count = true;
		drop_msgs[i].count = drops[i].count;
		drop_ptrs[i] = &drop_msgs[i];
	}
	nt = MIN(nt, (size_t)HOSTPROF_MAX_TRIGGERS);
	for (size_t i = 0; i < nt; i++) {
		struct trigger_stat ts;

		triggers_stat(deps->triggers, i, &ts);
		hostprof__trigger_stats__init(&trig_msgs[i]);
		trig_msgs[i].name = (char *)ts.def->name;
		trig_msgs[i].kind = (char *)trigger_kind_name(ts.def->kind);
		trig_msgs[i].has_fired = trig_msgs[i].has_suppressed = true;
		trig_msgs[i].fired = ts.fired;
		trig_msgs[i].suppressed = ts.suppressed;
		trig_ptrs[i] = &trig_msgs[i];
	}
	st.version = (char *)HOSTPROF_VERSION;
	st.has_uptime_ns = st.has_pid = st.has_events = st.has_events_per_sec = true;
	st.uptime_ns = now_boottime_ns() - cl->ctl->start_ns;
	st.pid = getpid();
	st.processes = wpp;
	st.n_processes = nw;
	st.events = recorder_events(deps->recorder);
	st.events_per_sec = cl->ctl->events_per_sec;
	st.drops = drop_ptrs;
	st.n_drops = nd;
	st.triggers = trig_ptrs;
	st.n_triggers = nt;
	watch_reads(deps->watch, &reads);
	st.has_reads_done = st.has_reads_abandoned = st.has_reads_deferred = true;
	st.reads_done = reads.done;
	st.reads_abandoned = reads.abandoned;
	st.reads_deferred = reads.deferred;
	watch_unwind(deps->watch, &unwind, unwind_stops, unwind_ptrs);
	st.unwind = &unwind;
	st.has_symbolizer_bytes = st.has_symbolizer_limit = st.has_reads_over_budget = st.has_made_room = true;
	st.symbolizer_bytes = reads.symbolizer_bytes;
	st.has_dwarf_bytes = st.has_dwarf_lines = st.has_dwarf_lines_dropped = true;
	st.dwarf_bytes = reads.dwarf_bytes;
	st.dwarf_lines = reads.dwarf_lines;
	st.dwarf_lines_dropped = reads.dwarf_lines_dropped;
	st.symbolizer_limit = reads.symbolizer_limit;
	st.reads_over_budget = reads.over_budget;
	st.made_room = reads.made_room;
	recorder_user(deps->recorder, cl->cred.uid, &use);
	hostprof__user_quota__init(&quota);
	quota.has_uid = quota.has_watched = quota.has_watched_limit = quota.has_bytes = quota.has_bytes_limit = true;
	quota.has_dropped = quota.has_refused = true;
	quota.uid = cl->cred.uid;
	quota.watched = use.live;
	quota.bytes = use.bytes;
	quota.dropped = use.dropped;
	quota.refused = use.refused;
	if (cl->cred.uid != 0) {
		quota.watched_limit = recorder_limits(deps->recorder)->user_procs;
		quota.bytes_limit = recorder_limits(deps->recorder)->user_bytes;
	}
	st.quota = &quota;
	if (nu) {
		const struct recorder_limits *lim = recorder_limits(deps->recorder);

		for (size_t i = 0; i < nu; i++) {
			hostprof__user_quota__init(&user_msgs[i]);
			user_msgs[i] = (Hostprof__UserQuota){
				.base = user_msgs[i].base,
				.has_uid = true, .uid = users[i].uid,
				.has_watched = true, .watched = users[i].live,
				.has_watched_limit = true, .watched_limit = users[i].uid ? lim->user_procs : 0,
				.has_bytes = true, .bytes = users[i].bytes,
				.has_bytes_limit = true, .bytes_limit = users[i].uid ? lim->user_bytes : 0,
				.has_dropped = true, .dropped = users[i].dropped,
				.has_refused = true, .refused = users[i].refused,
			};
			user_ptrs[i] = &user_msgs[i];
		}
		st.users = user_ptrs;
		st.n_users = nu;
	}
	st.has_triggers_dropped = true;
	st.triggers_dropped = triggers_dropped(deps->triggers);
	if (watch_python_stats(deps->watch, &wpy)) {
		pys.has_processes = pys.has_walks = pys.has_no_thread_state = pys.has_read_failures = true;
		pys.has_list_scans = pys.has_names_checked = pys.has_names_unreadable = pys.has_names_dropped = true;
		pys.processes = wpy.processes;
		pys.walks = wpy.walks;
		pys.no_thread_state = wpy.no_tstate;
		pys.read_failures = wpy.read_failures;
		pys.list_scans = wpy.scans;
		pys.names_checked = wpy.checked;
		pys.names_unreadable = wpy.unreadable;
		pys.names_dropped = wpy.dropped;
		pys.has_offcpu_walks = pys.has_sample_walk_ns = pys.has_offcpu_walk_ns = true;
		pys.offcpu_walks = wpy.offcpu_walks;
		pys.sample_walk_ns = wpy.sample_ns;
		pys.offcpu_walk_ns = wpy.offcpu_ns;
		st.python = &pys;
	}
	st.has_memory_bytes = st.has_memory_limit = st.has_rss_bytes = true;
	st.memory_bytes = recorder_bytes(deps->recorder);
	st.memory_limit = recorder_limits(deps->recorder)->memory_bytes;
	st.rss_bytes = proc_self_rss();
	st.has_ncpus = st.has_ring_kb = true;
	st.ncpus = deps->facts.ncpus;
	st.ring_kb = s->ring_kb;
	st.watch_threads = (char **)watch_globs(deps->watch, &n_globs);
	st.n_watch_threads = n_globs;
	st.interference = (char *)interference_text(s->interference & ~missing, intf, sizeof(intf));
	st.interference_missing = (char *)interference_text(s->interference & missing, intf_missing,
							    sizeof(intf_missing));
	resp.body_case = HOSTPROF__RESPONSE__BODY_STATUS;
	resp.status = &st;
	(void)send_response(cl, &resp);
}

static bool metrics_may_see(void *ud, const struct proc_rec *p)
{
	return may_see(ud, p);
}

/* Like status: the processes the peer may see, and the daemon's own figures. */
static void handle_metrics(struct client *cl, const Hostprof__Request *req, struct target *t)
{
	Hostprof__Response resp = HOSTPROF__RESPONSE__INIT;
	Hostprof__Metrics msg = HOSTPROF__METRICS__INIT;
	struct hp_buf text = {};
	int r = metrics_format(cl->ctl->deps.metrics, metrics_may_see, cl, &text);

	if (r >= 0)
		r = hp_buf_append(&text, "", 1);
	if (r < 0) {
		hp_buf_free(&text);
		(void)send_error(cl, HOSTPROF__ERROR__CODE__INTERNAL, "cannot make the metrics: %s", strerror(-r));
		return;
	}
	msg.text = (char *)text.data;
	resp.body_case = HOSTPROF__RESPONSE__BODY_METRICS;
	resp.metrics = &msg;
	if (send_response(cl, &resp) < 0)
		(void)send_error(cl, HOSTPROF__ERROR__CODE__INTERNAL,
				 "the metrics (%zu bytes) do not fit in a reply; read %s in metrics_dir", text.len,
				 METRICS_FILE);
	hp_buf_free(&text);
}

/* In the snapshot job's child: [uint64 events][.hps bytes], in the hps's own buffer. */
static int snapshot_then(void *arg, uint8_t *hps, size_t len, uint64_t events, struct hp_buf *out)
{
	_Static_assert(SNAPSVC_ROOM >= sizeof(events), "the room holds the count");
	memcpy(hps - sizeof(events), &events, sizeof(events));
	*out = (struct hp_buf){
		.data = hps - SNAPSVC_ROOM,
		.off = SNAPSVC_ROOM - sizeof(events),
		.len = SNAPSVC_ROOM + len,
		.cap = SNAPSVC_ROOM + len,
	};
	return 0;
}

/* In the snapshot job's child, for a client that takes a memfd: the .hps into it (arg: the
 * fd), and [uint64 events][uint64 bytes] back. */
static int snapshot_then_fd(void *arg, uint8_t *hps, size_t len, uint64_t events, struct hp_buf *out)
{
	const uint64_t res[2] = { events, len };
	int fd = (int)(intptr_t)arg;

	for (size_t off = 0; off < len;) {
		ssize_t n = pwrite(fd, hps + off, len - off, (off_t)off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? negative_errno() : -EIO;
		off += (size_t)n;
	}
	return hp_buf_append(out, res, sizeof(res));
}

static void client_kick(struct client *cl);

/* The memfd written: sealed as it is (the job is gone), to be sent (snap_fd_ready()). */
static int snap_fd_done(struct client *cl, const uint8_t *data, size_t len)
{
	uint64_t res[2];
	struct stat st;

	if (len != sizeof(res))
		return -EIO;
	memcpy(res, data, sizeof(res));
	if (fstat(cl->snap_fd, &st) < 0)
		return negative_errno();
	if ((uint64_t)st.st_size != res[1])
		return -EIO;
	if (fcntl(cl->snap_fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) < 0)
		return negative_errno();
	cl->snap_events = res[0];
	cl->snap_len = res[1];
	return 0;
}

/* Back in the loop: stream it (or pass its memfd), or say why not. */
static void snapshot_done(void *ud, int status, uint8_t *data, size_t len)
{
	struct client *cl = ud;

	cl->job = NULL;
	if (status >= 0 && cl->snap_fd >= 0)
		status = snap_fd_done(cl, data, len);
	if (status == -ECANCELED) {
		cl->ctl->n_streams--;
		snap_fd_close(cl);
		(void)send_error(cl, HOSTPROF__ERROR__CODE__INTERNAL, "hostprofd is stopping: the snapshot was not finished");
		free(data);
	} else if (status < 0 || (cl->snap_fd < 0 && len < sizeof(uint64_t))) {
		cl->ctl->n_streams--;
		snap_fd_close(cl);
		log_error_errno(status < 0 ? status : -EIO, "Failed to build a snapshot of pid %u: %m", cl->snap_pid);
		(void)send_error(cl, HOSTPROF__ERROR__CODE__INTERNAL, "failed to build the snapshot: %s",
				 strerror(status < 0 ? -status : EIO));
		free(data);
	} else if (cl->snap_fd >= 0) {
		free(data);
		log_info("snapshot of pid %u for uid %u: %zu bytes in a memfd, %llu events", cl->snap_pid,
			 cl->cred.uid, cl->snap_len, (unsigned long long)cl->snap_events);
	} else {
		/* [uint64 events][hps]: streamed from where the hps starts, not moved there */
		memcpy(&cl->snap_events, data, sizeof(uint64_t));
		cl->snap = data;
		cl->snap_start = cl->snap_off = sizeof(uint64_t);
		cl->snap_len = len;
		log_info("snapshot of pid %u for uid %u: %zu bytes, %llu events", cl->snap_pid, cl->cred.uid,
			 cl->snap_len - cl->snap_start, (unsigned long long)cl->snap_events);
	}
	client_kick(cl);
}

/* A snapshot stream for this peer: at most MAX_STREAMS in all, MAX_STREAMS_PER_USER of
 * one user, and ROOT_STREAMS kept for root, so no user can keep root waiting. */
static bool stream_slot(struct client *cl)
{
	struct control *ctl = cl->ctl;
	size_t mine = 0, others = 0;

	for (struct client *c = ctl->clients; c; c = c->next) {
		if (c->dead || !client_streaming(c))
			continue;
		if (c->cred.uid == cl->cred.uid)
			mine++;
		if (c->cred.uid != 0)
			others++;
	}
	if (ctl->n_streams >= MAX_STREAMS || (cl->cred.uid != 0 && others >= MAX_STREAMS - ROOT_STREAMS)) {
		(void)send_error(cl, HOSTPROF__ERROR__CODE__BUSY,
				 "%zu snapshots are being sent already; try again in a moment", ctl->n_streams);
		return false;
	}
	if (cl->cred.uid != 0 && mine >= MAX_STREAMS_PER_USER) {
		(void)send_error(cl, HOSTPROF__ERROR__CODE__BUSY,
				 "you have %zu snapshots being sent already (at most %d at once); try again once one is done",
				 mine, MAX_STREAMS_PER_USER);
		return false;
	}
	return true;
}

/* The process whose environment names this rank (and job): a live one first, else the
 * most recent that exited; only among those the peer may see. NULL, with the error sent. */
static struct proc_rec *find_by_rank(struct client *cl, const char *rank, const char *job)
{
	struct recorder *rec = cl->ctl->deps.recorder;
	struct proc_rec *live = NULL, *gone = NULL;
	char others[160] = "";
	size_t n_live = 0, len = 0;

	for (size_t i = 0; i < recorder_count(rec); i++) {
		struct proc_rec *p = recorder_at(rec, i);

		if (!p->labels_read || strcmp(p->labels.rank, rank) || (job && strcmp(p->labels.job, job)) ||
		    !may_see(cl, p))
			continue;
		if (p->exit_ns) {
			if (!gone || p->exit_ns > gone->exit_ns)
				gone = p;
			continue;
		}
		n_live++;
		live = p;
		if (len < sizeof(others))
			len += snprintf(others + len, sizeof(others) - len, "%s%u (job %s)", len ? ", " : "", p->info.pid,
					p->labels.job[0] ? p->labels.job : "none");
	}
	if (n_live > 1) {
		(void)send_error(cl, HOSTPROF__ERROR__CODE__BAD_REQUEST,
				 "rank %s names %zu watched processes: %s; add --job ID (or give --pid)", rank, n_live,
				 others);
		return NULL;
	}
	if (!live && !gone)
		(void)send_error(cl, HOSTPROF__ERROR__CODE__NOT_FOUND,
				 "no watched process you may see has RANK=%s%s%s in its environment (`hostprofctl status` "
				 "shows each one's rank and job)",
				 rank, job ? " and job " : "", job ? job : "");
	return live ? live : gone;
}

static int find_snapshot_target(struct client *cl, const Hostprof__Request *req, struct target *t)
{
	const Hostprof__SnapshotRequest *sr = req->snapshot;
	struct proc_rec *p;

	snapsvc_catch_up(cl->ctl->deps.snapsvc); /* a process that just appeared is in the rings */
	if (sr->rank) {
		p = find_by_rank(cl, sr->rank, sr->job);
		if (!p)
			return -ENOENT;
		*t = (struct target){ .kind = TARGET_OWNED, .owner = p->info.cred, .pid = p->info.pid, .p = p };
		target_live_cred(t, p);
		return 0;
	}
	p = recorder_find(cl->ctl->deps.recorder, sr->pid);
	if (!p) {
		(void)send_error(cl, HOSTPROF__ERROR__CODE__NOT_FOUND,
				 "pid %u is not watched: start hostprofd with --pid %u, or give one of its "
				 "threads a name that --watch-thread matches",
				 sr->pid, sr->pid);
		return -ENOENT;
	}
	*t = (struct target){ .kind = TARGET_OWNED, .owner = p->info.cred, .pid = sr->pid, .p = p };
	target_live_cred(t, p);
	return 0;
}

/* --at: the window around a wall-clock instant, in the process's BOOTTIME history; false
 * (with the error sent) when the history does not hold it. */
static bool window_at(struct client *cl, const struct proc_rec *p, uint64_t at_rt, uint64_t window_ns,
		      struct snapshot_req *req)
{
	struct timespec rt;
	uint64_t now_bt = now_boottime_ns(), now_rt, at, first, last, half, span_first, span_last;
	uint64_t window = recorder_limits(cl->ctl->deps.recorder)->window_ns;
	char a[40], b[40], c[40];

	clock_gettime(CLOCK_REALTIME, &rt);
	now_rt = rt.tv_sec * NSEC_PER_SEC + rt.tv_nsec;
	if (!window_ns)
		window_ns = 10 * NSEC_PER_SEC;
	half = window_ns / 2;
	if (at_rt > now_rt) {
		(void)send_error(cl, HOSTPROF__ERROR__CODE__BAD_REQUEST, "%s is in the future: it is %s here",
				 format_wall_time(at_rt, a, sizeof(a)), format_wall_time(now_rt, b, sizeof(b)));
		return false;
	}
	at = now_rt - at_rt > now_bt ? 0 : now_bt - (now_rt - at_rt);
	/* what the history covers: since watching began or the window's start, back to its
	 * oldest record where space evicted more; until the exit, or now */
	first = MAX(p->watch_ns, now_bt > window ? now_bt - window : 0);
	if (recorder_history_span(p, &span_first, &span_last))
		first = MIN(first, span_first);
	last = p->exit_ns ? p->exit_ns : now_bt;
	if (at < first || at > last) {
		(void)send_error(cl, HOSTPROF__ERROR__CODE__NOT_FOUND,
				 "%s is outside the history of pid %u, which runs from %s to %s",
				 format_wall_time(at_rt, a, sizeof(a)), p->info.pid,
				 format_wall_time(now_rt - (now_bt - first), b, sizeof(b)),
				 format_wall_time(now_rt - (now_bt - last), c, sizeof(c)));
		return false;
	}
	req->end_ns = MIN(at + half, last);
	req->window_ns = req->end_ns - (at > half ? at - half : 0);
	return true;
}

static void handle_snapshot(struct client *cl, const Hostprof__Request *req, struct target *t)
{
	const Hostprof__SnapshotRequest *sr = req->snapshot;
	int r;

	if (!stream_slot(cl))
		return;
	/* built in a child process: the loop goes on draining meanwhile */
	cl->snap_req = (struct snapshot_req){ .p = t->p, .window_ns = sr->has_window_ns ? sr->window_ns : 0 };
	if (sr->has_at_ns && !window_at(cl, t->p, sr->at_ns, cl->snap_req.window_ns, &cl->snap_req))
		return;
	cl->snap_req.hide_kernel_addresses = cl->cred.uid != 0;
	/* what was recorded after an exec changed its credentials is root's alone */
	if (cl->cred.uid != 0 && t->p->cred_change_ns &&
	    (!cl->snap_req.end_ns || cl->snap_req.end_ns > t->p->cred_change_ns))
		cl->snap_req.end_ns = t->p->cred_change_ns;
	cl->snap_pid = t->pid;
	/* where no memfd can be made (no memory, an old kernel): streamed, as to any client */
	if (sr->has_fd && sr->fd)
		cl->snap_fd = memfd_create("hostprof-snapshot", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (cl->snap_fd >= 0)
		r = snapsvc_start(cl->ctl->deps.snapsvc, &cl->snap_req, snapshot_then_fd, (void *)(intptr_t)cl->snap_fd,
				  snapshot_done, cl, &cl->job);
	else
		r = snapsvc_start(cl->ctl->deps.snapsvc, &cl->snap_req, snapshot_then, NULL, snapshot_done, cl,
				  &cl->job);
	if (r < 0) {
		snap_fd_close(cl);
		log_error_errno(r, "Failed to start a snapshot of pid %u: %m", sr->pid);
		(void)send_error(cl, HOSTPROF__ERROR__CODE__INTERNAL, "failed to start the snapshot: %s", strerror(-r));
		return;
	}
	cl->ctl->n_streams++;
}

static void send_ack(struct client *cl, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void send_ack(struct client *cl, const char *fmt, ...)
{
	Hostprof__Response resp = HOSTPROF__RESPONSE__INIT;
	Hostprof__Ack ack = HOSTPROF__ACK__INIT;
	char msg[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	ack.message = msg;
	resp.body_case = HOSTPROF__RESPONSE__BODY_ACK;
	resp.ack = &ack;
	log_info("uid %u: %s", cl->cred.uid, msg);
	(void)send_response(cl, &resp);
}

static int find_watch_target(struct client *cl, const Hostprof__Request *req, struct target *t)
{
	const Hostprof__WatchRequest *wr = req->watch;

	if (wr->thread) {
		*t = (struct target){ .kind = TARGET_ROOT_ONLY, .glob = wr->thread };
		return 0;
	}
	if (!wr->has_pid || wr->pid == 0) {
		(void)send_error(cl, HOSTPROF__ERROR__CODE__BAD_REQUEST, "watch needs a pid or a thread pattern");
		return -EINVAL;
	}
	*t = (struct target){ .kind = TARGET_OWNED, .pid = wr->pid };
	if (proc_read_info(wr->pid, &t->info) < 0) {
		(void)send_error(cl, HOSTPROF__ERROR__CODE__NOT_FOUND, "no process with pid %u", wr->pid);
		return -ENOENT;
	}
	t->owner = t->info.cred;
	return 0;
}

static void handle_watch(struct client *cl, const Hostprof__Request *req, struct target *t)
{
	const struct control_deps *deps = &cl->ctl->deps;
	struct proc_rec *p;
	int r;

	if (t->glob) {
		r = watch_add_glob(deps->watch, t->glob);
		if (r == -EINVAL || r == -E2BIG)
			(void)send_error(cl, HOSTPROF__ERROR__CODE__BAD_REQUEST,
					 r == -EINVAL ? "a thread pattern has 1 to 15 characters: '%s'"
						      : "at most 8 thread patterns: '%s' is one too many",
					 t->glob);
		else if (r < 0)
			(void)send_error(cl, HOSTPROF__ERROR__CODE__INTERNAL, "failed to add '%s': %s", t->glob,
					 strerror(-r));
		else
			send_ack(cl, "watching processes with a thread named %s (until the next reload)", t->glob);
		return;
	}
	p = recorder_find_live(deps->recorder, t->pid);
	if (p && p->info.start_time == t->info.start_time) {
		send_ack(cl, "pid %u (%s) is watched already", t->pid, t->info.comm);
		return;
	}
	if (recorder_user_over_quota(deps->recorder, cl->cred.uid)) {
		struct recorder_user use;

		recorder_user(deps->recorder, cl->cred.uid, &use);
		(void)send_error(cl, HOSTPROF__ERROR__CODE__BUSY,
				 "you may have %u processes watched at once (user_watched) and have %u: unwatch one first",
				 recorder_limits(deps->recorder)->user_procs, use.live);
		return;
	}
	r = watch_pid(deps->watch, t->pid, HP_WATCH_PID);
	if (r == -E2BIG)
		(void)send_error(cl, HOSTPROF__ERROR__CODE__BUSY,
				 "the kernel's watched map is full (%u processes): pid %u is not watched", HP_MAX_WATCHED,
				 t->pid);
	else if (r < 0)
		(void)send_error(cl, r == -ENOENT ? HOSTPROF__ERROR__CODE__NOT_FOUND : HOSTPROF__ERROR__CODE__INTERNAL,
				 "failed to watch pid %u: %s", t->pid, strerror(-r));
	else
		send_ack(cl, "watching pid %u (%s)", t->pid, t->info.comm);
}

static int find_unwatch_target(struct client *cl, const Hostprof__Request *req, struct target *t)
{
	const Hostprof__UnwatchRequest *ur = req->unwatch;
	struct proc_rec *p;

	if (ur->thread) {
		*t = (struct target){ .kind = TARGET_ROOT_ONLY, .glob = ur->thread };
		return 0;
	}
	if (!ur->has_pid || ur->pid == 0) {
		(void)send_error(cl, HOSTPROF__ERROR__CODE__BAD_REQUEST, "unwatch needs a pid or a thread pattern");
		return -EINVAL;
	}
	p = recorder_find_live(cl->ctl->deps.recorder, ur->pid);
	if (!p) {
		(void)send_error(cl, HOSTPROF__ERROR__CODE__NOT_FOUND, "pid %u is not watched", ur->pid);
		return -ENOENT;
	}
	*t = (struct target){ .kind = TARGET_OWNED, .owner = p->info.cred, .pid = ur->pid, .p = p };
	target_live_cred(t, p);
	return 0;
}

static void handle_unwatch(struct client *cl, const Hostprof__Request *req, struct target *t)
{
	int r;

	if (t->glob) {
		r = watch_remove_glob(cl->ctl->deps.watch, t->glob);
		if (r == -ENOENT)
			(void)send_error(cl, HOSTPROF__ERROR__CODE__NOT_FOUND, "'%s' is not a watched thread pattern",
					 t->glob);
		else if (r < 0)
			(void)send_error(cl, HOSTPROF__ERROR__CODE__INTERNAL, "failed to drop '%s': %s", t->glob,
					 strerror(-r));
		else
			send_ack(cl, "no longer watching new threads named %s (processes watched stay)", t->glob);
		return;
	}
	watch_stop(cl->ctl->deps.watch, t->p);
	send_ack(cl, "stopped watching pid %u (%s); its history stays for the window", t->pid, t->p->info.comm);
}

static void handle_snapshots(struct client *cl, const Hostprof__Request *req, struct target *t)
{
	struct snapstore *st = cl->ctl->deps.snapstore;
	Hostprof__Response resp = HOSTPROF__RESPONSE__INIT;
	Hostprof__SnapshotList list = HOSTPROF__SNAPSHOT_LIST__INIT;
	size_t n, k = 0;

	(void)snapstore_ready(st); /* empty while the directory cannot be used */
	n = snapstore_count(st);
	_cleanup_free_ Hostprof__SnapshotEntry *v = calloc(MAX(n, (size_t)1), sizeof(*v));
	_cleanup_free_ Hostprof__SnapshotEntry **pv = calloc(MAX(n, (size_t)1), sizeof(*pv));

	if (!v || !pv) {
		(void)send_error(cl, HOSTPROF__ERROR__CODE__INTERNAL, "out of memory");
		return;
	}
	for (size_t i = n; i-- > 0;) { /* newest first */
		const struct snap_entry *e = snapstore_at(st, i);

		if (!may_see_entry(cl, e))
			continue;
		hostprof__snapshot_entry__init(&v[k]);
		v[k].name = (char *)e->name;
		v[k].has_pid = v[k].has_realtime_ns = v[k].has_bytes = v[k].has_uid = true;
		v[k].pid = e->pid;
		v[k].trigger = (char *)e->trigger;
		v[k].realtime_ns = e->realtime_ns;
		v[k].bytes = e->bytes;
		v[k].files = (char **)e->exts;
		v[k].n_files = e->n_exts;
		v[k].summary = (char *)e->summary;
		v[k].uid = e->owner.uid;
		pv[k] = &v[k];
		k++;
	}
	list.entries = pv;
	list.n_entries = k;
	list.dir = (char *)snapstore_dir(st);
	resp.body_case = HOSTPROF__RESPONSE__BODY_SNAPSHOT_LIST;
	resp.snapshot_list = &list;
	(void)send_response(cl, &resp);
}

static int fetch_not_found(struct client *cl, const Hostprof__FetchRequest *fr)
{
	(void)send_error(cl, HOSTPROF__ERROR__CODE__NOT_FOUND,
			 "no automatic snapshot '%.96s' that you may see: `hostprofctl snapshots` lists them", fr->name);
	return -ENOENT;
}

static int find_fetch_target(struct client *cl, const Hostprof__Request *req, struct target *t)
{
	struct snapstore *st = cl->ctl->deps.snapstore;
	const struct snap_entry *e;

	/* only names from the index: a client never names a path */
	e = snapstore_ready(st) >= 0 ? snapstore_find(st, req->fetch->name) : NULL;
	if (!e)
		return fetch_not_found(cl, req->fetch);
	*t = (struct target){ .kind = TARGET_OWNED, .owner = e->owner, .hide_denial = true, .e = e };
	return 0;
}

static void handle_fetch(struct client *cl, const Hostprof__Request *req, struct target *t)
{
	const struct snap_entry *e = t->e;
	int r;

	if (!stream_slot(cl))
		return;
	r = snapstore_read_hps(cl->ctl->deps.snapstore, e, &cl->snap, &cl->snap_len);
	if (r < 0) {
		(void)send_error(cl, HOSTPROF__ERROR__CODE__INTERNAL, "failed to read %s: %s", e->name, strerror(-r));
		return;
	}
	cl->snap_start = cl->snap_off = 0;
	cl->snap_pid = e->pid;
	cl->snap_events = 0;
	cl->ctl->n_streams++;
	log_info("fetch of %s for uid %u", e->name, cl->cred.uid);
}

/* The memfd, in a frame of its own once what was queued before it went: 0 sent (or the
 * client closed), -EAGAIN to try again when the socket has room. */
static int send_snap_fd(struct client *cl)
{
	Hostprof__Response resp = HOSTPROF__RESPONSE__INIT;
	Hostprof__SnapshotFd msg = HOSTPROF__SNAPSHOT_FD__INIT;
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(int))];
	} cm = {};
	struct hp_buf frame = {};
	struct msghdr mh = { .msg_control = cm.buf, .msg_controllen = sizeof(cm.buf) };
	struct iovec iov;
	struct cmsghdr *c;
	ssize_t n;
	int r;

	if (hp_buf_pending(&cl->out))
		return -EAGAIN;
	msg.has_bytes = msg.has_events = msg.has_pid = true;
	msg.bytes = cl->snap_len;
	msg.events = cl->snap_events;
	msg.pid = cl->snap_pid;
	resp.body_case = HOSTPROF__RESPONSE__BODY_SNAPSHOT_FD;
	resp.snapshot_fd = &msg;
	r = frame_append(&frame, &resp.base, HP_MAX_RESPONSE);
	if (r < 0)
		goto fail;
	iov = (struct iovec){ frame.data + frame.off, hp_buf_pending(&frame) };
	mh.msg_iov = &iov;
	mh.msg_iovlen = 1;
	c = CMSG_FIRSTHDR(&mh);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &cl->snap_fd, sizeof(int));
	do
		n = sendmsg(cl->io.fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
	while (n < 0 && errno == EINTR);
	if (n < 0 && errno == EAGAIN) {
		hp_buf_free(&frame);
		return -EAGAIN;
	}
	if (n < 0) {
		r = negative_errno();
		goto fail;
	}
	/* the descriptor went with the first byte; the rest of a short send goes as bytes */
	hp_buf_consume(&frame, (size_t)n);
	r = hp_buf_pending(&frame) ? hp_buf_append(&cl->out, frame.data + frame.off, hp_buf_pending(&frame)) : 0;
	hp_buf_free(&frame);
	if (r < 0)
		goto fail;
	cl->progress_ns = now_boottime_ns();
	snap_fd_close(cl);
	cl->ctl->n_streams--;
	return 0;
fail:
	hp_buf_free(&frame);
	log_warning_errno(r, "Failed to pass the snapshot of pid %u to client pid %d: %m", cl->snap_pid, cl->cred.pid);
	cl->closing = true;
	snap_fd_close(cl);
	cl->ctl->n_streams--;
	return 0;
}

/* Queue the next chunk of the snapshot being streamed, or its end; or pass its memfd. */
static void stream_more(struct client *cl)
{
	Hostprof__Response resp = HOSTPROF__RESPONSE__INIT;

	if (snap_fd_ready(cl))
		(void)send_snap_fd(cl);
	while (cl->snap && hp_buf_pending(&cl->out) < HP_CHUNK_SIZE) {
		if (cl->snap_off < cl->snap_len) {
			Hostprof__SnapshotChunk chunk = HOSTPROF__SNAPSHOT_CHUNK__INIT;
			size_t n = MIN((size_t)HP_CHUNK_SIZE, cl->snap_len - cl->snap_off);

			chunk.data.data = cl->snap + cl->snap_off;
			chunk.data.len = n;
			resp.body_case = HOSTPROF__RESPONSE__BODY_CHUNK;
			resp.chunk = &chunk;
			if (send_response(cl, &resp) < 0)
				goto fail;
			cl->snap_off += n;
		} else {
			Hostprof__SnapshotEnd end = HOSTPROF__SNAPSHOT_END__INIT;

			end.has_bytes = end.has_events = end.has_pid = true;
			end.bytes = cl->snap_len - cl->snap_start;
			end.events = cl->snap_events;
			end.pid = cl->snap_pid;
			resp.body_case = HOSTPROF__RESPONSE__BODY_END;
			resp.end = &end;
			if (send_response(cl, &resp) < 0)
				goto fail;
			free(cl->snap);
			cl->snap = NULL;
			cl->ctl->n_streams--;
			/* a snapshot's buffers are large and short-lived: give them back */
			if (!cl->ctl->n_streams)
				malloc_trim(0);
		}
	}
	return;
fail:
	cl->closing = true;
	free(cl->snap);
	cl->snap = NULL;
	cl->ctl->n_streams--;
}

/*
 * Every request: the target it acts on (found first: a missing one is answered as
 * such), then who may (authorize), then the handler. `verb` words the refusal.
 */
static const struct request_rule {
	Hostprof__Request__BodyCase body;
	const char *verb;
	int (*find_target)(struct client *cl, const Hostprof__Request *req, struct target *t); /* NULL: anyone's */
	void (*handle)(struct client *cl, const Hostprof__Request *req, struct target *t);
} request_rules[] = {
	{ HOSTPROF__REQUEST__BODY_HELLO, "greet", NULL, handle_hello },
	{ HOSTPROF__REQUEST__BODY_STATUS, "see", NULL, handle_status },
	{ HOSTPROF__REQUEST__BODY_SNAPSHOT, "snapshot", find_snapshot_target, handle_snapshot },
	{ HOSTPROF__REQUEST__BODY_WATCH, "watch", find_watch_target, handle_watch },
	{ HOSTPROF__REQUEST__BODY_UNWATCH, "unwatch", find_unwatch_target, handle_unwatch },
	{ HOSTPROF__REQUEST__BODY_SNAPSHOTS, "list", NULL, handle_snapshots },
	{ HOSTPROF__REQUEST__BODY_FETCH, "fetch", find_fetch_target, handle_fetch },
	{ HOSTPROF__REQUEST__BODY_METRICS, "see", NULL, handle_metrics },
};

/* A launcher (sudo -u, su, setpriv, a job scheduler) that is not the peer's yet: its
 * children that are. ret: "; its child pid N (comm) is yours: ...", or "". */
static void launcher_hint(const struct client *cl, uint32_t pid, char *ret, size_t len)
{
	char path[64], buf[512], *tok, *save = NULL;
	_cleanup_fclose_ FILE *f = NULL;
	size_t n;

	ret[0] = 0;
	snprintf(path, sizeof(path), "/proc/%u/task/%u/children", pid, pid);
	f = fopen(path, "re");
	if (!f)
		return;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = 0;
	for (tok = strtok_r(buf, " \n", &save); tok; tok = strtok_r(NULL, " \n", &save)) {
		struct proc_info child;

		if (proc_read_info(strtoul(tok, NULL, 10), &child) < 0 || !peer_owns(cl, &child.cred))
			continue;
		snprintf(ret, len, "; its child pid %u (%s) is yours: watch or snapshot that one", child.pid, child.comm);
		return;
	}
	snprintf(ret, len, "; if it is a launcher (sudo -u, su, setpriv, a job scheduler), ask again once "
				   "it has dropped its privileges, or watch its child");
}

/* Why the peer does not own the process, for the refusal. */
static void denial_reason(const struct client *cl, const struct request_rule *rule, const struct target *t,
			  char *buf, size_t len)
{
	const struct proc_cred *c = t->has_live && peer_owns(cl, &t->owner) ? &t->live : &t->owner;
	uint32_t u = cl->cred.uid;
	char hint[160] = "";

	if (t->has_live && c == &t->live)
		snprintf(buf, len,
			 "pid %u changed credentials when it executed a program (now uid %u, euid %u): only root may %s it",
			 t->pid, c->uid, c->euid, rule->verb);
	else if (c->uid != u) {
		if (c->uid == 0 || c->euid == 0)
			launcher_hint(cl, t->pid, hint, sizeof(hint));
		snprintf(buf, len, "pid %u belongs to uid %u: only root or its owner may %s it%s", t->pid, c->uid,
			 rule->verb, hint);
	} else if (c->euid != u || c->suid != u || c->fsuid != u)
		snprintf(buf, len, "pid %u runs with another user's privileges (euid %u, saved uid %u): only root may %s it",
			 t->pid, c->euid, c->suid, rule->verb);
	else if (!c->dumpable)
		snprintf(buf, len,
			 "pid %u is not dumpable (a set-id program, or it called prctl(PR_SET_DUMPABLE, 0)): only root "
			 "may %s it",
			 t->pid, rule->verb);
	else
		snprintf(buf, len,
			 "pid %u runs with group %u (effective %u), which you are not in: only root or a member may %s it",
			 t->pid, c->gid, c->egid, rule->verb);
}

/* The policy: true if the peer may act on t; else it was told why (send_error logs
 * every refusal). */
static bool authorize(struct client *cl, const struct request_rule *rule, const Hostprof__Request *req,
		      const struct target *t)
{
	char why[320];

	if (cl->cred.uid == 0 || t->kind == TARGET_NONE)
		return true;
	if (t->kind == TARGET_OWNED && peer_owns(cl, &t->owner) && (!t->has_live || peer_owns(cl, &t->live)))
		return true;
	if (t->kind == TARGET_ROOT_ONLY) {
		(void)send_error(cl, HOSTPROF__ERROR__CODE__DENIED,
				 "only root may change thread patterns (%s): they watch every user's processes", t->glob);
	} else if (t->hide_denial) {
		log_notice("refused uid %u (pid %d): an automatic snapshot of another user", cl->cred.uid, cl->cred.pid);
		(void)fetch_not_found(cl, req->fetch);
	} else {
		denial_reason(cl, rule, t, why, sizeof(why));
		(void)send_error(cl, HOSTPROF__ERROR__CODE__DENIED, "%s", why);
	}
	return false;
}

static void handle_request(struct client *cl, const uint8_t *data, size_t len)
{
	Hostprof__Request *req = hostprof__request__unpack(NULL, len, data);
	const struct request_rule *rule = NULL;
	struct target t = { .kind = TARGET_NONE };

	if (!req) {
		protocol_error(cl, "malformed request");
		return;
	}
	if (!cl->hello && req->body_case != HOSTPROF__REQUEST__BODY_HELLO) {
		protocol_error(cl, "the first message must be a hello");
		goto out;
	}
	for (size_t i = 0; i < ARRAY_SIZE(request_rules); i++)
		if (request_rules[i].body == req->body_case)
			rule = &request_rules[i];
	if (!rule) {
		protocol_error(cl, "unknown request");
		goto out;
	}
	if (rule->find_target && rule->find_target(cl, req, &t) < 0)
		goto out;
	if (authorize(cl, rule, req, &t))
		rule->handle(cl, req, &t);
out:
	hostprof__request__free_unpacked(req, NULL);
}

/* Handle every complete request in the input buffer, one at a time. */
static void process_input(struct client *cl)
{
	const uint8_t *payload;
	size_t len;
	int r;

	while (!cl->closing && !client_streaming(cl) && !client_backlogged(cl)) {
		r = frame_peek(&cl->in, HP_MAX_REQUEST, &payload, &len);
		if (r == 0)
			return;
		if (r == -EMSGSIZE) {
			protocol_error(cl, "request larger than the 64 KiB limit");
			return;
		}
		if (r < 0) {
			protocol_error(cl, "malformed frame");
			return;
		}
		handle_request(cl, payload, len);
		hp_buf_consume(&cl->in, HP_FRAME_HDR + len);
	}
}

static void client_read(struct client *cl)
{
	for (;;) {
		/* never buffer more than one request frame */
		size_t room = HP_FRAME_HDR + HP_MAX_REQUEST - hp_buf_pending(&cl->in);
		ssize_t n;

		if (room == 0 || cl->closing || client_streaming(cl) || client_backlogged(cl))
			break;
		if (hp_buf_reserve(&cl->in, room) < 0) {
			client_close(cl);
			return;
		}
		n = read(cl->io.fd, cl->in.data + cl->in.len, room);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno != EAGAIN)
				client_close(cl);
			break;
		}
		if (n == 0) {
			client_close(cl);
			return;
		}
		cl->in.len += n;
		process_input(cl);
	}
}

static void client_write(struct client *cl)
{
	while (hp_buf_pending(&cl->out)) {
		ssize_t n = write(cl->io.fd, cl->out.data + cl->out.off, hp_buf_pending(&cl->out));

		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno != EAGAIN)
				client_close(cl);
			return;
		}
		hp_buf_consume(&cl->out, n);
		cl->progress_ns = now_boottime_ns();
		stream_more(cl);
	}
	if (cl->closing && !client_streaming(cl))
		client_close(cl);
}

static int client_update_events(struct client *cl)
{
	uint32_t ev = 0;

	if (cl->dead)
		return 0;
	if (!cl->closing && !client_streaming(cl) && !client_backlogged(cl))
		ev |= EPOLLIN;
	if (hp_buf_pending(&cl->out) || snap_fd_ready(cl))
		ev |= EPOLLOUT;
	ev |= EPOLLRDHUP;
	if (ev == cl->epoll_events)
		return 0;
	cl->epoll_events = ev;
	return loop_mod(cl->ctl->deps.loop, &cl->io, ev);
}

static int on_client(struct io_source *src, uint32_t events)
{
	struct client *cl = (struct client *)src;

	if (cl->dead)
		return 0;
	/* a peer that hung up while its snapshot is being built gets nothing more */
	if ((events & (EPOLLERR | EPOLLHUP)) || ((events & EPOLLRDHUP) && cl->job)) {
		client_close(cl);
		return 0;
	}
	if (events & (EPOLLIN | EPOLLRDHUP))
		client_read(cl);
	client_kick(cl);
	return 0;
}

/* Move whatever can move: output, the stream, a request that waited. */
static void client_kick(struct client *cl)
{
	if (!cl->dead) {
		stream_more(cl);
		client_write(cl);
		process_input(cl); /* a request that waited for a stream to end */
		stream_more(cl);
		client_write(cl);
	}
	if (!cl->dead && client_update_events(cl) < 0)
		client_close(cl);
}

/* The peer's supplementary groups, as they were when it connected. */
static int peer_groups(int fd, struct client *cl)
{
	socklen_t len = 64 * sizeof(gid_t);

	for (int tries = 0; tries < 3; tries++) {
		gid_t *v = realloc(cl->groups, len ? len : sizeof(gid_t));

		if (!v)
			return -ENOMEM;
		cl->groups = v;
		if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, cl->groups, &len) == 0) {
			cl->n_groups = len / sizeof(gid_t);
			return 0;
		}
		if (errno != ERANGE || len > 65536 * sizeof(gid_t))
			return -errno;
	}
	return -ERANGE;
}

static int on_accept(struct io_source *src, uint32_t events)
{
	struct control *ctl = (struct control *)src;

	for (;;) {
		socklen_t len = sizeof(struct ucred);
		struct client *cl;
		int fd;

		fd = accept4(src->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno == EINTR)
				continue;
			if (errno != EAGAIN)
				log_warning_errno(-errno, "accept failed: %m, ignoring");
			return 0;
		}
		if (ctl->n_clients >= MAX_CLIENTS) {
			log_warning("%d clients connected: refusing one more", MAX_CLIENTS);
			close(fd);
			continue;
		}
		cl = calloc(1, sizeof(*cl));
		if (!cl) {
			close(fd);
			continue;
		}
		cl->io.fd = fd;
		cl->snap_fd = -1;
		cl->io.dispatch = on_client;
		cl->progress_ns = now_boottime_ns();
		cl->ctl = ctl;
		if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cl->cred, &len) < 0 || peer_groups(fd, cl) < 0) {
			log_warning_errno(-errno, "SO_PEERCRED/SO_PEERGROUPS failed: %m; refusing the client");
			close(fd);
			client_free(cl);
			continue;
		}
		cl->epoll_events = EPOLLIN | EPOLLRDHUP;
		if (loop_add(ctl->deps.loop, &cl->io, cl->epoll_events) < 0) {
			close(fd);
			free(cl);
			continue;
		}
		cl->next = ctl->clients;
		ctl->clients = cl;
		ctl->n_clients++;
	}
}

/* A socket file left by a daemon that died: nobody accepts on it. */
static bool socket_is_stale(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	_cleanup_close_ int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return false;
	strncpy(sa.sun_path, path, sizeof(sa.sun_path) - 1);
	return connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 && errno == ECONNREFUSED;
}

static int make_parent_dir(const char *path)
{
	_cleanup_free_ char *dir = strdup(path);
	char *slash;

	if (!dir)
		return -ENOMEM;
	slash = strrchr(dir, '/');
	if (!slash || slash == dir)
		return 0;
	*slash = 0;
	if (mkdir(dir, 0755) < 0 && errno != EEXIST)
		return -errno;
	return 0;
}

/* Others must not be able to replace the socket: its directory is not writable by
 * anyone but root (a sticky world-writable one, like /tmp, is fine for tests). */
static int check_parent_dir(const char *path)
{
	_cleanup_free_ char *dir = strdup(path);
	char *slash;
	struct stat st;

	if (!dir)
		return -ENOMEM;
	slash = strrchr(dir, '/');
	if (slash == dir)
		slash[1] = 0;
	else if (slash)
		*slash = 0;
	if (stat(dir, &st) < 0)
		return log_error_errno(-errno, "Failed to check %s: %m", dir);
	if ((st.st_mode & 0022) && !(st.st_mode & S_ISVTX))
		return log_error_errno(-EPERM,
				       "%s is writable by others (mode %04o): someone could replace the socket; "
				       "make it 0755 root or choose another --socket",
				       dir, st.st_mode & 07777);
	if (st.st_uid != 0 && !(st.st_mode & S_ISVTX))
		return log_error_errno(-EPERM, "%s belongs to uid %u, not root: refusing to put the socket there", dir,
				       st.st_uid);
	return 0;
}

static int listen_on_path(struct control *ctl, const struct settings *s)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	_cleanup_close_ int fd = -1;
	struct group *gr = NULL;
	struct stat st;
	int r;

	if (strlen(s->socket) >= sizeof(sa.sun_path))
		return log_error_errno(-ENAMETOOLONG, "Socket path %s is too long", s->socket);
	if (s->socket_group && s->socket_group[0]) {
		gr = getgrnam(s->socket_group);
		if (!gr && s->socket_group_explicit)
			return log_error_errno(-ENOENT, "Group '%s' (--socket-group) does not exist: create it "
							"with `groupadd --system %s`",
					       s->socket_group, s->socket_group);
	}
	r = make_parent_dir(s->socket);
	if (r < 0)
		return log_error_errno(r, "Failed to create the directory of %s: %m", s->socket);
	r = check_parent_dir(s->socket);
	if (r < 0)
		return r;
	if (lstat(s->socket, &st) == 0) {
		if (!S_ISSOCK(st.st_mode))
			return log_error_errno(-EEXIST, "%s exists and is not a socket: refusing to replace it",
					       s->socket);
		if (!socket_is_stale(s->socket))
			return log_error_errno(-EADDRINUSE,
					       "Another hostprofd is listening on %s: stop it first "
					       "(systemctl stop hostprofd)",
					       s->socket);
		log_info("removing the stale socket %s", s->socket);
		if (unlink(s->socket) < 0)
			return log_error_errno(-errno, "Failed to remove the stale socket %s: %m", s->socket);
	}
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return log_error_errno(-errno, "Failed to create a socket: %m");
	strcpy(sa.sun_path, s->socket);
	{
		/* created 0600 at once, so there is no moment when it is open to all */
		mode_t old = umask(0177);

		r = bind(fd, (struct sockaddr *)&sa, sizeof(sa));
		umask(old);
	}
	if (r < 0)
		return log_error_errno(-errno, "Failed to bind %s: %m", s->socket);
	ctl->owned = true;
	if (gr) {
		if (chown(s->socket, 0, gr->gr_gid) < 0 || chmod(s->socket, 0660) < 0)
			return log_error_errno(-errno, "Failed to give %s to group %s: %m", s->socket,
					       s->socket_group);
	}
	/* what was made is what was meant: root's, and nobody outside the group may connect */
	if (lstat(s->socket, &st) < 0)
		return log_error_errno(-errno, "Failed to check %s: %m", s->socket);
	if (st.st_uid != 0 || (st.st_mode & 0007) || (!gr && (st.st_mode & 0070)))
		return log_error_errno(-EPERM, "%s came out with owner %u and mode %04o: refusing to serve on it",
				       s->socket, st.st_uid, st.st_mode & 07777);
	if (listen(fd, 64) < 0)
		return log_error_errno(-errno, "Failed to listen on %s: %m", s->socket);
	ctl->io.fd = TAKE_FD(fd);
	log_info("socket %s, mode %s", s->socket, gr ? "0660" : "0600 (root only)");
	return 0;
}

int control_new(const struct control_deps *deps, struct control **ret)
{
	struct control *ctl = calloc(1, sizeof(*ctl));
	int n, r;

	if (!ctl)
		return log_error_errno(-ENOMEM, "Out of memory");
	ctl->deps = *deps;
	ctl->start_ns = now_boottime_ns();
	ctl->io.fd = -1;
	ctl->io.dispatch = on_accept;
	ctl->path = strdup(deps->settings->socket);
	if (!ctl->path) {
		free(ctl);
		return log_error_errno(-ENOMEM, "Out of memory");
	}
	*ret = ctl; /* control_free() cleans up on failure */

	n = sd_listen_fds(1);
	if (n > 1)
		return log_error_errno(-EINVAL, "Got %d sockets from systemd, expected one", n);
	if (n == 1) {
		if (sd_is_socket_unix(SD_LISTEN_FDS_START, SOCK_STREAM, 1, NULL, 0) <= 0)
			return log_error_errno(-EINVAL, "The fd systemd passed is not a listening Unix stream socket");
		ctl->io.fd = SD_LISTEN_FDS_START;
		(void)fcntl(ctl->io.fd, F_SETFL, fcntl(ctl->io.fd, F_GETFL) | O_NONBLOCK);
		(void)fcntl(ctl->io.fd, F_SETFD, FD_CLOEXEC);
		log_info("listening on the socket systemd passed");
	} else {
		r = listen_on_path(ctl, deps->settings);
		if (r < 0)
			return r;
	}
	return loop_add(deps->loop, &ctl->io, EPOLLIN);
}

/* Once a second: a client that has output waiting and has read none of it for
 * STALL_NS is closed, so a client that never reads cannot hold a snapshot forever. */
void control_tick(struct control *ctl, uint64_t now)
{
	uint64_t events;

	if (!ctl)
		return;
	events = recorder_events(ctl->deps.recorder);
	if (ctl->rate_ns && now > ctl->rate_ns)
		ctl->events_per_sec = (double)(events - ctl->rate_events) * NSEC_PER_SEC / (now - ctl->rate_ns);
	ctl->rate_ns = now;
	ctl->rate_events = events;
	for (struct client *cl = ctl->clients; cl; cl = cl->next) {
		if (cl->dead)
			continue;
		if (!hp_buf_pending(&cl->out) && !cl->snap && !snap_fd_ready(cl)) {
			cl->progress_ns = now;
			continue;
		}
		if (now - cl->progress_ns > STALL_NS) {
			log_notice("client pid %d uid %u read nothing for %llu s: closing it", cl->cred.pid, cl->cred.uid,
				   (unsigned long long)(STALL_NS / NSEC_PER_SEC));
			client_close(cl);
		}
	}
}

void control_free(struct control *ctl)
{
	if (!ctl)
		return;
	for (struct client *cl = ctl->clients; cl; cl = cl->next)
		client_close(cl);
	control_gc(ctl);
	if (ctl->io.fd >= 0)
		close(ctl->io.fd);
	if (ctl->owned && unlink(ctl->path) < 0 && errno != ENOENT)
		log_warning_errno(-errno, "Failed to remove %s: %m, ignoring", ctl->path);
	free(ctl->path);
	free(ctl);
}
