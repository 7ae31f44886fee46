/*
 * cmd_auth.c -- the authentication commands (saslStart, saslContinue,
 * logout, authenticate), hello's speculativeAuthenticate and
 * saslSupportedMechs, and the user and role management commands
 * (createUser ... revokeRolesFromRole), with mongod's replies and errors;
 * and the command layer's side of auth/: the client as auth/ sees it
 * (auth_conn_t) and the dispatcher's call of the privilege check.
 *
 * Not here: SCRAM itself (auth/auth_scram.c), the privilege check that
 * runs before these handlers (auth/auth_check.c), storage of the documents
 * (auth/auth_users.c).  Passwords are never logged, stored or echoed: only the
 * SCRAM credentials derived from them are kept.
 */
#include "auth/auth.h"
#include "auth/auth_member.h"
#include "auth/auth_x509.h"
#include "commands/commands_private.h"

#include <string.h>

#include <openssl/crypto.h>
#include "bson/value.h"
#include "common/log.h"
#include "common/mem.h"
#include <openssl/rand.h>

#define TERR_USER_EXISTS 51003
#define TERR_ROLE_EXISTS 51002

/* ---- SASL ---------------------------------------------------------------------------- */

typedef struct lookup_ctx {
	cmd_t *c;
	const char *db;
	auth_mech_t mech;
} lookup_ctx_t;

static int
creds_lookup(void *arg, const char *user, bson_t *creds)
{
	lookup_ctx_t *lc = arg;
	storage_session_t *s;
	terr_t err = TERR_INIT;
	bson_iter_t it, m;
	bson_t doc;
	int ret = AUTH_CREDS_NO_MECH;

	/* __system@local: the keyFile's credentials, never a stored user;
	 * under clusterAuthMode x509 members authenticate only with their
	 * certificates (mongod's ClusterAuthMode::allowsKeyFile) */
	if (auth_member_is_internal_user(user, lc->db))
		return auth_cluster_mode() == AUTH_CLUSTER_X509 ? -1 : auth_member_creds(lc->mech, creds);
	s = client_session(lc->c->client, &err);
	if (s == NULL || auth_store_get(lc->c->engine->st, s, "system.users", lc->db, user, &doc, &err) != 0) {
		terr_clear(&err);
		return -1;
	}
	if (bson_iter_init_find(&it, &doc, "credentials") && BSON_ITER_HOLDS_DOCUMENT(&it) &&
	    bson_iter_recurse(&it, &m) && bson_iter_find(&m, auth_mech_name(lc->mech)) &&
	    BSON_ITER_HOLDS_DOCUMENT(&m)) {
		const uint8_t *d;
		uint32_t l;
		bson_t view;
		bson_iter_document(&m, &l, &d);
		if (bson_init_static(&view, d, l)) {
			bson_copy_to(&view, creds);
			ret = 0;
		}
	}
	bson_destroy(&doc);
	return ret;
}

/* The payload field: BinData (any subtype) or a base64 string. */
static int
get_payload(const bson_t *body, const char *cmd, uint8_t **out, size_t *len, bool *as_string, terr_t *err)
{
	bson_iter_t it;

	*out = NULL;
	*len = 0;
	*as_string = false;
	if (!bson_iter_init_find(&it, body, "payload"))
		return terr_set(err, 40414, "BSON field '%s.payload' is missing but a required field", cmd);
	if (BSON_ITER_HOLDS_BINARY(&it)) {
		bson_subtype_t st;
		uint32_t l;
		const uint8_t *d;
		bson_iter_binary(&it, &st, &l, &d);
		*out = bson_malloc(l + 1);
		memcpy(*out, d, l);
		*len = l;
		return 0;
	}
	if (BSON_ITER_HOLDS_UTF8(&it)) {
		uint32_t l;
		const char *s = bson_iter_utf8(&it, &l);
		*as_string = true;
		if (auth_b64_decode(s, l, out, len) != 0)
			return terr_set(err, TERR_BAD_VALUE, "Invalid base64 in %s payload", cmd);
		return 0;
	}
	return terr_set(err, TERR_TYPE_MISMATCH,
	    "BSON field '%s.payload' is the wrong type, expected types '[string, binData]'", cmd);
}

static void
append_reply(bson_t *reply, bool done, const char *payload, size_t len, bool as_string)
{
	BSON_APPEND_INT32(reply, "conversationId", 1);
	BSON_APPEND_BOOL(reply, "done", done);
	if (as_string) {
		char *b = auth_b64_encode((const uint8_t *)payload, len);
		BSON_APPEND_UTF8(reply, "payload", b);
		bson_free(b);
	} else {
		BSON_APPEND_BINARY(reply, "payload", BSON_SUBTYPE_BINARY, (const uint8_t *)(payload ? payload : ""),
		    (uint32_t)len);
	}
}

static void
conv_end(auth_client_t *ac)
{
	auth_scram_free(ac->conv);
	ac->conv = NULL;
	bson_free(ac->conv_db);
	ac->conv_db = NULL;
}

/* mongod's access log lines 20249 / 20250 (never a password or a proof).
 * A speculative attempt with a mechanism the user has no credentials for
 * is routine (every driver tries SCRAM-SHA-256 first): mongod logs it at
 * debug level 5, here 'D'. */
static void
log_attempt(cmd_t *c, const char *mech, bool speculative, const char *user, const char *db, bool ok,
            const terr_t *why, char sev)
{
	char name[32];
	bson_t attr, extra;

	bson_init(&attr);
	BSON_APPEND_UTF8(&attr, "mechanism", mech);
	BSON_APPEND_BOOL(&attr, "speculative", speculative);
	BSON_APPEND_UTF8(&attr, "principalName", user ? user : "");
	BSON_APPEND_UTF8(&attr, "authenticationDatabase", db ? db : "");
	BSON_APPEND_UTF8(&attr, "remote", c->client->remote ? c->client->remote : "");
	BSON_APPEND_DOCUMENT_BEGIN(&attr, "extraInfo", &extra);
	bson_append_document_end(&attr, &extra);
	if (!ok && why != NULL) {
		char *e = bson_strdup_printf("%s: %s", terr_code_name(why->code, name), why->msg ? why->msg : "");
		BSON_APPEND_UTF8(&attr, "error", e);
		bson_free(e);
	}
	tlog(sev, "ACCESS", ok ? 20250 : 20249, ok ? "Authentication succeeded" : "Authentication failed", &attr);
	bson_destroy(&attr);
}

static void
log_auth(cmd_t *c, auth_client_t *ac, bool ok, const terr_t *why)
{
	char sev = !ok && why != NULL && ac->speculative && why->code == TERR_MECHANISM_UNAVAILABLE ? 'D' : 'I';

	log_attempt(c, ac->conv ? auth_mech_name(auth_scram_mech(ac->conv)) : "", ac->speculative,
	    ac->conv ? auth_scram_user(ac->conv) : NULL, ac->conv_db, ok, why, sev);
}

/* One step of the conversation in ac; on success fills reply. */
static int
sasl_step(cmd_t *c, auth_client_t *ac, const uint8_t *in, size_t len, bool as_string, bson_t *reply, terr_t *err)
{
	lookup_ctx_t lc;
	terr_t inner = TERR_INIT;
	char *out = NULL;
	size_t out_len = 0;
	bool done = false;

	lc.c = c;
	lc.db = ac->conv_db;
	lc.mech = auth_scram_mech(ac->conv);
	if (auth_scram_step(ac->conv, in, len, creds_lookup, &lc, &out, &out_len, &done, &inner) != 0) {
		/* mongod says nothing more to the client; the reason goes to the log */
		log_auth(c, ac, false, &inner);
		terr_clear(&inner);
		conv_end(ac);
		return terr_set(err, TERR_AUTHENTICATION_FAILED, "Authentication failed.");
	}
	if (done) {
		const char *user = auth_scram_user(ac->conv);
		if (ac->user != NULL && !(strcmp(ac->user, user) == 0 && strcmp(ac->db, ac->conv_db) == 0)) {
			/* mongod: one user per connection */
			if (strcmp(ac->db, ac->conv_db) == 0)
				terr_set(err, 5626701, "Each client connection may only be authenticated once. "
				    "Previously authenticated as: %s@%s", ac->user, ac->db);
			else
				terr_set(err, 5626702, "Client has attempted to authenticate on multiple databases."
				    "Already authenticated as: %s@%s", ac->user, ac->db);
			conv_end(ac);
			bson_free(out);
			return -1;
		}
		log_auth(c, ac, true, NULL);
		if (ac->user == NULL) {
			ac->user = bson_strdup(user);
			ac->db = bson_strdup(ac->conv_db);
			ac->resolved = false;
		}
		conv_end(ac);
	}
	append_reply(reply, done, out, out_len, as_string);
	if (out != NULL) {
		OPENSSL_cleanse(out, out_len);
		bson_free(out);
	}
	return 0;
}

/* saslStart proper (also the speculative one from hello).  db is the
 * authentication database. */
