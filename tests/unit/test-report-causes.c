// SPDX-License-Identifier: GPL-2.0-only
/*
 * The report's first line and its breakdown of where a dispatch thread's time went
 * (lib/report_causes.c), on small snapshots built in memory (synth.h), each pinning a rule:
 *
 *  1. totals rank, never a single event: 14 preemptions by an RT task, 5 ms each, beat one
 *     of 30 ms by another; the line names the task, the share, the total and the longest;
 *  2. every nanosecond of the window is one cause: the breakdown sums to the window, and
 *     the JSON verdict is the text's first line;
 *  3. a blocked interval is its syscall (the SyscallTable's), where its kernel stack slept
 *     and its waker; one in the fault path is a major fault;
 *  4. a thread switched out runnable whose CPU idles is throttled; a wakeup that waits
 *     more than 2 ms behind an idle CPU too, one of 1 ms is that CPU waking up; a thread
 *     whose cgroup has a CFS bandwidth, waiting long behind CFS tasks, is throttled;
 *  5. the dispatch threads: the globs the snapshot records, acl_thread when it records
 *     none, the thread that ran the most when none matches (the header says so);
 *  6. hostprof's own tasks (the producer's pid, "hostprofd-snap") are a cause of their own;
 *     ksoftirqd is an interrupt's;
 *  7. nothing stands out under 1% of the window without an episode of 1 ms; a second
 *     cause within 80% of the first is named after it;
 *  8. stall episodes: a gap of 1 ms or more, with its make-up;
 *  9. the GIL: waits for it (struct gil_wait, what the GIL capture will record) lie over
 *     the waiter's blocked and running time, by holder and function; its waits for a CPU
 *     stay the scheduler's; without them, the same snapshot is its futex waits.
 * 10. one model while a snapshot is held (report_model_hold), whoever asks first, a thread
 *     that builds it ahead (report_model_prebuild) included: the report is the same as
 *     without; the release waits for that thread; another snapshot gets a model of its own.
 *
 * Usage: test-report-causes. Exit: 0 pass, 1 fail.
 */
#include "check.h"
#include "export-test.h"
#include "macro.h"
#include "report.h"
#include "report_internal.h"
#include "synth.h"

#define CHECK_HAS(out, want) \
	CHECKF((out) && strstr((out), (want)), "missing: %s\nin:\n%s", (want), (out) ? (out) : "")

static struct synth sy;

static const struct sy_task acl = { 11, SY_PID, "acl_thread", 120, 0 },
			    helper = { 12, SY_PID, "helper", 120, 0 };
static const struct sy_task rt = { 50, 50, "hog", 49, 1 }, cfs = { 51, 51, "python3", 120, 0 };
static const struct sy_task idle = { 0, 0, "swapper/1", 120, 0 }, ksoft = { 22, 22, "ksoftirqd/1", 120, 0 };
static const struct sy_task snapjob = { 60, 60, "hostprofd-snap", 139, 3 };
static const struct sy_task client = { 62, 62, "hostprofctl", 120, 0 };

static char *report(const Hostprof__Snapshot *s, export_fn fn)
{
	char *out = NULL;
	size_t len = 0;
	int r = render(s, fn, &out, &len);

	CHECKF(r == 0, "report: %d", r);
	return out;
}

static char *first_line(const Hostprof__Snapshot *s)
{
	char *out = report(s, snapshot_report_text);

	if (out)
		out[strcspn(out, "\n")] = '\0';
	return out;
}

/* acl_thread runs on CPU 1 from the window's start: preempted at ts by `by` for dur. */
static void preempt(uint64_t ts, uint64_t dur, const struct sy_task *by)
{
	synth_switch(&sy, SY_T0 + ts, 1, &acl, 0x100, by, 0, 0);
	synth_switch(&sy, SY_T0 + ts + dur, 1, by, 0x100, &acl, dur, 2);
}

static void start(void)
{
	synth_init(&sy);
	synth_thread(&sy, 11, SY_PID, "acl_thread");
}

/* ---- 1, 2. totals rank; the breakdown is the window ---- */

