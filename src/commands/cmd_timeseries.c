/*
 * cmd_timeseries.c -- time-series collections on the command side, viewless
 * as in MongoDB 9.0: the namespace itself holds the buckets (a collection
 * clustered by the buckets' ObjectId _ids, options {timeseries: ...}), and
 * every command that reads or writes measurements goes through here.
 *
 * - create: options checked (timeseries/), the incompatible create options
 *   refused, the default index on the buckets' meta and time created;
 * - insert: each measurement checked (its time a date), routed into an
 *   open bucket of its meta value and time window (the bucket catalog: in
 *   memory, per collection, mongod's limits of 1000 measurements, 125 KiB
 *   and bucketMaxSpanSeconds per bucket), every bucket an insert touches
 *   written once, all in one transaction (nothing half-bucketed);
 * - reads: the pipeline a find/count/distinct/aggregate runs is prefixed
 *   with a bucket-level $match (meta and time predicates, timeseries/) and
 *   $_internalUnpackBucket; rawData: true reads and writes the buckets;
 * - delete and update with any filter: every bucket holding a match is
 *   unpacked, the matching measurements deleted or updated, and the bucket
 *   rewritten (or removed when empty); updated measurements are routed
 *   again like inserts;
 * - listCollections type "timeseries", listIndexes in measurement terms,
 *   collStats' timeseries section.
 *
 * Not here: the bucket format and filter translation (timeseries/), the
 * unpack stage (agg/stage_unpack.c), TTL of whole buckets (the clustered
 * TTL of query/planner_ttl.c with the bucket _id's time).
 */
#include "commands/commands_private.h"

#include <math.h>
#include <pthread.h>
#include <string.h>
#include <unistd.h>

#include "bson/damage.h"
#include "bson/value.h"
#include "commands/cmd_timeseries.h"
#include "commands/write.h"
#include "common/log.h"
#include "common/mem.h"
#include "common/opctx.h"
#include "geo/geo.h"
#include "query/match.h"
#include "timeseries/timeseries.h"
#include "timeseries/ts_compress.h"
#include "timeseries/ts_schema.h"
#include "update/update.h"

/* ---- create ------------------------------------------------------------------ */

/* create options a time-series collection refuses (mongod: InvalidOptions) */
static const char *const ts_incompatible[] = {
	"capped", "size", "max", "idIndex", "validator", "validationLevel", "validationAction", "viewOn", "pipeline",
	"clusteredIndex", "autoIndexId", "changeStreamPreAndPostImages", "encryptedFields", NULL,
};

int
cmd_ts_check_create(cmd_t *c, bson_t *ts_opts, bool *is_ts, terr_t *err)
{
	bson_iter_t it;

	*is_ts = bson_has_field(c->body, "timeseries");
	if (!*is_ts)
		return 0;
	RET(ts_options_check(c->body, ts_opts, err));
	for (int i = 0; ts_incompatible[i] != NULL; i++)
		if (bson_has_field(c->body, ts_incompatible[i]))
			return terr_set(err, TERR_INVALID_OPTIONS, "Invalid option '%s' for a time-series collection",
			    ts_incompatible[i]);
	if (bson_iter_init_find(&it, c->body, "expireAfterSeconds")) {
		int64_t secs;
		if (!BSON_ITER_HOLDS_NUMBER(&it))
			return terr_set(err, TERR_TYPE_MISMATCH,
			    "BSON field 'create.expireAfterSeconds' is the wrong type '%s', expected type 'long'",
			    bv_type_name(bson_iter_type(&it)));
		secs = bson_iter_as_int64(&it);
		if (secs < 0)
			return terr_set(err, TERR_INVALID_OPTIONS, "TTL index 'expireAfterSeconds' option cannot be less than 0");
		if (secs > INT64_MAX / 2000)
			return terr_set(err, TERR_INVALID_OPTIONS,
			    "TTL index 'expireAfterSeconds' option must be within an acceptable range, try a lower number");
	}
	return 0;
}

/* The default index mongod creates with a metaField: {meta: 1,
 * control.min.<time>: 1, control.max.<time>: 1}, shown as
 * {<meta>: 1, <time>: 1}, named "<meta>_1_<time>_1". */
int
cmd_ts_after_create(cmd_t *c, const char *name, terr_t *err)
{
	storage_coll_t *coll = NULL;
	ts_options_t o;
	bson_t spec = BSON_INITIALIZER, key;
	char path[600], iname[600];
	int ret = 0;

	if (storage_coll_get(c->engine->st, c->db, name, &coll, NULL) != 0)
		return 0;
	if (ts_options_get(coll->options, &o) && o.meta_field != NULL && coll->nindexes <= 1) {
		BSON_APPEND_INT32(&spec, "v", 2);
		BSON_APPEND_DOCUMENT_BEGIN(&spec, "key", &key);
		BSON_APPEND_INT32(&key, "meta", 1);
		bson_snprintf(path, sizeof(path), "control.min.%s", o.time_field);
		BSON_APPEND_INT32(&key, path, 1);
		bson_snprintf(path, sizeof(path), "control.max.%s", o.time_field);
		BSON_APPEND_INT32(&key, path, 1);
		bson_append_document_end(&spec, &key);
		bson_snprintf(iname, sizeof(iname), "%s_1_%s_1", o.meta_field, o.time_field);
		BSON_APPEND_UTF8(&spec, "name", iname);
		ret = storage_index_create(c->engine->st, NULL, c->db, name, &spec, err);
	}
	bson_destroy(&spec);
	storage_coll_release(coll);
	return ret;
}

bool
cmd_ts_is(const storage_coll_t *coll)
{
	/* read once by storage when the descriptor was built (an options walk
	 * here cost ~400 instructions per command on a clustered collection) */
	return coll != NULL && coll->timeseries;
}

bool
cmd_ts_raw(const cmd_t *c)
{
	bson_iter_t it;

	return bson_iter_init_find(&it, c->body, "rawData") && bson_iter_as_bool(&it);
}

/* ---- the bucket catalog --------------------------------------------------------- */

/*
 * Per collection and meta value: the open bucket (its _id, start, count,
 * bytes and its columns' append states) and the archived ones -- buckets
 * left behind by a measurement older than the open bucket's start (mongod's
 * RolloverAction::kArchive), kept as (_id, start) only, so that a later
 * measurement of their time range goes back into them (mongod's archived
 * buckets, `findArchivedCandidate`).  A row may hold archived buckets and
 * no open one.
 */
/* archived buckets kept per meta value; past it the oldest start is dropped
 * (a query still finds it: nothing but the lookup's speed is lost) */
#define TS_ARCHIVED_MAX 64
#define TS_SOFT_STATES_MAX 8

typedef struct ts_open {
	uint8_t uuid[16];
	bson_value_t meta;           /* owned copy; EOD: no meta */
	uint64_t hash;
	bool has_open;               /* false: only archived buckets are known */
	bson_oid_t id;
	int64_t start_ms;
	int count;
	int64_t bytes;
	ts_colstates_t cols;         /* its columns' append states (compressed buckets) */
	ts_schema_t *schema;         /* the open bucket's schema (ts_schema.h), never NULL while has_open */
	ts_archived_t *arch;         /* archived buckets, by start ascending (starts unique) */
	int narch, archcap;
	/* the column states of the last few buckets closed by a later time
	 * (mongod's soft close: a query may reopen them); a cache only, never
	 * consulted for routing */
	ts_archived_t *soft;
	int nsoft, softcap;
	size_t mem;                  /* bytes this row holds, as last counted in ts_mem */
	uint64_t used;               /* ts_tick when an insert last committed to its open bucket */
	struct ts_open *next;
} ts_open_t;

/* The counters of collStats' timeseries section that Tamga keeps, in
 * mongod's order (appendExecutionStatsToBuilder); avgNumMeasurementsPerCommit
 * is computed after numMeasurementsCommitted. */
enum {
	TSC_BUCKET_INSERTS,
	TSC_BUCKET_UPDATES,
	TSC_OPENED_META,
	TSC_CLOSED_COUNT,
	TSC_CLOSED_SCHEMA,
	TSC_CLOSED_SIZE,
	TSC_CLOSED_FORWARD,
	TSC_CLOSED_MEMORY,
	TSC_COMMITS,
	TSC_MEASUREMENTS,
	TSC_ARCHIVED_MEMORY,
	TSC_ARCHIVED_BACKWARD,
	TSC_REOPENED,
	TSC_FETCHED,
	TSC_QUERIED,
	TSC_FETCH_FAILED,
	TSC_QUERY_FAILED,
	TSC_REOPEN_FAILED_SCHEMA,
	TSC_N
};

static const char *const ts_counter_names[TSC_N] = {
	[TSC_BUCKET_INSERTS] = "numBucketInserts",
	[TSC_BUCKET_UPDATES] = "numBucketUpdates",
	[TSC_OPENED_META] = "numBucketsOpenedDueToMetadata",
	[TSC_CLOSED_COUNT] = "numBucketsClosedDueToCount",
	[TSC_CLOSED_SCHEMA] = "numBucketsClosedDueToSchemaChange",
	[TSC_CLOSED_SIZE] = "numBucketsClosedDueToSize",
	[TSC_CLOSED_FORWARD] = "numBucketsClosedDueToTimeForward",
	[TSC_CLOSED_MEMORY] = "numBucketsClosedDueToMemoryThreshold",
	[TSC_COMMITS] = "numCommits",
	[TSC_MEASUREMENTS] = "numMeasurementsCommitted",
	[TSC_ARCHIVED_MEMORY] = "numBucketsArchivedDueToMemoryThreshold",
	[TSC_ARCHIVED_BACKWARD] = "numBucketsArchivedDueToTimeBackward",
	[TSC_REOPENED] = "numBucketsReopened",
	[TSC_FETCHED] = "numBucketsFetched",
	[TSC_QUERIED] = "numBucketsQueried",
	[TSC_FETCH_FAILED] = "numBucketFetchesFailed",
	[TSC_QUERY_FAILED] = "numBucketQueriesFailed",
	[TSC_REOPEN_FAILED_SCHEMA] = "numBucketReopeningsFailedDueToSchemaGeneration",
};

typedef struct ts_stats_row {
	uint8_t uuid[16];
	int64_t c[TSC_N];
	struct ts_stats_row *next;
} ts_stats_row_t;

#define TS_HASH 4096
static pthread_mutex_t ts_lock = PTHREAD_MUTEX_INITIALIZER;
static ts_open_t *ts_open_buckets[TS_HASH];
static ts_stats_row_t *ts_stats;
/* the catalog's bytes (every row's mem) and the commit clock of rows' use */
static size_t ts_mem;
static uint64_t ts_tick;

static ts_stats_row_t *
stats_row(const uint8_t *uuid)
{
	ts_stats_row_t *r;

	for (r = ts_stats; r != NULL; r = r->next)
		if (memcmp(r->uuid, uuid, 16) == 0)
			return r;
	r = bson_malloc0(sizeof(*r));
	memcpy(r->uuid, uuid, 16);
	r->next = ts_stats;
	ts_stats = r;
	return r;
}

static uint64_t
meta_hash(const uint8_t *uuid, const bson_value_t *meta)
{
	uint64_t h = 1469598103934665603ull;

	for (int i = 0; i < 16; i++)
		h = (h ^ uuid[i]) * 1099511628211ull;
	return h ^ (meta->value_type == BSON_TYPE_EOD ? 0x9e3779b97f4a7c15ull : bv_hash(meta));
}

static bool
meta_same(const bson_value_t *a, const bson_value_t *b)
{
	if (a->value_type == BSON_TYPE_EOD || b->value_type == BSON_TYPE_EOD)
		return a->value_type == b->value_type;
	/* a bucket's meta must be the same value, field order included */
	return a->value_type == b->value_type && bv_compare(a, b) == 0 &&
	    (a->value_type != BSON_TYPE_DOCUMENT ||
	     (a->value.v_doc.data_len == b->value.v_doc.data_len &&
	      memcmp(a->value.v_doc.data, b->value.v_doc.data, a->value.v_doc.data_len) == 0));
}

static ts_open_t *
open_find(const uint8_t *uuid, const bson_value_t *meta, uint64_t h)
{
	for (ts_open_t *b = ts_open_buckets[h % TS_HASH]; b != NULL; b = b->next)
		if (b->hash == h && memcmp(b->uuid, uuid, 16) == 0 && meta_same(&b->meta, meta))
			return b;
	return NULL;
}

/* The catalog row of meta, created empty (no open bucket) when absent. */
static ts_open_t *
open_row(const uint8_t *uuid, const bson_value_t *meta, uint64_t h)
{
	ts_open_t *o = open_find(uuid, meta, h);

	if (o != NULL)
		return o;
	o = bson_malloc0(sizeof(*o));
	memcpy(o->uuid, uuid, 16);
	if (meta->value_type == BSON_TYPE_EOD)
		o->meta.value_type = BSON_TYPE_EOD;
	else
		bson_value_copy(meta, &o->meta);
	o->hash = h;
	o->next = ts_open_buckets[h % TS_HASH];
	ts_open_buckets[h % TS_HASH] = o;
	return o;
}

static size_t
archived_size(const ts_archived_t *a, int n, int cap)
{
	size_t z = sizeof(*a) * (size_t)cap;

	for (int i = 0; i < n; i++)
		z += ts_colstates_size(&a[i].cols);
	return z;
}

/* Count row o's bytes again into ts_mem (mongod's bucket catalog memory
 * usage, in spirit: the row, its meta, the open bucket's column states and
 * schema, the archived and cached entries). */
static void
row_account(ts_open_t *o)
{
	size_t z = sizeof(*o) + ts_colstates_size(&o->cols) + ts_schema_size(o->schema) +
	    archived_size(o->arch, o->narch, o->archcap) + archived_size(o->soft, o->nsoft, o->softcap);

	if (o->meta.value_type == BSON_TYPE_DOCUMENT || o->meta.value_type == BSON_TYPE_ARRAY)
		z += o->meta.value.v_doc.data_len;
	else if (o->meta.value_type == BSON_TYPE_UTF8)
		z += o->meta.value.v_utf8.len;
	ts_mem = ts_mem - o->mem + z;
	o->mem = z;
}

static void
open_free(ts_open_t *b)
{
	ts_mem -= b->mem;
	bson_value_destroy(&b->meta);
	ts_colstates_clear(&b->cols);
	ts_schema_free(b->schema);
	ts_archive_free(&b->arch, &b->narch);
	ts_archive_free(&b->soft, &b->nsoft);
	bson_free(b);
}

/* Forget every open and archived bucket of a collection (its buckets were
 * rewritten). */
static void
open_forget(const uint8_t *uuid)
{
	for (int i = 0; i < TS_HASH; i++) {
		ts_open_t **pp = &ts_open_buckets[i];
		while (*pp != NULL) {
			ts_open_t *b = *pp;
			if (memcmp(b->uuid, uuid, 16) == 0) {
				*pp = b->next;
				open_free(b);
			} else {
				pp = &b->next;
			}
		}
	}
}

void
cmd_ts_catalog_forget_buckets(void)
{
	pthread_mutex_lock(&ts_lock);
	for (int i = 0; i < TS_HASH; i++) {
		while (ts_open_buckets[i] != NULL) {
			ts_open_t *b = ts_open_buckets[i];
			ts_open_buckets[i] = b->next;
			open_free(b);
		}
	}
	pthread_mutex_unlock(&ts_lock);
}

