/*
 * tt_loopback.h -- loopback sockets and libuv loop helpers for the unit
 * tests of the member transports (test_raft_*.c, test_member_auth.c):
 * a free port, a listener whose accept queue is full (a connect to it
 * hangs: Linux drops the SYN and the client retransmits it 1 s, 3 s, 7 s
 * later), draining that queue, running a loop until a counter moves.
 * Header-only, as tt.h.
 */
#ifndef TAMGA_TT_LOOPBACK_H
#define TAMGA_TT_LOOPBACK_H

#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <uv.h>

/* A loopback port nothing listens on now. */
static inline int
tt_free_port(void)
{
	struct sockaddr_in a;
	socklen_t l = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM, 0), port;

	memset(&a, 0, sizeof(a));
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	bind(fd, (struct sockaddr *)&a, sizeof(a));
	getsockname(fd, (struct sockaddr *)&a, &l);
	port = ntohs(a.sin_port);
	close(fd);
	return port;
}

/*
 * A listener that never accepts, its queue (backlog 0: one) filled by a
 * connection (*fill, closed by the caller with the listener): further
 * connects hang until tt_drain.  "127.0.0.1:port" into addr; the
 * listening socket is returned.
 */
static inline int
tt_full_listener(char *addr, size_t len, int *fill)
{
	struct sockaddr_in a;
	socklen_t l = sizeof(a);
	int lfd = socket(AF_INET, SOCK_STREAM, 0);

	memset(&a, 0, sizeof(a));
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (bind(lfd, (struct sockaddr *)&a, sizeof(a)) != 0 || listen(lfd, 0) != 0) {
		perror("tt_full_listener");
		abort();
	}
	getsockname(lfd, (struct sockaddr *)&a, &l);
	snprintf(addr, len, "127.0.0.1:%d", ntohs(a.sin_port));
	*fill = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
	connect(*fill, (struct sockaddr *)&a, sizeof(a));
	usleep(100 * 1000);
	return lfd;
}

/* For ms, accept and close whatever reaches tt_full_listener's lfd
 * while loop runs: a hanging connect's retransmitted SYN gets through. */
static inline void
tt_drain(int lfd, uv_loop_t *loop, int ms)
{
	fcntl(lfd, F_SETFL, fcntl(lfd, F_GETFL) | O_NONBLOCK);
	for (int i = 0; i < ms / 10; i++) {
		int c;
		while ((c = accept(lfd, NULL, NULL)) >= 0)
			close(c);
		uv_run(loop, UV_RUN_NOWAIT);
		usleep(10 * 1000);
	}
}

/* Run loop (without blocking) for ms, or until *counter reaches want
 * (counter NULL: for ms). */
static inline void
tt_run_until(uv_loop_t *loop, const int *counter, int want, int ms)
{
	for (int i = 0; i < ms / 5 && (counter == NULL || *counter < want); i++) {
		uv_run(loop, UV_RUN_NOWAIT);
		usleep(5 * 1000);
	}
}

#endif
