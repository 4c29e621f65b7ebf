// SPDX-License-Identifier: GPL-2.0-only
/*
 * One-shot mode (`hostprofd --record --pid N --duration D -o PREFIX`): capture with the
 * same programs for the duration (or until the process exits), write the formats, exit.
 */
#include <stdio.h>
#include <stdlib.h>

#include "capture.h"
#include "daemon.h"
#include "duration.h"
#include "formats.h"
#include "hps.h"
#include "log.h"
#include "recorder.h"
#include "snapsvc.h"

int daemon_record(struct daemon *d)
{
	uint32_t pid = d->settings.pids[0];
	unsigned formats = d->settings.record_formats ? d->settings.record_formats
						      : 1u << FMT_HPS | 1u << FMT_PERFETTO | 1u << FMT_REPORT;
	Hostprof__Snapshot *snap = NULL;
	struct formats_out out = {};
	struct snapshot_req req = { .reason = "record" };
	uint8_t *data = NULL;
	uint64_t events = 0;
	size_t len = 0;
	char dur[32];
	int r;

	d->record_deadline = now_boottime_ns() + d->settings.duration_ns;
	log_info("recording pid %u for %s", pid, format_duration(d->settings.duration_ns, dur, sizeof(dur)));
	r = loop_run(d->loop);
	if (r < 0)
		return EXIT_FAILURE;
	(void)capture_drain(d->capture);
	req.p = recorder_find(d->recorder, pid);
	if (!req.p)
		return log_error("pid %u left no history", pid), EXIT_FAILURE;
	r = snapsvc_build(d->snapsvc, &req, &data, &len, &events);
	if (r >= 0)
		r = hps_unpack(data, len, &snap);
	if (r >= 0)
		r = formats_write(snap, data, len, formats, d->settings.output, true, 0644, &out);
	if (r < 0) {
		log_error_errno(r, "Failed to write %s: %m", d->settings.output);
		r = EXIT_FAILURE;
	} else {
		for (size_t i = 0; i < out.n; i++)
			printf("%s\n", out.paths[i]);
		log_info("pid %u: %llu events in %zu files", pid, (unsigned long long)events, out.n);
		r = EXIT_SUCCESS;
	}
	formats_out_free(&out);
	hps_free(snap);
	free(data);
	return r;
}
