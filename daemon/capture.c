// SPDX-License-Identifier: GPL-2.0-only
/*
 * Capture: open → configure → load → attach the BPF skeleton, one ring buffer per CPU,
 * drained through libbpf's ring_buffer from the daemon's loop.
 */
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <linux/perf_event.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "capture.h"
#include "glob.h"
#include "hostprof.skel.h"
#include "macro.h"
#include "records.h"

struct capture {
	struct hostprof_bpf *skel;
	struct ring_buffer *rb;
	int *ring_fds;
	int nr_cpus;
	bool raw_tp;
	uint64_t bad_records;
	capture_record_fn fn;
	void *ud;
	struct bpf_link *sys_links[2]; /* sys_enter, sys_exit: only while something is watched */
	struct bpf_link **sample_links; /* per CPU */
	int *sample_fds;
	uint32_t sample_hz;
	bool active;            /* some process is watched: the on-demand hooks are attached */
	unsigned intf_wanted;   /* HP_INTF_*: --interference */
	unsigned intf_attached; /* groups captured: at least one program attached (faults needs none) */
	unsigned intf_missing;  /* groups with a tracepoint this kernel lacks */
	struct bpf_link *intf_links[];
};

/* The --interference hooks: tracepoint and group. */
static const struct intf_tp {
	const char *tp;
	unsigned group;
} intf_tps[] = {
	{ "irq_handler_entry", HP_INTF_IRQ },
	{ "irq_handler_exit", HP_INTF_IRQ },
	{ "softirq_entry", HP_INTF_IRQ },
	{ "softirq_exit", HP_INTF_IRQ },
	{ "mm_vmscan_direct_reclaim_begin", HP_INTF_RECLAIM },
	{ "mm_vmscan_direct_reclaim_end", HP_INTF_RECLAIM },
	{ "mm_vmscan_memcg_reclaim_begin", HP_INTF_RECLAIM },
	{ "mm_vmscan_memcg_reclaim_end", HP_INTF_RECLAIM },
	{ "mm_compaction_begin", HP_INTF_RECLAIM },
	{ "mm_compaction_end", HP_INTF_RECLAIM },
	/* x86 only; the minor/major counts come from the task's counters without it */
	{ "page_fault_user", HP_INTF_FAULT_TYPES },
	{ "contention_begin", HP_INTF_LOCKS },
	{ "contention_end", HP_INTF_LOCKS },
};

/* The ring buffers' callback. The kernel is trusted, but a record that does not parse
 * (record_check) is counted in bad_records, not passed on. */
static int on_record(void *ctx, void *data, size_t size)
{
	struct capture *c = ctx;

	if (record_check(data, size) < 0) {
		c->bad_records++;
		return 0;
	}
	c->fn(c->ud, data);
	return 0;
}

static bool btf_has_tp(const struct btf *vmlinux, const char *tp)
{
	char name[128];

	snprintf(name, sizeof(name), "btf_trace_%s", tp);
	return vmlinux && btf__find_by_name_kind(vmlinux, name, BTF_KIND_TYPEDEF) >= 0;
}

static bool kernel_has_tp_btf(const char *tp)
{
	struct btf *vmlinux = btf__load_vmlinux_btf();
	bool found = btf_has_tp(vmlinux, tp);

	btf__free(vmlinux);
	return found;
}

static const struct intf_tp *intf_tp_of(const char *prog_name)
{
	const char *tp;

	if (strncmp(prog_name, "tp_btf_", 7) && strncmp(prog_name, "raw_tp_", 7))
		return NULL;
	tp = prog_name + 7; /* both prefixes are 7 characters */
	for (size_t i = 0; i < ARRAY_SIZE(intf_tps); i++)
		if (!strcmp(tp, intf_tps[i].tp))
			return &intf_tps[i];
	return NULL;
}

/*
 * Of each tp_btf_X / raw_tp_X pair keep the one this kernel should run; the hooks
 * attached on demand (syscalls, --interference, the samples) are left to
 * capture_set_watching and capture_set_sampling.
 */
