/*
 * test_auth.c -- SCRAM (MongoDB auth spec / RFC 7677 vectors, full
 * conversations for SCRAM-SHA-1 and SCRAM-SHA-256 against the saslStart and
 * saslContinue commands), users and roles through the command layer,
 * privilege checks (readWrite may insert but not collMod; a custom role
 * with collMod on one collection), the localhost exception, malformed and
 * replayed SASL, and many failed attempts.
 *
 * The dispatcher's call to cmd_auth_check is emulated by run() here
 * (check, then engine_run_command), so these tests do not depend on it
 * being wired.
 */
#include "tt.h"

#include <pthread.h>

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "auth/auth.h"
#include "auth/auth_private.h"
#include "commands/commands_private.h"

/* ---- helpers ----------------------------------------------------------------------- */

static engine_t *eng;
static char *dir;

static void
open_engine(bool auth)
{
	engine_options_t o;
	terr_t err = TERR_INIT;

	memset(&o, 0, sizeof(o));
	o.storage.create = true;
	o.storage.in_memory = true;
	o.auth = auth;
	o.enable_test_commands = true;   /* configureFailPoint's case below */
	dir = tt_tmpdir("auth");
	if (engine_open(dir, &o, &eng, &err) != 0) {
		fprintf(stderr, "engine_open: %s\n", err.msg);
		abort();
	}
}

static void
close_engine(void)
{
	engine_close(eng);
	tt_rmdir(dir);
	bson_free(dir);
	eng = NULL;
}

static client_t *
new_client(bool local)
{
	client_info_t info = {0};

	info.connection_id = 7;
	info.remote = local ? "127.0.0.1:5000" : "10.1.2.3:5000";
	info.is_local = local;
	return client_new(eng, &info);
}

static void
free_client(client_t *cl)
{
	auth_client_forget(cl, &cl->has_auth);
	client_free(cl);
}

/* The dispatcher with the check in front, as engine.c will have it. */
static int
run_doc(client_t *cl, const char *db, const bson_t *cmd, bson_t *reply)
{
	terr_t err = TERR_INIT;
	const cmd_def_t *def;
	cmd_def_t fake;
	bson_iter_t it;
	cmd_t c;
	int rc;

	memset(&c, 0, sizeof(c));
	c.engine = eng;
	c.client = cl;
	c.db = db;
	c.body = cmd;
	bson_iter_init(&c.first, cmd);
	bson_iter_next(&c.first);
	c.name = bson_iter_key(&c.first);
	it = c.first;
	(void)it;
	def = cmd_lookup(c.name);
	/* commands not (yet) in the command table still get their privilege
	 * check here; the dispatcher then answers 59 */
	memset(&fake, 0, sizeof(fake));
	fake.name = c.name;
	if (def == NULL)
		def = &fake;
	if (cmd_auth_check(&c, def, &err) != 0) {
		char buf[32];
		bson_init(reply);
		BSON_APPEND_DOUBLE(reply, "ok", 0.0);
		BSON_APPEND_UTF8(reply, "errmsg", err.msg);
		BSON_APPEND_INT32(reply, "code", err.code);
		BSON_APPEND_UTF8(reply, "codeName", terr_code_name(err.code, buf));
		rc = err.code;
		terr_clear(&err);
		return rc;
	}
	rc = engine_run_command(eng, cl, db, cmd, reply, &err);
	terr_clear(&err);
	return rc;
}

static int
run(client_t *cl, const char *db, const char *json, bson_t *reply)
{
	bson_t *cmd = tt_json(json);
	int rc = run_doc(cl, db, cmd, reply);

	bson_destroy(cmd);
	return rc;
}

static int
run_quiet(client_t *cl, const char *db, const char *json)
{
	bson_t reply;
	int rc = run(cl, db, json, &reply);

	bson_destroy(&reply);
	return rc;
}

static const char *
reply_str(const bson_t *reply, const char *field)
{
	bson_iter_t it;

	if (bson_iter_init_find(&it, reply, field) && BSON_ITER_HOLDS_UTF8(&it))
		return bson_iter_utf8(&it, NULL);
	return NULL;
}

static void make_admin(client_t *local);

/* ---- a SCRAM client, written from RFC 5802 ------------------------------------------- */

static const EVP_MD *
md_of(auth_mech_t m)
{
	return m == AUTH_SCRAM_SHA256 ? EVP_sha256() : EVP_sha1();
}

static void
b64(const uint8_t *d, size_t n, char *out)
{
	EVP_EncodeBlock((unsigned char *)out, d, (int)n);
}

static size_t
unb64(const char *s, uint8_t *out)
{
	size_t n = strlen(s);
	int got = EVP_DecodeBlock(out, (const unsigned char *)s, (int)n);

	if (n >= 1 && s[n - 1] == '=')
		got--;
	if (n >= 2 && s[n - 2] == '=')
		got--;
	return (size_t)got;
}

/* The SCRAM password mongod expects for a mechanism. */
static void
client_password(auth_mech_t m, const char *user, const char *pwd, char *out)
{
	if (m == AUTH_SCRAM_SHA256) {
		strcpy(out, pwd);
	} else {
		uint8_t md[16];
		unsigned int l;
		char text[256];
		int i;
		snprintf(text, sizeof(text), "%s:mongo:%s", user, pwd);
		EVP_Digest(text, strlen(text), md, &l, EVP_md5(), NULL);
		for (i = 0; i < 16; i++)
			sprintf(out + i * 2, "%02x", md[i]);
	}
}

/* From server-first, compute client-final into out and the expected server
 * signature (base64) into vsig. */
static void
client_final(auth_mech_t m, const char *user, const char *pwd, const char *cfirst_bare, const char *sfirst,
             const char *nonce_override, char *out, char *vsig)
{
	char pw[256], nonce[256] = "", salt_b64[128] = "", am[2048], without[512];
	uint8_t salt[64], salted[32], ckey[32], skey[32], stored[32], sig[32], proof[32], ssig[32];
	unsigned int l;
	size_t hl = m == AUTH_SCRAM_SHA256 ? 32 : 20, sl, i;
	int iters = 0;
	const char *p;
	char pb[64];

	sscanf(sfirst, "r=%255[^,],s=%127[^,],i=%d", nonce, salt_b64, &iters);
	(void)p;
	sl = unb64(salt_b64, salt);
	client_password(m, user, pwd, pw);
	PKCS5_PBKDF2_HMAC(pw, (int)strlen(pw), salt, (int)sl, iters, md_of(m), (int)hl, salted);
	HMAC(md_of(m), salted, (int)hl, (const uint8_t *)"Client Key", 10, ckey, &l);
	HMAC(md_of(m), salted, (int)hl, (const uint8_t *)"Server Key", 10, skey, &l);
	EVP_Digest(ckey, hl, stored, &l, md_of(m), NULL);
	snprintf(without, sizeof(without), "c=biws,r=%s", nonce_override ? nonce_override : nonce);
	snprintf(am, sizeof(am), "%s,%s,%s", cfirst_bare, sfirst, without);
	HMAC(md_of(m), stored, (int)hl, (const uint8_t *)am, strlen(am), sig, &l);
	for (i = 0; i < hl; i++)
		proof[i] = ckey[i] ^ sig[i];
	b64(proof, hl, pb);
	sprintf(out, "%s,p=%s", without, pb);
	HMAC(md_of(m), skey, (int)hl, (const uint8_t *)am, strlen(am), ssig, &l);
	b64(ssig, hl, vsig);
}

static const char *
payload_of(const bson_t *reply, char *buf, size_t len)
{
	bson_iter_t it;
	bson_subtype_t st;
	uint32_t l = 0;
	const uint8_t *d;

	buf[0] = '\0';
	if (bson_iter_init_find(&it, reply, "payload") && BSON_ITER_HOLDS_BINARY(&it)) {
		bson_iter_binary(&it, &st, &l, &d);
		if (l >= len)
			l = (uint32_t)len - 1;
		memcpy(buf, d, l);
		buf[l] = '\0';
	}
	return buf;
}

static void
append_payload(bson_t *cmd, const char *text)
{
	BSON_APPEND_BINARY(cmd, "payload", BSON_SUBTYPE_BINARY, (const uint8_t *)text, (uint32_t)strlen(text));
}

/* saslStart + saslContinue (+ the empty exchange when not skipped).
 * Returns the code of the first failing step, 0 on success. */
