// SPDX-License-Identifier: GPL-2.0-only
/*
 * A file's call frame information (its .eh_frame, and .eh_frame_hdr's search table), for the
 * unwinder (unwind.c). Read where the file is read (the worker): the two sections are copied
 * out of the file into a small ELF image of their own in memory, which libdw opens
 * (dwarf_getcfi_elf), so that an unwind touches no file, only memory the daemon holds. The
 * sections keep their addresses, so the image answers for the file's own virtual addresses.
 *
 * Only files of the daemon's own machine, class and byte order are read: the unwinder walks
 * this machine's registers.
 *
 * libdw sizes a frame's register rules by the highest register number an instruction names,
 * and copies them at each DW_CFA_remember_state: a register number of 2^27 in a file's CFI
 * would have it allocate and clear gigabytes at a lookup (fuzz-cfi found it). So every CIE
 * and FDE is read through first (cfi_check): register numbers past CFI_REG_MAX, remembered
 * states remembered past CFI_STATES_MAX, instruction streams past CFI_INSNS_MAX, an instruction
 * not known, and the whole .eh_frame is refused. What one lookup may still cost (libdw runs
 * an FDE's instructions up to the pc) is bounded by these; an unwind's time, by
 * UNWIND_BUDGET_NS.
 */
#include <elf.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#if defined(__x86_64__)
#define CFI_MACHINE EM_X86_64
#elif defined(__aarch64__)
#define CFI_MACHINE EM_AARCH64
#else
#define CFI_MACHINE EM_NONE /* no unwinder for this machine: no file has CFI for it */
#endif

/* A lookup's frame state, kept: libdw runs the CIE's and the FDE's instructions at each
 * lookup, and the same return addresses come back sample after sample. */
#define CFI_FRAMES 1024 /* per file, direct-mapped */
#define CFI_FRAME_BYTES 320 /* what one holds, about (the rules of 17 registers and more) */

struct frame_slot {
	uint64_t vaddr;
	Dwarf_Frame *frame; /* NULL: empty, or no CFI for vaddr (then none is set) */
	bool none;
};

struct cfi {
	void *image;
	size_t len;
	Elf *elf;
	Dwarf_CFI *cfi;
	bool indexed; /* with .eh_frame_hdr's search table */
	struct frame_slot *frames; /* made at the first lookup (the loop's thread only) */
	size_t n_frames;
	uint64_t hits, misses;
};

/* what Debian 12's libraries and programs need at most, and libtorch's, with room */
#define CFI_REG_MAX 127 /* register numbers in rules: aarch64's highest in use is 96 or so */
#define CFI_STATES_MAX 4096 /* DW_CFA_remember_state in one CIE's or FDE's instructions (444 seen) */
#define CFI_INSNS_MAX (64u << 10) /* bytes of one CIE's or FDE's instructions (21003 seen) */
#define CFI_CIES_MAX 4096 /* distinct CIEs remembered while checking */

struct cie_info {
	uint64_t offset;
	uint8_t enc; /* the FDEs' pointer encoding ('R'), DW_EH_PE_absptr when none */
	bool z; /* augmentation data is sized ('z') */
	size_t fde_aug; /* without 'z': the FDEs' augmentation data size */
};

static int uleb(const uint8_t **p, const uint8_t *end, uint64_t *ret)
{
	uint64_t v = 0;

	for (unsigned shift = 0; *p < end; shift += 7) {
		uint8_t b = *(*p)++;

		if (shift < 64)
			v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80)) {
			*ret = v;
			return 0;
		}
		if (shift > 63)
			return -EBADMSG;
	}
	return -EBADMSG;
}

static int skip(const uint8_t **p, const uint8_t *end, uint64_t n)
{
	if ((uint64_t)(end - *p) < n)
		return -EBADMSG;
	*p += n;
	return 0;
}

/* Skips one pointer of encoding enc (DW_EH_PE_*). */
static int skip_encoded(const uint8_t **p, const uint8_t *end, uint8_t enc)
{
	uint64_t v;

	if (enc == 0xff) /* DW_EH_PE_omit */
		return 0;
	switch (enc & 0x0f) {
	case 0x00: return skip(p, end, 8); /* absptr, 64-bit */
	case 0x01: case 0x09: return uleb(p, end, &v); /* uleb128, sleb128 */
	case 0x02: case 0x0a: return skip(p, end, 2);
	case 0x03: case 0x0b: return skip(p, end, 4);
	case 0x04: case 0x0c: return skip(p, end, 8);
	default: return -EBADMSG;
	}
}

