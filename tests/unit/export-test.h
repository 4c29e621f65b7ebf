/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Helpers of the exporter tests: render an export into memory, find and run an external
 * reader (go, xmllint, jq) with its output captured, and compare against a golden file
 * (or rewrite it when HOSTPROF_UPDATE_GOLDEN=1).
 */
#ifndef HOSTPROF_TESTS_EXPORT_TEST_H
#define HOSTPROF_TESTS_EXPORT_TEST_H

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "export.h"

#define UPDATE_ENV "HOSTPROF_UPDATE_GOLDEN"

typedef int (*export_fn)(const Hostprof__Snapshot *snap, FILE *out);

static inline int export_folded_on(const Hostprof__Snapshot *s, FILE *f)
{
	return snapshot_export_folded(s, false, f);
}

static inline int export_folded_off(const Hostprof__Snapshot *s, FILE *f)
{
	return snapshot_export_folded(s, true, f);
}

static inline int export_svg_on(const Hostprof__Snapshot *s, FILE *f)
{
	return snapshot_export_svg(s, false, f);
}

static inline int export_svg_off(const Hostprof__Snapshot *s, FILE *f)
{
	return snapshot_export_svg(s, true, f);
}

/* The export's bytes in *ret (malloc'ed, NUL-terminated); returns the exporter's result. */
static inline int render(const Hostprof__Snapshot *snap, export_fn fn, char **ret, size_t *ret_len)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	int r;

	if (!f)
		return -ENOMEM;
	r = fn(snap, f);
	if (fclose(f) != 0 && r >= 0)
		r = -EIO;
	*ret = buf;
	*ret_len = len;
	return r;
}

static inline int write_file(const char *path, const void *data, size_t len)
{
	FILE *f = fopen(path, "we");
	int r = 0;

	if (!f)
		return -errno;
	if (fwrite(data, 1, len, f) != len)
		r = -EIO;
	if (fclose(f) != 0 && !r)
		r = -EIO;
	return r;
}

static inline int read_file(const char *path, char **ret, size_t *ret_len)
{
	FILE *f = fopen(path, "re");
	char *buf = NULL;
	size_t len = 0, cap = 0, n;

	if (!f)
		return -errno;
	do {
		if (cap - len < 4096) {
			char *p = realloc(buf, cap + 65536);

			if (!p) {
				free(buf);
				fclose(f);
				return -ENOMEM;
			}
			buf = p;
			cap += 65536;
		}
		n = fread(buf + len, 1, cap - len - 1, f);
		len += n;
	} while (n > 0);
	fclose(f);
	buf[len] = '\0';
	*ret = buf;
	*ret_len = len;
	return 0;
}

