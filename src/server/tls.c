/*
 * tls.c -- OpenSSL server contexts and per-connection TLS (see tls.h).
 *
 * Not here: sockets' lifetime (the caller owns the fd) or the protocol.
 */
#include "server/tls.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include <bson/bson.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include "auth/auth_x509.h"
#include "common/tls_password.h"

struct tls_server {
	tls_mode_t mode;
	SSL_CTX *ctx;
};

struct tls_conn {
	SSL *ssl;
	char *subject;
	bool member;                   /* the subject passes the member rule (auth_x509.h) */
};

static const struct {
	const char *name;
	tls_mode_t mode;
} mode_names[] = {
	{"disabled", TLS_MODE_DISABLED},
	{"allowTLS", TLS_MODE_ALLOW},
	{"preferTLS", TLS_MODE_PREFER},
	{"requireTLS", TLS_MODE_REQUIRE},
	{"allowSSL", TLS_MODE_ALLOW},
	{"preferSSL", TLS_MODE_PREFER},
	{"requireSSL", TLS_MODE_REQUIRE},
};

int
tls_mode_parse(const char *text, tls_mode_t *out)
{
	size_t i;

	for (i = 0; i < sizeof(mode_names) / sizeof(mode_names[0]); i++) {
		if (strcmp(mode_names[i].name, text) == 0) {
			*out = mode_names[i].mode;
			return 0;
		}
	}
	return -1;
}

const char *
tls_mode_name(tls_mode_t m)
{
	size_t i;

	for (i = 0; i < sizeof(mode_names) / sizeof(mode_names[0]); i++)
		if (mode_names[i].mode == m)
			return mode_names[i].name;
	return "disabled";
}

/* The last OpenSSL error as text (clears the queue). */
static void
ossl_reason(char *buf, size_t len)
{
	unsigned long e = ERR_get_error();

	if (e == 0)
		bson_strncpy(buf, "unknown error", len);
	else
		ERR_error_string_n(e, buf, len);
	ERR_clear_error();
}

static int
verify_accept_all(int ok, X509_STORE_CTX *ctx)
{
	return 1;
}

int
tls_server_new(const tls_options_t *opts, tls_server_t **out, terr_t *err)
{
	tls_server_t *s;
	char why[256];
	int ret = 0;

	*out = NULL;
	s = bson_malloc0(sizeof(*s));
	s->mode = opts->mode;
	if (opts->mode == TLS_MODE_DISABLED) {
		*out = s;
		return 0;
	}
	if (opts->certificate_key_file == NULL || opts->certificate_key_file[0] == '\0')
		ERR(terr_set(err, TERR_INVALID_SSL_CONFIGURATION, "need tlsCertificateKeyFile or certificateSelector when TLS is enabled"));
	s->ctx = SSL_CTX_new(TLS_server_method());
	if (s->ctx == NULL) {
		ossl_reason(why, sizeof(why));
		ERR(terr_set(err, TERR_INVALID_SSL_CONFIGURATION, "cannot create a TLS context: %s", why));
	}
	SSL_CTX_set_min_proto_version(s->ctx, TLS1_2_VERSION);
	SSL_CTX_set_options(s->ctx, SSL_OP_NO_COMPRESSION | SSL_OP_CIPHER_SERVER_PREFERENCE);
	SSL_CTX_set_mode(s->ctx, SSL_MODE_AUTO_RETRY);
	SSL_CTX_set_default_passwd_cb(s->ctx, tm_tls_password_cb);
	SSL_CTX_set_default_passwd_cb_userdata(s->ctx, (void *)opts->certificate_key_password);
	if (SSL_CTX_use_certificate_chain_file(s->ctx, opts->certificate_key_file) != 1) {
		ossl_reason(why, sizeof(why));
		ERR(terr_set(err, TERR_INVALID_SSL_CONFIGURATION, "cannot read certificate file: %s %s",
		    opts->certificate_key_file, why));
	}
	if (SSL_CTX_use_PrivateKey_file(s->ctx, opts->certificate_key_file, SSL_FILETYPE_PEM) != 1) {
		ossl_reason(why, sizeof(why));
		ERR(terr_set(err, TERR_INVALID_SSL_CONFIGURATION, "cannot read PEM key file: %s %s",
		    opts->certificate_key_file, why));
	}
	if (SSL_CTX_check_private_key(s->ctx) != 1) {
		ossl_reason(why, sizeof(why));
		ERR(terr_set(err, TERR_INVALID_SSL_CONFIGURATION, "private key does not match the certificate: %s", why));
	}
	SSL_CTX_set_default_passwd_cb_userdata(s->ctx, NULL);
	if (opts->ca_file != NULL && opts->ca_file[0] != '\0') {
		STACK_OF(X509_NAME) *names;
		int mode = SSL_VERIFY_PEER;
		if (SSL_CTX_load_verify_locations(s->ctx, opts->ca_file, NULL) != 1) {
			ossl_reason(why, sizeof(why));
			ERR(terr_set(err, TERR_INVALID_SSL_CONFIGURATION, "cannot read certificate authority file: %s %s",
			    opts->ca_file, why));
		}
		names = SSL_load_client_CA_file(opts->ca_file);
		if (names != NULL)
			SSL_CTX_set_client_CA_list(s->ctx, names);
		if (opts->require_client_cert)
			mode |= SSL_VERIFY_FAIL_IF_NO_PEER_CERT;
		SSL_CTX_set_verify(s->ctx, mode, opts->allow_invalid_certificates ? verify_accept_all : NULL);
	} else if (opts->require_client_cert) {
		ERR(terr_set(err, TERR_INVALID_SSL_CONFIGURATION,
		    "client certificates can only be required with a tlsCAFile"));
	} else {
		SSL_CTX_set_verify(s->ctx, SSL_VERIFY_NONE, NULL);
	}
	*out = s;
	return 0;
err:
	tls_server_free(s);
	return ret;
}

