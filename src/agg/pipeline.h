/*
 * pipeline.h -- aggregation pipelines: parse once into a read-only list of
 * stages, then run any number of times as a pull iterator.
 *
 * A pipeline (agg_pipeline_t) is the parsed plan: one row per stage, each
 * with its compiled filter, expressions, sort keys, etc.  It never changes
 * after agg_pipeline_parse, so explain can print it without running it.
 * A run (agg_exec_t) is the runtime: one state per stage, pulling documents
 * from the stage before it; the first stage pulls from the collection through
 * the find executor (query/plan.h), into which a leading $match is pushed.
 *
 * The command layer sits above this one, so what only it knows -- how a
 * document is prepared for storage, how a collection's validator is checked,
 * how a missing collection is created -- comes in as callbacks (agg_host_t).
 *
 * Not here: the aggregate command's own arguments (commands/cmd_aggregate.c),
 * expressions (expr/expr.h) and accumulators (expr/accum.h).
 */
#ifndef TAMGA_AGG_PIPELINE_H
#define TAMGA_AGG_PIPELINE_H

#include <stdbool.h>
#include <stdint.h>
#include <bson/bson.h>

#include "common/error.h"
#include "storage/storage.h"

typedef struct agg_pipeline agg_pipeline_t;
typedef struct agg_exec agg_exec_t;

/* MongoDB's limits. */
#define AGG_MAX_STAGES 1000                       /* internalPipelineLengthLimit */
#define AGG_MEMORY_LIMIT (100LL * 1024 * 1024)    /* what a blocking stage holds in memory */
/* internalLookupStageIntermediateDocumentMaxSizeBytes: the documents one
 * $lookup gathers for one input document (4568 past it); explain's
 * serverParameters shows it */
#define AGG_LOOKUP_MAX_BYTES (100 * 1024 * 1024)

/*
 * What the caller (the aggregate command) provides.  Everything is borrowed
 * and must outlive the pipeline and every run of it.
 */
typedef struct coll coll_t;
typedef struct agg_host agg_host_t;

/*
 * $changeStream's source.  agg/ sits below repl/, which reads the oplog, so
 * the stage is a shell: the aggregate command hands in these callbacks
 * (repl/changestream.h implements them) and the stage calls them.  ctx
 * (agg_host_t.change_stream_ctx) lives as long as the engine.
 *   parse: the stage's spec for host's namespace (host->coll NULL: a
 *          database, or the whole deployment on admin) -> *plan (freed
 *          with free_plan); mongod's errors for a bad spec.
 *   push_match: the $match right after $changeStream (its filter, borrowed
 *          for the call), which the reader may apply while it reads.
 *   open/close: one run (state).  next: 1 with *doc (valid until the next
 *          call), 0 when nothing more is there now, -1 with err.
 *   save/restore: between batches.
 *   batch_end: append postBatchResumeToken to a batch's cursor document;
 *          last is the _id of the last document of the batch (NULL: none),
 *          ended says the run returned 0 (read all there is).
 *   finished: the stream ended for good (after an invalidate).
 *   $changeStreamSplitLargeEvent: fragment_token is the token (owned hex)
 *          of fragment n (0-based) of the event whose token is hex;
 *          resume_fragment says, once, whether the event whose token is
 *          hex is the one a resume token of a fragment points into: that
 *          fragment's number (-1: not it); resumes_split says the stream
 *          resumes from such a token (the stage is then required).
 */
typedef struct agg_change_stream_ops {
	int (*parse)(void *ctx, const agg_host_t *host, const bson_value_t *spec, void **plan, terr_t *err);
	void (*push_match)(void *plan, const bson_t *filter);
	int (*open)(void *ctx, const void *plan, void **state, terr_t *err);
	int (*next)(void *state, storage_session_t *s, const bson_t **doc, terr_t *err);
	int (*save)(void *state, terr_t *err);
	int (*restore)(void *state, storage_session_t *s, terr_t *err);
	void (*batch_end)(void *state, const bson_value_t *last, bool ended, bson_t *cursor);
	bool (*finished)(void *state);
	void (*close)(void *state);
	void (*free_plan)(void *plan);
	char *(*fragment_token)(const char *hex, int32_t n);
	int32_t (*resume_fragment)(void *state, const char *hex);
	bool (*resumes_split)(const void *plan);
} agg_change_stream_ops_t;

