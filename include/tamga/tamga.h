/*
 * tamga.h -- the embedded API of Tamga, a MongoDB-compatible document database.
 *
 * Link with libtamga (pkg-config --cflags --libs tamga).  A data folder is
 * opened once per process; the handle is thread-safe and may be shared by any
 * number of threads.  Everything is done with command documents, exactly the
 * ones a MongoDB driver sends ({insert: "c", documents: [...]},
 * {find: "c", filter: {...}}, {getMore: id, collection: "c"}, ...), and the
 * replies are the documents mongod returns.
 */
#ifndef TAMGA_TAMGA_H
#define TAMGA_TAMGA_H

#include <bson/bson.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tamga tamga_t;

typedef struct {
	int code;           /* MongoDB's error code (2 BadValue, 11000 DuplicateKey, ...); 0 = none */
	char message[504];  /* NUL-terminated, truncated when longer */
} tamga_error_t;

/*
 * Open (and recover) the data folder at path.  options is NULL or a
 * comma-separated list:
 *   create            create the folder when it does not exist
 *   cache_size=256M   WiredTiger cache size (default 256M)
 *   in_memory         keep everything in memory (tests)
 *   replSet=NAME      run as the primary of a single-member replica set
 *                     NAME: multi-document transactions and retryable
 *                     writes (lsid + txnNumber), as tamgad --replSet
 *   enableTestCommands  the test-only commands (configureFailPoint,
 *                     refreshLogicalSessionCacheNow), as tamgad's
 *                     --setParameter enableTestCommands=1
 * Errors: 29 NonExistentPath (folder missing), 98 DBPathInUse (another
 * process has it open), 2 BadValue (unknown option).  On success *db is
 * owned by the caller until tamga_close().
 */
int tamga_open(const char *path, const char *options, tamga_t **db, tamga_error_t *err);

/*
 * Run one command against database dbname.  reply is always initialised
 * (bson_init) by this call and must be destroyed by the caller with
 * bson_destroy, even when the command failed.  Returns 0 when the reply has
 * ok: 1; otherwise fills err (may be NULL) and reply holds {ok: 0, errmsg,
 * code, codeName}.  Write commands that partially fail return 0 with
 * writeErrors in the reply, as mongod does.
 */
int tamga_run_command(tamga_t *db, const char *dbname, const bson_t *command,
                      bson_t *reply, tamga_error_t *err);

/* Checkpoint and close.  No call may be in flight. NULL is accepted. */
void tamga_close(tamga_t *db);

/* The MongoDB version whose behaviour we follow and our own version. */
const char *tamga_mongodb_version(void);
const char *tamga_version(void);

#ifdef __cplusplus
}
#endif
#endif