static void choose_attach_kind(struct capture *c)
{
	struct btf *vmlinux = c->raw_tp ? NULL : btf__load_vmlinux_btf();
	struct bpf_program *prog;

	bpf_object__for_each_program(prog, c->skel->obj)
	{
		const char *name = bpf_program__name(prog);
		const struct intf_tp *it;

		if (!strncmp(name, "tp_btf_", 7))
			bpf_program__set_autoload(prog, !c->raw_tp);
		else if (!strncmp(name, "raw_tp_", 7))
			bpf_program__set_autoload(prog, c->raw_tp);
		/* the syscall hooks slow every syscall of the machine: attached on demand */
		if (strstr(name, "_sys_enter") || strstr(name, "_sys_exit"))
			bpf_program__set_autoattach(prog, false);
		it = intf_tp_of(name);
		if (it) {
			bpf_program__set_autoattach(prog, false);
			/* a tp_btf program for a tracepoint the kernel lacks does not load;
			 * a raw_tp one loads and fails at attach, which is counted there */
			if (!c->raw_tp && !strncmp(name, "tp_btf_", 7) && !btf_has_tp(vmlinux, it->tp)) {
				bpf_program__set_autoload(prog, false);
				c->intf_missing |= it->group;
			}
		}
	}
	bpf_program__set_autoattach(c->skel->progs.on_cpu_sample, false);
	btf__free(vmlinux);
}

static struct bpf_program *intf_prog(struct capture *c, size_t i)
{
	char name[128];

	snprintf(name, sizeof(name), "%s_%s", c->raw_tp ? "raw_tp" : "tp_btf", intf_tps[i].tp);
	return bpf_object__find_program_by_name(c->skel->obj, name);
}

/*
 * The per-CPU irq state: which watched thread runs on each CPU is kept only while the irq
 * programs are attached, so before they are attached again it is cleared, not trusted
 * (it is right again from each CPU's next watched switch).
 */
static void irq_state_clear(struct capture *c)
{
	size_t size = ((bpf_map__value_size(c->skel->maps.irq_state) + 7) & ~7ul) * c->nr_cpus;
	_cleanup_free_ void *zero = calloc(1, size);
	__u32 key = 0;

	if (zero)
		(void)bpf_map__update_elem(c->skel->maps.irq_state, &key, sizeof(key), zero, size, BPF_ANY);
}

/* Attach the programs of the groups in mask, detach the others. */
static void intf_apply(struct capture *c, unsigned mask)
{
	unsigned attached = 0;

	if ((mask & HP_INTF_IRQ) && !(c->intf_attached & HP_INTF_IRQ))
		irq_state_clear(c);
	for (size_t i = 0; i < ARRAY_SIZE(intf_tps); i++) {
		struct bpf_program *prog = intf_prog(c, i);
		bool want = mask & intf_tps[i].group;

		if (!want || !prog || !bpf_program__autoload(prog)) {
			bpf_link__destroy(c->intf_links[i]);
			c->intf_links[i] = NULL;
			continue;
		}
		if (!c->intf_links[i]) {
			c->intf_links[i] = bpf_program__attach(prog);
			if (!c->intf_links[i]) {
				c->intf_missing |= intf_tps[i].group;
				continue;
			}
		}
		attached |= intf_tps[i].group;
	}
	/* `faults` has no program of its own: the switch-out, the samples and the exit read
	 * the task's counters; page_fault_user (fault-types) adds to what they send */
	attached |= mask & HP_INTF_FAULTS;
	c->intf_attached = attached;
	c->skel->bss->intf_mask = attached;
}

void capture_set_interference(struct capture *c, unsigned mask, uint64_t irq_min_ns, uint64_t lock_min_ns)
{
	c->skel->bss->irq_min_ns = irq_min_ns;
	c->skel->bss->lock_min_ns = lock_min_ns;
	c->intf_wanted = mask;
	if (c->active)
		intf_apply(c, mask);
}

unsigned capture_interference(const struct capture *c)
{
	return c->active ? c->intf_attached : c->intf_wanted & ~c->intf_missing;
}

unsigned capture_interference_missing(const struct capture *c)
{
	return c->intf_missing;
}

static struct bpf_program *sys_prog(struct capture *c, bool exit)
{
	if (c->raw_tp)
		return exit ? c->skel->progs.raw_tp_sys_exit : c->skel->progs.raw_tp_sys_enter;
	return exit ? c->skel->progs.tp_btf_sys_exit : c->skel->progs.tp_btf_sys_enter;
}

int capture_set_watching(struct capture *c, bool on)
{
	if (on != c->active) {
		c->active = on;
		intf_apply(c, on ? c->intf_wanted : 0);
	}
	if (on == (c->sys_links[0] != NULL))
		return 0;
	if (!on) {
		/* enter first: no call starts to be timed, and one being timed may still end */
		bpf_link__destroy(c->sys_links[0]);
		bpf_link__destroy(c->sys_links[1]);
		c->sys_links[0] = c->sys_links[1] = NULL;
		return 0;
	}
	/* exit first: a call whose entry is seen has its exit seen */
	c->sys_links[1] = bpf_program__attach(sys_prog(c, true));
	if (!c->sys_links[1])
		return -errno;
	c->sys_links[0] = bpf_program__attach(sys_prog(c, false));
	if (!c->sys_links[0]) {
		int r = -errno;

		bpf_link__destroy(c->sys_links[1]);
		c->sys_links[1] = NULL;
		return r;
	}
	return 0;
}