void
cmd_ts_forget(const storage_coll_t *coll)
{
	ts_stats_row_t **pp;

	if (!cmd_ts_is(coll))
		return;
	pthread_mutex_lock(&ts_lock);
	open_forget(coll->uuid);
	for (pp = &ts_stats; *pp != NULL; pp = &(*pp)->next)
		if (memcmp((*pp)->uuid, coll->uuid, 16) == 0) {
			ts_stats_row_t *r = *pp;
			*pp = r->next;
			bson_free(r);
			break;
		}
	pthread_mutex_unlock(&ts_lock);
}

/* ---- insert ---------------------------------------------------------------------- */

/* One bucket an insert writes: an open or reopened one (existing) or a new one. */
typedef struct ts_target {
	bson_oid_t id;
	int64_t start_ms;
	bson_value_t meta;           /* borrowed from a measurement */
	bool existing;
	int base_count;              /* an existing bucket's measurements and bytes before this insert */
	int64_t base_bytes;
	int *ms;                     /* indexes into the batch's measurements */
	int n, cap;
	int64_t bytes;
	const ts_colstates_t *cols;  /* the catalog's column states of the bucket it continues, or NULL */
	ts_colstates_t own;          /* an archived bucket's states, taken out of the catalog (when has_own) */
	bool has_own;
	uint64_t hash;               /* meta_hash of meta */
	int chain;                   /* the next target in its ts_batch_t.heads chain, -1 */
	bool current;                /* the bucket its meta's measurements go to now */
	bool archived;               /* left behind by an older measurement (reopenable) */
	bool closed;                 /* full or rolled over: compressed once written */
	bool hard;                   /* closed because full (count or size): never reopened */
	bool updated;                /* written as an update of the stored bucket */
	bool compressed;             /* written compressed (nothing to do when it closes) */
	ts_colstates_t next;         /* its columns' append states once written (to the catalog at commit) */
	/* the schema of its measurements (ts_schema.h): the catalog's open
	 * bucket's, borrowed until a measurement adds a path (then copied:
	 * the catalog keeps its own until the commit), else owned */
	ts_schema_t *schema;
	bool schema_owned;
} ts_target_t;

#define TS_BATCH_HASH 2048

typedef struct ts_batch {
	cmd_t *c;
	storage_coll_t *coll;
	ts_options_t o;
	bson_t *docs;                /* prepared measurements (tm_bson_array_new) */
	int ndocs;
	ts_target_t *t;
	int nt, tcap;
	/* the batch's targets by meta: chains of indexes into t, newest first */
	int heads[TS_BATCH_HASH];
	int64_t cnt[TSC_N];          /* counters, added to the collection's at commit */
	bool fresh;                  /* new buckets only (the open ones may have been rewritten) */
	bdamages_t dmg;              /* scratch: an appended bucket's byte changes */
} ts_batch_t;

/* A new target slot for meta (hash h), linked into the batch's hash. */
static ts_target_t *
target_slot(ts_batch_t *b, const bson_value_t *meta, uint64_t h)
{
	ts_target_t *t;

	if (b->nt == b->tcap) {
		b->tcap = b->tcap ? b->tcap * 2 : 16;
		b->t = bson_realloc(b->t, sizeof(*b->t) * (size_t)b->tcap);
	}
	t = &b->t[b->nt];
	memset(t, 0, sizeof(*t));
	t->meta = *meta;
	t->hash = h;
	t->chain = b->heads[h % TS_BATCH_HASH];
	b->heads[h % TS_BATCH_HASH] = b->nt++;
	return t;
}

/* Add measurement i to t; sc: what ts_schema_check of it against t's
 * schema answered (-2: not asked yet). */
static void
target_add(const ts_batch_t *b, ts_target_t *t, int i, int sc)
{
	const bson_t *m = &b->docs[i];
	int64_t bytes = m->len;

	if (t->schema == NULL) {
		/* every target gets a schema when it is made (new, reopened, or
		 * the catalog's open bucket); never reached */
		t->schema = ts_schema_new();
		t->schema_owned = true;
		sc = -2;
	}
	if (sc == -2)
		sc = ts_schema_check(t->schema, m, b->o.meta_field);
	if (sc > 0) {
		if (!t->schema_owned) {
			t->schema = ts_schema_copy(t->schema);
			t->schema_owned = true;
		}
		ts_schema_add(t->schema, m, b->o.meta_field);
	}
	if (t->n == t->cap) {
		t->cap = t->cap ? t->cap * 2 : 8;
		t->ms = bson_realloc(t->ms, sizeof(int) * (size_t)t->cap);
	}
	t->ms[t->n++] = i;
	t->bytes += bytes;
}

static void
new_oid(bson_oid_t *id, int64_t start_ms)
{
	uint32_t secs = (uint32_t)(start_ms / 1000);

	bson_oid_init(id, NULL);
	/* the bucket's _id carries its start time (mongod: buckets sort by time) */
	id->bytes[0] = (uint8_t)(secs >> 24);
	id->bytes[1] = (uint8_t)(secs >> 16);
	id->bytes[2] = (uint8_t)(secs >> 8);
	id->bytes[3] = (uint8_t)secs;
}

static int64_t
round_down(int64_t ms, int64_t rounding_s)
{
	int64_t r = rounding_s * 1000, q = ms / r;

	if (ms % r != 0 && ms < 0)
		q--;
	return q * r;
}

static ts_target_t *
target_new(ts_batch_t *b, const bson_value_t *meta, uint64_t h, int64_t t_ms)
{
	ts_target_t *t = target_slot(b, meta, h);

	t->start_ms = round_down(t_ms, b->o.rounding);
	new_oid(&t->id, t->start_ms);
	t->schema = ts_schema_new();
	t->schema_owned = true;
	return t;
}

/*
 * Why measurement m (time t_ms) does not fit target t: -1 it fits, else
 * the closing counter (count, size, time forward, schema change) or -2 for
 * time backward (mongod's rollover reasons; the schema last, as mongod's
 * determineRolloverAction checks it).
 */
static int
target_misfit(const ts_batch_t *b, const ts_target_t *t, const bson_t *m, int64_t t_ms, int *sc)
{
	int r;

	int count = t->base_count + t->n;
	int64_t bytes = t->base_bytes + t->bytes;

	if (count >= TS_BUCKET_MAX_COUNT)
		return TSC_CLOSED_COUNT;
	if (bytes + m->len > TS_BUCKET_MAX_BYTES && count > 0)
		return TSC_CLOSED_SIZE;
	if (t_ms >= t->start_ms + b->o.max_span * 1000)
		return TSC_CLOSED_FORWARD;
	if (t_ms < t->start_ms)
		return -2;
	r = t->schema != NULL ? ts_schema_check(t->schema, m, b->o.meta_field) : 0;
	if (sc != NULL)
		*sc = r;
	return r < 0 ? TSC_CLOSED_SCHEMA : -1;
}

CMD_HANDLER(cmd_find);

/* Run a rawData find of the collection's buckets (filter and limit); the
 * reply goes to *reply (the caller destroys it).  0, or -1 when it failed. */
static int
buckets_find(ts_batch_t *b, const bson_t *filter, int limit, bson_t *reply)
{
	bson_t body = BSON_INITIALIZER;
	terr_t e = TERR_INIT;
	cmd_t sub = *b->c;
	int rc;

	BSON_APPEND_UTF8(&body, "find", b->coll->name);
	BSON_APPEND_DOCUMENT(&body, "filter", filter);
	if (limit > 0)
		BSON_APPEND_INT32(&body, "limit", limit);
	BSON_APPEND_BOOL(&body, "singleBatch", true);
	BSON_APPEND_BOOL(&body, "rawData", true);
	sub.body = &body;
	sub.name = "find";
	sub.reply = reply;
	bson_iter_init(&sub.first, &body);
	bson_iter_next(&sub.first);
	rc = cmd_find(&sub, &e);
	terr_clear(&e);
	bson_destroy(&body);
	return rc == 0 ? 0 : -1;
}

/*
 * A stored bucket of meta a fetch or a query found, taken up as a target
 * when measurement m fits it (same meta, exactly; its start, count and size
 * leave room): true with *t set.
 */
static bool
bucket_take(ts_batch_t *b, const bson_t *bucket, const bson_value_t *meta, uint64_t h, const bson_t *m, int64_t t_ms,
    ts_target_t **t)
{
	bson_iter_t it, st;
	bson_value_t bm = {.value_type = BSON_TYPE_EOD};
	char path[600];
	ts_target_t probe;

	bson_snprintf(path, sizeof(path), "control.min.%s", b->o.time_field);
	if (!bson_iter_init_find(&it, bucket, "_id") || !BSON_ITER_HOLDS_OID(&it) || !bson_iter_init(&st, bucket) ||
	    !bson_iter_find_descendant(&st, path, &st) || !BSON_ITER_HOLDS_DATE_TIME(&st))
		return false;
	{
		bson_iter_t mi;
		if (bson_iter_init_find(&mi, bucket, "meta"))
			bm = *bson_iter_value(&mi);
	}
	if (!meta_same(&bm, meta))
		return false;
	memset(&probe, 0, sizeof(probe));
	probe.start_ms = bson_iter_date_time(&st);
	probe.base_count = ts_bucket_count(&b->o, bucket);
	probe.base_bytes = bucket->len;
	if (target_misfit(b, &probe, m, t_ms, NULL) != -1)
		return false;
	/* its schema, from control.min/max (mongod's Schema::parseFromBSON): a
	 * bucket mixing types is not reopened, one m does not fit neither */
	if ((probe.schema = ts_schema_from_bucket(bucket)) == NULL) {
		b->cnt[TSC_REOPEN_FAILED_SCHEMA]++;
		return false;
	}
	if (!ts_schema_fits(probe.schema, m, b->o.meta_field)) {
		ts_schema_free(probe.schema);
		return false;
	}
	/* a bucket this batch already writes (closed in it): continue that target */
	for (int k = b->heads[h % TS_BATCH_HASH]; k >= 0; k = b->t[k].chain)
		if (bson_oid_equal(&b->t[k].id, bson_iter_oid(&it))) {
			ts_schema_free(probe.schema);
			if (b->t[k].hard || target_misfit(b, &b->t[k], m, t_ms, NULL) != -1)
				return false;
			*t = &b->t[k];
			(*t)->closed = (*t)->archived = false;
			return true;
		}
	*t = target_slot(b, meta, h);
	bson_oid_copy(bson_iter_oid(&it), &(*t)->id);
	(*t)->start_ms = probe.start_ms;
	(*t)->base_count = probe.base_count;
	(*t)->base_bytes = probe.base_bytes;
	(*t)->existing = true;
	(*t)->schema = probe.schema;
	(*t)->schema_owned = true;
	{
		/* its column states when it closed by a later time in this process */
		ts_open_t *row = open_find(b->coll->uuid, meta, h);
		for (int i = 0; row != NULL && i < row->nsoft; i++)
			if (bson_oid_equal(&row->soft[i].id, &(*t)->id)) {
				ts_archive_take(row->soft, &row->nsoft, i, &(*t)->own);
				(*t)->has_own = true;
				break;
			}
	}
	return true;
}

/* Fetch the archived bucket id: a target when m fits it (counted as mongod's
 * numBucketsFetched / numBucketFetchesFailed). */
static ts_target_t *
reopen_fetch(ts_batch_t *b, const bson_oid_t *id, ts_colstates_t *cols, const bson_value_t *meta, uint64_t h,
    const bson_t *m, int64_t t_ms)
{
	bson_t filter = BSON_INITIALIZER, reply = BSON_INITIALIZER;
	bson_iter_t it, f;
	ts_target_t *t = NULL;

	BSON_APPEND_OID(&filter, "_id", id);
	if (buckets_find(b, &filter, 1, &reply) == 0 && bson_iter_init(&it, &reply) &&
	    bson_iter_find_descendant(&it, "cursor.firstBatch.0", &f) && BSON_ITER_HOLDS_DOCUMENT(&f)) {
		const uint8_t *d;
		uint32_t l;
		bson_t bucket;
		bson_iter_document(&f, &l, &d);
		if (bson_init_static(&bucket, d, l) && bucket_take(b, &bucket, meta, h, m, t_ms, &t) && t->existing &&
		    t->n == 0 && !t->has_own && t->cols == NULL) {
			/* its column states, kept while it was archived */
			t->own = *cols;
			memset(cols, 0, sizeof(*cols));
			t->has_own = true;
		}
	}
	ts_colstates_clear(cols);
	b->cnt[t != NULL ? TSC_FETCHED : TSC_FETCH_FAILED]++;
	bson_destroy(&reply);
	bson_destroy(&filter);
	return t;
}

/*
 * Query for a stored bucket of meta whose time range holds t_ms and that
 * has room (mongod's generateReopeningPipeline: not closed, the same meta,
 * control.min.<time> in (t - bucketMaxSpanSeconds, t], fewer than the
 * maximum count, under the maximum size -- the last two checked here, on
 * each bucket the filter returns, in the default index's order).  Counted as
 * numBucketsQueried / numBucketQueriesFailed.
 */
static ts_target_t *
reopen_query(ts_batch_t *b, const bson_value_t *meta, uint64_t h, const bson_t *m, int64_t t_ms)
{
	bson_t filter = BSON_INITIALIZER, reply = BSON_INITIALIZER, or, c, range, arr;
	bson_iter_t it, batch;
	char path[600];
	ts_target_t *t = NULL;

	bson_snprintf(path, sizeof(path), "control.min.%s", b->o.time_field);
	BSON_APPEND_ARRAY_BEGIN(&filter, "$or", &arr);
	BSON_APPEND_DOCUMENT_BEGIN(&arr, "0", &or);
	BSON_APPEND_DOCUMENT_BEGIN(&or, "control.closed", &c);
	BSON_APPEND_BOOL(&c, "$exists", false);
	bson_append_document_end(&or, &c);
	bson_append_document_end(&arr, &or);
	BSON_APPEND_DOCUMENT_BEGIN(&arr, "1", &or);
	BSON_APPEND_BOOL(&or, "control.closed", false);
	bson_append_document_end(&arr, &or);
	bson_append_array_end(&filter, &arr);
	BSON_APPEND_DOCUMENT_BEGIN(&filter, path, &range);
	BSON_APPEND_DATE_TIME(&range, "$lte", t_ms);
	BSON_APPEND_DATE_TIME(&range, "$gt", t_ms - b->o.max_span * 1000);
	bson_append_document_end(&filter, &range);
	if (meta->value_type == BSON_TYPE_EOD) {
		BSON_APPEND_DOCUMENT_BEGIN(&filter, "meta", &c);
		BSON_APPEND_BOOL(&c, "$exists", false);
		bson_append_document_end(&filter, &c);
	} else {
		bv_append(&filter, "meta", -1, meta);
	}
	if (buckets_find(b, &filter, 0, &reply) == 0 && bson_iter_init(&it, &reply) &&
	    bson_iter_find_descendant(&it, "cursor.firstBatch", &batch) && BSON_ITER_HOLDS_ARRAY(&batch) &&
	    bson_iter_recurse(&batch, &it)) {
		while (t == NULL && bson_iter_next(&it)) {
			const uint8_t *d;
			uint32_t l;
			bson_t bucket;
			if (!BSON_ITER_HOLDS_DOCUMENT(&it))
				continue;
			bson_iter_document(&it, &l, &d);
			if (bson_init_static(&bucket, d, l))
				bucket_take(b, &bucket, meta, h, m, t_ms, &t);
		}
	}
	b->cnt[t != NULL ? TSC_QUERIED : TSC_QUERY_FAILED]++;
	bson_destroy(&reply);
	bson_destroy(&filter);
	return t;
}

