/*
 * auth.h -- authentication and authorization: SCRAM-SHA-1/SCRAM-SHA-256
 * conversations, users in admin.system.users, roles (built-in and custom, in
 * admin.system.roles), and the privilege check every command passes through
 * when the engine was opened with auth on (--auth).
 *
 * The layer sits below commands/ (DESIGN.md): it never sees the command
 * layer's engine, client or command structs.  The caller describes the
 * connection and the command in an auth_conn_t / auth_ctx_t (below), and
 * passes in what only it knows (the connection's storage session) as a
 * callback.
 *
 * What it is not: the network (TLS lives in server/tls.h), the handshake
 * and the command handlers (commands/cmd_auth.c: saslStart, saslContinue,
 * hello's speculative step, the user/role commands, which use the store,
 * role and privilege helpers declared here).
 *
 * State per connection (the authenticated user, a SASL conversation in
 * flight, the resolved privileges) lives in a table inside this module
 * keyed by auth_conn_t.key; the owner of the connection must call
 * auth_client_forget() when it ends so a later connection with the same
 * key starts clean.
 *
 * Errors are mongod's: 18 AuthenticationFailed "Authentication failed." for
 * every failed SASL step (wrong password, unknown user, bad proof, malformed
 * payload, wrong nonce) -- the client cannot tell which; 17 ProtocolError for
 * a saslContinue without a conversation ("No SASL session state found") or a
 * wrong conversationId; 334 MechanismUnavailable for an unknown mechanism;
 * 13 Unauthorized for a command the client's users may not run.
 */
#ifndef TAMGA_AUTH_AUTH_H
#define TAMGA_AUTH_AUTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <bson/bson.h>

#include "common/error.h"
#include "storage/storage.h"

#define TERR_MECHANISM_UNAVAILABLE 334

/* ---- SCRAM (RFC 5802 / RFC 7677) ----------------------------------------- */

typedef enum auth_mech {
	AUTH_SCRAM_SHA1 = 0,
	AUTH_SCRAM_SHA256 = 1,
} auth_mech_t;

/* "SCRAM-SHA-1" / "SCRAM-SHA-256"; auth_mech_parse returns -1 for others. */
const char *auth_mech_name(auth_mech_t m);
int auth_mech_parse(const char *name, auth_mech_t *out);

/* mongod's default iteration counts: 10000 (SHA-1), 15000 (SHA-256). */
int auth_mech_default_iterations(auth_mech_t m);

/*
 * SASLprep (RFC 4013, the RFC 3454 stringprep profile) as SCRAM-SHA-256
 * needs it and mongod's icuSaslPrep does it, on ICU's usprep: B.1 mapped to
 * nothing, non-ASCII spaces to U+0020, NFKC ("\u2163" becomes "IV"), then
 * prohibited output, the bidirectional rule and unassigned code points
 * refused.  Errors as mongod: 2 BadValue "Non UTF-8 data encountered",
 * 2 BadValue "Unable to normalize input string".  *out is a new string
 * (bson_free).
 */
int auth_saslprep(const char *in, char **out, terr_t *err);

/*
 * The credentials document mongod stores for a mechanism:
 * {iterationCount, salt (base64), storedKey (base64), serverKey (base64)}.
 * For SHA-1 the SCRAM password is hex(md5("<user>:mongo:<pwd>")); for
 * SHA-256 it is SASLprep(pwd).  salt NULL = random (16 bytes for SHA-1,
 * 28 for SHA-256, as mongod); iterations 0 = the default.  out must be
 * initialised; fields are appended.
 */
int auth_scram_make_creds(auth_mech_t m, const char *user, const char *pwd, int iterations,
                          const uint8_t *salt, size_t salt_len, bson_t *out, terr_t *err);

/* The server side of one SCRAM conversation. */
typedef struct auth_scram auth_scram_t;

/* Looks up the credentials ({iterationCount, salt, storedKey, serverKey})
 * of user for the conversation's mechanism.  Returns 0 and fills creds
 * (initialised by the callee) when the user exists with credentials for
 * the mechanism; AUTH_CREDS_NO_MECH when the user exists without any for
 * it; any other value when there is no such user (creds left
 * uninitialised but for 0). */
#define AUTH_CREDS_NO_MECH 2
typedef int (*auth_creds_lookup_fn)(void *ctx, const char *user, bson_t *creds);

/* skip_empty: the client sent options: {skipEmptyExchange: true}, so step 2
 * already answers done: true. */