static void test_totals(void)
{
	char *line, *json;

	start();
	for (int i = 0; i < 14; i++)
		preempt((uint64_t)(50 + 60 * i) * SY_MS, 5 * SY_MS, &rt);
	preempt(930 * SY_MS, 30 * SY_MS, &cfs);
	line = first_line(synth_finish(&sy));
	CHECK_STR(line, "acl_thread lost 100 ms of 1.0 s (10.0%): CPU taken by realtime task hog (pid 50, "
			"SCHED_FIFO prio 49), 70 ms, longest 5.0 ms");
	json = report(&sy.snap, snapshot_report_json);
	CHECK_HAS(json,
		  "{\"verdict\":{\"text\":\"acl_thread lost 100 ms of 1.0 s (10.0%): CPU taken by realtime "
		  "task hog (pid 50, SCHED_FIFO prio 49), 70 ms, longest 5.0 ms\",\"stands_out\":true,");
	CHECK_HAS(json,
		  "\"cause\":\"rt\",\"cause_text\":\"CPU taken by realtime tasks\",\"time_ns\":70000000,");
	CHECK_HAS(json, "\"causes\":[{\"cause\":\"running\",\"text\":\"running\",\"lost\":false,\"count\":16,"
			"\"time_ns\":900000000,");
	CHECK_HAS(json,
		  "{\"cause\":\"cfs\",\"text\":\"CPU shared with other tasks\",\"lost\":true,\"count\":1,"
		  "\"time_ns\":30000000,\"max_ns\":30000000,\"max_at_ns\":930000000,");
	/* 900 + 70 + 30 ms: the window */
	CHECK_HAS(
		json,
		"\"episodes\":{\"min_ns\":1000000,\"count\":15,\"time_ns\":100000000,\"longest\":[{\"at_ns\":"
		"930000000,\"dur_ns\":30000000,\"parts\":[{\"cause\":\"cfs\",\"ns\":30000000,");
	free(line);
	free(json);
}

/* ---- 3. blocked ---- */

static void test_blocked(void)
{
	uint32_t f_sched, f_pipe, f_sys, f_fault, f_hmm, k_pipe, k_fault, frames[4];
	char *line, *txt;

	start();
	synth_thread(&sy, 12, SY_PID, "helper");
	f_sched = synth_frame(&sy, "__schedule", 0xffffffff81000010ull, true, 3);
	f_pipe = synth_frame(&sy, "pipe_read", 0xffffffff81000020ull, true, 3);
	f_sys = synth_frame(&sy, "__x64_sys_read", 0xffffffff81000030ull, true, 3);
	f_fault = synth_frame(&sy, "filemap_fault", 0xffffffff81000040ull, true, 3);
	f_hmm = synth_frame(&sy, "handle_mm_fault", 0xffffffff81000050ull, true, 3);
	frames[0] = f_sched, frames[1] = f_pipe, frames[2] = f_sys;
	k_pipe = synth_stack(&sy, false, frames, 3);
	frames[1] = f_fault, frames[2] = f_hmm;
	k_fault = synth_stack(&sy, false, frames, 3);
	/* 3 reads of 40 ms, answered by helper; a 20 ms fault; no syscall row for the last read */
	for (int i = 0; i < 3; i++) {
		uint64_t ts = (uint64_t)(100 + 200 * i) * SY_MS;

		synth_syscall(&sy, SY_T0 + ts - 10000, 40 * SY_MS + 20000, 11, 0, 0);
		synth_switch(&sy, SY_T0 + ts, 1, &acl, 1, &idle, 0, 0);
		synth_offcpu(&sy, SY_T0 + ts, 40 * SY_MS, 11, 1, 12, "helper", k_pipe, 0);
		synth_switch(&sy, SY_T0 + ts + 40 * SY_MS, 1, &idle, 0, &acl, 5000, 1);
	}
	synth_switch(&sy, SY_T0 + 800 * SY_MS, 1, &acl, 2, &idle, 0, 0);
	synth_offcpu(&sy, SY_T0 + 800 * SY_MS, 20 * SY_MS, 11, 2, 0, "", k_fault, 0);
	synth_switch(&sy, SY_T0 + 820 * SY_MS, 1, &idle, 0, &acl, 5000, 1);
	line = first_line(synth_finish(&sy));
	CHECK_STR(
		line,
		"acl_thread lost 140 ms of 1.0 s (14.0%): blocked in read (pipe_read), woken by helper (tid "
		"12, pid 10), 120 ms, longest 40 ms");
	txt = report(&sy.snap, snapshot_report_text);
	CHECK_HAS(txt, "\n    major page faults                        20.0     2.0       1       20.0\n"
		       "            20.0     2.0       1       20.0  asleep in filemap_fault\n");
	free(line);
	free(txt);
}

/* ---- 4. throttling ---- */

