/*
 * storage_private.h -- what the files of src/storage/ share and nobody else
 * sees: the connection, session and cursor structures, the per-collection
 * runtime counters, and the helpers that turn WiredTiger return codes into
 * terr_t errors.
 *
 * Not a public contract: other layers use storage.h only.
 */
#ifndef TAMGA_STORAGE_STORAGE_PRIVATE_H
#define TAMGA_STORAGE_STORAGE_PRIVATE_H

#include <pthread.h>
#include <stdatomic.h>
#include <wiredtiger.h>

#include "storage/storage.h"
#include "bson/keystring.h"

#define STORAGE_CATALOG_URI "table:_catalog"
#define STORAGE_META_KEY "$meta"          /* catalog row with the ident counter */
#define STORAGE_SIZES_KEY "$sizes"        /* counts/sizes written by a clean close */
#define STORAGE_MAX_BSON (16 * 1024 * 1024)
#define STORAGE_INTERNAL_SLACK (16 * 1024)   /* BSONObjMaxInternalSize - BSONObjMaxUserSize */
#define STORAGE_MAX_NS_LEN 255
#define STORAGE_MAX_DB_LEN 63
#define STORAGE_CODE_QUERY_PLAN_KILLED 175
#define STORAGE_CODE_UPDATE_TOO_LARGE 10334  /* BSONObjectTooLarge */
#define STORAGE_CODE_OP_NOT_IN_TXN 263

/*
 * Runtime state of one collection table, shared by every descriptor version
 * of that table (a rename or collMod publishes a new descriptor but the same
 * table keeps counting).  count and data_size are committed values: a
 * transaction accumulates deltas in its session and applies them at commit.
 */
typedef struct coll_rt {
	atomic_int refs;
	atomic_llong next_recid;   /* last RecordId handed out */
	atomic_llong count;
	atomic_llong data_size;
	/* Index-set changes vs writers: a write transaction holds gate shared
	 * from its first write to the table until it ends; index create/drop
	 * hold it exclusive and bump ixgen, so a writer holding an older
	 * descriptor notices and maintains the current index set instead. */
	pthread_rwlock_t gate;
	atomic_ullong ixgen;
	/* Bumped by every change of the options (validator, level, action):
	 * a writer whose descriptor is older validated with options that are
	 * gone, and asks st->write_check again (record.c). */
	atomic_ullong optgen;
	/* Set when the table's catalog row is gone and its tables are to be
	 * dropped: a transaction that takes the gate after that refuses to
	 * write (26), and the tables are dropped only once no transaction
	 * holds the gate (storage_ident_drop), because WiredTiger frees the
	 * pages of a dropped table, uncommitted updates included, and the
	 * writer's commit or rollback would then write to freed memory. */
	atomic_bool dropped;
	/* Capped collections (storage.h): whether the table is capped and its
	 * current limits (refreshed with every descriptor built for it, so a
	 * collMod of cappedSize/cappedMax applies to writers holding older
	 * descriptors); capped_lock serialises the writes to it, held from a
	 * transaction's first write to the table until it ends. */
	atomic_bool capped;
	atomic_llong cap_size;
	atomic_llong cap_max;
	pthread_mutex_t capped_lock;
	/* The insert notifier (storage_coll_wait_insert): ins_seq counts the
	 * committed transactions that inserted here; waiters sleep on ins_cond
	 * under ins_mu, and a committer takes ins_mu only when ins_waiters is
	 * not zero. */
	atomic_ullong ins_seq;
	atomic_int ins_waiters;
	pthread_mutex_t ins_mu;
	pthread_cond_t ins_cond;
} coll_rt_t;

/* storage_coll_t.impl */
typedef struct coll_impl {
	atomic_int refs;
	coll_rt_t *rt;
	uint64_t ixgen;            /* rt->ixgen when this descriptor was built */
	uint64_t optgen;           /* rt->optgen when this descriptor was built */
} coll_impl_t;

