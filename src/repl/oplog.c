/*
 * oplog.c -- local.oplog.rs (repl/oplog.h): the op observer storage calls for
 * every change, the entries it writes (one builder per kind of change, in
 * one table), stamping (ts reservation + WiredTiger commit timestamp under
 * one lock), the visibility point, scans, sessions' info and the collect
 * mode of multi-document transactions, and the thread that moves
 * stable/oldest and truncates the oldest end.
 *
 * Not here: the $v: 2 diff itself (oplog_diff.c), replica-set state
 * (replset), session and transaction bookkeeping (txn), the
 * replSetResizeOplog command's parsing (commands/cmd_repl_oplog.c).
 */
#include "repl/oplog.h"
#include "repl/preimage.h"
#include "repl/cluster_params.h"
#include "repl/oplog_diff.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "common/log.h"
#include "common/mem.h"
#include "common/opctx.h"

#define MB (1024.0 * 1024.0)
#define DEFAULT_MIN_BYTES (990.0 * MB)
#define DEFAULT_MAX_BYTES (50.0 * 1024 * MB)
#define INMEM_MIN_BYTES (50.0 * MB)
#define TICK_MS 100
#define TRUNCATE_BATCH 20000
#define CODE_CAPPED_POSITION_LOST 136

struct repl_oplog {
	storage_t *st;
	repl_clock_t *clock;
	repl_oplog_options_t opts;
	/* ts reservation and timestamp_transaction happen under it, so the
	 * commit timestamps of concurrent writers follow ts order */
	pthread_mutex_t stamp_lock;
	/* the oplog's descriptor (referenced), NULL before creation */
	pthread_mutex_t coll_lock;
	storage_coll_t *coll;
	atomic_bool exists;
	uint8_t uuid[16];
	atomic_ullong recovered;       /* the last entry at open */
	/* move_timestamps and a rollback's reset (repl_oplog_rollback_reset) */
	pthread_mutex_t ts_lock;
	atomic_ullong stable;          /* last stable_timestamp set */
	atomic_ullong oldest;          /* last oldest_timestamp set */
	atomic_ullong oldest_pin;      /* oldest_timestamp stays at or below it (0: none) */
	/* CLOCK_MONOTONIC ms of the last read at a past timestamp
	 * (repl_oplog_note_snapshot_read); history is kept while recent */
	atomic_llong snapshot_ms;
	atomic_llong max_bytes;
	double min_retention_hours;    /* under coll_lock */
	/* the newest committed entry's opTime (hello's lastWrite without a
	 * scan), under last_lock */
	pthread_mutex_t last_lock;
	repl_oplog_optime_t last;
	/* The newest entry a journal sync made durable (the storage journal
	 * listener's, mongod's lastDurable on a primary), under last_lock;
	 * journaled false without a journal.  A rollback's reset bumps
	 * durable_epoch so a sync whose token predates it reports nothing. */
	repl_oplog_optime_t durable;
	uint64_t durable_epoch;
	bool journaled;
	/* The visibility point cached: WiredTiger's all_committed moves only
	 * when a stamped transaction ends, and each end bumps commit_gen (in
	 * on_end, after the commit or rollback); a reader whose generation is
	 * the cached one reuses the answer instead of querying WiredTiger (whose
	 * query_timestamp parses its configuration string every call).  The
	 * generation is read before the query, so a cached answer is never
	 * newer than its generation says, only possibly older (a lower bound:
	 * never a hole). */
	atomic_ullong commit_gen;
	pthread_mutex_t vis_lock;
	uint64_t vis_gen;
	repl_ts_t vis_ts;
	bool vis_valid;
	/* background thread */
	pthread_t thread;
	bool running, stopping;
	pthread_mutex_t thr_lock;
	pthread_cond_t thr_cond;
};

/* Per storage session (storage_session_set_observer_ctx). */
typedef struct sess_ctx {
	bool has_info;
	bson_t *lsid;              /* bson_copy'd */
	int64_t txn_number;
	int32_t stmt;              /* < 0: none */
	repl_oplog_optime_t prev;        /* committed: the last entry of this session info */
	repl_oplog_optime_t chain;       /* inside the open transaction */
	bool wrote;
	repl_oplog_optime_t txn_last;   /* the newest entry the open transaction wrote */
	bool replacement;
	bool stamped;              /* the open transaction was given a commit timestamp */
	const update_t *update;    /* the update being written (repl_oplog_session_set_update) */
	const char *retry_image;   /* "preImage" / "postImage": needsRetryImage (repl_oplog_session_set_image) */
	bool collect;
	bson_t **ops;              /* collect mode: the transaction's operations (bson_new'd) */
	bson_t **pre;              /* ... and each one's pre-image (changeStreamPreAndPostImages) or NULL */
	uint8_t *pre_uuid;         /* ... of the collection: 16 bytes per operation */
	int nops, cap;
	int64_t ops_bytes;
	/* the statements written with a stmtId since the session info was set:
	 * [0, nstmts_done) committed, the rest in the open transaction */
	repl_oplog_stmt_t *stmts;
	int nstmts, nstmts_done, stmts_cap;
	/* called in on_commit of a transaction that wrote entries with this
	 * session info (repl_oplog_session_set_commit_hook) */
	repl_oplog_commit_hook_fn commit_hook;
	void *commit_hook_arg;
	/* reused between writes: the body of a CRUD entry and the entry */
	struct rawdoc { uint8_t *buf; size_t len, cap; } rbody, rentry;
} sess_ctx_t;

/* ---- small helpers -------------------------------------------------------- */

void
repl_oplog_optime_append(bson_t *out, const char *key, repl_oplog_optime_t ot)
{
	bson_t d;

	bson_append_document_begin(out, key, -1, &d);
	bson_append_timestamp(&d, "ts", 2, repl_ts_secs(ot.ts), repl_ts_inc(ot.ts));
	bson_append_int64(&d, "t", 1, ot.t);
	bson_append_document_end(out, &d);
}

static int64_t
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int64_t
term_of(repl_oplog_t *o)
{
	return o->opts.term != NULL ? o->opts.term(o->opts.term_arg) : 1;
}

static storage_coll_t *
coll_get(repl_oplog_t *o)
{
	storage_coll_t *c;

	pthread_mutex_lock(&o->coll_lock);
	c = o->coll;
	if (c != NULL)
		storage_coll_ref(c);
	pthread_mutex_unlock(&o->coll_lock);
	return c;
}

static void
coll_set(repl_oplog_t *o, storage_coll_t *c)
{
	storage_coll_t *old;

	pthread_mutex_lock(&o->coll_lock);
	old = o->coll;
	o->coll = c;
	if (c != NULL)
		memcpy(o->uuid, c->uuid, 16);
	pthread_mutex_unlock(&o->coll_lock);
	storage_coll_release(old);
}

static void
append_uuid(bson_t *b, const char *key, const uint8_t uuid[16])
{
	bson_append_binary(b, key, -1, BSON_SUBTYPE_UUID, uuid, 16);
}

/* ---- one-pass BSON for the write path ------------------------------------ */
/* An entry of an insert, update or delete (and the entry around any body)
 * is written field by field into a buffer the storage session keeps, then
 * handed to storage as a static bson_t: no intermediate document per part,
 * no allocation once the buffer has grown (libbson's appends cost several
 * hundred instructions each; these a few dozen). */

typedef struct rawdoc rawdoc_t;

static void
rd_reserve(rawdoc_t *d, size_t n)
{
	size_t cap;

	if (d->len + n <= d->cap)
		return;
	for (cap = d->cap ? d->cap : 512; cap < d->len + n; cap *= 2)
		;
	d->buf = bson_realloc(d->buf, cap);
	d->cap = cap;
}

static void
rd_begin(rawdoc_t *d)
{
	d->len = 0;
	rd_reserve(d, 5);
	d->len = 4;
}

static void
rd_put(rawdoc_t *d, const void *p, size_t n)
{
	rd_reserve(d, n);
	memcpy(d->buf + d->len, p, n);
	d->len += n;
}

static void
rd_u32(rawdoc_t *d, uint32_t v)
{
	v = BSON_UINT32_TO_LE(v);
	rd_put(d, &v, 4);
}

static void
rd_u64(rawdoc_t *d, uint64_t v)
{
	v = BSON_UINT64_TO_LE(v);
	rd_put(d, &v, 8);
}

/* type byte and key (klen: strlen(key)) */
static void
rd_key(rawdoc_t *d, uint8_t type, const char *key, size_t klen)
{
	rd_reserve(d, klen + 2);
	d->buf[d->len++] = type;
	memcpy(d->buf + d->len, key, klen + 1);
	d->len += klen + 1;
}

#define RD_KEY(d, type, k) rd_key((d), (type), (k), sizeof(k) - 1)

static void
rd_utf8(rawdoc_t *d, const char *key, size_t klen, const char *str, size_t slen)
{
	rd_key(d, BSON_TYPE_UTF8, key, klen);
	rd_u32(d, (uint32_t)slen + 1);
	rd_put(d, str, slen);
	rd_put(d, "", 1);
}

static void
rd_uuid(rawdoc_t *d, const char *key, size_t klen, const uint8_t uuid[16])
{
	rd_key(d, BSON_TYPE_BINARY, key, klen);
	rd_u32(d, 16);
	rd_put(d, "\x04", 1);
	rd_put(d, uuid, 16);
}

/* a document's bytes as the value of key */
static void
rd_doc(rawdoc_t *d, const char *key, size_t klen, const bson_t *doc)
{
	rd_key(d, BSON_TYPE_DOCUMENT, key, klen);
	rd_put(d, bson_get_data(doc), doc->len);
}

/* open a sub-document: returns where its length goes (rd_close) */
static size_t
rd_open(rawdoc_t *d, const char *key, size_t klen)
{
	size_t at;

	rd_key(d, BSON_TYPE_DOCUMENT, key, klen);
	at = d->len;
	rd_u32(d, 0);
	return at;
}

static void
rd_close(rawdoc_t *d, size_t at)
{
	uint32_t n;

	rd_put(d, "", 1);
	n = BSON_UINT32_TO_LE((uint32_t)(d->len - at));
	memcpy(d->buf + at, &n, 4);
}

/* {_id: <doc's _id>} as the value of key (the _id element copied whole) */
static void
rd_id_doc(rawdoc_t *d, const char *key, size_t klen, const bson_t *doc)
{
	size_t at = rd_open(d, key, klen);
	bson_iter_t it;

	if (doc != NULL && bson_iter_init_find(&it, doc, "_id"))
		rd_put(d, it.raw + it.off, it.next_off - it.off);
	rd_close(d, at);
}

