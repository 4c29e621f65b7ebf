// SPDX-License-Identifier: GPL-2.0-only
/*
 * Tests of what daemon/symbolize/ reads beyond symbol tables, against real binaries: C++
 * names demangled, MiniDebugInfo, DWARF lines and inlined frames, Debian's python3.11 with
 * python3.11-dbg, and the bounds on all of it. The first argument names the test; the rest
 * are cxxchild (g++), inlchild (-O2 -g), symchild and its library, objcopy:
 *
 *   cxx        at::native::add_kernel and c10::intrusive_ptr_release resolve demangled, with
 *              their mangled names as system_name, and their source lines; the same once
 *              the child is dead;
 *   demangle   demangle() on names made here: C++, Rust (legacy and v0), a name that only
 *              looks mangled, a plain name that would demangle as a type; a name too long
 *              with its parameters loses them, one too long without them is cut; a
 *              mangled name past DEMANGLE_IN_MAX is kept; the table keeps each once;
 *   minidebug  a copy of symchild stripped and given .gnu_debugdata as Fedora makes it
 *              (nm, objcopy --only-keep-debug, xz, objcopy --add-section): its static and
 *              main functions resolve; with garbage in .gnu_debugdata, or an xz that
 *              decompresses past the cap, they do not, the failure is counted and the
 *              frame says so; the decompressor stops at its size and time caps;
 *   lines      inlchild's probe address: inl_outer at the line it calls inl_mid, with
 *              inl_leaf then inl_mid inlined there, each at its line; the same from a
 *              stripped copy through its build-id debug file, and after the child is dead;
 *   lines-learned  what a snapshot job (a fork) looks up in DWARF, handed back with
 *              symbolizer_learned() and kept by the parent's symbolizer_learn(), answers
 *              the next fork's lookups with the same chain while that DWARF can no longer
 *              be read (no lookup, all cached), and so does another address of the same
 *              line row (the range handed back holds it); every byte of inlchild's code
 *              a job's ranges answer (a job looked up every 13th) is answered as a fresh
 *              lookup of it would be, and most are; the parent's own lookups are kept at once;
 *              truncated or garbage bytes are refused (-EBADMSG) and keep nothing wrong,
 *              records for a file the parent does not know are skipped;
 *   dwarf-bad  copies of inlchild with garbage in .debug_info, with a compressed .debug_info
 *              that claims 1 TiB, and with its DWARF cut short: the symbols still resolve,
 *              nothing crashes, the failures are counted;
 *   python     Debian's /usr/bin/python3.11 with python3.11-dbg: a static function (long_add)
 *              and _PyEval_EvalFrameDefault resolve with their source files through the
 *              build-id debug file, also after the interpreter exited; without the debug
 *              file (an empty debug dir), long_add is unresolved and the mapping names
 *              python3.11-dbg; the first 32 KiB of _PyEval_EvalFrameDefault byte by byte
 *              against the ranges a job hands back (as lines-learned does for inlchild).
 *              Skipped (77) without python3.11 or python3.11-dbg.
 *   bench      (a meson benchmark) what DWARF costs a snapshot job: python3.11 (with
 *              python3.11-dbg and libc6-dbg when installed), N of its functions resolved
 *              in a fork of the symbolizer, as a snapshot job does, with and without
 *              DWARF: the time, the job's peak memory, what the daemon's symbolizer holds.
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <gelf.h>
#include <inttypes.h>
#include <libelf.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../unit/check.h"
#include "macro.h"
#include "symbolize.h"
#include "symbolize/internal.h"

static const char *cxx_exe, *inl_exe, *sym_exe, *sym_lib, *objcopy;
static char tmpdir[] = "/tmp/hpdbg-test.XXXXXX";
static bool have_tmpdir;

#define SKIP 77

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	remove(path);
	return 0;
}

static void cleanup_tmpdir(void)
{
	if (have_tmpdir)
		nftw(tmpdir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

static const char *tmp_path(const char *name)
{
	static char bufs[8][PATH_MAX];
	static int next;
	char *b = bufs[next++ % 8];

	snprintf(b, PATH_MAX, "%s/%s", tmpdir, name);
	return b;
}

/* Runs a shell script with $T the temp dir and $1... the arguments; 0 when it exited 0. */
static int sh(const char *script, const char *a1, const char *a2)
{
	int status;
	pid_t pid = fork();

	if (pid < 0)
		return -errno;
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		setenv("T", tmpdir, 1);
		setenv("OBJCOPY", objcopy, 1);
		execl("/bin/sh", "sh", "-ec", script, "sh", a1 ? a1 : "", a2 ? a2 : "", (char *)NULL);
		_exit(127);
	}
	if (waitpid(pid, &status, 0) < 0)
		return -errno;
	if (!WIFEXITED(status) || WEXITSTATUS(status)) {
		fprintf(stderr, "script failed (status %d): %s\n", status, script);
		return -EIO;
	}
	return 0;
}

/* ---- children ---- */

#define VALUES_MAX 8

struct child {
	pid_t pid;
	FILE *out;
	char names[VALUES_MAX][16];
	uint64_t values[VALUES_MAX];
	size_t n;
};

/* Runs argv[0] with argv; reads "name=0xHEX" or "name=DECIMAL" lines up to "ready". */
static int child_start(char *const argv[], struct child *ret)
{
	char line[256], libdir[PATH_MAX];
	int fds[2];

	*ret = (struct child){};
	snprintf(libdir, sizeof(libdir), "%s", sym_lib);
	*strrchr(libdir, '/') = 0;
	if (pipe2(fds, O_CLOEXEC) < 0)
		return -errno;
	ret->pid = fork();
	if (ret->pid < 0)
		return -errno;
	if (ret->pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		dup2(fds[1], 1);
		setenv("LD_LIBRARY_PATH", libdir, 1);
		execv(argv[0], argv);
		_exit(127);
	}
	close(fds[1]);
	ret->out = fdopen(fds[0], "r");
	if (!ret->out)
		return -errno;
	while (fgets(line, sizeof(line), ret->out)) {
		char name[16], *eq = strchr(line, '=');

		if (!strcmp(line, "ready\n"))
			return 0;
		if (!eq || eq - line >= (ptrdiff_t)sizeof(name) || ret->n == VALUES_MAX)
			continue;
		memcpy(name, line, eq - line);
		name[eq - line] = 0;
		strcpy(ret->names[ret->n], name);
		ret->values[ret->n++] = strtoull(eq + 1, NULL, !strncmp(eq + 1, "0x", 2) ? 16 : 10);
	}
	fprintf(stderr, "%s ended before \"ready\"\n", argv[0]);
	return -EIO;
}

static uint64_t child_value(const struct child *c, const char *name)
{
	for (size_t i = 0; i < c->n; i++)
		if (!strcmp(c->names[i], name))
			return c->values[i];
	fprintf(stderr, "the child printed no %s\n", name);
	exit(1);
}

