/*
 * oplog.h -- local.oplog.rs: the replica set's operation log, written in the
 * same WiredTiger transaction as every change it records.
 *
 * What it is: a collection in the catalog (find, count, $natural and
 * collStats work on it as on any other), created with mongod's options
 * {capped: true, size: <bytes>, autoIndexId: false} and keyed by RecordId =
 * the entry's ts as uint64 (repl/clock.h), so RecordId order is ts order.
 * Entries are mongod's (oplog_entry.idl):
 *   [lsid, txnNumber,] op, ns, ui, o, [o2,] [stmtId,] ts, t, v: 2, wall[, prevOpTime]
 * op 'i' (o the document, o2 {_id}), 'u' (o {$v: 2, diff: {...}} computed
 * from the old and new documents, or the whole new document for a
 * replacement; o2 {_id}), 'd' (o {_id}), 'c' (DDL and applyOps, ns
 * "<db>.$cmd"), 'n' (no-ops).  The database `local` is never logged, nor
 * system.profile, nor writes made with storage_session_set_unobserved on.
 *
 * How: repl_oplog_open installs a storage op observer (storage.h).  Every
 * storage write and catalog change calls it inside its transaction; it
 * reserves a ts from the clock and stamps the WiredTiger transaction with
 * it (timestamp_transaction commit_timestamp) under one lock, so commit
 * timestamps follow ts order, and writes the entry at RecordId = ts.  The
 * visibility point is WiredTiger's all_committed: every entry <= it is
 * committed; forward scans of the oplog (also find's) stop there, so a
 * reader never sees a hole.  stable_timestamp follows it, oldest_timestamp
 * trails it by REPL_OPLOG_HISTORY_SECS while reads at past timestamps are in
 * use (repl_oplog_note_snapshot_read), and follows it otherwise.
 *
 * Lifetime: the engine opens it when started with --replSet (never for a
 * standalone) and closes it before storage_close.  Until the set is
 * initiated (repl_oplog_create, called by replset's replSetInitiate) nothing
 * is logged; a folder whose oplog exists logs at once, and the clock
 * resumes above its last entry.
 *
 * Threads: a repl_oplog_t is shared; the per-session calls act on a
 * storage_session_t, which belongs to one thread at a time.
 */
#ifndef TAMGA_REPL_OPLOG_H
#define TAMGA_REPL_OPLOG_H

#include <stdbool.h>
#include <stdint.h>
#include <bson/bson.h>

#include "common/error.h"
#include "storage/storage.h"
#include "repl/clock.h"

#define REPL_OPLOG_DB "local"
#define REPL_OPLOG_COLL "oplog.rs"
#define REPL_OPLOG_NS "local.oplog.rs"

/* mongod's limits on the oplog size in MB (replSetResizeOplog's and the
 * default rule's): at least 990 MB, at most 1 PB. */
#define REPL_OPLOG_MIN_MB 990.0
#define REPL_OPLOG_MAX_MB (1024.0 * 1024 * 1024)
/* How far oldest_timestamp trails stable (seconds of history WiredTiger
 * keeps for reads at a past cluster time).  See README: mongod 9.0 keeps
 * minSnapshotHistoryWindowInSeconds = 300, but on WiredTiger 3.2 that
 * history lives in the cache (the lookaside file only spills it), so we
 * keep what mongod 4.2 kept on the same WiredTiger line: 5 s. */
#define REPL_OPLOG_HISTORY_SECS 5
/* An applyOps entry of a transaction holds at most this many bytes of
 * operations; a larger transaction is written as a chain (partialTxn). */
#define REPL_OPLOG_TXN_ENTRY_MAX (16 * 1024 * 1024 - 64 * 1024)

typedef struct repl_oplog repl_oplog_t;

/* An opTime: {ts, t}.  The null opTime is {Timestamp(0, 0), -1}. */
typedef struct repl_oplog_optime {
	repl_ts_t ts;
	int64_t t;
} repl_oplog_optime_t;
#define REPL_OPLOG_OPTIME_NULL ((repl_oplog_optime_t){0, -1})

/* Append {ts: Timestamp, t: NumberLong} as a document named key. */
void repl_oplog_optime_append(bson_t *out, const char *key, repl_oplog_optime_t ot);

