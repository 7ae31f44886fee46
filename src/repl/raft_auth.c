/*
 * raft_auth.c -- the keyFile handshake on canonical/raft's libuv transport
 * (raft_auth.h): the protocol's steps as pure functions, then the wrapping
 * transport that runs them on each new connection before libraft sees it.
 *
 * Not here: the MACs and the key (auth/auth_member.c); Raft itself
 * (raft_member.c).
 */
#include "repl/raft_auth.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "auth/auth_member.h"
#include "repl/member_rpc.h"
#include "repl/raft_member.h"

/* ---- the protocol --------------------------------------------------------------------------------- */

void
repl_raft_auth_hello(const uint8_t nc[32], uint8_t out[REPL_RAFT_AUTH_HELLO_LEN])
{
	memcpy(out, REPL_RAFT_AUTH_MAGIC, REPL_RAFT_AUTH_MAGIC_LEN);
	memset(out + REPL_RAFT_AUTH_MAGIC_LEN, 0, REPL_RAFT_AUTH_NC_AT - REPL_RAFT_AUTH_MAGIC_LEN);
	memcpy(out + REPL_RAFT_AUTH_NC_AT, nc, 32);
}

static bool
hello_ok(const uint8_t *hello)
{
	static const uint8_t zero[REPL_RAFT_AUTH_NC_AT - REPL_RAFT_AUTH_MAGIC_LEN];

	return memcmp(hello, REPL_RAFT_AUTH_MAGIC, REPL_RAFT_AUTH_MAGIC_LEN) == 0 &&
	    memcmp(hello + REPL_RAFT_AUTH_MAGIC_LEN, zero, sizeof(zero)) == 0;
}

int
repl_raft_auth_answer(const uint8_t hello[REPL_RAFT_AUTH_HELLO_LEN], uint64_t id, uint8_t ns[32],
                      uint8_t out[REPL_RAFT_AUTH_ANSWER_LEN])
{
	size_t nk = auth_member_key_count();

	if (!hello_ok(hello) || nk == 0 || auth_member_nonce(ns) != 0)
		return -1;
	memcpy(out, REPL_RAFT_AUTH_MAGIC, REPL_RAFT_AUTH_MAGIC_LEN);
	memcpy(out + REPL_RAFT_AUTH_MAGIC_LEN, ns, 32);
	/* one MAC per key (a single key fills both slots) */
	for (size_t k = 0; k < REPL_RAFT_AUTH_KEY_SLOTS; k++)
		if (auth_member_mac(k < nk ? k : 0, 'S', hello + REPL_RAFT_AUTH_NC_AT, ns, id,
		    out + 40 + 32 * k) != 0)
			return -1;
	return 0;
}

int
repl_raft_auth_prove(const uint8_t nc[32], uint64_t id, const uint8_t answer[REPL_RAFT_AUTH_ANSWER_LEN],
                     uint8_t out[32])
{
	uint8_t want[AUTH_MEMBER_MAC_LEN];
	size_t nk = auth_member_key_count();

	if (memcmp(answer, REPL_RAFT_AUTH_MAGIC, REPL_RAFT_AUTH_MAGIC_LEN) != 0)
		return -1;
	/* our keys in order: the first one the acceptor also holds proves */
	for (size_t k = 0; k < nk; k++) {
		bool match = false;
		if (auth_member_mac(k, 'S', nc, answer + REPL_RAFT_AUTH_MAGIC_LEN, id, want) != 0)
			return -1;
		for (size_t slot = 0; slot < REPL_RAFT_AUTH_KEY_SLOTS; slot++)
			match |= auth_member_mac_equal(want, answer + 40 + 32 * slot);
		if (match)
			return auth_member_mac(k, 'C', answer + REPL_RAFT_AUTH_MAGIC_LEN, nc, id, out);
	}
	return -1;
}

int
repl_raft_auth_check(const uint8_t hello[REPL_RAFT_AUTH_HELLO_LEN], const uint8_t ns[32], uint64_t id, const uint8_t proof[32])
{
	uint8_t want[AUTH_MEMBER_MAC_LEN];
	size_t nk = auth_member_key_count();
	bool ok = false;

	if (!hello_ok(hello) || nk == 0)
		return -1;
	for (size_t k = 0; k < nk; k++) {
		if (auth_member_mac(k, 'C', ns, hello + REPL_RAFT_AUTH_NC_AT, id, want) != 0)
			return -1;
		ok |= auth_member_mac_equal(want, proof);
	}
	return ok ? 0 : -1;
}

/* ---- the transport ---------------------------------------------------------------------------------- */

