/* SPDX-License-Identifier: GPL-2.0-only */
/* The automatic snapshots on disk; see snapstore.c. */
#ifndef HOSTPROF_SNAPSTORE_H
#define HOSTPROF_SNAPSTORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "procfs.h"
#include "snapshot.pb-c.h"

struct snap_entry {
	char name[96];      /* <UTC>-<pid>-<trigger> */
	char trigger[32];
	uint32_t pid;
	struct proc_cred owner; /* of the process, when watching began */
	uint64_t realtime_ns;
	uint64_t bytes;
	const char *exts[12];
	size_t n_exts;
	char summary[256]; /* the report's first line (snapshots of this run) */
};

struct snapstore;

/* The store of dir; nothing is read until snapstore_ready(). NULL + errno. */
struct snapstore *snapstore_new(const char *dir, uint64_t max_count, uint64_t max_bytes);
void snapstore_free(struct snapstore *st);
/* Creates the directory (0700) if needed and indexes what is there, once; a failure is
 * tried again at the next call. Until it succeeds the store is empty. -ENOTDIR: not a
 * directory (a symlink is not); -EPERM: not the daemon's, or writable by others. */
int snapstore_ready(struct snapstore *st);
/* Reload: another directory is indexed anew at the next snapstore_ready(). */
int snapstore_reconfigure(struct snapstore *st, const char *dir, uint64_t max_count, uint64_t max_bytes);
void snapstore_set_limits(struct snapstore *st, uint64_t max_count, uint64_t max_bytes);
const char *snapstore_dir(const struct snapstore *st);

/* Write the formats (the .hps always) atomically as root's 0600 files, named
 * <UTC>-<pid>-<trigger>; nothing is left of a failed write. Safe in a snapshot job's child. */
int snapstore_write(const struct snapstore *st, const Hostprof__Snapshot *snap, const uint8_t *hps, size_t hps_len,
		    unsigned formats, uint32_t pid, const char *trigger, uint64_t realtime_ns, char ret_name[96]);
/* Index what snapstore_write wrote, then prune by count and size, oldest first. */
int snapstore_add(struct snapstore *st, const char *name, const struct proc_cred *owner, const char *summary,
		  const struct snap_entry **ret);

/* Automatic snapshots added (snapstore_add) and pruned since the daemon started. */
void snapstore_counts(const struct snapstore *st, uint64_t *ret_saved, uint64_t *ret_pruned);

/* Oldest first. */
size_t snapstore_count(const struct snapstore *st);
const struct snap_entry *snapstore_at(const struct snapstore *st, size_t i);
const struct snap_entry *snapstore_find(const struct snapstore *st, const char *name);
int snapstore_read_hps(const struct snapstore *st, const struct snap_entry *e, uint8_t **ret_data, size_t *ret_len);

#endif