/* Per-table state of the open transaction: count/size changes applied at
 * commit, and whether it holds the table's gate. */
typedef struct txn_delta {
	coll_rt_t *rt;             /* referenced while listed */
	int64_t dcount;
	int64_t dsize;
	bool gated;
	bool capped_locked;        /* holds rt->capped_lock (a capped table) */
	bool keep_locks;           /* a rollback keeps the gate and capped lock for the retry (s->prelocked) */
	bool inserted;             /* inserted into the table: wake its waiters at commit */
} txn_delta_t;

/*
 * One index's keys for one document: a sorted set of byte strings (several
 * for a multikey document), bytes in one buffer so it is cheap to refill.
 */
typedef struct keyset {
	uint8_t *data;
	size_t len, cap;
	struct key_ref {
		size_t off, len;       /* the key at data[off], its type bits right after it */
		size_t tblen;
	} *k;
	int n, ncap;
} keyset_t;

/* A collection created by the transaction open on a session (storage.h,
 * "catalog changes inside a transaction"): its descriptor (a reference,
 * published at commit) and its catalog row, written in the transaction at
 * commit. */
typedef struct staged_coll {
	storage_coll_t *c;
	bson_t *entry;
} staged_coll_t;

/* Point-operation cursors a session keeps open between calls (see
 * storage_session_cursor). */
#define SESSION_CURSORS 24   /* plain and raw ones (point reads) */

typedef struct session_cursor {
	char *uri;
	WT_CURSOR *wc;
	bool raw;                  /* opened "raw": keys and values as packed bytes */
	uint64_t hash;             /* of uri (uri_hash), compared before the string */
	/* The caller's string at the last lookup that found this slot (a
	 * descriptor's ident): the next lookup with the same pointer needs
	 * one strcmp to confirm, no hash.  Never dereferenced: the string it
	 * pointed to may be gone, so only uri is compared. */
	const char *src;
	uint64_t used;             /* s->cur_tick at last use, for LRU */
} session_cursor_t;

struct storage_session {
	storage_t *st;
	WT_SESSION *ws;
	bool in_txn;
	bool txn_failed;           /* an operation failed: only rollback is allowed */
	uint64_t txn_epoch;        /* bumped when a commit/rollback resets WT cursors */
	/* The collection scan that has not read its current RecordId yet
	 * (cursor.c: storage_cursor_next without recid); it reads it before
	 * anything resets its WiredTiger cursor (storage_cursor_settle). */
	struct storage_cursor *lazy_key;
	uint8_t *buf;              /* document views returned by doc_get/find_id */
	size_t buf_cap;
	txn_delta_t *deltas;
	int ndeltas, deltas_cap;
	/* Capped writes inside storage_txn_run (in_run): a transaction whose
	 * snapshot may predate another transaction's capped commit
	 * (st->capped_commits moved since begin_capped) would conflict on the
	 * documents that one already capped; it is retried instead with the
	 * table's gate and capped lock kept across the rollback (prelocked,
	 * referenced), so its next snapshot is taken with no capped writer
	 * able to commit in between. */
	bool in_run;
	uint64_t begin_capped;
	coll_rt_t *prelocked;
	keystring_t ks;            /* scratch key */
	keystring_t ks2;
	keystring_t tb;            /* scratch type bits */
	uint8_t *kbuf;             /* non-unique index keys (key + RecordId) */
	size_t kbuf_cap;
	uint8_t *cbuf;             /* a clustered entry's value (RecordId + document) being written */
	size_t cbuf_cap;
	/* During storage_doc_update_damages: the byte changes from the old
	 * document to the new one, for the clustered table's modify. */
	const struct bdamages *dmg;
	keyset_t oldk, newk;       /* index_apply's scratch key sets */
	/* Cached point-operation cursors (one per table, overwrite=false,
	 * always left reset).  Closed when st->cursor_epoch moves (a table was
	 * dropped: an open cursor would keep it busy). */
	session_cursor_t cur[SESSION_CURSORS];
	int ncur;
	/* The last scan cursor (cursor.c) a storage cursor gave back, reset,
	 * for the next scan of the same table: a query per request opens and
	 * closes one.  Closed with the cached ones. */
	WT_CURSOR *spare_scan;
	uint64_t cur_epoch;
	uint64_t cur_tick;
	uint64_t pool_puts;        /* returns to the pool (WT reset every Nth) */
	storage_session_t *pool_next;
	/* The op observer's state for this session (storage_session_set_observer_ctx). */
	void *obs_ctx;
	void (*obs_free)(void *ctx);
	bool unobserved;           /* storage_session_set_unobserved */
	bool observed;             /* on_write was called in the open transaction */
	uint64_t first_ts;         /* the open transaction's first commit timestamp, 0 = none */
	bool internal;             /* st->ddl_s: its WT_SESSION is ddl_ws, closed with the connection */
	/* Collections the open transaction created (catalog.c); staged_locked:
	 * the commit holds st->ddl_lock from writing their rows until they are
	 * published or discarded. */
	staged_coll_t *staged;
	int nstaged, staged_cap;
	bool staged_locked;
	/* storage_session_set_lock_timeout: how long a write waits for a
	 * table's gate (lock_timeout_set false: for ever) */
	bool lock_timeout_set;
	int64_t lock_timeout_ms;
};