static void test_throttle(void)
{
	char *line;

	/* runnable, and its CPU idles: 3 times 30 ms */
	start();
	for (int i = 0; i < 3; i++)
		preempt((uint64_t)(100 + 300 * i) * SY_MS, 30 * SY_MS, &idle);
	line = first_line(synth_finish(&sy));
	CHECK_STR(line,
		  "acl_thread lost 90 ms of 1.0 s (9.0%): CFS bandwidth throttling of its cgroup (cpu.max): "
		  "runnable while CPU 1 idled, 90 ms, longest 30 ms");
	free(line);

	/* woken, then waiting behind an idle CPU: 5 ms is throttling, 1 ms is a CPU waking up */
	start();
	synth_switch(&sy, SY_T0 + 100 * SY_MS, 1, &acl, 1, &idle, 0, 0);
	synth_switch(&sy, SY_T0 + 110 * SY_MS, 1, &idle, 0, &acl, 5 * SY_MS, 1);
	synth_switch(&sy, SY_T0 + 200 * SY_MS, 1, &acl, 1, &idle, 0, 0);
	synth_switch(&sy, SY_T0 + 210 * SY_MS, 1, &idle, 0, &acl, 1 * SY_MS, 1);
	synth_finish(&sy);
	line = report(&sy.snap, snapshot_report_text);
	CHECK_HAS(line, "\n    waiting for its CPU after wakeups         1.0     0.1       1        1.0\n"
			"             1.0     0.1       1        1.0  an idle CPU, waking up\n");
	CHECK_HAS(line, "\n    CFS bandwidth throttling                  5.0     0.5       1        5.0\n"
			"             5.0     0.5       1        5.0  runnable while CPU 1 idled\n");
	free(line);

	/* a cgroup with 30 ms of every 100 ms: 50 ms behind python3 is throttling, 3 ms is not */
	start();
	sy.th[0].cgroup = "/job";
	sy.th[0].has_cpu_quota_us = sy.th[0].has_cpu_period_us = true;
	sy.th[0].cpu_quota_us = 30000;
	sy.th[0].cpu_period_us = 100000;
	preempt(100 * SY_MS, 50 * SY_MS, &cfs);
	preempt(300 * SY_MS, 3 * SY_MS, &cfs);
	line = first_line(synth_finish(&sy));
	CHECK_STR(line,
		  "acl_thread lost 53 ms of 1.0 s (5.3%): CFS bandwidth throttling: its cgroup /job allows "
		  "30.0 ms of every 100.0 ms, runnable on CPU 1 past its quota, 50 ms, longest 50 ms");
	free(line);
}

/* ---- 5. which threads dispatch ---- */

static void test_dispatch(void)
{
	static char *globs[] = { "help*" };
	char *line, *txt;

	/* helper loses more, but acl_thread is the dispatch thread (the default) */
	start();
	synth_thread(&sy, 12, SY_PID, "helper");
	preempt(100 * SY_MS, 5 * SY_MS, &rt);
	synth_switch(&sy, SY_T0 + 400 * SY_MS, 0, &helper, 0x100, &cfs, 0, 0);
	synth_switch(&sy, SY_T0 + 450 * SY_MS, 0, &cfs, 0x100, &helper, 50 * SY_MS, 2);
	txt = report(synth_finish(&sy), snapshot_report_text);
	CHECK_HAS(txt, "acl_thread lost 5.0 ms of 1.0 s (0.5%): CPU taken by realtime task hog");
	CHECK_HAS(
		txt,
		"\ndispatch acl_thread (tid 11): the name matches dispatch_threads acl_thread (the snapshot "
		"records no dispatch_threads: the default)\n");
	CHECK_HAS(txt, "\n\ndispatch thread acl_thread (tid 11)\n");
	CHECK_HAS(
		txt,
		"\n\nthread helper (tid 12)\n  lost              50.0 ms (5.0%), the most to CPU shared with "
		"other tasks: 50.0 ms, longest 50.0 ms\n");
	free(txt);

	/* the snapshot says which */
	sy.snap.dispatch_threads = globs;
	sy.snap.n_dispatch_threads = 1;
	sy.snap.has_dispatch_set = sy.snap.dispatch_set = true;
	line = first_line(&sy.snap);
	CHECK_STR(
		line,
		"helper lost 50 ms of 1.0 s (5.0%): CPU shared with python3 (pid 51, SCHED_OTHER prio 120), "
		"50 ms, longest 50 ms");
	free(line);

	/* none matches: the thread that ran the most, said */
	sy.snap.n_dispatch_threads = 0;
	txt = report(&sy.snap, snapshot_report_text);
	CHECK_HAS(txt,
		  "\ndispatch no thread's name matches dispatch_threads none; taking the thread that ran the "
		  "most: acl_thread (tid 11)\n");
	free(txt);
}