static void child_stop(struct child *c)
{
	if (c->pid > 0) {
		kill(c->pid, SIGKILL);
		waitpid(c->pid, NULL, 0);
	}
	if (c->out)
		fclose(c->out);
	c->out = NULL;
}

static struct symbolizer *new_symbolizer(const char *debug_dir)
{
	struct symbolizer *s = symbolizer_new();

	if (!s || (debug_dir && symbolizer_set_debug_dir(s, debug_dir) < 0)) {
		perror("symbolizer");
		exit(1);
	}
	return s;
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t a = s ? strlen(s) : 0, b = strlen(suffix);

	return s && a >= b && !strcmp(s + a - b, suffix);
}

/* ---- cxx ---- */

static void expect_cxx(struct symbolizer *s, pid_t pid, uint64_t addr, const char *name, const char *mangled)
{
	struct sym_result r;

	CHECK_EQ_INT(symbolizer_resolve(s, pid, addr + 4, false, &r), 1);
	CHECK_STR(r.function, name);
	CHECK_STR(r.system_name, mangled);
	CHECK_EQ_U64(r.function_offset, 4);
	CHECKF(ends_with(r.file, "/cxxchild.cpp") && r.line > 0, "%s:%u", r.file ? r.file : "(null)", r.line);
	CHECK_EQ_U64(r.n_debug_packages, 0);
	CHECK(!r.debuginfo_failed);
}

static int test_cxx(void)
{
	char *argv[] = { (char *)cxx_exe, NULL };
	struct symbolizer *s = new_symbolizer(NULL);
	uint64_t kernel, release;
	struct sym_result r;
	struct child c;

	if (access(cxx_exe, X_OK) < 0) {
		printf("SKIP: no cxxchild: meson found no C++ compiler (apt-get install g++)\n");
		return SKIP;
	}
	if (child_start(argv, &c) < 0)
		return 1;
	kernel = child_value(&c, "kernel");
	release = child_value(&c, "release");
	CHECK_EQ_INT(symbolizer_refresh_process(s, c.pid), 0);
	for (int pass = 0; pass < 2; pass++) {
		expect_cxx(s, c.pid, kernel, "at::native::add_kernel(at::native::Tensor<long> const&, float)",
			   "_ZN2at6native10add_kernelERKNS0_6TensorIlEEf");
		expect_cxx(s, c.pid, release, "c10::intrusive_ptr_release(long)",
			   "_ZN3c1021intrusive_ptr_releaseEl");
		child_stop(&c); /* the second pass: the same after it exited */
	}
	/* a C name keeps no system_name */
	CHECK_EQ_INT(symbolizer_resolve(s, c.pid, kernel + 4, false, &r), 1);
	symbolizer_free(s);
	return check_summary();
}

/* ---- demangle ---- */

static char *repeat(const char *head, const char *part, int n, const char *tail)
{
	size_t len = strlen(head) + n * strlen(part) + strlen(tail) + 1;
	char *s = malloc(len);

	if (!s)
		exit(1);
	strcpy(s, head);
	for (int i = 0; i < n; i++)
		strcat(s, part);
	strcat(s, tail);
	return s;
}

static int test_demangle(void)
{
	char buf[DEMANGLE_OUT_MAX + 1];
	struct name_table t = {};
	char *name;

	CHECK_EQ_INT(demangle("_ZN2at6native10add_kernelERKNS0_6TensorIlEEf", buf, sizeof(buf)), 1);
	CHECK_STR(buf, "at::native::add_kernel(at::native::Tensor<long> const&, float)");
	CHECK_EQ_INT(demangle("_ZN3std2rt10lang_start17h0123456789abcdefE", buf, sizeof(buf)), 1);
	CHECK_STR(buf, "std::rt::lang_start");
	CHECK_EQ_INT(demangle("_RNvCs123_4core3foo", buf, sizeof(buf)), 1);
	CHECK_STR(buf, "core::foo");
	CHECK_EQ_INT(demangle("_ZL5leafiv.lto_priv.0", buf, sizeof(buf)), 1);
	CHECK_STR(buf, "leafi() [clone .lto_priv.0]");
	CHECK_EQ_INT(demangle("_Zfoo", buf, sizeof(buf)), 0);
	CHECK_EQ_INT(demangle("i", buf, sizeof(buf)), 0); /* not "int": no type demangling */
	CHECK_EQ_INT(demangle("main", buf, sizeof(buf)), 0);

	/* f(ns0::ClassA, ns0::ClassA, ...) 300 times: too long with parameters, fine without */
	name = repeat("_Z1fN3ns06ClassAE", "S_", 300, "");
	CHECK_EQ_INT(demangle(name, buf, sizeof(buf)), 1);
	CHECK_STR(buf, "f");
	free(name);
	/* foo::bar<ns0::ClassA, ...> with 101 template arguments, no parameters to drop: cut, "..." */
	name = repeat("_ZN3foo3barIN3ns06ClassAE", "S2_", 100, "EE");
	CHECK_EQ_INT(demangle(name, buf, sizeof(buf)), 1);
	CHECK_EQ_U64(strlen(buf), DEMANGLE_OUT_MAX);
	CHECK(ends_with(buf, "..."));
	CHECK(!strncmp(buf, "foo::bar<ns0::ClassA, ns0::ClassA, ",
		       strlen("foo::bar<ns0::ClassA, ns0::ClassA, ")));
	free(name);
	/* past DEMANGLE_IN_MAX: left as it is */
	name = repeat("_ZN", "10abcdefghij", DEMANGLE_IN_MAX / 12 + 1, "E");
	CHECK_EQ_INT(demangle(name, buf, sizeof(buf)), 0);
	free(name);

	/* the table: once per name, "not mangled" remembered, strings that stay */
	const char *a = demangle_cached(&t, "_ZN3c1021intrusive_ptr_releaseEl");
	const char *b = demangle_cached(&t, "_ZN3c1021intrusive_ptr_releaseEl");

	CHECK_STR(a, "c10::intrusive_ptr_release(long)");
	CHECK(a == b);
	CHECK(demangle_cached(&t, "_Zfoo") == NULL);
	CHECK(demangle_cached(&t, "_Zfoo") == NULL);
	CHECK(demangle_cached(&t, "main") == NULL);
	CHECK_EQ_U64(t.n, 2);
	name_table_done(&t);
	return check_summary();
}

/* ---- minidebug ---- */

/* Fedora's recipe (find-debuginfo's add_minidebug): the symbols .dynsym lacks, in an xz'd ELF. */
static const char make_minidebug[] =
	"in=$1; out=$2\n"
	"nm -D \"$in\" --format=posix --defined-only | awk '{ print $1 }' | sort >$T/dynsyms\n"
	"nm \"$in\" --format=posix --defined-only | awk '{ if ($2 == \"T\" || $2 == \"t\" || $2 == \"D\") print $1 }'"
	" | sort >$T/funcsyms\n"
	"comm -13 $T/dynsyms $T/funcsyms >$T/keep_symbols\n"
	"$OBJCOPY --only-keep-debug \"$in\" $T/debug\n"
	"$OBJCOPY -S --remove-section .gdb_index --remove-section .comment --keep-symbols=$T/keep_symbols"
	" $T/debug $T/mini_debuginfo\n"
	"rm -f $T/mini_debuginfo.xz; xz $T/mini_debuginfo\n"
	"$OBJCOPY --strip-all --remove-section .comment --remove-section .gnu_debuglink \"$in\" \"$out\"\n"
	"$OBJCOPY --add-section .gnu_debugdata=$T/mini_debuginfo.xz \"$out\"\n";

