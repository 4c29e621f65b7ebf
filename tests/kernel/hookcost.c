// SPDX-License-Identifier: GPL-2.0-only
/*
 * hookcost: what a syscall pays for hostprof's syscall hooks, attached as today (raw
 * tracepoints sys_enter/sys_exit, which every syscall of the machine runs) and as fentry/
 * fexit on one syscall function would be (only that syscall runs them). README's
 * Performance section calls the second future work: a node that allows fentry.
 *
 * Usage: hookcost [ROUNDS [CALLS]]     (default 7 rounds of 20000 calls each)
 *
 * Each round times CALLS getppid() calls (and getuid(), which no fentry here hooks) in each
 * setting, the settings interleaved so that drift spreads over all of them; the median over
 * rounds is printed, in ns per call and over the bare call:
 *   bare                          nothing attached
 *   hostprof, unwatched/watched   the daemon's own programs (daemon/capture.c) with their
 *                                 syscall hooks attached, the caller watched or not
 *   raw_tp, unwatched/watched     tests/kernel/hookcost.bpf.c's hook on sys_enter/sys_exit
 *   fentry, unwatched/watched     the same hook as fentry/fexit on getppid's function
 * Timing is reported, not judged. What is checked (exit 1 if not): the watched settings
 * counted exactly the calls made, the unwatched ones none. Exit 77 when not root, without
 * BTF, or when the kernel refuses fentry/fexit (the raw_tp numbers are printed first).
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "capture.h"
#include "hookcost.skel.h"
#include "macro.h"

#define HIST_BUCKETS 32
struct hist { /* hookcost.bpf.c's */
	uint64_t count;
	uint64_t total_ns;
	uint64_t buckets[HIST_BUCKETS];
};

enum setting { BARE, HP_UNW, HP_W, RAW_UNW, RAW_W, FENTRY_UNW, FENTRY_W, N_SETTINGS };
static const char *const setting_names[N_SETTINGS] = {
	[BARE] = "bare",
	[HP_UNW] = "hostprof sys_enter/exit, unwatched",
	[HP_W] = "hostprof sys_enter/exit, watched",
	[RAW_UNW] = "raw_tp sys_enter/exit, unwatched",
	[RAW_W] = "raw_tp sys_enter/exit, watched",
	[FENTRY_UNW] = "fentry/fexit getppid, unwatched",
	[FENTRY_W] = "fentry/fexit getppid, watched",
};

#define MAX_ROUNDS 101
static double ns_ppid[N_SETTINGS][MAX_ROUNDS], ns_uid[N_SETTINGS][MAX_ROUNDS];
static int failures;

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static double time_calls(long nr, int calls)
{
	uint64_t t0 = mono_ns();

	for (int i = 0; i < calls; i++)
		syscall(nr);
	return (double)(mono_ns() - t0) / calls;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	qsort(v, n, sizeof(*v), cmp_double);
	return v[n / 2];
}

static void on_record(void *ud, const struct hp_hdr *h)
{
}

struct hp_count {
	uint32_t tid;
	uint64_t count;
};

static void on_hist(void *ud, const struct hp_hist_key *key, const struct hp_hist *h)
{
	struct hp_count *c = ud;

	if (key->tid == c->tid && key->nr == SYS_getppid)
		c->count += h->count;
}

/* getppid calls of this thread in hostprof's histograms */
static uint64_t hostprof_count(struct capture *c)
{
	struct hp_count n = { .tid = syscall(SYS_gettid) };

	capture_for_each_histogram(c, getpid(), on_hist, &n);
	return n.count;
}

/* this thread's calls of syscall nr in hookcost.bpf.c's histograms; cleared */
static uint64_t hookcost_count(struct hookcost_bpf *skel, uint32_t nr)
{
	struct { /* hookcost.bpf.c's struct hist_key */
		uint32_t tid, nr;
	} key = { syscall(SYS_gettid), nr };
	struct hist h;

	if (bpf_map__lookup_elem(skel->maps.hist, &key, sizeof(key), &h, sizeof(h), 0) < 0)
		return 0;
	bpf_map__delete_elem(skel->maps.hist, &key, sizeof(key), 0);
	return h.count;
}

