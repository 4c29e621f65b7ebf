// SPDX-License-Identifier: GPL-2.0-only
/*
 * notify-listen PATH SECONDS [LAST]: a stand-in for systemd's end of sd_notify(3).
 * Binds a datagram socket at PATH (the daemon gets it as NOTIFY_SOCKET), prints
 * "listening", then one line "PID FIELD" for each newline-separated field of each
 * datagram, PID being the sender's (SO_PASSCRED, as systemd checks NotifyAccess=).
 * Exits after SECONDS, or once a datagram held the field LAST (e.g. STOPPING=1).
 */
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

/* The sender's pid from SCM_CREDENTIALS, or 0. */
static pid_t sender_pid(struct msghdr *mh)
{
	for (struct cmsghdr *c = CMSG_FIRSTHDR(mh); c; c = CMSG_NXTHDR(mh, c))
		if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_CREDENTIALS) {
			struct ucred cred;

			memcpy(&cred, CMSG_DATA(c), sizeof(cred));
			return cred.pid;
		}
	return 0;
}

int main(int argc, char **argv)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	const char *last = argc > 3 ? argv[3] : NULL;
	int fd, one = 1;
	bool done = false;
	time_t end;

	if (argc < 3 || argc > 4 || strlen(argv[1]) >= sizeof(sa.sun_path)) {
		fprintf(stderr, "usage: notify-listen PATH SECONDS [LAST]\n");
		return 2;
	}
	end = time(NULL) + atoi(argv[2]);
	strcpy(sa.sun_path, argv[1]);
	unlink(argv[1]);
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_PASSCRED, &one, sizeof(one)) < 0 ||
	    bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		perror("notify-listen: socket");
		return 1;
	}
	printf("listening\n");
	fflush(stdout);
	while (!done && time(NULL) < end) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		char buf[4096], cbuf[CMSG_SPACE(sizeof(struct ucred))];
		struct iovec iov = { buf, sizeof(buf) - 1 };
		struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof(cbuf) };
		char *save = NULL;
		ssize_t n;
		pid_t pid;

		if (poll(&pfd, 1, 200) <= 0)
			continue;
		n = recvmsg(fd, &mh, 0);
		if (n < 0)
			continue;
		buf[n] = 0;
		pid = sender_pid(&mh);
		for (char *field = strtok_r(buf, "\n", &save); field; field = strtok_r(NULL, "\n", &save)) {
			printf("%d %s\n", (int)pid, field);
			if (last && !strcmp(field, last))
				done = true;
		}
		fflush(stdout);
	}
	close(fd);
	unlink(argv[1]);
	return 0;
}
