/*
 * test_auth_tls.c -- server/tls.c: a self-signed certificate made at test
 * time with OpenSSL, handshakes over socketpairs (server side through
 * tls_accept, client side plain OpenSSL in a thread), the first-bytes
 * detection of allowTLS/preferTLS, requireTLS refusing plain connections,
 * client certificates against --tlsCAFile, and bad configurations.
 */
#include "tt.h"

#include <pthread.h>
#include <signal.h>
#include <time.h>
#include <sys/socket.h>

#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "common/tls_password.h"
#include "server/tls.h"

static char *tmp;
static char pem_path[512], ca_path[512], client_pem_path[512], other_pem_path[512];

/* Write a self-signed certificate (CN=cn) and its key into path; returns
 * the certificate and key for further use (caller frees). */
static void
make_cert(const char *path, const char *cn, X509 *issuer, EVP_PKEY *issuer_key, X509 **cert_out, EVP_PKEY **key_out)
{
	EVP_PKEY *key = EVP_EC_gen("P-256");
	X509 *x = X509_new();
	X509_NAME *name;
	FILE *f;

	TT_ASSERT(key != NULL && x != NULL);
	X509_set_version(x, 2);
	ASN1_INTEGER_set(X509_get_serialNumber(x), (long)(uintptr_t)x & 0x7fffffff);
	X509_gmtime_adj(X509_getm_notBefore(x), -3600);
	X509_gmtime_adj(X509_getm_notAfter(x), 3600L * 24);
	X509_set_pubkey(x, key);
	name = X509_get_subject_name(x);
	X509_NAME_add_entry_by_txt(name, "O", MBSTRING_ASC, (const unsigned char *)"Tamga tests", -1, -1, 0);
	X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, (const unsigned char *)cn, -1, -1, 0);
	X509_set_issuer_name(x, issuer ? X509_get_subject_name(issuer) : name);
	if (issuer == NULL) {
		X509V3_CTX ctx;
		X509_EXTENSION *ext;
		X509V3_set_ctx_nodb(&ctx);
		X509V3_set_ctx(&ctx, x, x, NULL, NULL, 0);
		ext = X509V3_EXT_conf_nid(NULL, &ctx, NID_basic_constraints, "critical,CA:TRUE");
		X509_add_ext(x, ext, -1);
		X509_EXTENSION_free(ext);
		ext = X509V3_EXT_conf_nid(NULL, &ctx, NID_subject_alt_name, "DNS:localhost,IP:127.0.0.1");
		X509_add_ext(x, ext, -1);
		X509_EXTENSION_free(ext);
	}
	TT_ASSERT(X509_sign(x, issuer_key ? issuer_key : key, EVP_sha256()) > 0);
	f = fopen(path, "w");
	TT_ASSERT(f != NULL);
	PEM_write_X509(f, x);
	PEM_write_PrivateKey(f, key, NULL, NULL, 0, NULL, NULL);
	fclose(f);
	*cert_out = x;
	*key_out = key;
}

static X509 *ca_cert;
static EVP_PKEY *ca_key;

static void
setup(void)
{
	X509 *c;
	EVP_PKEY *k;
	FILE *f;

	tmp = tt_tmpdir("tls");
	snprintf(pem_path, sizeof(pem_path), "%s/server.pem", tmp);
	snprintf(ca_path, sizeof(ca_path), "%s/ca.pem", tmp);
	snprintf(client_pem_path, sizeof(client_pem_path), "%s/client.pem", tmp);
	snprintf(other_pem_path, sizeof(other_pem_path), "%s/other.pem", tmp);
	/* the server certificate is self-signed and doubles as the CA */
	make_cert(pem_path, "localhost", NULL, NULL, &ca_cert, &ca_key);
	f = fopen(ca_path, "w");
	PEM_write_X509(f, ca_cert);
	fclose(f);
	make_cert(client_pem_path, "app-client", ca_cert, ca_key, &c, &k);
	X509_free(c);
	EVP_PKEY_free(k);
	/* a certificate from nobody the server trusts */
	make_cert(other_pem_path, "stranger", NULL, NULL, &c, &k);
	X509_free(c);
	EVP_PKEY_free(k);
}

