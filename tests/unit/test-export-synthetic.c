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
 *  3. the verdict: a blocked interval names its syscall, state and waker; an
 *     involuntary stall (preempted, runqueue, D) beats a longer S sleep; a preemption
 *     that never ends runs to the window's end; a runqueue wait names the task on the
 *     CPU; an empty snapshot has no stall.
 *  4. report_preemptions() and its line, as the client prints them for the fixture.
 *  5. every exporter refuses an inconsistent snapshot with -EINVAL, writing nothing, and
 *     returns the errno of a failed write (/dev/full: -ENOSPC).
 *  6. pprof: gzip with mtime 0, the same bytes every time.
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

static char *first_line(const Hostprof__Snapshot *s)
{
	char *out = NULL;
	size_t len = 0;
	int r = render(s, snapshot_report_text, &out, &len);

	CHECKF(r == 0, "report: %d", r);
	if (out)
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
	line = first_line(synth_finish(&sy));
	CHECK_STR(line,
		  "worst stall: reader (tid 11) blocked 20.0 ms in read at +0.100 s (off-CPU S, woken by "
		  "feeder tid 12)");
	free(line);

	/* a 5 ms preemption beats a 50 ms S sleep; a 10 ms D block beats both */
	synth_init(&sy);
	synth_thread(&sy, 11, SY_PID, "reader");
	synth_thread(&sy, 12, SY_PID, "disk");
	synth_switch(&sy, SY_T0 + 10 * SY_MS, 0, &reader, 0, &rt, 0, 0);
	synth_switch(&sy, SY_T0 + 15 * SY_MS, 0, &rt, 1, &reader, 5 * SY_MS, 2);
	synth_offcpu(&sy, SY_T0 + 100 * SY_MS, 50 * SY_MS, 11, 1, 0, "", 0, 0);
	line = first_line(synth_finish(&sy));
	CHECK_STR(line, "worst stall: reader (tid 11) waited 5.0 ms at +0.010 s: preempted by rt (pid 50, "
			"SCHED_RR prio 89)");
	free(line);
	synth_init(&sy);
	synth_thread(&sy, 11, SY_PID, "reader");
	synth_thread(&sy, 12, SY_PID, "disk");
	synth_switch(&sy, SY_T0 + 10 * SY_MS, 0, &reader, 0, &rt, 0, 0);
	synth_switch(&sy, SY_T0 + 15 * SY_MS, 0, &rt, 1, &reader, 5 * SY_MS, 2);
	synth_offcpu(&sy, SY_T0 + 100 * SY_MS, 50 * SY_MS, 11, 1, 0, "", 0, 0);
	synth_offcpu(&sy, SY_T0 + 200 * SY_MS, 10 * SY_MS, 12, 2, 0, "", 0, 0);
	line = first_line(synth_finish(&sy));
	CHECK_STR(line, "worst stall: disk (tid 12) blocked 10.0 ms at +0.200 s (off-CPU D, waker unknown)");
	free(line);

	/* preempted and never back: counted to the window's end */
	synth_init(&sy);
	synth_thread(&sy, 12, SY_PID, "disk");
	synth_switch(&sy, SY_T0 + 900 * SY_MS, 1, &disk, 0x100, &spinner, 0, 0);
	line = first_line(synth_finish(&sy));
	CHECK_STR(line,
		  "worst stall: disk (tid 12) waited 100.0 ms at +0.900 s: preempted by spinner (pid 51, "
		  "SCHED_OTHER prio 120), still waiting when the window closed");
	free(line);

	/* woken, then left on the runqueue behind another task; and behind an idle CPU */
	synth_init(&sy);
	synth_thread(&sy, 11, SY_PID, "reader");
	synth_switch(&sy, SY_T0 + 40 * SY_MS, 0, &spinner, 0, &reader, 7 * SY_MS, 1);
	synth_switch(&sy, SY_T0 + 50 * SY_MS, 0, &reader, 1, &idle, 0, 0);
	synth_switch(&sy, SY_T0 + 60 * SY_MS, 0, &idle, 0, &reader, 2 * SY_MS, 1);
	line = first_line(synth_finish(&sy));
	CHECK_STR(
		line,
		"worst stall: reader (tid 11) waited 7.0 ms at +0.033 s: runnable after a wakeup, CPU 0 ran "
		"spinner (pid 51, SCHED_OTHER prio 120)");
	free(line);

	/* nothing at all */
	synth_init(&sy);
	line = first_line(synth_finish(&sy));
	CHECK_STR(line,
		  "worst stall: none: no watched thread was preempted, waited on a runqueue or blocked");
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
	hps_free(fixture);
	return check_summary();
}