/* ---- 6. hostprof's own, interrupts' threads ---- */

static void test_hostprof(void)
{
	char *line, *txt;

	start();
	preempt(100 * SY_MS, 4 * SY_MS, &snapjob);
	preempt(300 * SY_MS, 3500000, &ksoft);
	line = first_line(synth_finish(&sy));
	CHECK_STR(
		line,
		"acl_thread lost 7.5 ms of 1.0 s (0.8%): hostprof itself: hostprofd-snap (pid 60, SCHED_BATCH "
		"prio 139, hostprof's own), 4.0 ms, longest 4.0 ms; then interrupts, 3.5 ms");
	/* by its pid too, whatever its name */
	start();
	preempt(100 * SY_MS, 4 * SY_MS, &snapjob);
	preempt(600 * SY_MS, 10 * SY_MS, &cfs);
	synth_finish(&sy);
	sy.snap.has_producer_pid = true;
	sy.snap.producer_pid = 51;
	txt = report(&sy.snap, snapshot_report_text);
	CHECK_HAS(
		txt,
		"    hostprof itself                          14.0     1.4       2       10.0\n"
		"            10.0     1.0       1       10.0  python3 (pid 51, SCHED_OTHER prio 120, hostprof's "
		"own)\n");
	free(line);
	free(txt);
	/* and the client, which writes a snapshot's formats where it runs */
	start();
	preempt(200 * SY_MS, 6 * SY_MS, &client);
	line = first_line(synth_finish(&sy));
	CHECK_STR(line,
		  "acl_thread lost 6.0 ms of 1.0 s (0.6%): hostprof itself: hostprofctl (pid 62, SCHED_OTHER "
		  "prio 120, hostprof's own), 6.0 ms, longest 6.0 ms");
	free(line);
}

/* ---- 7. nothing stands out ---- */

static void test_nothing(void)
{
	char *line;

	start();
	preempt(100 * SY_MS, 500000, &cfs);
	preempt(300 * SY_MS, 300000, &rt);
	line = first_line(synth_finish(&sy));
	CHECK_STR(line,
		  "acl_thread lost 0.8 ms of 1.0 s (0.1%): nothing stands out; the most: CPU shared with "
		  "python3 (pid 51, SCHED_OTHER prio 120), 0.5 ms, longest 0.5 ms");
	free(line);

	/* an empty window, and a thread never seen */
	synth_init(&sy);
	line = first_line(synth_finish(&sy));
	CHECK_STR(line, "no thread to report on: the snapshot has no thread of pid 10");
	free(line);
	start();
	line = first_line(synth_finish(&sy));
	CHECK_STR(line, "acl_thread: nothing known of its 1.0 s: no switch of it in the window");
	free(line);
}

/* ---- 8. episodes ---- */

static void test_episodes(void)
{
	char *txt;

	start();
	/* one gap: 6 ms behind python3, then 4 ms behind hog */
	synth_switch(&sy, SY_T0 + 500 * SY_MS, 1, &acl, 0x100, &cfs, 0, 0);
	synth_switch(&sy, SY_T0 + 506 * SY_MS, 1, &cfs, 0, &rt, 0, 0);
	synth_switch(&sy, SY_T0 + 510 * SY_MS, 1, &rt, 0x100, &acl, 10 * SY_MS, 2);
	txt = report(synth_finish(&sy), snapshot_report_text);
	CHECK_HAS(
		txt,
		"\n  stall episodes    1 of 1 ms or more, 10.0 ms in all\n"
		"        at s         ms  made of\n"
		"      +0.500       10.0  6.0 ms CPU shared with other tasks: python3 (pid 51, SCHED_OTHER prio "
		"120); 4.0 ms CPU taken by realtime tasks: hog (pid 50, SCHED_FIFO prio 49)\n");
	free(txt);
}

/* ---- 9. the GIL ---- */

/* The report of a model, text or JSON, in memory. */
static char *model_report(const struct model *m, int (*fn)(const struct model *, FILE *))
{
	char *out = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);
	int r;

	if (!f)
		abort();
	r = fn(m, f);
	fclose(f);
	CHECKF(r == 0, "report of the model: %d", r);
	return out;
}

