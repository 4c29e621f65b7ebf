// SPDX-License-Identifier: GPL-2.0-only
/*
 * What the metrics cost the daemon, timing only (a meson benchmark, never pass/fail):
 *  - timeacct_record() per switch record, the drain's added work (a thread's switch-out
 *    and switch-in with a victim-CPU switch between them);
 *  - making and writing the metrics file (metrics_write) for 16, 64 and 256 watched
 *    processes of 32 threads each, one of them a dispatch thread (acl_thread).
 * The processes are children of this program (recorder_watch reads /proc/PID); the
 * records are built here. `meson test -C build --benchmark metrics-cost -v`.
 */
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fakes.h"
#include "loop.h"
#include "macro.h"
#include "metrics.h"
#include "recorder.h"
#include "settings.h"
#include "snapstore.h"
#include "snapsvc.h"
#include "timeacct.h"
#include "trigger.h"

#define THREADS 32

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * NSEC_PER_SEC + ts.tv_nsec;
}

static void sw(struct recorder *rec, uint64_t ts, uint32_t cpu, uint32_t pt, uint32_t pp, uint32_t state,
	       uint32_t nt, uint32_t np, uint16_t flags, uint32_t victim)
{
	struct hp_switch e = {
		.hdr = { .ts = ts, .type = HP_EV_SWITCH, .size = sizeof(e), .cpu = cpu },
		.prev_tid = pt,
		.prev_pid = pp,
		.next_tid = nt,
		.next_pid = np,
		.prev_prio = 120,
		.next_prio = 120,
		.prev_state = state,
		.flags = flags,
		.next_wait_ns = 1000,
		.next_wait_kind = HP_WAIT_PREEMPT,
		.victim_pid = victim,
	};

	memcpy(e.prev_comm, "worker", 7);
	memcpy(e.next_comm, "other", 6);
	recorder_append(rec, &e.hdr);
}

