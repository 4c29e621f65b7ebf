// SPDX-License-Identifier: GPL-2.0-only
/*
 * Source file and line, and the functions inlined at an address, from DWARF, with elfutils'
 * libdw. A file's DWARF is found when the file is read (elf_load(): the binary's own, else
 * its debug file's) and its fd kept (at most DWARF_FDS_MAX of them, so that the lines still
 * resolve once the process is gone or the file replaced). Opening it is most of the cost:
 * libdw reads and decompresses its sections whole. So it is opened right then too, on the
 * worker (dwarf_preopen()), when it is at most DWARF_PREOPEN_FILE_MAX and the daemon holds
 * less than DWARF_PREOPEN_BYTES_MAX of such files (counted in the file's elf_file_bytes(),
 * so in symbolizer_mb): a snapshot job, a fork of the daemon, inherits it open and only
 * looks up its addresses. Other files are opened by each job that resolves an address in
 * them, and what libdw reads goes with the job.
 *
 * Bounds: a file whose debug sections come to more than DWARF_FILE_BYTES_MAX decompressed
 * (the compression headers are read before libdw decompresses anything) is not opened; the
 * files open at once hold at most DWARF_HELD_BYTES_MAX, the least recently used closed to
 * make room; a process that resolves (a snapshot job) spends at most DWARF_BUDGET_NS of
 * CPU time in here, after which frames get no lines. A file that fails (not DWARF libdw reads, over a
 * cap) is not tried again in that process. Every failure is counted.
 *
 * The CU of an address: .debug_aranges (dwarf_addrdie), else an index of the CUs' own
 * ranges, made once per file. The line: the CU's line table (dwarf_getsrc_die). The inlined
 * frames: the DIEs that hold the address, found by walking down the CU's tree (into
 * namespaces, and into the function, inlined subroutine or block whose ranges hold it;
 * SCOPE_DEPTH_MAX deep, SCOPE_STEPS_MAX DIEs at most: libdw's dwarf_getscopes also follows
 * abstract origins, which is not needed here, and leaks on some bad input); the innermost
 * inlined function is at the line table's line, each one's caller at its
 * DW_AT_call_file:DW_AT_call_line, up to the real function (the DW_TAG_subprogram, which the
 * symbol table names).
 */
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

#define FILE_NAME_MAX 1024 /* longer source paths are cut */
#define SCOPE_DEPTH_MAX 64 /* nested scopes followed, and namespaces */
#define SCOPE_STEPS_MAX (1u << 20) /* DIEs looked at per address */

struct cu_range {
	uint64_t lo, hi;
	Dwarf_Off off; /* of the CU's DIE */
};

struct dwarf_handle {
	struct elf_file *file;
	struct dwarf_handle *prev, *next; /* in dwarf_open, most recently used first */
	Elf *elf;
	Dwarf *dbg;
	uint64_t bytes;
	struct cu_range *cus; /* sorted by lo */
	size_t n_cus;
	bool cus_made;
	struct cu_range *fns; /* the functions' ranges (off: the DW_TAG_subprogram), sorted by lo */
	size_t n_fns;
	bool fns_made;
	bool fns_partial; /* the index could not be made whole (no memory): its ranges are not sure */
	bool linked; /* in a dwarf_open list */
	bool preopened; /* opened when the file was read: counts in preopened_bytes */
};

static atomic_uint fds_held;
static atomic_uint_fast64_t preopened_bytes; /* of the handles opened when their files were read */
static atomic_uint_fast64_t preopen_failed; /* files whose DWARF could not be opened then */

int dwarf_keep_fd(int fd)
{
	unsigned n = atomic_fetch_add(&fds_held, 1);
	int d;

	if (n >= DWARF_FDS_MAX) {
		atomic_fetch_sub(&fds_held, 1);
		return -1;
	}
	d = fcntl(fd, F_DUPFD_CLOEXEC, 3);
	if (d < 0)
		atomic_fetch_sub(&fds_held, 1);
	return d;
}

void dwarf_drop_fd(int fd)
{
	if (fd < 0)
		return;
	close(fd);
	atomic_fetch_sub(&fds_held, 1);
}

unsigned dwarf_fds_held(void)
{
	return atomic_load(&fds_held);
}

/* The budget is of CPU time: on a busy host, lines do not come and go with the load. */
static uint64_t cpu_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec * NSEC_PER_SEC + ts.tv_nsec;
}

static uint64_t get_uint(const unsigned char *p, size_t n, bool msb)
{
	uint64_t v = 0;

	for (size_t i = 0; i < n; i++)
		v = msb ? v << 8 | p[i] : v | (uint64_t)p[i] << (8 * i);
	return v;
}

