/*
 * server_private.h -- the server and connection structs shared by server.c
 * (listeners, registry, reaper) and conn.c (one connection's loop).
 */
#ifndef TAMGA_SERVER_PRIVATE_H
#define TAMGA_SERVER_PRIVATE_H

#include <pthread.h>
#include <stdatomic.h>

#include "server/server.h"
#include "server/tls.h"
#include "server/wire.h"

#define SERVER_MAX_LISTENERS 16

typedef struct conn conn_t;

/* The ingress connection establishment rate limiter (ratelimit.c). */
typedef struct ratelimit {
	pthread_mutex_t lock;
	double tokens;         /* may go negative: the queued connections' debt */
	double last;           /* monotonic seconds of the last refill, 0 = never */
	int64_t queued;
} ratelimit_t;

void ratelimit_init(ratelimit_t *rl);
void ratelimit_destroy(ratelimit_t *rl);
/* Admit a new connection under the engine's current limits: 0 at once or
 * after its turn in the queue, -1 when refused (queue full, counted in
 * serverStatus) or when the server stops while it waits. */
int ratelimit_admit(ratelimit_t *rl, engine_t *e, const atomic_bool *stopping);

struct server {
	engine_t *engine;
	char *bind_ip;
	char *compressors;
	int port;
	int64_t max_conns;
	bool quiet;
	int64_t cursor_timeout_ms;
	tls_server_t *tls;                /* borrowed */

	int listen_fds[SERVER_MAX_LISTENERS];
	bool listen_unix[SERVER_MAX_LISTENERS];  /* listener i is a Unix domain socket */
	int nlisten;
	char *sock_paths[SERVER_MAX_LISTENERS];  /* socket files made, removed at shutdown */
	int nsock_paths;
	bool unix_socket;                 /* options (server.h) */
	char *unix_socket_prefix;
	int unix_socket_mode;
	int wake_pipe[2];                 /* server_stop writes here */
	atomic_bool stopping;

	ratelimit_t ingress;              /* connection establishment rate limiter */
	pthread_mutex_t lock;             /* guards conns, nconns */
	pthread_cond_t conns_done;        /* signalled when a connection ends */
	conn_t *conns;
	int64_t nconns;
	atomic_llong next_conn_id;

	pthread_t reaper;
	bool reaper_started;
	pthread_mutex_t reaper_lock;
	pthread_cond_t reaper_wake;
};

struct conn {
	server_t *srv;
	int fd;
	int64_t id;
	char remote[80];
	bool is_local;
	bool unix_domain;                 /* accepted on the Unix-domain listener (conn.c fill) */
	tls_conn_t *tls;                  /* set once the TLS handshake is done */
	wire_compression_t comp;          /* negotiated by hello */
	uint8_t *rbuf;                    /* read-ahead: a header and a small body in one recv */
	size_t rpos, rlen;
	uint8_t *mbuf;                    /* a message larger than rbuf (conn.c read_message) */
	size_t mcap;
	conn_t *prev, *next;              /* in srv->conns, under srv->lock */
};

/* The connection thread's body: serves c until the peer closes, the stream
 * breaks or the server stops; then unregisters c and frees it. */
void *conn_main(void *arg);

/*
 * An exhaust stream in progress on one connection: the request that runs
 * again without a new message (a getMore whose cursor is open, an awaitable
 * hello) and the id of the reply just sent, which the next reply answers.
 * Zero-initialise; conn_handle_message starts a stream, conn_exhaust_next
 * continues it, conn_exhaust_end drops it (the client went away).
 */
typedef struct conn_exhaust {
	bool active;                      /* req is owned and runs again */
	wire_request_t req;
	int32_t response_to;
} conn_exhaust_t;

/*
 * Handle one whole message (header included) for client cl, whose
 * connection's compression state is comp.  Sets *reply to the bytes to send
 * (possibly none: moreToCome), *close_after when the connection must end
 * (fatal framing error, shutdown command).  When the request allows exhaust
 * and its reply carries moreToCome, ex becomes active: send the reply, then
 * call conn_exhaust_next for each following reply until ex is no longer
 * active.  The request borrows msg (wire_request_parse): msg must stay
 * valid and unchanged until the call returns with ex inactive, or until
 * conn_exhaust_end.  This is the socket-free core of a connection, used by
 * conn_main and the tests.
 */
void conn_handle_message(server_t *srv, client_t *cl, wire_compression_t *comp, const uint8_t *msg,
                         size_t len, wire_buf_t *reply, bool *close_after, conn_exhaust_t *ex);

/* The next reply of the active stream ex (same contract as above); ex stays
 * active while the reply carries moreToCome. */
void conn_exhaust_next(server_t *srv, client_t *cl, wire_compression_t *comp, conn_exhaust_t *ex,
                       wire_buf_t *reply, bool *close_after);

/* End the stream ex, if any, releasing its request. */
void conn_exhaust_end(conn_exhaust_t *ex);

#endif
