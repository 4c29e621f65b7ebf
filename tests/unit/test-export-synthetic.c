// SPDX-License-Identifier: GPL-2.0-only
/*
 * The stack exporters and the report on small snapshots built in memory (synth.h), where
 * each case pins one rule:
 *
 *  1. folded: identical stacks merge, also when they come from different threads of one
 *     name or different frames of one function; lines sort bytewise; ';' and control
 *     characters in names become '_'; kernel frames get "_[k]"; a thread without a name
 *     is "[tid N]"; off-CPU counts are microseconds of merged nanoseconds, and stacks
 *     under 1 us are left out.
 *  2. svg: names are XML-escaped, invalid UTF-8 becomes '?', widths follow the counts.
 *  3. the longest stall (the report's "longest" line; the first line, the verdict, is
 *     test-report-causes.c's): a blocked interval names its syscall, state and waker; an
 *     involuntary stall (preempted, runqueue, D) beats a longer S sleep; a preemption
 *     that never ends runs to the window's end; a runqueue wait names the task on the
 *     CPU; an empty snapshot has no stall.
 *  4. report_preemptions() and its line, as the client prints them for the fixture.
 *  5. every exporter refuses an inconsistent snapshot with -EINVAL, writing nothing, and
 *     returns the errno of a failed write (/dev/full: -ENOSPC).
 *  6. pprof: gzip with mtime 0, the same bytes every time.
 *  7. interference: the longest reclaim, lock wait or interrupt, or one group's total time
 *     taken, names the longest stall's cause when it beats the scheduler's (memcg reclaim,
 *     NET_RX and its CPU, mmap_lock); one that covers a runqueue wait or a D interval
 *     explains it; a hard IRQ nested in a softirq counts once in the thread's total; an
 *     interrupt that ran while a thread waited goes to the thread the switches say waited
 *     there; tables not captured are named once, and a snapshot with interference = 0
 *     says nothing of them and keeps the scheduler's verdict; the JSON report's objects
 *     carry the exact numbers; an interference table with a short column is refused.
 *
 * Usage: test-export-synthetic FIXTURES_DIR. Exit: 0 pass, 1 fail.
 */
#include "check.h"
#include "export-test.h"
#include "macro.h"
#include "report.h"
#include "synth.h"

static struct synth sy;

static const struct sy_task idle = { 0, 0, "swapper/0", 120, 0 };

/* The report's "longest" line: the longest single stall of any watched thread. */
static char *longest_line(const Hostprof__Snapshot *s)
{
	char *out = NULL, *at;
	size_t len = 0;
	int r = render(s, snapshot_report_text, &out, &len);

	CHECKF(r == 0, "report: %d", r);
	if (!out)
		return NULL;
	at = strstr(out, "\nlongest  ");
	if (!at)
		return out;
	at += strlen("\nlongest  ");
	memmove(out, at, strlen(at) + 1);
	out[strcspn(out, "\n")] = '\0';
	return out;
}

/* ---- 1. folded ---------------------------------------------------------------------------- */

static void build_stacks(void)
{
	uint32_t f_foo, f_bar, f_bar2, f_sched, f_weird, s1, s2, s3, s4;

	synth_init(&sy);
	synth_thread(&sy, 11, SY_PID, "w;rk\ner");
	synth_thread(&sy, 12, SY_PID, "same");
	synth_thread(&sy, 13, SY_PID, "same");
	synth_thread(&sy, 15, SY_PID, "a<b>&\"c'");
	f_foo = synth_frame(&sy, "f;oo", 0x401000, false, 1);
	f_bar = synth_frame(&sy, "bar", 0x402000, false, 1);
	f_bar2 = synth_frame(&sy, "bar", 0x402010, false, 1);
	f_sched = synth_frame(&sy, "schedule", 0x2400100, true, 3);
	f_weird = synth_frame(&sy, "\xff\xfe\xc3\xbc", 0x403000, false, 1); /* bad bytes, then "ü" */
	s1 = synth_stack(&sy, true, (uint32_t[]){ f_foo, f_bar }, 2);
	s2 = synth_stack(&sy, true, (uint32_t[]){ f_foo, f_bar2 }, 2);
	s3 = synth_stack(&sy, false, (uint32_t[]){ f_sched }, 1);
	s4 = synth_stack(&sy, true, (uint32_t[]){ f_weird }, 1);
	synth_sample(&sy, SY_T0 + 10 * SY_MS, 12, s1, 0);
	synth_sample(&sy, SY_T0 + 20 * SY_MS, 13, s2, 0);
	synth_sample(&sy, SY_T0 + 30 * SY_MS, 11, s1, s3);
	synth_sample(&sy, SY_T0 + 40 * SY_MS, 14, 0, 0);
	synth_sample(&sy, SY_T0 + 50 * SY_MS, 15, s4, 0);
	synth_sample(&sy, SY_T0 + 60 * SY_MS, 15, s4, 0);
	synth_offcpu(&sy, SY_T0 + 100 * SY_MS, 1500, 12, 1, 0, "", s3, s1);
	synth_offcpu(&sy, SY_T0 + 200 * SY_MS, 600, 13, 1, 0, "", s3, s2);
	synth_offcpu(&sy, SY_T0 + 300 * SY_MS, 999, 11, 1, 0, "", s3, s1);
	synth_finish(&sy);
}