static int spawn_sym(const char *exe, struct child *c)
{
	char *argv[] = { (char *)exe, NULL };

	return child_start(argv, c);
}

static int test_minidebug(void)
{
	struct symbolizer *s = new_symbolizer(tmp_path("nodebug"));
	struct symbolizer_info info;
	struct sym_result r;
	struct child c;
	void *out = NULL;
	size_t len = 0;

	mkdir(tmp_path("nodebug"), 0755);
	if (sh(make_minidebug, sym_exe, tmp_path("mini")) < 0)
		return 1;
	/* garbage where the xz stream should be; an xz of 100 MiB of zeros */
	if (sh("cp $T/mini $T/garbage; head -c 4096 /dev/urandom >$T/junk;"
	       "$OBJCOPY --update-section .gnu_debugdata=$T/junk $T/garbage;"
	       "cp $T/mini $T/bomb; head -c 100M /dev/zero | xz -0 >$T/zeros.xz;"
	       "$OBJCOPY --update-section .gnu_debugdata=$T/zeros.xz $T/bomb",
	       NULL, NULL) < 0)
		return 1;

	if (spawn_sym(tmp_path("mini"), &c) < 0)
		return 1;
	CHECK_EQ_INT(symbolizer_refresh_process(s, c.pid), 0);
	for (int pass = 0; pass < 2; pass++) {
		CHECK_EQ_INT(symbolizer_resolve(s, c.pid, child_value(&c, "static") + 2, false, &r), 1);
		CHECK_STR(r.function, "hpsym_static_target");
		CHECK_EQ_U64(r.function_offset, 2);
		CHECK(!r.debuginfo_failed);
		CHECK_EQ_INT(symbolizer_resolve(s, c.pid, child_value(&c, "main"), false, &r), 1);
		CHECK_STR(r.function, "hpsym_main_target");
		child_stop(&c);
	}
	symbolizer_info(s, &info);
	CHECK_EQ_U64(info.minidebug_failed, 0);

	symbolizer_free(s);
	/* a symbolizer each: the copies have the same build-id as the good one */
	for (int i = 0; i < 2; i++) {
		s = new_symbolizer(tmp_path("nodebug"));
		if (spawn_sym(tmp_path(i ? "bomb" : "garbage"), &c) < 0)
			return 1;
		CHECK_EQ_INT(symbolizer_refresh_process(s, c.pid), 0);
		CHECK_EQ_INT(symbolizer_resolve(s, c.pid, child_value(&c, "static") + 2, false, &r), 0);
		CHECK(r.debuginfo_failed);
		child_stop(&c);
		symbolizer_info(s, &info);
		CHECK_EQ_U64(info.minidebug_failed, 1);
		symbolizer_free(s);
	}

	/* the decompressor's caps, directly: size, then time */
	int fd = open(tmp_path("zeros.xz"), O_RDONLY);
	struct stat st;
	void *xz;

	CHECK(fd >= 0 && fstat(fd, &st) == 0);
	xz = malloc(st.st_size);
	CHECK(xz && read(fd, xz, st.st_size) == st.st_size);
	close(fd);
	CHECK_EQ_INT(minidebug_decompress(xz, st.st_size, 1u << 20, NSEC_PER_SEC, &out, &len), -E2BIG);
	CHECK_EQ_INT(minidebug_decompress(xz, st.st_size, 1u << 30, 0, &out, &len), -ETIME);
	CHECK_EQ_INT(minidebug_decompress(xz, st.st_size, 1u << 30, 60 * NSEC_PER_SEC, &out, &len), 0);
	CHECK_EQ_U64(len, 100u << 20);
	CHECK_EQ_INT(minidebug_decompress(xz, 100, 1u << 30, NSEC_PER_SEC, &out, &len), -EBADMSG);
	free(out);
	free(xz);
	return check_summary();
}

/* ---- lines ---- */

static void expect_inline_chain(struct symbolizer *s, const struct child *c, const char *file_suffix)
{
	struct sym_result r;
	int ret;

	/* a return address: the call is the byte before it, as the snapshot looks it up */
	ret = symbolizer_resolve(s, c->pid, child_value(c, "ret") - 1, false, &r);
	CHECK_EQ_INT(ret, 1);
	CHECK_STR(r.function, "inl_outer");
	CHECK(r.system_name == NULL);
	CHECKF(ends_with(r.file, file_suffix), "%s", r.file ? r.file : "(null)");
	CHECK_EQ_U64(r.line, child_value(c, "outerline"));
	CHECK_EQ_U64(r.n_inlined, 2);
	if (r.n_inlined == 2) {
		CHECK_STR(r.inlined[0].function, "inl_leaf");
		CHECK(ends_with(r.inlined[0].file, file_suffix));
		CHECK_EQ_U64(r.inlined[0].line, child_value(c, "leafline"));
		CHECK_STR(r.inlined[1].function, "inl_mid");
		CHECK(ends_with(r.inlined[1].file, file_suffix));
		CHECK_EQ_U64(r.inlined[1].line, child_value(c, "midline"));
	}
	CHECK(!r.debuginfo_failed);
	printf("%s at %s:%u", r.function, r.file ? r.file : "-", r.line);
	for (size_t i = 0; i < r.n_inlined; i++)
		printf(", inlined %s at %s:%u", r.inlined[i].function,
		       r.inlined[i].file ? r.inlined[i].file : "-", r.inlined[i].line);
	printf("\n");
	/* the function's first instruction: its own line, nothing inlined */
	CHECK_EQ_INT(symbolizer_resolve(s, c->pid, child_value(c, "outer"), false, &r), 1);
	CHECK_STR(r.function, "inl_outer");
	CHECK(ends_with(r.file, file_suffix) && r.line > 0 && r.line < child_value(c, "outerline"));
	CHECK_EQ_U64(r.n_inlined, 0);
}

/* A build-id debug file for in under $T/debug-by-id, and in stripped into out. */
static const char make_debug_file[] = "in=$1; out=$2\n"
				      "id=$(readelf -n \"$in\" | awk '/Build ID/ { print $3 }')\n"
				      "d=$T/debug-by-id/.build-id/$(echo $id | cut -c1-2); mkdir -p $d\n"
				      "$OBJCOPY --only-keep-debug \"$in\" $d/$(echo $id | cut -c3-).debug\n"
				      "$OBJCOPY --strip-all \"$in\" \"$out\"\n";

