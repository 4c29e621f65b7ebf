// SPDX-License-Identifier: GPL-2.0-only
/*
 * Unit test of lib/export_json.c (and jsonw_fixed in lib/jsonw.c).
 *
 * 1. jsonw_fixed writes fixed-point numbers exactly.
 * 2. The exporter rejects an inconsistent snapshot with -EINVAL and writes nothing; a failed
 *    write is reported; nanoseconds survive in "ts" where a double would round them.
 * 3. The export of tests/fixtures/stall.hps (make-fixture.c tells its story) equals the golden
 *    file stall.json next to it, byte for byte, and jq, a JSON parser independent of ours,
 *    finds in it the spans the story implies: acl_thread Runnable 25 ms after hog preempted
 *    it (state R), marked as a long wait; CPU 1 running hog for 25, 25 and 30 ms; dataloader
 *    Blocked in S until writer woke it; the syscall, reclaim and lock-wait slices, nesting
 *    with the state spans; the IRQs on CPU 1's row; dataloader's page-fault counter; the
 *    task, migration and marker instants; the rows' names.
 *
 * Usage: test-json FIXTURE.hps (meson passes it; else ../fixtures/stall.hps from this file).
 * UPDATE_GOLDEN=1 writes the golden file instead of comparing (then inspect it by hand).
 * Exit: 0 pass, 1 fail, 77 skip (no jq; $JQ names another binary).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "export.h"
#include "hps.h"
#include "jsonw.h"
#include "macro.h"

#define CPUS_PID "4194304" /* export_json.c: PID_MAX_LIMIT */

/* ---- 1. jsonw_fixed -------------------------------------------------------------------- */

static void expect_fixed(int64_t v, unsigned int decimals, const char *want)
{
	char *buf = NULL;
	size_t len = 0;
	struct jsonw *j;
	FILE *f;

	f = open_memstream(&buf, &len);
	if (!f) {
		fprintf(stderr, "open_memstream: %s\n", strerror(errno));
		exit(1);
	}
	j = jsonw_new(f);
	CHECK(j != NULL);
	if (j) {
		jsonw_begin_array(j);
		jsonw_fixed(j, v, decimals);
		jsonw_fixed(j, v, decimals);
		jsonw_end_array(j);
		jsonw_free(j);
	}
	fclose(f);
	{
		char expect[96];

		snprintf(expect, sizeof(expect), "[%s,%s]", want, want);
		CHECKF(buf && !strcmp(buf, expect), "jsonw_fixed(%" PRId64 ", %u): %s, want %s", v, decimals,
		       buf ? buf : "(null)", expect);
	}
	free(buf);
}

static void test_jsonw_fixed(void)
{
	expect_fixed(1500, 3, "1.5");
	expect_fixed(-7, 3, "-0.007");
	expect_fixed(42000, 3, "42");
	expect_fixed(0, 3, "0");
	expect_fixed(999999999, 3, "999999.999");
	expect_fixed(INT64_C(1234567891234567), 3, "1234567891234.567");
	expect_fixed(INT64_MIN, 3, "-9223372036854775.808");
	expect_fixed(123, 0, "123");
	expect_fixed(5, 18, "0.000000000000000005");
}

/* ---- Exporting ------------------------------------------------------------------------- */

