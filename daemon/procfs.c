// SPDX-License-Identifier: GPL-2.0-only
/* /proc readers; each returns -errno (-ENOENT: the process is gone). */
#include <ctype.h>
#include <stdbool.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "macro.h"
#include "procfs.h"

static ssize_t read_file(const char *path, char *buf, size_t size)
{
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n, off = 0;

	if (fd < 0)
		return negative_errno();
	while ((size_t)off < size - 1) {
		n = read(fd, buf + off, size - 1 - off);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return negative_errno();
		}
		if (n == 0)
			break;
		off += n;
	}
	buf[off] = 0;
	return off;
}

static void copy_comm(char dst[16], const char *src, size_t n)
{
	n = MIN(n, (size_t)15);
	memcpy(dst, src, n);
	dst[n] = 0;
}

int proc_read_info(uint32_t pid, struct proc_info *ret)
{
	char path[64], buf[2048], *open_paren, *close_paren, *line;
	struct proc_info info = { .pid = pid };
	struct stat st;
	unsigned long long start = 0;
	int ppid = 0, field;
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%u/stat", pid);
	n = read_file(path, buf, sizeof(buf));
	if (n < 0)
		return n;
	/* "pid (comm) state ppid ..." where comm may hold spaces and parentheses */
	open_paren = strchr(buf, '(');
	close_paren = strrchr(buf, ')');
	if (!open_paren || !close_paren || close_paren < open_paren)
		return -EBADMSG;
	copy_comm(info.comm, open_paren + 1, close_paren - open_paren - 1);
	line = close_paren + 2;
	/* field 3 is the state; ppid is 4, starttime is 22 */
	for (field = 3; *line && field < 22; field++) {
		if (field == 4)
			ppid = atoi(line);
		line = strchr(line, ' ');
		if (!line)
			return -EBADMSG;
		line++;
	}
	if (field != 22 || sscanf(line, "%llu", &start) != 1)
		return -EBADMSG;
	info.ppid = ppid;
	info.start_time = start;

	snprintf(path, sizeof(path), "/proc/%u/status", pid);
	n = read_file(path, buf, sizeof(buf));
	if (n < 0)
		return n;
	line = strstr(buf, "\nUid:");
	if (!line || sscanf(line, "\nUid: %u %u %u %u", &info.cred.uid, &info.cred.euid, &info.cred.suid, &info.cred.fsuid) != 4)
		return -EBADMSG;
	line = strstr(buf, "\nGid:");
	if (!line || sscanf(line, "\nGid: %u %u %u %u", &info.cred.gid, &info.cred.egid, &info.cred.sgid, &info.cred.fsgid) != 4)
		return -EBADMSG;
	/* the kernel gives the files of /proc/PID to root instead of the euid when the task is
	 * not dumpable (the directory itself keeps the euid: task_dump_owner) */
	snprintf(path, sizeof(path), "/proc/%u/status", pid);
	if (stat(path, &st) < 0)
		return negative_errno();
	info.cred.dumpable = st.st_uid == info.cred.euid;
	*ret = info;
	return 0;
}

bool proc_same_cred(const struct proc_cred *a, const struct proc_cred *b)
{
	return a->uid == b->uid && a->euid == b->euid && a->suid == b->suid && a->fsuid == b->fsuid &&
	       a->gid == b->gid && a->egid == b->egid && a->sgid == b->sgid && a->fsgid == b->fsgid &&
	       a->dumpable == b->dumpable;
}

/* value of NAME=value in env (NUL-separated, len bytes), copied into buf; false if absent */
static bool env_get(const char *env, size_t len, const char *name, char *buf, size_t size)
{
	size_t n = strlen(name);

	for (const char *p = env, *end = env + len; p < end; p += strnlen(p, end - p) + 1) {
		size_t l = strnlen(p, end - p);

		if (l > n && p[n] == '=' && !memcmp(p, name, n)) {
			l = MIN(l - n - 1, size - 1);
			memcpy(buf, p + n + 1, l);
			buf[l] = 0;
			return true;
		}
	}
	return false;
}

