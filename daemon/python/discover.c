// SPDX-License-Identifier: GPL-2.0-only
/*
 * Is this process CPython, which version, and where are its runtime and type objects?
 *
 * CPython (3.7+) exports _PyRuntime: in .dynsym of its executable for a static build
 * (Debian's /usr/bin/python3.11, stripped, has it too), or of libpython3.N.so for a shared
 * one (pyenv's, --enable-shared). Only those files are opened, each through
 * /proc/PID/map_files (the very file mapped, in the process's own mount namespace), else
 * /proc/PID/root + its path resolved inside that root, and only a regular file is read.
 *
 * The version, in order: Py_Version (3.11+, the PY_VERSION_HEX the binary was built as);
 * the libpython file name; a "3.N.M" string in its .rodata (PY_VERSION, often the merged
 * tail of a longer string), when exactly one minor appears there. Then the sizes of
 * _PyRuntime (.dynsym's st_size) and of the table's build are compared (a different build
 * of the same version is noted, not refused: the reads check every object's type anyway),
 * and 3.13+ checks the table against the interpreter's own _Py_DebugOffsets.
 *
 * The types the reads compare objects with (PyCode_Type, PyUnicode_Type, PyBytes_Type,
 * PyFrame_Type, _Py_NoneStruct) are exported data too. For 3.8-3.10, where a thread state
 * knows its thread only as a pthread_t, glibc's own description of where struct pthread
 * keeps the kernel tid (_thread_db_pthread_tid, what libthread_db and gdb read) comes from
 * libc.so.6 (glibc 2.34+) or libpthread.so.0.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "internal.h"
#include "macro.h"

/* The first mapping of a file discovery looks at. */
struct mapped {
	uint64_t start, end, offset;
	char path[PATH_MAX];
	bool found;
};

enum which { M_EXE, M_LIBPYTHON, M_LIBC, M_LIBPTHREAD, M_MAX };

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');

	return s ? s + 1 : path;
}

static enum which classify(const char *path, const char *exe)
{
	const char *b = base_name(path);

	if (exe[0] && !strcmp(path, exe))
		return M_EXE;
	if (!strncmp(b, "libpython3.", 11) && strstr(b, ".so"))
		return M_LIBPYTHON;
	if (!strcmp(b, "libc.so.6") || !strncmp(b, "libc-2.", 7))
		return M_LIBC;
	if (!strncmp(b, "libpthread", 10) && strstr(b, ".so"))
		return M_LIBPTHREAD;
	return M_MAX;
}

/* /proc/PID/maps: the first mapping of the executable, a libpython, libc and libpthread. */
static int read_maps(uint32_t pid, const char *exe, struct mapped ret[M_MAX])
{
	_cleanup_fclose_ FILE *f = NULL;
	char path[64], line[PATH_MAX + 128];
	uint64_t bytes = 0;

	snprintf(path, sizeof(path), "/proc/%u/maps", pid);
	f = fopen(path, "re");
	if (!f)
		return negative_errno();
	while (fgets(line, sizeof(line), f)) {
		unsigned long long start, end, offset;
		char *p, perms[8];
		enum which w;
		int n = 0;

		bytes += strlen(line);
		if (bytes > PY_MAPS_BYTES_MAX)
			return -EFBIG;
		if (!strchr(line, '\n') && !feof(f))
			continue; /* a line longer than a path: not one of ours */
		line[strcspn(line, "\n")] = 0;
		if (sscanf(line, "%llx-%llx %7s %llx %*s %*u %n", &start, &end, perms, &offset, &n) < 4 || !n)
			continue;
		p = line + n;
		if (p[0] != '/')
			continue;
		w = classify(p, exe);
		if (w == M_MAX) {
			/* a deleted file keeps its path with " (deleted)": the executable too */
			size_t l = strlen(p);

			if (l > 10 && !strcmp(p + l - 10, " (deleted)")) {
				p[l - 10] = 0;
				w = classify(p, exe);
			}
		}
		if (w == M_MAX || ret[w].found)
			continue;
		ret[w] = (struct mapped){ start, end, offset, "", true };
		snprintf(ret[w].path, sizeof(ret[w].path), "%s", p);
	}
	return 0;
}