/* Exports into a new temporary file; returns the exporter's result, the path and its size. */
static int export_to_file(const Hostprof__Snapshot *snap, char *path, size_t path_len, long *ret_size)
{
	const char *tmp = getenv("TMPDIR");
	struct stat st;
	FILE *f;
	int fd, r;

	snprintf(path, path_len, "%s/test-json-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	fd = mkstemp(path);
	if (fd < 0) {
		fprintf(stderr, "mkstemp %s: %s\n", path, strerror(errno));
		exit(1);
	}
	f = fdopen(fd, "w");
	if (!f) {
		fprintf(stderr, "fdopen: %s\n", strerror(errno));
		exit(1);
	}
	r = snapshot_export_json(snap, f);
	CHECK(fclose(f) == 0);
	if (stat(path, &st) < 0) {
		fprintf(stderr, "stat %s: %s\n", path, strerror(errno));
		exit(1);
	}
	*ret_size = (long)st.st_size;
	return r;
}

static char *read_all(const char *path, size_t *ret_len)
{
	char *buf = NULL;
	size_t len = 0, cap = 0, n;
	FILE *f = fopen(path, "re");

	if (!f)
		return NULL;
	for (;;) {
		if (cap - len < 4096) {
			cap = cap ? 2 * cap : 65536;
			buf = realloc(buf, cap + 1);
			if (!buf) {
				fprintf(stderr, "out of memory\n");
				exit(1);
			}
		}
		n = fread(buf + len, 1, cap - len, f);
		if (n == 0)
			break;
		len += n;
	}
	fclose(f);
	buf[len] = '\0';
	*ret_len = len;
	return buf;
}

/* ---- 2. Rejected input, write errors, precision ---------------------------------------- */

struct sink {
	size_t bytes, fail_after;
};

static ssize_t sink_write(void *cookie, const char *buf, size_t size)
{
	struct sink *k = cookie;

	(void)buf;
	if (k->bytes + size > k->fail_after) {
		errno = ENOSPC;
		return -1;
	}
	k->bytes += size;
	return (ssize_t)size;
}

static void expect_rejected(const Hostprof__Snapshot *snap, const char *what)
{
	char path[4096];
	long size;
	int r;

	r = export_to_file(snap, path, sizeof(path), &size);
	CHECKF(r == -EINVAL, "%s: got %d, want -EINVAL", what, r);
	CHECKF(size == 0, "%s: %ld bytes written for rejected input", what, size);
	unlink(path);
}

static void test_invalid(Hostprof__Snapshot *snap)
{
	cookie_io_functions_t io = { .write = sink_write };
	struct sink k = { .fail_after = 2048 };
	Hostprof__Marker *marker;
	uint32_t saved;
	FILE *f;
	int r;

	CHECK(snapshot_export_json(NULL, stdout) == -EINVAL);
	CHECK(snapshot_export_json(snap, NULL) == -EINVAL);

	snap->switches->n_next_prio--;
	expect_rejected(snap, "short next_prio column");
	snap->switches->n_next_prio++;
	saved = snap->switches->next_comm[3];
	snap->switches->next_comm[3] = (uint32_t)snap->n_strings;
	expect_rejected(snap, "comm index out of range");
	snap->switches->next_comm[3] = saved;
	saved = snap->task_events->comm[0];
	snap->task_events->comm[0] = 1000;
	expect_rejected(snap, "task event comm out of range");
	snap->task_events->comm[0] = saved;
	snap->syscalls->dur_ns[1] = UINT64_MAX - snap->start_ns;
	expect_rejected(snap, "syscall end past 2^64");
	snap->syscalls->dur_ns[1] = 3 * NSEC_PER_MSEC + 5 * NSEC_PER_USEC;
	marker = snap->markers[0];
	snap->markers[0] = NULL;
	expect_rejected(snap, "NULL marker");
	snap->markers[0] = marker;

	/* a full disk is an error, not a short file */
	f = fopencookie(&k, "w", io);
	if (!f) {
		fprintf(stderr, "fopencookie: %s\n", strerror(errno));
		exit(1);
	}
	r = snapshot_export_json(snap, f);
	fclose(f);
	CHECKF(r == -ENOSPC, "failed write returned %d, want -ENOSPC", r);
}

/* A syscall 1234.567891234 s into the window: a double of microseconds would round it. */
static void test_precision(void)
{
	Hostprof__Snapshot snap = HOSTPROF__SNAPSHOT__INIT;
	Hostprof__SyscallTable sc = HOSTPROF__SYSCALL_TABLE__INIT;
	uint64_t ts_delta = UINT64_C(1234567891234), dur = 1;
	uint32_t tid = 7, pid = 7, nr = 5, cpu = 0;
	uint64_t arg = 0;
	int64_t ret = 0;
	static char *strings[] = { "" };
	char path[4096], *text;
	size_t len;
	long size;
	int r;

	snap.start_ns = UINT64_C(5000000000000000000);
	snap.pid = 7;
	snap.strings = strings;
	snap.n_strings = 1;
	sc.n_ts_delta = sc.n_dur_ns = sc.n_tid = sc.n_pid = sc.n_nr = sc.n_ret = 1;
	sc.n_arg0 = sc.n_arg1 = sc.n_arg2 = sc.n_cpu = 1;
	sc.ts_delta = &ts_delta;
	sc.dur_ns = &dur;
	sc.tid = &tid;
	sc.pid = &pid;
	sc.nr = &nr;
	sc.ret = &ret;
	sc.arg0 = sc.arg1 = sc.arg2 = &arg;
	sc.cpu = &cpu;
	snap.syscalls = &sc;

	r = export_to_file(&snap, path, sizeof(path), &size);
	CHECKF(r == 0, "precision: export %d", r);
	text = read_all(path, &len);
	CHECKF(text && strstr(text,
			      "\"name\":\"syscall_5\",\"cat\":\"syscall\",\"ph\":\"X\",\"ts\":1234567891.234,"
			      "\"pid\":7,\"tid\":7,\"dur\":0.001"),
	       "precision: %s", text ? text : "(unreadable)");
	free(text);
	unlink(path);
}

/* ---- 3. The fixture -------------------------------------------------------------------- */

static const char *jq_binary(void)
{
	const char *p = getenv("JQ");

	return p && *p ? p : "jq";
}

static void shell_quote(char *dst, size_t len, const char *s)
{
	size_t n = 0;

	dst[n++] = '\'';
	for (; *s && n + 6 < len; s++) {
		if (*s == '\'') {
			memcpy(dst + n, "'\\''", 4);
			n += 4;
		} else {
			dst[n++] = *s;
		}
	}
	dst[n++] = '\'';
	dst[n] = '\0';
}

static bool have_jq(void)
{
	char q[4096], cmd[4200];
	int status;

	shell_quote(q, sizeof(q), jq_binary());
	snprintf(cmd, sizeof(cmd), "%s --version >/dev/null 2>&1", q);
	status = system(cmd);
	return status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

/* jq -c FILTER < path, its output without the final newline; checks that jq liked it. */
static void jq_expect(const char *path, const char *filter, const char *want, const char *what)
{
	char qjq[4096], qfilter[8192], qpath[8192], cmd[20800], out[8192];
	size_t len;
	FILE *p;
	int status;

	shell_quote(qjq, sizeof(qjq), jq_binary());
	shell_quote(qfilter, sizeof(qfilter), filter);
	shell_quote(qpath, sizeof(qpath), path);
	snprintf(cmd, sizeof(cmd), "%s -c %s < %s", qjq, qfilter, qpath);
	p = popen(cmd, "r");
	if (!p) {
		CHECKF(0, "%s: popen: %s", what, strerror(errno));
		return;
	}
	len = fread(out, 1, sizeof(out) - 1, p);
	out[len] = '\0';
	while (len && out[len - 1] == '\n')
		out[--len] = '\0';
	status = pclose(p);
	CHECKF(status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == 0, "%s: jq failed (status %d): %s",
	       what, status, cmd);
	CHECKF(!strcmp(out, want), "%s:\n   got %s\n  want %s", what, out, want);
}

static void check_fixture_jq(const char *path)
{
	/* the file parses, as one object with these keys */
	jq_expect(path, "keys", "[\"displayTimeUnit\",\"otherData\",\"traceEvents\"]", "top-level keys");
	jq_expect(path, "[.traceEvents | length, (map(.ph) | unique)]", "[80,[\"C\",\"M\",\"X\",\"i\"]]",
		  "event count");
	jq_expect(path, ".otherData | [.pid, .start_ns, .kernel]", "[100,1000000000000,\"6.1.0-hostprof\"]",
		  "otherData");

	/* rows: processes, threads, CPUs */
	jq_expect(path, "[.traceEvents[] | select(.name == \"process_name\") | [.pid, .args.name]]",
		  "[[4194304,\"CPUs\"],[80,\"kworker/1:2\"],[100,\"trainer\"],[200,\"hog\"]]",
		  "process names");
	jq_expect(
		path,
		"[.traceEvents[] | select(.name == \"process_sort_index\" and .pid == 100) | .args.sort_index]",
		"[1]", "the watched process sorts after the CPUs");
	jq_expect(
		path, "[.traceEvents[] | select(.name == \"thread_name\") | [.pid, .tid, .args.name]]",
		"[[4194304,4194305,\"CPU 0\"],[4194304,4194306,\"CPU 1\"],[80,80,\"kworker/1:2\"],"
		"[100,100,\"trainer\"],[100,101,\"acl_thread\"],[100,102,\"dataloader\"],[100,103,\"writer\"],"
		"[200,200,\"hog\"]]",
		"thread names");

	/* acl_thread: Runnable 25 ms in state R after each of hog's preemptions, long waits marked */
	jq_expect(
		path,
		"[.traceEvents[] | select(.ph == \"X\" and .tid == 101 and (.name | startswith(\"Runnable\")))"
		" | [.name, .ts, .dur, .args.state, .args.cause, (.args.preempted_by // .args.waker)]]"
		" | sort_by(.[1])",
		"[[\"Runnable\",5000,1000,\"R\",\"wakeup\",\"trainer:100\"],"
		"[\"Runnable (long)\",100000,25000,\"R\",\"preempted\",\"hog:200\"],"
		"[\"Runnable\",300000,100,\"R\",\"preempted\",\"kworker/1:2:80\"],"
		"[\"Runnable (long)\",500000,25000,\"R\",\"preempted\",\"hog:200\"],"
		"[\"Runnable (long)\",900000,30000,\"R\",\"preempted\",\"hog:200\"]]",
		"acl_thread runnable spans");
	jq_expect(path,
		  "[.traceEvents[] | select(.ph == \"X\" and (.name | startswith(\"Runnable\")))"
		  " | [.name, .cat, .cname, (.dur >= 3000)]] | unique",
		  "[[\"Runnable\",\"sched\",\"thread_state_runnable\",false],"
		  "[\"Runnable (long)\",\"sched,long_wait\",\"terrible\",true]]",
		  "waits of 3 ms and more stand out, and only those");
	/* the Running span that ends where hog preempts it says so */
	jq_expect(
		path,
		"[.traceEvents[] | select(.ph == \"X\" and .tid == 101 and .name == \"Running\" and"
		" .args.next == \"hog:200\") | [.ts + .dur, .args.end_state, .args.cpu]] | map(select(.[0] == 100000"
		" or .[0] == 500000 or .[0] == 900000))",
		"[[100000,\"R\",1],[500000,\"R\",1],[900000,\"R\",1]]", "acl_thread preempted while running");

	/* CPU 1 runs hog for 25, 25 and 30 ms */
	jq_expect(path,
		  "[.traceEvents[] | select(.pid == " CPUS_PID
		  " and .tid == 4194306 and .name == \"hog:200\")"
		  " | [.ts, .dur, .args.prio, .args.end_state]]",
		  "[[100000,25000,49,\"S\"],[500000,25000,49,\"S\"],[900000,30000,49,\"S\"]]",
		  "CPU 1 runs hog");
	jq_expect(path,
		  "[.traceEvents[] | select(.pid == " CPUS_PID
		  " and .ph == \"X\" and .cat == \"cpu\") | [.tid, .name, .ts, .dur]]"
		  " | sort_by(.[2])",
		  "[[4194306,\"acl_thread:101\",6000,94000],[4194306,\"hog:200\",100000,25000],"
		  "[4194306,\"acl_thread:101\",125000,175000],[4194306,\"kworker/1:2:80\",300000,100],"
		  "[4194306,\"acl_thread:101\",300100,199900],[4194305,\"dataloader:102\",450000,150000],"
		  "[4194306,\"hog:200\",500000,25000],[4194306,\"acl_thread:101\",525000,375000],"
		  "[4194306,\"hog:200\",900000,30000]]",
		  "CPU rows");

	/* IRQs on CPU 1's row: what they interrupted, or whose thread waited */
	jq_expect(path,
		  "[.traceEvents[] | select(.pid == " CPUS_PID
		  " and (.cat == \"irq\" or .cat == \"softirq\")) | [.tid, .name, .ts, .dur, .args]]",
		  "[[4194306,\"IRQ 41 (virtio3-rx)\",199990,6,{\"irq\":41,\"handler\":\"virtio3-rx\","
		  "\"interrupted\":\"acl_thread:101\"}],"
		  "[4194306,\"softirq NET_RX\",200000,2000,{\"vec\":3,\"interrupted\":\"acl_thread:101\"}],"
		  "[4194306,\"softirq NET_RX\",250000,150,{\"vec\":3,\"interrupted\":\"acl_thread:101\"}],"
		  "[4194306,\"softirq NET_RX\",800000,80,{\"vec\":3,\"interrupted\":\"acl_thread:101\"}],"
		  "[4194306,\"softirq NET_RX\",910000,300,{\"vec\":3,\"waiting_pid\":100}]]",
		  "IRQ rows");
	/* and each lies inside a task span of its CPU row */
	jq_expect(path,
		  "[.traceEvents[] | select(.pid == " CPUS_PID " and .cat == \"cpu\")] as $run"
		  " | [.traceEvents[] | select(.cat == \"irq\" or .cat == \"softirq\") as $q"
		  " | select([$run[] | select(.tid == $q.tid and .ts <= $q.ts and .ts + .dur >= $q.ts + $q.dur)]"
		  " | length != 1)] | length",
		  "0", "IRQs nest in the task they interrupted");

	/* dataloader: Blocked in S 50 ms in read, until writer woke it 10 us before it ran */
	jq_expect(
		path,
		"[.traceEvents[] | select(.tid == 102 and (.name == \"Blocked\" or (.name | startswith(\"Runnable\"))))"
		" | [.name, .ts, .dur, .cname, .args.state, .args.waker]]",
		"[[\"Blocked\",400000,49990,\"thread_state_sleeping\",\"S\",\"writer:103\"],"
		"[\"Runnable\",449990,10,\"thread_state_runnable\",\"R\",\"writer:103\"],"
		"[\"Blocked\",600000,2992,\"thread_state_sleeping\",\"S\",null],"
		"[\"Runnable\",602992,8,\"thread_state_runnable\",\"R\",null]]",
		"dataloader blocked");

	/* syscalls on the thread rows, with their args */
	jq_expect(path,
		  "[.traceEvents[] | select(.cat == \"syscall\") | [.name, .pid, .tid, .ts, .dur, .args.nr,"
		  " .args.arg0, .args.arg1, .args.arg2, .args.ret]]",
		  "[[\"read\",100,102,399998,50012,0,\"0x7\",\"0x7f0000001000\",\"0x1000\",4096],"
		  "[\"futex\",100,102,599998,3005,202,\"0x7f0000002000\",\"0x80\",\"0x2\",0],"
		  "[\"ioctl\",100,101,699998,1500,16,\"0x9\",\"0xc0184800\",\"0x7ffc00000000\",-11]]",
		  "syscall slices");
	/* reclaim and lock waits on the thread rows, with their args */
	jq_expect(path,
		  "[.traceEvents[] | select(.cat == \"memory\" or .cat == \"lock\") | select(.ph == \"X\")"
		  " | [.name, .tid, .ts, .dur, .args]]",
		  "[[\"memcg reclaim\",102,470000,12000,{\"order\":0,\"gfp\":\"0xcc0\",\"result\":32,\"cpu\":0}],"
		  "[\"compaction\",102,700000,3000,{\"order\":9,\"gfp\":\"0x0\",\"result\":5,\"cpu\":0}],"
		  "[\"lock wait: mmap_lock (rwsem read)\",101,350000,6000,"
		  "{\"lock\":\"0xffff888104a3c0e8\",\"flags\":\"0x10002\",\"ret\":0,\"cpu\":1}],"
		  "[\"lock wait: spinlock\",101,700500,40,"
		  "{\"lock\":\"0xffff88810b2c4d40\",\"flags\":\"0x1\",\"ret\":0,\"cpu\":1}]]",
		  "reclaim and lock-wait slices");
	/* slices on a row nest: no state span straddles a syscall's, reclaim's or lock wait's start or end */
	jq_expect(
		path,
		"[.traceEvents[] | select(.ph == \"X\" and (.cat == \"syscall\" or .cat == \"memory\" or"
		" .cat == \"lock\"))] as $sc"
		" | [.traceEvents[] | select(.ph == \"X\" and .cat == \"sched\") as $x"
		" | $sc[] | select(.tid == $x.tid) | select(($x.ts < .ts and $x.ts + $x.dur > .ts) or"
		" ($x.ts < .ts + .dur and $x.ts + $x.dur > .ts + .dur))] | length",
		"0", "state spans nest under syscalls, reclaims and lock waits");
	/* dataloader's page faults: a counter step per period, 0 after the last */
	jq_expect(path,
		  "[.traceEvents[] | select(.ph == \"C\") | [.name, .pid, .ts, .args.minor, .args.major]]",
		  "[[\"page faults dataloader:102\",100,450000,1990,10],[\"page faults dataloader:102\",100,550000,300,0],"
		  "[\"page faults dataloader:102\",100,650000,0,0]]",
		  "page-fault counter");
	/* and the states of dataloader tile 400..603 ms without gap or overlap */
	jq_expect(
		path,
		"[.traceEvents[] | select(.ph == \"X\" and .tid == 102 and .cat == \"sched\")] | sort_by(.ts)"
		" | [.[0].ts, (. as $s | [range(1; length)] | map(select($s[.].ts != $s[. - 1].ts + $s[. - 1].dur))"
		" | length), (.[-1].ts + .[-1].dur)]",
		"[400000,0,603000]", "dataloader's states tile");

	/* instants */
	jq_expect(
		path, "[.traceEvents[] | select(.ph == \"i\") | [.name, .cat, .s, .tid, .ts, .args]]",
		"[[\"fork\",\"task\",\"t\",100,1000,{\"child_tid\":103,\"child_pid\":100,\"comm\":\"writer\"}],"
		"[\"rename\",\"task\",\"t\",102,2000,{\"comm\":\"dataloader\"}],"
		"[\"migrate 0->1\",\"sched\",\"t\",101,5000,{\"from_cpu\":0,\"to_cpu\":1}],"
		"[\"acl_preempt\",\"marker\",\"t\",101,930000,"
		"{\"detail\":\"acl_thread waited 30.0 ms after hog (pid 200) preempted it\"}]]",
		"instants");
}

/* The file equals the golden one; on a mismatch, names both for a diff. */
static void check_golden(const char *golden, const char *actual)
{
	size_t len, wlen = 0, i, line = 1;
	char *text = read_all(actual, &len), *want = read_all(golden, &wlen);
	FILE *f;

	if (!text) {
		CHECKF(0, "cannot read %s", actual);
		free(want);
		return;
	}
	if (getenv("UPDATE_GOLDEN")) {
		f = fopen(golden, "we");
		CHECKF(f && fwrite(text, 1, len, f) == len && fclose(f) == 0, "cannot write %s", golden);
		printf("fixture: wrote %s (%zu bytes): inspect it before committing\n", golden, len);
		free(text);
		free(want);
		return;
	}
	if (want && wlen == len && !memcmp(want, text, len)) {
		free(text);
		free(want);
		unlink(actual);
		return;
	}
	for (i = 0; want && i < MIN(wlen, len) && want[i] == text[i]; i++)
		line += text[i] == '\n';
	CHECKF(0,
	       "%s %s at byte %zu (line %zu); see: diff -u <(jq . %s) <(jq . %s)  (UPDATE_GOLDEN=1 rewrites it)",
	       golden, want ? "differs" : "cannot be read", i, line, golden, actual);
	free(text);
	free(want);
}

int main(int argc, char **argv)
{
	char fixture[4096], golden[4200], path[4096], *slash;
	Hostprof__Snapshot *snap = NULL;
	long size;
	int r;

	if (argc > 1) {
		snprintf(fixture, sizeof(fixture), "%s", argv[1]);
	} else {
		snprintf(fixture, sizeof(fixture), "%s", __FILE__);
		slash = strrchr(fixture, '/');
		snprintf(slash ? slash + 1 : fixture,
			 sizeof(fixture) - (size_t)(slash ? slash + 1 - fixture : 0),
			 "../fixtures/stall.hps");
	}
	snprintf(golden, sizeof(golden), "%s", fixture);
	slash = strrchr(golden, '/');
	snprintf(slash ? slash + 1 : golden, sizeof(golden) - (size_t)(slash ? slash + 1 - golden : 0),
		 "stall.json");

	test_jsonw_fixed();
	test_precision();

	r = hps_read_file(fixture, &snap);
	if (r < 0) {
		fprintf(stderr, "FAIL: cannot read the fixture %s: %s\n", fixture, strerror(-r));
		return 1;
	}
	test_invalid(snap);

	r = export_to_file(snap, path, sizeof(path), &size);
	CHECKF(r == 0, "fixture: export %d", r);
	printf("fixture: %ld bytes of JSON\n", size);
	if (have_jq())
		check_fixture_jq(path);
	check_golden(golden, path); /* removes the file when it matches */
	hps_free(snap);

	if (!check_failures && !have_jq()) {
		printf("SKIP: %s not found: the fixture's spans need jq (apt-get install jq); the golden file "
		       "matched\n",
		       jq_binary());
		unlink(path);
		return 77;
	}
	return check_summary();
}
