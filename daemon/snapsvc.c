// SPDX-License-Identifier: GPL-2.0-only
/*
 * The snapshot service; see snapsvc.h. What is read from the kernel is read in the
 * parent, before the fork: the child never touches a BPF map or a ring.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "capture.h"
#include "framing.h"
#include "macro.h"
#include "python.h"
#include "snapshot.h"
#include "snapsvc.h"
#include "symbolize.h"

struct snapsvc {
	struct loop *loop;
	struct capture *capture;
	struct recorder *recorder;
	struct symbolizer *symbolizer;
	struct snapsvc_params params;
	struct py_instants *python_instants;
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
	Hostprof__PythonState *python; /* read at req->python_instant, owned */
	bool python_claimed;
	/* for a job */
	struct snapsvc *svc;
	snapsvc_then_fn then;
	void *arg;
};

struct snapsvc *snapsvc_new(struct loop *l, struct capture *c, struct recorder *rec, struct symbolizer *sym)
{
	struct snapsvc *svc = calloc(1, sizeof(*svc));

	if (!svc)
		return NULL;
	svc->loop = l;
	svc->capture = c;
	svc->recorder = rec;
	svc->symbolizer = sym;
	return svc;
}

void snapsvc_free(struct snapsvc *svc)
{
	if (svc)
		py_instants_free(svc->python_instants);
	free(svc);
}

int snapsvc_set_worker(struct snapsvc *svc, struct worker *w)
{
	py_instants_free(svc->python_instants);
	svc->python_instants = py_instants_new(w);
	return svc->python_instants ? 0 : -ENOMEM;
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
	return capture_drops(svc->capture, ret);
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
	col->n_drops = capture_drops(svc->capture, col->drops);
	col->events_total = recorder_events(svc->recorder);
	col->interference = capture_interference(svc->capture);
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

/* Off the loop (a job's child, or --record after it): symbolize and build. */
static int build(struct snapsvc *svc, const struct collected *col, uint8_t **ret_data, size_t *ret_len,
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
		.markers = req->markers,
		.n_markers = req->n_markers,
	};
	Hostprof__PythonState *python = NULL;
	int r;

	if (svc->symbolizer) {
		/* mappings noted since the last tick: read them here, off the loop */
		if (!req->p->exit_ns && (req->p->maps_dirty || symbolizer_refresh_in_flight(svc->symbolizer, req->p->info.pid)))
			(void)symbolizer_refresh_process(svc->symbolizer, req->p->info.pid);
		ctx.resolve = resolve_frame;
		ctx.resolve_ud = svc->symbolizer;
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
	r = build(svc, col, ret_data, ret_len, ret_events);
	collected_free(col);
	return r;
}

/* In the child. */
static int job_work(void *arg, struct hp_buf *out)
{
	struct collected *col = arg;
	uint8_t *data = NULL;
	uint64_t events = 0;
	size_t len = 0;
	int r;

	r = build(col->svc, col, &data, &len, &events);
	if (r >= 0)
		r = col->then(col->arg, data, len, events, out);
	free(data);
	return r;
}

void snapsvc_cancel(struct snapjob *job)
{
	snapjob_cancel(job);
}

int snapsvc_start(struct snapsvc *svc, const struct snapshot_req *req, snapsvc_then_fn then, void *arg,
		  snapjob_done_fn done, void *ud, struct snapjob **ret)
{
	struct collected *col;
	int r;

	r = collect(svc, req, &col);
	if (r < 0)
		return r;
	col->svc = svc;
	col->then = then;
	col->arg = arg;
	r = snapjob_start(svc->loop, SNAPSVC_CPU_LIMIT_S, job_work, col, done, ud, ret);
	collected_free(col); /* the child has its copy */
	return r;
}
