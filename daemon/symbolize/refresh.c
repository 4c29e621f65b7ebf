// SPDX-License-Identifier: GPL-2.0-only
/*
 * Noting a process, in two phases.
 *
 * The read phase (scan) reads what the process controls: /proc/PID/stat, status and maps, the
 * ELF and debug files behind its new mappings, its perf map. It touches no symbolizer state.
 * It starts from a view the loop thread copied out (the mappings noted so far, the keys of
 * the files cached, the perf map version read last, the files a read hung in) and writes a
 * result of its own, so it can run on the worker while the loop goes on, and forks.
 *
 * The apply phase runs on the loop thread: unchanged mappings stay as they are, new ones get
 * their file (from the cache, or the one the scan read), those that went away move to the
 * history, a new perf map version is added.
 *
 * symbolizer_refresh_process() runs both in a row. symbolizer_refresh_process_async() hands
 * the scan to the worker, with REFRESH_BUDGET_NS, and applies it when the worker hands it back.
 * An async scan looks at new files for REFRESH_SLICE_NS at most, then stops: the mappings it
 * did not get to are noted without a file (pending), and another refresh is queued for them,
 * behind the other processes'. What can make an applied result wrong is checked for: a view
 * some other refresh of the process overtook (seq), a file that left the cache meanwhile;
 * either way the process is refreshed again. A scan that overran its budget is dropped, and
 * the file it was in is not opened again for this symbolizer (hung).
 *
 * Files are opened in the process's own mount namespace and root: /proc/PID/map_files/ first
 * (the very inode that is mapped, even deleted; needs CAP_SYS_ADMIN), else the mapped path
 * under /proc/PID/root. A file that is not ELF, or has no symbols at all, is cached too (err
 * set), so it is not read again.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"
#include "procfs.h"
#include "worker.h"

#define REFRESH_BUDGET_NS (10 * NSEC_PER_SEC)
#define REFRESH_SLICE_NS NSEC_PER_SEC

enum scan_state {
	SCAN_SAME, /* as in the view: stays as noted */
	SCAN_NO_FILE, /* anonymous, no path, unreadable, or hung in before: module+offset only */
	SCAN_VDSO,
	SCAN_CACHED, /* its file is in the cache under key (or, id_key set, under that) */
	SCAN_READ, /* its file was read now: file */
	SCAN_LATER, /* not looked at: the scan's slice ran out */
};

struct scan_info {
	enum scan_state state;
	char key[FILE_KEY_MAX]; /* SCAN_CACHED, SCAN_READ: the file by inode */
	char id_key[FILE_KEY_MAX]; /* SCAN_CACHED: the file by build-id, "" if by inode */
	struct elf_file *file; /* SCAN_READ: a reference of the scan's, in no cache */
};

struct refresh {
	/* the view: made on the loop thread, read-only while the scan runs */
	uint32_t pid;
	char *debug_dir;
	struct mapping *prev; /* what is noted and not pending; paths copied, no files */
	size_t n_prev;
	struct known_files *known;
	struct file_id hung[HUNG_MAX];
	size_t n_hung;
	bool prev_jit; /* prev_jit_st is the perf map version read last, of prev_start_time */
	struct stat prev_jit_st;
	uint64_t prev_start_time;
	uint32_t prev_nspid;
	uint64_t slice_ns; /* 0: look at every new mapping */

	/* the result, written by the scan */
	int err; /* < 0: nothing to apply (the process is gone, its maps unreadable) */
	int map_err; /* a mapping left without its file for it (-ENOMEM) */
	uint64_t start_time;
	struct proc_cred cred;
	uint32_t nspid;
	struct mapping *maps; /* the executable mappings, sorted; no files yet */
	struct scan_info *info; /* one for each of maps */
	size_t n_maps;
	size_t at; /* the mapping being looked at; SIZE_MAX: none */
	bool partial; /* some mappings or the perf map are left for later */
	bool jit_read; /* jit is a new version, jit_st its file's */
	struct perfmap jit;
	struct stat jit_st;
	uint64_t open_failed;