static int
sasl_login(client_t *cl, const char *db, auth_mech_t m, const char *user, const char *pwd, bool skip_empty,
           bool *server_sig_ok)
{
	char cfirst[300], bare[256], sfirst[512], cfinal[1024], vsig[128], buf[512];
	bson_t cmd, reply, opts;
	bson_iter_t it;
	int rc;

	snprintf(bare, sizeof(bare), "n=%s,r=fyko+d2lbbFgONRv9qkxdawL", user);
	snprintf(cfirst, sizeof(cfirst), "n,,%s", bare);
	bson_init(&cmd);
	BSON_APPEND_INT32(&cmd, "saslStart", 1);
	BSON_APPEND_UTF8(&cmd, "mechanism", auth_mech_name(m));
	append_payload(&cmd, cfirst);
	BSON_APPEND_BOOL(&cmd, "autoAuthorize", true);
	if (skip_empty) {
		BSON_APPEND_DOCUMENT_BEGIN(&cmd, "options", &opts);
		BSON_APPEND_BOOL(&opts, "skipEmptyExchange", true);
		bson_append_document_end(&cmd, &opts);
	}
	rc = run_doc(cl, db, &cmd, &reply);
	bson_destroy(&cmd);
	if (rc != 0) {
		bson_destroy(&reply);
		return rc;
	}
	TT_ASSERT(bson_iter_init_find(&it, &reply, "conversationId") && bson_iter_int32(&it) == 1);
	TT_ASSERT(bson_iter_init_find(&it, &reply, "done") && !bson_iter_bool(&it));
	snprintf(sfirst, sizeof(sfirst), "%s", payload_of(&reply, buf, sizeof(buf)));
	bson_destroy(&reply);
	TT_ASSERT(strncmp(sfirst, "r=fyko+d2lbbFgONRv9qkxdawL", 26) == 0);
	client_final(m, user, pwd, bare, sfirst, NULL, cfinal, vsig);

	bson_init(&cmd);
	BSON_APPEND_INT32(&cmd, "saslContinue", 1);
	BSON_APPEND_INT32(&cmd, "conversationId", 1);
	append_payload(&cmd, cfinal);
	rc = run_doc(cl, db, &cmd, &reply);
	bson_destroy(&cmd);
	if (rc != 0) {
		bson_destroy(&reply);
		return rc;
	}
	payload_of(&reply, buf, sizeof(buf));
	if (server_sig_ok)
		*server_sig_ok = strncmp(buf, "v=", 2) == 0 && strcmp(buf + 2, vsig) == 0;
	TT_ASSERT(bson_iter_init_find(&it, &reply, "done") && bson_iter_bool(&it) == skip_empty);
	bson_destroy(&reply);
	if (!skip_empty) {
		bson_init(&cmd);
		BSON_APPEND_INT32(&cmd, "saslContinue", 1);
		BSON_APPEND_INT32(&cmd, "conversationId", 1);
		append_payload(&cmd, "");
		rc = run_doc(cl, db, &cmd, &reply);
		bson_destroy(&cmd);
		if (rc == 0)
			TT_ASSERT(bson_iter_init_find(&it, &reply, "done") && bson_iter_bool(&it));
		bson_destroy(&reply);
	}
	return rc;
}

/* ---- SCRAM vectors ------------------------------------------------------------------ */

/* Check stored credentials against a published exchange: the client's
 * proof must verify and the server signature must match. */
static void
check_vector(auth_mech_t m, const char *pwd, const char *salt_b64, int iters, const char *auth_message,
             const char *proof_b64, const char *v_b64)
{
	terr_t err = TERR_INIT;
	bson_t creds;
	bson_iter_t it;
	uint8_t salt[64], stored[32], skey[32], proof[32], sig[32], key[32], h[32], ssig[32];
	size_t sl, hl = m == AUTH_SCRAM_SHA256 ? 32 : 20, i;
	unsigned int l;
	char vs[64];

	sl = unb64(salt_b64, salt);
	bson_init(&creds);
	TT_EQ_INT(auth_scram_make_creds(m, "user", pwd, iters, salt, sl, &creds, &err), 0);
	TT_ASSERT(bson_iter_init_find(&it, &creds, "iterationCount") && bson_iter_int32(&it) == iters);
	TT_ASSERT(bson_iter_init_find(&it, &creds, "salt") && strcmp(bson_iter_utf8(&it, NULL), salt_b64) == 0);
	bson_iter_init_find(&it, &creds, "storedKey");
	TT_EQ_INT(unb64(bson_iter_utf8(&it, NULL), stored), hl);
	bson_iter_init_find(&it, &creds, "serverKey");
	TT_EQ_INT(unb64(bson_iter_utf8(&it, NULL), skey), hl);
	TT_EQ_INT(unb64(proof_b64, proof), hl);
	HMAC(md_of(m), stored, (int)hl, (const uint8_t *)auth_message, strlen(auth_message), sig, &l);
	for (i = 0; i < hl; i++)
		key[i] = proof[i] ^ sig[i];
	EVP_Digest(key, hl, h, &l, md_of(m), NULL);
	TT_ASSERT(memcmp(h, stored, hl) == 0);
	HMAC(md_of(m), skey, (int)hl, (const uint8_t *)auth_message, strlen(auth_message), ssig, &l);
	b64(ssig, hl, vs);
	TT_EQ_STR(vs, v_b64);
	bson_destroy(&creds);
}

static void
test_scram_sha256_rfc7677_vector(void)
{
	check_vector(AUTH_SCRAM_SHA256, "pencil", "W22ZaJ0SNY7soEsUEjb6gQ==", 4096,
	    "n=user,r=rOprNGfwEbeRWgbNEkqO,"
	    "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096,"
	    "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0",
	    "dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=", "6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=");
}

/* The MongoDB authentication spec's SCRAM-SHA-1 example (password digest
 * md5("user:mongo:pencil") as the SCRAM password). */
static void
test_scram_sha1_mongodb_vector(void)
{
	check_vector(AUTH_SCRAM_SHA1, "pencil", "rQ9ZY3MntBeuP3E1TDVC4w==", 10000,
	    "n=user,r=fyko+d2lbbFgONRv9qkxdawL,"
	    "r=fyko+d2lbbFgONRv9qkxdawLHo+Vgk7qvUOKUwuWLIWg4l/9SraGMHEE,s=rQ9ZY3MntBeuP3E1TDVC4w==,i=10000,"
	    "c=biws,r=fyko+d2lbbFgONRv9qkxdawLHo+Vgk7qvUOKUwuWLIWg4l/9SraGMHEE",
	    "MC2T8BvbmWRckDw8oWl5IVghwCY=", "UMWeI25JD1yNYZRMpZ4VHvhZ9e0=");
}

static void
test_saslprep(void)
{
	terr_t err = TERR_INIT;
	char *out = NULL;

	TT_EQ_INT(auth_saslprep("pencil", &out, &err), 0);
	TT_EQ_STR(out, "pencil");
	bson_free(out);
	/* U+00AD (soft hyphen) maps to nothing, U+00A0 to a space */
	TT_EQ_INT(auth_saslprep("I\xC2\xADX", &out, &err), 0);
	TT_EQ_STR(out, "IX");
	bson_free(out);
	TT_EQ_INT(auth_saslprep("a\xC2\xA0" "b", &out, &err), 0);
	TT_EQ_STR(out, "a b");
	bson_free(out);
	TT_EQ_INT(auth_saslprep("\xC3\xBC" "ber", &out, &err), 0);
	TT_EQ_STR(out, "\xC3\xBC" "ber");
	bson_free(out);
	TT_ASSERT(auth_saslprep("a\x07" "b", &out, &err) != 0);
	TT_EQ_INT(err.code, TERR_BAD_VALUE);
	terr_clear(&err);
	TT_ASSERT(auth_saslprep("\xff\xfe", &out, &err) != 0);
	terr_clear(&err);
	TT_ASSERT(auth_saslprep("\xC3", &out, &err) != 0);
	terr_clear(&err);
	/* RFC 4013 section 3's examples, NFKC and the tables (ICU's profile) */
	{
		static const struct {
			const char *in, *out;
		} ok[] = {
			{"user", "user"},
			{"USER", "USER"},
			{"\xC2\xAA", "a"},                  /* U+00AA */
			{"\xE2\x85\xA8", "IX"},             /* U+2168 */
			{"\xE2\x85\xA3", "IV"},             /* U+2163, the password */
			{"u\xCC\x88" "ber", "\xC3\xBC" "ber"}, /* combining diaeresis composes */
			{"\xEF\xBC\xA1", "A"},              /* fullwidth A */
			{"a\xE3\x80\x80" "b", "a b"},       /* U+3000 ideographic space */
		};
		static const char *const refused[] = {
			"\x07",                              /* C.2.1 control */
			"\xD8\xA7" "1",                      /* U+0627 then a digit: bidi rule */
			"a\xEE\x80\x80",                    /* U+E000 private use */
			"\xEF\xBF\xBE",                     /* U+FFFE non-character */
		};
		for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
			TT_EQ_INT(auth_saslprep(ok[i].in, &out, &err), 0);
			TT_EQ_STR(out, ok[i].out);
			bson_free(out);
		}
		for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
			TT_ASSERT(auth_saslprep(refused[i], &out, &err) != 0);
			TT_EQ_INT(err.code, TERR_BAD_VALUE);
			TT_EQ_STR(err.msg, "Unable to normalize input string");
			terr_clear(&err);
		}
		TT_ASSERT(auth_saslprep("\xC3(", &out, &err) != 0);
		TT_EQ_STR(err.msg, "Non UTF-8 data encountered");
		terr_clear(&err);
	}
}

/* createUser / updateUser SASLprep the SCRAM-SHA-256 password: a client
 * that preps "\u2163" to "IV" (every driver does) logs in; SCRAM-SHA-1
 * hashes the password as typed (mongod's digest). */
