/*
 * member_rpc.c -- a blocking OP_MSG round trip to another member
 * (member_rpc.h): connect with a deadline, one section-0 message, read the
 * reply's header and body.
 */
#include "repl/member_rpc.h"

#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/ssl.h>

#include "auth/auth_member.h"
#include "auth/auth_x509.h"
#include "common/failpoint.h"
#include "repl/member_tls.h"
#include "common/opctx.h"

#include <pthread.h>
#include <stdatomic.h>

#include "common/log.h"

#define OP_MSG 2013
#define NOTE_MAX 16
#define REPLY_MAX (48 * 1024 * 1024)

/* ---- the channels' shared state ------------------------------------------------------------------- */

static pthread_mutex_t g_note_mu = PTHREAD_MUTEX_INITIALIZER;
static struct {
	char host[300];
	bool failed;
	char shown[200];       /* what rs.status() shows for the failure */
} g_notes[NOTE_MAX];

static void note(const char *host, const char *reason, const char *shown);

void
repl_member_auth_note(const char *host, const char *reason)
{
	note(host, reason, "Authentication failed.");
}

void
repl_member_tls_note(const char *host, const char *reason)
{
	note(host, reason, reason);
}

bool
repl_member_failure_message(const char *host, char *buf, size_t len)
{
	bool failed = false;

	pthread_mutex_lock(&g_note_mu);
	for (int i = 0; i < NOTE_MAX; i++)
		if (g_notes[i].host[0] != '\0' && strcmp(g_notes[i].host, host) == 0 && g_notes[i].failed) {
			failed = true;
			bson_strncpy(buf, g_notes[i].shown, len);
		}
	pthread_mutex_unlock(&g_note_mu);
	return failed;
}

static void
note(const char *host, const char *reason, const char *shown)
{
	int slot = -1, free_slot = -1;
	bool was = false;

	pthread_mutex_lock(&g_note_mu);
	for (int i = 0; i < NOTE_MAX; i++) {
		if (g_notes[i].host[0] == '\0') {
			if (free_slot < 0)
				free_slot = i;
		} else if (strcmp(g_notes[i].host, host) == 0) {
			slot = i;
		}
	}
	if (slot < 0 && reason != NULL) {
		slot = free_slot >= 0 ? free_slot : 0;
		bson_strncpy(g_notes[slot].host, host, sizeof(g_notes[slot].host));
		g_notes[slot].failed = false;
	}
	if (slot >= 0) {
		was = g_notes[slot].failed;
		g_notes[slot].failed = reason != NULL;
		if (reason != NULL)
			bson_strncpy(g_notes[slot].shown, shown, sizeof(g_notes[slot].shown));
	}
	pthread_mutex_unlock(&g_note_mu);
	if (reason != NULL && !was) {
		bson_t attr;
		bson_init(&attr);
		BSON_APPEND_UTF8(&attr, "peer", host);
		BSON_APPEND_UTF8(&attr, "error", reason);
		tlog('W', "ACCESS", 5000300, "Authentication with another member failed", &attr);
		bson_destroy(&attr);
	}
}

bool
repl_member_auth_failed(const char *host)
{
	bool failed = false;

	pthread_mutex_lock(&g_note_mu);
	for (int i = 0; i < NOTE_MAX; i++)
		if (g_notes[i].host[0] != '\0' && strcmp(g_notes[i].host, host) == 0)
			failed = g_notes[i].failed;
	pthread_mutex_unlock(&g_note_mu);
	return failed;
}

/* ---- one round trip --------------------------------------------------------------------------------- */

static int
wait_fd(int fd, short ev, int64_t deadline_us)
{
	struct pollfd p = {fd, ev, 0};
	int64_t left = (deadline_us - tm_now_us()) / 1000;

	if (left <= 0)
		return -1;
	return poll(&p, 1, (int)left) == 1 ? 0 : -1;
}

/* A connection to another member: the socket, and its TLS session when
 * the member connects out with TLS (member_tls.h). */
typedef struct mconn {
	int fd;
	SSL *ssl;
} mconn_t;

/* Wait for what OpenSSL asked for (r: an SSL_ERROR_WANT_*): 0 to retry. */
static int
ssl_wait(mconn_t *c, int r, int64_t deadline_us)
{
	int e = SSL_get_error(c->ssl, r);

	if (e == SSL_ERROR_WANT_READ)
		return wait_fd(c->fd, POLLIN, deadline_us);
	if (e == SSL_ERROR_WANT_WRITE)
		return wait_fd(c->fd, POLLOUT, deadline_us);
	return -1;
}