void
tls_server_free(tls_server_t *s)
{
	if (s == NULL)
		return;
	SSL_CTX_free(s->ctx);
	bson_free(s);
}

tls_mode_t
tls_server_mode(const tls_server_t *s)
{
	return s ? s->mode : TLS_MODE_DISABLED;
}

/* Wait until fd is readable (or writable) for at most timeout_ms (-1 = no
 * limit); 1 ready, 0 timeout, -1 error. */
static int
wait_fd(int fd, bool for_write, int timeout_ms)
{
	struct pollfd p;
	int r;

	p.fd = fd;
	p.events = for_write ? POLLOUT : POLLIN;
	p.revents = 0;
	do {
		r = poll(&p, 1, timeout_ms);
	} while (r < 0 && errno == EINTR);
	return r;
}

static int64_t
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Milliseconds left before deadline (0 = none: -1 for poll); 0 when passed. */
static int
left_ms(int64_t deadline)
{
	int64_t l;

	if (deadline == 0)
		return -1;
	l = deadline - now_ms();
	return l > 0 ? (int)(l > INT32_MAX ? INT32_MAX : l) : 0;
}

/* The handshake on a non-blocking fd, bounded by deadline as a whole (a
 * client that trickles bytes cannot hold the thread past it). */
static int
handshake(SSL *ssl, int fd, int64_t deadline)
{
	int flags = fcntl(fd, F_GETFL), r, e, ret = -1;

	if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0)
		return -1;
	for (;;) {
		struct pollfd p;
		int wait;
		r = SSL_accept(ssl);
		if (r == 1) {
			ret = 0;
			break;
		}
		e = SSL_get_error(ssl, r);
		if (e != SSL_ERROR_WANT_READ && e != SSL_ERROR_WANT_WRITE)
			break;
		wait = left_ms(deadline);
		if (wait == 0)
			break;
		p.fd = fd;
		p.events = e == SSL_ERROR_WANT_WRITE ? POLLOUT : POLLIN;
		p.revents = 0;
		r = poll(&p, 1, wait);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
	}
	fcntl(fd, F_SETFL, flags);
	return ret;
}

