/*
 * timeseries.h -- time-series collections' own rules, below agg/ (whose
 * $_internalUnpackBucket stage unpacks buckets with them) and above query/:
 * the create options checked and stored as mongod 9.0 shows them, the
 * bucket document (control.version 1: control.min/max, meta, data columns
 * of "0", "1", ... per measurement), unpacking a bucket into its
 * measurements, and the translation of a query on measurements into a
 * filter on buckets (metaField and timeField predicates) that keeps every
 * bucket holding a match.
 *
 * Not here: where buckets are stored (a clustered collection under the
 * time-series namespace itself, storage/), the routing of inserts to open
 * buckets and the writes (commands/cmd_timeseries.c).
 */
#ifndef TAMGA_TIMESERIES_TIMESERIES_H
#define TAMGA_TIMESERIES_TIMESERIES_H

#include <stdbool.h>
#include <stdint.h>
#include <bson/bson.h>

#include "common/error.h"

/* mongod's limits (timeseries_constants.h and its server parameters):
 * measurements per bucket, bucket bytes, and the granularities' spans. */
#define TS_BUCKET_MAX_COUNT 1000
#define TS_BUCKET_MAX_BYTES (125 * 1024)
#define TS_MAX_SPAN_LIMIT 31536000     /* a year: the largest bucketMaxSpanSeconds */

/* A time-series collection's options, parsed (strings borrowed from the
 * options document they came from). */
typedef struct ts_options {
	const char *time_field;
	const char *meta_field;      /* NULL: none */
	const char *granularity;     /* "seconds", "minutes", "hours", or NULL (custom bucketing) */
	int64_t max_span;            /* bucketMaxSpanSeconds */
	int64_t rounding;            /* bucketRoundingSeconds */
	/* Unpacking only: the top-level fields a reader uses (mongod's
	 * $_internalUnpackBucket `include`); NULL: every field.  Borrowed. */
	const char *const *include;
	int n_include;
	/* Unpacking only: emit just the measurements whose time is the bucket's
	 * greatest (the lastpoint rewrite's bucket, agg/stage_unpack.c). */
	bool only_latest;
	/* Every bucket's control.min/max is field by field (ts_minmax.h) and
	 * no bucket mixes types at a path (ts_schema.h): the collection was
	 * created with TS_OPT_BOUNDS.  Subfield bounds and $min on
	 * control.min rely on it. */
	bool field_bounds;
	/* The collection allows buckets mixing types at a path (TS_OPT_MIXED,
	 * set by collMod): field_bounds is then false, and no reader relies on
	 * one type per bucket (no $min/$max on control.min/max, no subfield
	 * bounds), as mongod's readers when mustConsiderMixedSchemaBucketsInReads. */
	bool mixed_schema;
} ts_options_t;

/*
 * The top-level options key a time-series collection created since
 * control.min/max are kept field by field carries (value 2): Tamga's own,
 * never shown (listCollections, change events) nor compared (create of an
 * existing collection); replicated with the options.  Collections created
 * before it have whole-value bounds in some buckets, so their readers use
 * only the bounds sound for both forms.
 */
#define TS_OPT_BOUNDS "tamgaBucketBounds"

/*
 * The top-level options key collMod's timeseriesBucketsMayHaveMixedSchemaData:
 * true leaves (mongod's catalog entry flag; never false once true).  Raw
 * writes (rawData, or any path writing a bucket) of a bucket mixing types
 * (ts_schema.h ts_bucket_mixed_schema) answer 408 without it.  Replicated as
 * mongod's collMod entry {collMod, timeseriesBucketsMayHaveMixedSchemaData:
 * true}; listCollections shows it as mongod 8.0+ keeps it, in
 * storageEngine.wiredTiger.configString "app_metadata=(...=true)", which a
 * create (an initial sync's copy) given that string also reads as the flag.
 */
#define TS_OPT_MIXED "timeseriesBucketsMayHaveMixedSchemaData"
#define TS_MIXED_CONFIG_STRING "app_metadata=(timeseriesBucketsMayHaveMixedSchemaData=true)"
/* Whether collection options allow mixed-schema buckets (either form). */
bool ts_options_mixed_schema(const bson_t *options);

/* Whether a and b (collection options) are equal but for TS_OPT_BOUNDS and
 * TS_OPT_MIXED. */
