/*
 * retryable.h -- retryable writes: what a write with an lsid and a txnNumber
 * (no autocommit) did, so that a retry of the same txnNumber is not applied
 * again (mongod's retryable writes, its config.transactions collection).
 *
 * In memory the session keeps the reply of the write that ran under its
 * active txnNumber; a retry of the same command answers that reply, the
 * statements are not run again.  Each executed write also updates the
 * session's row of config.transactions as mongod does ({_id: lsid, txnNum,
 * lastWriteOpTime, lastWriteDate}), and at open the rows are read back: after
 * a restart the session still knows its newest txnNumber, so an older one
 * answers 225 TransactionTooOld, and a retry of the same one gets its reply
 * rebuilt from the oplog entry the row points at (single-statement writes)
 * or 217 IncompleteTransactionHistory (batches, findAndModify), never the
 * write applied twice.
 *
 * What it does not do: per-statement (stmtId) replies of a batch that was
 * cut short, findAndModify images in config.image_collection, and a batch's
 * row is written in its own storage transaction right after the batch's (a
 * crash between the two can lose the row).
 */
#ifndef TAMGA_REPL_RETRYABLE_H
#define TAMGA_REPL_RETRYABLE_H

#include <stdbool.h>
#include <bson/bson.h>

#include "repl/session.h"

typedef struct repl_retry_record repl_retry_record_t;

void repl_retry_record_free(repl_retry_record_t *r);

/* The session is at a retryable txnNumber (repl_txn_begin_or_continue said
 * REPL_TXN_KIND_RETRYABLE): returns 1 with reply (initialised, caller
 * destroys) a copy of the first execution's reply when cmd already ran under
 * it; 0 when it did not (run it).  When it ran before a restart, a
 * single-statement insert, update or delete (nstatements 1) gets the reply
 * rebuilt from its oplog entry (read through op on ss, outside any
 * transaction), as mongod does, a findAndModify's from its entry and its
 * config.image_collection image; 0 when that write left no entry (it
 * changed nothing: it runs again); -1 with 217 IncompleteTransactionHistory
 * for a batch, or an entry or image no longer kept. */
struct repl_oplog;
int repl_retryable_replay(repl_session_t *s, struct repl_oplog *op, storage_session_t *ss, const char *cmd,
                          const bson_t *body, int nstatements, bson_t *reply, terr_t *err);

/* A retryable findAndModify that updated or removed a document: keep the
 * document it returns (image, unprojected; kind "preImage" or "postImage")
 * in config.image_collection as mongod 5.1+ does ({_id: lsid, txnNum, ts,
 * imageKind, image, invalidated: false}, one per session, unreplicated),
 * inside ss's open storage transaction with the write (ts: its oplog
 * entry's).  A retry after a restart answers {lastErrorObject, value} from
 * it (repl_retryable_replay; body: the command, for an upsert's `new`). */
int repl_retryable_image_in_txn(repl_session_t *s, storage_t *st, storage_session_t *ss, uint64_t ts,
                                const char *kind, const bson_t *image, terr_t *err);

/* Keep reply (copied) as what cmd did under the session's txnNumber, and
 * write the session's config.transactions row (on storage session ss, its
 * own transaction, journaled when sync, never logged in the oplog) with
 * lastWriteOpTime {ts, t} (the write's last oplog entry; ts 0: none, the wall
 * clock stands in) and, when state is not NULL, `state` (a transaction's
 * "committed").  Errors writing the row are returned (the write stands). */
int repl_retryable_record(repl_session_t *s, storage_t *st, storage_session_t *ss, const char *cmd,
                          const bson_t *reply, bool sync, uint64_t ts, int64_t term, const char *state,
                          terr_t *err);

/* The same, for a write that ran inside ss's open storage transaction (a
 * single-statement retryable write: the row commits with the write, so a
 * crash leaves both or neither).  The caller commits or rolls back; on a
 * rollback it calls repl_retryable_forget. */
int repl_retryable_record_in_txn(repl_session_t *s, storage_t *st, storage_session_t *ss, const char *cmd,
                                 const bson_t *reply, uint64_t ts, int64_t term, terr_t *err);
/* Drop what the session keeps of its current txnNumber's write (its storage
 * transaction rolled back after all). */
void repl_retryable_forget(repl_session_t *s);

/* Load config.transactions into the registry (engine open): each row's
 * session learns its txnNumber, as written before the restart. */
int repl_retryable_load(repl_sessions_t *ss, storage_session_t *s, terr_t *err);

#endif
