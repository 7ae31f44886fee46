/*
 * member_tls.h -- TLS between replica-set members (mongod's member TLS):
 * the process-wide OpenSSL contexts both member channels use -- the
 * wire-protocol calls (member_rpc.c, client side only: the other member's
 * main port is served by server/tls.c) and the Raft transport
 * (raft_tls.c, both sides).
 *
 * As mongod: a member connecting out presents --tlsClusterFile (else
 * --tlsCertificateKeyFile) and checks the other member's certificate
 * against --tlsCAFile and its host name (the member's configured host)
 * unless --tlsAllowInvalidCertificates / --tlsAllowInvalidHostnames; an
 * incoming Raft connection presents --tlsCertificateKeyFile and must show
 * a certificate that verifies against --tlsClusterCAFile (else
 * --tlsCAFile).  Members connect out with TLS under preferTLS and
 * requireTLS, in clear under allowTLS; the Raft listener accepts both under
 * allowTLS/preferTLS and TLS only under requireTLS.
 *
 * Configured once by tamgad before any member starts, read-only after
 * (no lock on the readers).  An embedded engine never configures it.
 */
#ifndef TAMGA_REPL_MEMBER_TLS_H
#define TAMGA_REPL_MEMBER_TLS_H

#include <stdbool.h>

#include <openssl/ssl.h>

#include "common/error.h"

typedef enum repl_member_tls_mode {
	REPL_MEMBER_TLS_OFF = 0,     /* disabled: no TLS anywhere */
	REPL_MEMBER_TLS_ALLOW,       /* out in clear; in: both */
	REPL_MEMBER_TLS_PREFER,      /* out with TLS; in: both */
	REPL_MEMBER_TLS_REQUIRE,     /* out with TLS; in: TLS only */
} repl_member_tls_mode_t;

typedef struct repl_member_tls_options {
	repl_member_tls_mode_t mode;
	const char *certificate_key_file;      /* the server's certificate (incoming Raft connections) */
	const char *certificate_key_password;
	const char *cluster_file;              /* presented connecting out; NULL: certificate_key_file */
	const char *cluster_password;          /* NULL: certificate_key_password when no cluster_file */
	const char *ca_file;                   /* verifies the members we connect to */
	const char *cluster_ca_file;           /* verifies members connecting in; NULL: ca_file */
	bool allow_invalid_certificates;
	bool allow_invalid_hostnames;
} repl_member_tls_options_t;

/*
 * Build the contexts (mode OFF: clears them).  -1 with err (140
 * InvalidSSLConfiguration, OpenSSL's reason) when a file cannot be read
 * or a key does not match its certificate.  Not thread-safe: call at
 * startup only.
 */
int repl_member_tls_configure(const repl_member_tls_options_t *o, terr_t *err);
repl_member_tls_mode_t repl_member_tls_mode(void);

/* Whether this member connects out with TLS (preferTLS, requireTLS). */
bool repl_member_tls_outgoing(void);

/*
 * A client SSL for a connection to host ("name:port": the name is checked
 * against the certificate, as an IP address when it parses as one).  NULL
 * when TLS is not configured or OpenSSL is out of memory.  The caller owns
 * it (SSL_free).
 */
SSL *repl_member_tls_client(const char *host);

/* A server SSL for an incoming Raft connection; NULL when not configured. */
SSL *repl_member_tls_server(void);

/* OpenSSL's last reason (or the verify result) as text into buf; clears
 * the thread's error queue. */
void repl_member_tls_reason(SSL *ssl, char *buf, size_t len);

/*
 * The x.509 check of a Raft peer (raft_tls.c calls it when a connection is
 * ready: ssl after its handshake, NULL for a plain connection).  Under a
 * clusterAuthMode that accepts member certificates and no key of the
 * keyFile handshake to prove membership otherwise (x509; sendKeyFile /
 * sendX509 without --keyFile), the peer must have presented a certificate
 * that verified and passes mongod's member rule (auth_x509.h), and a plain
 * connection is refused.  0 when accepted, -1 with the reason in why.
 */
int repl_member_tls_peer_check(SSL *ssl, char *why, size_t len);

#endif