static int
sasl_start(cmd_t *c, const bson_t *body, const char *db, const char *cmdname, bson_t *reply, terr_t *err)
{
	auth_client_t *ac;
	bson_iter_t it, o;
	const char *mech_name;
	auth_mech_t mech;
	bool skip_empty = false, as_string;
	uint8_t *payload = NULL;
	size_t len;
	int ret;

	if (!bson_iter_init_find(&it, body, "mechanism"))
		return terr_set(err, 40414, "BSON field '%s.mechanism' is missing but a required field", cmdname);
	if (!BSON_ITER_HOLDS_UTF8(&it))
		return terr_set(err, TERR_TYPE_MISMATCH,
		    "BSON field '%s.mechanism' is the wrong type, expected type 'string'", cmdname);
	mech_name = bson_iter_utf8(&it, NULL);
	RET(get_payload(body, cmdname, &payload, &len, &as_string, err));
	if (bson_iter_init_find(&it, body, "options") && BSON_ITER_HOLDS_DOCUMENT(&it) &&
	    bson_iter_recurse(&it, &o) && bson_iter_find(&o, "skipEmptyExchange"))
		skip_empty = bson_iter_as_bool(&o);
	ac = auth_client_get(&c->client->auth);
	conv_end(ac);
	if (auth_mech_parse(mech_name, &mech) != 0 || strcmp(db, "$external") == 0) {
		bson_free(payload);
		return terr_set(err, TERR_MECHANISM_UNAVAILABLE,
		    "Received authentication for mechanism %s which is not enabled", mech_name);
	}
	ac->conv = auth_scram_new(mech, skip_empty);
	ac->conv_db = bson_strdup(db);
	ac->speculative = strcmp(cmdname, "saslStart") != 0;
	ret = sasl_step(c, ac, payload, len, as_string, reply, err);
	bson_free(payload);
	return ret;
}

CMD_HANDLER(cmd_sasl_start)
{
	return sasl_start(c, c->body, c->db, "saslStart", c->reply, err);
}

CMD_HANDLER(cmd_sasl_continue)
{
	auth_client_t *ac = auth_client_peek(&c->client->auth);
	bson_iter_t it;
	uint8_t *payload = NULL;
	size_t len;
	bool as_string;
	int ret;

	if (!bson_iter_init_find(&it, c->body, "conversationId"))
		return terr_set(err, 40414, "BSON field 'saslContinue.conversationId' is missing but a required field");
	if (!BSON_ITER_HOLDS_NUMBER(&it))
		return terr_set(err, TERR_TYPE_MISMATCH,
		    "BSON field 'saslContinue.conversationId' is the wrong type, expected type 'int'");
	RET(get_payload(c->body, "saslContinue", &payload, &len, &as_string, err));
	if (ac == NULL || ac->conv == NULL) {
		bson_free(payload);
		return terr_set(err, TERR_PROTOCOL_ERROR, "No SASL session state found");
	}
	if (bson_iter_as_int64(&it) != 1) {
		bson_free(payload);
		conv_end(ac);
		return terr_set(err, TERR_PROTOCOL_ERROR, "sasl: Mismatched conversation id");
	}
	if (strcmp(ac->conv_db, c->db) != 0) {
		bson_free(payload);
		conv_end(ac);
		return terr_set(err, TERR_PROTOCOL_ERROR,
		    "Attempt to switch database target during SASL authentication.");
	}
	ret = sasl_step(c, ac, payload, len, as_string, c->reply, err);
	bson_free(payload);
	return ret;
}

CMD_HANDLER(cmd_logout)
{
	auth_client_t *ac = auth_client_peek(&c->client->auth);

	if (ac == NULL)
		return 0;
	if (ac->user != NULL && strcmp(ac->db, c->db) == 0) {
		auth_client_logout(ac);
		c->client->lsid_seen_ms = INT64_MIN / 2;   /* sessions count for a user again only once checked */
	}
	conv_end(ac);
	return 0;
}

/*
 * The authenticate command as mongod 9.0's (MONGODB-X509 only; the
 * decision is auth_x509_authenticate's).  As mongod's, every failure but
 * 11 UserNotFound and 17 ProtocolError answers 18 "Authentication
 * failed." and the reason goes to the log line 20249 only.  The reply is
 * {dbname, user: the certificate's subject}; a member certificate logs the
 * connection in as __system@local.
 */
static int
x509_authenticate(cmd_t *c, const bson_t *body, const char *db, bool speculative, bson_t *reply, terr_t *err)
{
	const char *cmd = speculative ? "speculative X509 Authenticate" : "authenticate";
	const char *mech, *user = NULL;
	terr_t why = TERR_INIT;
	auth_x509_result_t r;
	auth_client_t *ac;
	bson_iter_t it;
	bool hide;

	if (!bson_iter_init_find(&it, body, "mechanism"))
		return terr_set(err, 40414, "BSON field '%s.mechanism' is missing but a required field", cmd);
	if (!BSON_ITER_HOLDS_UTF8(&it))
		return terr_set(err, TERR_TYPE_MISMATCH, "BSON field '%s.mechanism' is the wrong type, expected type 'string'",
		    cmd);
	mech = bson_iter_utf8(&it, NULL);
	if (bson_iter_init_find(&it, body, "user")) {
		if (!BSON_ITER_HOLDS_UTF8(&it))
			return terr_set(err, TERR_TYPE_MISMATCH,
			    "BSON field '%s.user' is the wrong type, expected type 'string'", cmd);
		user = bson_iter_utf8(&it, NULL);
	}
	if (strcmp(mech, "MONGODB-X509") != 0) {
		terr_set(&why, TERR_BAD_VALUE, mech[0] == '\0' ? "Auth mechanism not specified" : "Unsupported mechanism: %s",
		    mech);
		log_attempt(c, mech, speculative, user, db, false, &why, 'I');
		terr_clear(&why);
		return terr_set(err, TERR_AUTHENTICATION_FAILED, "Authentication failed.");
	}
	if (auth_x509_authenticate(&c->client->auth, &c->client->auth.x509, user, db, &r, &hide, &why) != 0) {
		log_attempt(c, mech, speculative, user != NULL ? user : c->client->auth.x509.subject, db, false, &why, 'I');
		if (!hide && (why.code == TERR_USER_NOT_FOUND || why.code == TERR_PROTOCOL_ERROR)) {
			*err = why;
			return -1;
		}
		terr_clear(&why);
		return terr_set(err, TERR_AUTHENTICATION_FAILED, "Authentication failed.");
	}
	ac = auth_client_get(&c->client->auth);
	if (ac->user != NULL && !(strcmp(ac->user, r.user) == 0 && strcmp(ac->db, r.db) == 0)) {
		/* mongod: one user per connection (its 5626701/5626702 become 18 here) */
		terr_set(&why, strcmp(ac->db, r.db) == 0 ? 5626701 : 5626702,
		    "Each client connection may only be authenticated once. Previously authenticated as: %s@%s", ac->user,
		    ac->db);
		log_attempt(c, mech, speculative, r.principal, db, false, &why, 'I');
		terr_clear(&why);
		auth_x509_result_clear(&r);
		return terr_set(err, TERR_AUTHENTICATION_FAILED, "Authentication failed.");
	}
	log_attempt(c, mech, speculative, r.principal, db, true, NULL, 'I');
	if (ac->user == NULL) {
		ac->user = r.user;
		ac->db = r.db;
		r.user = r.db = NULL;
		ac->resolved = false;
	}
	conv_end(ac);
	BSON_APPEND_UTF8(reply, "dbname", db);
	BSON_APPEND_UTF8(reply, "user", r.principal);
	auth_x509_result_clear(&r);
	return 0;
}

CMD_HANDLER(cmd_authenticate)
{
	/* mongod's AuthenticateCommand is strict: 40415 for anything else */
	static const char *const fields[] = {"mechanism", "user", NULL};

	RET(cmd_check_fields(c, fields, err));
	return x509_authenticate(c, c->body, c->db, false, c->reply, err);
}

static int
speculative_start(cmd_t *c, const bson_t *spec, bson_t *out)
{
	terr_t err = TERR_INIT;
	bson_iter_t it;
	const char *db;
	bson_t tmp;

	/* mongod's hello: MONGODB-X509 runs authenticate (db defaults to
	 * $external), anything else a saslStart */
	if (bson_iter_init_find(&it, spec, "mechanism") && BSON_ITER_HOLDS_UTF8(&it) &&
	    strcmp(bson_iter_utf8(&it, NULL), "MONGODB-X509") == 0) {
		db = "$external";
		if (bson_iter_init_find(&it, spec, "db")) {
			if (!BSON_ITER_HOLDS_UTF8(&it))
				return -1;
			db = bson_iter_utf8(&it, NULL);
		}
		bson_init(&tmp);
		if (x509_authenticate(c, spec, db, true, &tmp, &err) != 0) {
			terr_clear(&err);
			bson_destroy(&tmp);
			return -1;
		}
		bson_steal(out, &tmp);
		return 0;
	}
	if (!bson_iter_init_find(&it, spec, "db") || !BSON_ITER_HOLDS_UTF8(&it))
		return -1;
	db = bson_iter_utf8(&it, NULL);
	bson_init(&tmp);
	if (sasl_start(c, spec, db, "speculative saslStart", &tmp, &err) != 0) {
		terr_clear(&err);
		bson_destroy(&tmp);
		return -1;
	}
	bson_steal(out, &tmp);
	return 0;
}

