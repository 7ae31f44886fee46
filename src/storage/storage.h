/*
 * storage.h -- Tamga's storage layer on WiredTiger.
 *
 * What it owns: the WiredTiger connection of one data folder, the catalog
 * (databases, collections with UUID and options, index specs), one record
 * table per collection (key: int64 RecordId, value: the document's BSON
 * bytes), one table per index (key: KeyString bytes, see bson/keystring.h),
 * transactions with write-conflict retry, and durability (journal; j:true
 * syncs it; otherwise a background flush every ~100 ms; clean close
 * checkpoints).
 *
 * What it does not do: parse commands, match filters, validate documents.
 * Those are higher layers; they call in here inside a transaction.
 *
 * Threads: a storage_t is shared; a storage_session_t belongs to one thread at
 * a time.  Catalog reads return immutable, reference-counted descriptors
 * (storage_coll_t); catalog changes publish new descriptors, so a reader keeps
 * a consistent view for as long as it holds its reference.
 */
#ifndef TAMGA_STORAGE_STORAGE_H
#define TAMGA_STORAGE_STORAGE_H

#include <stdbool.h>
#include <stdint.h>
#include <bson/bson.h>

#include "common/error.h"

typedef struct coll coll_t;

typedef struct storage storage_t;
typedef struct storage_session storage_session_t;
typedef struct storage_cursor storage_cursor_t;
typedef int64_t recid_t;

/* ---- open / close ------------------------------------------------------- */

typedef struct storage_options {
	bool create;               /* create the folder if missing */
	bool in_memory;            /* WiredTiger in_memory=true (tests) */
	const char *cache_size;    /* e.g. "256M"; NULL = default */
} storage_options_t;

/* Open the folder (running recovery).  Errors: 29 NonExistentPath ("Data
 * directory <path> not found."; with opts->create the folder is made
 * instead), 98 DBPathInUse ("Unable to lock the lock file:
 * <path>/WiredTiger.lock (Resource temporarily unavailable). Another mongod
 * instance is already running on the <path> directory", mongod's words),
 * 1 InternalError for other WiredTiger failures (message includes
 * wiredtiger_strerror).  opts may be NULL (defaults). */
int storage_open(const char *path, const storage_options_t *opts, storage_t **out, terr_t *err);
/* Stop the journal flusher, checkpoint and close; every session and cursor
 * must be closed (pooled sessions are closed here). */
void storage_close(storage_t *st);

/* Sessions: a WT_SESSION plus cached cursors.  Cheap to reuse, not to open:
 * callers keep one per thread (the server per connection) or take one from
 * the pool. */
int storage_session_open(storage_t *st, storage_session_t **out, terr_t *err);
void storage_session_close(storage_session_t *s);
/* Make every transaction committed so far durable (the journal written and
 * synced), from any thread, through s (no transaction open on it).  0, or
 * -1 with err (WiredTiger's log_flush). */
int storage_journal_sync(storage_session_t *s, terr_t *err);

/* ---- the journal listener (mongod's JournalListener) -------------------- */

/*
 * Who must learn what each journal sync made durable (the oplog: a
 * primary's durableOpTime).  Around every sync -- the flusher's rounds
 * every ~100 ms, storage_journal_sync -- storage calls token(arg, &tok)
 * before the sync and, once the sync succeeded, durable(arg, &tok): what
 * token named as committed is then on disk.  token must name only
 * transactions whose storage_txn_commit already returned.  Both run on the
 * syncing thread without storage's locks but the listener's own, so they
 * may take sessions from the pool; they must not call
 * storage_journal_sync nor set the listener.  A storage without a journal
 * (in_memory) never calls them.
 */
typedef struct storage_journal_token {
	uint64_t word[3];            /* the listener's, opaque to storage */
} storage_journal_token_t;

typedef struct storage_journal_listener {
	void (*token)(void *arg, storage_journal_token_t *out);
	void (*durable)(void *arg, const storage_journal_token_t *tok);
	void *arg;
} storage_journal_listener_t;

/* Install (a copy of) l, NULL removes it; returns once no sync uses the
 * previous one (so its arg may be freed).  False when st has no journal
 * (in_memory: every commit is as durable as it will be). */
bool storage_set_journal_listener(storage_t *st, const storage_journal_listener_t *l);

storage_session_t *storage_session_pool_get(storage_t *st, terr_t *err);
void storage_session_pool_put(storage_t *st, storage_session_t *s);

/* ---- transactions ------------------------------------------------------- */

/* Snapshot isolation.  begin fails if one is open.  commit with sync=true
 * returns only after the journal is on disk (j: true).  A failed operation
 * inside a transaction leaves it usable only for rollback. */
int storage_txn_begin(storage_session_t *s, terr_t *err);
int storage_txn_commit(storage_session_t *s, bool sync, terr_t *err);
void storage_txn_rollback(storage_session_t *s);
bool storage_txn_active(const storage_session_t *s);

/*
 * Run fn inside one transaction and commit; when WiredTiger reports a write
 * conflict (WT_ROLLBACK) anywhere inside, roll back and run fn again (with a
 * short backoff), so conflicts never reach the client.  fn returns 0 to
 * commit, non-zero to roll back (its err is returned).  fn must be safe to
 * run more than once (no side effects outside the transaction, or undo them
 * at its start).  When s already has a transaction open, fn just runs inside
 * it: no commit, no retry, a conflict comes back as 112 for the owner of
 * that transaction to handle.
 */
typedef int (*storage_txn_fn)(storage_session_t *s, void *arg, terr_t *err);
int storage_txn_run(storage_session_t *s, storage_txn_fn fn, void *arg, bool sync, terr_t *err);

