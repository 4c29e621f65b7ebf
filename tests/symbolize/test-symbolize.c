// SPDX-License-Identifier: GPL-2.0-only
/*
 * Tests of daemon/symbolize/ against real processes and files. The first argument names
 * the test; the rest are the child (symchild, PIE, frame pointers), its shared library and
 * objcopy:
 *
 *   user        the child's functions in the executable (global and local), in its shared
 *               library, in libc and in the vDSO resolve to their names and offsets, and
 *               still do once the child is dead; an address outside every mapping is
 *               outside; after forget, nothing resolves;
 *   shared      a file is read once for all the processes that map it, also under another
 *               inode with the same build-id, and dropped with the last of them;
 *   stripped    a --strip-all copy gives module+offset (the same offset as the original)
 *               and counts as unresolved, while its library still resolves;
 *   debuglink   a stripped copy with .gnu_debuglink resolves through the debug file next to
 *               it, in .debug/, under the debug dir; not when the CRC does not match;
 *   buildid     a stripped copy resolves through <debug dir>/.build-id/xx/rest.debug, not
 *               through a file there with another build-id;
 *   jit         /tmp/perf-PID.map names code in an anonymous executable mapping, an entry
 *               appended later is found, and it all still resolves after exit;
 *   namespace   the same for a child in its own PID and mount namespaces (unshare; root):
 *               the perf map in its private /tmp, named by its pid inside;
 *   kernel      pipe_read (anon_pipe_read since 6.15) from /proc/kallsyms, at +0 and +0x10
 *               (skipped when kptr_restrict hides the addresses);
 *   kernel-fake a made-up kallsyms and modules: aliases, symbol ends, module bounds, a reload
 *               when modules change, and addresses hidden by kptr_restrict, reported;
 *   elf-caps    copies of the child that run as well but are not read: one whose header claims
 *               more than 65536 sections (the count in section 0, the file long enough to
 *               hold them), one larger than 4 GiB (sparse): module+offset, counted as failed;
 *   async       the refresh read on a worker (daemon/worker.c) and noted when it is dispatched:
 *               asked for again while on the worker, it runs once more; refused in a forked
 *               child; a file cached when it started and dropped before it is noted is read
 *               by a second one; forgotten while on the worker, or the symbolizer freed,
 *               nothing is noted when it comes back;
 *   bench       (a meson benchmark) cold refresh and warm resolves per second.
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <libgen.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../unit/check.h"
#include "macro.h"
#include "symbolize.h"
#include "worker.h"

static const char *child_exe, *lib_path, *objcopy;
static const char *child_libdir; /* LD_LIBRARY_PATH of children; the library's own dir unless set */
static char tmpdir[] = "/tmp/hpsym-test.XXXXXX";
static bool have_tmpdir;

struct child {
	pid_t pid;
	bool reaped;
	FILE *out;
	uint64_t main, statik, lib, libc, vdso, jit;
};

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

static void make_tmpdir(void)
{
	if (!mkdtemp(tmpdir)) {
		perror("mkdtemp");
		exit(1);
	}
	have_tmpdir = true;
	atexit(cleanup_tmpdir);
}

static int copy_file(const char *from, const char *to)
{
	char buf[65536];
	int in = open(from, O_RDONLY | O_CLOEXEC), out;
	ssize_t n;

	if (in < 0)
		return -errno;
	out = open(to, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0755);
	if (out < 0) {
		close(in);
		return -errno;
	}
	while ((n = read(in, buf, sizeof(buf))) > 0)
		if (write(out, buf, n) != n) {
			n = -1;
			break;
		}
	close(in);
	close(out);
	return n < 0 ? -EIO : 0;
}

/* Runs argv; 0 when it exited 0. */
static int run(char *const argv[])
{
	int status;
	pid_t pid = fork();

	if (pid < 0)
		return -errno;
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		execv(argv[0], argv);
		_exit(127);
	}
	if (waitpid(pid, &status, 0) < 0)
		return -errno;
	if (!WIFEXITED(status) || WEXITSTATUS(status)) {
		fprintf(stderr, "%s exited with status %d\n", argv[0], status);
		return -EIO;
	}
	return 0;
}

static int objcopy_run(const char *a, const char *b, const char *c)
{
	char *argv[] = { (char *)objcopy, (char *)a, (char *)b, (char *)c, NULL };

	return run(argv);
}

/* Runs argv (exe and jit when NULL); reads "name=0x..." lines up to "ready". */
static int child_spawn(const char *exe, bool jit, char *const *argv, struct child *ret)
{
	char line[256], libdir[PATH_MAX];
	int fds[2];

	snprintf(libdir, sizeof(libdir), "%s", lib_path);
	if (pipe2(fds, O_CLOEXEC) < 0)
		return -errno;
	*ret = (struct child){};
	ret->pid = fork();
	if (ret->pid < 0)
		return -errno;
	if (ret->pid == 0) {
		char *plain[] = { (char *)exe, jit ? "jit" : NULL, NULL };

		if (!argv)
			argv = plain;
		/* a test that crashes leaves no child behind to hold meson's pipes */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		dup2(fds[1], 1);
		setenv("LD_LIBRARY_PATH", child_libdir ? child_libdir : dirname(libdir), 1);
		execv(argv[0], argv);
		_exit(127);
	}
	close(fds[1]);
	ret->out = fdopen(fds[0], "r");
	if (!ret->out)
		return -errno;
	while (fgets(line, sizeof(line), ret->out)) {
		char name[32];
		unsigned long long v;

		if (!strcmp(line, "ready\n"))
			return 0;
		if (sscanf(line, "%31[a-z]=%llx", name, &v) == 2 ||
		    sscanf(line, "%31[a-z]=(nil)", name) == 1) {
			if (strstr(line, "(nil)"))
				v = 0;
			if (!strcmp(name, "main"))
				ret->main = v;
			else if (!strcmp(name, "static"))
				ret->statik = v;
			else if (!strcmp(name, "lib"))
				ret->lib = v;
			else if (!strcmp(name, "libc"))
				ret->libc = v;
			else if (!strcmp(name, "vdso"))
				ret->vdso = v;
			else if (!strcmp(name, "jit"))
				ret->jit = v;
		}
	}
	fprintf(stderr, "%s ended before \"ready\"\n", exe);
	return -EIO;
}

static int child_start(const char *exe, bool jit, struct child *ret)
{
	return child_spawn(exe, jit, NULL, ret);
}