/* finish the document: a static view of the buffer (valid until the
 * buffer's next use) */
static void
rd_end(rawdoc_t *d, bson_t *out)
{
	uint32_t n;

	rd_put(d, "", 1);
	n = BSON_UINT32_TO_LE((uint32_t)d->len);
	memcpy(d->buf, &n, 4);
	bson_init_static(out, d->buf, d->len);
}

/* {op, ns, ui} of a CRUD entry */
static void
rd_crud_head(rawdoc_t *d, const char *op, const storage_coll_t *c)
{
	rd_begin(d);
	rd_utf8(d, "op", 2, op, 1);
	rd_utf8(d, "ns", 2, c->ns, strlen(c->ns));
	rd_uuid(d, "ui", 2, c->uuid);
}

/* Is a change to db.coll logged?  Never local (the oplog itself), nor
 * system.profile, nor what mongod writes only unreplicated:
 * config.transactions and config.image_collection. */
static bool
ns_logged(const char *db, const char *coll)
{
	if (strcmp(db, "local") == 0)
		return false;
	if (coll == NULL)
		return true;
	if (strcmp(coll, "system.profile") == 0)
		return false;
	if (strcmp(db, "config") == 0 &&
	    (strcmp(coll, "transactions") == 0 || strcmp(coll, "image_collection") == 0))
		return false;
	return true;
}

/* ---- entry bodies: one builder per kind of change ------------------------- */
/* Each appends {op, ns, ui, o[, o2]} of one entry to body[0] (and, for the
 * few changes mongod logs as two entries, body[1]); returns how many, 0 to
 * log nothing. */

typedef int (*body_fn)(sess_ctx_t *ctx, const storage_op_t *op, bson_t body[2]);

static void
cmd_head(bson_t *b, const char *db, const uint8_t *uuid)
{
	char *ns = bson_strdup_printf("%s.$cmd", db);

	bson_append_utf8(b, "op", 2, "c", 1);
	bson_append_utf8(b, "ns", 2, ns, -1);
	bson_free(ns);
	if (uuid != NULL)
		append_uuid(b, "ui", uuid);
}

static int
body_insert(sess_ctx_t *ctx, const storage_op_t *op, bson_t body[2])
{
	rawdoc_t *d = &ctx->rbody;

	rd_crud_head(d, "i", op->coll);
	rd_doc(d, "o", 1, op->doc);
	rd_id_doc(d, "o2", 2, op->doc);
	rd_end(d, &body[0]);
	return 1;
}

static int
body_update(sess_ctx_t *ctx, const storage_op_t *op, bson_t body[2])
{
	rawdoc_t *d = &ctx->rbody;
	bson_t diff;
	bool whole = ctx->replacement;

	/* an operator or pipeline update is logged as its diff (mongod's
	 * update driver logs one for every operator update) */
	bson_init(&diff);
	if (!whole && ctx->update != NULL)
		repl_diff_compute_update(op->old_doc, op->doc, ctx->update, &diff);
	else if (!whole && !repl_diff_compute(op->old_doc, op->doc, SIZE_MAX / 2, &diff))
		whole = true;
	if (!whole && bson_empty(&diff)) {
		/* nothing changed: mongod writes no entry for a no-op update */
		bson_destroy(&diff);
		return 0;
	}
	rd_crud_head(d, "u", op->coll);
	if (whole) {
		rd_doc(d, "o", 1, op->doc);
	} else {
		size_t o = rd_open(d, "o", 1);
		RD_KEY(d, BSON_TYPE_INT32, "$v");
		rd_u32(d, 2);
		rd_doc(d, "diff", 4, &diff);
		rd_close(d, o);
	}
	rd_id_doc(d, "o2", 2, op->doc);
	if (ctx->has_info && ctx->retry_image != NULL)
		rd_utf8(d, "needsRetryImage", 15, ctx->retry_image, strlen(ctx->retry_image));
	rd_end(d, &body[0]);
	bson_destroy(&diff);
	return 1;
}

static int
body_delete(sess_ctx_t *ctx, const storage_op_t *op, bson_t body[2])
{
	rawdoc_t *d = &ctx->rbody;

	rd_crud_head(d, "d", op->coll);
	rd_id_doc(d, "o", 1, op->old_doc);
	if (ctx->has_info && ctx->retry_image != NULL)
		rd_utf8(d, "needsRetryImage", 15, ctx->retry_image, strlen(ctx->retry_image));
	rd_end(d, &body[0]);
	return 1;
}

static int
body_create(sess_ctx_t *ctx, const storage_op_t *op, bson_t body[2])
{
	const storage_coll_t *c = op->coll;
	bson_iter_t it;
	bson_t o;

	(void)ctx;
	cmd_head(&body[0], c->db, c->uuid);
	bson_append_document_begin(&body[0], "o", 1, &o);
	bson_append_utf8(&o, "create", 6, c->name, -1);
	if (c->options != NULL && bson_iter_init(&it, c->options))
		while (bson_iter_next(&it))
			bson_append_value(&o, bson_iter_key(&it), -1, bson_iter_value(&it));
	for (int i = 0; i < c->nindexes; i++)
		if (c->indexes[i].is_id)
			bson_append_document(&o, "idIndex", 7, c->indexes[i].spec);
	bson_append_document_end(&body[0], &o);
	return 1;
}

static int
body_drop(sess_ctx_t *ctx, const storage_op_t *op, bson_t body[2])
{
	bson_t o;

	(void)ctx;
	cmd_head(&body[0], op->coll->db, op->coll->uuid);
	bson_append_document_begin(&body[0], "o", 1, &o);
	bson_append_utf8(&o, "drop", 4, op->coll->name, -1);
	bson_append_document_end(&body[0], &o);
	/* mongod's appendNumber: an int while it fits in 30 bits */
	bson_append_document_begin(&body[0], "o2", 2, &o);
	if (op->num_records > -(1LL << 30) && op->num_records < (1LL << 30))
		bson_append_int32(&o, "numRecords", 10, (int32_t)op->num_records);
	else
		bson_append_int64(&o, "numRecords", 10, op->num_records);
	bson_append_document_end(&body[0], &o);
	return 1;
}

static int
body_rename(sess_ctx_t *ctx, const storage_op_t *op, bson_t body[2])
{
	char *to = bson_strdup_printf("%s.%s", op->to_db, op->to_name);
	bson_t o;

	(void)ctx;
	cmd_head(&body[0], op->coll->db, op->coll->uuid);
	bson_append_document_begin(&body[0], "o", 1, &o);
	bson_append_utf8(&o, "renameCollection", -1, op->coll->ns, -1);
	bson_append_utf8(&o, "to", 2, to, -1);
	bson_append_bool(&o, "stayTemp", 8, false);
	if (op->drop_target_uuid != NULL)
		append_uuid(&o, "dropTarget", op->drop_target_uuid);
	bson_append_document_end(&body[0], &o);
	bson_free(to);
	return 1;
}

static int
body_drop_db(sess_ctx_t *ctx, const storage_op_t *op, bson_t body[2])
{
	bson_t o;

	(void)ctx;
	cmd_head(&body[0], op->db, NULL);
	bson_append_document_begin(&body[0], "o", 1, &o);
	bson_append_int32(&o, "dropDatabase", -1, 1);
	bson_append_document_end(&body[0], &o);
	return 1;
}

/* An index spec's fields after a leading command field (createIndexes'
 * entry is {createIndexes: coll, v, key, name, ...}). */
static void
append_fields(bson_t *o, const bson_t *doc)
{
	bson_iter_t it;

	if (doc != NULL && bson_iter_init(&it, doc))
		while (bson_iter_next(&it))
			bson_append_value(o, bson_iter_key(&it), -1, bson_iter_value(&it));
}

static void
random_uuid(uint8_t u[16])
{
	bson_oid_t a, b;

	/* unique within the process and across restarts (oid: time, random,
	 * counter); only the build's identity depends on it */
	bson_oid_init(&a, NULL);
	bson_oid_init(&b, NULL);
	memcpy(u, a.bytes, 12);
	memcpy(u + 12, b.bytes + 8, 4);
	u[6] = (uint8_t)((u[6] & 0x0f) | 0x40);
	u[8] = (uint8_t)((u[8] & 0x3f) | 0x80);
}

static int
body_index_create(sess_ctx_t *ctx, const storage_op_t *op, bson_t body[2])
{
	static const char *const phases[2] = {"startIndexBuild", "commitIndexBuild"};
	bson_t o, arr;
	uint8_t build[16];

	(void)ctx;
	if (op->num_records == 0) {
		/* an empty collection: one createIndexes entry, as mongod's
		 * createIndexesOnEmptyCollection */
		cmd_head(&body[0], op->coll->db, op->coll->uuid);
		bson_append_document_begin(&body[0], "o", 1, &o);
		bson_append_utf8(&o, "createIndexes", -1, op->coll->name, -1);
		append_fields(&o, op->doc);
		bson_append_document_end(&body[0], &o);
		return 1;
	}
	/* over documents: a two-phase build's start and commit entries */
	random_uuid(build);
	for (int i = 0; i < 2; i++) {
		cmd_head(&body[i], op->coll->db, op->coll->uuid);
		bson_append_document_begin(&body[i], "o", 1, &o);
		bson_append_utf8(&o, phases[i], -1, op->coll->name, -1);
		append_uuid(&o, "indexBuildUUID", build);
		bson_append_array_begin(&o, "indexes", -1, &arr);
		bson_append_document(&arr, "0", 1, op->doc);
		bson_append_array_end(&o, &arr);
		bson_append_document_end(&body[i], &o);
	}
	return 2;
}

static int
body_index_drop(sess_ctx_t *ctx, const storage_op_t *op, bson_t body[2])
{
	bson_iter_t it;
	bson_t o;

	(void)ctx;
	cmd_head(&body[0], op->coll->db, op->coll->uuid);
	bson_append_document_begin(&body[0], "o", 1, &o);
	bson_append_utf8(&o, "dropIndexes", -1, op->coll->name, -1);
	if (op->doc != NULL && bson_iter_init_find(&it, op->doc, "name"))
		bson_append_value(&o, "index", 5, bson_iter_value(&it));
	bson_append_document_end(&body[0], &o);
	if (op->doc != NULL)
		bson_append_document(&body[0], "o2", 2, op->doc);
	return 1;
}

