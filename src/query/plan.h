/*
 * plan.h -- executing a find: choose an access path, then filter, sort,
 * skip, limit and project, one document at a time.
 *
 * A plan_exec_t is the runtime of one query.  It is built from a parsed
 * request (plan_request_t), owns everything it needs (a reference on the
 * collection descriptor, the compiled filter, sort and projection), and can
 * be suspended between getMore batches (plan_exec_save/restore) without
 * holding storage resources.  Access paths: the _id point lookup
 * (EXPRESS), an index scan with bounds then a fetch (IXSCAN + FETCH, the
 * candidates from query/planner.h raced by trial runs as mongod's
 * multi-planner does), and the collection scan (COLLSCAN, forward or
 * $natural: -1).  Whatever the access path, every fetched document is
 * checked against the whole filter, and an index scan never returns a
 * document twice.
 *
 * This module does not parse commands; commands/ builds the request.
 */
#ifndef TAMGA_QUERY_PLAN_H
#define TAMGA_QUERY_PLAN_H

#include <stdbool.h>
#include <stdint.h>
#include <bson/bson.h>

#include "common/doc_sink.h"
#include "common/error.h"
#include "query/match.h"
#include "storage/storage.h"

typedef struct plan_exec plan_exec_t;

typedef struct plan_request {
	storage_coll_t *coll;        /* stolen reference (released by the exec, even on error); NULL = no such collection: no results */
	match_t *match;              /* stolen (may be NULL = match everything) */
	/* the filter as the command gave it (borrowed during plan_exec_new; NULL:
	 * the compiled match's form): only the QUERY debug line prints it */
	const bson_t *filter;
	const bson_t *sort;          /* borrowed, copied; NULL or {} = none */
	const bson_t *projection;    /* borrowed, copied; NULL or {} = none */
	int64_t skip;                /* >= 0 */
	int64_t limit;               /* 0 = none; the exec stops after this many */
	bool natural_backward;       /* sort {$natural: -1} */
	bool allow_disk_use;
	/* Memory a blocking sort holds before it spills (allow_disk_use) or
	 * fails with 292: internalQueryMaxBlockingSortMemoryUsageBytes;
	 * 0 = SORT_DEFAULT_MEMORY_LIMIT (100 MB). */
	uint64_t sort_memory_limit;
	const bson_t *let;           /* borrowed during plan_exec_new */
	/* hint: a name string or a key pattern / {$natural: d} document;
	 * borrowed during plan_exec_new; NULL = none.  A hint naming no
	 * index fails plan_exec_new with 2 BadValue. */
	const bson_value_t *hint;
	/* find's min/max: index keys bounding the scan of the hinted index
	 * ([min, max) in its key order; see planner_plan_minmax for the
	 * errors).  Borrowed during plan_exec_new; NULL or {} = none. */
	const bson_t *min;
	const bson_t *max;
	/* Where a sort spills with allow_disk_use ("<dbpath>/_tmp", must
	 * exist); borrowed during plan_exec_new (copied).  NULL: a sort past
	 * 100 MB fails with 292 without allowDiskUse, with 238 with it. */
	const char *spill_dir;
	/* count: the results are only counted.  When the chosen index scan's
	 * bounds answer the whole filter with one interval, the plan is
	 * mongod's COUNT_SCAN: keys are counted without fetching documents
	 * (next's *doc is then an empty document); the _id point lookup and
	 * the express path are not used; explain shows no LIMIT/SKIP stages
	 * (the COUNT stage applies them). */
	bool count;
	/* distinct: the key whose distinct values the caller collects
	 * (borrowed during plan_exec_new).  When a non-multikey index holds
	 * it after equality-bounded fields and its bounds answer the whole
	 * filter (or there is no filter and it leads an index), the plan is
	 * FETCH + DISTINCT_SCAN: one document per distinct value of it. */
	const char *distinct_key;
	/* When true, coll and match are borrowed instead of stolen: they must
	 * outlive the exec (a write re-running its scan inside a retried
	 * transaction). */
	bool borrow;
	/* The query's collation (bson/collation.h; NULL = simple): the sort
	 * orders strings by it and the planner only uses indexes it agrees
	 * with (see planner_plan).  The match_t must have been compiled with
	 * the same one. */
	const coll_t *collation;
	/* The whole filter is {_id: *id_point} (plan_filter_id_point said so):
	 * the _id point lookup (EXPRESS_IXSCAN) without a compiled filter, the
	 * document it finds checked with the _id comparison (bv_equal) instead.
	 * match must be NULL, and sort, hint, min/max and count absent; any
	 * collation (the values it takes hold no string).  Borrowed during
	 * plan_exec_new (copied). */
	const bson_value_t *id_point;
	/* With a $text filter: append each result's text score as a trailing
	 * field SORT_TEXT_SCORE_FIELD ("$textScore", query/sort.h), after the
	 * projection, for aggregation stages reading {$meta: "textScore"}
	 * (agg/ strips it from what leaves the pipeline). */
	bool keep_text_score;
	/* A tailable cursor (find's tailable on a capped collection): a
	 * forward collection scan whatever the filter and hint, and reaching
	 * the end does not close it: plan_exec_next returns 0 while nothing
	 * new is there, then the documents inserted since (see
	 * storage_cursor_set_tailable; 136 CappedPositionLost when capping
	 * removed its place).  sort must be absent or {$natural: 1}. */
	bool tailable;
	/* An index filter for the query's shape (planCacheSetFilter): only
	 * the indexes at the positions set in index_filter (bit i:
	 * coll->indexes[i]) are planned with, competing as usual; hint must
	 * then be NULL or {$natural: d} (mongod ignores an index hint). */
	bool has_index_filter;
	uint64_t index_filter;
	/* The partial indexes the query may use, decided by the caller (a
	 * time-series read: planner_plan_partial); bit i: coll->indexes[i]. */
	bool has_partial_ok;
	uint64_t partial_ok;
	/* find's $_resumeAfter (issue 22): a collection scan (the caller makes
	 * sure: hint {$natural: 1}) starting past RecordId resume_after; on a
	 * clustered collection past the clustered key resume_key (resume_key_len
	 * bytes, borrowed until plan_exec_new returns; mongod's BinData
	 * RecordId) instead */
	bool has_resume_after;
	int64_t resume_after;
	const uint8_t *resume_key;
	size_t resume_key_len;
} plan_request_t;

