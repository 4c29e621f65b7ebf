// SPDX-License-Identifier: GPL-2.0-only
/* Snapshot formats by name, written atomically; see formats.h. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "export.h"
#include "formats.h"
#include "macro.h"

struct format_file {
	const char *ext;
	int (*write)(const Hostprof__Snapshot *snap, FILE *f);
};

static int write_perfetto(const Hostprof__Snapshot *snap, FILE *f)
{
	return snapshot_export_perfetto(snap, f);
}

static int write_json(const Hostprof__Snapshot *snap, FILE *f)
{
	return snapshot_export_json(snap, f);
}

static int write_oncpu_folded(const Hostprof__Snapshot *snap, FILE *f)
{
	return snapshot_export_folded(snap, false, f);
}

static int write_offcpu_folded(const Hostprof__Snapshot *snap, FILE *f)
{
	return snapshot_export_folded(snap, true, f);
}

static int write_pprof(const Hostprof__Snapshot *snap, FILE *f)
{
	return snapshot_export_pprof(snap, f);
}

static int write_oncpu_svg(const Hostprof__Snapshot *snap, FILE *f)
{
	return snapshot_export_svg(snap, false, f);
}

static int write_offcpu_svg(const Hostprof__Snapshot *snap, FILE *f)
{
	return snapshot_export_svg(snap, true, f);
}

static int write_report(const Hostprof__Snapshot *snap, FILE *f)
{
	return snapshot_report_text(snap, f);
}

static int write_report_json(const Hostprof__Snapshot *snap, FILE *f)
{
	return snapshot_report_json(snap, f);
}

static const struct {
	const char *name;
	struct format_file files[2];
} formats[FMT_MAX] = {
	[FMT_PERFETTO] = { "perfetto", { { ".pftrace", write_perfetto } } },
	[FMT_JSON] = { "json", { { ".json", write_json } } },
	[FMT_FOLDED] = { "folded", { { ".oncpu.folded", write_oncpu_folded }, { ".offcpu.folded", write_offcpu_folded } } },
	[FMT_PPROF] = { "pprof", { { ".pb.gz", write_pprof } } },
	[FMT_SVG] = { "svg", { { ".oncpu.svg", write_oncpu_svg }, { ".offcpu.svg", write_offcpu_svg } } },
	[FMT_REPORT] = { "report", { { ".txt", write_report } } },
	[FMT_REPORT_JSON] = { "report-json", { { ".report.json", write_report_json } } },
	[FMT_HPS] = { "hps", { { ".hps", NULL } } },
};

int formats_parse(const char *list, unsigned *ret_mask, char **ret_bad)
{
	_cleanup_free_ char *copy = strdup(list);
	unsigned mask = 0;
	char *save = NULL;

	if (!copy)
		return -ENOMEM;
	for (char *w = strtok_r(copy, ", \t", &save); w; w = strtok_r(NULL, ", \t", &save)) {
		size_t i;

		if (!strcmp(w, "all")) {
			mask |= FMT_ALL;
			continue;
		}
		for (i = 0; i < FMT_MAX; i++)
			if (!strcmp(w, formats[i].name))
				break;
		if (i == FMT_MAX) {
			*ret_bad = strdup(w);
			return -EINVAL;
		}
		mask |= 1u << i;
	}
	if (!mask) {
		*ret_bad = strdup(list);
		return -EINVAL;
	}
	*ret_mask = mask;
	return 0;
}

size_t formats_files(unsigned mask)
{
	size_t n = 0;

	for (size_t i = 0; i < FMT_MAX; i++)
		if (mask & (1u << i))
			for (size_t k = 0; k < 2; k++)
				n += formats[i].files[k].ext != NULL;
	return n;
}

#define WRITEBACK_STEP (8u << 20) /* start writing a file back to disk every this many bytes */
#define FILE_BUFFER (1u << 20)

/* A file being written: what the exporter wrote, and up to where its writeback was started. */
struct out_file {
	int fd;
	off_t written, started;
};

/*
 * stdio's write: the exporter's bytes into the file, and every WRITEBACK_STEP the disk
 * asked to start on them (sync_file_range(2) does not wait), so that the fsync at the end
 * finds little left: for a 100 MB trace, the disk works while the exporter does.
 */
static ssize_t out_write(void *cookie, const char *buf, size_t size)
{
	struct out_file *o = cookie;
	ssize_t n = write(o->fd, buf, size);

	if (n <= 0)
		return n < 0 ? -1 : 0;
	o->written += n;
	if (o->written - o->started >= (off_t)WRITEBACK_STEP) {
		(void)sync_file_range(o->fd, o->started, o->written - o->started, SYNC_FILE_RANGE_WRITE);
		o->started = o->written;
	}
	return n;
}

