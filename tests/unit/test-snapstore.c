// SPDX-License-Identifier: GPL-2.0-only
/*
 * daemon/snapstore.c, linked with only what it may use (log, lib/): in a temporary
 * directory,
 *   - snapstore_write: <UTC>-<pid>-<trigger>.<ext>, 0600, what it was given, nothing
 *     else left in the directory; a bad trigger name or a name taken is refused;
 *   - snapstore_add: indexed with its owner, bytes and files; pruned by count and by
 *     total size, oldest first (by the time in the name, not the order of adding), the
 *     newest always kept; the pruned files gone;
 *   - snapstore_read_hps: the bytes; a file that went is an error;
 *   - a name that is not in the index is not found, whatever is on disk;
 *   - snapstore_ready: creates the directory (0700), retries after a failure;
 *   - snapstore_reconfigure: another directory is indexed anew (owner from the .hps,
 *     files, junk left out), the same one is not.
 *
 *   test-snapstore FIXTURE     (tests/fixtures/stall.hps)
 */
#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "fakes.h"
#include "formats.h"
#include "hps.h"
#include "log.h"
#include "macro.h"
#include "snapstore.h"

#define DAY (86400ULL * NSEC_PER_SEC)
#define T0 (1767225600ULL * NSEC_PER_SEC) /* 2026-01-01T00:00:00Z */

static uint8_t *fixture;
static size_t fixture_len;
static Hostprof__Snapshot *snap;
static char top[PATH_MAX];

static const char *path_in(const char *dir, const char *name, const char *ext)
{
	static char buf[4][PATH_MAX * 2];
	static int i;

	i = (i + 1) % 4;
	snprintf(buf[i], sizeof(buf[i]), "%s/%s%s", dir, name, ext);
	return buf[i];
}

static bool exists(const char *path)
{
	return access(path, F_OK) == 0;
}

static off_t size_of(const char *path)
{
	struct stat st;

	return stat(path, &st) < 0 ? -1 : st.st_size;
}

/* Files in dir, not counting . and .. */
static size_t files_in(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	size_t n = 0;

	if (!d)
		return 0;
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			n++;
	closedir(d);
	return n;
}

/* Write and index one; its name into ret_name. */
static bool put(struct snapstore *st, uint32_t pid, const char *trigger, uint64_t realtime_ns, uint32_t uid,
		unsigned formats, char ret_name[96])
{
	const struct snap_entry *e = NULL;
	int r;

	r = snapstore_write(st, snap, fixture, fixture_len, formats, pid, trigger, realtime_ns, ret_name);
	CHECKF(r == 0, "snapstore_write(%u, %s): %s", pid, trigger, strerror(-r));
	if (r < 0)
		return false;
	r = snapstore_add(st, ret_name, CRED(uid), "a summary", &e);
	CHECKF(r == 0, "snapstore_add(%s): %s", ret_name, strerror(-r));
	return r == 0;
}

