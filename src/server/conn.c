/*
 * conn.c -- one client connection: read a framed message, parse it, run the
 * command through the engine, write the reply.  One detached thread each.
 *
 * Errors the protocol can carry (bad flags, invalid BSON, unknown section)
 * get an error reply; errors that break framing (bad length, unknown
 * opcode, undecompressable payload) close the connection.  Nothing a peer
 * sends can affect another connection.  Exhaust streams (getMore, awaitable
 * hello) send several replies for one request, as mongod does.
 */
#include "server/server_private.h"

#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "commands/cmd_admin.h"
#include "common/log.h"
#include "common/version.h"

/* Commands that take document sequences, and which ones (mongod's IDL). */
static const struct {
	const char *cmd;
	const char *seqs[3];
} seq_commands[] = {
	{"insert", {"documents", NULL}},
	{"update", {"updates", NULL}},
	{"delete", {"deletes", NULL}},
	{"bulkWrite", {"ops", "nsInfo", NULL}},
};

static int
check_sequences(const wire_request_t *req, const char *name, terr_t *err)
{
	size_t i;
	int s, k;

	if (req->nsequences == 0)
		return 0;
	for (i = 0; i < sizeof(seq_commands) / sizeof(seq_commands[0]); i++) {
		if (strcmp(seq_commands[i].cmd, name) != 0)
			continue;
		for (s = 0; s < req->nsequences; s++) {
			bool ok = false;
			for (k = 0; seq_commands[i].seqs[k] != NULL; k++)
				if (strcmp(seq_commands[i].seqs[k], req->seq_names[s]) == 0)
					ok = true;
			if (!ok)
				return terr_set(err, 40415, "BSON field '%s.%s' is an unknown field.", name,
				    req->seq_names[s]);
		}
		return 0;
	}
	/* an existing command without sequences; unknown ones get 59 from the dispatcher */
	if (cmd_lookup(name) != NULL)
		return terr_set(err, 40472, "The %s command does not support document sequences.", name);
	return 0;
}

static bool
is_hello(const char *name)
{
	if (name[0] == 'h')
		return strcmp(name, "hello") == 0;
	return name[0] == 'i' && (strcmp(name, "isMaster") == 0 || strcmp(name, "ismaster") == 0);
}

/* hello's reply plus the negotiated `compression`, keeping ok last. */
static void
add_compression(server_t *srv, wire_compression_t *comp, const bson_t *cmd, bson_t *reply)
{
	bson_t out;
	bson_iter_t it;
	double ok = 1.0;

	bson_init(&out);
	if (bson_iter_init(&it, reply)) {
		while (bson_iter_next(&it)) {
			if (strcmp(bson_iter_key(&it), "ok") == 0) {
				ok = bson_iter_as_double(&it);
				continue;
			}
			bson_append_iter(&out, bson_iter_key(&it), -1, &it);
		}
	}
	wire_compression_hello(comp, cmd, srv->compressors, &out);
	BSON_APPEND_DOUBLE(&out, "ok", ok);
	bson_destroy(reply);
	bson_steal(reply, &out);
}

static atomic_int reply_ids = 1;

/* Build the reply to req (OP_REPLY for OP_QUERY, else OP_MSG with the
 * request's checksum flag and compressor, plus extra_flags); returns the
 * reply's requestID. */
static int32_t
build_reply(const wire_request_t *req, int32_t response_to, uint32_t extra_flags, const bson_t *doc,
            wire_buf_t *out)
{
	terr_t err = TERR_INIT;
	int32_t id = atomic_fetch_add(&reply_ids, 1);
	uint32_t flags = (req->flags & WIRE_MSG_CHECKSUM) | extra_flags;

	if (req->opcode == WIRE_OP_QUERY) {
		wire_reply_build(id, response_to, doc, false, out, &err);
	} else if (wire_msg_build(id, response_to, flags, doc, req->compressor, out, &err) != 0) {
		/* compression failed: answer uncompressed rather than not at all */
		terr_clear(&err);
		wire_msg_build(id, response_to, flags, doc, WIRE_COMPRESSOR_NONE, out, &err);
	}
	terr_clear(&err);
	return id;
}