static int test_lines(void)
{
	struct symbolizer_info info;
	struct child c;
	char *argv[2] = { NULL, NULL };

	if (sh(make_debug_file, inl_exe, tmp_path("inl-stripped")) < 0)
		return 1;
	/* the binary's own DWARF, then the stripped copy's through its debug file (a symbolizer
	 * each: the copy has the same build-id, one symbolizer would take it for the same file) */
	for (int i = 0; i < 2; i++) {
		struct symbolizer *s = new_symbolizer(tmp_path("debug-by-id"));

		argv[0] = (char *)(i ? tmp_path("inl-stripped") : inl_exe);
		if (child_start(argv, &c) < 0)
			return 1;
		CHECK_EQ_INT(symbolizer_refresh_process(s, c.pid), 0);
		expect_inline_chain(s, &c, "/inlchild.c");
		child_stop(&c);
		/* dead, and its files gone from disk: the kept fd still reads them */
		if (i)
			sh("rm -r $T/inl-stripped $T/debug-by-id", NULL, NULL);
		expect_inline_chain(s, &c, "/inlchild.c");
		symbolizer_info(s, &info);
		/* opened as the file was read, not by the lookups */
		CHECK_EQ_U64(info.dwarf_opened, 0);
		CHECK(info.dwarf_preopened_bytes > 0);
		CHECK_EQ_U64(info.dwarf_failed, 0);
		/* the second time round from what the first lookups found */
		CHECK_EQ_U64(info.dwarf_lookups, 2);
		CHECK_EQ_U64(info.dwarf_cached, 2);
		CHECK_EQ_U64(info.dwarf_lines, 2);
		CHECK(info.dwarf_files >= 1);
		symbolizer_free(s);
	}
	return check_summary();
}

/* ---- lines-learned ---- */

/* In a fork, as a snapshot job: inlchild's two addresses resolved (expect_inline_chain),
 * the lookups counted; its symbolizer_learned() bytes into *ret (malloc'ed). The child's
 * exit status is its checks'. */
