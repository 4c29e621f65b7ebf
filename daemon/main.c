// SPDX-License-Identifier: GPL-2.0-only
/*
 * hostprofd: flags and config, start-up, reload, shutdown.
 *
 * Exit status: 0 after SIGTERM/SIGINT, 2 for a configuration or kernel error at start
 * (systemd must not restart it in a loop), 1 for a failure while running.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "symbolize.h"
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include "duration.h"
#include "formats.h"
#include "glob.h"
#include "hps.h"
#include "hostprofd.h"
#include "log.h"
#include "macro.h"
#include "procfs.h"
#include "snapjob.h"
#include "snapshot.h"

#define EXIT_CONFIG 2

size_t daemon_drops(struct daemon *d, struct drop_count *ret, size_t max)
{
	static const char *const causes[HP_STAT_MAX] = {
		[HP_STAT_RING_FULL] = "ring_full",
		[HP_STAT_MAP_FULL] = "map_full",
		[HP_STAT_NO_RING] = "no_ring",
		[HP_STAT_TASK_FULL] = "task_map_full",
		[HP_STAT_HIST_FULL] = "histogram_map_full",
		[HP_STAT_STACK_FAILED] = "stack_failed",
		[HP_STAT_NESTED] = "nested",
		[HP_STAT_WAIT_FULL] = "wait_map_full",
	};
	uint64_t stats[HP_STAT_MAX] = {};
	size_t n = 0;

	(void)capture_stats(d->capture, stats);
	for (size_t i = 0; i < HP_STAT_MAX && n < max; i++)
		if (causes[i])
			ret[n++] = (struct drop_count){ causes[i], stats[i] };
	if (n < max)
		ret[n++] = (struct drop_count){ "bad_record", capture_bad_records(d->capture) };
	return n;
}

struct hist_collect {
	struct hist_entry *v;
	size_t n, cap;
	int err;
};

static void collect_hist(void *ud, const struct hp_hist_key *key, const struct hp_hist *h)
{
	struct hist_collect *hc = ud;

	if (hc->n == hc->cap) {
		size_t cap = hc->cap ? hc->cap * 2 : 64;
		struct hist_entry *v = realloc(hc->v, cap * sizeof(*v));

		if (!v) {
			hc->err = -ENOMEM;
			return;
		}
		hc->v = v;
		hc->cap = cap;
	}
	hc->v[hc->n++] = (struct hist_entry){ .key = *key, .h = *h };
}

int daemon_histograms(struct daemon *d, const struct proc_rec *p, struct hist_entry **ret, size_t *ret_n)
{
	struct hist_collect hc = {};
	int r;

	if (p->hists_saved) {
		hc.n = p->n_final_hists;
		hc.v = malloc(MAX(hc.n, (size_t)1) * sizeof(*hc.v));
		if (!hc.v)
			return -ENOMEM;
		if (hc.n)
			memcpy(hc.v, p->final_hists, hc.n * sizeof(*hc.v));
	} else {
		r = capture_for_each_histogram(d->capture, p->info.pid, collect_hist, &hc);
		if (r < 0 || hc.err < 0) {
			free(hc.v);
			return r < 0 ? r : hc.err;
		}
	}
	*ret = hc.v;
	*ret_n = hc.n;
	return 0;
}

static int resolve_frame(void *ud, uint32_t pid, uint64_t addr, bool kernel, struct sym_result *ret)
{
	return symbolizer_resolve(ud, pid, addr, kernel, ret);
}

int daemon_build_snapshot(struct daemon *d, const struct proc_rec *p, uint64_t window_ns, uint64_t end_ns,
			  const char *reason, Hostprof__Marker *const *markers, size_t n_markers, uint8_t **ret_data,
			  size_t *ret_len, uint64_t *ret_events)
{
	struct drop_count drops[16];
	struct snapshot_ctx ctx = {
		.window_ns = window_ns,
		.end_ns = end_ns,
		.reason = reason,
		.events_total = recorder_events(d->recorder),
		.drops = drops,
		.host = recorder_host(d->recorder),
		.syscall_min_ns = d->settings.syscall_min_ns,
		.offcpu_min_ns = d->settings.offcpu_min_ns,
		.sample_hz = d->settings.sample_hz,
		.interference = capture_interference(d->capture),
		.irq_min_ns = d->settings.irq_min_ns,
		.lock_min_ns = d->settings.lock_min_ns,
		.markers = markers,
		.n_markers = n_markers,
	};
	struct hist_entry *hists = NULL;
	int r;

	if (!d->in_snapjob)
		(void)capture_drain(d->capture); /* include what is still in the rings */
	ctx.n_drops = daemon_drops(d, drops, ARRAY_SIZE(drops));
	r = daemon_histograms(d, p, &hists, &ctx.n_hists);
	if (r < 0)
		return r;
	ctx.hists = hists;
	if (d->symbolizer) {
		if (!p->exit_ns && p->maps_dirty) {
			(void)symbolizer_refresh_process(d->symbolizer, p->info.pid);
			((struct proc_rec *)p)->maps_dirty = false;
		}
		ctx.resolve = resolve_frame;
		ctx.resolve_ud = d->symbolizer;
	}
	r = snapshot_build(p, &ctx, ret_data, ret_len, ret_events);
	free(hists);
	return r;
}

