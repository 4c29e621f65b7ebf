// SPDX-License-Identifier: GPL-2.0-only
/*
 * One ELF file: its code symbols (sorted, one per address, zero sizes filled in), its PT_LOAD
 * segments (to turn file offsets into addresses), its build-id, and which file holds its
 * DWARF. The symbols come from the first of: its .symtab, its separate debug file's (by
 * build-id or .gnu_debuglink, debuginfo.c), its MiniDebugInfo's merged with its .dynsym
 * (minidebug.c), its .dynsym. Files are read with libelf's ELF_C_READ (pread, not mmap: a
 * watched process truncating its own files must not SIGBUS the daemon).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <unistd.h>

#include "internal.h"

static uint64_t get_uint(const unsigned char *p, size_t n, bool msb)
{
	uint64_t v = 0;

	for (size_t i = 0; i < n; i++)
		v |= (uint64_t)p[msb ? n - 1 - i : i] << (8 * i);
	return v;
}

/* The number of sections, from the header (and section 0 past SHN_LORESERVE), before libelf
 * allocates a descriptor for each. */
static int elf_count_sections(int fd, uint64_t *ret)
{
	unsigned char h[64], sh[64];
	uint64_t shoff, shnum;
	bool is64, msb;
	ssize_t n;

	n = pread(fd, h, sizeof(h), 0);
	if (n < 0)
		return negative_errno();
	if (n < EI_NIDENT || memcmp(h, ELFMAG, SELFMAG) ||
	    (h[EI_CLASS] != ELFCLASS32 && h[EI_CLASS] != ELFCLASS64))
		return -ENOEXEC;
	is64 = h[EI_CLASS] == ELFCLASS64;
	msb = h[EI_DATA] == ELFDATA2MSB;
	if (n < (is64 ? 64 : 52))
		return -ENOEXEC;
	shoff = get_uint(h + (is64 ? 0x28 : 0x20), is64 ? 8 : 4, msb);
	shnum = get_uint(h + (is64 ? 0x3c : 0x30), 2, msb);
	if (!shnum && shoff) {
		n = pread(fd, sh, is64 ? 64 : 40, shoff);
		if (n < 0)
			return negative_errno();
		if (n < (is64 ? 64 : 40))
			return -ENOEXEC;
		shnum = get_uint(sh + (is64 ? 0x20 : 0x14), is64 ? 8 : 4, msb);
	}
	*ret = shnum;
	return 0;
}

int elf_open(int fd, const struct stat *st, Elf **ret)
{
	uint64_t sections;
	Elf *e;
	int r;

	if ((uint64_t)st->st_size > ELF_FILE_BYTES_MAX)
		return -EFBIG;
	r = elf_count_sections(fd, &sections);
	if (r < 0)
		return r;
	if (sections > ELF_SECTIONS_MAX)
		return -E2BIG;
	e = elf_begin(fd, ELF_C_READ, NULL);
	if (!e)
		return -ENOEXEC;
	if (elf_kind(e) != ELF_K_ELF) {
		elf_end(e);
		return -ENOEXEC;
	}
	*ret = e;
	return 0;
}

size_t elf_file_bytes(const struct elf_file *f)
{
	return sizeof(*f) + f->n_syms * (sizeof(*f->syms) + sizeof(*f->max_end)) + f->names_len +
	       f->n_segs * sizeof(*f->segs) + cfi_bytes(f->cfi) + dwarf_file_preopened_bytes(f) + lines_bytes(f);
}

const struct elf_sym *elf_file_find(const struct elf_file *f, uint64_t vaddr)
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

bool elf_file_vaddr(const struct elf_file *f, uint64_t file_off, uint64_t *ret)
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

void elf_build_id(Elf *e, char ret[2 * BUILD_ID_MAX + 1])
{
	Elf_Scn *scn = NULL;
	size_t n = 0;

	ret[0] = 0;
	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;

		if (gelf_getshdr(scn, &sh) && sh.sh_type == SHT_NOTE && sh.sh_size <= ELF_SMALL_MAX &&
		    build_id_in_notes(elf_getdata(scn, NULL), ret))
			return;
	}
	if (elf_getphdrnum(e, &n) < 0)
		return;
	for (size_t i = 0; i < n; i++) {
		GElf_Phdr ph;

		if (gelf_getphdr(e, i, &ph) && ph.p_type == PT_NOTE && ph.p_filesz <= ELF_SMALL_MAX &&
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

Elf_Scn *elf_find_section(Elf *e, uint32_t type, GElf_Shdr *ret)
{
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(e, scn)))
		if (gelf_getshdr(scn, ret) && ret->sh_type == type && ret->sh_size > 0)
			return scn;
	return NULL;
}