/* Bound how long a write on s waits for a table that an index build, an
 * index drop or a validated collMod holds (the table's gate): past ms
 * milliseconds the write fails with 24 LockTimeout "Unable to acquire IX
 * lock within <ms>ms." and the transaction is failed (mongod's
 * maxTransactionLockRequestTimeoutMillis for a multi-document transaction).
 * ms < 0: wait for ever (the default, and again once s goes back to the
 * pool). */
void storage_session_set_lock_timeout(storage_session_t *s, int64_t ms);

/* True when err carries the internal write-conflict marker (code 112
 * WriteConflict) that storage_txn_run retries on. */
bool storage_is_write_conflict(const terr_t *err);

/* ---- catalog ------------------------------------------------------------ */

/* At most this many fields in a key pattern (mongod's 32). */
#define STORAGE_INDEX_MAX_FIELDS 32

typedef struct storage_index {
	char *name;        /* "_id_", "a_1_b_-1" */
	bson_t *spec;      /* the full spec as listIndexes shows it: {v: 2, key: {...}, name: ..., unique: ...} */
	bson_t *key;       /* the key pattern (a copy of spec.key owned by the descriptor) */
	int nfields;       /* the key pattern's field count */
	char *ident;       /* WiredTiger table name, "table:index-<n>" */
	bool unique;
	bool is_id;
	/* The clustered index of a clustered collection (spec.clustered): its
	 * table holds the documents themselves (see "clustered collections"
	 * below); an index scan over it returns each document too. */
	bool clustered;
	/* A clustered table whose value is one `u`: the RecordId (8 bytes,
	 * little-endian) then the document, so WT_CURSOR::modify can change
	 * a document in place (storage_doc_update_damages).  False for
	 * clustered tables created before (`qu`: RecordId, document), read
	 * and written as they are, updates rewriting the whole value. */
	bool clustered_u;
	bool sparse;       /* spec.sparse, parsed once (key generation reads it per document) */
	bool partial;      /* spec has a partialFilterExpression */
	bool hidden;       /* spec.hidden: the planner does not choose it unless hinted */
	bool wildcard;     /* the key pattern is {"$**": ...} or {"p.$**": ...} */
	/* Every key-pattern value is a number, no field is "_fts" and the
	 * pattern is not a wildcard one: plain ascending/descending B-tree keys
	 * (parsed once; key generation skips classifying the pattern per
	 * document).  False when unknown (a descriptor built by hand). */
	bool plain_btree;
	bool multikey;     /* set (durably, in a new descriptor) once a document produced >1 key or met an array */
	/* Entries carry each key's type bits (keystring_append_value_tb) so the
	 * exact values can be rebuilt from the index alone (covered queries).
	 * True for every index created since; false for older tables. */
	bool typebits;
	/* Unique checking on a table whose keys end with the RecordId (the
	 * non-unique layout): prepare_unique is spec.prepareUnique (new keys
	 * equal to another document's are refused, existing duplicates stay);
	 * unique_rid marks a unique index converted in place by collMod
	 * (spec.unique with the table it had as a non-unique index; catalog
	 * flag "ridKeys").  Both false in descriptors built by hand, whose
	 * layout follows `unique` alone (storage_index_key_only). */
	bool prepare_unique;
	bool unique_rid;
	/* multiKeyPaths: mkpaths[i] has bit k set once key-pattern field i's
	 * path met an array as the value of its (k+1)-th component in some
	 * document.  Only ever grows.  mkpaths_known is false for indexes
	 * recorded before paths were tracked (then every field of a multikey
	 * index must be taken as multikey). */
	bool mkpaths_known;
	uint32_t mkpaths[STORAGE_INDEX_MAX_FIELDS];
	/* spec.collation (bson/collation.h; NULL = simple): its keys hold this
	 * collation's sort keys for strings.  Interned, never freed. */
	const coll_t *collation;
	/* The timeField of the time-series collection whose buckets this index
	 * keys (options.timeseries.timeField; owned by the descriptor), NULL for
	 * every other collection's indexes: key generation then checks, as
	 * mongod's validateDocumentCommon, that no indexed measurement field of
	 * a bucket holds an array (query/keygen.c, 5930501). */
	char *ts_time_field;
	void *impl;        /* storage-private */
} storage_index_t;

/* True when ix's table keys are the value alone (the RecordId in the
 * value): unique indexes as created; false for the key+RecordId layout. */
static inline bool
storage_index_key_only(const storage_index_t *ix)
{
	return ix->unique && !ix->unique_rid;
}

/* True when writes must refuse a key another document already has in a
 * key+RecordId table (prepareUnique, or a unique index converted in place). */
static inline bool
storage_index_dup_check(const storage_index_t *ix)
{
	return !storage_index_key_only(ix) && (ix->unique || ix->prepare_unique);
}

