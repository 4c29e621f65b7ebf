// SPDX-License-Identifier: GPL-2.0-only
/*
 * The symbolizer: kernel symbols from kallsyms, user symbols from ELF files through each
 * process's maps, JIT symbols from perf maps.
 *
 * Everything slow happens when a process is noted (symbolizer_refresh_process) or when
 * kallsyms is (re)loaded: a resolve is a binary search over the process's mappings and one
 * over the file's symbols. The only I/O on the resolve path is bounded to once a second:
 * /proc/modules for the kernel, and a perf map when a JIT address is not found in it. ELF files are read once, with libelf's ELF_C_READ (pread,
 * not mmap: a watched process truncating its own files must not SIGBUS the daemon), and
 * shared by every mapping of the same file, found by build-id or else by device, inode, size
 * and mtime. A file's symbol table (names copied out, libelf released) lives as long as some
 * mapping, current or retired, holds a reference.
 *
 * Files of a process are opened in its own mount namespace and root: /proc/PID/map_files/
 * first (the very inode that is mapped, even deleted; needs CAP_SYS_ADMIN), else the mapped
 * path resolved with openat2(RESOLVE_IN_ROOT) under /proc/PID/root, so symlinks a container
 * plants cannot lead out of it. Only regular files are read, never blocking (O_NONBLOCK).
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "macro.h"
#include "perfmap.h"
#include "procfs.h"
#include "symbolize.h"

#define BUILD_ID_MAX 64 /* bytes; GNU ld writes 20 */
#define ELF_SYMS_MAX (16u << 20) /* symbols kept from one file */
#define ELF_NAMES_MAX (1u << 30) /* bytes of names from one file */
#define MAPPINGS_MAX 65536 /* executable mappings noted per process */
#define RETIRED_MAX 4096 /* mappings kept per process after they went away */
#define PROC_PERFMAP_BYTES_MAX (64u << 20) /* perf map versions kept per process */
#define KSYM_TAIL 4096 /* assumed size of a kernel symbol nothing bounds */
#define SYM_SCAN_MAX 64 /* enclosing symbols looked at behind the nearest one */
#define KERNEL_CHECK_NS NSEC_PER_SEC
#define PERFMAP_CHECK_NS NSEC_PER_SEC

static const char KERNEL_MODULE[] = "[kernel.kallsyms]";

/* ---- small helpers ---- */

struct strbuf {
	char *p;
	size_t len, cap;
};

/* Appends s[0..n) and a NUL; returns its offset or -errno. */
static int64_t strbuf_add(struct strbuf *b, const char *s, size_t n, size_t max)
{
	size_t off = b->len;

	if (n + 1 > max - MIN(max, b->len))
		return -E2BIG;
	if (b->len + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 4096;
		char *p;

		while (cap < b->len + n + 1)
			cap *= 2;
		p = realloc(b->p, cap);
		if (!p)
			return -ENOMEM;
		b->p = p;
		b->cap = cap;
	}
	memcpy(b->p + off, s, n);
	b->p[off + n] = 0;
	b->len += n + 1;
	return off;
}

/* Shrinks the buffer to its length and hands it over. */
static char *strbuf_take(struct strbuf *b)
{
	char *p = b->len ? realloc(b->p, b->len) : NULL;

	if (!p)
		p = b->p;
	if (!b->len) {
		free(b->p);
		p = NULL;
	}
	*b = (struct strbuf){};
	return p;
}

static uint64_t fnv1a(uint64_t h, const void *data, size_t n)
{
	const unsigned char *p = data;

	for (size_t i = 0; i < n; i++) {
		h ^= p[i];
		h *= 0x100000001b3ULL;
	}
	return h;
}

#define FNV_OFFSET 0xcbf29ce484222325ULL

static uint64_t now_mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return ts.tv_sec * NSEC_PER_SEC + ts.tv_nsec;
}

/*
 * Opens a regular file read-only; -EINVAL for anything else. The path is looked up with
 * O_PATH first, and only a regular file is then opened for reading (through /proc/self/fd):
 * a FIFO or a device node planted where a file was expected is never opened.
 */
