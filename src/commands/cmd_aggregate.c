/*
 * cmd_aggregate.c -- the aggregate command: arguments as mongod's IDL reads
 * them, the pipeline (agg/pipeline.h) parsed and run as a cursor source, and
 * explain.
 *
 * The write path a pipeline needs for $out/$merge (document preparation,
 * validation, implicit creation) is handed to agg/ as callbacks, since agg/
 * sits below commands/.  Pipelines that write run to completion before the
 * reply, whatever the batch size, and reply with an empty first batch.
 */
#include "commands/cmd_repl_reads.h"
#include "commands/commands_private.h"
#include "commands/cmd_timeseries.h"
#include "commands/cmd_admin.h"

#include <string.h>

#include "agg/pipeline.h"
#include "bson/value.h"
#include "commands/validation.h"
#include "commands/write.h"
#include "common/mem.h"
#include "repl/changestream.h"

/* cmd_catalog.c */
int cmd_cursor_options(cmd_t *c, cursor_opts_t *o, terr_t *err);

/* What the cursor keeps alive between batches. */
typedef struct agg_src {
	agg_host_t host;
	char *db, *coll;
	bson_value_t hint;         /* owned copy; BSON_TYPE_EOD = none */
	agg_pipeline_t *p;
	agg_exec_t *x;
	/* a change stream: the _id of the last two documents handed out (the
	 * last may wait as the cursor's pending document) */
	bool change_stream;
	bson_value_t last_id, prev_id;   /* BSON_TYPE_EOD = none */
	/* $_requestResumeToken: the RecordIds the last two results came from
	 * (the last may wait as the cursor's pending document), for
	 * postBatchResumeToken, as find's resumable scans */
	bool resume_token;
	cmd_resume_tok_t tok;
	/* the first batch's error context: "Executor error during aggregate
	 * command on namespace: <the namespace the command named>" */
	char first_context[600];
	/* a time-series read: the measurements' leading $match (owned; NULL:
	 * none), which decides its partial indexes (host.partial_ok) */
	bson_t *ts_query;
} agg_src_t;

/* mongod's DSCSCheckResumability refusal of an event whose resume token a
 * stage changed. */
static int
check_event_id(agg_src_t *a, const bson_t *doc, terr_t *err)
{
	bson_iter_t it, d;

	if (!bson_iter_init_find(&it, doc, "_id") || !BSON_ITER_HOLDS_DOCUMENT(&it) || !bson_iter_recurse(&it, &d) ||
	    !bson_iter_find(&d, "_data") || !BSON_ITER_HOLDS_UTF8(&d))
		return terr_set(err, 280,
		    "Encountered an event whose _id field, which contains the resume token, was modified by the pipeline. Modifying the _id field of an event makes it impossible to resume the stream from that point. Only transformations that retain the unmodified _id field are allowed.");
	if (a->prev_id.value_type != BSON_TYPE_EOD)
		bson_value_destroy(&a->prev_id);
	a->prev_id = a->last_id;
	bson_value_copy(bson_iter_value(&it), &a->last_id);
	return 0;
}

static int
src_next(void *state, storage_session_t *s, bson_t *doc, terr_t *err)
{
	agg_src_t *a = state;
	int rc = agg_exec_next(a->x, s, doc, err);

	if (rc == 1 && a->change_stream && check_event_id(a, doc, err) != 0)
		return -1;
	if (rc == 1 && a->resume_token) {
		int64_t r;
		const uint8_t *k = NULL;
		size_t kl = 0;

		if (!agg_exec_last_recid(a->x, &r))
			return terr_set(err, TERR_NOT_IMPLEMENTED,
			    "$_requestResumeToken: this pipeline's results do not come from one collection scan "
			    "(not supported by Tamga yet)");
		agg_exec_last_cluster_key(a->x, &k, &kl);
		cmd_resume_tok_push(&a->tok, r, k, kl);
	}
	return rc;
}

