// SPDX-License-Identifier: GPL-2.0-only
/*
 * Kernel symbols: /proc/kallsyms, text symbols in one sorted array, reloaded (checked at most
 * once a second) when /proc/modules changes.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

const char KERNEL_MODULE[] = "[kernel.kallsyms]";

static void kernel_clear(struct kernel *k)
{
	free(k->syms);
	free(k->names);
	k->syms = NULL;
	k->names = NULL;
	k->n = 0;
	k->names_len = 0;
	k->loaded = false;
	k->hidden = false;
}

int kernel_init(struct kernel *k)
{
	*k = (struct kernel){
		.kallsyms_path = strdup("/proc/kallsyms"),
		.modules_path = strdup("/proc/modules"),
	};
	if (!k->kallsyms_path || !k->modules_path) {
		kernel_done(k);
		return -ENOMEM;
	}
	return 0;
}

void kernel_done(struct kernel *k)
{
	kernel_clear(k);
	free(k->kallsyms_path);
	free(k->modules_path);
	k->kallsyms_path = k->modules_path = NULL;
}

int kernel_set_files(struct kernel *k, const char *kallsyms, const char *modules)
{
	char *a = strdup(kallsyms), *b = strdup(modules);

	if (!a || !b) {
		free(a);
		free(b);
		return -ENOMEM;
	}
	free(k->kallsyms_path);
	free(k->modules_path);
	k->kallsyms_path = a;
	k->modules_path = b;
	kernel_clear(k);
	k->err = 0;
	return 0;
}

struct kmod {
	char name[64];
	uint64_t start, end;
};

/*
 * /proc/modules: "name size refcount deps state address". The hash covers names, sizes and
 * addresses only, so use counts going up and down do not look like a change.
 */
static int kernel_read_modules(const char *path, struct kmod **ret, size_t *ret_n, uint64_t *ret_hash)
{
	_cleanup_fclose_ FILE *f = fopen(path, "re");
	_cleanup_free_ struct kmod *mods = NULL;
	uint64_t h = FNV_OFFSET;
	size_t n = 0, cap = 0;
	char line[1024];

	if (!f) {
		if (errno != ENOENT)
			return negative_errno();
		/* no module support: nothing ever changes */
		*ret = NULL;
		*ret_n = 0;
		*ret_hash = h;
		return 0;
	}
	while (fgets(line, sizeof(line), f)) {
		char name[64], *last;
		unsigned long long size, addr;

		if (sscanf(line, "%63s %llu", name, &size) != 2)
			continue;
		last = strrchr(line, ' ');
		if (!last || sscanf(last, " %llx", &addr) != 1)
			addr = 0;
		h = fnv1a(h, name, strlen(name) + 1);
		h = fnv1a(h, &size, sizeof(size));
		h = fnv1a(h, &addr, sizeof(addr));
		if (n == cap) {
			struct kmod *m = realloc(mods, (cap ? cap * 2 : 64) * sizeof(*m));

			if (!m)
				return -ENOMEM;
			mods = m;
			cap = cap ? cap * 2 : 64;
		}
		snprintf(mods[n].name, sizeof(mods[n].name), "[%.61s]", name);
		mods[n].start = addr;
		mods[n].end = addr ? addr + size : 0;
		n++;
	}
	if (ferror(f))
		return -EIO;
	*ret = TAKE_PTR(mods);
	*ret_n = n;
	*ret_hash = h;
	return 0;
}

static int cmp_ksym(const void *a, const void *b)
{
	const struct ksym *x = a, *y = b;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	/* among aliases: the one read first (end holds the line number until the ends are set) */
	return x->end < y->end ? -1 : x->end > y->end;
}

static const struct kmod *kmod_find(const struct kmod *mods, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(mods[i].name, name))
			return &mods[i];
	return NULL;
}

/*
 * kallsyms: "address type name[\t[module]]". Only text symbols are kept. A symbol ends where
 * the next one starts, but never past _etext (core kernel) or its module's end.
 */