/*
 * The debug sections a line and inline lookup reads. libdw reads (and decompresses) every
 * debug section it knows when it opens a file; the others (location lists, macros, CFI,
 * name indexes: most of a debug file after .debug_info) are made SHT_NOBITS in libelf's
 * copy of the section headers first, which libdw skips as stripped.
 */
static bool section_needed(const char *name)
{
	static const char *const needed[] = { "info",	  "abbrev",	 "line",     "str",
					      "line_str", "ranges",	 "rnglists", "aranges",
					      "addr",	  "str_offsets", "types" };
	const char *n = name + (name[1] == 'z' ? 8 : 7); /* past ".debug_" or ".zdebug_" */

	for (size_t i = 0; i < ARRAY_SIZE(needed); i++)
		if (!strcmp(n, needed[i]))
			return true;
	return false;
}

/*
 * What libdw would hold of e's debug sections, decompressed: the sizes their compression
 * headers declare (read from fd, not through libelf, which would read the section whole).
 * The sections not needed are hidden from libdw (section_needed()). The sum saturates.
 */
static int debug_bytes(Elf *e, int fd, uint64_t *ret)
{
	unsigned char h[24];
	Elf_Scn *scn = NULL;
	uint64_t total = 0;
	size_t shstrndx;
	GElf_Ehdr eh;
	bool is64, msb;

	if (!gelf_getehdr(e, &eh) || elf_getshdrstrndx(e, &shstrndx) < 0)
		return -EBADMSG;
	if (eh.e_type != ET_EXEC && eh.e_type != ET_DYN)
		return -ENOEXEC; /* relocatable DWARF needs relocating: not for us */
	is64 = eh.e_ident[EI_CLASS] == ELFCLASS64;
	msb = eh.e_ident[EI_DATA] == ELFDATA2MSB;
	while ((scn = elf_nextscn(e, scn))) {
		uint64_t size;
		const char *name;
		GElf_Shdr sh;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS)
			continue;
		name = elf_strptr(e, shstrndx, sh.sh_name);
		if (!name || (strncmp(name, ".debug_", 7) && strncmp(name, ".zdebug_", 8)))
			continue;
		if (!section_needed(name)) {
			sh.sh_type = SHT_NOBITS; /* in memory only: the descriptor is read-only */
			if (!gelf_update_shdr(scn, &sh))
				return -EBADMSG;
			continue;
		}
		size = sh.sh_size;
		if (sh.sh_flags & SHF_COMPRESSED) {
			size_t n = is64 ? 24 : 12;

			if (pread(fd, h, n, sh.sh_offset) != (ssize_t)n)
				return -EBADMSG;
			size = is64 ? get_uint(h + 8, 8, msb) : get_uint(h + 4, 4, msb);
		} else if (name[1] == 'z') {
			/* GNU .zdebug: "ZLIB", then the size, big-endian */
			if (pread(fd, h, 12, sh.sh_offset) != 12 || memcmp(h, "ZLIB", 4))
				return -EBADMSG;
			size = get_uint(h + 4, 8, true);
		}
		total = size > UINT64_MAX - total ? UINT64_MAX : total + size;
	}
	*ret = total;
	return 0;
}

/*
 * libdw 0.188 takes a string attribute (DW_FORM_string, strp, line_strp) to be terminated
 * and runs strlen() on it, past the section's end when it is not. In the sections such
 * strings are in, the last byte is a NUL in every file a compiler writes (a string table
 * ends with one, .debug_info with the null entry that closes its last DIE's children): a
 * file where it is not is refused, so that no strlen() can leave the section.
 */
static bool strings_terminated(Elf *e)
{
	static const char *const sections[] = { ".debug_info", ".debug_str", ".debug_line_str",
						".debug_types" };
	Elf_Scn *scn = NULL;
	size_t shstrndx;

	if (elf_getshdrstrndx(e, &shstrndx) < 0)
		return false;
	while ((scn = elf_nextscn(e, scn))) {
		const char *name;
		Elf_Data *data;
		GElf_Shdr sh;
		bool listed = false;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS ||
		    !(name = elf_strptr(e, shstrndx, sh.sh_name)))
			continue;
		for (size_t i = 0; i < ARRAY_SIZE(sections) && !listed; i++)
			listed = !strcmp(name, sections[i]) ||
				 (name[1] == 'z' && !strcmp(name + 2, sections[i] + 1));
		if (!listed)
			continue;
		/* what libdw reads: the section as dwarf_begin_elf() left it, decompressed */
		data = elf_getdata(scn, NULL);
		if (data && data->d_size && ((const char *)data->d_buf)[data->d_size - 1] != 0)
			return false;
	}
	return true;
}

