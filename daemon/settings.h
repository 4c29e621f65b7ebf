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

#define HOSTPROF_DEFAULT_CONFIG "/etc/hostprof/hostprofd.conf"

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
	uint32_t ring_kb;
	uint64_t window_ns;
	uint64_t buffer_mb;
	uint64_t memory_mb;
	uint64_t syscall_min_ns;
	uint64_t offcpu_min_ns;
	uint32_t sample_hz;
	uint64_t cpus[16]; /* --cpus mask: bit i of cpus[i / 64]; HP_MAX_CPUS bits */
	char *cpus_text;   /* as given, for status */
	bool force_raw_tp;
	bool verbose;
};

/* Parse argv and the config file it names. Returns 0, 1 when --help/--version was
 * handled, or -errno with the reason already printed. */
int settings_load(int argc, char **argv, struct settings *ret);
void settings_free(struct settings *s);

#endif