int
tls_accept(tls_server_t *s, int fd, int timeout_ms, tls_conn_t **out, terr_t *err)
{
	unsigned char head[3];
	tls_conn_t *c;
	char why[256];
	ssize_t got;
	bool is_tls;
	int64_t deadline;
	int r, wait;

	*out = NULL;
	if (s == NULL || s->mode == TLS_MODE_DISABLED)
		return 0;
	deadline = timeout_ms > 0 ? now_ms() + timeout_ms : 0;
	/* peek the first bytes without consuming them */
	for (;;) {
		wait = left_ms(deadline);
		r = wait == 0 ? 0 : wait_fd(fd, false, wait);
		if (r == 0)
			return terr_set(err, TERR_PROTOCOL_ERROR, "timed out waiting for the first bytes of the connection");
		if (r < 0)
			return terr_set(err, TERR_PROTOCOL_ERROR, "poll failed: %s", strerror(errno));
		got = recv(fd, head, sizeof(head), MSG_PEEK);
		if (got < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (got <= 0)
			return terr_set(err, TERR_PROTOCOL_ERROR, "connection closed before the first message");
		if (got >= 2 || head[0] != 0x16)
			break;
		/* one byte of what may be a ClientHello: poll would say "readable"
		 * at once, so wait a little for the second instead of spinning */
		{
			struct timespec ts = {0, 2 * 1000 * 1000};
			nanosleep(&ts, NULL);
		}
	}
	is_tls = head[0] == 0x16 && got >= 2 && head[1] == 0x03;
	if (!is_tls) {
		if (s->mode == TLS_MODE_REQUIRE)
			return terr_set(err, TERR_PROTOCOL_ERROR,
			    "SSLHandshakeFailed: This server is configured to only allow SSL connections");
		return 0;
	}
	c = bson_malloc0(sizeof(*c));
	c->ssl = SSL_new(s->ctx);
	if (c->ssl == NULL || SSL_set_fd(c->ssl, fd) != 1) {
		ossl_reason(why, sizeof(why));
		tls_close(c);
		return terr_set(err, TERR_INTERNAL_ERROR, "cannot create a TLS connection: %s", why);
	}
	if (handshake(c->ssl, fd, timeout_ms > 0 ? now_ms() + timeout_ms : 0) != 0) {
		ossl_reason(why, sizeof(why));
		SSL_free(c->ssl);
		c->ssl = NULL;
		tls_close(c);
		return terr_set(err, TERR_PROTOCOL_ERROR, "SSLHandshakeFailed: %s", why);
	}
	{
		/* only a certificate that verified names the client (mongod:
		 * "No verified subject name available from client" otherwise,
		 * as with --tlsAllowInvalidCertificates) */
		X509 *peer = SSL_get_peer_certificate(c->ssl);
		if (peer != NULL && SSL_get_verify_result(c->ssl) == X509_V_OK) {
			c->subject = auth_x509_name_string(X509_get_subject_name(peer));
			c->member = c->subject != NULL && auth_x509_cert_is_member(peer);
		}
		X509_free(peer);
	}
	*out = c;
	return 0;
}

ssize_t
tls_read(tls_conn_t *c, void *buf, size_t n)
{
	int r, e;

	if (n == 0)
		return 0;
	if (n > INT32_MAX)
		n = INT32_MAX;
	for (;;) {
		r = SSL_read(c->ssl, buf, (int)n);
		if (r > 0)
			return r;
		e = SSL_get_error(c->ssl, r);
		if (e == SSL_ERROR_ZERO_RETURN)
			return 0;
		if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) {
			if (wait_fd(SSL_get_fd(c->ssl), e == SSL_ERROR_WANT_WRITE, -1) > 0)
				continue;
		}
		if (e == SSL_ERROR_SYSCALL && errno == EINTR)
			continue;
		if (e == SSL_ERROR_SYSCALL && r == 0)
			return 0; /* peer closed without close_notify */
		ERR_clear_error();
		if (e != SSL_ERROR_SYSCALL)
			errno = ECONNRESET;
		return -1;
	}
}

ssize_t
tls_write(tls_conn_t *c, const void *buf, size_t n)
{
	size_t put = 0;
	int r, e;

	while (put < n) {
		size_t chunk = n - put > INT32_MAX ? INT32_MAX : n - put;
		r = SSL_write(c->ssl, (const char *)buf + put, (int)chunk);
		if (r > 0) {
			put += (size_t)r;
			continue;
		}
		e = SSL_get_error(c->ssl, r);
		if ((e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) &&
		    wait_fd(SSL_get_fd(c->ssl), e == SSL_ERROR_WANT_WRITE, -1) > 0)
			continue;
		if (e == SSL_ERROR_SYSCALL && errno == EINTR)
			continue;
		ERR_clear_error();
		if (e != SSL_ERROR_SYSCALL)
			errno = ECONNRESET;
		return -1;
	}
	return (ssize_t)put;
}

void
tls_close(tls_conn_t *c)
{
	if (c == NULL)
		return;
	if (c->ssl != NULL) {
		SSL_shutdown(c->ssl);
		SSL_free(c->ssl);
	}
	ERR_clear_error();
	bson_free(c->subject);
	bson_free(c);
}

const char *
tls_conn_version(const tls_conn_t *c)
{
	return c && c->ssl ? SSL_get_version(c->ssl) : NULL;
}

const char *
tls_conn_peer_subject(const tls_conn_t *c)
{
	return c ? c->subject : NULL;
}

bool
tls_conn_peer_member(const tls_conn_t *c)
{
	return c != NULL && c->member;
}
