/*
 * ts_index.h -- secondary indexes of a time-series collection, in the two
 * vocabularies mongod 9.0 has for them (ts_index.c): what the user writes
 * (key patterns on the metaField and its subfields, the timeField and
 * measurement fields) and what the buckets are indexed by (meta.<sub>,
 * control.min/max.<field>), as mongod's
 * timeseries_index_schema_conversion_functions.cpp and
 * timeseries_commands_conversion_helper.cpp translate them; and which
 * measurement fields an index over the buckets can bound (for the bucket
 * filter, ts_bucket.c).
 *
 * The command layer (commands/cmd_index.c through cmd_timeseries.c) calls
 * these for createIndexes, listIndexes, dropIndexes and hints.
 */
#ifndef TAMGA_TIMESERIES_TS_INDEX_H
#define TAMGA_TIMESERIES_TS_INDEX_H

#include <stdbool.h>
#include <bson/bson.h>

#include "bson/value.h"
#include "common/error.h"
#include "timeseries/timeseries.h"

/*
 * A user key pattern into the buckets' key pattern, appended to out (an
 * initialised document): the timeField becomes control.min.<t>,
 * control.max.<t> (control.max first when descending), the metaField
 * "meta" and its subfields "meta.<sub>", a measurement field f
 * control.min.f, control.max.f (the other way round when descending), a
 * measurement '2dsphere' data.f: "2dsphere_bucket".  *measurement (may be
 * NULL) is set when a measurement field is in it.  On a key mongod refuses:
 * 2 BadValue with mongod's reason (an empty key, a hint's $hint/$natural, a
 * non-number on the timeField, a measurement field neither a number nor
 * '2dsphere'); out is then partly written.
 */
int ts_index_key_to_buckets(const ts_options_t *o, const bson_t *key, bson_t *out, bool *measurement, terr_t *err);

/*
 * createIndexes' one index spec (user terms) into the buckets' spec,
 * appended to out, as mongod's makeTimeseriesCreateIndexesCommand: the key
 * translated, `originalSpec` (the user's spec, with the name given or
 * derived) kept when the key has a measurement field or there is a
 * partialFilterExpression, the name derived from the user's key when
 * absent.  Refusals with mongod's codes: 72 unique, text, sparse on a
 * measurement, TTL rules; 85 partialFilterExpression with collation; 67
 * CannotCreateIndex for a key ts_index_key_to_buckets refuses ("BadValue:
 * <reason>"); a partialFilterExpression as ts_index_partial_to_buckets
 * translates or refuses it.  A TTL index (expireAfterSeconds) needs a
 * partial filter on the metaField only and a single-field key on the
 * timeField, and is keyed {control.min.<time>: dir} as mongod's
 * convertToTTLTimeField.  238 for what Tamga does not build: a 2dsphere on
 * a measurement (mongod's 2dsphere_bucket).
 */
int ts_index_spec_to_buckets(const ts_options_t *o, const bson_t *spec, bson_t *out, terr_t *err);

/*
 * A partialFilterExpression in user terms into bucket terms, appended to out
 * (an open document), as mongod's BucketSpec::pushdownPredicate with the
 * kError policy: metaField predicates renamed onto "meta" (exact), time and
 * measurement comparisons ($eq, $gt, $gte, $lt, $lte, $in, $exists: true,
 * under $and/$or) as bounds on control.min/max that keep every bucket
 * holding a matching measurement (sound for buckets mixing types in a field,
 * see ts_index.c).  *metric is set when any predicate is not on the
 * metaField (a TTL index then is refused).  Refused with mongod's 5916301
 * "Error translating non-metadata time-series predicate to operate on
 * buckets: <why>: <predicate>" (a null, object or array operand, a
 * non-date on the timeField, $in with null or a regex, other operators),
 * 238 for $geoWithin/$geoIntersects on a measurement; out then partly
 * written.
 */
int ts_index_partial_to_buckets(const ts_options_t *o, const bson_t *pf, bson_t *out, bool *metric, terr_t *err);