void
cmd_hello_auth_append(cmd_t *c, bson_t *reply)
{
	bson_iter_t it;

	if (bson_iter_init_find(&it, c->body, "saslSupportedMechs") && BSON_ITER_HOLDS_UTF8(&it)) {
		const char *name = bson_iter_utf8(&it, NULL), *dot = strchr(name, '.');
		bool sha1 = true, sha256 = true;
		bson_t arr;

		if (dot != NULL && dot != name && dot[1] != '\0') {
			char *db = bson_strndup(name, (size_t)(dot - name));
			storage_session_t *s;
			terr_t err = TERR_INIT;
			bson_t doc;
			bson_iter_t cr;

			/* A user that exists gets its mechanisms; one that does not
			 * gets the default pair, so the reply never tells. */
			if ((s = client_session(c->client, &err)) != NULL &&
			    auth_store_get(c->engine->st, s, "system.users", db, dot + 1, &doc, &err) == 0) {
				bson_iter_t x;
				sha1 = sha256 = false;
				if (bson_iter_init_find(&cr, &doc, "credentials") && BSON_ITER_HOLDS_DOCUMENT(&cr)) {
					bson_iter_recurse(&cr, &x);
					while (bson_iter_next(&x)) {
						if (strcmp(bson_iter_key(&x), "SCRAM-SHA-1") == 0)
							sha1 = true;
						else if (strcmp(bson_iter_key(&x), "SCRAM-SHA-256") == 0)
							sha256 = true;
					}
				}
				bson_destroy(&doc);
			}
			terr_clear(&err);
			bson_free(db);
			BSON_APPEND_ARRAY_BEGIN(reply, "saslSupportedMechs", &arr);
			if (sha1)
				BSON_APPEND_UTF8(&arr, sha256 ? "0" : "0", "SCRAM-SHA-1");
			if (sha256)
				BSON_APPEND_UTF8(&arr, sha1 ? "1" : "0", "SCRAM-SHA-256");
			bson_append_array_end(reply, &arr);
		}
	}
	if (bson_iter_init_find(&it, c->body, "speculativeAuthenticate") && BSON_ITER_HOLDS_DOCUMENT(&it)) {
		const uint8_t *d;
		uint32_t l;
		bson_t spec, out;
		bson_iter_document(&it, &l, &d);
		if (bson_init_static(&spec, d, l) && speculative_start(c, &spec, &out) == 0) {
			BSON_APPEND_DOCUMENT(reply, "speculativeAuthenticate", &out);
			bson_destroy(&out);
		}
	}
}

/* ---- shared helpers for user/role commands ------------------------------------------- */

static storage_session_t *
session(cmd_t *c, terr_t *err)
{
	return client_session(c->client, err);
}

/* The command's first argument as a non-empty name. */
static int
name_arg(cmd_t *c, const char **out, terr_t *err)
{
	uint32_t len;

	if (!BSON_ITER_HOLDS_UTF8(&c->first))
		return terr_set(err, TERR_TYPE_MISMATCH, "BSON field '%s.%s' is the wrong type '%s', expected type 'string'",
		    c->name, c->name, bv_type_name(bson_iter_type(&c->first)));

	*out = bson_iter_utf8(&c->first, &len);
	if ((*out)[0] == '\0')
		return terr_set(err, TERR_BAD_VALUE, "%s name must not be empty",
		    strstr(c->name, "Role") || strstr(c->name, "role") ? "Role" : "User");
	if (strlen(*out) != len)
		return terr_set(err, TERR_BAD_VALUE, "%s names must not contain NULL characters",
		    strstr(c->name, "Role") || strstr(c->name, "role") ? "Role" : "User");
	return 0;
}

/* Every role of l must exist (built-in in its db, or stored). */
static int
roles_exist(cmd_t *c, const auth_rolelist_t *l, terr_t *err)
{
	storage_session_t *s = session(c, err);
	int i, r;

	if (s == NULL)
		return -1;
	for (i = 0; i < l->n; i++) {
		bson_t doc;
		if (auth_builtin_role_exists(l->role[i], l->db[i]))
			continue;
		r = auth_store_get(c->engine->st, s, "system.roles", l->db[i], l->role[i], &doc, err);
		if (r < 0)
			return -1;
		if (r == 1)
			return terr_set(err, TERR_ROLE_NOT_FOUND, "Could not find role: %s@%s", l->role[i], l->db[i]);
		bson_destroy(&doc);
	}
	return 0;
}

static int
mechs_parse(cmd_t *c, bool *sha1, bool *sha256, bool *given, terr_t *err)
{
	bson_iter_t it, el;

	*sha1 = *sha256 = true;
	*given = false;
	if (!bson_iter_init_find(&it, c->body, "mechanisms"))
		return 0;
	if (!BSON_ITER_HOLDS_ARRAY(&it))
		return terr_set(err, TERR_TYPE_MISMATCH,
		    "BSON field '%s.mechanisms' is the wrong type, expected type 'array'", c->name);
	*given = true;
	*sha1 = *sha256 = false;
	bson_iter_recurse(&it, &el);
	while (bson_iter_next(&el)) {
		auth_mech_t m;
		if (!BSON_ITER_HOLDS_UTF8(&el))
			return terr_set(err, TERR_TYPE_MISMATCH,
			    "BSON field '%s.mechanisms' is the wrong type, expected type 'string'", c->name);
		if (auth_mech_parse(bson_iter_utf8(&el, NULL), &m) != 0)
			return terr_set(err, TERR_BAD_VALUE, "Unknown auth mechanism '%s'", bson_iter_utf8(&el, NULL));
		if (m == AUTH_SCRAM_SHA1)
			*sha1 = true;
		else
			*sha256 = true;
	}
	if (!*sha1 && !*sha256)
		return terr_set(err, TERR_BAD_VALUE, "mechanisms field must not be empty");
	return 0;
}

/* credentials: {SCRAM-SHA-1: {...}, SCRAM-SHA-256: {...}} into parent. */
static int
append_credentials(cmd_t *c, bson_t *parent, const char *user, const char *pwd, bool sha1, bool sha256,
                   bool digest, terr_t *err)
{
	bson_t cr, m;
	int ret = 0;

	if (!digest && sha256)
		return terr_set(err, TERR_BAD_VALUE, "Use of SCRAM-SHA-256 requires undigested passwords");
	if (!digest)
		return terr_set(err, TERR_NOT_IMPLEMENTED, "digestPassword: false is not supported");
	BSON_APPEND_DOCUMENT_BEGIN(parent, "credentials", &cr);
	if (sha1) {
		BSON_APPEND_DOCUMENT_BEGIN(&cr, "SCRAM-SHA-1", &m);
		ret = auth_scram_make_creds(AUTH_SCRAM_SHA1, user, pwd, 0, NULL, 0, &m, err);
		bson_append_document_end(&cr, &m);
	}
	if (ret == 0 && sha256) {
		BSON_APPEND_DOCUMENT_BEGIN(&cr, "SCRAM-SHA-256", &m);
		ret = auth_scram_make_creds(AUTH_SCRAM_SHA256, user, pwd, 0, NULL, 0, &m, err);
		bson_append_document_end(&cr, &m);
	}
	bson_append_document_end(parent, &cr);
	return ret;
}

static int
get_pwd(cmd_t *c, const char **pwd, bool *found, terr_t *err)
{
	bson_iter_t it;

	*pwd = NULL;
	*found = false;
	if (!bson_iter_init_find(&it, c->body, "pwd"))
		return 0;
	if (!BSON_ITER_HOLDS_UTF8(&it))
		return terr_set(err, TERR_TYPE_MISMATCH,
		    "BSON field '%s.pwd' is the wrong type, expected type 'string'", c->name);
	*pwd = bson_iter_utf8(&it, NULL);
	*found = true;
	if ((*pwd)[0] == '\0')
		return terr_set(err, TERR_BAD_VALUE, "Password cannot be empty");
	return 0;
}

static void
append_uuid(bson_t *doc, const char *key)
{
	uint8_t u[16];

	if (RAND_bytes(u, sizeof(u)) != 1)
		memset(u, 0, sizeof(u));
	u[6] = (uint8_t)((u[6] & 0x0f) | 0x40);
	u[8] = (uint8_t)((u[8] & 0x3f) | 0x80);
	bson_append_binary(doc, key, -1, BSON_SUBTYPE_UUID, u, 16);
}

/* Copy every field of src except the names listed (NULL-terminated) into dst. */
static void
copy_except(const bson_t *src, bson_t *dst, const char *const *skip)
{
	bson_iter_t it;
	int i;

	bson_iter_init(&it, src);
	while (bson_iter_next(&it)) {
		bool drop = false;
		for (i = 0; skip[i] != NULL; i++)
			if (strcmp(bson_iter_key(&it), skip[i]) == 0)
				drop = true;
		if (!drop)
			bson_append_iter(dst, NULL, 0, &it);
	}
}