static int reg_ok(const uint8_t **p, const uint8_t *end)
{
	uint64_t reg;
	int r = uleb(p, end, &reg);

	return r < 0 ? r : reg > CFI_REG_MAX ? -EBADMSG : 0;
}

/* One CIE's or FDE's instructions: every opcode known, its operands within the stream. */
static int check_insns(const uint8_t *p, const uint8_t *end, uint8_t enc, int *remembered)
{
	uint64_t v;
	int r = 0;

	if (end - p > (ptrdiff_t)CFI_INSNS_MAX)
		return -E2BIG;
	while (p < end && r == 0) {
		uint8_t op = *p++;

		switch (op & 0xc0) {
		case 0x40: continue; /* advance_loc */
		case 0x80: r = uleb(&p, end, &v); continue; /* offset: register in the opcode */
		case 0xc0: continue; /* restore */
		}
		switch (op) {
		case 0x00: case 0x2d: break; /* nop; GNU_window_save / aarch64 negate_ra_state */
		case 0x01: r = skip_encoded(&p, end, enc == 0xff ? 0 : enc); break; /* set_loc */
		case 0x02: r = skip(&p, end, 1); break;
		case 0x03: r = skip(&p, end, 2); break;
		case 0x04: r = skip(&p, end, 4); break;
		case 0x0a: /* remember_state: libdw copies the rules each time */
			if (++*remembered > CFI_STATES_MAX)
				r = -E2BIG;
			break;
		case 0x0b: /* restore_state */
			break;
		case 0x0e: case 0x13: case 0x2e: r = uleb(&p, end, &v); break; /* def_cfa_offset(_sf), GNU_args_size */
		case 0x06: case 0x07: case 0x08: case 0x0d: r = reg_ok(&p, end); break;
		case 0x05: case 0x0c: case 0x11: case 0x12: case 0x14: case 0x15: case 0x2f:
			r = reg_ok(&p, end);
			if (r == 0)
				r = uleb(&p, end, &v);
			break;
		case 0x09: /* register */
			r = reg_ok(&p, end);
			if (r == 0)
				r = reg_ok(&p, end);
			break;
		case 0x0f: /* def_cfa_expression */
			r = uleb(&p, end, &v);
			if (r == 0)
				r = skip(&p, end, v);
			break;
		case 0x10: case 0x16: /* expression, val_expression */
			r = reg_ok(&p, end);
			if (r == 0)
				r = uleb(&p, end, &v);
			if (r == 0)
				r = skip(&p, end, v);
			break;
		default:
			r = -EBADMSG;
		}
	}
	return r;
}

static int cie_parse(const Dwarf_CIE *cie, uint64_t offset, struct cie_info *ret)
{
	const uint8_t *a = cie->augmentation_data, *end = a ? a + cie->augmentation_data_size : NULL;
	const char *aug = cie->augmentation;
	int r = 0;

	*ret = (struct cie_info){ .offset = offset, .fde_aug = cie->fde_augmentation_data_size };
	if (cie->return_address_register > CFI_REG_MAX)
		return -EBADMSG;
	if (!aug || aug[0] != 'z')
		return aug && aug[0] && strcmp(aug, "eh") ? -EBADMSG : 0;
	ret->z = true;
	for (const char *c = aug + 1; *c && r == 0; c++) {
		if (!a)
			return -EBADMSG;
		switch (*c) {
		case 'R':
			r = a < end ? 0 : -EBADMSG;
			if (r == 0)
				ret->enc = *a++;
			break;
		case 'L':
			r = skip(&a, end, 1);
			break;
		case 'P':
			r = a < end ? 0 : -EBADMSG;
			if (r == 0) {
				uint8_t enc = *a++;

				r = skip_encoded(&a, end, enc & 0x7f);
			}
			break;
		case 'S': case 'B': case 'G':
			break;
		default:
			return -EBADMSG;
		}
	}
	return r;
}

static int cmp_cie(const void *a, const void *b)
{
	uint64_t x = ((const struct cie_info *)a)->offset, y = ((const struct cie_info *)b)->offset;

	return x < y ? -1 : x > y;
}

/* Every CIE and FDE of eh[0..len): what libdw would be asked to run is within the bounds. */
static int32_t get_s32(const uint8_t *p)
{
	int32_t v;

	memcpy(&v, p, 4);
	return v;
}

