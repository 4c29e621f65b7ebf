// SPDX-License-Identifier: GPL-2.0-only
/*
 * What discovery needs from one ELF file: defined .dynsym symbols by name (_PyRuntime is
 * there even in a stripped build: the interpreter exports it), the load segments (to turn a
 * symbol's address into the process's), and the version strings in .rodata. libelf reads the
 * file with pread (ELF_C_READ), never mmap: a process truncating its own file cannot SIGBUS
 * us. Section and segment counts are checked from the header before libelf sizes anything by
 * them; a 64-bit ELF only (the layouts are LP64).
 */
#include <ctype.h>
#include <errno.h>
#include <gelf.h>
#include <libelf.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"
#include "macro.h"

#define SECTIONS_MAX 65536
#define SEGMENTS_MAX 1024

/* The ELF header's counts, before libelf allocates a descriptor per section. */
static int check_header(int fd)
{
	Elf64_Ehdr h;
	Elf64_Shdr s0;
	uint64_t shnum;
	ssize_t n;

	n = pread(fd, &h, sizeof(h), 0);
	if (n < 0)
		return negative_errno();
	if ((size_t)n < sizeof(h) || memcmp(h.e_ident, ELFMAG, SELFMAG) ||
	    h.e_ident[EI_CLASS] != ELFCLASS64 || h.e_ident[EI_DATA] != ELFDATA2LSB)
		return -ENOEXEC;
	shnum = h.e_shnum;
	if (!shnum && h.e_shoff) {
		n = pread(fd, &s0, sizeof(s0), h.e_shoff);
		if (n < 0)
			return negative_errno();
		if ((size_t)n < sizeof(s0))
			return -ENOEXEC;
		shnum = s0.sh_size;
	}
	if (shnum > SECTIONS_MAX || h.e_phnum > SEGMENTS_MAX)
		return -E2BIG;
	return 0;
}

int py_elf_open(int fd, struct py_elf *ret)
{
	struct py_elf e = { .fd = fd };
	struct stat st;
	size_t phnum;
	Elf *elf;
	int r;

	if (fstat(fd, &st) < 0)
		return negative_errno();
	if (!S_ISREG(st.st_mode))
		return -EINVAL;
	if ((uint64_t)st.st_size > PY_ELF_BYTES_MAX)
		return -EFBIG;
	r = check_header(fd);
	if (r < 0)
		return r;
	if (elf_version(EV_CURRENT) == EV_NONE)
		return -ENOTSUP;
	elf = elf_begin(fd, ELF_C_READ, NULL);
	if (!elf)
		return -ENOEXEC;
	if (elf_kind(elf) != ELF_K_ELF || elf_getphdrnum(elf, &phnum) < 0) {
		elf_end(elf);
		return -ENOEXEC;
	}
	for (size_t i = 0; i < phnum && e.n_loads < ARRAY_SIZE(e.loads); i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(elf, i, &ph) || ph.p_type != PT_LOAD)
			continue;
		e.loads[e.n_loads++] = (struct py_elf_load){ ph.p_vaddr, ph.p_offset, ph.p_filesz };
	}
	e.elf = elf;
	*ret = e;
	return 0;
}

void py_elf_close(struct py_elf *e)
{
	if (e->elf)
		elf_end(e->elf);
	e->elf = NULL;
}

static Elf_Scn *find_section(Elf *elf, Elf64_Word type, const char *name, GElf_Shdr *ret)
{
	Elf_Scn *scn = NULL;
	size_t shstrndx;

	if (name && elf_getshdrstrndx(elf, &shstrndx) < 0)
		return NULL;
	while ((scn = elf_nextscn(elf, scn))) {
		const char *n;

		if (!gelf_getshdr(scn, ret) || ret->sh_type != type)
			continue;
		if (!name)
			return scn;
		n = elf_strptr(elf, shstrndx, ret->sh_name);
		if (n && !strcmp(n, name))
			return scn;
	}
	return NULL;
}