/* The full path of a program in $PATH, or NULL. */
static inline char *find_program(const char *name)
{
	const char *path = getenv("PATH");
	char *dirs, *save = NULL;

	if (!path)
		return NULL;
	dirs = strdup(path);
	if (!dirs)
		return NULL;
	for (char *d = strtok_r(dirs, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
		char *p;

		if (asprintf(&p, "%s/%s", d, name) < 0)
			break;
		if (access(p, X_OK) == 0) {
			free(dirs);
			return p;
		}
		free(p);
	}
	free(dirs);
	return NULL;
}

/*
 * Runs argv with stdout (and stderr, when merge) into *ret_out; extra environment
 * "NAME=value" strings in env (NULL-terminated, may be NULL). Returns the child's exit
 * status (0..255), or -1 when it could not run or died from a signal.
 */
static inline int run_capture(char *const argv[], char *const env[], bool merge, char **ret_out)
{
	char tmpl[] = "/tmp/hostprof-run-XXXXXX";
	size_t len;
	int fd, status;
	pid_t pid;

	*ret_out = NULL;
	fd = mkostemp(tmpl, O_CLOEXEC);
	if (fd < 0)
		return -1;
	unlink(tmpl);
	fflush(stdout);
	fflush(stderr);
	pid = fork();
	if (pid < 0) {
		close(fd);
		return -1;
	}
	if (pid == 0) {
		int devnull = open("/dev/null", O_RDONLY);

		dup2(devnull, 0);
		dup2(fd, 1);
		if (merge)
			dup2(fd, 2);
		for (size_t i = 0; env && env[i]; i++)
			putenv(env[i]);
		execv(argv[0], argv);
		_exit(127);
	}
	if (waitpid(pid, &status, 0) < 0) {
		close(fd);
		return -1;
	}
	lseek(fd, 0, SEEK_SET);
	{
		FILE *f = fdopen(fd, "r");
		char *buf = NULL;
		size_t cap = 0, n;

		len = 0;
		if (!f) {
			close(fd);
			return -1;
		}
		do {
			if (cap - len < 4096) {
				char *p = realloc(buf, cap + 65536);

				if (!p)
					break;
				buf = p;
				cap += 65536;
			}
			n = fread(buf + len, 1, cap - len - 1, f);
			len += n;
		} while (n > 0);
		fclose(f);
		if (buf)
			buf[len] = '\0';
		*ret_out = buf;
	}
	if (!WIFEXITED(status))
		return -1;
	return WEXITSTATUS(status);
}

/* Line n (1-based) of s, for a message: at most 160 characters, in *buf. */
static inline const char *nth_line(const char *s, size_t len, size_t n, char *buf, size_t size)
{
	const char *p = s, *end = s + len, *e;
	size_t k;

	for (size_t i = 1; i < n && p < end; i++) {
		e = memchr(p, '\n', (size_t)(end - p));
		p = e ? e + 1 : end;
	}
	if (p >= end)
		return "(end of file)";
	e = memchr(p, '\n', (size_t)(end - p));
	k = (size_t)((e ? e : end) - p);
	if (k > 160)
		k = 160;
	if (k > size - 1)
		k = size - 1;
	memcpy(buf, p, k);
	buf[k] = '\0';
	return buf;
}

/*
 * Compares got with the golden file DIR/NAME. With HOSTPROF_UPDATE_GOLDEN=1 the golden is
 * rewritten instead. On a mismatch it says where, what was expected and what came, and
 * leaves the output in /tmp for a diff. Returns true when they match (or were written).
 */
static inline bool golden_check(const char *dir, const char *name, const char *got, size_t got_len)
{
	char path[4096], want_line[192], got_line[192], out[4200];
	const char *upd = getenv(UPDATE_ENV);
	char *want = NULL;
	size_t want_len = 0, line = 1, i;
	int r;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if (upd && !strcmp(upd, "1")) {
		r = write_file(path, got, got_len);
		if (r < 0) {
			fprintf(stderr, "FAIL cannot write golden %s: %s\n", path, strerror(-r));
			return false;
		}
		printf("updated golden %s (%zu bytes)\n", path, got_len);
		return true;
	}
	r = read_file(path, &want, &want_len);
	if (r < 0) {
		fprintf(stderr, "FAIL golden %s: %s (make it with %s=1)\n", path, strerror(-r), UPDATE_ENV);
		return false;
	}
	if (want_len == got_len && !memcmp(want, got, got_len)) {
		free(want);
		printf("ok golden %s\n", name);
		return true;
	}
	for (i = 0; i < want_len && i < got_len && want[i] == got[i]; i++)
		if (want[i] == '\n')
			line++;
	snprintf(out, sizeof(out), "/tmp/hostprof-golden-%s", name);
	write_file(out, got, got_len);
	fprintf(stderr,
		"FAIL golden %s differs from the output, first at byte %zu, line %zu:\n"
		"  want: %s\n"
		"  got:  %s\n"
		"  the output is in %s (diff it against the golden); if the change is intended,\n"
		"  regenerate the goldens: %s=1 meson test -C build --suite unit\n",
		path, i, line, nth_line(want, want_len, line, want_line, sizeof(want_line)),
		nth_line(got, got_len, line, got_line, sizeof(got_line)), out, UPDATE_ENV);
	free(want);
	return false;
}

#endif /* HOSTPROF_TESTS_EXPORT_TEST_H */