auth_scram_t *auth_scram_new(auth_mech_t m, bool skip_empty);
void auth_scram_free(auth_scram_t *s);

/*
 * Feed the next client message.  Step 1 (client-first) produces the
 * server-first message, step 2 (client-final) the server-final one (v=...),
 * and sets *done when skip_empty; otherwise a third call with an empty
 * message gives an empty reply with *done.  *out (bson_malloc,
 * NUL-terminated, *out_len bytes) is the reply payload.  Any failure returns
 * -1 with err set to mongod's internal reason (the caller turns it into 18).
 * An unknown user still runs the full PBKDF2/HMAC work with a fake salt so
 * neither timing nor message shows whether the user exists.  A user that
 * exists without credentials for the mechanism fails step 1 with 334
 * MechanismUnavailable "Unable to use SCRAM-SHA-256 based authentication
 * for user without any SCRAM-SHA-256 credentials registered" (mongod's
 * reason, which it logs; the client sees 18, and a speculative hello gets
 * no speculativeAuthenticate, so the driver falls back).
 */
int auth_scram_step(auth_scram_t *s, const uint8_t *in, size_t in_len,
                    auth_creds_lookup_fn lookup, void *ctx,
                    char **out, size_t *out_len, bool *done, terr_t *err);
/* The (decoded) user name from client-first, or NULL before step 1. */
const char *auth_scram_user(const auth_scram_t *s);
auth_mech_t auth_scram_mech(const auth_scram_t *s);
/* True once step 2 verified the proof. */
bool auth_scram_succeeded(const auth_scram_t *s);

/* Base64 helpers (standard alphabet, padded).  decode returns -1 on bad input. */
char *auth_b64_encode(const uint8_t *data, size_t len);
int auth_b64_decode(const char *text, size_t text_len, uint8_t **out, size_t *out_len);

/* ---- the connection and the command, as the caller describes them ------- */

/*
 * A connection.  key is its identity (the per-connection state table is
 * keyed by it; commands/ passes its client_t pointer).  has_state points
 * at a flag the caller keeps with the connection, false at first: this
 * module sets it when it creates state for key, so looking up or
 * forgetting a connection that never authenticated takes no lock.
 * session returns the connection's storage session (borrowed, valid while
 * the connection lives; NULL with err set on failure).
 */
/* What the connection's TLS layer verified, set once after the handshake
 * (commands' client_set_peer_x509): the subject (auth_x509_name_string) of
 * a client certificate that verified, and whether it is a member
 * certificate (auth_x509.h).  The subject is owned by the connection. */
typedef struct auth_x509_peer {
	char *subject;      /* NULL: no TLS, no certificate, or one that did not verify */
	bool member;
} auth_x509_peer_t;

typedef struct auth_conn {
	const void *key;
	bool *has_state;
	bool enabled;                 /* the engine runs with auth on (--auth) */
	bool is_local;                /* a loopback peer: the localhost exception applies */
	storage_t *st;                /* where admin.system.users / admin.system.roles live */
	storage_session_t *(*session)(void *arg, terr_t *err);
	void *session_arg;
	auth_x509_peer_t x509;        /* the verified client certificate (MONGODB-X509) */
} auth_conn_t;

/* A command on a connection: name is its canonical name (the privilege
 * table's key), db the database it runs on, body the whole command.  All
 * borrowed for the call.  No view definition is needed: as on mongod, a
 * view is a namespace like a collection to whoever reads it (find on the
 * view), and what its definition reads is checked when it is defined
 * (create, collMod), from the command's own arguments. */
typedef struct auth_ctx {
	const auth_conn_t *conn;
	const char *name;
	const char *db;
	const bson_t *body;
} auth_ctx_t;

/* ---- actions (MongoDB's names; auth_privs.c has the list) ---------------- */

#define AUTH_ACTION_WORDS 2
typedef struct auth_actions {
	uint64_t w[AUTH_ACTION_WORDS];
} auth_actions_t;

/* Index of an action name, or -1. */
int auth_action_index(const char *name);
const char *auth_action_name(int idx);
int auth_action_count(void);
void auth_actions_add(auth_actions_t *a, int idx);
bool auth_actions_has(const auth_actions_t *a, int idx);
/* Add every name of a space-separated list; -1 when a name is unknown. */
int auth_actions_add_list(auth_actions_t *a, const char *names);

/* ---- resources and privileges -------------------------------------------- */