static int
roles_of(const bson_t *doc, const char *default_db, auth_rolelist_t *out)
{
	bson_iter_t it;
	terr_t ignore = TERR_INIT;

	if (bson_iter_init_find(&it, doc, "roles"))
		auth_rolelist_parse(&it, default_db, out, "roles", &ignore);
	terr_clear(&ignore);
	return 0;
}

static bool
str_eq_or_null(const char *a, const char *b)
{
	if (a == NULL || b == NULL)
		return a == b;
	return strcmp(a, b) == 0;
}

/* {forAllDBs: true} */
static bool
for_all_dbs(const bson_iter_t *it)
{
	bson_iter_t f;

	return BSON_ITER_HOLDS_DOCUMENT(it) && bson_iter_recurse(it, &f) && bson_iter_find(&f, "forAllDBs") &&
	    bson_iter_as_bool(&f);
}

/* ---- users ----------------------------------------------------------------------- */

static const char *const create_user_fields[] = {
	"pwd", "customData", "roles", "digestPassword", "writeConcern", "authenticationRestrictions",
	"mechanisms", NULL,
};

CMD_HANDLER(cmd_create_user)
{
	const char *user, *pwd;
	bool has_pwd, sha1, sha256, given, digest = true, found, external;
	auth_rolelist_t roles;
	bson_iter_t it;
	bson_t doc, cd;
	storage_session_t *s;
	char *id = NULL;
	int r, ret = 0;

	auth_rolelist_init(&roles);
	bson_init(&doc);
	ERR(cmd_check_fields(c, create_user_fields, err));
	ERR(name_arg(c, &user, err));
	external = strcmp(c->db, "$external") == 0;
	if (strcmp(c->db, "local") == 0)
		ERR(terr_set(err, TERR_BAD_VALUE, "Cannot create users in the local database"));
	ERR(get_pwd(c, &pwd, &has_pwd, err));
	if (!has_pwd && !external)
		ERR(terr_set(err, TERR_BAD_VALUE,
		    "Must provide a 'pwd' field for all user documents, except those with '$external' as the user's source db"));
	if (has_pwd && external)
		ERR(terr_set(err, TERR_BAD_VALUE, "Cannot set the password for users defined on the '$external' database"));
	ERR(cmd_get_bool(c, "digestPassword", &digest, &found, err));
	if (!found)
		digest = true;
	ERR(mechs_parse(c, &sha1, &sha256, &given, err));
	if (!bson_iter_init_find(&it, c->body, "roles"))
		ERR(terr_set(err, 40414, "BSON field 'createUser.roles' is missing but a required field"));
	ERR(auth_rolelist_parse(&it, c->db, &roles, "createUser.roles", err));
	if (bson_iter_init_find(&it, c->body, "customData") && !BSON_ITER_HOLDS_DOCUMENT(&it))
		ERR(terr_set(err, TERR_TYPE_MISMATCH,
		    "BSON field 'createUser.customData' is the wrong type, expected type 'object'"));
	if (bson_iter_init_find(&it, c->body, "authenticationRestrictions"))
		ERR(terr_set(err, TERR_NOT_IMPLEMENTED, "authenticationRestrictions are not supported"));
	/* mongod (enforceUserClusterSeparation): a subject the member rule
	 * would take for a member cannot be a user */
	if (external && auth_x509_subject_is_member(user))
		ERR(terr_set(err, TERR_BAD_VALUE, "Cannot create an x.509 user with a subjectname that would be "
		    "recognized as an internal cluster member"));
	ERR(roles_exist(c, &roles, err));

	id = bson_strdup_printf("%s.%s", c->db, user);
	BSON_APPEND_UTF8(&doc, "_id", id);
	append_uuid(&doc, "userId");
	BSON_APPEND_UTF8(&doc, "user", user);
	BSON_APPEND_UTF8(&doc, "db", c->db);
	if (external) {
		/* mongod's buildCredentials for $external: no secret, a marker */
		bson_t cr;
		BSON_APPEND_DOCUMENT_BEGIN(&doc, "credentials", &cr);
		BSON_APPEND_BOOL(&cr, "external", true);
		bson_append_document_end(&doc, &cr);
	} else {
		ERR(append_credentials(c, &doc, user, pwd, sha1, sha256, digest, err));
	}
	if (bson_iter_init_find(&it, c->body, "customData")) {
		const uint8_t *d;
		uint32_t l;
		bson_iter_document(&it, &l, &d);
		if (bson_init_static(&cd, d, l))
			BSON_APPEND_DOCUMENT(&doc, "customData", &cd);
	}
	auth_rolelist_append(&roles, &doc, "roles");
	if ((s = session(c, err)) == NULL)
		ERR(-1);
	r = auth_store_insert(c->engine->st, s, "system.users", &doc, err);
	if (r < 0)
		ERR(-1);
	if (r == 1)
		ERR(terr_set(err, TERR_USER_EXISTS, "User \"%s@%s\" already exists", user, c->db));
err:
	bson_free(id);
	bson_destroy(&doc);
	auth_rolelist_destroy(&roles);
	return ret;
}

static int
user_not_found(terr_t *err, const char *user, const char *db)
{
	return terr_set(err, TERR_USER_NOT_FOUND, "Could not find user \"%s\" for db \"%s\"", user, db);
}

static const char *const update_user_fields[] = {
	"pwd", "customData", "roles", "digestPassword", "writeConcern", "authenticationRestrictions",
	"mechanisms", NULL,
};

CMD_HANDLER(cmd_update_user)
{
	static const char *const keep_skip[] = {"credentials", "customData", "roles", NULL};
	const char *user, *pwd;
	bool has_pwd, sha1, sha256, given, digest = true, found, any = false;
	auth_rolelist_t roles;
	bson_iter_t it;
	bson_t old, doc;
	bool have_old = false;
	storage_session_t *s;
	int r, ret = 0;

	auth_rolelist_init(&roles);
	bson_init(&doc);
	ERR(cmd_check_fields(c, update_user_fields, err));
	ERR(name_arg(c, &user, err));
	ERR(get_pwd(c, &pwd, &has_pwd, err));
	ERR(cmd_get_bool(c, "digestPassword", &digest, &found, err));
	if (!found)
		digest = true;
	ERR(mechs_parse(c, &sha1, &sha256, &given, err));
	if (has_pwd && strcmp(c->db, "$external") == 0)
		ERR(terr_set(err, TERR_BAD_VALUE, "Cannot set the password for users defined on the '$external' database"));
	if (given && !has_pwd)
		ERR(terr_set(err, TERR_BAD_VALUE, "A pwd must be provided when specifying mechanisms"));
	if (bson_iter_init_find(&it, c->body, "roles")) {
		ERR(auth_rolelist_parse(&it, c->db, &roles, "updateUser.roles", err));
		ERR(roles_exist(c, &roles, err));
		any = true;
	}
	if (bson_iter_init_find(&it, c->body, "customData")) {
		if (!BSON_ITER_HOLDS_DOCUMENT(&it))
			ERR(terr_set(err, TERR_TYPE_MISMATCH,
			    "BSON field 'updateUser.customData' is the wrong type, expected type 'object'"));
		any = true;
	}
	if (bson_iter_init_find(&it, c->body, "authenticationRestrictions"))
		ERR(terr_set(err, TERR_NOT_IMPLEMENTED, "authenticationRestrictions are not supported"));
	if (!any && !has_pwd)
		ERR(terr_set(err, TERR_BAD_VALUE, "Must specify at least one field to update in updateUser"));
	if ((s = session(c, err)) == NULL)
		ERR(-1);
	r = auth_store_get(c->engine->st, s, "system.users", c->db, user, &old, err);
	if (r < 0)
		ERR(-1);
	if (r == 1)
		ERR(user_not_found(err, user, c->db));
	have_old = true;
	copy_except(&old, &doc, keep_skip);
	if (has_pwd) {
		if (!given && bson_iter_init_find(&it, &old, "credentials") && BSON_ITER_HOLDS_DOCUMENT(&it)) {
			bson_iter_t x;
			bson_iter_recurse(&it, &x);
			sha1 = sha256 = false;
			while (bson_iter_next(&x)) {
				sha1 |= strcmp(bson_iter_key(&x), "SCRAM-SHA-1") == 0;
				sha256 |= strcmp(bson_iter_key(&x), "SCRAM-SHA-256") == 0;
			}
			if (!sha1 && !sha256)
				sha1 = sha256 = true;
		}
		ERR(append_credentials(c, &doc, user, pwd, sha1, sha256, digest, err));
	} else if (bson_iter_init_find(&it, &old, "credentials")) {
		bson_append_iter(&doc, NULL, 0, &it);
	}
	if (bson_iter_init_find(&it, c->body, "customData") || bson_iter_init_find(&it, &old, "customData"))
		bson_append_iter(&doc, "customData", -1, &it);
	if (roles.n > 0 || bson_iter_init_find(&it, c->body, "roles"))
		auth_rolelist_append(&roles, &doc, "roles");
	else if (bson_iter_init_find(&it, &old, "roles"))
		bson_append_iter(&doc, NULL, 0, &it);
	r = auth_store_replace(c->engine->st, s, "system.users", &doc, err);
	if (r < 0)
		ERR(-1);
	if (r == 1)
		ERR(user_not_found(err, user, c->db));
err:
	if (have_old)
		bson_destroy(&old);
	bson_destroy(&doc);
	auth_rolelist_destroy(&roles);
	return ret;
}