static void on_record(void *ud, const struct hp_hdr *rec)
{
	struct daemon *d = ud;

	recorder_append(d->recorder, rec);
	triggers_on_record(d->triggers, d->recorder, rec);
}

struct snapstore *daemon_snapstore(struct daemon *d)
{
	int r;

	if (d->snapstore)
		return d->snapstore;
	r = snapstore_open(d->settings.snapshot_dir, d->settings.max_snapshots, d->settings.max_snapshot_mb << 20,
			   &d->snapstore);
	if (r < 0)
		log_error_errno(r, "Failed to use the snapshot directory %s: %m; automatic snapshots are lost until it works",
				d->settings.snapshot_dir);
	return d->snapstore;
}

static void recorder_limits_from(const struct settings *s, struct recorder_limits *ret)
{
	*ret = (struct recorder_limits){
		.window_ns = s->window_ns,
		.buffer_bytes = s->buffer_mb << 20,
		.memory_bytes = s->memory_mb << 20,
		.host_bytes = 64ULL << 20,
	};
}

int daemon_watch_pid(struct daemon *d, uint32_t pid, uint32_t reason)
{
	struct proc_rec *p;
	int r;

	r = recorder_watch(d->recorder, pid, reason, 0, now_boottime_ns(), &p);
	if (r < 0)
		return r;
	r = capture_watch(d->capture, pid, reason, 0);
	if (r < 0)
		return r;
	log_info("watching pid %u (%s): %s", pid, p->info.comm, p->why);
	return 0;
}

struct scan_ctx {
	struct daemon *d;
	uint32_t last_pid;
};

static int scan_thread(uint32_t pid, uint32_t tid, const char *comm, void *ud)
{
	struct scan_ctx *ctx = ud;
	struct daemon *d = ctx->d;

	if (pid == ctx->last_pid || recorder_find_live(d->recorder, pid))
		return 0;
	for (size_t i = 0; i < d->settings.n_watch_threads; i++) {
		if (!thread_glob_match(d->settings.watch_threads[i], comm))
			continue;
		ctx->last_pid = pid;
		if (daemon_watch_pid(d, pid, HP_WATCH_GLOB) < 0)
			log_warning("pid %u went away while being added, ignoring", pid);
		break;
	}
	return 0;
}

/* Processes that already have a thread of a watched name. New ones the kernel catches. */
static int scan_proc(struct daemon *d)
{
	struct scan_ctx ctx = { .d = d };

	if (!d->settings.n_watch_threads)
		return 0;
	return proc_for_each_thread(scan_thread, &ctx);
}