typedef struct hs hs_t;

typedef struct ra {
	struct raft_uv_transport *outer, *inner;
	uv_loop_t *loop;
	raft_id self_id;
	raft_uv_accept_cb accept_cb;
	raft_uv_transport_close_cb close_cb;
	hs_t *pending;                   /* handshakes in flight */
	bool closing;
} ra_t;

struct hs {
	ra_t *ra;
	bool connector;
	uv_stream_t *stream;
	uv_timer_t timer;
	uv_write_t wreq[2];              /* the first message, the connector's proof */
	int refs;                        /* the timer, a stream being closed, writes in flight */
	bool done;                       /* finished, aborted or failed: no more steps */
	uint8_t out[REPL_RAFT_AUTH_ANSWER_LEN];
	uint8_t proof[32];
	uint8_t in[REPL_RAFT_AUTH_ANSWER_LEN];
	size_t have, want;
	uint8_t hello[REPL_RAFT_AUTH_HELLO_LEN];   /* acceptor: the connector's hello */
	uint8_t nc[32], ns[32];
	raft_id peer_id;                 /* the peer's Raft id (acceptor: as claimed) */
	raft_id mac_id;                  /* the connector's id, which the MACs carry */
	char address[280];               /* the peer's Raft address */
	struct raft_uv_connect inner_req;
	struct raft_uv_connect *req;     /* connector: libraft's request */
	hs_t *next, **prevp;
};

static void
unlink_hs(hs_t *h)
{
	if (h->prevp == NULL)
		return;
	*h->prevp = h->next;
	if (h->next != NULL)
		h->next->prevp = h->prevp;
	h->prevp = NULL;
	h->next = NULL;
}

static void
link_hs(ra_t *ra, hs_t *h)
{
	h->next = ra->pending;
	if (ra->pending != NULL)
		ra->pending->prevp = &h->next;
	ra->pending = h;
	h->prevp = &ra->pending;
}

static void
unref(hs_t *h)
{
	if (--h->refs == 0)
		free(h);
}

static void
on_timer_closed(uv_handle_t *handle)
{
	unref(handle->data);
}

static void
on_stream_closed(uv_handle_t *handle)
{
	hs_t *h = handle->data;

	raft_free(handle);
	unref(h);
}

/* The peer's wire-protocol host: its Raft address's port less the offset. */
static void
note_peer(const hs_t *h, const char *reason)
{
	char host[300];
	const char *colon = strrchr(h->address, ':');
	long port = colon != NULL ? strtol(colon + 1, NULL, 10) : 0;

	if (colon == NULL || port <= REPL_RAFT_PORT_OFFSET)
		return;
	snprintf(host, sizeof(host), "%.*s:%ld", (int)(colon - h->address), h->address, port - REPL_RAFT_PORT_OFFSET);
	repl_member_auth_note(host, reason);
}

/* Close the handshake's handles; keep_stream: the stream went to libraft. */
static void
finish(hs_t *h, bool keep_stream)
{
	h->done = true;
	unlink_hs(h);
	uv_timer_stop(&h->timer);
	uv_close((uv_handle_t *)&h->timer, on_timer_closed);
	if (!keep_stream && h->stream != NULL) {
		uv_read_stop(h->stream);
		h->stream->data = h;
		h->refs++;
		uv_close((uv_handle_t *)h->stream, on_stream_closed);
	}
}

/* The handshake failed: the connection is closed; a connector tells
 * libraft it could not connect. */
static void
fail(hs_t *h, const char *reason, int status)
{
	struct raft_uv_connect *req = h->req;
	bool connector = h->connector;

	if (h->done)
		return;
	if (reason != NULL)
		note_peer(h, reason);
	finish(h, false);
	if (connector && req != NULL)
		req->cb(req, NULL, status);
}

static void step_read_done(hs_t *h);

static void
on_alloc(uv_handle_t *handle, size_t suggested, uv_buf_t *buf)
{
	hs_t *h = handle->data;

	(void)suggested;
	/* exactly what the step misses: never a byte of what follows */
	*buf = uv_buf_init((char *)h->in + h->have, (unsigned)(h->want - h->have));
}

static void
on_read(uv_stream_t *stream, ssize_t nread, const uv_buf_t *buf)
{
	hs_t *h = stream->data;

	(void)buf;
	if (h->done || nread == 0)
		return;
	if (nread < 0) {
		/* closed before the handshake ended: a peer without the keyFile
		 * handshake (or with another key) hangs up */
		fail(h, "Authentication failed.", RAFT_NOCONNECTION);
		return;
	}
	h->have += (size_t)nread;
	if (h->have < h->want)
		return;
	uv_read_stop(stream);
	step_read_done(h);
}