/*
 * Exhaust (mongod's rules): an OP_MSG request with exhaustAllowed whose
 * command succeeded runs again without a new request when it is a getMore
 * whose cursor is still open, or an awaitable hello (maxAwaitTimeMS); the
 * reply then carries moreToCome.  A hello with exhaustAllowed but without
 * maxAwaitTimeMS fails with 51756.  Returns whether reply continues.
 */
static bool
exhaust_continues(const wire_request_t *req, const char *name, bson_t *reply, terr_t *err, int *rc)
{
	bson_iter_t it, sub;

	if (req->opcode != WIRE_OP_MSG || !(req->flags & WIRE_MSG_EXHAUST_ALLOWED) || *rc != 0)
		return false;
	if (bson_iter_init_find(&it, reply, "ok") && !bson_iter_as_bool(&it))
		return false;
	if (is_hello(name)) {
		if (bson_has_field(&req->cmd, "maxAwaitTimeMS"))
			return true;
		bson_destroy(reply);
		terr_set(err, 51756, "An isMaster or hello request with exhaust must specify 'maxAwaitTimeMS'");
		wire_error_doc(reply, err);
		*rc = err->code;
		return false;
	}
	if (!(strcmp(name, "getMore") == 0 && bson_iter_init_find(&it, reply, "cursor") &&
	    BSON_ITER_HOLDS_DOCUMENT(&it) && bson_iter_recurse(&it, &sub) && bson_iter_find(&sub, "id") &&
	    BSON_ITER_HOLDS_NUMBER(&sub) && bson_iter_as_int64(&sub) != 0))
		return false;
	/* a tailable cursor at its end answers empty batches at once: without
	 * an await time (maxTimeMS) the stream would spin, so it stops */
	if (!bson_has_field(&req->cmd, "maxTimeMS") && bson_iter_init_find(&it, reply, "cursor") &&
	    bson_iter_recurse(&it, &sub) && bson_iter_find(&sub, "nextBatch") && BSON_ITER_HOLDS_ARRAY(&sub)) {
		bson_iter_t batch;
		if (bson_iter_recurse(&sub, &batch) && !bson_iter_next(&batch))
			return false;
	}
	return true;
}

/* An exhaust hello's next round waits on the topologyVersion its last
 * reply gave (mongod's exhaust hello: the next request carries the
 * response's), not on the one the client first sent: else a monitor whose
 * first request predates a change (replSetInitiate) would be answered at
 * once, round after round, for ever.  req->cmd becomes an owned copy with
 * tv in place of its topologyVersion ($db kept in own_db). */
static void
exhaust_hello_advance(wire_request_t *req, const bson_iter_t *tv)
{
	bson_t nb = BSON_INITIALIZER;
	bson_iter_t it;
	char *db = req->db != NULL ? bson_strdup(req->db) : NULL;

	if (bson_iter_init(&it, &req->cmd)) {
		while (bson_iter_next(&it))
			if (strcmp(bson_iter_key(&it), "topologyVersion") != 0)
				bson_append_iter(&nb, bson_iter_key(&it), -1, &it);
	}
	bson_append_iter(&nb, "topologyVersion", -1, tv);
	if (req->have_cmd)
		bson_destroy(&req->cmd);
	bson_steal(&req->cmd, &nb);
	req->have_cmd = true;
	req->lsid_off = 0;
	bson_free(req->own_db);
	req->own_db = db;
	req->db = db;
}

/*
 * Run a parsed request and build its reply (none for moreToCome requests).
 * response_to is the id the reply answers: the request's own, or in an
 * exhaust stream the previous reply's.  Returns true when the reply carries
 * moreToCome and the same request must run again (exhaust).
 */