static void
teardown(void)
{
	X509_free(ca_cert);
	EVP_PKEY_free(ca_key);
	tt_rmdir(tmp);
	bson_free(tmp);
}

/* ---- the client side, in a thread -------------------------------------------------- */

typedef struct client_job {
	int fd;
	bool use_tls;
	const char *client_pem;      /* present a client certificate */
	const char *msg;
	char reply[64];
	bool handshake_ok;
	bool verified;               /* the server certificate verified against the CA */
} client_job_t;

static void *
client_main(void *arg)
{
	client_job_t *j = arg;

	if (!j->use_tls) {
		ssize_t n = send(j->fd, j->msg, strlen(j->msg), MSG_NOSIGNAL);
		(void)n;
		n = recv(j->fd, j->reply, sizeof(j->reply) - 1, 0);
		if (n > 0)
			j->reply[n] = '\0';
		return NULL;
	}
	{
		SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
		SSL *ssl;
		int n;
		SSL_CTX_load_verify_locations(ctx, ca_path, NULL);
		SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
		if (j->client_pem != NULL) {
			SSL_CTX_use_certificate_chain_file(ctx, j->client_pem);
			SSL_CTX_use_PrivateKey_file(ctx, j->client_pem, SSL_FILETYPE_PEM);
		}
		ssl = SSL_new(ctx);
		SSL_set_fd(ssl, j->fd);
		SSL_set_tlsext_host_name(ssl, "localhost");
		SSL_set1_host(ssl, "localhost");
		if (SSL_connect(ssl) == 1) {
			j->handshake_ok = true;
			j->verified = SSL_get_verify_result(ssl) == X509_V_OK;
			SSL_write(ssl, j->msg, (int)strlen(j->msg));
			n = SSL_read(ssl, j->reply, sizeof(j->reply) - 1);
			if (n > 0)
				j->reply[n] = '\0';
			SSL_shutdown(ssl);
		}
		SSL_free(ssl);
		SSL_CTX_free(ctx);
	}
	return NULL;
}

/* One connection: the server side through tls_accept, then an echo of what
 * arrived.  Returns tls_accept's result; *was_tls tells which path. */