static int open_regular_at(int dirfd, const char *path, bool in_root)
{
	struct open_how how = {
		.flags = O_PATH | O_CLOEXEC,
		.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS,
	};
	_cleanup_close_ int pfd = -1;
	char buf[PATH_MAX];
	struct stat st;
	int fd;

	if (in_root) {
		pfd = syscall(SYS_openat2, dirfd, path, &how, sizeof(how));
		if (pfd < 0 && errno == ENOSYS) {
			/* before 5.6: the last component at least is no symlink */
			if (snprintf(buf, sizeof(buf), "%s%s", path[0] == '/' ? "." : "./", path) >=
			    (int)sizeof(buf))
				return -ENAMETOOLONG;
			pfd = openat(dirfd, buf, how.flags | O_NOFOLLOW);
		}
	} else {
		pfd = openat(dirfd, path, how.flags);
	}
	if (pfd < 0)
		return negative_errno();
	if (fstat(pfd, &st) < 0)
		return negative_errno();
	if (!S_ISREG(st.st_mode))
		return -EINVAL;
	snprintf(buf, sizeof(buf), "/proc/self/fd/%d", pfd);
	fd = open(buf, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	return fd < 0 ? negative_errno() : fd;
}

/* ---- ELF files ---- */

struct elf_sym {
	uint64_t addr, size;
	uint32_t name;
};

struct load_seg {
	uint64_t offset, vaddr, filesz;
	bool exec;
};

struct file_key;

struct elf_file {
	unsigned refs;
	int err; /* < 0: not read (not ELF, unreadable), no symbols */
	char build_id[2 * BUILD_ID_MAX + 1];
	struct elf_sym *syms;
	uint64_t *max_end; /* max_end[i]: the furthest end of syms[0..i] */
	size_t n_syms;
	char *names;
	size_t names_len;
	struct load_seg *segs;
	size_t n_segs;
	struct file_key **keys; /* the cache keys that lead here */
	size_t n_keys;
};

struct file_key {
	struct file_key *next;
	struct elf_file *file;
	char key[];
};

struct file_cache {
	struct file_key **buckets;
	size_t n_buckets, n_keys, n_files;
};

static struct file_key **cache_slot(struct file_cache *c, const char *key)
{
	uint64_t h = fnv1a(FNV_OFFSET, key, strlen(key));

	return &c->buckets[h & (c->n_buckets - 1)];
}

static struct elf_file *cache_get(struct file_cache *c, const char *key)
{
	struct file_key *k;

	if (!c->n_buckets)
		return NULL;
	for (k = *cache_slot(c, key); k; k = k->next)
		if (!strcmp(k->key, key))
			return k->file;
	return NULL;
}

static int cache_grow(struct file_cache *c)
{
	size_t n = c->n_buckets ? c->n_buckets * 2 : 256;
	struct file_key **old = c->buckets, **b;
	size_t old_n = c->n_buckets;

	b = calloc(n, sizeof(*b));
	if (!b)
		return -ENOMEM;
	c->buckets = b;
	c->n_buckets = n;
	for (size_t i = 0; i < old_n; i++) {
		struct file_key *k = old[i], *next;

		for (; k; k = next) {
			struct file_key **slot = cache_slot(c, k->key);

			next = k->next;
			k->next = *slot;
			*slot = k;
		}
	}
	free(old);
	return 0;
}

/* Makes key lead to f. */
static int cache_put(struct file_cache *c, const char *key, struct elf_file *f)
{
	size_t len = strlen(key);
	struct file_key **keys, **slot;
	_cleanup_free_ struct file_key *k = NULL;
	int r;

	if (c->n_keys >= c->n_buckets) {
		r = cache_grow(c);
		if (r < 0)
			return r;
	}
	k = malloc(sizeof(*k) + len + 1);
	if (!k)
		return -ENOMEM;
	keys = realloc(f->keys, (f->n_keys + 1) * sizeof(*keys));
	if (!keys)
		return -ENOMEM;
	f->keys = keys;
	memcpy(k->key, key, len + 1);
	k->file = f;
	slot = cache_slot(c, key);
	k->next = *slot;
	*slot = k;
	f->keys[f->n_keys++] = k;
	c->n_keys++;
	TAKE_PTR(k);
	return 0;
}

static void cache_remove_key(struct file_cache *c, struct file_key *k)
{
	struct file_key **p;

	for (p = cache_slot(c, k->key); *p; p = &(*p)->next) {
		if (*p == k) {
			*p = k->next;
			c->n_keys--;
			break;
		}
	}
	free(k);
}

static struct elf_file *elf_file_ref(struct elf_file *f)
{
	if (f)
		f->refs++;
	return f;
}

static void elf_file_unref(struct file_cache *c, struct elf_file *f)
{
	if (!f || --f->refs)
		return;
	for (size_t i = 0; i < f->n_keys; i++)
		cache_remove_key(c, f->keys[i]);
	if (f->n_keys)
		c->n_files--;
	free(f->keys);
	free(f->syms);
	free(f->max_end);
	free(f->names);
	free(f->segs);
	free(f);
}

static size_t elf_file_bytes(const struct elf_file *f)
{
	return sizeof(*f) + f->n_syms * (sizeof(*f->syms) + sizeof(*f->max_end)) + f->names_len +
	       f->n_segs * sizeof(*f->segs);
}

/* The symbol covering vaddr: the innermost of those that enclose it. */
static const struct elf_sym *elf_file_find(const struct elf_file *f, uint64_t vaddr)
{
	size_t lo = 0, hi = f->n_syms;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (f->syms[mid].addr <= vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* syms[lo - 1] is the last to start at or before vaddr; walk back while one may enclose it */
	for (size_t i = lo, steps = 0; i > 0 && steps < SYM_SCAN_MAX; i--, steps++) {
		const struct elf_sym *sym = &f->syms[i - 1];

		if (f->max_end[i - 1] <= vaddr)
			break;
		if (vaddr - sym->addr < sym->size)
			return sym;
	}
	return NULL;
}

/* A file offset (mapping offset + distance into the mapping) to the ELF's virtual address. */
static bool elf_file_vaddr(const struct elf_file *f, uint64_t file_off, uint64_t *ret)
{
	const struct load_seg *best = NULL;

	for (size_t i = 0; i < f->n_segs; i++) {
		const struct load_seg *g = &f->segs[i];

		if (file_off - g->offset < g->filesz && (!best || (g->exec && !best->exec)))
			best = g;
	}
	if (!best)
		return false;
	*ret = file_off - best->offset + best->vaddr;
	return true;
}

static void hex_encode(const unsigned char *p, size_t n, char *ret)
{
	static const char digits[] = "0123456789abcdef";

	for (size_t i = 0; i < n; i++) {
		ret[2 * i] = digits[p[i] >> 4];
		ret[2 * i + 1] = digits[p[i] & 15];
	}
	ret[2 * n] = 0;
}

/* NT_GNU_BUILD_ID in one note blob; true when found. */
static bool build_id_in_notes(Elf_Data *data, char ret[2 * BUILD_ID_MAX + 1])
{
	size_t off = 0, next, name_off, desc_off;
	GElf_Nhdr nh;

	while (data && off < data->d_size &&
	       (next = gelf_getnote(data, off, &nh, &name_off, &desc_off)) > 0) {
		const char *name = (const char *)data->d_buf + name_off;

		if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == sizeof(ELF_NOTE_GNU) &&
		    !memcmp(name, ELF_NOTE_GNU, sizeof(ELF_NOTE_GNU)) && nh.n_descsz > 0 &&
		    nh.n_descsz <= BUILD_ID_MAX) {
			hex_encode((const unsigned char *)data->d_buf + desc_off, nh.n_descsz, ret);
			return true;
		}
		off = next;
	}
	return false;
}

/* The build-id as hex, "" when the file has none: note sections, else PT_NOTE segments. */
static void elf_build_id(Elf *e, char ret[2 * BUILD_ID_MAX + 1])
{
	Elf_Scn *scn = NULL;
	size_t n = 0;

	ret[0] = 0;
	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;

		if (gelf_getshdr(scn, &sh) && sh.sh_type == SHT_NOTE &&
		    build_id_in_notes(elf_getdata(scn, NULL), ret))
			return;
	}
	if (elf_getphdrnum(e, &n) < 0)
		return;
	for (size_t i = 0; i < n; i++) {
		GElf_Phdr ph;

		if (gelf_getphdr(e, i, &ph) && ph.p_type == PT_NOTE &&
		    build_id_in_notes(elf_getdata_rawchunk(e, ph.p_offset, ph.p_filesz, ELF_T_NHDR), ret))
			return;
	}
}