/* postBatchResumeToken of a resumable scan: {$recordId: the RecordId of
 * the batch's last document} (null before any), as find's. */
static void
src_resume_batch_end(void *state, bool ended, bool pending, bson_t *cursor)
{
	agg_src_t *a = state;

	(void)ended;
	cmd_resume_tok_append(&a->tok, pending, cursor);
}

static void
src_batch_end(void *state, bool ended, bool pending, bson_t *cursor)
{
	agg_src_t *a = state;
	const bson_value_t *last = pending ? &a->prev_id : &a->last_id;

	agg_exec_batch_end(a->x, last->value_type != BSON_TYPE_EOD ? last : NULL, ended && !pending, cursor);
}

static bool
src_finished(void *state)
{
	return agg_exec_finished(((agg_src_t *)state)->x);
}

static int
src_save(void *state, terr_t *err)
{
	return agg_exec_save(((agg_src_t *)state)->x, err);
}

static int
src_restore(void *state, storage_session_t *s, terr_t *err)
{
	agg_src_t *a = state;

	/* maxTimeMS of the aggregate bounds its first batch only */
	agg_exec_set_error_context(a->x, "Executor error during getMore");
	return agg_exec_restore(a->x, s, err);
}

static void
src_free(void *state)
{
	agg_src_t *a = state;

	agg_exec_free(a->x);
	agg_pipeline_free(a->p);
	cmd_resume_tok_free(&a->tok);
	if (a->hint.value_type != BSON_TYPE_EOD)
		bson_value_destroy(&a->hint);
	if (a->last_id.value_type != BSON_TYPE_EOD)
		bson_value_destroy(&a->last_id);
	if (a->prev_id.value_type != BSON_TYPE_EOD)
		bson_value_destroy(&a->prev_id);
	if (a->ts_query != NULL)
		bson_destroy(a->ts_query);
	bson_free(a->db);
	bson_free(a->coll);
	bson_free(a);
}

/* ---- the write path for $out / $merge ----------------------------------- */

typedef struct write_ctx {
	cmd_t *c;
	bool bypass;
} write_ctx_t;

static int
host_prepare(void *ctx, const bson_t *doc, bson_t *out, terr_t *err)
{
	return write_prepare_doc(doc, out, err);
}

static int
host_check(void *ctx, storage_coll_t *coll, const bson_t *new_doc, const bson_t *old_doc,
    terr_t *err)
{
	write_ctx_t *w = ctx;
	validation_result_t vr;

	/* 9.0: no bypassing a validator at level constraint */
	if (w->bypass && validation_is_constraint(coll))
		return terr_set(err, TERR_BAD_VALUE,
		    "bypassDocumentValidation is not permitted with 'constraint' validationLevel");
	return validation_check_write(coll, new_doc, old_doc, w->bypass, &vr, err);
}

static int
host_get_or_create(void *ctx, const char *db, const char *name, storage_coll_t **out, terr_t *err)
{
	write_ctx_t *w = ctx;

	return write_get_or_create_coll_in(w->c, db, name, out, err);
}

static void
host_list_sessions(void *ctx, const bson_t *spec, bson_t *out)
{
	write_ctx_t *w = ctx;

	cmd_admin_sessions_list(w->c->client, spec, out);
}

static void
host_list_sessions_filter(void *ctx, const bson_t *spec, bson_t *filter)
{
	write_ctx_t *w = ctx;

	cmd_admin_sessions_filter(w->c->client, spec, filter);
}

static void
host_current_op(void *ctx, bool all_users, bson_t *out)
{
	write_ctx_t *w = ctx;

	cmd_current_op_docs(w->c, all_users, out);
}

static void
host_latency_stats(void *ctx, const char *ns, bool histograms, bson_t *out)
{
	(void)ctx;
	cmd_metrics_latency_append(ns, histograms, out);
}

