// SPDX-License-Identifier: GPL-2.0-only
/*
 * hostprofd's flags and config file (INI, parsed by libinih). One table maps each
 * config key to its flag; both go through settings_set(), so they cannot disagree.
 */
#include <errno.h>
#include <getopt.h>
#include <grp.h>
#include <ini.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <ctype.h>

#include "duration.h"
#include "formats.h"
#include "glob.h"
#include "hostprof.h"
#include "macro.h"
#include "settings.h"

enum {
	OPT_CONFIG = 0x100,
	OPT_SOCKET,
	OPT_SOCKET_GROUP,
	OPT_PID,
	OPT_WATCH_THREAD,
	OPT_DISPATCH_THREAD,
	OPT_RING_KB,
	OPT_WINDOW,
	OPT_BUFFER_MB,
	OPT_MEMORY_MB,
	OPT_USER_WATCHED,
	OPT_USER_MEMORY_MB,
	OPT_SYMBOLIZER_MB,
	OPT_FORCE_RAW_TP,
	OPT_FORCE_TASK_HASH,
	OPT_SYSCALLS,
	OPT_SYSCALL_MIN_US,
	OPT_OFFCPU_MIN_US,
	OPT_SAMPLE_HZ,
	OPT_UNWIND,
	OPT_UNWIND_STACK_KB,
	OPT_INTERFERENCE,
	OPT_IRQ_MIN_US,
	OPT_LOCK_MIN_US,
	OPT_GIL_MIN_US,
	OPT_PYTHON,
	OPT_PYTHON_GC,
	OPT_CPUS,
	OPT_SNAPSHOT_DIR,
	OPT_MAX_SNAPSHOTS,
	OPT_MAX_SNAPSHOT_MB,
	OPT_SNAPSHOT_FORMATS,
	OPT_METRICS_DIR,
	OPT_METRICS_INTERVAL,
	OPT_TRIGGER,
	OPT_RECORD,
	OPT_DURATION,
	OPT_OUTPUT,
	OPT_FORMAT,
	OPT_VERBOSE,
	OPT_HELP,
	OPT_VERSION,
};

struct key {
	const char *key; /* in the config file; NULL: a flag only */
	const char *flag;
	int opt;
	bool list;
};

static const struct key keys[] = {
	{ NULL, "config", OPT_CONFIG, false },
	{ "socket", "socket", OPT_SOCKET, false },
	{ "socket_group", "socket-group", OPT_SOCKET_GROUP, false },
	{ "pids", "pid", OPT_PID, true },
	{ "watch_threads", "watch-thread", OPT_WATCH_THREAD, true },
	{ "dispatch_threads", "dispatch-thread", OPT_DISPATCH_THREAD, true },
	{ "ring_kb", "ring-kb", OPT_RING_KB, false },
	{ "window", "window", OPT_WINDOW, false },
	{ "buffer_mb", "buffer-mb", OPT_BUFFER_MB, false },
	{ "memory_mb", "memory-mb", OPT_MEMORY_MB, false },
	{ "user_watched", "user-watched", OPT_USER_WATCHED, false },
	{ "user_memory_mb", "user-memory-mb", OPT_USER_MEMORY_MB, false },
	{ "symbolizer_mb", "symbolizer-mb", OPT_SYMBOLIZER_MB, false },
	{ "force_raw_tp", "force-raw-tp", OPT_FORCE_RAW_TP, false },
	{ "force_task_hash", "force-task-hash", OPT_FORCE_TASK_HASH, false },
	{ "syscalls", "syscalls", OPT_SYSCALLS, false },
	{ "syscall_min_us", "syscall-min-us", OPT_SYSCALL_MIN_US, false },
	{ "offcpu_min_us", "offcpu-min-us", OPT_OFFCPU_MIN_US, false },
	{ "sample_hz", "sample-hz", OPT_SAMPLE_HZ, false },
	{ "unwind", "unwind", OPT_UNWIND, false },
	{ "unwind_stack_kb", "unwind-stack-kb", OPT_UNWIND_STACK_KB, false },
	{ "interference", "interference", OPT_INTERFERENCE, false },
	{ "irq_min_us", "irq-min-us", OPT_IRQ_MIN_US, false },
	{ "lock_min_us", "lock-min-us", OPT_LOCK_MIN_US, false },
	{ "gil_min_us", "gil-min-us", OPT_GIL_MIN_US, false },
	{ "python", "python", OPT_PYTHON, false },
	{ "python_gc", "python-gc", OPT_PYTHON_GC, false },
	{ "cpus", "cpus", OPT_CPUS, false },
	{ "snapshot_dir", "snapshot-dir", OPT_SNAPSHOT_DIR, false },
	{ "max_snapshots", "max-snapshots", OPT_MAX_SNAPSHOTS, false },
	{ "max_snapshot_mb", "max-snapshot-mb", OPT_MAX_SNAPSHOT_MB, false },
	{ "snapshot_formats", "snapshot-formats", OPT_SNAPSHOT_FORMATS, false },
	{ "metrics_dir", "metrics-dir", OPT_METRICS_DIR, false },
	{ "metrics_interval", "metrics-interval", OPT_METRICS_INTERVAL, false },
	{ NULL, "trigger", OPT_TRIGGER, true }, /* in the file: [trigger NAME] sections */
	/* one-shot mode: flags only */
	{ NULL, "record", OPT_RECORD, false },
	{ NULL, "duration", OPT_DURATION, false },
	{ NULL, "output", OPT_OUTPUT, false },
	{ NULL, "format", OPT_FORMAT, false },
};