static int elf_read_segments(Elf *e, struct elf_file *f)
{
	size_t n = 0;

	if (elf_getphdrnum(e, &n) < 0)
		return -EBADMSG;
	if (n > 4096)
		return -EBADMSG;
	f->segs = calloc(MAX(n, (size_t)1), sizeof(*f->segs));
	if (!f->segs)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(e, i, &ph) || ph.p_type != PT_LOAD)
			continue;
		f->segs[f->n_segs++] = (struct load_seg){
			.offset = ph.p_offset,
			.vaddr = ph.p_vaddr,
			.filesz = ph.p_filesz,
			.exec = ph.p_flags & PF_X,
		};
	}
	return f->n_segs ? 0 : -ENOEXEC;
}

/* The first section of the given type that has contents. */
static Elf_Scn *elf_find_section(Elf *e, uint32_t type, GElf_Shdr *ret)
{
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(e, scn)))
		if (gelf_getshdr(scn, ret) && ret->sh_type == type && ret->sh_size > 0)
			return scn;
	return NULL;
}

static Elf_Scn *elf_find_section_named(Elf *e, const char *name, GElf_Shdr *ret)
{
	Elf_Scn *scn = NULL;
	size_t shstrndx;

	if (elf_getshdrstrndx(e, &shstrndx) < 0)
		return NULL;
	while ((scn = elf_nextscn(e, scn))) {
		const char *n;

		if (!gelf_getshdr(scn, ret))
			continue;
		n = elf_strptr(e, shstrndx, ret->sh_name);
		if (n && !strcmp(n, name))
			return scn;
	}
	return NULL;
}

struct raw_sym {
	uint64_t addr, size, end_limit;
	uint32_t name;
	uint8_t rank; /* lower is preferred among symbols at one address */
};

static int cmp_raw_sym(const void *a, const void *b)
{
	const struct raw_sym *x = a, *y = b;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	if (x->rank != y->rank)
		return x->rank < y->rank ? -1 : 1;
	return x->name < y->name ? -1 : x->name > y->name;
}