/*
 * No current bucket of meta takes measurement m (time t_ms): a bucket to
 * reopen, as mongod's getReopeningCandidate -- an archived one whose span
 * holds t_ms (this batch's own first, then the catalog's, fetched by _id),
 * else, when query_ok (no rollover, or a time-backward one), a query.  NULL: a new bucket.  Under ts_lock.
 */
static ts_target_t *
reopen(ts_batch_t *b, const bson_value_t *meta, uint64_t h, const bson_t *m, int64_t t_ms, bool query_ok)
{
	int64_t span = b->o.max_span * 1000;
	ts_target_t *best = NULL, *t = NULL;
	ts_open_t *row;
	int k;

	/* this batch's buckets of meta left behind (archived, or closed by a
	 * later time) whose span holds t_ms: the greatest start */
	for (k = b->heads[h % TS_BATCH_HASH]; k >= 0; k = b->t[k].chain) {
		ts_target_t *x = &b->t[k];
		if (x->hash != h || x->hard || x->current || !meta_same(&x->meta, meta))
			continue;
		if (x->start_ms <= t_ms && t_ms - x->start_ms < span && (best == NULL || x->start_ms > best->start_ms))
			best = x;
	}
	row = open_find(b->coll->uuid, meta, h);
	if (row != NULL && row->narch > 0) {
		int i = ts_archive_find(row->arch, row->narch, t_ms, span);
		if (i >= 0 && (best == NULL || row->arch[i].start_ms > best->start_ms)) {
			bson_oid_t id = row->arch[i].id;
			ts_colstates_t cols;
			/* taken out of the archive whatever the fetch finds (mongod) */
			ts_archive_take(row->arch, &row->narch, i, &cols);
			if ((t = reopen_fetch(b, &id, &cols, meta, h, m, t_ms)) != NULL)
				b->cnt[TSC_REOPENED]++;
			return t;
		}
	}
	if (best != NULL) {
		if (target_misfit(b, best, m, t_ms, NULL) != -1)
			return NULL;
		best->closed = best->archived = false;
		b->cnt[TSC_REOPENED]++;
		return best;
	}
	if (query_ok && (t = reopen_query(b, meta, h, m, t_ms)) != NULL)
		b->cnt[TSC_REOPENED]++;
	return t;
}

/*
 * Route measurement i (time t_ms) to a target: the current bucket of its
 * meta when it fits (count, bytes, time window); else that bucket rolls
 * over -- archived when the measurement is older than its start and it is
 * not full, closed otherwise -- and the measurement goes to a reopened
 * bucket (reopen) or a new one.
 */
static void
route(ts_batch_t *b, int i, const bson_value_t *meta, int64_t t_ms)
{
	const bson_t *m = &b->docs[i];
	uint64_t h = meta_hash(b->coll->uuid, meta);
	ts_target_t *t = NULL;
	bool seen = false, rolled = false, query_ok = true;
	int k;

	/* the current target of this batch for this meta, if any */
	for (k = b->heads[h % TS_BATCH_HASH]; k >= 0; k = b->t[k].chain)
		if (b->t[k].hash == h && meta_same(&b->t[k].meta, meta)) {
			seen = true;
			if (b->t[k].current) {
				t = &b->t[k];
				break;
			}
		}
	if (!seen && !b->fresh) {
		/* the meta's first measurement in this batch: the catalog's open bucket */
		ts_open_t *open = open_find(b->coll->uuid, meta, h);
		if (open != NULL && open->has_open && open->schema != NULL) {
			t = target_slot(b, meta, h);
			t->id = open->id;
			t->start_ms = open->start_ms;
			t->base_count = open->count;
			t->base_bytes = open->bytes;
			t->cols = &open->cols;
			t->schema = open->schema;
			t->existing = true;
			t->current = true;
		}
	}
	if (t != NULL) {
		int sc = -2, why = target_misfit(b, t, m, t_ms, &sc);
		if (why == -1) {
			target_add(b, t, i, sc);
			return;
		}
		t->current = false;
		rolled = true;
		if (why == -2 && !b->fresh) {
			/* mongod archives it (kArchive) */
			t->archived = true;
			b->cnt[TSC_ARCHIVED_BACKWARD]++;
		} else {
			t->closed = true;
			t->hard = why == TSC_CLOSED_COUNT || why == TSC_CLOSED_SIZE || why == TSC_CLOSED_SCHEMA;
			if (why >= 0)
				b->cnt[why]++;
		}
		/* mongod queries for a bucket only after a time-backward rollover
		 * (or with no open bucket) */
		query_ok = why == -2;
		t = NULL;
	}
	if (!b->fresh)
		t = reopen(b, meta, h, m, t_ms, query_ok);
	if (t == NULL) {
		if (!rolled)
			b->cnt[TSC_OPENED_META]++;
		t = target_new(b, meta, h, t_ms);
	}
	t->current = true;
	target_add(b, t, i, -2);
}

/* The measurement's meta (EOD when absent) and time. */
static int
measurement_check(const ts_options_t *o, const bson_t *m, bson_value_t *meta, int64_t *t_ms, terr_t *err)
{
	bson_iter_t it;

	meta->value_type = BSON_TYPE_EOD;
	if (o->meta_field != NULL && bson_iter_init_find(&it, m, o->meta_field))
		*meta = *bson_iter_value(&it);
	if (!bson_iter_init_find(&it, m, o->time_field) || !BSON_ITER_HOLDS_DATE_TIME(&it))
		return terr_set(err, TERR_BAD_VALUE, "'%s' must be present and contain a valid BSON UTC datetime value",
		    o->time_field);
	*t_ms = bson_iter_date_time(&it);
	return 0;
}

/* Write one target: a new bucket built from its measurements, or the
 * stored one with them appended (its bytes copied, nothing unpacked). */
static int
write_target(storage_session_t *s, ts_batch_t *b, ts_target_t *t, bool *updated, terr_t *err)
{
	bson_t old = BSON_INITIALIZER, *nb = NULL, view;
	const bson_t **ms = bson_malloc0(sizeof(*ms) * (size_t)(t->n + 1));
	int rc, ret = 0;
	recid_t recid = 0;
	size_t want = 512;

	*updated = false;
	/* a retried transaction computes the states again */
	ts_colstates_clear(&t->next);
	t->compressed = false;
	for (int i = 0; i < t->n; i++) {
		ms[i] = &b->docs[t->ms[i]];
		want += b->docs[t->ms[i]].len;
	}
	if (t->existing) {
		bson_value_t idv = {.value_type = BSON_TYPE_OID};
		bson_oid_copy(&t->id, &idv.value.v_oid);
		rc = storage_doc_find_id(s, b->coll, &idv, &recid, &view, err);
		if (rc < 0) {
			ret = -1;
			goto err;
		}
		if (rc == 0) {
			bson_destroy(&old);
			bson_copy_to(&view, &old);
			*updated = true;
		}
	}
	/* sized once: the old bucket and the new measurements (no chain of
	 * reallocs as the bucket grows past each power of two) */
	want += old.len;
	nb = bson_sized_new(want < (size_t)INT32_MAX / 2 ? want : 512);
	if (*updated && ts_bucket_is_compressed(&old)) {
		/* continued column by column: the changed bytes go to storage
		 * (WiredTiger's modify) */
		terr_t e = TERR_INIT;
		if (ts_bucket_append_compressed(&b->o, &old, ms, t->n, t->has_own ? &t->own : t->cols, nb, &b->dmg,
		        &t->next, &e) == 0) {
			t->compressed = true;
			ret = storage_doc_update_damages(s, b->coll, recid, &old, nb, &b->dmg, err);
		} else {
			/* a value no column holds (CodeWScope): the bucket as v1 */
			bson_t v1 = BSON_INITIALIZER;
			ts_colstates_clear(&t->next);
			bson_reinit(nb);
			if (ts_bucket_decompress(&old, &v1, err) == 0) {
				ts_bucket_append(&b->o, &v1, ms, t->n, nb);
				ret = storage_doc_update(s, b->coll, recid, &old, nb, err);
			} else {
				ret = -1;
			}
			bson_destroy(&v1);
		}
		terr_clear(&e);
	} else if (*updated) {
		/* a v1 bucket (written before buckets were compressed from the
		 * start, or raw): only the appended elements and the changed
		 * control and length bytes go to storage */
		if (ts_bucket_append_damages(&b->o, &old, ms, t->n, nb, &b->dmg))
			ret = storage_doc_update_damages(s, b->coll, recid, &old, nb, &b->dmg, err);
		else
			ret = storage_doc_update(s, b->coll, recid, &old, nb, err);
	} else {
		terr_t e = TERR_INIT;
		if (ts_bucket_build_compressed(&b->o, &t->id, t->start_ms, &t->meta, ms, t->n, nb, &t->next, &e) == 0) {
			t->compressed = true;
		} else {
			/* a value no column holds (CodeWScope): the bucket as v1 */
			ts_colstates_clear(&t->next);
			bson_reinit(nb);
			ts_bucket_build(&b->o, &t->id, t->start_ms, &t->meta, ms, t->n, nb);
		}
		terr_clear(&e);
		ret = storage_doc_insert(s, b->coll, nb, NULL, err);
	}
err:
	bson_free(ms);
	if (nb != NULL)
		bson_destroy(nb);
	bson_destroy(&old);
	return ret;
}

/*
 * A bucket that closed in this batch is stored compressed (control.version
 * 2): read back as written and rewritten as BSONColumns in the same
 * transaction.  A bucket the column format cannot hold (CodeWScope) stays
 * v1.  See timeseries/README.md for why at close.
 */
static int
compress_closed(storage_session_t *s, ts_batch_t *b, terr_t *err)
{
	for (int k = 0; k < b->nt; k++) {
		ts_target_t *t = &b->t[k];
		bson_value_t idv = {.value_type = BSON_TYPE_OID};
		bson_t view, old = BSON_INITIALIZER, nb = BSON_INITIALIZER;
		recid_t recid = 0;
		terr_t e = TERR_INIT;
		int rc, ret = 0;

		if (!t->closed || t->compressed)
			continue;
		bson_oid_copy(&t->id, &idv.value.v_oid);
		rc = storage_doc_find_id(s, b->coll, &idv, &recid, &view, err);
		if (rc < 0)
			return -1;
		if (rc == 0) {
			bson_destroy(&old);
			bson_copy_to(&view, &old);
			if (!ts_bucket_is_compressed(&old) && ts_bucket_compress(&b->o, &old, &nb, &e) == 0)
				ret = storage_doc_update(s, b->coll, recid, &old, &nb, err);
		}
		terr_clear(&e);
		bson_destroy(&nb);
		bson_destroy(&old);
		RET(ret);
	}
	return 0;
}

static int
insert_txn(storage_session_t *s, void *arg, terr_t *err)
{
	ts_batch_t *b = arg;

	for (int k = 0; k < b->nt; k++)
		if (b->t[k].n > 0)   /* an open bucket the batch's first measurement rolled over: nothing to write */
			RET(write_target(s, b, &b->t[k], &b->t[k].updated, err));
	return compress_closed(s, b, err);
}

/*
 * After the commit: the catalog learns, per meta, the bucket the insert
 * left current (open, with its columns' states) and the ones it archived;
 * the collection's counters take the batch's.
 */
static void
catalog_commit(ts_batch_t *b)
{
	ts_stats_row_t *r = stats_row(b->coll->uuid);

	for (int k = 0; k < b->nt; k++) {
		ts_target_t *t = &b->t[k];
		ts_open_t *o;

		if (t->n == 0) {
			/* the open bucket, rolled over unwritten: its states go with it */
			o = open_find(b->coll->uuid, &t->meta, t->hash);
			if (o != NULL && o->has_open && bson_oid_equal(&o->id, &t->id) && t->next.n == 0) {
				t->next = o->cols;
				memset(&o->cols, 0, sizeof(o->cols));
			}
		} else {
			r->c[t->updated ? TSC_BUCKET_UPDATES : TSC_BUCKET_INSERTS]++;
			r->c[TSC_MEASUREMENTS] += t->n;
		}
		if (t->closed && !t->hard && t->next.n > 0) {
			/* closed by a later time: its states kept for a query that reopens it */
			o = open_row(b->coll->uuid, &t->meta, t->hash);
			for (int i = 0; i < o->nsoft; i++)
				if (bson_oid_equal(&o->soft[i].id, &t->id)) {
					ts_archive_take(o->soft, &o->nsoft, i, NULL);
					break;
				}
			ts_archive_add(&o->soft, &o->nsoft, &o->softcap, TS_SOFT_STATES_MAX, &t->id, t->start_ms, &t->next);
		}
		if (!t->current && !t->archived)
			continue;
		o = open_row(b->coll->uuid, &t->meta, t->hash);
		for (int i = 0; i < o->nsoft; i++)
			if (bson_oid_equal(&o->soft[i].id, &t->id)) {
				ts_archive_take(o->soft, &o->nsoft, i, NULL);
				break;
			}
		/* a bucket taken up again leaves the archive */
		for (int i = 0; i < o->narch; i++)
			if (bson_oid_equal(&o->arch[i].id, &t->id)) {
				ts_archive_take(o->arch, &o->narch, i, NULL);
				break;
			}
		if (t->archived) {
			if (o->has_open && bson_oid_equal(&o->id, &t->id)) {
				o->has_open = false;
				ts_colstates_clear(&o->cols);
			}
			ts_archive_add(&o->arch, &o->narch, &o->archcap, TS_ARCHIVED_MAX, &t->id, t->start_ms, &t->next);
			continue;
		}
		/* the current target of a meta is the one left open, with its
		 * columns' states */
		ts_colstates_clear(&o->cols);
		o->cols = t->next;
		memset(&t->next, 0, sizeof(t->next));
		o->has_open = true;
		if (t->schema_owned) {
			ts_schema_free(o->schema);
			o->schema = t->schema;
			t->schema = NULL;
			t->schema_owned = false;
		}
		o->id = t->id;
		o->start_ms = t->start_ms;
		o->count = (t->updated ? t->base_count : 0) + t->n;
		o->bytes = (t->updated ? t->base_bytes : 0) + t->bytes;
	}
	/* the rows this insert touched, counted again */
	for (int k = 0; k < b->nt; k++) {
		ts_open_t *o = open_find(b->coll->uuid, &b->t[k].meta, b->t[k].hash);
		if (o != NULL) {
			if (b->t[k].current)
				o->used = ++ts_tick;
			row_account(o);
		}
	}
	r->c[TSC_COMMITS]++;
	for (int i = 0; i < TSC_N; i++)
		if (i != TSC_BUCKET_INSERTS && i != TSC_BUCKET_UPDATES && i != TSC_MEASUREMENTS && i != TSC_COMMITS)
			r->c[i] += b->cnt[i];
}

/* The least recently used row (of any collection) with an open bucket
 * (want_open) or with archived buckets, or NULL. */
static ts_open_t *
row_lru(bool want_open)
{
	ts_open_t *best = NULL;

	for (int i = 0; i < TS_HASH; i++)
		for (ts_open_t *o = ts_open_buckets[i]; o != NULL; o = o->next)
			if ((want_open ? o->has_open : o->narch > 0) && (best == NULL || o->used < best->used))
				best = o;
	return best;
}