static const char usage_text[] =
	"Usage: hostprofd [OPTION]...\n"
	"Always-on host-side stall profiler for AI training nodes (run as root).\n"
	"\n"
	"  --config FILE          config file (default " HOSTPROF_DEFAULT_CONFIG ")\n"
	"  --socket PATH          control socket (default /run/hostprof/hostprofd.sock)\n"
	"  --socket-group NAME    group allowed on the socket, mode 0660 (default: hostprof if it exists)\n"
	"  --pid PID              watch this process (repeatable)\n"
	"  --watch-thread GLOB    watch any process with a thread of this name (repeatable;\n"
	"                         default acl_thread; '*' and '?' match; 'none' for none)\n"
	"  --dispatch-thread GLOB the threads that dispatch work to the device, which the report\n"
	"                         is about first (repeatable; default acl_thread; 'none': the\n"
	"                         thread that ran the most)\n"
	"  --ring-kb N            kernel ring buffer per CPU, KiB, a power of two (default 1024)\n"
	"  --window DUR           history kept per process (default 30s)\n"
	"  --buffer-mb N          memory per process, MiB (default 32)\n"
	"  --memory-mb N          memory for all processes, MiB (default 512)\n"
	"  --user-watched N       processes of one user other than root watched at once\n"
	"                         (default 256; 0: no limit)\n"
	"  --user-memory-mb N     memory for one user's processes (not root's), MiB (default 128;\n"
	"                         0: no limit but --memory-mb)\n"
	"  --symbolizer-mb N      memory for symbol tables and mappings, MiB (default 512)\n"
	"  --syscalls MODE        exact: hook every syscall (histograms of every call);\n"
	"                         blocking: no syscall hooks, calls seen when they block (default blocking)\n"
	"  --syscall-min-us N     record single syscalls at or above N us (default 200;\n"
	"                         with --syscalls exact every syscall is counted in histograms)\n"
	"  --offcpu-min-us N      record off-CPU intervals at or above N us, with stacks (default 200)\n"
	"  --sample-hz N          on-CPU stack samples per second per CPU, while something is\n"
	"                         watched (default 99, 0 = off)\n"
	"  --unwind WHICH         the samples whose user stack is unwound from CFI (.eh_frame), not\n"
	"                         by frame pointers: all (of watched processes; default), named\n"
	"                         (threads a --watch-thread glob names), or off\n"
	"  --unwind-stack-kb N    KiB of user stack copied for it per sample, 1 to 16 (default 16)\n"
	"  --interference LIST    also capture irq (hard and soft interrupts on watched threads'\n"
	"                         CPUs), reclaim (direct/memcg reclaim, compaction), faults\n"
	"                         (minor/major page-fault counts), locks (kernel lock waits),\n"
	"                         fault-types (every user fault, by write/exec/protection;\n"
	"                         x86); 'all' or 'none' (default " HOSTPROF_DEFAULT_INTERFERENCE ")\n"
	"  --irq-min-us N         record interrupts at or above N us (default 0: all)\n"
	"  --lock-min-us N        record kernel lock waits at or above N us (default 0: all)\n"
	"  --gil-min-us N         record waits for a CPython GIL at or above N us (default 1000)\n"
	"  --python yes|no        read every thread's Python stack of a CPython 3.8-3.13\n"
	"                         process at each snapshot, and in samples and off-CPU (default yes)\n"
	"  --python-gc yes|no     record CPython's garbage-collection pauses (USDT gc__start/\n"
	"                         gc__done, where the interpreter has them; default no)\n"
	"  --cpus LIST            also record every task on these CPUs, e.g. 0-3,8 (default none)\n"
	"  --snapshot-dir DIR     automatic snapshots (default /var/lib/hostprof/snapshots)\n"
	"  --max-snapshots N      automatic snapshots kept (default 100)\n"
	"  --max-snapshot-mb N    MiB of automatic snapshots kept (default 1024)\n"
	"  --snapshot-formats L   formats of automatic snapshots (default hps,perfetto,report)\n"
	"  --metrics-dir DIR      write hostprofd.prom (Prometheus text) here for node_exporter's\n"
	"                         textfile collector, when DIR exists; 'none' for none\n"
	"                         (default /var/lib/prometheus/node-exporter)\n"
	"  --metrics-interval DUR how often (default 15s)\n"
	"  --trigger NAME:KIND:THREADS:THRESHOLD  (repeatable; 'none' for no trigger)\n"
	"                         KIND: preempt, runq, offcpu, syscall, reclaim, lock, irq,\n"
	"                         gil\n"
	"                         (THRESHOLD a duration), migrate (THRESHOLD moves within\n"
	"                         1 s); default\n"
	"                         acl_preempt:preempt:acl_thread:1ms\n"
	"  --force-raw-tp         attach raw tracepoints even where tp_btf works\n"
	"  --force-task-hash      per-thread state in a hash map even where task storage works\n"
	"\n"
	"One-shot mode, for hosts without the service (no socket, no triggers):\n"
	"  --record --pid PID --duration DUR -o PREFIX [--format LIST]\n"
	"                         capture for DUR (or until PID exits), write PREFIX.<ext> in\n"
	"                         the formats (default hps,perfetto,report) and exit\n"
	"  -v, --verbose          log debug messages\n"
	"  -h, --help             this text\n"
	"  --version              print the version\n";