/* An ident whose drop failed (EBUSY: a cursor still open somewhere); the
 * flush thread retries, and open drops whatever the catalog no longer names. */
typedef struct pending_drop {
	char *ident;
	coll_rt_t *rt;             /* a reference, or NULL (see storage_ident_drop) */
	struct pending_drop *next;
} pending_drop_t;

struct storage {
	WT_CONNECTION *conn;
	char *path;
	bool in_memory;
	WT_EVENT_HANDLER events;
	storage_keygen_fn keygen;  /* secondary-index keys, from a higher layer */
	storage_write_check_fn write_check;  /* validation again after an options change */
	storage_op_observer_t obs;           /* the oplog's hook (all NULL: none) */

	/* In-memory catalog: descriptors sorted by ns; the array holds one
	 * reference to each.  Readers take cat_lock shared and a reference;
	 * changes (under ddl_lock, then cat_lock exclusive) replace pointers. */
	pthread_rwlock_t cat_lock;
	storage_coll_t **colls;
	int ncolls, colls_cap;
	/* Bumped (release) under cat_lock exclusive by every change of colls:
	 * a thread's cached lookup (catalog.c) holds while it is unchanged. */
	uint64_t cat_gen;
	/* Views: {ns: definition, ...} (a view has no tables), replaced whole
	 * on every change, under cat_lock like colls. */
	bson_t *views;

	/* Catalog changes are serialised; they use their own session.  Index
	 * builds/drops also take index_lock first, so at most one of them
	 * waits for a table gate (two could deadlock with transactions that
	 * write to both tables). */
	pthread_mutex_t index_lock;
	pthread_mutex_t ddl_lock;
	WT_SESSION *ddl_ws;
	/* ddl_ws as a storage session: catalog transactions run on it, so the
	 * op observer can write its entry into the same transaction. */
	storage_session_t *ddl_s;
	int64_t next_ident;

	/* Session pool. */
	pthread_mutex_t pool_lock;
	storage_session_t *pool;
	int pool_size;

	/* Group commit: the flusher syncs the journal every ~100 ms when
	 * something was committed without sync, and retries pending drops. */
	pthread_t flusher;
	bool flusher_running;
	pthread_mutex_t flush_lock;
	pthread_cond_t flush_cond;
	bool stopping;
	atomic_bool dirty;
	pending_drop_t *pending;   /* under flush_lock */
	/* storage_set_journal_listener's: read-held around each sync and its
	 * two calls, write-held to change it */
	pthread_rwlock_t listener_lock;
	storage_journal_listener_t listener;