/*
 * mongod's idle bucket expiry (BucketCatalog's expireIdleBuckets): while
 * the catalog holds more than timeseriesIdleBucketExpiryMemoryUsageThreshold
 * bytes (0 or less: 2.5% of the machine's memory), at most
 * timeseriesIdleBucketExpiryMaxCountPerAttempt times per insert: the least
 * recently used open bucket is archived (its column states and schema
 * dropped: numBucketsArchivedDueToMemoryThreshold; a later measurement of
 * its span fetches it back), or, with no open bucket left, the oldest
 * archived bucket of the least recently used row is forgotten
 * (numBucketsClosedDueToMemoryThreshold; a query can still reopen it: it is
 * not marked closed).  Every bucket is idle here: inserts are serialised by
 * ts_lock and this runs after the commit.  Under ts_lock.
 */
static void
expire_idle(engine_t *e)
{
	long long threshold = atomic_load(&e->ts_idle_expiry_threshold);
	long long max = atomic_load(&e->ts_idle_expiry_max_per_attempt);

	if (threshold <= 0) {
		long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
		threshold = pages > 0 && psz > 0 ? (long long)((double)pages * (double)psz * 0.025) : (1LL << 30);
	}
	for (long long n = 0; ts_mem > (size_t)threshold && n < max; n++) {
		ts_open_t *o = row_lru(true);
		if (o != NULL) {
			ts_colstates_t none = {0};
			ts_colstates_clear(&o->cols);
			ts_archive_add(&o->arch, &o->narch, &o->archcap, TS_ARCHIVED_MAX, &o->id, o->start_ms, &none);
			ts_archive_free(&o->soft, &o->nsoft);
			o->softcap = 0;
			ts_schema_free(o->schema);
			o->schema = NULL;
			o->has_open = false;
			stats_row(o->uuid)->c[TSC_ARCHIVED_MEMORY]++;
			row_account(o);
			continue;
		}
		if ((o = row_lru(false)) == NULL)
			break;
		ts_archive_take(o->arch, &o->narch, 0, NULL);
		stats_row(o->uuid)->c[TSC_CLOSED_MEMORY]++;
		row_account(o);
	}
}

/* Insert n prepared measurements (docs, ownership stays with the caller)
 * routed into buckets, in one transaction. */
static int
insert_measurements(cmd_t *c, storage_session_t *s, storage_coll_t *coll, bson_t *docs, int n, terr_t *err)
{
	ts_batch_t b;
	int ret;

	memset(&b, 0, sizeof(b));
	b.c = c;
	b.coll = coll;
	ts_options_get(coll->options, &b.o);
	b.docs = docs;
	b.ndocs = n;
	for (int i = 0; i < TS_BATCH_HASH; i++)
		b.heads[i] = -1;
	pthread_mutex_lock(&ts_lock);
	for (int i = 0; i < n; i++) {
		bson_value_t meta;
		int64_t t_ms = 0;
		terr_t e = TERR_INIT;
		measurement_check(&b.o, &docs[i], &meta, &t_ms, &e);
		terr_clear(&e);
		route(&b, i, &meta, t_ms);
	}
	ret = storage_txn_run(s, insert_txn, &b, write_concern_sync(c), err);
	if (ret == 0) {
		catalog_commit(&b);
		expire_idle(c->engine);
	}
	pthread_mutex_unlock(&ts_lock);
	for (int k = 0; k < b.nt; k++) {
		bson_free(b.t[k].ms);
		ts_colstates_clear(&b.t[k].next);
		ts_colstates_clear(&b.t[k].own);
		if (b.t[k].schema_owned)
			ts_schema_free(b.t[k].schema);
	}
	bson_free(b.t);
	bdamages_destroy(&b.dmg);
	return ret;
}

/* A measurement as stored: as given, with a generated ObjectId _id
 * appended when it has none (mongod adds it last: a measurement's _id is
 * no key of anything); 10334 past 16 MiB. */
static int
measurement_prepare(const bson_t *d, bson_t *out, terr_t *err)
{
	if (d->len > 16 * 1024 * 1024)
		return terr_set(err, TERR_BSON_OBJECT_TOO_LARGE,
		    "object to insert too large. size in bytes: %u, max size: %d", d->len, 16 * 1024 * 1024);
	bson_concat(out, d);
	if (!bson_has_field(d, "_id")) {
		bson_oid_t oid;
		bson_oid_init(&oid, NULL);
		BSON_APPEND_OID(out, "_id", &oid);
	}
	return 0;
}

int
cmd_ts_insert(cmd_t *c, storage_coll_t *coll, const bson_t *stmts, bool ordered, terr_t *err)
{
	ts_options_t o;
	bson_t write_errors = BSON_INITIALIZER;
	bson_iter_t it;
	storage_session_t *s;
	int ndocs = (int)bson_count_keys(stmts), nok = 0, nerr = 0, ret = -1, built = 0;
	bson_t *docs = tm_bson_array_new((size_t)(ndocs + 1));
	int *orig = bson_malloc0(sizeof(int) * (size_t)(ndocs + 1));

	ts_options_get(coll->options, &o);
	if ((s = client_session(c->client, err)) == NULL)
		goto err;
	bson_iter_init(&it, stmts);
	for (int i = 0; bson_iter_next(&it); i++) {
		const uint8_t *data;
		uint32_t len;
		bson_t d;
		bson_value_t meta;
		int64_t t_ms;
		terr_t e = TERR_INIT;

		bson_iter_document(&it, &len, &data);
		bson_init_static(&d, data, len);
		bson_init(&docs[nok]);
		if (measurement_prepare(&d, &docs[nok], &e) != 0 || measurement_check(&o, &docs[nok], &meta, &t_ms, &e) != 0) {
			bson_destroy(&docs[nok]);
			write_error_append(&write_errors, nerr++, i, &e);
			terr_clear(&e);
			if (ordered)
				break;
			continue;
		}
		orig[nok++] = i;
	}
	if (nok > 0 && insert_measurements(c, s, coll, docs, nok, err) != 0) {
		/* the whole batch is one transaction: every statement failed */
		terr_t e = TERR_INIT;
		if (write_error_is_interruption(err))
			goto err;
		terr_set(&e, err->code, "%s", err->msg ? err->msg : "");
		for (int i = 0; i < nok; i++)
			write_error_append(&write_errors, nerr++, orig[i], &e);
		terr_clear(&e);
		terr_clear(err);
		built = nok;   /* still to free */
		nok = 0;
	}
	BSON_APPEND_INT32(c->reply, "n", nok);
	if (nerr > 0)
		BSON_APPEND_ARRAY(c->reply, "writeErrors", &write_errors);
	ret = 0;
err:
	for (int i = 0; i < (built > nok ? built : nok); i++)
		bson_destroy(&docs[i]);
	bson_free(docs);
	bson_free(orig);
	bson_destroy(&write_errors);
	return ret;
}

int
cmd_ts_insert_one(cmd_t *c, storage_coll_t *coll, const bson_t *doc, terr_t *err)
{
	ts_options_t o;
	bson_t *docs = tm_bson_array_new(1);
	storage_session_t *s;
	bson_value_t meta;
	int64_t t_ms;
	int ret = -1;

	ts_options_get(coll->options, &o);
	bson_init(&docs[0]);
	if ((s = client_session(c->client, err)) != NULL && measurement_prepare(doc, &docs[0], err) == 0 &&
	    measurement_check(&o, &docs[0], &meta, &t_ms, err) == 0)
		ret = insert_measurements(c, s, coll, docs, 1, err);
	bson_destroy(&docs[0]);
	bson_free(docs);
	return ret;
}

/* ---- reads ------------------------------------------------------------------------ */

/* ---- what a read's pipeline needs of its measurements ----------------------------- */

/* The top-level fields the user's stages read, for the unpack stage's
 * `include` (mongod's dependency analysis, conservatively): known only when
 * the stages are $match / $sort ending in a $group whose expressions name
 * plain field paths; anything else (another stage, $$ROOT / $$CURRENT,
 * $getField, a query operator that reads the whole document) reads all. */
#define TS_DEPS_MAX 32
typedef struct ts_deps {
	char names[TS_DEPS_MAX][128];
	int n;
	bool all;
} ts_deps_t;

static void
deps_add(ts_deps_t *d, const char *path)
{
	size_t l = strcspn(path, ".");

	if (l == 0 || l >= sizeof(d->names[0])) {
		d->all = true;
		return;
	}
	for (int i = 0; i < d->n; i++)
		if (strlen(d->names[i]) == l && strncmp(d->names[i], path, l) == 0)
			return;
	if (d->n == TS_DEPS_MAX) {
		d->all = true;
		return;
	}
	memcpy(d->names[d->n], path, l);
	d->names[d->n++][l] = '\0';
}

static void
deps_expr(ts_deps_t *d, bson_iter_t *it)
{
	if (BSON_ITER_HOLDS_UTF8(it)) {
		const char *s = bson_iter_utf8(it, NULL);
		if (strncmp(s, "$$", 2) == 0) {
			if (strncmp(s + 2, "ROOT", 4) == 0 || strncmp(s + 2, "CURRENT", 7) == 0)
				d->all = true;
		} else if (s[0] == '$')
			deps_add(d, s + 1);
	} else if (BSON_ITER_HOLDS_DOCUMENT(it) || BSON_ITER_HOLDS_ARRAY(it)) {
		bson_iter_t c;
		bson_iter_recurse(it, &c);
		while (bson_iter_next(&c)) {
			const char *k = bson_iter_key(&c);
			if (strcmp(k, "$literal") == 0)
				continue;
			if (strcmp(k, "$getField") == 0 || strcmp(k, "$setField") == 0 || strcmp(k, "$unsetField") == 0)
				d->all = true;
			deps_expr(d, &c);
		}
	}
}

static void
deps_match(ts_deps_t *d, bson_iter_t *filter)
{
	bson_iter_t f;

	if (!BSON_ITER_HOLDS_DOCUMENT(filter)) {
		d->all = true;
		return;
	}
	bson_iter_recurse(filter, &f);
	while (bson_iter_next(&f)) {
		const char *k = bson_iter_key(&f);
		if (strcmp(k, "$and") == 0 || strcmp(k, "$or") == 0 || strcmp(k, "$nor") == 0) {
			bson_iter_t a;
			if (!BSON_ITER_HOLDS_ARRAY(&f)) {
				d->all = true;
				continue;
			}
			bson_iter_recurse(&f, &a);
			while (bson_iter_next(&a))
				deps_match(d, &a);
		} else if (strcmp(k, "$expr") == 0)
			deps_expr(d, &f);
		else if (strcmp(k, "$comment") == 0)
			continue;
		else if (k[0] == '$')
			d->all = true;
		else
			deps_add(d, k);
	}
}

/* The accumulators whose argument is an expression. */
static const char *const deps_plain_accs[] = {"$first", "$last", "$avg", "$sum", "$min", "$max", "$push", "$addToSet",
    "$count", "$stdDevPop", "$stdDevSamp", "$mergeObjects", NULL};

static void
deps_group(ts_deps_t *d, bson_iter_t *g)
{
	bson_iter_t f;

	if (!BSON_ITER_HOLDS_DOCUMENT(g)) {
		d->all = true;
		return;
	}
	bson_iter_recurse(g, &f);
	while (bson_iter_next(&f)) {
		bson_iter_t acc;
		const char *op;
		bool known = false;
		if (strcmp(bson_iter_key(&f), "_id") == 0) {
			deps_expr(d, &f);
			continue;
		}
		if (!BSON_ITER_HOLDS_DOCUMENT(&f) || !bson_iter_recurse(&f, &acc) || !bson_iter_next(&acc)) {
			d->all = true;
			continue;
		}
		op = bson_iter_key(&acc);
		for (int i = 0; deps_plain_accs[i] != NULL; i++)
			known |= strcmp(op, deps_plain_accs[i]) == 0;
		if (known)
			deps_expr(d, &acc);
		else
			d->all = true;
	}
}

/* The deps of the user's pipeline (d->all when not known). */
static void
deps_pipeline(const bson_t *user, ts_deps_t *d)
{
	bson_iter_t it, st;

	memset(d, 0, sizeof(*d));
	if (!bson_iter_init(&it, user)) {
		d->all = true;
		return;
	}
	while (bson_iter_next(&it)) {
		const char *k;
		if (!BSON_ITER_HOLDS_DOCUMENT(&it) || !bson_iter_recurse(&it, &st) || !bson_iter_next(&st))
			break;
		k = bson_iter_key(&st);
		if (strcmp(k, "$match") == 0)
			deps_match(d, &st);
		else if (strcmp(k, "$sort") == 0 && BSON_ITER_HOLDS_DOCUMENT(&st)) {
			bson_iter_t s;
			bson_iter_recurse(&st, &s);
			while (bson_iter_next(&s)) {
				if (!BSON_ITER_HOLDS_NUMBER(&s))
					d->all = true;
				deps_add(d, bson_iter_key(&s));
			}
		} else if (strcmp(k, "$group") == 0) {
			deps_group(d, &st);
			return;
		} else
			break;
	}
	d->all = true;            /* no $group: the documents themselves are the answer */
}

/*
 * mongod's "lastpoint" (optimizeLastpoint): user stages [$match on meta
 * only]?, {$sort: {<meta path>: +-1, <time>: -1}} (or {<time>: -1}) and a
 * $group by "$<meta path>" of $first only -- or the same with <time>: 1 and
 * $last -- read one bucket per group: the one with the greatest
 * control.max.<time> (a true max; control.min is rounded).  Appends the
 * bucket-level {$sort: {meta..: +-1, control.max.<t>: -1, control.min.<t>:
 * -1}} and {$group: {_id: "$meta..", meta/control/data: {$first}}} to out
 * at *n and returns true; false: not this shape.
 */
