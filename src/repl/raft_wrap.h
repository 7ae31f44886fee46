/*
 * raft_wrap.h -- the plumbing shared by the transports that wrap
 * canonical/raft's libuv transport (the keyFile handshake, raft_auth.h; the
 * TLS relay, raft_tls.h): an outer raft_uv_transport that runs an inner one
 * and puts a handshake between every new connection and libraft.
 *
 * The wrapper owns each connection's lifetime (repl_raft_conn_t): its
 * handshake timer, its reference count, the inner TCP stream until it is
 * handed over, libraft's connect request until it is answered, and the
 * list the transport's close walks.  The handshake (a small vtable,
 * repl_raft_wrap_ops_t) only reads and writes bytes and says when the
 * connection is libraft's (repl_raft_conn_hand_over) or failed
 * (repl_raft_conn_fail).  The corners it gets right once for both:
 *   - a TCP connect that outlives the handshake's timeout: libraft hears
 *     of the failure once (at the timeout); the connect holds a reference,
 *     so the late completion frees nothing it reads, and its stream is
 *     closed;
 *   - the transport closed during a handshake: every connection past its
 *     TCP connect ends at once (a connector's request answered
 *     RAFT_CANCELED); a connector still waiting for TCP is cancelled by the
 *     inner transport's close and answered then;
 *   - libraft's connect request is answered exactly once.
 * Everything runs on the member's loop thread, as libraft's transport does.
 */
#ifndef TAMGA_REPL_RAFT_WRAP_H
#define TAMGA_REPL_RAFT_WRAP_H

#include <stdbool.h>
#include <stddef.h>

#include <raft.h>
#include <raft/uv.h>
#include <uv.h>

typedef struct repl_raft_wrap repl_raft_wrap_t;
typedef struct repl_raft_conn repl_raft_conn_t;

typedef struct repl_raft_wrap_ops {
	/* bytes of the handshake's connection struct, a repl_raft_conn_t first */
	size_t conn_size;
	/* a handshake not handed over by then fails with timeout_reason */
	unsigned timeout_ms;
	const char *timeout_reason;
	/* rs.status()'s note of the peer's wire host (NULL reason: it passed) */
	void (*note)(const char *host, const char *reason);
	/* NULL or true: outgoing connections get the handshake; false: they go
	 * to the inner transport as they are */
	bool (*wrap_connect)(void);
	/* c->tcp is set (its data is c): start the acceptor's or the
	 * connector's side; on an error call repl_raft_conn_fail */
	void (*accepted)(repl_raft_conn_t *c);
	void (*connected)(repl_raft_conn_t *c);
	/* optional: the connection ends -- close the handshake's own handles,
	 * each holding a reference (repl_raft_conn_ref) until it is closed */
	void (*end)(repl_raft_conn_t *c);
	/* optional: free what the handshake holds, right before c is freed */
	void (*release)(repl_raft_conn_t *c);
} repl_raft_wrap_ops_t;

struct repl_raft_wrap {
	struct raft_uv_transport *outer, *inner;
	uv_loop_t *loop;
	const repl_raft_wrap_ops_t *ops;
	raft_id self_id;                 /* as libraft's init gave it */
	raft_uv_accept_cb accept_cb;
	raft_uv_transport_close_cb close_cb;
	repl_raft_conn_t *conns;         /* connections not ended */
	bool closing;
};

struct repl_raft_conn {
	repl_raft_wrap_t *w;             /* read only while c is not done: the wrapper may be
	                                  * released (its close callback ran) before c is freed */
	const repl_raft_wrap_ops_t *ops; /* w's, kept for c's last references */
	bool connector;
	bool done;                       /* ended: no more steps */
	uv_stream_t *tcp;                /* the inner transport's stream (raft_malloc'd), closed at
	                                  * the end unless handed over (then NULL) */
	uv_timer_t timer;
	int refs;                        /* alive, the timer and handles closing, writes in flight,
	                                  * the inner connect */
	raft_id id;                      /* the peer's Raft id (acceptor: as claimed) */
	char address[280];               /* the peer's Raft address */
	struct raft_uv_connect inner_req;
	struct raft_uv_connect *req;     /* connector: libraft's request until answered */
	repl_raft_conn_t *next, **prevp;
};

/*
 * Make outer a transport running inner (an initialised transport on loop,
 * owned by the caller and released by it after outer) with ops' handshake
 * on each connection.  ops must outlive outer.  0, or RAFT_NOMEM.  Release
 * with repl_raft_wrap_close once outer was closed (its close callback ran).
 */
int repl_raft_wrap_init(struct raft_uv_transport *outer, struct raft_uv_transport *inner, uv_loop_t *loop,
                        const repl_raft_wrap_ops_t *ops);
void repl_raft_wrap_close(struct raft_uv_transport *outer);

/* A reference on c (a write in flight, a handle closing); the last unref
 * calls ops->release and frees c. */
void repl_raft_conn_ref(repl_raft_conn_t *c);
void repl_raft_conn_unref(repl_raft_conn_t *c);

/*
 * End c: its timer and TCP stream closed, ops->end called, reason (when
 * not NULL) noted for rs.status(), and a connector's request not yet
 * answered answered with status.  Idempotent.
 */
void repl_raft_conn_fail(repl_raft_conn_t *c, const char *reason, int status);

/*
 * The handshake is done: stream becomes libraft's (a connector's request is
 * answered with it, an acceptor's goes to libraft's accept callback with
 * the peer's id and address).  relay: c lives on (its timer stopped) and
 * moves bytes until it fails; otherwise stream is c->tcp and c ends
 * without closing it.
 */
void repl_raft_conn_hand_over(repl_raft_conn_t *c, uv_stream_t *stream, bool relay);

/* Note the peer (its Raft port less the offset: its wire host) with ops->note. */
void repl_raft_conn_note(const repl_raft_conn_t *c, const char *reason);

#endif