static void test_folded(void)
{
	char *out = NULL;
	size_t len;
	int r;

	build_stacks();
	r = render(&sy.snap, export_folded_on, &out, &len);
	CHECKF(r == 0, "%d", r);
	CHECKF(out && !strcmp(out, "[tid 14] 1\n"
				   "a<b>&\"c';\xff\xfe\xc3\xbc 2\n"
				   "same;bar;f_oo 2\n"
				   "w_rk_er;bar;f_oo;schedule_[k] 1\n"),
	       "on-CPU folded:\n%s", out ? out : "(null)");
	free(out);
	r = render(&sy.snap, export_folded_off, &out, &len);
	CHECKF(r == 0, "%d", r);
	/* 1500 + 600 ns merge to 2 us; 999 ns alone rounds to 0 and is left out */
	CHECKF(out && !strcmp(out, "same;bar;f_oo;schedule_[k] 2\n"), "off-CPU folded:\n%s",
	       out ? out : "(null)");
	free(out);
}

/* ---- 2. svg ------------------------------------------------------------------------------- */

static void test_svg(void)
{
	char *out = NULL;
	size_t len;
	int r;

	build_stacks();
	r = render(&sy.snap, export_svg_on, &out, &len);
	CHECKF(r == 0, "%d", r);
	if (!out)
		return;
	CHECKF(strstr(out, "<title>a&lt;b&gt;&amp;&quot;c&apos; (2 samples, 33.33%)</title>"),
	       "escaped thread name");
	CHECKF(strstr(out, "<title>??\xc3\xbc (2 samples, 33.33%)</title>"),
	       "invalid UTF-8 as ?, valid kept");
	CHECKF(strstr(out,
		      "<title>all (6 samples, 100.00%)</title><rect x=\"10.00\" y=\"114.0\" width=\"1180.00\""),
	       "root spans the width");
	/* 2 of 6 samples: a third of 1180 px */
	CHECKF(strstr(out,
		      "<title>same (2 samples, 33.33%)</title><rect x=\"600.00\" y=\"98.0\" width=\"393.33\""),
	       "widths follow counts");
	CHECKF(!strstr(out, "w;rk"), "no raw ';' name");
	CHECKF(strstr(out, "<script type=\"text/ecmascript\"><![CDATA[") && strstr(out, "function zoom(z)") &&
		       strstr(out, "function unzoom()"),
	       "zoom script");
	CHECKF(!strstr(out, "href") && !strstr(out, "http://www.w3.org/1999/xlink"), "no external resources");
	free(out);
}

/* ---- 3. verdicts -------------------------------------------------------------------------- */

