/*
 * cmd_explain.c -- the explain command in mongod's reply shape.
 *
 * {explain: {find|count|distinct|delete|update|findAndModify|aggregate: ...},
 * verbosity}.  The inner command is parsed like the command itself, planned
 * with query/plan.h, and with executionStats or allPlansExecution run to
 * the end (writes are not applied: the plan only reads, as mongod's explain
 * of a write does not commit).  aggregate goes to cmd_aggregate with
 * explain: true.  The reply: explainVersion, queryPlanner (namespace,
 * parsedQuery, winningPlan, rejectedPlans), executionStats, command,
 * serverInfo, serverParameters.
 */
#include "commands/commands_private.h"
#include "commands/cmd_timeseries.h"

#include <string.h>

#include "agg/pipeline.h"
#include "bson/collation.h"
#include "bson/value.h"
#include "common/mem.h"
#include "common/version.h"
#include "query/plan.h"

CMD_HANDLER(cmd_aggregate);

/* A counter as mongod's appendNumber writes it: int32 when it fits. */
static void
append_count(bson_t *out, const char *key, int64_t v)
{
	if (v >= INT32_MIN && v <= INT32_MAX)
		BSON_APPEND_INT32(out, key, (int32_t)v);
	else
		BSON_APPEND_INT64(out, key, v);
}

typedef enum { VERB_PLANNER, VERB_EXEC, VERB_ALL } verbosity_t;

typedef struct xreq {
	const char *kind;          /* "find", "count", ... */
	const char *coll;
	bson_t filter, sort, proj, let, min, max;
	bool has_filter, has_sort, has_proj, has_let, has_min, has_max;
	bool allow_disk_use, has_allow_disk_use;
	bson_value_t hint;
	bool has_hint;
	bson_value_t collation;    /* borrowed from the explained command */
	bool has_collation;
	int64_t skip, limit;
	const char *key;           /* distinct */
	bool multi;                /* update/delete many */
	bool is_remove;            /* findAndModify remove */
	bool fast_count;           /* count of everything: mongod reads the record count */
} xreq_t;

static bool
sub_doc(const bson_iter_t *it, bson_t *out)
{
	const uint8_t *d;
	uint32_t l;

	if (!BSON_ITER_HOLDS_DOCUMENT(it))
		return false;
	bson_iter_document(it, &l, &d);
	return bson_init_static(out, d, l);
}

static int
get_num(const bson_iter_t *it, const char *kind, const char *f, int64_t *out, terr_t *err)
{
	if (!BSON_ITER_HOLDS_NUMBER(it))
		return terr_set(err, TERR_TYPE_MISMATCH, "BSON field '%s.%s' is the wrong type '%s', expected type 'long'",
		    kind, f, bv_type_name(bson_iter_type(it)));
	*out = bson_iter_as_int64(it);
	if (*out < 0)
		return terr_set(err, 51024, "BSON field '%s' value must be >= 0, actual value '%lld'", f, (long long)*out);
	return 0;
}

/* The statement of update/delete (first of `updates`/`deletes`). */
static int
first_statement(const bson_t *inner, const char *arr, bson_t *stmt, terr_t *err)
{
	bson_iter_t it, sub;

	if (!bson_iter_init_find(&it, inner, arr) || !BSON_ITER_HOLDS_ARRAY(&it))
		return terr_set(err, 40414, "BSON field '%s' is missing but a required field", arr);
	bson_iter_recurse(&it, &sub);
	if (!bson_iter_next(&sub) || !sub_doc(&sub, stmt))
		return terr_set(err, TERR_INVALID_LENGTH, "explained write batches must be of size 1");
	if (bson_iter_next(&sub))
		return terr_set(err, TERR_INVALID_LENGTH, "explained write batches must be of size 1");
	return 0;
}

