/*
 * raft_auth.c -- the keyFile handshake on canonical/raft's libuv transport
 * (raft_auth.h): the protocol's steps as pure functions, then the
 * handshake that runs them on each new connection before libraft sees it.
 *
 * Not here: the MACs and the key (auth/auth_member.c); the wrapping
 * transport and each connection's lifetime (raft_wrap.c); Raft itself
 * (raft_member.c).
 */
#include "repl/raft_auth.h"

#include <stdbool.h>
#include <string.h>

#include "auth/auth_member.h"
#include "repl/member_rpc.h"
#include "repl/raft_wrap.h"

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

/* ---- the handshake on each connection (raft_wrap.h runs the transport) ---------------------------- */

typedef struct hs {
	repl_raft_conn_t b;              /* first: the wrapper's part */
	uv_write_t wreq[2];              /* the first message, the connector's proof */
	uint8_t out[REPL_RAFT_AUTH_ANSWER_LEN];
	uint8_t proof[32];
	uint8_t in[REPL_RAFT_AUTH_ANSWER_LEN];
	size_t have, want;
	uint8_t hello[REPL_RAFT_AUTH_HELLO_LEN];   /* acceptor: the connector's hello */
	uint8_t nc[32], ns[32];
} hs_t;

/* The connector's Raft id, which the MACs carry. */
static raft_id
mac_id(const hs_t *h)
{
	return h->b.connector ? h->b.w->self_id : h->b.id;
}

static void
fail(hs_t *h, const char *reason, int status)
{
	repl_raft_conn_fail(&h->b, reason, status);
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
	if (h->b.done || nread == 0)
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
	return uv_read_start(h->b.tcp, on_alloc, on_read);
}

static void on_written(uv_write_t *w, int status);

/* Write the first message (which 0) or the connector's proof (which 1). */
static int
send_out(hs_t *h, int which)
{
	uv_buf_t b = which == 0 ? uv_buf_init((char *)h->out, h->b.connector ? REPL_RAFT_AUTH_HELLO_LEN :
	    REPL_RAFT_AUTH_ANSWER_LEN) :
	    uv_buf_init((char *)h->proof, 32);
	int rv;

	h->wreq[which].data = h;
	rv = uv_write(&h->wreq[which], h->b.tcp, &b, 1, on_written);
	if (rv == 0)
		repl_raft_conn_ref(&h->b);
	return rv;
}

static void
on_written(uv_write_t *w, int status)
{
	hs_t *h = w->data;

	if (!h->b.done && status != 0)
		fail(h, NULL, RAFT_NOCONNECTION);
	else if (!h->b.done && h->b.connector && w == &h->wreq[1]) {
		/* the proof is out (writes complete in order): the connection is
		 * libraft's */
		repl_raft_conn_note(&h->b, NULL);
		repl_raft_conn_hand_over(&h->b, h->b.tcp, false);
	}
	repl_raft_conn_unref(&h->b);
}

static void
step_read_done(hs_t *h)
{
	if (h->b.connector) {
		/* the acceptor's answer: check it, then prove */
		if (repl_raft_auth_prove(h->nc, mac_id(h), h->in, h->proof) != 0) {
			fail(h, "Authentication failed.", RAFT_NOCONNECTION);
			return;
		}
		if (send_out(h, 1) != 0)
			fail(h, NULL, RAFT_NOCONNECTION);
		return;
	}
	if (h->want == REPL_RAFT_AUTH_HELLO_LEN) {
		memcpy(h->hello, h->in, REPL_RAFT_AUTH_HELLO_LEN);
		if (repl_raft_auth_answer(h->hello, mac_id(h), h->ns, h->out) != 0) {
			fail(h, "Authentication failed.", 0);
			return;
		}
		if (send_out(h, 0) != 0 || start_read(h, 32) != 0)
			fail(h, NULL, 0);
		return;
	}
	if (repl_raft_auth_check(h->hello, h->ns, mac_id(h), h->in) != 0) {
		fail(h, "Authentication failed.", 0);
		return;
	}
	repl_raft_conn_note(&h->b, NULL);
	repl_raft_conn_hand_over(&h->b, h->b.tcp, false);
}

/* acceptor: read the connector's hello */
static void
on_accepted(repl_raft_conn_t *c)
{
	hs_t *h = (hs_t *)c;

	if (start_read(h, REPL_RAFT_AUTH_HELLO_LEN) != 0)
		fail(h, NULL, 0);
}

/* connector: TCP is up, send the hello and read the answer */
static void
on_connected(repl_raft_conn_t *c)
{
	hs_t *h = (hs_t *)c;

	if (auth_member_nonce(h->nc) != 0) {
		fail(h, NULL, RAFT_NOCONNECTION);
		return;
	}
	repl_raft_auth_hello(h->nc, h->out);
	if (send_out(h, 0) != 0 || start_read(h, REPL_RAFT_AUTH_ANSWER_LEN) != 0)
		fail(h, NULL, RAFT_NOCONNECTION);
}

static const repl_raft_wrap_ops_t auth_ops = {
	.conn_size = sizeof(hs_t),
	.timeout_ms = REPL_RAFT_AUTH_TIMEOUT_MS,
	.timeout_reason = "Authentication failed.",
	.note = repl_member_auth_note,
	.accepted = on_accepted,
	.connected = on_connected,
};

int
repl_raft_auth_init(struct raft_uv_transport *outer, struct raft_uv_transport *inner, uv_loop_t *loop)
{
	return repl_raft_wrap_init(outer, inner, loop, &auth_ops);
}

void
repl_raft_auth_close(struct raft_uv_transport *outer)
{
	repl_raft_wrap_close(outer);
}