typedef struct repl_oplog_options {
	/* --oplogSize / replication.oplogSizeMB in MB; 0 = mongod's default
	 * (5% of the free disk space of the data folder's file system, at
	 * least 990 MB, at most 50 GB; in-memory: 5% of physical memory, at
	 * least 50 MB, at most 50 GB). */
	double size_mb;
	/* The term every entry's `t` carries (replset's state; called under
	 * the oplog's stamping lock: must not block).  NULL: 1 (a single-node
	 * set's first term). */
	int64_t (*term)(void *arg);
	void *term_arg;
	/* Truncation thread: how often it checks the size (ms; 0 = 1000). */
	int truncate_interval_ms;
	/* mongod's periodic no-op writer (periodicNoopIntervalSecs): every
	 * this many seconds (0 = 10, < 0 = never) the thread writes {op: 'n',
	 * o: {msg: "periodic noop"}} when no entry was written since its last
	 * look, while primary(term_arg) says this node is primary (NULL:
	 * always), so the cluster time readers see keeps moving. */
	int noop_interval_secs;
	bool (*primary)(void *arg);
	/* A set of several members (issue 24): false while this member may not
	 * log a change of its own (not primary); such a write then fails with
	 * 10107 (an internal writer on a secondary: the session cache's
	 * refresh, TTL deletes).  Called with term_arg; NULL: always. */
	bool (*may_log)(void *arg);
	/* For the default size: the data folder (free disk space), or an
	 * in-memory engine (physical memory).  dbpath may be NULL (then the
	 * default is the lower bound). */
	const char *dbpath;
	bool in_memory;
	/* mongod's maxNumberOfTransactionOperationsInSingleOplogEntry (startup
	 * only, >= 1, default INT_MAX): a transaction's applyOps entry holds at
	 * most this many operations.  Read at each commit through the pointer
	 * (the engine's setting; NULL: no count limit, only the size's). */
	const _Atomic long long *txn_ops_per_entry;
} repl_oplog_options_t;

/*
 * Open the oplog of st: install the op observer (storage_set_op_observer),
 * recover the clock above the last entry when local.oplog.rs exists, set
 * stable/oldest, start the truncation thread.  clock is borrowed (outlives
 * the oplog).  *out is the caller's until repl_oplog_close.  Errors: 1 for
 * storage failures.
 */
int repl_oplog_open(storage_t *st, repl_clock_t *clock, const repl_oplog_options_t *opts,
                    repl_oplog_t **out, terr_t *err);
/* Stop the thread and remove the observer; call before storage_close. */
void repl_oplog_close(repl_oplog_t *op);

/*
 * Create local.oplog.rs (replSetInitiate, once the node is primary) with
 * the configured size and write mongod's two no-ops: the initiation's {op:
 * 'n', ns: "", o: msg} with t: -1 (msg NULL: {msg: "initiating set"}), then
 * {msg: "new primary"} in the current term; from then on every change is
 * logged.  When the oplog already exists it does nothing and sets *created
 * false (may be NULL).  *at (may be NULL) gets the last no-op's opTime.
 */
int repl_oplog_create(repl_oplog_t *op, const bson_t *msg, bool *created, repl_oplog_optime_t *at, terr_t *err);
/* repl_oplog_create's msg for a member of a set of several (issue 24):
 * create the oplog without the two no-ops; its entries come from the set's
 * replicated log. */
#define REPL_OPLOG_CREATE_EMPTY ((const bson_t *)1)
/*
 * Write a replicated entry verbatim (a secondary applying the primary's
 * entry, repl/oplog_apply.h) in s's open transaction: RecordId and commit
 * timestamp are the entry's ts; the clock is raised to it.  The caller
 * makes its data changes unobserved.  Errors: 20 without an oplog, 2 when
 * the entry has no ts, storage's (the ts at or below the stable point).
 */
int repl_oplog_write_replicated(repl_oplog_t *op, storage_session_t *s, const bson_t *entry, terr_t *err);
/* The same with the entry's ts and t (-1: none) already read by the caller
 * (the applier parses each entry once). */
int repl_oplog_write_replicated_at(repl_oplog_t *op, storage_session_t *s, const bson_t *entry, repl_ts_t ts,
                                   int64_t t, terr_t *err);