/* Fields of now that differ from (or are missing in) before. */
static void
append_changed(bson_t *o, const bson_t *before, const bson_t *now)
{
	bson_iter_t it, bt;

	if (now == NULL || !bson_iter_init(&it, now))
		return;
	while (bson_iter_next(&it)) {
		if (before != NULL && bson_iter_init_find(&bt, before, bson_iter_key(&it))) {
			uint32_t la = bt.next_off - bt.off, lb = it.next_off - it.off;
			if (la == lb && memcmp(bt.raw + bt.off, it.raw + it.off, la) == 0)
				continue;
		}
		bson_append_value(o, bson_iter_key(&it), -1, bson_iter_value(&it));
	}
}

static int
body_set_options(sess_ctx_t *ctx, const storage_op_t *op, bson_t body[2])
{
	bson_t o, empty = BSON_INITIALIZER;

	(void)ctx;
	cmd_head(&body[0], op->coll->db, op->coll->uuid);
	bson_append_document_begin(&body[0], "o", 1, &o);
	bson_append_utf8(&o, "collMod", 7, op->coll->name, -1);
	append_changed(&o, op->old_doc, op->doc);
	bson_append_document_end(&body[0], &o);
	bson_append_document_begin(&body[0], "o2", 2, &o);
	bson_append_document(&o, "collectionOptions_old", -1, op->old_doc != NULL ? op->old_doc : &empty);
	bson_append_document_end(&body[0], &o);
	bson_destroy(&empty);
	return 1;
}

static int
body_index_set_spec(sess_ctx_t *ctx, const storage_op_t *op, bson_t body[2])
{
	bson_iter_t it;
	bson_t o, ix, old;

	(void)ctx;
	cmd_head(&body[0], op->coll->db, op->coll->uuid);
	bson_append_document_begin(&body[0], "o", 1, &o);
	bson_append_utf8(&o, "collMod", 7, op->coll->name, -1);
	bson_append_document_begin(&o, "index", 5, &ix);
	if (bson_iter_init_find(&it, op->doc, "name"))
		bson_append_value(&ix, "name", 4, bson_iter_value(&it));
	append_changed(&ix, op->old_doc, op->doc);
	/* options a collMod removed, as mongod's entry names them: hidden and
	 * prepareUnique set false (not when a unique conversion cleared
	 * prepareUnique), unique dropped by forceNonUnique */
	{
		bool now_unique = bson_iter_init_find(&it, op->doc, "unique") && bson_iter_as_bool(&it);
		bool was_unique = bson_iter_init_find(&it, op->old_doc, "unique") && bson_iter_as_bool(&it);
		if (!bson_has_field(op->doc, "hidden") && bson_iter_init_find(&it, op->old_doc, "hidden") &&
		    bson_iter_as_bool(&it))
			bson_append_bool(&ix, "hidden", 6, false);
		if (!now_unique && !bson_has_field(op->doc, "prepareUnique") &&
		    bson_iter_init_find(&it, op->old_doc, "prepareUnique") && bson_iter_as_bool(&it))
			bson_append_bool(&ix, "prepareUnique", -1, false);
		if (was_unique && !now_unique)
			bson_append_bool(&ix, "forceNonUnique", -1, true);
	}
	bson_append_document_end(&o, &ix);
	bson_append_document_end(&body[0], &o);
	/* the old values of what changed */
	bson_append_document_begin(&body[0], "o2", 2, &o);
	bson_append_document_begin(&o, "indexOptions_old", -1, &old);
	if (bson_iter_init(&it, op->doc)) {
		while (bson_iter_next(&it)) {
			bson_iter_t bt;
			if (strcmp(bson_iter_key(&it), "name") == 0)
				continue;
			if (bson_iter_init_find(&bt, op->old_doc, bson_iter_key(&it))) {
				uint32_t la = bt.next_off - bt.off, lb = it.next_off - it.off;
				if (la != lb || memcmp(bt.raw + bt.off, it.raw + it.off, la) != 0)
					bson_append_value(&old, bson_iter_key(&bt), -1, bson_iter_value(&bt));
			} else if (strcmp(bson_iter_key(&it), "hidden") == 0) {
				/* an index without the field was not hidden */
				bson_append_bool(&old, "hidden", 6, false);
			}
		}
	}
	bson_append_document_end(&o, &old);
	bson_append_document_end(&body[0], &o);
	return 1;
}

/* indexed by storage_op_kind_t */
static const struct {
	storage_op_kind_t kind;
	body_fn fn;
	bool crud;          /* collected in a transaction's applyOps (a create and an
	                     * index on an empty collection can be in one too) */
} BODIES[] = {
	{STORAGE_OP_INSERT, body_insert, true},
	{STORAGE_OP_UPDATE, body_update, true},
	{STORAGE_OP_DELETE, body_delete, true},
	{STORAGE_OP_CREATE, body_create, true},
	{STORAGE_OP_DROP, body_drop, false},
	{STORAGE_OP_RENAME, body_rename, false},
	{STORAGE_OP_DROP_DB, body_drop_db, false},
	{STORAGE_OP_INDEX_CREATE, body_index_create, true},
	{STORAGE_OP_INDEX_DROP, body_index_drop, false},
	{STORAGE_OP_SET_OPTIONS, body_set_options, false},
	{STORAGE_OP_INDEX_SET_SPEC, body_index_set_spec, false},
};

/* ---- stamping and writing ------------------------------------------------- */

static sess_ctx_t *ctx_of(storage_session_t *s, bool create);

/* Reserve n Timestamps and stamp s's transaction: the first one is the
 * transaction's first commit timestamp (its place in all_committed's
 * order), the last one what its writes carry.  Under stamp_lock, so no
 * other writer can take a later ts and commit before this one is known to
 * WiredTiger. */
static int
stamp(repl_oplog_t *o, storage_session_t *s, uint32_t n, repl_ts_t *first, terr_t *err)
{
	int ret;

	ctx_of(s, true)->stamped = true;   /* its end moves the visibility point */
	pthread_mutex_lock(&o->stamp_lock);
	ret = repl_clock_reserve(o->clock, n, first, err);
	if (ret == 0)
		ret = storage_txn_set_timestamp(s, *first, err);
	if (ret == 0 && n > 1)
		ret = storage_txn_set_timestamp(s, *first + n - 1, err);
	pthread_mutex_unlock(&o->stamp_lock);
	return ret;
}

/* Write {[lsid, txnNumber,] <body>, [stmtId,] ts, t, v, wall[, prevOpTime]}
 * at RecordId ts. */
static int
entry_write(storage_session_t *s, storage_coll_t *c, sess_ctx_t *ctx, const bson_t *body,
            repl_ts_t ts, int64_t t, int32_t stmt, repl_oplog_optime_t *prev, terr_t *err)
{
	rawdoc_t *d = &ctx->rentry;
	bool info = ctx->has_info;
	bson_t e;

	rd_begin(d);
	if (info) {
		rd_doc(d, "lsid", 4, ctx->lsid);
		RD_KEY(d, BSON_TYPE_INT64, "txnNumber");
		rd_u64(d, (uint64_t)ctx->txn_number);
	}
	/* the body's fields (its bytes between the length and the final 0) */
	rd_put(d, bson_get_data(body) + 4, body->len - 5);
	if (info && stmt >= 0) {
		RD_KEY(d, BSON_TYPE_INT32, "stmtId");
		rd_u32(d, (uint32_t)stmt);
	}
	RD_KEY(d, BSON_TYPE_TIMESTAMP, "ts");
	rd_u64(d, ts);   /* increment in the low word, seconds in the high: a Timestamp's bytes */
	RD_KEY(d, BSON_TYPE_INT64, "t");
	rd_u64(d, (uint64_t)t);
	RD_KEY(d, BSON_TYPE_INT64, "v");
	rd_u64(d, 2);
	RD_KEY(d, BSON_TYPE_DATE_TIME, "wall");
	rd_u64(d, (uint64_t)now_ms());
	if (info && prev != NULL) {
		size_t at = rd_open(d, "prevOpTime", 10);
		RD_KEY(d, BSON_TYPE_TIMESTAMP, "ts");
		rd_u64(d, prev->ts);
		RD_KEY(d, BSON_TYPE_INT64, "t");
		rd_u64(d, (uint64_t)prev->t);
		rd_close(d, at);
	}
	rd_end(d, &e);
	return storage_doc_insert_at(s, c, (recid_t)ts, &e, err);
}

static sess_ctx_t *ctx_of(storage_session_t *s, bool create);

/* Remember the newest entry s's transaction wrote (published at commit). */
static void
note_written(storage_session_t *s, repl_ts_t ts, int64_t t)
{
	sess_ctx_t *ctx = ctx_of(s, true);

	if (ts > ctx->txn_last.ts)
		ctx->txn_last = (repl_oplog_optime_t){ts, t};
}

/* Log bodies as consecutive entries in s's transaction. */
static int
log_bodies(repl_oplog_t *o, storage_session_t *s, sess_ctx_t *ctx, bson_t *bodies, int n, terr_t *err)
{
	storage_coll_t *c = coll_get(o);
	repl_ts_t first = 0;
	int64_t t;
	int ret = 0;

	if (c == NULL)
		return 0;
	ERR(stamp(o, s, (uint32_t)n, &first, err));
	t = term_of(o);
	for (int i = 0; i < n; i++) {
		repl_oplog_optime_t prev = ctx->chain;
		ERR(entry_write(s, c, ctx, &bodies[i], first + (repl_ts_t)i, t, ctx->stmt,
		    &prev, err));
		note_written(s, first + (repl_ts_t)i, t);
		if (ctx != NULL && ctx->has_info) {
			ctx->chain = (repl_oplog_optime_t){first + (repl_ts_t)i, t};
			ctx->wrote = true;
			if (ctx->stmt >= 0) {
				if (ctx->nstmts == ctx->stmts_cap) {
					ctx->stmts_cap = ctx->stmts_cap ? ctx->stmts_cap * 2 : 8;
					ctx->stmts = bson_realloc(ctx->stmts, (size_t)ctx->stmts_cap * sizeof(*ctx->stmts));
				}
				ctx->stmts[ctx->nstmts++] = (repl_oplog_stmt_t){ctx->stmt, first + (repl_ts_t)i};
			}
		}
	}
err:
	storage_coll_release(c);
	return ret;
}

