// SPDX-License-Identifier: GPL-2.0-only
/*
 * The CFI unwinder (daemon/symbolize/unwind.c, cfi.c) on real processes: each one is
 * stopped with ptrace where it runs, its registers taken (PTRACE_GETREGSET) and the top of
 * its stack copied (process_vm_readv, UNWIND_COPY bytes from the stack pointer), which is
 * what the BPF side copies at a sample, and the copy unwound and symbolized. The first
 * argument names the test:
 *
 *   nofp BIN    chain built -O2 -fomit-frame-pointer: every stop unwinds leaf, middle, main
 *               and on to _start (complete), with no frame-pointer step;
 *   fpleaf BIN  chain built with frame pointers and a frameless leaf: the CFI unwind gives
 *               leaf, middle, main, complete; a frame-pointer walk of the same copy gives
 *               leaf then main (middle is lost: the leaf case), and where both work, from
 *               main on, the two agree frame for frame;
 *   python      Debian's /usr/bin/python3.11 (built without frame pointers) in a Python
 *               loop: unwound to _start through _PyEval_EvalFrameDefault and Py_BytesMain;
 *               the depths printed (skipped, 77, without python3.11);
 *   exited BIN  nofp's stacks unwound again after the process is gone (the mappings and
 *               their CFI are kept as the symbolizer keeps them);
 *   replaced BIN a copy of nofp's binary, running, replaced on disk by a file of garbage (a
 *               rename over it, as a package upgrade does) and its mappings noted again:
 *               its stacks still unwind, to _start (the mapping is the old inode, whose
 *               CFI was copied when it was read);
 *   hostile BIN a copy cut short (stack_copy), a pc in no mapping (no_mapping), a copy of
 *               random bytes under real registers, a copy where every word points back at
 *               itself (a loop), a depth of 3 (depth): each ends, within its bounds, and
 *               is counted by how;
 *   held BIN    an off-CPU copy (HP_EV_RAWUSTACK) whose first unwind runs out of time, as
 *               a process's first does on a slow machine (its budget set to 0 here): the
 *               copy is held, and the interval's record that reuses its walk gets it
 *               unwound again, to _start; one that keeps running out of time is given up
 *               after 3 unwinds (CFI made to be slow costs its budget 3 times, not once
 *               an interval); one held for a mapping not read yet, unwound again at each
 *               interval meanwhile, still gets its 3 tries at the time once it is read;
 *   system      the CFI of every shared library in the system's library directory, of
 *               the programs in /usr/bin and of libtorch's libraries (python3-torch) is accepted by the checks cfi.c makes before libdw
 *               sees it (none of them refused as hostile);
 *   bench       (a meson benchmark) the time of one unwind of python3.11's stack.
 */
#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <inttypes.h>
#include <libelf.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../unit/check.h"
#include "macro.h"
#include "rawsample.h"
#include "symbolize.h"
#include "symbolize/internal.h"

#define SKIP 77
#define UNWIND_COPY (16u << 10) /* bytes of stack copied, as the BPF side does */
#define FRAMES_MAX 128
#define STOPS 10
#define PYTHON "/usr/bin/python3.11"
#if defined(__x86_64__)
#define MULTIARCH "x86_64-linux-gnu"
#else
#define MULTIARCH "aarch64-linux-gnu"
#endif

struct child {
	pid_t pid;
	FILE *out;
};

/* Starts argv with its stdout on a pipe and waits for its "ready" line (python: any line). */
static int child_start(struct child *c, char *const argv[])
{
	char line[128];
	int p[2];

	if (pipe(p) < 0)
		return -errno;
	c->pid = fork();
	if (c->pid < 0)
		return -errno;
	if (c->pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		dup2(p[1], STDOUT_FILENO);
		close(p[0]);
		close(p[1]);
		execv(argv[0], argv);
		_exit(127);
	}
	close(p[1]);
	c->out = fdopen(p[0], "r");
	if (!c->out || !fgets(line, sizeof(line), c->out))
		return -EIO;
	usleep(50 * 1000); /* from the print into the loop */
	return 0;
}