static bool
lastpoint_stages(const ts_options_t *o, const bson_t *user, bson_t *out, int *n)
{
	bson_iter_t it, st, s;
	char mpath[256] = "", bpath[256], gpath[256], key[16], ctl[300];
	int mdir = 1, tdir = 0;
	bson_t stage, body, sub;

	if (!bson_iter_init(&it, user) || !bson_iter_next(&it) || !BSON_ITER_HOLDS_DOCUMENT(&it) ||
	    !bson_iter_recurse(&it, &st) || !bson_iter_next(&st))
		return false;
	if (strcmp(bson_iter_key(&st), "$match") == 0) {
		/* a filter on meta only keeps or drops whole buckets */
		bson_iter_t f;
		if (!BSON_ITER_HOLDS_DOCUMENT(&st))
			return false;
		bson_iter_recurse(&st, &f);
		while (bson_iter_next(&f))
			if (!ts_meta_bucket_path(o, bson_iter_key(&f), bpath, sizeof(bpath)))
				return false;
		if (!bson_iter_next(&it) || !BSON_ITER_HOLDS_DOCUMENT(&it) || !bson_iter_recurse(&it, &st) ||
		    !bson_iter_next(&st))
			return false;
	}
	if (strcmp(bson_iter_key(&st), "$sort") != 0 || !BSON_ITER_HOLDS_DOCUMENT(&st))
		return false;
	bson_iter_recurse(&st, &s);
	while (bson_iter_next(&s)) {
		const char *k = bson_iter_key(&s);
		int dir;
		if (!BSON_ITER_HOLDS_NUMBER(&s) || tdir != 0)
			return false;
		dir = bson_iter_as_int64(&s) < 0 ? -1 : 1;
		if (strcmp(k, o->time_field) == 0)
			tdir = dir;
		else if (mpath[0] == '\0' && ts_meta_bucket_path(o, k, bpath, sizeof(bpath))) {
			bson_strncpy(mpath, k, sizeof(mpath));
			mdir = dir;
		} else
			return false;
	}
	if (tdir == 0 || !bson_iter_next(&it) || !BSON_ITER_HOLDS_DOCUMENT(&it) || !bson_iter_recurse(&it, &st) ||
	    !bson_iter_next(&st) || strcmp(bson_iter_key(&st), "$group") != 0 || !BSON_ITER_HOLDS_DOCUMENT(&st))
		return false;
	bson_iter_recurse(&st, &s);
	gpath[0] = '\0';
	while (bson_iter_next(&s)) {
		bson_iter_t acc;
		if (strcmp(bson_iter_key(&s), "_id") == 0) {
			if (!BSON_ITER_HOLDS_UTF8(&s) || bson_iter_utf8(&s, NULL)[0] != '$' ||
			    bson_iter_utf8(&s, NULL)[1] == '$')
				return false;
			bson_strncpy(gpath, bson_iter_utf8(&s, NULL) + 1, sizeof(gpath));
			continue;
		}
		if (!BSON_ITER_HOLDS_DOCUMENT(&s) || !bson_iter_recurse(&s, &acc) || !bson_iter_next(&acc) ||
		    strcmp(bson_iter_key(&acc), tdir < 0 ? "$first" : "$last") != 0 || bson_iter_next(&acc))
			return false;
	}
	if (!ts_meta_bucket_path(o, gpath, bpath, sizeof(bpath)) || (mpath[0] != '\0' && strcmp(mpath, gpath) != 0))
		return false;
	/* the buckets, newest (by control.max) first within each group */
	bson_snprintf(key, sizeof(key), "%d", (*n)++);
	bson_append_document_begin(out, key, -1, &stage);
	bson_append_document_begin(&stage, "$sort", -1, &body);
	BSON_APPEND_INT32(&body, bpath, mdir);
	bson_snprintf(ctl, sizeof(ctl), "control.max.%s", o->time_field);
	BSON_APPEND_INT32(&body, ctl, -1);
	bson_snprintf(ctl, sizeof(ctl), "control.min.%s", o->time_field);
	BSON_APPEND_INT32(&body, ctl, -1);
	bson_append_document_end(&stage, &body);
	bson_append_document_end(out, &stage);
	bson_snprintf(key, sizeof(key), "%d", (*n)++);
	bson_append_document_begin(out, key, -1, &stage);
	bson_append_document_begin(&stage, "$group", -1, &body);
	bson_snprintf(ctl, sizeof(ctl), "$%s", bpath);
	BSON_APPEND_UTF8(&body, "_id", ctl);
	BSON_APPEND_DOCUMENT_BEGIN(&body, "meta", &sub);
	BSON_APPEND_UTF8(&sub, "$first", "$meta");
	bson_append_document_end(&body, &sub);
	BSON_APPEND_DOCUMENT_BEGIN(&body, "control", &sub);
	BSON_APPEND_UTF8(&sub, "$first", "$control");
	bson_append_document_end(&body, &sub);
	BSON_APPEND_DOCUMENT_BEGIN(&body, "data", &sub);
	BSON_APPEND_UTF8(&sub, "$first", "$data");
	bson_append_document_end(&body, &sub);
	bson_append_document_end(&stage, &body);
	bson_append_document_end(out, &stage);
	return true;
}

/* ---- a $group run on the buckets' columns ------------------------------------------- */

/* The units of fixed length a UTC $dateTrunc cuts into bins of equal width. */
static const struct {
	const char *name;
	int64_t ms;
} trunc_units[] = {
	{"millisecond", 1}, {"second", 1000}, {"minute", 60000}, {"hour", 3600000}, {"day", 86400000}, {NULL, 0},
};

static void
bin_merge(int64_t *bin, int64_t b)
{
	if (*bin == -1)
		*bin = b;
	else if (b != -1 && b != *bin)
		*bin = 0;
}

/* A {$dateTrunc: {...}} of the time field in UTC with a fixed-length unit
 * and a constant binSize: its bin width in ms (0: it is not). */
static int64_t
trunc_bin(const ts_options_t *o, bson_iter_t *spec)
{
	bson_iter_t f;
	int64_t unit = 0;
	bool date = false;

	if (!BSON_ITER_HOLDS_DOCUMENT(spec) || !bson_iter_recurse(spec, &f))
		return 0;
	while (bson_iter_next(&f)) {
		const char *k = bson_iter_key(&f);
		if (strcmp(k, "date") == 0)
			date = BSON_ITER_HOLDS_UTF8(&f) && bson_iter_utf8(&f, NULL)[0] == '$' &&
			    strcmp(bson_iter_utf8(&f, NULL) + 1, o->time_field) == 0;
		else if (strcmp(k, "unit") == 0 && BSON_ITER_HOLDS_UTF8(&f)) {
			for (int i = 0; trunc_units[i].name != NULL; i++)
				if (strcmp(bson_iter_utf8(&f, NULL), trunc_units[i].name) == 0)
					unit = trunc_units[i].ms;
		} else if (strcmp(k, "binSize") == 0 && (BSON_ITER_HOLDS_INT32(&f) || BSON_ITER_HOLDS_INT64(&f)) &&
		           bson_iter_as_int64(&f) == 1)
			continue;   /* wider bins: their alignment is $dateTrunc's to know (evaluated per time) */
		else if (strcmp(k, "timezone") == 0 && BSON_ITER_HOLDS_UTF8(&f) &&
		         (strcmp(bson_iter_utf8(&f, NULL), "UTC") == 0 || strcmp(bson_iter_utf8(&f, NULL), "GMT") == 0))
			continue;
		else
			return 0;
	}
	return date && unit > 0 ? unit : 0;
}

/* Whether a $group _id expression reads only the meta and time of a
 * measurement in forms the column path evaluates (field paths, constants,
 * objects and arrays of them, $dateTrunc of the time); *bin merges how it
 * reads the time: -1 not at all, > 0 only through bins of that width
 * (aligned at $dateTrunc's reference point), 0 otherwise. */
static bool
block_id(const ts_options_t *o, bson_iter_t *it, int64_t *bin, int depth)
{
	char mp[300];

	if (depth > 20)
		return false;
	if (BSON_ITER_HOLDS_UTF8(it)) {
		const char *s = bson_iter_utf8(it, NULL);
		if (s[0] != '$')
			return true;
		if (s[1] == '$')
			return false;
		if (strcmp(s + 1, o->time_field) == 0) {
			bin_merge(bin, 0);
			return true;
		}
		return ts_meta_bucket_path(o, s + 1, mp, sizeof(mp));
	}
	if (BSON_ITER_HOLDS_DOCUMENT(it) || BSON_ITER_HOLDS_ARRAY(it)) {
		bson_iter_t c;
		bool arr = BSON_ITER_HOLDS_ARRAY(it);
		bson_iter_recurse(it, &c);
		if (!arr && bson_iter_next(&c) && bson_iter_key(&c)[0] == '$') {
			bson_iter_t more = c;
			if (bson_iter_next(&more))
				return false;
			if (strcmp(bson_iter_key(&c), "$literal") == 0)
				return true;
			if (strcmp(bson_iter_key(&c), "$dateTrunc") == 0) {
				int64_t b = trunc_bin(o, &c);
				bin_merge(bin, b > 0 ? b : 0);
				return b > 0;
			}
			return false;
		}
		bson_iter_recurse(it, &c);
		while (bson_iter_next(&c))
			if (!block_id(o, &c, bin, depth + 1))
				return false;
		return true;
	}
	return true;   /* a constant */
}

/* The accumulators the column path feeds with values (accum_add). */
static const char *const block_accs[] = {"$sum", "$avg", "$min", "$max", "$first", "$last", "$push", "$addToSet",
    "$count", "$stdDevPop", "$stdDevSamp", NULL};

/*
 * A $group (at g) that can run on a bucket's columns without building
 * its measurements (agg/stage_group.c's column path): _id as block_id
 * takes, every accumulator one of block_accs of a top-level field path or
 * a constant ($count: {}).  Returns the _id's bin (see block_id), or
 * INT64_MIN when the $group is not of that shape.
 */
static int64_t
block_group_bin(const ts_options_t *o, bson_iter_t *g)
{
	bson_iter_t f;
	int64_t bin = -1;
	bool id = false;

	if (!BSON_ITER_HOLDS_DOCUMENT(g) || !bson_iter_recurse(g, &f))
		return INT64_MIN;
	while (bson_iter_next(&f)) {
		bson_iter_t acc;
		bool known = false;
		if (strcmp(bson_iter_key(&f), "_id") == 0) {
			if (!block_id(o, &f, &bin, 0))
				return INT64_MIN;
			id = true;
			continue;
		}
		if (!BSON_ITER_HOLDS_DOCUMENT(&f) || !bson_iter_recurse(&f, &acc) || !bson_iter_next(&acc))
			return INT64_MIN;
		for (int i = 0; block_accs[i] != NULL; i++)
			known |= strcmp(bson_iter_key(&acc), block_accs[i]) == 0;
		if (!known)
			return INT64_MIN;
		if (strcmp(bson_iter_key(&acc), "$count") == 0)
			continue;
		if (BSON_ITER_HOLDS_UTF8(&acc)) {
			const char *s = bson_iter_utf8(&acc, NULL);
			if (s[0] == '$' && (s[1] == '$' || s[1] == '\0' || strchr(s, '.') != NULL))
				return INT64_MIN;
		} else if (BSON_ITER_HOLDS_DOCUMENT(&acc) || BSON_ITER_HOLDS_ARRAY(&acc))
			return INT64_MIN;
	}
	return id ? bin : INT64_MIN;
}

/* Operators a $group _id rewritten onto the buckets may not hold: they
 * bind variables ($$this, $$value, their own names) or read the document
 * other than by field paths, so renaming "$<meta>" paths would not be
 * enough (mongod asks its dependency tracker; these are what it would
 * answer needWholeDocument or a variable for). */
static const char *const meta_expr_refused[] = {
	"$let", "$map", "$filter", "$reduce", "$getField", "$setField", "$unsetField", "$function",
	"$accumulator", "$meta", "$rand", "$sampleRate", "$where",
};

/* The units whose length in seconds is fixed ($dateTrunc's second..week),
 * for the fixed-bucket $dateTrunc rewrite below. */
static const struct {
	const char *name;
	int64_t s;
} fixed_units[] = {
	{"second", 1}, {"minute", 60}, {"hour", 3600}, {"day", 86400}, {"week", 604800}, {NULL, 0},
};

/* A constant $dateTrunc timezone Tamga can read without the tz database:
 * absent, "UTC"/"GMT"/"Etc/UTC"/"Z", or a fixed "+hh", "+hhmm", "+hh:mm"
 * offset (either sign); *off its offset in seconds.  False: another form
 * (an Olson name, whose offset moves with the date, or an expression). */
static bool
fixed_tz_offset(const bson_iter_t *tz, int64_t *off)
{
	const char *s;
	int h = 0, m = 0, sign;
	size_t n;

	*off = 0;
	if (tz == NULL)
		return true;
	if (!BSON_ITER_HOLDS_UTF8(tz))
		return false;
	s = bson_iter_utf8(tz, NULL);
	if (!strcmp(s, "UTC") || !strcmp(s, "GMT") || !strcmp(s, "Etc/UTC") || !strcmp(s, "Z"))
		return true;
	if (s[0] != '+' && s[0] != '-')
		return false;
	sign = s[0] == '-' ? -1 : 1;
	s++;
	n = strlen(s);
	for (size_t i = 0; i < n; i++)
		if ((s[i] < '0' || s[i] > '9') && !(i == 2 && s[i] == ':'))
			return false;
	if (n == 2)
		h = (s[0] - '0') * 10 + (s[1] - '0');
	else if (n == 4 || (n == 5 && s[2] == ':')) {
		h = (s[0] - '0') * 10 + (s[1] - '0');
		m = (s[n - 2] - '0') * 10 + (s[n - 1] - '0');
	} else
		return false;
	if (h > 99 || m > 59)
		return false;
	*off = sign * (int64_t)(h * 3600 + m * 60);
	return true;
}

/*
 * mongod's rewriteGroupByElement option 3 (handleDateTruncRewrite): in a
 * collection with fixed buckets (o->rounding == o->max_span, custom
 * bucketing: Tamga refuses collMod of those, so they never change -- mongod's
 * timeseriesBucketingParametersHaveChanged stays false), {$dateTrunc: {date:
 * "$<time>", unit, binSize?, timezone?, startOfWeek?}} (at it, a document)
 * is the same $dateTrunc of "$control.min.<time>" (the bucket's start):
 * every measurement of a bucket falls in the bin of its start when every bin
 * boundary is a bucket boundary.  mongod's conditions: bucketMaxSpanSeconds
 * at most a day, a constant unit other than millisecond, a constant binSize,
 * unit x binSize a multiple of the span, a timezone only for spans up to an
 * hour and with its offset a multiple of the span.  Tamga's own, so that the
 * answer is the unpacked one: the unit one of fixed length (second..week;
 * month/quarter/year unpack), a timezone of fixed offset (an Olson name's
 * offset moves with the date: it unpacks), and the bins' reference point
 * aligned with the buckets -- $dateTrunc counts binSize bins from
 * 2000-01-01 (local), and day/week bins start at local midnight, so the span
 * must divide 946684800 (and a day for units of a day or more); mongod
 * takes e.g. a 5-hour span with {unit: "hour", binSize: 5}, whose bins start
 * 2 hours into the buckets.  Appends the rewritten expression under key and
 * returns true; false: not rewritten (nothing appended).
 */