	/* Bumped before any table is dropped: sessions close their cached
	 * cursors when they see it move (idle pooled ones are closed by the
	 * dropper), so the drop does not find the table busy. */
	atomic_ullong cursor_epoch;

	/* Commits of transactions that held a capped lock (s->prelocked). */
	atomic_ullong capped_commits;
};

/* ---- engine.c ---- */
/* Set err from a WiredTiger error: WT_ROLLBACK -> 112 WriteConflict, ENOENT
 * (a table dropped under us) -> 26, others -> 1 with wiredtiger_strerror and
 * what we were doing.  Returns -1. */
int storage_wt_err(int ret, const char *what, terr_t *err);
/* Fail unless s has an open, usable transaction. */
int storage_require_txn(storage_session_t *s, terr_t *err);
/* cursor.c: the session's lazy-key scan (s->lazy_key), if any, reads its
 * current RecordId now, while its WiredTiger cursor is still positioned;
 * called before a commit, rollback or reset of the session. */
void storage_cursor_settle(storage_session_t *s);
/* Mark the transaction failed after an error inside it. */
int storage_txn_fail(storage_session_t *s, int rc);
/* Take rt's gate shared for the rest of the open transaction (once). */
int storage_txn_gate(storage_session_t *s, coll_rt_t *rt, terr_t *err);
/* For a write to a capped table: take rt's capped lock for the rest of
 * the open transaction (once; after the gate).  Inside storage_txn_run, a
 * snapshot that may be older than another capped commit fails with 112
 * (retried, the locks kept for the retry: see s->prelocked). */
int storage_txn_capped_lock(storage_session_t *s, coll_rt_t *rt, terr_t *err);
/* The open transaction inserted into rt: its insert waiters are woken
 * after the commit. */
void storage_txn_inserted(storage_session_t *s, coll_rt_t *rt);
/* This transaction's uncommitted count/size changes to rt (0 when none). */
void storage_txn_pending(storage_session_t *s, coll_rt_t *rt, int64_t *dcount, int64_t *dsize);
/* Record a count/size change for the open transaction. */
int storage_txn_delta(storage_session_t *s, coll_rt_t *rt, int64_t dcount, int64_t dsize, terr_t *err);
/* Queue an ident for a later drop (after EBUSY, or while rt's gate is
 * held); takes a reference to rt (may be NULL). */
void storage_pending_drop_add(storage_t *st, const char *ident, coll_rt_t *rt);
/* Drop an ident now, or queue it for the flusher (and storage_close) when
 * it is busy.  rt: the counters of the collection the table belongs to, with
 * rt->dropped already set, or NULL for a table no transaction can have
 * written (never published, or its index dropped under the gate).  While
 * any transaction holds rt's gate (it may have uncommitted updates in the
 * table, even with every cursor on it closed) the drop is queued: a
 * WiredTiger 3.2 drop would free those updates under the transaction. */
void storage_ident_drop(storage_t *st, WT_SESSION *ws, const char *ident, coll_rt_t *rt);
/* Make the buffer of s hold at least n bytes. */
uint8_t *storage_session_buf(storage_session_t *s, size_t n);
/* A cursor on uri (overwrite=false) from the session's cache, opened on a
 * miss; the caller uses it for one operation and hands it back with
 * storage_session_cursor_done (which resets it: a positioned cursor pins
 * a page).  Never close it.  Errors as open_cursor (26 for a dropped
 * table). */
int storage_session_cursor(storage_session_t *s, const char *uri, WT_CURSOR **out, terr_t *err);
/* The same, opened with WiredTiger's "raw" option: set_key/get_key/
 * get_value take and give WT_ITEMs of the packed bytes (a `u` column is its
 * bytes, a `q` the storage_vint_* encoding), so a point read packs its own
 * keys instead of WiredTiger's format-string packer (~900 instructions of a
 * find by _id).  Cached apart from the plain cursor of the same table. */
