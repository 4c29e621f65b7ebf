// SPDX-License-Identifier: GPL-2.0-only
/*
 * The symbolizer: kernel symbols from kallsyms, user symbols from ELF files through each
 * process's maps, JIT symbols from perf maps.
 *
 * Everything slow happens when a process is noted (refresh.c) or when kallsyms is (re)loaded:
 * a resolve is a binary search over the process's mappings and one over the file's symbols.
 * The only I/O on the resolve path is bounded to once a second: /proc/modules for the kernel,
 * and a perf map when a JIT address is not found in it.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

static void proc_free(struct symbolizer *s, struct proc *p)
{
	if (!p)
		return;
	for (size_t i = 0; i < p->n_maps; i++)
		mapping_done(s, &p->maps[i]);
	for (size_t i = 0; i < p->n_old; i++)
		mapping_done(s, &p->old[i]);
	for (size_t i = 0; i < p->n_jit; i++)
		perfmap_done(&p->jit[i]);
	free(p->maps);
	free(p->old);
	free(p->jit);
	free(p->perfmap_path);
	free(p);
}

static size_t proc_index(const struct symbolizer *s, uint32_t pid, bool *ret_found)
{
	size_t lo = 0, hi = s->n_procs;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (s->procs[mid]->pid < pid)
			lo = mid + 1;
		else
			hi = mid;
	}
	*ret_found = lo < s->n_procs && s->procs[lo]->pid == pid;
	return lo;
}

struct proc *proc_find(struct symbolizer *s, uint32_t pid)
{
	bool found;
	size_t i;

	if (s->last && s->last->pid == pid)
		return s->last;
	i = proc_index(s, pid, &found);
	if (!found)
		return NULL;
	s->last = s->procs[i];
	return s->last;
}

struct symbolizer *symbolizer_new(void)
{
	struct symbolizer *s;

	if (elf_version(EV_CURRENT) == EV_NONE) {
		errno = ENOTSUP;
		return NULL;
	}
	s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->owner = getpid();
	s->debug_dir = strdup("/usr/lib/debug");
	if (!s->debug_dir || kernel_init(&s->kernel) < 0) {
		symbolizer_free(s);
		errno = ENOMEM;
		return NULL;
	}
	return s;
}

void symbolizer_free(struct symbolizer *s)
{
	if (!s)
		return;
	refresh_cancel_all(s); /* what the worker holds of s's is its own */
	for (size_t i = 0; i < s->n_procs; i++)
		proc_free(s, s->procs[i]);
	free(s->procs);
	elf_file_unref(&s->cache, s->vdso);
	file_cache_done(&s->cache);
	kernel_done(&s->kernel);
	free(s->debug_dir);
	free(s);
}

int symbolizer_set_debug_dir(struct symbolizer *s, const char *dir)
{
	char *d = strdup(dir);

	if (!d)
		return -ENOMEM;
	free(s->debug_dir);
	s->debug_dir = d;
	return 0;
}

int symbolizer_set_kernel_files(struct symbolizer *s, const char *kallsyms, const char *modules)
{
	return kernel_set_files(&s->kernel, kallsyms, modules);
}

int proc_add(struct symbolizer *s, uint32_t pid, struct proc **ret)
{
	struct proc **procs, *p;
	bool found;
	size_t i = proc_index(s, pid, &found);

	if (found) {
		*ret = s->procs[i];
		return 0;
	}
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	procs = realloc(s->procs, (s->n_procs + 1) * sizeof(*procs));
	if (!procs) {
		free(p);
		return -ENOMEM;
	}
	s->procs = procs;
	memmove(s->procs + i + 1, s->procs + i, (s->n_procs - i) * sizeof(*procs));
	s->procs[i] = p;
	s->n_procs++;
	p->pid = pid;
	*ret = p;
	return 0;
}

void symbolizer_forget_process(struct symbolizer *s, uint32_t pid)
{
	bool found;
	size_t i = proc_index(s, pid, &found);

	refresh_cancel(s, pid);
	if (!found)
		return;
	if (s->last == s->procs[i])
		s->last = NULL;
	proc_free(s, s->procs[i]);
	memmove(s->procs + i, s->procs + i + 1, (s->n_procs - i - 1) * sizeof(*s->procs));
	s->n_procs--;
}