static bool child_wait_line(struct child *c, const char *want)
{
	char line[256];

	while (fgets(line, sizeof(line), c->out))
		if (!strcmp(line, want))
			return true;
	return false;
}

static void child_stop(struct child *c)
{
	/* c->pid stays: the tests resolve its addresses after it is gone */
	if (c->pid > 0 && !c->reaped) {
		kill(c->pid, SIGKILL);
		waitpid(c->pid, NULL, 0);
		c->reaped = true;
	}
	if (c->out)
		fclose(c->out);
	c->out = NULL;
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t a = s ? strlen(s) : 0, b = strlen(suffix);

	return s && a >= b && !strcmp(s + a - b, suffix);
}

static struct symbolizer *new_symbolizer(const char *debug_dir)
{
	struct symbolizer *s = symbolizer_new();

	if (!s) {
		perror("symbolizer_new");
		exit(1);
	}
	if (debug_dir && symbolizer_set_debug_dir(s, debug_dir) < 0)
		exit(1);
	return s;
}

/* addr resolves to name+off in a module whose path ends with module_suffix. */
static void expect_fn(struct symbolizer *s, uint32_t pid, uint64_t addr, const char *name, uint64_t off,
		      const char *module_suffix)
{
	struct sym_result r;
	int ret = symbolizer_resolve(s, pid, addr, false, &r);

	CHECKF(ret == 1, "0x%" PRIx64 " (%s+0x%" PRIx64 "): resolve returned %d", addr, name, off, ret);
	CHECK_STR(r.function, name);
	CHECK_EQ_U64(r.function_offset, off);
	CHECK(r.in_exec_mapping);
	CHECK(!r.jit);
	CHECKF(ends_with(r.module, module_suffix), "module %s, want *%s", r.module ? r.module : "(null)",
	       module_suffix);
	CHECK(r.build_id != NULL);
	CHECK_EQ_U64(r.module_offset, addr - r.map_start + r.map_offset);
	CHECK(addr >= r.map_start && addr < r.map_limit);
}

static void expect_unresolved(struct symbolizer *s, uint32_t pid, uint64_t addr, const char *module_suffix)
{
	struct sym_result r;
	int ret = symbolizer_resolve(s, pid, addr, false, &r);

	CHECKF(ret == 0, "0x%" PRIx64 ": resolve returned %d (%s)", addr, ret,
	       r.function ? r.function : "(null)");
	CHECK(r.function == NULL);
	CHECK(r.in_exec_mapping);
	CHECKF(ends_with(r.module, module_suffix), "module %s, want *%s", r.module ? r.module : "(null)",
	       module_suffix);
}

static int test_user(void)
{
	struct symbolizer *s = new_symbolizer(NULL);
	uint64_t resolved, unresolved;
	struct sym_result r;
	char exe_real[PATH_MAX];
	struct child c;
	int pass, ret;

	if (!realpath(child_exe, exe_real))
		return 1;
	if (child_start(child_exe, false, &c) < 0)
		return 1;
	ret = symbolizer_refresh_process(s, c.pid);
	CHECKF(ret == 0, "refresh: %s", strerror(-ret));
	for (pass = 0; pass < 2; pass++) {
		printf("pass %d: child %s\n", pass, pass ? "dead" : "alive");
		expect_fn(s, c.pid, c.main, "hpsym_main_target", 0, exe_real);
		expect_fn(s, c.pid, c.main + 5, "hpsym_main_target", 5, exe_real);
		expect_fn(s, c.pid, c.statik + 3, "hpsym_static_target", 3, exe_real);
		expect_fn(s, c.pid, c.lib, "hpsym_lib_target", 0, "/libhpsymtest.so");
		expect_fn(s, c.pid, c.lib + 7, "hpsym_lib_target", 7, "/libhpsymtest.so");
		ret = symbolizer_resolve(s, c.pid, c.main, false, &r);
		CHECKF(r.build_id && strlen(r.build_id) == 40, "build-id \"%s\"", r.build_id);
		CHECK_STR(r.module, exe_real);
		ret = symbolizer_resolve(s, c.pid, c.libc, false, &r);
		CHECKF(ret == 1 && r.function && strstr(r.function, "getpid"), "libc getpid: %s",
		       r.function ? r.function : "(null)");
		CHECKF(r.module && strstr(r.module, "libc"), "module %s", r.module ? r.module : "(null)");
		if (c.vdso && getauxval(AT_SYSINFO_EHDR)) {
			ret = symbolizer_resolve(s, c.pid, c.vdso, false, &r);
			CHECKF(ret == 1 && r.function && strstr(r.function, "clock_gettime"), "vdso: %s",
			       r.function ? r.function : "(null)");
			CHECK_STR(r.module, "[vdso]");
		} else {
			/* valgrind hides the vDSO from the program it runs */
			printf("no vDSO here or in the child, not checked\n");
		}
		/* nothing is mapped at 4 KiB: a frame-pointer walk gone wrong */
		ret = symbolizer_resolve(s, c.pid, 0x1000, false, &r);
		CHECK_EQ_INT(ret, 0);
		CHECK(!r.in_exec_mapping && !r.module && !r.function);
		if (pass == 0) {
			child_stop(&c);
			ret = symbolizer_refresh_process(s, c.pid);
			CHECKF(ret == -ENOENT || ret == -ESRCH, "refresh after exit: %d", ret);
		}
	}
	/* a pid never noted */
	ret = symbolizer_resolve(s, 0x7ffffff0, c.main, false, &r);
	CHECK(ret == 0 && !r.module && !r.function);
	symbolizer_stats(s, &resolved, &unresolved);
	CHECK_EQ_U64(resolved, 2 * 7 + (c.vdso && getauxval(AT_SYSINFO_EHDR) ? 2 : 0));
	CHECK_EQ_U64(unresolved, 2 + 1);
	symbolizer_forget_process(s, c.pid);
	ret = symbolizer_resolve(s, c.pid, c.main, false, &r);
	CHECK(ret == 0 && !r.module && !r.function && !r.in_exec_mapping);
	symbolizer_free(s);
	return check_summary();
}

/*
 * symbolizer_mb: a file that would take the symbolizer past its budget is not kept (its
 * frames stay module and offset, counted); a budget of exactly what the process needs
 * keeps everything.
 */
