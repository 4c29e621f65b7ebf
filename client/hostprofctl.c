// SPDX-License-Identifier: GPL-2.0-only
/*
 * hostprofctl: the thin client of hostprofd's control socket.
 *
 * Exit status: 0 ok, 1 failure, 2 usage, 3 daemon unreachable, 4 permission denied.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "duration.h"
#include "export.h"
#include "framing.h"
#include "hps.h"
#include "jsonw.h"
#include "macro.h"
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
	"  snapshot --pid N [--window DUR] [--format F[,F...]|all] [-o PATH]\n"
	"                                      save the recorded history of process N\n"
	"                                      (default: all of it, perfetto,\n"
	"                                      ./hostprof-<pid>-<UTC time>.<ext>)\n"
	"\n"
	"Formats: perfetto (.pftrace, opens in ui.perfetto.dev), hps (.hps, the canonical\n"
	"snapshot), all.\n"
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
};

static void conn_close(struct conn *c)
{
	if (c->fd >= 0)
		close(c->fd);
	hp_buf_free(&c->buf);
}

static int conn_recv(struct conn *c, Hostprof__Response **ret)
{
	const uint8_t *payload;
	int n = frame_read_fd(c->fd, HP_MAX_RESPONSE, &c->buf, &payload);

	if (n < 0)
		return n;
	*ret = hostprof__response__unpack(NULL, n, payload);
	return *ret ? 0 : -EBADMSG;
}

/* The exit status for an Error reply, after printing its message. */
static int report_error(const Hostprof__Error *err)
{
	switch (err->code) {
	case HOSTPROF__ERROR__CODE__DENIED:
		return fail(EXIT_DENIED, "permission denied: %s", err->message);
	case HOSTPROF__ERROR__CODE__BAD_REQUEST:
		return fail(EXIT_USAGE, "%s", err->message);
	default:
		return fail(EXIT_FAILURE, "%s", err->message);
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
	*c = (struct conn){ .fd = -1 };
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
	printf("memory:    %s recorded of %s, daemon RSS %s\n", human_bytes(st->memory_bytes, a, sizeof(a)),
	       human_bytes(st->memory_limit, b, sizeof(b)), human_bytes(st->rss_bytes, c, sizeof(c)));
	printf("drops:    ");
	for (size_t i = 0; i < st->n_drops; i++)
		printf(" %s %" PRIu64 "%s", st->drops[i]->cause, st->drops[i]->count, i + 1 < st->n_drops ? "," : "");
	printf("\nthreads:  ");
	for (size_t i = 0; i < st->n_watch_threads; i++)
		printf(" %s", st->watch_threads[i]);
	printf("%s\n", st->n_watch_threads ? "" : " (none)");
	if (!st->n_processes) {
		printf("no watched processes\n");
		return;
	}
	printf("\n%-8s %-16s %10s %9s  %s\n", "PID", "COMM", "EVENTS", "MEMORY", "WATCHED BECAUSE");
	for (size_t i = 0; i < st->n_processes; i++) {
		const Hostprof__WatchedProcess *p = st->processes[i];

		printf("%-8u %-16s %10" PRIu64 " %9s  %s%s\n", p->pid, p->comm, p->events,
		       human_bytes(p->bytes, a, sizeof(a)), p->why, p->exited ? " (exited)" : "");
	}
}

static int cmd_status(int argc, char **argv)
{
	Hostprof__Request req = HOSTPROF__REQUEST__INIT;
	Hostprof__StatusRequest sreq = HOSTPROF__STATUS_REQUEST__INIT;
	Hostprof__Response *resp;
	struct conn c = { .fd = -1 };
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
	optind = 1;
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
	if (optind < argc)
		return usage_error("%s: unexpected argument '%s'", argv[0], argv[optind]);
	return 0;
}

/* --format values: what this client can write, and the file each makes */
struct format {
	const char *name;
	const char *ext;
};

static const struct format formats[] = {
	{ "perfetto", ".pftrace" },
	{ "hps", ".hps" },
};

#define N_FORMATS ARRAY_SIZE(formats)

/* Formats of SPEC §5 that this version does not write yet */
static const char *const later_formats[] = { "json", "folded", "pprof", "svg", "report", "report-json" };

static int parse_formats(const char *arg, bool ret[N_FORMATS])
{
	_cleanup_free_ char *copy = strdup(arg);
	char *save = NULL;
	bool any = false;

	if (!copy)
		return -ENOMEM;
	for (char *f = strtok_r(copy, ",", &save); f; f = strtok_r(NULL, ",", &save)) {
		bool known = false;

		if (!strcmp(f, "all")) {
			for (size_t i = 0; i < N_FORMATS; i++)
				ret[i] = true;
			any = true;
			continue;
		}
		for (size_t i = 0; i < N_FORMATS; i++)
			if (!strcmp(f, formats[i].name)) {
				ret[i] = known = any = true;
			}
		if (known)
			continue;
		for (size_t i = 0; i < ARRAY_SIZE(later_formats); i++)
			if (!strcmp(f, later_formats[i]))
				return usage_error("format '%s' is not available in hostprofctl %s yet; "
						   "available: perfetto, hps, all",
						   f, HOSTPROF_VERSION);
		return usage_error("unknown format '%s'; available: perfetto, hps, all", f);
	}
	if (!any)
		return usage_error("--format needs at least one format");
	return 0;
}

/* Receive the chunks of a snapshot up to its end message. */
static int recv_snapshot(struct conn *c, struct hp_buf *data, uint64_t *ret_events)
{
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
			return status ? status : -1; /* -1: complete */
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

/* Write through a temporary file and rename it into place, so no partial file is left. */
static int write_output(const char *path, const Hostprof__Snapshot *snap, const uint8_t *raw, size_t raw_len,
			const struct format *f)
{
	_cleanup_free_ char *tmp = NULL;
	FILE *out;
	int r = 0;

	if (asprintf(&tmp, "%s.tmp%d", path, getpid()) < 0)
		return fail(EXIT_FAILURE, "out of memory");
	out = fopen(tmp, "we");
	if (!out)
		return fail(EXIT_FAILURE, "cannot write %s: %m", tmp);
	if (!strcmp(f->name, "hps"))
		r = fwrite(raw, 1, raw_len, out) == raw_len ? 0 : -errno;
	else
		r = snapshot_export_perfetto(snap, out);
	if (fclose(out) != 0 && r == 0)
		r = -errno;
	if (r == 0 && rename(tmp, path) < 0)
		r = -errno;
	if (r < 0) {
		unlink(tmp);
		return fail(EXIT_FAILURE, "cannot write %s: %s", path, strerror(-r));
	}
	return 0;
}

static struct {
	uint64_t pid, window;
	bool want[N_FORMATS], any_format;
	const char *output;
} snap_args;

static int on_snapshot_opt(int opt, const char *arg)
{
	int r;

	switch (opt) {
	case 'p':
		if (parse_uint(arg, INT32_MAX, &snap_args.pid) < 0 || snap_args.pid == 0)
			return usage_error("--pid needs a process id, not '%s'", arg);
		return 0;
	case 'w':
		if (parse_duration(arg, &snap_args.window) < 0 || snap_args.window == 0)
			return usage_error("--window needs a duration like 500ms, 5s or 2m, not '%s'", arg);
		return 0;
	case 'f':
		r = parse_formats(arg, snap_args.want);
		snap_args.any_format = true;
		return r;
	case 'o':
		snap_args.output = arg;
		return 0;
	}
	return EXIT_USAGE;
}

static int cmd_snapshot(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "pid", required_argument, NULL, 'p' },
		{ "window", required_argument, NULL, 'w' },
		{ "format", required_argument, NULL, 'f' },
		{ "output", required_argument, NULL, 'o' },
		{},
	};
	Hostprof__Request req = HOSTPROF__REQUEST__INIT;
	Hostprof__SnapshotRequest sreq = HOSTPROF__SNAPSHOT_REQUEST__INIT;
	Hostprof__Snapshot *snap = NULL;
	bool *want = snap_args.want;
	const char *output;
	struct hp_buf data = {};
	uint64_t pid, window, events = 0;
	char prefix[128];
	size_t nfiles = 0;
	struct conn c = { .fd = -1 };
	int r;

	r = parse_common(argc, argv, opts, on_snapshot_opt);
	if (r)
		return r;
	pid = snap_args.pid;
	window = snap_args.window;
	output = snap_args.output;
	if (!snap_args.any_format)
		want[0] = true; /* perfetto */
	if (!pid)
		return usage_error("snapshot needs --pid N");
	for (size_t i = 0; i < N_FORMATS; i++)
		nfiles += want[i];

	r = conn_open(&c);
	if (r)
		goto out;
	sreq.pid = pid;
	sreq.has_window_ns = window != 0;
	sreq.window_ns = window;
	req.body_case = HOSTPROF__REQUEST__BODY_SNAPSHOT;
	req.snapshot = &sreq;
	r = conn_request(&c, &req);
	if (r)
		goto out;
	r = recv_snapshot(&c, &data, &events);
	if (r != -1)
		goto out;
	r = hps_unpack(data.data + data.off, hp_buf_pending(&data), &snap);
	if (r < 0) {
		r = fail(EXIT_FAILURE, "hostprofd sent a snapshot that does not parse");
		goto out;
	}

	if (!output) {
		time_t now = time(NULL);
		struct tm tm;

		gmtime_r(&now, &tm);
		snprintf(prefix, sizeof(prefix), "hostprof-%" PRIu64 "-%04d%02d%02dT%02d%02d%02dZ", pid,
			 tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
	}
	for (size_t i = 0; i < N_FORMATS; i++) {
		_cleanup_free_ char *path = NULL;

		if (!want[i])
			continue;
		/* -o names the file when there is one, else it is a prefix */
		if (output && nfiles == 1)
			path = strdup(output);
		else if (asprintf(&path, "%s%s", output ? output : prefix, formats[i].ext) < 0)
			path = NULL;
		if (!path) {
			r = fail(EXIT_FAILURE, "out of memory");
			goto out;
		}
		r = write_output(path, snap, data.data + data.off, hp_buf_pending(&data), &formats[i]);
		if (r)
			goto out;
		printf("%s\n", path);
	}
	fprintf(stderr, "pid %" PRIu64 ": %" PRIu64 " sched_switch events over %.3f s, %zu threads\n", pid,
		events, (double)(snap->end_ns - snap->start_ns) / NSEC_PER_SEC, snap->n_threads);
	{
		struct preempt_summary sum;
		char line[256];

		if (report_preemptions(snap, "acl_thread", &sum) == 0 && sum.threads) {
			report_preemptions_line(&sum, "acl_thread", line, sizeof(line));
			fprintf(stderr, "%s\n", line);
		}
	}
	r = 0;
out:
	hps_free(snap);
	hp_buf_free(&data);
	conn_close(&c);
	return r;
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
	return usage_error("unknown command '%s'", argv[0]);
}