static int
io_all(mconn_t *c, uint8_t *buf, size_t len, bool sending, int64_t deadline_us)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n;
		if (c->ssl != NULL) {
			size_t chunk = len - done > INT32_MAX ? INT32_MAX : len - done;
			int r = sending ? SSL_write(c->ssl, buf + done, (int)chunk) : SSL_read(c->ssl, buf + done, (int)chunk);
			if (r > 0) {
				done += (size_t)r;
				continue;
			}
			if (ssl_wait(c, r, deadline_us) != 0) {
				ERR_clear_error();
				return -1;
			}
			continue;
		}
		if (wait_fd(c->fd, sending ? POLLOUT : POLLIN, deadline_us) != 0)
			return -1;
		n = sending ? send(c->fd, buf + done, len - done, MSG_NOSIGNAL) : recv(c->fd, buf + done, len - done, 0);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n <= 0)
			return -1;
		done += (size_t)n;
	}
	return 0;
}

/*
 * The TLS handshake on c->fd as a client of host (member_tls.h checks its
 * certificate and name).  6 HostUnreachable with OpenSSL's reason when it
 * fails, as mongod's outgoing connection reports a bad peer certificate;
 * the failure is noted for rs.status() (lastHeartbeatMessage).
 */
static int
tls_connect(mconn_t *c, const char *host, int64_t deadline_us, terr_t *err)
{
	char why[256];

	c->ssl = repl_member_tls_client(host);
	if (c->ssl == NULL || SSL_set_fd(c->ssl, c->fd) != 1)
		return terr_set(err, TERR_HOST_UNREACHABLE, "cannot start TLS with %s", host);
	for (;;) {
		int r = SSL_connect(c->ssl);
		if (r == 1) {
			if (!auth_member_key_present())
				repl_member_auth_note(host, NULL);
			return 0;
		}
		if (SSL_get_error(c->ssl, r) != SSL_ERROR_WANT_READ && SSL_get_error(c->ssl, r) != SSL_ERROR_WANT_WRITE)
			break;
		if (ssl_wait(c, r, deadline_us) != 0) {
			ERR_clear_error();
			return terr_set(err, TERR_HOST_UNREACHABLE, "TLS handshake with %s timed out", host);
		}
	}
	repl_member_tls_reason(c->ssl, why, sizeof(why));
	repl_member_tls_note(host, why);
	return terr_set(err, TERR_HOST_UNREACHABLE, "TLS handshake with %s failed: %s", host, why);
}

static void
mconn_close(mconn_t *c)
{
	if (c->ssl != NULL) {
		SSL_shutdown(c->ssl);
		SSL_free(c->ssl);
		ERR_clear_error();
	}
	close(c->fd);
	c->fd = -1;
	c->ssl = NULL;
}

static int
connect_to(const char *host, int64_t deadline_us, terr_t *err)
{
	char name[256], port[16];
	const char *colon = strrchr(host, ':');
	struct addrinfo hints, *res = NULL, *ai;
	int fd = -1;

	if (colon == NULL || (size_t)(colon - host) >= sizeof(name) || strlen(colon + 1) >= sizeof(port))
		return terr_set(err, TERR_HOST_UNREACHABLE, "bad member host %s", host);
	memcpy(name, host, (size_t)(colon - host));
	name[colon - host] = '\0';
	strcpy(port, colon + 1);
	memset(&hints, 0, sizeof(hints));
	hints.ai_socktype = SOCK_STREAM;
	if (getaddrinfo(name, port, &hints, &res) != 0)
		return terr_set(err, TERR_HOST_UNREACHABLE, "cannot resolve %s", host);
	for (ai = res; ai != NULL && fd < 0; ai = ai->ai_next) {
		int so = 0;
		socklen_t sl = sizeof(so);
		fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol);
		if (fd < 0)
			continue;
		if (connect(fd, ai->ai_addr, ai->ai_addrlen) != 0 &&
		    (errno != EINPROGRESS || wait_fd(fd, POLLOUT, deadline_us) != 0 ||
		     getsockopt(fd, SOL_SOCKET, SO_ERROR, &so, &sl) != 0 || so != 0)) {
			close(fd);
			fd = -1;
		}
	}
	freeaddrinfo(res);
	if (fd < 0)
		return terr_set(err, TERR_HOST_UNREACHABLE, "Connection refused connecting to %s", host);
	return fd;
}

/* The dropRaftMessagesFrom fail point (repl/raft_member.c) names host: a
 * partition cuts this connection too (not one of log entries only:
 * `stripEntries`). */