typedef struct storage_coll {
	char *db;          /* "bookstore" */
	char *name;        /* "reviews" */
	char *ns;          /* "bookstore.reviews" */
	uint8_t uuid[16];
	bson_t *options;   /* create options as listCollections shows them: validator, validationLevel, validationAction, capped, ... */
	char *ident;       /* "table:collection-<n>" */
	storage_index_t *indexes;
	int nindexes;
	uint64_t version;  /* bumped on every catalog change to this collection */
	/* options.collation, the collection's default (NULL = simple); the _id
	 * index has it too.  Interned, never freed. */
	const coll_t *collation;
	/* A capped collection (options.capped): at most capped_size bytes of
	 * documents (options.size) and capped_max documents (options.max; 0 =
	 * none).  See "capped collections" below. */
	bool capped;
	int64_t capped_size;
	int64_t capped_max;
	/* A clustered collection (options.clusteredIndex): clustered_ix points
	 * at its clustered index in indexes, NULL otherwise. */
	const storage_index_t *clustered_ix;
	/* options.expireAfterSeconds of a clustered collection (TTL by _id),
	 * -1 when none. */
	int64_t clustered_ttl;
	/* options.timeseries is a document (a time-series collection: its
	 * documents are buckets), read once when the descriptor is built. */
	bool timeseries;
	/* A slot higher layers may use to cache derived state (a compiled
	 * validator) for the life of this descriptor: set once with
	 * storage_coll_cache_set; freed with free_fn when the descriptor dies. */
	void *cache;
	void (*cache_free)(void *);
	void *impl;        /* storage-private (refcount, recid counter...) */
} storage_coll_t;

/*
 * Capped collections.  The record table keeps insertion order (RecordIds
 * are handed out in commit order: every write to a capped collection holds
 * the table's capped lock from its first write until its transaction
 * commits or rolls back, so writers are serialised, as on mongod).  An
 * insert that takes the collection past capped_max documents or past
 * capped_size bytes deletes the oldest documents, index entries included,
 * in the same transaction; it never deletes the document it inserted (one
 * larger than the size limit stays alone, as on mongod 7.0+).  A scan
 * over a capped collection restored after its last document was deleted
 * (by capping or by a delete) fails with 136 CappedPositionLost.
 * STORAGE_OPLOG_NS is capped for readers (tailable, collStats) only.
 */
/*
 * Clustered collections (created with options {clusteredIndex: {key: {_id:
 * 1}, unique: true[, name]}}): the documents live in the clustered index's
 * table, keyed by the _id's KeyString (value: RecordId, document), so a
 * lookup by _id (storage_doc_find_id) and a range of _ids (an index scan
 * over clustered_ix, storage_cursor_next handing out the documents) read
 * one table, and a collection scan is in _id order (mongod's natural order
 * for clustered collections).  There is no separate _id index.  Secondary
 * indexes keep pointing at int64 RecordIds: the collection's record table
 * maps each RecordId to its document's _id KeyString, so
 * storage_doc_get(recid) is that map, then the clustered table.  Capped
 * clustered collections are not supported (the caller refuses them).
 */

/* The one capped collection storage does not cap on insert nor serialise:
 * the oplog, truncated from its oldest end by repl/. */
#define STORAGE_OPLOG_NS "local.oplog.rs"

#define STORAGE_CODE_CAPPED_POSITION_LOST 136

/*
 * The insert notifier: every collection table counts the committed
 * transactions that inserted into it.  A reader that found nothing new
 * (a tailable awaitData cursor, the oplog's and change streams' readers)
 * remembers storage_coll_insert_seq(c) before it looks, then calls
 * storage_coll_wait_insert(c, seen, deadline_us), which returns 1 as soon
 * as a later insert into the same table has committed (it is then visible
 * to a new read) or storage_coll_wake was called, and 0 once deadline_us
 * (CLOCK_MONOTONIC microseconds; 0 = no wait) passes.  No polling: the
 * waiter sleeps on a condition variable the committing thread signals
 * after its commit.  c is any descriptor of the table (renames and
 * collMod keep the notifier); the caller holds its reference while waiting.
 * storage_coll_wake wakes every waiter without an insert (a drop, a kill).
 */
uint64_t storage_coll_insert_seq(const storage_coll_t *c);
int storage_coll_wait_insert(const storage_coll_t *c, uint64_t seen, int64_t deadline_us);
void storage_coll_wake(const storage_coll_t *c);

/* Look up a collection.  Returns 0 and a reference in *out (release it with
 * storage_coll_release), or TERR_NAMESPACE_NOT_FOUND (26) without setting
 * err's message when it does not exist (callers decide what to say). */
int storage_coll_get(storage_t *st, const char *db, const char *name, storage_coll_t **out, terr_t *err);
/* The same by the whole namespace "<db>.<name>" (a caller that has it built). */
int storage_coll_get_ns(storage_t *st, const char *ns, storage_coll_t **out);
/* Take one more reference / drop one (the last frees the descriptor and its
 * cache slot).  NULL is ignored by release. */
void storage_coll_ref(storage_coll_t *c);
void storage_coll_release(storage_coll_t *c);
/* Atomically install a cache value if none is set; returns the one that won
 * (free the loser yourself when it is not yours). */
void *storage_coll_cache_set(storage_coll_t *c, void *value, void (*free_fn)(void *));

/* MongoDB's rules for a namespace a user may create (userAllowedCreateNS):
 * 73 InvalidNamespace "Invalid namespace: <ns>" (empty or bad db name: /\.
 * space " $, over 63 bytes; empty collection name), "Invalid collection
 * name: <coll>" ($ or a leading dot), "Invalid system namespace: <ns>",
 * "Fully qualified namespace is too long. Namespace: <ns> Max: 255"; 2
 * BadValue for ".system." inside a collection name.  Returns 0 when fine. */
int storage_ns_check(const char *db, const char *coll, terr_t *err);

/*
 * Catalog changes (create, set_options, drop, rename, db_drop, index
 * create/drop) are serialised, committed durably (journal synced) in their
 * own WiredTiger transaction on an internal session before they return, and
 * then visible to every storage_coll_get.  They are not part of a
 * transaction open on s (s may be NULL; the drops and renames close its
 * cached point-operation cursors, which would keep a dropped table busy).
 * Readers holding an older descriptor keep it; a dropped table is removed
 * once nobody has a cursor open on it.
 */

