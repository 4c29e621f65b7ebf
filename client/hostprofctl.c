// SPDX-License-Identifier: GPL-2.0-only
/*
 * hostprofctl: the thin client of hostprofd's control socket.
 *
 * Exit status: 0 ok, 1 failure, 2 usage, 3 daemon unreachable, 4 permission denied.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <malloc.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "duration.h"
#include "escape.h"
#include "walltime.h"
#include "export.h"
#include "formats.h"
#include "framing.h"
#include "hps.h"
#include "hugepage.h"
#include "jsonw.h"
#include "macro.h"
#include "merge.h"
#include "prefault.h"
#include "report.h"

#define EXIT_USAGE 2
#define EXIT_UNREACHABLE 3
#define EXIT_DENIED 4

static const char *arg_socket;
static bool arg_json;

static const char usage_text[] =
	"Usage: hostprofctl [--socket PATH] [--json] COMMAND [ARGS]\n"
	"Client of hostprofd, the always-on host-side stall profiler.\n"
	"\n"
	"Commands:\n"
	"  status                              daemon version, uptime, watched processes,\n"
	"                                      event rate, drops by cause, memory\n"
	"  watch --pid N | --thread GLOB       start watching a process, or processes with\n"
	"                                      a thread of that name (root)\n"
	"  unwatch --pid N | --thread GLOB     stop (the history stays for the window)\n"
	"  snapshot --pid N [--window DUR] [--format F[,F...]|all] [-o PATH]\n"
	"                                      save the recorded history of process N\n"
	"                                      (default: all of it, perfetto,\n"
	"                                      ./hostprof-<pid>-<UTC time>.<ext>)\n"
	"  snapshot --rank R [--job ID] ...    the same, of the process whose environment has\n"
	"                                      RANK=R (and SLURM_JOB_ID or TORCHELASTIC_RUN_ID=ID)\n"
	"  snapshot ... --at TIME [--window D] the window D (10s) around a wall-clock instant:\n"
	"                                      2026-12-01T11:30:00Z, ...+08:00, or epoch seconds\n"
	"  snapshots                           automatic snapshots, newest first, with why\n"
	"  metrics                             the metrics in the Prometheus text format, as\n"
	"                                      hostprofd writes them for node_exporter\n"
	"  fetch NAME [--format F] [-o PREFIX] one automatic snapshot (default hps,perfetto,report)\n"
	"  report FILE.hps                     the diagnosis of a saved snapshot (--json)\n"
	"  report A.hps B.hps ...              snapshots of many nodes at one instant: per rank,\n"
	"                                      who stalled first, who lost the most (--json)\n"
	"  merge A.hps B.hps ... [-o OUT]      one Perfetto trace, a machine per node, aligned\n"
	"                                      on each node's clock anchor (default\n"
	"                                      ./hostprof-merge-<UTC time>.pftrace; never replaced)\n"
	"  export FILE.hps --format F [-o OUT] convert a saved snapshot\n"
	"\n"
	"Formats: perfetto (.pftrace, ui.perfetto.dev), json (.json, Chrome trace,\n"
	"perf-trace-viewer's view), folded (.oncpu.folded, .offcpu.folded: FlameGraph),\n"
	"pprof (.pb.gz: go tool pprof), svg (.oncpu.svg, .offcpu.svg: flame graphs),\n"
	"report (.txt), report-json (.report.json), hps (.hps, the canonical snapshot), all.\n"
	"-o names the file when the formats make one file, else it is a prefix.\n"
	"\n"
	"Options:\n"
	"  --socket PATH   control socket (default $HOSTPROF_SOCKET, else " HP_DEFAULT_SOCKET ")\n"
	"  --json          print data as JSON\n"
	"  -h, --help      this text\n"
	"  --version       print the version\n"
	"\n"
	"Exit status: 0 ok, 1 failure, 2 usage, 3 hostprofd unreachable, 4 permission denied.\n";

static int usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static int usage_error(const char *fmt, ...)
{
	va_list ap;

	fputs("hostprofctl: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputs("\nTry 'hostprofctl --help'.\n", stderr);
	return EXIT_USAGE;
}

static int fail(int status, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int fail(int status, const char *fmt, ...)
{
	va_list ap;

	fputs("hostprofctl: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return status;
}

static int parse_common(int argc, char **argv, const struct option *own, int (*on_opt)(int opt, const char *arg));

/* A connection to the daemon, after the hello exchange. */
struct conn {
	int fd;
	struct hp_buf buf;
	int passed; /* the descriptor the last reply came with (SnapshotFd), or -1 */
};

static void conn_close(struct conn *c)
{
	if (c->fd >= 0)
		close(c->fd);
	if (c->passed >= 0)
		close(c->passed);
	c->passed = -1;
	hp_buf_free(&c->buf);
}

static int conn_recv(struct conn *c, Hostprof__Response **ret)
{
	const uint8_t *payload;
	int n;

	if (c->passed >= 0)
		close(c->passed); /* came with a reply that did not take it */
	n = frame_read_fd_passed(c->fd, HP_MAX_RESPONSE, &c->buf, &payload, &c->passed);
	if (n < 0)
		return n;
	*ret = hostprof__response__unpack(NULL, n, payload);
	return *ret ? 0 : -EBADMSG;
}

/* Text from the daemon that carries names processes chose (thread names, summaries,
 * patterns): printed for a terminal, with control bytes escaped. --json keeps the bytes. */
#define ESC(s) escape_control((s) ? (s) : "", (char[ESCAPE_SIZE(256)]){ 0 }, ESCAPE_SIZE(256))

/* The exit status for an Error reply, after printing its message. */
static int report_error(const Hostprof__Error *err)
{
	switch (err->code) {
	case HOSTPROF__ERROR__CODE__DENIED:
		return fail(EXIT_DENIED, "permission denied: %s", ESC(err->message));
	case HOSTPROF__ERROR__CODE__BAD_REQUEST:
		return fail(EXIT_USAGE, "%s", ESC(err->message));
	default:
		return fail(EXIT_FAILURE, "%s", ESC(err->message));
	}
}

static int transport_error(int r)
{
	if (r == -ECONNRESET || r == -EPIPE)
		return fail(EXIT_UNREACHABLE, "hostprofd closed the connection (did it stop?)");
	if (r == -EBADMSG || r == -EMSGSIZE)
		return fail(EXIT_FAILURE, "hostprofd sent a malformed reply");
	return fail(EXIT_UNREACHABLE, "talking to hostprofd failed: %s", strerror(-r));
}

