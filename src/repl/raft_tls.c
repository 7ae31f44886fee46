/*
 * raft_tls.c -- the TLS relay under libraft's transport (raft_tls.h): one
 * relay per Raft connection, TCP socket <-> OpenSSL memory BIOs <->
 * socketpair end, all on the member's loop thread.
 *
 * Not here: the OpenSSL contexts and the certificate rules (member_tls.c);
 * the keyFile handshake (raft_auth.c).
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

#define CHUNK 16384

typedef struct tc tc_t;

typedef struct rt {
	struct raft_uv_transport *outer, *inner;
	uv_loop_t *loop;
	raft_uv_accept_cb accept_cb;
	raft_uv_transport_close_cb close_cb;
	tc_t *conns;                     /* live relays (and handshakes) */
	bool closing;
} rt_t;

struct tc {
	rt_t *rt;
	bool connector;
	uv_stream_t *tcp;                /* raft_uv_tcp's stream (raft_malloc'd) */
	uv_pipe_t mine;                  /* our end of the socketpair */
	bool mine_open;
	uv_pipe_t *theirs;               /* libraft's end, until handed over */
	SSL *ssl;                        /* NULL: a plain relay (allowTLS/preferTLS acceptor) */
	BIO *rbio, *wbio;                /* owned by ssl */
	bool decided;                    /* acceptor: TLS or plain chosen */
	bool ready;                      /* libraft has its end */
	bool done;
	bool tcp_paused, pipe_paused;    /* reads stopped: the other side is behind */
	uv_timer_t timer;
	int refs;                        /* alive, the timer, closing handles, writes in flight */
	raft_id id;
	char address[280];
	struct raft_uv_connect inner_req;
	struct raft_uv_connect *req;     /* connector: libraft's request */
	char tbuf[CHUNK], pbuf[CHUNK];
	tc_t *next, **prevp;
};

typedef struct wr {
	uv_write_t w;
	tc_t *tc;
	char data[];
} wr_t;

/* ---- bookkeeping ---------------------------------------------------------------------------------- */

static void
link_tc(rt_t *rt, tc_t *c)
{
	c->next = rt->conns;
	if (rt->conns != NULL)
		rt->conns->prevp = &c->next;
	rt->conns = c;
	c->prevp = &rt->conns;
}

static void
unlink_tc(tc_t *c)
{
	if (c->prevp == NULL)
		return;
	*c->prevp = c->next;
	if (c->next != NULL)
		c->next->prevp = c->prevp;
	c->prevp = NULL;
	c->next = NULL;
}

static void
unref(tc_t *c)
{
	if (--c->refs == 0) {
		SSL_free(c->ssl);
		free(c);
	}
}

static void
on_handle_closed(uv_handle_t *h)
{
	unref(h->data);
}

static void
on_raft_stream_closed(uv_handle_t *h)
{
	tc_t *c = h->data;

	raft_free(h);
	unref(c);
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
	char host[300];
	const char *colon = strrchr(c->address, ':');
	long port = colon != NULL ? strtol(colon + 1, NULL, 10) : 0;

	if (colon == NULL || port <= REPL_RAFT_PORT_OFFSET)
		return;
	snprintf(host, sizeof(host), "%.*s:%ld", (int)(colon - c->address), c->address, port - REPL_RAFT_PORT_OFFSET);
	repl_member_tls_note(host, reason);
}

/*
 * End the relay: every handle closed; a connector whose connection never
 * became libraft's is told (status).  Idempotent.
 */