/* Create a collection (and its _id_ index).  options is stored as given
 * (the caller has validated it).  Errors: 48 NamespaceExists
 * ("Collection <ns> already exists."), 73 InvalidNamespace.  Implicit
 * creation by a first insert uses the same call with options NULL. */
int storage_coll_create(storage_t *st, storage_session_t *s, const char *db, const char *name,
                        const bson_t *options, terr_t *err);
/* The next storage_coll_create on the calling thread gives the collection
 * uuid (16 bytes, copied) instead of a new random one: a replica-set member
 * creates a collection under the primary's UUID, as mongod's members share
 * them.  Consumed (cleared) by that call whatever it answers; NULL clears. */
void storage_set_next_uuid(const uint8_t *uuid);
/* Replace a collection's options document (collMod). */
int storage_coll_set_options(storage_t *st, storage_session_t *s, const char *db, const char *name,
                             const bson_t *options, terr_t *err);
/*
 * storage_coll_set_options after check(arg, err) returned 0, with no write to
 * the collection in progress from before check starts until the new options
 * are published (the table's gate is held exclusively: writers wait, and
 * those that validated with the old options check again, see
 * storage_set_write_check).  A failed check (-1 with err) changes nothing.
 * collMod's upgrade to validationLevel 'constraint' scans this way, so no
 * violating document can slip in beside the scan.  The caller must not have
 * a write transaction open on the collection.
 */
int storage_coll_set_options_checked(storage_t *st, storage_session_t *s, const char *db, const char *name,
                                     const bson_t *options, int (*check)(void *arg, terr_t *err), void *arg,
                                     terr_t *err);
int storage_coll_drop(storage_t *st, storage_session_t *s, const char *db, const char *name, terr_t *err);
int storage_coll_rename(storage_t *st, storage_session_t *s, const char *db, const char *from,
                        const char *to_db, const char *to, bool drop_target, terr_t *err);
/* drop: 26 NamespaceNotFound "ns not found" when missing.  rename: 26
 * "Source collection <ns> does not exist", 48 "target namespace exists"
 * (unless drop_target), 20 "Can't rename a collection to itself", 73 for a
 * bad target name; the table and UUID are kept.  db_drop: every collection
 * of db; a missing db is not an error. */
int storage_db_drop(storage_t *st, storage_session_t *s, const char *db, terr_t *err);

/*
 * Catalog changes inside a transaction (mongod 4.4+: create, createIndexes
 * on a collection the transaction created, implicit creation by a write).
 * storage_coll_create_in_txn creates db.name (with its _id index) for the
 * transaction open on s: its tables are made at once (WiredTiger's create
 * is not transactional), its descriptor is seen only on a thread bound to
 * s (storage_session_bind_thread: storage_coll_get and the write paths then
 * return it), its op is shown to the observer inside s's transaction (the
 * oplog collects it into the transaction's applyOps), and its catalog row
 * is written in s's transaction by storage_txn_commit, which publishes the
 * descriptor after WiredTiger's commit.  So others see the collection
 * exactly when they see the transaction's writes, and a crash never shows
 * half of it (tables no row names are dropped at the next open).  A
 * rollback drops the tables.  Errors: 48 NamespaceExists ("Collection <ns>
 * already exists.") when the name is a visible collection or view or s
 * created it already, 73 as storage_ns_check.  Someone else creating the
 * same name meanwhile (outside a transaction, or a transaction that
 * commits first) succeeds; this transaction's commit then fails with 112
 * WriteConflict, as on mongod.
 *
 * storage_index_create_in_txn adds an index (spec validated by the caller)
 * to a collection s created: 263 "Cannot create new indexes on existing
 * collection <ns> in a multi-document transaction." for any other, 263
 * "Cannot create new indexes on non-empty collection <ns> in a
 * multi-document transaction." once the transaction wrote documents to it,
 * 68 for a name it has.  storage_coll_created_in_txn: c is a collection
 * s's open transaction created.
 */
int storage_coll_create_in_txn(storage_t *st, storage_session_t *s, const char *db, const char *name,
                               const bson_t *options, terr_t *err);
int storage_index_create_in_txn(storage_t *st, storage_session_t *s, const char *db, const char *name,
                                const bson_t *spec, terr_t *err);
bool storage_coll_created_in_txn(const storage_session_t *s, const storage_coll_t *c);
/* The session whose created-in-transaction collections storage_coll_get
 * returns on the calling thread (NULL: none).  A transaction's statement
 * binds its storage session for as long as it runs. */
void storage_session_bind_thread(storage_session_t *s);

/*
 * Add an index (spec as listIndexes shows it: {v, key, name, unique...},
 * validated by the caller) and fill it from the collection's documents
 * through the keygen (storage_set_keygen below); writes to the collection
 * wait meanwhile, and writers holding an older descriptor maintain the new
 * index too.  Errors: 26, 68 IndexAlreadyExists (same name), 11000 when a
 * unique index meets a duplicate (nothing is left behind), 238 when the
 * collection has documents and no keygen is installed.  The calling thread
 * must not itself have a write transaction open on that collection (it
 * would wait for itself); the same holds for storage_index_drop.
 */
int storage_index_create(storage_t *st, storage_session_t *s, const char *db, const char *name,
                         const bson_t *spec, terr_t *err);