int py_elf_dynsyms(struct py_elf *e, struct py_elf_sym *syms, size_t n)
{
	GElf_Shdr sh;
	Elf_Data *data;
	Elf_Scn *scn;
	size_t count;

	for (size_t i = 0; i < n; i++)
		syms[i].found = false;
	scn = find_section(e->elf, SHT_DYNSYM, NULL, &sh);
	if (!scn)
		return 0;
	data = elf_getdata(scn, NULL);
	if (!data || !sh.sh_entsize)
		return -ENOEXEC;
	count = MIN(sh.sh_size / sh.sh_entsize, (uint64_t)PY_DYNSYMS_MAX);
	for (size_t i = 0; i < count; i++) {
		const char *name;
		GElf_Sym sym;

		if (!gelf_getsym(data, i, &sym) || sym.st_shndx == SHN_UNDEF || !sym.st_name)
			continue;
		name = elf_strptr(e->elf, sh.sh_link, sym.st_name);
		if (!name)
			continue;
		for (size_t j = 0; j < n; j++)
			if (!syms[j].found && !strcmp(name, syms[j].name)) {
				syms[j].value = sym.st_value;
				syms[j].size = sym.st_size;
				syms[j].found = true;
			}
	}
	return 0;
}

int py_elf_bias(const struct py_elf *e, uint64_t map_start, uint64_t map_offset, uint64_t *ret)
{
	long page = sysconf(_SC_PAGESIZE);

	if (page <= 0)
		return -EINVAL;
	for (size_t i = 0; i < e->n_loads; i++) {
		const struct py_elf_load *g = &e->loads[i];
		uint64_t first = g->offset & ~((uint64_t)page - 1);

		/* the segment that the mapping's first page belongs to */
		if (map_offset >= first && map_offset < g->offset + MAX(g->filesz, 1)) {
			*ret = map_start - map_offset - (g->vaddr - g->offset);
			return 0;
		}
	}
	return -ENOENT;
}

/* "3.N.M" at p, then the end of the string or a release suffix ("+", "rc1", "b2"). */
static bool parse_version(const char *p, size_t left, unsigned *ret_minor, unsigned *ret_micro)
{
	unsigned minor = 0, micro = 0;
	size_t i = 2, digits;

	if (left < 6 || p[0] != '3' || p[1] != '.')
		return false;
	for (digits = 0; i < left && isdigit((unsigned char)p[i]) && digits < 3; i++, digits++)
		minor = minor * 10 + (p[i] - '0');
	if (!digits || i >= left || p[i] != '.')
		return false;
	for (i++, digits = 0; i < left && isdigit((unsigned char)p[i]) && digits < 3; i++, digits++)
		micro = micro * 10 + (p[i] - '0');
	if (!digits || i >= left)
		return false;
	for (size_t k = 0; k < 8 && i < left && p[i]; k++, i++)
		if (!isalnum((unsigned char)p[i]) && p[i] != '+')
			return false;
	if (i >= left || p[i])
		return false;
	*ret_minor = minor;
	*ret_micro = micro;
	return true;
}

int py_elf_version_strings(struct py_elf *e, uint32_t *ret_minors, unsigned ret_micro[16])
{
	uint32_t minors = 0;
	GElf_Shdr sh;
	Elf_Data *data;
	Elf_Scn *scn;
	const char *p;
	size_t len;

	scn = find_section(e->elf, SHT_PROGBITS, ".rodata", &sh);
	if (!scn || sh.sh_size > PY_RODATA_SCAN_MAX) {
		*ret_minors = 0;
		return 0;
	}
	data = elf_getdata(scn, NULL);
	if (!data || !data->d_buf) {
		*ret_minors = 0;
		return 0;
	}
	p = data->d_buf;
	len = data->d_size;
	for (size_t i = 0; i + 6 <= len; i++) {
		unsigned minor, micro;

		/* PY_VERSION, alone or as the tail of a longer string the linker merged it into */
		if (p[i] != '3' || (i && (isdigit((unsigned char)p[i - 1]) || p[i - 1] == '.')))
			continue;
		if (!parse_version(p + i, len - i, &minor, &micro) || minor < 6 || minor > 15)
			continue;
		minors |= 1u << minor;
		ret_micro[minor] = micro;
	}
	*ret_minors = minors;
	return 0;
}
