/*
 * test_raft_tls.c -- the TLS relay under libraft's transport
 * (repl/raft_tls.h) on loopback ports, with a CA and a member certificate
 * made here with OpenSSL: under requireTLS a connection is handed to Raft
 * only after the TLS handshake, 6 MiB each way cross it intact (past the
 * relay's 4 MiB write bound, so its pause/resume runs), a clear-text
 * connector is closed without Raft seeing it; under allowTLS the member
 * connects out in clear and the listener relays clear bytes; a
 * certificate for another host name is refused unless
 * tlsAllowInvalidHostnames; a TCP connect that outlives the handshake's
 * timeout (a listener whose full accept queue drops SYNs) tells libraft
 * once and, completing later, reads nothing the timeout freed; under
 * clusterAuthMode x509 (no key) a peer whose certificate is not a member's
 * (O/OU/DC of the server's own) is never handed to Raft on either side,
 * nor is a clear connector under preferTLS.
 */
#include "tt.h"
#include "tt_loopback.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509v3.h>

#include "auth/auth_x509.h"
#include "repl/member_tls.h"
#include "repl/raft_tls.h"

#define BIG (6u << 20)

static char *tmp;

/* ---- certificates ------------------------------------------------------------------------ */

static void
add_ext(X509 *x, X509 *issuer, int nid, const char *value)
{
	X509V3_CTX ctx;
	X509_EXTENSION *e;

	X509V3_set_ctx_nodb(&ctx);
	X509V3_set_ctx(&ctx, issuer, x, NULL, NULL, 0);
	e = X509V3_EXT_conf_nid(NULL, &ctx, nid, value);
	TT_ASSERT(e != NULL);
	X509_add_ext(x, e, -1);
	X509_EXTENSION_free(e);
}

/* A certificate for key named cn, signed by issuer (NULL: self-signed CA),
 * for the host san. */
static X509 *
make_cert(EVP_PKEY *key, const char *cn, X509 *issuer, EVP_PKEY *issuer_key, const char *san)
{
	static long serial = 1;
	X509 *x = X509_new();

	X509_set_version(x, 2);
	ASN1_INTEGER_set(X509_get_serialNumber(x), serial++);
	X509_gmtime_adj(X509_getm_notBefore(x), -60);
	X509_gmtime_adj(X509_getm_notAfter(x), 86400);
	X509_set_pubkey(x, key);
	X509_NAME_add_entry_by_txt(X509_get_subject_name(x), "O", MBSTRING_ASC, (const unsigned char *)"Tamga", -1, -1, 0);
	X509_NAME_add_entry_by_txt(X509_get_subject_name(x), "CN", MBSTRING_ASC, (const unsigned char *)cn, -1, -1, 0);
	X509_set_issuer_name(x, X509_get_subject_name(issuer != NULL ? issuer : x));
	if (issuer == NULL) {
		add_ext(x, x, NID_basic_constraints, "critical,CA:TRUE");
		add_ext(x, x, NID_key_usage, "critical,keyCertSign,cRLSign");
	} else {
		add_ext(x, issuer, NID_basic_constraints, "CA:FALSE");
		add_ext(x, issuer, NID_subject_alt_name, san);
	}
	TT_ASSERT(X509_sign(x, issuer_key != NULL ? issuer_key : key, EVP_sha256()) > 0);
	return x;
}

static char *
write_pem(const char *name, X509 *x, EVP_PKEY *key)
{
	char *path = bson_strdup_printf("%s/%s", tmp, name);
	FILE *f = fopen(path, "w");

	TT_ASSERT(f != NULL);
	PEM_write_X509(f, x);
	if (key != NULL)
		PEM_write_PrivateKey(f, key, NULL, NULL, 0, NULL, NULL);
	fclose(f);
	return path;
}

/* A CA and a member certificate it signed (for 127.0.0.1), as PEM files
 * named after tag. */
typedef struct certs {
	EVP_PKEY *ca_key, *m_key;
	X509 *ca, *m;
	char *ca_pem, *m_pem;
} certs_t;

