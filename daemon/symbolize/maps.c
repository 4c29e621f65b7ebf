// SPDX-License-Identifier: GPL-2.0-only
/*
 * A process's executable mappings: read from /proc/PID/maps, kept sorted by start; those
 * that went away move to a bounded history, so addresses no current mapping covers still
 * resolve through them.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>

#include "internal.h"

void mapping_done(struct symbolizer *s, struct mapping *m)
{
	elf_file_unref(&s->cache, m->file);
	free(m->path);
}

int read_nspid(uint32_t pid, uint32_t *ret)
{
	_cleanup_fclose_ FILE *f = NULL;
	char path[64], line[512];

	snprintf(path, sizeof(path), "/proc/%u/status", pid);
	f = fopen(path, "re");
	if (!f)
		return negative_errno();
	for (int i = 0; i < STATUS_LINES_MAX && fgets(line, sizeof(line), f); i++) {
		char *last;

		if (strncmp(line, "NSpid:", 6))
			continue;
		line[strcspn(line, "\n")] = 0;
		last = strrchr(line, '\t');
		if (!last)
			last = strrchr(line, ' ');
		if (!last)
			return -EBADMSG;
		*ret = strtoul(last + 1, NULL, 10);
		return 0;
	}
	*ret = pid; /* before 4.1: no NSpid line */
	return 0;
}

bool mapping_same(const struct mapping *a, const struct mapping *b)
{
	return a->start == b->start && a->limit == b->limit && a->offset == b->offset && a->dev == b->dev &&
	       a->ino == b->ino &&
	       ((!a->path && !b->path) || (a->path && b->path && !strcmp(a->path, b->path)));
}

/* A hex or decimal field ending at sep; false if there is none. */
static bool maps_field(char **p, int base, char sep, unsigned long long *ret)
{
	char *end;

	if (!isxdigit((unsigned char)**p))
		return false;
	*ret = strtoull(*p, &end, base);
	if (*end != sep)
		return false;
	*p = end + 1;
	return true;
}

/*
 * One line of maps into m when it is executable; 1: taken, 0: skipped. By hand, not
 * sscanf: a PyTorch process has ~1,700 lines, ~300 of them executable, and the daemon
 * reads them again whenever the process maps (with syscalls = blocking, any mapping);
 * the others are left at their permissions.
 */
static int parse_maps_line(char *line, struct mapping *ret)
{
	unsigned long long start, limit, offset, major, minor, ino;
	char *p = line, *path;

	if (!maps_field(&p, 16, '-', &start) || !maps_field(&p, 16, ' ', &limit))
		return -EBADMSG;
	if (strnlen(p, 5) < 5 || p[4] != ' ')
		return -EBADMSG;
	if (p[2] != 'x' || limit <= start)
		return 0;
	p += 5;
	if (!maps_field(&p, 16, ' ', &offset) || !maps_field(&p, 16, ':', &major) ||
	    !maps_field(&p, 16, ' ', &minor) || !isdigit((unsigned char)*p))
		return -EBADMSG;
	ino = strtoull(p, &p, 10);
	if (*p && *p != ' ' && *p != '\n')
		return -EBADMSG;
	p += strspn(p, " ");
	p[strcspn(p, "\n")] = 0;
	path = p;
	*ret = (struct mapping){
		.start = start,
		.limit = limit,
		.offset = offset,
		.dev = makedev(major, minor),
		.ino = ino,
		.anon = !*path || !strncmp(path, "[anon:", 6) || !strncmp(path, "//anon", 6),
	};
	if (*path) {
		size_t len = strlen(path);
		static const char deleted[] = " (deleted)";

		if (len > sizeof(deleted) - 1 && !strcmp(path + len - (sizeof(deleted) - 1), deleted))
			path[len - (sizeof(deleted) - 1)] = 0;
		ret->path = strdup(path);
		if (!ret->path)
			return -ENOMEM;
	}
	return 1;
}

int read_maps(uint32_t pid, struct mapping **ret, size_t *ret_n)
{
	_cleanup_fclose_ FILE *f = NULL;
	_cleanup_free_ char *line = NULL;
	struct mapping *maps = NULL;
	size_t n = 0, cap = 0, linecap = 0, bytes = 0;
	char path[64];
	ssize_t len;
	int r = 0;

	snprintf(path, sizeof(path), "/proc/%u/maps", pid);
	f = fopen(path, "re");
	if (!f)
		return negative_errno();
	/* past either cap, the mappings read so far are all there is */
	while (n < MAPPINGS_MAX && bytes < MAPS_BYTES_MAX && (len = getline(&line, &linecap, f)) > 0) {
		struct mapping m;

		bytes += len;
		r = parse_maps_line(line, &m);
		if (r == -EBADMSG) {
			r = 0;
			continue;
		}
		if (r < 0)
			break;
		if (r == 0)
			continue;
		if (n == cap) {
			struct mapping *p = realloc(maps, (cap ? cap * 2 : 64) * sizeof(*p));

			if (!p) {
				free(m.path);
				r = -ENOMEM;
				break;
			}
			maps = p;
			cap = cap ? cap * 2 : 64;
		}
		maps[n++] = m;
		r = 0;
	}
	if (r == 0 && ferror(f))
		r = errno == ESRCH ? -ESRCH : -EIO;
	if (r < 0) {
		for (size_t i = 0; i < n; i++)
			free(maps[i].path);
		free(maps);
		return r;
	}
	*ret = maps;
	*ret_n = n;
	return 0;
}

int proc_retire(struct symbolizer *s, struct proc *p, struct mapping *m)
{
	struct mapping *old;

	if (p->n_old == RETIRED_MAX) {
		mapping_done(s, &p->old[0]);
		memmove(p->old, p->old + 1, (p->n_old - 1) * sizeof(*p->old));
		p->n_old--;
	}
	old = realloc(p->old, (p->n_old + 1) * sizeof(*old));
	if (!old) {
		mapping_done(s, m);
		return -ENOMEM;
	}
	p->old = old;
	p->old[p->n_old++] = *m;
	return 0;
}

/* The current mapping covering addr, else the newest retired one. */
const struct mapping *proc_find_mapping(const struct proc *p, uint64_t addr)
{
	size_t lo = 0, hi = p->n_maps;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (p->maps[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo && addr < p->maps[lo - 1].limit)
		return &p->maps[lo - 1];
	/* mappings that went away: the newest that covers addr */
	for (size_t i = p->n_old; i > 0; i--)
		if (addr >= p->old[i - 1].start && addr < p->old[i - 1].limit)
			return &p->old[i - 1];
	return NULL;
}