static bool
run_request(server_t *srv, client_t *cl, wire_compression_t *comp, wire_request_t *req,
            int32_t response_to, wire_buf_t *out, bool *close_after, int32_t *reply_id)
{
	terr_t err = TERR_INIT;
	bson_t reply;
	bson_iter_t it;
	const char *name = "";
	int rc;
	bool more_to_come = req->opcode == WIRE_OP_MSG && (req->flags & WIRE_MSG_MORE_TO_COME);
	bool again = false, hello;

	if (bson_iter_init(&it, &req->cmd) && bson_iter_next(&it))
		name = bson_iter_key(&it);
	hello = is_hello(name);
	if (check_sequences(req, name, &err) != 0) {
		wire_error_doc(&reply, &err);
		rc = err.code;
	} else {
		/* the session the command names is in use (the local session cache);
		 * the parser noted where lsid is */
		if (req->lsid_off != 0 && bson_iter_init_from_data_at_offset(&it, bson_get_data(&req->cmd),
		    req->cmd.len, req->lsid_off, 4))
			cmd_admin_session_touch(cl, &it);
		rc = engine_run_command(srv->engine, cl, req->db, &req->cmd, &reply, &err);
		if (rc == 0 && hello)
			add_compression(srv, comp, &req->cmd, &reply);
		if (client_take_close_request(cl)) {
			/* failCommand's closeConnection: no reply, the connection ends */
			bson_destroy(&reply);
			*close_after = true;
			goto done;
		}
	}
	/* the "Slow query" line is the profiler's (cmd_toolbelt_after), one per operation */
	if (engine_shutdown_requested(srv->engine) && strcmp(name, "shutdown") == 0) {
		/* as mongod: the connection closes instead of answering */
		bson_destroy(&reply);
		*close_after = true;
		server_stop(srv);
		goto done;
	}
	if (more_to_come) {
		if (rc != 0) {
			bson_t attr;
			bson_init(&attr);
			BSON_APPEND_UTF8(&attr, "command", name);
			BSON_APPEND_INT32(&attr, "code", err.code);
			BSON_APPEND_UTF8(&attr, "error", err.msg ? err.msg : "");
			tlog('I', "COMMAND", 20566, "Error in unacknowledged command", &attr);
			bson_destroy(&attr);
		}
	} else {
		again = exhaust_continues(req, name, &reply, &err, &rc);
		*reply_id = build_reply(req, response_to, again ? WIRE_MSG_MORE_TO_COME : 0, &reply, out);
		if (again && hello && bson_iter_init_find(&it, &reply, "topologyVersion") && BSON_ITER_HOLDS_DOCUMENT(&it))
			exhaust_hello_advance(req, &it);
	}
	bson_destroy(&reply);
done:
	terr_clear(&err);
	return again;
}

void
conn_handle_message(server_t *srv, client_t *cl, wire_compression_t *comp, const uint8_t *msg,
                    size_t len, wire_buf_t *out, bool *close_after, conn_exhaust_t *ex)
{
	/* parsed in place: a stream keeps the request (a bson_t cannot be moved) */
	wire_request_t *req = &ex->req;
	terr_t err = TERR_INIT;
	bson_t reply;

	out->data = NULL;
	out->len = 0;
	*close_after = false;
	ex->active = false;
	if (wire_request_parse(msg, len, req, &err) != 0) {
		bson_t attr;
		bson_init(&attr);
		BSON_APPEND_INT32(&attr, "code", err.code);
		BSON_APPEND_UTF8(&attr, "error", err.msg ? err.msg : "");
		tlog('W', "NETWORK", 22988, "Error receiving request from client. Ending connection from remote",
		    &attr);
		bson_destroy(&attr);
		if (req->fatal) {
			*close_after = true;
		} else if (!(req->opcode == WIRE_OP_MSG && (req->flags & WIRE_MSG_MORE_TO_COME))) {
			wire_error_doc(&reply, &err);
			build_reply(req, req->header.request_id, 0, &reply, out);
			bson_destroy(&reply);
		}
		goto done;
	}
	if (req->compressor != WIRE_COMPRESSOR_NONE && !wire_compression_permitted(comp, req->compressor)) {
		/* as mongod: a compressor this connection did not negotiate ends it */
		bson_t attr;
		bson_init(&attr);
		BSON_APPEND_INT32(&attr, "compressorId", req->compressor);
		tlog('W', "NETWORK", 22989, "Compression algorithm specified in message is not permitted on this connection",
		    &attr);
		bson_destroy(&attr);
		*close_after = true;
		goto done;
	}
	if (run_request(srv, cl, comp, req, req->header.request_id, out, close_after, &ex->response_to)) {
		/* conn_exhaust_next runs the request again */
		ex->active = true;
		terr_clear(&err);
		return;
	}
done:
	wire_request_clear(req);
	terr_clear(&err);
}

