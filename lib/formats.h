/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The snapshot formats of SPEC §5, by name, and writing them next to each other under
 * one prefix. Shared by hostprofctl (snapshot, export, fetch) and hostprofd (--record,
 * automatic snapshots). Every file is written through a temporary file and renamed into
 * place once all of them are written and fsync'ed: a failed write (a full disk) leaves
 * nothing behind. Each file's writeback starts while it is written, so the disk works
 * while the next format is made.
 */
#ifndef HOSTPROF_FORMATS_H
#define HOSTPROF_FORMATS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "snapshot.pb-c.h"

enum {
	FMT_PERFETTO,
	FMT_JSON,
	FMT_FOLDED,
	FMT_PPROF,
	FMT_SVG,
	FMT_REPORT,
	FMT_REPORT_JSON,
	FMT_HPS,
	FMT_MAX,
};

#define FMT_ALL ((1u << FMT_MAX) - 1)

/* "perfetto,hps", "all": a mask of FMT_* bits. On error, *ret_bad names the bad word
 * (malloc'ed) and -EINVAL is returned. */
int formats_parse(const char *list, unsigned *ret_mask, char **ret_bad);
/* The files a mask makes. */
size_t formats_files(unsigned mask);

struct formats_out {
	char **paths; /* what was written, malloc'ed */
	size_t n;
};

/*
 * Write the formats in mask for one snapshot. hps/hps_len are the snapshot's bytes
 * (for FMT_HPS). output names the file when the formats make exactly one file, and is a
 * prefix (extensions appended) otherwise; with prefix_only it is always a prefix. Files
 * get mode (e.g. 0600). Returns 0 or -errno; on failure nothing of this call is left.
 */
int formats_write(const Hostprof__Snapshot *snap, const uint8_t *hps, size_t hps_len, unsigned mask,
		  const char *output, bool prefix_only, mode_t mode, struct formats_out *ret);
void formats_out_free(struct formats_out *o);

/*
 * One new file that write_fn(ud, f) makes (hostprofctl merge): written to a temporary file
 * in the same directory, fsync'ed, and renamed into place only if nothing is at path.
 * -EEXIST when something is (before or after the writing); on any failure nothing is left.
 */
int formats_write_new(const char *path, mode_t mode, int (*write_fn)(void *ud, FILE *f), void *ud);

#endif