static void
ctx_ops_clear(sess_ctx_t *ctx)
{
	for (int i = 0; i < ctx->nops; i++) {
		bson_destroy(ctx->ops[i]);
		if (ctx->pre != NULL && ctx->pre[i] != NULL)
			bson_destroy(ctx->pre[i]);
	}
	ctx->nops = 0;
	ctx->ops_bytes = 0;
}

static void
ctx_free(void *p)
{
	sess_ctx_t *ctx = p;

	if (ctx == NULL)
		return;
	ctx_ops_clear(ctx);
	bson_free(ctx->ops);
	bson_free(ctx->stmts);
	bson_free(ctx->rbody.buf);
	bson_free(ctx->rentry.buf);
	bson_free(ctx->pre);
	bson_free(ctx->pre_uuid);
	if (ctx->lsid != NULL)
		bson_destroy(ctx->lsid);
	bson_free(ctx);
}

static sess_ctx_t *
ctx_of(storage_session_t *s, bool create)
{
	sess_ctx_t *ctx = storage_session_observer_ctx(s);

	if (ctx == NULL && create) {
		ctx = bson_malloc0(sizeof(*ctx));
		ctx->stmt = -1;
		ctx->prev = ctx->chain = REPL_OPLOG_OPTIME_NULL;
		storage_session_set_observer_ctx(s, ctx, ctx_free);
	}
	return ctx;
}

static int
on_write(void *arg, storage_session_t *s, const storage_op_t *op, terr_t *err)
{
	repl_oplog_t *o = arg;
	sess_ctx_t *ctx;
	bson_t bodies[2];
	int n, ret;

	if (!atomic_load_explicit(&o->exists, memory_order_acquire))
		return 0;
	if (!ns_logged(op->db, op->coll != NULL ? op->coll->name : NULL))
		return 0;
	/* a secondary of a set of several members logs nothing of its own:
	 * its entries come from the set's log (issue 24, may_log) */
	if (o->opts.may_log != NULL && !o->opts.may_log(o->opts.term_arg))
		return terr_set(err, TERR_NOT_WRITABLE_PRIMARY, "not primary");
	if ((unsigned)op->kind >= sizeof(BODIES) / sizeof(BODIES[0]) || BODIES[op->kind].kind != op->kind)
		return terr_set(err, TERR_INTERNAL_ERROR, "oplog: unknown change kind %d", (int)op->kind);
	ctx = ctx_of(s, true);   /* its buffers; stamp() makes it anyway */
	bson_init(&bodies[0]);
	bson_init(&bodies[1]);
	n = BODIES[op->kind].fn(ctx, op, bodies);
	if (n == 1 && ctx != NULL && ctx->collect && BODIES[op->kind].crud) {
		/* a transaction's operation: written at commit, in applyOps */
		if (ctx->nops == ctx->cap) {
			ctx->cap = ctx->cap ? ctx->cap * 2 : 8;
			ctx->ops = bson_realloc(ctx->ops, (size_t)ctx->cap * sizeof(*ctx->ops));
			ctx->pre = bson_realloc(ctx->pre, (size_t)ctx->cap * sizeof(*ctx->pre));
			ctx->pre_uuid = bson_realloc(ctx->pre_uuid, (size_t)ctx->cap * 16);
		}
		/* its pre-image is written at the commit, keyed by the applyOps
		 * entry and index that hold the operation */
		ctx->pre[ctx->nops] = (op->kind == STORAGE_OP_UPDATE || op->kind == STORAGE_OP_DELETE) &&
		    op->old_doc != NULL && repl_preimage_enabled(op->coll) ? bson_copy(op->old_doc) : NULL;
		memcpy(ctx->pre_uuid + 16 * (size_t)ctx->nops, op->coll->uuid, 16);
		ctx->ops[ctx->nops++] = bson_copy(&bodies[0]);
		ctx->ops_bytes += bodies[0].len;
		ret = 0;
	} else {
		ret = n > 0 ? log_bodies(o, s, ctx, bodies, n, err) : 0;
		/* changeStreamPreAndPostImages: the document before, at the entry's ts */
		if (ret == 0 && n > 0 && (op->kind == STORAGE_OP_UPDATE || op->kind == STORAGE_OP_DELETE) &&
		    op->old_doc != NULL && repl_preimage_enabled(op->coll)) {
			sess_ctx_t *cx = ctx_of(s, false);
			if (cx != NULL && cx->txn_last.ts != 0)
				ret = repl_preimage_write(o->st, s, op->coll, cx->txn_last.ts, op->old_doc, err);
		}
	}
	bson_destroy(&bodies[0]);
	bson_destroy(&bodies[1]);
	return ret;
}

int
repl_oplog_txn_split(const int64_t *lens, int n, int64_t max_bytes, int64_t max_ops, int *ends)
{
	int nent = 0, in_entry = 0;
	int64_t acc = 0;

	if (n <= 0)
		return 0;
	for (int i = 0; i < n; i++) {
		if (in_entry > 0 && (acc + lens[i] > max_bytes || (max_ops > 0 && in_entry >= max_ops))) {
			ends[nent++] = i;
			acc = 0;
			in_entry = 0;
		}
		acc += lens[i];
		in_entry++;
	}
	ends[nent++] = n;
	return nent;
}

/* A transaction's applyOps chain: entries of at most
 * REPL_OPLOG_TXN_ENTRY_MAX bytes of operations each (and at most
 * maxNumberOfTransactionOperationsInSingleOplogEntry operations). */
static int
on_commit(void *arg, storage_session_t *s, terr_t *err)
{
	repl_oplog_t *o = arg;
	sess_ctx_t *ctx = ctx_of(s, false);
	storage_coll_t *c = NULL;
	int *ends = NULL, nent = 0, ret = 0;
	repl_ts_t first = 0;
	int64_t t;

	/* a retryable write's storage transaction: its owner's bookkeeping
	 * (config.transactions) commits with it */
	if (ctx != NULL && ctx->has_info && !ctx->collect && ctx->wrote && ctx->commit_hook != NULL)
		return ctx->commit_hook(ctx->commit_hook_arg, s, ctx->chain, err);
	if (ctx == NULL || !ctx->collect || ctx->nops == 0 || !atomic_load(&o->exists))
		return 0;
	if ((c = coll_get(o)) == NULL)
		return 0;
	ends = bson_malloc0(sizeof(int) * (size_t)ctx->nops);
	{
		int64_t *lens = bson_malloc(sizeof(int64_t) * (size_t)ctx->nops);
		for (int i = 0; i < ctx->nops; i++)
			lens[i] = ctx->ops[i]->len;
		nent = repl_oplog_txn_split(lens, ctx->nops, REPL_OPLOG_TXN_ENTRY_MAX,
		    o->opts.txn_ops_per_entry != NULL ? atomic_load(o->opts.txn_ops_per_entry) : 0, ends);
		bson_free(lens);
	}
	ERR(stamp(o, s, (uint32_t)nent, &first, err));
	t = term_of(o);
	for (int e = 0, from = 0; e < nent; from = ends[e], e++) {
		bson_t body, ob, arr;
		repl_oplog_optime_t prev = ctx->chain;
		char key[16];

		bson_init(&body);
		bson_append_utf8(&body, "op", 2, "c", 1);
		bson_append_utf8(&body, "ns", 2, "admin.$cmd", -1);
		bson_append_document_begin(&body, "o", 1, &ob);
		bson_append_array_begin(&ob, "applyOps", -1, &arr);
		for (int i = from; i < ends[e]; i++) {
			snprintf(key, sizeof(key), "%d", i - from);
			bson_append_document(&arr, key, -1, ctx->ops[i]);
		}
		bson_append_array_end(&ob, &arr);
		if (e < nent - 1)
			bson_append_bool(&ob, "partialTxn", -1, true);
		else if (nent > 1)
			bson_append_int64(&ob, "count", 5, ctx->nops);
		bson_append_document_end(&body, &ob);
		ret = entry_write(s, c, ctx, &body, first + (repl_ts_t)e, t, -1, &prev, err);
		bson_destroy(&body);
		if (ret != 0)
			goto err;
		ctx->chain = (repl_oplog_optime_t){first + (repl_ts_t)e, t};
		ctx->wrote = true;
		note_written(s, first + (repl_ts_t)e, t);
		for (int i = from; i < ends[e] && ret == 0; i++)
			if (ctx->pre[i] != NULL)
				ret = repl_preimage_write_at(o->st, s, ctx->pre_uuid + 16 * (size_t)i, first + (repl_ts_t)e,
				    i - from, ctx->pre[i], err);
		if (ret != 0)
			goto err;
	}
	/* the transaction's config.transactions row commits with its entries
	 * (mongod writes both in one WriteUnitOfWork) */
	if (ctx->commit_hook != NULL)
		ret = ctx->commit_hook(ctx->commit_hook_arg, s, ctx->chain, err);
err:
	bson_free(ends);
	storage_coll_release(c);
	return ret;
}

static void
on_end(void *arg, storage_session_t *s, bool committed)
{
	repl_oplog_t *o = arg;
	sess_ctx_t *ctx = ctx_of(s, false);

	if (ctx == NULL)
		return;
	if (ctx->stamped) {
		ctx->stamped = false;
		atomic_fetch_add(&o->commit_gen, 1);
	}
	if (committed && ctx->txn_last.ts != 0) {
		pthread_mutex_lock(&o->last_lock);
		if (ctx->txn_last.ts > o->last.ts)
			o->last = ctx->txn_last;
		pthread_mutex_unlock(&o->last_lock);
	}
	ctx->txn_last = (repl_oplog_optime_t){0, 0};
	if (committed && ctx->wrote)
		ctx->prev = ctx->chain;
	else
		ctx->chain = ctx->prev;
	if (committed)
		ctx->nstmts_done = ctx->nstmts;
	else
		ctx->nstmts = ctx->nstmts_done;
	ctx->wrote = false;
	ctx->collect = false;
	ctx_ops_clear(ctx);
}

static recid_t
scan_limit(void *arg, const storage_coll_t *c)
{
	repl_oplog_t *o = arg;

	if (!atomic_load_explicit(&o->exists, memory_order_acquire) || strcmp(c->db, "local") != 0 ||
	    memcmp(c->uuid, o->uuid, 16) != 0)
		return INT64_MAX;
	return (recid_t)repl_oplog_visible(o);
}