static void test_gil(void)
{
	static const struct sy_task logger = { 12, SY_PID, "logger", 120, 0 };
	struct gil_wait gil[8], bad;
	uint32_t f_sched, f_futex, f_sys, k_futex, frames[3];
	char line[512], *txt, *json;
	struct model m;
	int r;

	start();
	synth_thread(&sy, 12, SY_PID, "logger");
	f_sched = synth_frame(&sy, "__schedule", 0xffffffff81000010ull, true, 3);
	f_futex = synth_frame(&sy, "futex_wait_queue", 0xffffffff81000020ull, true, 3);
	f_sys = synth_frame(&sy, "__x64_sys_futex", 0xffffffff81000030ull, true, 3);
	frames[0] = f_sched, frames[1] = f_futex, frames[2] = f_sys;
	k_futex = synth_stack(&sy, false, frames, 3);
	/*
	 * 8 times, as CPython's take_gil does while logger holds the GIL in flush_stats: a timed
	 * wait of 15 ms, 0.2 ms to ask again, a wait of 8.8 ms that logger's release ends, 1 ms
	 * behind logger on the CPU, 0.1 ms to take it: 24.1 ms of GIL, 1 ms of runqueue. Then
	 * one RT preemption of 30 ms: longer than any GIL wait, less in total.
	 */
	for (int i = 0; i < 8; i++) {
		uint64_t t = SY_T0 + (uint64_t)(60 + 110 * i) * SY_MS;

		/* the timed wait's "waker": what ran when its timer fired */
		synth_syscall(&sy, t - 10000, 15 * SY_MS + 20000, 11, 202, -ETIMEDOUT);
		synth_switch(&sy, t, 1, &acl, 1, &idle, 0, 0);
		synth_offcpu(&sy, t, 15 * SY_MS, 11, 1, 77, "spinner", k_futex, 0);
		synth_switch(&sy, t + 15 * SY_MS, 1, &idle, 0, &acl, 0, 1);
		synth_syscall(&sy, t + 15190000, 8800000 + 20000, 11, 202, 0);
		synth_switch(&sy, t + 15200000, 1, &acl, 1, &logger, 0, 0);
		synth_offcpu(&sy, t + 15200000, 8800000, 11, 1, 12, "logger", k_futex, 0);
		synth_switch(&sy, t + 25 * SY_MS, 1, &logger, 1, &acl, 1 * SY_MS, 1);
		gil[i] = (struct gil_wait){ .tid = 11,
					    .pid = SY_PID,
					    .begin = t,
					    .end = t + 25100000,
					    .holder_tid = 12,
					    .holder_pid = SY_PID,
					    .holder_comm = synth_str(&sy, "logger"),
					    .function = synth_str(&sy, "flush_stats"),
					    .file = synth_str(&sy, "train.py"),
					    .line = 42 };
	}
	preempt(900 * SY_MS, 30 * SY_MS, &rt);
	synth_finish(&sy);

	r = model_build_gil(&sy.snap, gil, ARRAY_SIZE(gil), &m);
	CHECKF(r == 0, "model with GIL waits: %d", r);
	if (r < 0)
		return;
	report_verdict_line(&m, line, sizeof(line));
	CHECK_STR(line, "acl_thread lost 231 ms of 1.0 s (23.1%): the GIL, held by logger (tid 12) in "
			"flush_stats (train.py:42), 193 ms, longest 24 ms");
	txt = model_report(&m, report_text_model);
	CHECK_HAS(
		txt,
		"    the GIL                                 192.8    19.3      16       24.0\n"
		"           192.8    19.3      16       24.0  logger (tid 12) in flush_stats (train.py:42)\n");
	/* the wait behind logger on its CPU stays the scheduler's */
	CHECK_HAS(txt, "    waiting for its CPU after wakeups         8.0     0.8       8        1.0\n");
	CHECK_HAS(
		txt,
		"      +0.060       25.1  24.1 ms the GIL: logger (tid 12) in flush_stats (train.py:42); 1.0 ms "
		"waiting for its CPU after wakeups: logger (tid 12, pid 10");
	json = model_report(&m, report_json_model);
	CHECK_HAS(json, "\"cause\":\"gil\",\"cause_text\":\"the GIL\",\"time_ns\":192800000,");
	CHECK_HAS(
		json,
		"\"kind\":\"gil\",\"text\":\"logger (tid 12) in flush_stats (train.py:42)\",\"holder\":{\"comm\":"
		"\"logger\",\"tid\":12,\"pid\":10},\"function\":\"flush_stats\",\"file\":\"train.py\",\"line\":42,");
	free(txt);
	free(json);
	model_free(&m);

	/* without them, what the kernel saw: futex waits, the timed-out ones ended by their timer
	 * (not by spinner, which ran when it fired) */
	r = model_build(&sy.snap, &m);
	CHECKF(r == 0, "model: %d", r);
	if (r == 0) {
		report_verdict_line(&m, line, sizeof(line));
		CHECKF(strstr(line,
			      "acl_thread lost 228 ms of 1.0 s (22.8%): blocked in futex (futex_wait_queue), until its "
			      "timer, 190 ms, longest 15 ms"),
		       "without the GIL waits: %s", line);
		model_free(&m);
	}

	/* a holder and a place not known */
	{
		struct agent a = { .kind = AG_GIL, .nr = -1 };

		report_gil_holder_desc(&sy.snap, &a, line, sizeof(line));
		CHECK_STR(line, "a thread not known");
		a.tid = a.task.tid = 12, a.task.comm = synth_str(&sy, "logger"), a.key = 42;
		a.name = synth_str(&sy, "flush_stats");
		report_gil_holder_desc(&sy.snap, &a, line, sizeof(line));
		CHECK_STR(line, "logger (tid 12) in flush_stats");
		a.name = 0, a.key = (uint64_t)synth_str(&sy, "train.py") << 32 | 42;
		report_gil_holder_desc(&sy.snap, &a, line, sizeof(line));
		CHECK_STR(line, "logger (tid 12) in train.py:42");
	}

	/* bad waits: refused, nothing built */
	bad = gil[0];
	bad.end = bad.begin - 1;
	CHECK(model_build_gil(&sy.snap, &bad, 1, &m) == -EINVAL);
	bad = gil[0];
	bad.function = (uint32_t)sy.snap.n_strings;
	CHECK(model_build_gil(&sy.snap, &bad, 1, &m) == -EINVAL);
}