static void stop_sampling(struct capture *c)
{
	for (int cpu = 0; c->sample_links && cpu < c->nr_cpus; cpu++) {
		bpf_link__destroy(c->sample_links[cpu]);
		if (c->sample_fds[cpu] >= 0)
			close(c->sample_fds[cpu]);
	}
	free(c->sample_links);
	free(c->sample_fds);
	c->sample_links = NULL;
	c->sample_fds = NULL;
	c->sample_hz = 0;
}

int capture_set_sampling(struct capture *c, uint32_t hz)
{
	struct perf_event_attr attr = {
		.type = PERF_TYPE_SOFTWARE,
		.size = sizeof(attr),
		.config = PERF_COUNT_SW_CPU_CLOCK,
		.freq = 1,
		.sample_freq = hz,
	};

	if (hz == c->sample_hz)
		return 0;
	stop_sampling(c);
	if (!hz)
		return 0;
	c->sample_links = calloc(c->nr_cpus, sizeof(*c->sample_links));
	c->sample_fds = calloc(c->nr_cpus, sizeof(*c->sample_fds));
	if (!c->sample_links || !c->sample_fds) {
		stop_sampling(c);
		return -ENOMEM;
	}
	for (int cpu = 0; cpu < c->nr_cpus; cpu++)
		c->sample_fds[cpu] = -1;
	for (int cpu = 0; cpu < c->nr_cpus; cpu++) {
		int fd = syscall(__NR_perf_event_open, &attr, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);

		if (fd < 0) {
			if (errno == ENODEV)
				continue; /* a possible CPU that is offline */
			int r = -errno;

			stop_sampling(c);
			return r;
		}
		c->sample_fds[cpu] = fd;
		c->sample_links[cpu] = bpf_program__attach_perf_event(c->skel->progs.on_cpu_sample, fd);
		if (!c->sample_links[cpu]) {
			int r = -errno;

			stop_sampling(c);
			return r;
		}
	}
	c->sample_hz = hz;
	return 0;
}

void capture_set_thresholds(struct capture *c, uint64_t syscall_min_ns, uint64_t offcpu_min_ns)
{
	c->skel->data->syscall_min_ns = syscall_min_ns;
	c->skel->data->offcpu_min_ns = offcpu_min_ns;
}

int capture_set_cpus(struct capture *c, const uint64_t *mask, size_t words)
{
	struct hostprof_bpf__bss *bss = c->skel->bss;
	bool any = false;

	if (words > HP_MAX_CPUS / 64)
		return -E2BIG;
	bss->cpus_any = 0;
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	memset(bss->cpus_mask, 0, sizeof(bss->cpus_mask));
	for (size_t i = 0; i < words; i++) {
		bss->cpus_mask[i] = mask[i];
		any |= mask[i] != 0;
	}
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	bss->cpus_any = any;
	return 0;
}

int capture_for_each_histogram(const struct capture *c, uint32_t pid,
			       void (*fn)(void *ud, const struct hp_hist_key *key, const struct hp_hist *h), void *ud)
{
	int fd = bpf_map__fd(c->skel->maps.syscall_hist);
	struct hp_hist_key key, next;
	struct hp_hist h;
	void *prev = NULL;

	while (bpf_map_get_next_key(fd, prev, &next) == 0) {
		key = next;
		prev = &key;
		if (key.pid != pid)
			continue;
		if (bpf_map_lookup_elem(fd, &key, &h) == 0)
			fn(ud, &key, &h);
	}
	return errno == ENOENT ? 0 : -errno;
}

/* Histograms of a process that is gone: their keys go. Collected first, then deleted:
 * deleting while walking would restart the walk after every delete. */