static int test_budget(void)
{
	struct symbolizer *tiny = new_symbolizer(NULL), *free_s = new_symbolizer(NULL), *exact;
	struct symbolizer_info info;
	char exe_real[PATH_MAX];
	struct child c;
	int ret;

	if (!realpath(child_exe, exe_real))
		return 1;
	if (child_start(child_exe, false, &c) < 0)
		return 1;
	symbolizer_set_budget(tiny, 1);
	ret = symbolizer_refresh_process(tiny, c.pid);
	CHECKF(ret == 0, "refresh: %s", strerror(-ret));
	expect_unresolved(tiny, c.pid, c.main, exe_real);
	expect_unresolved(tiny, c.pid, c.lib, "/libhpsymtest.so");
	symbolizer_info(tiny, &info);
	CHECKF(info.over_budget >= 3, "over_budget %" PRIu64 ", want the executable, the library and libc",
	       info.over_budget);
	CHECK_EQ_U64(info.budget, 1);
	CHECK_EQ_U64(info.elf_files, 0);

	ret = symbolizer_refresh_process(free_s, c.pid);
	CHECKF(ret == 0, "refresh: %s", strerror(-ret));
	symbolizer_info(free_s, &info);
	CHECK_EQ_U64(info.over_budget, 0);
	exact = new_symbolizer(NULL);
	symbolizer_set_budget(exact, info.bytes);
	printf("the child needs %" PRIu64 " bytes of symbols and mappings\n", info.bytes);
	ret = symbolizer_refresh_process(exact, c.pid);
	CHECKF(ret == 0, "refresh: %s", strerror(-ret));
	expect_fn(exact, c.pid, c.main, "hpsym_main_target", 0, exe_real);
	expect_fn(exact, c.pid, c.lib, "hpsym_lib_target", 0, "/libhpsymtest.so");
	symbolizer_info(exact, &info);
	CHECK_EQ_U64(info.over_budget, 0);
	child_stop(&c);
	symbolizer_free(tiny);
	symbolizer_free(free_s);
	symbolizer_free(exact);
	return check_summary();
}

/*
 * Files are read once: a second process of the same binary adds no file; one that maps a
 * copy of the library (another inode, the same build-id) shares its table. References
 * keep the tables until the last process that maps them is forgotten.
 */
static int test_shared(void)
{
	struct symbolizer *s = new_symbolizer(NULL);
	struct symbolizer_info info;
	uint64_t files;
	struct child a, b, c;

	make_tmpdir();
	if (copy_file(lib_path, tmp_path("libhpsymtest.so")) < 0)
		return 1;
	if (child_start(child_exe, false, &a) < 0 || child_start(child_exe, false, &b) < 0)
		return 1;
	child_libdir = tmpdir;
	if (child_start(child_exe, false, &c) < 0)
		return 1;
	CHECK_EQ_INT(symbolizer_refresh_process(s, a.pid), 0);
	symbolizer_info(s, &info);
	files = info.elf_files;
	printf("%" PRIu64 " files for the first process\n", files);
	CHECK(files >= 4); /* symchild, libhpsymtest.so, libc, ld.so */
	CHECK_EQ_U64(info.elf_failed, 0);
	CHECK_EQ_INT(symbolizer_refresh_process(s, b.pid), 0);
	CHECK_EQ_INT(symbolizer_refresh_process(s, c.pid), 0);
	symbolizer_info(s, &info);
	CHECK_EQ_U64(info.elf_files, files);
	CHECK_EQ_U64(info.processes, 3);
	expect_fn(s, c.pid, c.lib + 2, "hpsym_lib_target", 2, tmp_path("libhpsymtest.so"));
	expect_fn(s, a.pid, a.lib + 2, "hpsym_lib_target", 2, lib_path);

	child_stop(&a);
	child_stop(&b);
	child_stop(&c);
	symbolizer_forget_process(s, a.pid);
	symbolizer_forget_process(s, b.pid);
	expect_fn(s, c.pid, c.main, "hpsym_main_target", 0, "/symchild");
	expect_fn(s, c.pid, c.lib, "hpsym_lib_target", 0, tmp_path("libhpsymtest.so"));
	symbolizer_info(s, &info);
	CHECK_EQ_U64(info.elf_files, files);
	symbolizer_forget_process(s, c.pid);
	symbolizer_forget_process(s, c.pid);
	symbolizer_info(s, &info);
	CHECK_EQ_U64(info.elf_files, 0);
	CHECK_EQ_U64(info.processes, 0);
	CHECK_EQ_U64(info.mappings, 0);
	symbolizer_free(s);
	return check_summary();
}

static int need_objcopy(void)
{
	if (access(objcopy, X_OK) < 0) {
		printf("SKIP: no objcopy at %s\n", objcopy);
		return 77;
	}
	make_tmpdir();
	return 0;
}

static int test_stripped(void)
{
	uint64_t main_off, resolved, unresolved;
	const char *stripped;
	struct symbolizer *s;
	struct sym_result r;
	struct child c;
	int ret = need_objcopy();

	if (ret)
		return ret;
	stripped = tmp_path("symchild-stripped");
	if (copy_file(child_exe, stripped) < 0 || objcopy_run("--strip-all", stripped, NULL) < 0)
		return 1;
	mkdir(tmp_path("nodebug"), 0755);

	/* the original, for the offset the stripped copy must give */
	s = new_symbolizer(tmp_path("nodebug"));
	if (child_start(child_exe, false, &c) < 0)
		return 1;
	CHECK_EQ_INT(symbolizer_refresh_process(s, c.pid), 0);
	CHECK_EQ_INT(symbolizer_resolve(s, c.pid, c.main + 2, false, &r), 1);
	main_off = r.module_offset;
	child_stop(&c);
	symbolizer_free(s);

	s = new_symbolizer(tmp_path("nodebug"));
	if (child_start(stripped, false, &c) < 0)
		return 1;
	CHECK_EQ_INT(symbolizer_refresh_process(s, c.pid), 0);
	expect_unresolved(s, c.pid, c.main + 2, "/symchild-stripped");
	ret = symbolizer_resolve(s, c.pid, c.main + 2, false, &r);
	CHECK_EQ_U64(r.module_offset, main_off);
	CHECK_EQ_U64(r.module_offset, c.main + 2 - r.map_start + r.map_offset);
	CHECKF(strlen(r.build_id) == 40, "build-id \"%s\"", r.build_id);
	printf("stripped: %s+0x%" PRIx64 "\n", r.module, r.module_offset);
	expect_unresolved(s, c.pid, c.statik, "/symchild-stripped");
	expect_fn(s, c.pid, c.lib + 1, "hpsym_lib_target", 1, "/libhpsymtest.so");
	symbolizer_stats(s, &resolved, &unresolved);
	CHECK_EQ_U64(resolved, 1);
	CHECK_EQ_U64(unresolved, 3);
	child_stop(&c);
	symbolizer_free(s);
	return check_summary();
}

