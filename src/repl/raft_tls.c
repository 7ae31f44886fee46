/*
 * raft_tls.c -- the TLS relay under libraft's transport (raft_tls.h): one
 * relay per Raft connection, TCP socket <-> OpenSSL memory BIOs <->
 * socketpair end, all on the member's loop thread.
 *
 * Not here: the OpenSSL contexts and the certificate rules (member_tls.c);
 * the keyFile handshake (raft_auth.c); the wrapping transport and each
 * connection's lifetime -- its timer, references, libraft's request
 * (raft_wrap.c).
 */
#include "repl/raft_tls.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/ssl.h>

#include "auth/auth_member.h"
#include "repl/member_rpc.h"
#include "repl/member_tls.h"
#include "repl/raft_member.h"
#include "repl/raft_wrap.h"

#define CHUNK 16384

typedef struct tc tc_t;

struct tc {
	repl_raft_conn_t b;              /* first: the wrapper's part (raft_uv_tcp's stream in b.tcp,
	                                  * the timer, the peer, libraft's request) */
	uv_pipe_t mine;                  /* our end of the socketpair */
	bool mine_open;
	uv_pipe_t *theirs;               /* libraft's end, until handed over */
	SSL *ssl;                        /* NULL: a plain relay (allowTLS/preferTLS acceptor) */
	BIO *rbio, *wbio;                /* owned by ssl */
	bool decided;                    /* acceptor: TLS or plain chosen */
	bool ready;                      /* libraft has its end */
	bool tcp_paused, pipe_paused;    /* reads stopped: the other side is behind */
	char tbuf[CHUNK], pbuf[CHUNK];
};

typedef struct wr {
	uv_write_t w;
	tc_t *tc;
	char data[];
} wr_t;

/* ---- bookkeeping ---------------------------------------------------------------------------------- */

static void
unref(tc_t *c)
{
	repl_raft_conn_unref(&c->b);
}

static void
on_handle_closed(uv_handle_t *h)
{
	unref(h->data);
}

static void
on_orphan_closed(uv_handle_t *h)
{
	raft_free(h);
}

/* The peer's wire-protocol host (its Raft port less the offset), for
 * rs.status()'s note of a failed handshake. */
static void
note_peer(const tc_t *c, const char *reason)
{
	repl_raft_conn_note(&c->b, reason);
}

/*
 * End the relay: every handle closed (raft_wrap.c, then tc_end); a
 * connector whose connection never became libraft's is told (status).
 * Idempotent.
 */
static void
tc_fail(tc_t *c, const char *reason, int status)
{
	repl_raft_conn_fail(&c->b, reason, status);
}

/* The relay's own handles, closed when it ends (ops->end). */
static void
tc_end(repl_raft_conn_t *b)
{
	tc_t *c = (tc_t *)b;

	if (c->mine_open) {
		uv_read_stop((uv_stream_t *)&c->mine);
		repl_raft_conn_ref(&c->b);
		uv_close((uv_handle_t *)&c->mine, on_handle_closed);
	}
	if (c->theirs != NULL)
		uv_close((uv_handle_t *)c->theirs, on_orphan_closed);
	c->theirs = NULL;
}

static void
tc_release(repl_raft_conn_t *b)
{
	SSL_free(((tc_t *)b)->ssl);
}

/* ---- moving bytes ------------------------------------------------------------------------------------ */

static void on_tcp_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf);
static void on_pipe_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf);

static void
tcp_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
	tc_t *c = h->data;

	(void)suggested;
	*buf = uv_buf_init(c->tbuf, sizeof(c->tbuf));
}

static void
pipe_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
	tc_t *c = h->data;

	(void)suggested;
	*buf = uv_buf_init(c->pbuf, sizeof(c->pbuf));
}