void
conn_exhaust_next(server_t *srv, client_t *cl, wire_compression_t *comp, conn_exhaust_t *ex,
                  wire_buf_t *out, bool *close_after)
{
	out->data = NULL;
	out->len = 0;
	*close_after = false;
	if (!run_request(srv, cl, comp, &ex->req, ex->response_to, out, close_after, &ex->response_to))
		conn_exhaust_end(ex);
}

void
conn_exhaust_end(conn_exhaust_t *ex)
{
	if (ex->active)
		wire_request_clear(&ex->req);
	ex->active = false;
}

/* ---- socket I/O ---------------------------------------------------------- */

#define TLS_HANDSHAKE_TIMEOUT_MS 10000

/* The read-ahead buffer: a whole typical request arrives with one recv and
 * is parsed where it lies.  Larger messages go to a per-connection buffer
 * kept while it is at most MBUF_KEEP. */
#define RBUF_SIZE (16 * 1024)
#define MBUF_KEEP (64 * 1024)

/*
 * On a Unix-domain socket a thread blocked in recv() sleeps on the socket's
 * wait queue unkeyed, so it is also woken each time the peer reads our last
 * reply (the kernel signals "writable" on the same queue), finds nothing and
 * sleeps again: two context switches per request where TCP has one (measured
 * on wire_find_id_1_unix: 1.8 voluntary switches a request).  poll() waits
 * keyed on POLLIN and sleeps through those wake-ups, so a plain Unix-domain
 * connection waits in poll() before each recv() that would block.  Shutdown
 * (shutdown(2) of the socket) still ends the wait: poll() reports POLLHUP.
 */
static ssize_t
raw_recv(conn_t *c, void *buf, size_t n)
{
	if (c->tls != NULL)
		return tls_read(c->tls, buf, n);
	if (c->unix_domain) {
		struct pollfd p = {.fd = c->fd, .events = POLLIN};
		if (poll(&p, 1, -1) < 0)
			return -1;      /* EINTR: the caller retries */
	}
	return recv(c->fd, buf, n, 0);
}

/* Top up the read-ahead buffer until it holds at least want (<= RBUF_SIZE)
 * unread bytes, with one recv when the peer sent them together.  Returns
 * 0, 1 on a clean EOF before any byte of a message, -1 on error or EOF
 * inside one. */
static int
fill(conn_t *c, size_t want)
{
	if (c->rpos > 0 && c->rlen - c->rpos < want) {
		/* move what is left to the front to make room after it */
		memmove(c->rbuf, c->rbuf + c->rpos, c->rlen - c->rpos);
		c->rlen -= c->rpos;
		c->rpos = 0;
	}
	while (c->rlen - c->rpos < want) {
		ssize_t r = raw_recv(c, c->rbuf + c->rlen, RBUF_SIZE - c->rlen);
		if (r == 0) {
			errno = 0; /* the peer closed it */
			return c->rlen == c->rpos ? 1 : -1;
		}
		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		c->rlen += (size_t)r;
	}
	return 0;
}

/* mongod's NETWORK D2 22986 "Session from remote encountered a network
 * error during SourceMessage" when reading a message failed: the peer
 * closed the connection (errno 0: "Connection closed by peer") or recv
 * failed (its strerror), as a 6 HostUnreachable status.  Written only at
 * NETWORK verbosity 2. */