static void
tc_fail(tc_t *c, const char *reason, int status)
{
	struct raft_uv_connect *req = c->ready ? NULL : c->req;

	if (c->done)
		return;
	c->done = true;
	unlink_tc(c);
	if (reason != NULL)
		note_peer(c, reason);
	uv_timer_stop(&c->timer);
	c->refs++;
	uv_close((uv_handle_t *)&c->timer, on_handle_closed);
	if (c->tcp != NULL) {
		uv_read_stop(c->tcp);
		c->tcp->data = c;
		c->refs++;
		uv_close((uv_handle_t *)c->tcp, on_raft_stream_closed);
	}
	if (c->mine_open) {
		uv_read_stop((uv_stream_t *)&c->mine);
		c->refs++;
		uv_close((uv_handle_t *)&c->mine, on_handle_closed);
	}
	if (c->theirs != NULL)
		uv_close((uv_handle_t *)c->theirs, on_orphan_closed);
	c->theirs = NULL;
	if (c->connector && req != NULL) {
		c->req = NULL;
		req->cb(req, NULL, status);
	}
	unref(c);
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
	if (!c->done && status < 0)
		tc_fail(c, NULL, RAFT_NOCONNECTION);
	else if (!c->done && c->pipe_paused &&
	    uv_stream_get_write_queue_size(c->tcp) < REPL_RAFT_TLS_QUEUE_MAX / 2) {
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
	if (!c->done && status < 0)
		tc_fail(c, NULL, 0);
	else if (!c->done && c->tcp_paused &&
	    uv_stream_get_write_queue_size((uv_stream_t *)&c->mine) < REPL_RAFT_TLS_QUEUE_MAX / 2) {
		c->tcp_paused = false;
		uv_read_start(c->tcp, tcp_alloc, on_tcp_read);
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
	c->refs++;
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
		if (write_out(c, c->tcp, r, (size_t)n, on_tcp_written) != 0)
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
		uv_read_stop(c->tcp);
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
	rt_t *rt = c->rt;
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
	uv_timer_stop(&c->timer);
	c->ready = true;
	c->theirs = NULL;
	if (c->ssl != NULL && !auth_member_key_present())
		note_peer(c, NULL);
	if (c->connector) {
		struct raft_uv_connect *req = c->req;
		c->req = NULL;
		req->cb(req, (uv_stream_t *)theirs, 0);
	} else {
		rt->accept_cb(rt->outer, c->id, c->address, (uv_stream_t *)theirs);
	}
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
		uv_read_stop(c->tcp);
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
	if (c->connector)
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
	if (c->done || nread == 0)
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
	if (c->done || nread == 0)
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
		if (write_out(c, c->tcp, r, (size_t)nread, on_tcp_written) != 0) {
			tc_fail(c, NULL, 0);
			return;
		}
	}
	if (!c->pipe_paused && uv_stream_get_write_queue_size(c->tcp) > REPL_RAFT_TLS_QUEUE_MAX) {
		c->pipe_paused = true;
		uv_read_stop((uv_stream_t *)&c->mine);
	}
}

/* ---- the transport ------------------------------------------------------------------------------------ */

static void
on_timeout(uv_timer_t *t)
{
	tc_fail(t->data, "TLS handshake timed out", RAFT_NOCONNECTION);
}

static tc_t *
tc_new(rt_t *rt, bool connector, raft_id id, const char *address)
{
	tc_t *c = calloc(1, sizeof(*c));

	if (c == NULL)
		return NULL;
	c->rt = rt;
	c->connector = connector;
	c->id = id;
	snprintf(c->address, sizeof(c->address), "%s", address != NULL ? address : "");
	c->refs = 1;
	uv_timer_init(rt->loop, &c->timer);
	c->timer.data = c;
	uv_timer_start(&c->timer, on_timeout, REPL_RAFT_TLS_TIMEOUT_MS, 0);
	link_tc(rt, c);
	return c;
}

static void
on_inner_accept(struct raft_uv_transport *inner, raft_id id, const char *address, uv_stream_t *stream)
{
	rt_t *rt = inner->data;
	tc_t *c;

	if (rt->closing || (c = tc_new(rt, false, id, address)) == NULL) {
		uv_close((uv_handle_t *)stream, on_orphan_closed);
		return;
	}
	c->tcp = stream;
	stream->data = c;
	if (uv_read_start(stream, tcp_alloc, on_tcp_read) != 0)
		tc_fail(c, NULL, 0);
}

static void on_inner_connect_step(tc_t *c, uv_stream_t *stream, int status);

/* The inner TCP connect completed.  It holds a reference on the relay
 * (t_connect), so a handshake timeout that ended the relay first frees
 * nothing this reads (as raft_auth.c's connect). */
static void
on_inner_connect(struct raft_uv_connect *inner_req, uv_stream_t *stream, int status)
{
	tc_t *c = inner_req->data;

	if (c->done) {
		/* the timeout (or close) ended the relay while TCP still
		 * connected, and told libraft: only the late stream is ours */
		if (stream != NULL)
			uv_close((uv_handle_t *)stream, on_orphan_closed);
		unref(c);
		return;
	}
	on_inner_connect_step(c, stream, status);
	unref(c);   /* the connect's reference (t_connect) */
}

static void
on_inner_connect_step(tc_t *c, uv_stream_t *stream, int status)
{
	if (status != 0 || c->rt->closing) {
		struct raft_uv_connect *req = c->req;
		if (stream != NULL)
			uv_close((uv_handle_t *)stream, on_orphan_closed);
		c->req = NULL;
		tc_fail(c, NULL, status);
		req->cb(req, NULL, status != 0 ? status : RAFT_CANCELED);
		return;
	}
	c->tcp = stream;
	stream->data = c;
	c->decided = true;
	if (start_tls(c, repl_member_tls_client(c->address)) != 0 ||
	    uv_read_start(stream, tcp_alloc, on_tcp_read) != 0) {
		tc_fail(c, NULL, RAFT_NOCONNECTION);
		return;
	}
	pump(c);   /* the ClientHello */
}

static int
t_init(struct raft_uv_transport *t, raft_id id, const char *address)
{
	rt_t *rt = t->impl;
	int rv = rt->inner->init(rt->inner, id, address);

	if (rv != 0)
		snprintf(t->errmsg, sizeof(t->errmsg), "%s", rt->inner->errmsg);
	return rv;
}

static int
t_listen(struct raft_uv_transport *t, raft_uv_accept_cb cb)
{
	rt_t *rt = t->impl;
	int rv;

	rt->accept_cb = cb;
	rv = rt->inner->listen(rt->inner, on_inner_accept);
	if (rv != 0)
		snprintf(t->errmsg, sizeof(t->errmsg), "%s", rt->inner->errmsg);
	return rv;
}

static int
t_connect(struct raft_uv_transport *t, struct raft_uv_connect *req, raft_id id, const char *address,
          raft_uv_connect_cb cb)
{
	rt_t *rt = t->impl;
	tc_t *c;
	int rv;

	if (!repl_member_tls_outgoing()) {
		/* allowTLS: members connect out in clear */
		rv = rt->inner->connect(rt->inner, req, id, address, cb);
		if (rv != 0)
			snprintf(t->errmsg, sizeof(t->errmsg), "%s", rt->inner->errmsg);
		return rv;
	}
	c = tc_new(rt, true, id, address);
	if (c == NULL)
		return RAFT_NOMEM;
	req->cb = cb;
	c->req = req;
	c->inner_req.data = c;
	c->refs++;   /* the inner connect's, dropped by on_inner_connect */
	rv = rt->inner->connect(rt->inner, &c->inner_req, id, address, on_inner_connect);
	if (rv != 0) {
		c->req = NULL;
		tc_fail(c, NULL, rv);
		snprintf(t->errmsg, sizeof(t->errmsg), "%s", rt->inner->errmsg);
		unref(c);
	}
	return rv;
}

static void
on_inner_closed(struct raft_uv_transport *inner)
{
	rt_t *rt = inner->data;

	if (rt->close_cb != NULL)
		rt->close_cb(rt->outer);
}

static void
t_close(struct raft_uv_transport *t, raft_uv_transport_close_cb cb)
{
	rt_t *rt = t->impl;

	rt->closing = true;
	rt->close_cb = cb;
	/* every relay ends now (none may outlive rt); a connector still
	 * waiting for its TCP connect is cancelled by the inner close */
	for (tc_t *c = rt->conns, *next; c != NULL; c = next) {
		next = c->next;
		if (c->tcp != NULL || !c->connector)
			tc_fail(c, NULL, RAFT_CANCELED);
	}
	rt->inner->close(rt->inner, on_inner_closed);
}

int
repl_raft_tls_init(struct raft_uv_transport *outer, struct raft_uv_transport *inner, uv_loop_t *loop)
{
	rt_t *rt = calloc(1, sizeof(*rt));

	if (rt == NULL)
		return RAFT_NOMEM;
	rt->outer = outer;
	rt->inner = inner;
	rt->loop = loop;
	inner->data = rt;
	memset(outer, 0, sizeof(*outer));
	outer->impl = rt;
	outer->init = t_init;
	outer->listen = t_listen;
	outer->connect = t_connect;
	outer->close = t_close;
	return 0;
}

void
repl_raft_tls_close(struct raft_uv_transport *outer)
{
	free(outer->impl);
	outer->impl = NULL;
}