static const struct key *key_by_name(const char *name)
{
	for (size_t i = 0; i < ARRAY_SIZE(keys); i++)
		if (keys[i].key && !strcmp(keys[i].key, name))
			return &keys[i];
	return NULL;
}

static const struct key *key_by_opt(int opt)
{
	for (size_t i = 0; i < ARRAY_SIZE(keys); i++)
		if (keys[i].opt == opt)
			return &keys[i];
	return NULL;
}

static void clear_list(struct settings *s, int opt)
{
	if (opt == OPT_PID) {
		free(s->pids);
		s->pids = NULL;
		s->n_pids = 0;
	} else if (opt == OPT_TRIGGER) {
		s->n_triggers = 0;
	} else if (opt == OPT_WATCH_THREAD) {
		for (size_t i = 0; i < s->n_watch_threads; i++)
			free(s->watch_threads[i]);
		free(s->watch_threads);
		s->watch_threads = NULL;
		s->n_watch_threads = 0;
	} else if (opt == OPT_DISPATCH_THREAD) {
		s->n_dispatch_threads = 0;
	}
}

static int add_pid(struct settings *s, const char *v)
{
	uint64_t pid;
	uint32_t *p;

	if (parse_uint(v, INT32_MAX, &pid) < 0 || pid == 0)
		return -EINVAL;
	for (size_t i = 0; i < s->n_pids; i++)
		if (s->pids[i] == pid)
			return 0;
	p = realloc(s->pids, (s->n_pids + 1) * sizeof(*p));
	if (!p)
		return -ENOMEM;
	s->pids = p;
	s->pids[s->n_pids++] = pid;
	return 0;
}

static int add_glob(struct settings *s, const char *v)
{
	char **p;

	if (!thread_glob_valid(v))
		return -EINVAL;
	for (size_t i = 0; i < s->n_watch_threads; i++)
		if (!strcmp(s->watch_threads[i], v))
			return 0;
	if (s->n_watch_threads >= HP_MAX_GLOBS)
		return -E2BIG;
	p = realloc(s->watch_threads, (s->n_watch_threads + 1) * sizeof(*p));
	if (!p)
		return -ENOMEM;
	s->watch_threads = p;
	s->watch_threads[s->n_watch_threads] = strdup(v);
	if (!s->watch_threads[s->n_watch_threads])
		return -ENOMEM;
	s->n_watch_threads++;
	return 0;
}

/* A dispatch_threads glob: kept in the settings themselves, as snapshots record them. */
static int add_dispatch(struct settings *s, const char *v)
{
	if (!thread_glob_valid(v))
		return -EINVAL;
	for (size_t i = 0; i < s->n_dispatch_threads; i++)
		if (!strcmp(s->dispatch_threads[i], v))
			return 0;
	if (s->n_dispatch_threads >= HP_MAX_GLOBS)
		return -E2BIG;
	snprintf(s->dispatch_threads[s->n_dispatch_threads++], sizeof(s->dispatch_threads[0]), "%s", v);
	return 0;
}

/* A list value: items separated by commas or blanks. */
static int add_items(struct settings *s, int opt, const char *value)
{
	_cleanup_free_ char *copy = strdup(value);
	char *save = NULL;
	int r;

	if (!copy)
		return -ENOMEM;
	if (!strcmp(value, "none"))
		return 0; /* the list was cleared: nothing */
	for (char *item = strtok_r(copy, ", \t", &save); item; item = strtok_r(NULL, ", \t", &save)) {
		r = opt == OPT_PID ? add_pid(s, item) : opt == OPT_DISPATCH_THREAD ? add_dispatch(s, item) : add_glob(s, item);
		if (r < 0)
			return r;
	}
	return 0;
}

static int set_string(char **dst, const char *v)
{
	char *c = strdup(v);

	if (!c)
		return -ENOMEM;
	free(*dst);
	*dst = c;
	return 0;
}

static bool parse_bool(const char *v, bool *ret)
{
	if (!strcmp(v, "1") || !strcmp(v, "yes") || !strcmp(v, "true") || !strcmp(v, "on"))
		*ret = true;
	else if (!strcmp(v, "0") || !strcmp(v, "no") || !strcmp(v, "false") || !strcmp(v, "off"))
		*ret = false;
	else
		return false;
	return true;
}

static const char *const kind_names[] = {
	[TRIGGER_PREEMPT] = "preempt", [TRIGGER_RUNQ] = "runq",	      [TRIGGER_OFFCPU] = "offcpu",
	[TRIGGER_SYSCALL] = "syscall", [TRIGGER_MIGRATE] = "migrate", [TRIGGER_RECLAIM] = "reclaim",
	[TRIGGER_LOCK] = "lock",       [TRIGGER_IRQ] = "irq",	      [TRIGGER_GIL] = "gil",
};

static const char *const interference_names[] = { "irq", "reclaim", "faults", "locks", "fault-types" };