static int resolve_user(struct symbolizer *s, uint32_t pid, uint64_t addr, struct sym_result *ret)
{
	const struct perfmap_entry *je = NULL;
	const struct perfmap *jm = NULL;
	const struct mapping *m;
	struct proc *p;

	p = proc_find(s, pid);
	if (!p)
		return 0;
	m = proc_find_mapping(p, addr);
	if (m) {
		ret->in_exec_mapping = true;
		ret->map_start = m->start;
		ret->map_limit = m->limit;
		ret->map_offset = m->offset;
		ret->module = m->path ? m->path : "//anon";
		ret->module_offset = m->anon ? addr - m->start : addr - m->start + m->offset;
	}
	if (m && m->file) {
		const struct elf_file *f = m->file;
		const struct elf_sym *sym;
		uint64_t vaddr;

		ret->build_id = f->build_id;
		if (!f->n_syms || !elf_file_vaddr(f, addr - m->start + m->offset, &vaddr))
			return 0;
		sym = elf_file_find(f, vaddr);
		if (!sym)
			return 0;
		ret->function = f->names + sym->name;
		ret->function_offset = vaddr - sym->addr;
		return 1;
	}
	if (m && !m->anon)
		return 0;
	/* anonymous executable memory, or no mapping at all (the JIT mapped it since): perf map */
	je = proc_find_jit(p, addr, &jm);
	if (!je) {
		proc_recheck_perfmap(s, p);
		je = proc_find_jit(p, addr, &jm);
	}
	if (!je)
		return 0;
	ret->jit = true;
	ret->in_exec_mapping = true;
	ret->function = perfmap_name(jm, je);
	ret->function_offset = addr - je->start;
	ret->module = p->perfmap_path;
	ret->module_offset = addr;
	if (!m) {
		ret->map_start = je->start;
		ret->map_limit = je->start + je->size;
	}
	return 1;
}

int symbolizer_resolve(struct symbolizer *s, uint32_t pid, uint64_t addr, bool kernel, struct sym_result *ret)
{
	int r;

	*ret = (struct sym_result){ .build_id = "" };
	r = kernel ? resolve_kernel(s, addr, ret) : resolve_user(s, pid, addr, ret);
	if (r > 0) {
		s->resolved++;
	} else {
		s->unresolved++;
		if (kernel)
			s->kernel_unresolved++;
	}
	return r;
}

void symbolizer_stats(const struct symbolizer *s, uint64_t *ret_resolved, uint64_t *ret_unresolved)
{
	*ret_resolved = s->resolved;
	*ret_unresolved = s->unresolved;
}

void symbolizer_info(const struct symbolizer *s, struct symbolizer_info *ret)
{
	struct symbolizer_info info = {
		.resolved = s->resolved,
		.unresolved = s->unresolved,
		.kernel_unresolved = s->kernel_unresolved,
		.kernel_hidden = s->kernel.hidden || (!s->kernel.loaded && s->kernel.err),
		.kernel_symbols = s->kernel.n,
		.kernel_loads = s->kernel.loads,
		.processes = s->n_procs,
		.elf_files = s->cache.n_files,
		.elf_failed = s->elf_failed,
		.perfmap_rejected = s->perfmap_rejected,
		.refreshes = s->refreshes,
		.refresh_abandoned = s->refresh_abandoned,
		.refresh_rejected = s->refresh_rejected,
		.bytes = s->kernel.n * sizeof(*s->kernel.syms) + s->kernel.names_len,
	};

	for (size_t i = 0; i < s->n_procs; i++) {
		const struct proc *p = s->procs[i];

		info.mappings += p->n_maps + p->n_old;
		info.bytes += (p->n_maps + p->n_old) * sizeof(struct mapping) + p->jit_bytes;
	}
	for (size_t i = 0; i < s->cache.n_buckets; i++) {
		for (const struct file_key *k = s->cache.buckets[i]; k; k = k->next)
			if (k == k->file->keys[0])
				info.bytes += elf_file_bytes(k->file);
	}
	*ret = info;
}