static bool
fixed_trunc_rewrite(const ts_options_t *o, bson_iter_t *it, bson_t *out, const char *key)
{
	bson_iter_t d, f, *tz = NULL, tzv;
	bson_t op, body;
	int64_t unit = 0, bin = 1, off = 0, span = o->max_span;
	bool date = false;
	char cp[300];

	if (o->granularity != NULL || o->rounding != o->max_span || span <= 0 || span > 86400 ||
	    !BSON_ITER_HOLDS_DOCUMENT(it) || !bson_iter_recurse(it, &d) || !bson_iter_next(&d) ||
	    strcmp(bson_iter_key(&d), "$dateTrunc") != 0 || !BSON_ITER_HOLDS_DOCUMENT(&d))
		return false;
	{
		bson_iter_t more = d;
		if (bson_iter_next(&more))
			return false;
	}
	bson_iter_recurse(&d, &f);
	while (bson_iter_next(&f)) {
		const char *k = bson_iter_key(&f);
		if (!strcmp(k, "date"))
			date = BSON_ITER_HOLDS_UTF8(&f) && bson_iter_utf8(&f, NULL)[0] == '$' &&
			    strcmp(bson_iter_utf8(&f, NULL) + 1, o->time_field) == 0;
		else if (!strcmp(k, "unit")) {
			if (!BSON_ITER_HOLDS_UTF8(&f))
				return false;
			for (int i = 0; fixed_units[i].name != NULL; i++)
				if (!strcmp(bson_iter_utf8(&f, NULL), fixed_units[i].name))
					unit = fixed_units[i].s;
		} else if (!strcmp(k, "binSize")) {
			/* $dateTrunc takes an integral number (a double of one too);
			 * anything else is left to it (unpacked, it answers its error) */
			if (BSON_ITER_HOLDS_INT32(&f) || BSON_ITER_HOLDS_INT64(&f))
				bin = bson_iter_as_int64(&f);
			else if (BSON_ITER_HOLDS_DOUBLE(&f) && bson_iter_double(&f) == (double)(int64_t)bson_iter_double(&f) &&
			         fabs(bson_iter_double(&f)) < 1e15)
				bin = (int64_t)bson_iter_double(&f);
			else
				return false;
			if (bin <= 0 || bin > 1000000000)
				return false;
		} else if (!strcmp(k, "timezone")) {
			tzv = f;
			tz = &tzv;
		} else if (!strcmp(k, "startOfWeek")) {
			/* a constant only: a field path would be read on the bucket */
			if (!BSON_ITER_HOLDS_UTF8(&f) || bson_iter_utf8(&f, NULL)[0] == '$')
				return false;
		} else
			return false;   /* an unknown argument: $dateTrunc's parse answers it */
	}
	if (!date || unit == 0 || (unit * bin) % span != 0 || !fixed_tz_offset(tz, &off))
		return false;
	if (tz != NULL && (span > 3600 || off % span != 0))
		return false;
	if (946684800 % span != 0 || (unit >= 86400 && 86400 % span != 0))
		return false;
	if (strlen(o->time_field) > sizeof(cp) - 20)
		return false;
	bson_snprintf(cp, sizeof(cp), "$control.min.%s", o->time_field);
	bson_append_document_begin(out, key, -1, &op);
	bson_append_document_begin(&op, "$dateTrunc", -1, &body);
	bson_iter_recurse(&d, &f);
	while (bson_iter_next(&f)) {
		if (!strcmp(bson_iter_key(&f), "date"))
			BSON_APPEND_UTF8(&body, "date", cp);
		else
			bson_append_iter(&body, NULL, 0, &f);
	}
	bson_append_document_end(&op, &body);
	bson_append_document_end(out, &op);
	return true;
}

/* A $group _id (or a part of it, at it) whose field paths are all the
 * metaField or under it -- a constant, a field path, an object or array of
 * those, or an operator expression over them -- written into out under key
 * with those paths renamed to the bucket's "meta": mongod's
 * rewriteGroupByElement options 1 and 2 (fieldPathsAccessOnlyMetaField,
 * rewriteMetaFieldPaths) and, where id_part (the whole _id or a field of an
 * _id object), option 3: fixed_trunc_rewrite.
 * A $literal ($const) is copied as it is; $$ROOT and $$CURRENT are refused, other
 * variables ($$NOW, a command's let) kept.  False: not that shape (out may
 * then hold a partial key: the caller drops it). */
static bool
meta_id_rewrite(const ts_options_t *o, bson_iter_t *it, bson_t *out, const char *key, int depth, bool id_part)
{
	char mp[300];

	if (depth > 20)
		return false;
	/* option 3: the whole _id, or a field of an _id object, a $dateTrunc
	 * of the time (mongod rewrites each of the _id's fields alone) */
	if (id_part && BSON_ITER_HOLDS_DOCUMENT(it) && fixed_trunc_rewrite(o, it, out, key))
		return true;
	if (BSON_ITER_HOLDS_UTF8(it)) {
		const char *v = bson_iter_utf8(it, NULL);
		if (v[0] != '$') {
			bson_append_iter(out, key, -1, it);
			return true;
		}
		if (v[1] == '$') {
			if (strncmp(v, "$$ROOT", 6) == 0 || strncmp(v, "$$CURRENT", 9) == 0)
				return false;
			bson_append_iter(out, key, -1, it);
			return true;
		}
		if (!ts_meta_bucket_path(o, v + 1, mp + 1, sizeof(mp) - 1))
			return false;
		mp[0] = '$';
		BSON_APPEND_UTF8(out, key, mp);
		return true;
	}
	if (BSON_ITER_HOLDS_DOCUMENT(it) || BSON_ITER_HOLDS_ARRAY(it)) {
		bson_iter_t c;
		bson_t sub;
		bool ok = true, arr = BSON_ITER_HOLDS_ARRAY(it);
		bool plain = !arr;
		bson_iter_recurse(it, &c);
		if (!arr && bson_iter_next(&c) && bson_iter_key(&c)[0] == '$') {
			const char *op = bson_iter_key(&c);
			plain = false;
			if (bson_iter_next(&c) || strncmp(op, "$_", 2) == 0)
				return false;   /* not one operator: the parser answers it */
			for (size_t i = 0; i < sizeof(meta_expr_refused) / sizeof(meta_expr_refused[0]); i++)
				if (strcmp(op, meta_expr_refused[i]) == 0)
					return false;
			if (strcmp(op, "$literal") == 0 || strcmp(op, "$const") == 0) {
				bson_append_iter(out, key, -1, it);
				return true;
			}
		}
		if (arr)
			bson_append_array_begin(out, key, -1, &sub);
		else
			bson_append_document_begin(out, key, -1, &sub);
		bson_iter_recurse(it, &c);
		while (ok && bson_iter_next(&c))
			ok = meta_id_rewrite(o, &c, &sub, bson_iter_key(&c), depth + 1, depth == 0 && plain);
		if (arr)
			bson_append_array_end(out, &sub);
		else
			bson_append_document_end(out, &sub);
		return ok;
	}
	bson_append_iter(out, key, -1, it);   /* a constant */
	return true;
}

/* An accumulator argument (at it) that is the constant 1 as mongod's
 * rewriteCountGroupAccm compares it (Value(1): any numeric type, so 1,
 * NumberLong(1), 1.0 and NumberDecimal("1"), also under $literal). */
static bool
is_const_one(bson_iter_t *it)
{
	if (BSON_ITER_HOLDS_DOCUMENT(it)) {
		bson_iter_t c;
		bson_iter_recurse(it, &c);
		if (!bson_iter_next(&c) || strcmp(bson_iter_key(&c), "$literal") != 0)
			return false;
		{
			bson_iter_t v = c;
			if (bson_iter_next(&c))
				return false;
			return is_const_one(&v);
		}
	}
	if (BSON_ITER_HOLDS_INT32(it))
		return bson_iter_int32(it) == 1;
	if (BSON_ITER_HOLDS_INT64(it))
		return bson_iter_int64(it) == 1;
	if (BSON_ITER_HOLDS_DOUBLE(it))
		return bson_iter_double(it) == 1.0;
	if (BSON_ITER_HOLDS_DECIMAL128(it)) {
		/* coefficient x 10^exp equal to 1: the digits, less trailing
		 * zeros (each raising exp), are "1" and exp is 0 */
		bson_decimal128_t d;
		char str[BSON_DECIMAL128_STRING], dig[BSON_DECIMAL128_STRING];
		size_t n = 0;
		long exp = 0;
		const char *p = str;
		bson_iter_decimal128(it, &d);
		bson_decimal128_to_string(&d, str);
		if (*p == '+')
			p++;
		for (; *p != '\0' && *p != 'E'; p++) {
			if (*p == '.') {
				for (p++; *p >= '0' && *p <= '9'; p++, exp--)
					dig[n++] = *p;
				break;
			}
			if (*p < '0' || *p > '9')
				return false;   /* a sign, NaN, Infinity */
			dig[n++] = *p;
		}
		if (*p == 'E')
			exp += strtol(p + 1, NULL, 10);
		else if (*p != '\0')
			return false;
		while (n > 1 && dig[n - 1] == '0') {
			n--;
			exp++;
		}
		{
			size_t lead = 0;
			while (lead + 1 < n && dig[lead] == '0')
				lead++;
			return n - lead == 1 && dig[lead] == '1' && exp == 0;
		}
	}
	return false;
}

/*
 * mongod's rewriteGroupStage: a $group right after the unpack (no event
 * filter) by the meta (a constant, or any expression whose field paths are
 * all the meta or under it) whose accumulators are all $min/$max of field
 * paths and {$sum: 1} runs on the buckets themselves: $min/$max of the meta
 * become the same of "$meta...", $max of a field that of
 * "$control.max.<field>", {$sum: 1} (or $count, or a 1 of any numeric
 * type) the bucket's count ({$cond: [{$gte: ["$control.version", 2]},
 * "$control.count", {$size: {$objectToArray: "$data.<time>"}}]}: an int, so
 * {$sum: 1.0} answers an int as on mongod, where the unpacked sum is a
 * double).  Appends {$group: ...} to out under key and returns true; false:
 * not that shape.
 *
 * $min/$max of a measurement path become the same of
 * "$control.min.<path>" / "$control.max.<path>" as mongod's
 * rewriteMinMaxGroupAccm, except $min of the time (control.min of the time
 * is rounded down: mongod refuses it too), when the collection's bounds are
 * field by field (o->field_bounds: created since Tamga keeps them so; a
 * type change closes a bucket, so a null sits in a bucket of nulls and the
 * accumulator skips it as unpacked).  Where a bucket holds objects or
 * arrays the field-by-field bound may be a value no measurement holds: that
 * is mongod's answer too.  A collection created before (whole-value bounds
 * in some buckets) takes only $max of a top-level field (the largest value
 * by BSON order, which both forms hold unless it is an object or array).
 * A collection that allows mixed-schema buckets (o->mixed_schema) takes
 * none: its bounds need not be any measurement's value (mongod's rewrite
 * requires assumeNoMixedSchemaData too).
 */
static bool
group_rewrite(const ts_options_t *o, bson_iter_t *g, bson_t *out, const char *key)
{
	bson_t grp, body;
	bson_iter_t f;
	bool ok = true, id = false;

	if (!BSON_ITER_HOLDS_DOCUMENT(g))
		return false;
	bson_init(&grp);
	bson_append_document_begin(&grp, "$group", -1, &body);
	bson_iter_recurse(g, &f);
	while (ok && bson_iter_next(&f)) {
		const char *name = bson_iter_key(&f);
		bson_iter_t acc;
		const char *op;
		char path[400];
		if (strcmp(name, "_id") == 0) {
			ok = meta_id_rewrite(o, &f, &body, "_id", 0, true);
			id = true;
			continue;
		}
		if (!BSON_ITER_HOLDS_DOCUMENT(&f) || !bson_iter_recurse(&f, &acc) || !bson_iter_next(&acc)) {
			ok = false;
			break;
		}
		op = bson_iter_key(&acc);
		if ((strcmp(op, "$count") == 0 && BSON_ITER_HOLDS_DOCUMENT(&acc)) ||
		    (strcmp(op, "$sum") == 0 && is_const_one(&acc))) {
			/* {$sum: 1}: the bucket's measurement count (an int, whatever
			 * the type of the 1, as on mongod) */
			bson_t a, sum, cond, gte, size, ota;
			char data[300];
			if (strcmp(op, "$count") == 0) {
				bson_iter_t e;
				bson_iter_recurse(&acc, &e);
				if (bson_iter_next(&e)) {
					ok = false;
					break;
				}
			}
			bson_snprintf(data, sizeof(data), "$data.%s", o->time_field);
			bson_append_document_begin(&body, name, -1, &a);
			bson_append_document_begin(&a, "$sum", -1, &sum);
			bson_append_array_begin(&sum, "$cond", -1, &cond);
			bson_append_document_begin(&cond, "0", -1, &gte);
			{
				bson_t args;
				bson_append_array_begin(&gte, "$gte", -1, &args);
				BSON_APPEND_UTF8(&args, "0", "$control.version");
				BSON_APPEND_INT32(&args, "1", 2);
				bson_append_array_end(&gte, &args);
			}
			bson_append_document_end(&cond, &gte);
			BSON_APPEND_UTF8(&cond, "1", "$control.count");
			bson_append_document_begin(&cond, "2", -1, &size);
			bson_append_document_begin(&size, "$size", -1, &ota);
			BSON_APPEND_UTF8(&ota, "$objectToArray", data);
			bson_append_document_end(&size, &ota);
			bson_append_document_end(&cond, &size);
			bson_append_array_end(&sum, &cond);
			bson_append_document_end(&a, &sum);
			bson_append_document_end(&body, &a);
			continue;
		}
		if ((strcmp(op, "$min") != 0 && strcmp(op, "$max") != 0) || !BSON_ITER_HOLDS_UTF8(&acc) ||
		    bson_iter_utf8(&acc, NULL)[0] != '$' || bson_iter_utf8(&acc, NULL)[1] == '$') {
			ok = false;
			break;
		}
		{
			const char *fp = bson_iter_utf8(&acc, NULL) + 1;
			bson_t a;
			size_t first = strcspn(fp, ".");
			bool is_min = strcmp(op, "$min") == 0;
			if (ts_meta_bucket_path(o, fp, path + 1, sizeof(path) - 1))
				path[0] = '$';
			else if (!o->mixed_schema && strlen(fp) < 300 && (o->field_bounds ? !(is_min && first == strlen(o->time_field) &&
			                                                   strncmp(fp, o->time_field, first) == 0)
			                                              : !is_min && fp[first] == '\0'))
				/* field-by-field bounds: mongod's rewrite of any path but
				 * $min of the time (rounded down); older collections: $max
				 * of a top-level field only */
				bson_snprintf(path, sizeof(path), "$control.%s.%s", is_min ? "min" : "max", fp);
			else {
				ok = false;
				break;
			}
			bson_append_document_begin(&body, name, -1, &a);
			BSON_APPEND_UTF8(&a, op, path);
			bson_append_document_end(&body, &a);
		}
	}
	bson_append_document_end(&grp, &body);
	if (ok && id)
		BSON_APPEND_DOCUMENT(out, key, &grp);
	bson_destroy(&grp);
	return ok && id;
}

