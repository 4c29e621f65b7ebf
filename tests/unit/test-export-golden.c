// SPDX-License-Identifier: GPL-2.0-only
/*
 * Golden files of the stack exporters and the report, from tests/fixtures/stall.hps (its
 * story is in make-fixture.c): stall.oncpu.folded, stall.offcpu.folded, stall.oncpu.svg,
 * stall.offcpu.svg, stall.txt and stall.report.json must come out byte for byte. Each
 * export is also made twice and must not change (no addresses, clocks or hash order leak
 * in), and the report's first line must blame hog, the realtime task that cost acl_thread
 * the most. The client's summary of acl_thread's preemptions (report_preemptions()) must
 * count the same, and a name no thread has must count none (it is decided without the
 * report model).
 *
 * Usage: test-export-golden FIXTURES_DIR
 * HOSTPROF_UPDATE_GOLDEN=1 rewrites the goldens in FIXTURES_DIR instead of comparing.
 * Exit: 0 pass, 1 fail.
 */
#include "check.h"
#include "export-test.h"
#include "hps.h"
#include "report.h"

static const struct {
	const char *file;
	export_fn fn;
} goldens[] = {
	/* clang-format off */
	{ "stall.oncpu.folded", export_folded_on },
	{ "stall.offcpu.folded", export_folded_off },
	{ "stall.oncpu.svg", export_svg_on },
	{ "stall.offcpu.svg", export_svg_off },
	{ "stall.txt", snapshot_report_text },
	{ "stall.report.json", snapshot_report_json },
	/* clang-format on */
};

#define FIRST_LINE                                                                                   \
	"acl_thread lost 89 ms of 1.0 s (8.9%): CPU taken by realtime task hog (pid 200, SCHED_FIFO prio " \
	"49), 80 ms, longest 30 ms\n"

int main(int argc, char **argv)
{
	Hostprof__Snapshot *snap = NULL;
	char path[4096];
	int r;

	if (argc != 2) {
		fprintf(stderr, "usage: test-export-golden FIXTURES_DIR\n");
		return 1;
	}
	snprintf(path, sizeof(path), "%s/stall.hps", argv[1]);
	r = hps_read_file(path, &snap);
	if (r < 0) {
		fprintf(stderr, "FAIL cannot read %s: %s\n", path, strerror(-r));
		return 1;
	}
	for (size_t i = 0; i < sizeof(goldens) / sizeof(goldens[0]); i++) {
		char *a = NULL, *b = NULL;
		size_t na = 0, nb = 0;

		r = render(snap, goldens[i].fn, &a, &na);
		CHECKF(r == 0, "%s: exporter returned %d", goldens[i].file, r);
		r = render(snap, goldens[i].fn, &b, &nb);
		CHECKF(r == 0, "%s: exporter returned %d the second time", goldens[i].file, r);
		CHECKF(na == nb && !memcmp(a, b, na), "%s: two exports of one snapshot differ",
		       goldens[i].file);
		CHECKF(golden_check(argv[1], goldens[i].file, a, na), "%s matches its golden",
		       goldens[i].file);
		if (!strcmp(goldens[i].file, "stall.txt"))
			CHECKF(na >= strlen(FIRST_LINE) && !memcmp(a, FIRST_LINE, strlen(FIRST_LINE)),
			       "the report's first line blames hog:\n  want: %s  got:  %.*s", FIRST_LINE,
			       (int)strcspn(a, "\n"), a);
		free(a);
		free(b);
	}
	{
		struct preempt_summary sum;
		char line[256];

		CHECK(report_preemptions(snap, "acl_thread", &sum) == 0);
		CHECKF(sum.threads == 1 && sum.preemptions == 4 && sum.wait_ns == 80100000 &&
			       sum.max_wait_ns == 30000000 && sum.top_tid == 200 && sum.top_count == 3 &&
			       sum.top_wait_ns == 80000000 && !strcmp(sum.top_comm, "hog"),
		       "acl_thread: %zu threads, %" PRIu64 " preemptions, %" PRIu64 " ns, top %s (%u) %" PRIu64
		       " times",
		       (size_t)sum.threads, (uint64_t)sum.preemptions, (uint64_t)sum.wait_ns, sum.top_comm,
		       sum.top_tid, (uint64_t)sum.top_count);
		report_preemptions_line(&sum, "acl_thread", line, sizeof(line));
		CHECKF(strstr(line, "hog"), "the summary line names hog: %s", line);
		CHECK(report_preemptions(snap, "acl_*", &sum) == 0 && sum.threads == 1 && sum.preemptions == 4);
		CHECK(report_preemptions(snap, "no_such_thread", &sum) == 0 && sum.threads == 0 &&
		      sum.preemptions == 0);
		/* a glob that matches "" counts the model's threads, named or not */
		CHECK(report_preemptions(snap, "*", &sum) == 0 && sum.threads >= 4 && sum.preemptions == 4);
	}
	hps_free(snap);
	return check_summary();
}
