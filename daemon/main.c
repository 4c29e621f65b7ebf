// SPDX-License-Identifier: GPL-2.0-only
/*
 * hostprofd: flags and config, wiring the modules together, the tick and the signals,
 * shutdown. What the modules are and how they depend on each other: docs/ARCHITECTURE.md.
 *
 * Exit status: 0 after SIGTERM/SIGINT, 2 for a configuration or kernel error at start
 * (systemd must not restart it in a loop), 1 for a failure while running.
 */
#include <errno.h>
#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/timerfd.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include <bpf/libbpf.h>

#include "capture.h"
#include "control.h"
#include "daemon.h"
#include "gilwatch.h"
#include "log.h"
#include "macro.h"
#include "metrics.h"
#include "python.h"
#include "rawsample.h"
#include "recorder.h"
#include "snapstore.h"
#include "snapsvc.h"
#include "symbolize.h"
#include "trigger.h"
#include "watch.h"
#include "worker.h"

#define EXIT_CONFIG 2
#define TICK_NS (100 * NSEC_PER_MSEC)
#define TICKS_PER_SEC 10

static void recorder_limits_from(const struct settings *s, struct recorder_limits *ret)
{
	*ret = (struct recorder_limits){
		.window_ns = s->window_ns,
		.buffer_bytes = s->buffer_mb << 20,
		.memory_bytes = s->memory_mb << 20,
		.host_bytes = 64ULL << 20,
		.user_bytes = s->user_memory_mb << 20,
		.user_procs = s->user_watched,
	};
}

void daemon_log_snapdir_error(int r, const char *dir)
{
	if (r == -EPERM || r == -ENOTDIR)
		log_error("The snapshot directory %s is %s: refusing to serve files from it (make it a directory "
			  "of root's, mode 0700); automatic snapshots are lost until it is",
			  dir, r == -EPERM ? "not root's, or writable by others" : "not a directory");
	else
		log_error_errno(r, "Failed to use the snapshot directory %s: %m; automatic snapshots are lost until it works",
				dir);
}

int daemon_apply_settings(struct daemon *d)
{
	const struct settings *s = &d->settings;
	struct recorder_limits lim;
	struct snapsvc_params params = {
		.syscall_min_ns = s->syscall_min_ns,
		.offcpu_min_ns = s->offcpu_min_ns,
		.sample_hz = s->sample_hz,
		.irq_min_ns = s->irq_min_ns,
		.lock_min_ns = s->lock_min_ns,
		.gil_min_ns = s->gil_min_ns,
		.python = s->python,
	};
	unsigned missing;
	bool any_cpu = false;
	int r;

	memcpy(params.dispatch_threads, s->dispatch_threads, sizeof(params.dispatch_threads));
	params.n_dispatch_threads = s->n_dispatch_threads;
	recorder_limits_from(s, &lim);
	recorder_set_limits(d->recorder, &lim);
	if (d->symbolizer)
		symbolizer_set_budget(d->symbolizer, s->symbolizer_mb << 20);
	snapsvc_set_params(d->snapsvc, &params);
	watch_set_python(d->watch, s->python, s->python_gc);
	capture_set_thresholds(d->capture, s->syscall_min_ns, s->offcpu_min_ns);
	capture_set_gil_min(d->capture, s->gil_min_ns);
	gilwatch_set_enabled(d->gilwatch, s->python);
	r = capture_set_syscall_mode(d->capture, s->syscall_mode);
	if (r == -EOPNOTSUPP) {
		log_warning("syscalls = blocking needs bpf_task_pt_regs (Linux 5.15): syscalls = exact instead");
		r = capture_set_syscall_mode(d->capture, HP_SYSCALLS_EXACT);
	}
	if (r < 0)
		log_warning_errno(r, "Failed to attach the hooks of syscalls = %s: %m, ignoring",
				  syscall_mode_name(s->syscall_mode));
	else if (capture_syscall_mode(d->capture, NULL) == HP_SYSCALLS_BLOCKING &&
		 capture_maps_hook_missing(d->capture))
		log_warning("This kernel lacks the mmap_lock tracepoints (5.12): with syscalls = blocking a process's "
			    "mappings are read again only at an exec, and a library it loads later may not resolve");
	capture_set_interference(d->capture, s->interference, s->irq_min_ns, s->lock_min_ns);
	missing = s->interference & capture_interference_missing(d->capture);
	if (missing) {
		char buf[64];

		log_warning("This kernel lacks tracepoints for some of --interference: %s (not captured)",
			    interference_text(missing, buf, sizeof(buf)));
	}
	r = capture_set_cpus(d->capture, s->cpus, ARRAY_SIZE(s->cpus));
	if (r < 0)
		return log_error_errno(r, "Failed to set the CPU mask: %m");
	for (size_t i = 0; i < ARRAY_SIZE(s->cpus); i++)
		any_cpu |= s->cpus[i] != 0;
	r = recorder_enable_host(d->recorder, any_cpu);
	if (r < 0)
		return log_error_errno(r, "Failed to set up the host-wide recorder: %m");
	r = capture_set_unwind(d->capture, s->unwind == UNWIND_MODE_OFF ? 0 : s->unwind_stack_kb * 1024,
			       s->unwind == UNWIND_MODE_NAMED);
	if (r == -EOPNOTSUPP)
		log_warning("unwind = %s needs bpf_task_pt_regs (Linux 5.15): user stacks by frame pointers only",
			    unwind_mode_name(s->unwind));
	else if (r < 0)
		return log_error_errno(r, "Failed to set unwind = %s: %m", unwind_mode_name(s->unwind));
	r = capture_set_sampling(d->capture, s->sample_hz);
	if (r < 0)
		return log_error_errno(r, "Failed to start on-CPU sampling at %u Hz: %m", s->sample_hz);
	for (size_t i = 0; i < s->n_pids; i++) {
		uint32_t pid = s->pids[i];

		r = watch_pid(d->watch, pid, HP_WATCH_PID);
		if (r == -ENOENT)
			return log_error_errno(r, "No process with pid %u (--pid): check the pid with `ps -p %u`", pid, pid);
		if (r < 0)
			return log_error_errno(r, "Failed to watch pid %u: %m", pid);
	}
	r = watch_set_globs(d->watch, s->watch_threads, s->n_watch_threads);
	if (r < 0)
		return log_error_errno(r, "Failed to set thread patterns: %m");
	return 0;
}