static const char *const drop_user_fields[] = {"writeConcern", NULL};

CMD_HANDLER(cmd_drop_user)
{
	storage_session_t *s;
	const char *user;
	int r;

	RET(cmd_check_fields(c, drop_user_fields, err));
	RET(name_arg(c, &user, err));
	if ((s = session(c, err)) == NULL)
		return -1;
	r = auth_store_delete(c->engine->st, s, "system.users", c->db, user, err);
	if (r < 0)
		return -1;
	if (r == 1)
		return terr_set(err, TERR_USER_NOT_FOUND, "User '%s@%s' not found", user, c->db);
	return 0;
}

/* Delete every document of coll in db; *n counts them. */
static int
drop_all(cmd_t *c, const char *coll, int *n, terr_t *err)
{
	storage_session_t *s;
	bson_t *docs = NULL;
	int nd = 0, i, ret = 0;

	*n = 0;
	if ((s = session(c, err)) == NULL)
		return -1;
	RET(auth_store_list(c->engine->st, s, coll, c->db, &docs, &nd, err));
	for (i = 0; i < nd; i++) {
		bson_iter_t it;
		const char *name = NULL;
		if (bson_iter_init_find(&it, &docs[i], strcmp(coll, "system.users") == 0 ? "user" : "role") &&
		    BSON_ITER_HOLDS_UTF8(&it))
			name = bson_iter_utf8(&it, NULL);
		if (name != NULL && ret == 0) {
			int r = auth_store_delete(c->engine->st, s, coll, c->db, name, err);
			if (r < 0)
				ret = -1;
			else if (r == 0)
				(*n)++;
		}
	}
	for (i = 0; i < nd; i++)
		bson_destroy(&docs[i]);
	bson_free(docs);
	return ret;
}

CMD_HANDLER(cmd_drop_all_users_from_database)
{
	int n;

	RET(cmd_check_fields(c, drop_user_fields, err));
	RET(drop_all(c, "system.users", &n, err));
	BSON_APPEND_INT32(c->reply, "n", n);
	return 0;
}

/* Roles argument of grantRolesToUser & co.: required array. */
static int
roles_field(cmd_t *c, auth_rolelist_t *l, terr_t *err)
{
	bson_iter_t it;
	char field[128];

	snprintf(field, sizeof(field), "%s.roles", c->name);
	if (!bson_iter_init_find(&it, c->body, "roles"))
		return terr_set(err, 40414, "BSON field '%s' is missing but a required field", field);
	return auth_rolelist_parse(&it, c->db, l, field, err);
}

/* Grant (add) or revoke (remove) roles on a stored user or role. */
static int
change_roles(cmd_t *c, const char *coll, bool grant, terr_t *err)
{
	static const char *const fields[] = {"roles", "writeConcern", NULL};
	static const char *const skip[] = {"roles", NULL};
	auth_rolelist_t add, cur, next;
	storage_session_t *s;
	const char *name;
	bson_t old, doc;
	bool have_old = false, is_user = strcmp(coll, "system.users") == 0;
	int i, r, ret = 0;

	auth_rolelist_init(&add);
	auth_rolelist_init(&cur);
	auth_rolelist_init(&next);
	bson_init(&doc);
	ERR(cmd_check_fields(c, fields, err));
	ERR(name_arg(c, &name, err));
	ERR(roles_field(c, &add, err));
	if (grant)
		ERR(roles_exist(c, &add, err));
	if ((s = session(c, err)) == NULL)
		ERR(-1);
	r = auth_store_get(c->engine->st, s, coll, c->db, name, &old, err);
	if (r < 0)
		ERR(-1);
	if (r == 1) {
		if (is_user)
			ERR(user_not_found(err, name, c->db));
		ERR(terr_set(err, TERR_ROLE_NOT_FOUND, "Could not find role: %s@%s", name, c->db));
	}
	have_old = true;
	roles_of(&old, c->db, &cur);
	for (i = 0; i < cur.n; i++)
		if (grant || !auth_rolelist_has(&add, cur.role[i], cur.db[i]))
			auth_rolelist_add(&next, cur.role[i], cur.db[i]);
	if (grant) {
		for (i = 0; i < add.n; i++)
			auth_rolelist_add(&next, add.role[i], add.db[i]);
		if (!is_user) {
			/* a role may not end up inheriting from itself */
			auth_rolelist_t all;
			auth_privset_t ps;
			auth_rolelist_init(&all);
			auth_privset_init(&ps);
			r = auth_roles_resolve(c->engine->st, s, &add, &all, &ps, err);
			if (r == 0 && auth_rolelist_has(&all, name, c->db))
				r = terr_set(err, TERR_GRAPH_CONTAINS_CYCLE, "Cycle in dependency graph: %s@%s -> %s@%s",
				    name, c->db, name, c->db);
			auth_rolelist_destroy(&all);
			auth_privset_destroy(&ps);
			ERR(r);
		}
	}
	copy_except(&old, &doc, skip);
	auth_rolelist_append(&next, &doc, "roles");
	r = auth_store_replace(c->engine->st, s, coll, &doc, err);
	if (r < 0)
		ERR(-1);
err:
	if (have_old)
		bson_destroy(&old);
	bson_destroy(&doc);
	auth_rolelist_destroy(&add);
	auth_rolelist_destroy(&cur);
	auth_rolelist_destroy(&next);
	return ret;
}

CMD_HANDLER(cmd_grant_roles_to_user)
{
	return change_roles(c, "system.users", true, err);
}

CMD_HANDLER(cmd_revoke_roles_from_user)
{
	return change_roles(c, "system.users", false, err);
}

CMD_HANDLER(cmd_grant_roles_to_role)
{
	return change_roles(c, "system.roles", true, err);
}

CMD_HANDLER(cmd_revoke_roles_from_role)
{
	return change_roles(c, "system.roles", false, err);
}

/* One user for usersInfo. */
static int
append_user_info(cmd_t *c, bson_t *arr, int idx, const bson_t *doc, bool show_creds, bool show_privs,
                 bool show_custom, terr_t *err)
{
	const char *skip[3] = {NULL, NULL, NULL};
	int ns = 0;
	bson_t one, mechs;
	bson_iter_t it, x;
	char k[16];
	int n = 0;

	snprintf(k, sizeof(k), "%d", idx);
	bson_append_document_begin(arr, k, -1, &one);
	if (!show_creds)
		skip[ns++] = "credentials";
	if (!show_custom)
		skip[ns++] = "customData";
	copy_except(doc, &one, skip);
	BSON_APPEND_ARRAY_BEGIN(&one, "mechanisms", &mechs);
	if (bson_iter_init_find(&it, doc, "credentials") && BSON_ITER_HOLDS_DOCUMENT(&it)) {
		bson_iter_recurse(&it, &x);
		while (bson_iter_next(&x)) {
			/* $external users: mongod's "external" */
			if (strncmp(bson_iter_key(&x), "SCRAM-", 6) == 0 || strcmp(bson_iter_key(&x), "external") == 0) {
				char kk[16];
				snprintf(kk, sizeof(kk), "%d", n++);
				BSON_APPEND_UTF8(&mechs, kk, bson_iter_key(&x));
			}
		}
	}
	bson_append_array_end(&one, &mechs);
	if (show_privs) {
		auth_rolelist_t direct, all;
		auth_privset_t ps;
		storage_session_t *s = session(c, err);
		const char *db = "admin";
		int r;
		if (bson_iter_init_find(&it, doc, "db") && BSON_ITER_HOLDS_UTF8(&it))
			db = bson_iter_utf8(&it, NULL);
		auth_rolelist_init(&direct);
		auth_rolelist_init(&all);
		auth_privset_init(&ps);
		roles_of(doc, db, &direct);
		r = s ? auth_roles_resolve(c->engine->st, s, &direct, &all, &ps, err) : -1;
		if (r == 0) {
			auth_rolelist_append(&all, &one, "inheritedRoles");
			auth_privset_append(&ps, &one, "inheritedPrivileges");
		}
		auth_rolelist_destroy(&direct);
		auth_rolelist_destroy(&all);
		auth_privset_destroy(&ps);
		if (r != 0) {
			bson_append_document_end(arr, &one);
			return -1;
		}
	}
	bson_append_document_end(arr, &one);
	return 0;
}