	/* the loop thread's, while on the worker */
	struct symbolizer *s;
	struct worker *w;
	uint64_t seq; /* the process's when the view was made */
	bool again; /* refresh again when this one is applied */
	bool cancelled; /* forgotten, or the symbolizer went: nothing to apply to */
	struct refresh *next; /* in s->inflight */
};

static void refresh_free(struct refresh *rq)
{
	if (!rq)
		return;
	for (size_t i = 0; i < rq->n_prev; i++)
		free(rq->prev[i].path);
	free(rq->prev);
	for (size_t i = 0; i < rq->n_maps; i++) {
		free(rq->maps[i].path);
		if (rq->info)
			elf_file_unref(NULL, rq->info[i].file); /* the scan's, in no cache */
	}
	free(rq->maps);
	free(rq->info);
	perfmap_done(&rq->jit);
	known_files_unref(rq->known);
	free(rq->debug_dir);
	free(rq);
}

/* The view of pid, on the loop thread. */
static int refresh_new(struct symbolizer *s, uint32_t pid, uint64_t slice_ns, struct refresh **ret)
{
	struct refresh *rq;
	struct proc *p;
	int r;

	rq = calloc(1, sizeof(*rq));
	if (!rq)
		return -ENOMEM;
	rq->pid = pid;
	rq->slice_ns = slice_ns;
	rq->at = SIZE_MAX;
	rq->s = s;
	rq->debug_dir = strdup(s->debug_dir);
	if (!rq->debug_dir) {
		r = -ENOMEM;
		goto fail;
	}
	r = known_files_get(&s->cache, &rq->known);
	if (r < 0)
		goto fail;
	memcpy(rq->hung, s->hung, s->n_hung * sizeof(*s->hung));
	rq->n_hung = s->n_hung;
	p = proc_find(s, pid);
	if (!p) {
		*ret = rq;
		return 0;
	}
	rq->seq = p->seq;
	rq->prev_jit = p->n_jit > 0;
	rq->prev_jit_st = p->jit_st;
	rq->prev_start_time = p->start_time;
	rq->prev_nspid = p->nspid;
	rq->prev = calloc(MAX(p->n_maps, (size_t)1), sizeof(*rq->prev));
	if (!rq->prev) {
		r = -ENOMEM;
		goto fail;
	}
	for (size_t i = 0; i < p->n_maps; i++) {
		const struct mapping *m = &p->maps[i];

		if (m->pending)
			continue; /* looked at again */
		rq->prev[rq->n_prev] = (struct mapping){
			.start = m->start,
			.limit = m->limit,
			.offset = m->offset,
			.dev = m->dev,
			.ino = m->ino,
			.anon = m->anon,
		};
		if (m->path) {
			rq->prev[rq->n_prev].path = strdup(m->path);
			if (!rq->prev[rq->n_prev].path) {
				r = -ENOMEM;
				goto fail;
			}
		}
		rq->n_prev++;
	}
	*ret = rq;
	return 0;
fail:
	refresh_free(rq);
	return r;
}

/* ---- the read phase: nothing but rq is touched ---- */

static bool scan_hung(const struct refresh *rq, const struct mapping *m)
{
	for (size_t i = 0; i < rq->n_hung; i++)
		if (rq->hung[i].dev == m->dev && rq->hung[i].ino == m->ino)
			return true;
	return false;
}

/* A file this scan read already, by inode key or (key NULL) by build-id. */
static struct elf_file *scan_find(const struct refresh *rq, size_t before, const char *key,
				  const char *build_id)
{
	for (size_t i = 0; i < before; i++) {
		const struct scan_info *si = &rq->info[i];

		if (si->state != SCAN_READ)
			continue;
		if (key ? !strcmp(si->key, key) : !strcmp(si->file->build_id, build_id))
			return si->file;
	}
	return NULL;
}