int storage_session_cursor_raw(storage_session_t *s, const char *uri, WT_CURSOR **out, terr_t *err);

/*
 * WiredTiger's packed form of a `q` (int64) column, as its intpack.i
 * writes it (stable since WiredTiger 1.x: the packed bytes are its on-disk
 * format): one marker byte then 0-8 big-endian bytes, ordered as the
 * values.  STORAGE_VINT_MAX bytes at most.  unpack returns the bytes read,
 * 0 for a malformed or truncated encoding.
 */
#define STORAGE_VINT_MAX 9
static inline size_t
storage_vint_pack(uint8_t *out, int64_t v)
{
	uint64_t x;
	int len;

	if (v >= 0) {
		x = (uint64_t)v;
		if (x <= 63) {                         /* 10xxxxxx */
			out[0] = (uint8_t)(0x80 | x);
			return 1;
		}
		if (x <= 63 + 8192) {                  /* 110xxxxx xxxxxxxx */
			x -= 64;
			out[0] = (uint8_t)(0xc0 | (x >> 8));
			out[1] = (uint8_t)x;
			return 2;
		}
		x -= 64 + 8192;                        /* 1110llll, l bytes */
		len = x == 0 ? 1 : 8 - (__builtin_clzll(x) >> 3);
		out[0] = (uint8_t)(0xe0 | len);
	} else {
		if (v >= -64) {                        /* 01xxxxxx */
			out[0] = (uint8_t)(0x40 | (uint64_t)(v + 64));
			return 1;
		}
		if (v >= -64 - 8192) {                 /* 001xxxxx xxxxxxxx */
			x = (uint64_t)(v + 64 + 8192);
			out[0] = (uint8_t)(0x20 | (x >> 8));
			out[1] = (uint8_t)x;
			return 2;
		}
		x = (uint64_t)v;                       /* 0001llll: leading 0xff bytes dropped */
		len = ~x == 0 ? 0 : 8 - (__builtin_clzll(~x) >> 3);
		out[0] = (uint8_t)(0x10 | (8 - len));
	}
	for (int i = 0; i < len; i++)
		out[1 + i] = (uint8_t)(x >> (8 * (len - 1 - i)));
	return (size_t)len + 1;
}

static inline size_t
storage_vint_unpack(const uint8_t *p, size_t n, int64_t *out)
{
	uint64_t x;
	size_t len;

	if (n == 0)
		return 0;
	switch (p[0] & 0xf0) {
	case 0x80: case 0x90: case 0xa0: case 0xb0:
		*out = p[0] & 0x3f;
		return 1;
	case 0xc0: case 0xd0:
		if (n < 2)
			return 0;
		*out = (int64_t)((((uint64_t)p[0] & 0x1f) << 8) | p[1]) + 64;
		return 2;
	case 0xe0:
		len = p[0] & 0x0f;
		if (len > 8 || n < len + 1)
			return 0;
		x = 0;
		for (size_t i = 1; i <= len; i++)
			x = (x << 8) | p[i];
		*out = (int64_t)(x + 64 + 8192);
		return len + 1;
	case 0x40: case 0x50: case 0x60: case 0x70:
		*out = (int64_t)(p[0] & 0x3f) - 64;
		return 1;
	case 0x20: case 0x30:
		if (n < 2)
			return 0;
		*out = (int64_t)((((uint64_t)p[0] & 0x1f) << 8) | p[1]) - 64 - 8192;
		return 2;
	case 0x10:
		len = 8 - (size_t)(p[0] & 0x0f);
		if (n < len + 1)
			return 0;
		x = UINT64_MAX;
		for (size_t i = 1; i <= len; i++)
			x = (x << 8) | p[i];
		*out = (int64_t)x;
		return len + 1;
	default:
		return 0;
	}
}

static inline void
storage_session_cursor_done(WT_CURSOR *wc)
{
	if (wc != NULL)
		wc->reset(wc);
}
/* Close every cached cursor of s. */
void storage_session_cursors_close(storage_session_t *s);
/* Show op to the observer, if any (and s is not unobserved), inside s's
 * open transaction; marks the transaction observed.  Returns its result. */
