// SPDX-License-Identifier: GPL-2.0-only
/*
 * Which Debian package would give a stripped file its symbols. dpkg's file lists
 * (/var/lib/dpkg/info/PKG[:ARCH].list) say which package a file came from (a path under /usr
 * matches its list's pre-merged-/usr form too: /usr/lib/x86_64-linux-gnu/libc.so.6 is
 * /lib/x86_64-linux-gnu/libc.so.6 in libc6's); /var/lib/dpkg/status names its source
 * package. Debian names a debug package two ways, and which one a source ships needs apt's
 * lists, which the daemon does not read: a hand-made SOURCE-dbg (python3.11-dbg, which
 * holds the symbols of python3.11-minimal's interpreter), else the automatic PKG-dbgsym
 * of the debian-debug archive (libtorch2.0-dbgsym). Both are named, -dbg first.
 *
 * The files are those of the process's root (a container has its own dpkg, or none), opened
 * as its other files are (procfile.c: no symlink out of it, regular files only); at most
 * DEBUGPKG_BYTES_MAX read, for at most DEBUGPKG_NS, on the worker (a refresh's read phase),
 * once per file: the answer stays with the file in the cache.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "internal.h"

#define LINE_MAX_BYTES 4096
#define PKG_NAME_MAX 128

struct wanted {
	const char *path; /* as listed: the path, or its form without /usr */
	size_t idx;
};

static int cmp_wanted(const void *a, const void *b)
{
	return strcmp(((const struct wanted *)a)->path, ((const struct wanted *)b)->path);
}

static int open_dir_in(int root_fd, const char *path)
{
	struct open_how how = {
		.flags = O_RDONLY | O_DIRECTORY | O_CLOEXEC,
		.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS,
	};
	int fd;

	if (root_fd < 0)
		fd = open(path, how.flags);
	else
		fd = syscall(SYS_openat2, root_fd, path, &how, sizeof(how));
	return fd < 0 ? negative_errno() : fd;
}

/* A package name as dpkg spells them: [a-z0-9][a-z0-9+.-]*. */
static bool pkg_name_ok(const char *s, size_t n)
{
	if (!n || n >= PKG_NAME_MAX)
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];

		if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || (i && strchr("+.-", c))))
			return false;
	}
	return true;
}

/* Reads lines of f within *budget bytes; false at the end or past the budget. */
static bool next_line(FILE *f, char *buf, size_t cap, uint64_t *budget)
{
	size_t n;

	for (;;) {
		if (!fgets(buf, cap, f))
			return false;
		n = strlen(buf);
		if (n > *budget)
			return false;
		*budget -= n;
		if (n && buf[n - 1] == '\n') {
			buf[n - 1] = 0;
			return true;
		}
		/* longer than cap: skip the rest of it */
		int c;

		while ((c = fgetc(f)) != EOF && c != '\n') {
			if (!*budget)
				return false;
			--*budget;
		}
		if (c == EOF)
			return false;
	}
}

/* The package of each path, into pkg[i] ("" when none). */
static int find_owners(int info_fd, const struct wanted *w, size_t nw, size_t n, char (*pkg)[PKG_NAME_MAX],
		       uint64_t deadline, uint64_t *budget)
{
	_cleanup_free_ char *line = malloc(LINE_MAX_BYTES);
	size_t found = 0;
	struct dirent *de;
	DIR *d;
	int dfd;

	if (!line)
		return -ENOMEM;
	dfd = fcntl(info_fd, F_DUPFD_CLOEXEC, 3);
	if (dfd < 0)
		return negative_errno();
	d = fdopendir(dfd);
	if (!d) {
		close(dfd);
		return -ENOMEM;
	}
	while (found < n && (de = readdir(d))) {
		size_t len = strlen(de->d_name), plen;
		const char *colon;
		FILE *f;
		int fd;

		if (len < 6 || strcmp(de->d_name + len - 5, ".list"))
			continue;
		if (now_mono_ns() > deadline || !*budget)
			break;
		colon = memchr(de->d_name, ':', len - 5);
		plen = colon ? (size_t)(colon - de->d_name) : len - 5;
		if (!pkg_name_ok(de->d_name, plen))
			continue;
		fd = open_regular_at(info_fd, de->d_name, true);
		if (fd < 0)
			continue;
		f = fdopen(fd, "re");
		if (!f) {
			close(fd);
			continue;
		}
		while (next_line(f, line, LINE_MAX_BYTES, budget)) {
			struct wanted key = { .path = line }, *hit;

			if (line[0] != '/')
				continue;
			hit = bsearch(&key, w, nw, sizeof(*w), cmp_wanted);
			if (!hit || pkg[hit->idx][0])
				continue;
			memcpy(pkg[hit->idx], de->d_name, plen);
			pkg[hit->idx][plen] = 0;
			found++;
		}
		fclose(f);
	}
	closedir(d);
	return 0;
}

