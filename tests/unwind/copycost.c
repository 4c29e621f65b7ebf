// SPDX-License-Identifier: GPL-2.0-only
/*
 * copycost: the cost of copying user stacks in BPF for the daemon to unwind (issue 19's
 * second design), measured here, and those copies unwound as the drain would. A target
 * (Debian's python3.11 in a Python loop, else the chain program given) is sampled on
 * cpu-clock at HZ by tests/unwind/copycost.bpf.c, for SECONDS in each setting:
 *
 *   fp only          bpf_get_stack of the user stack (what a sample pays today)
 *   copy N           and the user registers and N bytes of stack (4, 8, 16 KiB)
 *   copy N + ring    and the record through a 16 MiB ring buffer, drained here
 *   ... + unwind     and each record unwound here by symbolizer_unwind (the drain's part)
 *
 * Printed per setting: samples, ns per sample of each part (bpf_ktime_get_ns around it in
 * the program), bytes per record, copies that failed, ring drops; for the unwind, the
 * frames per stack (median), the share that reached _start, how they ended, and the
 * drain's time per record. Timing is reported, not judged; exit 1 only when the copies
 * unwound give no stack that reaches _start (the copy or the unwinder is broken).
 *
 * Usage: copycost CHAIN_BINARY [SECONDS [HZ [TID]]]   (default 2 s, 999 Hz); root; x86_64.
 * With TID, that running thread is sampled instead (a training job's training thread), in
 * the settings that unwind only; the exit status is then 0.
 */
#include <errno.h>
#include <inttypes.h>
#include <libelf.h>
#include <linux/perf_event.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "copycost.skel.h"
#include "macro.h"
#include "symbolize.h"

#define COPY_MAX 16384
#define CHUNK 4096
#define FP_MAX 64
#define PYTHON "/usr/bin/python3.11"

struct record { /* copycost.bpf.c's */
	uint32_t size, len, fp_len, pad;
	uint64_t regs[18];
	uint64_t fp[FP_MAX];
	uint8_t stack[COPY_MAX + CHUNK];
};

struct stats {
	uint64_t samples, fp_ns, regs_ns, copy_ns, ring_ns, bytes, copy_cut, ring_failed;
};

struct drain {
	struct symbolizer *sym;
	pid_t pid;
	bool unwind;
	uint64_t records, bytes, ns, reached_start;
	uint64_t stops[UNWIND_STOP_MAX];
	size_t *depths, *fp_depths, n_depths, cap;
	uint64_t fp_reached_start;
	struct { /* where stacks stopped for want of CFI: the module of their last frame */
		char module[128];
		uint64_t count;
	} no_cfi[8];
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * NSEC_PER_SEC + ts.tv_nsec;
}

/* CPU time, not wall time: the machine may be shared */
static uint64_t cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec * NSEC_PER_SEC + ts.tv_nsec;
}

static int on_record(void *ctx, void *data, size_t size)
{
	struct drain *d = ctx;
	const struct record *r = data;
	uint64_t frames[128], t0;
	struct unwind_regs regs = {};
	struct unwind_result u;
	struct sym_result sr;

	d->records++;
	d->bytes += size;
	if (!d->unwind || size < offsetof(struct record, stack) || r->len > size - offsetof(struct record, stack))
		return 0;
	memcpy(regs.r, r->regs, 17 * sizeof(uint64_t));
	regs.valid = (1ull << 17) - 1;
	t0 = cpu_ns();
	symbolizer_unwind(d->sym, d->pid, &regs, r->stack, r->len, frames, ARRAY_SIZE(frames), &u);
	d->ns += cpu_ns() - t0;
	d->stops[u.stop]++;
	if (u.stop == UNWIND_NO_CFI && u.n) {
		const char *mod;
		size_t i;

		symbolizer_resolve(d->sym, d->pid, frames[u.n - 1] - (u.n > 1), false, &sr);
		mod = sr.module ? sr.module : "[no mapping]";
		for (i = 0; i < ARRAY_SIZE(d->no_cfi) && d->no_cfi[i].count && strcmp(d->no_cfi[i].module, mod); i++)
			;
		if (i < ARRAY_SIZE(d->no_cfi)) {
			snprintf(d->no_cfi[i].module, sizeof(d->no_cfi[i].module), "%s", mod);
			d->no_cfi[i].count++;
		}
	}
	if (u.n && symbolizer_resolve(d->sym, d->pid, frames[u.n - 1] - 1, false, &sr) > 0 && sr.function &&
	    !strcmp(sr.function, "_start"))
		d->reached_start++;
	if (d->n_depths == d->cap) {
		size_t cap = d->cap ? 2 * d->cap : 4096;
		size_t *m = realloc(d->depths, cap * sizeof(*m)), *f;

		if (!m)
			return -ENOMEM;
		d->depths = m;
		f = realloc(d->fp_depths, cap * sizeof(*f));
		if (!f)
			return -ENOMEM;
		d->fp_depths = f;
		d->cap = cap;
	}
	d->depths[d->n_depths] = u.n;
	d->fp_depths[d->n_depths++] = r->fp_len;
	if (r->fp_len && r->fp_len <= FP_MAX &&
	    symbolizer_resolve(d->sym, d->pid, r->fp[r->fp_len - 1] - 1, false, &sr) > 0 && sr.function &&
	    !strcmp(sr.function, "_start"))
		d->fp_reached_start++;
	return 0;
}