static void child_stop(struct child *c)
{
	if (c->pid > 0) {
		kill(c->pid, SIGKILL);
		waitpid(c->pid, NULL, 0);
		c->pid = 0;
	}
	if (c->out)
		fclose(c->out);
	c->out = NULL;
}

struct capture {
	struct unwind_regs regs;
	unsigned char stack[UNWIND_COPY];
	size_t len;
};

/* Stops pid where it runs: its registers by DWARF number and UNWIND_COPY bytes from its sp. */
static int capture(pid_t pid, struct capture *ret)
{
	struct user_regs_struct ur;
	struct iovec io = { &ur, sizeof(ur) }, local, remote;
	struct unwind_regs *r = &ret->regs;
	int status, err = 0;
	uint64_t sp;
	ssize_t n;

	*r = (struct unwind_regs){};
	if (ptrace(PTRACE_ATTACH, pid, NULL, NULL) < 0)
		return -errno;
	if (waitpid(pid, &status, 0) < 0 || !WIFSTOPPED(status)) {
		err = -ECHILD;
		goto out;
	}
	if (ptrace(PTRACE_GETREGSET, pid, (void *)(uintptr_t)NT_PRSTATUS, &io) < 0) {
		err = -errno;
		goto out;
	}
#if defined(__x86_64__)
	const uint64_t x[17] = { ur.rax, ur.rdx, ur.rcx, ur.rbx, ur.rsi, ur.rdi, ur.rbp, ur.rsp, ur.r8,
				 ur.r9,  ur.r10, ur.r11, ur.r12, ur.r13, ur.r14, ur.r15, ur.rip };

	memcpy(r->r, x, sizeof(x));
	r->valid = (1ull << 17) - 1;
	sp = ur.rsp;
#elif defined(__aarch64__)
	memcpy(r->r, ur.regs, 31 * sizeof(uint64_t));
	r->r[31] = ur.sp;
	r->r[32] = ur.pc;
	r->valid = (1ull << 33) - 1;
	sp = ur.sp;
#endif
	/* what the stack has from sp up, as much as is mapped of UNWIND_COPY: one remote iovec a
	 * page, so that a read stops at the first page that is not mapped */
	{
		struct iovec rv[UNWIND_COPY / 4096 + 1];
		size_t nv = 0, off = 0;

		while (off < UNWIND_COPY) {
			size_t want = MIN((size_t)4096 - ((sp + off) & 4095), UNWIND_COPY - off);

			rv[nv++] = (struct iovec){ (void *)(uintptr_t)(sp + off), want };
			off += want;
		}
		local = (struct iovec){ ret->stack, UNWIND_COPY };
		n = process_vm_readv(pid, &local, 1, rv, nv, 0);
		ret->len = n > 0 ? (size_t)n : 0;
		(void)remote;
	}
out:
	ptrace(PTRACE_DETACH, pid, NULL, NULL);
	return err;
}

/* The function of each frame, "?" when unresolved. */
static void names_of(struct symbolizer *s, pid_t pid, const uint64_t *frames, size_t n, const char **ret)
{
	for (size_t i = 0; i < n; i++) {
		struct sym_result sr;

		/* a return address less one: the call, not what follows it */
		symbolizer_resolve(s, pid, i ? frames[i] - 1 : frames[i], false, &sr);
		ret[i] = sr.function ? sr.function : "?";
	}
}

static void print_stack(const char *what, const char **names, size_t n, const struct unwind_result *u)
{
	printf("%s (%zu frames, %s, %zu by frame pointer):", what, n, u ? unwind_stop_name(u->stop) : "-",
	       u ? u->fp_steps : 0);
	for (size_t i = n; i > 0; i--)
		printf("%s%s", i == n ? " " : ";", names[i - 1]);
	printf("\n");
}

