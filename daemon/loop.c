// SPDX-License-Identifier: GPL-2.0-only
/*
 * The one epoll loop: ring buffers, signals (signalfd), a 100 ms timer (timerfd), the
 * listening socket and its clients. Nothing here blocks.
 *
 * The BPF side wakes the daemon only once a ring holds wakeup_bytes; the timer drains
 * whatever is left, so records are at most ~100 ms old when a snapshot is taken.
 */
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "hostprofd.h"
#include "log.h"
#include "macro.h"
#include <systemd/sd-daemon.h>
#include "symbolize.h"

#define TICK_NS (100 * NSEC_PER_MSEC)
#define TICKS_PER_SEC 10

uint64_t now_boottime_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_BOOTTIME, &ts);
	return ts.tv_sec * NSEC_PER_SEC + ts.tv_nsec;
}

int loop_add(struct daemon *d, struct io_source *src, uint32_t events)
{
	struct epoll_event ev = { .events = events, .data.ptr = src };

	return epoll_ctl(d->epoll_fd, EPOLL_CTL_ADD, src->fd, &ev) < 0 ? -errno : 0;
}

int loop_mod(struct daemon *d, struct io_source *src, uint32_t events)
{
	struct epoll_event ev = { .events = events, .data.ptr = src };

	return epoll_ctl(d->epoll_fd, EPOLL_CTL_MOD, src->fd, &ev) < 0 ? -errno : 0;
}

void loop_del(struct daemon *d, struct io_source *src)
{
	(void)epoll_ctl(d->epoll_fd, EPOLL_CTL_DEL, src->fd, NULL);
}

/* A watched process is gone (or unwatched): keep its syscall histograms with its
 * history, and stop watching its pid in the kernel. */
void daemon_process_gone(struct daemon *d, struct proc_rec *p)
{
	uint32_t pid = p->info.pid;
	int r;

	r = daemon_histograms(d, p, &p->final_hists, &p->n_final_hists);
	if (r < 0)
		log_warning_errno(r, "Failed to save the syscall histograms of pid %u: %m, ignoring", pid);
	p->hists_saved = true;
	capture_forget_histograms(d->capture, pid);
	r = capture_unwatch(d->capture, pid);
	if (r < 0)
		log_warning_errno(r, "Failed to stop watching pid %u: %m, ignoring", pid);
}

static void on_gone(void *ud, struct proc_rec *p)
{
	daemon_process_gone(ud, p);
}

/* Its history aged out: the symbols only it needed can go. */
static void on_freed(void *ud, uint32_t pid)
{
	struct daemon *d = ud;

	if (d->symbolizer && !recorder_find(d->recorder, pid))
		symbolizer_forget_process(d->symbolizer, pid);
}

/* Note the mappings of processes that execed or mapped code since the last tick, so
 * their frames resolve even after they exit. Off the drain path: once a second. */
static void refresh_maps(struct daemon *d)
{
	for (size_t i = 0; i < recorder_count(d->recorder); i++) {
		struct proc_rec *p = recorder_at(d->recorder, i);
		int r;

		if (p->exit_ns)
			continue;
		capture_filter_touch(d->capture, p->info.pid);
		if (!p->maps_dirty)
			continue;
		p->maps_dirty = false;
		if (!d->symbolizer)
			continue;
		r = symbolizer_refresh_process(d->symbolizer, p->info.pid);
		if (r < 0 && r != -ENOENT && r != -ESRCH)
			log_debug("Failed to read the mappings of pid %u: %s", p->info.pid, strerror(-r));
	}
}

static int on_capture(struct io_source *src, uint32_t events)
{
	struct daemon *d = (struct daemon *)((char *)src - offsetof(struct daemon, capture_src));
	int r = capture_drain(d->capture);

	return r < 0 ? log_error_errno(r, "Failed to drain the ring buffers: %m") : 0;
}