void capture_forget_histograms(struct capture *c, uint32_t pid)
{
	int fd = bpf_map__fd(c->skel->maps.syscall_hist);
	struct hp_hist_key key, next, *doomed = NULL;
	size_t n = 0, cap = 0;
	void *prev = NULL;

	while (bpf_map_get_next_key(fd, prev, &next) == 0) {
		key = next;
		prev = &key;
		if (key.pid != pid)
			continue;
		if (n == cap) {
			size_t ncap = cap ? cap * 2 : 64;
			struct hp_hist_key *v = realloc(doomed, ncap * sizeof(*v));

			if (!v)
				break;
			doomed = v;
			cap = ncap;
		}
		doomed[n++] = key;
	}
	for (size_t i = 0; i < n; i++)
		bpf_map_delete_elem(fd, &doomed[i]);
	free(doomed);
}

/* One ring buffer per possible CPU; made before load, so the first is the inner-map template. */
static int create_rings(struct capture *c, uint32_t ring_bytes)
{
	c->ring_fds = calloc(c->nr_cpus, sizeof(int));
	if (!c->ring_fds)
		return -ENOMEM;
	for (int cpu = 0; cpu < c->nr_cpus; cpu++)
		c->ring_fds[cpu] = -1;
	for (int cpu = 0; cpu < c->nr_cpus; cpu++) {
		int fd = bpf_map_create(BPF_MAP_TYPE_RINGBUF, "hp_ring", 0, 0, ring_bytes, NULL);
		int r;

		if (fd < 0)
			return -errno;
		c->ring_fds[cpu] = fd;
		if (c->rb) {
			r = ring_buffer__add(c->rb, fd, on_record, c);
		} else {
			c->rb = ring_buffer__new(fd, on_record, c, NULL);
			r = c->rb ? 0 : -errno;
		}
		if (r < 0)
			return r;
	}
	return 0;
}

static int fill_rings(struct capture *c)
{
	int outer = bpf_map__fd(c->skel->maps.rings);

	for (int cpu = 0; cpu < c->nr_cpus; cpu++) {
		__u32 key = cpu;

		if (bpf_map_update_elem(outer, &key, &c->ring_fds[cpu], BPF_ANY) < 0)
			return -errno;
	}
	return 0;
}

int capture_new(const struct capture_opts *opts, capture_record_fn fn, void *ud, struct capture **ret)
{
	uint32_t ring_bytes = opts->ring_kb * 1024;
	struct capture *c;
	int r;

	if (access("/sys/kernel/btf/vmlinux", R_OK) < 0)
		return -ENOTSUP;
	c = calloc(1, sizeof(*c) + ARRAY_SIZE(intf_tps) * sizeof(c->intf_links[0]));
	if (!c)
		return -ENOMEM;
	c->fn = fn;
	c->ud = ud;
	c->nr_cpus = libbpf_num_possible_cpus();
	if (c->nr_cpus <= 0) {
		r = c->nr_cpus ? c->nr_cpus : -ENODEV;
		goto fail;
	}
	c->raw_tp = opts->force_raw_tp || !kernel_has_tp_btf("sched_switch");

	c->skel = hostprof_bpf__open();
	if (!c->skel) {
		r = -errno;
		goto fail;
	}
	choose_attach_kind(c);
	c->skel->rodata->wakeup_bytes = ring_bytes / 8;
	r = bpf_map__set_max_entries(c->skel->maps.rings, c->nr_cpus);
	if (r < 0)
		goto fail;
	r = bpf_map__set_max_entries(c->skel->maps.victims, c->nr_cpus);
	if (r < 0)
		goto fail;
	r = create_rings(c, ring_bytes);
	if (r < 0)
		goto fail;
	r = bpf_map__set_inner_map_fd(c->skel->maps.rings, c->ring_fds[0]);
	if (r < 0)
		goto fail;
	r = hostprof_bpf__load(c->skel);
	if (r < 0)
		goto fail;
	r = fill_rings(c);
	if (r < 0)
		goto fail;
	r = hostprof_bpf__attach(c->skel);
	if (r < 0)
		goto fail;
	*ret = c;
	return 0;
fail:
	capture_free(c);
	return r;
}

void capture_free(struct capture *c)
{
	if (!c)
		return;
	capture_set_watching(c, false);
	stop_sampling(c);
	ring_buffer__free(c->rb);
	hostprof_bpf__destroy(c->skel);
	if (c->ring_fds)
		for (int i = 0; i < c->nr_cpus; i++)
			if (c->ring_fds[i] >= 0)
				close(c->ring_fds[i]);
	free(c->ring_fds);
	free(c);
}

int capture_fd(const struct capture *c)
{
	return ring_buffer__epoll_fd(c->rb);
}

int capture_drain(struct capture *c)
{
	return ring_buffer__consume(c->rb);
}