/* One file into a new temporary file in the same directory, left open in o->fd. */
static int write_tmp(const char *path, mode_t mode, const Hostprof__Snapshot *snap, const uint8_t *raw,
		     size_t raw_len, int (*write_fn)(const Hostprof__Snapshot *, FILE *), struct out_file *o,
		     char **ret_tmp)
{
	static const cookie_io_functions_t io = { .write = out_write };
	_cleanup_free_ char *tmp = NULL;
	FILE *f;
	int r = 0;

	if (asprintf(&tmp, "%s.tmpXXXXXX", path) < 0)
		return -ENOMEM;
	*o = (struct out_file){ .fd = mkostemp(tmp, O_CLOEXEC) };
	if (o->fd < 0)
		return negative_errno();
	if (fchmod(o->fd, mode) < 0 || !(f = fopencookie(o, "w", io))) {
		r = negative_errno();
		goto fail;
	}
	setvbuf(f, NULL, _IOFBF, FILE_BUFFER);
	if (write_fn)
		r = write_fn(snap, f);
	else if (fwrite(raw, 1, raw_len, f) != raw_len)
		r = negative_errno();
	if (r >= 0 && fflush(f) != 0)
		r = negative_errno();
	if (fclose(f) != 0 && r >= 0) /* the fd stays open: the cookie has no close */
		r = negative_errno();
	if (r < 0)
		goto fail;
	if (o->written > o->started)
		(void)sync_file_range(o->fd, o->started, o->written - o->started, SYNC_FILE_RANGE_WRITE);
	*ret_tmp = TAKE_PTR(tmp);
	return 0;
fail:
	close(o->fd);
	o->fd = -1;
	unlink(tmp);
	return r;
}

void formats_out_free(struct formats_out *o)
{
	for (size_t i = 0; i < o->n; i++)
		free(o->paths[i]);
	free(o->paths);
	*o = (struct formats_out){};
}

/* The files of one call: what each is made of, where it goes, how it went. */
struct job {
	const struct format_file *ff;
	char *path, *tmp;
	struct out_file file;
	int r;
};

struct jobs {
	const Hostprof__Snapshot *snap;
	const uint8_t *hps;
	size_t hps_len;
	mode_t mode;
	struct job *v;
	size_t n, next; /* next: the first job no thread has taken */
	pthread_mutex_t lock;
};

static void *run_jobs(void *arg)
{
	struct jobs *js = arg;

	for (;;) {
		struct job *j;

		pthread_mutex_lock(&js->lock);
		j = js->next < js->n ? &js->v[js->next++] : NULL;
		pthread_mutex_unlock(&js->lock);
		if (!j)
			return NULL;
		j->r = write_tmp(j->path, js->mode, js->snap, js->hps, js->hps_len, j->ff->write, &j->file, &j->tmp);
	}
}

#define MAX_WRITERS 4

/* How many files are made at once: the CPUs there are, up to MAX_WRITERS and the files. */
static size_t writers(size_t nfiles)
{
	long ncpus = sysconf(_SC_NPROCESSORS_ONLN);

	return MAX((size_t)1, MIN(nfiles, MIN((size_t)MAX_WRITERS, ncpus > 0 ? (size_t)ncpus : 1)));
}

/*
 * The files are made by up to writers() threads at once (the exporters only read the
 * snapshot), the longest first, each into its temporary file with its writeback started
 * as it goes; then each is fsync'ed (what is left of it) and renamed into place, in the
 * formats' order: a failure before the renames leaves nothing behind.
 */