static int learned_job(struct symbolizer *s, const struct child *c, uint64_t want_lookups, uint64_t want_cached,
		       bool inside, uint8_t **ret, size_t *ret_len)
{
	int fds[2], status = 0;
	uint8_t *buf = NULL;
	size_t len = 0, cap = 0;
	pid_t pid;

	*ret = NULL;
	*ret_len = 0;
	if (pipe(fds) < 0)
		return -errno;
	fflush(NULL);
	pid = fork();
	if (pid == 0) {
		struct symbolizer_info info;
		uint8_t *b;
		size_t n;

		close(fds[0]);
		expect_inline_chain(s, c, "/inlchild.c");
		if (inside) {
			/* another byte of the call instruction, not looked up before: the range the
			 * first job handed back holds it, with the same chain */
			struct sym_result ra, rb;

			CHECK_EQ_INT(symbolizer_resolve(s, c->pid, child_value(c, "ret") - 1, false, &ra), 1);
			CHECK_EQ_INT(symbolizer_resolve(s, c->pid, child_value(c, "ret") - 3, false, &rb), 1);
			CHECK(ra.file && rb.file && !strcmp(ra.file, rb.file) && ra.line == rb.line);
			CHECK_EQ_U64(rb.n_inlined, ra.n_inlined);
			for (size_t i = 0; i < ra.n_inlined && i < rb.n_inlined; i++)
				CHECK(!strcmp(ra.inlined[i].function, rb.inlined[i].function) &&
				      ra.inlined[i].line == rb.inlined[i].line);
			CHECK(!rb.debuginfo_failed);
		} else {
			/* the job itself keeps the range of what it looked up: another byte of that
			 * call instruction is not looked up again */
			struct sym_result rc;

			CHECK_EQ_INT(symbolizer_resolve(s, c->pid, child_value(c, "ret") - 3, false, &rc), 1);
			CHECK(rc.file && rc.n_inlined == 2);
		}
		symbolizer_info(s, &info);
		if (want_lookups) {
			/* and the rows beside in their functions, handed back with them: the
			 * second address may be one of those already */
			CHECK(info.dwarf_around > 0);
			CHECK(info.dwarf_lookups - info.dwarf_around >= 1);
			CHECK_EQ_U64(info.dwarf_lookups - info.dwarf_around + info.dwarf_cached,
				     want_lookups + want_cached);
		} else {
			CHECK_EQ_U64(info.dwarf_lookups, 0);
			CHECK_EQ_U64(info.dwarf_cached, want_cached);
		}
		symbolizer_learned(s, &b, &n);
		CHECK(want_lookups ? n > 0 : n == 0);
		if (n && write(fds[1], b, n) != (ssize_t)n)
			_exit(1);
		/* taken: a second call hands over nothing */
		free(b);
		symbolizer_learned(s, &b, &n);
		CHECK(!b && n == 0);
		fflush(NULL);
		_exit(check_summary());
	}
	close(fds[1]);
	for (;;) {
		ssize_t n;

		if (len == cap) {
			uint8_t *p = realloc(buf, cap = cap ? 2 * cap : 4096);

			if (!p)
				break;
			buf = p;
		}
		n = read(fds[0], buf + len, cap - len);
		if (n <= 0)
			break;
		len += n;
	}
	close(fds[0]);
	waitpid(pid, &status, 0);
	CHECKF(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the job's checks failed (status %#x)", status);
	if (!len) {
		free(buf);
		buf = NULL;
	}
	*ret = buf;
	*ret_len = len;
	return 0;
}

/*
 * Every byte of some code, against what a job's ranges say of it: a job looks up
 * every 13th byte and hands its ranges back; a second job, the DWARF unreadable, answers
 * every byte it can from them alone, and each answer must be what a fresh lookup of that
 * byte says (file, line, the inlined chain). Most bytes must be answered.
 */
struct truth {
	const char *file;
	uint32_t line;
	size_t n_inlined;
	const char *in_fn[SYM_INLINED_MAX], *in_file[SYM_INLINED_MAX];
	uint32_t in_line[SYM_INLINED_MAX];
};

static bool exec_mapping(pid_t pid, const char *path, uint64_t *ret_start, uint64_t *ret_end)
{
	char maps[64], line[PATH_MAX + 128], real[PATH_MAX];
	bool found = false;
	FILE *f;

	if (!realpath(path, real))
		return false;
	snprintf(maps, sizeof(maps), "/proc/%d/maps", pid);
	f = fopen(maps, "re");
	if (!f)
		return false;
	while (!found && fgets(line, sizeof(line), f)) {
		unsigned long long a, b;
		char perms[8], *p = strchr(line, '/');

		if (p)
			p[strcspn(p, "\n")] = 0;
		found = sscanf(line, "%llx-%llx %7s", &a, &b, perms) == 3 && perms[2] == 'x' && p && !strcmp(p, real);
		if (found) {
			*ret_start = a;
			*ret_end = b;
		}
	}
	fclose(f);
	return found;
}

static bool same_as(const struct truth *t, const struct sym_result *r)
{
	if (!t->file != !r->file || (t->file && strcmp(t->file, r->file)) || t->line != r->line ||
	    t->n_inlined != r->n_inlined)
		return false;
	for (size_t i = 0; i < t->n_inlined; i++)
		if (strcmp(t->in_fn[i], r->inlined[i].function) || !t->in_file[i] != !r->inlined[i].file ||
		    (t->in_file[i] && strcmp(t->in_file[i], r->inlined[i].file)) || t->in_line[i] != r->inlined[i].line)
			return false;
	return true;
}

/* [start, end) of pid's code (0, 0: the whole mapping of path), against the ranges a job
 * that looked up every 13th byte handed back. */
static void test_ranges_truth(pid_t cpid, const char *path, uint64_t start, uint64_t end)
{
	struct symbolizer *s = new_symbolizer(NULL), *t = new_symbolizer(NULL);
	_cleanup_free_ struct truth *truth = NULL;
	_cleanup_free_ uint8_t *learned = NULL;
	int fds[2], status = 0;
	size_t len = 0, cap = 0;
	pid_t pid;

	if (!start && !exec_mapping(cpid, path, &start, &end)) {
		CHECKF(false, "no code mapping of %s in %d", path, cpid);
		goto out;
	}
	if (end <= start || end - start > (1u << 20)) {
		CHECKF(false, "[%#llx, %#llx): not a range to check", (unsigned long long)start,
		       (unsigned long long)end);
		goto out;
	}
	CHECK_EQ_INT(symbolizer_refresh_process(s, cpid), 0);
	CHECK_EQ_INT(symbolizer_refresh_process(t, cpid), 0);
	truth = calloc(end - start, sizeof(*truth));
	if (!truth || pipe(fds) < 0)
		goto out;
	for (uint64_t x = start; x < end; x++) {
		struct truth *tr = &truth[x - start];
		struct sym_result r;

		symbolizer_resolve(t, cpid, x, false, &r);
		*tr = (struct truth){ .file = r.file, .line = r.line, .n_inlined = r.n_inlined };
		for (size_t i = 0; i < r.n_inlined; i++) {
			tr->in_fn[i] = r.inlined[i].function;
			tr->in_file[i] = r.inlined[i].file;
			tr->in_line[i] = r.inlined[i].line;
		}
	}
	/* the first job: every 13th byte */
	fflush(NULL);
	pid = fork();
	if (pid == 0) {
		uint8_t *b;
		size_t n;

		close(fds[0]);
		for (uint64_t x = start; x < end; x += 13) {
			struct sym_result r;

			symbolizer_resolve(s, cpid, x, false, &r);
		}
		symbolizer_learned(s, &b, &n);
		if (n && write(fds[1], b, n) != (ssize_t)n)
			_exit(1);
		_exit(0);
	}
	close(fds[1]);
	for (;;) {
		ssize_t n;

		if (len == cap) {
			uint8_t *p = realloc(learned, cap = cap ? 2 * cap : 65536);

			if (!p)
				break;
			learned = p;
		}
		n = read(fds[0], learned + len, cap - len);
		if (n <= 0)
			break;
		len += n;
	}
	close(fds[0]);
	waitpid(pid, &status, 0);
	CHECK_EQ_INT(symbolizer_learn(s, learned, len), 0);
	for (size_t i = 0; i < s->cache.n_buckets; i++)
		for (struct file_key *k = s->cache.buckets[i]; k; k = k->next) {
			CHECK(lines_sorted(k->file));
			dwarf_close(&s->cache.dwarf, k->file);
			k->file->dwarf_err = -EIO;
		}
	/* the second: every byte, from the ranges alone */
	fflush(NULL);
	pid = fork();
	if (pid == 0) {
		size_t answered = 0, wrong = 0, total = 0;

		for (uint64_t x = start; x < end; x++) {
			struct sym_result r;

			symbolizer_resolve(s, cpid, x, false, &r);
			total++;
			if (r.debuginfo_failed)
				continue; /* not in a range: it would have been looked up */
			answered++;
			if (!same_as(&truth[x - start], &r) && wrong++ < 5)
				fprintf(stderr, "%#llx: %s:%u (%zu inlined) from the ranges, %s:%u (%zu inlined) looked up\n",
					(unsigned long long)(x - start), r.file ? r.file : "-", r.line, r.n_inlined,
					truth[x - start].file ? truth[x - start].file : "-", truth[x - start].line,
					truth[x - start].n_inlined);
		}
		printf("ranges: %zu of %zu bytes of %s's code answered, %zu of them wrong\n", answered, total,
		       path, wrong);
		CHECK_EQ_U64(wrong, 0);
		CHECK(answered * 2 > total);
		fflush(NULL);
		_exit(check_summary());
	}
	waitpid(pid, &status, 0);
	CHECKF(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the second job's checks failed (status %#x)", status);
out:
	symbolizer_free(s);
	symbolizer_free(t);
}

static int test_lines_learned(void)
{
	_cleanup_free_ uint8_t *learned = NULL, *again = NULL;
	struct symbolizer *s = new_symbolizer(NULL), *other;
	char *argv[2] = { (char *)inl_exe, NULL };
	struct symbolizer_info info;
	size_t len, again_len;
	uint64_t n_learned;
	struct child c;

	if (child_start(argv, &c) < 0)
		return 1;
	CHECK_EQ_INT(symbolizer_refresh_process(s, c.pid), 0);

	/* a job looks its two addresses up; the daemon keeps what it found */
	CHECK_EQ_INT(learned_job(s, &c, 2, 1, false, &learned, &len), 0);
	symbolizer_info(s, &info);
	CHECK_EQ_U64(info.dwarf_lookups, 0); /* the job's, not this process's */
	CHECK_EQ_U64(info.dwarf_lines, 0);
	CHECK_EQ_INT(symbolizer_learn(s, learned, len), 0);
	symbolizer_info(s, &info);
	n_learned = info.dwarf_learned; /* its two addresses' ranges and those beside them */
	CHECK(n_learned > 2);
	CHECK_EQ_U64(info.dwarf_lines, n_learned);
	for (size_t i = 0; i < s->cache.n_buckets; i++)
		for (struct file_key *k = s->cache.buckets[i]; k; k = k->next)
			CHECK(lines_sorted(k->file));
	/* the same again: nothing new */
	CHECK_EQ_INT(symbolizer_learn(s, learned, len), 0);
	symbolizer_info(s, &info);
	CHECK_EQ_U64(info.dwarf_learned, n_learned);

	/* the DWARF unreadable from here on: the next job gets the same chain from what was kept */
	for (size_t i = 0; i < s->cache.n_buckets; i++)
		for (struct file_key *k = s->cache.buckets[i]; k; k = k->next) {
			dwarf_close(&s->cache.dwarf, k->file);
			k->file->dwarf_err = -EIO;
		}
	CHECK_EQ_INT(learned_job(s, &c, 0, 4, true, &again, &again_len), 0);
	CHECK_EQ_U64(again_len, 0);

	/* in the process that made the symbolizer, a lookup is kept as it is made */
	other = new_symbolizer(NULL);
	CHECK_EQ_INT(symbolizer_refresh_process(other, c.pid), 0);
	expect_inline_chain(other, &c, "/inlchild.c");
	expect_inline_chain(other, &c, "/inlchild.c");
	symbolizer_info(other, &info);
	CHECK_EQ_U64(info.dwarf_lookups, 2);
	CHECK_EQ_U64(info.dwarf_cached, 2);
	CHECK_EQ_U64(info.dwarf_lines, 2);
	symbolizer_learned(other, &again, &again_len); /* nothing written down here */
	CHECK(!again && again_len == 0);

	/* a symbolizer that knows none of the files: every record skipped */
	{
		struct symbolizer *none = new_symbolizer(NULL);

		CHECK_EQ_INT(symbolizer_learn(none, learned, len), 0);
		symbolizer_info(none, &info);
		CHECK_EQ_U64(info.dwarf_learned, 0);
		CHECK_EQ_U64(info.dwarf_lines, 0);
		symbolizer_free(none);
	}
	/* cut anywhere inside a record, or garbage: refused, and nothing kept past the cut */
	if (len > 0) {
		struct symbolizer *fresh = new_symbolizer(NULL);
		uint64_t rejected = 0;

		CHECK_EQ_INT(symbolizer_refresh_process(fresh, c.pid), 0);
		for (size_t cut = 1; cut < len; cut++) {
			int r = symbolizer_learn(fresh, learned, cut);

			CHECK(r == 0 || r == -EBADMSG);
			rejected += r == -EBADMSG;
		}
		CHECK(rejected > 0);
		symbolizer_info(fresh, &info);
		CHECK(info.dwarf_lines < n_learned); /* the records before the cut */
		CHECK_EQ_U64(info.dwarf_learn_dropped, rejected);
		memset(learned, 0xff, len);
		CHECK_EQ_INT(symbolizer_learn(fresh, learned, len), -EBADMSG);
		symbolizer_free(fresh);
	}
	test_ranges_truth(c.pid, inl_exe, 0, 0);
	child_stop(&c);
	symbolizer_free(other);
	symbolizer_free(s);
	return check_summary();
}

/* ---- dwarf-bad ---- */

/* Patches the compression header of path's (compressed) .debug_info to claim 1 TiB. */
static int claim_huge(const char *path)
{
	int fd = open(path, O_RDWR);
	Elf_Scn *scn = NULL;
	size_t shstrndx;
	int r = -ENOENT;
	Elf *e;

	if (fd < 0)
		return -errno;
	e = elf_begin(fd, ELF_C_READ, NULL);
	if (e && elf_getshdrstrndx(e, &shstrndx) == 0)
		while ((scn = elf_nextscn(e, scn))) {
			GElf_Shdr sh;
			const char *n;
			uint64_t huge = 1ull << 40;

			if (!gelf_getshdr(scn, &sh) || !(n = elf_strptr(e, shstrndx, sh.sh_name)))
				continue;
			if (!strcmp(n, ".debug_info") && (sh.sh_flags & SHF_COMPRESSED)) {
				r = pwrite(fd, &huge, 8, sh.sh_offset + 8) == 8 ?
					    0 :
					    -EIO; /* Elf64_Chdr.ch_size */
				break;
			}
		}
	elf_end(e);
	close(fd);
	return r;
}

static int test_dwarf_bad(void)
{
	static const char *const copies[] = { "garbage", "huge", "cut" };
	char *argv[2] = { NULL, NULL };
	uint64_t failed_before = 0;
	struct sym_result r;
	struct child c;

	mkdir(tmp_path("nodebug"), 0755);
	if (sh("head -c 65536 /dev/urandom >$T/junk; cp $1 $T/garbage;"
	       "$OBJCOPY --update-section .debug_info=$T/junk $T/garbage;"
	       "$OBJCOPY --compress-debug-sections=zlib $1 $T/huge;"
	       "$OBJCOPY --dump-section .debug_info=$T/info $1 $T/ignored;"
	       "head -c 100 $T/info >$T/info.cut; cp $1 $T/cut;"
	       "$OBJCOPY --update-section .debug_info=$T/info.cut $T/cut",
	       inl_exe, NULL) < 0)
		return 1;
	CHECK_EQ_INT(claim_huge(tmp_path("huge")), 0);
	for (size_t i = 0; i < ARRAY_SIZE(copies); i++) {
		/* a symbolizer each: the copies share a build-id */
		struct symbolizer *s = new_symbolizer(tmp_path("nodebug"));
		struct symbolizer_info info;

		argv[0] = (char *)tmp_path(copies[i]);
		if (child_start(argv, &c) < 0)
			return 1;
		CHECK_EQ_INT(symbolizer_refresh_process(s, c.pid), 0);
		for (int k = 0; k < 3; k++) {
			CHECK_EQ_INT(symbolizer_resolve(s, c.pid, child_value(&c, "ret") - 1, false, &r), 1);
			CHECK_STR(r.function, "inl_outer");
			CHECKF(r.file == NULL || ends_with(r.file, "inlchild.c"), "%s: %s", copies[i],
			       r.file);
		}
		child_stop(&c);
		symbolizer_info(s, &info);
		printf("%s: DWARF opened %" PRIu64 ", failed %" PRIu64 ", lookups %" PRIu64
		       "; last frame: %s:%u%s\n",
		       copies[i], info.dwarf_opened, info.dwarf_failed, info.dwarf_lookups,
		       r.file ? r.file : "-", r.line, r.debuginfo_failed ? ", debug info failed" : "");
		if (i == 1) {
			/* refused before libdw decompresses anything, once, and said of each frame */
			CHECK(r.debuginfo_failed);
			CHECK_EQ_U64(info.dwarf_failed - failed_before, 1);
			CHECK_EQ_U64(info.dwarf_opened, 0);
		}
		failed_before = info.dwarf_failed;
		symbolizer_free(s);
	}
	return check_summary();
}

/* ---- python ---- */

#define PYTHON "/usr/bin/python3.11"

struct pysym {
	uint64_t vaddr, size;
	char name[128];
};

/* The first function in the debug file's symbol table whose name starts with prefix (type t/T). */
static int find_symbol(const char *debug_file, const char *prefix, char type, struct pysym *ret)
{
	char cmd[PATH_MAX + 64], line[512];
	FILE *p;
	int r = -ENOENT;

	snprintf(cmd, sizeof(cmd), "nm -S --defined-only '%s'", debug_file);
	p = popen(cmd, "r");
	if (!p)
		return -errno;
	while (r < 0 && fgets(line, sizeof(line), p)) {
		unsigned long long a, sz;
		char t, name[128];

		if (sscanf(line, "%llx %llx %c %127s", &a, &sz, &t, name) == 4 && t == type &&
		    !strncmp(name, prefix, strlen(prefix)) && sz > 32 && !strstr(name, ".cold")) {
			*ret = (struct pysym){ .vaddr = a, .size = sz };
			strcpy(ret->name, name);
			r = 0;
		}
	}
	pclose(p);
	return r;
}

/* The address vaddr of python3.11's ELF has in the process: through its PT_LOADs and maps. */
static uint64_t runtime_addr(pid_t pid, uint64_t vaddr)
{
	char path[64], line[512], file[PATH_MAX];
	unsigned long long start, end, off, file_off = UINT64_MAX;
	int fd = open(PYTHON, O_RDONLY);
	Elf *e = fd >= 0 ? elf_begin(fd, ELF_C_READ, NULL) : NULL;
	size_t n = 0;
	FILE *m;

	if (e && elf_getphdrnum(e, &n) == 0)
		for (size_t i = 0; i < n; i++) {
			GElf_Phdr ph;

			if (gelf_getphdr(e, i, &ph) && ph.p_type == PT_LOAD &&
			    vaddr - ph.p_vaddr < ph.p_filesz)
				file_off = vaddr - ph.p_vaddr + ph.p_offset;
		}
	elf_end(e);
	if (fd >= 0)
		close(fd);
	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	m = fopen(path, "r");
	while (m && fgets(line, sizeof(line), m))
		if (sscanf(line, "%llx-%llx %*s %llx %*s %*s %4095s", &start, &end, &off, file) == 4 &&
		    strstr(line, " r-xp ") && !strcmp(file, PYTHON) && file_off - off < end - start) {
			fclose(m);
			return start + file_off - off;
		}
	if (m)
		fclose(m);
	return 0;
}

static int test_python(void)
{
	char *argv[] = { PYTHON, "-c", "import time; print('ready', flush=True); time.sleep(600)", NULL };
	char build_id[2 * BUILD_ID_MAX + 1], debug_file[PATH_MAX];
	struct pysym add, eval;
	struct symbolizer *s, *bare;
	struct sym_result r;
	uint64_t a_add, a_eval;
	struct stat st;
	struct child c;
	Elf *e;
	int fd;

	fd = open(PYTHON, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		printf("SKIP: no %s (apt-get install python3.11)\n", PYTHON);
		return SKIP;
	}
	if (fstat(fd, &st) < 0 || elf_open(fd, &st, &e) < 0)
		return 1;
	elf_build_id(e, build_id);
	elf_end(e);
	close(fd);
	snprintf(debug_file, sizeof(debug_file), "/usr/lib/debug/.build-id/%.2s/%s.debug", build_id,
		 build_id + 2);
	if (access(debug_file, R_OK) < 0) {
		printf("SKIP: no %s: python3.11-dbg is not installed, or not of this python3.11's version"
		       " (apt-get install python3.11-dbg, or scripts/dev deps)\n",
		       debug_file);
		return SKIP;
	}
	if (find_symbol(debug_file, "long_add", 't', &add) < 0 ||
	    find_symbol(debug_file, "_PyEval_EvalFrameDefault", 'T', &eval) < 0) {
		fprintf(stderr, "no long_add or _PyEval_EvalFrameDefault in %s\n", debug_file);
		return 1;
	}
	if (child_start(argv, &c) < 0)
		return 1;
	a_add = runtime_addr(c.pid, add.vaddr + 0x10);
	a_eval = runtime_addr(c.pid, eval.vaddr + 0x100);
	CHECK(a_add && a_eval);
	s = new_symbolizer(NULL);
	bare = new_symbolizer(tmp_path("nodebug"));
	mkdir(tmp_path("nodebug"), 0755);
	CHECK_EQ_INT(symbolizer_refresh_process(s, c.pid), 0);
	CHECK_EQ_INT(symbolizer_refresh_process(bare, c.pid), 0);
	/* the first 32 KiB of the interpreter's loop, inlined code all over: what a job's ranges
	 * answer is what a lookup says */
	test_ranges_truth(c.pid, PYTHON, a_eval - 0x100, a_eval - 0x100 + 32768);
	for (int pass = 0; pass < 2; pass++) {
		CHECK_EQ_INT(symbolizer_resolve(s, c.pid, a_add, false, &r), 1);
		CHECK_STR(r.function, add.name);
		CHECK_EQ_U64(r.function_offset, 0x10);
		CHECKF(ends_with(r.file, "Objects/longobject.c") && r.line > 0, "%s:%u", r.file, r.line);
		printf("%s+0x10 at %s:%u\n", r.function, r.file ? r.file : "-", r.line);
		CHECK_STR(r.build_id, build_id);
		CHECK_EQ_U64(r.n_debug_packages, 0);
		CHECK_EQ_INT(symbolizer_resolve(s, c.pid, a_eval, false, &r), 1);
		CHECK_STR(r.function, "_PyEval_EvalFrameDefault");
		CHECKF(ends_with(r.file, "Python/ceval.c") || ends_with(r.file, ".h"), "%s:%u", r.file,
		       r.line);

		/* no debug file: the dynamic symbols only, and the package that has the rest */
		CHECK_EQ_INT(symbolizer_resolve(bare, c.pid, a_add, false, &r), 0);
		CHECK(r.function == NULL);
		CHECK(r.file == NULL);
		if (access("/var/lib/dpkg/info/python3.11-minimal.list", R_OK) == 0) {
			CHECK_EQ_U64(r.n_debug_packages, 2);
			if (r.n_debug_packages == 2) {
				CHECK_STR(r.debug_packages[0], "python3.11-dbg");
				CHECK_STR(r.debug_packages[1], "python3.11-minimal-dbgsym");
			}
		} else {
			printf("no dpkg list of python3.11-minimal: the debug package is not checked\n");
		}
		CHECK_EQ_INT(symbolizer_resolve(bare, c.pid, a_eval, false, &r), 1); /* exported */
		CHECK_STR(r.function, "_PyEval_EvalFrameDefault");
		child_stop(&c);
	}
	symbolizer_free(s);
	symbolizer_free(bare);
	return check_summary();
}

/* ---- bench ---- */

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * NSEC_PER_SEC + ts.tv_nsec;
}

static uint64_t vm_kib(const char *field)
{
	char line[256];
	uint64_t v = 0;
	FILE *f = fopen("/proc/self/status", "re");

	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, field, strlen(field)))
			v = strtoull(line + strlen(field) + 1, NULL, 10);
	if (f)
		fclose(f);
	return v;
}