static int
cmp_user_db(const void *a, const void *b)
{
	bson_iter_t x, y;
	const char *ua = "", *ub = "", *da = "", *db = "";
	int r;

	if (bson_iter_init_find(&x, a, "user") && BSON_ITER_HOLDS_UTF8(&x))
		ua = bson_iter_utf8(&x, NULL);
	if (bson_iter_init_find(&y, b, "user") && BSON_ITER_HOLDS_UTF8(&y))
		ub = bson_iter_utf8(&y, NULL);
	if ((r = strcmp(ua, ub)) != 0)
		return r;
	if (bson_iter_init_find(&x, a, "db") && BSON_ITER_HOLDS_UTF8(&x))
		da = bson_iter_utf8(&x, NULL);
	if (bson_iter_init_find(&y, b, "db") && BSON_ITER_HOLDS_UTF8(&y))
		db = bson_iter_utf8(&y, NULL);
	return strcmp(da, db);
}

static const char *const users_info_fields[] = {
	"showCredentials", "showPrivileges", "showAuthenticationRestrictions", "showCustomData", "filter", NULL,
};

/* Names {user, db} from one usersInfo element. */
static int
user_name_of(cmd_t *c, bson_iter_t *el, const char **u, const char **d, terr_t *err)
{
	*u = NULL;
	*d = c->db;
	if (BSON_ITER_HOLDS_UTF8(el)) {
		*u = bson_iter_utf8(el, NULL);
		return 0;
	}
	if (BSON_ITER_HOLDS_DOCUMENT(el)) {
		bson_iter_t sub;
		bson_iter_recurse(el, &sub);
		*d = NULL;
		while (bson_iter_next(&sub)) {
			if (strcmp(bson_iter_key(&sub), "user") == 0 && BSON_ITER_HOLDS_UTF8(&sub))
				*u = bson_iter_utf8(&sub, NULL);
			else if (strcmp(bson_iter_key(&sub), "db") == 0 && BSON_ITER_HOLDS_UTF8(&sub))
				*d = bson_iter_utf8(&sub, NULL);
		}
		if (*u != NULL && *d != NULL)
			return 0;
	}
	return terr_set(err, TERR_BAD_VALUE,
	    "User name must be either a string or an object of the form {user: \"userName\", db: \"databaseName\"}");
}

CMD_HANDLER(cmd_users_info)
{
	bool show_creds = false, show_privs = false, show_custom = true, found;
	storage_session_t *s;
	bson_t *docs = NULL, arr;
	bson_iter_t it;
	int nd = 0, i, out = 0, ret = 0;

	RET(cmd_check_fields(c, users_info_fields, err));
	RET(cmd_get_bool(c, "showCredentials", &show_creds, &found, err));
	RET(cmd_get_bool(c, "showPrivileges", &show_privs, &found, err));
	RET(cmd_get_bool(c, "showCustomData", &show_custom, &found, err));
	if (!found)
		show_custom = true;
	if (bson_iter_init_find(&it, c->body, "filter"))
		return terr_set(err, TERR_NOT_IMPLEMENTED, "usersInfo filter is not supported");
	if ((s = session(c, err)) == NULL)
		return -1;
	it = c->first;
	if (BSON_ITER_HOLDS_NUMBER(&it) || for_all_dbs(&it)) {
		bool all = BSON_ITER_HOLDS_DOCUMENT(&it);
		RET(auth_store_list(c->engine->st, s, "system.users", all ? NULL : c->db, &docs, &nd, err));
	} else {
		bson_iter_t el;
		bool single = !BSON_ITER_HOLDS_ARRAY(&it);
		if (!single)
			bson_iter_recurse(&it, &el);
		docs = tm_bson_array_new(64);
		while (single ? true : bson_iter_next(&el)) {
			const char *u, *d;
			bson_t doc;
			int r;
			if (user_name_of(c, single ? &it : &el, &u, &d, err) != 0)
				ERR(-1);
			r = auth_store_get(c->engine->st, s, "system.users", d, u, &doc, err);
			if (r < 0)
				ERR(-1);
			if (r == 0) {
				if (nd == 64) {
					bson_destroy(&doc);
					ERR(terr_set(err, TERR_BAD_VALUE, "usersInfo takes at most 64 names"));
				}
				bson_steal(&docs[nd++], &doc);
			}
			if (single)
				break;
		}
	}
	if (nd > 1)
		qsort(docs, (size_t)nd, sizeof(bson_t), cmp_user_db);
	BSON_APPEND_ARRAY_BEGIN(c->reply, "users", &arr);
	for (i = 0; i < nd && ret == 0; i++)
		ret = append_user_info(c, &arr, out++, &docs[i], show_creds, show_privs, show_custom, err);
	bson_append_array_end(c->reply, &arr);
err:
	for (i = 0; i < nd; i++)
		bson_destroy(&docs[i]);
	bson_free(docs);
	return ret;
}

/* ---- roles ----------------------------------------------------------------------------- */

/* Parse privileges (required array) into ps, checking the role-db rule. */
static int
privileges_field(cmd_t *c, bool required, auth_privset_t *ps, bool *found, terr_t *err)
{
	bson_iter_t it, el;
	int i;

	*found = false;
	if (!bson_iter_init_find(&it, c->body, "privileges")) {
		if (required)
			return terr_set(err, 40414, "BSON field '%s.privileges' is missing but a required field", c->name);
		return 0;
	}
	if (!BSON_ITER_HOLDS_ARRAY(&it))
		return terr_set(err, TERR_TYPE_MISMATCH,
		    "BSON field '%s.privileges' is the wrong type, expected type 'array'", c->name);
	*found = true;
	bson_iter_recurse(&it, &el);
	while (bson_iter_next(&el)) {
		const uint8_t *d;
		uint32_t l;
		bson_t pd;
		if (!BSON_ITER_HOLDS_DOCUMENT(&el))
			return terr_set(err, TERR_TYPE_MISMATCH,
			    "BSON field '%s.privileges' is the wrong type, expected type 'object'", c->name);
		bson_iter_document(&el, &l, &d);
		if (!bson_init_static(&pd, d, l))
			return terr_set(err, TERR_BAD_VALUE, "invalid privilege document");
		RET(auth_priv_parse(&pd, ps, err));
	}
	if (strcmp(c->db, "admin") != 0) {
		for (i = 0; i < ps->n; i++) {
			const auth_priv_t *p = &ps->v[i];
			if (!((p->kind == AUTH_RES_DB || p->kind == AUTH_RES_NS) && strcmp(p->db, c->db) == 0))
				return terr_set(err, TERR_BAD_VALUE,
				    "Roles on the '%s' database cannot be granted privileges that target other databases or the cluster",
				    c->db);
		}
	}
	return 0;
}

static int
role_name_check(cmd_t *c, const char *role, terr_t *err)
{
	if (auth_builtin_role_name(role))
		return terr_set(err, TERR_BAD_VALUE, "Cannot create roles with the same name as a built-in role");
	if (strchr(role, '@') != NULL)
		return terr_set(err, TERR_BAD_VALUE, "Role names cannot contain '@'");
	if (strcmp(c->db, "$external") == 0 || strcmp(c->db, "local") == 0)
		return terr_set(err, TERR_BAD_VALUE, "Cannot create roles in the %s database", c->db);
	return 0;
}

static const char *const create_role_fields[] = {
	"privileges", "roles", "writeConcern", "authenticationRestrictions", NULL,
};

CMD_HANDLER(cmd_create_role)
{
	auth_privset_t ps;
	auth_rolelist_t roles;
	storage_session_t *s;
	const char *role;
	bson_iter_t it;
	bson_t doc;
	char *id = NULL;
	bool found;
	int r, ret = 0;

	auth_privset_init(&ps);
	auth_rolelist_init(&roles);
	bson_init(&doc);
	ERR(cmd_check_fields(c, create_role_fields, err));
	ERR(name_arg(c, &role, err));
	ERR(role_name_check(c, role, err));
	ERR(privileges_field(c, true, &ps, &found, err));
	if (!bson_iter_init_find(&it, c->body, "roles"))
		ERR(terr_set(err, 40414, "BSON field 'createRole.roles' is missing but a required field"));
	ERR(auth_rolelist_parse(&it, c->db, &roles, "createRole.roles", err));
	ERR(roles_exist(c, &roles, err));
	if (bson_iter_init_find(&it, c->body, "authenticationRestrictions"))
		ERR(terr_set(err, TERR_NOT_IMPLEMENTED, "authenticationRestrictions are not supported"));
	id = bson_strdup_printf("%s.%s", c->db, role);
	BSON_APPEND_UTF8(&doc, "_id", id);
	BSON_APPEND_UTF8(&doc, "role", role);
	BSON_APPEND_UTF8(&doc, "db", c->db);
	auth_privset_append(&ps, &doc, "privileges");
	auth_rolelist_append(&roles, &doc, "roles");
	if ((s = session(c, err)) == NULL)
		ERR(-1);
	r = auth_store_insert(c->engine->st, s, "system.roles", &doc, err);
	if (r < 0)
		ERR(-1);
	if (r == 1)
		ERR(terr_set(err, TERR_ROLE_EXISTS, "Role \"%s@%s\" already exists", role, c->db));
err:
	bson_free(id);
	bson_destroy(&doc);
	auth_privset_destroy(&ps);
	auth_rolelist_destroy(&roles);
	return ret;
}