static void test_verdicts(void)
{
	const struct sy_task reader = { 11, SY_PID, "reader", 120, 0 }, rt = { 50, 50, "rt", 89, 2 };
	const struct sy_task spinner = { 51, 51, "spinner", 120, 0 }, disk = { 12, SY_PID, "disk", 120, 0 };
	char *line;

	/* blocked: the syscall it was in, the state, the waker */
	synth_init(&sy);
	synth_thread(&sy, 11, SY_PID, "reader");
	synth_thread(&sy, 12, SY_PID, "feeder");
	synth_syscall(&sy, SY_T0 + 100 * SY_MS - 5000, 20 * SY_MS + 9000, 11, 0, 64);
	synth_offcpu(&sy, SY_T0 + 100 * SY_MS, 20 * SY_MS, 11, 1, 12, "feeder", 0, 0);
	line = longest_line(synth_finish(&sy));
	CHECK_STR(line,
		  "reader (tid 11) blocked 20.0 ms in read at +0.100 s (off-CPU S, woken by "
		  "feeder tid 12)");
	free(line);

	/* a 5 ms preemption beats a 50 ms S sleep; a 10 ms D block beats both */
	synth_init(&sy);
	synth_thread(&sy, 11, SY_PID, "reader");
	synth_thread(&sy, 12, SY_PID, "disk");
	synth_switch(&sy, SY_T0 + 10 * SY_MS, 0, &reader, 0, &rt, 0, 0);
	synth_switch(&sy, SY_T0 + 15 * SY_MS, 0, &rt, 1, &reader, 5 * SY_MS, 2);
	synth_offcpu(&sy, SY_T0 + 100 * SY_MS, 50 * SY_MS, 11, 1, 0, "", 0, 0);
	line = longest_line(synth_finish(&sy));
	CHECK_STR(line, "reader (tid 11) waited 5.0 ms at +0.010 s: preempted by rt (pid 50, "
			"SCHED_RR prio 89)");
	free(line);
	synth_init(&sy);
	synth_thread(&sy, 11, SY_PID, "reader");
	synth_thread(&sy, 12, SY_PID, "disk");
	synth_switch(&sy, SY_T0 + 10 * SY_MS, 0, &reader, 0, &rt, 0, 0);
	synth_switch(&sy, SY_T0 + 15 * SY_MS, 0, &rt, 1, &reader, 5 * SY_MS, 2);
	synth_offcpu(&sy, SY_T0 + 100 * SY_MS, 50 * SY_MS, 11, 1, 0, "", 0, 0);
	synth_offcpu(&sy, SY_T0 + 200 * SY_MS, 10 * SY_MS, 12, 2, 0, "", 0, 0);
	line = longest_line(synth_finish(&sy));
	CHECK_STR(line, "disk (tid 12) blocked 10.0 ms at +0.200 s (off-CPU D, waker unknown)");
	free(line);

	/* preempted and never back: counted to the window's end */
	synth_init(&sy);
	synth_thread(&sy, 12, SY_PID, "disk");
	synth_switch(&sy, SY_T0 + 900 * SY_MS, 1, &disk, 0x100, &spinner, 0, 0);
	line = longest_line(synth_finish(&sy));
	CHECK_STR(line,
		  "disk (tid 12) waited 100.0 ms at +0.900 s: preempted by spinner (pid 51, "
		  "SCHED_OTHER prio 120), still waiting when the window closed");
	free(line);

	/* woken, then left on the runqueue behind another task; and behind an idle CPU */
	synth_init(&sy);
	synth_thread(&sy, 11, SY_PID, "reader");
	synth_switch(&sy, SY_T0 + 40 * SY_MS, 0, &spinner, 0, &reader, 7 * SY_MS, 1);
	synth_switch(&sy, SY_T0 + 50 * SY_MS, 0, &reader, 1, &idle, 0, 0);
	synth_switch(&sy, SY_T0 + 60 * SY_MS, 0, &idle, 0, &reader, 2 * SY_MS, 1);
	line = longest_line(synth_finish(&sy));
	CHECK_STR(
		line,
		"reader (tid 11) waited 7.0 ms at +0.033 s: runnable after a wakeup, CPU 0 ran "
		"spinner (pid 51, SCHED_OTHER prio 120)");
	free(line);

	/* nothing at all */
	synth_init(&sy);
	line = longest_line(synth_finish(&sy));
	CHECK_STR(line,
		  "none: no watched thread was preempted, waited on a runqueue or blocked");
	free(line);
}

/* ---- 4. the client's summary -------------------------------------------------------------- */

static void test_summary(const Hostprof__Snapshot *fixture)
{
	struct preempt_summary s;
	char line[256];
	int r;

	r = report_preemptions(fixture, "acl_*", &s);
	CHECK_EQ_INT(r, 0);
	CHECK_EQ_U64(s.threads, 1);
	CHECK_EQ_U64(s.preemptions, 4);
	CHECK_EQ_U64(s.wait_ns, 80100000);
	CHECK_EQ_U64(s.max_wait_ns, 30000000);
	CHECK_EQ_U64(s.top_pid, 200);
	CHECK_EQ_U64(s.top_count, 3);
	CHECK_EQ_U64(s.top_wait_ns, 80000000);
	report_preemptions_line(&s, "acl_thread", line, sizeof(line));
	CHECK_STR(
		line,
		"acl_thread: 4 preemptions, 80.1 ms waited (max 30.0 ms), most by hog (pid 200, prio 49): 3, "
		"80.0 ms");
	r = report_preemptions(fixture, "nosuch", &s);
	CHECK_EQ_INT(r, 0);
	report_preemptions_line(&s, "nosuch", line, sizeof(line));
	CHECK_STR(line, "no thread named nosuch in this snapshot");
	r = report_preemptions(fixture, "dataloader", &s);
	CHECK_EQ_INT(r, 0);
	report_preemptions_line(&s, "dataloader", line, sizeof(line));
	CHECK_STR(line, "dataloader: never preempted");
}