typedef enum auth_res_kind {
	AUTH_RES_ANY = 0,        /* {anyResource: true} */
	AUTH_RES_CLUSTER,        /* {cluster: true} */
	AUTH_RES_ANY_NORMAL,     /* {db: "", collection: ""} */
	AUTH_RES_DB,             /* {db: "d", collection: ""} */
	AUTH_RES_COLL_ANY_DB,    /* {db: "", collection: "c"} */
	AUTH_RES_NS,             /* {db: "d", collection: "c"} */
} auth_res_kind_t;

typedef struct auth_priv {
	auth_res_kind_t kind;
	char *db;                /* AUTH_RES_DB / AUTH_RES_NS */
	char *coll;              /* AUTH_RES_COLL_ANY_DB / AUTH_RES_NS */
	auth_actions_t actions;
} auth_priv_t;

typedef struct auth_privset {
	auth_priv_t *v;
	int n, cap;
} auth_privset_t;

void auth_privset_init(auth_privset_t *ps);
void auth_privset_destroy(auth_privset_t *ps);
/* Merge one privilege in (same resource: actions are or-ed); copies strings. */
void auth_privset_add(auth_privset_t *ps, auth_res_kind_t kind, const char *db, const char *coll,
                      const auth_actions_t *actions);


/* Parse a privilege document {resource: {...}, actions: [...]} as
 * createRole takes it (mongod's messages, 2 BadValue / 9 FailedToParse). */
int auth_priv_parse(const bson_t *doc, auth_privset_t *into, terr_t *err);
/* Append ps as mongod shows privileges: [{resource: {...}, actions: [...]}]. */
void auth_privset_append(const auth_privset_t *ps, bson_t *array_parent, const char *key);

/* ---- roles ------------------------------------------------------------------- */

/* Whether role@db names a built-in role (some exist only in admin). */
bool auth_builtin_role_exists(const char *role, const char *db);
/* Add a built-in role's privileges; false when it is not one. */
bool auth_builtin_role_privs(const char *role, const char *db, auth_privset_t *into);
struct auth_rolelist;
/* Add the roles a built-in role inherits (dbOwner: readWrite, dbAdmin,
 * userAdmin; root: clusterAdmin, ...); false when it is not one. */
bool auth_builtin_role_subroles(const char *role, const char *db, struct auth_rolelist *into);
/* Whether a role name is reserved by a built-in role in any database. */
bool auth_builtin_role_name(const char *role);

/* A role name list ({role, db} pairs, owned strings). */
typedef struct auth_rolelist {
	char **role;
	char **db;
	int n, cap;
} auth_rolelist_t;

void auth_rolelist_init(auth_rolelist_t *l);
void auth_rolelist_destroy(auth_rolelist_t *l);
bool auth_rolelist_has(const auth_rolelist_t *l, const char *role, const char *db);
void auth_rolelist_add(auth_rolelist_t *l, const char *role, const char *db);
/* Append [{role, db}, ...] as key under parent. */
void auth_rolelist_append(const auth_rolelist_t *l, bson_t *parent, const char *key);

/*
 * Parse a roles array as the user/role commands take it: each element a
 * role name (string, in default_db) or {role, db}.  Errors as mongod:
 * 2 BadValue / 14 TypeMismatch.  Does not check that the roles exist.
 */
int auth_rolelist_parse(const bson_iter_t *array_it, const char *default_db, auth_rolelist_t *out,
                        const char *field, terr_t *err);

/*
 * Resolve roles (direct) into every inherited role (including the direct
 * ones) and the union of their privileges, reading custom roles from
 * admin.system.roles through s.  Missing roles are skipped (mongod drops
 * them silently for users).  all_roles may be NULL.
 */
int auth_roles_resolve(storage_t *st, storage_session_t *s, const auth_rolelist_t *direct,
                       auth_rolelist_t *all_roles, auth_privset_t *privs, terr_t *err);

/* ---- stored documents (auth_users.c) --------------------------------------- */

/* Read admin.system.users / admin.system.roles by _id "<db>.<name>": 0 and
 * a copy in *out (initialised here) when found, 1 when not, -1 on error. */
int auth_store_get(storage_t *st, storage_session_t *s, const char *coll, const char *db,
                   const char *name, bson_t *out, terr_t *err);
/* Insert a new document (id "<db>.<name>"); 1 when it exists already. */
int auth_store_insert(storage_t *st, storage_session_t *s, const char *coll, const bson_t *doc, terr_t *err);
/* Replace the document with doc's _id; 1 when it does not exist. */
int auth_store_replace(storage_t *st, storage_session_t *s, const char *coll, const bson_t *doc, terr_t *err);
/* Delete by _id; 1 when it does not exist. */
int auth_store_delete(storage_t *st, storage_session_t *s, const char *coll, const char *db,
                      const char *name, terr_t *err);