/* ---- visibility ----------------------------------------------------------- */

repl_ts_t
repl_oplog_visible(repl_oplog_t *o)
{
	uint64_t ts = 0, rec = atomic_load(&o->recovered);
	uint64_t gen = atomic_load(&o->commit_gen);
	bool ok;

	pthread_mutex_lock(&o->vis_lock);
	if (o->vis_valid && o->vis_gen == gen) {
		ts = o->vis_ts;
		pthread_mutex_unlock(&o->vis_lock);
		return ts > rec ? ts : rec;
	}
	pthread_mutex_unlock(&o->vis_lock);
	ok = storage_ts_all_committed(o->st, &ts, NULL) == 0;
	if (!ok)
		ts = 0;
	pthread_mutex_lock(&o->vis_lock);
	if (ok && (!o->vis_valid || gen >= o->vis_gen)) {
		o->vis_gen = gen;
		o->vis_ts = ts;
		o->vis_valid = true;
	}
	pthread_mutex_unlock(&o->vis_lock);
	return ts > rec ? ts : rec;
}

bool
repl_oplog_wait_visible(repl_oplog_t *o, repl_ts_t ts, int64_t timeout_ms)
{
	for (int64_t waited = 0; ; waited++) {
		if (repl_oplog_visible(o) >= ts)
			return true;
		if (waited >= timeout_ms)
			return false;
		usleep(1000);
	}
}

/* The newest entry <= limit: its opTime ({0, -1} when none). */
static repl_oplog_optime_t
newest_entry(repl_oplog_t *o, storage_session_t *s, repl_ts_t limit)
{
	repl_oplog_optime_t ot = REPL_OPLOG_OPTIME_NULL;
	storage_coll_t *c = coll_get(o);
	storage_cursor_t *cur = NULL;
	recid_t rid;
	bson_t doc;
	bson_iter_t it;

	if (c == NULL)
		return ot;
	if (storage_scan_open(s, c, true, &cur, NULL) == 0) {
		while (storage_cursor_next(cur, &rid, &doc, NULL, NULL, NULL) == 1) {
			if (limit != 0 && (repl_ts_t)rid > limit)
				continue;
			ot.ts = (repl_ts_t)rid;
			if (bson_iter_init_find(&it, &doc, "t") && BSON_ITER_HOLDS_INT64(&it))
				ot.t = bson_iter_int64(&it);
			break;
		}
		storage_cursor_close(cur);
	}
	storage_coll_release(c);
	return ot;
}

repl_oplog_optime_t
repl_oplog_last_optime(repl_oplog_t *o)
{
	storage_session_t *s;
	repl_oplog_optime_t ot;
	repl_ts_t vis = repl_oplog_visible(o);

	if (!atomic_load(&o->exists) || vis == 0)
		return REPL_OPLOG_OPTIME_NULL;
	/* usually the newest committed entry is visible: no scan */
	pthread_mutex_lock(&o->last_lock);
	ot = o->last;
	pthread_mutex_unlock(&o->last_lock);
	if (ot.ts != 0 && ot.ts <= vis)
		return ot;
	if ((s = storage_session_pool_get(o->st, NULL)) == NULL)
		return REPL_OPLOG_OPTIME_NULL;
	ot = newest_entry(o, s, vis);
	storage_session_pool_put(o->st, s);
	return ot;
}

/* ---- durability: the storage journal listener --------------------------- */

/* Before a journal sync: the newest committed entry (no holes below it:
 * repl_oplog_last_optime stops at the visibility point) and the rollback
 * epoch it belongs to. */
static void
journal_token(void *arg, storage_journal_token_t *tok)
{
	repl_oplog_t *o = arg;
	repl_oplog_optime_t ot;
	uint64_t epoch;

	pthread_mutex_lock(&o->last_lock);
	epoch = o->durable_epoch;
	pthread_mutex_unlock(&o->last_lock);
	ot = repl_oplog_last_optime(o);
	tok->word[0] = ot.ts;
	tok->word[1] = (uint64_t)ot.t;
	tok->word[2] = epoch;
}

/* After it: the token's entry is on disk (forward only). */
static void
journal_durable(void *arg, const storage_journal_token_t *tok)
{
	repl_oplog_t *o = arg;

	pthread_mutex_lock(&o->last_lock);
	if (tok->word[2] == o->durable_epoch && tok->word[0] > o->durable.ts) {
		o->durable.ts = tok->word[0];
		o->durable.t = (int64_t)tok->word[1];
	}
	pthread_mutex_unlock(&o->last_lock);
}

repl_oplog_optime_t
repl_oplog_durable_optime(repl_oplog_t *o)
{
	repl_oplog_optime_t ot;

	if (!o->journaled)
		return repl_oplog_last_optime(o);
	if (!atomic_load(&o->exists))
		return REPL_OPLOG_OPTIME_NULL;
	pthread_mutex_lock(&o->last_lock);
	ot = o->durable;
	pthread_mutex_unlock(&o->last_lock);
	return ot;
}

/* ---- thread: stable/oldest, truncation ------------------------------------ */

void
repl_oplog_pin_oldest(repl_oplog_t *o, repl_ts_t ts)
{
	storage_coll_t *c;
	repl_ts_t old, seen;

	if (o == NULL || (old = atomic_exchange(&o->oldest_pin, ts)) == ts || ts == 0)
		return;
	/* the commit point moved over visible entries (a primary's: a
	 * secondary learns it before it applies them, and the applier's
	 * inserts wake the readers then): readers it bounds (change streams)
	 * look again.  The visibility point last computed is enough: a reader
	 * that stopped at the old point computed a newer one first. */
	pthread_mutex_lock(&o->vis_lock);
	seen = o->vis_ts;
	pthread_mutex_unlock(&o->vis_lock);
	if (old >= seen)
		return;
	if ((c = coll_get(o)) != NULL) {
		storage_coll_wake(c);
		storage_coll_release(c);
	}
}

repl_ts_t
repl_oplog_commit_point(repl_oplog_t *o)
{
	return o != NULL ? (repl_ts_t)atomic_load(&o->oldest_pin) : 0;
}

void
repl_oplog_note_snapshot_read(repl_oplog_t *o)
{
	if (o != NULL)
		atomic_store(&o->snapshot_ms, tm_now_us() / 1000);
}

/*
 * stable follows the visibility point.  oldest trails it by
 * REPL_OPLOG_HISTORY_SECS while snapshot reads are in use (one within the
 * last REPL_OPLOG_HISTORY_SECS), and otherwise follows stable: every
 * timestamped version younger than oldest stays in a key's update chain,
 * and WiredTiger 3.2 walks that chain on every update of the key
 * (__wt_update_obsolete_check), so 5 s of history on a hot key -- a
 * session's config.transactions row, rewritten by each of its retryable
 * writes -- cost a retryable insert 2x its CPU (docs/benchmarks.md).
 * oldest never moves back: once reads at past times start, the window
 * grows from there.
 */
static void move_timestamps_locked(repl_oplog_t *o);

static void
move_timestamps(repl_oplog_t *o)
{
	pthread_mutex_lock(&o->ts_lock);
	move_timestamps_locked(o);
	pthread_mutex_unlock(&o->ts_lock);
}

static void
move_timestamps_locked(repl_oplog_t *o)
{
	repl_ts_t vis = repl_oplog_visible(o), oldest = 0, cur = atomic_load(&o->oldest);
	int64_t since = tm_now_us() / 1000 - atomic_load(&o->snapshot_ms);

	if (vis == 0 || vis <= atomic_load(&o->stable))
		return;
	if (atomic_load(&o->snapshot_ms) != 0 && since < REPL_OPLOG_HISTORY_SECS * 1000) {
		if (repl_ts_secs(vis) > REPL_OPLOG_HISTORY_SECS)
			oldest = REPL_TS(repl_ts_secs(vis) - REPL_OPLOG_HISTORY_SECS, 0);
	} else {
		oldest = vis;
	}
	{
		/* a set of several members: history back to the commit point
		 * stays readable (readConcern majority reads there) */
		repl_ts_t pin = atomic_load(&o->oldest_pin);
		if (pin != 0 && oldest > pin)
			oldest = pin;
	}
	if (oldest <= cur)
		oldest = 0;   /* unchanged */
	if (storage_ts_set(o->st, vis, oldest, NULL) == 0) {
		atomic_store(&o->stable, vis);
		if (oldest != 0)
			atomic_store(&o->oldest, oldest);
	}
}

/* The periodic no-op: only when nothing was logged since the last look. */
static void
periodic_noop(repl_oplog_t *o, repl_ts_t *seen)
{
	storage_session_t *s;
	repl_ts_t last;
	bson_t msg = BSON_INITIALIZER;

	pthread_mutex_lock(&o->last_lock);
	last = o->last.ts;
	pthread_mutex_unlock(&o->last_lock);
	if (last != *seen) {
		*seen = last;
		return;
	}
	if (o->opts.primary != NULL && !o->opts.primary(o->opts.term_arg))
		return;
	if ((s = storage_session_pool_get(o->st, NULL)) == NULL)
		return;
	bson_append_utf8(&msg, "msg", 3, "periodic noop", -1);
	(void)repl_oplog_noop(o, s, &msg, NULL, NULL);
	storage_session_pool_put(o->st, s);
	bson_destroy(&msg);
	pthread_mutex_lock(&o->last_lock);
	*seen = o->last.ts;
	pthread_mutex_unlock(&o->last_lock);
}

/*
 * Pre-images older than changeStreamOptions.preAndPostImages.
 * expireAfterSeconds (repl/cluster_params.h), when it is a number: batches
 * of PREIMAGE_BATCH, each its own transaction, stopping at shutdown.
 */
#define PREIMAGE_BATCH 1000

static void
preimage_pass(repl_oplog_t *o)
{
	storage_session_t *s;
	int64_t secs, removed = 0;
	bool stop = false;

	if ((s = storage_session_pool_get(o->st, NULL)) == NULL)
		return;
	if ((secs = repl_cluster_param_preimage_expire_secs(o->st, s)) > 0) {
		struct timespec ts;
		int64_t now_ms;
		clock_gettime(CLOCK_REALTIME, &ts);
		now_ms = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
		int64_t before = secs < now_ms / 1000 ? now_ms - secs * 1000 : 0;
		terr_t err = TERR_INIT;
		do {
			if (before <= 0 || repl_preimage_expire(o->st, s, 0, before, PREIMAGE_BATCH, &removed, &err) != 0)
				break;
			pthread_mutex_lock(&o->thr_lock);
			stop = o->stopping;
			pthread_mutex_unlock(&o->thr_lock);
		} while (removed == PREIMAGE_BATCH && !stop);
		if (err.code != 0) {
			bson_t attr = BSON_INITIALIZER;
			BSON_APPEND_UTF8(&attr, "error", err.msg != NULL ? err.msg : "");
			tlog('W', "REPL", 7080100, "Pre-image expiry failed", &attr);
			bson_destroy(&attr);
		}
		terr_clear(&err);
	}
	storage_session_pool_put(o->st, s);
}

