// SPDX-License-Identifier: GPL-2.0-only
/*
 * The automatic snapshots on disk: `<UTC yyyymmddThhmmssZ>-<pid>-<trigger>.<ext>` in the
 * snapshot directory, root's files (0600), written atomically, pruned by count and total
 * size, oldest first. An index in memory says who owns each (the uid of the process),
 * so a user lists and fetches only its own. Every path is built here from an indexed
 * name: a client never names a file.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "formats.h"
#include "hps.h"
#include "log.h"
#include "macro.h"
#include "snapstore.h"

struct snapstore {
	char *dir;
	struct snap_entry *v;
	size_t n, cap;
	uint64_t max_count, max_bytes;
	bool ready; /* the directory exists and is indexed */
	uint64_t saved, pruned; /* automatic snapshots indexed and pruned since start */
};

static const char *const known_exts[] = { ".hps",  ".pftrace",	 ".json",	 ".oncpu.folded", ".offcpu.folded",
					  ".pb.gz", ".oncpu.svg", ".offcpu.svg", ".txt",	  ".report.json" };

/* "20261129T101500Z-4242-acl_preempt": the time, pid and trigger, or false. */
static bool parse_name(const char *name, struct snap_entry *e)
{
	struct tm tm = {};
	const char *p;
	char *end;
	unsigned long pid;

	p = strptime(name, "%Y%m%dT%H%M%SZ-", &tm);
	if (!p)
		return false;
	pid = strtoul(p, &end, 10);
	if (end == p || *end != '-' || pid == 0 || pid > UINT32_MAX || !end[1] || strlen(end + 1) >= sizeof(e->trigger))
		return false;
	for (const char *c = end + 1; *c; c++)
		if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') || *c == '_' ||
		      *c == '-'))
			return false;
	snprintf(e->name, sizeof(e->name), "%s", name);
	snprintf(e->trigger, sizeof(e->trigger), "%s", end + 1);
	e->pid = pid;
	e->realtime_ns = (uint64_t)timegm(&tm) * 1000000000ULL;
	return true;
}

static int entry_cmp(const void *a, const void *b)
{
	const struct snap_entry *x = a, *y = b;

	if (x->realtime_ns != y->realtime_ns)
		return x->realtime_ns < y->realtime_ns ? -1 : 1;
	return strcmp(x->name, y->name);
}

static int push(struct snapstore *st, const struct snap_entry *e)
{
	if (st->n == st->cap) {
		size_t cap = st->cap ? st->cap * 2 : 64;
		struct snap_entry *v = realloc(st->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		st->v = v;
		st->cap = cap;
	}
	st->v[st->n++] = *e;
	return 0;
}

/* Sizes and extensions of an entry's files, from the directory: regular files only. */
static void stat_files(const struct snapstore *st, struct snap_entry *e)
{
	e->bytes = 0;
	e->n_exts = 0;
	for (size_t i = 0; i < ARRAY_SIZE(known_exts); i++) {
		char path[PATH_MAX];
		struct stat sb;

		snprintf(path, sizeof(path), "%s/%s%s", st->dir, e->name, known_exts[i]);
		if (lstat(path, &sb) < 0 || !S_ISREG(sb.st_mode))
			continue;
		e->bytes += sb.st_size;
		e->exts[e->n_exts++] = known_exts[i];
	}
}

/* The bytes of NAME.hps: a regular file, never followed through a link, never waited on
 * (a FIFO planted there is refused, not read), at most HPS_MAX_FILE. */
static int read_hps(const struct snapstore *st, const char *name, uint8_t **ret_data, size_t *ret_len)
{
	char path[PATH_MAX];
	_cleanup_close_ int fd = -1;
	struct stat sb;
	uint8_t *data;
	size_t off = 0;

	snprintf(path, sizeof(path), "%s/%s.hps", st->dir, name);
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY);
	if (fd < 0)
		return negative_errno();
	if (fstat(fd, &sb) < 0)
		return negative_errno();
	if (!S_ISREG(sb.st_mode))
		return -EINVAL;
	if ((uint64_t)sb.st_size > HPS_MAX_FILE)
		return -EFBIG;
	data = malloc(sb.st_size ? sb.st_size : 1);
	if (!data)
		return -ENOMEM;
	while (off < (size_t)sb.st_size) {
		ssize_t n = read(fd, data + off, sb.st_size - off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			free(data);
			return n < 0 ? negative_errno() : -EIO;
		}
		off += n;
	}
	*ret_data = data;
	*ret_len = off;
	return 0;
}