static void
test_saslprep_login(void)
{
	client_t *local, *cl;
	bson_t reply;

	open_engine(true);
	local = new_client(true);
	make_admin(local);
	TT_EQ_INT(sasl_login(local, "admin", AUTH_SCRAM_SHA256, "root", "rootpw", true, NULL), 0);
	TT_EQ_INT(run_quiet(local, "admin", "{\"createUser\": \"roman\", \"pwd\": \"\\u2163\", \"roles\": []}"), 0);
	cl = new_client(false);
	TT_EQ_INT(sasl_login(cl, "admin", AUTH_SCRAM_SHA256, "roman", "IV", true, NULL), 0);
	free_client(cl);
	/* a client that does not prep sends other bytes: refused */
	cl = new_client(false);
	TT_EQ_INT(sasl_login(cl, "admin", AUTH_SCRAM_SHA256, "roman", "\xE2\x85\xA3", true, NULL), 18);
	free_client(cl);
	cl = new_client(false);
	TT_EQ_INT(sasl_login(cl, "admin", AUTH_SCRAM_SHA1, "roman", "\xE2\x85\xA3", true, NULL), 0);
	free_client(cl);
	/* updateUser preps the new password too */
	TT_EQ_INT(run_quiet(local, "admin", "{\"updateUser\": \"roman\", \"pwd\": \"\\u2168\\u00ad\"}"), 0);
	cl = new_client(false);
	TT_EQ_INT(sasl_login(cl, "admin", AUTH_SCRAM_SHA256, "roman", "IX", true, NULL), 0);
	free_client(cl);
	/* a password SASLprep refuses: mongod's error, nothing stored */
	TT_EQ_INT(run(local, "admin", "{\"createUser\": \"bad\", \"pwd\": \"a\\u0007b\", \"roles\": []}", &reply), 2);
	TT_EQ_STR(reply_str(&reply, "errmsg"), "Unable to normalize input string");
	bson_destroy(&reply);
	TT_EQ_INT(run(local, "admin", "{\"usersInfo\": \"bad\"}", &reply), 0);
	{
		bson_iter_t it, el;
		TT_ASSERT(bson_iter_init_find(&it, &reply, "users") && bson_iter_recurse(&it, &el));
		TT_ASSERT(!bson_iter_next(&el));
	}
	bson_destroy(&reply);
	/* SCRAM-SHA-1 alone does not prep (mongod): the same password is fine */
	TT_EQ_INT(run_quiet(local, "admin", "{\"createUser\": \"sha1only\", \"pwd\": \"a\\u0007b\", \"roles\": [], "
	    "\"mechanisms\": [\"SCRAM-SHA-1\"]}"), 0);
	free_client(local);
	close_engine();
}

/* A user with SCRAM-SHA-1 credentials only: a speculative SCRAM-SHA-256 in
 * hello is left out of the reply (the driver then uses the mechanism
 * saslSupportedMechs names), and saslStart with SCRAM-SHA-256 fails at once
 * with 18 (mongod logs MechanismUnavailable as the reason). */
static void
test_speculative_missing_mechanism(void)
{
	client_t *local, *cl;
	cmd_t c;
	bson_t *hello, reply;
	bson_iter_t it;

	open_engine(true);
	local = new_client(true);
	make_admin(local);
	TT_EQ_INT(sasl_login(local, "admin", AUTH_SCRAM_SHA256, "root", "rootpw", true, NULL), 0);
	TT_EQ_INT(run_quiet(local, "admin", "{\"createUser\": \"old\", \"pwd\": \"pw\", \"roles\": [], "
	    "\"mechanisms\": [\"SCRAM-SHA-1\"]}"), 0);
	cl = new_client(false);
	/* "n,,n=old,r=fyko+d2lbbFgONRv9qkxdawL" */
	hello = tt_json("{\"hello\": 1, \"saslSupportedMechs\": \"admin.old\", \"speculativeAuthenticate\": "
	    "{\"saslStart\": 1, \"mechanism\": \"SCRAM-SHA-256\", \"payload\": {\"$binary\": {\"base64\": "
	    "\"biwsbj1vbGQscj1meWtvK2QybGJiRmdPTlJ2OXFreGRhd0w=\", \"subType\": \"00\"}}, \"db\": \"admin\"}}");
	memset(&c, 0, sizeof(c));
	c.engine = eng;
	c.client = cl;
	c.db = "admin";
	c.body = hello;
	bson_init(&reply);
	cmd_hello_auth_append(&c, &reply);
	TT_EQ_JSON(&reply, "{ \"saslSupportedMechs\" : [ \"SCRAM-SHA-1\" ] }");
	TT_ASSERT(!bson_iter_init_find(&it, &reply, "speculativeAuthenticate"));
	bson_destroy(&reply);
	/* the same with SCRAM-SHA-1 is embedded */
	bson_destroy(hello);
	hello = tt_json("{\"hello\": 1, \"speculativeAuthenticate\": "
	    "{\"saslStart\": 1, \"mechanism\": \"SCRAM-SHA-1\", \"payload\": {\"$binary\": {\"base64\": "
	    "\"biwsbj1vbGQscj1meWtvK2QybGJiRmdPTlJ2OXFreGRhd0w=\", \"subType\": \"00\"}}, \"db\": \"admin\"}}");
	c.body = hello;
	bson_init(&reply);
	cmd_hello_auth_append(&c, &reply);
	TT_ASSERT(bson_iter_init_find(&it, &reply, "speculativeAuthenticate"));
	bson_destroy(&reply);
	bson_destroy(hello);
	free_client(cl);
	cl = new_client(false);
	TT_EQ_INT(sasl_login(cl, "admin", AUTH_SCRAM_SHA256, "old", "pw", true, NULL), 18);
	TT_EQ_INT(sasl_login(cl, "admin", AUTH_SCRAM_SHA1, "old", "pw", true, NULL), 0);
	free_client(cl);
	free_client(local);
	close_engine();
}

static int
lookup_fixed(void *ctx, const char *user, bson_t *creds)
{
	if (strcmp(user, "user") != 0)
		return -1;
	bson_copy_to(ctx, creds);
	return 0;
}

/* Malformed client messages through the SCRAM machine: all fail, none crash. */
static void
test_scram_malformed(void)
{
	static const char *const bad_first[] = {
		"", "n", "n,", "x,,n=user,r=abcdefgh", "p=tls-unique,,n=user,r=abcdefgh", "n,,",
		"n,,n=,r=abcdefgh", "n,,n=user", "n,,n=user,r=", "n,,n=user,r=abc", "n,,m=ext,n=user,r=abcdefgh",
		"n,a=other,n=user,r=abcdefgh", "n,,n=us=er,r=abcdefgh", "n,,r=abcdefgh,n=user", "n,zz,n=user,r=abcdefgh",
		"n,,n=user,r=abc\x01" "defg",
	};
	static const char *const bad_final[] = {
		"", "c=biws", "c=biws,r=x,p=", "p=abc", "c=biws,p=AAAA", "c=,r=NONCE,p=AAAA", "c=biws,r=wrongnonce,p=AAAA",
		"c=biws,r=NONCE,p=not base64!", "c=biws,r=NONCE,p=AAAA", "c=biws,r=NONCE", "c=biws,r=NONCE,p=====",
	};
	terr_t err = TERR_INIT;
	bson_t creds;
	size_t i;

	bson_init(&creds);
	auth_scram_make_creds(AUTH_SCRAM_SHA256, "user", "pencil", 4096, NULL, 0, &creds, &err);
	for (i = 0; i < sizeof(bad_first) / sizeof(bad_first[0]); i++) {
		auth_scram_t *s = auth_scram_new(AUTH_SCRAM_SHA256, true);
		char *out = NULL;
		size_t ol;
		bool done;
		TT_ASSERT(auth_scram_step(s, (const uint8_t *)bad_first[i], strlen(bad_first[i]), lookup_fixed, &creds,
		    &out, &ol, &done, &err) != 0);
		TT_ASSERT(out == NULL);
		terr_clear(&err);
		/* a failed conversation stays failed */
		TT_ASSERT(auth_scram_step(s, (const uint8_t *)"n,,n=user,r=abcdefgh", 20, lookup_fixed, &creds,
		    &out, &ol, &done, &err) != 0);
		terr_clear(&err);
		auth_scram_free(s);
	}
	for (i = 0; i < sizeof(bad_final) / sizeof(bad_final[0]); i++) {
		auth_scram_t *s = auth_scram_new(AUTH_SCRAM_SHA256, true);
		char *out = NULL, nonce[128] = "", msg[512];
		const char *at;
		size_t ol;
		bool done;
		TT_EQ_INT(auth_scram_step(s, (const uint8_t *)"n,,n=user,r=abcdefgh", 20, lookup_fixed, &creds,
		    &out, &ol, &done, &err), 0);
		sscanf(out, "r=%127[^,]", nonce);
		bson_free(out);
		out = NULL;
		at = strstr(bad_final[i], "NONCE");
		if (at != NULL)
			snprintf(msg, sizeof(msg), "%.*s%s%s", (int)(at - bad_final[i]), bad_final[i], nonce, at + 5);
		else
			snprintf(msg, sizeof(msg), "%s", bad_final[i]);
		TT_ASSERT(auth_scram_step(s, (const uint8_t *)msg, strlen(msg), lookup_fixed, &creds, &out, &ol,
		    &done, &err) != 0);
		TT_ASSERT(!auth_scram_succeeded(s));
		terr_clear(&err);
		auth_scram_free(s);
	}
	bson_destroy(&creds);
}

/* ---- through the commands ---------------------------------------------------------------- */

static void
make_admin(client_t *local)
{
	bson_t reply;

	TT_EQ_INT(run(local, "admin", "{\"createUser\": \"root\", \"pwd\": \"rootpw\", \"roles\": [\"root\"]}", &reply), 0);
	bson_destroy(&reply);
}

