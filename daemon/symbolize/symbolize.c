// SPDX-License-Identifier: GPL-2.0-only
/*
 * The symbolizer: kernel symbols from kallsyms, user symbols from ELF files through each
 * process's maps, JIT symbols from perf maps.
 *
 * Everything slow happens when a process is noted (refresh.c) or when kallsyms is (re)loaded:
 * a resolve is a binary search over the process's mappings and one over the file's symbols,
 * and a demangling (once per name). The I/O on the resolve path is bounded: /proc/modules for
 * the kernel and a perf map when a JIT address is not found in it, once a second; a file's
 * DWARF, in a snapshot job, within the caps and the budget of dwarf.c.
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
	s->unwind_budget_ns = UNWIND_BUDGET_NS;
	s->cache.dwarf.owner = s->owner;
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
	name_table_done(&s->demangled);
	name_table_done(&s->names);
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

/* What the file says of vaddr beyond its symbol: source lines, inlined frames, debug packages. */
static void resolve_debuginfo(struct symbolizer *s, struct elf_file *f, uint64_t vaddr,
			      struct sym_result *ret)
{
	size_t n = 0;

	while (n < DEBUG_PACKAGES && f->debug_package[n])
		n++;
	ret->debug_packages = (const char *const *)f->debug_package;
	ret->n_debug_packages = n;
	if (f->minidebug_err)
		ret->debuginfo_failed = true;
	if (dwarf_lookup(&s->cache, &s->names, f, vaddr, ret) < 0)
		ret->debuginfo_failed = true;
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
		struct elf_file *f = m->file;
		const struct elf_sym *sym;
		uint64_t vaddr;

		ret->build_id = f->build_id;
		if (!elf_file_vaddr(f, addr - m->start + m->offset, &vaddr))
			return 0;
		sym = f->n_syms ? elf_file_find(f, vaddr) : NULL;
		if (sym) {
			ret->function = f->names + sym->name;
			ret->function_offset = vaddr - sym->addr;
		}
		resolve_debuginfo(s, f, vaddr, ret); /* may name a function no symbol does */
		return ret->function ? 1 : 0;
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
	if (r > 0 && !ret->jit && !ret->system_name) {
		const char *d = demangle_cached(&s->demangled, ret->function);

		if (d) {
			ret->system_name = ret->function;
			ret->function = d;
		}
	}
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

uint64_t symbolizer_bytes(const struct symbolizer *s)
{
	uint64_t bytes = s->kernel.n * sizeof(*s->kernel.syms) + s->kernel.names_len;

	for (size_t i = 0; i < s->n_procs; i++) {
		const struct proc *p = s->procs[i];

		bytes += (p->n_maps + p->n_old) * sizeof(struct mapping) + p->jit_bytes;
	}
	for (size_t i = 0; i < s->cache.n_buckets; i++) {
		for (const struct file_key *k = s->cache.buckets[i]; k; k = k->next)
			if (k == k->file->keys[0])
				bytes += elf_file_bytes(k->file);
	}
	return bytes;
}

bool symbolizer_over_budget(struct symbolizer *s, uint64_t size)
{
	if (!s->budget || symbolizer_bytes(s) + size <= s->budget)
		return false;
	s->over_budget++;
	return true;
}

void symbolizer_learned(struct symbolizer *s, uint8_t **ret, size_t *ret_len)
{
	learned_take(&s->cache.dwarf, ret, ret_len);
}

int symbolizer_learn(struct symbolizer *s, const uint8_t *data, size_t len)
{
	uint64_t dropped = 0;
	size_t kept = 0;
	int r;

	/* within symbolizer_mb, as what is read of files is (a range takes about the bytes of
	 * its record, twice over) */
	if (s->budget && symbolizer_bytes(s) + 2 * (uint64_t)len > s->budget) {
		s->learn_rejected++;
		return 0;
	}
	r = lines_learn(&s->cache, &s->names, data, len, &kept, &dropped);
	s->learned += kept;
	s->learn_dropped += dropped;
	if (r < 0)
		s->learn_rejected++;
	return r;
}

void symbolizer_set_budget(struct symbolizer *s, uint64_t bytes)
{
	s->budget = bytes;
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
		.minidebug_failed = s->minidebug_failed,
		.dwarf_files = dwarf_fds_held(),
		.dwarf_opened = s->cache.dwarf.opened,
		.dwarf_failed = s->cache.dwarf.failed + dwarf_preopen_failed(),
		.dwarf_evicted = s->cache.dwarf.evicted,
		.dwarf_lookups = s->cache.dwarf.lookups,
		.dwarf_around = s->cache.dwarf.around,
		.dwarf_over_budget = s->cache.dwarf.over_budget,
		.dwarf_cached = s->cache.dwarf.cached,
		.dwarf_learned = s->learned,
		.dwarf_learn_dropped = s->cache.dwarf.learn_dropped + s->learn_dropped + s->learn_rejected,
		.dwarf_bytes = s->cache.dwarf.bytes,
		.dwarf_preopened_bytes = dwarf_preopened_bytes(),
		.names_bytes = name_table_bytes(&s->demangled) + name_table_bytes(&s->names),
		.names_full = s->demangled.full + s->names.full,
		.bytes = symbolizer_bytes(s),
		.budget = s->budget,
		.over_budget = s->over_budget,
	};