static void
certs_make(certs_t *c, const char *tag)
{
	char name[64];

	c->ca_key = EVP_EC_gen("P-256");
	c->m_key = EVP_EC_gen("P-256");
	TT_ASSERT(c->ca_key != NULL && c->m_key != NULL);
	c->ca = make_cert(c->ca_key, "test CA", NULL, NULL, NULL);
	c->m = make_cert(c->m_key, "member", c->ca, c->ca_key, "IP:127.0.0.1");
	snprintf(name, sizeof(name), "ca%s.pem", tag);
	c->ca_pem = write_pem(name, c->ca, NULL);
	snprintf(name, sizeof(name), "member%s.pem", tag);
	c->m_pem = write_pem(name, c->m, c->m_key);
}

static void
certs_free(certs_t *c)
{
	bson_free(c->ca_pem);
	bson_free(c->m_pem);
	X509_free(c->ca);
	X509_free(c->m);
	EVP_PKEY_free(c->ca_key);
	EVP_PKEY_free(c->m_key);
}

/* ---- the loop ------------------------------------------------------------------------------- */

static struct {
	uv_loop_t loop;
	int accepted, connected, connect_failed, closed, raw_eof;
	uv_stream_t *sa, *sc, *raw;
	uint8_t *got;
	size_t have;
	uv_write_t w;
	uint8_t rbuf[65536];
} T;

static void
on_raft_closed(uv_handle_t *h)
{
	raft_free(h);
}

static void
accept_cb(struct raft_uv_transport *t, raft_id id, const char *address, uv_stream_t *stream)
{
	(void)t;
	(void)id;
	(void)address;
	T.accepted++;
	T.sa = stream;
}

static void
connect_cb(struct raft_uv_connect *req, uv_stream_t *stream, int status)
{
	(void)req;
	if (status == 0) {
		T.connected++;
		T.sc = stream;
	} else {
		T.connect_failed++;
	}
}

static void
big_alloc(uv_handle_t *h, size_t s, uv_buf_t *b)
{
	(void)h;
	(void)s;
	*b = uv_buf_init((char *)T.got + T.have, (unsigned)(BIG - T.have < 65536 ? BIG - T.have : 65536));
}

static void
big_read(uv_stream_t *s, ssize_t n, const uv_buf_t *b)
{
	(void)b;
	if (n > 0)
		T.have += (size_t)n;
	if (n < 0 || T.have == BIG)
		uv_read_stop(s);
}

static void
written(uv_write_t *w, int status)
{
	(void)w;
	TT_EQ_INT(status, 0);
}

static void
raw_alloc(uv_handle_t *h, size_t s, uv_buf_t *b)
{
	(void)h;
	(void)s;
	*b = uv_buf_init((char *)T.rbuf, sizeof(T.rbuf));
}

static void
raw_read(uv_stream_t *s, ssize_t n, const uv_buf_t *b)
{
	(void)b;
	if (n < 0) {
		T.raw_eof++;
		uv_read_stop(s);
	}
}

static void
raw_connect_cb(struct raft_uv_connect *req, uv_stream_t *stream, int status)
{
	static char junk[64];
	uv_buf_t b = uv_buf_init(junk, sizeof(junk));

	(void)req;
	TT_EQ_INT(status, 0);
	if (status != 0)
		return;
	memset(junk, 'x', sizeof(junk));
	T.raw = stream;
	uv_write(&T.w, stream, &b, 1, written);
	uv_read_start(stream, raw_alloc, raw_read);
}

static void
run_until(size_t *counter, size_t want, int ms)
{
	for (int i = 0; i < ms / 5 && *counter < want; i++) {
		uv_run(&T.loop, UV_RUN_NOWAIT);
		usleep(5 * 1000);
	}
}

static void
run_until_i(int *counter, int want, int ms)
{
	for (int i = 0; i < ms / 5 && *counter < want; i++) {
		uv_run(&T.loop, UV_RUN_NOWAIT);
		usleep(5 * 1000);
	}
}

static void
on_transport_closed(struct raft_uv_transport *t)
{
	(void)t;
	T.closed++;
}