/*
 * .eh_frame_hdr's search table, in the one encoding GNU ld and lld write (version 1,
 * eh_frame_ptr pcrel sdata4, fde_count udata4, the table datarel sdata4): libdw follows
 * an entry to any offset it names, so each must name an FDE cfi_check read, in order.
 * false: not that table, or a wrong one (then libdw is not given it).
 */
static bool hdr_ok(const uint8_t *h, size_t len, uint64_t hdr_addr, uint64_t eh_addr, const uint64_t *fdes,
		   size_t n_fdes)
{
	uint32_t count;
	int64_t prev = INT64_MIN;

	if (len < 12 || h[0] != 1 || h[1] != 0x1b || h[2] != 0x03 || h[3] != 0x3b)
		return false;
	if (hdr_addr + 4 + get_s32(h + 4) != eh_addr)
		return false;
	memcpy(&count, h + 8, 4);
	if (count > n_fdes || (len - 12) / 8 < count)
		return false;
	for (uint32_t i = 0; i < count; i++) {
		int64_t loc = get_s32(h + 12 + 8 * i);
		uint64_t fde = hdr_addr + get_s32(h + 16 + 8 * i) - eh_addr;

		if (loc < prev || !bsearch(&fde, fdes, n_fdes, sizeof(*fdes), cmp_u64))
			return false;
		prev = loc;
	}
	return true;
}

/* Every CIE and FDE of eh[0..len): what libdw would be asked to run is within the bounds.
 * The FDEs' offsets, sorted, into *ret_fdes. */
static int cfi_check(const void *eh, size_t len, uint64_t **ret_fdes, size_t *ret_n)
{
	static const unsigned char ident[EI_NIDENT] = { ELFMAG0, ELFMAG1, ELFMAG2, ELFMAG3, ELFCLASS64,
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
							ELFDATA2MSB,
#else
							ELFDATA2LSB,
#endif
							EV_CURRENT };
	Elf_Data data = { .d_buf = (void *)eh, .d_size = len, .d_type = ELF_T_BYTE, .d_version = EV_CURRENT };
	_cleanup_free_ struct cie_info *cies = NULL;
	_cleanup_free_ uint64_t *fdes = NULL;
	size_t n_cies = 0, n_fdes = 0, cap = 0;
	Dwarf_Off off = 0, next;
	int r;

	cies = calloc(CFI_CIES_MAX, sizeof(*cies));
	if (!cies)
		return -ENOMEM;
	/* CIEs first (an FDE may name one after it), then the FDEs */
	for (int pass = 0; pass < 2; pass++) {
		for (off = 0; off < len; off = next) {
			Dwarf_CFI_Entry entry;
			int remembered = 0;

			r = dwarf_next_cfi(ident, &data, true, off, &next, &entry);
			if (r > 0)
				break; /* the terminator */
			if (r < 0 || next <= off)
				return -EBADMSG;
			if (dwarf_cfi_cie_p(&entry)) {
				if (pass)
					continue;
				if (n_cies >= CFI_CIES_MAX)
					return -E2BIG;
				r = cie_parse(&entry.cie, off, &cies[n_cies]);
				if (r == 0)
					r = check_insns(entry.cie.initial_instructions, entry.cie.initial_instructions_end,
							cies[n_cies].enc, &remembered);
				if (r < 0)
					return r;
				n_cies++; /* in the order of their offsets, as bsearch wants them */
			} else if (pass) {
				struct cie_info key = { .offset = entry.fde.CIE_pointer };
				const struct cie_info *ci = bsearch(&key, cies, n_cies, sizeof(*cies), cmp_cie);
				const uint8_t *p = entry.fde.start, *end = entry.fde.end;
				uint64_t aug;

				if (!ci)
					return -EBADMSG;
				r = skip_encoded(&p, end, ci->enc & 0x7f); /* initial_location */
				if (r == 0)
					r = skip_encoded(&p, end, ci->enc & 0x0f); /* address_range: no modifier */
				if (r == 0 && ci->z) {
					r = uleb(&p, end, &aug);
					if (r == 0)
						r = skip(&p, end, aug);
				} else if (r == 0) {
					r = skip(&p, end, ci->fde_aug);
				}
				if (r == 0)
					r = check_insns(p, end, ci->enc, &remembered);
				if (r < 0)
					return r;
				if (n_fdes == cap) {
					uint64_t *more = reallocarray(fdes, cap ? 2 * cap : 1024, sizeof(*fdes));

					if (!more)
						return -ENOMEM;
					fdes = more;
					cap = cap ? 2 * cap : 1024;
				}
				fdes[n_fdes++] = off; /* in order */
			}
		}
	}
	*ret_fdes = TAKE_PTR(fdes);
	*ret_n = n_fdes;
	return 0;
}