static void
on_tcp_written(uv_write_t *w, int status)
{
	wr_t *r = (wr_t *)w;
	tc_t *c = r->tc;

	free(r);
	if (!c->b.done && status < 0)
		tc_fail(c, NULL, RAFT_NOCONNECTION);
	else if (!c->b.done && c->pipe_paused &&
	    uv_stream_get_write_queue_size(c->b.tcp) < REPL_RAFT_TLS_QUEUE_MAX / 2) {
		c->pipe_paused = false;
		uv_read_start((uv_stream_t *)&c->mine, pipe_alloc, on_pipe_read);
	}
	unref(c);
}

static void
on_pipe_written(uv_write_t *w, int status)
{
	wr_t *r = (wr_t *)w;
	tc_t *c = r->tc;

	free(r);
	if (!c->b.done && status < 0)
		tc_fail(c, NULL, 0);
	else if (!c->b.done && c->tcp_paused &&
	    uv_stream_get_write_queue_size((uv_stream_t *)&c->mine) < REPL_RAFT_TLS_QUEUE_MAX / 2) {
		c->tcp_paused = false;
		uv_read_start(c->b.tcp, tcp_alloc, on_tcp_read);
	}
	unref(c);
}

/* Queue r (n bytes of r->data, r owned here) on stream s. */
static int
write_out(tc_t *c, uv_stream_t *s, wr_t *r, size_t n, uv_write_cb cb)
{
	uv_buf_t b = uv_buf_init(r->data, (unsigned)n);

	r->tc = c;
	if (uv_write(&r->w, s, &b, 1, cb) != 0) {
		free(r);
		return -1;
	}
	repl_raft_conn_ref(&c->b);
	return 0;
}

static wr_t *
wr_new(size_t n)
{
	return malloc(sizeof(wr_t) + n);
}

/* Send what OpenSSL has written into the memory BIO. */
static int
flush_tls(tc_t *c)
{
	size_t pending;

	while ((pending = BIO_ctrl_pending(c->wbio)) > 0) {
		wr_t *r = wr_new(pending);
		int n;
		if (r == NULL)
			return -1;
		n = BIO_read(c->wbio, r->data, (int)pending);
		if (n <= 0) {
			free(r);
			return -1;
		}
		if (write_out(c, c->b.tcp, r, (size_t)n, on_tcp_written) != 0)
			return -1;
	}
	return 0;
}

/* Bytes for libraft: onto our end of the socketpair; TCP reads pause
 * while libraft is far behind. */
static int
to_pipe(tc_t *c, const char *data, size_t n)
{
	wr_t *r = wr_new(n);

	if (r == NULL)
		return -1;
	memcpy(r->data, data, n);
	if (write_out(c, (uv_stream_t *)&c->mine, r, n, on_pipe_written) != 0)
		return -1;
	if (!c->tcp_paused && uv_stream_get_write_queue_size((uv_stream_t *)&c->mine) > REPL_RAFT_TLS_QUEUE_MAX) {
		c->tcp_paused = true;
		uv_read_stop(c->b.tcp);
	}
	return 0;
}

/*
 * The connection is ready: libraft gets its end of a new socketpair and
 * the relay starts reading ours.  -1 when the socketpair cannot be made
 * (the caller fails the relay).
 */