static int
parse_inner(const bson_t *inner, xreq_t *r, terr_t *err)
{
	bson_iter_t it;
	bson_t stmt;
	const bson_t *src = inner;

	memset(r, 0, sizeof(*r));
	if (!bson_iter_init(&it, inner) || !bson_iter_next(&it))
		return terr_set(err, TERR_FAILED_TO_PARSE, "explain command requires a nested object");
	r->kind = bson_iter_key(&it);
	if (!BSON_ITER_HOLDS_UTF8(&it))
		return terr_set(err, TERR_BAD_VALUE, "collection name has invalid type %s",
		    bv_type_name(bson_iter_type(&it)));
	r->coll = bson_iter_utf8(&it, NULL);
	if (strcmp(r->kind, "delete") == 0 || strcmp(r->kind, "update") == 0) {
		RET(first_statement(inner, strcmp(r->kind, "delete") == 0 ? "deletes" : "updates", &stmt, err));
		src = &stmt;
	}
	bson_iter_init(&it, src);
	while (bson_iter_next(&it)) {
		const char *k = bson_iter_key(&it);
		if (!strcmp(k, "filter") || !strcmp(k, "query") || !strcmp(k, "q")) {
			if (!sub_doc(&it, &r->filter))
				return terr_set(err, TERR_TYPE_MISMATCH, "BSON field '%s.%s' is the wrong type '%s', expected type 'object'",
				    r->kind, k, bv_type_name(bson_iter_type(&it)));
			r->has_filter = true;
		} else if (!strcmp(k, "sort")) {
			r->has_sort = sub_doc(&it, &r->sort);
		} else if (!strcmp(k, "projection") || !strcmp(k, "fields")) {
			r->has_proj = sub_doc(&it, &r->proj);
		} else if (!strcmp(k, "min")) {
			r->has_min = sub_doc(&it, &r->min);
		} else if (!strcmp(k, "max")) {
			r->has_max = sub_doc(&it, &r->max);
		} else if (!strcmp(k, "allowDiskUse")) {
			r->allow_disk_use = bson_iter_as_bool(&it);
			r->has_allow_disk_use = true;
		} else if (!strcmp(k, "let")) {
			r->has_let = sub_doc(&it, &r->let);
		} else if (!strcmp(k, "collation")) {
			r->collation = *bson_iter_value(&it);
			r->has_collation = true;
		} else if (!strcmp(k, "hint")) {
			r->hint = *bson_iter_value(&it);
			r->has_hint = !(r->hint.value_type == BSON_TYPE_DOCUMENT && r->hint.value.v_doc.data_len <= 5);
		} else if (!strcmp(k, "skip")) {
			RET(get_num(&it, r->kind, k, &r->skip, err));
		} else if (!strcmp(k, "limit")) {
			RET(get_num(&it, r->kind, k, &r->limit, err));
			if (!strcmp(r->kind, "delete"))
				r->multi = r->limit == 0;
		} else if (!strcmp(k, "key") && BSON_ITER_HOLDS_UTF8(&it)) {
			r->key = bson_iter_utf8(&it, NULL);
		} else if (!strcmp(k, "multi")) {
			r->multi = bson_iter_as_bool(&it);
		} else if (!strcmp(k, "remove")) {
			r->is_remove = bson_iter_as_bool(&it);
		}
	}
	if (!strcmp(r->kind, "delete") || (!strcmp(r->kind, "update") && !r->multi) ||
	    !strcmp(r->kind, "findAndModify")) {
		if (!r->multi || strcmp(r->kind, "findAndModify") == 0)
			r->limit = 1;
		else
			r->limit = 0;
	}
	if (strcmp(r->kind, "delete") == 0 && r->multi)
		r->limit = 0;
	if (strcmp(r->kind, "distinct") == 0 && r->key == NULL)
		return terr_set(err, 40414, "BSON field 'distinct.key' is missing but a required field");
	return 0;
}