static void
test_localhost_exception(void)
{
	client_t *local, *remote;
	bson_t reply;

	open_engine(true);
	local = new_client(true);
	remote = new_client(false);
	/* no users: remote clients get nothing, local ones only the first user in admin */
	TT_EQ_INT(run(remote, "admin", "{\"createUser\": \"x\", \"pwd\": \"p\", \"roles\": []}", &reply), 13);
	bson_destroy(&reply);
	TT_EQ_INT(run(local, "test", "{\"find\": \"c\"}", &reply), 13);
	TT_ASSERT(strncmp(reply_str(&reply, "errmsg"), "not authorized on test to execute command { find: \"c\"", 50) == 0);
	bson_destroy(&reply);
	TT_EQ_INT(run(local, "test", "{\"createUser\": \"x\", \"pwd\": \"p\", \"roles\": []}", &reply), 13);
	bson_destroy(&reply);
	/* granting a role of another database is beyond the exception */
	TT_EQ_INT(run_quiet(local, "admin", "{\"createUser\": \"x\", \"pwd\": \"p\", \"roles\": "
	    "[{\"role\": \"readWrite\", \"db\": \"bookstore\"}]}"), 13);
	TT_EQ_INT(run_quiet(local, "admin", "{\"createRole\": \"r\", \"privileges\": [], \"roles\": []}"), 13);
	make_admin(local);
	/* the exception is gone with the first user */
	TT_EQ_INT(run(local, "admin", "{\"createUser\": \"y\", \"pwd\": \"p\", \"roles\": []}", &reply), 13);
	TT_EQ_STR(reply_str(&reply, "errmsg"), "Command createUser requires authentication");
	TT_EQ_STR(reply_str(&reply, "codeName"), "Unauthorized");
	bson_destroy(&reply);
	TT_EQ_INT(run(local, "admin", "{\"ping\": 1}", &reply), 0);
	bson_destroy(&reply);
	free_client(local);
	free_client(remote);
	close_engine();
}

static void
test_sasl_both_mechanisms(void)
{
	client_t *local, *cl;
	bool sig = false;
	bson_t reply;
	bson_iter_t it, a;

	open_engine(true);
	local = new_client(true);
	make_admin(local);
	cl = new_client(false);
	TT_EQ_INT(sasl_login(cl, "admin", AUTH_SCRAM_SHA256, "root", "rootpw", true, &sig), 0);
	TT_ASSERT(sig);
	TT_EQ_INT(run(cl, "admin", "{\"connectionStatus\": 1}", &reply), 0);
	bson_destroy(&reply);
	TT_EQ_INT(run_quiet(cl, "admin", "{\"logout\": 1}"), 0);
	sig = false;
	TT_EQ_INT(sasl_login(cl, "admin", AUTH_SCRAM_SHA1, "root", "rootpw", false, &sig), 0);
	TT_ASSERT(sig);
	/* authenticated: it can look itself up */
	TT_EQ_INT(run(cl, "admin", "{\"usersInfo\": \"root\"}", &reply), 0);
	TT_ASSERT(bson_iter_init_find(&it, &reply, "users") && bson_iter_recurse(&it, &a) && bson_iter_next(&a));
	{
		bson_iter_t u;
		bson_iter_recurse(&a, &u);
		TT_ASSERT(!bson_iter_find(&u, "credentials"));
		bson_iter_recurse(&a, &u);
		TT_ASSERT(bson_iter_find(&u, "mechanisms"));
		bson_iter_recurse(&a, &u);
		TT_ASSERT(bson_iter_find(&u, "userId") && BSON_ITER_HOLDS_BINARY(&u));
	}
	bson_destroy(&reply);
	TT_EQ_INT(run(cl, "admin", "{\"usersInfo\": \"root\", \"showCredentials\": true}", &reply), 0);
	{
		char *j = bson_as_relaxed_extended_json(&reply, NULL);
		TT_ASSERT(strstr(j, "\"SCRAM-SHA-256\" : { \"iterationCount\" : 15000") != NULL);
		TT_ASSERT(strstr(j, "\"SCRAM-SHA-1\" : { \"iterationCount\" : 10000") != NULL);
		TT_ASSERT(strstr(j, "rootpw") == NULL);
		bson_free(j);
	}
	bson_destroy(&reply);
	free_client(cl);
	free_client(local);
	close_engine();
}

static void
test_sasl_failures(void)
{
	client_t *local, *cl;
	bson_t reply;
	int i;

	open_engine(true);
	local = new_client(true);
	make_admin(local);
	cl = new_client(false);
	/* wrong password and unknown user: the same code and message */
	TT_EQ_INT(sasl_login(cl, "admin", AUTH_SCRAM_SHA256, "root", "wrong", true, NULL), 18);
	TT_EQ_INT(sasl_login(cl, "admin", AUTH_SCRAM_SHA256, "nobody", "wrong", true, NULL), 18);
	TT_EQ_INT(sasl_login(cl, "admin", AUTH_SCRAM_SHA1, "nobody", "wrong", false, NULL), 18);
	TT_EQ_INT(sasl_login(cl, "test", AUTH_SCRAM_SHA256, "root", "rootpw", true, NULL), 18);
	TT_EQ_INT(run(cl, "admin", "{\"saslStart\": 1, \"mechanism\": \"SCRAM-SHA-256\", "
	    "\"payload\": {\"$binary\": {\"base64\": \"eHl6\", \"subType\": \"00\"}}}", &reply), 18);
	TT_EQ_STR(reply_str(&reply, "errmsg"), "Authentication failed.");
	TT_EQ_STR(reply_str(&reply, "codeName"), "AuthenticationFailed");
	bson_destroy(&reply);
	/* unknown mechanism */
	TT_EQ_INT(run(cl, "admin", "{\"saslStart\": 1, \"mechanism\": \"PLAIN\", "
	    "\"payload\": {\"$binary\": {\"base64\": \"\", \"subType\": \"00\"}}}", &reply), 334);
	TT_EQ_STR(reply_str(&reply, "errmsg"), "Received authentication for mechanism PLAIN which is not enabled");
	bson_destroy(&reply);
	/* missing fields, wrong types */
	TT_EQ_INT(run_quiet(cl, "admin", "{\"saslStart\": 1, \"payload\": \"\"}"), 40414);
	TT_EQ_INT(run_quiet(cl, "admin", "{\"saslStart\": 1, \"mechanism\": 5, \"payload\": \"\"}"), 14);
	TT_EQ_INT(run_quiet(cl, "admin", "{\"saslStart\": 1, \"mechanism\": \"SCRAM-SHA-1\", \"payload\": 5}"), 14);
	TT_EQ_INT(run_quiet(cl, "admin", "{\"saslStart\": 1, \"mechanism\": \"SCRAM-SHA-1\", \"payload\": \"!!\"}"), 2);
	/* saslContinue without a conversation, and after one ended */
	TT_EQ_INT(run(cl, "admin", "{\"saslContinue\": 1, \"conversationId\": 1, \"payload\": \"\"}", &reply), 17);
	TT_EQ_STR(reply_str(&reply, "errmsg"), "No SASL session state found");
	bson_destroy(&reply);
	TT_EQ_INT(sasl_login(cl, "admin", AUTH_SCRAM_SHA256, "root", "rootpw", true, NULL), 0);
	TT_EQ_INT(run_quiet(cl, "admin", "{\"saslContinue\": 1, \"conversationId\": 1, \"payload\": \"\"}"), 17);
	/* a wrong conversation id */
	TT_EQ_INT(run_quiet(cl, "admin", "{\"saslStart\": 1, \"mechanism\": \"SCRAM-SHA-256\", "
	    "\"payload\": {\"$binary\": {\"base64\": \"biwsbj1yb290LHI9YWJjZGVmZ2hpag==\", \"subType\": \"00\"}}}"), 0);
	TT_EQ_INT(run(cl, "admin", "{\"saslContinue\": 1, \"conversationId\": 2, \"payload\": \"\"}", &reply), 17);
	TT_EQ_STR(reply_str(&reply, "errmsg"), "sasl: Mismatched conversation id");
	bson_destroy(&reply);
	/* many failed attempts: each refused the same way, the server keeps answering */
	for (i = 0; i < 100; i++)
		TT_EQ_INT(sasl_login(cl, "admin", AUTH_SCRAM_SHA256, i % 2 ? "root" : "ghost", "bad", true, NULL), 18);
	TT_EQ_INT(sasl_login(cl, "admin", AUTH_SCRAM_SHA256, "root", "rootpw", true, NULL), 0);
	/* one user per connection: the same again is fine, another is not */
	TT_EQ_INT(sasl_login(cl, "admin", AUTH_SCRAM_SHA1, "root", "rootpw", true, NULL), 0);
	TT_EQ_INT(run_quiet(cl, "admin", "{\"createUser\": \"other\", \"pwd\": \"o\", \"roles\": []}"), 0);
	TT_EQ_INT(sasl_login(cl, "admin", AUTH_SCRAM_SHA256, "other", "o", true, NULL), 5626701);
	TT_EQ_INT(run_quiet(cl, "admin", "{\"createUser\": \"other\", \"pwd\": \"o\", \"roles\": []}"), 51003);
	free_client(cl);
	free_client(local);
	close_engine();
}

/* The seed's split: readWrite inserts and updates but cannot collMod; a
 * custom role may collMod one collection only. */
