/*
 * auth_private.h -- what auth_*.c and cmd_auth.c share and nobody else sees:
 * action sets, privileges and their resources, role resolution, the stored
 * user/role documents, and the per-client state table.
 */
#ifndef TAMGA_AUTH_AUTH_PRIVATE_H
#define TAMGA_AUTH_AUTH_PRIVATE_H

#include "auth/auth.h"
#include "commands/commands_private.h"

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

/* Does ps allow action on the database resource db / the collection
 * db.coll / the cluster?  (MongoDB's matching: a database privilege covers
 * the database and its non-system collections; anyNormal covers every
 * non-system collection and every database.) */
bool auth_privset_allows_db(const auth_privset_t *ps, const char *db, int action);
bool auth_privset_allows_ns(const auth_privset_t *ps, const char *db, const char *coll, int action);
bool auth_privset_allows_cluster(const auth_privset_t *ps, int action);
/* Any privilege at all that touches db (for listDatabases filtering). */
bool auth_privset_touches_db(const auth_privset_t *ps, const char *db);

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
/* How many built-in privilege rows name an action missing from the
 * action table (0 when the tables agree; for tests). */
int auth_builtin_roles_check(void);
/* Whether the privilege table (auth_check.c) has a row for a command name. */
bool auth_command_known(const char *name);
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
/* Any user or role stored at all (the localhost exception ends with the first). */
bool auth_store_any(storage_t *st, storage_session_t *s);

/* Bumped by every change to users or roles; clients re-resolve. */
void auth_generation_bump(void);
uint64_t auth_generation(void);

/* ---- per-client state (auth_users.c) ---------------------------------------- */

typedef struct auth_client {
	client_t *cl;
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

/* The state of cl, created on first use.  Used only by cl's thread. */
auth_client_t *auth_client_get(client_t *cl);
/* The state of cl or NULL when it has none yet (never allocates). */
auth_client_t *auth_client_peek(client_t *cl);
/* Forget the authenticated user (logout) and cached privileges. */
void auth_client_logout(auth_client_t *ac);
/* Make sure ac->privs / ac->roles reflect the stored user (re-read when the
 * generation moved).  A user that was dropped is logged out. */
int auth_client_resolve(cmd_t *c, auth_client_t *ac, terr_t *err);

#endif
