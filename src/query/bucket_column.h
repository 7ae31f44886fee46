/*
 * bucket_column.h -- the values of one measurement field in a time-series
 * bucket, for what query/ evaluates on buckets without unpacking them: the
 * keys of a 2dsphere_bucket index (keygen_geo.c: every measurement's
 * geometry), the $_internalBucketGeoWithin predicate (match.c), and the
 * check that an indexed measurement field holds no array (keygen.c).
 *
 * A bucket's column data.<field> is an object keyed "0".."n-1" (control
 * version 1) or a BSONColumn (BinData subtype 7, versions 2 and 3).  The
 * BSONColumn decoder belongs to the time-series layer, which sits above
 * query/: it hands its decoder down once with bucket_column_set_decoder
 * (commands/engine.c at engine_open); until then a compressed column
 * answers 238.
 */
#ifndef TAMGA_QUERY_BUCKET_COLUMN_H
#define TAMGA_QUERY_BUCKET_COLUMN_H

#include <stdbool.h>
#include <stdint.h>
#include <bson/bson.h>

#include "common/error.h"

/* Decode a BSONColumn's bytes into out (an initialised document) as an
 * object keyed "0".."count-1" (missing values left out); 0, or -1 with err
 * (timeseries/bsoncolumn.h bsoncolumn_decode has this shape). */
typedef int (*bucket_column_decode_fn)(const uint8_t *data, uint32_t len, bson_t *out, int *count, terr_t *err);

/* Set the decoder (process-wide; call before buckets are read). */
void bucket_column_set_decoder(bucket_column_decode_fn fn);

/* Called with each value a measurement holds at the field's path (a
 * borrowed value, valid during the call); return false to stop. */
typedef bool (*bucket_value_fn)(void *ctx, const bson_value_t *v);

/*
 * Walk the values of measurement path field ("loc", or "a.b": column a,
 * then b inside each measurement's value, intermediate arrays traversed, a
 * trailing array kept whole) in bucket.  A bucket without the column calls
 * fn never.  Returns 0 (also when fn stopped the walk), or -1 with err: a
 * compressed column that does not decode (its decoder's error), or 238
 * without a decoder.
 */
int bucket_column_walk(const bson_t *bucket, const char *field, bucket_value_fn fn, void *ctx, terr_t *err);

/*
 * Whether a bucket's measurements may hold an array at user path field
 * ("x", "a.b"), decided from its control.min and control.max alone, as
 * mongod's timeseries::dotted_path_support::fieldContainsArrayData: along
 * the path, a bound that is an array says Yes; bounds whose BSON type
 * numbers (MinKey as -1) straddle Array's say Maybe; otherwise No.  Holds
 * for both bound formats (field by field, and whole values).  A bucket
 * without control.min/max objects, or bounds mongod asserts on (one side
 * missing, an object facing a scalar), answers Maybe.
 */
typedef enum { BUCKET_ARRAY_NO, BUCKET_ARRAY_MAYBE, BUCKET_ARRAY_YES } bucket_array_t;
bucket_array_t bucket_field_array_decision(const bson_t *bucket, const char *field);

/*
 * Whether some measurement of bucket holds an array along user path field
 * (mongod's haveArrayAlongBucketDataPath over data.<field>): each value of
 * the column data.<first component> (uncompressed, or decoded), then the
 * rest of the path through embedded documents; an array met anywhere on
 * the way or at the end sets *found.  Returns 0, or -1 with err as
 * bucket_column_walk.
 */
int bucket_column_has_array(const bson_t *bucket, const char *field, bool *found, terr_t *err);

#endif