/* A frame-pointer walk of the copy, as the kernel does one: pc, then the rbp chain. */
static size_t fp_walk(const struct capture *c, uint64_t *frames, size_t max)
{
#if defined(__x86_64__)
	const int pc_reg = 16, sp_reg = 7, fp_reg = 6;
#else
	const int pc_reg = 32, sp_reg = 31, fp_reg = 29;
#endif
	uint64_t base = c->regs.r[sp_reg], fp = c->regs.r[fp_reg];
	size_t n = 0;

	frames[n++] = c->regs.r[pc_reg];
	while (n < max && fp >= base && fp - base + 16 <= c->len) {
		uint64_t next, ra;

		memcpy(&next, c->stack + (fp - base), 8);
		memcpy(&ra, c->stack + (fp - base) + 8, 8);
		if (!ra)
			break;
		frames[n++] = ra;
		if (next <= fp)
			break;
		fp = next;
	}
	return n;
}

static ssize_t find_name(const char **names, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(names[i], name))
			return (ssize_t)i;
	return -1;
}

/* The chain's stops: leaf, middle, main innermost first, on to _start. */
static void check_chain(const char **names, size_t n, const struct unwind_result *u)
{
	CHECKF(n >= 4 && !strcmp(names[0], "leaf") && !strcmp(names[1], "middle") && !strcmp(names[2], "main"),
	       "frames: %s %s %s", n > 0 ? names[0] : "", n > 1 ? names[1] : "", n > 2 ? names[2] : "");
	CHECKF(u->stop == UNWIND_END, "stopped: %s", unwind_stop_name(u->stop));
	CHECKF(n && !strcmp(names[n - 1], "_start"), "outermost: %s", n ? names[n - 1] : "");
}

static int test_chain(const char *bin, bool fp)
{
	char *argv[] = { (char *)bin, NULL };
	struct symbolizer *s = symbolizer_new();
	struct capture *c = calloc(1, sizeof(*c));
	struct child ch = {};
	int r;

	if (!s || !c)
		return 1;
	r = child_start(&ch, argv);
	CHECK_EQ_INT(r, 0);
	CHECK_EQ_INT(symbolizer_refresh_process(s, ch.pid), 0);
	for (int i = 0; r == 0 && i < STOPS; i++) {
		uint64_t frames[FRAMES_MAX], fpf[FRAMES_MAX];
		const char *names[FRAMES_MAX], *fpn[FRAMES_MAX];
		struct unwind_result u;
		size_t nfp;

		CHECK_EQ_INT(capture(ch.pid, c), 0);
		CHECK(c->len >= 256);
		CHECK_EQ_INT(symbolizer_unwind(s, ch.pid, &c->regs, c->stack, c->len, frames, FRAMES_MAX, &u), 0);
		names_of(s, ch.pid, frames, u.n, names);
		if (i == 0)
			print_stack("cfi", names, u.n, &u);
		check_chain(names, u.n, &u);
		CHECK_EQ_U64(u.fp_steps, 0);
		if (!fp)
			continue;
		nfp = fp_walk(c, fpf, FRAMES_MAX);
		names_of(s, ch.pid, fpf, nfp, fpn);
		if (i == 0)
			print_stack("frame pointers", fpn, nfp, NULL);
		/* the leaf set up no frame: its caller is lost to the frame pointer walk */
		CHECKF(nfp >= 2 && !strcmp(fpn[0], "leaf") && !strcmp(fpn[1], "main"), "fp: %s %s",
		       nfp > 0 ? fpn[0] : "", nfp > 1 ? fpn[1] : "");
		CHECK(find_name(fpn, nfp, "middle") < 0);
		/* from main on, where main's frame pointer holds, the two agree */
		CHECK(nfp >= 2 && u.n >= 3 && fpf[1] == frames[2]);
		if (nfp >= 3 && u.n >= 4)
			CHECKF(fpf[2] == frames[3], "main's caller: fp %#" PRIx64 " cfi %#" PRIx64, fpf[2], frames[3]);
	}
	child_stop(&ch);
	free(c);
	symbolizer_free(s);
	return check_summary();
}

