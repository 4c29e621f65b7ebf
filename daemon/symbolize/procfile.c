// SPDX-License-Identifier: GPL-2.0-only
/*
 * Opening files a watched process controls. Its files are opened in its own mount namespace
 * and root (/proc/PID/root), resolved so that symlinks a container plants cannot lead out of
 * it, and only regular files are read: never a FIFO or a device that could block the reader.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "internal.h"

/*
 * Opens a regular file read-only; -EINVAL for anything else. The path is looked up with
 * O_PATH first, and only a regular file is then opened for reading (through /proc/self/fd):
 * a FIFO or a device node planted where a file was expected is never opened.
 */
int open_regular_at(int dirfd, const char *path, bool in_root)
{
	struct open_how how = {
		.flags = O_PATH | O_CLOEXEC,
		.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS,
	};
	_cleanup_close_ int pfd = -1;
	char buf[PATH_MAX];
	struct stat st;
	int fd;

	if (in_root) {
		pfd = syscall(SYS_openat2, dirfd, path, &how, sizeof(how));
		if (pfd < 0 && errno == ENOSYS) {
			/* before 5.6: the last component at least is no symlink */
			if (snprintf(buf, sizeof(buf), "%s%s", path[0] == '/' ? "." : "./", path) >=
			    (int)sizeof(buf))
				return -ENAMETOOLONG;
			pfd = openat(dirfd, buf, how.flags | O_NOFOLLOW);
		}
	} else {
		pfd = openat(dirfd, path, how.flags);
	}
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

/* File systems whose files are regular in name only: reading them blocks (tracefs'
 * trace_pipe), has side effects, or shows the kernel's state. Never a perf map. */
static bool special_fs(int fd)
{
	static const long kinds[] = {
		0x9fa0,     /* proc */
		0x62656572, /* sysfs */
		0x74726163, /* tracefs */
		0x64626720, /* debugfs */
		0x73636673, /* securityfs */
		0x62656570, /* configfs */
		0x6165676c, /* pstore */
		0xcafe4a11, /* bpf */
		0x27e0eb,   /* cgroup */
		0x63677270, /* cgroup2 */
	};
	struct statfs sfs;

	if (fstatfs(fd, &sfs) < 0)
		return true;
	for (size_t i = 0; i < ARRAY_SIZE(kinds); i++)
		if ((long)sfs.f_type == kinds[i])
			return true;
	return false;
}

int open_owned_file_at(int root_fd, const char *path, const uint32_t *owners, size_t n_owners, uint64_t max_bytes,
		       struct stat *ret_st)
{
	struct open_how how = {
		.flags = O_PATH | O_CLOEXEC,
		/* no symlink at all: a link to a root-only file would put its text in the owner's snapshot */
		.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
	};
	_cleanup_close_ int pfd = -1;
	char buf[64];
	struct stat st;
	bool owned = false;
	int fd;

	pfd = syscall(SYS_openat2, root_fd, path, &how, sizeof(how));
	if (pfd < 0 && errno == ENOSYS) {
		/* before 5.6: the last component at least is no symlink; the owner check below holds */
		char rel[PATH_MAX];

		if (snprintf(rel, sizeof(rel), "./%s", path) >= (int)sizeof(rel))
			return -ENAMETOOLONG;
		pfd = openat(root_fd, rel, how.flags | O_NOFOLLOW);
	}
	if (pfd < 0)
		return negative_errno();
	if (fstat(pfd, &st) < 0)
		return negative_errno();
	if (!S_ISREG(st.st_mode))
		return -EINVAL;
	for (size_t i = 0; i < n_owners; i++)
		owned |= st.st_uid == owners[i];
	if (!owned)
		return -EPERM;
	if ((uint64_t)st.st_size > max_bytes)
		return -EFBIG;
	if (special_fs(pfd))
		return -EINVAL;
	snprintf(buf, sizeof(buf), "/proc/self/fd/%d", pfd);
	fd = open(buf, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0)
		return negative_errno();
	*ret_st = st;
	return fd;
}

bool same_root_as_daemon(int root_fd)
{
	struct stat a, b;

	return fstat(root_fd, &a) == 0 && stat("/", &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}