static bool
host_index_filter(void *ctx, const storage_coll_t *coll, const bson_t *filter, const bson_t *sort,
                  const bson_t *proj, uint64_t *allowed)
{
	write_ctx_t *w = ctx;

	return cmd_plan_filter_mask(w->c, coll, filter, sort, proj, allowed);
}

/* ---- arguments ---------------------------------------------------------- */

static const char *const aggregate_fields[] = {
	"pipeline", "cursor", "explain", "allowDiskUse", "bypassDocumentValidation", "collation",
	"hint", "let", "collectionUUID", "fromMongos", "needsMerge", "fromRouter", "isMapReduceCommand",
	"includeQueryStatsMetrics", "exchange", "runtimeConstants", "encryptionInformation",
	"$_requestReshardingResumeToken", "$_requestResumeToken", "$_resumeAfter", "$_startAt", "rawData",
	"$_explainVerbosity", NULL,
};

/* hint: a string (index name) or an object (key pattern, {$natural: d});
 * the find executor checks that it names an index. */
static int
check_hint(cmd_t *c, bson_value_t *out, terr_t *err)
{
	bson_iter_t it;

	out->value_type = BSON_TYPE_EOD;
	if (!bson_iter_init_find(&it, c->body, "hint"))
		return 0;
	if (!BSON_ITER_HOLDS_UTF8(&it) && !BSON_ITER_HOLDS_DOCUMENT(&it))
		return terr_set(err, TERR_FAILED_TO_PARSE, "hint must be a string or an object");
	bson_value_copy(bson_iter_value(&it), out);
	return 0;
}

/*
 * $_requestResumeToken / $_resumeAfter / $_startAt (mongod's resumable
 * aggregate scans, the ones resharding runs): mongod's checks (2 BadValue:
 * the hint must be {$natural: 1}; a token to resume from needs
 * $_requestResumeToken), then the token as find checks it
 * (cmd_resume_input_check: $_startAt, as find's, goes on past the RecordId
 * whether it is still there or not).  coll is the collection scanned: over
 * a view, the one it stands on (mongod resolves the view into an aggregate
 * on it that keeps these fields, PipelineResolver).  Sets *want and
 * host->has_resume_after / resume_after / resume_key.  Over a time-series
 * collection's measurements the scan is of its buckets, under
 * $_internalUnpackBucket: the tokens are the buckets' RecordIds, the last
 * bucket unpacked, as 9.0's $cursor stage gives (ts is not otherwise
 * special).
 */
static int
check_resume(cmd_t *c, const char *coll, bool ts, agg_host_t *host, bool *want, terr_t *err)
{
	bson_iter_t it, h;
	bool has_after = bson_iter_init_find(&it, c->body, "$_resumeAfter");
	bool has_start = bson_iter_init_find(&it, c->body, "$_startAt");
	bson_t after, start;
	char ns[512];
	storage_coll_t *sc = NULL;
	int ret;

	*want = bson_iter_init_find(&it, c->body, "$_requestResumeToken") && bson_iter_as_bool(&it);
	if (*want) {
		bool natural = false;

		if (bson_iter_init_find(&h, c->body, "hint") && BSON_ITER_HOLDS_DOCUMENT(&h)) {
			bson_iter_t n;

			bson_iter_recurse(&h, &n);
			natural = bson_iter_next(&n) && strcmp(bson_iter_key(&n), "$natural") == 0 &&
			    BSON_ITER_HOLDS_NUMBER(&n) && bson_iter_as_double(&n) == 1.0 && !bson_iter_next(&n);
		}
		if (!natural)
			return terr_set(err, TERR_BAD_VALUE, "hint must be {$natural:1} if 'requestResumeToken' is enabled");
	} else if (has_after) {
		return terr_set(err, TERR_BAD_VALUE, "'requestResumeToken' must be true if 'resumeAfter' is specified");
	} else if (has_start) {
		return terr_set(err, TERR_BAD_VALUE, "'requestResumeToken' must be true if 'startAt' is specified");
	}
	if (!*want)
		return 0;
	(void)ts;
	if (coll == NULL)
		return terr_set(err, TERR_NOT_IMPLEMENTED,
		    "aggregate with $_requestResumeToken over no collection is not supported by Tamga yet");
	host->want_recid = true;
	if (!has_after && !has_start)
		return 0;
	for (int i = 0; i < 2; i++) {
		const char *name = i == 0 ? "$_resumeAfter" : "$_startAt";
		bson_t *into = i == 0 ? &after : &start;
		const uint8_t *data;
		uint32_t len;

		if (!bson_iter_init_find(&it, c->body, name))
			continue;
		if (!BSON_ITER_HOLDS_DOCUMENT(&it))
			return terr_set(err, TERR_TYPE_MISMATCH, "BSON field '%s' is the wrong type '%s', expected type 'object'",
			    name, bv_type_name(bson_iter_type(&it)));
		bson_iter_document(&it, &len, &data);
		bson_init_static(into, data, len);
	}
	snprintf(ns, sizeof ns, "%s.%s", c->db, coll);
	storage_coll_get(c->engine->st, c->db, coll, &sc, NULL);
	ret = cmd_resume_input_check(c, sc, ns, "Executor error during aggregate command on namespace: ",
	    has_after ? &after : NULL, has_start ? &start : NULL, &host->has_resume_after, &host->resume_after,
	    &host->resume_key, &host->resume_key_len, err);
	storage_coll_release(sc);
	return ret;
}