int storage_observe(storage_session_t *s, const storage_op_t *op, terr_t *err);

/* ---- catalog.c ---- */
/* A commit of a transaction that created collections (s->nstaged > 0),
 * before WiredTiger's commit: takes st->ddl_lock (s->staged_locked), fails
 * with 112 WriteConflict when one of the names exists now (created,
 * renamed or made a view by someone else since), else writes their catalog
 * rows in s's transaction.  On failure the lock is let go again. */
int storage_staged_prepare(storage_session_t *s, terr_t *err);
/* After WiredTiger's commit (committed) or a rollback: publishes the
 * staged descriptors, or releases them and drops their tables (s has no
 * transaction open any more); lets go of ddl_lock when held.  No-op when
 * nothing is staged. */
void storage_staged_finish(storage_session_t *s, bool committed);
/* Load the catalog table into memory, drop unreferenced idents, initialise
 * counters.  Called once by storage_open. */
int storage_catalog_load(storage_t *st, terr_t *err);
/* At a clean close (no session left): write every table's count and data
 * size, so the next open need not count; open removes the row at once, so
 * after a crash the tables are counted again. */
void storage_catalog_save_sizes(storage_t *st);
/* Release every descriptor of the in-memory catalog (at close). */
void storage_catalog_free(storage_t *st);
void coll_rt_release(coll_rt_t *rt);
/* Mark index ix_name of the table ident multikey in the catalog and OR
 * masks (STORAGE_INDEX_MAX_FIELDS entries, or NULL) into its multiKeyPaths
 * (no-op when the current descriptor already has all of it). */
int storage_index_mark_multikey(storage_t *st, const char *ns_db, const char *ns_coll,
                                const char *ident, const char *ix_name, const uint32_t *masks,
                                terr_t *err);
void coll_rt_ref(coll_rt_t *rt);

/* A reference to the current descriptor of the table ident (whatever its
 * name now), or NULL when it was dropped. */
storage_coll_t *storage_coll_by_ident(storage_t *st, const char *ident);

/* ---- record.c ---- */
/* Fill the new index ix of c from every document (s: a session of its own,
 * no transaction open; writers are held off by the gate).  Sets *multikey
 * when a document gave more than one key or met an array, and ORs the
 * multiKeyPaths into masks (STORAGE_INDEX_MAX_FIELDS entries, zeroed by the
 * caller).  Errors: 11000 for a duplicate in a unique index, 238 without a
 * keygen. */
int storage_index_build(storage_session_t *s, const storage_coll_t *c, const storage_index_t *ix,
                        bool *multikey, uint32_t *masks, terr_t *err);
/* The collection's runtime counters. */
static inline coll_rt_t *
storage_coll_rt(const storage_coll_t *c)
{
	return ((coll_impl_t *)c->impl)->rt;
}

/* Clustered tables (record.c).  The size of the RecordId prefix of a
 * one-`u` clustered value (storage_index_t.clustered_u). */
#define STORAGE_CLUSTERED_PREFIX 8
/* The RecordId and the document of the clustered-table entry cur stands on,
 * whatever the table's layout (`u` or the older `qu`); doc borrows cur's
 * buffer (valid until cur moves or is reset).  Returns WiredTiger's error, or
 * EINVAL for a `u` value too short to hold a RecordId. */
int storage_clustered_value(WT_CURSOR *cur, const storage_index_t *ix, int64_t *rid, WT_ITEM *doc);
/* The same from the value bytes a raw cursor returned (raw: WiredTiger's
 * packed value); doc borrows raw's bytes (doc may be raw itself).  0, or
 * EINVAL for bytes too short or a corrupt packed RecordId. */
int storage_clustered_raw(const storage_index_t *ix, const WT_ITEM *raw, int64_t *rid, WT_ITEM *doc);

#endif