/* ---- 5. errors ---------------------------------------------------------------------------- */

static int export_pprof(const Hostprof__Snapshot *s, FILE *f)
{
	return snapshot_export_pprof(s, f);
}

static const struct {
	const char *name;
	export_fn fn;
} all[] = {
	/* clang-format off */
	{ "folded on", export_folded_on },
	{ "folded off", export_folded_off },
	{ "svg on", export_svg_on },
	{ "svg off", export_svg_off },
	{ "pprof", export_pprof },
	{ "text", snapshot_report_text },
	{ "json", snapshot_report_json },
	/* clang-format on */
};

static void test_errors(const Hostprof__Snapshot *fixture)
{
	FILE *full;

	build_stacks();
	sy.smp.n_kstack--; /* a column shorter than the others */
	for (size_t i = 0; i < ARRAY_SIZE(all); i++) {
		char *out = NULL;
		size_t len = 0;
		int r = render(&sy.snap, all[i].fn, &out, &len);

		CHECKF(r == -EINVAL && len == 0, "%s: inconsistent snapshot: %d, %zu bytes", all[i].name, r,
		       len);
		free(out);
	}
	build_stacks();
	sy.st[0].frames[0] = 999; /* a frame index out of range */
	for (size_t i = 0; i < ARRAY_SIZE(all); i++) {
		char *out = NULL;
		size_t len = 0;
		int r = render(&sy.snap, all[i].fn, &out, &len);

		CHECKF(r == -EINVAL && len == 0, "%s: bad frame index: %d, %zu bytes", all[i].name, r, len);
		free(out);
	}
	full = fopen("/dev/full", "we");
	if (!full) {
		printf("no /dev/full: write errors not checked\n");
		return;
	}
	for (size_t i = 0; i < ARRAY_SIZE(all); i++) {
		int r = all[i].fn(fixture, full);

		CHECKF(r == -ENOSPC, "%s: write to /dev/full: %d", all[i].name, r);
		clearerr(full);
	}
	fclose(full);
}

/* ---- 6. pprof bytes ----------------------------------------------------------------------- */

static void test_pprof_bytes(const Hostprof__Snapshot *fixture)
{
	char *a = NULL, *b = NULL;
	size_t na = 0, nb = 0;

	CHECK_EQ_INT(render(fixture, export_pprof, &a, &na), 0);
	CHECK_EQ_INT(render(fixture, export_pprof, &b, &nb), 0);
	CHECKF(na > 18 && (unsigned char)a[0] == 0x1f && (unsigned char)a[1] == 0x8b && a[2] == 8,
	       "gzip magic");
	CHECKF(na > 18 && !a[4] && !a[5] && !a[6] && !a[7], "gzip mtime 0");
	CHECKF(na == nb && !memcmp(a, b, na), "the same bytes twice");
	free(a);
	free(b);
	synth_init(&sy);
	CHECK_EQ_INT(render(synth_finish(&sy), export_pprof, &a, &na), 0);
	CHECKF(na > 18, "an empty snapshot is still a profile: %zu bytes", na);
	free(a);
}

/* ---- 7. interference --------------------------------------------------------------------- */

#define SY_US 1000ull

static const struct sy_task worker = { 11, SY_PID, "worker", 120, 0 }, rt50 = { 50, 50, "rt", 89, 2 };

static char *report_of(const Hostprof__Snapshot *s, export_fn fn)
{
	char *out = NULL;
	size_t len = 0;
	int r = render(s, fn, &out, &len);

	CHECKF(r == 0, "report: %d", r);
	return out;
}

#define CHECK_HAS(out, want) \
	CHECKF((out) && strstr((out), (want)), "missing: %s\nin:\n%s", (want), (out) ? (out) : "")

/* worker, preempted by rt for 5 ms at +0.010 s on CPU 1: the scheduler's worst stall */
static void build_preempted(void)
{
	synth_init(&sy);
	synth_thread(&sy, 11, SY_PID, "worker");
	synth_switch(&sy, SY_T0 + 10 * SY_MS, 1, &worker, 0, &rt50, 0, 0);
	synth_switch(&sy, SY_T0 + 15 * SY_MS, 1, &rt50, 1, &worker, 5 * SY_MS, 2);
}

