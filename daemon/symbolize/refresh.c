// SPDX-License-Identifier: GPL-2.0-only
/*
 * Noting a process: its mappings from /proc/PID/maps, the ELF file behind each new one (from
 * the cache, or read now), its perf map. Files of a process are opened in its own mount
 * namespace and root: /proc/PID/map_files/ first (the very inode that is mapped, even deleted;
 * needs CAP_SYS_ADMIN), else the mapped path under /proc/PID/root.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"
#include "procfs.h"

/* Finds the file behind a new file-backed mapping and its symbols. */
static int mapping_attach_file(struct symbolizer *s, uint32_t pid, int root_fd, bool same_root,
			       struct mapping *m)
{
	struct debug_search ds = {
		.debug_dir = s->debug_dir, .root_fd = root_fd, .same_root = same_root, .path = m->path
	};
	_cleanup_close_ int fd = -1;
	char path[96];
	int r;

	if (!m->path)
		return 0; /* anonymous: JIT code, named by the perf map if at all */
	if (!strcmp(m->path, "[vdso]")) {
		if (!s->vdso_tried) {
			s->vdso_tried = true;
			s->vdso = vdso_load();
		}
		m->file = elf_file_ref(s->vdso);
		return 0;
	}
	if (m->path[0] != '/')
		return 0;
	snprintf(path, sizeof(path), "/proc/%u/map_files/%llx-%llx", pid, (unsigned long long)m->start,
		 (unsigned long long)m->limit);
	fd = open_regular_at(AT_FDCWD, path, false);
	if (fd < 0 && root_fd >= 0)
		fd = open_regular_at(root_fd, m->path, true);
	if (fd < 0) {
		s->elf_failed++;
		return 0; /* module+offset is all this mapping will give */
	}
	if (fstat(fd, &ds.st) < 0)
		return negative_errno();
	r = elf_file_get(s, &ds, fd, &m->file);
	return r == -ENOMEM ? r : 0;
}

int symbolizer_refresh_process(struct symbolizer *s, uint32_t pid)
{
	_cleanup_close_ int root_fd = -1;
	struct mapping *maps = NULL;
	struct proc_info info;
	struct proc *p;
	size_t n = 0, j = 0;
	bool same_root;
	char path[64];
	uint32_t nspid = pid;
	int r, err = 0;

	r = proc_read_info(pid, &info);
	if (r < 0)
		return r;
	r = read_nspid(pid, &nspid);
	if (r < 0)
		return r;
	snprintf(path, sizeof(path), "/proc/%u/root", pid);
	root_fd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	same_root = root_fd >= 0 && same_root_as_daemon(root_fd);
	r = read_maps(pid, &maps, &n);
	if (r < 0)
		return r;
	r = proc_add(s, pid, &p);
	if (r < 0) {
		for (size_t i = 0; i < n; i++)
			free(maps[i].path);
		free(maps);
		return r;
	}
	p->alive = true;
	if (p->start_time != info.start_time || p->nspid != nspid || !p->perfmap_path) {
		char *pm;

		/* a new process under this pid (or the first look): its own perf map */
		if (asprintf(&pm, "/tmp/perf-%u.map", nspid) < 0) {
			pm = NULL;
			err = -ENOMEM;
		}
		if (pm) {
			/* the old versions' names stay valid: they are dropped only with the process */
			free(p->perfmap_path);
			p->perfmap_path = pm;
			p->jit_st = (struct stat){};
		}
		p->start_time = info.start_time;
		p->nspid = nspid;
	}

	/*
	 * Both lists are sorted by start: keep what is unchanged, read the files of what is new,
	 * move what went away to the history. A failure leaves one mapping without symbols (or
	 * out of the history) and is reported, the rest goes on.
	 */
	for (size_t i = 0; i < n; i++) {
		struct mapping *m = &maps[i];

		while (j < p->n_maps && p->maps[j].start < m->start) {
			r = proc_retire(s, p, &p->maps[j++]);
			if (r < 0)
				err = r;
		}
		if (j < p->n_maps && mapping_same(&p->maps[j], m)) {
			free(m->path);
			*m = p->maps[j++];
			continue;
		}
		r = mapping_attach_file(s, pid, root_fd, same_root, m);
		if (r < 0)
			err = r;
	}
	for (; j < p->n_maps; j++) {
		r = proc_retire(s, p, &p->maps[j]);
		if (r < 0)
			err = r;
	}
	free(p->maps);
	p->maps = maps;
	p->n_maps = n;
	/* a missing or unreadable perf map is no failure of the refresh */
	(void)proc_read_perfmap(s, p, root_fd);
	p->jit_checked_ns = now_mono_ns();
	return err;
}