/* A regular file, looked up without opening anything else first (no FIFO, no device). */
static int open_regular(int dirfd, const char *path, bool in_root)
{
	struct open_how how = {
		.flags = O_PATH | O_CLOEXEC,
		.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS,
	};
	_cleanup_close_ int pfd = -1;
	char buf[64];
	struct stat st;
	int fd;

	if (in_root)
		pfd = syscall(SYS_openat2, dirfd, path, &how, sizeof(how));
	else
		pfd = openat(dirfd, path, O_PATH | O_CLOEXEC);
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

static int open_mapped(uint32_t pid, const struct mapped *mp)
{
	_cleanup_close_ int root = -1;
	char path[96];
	int fd;

	snprintf(path, sizeof(path), "/proc/%u/map_files/%llx-%llx", pid, (unsigned long long)mp->start,
		 (unsigned long long)mp->end);
	fd = open_regular(AT_FDCWD, path, false);
	if (fd >= 0)
		return fd;
	snprintf(path, sizeof(path), "/proc/%u/root", pid);
	root = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (root < 0)
		return negative_errno();
	return open_regular(root, mp->path, true);
}

enum sym {
	S_RUNTIME,
	S_VERSION,
	S_CODE_TYPE,
	S_FRAME_TYPE,
	S_UNICODE_TYPE,
	S_BYTES_TYPE,
	S_NONE,
	S_TRACE_REFS,
	S_MAX
};

static const char *const sym_names[S_MAX] = {
	[S_RUNTIME] = "_PyRuntime",
	[S_VERSION] = "Py_Version",
	[S_CODE_TYPE] = "PyCode_Type",
	[S_FRAME_TYPE] = "PyFrame_Type",
	[S_UNICODE_TYPE] = "PyUnicode_Type",
	[S_BYTES_TYPE] = "PyBytes_Type",
	[S_NONE] = "_Py_NoneStruct",
	[S_TRACE_REFS] = "_Py_PrintReferences", /* only in a Py_TRACE_REFS build: another object head */
};

/* What one candidate file holds. */
struct candidate {
	struct py_elf_sym syms[S_MAX];
	uint64_t bias;
	uint32_t minors; /* from .rodata version strings */
	unsigned micro[16];
};

static int look_at(uint32_t pid, const struct mapped *mp, struct candidate *c)
{
	struct py_elf e;
	int fd, r;

	for (size_t i = 0; i < S_MAX; i++)
		c->syms[i] = (struct py_elf_sym){ .name = sym_names[i] };
	fd = open_mapped(pid, mp);
	if (fd < 0)
		return fd;
	r = py_elf_open(fd, &e);
	if (r < 0) {
		close(fd);
		return r;
	}
	r = py_elf_dynsyms(&e, c->syms, S_MAX);
	if (r >= 0 && c->syms[S_RUNTIME].found)
		r = py_elf_bias(&e, mp->start, mp->offset, &c->bias);
	if (r >= 0 && c->syms[S_RUNTIME].found && !c->syms[S_VERSION].found)
		r = py_elf_version_strings(&e, &c->minors, c->micro);
	py_elf_close(&e);
	close(fd);
	return r;
}

/* glibc's struct pthread: where it keeps the tid (libthread_db's descriptor: bits, count, offset) */
static void find_pthread_tid(uint32_t pid, struct py_mem *m, const struct mapped *mp, struct py_target *t)
{
	struct py_elf_sym sym = { .name = "_thread_db_pthread_tid" };
	uint32_t desc[3];
	struct py_elf e;
	uint64_t bias;
	int fd, r;

	if (!mp->found)
		return;
	fd = open_mapped(pid, mp);
	if (fd < 0)
		return;
	r = py_elf_open(fd, &e);
	if (r >= 0) {
		r = py_elf_dynsyms(&e, &sym, 1);
		if (r >= 0 && sym.found)
			r = py_elf_bias(&e, mp->start, mp->offset, &bias);
		py_elf_close(&e);
	}
	close(fd);
	if (r < 0 || !sym.found || sym.size < sizeof(desc))
		return;
	if (py_mem_read(m, bias + sym.value, desc, sizeof(desc)) < 0)
		return;
	if (desc[0] == 32 && desc[2] < 4096)
		t->pthread_tid_off = desc[2];
}

static bool named_python(uint32_t pid, const char *exe)
{
	char path[64], comm[32] = "";
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%u/comm", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		n = read(fd, comm, sizeof(comm) - 1);
		comm[n > 0 ? n : 0] = 0;
		close(fd);
	}
	return !strncmp(comm, "python", 6) || !strncmp(base_name(exe), "python", 6);
}