int main(void)
{
	static const size_t sizes[] = { 16, 64, 256 };
	struct recorder_limits lim = { .window_ns = 3600 * NSEC_PER_SEC,
				       .buffer_bytes = 1 << 20,
				       .memory_bytes = 1ULL << 32,
				       .host_bytes = 1 << 20 };
	char dir[] = "/tmp/hostprof-bench-metrics.XXXXXX";
	struct settings s = { .interference = HP_INTF_IRQ | HP_INTF_RECLAIM | HP_INTF_FAULTS | HP_INTF_LOCKS,
			      .metrics_interval_ns = NSEC_PER_SEC };
	pid_t kids[256];
	size_t n_kids = 0;

	if (!mkdtemp(dir))
		return 1;
	s.metrics_dir = dir;
	strcpy(s.dispatch_threads[0], "acl_thread");
	s.n_dispatch_threads = 1;
	for (size_t k = 0; k < ARRAY_SIZE(sizes); k++) {
		struct recorder *rec = recorder_new(&lim);
		struct loop *l = loop_new();
		struct snapsvc *svc = snapsvc_new(l, NULL, rec, NULL);
		struct snapstore *st = snapstore_new(dir, 10, 1 << 20);
		struct triggers *tr = triggers_new(rec, svc, st);
		struct metrics *m;
		uint64_t t0, t1, ts = NSEC_PER_SEC, n_rec = 0, bytes;
		int reps = 20;

		while (n_kids < sizes[k]) {
			pid_t p = fork();

			if (p == 0) {
				pause();
				_exit(0);
			}
			kids[n_kids++] = p;
		}
		for (size_t i = 0; i < sizes[k]; i++)
			recorder_watch(rec, kids[i], HP_WATCH_PID, 0, ts, NULL);
		for (size_t i = 0; i < sizes[k]; i++)
			for (uint32_t t = 0; t < THREADS; t++) {
				struct hp_comm c = {
					.hdr = { .ts = ts, .type = HP_EV_COMM, .size = sizeof(c) },
					.tid = kids[i] * 100 + t,
					.pid = kids[i]
				};

				snprintf(c.comm, sizeof(c.comm), "%s", t ? "worker" : "acl_thread");
				recorder_append(rec, &c.hdr);
			}
		/* each thread: 100 preemptions of 1 us, with a victim-CPU switch in each */
		t0 = now_ns();
		for (int round = 0; round < 100; round++)
			for (size_t i = 0; i < sizes[k]; i++)
				for (uint32_t t = 0; t < THREADS; t++) {
					uint32_t pid = kids[i], tid = pid * 100 + t;

					sw(rec, ts, 1, tid, pid, 0, 7, 7, HP_SW_PREV_WATCHED, 0);
					sw(rec, ts + 400, 1, 7, 7, 0, 8, 8, HP_SW_VICTIM_CPU, pid);
					sw(rec, ts + 1000, 1, 8, 8, 0, tid, pid, HP_SW_NEXT_WATCHED, 0);
					ts += 2000;
					n_rec += 3;
				}
		t1 = now_ns();
		m = metrics_new(&(struct metrics_deps){
			.recorder = rec, .snapsvc = svc, .snapstore = st, .triggers = tr, .settings = &s });
		if (!rec || !svc || !st || !tr || !m)
			return 1;
		printf("%zu processes x %d threads: %.0f ns per switch record filed (recorder_append with timeacct)\n",
		       sizes[k], THREADS, (double)(t1 - t0) / n_rec);
		{
			/* timeacct's share: the same records, on an accounting of their own */
			struct proc_acct a = {};
			uint64_t t2, n = 0;

			t2 = now_ns();
			for (int round = 0; round < 100; round++)
				for (uint32_t t = 0; t < THREADS; t++) {
					struct hp_switch e = { .hdr = { .ts = ts,
									.type = HP_EV_SWITCH,
									.size = sizeof(e),
									.cpu = 1 },
							       .prev_tid = 1000 + t,
							       .prev_pid = 999,
							       .next_tid = 7,
							       .next_pid = 7,
							       .prev_prio = 120,
							       .next_prio = 120,
							       .flags = HP_SW_PREV_WATCHED };

					timeacct_record(&a, 999, &e.hdr);
					e = (struct hp_switch){ .hdr = { .ts = ts + 400,
									 .type = HP_EV_SWITCH,
									 .size = sizeof(e),
									 .cpu = 1 },
								.prev_tid = 7,
								.prev_pid = 7,
								.next_tid = 8,
								.next_pid = 8,
								.prev_prio = 120,
								.next_prio = 120,
								.flags = HP_SW_VICTIM_CPU,
								.victim_pid = 999 };
					timeacct_record(&a, 999, &e.hdr);
					e = (struct hp_switch){ .hdr = { .ts = ts + 1000,
									 .type = HP_EV_SWITCH,
									 .size = sizeof(e),
									 .cpu = 1 },
								.prev_tid = 8,
								.prev_pid = 8,
								.next_tid = 1000 + t,
								.next_pid = 999,
								.prev_prio = 120,
								.next_prio = 120,
								.flags = HP_SW_NEXT_WATCHED,
								.next_wait_ns = 1000,
								.next_wait_kind = HP_WAIT_PREEMPT };
					timeacct_record(&a, 999, &e.hdr);
					ts += 2000;
					n += 3;
				}
			printf("%zu processes x %d threads: of which timeacct_record %.0f ns\n", sizes[k],
			       THREADS, (double)(now_ns() - t2) / n);
			timeacct_free(&a);
		}
		t0 = now_ns();
		for (int r = 0; r < reps; r++)
			if (metrics_write(m) < 0)
				return 1;
		t1 = now_ns();
		{
			struct hp_buf b = {};

			metrics_format(m, NULL, NULL, &b);
			bytes = hp_buf_pending(&b);
			hp_buf_free(&b);
		}
		printf("%zu processes x %d threads: metrics_write %.2f ms each, %" PRIu64 " bytes\n",
		       sizes[k], THREADS, (double)(t1 - t0) / reps / 1e6, bytes);
		metrics_free(m);
		triggers_free(tr);
		snapsvc_free(svc);
		snapstore_free(st);
		recorder_free(rec);
		loop_free(l);
	}
	for (size_t i = 0; i < n_kids; i++)
		kill(kids[i], SIGKILL);
	while (wait(NULL) > 0)
		;
	unlink(strcat(strcat(strcpy((char[128]){ 0 }, dir), "/"), METRICS_FILE));
	rmdir(dir);
	return 0;
}