static void handle_unlink(struct dwarf_open *o, struct dwarf_handle *h)
{
	if (h->prev)
		h->prev->next = h->next;
	else
		o->head = h->next;
	if (h->next)
		h->next->prev = h->prev;
	else
		o->tail = h->prev;
	h->prev = h->next = NULL;
}

static void handle_push(struct dwarf_open *o, struct dwarf_handle *h)
{
	h->next = o->head;
	h->prev = NULL;
	if (o->head)
		o->head->prev = h;
	o->head = h;
	if (!o->tail)
		o->tail = h;
}

static void handle_free(struct dwarf_handle *h);
static int make_fn_index(struct dwarf_handle *h);

void dwarf_close(struct dwarf_open *o, struct elf_file *f)
{
	struct dwarf_handle *h = f->dwarf;

	if (!h)
		return;
	if (h->linked && o) {
		handle_unlink(o, h);
		o->bytes -= h->bytes;
	}
	handle_free(h);
	f->dwarf = NULL;
}

/* f's DWARF file, and what libdw would hold of it (nothing is decompressed yet). */
static int handle_size(struct elf_file *f, Elf **ret, uint64_t *ret_bytes)
{
	struct stat st;
	Elf *e;
	int r;

	if (fstat(f->dwarf_fd, &st) < 0)
		return negative_errno();
	r = elf_open(f->dwarf_fd, &st, &e);
	if (r < 0)
		return r;
	r = debug_bytes(e, f->dwarf_fd, ret_bytes);
	if (r < 0) {
		elf_end(e);
		return r;
	}
	*ret = e;
	return 0;
}

/* libdw on e (which it takes, also on failure), in no list. */
static int handle_begin(struct elf_file *f, Elf *e, uint64_t bytes, struct dwarf_handle **ret)
{
	struct dwarf_handle *h = calloc(1, sizeof(*h));

	if (!h) {
		elf_end(e);
		return -ENOMEM;
	}
	h->dbg = dwarf_begin_elf(e, DWARF_C_READ, NULL);
	if (!h->dbg || !strings_terminated(e)) {
		dwarf_end(h->dbg);
		elf_end(e);
		free(h);
		return -EBADMSG;
	}
	h->elf = e;
	h->file = f;
	h->bytes = bytes;
	*ret = h;
	return 0;
}

static void handle_free(struct dwarf_handle *h)
{
	if (h->preopened)
		atomic_fetch_sub(&preopened_bytes, h->bytes);
	dwarf_end(h->dbg);
	elf_end(h->elf);
	free(h->cus);
	free(h->fns);
	free(h);
}

/* Opened in the process that resolves: into the list, the least used closed to make room. */
static int handle_open(struct dwarf_open *o, struct elf_file *f)
{
	struct dwarf_handle *h;
	uint64_t bytes;
	Elf *e;
	int r;

	r = handle_size(f, &e, &bytes);
	if (r < 0)
		return r;
	if (bytes > DWARF_FILE_BYTES_MAX) {
		elf_end(e);
		return -E2BIG;
	}
	while (o->tail && o->bytes + bytes > DWARF_HELD_BYTES_MAX) {
		dwarf_close(o, o->tail->file);
		o->evicted++;
	}
	r = handle_begin(f, e, bytes, &h);
	if (r < 0)
		return r;
	f->dwarf = h;
	dwarf_adopt(o, f);
	o->opened++;
	return 0;
}

int dwarf_preopen(struct elf_file *f)
{
	struct dwarf_handle *h;
	uint64_t bytes, held;
	Dwarf_Aranges *ar;
	size_t n_ar;
	Elf *e;
	int r;

	if (f->dwarf_fd < 0 || f->dwarf)
		return 0;
	r = handle_size(f, &e, &bytes);
	if (r == 0 && bytes > DWARF_FILE_BYTES_MAX) {
		elf_end(e);
		r = -E2BIG;
	}
	if (r < 0)
		goto failed;
	/* too large to keep, or the daemon holds enough: each snapshot job opens it */
	held = atomic_fetch_add(&preopened_bytes, bytes);
	if (bytes > DWARF_PREOPEN_FILE_MAX || held + bytes > DWARF_PREOPEN_BYTES_MAX) {
		atomic_fetch_sub(&preopened_bytes, bytes);
		elf_end(e);
		return 0;
	}
	r = handle_begin(f, e, bytes, &h);
	if (r < 0) {
		atomic_fetch_sub(&preopened_bytes, bytes);
		goto failed;
	}
	h->preopened = true;
	/* made once here rather than in every job */
	(void)dwarf_getaranges(h->dbg, &ar, &n_ar);
	(void)make_fn_index(h);
	f->dwarf = h;
	return 1;
failed:
	f->dwarf_err = r; /* unreadable or too large: not tried again, here or in a job */
	atomic_fetch_add(&preopen_failed, 1);
	return r;
}

