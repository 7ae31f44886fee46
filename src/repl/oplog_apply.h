/*
 * oplog_apply.h -- a secondary's oplog application: one entry written by the
 * primary (mongod's format, repl/oplog.h) applied to this member's data and
 * written to its own oplog with the primary's ts, in one storage
 * transaction where the entry allows it; or a run of consecutive CRUD
 * entries in one storage transaction (repl_oplog_apply_run).
 *
 * Idempotent as mongod's application is: an entry whose ts is already in
 * the local oplog is skipped; an insert of an _id that exists replaces the
 * document; a delete of a missing document, a create of an existing
 * collection, a drop of a missing one do nothing.
 *
 * Kinds: 'n'; 'i'; 'u' ($v: 2 diffs, replacements); 'd'; 'c' with create,
 * drop, dropDatabase, renameCollection, createIndexes, commitIndexBuild
 * (startIndexBuild and abortIndexBuild do nothing: the index is built at
 * the commit), dropIndexes, collMod (options as logged) and applyOps (each
 * operation in the entry's one transaction).  Anything else fails (238):
 * the member stops applying rather than diverge silently.
 */
#ifndef TAMGA_REPL_OPLOG_APPLY_H
#define TAMGA_REPL_OPLOG_APPLY_H

#include <stdbool.h>
#include <bson/bson.h>

#include "common/error.h"
#include "storage/storage.h"
#include "repl/oplog.h"

/* Apply entry through s (no transaction open).  *applied false when it was
 * already in the local oplog.  after_ts (may be NULL: no check) is the ts
 * of the previous entry of the set's log: a local entry after it that is
 * not this one was never replicated (a deposed primary's) and fails the
 * call with 238 (a rollback is needed, not built) rather than let the
 * member diverge.  sync: the commit waits for the journal (everything
 * applied before it is durable too).  0, or -1 with err. */
int repl_oplog_apply_entry(repl_oplog_t *op, storage_t *st, storage_session_t *s, const bson_t *entry,
                           const repl_ts_t *after_ts, bool sync, bool *applied, terr_t *err);

/*
 * A transaction of several entries (repl/oplog.h: partialTxn entries linked
 * by prevOpTime, then the commit entry with `count`): repl_oplog_apply_entry
 * holds each partialTxn entry (a copy, this thread's; *applied false) and
 * applies the whole chain at its commit entry, in one storage transaction
 * that also writes every entry of the chain (each with its ts, the writes
 * at the last one's), so a member never shows part of a transaction; a
 * commit entry whose chain is not held in full (links, count) fails with
 * 238.  A partialTxn entry that does not follow the held one, an ordinary
 * entry, or an entry already in the oplog drops what was held (a
 * transaction whose commit never came is never applied, as on mongod).
 * _reset frees what this thread holds (call before the thread ends);
 * _held says how many entries it holds.
 */
void repl_oplog_apply_chain_reset(void);
int repl_oplog_apply_chain_held(void);

/*
 * Make the storage catalog's views of db (storage_view_*) what
 * db.system.views holds, as mongod reloads its view catalog after a write
 * to it: a definition gone is dropped, a new or changed one is set.  A
 * document that is not a view definition ({_id: "<db>.<name>", viewOn:
 * string, pipeline: array[, collation: document]}) or a name a collection
 * holds is left out.  s must have no transaction open; it has none after.
 * Called after an applied entry that wrote to system.views and by initial
 * sync after it copied a database.  0, or -1 with err (reading failed).
 */
int repl_views_reload(storage_t *st, storage_session_t *s, const char *db, terr_t *err);

/* Apply a $v: 2 diff (`diff` of an update entry's o) to doc into out
 * (initialised here).  0, or -1 with err (a malformed diff: 2 BadValue). */
int repl_oplog_diff_apply(const bson_t *doc, const bson_t *diff, bson_t *out, terr_t *err);

/* The calling thread's minValid after a rollback (repl/rollback.h): until
 * it applies an entry past ts, an update of a missing document is skipped
 * instead of failing (the document was refetched after the source deleted
 * it).  0: none (the default). */
void repl_oplog_apply_set_min_valid(repl_ts_t ts);

/*
 * Whether `next` supersedes `entry`'s config.transactions row: both are
 * CRUD entries ('i', 'u' or 'd', not applyOps) of a retryable write with
 * the same lsid and txnNumber, so the row the applier writes with `next`
 * (lastWriteOpTime at next's ts) is the one `entry` would have written,
 * moved on.  Mongod's secondaries keep one session update per session and
 * batch (SessionUpdateTracker) the same way.
 */
bool repl_oplog_apply_same_session(const bson_t *entry, const bson_t *next);

/*
 * For the calling thread's next repl_oplog_apply_entry only: leave out the
 * CRUD entry's config.transactions row because the caller applies next,
 * in the same round, an entry repl_oplog_apply_same_session says
 * supersedes it (a batch of 100 inserts updated the same row 100 times).
 * If the member stops between the two, the later entry is applied again
 * from the set's log at restart (it is not in the oplog) and writes the row.
 */
void repl_oplog_apply_defer_session_row(void);

/*
 * A run of consecutive entries of the set's log applied in one storage
 * transaction, as mongod's secondaries apply a group of inserts in one
 * WriteUnitOfWork with a timestamp set before each write.
 *
 * repl_oplog_apply_groupable: whether entry may be in a run -- a CRUD entry
 * ('i', 'u', 'd') or a no-op ('n'), not on a system.views collection (its
 * views are reloaded after its own commit), not a kept retryable reply's
 * no-op (its table is created before its own transaction).  DDL, applyOps (transactions,
 * partialTxn chains) and anything else are applied alone
 * (repl_oplog_apply_entry).
 *
 * repl_oplog_apply_run: entries[0..n) (each groupable, ts strictly
 * increasing) in one transaction of s (none open): for each entry in
 * order, its ts becomes the transaction's commit timestamp
 * (timestamp_transaction, WiredTiger allows later ones after the first),
 * then its oplog entry, its data change and its session row are written,
 * so each write carries its own entry's ts: a read at any ts in the run
 * sees exactly the entries up to it; the visibility point (all_committed)
 * stays below the run's first ts until the commit, then passes its last.
 * Entries with ts <= local_newest (the newest entry of the local oplog
 * when the caller took the run; 0: unknown) are looked up and skipped when
 * already here; later ones cannot be.  A session row superseded by the
 * next entry of the run is left to it (repl_oplog_apply_same_session), the
 * last entry's too when defer_last.  Committed with sync=false, as single
 * entries.  If any entry fails, the transaction is rolled back and the
 * entries are applied again one by one (repl_oplog_apply_entry), so the
 * ones before the failing entry are applied and the error is its own.
 * applied[i] (n of them, the caller's) says whether entry i was applied
 * (false: already here); *done how many entries are applied or skipped,
 * in order: n on success, the failing entry's index on failure.  The
 * caller publishes its applied position only after this returns: nothing
 * of the run is visible or durable before its commit.  A held partialTxn
 * chain is dropped (its commit never came).  0, or -1 with err.
 */
bool repl_oplog_apply_groupable(const bson_t *entry);
int repl_oplog_apply_run(repl_oplog_t *op, storage_t *st, storage_session_t *s, const bson_t *entries, int n,
                         repl_ts_t local_newest, bool defer_last, bool *applied, int *done, terr_t *err);

#endif