int interference_parse(const char *v, unsigned *ret, char **bad)
{
	_cleanup_free_ char *copy = strdup(v);
	unsigned mask = 0;
	char *save = NULL;

	if (!copy)
		return -ENOMEM;
	for (char *w = strtok_r(copy, ", ", &save); w; w = strtok_r(NULL, ", ", &save)) {
		bool found = false;

		if (!strcmp(w, "none"))
			continue;
		if (!strcmp(w, "all")) {
			mask |= HP_INTF_IRQ | HP_INTF_RECLAIM | HP_INTF_FAULTS | HP_INTF_LOCKS | HP_INTF_FAULT_TYPES;
			continue;
		}
		for (size_t i = 0; i < ARRAY_SIZE(interference_names); i++)
			if (!strcmp(w, interference_names[i])) {
				mask |= 1u << i;
				found = true;
			}
		if (!found) {
			*bad = strdup(w);
			return -EINVAL;
		}
	}
	if (mask & HP_INTF_FAULT_TYPES) /* its counts go out with those of `faults` */
		mask |= HP_INTF_FAULTS;
	*ret = mask;
	return 0;
}

const char *unwind_mode_name(uint32_t mode)
{
	static const char *const names[_UNWIND_MODE_MAX] = {
		[UNWIND_MODE_ALL] = "all",
		[UNWIND_MODE_NAMED] = "named",
		[UNWIND_MODE_OFF] = "off",
	};

	return mode < _UNWIND_MODE_MAX ? names[mode] : "?";
}

const char *syscall_mode_name(uint32_t mode)
{
	return mode == HP_SYSCALLS_BLOCKING ? "blocking" : "exact";
}

const char *interference_text(unsigned mask, char *buf, size_t len)
{
	size_t n = 0;

	if (!len)
		return buf;
	buf[0] = 0;
	for (size_t i = 0; i < ARRAY_SIZE(interference_names); i++)
		if (mask & (1u << i))
			n += snprintf(buf + MIN(n, len - 1), len - MIN(n, len - 1), "%s%s", n ? "," : "",
				      interference_names[i]);
	if (!mask)
		snprintf(buf, len, "none");
	return buf;
}

const char *trigger_kind_name(enum trigger_kind kind)
{
	return (size_t)kind < ARRAY_SIZE(kind_names) ? kind_names[kind] : "?";
}

static bool trigger_name_valid(const char *name)
{
	size_t n = strlen(name);

	if (n == 0 || n >= sizeof(((struct trigger_def *)0)->name))
		return false;
	for (const char *c = name; *c; c++)
		if (!isalnum((unsigned char)*c) && *c != '_' && *c != '-')
			return false;
	return true;
}

static void trigger_defaults(struct trigger_def *t, const char *name)
{
	*t = (struct trigger_def){
		.kind = TRIGGER_PREEMPT,
		.threshold = NSEC_PER_MSEC,
		.before_ns = 10 * NSEC_PER_SEC,
		.after_ns = NSEC_PER_SEC,
		.cooldown_ns = 60 * NSEC_PER_SEC,
	};
	snprintf(t->name, sizeof(t->name), "%s", name);
	snprintf(t->threads, sizeof(t->threads), "acl_thread");
}

static struct trigger_def *trigger_find(struct settings *s, const char *name, bool create)
{
	for (size_t i = 0; i < s->n_triggers; i++)
		if (!strcmp(s->triggers[i].name, name))
			return &s->triggers[i];
	if (!create || s->n_triggers >= HOSTPROF_MAX_TRIGGERS)
		return NULL;
	trigger_defaults(&s->triggers[s->n_triggers], name);
	return &s->triggers[s->n_triggers++];
}

static int trigger_set(struct trigger_def *t, const char *key, const char *v, const char **why);

/* One key of a [trigger NAME] section, or a field of --trigger. */
static int trigger_set(struct trigger_def *t, const char *key, const char *v, const char **why)
{
	uint64_t u;

	if (!strcmp(key, "kind")) {
		for (size_t i = 0; i < ARRAY_SIZE(kind_names); i++)
			if (!strcmp(v, kind_names[i])) {
				t->kind = i;
				/* a threshold given before the kind is read for this kind */
				if (t->threshold_text[0]) {
					char text[sizeof(t->threshold_text)];

					memcpy(text, t->threshold_text, sizeof(text));
					return trigger_set(t, "threshold", text, why);
				}
				return 0;
			}
		*why = "kind must be preempt, runq, offcpu, syscall, migrate, reclaim, lock, irq or gil";
		return -EINVAL;
	}
	if (!strcmp(key, "threads")) {
		*why = "threads must be a glob of 1 to 15 characters";
		if (!thread_glob_valid(v))
			return -EINVAL;
		snprintf(t->threads, sizeof(t->threads), "%s", v);
		return 0;
	}
	if (!strcmp(key, "threshold")) {
		if (t->kind == TRIGGER_MIGRATE) {
			*why = "a migrate threshold is a number of moves within 1 s, 1 to 1000000";
			if (parse_uint(v, 1000000, &u) < 0 || u == 0)
				return -EINVAL;
		} else {
			*why = "threshold must be a duration like 1ms or 500us";
			if (parse_duration(v, &u) < 0 || u == 0)
				return -EINVAL;
		}
		t->threshold = u;
		snprintf(t->threshold_text, sizeof(t->threshold_text), "%s", v);
		return 0;
	}
	if (!strcmp(key, "before") || !strcmp(key, "after") || !strcmp(key, "cooldown")) {
		*why = "must be a duration up to 1h, like 10s";
		if (parse_duration(v, &u) < 0 || u > 3600 * NSEC_PER_SEC)
			return -EINVAL;
		*(!strcmp(key, "before") ? &t->before_ns : !strcmp(key, "after") ? &t->after_ns : &t->cooldown_ns) = u;
		return 0;
	}
	*why = "unknown key in a [trigger] section (kind, threads, threshold, before, after, cooldown)";
	return -EINVAL;
}