uint64_t dwarf_file_preopened_bytes(const struct elf_file *f)
{
	return f->dwarf && f->dwarf->preopened ? f->dwarf->bytes : 0;
}

uint64_t dwarf_preopened_bytes(void)
{
	return atomic_load(&preopened_bytes);
}

uint64_t dwarf_preopen_failed(void)
{
	return atomic_load(&preopen_failed);
}

void dwarf_adopt(struct dwarf_open *o, struct elf_file *f)
{
	struct dwarf_handle *h = f->dwarf;

	if (!h || h->linked)
		return;
	handle_push(o, h);
	h->linked = true;
	o->bytes += h->bytes;
}

static int cmp_cu_range(const void *a, const void *b)
{
	const struct cu_range *x = a, *y = b;

	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/* The ranges of every CU, for a file without (complete) .debug_aranges. */
static int make_cu_index(struct dwarf_handle *h)
{
	Dwarf_CU *cu = NULL, *next;
	size_t units = 0, cap = 0;
	Dwarf_Half version;
	uint8_t unit_type;
	Dwarf_Die cudie;

	h->cus_made = true;
	while (units++ < DWARF_UNITS_MAX &&
	       dwarf_get_units(h->dbg, cu, &next, &version, &unit_type, &cudie, NULL) == 0) {
		Dwarf_Addr base, start, end;
		ptrdiff_t off = 0;

		cu = next;
		if (unit_type != DW_UT_compile && unit_type != DW_UT_partial)
			continue;
		while ((off = dwarf_ranges(&cudie, off, &base, &start, &end)) > 0 &&
		       h->n_cus < DWARF_RANGES_MAX) {
			if (end <= start)
				continue;
			if (h->n_cus == cap) {
				size_t ncap = cap ? 2 * cap : 256;
				struct cu_range *p = reallocarray(h->cus, ncap, sizeof(*p));

				if (!p)
					return -ENOMEM;
				h->cus = p;
				cap = ncap;
			}
			h->cus[h->n_cus++] = (struct cu_range){ start, end, dwarf_dieoffset(&cudie) };
		}
	}
	qsort_safe(h->cus, h->n_cus, sizeof(*h->cus), cmp_cu_range);
	return 0;
}

static int push_range(struct cu_range **v, size_t *n, size_t *cap, struct cu_range r)
{
	if (*n == *cap) {
		size_t ncap = *cap ? 2 * *cap : 256;
		struct cu_range *p = reallocarray(*v, ncap, sizeof(*p));

		if (!p)
			return -ENOMEM;
		*v = p;
		*cap = ncap;
	}
	(*v)[(*n)++] = r;
	return 0;
}

static bool is_container(int tag);

/*
 * Every function's address ranges, from the DW_TAG_subprogram DIEs of every CU (at its top
 * level and in namespaces), so that an address finds its function without walking its
 * CU, which in an LTO build holds thousands of DIEs. Made once per file: when it is opened
 * as it is read, or on the first lookup in a job. Within DWARF_UNITS_MAX, DWARF_RANGES_MAX
 * and DWARF_DIES_MAX.
 */
static int make_fn_index(struct dwarf_handle *h)
{
	Dwarf_Die stack[SCOPE_DEPTH_MAX], cudie, die, next;
	Dwarf_CU *cu = NULL, *ncu;
	size_t units = 0, dies = 0, cap = 0;
	Dwarf_Half version;
	uint8_t unit_type;
	int r = 0;

	h->fns_made = true;
	while (units++ < DWARF_UNITS_MAX && dies < DWARF_DIES_MAX && h->n_fns < DWARF_RANGES_MAX &&
	       dwarf_get_units(h->dbg, cu, &ncu, &version, &unit_type, &cudie, NULL) == 0) {
		int depth = 0;

		cu = ncu;
		if ((unit_type != DW_UT_compile && unit_type != DW_UT_partial) ||
		    dwarf_child(&cudie, &die) != 0)
			continue;
		for (; dies < DWARF_DIES_MAX; dies++) {
			int tag = dwarf_tag(&die);

			if (tag == DW_TAG_subprogram) {
				Dwarf_Addr base, start, end;
				ptrdiff_t off = 0;

				while ((off = dwarf_ranges(&die, off, &base, &start, &end)) > 0 &&
				       h->n_fns < DWARF_RANGES_MAX)
					if (end > start &&
					    (r = push_range(&h->fns, &h->n_fns, &cap,
							    (struct cu_range){ start, end,
									       dwarf_dieoffset(&die) })) < 0)
						goto out;
			} else if (is_container(tag) && depth < SCOPE_DEPTH_MAX &&
				   dwarf_child(&die, &next) == 0) {
				stack[depth++] = die;
				die = next;
				continue;
			}
			while (dwarf_siblingof(&die, &next) != 0 && depth)
				die = stack[--depth];
			if (dwarf_siblingof(&die, &next) != 0)
				break;
			die = next;
		}
	}
out:
	qsort_safe(h->fns, h->n_fns, sizeof(*h->fns), cmp_cu_range);
	h->fns_partial = r < 0;
	return r;
}

/* The addresses around pc that are sure to look up as pc does: [*lo, *hi) narrowed to
 * what [a, b) (a range that holds pc, or one that does not) leaves of it. */
static void clip(uint64_t pc, uint64_t a, uint64_t b, uint64_t *lo, uint64_t *hi)
{
	if (a <= pc && pc < b) {
		*lo = MAX(*lo, a);
		*hi = MIN(*hi, b);
	} else if (b <= pc) {
		*lo = MAX(*lo, b);
	} else if (a > pc) {
		*hi = MIN(*hi, a);
	}
}

/* Every range of die clipped against (clip()); false: not every one was seen (too many, or
 * unreadable), or die holds pc but none of them does: pc alone is sure then. */
static bool clip_ranges(Dwarf_Die *die, uint64_t pc, bool holds, uint64_t *lo, uint64_t *hi)
{
	Dwarf_Addr base, start, end;
	ptrdiff_t off = 0;
	bool found = false;
	unsigned n;

	for (n = 0; n < 4096 && (off = dwarf_ranges(die, off, &base, &start, &end)) > 0; n++) {
		if (end <= start)
			continue;
		found |= start <= pc && pc < end;
		clip(pc, start, end, lo, hi);
	}
	if (off < 0 || n == 4096)
		return false;
	return found || !holds;
}

/* The function whose ranges hold pc, and its CU; [*lo, *hi) narrowed to the addresses that
 * find the same one. */
static bool find_function(struct dwarf_handle *h, uint64_t pc, Dwarf_Die *ret_fn, Dwarf_Die *ret_cu,
			  uint64_t *ret_lo, uint64_t *ret_hi)
{
	size_t lo = 0, hi;

	if (!h->fns_made && make_fn_index(h) < 0)
		return false;
	hi = h->n_fns;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (h->fns[mid].lo <= pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < h->n_fns)
		*ret_hi = MIN(*ret_hi, h->fns[lo].lo); /* the next function to start */
	for (size_t i = lo, steps = 0; i > 0 && steps < SYM_SCAN_MAX; i--, steps++) {
		const struct cu_range *f = &h->fns[i - 1];

		clip(pc, f->lo, f->hi, ret_lo, ret_hi); /* the ones passed over end at or before pc */
		if (pc < f->hi)
			return dwarf_offdie(h->dbg, f->off, ret_fn) && dwarf_diecu(ret_fn, ret_cu, NULL, NULL);
	}
	return false;
}

static bool find_cu(struct dwarf_handle *h, uint64_t pc, Dwarf_Die *ret)
{
	size_t lo = 0, hi;

	if (dwarf_addrdie(h->dbg, pc, ret))
		return true;
	if (!h->cus_made && make_cu_index(h) < 0)
		return false;
	hi = h->n_cus;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (h->cus[mid].lo <= pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (size_t i = lo, steps = 0; i > 0 && steps < SYM_SCAN_MAX; i--, steps++)
		if (pc < h->cus[i - 1].hi)
			return dwarf_offdie(h->dbg, h->cus[i - 1].off, ret) != NULL;
	return false;
}

/*
 * A source path interned: a relative one under the CU's compilation directory, "dir/./x"
 * and "dir/sub/../x" made plain, cut to FILE_NAME_MAX.
 */
static const char *intern_path(struct name_table *names, const char *comp_dir, const char *file)
{
	char buf[FILE_NAME_MAX], path[FILE_NAME_MAX];
	size_t n = 0;

	if (!file || !file[0])
		return NULL;
	if (file[0] != '/' && comp_dir && comp_dir[0] == '/')
		snprintf(path, sizeof(path), "%s/%s", comp_dir, file);
	else
		snprintf(path, sizeof(path), "%s", file);
	for (const char *p = path; *p && n < sizeof(buf) - 1;) {
		if (p[0] == '/' && p[1] == '.' && p[2] == '/') {
			p += 2;
			continue;
		}
		if (p[0] == '/' && p[1] == '.' && p[2] == '.' && (p[3] == '/' || !p[3]) && n > 0) {
			size_t back = n;

			while (back > 0 && buf[back - 1] != '/')
				back--;
			/* not past the root, nor over a ".." of its own */
			if (back > 0 && !(n - back == 2 && buf[back] == '.' && buf[back + 1] == '.')) {
				n = back - 1;
				p += 3;
				continue;
			}
		}
		buf[n++] = *p++;
	}
	return name_intern(names, buf, n);
}

/* An inlined or real function's name: its linkage name demangled, else DW_AT_name. */
static const char *die_name(struct name_table *names, Dwarf_Die *die, const char **ret_system)
{
	Dwarf_Attribute a;
	const char *n, *d;

	*ret_system = NULL;
	n = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_linkage_name, &a));
	if (!n)
		n = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &a));
	if (n && (d = demangle_cached(names, n))) {
		*ret_system = name_intern(names, n, strnlen(n, DEMANGLE_IN_MAX));
		return d;
	}
	n = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_name, &a));
	return n ? name_intern(names, n, strnlen(n, DEMANGLE_OUT_MAX)) : NULL;
}