static void
test_readwrite_vs_collmod(void)
{
	client_t *local, *admin, *app, *anon;
	bson_t reply;
	const char *msg;

	open_engine(true);
	local = new_client(true);
	make_admin(local);
	admin = new_client(false);
	TT_EQ_INT(sasl_login(admin, "admin", AUTH_SCRAM_SHA256, "root", "rootpw", true, NULL), 0);
	TT_EQ_INT(run_quiet(admin, "bookstore", "{\"createUser\": \"app\", \"pwd\": \"apppw\", \"roles\": [\"readWrite\"]}"), 0);
	TT_EQ_INT(run_quiet(admin, "bookstore", "{\"create\": \"reviews\"}"), 0);
	TT_EQ_INT(run_quiet(admin, "bookstore", "{\"create\": \"books\"}"), 0);
	/* duplicate user */
	TT_EQ_INT(run(admin, "bookstore", "{\"createUser\": \"app\", \"pwd\": \"x\", \"roles\": []}", &reply), 51003);
	TT_EQ_STR(reply_str(&reply, "errmsg"), "User \"app@bookstore\" already exists");
	bson_destroy(&reply);
	/* unknown role */
	TT_EQ_INT(run(admin, "bookstore", "{\"createUser\": \"z\", \"pwd\": \"x\", \"roles\": [\"readAnyDatabase\"]}", &reply), 31);
	TT_EQ_STR(reply_str(&reply, "errmsg"), "Could not find role: readAnyDatabase@bookstore");
	bson_destroy(&reply);

	app = new_client(false);
	TT_EQ_INT(sasl_login(app, "bookstore", AUTH_SCRAM_SHA256, "app", "apppw", true, NULL), 0);
	TT_EQ_INT(run_quiet(app, "bookstore", "{\"insert\": \"reviews\", \"documents\": [{\"_id\": 1, \"rating\": 5}]}"), 0);
	TT_EQ_INT(run_quiet(app, "bookstore", "{\"update\": \"reviews\", \"updates\": [{\"q\": {\"_id\": 1}, \"u\": {\"$set\": {\"rating\": 4}}}]}"), 0);
	TT_EQ_INT(run_quiet(app, "bookstore", "{\"find\": \"reviews\"}"), 0);
	TT_EQ_INT(run(app, "bookstore", "{\"collMod\": \"reviews\", \"validator\": {\"rating\": {\"$gte\": 1}}, "
	    "\"lsid\": {\"id\": {\"$binary\": {\"base64\": \"AAECAwQFBgcICQoLDA0ODw==\", \"subType\": \"04\"}}}, "
	    "\"$db\": \"bookstore\"}", &reply), 13);
	msg = reply_str(&reply, "errmsg");
	TT_EQ_STR(msg, "not authorized on bookstore to execute command { collMod: \"reviews\", validator: "
	    "{ rating: { $gte: 1 } }, lsid: { id: UUID(\"00010203-0405-0607-0809-0a0b0c0d0e0f\") }, $db: \"bookstore\" }");
	bson_destroy(&reply);
	/* bypassDocumentValidation needs its action */
	TT_EQ_INT(run_quiet(app, "bookstore", "{\"insert\": \"reviews\", \"documents\": [{\"_id\": 2}], "
	    "\"bypassDocumentValidation\": true}"), 13);
	/* another database, the cluster, user management */
	TT_EQ_INT(run_quiet(app, "other", "{\"find\": \"c\"}"), 13);
	TT_EQ_INT(run_quiet(app, "admin", "{\"serverStatus\": 1}"), 13);
	TT_EQ_INT(run_quiet(app, "bookstore", "{\"createUser\": \"evil\", \"pwd\": \"x\", \"roles\": [\"dbOwner\"]}"), 13);
	TT_EQ_INT(run_quiet(app, "admin", "{\"find\": \"system.users\"}"), 13);

	/* a custom role: collMod on bookstore.reviews only */
	TT_EQ_INT(run(admin, "bookstore", "{\"createRole\": \"validatorAdmin\", \"privileges\": [{\"resource\": "
	    "{\"db\": \"bookstore\", \"collection\": \"reviews\"}, \"actions\": [\"collMod\"]}], \"roles\": []}", &reply), 0);
	bson_destroy(&reply);
	TT_EQ_INT(run_quiet(admin, "bookstore", "{\"grantRolesToUser\": \"app\", \"roles\": [\"validatorAdmin\"]}"), 0);
	TT_EQ_INT(run_quiet(app, "bookstore", "{\"collMod\": \"reviews\", \"validator\": {\"rating\": {\"$gte\": 1}}}"), 0);
	TT_EQ_INT(run_quiet(app, "bookstore", "{\"collMod\": \"books\", \"validator\": {\"rating\": {\"$gte\": 1}}}"), 13);
	/* connectionStatus shows the user and its roles */
	TT_EQ_INT(run(app, "bookstore", "{\"connectionStatus\": 1}", &reply), 0);
	bson_destroy(&reply);
	/* revoke: the change applies to the logged-in client at once */
	TT_EQ_INT(run_quiet(admin, "bookstore", "{\"revokeRolesFromUser\": \"app\", \"roles\": [\"validatorAdmin\"]}"), 0);
	TT_EQ_INT(run_quiet(app, "bookstore", "{\"collMod\": \"reviews\", \"validator\": {}}"), 13);
	/* privileges added to the role later, through inheritance */
	TT_EQ_INT(run_quiet(admin, "bookstore", "{\"createRole\": \"outer\", \"privileges\": [], \"roles\": [\"validatorAdmin\"]}"), 0);
	TT_EQ_INT(run_quiet(admin, "bookstore", "{\"grantRolesToUser\": \"app\", \"roles\": [\"outer\"]}"), 0);
	TT_EQ_INT(run_quiet(app, "bookstore", "{\"collMod\": \"reviews\", \"validator\": {}}"), 0);
	/* a cycle is refused */
	TT_EQ_INT(run_quiet(admin, "bookstore", "{\"grantRolesToRole\": \"validatorAdmin\", \"roles\": [\"outer\"]}"), 5);
	/* dropping the inner role removes it from outer */
	TT_EQ_INT(run_quiet(admin, "bookstore", "{\"dropRole\": \"validatorAdmin\"}"), 0);
	TT_EQ_INT(run_quiet(app, "bookstore", "{\"collMod\": \"reviews\", \"validator\": {}}"), 13);
	TT_EQ_INT(run(admin, "bookstore", "{\"rolesInfo\": \"outer\", \"showPrivileges\": true}", &reply), 0);
	{
		char *j = bson_as_relaxed_extended_json(&reply, NULL);
		TT_ASSERT(strstr(j, "validatorAdmin") == NULL);
		TT_ASSERT(strstr(j, "\"isBuiltin\" : false") != NULL);
		bson_free(j);
	}
	bson_destroy(&reply);

	/* argument-dependent checks: a command that passes the check but is not
	 * in the command table answers 59, one that fails it 13 */
	{
		int rc_bw = run_quiet(app, "admin", "{\"bulkWrite\": 1, \"ops\": [{\"insert\": 0, \"document\": {}}, "
		    "{\"update\": 1, \"filter\": {}, \"updateMods\": {}}], \"nsInfo\": [{\"ns\": \"bookstore.reviews\"}, "
		    "{\"ns\": \"bookstore.books\"}]}");
		TT_ASSERT(rc_bw != 13);
		TT_EQ_INT(run_quiet(app, "admin", "{\"bulkWrite\": 1, \"ops\": [{\"insert\": 0, \"document\": {}}], "
		    "\"nsInfo\": [{\"ns\": \"other.c\"}]}"), 13);
		TT_EQ_INT(run_quiet(app, "admin", "{\"bulkWrite\": 1, \"ops\": [{\"insert\": 3, \"document\": {}}], "
		    "\"nsInfo\": [{\"ns\": \"bookstore.c\"}]}"), 13);
		TT_ASSERT(run_quiet(app, "bookstore", "{\"mapReduce\": \"reviews\", \"map\": \"\", \"reduce\": \"\", "
		    "\"out\": {\"inline\": 1}}") != 13);
		TT_EQ_INT(run_quiet(app, "bookstore", "{\"mapReduce\": \"reviews\", \"map\": \"\", \"reduce\": \"\", "
		    "\"out\": {\"replace\": \"x\", \"db\": \"other\"}}"), 13);
		TT_ASSERT(run_quiet(app, "bookstore", "{\"aggregate\": \"reviews\", \"pipeline\": [{\"$lookup\": "
		    "{\"from\": \"books\", \"as\": \"b\", \"localField\": \"x\", \"foreignField\": \"y\"}}], \"cursor\": {}}") != 13);
		TT_EQ_INT(run_quiet(app, "bookstore", "{\"aggregate\": \"reviews\", \"pipeline\": [{\"$unionWith\": "
		    "{\"coll\": \"c\", \"pipeline\": [{\"$lookup\": {\"from\": {\"db\": \"other\", \"coll\": \"x\"}, "
		    "\"as\": \"b\", \"pipeline\": []}}]}}], \"cursor\": {}}"), 13);
		TT_EQ_INT(run_quiet(app, "bookstore", "{\"aggregate\": \"reviews\", \"pipeline\": [{\"$out\": "
		    "{\"db\": \"other\", \"coll\": \"x\"}}], \"cursor\": {}}"), 13);
		TT_ASSERT(run_quiet(app, "bookstore", "{\"aggregate\": \"reviews\", \"pipeline\": [{\"$merge\": "
		    "{\"into\": \"archive\"}}], \"cursor\": {}}") != 13);
		TT_EQ_INT(run_quiet(app, "bookstore", "{\"explain\": {\"collMod\": \"reviews\"}}"), 13);
		TT_ASSERT(run_quiet(app, "bookstore", "{\"explain\": {\"find\": \"reviews\"}}") != 13);
		TT_EQ_INT(run_quiet(app, "bookstore", "{\"findAndModify\": \"reviews\", \"query\": {}, \"update\": {}, "
		    "\"bypassDocumentValidation\": true}"), 13);
		TT_EQ_INT(run_quiet(app, "bookstore", "{\"renameCollection\": \"bookstore.reviews\", \"to\": \"other.r\"}"), 13);
		TT_EQ_INT(run_quiet(app, "bookstore", "{\"listCollections\": 1, \"nameOnly\": true}"), 0);
		TT_EQ_INT(run_quiet(app, "other", "{\"listCollections\": 1, \"nameOnly\": true, \"authorizedCollections\": true}"), 13);
		/* any authenticated user reaches it; a standalone server has no transaction */
		TT_EQ_INT(run_quiet(app, "admin", "{\"commitTransaction\": 1}"), 20);
		TT_EQ_INT(run_quiet(app, "bookstore", "{\"noSuchCommand\": 1}"), 13);
		/* applyOps: the applyOps action on the cluster first (mongod's
		 * OplogApplicationChecks: dbAdminAnyDatabase, restore, root), which
		 * readWrite lacks ... */
		TT_EQ_INT(run(app, "bookstore", "{\"applyOps\": [{\"op\": \"i\", \"ns\": \"bookstore.reviews\", "
		    "\"o\": {\"_id\": 51}}]}", &reply), 13);
		TT_EQ_STR(reply_str(&reply, "errmsg"), "Unauthorized");
		bson_destroy(&reply);
		/* ... then each entry needs what it does */
		TT_EQ_INT(run_quiet(admin, "bookstore", "{\"grantRolesToUser\": \"app\", \"roles\": "
		    "[{\"role\": \"dbAdminAnyDatabase\", \"db\": \"admin\"}]}"), 0);
		TT_EQ_INT(run_quiet(app, "bookstore", "{\"applyOps\": [{\"op\": \"i\", \"ns\": \"bookstore.reviews\", "
		    "\"o\": {\"_id\": 50}}, {\"op\": \"u\", \"ns\": \"bookstore.reviews\", \"o2\": {\"_id\": 50}, "
		    "\"o\": {\"$set\": {\"r\": 1}}}, {\"op\": \"d\", \"ns\": \"bookstore.reviews\", \"o\": {\"_id\": 50}}], "
		    "\"preCondition\": [{\"ns\": \"other.c\", \"q\": {}, \"res\": {}}]}"), 0);
		TT_EQ_INT(run(app, "bookstore", "{\"applyOps\": [{\"op\": \"i\", \"ns\": \"other.c\", \"o\": {}}]}", &reply), 13);
		TT_EQ_STR(reply_str(&reply, "errmsg"), "not authorized for insert on other.c");
		bson_destroy(&reply);
		TT_EQ_INT(run(app, "bookstore", "{\"applyOps\": [{\"op\": \"d\", \"ns\": \"other.c\", \"o\": {}}]}", &reply), 13);
		TT_EQ_STR(reply_str(&reply, "errmsg"), "not authorized for remove on other.c");
		bson_destroy(&reply);
		/* a no-op needs appendOplogNote, an empty batch root, a UUID useUUID */
		TT_EQ_INT(run(app, "bookstore", "{\"applyOps\": [{\"op\": \"n\", \"ns\": \"\", \"o\": {}}]}", &reply), 13);
		TT_EQ_STR(reply_str(&reply, "errmsg"), "Unauthorized");
		bson_destroy(&reply);
		TT_EQ_INT(run_quiet(app, "bookstore", "{\"applyOps\": []}"), 13);
		TT_EQ_INT(run_quiet(app, "bookstore", "{\"applyOps\": [{\"op\": \"i\", \"ns\": \"bookstore.reviews\", "
		    "\"ui\": {\"$binary\": {\"base64\": \"AAECAwQFBgcICQoLDA0ODw==\", \"subType\": \"04\"}}, \"o\": {}}]}"), 13);
		/* a command entry: what the command needs on its database (a
		 * drop: dbAdminAnyDatabase's dropCollection on every database) */
		TT_ASSERT(run_quiet(app, "bookstore", "{\"applyOps\": [{\"op\": \"c\", \"ns\": \"other.$cmd\", "
		    "\"o\": {\"drop\": \"c\"}}]}") != 13);
		TT_EQ_INT(run_quiet(admin, "bookstore", "{\"revokeRolesFromUser\": \"app\", \"roles\": "
		    "[{\"role\": \"dbAdminAnyDatabase\", \"db\": \"admin\"}]}"), 0);
		/* an empty batch wants every privilege (mongod's universal ones:
		 * __system's), which not even root holds */
		TT_EQ_INT(run_quiet(admin, "bookstore", "{\"applyOps\": []}"), 13);
	}

	/* unauthenticated */
	anon = new_client(false);
	TT_EQ_INT(run(anon, "bookstore", "{\"insert\": \"reviews\", \"documents\": [{}]}", &reply), 13);
	TT_EQ_STR(reply_str(&reply, "errmsg"), "Command insert requires authentication");
	bson_destroy(&reply);
	TT_EQ_INT(run_quiet(anon, "admin", "{\"hello\": 1}"), 0);
	TT_EQ_INT(run_quiet(anon, "admin", "{\"ping\": 1}"), 0);
	/* mongod's configureFailPoint needs neither authentication nor a
	 * privilege (it exists only when test commands are enabled at startup) */
	TT_EQ_INT(run_quiet(anon, "admin", "{\"configureFailPoint\": \"failCommand\", \"mode\": \"off\"}"), 0);

	/* dropped user: its client loses everything */
	TT_EQ_INT(run_quiet(admin, "bookstore", "{\"dropUser\": \"app\"}"), 0);
	TT_EQ_INT(run_quiet(app, "bookstore", "{\"find\": \"reviews\"}"), 13);
	TT_EQ_INT(run(admin, "bookstore", "{\"dropUser\": \"app\"}", &reply), 11);
	TT_EQ_STR(reply_str(&reply, "errmsg"), "User 'app@bookstore' not found");
	bson_destroy(&reply);

	free_client(anon);
	free_client(app);
	free_client(admin);
	free_client(local);
	close_engine();
}