/* Finds the file behind the new file-backed mapping i, and its symbols. */
static int scan_mapping(struct refresh *rq, size_t i, int root_fd, bool same_root)
{
	const struct mapping *m = &rq->maps[i];
	struct scan_info *si = &rq->info[i];
	struct debug_search ds = {
		.debug_dir = rq->debug_dir,
		.root_fd = root_fd,
		.same_root = same_root,
		.path = m->path,
	};
	_cleanup_close_ int fd = -1;
	struct elf_file *f, *shared;
	char path[96];
	Elf *e = NULL;
	int r;

	si->state = SCAN_NO_FILE;
	if (!m->path)
		return 0; /* anonymous: JIT code, named by the perf map if at all */
	if (!strcmp(m->path, "[vdso]")) {
		si->state = SCAN_VDSO;
		return 0;
	}
	if (m->path[0] != '/' || scan_hung(rq, m))
		return 0;
	snprintf(path, sizeof(path), "/proc/%u/map_files/%llx-%llx", rq->pid, (unsigned long long)m->start,
		 (unsigned long long)m->limit);
	fd = open_regular_at(AT_FDCWD, path, false);
	if (fd < 0 && root_fd >= 0)
		fd = open_regular_at(root_fd, m->path, true);
	if (fd < 0) {
		rq->open_failed++;
		return 0; /* module+offset is all this mapping will give */
	}
	if (fstat(fd, &ds.st) < 0)
		return negative_errno();
	file_key_inode(&ds.st, si->key);
	if (known_files_has(rq->known, si->key)) {
		si->state = SCAN_CACHED;
		return 0;
	}
	f = scan_find(rq, i, si->key, NULL);
	if (f)
		goto found;
	f = elf_file_new();
	if (!f)
		return -ENOMEM;
	/* reachable from rq while it is read: a snapshot job forked meanwhile finds it there */
	si->file = f;
	r = elf_open(fd, &ds.st, &e);
	if (r < 0) {
		f->err = r;
	} else {
		elf_build_id(e, f->build_id);
		/* the same build under another inode: another container's copy */
		if (f->build_id[0]) {
			file_key_build_id(f->build_id, si->id_key);
			if (known_files_has(rq->known, si->id_key)) {
				elf_end(e);
				si->file = NULL;
				elf_file_unref(NULL, f);
				si->state = SCAN_CACHED;
				return 0;
			}
			si->id_key[0] = 0;
			shared = scan_find(rq, i, NULL, f->build_id);
			if (shared) {
				elf_end(e);
				si->file = NULL;
				elf_file_unref(NULL, f);
				f = shared;
				goto found;
			}
		}
		f->err = elf_load(&ds, fd, e, f);
		if (f->err != -ENOMEM && f->n_segs)
			f->cfi_err = elf_load_cfi(e, f); /* a stripped file unwinds all the same */
		elf_end(e);
		(void)dwarf_preopen(f); /* so that snapshot jobs inherit it open */
	}
	if (f->err == -ENOMEM) {
		si->file = NULL;
		elf_file_unref(NULL, f);
		return -ENOMEM;
	}
	si->state = SCAN_READ;
	return 0;
found:
	si->file = elf_file_ref(f);
	si->state = SCAN_READ;
	return 0;
}

/* The debug packages of the files read now that have no symbol table: one pass over dpkg's lists. */
static void scan_debug_packages(struct refresh *rq, int root_fd, bool same_root)
{
	_cleanup_free_ const char **paths = calloc(MAX(rq->n_maps, (size_t)1), sizeof(*paths));
	_cleanup_free_ struct elf_file **files = calloc(MAX(rq->n_maps, (size_t)1), sizeof(*files));
	_cleanup_free_ char *(*pkgs)[DEBUG_PACKAGES] = NULL;
	size_t n = 0;

	if (!paths || !files)
		return;
	for (size_t i = 0; i < rq->n_maps; i++) {
		struct elf_file *f = rq->info[i].file;
		bool seen = false;

		if (rq->info[i].state != SCAN_READ || !f->no_symtab || f->debug_package[0])
			continue;
		for (size_t j = 0; j < n && !seen; j++)
			seen = files[j] == f;
		if (seen)
			continue;
		files[n] = f;
		paths[n++] = rq->maps[i].path;
	}
	if (!n)
		return;
	pkgs = calloc(n, sizeof(*pkgs));
	if (!pkgs || debugpkg_find(same_root ? -1 : root_fd, paths, n, pkgs) < 0)
		return;
	for (size_t i = 0; i < n; i++)
		memcpy(files[i]->debug_package, pkgs[i], sizeof(pkgs[i]));
}