int
cmd_ts_read_pipeline(const storage_coll_t *coll, const bson_t *user, bool simple_collation, bson_t *out)
{
	ts_options_t o;
	bson_iter_t it, st;
	bson_t stage, spec;
	int n = 0;
	char key[16];
	ts_deps_t deps;
	const char *include[TS_DEPS_MAX + 1];
	bool lastpoint, absorbed = false;
	bson_t event = BSON_INITIALIZER, whole = BSON_INITIALIZER, rest = BSON_INITIALIZER;
	int64_t block_bin = INT64_MIN;

	bson_init(out);
	if (!ts_options_get(coll->options, &o))
		return -1;
	/* stages about the collection itself stay first and read it as it is */
	if (bson_iter_init(&it, user) && bson_iter_next(&it) && BSON_ITER_HOLDS_DOCUMENT(&it) &&
	    bson_iter_recurse(&it, &st) && bson_iter_next(&st) &&
	    (strcmp(bson_iter_key(&st), "$collStats") == 0 || strcmp(bson_iter_key(&st), "$indexStats") == 0 ||
	     strcmp(bson_iter_key(&st), "$planCacheStats") == 0)) {
		bson_iter_init(&it, user);
		while (bson_iter_next(&it)) {
			bson_snprintf(key, sizeof(key), "%d", n++);
			bson_append_iter(out, key, -1, &it);
		}
		bson_destroy(&event);
		bson_destroy(&whole);
		bson_destroy(&rest);
		return 0;
	}
	/* a leading $match: its meta/time part decides buckets first; the rest
	 * goes into the unpack stage as its eventFilter (with the
	 * wholeBucketFilter that spares it for buckets wholly inside), as
	 * mongod's doOptimizeAt moves it there */
	if (bson_iter_init(&it, user) && bson_iter_next(&it) && BSON_ITER_HOLDS_DOCUMENT(&it) &&
	    bson_iter_recurse(&it, &st) && bson_iter_next(&st) && strcmp(bson_iter_key(&st), "$match") == 0 &&
	    BSON_ITER_HOLDS_DOCUMENT(&st)) {
		const uint8_t *d;
		uint32_t l;
		bson_t f, bf = BSON_INITIALIZER;
		bson_iter_document(&st, &l, &d);
		bson_init_static(&f, d, l);
		bson_t gf = BSON_INITIALIZER;
		bool has_bf, has_gf;
		ts_ix_fields_t fs;
		uint64_t pok = 0;
		cmd_ts_partial_mask(coll, &f, simple_collation, &pok);
		cmd_ts_ix_fields(coll, &o, pok, &fs);
		has_bf = ts_bucket_filter_ix(&o, &f, &fs, &bf);
		/* measurement $geoWithin/$geoIntersects: $_internalBucketGeoWithin (ts_index.c) */
		has_gf = ts_bucket_geo_filter(&o, &f, &gf);
		if (has_bf || has_gf) {
			bson_snprintf(key, sizeof(key), "%d", n++);
			bson_append_document_begin(out, key, -1, &stage);
			if (has_bf && has_gf) {
				bson_t m, a;
				bson_append_document_begin(&stage, "$match", -1, &m);
				bson_append_array_begin(&m, "$and", -1, &a);
				BSON_APPEND_DOCUMENT(&a, "0", &bf);
				BSON_APPEND_DOCUMENT(&a, "1", &gf);
				bson_append_array_end(&m, &a);
				bson_append_document_end(&stage, &m);
			} else {
				BSON_APPEND_DOCUMENT(&stage, "$match", has_bf ? &bf : &gf);
			}
			bson_append_document_end(out, &stage);
		}
		bson_destroy(&bf);
		bson_destroy(&gf);
		absorbed = ts_event_split(&o, &f, &event, &whole);
	}
	/* the stages after the unpack: the user's, less an absorbed $match (its
	 * event part counted in the unpack's `include`, as mongod counts it) */
	{
		int m = 0;
		if (absorbed && !bson_empty(&event)) {
			bson_snprintf(key, sizeof(key), "%d", m++);
			bson_append_document_begin(&rest, key, -1, &stage);
			BSON_APPEND_DOCUMENT(&stage, "$match", &event);
			bson_append_document_end(&rest, &stage);
		}
		bson_iter_init(&it, user);
		if (absorbed)
			bson_iter_next(&it);
		while (bson_iter_next(&it)) {
			bson_snprintf(key, sizeof(key), "%d", m++);
			bson_append_iter(&rest, key, -1, &it);
		}
	}
	lastpoint = lastpoint_stages(&o, user, out, &n);
	deps_pipeline(&rest, &deps);
	if (!deps.all) {
		for (int i = 0; i < deps.n; i++)
			include[i] = deps.names[i];
		if (lastpoint && deps.n < TS_DEPS_MAX && !ts_unpack_wants(&(ts_options_t){.include = include, .n_include = deps.n}, o.time_field))
			include[deps.n++] = o.time_field;
		o.include = include;
		o.n_include = deps.n;
	}
	/* a $group right after the unpack (an absorbed $match before it, or
	 * none) that the column path can run */
	if (!lastpoint && (absorbed || !(bson_iter_init(&it, user) && bson_iter_next(&it) && BSON_ITER_HOLDS_DOCUMENT(&it) &&
	                                 bson_iter_recurse(&it, &st) && bson_iter_next(&st) &&
	                                 strcmp(bson_iter_key(&st), "$match") == 0))) {
		bson_iter_init(&it, user);
		if (absorbed)
			bson_iter_next(&it);
		if (bson_iter_next(&it) && BSON_ITER_HOLDS_DOCUMENT(&it) && bson_iter_recurse(&it, &st) && bson_iter_next(&st) &&
		    strcmp(bson_iter_key(&st), "$group") == 0)
			block_bin = block_group_bin(&o, &st);
	}
	/* mongod's $group on the buckets themselves, in place of the unpack
	 * and the user's $group (its control fields follow the collection's
	 * simple collation: not under another) */
	if (!lastpoint && simple_collation && !bson_has_field(coll->options, "collation") &&
	    (!absorbed || bson_empty(&event)) &&
	    !(!absorbed && bson_iter_init(&it, user) && bson_iter_next(&it) && BSON_ITER_HOLDS_DOCUMENT(&it) &&
	      bson_iter_recurse(&it, &st) && bson_iter_next(&st) && strcmp(bson_iter_key(&st), "$match") == 0)) {
		bson_iter_init(&it, user);
		if (absorbed)
			bson_iter_next(&it);
		bson_snprintf(key, sizeof(key), "%d", n);
		if (bson_iter_next(&it) && BSON_ITER_HOLDS_DOCUMENT(&it) && bson_iter_recurse(&it, &st) && bson_iter_next(&st) &&
		    strcmp(bson_iter_key(&st), "$group") == 0 && group_rewrite(&o, &st, out, key)) {
			n++;
			while (bson_iter_next(&it)) {
				bson_snprintf(key, sizeof(key), "%d", n++);
				bson_append_iter(out, key, -1, &it);
			}
			bson_destroy(&event);
			bson_destroy(&whole);
			bson_destroy(&rest);
			return 0;
		}
	}
	bson_snprintf(key, sizeof(key), "%d", n++);
	bson_append_document_begin(out, key, -1, &stage);
	bson_append_document_begin(&stage, "$_internalUnpackBucket", -1, &spec);
	ts_unpack_spec(&o, &spec);
	if (o.mixed_schema)   /* mongod's spec field; shown by explain */
		BSON_APPEND_BOOL(&spec, "assumeNoMixedSchemaData", false);
	if (!bson_empty(&whole))
		BSON_APPEND_DOCUMENT(&spec, "wholeBucketFilter", &whole);
	if (!bson_empty(&event))
		BSON_APPEND_DOCUMENT(&spec, "eventFilter", &event);
	if (lastpoint)
		BSON_APPEND_BOOL(&spec, "$_tamgaLastpoint", true);
	if (block_bin != INT64_MIN)
		BSON_APPEND_INT64(&spec, "$_tamgaBlockGroup", block_bin);
	bson_append_document_end(&stage, &spec);
	bson_append_document_end(out, &stage);
	bson_iter_init(&it, user);
	if (absorbed)
		bson_iter_next(&it);
	while (bson_iter_next(&it)) {
		bson_snprintf(key, sizeof(key), "%d", n++);
		bson_append_iter(out, key, -1, &it);
	}
	bson_destroy(&event);
	bson_destroy(&whole);
	bson_destroy(&rest);
	return 0;
}

/* ---- delete and update ------------------------------------------------------------ */

typedef struct ts_rewrite {
	cmd_t *c;
	storage_coll_t *coll;
	ts_options_t o;
	match_t *m;
	bool multi;
	const bson_value_t *update;  /* NULL: delete */
	update_t *u;
	int64_t matched, modified;
	bson_t moved;                /* updated measurements to route again: {"0": {...}, ...} */
	int nmoved;
	const bson_t *q;             /* the statement's filter (an upsert's seed) */
	bool upsert, upserted;
	bson_value_t upserted_id;    /* owned when upserted */
	bool want_doc, want_new;     /* findAndModify: keep the matched measurement (or its new form) */
	bson_t *doc_out;             /* owned */
} ts_rewrite_t;

typedef struct ts_unpacked {
	ts_rewrite_t *r;
	bson_t keep;                 /* measurements that stay: {"0": ...} */
	int nkeep;
	bool changed;
	terr_t *err;
} ts_unpacked_t;

static int
rewrite_m(void *ctx, const bson_t *m, terr_t *err)
{
	ts_unpacked_t *u = ctx;
	ts_rewrite_t *r = u->r;
	char key[16];
	int rc;

	rc = (r->multi || r->matched == 0) ? match_exec(r->m, m, NULL, err) : 0;
	if (rc < 0)
		return -1;
	if (rc == 1) {
		r->matched++;
		u->changed = true;
		if (r->want_doc && (r->update == NULL || !r->want_new) && r->doc_out == NULL)
			r->doc_out = bson_copy(m);
		if (r->update != NULL) {
			bson_t nd;
			bool mod = false;
			if (update_apply(r->u, m, NULL, &nd, &mod, err) != 0)
				return -1;
			if (mod)
				r->modified++;
			if (r->want_doc && r->want_new && r->doc_out == NULL)
				r->doc_out = bson_copy(&nd);
			bson_snprintf(key, sizeof(key), "%d", r->nmoved++);
			BSON_APPEND_DOCUMENT(&r->moved, key, &nd);
			bson_destroy(&nd);
		}
		return 0;
	}
	bson_snprintf(key, sizeof(key), "%d", u->nkeep++);
	BSON_APPEND_DOCUMENT(&u->keep, key, m);
	return 0;
}

/*
 * The updated measurements routed again and written in the rewrite's own
 * transaction (so an update never loses what it took out of a bucket):
 * into new buckets only, since the catalog's open buckets may be among
 * those this transaction rewrote (it forgets them after the commit).
 */
static int
moved_insert(storage_session_t *s, ts_rewrite_t *r, terr_t *err)
{
	ts_batch_t b;
	bson_t *docs = tm_bson_array_new((size_t)r->nmoved);
	bson_iter_t it;
	int k = 0, ret = 0;

	memset(&b, 0, sizeof(b));
	b.c = r->c;
	b.coll = r->coll;
	b.o = r->o;
	b.fresh = true;
	for (int i = 0; i < TS_BATCH_HASH; i++)
		b.heads[i] = -1;
	bson_iter_init(&it, &r->moved);
	while (ret == 0 && bson_iter_next(&it) && k < r->nmoved) {
		const uint8_t *d;
		uint32_t l;
		bson_value_t meta;
		int64_t t_ms;
		bson_iter_document(&it, &l, &d);
		bson_init_static(&docs[k], d, l);
		if ((ret = measurement_check(&r->o, &docs[k], &meta, &t_ms, err)) == 0)
			k++;
	}
	b.docs = docs;
	b.ndocs = k;
	for (int i = 0; ret == 0 && i < k; i++) {
		bson_value_t meta;
		int64_t t_ms = 0;
		measurement_check(&b.o, &docs[i], &meta, &t_ms, err);
		route(&b, i, &meta, t_ms);
	}
	if (ret == 0)
		ret = insert_txn(s, &b, err);
	for (int i = 0; i < b.nt; i++) {
		bson_free(b.t[i].ms);
		ts_colstates_clear(&b.t[i].next);
		ts_colstates_clear(&b.t[i].own);
		if (b.t[i].schema_owned)
			ts_schema_free(b.t[i].schema);
	}
	bson_free(b.t);
	bdamages_destroy(&b.dmg);
	bson_free(docs);
	return ret;
}

/*
 * Nothing matched an upsert: the document it inserts (the filter's
 * equalities, then the update, _id generated when neither gives one), added
 * to the measurements routed in this transaction; its _id is the upserted
 * one.  A result without a date in the time field fails as an insert does.
 */
static int
upsert_add(ts_rewrite_t *r, terr_t *err)
{
	bson_t doc;
	bson_iter_t it;
	char key[16];

	RET(update_build_upsert_doc(r->u, r->q, NULL, &doc, err));
	if (bson_iter_init_find(&it, &doc, "_id")) {
		if (r->upserted)
			bson_value_destroy(&r->upserted_id);
		bson_value_copy(bson_iter_value(&it), &r->upserted_id);
		r->upserted = true;
	}
	bson_snprintf(key, sizeof(key), "%d", r->nmoved++);
	BSON_APPEND_DOCUMENT(&r->moved, key, &doc);
	if (r->want_doc && r->want_new && r->doc_out == NULL)
		r->doc_out = bson_copy(&doc);
	bson_destroy(&doc);
	return 0;
}

static int
rewrite_txn(storage_session_t *s, void *arg, terr_t *err)
{
	ts_rewrite_t *r = arg;
	storage_cursor_t *cur = NULL;
	recid_t *ids = NULL;
	size_t n = 0, cap = 0;
	int rc, ret = 0;

	r->matched = r->modified = 0;
	r->nmoved = 0;
	if (r->upserted)
		bson_value_destroy(&r->upserted_id);
	r->upserted = false;
	if (r->doc_out != NULL)
		bson_destroy(r->doc_out);
	r->doc_out = NULL;
	bson_reinit(&r->moved);
	/* the buckets first (a rewrite moves them under a scan) */
	RET(storage_scan_open(s, r->coll, false, &cur, err));
	for (;;) {
		recid_t id;
		bson_t doc;
		rc = storage_cursor_next(cur, &id, &doc, NULL, NULL, err);
		if (rc < 0)
			ret = -1;
		if (rc <= 0)
			break;
		if (n == cap) {
			cap = cap ? cap * 2 : 64;
			ids = bson_realloc(ids, sizeof(*ids) * cap);
		}
		ids[n++] = id;
	}
	storage_cursor_close(cur);
	for (size_t i = 0; ret == 0 && i < n && (r->multi || r->matched == 0); i++) {
		bson_t view, old = BSON_INITIALIZER, scratch = BSON_INITIALIZER;
		ts_unpacked_t u = {r, BSON_INITIALIZER, 0, false, err};
		if ((rc = storage_doc_get(s, r->coll, ids[i], &view, err)) != 0) {
			ret = rc < 0 ? -1 : 0;
			bson_destroy(&old);
			bson_destroy(&scratch);
			bson_destroy(&u.keep);
			continue;
		}
		bson_destroy(&old);
		bson_copy_to(&view, &old);
		ret = tm_interrupt_check(err);
		if (ret == 0)
			ret = ts_bucket_unpack(&r->o, &old, &scratch, rewrite_m, &u, err);
		if (ret == 0 && u.changed) {
			if (u.nkeep == 0) {
				ret = storage_doc_delete(s, r->coll, ids[i], &old, err);
			} else {
				/* the rest stays in the same bucket, rebuilt */
				bson_t nb = BSON_INITIALIZER, *keep = tm_bson_array_new((size_t)u.nkeep);
				const bson_t **ms = bson_malloc0(sizeof(*ms) * (size_t)u.nkeep);
				bson_iter_t it, idit, mit;
				bson_oid_t oid;
				int64_t start = 0;
				bson_value_t meta = {.value_type = BSON_TYPE_EOD};
				int k = 0;
				bson_iter_init(&it, &u.keep);
				while (bson_iter_next(&it) && k < u.nkeep) {
					const uint8_t *d;
					uint32_t l;
					bson_iter_document(&it, &l, &d);
					bson_init_static(&keep[k], d, l);
					ms[k] = &keep[k];
					k++;
				}
				if (bson_iter_init_find(&idit, &old, "_id") && BSON_ITER_HOLDS_OID(&idit))
					bson_oid_copy(bson_iter_oid(&idit), &oid);
				else
					bson_oid_init(&oid, NULL);
				{
					char p[600];
					bson_iter_t ct;
					bson_snprintf(p, sizeof(p), "control.min.%s", r->o.time_field);
					if (bson_iter_init(&ct, &old) && bson_iter_find_descendant(&ct, p, &mit) &&
					    BSON_ITER_HOLDS_DATE_TIME(&mit))
						start = bson_iter_date_time(&mit);
				}
				if (bson_iter_init_find(&mit, &old, "meta"))
					meta = *bson_iter_value(&mit);
				ts_bucket_build(&r->o, &oid, start, &meta, ms, k, &nb);
				if (ts_bucket_is_compressed(&old)) {
					/* a closed bucket stays closed and compressed */
					bson_t cb = BSON_INITIALIZER;
					terr_t e = TERR_INIT;
					if (ts_bucket_compress(&r->o, &nb, &cb, &e) == 0) {
						bson_destroy(&nb);
						bson_steal(&nb, &cb);
					} else {
						bson_destroy(&cb);
					}
					terr_clear(&e);
				}
				ret = storage_doc_update(s, r->coll, ids[i], &old, &nb, err);
				bson_destroy(&nb);
				bson_free(ms);
				bson_free(keep);
			}
		}
		bson_destroy(&u.keep);
		bson_destroy(&scratch);
		bson_destroy(&old);
	}
	bson_free(ids);
	if (ret == 0 && r->upsert && r->matched == 0)
		ret = upsert_add(r, err);
	if (ret == 0 && r->nmoved > 0)
		ret = moved_insert(s, r, err);
	return ret;
}

