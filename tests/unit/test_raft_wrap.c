/*
 * test_raft_wrap.c -- the lifetime corners of the transport wrapper the
 * keyFile handshake and the TLS relay share (repl/raft_wrap.h), driven by a
 * one-byte handshake of the test's own (the connector writes 'H', the
 * acceptor reads it) on real raft_uv_tcp transports over loopback:
 *   - a handshake that completes hands libraft a stream that carries the
 *     next byte (nothing of it read by the handshake);
 *   - a TCP connect that outlives the handshake's timeout: libraft hears
 *     once, the connection is freed only when the late connect completes
 *     (its reference), the late stream is closed;
 *   - the transport closed during handshakes on both sides: the connector's
 *     request answered RAFT_CANCELED once, no stream reaches libraft;
 *   - the transport closed with TCP connects in flight (one of them
 *     already timed out): each request answered once, every connection
 *     freed.
 * A listening socket whose accept queue is full drops SYNs, which makes a
 * connect that hangs on loopback; draining the queue lets the client's SYN
 * retransmission (1 s later) through.  Every connection's release is
 * counted: each test ends with as many releases as connections and
 * uv_loop_close succeeding (no handle left).
 */
#include "tt.h"
#include "tt_loopback.h"

#include <stdint.h>

#include "repl/raft_wrap.h"

#define TIMEOUT_MS 300

static struct {
	uv_loop_t loop;
	bool stall;                      /* the handshake never finishes */
	int made, released;              /* connections started, freed */
	int notes_failed, notes_ok;
	char last_reason[128];
	int connect_calls, connect_status, connect_streams;
	int accept_calls;
	raft_id accept_id;
	char accept_address[64];
	uv_stream_t *conn_stream, *acc_stream;
	int closed;
	char a_addr[64], b_addr[64];
	struct raft_uv_connect req;
	char got;
	int got_n;
} T;

/* ---- the test's handshake ---------------------------------------------------------------------------- */

typedef struct fk {
	repl_raft_conn_t b;
	char in, out;
	uv_write_t wr;
} fk_t;

static void
note(const char *host, const char *reason)
{
	(void)host;
	if (reason == NULL) {
		T.notes_ok++;
		return;
	}
	T.notes_failed++;
	snprintf(T.last_reason, sizeof(T.last_reason), "%s", reason);
}

static void
fk_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
	fk_t *f = h->data;

	(void)suggested;
	*buf = uv_buf_init(&f->in, 1);
}

static void
fk_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
	fk_t *f = s->data;

	(void)buf;
	if (f->b.done || nread == 0)
		return;
	if (nread < 0 || f->in != 'H') {
		repl_raft_conn_fail(&f->b, "the peer hung up", 0);
		return;
	}
	uv_read_stop(s);
	repl_raft_conn_note(&f->b, NULL);
	repl_raft_conn_hand_over(&f->b, f->b.tcp, false);
}

static void
fk_written(uv_write_t *w, int status)
{
	fk_t *f = w->data;

	if (!f->b.done && status != 0)
		repl_raft_conn_fail(&f->b, NULL, RAFT_NOCONNECTION);
	else if (!f->b.done) {
		repl_raft_conn_note(&f->b, NULL);
		repl_raft_conn_hand_over(&f->b, f->b.tcp, false);
	}
	repl_raft_conn_unref(&f->b);
}

static void
fk_accepted(repl_raft_conn_t *c)
{
	T.made++;
	if (uv_read_start(c->tcp, fk_alloc, fk_read) != 0)
		repl_raft_conn_fail(c, NULL, 0);
}

static void
fk_connected(repl_raft_conn_t *c)
{
	fk_t *f = (fk_t *)c;
	uv_buf_t b = uv_buf_init(&f->out, 1);

	if (T.stall)
		return;
	f->out = 'H';
	f->wr.data = f;
	if (uv_write(&f->wr, c->tcp, &b, 1, fk_written) != 0) {
		repl_raft_conn_fail(c, NULL, RAFT_NOCONNECTION);
		return;
	}
	repl_raft_conn_ref(c);
}

static void
fk_release(repl_raft_conn_t *c)
{
	(void)c;
	T.released++;
}

static const repl_raft_wrap_ops_t fk_ops = {
	.conn_size = sizeof(fk_t),
	.timeout_ms = TIMEOUT_MS,
	.timeout_reason = "the test's handshake timed out",
	.note = note,
	.accepted = fk_accepted,
	.connected = fk_connected,
	.release = fk_release,
};

/* the same with a timeout no loaded machine reaches: for a test that must
 * close before any timeout fires */
static const repl_raft_wrap_ops_t fk_ops_patient = {
	.conn_size = sizeof(fk_t),
	.timeout_ms = 30000,
	.timeout_reason = "the test's handshake timed out",
	.note = note,
	.accepted = fk_accepted,
	.connected = fk_connected,
	.release = fk_release,
};

/* ---- libraft's side ------------------------------------------------------------------------------------- */

static void
on_stream_closed(uv_handle_t *h)
{
	raft_free(h);
}