/* NAME:KIND:THREADS:THRESHOLD */
static int trigger_parse_flag(struct settings *s, const char *v, const char **why)
{
	_cleanup_free_ char *copy = strdup(v);
	char *f[4], *save = NULL;
	struct trigger_def *t;
	int r;

	if (!copy)
		return -ENOMEM;
	if (!strcmp(v, "none"))
		return 0; /* the list was cleared: no trigger */
	for (int i = 0; i < 4; i++) {
		f[i] = strtok_r(i ? NULL : copy, ":", &save);
		if (!f[i]) {
			*why = "must be NAME:KIND:THREADS:THRESHOLD, e.g. acl_preempt:preempt:acl_thread:1ms";
			return -EINVAL;
		}
	}
	if (strtok_r(NULL, ":", &save)) {
		*why = "must be NAME:KIND:THREADS:THRESHOLD, e.g. acl_preempt:preempt:acl_thread:1ms";
		return -EINVAL;
	}
	if (!trigger_name_valid(f[0])) {
		*why = "a trigger name has 1 to 31 letters, digits, '_' or '-'";
		return -EINVAL;
	}
	t = trigger_find(s, f[0], true);
	if (!t) {
		*why = "at most 16 triggers";
		return -E2BIG;
	}
	r = trigger_set(t, "kind", f[1], why);
	if (r >= 0)
		r = trigger_set(t, "threads", f[2], why);
	if (r >= 0)
		r = trigger_set(t, "threshold", f[3], why);
	return r;
}

/* "0-3,8": bits in mask; "" or "none": no CPU. */
static int parse_cpu_list(const char *v, uint64_t mask[16])
{
	_cleanup_free_ char *copy = strdup(v);
	uint64_t m[16] = {};
	char *save = NULL;

	if (!copy)
		return -ENOMEM;
	if (strcmp(v, "none"))
		for (char *item = strtok_r(copy, ", \t", &save); item; item = strtok_r(NULL, ", \t", &save)) {
			char *dash = strchr(item, '-');
			uint64_t lo, hi;

			if (dash)
				*dash = 0;
			if (parse_uint(item, HP_MAX_CPUS - 1, &lo) < 0)
				return -EINVAL;
			hi = lo;
			if (dash && (parse_uint(dash + 1, HP_MAX_CPUS - 1, &hi) < 0 || hi < lo))
				return -EINVAL;
			for (uint64_t c = lo; c <= hi; c++)
				m[c / 64] |= 1ULL << (c % 64);
		}
	memcpy(mask, m, sizeof(m));
	return 0;
}