/* local.oplog.rs exists (the set was initiated). */
bool repl_oplog_exists(repl_oplog_t *op);
/* The clock the oplog stamps from (borrowed). */
repl_clock_t *repl_oplog_clock(repl_oplog_t *op);

/* The visibility point: every entry with ts <= it is committed (0 before
 * the first).  Also stable_timestamp. */
repl_ts_t repl_oplog_visible(repl_oplog_t *op);
/* The opTime of the newest entry <= the visibility point ({0, -1} when
 * none): hello's lastWrite.opTime, majorityOpTime on a single node. */
repl_oplog_optime_t repl_oplog_last_optime(repl_oplog_t *op);
/* The newest entry a journal sync has made durable (mongod's lastDurable:
 * the storage journal listener, storage.h, takes repl_oplog_last_optime
 * before each sync of the journal flusher's ~100 ms rounds or of
 * storage_journal_sync, and publishes it after): at most
 * repl_oplog_last_optime, behind it by up to one round.  At open, the
 * newest entry recovery found; after a rollback's reset, at most its
 * common point.  Without a journal (in_memory storage) the last optime. */
repl_oplog_optime_t repl_oplog_durable_optime(repl_oplog_t *op);
/* Wait until the visibility point reaches ts or timeout_ms passes (a
 * writer's own commit is visible when its storage_txn_commit returns, but
 * older concurrent ones may still be in flight).  Returns true when reached. */
bool repl_oplog_wait_visible(repl_oplog_t *op, repl_ts_t ts, int64_t timeout_ms);

/*
 * Write one no-op entry {op: 'n', ns: "", o: o} (appendOplogNote, the
 * periodic no-op writer), in s's open transaction or, when none is open, in
 * its own committed one.  *at (may be NULL) gets its opTime.  Errors: 20
 * IllegalOperation when the oplog does not exist.
 */
int repl_oplog_noop(repl_oplog_t *op, storage_session_t *s, const bson_t *o, repl_oplog_optime_t *at, terr_t *err);

/*
 * Write one no-op entry {op: 'n', ns: "", o: o, o2: o2 (NULL: none)} inside
 * s's open transaction (required), without the session info s may carry
 * (no lsid, txnNumber, stmtId or prevOpTime: it joins no statement chain and
 * no commit hook), so it commits -- and reaches the set's log -- with the
 * transaction's other entries.  *at (may be NULL) gets its opTime.  Errors:
 * 20 without an oplog, 10107 on a member that may not log (a secondary).
 * Used for Tamga's own bookkeeping that followers must derive from the log
 * (repl/retryable.h: replies kept whole).
 */
int repl_oplog_noop_note(repl_oplog_t *op, storage_session_t *s, const bson_t *o, const bson_t *o2,
                         repl_oplog_optime_t *at, terr_t *err);

/* A read at a past timestamp (readConcern snapshot, a snapshot cursor's
 * getMore) is being served: keep REPL_OPLOG_HISTORY_SECS of history from now
 * on, until none came for that long (op may be NULL). */
void repl_oplog_note_snapshot_read(repl_oplog_t *op);
/* A set of several members (repl/raft_member.h): oldest_timestamp is kept
 * at or below ts, the majority commit point, so readConcern majority can
 * read there; 0 lifts the pin.  A commit point that stops moving (no
 * majority) keeps every version since in WiredTiger's cache, as mongod's
 * majority read concern does. */
void repl_oplog_pin_oldest(repl_oplog_t *op, repl_ts_t ts);
/* That majority commit point (0: none pinned -- a single member, whose
 * visible entries are all committed).  Moving it wakes the oplog's insert
 * waiters (storage_coll_wake), so readers it bounds look again. */
repl_ts_t repl_oplog_commit_point(repl_oplog_t *op);

/* Read the entry with exactly this ts (a retryable write's statement, a
 * transaction's prevOpTime chain): 0 with *entry initialised to a copy (the
 * caller destroys it), 1 when there is none (entry untouched), -1 with
 * err.  Reads the latest committed data, regardless of the visibility
 * point; s must not be inside a transaction that should not see it. */
int repl_oplog_find(repl_oplog_t *op, storage_session_t *s, repl_ts_t ts, bson_t *entry, terr_t *err);

