// SPDX-License-Identifier: GPL-2.0-only
/*
 * The exporters on a snapshot built in memory (tests/unit/synth.h) whose frames have what
 * the symbolizer now gives: a demangled name with its mangled system_name, a source line,
 * inlined frames; and a mapping without symbols that names its debug packages. Checks:
 *   - folded: the inlined functions after their frame, innermost last, "_[i]";
 *   - SVG: the inlined frame drawn, in the inlined hue, the demangled name XML-escaped;
 *   - pprof: decoded with protoc --decode_raw when it is there (else skipped in part): the
 *     mangled name in the string table, a Location with three Lines (inlined first), each
 *     with its line number, Functions with a filename;
 *   - report: the top function with "(dir/file:line)", the inlined frames in the off-CPU
 *     stack, the debug package of the file hot code without symbols is in, the counts;
 *   - report-json: the same, as fields;
 *   - a frame without any of it exports as before.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../unit/check.h"
#include "../unit/export-test.h"
#include "../unit/synth.h"

static struct synth sy;
static Hostprof__InlinedFrame in_leaf, in_mid, *inl[2];
static char *pkgs[2] = { "libfoo1-dbg", "libfoo1-dbgsym" };
static Hostprof__SymbolStats stats;

static void build(void)
{
	uint32_t f_outer, f_main, f_kernel, f_stripped, f_schedule, s_inl, s_cxx, s_stripped, s_k;

	synth_init(&sy);
	synth_thread(&sy, 11, SY_PID, "trainer");
	f_outer = synth_frame(&sy, "inl_outer", 0x401100, false, 1);
	sy.fr[f_outer].file = "/src/app/inl.c";
	sy.fr[f_outer].line = 49;
	hostprof__inlined_frame__init(&in_leaf);
	in_leaf.function = "inl_leaf";
	in_leaf.file = "/src/app/inl.c";
	in_leaf.line = 34;
	hostprof__inlined_frame__init(&in_mid);
	in_mid.function = "inl_mid";
	in_mid.file = "/src/app/inl.c";
	in_mid.line = 41;
	inl[0] = &in_leaf;
	inl[1] = &in_mid;
	sy.fr[f_outer].inlined = inl;
	sy.fr[f_outer].n_inlined = 2;
	f_main = synth_frame(&sy, "main", 0x401000, false, 1);
	f_kernel = synth_frame(&sy, "at::native::add_kernel(at::Tensor<long> const&, float)", 0x402000, false,
			       1);
	sy.fr[f_kernel].system_name = "_ZN2at6native10add_kernelERKNS_6TensorIlEEf";
	sy.fr[f_kernel].file = "/src/aten/add.cpp";
	sy.fr[f_kernel].line = 30;
	f_stripped = synth_frame(&sy, "", 0x3402000, false, 4); /* in /lib/libx.so, no symbols */
	sy.mp[3].debug_packages = pkgs;
	sy.mp[3].n_debug_packages = 2;
	f_schedule = synth_frame(&sy, "schedule", 0x2400100, true, 3);
	s_inl = synth_stack(&sy, true, (uint32_t[]){ f_outer, f_main }, 2);
	s_cxx = synth_stack(&sy, true, (uint32_t[]){ f_kernel, f_main }, 2);
	s_stripped = synth_stack(&sy, true, (uint32_t[]){ f_stripped, f_main }, 2);
	s_k = synth_stack(&sy, false, (uint32_t[]){ f_schedule }, 1);
	for (int i = 0; i < 6; i++)
		synth_sample(&sy, SY_T0 + (10 + i) * SY_MS, 11, s_inl, 0);
	for (int i = 0; i < 3; i++)
		synth_sample(&sy, SY_T0 + (20 + i) * SY_MS, 11, s_cxx, 0);
	for (int i = 0; i < 4; i++)
		synth_sample(&sy, SY_T0 + (30 + i) * SY_MS, 11, s_stripped, 0);
	synth_offcpu(&sy, SY_T0 + 100 * SY_MS, 5 * SY_MS, 11, 1, 0, "", s_k, s_inl);
	hostprof__symbol_stats__init(&stats);
	stats.resolved = 4;
	stats.unresolved = 1;
	stats.lines = 2;
	stats.inlined = 2;
	stats.debuginfo_failed = 1;
	sy.snap.symbol_stats = &stats;
	synth_finish(&sy);
}

static char *export(export_fn fn)
{
	char *out = NULL;
	size_t len;
	int r = render(&sy.snap, fn, &out, &len);

	CHECKF(r == 0, "export: %d", r);
	return out ? out : strdup("");
}

static void expect_in(const char *what, const char *text, const char *needle)
{
	CHECKF(strstr(text, needle) != NULL, "%s: no \"%s\" in:\n%s", what, needle, text);
}

/* The needles appear in text in this order. */
static void expect_in_order(const char *what, const char *text, const char *const *needles, size_t n)
{
	const char *at = text;

	for (size_t i = 0; i < n; i++) {
		const char *p = strstr(at, needles[i]);

		CHECKF(p != NULL, "%s: no \"%s\" after \"%s\" in:\n%s", what, needles[i],
		       i ? needles[i - 1] : "", text);
		if (!p)
			return;
		at = p + strlen(needles[i]);
	}
}