	for (size_t i = 0; i < s->n_procs; i++)
		info.mappings += s->procs[i]->n_maps + s->procs[i]->n_old;
	for (size_t i = 0; i < s->cache.n_buckets; i++) {
		for (const struct file_key *k = s->cache.buckets[i]; k; k = k->next)
			if (k == k->file->keys[0]) {
				const struct elf_file *f = k->file;

				info.cfi_files += !!f->cfi;
				info.dwarf_lines += lines_count(f);
				info.cfi_failed += f->cfi_err < 0;
				info.cfi_bytes += cfi_bytes(f->cfi);
			}
	}
	info.unwinds = s->unwinds;
	info.unwind_frames = s->unwind_frames;
	info.unwind_fp_steps = s->unwind_fp_steps;
	info.unwind_fp_kept = s->unwind_fp_kept;
	info.unwind_offcpu = s->unwind_offcpu;
	info.unwind_copies = s->unwind_copies;
	info.unwind_copy_bytes = s->unwind_copy_bytes;
	info.unwind_offcpu_fp = s->unwind_offcpu_fp;
	memcpy(info.unwind_stops, s->unwind_stops, sizeof(info.unwind_stops));
	*ret = info;
}

/* This thread's CPU time: an unwind's budget is what it costs, not how long it is preempted. */
void symbolizer_unwind_stats(const struct symbolizer_info *info, Hostprof__UnwindStats *ret, Hostprof__Drop *drops,
			     Hostprof__Drop **ptrs)
{
	size_t n = 0;

	hostprof__unwind_stats__init(ret);
	ret->has_stacks = ret->has_complete = ret->has_frames = ret->has_fp_steps = true;
	ret->stacks = info->unwinds;
	ret->complete = info->unwind_stops[UNWIND_END];
	ret->frames = info->unwind_frames;
	ret->fp_steps = info->unwind_fp_steps;
	ret->has_fp_kept = ret->has_offcpu = ret->has_offcpu_fp = true;
	ret->fp_kept = info->unwind_fp_kept;
	ret->offcpu = info->unwind_offcpu;
	ret->offcpu_fp = info->unwind_offcpu_fp;
	ret->has_copies = ret->has_copy_bytes = true;
	ret->copies = info->unwind_copies;
	ret->copy_bytes = info->unwind_copy_bytes;
	ret->has_cfi_files = ret->has_cfi_refused = ret->has_cfi_bytes = true;
	ret->cfi_files = info->cfi_files;
	ret->cfi_refused = info->cfi_failed;
	ret->cfi_bytes = info->cfi_bytes;
	for (int i = 0; i < UNWIND_STOP_MAX; i++) {
		if (i == UNWIND_END || !info->unwind_stops[i])
			continue;
		hostprof__drop__init(&drops[n]);
		drops[n].cause = (char *)unwind_stop_name(i);
		drops[n].has_count = true;
		drops[n].count = info->unwind_stops[i];
		ptrs[n] = &drops[n];
		n++;
	}
	ret->truncated = ptrs;
	ret->n_truncated = n;
}

static uint64_t thread_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec * NSEC_PER_SEC + ts.tv_nsec;
}