static void scan(struct refresh *rq)
{
	_cleanup_close_ int root_fd = -1;
	const struct stat *prev_jit = NULL;
	uint64_t t0 = now_mono_ns();
	struct proc_info info;
	size_t j = 0, looked = 0;
	bool same_root, stop = false;
	char path[64];
	int r;

	r = proc_read_info(rq->pid, &info);
	if (r < 0)
		goto fail;
	rq->start_time = info.start_time;
	rq->cred = info.cred;
	rq->nspid = rq->pid;
	r = read_nspid(rq->pid, &rq->nspid);
	if (r < 0)
		goto fail;
	snprintf(path, sizeof(path), "/proc/%u/root", rq->pid);
	root_fd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	same_root = root_fd >= 0 && same_root_as_daemon(root_fd);
	r = read_maps(rq->pid, &rq->maps, &rq->n_maps);
	if (r < 0)
		goto fail;
	rq->info = calloc(MAX(rq->n_maps, (size_t)1), sizeof(*rq->info));
	if (!rq->info) {
		r = -ENOMEM;
		goto fail;
	}
	/* both lists are sorted by start: what the view has is kept, what is new looked at */
	for (size_t i = 0; i < rq->n_maps; i++) {
		while (j < rq->n_prev && rq->prev[j].start < rq->maps[i].start)
			j++;
		if (j < rq->n_prev && mapping_same(&rq->prev[j], &rq->maps[i])) {
			rq->info[i].state = SCAN_SAME;
			j++;
			continue;
		}
		if (!stop && rq->slice_ns && looked && now_mono_ns() - t0 >= rq->slice_ns)
			stop = rq->partial = true;
		if (stop) {
			rq->info[i].state = SCAN_LATER;
			continue;
		}
		rq->at = i;
		looked++;
		r = scan_mapping(rq, i, root_fd, same_root);
		if (r < 0)
			rq->map_err = r;
	}
	rq->at = rq->n_maps;
	if (stop || root_fd < 0)
		return;
	scan_debug_packages(rq, root_fd, same_root);
	/* the version read last is of this process, not of one before it under this pid */
	if (rq->prev_jit && rq->prev_start_time == rq->start_time && rq->prev_nspid == rq->nspid)
		prev_jit = &rq->prev_jit_st;
	/* a missing or unreadable perf map is no failure of the refresh */
	snprintf(path, sizeof(path), "/tmp/perf-%u.map", rq->nspid);
	rq->jit_read = perfmap_read_at(root_fd, path, &rq->cred, prev_jit, &rq->jit, &rq->jit_st) > 0;
	return;
fail:
	rq->err = r;
}

/* ---- the apply phase, on the loop thread ---- */

/* m's file from what the scan found; false when that is no longer there to be had. */
static bool apply_file(struct symbolizer *s, const struct scan_info *si, struct mapping *m, int *err)
{
	const char *keys[2] = { si->key, NULL };
	char id_key[FILE_KEY_MAX];
	struct elf_file *f;
	int r;

	switch (si->state) {
	case SCAN_SAME: /* not in the process's list, though it was in the view */
	case SCAN_LATER:
		return false;
	case SCAN_NO_FILE:
		return true;
	case SCAN_VDSO:
		if (!s->vdso_tried) {
			s->vdso_tried = true;
			s->vdso = vdso_load();
		}
		m->file = elf_file_ref(s->vdso);
		return true;
	case SCAN_CACHED:
		f = cache_get(&s->cache, si->id_key[0] ? si->id_key : si->key);
		if (!f)
			return false; /* dropped since the view was made */
		if (si->id_key[0] && (r = cache_put(&s->cache, si->key, f)) < 0)
			*err = r;
		m->file = elf_file_ref(f);
		return true;
	case SCAN_READ:
		f = cache_get(&s->cache, si->key);
		if (!f && si->file->build_id[0]) {
			file_key_build_id(si->file->build_id, id_key);
			keys[1] = id_key;
			f = cache_get(&s->cache, id_key);
			if (f && (r = cache_put(&s->cache, si->key, f)) < 0)
				*err = r;
		}
		if (!f) {
			/* new to the cache (another refresh may have brought it meanwhile) */
			f = si->file;
			if (symbolizer_over_budget(s, elf_file_bytes(f)))
				return true; /* module and offset only */
			if (f->err)
				s->elf_failed++;
			if (f->minidebug_err)
				s->minidebug_failed++;
			r = cache_put_file(&s->cache, keys, 2, f);
			if (r < 0) {
				*err = r;
				return true;
			}
		}
		m->file = elf_file_ref(f);
		return true;
	}
	return true;
}