static void call_site(Dwarf_Die *die, Dwarf_Files *files, size_t n_files, const char **ret_file,
		      int *ret_line)
{
	Dwarf_Attribute a;
	Dwarf_Word v;

	*ret_file = NULL;
	*ret_line = 0;
	if (files && dwarf_formudata(dwarf_attr(die, DW_AT_call_file, &a), &v) == 0 && v < n_files)
		*ret_file = dwarf_filesrc(files, v, NULL, NULL);
	if (dwarf_formudata(dwarf_attr(die, DW_AT_call_line, &a), &v) == 0 && v <= INT32_MAX)
		*ret_line = (int)v;
}

static bool is_code_scope(int tag)
{
	return tag == DW_TAG_subprogram || tag == DW_TAG_inlined_subroutine || tag == DW_TAG_lexical_block ||
	       tag == DW_TAG_try_block || tag == DW_TAG_catch_block;
}

/* Holds functions, but has no addresses of its own. */
static bool is_container(int tag)
{
	return tag == DW_TAG_namespace || tag == DW_TAG_module;
}

/*
 * The scopes under parent (a CU or a function) that hold pc, outermost first, into
 * chain[0..max); [*lo, *hi) narrowed to the addresses with the same chain (every scope
 * looked at clips it: the ones that hold pc to their range that does, the others by theirs).
 * *exact: the range could not be told, pc alone has this chain.
 */
