/*
 * cmd_timeseries.h -- time-series collections in the command layer
 * (cmd_timeseries.c): create's checks and default index, inserts routed
 * into buckets, the read pipeline over buckets, deletes and updates with
 * any filter, and the catalog views (listIndexes, collStats).
 */
#ifndef TAMGA_COMMANDS_CMD_TIMESERIES_H
#define TAMGA_COMMANDS_CMD_TIMESERIES_H

#include <stdbool.h>
#include <bson/bson.h>

#include "commands/commands.h"
#include "query/match.h"
#include "storage/storage.h"
#include "timeseries/ts_index.h"
#include "update/update.h"

/* create with timeseries: *is_ts, and the normalized {timeseries: {...}}
 * appended to ts_opts (initialised by the caller); 72 for options a
 * time-series collection refuses, the option checks of
 * ts_options_check, 14/72 for a bad expireAfterSeconds. */
int cmd_ts_check_create(cmd_t *c, bson_t *ts_opts, bool *is_ts, terr_t *err);
/* After a time-series create: the default {meta, time} bucket index when
 * the collection has a metaField. */
int cmd_ts_after_create(cmd_t *c, const char *name, terr_t *err);
/* coll was dropped: the bucket catalog forgets its open buckets and
 * counters (no-op for other collections). */
void cmd_ts_forget(const storage_coll_t *coll);

/* The bucket catalog as a restart leaves it: every collection's open and
 * archived buckets forgotten (the next measurements reopen stored buckets
 * by query); the counters are kept.  For tests of what follows a restart
 * without one. */
void cmd_ts_catalog_forget_buckets(void);
/* True for a time-series collection (options.timeseries). */
bool cmd_ts_is(const storage_coll_t *coll);
/* The command's rawData: true (reads and writes the buckets themselves). */
bool cmd_ts_raw(const cmd_t *c);

/* insert into a time-series collection: stmts is the documents array;
 * writes the reply ({n, writeErrors}); measurements without a date in the
 * timeField fail alone with 2 (mongod's message).  Returns 0, or -1 when
 * the command itself fails. */
int cmd_ts_insert(cmd_t *c, storage_coll_t *coll, const bson_t *stmts, bool ordered, terr_t *err);
/* One measurement (doc, borrowed) into coll's buckets, in its own
 * transaction (bulkWrite's insert op): 0, or -1 with err (2 without a date
 * in the timeField, 10334 past 16 MiB, a storage error). */
int cmd_ts_insert_one(cmd_t *c, storage_coll_t *coll, const bson_t *doc, terr_t *err);

/* The pipeline a read of coll runs over its buckets: a bucket-level $match
 * (from user's leading $match), $_internalUnpackBucket (the rest of that
 * $match as its eventFilter), then user's stages (a pipeline array
 * document); or, for a $group mongod answers from the buckets' control
 * fields, that bucket-level $group instead of the unpack and the user's
 * $group (only under the simple collation: simple_collation says the
 * command names none).  out is initialised here. */
int cmd_ts_read_pipeline(const storage_coll_t *coll, const bson_t *user, bool simple_collation, bson_t *out);

/* ts_geonear_rewrite (timeseries.h: return values, out and the refusals)
 * on coll's options; 0 with out initialised when coll is no time-series
 * collection.  The aggregate command's; $lookup / $unionWith sub-pipelines
 * reading coll take the same rewrite in agg/stage_lookup.c. */
int cmd_ts_geonear_rewrite(const storage_coll_t *coll, const bson_t *user, bson_t *out, terr_t *err);

/* One delete statement (any filter q; multi or the first match) and one
 * update statement (u: an update document or pipeline), on measurements:
 * affected buckets rewritten in one transaction, updated measurements
 * routed again.  collation (NULL: simple) is the statement's, for the
 * filter and the update; cmd_ts_update takes the statement's filter and
 * update already compiled (m, up: borrowed, with its let and arrayFilters)
 * when not NULL.  *n / *matched / *modified as the reply counts them.  An
 * update with upsert that matched nothing inserts the upsert document as a
 * measurement in the same transaction: *upserted set, *upserted_id a copy
 * of its _id (the caller bson_value_destroy()s it), *matched 1. */
int cmd_ts_delete(cmd_t *c, storage_coll_t *coll, const bson_t *q, const coll_t *collation, bool multi, int64_t *n,
                  terr_t *err);
