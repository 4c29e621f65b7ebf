/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * hostprofd's settings: embedded defaults, then the config file, then the command line.
 * Every config key has a flag; a flag replaces the file's value (lists too).
 */
#ifndef HOSTPROF_SETTINGS_H
#define HOSTPROF_SETTINGS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hostprof.h"

#define HOSTPROF_DEFAULT_CONFIG "/etc/hostprof/hostprofd.conf"
#define HOSTPROF_MAX_TRIGGERS 16
/* How syscalls are captured unless told otherwise (`syscalls`): see README, "Syscall
 * capture modes", for why. */
#define HOSTPROF_DEFAULT_SYSCALLS HP_SYSCALLS_BLOCKING
/* What --interference captures unless told otherwise: see README, "What is captured". */
#define HOSTPROF_DEFAULT_INTERFERENCE "irq,reclaim,faults,locks"

/* Trigger kinds (SPEC §6) */
enum trigger_kind {
	TRIGGER_PREEMPT, /* switched out runnable, then waited >= threshold to run again */
	TRIGGER_RUNQ,    /* wakeup to run >= threshold */
	TRIGGER_OFFCPU,  /* blocked >= threshold */
	TRIGGER_SYSCALL, /* one syscall >= threshold */
	TRIGGER_MIGRATE, /* >= threshold moves to another CPU within 1 s */
	TRIGGER_RECLAIM, /* one direct/memcg reclaim or compaction >= threshold */
	TRIGGER_LOCK,    /* one kernel lock wait >= threshold */
	TRIGGER_IRQ,     /* one hard or soft interrupt >= threshold on a watched thread's CPU */
	TRIGGER_GIL,     /* one wait for a CPython GIL >= threshold */
};

struct trigger_def {
	char name[32];    /* [A-Za-z0-9_-]: it goes into file names */
	enum trigger_kind kind;
	char threads[16]; /* thread-name glob */
	uint64_t threshold; /* ns, or a count for TRIGGER_MIGRATE */
	char threshold_text[32]; /* as written: read again if `kind` comes after it */
	uint64_t before_ns, after_ns, cooldown_ns;
};

struct settings {
	char *config;
	bool config_explicit;
	char *socket;
	char *socket_group;
	bool socket_group_explicit;
	uint32_t *pids;
	size_t n_pids;
	char **watch_threads;
	size_t n_watch_threads;
	/* dispatch_threads: the threads the report is about first (snapshots record them) */
	char dispatch_threads[HP_MAX_GLOBS][16];
	size_t n_dispatch_threads;
	uint32_t ring_kb;
	uint64_t window_ns;
	uint64_t buffer_mb;
	uint64_t memory_mb;
	uint32_t user_watched;   /* per user other than root; 0: no limit */
	uint64_t user_memory_mb; /* per user other than root; 0: no limit */
	uint64_t symbolizer_mb;
	uint64_t syscall_min_ns;
	uint64_t offcpu_min_ns;
	uint32_t sample_hz;
	uint32_t unwind;          /* UNWIND_*: the samples whose user stack is unwound from CFI */
	uint32_t unwind_stack_kb; /* stack copied per sample for it */
	unsigned interference; /* HP_INTF_* mask */
	uint64_t irq_min_ns;
	uint64_t lock_min_ns;
	uint64_t gil_min_ns; /* takes of a CPython GIL that waited this long are recorded */
	bool python; /* read CPython processes' Python stacks at each snapshot */
	bool python_gc; /* their garbage-collection pauses (USDT), opt-in */
	uint64_t cpus[16]; /* --cpus mask: bit i of cpus[i / 64]; HP_MAX_CPUS bits */
	char *cpus_text;   /* as given, for status */
	bool force_raw_tp;
	bool force_task_hash;
	uint32_t syscall_mode; /* HP_SYSCALLS_* */
	bool verbose;
	char *snapshot_dir;
	uint64_t max_snapshots;
	uint64_t max_snapshot_mb;
	unsigned snapshot_formats; /* FMT_* mask, for automatic snapshots */
	char *metrics_dir; /* node_exporter's textfile directory; "": no metrics file */
	uint64_t metrics_interval_ns;
	struct trigger_def triggers[HOSTPROF_MAX_TRIGGERS];
	size_t n_triggers;
	/* one-shot mode */
	bool record;
	uint64_t duration_ns;
	char *output;
	unsigned record_formats; /* 0: hps,perfetto,report */
};

const char *trigger_kind_name(enum trigger_kind kind);
/* "irq,reclaim,faults,locks" (or "none", "all") into HP_INTF_*; *bad: the unknown word. */
int interference_parse(const char *v, unsigned *ret, char **bad);
/* The mask as that list, "none" for 0. */
const char *interference_text(unsigned mask, char *buf, size_t len);
/* --unwind: which samples copy their stack for the CFI unwinder */
enum {
	UNWIND_MODE_ALL,   /* every sample of a watched process */
	UNWIND_MODE_NAMED, /* of the threads a --watch-thread glob names */
	UNWIND_MODE_OFF,   /* none: frame pointers */
	_UNWIND_MODE_MAX,
};
/* "all", "named", "off" */
const char *unwind_mode_name(uint32_t mode);

/* "exact" or "blocking". */
const char *syscall_mode_name(uint32_t mode);

/* Parse argv and the config file it names. Returns 0, 1 when --help/--version was
 * handled, or -errno with the reason already printed. */
int settings_load(int argc, char **argv, struct settings *ret);
void settings_free(struct settings *s);

#endif
