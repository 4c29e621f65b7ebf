// SPDX-License-Identifier: GPL-2.0-only
/*
 * The snapshot service; see snapsvc.h. What is read from the kernel is read in the
 * parent, before the fork: the child never touches a BPF map or a ring.
 */
#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "capture.h"
#include "framing.h"
#include "glob_match.h"
#include "log.h"
#include "macro.h"
#include "python.h"
#include "snapshot.h"
#include "snapsvc.h"
#include "symbolize.h"
#include "worker.h"

struct snapsvc {
	struct loop *loop;
	struct capture *capture;
	struct recorder *recorder;
	struct symbolizer *symbolizer;
	struct snapsvc_params params;
	uint32_t daemon_pid;
	struct py_instants *python_instants;
	const struct py_names *py_names;
};

/* What the kernel side said at the moment of the request. */
struct collected {
	struct snapshot_req req;
	struct drop_count drops[HP_DROP_CAUSES];
	size_t n_drops;
	struct hist_entry *hists; /* owned, unless they are the process's saved ones */
	size_t n_hists;
	bool hists_owned;
	uint64_t events_total;
	unsigned interference;
	uint32_t syscall_mode;
	uint64_t syscall_mode_since_ns;
	Hostprof__PythonState *python; /* read at req->python_instant, owned */
	bool python_claimed;
	/* for a job */
	struct snapsvc *svc;
	snapsvc_then_fn then;
	void *arg;
};

/* In a job's child: the DWARF lookups it made, for the daemon's symbolizer. */
static void learn_produce(void *ud, uint8_t **ret, size_t *ret_len)
{
	symbolizer_learned(ud, ret, ret_len);
}

/* Back in the loop: kept, so that the next job does not open that DWARF for them. */
static void learn_consume(void *ud, const uint8_t *data, size_t len)
{
	int r = symbolizer_learn(ud, data, len);

	if (r < 0)
		log_warning_errno(r, "Failed to keep what a snapshot job found in DWARF: %m, ignoring");
}

struct snapsvc *snapsvc_new(struct loop *l, struct capture *c, struct recorder *rec, struct symbolizer *sym)
{
	struct snapsvc *svc = calloc(1, sizeof(*svc));

	if (!svc)
		return NULL;
	svc->loop = l;
	svc->capture = c;
	svc->recorder = rec;
	svc->symbolizer = sym;
	svc->daemon_pid = (uint32_t)getpid();
	if (sym)
		snapjob_set_learn(learn_produce, learn_consume, sym);
	return svc;
}

void snapsvc_free(struct snapsvc *svc)
{
	if (!svc)
		return;
	if (svc->symbolizer)
		snapjob_set_learn(NULL, NULL, NULL);
	py_instants_free(svc->python_instants);
	free(svc);
}

static int fork_gate_begin(void *ud)
{
	return worker_fork_begin(ud);
}

static void fork_gate_end(void *ud)
{
	worker_fork_end(ud);
}

int snapsvc_set_worker(struct snapsvc *svc, struct worker *w)
{
	/* a job is forked while no worker thread runs an item: it could hold a lock there */
	snapjob_set_fork_gate(fork_gate_begin, fork_gate_end, w);
	py_instants_free(svc->python_instants);
	svc->python_instants = py_instants_new(w);
	return svc->python_instants ? 0 : -ENOMEM;
}

void snapsvc_set_py_names(struct snapsvc *svc, const struct py_names *names)
{
	svc->py_names = names;
}

int snapsvc_python_instant(struct snapsvc *svc, uint32_t pid, uint64_t *ret_id)
{
	if (!svc->params.python || !svc->python_instants)
		return -ENOTSUP;
	return py_instants_read(svc->python_instants, pid, ret_id);
}

void snapsvc_set_params(struct snapsvc *svc, const struct snapsvc_params *params)
{
	svc->params = *params;
}

void snapsvc_catch_up(struct snapsvc *svc)
{
	(void)capture_drain(svc->capture);
}

size_t snapsvc_drops(const struct snapsvc *svc, struct drop_count ret[HP_DROP_CAUSES])
{
	size_t n = capture_drops(svc->capture, ret);

	ret[n++] = (struct drop_count){ "no_process", recorder_unowned(svc->recorder) };
	return n;
}

static void collected_free(struct collected *col)
{
	if (!col)
		return;
	if (col->hists_owned)
		free(col->hists);
	python_state_free(col->python);
	free(col);
}

static void collected_free_arg(void *arg)
{
	collected_free(arg);
}