/* Installs what the scan found; *ret_again: some of it is to be looked at again. */
static int apply(struct symbolizer *s, struct refresh *rq, bool *ret_again)
{
	struct proc *p;
	size_t j = 0;
	int r, err = rq->map_err;
	bool again = rq->partial;

	r = proc_add(s, rq->pid, &p);
	if (r < 0)
		return r;
	p->alive = true;
	p->seq++;
	s->refreshes++;
	s->elf_failed += rq->open_failed;
	if (p->start_time != rq->start_time || p->nspid != rq->nspid || !p->perfmap_path) {
		char *pm;

		/* a new process under this pid (or the first look): its own perf map */
		if (asprintf(&pm, "/tmp/perf-%u.map", rq->nspid) < 0) {
			pm = NULL;
			err = -ENOMEM;
		}
		if (pm) {
			/* the old versions' names stay valid: they are dropped only with the process */
			free(p->perfmap_path);
			p->perfmap_path = pm;
			p->jit_st = (struct stat){};
		}
		p->start_time = rq->start_time;
		p->nspid = rq->nspid;
	}

	/*
	 * Keep what is unchanged, give what is new its file, move what went away to the history.
	 * A failure leaves one mapping without symbols (or out of the history) and is reported,
	 * the rest goes on.
	 */
	for (size_t i = 0; i < rq->n_maps; i++) {
		struct mapping *m = &rq->maps[i];
		const struct scan_info *si = &rq->info[i];

		while (j < p->n_maps && p->maps[j].start < m->start) {
			r = proc_retire(s, p, &p->maps[j++]);
			if (r < 0)
				err = r;
		}
		if (j < p->n_maps && mapping_same(&p->maps[j], m)) {
			if (si->state == SCAN_SAME || si->state == SCAN_LATER) {
				/* as noted (also when noted pending: not looked at this time either) */
				free(m->path);
				*m = p->maps[j++];
				continue;
			}
			mapping_done(s, &p->maps[j++]); /* it was pending: noted again, with its file */
		}
		if (!apply_file(s, si, m, &err))
			m->pending = again = true;
	}
	for (; j < p->n_maps; j++) {
		r = proc_retire(s, p, &p->maps[j]);
		if (r < 0)
			err = r;
	}
	free(p->maps);
	p->maps = TAKE_PTR(rq->maps);
	p->n_maps = rq->n_maps;
	rq->n_maps = 0;
	/* the scan's own references: what a mapping took stays, the rest goes */
	for (size_t i = 0; i < p->n_maps; i++)
		elf_file_unref(&s->cache, TAKE_PTR(rq->info[i].file));
	if (rq->jit_read && !symbolizer_over_budget(s, perfmap_bytes(&rq->jit)) &&
	    (r = proc_add_perfmap(s, p, &rq->jit, &rq->jit_st)) < 0)
		err = r;
	p->jit_checked_ns = now_mono_ns();
	*ret_again = again;
	return err;
}

int symbolizer_refresh_process(struct symbolizer *s, uint32_t pid)
{
	struct refresh *rq;
	bool again;
	int r;

	r = refresh_new(s, pid, 0, &rq);
	if (r < 0)
		return r;
	scan(rq);
	r = rq->err < 0 ? rq->err : apply(s, rq, &again);
	refresh_free(rq);
	return r;
}

