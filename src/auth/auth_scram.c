/*
 * auth_scram.c -- SCRAM-SHA-1 and SCRAM-SHA-256 (RFC 5802, RFC 7677) on
 * OpenSSL: stored credentials (PBKDF2, HMAC, H), the server side of one
 * conversation, SASLprep for SCRAM-SHA-256 passwords (ICU's RFC 4013
 * profile, as mongod), base64.
 *
 * Not here: where credentials live (auth_users.c) or the saslStart and
 * saslContinue commands (cmd_auth.c).  Nothing in this file logs, and no
 * password or key leaves it except as the stored (salted, hashed) form.
 */
#include "auth/auth.h"

#include <pthread.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <unicode/usprep.h>
#include <unicode/ustring.h>

#define SCRAM_MAX_HASH 32

struct auth_scram {
	auth_mech_t mech;
	bool skip_empty;
	int step;                  /* messages received so far */
	bool succeeded;
	bool failed;
	char *user;
	char *nonce;               /* client nonce + server nonce */
	char *auth_message;        /* client-first-bare,server-first[,client-final-without-proof] */
	bool fake;                 /* unknown user: run the same work, then fail */
	uint8_t stored_key[SCRAM_MAX_HASH];
	uint8_t server_key[SCRAM_MAX_HASH];
	/* a second key's credentials under the same salt (the `__system`
	 * user during a key rollover, auth/auth_member.h): a proof made with
	 * either succeeds */
	bool has_alt;
	uint8_t alt_stored_key[SCRAM_MAX_HASH];
	uint8_t alt_server_key[SCRAM_MAX_HASH];
	size_t key_len;
};

const char *
auth_mech_name(auth_mech_t m)
{
	return m == AUTH_SCRAM_SHA256 ? "SCRAM-SHA-256" : "SCRAM-SHA-1";
}

int
auth_mech_parse(const char *name, auth_mech_t *out)
{
	if (strcmp(name, "SCRAM-SHA-1") == 0)
		*out = AUTH_SCRAM_SHA1;
	else if (strcmp(name, "SCRAM-SHA-256") == 0)
		*out = AUTH_SCRAM_SHA256;
	else
		return -1;
	return 0;
}

int
auth_mech_default_iterations(auth_mech_t m)
{
	return m == AUTH_SCRAM_SHA256 ? 15000 : 10000;
}

static const EVP_MD *
mech_md(auth_mech_t m)
{
	return m == AUTH_SCRAM_SHA256 ? EVP_sha256() : EVP_sha1();
}

static size_t
mech_len(auth_mech_t m)
{
	return m == AUTH_SCRAM_SHA256 ? 32 : 20;
}

/* ---- base64 ---------------------------------------------------------------- */

char *
auth_b64_encode(const uint8_t *data, size_t len)
{
	char *out = bson_malloc(4 * ((len + 2) / 3) + 1);

	EVP_EncodeBlock((unsigned char *)out, data, (int)len);
	return out;
}