struct bench_out {
	uint64_t ns, cpu_ns, hwm_kib, lines, inlined, lookups, dwarf_bytes;
};

static uint64_t cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec * NSEC_PER_SEC + ts.tv_nsec;
}

/* In a fork (a snapshot job's view): resolve every address once; lines off: no DWARF. */
static int bench_job(struct symbolizer *s, pid_t pid, const uint64_t *addrs, size_t n, bool lines,
		     struct bench_out *ret)
{
	int fds[2], status;
	pid_t child;

	if (pipe(fds) < 0)
		return -errno;
	child = fork();
	if (child == 0) {
		struct bench_out o = {};
		struct symbolizer_info info;
		uint64_t t0, c0, hwm0;

		if (!lines)
			for (size_t i = 0; i < s->cache.n_buckets; i++)
				for (struct file_key *k = s->cache.buckets[i]; k; k = k->next)
					k->file->dwarf_err = -ENOTSUP;
		hwm0 = vm_kib("VmRSS:");
		t0 = mono_ns();
		c0 = cpu_ns();
		for (size_t i = 0; i < n; i++) {
			struct sym_result r;

			symbolizer_resolve(s, pid, addrs[i], false, &r);
			o.lines += r.file != NULL;
			o.inlined += r.n_inlined;
		}
		o.ns = mono_ns() - t0;
		o.cpu_ns = cpu_ns() - c0;
		o.hwm_kib = vm_kib("VmHWM:") - hwm0;
		symbolizer_info(s, &info);
		o.lookups = info.dwarf_lookups;
		o.dwarf_bytes = info.dwarf_bytes;
		if (write(fds[1], &o, sizeof(o)) != sizeof(o))
			_exit(1);
		_exit(0);
	}
	close(fds[1]);
	if (child < 0 || read(fds[0], ret, sizeof(*ret)) != sizeof(*ret)) {
		close(fds[0]);
		return -EIO;
	}
	close(fds[0]);
	waitpid(child, &status, 0);
	return 0;
}