/* One debug file placement: resolves (or not) through it, with a fresh symbolizer. */
static void debuglink_case(const struct child *c, const char *label, const char *debug_dir, bool want)
{
	struct symbolizer *s = new_symbolizer(debug_dir);
	struct sym_result r;
	int ret;

	printf("debuglink: %s\n", label);
	CHECK_EQ_INT(symbolizer_refresh_process(s, c->pid), 0);
	if (want) {
		expect_fn(s, c->pid, c->main + 4, "hpsym_main_target", 4, "/symchild-dl");
		expect_fn(s, c->pid, c->statik, "hpsym_static_target", 0, "/symchild-dl");
	} else {
		ret = symbolizer_resolve(s, c->pid, c->main + 4, false, &r);
		CHECKF(ret == 0 && !r.function, "%s: resolved to %s", label, r.function);
	}
	symbolizer_free(s);
}

static int test_debuglink(void)
{
	char dbg_dir[128], dbg_sub[PATH_MAX];
	const char *bin, *dbg;
	struct child c;
	int ret = need_objcopy();
	FILE *f;

	if (ret)
		return ret;
	mkdir(tmp_path("dl"), 0755);
	mkdir(tmp_path("dl/.debug"), 0755);
	mkdir(tmp_path("nodebug"), 0755);
	bin = tmp_path("dl/symchild-dl");
	dbg = tmp_path("dl/symchild-dl.debug");
	if (copy_file(child_exe, bin) < 0 || objcopy_run("--only-keep-debug", bin, dbg) < 0 ||
	    objcopy_run("--strip-all", bin, NULL) < 0)
		return 1;
	{
		char link[PATH_MAX + 32];

		snprintf(link, sizeof(link), "--add-gnu-debuglink=%s", dbg);
		if (objcopy_run(link, bin, NULL) < 0)
			return 1;
	}
	if (child_start(bin, false, &c) < 0)
		return 1;
	debuglink_case(&c, "next to the binary", tmp_path("nodebug"), true);

	if (rename(dbg, tmp_path("dl/.debug/symchild-dl.debug")) < 0)
		return 1;
	debuglink_case(&c, "in .debug/", tmp_path("nodebug"), true);

	/* <debug dir>/<the binary's dir>/name */
	snprintf(dbg_dir, sizeof(dbg_dir), "%s/root", tmpdir);
	snprintf(dbg_sub, sizeof(dbg_sub), "%s%s/dl", dbg_dir, tmpdir);
	{
		char *argv[] = { "/bin/mkdir", "-p", dbg_sub, NULL };

		if (run(argv) < 0)
			return 1;
	}
	strcat(dbg_sub, "/symchild-dl.debug");
	if (rename(tmp_path("dl/.debug/symchild-dl.debug"), dbg_sub) < 0)
		return 1;
	debuglink_case(&c, "under the debug dir", dbg_dir, true);

	/* one more byte: the CRC no longer matches */
	if (rename(dbg_sub, dbg) < 0)
		return 1;
	f = fopen(dbg, "a");
	if (!f)
		return 1;
	fputc(0, f);
	fclose(f);
	debuglink_case(&c, "CRC mismatch", tmp_path("nodebug"), false);
	child_stop(&c);
	return check_summary();
}

static int test_buildid(void)
{
	char dir[128], path[PATH_MAX];
	const char *bin, *dbg;
	struct symbolizer *s;
	struct sym_result r;
	char build_id[130];
	struct child c;
	int ret = need_objcopy();

	if (ret)
		return ret;
	bin = tmp_path("symchild-bid");
	dbg = tmp_path("symchild-bid.debug");
	mkdir(tmp_path("debug"), 0755);
	mkdir(tmp_path("debug/.build-id"), 0755);
	if (copy_file(child_exe, bin) < 0 || objcopy_run("--only-keep-debug", bin, dbg) < 0 ||
	    objcopy_run("--strip-all", bin, NULL) < 0)
		return 1;
	if (child_start(bin, false, &c) < 0)
		return 1;

	s = new_symbolizer(tmp_path("debug"));
	CHECK_EQ_INT(symbolizer_refresh_process(s, c.pid), 0);
	CHECK_EQ_INT(symbolizer_resolve(s, c.pid, c.main, false, &r), 0);
	snprintf(build_id, sizeof(build_id), "%s", r.build_id);
	symbolizer_free(s);
	if (strlen(build_id) < 4) {
		printf("SKIP: the child has no build-id (linker without --build-id)\n");
		child_stop(&c);
		return 77;
	}
	snprintf(dir, sizeof(dir), "%s/debug/.build-id/%.2s", tmpdir, build_id);
	mkdir(dir, 0755);
	snprintf(path, sizeof(path), "%s/%s.debug", dir, build_id + 2);

	/* another ELF file under that name: its build-id differs, it is not used */
	if (copy_file(lib_path, path) < 0)
		return 1;
	s = new_symbolizer(tmp_path("debug"));
	CHECK_EQ_INT(symbolizer_refresh_process(s, c.pid), 0);
	CHECK_EQ_INT(symbolizer_resolve(s, c.pid, c.main, false, &r), 0);
	symbolizer_free(s);

	if (rename(dbg, path) < 0)
		return 1;
	s = new_symbolizer(tmp_path("debug"));
	CHECK_EQ_INT(symbolizer_refresh_process(s, c.pid), 0);
	expect_fn(s, c.pid, c.main + 1, "hpsym_main_target", 1, "/symchild-bid");
	expect_fn(s, c.pid, c.statik + 1, "hpsym_static_target", 1, "/symchild-bid");
	symbolizer_free(s);
	child_stop(&c);
	return check_summary();
}