static int
start_read(hs_t *h, size_t want)
{
	h->have = 0;
	h->want = want;
	h->stream->data = h;
	return uv_read_start(h->stream, on_alloc, on_read);
}

static void on_written(uv_write_t *w, int status);

/* Write the first message (which 0) or the connector's proof (which 1). */
static int
send_out(hs_t *h, int which)
{
	uv_buf_t b = which == 0 ? uv_buf_init((char *)h->out, h->connector ? REPL_RAFT_AUTH_HELLO_LEN :
	    REPL_RAFT_AUTH_ANSWER_LEN) :
	    uv_buf_init((char *)h->proof, 32);
	int rv;

	h->wreq[which].data = h;
	rv = uv_write(&h->wreq[which], h->stream, &b, 1, on_written);
	if (rv == 0)
		h->refs++;
	return rv;
}

static void
on_timeout(uv_timer_t *t)
{
	fail(t->data, "Authentication failed.", RAFT_NOCONNECTION);
}

static void
on_written(uv_write_t *w, int status)
{
	hs_t *h = w->data;

	if (!h->done && status != 0)
		fail(h, NULL, RAFT_NOCONNECTION);
	else if (!h->done && h->connector && w == &h->wreq[1]) {
		/* the proof is out (writes complete in order): the connection is
		 * libraft's */
		struct raft_uv_connect *req = h->req;
		uv_stream_t *s = h->stream;
		note_peer(h, NULL);
		finish(h, true);
		req->cb(req, s, 0);
	}
	unref(h);
}

static void
step_read_done(hs_t *h)
{
	ra_t *ra = h->ra;

	if (h->connector) {
		/* the acceptor's answer: check it, then prove */
		if (repl_raft_auth_prove(h->nc, h->mac_id, h->in, h->proof) != 0) {
			fail(h, "Authentication failed.", RAFT_NOCONNECTION);
			return;
		}
		if (send_out(h, 1) != 0)
			fail(h, NULL, RAFT_NOCONNECTION);
		return;
	}
	if (h->want == REPL_RAFT_AUTH_HELLO_LEN) {
		memcpy(h->hello, h->in, REPL_RAFT_AUTH_HELLO_LEN);
		if (repl_raft_auth_answer(h->hello, h->mac_id, h->ns, h->out) != 0) {
			fail(h, "Authentication failed.", 0);
			return;
		}
		if (send_out(h, 0) != 0 || start_read(h, 32) != 0)
			fail(h, NULL, 0);
		return;
	}
	if (repl_raft_auth_check(h->hello, h->ns, h->mac_id, h->in) != 0) {
		fail(h, "Authentication failed.", 0);
		return;
	}
	{
		uv_stream_t *s = h->stream;
		raft_id id = h->peer_id;
		char address[280];
		bson_strncpy(address, h->address, sizeof(address));
		note_peer(h, NULL);
		finish(h, true);
		ra->accept_cb(ra->outer, id, address, s);
	}
}

static hs_t *
hs_new(ra_t *ra, bool connector, raft_id peer_id, const char *address)
{
	hs_t *h = calloc(1, sizeof(*h));

	if (h == NULL)
		return NULL;
	h->ra = ra;
	h->connector = connector;
	h->peer_id = peer_id;
	h->mac_id = connector ? ra->self_id : peer_id;
	snprintf(h->address, sizeof(h->address), "%s", address != NULL ? address : "");
	uv_timer_init(ra->loop, &h->timer);
	h->timer.data = h;
	h->refs = 1;
	link_hs(ra, h);
	uv_timer_start(&h->timer, on_timeout, REPL_RAFT_AUTH_TIMEOUT_MS, 0);
	return h;
}

/* A stream that never became a handshake's (no memory): closed and freed. */
static void
on_orphan_closed(uv_handle_t *handle)
{
	raft_free(handle);
}

static void
on_inner_accept(struct raft_uv_transport *inner, raft_id id, const char *address, uv_stream_t *stream)
{
	ra_t *ra = inner->data;
	hs_t *h;

	if (ra->closing || (h = hs_new(ra, false, id, address)) == NULL) {
		uv_close((uv_handle_t *)stream, on_orphan_closed);
		return;
	}
	h->stream = stream;
	if (start_read(h, REPL_RAFT_AUTH_HELLO_LEN) != 0)
		fail(h, NULL, 0);
}

static void on_inner_connect_step(hs_t *h, uv_stream_t *stream, int status);