static int cmp_size(const void *a, const void *b)
{
	size_t x = *(const size_t *)a, y = *(const size_t *)b;

	return x < y ? -1 : x > y;
}

static int run(pid_t target, struct symbolizer *sym, uint32_t copy, bool ring, bool unwind, unsigned secs,
	       unsigned hz, uint64_t *ret_reached)
{
	struct perf_event_attr attr = {
		.type = PERF_TYPE_SOFTWARE,
		.config = PERF_COUNT_SW_CPU_CLOCK,
		.size = sizeof(attr),
		.sample_freq = hz,
		.freq = 1,
	};
	struct drain d = { .sym = sym, .pid = target, .unwind = unwind };
	struct ring_buffer *rb = NULL;
	struct bpf_link *link = NULL;
	struct copycost_bpf *skel;
	struct stats sum = {}, *per;
	int ncpu = libbpf_num_possible_cpus(), fd = -1, r = 0;
	uint32_t zero = 0;
	uint64_t end;

	skel = copycost_bpf__open();
	if (!skel)
		return -errno;
	skel->rodata->target_tgid = target;
	skel->rodata->copy_bytes = copy;
	skel->rodata->to_ring = ring;
	r = copycost_bpf__load(skel);
	if (r < 0)
		goto out;
	fd = syscall(SYS_perf_event_open, &attr, target, -1, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd < 0) {
		r = -errno;
		goto out;
	}
	link = bpf_program__attach_perf_event(skel->progs.sample, fd);
	if (!link) {
		r = -errno;
		goto out;
	}
	rb = ring_buffer__new(bpf_map__fd(skel->maps.ring), on_record, &d, NULL);
	if (!rb) {
		r = -errno;
		goto out;
	}
	end = now_ns() + secs * NSEC_PER_SEC;
	while (now_ns() < end)
		ring_buffer__poll(rb, 100);
	ring_buffer__consume(rb);
	per = calloc(ncpu, sizeof(*per));
	if (!per || bpf_map__lookup_elem(skel->maps.stats, &zero, sizeof(zero), per, ncpu * sizeof(*per), 0) < 0) {
		free(per);
		r = -EIO;
		goto out;
	}
	for (int i = 0; i < ncpu; i++) {
		sum.samples += per[i].samples;
		sum.fp_ns += per[i].fp_ns;
		sum.regs_ns += per[i].regs_ns;
		sum.copy_ns += per[i].copy_ns;
		sum.ring_ns += per[i].ring_ns;
		sum.bytes += per[i].bytes;
		sum.copy_cut += per[i].copy_cut;
		sum.ring_failed += per[i].ring_failed;
	}
	free(per);
	if (!sum.samples) {
		printf("%-22s no samples\n", "");
		goto out;
	}
	printf("copy %5u%s%s: %6" PRIu64 " samples; ns/sample: fp %5.0f regs %4.0f copy %5.0f ring %5.0f"
	       "; %5.0f B copied/sample, %" PRIu64 " copies cut at the stack's end, %" PRIu64 " ring drops\n",
	       copy, ring ? " + ring" : "", unwind ? " + unwind" : "", sum.samples, (double)sum.fp_ns / sum.samples,
	       (double)sum.regs_ns / sum.samples, (double)sum.copy_ns / sum.samples,
	       ring ? (double)sum.ring_ns / sum.samples : 0.0, (double)sum.bytes / sum.samples, sum.copy_cut,
	       sum.ring_failed);
	if (unwind && d.n_depths) {
		qsort(d.depths, d.n_depths, sizeof(*d.depths), cmp_size);
		printf("    unwound %" PRIu64 " records: median %zu frames (min %zu, max %zu), %.1f%% reach _start,"
		       " %.1f us of CPU per unwind in the drain;",
		       d.records, d.depths[d.n_depths / 2], d.depths[0], d.depths[d.n_depths - 1],
		       100.0 * d.reached_start / d.n_depths, d.ns / 1e3 / d.n_depths);
		for (int i = 0; i < UNWIND_STOP_MAX; i++)
			if (d.stops[i])
				printf(" %s %" PRIu64, unwind_stop_name(i), d.stops[i]);
		printf("\n");
		qsort(d.fp_depths, d.n_depths, sizeof(*d.fp_depths), cmp_size);
		for (size_t i = 0; i < ARRAY_SIZE(d.no_cfi) && d.no_cfi[i].count; i++)
			printf("    no CFI at the last frame: %" PRIu64 " in %s\n", d.no_cfi[i].count, d.no_cfi[i].module);
		printf("    the same samples by frame pointers: median %zu frames (min %zu, max %zu), %.1f%% reach _start\n",
		       d.fp_depths[d.n_depths / 2], d.fp_depths[0], d.fp_depths[d.n_depths - 1],
		       100.0 * d.fp_reached_start / d.n_depths);
		*ret_reached = d.reached_start;
	}
out:
	free(d.depths);
	free(d.fp_depths);
	ring_buffer__free(rb);
	bpf_link__destroy(link);
	if (fd >= 0)
		close(fd);
	copycost_bpf__destroy(skel);
	return r;
}