/*
 * Whether a query may use a partial index of the buckets, as mongod's
 * planner decides it (ts_partial.c): the query's bucket-level predicate as
 * mongod builds it (query: the user's filter, the leading $match) is a
 * subset of the index's (partial: the user's partialFilterExpression, from
 * the index's originalSpec) by mongod's expression::isSubsetOf rules.
 * same_collation: the query's collation is the collection's (else string
 * comparisons imply nothing); coll: that collation (NULL = simple).  A
 * query on a collection flagged for mixed-schema buckets implies no
 * measurement predicate (mongod's type-equality clause).
 */
bool ts_partial_implied(const ts_options_t *o, const bson_t *query, const bson_t *partial, bool same_collation,
                        const coll_t *coll);

/*
 * Whether an index over the buckets (its spec in bucket terms: key, and
 * partialFilterExpression when any) reads a measurement, as mongod's
 * doesBucketsIndexIncludeMeasurement: a key field other than
 * control.min/max.<time> and the meta (and its subfields, when there is a
 * metaField), or a partial filter naming any field but those and _id.  An
 * index build that does is refused on a collection whose buckets mix
 * types (cmd_ts_mixed_schema_check).
 */
bool ts_index_includes_measurement(const ts_options_t *o, const bson_t *bucket_spec);

/*
 * listIndexes' view of a bucket index spec (mongod's
 * createTimeseriesIndexFromBucketsIndex): its originalSpec when it has one
 * (after the bucket spec's "v"), else the bucket spec with its key mapped
 * back (control.min.<t> -> t, control.max.<t> dropped, meta -> metaField).
 * False (out untouched) when the key does not map back: mongod hides it.
 */
bool ts_index_spec_from_buckets(const ts_options_t *o, const bson_t *bucket_spec, bson_t *out);

/* The measurement fields an index over the buckets can bound, for the
 * bucket filter: per top-level measurement field f with an index whose key
 * holds control.min.f or control.max.f (not a partial one: it does not see
 * every bucket), whether any bucket ever had an array there (the index's
 * multikey paths: then the index-friendly bounds are unsound, see
 * ts_bucket.c). */
#define TS_IX_FIELDS_MAX 16
typedef struct ts_ix_fields {
	int n;
	struct {
		char name[128];
		bool min_array;    /* control.min.f held an array in some bucket (or unknown) */
		bool max_array;
		bool has_min, has_max;
	} f[TS_IX_FIELDS_MAX];
} ts_ix_fields_t;

/* Record one bucket index key pattern's measurement fields into fs
 * (min_array/max_array: the multikey state of each key field, by position;
 * NULL when unknown = every field may be an array). */
void ts_ix_fields_add(ts_ix_fields_t *fs, const ts_options_t *o, const bson_t *bucket_key, const bool *field_multikey);

/* ts_bucket_filter with the indexed fields known: a comparison on a field
 * of fs whose control.min/max never held an array is bounded in a form the
 * planner can scan an index by (a $not of a range on control.max.f for
 * $gt/$gte; on control.min.f, with the non-number max clause, for
 * $lt/$lte).  fs NULL: ts_bucket_filter. */
bool ts_bucket_filter_ix(const ts_options_t *o, const bson_t *filter, const ts_ix_fields_t *fs, bson_t *out);

/*
 * The measurement geo conjuncts of a query (top-level, or under $and):
 * {f: {$geoWithin|$within|$geoIntersects: region}} on a field that is
 * neither the time nor under the metaField becomes mongod's bucket-level
 * {$_internalBucketGeoWithin: {withinRegion: region, field: f}}, appended to
 * out as {$and: [...]} (query/match.c evaluates it on a bucket's column; a
 * 2dsphere_bucket index on data.f answers it).  Every bucket holding a
 * matching measurement matches it; the measurement predicate still runs
 * after the unpack.  Returns true when something was appended.
 */
bool ts_bucket_geo_filter(const ts_options_t *o, const bson_t *filter, bson_t *out);

#endif
