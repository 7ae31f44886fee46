/*
 * raft_wrap.c -- the outer transport and each connection's lifetime for
 * the handshakes run between canonical/raft's libuv transport and libraft
 * (raft_wrap.h): the keyFile handshake (raft_auth.c) and the TLS relay
 * (raft_tls.c) plug into it.
 *
 * Not here: any byte of a handshake.
 */
#include "repl/raft_wrap.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "repl/raft_member.h"

/* ---- connections ---------------------------------------------------------------------------------- */

static void
link_conn(repl_raft_wrap_t *w, repl_raft_conn_t *c)
{
	c->next = w->conns;
	if (w->conns != NULL)
		w->conns->prevp = &c->next;
	w->conns = c;
	c->prevp = &w->conns;
}

static void
unlink_conn(repl_raft_conn_t *c)
{
	if (c->prevp == NULL)
		return;
	*c->prevp = c->next;
	if (c->next != NULL)
		c->next->prevp = c->prevp;
	c->prevp = NULL;
	c->next = NULL;
}

void
repl_raft_conn_ref(repl_raft_conn_t *c)
{
	c->refs++;
}

void
repl_raft_conn_unref(repl_raft_conn_t *c)
{
	if (--c->refs > 0)
		return;
	if (c->ops->release != NULL)
		c->ops->release(c);
	free(c);
}

static void
on_timer_closed(uv_handle_t *handle)
{
	repl_raft_conn_unref(handle->data);
}

static void
on_tcp_closed(uv_handle_t *handle)
{
	repl_raft_conn_t *c = handle->data;

	raft_free(handle);
	repl_raft_conn_unref(c);
}

/* A stream no connection owns (no memory, closing, or late): closed and freed. */
static void
on_orphan_closed(uv_handle_t *handle)
{
	raft_free(handle);
}

void
repl_raft_conn_note(const repl_raft_conn_t *c, const char *reason)
{
	char host[300];
	const char *colon = strrchr(c->address, ':');
	long port = colon != NULL ? strtol(colon + 1, NULL, 10) : 0;

	if (colon == NULL || port <= REPL_RAFT_PORT_OFFSET)
		return;
	snprintf(host, sizeof(host), "%.*s:%ld", (int)(colon - c->address), c->address, port - REPL_RAFT_PORT_OFFSET);
	c->ops->note(host, reason);
}

/* Close c's handles (the TCP stream unless handed over); the caller
 * drops the alive reference. */
static void
conn_end(repl_raft_conn_t *c)
{
	c->done = true;
	unlink_conn(c);
	uv_timer_stop(&c->timer);
	c->refs++;
	uv_close((uv_handle_t *)&c->timer, on_timer_closed);
	if (c->tcp != NULL) {
		uv_read_stop(c->tcp);
		c->tcp->data = c;
		c->refs++;
		uv_close((uv_handle_t *)c->tcp, on_tcp_closed);
		c->tcp = NULL;
	}
	if (c->ops->end != NULL)
		c->ops->end(c);
}

void
repl_raft_conn_fail(repl_raft_conn_t *c, const char *reason, int status)
{
	struct raft_uv_connect *req = c->req;

	if (c->done)
		return;
	c->req = NULL;
	if (reason != NULL)
		repl_raft_conn_note(c, reason);
	conn_end(c);
	if (c->connector && req != NULL)
		req->cb(req, NULL, status);
	repl_raft_conn_unref(c);   /* alive */
}

void
repl_raft_conn_hand_over(repl_raft_conn_t *c, uv_stream_t *stream, bool relay)
{
	repl_raft_wrap_t *w = c->w;
	struct raft_uv_connect *req = c->req;
	bool connector = c->connector;
	raft_id id = c->id;
	char address[sizeof(c->address)];

	/* libraft's accept callback gets an address that lives through the call */
	memcpy(address, c->address, sizeof(address));
	c->req = NULL;
	c->refs++;   /* through the callback */
	if (relay) {
		uv_timer_stop(&c->timer);
	} else {
		if (c->tcp == stream)
			c->tcp = NULL;
		conn_end(c);
		repl_raft_conn_unref(c);   /* alive */
	}
	if (connector)
		req->cb(req, stream, 0);
	else
		w->accept_cb(w->outer, id, address, stream);
	repl_raft_conn_unref(c);
}

static void
on_timeout(uv_timer_t *t)
{
	repl_raft_conn_t *c = t->data;

	repl_raft_conn_fail(c, c->ops->timeout_reason, RAFT_NOCONNECTION);
}

static repl_raft_conn_t *
conn_new(repl_raft_wrap_t *w, bool connector, raft_id id, const char *address)
{
	repl_raft_conn_t *c = calloc(1, w->ops->conn_size);

	if (c == NULL)
		return NULL;
	c->w = w;
	c->ops = w->ops;
	c->connector = connector;
	c->id = id;
	snprintf(c->address, sizeof(c->address), "%s", address != NULL ? address : "");
	c->refs = 1;   /* alive: dropped when c ends */
	uv_timer_init(w->loop, &c->timer);
	c->timer.data = c;
	uv_timer_start(&c->timer, on_timeout, w->ops->timeout_ms, 0);
	link_conn(w, c);
	return c;
}

