/*
 * retryable.h -- retryable writes: what a write with an lsid and a txnNumber
 * (no autocommit) did, so that a retry of the same txnNumber is not applied
 * again (mongod's retryable writes, its config.transactions collection).
 *
 * As mongod's TransactionParticipant: in memory the session keeps, for its
 * active txnNumber, the statements executed (stmtId -> the ts of the oplog
 * entry that carries it); a retried insert, update or delete answers each
 * statement found there from its entry (insert/delete n: 1, an update's
 * n/nModified/upserted parsed from the entry) and runs the others.
 * A findAndModify's retry is rebuilt from its entry and its image.  Every
 * storage transaction that writes statements also writes the session's row
 * of config.transactions ({_id: lsid, txnNum, lastWriteOpTime,
 * lastWriteDate}) in the same WiredTiger transaction, and each entry links
 * to the previous one of the same txnNumber (prevOpTime).  At open the rows
 * are read back: the session knows its newest txnNumber (an older one
 * answers 225 TransactionTooOld), and its first retry reads the executed
 * statements back from the oplog chain the row starts (mongod's
 * fetchActiveTransactionHistory); a statement not found when an entry of
 * the chain was truncated away answers 217 IncompleteTransactionHistory,
 * never the write applied twice.
 */
#ifndef TAMGA_REPL_RETRYABLE_H
#define TAMGA_REPL_RETRYABLE_H

#include <stdbool.h>
#include <bson/bson.h>

#include "repl/oplog.h"
#include "repl/session.h"

/* Tamga's table of replies kept whole (below), a config collection. */
#define REPL_RETRYABLE_REPLY_TABLE "tamga_retry_replies"

typedef struct repl_retry_record repl_retry_record_t;

void repl_retry_record_free(repl_retry_record_t *r);

/* The session is at a retryable txnNumber (repl_txn_begin_or_continue said
 * REPL_TXN_KIND_RETRYABLE): returns 1 with reply (initialised, caller
 * destroys) when cmd's answer is known without running it: a findAndModify
 * whose stmtId (body's, default 0) the session executed, rebuilt from its
 * oplog entry and config.image_collection as mongod does on every retry
 * (the image unprojected; retriedStmtId), or a write kept whole (a
 * time-series insert) answering its first reply; 0 when it must run (other
 * commands look each statement up with repl_retryable_stmt_executed; the
 * history after a restart is read here, through op on ss, outside any
 * transaction); -1 with err: 217 IncompleteTransactionHistory, or mongod's
 * 406xx / 56376xx when a findAndModify's entry does not fit the request or
 * its image is gone.  nstatements is unused. */
struct repl_oplog;
int repl_retryable_replay(repl_session_t *s, struct repl_oplog *op, storage_session_t *ss, const char *cmd,
                          const bson_t *body, int nstatements, bson_t *reply, terr_t *err);

/* Statement stmt of the session's active txnNumber (a retryable write):
 * 1 with *ts its entry's ts when it was executed, 0 when not (run it), -1 with 217
 * IncompleteTransactionHistory when it is not known and the history is
 * incomplete, or with err when reading the history back failed.  After a
 * restart the first call reads the history from the oplog (op, on ss, no
 * transaction open). */
int repl_retryable_stmt_executed(repl_session_t *s, struct repl_oplog *op, storage_session_t *ss, int32_t stmt,
                                 uint64_t *ts, terr_t *err);
/* An executed update statement's result rebuilt from its entry at ts
 * (mongod's parseOplogEntryForUpdate): 'u' n 1 nModified 1; 'i' (an
 * upsert) n 1 nModified 0 and *upserted (copied, caller destroys) its _id;
 * else 40638.  217 when the entry is gone. */
int repl_retryable_update_result(struct repl_oplog *op, storage_session_t *ss, uint64_t ts, int64_t *n,
                                 int64_t *nmod, bson_value_t *upserted, bool *has_upserted, terr_t *err);
/* After a retryable write: the statements it committed (from
 * repl_oplog_session_stmts) join the session's executed ones, and last (its
 * newest entry, ts 0: none) becomes the next write's prevOpTime. */
void repl_retryable_note_stmts(repl_session_t *s, const repl_oplog_stmt_t *stmts, int n,
                               repl_oplog_optime_t last);
/* Something already ran at the active txnNumber (a statement, a kept
 * reply, or a write before a restart). */
bool repl_retryable_any_executed(repl_session_t *s);
/* The newest entry written at the active txnNumber ({0, -1}: none): a
 * retried command's first entry links to it (prevOpTime). */
repl_oplog_optime_t repl_retryable_last_write(repl_session_t *s);
/* A reply of cmd is kept whole at the active txnNumber (in memory; after a
 * restart once repl_retryable_load_kept_reply read it back). */
bool repl_retryable_has_kept_reply(repl_session_t *s, const char *cmd);
/* Keep reply (copied) as the first reply of cmd at the active txnNumber. */
void repl_retryable_keep_reply(repl_session_t *s, const char *cmd, const bson_t *reply);