static void set_watched(struct hookcost_bpf *skel, bool on)
{
	uint32_t tgid = getpid(), one = 1;

	if (on)
		bpf_map__update_elem(skel->maps.watched, &tgid, sizeof(tgid), &one, sizeof(one), BPF_ANY);
	else
		bpf_map__delete_elem(skel->maps.watched, &tgid, sizeof(tgid), 0);
}

static struct bpf_link *attach(struct bpf_program *p)
{
	struct bpf_link *l = bpf_program__attach(p);

	if (!l) {
		fprintf(stderr, "attach %s: %s\n", bpf_program__name(p), strerror(errno));
		exit(1);
	}
	return l;
}

/* getppid's function as this kernel's BTF names it (SYSCALL_DEFINE0's wrappers), or NULL */
static const char *getppid_function(void)
{
	static const char *const names[] = { "__x64_sys_getppid", "__arm64_sys_getppid", "__do_sys_getppid",
					     "__se_sys_getppid" };
	struct btf *vmlinux = btf__load_vmlinux_btf();
	const char *found = NULL;

	for (size_t i = 0; vmlinux && !found && i < ARRAY_SIZE(names); i++)
		if (btf__find_by_name_kind(vmlinux, names[i], BTF_KIND_FUNC) > 0)
			found = names[i];
	btf__free(vmlinux);
	return found;
}

/*
 * Loads hookcost.bpf.c; fn NULL leaves the fentry programs out, else attaches them to fn.
 * Returns NULL with errno set where the kernel refuses them.
 */
static struct hookcost_bpf *load(const char *fn)
{
	struct hookcost_bpf *skel = hookcost_bpf__open();
	int r;

	if (!skel)
		return NULL;
	bpf_program__set_autoload(skel->progs.fentry_getppid, fn != NULL);
	bpf_program__set_autoload(skel->progs.fexit_getppid, fn != NULL);
	if (fn && (bpf_program__set_attach_target(skel->progs.fentry_getppid, 0, fn) < 0 ||
		   bpf_program__set_attach_target(skel->progs.fexit_getppid, 0, fn) < 0)) {
		hookcost_bpf__destroy(skel);
		return NULL;
	}
	r = hookcost_bpf__load(skel);
	if (r < 0) {
		hookcost_bpf__destroy(skel);
		errno = -r;
		return NULL;
	}
	return skel;
}

/* fentry/fexit attach (where loading them passed): NULL with errno set if refused */
static bool fentry_attaches(struct hookcost_bpf *skel)
{
	struct bpf_link *a = bpf_program__attach(skel->progs.fentry_getppid), *b;

	if (!a)
		return false;
	b = bpf_program__attach(skel->progs.fexit_getppid);
	bpf_link__destroy(a);
	if (!b)
		return false;
	bpf_link__destroy(b);
	return true;
}