Elf_Scn *elf_find_section_named(Elf *e, const char *name, GElf_Shdr *ret)
{
	Elf_Scn *scn = NULL, *strs;
	size_t shstrndx;
	GElf_Shdr sh;

	if (elf_getshdrstrndx(e, &shstrndx) < 0)
		return NULL;
	strs = elf_getscn(e, shstrndx);
	if (!strs || !gelf_getshdr(strs, &sh) || sh.sh_size > ELF_SMALL_MAX)
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

/* Code symbols gathered from one or more symbol tables, before they are sorted into a file. */
struct sym_collect {
	struct raw_sym *raw;
	size_t n, cap;
	struct strbuf names;
	bool full; /* ELF_SYMS_MAX or ELF_NAMES_MAX reached */
};

/* The code symbols of one symbol table (of e) into c. */
static int collect_symbols(Elf *e, Elf_Scn *scn, const GElf_Shdr *sh, struct sym_collect *c)
{
	size_t entsize = gelf_fsize(e, ELF_T_SYM, 1, EV_CURRENT);
	Elf_Scn *strs = elf_getscn(e, sh->sh_link);
	GElf_Shdr strs_sh;
	Elf_Data *data;
	size_t count;

	/* libelf reads a section whole: neither may be larger than what is kept of it */
	if (!entsize || !strs || !gelf_getshdr(strs, &strs_sh))
		return -EBADMSG;
	if (sh->sh_size / entsize > ELF_SYMS_MAX || strs_sh.sh_size > ELF_NAMES_MAX)
		return -E2BIG;
	data = elf_getdata(scn, NULL);
	if (!data)
		return -EBADMSG;
	count = MIN(data->d_size / entsize, (size_t)ELF_SYMS_MAX);
	if (c->n + count > c->cap) {
		size_t cap = MIN(c->n + count, (size_t)ELF_SYMS_MAX);
		struct raw_sym *raw;

		if (cap <= c->n) {
			c->full = true;
			return 0;
		}
		raw = reallocarray(c->raw, cap, sizeof(*raw));
		if (!raw)
			return -ENOMEM;
		c->raw = raw;
		c->cap = cap;
	}
	for (size_t i = 0; i < count && c->n < c->cap; i++) {
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
		off = strbuf_add(&c->names, name, strnlen(name, 4096), ELF_NAMES_MAX);
		if (off == -E2BIG) {
			c->full = true;
			break;
		}
		if (off < 0)
			return off;
		c->raw[c->n++] = (struct raw_sym){
			.addr = sym.st_value,
			.size = sym.st_size,
			.end_limit = end_limit,
			.name = off,
			.rank = (sym.st_size ? 0 : 4) + (bind == STB_GLOBAL ? 0 :
							 bind == STB_WEAK   ? 1 :
									      2),
		};
	}
	return 0;
}

static void sym_collect_done(struct sym_collect *c)
{
	free(c->raw);
	free(c->names.p);
	*c = (struct sym_collect){};
}

/* What c gathered into f: sorted, one per address, zero sizes filled in. */
static int finish_symbols(struct sym_collect *c, struct elf_file *f)
{
	struct raw_sym *raw = c->raw;
	size_t n = c->n, out = 0;

	qsort_safe(raw, n, sizeof(*raw), cmp_raw_sym);
	f->syms = malloc(MAX(n, (size_t)1) * sizeof(*f->syms));
	f->max_end = malloc(MAX(n, (size_t)1) * sizeof(*f->max_end));
	if (!f->syms || !f->max_end) {
		free(f->syms);
		free(f->max_end);
		f->syms = NULL;
		f->max_end = NULL;
		return -ENOMEM;
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
		/* a hostile st_size must not wrap the end past the address space */
		size = MIN(size, UINT64_MAX - rs->addr);
		f->syms[out] = (struct elf_sym){ .addr = rs->addr, .size = size, .name = rs->name };
		f->max_end[out] = MAX(out ? f->max_end[out - 1] : 0, rs->addr + size);
		out++;
	}
	f->n_syms = out;
	f->names_len = c->names.len;
	f->names = strbuf_take(&c->names);
	return 0;
}

/* Code symbols of one symbol table into f. */
static int elf_load_symbols(Elf *e, Elf_Scn *scn, const GElf_Shdr *sh, struct elf_file *f)
{
	struct sym_collect c = {};
	int r;

	r = collect_symbols(e, scn, sh, &c);
	if (r == 0)
		r = finish_symbols(&c, f);
	sym_collect_done(&c);
	return r;
}

int elf_load_memory(void *mem, size_t len, Elf *bin, struct elf_file *f)
{
	struct sym_collect c = {};
	Elf_Scn *scn = NULL;
	size_t shnum;
	GElf_Shdr sh;
	Elf *e;
	int r;

	e = elf_memory(mem, len);
	if (!e)
		return -EBADMSG;
	if (elf_kind(e) != ELF_K_ELF || elf_getshdrnum(e, &shnum) < 0)
		r = -EBADMSG;
	else if (shnum > ELF_SECTIONS_MAX)
		r = -E2BIG;
	else
		r = (scn = elf_find_section(e, SHT_SYMTAB, &sh)) ? collect_symbols(e, scn, &sh, &c) : -ENOENT;
	elf_end(e);
	if (r == 0 && bin && (scn = elf_find_section(bin, SHT_DYNSYM, &sh)))
		r = collect_symbols(bin, scn, &sh, &c);
	if (r == 0)
		r = finish_symbols(&c, f);
	sym_collect_done(&c);
	return r;
}

/* .dynsym and the MiniDebugInfo's .symtab (what .dynsym does not have) together. */
static int elf_load_minidebug(Elf *bin, struct elf_file *f)
{
	_cleanup_free_ void *mem = NULL;
	size_t len;
	int r;

	r = minidebug_read(bin, &mem, &len);
	if (r < 0)
		return r;
	return elf_load_memory(mem, len, bin, f);
}

struct elf_file *vdso_load(void)
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
	f = elf_file_new();
	if (!f)
		goto out;
	elf_build_id(e, f->build_id);
	f->err = elf_read_segments(e, f);
	if (!f->err) {
		scn = elf_find_section(e, SHT_SYMTAB, &sh);
		if (!scn)
			scn = elf_find_section(e, SHT_DYNSYM, &sh);
		f->err = scn ? elf_load_symbols(e, scn, &sh, f) : -ENOENT;
		f->cfi_err = elf_load_cfi(e, f);
	}
out:
	elf_end(e);
	return f;
}