static void
connect_cb(struct raft_uv_connect *req, uv_stream_t *stream, int status)
{
	(void)req;
	T.connect_calls++;
	T.connect_status = status;
	if (stream != NULL) {
		TT_EQ_INT(status, 0);
		T.connect_streams++;
		T.conn_stream = stream;
	}
}

static void
accept_cb(struct raft_uv_transport *t, raft_id id, const char *address, uv_stream_t *stream)
{
	(void)t;
	T.accept_calls++;
	T.accept_id = id;
	snprintf(T.accept_address, sizeof(T.accept_address), "%s", address);
	T.acc_stream = stream;
}

static void
on_closed(struct raft_uv_transport *t)
{
	(void)t;
	T.closed++;
}

/* Close t and its inner transport; release t. */
static void
shut(struct raft_uv_transport *t, struct raft_uv_transport *in)
{
	int want = T.closed + 1;

	t->close(t, on_closed);
	tt_run_until(&T.loop, &T.closed, want, 3000);
	TT_EQ_INT(T.closed, want);
	raft_uv_tcp_close(in);
	repl_raft_wrap_close(t);
}

static void
start(void)
{
	memset(&T, 0, sizeof(T));
	TT_EQ_INT(uv_loop_init(&T.loop), 0);
}

static void
finish(void)
{
	uv_run(&T.loop, UV_RUN_DEFAULT);
	TT_EQ_INT(uv_loop_close(&T.loop), 0);
	TT_EQ_INT(T.released, T.made);
}

/* Transport a (Raft id 1) listening, b (id 2) connecting to it, both with ops. */
static void
pair(struct raft_uv_transport *a_in, struct raft_uv_transport *a, struct raft_uv_transport *b_in,
     struct raft_uv_transport *b, const repl_raft_wrap_ops_t *ops)
{
	snprintf(T.a_addr, sizeof(T.a_addr), "127.0.0.1:%d", tt_free_port());
	snprintf(T.b_addr, sizeof(T.b_addr), "127.0.0.1:%d", tt_free_port());
	TT_EQ_INT(raft_uv_tcp_init(a_in, &T.loop), 0);
	TT_EQ_INT(repl_raft_wrap_init(a, a_in, &T.loop, ops), 0);
	TT_EQ_INT(a->init(a, 1, T.a_addr), 0);
	TT_EQ_INT(a->listen(a, accept_cb), 0);
	TT_EQ_INT(raft_uv_tcp_init(b_in, &T.loop), 0);
	TT_EQ_INT(repl_raft_wrap_init(b, b_in, &T.loop, ops), 0);
	TT_EQ_INT(b->init(b, 2, T.b_addr), 0);
	T.made++;   /* the connector's */
	TT_EQ_INT(b->connect(b, &T.req, 1, T.a_addr, connect_cb), 0);
}

/* ---- the tests ------------------------------------------------------------------------------------------ */

static void
got_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
	(void)h;
	(void)suggested;
	*buf = uv_buf_init(&T.got, 1);
}

static void
got_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
	(void)buf;
	if (nread > 0) {
		T.got_n += (int)nread;
		uv_read_stop(s);
	}
}

static void
test_handshake_completes(void)
{
	struct raft_uv_transport a_in, a, b_in, b;
	uv_write_t w;
	uv_buf_t r = uv_buf_init("R", 1);

	start();
	pair(&a_in, &a, &b_in, &b, &fk_ops_patient);
	tt_run_until(&T.loop, &T.accept_calls, 1, 3000);
	tt_run_until(&T.loop, &T.connect_calls, 1, 3000);
	TT_EQ_INT(T.connect_calls, 1);
	TT_EQ_INT(T.connect_streams, 1);
	TT_EQ_INT(T.accept_calls, 1);
	TT_EQ_INT(T.accept_id, 2);
	TT_EQ_STR(T.accept_address, T.b_addr);
	TT_EQ_INT(T.notes_failed, 0);

	/* the first byte after the handshake is libraft's */
	TT_EQ_INT(uv_write(&w, T.conn_stream, &r, 1, NULL), 0);
	TT_EQ_INT(uv_read_start(T.acc_stream, got_alloc, got_read), 0);
	tt_run_until(&T.loop, &T.got_n, 1, 3000);
	TT_EQ_INT(T.got_n, 1);
	TT_EQ_INT(T.got, 'R');

	/* the streams are libraft's: the transports' close leaves them */
	shut(&a, &a_in);
	shut(&b, &b_in);
	tt_run_until(&T.loop, NULL, 0, 50);
	TT_EQ_INT(T.released, 2);
	uv_close((uv_handle_t *)T.conn_stream, on_stream_closed);
	uv_close((uv_handle_t *)T.acc_stream, on_stream_closed);
	finish();
}