struct agg_host {
	storage_t *st;
	const char *db;               /* the aggregate's database */
	const char *coll;             /* the aggregated collection; NULL for {aggregate: 1} */
	/* allowDiskUse (the command's, else allowDiskUseByDefault): a sort
	 * past its memory limit writes sorted runs to files in spill_dir and
	 * merges them -- the pushed-down sort and $sort; $group writes its
	 * partial groups there the same way, and $bucketAuto its sort.
	 * Without it such a stage fails with 292 (238 when disk use is
	 * allowed but there is no spill_dir).  $setWindowFields and $densify
	 * do not spill yet: past 100 MB they fail with 292, or 238 when disk
	 * use is allowed. */
	bool allow_disk_use;
	const char *spill_dir;        /* "<dbpath>/_tmp", must exist; NULL = none */
	/* internalQueryMaxBlockingSortMemoryUsageBytes for the sorts above;
	 * 0 = AGG_MEMORY_LIMIT. */
	uint64_t sort_memory_limit;
	/* internalDocumentSourceGroupMaxMemoryBytes for $group; 0 =
	 * AGG_MEMORY_LIMIT. */
	uint64_t group_memory_limit;
	/* internalDocumentSourceBucketAutoMaxMemoryBytes for $bucketAuto's
	 * sort; 0 = AGG_MEMORY_LIMIT. */
	uint64_t bucket_auto_memory_limit;
	bool bypass_validation;       /* bypassDocumentValidation for $out / $merge */
	/* setParameter notablescan: a source only a collection scan answers
	 * fails with 291 (the command layer leaves it off for admin, local and
	 * config) */
	bool notablescan;
	bool sync;                    /* writes of $out/$merge wait for the journal */
	/* The session $out/$merge write on (NULL: the pipeline's own).  A
	 * readConcern "majority" aggregate reads on a session holding a
	 * snapshot at the commit point, which cannot write; its writes go
	 * through this one (the caller's, open for the whole run). */
	storage_session_t *write_session;
	const bson_value_t *hint;     /* the command's hint (index name or key pattern) or NULL */
	/* $_requestResumeToken (a forward collection scan, hint {$natural:
	 * 1}): the source keeps each document's RecordId (agg_exec_last_recid),
	 * and starts past resume_after when has_resume_after ($_resumeAfter /
	 * $_startAt, checked by the command). */
	bool want_recid;
	bool has_resume_after;
	int64_t resume_after;
	const uint8_t *resume_key;    /* ... on a clustered collection: past this clustered key */
	size_t resume_key_len;
	/* The command's collation (or the collection's default; NULL = simple):
	 * every string comparison of the pipeline uses it ($match, $sort,
	 * $group keys, $lookup, expressions, sub-pipelines).  Interned. */
	const coll_t *collation;
	/* Views read by $lookup / $graphLookup / $unionWith are not expanded:
	 * what checking a view definition wants (mongod resolves each to
	 * itself there), so that views reading views are parsed once. */
	bool views_unresolved;
	/* The write path ($out, $merge).  NULL callbacks make those stages fail
	 * with 238 NotImplemented. */
	void *ctx;
	/* write_prepare_doc: copy doc into out (initialised) with _id first. */
	int (*prepare_doc)(void *ctx, const bson_t *doc, bson_t *out, terr_t *err);
	/* validation_check_write: 0 when the document may be stored. */
	int (*check_write)(void *ctx, storage_coll_t *coll, const bson_t *new_doc,
	                   const bson_t *old_doc, terr_t *err);
	/* The target collection, created when missing; a reference to release. */
	int (*get_or_create_coll)(void *ctx, const char *db, const char *name,
	                          storage_coll_t **out, terr_t *err);
	/* $listLocalSessions: append the cached sessions spec ({}, {allUsers},
	 * {users}) asks for to out, an array being built.  Called while the
	 * pipeline is parsed.  NULL: the stage fails with 238 NotImplemented. */
	void (*list_local_sessions)(void *ctx, const bson_t *spec, bson_t *out);
	/* $listSessions (run on config.system.sessions): the $match filter on
	 * the rows' _id.uid for spec ({}: the client's own user, {allUsers},
	 * {users}), into filter (initialised).  NULL: 238 NotImplemented. */
	void (*list_sessions_filter)(void *ctx, const bson_t *spec, bson_t *filter);
	/* $queryStats (src/toolbelt/): check spec ({transformIdentifiers}) as
	 * mongod's parser does and append the store's rows to out, an array
	 * being built; 0 or -1 with err.  Called while the pipeline is parsed.
	 * NULL: 238 NotImplemented. */
	int (*query_stats)(void *ctx, const bson_t *spec, bson_t *out, terr_t *err);
	/* $currentOp: append the running operations' documents (mongod's
	 * currentOp shape; allUsers false: the caller's own only) to out, an
	 * array being built; called while the pipeline is parsed.  NULL: 238. */
	void (*current_op)(void *ctx, bool all_users, bson_t *out);
	/* $collStats latencyStats: append reads / writes / commands /
	 * transactions ({latency, ops[, histogram]}) of namespace ns to out.
	 * NULL: 238 NotImplemented. */
	void (*latency_stats)(void *ctx, const char *ns, bool histograms, bson_t *out);
	/* Index filters (planCacheSetFilter): true when one is set for the
	 * shape of the source's pushed-down filter, sort and projection (NULL
	 * = none) on coll, with *allowed as plan_request_t.index_filter wants
	 * it.  NULL: no filters. */
	bool (*index_filter)(void *ctx, const storage_coll_t *coll, const bson_t *filter, const bson_t *sort,
	                     const bson_t *proj, uint64_t *allowed);
	/* A time-series read (the command layer's cmd_ts_partial_mask): which
	 * partial indexes of the collection whose UUID is partial_uuid the
	 * measurements' leading $match (partial_query, borrowed for the
	 * pipeline's life) may use, into plan_request_t.partial_ok when the
	 * source reads that collection.  NULL: the planner's own test. */
	bool (*partial_ok)(const storage_coll_t *coll, const bson_t *query, bool same_collation, uint64_t *ok);
	const bson_t *partial_query;
	bool partial_same_collation;
	uint8_t partial_uuid[16];
	/* $changeStream (above).  NULL: a standalone, 40573. */
	const agg_change_stream_ops_t *change_stream;
	void *change_stream_ctx;
};