bool ts_options_equal_public(const bson_t *a, const bson_t *b);
/* Append options a (NULL: none) to out without TS_OPT_BOUNDS and
 * TS_OPT_MIXED. */
void ts_options_copy_public(const bson_t *a, bson_t *out);

/* Whether unpacking with o emits the top-level field name (o->include). */
bool ts_unpack_wants(const ts_options_t *o, const char *name);

/* Whether path is o's metaField or one of its subfields: the rest of path
 * after the metaField's name ("" or ".<sub>", a view into path), or NULL
 * (no metaField, or another field). */
const char *ts_meta_suffix(const ts_options_t *o, const char *path);

/* Whether path is o's metaField or one of its subfields and its path in a
 * bucket ("meta" + the rest) fits in buf of size bytes: true and buf
 * written, else false (a path too long for buf reads as not the meta's:
 * the caller then treats it as a measurement's, slower, never wrong). */
bool ts_meta_bucket_path(const ts_options_t *o, const char *path, char *buf, size_t size);

/*
 * Check create's timeseries document (and what may go with it) as mongod
 * does and append the normalized {timeField, metaField, granularity,
 * bucketRoundingSeconds, bucketMaxSpanSeconds} to out under "timeseries"
 * (granularity "seconds" and its span when nothing was given).  Errors:
 * 14 TypeMismatch (not a document, a field of the wrong type), 40415 an
 * unknown field, 40414 timeField missing, 2 BadValue a NUL inside a name or
 * an unknown granularity, 72 InvalidOptions: a dotted timeField/metaField,
 * metaField equal to timeField or "_id", bucketing values that do not fit
 * the granularity or each other.
 */
int ts_options_check(const bson_t *ts_doc_holder, bson_t *out, terr_t *err);

/* Parse the stored options (the collection's options document holding
 * "timeseries"); false when it holds none.  o borrows from options. */
bool ts_options_get(const bson_t *options, ts_options_t *o);

/* A granularity's bucketMaxSpanSeconds and bucketRoundingSeconds
 * (3600/60, 86400/3600, 2592000/86400); false for an unknown name. */
bool ts_granularity_spans(const char *granularity, int64_t *max_span, int64_t *rounding);

/*
 * Build a bucket document (control.version 1) into out (initialised by
 * the caller): _id as given, control.min/max over the measurements (the
 * time minimum rounded down to the bucket's start, start_ms), meta (when
 * the collection has a metaField and meta is not NULL), and data columns
 * with measurement i's value of every field at key "i".  measurements are
 * n documents, each with its time field a date; the meta field is left out
 * of the columns.
 */
void ts_bucket_build(const ts_options_t *o, const bson_oid_t *id, int64_t start_ms, const bson_value_t *meta,
                     const bson_t *const *measurements, int n, bson_t *out);

/*
 * Append n measurements to the bucket old, into out (initialised by the
 * caller): old's columns and values kept byte for byte, the new values at
 * keys count, count + 1, ... (new fields as new columns), control.min/max
 * widened; _id, meta and the bucket's start stay.  The caller routed the
 * measurements here (same meta, inside the bucket's time window).
 */
void ts_bucket_append(const ts_options_t *o, const bson_t *old, const bson_t *const *ms, int n, bson_t *out);

/*
 * ts_bucket_append (out gets the same bytes) that also gives the byte
 * changes from old to out in dm (bson/damage.h), for a write of the changed
 * bytes only (storage_doc_update_damages): the bucket's and data's length
 * prefixes, control.min/max's changes, and per column its length prefix and
 * the appended elements (new columns at the end of data).  Built from where
 * it writes, without comparing the buckets; a bucket not in the layout this
 * file writes (_id, control {version, min, max}, meta, data of columns, in
 * that order) is appended to by ts_bucket_append and compared instead.
 * Returns false when no damages could be had (then write out whole).
 */
struct bdamages;
bool ts_bucket_append_damages(const ts_options_t *o, const bson_t *old, const bson_t *const *ms, int n, bson_t *out,
                              struct bdamages *dm);

/*
 * Unpack a bucket: call fn(ctx, measurement) for each measurement in index
 * order, measurement built into scratch (reinitialised for each; valid
 * during the call) as mongod unpacks it: the timeField, the metaField
 * holding the bucket's meta, then the other columns' fields in column
 * order.  fn returns 0 to go on, non-zero to
 * stop (returned).  A bucket that is not one (no data document) unpacks to
 * nothing; a compressed one (control.version 2/3) unpacks as its v1 form
 * (a malformed BSONColumn: 2).  With o->include set, only those fields
 * are emitted (the time column still drives the walk; a compressed bucket
 * decodes only the included columns and the time column).
 */