/* Owner and summary of an existing snapshot, from its .hps (when the store is indexed). */
static void read_meta(const struct snapstore *st, struct snap_entry *e)
{
	_cleanup_free_ uint8_t *data = NULL;
	Hostprof__Snapshot *snap;
	size_t len;

	e->owner = (struct proc_cred){}; /* unknown: root's (not dumpable) */
	if (read_hps(st, e->name, &data, &len) < 0 || hps_unpack(data, len, &snap) < 0)
		return;
	if (snap->n_processes) {
		const Hostprof__Process *p = snap->processes[0];

		/* a snapshot older than the full credentials: root's alone */
		if (p->has_uid && p->has_euid && p->has_suid && p->has_fsuid && p->has_gid && p->has_egid &&
		    p->has_sgid && p->has_fsgid && p->has_dumpable)
			e->owner = (struct proc_cred){
				.uid = p->uid, .euid = p->euid, .suid = p->suid, .fsuid = p->fsuid,
				.gid = p->gid, .egid = p->egid, .sgid = p->sgid, .fsgid = p->fsgid,
				.dumpable = p->dumpable && !p->cred_change_ns,
			};
	}
	hps_free(snap);
}

static int scan(struct snapstore *st)
{
	DIR *d = opendir(st->dir);
	struct dirent *de;

	if (!d)
		return negative_errno();
	while ((de = readdir(d))) {
		size_t len = strlen(de->d_name);
		struct snap_entry e = {};
		char name[128];

		if (len < 5 || len - 4 >= sizeof(name) || strcmp(de->d_name + len - 4, ".hps"))
			continue;
		memcpy(name, de->d_name, len - 4);
		name[len - 4] = 0;
		if (!parse_name(name, &e))
			continue;
		stat_files(st, &e);
		if (!e.n_exts || strcmp(e.exts[0], ".hps"))
			continue; /* its .hps is not a regular file */
		read_meta(st, &e);
		if (push(st, &e) < 0)
			break;
	}
	closedir(d);
	qsort_safe(st->v, st->n, sizeof(*st->v), entry_cmp);
	return 0;
}

static int mkdir_p(const char *path, mode_t mode)
{
	_cleanup_free_ char *copy = strdup(path);

	if (!copy)
		return -ENOMEM;
	for (char *p = copy + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = 0;
		if (mkdir(copy, 0755) < 0 && errno != EEXIST)
			return negative_errno();
		*p = '/';
	}
	if (mkdir(copy, mode) < 0 && errno != EEXIST)
		return negative_errno();
	return 0;
}

struct snapstore *snapstore_new(const char *dir, uint64_t max_count, uint64_t max_bytes)
{
	struct snapstore *st = calloc(1, sizeof(*st));

	if (!st)
		return NULL;
	st->dir = strdup(dir);
	st->max_count = max_count;
	st->max_bytes = max_bytes;
	if (!st->dir) {
		free(st);
		errno = ENOMEM;
		return NULL;
	}
	return st;
}

/* Only root may put files there: what is in it is served to users by name. */
static int check_dir(const char *dir)
{
	struct stat sb;

	if (lstat(dir, &sb) < 0)
		return negative_errno();
	if (!S_ISDIR(sb.st_mode))
		return -ENOTDIR; /* a symlink too */
	if (sb.st_uid != geteuid() || (sb.st_mode & 0022))
		return -EPERM;
	return 0;
}

int snapstore_ready(struct snapstore *st)
{
	int r;

	if (st->ready)
		return 0;
	st->n = 0;
	r = mkdir_p(st->dir, 0700);
	if (r >= 0)
		r = check_dir(st->dir);
	if (r >= 0)
		r = scan(st);
	if (r < 0) {
		st->n = 0;
		return r;
	}
	st->ready = true;
	return 0;
}

int snapstore_reconfigure(struct snapstore *st, const char *dir, uint64_t max_count, uint64_t max_bytes)
{
	if (strcmp(dir, st->dir)) {
		char *copy = strdup(dir);

		if (!copy)
			return -ENOMEM;
		free(st->dir);
		st->dir = copy;
		st->n = 0;
		st->ready = false;
	}
	snapstore_set_limits(st, max_count, max_bytes);
	return 0;
}

