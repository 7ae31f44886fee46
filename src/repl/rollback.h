/*
 * rollback.h -- mongod's rollback for a member of a set of several machines
 * (issue 24): a deposed primary whose oplog holds entries the set's Raft log
 * never committed (written locally, then it lost its leadership before a
 * majority took them) undoes them before it applies the set's entries.
 *
 * How (mongod's "rollback via refetch", since WiredTiger 3.2 cannot recover
 * logged tables to a timestamp: rollback_to_stable skips them, and every
 * Tamga table is logged):
 *   1. the common point is the newest entry of the set's log this member
 *      holds (the applier knows it: the entry before the first one it
 *      cannot place); every local entry after it is rolled back;
 *   2. the documents those entries touched (by collection and _id; inserts,
 *      updates, deletes, the operations of an applyOps, a session's
 *      config.transactions row) are looked up here: the inserted and updated
 *      ones are saved, as they are now, to
 *      <dbpath>/rollback/<collection uuid>/removed.<YYYY-MM-DDTHH-MM-SS>.<n>.bson
 *      (mongod's RemoveSaver: concatenated BSON documents);
 *   3. each one is fetched from the sync source (the Raft leader, over the
 *      wire protocol) and written back as the source has it (or removed when
 *      the source has none), and the local oplog entries after the common
 *      point are removed: one storage transaction, journalled;
 *   4. WiredTiger's timestamps go back to the common point
 *      (repl_oplog_rollback_reset), so the set's entries after it can be
 *      written with their own timestamps.
 * The refetched documents are the source's at the time of the fetch, newer
 * than the common point: until the member has applied the set's log up to
 * the source's optime of that moment (*min_valid, mongod's minValid) an
 * update of a missing document is not an error (repl/oplog_apply.h).
 *
 * Not rolled back: DDL (a create, drop, index build ... among the entries
 * to undo: the documents are still saved to the files, then the run fails
 * with 127 UnrecoverableRollbackError and changes nothing; the applier then
 * copies the data again, repl/initial_sync.h), transactions of several
 * oplog entries (127 before anything is saved).
 * Caps: at most REPL_ROLLBACK_MAX_DOCS documents.
 */
#ifndef TAMGA_REPL_ROLLBACK_H
#define TAMGA_REPL_ROLLBACK_H

#include <stdbool.h>
#include <stdint.h>
#include <bson/bson.h>

#include "common/error.h"
#include "storage/storage.h"
#include "repl/oplog.h"

#define REPL_ROLLBACK_MAX_DOCS 1000000

/*
 * Does this member hold an entry after `common` other than `next` (the
 * set's next entry)?  1 yes (*own: its ts), 0 no, -1 with err.  Leaves no
 * transaction open on s.
 */
int repl_rollback_needed(repl_oplog_t *op, storage_session_t *s, repl_ts_t common, repl_ts_t next, repl_ts_t *own,
                         terr_t *err);
/* The same, next_t being the term (`t`) of the set's entry at next (-1:
 * any): a local entry at next of another term is not the set's (a forced
 * reconfig's other history, src/repl/README.md) and counts as this
 * member's own. */
int repl_rollback_needed_t(repl_oplog_t *op, storage_session_t *s, repl_ts_t common, repl_ts_t next, int64_t next_t,
                           repl_ts_t *own, terr_t *err);

typedef struct repl_rollback_args {
	storage_t *st;
	repl_oplog_t *oplog;
	storage_session_t *s;         /* no transaction open */
	repl_ts_t common;             /* the common point */
	const char *source;           /* "host:port" of the member to refetch from */
	const char *dbpath;           /* the rollback folder goes under it */
} repl_rollback_args_t;

typedef struct repl_rollback_stats {
	int64_t entries;              /* local entries removed */
	int64_t docs;                 /* documents refetched */
	int64_t saved;                /* documents written to rollback files */
	repl_ts_t min_valid;          /* the source's optime at the fetch */
} repl_rollback_stats_t;

/*
 * Roll back every local entry after a->common (see above).  0 with *out,
 * or -1 with err: 6 HostUnreachable (the source did not answer, or refused
 * with a transient code: try again later), 127 UnrecoverableRollbackError
 * (an entry that cannot be undone, another refusal of the source),
 * storage's errors.  Nothing is changed on an error before step 3; step 3
 * is one transaction.  Files written in step 2 stay.
 */
int repl_rollback_run(const repl_rollback_args_t *a, repl_rollback_stats_t *out, terr_t *err);

/*
 * Step 1 alone, changing nothing: the documents a rollback to common would
 * refetch, as out (initialised, the caller destroys it) = an array of {ns,
 * _id, save}, in the entries' order, each once: the documents of inserts,
 * updates and deletes (save: the local version goes to a rollback file),
 * config.transactions {_id: lsid} of each entry with session info, and
 * config.tamga_retry_replies {_id: lsid} of each kept reply's no-op note
 * (repl/retryable.h).  0, or -1 with err (127 as repl_rollback_run).
 */
int repl_rollback_plan(repl_oplog_t *op, storage_session_t *s, repl_ts_t common, bson_t *out, terr_t *err);

/*
 * Documents of entries undone elsewhere (repl/member_rejoin.h: a removed
 * member's Raft log tail) saved as step 2 above does: one
 * <dbpath>/rollback/<uuid>/removed.<time>.<n>.bson per collection,
 * concatenated BSON.  _add: 0 or -1 with err (the folder or file cannot be
 * written; 127 past 256 collections); _free closes (fsync'd: -1 with err
 * when that fails), NULL is fine.
 */
typedef struct repl_rollback_saver repl_rollback_saver_t;
repl_rollback_saver_t *repl_rollback_saver_new(const char *dbpath);
int repl_rollback_saver_add(repl_rollback_saver_t *sv, const uint8_t uuid[16], const bson_t *doc, terr_t *err);
int repl_rollback_saver_free(repl_rollback_saver_t *sv, terr_t *err);

/*
 * The rollback id (mongod's replSetGetRBID): {_id: "rollbackId",
 * rollbackId: N} in local.system.rollback.id, created with 1 the first time
 * it is read; each rollback adds 1 (past INT32_MAX: 0), so a reader that
 * sees it change knows this member rolled back in between.  bump false:
 * read it into *out; true: add 1 first.  Writes are local, never logged;
 * s has no transaction open (none is left open).  -1 with storage's err.
 */
int repl_rollback_id(storage_t *st, storage_session_t *s, bool bump, int32_t *out, terr_t *err);

#endif