static int apply_watch_settings(struct daemon *d)
{
	int r;

	r = capture_set_globs(d->capture, d->settings.watch_threads, d->settings.n_watch_threads);
	if (r < 0)
		return log_error_errno(r, "Failed to set thread patterns: %m");
	capture_set_thresholds(d->capture, d->settings.syscall_min_ns, d->settings.offcpu_min_ns);
	capture_set_interference(d->capture, d->settings.interference, d->settings.irq_min_ns,
				 d->settings.lock_min_ns);
	if (d->settings.interference & capture_interference_missing(d->capture)) {
		char buf[64];

		log_warning("This kernel lacks tracepoints for some of --interference: %s (not captured)",
			    interference_text(d->settings.interference & capture_interference_missing(d->capture), buf,
					      sizeof(buf)));
	}
	r = capture_set_cpus(d->capture, d->settings.cpus, ARRAY_SIZE(d->settings.cpus));
	if (r < 0)
		return log_error_errno(r, "Failed to set the CPU mask: %m");
	{
		bool any = false;

		for (size_t i = 0; i < ARRAY_SIZE(d->settings.cpus); i++)
			any |= d->settings.cpus[i] != 0;
		r = recorder_enable_host(d->recorder, any);
		if (r < 0)
			return log_error_errno(r, "Failed to set up the host-wide recorder: %m");
	}
	r = capture_set_sampling(d->capture, d->settings.sample_hz);
	if (r < 0)
		return log_error_errno(r, "Failed to start on-CPU sampling at %u Hz: %m", d->settings.sample_hz);
	for (size_t i = 0; i < d->settings.n_pids; i++) {
		uint32_t pid = d->settings.pids[i];

		if (recorder_find_live(d->recorder, pid))
			continue;
		r = daemon_watch_pid(d, pid, HP_WATCH_PID);
		if (r == -ENOENT)
			return log_error_errno(r, "No process with pid %u (--pid): check the pid with `ps -p %u`", pid, pid);
		if (r < 0)
			return log_error_errno(r, "Failed to watch pid %u: %m", pid);
	}
	r = scan_proc(d);
	if (r < 0)
		return log_error_errno(r, "Failed to scan /proc: %m");
	return 0;
}

int daemon_add_glob(struct daemon *d, const char *glob)
{
	struct settings *s = &d->settings;
	char **v, *copy;
	int r;

	if (!thread_glob_valid(glob))
		return -EINVAL;
	for (size_t i = 0; i < s->n_watch_threads; i++)
		if (!strcmp(s->watch_threads[i], glob))
			return 0;
	if (s->n_watch_threads >= HP_MAX_GLOBS)
		return -E2BIG;
	copy = strdup(glob);
	if (!copy)
		return -ENOMEM;
	v = realloc(s->watch_threads, (s->n_watch_threads + 1) * sizeof(*v));
	if (!v) {
		free(copy);
		return -ENOMEM;
	}
	s->watch_threads = v;
	s->watch_threads[s->n_watch_threads++] = copy;
	r = capture_set_globs(d->capture, s->watch_threads, s->n_watch_threads);
	if (r < 0)
		return r;
	return scan_proc(d);
}

int daemon_remove_glob(struct daemon *d, const char *glob)
{
	struct settings *s = &d->settings;

	for (size_t i = 0; i < s->n_watch_threads; i++) {
		if (strcmp(s->watch_threads[i], glob))
			continue;
		free(s->watch_threads[i]);
		memmove(&s->watch_threads[i], &s->watch_threads[i + 1],
			(s->n_watch_threads - i - 1) * sizeof(*s->watch_threads));
		s->n_watch_threads--;
		return capture_set_globs(d->capture, s->watch_threads, s->n_watch_threads);
	}
	return -ENOENT;
}