/* The minor version from a libpython file name: libpython3.N.so, libpython3.Nd.so... */
static int minor_from_name(const char *path, bool *ret_threaded)
{
	const char *b = base_name(path);
	char *end;
	long v;

	if (strncmp(b, "libpython3.", 11))
		return -1;
	v = strtol(b + 11, &end, 10);
	if (end == b + 11 || v < 0 || v > 99)
		return -1;
	*ret_threaded = *end == 't';
	return v;
}

static int set_version(struct py_target *t, struct py_mem *m, const struct candidate *c,
		       const struct mapped *mp, char *why, size_t why_len)
{
	bool threaded = false;
	int minor = -1;

	if (c->syms[S_VERSION].found) {
		uint32_t hex;

		if (py_mem_read(m, c->bias + c->syms[S_VERSION].value, &hex, sizeof(hex)) < 0) {
			snprintf(why, why_len, "its Py_Version cannot be read");
			return -EIO;
		}
		t->hexversion = hex;
		snprintf(t->version, sizeof(t->version), "%u.%u.%u", hex >> 24, (hex >> 16) & 0xff,
			 (hex >> 8) & 0xff);
		if ((hex >> 24) != 3) {
			snprintf(why, why_len, "Py_Version %#x is no CPython 3", hex);
			return -EPROTO;
		}
		minor = (hex >> 16) & 0xff;
		(void)minor_from_name(mp->path, &threaded);
	} else {
		minor = minor_from_name(mp->path, &threaded);
		if (minor < 0 && c->minors && !(c->minors & (c->minors - 1)))
			minor = __builtin_ctz(c->minors);
		if (minor < 0) {
			snprintf(why, why_len,
				 "its version is not known: no Py_Version, no libpython3.N name, %s",
				 c->minors ? "several 3.N.M strings" : "no 3.N.M string");
			return -EPROTO;
		}
		if (c->minors & (1u << minor)) {
			t->hexversion = 3u << 24 | (unsigned)minor << 16 | c->micro[minor] << 8;
			snprintf(t->version, sizeof(t->version), "3.%d.%u", minor, c->micro[minor]);
		} else {
			t->hexversion = 3u << 24 | (unsigned)minor << 16;
			snprintf(t->version, sizeof(t->version), "3.%d", minor);
		}
	}
	if (threaded) {
		t->free_threaded = true;
		snprintf(why, why_len,
			 "CPython %s is a free-threaded build (its objects are laid out differently)",
			 t->version);
		return -EPROTO;
	}
	if (c->syms[S_TRACE_REFS].found) {
		snprintf(why, why_len,
			 "CPython %s is a Py_TRACE_REFS build (its objects are laid out differently)",
			 t->version);
		return -EPROTO;
	}
	return 0;
}

int py_target_set_offsets(struct py_target *t, struct py_mem *m, char *why, size_t why_len)
{
	const struct py_offsets *o = py_offsets_for((t->hexversion >> 16) & 0xff);
	uint8_t raw[PY_DEBUG_OFFSETS_SIZE];
	int r;

	if ((t->hexversion >> 24) != 3 || !o) {
		snprintf(why, why_len, "CPython %s is not one this hostprofd reads (3.8-3.13)", t->version);
		return -EPROTONOSUPPORT;
	}
	t->off = *o;
	snprintf(t->offsets_note, sizeof(t->offsets_note), "the table's for 3.%u", o->minor);
	if (o->minor >= 13) {
		char note[PY_REASON_MAX];

		r = py_mem_read(m, t->runtime, raw, sizeof(raw));
		if (r < 0) {
			snprintf(why, why_len, "its _PyRuntime cannot be read (%s)", strerror(-r));
			return r;
		}
		r = py_offsets_from_debug(raw, sizeof(raw), t->hexversion, &t->off, note, sizeof(note));
		if (r < 0) {
			t->free_threaded = py_debug_free_threaded(raw, sizeof(raw));
			snprintf(why, why_len, "%s", note);
			return r;
		}
		if (r == 0)
			snprintf(t->offsets_note, sizeof(t->offsets_note),
				 "the table's for 3.%u: _PyRuntime does not start with _Py_DebugOffsets",
				 o->minor);
		else
			snprintf(t->offsets_note, sizeof(t->offsets_note), "%s", note);
	}
	if (t->runtime_size && t->runtime_size != o->runtime_size) {
		size_t n = strlen(t->offsets_note);

		snprintf(
			t->offsets_note + n, sizeof(t->offsets_note) - n,
			"; _PyRuntime is %llu bytes, the table's build %llu (every object's type is checked)",
			(unsigned long long)t->runtime_size, (unsigned long long)o->runtime_size);
	}
	return 0;
}

