/*
 * auth_member.c -- member authentication (auth_member.h): the key file's
 * rules (mongod's readSecurityFile), the process's internal key, the
 * `__system` credentials derived from it, the client side of SCRAM-SHA-256
 * a member runs against another, and the Raft handshake's MACs.
 *
 * Not here: the server side of SCRAM (auth_scram.c), the sockets
 * (repl/member_rpc.c, repl/raft_auth.c).
 */
#include "auth/auth_member.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#define HASH_LEN 32
#define MIN_ITERATIONS 4096

/* ---- the key file -------------------------------------------------------------- */

static bool
key_space(int ch)
{
	return (ch >= 0x09 && ch <= 0x0d) || ch == ' ';
}

static bool
key_char(int ch)
{
	return (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '+' ||
	    ch == '/' || ch == '=';
}

void
auth_keys_clear(auth_keys_t *k)
{
	for (size_t i = 0; i < k->n; i++) {
		OPENSSL_cleanse(k->key[i], strlen(k->key[i]));
		bson_free(k->key[i]);
	}
	bson_free(k->key);
	k->key = NULL;
	k->n = 0;
}

/* A growing key being read (cleansed whenever it moves). */
typedef struct kbuf {
	char *b;
	size_t n, cap;
	bool open;                       /* an item was started (sequence) or content seen */
} kbuf_t;

static void
kbuf_add(kbuf_t *k, char ch)
{
	if (k->n + 2 > k->cap) {
		size_t ncap = k->cap == 0 ? 256 : k->cap * 2;
		char *bigger = bson_malloc(ncap);
		if (k->b != NULL) {
			memcpy(bigger, k->b, k->n);
			OPENSSL_cleanse(k->b, k->cap);
			bson_free(k->b);
		}
		k->b = bigger;
		k->cap = ncap;
	}
	k->b[k->n++] = ch;
}

static void
kbuf_drop(kbuf_t *k)
{
	if (k->b != NULL) {
		OPENSSL_cleanse(k->b, k->cap);
		bson_free(k->b);
	}
	memset(k, 0, sizeof(*k));
}

/* The current key onto out (taken from k); -1 for an empty sequence item
 * (YAML reads it as null, which mongod refuses). */
static int
kbuf_push(kbuf_t *k, auth_keys_t *out)
{
	char *key;

	if (k->n == 0) {
		kbuf_drop(k);
		return -1;
	}
	key = bson_malloc(k->n + 1);
	memcpy(key, k->b, k->n);
	key[k->n] = '\0';
	kbuf_drop(k);
	out->key = bson_realloc(out->key, (out->n + 1) * sizeof(char *));
	out->key[out->n++] = key;
	return 0;
}

int
auth_keyfile_parse(const char *path, const char *text, size_t len, auth_keys_t *out, terr_t *err)
{
	kbuf_t cur = {0};
	enum { NONE, SCALAR, BLOCK, FLOW } shape = NONE;
	bool flow_closed = false;
	size_t i = 0, line = 0, marker_line = 0;
	int ret = 0;

	memset(out, 0, sizeof(*out));
	while (i < len) {
		size_t eol = i, j;
		while (eol < len && text[eol] != '\n')
			eol++;
		j = i;
		while (j < eol && (text[j] == ' ' || text[j] == '\t' || text[j] == '\r'))
			j++;
		/* YAML's document markers */
		if (eol - j >= 3 && (memcmp(text + j, "---", 3) == 0 || memcmp(text + j, "...", 3) == 0) &&
		    (eol - j == 3 || key_space((unsigned char)text[j + 3]))) {
			i = eol + 1;
			continue;
		}
		for (; j < eol; j++) {
			int ch = (unsigned char)text[j];
			bool at_gap = j == i || key_space((unsigned char)text[j - 1]);
			if (key_space(ch))
				continue;
			if (ch == '#' && at_gap)
				break;                 /* a comment to the end of the line */
			if (ch == '-' && at_gap && (j + 1 == eol || key_space((unsigned char)text[j + 1])) &&
			    shape != SCALAR && shape != FLOW) {
				/* a block sequence item ("- - x" nests: flattened, as mongod) */
				bool nested = shape == BLOCK && cur.open && cur.n == 0 && marker_line == line;
				if (cur.open && !nested && kbuf_push(&cur, out) != 0)
					ERR(terr_set(err, TERR_UNSUPPORTED_FORMAT,
					    "Only strings and sequences are supported for YAML key files"));
				shape = BLOCK;
				marker_line = line;
				cur.open = true;
				continue;
			}
			if (ch == '-' && at_gap && (j + 1 == eol || key_space((unsigned char)text[j + 1])) &&
			    shape == SCALAR)
				ERR(terr_set(err, TERR_UNSUPPORTED_FORMAT, "error reading file: %s: a key string followed "
				    "by a sequence", path));
			if (ch == '[' && (shape == NONE || (shape == BLOCK && cur.open && cur.n == 0))) {
				if (shape == BLOCK)
					cur.open = false;   /* "- [a, b]": the nested items replace this one */
				shape = FLOW;
				cur.open = true;
				continue;
			}
			if (shape == FLOW && (ch == ',' || ch == ']') && !flow_closed) {
				if (cur.n > 0 && kbuf_push(&cur, out) != 0)
					ERR(terr_set(err, TERR_UNSUPPORTED_FORMAT, "error reading file: %s", path));
				cur.open = ch == ',';
				if (ch == ']')
					flow_closed = true;
				continue;
			}
			if (ch == '"' || ch == '\'')
				continue;              /* quoted scalars: base64 needs no escapes */
			if (ch == ':' && (j + 1 == eol || key_space((unsigned char)text[j + 1])))
				ERR(terr_set(err, TERR_UNSUPPORTED_FORMAT,
				    "Only strings and sequences are supported for YAML key files"));
			if (!key_char(ch))
				ERR(terr_set(err, TERR_UNSUPPORTED_FORMAT, "invalid char in key file %s", path));
			if (flow_closed)
				ERR(terr_set(err, TERR_UNSUPPORTED_FORMAT, "error reading file: %s: content after the "
				    "sequence", path));
			if (shape == NONE)
				shape = SCALAR;
			else if (shape == BLOCK && !cur.open)
				ERR(terr_set(err, TERR_UNSUPPORTED_FORMAT, "error reading file: %s: a key outside the "
				    "sequence's items", path));
			cur.open = true;
			kbuf_add(&cur, (char)ch);
			/* far past any valid key: the length rule refuses it */
			if (cur.n > (size_t)AUTH_KEY_MAX_LEN * 64)
				ERR(terr_set(err, TERR_UNSUPPORTED_FORMAT, "error reading file: %s: a key far too long",
				    path));
		}
		i = eol + 1;
		line++;
	}
	if (shape == FLOW && !flow_closed)
		ERR(terr_set(err, TERR_UNSUPPORTED_FORMAT, "error reading file: %s: an unclosed sequence", path));
	if (shape == BLOCK && cur.open && kbuf_push(&cur, out) != 0)
		ERR(terr_set(err, TERR_UNSUPPORTED_FORMAT, "Only strings and sequences are supported for YAML key files"));
	if (shape == SCALAR)
		kbuf_push(&cur, out);
	if (out->n == 0)
		ERR(terr_set(err, TERR_KEYFILE_EMPTY, "Security key file %s does not contain any valid keys", path));
	return 0;
err:
	kbuf_drop(&cur);
	auth_keys_clear(out);
	return ret;
}

int
auth_keyfile_read_keys(const char *path, auth_keys_t *out, terr_t *err)
{
	struct stat st;
	FILE *f;
	char *text = NULL;
	size_t n = 0, cap = 0;
	int ch, ret;

	memset(out, 0, sizeof(*out));
	if (stat(path, &st) != 0)
		return terr_set(err, TERR_INVALID_PATH, "Error reading file %s: %s", path, strerror(errno));
	if ((st.st_mode & (S_IRWXG | S_IRWXO)) != 0)
		return terr_set(err, TERR_INVALID_PATH, "permissions on %s are too open", path);
	f = fopen(path, "rb");
	if (f == NULL)
		return terr_set(err, TERR_INVALID_PATH, "error opening file: %s: %s", path, strerror(errno));
	while ((ch = fgetc(f)) != EOF) {
		if (n + 1 > cap) {
			size_t ncap = cap == 0 ? 4096 : cap * 2;
			char *bigger = bson_malloc(ncap);
			if (text != NULL) {
				memcpy(bigger, text, n);
				OPENSSL_cleanse(text, cap);
				bson_free(text);
			}
			text = bigger;
			cap = ncap;
		}
		text[n++] = (char)ch;
		/* far past any valid key file (two keys of 1024): the rules refuse it */
		if (n > (size_t)AUTH_KEY_MAX_LEN * 64)
			break;
	}
	if (ferror(f)) {
		fclose(f);
		if (text != NULL) {
			OPENSSL_cleanse(text, cap);
			bson_free(text);
		}
		return terr_set(err, TERR_UNSUPPORTED_FORMAT, "error reading file: %s", path);
	}
	fclose(f);
	ret = auth_keyfile_parse(path, text != NULL ? text : "", n, out, err);
	if (text != NULL) {
		OPENSSL_cleanse(text, cap);
		bson_free(text);
	}
	return ret;
}

int
auth_keyfile_read(const char *path, char **key, terr_t *err)
{
	auth_keys_t k;

	*key = NULL;
	if (auth_keyfile_read_keys(path, &k, err) != 0)
		return -1;
	*key = k.key[0];
	k.key[0] = bson_strdup("");
	auth_keys_clear(&k);
	return 0;
}

bool
auth_keyfile_length_ok(const char *key)
{
	size_t n = strlen(key);

	return n >= AUTH_KEY_MIN_LEN && n <= AUTH_KEY_MAX_LEN;
}

/* ---- the internal key ------------------------------------------------------------ */

static struct {
	bool present;
	bson_t creds;                      /* SCRAM-SHA-256 {iterationCount, salt, storedKey, serverKey[,
	                                    * alternate: {storedKey, serverKey}]}: one salt for both keys */
	size_t n;
	char *key[AUTH_KEYS_MAX];          /* the key strings, for this member's own SCRAM conversations */
	uint8_t raft_key[AUTH_KEYS_MAX][HASH_LEN];
} g_key;

static void
key_clear(void)
{
	if (!g_key.present)
		return;
	bson_destroy(&g_key.creds);
	for (size_t i = 0; i < g_key.n; i++) {
		OPENSSL_cleanse(g_key.raft_key[i], HASH_LEN);
		OPENSSL_cleanse(g_key.key[i], strlen(g_key.key[i]));
		bson_free(g_key.key[i]);
		g_key.key[i] = NULL;
	}
	g_key.n = 0;
	g_key.present = false;
}

/* storedKey/serverKey of one key's credentials (made with the shared salt) into dst. */
static void
copy_keys(const bson_t *creds, bson_t *dst)
{
	bson_iter_t it;

	if (bson_iter_init_find(&it, creds, "storedKey"))
		bson_append_iter(dst, "storedKey", -1, &it);
	if (bson_iter_init_find(&it, creds, "serverKey"))
		bson_append_iter(dst, "serverKey", -1, &it);
}

int
auth_member_keys_set(const char *const *keys, size_t n, terr_t *err)
{
	bson_t creds = BSON_INITIALIZER, alt = BSON_INITIALIZER, sub;
	uint8_t salt[28];
	uint8_t raft[AUTH_KEYS_MAX][HASH_LEN];
	size_t i;

	key_clear();
	if (keys == NULL || n == 0)
		return 0;
	if (n > AUTH_KEYS_MAX)
		return terr_set(err, TERR_BAD_VALUE, "Only two keys are supported in the security key file");
	/* mongod: both keys' credentials share one salt, so one server-first
	 * message serves a proof made with either */
	if (RAND_bytes(salt, sizeof(salt)) != 1)
		return terr_set(err, TERR_INTERNAL_ERROR, "could not generate a random salt");
	for (i = 0; i < n; i++) {
		unsigned int len = 0;
		if (auth_scram_make_creds(AUTH_SCRAM_SHA256, "__system", keys[i], 0, salt, sizeof(salt),
		    i == 0 ? &creds : &alt, err) != 0)
			goto fail;
		if (HMAC(EVP_sha256(), keys[i], (int)strlen(keys[i]), (const uint8_t *)"tamga raft member v1", 20,
		    raft[i], &len) == NULL || len != HASH_LEN) {
			terr_set(err, TERR_INTERNAL_ERROR, "could not derive the member key");
			goto fail;
		}
	}
	bson_copy_to(&creds, &g_key.creds);
	if (n > 1) {
		BSON_APPEND_DOCUMENT_BEGIN(&g_key.creds, "alternate", &sub);
		copy_keys(&alt, &sub);
		bson_append_document_end(&g_key.creds, &sub);
	}
	for (i = 0; i < n; i++) {
		g_key.key[i] = bson_strdup(keys[i]);
		memcpy(g_key.raft_key[i], raft[i], HASH_LEN);
	}
	g_key.n = n;
	g_key.present = true;
	OPENSSL_cleanse(raft, sizeof(raft));
	bson_destroy(&creds);
	bson_destroy(&alt);
	return 0;
fail:
	OPENSSL_cleanse(raft, sizeof(raft));
	bson_destroy(&creds);
	bson_destroy(&alt);
	return -1;
}

int
auth_member_key_set(const char *key, terr_t *err)
{
	return auth_member_keys_set(key != NULL ? &key : NULL, key != NULL ? 1 : 0, err);
}

size_t
auth_member_key_count(void)
{
	return g_key.present ? g_key.n : 0;
}

bool
auth_member_key_present(void)
{
	return g_key.present;
}

bool
auth_member_is_internal_user(const char *user, const char *db)
{
	return user != NULL && db != NULL && strcmp(user, "__system") == 0 && strcmp(db, "local") == 0;
}

int
auth_member_creds(auth_mech_t m, bson_t *creds)
{
	if (!g_key.present)
		return -1;
	if (m != AUTH_SCRAM_SHA256)
		return AUTH_CREDS_NO_MECH;
	bson_copy_to(&g_key.creds, creds);
	return 0;
}

/* ---- the SCRAM client --------------------------------------------------------------- */

struct auth_scram_client {
	char *user;                 /* SCRAM-escaped */
	char *password;             /* SASLprep'd */
	char *first_bare;           /* n=user,r=cnonce */
	char *first;                /* n,,first_bare */
	char *auth_message;
	uint8_t server_key[HASH_LEN];
	bool ready;
};

/* One cached salted password: a member talks to the same few peers, each
 * with one salt for the life of its process. */
static pthread_mutex_t g_cache_mu = PTHREAD_MUTEX_INITIALIZER;
static struct {
	bool used;
	char pwd_hash[HASH_LEN];
	char *salt;
	int iterations;
	uint8_t salted[HASH_LEN];
} g_cache[8];
static unsigned g_cache_next;

static void
pwd_digest(const char *pwd, uint8_t out[HASH_LEN])
{
	unsigned int len = 0;

	EVP_Digest(pwd, strlen(pwd), out, &len, EVP_sha256(), NULL);
}

static int
salted_password(const char *pwd, const char *salt_b64, int iterations, uint8_t out[HASH_LEN])
{
	uint8_t ph[HASH_LEN], *salt = NULL;
	size_t salt_len = 0;
	int ret = -1;

	pwd_digest(pwd, ph);
	pthread_mutex_lock(&g_cache_mu);
	for (size_t i = 0; i < sizeof(g_cache) / sizeof(g_cache[0]); i++) {
		if (g_cache[i].used && g_cache[i].iterations == iterations && strcmp(g_cache[i].salt, salt_b64) == 0 &&
		    CRYPTO_memcmp(g_cache[i].pwd_hash, ph, HASH_LEN) == 0) {
			memcpy(out, g_cache[i].salted, HASH_LEN);
			pthread_mutex_unlock(&g_cache_mu);
			return 0;
		}
	}
	pthread_mutex_unlock(&g_cache_mu);
	if (auth_b64_decode(salt_b64, strlen(salt_b64), &salt, &salt_len) != 0 || salt_len == 0)
		goto out;
	if (PKCS5_PBKDF2_HMAC(pwd, (int)strlen(pwd), salt, (int)salt_len, iterations, EVP_sha256(), HASH_LEN, out) != 1)
		goto out;
	pthread_mutex_lock(&g_cache_mu);
	{
		unsigned k = g_cache_next++ % (unsigned)(sizeof(g_cache) / sizeof(g_cache[0]));
		bson_free(g_cache[k].salt);
		g_cache[k].used = true;
		memcpy(g_cache[k].pwd_hash, ph, HASH_LEN);
		g_cache[k].salt = bson_strdup(salt_b64);
		g_cache[k].iterations = iterations;
		memcpy(g_cache[k].salted, out, HASH_LEN);
	}
	pthread_mutex_unlock(&g_cache_mu);
	ret = 0;
out:
	bson_free(salt);
	return ret;
}

static char *
scram_escape(const char *s)
{
	size_t n = 0;
	char *out, *p;

	for (const char *q = s; *q; q++)
		n += *q == ',' || *q == '=' ? 3 : 1;
	out = p = bson_malloc(n + 1);
	for (const char *q = s; *q; q++) {
		if (*q == ',') {
			memcpy(p, "=2C", 3);
			p += 3;
		} else if (*q == '=') {
			memcpy(p, "=3D", 3);
			p += 3;
		} else {
			*p++ = *q;
		}
	}
	*p = '\0';
	return out;
}

auth_scram_client_t *
auth_scram_client_new(const char *user, const char *password, terr_t *err)
{
	auth_scram_client_t *c = bson_malloc0(sizeof(*c));
	uint8_t rnd[24];
	char *nonce;

	if (auth_saslprep(password, &c->password, err) != 0) {
		auth_scram_client_free(c);
		return NULL;
	}
	if (RAND_bytes(rnd, sizeof(rnd)) != 1) {
		terr_set(err, TERR_INTERNAL_ERROR, "could not generate a nonce");
		auth_scram_client_free(c);
		return NULL;
	}
	c->user = scram_escape(user);
	nonce = auth_b64_encode(rnd, sizeof(rnd));
	c->first_bare = bson_strdup_printf("n=%s,r=%s", c->user, nonce);
	c->first = bson_strdup_printf("n,,%s", c->first_bare);
	bson_free(nonce);
	return c;
}

void
auth_scram_client_free(auth_scram_client_t *c)
{
	if (c == NULL)
		return;
	if (c->password != NULL) {
		OPENSSL_cleanse(c->password, strlen(c->password));
		bson_free(c->password);
	}
	bson_free(c->user);
	bson_free(c->first_bare);
	bson_free(c->first);
	bson_free(c->auth_message);
	OPENSSL_cleanse(c->server_key, sizeof(c->server_key));
	bson_free(c);
}

const char *
auth_scram_client_first(auth_scram_client_t *c)
{
	return c->first;
}

/* The value of attribute `name=` in a SCRAM message (a copy), or NULL. */
static char *
scram_attr(const char *msg, size_t len, char name)
{
	const char *p = msg, *end = msg + len;

	while (p < end) {
		const char *comma = memchr(p, ',', (size_t)(end - p));
		const char *stop = comma != NULL ? comma : end;
		if (stop - p >= 2 && p[0] == name && p[1] == '=')
			return bson_strndup(p + 2, (size_t)(stop - p - 2));
		p = stop + 1;
	}
	return NULL;
}

int
auth_scram_client_final(auth_scram_client_t *c, const char *server_first, size_t len, char **out, terr_t *err)
{
	char *r = NULL, *s = NULL, *i = NULL, *without_proof = NULL, *proof_b64 = NULL, *end = NULL;
	const char *cnonce = strstr(c->first_bare, ",r=") + 3;
	uint8_t salted[HASH_LEN], ckey[HASH_LEN], stored[HASH_LEN], sig[HASH_LEN], proof[HASH_LEN];
	unsigned int hl = 0;
	long iterations;
	int ret = 0;

	*out = NULL;
	if (memchr(server_first, '\0', len) != NULL)
		return terr_set(err, TERR_AUTHENTICATION_FAILED, "malformed SCRAM server-first message");
	r = scram_attr(server_first, len, 'r');
	s = scram_attr(server_first, len, 's');
	i = scram_attr(server_first, len, 'i');
	if (r == NULL || s == NULL || i == NULL || len < 2 || server_first[0] != 'r')
		ERR(terr_set(err, TERR_AUTHENTICATION_FAILED, "malformed SCRAM server-first message"));
	if (strncmp(r, cnonce, strlen(cnonce)) != 0 || strlen(r) <= strlen(cnonce))
		ERR(terr_set(err, TERR_AUTHENTICATION_FAILED, "the server's SCRAM nonce does not extend ours"));
	errno = 0;
	iterations = strtol(i, &end, 10);
	if (errno != 0 || *end != '\0' || iterations < MIN_ITERATIONS || iterations > 10 * 1000 * 1000)
		ERR(terr_set(err, TERR_AUTHENTICATION_FAILED, "a SCRAM iteration count out of range"));
	if (salted_password(c->password, s, (int)iterations, salted) != 0)
		ERR(terr_set(err, TERR_AUTHENTICATION_FAILED, "a malformed SCRAM salt"));
	without_proof = bson_strdup_printf("c=biws,r=%s", r);
	bson_free(c->auth_message);
	c->auth_message = bson_malloc(strlen(c->first_bare) + 1 + len + 1 + strlen(without_proof) + 1);
	{
		char *p = c->auth_message;
		size_t fl = strlen(c->first_bare);
		memcpy(p, c->first_bare, fl);
		p += fl;
		*p++ = ',';
		memcpy(p, server_first, len);
		p += len;
		*p++ = ',';
		strcpy(p, without_proof);
	}
	HMAC(EVP_sha256(), salted, HASH_LEN, (const uint8_t *)"Client Key", 10, ckey, &hl);
	HMAC(EVP_sha256(), salted, HASH_LEN, (const uint8_t *)"Server Key", 10, c->server_key, &hl);
	EVP_Digest(ckey, HASH_LEN, stored, &hl, EVP_sha256(), NULL);
	HMAC(EVP_sha256(), stored, HASH_LEN, (const uint8_t *)c->auth_message, strlen(c->auth_message), sig, &hl);
	for (int k = 0; k < HASH_LEN; k++)
		proof[k] = ckey[k] ^ sig[k];
	proof_b64 = auth_b64_encode(proof, HASH_LEN);
	*out = bson_strdup_printf("%s,p=%s", without_proof, proof_b64);
	c->ready = true;
err:
	OPENSSL_cleanse(salted, sizeof(salted));
	OPENSSL_cleanse(ckey, sizeof(ckey));
	bson_free(r);
	bson_free(s);
	bson_free(i);
	bson_free(without_proof);
	bson_free(proof_b64);
	return ret;
}

int
auth_scram_client_verify(auth_scram_client_t *c, const char *server_final, size_t len, terr_t *err)
{
	char *v = NULL, *e = NULL;
	uint8_t want[HASH_LEN], *got = NULL;
	size_t got_len = 0;
	unsigned int hl = 0;
	int ret = 0;

	if (!c->ready)
		return terr_set(err, TERR_AUTHENTICATION_FAILED, "SCRAM conversation out of order");
	e = scram_attr(server_final, len, 'e');
	if (e != NULL)
		ERR(terr_set(err, TERR_AUTHENTICATION_FAILED, "the server refused: %s", e));
	v = scram_attr(server_final, len, 'v');
	if (v == NULL || auth_b64_decode(v, strlen(v), &got, &got_len) != 0 || got_len != HASH_LEN)
		ERR(terr_set(err, TERR_AUTHENTICATION_FAILED, "malformed SCRAM server-final message"));
	HMAC(EVP_sha256(), c->server_key, HASH_LEN, (const uint8_t *)c->auth_message, strlen(c->auth_message), want,
	    &hl);
	if (CRYPTO_memcmp(want, got, HASH_LEN) != 0)
		ERR(terr_set(err, TERR_AUTHENTICATION_FAILED, "the server's SCRAM signature does not verify"));
err:
	bson_free(v);
	bson_free(e);
	bson_free(got);
	return ret;
}

auth_scram_client_t *
auth_member_client_new(size_t which, terr_t *err)
{
	if (!g_key.present || which >= g_key.n) {
		terr_set(err, TERR_NOT_IMPLEMENTED, "no keyFile: this member cannot authenticate to another");
		return NULL;
	}
	return auth_scram_client_new("__system", g_key.key[which], err);
}

/* ---- the Raft handshake ----------------------------------------------------------------- */

int
auth_member_nonce(uint8_t out[AUTH_MEMBER_NONCE_LEN])
{
	return RAND_bytes(out, AUTH_MEMBER_NONCE_LEN) == 1 ? 0 : -1;
}

int
auth_member_mac(size_t which, char role, const uint8_t n1[AUTH_MEMBER_NONCE_LEN],
                const uint8_t n2[AUTH_MEMBER_NONCE_LEN], uint64_t id, uint8_t out[AUTH_MEMBER_MAC_LEN])
{
	uint8_t msg[1 + 2 * AUTH_MEMBER_NONCE_LEN + 8];
	unsigned int len = 0;

	if (!g_key.present || which >= g_key.n)
		return -1;
	msg[0] = (uint8_t)role;
	memcpy(msg + 1, n1, AUTH_MEMBER_NONCE_LEN);
	memcpy(msg + 1 + AUTH_MEMBER_NONCE_LEN, n2, AUTH_MEMBER_NONCE_LEN);
	for (int i = 0; i < 8; i++)
		msg[1 + 2 * AUTH_MEMBER_NONCE_LEN + i] = (uint8_t)(id >> (8 * i));
	return HMAC(EVP_sha256(), g_key.raft_key[which], HASH_LEN, msg, sizeof(msg), out, &len) != NULL && len == HASH_LEN ?
	    0 : -1;
}

bool
auth_member_mac_equal(const uint8_t a[AUTH_MEMBER_MAC_LEN], const uint8_t b[AUTH_MEMBER_MAC_LEN])
{
	return CRYPTO_memcmp(a, b, AUTH_MEMBER_MAC_LEN) == 0;
}