/* ---- the transport ---------------------------------------------------------------------------------- */

static void
on_inner_accept(struct raft_uv_transport *inner, raft_id id, const char *address, uv_stream_t *stream)
{
	repl_raft_wrap_t *w = inner->data;
	repl_raft_conn_t *c;

	if (w->closing || (c = conn_new(w, false, id, address)) == NULL) {
		uv_close((uv_handle_t *)stream, on_orphan_closed);
		return;
	}
	c->tcp = stream;
	stream->data = c;
	w->ops->accepted(c);
}

/* The inner TCP connect completed.  It holds a reference on c (t_connect),
 * so a timeout (or close) that ended c first frees nothing this reads. */
static void
on_inner_connect(struct raft_uv_connect *inner_req, uv_stream_t *stream, int status)
{
	repl_raft_conn_t *c = inner_req->data;

	if (c->done) {
		/* the timeout (or close) ended c while TCP still connected, and
		 * told libraft: only the late stream is ours */
		if (stream != NULL)
			uv_close((uv_handle_t *)stream, on_orphan_closed);
	} else if (status != 0 || c->w->closing) {
		struct raft_uv_connect *req = c->req;
		if (stream != NULL)
			uv_close((uv_handle_t *)stream, on_orphan_closed);
		c->req = NULL;
		repl_raft_conn_fail(c, NULL, status);
		req->cb(req, NULL, status != 0 ? status : RAFT_CANCELED);
	} else {
		c->tcp = stream;
		stream->data = c;
		c->ops->connected(c);
	}
	repl_raft_conn_unref(c);   /* the connect's reference (t_connect) */
}

static int
t_init(struct raft_uv_transport *t, raft_id id, const char *address)
{
	repl_raft_wrap_t *w = t->impl;
	int rv;

	w->self_id = id;
	rv = w->inner->init(w->inner, id, address);
	if (rv != 0)
		snprintf(t->errmsg, sizeof(t->errmsg), "%s", w->inner->errmsg);
	return rv;
}

static int
t_listen(struct raft_uv_transport *t, raft_uv_accept_cb cb)
{
	repl_raft_wrap_t *w = t->impl;
	int rv;

	w->accept_cb = cb;
	rv = w->inner->listen(w->inner, on_inner_accept);
	if (rv != 0)
		snprintf(t->errmsg, sizeof(t->errmsg), "%s", w->inner->errmsg);
	return rv;
}

static int
t_connect(struct raft_uv_transport *t, struct raft_uv_connect *req, raft_id id, const char *address,
          raft_uv_connect_cb cb)
{
	repl_raft_wrap_t *w = t->impl;
	repl_raft_conn_t *c;
	int rv;

	if (w->ops->wrap_connect != NULL && !w->ops->wrap_connect()) {
		rv = w->inner->connect(w->inner, req, id, address, cb);
		if (rv != 0)
			snprintf(t->errmsg, sizeof(t->errmsg), "%s", w->inner->errmsg);
		return rv;
	}
	c = conn_new(w, true, id, address);
	if (c == NULL)
		return RAFT_NOMEM;
	req->cb = cb;
	c->req = req;
	c->inner_req.data = c;
	c->refs++;   /* the inner connect's, dropped by on_inner_connect */
	rv = w->inner->connect(w->inner, &c->inner_req, id, address, on_inner_connect);
	if (rv != 0) {
		c->req = NULL;
		repl_raft_conn_fail(c, NULL, rv);
		snprintf(t->errmsg, sizeof(t->errmsg), "%s", w->inner->errmsg);
		repl_raft_conn_unref(c);
	}
	return rv;
}

static void
on_inner_closed(struct raft_uv_transport *inner)
{
	repl_raft_wrap_t *w = inner->data;

	if (w->close_cb != NULL)
		w->close_cb(w->outer);
}

static void
t_close(struct raft_uv_transport *t, raft_uv_transport_close_cb cb)
{
	repl_raft_wrap_t *w = t->impl;

	w->closing = true;
	w->close_cb = cb;
	/* every connection past its TCP connect ends now (none may outlive w);
	 * a connector still waiting for TCP is cancelled by the inner close */
	for (repl_raft_conn_t *c = w->conns, *next; c != NULL; c = next) {
		next = c->next;
		if (c->tcp != NULL || !c->connector)
			repl_raft_conn_fail(c, NULL, RAFT_CANCELED);
	}
	w->inner->close(w->inner, on_inner_closed);
}

int
repl_raft_wrap_init(struct raft_uv_transport *outer, struct raft_uv_transport *inner, uv_loop_t *loop,
                    const repl_raft_wrap_ops_t *ops)
{
	repl_raft_wrap_t *w = calloc(1, sizeof(*w));

	if (w == NULL)
		return RAFT_NOMEM;
	w->outer = outer;
	w->inner = inner;
	w->loop = loop;
	w->ops = ops;
	inner->data = w;
	memset(outer, 0, sizeof(*outer));
	outer->impl = w;
	outer->init = t_init;
	outer->listen = t_listen;
	outer->connect = t_connect;
	outer->close = t_close;
	return 0;
}

void
repl_raft_wrap_close(struct raft_uv_transport *outer)
{
	free(outer->impl);
	outer->impl = NULL;
}