/* BIG random bytes written on from, read on to, compared. */
static void
transfer(uv_stream_t *from, uv_stream_t *to)
{
	uint8_t *data = bson_malloc(BIG);
	uv_buf_t b = uv_buf_init((char *)data, BIG);

	TT_ASSERT(RAND_bytes(data, BIG) == 1);
	T.have = 0;
	TT_EQ_INT(uv_write(&T.w, from, &b, 1, written), 0);
	/* nobody reads for a while: the socket buffers fill, the relays'
	 * queues pass their bound and they stop reading (then resume) */
	for (int i = 0; i < 100; i++) {
		uv_run(&T.loop, UV_RUN_NOWAIT);
		usleep(2000);
	}
	TT_EQ_INT(uv_read_start(to, big_alloc, big_read), 0);
	run_until(&T.have, BIG, 30000);
	TT_EQ_INT((int)T.have, (int)BIG);
	TT_ASSERT(memcmp(T.got, data, BIG) == 0);
	/* let the write's callback run before data goes */
	for (int i = 0; i < 50; i++)
		uv_run(&T.loop, UV_RUN_NOWAIT);
	bson_free(data);
}

/* repl_member_tls_configure refuses o with 140 and a message naming what. */
static void
configure_refused(const repl_member_tls_options_t *o, const char *what)
{
	terr_t err = TERR_INIT;

	TT_EQ_INT(repl_member_tls_configure(o, &err), -1);
	TT_EQ_INT(err.code, 140);
	TT_ASSERT(err.msg != NULL && strstr(err.msg, what) != NULL);
	terr_clear(&err);
}

/* --tlsClusterPassword: an encrypted cluster key is read with its pass
 * phrase (common/tls_password.c); a wrong one or none is 140. */
static void
test_encrypted_key(void)
{
	certs_t c;
	char *enc_path = bson_strdup_printf("%s/member-enc.pem", tmp);
	repl_member_tls_options_t o;
	terr_t err = TERR_INIT;
	FILE *f;

	certs_make(&c, "3");
	f = fopen(enc_path, "w");
	TT_ASSERT(f != NULL);
	PEM_write_X509(f, c.m);
	TT_EQ_INT(PEM_write_PrivateKey(f, c.m_key, EVP_aes_256_cbc(), NULL, 0, NULL, (void *)"cl-pw"), 1);
	fclose(f);

	memset(&o, 0, sizeof(o));
	o.mode = REPL_MEMBER_TLS_REQUIRE;
	o.certificate_key_file = c.m_pem;
	o.ca_file = c.ca_pem;
	o.cluster_file = enc_path;
	o.cluster_password = "cl-pw";
	TT_EQ_INT(repl_member_tls_configure(&o, &err), 0);
	TT_ASSERT(repl_member_tls_outgoing());
	o.cluster_password = "not-it";
	configure_refused(&o, "member-enc.pem");
	o.cluster_password = NULL;
	configure_refused(&o, "member-enc.pem");
	TT_EQ_INT(repl_member_tls_configure(NULL, &err), 0);
	bson_free(enc_path);
	certs_free(&c);
}

