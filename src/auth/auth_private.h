/*
 * auth_private.h -- what the auth/ files share and nobody else sees: the
 * privilege matching rules, the consistency checks of the built-in tables,
 * the localhost exception's test and the generation counter behind
 * privilege caching.  (The unit tests include it to test the corners.)
 */
#ifndef TAMGA_AUTH_AUTH_PRIVATE_H
#define TAMGA_AUTH_AUTH_PRIVATE_H

#include "auth/auth.h"

/* Does ps allow action on the database resource db / the collection
 * db.coll / the cluster?  (MongoDB's matching: a database privilege covers
 * the database and its non-system collections; anyNormal covers every
 * non-system collection and every database.) */
bool auth_privset_allows_db(const auth_privset_t *ps, const char *db, int action);
bool auth_privset_allows_ns(const auth_privset_t *ps, const char *db, const char *coll, int action);
bool auth_privset_allows_cluster(const auth_privset_t *ps, int action);
/* Any privilege at all that touches db (for listDatabases filtering). */
bool auth_privset_touches_db(const auth_privset_t *ps, const char *db);

/* How many built-in privilege rows name an action missing from the
 * action table (0 when the tables agree; for tests). */
int auth_builtin_roles_check(void);
/* Whether the privilege table (auth_check.c) has a row for a command name. */
bool auth_command_known(const char *name);

/* Any user or role stored at all (the localhost exception ends with the first). */
bool auth_store_any(storage_t *st, storage_session_t *s);

/* Bumped by every change to users or roles; clients re-resolve. */
void auth_generation_bump(void);
uint64_t auth_generation(void);

/* ---- what a command reads and writes (auth_ns.c) --------------------------- */

/* One resource a command touches and the actions it needs there: a
 * namespace (db, coll) or the cluster (db, coll NULL). */
typedef struct auth_ns {
	auth_res_kind_t kind;          /* AUTH_RES_NS or AUTH_RES_CLUSTER */
	char *db, *coll;               /* owned */
	auth_actions_t actions;
} auth_ns_t;

/* A list of them; refused: the arguments nest or repeat past the bounds of
 * auth_ns.c (the check then refuses the command). */
typedef struct auth_nslist {
	auth_ns_t *v;
	int n, cap;
	bool refused;
	/* the authenticated user asking (borrowed; NULL: none known): a
	 * $listSessions / $listLocalSessions naming only this user's own
	 * sessions needs no cluster action (mongod's
	 * listSessionsRequiredPrivileges) */
	const char *self_user, *self_db;
} auth_nslist_t;

void auth_nslist_init(auth_nslist_t *l);
void auth_nslist_destroy(auth_nslist_t *l);
/* Append (copies the strings); actions is a space-separated list of
 * MongoDB's action names. */
/* A whole-database (AUTH_RES_DB, db) or every-normal-namespace
 * (AUTH_RES_ANY_NORMAL) resource, as mongod's isAuthorizedForActionsOnResource
 * on such a pattern: granted by a privilege on that pattern or a wider one. */
bool auth_privset_allows_pattern(const auth_privset_t *ps, int kind, const char *db, int action);
void auth_nslist_add(auth_nslist_t *l, auth_res_kind_t kind, const char *db, const char *coll, const char *actions);

/*
 * THE walk: append to out every namespace an aggregation of db.source
 * (source NULL: {aggregate: 1}) with the stages of pipeline (an iterator
 * on the array; NULL: no pipeline) reads or writes, at any depth ($lookup /
 * $graphLookup `from` in both forms, $unionWith, the sub-pipelines of
 * $lookup / $unionWith / $facet, $out / $merge targets with their write
 * actions and bypassDocumentValidation when bypass), and the cluster
 * actions of $currentOp / $listSessions.  The source needs find unless the
 * pipeline starts with $collStats / $indexStats (their own action).  Keys
 * that appear twice contribute every value.  Borrowed arguments only.
 */
void auth_pipeline_namespaces(auth_nslist_t *out, const char *db, const char *source, const bson_iter_t *pipeline,
                              bool bypass);
/* An aggregate command body on db: auth_pipeline_namespaces of each of its
 * `pipeline` fields over its first element's collection. */
void auth_aggregate_namespaces(auth_nslist_t *out, const char *db, const bson_t *body);
/* A view definition in a create or collMod body on db: the namespaces an
 * aggregation of each `viewOn` with each `pipeline` reads (mongod's
 * checkAuthForCreateOrModifyView). */
void auth_view_namespaces(auth_nslist_t *out, const char *db, const bson_t *body);
/* Whether ps holds every action of every entry (false when l is refused). */
bool auth_nslist_allowed(const auth_nslist_t *l, const auth_privset_t *ps);
/* Whether any occurrence of field in body is true (a duplicate field counts). */
bool auth_body_any_true(const bson_t *body, const char *field);

/* auth_scram.c: mongod's icuX509DNPrep, ICU's RFC 4518 LDAP stringprep
 * profile (the one mongod opens: its mapping to space and to nothing, NFKC,
 * the prohibited tables; no case folding, no collapsing of spaces) on n
 * bytes of UTF-8 (NUL bytes included).  0 with *out (bson_free,
 * NUL-terminated) and *outlen bytes; -1 with err (invalid UTF-8, a
 * prohibited code point: mongod's normalizeStrings fails then). */
int auth_x509_dnprep(const unsigned char *in, size_t n, char **out, size_t *outlen, terr_t *err);

#endif