int elf_load_cfi(Elf *e, struct elf_file *f)
{
	int r = cfi_read(e, &f->cfi);

	/* none, or not this machine's code: nothing that could have been read */
	return r == -ENOENT || r == -EPROTONOSUPPORT ? 0 : r;
}

bool elf_has_dwarf(Elf *e)
{
	GElf_Shdr sh;
	Elf_Scn *scn = elf_find_section_named(e, ".debug_info", &sh);

	if (!scn)
		scn = elf_find_section_named(e, ".zdebug_info", &sh);
	return scn && sh.sh_type != SHT_NOBITS && sh.sh_size > 0;
}

int elf_load(const struct debug_search *ds, int bin_fd, Elf *bin, struct elf_file *f)
{
	bool bin_dwarf = elf_has_dwarf(bin);
	Elf_Scn *scn, *dscn;
	Elf *dbg = NULL;
	int dbg_fd = -1, r;
	GElf_Shdr sh, dsh;

	r = elf_read_segments(bin, f);
	if (r < 0)
		return r;
	if (bin_dwarf)
		f->dwarf_fd = dwarf_keep_fd(bin_fd);
	scn = elf_find_section(bin, SHT_SYMTAB, &sh);
	/* a debug file for the symbols, or for the DWARF the binary was stripped of */
	if (!scn || !bin_dwarf)
		dbg = debug_find(ds, bin, f->build_id, &dbg_fd);
	if (dbg) {
		if (!bin_dwarf && elf_has_dwarf(dbg))
			f->dwarf_fd = dwarf_keep_fd(dbg_fd);
		r = -ENOENT;
		if (!scn && (dscn = elf_find_section(dbg, SHT_SYMTAB, &dsh)))
			r = elf_load_symbols(dbg, dscn, &dsh, f);
		elf_end(dbg);
		close(dbg_fd);
		if (r == 0 || r == -ENOMEM)
			return r;
	}
	if (scn)
		return elf_load_symbols(bin, scn, &sh, f);
	/* no symbol table: MiniDebugInfo with .dynsym, else .dynsym alone */
	r = elf_load_minidebug(bin, f);
	if (r == 0 || r == -ENOMEM)
		return r;
	if (r != -ENOENT)
		f->minidebug_err = r;
	f->no_symtab = true;
	scn = elf_find_section(bin, SHT_DYNSYM, &sh);
	if (scn)
		return elf_load_symbols(bin, scn, &sh, f);
	return -ENOENT; /* stripped: the mapping still gives module+offset */
}