/*
 * Replace index_name's spec in the catalog in place (collMod: hidden,
 * expireAfterSeconds): no rebuild, the table and its entries stay; the new
 * descriptor is published as for any catalog change.  spec is the complete
 * new spec as listIndexes shows it; its key and name must equal the
 * current ones, and so must unique on a table of the key-only layout
 * (storage_index_key_only; 2 BadValue otherwise).  On a key+RecordId table
 * unique and prepareUnique may change (collMod's unique conversions): the
 * keys stay, the new descriptor checks duplicates on every later insert
 * (storage_index_dup_check), and the catalog row remembers the layout.
 * The caller checks the existing keys first.  Errors: 26, 27 IndexNotFound.
 */
int storage_index_set_spec(storage_t *st, storage_session_t *s, const char *db, const char *name,
                           const char *index_name, const bson_t *spec, terr_t *err);
/*
 * storage_index_set_spec for a unique index of the key-only layout becoming
 * non-unique (collMod forceNonUnique): its entries are copied into a new
 * key+RecordId table (writes to the collection wait meanwhile, as for an
 * index build), which then replaces the old one under the new spec in one
 * catalog change (the old table dropped after it; a crash before leaves the
 * old index whole).  Errors: 26, 27, 2 BadValue when the index is not such
 * an index or its key or name would change, 11601 when interrupted.
 */
int storage_index_set_spec_relayout(storage_t *st, storage_session_t *s, const char *db, const char *name,
                                    const char *index_name, const bson_t *spec, terr_t *err);
/* Remove an index (27 IndexNotFound; 72 for _id_). */
int storage_index_drop(storage_t *st, storage_session_t *s, const char *db, const char *name,
                       const char *index_name, terr_t *err);

/*
 * Key generation for secondary indexes is supplied by a higher layer (the
 * keys follow MongoDB's dotted-path and array rules, which live above
 * storage).  fn calls add(ctx, key, len, tb, tb_len) once per KeyString
 * key doc has in idx (the value parts only, without RecordId; duplicates
 * are fine; an array gives several keys and makes the index multikey), tb
 * being that key's type bits (keystring_append_value_tb; stored in the
 * entry's value), and returns 0, or -1 with err.  When mkpaths is not NULL
 * (STORAGE_INDEX_MAX_FIELDS entries) fn ORs into mkpaths[i] bit k when
 * field i's path met an array as the value of its (k+1)-th component.
 * Set once, before writes start.  Without it, writes to a collection with
 * a non-_id index fail with 238 NotImplemented.
 */
typedef void (*storage_key_add_fn)(void *ctx, const uint8_t *key, size_t len, const uint8_t *tb,
                                   size_t tb_len);
typedef int (*storage_keygen_fn)(const storage_index_t *idx, const bson_t *doc,
                                 storage_key_add_fn add, void *ctx, uint32_t *mkpaths, terr_t *err);
void storage_set_keygen(storage_t *st, storage_keygen_fn fn);

/*
 * Documents are validated by a higher layer before their write transaction
 * (commands/validation.c).  When a collection's options change between that
 * validation and the write (the writer holds an older descriptor), the
 * insert or update calls fn with the current descriptor, the new document
 * and the old one (NULL for an insert) inside the transaction, after the
 * table's gate is held; a non-zero return fails the write with err.  Set
 * once, before writes start; NULL: no second check.
 */
typedef int (*storage_write_check_fn)(storage_coll_t *current, const bson_t *new_doc, const bson_t *old_doc,
                                      terr_t *err);
void storage_set_write_check(storage_t *st, storage_write_check_fn fn);

/* ---- op observer: the hook the oplog hangs on --------------------------- */

/*
 * Every change storage makes on behalf of a caller passes one observer, so a
 * higher layer (repl/oplog.c) can record it in the same WiredTiger
 * transaction: documents (storage_doc_insert/update/delete, whoever calls
 * them: CRUD, $out/$merge, TTL deletes, users, system.views) and catalog
 * changes (create, drop, rename, dropDatabase, index create/drop, collMod).
 * Storage does not know what the observer writes; it only calls it.
 *
 * on_write(arg, s, op, err): after the change is made inside s's open
 *   transaction (its record and index entries written; for a catalog change,
 *   inside the catalog's own transaction, s being storage's internal DDL
 *   session, before the row commits).  It may write to other collections
 *   through s (storage_doc_insert_at) and stamp the transaction
 *   (storage_txn_set_timestamp).  A non-zero return fails the change with
 *   err (the transaction is then only good for rollback; a catalog change is
 *   undone).  It is not called for changes made while s has
 *   storage_session_set_unobserved on.
 * on_commit(arg, s, err): in storage_txn_commit, just before WiredTiger's
 *   commit, when on_write was called in this transaction; a non-zero return
 *   rolls the transaction back and the commit fails with err.
 * on_end(arg, s, committed): after every commit or rollback of a
 *   transaction on s (whether or not anything was observed), so the
 *   observer forgets its per-transaction state.
 * scan_limit(arg, c): the largest RecordId a forward collection scan of c
 *   may return (INT64_MAX: no limit); read when the scan opens and at each
 *   restore, before the scan reads anything.  The oplog uses it to stop
 *   readers at its visibility point (no holes).
 * Any member may be NULL.  Set once, before writes start; arg lives as long
 * as the storage_t.
 */