static int
become_ready(tc_t *c)
{
	repl_raft_wrap_t *rt = c->b.w;
	int sv[2];
	uv_pipe_t *theirs;

	if (rt->closing || socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
		return -1;
	theirs = raft_malloc(sizeof(*theirs));
	if (theirs == NULL) {
		close(sv[0]);
		close(sv[1]);
		return -1;
	}
	uv_pipe_init(rt->loop, &c->mine, 0);
	uv_pipe_init(rt->loop, theirs, 0);
	c->mine.data = c;
	c->mine_open = true;
	c->theirs = theirs;
	if (uv_pipe_open(&c->mine, sv[0]) != 0) {
		close(sv[0]);
		close(sv[1]);
		return -1;
	}
	if (uv_pipe_open(theirs, sv[1]) != 0) {
		close(sv[1]);
		return -1;
	}
	if (uv_read_start((uv_stream_t *)&c->mine, pipe_alloc, on_pipe_read) != 0)
		return -1;
	c->ready = true;
	c->theirs = NULL;
	if (c->ssl != NULL && !auth_member_key_present())
		note_peer(c, NULL);
	repl_raft_conn_hand_over(&c->b, (uv_stream_t *)theirs, true);
	return 0;
}

/* Drive OpenSSL after new TCP bytes: the handshake, then every record
 * decrypted for libraft. */
static void
pump(tc_t *c)
{
	char why[256];

	if (!c->ready) {
		int r = SSL_do_handshake(c->ssl);
		if (flush_tls(c) != 0) {
			tc_fail(c, NULL, RAFT_NOCONNECTION);
			return;
		}
		if (r != 1) {
			int e = SSL_get_error(c->ssl, r);
			if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE)
				return;
			repl_member_tls_reason(c->ssl, why, sizeof(why));
			tc_fail(c, why, RAFT_NOCONNECTION);
			return;
		}
		if (repl_member_tls_peer_check(c->ssl, why, sizeof(why)) != 0) {
			tc_fail(c, why, RAFT_NOCONNECTION);
			return;
		}
		if (become_ready(c) != 0) {
			tc_fail(c, NULL, RAFT_NOCONNECTION);
			return;
		}
	}
	for (;;) {
		wr_t *w = wr_new(CHUNK);
		int n, e;
		if (w == NULL) {
			tc_fail(c, NULL, 0);
			return;
		}
		n = SSL_read(c->ssl, w->data, CHUNK);
		if (n > 0) {
			if (write_out(c, (uv_stream_t *)&c->mine, w, (size_t)n, on_pipe_written) != 0) {
				tc_fail(c, NULL, 0);
				return;
			}
			continue;
		}
		free(w);
		e = SSL_get_error(c->ssl, n);
		if (e != SSL_ERROR_WANT_READ && e != SSL_ERROR_WANT_WRITE) {
			/* close_notify, or a broken record */
			ERR_clear_error();
			tc_fail(c, NULL, 0);
			return;
		}
		break;
	}
	if (flush_tls(c) != 0) {
		tc_fail(c, NULL, 0);
		return;
	}
	if (!c->tcp_paused && uv_stream_get_write_queue_size((uv_stream_t *)&c->mine) > REPL_RAFT_TLS_QUEUE_MAX) {
		c->tcp_paused = true;
		uv_read_stop(c->b.tcp);
	}
}

static int
start_tls(tc_t *c, SSL *ssl)
{
	c->ssl = ssl;
	c->rbio = BIO_new(BIO_s_mem());
	c->wbio = BIO_new(BIO_s_mem());
	if (c->ssl == NULL || c->rbio == NULL || c->wbio == NULL) {
		BIO_free(c->rbio);
		BIO_free(c->wbio);
		c->rbio = c->wbio = NULL;
		return -1;
	}
	SSL_set_bio(c->ssl, c->rbio, c->wbio);
	if (c->b.connector)
		SSL_set_connect_state(c->ssl);
	else
		SSL_set_accept_state(c->ssl);
	return 0;
}