static int conn_open(struct conn *c)
{
	const char *path = arg_socket ? arg_socket : getenv("HOSTPROF_SOCKET");
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	Hostprof__Request req = HOSTPROF__REQUEST__INIT;
	Hostprof__Hello hello = HOSTPROF__HELLO__INIT;
	Hostprof__Response *resp;
	int r, status = 0;

	if (!path || !*path)
		path = HP_DEFAULT_SOCKET;
	*c = (struct conn){ .fd = -1, .passed = -1 };
	if (strlen(path) >= sizeof(sa.sun_path))
		return usage_error("socket path too long: %s", path);
	strcpy(sa.sun_path, path);
	c->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (c->fd < 0)
		return fail(EXIT_FAILURE, "socket: %m");
	if (connect(c->fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		int e = errno;

		if (e == ENOENT)
			return fail(EXIT_UNREACHABLE,
				    "hostprofd is not running: no socket at %s; start it with "
				    "`systemctl start hostprofd`",
				    path);
		if (e == ECONNREFUSED)
			return fail(EXIT_UNREACHABLE,
				    "hostprofd is not running: nobody listens on %s (a stale socket); start "
				    "it with `systemctl start hostprofd`",
				    path);
		if (e == EACCES || e == EPERM)
			return fail(EXIT_DENIED,
				    "permission denied on %s: run as root or join the group that owns it "
				    "(hostprof)",
				    path);
		return fail(EXIT_UNREACHABLE, "cannot connect to %s: %s", path, strerror(e));
	}
	hello.protocol = HP_PROTOCOL_VERSION;
	hello.version = (char *)HOSTPROF_VERSION;
	req.body_case = HOSTPROF__REQUEST__BODY_HELLO;
	req.hello = &hello;
	r = frame_write_fd(c->fd, &req.base, HP_MAX_REQUEST);
	if (r < 0)
		return transport_error(r);
	r = conn_recv(c, &resp);
	if (r < 0)
		return transport_error(r);
	if (resp->body_case == HOSTPROF__RESPONSE__BODY_ERROR)
		status = report_error(resp->error);
	else if (resp->body_case != HOSTPROF__RESPONSE__BODY_HELLO)
		status = fail(EXIT_FAILURE, "hostprofd did not answer the hello");
	else if (resp->hello->protocol != HP_PROTOCOL_VERSION)
		status = fail(EXIT_FAILURE,
			      "hostprofd %s speaks protocol %u, this hostprofctl %s speaks %u: use the "
			      "hostprofctl that came with the running hostprofd",
			      resp->hello->version ? resp->hello->version : "?", resp->hello->protocol,
			      HOSTPROF_VERSION, HP_PROTOCOL_VERSION);
	hostprof__response__free_unpacked(resp, NULL);
	return status;
}

static int conn_request(struct conn *c, Hostprof__Request *req)
{
	int r = frame_write_fd(c->fd, &req->base, HP_MAX_REQUEST);

	return r < 0 ? transport_error(r) : 0;
}

static const char *human_bytes(uint64_t b, char *buf, size_t len)
{
	if (b >= 10ULL << 30)
		snprintf(buf, len, "%" PRIu64 " GiB", b >> 30);
	else if (b >= 10ULL << 20)
		snprintf(buf, len, "%" PRIu64 " MiB", b >> 20);
	else if (b >= 10ULL << 10)
		snprintf(buf, len, "%" PRIu64 " KiB", b >> 10);
	else
		snprintf(buf, len, "%" PRIu64 " B", b);
	return buf;
}

static const char *human_uptime(uint64_t ns, char *buf, size_t len)
{
	uint64_t s = ns / NSEC_PER_SEC;

	if (s >= 86400)
		snprintf(buf, len, "%" PRIu64 "d %" PRIu64 "h", s / 86400, s % 86400 / 3600);
	else if (s >= 3600)
		snprintf(buf, len, "%" PRIu64 "h %" PRIu64 "m", s / 3600, s % 3600 / 60);
	else if (s >= 60)
		snprintf(buf, len, "%" PRIu64 "m %" PRIu64 "s", s / 60, s % 60);
	else
		snprintf(buf, len, "%" PRIu64 "s", s);
	return buf;
}

static void print_status_json(const Hostprof__Status *st)
{
	struct jsonw *j = jsonw_new(stdout);

	jsonw_begin_object(j);
	jsonw_string_field(j, "version", st->version ? st->version : "");
	jsonw_uint_field(j, "pid", st->pid);
	jsonw_uint_field(j, "uptime_ns", st->uptime_ns);
	jsonw_uint_field(j, "ncpus", st->ncpus);
	jsonw_uint_field(j, "ring_kb", st->ring_kb);
	jsonw_uint_field(j, "events", st->events);
	jsonw_float_field(j, "events_per_sec", st->events_per_sec);
	jsonw_uint_field(j, "memory_bytes", st->memory_bytes);
	jsonw_uint_field(j, "memory_limit", st->memory_limit);
	jsonw_uint_field(j, "rss_bytes", st->rss_bytes);
	jsonw_string_field(j, "interference", st->interference ? st->interference : "");
	jsonw_string_field(j, "interference_missing", st->interference_missing ? st->interference_missing : "");
	jsonw_name(j, "watch_threads");
	jsonw_begin_array(j);
	for (size_t i = 0; i < st->n_watch_threads; i++)
		jsonw_string(j, st->watch_threads[i]);
	jsonw_end_array(j);
	jsonw_name(j, "drops");
	jsonw_begin_object(j);
	for (size_t i = 0; i < st->n_drops; i++)
		jsonw_uint_field(j, st->drops[i]->cause ? st->drops[i]->cause : "?", st->drops[i]->count);
	jsonw_end_object(j);
	jsonw_name(j, "triggers");
	jsonw_begin_array(j);
	for (size_t i = 0; i < st->n_triggers; i++) {
		const Hostprof__TriggerStats *t = st->triggers[i];

		jsonw_begin_object(j);
		jsonw_string_field(j, "name", t->name ? t->name : "");
		jsonw_string_field(j, "kind", t->kind ? t->kind : "");
		jsonw_uint_field(j, "fired", t->fired);
		jsonw_uint_field(j, "suppressed", t->suppressed);
		jsonw_end_object(j);
	}
	jsonw_end_array(j);
	jsonw_uint_field(j, "triggers_dropped", st->triggers_dropped);
	jsonw_name(j, "reads");
	jsonw_begin_object(j);
	jsonw_uint_field(j, "done", st->reads_done);
	jsonw_uint_field(j, "abandoned", st->reads_abandoned);
	jsonw_uint_field(j, "deferred", st->reads_deferred);
	jsonw_uint_field(j, "over_budget", st->reads_over_budget);
	jsonw_end_object(j);
	if (st->python) {
		const Hostprof__PythonWalkStats *py = st->python;

		jsonw_name(j, "python");
		jsonw_begin_object(j);
		jsonw_uint_field(j, "processes", py->processes);
		jsonw_uint_field(j, "walks", py->walks);
		jsonw_uint_field(j, "no_thread_state", py->no_thread_state);
		jsonw_uint_field(j, "read_failures", py->read_failures);
		jsonw_uint_field(j, "list_scans", py->list_scans);
		jsonw_uint_field(j, "names_checked", py->names_checked);
		jsonw_uint_field(j, "names_unreadable", py->names_unreadable);
		jsonw_uint_field(j, "names_dropped", py->names_dropped);
		jsonw_uint_field(j, "unreadable", py->read_failures + py->names_unreadable);
		jsonw_uint_field(j, "offcpu_walks", py->offcpu_walks);
		jsonw_uint_field(j, "sample_walk_ns", py->sample_walk_ns);
		jsonw_uint_field(j, "offcpu_walk_ns", py->offcpu_walk_ns);
		jsonw_end_object(j);
	}
	if (st->unwind) {
		const Hostprof__UnwindStats *u = st->unwind;

		jsonw_name(j, "unwind");
		jsonw_begin_object(j);
		jsonw_uint_field(j, "stacks", u->stacks);
		jsonw_uint_field(j, "complete", u->complete);
		jsonw_uint_field(j, "frames", u->frames);
		jsonw_uint_field(j, "fp_steps", u->fp_steps);
		jsonw_uint_field(j, "fp_kept", u->fp_kept);
		jsonw_uint_field(j, "offcpu", u->offcpu);
		jsonw_uint_field(j, "offcpu_fp", u->offcpu_fp);
		jsonw_uint_field(j, "copies", u->copies);
		jsonw_uint_field(j, "copy_bytes", u->copy_bytes);
		jsonw_name(j, "truncated");
		jsonw_begin_object(j);
		for (size_t i = 0; i < u->n_truncated; i++)
			jsonw_uint_field(j, u->truncated[i]->cause ? u->truncated[i]->cause : "", u->truncated[i]->count);
		jsonw_end_object(j);
		jsonw_uint_field(j, "cfi_files", u->cfi_files);
		jsonw_uint_field(j, "cfi_refused", u->cfi_refused);
		jsonw_uint_field(j, "cfi_bytes", u->cfi_bytes);
		jsonw_end_object(j);
	}
	jsonw_uint_field(j, "symbolizer_bytes", st->symbolizer_bytes);
	jsonw_uint_field(j, "dwarf_bytes", st->dwarf_bytes);
	jsonw_uint_field(j, "dwarf_lines", st->dwarf_lines);
	jsonw_uint_field(j, "dwarf_lines_dropped", st->dwarf_lines_dropped);
	jsonw_uint_field(j, "symbolizer_limit", st->symbolizer_limit);
	jsonw_uint_field(j, "made_room", st->made_room);
	if (st->quota) {
		const Hostprof__UserQuota *q = st->quota;

		jsonw_name(j, "quota");
		jsonw_begin_object(j);
		jsonw_uint_field(j, "uid", q->uid);
		jsonw_uint_field(j, "watched", q->watched);
		jsonw_uint_field(j, "watched_limit", q->watched_limit);
		jsonw_uint_field(j, "bytes", q->bytes);
		jsonw_uint_field(j, "bytes_limit", q->bytes_limit);
		jsonw_uint_field(j, "dropped", q->dropped);
		jsonw_uint_field(j, "refused", q->refused);
		jsonw_end_object(j);
	}
	jsonw_name(j, "users");
	jsonw_begin_array(j);
	for (size_t i = 0; i < st->n_users; i++) {
		const Hostprof__UserQuota *q = st->users[i];

		jsonw_begin_object(j);
		jsonw_uint_field(j, "uid", q->uid);
		jsonw_uint_field(j, "watched", q->watched);
		jsonw_uint_field(j, "watched_limit", q->watched_limit);
		jsonw_uint_field(j, "bytes", q->bytes);
		jsonw_uint_field(j, "bytes_limit", q->bytes_limit);
		jsonw_uint_field(j, "dropped", q->dropped);
		jsonw_uint_field(j, "refused", q->refused);
		jsonw_end_object(j);
	}
	jsonw_end_array(j);
	jsonw_name(j, "processes");
	jsonw_begin_array(j);
	for (size_t i = 0; i < st->n_processes; i++) {
		const Hostprof__WatchedProcess *p = st->processes[i];

		jsonw_begin_object(j);
		jsonw_uint_field(j, "pid", p->pid);
		jsonw_string_field(j, "comm", p->comm ? p->comm : "");
		jsonw_uint_field(j, "events", p->events);
		jsonw_uint_field(j, "bytes", p->bytes);
		jsonw_bool_field(j, "exited", p->exited);
		jsonw_string_field(j, "why", p->why ? p->why : "");
		jsonw_string_field(j, "rank", p->rank ? p->rank : "");
		jsonw_string_field(j, "local_rank", p->local_rank ? p->local_rank : "");
		jsonw_string_field(j, "world_size", p->world_size ? p->world_size : "");
		jsonw_string_field(j, "job", p->job ? p->job : "");
		jsonw_end_object(j);
	}
	jsonw_end_array(j);
	jsonw_end_object(j);
	jsonw_free(j);
	putchar('\n');
}

static void print_status_text(const Hostprof__Status *st)
{
	char a[32], b[32], c[32];

	printf("hostprofd %s, pid %u, up %s\n", st->version ? st->version : "?", st->pid,
	       human_uptime(st->uptime_ns, a, sizeof(a)));
	printf("capture:   %u CPUs, %u KiB ring per CPU, %" PRIu64 " events, %.0f events/s\n", st->ncpus,
	       st->ring_kb, st->events, st->events_per_sec);
	printf("interference: %s%s%s\n", st->interference ? st->interference : "?",
	       st->interference_missing && strcmp(st->interference_missing, "none") ? "; kernel lacks " : "",
	       st->interference_missing && strcmp(st->interference_missing, "none") ? st->interference_missing : "");
	printf("memory:    %s recorded of %s, daemon RSS %s\n", human_bytes(st->memory_bytes, a, sizeof(a)),
	       human_bytes(st->memory_limit, b, sizeof(b)), human_bytes(st->rss_bytes, c, sizeof(c)));
	printf("drops:    ");
	for (size_t i = 0; i < st->n_drops; i++)
		printf(" %s %" PRIu64 "%s", st->drops[i]->cause, st->drops[i]->count, i + 1 < st->n_drops ? "," : "");
	printf("\nthreads:  ");
	for (size_t i = 0; i < st->n_watch_threads; i++)
		printf(" %s", ESC(st->watch_threads[i]));
	printf("%s\n", st->n_watch_threads ? "" : " (none)");
	printf("triggers: ");
	for (size_t i = 0; i < st->n_triggers; i++)
		printf(" %s (%s) fired %" PRIu64 ", suppressed %" PRIu64 "%s", st->triggers[i]->name,
		       st->triggers[i]->kind, st->triggers[i]->fired, st->triggers[i]->suppressed,
		       i + 1 < st->n_triggers ? "," : "");
	if (st->triggers_dropped)
		printf("; %" PRIu64 " not taken (too many waiting)", st->triggers_dropped);
	printf("%s\n", st->n_triggers ? "" : " (none)");
	printf("reads:     %" PRIu64 " of watched processes' files, %" PRIu64 " abandoned (time budget), %" PRIu64
	       " put off (queue full)\n",
	       st->reads_done, st->reads_abandoned, st->reads_deferred);
	if (st->python)
		printf("python:    %" PRIu32 " processes walked, %" PRIu64 " stacks, %" PRIu64
		       " python stack unreadable, %" PRIu64 " threads without a thread state; %" PRIu64
		       " code objects read, %" PRIu64 " not read (queue full)\n",
		       st->python->processes, st->python->walks, st->python->read_failures + st->python->names_unreadable,
		       st->python->no_thread_state, st->python->names_checked, st->python->names_dropped);
	if (st->unwind) {
		const Hostprof__UnwindStats *u = st->unwind;

		printf("unwinding: %" PRIu64 " user stacks from CFI, %" PRIu64 " complete; truncated:", u->stacks,
		       u->complete);
		for (size_t i = 0; i < u->n_truncated; i++)
			printf(" %s %" PRIu64 "%s", u->truncated[i]->cause, u->truncated[i]->count,
			       i + 1 < u->n_truncated ? "," : "");
		printf("%s; frame pointers kept for %" PRIu64 "; off-CPU user stacks %" PRIu64 " unwound, %" PRIu64
		       " by frame pointers; %" PRIu64 " stack copies drained (%.0f bytes each); CFI of %" PRIu64
		       " files held (%.1f MiB), %" PRIu64 " refused\n",
		       u->n_truncated ? "" : " none", u->fp_kept, u->offcpu, u->offcpu_fp, u->copies,
		       u->copies ? (double)u->copy_bytes / u->copies : 0.0, u->cfi_files, u->cfi_bytes / 1048576.0,
		       u->cfi_refused);
	}
	printf("symbols:   %s of %s", human_bytes(st->symbolizer_bytes, a, sizeof(a)),
	       human_bytes(st->symbolizer_limit, b, sizeof(b)));
	if (st->dwarf_bytes)
		printf(" (DWARF %s)", human_bytes(st->dwarf_bytes, a, sizeof(a)));
	if (st->dwarf_lines || st->dwarf_lines_dropped)
		printf(", lines of %" PRIu64 " address ranges kept from snapshot jobs' DWARF lookups", st->dwarf_lines);
	if (st->dwarf_lines_dropped)
		printf(" (%" PRIu64 " not kept)", st->dwarf_lines_dropped);
	if (st->reads_over_budget)
		printf(", %" PRIu64 " files not kept (over the budget)", st->reads_over_budget);
	putchar('\n');
	if (st->made_room)
		printf("room:      %" PRIu64 " users' processes unwatched for root's (the watched map was full)\n",
		       st->made_room);
	for (size_t i = 0; i < st->n_users; i++) {
		const Hostprof__UserQuota *q = st->users[i];

		if (!q->uid)
			continue;
		printf("user %-6u %u processes, %s", q->uid, q->watched, human_bytes(q->bytes, a, sizeof(a)));
		if (q->dropped || q->refused)
			printf("; %" PRIu64 " records not kept, %" PRIu64 " processes not watched (quota)", q->dropped,
			       q->refused);
		putchar('\n');
	}
	if (st->quota && st->quota->uid != 0) {
		const Hostprof__UserQuota *q = st->quota;

		snprintf(c, sizeof(c), "%u", q->watched_limit);
		printf("your quota: uid %u, %u of %s processes, %s of %s", q->uid, q->watched,
		       q->watched_limit ? c : "any number of", human_bytes(q->bytes, a, sizeof(a)),
		       q->bytes_limit ? human_bytes(q->bytes_limit, b, sizeof(b)) : "the memory");
		if (q->dropped || q->refused)
			printf("; %" PRIu64 " records not kept, %" PRIu64 " processes not watched", q->dropped, q->refused);
		putchar('\n');
	}
	if (!st->n_processes) {
		printf("no watched processes\n");
		return;
	}
	printf("\n%-8s %-16s %10s %9s  %s\n", "PID", "COMM", "EVENTS", "MEMORY", "WATCHED BECAUSE");
	for (size_t i = 0; i < st->n_processes; i++) {
		const Hostprof__WatchedProcess *p = st->processes[i];

		printf("%-8u %-16s %10" PRIu64 " %9s  %s%s", p->pid, ESC(p->comm), p->events,
		       human_bytes(p->bytes, a, sizeof(a)), ESC(p->why), p->exited ? " (exited)" : "");
		if (p->rank && *p->rank)
			printf(", rank %s%s%s", ESC(p->rank), p->job && *p->job ? " of job " : "",
			       p->job && *p->job ? ESC(p->job) : "");
		putchar('\n');
	}
}

static int cmd_status(int argc, char **argv)
{
	Hostprof__Request req = HOSTPROF__REQUEST__INIT;
	Hostprof__StatusRequest sreq = HOSTPROF__STATUS_REQUEST__INIT;
	Hostprof__Response *resp;
	struct conn c = { .fd = -1, .passed = -1 };
	int r;

	r = parse_common(argc, argv, NULL, NULL);
	if (r)
		return r;
	r = conn_open(&c);
	if (r)
		goto out;
	req.body_case = HOSTPROF__REQUEST__BODY_STATUS;
	req.status = &sreq;
	r = conn_request(&c, &req);
	if (r)
		goto out;
	r = conn_recv(&c, &resp);
	if (r < 0) {
		r = transport_error(r);
		goto out;
	}
	if (resp->body_case == HOSTPROF__RESPONSE__BODY_STATUS) {
		if (arg_json)
			print_status_json(resp->status);
		else
			print_status_text(resp->status);
		r = 0;
	} else if (resp->body_case == HOSTPROF__RESPONSE__BODY_ERROR) {
		r = report_error(resp->error);
	} else {
		r = fail(EXIT_FAILURE, "hostprofd sent an unexpected reply");
	}
	hostprof__response__free_unpacked(resp, NULL);
out:
	conn_close(&c);
	return r;
}

/*
 * Options every command takes (--socket, --json), plus the command's own in `own`.
 * on_opt handles the command's; returns 0 or an exit status.
 */
static int parse_common(int argc, char **argv, const struct option *own, int (*on_opt)(int opt, const char *arg))
{
	struct option opts[16] = {
		{ "socket", required_argument, NULL, 0x100 },
		{ "json", no_argument, NULL, 0x101 },
	};
	char shortopts[32] = "";
	size_t n = 2, k = 0;
	int opt, r;

	for (; own && own[n - 2].name && n < ARRAY_SIZE(opts) - 1; n++) {
		opts[n] = own[n - 2];
		if (own[n - 2].val < 0x100 && k < sizeof(shortopts) - 3) {
			shortopts[k++] = own[n - 2].val;
			if (own[n - 2].has_arg)
				shortopts[k++] = ':';
		}
	}
	optind = 0; /* 0, not 1: glibc then forgets the "+" (no permuting) of main's scan */
	opterr = 0;
	while ((opt = getopt_long(argc, argv, shortopts, opts, NULL)) != -1) {
		switch (opt) {
		case 0x100:
			arg_socket = optarg;
			break;
		case 0x101:
			arg_json = true;
			break;
		case '?':
			if (optopt)
				return usage_error("%s: option -%c needs a value or is unknown", argv[0], optopt);
			return usage_error("%s: unknown option '%s'", argv[0], argv[optind - 1]);
		default:
			r = on_opt ? on_opt(opt, optarg) : EXIT_USAGE;
			if (r)
				return r;
		}
	}
	return 0;
}

/* One request, one reply of the expected kind (or an Error): the exit status. */
static int simple_request(Hostprof__Request *req, Hostprof__Response__BodyCase want, Hostprof__Response **ret)
{
	struct conn c = { .fd = -1, .passed = -1 };
	Hostprof__Response *resp = NULL;
	int r;

	r = conn_open(&c);
	if (r)
		goto out;
	r = conn_request(&c, req);
	if (r)
		goto out;
	r = conn_recv(&c, &resp);
	if (r < 0) {
		r = transport_error(r);
		goto out;
	}
	if (resp->body_case == HOSTPROF__RESPONSE__BODY_ERROR)
		r = report_error(resp->error);
	else if (resp->body_case != want)
		r = fail(EXIT_FAILURE, "hostprofd sent an unexpected reply");
	else
		r = 0;
	if (r == 0)
		*ret = TAKE_PTR(resp);
out:
	if (resp)
		hostprof__response__free_unpacked(resp, NULL);
	conn_close(&c);
	return r;
}

/* A snapshot's .hps as it came: streamed into buf, or mapped from the memfd passed. */
struct received {
	struct hp_buf buf;
	uint8_t *map;
	size_t map_len;
};

static const uint8_t *rcv_data(const struct received *rv)
{
	return rv->map ? rv->map : rv->buf.data + rv->buf.off;
}

static size_t rcv_len(const struct received *rv)
{
	return rv->map ? rv->map_len : hp_buf_pending(&rv->buf);
}

static void rcv_free(struct received *rv)
{
	if (rv->map)
		(void)munmap(rv->map, rv->map_len);
	rv->map = NULL;
	hp_buf_free(&rv->buf);
}

/* The memfd a SnapshotFd came with: mapped, when it is sealed and as long as it says. */
static int map_passed(struct conn *c, const Hostprof__SnapshotFd *m, struct received *rv)
{
	const int seals = F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE;
	struct stat st;
	void *p;

	if (c->passed < 0)
		return fail(EXIT_FAILURE, "hostprofd sent a snapshot without its file");
	if (!m->has_bytes || m->bytes == 0 || m->bytes > HPS_MAX_FILE || fstat(c->passed, &st) < 0 ||
	    !S_ISREG(st.st_mode) || (uint64_t)st.st_size != m->bytes ||
	    (fcntl(c->passed, F_GET_SEALS) & seals) != seals)
		return fail(EXIT_FAILURE, "hostprofd sent a snapshot file that is not as it says");
	p = mmap(NULL, m->bytes, PROT_READ, MAP_SHARED | MAP_POPULATE, c->passed, 0);
	if (p == MAP_FAILED)
		return fail(EXIT_FAILURE, "cannot map the snapshot: %m");
	close(c->passed);
	c->passed = -1;
	rv->map = p;
	rv->map_len = m->bytes;
	return 0;
}

/* Receive the chunks of a snapshot up to its end message, or its memfd: 0 when complete. */
static int recv_stream(struct conn *c, struct received *rv, uint64_t *ret_events)
{
	struct hp_buf *data = &rv->buf;

	for (;;) {
		Hostprof__Response *resp;
		int r = conn_recv(c, &resp), status = 0;

		if (r < 0)
			return transport_error(r);
		switch (resp->body_case) {
		case HOSTPROF__RESPONSE__BODY_CHUNK:
			if (hp_buf_pending(data) + resp->chunk->data.len > HPS_MAX_FILE)
				status = fail(EXIT_FAILURE, "snapshot larger than %llu bytes",
					      (unsigned long long)HPS_MAX_FILE);
			else if (hp_buf_append(data, resp->chunk->data.data, resp->chunk->data.len) < 0)
				status = fail(EXIT_FAILURE, "out of memory");
			break;
		case HOSTPROF__RESPONSE__BODY_END:
			if (resp->end->bytes != hp_buf_pending(data))
				status = fail(EXIT_FAILURE, "snapshot truncated: got %zu of %" PRIu64 " bytes",
					      hp_buf_pending(data), resp->end->bytes);
			*ret_events = resp->end->events;
			hostprof__response__free_unpacked(resp, NULL);
			return status;
		case HOSTPROF__RESPONSE__BODY_SNAPSHOT_FD:
			status = hp_buf_pending(data) ? fail(EXIT_FAILURE, "hostprofd sent an unexpected reply") :
							map_passed(c, resp->snapshot_fd, rv);
			*ret_events = resp->snapshot_fd->events;
			hostprof__response__free_unpacked(resp, NULL);
			return status;
		case HOSTPROF__RESPONSE__BODY_ERROR:
			status = report_error(resp->error);
			break;
		default:
			status = fail(EXIT_FAILURE, "hostprofd sent an unexpected reply");
		}
		hostprof__response__free_unpacked(resp, NULL);
		if (status)
			return status;
	}
}

/*
 * The client lives for one command, and what it does with a snapshot (unpacking it, the
 * diagnosis model, the exports) allocates a few times the snapshot's size, mostly in
 * blocks small enough for glibc to take from the heap. Each fresh page of it is a page
 * fault, an exception of several microseconds on a paravirtualized VM (about 20% of the
 * client's time there for a busy 10 s window). So the heap is grown at once by what
 * unpacking will take, in blocks faulted in with one madvise each, which go back to
 * malloc: it keeps them (the trim threshold is raised for that) and serves the
 * allocations that follow from them. Where the kernel lacks MADV_POPULATE_WRITE the pages
 * fault one by one, as without this.
 */
/* heap per byte of hps, in tenths: what unpacking it takes; with the diagnosis model (the
 * snapshot command's summary line, the report, Perfetto's tracks), what that takes as well
 * (a 10 s window of a busy process, export as Perfetto: 5,400 page faults -> 2,000, 224 ->
 * 212 ms of CPU; as folded, which needs no model, 25 keeps its peak RSS 16 MiB lower) */
#define HEAP_PREFAULT_TENTHS 25
#define HEAP_PREFAULT_MODEL_TENTHS 50
#define SUMMARY_THREAD "acl_thread" /* whose preemptions the summary line counts */
/* the formats whose export builds the model */
#define MODEL_FORMATS (1u << FMT_PERFETTO | 1u << FMT_REPORT | 1u << FMT_REPORT_JSON)
/* set by a command that builds the model of what it reads */
static bool model_expected;
/* the snapshot command's summary line builds it where the snapshot names SUMMARY_THREAD */
static bool model_if_named;
#define HEAP_PREFAULT_BLOCK (8u << 20) /* from the heap: the mmap threshold is set above it */
#define HEAP_PREFAULT_MAX (256u << 20)

/*
 * The blocks just taken from the top of the heap on huge pages, where the kernel has free
 * blocks of that size (lib/hugepage.h): faulted in 2 MiB at a time, and fewer TLB misses
 * for what is built on them. Under a sanitizer, whose malloc is not the heap, nothing.
 */
static void heap_huge(void *const *blocks, size_t n)
{
	size_t huge = n ? huge_pages_free_for(n * HEAP_PREFAULT_BLOCK) : 0;
	uintptr_t lo, hi, first = UINTPTR_MAX;

	if (!huge)
		return;
	for (size_t i = 0; i < n; i++)
		first = MIN(first, (uintptr_t)blocks[i]);
	lo = (first + huge - 1) & ~(uintptr_t)(huge - 1);
	hi = (uintptr_t)sbrk(0) & ~(uintptr_t)(huge - 1);
	if (hi > lo && first < hi && hi - lo <= (n + 1) * HEAP_PREFAULT_BLOCK)
		(void)madvise((void *)lo, hi - lo, MADV_HUGEPAGE);
}

static void heap_prefault(size_t hps_bytes)
{
	size_t tenths = model_expected ? HEAP_PREFAULT_MODEL_TENTHS : HEAP_PREFAULT_TENTHS;
	size_t want = MIN(hps_bytes / 10 * tenths, (size_t)HEAP_PREFAULT_MAX), n = 0;
	void *blocks[HEAP_PREFAULT_MAX / HEAP_PREFAULT_BLOCK];

	if (want < HEAP_PREFAULT_BLOCK)
		return;
	(void)mallopt(M_MMAP_THRESHOLD, HEAP_PREFAULT_BLOCK * 2);
	/* the threads that write formats and build the model allocate from this heap too */
	(void)mallopt(M_ARENA_MAX, 1);
	(void)mallopt(M_TRIM_THRESHOLD, HEAP_PREFAULT_MAX * 2);
	for (; n < ARRAY_SIZE(blocks) && n * HEAP_PREFAULT_BLOCK < want; n++) {
		blocks[n] = malloc(HEAP_PREFAULT_BLOCK);
		if (!blocks[n])
			break;
	}
	heap_huge(blocks, n);
	for (size_t i = 0; i < n; i++)
		prefault(blocks[i], HEAP_PREFAULT_BLOCK);
	while (n)
		free(blocks[--n]);
}

/* A request that answers with a snapshot stream: the .hps bytes, parsed. */
/* The snapshot hostprofd sent, decoded. */
static int unpack_received(const struct received *rv, Hostprof__Snapshot **ret_snap)
{
	struct hps_peek pk;

	if (model_if_named && !model_expected && hps_peek(rcv_data(rv), rcv_len(rv), SUMMARY_THREAD, &pk) == 0)
		model_expected = pk.named;
	heap_prefault(rcv_len(rv));
	if (hps_unpack(rcv_data(rv), rcv_len(rv), ret_snap) < 0)
		return fail(EXIT_FAILURE, "hostprofd sent a snapshot that does not parse");
	return 0;
}

/* ret_snap NULL: the bytes only, not decoded */
static int stream_request(Hostprof__Request *req, struct received *data, Hostprof__Snapshot **ret_snap,
			  uint64_t *ret_events)
{
	struct conn c = { .fd = -1, .passed = -1 };
	int r;

	r = conn_open(&c);
	if (!r)
		r = conn_request(&c, req);
	if (!r)
		r = recv_stream(&c, data, ret_events);
	conn_close(&c);
	if (r || !ret_snap)
		return r;
	return unpack_received(data, ret_snap);
}

static int parse_format_arg(const char *arg, unsigned *ret_mask)
{
	_cleanup_free_ char *bad = NULL;
	int r = formats_parse(arg, ret_mask, &bad);

	if (r == -EINVAL)
		return usage_error("unknown format '%s'; formats: perfetto, json, folded, pprof, svg, report, "
				   "report-json, hps, all",
				   bad ? bad : arg);
	if (r < 0)
		return fail(EXIT_FAILURE, "out of memory");
	return 0;
}

/* Write the formats and print each file's path; output NULL: the default prefix. */
static int write_formats(const Hostprof__Snapshot *snap, const uint8_t *raw, size_t raw_len, unsigned mask,
			 const char *output, const char *default_prefix)
{
	struct formats_out out = {};
	bool held;
	int r;

	held = snap && report_model_hold(snap) >= 0; /* the report, its JSON, the trace's episodes: one model */
	/* built beside what needs none (Perfetto's process tree and scheduler bundles, the other
	 * formats); when that fails each writer builds it when it needs it, as before */
	if (held && (mask & MODEL_FORMATS))
		(void)report_model_prebuild(snap);
	r = formats_write(snap, raw, raw_len, mask, output ? output : default_prefix, !output, 0644, &out);
	if (held)
		report_model_release(snap);
	if (r < 0)
		return fail(EXIT_FAILURE, "cannot write %s: %s", output ? output : default_prefix, strerror(-r));
	for (size_t i = 0; i < out.n; i++)
		printf("%s\n", out.paths[i]);
	formats_out_free(&out);
	return 0;
}


static void print_counts(uint32_t pid, uint64_t events, uint64_t start_ns, uint64_t end_ns, size_t n_threads)
{
	fprintf(stderr, "pid %u: %" PRIu64 " events over %.3f s, %zu threads\n", pid, events,
		(double)(end_ns - start_ns) / NSEC_PER_SEC, n_threads);
}

static void print_summary(const Hostprof__Snapshot *snap, uint64_t events)
{
	struct preempt_summary sum;
	char line[256];

	print_counts(snap->pid, events, snap->start_ns, snap->end_ns, snap->n_threads);
	if (report_preemptions(snap, SUMMARY_THREAD, &sum) == 0 && sum.threads) {
		report_preemptions_line(&sum, SUMMARY_THREAD, line, sizeof(line));
		fprintf(stderr, "%s\n", line);
	}
}

static const char *utc_stamp(char *buf, size_t len)
{
	time_t now = time(NULL);
	struct tm tm;

	gmtime_r(&now, &tm);
	strftime(buf, len, "%Y%m%dT%H%M%SZ", &tm);
	return buf;
}

/* Options of the commands that take them; one set, since each takes a few. */
static struct {
	uint64_t pid, window, at_ns;
	unsigned formats;
	const char *output, *thread, *rank, *job;
	bool has_pid, has_at;
} args;

static int on_opt(int opt, const char *arg)
{
	switch (opt) {
	case 'p':
		if (parse_uint(arg, INT32_MAX, &args.pid) < 0 || args.pid == 0)
			return usage_error("--pid needs a process id, not '%s'", arg);
		args.has_pid = true;
		return 0;
	case 'w':
		if (parse_duration(arg, &args.window) < 0 || args.window == 0)
			return usage_error("--window needs a duration like 500ms, 5s or 2m, not '%s'", arg);
		return 0;
	case 'f':
		return parse_format_arg(arg, &args.formats);
	case 'o':
		args.output = arg;
		return 0;
	case 't':
		args.thread = arg;
		return 0;
	case 'a':
		if (parse_wall_time(arg, &args.at_ns) < 0)
			return usage_error("--at needs a wall-clock time with its zone, like 2026-12-01T11:30:00Z, "
					   "2026-12-01T19:30:00.250+08:00 or epoch seconds 1764588600.25, not '%s'",
					   arg);
		args.has_at = true;
		return 0;
	case 'r':
		args.rank = arg;
		return 0;
	case 'j':
		args.job = arg;
		return 0;
	}
	return EXIT_USAGE;
}

static const struct option cmd_opts[] = {
	{ "pid", required_argument, NULL, 'p' },
	{ "window", required_argument, NULL, 'w' },
	{ "format", required_argument, NULL, 'f' },
	{ "output", required_argument, NULL, 'o' },
	{ "thread", required_argument, NULL, 't' },
	{ "at", required_argument, NULL, 'a' },
	{ "rank", required_argument, NULL, 'r' },
	{ "job", required_argument, NULL, 'j' },
	{},
};

/* parse_common, then only the options this command takes */
static int parse_args(int argc, char **argv, const char *allowed, int nargs, char **ret_arg)
{
	int r;

	args = (typeof(args)){};
	r = parse_common(argc, argv, cmd_opts, on_opt);
	if (r)
		return r;
	if ((args.has_pid && !strchr(allowed, 'p')) || (args.window && !strchr(allowed, 'w')) ||
	    (args.formats && !strchr(allowed, 'f')) || (args.output && !strchr(allowed, 'o')) ||
	    (args.thread && !strchr(allowed, 't')) || (args.has_at && !strchr(allowed, 'a')) ||
	    ((args.rank || args.job) && !strchr(allowed, 'r')))
		return usage_error("%s does not take that option; see hostprofctl --help", argv[0]);
	if (nargs == 0 && ret_arg)
		*ret_arg = NULL;
	return 0;
}

static int cmd_snapshot(int argc, char **argv)
{
	Hostprof__Request req = HOSTPROF__REQUEST__INIT;
	Hostprof__SnapshotRequest sreq = HOSTPROF__SNAPSHOT_REQUEST__INIT;
	Hostprof__Snapshot *snap = NULL;
	struct received data = {};
	uint64_t events = 0;
	char prefix[128], stamp[32];
	bool held;
	int r;

	r = parse_args(argc, argv, "pwfoar", 0, NULL);
	if (r)
		return r;
	if (args.has_pid == !!args.rank)
		return usage_error("snapshot needs --pid N, or --rank R [--job ID]");
	if (args.job && !args.rank)
		return usage_error("--job names a job for --rank");
	if (!args.formats)
		args.formats = 1u << FMT_PERFETTO;
	sreq.pid = args.pid;
	sreq.has_window_ns = args.window != 0;
	sreq.window_ns = args.window;
	sreq.has_at_ns = args.has_at;
	sreq.at_ns = args.at_ns;
	sreq.rank = (char *)args.rank;
	sreq.job = (char *)args.job;
	sreq.has_fd = sreq.fd = true; /* a memfd: no bytes through the daemon's loop */
	model_expected = args.formats & MODEL_FORMATS;
	model_if_named = true;
	req.body_case = HOSTPROF__REQUEST__BODY_SNAPSHOT;
	req.snapshot = &sreq;
	if (args.formats == 1u << FMT_HPS) {
		/* written as it came: decoded only for a summary line about a thread it names */
		struct hps_peek pk;

		r = stream_request(&req, &data, NULL, &events);
		if (r)
			goto out;
		if (hps_peek(rcv_data(&data), rcv_len(&data), SUMMARY_THREAD, &pk) < 0) {
			r = fail(EXIT_FAILURE, "hostprofd sent a snapshot that does not parse");
			goto out;
		}
		if (!pk.named) {
			snprintf(prefix, sizeof(prefix), "hostprof-%u-%s", pk.pid, utc_stamp(stamp, sizeof(stamp)));
			r = write_formats(NULL, rcv_data(&data), rcv_len(&data), args.formats, args.output, prefix);
			if (!r)
				print_counts(pk.pid, events, pk.start_ns, pk.end_ns, pk.n_threads);
			goto out;
		}
		r = unpack_received(&data, &snap);
		if (r)
			goto out;
	} else {
		r = stream_request(&req, &data, &snap, &events);
		if (r)
			goto out;
	}
	snprintf(prefix, sizeof(prefix), "hostprof-%u-%s", snap->pid, utc_stamp(stamp, sizeof(stamp)));
	held = report_model_hold(snap) >= 0; /* and the summary line: one model */
	r = write_formats(snap, rcv_data(&data), rcv_len(&data), args.formats, args.output, prefix);
	if (!r)
		print_summary(snap, events);
	if (held)
		report_model_release(snap);
out:
	hps_free(snap);
	rcv_free(&data);
	return r;
}

static int cmd_fetch(int argc, char **argv)
{
	Hostprof__Request req = HOSTPROF__REQUEST__INIT;
	Hostprof__FetchRequest freq = HOSTPROF__FETCH_REQUEST__INIT;
	Hostprof__Snapshot *snap = NULL;
	struct received data = {};
	uint64_t events = 0;
	int r;

	r = parse_args(argc, argv, "fo", 0, NULL);
	if (r)
		return r;
	if (optind != argc - 1)
		return usage_error("fetch NAME [-o PREFIX] [--format F]: one name from `hostprofctl snapshots`");
	if (!args.formats)
		args.formats = 1u << FMT_HPS | 1u << FMT_PERFETTO | 1u << FMT_REPORT;
	freq.name = argv[optind];
	model_expected = args.formats & MODEL_FORMATS;
	req.body_case = HOSTPROF__REQUEST__BODY_FETCH;
	req.fetch = &freq;
	r = stream_request(&req, &data, &snap, &events);
	if (!r)
		r = write_formats(snap, rcv_data(&data), rcv_len(&data), args.formats, args.output, argv[optind]);
	hps_free(snap);
	rcv_free(&data);
	return r;
}

/* A .hps file: its bytes and the parsed snapshot. */
static int read_hps(const char *path, struct hp_buf *data, Hostprof__Snapshot **ret)
{
	FILE *f = fopen(path, "re");
	uint8_t buf[65536];
	size_t n;
	int r;

	if (!f)
		return fail(EXIT_FAILURE, "cannot read %s: %m", path);
	while ((n = fread(buf, 1, sizeof(buf), f)) > 0)
		if (hp_buf_pending(data) + n > HPS_MAX_FILE || hp_buf_append(data, buf, n) < 0) {
			fclose(f);
			return fail(EXIT_FAILURE, "%s: too large", path);
		}
	r = ferror(f) ? -EIO : 0;
	fclose(f);
	if (r < 0)
		return fail(EXIT_FAILURE, "cannot read %s: %s", path, strerror(-r));
	heap_prefault(hp_buf_pending(data));
	if (hps_unpack(data->data + data->off, hp_buf_pending(data), ret) < 0)
		return fail(EXIT_FAILURE, "%s is not a hostprof snapshot (.hps), or it is damaged", path);
	return 0;
}

/*
 * Snapshots of several nodes: what merge_plan() needs of each file, read one file at a time
 * (a job of many nodes does not fit in memory at once).
 */
struct node_files {
	char **paths;
	struct merge_node *nodes;
	size_t n;
};

/* What merge_plan() found wrong, by file. */
static int check_error(const struct node_files *nf, const struct merge_check *c)
{
	switch (c->problem) {
	case MERGE_NO_ANCHOR:
		return fail(
			EXIT_FAILURE,
			"%s has no clock anchor (BOOTTIME and REALTIME read together), so its times cannot be "
			"put on a wall clock; take it again with a hostprofd that records one",
			nf->paths[c->a]);
	case MERGE_NO_HOST:
		return fail(EXIT_FAILURE, "%s names no host; each node's snapshot says which host it is",
			    nf->paths[c->a]);
	case MERGE_SAME_HOST:
		return fail(
			EXIT_FAILURE,
			"%s and %s are both of host %s: merge makes one Perfetto machine per node, so give "
			"one snapshot per host (say, each node's local rank 0); `report` takes every rank",
			nf->paths[c->a], nf->paths[c->b], nf->nodes[c->a].host);
	case MERGE_SAME_PROCESS:
		return fail(EXIT_FAILURE,
			    "%s and %s are snapshots of one process (pid %" PRIu32 " of host %s): "
			    "give each process once",
			    nf->paths[c->a], nf->paths[c->b], nf->nodes[c->a].pid, nf->nodes[c->a].host);
	case MERGE_OUT_OF_RANGE:
		return fail(EXIT_FAILURE, "%s: its times, moved onto the merged time line, pass 64 bits",
			    nf->paths[c->a]);
	case MERGE_TOO_MANY:
		return fail(EXIT_FAILURE, "more than %d snapshots", MERGE_MAX_NODES);
	case MERGE_OK:
		break;
	}
	return fail(EXIT_FAILURE, "the snapshots are inconsistent");
}

/* Each file read, parsed and checked in turn; fn gets each snapshot, then it is freed. */
static int for_each_node(struct node_files *nf, int (*fn)(void *ud, size_t i, Hostprof__Snapshot *snap),
			 void *ud)
{
	for (size_t i = 0; i < nf->n; i++) {
		Hostprof__Snapshot *snap = NULL;
		struct hp_buf data = {};
		int r = read_hps(nf->paths[i], &data, &snap);

		hp_buf_free(&data);
		if (r)
			return r;
		r = hps_validate(snap) < 0 ?
			    fail(EXIT_FAILURE, "%s is inconsistent (its tables do not line up)",
				 nf->paths[i]) :
			    fn(ud, i, snap);
		hps_free(snap);
		if (r)
			return r;
	}
	return 0;
}

static int node_files_init(struct node_files *nf, char **paths, size_t n)
{
	*nf = (struct node_files){ .paths = paths,
				   .n = n,
				   .nodes = calloc(MAX(n, (size_t)1), sizeof(*nf->nodes)) };
	return nf->nodes ? 0 : fail(EXIT_FAILURE, "out of memory");
}

static int add_to_report(void *ud, size_t i, Hostprof__Snapshot *snap)
{
	struct node_files *nf = ((void **)ud)[0];
	struct report_nodes *rn = ((void **)ud)[1];
	int r;

	merge_node_init(snap, &nf->nodes[i]);
	r = report_nodes_add(rn, snap);
	return r < 0 ? fail(EXIT_FAILURE, "%s: cannot report on it: %s", nf->paths[i], strerror(-r)) : 0;
}

static int cmd_report(int argc, char **argv)
{
	struct node_files nf = {};
	struct report_nodes *rn = NULL;
	struct merge_check check;
	int r;

	r = parse_args(argc, argv, "", 0, NULL);
	if (r)
		return r;
	if (optind > argc - 1)
		return usage_error("report FILE.hps [--json], or report A.hps B.hps ... for many nodes");
	if (optind == argc - 1) {
		Hostprof__Snapshot *snap = NULL;
		struct hp_buf data = {};

		model_expected = true;
		r = read_hps(argv[optind], &data, &snap);
		if (!r) {
			r = arg_json ? snapshot_report_json(snap, stdout) :
				       snapshot_report_text(snap, stdout);
			r = r < 0 ? fail(EXIT_FAILURE, "cannot write the report: %s", strerror(-r)) : 0;
		}
		hps_free(snap);
		hp_buf_free(&data);
		return r;
	}
	r = node_files_init(&nf, argv + optind, argc - optind);
	if (!r && !(rn = report_nodes_new()))
		r = fail(EXIT_FAILURE, "out of memory");
	if (!r)
		r = for_each_node(&nf, add_to_report, (void *[]){ &nf, rn });
	if (!r) {
		r = report_nodes_write(rn, arg_json, stdout, &check);
		if (r == -EINVAL && check.problem != MERGE_OK)
			r = check_error(&nf, &check);
		else if (r < 0)
			r = fail(EXIT_FAILURE, "cannot write the report: %s", strerror(-r));
	}
	report_nodes_free(rn);
	free(nf.nodes);
	return r;
}

static int plan_node(void *ud, size_t i, Hostprof__Snapshot *snap)
{
	struct node_files *nf = ud;

	merge_node_init(snap, &nf->nodes[i]);
	return 0;
}

struct merge_job {
	struct node_files *nf;
	const uint64_t *shift;
	struct merge_writer w;
	size_t failed; /* the file that could not be written */
	int status; /* what hostprofctl exits with when its read failed */
};

static int write_node(void *ud, size_t i, Hostprof__Snapshot *snap)
{
	struct merge_job *j = ud;
	int r = merge_write(&j->w, snap, j->shift[i]);

	j->failed = i;
	return r < 0 ? r : 0;
}

/* The second pass: each file again, written as its machine. */
static int write_merged(void *ud, FILE *f)
{
	struct merge_job *j = ud;
	int r;

	j->w = (struct merge_writer){ .out = f };
	r = for_each_node(j->nf, write_node, j);
	if (r > 0) { /* a file that changed since the first pass: said already */
		j->status = r;
		return -ECANCELED;
	}
	if (r < 0)
		return r;
	errno = 0;
	return fflush(f) == EOF ? negative_errno() : 0;
}

static int cmd_merge(int argc, char **argv)
{
	struct node_files nf = {};
	struct merge_job job = { .nf = &nf };
	struct merge_check check;
	_cleanup_free_ uint64_t *shift = NULL;
	char path[128], stamp[32];
	const char *out;
	int r;

	r = parse_args(argc, argv, "o", 0, NULL);
	if (r)
		return r;
	if (optind > argc - 2)
		return usage_error(
			"merge A.hps B.hps ... [-o OUT.pftrace]: the snapshots of two or more nodes");
	snprintf(path, sizeof(path), "hostprof-merge-%s.pftrace", utc_stamp(stamp, sizeof(stamp)));
	out = args.output ? args.output : path;
	r = node_files_init(&nf, argv + optind, argc - optind);
	if (r)
		return r;
	shift = calloc(nf.n, sizeof(*shift));
	if (!shift) {
		r = fail(EXIT_FAILURE, "out of memory");
		goto out;
	}
	/* what is wrong with the set is said before anything is made */
	r = for_each_node(&nf, plan_node, &nf);
	if (r)
		goto out;
	if (merge_plan(nf.nodes, nf.n, true, shift, &check) < 0) {
		r = check_error(&nf, &check);
		goto out;
	}
	job.shift = shift;
	r = formats_write_new(out, 0644, write_merged, &job);
	if (r == -EEXIST)
		r = fail(EXIT_FAILURE,
			 "%s exists: merge never replaces a file; remove it or name another with -o", out);
	else if (r == -ECANCELED)
		r = job.status;
	else if (r == -EINVAL || r == -E2BIG)
		r = fail(EXIT_FAILURE, "cannot merge %s: %s; nothing written", nf.paths[job.failed],
			 r == -EINVAL ? "it does not export (a CPU number or a time out of range)" :
					"too many threads or machines for one trace");
	else if (r < 0)
		r = fail(EXIT_FAILURE, "cannot write %s: %s; nothing written", out, strerror(-r));
	if (r)
		goto out;
	for (size_t i = 0; i < nf.n; i++) {
		const struct merge_node *x = &nf.nodes[i];

		fprintf(stderr, "machine %zu: %s from %s, +%.9f s", i + 1, x->name, nf.paths[i],
			(double)shift[i] / NSEC_PER_SEC);
		if (x->clock_known)
			fprintf(stderr, ", clock %s, max error %.3f ms", x->synced ? "synced" : "NOT synced",
				(double)x->max_error_ns / NSEC_PER_MSEC);
		else
			fprintf(stderr, ", clock sync not recorded");
		fputc('\n', stderr);
	}
	printf("%s\n", out);
out:
	free(nf.nodes);
	return r;
}

static int cmd_export(int argc, char **argv)
{
	Hostprof__Snapshot *snap = NULL;
	struct hp_buf data = {};
	_cleanup_free_ char *prefix = NULL;
	const char *file;
	size_t len;
	int r;

	r = parse_args(argc, argv, "fo", 0, NULL);
	if (r)
		return r;
	if (optind != argc - 1 || !args.formats)
		return usage_error("export FILE.hps --format F[,F...]|all [-o OUT]");
	file = argv[optind];
	len = strlen(file);
	prefix = len > 4 && !strcmp(file + len - 4, ".hps") ? strndup(file, len - 4) : strdup(file);
	if (!prefix)
		return fail(EXIT_FAILURE, "out of memory");
	model_expected = args.formats & MODEL_FORMATS;
	r = read_hps(file, &data, &snap);
	if (!r)
		r = write_formats(snap, data.data + data.off, hp_buf_pending(&data), args.formats, args.output, prefix);
	hps_free(snap);
	hp_buf_free(&data);
	return r;
}

static int cmd_watch(int argc, char **argv, bool watch)
{
	Hostprof__Request req = HOSTPROF__REQUEST__INIT;
	Hostprof__WatchRequest w = HOSTPROF__WATCH_REQUEST__INIT;
	Hostprof__UnwatchRequest u = HOSTPROF__UNWATCH_REQUEST__INIT;
	Hostprof__Response *resp = NULL;
	int r;

	r = parse_args(argc, argv, "pt", 0, NULL);
	if (r)
		return r;
	if (args.has_pid == !!args.thread)
		return usage_error("%s needs --pid N or --thread GLOB", argv[0]);
	if (watch) {
		w.has_pid = args.has_pid;
		w.pid = args.pid;
		w.thread = (char *)args.thread;
		req.body_case = HOSTPROF__REQUEST__BODY_WATCH;
		req.watch = &w;
	} else {
		u.has_pid = args.has_pid;
		u.pid = args.pid;
		u.thread = (char *)args.thread;
		req.body_case = HOSTPROF__REQUEST__BODY_UNWATCH;
		req.unwatch = &u;
	}
	r = simple_request(&req, HOSTPROF__RESPONSE__BODY_ACK, &resp);
	if (r)
		return r;
	printf("%s\n", resp->ack->message ? ESC(resp->ack->message) : "ok");
	hostprof__response__free_unpacked(resp, NULL);
	return 0;
}

static int cmd_metrics(int argc, char **argv)
{
	Hostprof__Request req = HOSTPROF__REQUEST__INIT;
	Hostprof__MetricsRequest mreq = HOSTPROF__METRICS_REQUEST__INIT;
	Hostprof__Response *resp = NULL;
	int r;

	r = parse_common(argc, argv, NULL, NULL);
	if (r)
		return r;
	if (optind < argc)
		return usage_error("metrics: unexpected argument '%s'", argv[optind]);
	req.body_case = HOSTPROF__REQUEST__BODY_METRICS;
	req.metrics = &mreq;
	r = simple_request(&req, HOSTPROF__RESPONSE__BODY_METRICS, &resp);
	if (r)
		return r;
	/* the daemon escaped every value the format's way: the text goes out as it is */
	fputs(resp->metrics->text, stdout);
	hostprof__response__free_unpacked(resp, NULL);
	return fflush(stdout) == 0 ? 0 : fail(EXIT_FAILURE, "cannot write the metrics: %m");
}

static int cmd_snapshots(int argc, char **argv)
{
	Hostprof__Request req = HOSTPROF__REQUEST__INIT;
	Hostprof__SnapshotsRequest sreq = HOSTPROF__SNAPSHOTS_REQUEST__INIT;
	Hostprof__Response *resp = NULL;
	const Hostprof__SnapshotList *l;
	int r;

	r = parse_args(argc, argv, "", 0, NULL);
	if (r)
		return r;
	if (optind != argc)
		return usage_error("snapshots takes no arguments");
	req.body_case = HOSTPROF__REQUEST__BODY_SNAPSHOTS;
	req.snapshots = &sreq;
	r = simple_request(&req, HOSTPROF__RESPONSE__BODY_SNAPSHOT_LIST, &resp);
	if (r)
		return r;
	l = resp->snapshot_list;
	if (arg_json) {
		struct jsonw *j = jsonw_new(stdout);

		jsonw_begin_object(j);
		jsonw_string_field(j, "dir", l->dir ? l->dir : "");
		jsonw_name(j, "snapshots");
		jsonw_begin_array(j);
		for (size_t i = 0; i < l->n_entries; i++) {
			const Hostprof__SnapshotEntry *e = l->entries[i];

			jsonw_begin_object(j);
			jsonw_string_field(j, "name", e->name ? e->name : "");
			jsonw_uint_field(j, "pid", e->pid);
			jsonw_string_field(j, "trigger", e->trigger ? e->trigger : "");
			jsonw_uint_field(j, "realtime_ns", e->realtime_ns);
			jsonw_uint_field(j, "bytes", e->bytes);
			jsonw_uint_field(j, "uid", e->uid);
			jsonw_name(j, "files");
			jsonw_begin_array(j);
			for (size_t k = 0; k < e->n_files; k++)
				jsonw_string(j, e->files[k]);
			jsonw_end_array(j);
			jsonw_string_field(j, "summary", e->summary ? e->summary : "");
			jsonw_end_object(j);
		}
		jsonw_end_array(j);
		jsonw_end_object(j);
		jsonw_free(j);
		putchar('\n');
	} else if (!l->n_entries) {
		printf("no automatic snapshots in %s\n", l->dir ? l->dir : "the snapshot directory");
	} else {
		printf("%-40s %-24s %-8s %-14s %9s  %s\n", "NAME", "TIME (UTC)", "PID", "TRIGGER", "SIZE", "WHY");
		for (size_t i = 0; i < l->n_entries; i++) {
			const Hostprof__SnapshotEntry *e = l->entries[i];
			char size[32], when[40];

			printf("%-40s %-24s %-8u %-14s %9s  %s\n", e->name, format_wall_time(e->realtime_ns, when, sizeof(when)),
			       e->pid, e->trigger, human_bytes(e->bytes, size, sizeof(size)),
			       e->summary && *e->summary ? ESC(e->summary) : "-");
		}
	}
	hostprof__response__free_unpacked(resp, NULL);
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "socket", required_argument, NULL, 's' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{},
	};
	int opt;

	/* global options stop at the command */
	while ((opt = getopt_long(argc, argv, "+h", opts, NULL)) != -1) {
		switch (opt) {
		case 's':
			arg_socket = optarg;
			break;
		case 'j':
			arg_json = true;
			break;
		case 'h':
			fputs(usage_text, stdout);
			return 0;
		case 'V':
			printf("hostprofctl %s\n", HOSTPROF_VERSION);
			return 0;
		default:
			return usage_error("unknown option");
		}
	}
	if (optind >= argc)
		return usage_error("missing command");
	argc -= optind;
	argv += optind;
	if (!strcmp(argv[0], "status"))
		return cmd_status(argc, argv);
	if (!strcmp(argv[0], "snapshot"))
		return cmd_snapshot(argc, argv);
	if (!strcmp(argv[0], "watch"))
		return cmd_watch(argc, argv, true);
	if (!strcmp(argv[0], "unwatch"))
		return cmd_watch(argc, argv, false);
	if (!strcmp(argv[0], "snapshots"))
		return cmd_snapshots(argc, argv);
	if (!strcmp(argv[0], "fetch"))
		return cmd_fetch(argc, argv);
	if (!strcmp(argv[0], "metrics"))
		return cmd_metrics(argc, argv);
	if (!strcmp(argv[0], "report"))
		return cmd_report(argc, argv);
	if (!strcmp(argv[0], "export"))
		return cmd_export(argc, argv);
	if (!strcmp(argv[0], "merge"))
		return cmd_merge(argc, argv);
	return usage_error("unknown command '%s'", argv[0]);
}