static void
test_connect_outlives_timeout(void)
{
	struct raft_uv_transport in, t;
	struct raft_uv_connect req;
	char addr[64];
	int fill, lfd;

	start();
	lfd = tt_full_listener(addr, sizeof(addr), &fill);
	TT_EQ_INT(raft_uv_tcp_init(&in, &T.loop), 0);
	TT_EQ_INT(repl_raft_wrap_init(&t, &in, &T.loop, &fk_ops), 0);
	TT_EQ_INT(t.init(&t, 1, "127.0.0.1:1"), 0);
	T.made++;
	TT_EQ_INT(t.connect(&t, &req, 2, addr, connect_cb), 0);

	/* the timeout: libraft hears of it once, with the reason noted; the
	 * connection stays allocated for the TCP connect still running */
	tt_run_until(&T.loop, NULL, 0, TIMEOUT_MS + 300);
	TT_EQ_INT(T.connect_calls, 1);
	TT_EQ_INT(T.connect_status, RAFT_NOCONNECTION);
	TT_EQ_INT(T.notes_failed, 1);
	TT_EQ_STR(T.last_reason, "the test's handshake timed out");
	TT_EQ_INT(T.released, 0);

	/* the SYN retransmitted gets through: the late connect completes,
	 * its stream is closed, no second callback, the connection freed */
	tt_drain(lfd, &T.loop, 3000);
	TT_EQ_INT(T.connect_calls, 1);
	TT_EQ_INT(T.released, 1);

	shut(&t, &in);
	TT_EQ_INT(T.connect_calls, 1);
	finish();
	close(fill);
	close(lfd);
}

static void
test_close_during_handshake(void)
{
	struct raft_uv_transport a_in, a, b_in, b;

	start();
	T.stall = true;
	pair(&a_in, &a, &b_in, &b, &fk_ops_patient);
	/* both sides in their handshake: the acceptor's connection exists */
	tt_run_until(&T.loop, &T.made, 2, 3000);
	TT_EQ_INT(T.made, 2);
	tt_run_until(&T.loop, NULL, 0, 50);
	TT_EQ_INT(T.connect_calls, 0);

	/* the connector's transport closes: its request is cancelled once */
	shut(&b, &b_in);
	TT_EQ_INT(T.connect_calls, 1);
	TT_EQ_INT(T.connect_status, RAFT_CANCELED);
	TT_EQ_INT(T.connect_streams, 0);
	/* the acceptor's, in its handshake (its peer may or may not have
	 * hung up yet): nothing reaches libraft */
	shut(&a, &a_in);
	tt_run_until(&T.loop, NULL, 0, 100);
	TT_EQ_INT(T.accept_calls, 0);
	TT_EQ_INT(T.connect_calls, 1);
	finish();
	TT_EQ_INT(T.released, 2);
}

static int multi_calls[3], multi_status[3];

static void
multi_cb(struct raft_uv_connect *req, uv_stream_t *stream, int status)
{
	int i = (int)(intptr_t)req->data;

	TT_ASSERT(stream == NULL);
	multi_calls[i]++;
	multi_status[i] = status;
}

static void
test_close_with_connects_in_flight(void)
{
	struct raft_uv_transport in, t;
	struct raft_uv_connect req[3];
	char addr[64];
	int fill, lfd;

	start();
	memset(multi_calls, 0, sizeof(multi_calls));
	lfd = tt_full_listener(addr, sizeof(addr), &fill);
	TT_EQ_INT(raft_uv_tcp_init(&in, &T.loop), 0);
	TT_EQ_INT(repl_raft_wrap_init(&t, &in, &T.loop, &fk_ops), 0);
	TT_EQ_INT(t.init(&t, 1, "127.0.0.1:1"), 0);
	/* one connect past its timeout, TCP still connecting */
	req[0].data = (void *)(intptr_t)0;
	T.made++;
	TT_EQ_INT(t.connect(&t, &req[0], 2, addr, multi_cb), 0);
	tt_run_until(&T.loop, NULL, 0, TIMEOUT_MS + 200);
	TT_EQ_INT(multi_calls[0], 1);
	TT_EQ_INT(multi_status[0], RAFT_NOCONNECTION);
	/* two in their timeout */
	for (int i = 1; i < 3; i++) {
		req[i].data = (void *)(intptr_t)i;
		T.made++;
		TT_EQ_INT(t.connect(&t, &req[i], 2, addr, multi_cb), 0);
	}
	tt_run_until(&T.loop, NULL, 0, 20);
	TT_EQ_INT(multi_calls[1] + multi_calls[2], 0);

	/* close: the inner close cancels the three TCP connects; the two
	 * waiting ones are answered once, the timed-out one not again */
	shut(&t, &in);
	for (int i = 0; i < 3; i++)
		TT_EQ_INT(multi_calls[i], 1);
	TT_ASSERT(multi_status[1] != 0 && multi_status[2] != 0);
	finish();
	TT_EQ_INT(T.released, 3);
	close(fill);
	close(lfd);
}

int
main(void)
{
	TT_RUN(test_handshake_completes);
	TT_RUN(test_connect_outlives_timeout);
	TT_RUN(test_close_during_handshake);
	TT_RUN(test_close_with_connects_in_flight);
	return tt_finish();
}