static int test_jit(void)
{
	struct symbolizer *s = new_symbolizer(NULL);
	struct symbolizer_info info;
	char map[64], module[64];
	struct sym_result r;
	struct child c;
	int ret;

	if (child_start(child_exe, true, &c) < 0)
		return 1;
	snprintf(map, sizeof(map), "/tmp/perf-%d.map", c.pid);
	snprintf(module, sizeof(module), "/tmp/perf-%d.map", c.pid); /* same PID namespace */
	if (!c.jit) {
		fprintf(stderr, "the child mapped no JIT page\n");
		return 1;
	}
	CHECK_EQ_INT(symbolizer_refresh_process(s, c.pid), 0);
	for (int pass = 0; pass < 2; pass++) {
		ret = symbolizer_resolve(s, c.pid, c.jit, false, &r);
		CHECK_EQ_INT(ret, 1);
		CHECK_STR(r.function, "jit_one");
		CHECK_EQ_U64(r.function_offset, 0);
		CHECK(r.jit && r.in_exec_mapping);
		CHECK_STR(r.module, module);
		CHECK_EQ_U64(r.map_start, c.jit);
		ret = symbolizer_resolve(s, c.pid, c.jit + 0x45, false, &r);
		CHECK_EQ_INT(ret, 1);
		CHECK_STR(r.function, "jit_two [tier 1]");
		CHECK_EQ_U64(r.function_offset, 5);
		/* in the anonymous mapping, named by no line */
		ret = symbolizer_resolve(s, c.pid, c.jit + 0x100, false, &r);
		CHECK_EQ_INT(ret, 0);
		CHECK(!r.function && !r.jit && r.in_exec_mapping);
		CHECK_STR(r.module, "//anon");
		CHECK_EQ_U64(r.module_offset, 0x100);
		if (pass == 0) {
			/* an entry the JIT adds later, without an mmap: found on a miss, a second on */
			kill(c.pid, SIGUSR1);
			CHECK(child_wait_line(&c, "appended\n"));
			usleep(1100 * 1000);
			ret = symbolizer_resolve(s, c.pid, c.jit + 0x81, false, &r);
			CHECK_EQ_INT(ret, 1);
			CHECK_STR(r.function, "jit_three");
			child_stop(&c);
			unlink(map);
		}
	}
	ret = symbolizer_resolve(s, c.pid, c.jit + 0x81, false, &r);
	CHECK_EQ_INT(ret, 1);
	CHECK_STR(r.function, "jit_three");
	symbolizer_info(s, &info);
	CHECK(info.perfmap_rejected >= 1);
	symbolizer_free(s);
	unlink(map);
	return check_summary();
}

/*
 * The child in its own PID and mount namespaces, with a /tmp of its own: its perf map is
 * /tmp/perf-1.map there, readable only through /proc/PID/root, and named by its pid inside.
 */
static int test_namespace(void)
{
	char path[64], buf[64];
	/* a private /tmp; if the child itself lives under /tmp (a checkout there), its
	 * directory is bound back in through an fd of the old /tmp */
	char *argv[] = { "/usr/bin/unshare",
			 "-m",
			 "-p",
			 "-f",
			 "--kill-child",
			 "/bin/sh",
			 "-c",
			 "exec 4</tmp && mount -t tmpfs tmpfs /tmp && "
			 "case \"$0\" in /tmp/*) d=${0%/*}; mkdir -p \"$d\" && "
			 "mount -c --bind \"/proc/self/fd/4${d#/tmp}\" \"$d\" ;; esac && exec \"$0\" jit",
			 (char *)child_exe,
			 NULL };
	struct symbolizer *s;
	struct sym_result r;
	struct child c;
	pid_t inner;
	FILE *f;
	int pass;

	if (access(argv[0], X_OK) < 0) {
		printf("SKIP: no %s\n", argv[0]);
		return 77;
	}
	if (child_spawn(argv[0], false, argv, &c) < 0) {
		printf("SKIP: unshare -m -p did not run here (no CAP_SYS_ADMIN?)\n");
		child_stop(&c);
		return 77;
	}
	/* c.pid is unshare's; the child is its only child */
	snprintf(path, sizeof(path), "/proc/%d/task/%d/children", c.pid, c.pid);
	f = fopen(path, "re");
	if (!f || !fgets(buf, sizeof(buf), f) || sscanf(buf, "%d", &inner) != 1) {
		printf("SKIP: cannot read %s\n", path);
		if (f)
			fclose(f);
		child_stop(&c);
		return 77;
	}
	fclose(f);
	printf("child: pid %d outside, 1 inside\n", inner);
	s = new_symbolizer(NULL);
	CHECK_EQ_INT(symbolizer_refresh_process(s, inner), 0);
	for (pass = 0; pass < 2; pass++) {
		CHECK_EQ_INT(symbolizer_resolve(s, inner, c.jit + 0x41, false, &r), 1);
		CHECK_STR(r.function, "jit_two [tier 1]");
		CHECK_STR(r.module, "/tmp/perf-1.map");
		CHECK(r.jit);
		expect_fn(s, inner, c.main + 1, "hpsym_main_target", 1, "/symchild");
		expect_fn(s, inner, c.lib + 1, "hpsym_lib_target", 1, "/libhpsymtest.so");
		if (pass == 0) {
			kill(inner, SIGKILL);
			child_stop(&c);
		}
	}
	symbolizer_free(s);
	return check_summary();
}

static uint64_t kallsyms_find(const char *name)
{
	FILE *f = fopen("/proc/kallsyms", "re");
	char line[512], sym[256], type;
	unsigned long long addr;
	uint64_t found = UINT64_MAX;

	if (!f)
		return UINT64_MAX;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%llx %c %255s", &addr, &type, sym) == 3 && !strcmp(sym, name) &&
		    !strchr(line, '[')) {
			found = addr;
			break;
		}
	fclose(f);
	return found;
}

static int test_kernel(void)
{
	const char *name = "pipe_read";
	struct symbolizer *s;
	struct symbolizer_info info;
	struct sym_result r;
	uint64_t addr = kallsyms_find(name);
	int ret;

	if (addr == UINT64_MAX) {
		name = "anon_pipe_read"; /* renamed in 6.15 */
		addr = kallsyms_find(name);
	}
	if (addr == UINT64_MAX) {
		printf("SKIP: neither pipe_read nor anon_pipe_read in /proc/kallsyms\n");
		return 77;
	}
	if (addr == 0) {
		printf("SKIP: kallsyms addresses are hidden (kptr_restrict; run as root)\n");
		return 77;
	}
	s = new_symbolizer(NULL);
	printf("%s at 0x%" PRIx64 "\n", name, addr);
	ret = symbolizer_resolve(s, 0, addr, true, &r);
	CHECK_EQ_INT(ret, 1);
	CHECK_STR(r.function, name);
	CHECK_EQ_U64(r.function_offset, 0);
	CHECK_STR(r.module, "[kernel.kallsyms]");
	CHECK(r.in_exec_mapping);
	ret = symbolizer_resolve(s, 0, addr + 0x10, true, &r);
	CHECK_EQ_INT(ret, 1);
	CHECK_STR(r.function, name);
	CHECK_EQ_U64(r.function_offset, 0x10);
	symbolizer_info(s, &info);
	CHECK(!info.kernel_hidden);
	CHECK(info.kernel_symbols > 1000);
	CHECK_EQ_U64(info.kernel_loads, 1);
	printf("%" PRIu64 " kernel text symbols\n", info.kernel_symbols);
	symbolizer_free(s);
	return check_summary();
}