static void check_write_add_read(void)
{
	char dir[PATH_MAX + 32], name[96], name2[96];
	struct snapstore *st;
	const struct snap_entry *e;
	struct stat sb;
	uint8_t *data = NULL;
	size_t len = 0;

	snprintf(dir, sizeof(dir), "%s/a/b/store", top);
	st = snapstore_new(dir, 10, 1 << 30);
	CHECK(st != NULL);
	if (!st)
		return;
	CHECK_STR(snapstore_dir(st), dir);
	CHECK(!exists(dir)); /* nothing until ready */
	CHECK_EQ_INT(snapstore_ready(st), 0);
	CHECK(stat(dir, &sb) == 0 && S_ISDIR(sb.st_mode) && (sb.st_mode & 07777) == 0700);
	CHECK_EQ_U64(snapstore_count(st), 0);

	CHECK_EQ_INT(snapstore_write(st, snap, fixture, fixture_len, 0, 4242, "acl_preempt",
				     T0 + 3723 * NSEC_PER_SEC, name),
		     0);
	CHECK_STR(name, "20260101T010203Z-4242-acl_preempt");
	CHECK(stat(path_in(dir, name, ".hps"), &sb) == 0 && S_ISREG(sb.st_mode) &&
	      (sb.st_mode & 07777) == 0600);
	CHECK_EQ_U64(files_in(dir), 1); /* no temporary file left */
	/* written is not indexed */
	CHECK(snapstore_find(st, name) == NULL);
	CHECK_EQ_INT(snapstore_add(st, name, CRED(1000), "the verdict", &e), 0);
	CHECK(e && e == snapstore_find(st, name));
	if (e) {
		CHECK_STR(e->trigger, "acl_preempt");
		CHECK_EQ_U64(e->pid, 4242);
		CHECK_EQ_U64(e->owner.uid, 1000);
		CHECK_EQ_U64(e->realtime_ns, T0 + 3723 * NSEC_PER_SEC);
		CHECK_EQ_U64(e->bytes, fixture_len);
		CHECK(e->n_exts == 1 && !strcmp(e->exts[0], ".hps"));
		CHECK_STR(e->summary, "the verdict");
		CHECK_EQ_INT(snapstore_read_hps(st, e, &data, &len), 0);
		CHECK(data && len == fixture_len && !memcmp(data, fixture, len));
		free(data);
	}
	/* the same process and trigger within the same second */
	CHECK_EQ_INT(snapstore_write(st, snap, fixture, fixture_len, 0, 4242, "acl_preempt",
				     T0 + 3723 * NSEC_PER_SEC, name2),
		     -EEXIST);
	/* more formats: each file counted */
	CHECK(put(st, 4242, "more", T0 + DAY, 0, 1u << FMT_REPORT | 1u << FMT_JSON, name2));
	e = snapstore_find(st, name2);
	CHECK(e != NULL);
	if (e) {
		CHECKF(e->n_exts == 3, "%zu files, want .hps .json .txt", e->n_exts);
		CHECK_EQ_U64(e->bytes, size_of(path_in(dir, name2, ".hps")) +
					       size_of(path_in(dir, name2, ".json")) +
					       size_of(path_in(dir, name2, ".txt")));
	}
	/* a file that went behind the store's back: an error, not a crash */
	e = snapstore_find(st, name);
	CHECK(e && unlink(path_in(dir, name, ".hps")) == 0);
	if (e)
		CHECK_EQ_INT(snapstore_read_hps(st, e, &data, &len), -ENOENT);
	/* a link where the file was: not followed */
	if (e && symlink("/etc/passwd", path_in(dir, name, ".hps")) == 0)
		CHECK(snapstore_read_hps(st, e, &data, &len) < 0);
	snapstore_free(st);
}

/* Names: only what is in the index; nothing a client could make a path of. */
static void check_names(void)
{
	static const char *const bad[] = {
		"",
		"foo",
		"../../etc/passwd",
		"20260101T000000Z-0-x", /* pid 0 */
		"20260101T000000Z-12-", /* no trigger */
		"20260101T000000Z-12-a/b", /* a slash */
		"20260101T000000Z-12-../../x", /* dots and slashes */
		"20260101T000000Z-x-trig", /* no pid */
		"2026-01-01-12-trig", /* no time */
		"20260101T000000Z-12-a_trigger_name_of_32_characters_", /* 32: too long */
	};
	char dir[PATH_MAX + 32], name[96], other[96];
	struct snapstore *st;
	FILE *f;

	snprintf(dir, sizeof(dir), "%s/names", top);
	st = snapstore_new(dir, 10, 1 << 30);
	CHECK(st && snapstore_ready(st) == 0);
	if (!st)
		return;
	CHECK(put(st, 12, "trig", T0, 1000, 0, name));
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		CHECKF(snapstore_add(st, bad[i], CRED(0), "", NULL) == -EINVAL, "snapstore_add took \"%s\"",
		       bad[i]);
		CHECKF(snapstore_find(st, bad[i]) == NULL, "found \"%s\"", bad[i]);
	}
	CHECK_EQ_U64(snapstore_count(st), 1);
	/* a trigger name that would make a path */
	CHECK_EQ_INT(snapstore_write(st, snap, fixture, fixture_len, 0, 12, "../x", T0 + DAY, other),
		     -EINVAL);
	CHECK_EQ_INT(snapstore_write(st, snap, fixture, fixture_len, 0, 12, "a/b", T0 + DAY, other), -EINVAL);
	CHECK_EQ_U64(files_in(dir), 1);
	/* on disk with a good name, but never indexed: not there */
	f = fopen(path_in(dir, "20260102T000000Z-13-dropped", ".hps"), "we");
	CHECK(f != NULL);
	if (f)
		fclose(f);
	CHECK(snapstore_find(st, "20260102T000000Z-13-dropped") == NULL);
	CHECK(snapstore_find(st, name) != NULL);
	snapstore_free(st);
}