static bool section_is_exec(Elf *e, size_t shndx, uint64_t *ret_end)
{
	Elf_Scn *scn = elf_getscn(e, shndx);
	GElf_Shdr sh;

	if (!scn || !gelf_getshdr(scn, &sh))
		return false;
	*ret_end = sh.sh_addr + sh.sh_size;
	return sh.sh_flags & SHF_EXECINSTR;
}

/* Code symbols of one symbol table into f: sorted, one per address, zero sizes filled in. */
static int elf_load_symbols(Elf *e, Elf_Scn *scn, const GElf_Shdr *sh, struct elf_file *f)
{
	_cleanup_free_ struct raw_sym *raw = NULL;
	struct strbuf names = {};
	Elf_Data *data = elf_getdata(scn, NULL);
	size_t entsize = gelf_fsize(e, ELF_T_SYM, 1, EV_CURRENT);
	size_t count, n = 0, out = 0;
	int r = 0;

	if (!data || !entsize)
		return -EBADMSG;
	count = MIN(data->d_size / entsize, (size_t)ELF_SYMS_MAX);
	raw = malloc(MAX(count, (size_t)1) * sizeof(*raw));
	if (!raw)
		return -ENOMEM;
	for (size_t i = 0; i < count; i++) {
		uint64_t end_limit = UINT64_MAX;
		const char *name;
		bool exec;
		GElf_Sym sym;
		int type, bind;
		int64_t off;

		if (!gelf_getsym(data, i, &sym))
			continue;
		type = GELF_ST_TYPE(sym.st_info);
		bind = GELF_ST_BIND(sym.st_info);
		if (sym.st_shndx == SHN_UNDEF || sym.st_shndx >= SHN_LORESERVE)
			continue;
		if (type != STT_FUNC && type != STT_GNU_IFUNC && type != STT_NOTYPE)
			continue;
		exec = section_is_exec(e, sym.st_shndx, &end_limit);
		if (type == STT_NOTYPE && !exec)
			continue;
		name = elf_strptr(e, sh->sh_link, sym.st_name);
		/* "$x"/"$d" are aarch64 mapping symbols, not functions */
		if (!name || !*name || (type == STT_NOTYPE && name[0] == '$'))
			continue;
		off = strbuf_add(&names, name, strnlen(name, 4096), ELF_NAMES_MAX);
		if (off == -E2BIG)
			break;
		if (off < 0) {
			r = off;
			goto fail;
		}
		raw[n++] = (struct raw_sym){
			.addr = sym.st_value,
			.size = sym.st_size,
			.end_limit = end_limit,
			.name = off,
			.rank = (sym.st_size ? 0 : 4) + (bind == STB_GLOBAL ? 0 :
							 bind == STB_WEAK   ? 1 :
									      2),
		};
	}
	qsort(raw, n, sizeof(*raw), cmp_raw_sym);
	f->syms = malloc(MAX(n, (size_t)1) * sizeof(*f->syms));
	f->max_end = malloc(MAX(n, (size_t)1) * sizeof(*f->max_end));
	if (!f->syms || !f->max_end) {
		r = -ENOMEM;
		goto fail;
	}
	for (size_t i = 0; i < n; i++) {
		const struct raw_sym *rs = &raw[i];
		uint64_t size = rs->size;

		if (out && f->syms[out - 1].addr == rs->addr)
			continue; /* an alias: the preferred name came first */
		if (!size) {
			/* assembly without .size: up to the next symbol, within its section */
			size_t j = i + 1;

			while (j < n && raw[j].addr == rs->addr)
				j++;
			uint64_t end = rs->end_limit;

			if (j < n)
				end = MIN(end, raw[j].addr);
			size = end > rs->addr && end != UINT64_MAX ? end - rs->addr : 0;
		}
		f->syms[out] = (struct elf_sym){ .addr = rs->addr, .size = size, .name = rs->name };
		f->max_end[out] = MAX(out ? f->max_end[out - 1] : 0, rs->addr + size);
		out++;
	}
	f->n_syms = out;
	f->names_len = names.len;
	f->names = strbuf_take(&names);
	return 0;
fail:
	free(names.p);
	return r;
}

/* ---- the process's view ---- */

struct mapping {
	uint64_t start, limit, offset;
	uint64_t dev, ino;
	char *path; /* as mapped; NULL: anonymous */
	struct elf_file *file; /* NULL: no symbols to be had */
	bool anon; /* anonymous or a named anonymous region: JIT code may live here */
};

struct proc {
	uint32_t pid, nspid;
	uint64_t start_time;
	struct mapping *maps; /* current, sorted by start */
	size_t n_maps;
	struct mapping *old; /* retired, oldest first */
	size_t n_old;
	struct perfmap *jit; /* versions, oldest first */
	size_t n_jit;
	size_t jit_bytes;
	char *perfmap_path; /* "/tmp/perf-NSPID.map", the module of JIT frames */
	struct stat jit_st; /* of the version parsed last */
	uint64_t jit_checked_ns;
	bool alive;
};