static int write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	if (!f)
		return -errno;
	fputs(text, f);
	return fclose(f) ? -errno : 0;
}

static void expect_kfn(struct symbolizer *s, uint64_t addr, const char *name, uint64_t off,
		       const char *module)
{
	struct sym_result r;
	int ret = symbolizer_resolve(s, 0, addr, true, &r);

	if (!name) {
		CHECKF(ret == 0 && !r.function, "0x%" PRIx64 ": %s", addr, r.function);
		CHECK_STR(r.module, "[kernel.kallsyms]");
		CHECK(!r.in_exec_mapping);
		return;
	}
	CHECKF(ret == 1, "0x%" PRIx64 " (%s): %d", addr, name, ret);
	CHECK_STR(r.function, name);
	CHECK_EQ_U64(r.function_offset, off);
	CHECK_STR(r.module, module);
	CHECK_EQ_U64(r.module_offset, addr);
}

static int test_kernel_fake(void)
{
	const char *ks, *mods;
	static const char kallsyms_text[] = "ffffffff81000000 T _stext\n"
					    "ffffffff81000000 T _text\n"
					    "ffffffff81001000 T func_a\n"
					    "ffffffff81001000 t func_a_alias\n"
					    "ffffffff81002000 t func_b\n"
					    "ffffffff81003000 D some_data\n"
					    "ffffffff81004000 T _etext\n"
					    "ffffffff82000000 D data_after\n"
					    "ffffffffc0001000 t mod_one\t[mymod]\n"
					    "ffffffffc0001100 t mod_two\t[mymod]\n"
					    "ffffffffc0001800 d mod_data\t[mymod]\n";
	struct symbolizer_info info;
	struct symbolizer *s;
	struct sym_result r;
	FILE *f;

	make_tmpdir();
	ks = tmp_path("kallsyms");
	mods = tmp_path("modules");
	if (write_file(ks, kallsyms_text) < 0 ||
	    write_file(mods, "mymod 8192 0 - Live 0xffffffffc0001000\n") < 0)
		return 1;
	s = new_symbolizer(NULL);
	CHECK_EQ_INT(symbolizer_set_kernel_files(s, ks, mods), 0);
	expect_kfn(s, 0xffffffff81000010, "_stext", 0x10, "[kernel.kallsyms]");
	expect_kfn(s, 0xffffffff81001000, "func_a", 0, "[kernel.kallsyms]");
	expect_kfn(s, 0xffffffff81001ff0, "func_a", 0xff0, "[kernel.kallsyms]");
	/* data is no symbol end; _etext is */
	expect_kfn(s, 0xffffffff81003500, "func_b", 0x1500, "[kernel.kallsyms]");
	expect_kfn(s, 0xffffffff81004000, NULL, 0, NULL);
	expect_kfn(s, 0xffffffff80000000, NULL, 0, NULL);
	expect_kfn(s, 0xffffffffc0001050, "mod_one", 0x50, "[mymod]");
	/* mod_two runs to the module's end, not past it */
	expect_kfn(s, 0xffffffffc0002fff, "mod_two", 0x1eff, "[mymod]");
	expect_kfn(s, 0xffffffffc0003000, NULL, 0, NULL);
	symbolizer_info(s, &info);
	CHECK_EQ_U64(info.kernel_loads, 1);
	CHECK(!info.kernel_hidden);
	CHECK_EQ_U64(info.kernel_unresolved, 3);

	/* a module is loaded: the next resolve a second later reads kallsyms again */
	f = fopen(ks, "a");
	if (!f)
		return 1;
	fputs("ffffffffc0010000 t new_fn\t[newmod]\n", f);
	fclose(f);
	if (write_file(mods, "mymod 8192 0 - Live 0xffffffffc0001000\n"
			     "newmod 4096 0 - Live 0xffffffffc0010000\n") < 0)
		return 1;
	expect_kfn(s, 0xffffffffc0010010, NULL, 0, NULL); /* within the second: not yet */
	usleep(1100 * 1000);
	expect_kfn(s, 0xffffffffc0010010, "new_fn", 0x10, "[newmod]");
	symbolizer_info(s, &info);
	CHECK_EQ_U64(info.kernel_loads, 2);
	/* a use count going up is no change */
	if (write_file(mods, "mymod 8192 3 - Live 0xffffffffc0001000\n"
			     "newmod 4096 1 - Live 0xffffffffc0010000\n") < 0)
		return 1;
	usleep(1100 * 1000);
	expect_kfn(s, 0xffffffffc0010010, "new_fn", 0x10, "[newmod]");
	symbolizer_info(s, &info);
	CHECK_EQ_U64(info.kernel_loads, 2);
	symbolizer_free(s);

	/* kptr_restrict: every address reads 0 */
	if (write_file(ks, "0000000000000000 T _stext\n0000000000000000 T func_a\n") < 0)
		return 1;
	s = new_symbolizer(NULL);
	CHECK_EQ_INT(symbolizer_set_kernel_files(s, ks, tmp_path("no-modules")), 0);
	CHECK_EQ_INT(symbolizer_resolve(s, 0, 0xffffffff81001000, true, &r), 0);
	CHECK(!r.function);
	CHECK_STR(r.module, "[kernel.kallsyms]");
	CHECK_EQ_U64(r.module_offset, 0xffffffff81001000);
	CHECK(r.in_exec_mapping); /* nothing to judge by: not called a bad frame */
	symbolizer_info(s, &info);
	CHECK(info.kernel_hidden);
	CHECK_EQ_U64(info.kernel_unresolved, 1);
	symbolizer_free(s);
	return check_summary();
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Not a pass/fail test: prints the cost of a cold refresh and of warm resolves. */
static int bench(void)
{
	struct symbolizer_info info;
	struct symbolizer *s;
	struct sym_result r;
	uint64_t addrs[4096], seed = 42, sum = 0;
	struct child c, sleeper = {};
	double t0, t1;
	long n = 0;
	int i;

	sleeper.pid = fork();
	if (sleeper.pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		execl("/bin/sleep", "sleep", "60", NULL);
		_exit(127);
	}
	usleep(200 * 1000); /* exec'ed by now */
	if (child_start(child_exe, false, &c) < 0)
		return 1;

	s = new_symbolizer(NULL);
	t0 = now_s();
	CHECK_EQ_INT(symbolizer_refresh_process(s, sleeper.pid), 0);
	t1 = now_s();
	symbolizer_info(s, &info);
	printf("cold refresh of /bin/sleep (sleep, libc, ld.so: %" PRIu64 " files, and the vDSO; %" PRIu64
	       " KiB of tables): %.2f ms\n",
	       info.elf_files, info.bytes / 1024, (t1 - t0) * 1e3);
	t0 = now_s();
	CHECK_EQ_INT(symbolizer_refresh_process(s, c.pid), 0);
	t1 = now_s();
	printf("refresh of symchild, libc and ld.so cached: %.2f ms\n", (t1 - t0) * 1e3);
	t0 = now_s();
	CHECK_EQ_INT(symbolizer_refresh_process(s, c.pid), 0);
	t1 = now_s();
	printf("refresh again, nothing changed: %.3f ms\n", (t1 - t0) * 1e3);

	/* addresses within 64 KiB after each known function, libc's mostly */
	for (i = 0; i < 4096; i++) {
		uint64_t base = i % 4 == 0 ? c.main : i % 4 == 1 ? c.lib : c.libc;

		addrs[i] = base + check_rand(&seed) % (i % 4 < 2 ? 64 : 65536);
	}
	t0 = now_s();
	do {
		for (i = 0; i < 4096; i++)
			sum += symbolizer_resolve(s, c.pid, addrs[i], false, &r);
		n += 4096;
	} while (now_s() - t0 < 1.0);
	t1 = now_s();
	printf("warm user resolves: %.1f M/s (%.0f ns each, %.0f%% found)\n", n / (t1 - t0) / 1e6,
	       (t1 - t0) / n * 1e9, 100.0 * sum / n);

	t0 = now_s();
	symbolizer_resolve(s, 0, 0, true, &r);
	t1 = now_s();
	symbolizer_info(s, &info);
	printf("kallsyms load: %.1f ms (%" PRIu64 " text symbols%s)\n", (t1 - t0) * 1e3, info.kernel_symbols,
	       info.kernel_hidden ? ", addresses hidden" : "");
	if (!info.kernel_hidden && info.kernel_symbols) {
		uint64_t kaddr = kallsyms_find("_stext");

		for (i = 0; i < 4096; i++)
			addrs[i] = kaddr + check_rand(&seed) % (16 << 20);
		n = 0;
		sum = 0;
		t0 = now_s();
		do {
			for (i = 0; i < 4096; i++)
				sum += symbolizer_resolve(s, 0, addrs[i], true, &r);
			n += 4096;
		} while (now_s() - t0 < 1.0);
		t1 = now_s();
		printf("warm kernel resolves: %.1f M/s (%.0f ns each)\n", n / (t1 - t0) / 1e6,
		       (t1 - t0) / n * 1e9);
	}
	symbolizer_free(s);
	child_stop(&c);
	child_stop(&sleeper);
	return check_summary();
}

/* A copy of the child, made by patch(fd, header); 0, 77 (not a 64-bit LSB ELF), or 1. */
static int patched_copy(const char *path, int (*patch)(int fd, const unsigned char *h))
{
	unsigned char h[64];
	int fd, r;

	if (copy_file(child_exe, path) < 0)
		return 1;
	fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0 || pread(fd, h, sizeof(h), 0) != sizeof(h))
		return 1;
	if (h[EI_CLASS] != ELFCLASS64 || h[EI_DATA] != ELFDATA2LSB) {
		printf("SKIP: the child is not a 64-bit little-endian ELF\n");
		close(fd);
		return 77;
	}
	r = patch(fd, h);
	close(fd);
	return r < 0 ? 1 : 0;
}