static void *
thread_main(void *arg)
{
	repl_oplog_t *o = arg;
	int interval = o->opts.truncate_interval_ms > 0 ? o->opts.truncate_interval_ms : 1000;
	int64_t noop_ms = o->opts.noop_interval_secs == 0 ? 10000 : (int64_t)o->opts.noop_interval_secs * 1000;
	int64_t since = 0, since_noop = 0;
	repl_ts_t seen = 0;

	tlog_set_ctx("OplogThread");
	pthread_mutex_lock(&o->thr_lock);
	while (!o->stopping) {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += TICK_MS * 1000000L;
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		pthread_cond_timedwait(&o->thr_cond, &o->thr_lock, &ts);
		if (o->stopping)
			break;
		pthread_mutex_unlock(&o->thr_lock);
		move_timestamps(o);
		since += TICK_MS;
		since_noop += TICK_MS;
		if (noop_ms > 0 && since_noop >= noop_ms && atomic_load(&o->exists)) {
			since_noop = 0;
			periodic_noop(o, &seen);
		}
		if (since >= interval && atomic_load(&o->exists)) {
			terr_t err = TERR_INIT;
			since = 0;
			if (repl_oplog_truncate(o, NULL, &err) != 0) {
				bson_t attr = BSON_INITIALIZER;
				BSON_APPEND_UTF8(&attr, "error", err.msg != NULL ? err.msg : "");
				tlog('W', "REPL", 22246, "Oplog truncation failed", &attr);
				bson_destroy(&attr);
			}
			terr_clear(&err);
			preimage_pass(o);
		}
		pthread_mutex_lock(&o->thr_lock);
	}
	pthread_mutex_unlock(&o->thr_lock);
	return NULL;
}

int
repl_oplog_truncate(repl_oplog_t *o, int64_t *removed, terr_t *err)
{
	storage_session_t *s = NULL;
	storage_coll_t *c = NULL;
	storage_cursor_t *cur = NULL;
	int64_t count = 0, size = 0, ssize = 0, need, acc = 0, pend_size = 0, nscan = 0, nrem = 0;
	recid_t rid, upto = 0, pending = 0;
	double hours;
	uint32_t cutoff = 0;
	bson_t doc;
	int ret = 0, r;

	if (removed != NULL)
		*removed = 0;
	if ((c = coll_get(o)) == NULL)
		return 0;
	if ((s = storage_session_pool_get(o->st, err)) == NULL) {
		storage_coll_release(c);
		return -1;
	}
	ERR(storage_coll_stats(o->st, s, c, &count, &size, &ssize, err));
	need = size - atomic_load(&o->max_bytes);
	if (need <= 0 || count <= 1)
		goto err;
	pthread_mutex_lock(&o->coll_lock);
	hours = o->min_retention_hours;
	pthread_mutex_unlock(&o->coll_lock);
	if (hours > 0) {
		double cut = (double)time(NULL) - hours * 3600.0;
		cutoff = cut > 0 ? (uint32_t)cut : 0;
	}
	/* forward from the oldest, bounded by the visibility point (the
	 * scan's limit); an entry is taken only once a later one is seen, so
	 * the newest visible entry always stays */
	ERR(storage_scan_open(s, c, false, &cur, err));
	while ((r = storage_cursor_next(cur, &rid, &doc, NULL, NULL, err)) == 1) {
		if (pending != 0) {
			upto = pending;
			acc += pend_size;
			if (acc >= need || ++nscan >= TRUNCATE_BATCH)
				break;
		}
		if (cutoff != 0 && repl_ts_secs((repl_ts_t)rid) >= cutoff)
			break;
		pending = rid;
		pend_size = doc.len;
	}
	storage_cursor_close(cur);
	cur = NULL;
	if (r < 0) {
		ret = -1;
		goto err;
	}
	if (upto == 0)
		goto err;
	ERR(storage_txn_begin(s, err));
	{
		bool was = storage_session_set_unobserved(s, true);
		ret = storage_doc_delete_upto(s, c, upto, 0, &nrem, NULL, err);
		storage_session_set_unobserved(s, was);
	}
	if (ret != 0) {
		storage_txn_rollback(s);
		goto err;
	}
	ERR(storage_txn_commit(s, false, err));
	if (removed != NULL)
		*removed = nrem;
	/* pre-images live as long as their entries (repl/preimage.h) */
	ERR(repl_preimage_expire(o->st, s, (repl_ts_t)upto + 1, 0, 0, NULL, err));
err:
	storage_cursor_close(cur);
	storage_session_pool_put(o->st, s);
	storage_coll_release(c);
	return ret;
}

/* ---- open / create / close ------------------------------------------------ */

static double
default_bytes(const repl_oplog_options_t *opts)
{
	double bytes = 0, lo = DEFAULT_MIN_BYTES;

	if (opts->in_memory) {
		long pages = sysconf(_SC_PHYS_PAGES), psize = sysconf(_SC_PAGESIZE);
		lo = INMEM_MIN_BYTES;
		if (pages > 0 && psize > 0)
			bytes = (double)pages * (double)psize / 20.0;
	} else if (opts->dbpath != NULL) {
		struct statvfs sv;
		if (statvfs(opts->dbpath, &sv) == 0)
			bytes = (double)sv.f_bavail * (double)sv.f_frsize / 20.0;
	}
	if (bytes < lo)
		bytes = lo;
	if (bytes > DEFAULT_MAX_BYTES)
		bytes = DEFAULT_MAX_BYTES;
	return bytes;
}

/* options.size of the oplog's catalog entry, or 0. */
static int64_t
options_size(const storage_coll_t *c)
{
	bson_iter_t it;

	if (c->options != NULL && bson_iter_init_find(&it, c->options, "size") && BSON_ITER_HOLDS_NUMBER(&it))
		return bson_iter_as_int64(&it);
	return 0;
}

int
repl_oplog_open(storage_t *st, repl_clock_t *clock, const repl_oplog_options_t *opts, repl_oplog_t **out,
                terr_t *err)
{
	repl_oplog_t *o;
	storage_coll_t *c = NULL;
	storage_op_observer_t obs = {on_write, on_commit, on_end, scan_limit, NULL};
	storage_journal_listener_t jl = {journal_token, journal_durable, NULL};

	*out = NULL;
	o = bson_malloc0(sizeof(*o));
	jl.arg = o;
	o->st = st;
	o->clock = clock;
	if (opts != NULL)
		o->opts = *opts;
	o->opts.dbpath = NULL;      /* borrowed only for the default size below */
	pthread_mutex_init(&o->stamp_lock, NULL);
	pthread_mutex_init(&o->ts_lock, NULL);
	pthread_mutex_init(&o->coll_lock, NULL);
	pthread_mutex_init(&o->last_lock, NULL);
	pthread_mutex_init(&o->vis_lock, NULL);
	pthread_mutex_init(&o->thr_lock, NULL);
	pthread_cond_init(&o->thr_cond, NULL);
	atomic_init(&o->exists, false);
	atomic_init(&o->recovered, 0);
	atomic_init(&o->stable, 0);
	atomic_init(&o->oldest_pin, 0);
	atomic_init(&o->max_bytes, (long long)(o->opts.size_mb > 0 ? o->opts.size_mb * MB
	    : default_bytes(opts != NULL ? opts : &o->opts)));
	if (storage_coll_get(st, REPL_OPLOG_DB, REPL_OPLOG_COLL, &c, NULL) == 0) {
		storage_session_t *s = storage_session_pool_get(st, err);
		repl_oplog_optime_t last;
		int64_t sz = options_size(c);

		if (s == NULL) {
			storage_coll_release(c);
			repl_oplog_close(o);
			return -1;
		}
		/* the size it was created or resized with (a later --oplogSize
		 * does not change an existing oplog, as mongod) */
		if (sz > 0)
			atomic_store(&o->max_bytes, sz);
		coll_set(o, c);
		atomic_store(&o->exists, true);
		last = newest_entry(o, s, 0);
		storage_session_pool_put(st, s);
		if (last.ts != 0) {
			repl_clock_recover(clock, last.ts);
			atomic_store(&o->recovered, last.ts);
			o->last = last;
			move_timestamps(o);
		}
	}
	obs.arg = o;
	storage_set_op_observer(st, &obs);
	/* what recovery found is on disk */
	o->durable = o->last;
	o->journaled = storage_set_journal_listener(st, &jl);
	if (pthread_create(&o->thread, NULL, thread_main, o) != 0) {
		repl_oplog_close(o);
		return terr_set(err, TERR_INTERNAL_ERROR, "could not start the oplog thread");
	}
	o->running = true;
	*out = o;
	return 0;
}

void
repl_oplog_close(repl_oplog_t *o)
{
	if (o == NULL)
		return;
	if (o->running) {
		pthread_mutex_lock(&o->thr_lock);
		o->stopping = true;
		pthread_cond_signal(&o->thr_cond);
		pthread_mutex_unlock(&o->thr_lock);
		pthread_join(o->thread, NULL);
	}
	storage_set_op_observer(o->st, NULL);
	if (o->journaled)
		storage_set_journal_listener(o->st, NULL);
	coll_set(o, NULL);
	pthread_mutex_destroy(&o->stamp_lock);
	pthread_mutex_destroy(&o->ts_lock);
	pthread_mutex_destroy(&o->coll_lock);
	pthread_mutex_destroy(&o->last_lock);
	pthread_mutex_destroy(&o->vis_lock);
	pthread_mutex_destroy(&o->thr_lock);
	pthread_cond_destroy(&o->thr_cond);
	bson_free(o);
}

bool
repl_oplog_exists(repl_oplog_t *o)
{
	return atomic_load(&o->exists);
}

repl_clock_t *
repl_oplog_clock(repl_oplog_t *o)
{
	return o->clock;
}