/* The inner TCP connect completed.  It holds a reference on the handshake
 * (t_connect), so a timeout that ended the handshake first frees nothing
 * this reads. */
static void
on_inner_connect(struct raft_uv_connect *inner_req, uv_stream_t *stream, int status)
{
	hs_t *h = inner_req->data;

	if (h->done) {
		/* the handshake's timeout (or close) ended it while TCP still
		 * connected, and told libraft: only the late stream is ours */
		if (stream != NULL)
			uv_close((uv_handle_t *)stream, on_orphan_closed);
		unref(h);
		return;
	}
	on_inner_connect_step(h, stream, status);
	unref(h);   /* the connect's reference (t_connect) */
}

static void
on_inner_connect_step(hs_t *h, uv_stream_t *stream, int status)
{
	if (status != 0 || h->ra->closing) {
		struct raft_uv_connect *req = h->req;
		if (stream != NULL)
			uv_close((uv_handle_t *)stream, on_orphan_closed);
		h->req = NULL;
		fail(h, NULL, status);
		req->cb(req, NULL, status != 0 ? status : RAFT_CANCELED);
		return;
	}
	h->stream = stream;
	if (auth_member_nonce(h->nc) != 0) {
		fail(h, NULL, RAFT_NOCONNECTION);
		return;
	}
	repl_raft_auth_hello(h->nc, h->out);
	if (send_out(h, 0) != 0 || start_read(h, REPL_RAFT_AUTH_ANSWER_LEN) != 0)
		fail(h, NULL, RAFT_NOCONNECTION);
}

static int
t_init(struct raft_uv_transport *t, raft_id id, const char *address)
{
	ra_t *ra = t->impl;
	int rv;

	ra->self_id = id;
	rv = ra->inner->init(ra->inner, id, address);
	if (rv != 0)
		snprintf(t->errmsg, sizeof(t->errmsg), "%s", ra->inner->errmsg);
	return rv;
}

static int
t_listen(struct raft_uv_transport *t, raft_uv_accept_cb cb)
{
	ra_t *ra = t->impl;
	int rv;

	ra->accept_cb = cb;
	rv = ra->inner->listen(ra->inner, on_inner_accept);
	if (rv != 0)
		snprintf(t->errmsg, sizeof(t->errmsg), "%s", ra->inner->errmsg);
	return rv;
}

static int
t_connect(struct raft_uv_transport *t, struct raft_uv_connect *req, raft_id id, const char *address,
          raft_uv_connect_cb cb)
{
	ra_t *ra = t->impl;
	hs_t *h = hs_new(ra, true, id, address);
	int rv;

	if (h == NULL)
		return RAFT_NOMEM;
	req->cb = cb;
	h->req = req;
	h->inner_req.data = h;
	h->refs++;   /* the inner connect's, dropped by on_inner_connect */
	rv = ra->inner->connect(ra->inner, &h->inner_req, id, address, on_inner_connect);
	if (rv != 0) {
		h->req = NULL;
		fail(h, NULL, rv);
		snprintf(t->errmsg, sizeof(t->errmsg), "%s", ra->inner->errmsg);
		unref(h);
	}
	return rv;
}

static void
on_inner_closed(struct raft_uv_transport *inner)
{
	ra_t *ra = inner->data;

	if (ra->close_cb != NULL)
		ra->close_cb(ra->outer);
}

static void
t_close(struct raft_uv_transport *t, raft_uv_transport_close_cb cb)
{
	ra_t *ra = t->impl;

	ra->closing = true;
	ra->close_cb = cb;
	/* handshakes past their connect: cancelled here (a connector's request
	 * still waiting for the TCP connect is cancelled by the inner close) */
	for (hs_t *h = ra->pending, *next; h != NULL; h = next) {
		next = h->next;
		if (h->stream != NULL || !h->connector)
			fail(h, NULL, RAFT_CANCELED);
	}
	ra->inner->close(ra->inner, on_inner_closed);
}

int
repl_raft_auth_init(struct raft_uv_transport *outer, struct raft_uv_transport *inner, uv_loop_t *loop)
{
	ra_t *ra = calloc(1, sizeof(*ra));

	if (ra == NULL)
		return RAFT_NOMEM;
	ra->outer = outer;
	ra->inner = inner;
	ra->loop = loop;
	inner->data = ra;
	memset(outer, 0, sizeof(*outer));
	outer->impl = ra;
	outer->init = t_init;
	outer->listen = t_listen;
	outer->connect = t_connect;
	outer->close = t_close;
	return 0;
}

void
repl_raft_auth_close(struct raft_uv_transport *outer)
{
	free(outer->impl);
	outer->impl = NULL;
}