/* ---- on the worker ---- */

static int refresh_work(void *arg)
{
	scan(arg);
	return 0;
}

static void refresh_done(void *arg, int r);

static int refresh_submit(struct symbolizer *s, struct worker *w, uint32_t pid)
{
	struct refresh *rq;
	int r;

	r = refresh_new(s, pid, REFRESH_SLICE_NS, &rq);
	if (r < 0)
		return r;
	rq->w = w;
	r = worker_submit(w, REFRESH_BUDGET_NS, refresh_work, refresh_done, rq);
	if (r < 0) {
		refresh_free(rq);
		return r;
	}
	rq->next = s->inflight;
	s->inflight = rq;
	return 0;
}

static void unlink_inflight(struct symbolizer *s, struct refresh *rq)
{
	for (struct refresh **pp = &s->inflight; *pp; pp = &(*pp)->next)
		if (*pp == rq) {
			*pp = rq->next;
			break;
		}
	rq->next = NULL;
}

/* The file a scan was in when its budget ran out is not opened again. */
static void note_hung(struct symbolizer *s, const struct refresh *rq)
{
	const struct mapping *m;

	if (rq->at >= rq->n_maps)
		return; /* in /proc, or the perf map: nothing to tell by */
	m = &rq->maps[rq->at];
	s->hung[s->hung_next] = (struct file_id){ .dev = m->dev, .ino = m->ino };
	s->hung_next = (s->hung_next + 1) % HUNG_MAX;
	s->n_hung = MIN(s->n_hung + 1, (size_t)HUNG_MAX);
}

static void refresh_done(void *arg, int r)
{
	struct refresh *rq = arg;
	struct symbolizer *s = rq->s;
	struct worker *w = rq->w;
	uint32_t pid = rq->pid;
	bool again = rq->again;
	struct proc *p;

	if (rq->cancelled) {
		refresh_free(rq);
		return;
	}
	unlink_inflight(s, rq);
	if (r < 0) {
		/* over budget (or the worker went): dropped; the next mmap or exec brings another */
		s->refresh_abandoned++;
		if (r == -ETIME)
			note_hung(s, rq);
		refresh_free(rq);
		return;
	}
	p = proc_find(s, pid);
	if ((p ? p->seq : 0) != rq->seq) {
		again = true; /* noted since the view was made: the view is stale */
	} else if (rq->err >= 0) {
		bool more = false;

		(void)apply(s, rq, &more);
		again = again || more;
	}
	refresh_free(rq);
	if (again && refresh_submit(s, w, pid) < 0)
		s->refresh_rejected++;
}

int symbolizer_refresh_process_async(struct symbolizer *s, struct worker *w, uint32_t pid)
{
	if (getpid() != s->owner)
		return -ECHILD; /* what is in flight is the parent's */
	for (struct refresh *rq = s->inflight; rq; rq = rq->next)
		if (rq->pid == pid) {
			rq->again = true; /* what it reads may predate what was asked for */
			return 0;
		}
	return refresh_submit(s, w, pid);
}

bool symbolizer_refresh_in_flight(const struct symbolizer *s, uint32_t pid)
{
	for (const struct refresh *rq = s->inflight; rq; rq = rq->next)
		if (rq->pid == pid)
			return true;
	return false;
}

static void cancel(struct symbolizer *s, bool all, uint32_t pid)
{
	struct refresh **pp = &s->inflight;

	while (*pp) {
		struct refresh *rq = *pp;

		if (!all && rq->pid != pid) {
			pp = &rq->next;
			continue;
		}
		*pp = rq->next;
		rq->next = NULL;
		rq->cancelled = true; /* the worker hands it back, and it is freed then */
	}
}

void refresh_cancel(struct symbolizer *s, uint32_t pid)
{
	cancel(s, false, pid);
}

void refresh_cancel_all(struct symbolizer *s)
{
	cancel(s, true, 0);
}
