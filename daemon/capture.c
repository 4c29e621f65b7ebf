// SPDX-License-Identifier: GPL-2.0-only
/*
 * Capture: open → configure → load → attach the BPF skeleton, one ring buffer per CPU,
 * drained from the daemon's loop (rings.c).
 *
 * Nothing is attached that has nothing to do: the sched hooks while some process is
 * watched or --cpus is set (a context switch costs nothing more otherwise), task_rename
 * while there are thread-name patterns, the syscall hooks of the `syscalls` mode
 * (sys_enter/sys_exit for exact, the mapping hooks for blocking) and the --interference
 * groups while some process is watched. The sample events stay open but run only while
 * some process is watched. A process the kernel starts watching (a thread renamed to a
 * pattern) attaches them as soon as its record is drained.
 */
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <linux/perf_event.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "capture.h"
#include "glob.h"
#include "hostprof.skel.h"
#include "macro.h"
#include "records.h"
#include "rings.h"

/* The programs attached together, and when (see the comment at the top). */
enum hook_group {
	GROUP_SCHED, /* while something is watched or --cpus is set */
	GROUP_GLOBS, /* while there are thread-name patterns */
	GROUP_SYS,   /* syscalls = exact, while something is watched */
	GROUP_MMAP,  /* syscalls = blocking, while something is watched */
	GROUP_MAX,
};

static const struct hook {
	const char *tp; /* the programs tp_btf_TP and raw_tp_TP */
	enum hook_group group;
	bool optional; /* a kernel without the tracepoint does without (said in the log) */
} hooks[] = {
	/* exit first, so a task never leaves state behind that a detach keeps */
	{ "sched_process_exit", GROUP_SCHED },
	{ "sched_process_fork", GROUP_SCHED },
	{ "sched_process_exec", GROUP_SCHED },
	{ "sched_wakeup_new", GROUP_SCHED },
	{ "sched_waking", GROUP_SCHED },
	{ "sched_migrate_task", GROUP_SCHED },
	{ "sched_switch", GROUP_SCHED },
	{ "task_rename", GROUP_GLOBS },
	/* exit first: a call whose entry is seen has its exit seen */
	{ "sys_exit", GROUP_SYS },
	{ "sys_enter", GROUP_SYS },
	{ "mmap_lock_acquire_returned", GROUP_MMAP, true }, /* 5.12 */
};

static uint64_t boot_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_BOOTTIME, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

/* Slots of forgotten histograms, given back to the kernel once no program can still be
 * writing them (HIST_RECYCLE_NS later). */
#define HIST_RECYCLE_NS (1000 * 1000 * 1000ULL)

struct capture {
	struct hostprof_bpf *skel;
	struct rings *rings;
	int *ring_fds;
	int nr_cpus;
	bool raw_tp;
	bool task_storage; /* per-thread state in task storage, not the hash */
	bool blocking_ok;  /* syscalls = blocking can work here */
	uint64_t bad_records;
	capture_record_fn fn;
	void *ud;
	struct bpf_link *links[ARRAY_SIZE(hooks)];
	unsigned groups;         /* 1 << GROUP_*: attached */
	unsigned hooks_missing;  /* optional hooks this kernel lacks (1 << index) */
	uint32_t syscall_mode;   /* HP_SYSCALLS_* */
	uint64_t syscall_mode_since_ns;
	bool globs;              /* some thread-name pattern is set */
	bool cpus;               /* --cpus is set */
	uint32_t watch_seq;      /* hp_watch.gen of the latest capture_watch */
	uint32_t *recycle;       /* histogram slots to give back at recycle_at */
	size_t n_recycle, cap_recycle;
	uint64_t recycle_at;
	struct bpf_link **sample_links; /* per CPU */
	int *sample_fds;
	uint32_t sample_hz;
	bool sampling_on; /* the sample events are enabled (sampling_apply) */
	bool active;            /* some process is watched: the on-demand hooks are attached */
	unsigned intf_wanted;   /* HP_INTF_*: --interference */
	unsigned intf_attached; /* groups captured: at least one program attached (faults needs none) */
	unsigned intf_missing;  /* groups with a tracepoint this kernel lacks */
	struct gc_links {
		uint32_t pid;
		struct bpf_link *start, *done;
	} *gc; /* --python-gc: the USDT probes attached per process */
	size_t n_gc;
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
	/* the kernel started watching a process (a thread took a watched name): its
	 * switches are seen from the moment the sched hooks are attached, here. After the
	 * record is handed on: the recorder reads the process's /proc entry first, and an
	 * attach can take seconds (the 6.1 guests under TCG), by which time a short-lived
	 * process may be gone */
	if (((const struct hp_hdr *)data)->type == HP_EV_WATCH && !c->active)
		(void)capture_set_watching(c, true);
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

/* Whether the kernel's local storage allocates from bpf_mem_alloc (6.4+): safe from
 * sched_switch, under the runqueue lock (a kmalloc there may wake kswapd). */
static bool btf_has_safe_local_storage(const struct btf *vmlinux)
{
	const struct btf_type *t;
	const struct btf_member *m;
	int id;

	if (!vmlinux)
		return false;
	id = btf__find_by_name_kind(vmlinux, "bpf_local_storage_map", BTF_KIND_STRUCT);
	if (id < 0)
		return false;
	t = btf__type_by_id(vmlinux, id);
	m = btf_members(t);
	for (unsigned i = 0; i < btf_vlen(t); i++, m++)
		if (!strcmp(btf__name_by_offset(vmlinux, m->name_off), "bpf_ma"))
			return true;
	return false;
}

static struct bpf_program *hook_prog(struct capture *c, size_t i)
{
	char name[128];