static int on_timer(struct io_source *src, uint32_t events)
{
	struct daemon *d = (struct daemon *)((char *)src - offsetof(struct daemon, timer_src));
	uint64_t expirations, now;
	int r;

	if (read(src->fd, &expirations, sizeof(expirations)) < 0 && errno != EAGAIN)
		return log_error_errno(-errno, "Failed to read the timer: %m");
	r = capture_drain(d->capture);
	if (r < 0)
		return log_error_errno(r, "Failed to drain the ring buffers: %m");
	/* the syscall and interference hooks: only while something is watched */
	r = capture_set_watching(d->capture, recorder_live_count(d->recorder) > 0);
	if (r < 0)
		log_warning_errno(r, "Failed to %s the syscall hooks: %m, ignoring",
				  recorder_live_count(d->recorder) ? "attach" : "detach");
	triggers_tick(d->triggers, d, now_boottime_ns());
	/* --record: the duration is over, or the process is gone */
	if (d->record_deadline && (now_boottime_ns() >= d->record_deadline || !recorder_live_count(d->recorder)))
		d->quit = true;
	if (d->watchdog_ticks && d->ticks % d->watchdog_ticks == 0)
		(void)sd_notify(0, "WATCHDOG=1");
	if (++d->ticks % TICKS_PER_SEC)
		return 0;

	now = now_boottime_ns();
	recorder_tick(d->recorder, now, on_gone, on_freed, d);
	control_tick(d->control, now);
	refresh_maps(d);
	if (d->rate_ns && now > d->rate_ns)
		d->events_per_sec = (double)(recorder_events(d->recorder) - d->rate_events) * NSEC_PER_SEC /
				    (now - d->rate_ns);
	d->rate_ns = now;
	d->rate_events = recorder_events(d->recorder);
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
			d->quit = true;
			break;
		case SIGHUP:
			log_info("SIGHUP: reloading %s", d->settings.config);
			(void)daemon_reload(d);
			break;
		}
	}
	return 0;
}

int loop_setup(struct daemon *d)
{
	struct itimerspec its = {
		.it_interval = { .tv_nsec = TICK_NS },
		.it_value = { .tv_nsec = TICK_NS },
	};
	sigset_t mask;
	int r;

	d->epoll_fd = epoll_create1(EPOLL_CLOEXEC);
	if (d->epoll_fd < 0)
		return -errno;

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
	r = loop_add(d, &d->signal_src, EPOLLIN);
	if (r < 0)
		return r;

	/* systemd's watchdog: ping at half of WatchdogSec, from the loop, so a stuck loop is caught */
	{
		uint64_t usec = 0;

		if (sd_watchdog_enabled(0, &usec) > 0 && usec)
			d->watchdog_ticks = MAX(usec * NSEC_PER_USEC / 2 / TICK_NS, (uint64_t)1);
	}
	d->timer_src.fd = timerfd_create(CLOCK_BOOTTIME, TFD_NONBLOCK | TFD_CLOEXEC);
	if (d->timer_src.fd < 0)
		return -errno;
	if (timerfd_settime(d->timer_src.fd, 0, &its, NULL) < 0)
		return -errno;
	d->timer_src.dispatch = on_timer;
	r = loop_add(d, &d->timer_src, EPOLLIN);
	if (r < 0)
		return r;

	d->capture_src.fd = capture_fd(d->capture);
	d->capture_src.dispatch = on_capture;
	return loop_add(d, &d->capture_src, EPOLLIN);
}

int loop_run(struct daemon *d)
{
	struct epoll_event events[64];

	while (!d->quit) {
		int n = epoll_wait(d->epoll_fd, events, ARRAY_SIZE(events), -1);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return log_error_errno(-errno, "epoll_wait failed: %m");
		}
		for (int i = 0; i < n; i++) {
			struct io_source *src = events[i].data.ptr;
			int r = src->dispatch(src, events[i].events);

			if (r < 0)
				return r;
		}
		/* clients closed in this batch are freed only now: a later event may name them */
		control_gc(d->control);
	}
	return 0;
}

void loop_teardown(struct daemon *d)
{
	if (d->signal_src.fd > 0)
		close(d->signal_src.fd);
	if (d->timer_src.fd > 0)
		close(d->timer_src.fd);
	if (d->epoll_fd > 0)
		close(d->epoll_fd);
}
