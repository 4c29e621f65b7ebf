// SPDX-License-Identifier: GPL-2.0-only
/*
 * journal-listen PATH SECONDS: a stand-in for journald's native socket. Binds a datagram
 * socket at PATH, prints each datagram that arrives within SECONDS (KEY=VALUE lines,
 * the native protocol's simple form), a line "--" after each, then exits.
 * Datagrams passed as a memfd (large entries) are read from the fd.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	time_t end;
	int fd;

	if (argc != 3) {
		fprintf(stderr, "usage: journal-listen PATH SECONDS\n");
		return 2;
	}
	end = time(NULL) + atoi(argv[2]);
	fd = socket(AF_UNIX, SOCK_DGRAM, 0);
	strncpy(sa.sun_path, argv[1], sizeof(sa.sun_path) - 1);
	unlink(argv[1]);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		perror("bind");
		return 1;
	}
	printf("listening\n");
	fflush(stdout);
	while (time(NULL) < end) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		char buf[65536], cbuf[CMSG_SPACE(sizeof(int))];
		struct iovec iov = { buf, sizeof(buf) - 1 };
		struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof(cbuf) };
		struct cmsghdr *c;
		ssize_t n;

		if (poll(&pfd, 1, 200) <= 0)
			continue;
		n = recvmsg(fd, &mh, 0);
		if (n < 0)
			continue;
		c = CMSG_FIRSTHDR(&mh);
		if (n == 0 && c && c->cmsg_type == SCM_RIGHTS) {
			int mfd;

			memcpy(&mfd, CMSG_DATA(c), sizeof(int));
			n = pread(mfd, buf, sizeof(buf) - 1, 0);
			close(mfd);
			if (n < 0)
				continue;
		}
		buf[n] = 0;
		printf("%s\n--\n", buf);
		fflush(stdout);
	}
	return 0;
}