void
cmd_explain_append_server(bson_t *reply)
{
	bson_t d;
	char host[256];

	if (gethostname(host, sizeof(host)) != 0)
		bson_strncpy(host, "localhost", sizeof(host));
	host[sizeof(host) - 1] = '\0';
	BSON_APPEND_DOCUMENT_BEGIN(reply, "serverInfo", &d);
	BSON_APPEND_UTF8(&d, "host", host);
	BSON_APPEND_INT32(&d, "port", 27017);
	BSON_APPEND_UTF8(&d, "version", TAMGA_MONGODB_VERSION);
	BSON_APPEND_UTF8(&d, "gitVersion", "");
	bson_append_document_end(reply, &d);
	BSON_APPEND_DOCUMENT_BEGIN(reply, "serverParameters", &d);
	BSON_APPEND_INT32(&d, "internalQueryFacetBufferSizeBytes", 104857600);
	BSON_APPEND_INT32(&d, "internalQueryFacetMaxOutputDocSizeBytes", 104857600);
	BSON_APPEND_INT32(&d, "internalLookupStageIntermediateDocumentMaxSizeBytes", AGG_LOOKUP_MAX_BYTES);
	BSON_APPEND_INT32(&d, "internalDocumentSourceGroupMaxMemoryBytes", 104857600);
	BSON_APPEND_INT32(&d, "internalQueryMaxBlockingSortMemoryUsageBytes", 104857600);
	BSON_APPEND_INT32(&d, "internalQueryProhibitBlockingMergeOnMongoS", 0);
	BSON_APPEND_INT32(&d, "internalQueryMaxAddToSetBytes", 104857600);
	BSON_APPEND_INT32(&d, "internalDocumentSourceSetWindowFieldsMaxMemoryBytes", 104857600);
	BSON_APPEND_UTF8(&d, "internalQueryFrameworkControl", "trySbeRestricted");
	BSON_APPEND_INT32(&d, "internalQueryPlannerIgnoreIndexWithCollationForRegex", 1);
	bson_append_document_end(reply, &d);
}

/* The write or count stage wrapping the plan, as mongod names it. */
static const struct {
	const char *kind;
	const char *stage;
} wrap_table[] = {
	{"count", "COUNT"},
	{"delete", "DELETE"},
	{"update", "UPDATE"},
};

static const char *
wrapper_stage(const xreq_t *r)
{
	size_t i;

	if (strcmp(r->kind, "findAndModify") == 0)
		return r->is_remove ? "DELETE" : "UPDATE";
	for (i = 0; i < sizeof(wrap_table) / sizeof(wrap_table[0]); i++)
		if (strcmp(wrap_table[i].kind, r->kind) == 0)
			return wrap_table[i].stage;
	return NULL;
}

static void
append_plan(const plan_exec_t *x, const xreq_t *r, bool es, int64_t n, bson_t *out)
{
	const char *wrap = wrapper_stage(r);
	bson_t in;

	if (r->fast_count) {
		BSON_APPEND_UTF8(out, "stage", "RECORD_STORE_FAST_COUNT");
		if (es) {
			BSON_APPEND_INT32(out, "nReturned", 0);
			BSON_APPEND_INT32(out, "executionTimeMillisEstimate", 0);
			BSON_APPEND_INT32(out, "works", 1);
			BSON_APPEND_INT32(out, "advanced", 0);
			BSON_APPEND_INT32(out, "needTime", 0);
			BSON_APPEND_INT32(out, "needYield", 0);
			BSON_APPEND_INT32(out, "saveState", 0);
			BSON_APPEND_INT32(out, "restoreState", 0);
			BSON_APPEND_BOOL(out, "isEOF", true);
			append_count(out, "nCounted", n);
			append_count(out, "nSkipped", 0);
		}
		return;
	}

	if (wrap == NULL) {
		plan_exec_explain_append(x, es, out);
		return;
	}
	BSON_APPEND_UTF8(out, "stage", wrap);
	if (es) {
		BSON_APPEND_INT32(out, "nReturned", 0);
		BSON_APPEND_INT32(out, "executionTimeMillisEstimate", 0);
		if (!strcmp(wrap, "COUNT")) {
			append_count(out, "nCounted", n);
			append_count(out, "nSkipped", 0);
		} else if (!strcmp(wrap, "DELETE")) {
			append_count(out, "nWouldDelete", n);
		} else {
			append_count(out, "nMatched", n);
		}
	}
	BSON_APPEND_DOCUMENT_BEGIN(out, "inputStage", &in);
	plan_exec_explain_append(x, es, &in);
	bson_append_document_end(out, &in);
}