static const char cfi_names[] = "\0.eh_frame_hdr\0.eh_frame\0.shstrtab";
#define NAME_HDR 1
#define NAME_EH 15
#define NAME_STRTAB 25

static size_t align8(size_t n)
{
	return (n + 7) & ~(size_t)7;
}

int cfi_build(const void *hdr, size_t hdr_len, uint64_t hdr_addr, const void *eh, size_t eh_len, uint64_t eh_addr,
	      uint16_t machine, struct cfi **ret)
{
	size_t hdr_off, eh_off, str_off, sh_off, len;
	_cleanup_free_ struct cfi *c = NULL;
	Elf64_Ehdr *eh64;
	Elf64_Shdr *sh;
	_cleanup_free_ uint64_t *fdes = NULL;
	size_t n_fdes = 0;
	unsigned char *p;
	int r;

	*ret = NULL;
	if (!eh_len)
		return -ENOENT;
	if (eh_len > CFI_BYTES_MAX || hdr_len > CFI_BYTES_MAX)
		return -EFBIG;
	r = cfi_check(eh, eh_len, &fdes, &n_fdes);
	if (r < 0)
		return r == -ENOMEM ? r : -EBADMSG;
	if (hdr_len && !hdr_ok(hdr, hdr_len, hdr_addr, eh_addr, fdes, n_fdes))
		hdr_len = 0; /* libdw searches .eh_frame itself */
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	hdr_off = sizeof(Elf64_Ehdr);
	eh_off = align8(hdr_off + hdr_len);
	str_off = eh_off + eh_len;
	sh_off = align8(str_off + sizeof(cfi_names));
	len = sh_off + 4 * sizeof(Elf64_Shdr);
	p = calloc(1, len);
	if (!p)
		return -ENOMEM;
	eh64 = (Elf64_Ehdr *)p;
	memcpy(eh64->e_ident, ELFMAG, SELFMAG);
	eh64->e_ident[EI_CLASS] = ELFCLASS64;
	eh64->e_ident[EI_DATA] = __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__ ? ELFDATA2MSB : ELFDATA2LSB;
	eh64->e_ident[EI_VERSION] = EV_CURRENT;
	eh64->e_type = ET_DYN;
	eh64->e_machine = machine;
	eh64->e_version = EV_CURRENT;
	eh64->e_ehsize = sizeof(Elf64_Ehdr);
	eh64->e_shoff = sh_off;
	eh64->e_shentsize = sizeof(Elf64_Shdr);
	eh64->e_shnum = 4;
	eh64->e_shstrndx = 3;
	if (hdr_len)
		memcpy(p + hdr_off, hdr, hdr_len);
	memcpy(p + eh_off, eh, eh_len);
	memcpy(p + str_off, cfi_names, sizeof(cfi_names));
	sh = (Elf64_Shdr *)(p + sh_off);
	/* libdw takes .eh_frame_hdr only when it comes before .eh_frame */
	sh[1] = (Elf64_Shdr){ .sh_name = NAME_HDR,
			      .sh_type = hdr_len ? SHT_PROGBITS : SHT_NOBITS,
			      .sh_flags = SHF_ALLOC,
			      .sh_addr = hdr_addr,
			      .sh_offset = hdr_off,
			      .sh_size = hdr_len,
			      .sh_addralign = 4 };
	sh[2] = (Elf64_Shdr){ .sh_name = NAME_EH,
			      .sh_type = SHT_PROGBITS,
			      .sh_flags = SHF_ALLOC,
			      .sh_addr = eh_addr,
			      .sh_offset = eh_off,
			      .sh_size = eh_len,
			      .sh_addralign = 8 };
	sh[3] = (Elf64_Shdr){ .sh_name = NAME_STRTAB,
			      .sh_type = SHT_STRTAB,
			      .sh_offset = str_off,
			      .sh_size = sizeof(cfi_names),
			      .sh_addralign = 1 };
	c->image = p;
	c->len = len;
	c->indexed = hdr_len > 0;
	c->elf = elf_memory((char *)p, len);
	if (!c->elf) {
		free(p);
		return -EBADMSG;
	}
	c->cfi = dwarf_getcfi_elf(c->elf);
	if (!c->cfi) {
		elf_end(c->elf);
		free(p);
		return -EBADMSG;
	}
	*ret = TAKE_PTR(c);
	return 0;
}

