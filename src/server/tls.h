/*
 * tls.h -- TLS for tamgad's connections, on OpenSSL: the server context
 * made from mongod's options (--tlsMode, --tlsCertificateKeyFile,
 * --tlsCAFile), and the wrapping of one accepted socket.
 *
 * The connection code calls tls_accept() on each new socket before reading
 * the first message.  With allowTLS/preferTLS the first bytes decide: a TLS
 * ClientHello (record type 0x16, version 3.x) gets a handshake, anything
 * else is a plain MongoDB connection and its bytes are left unread.
 * requireTLS closes plain connections; disabled never handshakes.  After
 * that, the connection reads and writes through tls_read/tls_write when it
 * has a tls_conn_t, through recv/send otherwise.
 *
 * Not here: the listener, the framing of messages (wire.c), option parsing
 * (tools/tamgad.c).  Client certificates are checked against --tlsCAFile
 * when one is presented; one is required only with require_client_cert.
 */
#ifndef TAMGA_SERVER_TLS_H
#define TAMGA_SERVER_TLS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "common/error.h"

/* MongoDB's InvalidSSLConfiguration. */
#define TERR_INVALID_SSL_CONFIGURATION 140

typedef enum tls_mode {
	TLS_MODE_DISABLED = 0,
	TLS_MODE_ALLOW,        /* plain by default, TLS accepted */
	TLS_MODE_PREFER,       /* TLS preferred (outgoing), plain accepted */
	TLS_MODE_REQUIRE,      /* TLS only */
} tls_mode_t;

/* "disabled", "allowTLS", "preferTLS", "requireTLS" (and the older
 * "allowSSL"/"preferSSL"/"requireSSL" spellings of --sslMode).  -1 for
 * anything else. */
int tls_mode_parse(const char *text, tls_mode_t *out);
const char *tls_mode_name(tls_mode_t m);

typedef struct tls_options {
	tls_mode_t mode;
	const char *certificate_key_file;   /* PEM with the certificate (chain) and its private key */
	const char *certificate_key_password; /* NULL when the key is not encrypted */
	const char *ca_file;                /* PEM of CAs for client certificates, or NULL */
	bool require_client_cert;           /* refuse clients without a certificate (needs ca_file) */
	bool allow_invalid_certificates;    /* accept client certificates that do not verify */
} tls_options_t;

typedef struct tls_server tls_server_t;
typedef struct tls_conn tls_conn_t;

/*
 * Build the server context.  For mode disabled no file is read and *out is
 * a context that only says "disabled".  Errors (140 InvalidSSLConfiguration)
 * carry OpenSSL's reason: "need tlsCertificateKeyFile when tlsMode is ...",
 * "cannot read certificate file: <path> ...", "cannot read PEM key file",
 * "private key does not match the certificate", "cannot read certificate
 * authority file".  TLS 1.2 and 1.3 only.
 */
int tls_server_new(const tls_options_t *opts, tls_server_t **out, terr_t *err);
void tls_server_free(tls_server_t *s);
tls_mode_t tls_server_mode(const tls_server_t *s);

/*
 * Decide and (for TLS) handshake on a connected socket.  Waits at most
 * timeout_ms for the first bytes and for the handshake (0 = no limit).
 * Returns 0 with *out NULL for a plain connection (nothing consumed), 0
 * with *out set for a TLS one, -1 with err when the connection must be
 * closed: plain in requireTLS ("no SSL certificate provided by peer" is
 * not it: "This server is configured to only allow SSL connections"), a
 * failed handshake (OpenSSL's reason), or the peer closing first.  The fd
 * stays the caller's (it is never closed here).
 */
int tls_accept(tls_server_t *s, int fd, int timeout_ms, tls_conn_t **out, terr_t *err);

/* Like recv/send on a blocking socket (the process must ignore SIGPIPE,
 * as tamgad does, since OpenSSL writes with plain write()): read returns >0 bytes, 0 at a clean
 * close, -1 on error (errno set: ECONNRESET for TLS errors, or the socket's
 * own); write returns the bytes written (all of n unless -1). */
ssize_t tls_read(tls_conn_t *c, void *buf, size_t n);
ssize_t tls_write(tls_conn_t *c, const void *buf, size_t n);

/* Send close_notify (best effort) and free; does not close the fd. */
void tls_close(tls_conn_t *c);

/* The negotiated protocol ("TLSv1.3") and the client certificate's subject
 * as mongod prints it (auth_x509_name_string; NULL when none was presented
 * or it did not verify); both valid until tls_close.  peer_member: the
 * certificate passes mongod's member rule against the server's own
 * (auth_x509_cert_is_member). */
const char *tls_conn_version(const tls_conn_t *c);
const char *tls_conn_peer_subject(const tls_conn_t *c);
bool tls_conn_peer_member(const tls_conn_t *c);

#endif