int64_t
repl_oplog_max_bytes(repl_oplog_t *o)
{
	return atomic_load(&o->max_bytes);
}

static void
append_size(bson_t *b, int64_t bytes)
{
	if (bytes <= INT32_MAX)
		bson_append_int32(b, "size", 4, (int32_t)bytes);
	else
		bson_append_int64(b, "size", 4, bytes);
}

typedef struct noop_arg {
	repl_oplog_t *o;
	const bson_t *obj;
	bool before_election;      /* term -1: written before any election */
	repl_oplog_optime_t at;
	const bson_t *o2;          /* NULL: none */
	bool no_session;           /* without the session info s carries */
} noop_arg_t;
static int noop_fn(storage_session_t *s, void *p, terr_t *err);

int
repl_oplog_create(repl_oplog_t *o, const bson_t *msg, bool *created, repl_oplog_optime_t *at, terr_t *err)
{
	storage_coll_t *c = NULL;
	storage_session_t *s;
	bson_t opts = BSON_INITIALIZER, dflt = BSON_INITIALIZER;
	int ret = 0;

	if (created != NULL)
		*created = false;
	if (at != NULL)
		*at = REPL_OPLOG_OPTIME_NULL;
	if (atomic_load(&o->exists))
		goto done;
	bson_append_bool(&opts, "capped", 6, true);
	append_size(&opts, atomic_load(&o->max_bytes));
	bson_append_bool(&opts, "autoIndexId", 11, false);
	ret = storage_coll_create(o->st, NULL, REPL_OPLOG_DB, REPL_OPLOG_COLL, &opts, err);
	if (ret != 0 && err != NULL && err->code == TERR_NAMESPACE_EXISTS) {
		terr_clear(err);
		ret = 0;
	}
	if (ret != 0)
		goto done;
	if ((ret = storage_coll_get(o->st, REPL_OPLOG_DB, REPL_OPLOG_COLL, &c, err)) != 0) {
		ret = terr_set(err, TERR_INTERNAL_ERROR, "local.oplog.rs vanished after its creation");
		goto done;
	}
	coll_set(o, c);
	atomic_store_explicit(&o->exists, true, memory_order_release);
	if (created != NULL)
		*created = true;
	if (msg == REPL_OPLOG_CREATE_EMPTY)
		goto done;   /* a member of several: entries come from the set's log */
	if ((s = storage_session_pool_get(o->st, err)) == NULL) {
		ret = -1;
		goto done;
	}
	/* mongod's two: "initiating set" before the set's first election (term
	 * -1), then "new primary" of the node that won it */
	bson_append_utf8(&dflt, "msg", 3, "initiating set", -1);
	{
		noop_arg_t a = {o, msg != NULL ? msg : &dflt, true, REPL_OPLOG_OPTIME_NULL};
		bson_t np = BSON_INITIALIZER;
		ret = storage_txn_run(s, noop_fn, &a, false, err);
		bson_append_utf8(&np, "msg", 3, "new primary", -1);
		if (ret == 0)
			ret = repl_oplog_noop(o, s, &np, at, err);
		bson_destroy(&np);
	}
	storage_session_pool_put(o->st, s);
done:
	bson_destroy(&opts);
	bson_destroy(&dflt);
	return ret;
}

/* ---- no-ops, find --------------------------------------------------------- */



static int
noop_fn(storage_session_t *s, void *p, terr_t *err)
{
	noop_arg_t *a = p;
	storage_coll_t *c = coll_get(a->o);
	repl_ts_t ts = 0;
	int64_t t;
	bson_t body = BSON_INITIALIZER;
	int ret = 0;

	if (c == NULL)
		return terr_set(err, TERR_ILLEGAL_OPERATION, "the oplog does not exist");
	bson_append_utf8(&body, "op", 2, "n", 1);
	bson_append_utf8(&body, "ns", 2, "", 0);
	bson_append_document(&body, "o", 1, a->obj);
	if (a->o2 != NULL)
		bson_append_document(&body, "o2", 2, a->o2);
	ERR(stamp(a->o, s, 1, &ts, err));
	t = a->before_election ? -1 : term_of(a->o);
	{
		sess_ctx_t *ctx = ctx_of(s, true);
		bool info = ctx->has_info;
		if (a->no_session)
			ctx->has_info = false;
		ret = entry_write(s, c, ctx, &body, ts, t, -1, NULL, err);
		ctx->has_info = info;
		if (ret != 0)
			goto err;
	}
	note_written(s, ts, t);
	a->at = (repl_oplog_optime_t){ts, t};
err:
	bson_destroy(&body);
	storage_coll_release(c);
	return ret;
}

int
repl_oplog_noop(repl_oplog_t *o, storage_session_t *s, const bson_t *obj, repl_oplog_optime_t *at, terr_t *err)
{
	noop_arg_t a = {o, obj, false, REPL_OPLOG_OPTIME_NULL};

	if (!atomic_load(&o->exists))
		return terr_set(err, TERR_ILLEGAL_OPERATION, "the oplog does not exist");
	RET(storage_txn_run(s, noop_fn, &a, false, err));
	if (at != NULL)
		*at = a.at;
	return 0;
}

int
repl_oplog_noop_note(repl_oplog_t *o, storage_session_t *s, const bson_t *obj, const bson_t *o2,
                     repl_oplog_optime_t *at, terr_t *err)
{
	noop_arg_t a = {o, obj, false, REPL_OPLOG_OPTIME_NULL, o2, true};

	if (!atomic_load(&o->exists))
		return terr_set(err, TERR_ILLEGAL_OPERATION, "the oplog does not exist");
	if (!storage_txn_active(s))
		return terr_set(err, TERR_INTERNAL_ERROR, "repl_oplog_noop_note needs an open transaction");
	/* as every logged write: a member that may not log refuses it */
	if (o->opts.may_log != NULL && !o->opts.may_log(o->opts.term_arg))
		return terr_set(err, TERR_NOT_WRITABLE_PRIMARY, "not primary");
	RET(noop_fn(s, &a, err));
	if (at != NULL)
		*at = a.at;
	return 0;
}

int
repl_oplog_find(repl_oplog_t *o, storage_session_t *s, repl_ts_t ts, bson_t *entry, terr_t *err)
{
	storage_coll_t *c = coll_get(o);
	bson_t view;
	int r;

	if (c == NULL)
		return 1;
	r = storage_doc_get(s, c, (recid_t)ts, &view, err);
	if (r == 0)
		bson_copy_to(&view, entry);
	storage_coll_release(c);
	return r < 0 ? -1 : r;
}

/* ---- scans ---------------------------------------------------------------- */

struct repl_oplog_cursor {
	repl_oplog_t *o;
	storage_coll_t *c;
	storage_cursor_t *cur;
	repl_ts_t after;           /* entries <= it are skipped */
	repl_ts_t last;            /* the last entry returned */
	storage_session_t *s;
};

int
repl_oplog_scan_open(repl_oplog_t *o, storage_session_t *s, repl_ts_t after, repl_oplog_cursor_t **out,
                     terr_t *err)
{
	repl_oplog_cursor_t *cur;

	*out = NULL;
	cur = bson_malloc0(sizeof(*cur));
	cur->o = o;
	cur->after = after;
	if ((cur->c = coll_get(o)) == NULL) {
		bson_free(cur);
		return terr_set(err, TERR_NAMESPACE_NOT_FOUND, "the oplog does not exist");
	}
	if (storage_scan_open(s, cur->c, false, &cur->cur, err) != 0) {
		repl_oplog_cursor_close(cur);
		return -1;
	}
	/* RecordId = ts: start right after `after`, not from the oldest */
	if (after != 0)
		storage_cursor_seek_after(cur->cur, (recid_t)after);
	cur->s = s;
	*out = cur;
	return 0;
}

int
repl_oplog_cursor_next(repl_oplog_cursor_t *cur, bson_t *entry, terr_t *err)
{
	recid_t rid;
	int r;

	while ((r = storage_cursor_next(cur->cur, &rid, entry, NULL, NULL, err)) == 1) {
		if ((repl_ts_t)rid <= cur->after || (repl_ts_t)rid <= cur->last)
			continue;
		cur->last = (repl_ts_t)rid;
		return 1;
	}
	return r;
}

int
repl_oplog_cursor_save(repl_oplog_cursor_t *cur, terr_t *err)
{
	cur->s = NULL;
	return storage_cursor_save(cur->cur, err);
}

int
repl_oplog_cursor_restore(repl_oplog_cursor_t *cur, storage_session_t *s, terr_t *err)
{
	bson_t view;
	int r;

	/* the entry we stand on must still be there: otherwise truncation
	 * passed us and entries we never returned are gone */
	if (cur->last != 0) {
		r = storage_doc_get(s, cur->c, (recid_t)cur->last, &view, err);
		if (r < 0)
			return -1;
		if (r == 1)
			return terr_set(err, CODE_CAPPED_POSITION_LOST,
			    "CollectionScan died due to position in capped collection being deleted. "
			    "Last seen record id: RecordId(%" PRId64 ")", (int64_t)cur->last);
	}
	RET(storage_cursor_restore(cur->cur, s, err));
	cur->s = s;
	return 0;
}

void
repl_oplog_cursor_close(repl_oplog_cursor_t *cur)
{
	if (cur == NULL)
		return;
	storage_cursor_close(cur->cur);
	storage_coll_release(cur->c);
	bson_free(cur);
}

/* ---- size ----------------------------------------------------------------- */

int
repl_oplog_resize(repl_oplog_t *o, double size_mb, double min_retention_hours, terr_t *err)
{
	storage_coll_t *c = coll_get(o), *now = NULL;
	bson_t opts = BSON_INITIALIZER;
	bson_iter_t it;
	int ret = 0;

	if (c == NULL)
		return terr_set(err, TERR_NAMESPACE_NOT_FOUND, "ns not found");
	if (!isnan(size_mb)) {
		if (!(size_mb >= REPL_OPLOG_MIN_MB && size_mb <= REPL_OPLOG_MAX_MB)) {
			ret = terr_set(err, TERR_BAD_VALUE, "oplog size must be between 990 MB and 1 PB");
			goto err;
		}
		int64_t bytes = (int64_t)(size_mb * MB);
		if (c->options != NULL && bson_iter_init(&it, c->options)) {
			while (bson_iter_next(&it)) {
				if (strcmp(bson_iter_key(&it), "size") == 0)
					append_size(&opts, bytes);
				else
					bson_append_value(&opts, bson_iter_key(&it), -1, bson_iter_value(&it));
			}
		}
		ERR(storage_coll_set_options(o->st, NULL, REPL_OPLOG_DB, REPL_OPLOG_COLL, &opts, err));
		ERR(storage_coll_get(o->st, REPL_OPLOG_DB, REPL_OPLOG_COLL, &now, err));
		coll_set(o, now);
		atomic_store(&o->max_bytes, bytes);
	}
	if (min_retention_hours >= 0) {
		pthread_mutex_lock(&o->coll_lock);
		o->min_retention_hours = min_retention_hours;
		pthread_mutex_unlock(&o->coll_lock);
	}
err:
	bson_destroy(&opts);
	storage_coll_release(c);
	return ret;
}