/* Is filter exactly {_id: v}, for a v whose equality the _id index answers
 * alone: a number, ObjectId, bool, date, timestamp or binData (not a string,
 * whose equality depends on a collation; not a document, array, regex or
 * null, which the general match handles)?  Then *v is a view into filter. */
bool plan_filter_id_point(const bson_t *filter, bson_value_t *v);

/*
 * mongod's express path (EXPRESS_IXSCAN) for a find by _id alone: one
 * lookup in coll's _id index and record table, with no plan_exec_t built.
 * id must be a value plan_filter_id_point accepted (its index key does not
 * depend on a collation); coll is borrowed.  Counts the _id index's use
 * ($indexStats) and reports one key, the document examined and the plan
 * summary "EXPRESS_IXSCAN { _id: 1 }" to the running operation, as the
 * plan_exec_t of the same request does.  Returns 1 with *doc (a view valid
 * until the next storage call on s), 0 when no document has that _id, 2
 * when coll has no _id index (nothing done: the caller plans it), -1 with
 * err.
 */
int plan_express_id(storage_session_t *s, storage_coll_t *coll, const bson_value_t *id, bson_t *doc,
                    terr_t *err);

/* Build the runtime.  Errors come from compiling sort/projection (MongoDB's
 * codes).  On success *out is owned by the caller (plan_exec_free). */
int plan_exec_new(const plan_request_t *req, plan_exec_t **out, terr_t *err);

/* Next result: 1 with *doc (a view valid until the next call on this exec),
 * 0 at the end, -1 with err (e.g. 50 MaxTimeMSExpired, 292 sort memory). */
int plan_exec_next(plan_exec_t *x, storage_session_t *s, bson_t *doc, terr_t *err);

/*
 * The results plan_exec_next would give, handed to sink->take one after
 * another in one call (common/doc_sink.h), until the sink answers
 * DOC_SINK_FULL or DOC_SINK_FAILED (returned as they are, err untouched
 * after the sink's failure), the plan ends (0), or the plan fails (-1 with
 * err).  A call after DOC_SINK_FULL goes on with the next result.  Each
 * document lent to take is valid only during the call: a plain collection
 * scan lends WiredTiger's own bytes (storage_cursor_next_view), so the
 * sink must copy, and must not touch the session.  Counts, skip, limit,
 * filter, projection, the interruption check per examined document and
 * the scan's order are plan_exec_next's; plans other than a collection
 * scan (sorts, index scans, RecordIds or keys wanted) run through
 * plan_exec_next inside.  plan_exec_last_recid/_key/_cluster_key know
 * nothing of results given this way.
 */
int plan_exec_next_batch(plan_exec_t *x, storage_session_t *s, doc_sink_t *sink, terr_t *err);

/* Next matching stored document with its RecordId, ignoring sort, skip,
 * limit and projection: what delete and update iterate over.  recid may be
 * NULL when the caller does not need it (a collection scan then skips
 * reading it). */
int plan_exec_next_record(plan_exec_t *x, storage_session_t *s, recid_t *recid, bson_t *doc,
                          terr_t *err);

/* Suspend / resume between batches (no storage resources held while saved).
 * restore may be on another session. */
int plan_exec_save(plan_exec_t *x, terr_t *err);
int plan_exec_restore(plan_exec_t *x, storage_session_t *s, terr_t *err);