struct ksym {
	uint64_t addr, end;
	uint32_t name, module;
};

struct kernel {
	char *kallsyms_path, *modules_path;
	struct ksym *syms;
	size_t n;
	char *names;
	size_t names_len;
	uint64_t modules_hash;
	uint64_t checked_ns;
	uint64_t loads;
	int err; /* of the last load */
	bool loaded, hidden;
};

struct symbolizer {
	struct file_cache cache;
	struct proc **procs; /* sorted by pid */
	size_t n_procs;
	struct proc *last;
	struct kernel kernel;
	struct elf_file *vdso; /* the daemon's own: the kernel maps the same image everywhere */
	bool vdso_tried;
	char *debug_dir;
	uint64_t resolved, unresolved, kernel_unresolved, elf_failed, perfmap_rejected;
};

static void mapping_done(struct symbolizer *s, struct mapping *m)
{
	elf_file_unref(&s->cache, m->file);
	free(m->path);
}

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

static struct proc *proc_find(struct symbolizer *s, uint32_t pid)
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

/* ---- constructors ---- */

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
	s->debug_dir = strdup("/usr/lib/debug");
	s->kernel.kallsyms_path = strdup("/proc/kallsyms");
	s->kernel.modules_path = strdup("/proc/modules");
	if (!s->debug_dir || !s->kernel.kallsyms_path || !s->kernel.modules_path) {
		symbolizer_free(s);
		errno = ENOMEM;
		return NULL;
	}
	return s;
}

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

void symbolizer_free(struct symbolizer *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->n_procs; i++)
		proc_free(s, s->procs[i]);
	free(s->procs);
	elf_file_unref(&s->cache, s->vdso);
	free(s->cache.buckets);
	kernel_clear(&s->kernel);
	free(s->kernel.kallsyms_path);
	free(s->kernel.modules_path);
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
	char *a = strdup(kallsyms), *b = strdup(modules);

	if (!a || !b) {
		free(a);
		free(b);
		return -ENOMEM;
	}
	free(s->kernel.kallsyms_path);
	free(s->kernel.modules_path);
	s->kernel.kallsyms_path = a;
	s->kernel.modules_path = b;
	kernel_clear(&s->kernel);
	s->kernel.err = 0;
	return 0;
}

/* ---- kernel ---- */

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
	qsort(syms, n, sizeof(*syms), cmp_ksym);
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

static int resolve_kernel(struct symbolizer *s, uint64_t addr, struct sym_result *ret)
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

/* ---- reading ELF files for a mapping ---- */

/* Copies the daemon's own vDSO and reads its symbols: the kernel maps one image into every process. */
static struct elf_file *vdso_load(void)
{
	unsigned long base = getauxval(AT_SYSINFO_EHDR);
	_cleanup_free_ char *copy = NULL;
	_cleanup_fclose_ FILE *maps = NULL;
	struct elf_file *f = NULL;
	unsigned long long start, end;
	char line[512];
	size_t size = 0;
	Elf_Scn *scn;
	GElf_Shdr sh;
	Elf *e;

	if (!base)
		return NULL;
	maps = fopen("/proc/self/maps", "re");
	if (!maps)
		return NULL;
	while (fgets(line, sizeof(line), maps))
		if (strstr(line, "[vdso]") && sscanf(line, "%llx-%llx", &start, &end) == 2 && start == base)
			size = end - start;
	if (!size)
		return NULL;
	copy = malloc(size);
	if (!copy)
		return NULL;
	memcpy(copy, (const void *)base, size);
	e = elf_memory(copy, size);
	if (!e)
		return NULL;
	f = calloc(1, sizeof(*f));
	if (!f)
		goto out;
	f->refs = 1;
	elf_build_id(e, f->build_id);
	f->err = elf_read_segments(e, f);
	if (!f->err) {
		scn = elf_find_section(e, SHT_SYMTAB, &sh);
		if (!scn)
			scn = elf_find_section(e, SHT_DYNSYM, &sh);
		f->err = scn ? elf_load_symbols(e, scn, &sh, f) : -ENOENT;
	}
out:
	elf_end(e);
	return f;
}

/* The CRC-32 (zlib's, the one .gnu_debuglink holds) of a whole file. */
static int file_crc32(int fd, uint32_t *ret)
{
	unsigned char buf[65536];
	uLong crc = crc32(0, Z_NULL, 0);
	off_t off = 0;

	for (;;) {
		ssize_t n = pread(fd, buf, sizeof(buf), off);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return negative_errno();
		}
		if (n == 0)
			break;
		crc = crc32(crc, buf, n);
		off += n;
	}
	*ret = crc;
	return 0;
}