/* SIGHUP: read the config again; flags still win. What needs a restart says so. */
int daemon_reload(struct daemon *d)
{
	struct settings s;
	struct recorder_limits lim;
	int r;

	r = settings_load(d->argc, d->argv, &s);
	if (r != 0) {
		log_error("Reload failed: the configuration above has errors; keeping the running one");
		return r < 0 ? r : -EINVAL;
	}
	if (strcmp(s.socket, d->settings.socket) || s.ring_kb != d->settings.ring_kb ||
	    s.force_raw_tp != d->settings.force_raw_tp)
		log_warning("socket, ring_kb and force_raw_tp change only with a restart, ignoring");
	free(s.socket);
	s.socket = TAKE_PTR(d->settings.socket);
	s.ring_kb = d->settings.ring_kb;
	s.force_raw_tp = d->settings.force_raw_tp;
	settings_free(&d->settings);
	d->settings = s;
	recorder_limits_from(&d->settings, &lim);
	recorder_set_limits(d->recorder, &lim);
	r = triggers_configure(d->triggers, d->settings.triggers, d->settings.n_triggers);
	if (r < 0)
		log_error_errno(r, "Failed to set up the triggers: %m; keeping the old ones");
	if (d->snapstore && strcmp(snapstore_dir(d->snapstore), d->settings.snapshot_dir)) {
		snapstore_free(d->snapstore);
		d->snapstore = NULL;
	}
	if (daemon_snapstore(d))
		snapstore_set_limits(d->snapstore, d->settings.max_snapshots, d->settings.max_snapshot_mb << 20);
	r = apply_watch_settings(d);
	if (r < 0)
		return r;
	log_info("reloaded");
	return 0;
}

/* One-shot mode: capture for the duration (or until the process exits), write the
 * formats, exit. */
static int record(struct daemon *d)
{
	uint32_t pid = d->settings.pids[0];
	unsigned formats = d->settings.record_formats ? d->settings.record_formats
						      : 1u << FMT_HPS | 1u << FMT_PERFETTO | 1u << FMT_REPORT;
	Hostprof__Snapshot *snap = NULL;
	struct formats_out out = {};
	const struct proc_rec *p;
	uint8_t *data = NULL;
	uint64_t events = 0;
	size_t len = 0;
	char dur[32];
	int r;

	d->record_deadline = now_boottime_ns() + d->settings.duration_ns;
	log_info("recording pid %u for %s", pid, format_duration(d->settings.duration_ns, dur, sizeof(dur)));
	r = loop_run(d);
	if (r < 0)
		return EXIT_FAILURE;
	(void)capture_drain(d->capture);
	p = recorder_find(d->recorder, pid);
	if (!p)
		return log_error("pid %u left no history", pid), EXIT_FAILURE;
	r = daemon_build_snapshot(d, p, 0, 0, "record", NULL, 0, &data, &len, &events);
	if (r >= 0)
		r = hps_unpack(data, len, &snap);
	if (r >= 0)
		r = formats_write(snap, data, len, formats, d->settings.output, true, 0644, &out);
	if (r < 0) {
		log_error_errno(r, "Failed to write %s: %m", d->settings.output);
		r = EXIT_FAILURE;
	} else {
		for (size_t i = 0; i < out.n; i++)
			printf("%s\n", out.paths[i]);
		log_info("pid %u: %llu events in %zu files", pid, (unsigned long long)events, out.n);
		r = EXIT_SUCCESS;
	}
	formats_out_free(&out);
	hps_free(snap);
	free(data);
	return r;
}