static bool
partitioned_from(const bson_t *data, void *arg)
{
	bson_iter_t it, h;

	if (!bson_iter_init_find(&it, data, "hosts") || !BSON_ITER_HOLDS_ARRAY(&it))
		return false;
	if (bson_iter_init_find(&h, data, "stripEntries") && bson_iter_as_bool(&h))
		return false;   /* log entries only: no partition */
	bson_iter_recurse(&it, &h);
	while (bson_iter_next(&h))
		if (BSON_ITER_HOLDS_UTF8(&h) && strcmp(bson_iter_utf8(&h, NULL), (const char *)arg) == 0)
			return true;
	return false;
}

/* One OP_MSG request and its reply on fd. */
static int
roundtrip(mconn_t *fd, const char *host, const char *db, const bson_t *cmd, int64_t deadline, bson_t *reply,
          terr_t *err)
{
	bson_t body;
	uint8_t hdr[16], *msg = NULL, *in = NULL;
	uint32_t len, rlen;
	int ret = -1;

	bson_copy_to(cmd, &body);
	BSON_APPEND_UTF8(&body, "$db", db);
	len = 16 + 4 + 1 + body.len;
	msg = bson_malloc(len);
	{
		int32_t v[4] = {(int32_t)len, 1, 0, OP_MSG};
		uint32_t flags = 0;
		memcpy(msg, v, 16);
		memcpy(msg + 16, &flags, 4);
		msg[20] = 0;
		memcpy(msg + 21, bson_get_data(&body), body.len);
	}
	bson_destroy(&body);
	if (io_all(fd, msg, len, true, deadline) != 0 || io_all(fd, hdr, 16, false, deadline) != 0) {
		terr_set(err, TERR_HOST_UNREACHABLE, "no answer from %s", host);
		goto out;
	}
	memcpy(&rlen, hdr, 4);
	if (rlen < 16 + 4 + 1 + 5 || rlen > REPLY_MAX) {
		terr_set(err, TERR_BAD_VALUE, "a malformed reply from %s", host);
		goto out;
	}
	in = bson_malloc(rlen - 16);
	if (io_all(fd, in, rlen - 16, false, deadline) != 0) {
		terr_set(err, TERR_HOST_UNREACHABLE, "no answer from %s", host);
		goto out;
	}
	{
		int32_t op;
		bson_t view;
		uint32_t dl = 0;
		memcpy(&op, hdr + 12, 4);
		memcpy(&dl, in + 5, 4);
		if (op != OP_MSG || in[4] != 0 || dl > rlen - 16 - 5 || !bson_init_static(&view, in + 5, dl)) {
			terr_set(err, TERR_BAD_VALUE, "a malformed reply from %s", host);
			goto out;
		}
		bson_copy_to(&view, reply);
	}
	ret = 0;
out:
	bson_free(msg);
	bson_free(in);
	return ret;
}

/* A reply's refusal as err (its code and errmsg); 0 when it is ok: 1. */
static int
reply_refused(const bson_t *reply, terr_t *err)
{
	bson_iter_t it;
	int64_t code;

	if (bson_iter_init_find(&it, reply, "ok") && bson_iter_as_double(&it) == 1.0)
		return 0;
	code = bson_iter_init_find(&it, reply, "code") ? bson_iter_as_int64(&it) : TERR_AUTHENTICATION_FAILED;
	return terr_set(err, (int)code, "%s",
	    bson_iter_init_find(&it, reply, "errmsg") && BSON_ITER_HOLDS_UTF8(&it) ? bson_iter_utf8(&it, NULL) :
	    "Authentication failed.");
}

/* The payload of a SASL reply (BinData), borrowed from reply. */
static int
sasl_payload(const bson_t *reply, const char **data, uint32_t *len)
{
	bson_iter_t it;
	bson_subtype_t st;
	const uint8_t *d;

	if (!bson_iter_init_find(&it, reply, "payload") || !BSON_ITER_HOLDS_BINARY(&it))
		return -1;
	bson_iter_binary(&it, &st, len, &d);
	*data = (const char *)d;
	return 0;
}

/*
 * SCRAM-SHA-256 as __system@local with the keyFile's key number which
 * (mongod's internal authentication), on fd before the command.  18 with
 * the peer's reason when it refuses or cannot prove it holds the key
 * (*refused set: another key may do), else the connection's error.
 */