/* e_shnum 0: the count is section 0's sh_size, one more than the cap */
static int patch_sections(int fd, const unsigned char *h)
{
	uint64_t shoff, count = 65537;
	uint16_t zero = 0;

	memcpy(&shoff, h + 0x28, sizeof(shoff));
	if (pwrite(fd, &zero, sizeof(zero), 0x3c) != sizeof(zero) ||
	    pwrite(fd, &count, sizeof(count), shoff + 0x20) != sizeof(count))
		return -1;
	return ftruncate(fd, shoff + count * 64);
}

static int patch_size(int fd, const unsigned char *h)
{
	return ftruncate(fd, (4LL << 30) + 1);
}

static int test_elf_caps(void)
{
	static const char *const names[] = { "symchild-sections", "symchild-huge" };
	int (*const patches[])(int, const unsigned char *) = { patch_sections, patch_size };

	make_tmpdir();
	for (size_t i = 0; i < ARRAY_SIZE(names); i++) {
		struct symbolizer_info info;
		struct symbolizer *s;
		char suffix[64];
		struct child c;
		int r = patched_copy(tmp_path(names[i]), patches[i]);

		if (r)
			return r;
		s = new_symbolizer(NULL);
		if (child_start(tmp_path(names[i]), false, &c) < 0)
			return 1;
		CHECK_EQ_INT(symbolizer_refresh_process(s, c.pid), 0);
		snprintf(suffix, sizeof(suffix), "/%s", names[i]);
		expect_unresolved(s, c.pid, c.main + 2, suffix);
		expect_fn(s, c.pid, c.lib + 1, "hpsym_lib_target", 1, "/libhpsymtest.so");
		symbolizer_info(s, &info);
		CHECK(info.elf_failed >= 1);
		child_stop(&c);
		symbolizer_free(s);
		unlink(tmp_path(names[i]));
	}
	return check_summary();
}