static int run(struct daemon *d)
{
	struct capture_opts copts = {
		.ring_kb = d->settings.ring_kb,
		.force_raw_tp = d->settings.force_raw_tp,
	};
	struct recorder_limits lim;
	int r;

	if (geteuid() != 0) {
		log_error("hostprofd must run as root: it loads BPF programs (CAP_BPF, CAP_PERFMON)");
		return EXIT_CONFIG;
	}
	recorder_limits_from(&d->settings, &lim);
	d->recorder = recorder_new(&lim);
	if (!d->recorder)
		return log_error_errno(-ENOMEM, "Out of memory"), EXIT_FAILURE;
	d->symbolizer = symbolizer_new();
	if (!d->symbolizer) {
		log_warning_errno(-errno, "Failed to set up symbolization: %m; stacks stay addresses");
	} else {
		struct sym_result res;

		/* load kallsyms now, once: snapshot jobs inherit it instead of reading it each */
		(void)symbolizer_resolve(d->symbolizer, 0, 0xffffffff81000000ULL, true, &res);
	}
	d->triggers = triggers_new();
	if (!d->triggers)
		return log_error_errno(-ENOMEM, "Out of memory"), EXIT_FAILURE;
	r = triggers_configure(d->triggers, d->settings.triggers, d->settings.n_triggers);
	if (r < 0)
		return log_error_errno(r, "Failed to set up the triggers: %m"), EXIT_CONFIG;
	if (d->settings.n_triggers)
		(void)daemon_snapstore(d);

	r = capture_new(&copts, on_record, d, &d->capture);
	if (r == -ENOTSUP) {
		log_error("This kernel has no BTF (/sys/kernel/btf/vmlinux is missing): hostprofd needs a "
			  "kernel built with CONFIG_DEBUG_INFO_BTF=y (5.8 or newer)");
		return EXIT_CONFIG;
	}
	if (r == -EPERM || r == -EACCES) {
		log_error_errno(r, "Failed to load the BPF programs: %m; hostprofd needs CAP_BPF and CAP_PERFMON "
				   "(run it as root)");
		return EXIT_CONFIG;
	}
	if (r < 0) {
		log_error_errno(r, "Failed to load the BPF programs: %m");
		return EXIT_CONFIG;
	}
	log_info("BPF programs attached (%s), %d CPUs, %u KiB ring each",
		 capture_uses_raw_tp(d->capture) ? "raw_tp" : "tp_btf", capture_nr_cpus(d->capture),
		 d->settings.ring_kb);

	if (apply_watch_settings(d) < 0)
		return EXIT_CONFIG;
	r = loop_setup(d);
	if (r < 0)
		return log_error_errno(r, "Failed to set up the event loop: %m"), EXIT_FAILURE;
	if (d->settings.record)
		return record(d);
	r = control_new(d, &d->control);
	if (r < 0)
		return EXIT_CONFIG; /* control_new logged why */

	(void)sd_notify(0, "READY=1\nSTATUS=capturing");
	log_info("ready");
	r = loop_run(d);
	(void)sd_notify(0, "STOPPING=1");
	return r < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}

int main(int argc, char **argv)
{
	struct daemon d = { .argc = argc, .argv = argv, .epoll_fd = -1 };
	int r;

	log_open("hostprofd");
	r = settings_load(argc, argv, &d.settings);
	if (r > 0)
		return EXIT_SUCCESS;
	if (r < 0)
		return EXIT_CONFIG;
	if (d.settings.verbose)
		log_set_max_level(LOG_DEBUG);
	if (d.settings.record) {
		/* one process, by pid: no thread patterns, no triggers */
		for (size_t i = 0; i < d.settings.n_watch_threads; i++)
			free(d.settings.watch_threads[i]);
		d.settings.n_watch_threads = 0;
		d.settings.n_triggers = 0;
	}
	d.start_ns = now_boottime_ns();

	r = run(&d);

	control_free(d.control);
	loop_teardown(&d);
	capture_free(d.capture); /* detaches every program */
	recorder_free(d.recorder);
	symbolizer_free(d.symbolizer);
	snapjob_kill_all();
	triggers_free(d.triggers);
	snapstore_free(d.snapstore);
	settings_free(&d.settings);
	return r;
}