typedef enum storage_op_kind {
	STORAGE_OP_INSERT,          /* coll, recid, doc */
	STORAGE_OP_UPDATE,          /* coll, recid, doc (new), old_doc */
	STORAGE_OP_DELETE,          /* coll, recid, old_doc */
	STORAGE_OP_CREATE,          /* coll (the new descriptor: uuid, options, _id index) */
	STORAGE_OP_DROP,            /* coll (the dropped descriptor), num_records */
	STORAGE_OP_RENAME,          /* coll (the source's descriptor), to_db, to_name, drop_target_uuid */
	STORAGE_OP_DROP_DB,         /* db; called after the drops of its collections */
	STORAGE_OP_INDEX_CREATE,    /* coll, doc (the spec), num_records (the collection's at build time) */
	STORAGE_OP_INDEX_DROP,      /* coll, doc (the dropped index's spec) */
	STORAGE_OP_SET_OPTIONS,     /* coll (old descriptor), doc (new options), old_doc (old options) */
	STORAGE_OP_INDEX_SET_SPEC,  /* coll, doc (new spec), old_doc (old spec) */
} storage_op_kind_t;

typedef struct storage_op {
	storage_op_kind_t kind;
	const char *db;                  /* always set */
	const storage_coll_t *coll;      /* NULL for DROP_DB */
	recid_t recid;                   /* documents */
	const bson_t *doc;
	const bson_t *old_doc;
	const char *to_db, *to_name;     /* RENAME */
	const uint8_t *drop_target_uuid; /* RENAME over an existing target (dropTarget), else NULL */
	int64_t num_records;             /* DROP, INDEX_CREATE */
} storage_op_t;

typedef struct storage_op_observer {
	int (*on_write)(void *arg, storage_session_t *s, const storage_op_t *op, terr_t *err);
	int (*on_commit)(void *arg, storage_session_t *s, terr_t *err);
	void (*on_end)(void *arg, storage_session_t *s, bool committed);
	recid_t (*scan_limit)(void *arg, const storage_coll_t *c);
	void *arg;
} storage_op_observer_t;

/* Install (a copy of) obs; NULL removes it.  Set once, before writes. */
void storage_set_op_observer(storage_t *st, const storage_op_observer_t *obs);

/* A slot on a session for the observer's per-session state (session info
 * of retryable writes, a transaction's collected operations).  free_fn(ctx)
 * runs when the session is closed (not when it goes back to the pool: the
 * observer resets its state in on_end and when its owner clears it).
 * Setting a new ctx frees the old one with its free_fn. */
void storage_session_set_observer_ctx(storage_session_t *s, void *ctx, void (*free_fn)(void *ctx));
void *storage_session_observer_ctx(const storage_session_t *s);

/* While on, changes made through s are not shown to the observer (mongod's
 * UnreplicatedWritesBlock: the oplog's own truncation, config.transactions
 * bookkeeping).  Returns the previous setting, so callers can nest. */
bool storage_session_set_unobserved(storage_session_t *s, bool on);
/* The same for every change the calling thread makes, catalog changes
 * included (they run on the catalog's own session): a replica-set
 * secondary's oplog application, whose only entry is the primary's.
 * Returns the previous setting. */
bool storage_thread_set_unobserved(bool on);

/* ---- timestamps (WiredTiger 3.2) ---------------------------------------- */
/* Timestamps are the repl layer's Timestamps as uint64 (seconds << 32 |
 * increment); 0 means none.  Storage only passes them to WiredTiger. */

/* The open transaction's commit timestamp from now on
 * (WT_SESSION::timestamp_transaction commit_timestamp): what it writes after
 * this call carries ts, and what it wrote before without one gets the
 * commit timestamp at commit.  ts must be greater than the stable timestamp
 * and not less than the first one set in this transaction.  Errors: 1 with
 * WiredTiger's message (the transaction is then failed). */
int storage_txn_set_timestamp(storage_session_t *s, uint64_t ts, terr_t *err);
/* The first commit timestamp set in the open transaction, 0 when none. */
uint64_t storage_txn_first_timestamp(const storage_session_t *s);
/* Begin a transaction reading as of read_ts (begin_transaction
 * read_timestamp): it sees exactly the commits stamped <= read_ts.  Errors as
 * storage_txn_begin, and 1 when read_ts is older than the oldest timestamp
 * (WiredTiger refuses it). */
int storage_txn_begin_at(storage_session_t *s, uint64_t read_ts, terr_t *err);
/* WT_CONNECTION::query_timestamp("get=all_committed"): every timestamp <=
 * *ts has committed or rolled back; *ts is 0 before any stamped commit. */
int storage_ts_all_committed(storage_t *st, uint64_t *ts, terr_t *err);
/* WT_CONNECTION::set_timestamp: stable (what a stable checkpoint may hold)
 * and oldest (history older than it may be discarded; oldest <= stable);
 * a 0 leaves that one as it is. */
int storage_ts_set(storage_t *st, uint64_t stable, uint64_t oldest, terr_t *err);
/* A replica-set rollback (repl/rollback.h) removed every locally committed
 * write past `ts`: oldest, stable and the tracked newest commit timestamp
 * (what all_committed answers) go back to ts, WiredTiger's `force`. */
int storage_ts_force_back(storage_t *st, uint64_t ts, terr_t *err);

/*
 * Views: a namespace with a definition ({viewOn, pipeline[, collation]}, as
 * listCollections shows it under options; checked by the caller) and no
 * tables.  A view and a collection never share a namespace: view_create and
 * coll_create refuse with 48 NamespaceExists ("Collection <ns> already
 * exists.") when either holds the name.  Stored in the catalog table and
 * changed durably like collections (see above).
 *
 * view_get: 0 and a copy of the definition in def (initialised; the caller
 * destroys it), or TERR_NAMESPACE_NOT_FOUND without touching def or err.
 * view_set: replace an existing view's definition (26 when missing).
 * view_drop: 26 NamespaceNotFound "ns not found" when missing.
 * list_views: append {name: definition} for each view of db to out, sorted.
 * storage_db_drop also drops the database's views; storage_list_dbs lists
 * databases that only hold views.
 */