static void build_reclaim(bool captured)
{
	build_preempted();
	if (captured)
		synth_interference(&sy, 2, 0, 0);
	synth_reclaim(&sy, SY_T0 + 412 * SY_MS, 12 * SY_MS, 11, 2, 0, 0xcc0, 1234);
	synth_reclaim(&sy, SY_T0 + 500 * SY_MS, 2 * SY_MS, 11, 3, 9, 0, 5);
	synth_finish(&sy);
}

static void test_interference_reclaim(void)
{
	char *line, *out;

	build_reclaim(true);
	line = longest_line(&sy.snap);
	CHECK_STR(
		line,
		"worker (tid 11) spent 12.0 ms in memcg reclaim at +0.412 s (order 0, 1234 pages "
		"reclaimed)");
	free(line);
	out = report_of(&sy.snap, snapshot_report_text);
	CHECK_HAS(out,
		  "\ninterference  captured: reclaim; not captured: irqs, faults, locks (--interference)\n");
	CHECK_HAS(out, "\n  interference\n"
		       "    reclaim         2, 14.000 ms, max 12.000 ms\n"
		       "         count   total ms     max ms  kind\n"
		       "             1     12.000     12.000  memcg reclaim, order 0: 1234 pages reclaimed\n"
		       "             1      2.000      2.000  compaction, order 9: status 5\n");
	CHECKF(out && !strstr(out, "interrupts") && !strstr(out, "lock waits") && !strstr(out, "page faults"),
	       "tables not captured have no lines:\n%s", out ? out : "");
	free(out);

	/* the same rows, not captured: not a word of them, and the scheduler's verdict */
	build_reclaim(false);
	line = longest_line(&sy.snap);
	CHECK_STR(line, "worker (tid 11) waited 5.0 ms at +0.010 s: preempted by rt (pid 50, "
			"SCHED_RR prio 89)");
	free(line);
	out = report_of(&sy.snap, snapshot_report_text);
	CHECKF(out && !strstr(out, "interference") && !strstr(out, "reclaim"), "interference = 0:\n%s",
	       out ? out : "");
	free(out);
	out = report_of(&sy.snap, snapshot_report_json);
	CHECKF(out && !strstr(out, "interference") && !strstr(out, "reclaim"), "interference = 0:\n%s",
	       out ? out : "");
	CHECK_HAS(out, "\"longest_stall\":{\"kind\":\"preempted\",");
	free(out);
}

static void test_interference_softirq(void)
{
	char *line, *out;

	/* 60 NET_RX softirqs of 3 ms take 18% of CPU 1 from worker; a hard IRQ nests in the first */
	build_preempted();
	synth_interference(&sy, 1, 10 * SY_US, 0);
	for (size_t i = 0; i < 60; i++) {
		synth_irq(&sy, SY_T0 + 100 * SY_MS + i * 10 * SY_MS, 3 * SY_MS, 1, 2, 3, "NET_RX", 11, 1);
		if (!i)
			synth_irq(&sy, SY_T0 + 100 * SY_MS + 500 * SY_US, 500 * SY_US, 1, 1, 24, "virtio3-rx",
				  11, 1);
	}
	line = longest_line(synth_finish(&sy));
	CHECK_STR(
		line,
		"worker (tid 11) lost 18.0% of CPU 1 to softirq NET_RX (180.0 ms over 1.000 s, "
		"60 times, max 3.0 ms)");
	free(line);
	out = report_of(&sy.snap, snapshot_report_text);
	CHECK_HAS(out,
		  "\ninterference  captured: irqs at or above 10 us; not captured: reclaim, faults, locks "
		  "(--interference)\n");
	CHECK_HAS(out, "\n  interference\n"
		       "    interrupts      61 while it ran: 180.000 ms taken (18.00% of the window)\n"
		       "         count   total ms     max ms  % window  interrupted it\n"
		       "            60    180.000      3.000     18.00  softirq NET_RX on CPU 1\n"
		       "             1      0.500      0.500      0.05  irq 24 virtio3-rx on CPU 1\n");
	free(out);

	/* one interrupt longer than the preemption: the single event */
	build_preempted();
	synth_interference(&sy, 1, 0, 0);
	synth_irq(&sy, SY_T0 + 300 * SY_MS, 8 * SY_MS, 2, 2, 3, "NET_RX", 11, 1);
	line = longest_line(synth_finish(&sy));
	CHECK_STR(
		line,
		"worker (tid 11) was interrupted 8.0 ms by softirq NET_RX on CPU 2 at +0.300 s");
	free(line);

	/* shorter than the preemption, and in total too: the preemption stays the verdict */
	build_preempted();
	synth_interference(&sy, 1, 0, 0);
	synth_irq(&sy, SY_T0 + 300 * SY_MS, 2 * SY_MS, 1, 2, 3, "NET_RX", 11, 1);
	synth_irq(&sy, SY_T0 + 400 * SY_MS, 2 * SY_MS, 1, 2, 3, "NET_RX", 11, 1);
	line = longest_line(synth_finish(&sy));
	CHECK_STR(line, "worker (tid 11) waited 5.0 ms at +0.010 s: preempted by rt (pid 50, "
			"SCHED_RR prio 89)");
	free(line);
}