static void
test_user_crud(void)
{
	client_t *cl;
	bson_t reply;
	bson_iter_t it;

	/* auth off: the commands work without logging in */
	open_engine(false);
	cl = new_client(false);
	TT_EQ_INT(run_quiet(cl, "db1", "{\"createUser\": \"a\", \"pwd\": \"pa\", \"roles\": [{\"role\": \"read\", \"db\": \"db1\"}], "
	    "\"customData\": {\"team\": 1}}"), 0);
	TT_EQ_INT(run_quiet(cl, "db1", "{\"createUser\": \"b\", \"pwd\": \"pb\", \"roles\": [], \"mechanisms\": [\"SCRAM-SHA-256\"]}"), 0);
	TT_EQ_INT(run_quiet(cl, "db2", "{\"createUser\": \"a\", \"pwd\": \"pa\", \"roles\": []}"), 0);
	TT_EQ_INT(run(cl, "db1", "{\"createUser\": \"c\", \"roles\": []}", &reply), 2);
	bson_destroy(&reply);
	TT_EQ_INT(run_quiet(cl, "db1", "{\"createUser\": \"c\", \"pwd\": \"\", \"roles\": []}"), 2);
	TT_EQ_INT(run_quiet(cl, "db1", "{\"createUser\": \"c\", \"pwd\": \"x\"}"), 40414);
	TT_EQ_INT(run_quiet(cl, "db1", "{\"createUser\": \"c\", \"pwd\": \"x\", \"roles\": [], \"bogus\": 1}"), 40415);
	TT_EQ_INT(run_quiet(cl, "db1", "{\"createUser\": \"c\", \"pwd\": \"x\", \"roles\": [], \"mechanisms\": [\"MD5\"]}"), 2);
	TT_EQ_INT(run_quiet(cl, "db1", "{\"createUser\": \"c\", \"pwd\": \"x\", \"roles\": [5]}"), 2);

	TT_EQ_INT(run(cl, "db1", "{\"usersInfo\": 1}", &reply), 0);
	{
		char *j = bson_as_relaxed_extended_json(&reply, NULL);
		TT_ASSERT(strstr(j, "\"user\" : \"a\", \"db\" : \"db1\", \"customData\" : { \"team\" : 1 }, "
		    "\"roles\" : [ { \"role\" : \"read\", \"db\" : \"db1\" } ], \"mechanisms\" : [ \"SCRAM-SHA-1\", \"SCRAM-SHA-256\" ]") != NULL);
		TT_ASSERT(strstr(j, "\"user\" : \"b\"") != NULL);
		TT_ASSERT(strstr(j, "\"mechanisms\" : [ \"SCRAM-SHA-256\" ]") != NULL);
		TT_ASSERT(strstr(j, "credentials") == NULL);
		TT_ASSERT(strstr(j, "db2") == NULL);
		bson_free(j);
	}
	bson_destroy(&reply);
	TT_EQ_INT(run(cl, "db1", "{\"usersInfo\": {\"forAllDBs\": true}}", &reply), 0);
	{
		char *j = bson_as_relaxed_extended_json(&reply, NULL);
		TT_ASSERT(strstr(j, "\"_id\" : \"db2.a\"") != NULL);
		bson_free(j);
	}
	bson_destroy(&reply);
	TT_EQ_INT(run(cl, "db1", "{\"usersInfo\": {\"user\": \"a\", \"db\": \"db1\"}, \"showPrivileges\": true}", &reply), 0);
	{
		char *j = bson_as_relaxed_extended_json(&reply, NULL);
		TT_ASSERT(strstr(j, "\"inheritedRoles\"") != NULL);
		TT_ASSERT(strstr(j, "\"inheritedPrivileges\"") != NULL);
		TT_ASSERT(strstr(j, "\"find\"") != NULL);
		bson_free(j);
	}
	bson_destroy(&reply);
	TT_EQ_INT(run(cl, "db1", "{\"usersInfo\": \"a\", \"showCustomData\": false}", &reply), 0);
	{
		char *j = bson_as_relaxed_extended_json(&reply, NULL);
		TT_ASSERT(strstr(j, "customData") == NULL);
		bson_free(j);
	}
	bson_destroy(&reply);
	TT_EQ_INT(run(cl, "db1", "{\"usersInfo\": \"nobody\"}", &reply), 0);
	TT_EQ_JSON(&reply, "{ \"users\" : [  ], \"ok\" : 1.0 }");
	bson_destroy(&reply);

	/* updateUser: password change keeps mechanisms; roles replace */
	TT_EQ_INT(run_quiet(cl, "db1", "{\"updateUser\": \"b\", \"pwd\": \"newpb\"}"), 0);
	TT_EQ_INT(run_quiet(cl, "db1", "{\"updateUser\": \"b\", \"roles\": [\"readWrite\"]}"), 0);
	TT_EQ_INT(run_quiet(cl, "db1", "{\"updateUser\": \"b\"}"), 2);
	TT_EQ_INT(run(cl, "db1", "{\"updateUser\": \"zz\", \"pwd\": \"x\"}", &reply), 11);
	TT_EQ_STR(reply_str(&reply, "errmsg"), "Could not find user \"zz\" for db \"db1\"");
	bson_destroy(&reply);
	TT_EQ_INT(run(cl, "db1", "{\"usersInfo\": \"b\"}", &reply), 0);
	{
		char *j = bson_as_relaxed_extended_json(&reply, NULL);
		TT_ASSERT(strstr(j, "\"roles\" : [ { \"role\" : \"readWrite\", \"db\" : \"db1\" } ], \"mechanisms\" : [ \"SCRAM-SHA-256\" ]") != NULL);
		bson_free(j);
	}
	bson_destroy(&reply);
	TT_EQ_INT(sasl_login(cl, "db1", AUTH_SCRAM_SHA256, "b", "newpb", true, NULL), 0);
	TT_EQ_INT(sasl_login(cl, "db1", AUTH_SCRAM_SHA256, "b", "pb", true, NULL), 18);
	TT_EQ_INT(sasl_login(cl, "db1", AUTH_SCRAM_SHA1, "b", "newpb", true, NULL), 18);

	TT_EQ_INT(run(cl, "db1", "{\"dropAllUsersFromDatabase\": 1}", &reply), 0);
	TT_ASSERT(bson_iter_init_find(&it, &reply, "n") && bson_iter_int32(&it) == 2);
	bson_destroy(&reply);
	TT_EQ_INT(run(cl, "db2", "{\"usersInfo\": \"a\"}", &reply), 0);
	{
		char *j = bson_as_relaxed_extended_json(&reply, NULL);
		TT_ASSERT(strstr(j, "\"_id\" : \"db2.a\"") != NULL);
		bson_free(j);
	}
	bson_destroy(&reply);

	/* roles */
	TT_EQ_INT(run_quiet(cl, "db1", "{\"createRole\": \"read\", \"privileges\": [], \"roles\": []}"), 2);
	TT_EQ_INT(run_quiet(cl, "db1", "{\"createRole\": \"r1\", \"privileges\": [{\"resource\": {\"db\": \"db2\", "
	    "\"collection\": \"\"}, \"actions\": [\"find\"]}], \"roles\": []}"), 2);
	TT_EQ_INT(run_quiet(cl, "db1", "{\"createRole\": \"r1\", \"privileges\": [{\"resource\": {\"db\": \"db1\", "
	    "\"collection\": \"\"}, \"actions\": [\"fly\"]}], \"roles\": []}"), 9);
	TT_EQ_INT(run_quiet(cl, "db1", "{\"createRole\": \"r1\", \"privileges\": [{\"resource\": {\"db\": \"db1\", "
	    "\"collection\": \"\"}, \"actions\": [\"find\", \"insert\"]}], \"roles\": [\"read\"]}"), 0);
	TT_EQ_INT(run(cl, "db1", "{\"createRole\": \"r1\", \"privileges\": [], \"roles\": []}", &reply), 51002);
	TT_EQ_STR(reply_str(&reply, "errmsg"), "Role \"r1@db1\" already exists");
	bson_destroy(&reply);
	TT_EQ_INT(run_quiet(cl, "db1", "{\"revokePrivilegesFromRole\": \"r1\", \"privileges\": [{\"resource\": "
	    "{\"db\": \"db1\", \"collection\": \"\"}, \"actions\": [\"insert\"]}]}"), 0);
	TT_EQ_INT(run_quiet(cl, "db1", "{\"grantPrivilegesToRole\": \"r1\", \"privileges\": [{\"resource\": "
	    "{\"db\": \"db1\", \"collection\": \"c\"}, \"actions\": [\"remove\"]}]}"), 0);
	TT_EQ_INT(run(cl, "db1", "{\"rolesInfo\": 1, \"showPrivileges\": true}", &reply), 0);
	{
		char *j = bson_as_relaxed_extended_json(&reply, NULL);
		TT_ASSERT(strstr(j, "\"privileges\" : [ { \"resource\" : { \"db\" : \"db1\", \"collection\" : \"\" }, "
		    "\"actions\" : [ \"find\" ] }, { \"resource\" : { \"db\" : \"db1\", \"collection\" : \"c\" }, "
		    "\"actions\" : [ \"remove\" ] } ]") != NULL);
		TT_ASSERT(strstr(j, "\"inheritedRoles\" : [ { \"role\" : \"read\", \"db\" : \"db1\" } ]") != NULL);
		bson_free(j);
	}
	bson_destroy(&reply);
	TT_EQ_INT(run(cl, "db1", "{\"rolesInfo\": \"readWrite\"}", &reply), 0);
	TT_EQ_JSON(&reply, "{ \"roles\" : [ { \"role\" : \"readWrite\", \"db\" : \"db1\", \"roles\" : [  ], "
	    "\"isBuiltin\" : true, \"inheritedRoles\" : [  ] } ], \"ok\" : 1.0 }");
	bson_destroy(&reply);
	TT_EQ_INT(run_quiet(cl, "db1", "{\"updateRole\": \"r1\", \"roles\": []}"), 0);
	TT_EQ_INT(run_quiet(cl, "db1", "{\"updateRole\": \"nope\", \"roles\": []}"), 31);
	TT_EQ_INT(run(cl, "db1", "{\"dropAllRolesFromDatabase\": 1}", &reply), 0);
	TT_ASSERT(bson_iter_init_find(&it, &reply, "n") && bson_iter_int32(&it) == 1);
	bson_destroy(&reply);
	TT_EQ_INT(run_quiet(cl, "db1", "{\"dropRole\": \"r1\"}"), 31);
	free_client(cl);
	close_engine();
}