int py_discover(uint32_t pid, struct py_mem *m, struct py_target *t, enum py_kind *ret_kind, char *why,
		size_t why_len)
{
	struct mapped maps[M_MAX] = {};
	struct candidate c;
	char exe[PATH_MAX] = "", path[64];
	const struct mapped *hit = NULL;
	enum which order[] = { M_EXE, M_LIBPYTHON };
	ssize_t n;
	int r;

	*t = (struct py_target){ .pid = pid, .pthread_tid_off = -1 };
	why[0] = 0;
	snprintf(path, sizeof(path), "/proc/%u/exe", pid);
	n = readlink(path, exe, sizeof(exe) - 1);
	exe[n > 0 ? n : 0] = 0;
	if (n > 10 && !strcmp(exe + n - 10, " (deleted)"))
		exe[n - 10] = 0;
	r = read_maps(pid, exe, maps);
	if (r < 0) {
		*ret_kind = named_python(pid, exe) ? PY_KIND_UNREADABLE : PY_KIND_NOT_PYTHON;
		snprintf(why, why_len, "its memory maps cannot be read (%s)", strerror(-r));
		return 0;
	}
	for (size_t i = 0; i < ARRAY_SIZE(order) && !hit; i++) {
		const struct mapped *mp = &maps[order[i]];

		if (!mp->found)
			continue;
		r = look_at(pid, mp, &c);
		if (r == -ENOMEM)
			return r;
		if (r >= 0 && c.syms[S_RUNTIME].found)
			hit = mp;
	}
	if (!hit) {
		*ret_kind = named_python(pid, exe) || maps[M_LIBPYTHON].found ? PY_KIND_UNREADABLE :
										PY_KIND_NOT_PYTHON;
		snprintf(why, why_len,
			 "no _PyRuntime in %s%s%s: not CPython 3.7 or later (2.7 and 3.6 are not read)",
			 maps[M_EXE].found ? maps[M_EXE].path : "its executable",
			 maps[M_LIBPYTHON].found ? " or " : "",
			 maps[M_LIBPYTHON].found ? maps[M_LIBPYTHON].path : "");
		return 0;
	}
	*ret_kind = PY_KIND_UNREADABLE;
	snprintf(t->binary, sizeof(t->binary), "%.*s", (int)sizeof(t->binary) - 1, hit->path);
	t->runtime = c.bias + c.syms[S_RUNTIME].value;
	t->runtime_size = c.syms[S_RUNTIME].size;
	if (set_version(t, m, &c, hit, why, why_len) < 0 || py_target_set_offsets(t, m, why, why_len) < 0)
		return 0;
	if (!c.syms[S_CODE_TYPE].found || !c.syms[S_UNICODE_TYPE].found || !c.syms[S_BYTES_TYPE].found ||
	    (t->off.frames == PY_FRAMES_OBJECT && !c.syms[S_FRAME_TYPE].found)) {
		snprintf(why, why_len, "%s does not export the type objects the reads check against",
			 hit->path);
		return 0;
	}
	t->code_type = c.bias + c.syms[S_CODE_TYPE].value;
	t->unicode_type = c.bias + c.syms[S_UNICODE_TYPE].value;
	t->bytes_type = c.bias + c.syms[S_BYTES_TYPE].value;
	t->frame_type = c.syms[S_FRAME_TYPE].found ? c.bias + c.syms[S_FRAME_TYPE].value : 0;
	t->none = c.syms[S_NONE].found ? c.bias + c.syms[S_NONE].value : 0;
	if (t->off.ts_native_tid < 0) {
		find_pthread_tid(pid, m, &maps[M_LIBC], t);
		if (t->pthread_tid_off < 0)
			find_pthread_tid(pid, m, &maps[M_LIBPTHREAD], t);
	}
	*ret_kind = PY_KIND_CPYTHON;
	return 0;
}
