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

bool same_root_as_daemon(int root_fd)
{
	struct stat a, b;

	return fstat(root_fd, &a) == 0 && stat("/", &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}