static void test_interference_waiting(void)
{
	const struct sy_task reader = { 11, SY_PID, "reader", 120, 0 };
	char *line, *out;

	/* woken at +0.037 s, runnable 3 ms on an idle CPU 0 while a NET_RX softirq ran there */
	synth_init(&sy);
	synth_thread(&sy, 11, SY_PID, "reader");
	synth_switch(&sy, SY_T0 + 40 * SY_MS, 0, &idle, 0, &reader, 3 * SY_MS, 1);
	synth_interference(&sy, 1, 0, 0);
	synth_irq(&sy, SY_T0 + 37 * SY_MS + 200 * SY_US, 2500 * SY_US, 0, 2, 3, "NET_RX", 0, 2);
	/* on a CPU where no thread of the process waited; no name: the vector's */
	synth_irq(&sy, SY_T0 + 500 * SY_MS, 100 * SY_US, 3, 2, 1, "", 0, 2);
	line = longest_line(synth_finish(&sy));
	CHECK_STR(
		line,
		"reader (tid 11) was kept waiting 2.5 ms by softirq NET_RX on CPU 0 at +0.037 s, "
		"within its 3.0 ms runqueue wait");
	free(line);
	out = report_of(&sy.snap, snapshot_report_text);
	CHECK_HAS(out,
		  "\ninterference  1 interrupt, 0.100 ms, ran where a thread waited; the switches name no "
		  "thread waiting there\n");
	CHECK_HAS(out, "\n    interrupts      1 while it waited on a CPU: 2.500 ms\n"
		       "         count   total ms     max ms  % window  ran while it waited\n"
		       "             1      2.500      2.500      0.25  softirq NET_RX on CPU 0\n");
	free(out);
	out = report_of(&sy.snap, snapshot_report_json);
	CHECK_HAS(out, "\"longest_stall\":{\"kind\":\"irq\",");
	CHECK_HAS(
		out,
		"\"at_ns\":37200000,\"dur_ns\":2500000,\"involuntary\":true,\"cpu\":0,\"irq\":{\"kind\":"
		"\"softirq\",\"num\":3,\"name\":\"NET_RX\",\"thread_was\":\"waiting\"},\"within\":{\"kind\":"
		"\"runqueue\",\"at_ns\":37000000,\"dur_ns\":3000000}}");
	CHECK_HAS(out, "\"unmatched_irqs\":{\"count\":1,\"time_ns\":100000}");
	free(out);
}

/* A page fault's kernel stack, innermost first: 7 frames */
static uint32_t lock_stack(void)
{
	static const char *const fns[] = { "rwsem_down_read_slowpath",
					   "down_read",
					   "lock_mm_and_find_vma",
					   "do_user_addr_fault",
					   "exc_page_fault",
					   "asm_exc_page_fault",
					   "__memcpy" };
	uint32_t f[7];

	for (size_t i = 0; i < 7; i++)
		f[i] = synth_frame(&sy, fns[i], 0x2400000 + i * 0x100, true, 3);
	return synth_stack(&sy, false, f, 7);
}