/* Set one value; *why says what is wrong with it. */
static int settings_set(struct settings *s, int opt, const char *v, const char **why)
{
	uint64_t u;
	int r;

	switch (opt) {
	case OPT_SOCKET:
		if (v[0] != '/') {
			*why = "must be an absolute path";
			return -EINVAL;
		}
		return set_string(&s->socket, v);
	case OPT_SOCKET_GROUP:
		s->socket_group_explicit = true;
		return set_string(&s->socket_group, v);
	case OPT_PID:
		r = add_items(s, opt, v);
		*why = "must be process ids";
		return r;
	case OPT_WATCH_THREAD:
	case OPT_DISPATCH_THREAD:
		r = add_items(s, opt, v);
		*why = r == -E2BIG ? "at most 8 patterns" : "must be 1 to 15 characters";
		return r;
	case OPT_RING_KB:
		*why = "must be a power of two from 4 to 1048576 (KiB)";
		if (parse_uint(v, 1 << 20, &u) < 0 || u < 4 || (u & (u - 1)))
			return -EINVAL;
		s->ring_kb = u;
		return 0;
	case OPT_WINDOW:
		*why = "must be a duration of 1s to 1h, like 30s or 2m";
		if (parse_duration(v, &u) < 0 || u < NSEC_PER_SEC || u > 3600 * NSEC_PER_SEC)
			return -EINVAL;
		s->window_ns = u;
		return 0;
	case OPT_BUFFER_MB:
	case OPT_MEMORY_MB:
		*why = "must be a number of MiB from 1 to 1048576";
		if (parse_uint(v, 1 << 20, &u) < 0 || u < 1)
			return -EINVAL;
		*(opt == OPT_BUFFER_MB ? &s->buffer_mb : &s->memory_mb) = u;
		return 0;
	case OPT_USER_WATCHED:
		*why = "must be a number of processes from 0 (no limit) to 4096";
		_Static_assert(HP_MAX_WATCHED == 4096, "the message above");
		if (parse_uint(v, HP_MAX_WATCHED, &u) < 0)
			return -EINVAL;
		s->user_watched = u;
		return 0;
	case OPT_USER_MEMORY_MB:
		*why = "must be a number of MiB from 0 (no limit) to 1048576";
		if (parse_uint(v, 1 << 20, &u) < 0)
			return -EINVAL;
		s->user_memory_mb = u;
		return 0;
	case OPT_SYMBOLIZER_MB:
		*why = "must be a number of MiB from 1 to 1048576";
		if (parse_uint(v, 1 << 20, &u) < 0 || u < 1)
			return -EINVAL;
		s->symbolizer_mb = u;
		return 0;
	case OPT_FORCE_RAW_TP:
		*why = "must be yes or no";
		return parse_bool(v, &s->force_raw_tp) ? 0 : -EINVAL;
	case OPT_FORCE_TASK_HASH:
		*why = "must be yes or no";
		return parse_bool(v, &s->force_task_hash) ? 0 : -EINVAL;
	case OPT_SYSCALLS:
		*why = "must be exact or blocking";
		if (!strcmp(v, "exact"))
			s->syscall_mode = HP_SYSCALLS_EXACT;
		else if (!strcmp(v, "blocking"))
			s->syscall_mode = HP_SYSCALLS_BLOCKING;
		else
			return -EINVAL;
		return 0;
	case OPT_SYSCALL_MIN_US:
	case OPT_OFFCPU_MIN_US:
		*why = "must be a number of microseconds up to 60000000";
		if (parse_uint(v, 60000000, &u) < 0)
			return -EINVAL;
		*(opt == OPT_SYSCALL_MIN_US ? &s->syscall_min_ns : &s->offcpu_min_ns) = u * NSEC_PER_USEC;
		return 0;
	case OPT_SAMPLE_HZ:
		*why = "must be 0 (off) to 10000";
		if (parse_uint(v, 10000, &u) < 0)
			return -EINVAL;
		s->sample_hz = u;
		return 0;
	case OPT_UNWIND:
		*why = "must be all, named or off";
		for (uint32_t m = 0; m < _UNWIND_MODE_MAX; m++)
			if (!strcmp(v, unwind_mode_name(m))) {
				s->unwind = m;
				return 0;
			}
		return -EINVAL;
	case OPT_UNWIND_STACK_KB:
		*why = "must be a number of KiB from 1 to 16";
		_Static_assert(HP_RAW_STACK_MAX == 16 * 1024, "the message above");
		if (parse_uint(v, HP_RAW_STACK_MAX / 1024, &u) < 0 || u < 1)
			return -EINVAL;
		s->unwind_stack_kb = u;
		return 0;
	case OPT_INTERFERENCE: {
		_cleanup_free_ char *bad = NULL;

		*why = "must be a list of irq, reclaim, faults, locks, fault-types, or all, or none";
		return interference_parse(v, &s->interference, &bad);
	}
	case OPT_IRQ_MIN_US:
	case OPT_LOCK_MIN_US:
		*why = "must be a number of microseconds up to 60000000";
		if (parse_uint(v, 60000000, &u) < 0)
			return -EINVAL;
		*(opt == OPT_IRQ_MIN_US ? &s->irq_min_ns : &s->lock_min_ns) = u * NSEC_PER_USEC;
		return 0;
	case OPT_GIL_MIN_US:
		*why = "must be a number of microseconds up to 60000000";
		if (parse_uint(v, 60000000, &u) < 0)
			return -EINVAL;
		s->gil_min_ns = u * NSEC_PER_USEC;
		return 0;
	case OPT_PYTHON:
		*why = "must be yes or no";
		return parse_bool(v, &s->python) ? 0 : -EINVAL;
	case OPT_PYTHON_GC:
		*why = "must be yes or no";
		return parse_bool(v, &s->python_gc) ? 0 : -EINVAL;
	case OPT_CPUS:
		*why = "must be a CPU list like 0-3,8 (CPUs below 1024)";
		r = parse_cpu_list(v, s->cpus);
		if (r < 0)
			return r;
		return set_string(&s->cpus_text, v);
	case OPT_SNAPSHOT_DIR:
		*why = "must be an absolute path";
		if (v[0] != '/')
			return -EINVAL;
		return set_string(&s->snapshot_dir, v);
	case OPT_MAX_SNAPSHOTS:
		*why = "must be a number from 1 to 100000";
		if (parse_uint(v, 100000, &u) < 0 || u == 0)
			return -EINVAL;
		s->max_snapshots = u;
		return 0;
	case OPT_MAX_SNAPSHOT_MB:
		*why = "must be a number of MiB from 1 to 1048576";
		if (parse_uint(v, 1 << 20, &u) < 0 || u == 0)
			return -EINVAL;
		s->max_snapshot_mb = u;
		return 0;
	case OPT_SNAPSHOT_FORMATS: {
		_cleanup_free_ char *bad = NULL;

		*why = "must be formats from perfetto, json, folded, pprof, svg, report, report-json, hps, all";
		r = formats_parse(v, &s->snapshot_formats, &bad);
		if (r < 0)
			return r;
		s->snapshot_formats |= 1u << FMT_HPS; /* fetch and snapshots need the canonical file */
		return 0;
	}
	case OPT_METRICS_DIR:
		*why = "must be an absolute path, or none";
		if (!strcmp(v, "none"))
			return set_string(&s->metrics_dir, "");
		if (v[0] != '/')
			return -EINVAL;
		return set_string(&s->metrics_dir, v);
	case OPT_METRICS_INTERVAL:
		*why = "must be a duration of 1s to 1h, like 15s";
		if (parse_duration(v, &u) < 0 || u < NSEC_PER_SEC || u > 3600 * NSEC_PER_SEC)
			return -EINVAL;
		s->metrics_interval_ns = u;
		return 0;
	case OPT_TRIGGER:
		return trigger_parse_flag(s, v, why);
	case OPT_RECORD:
		s->record = true;
		return 0;
	case OPT_DURATION:
		*why = "must be a duration from 100ms to 1h, like 10s";
		if (parse_duration(v, &u) < 0 || u < 100 * NSEC_PER_MSEC || u > 3600 * NSEC_PER_SEC)
			return -EINVAL;
		s->duration_ns = u;
		return 0;
	case OPT_OUTPUT:
		*why = "must not be empty";
		if (!*v)
			return -EINVAL;
		return set_string(&s->output, v);
	case OPT_FORMAT: {
		_cleanup_free_ char *bad = NULL;

		*why = "must be formats from perfetto, json, folded, pprof, svg, report, report-json, hps, all";
		return formats_parse(v, &s->record_formats, &bad);
	}
	}
	*why = "unknown";
	return -EINVAL;
}