int capture_watch(struct capture *c, uint32_t pid, uint32_t reason, uint32_t parent)
{
	struct hp_watch w = { .reason = reason, .parent = parent };

	if (bpf_map__update_elem(c->skel->maps.watched, &pid, sizeof(pid), &w, sizeof(w), BPF_ANY) < 0)
		return -errno;
	c->skel->bss->watch_filter[pid & (HP_FILTER_SIZE - 1)] = 1;
	return 0;
}

void capture_filter_touch(struct capture *c, uint32_t pid)
{
	c->skel->bss->watch_filter[pid & (HP_FILTER_SIZE - 1)] = 1;
}

int capture_unwatch(struct capture *c, uint32_t pid)
{
	uint32_t key, next, slot = pid & (HP_FILTER_SIZE - 1);
	const void *prev = NULL;
	bool shared = false;

	if (bpf_map__delete_elem(c->skel->maps.watched, &pid, sizeof(pid), 0) < 0 && errno != ENOENT)
		return -errno;
	/* clear the filter slot unless another watched tgid uses it */
	while (!shared && bpf_map__get_next_key(c->skel->maps.watched, prev, &next, sizeof(next)) == 0) {
		key = next;
		prev = &key;
		shared = (key & (HP_FILTER_SIZE - 1)) == slot;
	}
	if (!shared)
		c->skel->bss->watch_filter[slot] = 0;
	return 0;
}

int capture_set_globs(struct capture *c, char *const *globs, size_t n)
{
	struct hostprof_bpf__bss *bss = c->skel->bss;
	struct hp_glob compiled[HP_MAX_GLOBS];
	int r;

	if (n > HP_MAX_GLOBS)
		return -E2BIG;
	for (size_t i = 0; i < n; i++) {
		r = thread_glob_compile(globs[i], &compiled[i]);
		if (r < 0)
			return r;
	}
	/* Shrink the count first so the kernel never matches a half-written pattern. */
	bss->nr_globs = 0;
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	memcpy(bss->globs, compiled, n * sizeof(compiled[0]));
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	bss->nr_globs = n;
	return 0;
}

int capture_stats(const struct capture *c, uint64_t ret[HP_STAT_MAX])
{
	_cleanup_free_ uint64_t *vals = calloc(c->nr_cpus, sizeof(uint64_t));

	if (!vals)
		return -ENOMEM;
	for (uint32_t i = 0; i < HP_STAT_MAX; i++) {
		ret[i] = 0;
		if (bpf_map__lookup_elem(c->skel->maps.stats, &i, sizeof(i), vals,
					 c->nr_cpus * sizeof(uint64_t), 0) < 0)
			return -errno;
		for (int cpu = 0; cpu < c->nr_cpus; cpu++)
			ret[i] += vals[cpu];
	}
	return 0;
}

uint64_t capture_bad_records(const struct capture *c)
{
	return c->bad_records;
}

int capture_nr_cpus(const struct capture *c)
{
	return c->nr_cpus;
}

bool capture_uses_raw_tp(const struct capture *c)
{
	return c->raw_tp;
}

struct hist_collect {
	struct hist_entry *v;
	size_t n, cap;
	int err;
};

static void collect_hist(void *ud, const struct hp_hist_key *key, const struct hp_hist *h)
{
	struct hist_collect *hc = ud;

	if (hc->err)
		return;
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

int capture_histograms(const struct capture *c, uint32_t pid, struct hist_entry **ret, size_t *ret_n)
{
	struct hist_collect hc = {};
	int r;

	r = capture_for_each_histogram(c, pid, collect_hist, &hc);
	if (r < 0 || hc.err < 0) {
		free(hc.v);
		return r < 0 ? r : hc.err;
	}
	*ret = hc.v;
	*ret_n = hc.n;
	return 0;
}

size_t capture_drops(const struct capture *c, struct drop_count ret[HP_DROP_CAUSES])
{
	/* HP_STAT_EVENTS counts records written, not lost: its slot names the daemon's own drops */
	static const char *const causes[HP_STAT_MAX] = {
		[HP_STAT_EVENTS] = "bad_record",
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

	_Static_assert(HP_DROP_CAUSES == HP_STAT_MAX, "one drop cause per HP_STAT_* slot");
	(void)capture_stats(c, stats);
	stats[HP_STAT_EVENTS] = c->bad_records;
	for (size_t i = 1; i < HP_STAT_MAX; i++)
		ret[n++] = (struct drop_count){ causes[i], stats[i] };
	ret[n++] = (struct drop_count){ causes[HP_STAT_EVENTS], stats[HP_STAT_EVENTS] };
	return n;
}