void snapstore_free(struct snapstore *st)
{
	if (!st)
		return;
	free(st->v);
	free(st->dir);
	free(st);
}

void snapstore_set_limits(struct snapstore *st, uint64_t max_count, uint64_t max_bytes)
{
	st->max_count = max_count;
	st->max_bytes = max_bytes;
}

const char *snapstore_dir(const struct snapstore *st)
{
	return st->dir;
}

static void remove_entry(struct snapstore *st, size_t i)
{
	for (size_t k = 0; k < st->v[i].n_exts; k++) {
		char path[PATH_MAX];

		snprintf(path, sizeof(path), "%s/%s%s", st->dir, st->v[i].name, st->v[i].exts[k]);
		if (unlink(path) < 0 && errno != ENOENT)
			log_warning_errno(-errno, "Failed to prune %s: %m, ignoring", path);
	}
	log_info("pruned automatic snapshot %s", st->v[i].name);
	st->pruned++;
	memmove(&st->v[i], &st->v[i + 1], (st->n - i - 1) * sizeof(*st->v));
	st->n--;
}

/* Oldest first, until both the count and the total size fit. */
static void prune(struct snapstore *st)
{
	uint64_t total = 0;

	for (size_t i = 0; i < st->n; i++)
		total += st->v[i].bytes;
	while (st->n > 1 && (st->n > st->max_count || total > st->max_bytes)) {
		total -= st->v[0].bytes;
		remove_entry(st, 0);
	}
}

int snapstore_write(const struct snapstore *st, const Hostprof__Snapshot *snap, const uint8_t *hps, size_t hps_len,
		    unsigned formats, uint32_t pid, const char *trigger, uint64_t realtime_ns, char ret_name[96])
{
	struct snap_entry e = {};
	struct formats_out out = {};
	_cleanup_free_ char *prefix = NULL;
	time_t secs = realtime_ns / 1000000000ULL;
	char stamp[32], name[128];
	struct tm tm;
	int r;

	gmtime_r(&secs, &tm);
	strftime(stamp, sizeof(stamp), "%Y%m%dT%H%M%SZ", &tm);
	snprintf(name, sizeof(name), "%s-%u-%s", stamp, pid, trigger);
	if (!parse_name(name, &e))
		return -EINVAL;
	if (snapstore_find(st, name))
		return -EEXIST; /* same process and trigger within one second: the cooldown failed */
	if (asprintf(&prefix, "%s/%s", st->dir, name) < 0)
		return -ENOMEM;
	r = formats_write(snap, hps, hps_len, formats | 1u << FMT_HPS, prefix, true, 0600, &out);
	if (r < 0)
		return r;
	formats_out_free(&out);
	memcpy(ret_name, e.name, sizeof(e.name)); /* parse_name checked it fits */
	return 0;
}

int snapstore_add(struct snapstore *st, const char *name, const struct proc_cred *owner, const char *summary,
		  const struct snap_entry **ret)
{
	struct snap_entry e = {};
	int r;

	if (!parse_name(name, &e))
		return -EINVAL;
	e.owner = *owner;
	snprintf(e.summary, sizeof(e.summary), "%s", summary ? summary : "");
	stat_files(st, &e);
	r = push(st, &e);
	if (r < 0)
		return r;
	st->saved++;
	qsort_safe(st->v, st->n, sizeof(*st->v), entry_cmp);
	prune(st);
	if (ret)
		*ret = snapstore_find(st, name);
	return 0;
}

void snapstore_counts(const struct snapstore *st, uint64_t *ret_saved, uint64_t *ret_pruned)
{
	*ret_saved = st->saved;
	*ret_pruned = st->pruned;
}

size_t snapstore_count(const struct snapstore *st)
{
	return st->n;
}

const struct snap_entry *snapstore_at(const struct snapstore *st, size_t i)
{
	return i < st->n ? &st->v[i] : NULL;
}

const struct snap_entry *snapstore_find(const struct snapstore *st, const char *name)
{
	for (size_t i = 0; i < st->n; i++)
		if (!strcmp(st->v[i].name, name))
			return &st->v[i];
	return NULL;
}

int snapstore_read_hps(const struct snapstore *st, const struct snap_entry *e, uint8_t **ret_data, size_t *ret_len)
{
	return read_hps(st, e->name, ret_data, ret_len);
}
