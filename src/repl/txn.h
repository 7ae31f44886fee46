/*
 * txn.h -- multi-document transactions (mongod's TransactionParticipant) on
 * WiredTiger snapshot transactions.
 *
 * A session's transaction owns a storage session of its own, taken from the
 * pool when the transaction starts and holding one WiredTiger transaction
 * (snapshot isolation) until commitTransaction, abortTransaction, a failed
 * statement, a newer txnNumber, killSessions / endSessions or the reaper
 * (transactionLifetimeLimitSeconds) ends it.  Each command of the transaction
 * runs on that storage session while it has the session checked out
 * (repl/session.h), whichever connection sent it: its reads see the
 * transaction's own writes and nobody else's uncommitted ones, and a write
 * that meets another transaction's uncommitted change fails at once with
 * WiredTiger's WT_ROLLBACK (112 WriteConflict, first updater wins).
 *
 * The same txnNumber state machine serves retryable writes (a txnNumber
 * without autocommit): repl/retryable.h keeps what they did.
 *
 * What it does not do: decide which commands may run inside a transaction
 * and turn errors into replies (commands/cmd_txn.c).
 */
#ifndef TAMGA_REPL_TXN_H
#define TAMGA_REPL_TXN_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "repl/session.h"

typedef enum repl_txn_phase {
	REPL_TXN_NONE = 0,        /* no txnNumber used on the session yet */
	REPL_TXN_RETRYABLE,       /* txn_number is a retryable write's */
	REPL_TXN_IN_PROGRESS,
	REPL_TXN_COMMITTED,
	REPL_TXN_ABORTED,
} repl_txn_phase_t;

/* What the txnNumber of a command means once repl_txn_begin_or_continue accepted it. */
typedef enum repl_txn_kind {
	REPL_TXN_KIND_RETRYABLE = 1,    /* a retryable write (no autocommit) */
	REPL_TXN_KIND_MULTI = 2,        /* a statement of a multi-document transaction */
} repl_txn_kind_t;

/* A session's transaction state: kept in the catalog entry, read and changed
 * only by the command that has the session checked out (or, for an idle
 * session, under the catalog's lock). */
typedef struct repl_txn_state {
	int64_t txn_number;       /* the session's active txnNumber, -1 before any */
	repl_txn_phase_t phase;
	storage_session_t *ss;    /* the transaction's storage session (IN_PROGRESS only) */
	int64_t start_ms;         /* wall clock at startTransaction */
	int64_t expire_ms;        /* start + transactionLifetimeLimitSeconds */
	bool killed;              /* killed while checked out: abort at check-in */
	bool read_concern_set;    /* the first statement named a readConcern */
	bool read_concern_nonlocal; /* ... and its level is not "local" (no DDL then, as mongod) */
	int nstatements;          /* statements run so far */
	bool oplog_attached;      /* its storage session carries session info (repl_txn_attach_oplog) */
	uint64_t last_ts;         /* the last commit's applyOps opTime */
	int64_t last_term;
	/* retryable writes of txn_number: see repl/retryable.h */
	struct repl_retry_record *retry;
	/* the session's config.transactions row: its {_id: lsid} built once
	 * (owned) and the RecordId it was last written at (0: unknown; a hint,
	 * checked against the row's _id before use) -- repl/retryable.c */
	bson_t *row_key;
	uint8_t row_key_uid[32];  /* the uid row_key was built with */
	int64_t row_recid;
	uint8_t row_uuid[16];     /* ... in the table of this UUID (a new table restarts RecordIds) */
	uint8_t *row_last;        /* the row as last written there (owned; its _id and size are the hint) */
	size_t row_last_len, row_last_cap;
	/* the committed transaction's row was written in its commit's storage
	 * transaction (repl_retryable_commit_row_hook) */
	bool row_at_commit;
} repl_txn_state_t;