static bool all_hex(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!isxdigit((unsigned char)s[i]))
			return false;
	return true;
}

/* A pod uid, 36 characters of hex digits and '-' (the systemd driver writes '_'). */
static bool pod_uid(const char *s, char ret[40])
{
	size_t n = 0;

	while (n < 36 && (isxdigit((unsigned char)s[n]) || s[n] == '-' || s[n] == '_'))
		n++;
	if (n != 36)
		return false;
	for (size_t i = 0; i < n; i++)
		ret[i] = s[i] == '_' ? '-' : s[i];
	ret[n] = 0;
	return true;
}

void proc_cgroup_labels(const char *path, struct proc_labels *l)
{
	static const char *const runtimes[] = { "docker-", "cri-containerd-", "crio-", "libpod-", "containerd-" };
	const char *seg = path, *end;

	l->container[0] = l->pod[0] = 0;
	for (; *seg; seg = *end ? end + 1 : end) {
		const char *pod;
		size_t n;

		while (*seg == '/')
			seg++;
		end = strchrnul(seg, '/');
		n = end - seg;
		/* "pod<uid>" (cgroupfs driver), "kubepods-burstable-pod<uid>.slice" (systemd) */
		for (pod = memmem(seg, n, "pod", 3); pod; pod = memmem(pod + 3, seg + n - pod - 3, "pod", 3))
			if ((pod == seg || pod[-1] == '-') && (size_t)(pod + 3 - seg) + 36 <= n &&
			    pod_uid(pod + 3, l->pod))
				break;
		if (n > 6 && !memcmp(end - 6, ".scope", 6))
			n -= 6;
		for (size_t i = 0; i < ARRAY_SIZE(runtimes); i++) {
			size_t k = strlen(runtimes[i]);

			if (n > k && !memcmp(seg, runtimes[i], k)) {
				seg += k;
				n -= k;
				break;
			}
		}
		/* a container id: 64 hex digits (docker, containerd, cri-o, podman) */
		if (n == 64 && all_hex(seg, n)) {
			memcpy(l->container, seg, 12);
			l->container[12] = 0;
		}
	}
}

/* The labels of pid's cgroup v2 path, else (a hybrid host whose containers live in the v1
 * hierarchies) of its v1 path of the cpu controller. */
static void read_cgroup_labels(uint32_t pid, struct proc_labels *l)
{
	char path[64], buf[4096], *line, *save = NULL, *v1 = NULL;

	snprintf(path, sizeof(path), "/proc/%u/cgroup", pid);
	if (read_file(path, buf, sizeof(buf)) < 0)
		return;
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *ctl = strchr(line, ':'), *p = ctl ? strchr(ctl + 1, ':') : NULL;

		if (!p)
			continue;
		if (!strncmp(line, "0::", 3)) {
			proc_cgroup_labels(p + 1, l);
			if (l->container[0] || l->pod[0])
				return;
			continue;
		}
		*p = 0;
		if (!v1 || strstr(ctl + 1, "cpu"))
			v1 = p + 1;
	}
	if (v1)
		proc_cgroup_labels(v1, l);
}

int proc_read_labels(uint32_t pid, struct proc_labels *ret)
{
	static const char *const rank[] = { "RANK", "OMPI_COMM_WORLD_RANK", "SLURM_PROCID" },
				 *const local[] = { "LOCAL_RANK", "SLURM_LOCALID" },
				 *const world[] = { "WORLD_SIZE", "SLURM_NTASKS" },
				 *const job[] = { "SLURM_JOB_ID", "TORCHELASTIC_RUN_ID" };
	struct proc_labels l = {};
	_cleanup_free_ char *buf = malloc(PROC_ENVIRON_MAX + 1);
	char path[64];
	ssize_t n;

	if (!buf)
		return -ENOMEM;
	snprintf(path, sizeof(path), "/proc/%u/environ", pid);
	n = read_file(path, buf, PROC_ENVIRON_MAX + 1);
	if (n < 0)
		return n;
	for (size_t i = 0; i < ARRAY_SIZE(rank) && !env_get(buf, n, rank[i], l.rank, sizeof(l.rank)); i++)
		;
	for (size_t i = 0; i < ARRAY_SIZE(local) && !env_get(buf, n, local[i], l.local_rank, sizeof(l.local_rank)); i++)
		;
	for (size_t i = 0; i < ARRAY_SIZE(world) && !env_get(buf, n, world[i], l.world_size, sizeof(l.world_size)); i++)
		;
	for (size_t i = 0; i < ARRAY_SIZE(job) && !env_get(buf, n, job[i], l.job, sizeof(l.job)); i++)
		;
	read_cgroup_labels(pid, &l);
	*ret = l;
	return 0;
}

