// SPDX-License-Identifier: GPL-2.0-only
/*
 * hps-node: a snapshot as if another node had taken it, for the merge and cross-node
 * report tests. Reads IN, writes OUT with:
 *   --host NAME            its host
 *   --boot-later NS        that node booted NS later (negative: earlier): every BOOTTIME
 *                          time of the snapshot, its anchor's included, NS less
 *   --realtime-ahead NS    that node's REALTIME reads NS ahead (negative: behind) of this
 *                          one's: the anchor's REALTIME NS more
 *   --plant REALTIME_NS    a marker "planted" at that wall-clock instant on that node's
 *                          clock (its BOOTTIME through the rewritten anchor), on the
 *                          snapshot's main thread, detail = the node's host
 *   --sync synced|unsynced|unrecorded, --max-error NS, --est-error NS: its clock's sync
 *   --rank R, --job ID     the process's labels
 *   --start-time T         the process's start time (Process.start_time): another process
 *                          that had its pid, for two ranks on one host
 *   --no-anchor            no ClockAnchor at all
 * Prints, on stdout, the BOOTTIME of the planted marker.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hps.h"
#include "merge.h"

static int64_t num(const char *s)
{
	char *end;
	long long v;

	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno || *end || end == s) {
		fprintf(stderr, "hps-node: not a number: %s\n", s);
		exit(2);
	}
	return v;
}

static int run(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "host", required_argument, NULL, 'h' },
		{ "boot-later", required_argument, NULL, 'b' },
		{ "realtime-ahead", required_argument, NULL, 'r' },
		{ "plant", required_argument, NULL, 'p' },
		{ "sync", required_argument, NULL, 's' },
		{ "max-error", required_argument, NULL, 'm' },
		{ "est-error", required_argument, NULL, 'e' },
		{ "rank", required_argument, NULL, 'R' },
		{ "job", required_argument, NULL, 'J' },
		{ "no-anchor", no_argument, NULL, 'n' },
		{ "start-time", required_argument, NULL, 'T' },
		{},
	};
	const char *host = NULL, *sync = NULL, *rank = NULL, *job = NULL;
	int64_t later = 0, ahead = 0, plant = 0, max_err = -1, est_err = -1, start_time = -1;
	bool no_anchor = false, has_plant = false;
	Hostprof__Snapshot *s;
	Hostprof__Marker mk = HOSTPROF__MARKER__INIT, **markers;
	uint8_t *data;
	size_t len;
	FILE *f;
	int opt, r;

	while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (opt) {
		case 'h':
			host = optarg;
			break;
		case 'b':
			later = num(optarg);
			break;
		case 'r':
			ahead = num(optarg);
			break;
		case 'p':
			plant = num(optarg), has_plant = true;
			break;
		case 's':
			sync = optarg;
			break;
		case 'm':
			max_err = num(optarg);
			break;
		case 'e':
			est_err = num(optarg);
			break;
		case 'R':
			rank = optarg;
			break;
		case 'J':
			job = optarg;
			break;
		case 'n':
			no_anchor = true;
			break;
		case 'T':
			start_time = num(optarg);
			break;
		default:
			return 2;
		}
	}
	if (optind != argc - 2) {
		fprintf(stderr, "usage: hps-node [options] IN.hps OUT.hps\n");
		return 2;
	}
	r = hps_read_file(argv[optind], &s);
	if (r < 0) {
		fprintf(stderr, "hps-node: %s: %s\n", argv[optind], strerror(-r));
		return 1;
	}
	if (!s->clock || !s->host) {
		fprintf(stderr, "hps-node: %s has no anchor or no host\n", argv[optind]);
		return 1;
	}
	if (host)
		s->host->hostname = (char *)host;
	merge_shift(s, (uint64_t)-later); /* modulo 2^64: NS less */
	s->clock->realtime_ns += (uint64_t)ahead;
	if (sync) {
		s->clock->has_synced = strcmp(sync, "unrecorded") != 0;
		s->clock->synced = !strcmp(sync, "synced");
	}
	if (max_err >= 0)
		s->clock->has_max_error_ns = true, s->clock->max_error_ns = (uint64_t)max_err;
	if (est_err >= 0)
		s->clock->has_est_error_ns = true, s->clock->est_error_ns = (uint64_t)est_err;
	for (size_t i = 0; i < s->n_processes; i++)
		if (s->processes[i]->pid == s->pid) {
			if (rank)
				s->processes[i]->rank = (char *)rank;
			if (job)
				s->processes[i]->job = (char *)job;
			if (start_time >= 0)
				s->processes[i]->start_time = (uint64_t)start_time;
		}
	if (has_plant) {
		mk.has_ts = mk.has_tid = true;
		mk.ts = (uint64_t)plant - (s->clock->realtime_ns - s->clock->boottime_ns);
		mk.tid = s->pid;
		mk.name = "planted";
		mk.detail = s->host->hostname;
		if (mk.ts < s->start_ns || mk.ts > s->end_ns) {
			fprintf(stderr, "hps-node: the planted instant lies outside the window\n");
			return 1;
		}
		markers = realloc(s->markers, (s->n_markers + 1) * sizeof(*markers));
		if (!markers)
			return 1;
		markers[s->n_markers++] = &mk;
		s->markers = markers;
		printf("%" PRIu64 "\n", mk.ts);
	}
	if (no_anchor)
		s->clock = NULL; /* leaked with the message: a test tool */
	r = hps_pack(s, &data, &len);
	if (r < 0 || !(f = fopen(argv[optind + 1], "we")) || fwrite(data, 1, len, f) != len ||
	    fclose(f) != 0) {
		fprintf(stderr, "hps-node: cannot write %s\n", argv[optind + 1]);
		return 1;
	}
	free(data);
	return 0;
}

/* The message is rewritten in place with strings and markers it does not own (argv, the
 * stack), so it is never freed: the tool ends with _exit, past the leak check. */
int main(int argc, char **argv)
{
	int rc = run(argc, argv);

	fflush(stdout);
	_exit(rc);
}