/* Load a stored role for change; RoleNotFound when missing. */
static int
load_role(cmd_t *c, storage_session_t *s, const char *role, bson_t *out, terr_t *err)
{
	int r = auth_store_get(c->engine->st, s, "system.roles", c->db, role, out, err);

	if (r < 0)
		return -1;
	if (r == 1) {
		if (auth_builtin_role_name(role))
			return terr_set(err, TERR_BAD_VALUE, "Cannot modify built-in role: %s@%s", role, c->db);
		return terr_set(err, TERR_ROLE_NOT_FOUND, "Could not find role: %s@%s", role, c->db);
	}
	return 0;
}

/* The privileges stored in a role document. */
static void
stored_privs(const bson_t *doc, auth_privset_t *ps)
{
	bson_iter_t it, el;
	terr_t ignore = TERR_INIT;

	if (bson_iter_init_find(&it, doc, "privileges") && BSON_ITER_HOLDS_ARRAY(&it) && bson_iter_recurse(&it, &el)) {
		while (bson_iter_next(&el)) {
			const uint8_t *d;
			uint32_t l;
			bson_t pd;
			if (!BSON_ITER_HOLDS_DOCUMENT(&el))
				continue;
			bson_iter_document(&el, &l, &d);
			if (bson_init_static(&pd, d, l))
				auth_priv_parse(&pd, ps, &ignore);
			terr_clear(&ignore);
		}
	}
}

static int
write_role(cmd_t *c, storage_session_t *s, const bson_t *old, const auth_privset_t *ps,
           const auth_rolelist_t *roles, terr_t *err)
{
	static const char *const skip[] = {"privileges", "roles", NULL};
	bson_t doc;
	int r;

	bson_init(&doc);
	copy_except(old, &doc, skip);
	auth_privset_append(ps, &doc, "privileges");
	auth_rolelist_append(roles, &doc, "roles");
	r = auth_store_replace(c->engine->st, s, "system.roles", &doc, err);
	bson_destroy(&doc);
	return r < 0 ? -1 : 0;
}

CMD_HANDLER(cmd_update_role)
{
	auth_privset_t ps;
	auth_rolelist_t roles;
	storage_session_t *s;
	const char *role;
	bson_iter_t it;
	bson_t old;
	bool have_old = false, has_privs, has_roles;
	int ret = 0;

	auth_privset_init(&ps);
	auth_rolelist_init(&roles);
	ERR(cmd_check_fields(c, create_role_fields, err));
	ERR(name_arg(c, &role, err));
	ERR(privileges_field(c, false, &ps, &has_privs, err));
	has_roles = bson_iter_init_find(&it, c->body, "roles");
	if (has_roles) {
		ERR(auth_rolelist_parse(&it, c->db, &roles, "updateRole.roles", err));
		ERR(roles_exist(c, &roles, err));
	}
	if (bson_iter_init_find(&it, c->body, "authenticationRestrictions"))
		ERR(terr_set(err, TERR_NOT_IMPLEMENTED, "authenticationRestrictions are not supported"));
	if (!has_privs && !has_roles)
		ERR(terr_set(err, TERR_BAD_VALUE, "Must specify at least one field to update in updateRole"));
	if ((s = session(c, err)) == NULL)
		ERR(-1);
	ERR(load_role(c, s, role, &old, err));
	have_old = true;
	if (!has_privs)
		stored_privs(&old, &ps);
	if (!has_roles)
		roles_of(&old, c->db, &roles);
	if (has_roles) {
		auth_rolelist_t all;
		auth_privset_t tmp;
		int r;
		auth_rolelist_init(&all);
		auth_privset_init(&tmp);
		r = auth_roles_resolve(c->engine->st, s, &roles, &all, &tmp, err);
		if (r == 0 && auth_rolelist_has(&all, role, c->db))
			r = terr_set(err, TERR_GRAPH_CONTAINS_CYCLE, "Cycle in dependency graph: %s@%s -> %s@%s",
			    role, c->db, role, c->db);
		auth_rolelist_destroy(&all);
		auth_privset_destroy(&tmp);
		ERR(r);
	}
	ERR(write_role(c, s, &old, &ps, &roles, err));
err:
	if (have_old)
		bson_destroy(&old);
	auth_privset_destroy(&ps);
	auth_rolelist_destroy(&roles);
	return ret;
}

static int
change_privileges(cmd_t *c, bool grant, terr_t *err)
{
	static const char *const fields[] = {"privileges", "writeConcern", NULL};
	auth_privset_t given, cur, next;
	auth_rolelist_t roles;
	storage_session_t *s;
	const char *role;
	bson_t old;
	bool have_old = false, found;
	int i, j, w, ret = 0;

	auth_privset_init(&given);
	auth_privset_init(&cur);
	auth_privset_init(&next);
	auth_rolelist_init(&roles);
	ERR(cmd_check_fields(c, fields, err));
	ERR(name_arg(c, &role, err));
	ERR(privileges_field(c, true, &given, &found, err));
	if ((s = session(c, err)) == NULL)
		ERR(-1);
	ERR(load_role(c, s, role, &old, err));
	have_old = true;
	stored_privs(&old, &cur);
	roles_of(&old, c->db, &roles);
	for (i = 0; i < cur.n; i++) {
		auth_actions_t a = cur.v[i].actions;
		if (!grant) {
			for (j = 0; j < given.n; j++) {
				const auth_priv_t *g = &given.v[j];
				if (g->kind == cur.v[i].kind && str_eq_or_null(g->db, cur.v[i].db) &&
				    str_eq_or_null(g->coll, cur.v[i].coll))
					for (w = 0; w < AUTH_ACTION_WORDS; w++)
						a.w[w] &= ~g->actions.w[w];
			}
			if (a.w[0] == 0 && a.w[1] == 0)
				continue;
		}
		auth_privset_add(&next, cur.v[i].kind, cur.v[i].db, cur.v[i].coll, &a);
	}
	if (grant)
		for (i = 0; i < given.n; i++)
			auth_privset_add(&next, given.v[i].kind, given.v[i].db, given.v[i].coll, &given.v[i].actions);
	ERR(write_role(c, s, &old, &next, &roles, err));
err:
	if (have_old)
		bson_destroy(&old);
	auth_privset_destroy(&given);
	auth_privset_destroy(&cur);
	auth_privset_destroy(&next);
	auth_rolelist_destroy(&roles);
	return ret;
}

CMD_HANDLER(cmd_grant_privileges_to_role)
{
	return change_privileges(c, true, err);
}

CMD_HANDLER(cmd_revoke_privileges_from_role)
{
	return change_privileges(c, false, err);
}

/* Remove role@db from the roles array of every user and role that names it. */
static int
remove_role_references(cmd_t *c, storage_session_t *s, const char *role, const char *db, terr_t *err)
{
	static const char *const colls[] = {"system.users", "system.roles"};
	static const char *const skip[] = {"roles", NULL};
	int k, i, ret = 0;

	for (k = 0; k < 2 && ret == 0; k++) {
		bson_t *docs = NULL;
		int nd = 0;
		RET(auth_store_list(c->engine->st, s, colls[k], NULL, &docs, &nd, err));
		for (i = 0; i < nd; i++) {
			auth_rolelist_t cur, next;
			bson_iter_t it;
			const char *owner_db = c->db;
			int j;
			if (bson_iter_init_find(&it, &docs[i], "db") && BSON_ITER_HOLDS_UTF8(&it))
				owner_db = bson_iter_utf8(&it, NULL);
			auth_rolelist_init(&cur);
			auth_rolelist_init(&next);
			roles_of(&docs[i], owner_db, &cur);
			if (ret == 0 && auth_rolelist_has(&cur, role, db)) {
				bson_t doc;
				for (j = 0; j < cur.n; j++)
					if (!(strcmp(cur.role[j], role) == 0 && strcmp(cur.db[j], db) == 0))
						auth_rolelist_add(&next, cur.role[j], cur.db[j]);
				bson_init(&doc);
				copy_except(&docs[i], &doc, skip);
				auth_rolelist_append(&next, &doc, "roles");
				if (auth_store_replace(c->engine->st, s, colls[k], &doc, err) < 0)
					ret = -1;
				bson_destroy(&doc);
			}
			auth_rolelist_destroy(&cur);
			auth_rolelist_destroy(&next);
		}
		for (i = 0; i < nd; i++)
			bson_destroy(&docs[i]);
		bson_free(docs);
	}
	return ret;
}

CMD_HANDLER(cmd_drop_role)
{
	storage_session_t *s;
	const char *role;
	bson_t old;
	int r;

	RET(cmd_check_fields(c, drop_user_fields, err));
	RET(name_arg(c, &role, err));
	if ((s = session(c, err)) == NULL)
		return -1;
	RET(load_role(c, s, role, &old, err));
	bson_destroy(&old);
	RET(remove_role_references(c, s, role, c->db, err));
	r = auth_store_delete(c->engine->st, s, "system.roles", c->db, role, err);
	if (r < 0)
		return -1;
	if (r == 1)
		return terr_set(err, TERR_ROLE_NOT_FOUND, "Could not find role: %s@%s", role, c->db);
	return 0;
}