int storage_view_create(storage_t *st, const char *db, const char *name, const bson_t *def, terr_t *err);
int storage_view_get(storage_t *st, const char *db, const char *name, bson_t *def);
int storage_view_set(storage_t *st, const char *db, const char *name, const bson_t *def, terr_t *err);
int storage_view_drop(storage_t *st, const char *db, const char *name, terr_t *err);
void storage_list_views(storage_t *st, const char *db, bson_t *out);

/* Snapshots of the catalog: names of databases (sorted), and collection
 * descriptors of one database (each referenced; release each, free array
 * with bson_free). */
int storage_list_dbs(storage_t *st, char ***names, int *n, terr_t *err);
int storage_list_colls(storage_t *st, const char *db, storage_coll_t ***colls, int *n, terr_t *err);
void storage_free_names(char **names, int n);

/* Sizes for stats: record count (fast, maintained), data bytes, storage bytes. */
int storage_coll_stats(storage_t *st, storage_session_t *s, storage_coll_t *c,
                       int64_t *count, int64_t *data_size, int64_t *storage_size, terr_t *err);
/* On-disk bytes of each index of c, in c->indexes order (sizes must hold
 * c->nindexes entries); 0 for in-memory folders. */
int storage_index_sizes(storage_t *st, storage_coll_t *c, int64_t *sizes, terr_t *err);

/* ---- documents ---------------------------------------------------------- */
/* Writes must run inside a transaction (storage_txn_begin/run); reads may
 * also run outside one (each then sees the latest committed data).  A
 * failed write leaves the transaction good only for rollback. */

/* Insert doc (already has _id first; the caller generated it) into the
 * record table and every index.  Duplicate key -> 11000 with mongod's
 * message "E11000 duplicate key error collection: <ns> index: <name> dup
 * key: { <field>: <value> }" and extra fields keyPattern/keyValue. Sets
 * *recid when not NULL.  Also: 10334 "object to insert too large. size in
 * bytes: N, max size: 16777216", 2 BadValue when _id is not first, 238 for
 * a secondary index without a keygen. */
int storage_doc_insert(storage_session_t *s, storage_coll_t *c, const bson_t *doc,
                       recid_t *recid, terr_t *err);
/* Replace the document at recid (old is its current content, for index
 * maintenance) with new_doc (10334 "Resulting document after update is
 * larger than 16777216"; 11000 as insert).  delete: old_doc likewise. */
int storage_doc_update(storage_session_t *s, storage_coll_t *c, recid_t recid,
                       const bson_t *old_doc, const bson_t *new_doc, terr_t *err);
int storage_doc_delete(storage_session_t *s, storage_coll_t *c, recid_t recid,
                       const bson_t *old_doc, terr_t *err);
/*
 * storage_doc_update when the caller knows the byte changes dm that turn
 * old_doc (the stored bytes, exactly) into new_doc (bdamages_compute): the
 * document is written with WiredTiger's modify, so the update chain and the
 * journal get the changed bytes only (mongod's updateWithDamages).  Indexes,
 * counters and the op observer see old_doc and new_doc as for an update.  A
 * collection whose table cannot take a modify (a clustered table of the
 * older `qu` layout), or damages that do not pay (none, more than
 * STORAGE_MODIFY_MAX_ENTRIES, or half the document's bytes or more), get a
 * whole rewrite.  dm is borrowed for the call.
 */
#define STORAGE_MODIFY_MAX_ENTRIES 256
struct bdamages;
int storage_doc_update_damages(storage_session_t *s, storage_coll_t *c, recid_t recid, const bson_t *old_doc,
                               const bson_t *new_doc, const struct bdamages *dm, terr_t *err);
/* Replace the document at recid with new_doc when c's only index is _id and
 * new_doc's _id is old_hint's byte for byte: one write, no read first.
 * old_hint is what the caller last wrote there (a hint: only its _id and
 * size are used -- the size for dataSize).  Returns 0 written; 1 when no
 * record is at recid (nothing written, the transaction still good); 2
 * when the shortcut does not apply (nothing written: use
 * storage_doc_update); -1 with err as storage_doc_update's. */
int storage_doc_update_existing(storage_session_t *s, storage_coll_t *c, recid_t recid, const bson_t *old_hint,
                                const bson_t *new_doc, terr_t *err);

/*
 * Insert doc at a RecordId the caller chooses (the oplog: its entry's ts),
 * inside the open transaction.  recid must be > 0; later storage_doc_insert
 * RecordIds of c come after it.  The document need not have an _id when c
 * has no _id index (created with options {autoIndexId: false}, as the
 * oplog is).  Errors: 2 BadValue "RecordId <n> already exists in <ns>"
 * when the RecordId is taken; 10334 and 11000 as storage_doc_insert.
 */
int storage_doc_insert_at(storage_session_t *s, storage_coll_t *c, recid_t recid, const bson_t *doc,
                          terr_t *err);
/*
 * Remove every record of c with RecordId <= upto, oldest first, at most
 * max_records of them (0 = no limit), inside the open transaction; indexes
 * are maintained.  *removed (may be NULL) gets how many, *bytes their BSON
 * bytes.  For capped collections and the oplog, whose oldest end goes.
 */
int storage_doc_delete_upto(storage_session_t *s, storage_coll_t *c, recid_t upto, int64_t max_records,
                            int64_t *removed, int64_t *bytes, terr_t *err);

/* Read one document.  *doc is a read-only view (bson_init_static) valid
 * until the next storage call on this session; copy it to keep it.  Returns
 * 0, or 1 when not found. */