/* The pipeline field: an array of objects. */
static int
get_pipeline(cmd_t *c, bson_t *out, terr_t *err)
{
	bson_iter_t it;
	bool found;
	int i = 0;

	RET(cmd_get_array(c, "pipeline", out, &found, err));
	if (!found)
		return terr_set(err, 40414, "BSON field 'aggregate.pipeline' is missing but a required field");
	bson_iter_init(&it, out);
	while (bson_iter_next(&it)) {
		if (!BSON_ITER_HOLDS_DOCUMENT(&it))
			return terr_set(err, TERR_TYPE_MISMATCH,
			    "Each element of the 'pipeline' array must be an object");
		i++;
	}
	return 0;
}

static void explain_reply_tail(cmd_t *c);

/* The pipeline array's first stage is name. */
static bool
first_stage_is(const bson_t *pipeline, const char *name)
{
	bson_iter_t it, st;

	return bson_iter_init(&it, pipeline) && bson_iter_next(&it) && BSON_ITER_HOLDS_DOCUMENT(&it) &&
	    bson_iter_recurse(&it, &st) && bson_iter_next(&st) && strcmp(bson_iter_key(&st), name) == 0;
}

static void
explain_reply(cmd_t *c, const agg_pipeline_t *p)
{
	agg_pipeline_explain(p, c->reply);
	explain_reply_tail(c);
}

/* serverInfo, serverParameters and command, after the plan, as mongod. */
static void
explain_reply_tail(cmd_t *c)
{
	bson_t cmd;
	bson_iter_t it;

	cmd_explain_append_server(c->reply);
	bson_append_document_begin(c->reply, "command", -1, &cmd);
	bson_iter_init(&it, c->body);
	while (bson_iter_next(&it))
		if (strcmp(bson_iter_key(&it), "explain") != 0 && strcmp(bson_iter_key(&it), "lsid") != 0 &&
		    strcmp(bson_iter_key(&it), "$clusterTime") != 0 &&
		    strcmp(bson_iter_key(&it), "$_explainVerbosity") != 0)
			bson_append_iter(&cmd, bson_iter_key(&it), -1, &it);
	bson_append_document_end(c->reply, &cmd);
}