/* Oldest first, by the time in the name; the newest is always kept. */
static void check_prune(void)
{
	char dir[PATH_MAX + 32], names[6][96];
	struct snapstore *st;

	snprintf(dir, sizeof(dir), "%s/prune", top);
	st = snapstore_new(dir, 3, 1 << 30);
	CHECK(st && snapstore_ready(st) == 0);
	if (!st)
		return;
	for (int i = 0; i < 3; i++)
		CHECK(put(st, 100 + i, "count", T0 + (i + 1) * DAY, 1000, 0, names[i]));
	CHECK_EQ_U64(snapstore_count(st), 3);
	CHECK(put(st, 103, "count", T0 + 4 * DAY, 1000, 0, names[3]));
	CHECK_EQ_U64(snapstore_count(st), 3);
	CHECK(snapstore_find(st, names[0]) == NULL && !exists(path_in(dir, names[0], ".hps")));
	CHECK_STR(snapstore_at(st, 0)->name, names[1]);
	CHECK_STR(snapstore_at(st, 2)->name, names[3]);
	CHECK(snapstore_at(st, 3) == NULL);
	/* added last but older than all: it is the one that goes */
	CHECK(put(st, 99, "count", T0, 1000, 0, names[4]));
	CHECK_EQ_U64(snapstore_count(st), 3);
	CHECK(snapstore_find(st, names[4]) == NULL && !exists(path_in(dir, names[4], ".hps")));
	CHECK(snapstore_find(st, names[1]) != NULL);

	/* by size: two and a half snapshots' worth keeps two */
	snapstore_set_limits(st, 100, fixture_len * 5 / 2);
	CHECK(put(st, 104, "size", T0 + 5 * DAY, 1000, 0, names[5]));
	CHECK_EQ_U64(snapstore_count(st), 2);
	CHECK(snapstore_find(st, names[3]) && snapstore_find(st, names[5]));
	CHECK(!exists(path_in(dir, names[1], ".hps")) && !exists(path_in(dir, names[2], ".hps")));
	CHECK_EQ_U64(files_in(dir), 2);
	/* smaller than one: the newest stays */
	snapstore_set_limits(st, 100, 1);
	CHECK(put(st, 105, "size", T0 + 6 * DAY, 1000, 0, names[0]));
	CHECK_EQ_U64(snapstore_count(st), 1);
	CHECK(snapstore_find(st, names[0]) != NULL);
	CHECK_EQ_U64(files_in(dir), 1);
	snapstore_free(st);
}

/* A directory that cannot be made now can be later. */
static void check_ready_retry(void)
{
	char file[PATH_MAX + 32], dir[PATH_MAX + 64], name[96];
	struct snapstore *st, *other;
	FILE *f;
	int r;

	snprintf(file, sizeof(file), "%s/in-the-way", top);
	snprintf(dir, sizeof(dir), "%s/store", file);
	f = fopen(file, "we");
	CHECK(f != NULL);
	if (f)
		fclose(f);
	st = snapstore_new(dir, 10, 1 << 30);
	CHECK(st != NULL);
	if (!st)
		return;
	r = snapstore_ready(st);
	CHECKF(r == -ENOTDIR, "snapstore_ready under a file: %s", strerror(-r));
	CHECK(snapstore_ready(st) < 0);
	CHECK_EQ_U64(snapstore_count(st), 0);
	/* the way is cleared, and a snapshot is there already */
	CHECK(unlink(file) == 0);
	other = snapstore_new(dir, 10, 1 << 30);
	CHECK(other && snapstore_ready(other) == 0 && put(other, 7, "before", T0, 1000, 0, name));
	snapstore_free(other);
	CHECK_EQ_INT(snapstore_ready(st), 0);
	CHECK_EQ_U64(snapstore_count(st), 1);
	CHECK(snapstore_find(st, name) != NULL);
	snapstore_free(st);
}