static void
log_source_error(const conn_t *c)
{
	int e = errno;
	bson_t attr, st;

	if (!tlog_debug_on("NETWORK", 2))
		return;
	bson_init(&attr);
	BSON_APPEND_UTF8(&attr, "remote", c->remote);
	BSON_APPEND_DOCUMENT_BEGIN(&attr, "error", &st);
	BSON_APPEND_INT32(&st, "code", 6);
	BSON_APPEND_UTF8(&st, "codeName", "HostUnreachable");
	BSON_APPEND_UTF8(&st, "errmsg", e == 0 ? "Connection closed by peer" : strerror(e));
	bson_append_document_end(&attr, &st);
	tlog_debug(2, "NETWORK", 22986, "Session from remote encountered a network error during SourceMessage", &attr);
	bson_destroy(&attr);
}

/*
 * Read one whole message.  Returns 0 with *msg pointing at its bytes (valid
 * until the next read on c or release_large: in the read-ahead buffer when it
 * fits there, which is the usual case and costs no copy, else in c->mbuf), 1 on a clean
 * EOF between messages, -1 when the connection must end (error, EOF inside
 * a message, a length outside mongod's bounds: logged).
 */
static int
read_message(conn_t *c, wire_header_t *h, const uint8_t **msg)
{
	terr_t err = TERR_INIT;
	size_t have, got;
	int r;

	if ((r = fill(c, WIRE_HEADER_LEN)) != 0) {
		log_source_error(c);
		return r;
	}
	if (wire_header_read(c->rbuf + c->rpos, h, &err) != 0) {
		bson_t attr;
		bson_init(&attr);
		BSON_APPEND_UTF8(&attr, "remote", c->remote);
		BSON_APPEND_UTF8(&attr, "error", err.msg);
		tlog('I', "NETWORK", 22989, "Error receiving request from client. Ending connection from remote",
		    &attr);
		bson_destroy(&attr);
		terr_clear(&err);
		return -1;
	}
	if ((size_t)h->length <= RBUF_SIZE) {
		if (fill(c, (size_t)h->length) != 0) {
			log_source_error(c);
			return -1;
		}
		*msg = c->rbuf + c->rpos;
		c->rpos += (size_t)h->length;
		return 0;
	}
	/* a large message: what the read-ahead holds, then the rest straight
	 * into the message buffer */
	if (c->mcap < (size_t)h->length) {
		bson_free(c->mbuf);
		c->mbuf = bson_malloc((size_t)h->length);
		c->mcap = (size_t)h->length;
	}
	have = c->rlen - c->rpos;
	memcpy(c->mbuf, c->rbuf + c->rpos, have);
	c->rpos = c->rlen = 0;
	for (got = have; got < (size_t)h->length;) {
		ssize_t n = raw_recv(c, c->mbuf + got, (size_t)h->length - got);
		if (n == 0)
			errno = 0;
		if (n == 0 || (n < 0 && errno != EINTR)) {
			log_source_error(c);
			return -1;
		}
		if (n < 0)
			continue;
		got += (size_t)n;
	}
	*msg = c->mbuf;
	return 0;
}

/* After a large message: give its buffer back rather than keep up to 48 MB
 * per idle connection (a batch of inserts is a few hundred KB; allocating
 * that once per message costs little next to parsing it). */
static void
release_large(conn_t *c)
{
	if (c->mcap > MBUF_KEEP) {
		bson_free(c->mbuf);
		c->mbuf = NULL;
		c->mcap = 0;
	}
}

static int
write_full(conn_t *c, const uint8_t *buf, size_t n)
{
	size_t put = 0;

	while (put < n) {
		ssize_t r = c->tls ? tls_write(c->tls, buf + put, n - put) :
		    send(c->fd, buf + put, n - put, MSG_NOSIGNAL);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		put += (size_t)r;
	}
	return 0;
}

/* During an exhaust stream the client sends nothing: anything readable, or
 * a hangup, means it has gone (it ends a stream by closing the connection),
 * so the stream stops instead of waiting for a write to fail. */
static bool
peer_gone(conn_t *c)
{
	struct pollfd p = {.fd = c->fd, .events = POLLIN | POLLRDHUP};

	if (c->rpos < c->rlen)
		return true;
	return poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR)) != 0;
}