static int test_exited(const char *bin)
{
	char *argv[] = { (char *)bin, NULL };
	struct symbolizer *s = symbolizer_new();
	struct capture *c = calloc(1, sizeof(*c));
	uint64_t frames[FRAMES_MAX];
	const char *names[FRAMES_MAX];
	struct unwind_result u;
	struct child ch = {};
	pid_t pid;

	if (!s || !c)
		return 1;
	CHECK_EQ_INT(child_start(&ch, argv), 0);
	CHECK_EQ_INT(symbolizer_refresh_process(s, ch.pid), 0);
	CHECK_EQ_INT(capture(ch.pid, c), 0);
	pid = ch.pid;
	child_stop(&ch);
	CHECK(kill(pid, 0) < 0);
	/* the drain may see a record after its process is gone */
	CHECK_EQ_INT(symbolizer_unwind(s, pid, &c->regs, c->stack, c->len, frames, FRAMES_MAX, &u), 0);
	names_of(s, pid, frames, u.n, names);
	print_stack("after exit", names, u.n, &u);
	check_chain(names, u.n, &u);
	free(c);
	symbolizer_free(s);
	return check_summary();
}

static int test_replaced(const char *bin)
{
	char dir[] = "/tmp/hpunwind.XXXXXX", path[PATH_MAX], tmp[PATH_MAX], cmd[3 * PATH_MAX];
	struct symbolizer *s = symbolizer_new();
	struct capture *c = calloc(1, sizeof(*c));
	uint64_t frames[FRAMES_MAX];
	const char *names[FRAMES_MAX];
	struct unwind_result u;
	struct child ch = {};
	char *argv[] = { path, NULL };
	FILE *f;

	if (!s || !c || !mkdtemp(dir))
		return 1;
	snprintf(path, sizeof(path), "%s/chain", dir);
	snprintf(tmp, sizeof(tmp), "%s/chain.new", dir);
	snprintf(cmd, sizeof(cmd), "cp '%s' '%s'", bin, path);
	CHECK_EQ_INT(system(cmd), 0);
	CHECK_EQ_INT(child_start(&ch, argv), 0);
	CHECK_EQ_INT(symbolizer_refresh_process(s, ch.pid), 0);
	/* the upgrade: garbage renamed over the binary, then the old inode's name is gone */
	f = fopen(tmp, "we");
	CHECK(f != NULL);
	for (int i = 0; f && i < 4096; i++)
		fputc(i * 7 + 3, f);
	if (f)
		fclose(f);
	CHECK_EQ_INT(rename(tmp, path), 0);
	CHECK_EQ_INT(symbolizer_refresh_process(s, ch.pid), 0); /* noted again: the mapping is the same inode */
	CHECK_EQ_INT(capture(ch.pid, c), 0);
	CHECK_EQ_INT(symbolizer_unwind(s, ch.pid, &c->regs, c->stack, c->len, frames, FRAMES_MAX, &u), 0);
	names_of(s, ch.pid, frames, u.n, names);
	print_stack("binary replaced", names, u.n, &u);
	check_chain(names, u.n, &u);
	child_stop(&ch);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	CHECK_EQ_INT(system(cmd), 0);
	free(c);
	symbolizer_free(s);
	return check_summary();
}

static int cmp_size(const void *a, const void *b)
{
	size_t x = *(const size_t *)a, y = *(const size_t *)b;

	return x < y ? -1 : x > y;
}

/* CPU time, not wall time: the machine may be shared */
static uint64_t cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec * NSEC_PER_SEC + ts.tv_nsec;
}