CMD_HANDLER(cmd_aggregate)
{
	agg_src_t *a = NULL;
	bson_t pipeline, let;
	bool found, has_let = false, explain = false, allow_disk = false, bypass = false;
	const char *coll = NULL;
	cursor_opts_t copts;
	cursor_source_t src = {0};
	storage_session_t *s;
	write_ctx_t wctx;
	view_t view = {0};
	bson_t combined;
	bool combined_ts = false;           /* combined holds a time-series read (cmd_ts_read_pipeline) */
	bson_t *ts_query = NULL;            /* ... and its leading $match (owned until a takes it) */
	uint8_t ts_uuid[16] = {0};   /* set with combined_ts (GCC cannot tell) */
	const coll_t *ts_collation = NULL;  /* ... and its collection's default collation */
	const bson_t *stages = &pipeline;   /* the view's stages + the pipeline for a view */
	char ns[512];
	storage_coll_t *oplog_coll = NULL;
	int ret = -1;

	/* {aggregate: "coll"} or {aggregate: 1} */
	if (BSON_ITER_HOLDS_UTF8(&c->first)) {
		coll = bson_iter_utf8(&c->first, NULL);
		if (coll[0] == '\0')
			return terr_set(err, TERR_INVALID_NAMESPACE, "Invalid namespace specified '%s.'", c->db);
	} else if (bv_is_number(bson_iter_value(&c->first))) {
		if (bv_as_double(bson_iter_value(&c->first)) != 1)
			return terr_set(err, TERR_FAILED_TO_PARSE,
			    "Invalid command format: the 'aggregate' field must specify a collection name or 1");
	} else {
		return terr_set(err, TERR_TYPE_MISMATCH, "collection name has invalid type: %s",
		    bv_type_name(bson_iter_type(&c->first)));
	}
	RET(cmd_check_fields(c, aggregate_fields, err));
	RET(get_pipeline(c, &pipeline, err));
	{
		bson_iter_t it;
		if (bson_iter_init_find(&it, c->body, "explain")) {
			if (!BSON_ITER_HOLDS_BOOL(&it))
				return terr_set(err, TERR_TYPE_MISMATCH, "explain must be a boolean");
			explain = bson_iter_bool(&it);
		}
		if (!bson_has_field(c->body, "cursor") && !bson_iter_init_find(&it, c->body, "explain"))
			return terr_set(err, TERR_FAILED_TO_PARSE,
			    "The 'cursor' option is required, except for aggregate with the explain argument");
	}
	if (explain && bson_has_field(c->body, "writeConcern"))
		return terr_set(err, TERR_FAILED_TO_PARSE,
		    "Aggregation explain does not support the'writeConcern' option");
	RET(cmd_cursor_options(c, &copts, err));
	/* a snapshot read: its getMores read there too; a majority read's at
	 * their own commit point */
	copts.read_ts = c->rc_majority_read ? CMD_READ_TS_MAJORITY : c->txn_snapshot_ts;
	{
		/* cursor: {batchSize} and nothing else (SimpleCursorOptions) */
		bson_t cur;
		bson_iter_t ci;
		bool found;
		RET(cmd_get_doc(c, "cursor", &cur, &found, err));
		if (found && bson_iter_init(&ci, &cur))
			while (bson_iter_next(&ci))
				if (strcmp(bson_iter_key(&ci), "batchSize") != 0)
					return terr_set(err, 40415, "BSON field 'aggregate.cursor.%s' is an unknown field.",
					    bson_iter_key(&ci));
	}
	RET(cmd_get_allow_disk_use(c, &allow_disk, err));
	RET(cmd_get_bool(c, "bypassDocumentValidation", &bypass, &found, err));
	RET(cmd_get_doc(c, "let", &let, &has_let, err));
	RET(cmd_collation_type_check(c, c->body, err));
	/* a view: its pipelines run first, on the collection it stands on */
	if (coll != NULL && (ret = view_resolve(c, coll, &view, err)) != 0) {
		int n = 0;
		if (ret < 0)
			return -1;
		if (first_stage_is(&pipeline, "$changeStream")) {
			view_free(&view);
			return terr_set(err, TERR_COMMAND_NOT_SUPPORTED_ON_VIEW, "Namespace %s.%s is a view, not a collection",
			    c->db, coll);
		}
		bson_init(&combined);
		agg_view_append_stages(&combined, &n, &view.pipeline);
		agg_view_append_stages(&combined, &n, &pipeline);
		stages = &combined;
		ret = -1;
	} else if (coll != NULL && !cmd_ts_raw(c)) {
		/* a time-series collection: the measurements of its buckets */
		storage_coll_t *tc = NULL;
		bson_t gn;
		int g = 0;
		if (storage_coll_get(c->engine->st, c->db, coll, &tc, NULL) == 0 && cmd_ts_is(tc) &&
		    (g = cmd_ts_geonear_rewrite(tc, &pipeline, &gn, err)) == 2) {
			/* $geoNear on the metaField: the whole bucket pipeline */
			bson_copy_to(&gn, &combined);
			stages = &combined;
			combined_ts = true;
			memcpy(ts_uuid, tc->uuid, 16);
			ts_collation = tc->collation;
		} else if (cmd_ts_is(tc) && g >= 0 &&
		           cmd_ts_read_pipeline(tc, g == 1 ? &gn : &pipeline, !bson_has_field(c->body, "collation"),
		                                &combined) == 0) {
			bson_iter_t fi, fs;
			stages = &combined;
			combined_ts = true;
			memcpy(ts_uuid, tc->uuid, 16);
			ts_collation = tc->collation;
			if (bson_iter_init(&fi, g == 1 ? &gn : &pipeline) && bson_iter_next(&fi) && BSON_ITER_HOLDS_DOCUMENT(&fi) &&
			    bson_iter_recurse(&fi, &fs) && bson_iter_next(&fs) && strcmp(bson_iter_key(&fs), "$match") == 0 &&
			    BSON_ITER_HOLDS_DOCUMENT(&fs)) {
				const uint8_t *d;
				uint32_t l;
				bson_iter_document(&fs, &l, &d);
				ts_query = bson_new_from_data(d, l);
			}
		}
		if (cmd_ts_is(tc))
			bson_destroy(&gn);
		storage_coll_release(tc);
		ret = -1;
		if (g < 0)
			goto err;
	}

	a = bson_malloc0(sizeof(*a));
	ERR(check_resume(c, view.base != NULL ? view.base : coll, combined_ts, &a->host, &a->resume_token, err));
	ERR(check_hint(c, &a->hint, err));
	if (combined_ts && a->hint.value_type == BSON_TYPE_DOCUMENT) {
		/* a key pattern in measurement terms names the bucket index */
		storage_coll_t *tc = NULL;
		ret = 0;
		if (storage_coll_get(c->engine->st, c->db, coll, &tc, NULL) == 0)
			ret = cmd_ts_hint(tc, &a->hint, err);
		storage_coll_release(tc);
		if (ret != 0)
			goto err;
		ret = -1;
	}
	if (a->hint.value_type != BSON_TYPE_EOD)
		a->host.hint = &a->hint;
	a->db = bson_strdup(c->db);
	a->coll = coll ? bson_strdup(view.base != NULL ? view.base : coll) : NULL;
	if (view.base != NULL) {
		/* a view reads with its own default collation; a command may
		 * name it again but not ask for another */
		const coll_t *asked = NULL;
		ret = cmd_collation(c, c->body, NULL, &asked, err);
		if (ret == 0 && bson_has_field(c->body, "collation") && asked != view.collation)
			ret = terr_set(err, TERR_OPTION_NOT_SUPPORTED_ON_VIEW,
			    "Cannot override a view's default collation");
		if (ret != 0)
			goto err;
		a->host.collation = view.collation;
	} else {
		/* the command's collation, else the collection's default */
		storage_coll_t *sc = NULL;
		if (coll != NULL)
			storage_coll_get(c->engine->st, c->db, coll, &sc, NULL);
		ret = cmd_collation(c, c->body, sc, &a->host.collation, err);
		storage_coll_release(sc);
		if (ret != 0)
			goto err;
	}
	wctx.c = c;
	wctx.bypass = bypass;
	a->host.st = c->engine->st;
	a->host.db = a->db;
	a->host.coll = a->coll;
	a->host.allow_disk_use = allow_disk;
	a->host.spill_dir = c->engine->tmp_dir;
	a->host.sort_memory_limit = cmd_sort_memory_limit(c);
	a->host.group_memory_limit = (uint64_t)atomic_load(&c->engine->group_memory_limit);
	a->host.bucket_auto_memory_limit = (uint64_t)atomic_load(&c->engine->bucket_auto_memory_limit);
	a->host.bypass_validation = bypass;
	a->host.sync = write_concern_sync(c);
	a->host.ctx = &wctx;
	a->host.prepare_doc = host_prepare;
	a->host.check_write = host_check;
	a->host.get_or_create_coll = host_get_or_create;
	a->host.list_local_sessions = host_list_sessions;
	a->host.list_sessions_filter = host_list_sessions_filter;
	a->host.current_op = host_current_op;
	a->host.notablescan = atomic_load(&c->engine->notablescan) != 0 && strcmp(c->db, "admin") != 0 &&
	    strcmp(c->db, "local") != 0 && strcmp(c->db, "config") != 0;
	a->host.latency_stats = host_latency_stats;
	a->host.index_filter = host_index_filter;
	if (combined_ts) {
		/* its partial indexes as mongod decides on the measurements' filter */
		a->ts_query = ts_query;
		ts_query = NULL;
		a->host.partial_ok = cmd_ts_partial_mask;
		a->host.partial_query = a->ts_query;
		a->host.partial_same_collation = a->host.collation == ts_collation;
		memcpy(a->host.partial_uuid, ts_uuid, 16);
	}
	if (c->engine->cs != NULL) {
		a->host.change_stream = &repl_cs_ops;
		a->host.change_stream_ctx = c->engine->cs;
	}
	a->host.query_stats = cmd_toolbelt_query_stats;   /* $queryStats (cmd_toolbelt.c) */
	/* every view the stages read, and those their views read, resolves
	 * (mongod's involved namespaces, before the pipeline is parsed) */
	ERR(agg_view_check_involved(c->engine->st, c->db, stages, err));
	ERR(agg_pipeline_parse(stages, has_let ? &let : NULL, &a->host, &a->p, err));
	/* the views the pipeline reads share its collation */
	ERR(view_check_involved(c, stages, a->host.collation, err));

	a->change_stream = agg_pipeline_change_stream(a->p);
	/* {aggregate: 1} only for collectionless first stages, and those only there */
	if (a->change_stream) {
		cmd_ns(ns, sizeof(ns), c->db, coll != NULL ? coll : "$cmd.aggregate");
	} else if (coll == NULL) {
		if (agg_pipeline_first_stage(a->p) == NULL) {
			ret = terr_set(err, TERR_INVALID_NAMESPACE, "{aggregate: 1} is not valid for an empty pipeline.");
			goto err;
		}
		if (!agg_pipeline_collectionless(a->p)) {
			ret = terr_set(err, TERR_INVALID_NAMESPACE,
			    "{aggregate: 1} is not valid for '%s'; a collection is required.",
			    agg_pipeline_first_stage(a->p));
			goto err;
		}
		cmd_ns(ns, sizeof(ns), c->db, "$cmd.aggregate");
	} else {
		if (agg_pipeline_collectionless(a->p)) {
			ret = terr_set(err, TERR_INVALID_NAMESPACE, "'%s' can only be run with {aggregate: 1}",
			    agg_pipeline_first_stage(a->p));
			goto err;
		}
		cmd_ns(ns, sizeof(ns), c->db, coll);
	}
	if (explain) {
		/* the explain command passes its verbosity along; executionStats and
		 * allPlansExecution run the pipeline (a writing one is only planned) */
		const char *verb = NULL;
		bson_iter_t vi;
		if (bson_iter_init_find(&vi, c->body, "$_explainVerbosity") && BSON_ITER_HOLDS_UTF8(&vi))
			verb = bson_iter_utf8(&vi, NULL);
		if (verb != NULL && strcmp(verb, "queryPlanner") != 0 && !agg_pipeline_writes(a->p)) {
			bson_t tmp = BSON_INITIALIZER;
			ERR(agg_exec_new(a->p, &a->x, err));
			if ((s = client_session(c->client, err)) == NULL) {
				ret = -1;
				bson_destroy(&tmp);
				goto err;
			}
			ret = agg_exec_explain_run(a->x, s, &tmp, err);
			if (ret == 0)
				bson_concat(c->reply, &tmp);
			bson_destroy(&tmp);
			if (ret != 0)
				goto err;
			explain_reply_tail(c);
			goto err;
		}
		explain_reply(c, a->p);
		ret = 0;
		goto err;
	}
	ERR(agg_exec_new(a->p, &a->x, err));
	/* the source copied it: it pointed into this command's body */
	a->host.resume_key = NULL;
	a->host.resume_key_len = 0;
	snprintf(a->first_context, sizeof a->first_context, "Executor error during aggregate command on namespace: %s", ns);
	agg_exec_set_error_context(a->x, a->first_context);
	if ((s = client_session(c->client, err)) == NULL) {
		ret = -1;
		goto err;
	}
	if (agg_pipeline_writes(a->p)) {
		bson_t d;
		int rc;
		storage_session_t *ws = NULL;
		/* a majority read: the pipeline reads the commit point's snapshot
		 * (s, cmd_txn.c), $out / $merge write on a session of their own */
		if (c->rc_majority_read && (ws = storage_session_pool_get(c->engine->st, err)) == NULL) {
			ret = -1;
			goto err;
		}
		a->host.write_session = ws;
		while ((rc = agg_exec_next(a->x, s, &d, err)) == 1)
			;
		a->host.write_session = NULL;
		if (ws != NULL)
			storage_session_pool_put(c->engine->st, ws);
		if (rc < 0) {
			ret = -1;
			goto err;
		}
	}
	/* the write path's context lives only as long as this call */
	a->host.prepare_doc = NULL;
	a->host.check_write = NULL;
	a->host.get_or_create_coll = NULL;
	a->host.list_local_sessions = NULL;
	a->host.ctx = NULL;
	memset(&src, 0, sizeof(src));
	src.state = a;
	src.next = src_next;
	src.save = src_save;
	src.restore = src_restore;
	src.free = src_free;
	if (a->change_stream) {
		/* a tailable awaitData cursor: a getMore that finds nothing new
		 * sleeps on the oplog's insert notifier (woken by a commit) */
		src.batch_end = src_batch_end;
		src.finished = src_finished;
		copts.tailable = true;
		copts.await_data = true;
		storage_coll_get(c->engine->st, REPL_OPLOG_DB, REPL_OPLOG_COLL, &oplog_coll, NULL);
		copts.coll = oplog_coll;
		copts.single_batch = false;
		copts.connection_id = c->client->connection_id;
	} else if (a->resume_token) {
		/* {$recordId: null} until a document comes, resumed or not,
		 * as find's */
		src.batch_end = src_resume_batch_end;
	}
	a = NULL;
	{
		char owner_buf[256];
		copts.owner = cmd_cursor_owner(c, owner_buf);
		ret = cursor_first_batch(c->engine->cursors, s, ns, &src, &copts, c->reply, err);
		if (ret != 0 && src.batch_end != NULL && copts.tailable)   /* a change stream */
			cursor_change_stream_labels(err);
	}
err:
	storage_coll_release(oplog_coll);
	if (a != NULL)
		src_free(a);
	if (view.base != NULL) {
		bson_destroy(&combined);
		view_free(&view);
	}
	if (combined_ts)
		bson_destroy(&combined);
	if (ts_query != NULL)
		bson_destroy(ts_query);
	return ret;
}