int formats_write(const Hostprof__Snapshot *snap, const uint8_t *hps, size_t hps_len, unsigned mask,
		  const char *output, bool prefix_only, mode_t mode, struct formats_out *ret)
{
	/* what takes longest to make, first: each thread then finishes about together */
	static const unsigned order[FMT_MAX] = { FMT_JSON, FMT_REPORT, FMT_REPORT_JSON, FMT_PERFETTO,
						 FMT_SVG, FMT_FOLDED, FMT_PPROF, FMT_HPS };
	size_t nfiles = formats_files(mask), nthreads = writers(nfiles), started = 0, renamed = 0;
	struct jobs js = { .snap = snap, .hps = hps, .hps_len = hps_len, .mode = mode };
	pthread_t threads[MAX_WRITERS];
	struct formats_out out = {};
	_cleanup_free_ struct job *by_cost = NULL;
	int r = 0;

	js.v = calloc(MAX(nfiles, (size_t)1), sizeof(*js.v));
	by_cost = calloc(MAX(nfiles, (size_t)1), sizeof(*by_cost));
	out.paths = calloc(MAX(nfiles, (size_t)1), sizeof(char *));
	if (!js.v || !by_cost || !out.paths) {
		free(js.v);
		free(out.paths);
		return -ENOMEM;
	}
	/* the files, in the formats' order (the order of the paths out) */
	for (size_t i = 0; i < FMT_MAX && r >= 0; i++) {
		if (!(mask & (1u << i)))
			continue;
		for (size_t k = 0; k < 2 && formats[i].files[k].ext && r >= 0; k++) {
			const struct format_file *ff = &formats[i].files[k];
			struct job *j = &js.v[js.n];

			if (i != FMT_HPS && !ff->write) {
				r = -EOPNOTSUPP;
				break;
			}
			if (nfiles == 1 && !prefix_only)
				j->path = strdup(output);
			else if (asprintf(&j->path, "%s%s", output, ff->ext) < 0)
				j->path = NULL;
			if (!j->path) {
				r = -ENOMEM;
				break;
			}
			j->ff = ff;
			j->file.fd = -1;
			js.n++;
		}
	}
	/* made in the order of their cost: by_cost holds the same jobs, sorted */
	if (r >= 0) {
		size_t n = 0;

		for (size_t c = 0; c < FMT_MAX; c++)
			for (size_t i = 0; i < js.n; i++)
				if (js.v[i].ff >= formats[order[c]].files && js.v[i].ff < formats[order[c]].files + 2)
					by_cost[n++] = js.v[i];
		memcpy(js.v, by_cost, js.n * sizeof(*js.v));
		pthread_mutex_init(&js.lock, NULL);
		for (; started + 1 < nthreads; started++)
			if (pthread_create(&threads[started], NULL, run_jobs, &js) != 0)
				break; /* fewer threads: this one does the rest */
		run_jobs(&js);
		for (size_t t = 0; t < started; t++)
			pthread_join(threads[t], NULL);
		pthread_mutex_destroy(&js.lock);
		for (size_t i = 0; i < js.n && r >= 0; i++)
			r = js.v[i].r;
	}
	/* back in the formats' order */
	for (size_t c = 0, n = 0; c < FMT_MAX; c++) {
		if (!(mask & (1u << c)))
			continue;
		for (size_t k = 0; k < 2 && formats[c].files[k].ext; k++)
			for (size_t i = 0; i < js.n; i++)
				if (js.v[i].ff == &formats[c].files[k])
					by_cost[n++] = js.v[i];
	}
	memcpy(js.v, by_cost, js.n * sizeof(*js.v));

	for (size_t i = 0; i < js.n && r >= 0; i++)
		if (fsync(js.v[i].file.fd) < 0 && errno != EINVAL)
			r = negative_errno();
	for (size_t i = 0; i < js.n; i++)
		if (js.v[i].file.fd >= 0)
			close(js.v[i].file.fd);
	for (; renamed < js.n && r >= 0; renamed++)
		if (rename(js.v[renamed].tmp, js.v[renamed].path) < 0)
			r = negative_errno();
	if (r < 0) {
		/* all or nothing: the files already in place go again, and every temporary one */
		for (size_t i = 0; i < js.n; i++)
			if (i < renamed)
				unlink(js.v[i].path);
			else if (js.v[i].tmp)
				unlink(js.v[i].tmp);
	}
	for (size_t i = 0; i < js.n; i++) {
		free(js.v[i].tmp);
		if (r < 0)
			free(js.v[i].path);
		else
			out.paths[out.n++] = js.v[i].path;
	}
	free(js.v);
	if (r < 0) {
		free(out.paths);
		return r;
	}
	*ret = out;
	return 0;
}

int formats_write_new(const char *path, mode_t mode, int (*write_fn)(void *ud, FILE *f), void *ud)
{
	_cleanup_free_ char *tmp = NULL;
	struct stat st;
	FILE *f;
	int fd, r = 0;

	if (lstat(path, &st) == 0)
		return -EEXIST;
	if (errno != ENOENT)
		return negative_errno();
	if (asprintf(&tmp, "%s.tmpXXXXXX", path) < 0)
		return -ENOMEM;
	fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0)
		return negative_errno();
	if (fchmod(fd, mode) < 0 || !(f = fdopen(fd, "w"))) {
		r = negative_errno();
		close(fd);
		unlink(tmp);
		return r;
	}
	setvbuf(f, NULL, _IOFBF, FILE_BUFFER);
	r = write_fn(ud, f);
	if (r >= 0 && fflush(f) != 0)
		r = negative_errno();
	if (r >= 0 && fsync(fileno(f)) < 0)
		r = negative_errno();
	if (fclose(f) != 0 && r >= 0)
		r = negative_errno();
	/* into place only where nothing is: a file made meanwhile is not replaced */
	if (r >= 0 && renameat2(AT_FDCWD, tmp, AT_FDCWD, path, RENAME_NOREPLACE) < 0) {
		r = negative_errno();
		if (r == -EINVAL) /* a file system without RENAME_NOREPLACE */
			r = link(tmp, path) < 0 ? negative_errno() : 0;
	}
	unlink(tmp); /* renamed: gone already; linked: the second name */
	return r;
}