int proc_read_cmdline(uint32_t pid, char **ret, size_t *ret_len)
{
	char path[64];
	_cleanup_free_ char *buf = malloc(4096);
	ssize_t n;

	if (!buf)
		return -ENOMEM;
	snprintf(path, sizeof(path), "/proc/%u/cmdline", pid);
	n = read_file(path, buf, 4096);
	if (n < 0)
		return n;
	*ret = TAKE_PTR(buf);
	*ret_len = n;
	return 0;
}

int proc_read_thread_comm(uint32_t pid, uint32_t tid, char ret[16])
{
	char path[64], buf[64];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%u/task/%u/comm", pid, tid);
	n = read_file(path, buf, sizeof(buf));
	if (n < 0)
		return n;
	while (n > 0 && buf[n - 1] == '\n')
		n--;
	copy_comm(ret, buf, n);
	return 0;
}

static bool parse_pid(const char *s, uint32_t *ret)
{
	unsigned long v = 0;

	if (!*s)
		return false;
	for (; *s; s++) {
		if (!isdigit((unsigned char)*s))
			return false;
		v = v * 10 + (*s - '0');
		if (v > UINT32_MAX)
			return false;
	}
	*ret = v;
	return true;
}

int proc_for_each_task(uint32_t pid, int (*fn)(uint32_t pid, uint32_t tid, const char *comm, void *ud),
		       void *ud)
{
	char path[64];
	struct dirent *de;
	DIR *d;
	int r = 0;

	snprintf(path, sizeof(path), "/proc/%u/task", pid);
	d = opendir(path);
	if (!d)
		return negative_errno();
	while ((de = readdir(d))) {
		char comm[16];
		uint32_t tid;

		if (!parse_pid(de->d_name, &tid))
			continue;
		if (proc_read_thread_comm(pid, tid, comm) < 0)
			continue; /* exited meanwhile */
		r = fn(pid, tid, comm, ud);
		if (r < 0)
			break;
	}
	closedir(d);
	return r;
}

int proc_for_each_thread(int (*fn)(uint32_t pid, uint32_t tid, const char *comm, void *ud), void *ud)
{
	struct dirent *de;
	DIR *d;
	int r = 0;

	d = opendir("/proc");
	if (!d)
		return negative_errno();
	while ((de = readdir(d))) {
		uint32_t pid;

		if (!parse_pid(de->d_name, &pid))
			continue;
		r = proc_for_each_task(pid, fn, ud);
		/* gone meanwhile: ENOENT, or ESRCH from /proc/PID/task of a process just reaped */
		if (r == -ENOENT || r == -ESRCH)
			r = 0;
		if (r < 0)
			break;
	}
	closedir(d);
	return r;
}

uint64_t proc_self_rss(void)
{
	char buf[128];
	unsigned long long size, resident;

	if (read_file("/proc/self/statm", buf, sizeof(buf)) < 0)
		return 0;
	if (sscanf(buf, "%llu %llu", &size, &resident) != 2)
		return 0;
	return resident * (uint64_t)sysconf(_SC_PAGESIZE);
}