static int test_python(bool bench)
{
	char *argv[] = { PYTHON, "-c", "import sys\nprint('ready', flush=True)\nn = 0\nwhile True:\n n += 1\n", NULL };
	struct symbolizer *s;
	struct capture *c;
	struct child ch = {};
	size_t depth[STOPS];
	uint64_t spent = 0, unwinds = 0;

	if (access(PYTHON, X_OK) < 0) {
		printf("SKIP: no %s (apt-get install python3.11)\n", PYTHON);
		return SKIP;
	}
	s = symbolizer_new();
	c = calloc(1, sizeof(*c));
	if (!s || !c)
		return 1;
	CHECK_EQ_INT(child_start(&ch, argv), 0);
	CHECK_EQ_INT(symbolizer_refresh_process(s, ch.pid), 0);
	for (int i = 0; i < STOPS; i++) {
		uint64_t frames[FRAMES_MAX], t0;
		const char *names[FRAMES_MAX];
		struct unwind_result u;

		CHECK_EQ_INT(capture(ch.pid, c), 0);
		t0 = cpu_ns();
		for (int k = 0; k < (bench ? 1000 : 1); k++)
			CHECK_EQ_INT(symbolizer_unwind(s, ch.pid, &c->regs, c->stack, c->len, frames, FRAMES_MAX, &u),
				     0);
		spent += cpu_ns() - t0;
		unwinds += bench ? 1000 : 1;
		names_of(s, ch.pid, frames, u.n, names);
		if (i == 0)
			print_stack("python3.11", names, u.n, &u);
		depth[i] = u.n;
		CHECKF(u.stop == UNWIND_END, "stop %d: %s", i, unwind_stop_name(u.stop));
		CHECKF(u.n && !strcmp(names[u.n - 1], "_start"), "outermost: %s", u.n ? names[u.n - 1] : "");
		CHECK(find_name(names, u.n, "Py_BytesMain") > 0);
		CHECK(find_name(names, u.n, "_PyEval_EvalFrameDefault") >= 0);
	}
	qsort(depth, STOPS, sizeof(depth[0]), cmp_size);
	printf("python3.11: depth min %zu median %zu max %zu over %d stops; %.1f us of CPU per unwind (%.0f frames/s)\n",
	       depth[0], depth[STOPS / 2], depth[STOPS - 1], STOPS, spent / 1e3 / unwinds,
	       unwinds * (double)depth[STOPS / 2] / (spent / 1e9));
	child_stop(&ch);
	free(c);
	symbolizer_free(s);
	return check_summary();
}

/* The chain's copy c as an HP_EV_RAWUSTACK of place 1, and an interval's HP_EV_USTACK
 * record that reuses its walk (its user stack begins at the copy's pc). */
static struct hp_rawsample *raw_of(const struct capture *c, pid_t pid)
{
	size_t len = c->len & ~(size_t)7;
	struct hp_rawsample *raw = calloc(1, sizeof(*raw) + len);

	if (!raw)
		abort();
	raw->hdr.type = HP_EV_RAWUSTACK;
	raw->hdr.size = sizeof(*raw) + len;
	raw->tid = raw->pid = pid;
	raw->stack_len = len;
	raw->place = 1;
	raw->regs_valid = c->regs.valid;
	memcpy(raw->regs, c->regs.r, sizeof(raw->regs));
	memcpy(raw->frames, c->stack, len);
	return raw;
}

static const struct hp_ustack *apply_ustack(struct rawustacks *u, struct symbolizer *s, pid_t pid, uint64_t pc,
					    union rawustack_out *out)
{
	/* static: rawustack_apply returns it itself where it takes no copy's frames */
	static struct {
		struct hp_ustack e;
		__u64 frame;
	} rec;

	rec.e = (struct hp_ustack){ .hdr = { .type = HP_EV_USTACK, .size = sizeof(rec) }, .tid = pid, .pid = pid,
				    .ustack_len = 1, .place = 1 };
	rec.frame = pc;
	return (const void *)rawustack_apply(u, s, &rec.e.hdr, out);
}