static void
on_tcp_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
	tc_t *c = s->data;

	(void)buf;
	if (c->b.done || nread == 0)
		return;
	if (nread < 0) {
		tc_fail(c, c->ready ? NULL : "TLS handshake failed: the peer closed the connection", RAFT_NOCONNECTION);
		return;
	}
	if (!c->decided) {
		c->decided = true;
		if ((unsigned char)c->tbuf[0] == 0x16) {
			if (start_tls(c, repl_member_tls_server()) != 0) {
				tc_fail(c, NULL, 0);
				return;
			}
		} else if (repl_member_tls_mode() == REPL_MEMBER_TLS_REQUIRE) {
			/* mongod's requireTLS: a plain connection is closed */
			tc_fail(c, "The server is configured to only allow SSL connections", 0);
			return;
		} else {
			char why[256];
			if (repl_member_tls_peer_check(NULL, why, sizeof(why)) != 0) {
				tc_fail(c, why, 0);
				return;
			}
			if (become_ready(c) != 0) {
				tc_fail(c, NULL, 0);
				return;
			}
		}
	}
	if (c->ssl == NULL) {
		if (to_pipe(c, c->tbuf, (size_t)nread) != 0)
			tc_fail(c, NULL, 0);
		return;
	}
	if (BIO_write(c->rbio, c->tbuf, (int)nread) != (int)nread) {
		tc_fail(c, NULL, RAFT_NOCONNECTION);
		return;
	}
	pump(c);
}

static void
on_pipe_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
	tc_t *c = s->data;

	(void)buf;
	if (c->b.done || nread == 0)
		return;
	if (nread < 0) {
		/* libraft closed its end */
		if (c->ssl != NULL && SSL_shutdown(c->ssl) >= 0)
			flush_tls(c);
		ERR_clear_error();
		tc_fail(c, NULL, 0);
		return;
	}
	if (c->ssl != NULL) {
		if (SSL_write(c->ssl, c->pbuf, (int)nread) != (int)nread || flush_tls(c) != 0) {
			ERR_clear_error();
			tc_fail(c, NULL, 0);
			return;
		}
	} else {
		wr_t *r = wr_new((size_t)nread);
		if (r == NULL) {
			tc_fail(c, NULL, 0);
			return;
		}
		memcpy(r->data, c->pbuf, (size_t)nread);
		if (write_out(c, c->b.tcp, r, (size_t)nread, on_tcp_written) != 0) {
			tc_fail(c, NULL, 0);
			return;
		}
	}
	if (!c->pipe_paused && uv_stream_get_write_queue_size(c->b.tcp) > REPL_RAFT_TLS_QUEUE_MAX) {
		c->pipe_paused = true;
		uv_read_stop((uv_stream_t *)&c->mine);
	}
}

/* ---- the relay on each connection (raft_wrap.c runs the transport) ------------------------------------ */

/* acceptor: the first byte decides (on_tcp_read) */
static void
on_accepted(repl_raft_conn_t *b)
{
	tc_t *c = (tc_t *)b;

	if (uv_read_start(c->b.tcp, tcp_alloc, on_tcp_read) != 0)
		tc_fail(c, NULL, 0);
}

/* connector: a TLS client of the peer's Raft address */
static void
on_connected(repl_raft_conn_t *b)
{
	tc_t *c = (tc_t *)b;

	c->decided = true;
	if (start_tls(c, repl_member_tls_client(c->b.address)) != 0 ||
	    uv_read_start(c->b.tcp, tcp_alloc, on_tcp_read) != 0) {
		tc_fail(c, NULL, RAFT_NOCONNECTION);
		return;
	}
	pump(c);   /* the ClientHello */
}

/* allowTLS: members connect out in clear */
static bool
wrap_connect(void)
{
	return repl_member_tls_outgoing();
}

static const repl_raft_wrap_ops_t tls_ops = {
	.conn_size = sizeof(tc_t),
	.timeout_ms = REPL_RAFT_TLS_TIMEOUT_MS,
	.timeout_reason = "TLS handshake timed out",
	.note = repl_member_tls_note,
	.wrap_connect = wrap_connect,
	.accepted = on_accepted,
	.connected = on_connected,
	.end = tc_end,
	.release = tc_release,
};

int
repl_raft_tls_init(struct raft_uv_transport *outer, struct raft_uv_transport *inner, uv_loop_t *loop)
{
	return repl_raft_wrap_init(outer, inner, loop, &tls_ops);
}

void
repl_raft_tls_close(struct raft_uv_transport *outer)
{
	repl_raft_wrap_close(outer);
}