static int pprof_fn(const Hostprof__Snapshot *s, FILE *f)
{
	return snapshot_export_pprof(s, f);
}

static int report_fn(const Hostprof__Snapshot *s, FILE *f)
{
	return snapshot_report_text(s, f);
}

static int report_json_fn(const Hostprof__Snapshot *s, FILE *f)
{
	return snapshot_report_json(s, f);
}

/* protoc --decode_raw of the gunzipped profile; NULL when protoc or gzip is not there. */
static char *decode_pprof(const char *gz, size_t len)
{
	char path[] = "/tmp/hpdbg-pprof.XXXXXX", cmd[256];
	char *out = NULL;
	size_t n = 0;
	FILE *p;
	int fd = mkstemp(path);

	if (fd < 0 || write(fd, gz, len) != (ssize_t)len)
		return NULL;
	close(fd);
	if (system("command -v protoc >/dev/null 2>&1") != 0) {
		unlink(path);
		return NULL;
	}
	snprintf(cmd, sizeof(cmd), "gzip -dc <%s | protoc --decode_raw", path);
	p = popen(cmd, "r");
	if (p) {
		char buf[4096];
		size_t k;

		while ((k = fread(buf, 1, sizeof(buf), p)) > 0) {
			out = realloc(out, n + k + 1);
			memcpy(out + n, buf, k);
			n += k;
			out[n] = 0;
		}
		pclose(p);
	}
	unlink(path);
	return out;
}

int main(void)
{
	char *out, *raw, *gz = NULL;
	size_t gz_len = 0;

	build();

	out = export(export_folded_on);
	expect_in("folded", out, "trainer;main;inl_outer;inl_mid_[i];inl_leaf_[i] 6\n");
	expect_in("folded", out, "trainer;main;at::native::add_kernel(at::Tensor<long> const&, float) 3\n");
	expect_in("folded", out, "trainer;main;libx.so+0x2000 4\n");
	free(out);
	out = export(export_folded_off);
	CHECKF(!strcmp(out, "trainer;main;inl_outer;inl_mid_[i];inl_leaf_[i];schedule_[k] 5000\n"),
	       "off-CPU:\n%s", out);
	free(out);

	out = export(export_svg_on);
	expect_in("svg", out, "<title>inl_leaf_[i] (6 samples");
	expect_in("svg", out, "at::native::add_kernel(at::Tensor&lt;long&gt; const&amp;, float)");
	free(out);

	out = export(report_fn);
	expect_in("report", out, "inl_outer (app/inl.c:49)\n");
	expect_in("report", out,
		  "at::native::add_kernel(at::Tensor<long> const&, float) (aten/add.cpp:30)\n");
	expect_in_order("report: the off-CPU stack", out,
			(const char *const[]){ "schedule [k]\n", " inl_leaf (inlined, app/inl.c:34)\n",
					       " inl_mid (inlined, app/inl.c:41)\n",
					       " inl_outer (app/inl.c:49)\n", " main\n" },
			5);
	expect_in("report", out,
		  "no symbols        /lib/libx.so: 4 samples (30.8%); debug package libfoo1-dbg or"
		  " libfoo1-dbgsym\n");
	expect_in("report", out, "with source lines 2, inlined frames 2; debug info unreadable for 1\n");
	free(out);

	out = export(report_json_fn);
	expect_in("report-json", out,
		  "\"function\":\"inl_outer\",\"kernel\":false,\"file\":\"/src/app/inl.c\",\"line\":49");
	expect_in("report-json", out,
		  "\"function\":\"inl_leaf\",\"kernel\":false,\"inlined\":true,\"file\":\"/src/app/inl.c\","
		  "\"line\":34");
	expect_in("report-json", out, "\"missing\":[{\"file\":\"/lib/libx.so\",\"samples\":4");
	expect_in("report-json", out, "\"debug_packages\":[\"libfoo1-dbg\",\"libfoo1-dbgsym\"]");
	free(out);

	CHECK_EQ_INT(render(&sy.snap, pprof_fn, &gz, &gz_len), 0);
	raw = decode_pprof(gz, gz_len);
	if (raw) {
		expect_in("pprof", raw, "\"_ZN2at6native10add_kernelERKNS_6TensorIlEEf\"");
		expect_in("pprof", raw, "\"/src/aten/add.cpp\"");
		/* inl_outer's Location: three Lines, inl_leaf's first, with lines 34, 41, 49 */
		expect_in_order(
			"pprof: the inlined Lines", raw,
			(const char *const[]){ "  4 {\n    1: ", "\n    2: 34\n  }\n  4 {\n    1: ",
					       "\n    2: 41\n  }\n  4 {\n    1: ", "\n    2: 49\n  }\n}\n" },
			4);
		free(raw);
	} else {
		printf("no protoc or gzip: the pprof profile is not decoded\n");
	}
	free(gz);
	return check_summary();
}