static int on_capture(struct io_source *src, uint32_t events)
{
	struct daemon *d = (struct daemon *)((char *)src - offsetof(struct daemon, capture_src));
	int r = capture_drain_woken(d->capture);

	return r < 0 ? log_error_errno(r, "Failed to drain the ring buffers: %m") : 0;
}

/* Every 100 ms: drain what did not reach wakeup_bytes, take due trigger snapshots;
 * once a second: age the recorder, find exited processes, housekeeping. */
static int on_timer(struct io_source *src, uint32_t events)
{
	struct daemon *d = (struct daemon *)((char *)src - offsetof(struct daemon, timer_src));
	uint64_t expirations, now;
	bool watching;
	int r;

	if (read(src->fd, &expirations, sizeof(expirations)) < 0 && errno != EAGAIN)
		return log_error_errno(-errno, "Failed to read the timer: %m");
	r = capture_drain(d->capture);
	if (r < 0)
		return log_error_errno(r, "Failed to drain the ring buffers: %m");
	/* the syscall and interference hooks: only while something is watched */
	watching = recorder_live_count(d->recorder) > 0;
	r = capture_set_watching(d->capture, watching);
	if (r < 0)
		log_warning_errno(r, "Failed to %s the hooks and samples of watched processes: %m, ignoring",
				  watching ? "start" : "stop");
	now = now_boottime_ns();
	triggers_tick(d->triggers, now);
	snapsvc_tick(d->snapsvc);
	/* --record: the duration is over, or the process is gone */
	if (d->record_deadline && (now >= d->record_deadline || !watching))
		loop_quit(d->loop);
	if (d->watchdog_ticks && d->ticks % d->watchdog_ticks == 0)
		(void)sd_notify(0, "WATCHDOG=1");
	/* every tick: a process watched since is looked at for its GIL at once */
	gilwatch_tick(d->gilwatch, now);
	watch_tick_new(d->watch, now);
	if (++d->ticks % TICKS_PER_SEC)
		return 0;
	watch_tick(d->watch, now);
	control_tick(d->control, now);
	metrics_tick(d->metrics, now);
	return 0;
}