int
auth_b64_decode(const char *text, size_t n, uint8_t **out, size_t *out_len)
{
	uint8_t *buf;
	size_t i, pad = 0;
	int got;

	*out = NULL;
	*out_len = 0;
	if (n % 4 != 0 || n > (1u << 26))
		return -1;
	for (i = 0; i < n; i++) {
		char ch = text[i];
		bool ok = (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') ||
		    ch == '+' || ch == '/';
		if (ch == '=' && i >= n - 2) {
			pad++;
			continue;
		}
		if (!ok || pad > 0)
			return -1;
	}
	buf = bson_malloc(n / 4 * 3 + 1);
	got = n ? EVP_DecodeBlock(buf, (const unsigned char *)text, (int)n) : 0;
	if (got < 0 || (size_t)got < pad) {
		bson_free(buf);
		return -1;
	}
	*out = buf;
	*out_len = (size_t)got - pad;
	return 0;
}

/* ---- SASLprep -------------------------------------------------------------- */

/*
 * ICU's RFC 4013 profile (usprep), as mongod's icuSaslPrep: mapping (B.1
 * to nothing, C.1.2 spaces to U+0020), NFKC, the prohibited tables, the
 * bidirectional rule, unassigned code points refused.  mongod's messages:
 * 2 "Non UTF-8 data encountered", 2 "Unable to normalize input string".
 */
static int
stringprep(const char *in, size_t inlen, UStringPrepProfileType type, char **out, size_t *outlen, terr_t *err)
{
	UErrorCode e = U_ZERO_ERROR;
	UStringPrepProfile *prof = NULL;
	UChar *u = NULL, *p = NULL;
	int32_t ulen = 0, plen = 0, olen = 0;
	char *o = NULL;
	int ret = 0;

	*out = NULL;
	if (outlen != NULL)
		*outlen = 0;
	if (inlen == 0) {
		*out = bson_strdup("");
		return 0;
	}
	/* UTF-16 needs at most one unit per byte; ICU counts in int32_t, and
	 * NFKC may expand a unit up to 18 times: keep every size in range */
	if (inlen > (size_t)INT32_MAX / 32)
		return terr_set(err, TERR_BAD_VALUE, "Unable to normalize input string");
	u_strFromUTF8(NULL, 0, &ulen, in, (int32_t)inlen, &e);
	if (e == U_INVALID_CHAR_FOUND)
		return terr_set(err, TERR_BAD_VALUE, "Non UTF-8 data encountered");
	if (e != U_BUFFER_OVERFLOW_ERROR)
		return terr_set(err, 50687, "Error preflighting UTF-8 conversion: %s", u_errorName(e));
	e = U_ZERO_ERROR;
	u = bson_malloc(sizeof(UChar) * ((size_t)ulen + 1));
	u_strFromUTF8(u, ulen + 1, &ulen, in, (int32_t)inlen, &e);
	if (U_FAILURE(e))
		ERR(terr_set(err, 50688, "Error converting UTF-8 string: %s", u_errorName(e)));
	prof = usprep_openByType(type, &e);
	if (U_FAILURE(e))
		ERR(terr_set(err, 50691, "Unable to open unicode string prep profile: %s", u_errorName(e)));
	plen = usprep_prepare(prof, u, ulen, NULL, 0, USPREP_DEFAULT, NULL, &e);
	if (e == U_INVALID_CHAR_FOUND || e == U_STRINGPREP_PROHIBITED_ERROR || e == U_STRINGPREP_UNASSIGNED_ERROR ||
	    e == U_STRINGPREP_CHECK_BIDI_ERROR)
		ERR(terr_set(err, TERR_BAD_VALUE, "Unable to normalize input string"));
	if (e != U_BUFFER_OVERFLOW_ERROR && U_FAILURE(e))
		ERR(terr_set(err, 50692, "Error preflighting normalization: %s", u_errorName(e)));
	e = U_ZERO_ERROR;
	p = bson_malloc(sizeof(UChar) * ((size_t)plen + 1));
	plen = usprep_prepare(prof, u, ulen, p, plen + 1, USPREP_DEFAULT, NULL, &e);
	if (U_FAILURE(e))
		ERR(terr_set(err, 50693, "Failed normalizing string: %s", u_errorName(e)));
	u_strToUTF8(NULL, 0, &olen, p, plen, &e);
	if (e != U_BUFFER_OVERFLOW_ERROR && U_FAILURE(e))
		ERR(terr_set(err, 50689, "Error preflighting UTF-8 conversion: %s", u_errorName(e)));
	e = U_ZERO_ERROR;
	o = bson_malloc((size_t)olen + 1);
	u_strToUTF8(o, olen + 1, &olen, p, plen, &e);
	if (U_FAILURE(e)) {
		bson_free(o);
		ERR(terr_set(err, 50690, "Error converting string to UTF-8: %s", u_errorName(e)));
	}
	o[olen] = '\0';
	*out = o;
	if (outlen != NULL)
		*outlen = (size_t)olen;
err:
	if (prof != NULL)
		usprep_close(prof);
	if (u != NULL) {
		OPENSSL_cleanse(u, sizeof(UChar) * (size_t)ulen);
		bson_free(u);
	}
	if (p != NULL) {
		OPENSSL_cleanse(p, sizeof(UChar) * (size_t)plen);
		bson_free(p);
	}
	return ret;
}

int
auth_saslprep(const char *in, char **out, terr_t *err)
{
	return stringprep(in, strlen(in), USPREP_RFC4013_SASLPREP, out, NULL, err);
}

int
auth_x509_dnprep(const unsigned char *in, size_t n, char **out, size_t *outlen, terr_t *err)
{
	return stringprep((const char *)in, n, USPREP_RFC4518_LDAP, out, outlen, err);
}

/* ---- key derivation --------------------------------------------------------- */

static void
hmac(auth_mech_t m, const uint8_t *key, size_t klen, const void *data, size_t dlen, uint8_t *out)
{
	unsigned int len = 0;

	HMAC(mech_md(m), key, (int)klen, data, dlen, out, &len);
}

static void
hash(auth_mech_t m, const uint8_t *data, size_t len, uint8_t *out)
{
	unsigned int olen = 0;

	EVP_Digest(data, len, out, &olen, mech_md(m), NULL);
}

/* The string SCRAM hashes for a mechanism (SHA-1: mongod's digest). */
static int
scram_password(auth_mech_t m, const char *user, const char *pwd, char **out, terr_t *err)
{
	if (m == AUTH_SCRAM_SHA256)
		return auth_saslprep(pwd, out, err);
	{
		uint8_t md[16];
		unsigned int len = 0;
		char *text = bson_strdup_printf("%s:mongo:%s", user, pwd);
		char *hex = bson_malloc(33);
		int i;

		EVP_Digest(text, strlen(text), md, &len, EVP_md5(), NULL);
		OPENSSL_cleanse(text, strlen(text));
		bson_free(text);
		for (i = 0; i < 16; i++)
			snprintf(hex + i * 2, 3, "%02x", md[i]);
		*out = hex;
	}
	return 0;
}

int
auth_scram_make_creds(auth_mech_t m, const char *user, const char *pwd, int iterations,
                      const uint8_t *salt, size_t salt_len, bson_t *out, terr_t *err)
{
	uint8_t salted[SCRAM_MAX_HASH], ckey[SCRAM_MAX_HASH], skey[SCRAM_MAX_HASH], stored[SCRAM_MAX_HASH];
	uint8_t rsalt[28];
	size_t hl = mech_len(m);
	char *pw = NULL, *b;

	if (iterations <= 0)
		iterations = auth_mech_default_iterations(m);
	if (salt == NULL) {
		salt_len = hl - 4;
		if (RAND_bytes(rsalt, (int)salt_len) != 1)
			return terr_set(err, TERR_INTERNAL_ERROR, "could not generate a random salt");
		salt = rsalt;
	}
	RET(scram_password(m, user, pwd, &pw, err));
	if (PKCS5_PBKDF2_HMAC(pw, (int)strlen(pw), salt, (int)salt_len, iterations, mech_md(m), (int)hl, salted) != 1) {
		OPENSSL_cleanse(pw, strlen(pw));
		bson_free(pw);
		return terr_set(err, TERR_INTERNAL_ERROR, "PBKDF2 failed");
	}
	OPENSSL_cleanse(pw, strlen(pw));
	bson_free(pw);
	hmac(m, salted, hl, "Client Key", 10, ckey);
	hmac(m, salted, hl, "Server Key", 10, skey);
	hash(m, ckey, hl, stored);
	BSON_APPEND_INT32(out, "iterationCount", iterations);
	b = auth_b64_encode(salt, salt_len);
	BSON_APPEND_UTF8(out, "salt", b);
	bson_free(b);
	b = auth_b64_encode(stored, hl);
	BSON_APPEND_UTF8(out, "storedKey", b);
	bson_free(b);
	b = auth_b64_encode(skey, hl);
	BSON_APPEND_UTF8(out, "serverKey", b);
	bson_free(b);
	OPENSSL_cleanse(salted, sizeof(salted));
	OPENSSL_cleanse(ckey, sizeof(ckey));
	return 0;
}

/* ---- the conversation --------------------------------------------------------- */

auth_scram_t *
auth_scram_new(auth_mech_t m, bool skip_empty)
{
	auth_scram_t *s = bson_malloc0(sizeof(*s));

	s->mech = m;
	s->skip_empty = skip_empty;
	s->key_len = mech_len(m);
	return s;
}

void
auth_scram_free(auth_scram_t *s)
{
	if (s == NULL)
		return;
	bson_free(s->user);
	bson_free(s->nonce);
	bson_free(s->auth_message);
	OPENSSL_cleanse(s, sizeof(*s));
	bson_free(s);
}

const char *
auth_scram_user(const auth_scram_t *s)
{
	return s->user;
}

auth_mech_t
auth_scram_mech(const auth_scram_t *s)
{
	return s->mech;
}

bool
auth_scram_succeeded(const auth_scram_t *s)
{
	return s->succeeded;
}

/* A per-process secret so fake credentials for unknown users are stable
 * (same salt on every attempt) but unpredictable. */
static uint8_t fake_secret[32];
static pthread_once_t fake_once = PTHREAD_ONCE_INIT;

static void
fake_init(void)
{
	if (RAND_bytes(fake_secret, sizeof(fake_secret)) != 1)
		memset(fake_secret, 0x5a, sizeof(fake_secret));
}

/* Decode "=2C" and "=3D" in a SCRAM user name; -1 for another '=' escape. */
static int
decode_user(const char *in, size_t len, char **out)
{
	bson_string_t *b = bson_string_new(NULL);
	size_t i;

	for (i = 0; i < len; i++) {
		if (in[i] == '\0') {
			bson_string_free(b, true);
			return -1;
		}
		if (in[i] == '=') {
			if (i + 2 < len && in[i + 1] == '2' && in[i + 2] == 'C')
				bson_string_append_c(b, ',');
			else if (i + 2 < len && in[i + 1] == '3' && in[i + 2] == 'D')
				bson_string_append_c(b, '=');
			else {
				bson_string_free(b, true);
				return -1;
			}
			i += 2;
		} else {
			bson_string_append_c(b, in[i]);
		}
	}
	*out = bson_string_free(b, false);
	return 0;
}

/* Copy the base64 field `name` of creds, decoded, into buf (exactly want
 * bytes); -1 when missing or malformed. */
static int
creds_key(const bson_t *creds, const char *name, uint8_t *buf, size_t want)
{
	bson_iter_t it;
	const char *t;
	uint32_t tl;
	uint8_t *d;
	size_t dl;

	if (!bson_iter_init_find(&it, creds, name) || !BSON_ITER_HOLDS_UTF8(&it))
		return -1;
	t = bson_iter_utf8(&it, &tl);
	if (auth_b64_decode(t, tl, &d, &dl) != 0)
		return -1;
	if (dl != want) {
		bson_free(d);
		return -1;
	}
	memcpy(buf, d, want);
	bson_free(d);
	return 0;
}

static int
bad(terr_t *err, const char *fmt, const char *arg)
{
	return terr_set(err, TERR_BAD_VALUE, fmt, arg);
}

/* client-first: gs2-header client-first-bare. */
static int
step_first(auth_scram_t *s, const char *in, size_t len, auth_creds_lookup_fn lookup, void *ctx,
           char **out, size_t *out_len, terr_t *err)
{
	const char *c1, *c2, *bare, *p, *user_end, *nonce, *nonce_end;
	char *salt_b64 = NULL, *authzid = NULL;
	uint8_t rnd[18];
	char *snonce, *msg;
	int iterations = auth_mech_default_iterations(s->mech);
	bson_t creds;
	bool have = false;
	bson_iter_t it;
	int ret = 0, lr = -1;

	c1 = memchr(in, ',', len);
	if (c1 == NULL)
		return terr_set(err, TERR_BAD_VALUE,
		    "Incorrect number of arguments for first SCRAM client message, got 1 expected at least 3");
	if (c1 - in >= 2 && in[0] == 'p' && in[1] == '=')
		return terr_set(err, TERR_BAD_VALUE, "Server does not support channel binding");
	if (c1 - in != 1 || (in[0] != 'n' && in[0] != 'y'))
		return terr_set(err, TERR_BAD_VALUE, "Incorrect SCRAM client message prefix");
	c2 = memchr(c1 + 1, ',', len - (size_t)(c1 + 1 - in));
	if (c2 == NULL)
		return terr_set(err, TERR_BAD_VALUE,
		    "Incorrect number of arguments for first SCRAM client message, got 2 expected at least 3");
	if (c2 > c1 + 1) {
		if (c2 - c1 < 3 || c1[1] != 'a' || c1[2] != '=')
			return terr_set(err, TERR_BAD_VALUE, "Incorrect SCRAM authzid");
		if (decode_user(c1 + 3, (size_t)(c2 - c1 - 3), &authzid) != 0)
			return terr_set(err, TERR_BAD_VALUE, "Incorrect SCRAM authzid");
	}
	bare = c2 + 1;
	if (len - (size_t)(bare - in) >= 2 && bare[0] == 'm' && bare[1] == '=')
		ERR(terr_set(err, TERR_BAD_VALUE, "SCRAM mandatory extensions are not supported"));
	if ((size_t)(bare - in) + 3 > len || bare[0] != 'n' || bare[1] != '=')
		ERR(bad(err, "Invalid SCRAM user name%s", ""));
	user_end = memchr(bare, ',', len - (size_t)(bare - in));
	if (user_end == NULL || user_end - bare < 3)
		ERR(bad(err, "Invalid SCRAM user name%s", ""));
	if (decode_user(bare + 2, (size_t)(user_end - bare - 2), &s->user) != 0 || s->user[0] == '\0')
		ERR(bad(err, "Invalid SCRAM user name%s", ""));
	if (authzid != NULL && strcmp(authzid, s->user) != 0)
		ERR(bad(err, "SCRAM user name does not match authzid%s", ""));
	nonce = user_end + 1;
	p = in + len;
	if (p - nonce < 6 || nonce[0] != 'r' || nonce[1] != '=')
		ERR(bad(err, "Invalid SCRAM client nonce%s", ""));
	nonce_end = memchr(nonce, ',', (size_t)(p - nonce));
	if (nonce_end == NULL)
		nonce_end = p;
	if (nonce_end - nonce < 6)
		ERR(bad(err, "Invalid SCRAM client nonce%s", ""));
	for (p = nonce + 2; p < nonce_end; p++)
		if (*p < 0x21 || *p > 0x7e)
			ERR(bad(err, "Invalid SCRAM client nonce%s", ""));

	/* The stored credentials, or fake ones made from the user name. */
	if (lookup != NULL && (lr = lookup(ctx, s->user, &creds)) == AUTH_CREDS_NO_MECH) {
		/* mongod: a user without credentials for this mechanism stops
		 * here, so a driver's speculative SCRAM-SHA-256 is not embedded
		 * and it falls back to the mechanisms saslSupportedMechs lists */
		const char *mn = auth_mech_name(s->mech);
		ERR(terr_set(err, TERR_MECHANISM_UNAVAILABLE, "Unable to use %s based authentication for user "
		    "without any %s credentials registered", mn, mn));
	}
	if (lookup != NULL && lr == 0) {
		have = true;
		if (!bson_iter_init_find(&it, &creds, "iterationCount") || !BSON_ITER_HOLDS_NUMBER(&it) ||
		    (iterations = (int)bson_iter_as_int64(&it)) <= 0 ||
		    !bson_iter_init_find(&it, &creds, "salt") || !BSON_ITER_HOLDS_UTF8(&it) ||
		    creds_key(&creds, "storedKey", s->stored_key, s->key_len) != 0 ||
		    creds_key(&creds, "serverKey", s->server_key, s->key_len) != 0) {
			have = false;
			iterations = auth_mech_default_iterations(s->mech);
		} else {
			bson_iter_init_find(&it, &creds, "salt");
			salt_b64 = bson_strdup(bson_iter_utf8(&it, NULL));
			if (bson_iter_init_find(&it, &creds, "alternate") && BSON_ITER_HOLDS_DOCUMENT(&it)) {
				bson_t alt;
				uint32_t alen;
				const uint8_t *adata;
				bson_iter_document(&it, &alen, &adata);
				if (bson_init_static(&alt, adata, alen) &&
				    creds_key(&alt, "storedKey", s->alt_stored_key, s->key_len) == 0 &&
				    creds_key(&alt, "serverKey", s->alt_server_key, s->key_len) == 0)
					s->has_alt = true;
			}
		}
		bson_destroy(&creds);
	}
	if (!have) {
		uint8_t fsalt[SCRAM_MAX_HASH];
		s->fake = true;
		pthread_once(&fake_once, fake_init);
		hmac(AUTH_SCRAM_SHA256, fake_secret, sizeof(fake_secret), s->user, strlen(s->user), fsalt);
		salt_b64 = auth_b64_encode(fsalt, s->key_len - 4);
		RAND_bytes(s->stored_key, (int)s->key_len);
		RAND_bytes(s->server_key, (int)s->key_len);
	}
	if (RAND_bytes(rnd, sizeof(rnd)) != 1)
		ERR(terr_set(err, TERR_INTERNAL_ERROR, "could not generate a nonce"));
	snonce = auth_b64_encode(rnd, sizeof(rnd));
	s->nonce = bson_malloc((size_t)(nonce_end - nonce - 2) + strlen(snonce) + 1);
	memcpy(s->nonce, nonce + 2, (size_t)(nonce_end - nonce - 2));
	strcpy(s->nonce + (nonce_end - nonce - 2), snonce);
	bson_free(snonce);
	msg = bson_strdup_printf("r=%s,s=%s,i=%d", s->nonce, salt_b64, iterations);
	s->auth_message = bson_malloc(len - (size_t)(bare - in) + 1 + strlen(msg) + 1);
	memcpy(s->auth_message, bare, len - (size_t)(bare - in));
	s->auth_message[len - (size_t)(bare - in)] = ',';
	strcpy(s->auth_message + len - (size_t)(bare - in) + 1, msg);
	*out = msg;
	*out_len = strlen(msg);
err:
	bson_free(authzid);
	bson_free(salt_b64);
	return ret;
}

/* client-final: c=...,r=...[,ext],p=proof. */
static int
step_final(auth_scram_t *s, const char *in, size_t len, char **out, size_t *out_len, terr_t *err)
{
	const char *last = NULL, *p, *r, *r_end;
	uint8_t sig[SCRAM_MAX_HASH], key[SCRAM_MAX_HASH], stored[SCRAM_MAX_HASH], ssig[SCRAM_MAX_HASH];
	uint8_t *proof = NULL;
	size_t proof_len = 0, i, am_len;
	char *am, *v;
	bool ok;

	for (p = in; p < in + len; p++)
		if (*p == ',')
			last = p;
	if (last == NULL)
		return terr_set(err, TERR_BAD_VALUE,
		    "Incorrect number of arguments for second SCRAM client message, got 1 expected at least 3");
	if (in + len - last < 4 || last[1] != 'p' || last[2] != '=')
		return terr_set(err, TERR_BAD_VALUE, "Incorrect SCRAM ClientProof");
	if (len < 3 || in[0] != 'c' || in[1] != '=' || in[2] == ',')
		return terr_set(err, TERR_BAD_VALUE, "Incorrect SCRAM channel binding");
	r = memchr(in, ',', (size_t)(last - in));
	if (r == NULL || r == last)
		return terr_set(err, TERR_BAD_VALUE,
		    "Incorrect number of arguments for second SCRAM client message, got 2 expected at least 3");
	r++;
	if (last - r < 6 || r[0] != 'r' || r[1] != '=')
		return terr_set(err, TERR_BAD_VALUE, "Incorrect SCRAM client|server nonce");
	r_end = memchr(r, ',', (size_t)(last - r + 1));
	if ((size_t)(r_end - r - 2) != strlen(s->nonce) || memcmp(r + 2, s->nonce, strlen(s->nonce)) != 0)
		return terr_set(err, TERR_BAD_VALUE, "Unmatched SCRAM nonce received from client in second step");
	if (auth_b64_decode(last + 3, (size_t)(in + len - last - 3), &proof, &proof_len) != 0 ||
	    proof_len != s->key_len) {
		bson_free(proof);
		return terr_set(err, TERR_BAD_VALUE, "Incorrect SCRAM ClientProof");
	}
	am_len = strlen(s->auth_message) + 1 + (size_t)(last - in);
	am = bson_malloc(am_len + 1);
	snprintf(am, am_len + 1, "%s,%.*s", s->auth_message, (int)(last - in), in);
	hmac(s->mech, s->stored_key, s->key_len, am, am_len, sig);
	for (i = 0; i < s->key_len; i++)
		key[i] = proof[i] ^ sig[i];
	hash(s->mech, key, s->key_len, stored);
	hmac(s->mech, s->server_key, s->key_len, am, am_len, ssig);
	ok = CRYPTO_memcmp(stored, s->stored_key, s->key_len) == 0 && !s->fake;
	if (!ok && s->has_alt && !s->fake) {
		/* the proof of the other key: its own ClientSignature */
		hmac(s->mech, s->alt_stored_key, s->key_len, am, am_len, sig);
		for (i = 0; i < s->key_len; i++)
			key[i] = proof[i] ^ sig[i];
		hash(s->mech, key, s->key_len, stored);
		ok = CRYPTO_memcmp(stored, s->alt_stored_key, s->key_len) == 0;
		if (ok)
			hmac(s->mech, s->alt_server_key, s->key_len, am, am_len, ssig);
	}
	bson_free(am);
	bson_free(proof);
	OPENSSL_cleanse(key, sizeof(key));
	if (!ok && s->fake)
		return terr_set(err, TERR_USER_NOT_FOUND, "Could not find user \"%s\"", s->user);
	if (!ok)
		return terr_set(err, TERR_AUTHENTICATION_FAILED, "SCRAM authentication failed, storedKey mismatch");
	v = auth_b64_encode(ssig, s->key_len);
	*out = bson_strdup_printf("v=%s", v);
	*out_len = strlen(*out);
	bson_free(v);
	s->succeeded = true;
	return 0;
}

int
auth_scram_step(auth_scram_t *s, const uint8_t *in, size_t in_len, auth_creds_lookup_fn lookup, void *ctx,
                char **out, size_t *out_len, bool *done, terr_t *err)
{
	int ret = 0;

	*out = NULL;
	*out_len = 0;
	*done = false;
	if (s->failed)
		return terr_set(err, TERR_AUTHENTICATION_FAILED, "SCRAM conversation already failed");
	s->step++;
	if (memchr(in, '\0', in_len) != NULL) {
		ret = terr_set(err, TERR_BAD_VALUE, "SCRAM message contains a NUL byte");
	} else if (s->step == 1) {
		ret = step_first(s, (const char *)in, in_len, lookup, ctx, out, out_len, err);
	} else if (s->step == 2) {
		ret = step_final(s, (const char *)in, in_len, out, out_len, err);
		if (ret == 0 && s->skip_empty)
			*done = true;
	} else if (s->step == 3 && !s->skip_empty && s->succeeded) {
		*out = bson_strdup("");
		*done = true;
	} else {
		ret = terr_set(err, TERR_AUTHENTICATION_FAILED, "Invalid SCRAM authentication step: %d", s->step);
	}
	if (ret != 0) {
		s->failed = true;
		s->succeeded = false;
	}
	return ret;
}