static int test_bench(void)
{
	char *argv[] = { PYTHON, "-c", "import time; print('ready', flush=True); time.sleep(600)", NULL };
	char build_id[2 * BUILD_ID_MAX + 1], debug_file[PATH_MAX], cmd[PATH_MAX + 64], line[512];
	_cleanup_free_ uint64_t *addrs = NULL, *vaddrs = NULL;
	size_t n = 0, cap = 0, want = 1000, every;
	struct symbolizer_info info;
	struct symbolizer *s;
	struct stat st;
	struct child c;
	FILE *p;
	Elf *e;
	int fd;

	fd = open(PYTHON, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) < 0 || elf_open(fd, &st, &e) < 0) {
		printf("SKIP: no %s\n", PYTHON);
		return SKIP;
	}
	elf_build_id(e, build_id);
	elf_end(e);
	close(fd);
	snprintf(debug_file, sizeof(debug_file), "/usr/lib/debug/.build-id/%.2s/%s.debug", build_id,
		 build_id + 2);
	snprintf(cmd, sizeof(cmd), "nm -S --defined-only '%s'", debug_file);
	p = popen(cmd, "r");
	while (p && fgets(line, sizeof(line), p)) {
		unsigned long long a, sz;
		char t;

		if (sscanf(line, "%llx %llx %c", &a, &sz, &t) == 3 && (t == 't' || t == 'T') && sz > 16) {
			if (n == cap) {
				cap = cap ? 2 * cap : 4096;
				vaddrs = reallocarray(vaddrs, cap, sizeof(*vaddrs));
				if (!vaddrs)
					return 1;
			}
			vaddrs[n++] = a + sz / 2;
		}
	}
	if (p)
		pclose(p);
	if (n < 100) {
		printf("SKIP: no python3.11-dbg (%s)\n", debug_file);
		return SKIP;
	}
	if (child_start(argv, &c) < 0)
		return 1;
	s = new_symbolizer(NULL);
	uint64_t r0 = mono_ns(), rc0 = cpu_ns(), rss0 = vm_kib("VmRSS:");

	CHECK_EQ_INT(symbolizer_refresh_process(s, c.pid), 0);
	printf("the refresh that read the files: %.1f ms CPU (%.1f ms wall), RSS +%.1f MiB\n",
	       (cpu_ns() - rc0) / 1e6, (mono_ns() - r0) / 1e6, (vm_kib("VmRSS:") - rss0) / 1024.0);
	symbolizer_info(s, &info);
	printf("daemon's symbolizer: %" PRIu64
	       " files, %.1f MiB of symbol tables and maps, %.1f KiB of names,"
	       " %" PRIu64 " files kept open for DWARF, %.1f MiB of DWARF opened as they were read\n",
	       info.elf_files, info.bytes / 1048576.0, info.names_bytes / 1024.0, info.dwarf_files,
	       info.dwarf_preopened_bytes / 1048576.0);
	every = MAX(n / want, (size_t)1);
	addrs = calloc(want, sizeof(*addrs));
	if (!addrs)
		return 1;
	for (size_t i = 0, k = 0; i < n && k < want; i += every)
		addrs[k++] = runtime_addr(c.pid, vaddrs[i]);
	for (size_t frames = 100; frames <= want; frames *= 10)
		for (int lines = 0; lines < 2; lines++)
			for (int round = 0; round < 3; round++) {
				struct bench_out o;

				if (bench_job(s, c.pid, addrs, frames, lines, &o) < 0)
					return 1;
				printf("%4zu frames, DWARF %-3s: %7.2f ms CPU (%.1f us a frame; %.2f ms wall), job's"
				       " peak memory +%.1f MiB, DWARF held %.1f MiB; lines %" PRIu64
				       ", inlined %" PRIu64 "\n",
				       frames, lines ? "on" : "off", o.cpu_ns / 1e6, o.cpu_ns / 1e3 / frames,
				       o.ns / 1e6, o.hwm_kib / 1024.0, o.dwarf_bytes / 1048576.0, o.lines,
				       o.inlined);
			}
	child_stop(&c);
	symbolizer_free(s);
	return check_summary();
}