/* The raw bytes of scn, at most CFI_BYTES_MAX; NULL with -ENOENT when it has none. */
static int section_bytes(Elf_Scn *scn, const GElf_Shdr *sh, Elf_Data **ret)
{
	Elf_Data *d;

	*ret = NULL;
	if (!scn || sh->sh_type == SHT_NOBITS || !sh->sh_size)
		return -ENOENT;
	if (sh->sh_size > CFI_BYTES_MAX)
		return -EFBIG;
	d = elf_rawdata(scn, NULL);
	if (!d || !d->d_buf || d->d_size != sh->sh_size)
		return -EBADMSG;
	*ret = d;
	return 0;
}

int cfi_read(Elf *e, struct cfi **ret)
{
	Elf_Data *hdr = NULL, *eh;
	Elf_Scn *hscn, *escn;
	GElf_Shdr hsh, esh;
	GElf_Ehdr ehdr;
	int r;

	*ret = NULL;
	if (!gelf_getehdr(e, &ehdr))
		return -ENOEXEC;
	if (CFI_MACHINE == EM_NONE || ehdr.e_machine != CFI_MACHINE || ehdr.e_ident[EI_CLASS] != ELFCLASS64 ||
	    ehdr.e_ident[EI_DATA] != (__BYTE_ORDER__ == __ORDER_BIG_ENDIAN__ ? ELFDATA2MSB : ELFDATA2LSB))
		return -EPROTONOSUPPORT;
	escn = elf_find_section_named(e, ".eh_frame", &esh);
	r = section_bytes(escn, &esh, &eh);
	if (r < 0)
		return r;
	hscn = elf_find_section_named(e, ".eh_frame_hdr", &hsh);
	if (section_bytes(hscn, &hsh, &hdr) < 0)
		hdr = NULL; /* without its table, libdw searches .eh_frame itself */
	return cfi_build(hdr ? hdr->d_buf : NULL, hdr ? hdr->d_size : 0, hdr ? hsh.sh_addr : 0, eh->d_buf,
			 eh->d_size, esh.sh_addr, ehdr.e_machine, ret);
}

Dwarf_CFI *cfi_handle(const struct cfi *c)
{
	return c ? c->cfi : NULL;
}

int cfi_frame(struct cfi *c, uint64_t vaddr, Dwarf_Frame **ret)
{
	struct frame_slot *sl;
	Dwarf_Frame *f;

	if (!c->frames) {
		c->frames = calloc(CFI_FRAMES, sizeof(*c->frames));
		if (!c->frames)
			return dwarf_cfi_addrframe(c->cfi, vaddr, ret) < 0 ? -ENOENT : 1; /* uncached: caller frees */
	}
	sl = &c->frames[(vaddr ^ (vaddr >> 10)) * 0x9e3779b97f4a7c15ull >> 54];
	if ((sl->frame || sl->none) && sl->vaddr == vaddr) {
		c->hits++;
		*ret = sl->frame;
		return sl->frame ? 0 : -ENOENT;
	}
	c->misses++;
	if (sl->frame) {
		free(sl->frame);
		c->n_frames--;
	}
	*sl = (struct frame_slot){ .vaddr = vaddr };
	if (dwarf_cfi_addrframe(c->cfi, vaddr, &f) < 0) {
		sl->none = true;
		return -ENOENT;
	}
	sl->frame = f;
	c->n_frames++;
	*ret = f;
	return 0;
}

bool cfi_indexed(const struct cfi *c)
{
	return c && c->indexed;
}

size_t cfi_bytes(const struct cfi *c)
{
	if (!c)
		return 0;
	return sizeof(*c) + c->len + (c->frames ? CFI_FRAMES * sizeof(*c->frames) : 0) +
	       c->n_frames * CFI_FRAME_BYTES;
}

void cfi_free(struct cfi *c)
{
	if (!c)
		return;
	for (size_t i = 0; c->frames && i < CFI_FRAMES; i++)
		free(c->frames[i].frame);
	free(c->frames);
	dwarf_cfi_end(c->cfi);
	elf_end(c->elf);
	free(c->image);
	free(c);
}