/* In the loop: drain once, read the histograms and drops. */
static int collect(struct snapsvc *svc, const struct snapshot_req *req, struct collected **ret)
{
	const struct proc_rec *p = req->p;
	struct collected *col = calloc(1, sizeof(*col));
	int r;

	if (!col)
		return -ENOMEM;
	col->req = *req;
	(void)capture_drain(svc->capture); /* include what is still in the rings */
	col->n_drops = snapsvc_drops(svc, col->drops);
	col->events_total = recorder_events(svc->recorder);
	col->interference = capture_interference(svc->capture);
	col->syscall_mode = capture_syscall_mode(svc->capture, &col->syscall_mode_since_ns);
	/* the Python stacks read when it was asked for, if that read is done (else: at the build) */
	if (req->python_instant && py_instants_claim(svc->python_instants, req->python_instant, &col->python) >= 0)
		col->python_claimed = true;
	if (p->hists_saved) {
		col->hists = p->final_hists;
		col->n_hists = p->n_final_hists;
	} else {
		r = capture_histograms(svc->capture, p->info.pid, &col->hists, &col->n_hists);
		if (r < 0) {
			free(col);
			return r;
		}
		col->hists_owned = true;
	}
	*ret = col;
	return 0;
}

static int resolve_frame(void *ud, uint32_t pid, uint64_t addr, bool kernel, struct sym_result *ret)
{
	return symbolizer_resolve(ud, pid, addr, kernel, ret);
}

/*
 * The kernel's Python stacks resolved in the job, against the process's memory now: a
 * py_proc per process, opened at its first stack (discovery again: the job trusts
 * nothing the loop learnt), its code objects cached and checked at every use.
 */
#define PY_RESOLVE_PROCS 8

struct py_resolver {
	const struct py_names *names; /* read while the processes lived (the loop's, as forked) */
	struct {
		uint32_t pid;
		struct py_proc *p;
	} procs[PY_RESOLVE_PROCS];
	size_t n;
	struct py_stack_frame frames[HP_PY_MAX_FRAMES];
	size_t n_frames;
};

static void py_resolver_done(struct py_resolver *pr)
{
	py_stack_frames_free(pr->frames, pr->n_frames);
	for (size_t i = 0; i < pr->n; i++)
		py_proc_free(pr->procs[i].p);
}

static int resolve_python(void *ud, uint32_t pid, uint64_t ts, const uint64_t *pairs, size_t n,
			  struct snap_pyframe *out, size_t *ret_n, const char **ret_why)
{
	struct py_resolver *pr = ud;
	struct py_proc *p = NULL;
	int r = -ENOENT;

	py_stack_frames_free(pr->frames, pr->n_frames);
	pr->n_frames = 0;
	/* the names read as it ran; else (not read yet) the live process's */
	if (pr->names)
		r = py_names_resolve_stack(pr->names, pid, ts, pairs, MIN(n, (size_t)HP_PY_MAX_FRAMES), pr->frames,
					   &pr->n_frames, ret_why);
	if (r != -ENOENT) {
		if (r < 0)
			return r;
		goto out;
	}
	for (size_t i = 0; i < pr->n && !p; i++)
		if (pr->procs[i].pid == pid)
			p = pr->procs[i].p;
	if (!p) {
		if (pr->n == PY_RESOLVE_PROCS) {
			*ret_why = "python stack unreadable: too many processes in one snapshot";
			return -E2BIG;
		}
		p = py_proc_open(pid);
		if (!p)
			return -errno;
		pr->procs[pr->n].pid = pid;
		pr->procs[pr->n++].p = p;
	}
	if (py_proc_kind(p, ret_why) != PY_STATUS_OK) {
		if (!py_proc_kind(p, NULL))
			*ret_why = "python stack unreadable: the process is gone or no more CPython";
		return -EPROTO;
	}
	r = py_proc_resolve_stack(p, pairs, MIN(n, (size_t)HP_PY_MAX_FRAMES), pr->frames, &pr->n_frames, ret_why);
	if (r < 0)
		return r;
out:
	for (size_t i = 0; i < pr->n_frames; i++)
		out[i] = (struct snap_pyframe){
			.code = pr->frames[i].code,
			.function = pr->frames[i].function,
			.file = pr->frames[i].file,
			.line = pr->frames[i].line,
			.eval_entry = pr->frames[i].eval_entry,
		};
	*ret_n = pr->n_frames;
	return 0;
}

