// SPDX-License-Identifier: GPL-2.0-only
/*
 * Separate debug files of a stripped binary: <debug dir>/.build-id/xx/rest.debug (the
 * build-id must match), else the file .gnu_debuglink names, next to the binary, in its
 * .debug/ or under the debug dir (the CRC must match). Each is looked for in the process's
 * root first, then in the daemon's.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "internal.h"

/* The CRC-32 (zlib's, the one .gnu_debuglink holds) of a whole file, up to ELF_FILE_BYTES_MAX. */
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
		if ((uint64_t)off > ELF_FILE_BYTES_MAX)
			return -EFBIG; /* it grows while read */
	}
	*ret = crc;
	return 0;
}

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
	struct stat st;
	GElf_Shdr sh;
	Elf *e;

	if (fstat(fd, &st) < 0 || elf_open(fd, &st, &e) < 0)
		return NULL;
	if (!elf_find_section(e, SHT_SYMTAB, &sh))
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
	if (snprintf(path, sizeof(path), "%s/.build-id/%.2s/%s.debug", ds->debug_dir, build_id,
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
	if (!scn || sh.sh_size > ELF_SMALL_MAX || !gelf_getehdr(bin, &eh))
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
			n = snprintf(path, sizeof(path), "%s%s/%s", ds->debug_dir, dir, name);
		if (n >= (int)sizeof(path))
			continue;
		fd = debug_open(ds, path);
		if (fd < 0)
			continue;
		/* the link may name the binary itself; the size and the ELF header first, then
		 * the CRC of the whole file (a sparse giant is refused before it is read) */
		if (fstat(fd, &st) < 0 || (st.st_dev == ds->st.st_dev && st.st_ino == ds->st.st_ino) ||
		    (uint64_t)st.st_size > ELF_FILE_BYTES_MAX) {
			close(fd);
			continue;
		}
		e = debug_check(fd, NULL);
		if (e && file_crc32(fd, &got) == 0 && got == want) {
			*ret_fd = fd;
			return e;
		}
		if (e)
			elf_end(e);
		close(fd);
	}
	return NULL;
}

Elf *debug_find(const struct debug_search *ds, Elf *bin, const char *build_id, int *ret_fd)
{
	Elf *e = NULL;

	if (build_id[0])
		e = debug_by_build_id(ds, build_id, ret_fd);
	if (!e)
		e = debug_by_link(ds, bin, ret_fd);
	return e;
}