/* The source package of each package in pkg (its own name when status names none). */
static void find_sources(int root_fd, size_t n, char (*pkg)[PKG_NAME_MAX], char (*src)[PKG_NAME_MAX],
			 uint64_t *budget)
{
	_cleanup_free_ char *line = malloc(LINE_MAX_BYTES);
	char cur[PKG_NAME_MAX] = "";
	FILE *f;
	int fd;

	for (size_t i = 0; i < n; i++)
		strcpy(src[i], pkg[i]);
	if (!line)
		return;
	fd = root_fd < 0 ? open_regular_at(AT_FDCWD, "/var/lib/dpkg/status", false) :
			   open_regular_at(root_fd, "/var/lib/dpkg/status", true);
	if (fd < 0)
		return;
	f = fdopen(fd, "re");
	if (!f) {
		close(fd);
		return;
	}
	while (next_line(f, line, LINE_MAX_BYTES, budget)) {
		size_t len;

		if (!strncmp(line, "Package: ", 9)) {
			len = strlen(line + 9);
			if (pkg_name_ok(line + 9, len))
				memcpy(cur, line + 9, len + 1);
			else
				cur[0] = 0;
		} else if (!line[0]) {
			cur[0] = 0;
		} else if (cur[0] && !strncmp(line, "Source: ", 8)) {
			/* "Source: NAME" or "Source: NAME (VERSION)" */
			len = strcspn(line + 8, " ");
			if (!pkg_name_ok(line + 8, len))
				continue;
			for (size_t i = 0; i < n; i++)
				if (!strcmp(pkg[i], cur)) {
					memcpy(src[i], line + 8, len);
					src[i][len] = 0;
				}
		}
	}
	fclose(f);
}

int debugpkg_find(int root_fd, const char *const *paths, size_t n, char *(*ret)[DEBUG_PACKAGES])
{
	_cleanup_free_ struct wanted *w = calloc(MAX(2 * n, (size_t)1), sizeof(*w));
	_cleanup_free_ char(*pkg)[PKG_NAME_MAX] = calloc(MAX(n, (size_t)1), PKG_NAME_MAX);
	_cleanup_free_ char(*src)[PKG_NAME_MAX] = calloc(MAX(n, (size_t)1), PKG_NAME_MAX);
	uint64_t deadline = now_mono_ns() + DEBUGPKG_NS, budget = DEBUGPKG_BYTES_MAX;
	_cleanup_close_ int info_fd = -1;
	size_t nw = 0;
	int r;

	if (!w || !pkg || !src)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		ret[i][0] = ret[i][1] = NULL;
		w[nw++] = (struct wanted){ paths[i], i };
		if (!strncmp(paths[i], "/usr/", 5))
			w[nw++] = (struct wanted){ paths[i] + 4, i };
	}
	qsort_safe(w, nw, sizeof(*w), cmp_wanted);
	info_fd = open_dir_in(root_fd, "/var/lib/dpkg/info");
	if (info_fd < 0)
		return info_fd == -ENOENT ? 0 : info_fd;
	r = find_owners(info_fd, w, nw, n, pkg, deadline, &budget);
	if (r < 0)
		return r;
	find_sources(root_fd, n, pkg, src, &budget);
	for (size_t i = 0; i < n; i++) {
		if (!pkg[i][0])
			continue;
		if (asprintf(&ret[i][0], "%s-dbg", src[i]) < 0)
			ret[i][0] = NULL;
		if (asprintf(&ret[i][1], "%s-dbgsym", pkg[i]) < 0)
			ret[i][1] = NULL;
		if (!ret[i][0] || !ret[i][1]) {
			for (size_t j = 0; j <= i; j++) {
				free(ret[j][0]);
				free(ret[j][1]);
				ret[j][0] = ret[j][1] = NULL;
			}
			return -ENOMEM;
		}
	}
	return 0;
}