static int test_held(const char *bin)
{
#if defined(__x86_64__)
	const int pc_reg = 16;
#else
	const int pc_reg = 32;
#endif
	char *argv[] = { (char *)bin, NULL };
	struct symbolizer *s = symbolizer_new();
	struct capture *c = calloc(1, sizeof(*c));
	struct rawustacks *u = rawustacks_new();
	struct symbolizer_info before, after;
	const char *names[HP_MAX_STACK];
	union rawustack_out out;
	const struct hp_ustack *e;
	struct hp_rawsample *raw;
	struct child ch = {};
	uint64_t pc;
	int r;

	if (!s || !c || !u)
		return 1;
	r = child_start(&ch, argv);
	CHECK_EQ_INT(r, 0);
	CHECK_EQ_INT(symbolizer_refresh_process(s, ch.pid), 0);
	CHECK_EQ_INT(capture(ch.pid, c), 0);
	raw = raw_of(c, ch.pid);
	pc = c->regs.r[pc_reg];

	/* the first unwind runs out of time after 4 frames: held */
	symbolizer_set_unwind_budget(s, 0);
	rawustack_note(u, s, raw);
	e = apply_ustack(u, s, ch.pid, pc, &out);
	CHECKF(e->ustack_len == 4, "out of time: %u frames", e->ustack_len);
	CHECK(e->stack_flags & HP_STACK_UTRUNC); /* cut short: shown truncated */
	/* ... and unwound again, to _start, once it has the time */
	symbolizer_set_unwind_budget(s, NSEC_PER_SEC);
	e = apply_ustack(u, s, ch.pid, pc, &out);
	names_of(s, ch.pid, (const uint64_t *)e->frames, e->ustack_len, names);
	print_stack("held, unwound again", names, e->ustack_len, NULL);
	CHECKF(e->ustack_len >= 4 && !strcmp(names[0], "leaf") && !strcmp(names[2], "main") &&
		       !strcmp(names[e->ustack_len - 1], "_start"),
	       "frames: %s ... %s", names[0], names[e->ustack_len - 1]);
	/* complete: the copy goes, the later intervals take those frames without an unwind */
	symbolizer_info(s, &before);
	e = apply_ustack(u, s, ch.pid, pc, &out);
	symbolizer_info(s, &after);
	CHECK_EQ_U64(after.unwinds, before.unwinds);
	CHECK(e->ustack_len >= 4 && !(e->stack_flags & HP_STACK_UTRUNC));

	/* out of time every time: 3 unwinds, then the last one's frames stay */
	symbolizer_set_unwind_budget(s, 0);
	symbolizer_info(s, &before);
	rawustack_note(u, s, raw);
	for (int i = 0; i < 6; i++) {
		e = apply_ustack(u, s, ch.pid, pc, &out);
		CHECKF(e->ustack_len == 4, "out of time: %u frames", e->ustack_len);
	}
	symbolizer_info(s, &after);
	CHECK_EQ_U64(after.unwinds - before.unwinds, 3);

	/* a mapping not read yet first, however many times, then out of time: the timeouts
	 * alone count toward the 3 (a process just watched, its first unwinds cold) */
	symbolizer_free(s);
	s = symbolizer_new();
	if (!s)
		return 1;
	rawustack_note(u, s, raw);
	for (int i = 0; i < 5; i++) {
		e = apply_ustack(u, s, ch.pid, pc, &out);
		CHECK(e->ustack_len == 1); /* no mapping: its frame-pointer walk */
	}
	CHECK_EQ_INT(symbolizer_refresh_process(s, ch.pid), 0);
	symbolizer_set_unwind_budget(s, 0);
	e = apply_ustack(u, s, ch.pid, pc, &out);
	CHECKF(e->ustack_len == 4, "out of time: %u frames", e->ustack_len);
	symbolizer_set_unwind_budget(s, NSEC_PER_SEC);
	e = apply_ustack(u, s, ch.pid, pc, &out);
	CHECKF(e->ustack_len > 4 && !(e->stack_flags & HP_STACK_UTRUNC), "after the mapping and a timeout: %u frames%s",
	       e->ustack_len, e->stack_flags & HP_STACK_UTRUNC ? ", truncated" : "");

	free(raw);
	child_stop(&ch);
	rawustacks_free(u);
	free(c);
	symbolizer_free(s);
	return check_summary();
}