/* Every document of coll (copies, in _id order when sorted) matching db
 * (NULL = all); caller destroys each and frees the array. */
int auth_store_list(storage_t *st, storage_session_t *s, const char *coll, const char *db,
                    bson_t **docs, int *n, terr_t *err);

/* ---- per-client state (auth_users.c) ---------------------------------------- */

typedef struct auth_client {
	const void *key;              /* auth_conn_t.key */
	char *user, *db;              /* authenticated, or NULL */
	auth_scram_t *conv;           /* SASL conversation in flight */
	char *conv_db;
	bool speculative;             /* the conversation began in hello */
	uint64_t gen;                 /* generation privs were resolved at */
	bool resolved;
	auth_privset_t privs;
	auth_rolelist_t roles;        /* direct roles of the user */
	struct auth_client *next;
} auth_client_t;

/* The state of the connection, created on first use (and *conn->has_state
 * set).  Used only by the connection's own thread. */
auth_client_t *auth_client_get(const auth_conn_t *conn);
/* The state of the connection or NULL when it has none yet (never allocates). */
auth_client_t *auth_client_peek(const auth_conn_t *conn);
/* Forget the authenticated user (logout) and cached privileges. */
void auth_client_logout(auth_client_t *ac);
/* Make sure ac->privs / ac->roles reflect the stored user (re-read when the
 * generation moved).  A user that was dropped is logged out. */
int auth_client_resolve(const auth_conn_t *conn, auth_client_t *ac, terr_t *err);

/* Forget everything about a connection (its user, conversation, cache)
 * and clear *has_state.  Safe for connections this module never saw. */
void auth_client_forget(const void *key, bool *has_state);

/* The connection's authenticated user, or false when there is none.
 * user/db are copied into the caller's buffers (NUL-terminated, truncated). */
bool auth_client_user(const auth_conn_t *conn, char *user, size_t ulen, char *db, size_t dlen);

/* ---- privilege checks ------------------------------------------------------ */

/*
 * The dispatcher's check, before the handler runs (the caller skips the
 * commands it runs without a check).  Returns 0 when auth is off or when
 * the connection's user holds every privilege the command needs (table in auth_check.c: command -> actions on
 * a resource; a command missing from that table is refused).  Otherwise -1
 * with 13 Unauthorized: "Command <name> requires authentication" for a
 * client that has not authenticated, or "not authorized on <db> to execute
 * command { <the command as mongod prints it> }".  The localhost exception
 * (auth on, no user and no role stored, a loopback client) lets createUser
 * and createRole on admin through and nothing else.
 */
int auth_check_command(const auth_ctx_t *x, terr_t *err);

/* connectionStatus's authInfo fields, appended to auth_info (initialised by
 * the caller): authenticatedUsers [{user, db}], authenticatedUserRoles
 * [{role, db}], and with show_privileges authenticatedUserPrivileges. */
int auth_connection_status(const auth_conn_t *conn, bool show_privileges, bson_t *auth_info, terr_t *err);

/*
 * listDatabases' authorizedDatabases as mongod reads it: *filter true when
 * only the databases the connection holds a privilege on are listed
 * (auth_db_visible).  Absent (authorized_databases NULL): filtered unless
 * the user has the listDatabases action; true: filtered; false: all, and
 * without the action 13 "Insufficient permissions to list all databases".
 * Auth off: never filtered.  -1 with err set on failure.
 */
int auth_list_databases_filter(const auth_conn_t *conn, const bool *authorized_databases, bool *filter, terr_t *err);
/* Whether the connection holds any privilege on database db (true when
 * auth is off; false without a user, the localhost exception included). */
bool auth_db_visible(const auth_conn_t *conn, const char *db);

/* Make every client re-read its user and roles before its next command.
 * The user/role commands do this themselves; the write path calls it
 * after any other write to admin.system.users or admin.system.roles (an
 * insert/update/delete/drop by a root user), as mongod's op observer does. */
void auth_invalidate_cache(void);

/* mongod's BSONObj::toString rendering ({ a: 1, b: "x", lsid: { id: UUID("...") } }),
 * as used in "not authorized ... to execute command" messages, with
 * createUser/updateUser's pwd shown as "xxx" (mongod's snipForLogging) and
 * output past 1 MB cut with "...".  bson_free. */
char *auth_render_bson(const bson_t *doc);

#endif
