// SPDX-License-Identifier: GPL-2.0-only
/*
 * fuzz-hps: the bytes are a .hps file that hostprofctl reads. When the first byte is odd,
 * the rest is taken with HPS_MAGIC put in front (so the fuzzer spends its time inside the
 * snapshot rather than on the magic); when it is even, the rest is taken as it is.
 *
 * hps_unpack() must reject or accept without crashing, and every exporter of lib/export.h
 * that this build has (build.sh defines HAVE_<NAME> for each) must handle whatever
 * hps_unpack() accepted: they write to /dev/null, and any return value is fine as long
 * as nothing crashes, leaks or reads out of bounds. The cross-node report and the merge
 * (merge.h) get the snapshot twice, the second copy as another host's.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "export.h"
#include "hps.h"
#if defined(HAVE_SNAPSHOT_MERGE_PERFETTO) || defined(HAVE_SNAPSHOT_REPORT_NODES)
#include "merge.h"
#endif

static FILE *devnull;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	devnull = fopen("/dev/null", "we");
	if (!devnull) {
		perror("fuzz-hps: /dev/null");
		exit(1);
	}
	return 0;
}

static void export_all(const Hostprof__Snapshot *snap)
{
#ifdef HAVE_SNAPSHOT_EXPORT_PERFETTO
	(void)snapshot_export_perfetto(snap, devnull);
#endif
#ifdef HAVE_SNAPSHOT_EXPORT_JSON
	(void)snapshot_export_json(snap, devnull);
#endif
#ifdef HAVE_SNAPSHOT_EXPORT_FOLDED
	(void)snapshot_export_folded(snap, false, devnull);
	(void)snapshot_export_folded(snap, true, devnull);
#endif
#ifdef HAVE_SNAPSHOT_EXPORT_PPROF
	(void)snapshot_export_pprof(snap, devnull);
#endif
#ifdef HAVE_SNAPSHOT_EXPORT_SVG
	(void)snapshot_export_svg(snap, false, devnull);
	(void)snapshot_export_svg(snap, true, devnull);
#endif
#ifdef HAVE_SNAPSHOT_REPORT_TEXT
	(void)snapshot_report_text(snap, devnull);
#endif
#ifdef HAVE_SNAPSHOT_REPORT_JSON
	(void)snapshot_report_json(snap, devnull);
#endif
	fflush(devnull);
	clearerr(devnull);
}

/* The snapshot and another copy of it as host "fuzz-other": report_nodes, then merge. */
static void merge_both(const uint8_t *p, size_t n, Hostprof__Snapshot *snap)
{
#if defined(HAVE_SNAPSHOT_MERGE_PERFETTO) || defined(HAVE_SNAPSHOT_REPORT_NODES)
	Hostprof__Snapshot *other = NULL, *both[2];
	struct merge_check check;
	char *host = NULL;

	if (hps_unpack(p, n, &other) < 0)
		return;
	if (other->host) {
		host = other->host->hostname;
		other->host->hostname = "fuzz-other";
	}
	both[0] = snap;
	both[1] = other;
#ifdef HAVE_SNAPSHOT_REPORT_NODES
	(void)snapshot_report_nodes(both, 2, false, devnull, &check);
	(void)snapshot_report_nodes(both, 2, true, devnull, &check);
#endif
#ifdef HAVE_SNAPSHOT_MERGE_PERFETTO
	(void)snapshot_merge_perfetto(both, 2, devnull, &check); /* shifts both: last */
#endif
	if (other->host)
		other->host->hostname = host;
	hps_free(other);
	fflush(devnull);
	clearerr(devnull);
#endif
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	Hostprof__Snapshot *snap = NULL;
	uint8_t *buf = NULL;
	const uint8_t *p;
	size_t n;

	if (size < 1)
		return 0;
	if (data[0] & 1) {
		n = HPS_MAGIC_LEN + size - 1;
		buf = malloc(n);
		if (!buf)
			return 0;
		memcpy(buf, HPS_MAGIC, HPS_MAGIC_LEN);
		memcpy(buf + HPS_MAGIC_LEN, data + 1, size - 1);
		p = buf;
	} else {
		/* a copy of exactly the rest, so ASan sees a read past its end */
		n = size - 1;
		buf = malloc(n ? n : 1);
		if (!buf)
			return 0;
		memcpy(buf, data + 1, n);
		p = buf;
	}
	if (hps_unpack(p, n, &snap) == 0) {
		export_all(snap);
		merge_both(p, n, snap);
		hps_free(snap);
	}
	free(buf);
	return 0;
}