static int kernel_load(struct kernel *k)
{
	_cleanup_fclose_ FILE *f = NULL;
	_cleanup_free_ struct kmod *mods = NULL;
	_cleanup_free_ char *line = NULL;
	_cleanup_free_ struct ksym *syms = NULL;
	struct strbuf names = {};
	size_t n = 0, cap = 0, n_mods = 0, linecap = 0, out = 0;
	uint64_t hash, etext = 0, nonzero = 0, lineno = 0;
	int64_t module = 0, off;
	ssize_t len;
	int r;

	r = kernel_read_modules(k->modules_path, &mods, &n_mods, &hash);
	if (r < 0)
		return r;
	f = fopen(k->kallsyms_path, "re");
	if (!f)
		return negative_errno();
	off = strbuf_add(&names, KERNEL_MODULE, strlen(KERNEL_MODULE), UINT32_MAX);
	if (off < 0)
		return off;
	while ((len = getline(&line, &linecap, f)) > 0) {
		char *end, *name, *mod;
		unsigned long long addr;
		size_t name_len;
		char type;

		lineno++;
		if (line[len - 1] == '\n')
			line[--len] = 0;
		errno = 0;
		addr = strtoull(line, &end, 16);
		if (errno || end == line || end[0] != ' ' || !end[1] || end[2] != ' ')
			continue;
		if (addr)
			nonzero++;
		type = end[1];
		name = end + 3;
		name_len = strcspn(name, "\t ");
		if (!name_len)
			continue;
		if (name_len == 6 && !memcmp(name, "_etext", 6)) {
			etext = addr; /* a bound, not a function */
			continue;
		}
		if (type != 't' && type != 'T' && type != 'w' && type != 'W')
			continue;
		mod = strchr(name + name_len, '[');
		if (mod) {
			size_t mod_len = strcspn(mod, "]");

			if (strncmp(names.p + module, mod, mod_len + 1)) {
				module = strbuf_add(&names, mod, mod_len + 1, UINT32_MAX);
				if (module < 0) {
					r = module;
					goto fail;
				}
			}
		} else {
			module = 0;
		}
		off = strbuf_add(&names, name, name_len, UINT32_MAX);
		if (off < 0) {
			r = off;
			goto fail;
		}
		if (n == cap) {
			struct ksym *p = realloc(syms, (cap ? cap * 2 : 65536) * sizeof(*p));

			if (!p) {
				r = -ENOMEM;
				goto fail;
			}
			syms = p;
			cap = cap ? cap * 2 : 65536;
		}
		syms[n++] = (struct ksym){ .addr = addr, .end = lineno, .name = off, .module = module };
	}
	if (ferror(f)) {
		r = -EIO;
		goto fail;
	}
	kernel_clear(k);
	k->loaded = true;
	k->loads++;
	k->modules_hash = hash;
	if (lineno && !nonzero) {
		/* kptr_restrict: every address reads 0, nothing can be resolved */
		k->hidden = true;
		free(names.p);
		return 0;
	}
	qsort_safe(syms, n, sizeof(*syms), cmp_ksym);
	for (size_t i = 0; i < n; i++) {
		struct ksym *ks = &syms[i];
		const struct kmod *km = NULL;
		size_t j = i + 1;
		uint64_t end, next;

		if (out && syms[out - 1].addr == ks->addr)
			continue;
		while (j < n && syms[j].addr == ks->addr)
			j++;
		next = j < n ? syms[j].addr : UINT64_MAX;
		if (ks->module)
			km = kmod_find(mods, n_mods, names.p + ks->module);
		if (km && km->end > ks->addr)
			end = MIN(next, km->end);
		else if (!ks->module && etext > ks->addr)
			end = MIN(next, etext);
		else if (j < n && syms[j].module == ks->module)
			end = next;
		else
			end = MIN(next,
				  ks->addr > UINT64_MAX - KSYM_TAIL ? UINT64_MAX : ks->addr + KSYM_TAIL);
		syms[out] = *ks;
		syms[out].end = end;
		out++;
	}
	k->n = out;
	k->syms = TAKE_PTR(syms);
	k->names_len = names.len;
	k->names = strbuf_take(&names);
	return 0;
fail:
	free(names.p);
	return r;
}

/* Loads kallsyms the first time; after that, at most once a second, reloads it if modules changed. */
static void kernel_check(struct kernel *k)
{
	uint64_t now = now_mono_ns(), hash;
	_cleanup_free_ struct kmod *mods = NULL;
	size_t n_mods;

	if (k->loaded || k->err) {
		if (now - k->checked_ns < KERNEL_CHECK_NS)
			return;
		k->checked_ns = now;
		if (k->loaded && kernel_read_modules(k->modules_path, &mods, &n_mods, &hash) == 0 &&
		    hash == k->modules_hash)
			return;
	}
	k->checked_ns = now;
	k->err = kernel_load(k);
}

static const struct ksym *kernel_find(const struct kernel *k, uint64_t addr)
{
	size_t lo = 0, hi = k->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (k->syms[mid].addr <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo || addr >= k->syms[lo - 1].end)
		return NULL;
	return &k->syms[lo - 1];
}

int resolve_kernel(struct symbolizer *s, uint64_t addr, struct sym_result *ret)
{
	struct kernel *k = &s->kernel;
	const struct ksym *ks;

	kernel_check(k);
	ret->module = KERNEL_MODULE;
	ret->module_offset = addr;
	if (!k->loaded || k->hidden) {
		/* nothing to judge the address by: it is not called outside */
		ret->in_exec_mapping = true;
		return 0;
	}
	ks = kernel_find(k, addr);
	if (!ks)
		return 0;
	ret->in_exec_mapping = true;
	ret->module = k->names + ks->module;
	ret->function = k->names + ks->name;
	ret->function_offset = addr - ks->addr;
	return 1;
}