struct ini_ctx {
	struct settings *s;
	const char *path;
	int error;
	bool cleared[OPT_VERSION + 1];
};

static int on_ini(void *user, const char *section, const char *name, const char *value)
{
	struct ini_ctx *ctx = user;
	const struct key *k;
	const char *why = "";
	int r;

	if (section[0]) {
		struct trigger_def *t;

		if (strncmp(section, "trigger ", 8) || !trigger_name_valid(section + 8)) {
			fprintf(stderr, "hostprofd: %s: unknown section [%s] (sections are [trigger NAME], NAME of "
					"letters, digits, '_' and '-')\n",
				ctx->path, section);
			ctx->error = -EINVAL;
			return 0;
		}
		if (!ctx->cleared[OPT_TRIGGER]) {
			clear_list(ctx->s, OPT_TRIGGER); /* the file's triggers replace the default */
			ctx->cleared[OPT_TRIGGER] = true;
		}
		t = trigger_find(ctx->s, section + 8, true);
		if (!t) {
			fprintf(stderr, "hostprofd: %s: at most %d triggers\n", ctx->path, HOSTPROF_MAX_TRIGGERS);
			ctx->error = -E2BIG;
			return 0;
		}
		r = trigger_set(t, name, value, &why);
		if (r < 0) {
			fprintf(stderr, "hostprofd: %s: [%s] %s = %s: %s\n", ctx->path, section, name, value, why);
			ctx->error = r;
			return 0;
		}
		return 1;
	}
	k = key_by_name(name);
	if (!k) {
		fprintf(stderr, "hostprofd: %s: unknown key '%s'\n", ctx->path, name);
		ctx->error = -EINVAL;
		return 0;
	}
	if (k->list && !ctx->cleared[k->opt]) {
		clear_list(ctx->s, k->opt); /* the file's list replaces the default */
		ctx->cleared[k->opt] = true;
	}
	r = settings_set(ctx->s, k->opt, value, &why);
	if (r < 0) {
		fprintf(stderr, "hostprofd: %s: %s = %s: %s\n", ctx->path, name, value, why);
		ctx->error = r;
		return 0;
	}
	return 1;
}

static int load_defaults(struct settings *s)
{
	*s = (struct settings){
		.ring_kb = 1024,
		.window_ns = 30 * NSEC_PER_SEC,
		.buffer_mb = 32,
		.memory_mb = 512,
		.user_watched = 256,
		.user_memory_mb = 128,
		.symbolizer_mb = 512,
		.syscall_min_ns = 200 * NSEC_PER_USEC,
		.offcpu_min_ns = 200 * NSEC_PER_USEC,
		.sample_hz = 99,
		.unwind = UNWIND_MODE_ALL,
		.unwind_stack_kb = HP_RAW_STACK_MAX / 1024,
		/* a fifth of CPython's switch interval (5 ms): every take that timed out once is
		 * recorded, the short hand-overs between threads that drop it around I/O only
		 * counted; and at most ~1000 records a second per waiting thread */
		.gil_min_ns = 1000 * NSEC_PER_USEC,
		.syscall_mode = HOSTPROF_DEFAULT_SYSCALLS,
		.python = true,
		.metrics_interval_ns = 15 * NSEC_PER_SEC,
	};
	{
		_cleanup_free_ char *bad = NULL;

		if (interference_parse(HOSTPROF_DEFAULT_INTERFERENCE, &s->interference, &bad) < 0)
			return -EINVAL;
	}
	s->max_snapshots = 100;
	s->max_snapshot_mb = 1024;
	s->snapshot_formats = 1u << FMT_HPS | 1u << FMT_PERFETTO | 1u << FMT_REPORT;
	s->n_triggers = 1;
	trigger_defaults(&s->triggers[0], "acl_preempt");
	if (set_string(&s->config, HOSTPROF_DEFAULT_CONFIG) < 0 ||
	    set_string(&s->snapshot_dir, "/var/lib/hostprof/snapshots") < 0 ||
	    set_string(&s->metrics_dir, "/var/lib/prometheus/node-exporter") < 0 ||
	    set_string(&s->socket, "/run/hostprof/hostprofd.sock") < 0 ||
	    set_string(&s->socket_group, "hostprof") < 0 || add_glob(s, "acl_thread") < 0 ||
	    add_dispatch(s, "acl_thread") < 0)
		return -ENOMEM;
	return 0;
}

