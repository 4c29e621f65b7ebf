// SPDX-License-Identifier: GPL-2.0-only
/*
 * A fake of daemon/snapsvc.c (see fakes.h): no capture behind it. A snapshot is a real
 * snapshot job (snapjob.c forks, the loop reads the child's pipe), whose work hands the
 * bytes the test gave (a fixture .hps) to the caller's `then`, as the real service hands
 * the snapshot it built.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fakes.h"
#include "framing.h"
#include "snapsvc.h"

/* One job started: what to call in the child and back in the loop. */
struct fake_job {
	struct snapsvc *svc;
	snapsvc_then_fn then;
	void *arg;
	snapjob_done_fn done;
	void *ud;
	bool gated;
	struct fake_job *next;
};

struct snapsvc {
	struct loop *loop;
	struct snapsvc_params params;
	uint8_t *snap;
	size_t snap_len;
	uint64_t events;
	struct drop_count drops[HP_DROP_CAUSES];
	size_t n_drops;
	int start_result;
	int gate[2]; /* held: the children wait for EOF on gate[0] */
	struct fake_snap_req reqs[FAKE_SNAPSVC_MAX_REQS];
	size_t n_reqs;
	struct fake_job *jobs; /* done not called yet */
	size_t in_flight;
	uint64_t catch_ups;
};

struct snapsvc *snapsvc_new(struct loop *l, struct capture *c, struct recorder *rec, struct symbolizer *sym)
{
	struct snapsvc *svc = calloc(1, sizeof(*svc));

	if (!svc)
		return NULL;
	svc->loop = l;
	svc->gate[0] = svc->gate[1] = -1;
	return svc;
}

void snapsvc_free(struct snapsvc *svc)
{
	if (!svc)
		return;
	fake_snapsvc_release(svc);
	/* jobs that were cancelled never come back */
	while (svc->jobs) {
		struct fake_job *j = svc->jobs;

		svc->jobs = j->next;
		free(j);
	}
	free(svc->snap);
	free(svc);
}

void snapsvc_set_params(struct snapsvc *svc, const struct snapsvc_params *params)
{
	svc->params = *params;
}

int snapsvc_set_worker(struct snapsvc *svc, struct worker *w)
{
	return 0;
}

/* No worker here: a trigger's snapshot reads its Python stacks at its build. */
int snapsvc_python_instant(struct snapsvc *svc, uint32_t pid, uint64_t *ret_id)
{
	return -ENOTSUP;
}

void snapsvc_catch_up(struct snapsvc *svc)
{
	svc->catch_ups++;
}

size_t snapsvc_drops(const struct snapsvc *svc, struct drop_count ret[HP_DROP_CAUSES])
{
	memcpy(ret, svc->drops, svc->n_drops * sizeof(*ret));
	return svc->n_drops;
}

static void note_request(struct snapsvc *svc, const struct snapshot_req *req)
{
	struct fake_snap_req *f;

	if (svc->n_reqs >= FAKE_SNAPSVC_MAX_REQS)
		return;
	f = &svc->reqs[svc->n_reqs++];
	*f = (struct fake_snap_req){
		.pid = req->p->info.pid,
		.window_ns = req->window_ns,
		.end_ns = req->end_ns,
		.n_markers = req->n_markers,
	};
	snprintf(f->reason, sizeof(f->reason), "%s", req->reason ? req->reason : "");
	if (req->n_markers) {
		const Hostprof__Marker *m = req->markers[0];

		f->marker_ts = m->has_ts ? m->ts : 0;
		f->marker_tid = m->has_tid ? m->tid : 0;
		snprintf(f->marker_name, sizeof(f->marker_name), "%s", m->name ? m->name : "");
		snprintf(f->marker_detail, sizeof(f->marker_detail), "%s", m->detail ? m->detail : "");
	}
}

/* In the job's child. */
static int fake_work(void *arg, struct hp_buf *out)
{
	struct fake_job *j = arg;
	struct snapsvc *svc = j->svc;
	uint8_t *buf;
	int r;

	if (j->gated) {
		char c;

		close(svc->gate[1]);
		while (read(svc->gate[0], &c, 1) < 0 && errno == EINTR)
			;
	}
	/* as snapsvc's: the hps SNAPSVC_ROOM bytes into a buffer then may take */
	buf = malloc(SNAPSVC_ROOM + svc->snap_len);
	if (!buf)
		return -ENOMEM;
	memcpy(buf + SNAPSVC_ROOM, svc->snap, svc->snap_len);
	r = j->then(j->arg, buf + SNAPSVC_ROOM, svc->snap_len, svc->events, out);
	if (out->data != buf)
		free(buf);
	return r;
}