struct debug_search {
	struct symbolizer *s;
	int root_fd; /* /proc/PID/root, or -1 */
	bool same_root; /* the process sees the daemon's root: search once */
	const char *path; /* of the binary, as mapped */
	struct stat st; /* of the binary */
};

/* Opens path in the process's root, then (if that is another) in the daemon's. */
static int debug_open(const struct debug_search *ds, const char *path)
{
	int fd = -ENOENT;

	if (ds->root_fd >= 0)
		fd = open_regular_at(ds->root_fd, path, true);
	if (fd < 0 && (ds->root_fd < 0 || !ds->same_root))
		fd = open_regular_at(AT_FDCWD, path, false);
	return fd;
}

/* A debug file's ELF handle when it has a symbol table, and (if asked) the build-id matches. */
static Elf *debug_check(int fd, const char *want_build_id)
{
	char id[2 * BUILD_ID_MAX + 1];
	GElf_Shdr sh;
	Elf *e;

	e = elf_begin(fd, ELF_C_READ, NULL);
	if (!e)
		return NULL;
	if (elf_kind(e) != ELF_K_ELF || !elf_find_section(e, SHT_SYMTAB, &sh))
		goto no;
	if (want_build_id) {
		elf_build_id(e, id);
		if (strcmp(id, want_build_id))
			goto no;
	}
	return e;
no:
	elf_end(e);
	return NULL;
}

/* /usr/lib/debug/.build-id/xx/rest.debug */
static Elf *debug_by_build_id(const struct debug_search *ds, const char *build_id, int *ret_fd)
{
	char path[PATH_MAX];
	int fd;
	Elf *e;

	if (strlen(build_id) < 4)
		return NULL;
	if (snprintf(path, sizeof(path), "%s/.build-id/%.2s/%s.debug", ds->s->debug_dir, build_id,
		     build_id + 2) >= (int)sizeof(path))
		return NULL;
	fd = debug_open(ds, path);
	if (fd < 0)
		return NULL;
	e = debug_check(fd, build_id);
	if (!e) {
		close(fd);
		return NULL;
	}
	*ret_fd = fd;
	return e;
}

/* .gnu_debuglink: "name\0", padding to 4, CRC-32 in the file's byte order. */
static Elf *debug_by_link(const struct debug_search *ds, Elf *bin, int *ret_fd)
{
	char dir[PATH_MAX], path[PATH_MAX], name[256];
	const unsigned char *crc_p;
	const char *slash;
	uint32_t want, got;
	Elf_Data *data;
	Elf_Scn *scn;
	GElf_Ehdr eh;
	GElf_Shdr sh;
	size_t name_len, crc_off;

	scn = elf_find_section_named(bin, ".gnu_debuglink", &sh);
	if (!scn || !gelf_getehdr(bin, &eh))
		return NULL;
	data = elf_getdata(scn, NULL);
	if (!data || !data->d_buf)
		return NULL;
	name_len = strnlen(data->d_buf, MIN(data->d_size, sizeof(name)));
	if (!name_len || name_len >= sizeof(name) || memchr(data->d_buf, '/', name_len))
		return NULL;
	memcpy(name, data->d_buf, name_len);
	name[name_len] = 0;
	crc_off = (name_len + 1 + 3) & ~(size_t)3;
	if (crc_off + 4 > data->d_size)
		return NULL;
	crc_p = (const unsigned char *)data->d_buf + crc_off;
	if (eh.e_ident[EI_DATA] == ELFDATA2MSB)
		want = (uint32_t)crc_p[0] << 24 | crc_p[1] << 16 | crc_p[2] << 8 | crc_p[3];
	else
		want = (uint32_t)crc_p[3] << 24 | crc_p[2] << 16 | crc_p[1] << 8 | crc_p[0];

	slash = strrchr(ds->path, '/');
	if (!slash || slash - ds->path >= (ptrdiff_t)sizeof(dir))
		return NULL;
	memcpy(dir, ds->path, slash - ds->path);
	dir[slash - ds->path] = 0;

	for (int i = 0; i < 3; i++) {
		struct stat st;
		int fd, n;
		Elf *e;

		if (i == 0)
			n = snprintf(path, sizeof(path), "%s/%s", dir, name);
		else if (i == 1)
			n = snprintf(path, sizeof(path), "%s/.debug/%s", dir, name);
		else
			n = snprintf(path, sizeof(path), "%s%s/%s", ds->s->debug_dir, dir, name);
		if (n >= (int)sizeof(path))
			continue;
		fd = debug_open(ds, path);
		if (fd < 0)
			continue;
		/* the link may name the binary itself */
		if (fstat(fd, &st) < 0 || (st.st_dev == ds->st.st_dev && st.st_ino == ds->st.st_ino) ||
		    file_crc32(fd, &got) < 0 || got != want) {
			close(fd);
			continue;
		}
		e = debug_check(fd, NULL);
		if (e) {
			*ret_fd = fd;
			return e;
		}
		close(fd);
	}
	return NULL;
}