typedef int (*ts_measurement_fn)(void *ctx, const bson_t *measurement, terr_t *err);
int ts_bucket_unpack(const ts_options_t *o, const bson_t *bucket, bson_t *scratch, ts_measurement_fn fn,
                     void *ctx, terr_t *err);
/* The measurement count of a bucket (entries of its time column;
 * control.count of a compressed one). */
int ts_bucket_count(const ts_options_t *o, const bson_t *bucket);

/*
 * The part of filter (a query on measurements) that a bucket filter can
 * decide, appended to out as a query on buckets: predicates on metaField
 * (and its subfields) become the same predicates on "meta", and a
 * timeField compared with a date ($eq, $gt, $gte, $lt, $lte) becomes
 * bounds on control.min/control.max of the time field, and a top-level
 * measurement field compared with a number ($gt, $gte, $lt, $lte) a bound
 * that only holds when the bucket's min and max of it are both numbers.  The result keeps
 * every bucket that holds a matching measurement (the measurement filter
 * still runs after unpacking).  Returns true when something was appended.
 */
bool ts_bucket_filter(const ts_options_t *o, const bson_t *filter, bson_t *out);

/*
 * A $match right after the unpack split as mongod splits it (its
 * createPredicatesOnBucketLevelField): the conjuncts on the metaField are
 * left out (the bucket filter decides them exactly); the rest is the
 * unpack stage's `eventFilter`, appended to event (one conjunct as itself,
 * several under $and; nothing when none is left).  When every one of them
 * is a comparison of the timeField with dates, their tight form -- a
 * bucket-level predicate that holds only when every measurement of the
 * bucket matches ($gt/$gte on control.min.<time>, $lt/$lte on
 * control.max.<time>, $eq on both) -- is appended to whole: the stage's
 * `wholeBucketFilter`.  Returns false (nothing appended) when the filter
 * holds an operator the stage does not take in ($expr, $where, $text,
 * $near...): then the $match stays a stage of its own.
 */
bool ts_event_split(const ts_options_t *o, const bson_t *filter, bson_t *event, bson_t *whole);

/* The explain / stage spec of $_internalUnpackBucket for o, into out. */
void ts_unpack_spec(const ts_options_t *o, bson_t *out);

/*
 * A pipeline (user: its stages, a BSON array document) reading the
 * measurements of the time-series collection o describes, led by $geoNear,
 * rewritten as mongod rewrites it (ts_geonear.c), into out (initialised
 * here; the caller destroys it whatever the return).
 *   1: a key on a measurement (DocumentSourceGeoNear::splitForTimeseries):
 *      out is the stages to run after the unpack: a $match {key: {$geoWithin:
 *      {$centerSphere | $center: ...}}} for maxDistance (and the inside-out
 *      one for minDistance), {$_internalGeoNearDistance: ...}, exact $match
 *      bounds on distanceField, {$sort: {distanceField: 1}}, then the user's
 *      other stages.  No index is needed (mongod answers with or without a
 *      2dsphere index on the measurement).
 *   2: a key on the metaField: out is the whole pipeline to run on the
 *      buckets: [$geoNear keyed on meta.<sub>, $_internalUnpackBucket (with
 *      computedMetaProjFields for a top-level distanceField/includeLocs),
 *      the user's later stages]; that $geoNear needs the buckets' 2dsphere
 *      (or 2d) index on meta.<sub> as any $geoNear needs one.
 *   0: not rewritten (not led by $geoNear, or an argument the $geoNear
 *      stage's own parse refuses, which then answers).
 *  -1: err: 5892921 no key, 1938439 a non-empty query, 5860206 no
 *      distanceField, 5860208 includeLocs (a measurement key), 2 / 14 a
 *      bad min/maxDistance or distanceMultiplier, the point's parse errors;
 *      238 a metaField key whose distanceField/includeLocs is dotted outside
 *      the metaField or names a bucket's own field (_id, control, meta, data).
 */
int ts_geonear_rewrite(const ts_options_t *o, const bson_t *user, bson_t *out, terr_t *err);


#endif
