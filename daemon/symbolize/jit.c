// SPDX-License-Identifier: GPL-2.0-only
/*
 * JIT code: a process's /tmp/perf-NSPID.map, read in its root (perfmap.c parses it). Each
 * version that differs from the last one read is kept, newest first to answer, until the
 * versions of one process pass PROC_PERFMAP_BYTES_MAX: older ones name code the JIT has
 * since dropped.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"
#include "procfs.h"

static bool same_file(const struct stat *a, const struct stat *b)
{
	return a->st_dev == b->st_dev && a->st_ino == b->st_ino && a->st_size == b->st_size &&
	       a->st_mtim.tv_sec == b->st_mtim.tv_sec && a->st_mtim.tv_nsec == b->st_mtim.tv_nsec;
}

int perfmap_read_at(int root_fd, const char *path, const struct proc_cred *cred, const struct stat *prev,
		    struct perfmap *ret, struct stat *ret_st)
{
	/* the process wrote it: its real, effective or file-system uid owns it */
	const uint32_t owners[] = { cred->uid, cred->euid, cred->fsuid };
	_cleanup_close_ int fd = -1;
	_cleanup_fclose_ FILE *f = NULL;
	struct stat st;
	int r;

	fd = open_owned_file_at(root_fd, path, owners, ARRAY_SIZE(owners), PERFMAP_BYTES_MAX, &st);
	if (fd < 0)
		return fd == -ENOENT ? 0 : fd;
	if (prev && same_file(&st, prev))
		return 0;
	f = fdopen(fd, "re");
	if (!f)
		return negative_errno();
	TAKE_FD(fd);
	r = perfmap_parse(f, ret);
	if (r < 0)
		return r;
	*ret_st = st;
	return 1;
}

int proc_add_perfmap(struct symbolizer *s, struct proc *p, struct perfmap *m, const struct stat *st)
{
	struct perfmap *v;

	s->perfmap_rejected += m->rejected;
	v = realloc(p->jit, (p->n_jit + 1) * sizeof(*v));
	if (!v) {
		perfmap_done(m);
		return -ENOMEM;
	}
	p->jit = v;
	p->jit[p->n_jit++] = *m;
	p->jit_bytes += perfmap_bytes(m);
	p->jit_st = *st;
	*m = (struct perfmap){};
	/* older versions answer for code the JIT has since dropped, while memory allows */
	while (p->n_jit > 1 && p->jit_bytes > PROC_PERFMAP_BYTES_MAX) {
		p->jit_bytes -= perfmap_bytes(&p->jit[0]);
		perfmap_done(&p->jit[0]);
		memmove(p->jit, p->jit + 1, (p->n_jit - 1) * sizeof(*p->jit));
		p->n_jit--;
	}
	return 0;
}

const struct perfmap_entry *proc_find_jit(const struct proc *p, uint64_t addr, const struct perfmap **ret_map)
{
	for (size_t i = p->n_jit; i > 0; i--) {
		const struct perfmap_entry *e = perfmap_find(&p->jit[i - 1], addr);

		if (e) {
			*ret_map = &p->jit[i - 1];
			return e;
		}
	}
	return NULL;
}

void proc_recheck_perfmap(struct symbolizer *s, struct proc *p)
{
	uint64_t now = now_mono_ns();
	_cleanup_close_ int root_fd = -1;
	struct proc_info info;
	struct perfmap m;
	struct stat st;
	char path[64];

	if (!p->alive || now - p->jit_checked_ns < PERFMAP_CHECK_NS)
		return;
	p->jit_checked_ns = now;
	if (proc_read_info(p->pid, &info) < 0 || info.start_time != p->start_time) {
		p->alive = false; /* gone, or the pid is another process's now */
		return;
	}
	snprintf(path, sizeof(path), "/proc/%u/root", p->pid);
	root_fd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (root_fd >= 0 && p->perfmap_path &&
	    perfmap_read_at(root_fd, p->perfmap_path, &info.cred, p->n_jit ? &p->jit_st : NULL, &m, &st) > 0)
		(void)proc_add_perfmap(s, p, &m, &st);
}