static int on_signal(struct io_source *src, uint32_t events)
{
	struct daemon *d = (struct daemon *)((char *)src - offsetof(struct daemon, signal_src));
	struct signalfd_siginfo si;

	while (read(src->fd, &si, sizeof(si)) == sizeof(si)) {
		switch (si.ssi_signo) {
		case SIGTERM:
		case SIGINT:
			log_info("signal %s: detaching and exiting", strsignal(si.ssi_signo));
			loop_quit(d->loop);
			break;
		case SIGHUP:
			log_info("SIGHUP: reloading %s", d->settings.config);
			(void)daemon_reload(d);
			break;
		}
	}
	return 0;
}

static int on_worker(struct io_source *src, uint32_t events)
{
	struct daemon *d = (struct daemon *)((char *)src - offsetof(struct daemon, worker_src));
	int r = worker_dispatch(d->worker);

	if (r < 0)
		log_warning_errno(r, "Failed to take the worker's results: %m, ignoring");
	return 0;
}

static void after_batch(void *ud)
{
	struct daemon *d = ud;

	control_gc(d->control);
	/* the code objects of the Python stacks just drained, read while the process lives */
	if (d->py_names && d->worker)
		(void)py_names_flush(d->py_names, d->worker);
}

/* The daemon's own fds: signals, the tick, the rings. */
static int setup_sources(struct daemon *d)
{
	struct itimerspec its = {
		.it_interval = { .tv_nsec = TICK_NS },
		.it_value = { .tv_nsec = TICK_NS },
	};
	uint64_t usec = 0;
	sigset_t mask;
	int r;

	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGHUP);
	if (sigprocmask(SIG_BLOCK, &mask, NULL) < 0)
		return -errno;
	signal(SIGPIPE, SIG_IGN);
	d->signal_src.fd = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
	if (d->signal_src.fd < 0)
		return -errno;
	d->signal_src.dispatch = on_signal;
	r = loop_add(d->loop, &d->signal_src, EPOLLIN);
	if (r < 0)
		return r;

	/* systemd's watchdog: ping at half of WatchdogSec, from the loop, so a stuck loop is caught */
	if (sd_watchdog_enabled(0, &usec) > 0 && usec)
		d->watchdog_ticks = MAX(usec * NSEC_PER_USEC / 2 / TICK_NS, (uint64_t)1);
	d->timer_src.fd = timerfd_create(CLOCK_BOOTTIME, TFD_NONBLOCK | TFD_CLOEXEC);
	if (d->timer_src.fd < 0)
		return -errno;
	if (timerfd_settime(d->timer_src.fd, 0, &its, NULL) < 0)
		return -errno;
	d->timer_src.dispatch = on_timer;
	r = loop_add(d->loop, &d->timer_src, EPOLLIN);
	if (r < 0)
		return r;

	d->worker_src.fd = worker_fd(d->worker);
	d->worker_src.dispatch = on_worker;
	r = loop_add(d->loop, &d->worker_src, EPOLLIN);
	if (r < 0)
		return r;

	d->capture_src.fd = capture_fd(d->capture);
	d->capture_src.dispatch = on_capture;
	loop_set_after_batch(d->loop, after_batch, d);
	return loop_add(d->loop, &d->capture_src, EPOLLIN);
}

static void on_record(void *ud, const struct hp_hdr *rec)
{
	struct daemon *d = ud;
	union rawsample_out sample;
	union rawustack_out offcpu;

	/* a sample with its stack copied: the stack unwound now, only the frames kept */
	if (rec->type == HP_EV_RAWSAMPLE)
		rec = rawsample_unwind(d->symbolizer, (const struct hp_rawsample *)rec, &sample);
	/* an off-CPU interval's: kept (unwound) for the interval's record, which follows */
	if (rec->type == HP_EV_RAWUSTACK) {
		if (d->rawustacks)
			rawustack_note(d->rawustacks, d->symbolizer, (const struct hp_rawsample *)rec);
		return;
	}
	if ((rec->type == HP_EV_OFFCPU || rec->type == HP_EV_USTACK) && d->rawustacks)
		rec = rawustack_apply(d->rawustacks, d->symbolizer, rec, &offcpu);

	recorder_append(d->recorder, rec);
	gilwatch_on_record(d->gilwatch, rec);
	if (rec->type == HP_EV_PYSTACK && d->py_names)
		py_names_note(d->py_names, (const struct hp_pystack *)rec);
	triggers_on_record(d->triggers, d->recorder, rec);
}