static int test_hostile(const char *bin)
{
	char *argv[] = { (char *)bin, NULL };
	struct symbolizer *s = symbolizer_new();
	struct capture *c = calloc(1, sizeof(*c)), *g = calloc(1, sizeof(*g));
	struct symbolizer_info before, after;
	uint64_t frames[FRAMES_MAX];
	struct unwind_result u;
	struct child ch = {};
	unsigned seed = 1;

	if (!s || !c || !g)
		return 1;
	CHECK_EQ_INT(child_start(&ch, argv), 0);
	CHECK_EQ_INT(symbolizer_refresh_process(s, ch.pid), 0);
	CHECK_EQ_INT(capture(ch.pid, c), 0);
	symbolizer_info(s, &before);
	CHECK(before.cfi_files >= 2); /* chain and libc at least */

	/* cut short: leaf and middle fit in a few words, main's frame does not */
	CHECK_EQ_INT(symbolizer_unwind(s, ch.pid, &c->regs, c->stack, 8, frames, FRAMES_MAX, &u), 0);
	CHECKF(u.stop == UNWIND_STACK_END, "%s", unwind_stop_name(u.stop));
	CHECK(u.n >= 1 && u.n <= 2);

	/* a pc in no mapping */
	*g = *c;
#if defined(__x86_64__)
	g->regs.r[16] = 0x10;
#else
	g->regs.r[32] = 0x10;
#endif
	CHECK_EQ_INT(symbolizer_unwind(s, ch.pid, &g->regs, g->stack, g->len, frames, FRAMES_MAX, &u), 0);
	CHECKF(u.stop == UNWIND_NO_MAPPING && u.n == 1, "%s %zu", unwind_stop_name(u.stop), u.n);

	/* a depth of 3 */
	CHECK_EQ_INT(symbolizer_unwind(s, ch.pid, &c->regs, c->stack, c->len, frames, 3, &u), 0);
	CHECKF(u.stop == UNWIND_DEPTH && u.n == 3, "%s %zu", unwind_stop_name(u.stop), u.n);

	/* random words under the real registers: whatever it finds, it ends */
	for (int round = 0; round < 200; round++) {
		*g = *c;
		for (size_t i = 0; i < g->len; i++)
			g->stack[i] = (unsigned char)rand_r(&seed);
		CHECK_EQ_INT(symbolizer_unwind(s, ch.pid, &g->regs, g->stack, g->len, frames, FRAMES_MAX, &u), 0);
		CHECK(u.n >= 1 && u.n <= FRAMES_MAX && u.stop < UNWIND_STOP_MAX);
	}

	/* every word the address of leaf's loop (a return address into leaf, frame after frame) */
	*g = *c;
	for (size_t i = 0; i + 8 <= g->len; i += 8) {
#if defined(__x86_64__)
		memcpy(g->stack + i, &c->regs.r[16], 8);
#else
		memcpy(g->stack + i, &c->regs.r[32], 8);
		memcpy(&g->regs.r[30], &c->regs.r[32], 8);
#endif
	}
	CHECK_EQ_INT(symbolizer_unwind(s, ch.pid, &g->regs, g->stack, g->len, frames, FRAMES_MAX, &u), 0);
	printf("a stack of leaf's address: %zu frames, %s\n", u.n, unwind_stop_name(u.stop));
	CHECK(u.n <= FRAMES_MAX && u.stop != UNWIND_END);

	symbolizer_info(s, &after);
	CHECK_EQ_U64(after.unwinds - before.unwinds, 204);
	CHECK(after.unwind_stops[UNWIND_STACK_END] > before.unwind_stops[UNWIND_STACK_END]);
	CHECK(after.unwind_stops[UNWIND_NO_MAPPING] > before.unwind_stops[UNWIND_NO_MAPPING]);
	CHECK(after.unwind_stops[UNWIND_DEPTH] > before.unwind_stops[UNWIND_DEPTH]);
	for (int i = 0; i < UNWIND_STOP_MAX; i++)
		printf("  %s: %" PRIu64 "\n", unwind_stop_name(i), after.unwind_stops[i] - before.unwind_stops[i]);
	child_stop(&ch);
	free(c);
	free(g);
	symbolizer_free(s);
	return check_summary();
}