static int scope_chain(Dwarf_Die *parent, uint64_t pc, Dwarf_Die *chain, int max, uint64_t *lo, uint64_t *hi,
		       bool *exact)
{
	Dwarf_Die stack[SCOPE_DEPTH_MAX], die, next;
	int depth = 0, n = 0;

	if (max <= 0 || dwarf_child(parent, &die) != 0)
		return 0;
	for (size_t steps = 0; steps < SCOPE_STEPS_MAX; steps++) {
		int tag = dwarf_tag(&die);

		if (is_code_scope(tag) && dwarf_haspc(&die, pc) == 1) {
			chain[n++] = die;
			if (!clip_ranges(&die, pc, true, lo, hi))
				*exact = true;
			/* pc is in here: what is beside it no longer matters */
			if (n == max || dwarf_child(&die, &next) != 0) {
				if (n == max)
					*exact = true; /* deeper scopes were not looked at */
				return n;
			}
			die = next;
			depth = 0;
			continue;
		}
		if (is_code_scope(tag) && !clip_ranges(&die, pc, false, lo, hi))
			*exact = true;
		if (is_container(tag) && depth < SCOPE_DEPTH_MAX && dwarf_child(&die, &next) == 0) {
			stack[depth++] = die;
			die = next;
			continue;
		}
		while (dwarf_siblingof(&die, &next) != 0) {
			if (!depth)
				return n;
			die = stack[--depth];
		}
		die = next;
	}
	*exact = true; /* not every scope was looked at */
	return n;
}