static void
test_hello_speculative(void)
{
	client_t *local, *cl;
	cmd_t c;
	bson_t *hello, reply, spec;
	bson_iter_t it;
	char buf[256];

	open_engine(true);
	local = new_client(true);
	make_admin(local);
	cl = new_client(false);
	hello = tt_json("{\"hello\": 1, \"saslSupportedMechs\": \"admin.root\", \"speculativeAuthenticate\": "
	    "{\"saslStart\": 1, \"mechanism\": \"SCRAM-SHA-256\", \"payload\": {\"$binary\": {\"base64\": "
	    "\"biwsbj1yb290LHI9ZnlrbytkMmxiYkZnT05Sdjlxa3hkYXdM\", \"subType\": \"00\"}}, \"db\": \"admin\", "
	    "\"options\": {\"skipEmptyExchange\": true}}}");
	memset(&c, 0, sizeof(c));
	c.engine = eng;
	c.client = cl;
	c.db = "admin";
	c.body = hello;
	bson_init(&reply);
	cmd_hello_auth_append(&c, &reply);
	TT_ASSERT(bson_iter_init_find(&it, &reply, "saslSupportedMechs"));
	TT_ASSERT(bson_iter_init_find(&it, &reply, "speculativeAuthenticate") && BSON_ITER_HOLDS_DOCUMENT(&it));
	{
		const uint8_t *d;
		uint32_t l;
		bson_iter_document(&it, &l, &d);
		bson_init_static(&spec, d, l);
		payload_of(&spec, buf, sizeof(buf));
		TT_ASSERT(strncmp(buf, "r=fyko+d2lbbFgONRv9qkxdawL", 26) == 0);
	}
	{
		char cfinal[1024], vsig[128];
		bson_t cmd, r2;
		bson_iter_t d;
		client_final(AUTH_SCRAM_SHA256, "root", "rootpw", "n=root,r=fyko+d2lbbFgONRv9qkxdawL", buf, NULL, cfinal, vsig);
		bson_init(&cmd);
		BSON_APPEND_INT32(&cmd, "saslContinue", 1);
		BSON_APPEND_INT32(&cmd, "conversationId", 1);
		append_payload(&cmd, cfinal);
		TT_EQ_INT(run_doc(cl, "admin", &cmd, &r2), 0);
		TT_ASSERT(bson_iter_init_find(&d, &r2, "done") && bson_iter_bool(&d));
		bson_destroy(&r2);
		bson_destroy(&cmd);
	}
	bson_destroy(&reply);
	bson_destroy(hello);
	/* an unknown user gets the default mechanisms too */
	hello = tt_json("{\"hello\": 1, \"saslSupportedMechs\": \"admin.ghost\"}");
	c.body = hello;
	bson_init(&reply);
	cmd_hello_auth_append(&c, &reply);
	TT_EQ_JSON(&reply, "{ \"saslSupportedMechs\" : [ \"SCRAM-SHA-1\", \"SCRAM-SHA-256\" ] }");
	bson_destroy(&reply);
	bson_destroy(hello);
	TT_EQ_INT(run_quiet(cl, "admin", "{\"serverStatus\": 1}"), 0);
	free_client(cl);
	free_client(local);
	close_engine();
}

