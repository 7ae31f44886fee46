/*
 * test_raft_auth_connect.c -- the keyFile transport (repl/raft_auth.h) when
 * the TCP connect outlives the handshake's timeout (a peer whose machine
 * is down answers no SYN): libraft is told once that the connect failed,
 * and the TCP connect that completes later finds its handshake still
 * allocated (it was freed by the timeout: a use after free and a second
 * callback).  A listening socket whose accept queue is full drops SYNs,
 * which makes such a connect on loopback; draining the queue lets the
 * client's SYN retransmission through.
 */
#include "tt.h"
#include "tt_loopback.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <raft.h>
#include <raft/uv.h>
#include <sys/socket.h>
#include <uv.h>

#include "auth/auth_member.h"
#include "common/error.h"
#include "repl/raft_auth.h"

static uv_loop_t loop;
static int calls, last_status, closed;

static void
connect_cb(struct raft_uv_connect *req, uv_stream_t *stream, int status)
{
	(void)req;
	calls++;
	last_status = status;
	TT_ASSERT(stream == NULL);
}

static void
on_closed(struct raft_uv_transport *t)
{
	(void)t;
	closed++;
}

static void
run_ms(int ms)
{
	for (int i = 0; i < ms / 10; i++) {
		uv_run(&loop, UV_RUN_NOWAIT);
		usleep(10 * 1000);
	}
}

static void
test_connect_outlives_timeout(void)
{
	struct raft_uv_transport in, t;
	struct raft_uv_connect req;
	int lfd, fill;
	char addr[64];
	terr_t err = TERR_INIT;

	TT_EQ_INT(auth_member_key_set("c2VjcmV0a2V5MQ==", &err), 0);
	/* a listener that never accepts, its queue filled */
	lfd = tt_full_listener(addr, sizeof(addr), &fill);

	TT_EQ_INT(uv_loop_init(&loop), 0);
	TT_EQ_INT(raft_uv_tcp_init(&in, &loop), 0);
	TT_EQ_INT(repl_raft_auth_init(&t, &in, &loop), 0);
	TT_EQ_INT(t.init(&t, 1, "127.0.0.1:1"), 0);
	TT_EQ_INT(t.connect(&t, &req, 2, addr, connect_cb), 0);

	/* the handshake's timeout: libraft hears of it once */
	run_ms(REPL_RAFT_AUTH_TIMEOUT_MS + 500);
	TT_EQ_INT(calls, 1);
	TT_EQ_INT(last_status, RAFT_NOCONNECTION);

	/* the queue drained: the SYN retransmitted 7 s after the first gets
	 * through, the TCP connect completes; no second callback, nothing
	 * freed read */
	tt_drain(lfd, &loop, 3500);
	TT_EQ_INT(calls, 1);

	t.close(&t, on_closed);
	for (int i = 0; i < 300 && closed == 0; i++) {
		uv_run(&loop, UV_RUN_NOWAIT);
		usleep(10 * 1000);
	}
	TT_EQ_INT(closed, 1);
	raft_uv_tcp_close(&in);
	repl_raft_auth_close(&t);
	uv_run(&loop, UV_RUN_DEFAULT);
	TT_EQ_INT(uv_loop_close(&loop), 0);
	close(fill);
	close(lfd);
	auth_member_key_set(NULL, NULL);
}

int
main(void)
{
	TT_RUN(test_connect_outlives_timeout);
	return tt_finish();
}
