// SPDX-License-Identifier: GPL-2.0-only
/* Snapshot formats by name, written atomically; see formats.h. */
#include <errno.h>
#include <fcntl.h>
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

/* One file, through a temporary file in the same directory and a rename. */
static int write_atomic(const char *path, mode_t mode, const Hostprof__Snapshot *snap, const uint8_t *raw,
			size_t raw_len, int (*write)(const Hostprof__Snapshot *, FILE *))
{
	_cleanup_free_ char *tmp = NULL;
	FILE *f;
	int fd, r = 0;

	if (asprintf(&tmp, "%s.tmpXXXXXX", path) < 0)
		return -ENOMEM;
	fd = mkstemp(tmp);
	if (fd < 0)
		return negative_errno();
	if (fchmod(fd, mode) < 0) {
		r = negative_errno();
		close(fd);
		unlink(tmp);
		return r;
	}
	f = fdopen(fd, "w");
	if (!f) {
		r = negative_errno();
		close(fd);
		unlink(tmp);
		return r;
	}
	if (write)
		r = write(snap, f);
	else if (fwrite(raw, 1, raw_len, f) != raw_len)
		r = negative_errno();
	if (r >= 0 && fflush(f) != 0)
		r = negative_errno();
	if (r >= 0 && fsync(fileno(f)) < 0 && errno != EINVAL)
		r = negative_errno();
	if (fclose(f) != 0 && r >= 0)
		r = negative_errno();
	if (r >= 0 && rename(tmp, path) < 0)
		r = negative_errno();
	if (r < 0)
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

int formats_write(const Hostprof__Snapshot *snap, const uint8_t *hps, size_t hps_len, unsigned mask,
		  const char *output, bool prefix_only, mode_t mode, struct formats_out *ret)
{
	size_t nfiles = formats_files(mask);
	struct formats_out out = {};
	int r = 0;

	out.paths = calloc(MAX(nfiles, (size_t)1), sizeof(char *));
	if (!out.paths)
		return -ENOMEM;
	for (size_t i = 0; i < FMT_MAX && r >= 0; i++) {
		if (!(mask & (1u << i)))
			continue;
		for (size_t k = 0; k < 2 && formats[i].files[k].ext && r >= 0; k++) {
			const struct format_file *ff = &formats[i].files[k];
			char *path;

			if (i != FMT_HPS && !ff->write) {
				r = -EOPNOTSUPP;
				break;
			}
			if (nfiles == 1 && !prefix_only)
				path = strdup(output);
			else if (asprintf(&path, "%s%s", output, ff->ext) < 0)
				path = NULL;
			if (!path) {
				r = -ENOMEM;
				break;
			}
			r = write_atomic(path, mode, snap, hps, hps_len, ff->write);
			if (r < 0) {
				free(path);
				break;
			}
			out.paths[out.n++] = path;
		}
	}
	if (r < 0) {
		/* all or nothing */
		for (size_t i = 0; i < out.n; i++)
			unlink(out.paths[i]);
		formats_out_free(&out);
		return r;
	}
	*ret = out;
	return 0;
}