/*
 * Choose among the planner's candidate plans by trial runs (mongod's
 * multi-planner; see plan.c) now rather than on the first next: explain
 * with queryPlanner verbosity calls it so that winningPlan is the plan a
 * run would use.  Nothing to do (0) with one candidate, a hint, min/max,
 * or after the choice.  The winner then starts from the beginning.
 * Returns 0, or -1 with err (50 MaxTimeMSExpired).
 */
int plan_exec_choose(plan_exec_t *x, storage_session_t *s, terr_t *err);

/* explain's executionStats.allPlansExecution: one entry per candidate raced
 * ({nReturned, executionTimeMillisEstimate, totalKeysExamined,
 * totalDocsExamined, executionStages} over its trial period), appended to
 * the array arr; nothing when there was no race. */
void plan_exec_all_plans_append(const plan_exec_t *x, bson_t *arr);

/* maxTimeMS and killOp: every document and key the plan examines goes
 * through tm_interrupt_check (common/opctx.h), the running operation's. */

/* Counters for explain and serverStatus. */
typedef struct plan_stats {
	int64_t docs_examined;
	int64_t keys_examined;
	int64_t returned;
	const char *stage;           /* "EXPRESS_IXSCAN", "COLLSCAN", ... */
	int64_t dups_dropped;        /* index entries of already returned documents */
	int64_t keys_filtered;       /* index entries the IXSCAN filter (key_mask) turned down */
	int64_t access_returned;     /* documents the access path passed up (after the filter) */
	int64_t time_us;             /* time spent inside next/next_record */
} plan_stats_t;
const plan_stats_t *plan_exec_stats(const plan_exec_t *x);

/*
 * Explain: append the plan as mongod's explain shows it, as the fields of
 * the stage document under construction in out ({stage: "FETCH",
 * inputStage: {stage: "IXSCAN", keyPattern, indexName, isMultiKey, ...}}).
 * With exec_stats, the executionStages form with nReturned, works,
 * advanced, keysExamined, docsExamined per stage (call after running).
 */
void plan_exec_explain_append(const plan_exec_t *x, bool exec_stats, bson_t *out);

/* queryPlanner.rejectedPlans: the other candidate plans the planner
 * considered, each as a stage document appended to the array arr. */
void plan_exec_rejected_append(const plan_exec_t *x, bson_t *arr);

/* How many plans chose the index ix of coll since the process started:
 * $indexStats' accesses.ops.  Counted per collection UUID and index table,
 * so a rebuilt index (a new table) starts at 0.  Lock-free. */
int64_t plan_index_ops(const storage_coll_t *coll, const storage_index_t *ix);

/* find's showRecordId (issue 22): after plan_exec_want_recid (before the
 * first plan_exec_next), true with *out the RecordId of the result
 * plan_exec_next returned last, through a blocking sort too (the sorted
 * documents carry it); false before any result. */
void plan_exec_want_recid(plan_exec_t *x);
bool plan_exec_last_recid(const plan_exec_t *x, recid_t *out);
/* After plan_exec_want_recid, on a collection scan of a clustered
 * collection: the clustered key (the _id's KeyString: mongod's RecordId
 * there, shown as BinData) of the result plan_exec_next returned last,
 * valid until the next call; false otherwise. */
bool plan_exec_last_cluster_key(const plan_exec_t *x, const uint8_t **key, size_t *len);

/* find's returnKey (issue 22): after plan_exec_want_key (before the first
 * plan_exec_next), true with *out a view of the index entry the result
 * plan_exec_next returned last came through ({field: value} in key-pattern
 * order; for a multikey field the element the scan met, as mongod), valid
 * until the next call; through a blocking sort too.  False for a result
 * no index entry gave (a collection scan, text, geo, the _id lookup). */
void plan_exec_want_key(plan_exec_t *x);
bool plan_exec_last_key(const plan_exec_t *x, bson_t *out);

/* Whether plan_exec_last_key can answer for this plan: true for index
 * scans (any index kind: a hashed, 2dsphere, 2d or text index scanned by
 * bounds gives its stored entry), collection scans and the _id lookup
 * (no key), $text plans (the first term's key that met each document),
 * geo plans (a document with several keys fails in plan_exec_next);
 * false for an unhinted collection scan of a $geoWithin / $geoIntersects
 * on a geo-indexed field (mongod scans that index, its key unknown here). */
bool plan_exec_keys_known(const plan_exec_t *x);

/* The namespace's index the plan scans ("a_1"), or NULL (COLLSCAN/EXPRESS). */
const char *plan_exec_index_name(const plan_exec_t *x);

/* A near plan ($near/$nearSphere in the filter): the distance of the
 * document plan_exec_next returned last, in the query's units, and the
 * location it was measured to (*loc a view into that document, valid as
 * it; *has_loc false when none).  False when x is not a near plan.
 * ($geoNear's distanceField and includeLocs.) */
bool plan_exec_geo_distance(const plan_exec_t *x, double *dist, bson_value_t *loc, bool *has_loc);

void plan_exec_free(plan_exec_t *x);

#endif