/* Dispatches w until nothing of pid's is on it; false after 10 s. */
static bool settle(struct symbolizer *s, struct worker *w, uint32_t pid)
{
	for (int i = 0; i < 1000 && symbolizer_refresh_in_flight(s, pid); i++) {
		struct pollfd pfd = { .fd = worker_fd(w), .events = POLLIN };

		if (poll(&pfd, 1, 10) > 0)
			CHECK(worker_dispatch(w) >= 0);
	}
	return !symbolizer_refresh_in_flight(s, pid);
}

/* Dispatches w until n items have been back; false after 10 s. */
static bool drain(struct worker *w, uint64_t n)
{
	struct worker_stats st;

	for (int i = 0; i < 1000; i++) {
		struct pollfd pfd = { .fd = worker_fd(w), .events = POLLIN };

		worker_stats(w, &st);
		if (st.completed + st.abandoned >= n) {
			CHECK(worker_dispatch(w) >= 0);
			return true;
		}
		if (poll(&pfd, 1, 10) > 0)
			CHECK(worker_dispatch(w) >= 0);
	}
	return false;
}

static int test_async(void)
{
	struct symbolizer *s = new_symbolizer(NULL);
	struct worker *w = worker_new(8);
	struct symbolizer_info info;
	struct sym_result r;
	struct child b, c;
	int status;
	pid_t pid;

	if (!w) {
		perror("worker_new");
		return 1;
	}
	if (child_start(child_exe, false, &c) < 0)
		return 1;

	/* read on the worker, noted only when dispatched here */
	CHECK_EQ_INT(symbolizer_refresh_process_async(s, w, c.pid), 0);
	CHECK(symbolizer_refresh_in_flight(s, c.pid));
	CHECK_EQ_INT(symbolizer_resolve(s, c.pid, c.main + 1, false, &r), 0);
	CHECK(settle(s, w, c.pid));
	expect_fn(s, c.pid, c.main + 1, "hpsym_main_target", 1, "/symchild");
	expect_fn(s, c.pid, c.lib + 1, "hpsym_lib_target", 1, "/libhpsymtest.so");
	symbolizer_info(s, &info);
	CHECK_EQ_U64(info.refreshes, 1);
	CHECK_EQ_U64(info.processes, 1);

	/* asked for again while on the worker: once more after it, not twice */
	CHECK_EQ_INT(symbolizer_refresh_process_async(s, w, c.pid), 0);
	CHECK_EQ_INT(symbolizer_refresh_process_async(s, w, c.pid), 0);
	CHECK_EQ_INT(symbolizer_refresh_process_async(s, w, c.pid), 0);
	CHECK(settle(s, w, c.pid));
	symbolizer_info(s, &info);
	CHECK_EQ_U64(info.refreshes, 3);
	CHECK_EQ_U64(info.refresh_abandoned + info.refresh_rejected, 0);
	expect_fn(s, c.pid, c.lib + 1, "hpsym_lib_target", 1, "/libhpsymtest.so");

	/* a forked child (a snapshot job) has no worker: it refreshes in its own thread */
	fflush(NULL);
	pid = fork();
	if (pid == 0)
		_exit(symbolizer_refresh_process_async(s, w, c.pid) == -ECHILD &&
				      symbolizer_refresh_process(s, c.pid) == 0 ?
			      0 :
			      1);
	CHECK(pid > 0 && waitpid(pid, &status, 0) == pid);
	CHECKF(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child status 0x%x", status);

	/* forgotten while on the worker: what comes back is dropped */
	CHECK_EQ_INT(symbolizer_refresh_process_async(s, w, c.pid), 0);
	symbolizer_forget_process(s, c.pid);
	CHECK(!symbolizer_refresh_in_flight(s, c.pid));
	CHECK(drain(w, 4));
	symbolizer_info(s, &info);
	CHECK_EQ_U64(info.processes, 0);
	CHECK_EQ_U64(info.refreshes, 3);
	CHECK_EQ_INT(symbolizer_resolve(s, c.pid, c.main + 1, false, &r), 0);

	/* files cached when the view was made (b's), gone when it is applied: read on a second go */
	if (child_start(child_exe, false, &b) < 0)
		return 1;
	CHECK_EQ_INT(symbolizer_refresh_process(s, b.pid), 0);
	symbolizer_info(s, &info);
	CHECK_EQ_U64(info.refreshes, 4);
	CHECK_EQ_INT(symbolizer_refresh_process_async(s, w, c.pid), 0);
	symbolizer_forget_process(s, b.pid);
	symbolizer_info(s, &info);
	CHECK_EQ_U64(info.elf_files, 0);
	CHECK(settle(s, w, c.pid));
	symbolizer_info(s, &info);
	CHECK_EQ_U64(info.refreshes, 6);
	expect_fn(s, c.pid, c.main + 1, "hpsym_main_target", 1, "/symchild");
	expect_fn(s, c.pid, c.lib + 1, "hpsym_lib_target", 1, "/libhpsymtest.so");

	/* the symbolizer freed with a refresh on the worker, the worker after it */
	CHECK_EQ_INT(symbolizer_refresh_process_async(s, w, c.pid), 0);
	symbolizer_free(s);
	CHECK(drain(w, 7));
	worker_free(w);
	child_stop(&b);
	child_stop(&c);
	return check_summary();
}

int main(int argc, char **argv)
{
	const char *test;

	if (argc < 5) {
		fprintf(stderr, "usage: %s TEST SYMCHILD LIBHPSYMTEST OBJCOPY\n", argv[0]);
		return 1;
	}
	test = argv[1];
	child_exe = argv[2];
	lib_path = argv[3];
	objcopy = argv[4];
	setvbuf(stdout, NULL, _IOLBF, 0);
	alarm(25);
	if (!strcmp(test, "user"))
		return test_user();
	if (!strcmp(test, "shared"))
		return test_shared();
	if (!strcmp(test, "stripped"))
		return test_stripped();
	if (!strcmp(test, "debuglink"))
		return test_debuglink();
	if (!strcmp(test, "buildid"))
		return test_buildid();
	if (!strcmp(test, "jit"))
		return test_jit();
	if (!strcmp(test, "namespace"))
		return test_namespace();
	if (!strcmp(test, "kernel"))
		return test_kernel();
	if (!strcmp(test, "kernel-fake"))
		return test_kernel_fake();
	if (!strcmp(test, "elf-caps"))
		return test_elf_caps();
	if (!strcmp(test, "async"))
		return test_async();
	if (!strcmp(test, "budget"))
		return test_budget();
	if (!strcmp(test, "bench"))
		return bench();
	fprintf(stderr, "unknown test %s\n", test);
	return 1;
}