/* Run one delete (update NULL) or update statement with filter q. */
static int
ts_rewrite(cmd_t *c, storage_coll_t *coll, const bson_t *q, const coll_t *collation, const bson_value_t *update,
           match_t *m_in, update_t *u_in, bool multi, bool upsert,
           int64_t *matched, int64_t *modified, bson_value_t *upserted_id, bool *upserted, int want,
           bson_t **doc_out, terr_t *err)
{
	ts_rewrite_t r;
	match_options_t mo = {0};
	storage_session_t *s;
	int ret = -1;

	memset(&r, 0, sizeof(r));
	r.c = c;
	r.coll = coll;
	r.multi = multi;
	r.update = update;
	r.q = q;
	r.upsert = upsert && update != NULL;
	r.want_doc = want != 0;
	r.want_new = want == 2;
	bson_init(&r.moved);
	ts_options_get(coll->options, &r.o);
	if ((s = client_session(c->client, err)) == NULL)
		goto err;
	mo.coll = collation;
	if (m_in != NULL)
		r.m = m_in;
	else
		ERR(match_compile(q, &mo, &r.m, err));
	if (update != NULL && u_in != NULL) {
		r.u = u_in;
	} else if (update != NULL) {
		update_options_t uo;
		memset(&uo, 0, sizeof(uo));
		uo.coll = collation;
		ERR(update_compile(update, &uo, &r.u, err));
	}
	pthread_mutex_lock(&ts_lock);
	ret = storage_txn_run(s, rewrite_txn, &r, write_concern_sync(c), err);
	if (ret == 0)
		open_forget(coll->uuid);
	pthread_mutex_unlock(&ts_lock);
	*matched = r.matched;
	*modified = r.update != NULL ? r.modified : r.matched;
	if (ret == 0 && r.upserted && upserted != NULL) {
		/* mongod's reply: n counts the upserted document */
		*upserted = true;
		bson_value_copy(&r.upserted_id, upserted_id);
		*matched = 1;
	}
	if (ret == 0 && doc_out != NULL) {
		*doc_out = r.doc_out;
		r.doc_out = NULL;
	}
err:
	if (r.upserted)
		bson_value_destroy(&r.upserted_id);
	if (r.doc_out != NULL)
		bson_destroy(r.doc_out);
	if (r.m != NULL && r.m != m_in)
		match_free(r.m);
	if (r.u != NULL && r.u != u_in)
		update_free(r.u);
	bson_destroy(&r.moved);
	return ret;
}

int
cmd_ts_delete(cmd_t *c, storage_coll_t *coll, const bson_t *q, const coll_t *collation, bool multi, int64_t *n,
              terr_t *err)
{
	int64_t modified;

	return ts_rewrite(c, coll, q, collation, NULL, NULL, NULL, multi, false, n, &modified, NULL, NULL, 0, NULL, err);
}

int
cmd_ts_update(cmd_t *c, storage_coll_t *coll, const bson_t *q, const coll_t *collation, const bson_value_t *u,
              match_t *m, update_t *up, bool multi, bool upsert,
              int64_t *matched, int64_t *modified, bson_value_t *upserted_id, bool *upserted, terr_t *err)
{
	return ts_rewrite(c, coll, q, collation, u, m, up, multi, upsert, matched, modified, upserted_id, upserted, 0, NULL,
	    err);
}

int
cmd_ts_find_and_modify(cmd_t *c, storage_coll_t *coll, const bson_t *q, const coll_t *collation,
                       const bson_value_t *u, bool upsert,
                       bool want_new, int64_t *n, bson_value_t *upserted_id, bool *upserted, bson_t **doc_out,
                       terr_t *err)
{
	int64_t modified;

	*doc_out = NULL;
	return ts_rewrite(c, coll, q, collation, u, NULL, NULL, false, upsert, n, &modified, upserted_id, upserted,
	    want_new ? 2 : 1, doc_out,
	    err);
}

/* ---- catalog views --------------------------------------------------------------- */

bool
cmd_ts_index_spec(const storage_coll_t *coll, const storage_index_t *ix, bson_t *out)
{
	ts_options_t o;

	if (!ts_options_get(coll->options, &o) || ix->clustered)
		return false;   /* the buckets' clustered index is not shown */
	return ts_index_spec_from_buckets(&o, ix->spec, out);
}

void
cmd_ts_ix_fields(const storage_coll_t *coll, const ts_options_t *o, uint64_t partial_ok, ts_ix_fields_t *fs)
{
	fs->n = 0;
	for (int i = 0; i < coll->nindexes; i++) {
		const storage_index_t *ix = &coll->indexes[i];
		bool mk[STORAGE_INDEX_MAX_FIELDS];
		if (ix->clustered || ix->key == NULL || ix->nfields > STORAGE_INDEX_MAX_FIELDS)
			continue;
		/* a partial index only when the query implies its filter: the
		 * buckets it lacks hold no measurement the query matches, so its
		 * multikey state speaks for every bucket that matters */
		if (ix->partial && (i >= 64 || !(partial_ok & (1ull << i))))
			continue;
		for (int k = 0; k < ix->nfields; k++)
			mk[k] = ix->multikey && (!ix->mkpaths_known || ix->mkpaths[k] != 0);
		ts_ix_fields_add(fs, o, ix->key, mk);
	}
}

int
cmd_ts_mixed_schema_check(storage_t *st, storage_coll_t *coll, const bson_t *specs, int nspecs, const char *ns,
                          terr_t *err)
{
	ts_options_t o;
	storage_session_t *s;
	storage_cursor_t *cur = NULL;
	bool any = false, found = false;
	int ret = 0;

	if (coll == NULL || !ts_options_get(coll->options, &o) || !o.mixed_schema)
		return 0;
	for (int i = 0; i < nspecs; i++) {
		if (bson_empty(&specs[i]) || !ts_index_includes_measurement(&o, &specs[i]))
			continue;
		bson_t attr = BSON_INITIALIZER;
		BSON_APPEND_UTF8(&attr, "namespace", ns);
		BSON_APPEND_DOCUMENT(&attr, "spec", &specs[i]);
		tlog('I', "INDEX", 6057502,
		    "Detected that this time-series collection may have mixed-schema data. Attempting to build the index.",
		    &attr);
		bson_destroy(&attr);
		any = true;
	}
	if (!any)
		return 0;
	/* mongod checks every bucket its build scans (MultiIndexBlock::_insert)
	 * and refuses at the commit; here the buckets are read first, in one
	 * snapshot, and nothing is built when one mixes types */
	if ((s = storage_session_pool_get(st, err)) == NULL)
		return -1;
	if (storage_txn_begin(s, err) != 0) {
		storage_session_pool_put(st, s);
		return -1;
	}
	ret = storage_scan_open(s, coll, false, &cur, err);
	while (ret == 0) {
		recid_t id;
		bson_t doc;
		int rc = storage_cursor_next(cur, &id, &doc, NULL, NULL, err);
		if (rc < 0)
			ret = -1;
		if (rc <= 0)
			break;
		if (tm_interrupt_check(err) != 0) {
			ret = -1;
			break;
		}
		if (ts_bucket_mixed_schema(&doc)) {
			bson_iter_t ctl;
			bson_t attr = BSON_INITIALIZER;
			BSON_APPEND_UTF8(&attr, "namespace", ns);
			BSON_APPEND_INT64(&attr, "recordId", id);
			if (bson_iter_init_find(&ctl, &doc, "control"))
				BSON_APPEND_VALUE(&attr, "control", bson_iter_value(&ctl));
			tlog('I', "INDEX", 6057700, "Detected mixed-schema data in time-series bucket collection", &attr);
			bson_destroy(&attr);
			found = true;
			break;
		}
	}
	if (cur != NULL)
		storage_cursor_close(cur);
	storage_txn_rollback(s);
	storage_session_pool_put(st, s);
	if (ret != 0)
		return -1;
	if (found) {
		const uint8_t *u = coll->uuid;
		return terr_set(err, TERR_CANNOT_CREATE_INDEX,
		    "Index build on collection '%s' (%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x) "
		    "failed due to the detection of mixed-schema data in the time-series buckets collection. Starting as "
		    "of v5.2, time-series measurement bucketing has been modified to ensure that newly created time-series "
		    "buckets do not contain mixed-schema data. For details, see: "
		    "https://www.mongodb.com/docs/manual/core/timeseries/timeseries-limitations/",
		    ns, u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13], u[14], u[15]);
	}
	return 0;
}

/* The user's partialFilterExpression of a bucket index (its originalSpec's,
 * a view into ix->spec); false when it has none (not partial, or built
 * raw with a filter in bucket terms). */
static bool
user_partial(const storage_index_t *ix, bson_t *out)
{
	bson_iter_t it, os;
	const uint8_t *d;
	uint32_t l;

	if (!ix->partial || !bson_iter_init_find(&it, ix->spec, "originalSpec") || !BSON_ITER_HOLDS_DOCUMENT(&it) ||
	    !bson_iter_recurse(&it, &os) || !bson_iter_find(&os, "partialFilterExpression") ||
	    !BSON_ITER_HOLDS_DOCUMENT(&os))
		return false;
	bson_iter_document(&os, &l, &d);
	return bson_init_static(out, d, l);
}

bool
cmd_ts_partial_mask(const storage_coll_t *coll, const bson_t *query, bool same_collation, uint64_t *ok)
{
	ts_options_t o;

	*ok = 0;
	if (!ts_options_get(coll->options, &o))
		return false;
	for (int i = 0; i < coll->nindexes && i < 64; i++) {
		bson_t pf;
		if (query != NULL && user_partial(&coll->indexes[i], &pf) &&
		    ts_partial_implied(&o, query, &pf, same_collation, coll->collation))
			*ok |= 1ull << i;
	}
	return true;
}

int
cmd_ts_hint(const storage_coll_t *coll, bson_value_t *hint, terr_t *err)
{
	ts_options_t o;
	bson_t key, tr = BSON_INITIALIZER;
	bson_iter_t it;

	if (!ts_options_get(coll->options, &o) || hint->value_type != BSON_TYPE_DOCUMENT ||
	    !bson_init_static(&key, hint->value.v_doc.data, hint->value.v_doc.data_len) || bson_empty(&key) ||
	    (bson_iter_init(&it, &key) && bson_iter_next(&it) && bson_iter_key(&it)[0] == '$')) {
		bson_destroy(&tr);
		return 0;   /* a name or {$natural: d}: as it is */
	}
	if (ts_index_key_to_buckets(&o, &key, &tr, NULL, err) != 0) {
		bson_destroy(&tr);
		return terr_set(err, TERR_BAD_VALUE, "hint provided does not correspond to an existing index");
	}
	bson_value_destroy(hint);
	hint->value_type = BSON_TYPE_DOCUMENT;
	hint->value.v_doc.data_len = tr.len;
	hint->value.v_doc.data = bson_malloc(tr.len);
	memcpy(hint->value.v_doc.data, bson_get_data(&tr), tr.len);
	bson_destroy(&tr);
	return 0;
}

int
cmd_ts_index_key(const storage_coll_t *coll, const bson_t *key, bson_t *out, terr_t *err)
{
	ts_options_t o;

	if (!ts_options_get(coll->options, &o))
		return terr_set(err, TERR_INTERNAL_ERROR, "not a time-series collection");
	return ts_index_key_to_buckets(&o, key, out, NULL, err);
}

/* mongod's BSONObjBuilder::appendNumber(long long): an int when it is
 * within (-2^30, 2^30), else a long. */
static void
append_number(bson_t *out, const char *key, int64_t n)
{
	if (n > -(1LL << 30) && n < (1LL << 30))
		BSON_APPEND_INT32(out, key, (int32_t)n);
	else
		BSON_APPEND_INT64(out, key, n);
}

void
cmd_ts_stats_append(const storage_coll_t *coll, int64_t bucket_count, bson_t *out)
{
	ts_options_t o;
	ts_stats_row_t r0 = {{0}}, *r = &r0;
	int64_t active = 0;
	bson_t ts;

	if (!ts_options_get(coll->options, &o))
		return;
	pthread_mutex_lock(&ts_lock);
	for (ts_stats_row_t *x = ts_stats; x != NULL; x = x->next)
		if (memcmp(x->uuid, coll->uuid, 16) == 0)
			r0 = *x;
	for (int i = 0; i < TS_HASH; i++)
		for (ts_open_t *x = ts_open_buckets[i]; x != NULL; x = x->next)
			if (memcmp(x->uuid, coll->uuid, 16) == 0)
				active += (x->has_open ? 1 : 0) + x->narch;
	pthread_mutex_unlock(&ts_lock);
	bson_append_document_begin(out, "timeseries", -1, &ts);
	BSON_APPEND_INT64(&ts, "bucketCount", bucket_count);
	/* mongod's numActiveBuckets: open and archived buckets in the catalog */
	append_number(&ts, "numActiveBuckets", active);
	for (int i = 0; i < TSC_N; i++) {
		append_number(&ts, ts_counter_names[i], r->c[i]);
		if (i == TSC_MEASUREMENTS && r->c[TSC_COMMITS] > 0)
			append_number(&ts, "avgNumMeasurementsPerCommit", r->c[TSC_MEASUREMENTS] / r->c[TSC_COMMITS]);
	}
	bson_append_document_end(out, &ts);
}

/* ---- $geoNear on measurements -------------------------------------------------------- */

int
cmd_ts_geonear_rewrite(const storage_coll_t *coll, const bson_t *user, bson_t *out, terr_t *err)
{
	ts_options_t o;

	if (!ts_options_get(coll->options, &o)) {
		bson_init(out);
		return 0;
	}
	return ts_geonear_rewrite(&o, user, out, err);
}

/* ---- createIndexes ----------------------------------------------------------------- */

int
cmd_ts_index_translate(const storage_coll_t *coll, const bson_t *spec, bson_t *out, terr_t *err)
{
	ts_options_t o;

	if (!ts_options_get(coll->options, &o))
		return terr_set(err, TERR_INTERNAL_ERROR, "not a time-series collection");
	return ts_index_spec_to_buckets(&o, spec, out, err);
}