/* The address of the first row of cu's line table past pc (UINT64_MAX: none). */
static uint64_t next_row(Dwarf_Die *cu, uint64_t pc)
{
	Dwarf_Lines *lines;
	size_t n, lo = 0, hi;

	if (dwarf_getsrclines(cu, &lines, &n) != 0)
		return 0; /* not known: pc alone */
	hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		Dwarf_Line *l = dwarf_onesrcline(lines, mid);
		Dwarf_Addr a;

		if (!l || dwarf_lineaddr(l, &a) != 0)
			return 0;
		if (a <= pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < n) {
		Dwarf_Line *l = dwarf_onesrcline(lines, lo);
		Dwarf_Addr a;

		return l && dwarf_lineaddr(l, &a) == 0 ? a : 0;
	}
	return UINT64_MAX;
}

/*
 * What DWARF says of pc into ret; [*ret_lo, *ret_hi): the addresses around it that are
 * sure to get the same (its line table row, within the same function and inlined scopes,
 * clipped by every other function and scope that was looked at), so that what a job found
 * also answers the other addresses of that row (a profile's samples land all over them).
 * Where that cannot be told: [pc, pc + 1).
 */
static int lookup(struct dwarf_handle *h, struct name_table *names, uint64_t pc, struct sym_result *ret,
		  uint64_t *ret_lo, uint64_t *ret_hi)
{
	Dwarf_Die chain[SCOPE_DEPTH_MAX];
	Dwarf_Files *files = NULL;
	const char *file = NULL, *comp_dir;
	uint64_t lo = 0, hi = UINT64_MAX;
	bool exact = false;
	Dwarf_Attribute a;
	size_t n_files = 0;
	int line = 0, n;
	Dwarf_Line *l;
	Dwarf_Die cu;

	*ret_lo = pc;
	*ret_hi = pc + 1;
	/* the function, and the scopes in it down to pc; else (code no function covers) its CU */
	n = 0;
	if (find_function(h, pc, &chain[0], &cu, &lo, &hi))
		n = 1 + scope_chain(&chain[0], pc, chain + 1, SCOPE_DEPTH_MAX - 1, &lo, &hi, &exact);
	else if (!find_cu(h, pc, &cu))
		return 0;
	else
		exact = true;
	comp_dir = dwarf_formstring(dwarf_attr(&cu, DW_AT_comp_dir, &a));
	l = dwarf_getsrc_die(&cu, pc);
	if (l) {
		Dwarf_Addr row;

		file = dwarf_linesrc(l, NULL, NULL);
		if (dwarf_lineno(l, &line) < 0)
			line = 0;
		if (dwarf_lineaddr(l, &row) == 0 && row <= pc)
			lo = MAX(lo, row);
		else
			exact = true;
	} else {
		exact = true; /* between sequences, or no table: pc alone */
	}
	hi = MIN(hi, next_row(&cu, pc));
	if (!exact && !h->fns_partial && lo <= pc && pc < hi) {
		*ret_lo = lo;
		*ret_hi = hi;
	}
	if (n > 0 && dwarf_getsrcfiles(&cu, &files, &n_files) < 0)
		files = NULL;
	/* from the innermost out, to the real function */
	for (int i = n - 1; i >= 0; i--) {
		int tag = dwarf_tag(&chain[i]);
		const char *name, *system;

		if (tag == DW_TAG_subprogram) {
			name = die_name(names, &chain[i], &system);
			if (!ret->function && name) {
				ret->function = name; /* no symbol for it, but DWARF knows it */
				ret->system_name = system;
			}
			break;
		}
		if (tag != DW_TAG_inlined_subroutine)
			continue; /* a lexical block */
		if (ret->n_inlined < SYM_INLINED_MAX) {
			struct sym_inline *in = &ret->inlined[ret->n_inlined++];

			name = die_name(names, &chain[i], &system);
			*in = (struct sym_inline){
				.function = name ? name : "",
				.system_name = system,
				.file = intern_path(names, comp_dir, file),
				.line = line > 0 ? line : 0,
			};
		}
		/* its caller is where it was inlined */
		call_site(&chain[i], files, n_files, &file, &line);
	}
	ret->file = intern_path(names, comp_dir, file);
	ret->line = line > 0 ? line : 0;
	return ret->file || ret->n_inlined ? 1 : 0;
}

/*
 * One more lookup for the daemon, of pc, written down as dwarf_lookup() writes its own; the
 * addresses its answer covers into [*ret_lo, *ret_hi). False: nothing more to learn past it
 * (pc alone could be told, or a name did not fit).
 */