/*
 * Parse a pipeline (an array of stage documents) with MongoDB's rules and
 * errors: 40323 "A pipeline stage specification object must contain exactly
 * one field.", 40324 "Unrecognized pipeline stage name: '$foo'", 7749501 for
 * more than 1000 stages, 40601 "$out can only be the final stage in the
 * pipeline", 40602 for first-only stages elsewhere, each stage's own errors.
 * let is the command's `let` (expressions, evaluated once here) or NULL.
 * host is borrowed for the pipeline's life.  On success *out is owned by the
 * caller (agg_pipeline_free).
 */
int agg_pipeline_parse(const bson_t *stages, const bson_t *let, const agg_host_t *host,
                       agg_pipeline_t **out, terr_t *err);
void agg_pipeline_free(agg_pipeline_t *p);

/*
 * Views (agg/view.c).  Resolve db.name as mongod's resolveView: 1 when it
 * is a view, with *base the collection at the end of its viewOn chain
 * (owned, bson_free) and pipeline initialised to the chain's stages,
 * innermost view first (destroy it); 0 when name is not a view; -1 with 165
 * ViewDepthLimitExceeded "View depth too deep or view cycle detected;
 * maximum depth is 20" when the chain holds 20 views or more (mongod stops
 * after 20 steps, so a chain of 20 can be created but not read), or 195
 * ViewPipelineMaxSizeExceeded when the stages add up to more than
 * 16 000 000 bytes.
 */
#define AGG_VIEW_MAX_DEPTH 20
#define AGG_VIEW_MAX_PIPELINE_BYTES 16000000
int agg_view_resolve(storage_t *st, const char *db, const char *name, char **base, bson_t *pipeline,
                     terr_t *err);
/* The bytes of a pipeline array as mongod's view limits count them: the
 * sum of its stage documents' sizes. */
int64_t agg_view_stages_size(const bson_t *pipeline);
/*
 * mongod's resolution of the namespaces a query involves, before its
 * pipeline is parsed: every view the stages read, and every view the
 * resolved pipelines of those read in turn, resolved once each (breadth
 * first).  0, or -1 with the first failure in err, with mongod's context:
 * "Failed to resolve view '<db>.<name> :: caused by :: <reason>" (165, 195).
 */
int agg_view_check_involved(storage_t *st, const char *db, const bson_t *stages, terr_t *err);
/* The namespaces of the database that the stages read besides the
 * aggregated one, as mongod's involved namespaces: each $lookup's and
 * $graphLookup's `from`, $unionWith's collection, and those of the
 * pipelines of $lookup, $unionWith and $facet (a walk of the BSON; nothing is
 * parsed, nothing resolved: a view's own stages are not entered).  Appends
 * the names as strings to out, an array being built holding *n so far. */