/* Off the loop (a job's child, or --record after it): symbolize and build. */
/* The snapshot, room bytes into the buffer *ret_data (snapshot_build()). */
static int build(struct snapsvc *svc, const struct collected *col, size_t room, uint8_t **ret_data, size_t *ret_len,
		 uint64_t *ret_events)
{
	const struct snapshot_req *req = &col->req;
	struct snapshot_ctx ctx = {
		.window_ns = req->window_ns,
		.end_ns = req->end_ns,
		.reason = req->reason,
		.hide_kernel_addresses = req->hide_kernel_addresses,
		.events_total = col->events_total,
		.drops = col->drops,
		.n_drops = col->n_drops,
		.host = recorder_host(svc->recorder),
		.hists = col->hists,
		.n_hists = col->n_hists,
		.syscall_min_ns = svc->params.syscall_min_ns,
		.offcpu_min_ns = svc->params.offcpu_min_ns,
		.sample_hz = svc->params.sample_hz,
		.interference = col->interference,
		.irq_min_ns = svc->params.irq_min_ns,
		.lock_min_ns = svc->params.lock_min_ns,
		.gil_min_ns = svc->params.gil_min_ns,
		.syscall_mode = col->syscall_mode,
		.syscall_mode_since_ns = col->syscall_mode_since_ns,
		.markers = req->markers,
		.n_markers = req->n_markers,
		.dispatch_threads = svc->params.dispatch_threads,
		.n_dispatch_threads = svc->params.n_dispatch_threads,
		.producer_pid = svc->daemon_pid,
		.pack_room = room,
	};
	Hostprof__Drop stops[UNWIND_STOP_MAX], *stop_ptrs[UNWIND_STOP_MAX];
	Hostprof__PythonState *python = NULL;
	struct py_resolver pyr = { .names = svc->py_names };
	Hostprof__UnwindStats unwind;
	struct symbolizer_info si;
	int r;

	if (svc->params.python) {
		ctx.py_resolve = resolve_python;
		ctx.py_ud = &pyr;
	}
	if (svc->symbolizer) {
		/* mappings noted since the last tick: read them here, off the loop */
		if (!req->p->exit_ns && (req->p->maps_dirty || symbolizer_refresh_in_flight(svc->symbolizer, req->p->info.pid)))
			(void)symbolizer_refresh_process(svc->symbolizer, req->p->info.pid);
		ctx.resolve = resolve_frame;
		ctx.resolve_ud = svc->symbolizer;
		symbolizer_info(svc->symbolizer, &si);
		symbolizer_unwind_stats(&si, &unwind, stops, stop_ptrs);
		ctx.unwind = &unwind;
	}
	if (col->python_claimed) {
		ctx.python = col->python;
	} else if (svc->params.python && !req->p->exit_ns) {
		/* every thread's Python stack, now: off the loop, within its own time budget; the
		 * snapshot goes on without them when even that fails (no memory) */
		if (python_read_state(req->p->info.pid, NULL, &python) < 0)
			python = NULL;
		ctx.python = python;
	}
	r = snapshot_build(req->p, &ctx, ret_data, ret_len, ret_events);
	python_state_free(python);
	py_resolver_done(&pyr);
	return r;
}

int snapsvc_build(struct snapsvc *svc, const struct snapshot_req *req, uint8_t **ret_data, size_t *ret_len,
		  uint64_t *ret_events)
{
	struct collected *col;
	int r;

	r = collect(svc, req, &col);
	if (r < 0)
		return r;
	r = build(svc, col, 0, ret_data, ret_len, ret_events);
	collected_free(col);
	return r;
}

static bool is_dispatch(const struct snapsvc_params *params, const char *comm)
{
	for (size_t i = 0; i < params->n_dispatch_threads; i++)
		if (thread_glob_match(params->dispatch_threads[i], comm))
			return true;
	return false;
}

/* The CPUs that the dispatch threads of the live watched processes may run on: a job
 * runs elsewhere where it may. */
static void dispatch_cpus(const struct snapsvc *svc, cpu_set_t *ret_avoid)
{
	cpu_set_t avoid, set;

	CPU_ZERO(&avoid);
	for (size_t i = 0; i < recorder_count(svc->recorder); i++) {
		const struct proc_rec *p = recorder_at(svc->recorder, i);

		for (size_t k = 0; !p->exit_ns && k < p->n_threads; k++) {
			char comm[HP_COMM_LEN + 1];

			snprintf(comm, sizeof(comm), "%.*s", HP_COMM_LEN, p->threads[k].comm);
			if (!is_dispatch(&svc->params, comm) ||
			    sched_getaffinity((pid_t)p->threads[k].tid, sizeof(set), &set) < 0)
				continue; /* gone meanwhile */
			CPU_OR(&avoid, &avoid, &set);
		}
	}
	*ret_avoid = avoid;
}

/* In the child. */
static int job_work(void *arg, struct hp_buf *out)
{
	struct collected *col = arg;
	uint8_t *data = NULL;
	uint64_t events = 0;
	size_t len = 0;
	int r;

	r = build(col->svc, col, SNAPSVC_ROOM, &data, &len, &events);
	if (r >= 0)
		r = col->then(col->arg, data + SNAPSVC_ROOM, len - SNAPSVC_ROOM, events, out);
	if (out->data != data) /* not taken by then */
		free(data);
	return r;
}

void snapsvc_tick(struct snapsvc *svc)
{
	cpu_set_t avoid;

	if (!snapjob_running())
		return;
	dispatch_cpus(svc, &avoid);
	snapjob_place_all(&avoid);
}

void snapsvc_cancel(struct snapjob *job)
{
	snapjob_cancel(job);
}

int snapsvc_start(struct snapsvc *svc, const struct snapshot_req *req, snapsvc_then_fn then, void *arg,
		  snapjob_done_fn done, void *ud, struct snapjob **ret)
{
	struct collected *col;
	cpu_set_t avoid;
	int r;

	r = collect(svc, req, &col);
	if (r < 0)
		return r;
	col->svc = svc;
	col->then = then;
	col->arg = arg;
	dispatch_cpus(svc, &avoid);
	return snapjob_start(svc->loop, SNAPSVC_CPU_LIMIT_S, &avoid, job_work, col, collected_free_arg, done, ud, ret);
}