static int
authenticate(mconn_t *fd, const char *host, int64_t deadline, size_t which, bool *refused, terr_t *err)
{
	terr_t inner = TERR_INIT;
	auth_scram_client_t *c;
	bson_t cmd, reply, opts;
	const char *payload;
	uint32_t plen;
	char *final = NULL;
	bson_iter_t it;
	int ret = -1;

	*refused = false;
	c = auth_member_client_new(which, err);
	if (c == NULL)
		return -1;
	bson_init(&cmd);
	BSON_APPEND_INT32(&cmd, "saslStart", 1);
	BSON_APPEND_UTF8(&cmd, "mechanism", "SCRAM-SHA-256");
	bson_append_binary(&cmd, "payload", -1, BSON_SUBTYPE_BINARY, (const uint8_t *)auth_scram_client_first(c),
	    (uint32_t)strlen(auth_scram_client_first(c)));
	BSON_APPEND_BOOL(&cmd, "autoAuthorize", true);
	BSON_APPEND_DOCUMENT_BEGIN(&cmd, "options", &opts);
	BSON_APPEND_BOOL(&opts, "skipEmptyExchange", true);
	bson_append_document_end(&cmd, &opts);
	if (roundtrip(fd, host, "local", &cmd, deadline, &reply, err) != 0) {
		bson_destroy(&cmd);
		goto out;
	}
	bson_destroy(&cmd);
	if (reply_refused(&reply, &inner) != 0 || sasl_payload(&reply, &payload, &plen) != 0 ||
	    auth_scram_client_final(c, payload, plen, &final, &inner) != 0) {
		bson_destroy(&reply);
		goto refused;
	}
	bson_init(&cmd);
	BSON_APPEND_INT32(&cmd, "saslContinue", 1);
	if (bson_iter_init_find(&it, &reply, "conversationId"))
		bson_append_iter(&cmd, "conversationId", -1, &it);
	bson_append_binary(&cmd, "payload", -1, BSON_SUBTYPE_BINARY, (const uint8_t *)final, (uint32_t)strlen(final));
	bson_destroy(&reply);
	if (roundtrip(fd, host, "local", &cmd, deadline, &reply, err) != 0) {
		bson_destroy(&cmd);
		goto out;
	}
	bson_destroy(&cmd);
	if (reply_refused(&reply, &inner) != 0 || sasl_payload(&reply, &payload, &plen) != 0 ||
	    auth_scram_client_verify(c, payload, plen, &inner) != 0) {
		bson_destroy(&reply);
		goto refused;
	}
	bson_destroy(&reply);
	repl_member_auth_note(host, NULL);
	ret = 0;
	goto out;
refused:
	*refused = true;
	/* what the operator reads in rs.status()'s lastHeartbeatMessage */
	terr_set(err, TERR_AUTHENTICATION_FAILED, "Authentication failed.");
	repl_member_auth_note(host, inner.msg != NULL ? inner.msg : "Authentication failed.");
out:
	terr_clear(&inner);
	bson_free(final);
	auth_scram_client_free(c);
	return ret;
}

/*
 * MONGODB-X509 as the member (mongod's internal x.509 authentication under
 * clusterAuthMode sendX509/x509): `authenticate` on $external with the
 * subject of the certificate this member presents (--tlsClusterFile).  The
 * other member takes it for __system when the certificate passes its
 * member rule.  18 with the peer's reason when it refuses.
 */
static int
authenticate_x509(mconn_t *fd, const char *host, int64_t deadline, terr_t *err)
{
	terr_t inner = TERR_INIT;
	bson_t cmd, reply;
	int ret = 0;

	if (fd->ssl == NULL)
		return terr_set(err, TERR_AUTHENTICATION_FAILED,
		    "x.509 member authentication needs TLS to %s (--tlsMode preferTLS or requireTLS)", host);
	bson_init(&cmd);
	BSON_APPEND_INT32(&cmd, "authenticate", 1);
	BSON_APPEND_UTF8(&cmd, "mechanism", "MONGODB-X509");
	if (auth_x509_cluster_subject() != NULL)
		BSON_APPEND_UTF8(&cmd, "user", auth_x509_cluster_subject());
	ret = roundtrip(fd, host, "$external", &cmd, deadline, &reply, err);
	bson_destroy(&cmd);
	if (ret != 0)
		return -1;
	if (reply_refused(&reply, &inner) != 0) {
		repl_member_auth_note(host, inner.msg != NULL ? inner.msg : "Authentication failed.");
		terr_clear(&inner);
		ret = terr_set(err, TERR_AUTHENTICATION_FAILED, "Authentication failed.");
	} else {
		repl_member_auth_note(host, NULL);
	}
	bson_destroy(&reply);
	return ret;
}

int
repl_member_rpc(const char *host, const char *db, const bson_t *cmd, int timeout_ms, bson_t *reply,
                terr_t *err)
{
	return repl_member_rpc_timed(host, db, cmd, timeout_ms, reply, NULL, err);
}