int main(int argc, char **argv)
{
	int r;

	if (argc < 7) {
		fprintf(stderr, "usage: %s TEST CXXCHILD INLCHILD SYMCHILD LIBHPSYMTEST OBJCOPY\n", argv[0]);
		return 2;
	}
	cxx_exe = argv[2];
	inl_exe = argv[3];
	sym_exe = argv[4];
	sym_lib = argv[5];
	objcopy = argv[6];
	if (access(objcopy, X_OK) < 0) {
		printf("SKIP: no objcopy (apt-get install binutils)\n");
		return SKIP;
	}
	if (elf_version(EV_CURRENT) == EV_NONE)
		return 1;
	if (!mkdtemp(tmpdir)) {
		perror("mkdtemp");
		return 1;
	}
	have_tmpdir = true;
	atexit(cleanup_tmpdir);
	if (!strcmp(argv[1], "cxx"))
		r = test_cxx();
	else if (!strcmp(argv[1], "demangle"))
		r = test_demangle();
	else if (!strcmp(argv[1], "minidebug"))
		r = test_minidebug();
	else if (!strcmp(argv[1], "lines"))
		r = test_lines();
	else if (!strcmp(argv[1], "lines-learned"))
		r = test_lines_learned();
	else if (!strcmp(argv[1], "dwarf-bad"))
		r = test_dwarf_bad();
	else if (!strcmp(argv[1], "python"))
		r = test_python();
	else if (!strcmp(argv[1], "bench"))
		r = test_bench();
	else {
		fprintf(stderr, "unknown test %s\n", argv[1]);
		r = 2;
	}
	return r;
}