static void
log_conn_end(conn_t *c, int64_t count)
{
	bson_t attr;

	if (c->srv->quiet)
		return;
	bson_init(&attr);
	BSON_APPEND_UTF8(&attr, "remote", c->remote);
	BSON_APPEND_INT64(&attr, "connectionId", c->id);
	BSON_APPEND_INT64(&attr, "connectionCount", count);
	tlog('I', "NETWORK", 22944, "Connection ended", &attr);
	bson_destroy(&attr);
}

void *
conn_main(void *arg)
{
	conn_t *c = arg;
	server_t *srv = c->srv;
	engine_counters_t *k = engine_counters(srv->engine);
	client_info_t info;
	client_t *cl;
	char ctx[32];
	conn_exhaust_t ex = {0};
	int64_t left;

	snprintf(ctx, sizeof(ctx), "conn%lld", (long long)c->id);
	tlog_set_ctx(ctx);
	info.connection_id = c->id;
	info.remote = c->remote;
	info.is_local = c->is_local;
	cl = client_new(srv->engine, &info);
	c->rbuf = bson_malloc(RBUF_SIZE);

	if (srv->tls != NULL && tls_server_mode(srv->tls) != TLS_MODE_DISABLED) {
		terr_t err = TERR_INIT;
		if (tls_accept(srv->tls, c->fd, TLS_HANDSHAKE_TIMEOUT_MS, &c->tls, &err) != 0) {
			bson_t attr;
			bson_init(&attr);
			BSON_APPEND_UTF8(&attr, "remote", c->remote);
			BSON_APPEND_UTF8(&attr, "error", err.msg ? err.msg : "");
			tlog('I', "NETWORK", 22988, "Error receiving request from client. Ending connection from remote",
			    &attr);
			bson_destroy(&attr);
			terr_clear(&err);
			goto end;
		}
		if (c->tls != NULL)
			client_set_peer_x509(cl, tls_conn_peer_subject(c->tls), tls_conn_peer_member(c->tls));
	}

	/* the establishment rate limiter: refused connections are closed
	 * without a word, as mongod's (serverStatus counts them) */
	if (ratelimit_admit(&srv->ingress, srv->engine, &srv->stopping) != 0)
		goto end;
	while (!atomic_load(&srv->stopping)) {
		wire_header_t h;
		const uint8_t *msg;
		wire_buf_t out;
		bool close_after = false;
		int r;

		if (read_message(c, &h, &msg) != 0)
			break;
		__atomic_fetch_add(&k->bytes_in, h.length, __ATOMIC_RELAXED);
		__atomic_fetch_add(&k->requests, 1, __ATOMIC_RELAXED);
		/* msg stays where it is until the request (and its exhaust stream,
		 * which reads nothing) is done: the request points into it */
		conn_handle_message(srv, cl, &c->comp, msg, (size_t)h.length, &out, &close_after, &ex);
		for (;;) {
			if (out.data != NULL) {
				r = write_full(c, out.data, out.len);
				__atomic_fetch_add(&k->bytes_out, (int64_t)out.len, __ATOMIC_RELAXED);
				bson_free(out.data);
				if (r != 0)
					close_after = true;
			}
			if (close_after || !ex.active || atomic_load(&srv->stopping) || peer_gone(c))
				break;
			/* exhaust: the next reply follows without a request */
			conn_exhaust_next(srv, cl, &c->comp, &ex, &out, &close_after);
		}
		conn_exhaust_end(&ex);
		release_large(c);
		if (close_after)
			break;
	}

end:
	if (c->tls != NULL)
		tls_close(c->tls);
	client_free(cl);
	pthread_mutex_lock(&srv->lock);
	close(c->fd);
	if (c->prev)
		c->prev->next = c->next;
	else
		srv->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	left = --srv->nconns;
	__atomic_fetch_sub(&k->connections_current, 1, __ATOMIC_RELAXED);
	log_conn_end(c, left);
	bson_free(c->rbuf);
	bson_free(c->mbuf);
	bson_free(c);
	pthread_cond_broadcast(&srv->conns_done);
	pthread_mutex_unlock(&srv->lock);
	return NULL;
}