/* Built-in roles: the action table knows every action they name; what
 * they allow and refuse. */
static void
test_builtin_roles(void)
{
	auth_privset_t ps;
	int find = auth_action_index("find"), insert = auth_action_index("insert");
	int collmod = auth_action_index("collMod"), listdbs = auth_action_index("listDatabases");

	TT_EQ_INT(auth_builtin_roles_check(), 0);
	TT_ASSERT(!auth_builtin_role_exists("readAnyDatabase", "test"));
	TT_ASSERT(auth_builtin_role_exists("readAnyDatabase", "admin"));
	TT_ASSERT(auth_builtin_role_exists("readWrite", "test"));
	TT_ASSERT(!auth_builtin_role_exists("readwrite", "test"));

	auth_privset_init(&ps);
	auth_builtin_role_privs("readWrite", "shop", &ps);
	TT_ASSERT(auth_privset_allows_ns(&ps, "shop", "orders", insert));
	TT_ASSERT(!auth_privset_allows_ns(&ps, "shop", "orders", collmod));
	TT_ASSERT(!auth_privset_allows_ns(&ps, "other", "orders", find));
	TT_ASSERT(!auth_privset_allows_ns(&ps, "shop", "system.users", find));
	TT_ASSERT(auth_privset_allows_ns(&ps, "shop", "system.js", find));
	TT_ASSERT(!auth_privset_allows_cluster(&ps, listdbs));
	auth_privset_destroy(&ps);

	auth_privset_init(&ps);
	auth_builtin_role_privs("dbAdmin", "shop", &ps);
	TT_ASSERT(auth_privset_allows_ns(&ps, "shop", "orders", collmod));
	TT_ASSERT(!auth_privset_allows_ns(&ps, "shop", "orders", find));
	TT_ASSERT(auth_privset_allows_ns(&ps, "shop", "system.profile", find));
	auth_privset_destroy(&ps);

	auth_privset_init(&ps);
	auth_builtin_role_privs("readAnyDatabase", "admin", &ps);
	TT_ASSERT(auth_privset_allows_ns(&ps, "any", "thing", find));
	TT_ASSERT(!auth_privset_allows_ns(&ps, "any", "thing", insert));
	TT_ASSERT(!auth_privset_allows_ns(&ps, "admin", "system.users", find));
	TT_ASSERT(auth_privset_allows_cluster(&ps, listdbs));
	auth_privset_destroy(&ps);

	/* root is the union of its sub-roles, as in builtin_roles.yml */
	{
		auth_rolelist_t direct, all;
		int e;
		auth_rolelist_init(&direct);
		auth_rolelist_init(&all);
		auth_privset_init(&ps);
		auth_rolelist_add(&direct, "root", "admin");
		open_engine(false);
		{
			terr_t err = TERR_INIT;
			storage_session_t *s = storage_session_pool_get(engine_storage(eng), &err);
			e = auth_roles_resolve(engine_storage(eng), s, &direct, &all, &ps, &err);
			storage_session_pool_put(engine_storage(eng), s);
		}
		TT_EQ_INT(e, 0);
		TT_ASSERT(auth_rolelist_has(&all, "readWriteAnyDatabase", "admin"));
		TT_ASSERT(auth_rolelist_has(&all, "readAnyDatabase", "admin"));
		TT_ASSERT(auth_rolelist_has(&all, "read", "config"));
		TT_ASSERT(auth_privset_allows_ns(&ps, "admin", "system.users", insert));
		TT_ASSERT(auth_privset_allows_ns(&ps, "shop", "orders", collmod));
		TT_ASSERT(auth_privset_allows_cluster(&ps, auth_action_index("shutdown")));
		TT_ASSERT(auth_privset_allows_cluster(&ps, listdbs));
		TT_ASSERT(auth_privset_allows_db(&ps, "shop", auth_action_index("dropDatabase")));
		TT_ASSERT(auth_privset_allows_db(&ps, "shop", auth_action_index("createUser")));
		/* but not everything: admin.system.roles is written only by the role commands */
		TT_ASSERT(!auth_privset_allows_ns(&ps, "admin", "system.roles", insert));
		auth_privset_destroy(&ps);
		auth_rolelist_destroy(&direct);
		auth_rolelist_destroy(&all);
		close_engine();
	}
}

/* Every command in the command table has a privilege row (a missing one
 * is refused under --auth; this says which, without failing, since other
 * layers add commands). */
static void
test_every_command_has_privileges(void)
{
	const cmd_def_t *t;
	int n, i, missing = 0;

	t = cmd_table(&n);
	for (i = 0; i < n; i++) {
		if (!auth_command_known(t[i].name)) {
			fprintf(stderr, "note: command %s has no privilege row in auth_check.c (refused under --auth)\n",
			    t[i].name);
			missing++;
		}
	}
	TT_ASSERT(n > 0);
	(void)missing;
}

/* Several clients logging in, working and being refused at once, while
 * an admin changes roles underneath them. */
typedef struct thr {
	int id;
	int ok_inserts, refused;
	int login_rc;
} thr_t;

static void *
thread_main(void *arg)
{
	thr_t *t = arg;
	client_t *cl = new_client(false);
	char cmd[256];
	int i;

	t->login_rc = sasl_login(cl, "bookstore", t->id % 2 ? AUTH_SCRAM_SHA1 : AUTH_SCRAM_SHA256, "app", "apppw",
	    t->id % 3 != 0, NULL);
	for (i = 0; i < 20; i++) {
		snprintf(cmd, sizeof(cmd), "{\"insert\": \"t%d\", \"documents\": [{\"i\": %d}]}", t->id, i);
		if (run_quiet(cl, "bookstore", cmd) == 0)
			t->ok_inserts++;
		if (run_quiet(cl, "bookstore", "{\"collMod\": \"reviews\"}") == 13)
			t->refused++;
	}
	free_client(cl);
	return NULL;
}

static void
test_threads(void)
{
	client_t *local, *admin;
	pthread_t th[6];
	thr_t t[6];
	int i;

	open_engine(true);
	local = new_client(true);
	make_admin(local);
	admin = new_client(false);
	TT_EQ_INT(sasl_login(admin, "admin", AUTH_SCRAM_SHA256, "root", "rootpw", true, NULL), 0);
	TT_EQ_INT(run_quiet(admin, "bookstore", "{\"createUser\": \"app\", \"pwd\": \"apppw\", \"roles\": [\"readWrite\"]}"), 0);
	TT_EQ_INT(run_quiet(admin, "bookstore", "{\"create\": \"reviews\"}"), 0);
	for (i = 0; i < 6; i++) {
		memset(&t[i], 0, sizeof(t[i]));
		t[i].id = i;
		pthread_create(&th[i], NULL, thread_main, &t[i]);
	}
	/* churn the role graph meanwhile: every client must re-resolve */
	for (i = 0; i < 10; i++) {
		TT_EQ_INT(run_quiet(admin, "bookstore", "{\"createRole\": \"tmp\", \"privileges\": [], \"roles\": []}"), 0);
		TT_EQ_INT(run_quiet(admin, "bookstore", "{\"dropRole\": \"tmp\"}"), 0);
	}
	for (i = 0; i < 6; i++) {
		pthread_join(th[i], NULL);
		TT_EQ_INT(t[i].login_rc, 0);
		TT_EQ_INT(t[i].ok_inserts, 20);
		TT_EQ_INT(t[i].refused, 20);
	}
	free_client(admin);
	free_client(local);
	close_engine();
}

static void
test_render(void)
{
	bson_t *d = tt_json("{\"a\": 1, \"b\": 1.5, \"c\": 2.0, \"s\": \"x\\\"y\", \"t\": true, \"n\": null, "
	    "\"arr\": [1, {\"k\": []}], \"e\": {}, \"l\": {\"$numberLong\": \"5\"}, "
	    "\"o\": {\"$oid\": \"0123456789abcdef01234567\"}, \"dt\": {\"$date\": {\"$numberLong\": \"1000\"}}, "
	    "\"ts\": {\"$timestamp\": {\"t\": 3, \"i\": 4}}}");
	char *s = auth_render_bson(d);

	TT_EQ_STR(s, "{ a: 1, b: 1.5, c: 2.0, s: \"x\\\"y\", t: true, n: null, arr: [ 1, { k: [] } ], e: {}, l: 5, "
	    "o: ObjectId('0123456789abcdef01234567'), dt: new Date(1000), ts: Timestamp(3, 4) }");
	bson_free(s);
	bson_destroy(d);
}

int
main(void)
{
	TT_RUN(test_scram_sha256_rfc7677_vector);
	TT_RUN(test_scram_sha1_mongodb_vector);
	TT_RUN(test_saslprep);
	TT_RUN(test_saslprep_login);
	TT_RUN(test_speculative_missing_mechanism);
	TT_RUN(test_scram_malformed);
	TT_RUN(test_render);
	TT_RUN(test_builtin_roles);
	TT_RUN(test_every_command_has_privileges);
	TT_RUN(test_localhost_exception);
	TT_RUN(test_sasl_both_mechanisms);
	TT_RUN(test_sasl_failures);
	TT_RUN(test_readwrite_vs_collmod);
	TT_RUN(test_user_crud);
	TT_RUN(test_hello_speculative);
	TT_RUN(test_threads);
	return tt_finish();
}