/* Symbols of the binary: its .symtab, else separate debug info's, else its .dynsym. */
static int elf_load(const struct debug_search *ds, Elf *bin, struct elf_file *f)
{
	Elf *dbg = NULL;
	int dbg_fd = -1, r;
	Elf_Scn *scn;
	GElf_Shdr sh;

	r = elf_read_segments(bin, f);
	if (r < 0)
		return r;
	scn = elf_find_section(bin, SHT_SYMTAB, &sh);
	if (scn)
		return elf_load_symbols(bin, scn, &sh, f);
	if (f->build_id[0])
		dbg = debug_by_build_id(ds, f->build_id, &dbg_fd);
	if (!dbg)
		dbg = debug_by_link(ds, bin, &dbg_fd);
	if (dbg) {
		scn = elf_find_section(dbg, SHT_SYMTAB, &sh);
		r = scn ? elf_load_symbols(dbg, scn, &sh, f) : -ENOENT;
		elf_end(dbg);
		close(dbg_fd);
		if (r == 0)
			return 0;
		if (r == -ENOMEM)
			return r;
	}
	scn = elf_find_section(bin, SHT_DYNSYM, &sh);
	if (scn)
		return elf_load_symbols(bin, scn, &sh, f);
	return -ENOENT; /* stripped: the mapping still gives module+offset */
}

static int file_new_and_cache(struct symbolizer *s, const char *const *keys, size_t n_keys,
			      struct elf_file *f)
{
	int r = 0;

	for (size_t i = 0; i < n_keys && r == 0; i++)
		if (keys[i])
			r = cache_put(&s->cache, keys[i], f);
	if (f->n_keys)
		s->cache.n_files++;
	return r;
}

/*
 * The symbol table of the file behind fd, from the cache or read now. A file that is not ELF,
 * or has no symbols at all, is cached too (err set), so it is not read again.
 */
static int elf_file_get(struct symbolizer *s, const struct debug_search *ds, int fd, struct elf_file **ret)
{
	char ino_key[128], id_key[2 * BUILD_ID_MAX + 3];
	const char *keys[2] = { ino_key, NULL };
	struct elf_file *f;
	Elf *e;
	int r;

	snprintf(ino_key, sizeof(ino_key), "i:%llx:%llu:%lld:%lld.%09ld", (unsigned long long)ds->st.st_dev,
		 (unsigned long long)ds->st.st_ino, (long long)ds->st.st_size,
		 (long long)ds->st.st_mtim.tv_sec, ds->st.st_mtim.tv_nsec);
	f = cache_get(&s->cache, ino_key);
	if (f) {
		*ret = elf_file_ref(f);
		return 0;
	}
	f = calloc(1, sizeof(*f));
	if (!f)
		return -ENOMEM;
	f->refs = 1;
	e = elf_begin(fd, ELF_C_READ, NULL);
	if (!e || elf_kind(e) != ELF_K_ELF) {
		f->err = -ENOEXEC;
	} else {
		elf_build_id(e, f->build_id);
		if (f->build_id[0]) {
			struct elf_file *shared;

			snprintf(id_key, sizeof(id_key), "b:%s", f->build_id);
			shared = cache_get(&s->cache, id_key);
			if (shared) {
				/* the same build under another inode: another container's copy */
				elf_end(e);
				free(f);
				r = cache_put(&s->cache, ino_key, shared);
				if (r < 0)
					return r;
				*ret = elf_file_ref(shared);
				return 0;
			}
			keys[1] = id_key;
		}
		f->err = elf_load(ds, e, f);
	}
	if (e)
		elf_end(e);
	if (f->err == -ENOMEM) {
		elf_file_unref(&s->cache, f);
		return -ENOMEM;
	}
	if (f->err)
		s->elf_failed++;
	r = file_new_and_cache(s, keys, 2, f);
	if (r < 0) {
		elf_file_unref(&s->cache, f);
		return r;
	}
	*ret = f;
	return 0;
}

/* ---- noting a process ---- */

