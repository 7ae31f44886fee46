/*
 * ts_schema.h -- the schema of an open time-series bucket, as mongod's
 * bucket catalog keeps it (timeseries::bucket_catalog::Schema, flat_bson):
 * for every path its measurements have held, the canonical BSON type of its
 * values (bv_type_rank), objects through their fields and arrays through
 * their positions.  A measurement whose value at a known path has another
 * canonical type (a number where strings were, an object where a scalar
 * was, an array element of another type at the same position) does not fit:
 * mongod closes the bucket (RolloverReason::kSchemaChange,
 * numBucketsClosedDueToSchemaChange).  New paths always fit; missing ones
 * change nothing.  So a bucket written by Tamga's routing never mixes types
 * at a path.  Pure bookkeeping; the routing is in commands/cmd_timeseries.c.
 */
#ifndef TAMGA_TIMESERIES_TS_SCHEMA_H
#define TAMGA_TIMESERIES_TS_SCHEMA_H

#include <stdbool.h>
#include <stddef.h>
#include <bson/bson.h>

typedef struct ts_schema ts_schema_t;

/* A new empty schema (every measurement fits it).  Freed with ts_schema_free. */
ts_schema_t *ts_schema_new(void);
/* Free s (NULL is fine). */
void ts_schema_free(ts_schema_t *s);
/* A deep copy of s (NULL when s is NULL). */
ts_schema_t *ts_schema_copy(const ts_schema_t *s);
/* Bytes s holds (memory accounting). */
size_t ts_schema_size(const ts_schema_t *s);

/* Whether measurement m fits s: every path both know has one canonical
 * type.  skip (may be NULL): a top-level field left out (the metaField, as
 * mongod's Schema::update omits it).  s is not changed. */
bool ts_schema_fits(const ts_schema_t *s, const bson_t *m, const char *skip);

/* 0: m fits s and adds no path; 1: it fits and adds paths; -1: it does
 * not fit.  s is not changed. */
int ts_schema_check(const ts_schema_t *s, const bson_t *m, const char *skip);

/* Add m's paths to s.  When m does not fit, false, and s holds what was
 * added before the first mismatch (the caller closes the bucket, as mongod
 * does with a schema its failed update left half-changed). */
bool ts_schema_add(ts_schema_t *s, const bson_t *m, const char *skip);

/*
 * The schema of a stored bucket, from its control.min and control.max (as
 * mongod's Schema::parseFromBSON when it reopens a bucket): both added in
 * turn.  NULL when they disagree (a bucket mixing types: written before
 * Tamga closed buckets on a schema change, or raw) or bucket has no
 * control.min/max documents -- such a bucket is not reopened (mongod's
 * numBucketReopeningsFailedDueToSchemaGeneration).
 */
ts_schema_t *ts_schema_from_bucket(const bson_t *bucket);

/*
 * Whether a bucket document mixes types: a field of its control.min and the
 * same field of its control.max have another canonical type (bv_type_rank),
 * objects through their fields and arrays through their positions -- mongod's
 * doesTimeseriesBucketsDocContainMixedSchemaData (doesMinMaxHaveMixedSchemaData).
 * A bucket without control.min/max documents does not (as mongod reads it).
 * A raw write of such a bucket is refused with 408 unless the collection
 * allows mixed schema (timeseries.h TS_OPT_MIXED).
 */
bool ts_bucket_mixed_schema(const bson_t *bucket);

#endif