/* libbpf's and the verifier's messages go to the daemon's log, at their level. */
static int libbpf_log(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	char buf[1024];
	size_t n;

	vsnprintf(buf, sizeof(buf), fmt, ap);
	n = strlen(buf);
	while (n && buf[n - 1] == '\n')
		buf[--n] = 0;
	if (!n)
		return 0;
	return log_internal(level == LIBBPF_WARN ? LOG_WARNING : level == LIBBPF_INFO ? LOG_INFO : LOG_DEBUG, 0,
			    "libbpf: %s", buf);
}

static int load_capture(struct daemon *d)
{
	struct capture_opts copts = {
		.ring_kb = d->settings.ring_kb,
		.force_raw_tp = d->settings.force_raw_tp,
		.force_task_hash = d->settings.force_task_hash,
	};
	int r;

	libbpf_set_print(libbpf_log);
	r = capture_new(&copts, on_record, d, &d->capture);
	if (r == -ENOTSUP)
		return log_error("This kernel has no BTF (/sys/kernel/btf/vmlinux is missing): hostprofd needs a "
				 "kernel built with CONFIG_DEBUG_INFO_BTF=y (5.8 or newer)"),
		       r;
	if (r == -EPERM || r == -EACCES)
		return log_error_errno(r, "Failed to load the BPF programs: %m; hostprofd needs CAP_BPF and CAP_PERFMON "
					  "(run it as root)");
	if (r < 0)
		return log_error_errno(r, "Failed to load the BPF programs: %m");
	log_info("BPF programs attached (%s), %d CPUs, %u KiB ring each; per-thread state in %s",
		 capture_uses_raw_tp(d->capture) ? "raw_tp" : "tp_btf", capture_nr_cpus(d->capture),
		 d->settings.ring_kb, capture_uses_task_storage(d->capture) ? "task storage" : "a hash map");
	return 0;
}

/* Make the modules, each with what it works with. */
static int make_modules(struct daemon *d)
{
	const struct settings *s = &d->settings;
	struct recorder_limits lim;
	int r;

	d->loop = loop_new();
	if (!d->loop)
		return log_error_errno(-errno, "Failed to create the event loop: %m"), EXIT_FAILURE;
	recorder_limits_from(s, &lim);
	d->recorder = recorder_new(&lim);
	if (!d->recorder)
		return log_error_errno(-ENOMEM, "Out of memory"), EXIT_FAILURE;
	d->symbolizer = symbolizer_new();
	d->rawustacks = rawustacks_new(); /* none: off-CPU user stacks by frame pointers */
	if (!d->symbolizer) {
		log_warning_errno(-errno, "Failed to set up symbolization: %m; stacks stay addresses");
	} else {
		struct sym_result res;

		symbolizer_set_budget(d->symbolizer, s->symbolizer_mb << 20);
		/* load kallsyms now, once: snapshot jobs inherit it instead of reading it each */
		(void)symbolizer_resolve(d->symbolizer, 0, 0xffffffff81000000ULL, true, &res);
	}
	/* files and memory of watched processes are read here, never in the loop */
	d->worker = worker_new(64);
	if (!d->worker)
		return log_error_errno(-errno, "Failed to start the worker thread: %m"), EXIT_FAILURE;
	d->snapstore = snapstore_new(s->snapshot_dir, s->max_snapshots, s->max_snapshot_mb << 20);
	if (!d->snapstore)
		return log_error_errno(-ENOMEM, "Out of memory"), EXIT_FAILURE;
	if (load_capture(d) < 0)
		return EXIT_CONFIG;
	d->watch = watch_new(d->capture, d->recorder, d->symbolizer, d->worker);
	d->gilwatch = gilwatch_new(d->capture, d->recorder, d->worker);
	d->snapsvc = snapsvc_new(d->loop, d->capture, d->recorder, d->symbolizer);
	d->py_names = py_names_new();
	if (!d->watch || !d->py_names)
		return log_error_errno(-ENOMEM, "Out of memory"), EXIT_FAILURE;
	watch_set_py_names(d->watch, d->py_names);
	if (d->snapsvc)
		snapsvc_set_py_names(d->snapsvc, d->py_names);
	if (d->snapsvc && snapsvc_set_worker(d->snapsvc, d->worker) < 0)
		return log_error_errno(-ENOMEM, "Out of memory"), EXIT_FAILURE;
	if (d->snapsvc)
		d->triggers = triggers_new(d->recorder, d->snapsvc, d->snapstore);
	if (!d->watch || !d->gilwatch || !d->snapsvc || !d->triggers)
		return log_error_errno(-ENOMEM, "Out of memory"), EXIT_FAILURE;
	r = triggers_configure(d->triggers, s->triggers, s->n_triggers, s->snapshot_formats);
	if (r < 0)
		return log_error_errno(r, "Failed to set up the triggers: %m"), EXIT_CONFIG;
	if (s->n_triggers) {
		r = snapstore_ready(d->snapstore);
		if (r < 0)
			daemon_log_snapdir_error(r, s->snapshot_dir);
	}
	return 0;
}