static int load_config(struct settings *s)
{
	struct ini_ctx ctx = { .s = s, .path = s->config };
	FILE *f;
	int line;

	f = fopen(s->config, "re");
	if (!f) {
		if (errno == ENOENT && !s->config_explicit)
			return 0; /* no config file: the defaults */
		fprintf(stderr, "hostprofd: cannot read config file %s: %m\n", s->config);
		return -errno;
	}
	line = ini_parse_file(f, on_ini, &ctx);
	fclose(f);
	if (ctx.error < 0)
		return ctx.error;
	if (line != 0) {
		fprintf(stderr, "hostprofd: %s:%d: not a 'key = value' line\n", s->config, line);
		return -EINVAL;
	}
	return 0;
}

int settings_load(int argc, char **argv, struct settings *ret)
{
	struct option opts[ARRAY_SIZE(keys) + 4] = {};
	struct settings s;
	size_t n = 0;
	int c, r;
	bool cleared[OPT_VERSION + 1] = {};

	for (size_t i = 0; i < ARRAY_SIZE(keys); i++)
		opts[n++] = (struct option){ keys[i].flag,
					     keys[i].opt == OPT_FORCE_RAW_TP || keys[i].opt == OPT_FORCE_TASK_HASH ||
							     keys[i].opt == OPT_RECORD
						     ? no_argument
												     : required_argument,
					     NULL, keys[i].opt };
	opts[n++] = (struct option){ "verbose", no_argument, NULL, 'v' };
	opts[n++] = (struct option){ "help", no_argument, NULL, 'h' };
	opts[n++] = (struct option){ "version", no_argument, NULL, OPT_VERSION };

	r = load_defaults(&s);
	if (r < 0)
		goto fail;

	/* first pass: --config, --help, --version, and usage errors */
	optind = 1;
	opterr = 1;
	while ((c = getopt_long(argc, argv, "vho:", opts, NULL)) != -1) {
		switch (c) {
		case 'h':
			fputs(usage_text, stdout);
			settings_free(&s);
			return 1;
		case OPT_VERSION:
			printf("hostprofd %s\n", HOSTPROF_VERSION);
			settings_free(&s);
			return 1;
		case OPT_CONFIG:
			r = set_string(&s.config, optarg);
			if (r < 0)
				goto fail;
			s.config_explicit = true;
			break;
		case '?':
			fprintf(stderr, "Try 'hostprofd --help'.\n");
			r = -EINVAL;
			goto fail;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "hostprofd: unexpected argument '%s'\nTry 'hostprofd --help'.\n", argv[optind]);
		r = -EINVAL;
		goto fail;
	}

	r = load_config(&s);
	if (r < 0)
		goto fail;

	/* second pass: flags replace the file's values */
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "vho:", opts, NULL)) != -1) {
		const struct key *k = key_by_opt(c == 'o' ? OPT_OUTPUT : c);
		const char *why = "";

		if (c == 'o')
			c = OPT_OUTPUT;

		if (c == 'v') {
			s.verbose = true;
			continue;
		}
		if (!k || c == OPT_CONFIG)
			continue;
		if (k->list && !cleared[c]) {
			clear_list(&s, c);
			cleared[c] = true;
		}
		r = settings_set(&s, c, c == OPT_FORCE_RAW_TP || c == OPT_FORCE_TASK_HASH ? "yes" : optarg, &why);
		if (r < 0) {
			fprintf(stderr, "hostprofd: --%s %s: %s\n", k->flag, optarg ? optarg : "", why);
			goto fail;
		}
	}
	if (s.record && (s.n_pids != 1 || !s.duration_ns || !s.output)) {
		fprintf(stderr, "hostprofd: --record needs one --pid, --duration and -o PREFIX, e.g.\n"
				"  hostprofd --record --pid 4242 --duration 10s -o /tmp/stall\n");
		r = -EINVAL;
		goto fail;
	}
	if (!s.record && (s.duration_ns || s.output || s.record_formats)) {
		fprintf(stderr, "hostprofd: --duration, -o and --format go with --record\n");
		r = -EINVAL;
		goto fail;
	}
	*ret = s;
	return 0;
fail:
	settings_free(&s);
	return r;
}

void settings_free(struct settings *s)
{
	clear_list(s, OPT_PID);
	clear_list(s, OPT_WATCH_THREAD);
	free(s->config);
	free(s->socket);
	free(s->socket_group);
	free(s->cpus_text);
	free(s->snapshot_dir);
	free(s->metrics_dir);
	free(s->output);
	*s = (struct settings){};
}