static bool learn_one(struct dwarf_open *o, struct name_table *names, struct elf_file *f, uint64_t pc,
		      uint64_t *ret_lo, uint64_t *ret_hi)
{
	const struct line_entry *e = lines_find(f, pc);
	struct sym_result found = {};
	size_t full = names->full;
	uint64_t lo, hi;
	int r;

	if (e) {
		lines_extent(e, ret_lo, ret_hi);
		return *ret_lo <= pc && pc < *ret_hi;
	}
	r = lookup(f->dwarf, names, pc, &found, &lo, &hi);
	o->lookups++;
	o->around++;
	if (names->full != full || !(lo <= pc && pc < hi))
		return false;
	learned_add(o, f, lo, hi, r > 0, &found);
	(void)lines_put(f, pc, lo, hi, r > 0, &found);
	*ret_lo = lo;
	*ret_hi = hi;
	return hi - lo > 1;
}

/*
 * A job that opened a file's DWARF for [lo, hi) of a function learns the rows beside it in
 * that function too, AROUND_MAX ranges each way within AROUND_NS: the next snapshot's
 * samples and call sites land on other rows of the same hot functions, and each address no
 * job had looked up made that job open and decompress the file again (libc6-dbg: 80-130 ms).
 */
static void learn_around(struct dwarf_open *o, struct name_table *names, struct elf_file *f, uint64_t pc, uint64_t lo,
			 uint64_t hi)
{
	uint64_t fn_lo = 0, fn_hi = UINT64_MAX, a, l, h, t0 = cpu_now_ns();
	Dwarf_Die fn, cu;

	/* the rows beside are a guess: they never crowd out the addresses a job looks up */
	if (learned_half_full(o) || f->dwarf->fns_partial || !find_function(f->dwarf, pc, &fn, &cu, &fn_lo, &fn_hi))
		return;
	a = hi;
	for (unsigned i = 0; i < AROUND_MAX && a < fn_hi && cpu_now_ns() - t0 < AROUND_NS && !learned_half_full(o);
	     i++, a = h)
		if (!learn_one(o, names, f, a, &l, &h) || h <= a)
			break;
	a = lo;
	for (unsigned i = 0; i < AROUND_MAX && a > fn_lo && cpu_now_ns() - t0 < AROUND_NS && !learned_half_full(o);
	     i++, a = l)
		if (!learn_one(o, names, f, a - 1, &l, &h) || l >= a)
			break;
}

int dwarf_lookup(struct file_cache *c, struct name_table *names, struct elf_file *f, uint64_t vaddr,
		 struct sym_result *ret)
{
	struct dwarf_open *o = &c->dwarf;
	const struct line_entry *e;
	struct sym_result found = {};
	uint64_t t0, lo, hi, full;
	pid_t pid;
	int r;

	if (f->dwarf_fd < 0)
		return 0;
	/* looked up before: by this process, or by a job that handed it back (lines.c) */
	e = lines_find(f, vaddr);
	if (e) {
		o->cached++;
		return lines_apply(e, ret);
	}
	if (f->dwarf_err)
		return f->dwarf_err;
	/* the budget is per process: each snapshot job is a fork that starts afresh */
	pid = getpid();
	if (o->pid != pid) {
		o->pid = pid;
		o->spent_ns = 0;
	}
	if (o->spent_ns >= DWARF_BUDGET_NS) {
		o->over_budget++;
		return -ETIME;
	}
	t0 = cpu_now_ns();
	if (!f->dwarf) {
		r = handle_open(o, f);
		if (r < 0) {
			f->dwarf_err = r;
			o->failed++;
			goto out;
		}
	} else if (!f->dwarf->linked) {
		dwarf_adopt(o, f); /* opened when the file was read, before it was in the cache */
	} else if (o->head != f->dwarf) {
		handle_unlink(o, f->dwarf);
		handle_push(o, f->dwarf);
	}
	/* what DWARF says alone (found.function: the function it names), then into ret */
	full = names->full;
	r = lookup(f->dwarf, names, vaddr, &found, &lo, &hi);
	o->lookups++;
	if (names->full != full || hi <= lo) {
		/* a name did not fit in the table (shown as unknown): not kept, nor handed on */
		o->learn_dropped += o->owner && pid != o->owner;
	} else {
		(void)lines_put(f, vaddr, lo, hi, r > 0, &found); /* without room: looked up again */
		if (o->owner && pid != o->owner) {
			learned_add(o, f, lo, hi, r > 0, &found); /* for the daemon; this fork's copy goes */
			if (hi - lo > 1)
				learn_around(o, names, f, vaddr, lo, hi);
		}
	}
	lines_merge(&found, ret);
out:
	o->spent_ns += cpu_now_ns() - t0;
	return r;
}