static void test_interference_lock(void)
{
	char *line, *out;
	uint32_t k;

	/* a 4 ms wait for the mmap_lock, asleep (D) 3.9 ms of it; a 2 ms preemption elsewhere */
	synth_init(&sy);
	synth_thread(&sy, 11, SY_PID, "worker");
	k = lock_stack();
	synth_switch(&sy, SY_T0 + 10 * SY_MS, 1, &worker, 0, &rt50, 0, 0);
	synth_switch(&sy, SY_T0 + 12 * SY_MS, 1, &rt50, 1, &worker, 2 * SY_MS, 2);
	synth_offcpu(&sy, SY_T0 + 700 * SY_MS + 50 * SY_US, 3900 * SY_US, 11, 2, 0, "", k, 0);
	synth_interference(&sy, 8, 0, 100 * SY_US);
	synth_lock(&sy, SY_T0 + 700 * SY_MS, 4 * SY_MS, 11, 0xffff888004a3c0e8ull, 0x10002, 0, k,
		   "mmap_lock");
	synth_lock(&sy, SY_T0 + 800 * SY_MS, 1 * SY_MS, 11, 0xffff888004a3c0e8ull, 0x10002, 0, k,
		   "mmap_lock");
	synth_lock(&sy, SY_T0 + 900 * SY_MS, 200 * SY_US, 11, 0xffffffff82a0b1c0ull, 0x20, -4, 0, "");
	line = longest_line(synth_finish(&sy));
	CHECK_STR(line,
		  "worker (tid 11) waited 4.0 ms for mmap_lock (rwsem read) at +0.700 s, within "
		  "its 3.9 ms off-CPU D interval");
	free(line);
	out = report_of(&sy.snap, snapshot_report_text);
	CHECK_HAS(out,
		  "\ninterference  captured: locks at or above 100 us; not captured: irqs, reclaim, faults "
		  "(--interference)\n");
	CHECK_HAS(
		out,
		"\n  interference\n"
		"    lock waits      3, 5.200 ms, max 4.000 ms\n"
		"         count   total ms     max ms  lock; the longest wait's kernel stack, innermost first\n"
		"             2      5.000      4.000  mmap_lock (rwsem read)\n"
		"                                      rwsem_down_read_slowpath [k]\n"
		"                                      down_read [k]\n"
		"                                      lock_mm_and_find_vma [k]\n"
		"                                      do_user_addr_fault [k]\n"
		"                                      exc_page_fault [k]\n"
		"                                      asm_exc_page_fault [k]\n"
		"                                      ... 1 more frame\n"
		"             1      0.200      0.200  mutex 0xffffffff82a0b1c0; 1 gave up\n");
	free(out);
	out = report_of(&sy.snap, snapshot_report_json);
	CHECK_HAS(out, "\"longest_stall\":{\"kind\":\"lock\",");
	CHECK_HAS(out, "\"lock\":{\"address\":\"0xffff888004a3c0e8\",\"kind\":\"rwsem read\",\"flags\":65538,"
		       "\"name\":\"mmap_lock\",\"mmap_lock\":true,\"ret\":0,\"frames\":[{\"function\":"
		       "\"rwsem_down_read_slowpath\",\"kernel\":true},");
	CHECK_HAS(out,
		  "\"within\":{\"kind\":\"blocked\",\"at_ns\":700050000,\"dur_ns\":3900000,\"state\":\"D\"}");
	CHECK_HAS(
		out,
		"{\"address\":\"0xffffffff82a0b1c0\",\"kind\":\"mutex\",\"flags\":32,\"name\":\"\","
		"\"mmap_lock\":false,\"count\":1,\"time_ns\":200000,\"max_ns\":200000,\"gave_up\":1,"
		"\"longest\":{\"at_ns\":900000000,\"dur_ns\":200000,\"ret\":-4,\"errno\":\"EINTR\",\"cpu\":0,"
		"\"truncated\":false,\"frames\":[]}}");
	free(out);
}

/* Every table at once, and the JSON report's numbers. */
static void build_all(void)
{
	build_preempted();
	synth_interference(&sy, 15, 0, 0);
	synth_irq(&sy, SY_T0 + 300 * SY_MS, 3 * SY_MS, 1, 2, 3, "NET_RX", 11, 1);
	synth_reclaim(&sy, SY_T0 + 412 * SY_MS, 12 * SY_MS, 11, 2, 0, 0xcc0, 1234);
	synth_faults(&sy, SY_T0 + 100 * SY_MS, 100 * SY_MS, 11, (uint32_t[]){ 100, 60, 0, 3 }, 95, 5);
	synth_faults(&sy, SY_T0 + 200 * SY_MS, 100 * SY_MS, 11, (uint32_t[]){ 0, 0, 0, 0 }, 50, 0);
	synth_lock(&sy, SY_T0 + 600 * SY_MS, 4 * SY_MS, 11, 0xffff888004a3c0e8ull, 0x10004, 0, 0,
		   "mmap_lock");
	synth_finish(&sy);
}