static int
serve_one(tls_server_t *srv, client_job_t *job, bool *was_tls, char *subject, size_t slen)
{
	int sv[2];
	pthread_t th;
	tls_conn_t *conn = NULL;
	terr_t err = TERR_INIT;
	char buf[64];
	ssize_t n;
	int rc;

	TT_EQ_INT(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	job->fd = sv[1];
	pthread_create(&th, NULL, client_main, job);
	rc = tls_accept(srv, sv[0], 5000, &conn, &err);
	*was_tls = conn != NULL;
	if (subject)
		subject[0] = '\0';
	if (rc == 0) {
		if (conn != NULL) {
			if (subject && tls_conn_peer_subject(conn))
				bson_strncpy(subject, tls_conn_peer_subject(conn), slen);
			TT_ASSERT(tls_conn_version(conn) != NULL);
			n = tls_read(conn, buf, sizeof(buf) - 1);
			TT_ASSERT(n > 0);
			if (n > 0)
				TT_EQ_INT(tls_write(conn, buf, (size_t)n), n);
			tls_close(conn);
		} else {
			n = recv(sv[0], buf, sizeof(buf) - 1, 0);
			TT_ASSERT(n > 0);
			if (n > 0)
				send(sv[0], buf, (size_t)n, MSG_NOSIGNAL);
		}
	}
	terr_clear(&err);
	shutdown(sv[0], SHUT_RDWR);
	close(sv[0]);
	pthread_join(th, NULL);
	close(sv[1]);
	return rc;
}

static tls_server_t *
server(tls_mode_t mode, const char *ca, bool require_cert)
{
	tls_options_t o = {0};
	tls_server_t *s = NULL;
	terr_t err = TERR_INIT;

	o.mode = mode;
	o.certificate_key_file = pem_path;
	o.ca_file = ca;
	o.require_client_cert = require_cert;
	TT_EQ_INT(tls_server_new(&o, &s, &err), 0);
	if (err.msg)
		fprintf(stderr, "%s\n", err.msg);
	terr_clear(&err);
	return s;
}

/* ---- tests ---------------------------------------------------------------------------- */

static void
test_modes_parse(void)
{
	tls_mode_t m;

	TT_EQ_INT(tls_mode_parse("requireTLS", &m), 0);
	TT_EQ_INT(m, TLS_MODE_REQUIRE);
	TT_EQ_INT(tls_mode_parse("preferSSL", &m), 0);
	TT_EQ_INT(m, TLS_MODE_PREFER);
	TT_EQ_INT(tls_mode_parse("allowTLS", &m), 0);
	TT_EQ_INT(tls_mode_parse("disabled", &m), 0);
	TT_EQ_INT(m, TLS_MODE_DISABLED);
	TT_EQ_INT(tls_mode_parse("required", &m), -1);
	TT_EQ_STR(tls_mode_name(TLS_MODE_ALLOW), "allowTLS");
}

static void
test_require_tls_handshake(void)
{
	tls_server_t *s = server(TLS_MODE_REQUIRE, NULL, false);
	client_job_t job = {0};
	bool was_tls;

	job.use_tls = true;
	job.msg = "hello over tls";
	TT_EQ_INT(serve_one(s, &job, &was_tls, NULL, 0), 0);
	TT_ASSERT(was_tls);
	TT_ASSERT(job.handshake_ok);
	TT_ASSERT(job.verified);
	TT_EQ_STR(job.reply, "hello over tls");
	tls_server_free(s);
}

static void
test_require_tls_refuses_plain(void)
{
	tls_server_t *s = server(TLS_MODE_REQUIRE, NULL, false);
	client_job_t job = {0};
	bool was_tls;

	/* a MongoDB message header: length 0x3a little-endian, ... */
	job.msg = "\x3a\x00\x00\x00\x01\x00\x00\x00";
	job.msg = "plain mongodb bytes";
	TT_EQ_INT(serve_one(s, &job, &was_tls, NULL, 0), -1);
	TT_ASSERT(!was_tls);
	TT_EQ_STR(job.reply, "");
	tls_server_free(s);
}

static void
test_allow_and_prefer_detect(void)
{
	tls_mode_t modes[] = {TLS_MODE_ALLOW, TLS_MODE_PREFER};
	int i;

	for (i = 0; i < 2; i++) {
		tls_server_t *s = server(modes[i], NULL, false);
		client_job_t plain = {0}, tls = {0};
		bool was_tls;

		plain.msg = "plain message";
		TT_EQ_INT(serve_one(s, &plain, &was_tls, NULL, 0), 0);
		TT_ASSERT(!was_tls);
		TT_EQ_STR(plain.reply, "plain message");
		tls.use_tls = true;
		tls.msg = "tls message";
		TT_EQ_INT(serve_one(s, &tls, &was_tls, NULL, 0), 0);
		TT_ASSERT(was_tls);
		TT_EQ_STR(tls.reply, "tls message");
		tls_server_free(s);
	}
}

static void
test_disabled_never_handshakes(void)
{
	tls_options_t o = {0};
	tls_server_t *s = NULL;
	tls_conn_t *conn = NULL;
	terr_t err = TERR_INIT;

	o.mode = TLS_MODE_DISABLED;
	TT_EQ_INT(tls_server_new(&o, &s, &err), 0);
	TT_EQ_INT(tls_server_mode(s), TLS_MODE_DISABLED);
	TT_EQ_INT(tls_accept(s, -1, 10, &conn, &err), 0);
	TT_ASSERT(conn == NULL);
	tls_server_free(s);
}

static void
test_client_certificates(void)
{
	tls_server_t *s = server(TLS_MODE_REQUIRE, ca_path, false);
	client_job_t with = {0}, without = {0}, stranger = {0};
	char subject[256];
	bool was_tls;

	/* optional: a client with no certificate is fine */
	without.use_tls = true;
	without.msg = "anonymous";
	TT_EQ_INT(serve_one(s, &without, &was_tls, subject, sizeof(subject)), 0);
	TT_EQ_STR(without.reply, "anonymous");
	TT_EQ_STR(subject, "");
	/* a certificate the CA signed is verified and its subject known */
	with.use_tls = true;
	with.client_pem = client_pem_path;
	with.msg = "with cert";
	TT_EQ_INT(serve_one(s, &with, &was_tls, subject, sizeof(subject)), 0);
	TT_EQ_STR(with.reply, "with cert");
	TT_EQ_STR(subject, "CN=app-client,O=Tamga tests");
	/* one from an unknown issuer is refused */
	stranger.use_tls = true;
	stranger.client_pem = other_pem_path;
	stranger.msg = "stranger";
	TT_EQ_INT(serve_one(s, &stranger, &was_tls, NULL, 0), -1);
	TT_EQ_STR(stranger.reply, "");
	tls_server_free(s);

	/* required: no certificate, no connection */
	s = server(TLS_MODE_REQUIRE, ca_path, true);
	memset(&without, 0, sizeof(without));
	without.use_tls = true;
	without.msg = "anonymous";
	TT_EQ_INT(serve_one(s, &without, &was_tls, NULL, 0), -1);
	tls_server_free(s);
}

static void
test_bad_configuration(void)
{
	tls_options_t o = {0};
	tls_server_t *s = NULL;
	terr_t err = TERR_INIT;
	char path[600];
	FILE *f;

	o.mode = TLS_MODE_REQUIRE;
	TT_ASSERT(tls_server_new(&o, &s, &err) != 0);
	TT_EQ_INT(err.code, TERR_INVALID_SSL_CONFIGURATION);
	terr_clear(&err);
	o.certificate_key_file = "/nonexistent/server.pem";
	TT_ASSERT(tls_server_new(&o, &s, &err) != 0);
	TT_ASSERT(strstr(err.msg, "cannot read certificate file: /nonexistent/server.pem") != NULL);
	terr_clear(&err);
	/* a certificate without its key */
	snprintf(path, sizeof(path), "%s/nokey.pem", tmp);
	f = fopen(path, "w");
	PEM_write_X509(f, ca_cert);
	fclose(f);
	o.certificate_key_file = path;
	TT_ASSERT(tls_server_new(&o, &s, &err) != 0);
	TT_ASSERT(strstr(err.msg, "cannot read PEM key file") != NULL);
	terr_clear(&err);
	/* the key of another certificate */
	{
		X509 *c;
		EVP_PKEY *k;
		FILE *g;
		snprintf(path, sizeof(path), "%s/mismatch.pem", tmp);
		g = fopen(path, "w");
		PEM_write_X509(g, ca_cert);
		k = EVP_EC_gen("P-256");
		PEM_write_PrivateKey(g, k, NULL, NULL, 0, NULL, NULL);
		fclose(g);
		EVP_PKEY_free(k);
		(void)c;
	}
	TT_ASSERT(tls_server_new(&o, &s, &err) != 0);
	TT_EQ_INT(err.code, TERR_INVALID_SSL_CONFIGURATION);
	terr_clear(&err);
	o.certificate_key_file = pem_path;
	o.ca_file = "/nonexistent/ca.pem";
	TT_ASSERT(tls_server_new(&o, &s, &err) != 0);
	TT_ASSERT(strstr(err.msg, "cannot read certificate authority file") != NULL);
	terr_clear(&err);
	o.ca_file = NULL;
	o.require_client_cert = true;
	TT_ASSERT(tls_server_new(&o, &s, &err) != 0);
	terr_clear(&err);
}

/* --tlsCertificateKeyFilePassword: an encrypted key is read with the
 * configured pass phrase (common/tls_password.c), refused with a wrong one
 * or none (OpenSSL never prompts). */
static void
test_encrypted_key(void)
{
	tls_options_t o = {0};
	tls_server_t *s = NULL;
	terr_t err = TERR_INIT;
	char path[600], buf[4];
	FILE *f;

	/* the callback itself: the pass phrase cut to the buffer, none: 0 */
	TT_EQ_INT(tm_tls_password_cb(buf, (int)sizeof(buf), 0, "s3cret"), 4);
	TT_ASSERT(memcmp(buf, "s3cr", 4) == 0);
	TT_EQ_INT(tm_tls_password_cb(buf, (int)sizeof(buf), 0, NULL), 0);

	snprintf(path, sizeof(path), "%s/encrypted.pem", tmp);
	f = fopen(path, "w");
	PEM_write_X509(f, ca_cert);
	TT_EQ_INT(PEM_write_PrivateKey(f, ca_key, EVP_aes_256_cbc(), NULL, 0, NULL, (void *)"s3cret"), 1);
	fclose(f);
	o.mode = TLS_MODE_REQUIRE;
	o.certificate_key_file = path;
	o.certificate_key_password = "s3cret";
	TT_EQ_INT(tls_server_new(&o, &s, &err), 0);
	{
		/* and serves with it */
		client_job_t job = {0};
		bool was_tls;
		job.use_tls = true;
		job.msg = "encrypted key";
		TT_EQ_INT(serve_one(s, &job, &was_tls, NULL, 0), 0);
		TT_ASSERT(job.handshake_ok);
		TT_EQ_STR(job.reply, "encrypted key");
	}
	tls_server_free(s);
	s = NULL;
	o.certificate_key_password = "wrong";
	TT_ASSERT(tls_server_new(&o, &s, &err) != 0);
	TT_ASSERT(strstr(err.msg, "cannot read PEM key file") != NULL);
	terr_clear(&err);
	o.certificate_key_password = NULL;
	TT_ASSERT(tls_server_new(&o, &s, &err) != 0);
	TT_EQ_INT(err.code, TERR_INVALID_SSL_CONFIGURATION);
	terr_clear(&err);
}

/* Garbage that starts like a ClientHello: the handshake fails, nothing crashes. */
static void
test_garbage_hello(void)
{
	tls_server_t *s = server(TLS_MODE_ALLOW, NULL, false);
	terr_t err = TERR_INIT;
	tls_conn_t *conn = NULL;
	int sv[2];
	const unsigned char junk[] = {0x16, 0x03, 0x01, 0x00, 0x05, 0xff, 0xff, 0xff, 0xff, 0xff};

	TT_EQ_INT(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	TT_EQ_INT(send(sv[1], junk, sizeof(junk), 0), (long long)sizeof(junk));
	shutdown(sv[1], SHUT_WR);
	TT_EQ_INT(tls_accept(s, sv[0], 2000, &conn, &err), -1);
	TT_ASSERT(conn == NULL);
	TT_ASSERT(strncmp(err.msg, "SSLHandshakeFailed", 18) == 0);
	terr_clear(&err);
	close(sv[0]);
	close(sv[1]);
	/* the peer closes before sending anything */
	TT_EQ_INT(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	close(sv[1]);
	TT_EQ_INT(tls_accept(s, sv[0], 2000, &conn, &err), -1);
	terr_clear(&err);
	close(sv[0]);
	tls_server_free(s);
}

/* A client that stalls -- before its first byte, after one byte of a
 * ClientHello, in the middle of the handshake -- is dropped at the timeout. */
static void
test_stalled_clients(void)
{
	tls_server_t *s = server(TLS_MODE_PREFER, NULL, false);
	const unsigned char hello_start[] = {0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xfc, 0x03, 0x03};
	size_t sends[] = {0, 1, sizeof(hello_start)};
	int i;

	for (i = 0; i < 3; i++) {
		terr_t err = TERR_INIT;
		tls_conn_t *conn = NULL;
		struct timespec t0, t1;
		double secs;
		int sv[2];

		TT_EQ_INT(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
		if (sends[i] > 0)
			TT_EQ_INT(send(sv[1], hello_start, sends[i], 0), (long long)sends[i]);
		clock_gettime(CLOCK_MONOTONIC, &t0);
		TT_EQ_INT(tls_accept(s, sv[0], 300, &conn, &err), -1);
		clock_gettime(CLOCK_MONOTONIC, &t1);
		secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
		TT_ASSERT(secs >= 0.25 && secs < 3.0);
		TT_ASSERT(conn == NULL);
		terr_clear(&err);
		close(sv[0]);
		close(sv[1]);
	}
	tls_server_free(s);
}

int
main(void)
{
	signal(SIGPIPE, SIG_IGN);
	setup();
	TT_RUN(test_modes_parse);
	TT_RUN(test_require_tls_handshake);
	TT_RUN(test_require_tls_refuses_plain);
	TT_RUN(test_allow_and_prefer_detect);
	TT_RUN(test_disabled_never_handshakes);
	TT_RUN(test_client_certificates);
	TT_RUN(test_bad_configuration);
	TT_RUN(test_encrypted_key);
	TT_RUN(test_garbage_hello);
	TT_RUN(test_stalled_clients);
	teardown();
	return tt_finish();
}