/* Back in the loop. */
static void fake_done(void *ud, int status, uint8_t *data, size_t len)
{
	struct fake_job *j = ud;
	struct snapsvc *svc = j->svc;
	snapjob_done_fn done = j->done;
	void *done_ud = j->ud;

	for (struct fake_job **pp = &svc->jobs; *pp; pp = &(*pp)->next)
		if (*pp == j) {
			*pp = j->next;
			break;
		}
	svc->in_flight--;
	free(j);
	done(done_ud, status, data, len);
}

int snapsvc_start(struct snapsvc *svc, const struct snapshot_req *req, snapsvc_then_fn then, void *arg,
		  snapjob_done_fn done, void *ud, struct snapjob **ret)
{
	struct fake_job *j;
	int r;

	note_request(svc, req);
	if (svc->start_result < 0)
		return svc->start_result;
	j = calloc(1, sizeof(*j));
	if (!j)
		return -ENOMEM;
	*j = (struct fake_job){
		.svc = svc, .then = then, .arg = arg, .done = done, .ud = ud, .gated = svc->gate[1] >= 0
	};
	r = snapjob_start(svc->loop, SNAPSVC_CPU_LIMIT_S, NULL, fake_work, j, NULL, fake_done, j, ret);
	if (r < 0) {
		free(j);
		return r;
	}
	j->next = svc->jobs;
	svc->jobs = j;
	svc->in_flight++;
	return 0;
}

int snapsvc_build(struct snapsvc *svc, const struct snapshot_req *req, uint8_t **ret_data, size_t *ret_len,
		  uint64_t *ret_events)
{
	uint8_t *data;

	note_request(svc, req);
	data = malloc(svc->snap_len ? svc->snap_len : 1);
	if (!data)
		return -ENOMEM;
	memcpy(data, svc->snap, svc->snap_len);
	*ret_data = data;
	*ret_len = svc->snap_len;
	*ret_events = svc->events;
	return 0;
}

int fake_snapsvc_set_snapshot(struct snapsvc *svc, const uint8_t *data, size_t len, uint64_t events)
{
	uint8_t *copy = malloc(len ? len : 1);

	if (!copy)
		return -ENOMEM;
	memcpy(copy, data, len);
	free(svc->snap);
	svc->snap = copy;
	svc->snap_len = len;
	svc->events = events;
	return 0;
}

void fake_snapsvc_set_drops(struct snapsvc *svc, const struct drop_count *drops, size_t n)
{
	svc->n_drops = n < HP_DROP_CAUSES ? n : HP_DROP_CAUSES;
	memcpy(svc->drops, drops, svc->n_drops * sizeof(*drops));
}

void fake_snapsvc_set_start_result(struct snapsvc *svc, int r)
{
	svc->start_result = r;
}

int fake_snapsvc_hold(struct snapsvc *svc)
{
	if (svc->gate[1] >= 0)
		return 0;
	return pipe2(svc->gate, O_CLOEXEC) < 0 ? -errno : 0;
}

void fake_snapsvc_release(struct snapsvc *svc)
{
	for (int i = 0; i < 2; i++)
		if (svc->gate[i] >= 0) {
			close(svc->gate[i]);
			svc->gate[i] = -1;
		}
}

size_t fake_snapsvc_requests(const struct snapsvc *svc, const struct fake_snap_req **ret)
{
	*ret = svc->reqs;
	return svc->n_reqs;
}

void fake_snapsvc_reset(struct snapsvc *svc)
{
	svc->n_reqs = 0;
	svc->catch_ups = 0;
}

size_t fake_snapsvc_in_flight(const struct snapsvc *svc)
{
	return svc->in_flight;
}

uint64_t fake_snapsvc_catch_ups(const struct snapsvc *svc)
{
	return svc->catch_ups;
}

void snapsvc_cancel(struct snapjob *job)
{
	snapjob_cancel(job);
}
