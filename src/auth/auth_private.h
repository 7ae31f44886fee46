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

#endif