static int
explain_aggregate(cmd_t *c, const bson_t *inner, terr_t *err)
{
	bson_t body = BSON_INITIALIZER;
	bson_iter_t it;
	cmd_t sub = *c;
	int ret;

	bson_iter_init(&it, inner);
	while (bson_iter_next(&it))
		if (strcmp(bson_iter_key(&it), "explain") != 0 && strcmp(bson_iter_key(&it), "cursor") != 0)
			bson_append_iter(&body, bson_iter_key(&it), -1, &it);
	BSON_APPEND_BOOL(&body, "explain", true);
	/* the verbosity travels in an internal field (default: allPlansExecution) */
	if (bson_iter_init_find(&it, c->body, "verbosity") && BSON_ITER_HOLDS_UTF8(&it))
		bson_append_iter(&body, "$_explainVerbosity", -1, &it);
	else
		BSON_APPEND_UTF8(&body, "$_explainVerbosity", "allPlansExecution");
	sub.body = &body;
	sub.name = "aggregate";
	bson_iter_init(&sub.first, &body);
	bson_iter_next(&sub.first);
	ret = cmd_aggregate(&sub, err);
	bson_destroy(&body);
	return ret;
}

CMD_HANDLER(cmd_explain)
{
	static const char *const fields[] = {"verbosity", NULL};
	static const char *const kinds[] = {"find", "count", "distinct", "delete", "update", "findAndModify",
		"aggregate", NULL};
	bson_t inner, qp, cmdcopy;
	bson_iter_t it;
	xreq_t r;
	verbosity_t verb = VERB_ALL;
	plan_request_t req;
	plan_exec_t *x = NULL;
	match_options_t mo = {0};
	storage_session_t *s;
	bool has_filter_hint = false;
	const char *const *k;
	int64_t n = 0, t0;
	char ns[512];
	int ret = -1, rc;

	memset(&req, 0, sizeof(req));
	if (!sub_doc(&c->first, &inner))
		return terr_set(err, TERR_FAILED_TO_PARSE, "explain command requires a nested object");
	ERR(cmd_check_fields(c, fields, err));
	if (bson_iter_init_find(&it, c->body, "verbosity")) {
		const char *v = BSON_ITER_HOLDS_UTF8(&it) ? bson_iter_utf8(&it, NULL) : "";
		if (!strcmp(v, "queryPlanner"))
			verb = VERB_PLANNER;
		else if (!strcmp(v, "executionStats"))
			verb = VERB_EXEC;
		else if (!strcmp(v, "allPlansExecution"))
			verb = VERB_ALL;
		else {
			ret = terr_set(err, TERR_BAD_VALUE,
			    "Enumeration value '%s' for field 'explain.verbosity' is not a valid value.", v);
			goto err;
		}
	}
	if (!bson_iter_init(&it, &inner) || !bson_iter_next(&it)) {
		ret = terr_set(err, TERR_FAILED_TO_PARSE, "explain command requires a nested object");
		goto err;
	}
	for (k = kinds; *k != NULL; k++)
		if (strcmp(*k, bson_iter_key(&it)) == 0)
			break;
	if (*k == NULL) {
		ret = terr_set(err, TERR_COMMAND_NOT_FOUND, "Explain failed due to unknown command: %s",
		    bson_iter_key(&it));
		goto err;
	}
	if (strcmp(*k, "aggregate") == 0)
		return explain_aggregate(c, &inner, err);
	ERR(parse_inner(&inner, &r, err));
	if (storage_coll_get(c->engine->st, c->db, r.coll, &req.coll, NULL) == 0 && cmd_ts_is(req.coll) &&
	    !bson_has_field(&inner, "rawData") &&
	    (strcmp(r.kind, "find") == 0 || strcmp(r.kind, "count") == 0 || strcmp(r.kind, "distinct") == 0)) {
		/* a time-series read: the aggregate over its buckets */
		bson_t agg;
		ERR(view_read_as_aggregate(r.kind, &inner, r.coll, &agg, err));
		ret = explain_aggregate(c, &agg, err);
		bson_destroy(&agg);
		goto err;
	}
	if (req.coll == NULL && view_exists(c, c->db, r.coll)) {
		/* a view: reads are explained as the aggregate they become,
		 * writes are refused */
		bson_t agg;
		if (strcmp(r.kind, "find") != 0 && strcmp(r.kind, "count") != 0 && strcmp(r.kind, "distinct") != 0) {
			ret = view_refuse(c, c->db, r.coll, err);
			goto err;
		}
		ERR(view_read_as_aggregate(r.kind, &inner, r.coll, &agg, err));
		ret = explain_aggregate(c, &agg, err);
		bson_destroy(&agg);
		goto err;
	}
	r.fast_count = strcmp(r.kind, "count") == 0 && (!r.has_filter || bson_empty(&r.filter)) && !r.has_hint &&
	    r.skip == 0 && r.limit == 0;
	cmd_ns(ns, sizeof(ns), c->db, r.coll);
	req.collation = req.coll != NULL ? req.coll->collation : NULL;
	if (r.has_collation) {
		char path[64];
		bson_snprintf(path, sizeof(path), "%s.collation", r.kind);
		if (r.collation.value_type != BSON_TYPE_DOCUMENT) {
			ret = terr_set(err, TERR_TYPE_MISMATCH,
			    "BSON field '%s' is the wrong type '%s', expected type 'object'", path,
			    bv_type_name(r.collation.value_type));
			goto err;
		}
		ERR(coll_parse_value(&r.collation, "collation", &req.collation, err));
	}
	mo.coll = req.collation;
	if (r.has_let)
		mo.let = &r.let;
	if (r.has_filter)
		ERR(match_compile(&r.filter, &mo, &req.match, err));
	if (strcmp(r.kind, "find") == 0 || strcmp(r.kind, "findAndModify") == 0) {
		req.sort = r.has_sort ? &r.sort : NULL;
		req.projection = strcmp(r.kind, "find") == 0 && r.has_proj ? &r.proj : NULL;
	}
	req.count = strcmp(r.kind, "count") == 0;
	if (strcmp(r.kind, "distinct") == 0)
		req.distinct_key = r.key;
	if (strcmp(r.kind, "find") == 0) {
		req.min = r.has_min ? &r.min : NULL;
		req.max = r.has_max ? &r.max : NULL;
		/* a tailable find is planned as it runs: a collection scan */
		if (bson_iter_init_find(&it, &inner, "tailable") && bson_iter_as_bool(&it) && req.coll != NULL) {
			if (!req.coll->capped) {
				ret = terr_set(err, TERR_BAD_VALUE,
				    "error processing query: ns=%s planner returned error :: caused by :: tailable cursor requested on non capped collection",
				    ns);
				goto err;
			}
			req.tailable = true;
		}
	}
	/* find's allowDiskUse, else (and for the sort of an update) the
	 * server's allowDiskUseByDefault */
	req.allow_disk_use = r.has_allow_disk_use && strcmp(r.kind, "find") == 0 ?
	    r.allow_disk_use : atomic_load(&c->engine->allow_disk_use_by_default);
	req.spill_dir = c->engine->tmp_dir;
	req.sort_memory_limit = cmd_sort_memory_limit(c);
	req.skip = r.skip;
	req.limit = r.limit;
	req.let = r.has_let ? &r.let : NULL;
	req.hint = r.has_hint ? &r.hint : NULL;
	/* an index filter for the shape (cmd_plancache.c): find's query, sort
	 * and projection; count's and distinct's query alone */
	if ((strcmp(r.kind, "find") == 0 || strcmp(r.kind, "count") == 0 || strcmp(r.kind, "distinct") == 0) &&
	    !r.has_min && !r.has_max &&
	    cmd_plan_filter_mask(c, req.coll, r.has_filter ? &r.filter : NULL,
	        strcmp(r.kind, "find") == 0 && r.has_sort ? &r.sort : NULL,
	        strcmp(r.kind, "find") == 0 && r.has_proj ? &r.proj : NULL, &req.index_filter)) {
		has_filter_hint = true;
		req.has_index_filter = true;
		req.hint = cmd_plan_filter_keep_hint(req.hint);
	}
	ret = plan_exec_new(&req, &x, err);
	req.coll = NULL;
	req.match = NULL;
	if (ret != 0)
		goto err;
	ret = -1;
	t0 = cmd_now_us();
	if ((s = client_session(c->client, err)) == NULL)
		goto err;
	if (plan_exec_choose(x, s, err) != 0)
		goto err;
	if (verb != VERB_PLANNER) {
		bson_t doc;
		while ((rc = plan_exec_next(x, s, &doc, err)) == 1)
			n++;
		if (rc < 0)
			goto err;
	}
	BSON_APPEND_UTF8(c->reply, "explainVersion", "1");
	BSON_APPEND_DOCUMENT_BEGIN(c->reply, "queryPlanner", &qp);
	BSON_APPEND_UTF8(&qp, "namespace", ns);
	{
		bson_t *parsed = NULL, empty = BSON_INITIALIZER;
		bson_t winning;
		match_t *m2 = NULL;
		if (r.has_filter && match_compile(&r.filter, &mo, &m2, NULL) == 0)
			parsed = match_to_bson(m2);
		match_free(m2);
		BSON_APPEND_DOCUMENT(&qp, "parsedQuery", parsed != NULL ? parsed : &empty);
		if (parsed != NULL)
			bson_destroy(parsed);
		bson_destroy(&empty);
		BSON_APPEND_BOOL(&qp, "indexFilterSet", has_filter_hint);
		BSON_APPEND_BOOL(&qp, "maxIndexedOrSolutionsReached", false);
		BSON_APPEND_BOOL(&qp, "maxIndexedAndSolutionsReached", false);
		BSON_APPEND_BOOL(&qp, "maxScansToExplodeReached", false);
		BSON_APPEND_BOOL(&qp, "prunedSimilarIndexes", false);
		BSON_APPEND_DOCUMENT_BEGIN(&qp, "winningPlan", &winning);
		BSON_APPEND_BOOL(&winning, "isCached", false);
		append_plan(x, &r, false, n, &winning);
		bson_append_document_end(&qp, &winning);
		{
			bson_t rej;
			BSON_APPEND_ARRAY_BEGIN(&qp, "rejectedPlans", &rej);
			if (wrapper_stage(&r) == NULL)
				plan_exec_rejected_append(x, &rej);
			bson_append_array_end(&qp, &rej);
		}
	}
	bson_append_document_end(c->reply, &qp);
	if (verb != VERB_PLANNER) {
		const plan_stats_t *st = plan_exec_stats(x);
		bson_t es, stages;
		BSON_APPEND_DOCUMENT_BEGIN(c->reply, "executionStats", &es);
		BSON_APPEND_BOOL(&es, "executionSuccess", true);
		append_count(&es, "nReturned", wrapper_stage(&r) != NULL ? 0 : n);
		append_count(&es, "executionTimeMillis", (cmd_now_us() - t0) / 1000);
		append_count(&es, "totalKeysExamined", r.fast_count ? 0 : st->keys_examined);
		append_count(&es, "totalDocsExamined", r.fast_count ? 0 : st->docs_examined);
		BSON_APPEND_DOCUMENT_BEGIN(&es, "executionStages", &stages);
		append_plan(x, &r, true, n, &stages);
		bson_append_document_end(&es, &stages);
		if (verb == VERB_ALL) {
			bson_t all;
			BSON_APPEND_ARRAY_BEGIN(&es, "allPlansExecution", &all);
			plan_exec_all_plans_append(x, &all);
			bson_append_array_end(&es, &all);
		}
		bson_append_document_end(c->reply, &es);
	}
	BSON_APPEND_DOCUMENT_BEGIN(c->reply, "command", &cmdcopy);
	bson_iter_init(&it, &inner);
	while (bson_iter_next(&it))
		if (strcmp(bson_iter_key(&it), "$db") != 0)
			bson_append_iter(&cmdcopy, bson_iter_key(&it), -1, &it);
	BSON_APPEND_UTF8(&cmdcopy, "$db", c->db);
	bson_append_document_end(c->reply, &cmdcopy);
	cmd_explain_append_server(c->reply);
	ret = 0;
err:
	if (req.coll != NULL)
		storage_coll_release(req.coll);
	match_free(req.match);
	plan_exec_free(x);
	return ret;
}