/* serverStatus.transactions (mongod's ServerTransactionsMetrics). */
typedef struct repl_txn_stats {
	atomic_llong total_started, total_committed, total_aborted;
	atomic_llong current_open, current_active;
	atomic_llong retried_commands, retried_statements, transactions_collection_writes;
} repl_txn_stats_t;

/* The registry's counters (lives as long as the registry). */
repl_txn_stats_t *repl_txn_stats(repl_sessions_t *ss);

/*
 * mongod's beginOrContinue for a checked-out session and a command carrying
 * txn_number: autocommit says whether the command named `autocommit` (false:
 * validated by the caller), start whether it named startTransaction: true.
 * Returns 0 with *kind set, or -1 with mongod's error:
 * 225 TransactionTooOld (an older txnNumber), 251 NoSuchTransaction (no such
 * transaction in progress, or it was aborted), 256 TransactionCommitted (a
 * statement after commit), 117 ConflictingOperationInProgress
 * (startTransaction at the active number), 217 IncompleteTransactionHistory
 * (a retryable write at a transaction's number).  A newer txnNumber aborts
 * the transaction in progress; startTransaction takes a storage session from
 * st's pool and begins its WiredTiger transaction, which the reaper aborts
 * lifetime_s seconds later (transactionLifetimeLimitSeconds).  cmd is the
 * command name (commitTransaction may follow a commit).
 */
struct repl_oplog;
int repl_txn_begin_or_continue(repl_session_t *s, storage_t *st, int64_t txn_number, bool autocommit,
                               bool start, const char *cmd, int64_t lifetime_s, repl_txn_kind_t *kind,
                               terr_t *err);

/* Once a transaction started (the first statement, repl_txn_begin_or_continue
 * said MULTI on a fresh transaction): when the set's oplog exists (op not
 * NULL, initiated), its storage transaction logs as one applyOps entry at
 * commit (repl_oplog_txn_collect) with lsid (the command's lsid document,
 * copied) and the txnNumber.  0, or -1 with the oplog's error. */
int repl_txn_attach_oplog(repl_session_t *s, struct repl_oplog *op, const bson_t *lsid, terr_t *err);

/* The storage session the current statement of s's transaction must run on
 * (IN_PROGRESS), or NULL. Borrowed: valid while s is checked out. */
storage_session_t *repl_txn_storage(repl_session_t *s);

/* commitTransaction: commit the WiredTiger transaction (sync: wait for the
 * journal, j: true) and give the storage session back.  A commit of a
 * committed transaction answers ok again (a retried commit).  Errors: 251
 * "Transaction with { txnNumber: N } has been aborted.", or the storage
 * error (the transaction is then aborted). */
int repl_txn_commit(repl_session_t *s, storage_t *st, bool sync, terr_t *err);
/* The opTime of the last committed transaction's applyOps entry (ts 0 when
 * none was written). */
void repl_txn_last_optime(repl_session_t *s, uint64_t *ts, int64_t *term);
/* abortTransaction: roll back. 251 when aborted already, 256 when committed. */
int repl_txn_abort(repl_session_t *s, storage_t *st, terr_t *err);
/* Abort the transaction in progress, if any, without an error (a failed
 * statement, a kill, the reaper, engine close). */
void repl_txn_abort_quietly(repl_session_t *s, storage_t *st);

/* The reaper: a thread aborting, every second, the idle transactions older
 * than transactionLifetimeLimitSeconds, and refreshing config.system.sessions
 * (repl_sessions_refresh) every refresh_ms (logicalSessionRefreshMillis,
 * 300000; 0 = never).  start returns NULL when the thread cannot start (then
 * nothing is reaped); stop joins it. */
typedef struct repl_txn_reaper repl_txn_reaper_t;
repl_txn_reaper_t *repl_txn_reaper_start(repl_sessions_t *ss, int64_t refresh_ms);
void repl_txn_reaper_stop(repl_txn_reaper_t *r);
/* One pass of the reaper now (tests): returns how many transactions it aborted. */
int repl_txn_reap(repl_sessions_t *ss, int64_t now_ms);

#endif