static int read_nspid(uint32_t pid, uint32_t *ret)
{
	_cleanup_fclose_ FILE *f = NULL;
	char path[64], line[512];

	snprintf(path, sizeof(path), "/proc/%u/status", pid);
	f = fopen(path, "re");
	if (!f)
		return negative_errno();
	while (fgets(line, sizeof(line), f)) {
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

/* Reads the perf map again when it changed since the version parsed last. */
static int proc_read_perfmap(struct symbolizer *s, struct proc *p, int root_fd)
{
	_cleanup_close_ int fd = -1;
	_cleanup_fclose_ FILE *f = NULL;
	struct perfmap m, *v;
	struct stat st;
	int r;

	if (!p->perfmap_path)
		return 0;
	fd = open_regular_at(root_fd, p->perfmap_path, true);
	if (fd < 0)
		return fd == -ENOENT ? 0 : fd;
	if (fstat(fd, &st) < 0)
		return negative_errno();
	if (p->n_jit && st.st_dev == p->jit_st.st_dev && st.st_ino == p->jit_st.st_ino &&
	    st.st_size == p->jit_st.st_size && st.st_mtim.tv_sec == p->jit_st.st_mtim.tv_sec &&
	    st.st_mtim.tv_nsec == p->jit_st.st_mtim.tv_nsec)
		return 0;
	f = fdopen(fd, "re");
	if (!f)
		return negative_errno();
	TAKE_FD(fd);
	r = perfmap_parse(f, &m);
	if (r < 0)
		return r;
	s->perfmap_rejected += m.rejected;
	v = realloc(p->jit, (p->n_jit + 1) * sizeof(*v));
	if (!v) {
		perfmap_done(&m);
		return -ENOMEM;
	}
	p->jit = v;
	p->jit[p->n_jit++] = m;
	p->jit_bytes += perfmap_bytes(&m);
	p->jit_st = st;
	/* older versions answer for code the JIT has since dropped, while memory allows */
	while (p->n_jit > 1 && p->jit_bytes > PROC_PERFMAP_BYTES_MAX) {
		p->jit_bytes -= perfmap_bytes(&p->jit[0]);
		perfmap_done(&p->jit[0]);
		memmove(p->jit, p->jit + 1, (p->n_jit - 1) * sizeof(*p->jit));
		p->n_jit--;
	}
	return 0;
}

static bool mapping_same(const struct mapping *a, const struct mapping *b)
{
	return a->start == b->start && a->limit == b->limit && a->offset == b->offset && a->dev == b->dev &&
	       a->ino == b->ino &&
	       ((!a->path && !b->path) || (a->path && b->path && !strcmp(a->path, b->path)));
}

/* Finds the file behind a new file-backed mapping and its symbols. */
static int mapping_attach_file(struct symbolizer *s, uint32_t pid, int root_fd, bool same_root,
			       struct mapping *m)
{
	struct debug_search ds = { .s = s, .root_fd = root_fd, .same_root = same_root, .path = m->path };
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

/* One line of maps into m when it is executable; 1: taken, 0: skipped. */
static int parse_maps_line(char *line, struct mapping *ret)
{
	unsigned long long start, limit, offset, ino;
	unsigned int major, minor;
	char perms[8], *path;
	int n = 0;

	line[strcspn(line, "\n")] = 0;
	if (sscanf(line, "%llx-%llx %7s %llx %x:%x %llu %n", &start, &limit, perms, &offset, &major, &minor,
		   &ino, &n) < 7 ||
	    !n)
		return -EBADMSG;
	if (strlen(perms) < 3 || perms[2] != 'x' || limit <= start)
		return 0;
	path = line + n;
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

/* The executable mappings of /proc/PID/maps, sorted by start as the kernel lists them. */
static int read_maps(uint32_t pid, struct mapping **ret, size_t *ret_n)
{
	_cleanup_fclose_ FILE *f = NULL;
	_cleanup_free_ char *line = NULL;
	struct mapping *maps = NULL;
	size_t n = 0, cap = 0, linecap = 0;
	char path[64];
	int r = 0;

	snprintf(path, sizeof(path), "/proc/%u/maps", pid);
	f = fopen(path, "re");
	if (!f)
		return negative_errno();
	while (getline(&line, &linecap, f) > 0 && n < MAPPINGS_MAX) {
		struct mapping m;

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

static int proc_add(struct symbolizer *s, uint32_t pid, struct proc **ret)
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

/* Moves a mapping that went away to the history; the oldest drops out past RETIRED_MAX. */
static int proc_retire(struct symbolizer *s, struct proc *p, struct mapping *m)
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

static bool same_root_as_daemon(int root_fd)
{
	struct stat a, b;

	return fstat(root_fd, &a) == 0 && stat("/", &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino;
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

void symbolizer_forget_process(struct symbolizer *s, uint32_t pid)
{
	bool found;
	size_t i = proc_index(s, pid, &found);

	if (!found)
		return;
	if (s->last == s->procs[i])
		s->last = NULL;
	proc_free(s, s->procs[i]);
	memmove(s->procs + i, s->procs + i + 1, (s->n_procs - i - 1) * sizeof(*s->procs));
	s->n_procs--;
}

/* ---- resolving a user address ---- */

static const struct mapping *proc_find_mapping(const struct proc *p, uint64_t addr)
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

static const struct perfmap_entry *proc_find_jit(const struct proc *p, uint64_t addr,
						 const struct perfmap **ret_map)
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

/* JIT code appears without mmaps: on a miss, look at the perf map again (once a second, while the process lives). */
static void proc_recheck_perfmap(struct symbolizer *s, struct proc *p)
{
	uint64_t now = now_mono_ns();
	_cleanup_close_ int root_fd = -1;
	struct proc_info info;
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
	if (root_fd >= 0)
		(void)proc_read_perfmap(s, p, root_fd);
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