/* ---- 10. the shared model ---- */

static void test_shared(void)
{
	Hostprof__Snapshot other = HOSTPROF__SNAPSHOT__INIT;
	const struct model *a = NULL, *b = NULL, *c = NULL;
	struct report_episode *ep = NULL;
	size_t n_ep = 0;
	Hostprof__Snapshot *s;
	char *alone, *txt;

	start();
	synth_switch(&sy, SY_T0 + 500 * SY_MS, 1, &acl, 0x100, &cfs, 0, 0);
	synth_switch(&sy, SY_T0 + 506 * SY_MS, 1, &cfs, 0, &rt, 0, 0);
	synth_switch(&sy, SY_T0 + 510 * SY_MS, 1, &rt, 0x100, &acl, 10 * SY_MS, 2);
	s = synth_finish(&sy);
	alone = report(s, snapshot_report_text);
	CHECK(report_model_prebuild(s) == -ESRCH); /* not held */
	CHECK(report_model_hold(s) == 0);
	CHECK(report_model_hold(&other) == -EBUSY);
	CHECK(report_model_prebuild(&other) == -ESRCH);
	CHECK(report_model_prebuild(s) == 0);
	CHECK(report_model_prebuild(s) == 0); /* one build at a time: nothing more */
	txt = report(s, snapshot_report_text);
	CHECKF(alone && txt && !strcmp(alone, txt), "held and built ahead:\n%s\nalone:\n%s", txt ? txt : "",
	       alone ? alone : "");
	CHECK(model_get(s, &a) == 0 && model_get(s, &b) == 0);
	CHECKF(a && a == b, "two models of a held snapshot: %p %p", (const void *)a, (const void *)b);
	CHECK(model_get(&other, &c) == 0 && c && c != a); /* not held: its own */
	CHECK(report_episodes(s, &ep, &n_ep) == 0 && n_ep == 1);
	model_put(c);
	model_put(b);
	model_put(a);
	report_model_release(s);
	/* released: a model of its own again */
	CHECK(model_get(s, &c) == 0 && c && c != a);
	model_put(c);
	/* built ahead and never asked for: the release waits for the thread and frees it */
	CHECK(report_model_hold(s) == 0 && report_model_prebuild(s) == 0);
	report_model_release(s);
	CHECK(report_model_hold(&other) == 0); /* nothing held any more */
	report_model_release(&other);
	free(ep);
	free(txt);
	free(alone);
}

int main(void)
{
	test_totals();
	test_blocked();
	test_throttle();
	test_dispatch();
	test_hostprof();
	test_nothing();
	test_episodes();
	test_gil();
	test_shared();
	return check_summary();
}