static void
test_relay(void)
{
	EVP_PKEY *ca_key = EVP_EC_gen("P-256"), *m_key = EVP_EC_gen("P-256");
	X509 *ca, *m, *wrong;
	char *ca_pem, *m_pem, *wrong_pem, a_addr[64], b_addr[64], r_addr[64];
	repl_member_tls_options_t o;
	terr_t err = TERR_INIT;
	struct raft_uv_transport a_in, a, b_in, b, raw;
	struct raft_uv_connect req, rreq;

	TT_ASSERT(ca_key != NULL && m_key != NULL);
	ca = make_cert(ca_key, "test CA", NULL, NULL, NULL);
	m = make_cert(m_key, "member", ca, ca_key, "IP:127.0.0.1");
	wrong = make_cert(m_key, "elsewhere", ca, ca_key, "DNS:elsewhere.invalid");
	ca_pem = write_pem("ca.pem", ca, NULL);
	m_pem = write_pem("member.pem", m, m_key);
	wrong_pem = write_pem("wrong.pem", wrong, m_key);

	/* a missing file: 140 with the path */
	memset(&o, 0, sizeof(o));
	o.mode = REPL_MEMBER_TLS_REQUIRE;
	o.certificate_key_file = m_pem;
	o.ca_file = ca_pem;
	o.cluster_file = "/nonexistent/cluster.pem";
	configure_refused(&o, "/nonexistent/cluster.pem");
	o.cluster_file = NULL;
	TT_EQ_INT(repl_member_tls_configure(&o, &err), 0);
	TT_ASSERT(repl_member_tls_outgoing());

	memset(&T, 0, sizeof(T));
	T.got = bson_malloc(BIG);
	TT_EQ_INT(uv_loop_init(&T.loop), 0);
	snprintf(a_addr, sizeof(a_addr), "127.0.0.1:%d", tt_free_port());
	snprintf(b_addr, sizeof(b_addr), "127.0.0.1:%d", tt_free_port());
	snprintf(r_addr, sizeof(r_addr), "127.0.0.1:%d", tt_free_port());
	TT_EQ_INT(raft_uv_tcp_init(&a_in, &T.loop), 0);
	TT_EQ_INT(repl_raft_tls_init(&a, &a_in, &T.loop), 0);
	TT_EQ_INT(a.init(&a, 1, a_addr), 0);
	TT_EQ_INT(a.listen(&a, accept_cb), 0);
	TT_EQ_INT(raft_uv_tcp_init(&b_in, &T.loop), 0);
	TT_EQ_INT(repl_raft_tls_init(&b, &b_in, &T.loop), 0);
	TT_EQ_INT(b.init(&b, 2, b_addr), 0);
	TT_EQ_INT(raft_uv_tcp_init(&raw, &T.loop), 0);
	TT_EQ_INT(raw.init(&raw, 3, r_addr), 0);

	/* requireTLS: connected through TLS, then 6 MiB each way */
	TT_EQ_INT(b.connect(&b, &req, 1, a_addr, connect_cb), 0);
	run_until_i(&T.accepted, 1, 5000);
	run_until_i(&T.connected, 1, 5000);
	TT_EQ_INT(T.accepted, 1);
	TT_EQ_INT(T.connected, 1);
	transfer(T.sc, T.sa);
	transfer(T.sa, T.sc);
	/* libraft closing its end closes the relay: the other end sees EOF */
	uv_close((uv_handle_t *)T.sc, on_raft_closed);
	T.sc = NULL;
	T.raw_eof = 0;
	uv_read_start(T.sa, raw_alloc, raw_read);
	run_until_i(&T.raw_eof, 1, 5000);
	TT_EQ_INT(T.raw_eof, 1);
	uv_close((uv_handle_t *)T.sa, on_raft_closed);
	T.sa = NULL;

	/* clear text after libraft's preamble: closed, never handed to Raft */
	T.raw_eof = 0;
	TT_EQ_INT(raw.connect(&raw, &rreq, 3, a_addr, raw_connect_cb), 0);
	run_until_i(&T.raw_eof, 1, 3000);
	TT_EQ_INT(T.raw_eof, 1);
	TT_EQ_INT(T.accepted, 1);
	uv_close((uv_handle_t *)T.raw, on_raft_closed);

	/* allowTLS: the member connects out in clear, the listener relays it */
	o.mode = REPL_MEMBER_TLS_ALLOW;
	TT_EQ_INT(repl_member_tls_configure(&o, &err), 0);
	TT_ASSERT(!repl_member_tls_outgoing());
	TT_EQ_INT(b.connect(&b, &req, 1, a_addr, connect_cb), 0);
	run_until_i(&T.connected, 2, 5000);
	TT_EQ_INT(T.connected, 2);
	/* the listener decides on the first byte: nothing is accepted before */
	{
		static char hi[] = "hello in clear";
		uv_buf_t hb = uv_buf_init(hi, sizeof(hi));
		TT_EQ_INT(uv_write(&T.w, T.sc, &hb, 1, written), 0);
		run_until_i(&T.accepted, 2, 5000);
		TT_EQ_INT(T.accepted, 2);
	}
	uv_close((uv_handle_t *)T.sc, on_raft_closed);
	uv_close((uv_handle_t *)T.sa, on_raft_closed);

	/* a certificate of the right CA for another host: the connector's host
	 * name check refuses it, unless tlsAllowInvalidHostnames */
	o.mode = REPL_MEMBER_TLS_REQUIRE;
	o.certificate_key_file = wrong_pem;
	TT_EQ_INT(repl_member_tls_configure(&o, &err), 0);
	TT_EQ_INT(b.connect(&b, &req, 1, a_addr, connect_cb), 0);
	run_until_i(&T.connect_failed, 1, 5000);
	TT_EQ_INT(T.connect_failed, 1);
	TT_EQ_INT(T.accepted, 2);
	o.allow_invalid_hostnames = true;
	TT_EQ_INT(repl_member_tls_configure(&o, &err), 0);
	TT_EQ_INT(b.connect(&b, &req, 1, a_addr, connect_cb), 0);
	run_until_i(&T.accepted, 3, 5000);
	run_until_i(&T.connected, 3, 5000);
	TT_EQ_INT(T.accepted, 3);
	TT_EQ_INT(T.connected, 3);
	uv_close((uv_handle_t *)T.sc, on_raft_closed);
	uv_close((uv_handle_t *)T.sa, on_raft_closed);

	/* clusterAuthMode x509 (no key): a peer is taken only with a member
	 * certificate -- O/OU/DC of the reference (the server's own) */
	{
		X509 *ref = X509_dup(m);
		X509_NAME *rn = X509_NAME_new();
		char *ref_pem;

		X509_NAME_add_entry_by_txt(rn, "O", MBSTRING_ASC, (const unsigned char *)"Other", -1, -1, 0);
		X509_NAME_add_entry_by_txt(rn, "CN", MBSTRING_ASC, (const unsigned char *)"member", -1, -1, 0);
		X509_set_subject_name(ref, rn);
		/* signing again re-encodes it (else the cached DER keeps the old name) */
		TT_ASSERT(X509_sign(ref, m_key, EVP_sha256()) > 0);
		ref_pem = write_pem("ref.pem", ref, NULL);
		TT_EQ_INT(auth_x509_set_cluster_certificate(ref_pem, &err), 0);
		TT_EQ_STR(auth_x509_cluster_subject(), "CN=member,O=Other");
		auth_x509_set_cluster_certificate(NULL, &err);
		auth_cluster_mode_set(AUTH_CLUSTER_X509);
		/* the same organisation: accepted both ways */
		TT_EQ_INT(auth_x509_set_server_certificate(m_pem, &err), 0);
		TT_EQ_INT(b.connect(&b, &req, 1, a_addr, connect_cb), 0);
		run_until_i(&T.accepted, 4, 5000);
		run_until_i(&T.connected, 4, 5000);
		TT_EQ_INT(T.accepted, 4);
		TT_EQ_INT(T.connected, 4);
		uv_close((uv_handle_t *)T.sc, on_raft_closed);
		uv_close((uv_handle_t *)T.sa, on_raft_closed);
		/* another organisation: neither side hands the connection to Raft */
		TT_EQ_INT(auth_x509_set_server_certificate(ref_pem, &err), 0);
		TT_EQ_INT(b.connect(&b, &req, 1, a_addr, connect_cb), 0);
		run_until_i(&T.connect_failed, 2, 5000);
		TT_EQ_INT(T.connect_failed, 2);
		for (int i = 0; i < 40; i++) {
			uv_run(&T.loop, UV_RUN_NOWAIT);
			usleep(5 * 1000);
		}
		TT_EQ_INT(T.accepted, 4);
		/* preferTLS takes clear connectors, but not under x509 */
		TT_EQ_INT(auth_x509_set_server_certificate(m_pem, &err), 0);
		o.mode = REPL_MEMBER_TLS_PREFER;
		TT_EQ_INT(repl_member_tls_configure(&o, &err), 0);
		T.raw_eof = 0;
		TT_EQ_INT(raw.connect(&raw, &rreq, 1, a_addr, raw_connect_cb), 0);
		run_until_i(&T.raw_eof, 1, 3000);
		TT_EQ_INT(T.raw_eof, 1);
		TT_EQ_INT(T.accepted, 4);
		uv_close((uv_handle_t *)T.raw, on_raft_closed);
		auth_cluster_mode_set(AUTH_CLUSTER_UNDEFINED);
		auth_x509_set_server_certificate(NULL, &err);
		bson_free(ref_pem);
		X509_NAME_free(rn);
		X509_free(ref);
	}

	a.close(&a, on_transport_closed);
	b.close(&b, on_transport_closed);
	raw.close(&raw, on_transport_closed);
	run_until_i(&T.closed, 3, 3000);
	TT_EQ_INT(T.closed, 3);
	raft_uv_tcp_close(&a_in);
	raft_uv_tcp_close(&b_in);
	raft_uv_tcp_close(&raw);
	repl_raft_tls_close(&a);
	repl_raft_tls_close(&b);
	uv_run(&T.loop, UV_RUN_DEFAULT);
	TT_EQ_INT(uv_loop_close(&T.loop), 0);
	TT_EQ_INT(repl_member_tls_configure(NULL, &err), 0);
	bson_free(T.got);
	bson_free(ca_pem);
	bson_free(m_pem);
	bson_free(wrong_pem);
	X509_free(ca);
	X509_free(m);
	X509_free(wrong);
	EVP_PKEY_free(ca_key);
	EVP_PKEY_free(m_key);
}