CMD_HANDLER(cmd_drop_all_roles_from_database)
{
	storage_session_t *s;
	bson_t *docs = NULL;
	int nd = 0, i, n, ret = 0;

	RET(cmd_check_fields(c, drop_user_fields, err));
	if ((s = session(c, err)) == NULL)
		return -1;
	RET(auth_store_list(c->engine->st, s, "system.roles", c->db, &docs, &nd, err));
	for (i = 0; i < nd && ret == 0; i++) {
		bson_iter_t it;
		if (bson_iter_init_find(&it, &docs[i], "role") && BSON_ITER_HOLDS_UTF8(&it))
			ret = remove_role_references(c, s, bson_iter_utf8(&it, NULL), c->db, err);
	}
	for (i = 0; i < nd; i++)
		bson_destroy(&docs[i]);
	bson_free(docs);
	RET(ret);
	RET(drop_all(c, "system.roles", &n, err));
	BSON_APPEND_INT32(c->reply, "n", n);
	return 0;
}

/* One role for rolesInfo (built-in or stored). */
static int
append_role_info(cmd_t *c, storage_session_t *s, bson_t *arr, int idx, const char *role, const char *db,
                 const bson_t *stored, bool show_privs, terr_t *err)
{
	auth_rolelist_t direct, all, inherited;
	auth_privset_t own, ps;
	bson_t one;
	char k[16];
	int i, ret = 0;

	auth_rolelist_init(&direct);
	auth_rolelist_init(&all);
	auth_rolelist_init(&inherited);
	auth_privset_init(&own);
	auth_privset_init(&ps);
	if (stored != NULL) {
		roles_of(stored, db, &direct);
		stored_privs(stored, &own);
	} else {
		auth_builtin_role_privs(role, db, &own);
		auth_builtin_role_subroles(role, db, &direct);
	}
	ERR(auth_roles_resolve(c->engine->st, s, &direct, &all, &ps, err));
	for (i = 0; i < own.n; i++)
		auth_privset_add(&ps, own.v[i].kind, own.v[i].db, own.v[i].coll, &own.v[i].actions);
	for (i = 0; i < all.n; i++)
		auth_rolelist_add(&inherited, all.role[i], all.db[i]);
	snprintf(k, sizeof(k), "%d", idx);
	bson_append_document_begin(arr, k, -1, &one);
	if (stored != NULL) {
		char *id = bson_strdup_printf("%s.%s", db, role);
		BSON_APPEND_UTF8(&one, "_id", id);
		bson_free(id);
	}
	BSON_APPEND_UTF8(&one, "role", role);
	BSON_APPEND_UTF8(&one, "db", db);
	if (show_privs)
		auth_privset_append(&own, &one, "privileges");
	auth_rolelist_append(&direct, &one, "roles");
	BSON_APPEND_BOOL(&one, "isBuiltin", stored == NULL);
	auth_rolelist_append(&inherited, &one, "inheritedRoles");
	if (show_privs)
		auth_privset_append(&ps, &one, "inheritedPrivileges");
	bson_append_document_end(arr, &one);
err:
	auth_rolelist_destroy(&direct);
	auth_rolelist_destroy(&all);
	auth_rolelist_destroy(&inherited);
	auth_privset_destroy(&own);
	auth_privset_destroy(&ps);
	return ret;
}

static const char *const roles_info_fields[] = {
	"showPrivileges", "showBuiltinRoles", "showAuthenticationRestrictions", NULL,
};

static const char *const builtin_names[] = {
	"read", "readWrite", "dbAdmin", "dbOwner", "userAdmin", "clusterAdmin", "clusterManager", "clusterMonitor",
	"hostManager", "readAnyDatabase", "readWriteAnyDatabase", "userAdminAnyDatabase", "dbAdminAnyDatabase",
	"backup", "restore", "root", NULL,
};

CMD_HANDLER(cmd_roles_info)
{
	bool show_privs = false, show_builtin = false, found;
	storage_session_t *s;
	bson_t arr;
	bson_iter_t it;
	int out = 0, i, ret = 0;

	RET(cmd_check_fields(c, roles_info_fields, err));
	it = c->first;
	if (bson_iter_init_find(&it, c->body, "showPrivileges")) {
		if (BSON_ITER_HOLDS_UTF8(&it) && strcmp(bson_iter_utf8(&it, NULL), "asUserFragment") == 0)
			return terr_set(err, TERR_NOT_IMPLEMENTED, "showPrivileges: \"asUserFragment\" is not supported");
		show_privs = bson_iter_as_bool(&it);
	}
	RET(cmd_get_bool(c, "showBuiltinRoles", &show_builtin, &found, err));
	if ((s = session(c, err)) == NULL)
		return -1;
	BSON_APPEND_ARRAY_BEGIN(c->reply, "roles", &arr);
	it = c->first;
	if (BSON_ITER_HOLDS_NUMBER(&it)) {
		bson_t *docs = NULL;
		int nd = 0;
		if (show_builtin)
			for (i = 0; builtin_names[i] != NULL && ret == 0; i++)
				if (auth_builtin_role_exists(builtin_names[i], c->db))
					ret = append_role_info(c, s, &arr, out++, builtin_names[i], c->db, NULL, show_privs, err);
		if (ret == 0 && auth_store_list(c->engine->st, s, "system.roles", c->db, &docs, &nd, err) != 0)
			ret = -1;
		for (i = 0; i < nd; i++) {
			bson_iter_t r;
			if (ret == 0 && bson_iter_init_find(&r, &docs[i], "role") && BSON_ITER_HOLDS_UTF8(&r))
				ret = append_role_info(c, s, &arr, out++, bson_iter_utf8(&r, NULL), c->db, &docs[i],
				    show_privs, err);
			bson_destroy(&docs[i]);
		}
		bson_free(docs);
	} else {
		bool single = !BSON_ITER_HOLDS_ARRAY(&it);
		bson_iter_t el;
		if (!single)
			bson_iter_recurse(&it, &el);
		while (ret == 0 && (single || bson_iter_next(&el))) {
			bson_iter_t *e = single ? &it : &el, sub;
			const char *r = NULL, *d = c->db;
			bson_t doc;
			int g;
			if (BSON_ITER_HOLDS_UTF8(e)) {
				r = bson_iter_utf8(e, NULL);
			} else if (BSON_ITER_HOLDS_DOCUMENT(e)) {
				bson_iter_recurse(e, &sub);
				d = NULL;
				while (bson_iter_next(&sub)) {
					if (strcmp(bson_iter_key(&sub), "role") == 0 && BSON_ITER_HOLDS_UTF8(&sub))
						r = bson_iter_utf8(&sub, NULL);
					else if (strcmp(bson_iter_key(&sub), "db") == 0 && BSON_ITER_HOLDS_UTF8(&sub))
						d = bson_iter_utf8(&sub, NULL);
				}
			}
			if (r == NULL || d == NULL) {
				ret = terr_set(err, TERR_BAD_VALUE,
				    "Role name must be either a string or an object of the form {role: \"roleName\", db: \"databaseName\"}");
				break;
			}
			if (auth_builtin_role_exists(r, d)) {
				ret = append_role_info(c, s, &arr, out++, r, d, NULL, show_privs, err);
			} else {
				g = auth_store_get(c->engine->st, s, "system.roles", d, r, &doc, err);
				if (g < 0)
					ret = -1;
				else if (g == 0) {
					ret = append_role_info(c, s, &arr, out++, r, d, &doc, show_privs, err);
					bson_destroy(&doc);
				}
			}
			if (single)
				break;
		}
	}
	bson_append_array_end(c->reply, &arr);
	return ret;
}

/* ---- auth/ seen from the command layer ------------------------------------------------ */

bool
engine_auth_enabled(const engine_t *e)
{
	return e != NULL && e->opts.auth;
}

static storage_session_t *
conn_session(void *arg, terr_t *err)
{
	return client_session(arg, err);
}

void
cmd_auth_conn_init(client_t *c)
{
	c->auth.key = c;
	c->auth.has_state = &c->has_auth;
	c->auth.enabled = engine_auth_enabled(c->engine);
	c->auth.is_local = c->is_local;
	c->auth.st = c->engine != NULL ? c->engine->st : NULL;
	c->auth.session = conn_session;
	c->auth.session_arg = c;
}

int
cmd_auth_check(cmd_t *c, const cmd_def_t *def, terr_t *err)
{
	auth_ctx_t x;

	if (!c->client->auth.enabled)
		return 0;
	/* an unknown command runs nothing: the dispatcher answers 59 */
	if (def == NULL || (def->flags & CMDF_NO_AUTH))
		return 0;
	memset(&x, 0, sizeof(x));
	x.conn = &c->client->auth;
	x.name = def->name;
	x.db = c->db;
	x.body = c->body;
	return auth_check_command(&x, err);
}
