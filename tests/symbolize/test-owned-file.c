// SPDX-License-Identifier: GPL-2.0-only
/*
 * open_owned_file_at (daemon/symbolize/procfile.c): how a perf map, a file the watched
 * process itself wrote, is opened by the root daemon. Each refusal is one a hostile owner
 * would try:
 *  1. a regular file of the owner: opened;
 *  2. a symlink to it, and a path through a symlinked directory: refused (a link to a
 *     root-only file would put its text into the owner's snapshot);
 *  3. a file of another uid: refused;
 *  4. a FIFO: refused, without blocking;
 *  5. a sparse file larger than the cap: refused before a byte is read;
 *  6. tracefs' trace_pipe (mounted here for the test): a "regular" file whose read never
 *     returns: refused by its file system.
 * Needs root (chown, mount); else 77.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../unit/check.h"
#include "symbolize/internal.h"

static char dir[] = "/tmp/hostprof-owned.XXXXXX";

static int try_open(const char *rel, uint32_t owner, uint64_t max)
{
	struct stat st;
	int root = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC), fd;

	if (root < 0)
		return -errno;
	fd = open_owned_file_at(root, rel, &owner, 1, max, &st);
	close(root);
	if (fd >= 0) {
		close(fd);
		return 0;
	}
	return fd;
}

static void put(const char *rel, const char *text)
{
	char path[256];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, rel);
	f = fopen(path, "w");
	if (!f || fputs(text, f) < 0 || fclose(f) != 0) {
		perror(path);
		exit(1);
	}
}

int main(void)
{
	char path[256], target[256];
	int r, fd;

	if (geteuid() != 0) {
		printf("SKIP: needs root (chown, mount)\n");
		return 77;
	}
	if (!mkdtemp(dir))
		return perror("mkdtemp"), 1;

	put("perf-1.map", "1000 10 jitted\n");
	snprintf(path, sizeof(path), "%s/perf-1.map", dir);
	CHECK(chown(path, 4242, 4242) == 0);
	CHECK_EQ_INT(try_open("perf-1.map", 4242, 1 << 20), 0);
	CHECK_EQ_INT(try_open("/perf-1.map", 4242, 1 << 20), 0); /* absolute inside root */

	/* 2. symlinks: to the file, and a symlinked directory on the way */
	snprintf(path, sizeof(path), "%s/perf-2.map", dir);
	CHECK(symlink("perf-1.map", path) == 0);
	CHECK_EQ_INT(try_open("perf-2.map", 4242, 1 << 20), -ELOOP);
	snprintf(path, sizeof(path), "%s/sub", dir);
	CHECK(mkdir(path, 0755) == 0);
	snprintf(path, sizeof(path), "%s/linkdir", dir);
	CHECK(symlink("sub", path) == 0);
	put("sub/perf-3.map", "1000 10 x\n");
	snprintf(path, sizeof(path), "%s/sub/perf-3.map", dir);
	CHECK(chown(path, 4242, 4242) == 0);
	CHECK_EQ_INT(try_open("sub/perf-3.map", 4242, 1 << 20), 0);
	CHECK_EQ_INT(try_open("linkdir/perf-3.map", 4242, 1 << 20), -ELOOP);

	/* 3. another owner's file (root's secret, say) */
	put("secret", "root only\n");
	CHECK_EQ_INT(try_open("secret", 4242, 1 << 20), -EPERM);

	/* 4. a FIFO: never opened for reading, so nothing blocks */
	snprintf(path, sizeof(path), "%s/perf-4.map", dir);
	CHECK(mkfifo(path, 0644) == 0);
	CHECK(chown(path, 4242, 4242) == 0);
	CHECK_EQ_INT(try_open("perf-4.map", 4242, 1 << 20), -EINVAL);

	/* 5. a sparse file past the cap */
	snprintf(path, sizeof(path), "%s/perf-5.map", dir);
	fd = open(path, O_CREAT | O_WRONLY, 0644);
	CHECK(fd >= 0 && ftruncate(fd, 1ULL << 30) == 0 && fchown(fd, 4242, 4242) == 0);
	close(fd);
	CHECK_EQ_INT(try_open("perf-5.map", 4242, 256ULL << 20), -EFBIG);

	/* 6. tracefs: trace_pipe is S_IFREG, root's, and a read of it never returns */
	snprintf(target, sizeof(target), "%s/tracing", dir);
	CHECK(mkdir(target, 0755) == 0);
	if (mount("nodev", target, "tracefs", 0, NULL) == 0) {
		r = try_open("tracing/trace_pipe", 0, 1 << 20);
		CHECKF(r == -EINVAL, "trace_pipe: %d", r);
		(void)umount2(target, MNT_DETACH);
	} else {
		printf("note: tracefs cannot be mounted here (%s): case 6 not run\n", strerror(errno));
	}

	snprintf(path, sizeof(path), "rm -rf '%s'", dir);
	if (system(path) != 0)
		fprintf(stderr, "could not remove %s\n", dir);
	return check_summary();
}