	snprintf(name, sizeof(name), "%s_%s", c->raw_tp ? "raw_tp" : "tp_btf", hooks[i].tp);
	return bpf_object__find_program_by_name(c->skel->obj, name);
}

/*
 * Of each tp_btf_X / raw_tp_X pair keep the one this kernel should run (and of an
 * optional hook, none where the kernel lacks the tracepoint). Nothing attaches by itself: the groups
 * of hooks are attached by apply_hooks, the --interference ones by intf_apply, the
 * samples by capture_set_sampling.
 */
static void choose_attach_kind(struct capture *c, const struct btf *vmlinux)
{
	struct bpf_program *prog;

	bpf_object__for_each_program(prog, c->skel->obj)
	{
		const char *name = bpf_program__name(prog);
		const struct intf_tp *it;

		bpf_program__set_autoattach(prog, false);
		if (!strncmp(name, "tp_btf_", 7))
			bpf_program__set_autoload(prog, !c->raw_tp);
		else if (!strncmp(name, "raw_tp_", 7))
			bpf_program__set_autoload(prog, c->raw_tp);
		it = intf_tp_of(name);
		/* a tp_btf program for a tracepoint the kernel lacks does not load; a raw_tp one
		 * loads and fails at attach, which is counted there */
		if (it && !c->raw_tp && !strncmp(name, "tp_btf_", 7) && !btf_has_tp(vmlinux, it->tp)) {
			bpf_program__set_autoload(prog, false);
			c->intf_missing |= it->group;
		}
	}
	for (size_t i = 0; i < ARRAY_SIZE(hooks); i++) {
		if (!hooks[i].optional || c->raw_tp || btf_has_tp(vmlinux, hooks[i].tp))
			continue;
		prog = hook_prog(c, i);
		if (prog)
			bpf_program__set_autoload(prog, false);
		c->hooks_missing |= 1u << i;
	}
}

/* Which groups should be attached now. */
static unsigned groups_wanted(const struct capture *c)
{
	unsigned g = 0;

	if (c->active || c->cpus)
		g |= 1u << GROUP_SCHED;
	if (c->globs)
		g |= 1u << GROUP_GLOBS;
	if (c->active && c->syscall_mode == HP_SYSCALLS_EXACT)
		g |= 1u << GROUP_SYS;
	if (c->active && c->syscall_mode == HP_SYSCALLS_BLOCKING)
		g |= 1u << GROUP_MMAP;
	return g;
}

/* Per-thread state is stale from here on (hooks attached again, a mode changed): a new
 * epoch, and the victim counts that went with the old one. */
static void new_epoch(struct capture *c)
{
	size_t size = bpf_map__value_size(c->skel->maps.victims);
	_cleanup_free_ void *zero = calloc(1, size);

	for (int cpu = 0; zero && cpu < c->nr_cpus; cpu++) {
		__u32 key = cpu;

		(void)bpf_map__update_elem(c->skel->maps.victims, &key, sizeof(key), zero, size, BPF_ANY);
	}
	__atomic_add_fetch(&c->skel->data->epoch, 1, __ATOMIC_SEQ_CST);
	__atomic_add_fetch(&c->skel->data->watch_gen, 1, __ATOMIC_SEQ_CST);
}

/*
 * The keys of a map keyed by tid, in one walk: into keys (cap of them) where given, else
 * only counted. The count, or a negative errno.
 */
static int task_map_keys(struct bpf_map *m, __u32 *keys, __u32 cap)
{
	__u32 key, next, n = 0;
	const void *prev = NULL;
	int r;

	while (n < cap && (r = bpf_map__get_next_key(m, prev, &next, sizeof(next))) == 0) {
		key = next;
		prev = &key;
		if (keys)
			keys[n] = key;
		n++;
	}
	return n == cap || r == -ENOENT ? (int)n : r;
}

/* The hash fallback keeps entries of threads that exited while detached: gone. The keys
 * are collected in one walk, then deleted. */
static void clear_task_hash(struct capture *c)
{
	struct bpf_map *maps[] = { c->skel->maps.tasks, c->skel->maps.stack_cache };

	if (c->task_storage)
		return;
	for (size_t m = 0; m < ARRAY_SIZE(maps); m++) {
		__u32 cap = bpf_map__max_entries(maps[m]);
		_cleanup_free_ __u32 *keys = calloc(cap, sizeof(*keys));
		int n = keys ? task_map_keys(maps[m], keys, cap) : -ENOMEM;

		for (int i = 0; i < n; i++)
			(void)bpf_map__delete_elem(maps[m], &keys[i], sizeof(keys[i]), 0);
	}
}

/*
 * Attach what groups_wanted says, detach the rest: detached in the reverse of the table's
 * order, attached in it (sys_enter goes first and comes last). An attach that fails is
 * retried at the next call, and the first error returned; an optional hook that fails
 * (a raw_tp on a tracepoint this kernel lacks) is not retried.
 */
static int apply_groups(struct capture *c)
{
	unsigned want = groups_wanted(c), attached = 0;
	int ret = 0;

	for (size_t i = ARRAY_SIZE(hooks); i-- > 0;) {
		if (want & (1u << hooks[i].group))
			continue;
		bpf_link__destroy(c->links[i]);
		c->links[i] = NULL;
	}
	/* per-thread state from before is stale once the switches or the syscalls are
	 * seen again */
	if (((want & ~c->groups) & ((1u << GROUP_SCHED) | (1u << GROUP_SYS)))) {
		if (!(c->groups & (1u << GROUP_SCHED)))
			clear_task_hash(c);
		new_epoch(c);
	}
	for (size_t i = 0; i < ARRAY_SIZE(hooks); i++) {
		struct bpf_program *prog = hook_prog(c, i);

		if (!(want & (1u << hooks[i].group)) || !prog || !bpf_program__autoload(prog) ||
		    (c->hooks_missing & (1u << i)))
			continue;
		if (!c->links[i]) {
			c->links[i] = bpf_program__attach(prog);
			if (!c->links[i]) {
				if (hooks[i].optional)
					c->hooks_missing |= 1u << i;
				else if (!ret)
					ret = -errno;
				continue;
			}
		}
		attached |= 1u << hooks[i].group;
	}
	c->groups = attached;
	return ret;
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

/*
 * The sample events run while some process is watched: a sample records only a watched
 * thread, and each one is an interrupt on its CPU all the same (--sample-hz of them a
 * second on every CPU, each a few microseconds in a VM). Opened once (capture_set_sampling,
 * where a refusal shows at start), enabled and disabled here.
 */
static int sampling_apply(struct capture *c)
{
	bool want = c->active && c->sample_hz;
	int ret = 0;

	if (want == c->sampling_on)
		return 0;
	for (int cpu = 0; c->sample_fds && cpu < c->nr_cpus; cpu++)
		if (c->sample_fds[cpu] >= 0 &&
		    ioctl(c->sample_fds[cpu], want ? PERF_EVENT_IOC_ENABLE : PERF_EVENT_IOC_DISABLE, 0) < 0 && !ret)
			ret = -errno;
	/* one that failed is tried again at the next call (the daemon's tick) */
	if (!ret)
		c->sampling_on = want;
	return ret;
}

int capture_set_watching(struct capture *c, bool on)
{
	int r, q;

	if (on != c->active) {
		c->active = on;
		intf_apply(c, on ? c->intf_wanted : 0);
	}
	r = apply_groups(c);
	q = sampling_apply(c);
	return r < 0 ? r : q;
}

int capture_set_syscall_mode(struct capture *c, uint32_t mode)
{
	if (mode != HP_SYSCALLS_EXACT && mode != HP_SYSCALLS_BLOCKING)
		return -EINVAL;
	if (mode == HP_SYSCALLS_BLOCKING && !c->blocking_ok)
		return -EOPNOTSUPP;
	if (mode == c->syscall_mode)
		return 0;
	c->syscall_mode = mode;
	c->skel->data->syscall_mode = mode;
	c->syscall_mode_since_ns = boot_ns();
	/* what a thread kept of a syscall in progress belongs to the other mode */
	new_epoch(c);
	return apply_groups(c);
}

uint32_t capture_syscall_mode(const struct capture *c, uint64_t *ret_since_ns)
{
	if (ret_since_ns)
		*ret_since_ns = c->syscall_mode_since_ns;
	return c->syscall_mode;
}

bool capture_blocking_supported(const struct capture *c)
{
	return c->blocking_ok;
}

bool capture_maps_hook_missing(const struct capture *c)
{
	for (size_t i = 0; i < ARRAY_SIZE(hooks); i++)
		if (hooks[i].group == GROUP_MMAP && (c->hooks_missing & (1u << i)))
			return true;
	return false;
}

int capture_maps_changes(const struct capture *c, uint32_t pid, uint32_t *ret)
{
	struct hp_watch w;

	if (bpf_map__lookup_elem(c->skel->maps.watched, &pid, sizeof(pid), &w, sizeof(w), 0) < 0)
		return -errno;
	*ret = w.maps_changes;
	return 0;
}

static void stop_sampling(struct capture *c)
{
	for (int cpu = 0; c->sample_links && cpu < c->nr_cpus; cpu++) {
		/* a perf event link closes its event's fd with it */
		if (c->sample_links[cpu])
			bpf_link__destroy(c->sample_links[cpu]);
		else if (c->sample_fds[cpu] >= 0)
			close(c->sample_fds[cpu]);
	}
	free(c->sample_links);
	free(c->sample_fds);
	c->sample_links = NULL;
	c->sample_fds = NULL;
	c->sample_hz = 0;
	c->sampling_on = false;
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
	c->sampling_on = true; /* the attach enabled them */
	/* nothing watched: disabled here, or, if that fails, at the tick that tries again */
	(void)sampling_apply(c);
	return 0;
}

int capture_set_unwind(struct capture *c, uint32_t bytes, bool named)
{
	if (bytes > HP_RAW_STACK_MAX || bytes % 8)
		return -EINVAL;
	if (bytes && !c->blocking_ok)
		return -EOPNOTSUPP;
	c->skel->bss->unwind_named = named;
	__atomic_store_n(&c->skel->bss->unwind_bytes, bytes, __ATOMIC_RELEASE);
	return 0;
}

int capture_gil_set(struct capture *c, uint32_t pid, const struct hp_gil_proc *g)
{
	if (bpf_map__update_elem(c->skel->maps.gil_procs, &pid, sizeof(pid), g, sizeof(*g), BPF_ANY) < 0)
		return -errno;
	return 0;
}

void capture_gil_clear(struct capture *c, uint32_t pid)
{
	(void)bpf_map__delete_elem(c->skel->maps.gil_procs, &pid, sizeof(pid), 0);
}

void capture_set_gil_min(struct capture *c, uint64_t min_ns)
{
	c->skel->data->gil_min_ns = min_ns;
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
	c->cpus = any;
	return apply_groups(c);
}

/* A slot as the daemon reports it: the count is the buckets' sum. */
static void hist_from_slot(const struct hp_hist_slot *slot, struct hp_hist *ret)
{
	*ret = (struct hp_hist){ .total_ns = slot->total_ns, .max_ns = slot->max_ns };
	for (int b = 0; b < HP_HIST_BUCKETS; b++) {
		ret->buckets[b] = slot->buckets[b];
		ret->count += slot->buckets[b];
	}
}

int capture_for_each_histogram(const struct capture *c, uint32_t pid,
			       void (*fn)(void *ud, const struct hp_hist_key *key, const struct hp_hist *h), void *ud)
{
	struct hp_hist_key key, next;
	struct hp_hist_slot slot;
	struct hp_hist h;
	void *prev = NULL;
	__u32 idx;

	while (bpf_map__get_next_key(c->skel->maps.hist_index, prev, &next, sizeof(next)) == 0) {
		key = next;
		prev = &key;
		if (key.pid != pid)
			continue;
		if (bpf_map__lookup_elem(c->skel->maps.hist_index, &key, sizeof(key), &idx, sizeof(idx), 0) < 0 ||
		    bpf_map__lookup_elem(c->skel->maps.hist_slots, &idx, sizeof(idx), &slot, sizeof(slot), 0) < 0)
			continue;
		hist_from_slot(&slot, &h);
		fn(ud, &key, &h);
	}
	return errno == ENOENT ? 0 : -errno;
}

/* Give back the slots forgotten at least HIST_RECYCLE_NS ago, zeroed: by then no program
 * that found one of them in a thread's cache or the index is still running. */
static void hist_recycle(struct capture *c, bool all)
{
	static const struct hp_hist_slot zero;

	if (!c->n_recycle || (!all && boot_ns() < c->recycle_at))
		return;
	for (size_t i = 0; i < c->n_recycle; i++) {
		__u32 idx = c->recycle[i];

		(void)bpf_map__update_elem(c->skel->maps.hist_slots, &idx, sizeof(idx), &zero, sizeof(zero), BPF_ANY);
		(void)bpf_map__update_elem(c->skel->maps.hist_free, NULL, 0, &idx, sizeof(idx), BPF_ANY);
	}
	c->n_recycle = 0;
}

/* Histograms of a process that is gone: their keys go, and their slots after a while.
 * Keys are collected first, then deleted: deleting while walking would restart the walk
 * after every delete. */
void capture_forget_histograms(struct capture *c, uint32_t pid)
{
	struct hp_hist_key key, next, *doomed = NULL;
	size_t n = 0, cap = 0;
	void *prev = NULL;

	hist_recycle(c, false);
	while (bpf_map__get_next_key(c->skel->maps.hist_index, prev, &next, sizeof(next)) == 0) {
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
	for (size_t i = 0; i < n; i++) {
		__u32 idx;

		struct bpf_map *index = c->skel->maps.hist_index;

		if (bpf_map__lookup_elem(index, &doomed[i], sizeof(doomed[i]), &idx, sizeof(idx), 0) < 0)
			continue;
		if (bpf_map__delete_elem(index, &doomed[i], sizeof(doomed[i]), 0) < 0)
			continue;
		if (c->n_recycle == c->cap_recycle) {
			size_t ncap = c->cap_recycle ? c->cap_recycle * 2 : 256;
			uint32_t *v = realloc(c->recycle, ncap * sizeof(*v));

			if (!v)
				break; /* the slot is lost to the kernel until the daemon restarts */
			c->recycle = v;
			c->cap_recycle = ncap;
		}
		c->recycle[c->n_recycle++] = idx;
	}
	free(doomed);
	if (n) {
		/* threads' cached slots are asked again from here on */
		__atomic_add_fetch(&c->skel->data->hist_gen, 1, __ATOMIC_SEQ_CST);
		c->recycle_at = boot_ns() + HIST_RECYCLE_NS;
	}
}

static int fill_hist_free(struct capture *c)
{
	for (__u32 i = 0; i < HP_HIST_SLOTS; i++)
		if (bpf_map__update_elem(c->skel->maps.hist_free, NULL, 0, &i, sizeof(i), BPF_ANY) < 0)
			return -errno;
	return 0;
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

		if (fd < 0)
			return -errno;
		c->ring_fds[cpu] = fd;
	}
	c->rings = rings_new(c->ring_fds, c->nr_cpus, ring_bytes, on_record, c);
	return c->rings ? 0 : -errno;
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

/*
 * Task storage (and the hash fallback's maps sized to nothing) where the kernel has it
 * and allocates it safely from sched_switch; else the hash, with the storage maps made
 * as placeholders no program uses (the verifier drops the branches that would).
 */
static int choose_task_state(struct capture *c, const struct btf *vmlinux, bool force_hash)
{
	struct bpf_map *storage[] = { c->skel->maps.task_store, c->skel->maps.stack_store };
	struct bpf_map *hash[] = { c->skel->maps.tasks, c->skel->maps.stack_cache };
	bool kernel_has = libbpf_probe_bpf_map_type(BPF_MAP_TYPE_TASK_STORAGE, NULL) == 1;
	int r;

	c->task_storage = !c->raw_tp && !force_hash && kernel_has && btf_has_safe_local_storage(vmlinux);
	c->skel->rodata->use_task_storage = c->task_storage;
	for (size_t i = 0; i < ARRAY_SIZE(storage); i++) {
		if (c->task_storage) {
			r = bpf_map__set_max_entries(hash[i], 1);
		} else if (!kernel_has) {
			r = bpf_map__set_type(storage[i], BPF_MAP_TYPE_HASH);
			if (r >= 0)
				r = bpf_map__set_map_flags(storage[i], 0);
			if (r >= 0)
				r = bpf_map__set_max_entries(storage[i], 1);
		} else {
			r = 0;
		}
		if (r < 0)
			return r;
	}
	return 0;
}

int capture_new(const struct capture_opts *opts, capture_record_fn fn, void *ud, struct capture **ret)
{
	uint32_t ring_bytes = opts->ring_kb * 1024;
	struct btf *vmlinux = NULL;
	struct capture *c;
	int r;

	if (access("/sys/kernel/btf/vmlinux", R_OK) < 0)
		return -ENOTSUP;
	c = calloc(1, sizeof(*c) + ARRAY_SIZE(intf_tps) * sizeof(c->intf_links[0]));
	if (!c)
		return -ENOMEM;
	c->fn = fn;
	c->ud = ud;
	c->syscall_mode = HP_SYSCALLS_EXACT;
	c->nr_cpus = libbpf_num_possible_cpus();
	if (c->nr_cpus <= 0) {
		r = c->nr_cpus ? c->nr_cpus : -ENODEV;
		goto fail;
	}
	c->raw_tp = opts->force_raw_tp || !kernel_has_tp_btf("sched_switch");
	/* syscalls = blocking reads the saved user registers: bpf_task_pt_regs (5.15) */
	c->blocking_ok = libbpf_probe_bpf_helper(BPF_PROG_TYPE_KPROBE, BPF_FUNC_task_pt_regs, NULL) == 1;
	vmlinux = btf__load_vmlinux_btf();

	c->skel = hostprof_bpf__open();
	if (!c->skel) {
		r = -errno;
		goto fail;
	}
	choose_attach_kind(c, vmlinux);
	r = choose_task_state(c, vmlinux, opts->force_task_hash);
	if (r < 0)
		goto fail;
	c->skel->rodata->wakeup_bytes = ring_bytes / 8;
	c->skel->rodata->blocking_ok = c->blocking_ok;
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
	r = fill_hist_free(c);
	if (r < 0)
		goto fail;
	/* nothing watched yet: what apply_groups attaches now is at most task_rename */
	r = apply_groups(c);
	if (r < 0)
		goto fail;
	btf__free(vmlinux);
	*ret = c;
	return 0;
fail:
	btf__free(vmlinux);
	capture_free(c);
	return r;
}

void capture_free(struct capture *c)
{
	if (!c)
		return;
	c->globs = c->cpus = false;
	if (c->skel)
		capture_set_watching(c, false);
	stop_sampling(c);
	for (size_t i = 0; i < c->n_gc; i++) {
		bpf_link__destroy(c->gc[i].start);
		bpf_link__destroy(c->gc[i].done);
	}
	free(c->gc);
	rings_free(c->rings);
	hostprof_bpf__destroy(c->skel);
	if (c->ring_fds)
		for (int i = 0; i < c->nr_cpus; i++)
			if (c->ring_fds[i] >= 0)
				close(c->ring_fds[i]);
	free(c->ring_fds);
	free(c->recycle);
	free(c);
}

int capture_fd(const struct capture *c)
{
	return rings_fd(c->rings);
}

/* rings_drain's count as capture_drain's int */
static int drained(int64_t n)
{
	return n < 0 ? (int)n : (int)MIN(n, (int64_t)INT_MAX);
}

int capture_drain(struct capture *c)
{
	hist_recycle(c, false);
	return drained(rings_drain(c->rings, 0));
}

int capture_drain_woken(struct capture *c)
{
	return drained(rings_drain(c->rings, c->skel->rodata->wakeup_bytes / 2));
}

int capture_watch(struct capture *c, uint32_t pid, uint32_t reason, uint32_t parent)
{
	/* a new gen: what its threads kept from an earlier watch is stale */
	struct hp_watch w = { .reason = reason, .parent = parent, .gen = ++c->watch_seq };

	if (bpf_map__update_elem(c->skel->maps.watched, &pid, sizeof(pid), &w, sizeof(w), BPF_ANY) < 0)
		return -errno;
	c->skel->bss->watch_filter[pid & (HP_FILTER_SIZE - 1)] = 1;
	__atomic_add_fetch(&c->skel->data->watch_gen, 1, __ATOMIC_SEQ_CST);
	/* its switches count from now, not from the daemon's next tick */
	return capture_set_watching(c, true);
}

void capture_filter_touch(struct capture *c, uint32_t pid)
{
	c->skel->bss->watch_filter[pid & (HP_FILTER_SIZE - 1)] = 1;
}

int capture_unwatch(struct capture *c, uint32_t pid)
{
	if (bpf_map__delete_elem(c->skel->maps.watched, &pid, sizeof(pid), 0) < 0 && errno != ENOENT)
		return -errno;
	capture_release_filter(c, pid);
	/* every task's cached "watched" is asked again */
	__atomic_add_fetch(&c->skel->data->watch_gen, 1, __ATOMIC_SEQ_CST);
	return 0;
}

void capture_release_filter(struct capture *c, uint32_t pid)
{
	uint32_t key, next, slot = pid & (HP_FILTER_SIZE - 1);
	const void *prev = NULL;
	bool shared = false;

	/* clear the filter slot unless a watched tgid uses it */
	while (!shared && bpf_map__get_next_key(c->skel->maps.watched, prev, &next, sizeof(next)) == 0) {
		key = next;
		prev = &key;
		shared = (key & (HP_FILTER_SIZE - 1)) == slot;
	}
	if (!shared)
		c->skel->bss->watch_filter[slot] = 0;
}

int capture_python_set(struct capture *c, uint32_t pid, const struct hp_py_proc *pp)
{
	if (bpf_map__update_elem(c->skel->maps.py_procs, &pid, sizeof(pid), pp, sizeof(*pp), BPF_ANY) < 0)
		return -errno;
	c->skel->bss->py_filter[pid & (HP_FILTER_SIZE - 1)] = 1;
	return 0;
}

int capture_python_gc(struct capture *c, uint32_t pid, const char *binary)
{
	char path[PATH_MAX];
	struct gc_links g = { .pid = pid };
	void *v;
	int r;

	for (size_t i = 0; i < c->n_gc; i++)
		if (c->gc[i].pid == pid)
			return 0;
	/* the file as the process sees it (a container's own root) */
	if (snprintf(path, sizeof(path), "/proc/%u/root%s", pid, binary) >= (int)sizeof(path))
		return -ENAMETOOLONG;
	g.start = bpf_program__attach_usdt(c->skel->progs.py_gc_start, pid, path, "python", "gc__start", NULL);
	if (!g.start)
		return -errno;
	g.done = bpf_program__attach_usdt(c->skel->progs.py_gc_done, pid, path, "python", "gc__done", NULL);
	if (!g.done) {
		r = -errno;
		bpf_link__destroy(g.start);
		return r;
	}
	v = reallocarray(c->gc, c->n_gc + 1, sizeof(*c->gc));
	if (!v) {
		bpf_link__destroy(g.start);
		bpf_link__destroy(g.done);
		return -ENOMEM;
	}
	c->gc = v;
	c->gc[c->n_gc++] = g;
	return 0;
}

static void gc_detach(struct capture *c, uint32_t pid)
{
	for (size_t i = 0; i < c->n_gc; i++) {
		if (c->gc[i].pid != pid)
			continue;
		bpf_link__destroy(c->gc[i].start);
		bpf_link__destroy(c->gc[i].done);
		c->gc[i] = c->gc[--c->n_gc];
		return;
	}
}

void capture_python_clear(struct capture *c, uint32_t pid)
{
	uint32_t key, next, slot = pid & (HP_FILTER_SIZE - 1);
	const void *prev = NULL;
	bool shared = false;

	gc_detach(c, pid);
	if (bpf_map__delete_elem(c->skel->maps.py_procs, &pid, sizeof(pid), 0) < 0)
		return; /* it was not walked */
	while (!shared && bpf_map__get_next_key(c->skel->maps.py_procs, prev, &next, sizeof(next)) == 0) {
		key = next;
		prev = &key;
		shared = (key & (HP_FILTER_SIZE - 1)) == slot;
	}
	if (!shared)
		c->skel->bss->py_filter[slot] = 0;
}

int capture_python_stats(const struct capture *c, uint64_t ret[HP_PYSTAT_MAX])
{
	int ncpus = libbpf_num_possible_cpus();
	_cleanup_free_ uint64_t *v = NULL;

	if (ncpus <= 0)
		return -EINVAL;
	v = calloc(ncpus, sizeof(*v));
	if (!v)
		return -ENOMEM;
	for (uint32_t i = 0; i < HP_PYSTAT_MAX; i++) {
		ret[i] = 0;
		if (bpf_map__lookup_elem(c->skel->maps.py_stats, &i, sizeof(i), v, ncpus * sizeof(*v), 0) < 0)
			return -errno;
		for (int k = 0; k < ncpus; k++)
			ret[i] += v[k];
	}
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
	c->globs = n > 0;
	return apply_groups(c);
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

bool capture_uses_task_storage(const struct capture *c)
{
	return c->task_storage;
}

int capture_task_entries(const struct capture *c)
{
	if (c->task_storage)
		return -EOPNOTSUPP;
	return task_map_keys(c->skel->maps.tasks, NULL, bpf_map__max_entries(c->skel->maps.tasks));
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

size_t capture_drops(const struct capture *c, struct drop_count ret[HP_CAPTURE_DROP_CAUSES])
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
		[HP_STAT_USTACK_SKIPPED] = "ustack_skipped",
		[HP_STAT_SWITCH_UNREPORTED] = "switch_unreported",
	};
	uint64_t stats[HP_STAT_MAX] = {};
	size_t n = 0;

	_Static_assert(HP_CAPTURE_DROP_CAUSES == HP_STAT_MAX + 1, "one drop cause per HP_STAT_* slot, and the runs skipped");
	(void)capture_stats(c, stats);
	stats[HP_STAT_EVENTS] = c->bad_records;
	for (size_t i = 1; i < HP_STAT_MAX; i++)
		ret[n++] = (struct drop_count){ causes[i], stats[i] };
	ret[n++] = (struct drop_count){ causes[HP_STAT_EVENTS], stats[HP_STAT_EVENTS] };
	ret[n++] = (struct drop_count){ "run_skipped", capture_runs_skipped(c) };
	return n;
}

uint64_t capture_runs_skipped(const struct capture *c)
{
	struct bpf_program *prog;
	uint64_t n = 0;

	bpf_object__for_each_program(prog, c->skel->obj)
	{
		struct bpf_prog_info info = {};
		__u32 len = sizeof(info);
		int fd = bpf_program__fd(prog);

		if (fd >= 0 && bpf_obj_get_info_by_fd(fd, &info, &len) == 0)
			n += info.recursion_misses;
	}
	return n;
}