static int late_calls, late_status;

static void
late_connect_cb(struct raft_uv_connect *req, uv_stream_t *stream, int status)
{
	(void)req;
	late_calls++;
	late_status = status;
	TT_ASSERT(stream == NULL);
}

static void
test_connect_outlives_timeout(void)
{
	certs_t c;
	char addr[64];
	repl_member_tls_options_t o;
	terr_t err = TERR_INIT;
	struct raft_uv_transport in, t;
	struct raft_uv_connect req;
	int lfd, fill;

	certs_make(&c, "2");
	memset(&o, 0, sizeof(o));
	o.mode = REPL_MEMBER_TLS_REQUIRE;
	o.certificate_key_file = c.m_pem;
	o.ca_file = c.ca_pem;
	TT_EQ_INT(repl_member_tls_configure(&o, &err), 0);

	/* a listener that never accepts, its queue filled */
	lfd = tt_full_listener(addr, sizeof(addr), &fill);

	memset(&T, 0, sizeof(T));
	TT_EQ_INT(uv_loop_init(&T.loop), 0);
	TT_EQ_INT(raft_uv_tcp_init(&in, &T.loop), 0);
	TT_EQ_INT(repl_raft_tls_init(&t, &in, &T.loop), 0);
	TT_EQ_INT(t.init(&t, 1, "127.0.0.1:1"), 0);
	TT_EQ_INT(t.connect(&t, &req, 2, addr, late_connect_cb), 0);

	/* the handshake's timeout: libraft hears of it once */
	for (int i = 0; i < (REPL_RAFT_TLS_TIMEOUT_MS + 500) / 10; i++) {
		uv_run(&T.loop, UV_RUN_NOWAIT);
		usleep(10 * 1000);
	}
	TT_EQ_INT(late_calls, 1);
	TT_EQ_INT(late_status, RAFT_NOCONNECTION);

	/* the queue drained: the SYN retransmitted 7 s after the first gets
	 * through and the TCP connect completes: no second callback, nothing
	 * freed read (ASan) */
	tt_drain(lfd, &T.loop, 3500);
	TT_EQ_INT(late_calls, 1);

	t.close(&t, on_transport_closed);
	run_until_i(&T.closed, 1, 3000);
	TT_EQ_INT(T.closed, 1);
	raft_uv_tcp_close(&in);
	repl_raft_tls_close(&t);
	uv_run(&T.loop, UV_RUN_DEFAULT);
	TT_EQ_INT(uv_loop_close(&T.loop), 0);
	TT_EQ_INT(repl_member_tls_configure(NULL, &err), 0);
	close(fill);
	close(lfd);
	certs_free(&c);
}

int
main(void)
{
	signal(SIGPIPE, SIG_IGN);
	tmp = tt_tmpdir("raft_tls");
	TT_RUN(test_encrypted_key);
	TT_RUN(test_relay);
	TT_RUN(test_connect_outlives_timeout);
	tt_rmdir(tmp);
	bson_free(tmp);
	return tt_finish();
}
