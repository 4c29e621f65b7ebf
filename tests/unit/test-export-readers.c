// SPDX-License-Identifier: GPL-2.0-only
/*
 * The exports of tests/fixtures/stall.hps read back by independent readers:
 *
 *   pprof  `go tool pprof` (Go's own profile.proto decoder): -raw must match the golden
 *          stall.pprof-raw.txt; -top per sample type shows the 6 vs 2 on-CPU split
 *          (launch_kernel, memcpy_avx), the cpu nanoseconds (6 × 1e9/99 Hz) and the
 *          50 ms off-CPU read (pipe_read); the thread label focuses on acl_thread;
 *          an empty snapshot is still a profile pprof reads.
 *   svg    `xmllint`: both flame graphs, one with hostile names and an empty one are
 *          well-formed XML; XPath counts the frames and reads a tooltip.
 *   jq     `jq` on stall.report.json: the verdict names hog; 3 preemptions by hog, 80 ms,
 *          max 30 ms; the 50 ms blocked read woken by writer; launch_kernel 6 samples 75%;
 *          runqueue percentiles, CPUs, drops and symbol counts.
 *
 * Usage: test-export-readers pprof|svg|jq FIXTURES_DIR
 * HOSTPROF_UPDATE_GOLDEN=1 rewrites stall.pprof-raw.txt.
 * Exit: 0 pass, 1 fail, 77 skip (the reader is not installed: golang-go, libxml2-utils, jq).
 */
#include "check.h"
#include "export-test.h"
#include "hps.h"
#include "synth.h"

static char tmpdir[] = "/tmp/hostprof-readers-XXXXXX";
static struct synth sy;

static bool export_to(const Hostprof__Snapshot *snap, export_fn fn, const char *name, char *path, size_t size)
{
	char *data = NULL;
	size_t len = 0;
	int r;

	snprintf(path, size, "%s/%s", tmpdir, name);
	r = render(snap, fn, &data, &len);
	CHECKF(r == 0, "%s: exporter returned %d", name, r);
	if (r == 0)
		r = write_file(path, data, len);
	free(data);
	return r == 0;
}

/* Runs argv; checks it exits 0; returns its output (malloc'ed) or NULL. */
static char *run_ok(char *const argv[], char *const env[], bool merge)
{
	char *out = NULL;
	int status = run_capture(argv, env, merge, &out);

	CHECKF(status == 0, "%s %s %s ... exited %d:\n%s", argv[0], argv[1], argv[2] ? argv[2] : "", status,
	       out ? out : "");
	if (status != 0) {
		free(out);
		return NULL;
	}
	return out;
}

/* A line of out that holds every one of the words, in order. */
static bool has_line(const char *out, const char *const words[])
{
	for (const char *line = out; line && *line;) {
		const char *end = strchr(line, '\n'), *p = line;
		size_t k;

		for (k = 0; words[k]; k++) {
			p = strstr(p, words[k]);
			if (!p || (end && p >= end))
				break;
			p += strlen(words[k]);
		}
		if (!words[k])
			return true;
		line = end ? end + 1 : NULL;
	}
	return false;
}