/*
 * Forward scans over the visible entries with ts > after (0: from the
 * oldest), for change streams and tailable cursors: next returns 1 with
 * *entry a view valid until the next call on cur, and 0 at the visibility
 * point as it was when the scan was opened or last restored (call restore
 * and next again later for more: a `capped` notifier tells when), -1 with
 * err.  save/restore as storage cursors (restore may use another session);
 * restore fails with 136 CappedPositionLost ("CollectionScan died due to
 * position in capped collection being deleted. Last seen record id: RecordId(<n>)")
 * when truncation removed the entry after the last one returned.
 */
typedef struct repl_oplog_cursor repl_oplog_cursor_t;
int repl_oplog_scan_open(repl_oplog_t *op, storage_session_t *s, repl_ts_t after, repl_oplog_cursor_t **out,
                         terr_t *err);
int repl_oplog_cursor_next(repl_oplog_cursor_t *cur, bson_t *entry, terr_t *err);
int repl_oplog_cursor_save(repl_oplog_cursor_t *cur, terr_t *err);
int repl_oplog_cursor_restore(repl_oplog_cursor_t *cur, storage_session_t *s, terr_t *err);
void repl_oplog_cursor_close(repl_oplog_cursor_t *cur);

/* ---- size --------------------------------------------------------------- */

/* The configured maximum size in bytes (collStats' maxSize). */
int64_t repl_oplog_max_bytes(repl_oplog_t *op);
/*
 * replSetResizeOplog's effect: size_mb (NaN: unchanged) and
 * min_retention_hours (< 0: unchanged; 0 = none).  The command handler
 * (commands/cmd_repl_oplog.c) parses and checks the request with mongod's
 * codes and messages; this call only refuses what it cannot do: 2 BadValue
 * for size_mb outside [REPL_OPLOG_MIN_MB, REPL_OPLOG_MAX_MB], 26
 * NamespaceNotFound when the oplog does not exist.  The size is kept in the
 * oplog's catalog options (options.size, bytes) so it survives a restart;
 * minRetentionHours is kept in memory only, as mongod does.
 */
int repl_oplog_resize(repl_oplog_t *op, double size_mb, double min_retention_hours, terr_t *err);
/*
 * One truncation pass (the background thread runs it every
 * truncate_interval_ms): while the oplog is over its size, remove the
 * oldest entries, never one newer than the visibility point or than the
 * entry that must stay (the newest one always stays), nor one younger than
 * minRetentionHours.  *removed (may be NULL) gets the count.
 */
int repl_oplog_truncate(repl_oplog_t *op, int64_t *removed, terr_t *err);

/* ---- session info (retryable writes, for `txn`) -------------------------- */

/*
 * Attach session info to s: every write logged through s until
 * repl_oplog_session_clear carries lsid (copied), txnNumber, the current
 * stmtId (repl_oplog_session_set_stmt; none until set) and prevOpTime: prev
 * for the first write, then the opTime of the previous entry written
 * through s with this session info.  Call with no transaction open or
 * inside the one the writes will use.  Errors: 2 BadValue when lsid is not
 * a document.
 */
int repl_oplog_session_set(repl_oplog_t *op, storage_session_t *s, const bson_t *lsid, int64_t txn_number,
                           repl_oplog_optime_t prev, terr_t *err);
/* The statement id the next logged write carries (retryable writes: one
 * per statement of the batch); < 0 = none. */
void repl_oplog_session_set_stmt(storage_session_t *s, int32_t stmt_id);
/* A retryable findAndModify's update or delete: its entry carries
 * needsRetryImage: kind ("preImage" or "postImage", a static string; NULL:
 * none), as mongod 5.1+ writes it when the image is kept in
 * config.image_collection.  Until changed or repl_oplog_session_clear. */
void repl_oplog_session_set_image(storage_session_t *s, const char *kind);
/* A statement a retryable write executed: its stmtId and its entry's ts. */
typedef struct repl_oplog_stmt {
	int32_t stmt;
	repl_ts_t ts;
} repl_oplog_stmt_t;
/* The statements (entries with a stmtId) committed through s since the
 * session info was set, in commit order: the count, *out borrowed until the
 * next write through s or repl_oplog_session_clear / _set. */