/* Open c to host by deadline: TCP, TLS when members connect out with it,
 * then the member authentication (x.509, or the keyFile's first key and,
 * when the peer refuses it, the second on a new connection).  0, or -1
 * with err (nothing left open). */
static int
conn_open(mconn_t *c, const char *host, int64_t deadline, terr_t *err)
{
	c->fd = -1;
	c->ssl = NULL;
	for (size_t which = 0;; which++) {
		bool refused = false;
		c->fd = connect_to(host, deadline, err);
		if (c->fd < 0)
			return -1;
		if (repl_member_tls_outgoing() && tls_connect(c, host, deadline, err) != 0) {
			mconn_close(c);
			return -1;
		}
		if (auth_cluster_sends_x509()) {
			if (authenticate_x509(c, host, deadline, err) == 0)
				return 0;
			mconn_close(c);
			return -1;
		}
		if (!auth_member_key_present() || authenticate(c, host, deadline, which, &refused, err) == 0)
			return 0;
		mconn_close(c);
		if (!refused || which + 1 >= auth_member_key_count())
			return -1;
		terr_clear(err);
	}
}

/* The dropRaftMessagesFrom fail point cuts host off: err set. */
static bool
cut_off(const char *host, terr_t *err)
{
	bson_t fp;

	if (failpoint_any_active() && failpoint_fire("dropRaftMessagesFrom", partitioned_from, (void *)host, &fp)) {
		bson_destroy(&fp);
		terr_set(err, TERR_HOST_UNREACHABLE, "%s is cut off (dropRaftMessagesFrom)", host);
		return true;
	}
	return false;
}

/* roundtrip, and *rtt_us (when not NULL) its time. */
static int
timed_roundtrip(mconn_t *c, const char *host, const char *db, const bson_t *cmd, int64_t deadline, bson_t *reply,
                int64_t *rtt_us, terr_t *err)
{
	int64_t t0 = tm_now_us();
	int ret = roundtrip(c, host, db, cmd, deadline, reply, err);

	if (rtt_us != NULL)
		*rtt_us = tm_now_us() - t0;
	return ret;
}

int
repl_member_rpc_timed(const char *host, const char *db, const bson_t *cmd, int timeout_ms, bson_t *reply,
                      int64_t *rtt_us, terr_t *err)
{
	int64_t deadline = tm_now_us() + (int64_t)timeout_ms * 1000;
	mconn_t c = {-1, NULL};
	int ret;

	if (cut_off(host, err))
		return -1;
	if (conn_open(&c, host, deadline, err) != 0)
		return -1;
	ret = timed_roundtrip(&c, host, db, cmd, deadline, reply, rtt_us, err);
	mconn_close(&c);
	return ret;
}

struct repl_member_conn {
	char host[256];
	mconn_t c;
	bool open;
};

repl_member_conn_t *
repl_member_conn_new(const char *host)
{
	repl_member_conn_t *k = bson_malloc0(sizeof(*k));

	bson_strncpy(k->host, host, sizeof(k->host));
	k->c.fd = -1;
	return k;
}

int
repl_member_conn_call(repl_member_conn_t *k, const char *db, const bson_t *cmd, int timeout_ms, bson_t *reply,
                      int64_t *rtt_us, terr_t *err)
{
	int64_t deadline = tm_now_us() + (int64_t)timeout_ms * 1000;
	int ret;

	if (cut_off(k->host, err)) {
		repl_member_conn_reset(k);
		return -1;
	}
	if (!k->open) {
		if (conn_open(&k->c, k->host, deadline, err) != 0)
			return -1;
		k->open = true;
	}
	ret = timed_roundtrip(&k->c, k->host, db, cmd, deadline, reply, rtt_us, err);
	/* a failed or timed-out exchange leaves the stream where nobody knows:
	 * the next call opens a new connection */
	if (ret != 0)
		repl_member_conn_reset(k);
	return ret;
}

void
repl_member_conn_reset(repl_member_conn_t *k)
{
	if (k != NULL && k->open) {
		mconn_close(&k->c);
		k->open = false;
	}
}

void
repl_member_conn_free(repl_member_conn_t *k)
{
	repl_member_conn_reset(k);
	bson_free(k);
}

bool
repl_member_rpc_transient(int64_t code)
{
	static const int codes[] = {6, 7, 50, 89, 91, 189, 262, 9001, 10107, 11600, 11602, 13435, 13436};

	for (size_t i = 0; i < sizeof(codes) / sizeof(codes[0]); i++)
		if (codes[i] == code)
			return true;
	return false;
}