#define HAS_LINE(out, ...)                                                                                   \
	CHECKF((out) && has_line((out), (const char *const[]){ __VA_ARGS__, NULL }), "no line with: %s\n%s", \
	       #__VA_ARGS__, (out) ? (out) : "(no output)")

/* ---- pprof ------------------------------------------------------------------------------- */

static int export_pprof(const Hostprof__Snapshot *s, FILE *f)
{
	return snapshot_export_pprof(s, f);
}

static char *pprof(char *go, const char *file, const char *opt1, const char *opt2)
{
	char *argv[] = { go,	       "tool",	     "pprof",	   "-symbolize=none",
			 (char *)opt1, (char *)opt2, (char *)file, NULL };
	char *env[] = { "TZ=UTC", NULL };

	if (!opt2) { /* shift the file left */
		argv[5] = (char *)file;
		argv[6] = NULL;
	}
	return run_ok(argv, env, false);
}

static int test_pprof(const Hostprof__Snapshot *fixture, const char *fixtures)
{
	char path[4200], empty[4200];
	char *go = find_program("go"), *out;

	if (!go) {
		printf("SKIP: no `go` in PATH to read the profile (apt-get install golang-go)\n");
		return 77;
	}
	if (!export_to(fixture, export_pprof, "stall.pb.gz", path, sizeof(path))) {
		free(go);
		return check_summary();
	}
	out = pprof(go, path, "-raw", NULL);
	if (out)
		CHECKF(golden_check(fixtures, "stall.pprof-raw.txt", out, strlen(out)), "go tool pprof -raw");
	free(out);

	out = pprof(go, path, "-sample_index=samples", "-top");
	HAS_LINE(out, "Type: samples");
	HAS_LINE(out, "Total samples = 8");
	HAS_LINE(out, " 6 75.00% 75.00% ", " 6 75.00%  launch_kernel");
	HAS_LINE(out, " 2 25.00%   100% ", " 2 25.00%  memcpy_avx");
	HAS_LINE(out, " 0     0%   100% ", " 6 75.00%  main");
	HAS_LINE(out, " 0     0%   100% ", " 2 25.00%  libfoo.so+0x1234");
	free(out);

	out = pprof(go, path, "-sample_index=cpu", "-top");
	HAS_LINE(out, "Total samples = 80.81ms");
	HAS_LINE(out, "60.61ms 75.00%", "launch_kernel");
	free(out);

	out = pprof(go, path, "-sample_index=offcpu", "-top");
	HAS_LINE(out, "Type: offcpu");
	HAS_LINE(out, "50ms   100%   100%       50ms   100%  pipe_read");
	HAS_LINE(out, "50ms   100%", "[unknown 0x1234]");
	CHECKF(out && !strstr(out, "launch_kernel"), "on-CPU frames have no off-CPU time");
	free(out);

	out = pprof(go, path, "-tagfocus=thread=acl_thread", "-top");
	HAS_LINE(out, "launch_kernel");
	CHECKF(out && !strstr(out, "memcpy_avx"), "the thread label selects acl_thread only");
	free(out);

	out = pprof(go, path, "-tags", NULL);
	HAS_LINE(out, "thread: Total");
	HAS_LINE(out, "(75.00%): acl_thread");
	HAS_LINE(out, "(75.00%): 101");
	free(out);

	synth_init(&sy);
	if (export_to(synth_finish(&sy), export_pprof, "empty.pb.gz", empty, sizeof(empty))) {
		out = pprof(go, empty, "-raw", NULL);
		HAS_LINE(out, "samples/count cpu/nanoseconds[dflt] offcpu/nanoseconds");
		free(out);
	}
	free(go);
	return check_summary();
}

/* ---- svg --------------------------------------------------------------------------------- */

static char *xpath(char *xmllint, const char *file, const char *expr)
{
	char *argv[] = { xmllint, "--xpath", (char *)expr, (char *)file, NULL };
	char *out = run_ok(argv, NULL, false);

	if (out) /* newer xmllint ends the value with a newline */
		out[strcspn(out, "\n")] = '\0';
	return out;
}

static int test_svg(const Hostprof__Snapshot *fixture)
{
	char *xmllint = find_program("xmllint"), *out;
	char on[4200], off[4200], hostile[4200], empty[4200];
	uint32_t f1, f2, s1;

	if (!xmllint) {
		printf("SKIP: no `xmllint` in PATH to read the SVG (apt-get install libxml2-utils)\n");
		return 77;
	}
	export_to(fixture, export_svg_on, "stall.oncpu.svg", on, sizeof(on));
	export_to(fixture, export_svg_off, "stall.offcpu.svg", off, sizeof(off));

	synth_init(&sy);
	synth_thread(&sy, 11, SY_PID, "<t&\"h'r>]]>");
	f1 = synth_frame(&sy, "std::vector<int>::push_back(int&&)", 0x401000, false, 1);
	f2 = synth_frame(&sy, "bad\xff\xc3(\x01\x7f\xef\xbf\xbe", 0x402000, false, 1);
	s1 = synth_stack(&sy, true, (uint32_t[]){ f1, f2 }, 2);
	synth_sample(&sy, SY_T0 + 1, 11, s1, 0);
	export_to(synth_finish(&sy), export_svg_on, "hostile.svg", hostile, sizeof(hostile));
	synth_init(&sy);
	export_to(synth_finish(&sy), export_svg_off, "empty.svg", empty, sizeof(empty));

	{
		char *argv[] = { xmllint, "--noout", on, off, hostile, empty, NULL };

		out = run_ok(argv, NULL, true);
		CHECKF(out && !out[0], "xmllint --noout says nothing: %s", out ? out : "");
		free(out);
	}
	/* 9 frames on-CPU (all, 2 threads, 6 functions), 7 off-CPU; + the background rect */
	out = xpath(xmllint, on, "count(//*[local-name()='rect'])");
	CHECKF(out && !strcmp(out, "10"), "on-CPU rects: %s", out ? out : "");
	free(out);
	out = xpath(xmllint, off, "count(//*[local-name()='g'][@class='f'])");
	CHECKF(out && !strcmp(out, "7"), "off-CPU frames: %s", out ? out : "");
	free(out);
	out = xpath(
		xmllint, on,
		"string(//*[local-name()='title'][starts-with(., 'launch_kernel ')]/following-sibling::*[1]/@width)");
	CHECKF(out && !strcmp(out, "885.00"), "launch_kernel is 6/8 of 1180 px: %s", out ? out : "");
	free(out);
	out = xpath(xmllint, off, "string(//*[local-name()='title'][starts-with(., 'pipe_read')])");
	CHECKF(out && !strcmp(out, "pipe_read_[k] (50000 us, 100.00%)"), "off-CPU tooltip: %s",
	       out ? out : "");
	free(out);
	out = xpath(xmllint, hostile, "string(//*[local-name()='g'][@class='f'][2]/*[local-name()='title'])");
	CHECKF(out && !strcmp(out, "<t&\"h'r>]]> (1 sample, 100.00%)"), "hostile name round trip: %s",
	       out ? out : "");
	free(out);
	free(xmllint);
	return check_summary();
}

/* ---- jq ---------------------------------------------------------------------------------- */

static const char *const jq_checks[] = {
	".verdict | .cause == \"rt\" and .thread == \"acl_thread\" and .tid == 101 and .stands_out",
	".verdict.by | .comm == \"hog\" and .pid == 200 and .policy == \"SCHED_FIFO\" and .prio == 49",
	".verdict | .time_ns == 80000000 and .longest_ns == 30000000 and .longest_at_ns == 900000000 and .count == 3",
	".verdict.text | startswith(\"acl_thread lost 89 ms of 1.0 s (8.9%): CPU taken by realtime task hog\")",
	".dispatch == {\"globs\": [\"acl_thread\"], \"default\": true, \"why\": \"matched\", \"threads\": [101]}",
	".threads[0] | .dispatch and .tid == 101 and .time.window_ns == 1000000000"
	" and ([.time.causes[].time_ns] | add) == 1000000000",
	".threads[0].episodes | .count == 6 and .longest[0].dur_ns == 30000000 and .longest[0].parts[0].cause == \"rt\"",
	".longest_stall.kind == \"preempted\" and .longest_stall.thread == \"acl_thread\" and .longest_stall.tid == 101",
	".longest_stall.preempted_by | .comm == \"hog\" and .pid == 200 and .policy == \"SCHED_FIFO\" and .prio == 49",
	".longest_stall.dur_ns == 30000000 and .longest_stall.at_ns == 900000000",
	".longest_stall.text | startswith(\"acl_thread (tid 101) waited 30.0 ms\") and contains(\"hog\")",
	".threads[] | select(.comm == \"acl_thread\") | .preemptions.by[0]"
	" | .comm == \"hog\" and .count == 3 and .time_ns == 80000000 and .max_ns == 30000000",
	".threads[] | select(.comm == \"acl_thread\") | .preemptions | .count == 4 and .tasks == 2",
	".threads[] | select(.comm == \"acl_thread\") | .runqueue_latency"
	" | .p50_ns == 25000000 and .p99_ns == 30000000 and .max_ns == 30000000 and .switch_ins == 5",
	".threads[] | select(.comm == \"acl_thread\") | .cpus"
	" | .ran_on == [1] and .single_cpu and .migrations == [{\"at_ns\": 5000000, \"from\": 0, \"to\": 1}]",
	".threads[] | select(.comm == \"dataloader\") | .offcpu.stacks[0]"
	" | .time_ns == 50000000 and .state == \"S\" and .wakers[0].comm == \"writer\" and .wakers[0].tid == 103",
	".threads[] | select(.comm == \"dataloader\") | .offcpu.stacks[0].frames | map(.function)"
	" == [\"pipe_read\", \"vfs_read\", \"ksys_read\", \"load_batch\", \"[unknown 0x1234]\"]",
	".threads[] | select(.comm == \"dataloader\") | .syscalls.slowest[0]"
	" | .name == \"read\" and .dur_ns == 50012000 and .ret == 4096 and .args == [7, 139637976731648, 4096]",
	".threads[] | select(.comm == \"acl_thread\") | .oncpu.top_functions[0]"
	" | .function == \"launch_kernel\" and .samples == 6 and .percent == 75",
	".threads[] | select(.comm == \"dataloader\") | .oncpu.top_functions[0]"
	" | .function == \"memcpy_avx\" and .samples == 2 and .percent == 25",
	".capture.drops == [{\"cause\": \"ring_full\", \"count\": 3}, {\"cause\": \"stack_failed\", \"count\": 1}]",
	".capture | .drops_total == 4 and .events == 27 and .evicted == 0",
	".capture.symbols == {\"resolved\": 8, \"unresolved\": 2, \"suspect_stacks\": 1}",
	"[.threads[].tid] == [101, 102] and .idle_threads == [{\"tid\": 100, \"comm\": \"trainer\"}, "
	"{\"tid\": 103, \"comm\": \"writer\"}]",
};

static int test_jq(const Hostprof__Snapshot *fixture)
{
	char *jq = find_program("jq"), *out;
	char path[4200], empty[4200];

	if (!jq) {
		printf("SKIP: no `jq` in PATH to read the report (apt-get install jq)\n");
		return 77;
	}
	if (!export_to(fixture, snapshot_report_json, "stall.report.json", path, sizeof(path))) {
		free(jq);
		return check_summary();
	}
	for (size_t i = 0; i < sizeof(jq_checks) / sizeof(jq_checks[0]); i++) {
		char *argv[] = { jq, "-e", (char *)jq_checks[i], path, NULL };
		int status = run_capture(argv, NULL, true, &out);

		CHECKF(status == 0 && out && !strcmp(out, "true\n"), "jq -e '%s': exit %d, %s", jq_checks[i],
		       status, out ? out : "");
		free(out);
	}
	synth_init(&sy);
	if (export_to(synth_finish(&sy), snapshot_report_json, "empty.json", empty, sizeof(empty))) {
		char *argv[] = { jq, "-e", ".verdict.cause == \"none\" and .longest_stall.kind == \"none\" and .threads == []",
				 empty, NULL };
		int status = run_capture(argv, NULL, true, &out);

		CHECKF(status == 0 && out && !strcmp(out, "true\n"), "empty report: exit %d, %s", status,
		       out ? out : "");
		free(out);
	}
	free(jq);
	return check_summary();
}

static void cleanup(void)
{
	char *argv[] = { "/bin/rm", "-rf", tmpdir, NULL };
	char *out = NULL;

	run_capture(argv, NULL, true, &out);
	free(out);
}

int main(int argc, char **argv)
{
	Hostprof__Snapshot *fixture = NULL;
	char path[4096];
	int r, status;

	if (argc != 3) {
		fprintf(stderr, "usage: test-export-readers pprof|svg|jq FIXTURES_DIR\n");
		return 1;
	}
	snprintf(path, sizeof(path), "%s/stall.hps", argv[2]);
	r = hps_read_file(path, &fixture);
	if (r < 0) {
		fprintf(stderr, "FAIL cannot read %s: %s\n", path, strerror(-r));
		return 1;
	}
	if (!mkdtemp(tmpdir)) {
		fprintf(stderr, "FAIL mkdtemp: %s\n", strerror(errno));
		hps_free(fixture);
		return 1;
	}
	if (!strcmp(argv[1], "pprof"))
		status = test_pprof(fixture, argv[2]);
	else if (!strcmp(argv[1], "svg"))
		status = test_svg(fixture);
	else if (!strcmp(argv[1], "jq"))
		status = test_jq(fixture);
	else {
		fprintf(stderr, "unknown reader %s\n", argv[1]);
		status = 1;
	}
	cleanup();
	hps_free(fixture);
	return status;
}