static int run(struct daemon *d)
{
	struct control_deps deps;
	int r;

	if (geteuid() != 0) {
		log_error("hostprofd must run as root: it loads BPF programs (CAP_BPF, CAP_PERFMON)");
		return EXIT_CONFIG;
	}
	r = make_modules(d);
	if (r != 0)
		return r;
	if (daemon_apply_settings(d) < 0)
		return EXIT_CONFIG;
	r = setup_sources(d);
	if (r < 0)
		return log_error_errno(r, "Failed to set up the event loop: %m"), EXIT_FAILURE;
	if (d->settings.record)
		return daemon_record(d);
	d->metrics = metrics_new(&(struct metrics_deps){
		.recorder = d->recorder,
		.snapsvc = d->snapsvc,
		.snapstore = d->snapstore,
		.triggers = d->triggers,
		.settings = &d->settings,
		.interference_missing = capture_interference_missing(d->capture),
	});
	if (!d->metrics)
		return log_error_errno(-ENOMEM, "Out of memory"), EXIT_FAILURE;
	deps = (struct control_deps){
		.loop = d->loop,
		.metrics = d->metrics,
		.recorder = d->recorder,
		.watch = d->watch,
		.snapsvc = d->snapsvc,
		.snapstore = d->snapstore,
		.triggers = d->triggers,
		.settings = &d->settings,
		.facts = {
			.ncpus = capture_nr_cpus(d->capture),
			.interference_missing = capture_interference_missing(d->capture),
		},
	};
	r = control_new(&deps, &d->control);
	if (r < 0)
		return EXIT_CONFIG; /* control_new logged why */

	/* what loading took and gave back (BTF, the programs' objects: ~10 MiB) back to the
	 * kernel: the heap's top would otherwise stay resident, as glibc's trim threshold
	 * grows with its large frees */
	(void)malloc_trim(0);
	(void)sd_notify(0, "READY=1\nSTATUS=capturing");
	log_info("ready");
	r = loop_run(d->loop);
	(void)sd_notify(0, "STOPPING=1");
	return r < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}

int main(int argc, char **argv)
{
	struct daemon d = {
		.argc = argc,
		.argv = argv,
		.signal_src.fd = -1,
		.timer_src.fd = -1,
	};
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

	r = run(&d);

	/* first: the jobs' owners (control, the triggers) hear of their end while they exist */
	snapjob_kill_all();
	control_free(d.control);
	metrics_free(d.metrics);
	/* first of the modules: its last completions (-ECANCELED) still find what they name */
	worker_free(d.worker);
	if (d.signal_src.fd >= 0)
		close(d.signal_src.fd);
	if (d.timer_src.fd >= 0)
		close(d.timer_src.fd);
	triggers_free(d.triggers);
	snapsvc_free(d.snapsvc);
	watch_free(d.watch);
	gilwatch_free(d.gilwatch);
	py_names_free(d.py_names);
	capture_free(d.capture); /* detaches every program */
	recorder_free(d.recorder);
	rawustacks_free(d.rawustacks);
	symbolizer_free(d.symbolizer);
	snapstore_free(d.snapstore);
	loop_free(d.loop);
	settings_free(&d.settings);
	return r;
}