static int test_system(void)
{
	const char *dirs[] = { "/usr/lib/" MULTIARCH, "/usr/bin", "/usr/lib/python3/dist-packages/torch/lib" };
	size_t files = 0, with_cfi = 0;

	for (size_t d = 0; d < ARRAY_SIZE(dirs); d++) {
		DIR *dir = opendir(dirs[d]);
		struct dirent *de;

		if (!dir)
			continue;
		while ((de = readdir(dir))) {
			char path[PATH_MAX];
			struct stat st;
			struct cfi *c;
			Elf *e;
			int fd, r;

			snprintf(path, sizeof(path), "%s/%s", dirs[d], de->d_name);
			fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
			if (fd < 0)
				continue;
			if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || elf_open(fd, &st, &e) < 0) {
				close(fd);
				continue;
			}
			files++;
			r = cfi_read(e, &c);
			CHECKF(r == 0 || r == -ENOENT || r == -EPROTONOSUPPORT, "%s: %s", path, strerror(-r));
			with_cfi += r == 0;
			if (r == 0) {
				GElf_Shdr sh;

				/* a linker's .eh_frame_hdr passes the check, and is used */
				if (elf_find_section_named(e, ".eh_frame_hdr", &sh) && sh.sh_type != SHT_NOBITS)
					CHECKF(cfi_indexed(c), "%s: its .eh_frame_hdr is not used", path);
			}
			cfi_free(c);
			elf_end(e);
			close(fd);
		}
		closedir(dir);
	}
	printf("%zu ELF files, %zu with CFI accepted\n", files, with_cfi);
	CHECK(with_cfi > 10);
	return check_summary();
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: %s TEST [BIN]\n", argv[0]);
		return 2;
	}
	if (elf_version(EV_CURRENT) == EV_NONE)
		return 1;
	if (!strcmp(argv[1], "system"))
		return test_system();
	if (geteuid() != 0) {
		printf("SKIP: ptrace and /proc/PID/map_files need root\n");
		return SKIP;
	}
	if (!strcmp(argv[1], "nofp") && argc > 2)
		return test_chain(argv[2], false);
	if (!strcmp(argv[1], "fpleaf") && argc > 2)
		return test_chain(argv[2], true);
	if (!strcmp(argv[1], "exited") && argc > 2)
		return test_exited(argv[2]);
	if (!strcmp(argv[1], "replaced") && argc > 2)
		return test_replaced(argv[2]);
	if (!strcmp(argv[1], "held") && argc > 2)
		return test_held(argv[2]);
	if (!strcmp(argv[1], "hostile") && argc > 2)
		return test_hostile(argv[2]);
	if (!strcmp(argv[1], "python"))
		return test_python(false);
	if (!strcmp(argv[1], "system"))
		return test_system();
	if (!strcmp(argv[1], "bench"))
		return test_python(true);
	fprintf(stderr, "unknown test %s\n", argv[1]);
	return 2;
}