int main(int argc, char **argv)
{
	static const uint32_t sizes[] = { 0, 4096, 8192, 16384 };
	unsigned secs = argc > 2 ? atoi(argv[2]) : 2, hz = argc > 3 ? atoi(argv[3]) : 999;
	char *py[] = { PYTHON, "-c", "n = 0\nwhile True:\n n += 1\n", NULL }, *chain[] = { argv[1], NULL };
	struct symbolizer *sym;
	uint64_t reached = 0;
	pid_t target;
	int r;

	if (argc < 2) {
		fprintf(stderr, "usage: copycost CHAIN_BINARY [SECONDS [HZ [TID]]]\n");
		return 2;
	}
#if !defined(__x86_64__)
	printf("SKIP: copycost reads x86_64 registers\n");
	return 77;
#endif
	if (geteuid() != 0) {
		printf("SKIP: root needed (BPF, perf events)\n");
		return 77;
	}
	if (elf_version(EV_CURRENT) == EV_NONE)
		return 1;
	if (argc > 4) {
		target = atoi(argv[4]);
		sym = symbolizer_new();
		if (!sym || symbolizer_refresh_process(sym, target) < 0)
			return 1;
		printf("target: tid %d, %u Hz, %u s per setting\n", target, hz, secs);
		for (size_t i = 2; i < ARRAY_SIZE(sizes); i++) {
			r = run(target, sym, sizes[i], true, true, secs, hz, &reached);
			if (r < 0)
				fprintf(stderr, "copycost: %s\n", strerror(-r));
		}
		symbolizer_free(sym);
		return 0;
	}
	target = fork();
	if (target < 0)
		return 1;
	if (target == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (access(PYTHON, X_OK) == 0)
			execv(PYTHON, py);
		execv(chain[0], chain);
		_exit(127);
	}
	usleep(300 * 1000);
	printf("target: %s (pid %d), %u Hz, %u s per setting\n", access(PYTHON, X_OK) == 0 ? PYTHON : chain[0],
	       target, hz, secs);
	sym = symbolizer_new();
	if (!sym || symbolizer_refresh_process(sym, target) < 0)
		return 1;
	for (size_t i = 0; i < ARRAY_SIZE(sizes); i++) {
		r = run(target, sym, sizes[i], false, false, secs, hz, &reached);
		if (r == 0 && sizes[i])
			r = run(target, sym, sizes[i], true, false, secs, hz, &reached);
		if (r == 0 && sizes[i])
			r = run(target, sym, sizes[i], true, true, secs, hz, &reached);
		if (r < 0) {
			fprintf(stderr, "copycost: %s\n", strerror(-r));
			break;
		}
	}
	kill(target, SIGKILL);
	waitpid(target, NULL, 0);
	symbolizer_free(sym);
	if (r < 0)
		return 1;
	return reached ? 0 : 1;
}