int storage_doc_get(storage_session_t *s, storage_coll_t *c, recid_t recid, bson_t *doc, terr_t *err);
/* Find by _id through the _id_ index: 0 found (recid, doc view as above),
 * 1 not found.  The key is made with the _id index's collation (the
 * collection's default), so a string id finds what that collation calls
 * equal. */
int storage_doc_find_id(storage_session_t *s, storage_coll_t *c, const bson_value_t *id,
                        recid_t *recid, bson_t *doc, terr_t *err);
/* The same by the _id index's KeyString key itself (key, key_len: the
 * value part, as storage_cursor_cluster_key gives it for a clustered
 * collection; key may point into s's scratch KeyString). */
int storage_doc_find_key(storage_session_t *s, storage_coll_t *c, const uint8_t *key, size_t key_len,
                         recid_t *recid, bson_t *doc, terr_t *err);

/* ---- cursors ------------------------------------------------------------ */

/* Full scan in RecordId order (forward or backward = $natural: -1). */
int storage_scan_open(storage_session_t *s, storage_coll_t *c, bool backward,
                      storage_cursor_t **out, terr_t *err);
/* A collection scan (any direction) goes on after recid: its next record is
 * the first one past recid in scan order (a reader of the oplog resuming
 * after a ts).  Call right after storage_scan_open, or between calls. */
void storage_cursor_seek_after(storage_cursor_t *cur, recid_t recid);
/* A clustered collection's scan (storage_scan_open on it) goes on past the
 * clustered key key (key_len bytes, copied), as storage_cursor_seek_after
 * does past a RecordId (mongod's clustered RecordId is that key).  Call
 * right after storage_scan_open; no-op on other cursors. */
void storage_cursor_seek_after_key(storage_cursor_t *cur, const uint8_t *key, size_t key_len);
/* A clustered scan positioned on a document: its clustered key (the _id's
 * KeyString, mongod's RecordId of it), valid until the next call on cur;
 * false otherwise. */
bool storage_cursor_cluster_key(const storage_cursor_t *cur, const uint8_t **key, size_t *key_len);
/*
 * Make a forward collection scan tailable (a tailable cursor on a capped
 * collection): at the end, storage_cursor_next returns 0 but the cursor
 * stays after the last document it returned, and the next call returns the
 * documents inserted since (or from the start when it never returned one).
 * Whenever it comes back to that position it checks the document is still
 * there: 136 CappedPositionLost when capping (or a delete) removed it.
 * Call right after storage_scan_open.
 */
void storage_cursor_set_tailable(storage_cursor_t *cur);
/* Index scan over [lo, hi] KeyString bounds (for the clustered index of a
 * clustered collection, storage_cursor_next also gives each document) (NULL = unbounded), inclusive
 * flags, direction.  Bounds are compared with the value part of each key
 * (the RecordId ending a non-unique key is ignored), so an exclusive bound
 * skips every entry equal to it.  idx must point into c->indexes.  Cursors
 * hold a reference to c until closed. */
int storage_index_scan_open(storage_session_t *s, storage_coll_t *c, const storage_index_t *idx,
                            const uint8_t *lo, size_t lo_len, bool lo_incl,
                            const uint8_t *hi, size_t hi_len, bool hi_incl,
                            bool backward, storage_cursor_t **out, terr_t *err);
/*
 * Advance.  Returns 1 with *recid (and for scans the document view in *doc,
 * valid until the next call; for index scans the key bytes in *key and *key_len
 * and doc untouched), 0 at the end, -1 with err on failure.  recid may be
 * NULL: a collection scan then reads the RecordId only when it must (before
 * a save, or a commit or rollback on its session), which saves a WiredTiger
 * get_key per document.
 */
int storage_cursor_next(storage_cursor_t *cur, recid_t *recid, bson_t *doc,
                        const uint8_t **key, size_t *key_len, terr_t *err);
/*
 * storage_cursor_next for a collection scan (storage_scan_open) whose
 * caller copies each document before it moves on (a batch being filled):
 * 1 with the document's bytes in *data and *len, 0 at the end, -1 with
 * err.  The bytes are WiredTiger's own memory, not a copy: **valid only
 * until the next call on cur, or until its WiredTiger cursor is reset** (a
 * commit or rollback on its session, storage_cursor_save or _close), so
 * never across a save, unlike storage_cursor_next's views.  The RecordId is not read (as
 * storage_cursor_next with recid NULL).  A plain positioned scan costs one
 * WiredTiger next and get_value, no copy.
 */
int storage_cursor_next_view(storage_cursor_t *cur, const uint8_t **data, uint32_t *len, terr_t *err);
/* Index scans over an index with typebits: the type bits stored with the
 * entry storage_cursor_next returned last (call before any other call on
 * the cursor's session; *tb valid until the next call on cur; empty when
 * the index has none).  Returns 0 or -1 with err. */
int storage_cursor_typebits(storage_cursor_t *cur, const uint8_t **tb, size_t *tb_len, terr_t *err);
/* Remember the position, release WiredTiger resources (between getMore
 * batches, so no snapshot is held), and come back to it, on any session:
 * entries deleted meanwhile are skipped.  restore fails with 175
 * QueryPlanKilled when the collection was dropped or renamed, or the index
 * dropped.  Document views returned before save stay valid. */
int storage_cursor_save(storage_cursor_t *cur, terr_t *err);
int storage_cursor_restore(storage_cursor_t *cur, storage_session_t *s, terr_t *err);
void storage_cursor_close(storage_cursor_t *cur);

#endif