/* The frames of a copied stack: unwind.c's steps, through the mappings pid has (had). */
int symbolizer_unwind(struct symbolizer *s, uint32_t pid, const struct unwind_regs *regs, const void *stack,
		      size_t stack_len, uint64_t *frames, size_t max, struct unwind_result *ret)
{
	struct unwind_mem mem = { .data = stack, .len = stack_len };
	struct unwind_regs cur = *regs;
	enum unwind_stop why = UNWIND_DEPTH;
	bool exact = true, signal;
	uint64_t pc, sp, t0;
	struct proc *p;

	*ret = (struct unwind_result){};
	if (!max)
		return -EINVAL;
	s->unwinds++;
	if (unwind_reg_get(&cur, UNWIND_PC, &pc) < 0 || unwind_reg_get(&cur, UNWIND_SP, &sp) < 0) {
		why = UNWIND_NO_REGS;
		goto out;
	}
	mem.base = sp;
	frames[ret->n++] = pc;
	p = proc_find(s, pid);
	t0 = thread_cpu_ns();
	while (ret->n < max) {
		const struct mapping *m;
		uint64_t lookup = exact ? pc : pc - 1, vaddr, prev_pc = pc, prev_sp = sp;
		const struct perfmap *jm;
		struct cfi *cfi = NULL;

		m = p ? proc_find_mapping(p, lookup) : NULL;
		if (!m && !(p && proc_find_jit(p, lookup, &jm))) {
			why = UNWIND_NO_MAPPING; /* a stack that points nowhere */
			break;
		}
		if (m && m->file && elf_file_vaddr(m->file, lookup - m->start + m->offset, &vaddr))
			cfi = m->file->cfi;
		signal = false;
		why = cfi ? unwind_step_cfi(cfi, vaddr, &mem, &cur, &signal) : UNWIND_NO_CFI;
		if (why == UNWIND_NO_CFI) {
			why = unwind_step_fp(&mem, &cur);
			if (why == UNWIND_DEPTH)
				ret->fp_steps++;
		}
		if (why != UNWIND_DEPTH)
			break;
		pc = cur.r[UNWIND_PC];
		sp = cur.r[UNWIND_SP];
		if (!pc) {
			why = UNWIND_END;
			break;
		}
		/* the stack grows down: a caller's frame is never below; at the same place only a leaf's */
		if (sp < prev_sp || (sp == prev_sp && (pc == prev_pc || ret->n > 1))) {
			why = UNWIND_LOOP;
			break;
		}
		frames[ret->n++] = pc;
		exact = signal; /* after a signal frame, the interrupted pc itself */
		why = UNWIND_DEPTH;
		if (!(ret->n % 4) && thread_cpu_ns() - t0 >= s->unwind_budget_ns) { /* looked at every 4 frames */
			why = ret->n < max ? UNWIND_TIME : UNWIND_DEPTH;
			break;
		}
	}
out:
	ret->stop = why;
	s->unwind_stops[why]++;
	s->unwind_frames += ret->n;
	s->unwind_fp_steps += ret->fp_steps;
	return 0;
}

/*
 * Whether a stack keeps its frame-pointer walk of n_fp frames over res: the unwind stopped
 * early for want of what it needs (the pc's mapping not read yet, no CFI and no frame
 * pointer in the copy, CFI refused, no registers) and the walk went further. Counted.
 */
bool symbolizer_keep_fp(struct symbolizer *s, const struct unwind_result *res, size_t n_fp)
{
	if (res->n >= n_fp || (res->stop != UNWIND_NO_MAPPING && res->stop != UNWIND_NO_CFI &&
			       res->stop != UNWIND_BAD_CFI && res->stop != UNWIND_NO_REGS))
		return false;
	s->unwind_fp_kept++;
	return true;
}

void symbolizer_set_unwind_budget(struct symbolizer *s, uint64_t ns)
{
	s->unwind_budget_ns = ns;
}

void symbolizer_count_copy(struct symbolizer *s, uint64_t record_bytes)
{
	s->unwind_copies++;
	s->unwind_copy_bytes += record_bytes;
}

void symbolizer_count_offcpu(struct symbolizer *s, bool unwound)
{
	if (unwound)
		s->unwind_offcpu++;
	else
		s->unwind_offcpu_fp++;
}

size_t symbolizer_sample_stack(struct symbolizer *s, uint32_t pid, const struct unwind_regs *regs, const void *stack,
			       size_t stack_len, const uint64_t *fp, size_t n_fp, uint64_t *frames, size_t max,
			       struct unwind_result *ret)
{
	if (symbolizer_unwind(s, pid, regs, stack, stack_len, frames, max, ret) < 0)
		return 0;
	if (symbolizer_keep_fp(s, ret, MIN(n_fp, max))) {
		ret->n = MIN(n_fp, max);
		ret->fp_kept = true;
		memcpy(frames, fp, ret->n * sizeof(*frames));
	}
	return ret->n;
}