/* ---- sessions ------------------------------------------------------------- */

int
repl_oplog_session_set(repl_oplog_t *o, storage_session_t *s, const bson_t *lsid, int64_t txn_number,
                       repl_oplog_optime_t prev, terr_t *err)
{
	sess_ctx_t *ctx;

	(void)o;
	if (lsid == NULL)
		return terr_set(err, TERR_BAD_VALUE, "session info needs an lsid document");
	ctx = ctx_of(s, true);
	/* a connection's writes mostly come from one session: its copy stays */
	if (ctx->lsid == NULL || ctx->lsid->len != lsid->len ||
	    memcmp(bson_get_data(ctx->lsid), bson_get_data(lsid), lsid->len) != 0) {
		if (ctx->lsid != NULL)
			bson_destroy(ctx->lsid);
		ctx->lsid = bson_copy(lsid);
	}
	ctx->has_info = true;
	ctx->txn_number = txn_number;
	ctx->stmt = -1;
	ctx->prev = ctx->chain = prev;
	ctx->wrote = false;
	ctx->nstmts = ctx->nstmts_done = 0;
	ctx->commit_hook = NULL;
	ctx->commit_hook_arg = NULL;
	return 0;
}

void
repl_oplog_session_set_commit_hook(storage_session_t *s, repl_oplog_commit_hook_fn fn, void *arg)
{
	sess_ctx_t *ctx = ctx_of(s, true);

	ctx->commit_hook = fn;
	ctx->commit_hook_arg = arg;
}

int
repl_oplog_session_stmts(storage_session_t *s, const repl_oplog_stmt_t **out)
{
	sess_ctx_t *ctx = ctx_of(s, false);

	*out = ctx != NULL && ctx->has_info ? ctx->stmts : NULL;
	return ctx != NULL && ctx->has_info ? ctx->nstmts_done : 0;
}

void
repl_oplog_session_set_stmt(storage_session_t *s, int32_t stmt_id)
{
	sess_ctx_t *ctx = ctx_of(s, true);

	ctx->stmt = stmt_id < 0 ? -1 : stmt_id;
}

void
repl_oplog_session_set_image(storage_session_t *s, const char *kind)
{
	sess_ctx_t *ctx = ctx_of(s, true);

	ctx->retry_image = kind;
}

repl_oplog_optime_t
repl_oplog_session_last(storage_session_t *s)
{
	sess_ctx_t *ctx = ctx_of(s, false);

	return ctx != NULL && ctx->has_info ? ctx->prev : REPL_OPLOG_OPTIME_NULL;
}

void
repl_oplog_session_clear(storage_session_t *s)
{
	sess_ctx_t *ctx = ctx_of(s, false);

	if (ctx == NULL)
		return;
	/* ctx->lsid is kept for the next repl_oplog_session_set (unused while
	 * has_info is false) */
	ctx->has_info = false;
	ctx->stmt = -1;
	ctx->prev = ctx->chain = REPL_OPLOG_OPTIME_NULL;
	ctx->collect = false;
	ctx->replacement = false;
	ctx->update = NULL;
	ctx->retry_image = NULL;
	ctx->nstmts = ctx->nstmts_done = 0;
	ctx->commit_hook = NULL;
	ctx->commit_hook_arg = NULL;
	ctx_ops_clear(ctx);
}

void
repl_oplog_session_set_replacement(storage_session_t *s, bool on)
{
	sess_ctx_t *ctx = ctx_of(s, on);

	if (ctx != NULL)
		ctx->replacement = on;
}

void
repl_oplog_session_set_update(storage_session_t *s, const update_t *u)
{
	sess_ctx_t *ctx = ctx_of(s, u != NULL);

	if (ctx != NULL)
		ctx->update = u;
}

int
repl_oplog_txn_collect(repl_oplog_t *o, storage_session_t *s, terr_t *err)
{
	sess_ctx_t *ctx = ctx_of(s, false);

	(void)o;
	if (!storage_txn_active(s))
		return terr_set(err, TERR_ILLEGAL_OPERATION, "collect mode needs an open storage transaction");
	if (ctx == NULL || !ctx->has_info)
		return terr_set(err, TERR_ILLEGAL_OPERATION, "collect mode needs session info (lsid, txnNumber)");
	ctx->collect = true;
	ctx_ops_clear(ctx);
	return 0;
}

/* ---- replication between members (repl/raft_member.c) ---------------------------------- */

/*
 * Write a replicated entry as it came from the primary (issue 24): at
 * RecordId = its ts, with its ts as s's commit timestamp (under stamp_lock,
 * the clock raised to it first, so no local writer can take an earlier ts
 * afterwards).  s's transaction must be open; its data changes must be
 * unobserved.  A small addition kept apart from the write path above.
 */
int
repl_oplog_write_replicated(repl_oplog_t *o, storage_session_t *s, const bson_t *entry, terr_t *err)
{
	bson_iter_t it;
	uint32_t secs, inc;
	int64_t t = -1;

	if (!bson_iter_init_find(&it, entry, "ts") || !BSON_ITER_HOLDS_TIMESTAMP(&it))
		return terr_set(err, TERR_BAD_VALUE, "a replicated oplog entry has no ts");
	bson_iter_timestamp(&it, &secs, &inc);
	if (bson_iter_init_find(&it, entry, "t"))
		t = bson_iter_as_int64(&it);
	return repl_oplog_write_replicated_at(o, s, entry, REPL_TS(secs, inc), t, err);
}

int
repl_oplog_write_replicated_at(repl_oplog_t *o, storage_session_t *s, const bson_t *entry, repl_ts_t ts, int64_t t,
                               terr_t *err)
{
	storage_coll_t *c = coll_get(o);
	int ret = 0;

	if (c == NULL)
		return terr_set(err, TERR_ILLEGAL_OPERATION, "the oplog does not exist");
	if (ts == 0) {
		storage_coll_release(c);
		return terr_set(err, TERR_BAD_VALUE, "a replicated oplog entry has no ts");
	}
	/* its end moves the visibility point, as stamp()'s do: the cached
	 * answer of repl_oplog_visible is keyed by the generation on_end bumps */
	ctx_of(s, true)->stamped = true;
	pthread_mutex_lock(&o->stamp_lock);
	repl_clock_recover(o->clock, ts);
	ret = storage_txn_set_timestamp(s, ts, err);
	pthread_mutex_unlock(&o->stamp_lock);
	if (ret == 0)
		ret = storage_doc_insert_at(s, c, (recid_t)ts, entry, err);
	if (ret == 0)
		note_written(s, ts, t);
	storage_coll_release(c);
	return ret;
}

/* ---- rollback of a deposed primary's entries (repl/rollback.c) ------------------------------ */

int
repl_oplog_remove_after(repl_oplog_t *o, storage_session_t *s, repl_ts_t after, int64_t *removed, terr_t *err)
{
	storage_coll_t *c = coll_get(o);
	storage_cursor_t *cur = NULL;
	recid_t rid;
	bson_t doc;
	recid_t *rids = NULL;
	size_t n = 0, cap = 0;
	int r, ret = 0;

	*removed = 0;
	if (c == NULL)
		return terr_set(err, TERR_ILLEGAL_OPERATION, "the oplog does not exist");
	/* newest first, down to `after`: the records to remove are collected
	 * first (the cursor is not kept across deletes) */
	if (storage_scan_open(s, c, true, &cur, err) != 0) {
		storage_coll_release(c);
		return -1;
	}
	while ((r = storage_cursor_next(cur, &rid, &doc, NULL, NULL, err)) == 1) {
		if ((repl_ts_t)rid <= after)
			break;
		if (n == cap) {
			cap = cap ? cap * 2 : 64;
			rids = bson_realloc(rids, cap * sizeof(*rids));
		}
		rids[n++] = rid;
	}
	storage_cursor_close(cur);
	if (r < 0)
		ret = -1;
	for (size_t i = 0; ret == 0 && i < n; i++) {
		bson_t old;
		if ((r = storage_doc_get(s, c, rids[i], &doc, err)) != 0) {
			ret = r < 0 ? -1 : 0;
			continue;
		}
		bson_copy_to(&doc, &old);
		ret = storage_doc_delete(s, c, rids[i], &old, err);
		bson_destroy(&old);
		if (ret == 0)
			(*removed)++;
	}
	bson_free(rids);
	storage_coll_release(c);
	return ret;
}

int
repl_oplog_rollback_reset(repl_oplog_t *o, repl_ts_t to, terr_t *err)
{
	storage_session_t *s;
	repl_oplog_optime_t last = REPL_OPLOG_OPTIME_NULL;
	int ret;

	pthread_mutex_lock(&o->ts_lock);
	ret = storage_ts_force_back(o->st, to, err);
	if (ret == 0) {
		atomic_store(&o->stable, to);
		atomic_store(&o->oldest, to);
		if (atomic_load(&o->recovered) > to)
			atomic_store(&o->recovered, to);
		/* the cached visibility point is newer than the truth now */
		pthread_mutex_lock(&o->vis_lock);
		o->vis_valid = false;
		pthread_mutex_unlock(&o->vis_lock);
		atomic_fetch_add(&o->commit_gen, 1);
		if ((s = storage_session_pool_get(o->st, NULL)) != NULL) {
			last = newest_entry(o, s, to);
			storage_session_pool_put(o->st, s);
		}
		pthread_mutex_lock(&o->last_lock);
		o->last = last;
		/* entries past the common point are gone, durable or not */
		if (o->durable.ts > last.ts)
			o->durable = last;
		o->durable_epoch++;
		pthread_mutex_unlock(&o->last_lock);
	}
	pthread_mutex_unlock(&o->ts_lock);
	return ret;
}