static void test_interference_json(void)
{
	char *out;

	build_all();
	out = report_of(&sy.snap, snapshot_report_text);
	CHECK_HAS(out, "\ninterference  captured: irqs, reclaim, faults, locks\n");
	CHECK_HAS(
		out,
		"\n    page faults     145 minor, 5 major: 750/s over 0.200 s; most major at once: 5 in 0.100 s "
		"at +0.100 s\n"
		"                    100 user faults taken: 60 write, 0 exec, 3 prot\n");
	free(out);
	out = report_of(&sy.snap, snapshot_report_json);
	CHECK_HAS(
		out,
		"\"longest_stall\":{\"kind\":\"reclaim\",\"text\":\"worker (tid 11) spent 12.0 ms in "
		"memcg reclaim at +0.412 s (order 0, 1234 pages reclaimed)\",\"thread\":\"worker\",\"tid\":11,"
		"\"at_ns\":412000000,\"dur_ns\":12000000,\"involuntary\":true,\"cpu\":0,\"reclaim\":{\"kind\":"
		"\"memcg reclaim\",\"order\":0,\"gfp\":3264,\"result\":1234}},");
	CHECK_HAS(
		out,
		"\"interference\":{\"captured\":[\"irqs\",\"reclaim\",\"faults\",\"locks\"],\"not_captured\":"
		"[],\"irq_min_ns\":0,\"lock_min_ns\":0,\"unmatched_irqs\":{\"count\":0,\"time_ns\":0}}");
	CHECK_HAS(
		out,
		"\"interference\":{\"irqs\":{\"while_running\":{\"count\":1,\"time_ns\":3000000,\"percent\":"
		"0.3,\"groups\":1,\"by\":[{\"kind\":\"softirq\",\"num\":3,\"name\":\"NET_RX\",\"count\":1,"
		"\"time_ns\":3000000,\"max_ns\":3000000,\"percent\":0.3,\"cpus\":[1],\"longest\":{\"at_ns\":"
		"300000000,\"dur_ns\":3000000,\"cpu\":1}}]},\"while_waiting\":{\"count\":0,\"time_ns\":0,"
		"\"percent\":0,\"groups\":0,\"by\":[]}},");
	CHECK_HAS(
		out,
		"\"reclaim\":{\"count\":1,\"time_ns\":12000000,\"max_ns\":12000000,\"by\":[{\"kind\":"
		"\"memcg reclaim\",\"order\":0,\"count\":1,\"time_ns\":12000000,\"max_ns\":12000000,"
		"\"pages_reclaimed\":1234,\"longest\":{\"at_ns\":412000000,\"dur_ns\":12000000,\"gfp\":3264,"
		"\"result\":1234,\"cpu\":0}}]},");
	CHECK_HAS(out,
		  "\"faults\":{\"minor\":145,\"major\":5,\"per_second\":750,\"periods\":2,\"over_ns\":"
		  "200000000,\"faults\":100,\"write\":60,\"exec\":0,\"prot\":3,\"peak_major\":{\"at_ns\":"
		  "100000000,\"dur_ns\":100000000,\"major\":5}},");
	CHECK_HAS(out,
		  "\"locks\":{\"count\":1,\"time_ns\":4000000,\"max_ns\":4000000,\"locks\":1,\"by\":[{"
		  "\"address\":\"0xffff888004a3c0e8\",\"kind\":\"rwsem write\",\"flags\":65540,\"name\":"
		  "\"mmap_lock\",\"mmap_lock\":true,\"count\":1,\"time_ns\":4000000,\"max_ns\":4000000,"
		  "\"gave_up\":0,\"longest\":{\"at_ns\":600000000,\"dur_ns\":4000000,\"ret\":0,\"cpu\":0,"
		  "\"truncated\":false,\"frames\":[]}}]}}");
	free(out);

	/* a column shorter than the others: refused, nothing written */
	build_all();
	sy.lck.n_ret--;
	for (size_t i = 0; i < 2; i++) {
		char *bad = NULL;
		size_t len = 0;
		int r = render(&sy.snap, i ? snapshot_report_json : snapshot_report_text, &bad, &len);

		CHECKF(r == -EINVAL && len == 0, "short lock column: %d, %zu bytes", r, len);
		free(bad);
	}
}

int main(int argc, char **argv)
{
	Hostprof__Snapshot *fixture = NULL;
	char path[4096];
	int r;

	if (argc != 2) {
		fprintf(stderr, "usage: test-export-synthetic FIXTURES_DIR\n");
		return 1;
	}
	snprintf(path, sizeof(path), "%s/stall.hps", argv[1]);
	r = hps_read_file(path, &fixture);
	if (r < 0) {
		fprintf(stderr, "FAIL cannot read %s: %s\n", path, strerror(-r));
		return 1;
	}
	test_folded();
	test_svg();
	test_verdicts();
	test_summary(fixture);
	test_errors(fixture);
	test_pprof_bytes(fixture);
	test_interference_reclaim();
	test_interference_softirq();
	test_interference_waiting();
	test_interference_lock();
	test_interference_json();
	hps_free(fixture);
	return check_summary();
}
