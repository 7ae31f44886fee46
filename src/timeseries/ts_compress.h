/*
 * ts_compress.h -- compressed time-series buckets (control.version 2, and
 * 3 as mongod writes unsorted ones): every data column one BSONColumn
 * binary (bsoncolumn.h), control.count the number of measurements.
 *
 * Tamga compresses a bucket when it closes (commands/cmd_timeseries.c) and
 * reads both forms: ts_bucket_unpack / ts_bucket_count (ts_bucket.c) turn
 * a compressed bucket back into the v1 form first.  Not here: the routing
 * and when a bucket closes.
 */
#ifndef TAMGA_TIMESERIES_TS_COMPRESS_H
#define TAMGA_TIMESERIES_TS_COMPRESS_H

#include <stdbool.h>
#include <bson/bson.h>

#include "common/error.h"
#include "timeseries/timeseries.h"

/* Whether bucket is compressed: control.version 2 or 3. */
bool ts_bucket_is_compressed(const bson_t *bucket);

/*
 * Compress the v1 bucket into out (initialised by the caller): its
 * measurements sorted by time (stable, as mongod sorts a bucket it
 * compresses), each data column a BSONColumn (BinData subtype 7),
 * control {version: 2, min, max, count}; _id, meta and any other field
 * kept.  Errors (2): a bucket whose time column is not dates under
 * indexes 0..n-1, a value a column cannot hold (CodeWScope); out is then
 * unusable and the caller keeps the v1 bucket.
 */
int ts_bucket_compress(const ts_options_t *o, const bson_t *bucket, bson_t *out, terr_t *err);

/*
 * Decompress a compressed bucket into out (initialised by the caller): the
 * same bucket in the v1 form (columns of "0", "1", ..., control.version 1,
 * no control.count).  Errors: 2 for a malformed column.
 */
int ts_bucket_decompress(const bson_t *bucket, bson_t *out, terr_t *err);
/* The same, decoding only the data columns keep(ctx, name) accepts (the
 * others are left out of out's data); keep NULL: all. */
int ts_bucket_decompress_some(const bson_t *bucket, bson_t *out, bool (*keep)(const void *ctx, const char *name),
                              const void *ctx, terr_t *err);

#endif
