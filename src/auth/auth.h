/*
 * auth.h -- authentication and authorization: SCRAM-SHA-1/SCRAM-SHA-256
 * conversations, users in admin.system.users, roles (built-in and custom, in
 * admin.system.roles), and the privilege check every command passes through
 * when the engine was opened with auth on (--auth).
 *
 * What it is not: the network (TLS lives in server/tls.h), the handshake
 * (hello is cmd_admin.c; it calls auth_hello_append here), or the command
 * handlers' own argument parsing (cmd_auth.c holds the user/role commands).
 *
 * State per client (the authenticated user, a SASL conversation in flight,
 * the resolved privileges) lives in a table inside this module keyed by the
 * client pointer; the owner of client_t must call auth_client_forget() from
 * client_free so a later client at the same address starts clean.
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

#include "commands/commands.h"
#include "common/error.h"

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
 * SASLprep (RFC 4013) as SCRAM-SHA-256 needs it.  ASCII is handled exactly
 * (control characters are prohibited); non-ASCII spaces map to U+0020, the
 * "mapped to nothing" characters are removed, other code points are kept as
 * sent (correct for text already in NFKC form, which is what clients send
 * after their own SASLprep).  Invalid UTF-8 and prohibited characters fail
 * with 2 BadValue.  *out is a new string (bson_free).
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
 * the mechanism, non-zero otherwise (creds left uninitialised). */
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
 * neither timing nor message shows whether the user exists.
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

/* ---- per-client state ------------------------------------------------------ */

/* Forget everything about a client (its user, conversation, cache).  Call
 * from client_free.  Safe for clients this module never saw. */
void auth_client_forget(client_t *cl);

/* Auth on for this engine (engine_options_t.auth). */
bool auth_enabled(const engine_t *e);

/* The client's authenticated user, or false when there is none. user/db
 * are copied into the caller's buffers (NUL-terminated, truncated). */
bool auth_client_user(client_t *cl, char *user, size_t ulen, char *db, size_t dlen);

/* ---- privilege checks ------------------------------------------------------ */

/*
 * The dispatcher's check, before the handler runs.  Returns 0 when auth is
 * off, when def is NULL (an unknown command: the dispatcher answers 59),
 * when def has CMDF_NO_AUTH, or when the client's users hold every
 * privilege the command needs (table in auth_check.c: command -> actions on
 * a resource; a command missing from that table is refused).  Otherwise -1
 * with 13 Unauthorized: "Command <name> requires authentication" for a
 * client that has not authenticated, or "not authorized on <db> to execute
 * command { <the command as mongod prints it> }".  The localhost exception
 * (auth on, no user and no role stored, a loopback client) lets createUser
 * and createRole on admin through and nothing else.
 */
int auth_check_command(cmd_t *c, const cmd_def_t *def, terr_t *err);

/* connectionStatus's authInfo fields, appended to auth_info (initialised by
 * the caller): authenticatedUsers [{user, db}], authenticatedUserRoles
 * [{role, db}], and with show_privileges authenticatedUserPrivileges. */
int auth_connection_status(cmd_t *c, bool show_privileges, bson_t *auth_info, terr_t *err);

/*
 * For hello/isMaster: when the hello document has saslSupportedMechs
 * ("db.user") append saslSupportedMechs: [...] for a user that exists
 * (nothing for one that does not, as mongod); when it has
 * speculativeAuthenticate ({saslStart: 1, mechanism, payload, db}) run the
 * first SASL step and append speculativeAuthenticate: {conversationId,
 * done, payload} -- on any failure nothing is appended, as mongod.  Never
 * fails the hello.
 */
void auth_hello_append(cmd_t *c, bson_t *reply);

/* The same speculative step alone: returns 0 and fills out (initialised
 * here) with the saslStart reply to embed; -1 when nothing is to be
 * embedded (out untouched). */
int auth_speculative_start(cmd_t *c, const bson_t *spec, bson_t *out);

/* Whether the client may see database db in listDatabases when it lacks
 * the listDatabases action (mongod's authorizedDatabases filtering): true
 * when auth is off or the client holds any privilege on db. */
bool auth_db_visible(cmd_t *c, const char *db);

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
