/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Exporters: each turns one Hostprof__Snapshot into a file format. They validate the
 * snapshot before writing anything, write to a caller-owned FILE, and return 0 or -errno.
 */
#ifndef HOSTPROF_EXPORT_H
#define HOSTPROF_EXPORT_H

#include <stdio.h>

#include "snapshot.pb-c.h"

/*
 * Writes a Perfetto trace (a serialized perfetto.protos.Trace, ".pftrace"). Returns 0,
 * -EINVAL for an inconsistent snapshot (nothing is written then), -ENOMEM, or the errno
 * of a failed write.
 */
int snapshot_export_perfetto(const Hostprof__Snapshot *snap, FILE *out);

#endif