static void round_of(enum setting s, int r, int calls, struct capture *c, struct hookcost_bpf *skel)
{
	struct bpf_link *l1 = NULL, *l2 = NULL;
	uint64_t before = 0, got, got_uid = 0;
	uint64_t want_uid = 0;
	bool watched = s == HP_W || s == RAW_W || s == FENTRY_W;
	int rc;

	switch (s) {
	case HP_UNW:
	case HP_W:
		if (s == HP_W)
			capture_watch(c, getpid(), HP_WATCH_PID, 0);
		before = hostprof_count(c);
		rc = capture_set_watching(c, true);
		if (rc < 0) {
			fprintf(stderr, "hostprof's syscall hooks: %s\n", strerror(-rc));
			exit(1);
		}
		break;
	case RAW_UNW:
	case RAW_W:
		set_watched(skel, watched);
		l1 = attach(skel->progs.rawtp_enter);
		l2 = attach(skel->progs.rawtp_exit);
		break;
	case FENTRY_UNW:
	case FENTRY_W:
		set_watched(skel, watched);
		l1 = attach(skel->progs.fentry_getppid);
		l2 = attach(skel->progs.fexit_getppid);
		break;
	default:
		break;
	}
	ns_ppid[s][r] = time_calls(SYS_getppid, calls);
	ns_uid[s][r] = time_calls(SYS_getuid, calls);
	bpf_link__destroy(l1);
	bpf_link__destroy(l2);
	if (s == HP_UNW || s == HP_W) {
		capture_set_watching(c, false);
		got = hostprof_count(c) - before;
		if (s == HP_W)
			capture_unwatch(c, getpid());
	} else if (s != BARE) {
		got = hookcost_count(skel, SYS_getppid);
		/* raw_tp runs for every syscall, fentry only for getppid */
		got_uid = hookcost_count(skel, SYS_getuid);
		want_uid = s == RAW_W ? calls : 0;
		set_watched(skel, false);
	} else {
		return;
	}
	if (got != (watched ? (uint64_t)calls : 0) || got_uid != want_uid) {
		fprintf(stderr, "FAIL: %s, round %d: %llu getppid and %llu getuid calls counted, want %d and %llu\n",
			setting_names[s], r, (unsigned long long)got, (unsigned long long)got_uid, watched ? calls : 0,
			(unsigned long long)want_uid);
		failures++;
	}
}

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 7, calls = argc > 2 ? atoi(argv[2]) : 20000;
	struct capture_opts opts = { .ring_kb = 256 };
	struct hookcost_bpf *skel;
	struct capture *c;
	bool fentry = true;
	int r, fentry_err = 0, n_settings;
	double bare_ppid, bare_uid;
	const char *note, *fn;

	if (rounds < 1 || rounds > MAX_ROUNDS || calls < 1) {
		fprintf(stderr, "usage: hookcost [ROUNDS (1..%d) [CALLS]]\n", MAX_ROUNDS);
		return 2;
	}
	if (geteuid() != 0) {
		printf("SKIP: needs root to load BPF programs\n");
		return 77;
	}
	r = capture_new(&opts, on_record, NULL, &c);
	if (r == -ENOTSUP) {
		printf("SKIP: kernel without BTF\n");
		return 77;
	}
	if (r < 0) {
		fprintf(stderr, "capture_new: %s\n", strerror(-r));
		return 1;
	}
	fn = getppid_function();
	skel = fn ? load(fn) : NULL;
	if (!skel || !fentry_attaches(skel)) {
		fentry_err = fn ? errno : ESRCH;
		fentry = false;
		hookcost_bpf__destroy(skel);
		skel = load(NULL);
		if (!skel) {
			fprintf(stderr, "hookcost.bpf.c without fentry: %s\n", strerror(errno));
			return 1;
		}
	}
	n_settings = fentry ? N_SETTINGS : FENTRY_UNW;
	for (r = 0; r < rounds; r++)
		for (int s = 0; s < n_settings; s++)
			round_of(s, r, calls, c, skel);

	note = getenv("HOOKCOST_NOTE");
	printf("%d rounds of %d calls, median ns per call (x the bare call)%s%s\n", rounds, calls, note ? ": " : "",
	       note ? note : "");
	if (fentry)
		printf("fentry/fexit on %s\n", fn);
	bare_ppid = median(ns_ppid[BARE], rounds);
	bare_uid = median(ns_uid[BARE], rounds);

	printf("  %-36s %26s %26s\n", "", "getppid (fentry's syscall)", "getuid (not fentry's)");
	for (int s = 0; s < n_settings; s++) {
		double p = median(ns_ppid[s], rounds), u = median(ns_uid[s], rounds);

		printf("  %-36s %8.0f ns %+6.0f (%5.2fx) %8.0f ns %+6.0f (%5.2fx)\n", setting_names[s], p, p - bare_ppid,
		       p / bare_ppid, u, u - bare_uid, u / bare_uid);
	}
	hookcost_bpf__destroy(skel);
	capture_free(c);
	if (failures)
		return 1;
	if (!fentry) {
		/* ESRCH: no such function in the kernel's BTF (libbpf's word too); 524: the kernel's
		 * ENOTSUPP, a trampoline it cannot attach (no ftrace direct calls on this arch) */
		printf("SKIP: no fentry/fexit on getppid's function here (%s): %s\n", fn ? fn : "none found",
		       fentry_err == ESRCH ? "the kernel's BTF does not have it"
		       : fentry_err == 524 ? "the kernel cannot attach a trampoline to it (ENOTSUPP)"
					   : strerror(fentry_err));
		return 77;
	}
	return 0;
}
