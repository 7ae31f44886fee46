/*
 * member_tls.c -- the OpenSSL contexts of TLS between members
 * (member_tls.h): one client context (what a member presents and checks
 * connecting out) and one server context (the Raft listener's side).
 *
 * Not here: the sockets (member_rpc.c, raft_tls.c); the main port's TLS
 * (server/tls.c).
 */
#include "repl/member_tls.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>

#include <openssl/err.h>
#include <openssl/x509v3.h>

#include "auth/auth_member.h"
#include "auth/auth_x509.h"

#include <bson/bson.h>

#include "common/tls_password.h"

/* MongoDB's InvalidSSLConfiguration. */
#define TERR_INVALID_SSL_CONFIG 140

static struct {
	repl_member_tls_mode_t mode;
	SSL_CTX *client, *server;
	bool allow_invalid_hostnames;
} g_tls;

static int
accept_any(int ok, X509_STORE_CTX *ctx)
{
	(void)ok;
	(void)ctx;
	return 1;
}

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

/* A context presenting cert (its key decrypted with password) and
 * verifying the peer against ca (NULL: the system's CAs for a client, no
 * verification for a server). */
static SSL_CTX *
make_ctx(bool server, const char *cert, const char *password, const char *ca, bool allow_invalid, terr_t *err)
{
	SSL_CTX *ctx = SSL_CTX_new(server ? TLS_server_method() : TLS_client_method());
	char why[256];

	if (ctx == NULL) {
		ossl_reason(why, sizeof(why));
		terr_set(err, TERR_INVALID_SSL_CONFIG, "cannot create a TLS context: %s", why);
		return NULL;
	}
	SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
	SSL_CTX_set_options(ctx, SSL_OP_NO_COMPRESSION);
	SSL_CTX_set_mode(ctx, SSL_MODE_AUTO_RETRY | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
	SSL_CTX_set_default_passwd_cb(ctx, tm_tls_password_cb);
	SSL_CTX_set_default_passwd_cb_userdata(ctx, (void *)password);
	if (SSL_CTX_use_certificate_chain_file(ctx, cert) != 1) {
		ossl_reason(why, sizeof(why));
		terr_set(err, TERR_INVALID_SSL_CONFIG, "cannot read certificate file: %s %s", cert, why);
		goto fail;
	}
	if (SSL_CTX_use_PrivateKey_file(ctx, cert, SSL_FILETYPE_PEM) != 1) {
		ossl_reason(why, sizeof(why));
		terr_set(err, TERR_INVALID_SSL_CONFIG, "cannot read PEM key file: %s %s", cert, why);
		goto fail;
	}
	if (SSL_CTX_check_private_key(ctx) != 1) {
		ossl_reason(why, sizeof(why));
		terr_set(err, TERR_INVALID_SSL_CONFIG, "private key does not match the certificate: %s", why);
		goto fail;
	}
	SSL_CTX_set_default_passwd_cb_userdata(ctx, NULL);
	if (ca != NULL && SSL_CTX_load_verify_locations(ctx, ca, NULL) != 1) {
		ossl_reason(why, sizeof(why));
		terr_set(err, TERR_INVALID_SSL_CONFIG, "cannot read certificate authority file: %s %s", ca, why);
		goto fail;
	}
	if (ca == NULL && !server)
		SSL_CTX_set_default_verify_paths(ctx);
	if (server && ca == NULL)
		SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, NULL);
	else if (server)
		/* members always present a certificate (their cluster one) */
		SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT,
		    allow_invalid ? accept_any : NULL);
	else
		SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, allow_invalid ? accept_any : NULL);
	return ctx;
fail:
	SSL_CTX_free(ctx);
	return NULL;
}