/*
 * Replies kept whole (time-series findAndModify and bulkWrite, whose oplog
 * entries are the buckets' and cannot give the reply back) are also kept
 * durably, in Tamga's own collection config.tamga_retry_replies ({_id:
 * lsid, txnNum, cmd, reply}; one per session, a later txnNumber's replaces
 * it), so a retry after a restart, or on another member after a failover,
 * answers the first reply.  The row itself is written unobserved (as
 * config.transactions'); the followers derive theirs from a no-op entry
 * written in the same storage transaction ({op: 'n', o: {msg: "tamga
 * retryable write reply"}, o2: {tamgaRetryReply: <row>}}, without session
 * info: repl_oplog_noop_note), applied in the same storage transaction as
 * that entry (repl_retryable_reply_of_entry / _reply_apply): one log, and
 * the row is on a member exactly when the entry is.
 *
 * A reply past 8 MB with a cursor.firstBatch (a bulkWrite's results, which
 * may pass 16 MB: no single row or oplog entry could hold them) is kept in
 * chunks: rows {_id: {<lsid>, chunk: i}, txnNum, cmd, reply: {firstBatch}}
 * of 4 MB of results each, every one with its own no-op entry (followers
 * and rollback treat them as any row), then the session's row with the
 * first chunk and `chunks: n`; a reader puts them back together, and a
 * chunk missing leaves the reply lost (217 as for a reply never written).
 *
 * repl_retryable_reply_in_txn writes both inside ss's open storage
 * transaction (with the write: both or neither survive a crash, and the
 * set's log has the reply's entry right after the write's; op NULL or an
 * oplog that does not exist: the row only);
 * repl_retryable_reply_write in its own journaled transaction (a batch of
 * several storage transactions, after the last: a crash or a failover
 * between them leaves the writes without their reply, and the retry
 * answers 217).
 * repl_retryable_load_kept_reply, for a session whose txnNumber ran before
 * a restart (or on the previous primary) and has no reply in memory: reads
 * the one kept for cmd at the active txnNumber into memory (1;
 * repl_retryable_has_kept_reply and repl_retryable_replay then answer it),
 * 0 when there is none, -1 with err.  Call it outside any transaction on ss.
 */
int repl_retryable_reply_in_txn(repl_session_t *s, storage_t *st, repl_oplog_t *op, storage_session_t *ss,
                                const char *cmd, const bson_t *reply, terr_t *err);
int repl_retryable_reply_write(repl_session_t *s, storage_t *st, repl_oplog_t *op, storage_session_t *ss,
                               const char *cmd, const bson_t *reply, terr_t *err);
int repl_retryable_load_kept_reply(repl_session_t *s, storage_t *st, storage_session_t *ss, const char *cmd,
                                   terr_t *err);
/* The follower's side (oplog_apply.c): true when entry is a kept reply's
 * no-op, with *row a view into entry (valid while entry is); the table
 * exists (its own catalog transaction: call before the entry's); the row
 * upserted unobserved inside ss's open transaction (the entry's). */
bool repl_retryable_reply_of_entry(const bson_t *entry, bson_t *row);
int repl_retryable_reply_table(storage_t *st, storage_session_t *ss, terr_t *err);
int repl_retryable_reply_apply(storage_t *st, storage_session_t *ss, const bson_t *row, terr_t *err);
/* config.transactions exists (created when missing, its own catalog
 * transaction): call before a batch whose storage transactions write rows. */
int repl_retryable_prepare(storage_t *st, storage_session_t *ss, terr_t *err);
/* Write the session's config.transactions row with lastWriteOpTime last
 * inside ss's open storage transaction (unobserved): what a batch's commit
 * hook does (repl_oplog_session_set_commit_hook). */
int repl_retryable_row_in_txn(repl_session_t *s, storage_t *st, storage_session_t *ss, repl_oplog_optime_t last,
                              terr_t *err);

/* The commit hook of a multi-document transaction's storage session
 * (repl_oplog_session_set_commit_hook; arg: its repl_session_t): the
 * session's row {txnNum, lastWriteOpTime: last (the applyOps entry),
 * lastWriteDate, state: "committed"} joins the commit's storage
 * transaction, unobserved, and the state's row_at_commit says so (the
 * commit command then writes no row of its own). */
int repl_retryable_commit_row_hook(void *arg, storage_session_t *ss, repl_oplog_optime_t last, terr_t *err);

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
/* A member becoming primary (commands/cmd_repl_member.c, before
 * repl_retryable_load): every idle session at a retryable write or a
 * committed transaction forgets it (txnNumber -1, nothing kept), as
 * mongod's session catalog is invalidated by a rollback and refreshed from
 * config.transactions: what it ran in an earlier term may have been rolled
 * back since, and the rows (refetched by the rollback) are then the
 * history a retry is answered from. */
void repl_retryable_invalidate(repl_sessions_t *ss);

#endif
