/*
 * ts_compress.h -- compressed time-series buckets (control.version 2, and
 * 3 as mongod writes unsorted ones): every data column one BSONColumn
 * binary (bsoncolumn.h), control.count the number of measurements.
 *
 * Tamga writes buckets compressed from their first measurement
 * (commands/cmd_timeseries.c; older v1 buckets are compressed when they
 * close) and reads both forms: ts_bucket_unpack / ts_bucket_count (ts_bucket.c) turn
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

/*
 * Buckets compressed from their first measurement (mongod 8.0+): built
 * compressed and appended to column by column with bsoncolumn_append, so
 * an append costs the new measurements and rewrites a few bytes per column.
 *
 * ts_colstates_t holds the append states of an open bucket's columns (by
 * name); the bucket catalog keeps one per open bucket.  States that do not
 * describe the stored bucket byte for byte (after a restart, a raw write)
 * are never trusted: that column is decoded and written again once.
 */
struct bsoncolumn_tail;
typedef struct ts_colstate {
	char *name;
	struct bsoncolumn_tail *tail;
} ts_colstate_t;

typedef struct ts_colstates {
	ts_colstate_t *c;
	int n, cap;
} ts_colstates_t;

/* Free every state (s stays usable, empty). */
void ts_colstates_clear(ts_colstates_t *s);
/* Bytes s holds (memory accounting). */
size_t ts_colstates_size(const ts_colstates_t *s);

/*
 * Archived buckets (mongod's archived set, per meta value): a bucket left
 * behind by a measurement older than its start, kept as its _id and start
 * so that a later measurement of its time range goes back into it, with its
 * columns' append states when it was written compressed (mongod drops its
 * builders; keeping them makes the next append to it as cheap as to an open
 * bucket -- they are trusted only when they describe the stored bytes).
 */
typedef struct ts_archived {
	bson_oid_t id;
	int64_t start_ms;
	ts_colstates_t cols;
} ts_archived_t;

/*
 * Add (id, start_ms, *cols) to *arch (n entries sorted by start ascending,
 * starts unique; capacity *cap, grown with bson_realloc).  *cols (may be
 * NULL) is moved in (left empty).  An entry with the same start is kept and
 * the new one dropped (mongod keys the set by start); when n reaches max the
 * oldest start is dropped (the new one if it is the oldest).  A dropped
 * entry's states are freed.  Returns 1 when added, 0 when dropped.
 */
int ts_archive_add(ts_archived_t **arch, int *n, int *cap, int max, const bson_oid_t *id, int64_t start_ms,
                   ts_colstates_t *cols);

/*
 * The archived bucket a measurement at t_ms can go into: the index of the
 * greatest start <= t_ms when t_ms - start < span_ms, else -1 (mongod's
 * findArchivedCandidate).
 */
int ts_archive_find(const ts_archived_t *arch, int n, int64_t t_ms, int64_t span_ms);

/* Remove entry i of *arch (n entries), its states moved to *cols (freed
 * when cols is NULL). */
void ts_archive_take(ts_archived_t *arch, int *n, int i, ts_colstates_t *cols);

/* Free every entry's states and the array; *arch NULL, *n 0. */
void ts_archive_free(ts_archived_t **arch, int *n);

/*
 * A new compressed bucket into out (initialised by the caller): _id,
 * control {version: 2 (3 when the measurements' times are not ascending),
 * min, max (the time minimum start_ms), count}, meta (as ts_bucket_build),
 * data of BSONColumns in the order fields first appear.  next (empty on
 * entry) gets the columns' append states.  Errors (2): a value no column
 * holds (CodeWScope); out is then unusable (the caller builds v1).
 */
int ts_bucket_build_compressed(const ts_options_t *o, const bson_oid_t *id, int64_t start_ms,
                               const bson_value_t *meta, const bson_t *const *ms, int n, bson_t *out,
                               ts_colstates_t *next, terr_t *err);

/*
 * Append n measurements to the compressed bucket old, into out (initialised
 * by the caller), its columns continued with bsoncolumn_append from the
 * states prev (borrowed; NULL: none), control.min/max widened, count
 * raised, version 3 once a time goes below the bucket's greatest; new
 * fields become columns missing for the earlier measurements.  dm gets the
 * byte changes (bson/damage.h: lengths, control's changes, per column its
 * length, the continued block's control byte and the re-encoded tail, new
 * columns before data's nul); next (empty on entry) the new states.  A
 * bucket not in this layout (a raw write) is decompressed, appended to and
 * compressed again, dm then compared.  Errors (2): as build, or a
 * malformed column; out and next are then unusable.
 */
struct bdamages;
int ts_bucket_append_compressed(const ts_options_t *o, const bson_t *old, const bson_t *const *ms, int n,
                                const ts_colstates_t *prev, bson_t *out, struct bdamages *dm,
                                ts_colstates_t *next, terr_t *err);

#endif