int cmd_ts_update(cmd_t *c, storage_coll_t *coll, const bson_t *q, const coll_t *collation, const bson_value_t *u,
                  match_t *m, update_t *up, bool multi, bool upsert,
                  int64_t *matched, int64_t *modified, bson_value_t *upserted_id, bool *upserted, terr_t *err);
/* findAndModify without a sort on measurements: u NULL removes the first
 * measurement matching q, else updates it (upsert as cmd_ts_update), in one
 * transaction.  *doc_out (owned by the caller, NULL when nothing matched
 * or was upserted-and-not-new) is the measurement before the change, or
 * after it when want_new; *n is 1 or 0. */
int cmd_ts_find_and_modify(cmd_t *c, storage_coll_t *coll, const bson_t *q, const coll_t *collation,
                           const bson_value_t *u, bool upsert,
                           bool want_new, int64_t *n, bson_value_t *upserted_id, bool *upserted, bson_t **doc_out,
                           terr_t *err);

/* listIndexes without rawData: ix as the user sees it (its originalSpec,
 * or its key mapped back to metaField / timeField: ts_index.h) appended to
 * out; false when it is not shown (the clustered index, a key that does
 * not map back) or coll is no time-series collection. */
bool cmd_ts_index_spec(const storage_coll_t *coll, const storage_index_t *ix, bson_t *out);
/* createIndexes on a time-series collection: spec in bucket terms into out
 * (ts_index_spec_to_buckets: mongod's translation, refusals and codes). */
int cmd_ts_index_translate(const storage_coll_t *coll, const bson_t *spec, bson_t *out, terr_t *err);
/* A user key pattern in bucket terms (dropIndexes by key): 2 with mongod's
 * reason when it does not translate. */
int cmd_ts_index_key(const storage_coll_t *coll, const bson_t *key, bson_t *out, terr_t *err);
/* A read's hint on a time-series collection: a key pattern (user terms)
 * replaced in place by its bucket key pattern (hint owned by the caller,
 * rewritten as an owned value); names and {$natural} stay.  2 "hint
 * provided does not correspond to an existing index" for a key that does
 * not translate. */
int cmd_ts_hint(const storage_coll_t *coll, bson_value_t *hint, terr_t *err);
/* The measurement fields coll's bucket indexes can bound, and whether
 * their control.min/max ever held an array (ts_ix_fields_add): the
 * indexes that are not partial, and the partial ones whose bit is set in
 * partial_ok (cmd_ts_partial_mask). */
void cmd_ts_ix_fields(const storage_coll_t *coll, const ts_options_t *o, uint64_t partial_ok, ts_ix_fields_t *fs);
/* Which partial indexes of the time-series collection coll a read whose
 * leading $match is query (user terms; NULL: none) may use, as mongod's
 * planner decides (ts_partial_implied on each index's user
 * partialFilterExpression): bit i for coll->indexes[i] into *ok.  An index
 * built raw (a filter in bucket terms, no originalSpec) is never taken.
 * same_collation: the read's collation is the collection's.  False (and
 * *ok 0) when coll is no time-series collection. */
/*
 * Before createIndexes builds specs (bucket terms; empty ones skipped) on
 * the time-series collection coll (ns its name): when the collection is
 * flagged for mixed-schema buckets (timeseriesBucketsMayHaveMixedSchemaData)
 * and some spec reads a measurement (ts_index_includes_measurement), every
 * bucket is read (honouring the operation's maxTimeMS and killOp: 50 /
 * 11601) and one mixing types refuses the build with mongod's 67
 * CannotCreateIndex "Index build on collection '<ns>' (<uuid>) failed due
 * to the detection of mixed-schema data ..." (logs 6057502, 6057700 as
 * mongod).  0 otherwise, also for any other collection.
 */
int cmd_ts_mixed_schema_check(storage_t *st, storage_coll_t *coll, const bson_t *specs, int nspecs, const char *ns,
                              terr_t *err);
bool cmd_ts_partial_mask(const storage_coll_t *coll, const bson_t *query, bool same_collation, uint64_t *ok);
/* collStats' timeseries section (bucketCount and the bucket catalog's
 * counters). */
void cmd_ts_stats_append(const storage_coll_t *coll, int64_t bucket_count, bson_t *out);

#endif