/* Whether the comma-separated list has word w. */
static bool list_has(const char *list, size_t len, const char *w)
{
	size_t wl = strlen(w);

	for (const char *p = list; p < list + len;) {
		const char *c = memchr(p, ',', (size_t)(list + len - p));
		size_t n = c ? (size_t)(c - p) : (size_t)(list + len - p);

		if (n == wl && !memcmp(p, w, n))
			return true;
		p += n + 1;
	}
	return false;
}

/* The mount point of the cpu cgroup hierarchy, v1 (a "cgroup" mount with the cpu option) or
 * v2 ("cgroup2"), mounted at its root; -ENOENT: none. */
static int cpu_mount(bool v1, char *ret, size_t len)
{
	_cleanup_fclose_ FILE *f = fopen("/proc/self/mountinfo", "re");
	char line[4096];

	if (!f)
		return negative_errno();
	while (fgets(line, sizeof(line), f)) {
		char root[1024], mnt[1024], type[64], src[256], opts[1024];
		const char *dash = strstr(line, " - ");

		if (!dash || sscanf(line, "%*s %*s %*s %1023s %1023s", root, mnt) != 2 ||
		    sscanf(dash + 3, "%63s %255s %1023s", type, src, opts) != 3 || strcmp(root, "/"))
			continue;
		if (v1 ? !strcmp(type, "cgroup") && list_has(opts, strlen(opts), "cpu") : !strcmp(type, "cgroup2")) {
			snprintf(ret, len, "%s", mnt);
			return 0;
		}
	}
	return -ENOENT;
}

int proc_read_cpu_bandwidth(uint32_t pid, uint32_t tid, struct cpu_bandwidth *ret)
{
	char path[4200], buf[4096], mnt[1024], val[128], cg[2048] = "";
	struct cpu_bandwidth bw = { .quota_us = -1 };
	bool v1 = false;
	ssize_t n;
	int r;

	snprintf(path, sizeof(path), "/proc/%u/task/%u/cgroup", pid, tid);
	n = read_file(path, buf, sizeof(buf));
	if (n < 0)
		return n;
	/* "ID:CONTROLLERS:PATH" lines: a v1 hierarchy with cpu, else the v2 one ("0::PATH") */
	for (char *line = buf, *next; line && *line; line = next) {
		char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;

		next = strchr(line, '\n');
		if (next)
			*next++ = 0;
		if (!c2)
			continue;
		if (list_has(c1 + 1, (size_t)(c2 - c1 - 1), "cpu")) {
			snprintf(cg, sizeof(cg), "%s", c2 + 1);
			v1 = true;
			break;
		}
		if (c2 == c1 + 1 && !cg[0])
			snprintf(cg, sizeof(cg), "%s", c2 + 1);
	}
	if (!cg[0])
		return -ENOENT;
	r = cpu_mount(v1, mnt, sizeof(mnt));
	if (r < 0)
		return r;
	snprintf(bw.cgroup, sizeof(bw.cgroup), "%s", cg);
	if (v1) {
		long long q = -1;
		unsigned long long per = 0;

		snprintf(path, sizeof(path), "%s%s/cpu.cfs_quota_us", mnt, cg);
		if (read_file(path, val, sizeof(val)) < 0 || sscanf(val, "%lld", &q) != 1)
			return -ENOENT;
		snprintf(path, sizeof(path), "%s%s/cpu.cfs_period_us", mnt, cg);
		if (read_file(path, val, sizeof(val)) < 0 || sscanf(val, "%llu", &per) != 1)
			return -ENOENT;
		bw.quota_us = q < 0 ? -1 : q;
		bw.period_us = per;
	} else {
		char q[32];
		unsigned long long per = 0;

		snprintf(path, sizeof(path), "%s%s/cpu.max", mnt, cg);
		if (read_file(path, val, sizeof(val)) < 0 || sscanf(val, "%31s %llu", q, &per) != 2)
			return -ENOENT; /* no cpu controller there */
		bw.quota_us = strcmp(q, "max") ? strtoll(q, NULL, 10) : -1;
		bw.period_us = per;
	}
	*ret = bw;
	return 0;
}