void agg_pipeline_involved(const bson_t *stages, bson_t *out, int *n);
/* Append the stages of the array pipeline to out (an array being built that
 * holds *n stages so far; *n is advanced). */
void agg_view_append_stages(bson_t *out, int *n, const bson_t *pipeline);

/* The pipeline writes ($out or $merge last): its result set is empty. */
bool agg_pipeline_writes(const agg_pipeline_t *p);
/* The pipeline starts with a stage that needs no collection ($documents). */
bool agg_pipeline_collectionless(const agg_pipeline_t *p);
/* The pipeline starts with $changeStream (runs on a collection, a database
 * with {aggregate: 1}, or the deployment on admin). */
bool agg_pipeline_change_stream(const agg_pipeline_t *p);
/* A change stream's run (agg_pipeline_change_stream): the cursor's
 * postBatchResumeToken after a batch (see agg_change_stream_ops_t.batch_end)
 * and whether the stream ended for good.  No-ops for other pipelines. */
void agg_exec_batch_end(agg_exec_t *x, const bson_value_t *last, bool ended, bson_t *cursor);
bool agg_exec_finished(agg_exec_t *x);
/* host->want_recid: the RecordId of the collection's document the source
 * handed on last (true), false before any or when the source is not a
 * collection scan keeping RecordIds.  Under streaming stages that is the
 * document the last result came from, as mongod's DocumentSourceCursor
 * tracks its resume token per document. */
bool agg_exec_last_recid(const agg_exec_t *x, int64_t *out);
/* The same on a clustered collection: the clustered key (mongod's BinData
 * RecordId) of that document, valid until the next agg_exec_next. */
bool agg_exec_last_cluster_key(const agg_exec_t *x, const uint8_t **key, size_t *len);
/* The name of the first stage ("$match") or NULL when empty. */
const char *agg_pipeline_first_stage(const agg_pipeline_t *p);

/*
 * Explain in mongod's shape (queryPlanner verbosity): appends
 * {explainVersion: "1", stages: [{$cursor: {queryPlanner: {...}}}, {$group: ...}, ...]}
 * to out; stages are shown as they run (after desugaring, e.g. $sortByCount
 * as $group + $sort, and with the leading $match / $sort / $limit moved into
 * $cursor).  When the whole pipeline runs in the find layer, as mongod:
 * {explainVersion: "1", queryPlanner: {...}} without stages.
 */
void agg_pipeline_explain(const agg_pipeline_t *p, bson_t *out);

/* Explain with executionStats: run x to the end (results discarded), then
 * append the same shape with each stage's nReturned and
 * executionTimeMillisEstimate and the source's executionStats.  Returns 0,
 * or -1 with err when the run failed. */
int agg_exec_explain_run(agg_exec_t *x, storage_session_t *s, bson_t *out, terr_t *err);

/*
 * Start a run.  p must outlive the exec.  On success *out is owned by the
 * caller (agg_exec_free).  No storage resources are taken until the first
 * agg_exec_next.
 */
int agg_exec_new(const agg_pipeline_t *p, agg_exec_t **out, terr_t *err);

/*
 * Next result: 1 with *doc (a view valid until the next call on this exec),
 * 0 at the end, -1 with err.  Runtime errors carry the error context (see
 * agg_exec_set_error_context).  A result past 16 MB + 16 KB (stages may
 * build larger documents for the stages after them) fails with 10334, as
 * mongod's BSONObj check: "BSONObj size: <n> (0x<n>) is invalid. Size must
 * be between 0 and 16793600(16MB) First element: <name>: <value>".  A pipeline
 * ending in $out/$merge does all its writing on the first call and then
 * returns 0.
 */
int agg_exec_next(agg_exec_t *x, storage_session_t *s, bson_t *doc, terr_t *err);

/* The prefix runtime errors get, as mongod's "<context> :: caused by :: <msg>":
 * the aggregate command sets "Executor error during aggregate command on
 * namespace: <ns>" for its first batch ("PlanExecutor error during
 * aggregation", mongod's older wording, is the default), "Executor error
 * during getMore" for later batches; NULL for none.  context is borrowed and
 * must outlive the exec. */
void agg_exec_set_error_context(agg_exec_t *x, const char *context);

/* Suspend / resume between getMore batches (no storage resources held). */
int agg_exec_save(agg_exec_t *x, terr_t *err);
int agg_exec_restore(agg_exec_t *x, storage_session_t *s, terr_t *err);

void agg_exec_free(agg_exec_t *x);

#endif