int
repl_member_tls_configure(const repl_member_tls_options_t *o, terr_t *err)
{
	SSL_CTX *client = NULL, *server = NULL;
	const char *out_cert, *out_pw;

	SSL_CTX_free(g_tls.client);
	SSL_CTX_free(g_tls.server);
	memset(&g_tls, 0, sizeof(g_tls));
	if (o == NULL || o->mode == REPL_MEMBER_TLS_OFF)
		return 0;
	if (o->certificate_key_file == NULL || o->certificate_key_file[0] == '\0')
		return terr_set(err, TERR_INVALID_SSL_CONFIG,
		    "need tlsCertificateKeyFile or certificateSelector when TLS is enabled");
	out_cert = o->cluster_file != NULL ? o->cluster_file : o->certificate_key_file;
	out_pw = o->cluster_file != NULL ? o->cluster_password : o->certificate_key_password;
	client = make_ctx(false, out_cert, out_pw, o->ca_file, o->allow_invalid_certificates, err);
	if (client == NULL)
		return -1;
	server = make_ctx(true, o->certificate_key_file, o->certificate_key_password,
	    o->cluster_ca_file != NULL ? o->cluster_ca_file : o->ca_file, o->allow_invalid_certificates, err);
	if (server == NULL) {
		SSL_CTX_free(client);
		return -1;
	}
	g_tls.mode = o->mode;
	g_tls.client = client;
	g_tls.server = server;
	g_tls.allow_invalid_hostnames = o->allow_invalid_hostnames;
	return 0;
}

repl_member_tls_mode_t
repl_member_tls_mode(void)
{
	return g_tls.mode;
}

bool
repl_member_tls_outgoing(void)
{
	return g_tls.mode == REPL_MEMBER_TLS_PREFER || g_tls.mode == REPL_MEMBER_TLS_REQUIRE;
}

SSL *
repl_member_tls_client(const char *host)
{
	char name[256];
	const char *colon = strrchr(host, ':');
	size_t n = colon != NULL ? (size_t)(colon - host) : strlen(host);
	unsigned char addr[16];
	SSL *ssl;

	if (g_tls.client == NULL || n >= sizeof(name))
		return NULL;
	memcpy(name, host, n);
	name[n] = '\0';
	/* "[::1]:port" */
	if (n >= 2 && name[0] == '[' && name[n - 1] == ']') {
		memmove(name, name + 1, n - 2);
		name[n - 2] = '\0';
	}
	ssl = SSL_new(g_tls.client);
	if (ssl == NULL)
		return NULL;
	if (inet_pton(AF_INET, name, addr) == 1 || inet_pton(AF_INET6, name, addr) == 1) {
		if (!g_tls.allow_invalid_hostnames)
			X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), name);
	} else {
		SSL_set_tlsext_host_name(ssl, name);
		if (!g_tls.allow_invalid_hostnames)
			SSL_set1_host(ssl, name);
	}
	return ssl;
}

SSL *
repl_member_tls_server(void)
{
	return g_tls.server != NULL ? SSL_new(g_tls.server) : NULL;
}

void
repl_member_tls_reason(SSL *ssl, char *buf, size_t len)
{
	long v = ssl != NULL ? SSL_get_verify_result(ssl) : X509_V_OK;

	if (v != X509_V_OK) {
		snprintf(buf, len, "SSL peer certificate validation failed: %s", X509_verify_cert_error_string(v));
		ERR_clear_error();
		return;
	}
	ossl_reason(buf, len);
}

int
repl_member_tls_peer_check(SSL *ssl, char *why, size_t len)
{
	X509 *peer;
	bool member;

	/* nothing to check when the key's handshake authenticates the peer
	 * (keyFile, sendKeyFile, sendX509 with a key) or no member
	 * authentication is configured */
	if (!auth_cluster_allows_x509() || (auth_cluster_allows_keyfile() && auth_member_key_present()))
		return 0;
	if (ssl == NULL) {
		snprintf(why, len, "clusterAuthMode %s: a member must connect with TLS and a member certificate",
		    auth_cluster_mode_name(auth_cluster_mode()));
		return -1;
	}
	peer = SSL_get_peer_certificate(ssl);
	member = peer != NULL && SSL_get_verify_result(ssl) == X509_V_OK && auth_x509_cert_is_member(peer);
	if (!member) {
		char *subject = peer != NULL ? auth_x509_name_string(X509_get_subject_name(peer)) : NULL;
		snprintf(why, len, "%s is not a member certificate (its O, OU and DC must be this member's)",
		    subject != NULL ? subject : "the peer's certificate");
		bson_free(subject);
	}
	X509_free(peer);
	return member ? 0 : -1;
}