int repl_oplog_session_stmts(storage_session_t *s, const repl_oplog_stmt_t **out);
/* A storage transaction on s that wrote entries with the current session
 * info (outside collect mode) calls fn(arg, s, last, err) in its commit,
 * just before WiredTiger's, with last the opTime of its newest entry: the
 * owner writes its bookkeeping (a retryable write's config.transactions
 * row) in the same transaction; a non-zero return rolls the transaction
 * back and fails its commit with err.  Until changed (NULL: none), or
 * repl_oplog_session_set / _clear. */
typedef int (*repl_oplog_commit_hook_fn)(void *arg, storage_session_t *s, repl_oplog_optime_t last, terr_t *err);
void repl_oplog_session_set_commit_hook(storage_session_t *s, repl_oplog_commit_hook_fn fn, void *arg);
/* The opTime of the last entry written through s with the current session
 * info and committed ({0, -1} when none): what config.transactions records
 * as lastWriteOpTime, and what a retry finds with repl_oplog_find. */
repl_oplog_optime_t repl_oplog_session_last(storage_session_t *s);
/* Detach the session info (and end collect mode); writes are then logged
 * without lsid/txnNumber.  Call before s goes back to the pool. */
void repl_oplog_session_clear(storage_session_t *s);

/* The next updates through s are replacements (the whole new document is
 * logged as o) until turned off; otherwise an update is logged as the $v: 2
 * diff of its old and new documents.  Set by the update path
 * (commands/cmd_update.c) around a replacement-style update. */
void repl_oplog_session_set_replacement(storage_session_t *s, bool on);

/* The operator update whose write comes next (borrowed until cleared with
 * NULL): its entry's diff follows the update's paths as mongod logs them
 * (repl/oplog_diff.h); without one, a diff of the two documents. */
typedef struct update update_t;
void repl_oplog_session_set_update(storage_session_t *s, const update_t *u);

/* ---- multi-document transactions (for `txn`) ----------------------------- */

/*
 * Put s's open storage transaction in collect mode (call right after
 * storage_txn_begin, with the session info set): its writes are not logged
 * one by one but kept, and storage_txn_commit writes them as one entry
 *   {lsid, txnNumber, op: 'c', ns: "admin.$cmd", o: {applyOps: [ops]}, ts, t,
 *    v, wall, prevOpTime}
 * (each op as its single-write entry's op/ns/ui/o/o2), or, past
 * REPL_OPLOG_TXN_ENTRY_MAX bytes, a chain of entries with o.partialTxn:
 * true linked by prevOpTime whose last one carries o.count (the number of
 * operations); the whole transaction commits at the last entry's ts (one
 * commit timestamp for every write).  A transaction that wrote nothing
 * writes no entry.  Collect mode ends with the transaction (commit or
 * rollback).  Errors: 20 IllegalOperation when no transaction is open or
 * no session info is set.  After the commit repl_oplog_session_last is the
 * commit entry's opTime.
 */
int repl_oplog_txn_collect(repl_oplog_t *op, storage_session_t *s, terr_t *err);

/*
 * How a transaction's operations are split into applyOps entries (mongod's
 * TransactionOperations::getApplyOpsInfo for an unprepared transaction):
 * in order, an entry takes operations while it holds fewer than max_ops and
 * their sizes (lens[i], the operation's BSON size) stay within max_bytes; an
 * operation larger than max_bytes alone still gets an entry of its own.
 * ends[e] (n slots, the caller's) gets the index after entry e's last
 * operation.  Returns the number of entries (>= 1 for n >= 1; 0 for n 0).
 * max_ops <= 0 means no count limit.
 */
int repl_oplog_txn_split(const int64_t *lens, int n, int64_t max_bytes, int64_t max_ops, int *ends);

/*
 * A rollback (repl/rollback.h): remove every entry with ts > after inside
 * s's open transaction (the caller makes it unobserved and commits it with
 * its data changes); *removed gets how many.  Then, once that committed,
 * repl_oplog_rollback_reset moves WiredTiger's oldest/stable and the
 * tracked newest commit back to `to` and forgets the cached visibility
 * point and last entry, so the set's entries after `to` can be written with
 * their own (older) timestamps.  0, or -1 with err.
 */
int repl_oplog_remove_after(repl_oplog_t *o, storage_session_t *s, repl_ts_t after, int64_t *removed,
                            terr_t *err);
int repl_oplog_rollback_reset(repl_oplog_t *o, repl_ts_t to, terr_t *err);

#endif