/* Another directory is indexed anew from what is in it; the same one is not. */
static void check_reconfigure(void)
{
	char a[PATH_MAX + 32], b[PATH_MAX + 32], in_a[96], in_b[2][96], junk[96];
	const struct snap_entry *e;
	struct snapstore *st, *writer;
	/* the fixture's Process has its uid only (it predates the full credentials): such a
	 * snapshot is root's, whatever uid it names */
	const Hostprof__Process *fp = snap->n_processes ? snap->processes[0] : NULL;
	uint32_t owner = fp && fp->has_euid && fp->has_gid && fp->has_dumpable && fp->dumpable ? fp->uid : 0;
	static const char *const junk_names[] = { "junk.hps", "20260101T000000Z-12-bad!.hps", "notes.txt",
						  "20260101T000000Z-12-trig.txt", ".hps" };
	FILE *f;

	snprintf(a, sizeof(a), "%s/dir-a", top);
	snprintf(b, sizeof(b), "%s/dir-b", top);
	/* b: two snapshots written by another store, one that is not a snapshot, junk */
	writer = snapstore_new(b, 10, 1 << 30);
	CHECK(writer && snapstore_ready(writer) == 0);
	if (!writer)
		return;
	CHECK(put(writer, 21, "second", T0 + 2 * DAY, 1000, 1u << FMT_REPORT, in_b[1]));
	CHECK(put(writer, 20, "first", T0 + DAY, 1000, 0, in_b[0]));
	snapstore_free(writer);
	snprintf(junk, sizeof(junk), "20260104T000000Z-22-corrupt");
	f = fopen(path_in(b, junk, ".hps"), "we");
	CHECK(f && fputs("not a snapshot", f) >= 0);
	if (f)
		fclose(f);
	for (size_t i = 0; i < ARRAY_SIZE(junk_names); i++) {
		f = fopen(path_in(b, junk_names[i], ""), "we");
		CHECK(f != NULL);
		if (f)
			fclose(f);
	}

	st = snapstore_new(a, 10, 1 << 30);
	CHECK(st && snapstore_ready(st) == 0);
	if (!st)
		return;
	CHECK(put(st, 30, "in_a", T0, 1000, 0, in_a));
	/* the same directory: nothing read again, the limits are new */
	CHECK_EQ_INT(snapstore_reconfigure(st, a, 1, 1 << 30), 0);
	CHECK_EQ_U64(snapstore_count(st), 1);
	CHECK_EQ_INT(snapstore_ready(st), 0);
	CHECK_EQ_U64(snapstore_count(st), 1);

	CHECK_EQ_INT(snapstore_reconfigure(st, b, 10, 1 << 30), 0);
	CHECK_STR(snapstore_dir(st), b);
	CHECK_EQ_U64(snapstore_count(st), 0); /* until it is ready */
	CHECK(snapstore_find(st, in_a) == NULL);
	CHECK_EQ_INT(snapstore_ready(st), 0);
	CHECK_EQ_U64(snapstore_count(st), 3);
	/* oldest first; the owner is the one in each .hps (root when it cannot be read) */
	e = snapstore_at(st, 0);
	CHECK(e && !strcmp(e->name, in_b[0]) && e->owner.uid == owner && e->bytes == fixture_len && e->n_exts == 1);
	e = snapstore_at(st, 1);
	CHECK(e && !strcmp(e->name, in_b[1]) && e->owner.uid == owner && e->n_exts == 2 && e->summary[0] == 0);
	CHECK(e && e->bytes == (uint64_t)(size_of(path_in(b, in_b[1], ".hps")) +
					  size_of(path_in(b, in_b[1], ".txt"))));
	e = snapstore_at(st, 2);
	CHECK(e && !strcmp(e->name, junk) && e->owner.uid == 0 && e->pid == 22);
	/* back to a: read anew, what was added there is found */
	CHECK_EQ_INT(snapstore_reconfigure(st, a, 10, 1 << 30), 0);
	CHECK_EQ_INT(snapstore_ready(st), 0);
	CHECK_EQ_U64(snapstore_count(st), 1);
	e = snapstore_find(st, in_a);
	CHECK(e != NULL);
	if (e) /* its .hps is the fixture: the owner comes from it now */
		CHECK_EQ_U64(e->owner.uid, owner);
	snapstore_free(st);
}

static int remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)remove(path);
	return 0;
}

int main(int argc, char **argv)
{
	const char *tmp = getenv("TMPDIR");
	FILE *f;
	long n;

	if (argc != 2) {
		fprintf(stderr, "usage: test-snapstore FIXTURE\n");
		return 2;
	}
	f = fopen(argv[1], "re");
	if (!f || fseek(f, 0, SEEK_END) < 0 || (n = ftell(f)) <= 0 || fseek(f, 0, SEEK_SET) < 0 ||
	    !(fixture = malloc(n)) || fread(fixture, 1, n, f) != (size_t)n ||
	    hps_unpack(fixture, n, &snap) < 0) {
		fprintf(stderr, "test-snapstore: cannot read the snapshot %s\n", argv[1]);
		return 1;
	}
	fclose(f);
	fixture_len = n;
	log_open("test-snapstore");
	log_set_max_level(LOG_WARNING);
	snprintf(top, sizeof(top), "%s/hp-snapstore-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(top)) {
		fprintf(stderr, "test-snapstore: mkdtemp: %m\n");
		return 1;
	}

	check_write_add_read();
	check_names();
	check_prune();
	check_ready_retry();
	check_reconfigure();

	nftw(top, remove_one, 16, FTW_DEPTH | FTW_PHYS);
	hps_free(snap);
	free(fixture);
	return check_summary();
}
