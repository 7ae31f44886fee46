/*
 * stage_stats.c -- stages that describe the collection instead of reading
 * it: $collStats (count, storageStats; latencyStats and queryExecStats answer 238) and
 * $indexStats; plus the rows of stages MongoDB has and Tamga does not build
 * yet, so they fail with 238 NotImplemented instead of 40324.
 */
#include "agg/agg_private.h"

#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bson/value.h"
#include "common/mem.h"
#include "query/plan.h"

typedef struct stats_plan {
	bool count, storage;
	int64_t scale;
} stats_plan_t;

typedef struct stats_state {
	bool done;
	int i;                    /* $indexStats: next index */
	storage_coll_t *coll;
	bson_t out;
} stats_state_t;

/* Index usage counters (plan_index_ops) count from process start, so that
 * is $indexStats' accesses.since. */
static int64_t counters_since_ms;

__attribute__((constructor)) static void
record_counters_start(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	counters_since_ms = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int
collstats_parse(agg_pctx_t *pc, const bson_value_t *spec, terr_t *err)
{
	stats_plan_t *sp;
	bson_t d;
	bson_iter_t it;

	if (spec->value_type != BSON_TYPE_DOCUMENT)
		return terr_set(err, TERR_TYPE_MISMATCH,
		    "BSON field '$collStats' is the wrong type '%s', expected type 'object'",
		    bv_type_name(spec->value_type));
	sp = bson_malloc0(sizeof(*sp));
	sp->scale = 1;
	agg_value_doc(spec, &d);
	bson_iter_init(&it, &d);
	while (bson_iter_next(&it)) {
		const char *k = bson_iter_key(&it);
		if (!BSON_ITER_HOLDS_DOCUMENT(&it)) {
			bson_free(sp);
			return terr_set(err, TERR_TYPE_MISMATCH,
			    "BSON field '$collStats.%s' is the wrong type '%s', expected type 'object'", k,
			    bv_type_name(bson_iter_type(&it)));
		}
		if (strcmp(k, "count") == 0) {
			sp->count = true;
		} else if (strcmp(k, "storageStats") == 0) {
			bson_iter_t s;
			sp->storage = true;
			if (bson_iter_recurse(&it, &s) && bson_iter_find(&s, "scale")) {
				if (!bv_is_number(bson_iter_value(&s)) || bson_iter_as_int64(&s) < 1) {
					bson_free(sp);
					return terr_set(err, 51024,
					    "BSON field 'scale' value must be >= 1, actual value '%lld'",
					    (long long)bson_iter_as_int64(&s));
				}
				sp->scale = bson_iter_as_int64(&s);
			}
		} else if (strcmp(k, "latencyStats") == 0 || strcmp(k, "queryExecStats") == 0) {
			/* not tracked yet: refuse rather than report zeros */
			bson_free(sp);
			return terr_set(err, TERR_NOT_IMPLEMENTED,
			    "$collStats %s is not supported by Tamga yet", k);
		} else {
			bson_free(sp);
			return terr_set(err, 40415, "BSON field '$collStats.%s' is an unknown field.", k);
		}
	}
	agg_pctx_add(pc, &agg_stages_stats[0], sp, agg_explain_doc("$collStats", spec));
	return 0;
}

static int
indexstats_parse(agg_pctx_t *pc, const bson_value_t *spec, terr_t *err)
{
	bson_t d;

	if (spec->value_type != BSON_TYPE_DOCUMENT || !agg_value_doc(spec, &d) || !bson_empty(&d))
		return terr_set(err, 28803, "The $indexStats stage specification must be an empty object");
	agg_pctx_add(pc, &agg_stages_stats[1], bson_malloc0(sizeof(stats_plan_t)),
	    agg_explain_doc("$indexStats", spec));
	return 0;
}

static int
stats_open(agg_rt_t *rt, terr_t *err)
{
	stats_state_t *ss = tm_alloc0(sizeof(*ss));
	const agg_host_t *h = rt->x->p->host;

	bson_init(&ss->out);
	rt->state = ss;
	if (h != NULL && h->coll != NULL)
		storage_coll_get(h->st, h->db, h->coll, &ss->coll, NULL);
	return 0;
}

static void
stats_close(agg_rt_t *rt)
{
	stats_state_t *ss = rt->state;

	storage_coll_release(ss->coll);
	bson_destroy(&ss->out);
	bson_free(ss);
}

static void
append_host(bson_t *b)
{
	char host[256];

	if (gethostname(host, sizeof(host) - 16) != 0)
		strcpy(host, "localhost");
	host[sizeof(host) - 16] = '\0';
	strcat(host, ":27017");
	BSON_APPEND_UTF8(b, "host", host);
}

static int64_t
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int
collstats_next(agg_rt_t *rt, const bson_t **out, terr_t *err)
{
	const stats_plan_t *sp = rt->st->plan;
	stats_state_t *ss = rt->state;
	const agg_host_t *h = rt->x->p->host;
	int64_t count = 0, data = 0, storage = 0;
	char ns[512];

	if (ss->done)
		return 0;
	ss->done = true;
	if (ss->coll == NULL)
		return terr_set(err, TERR_NAMESPACE_NOT_FOUND, "Unable to retrieve storageStats in $collStats stage :: caused by :: Collection [%s.%s] not found.",
		    h->db, h->coll);
	RET(storage_coll_stats(h->st, rt->x->s, ss->coll, &count, &data, &storage, err));
	snprintf(ns, sizeof(ns), "%s.%s", h->db, h->coll);
	bson_reinit(&ss->out);
	BSON_APPEND_UTF8(&ss->out, "ns", ns);
	append_host(&ss->out);
	BSON_APPEND_DATE_TIME(&ss->out, "localTime", now_ms());
	if (sp->storage) {
		bson_t s, sizes;
		int64_t idx_total = 0;
		bson_append_document_begin(&ss->out, "storageStats", -1, &s);
		BSON_APPEND_INT64(&s, "size", data / sp->scale);
		BSON_APPEND_INT64(&s, "count", count);
		if (count > 0)
			BSON_APPEND_INT64(&s, "avgObjSize", data / count);
		BSON_APPEND_INT64(&s, "numOrphanDocs", 0);
		BSON_APPEND_INT64(&s, "storageSize", storage / sp->scale);
		BSON_APPEND_INT64(&s, "freeStorageSize", 0);
		BSON_APPEND_BOOL(&s, "capped", ss->coll->capped);
		if (ss->coll->capped) {
			/* mongod's appendNumber: an int when it fits */
			int64_t mx = ss->coll->capped_max, ms = ss->coll->capped_size / sp->scale;
			if (mx <= INT32_MAX)
				BSON_APPEND_INT32(&s, "max", (int32_t)mx);
			else
				BSON_APPEND_INT64(&s, "max", mx);
			if (ms <= INT32_MAX)
				BSON_APPEND_INT32(&s, "maxSize", (int32_t)ms);
			else
				BSON_APPEND_INT64(&s, "maxSize", ms);
		}
		BSON_APPEND_INT32(&s, "nindexes", ss->coll->nindexes);
		bson_append_document_begin(&s, "indexSizes", -1, &sizes);
		for (int i = 0; i < ss->coll->nindexes; i++) {
			/* per-index sizes are not tracked yet: a page each */
			BSON_APPEND_INT64(&sizes, ss->coll->indexes[i].name, 4096 / sp->scale);
			idx_total += 4096;
		}
		bson_append_document_end(&s, &sizes);
		BSON_APPEND_INT64(&s, "totalIndexSize", idx_total / sp->scale);
		BSON_APPEND_INT64(&s, "totalSize", (storage + idx_total) / sp->scale);
		BSON_APPEND_INT64(&s, "scaleFactor", sp->scale);
		bson_append_document_end(&ss->out, &s);
	}
	if (sp->count)
		BSON_APPEND_INT64(&ss->out, "count", count);
	*out = &ss->out;
	return 1;
}

static int
indexstats_next(agg_rt_t *rt, const bson_t **out, terr_t *err)
{
	stats_state_t *ss = rt->state;
	const storage_index_t *ix;
	bson_t acc;

	if (ss->coll == NULL || ss->i >= ss->coll->nindexes)
		return 0;
	ix = &ss->coll->indexes[ss->i++];
	bson_reinit(&ss->out);
	BSON_APPEND_UTF8(&ss->out, "name", ix->name);
	if (ix->key != NULL)
		BSON_APPEND_DOCUMENT(&ss->out, "key", ix->key);
	append_host(&ss->out);
	bson_append_document_begin(&ss->out, "accesses", -1, &acc);
	BSON_APPEND_INT64(&acc, "ops", plan_index_ops(ss->coll, ix));
	BSON_APPEND_DATE_TIME(&acc, "since", counters_since_ms);
	bson_append_document_end(&ss->out, &acc);
	if (ix->spec != NULL)
		BSON_APPEND_DOCUMENT(&ss->out, "spec", ix->spec);
	*out = &ss->out;
	return 1;
}

/* Stages MongoDB has that are not built here yet. */
static int
not_built_parse(agg_pctx_t *pc, const bson_value_t *spec, terr_t *err)
{
	return terr_set(err, TERR_NOT_IMPLEMENTED, "The %s stage is not supported by Tamga yet", pc->name);
}

/* $planCacheStats: Tamga caches no plans, so there is nothing to list. */
static int
plancache_parse(agg_pctx_t *pc, const bson_value_t *spec, terr_t *err)
{
	bson_t d;
	bson_iter_t it;

	if (spec->value_type != BSON_TYPE_DOCUMENT)
		return terr_set(err, TERR_FAILED_TO_PARSE,
		    "$planCacheStats value must be an object. Found: %s", bv_type_name(spec->value_type));
	agg_value_doc(spec, &d);
	bson_iter_init(&it, &d);
	while (bson_iter_next(&it))
		if (strcmp(bson_iter_key(&it), "allHosts") != 0)
			return terr_set(err, 40415, "BSON field '$planCacheStats.%s' is an unknown field.",
			    bson_iter_key(&it));
	agg_pctx_add(pc, &agg_stages_stats[3], NULL, agg_explain_doc("$planCacheStats", spec));
	return 0;
}

static int
nothing_next(agg_rt_t *rt, const bson_t **out, terr_t *err)
{
	return 0;
}

/* ---- $listLocalSessions ---------------------------------------------------- */

typedef struct sessions_state {
	bson_iter_t it;
	bson_t cur;
} sessions_state_t;

/* The spec of $listLocalSessions and $listSessions (mongod's
 * ListSessionsSpec IDL; name is the stage's, for the messages). */
static int
sessions_spec_check(const char *name, const bson_value_t *spec, bson_t *d, terr_t *err)
{
	bson_iter_t it, u, f;
	bool all = false, has_users = false;

	if (spec->value_type != BSON_TYPE_DOCUMENT)
		return terr_set(err, TERR_TYPE_MISMATCH,
		    "BSON field '%s' is the wrong type '%s', expected type 'object'", name,
		    bv_type_name(spec->value_type));
	agg_value_doc(spec, d);
	bson_iter_init(&it, d);
	while (bson_iter_next(&it)) {
		const char *k = bson_iter_key(&it);
		if (strcmp(k, "allUsers") == 0) {
			if (!BSON_ITER_HOLDS_BOOL(&it))
				return terr_set(err, TERR_TYPE_MISMATCH,
				    "BSON field '%s.allUsers' is the wrong type '%s', expected type 'bool'", name,
				    bv_type_name(bson_iter_type(&it)));
			all = bson_iter_bool(&it);
		} else if (strcmp(k, "users") == 0) {
			int i = 0;
			if (!BSON_ITER_HOLDS_ARRAY(&it))
				return terr_set(err, TERR_TYPE_MISMATCH,
				    "BSON field '%s.users' is the wrong type '%s', expected type 'array'", name,
				    bv_type_name(bson_iter_type(&it)));
			bson_iter_recurse(&it, &u);
			while (bson_iter_next(&u)) {
				bool has_user = false, has_db = false;
				if (!BSON_ITER_HOLDS_DOCUMENT(&u))
					return terr_set(err, TERR_TYPE_MISMATCH,
					    "BSON field '%s.users.%d' is the wrong type '%s', expected type 'object'",
					    name, i, bv_type_name(bson_iter_type(&u)));
				bson_iter_recurse(&u, &f);
				while (bson_iter_next(&f)) {
					const char *fk = bson_iter_key(&f);
					if (strcmp(fk, "user") != 0 && strcmp(fk, "db") != 0)
						return terr_set(err, 40415,
						    "BSON field '%s.users.%s' is an unknown field.", name, fk);
					if (!BSON_ITER_HOLDS_UTF8(&f))
						return terr_set(err, TERR_TYPE_MISMATCH,
						    "BSON field '%s.users.%s' is the wrong type '%s', expected type 'string'",
						    name, fk, bv_type_name(bson_iter_type(&f)));
					if (fk[0] == 'u')
						has_user = true;
					else
						has_db = true;
				}
				if (!has_user || !has_db)
					return terr_set(err, 40414,
					    "BSON field '%s.users.%s' is missing but a required field", name,
					    has_user ? "db" : "user");
				i++;
			}
			has_users = i > 0;
		} else if (strcmp(k, "$_internalPredicate") != 0) {
			return terr_set(err, 40415, "BSON field '%s.%s' is an unknown field.", name, k);
		}
	}
	if (all && has_users)
		return terr_set(err, TERR_UNSUPPORTED_FORMAT,
		    "%s may not specify {allUsers:true} and {users:[...]} at the same time", name);
	return 0;
}

/* The sessions are read from the host's cache while the pipeline is parsed
 * (the aggregate's own moment); the plan is that array. */
static int
local_sessions_parse(agg_pctx_t *pc, const bson_value_t *spec, terr_t *err)
{
	bson_t d, *docs;

	RET(sessions_spec_check("$listLocalSessions", spec, &d, err));
	if (pc->host != NULL && pc->host->coll != NULL)
		return terr_set(err, TERR_INVALID_NAMESPACE,
		    "$listLocalSessions must be run against the database with {aggregate: 1}, not a collection");
	if (pc->host == NULL || pc->host->list_local_sessions == NULL)
		return terr_set(err, TERR_NOT_IMPLEMENTED, "The $listLocalSessions stage is not supported here");
	docs = bson_new();
	pc->host->list_local_sessions(pc->host->ctx, &d, docs);
	agg_pctx_add(pc, &agg_stages_stats[6], docs, agg_explain_doc("$listLocalSessions", spec));
	return 0;
}

/* ---- $listSessions ---------------------------------------------------------- */

/* mongod's $listSessions: the rows of config.system.sessions of the users
 * named, as the $match on _id.uid it stands for (the host builds the filter:
 * the uids are hashes of user names it knows). */
static int
list_sessions_parse(agg_pctx_t *pc, const bson_value_t *spec, terr_t *err)
{
	bson_t d, filter;
	bson_value_t fv;
	int rc;

	RET(sessions_spec_check("$listSessions", spec, &d, err));
	if (pc->host == NULL || pc->host->db == NULL || pc->host->coll == NULL ||
	    strcmp(pc->host->db, "config") != 0 || strcmp(pc->host->coll, "system.sessions") != 0)
		return terr_set(err, TERR_INVALID_NAMESPACE, "$listSessions may only be run against config.system.sessions");
	if (pc->host->list_sessions_filter == NULL)
		return terr_set(err, TERR_NOT_IMPLEMENTED, "The $listSessions stage is not supported here");
	bson_init(&filter);
	pc->host->list_sessions_filter(pc->host->ctx, &d, &filter);
	fv.value_type = BSON_TYPE_DOCUMENT;
	fv.value.v_doc.data = (uint8_t *)bson_get_data(&filter);
	fv.value.v_doc.data_len = filter.len;
	rc = agg_stages_basic[0].parse(pc, &fv, err);   /* $match */
	bson_destroy(&filter);
	return rc;
}

static int
local_sessions_open(agg_rt_t *rt, terr_t *err)
{
	sessions_state_t *ss = tm_alloc0(sizeof(*ss));

	bson_iter_init(&ss->it, rt->st->plan);
	rt->state = ss;
	return 0;
}

static int
local_sessions_next(agg_rt_t *rt, const bson_t **out, terr_t *err)
{
	sessions_state_t *ss = rt->state;
	const uint8_t *data;
	uint32_t len;

	if (!bson_iter_next(&ss->it) || !BSON_ITER_HOLDS_DOCUMENT(&ss->it))
		return 0;
	bson_iter_document(&ss->it, &len, &data);
	bson_init_static(&ss->cur, data, len);
	*out = &ss->cur;
	return 1;
}

static void
local_sessions_close(agg_rt_t *rt)
{
	bson_free(rt->state);
	rt->state = NULL;
}

static void
local_sessions_free(void *plan)
{
	if (plan != NULL)
		bson_destroy(plan);
}

/* A standalone mongod without mongot answers these with its own errors. */
static int
standalone_parse(agg_pctx_t *pc, const bson_value_t *spec, terr_t *err)
{
	return terr_set(err, 31082,
	    "Using $search and $vectorSearch aggregation stages requires additional configuration. Please connect to Atlas or an AtlasCLI local deployment to enable. For more information on how to connect, see https://dochub.mongodb.org/core/atlas-cli-deploy-local-reqs");
}

/* $listSearchIndexes parses, and fails when run (with mongod's prefix). */
static int
search_indexes_parse(agg_pctx_t *pc, const bson_value_t *spec, terr_t *err)
{
	if (spec->value_type != BSON_TYPE_DOCUMENT)
		return terr_set(err, TERR_TYPE_MISMATCH,
		    "BSON field '$listSearchIndexes' is the wrong type '%s', expected type 'object'",
		    bv_type_name(spec->value_type));
	agg_pctx_add(pc, &agg_stages_stats[2], NULL, agg_explain_doc("$listSearchIndexes", spec));
	return 0;
}

static int
search_indexes_next(agg_rt_t *rt, const bson_t **out, terr_t *err)
{
	return terr_set(err, TERR_COMMAND_NOT_SUPPORTED, "Search index commands are only supported with Atlas.");
}

static void
plain_free(void *plan)
{
	bson_free(plan);
}

const agg_stage_def_t agg_stages_stats[] = {
	{"$collStats", collstats_parse, stats_open, collstats_next, stats_close, plain_free,
	    AGG_F_FIRST | AGG_F_NOT_IN_FACET},
	{"$indexStats", indexstats_parse, stats_open, indexstats_next, stats_close, plain_free,
	    AGG_F_FIRST | AGG_F_NOT_IN_FACET},
	{"$listSearchIndexes", search_indexes_parse, NULL, search_indexes_next, NULL, NULL, AGG_F_FIRST},
	{"$planCacheStats", plancache_parse, NULL, nothing_next, NULL, NULL, AGG_F_FIRST | AGG_F_NOT_IN_FACET},
	{"$geoNear", not_built_parse},
	{"$currentOp", not_built_parse},
	{"$listLocalSessions", local_sessions_parse, local_sessions_open, local_sessions_next, local_sessions_close,
	    local_sessions_free, AGG_F_FIRST | AGG_F_NO_COLL | AGG_F_NOT_IN_FACET | AGG_F_NOT_IN_LOOKUP},
	/* parsed into the $match it stands for (no stage of its own at run time) */
	{"$listSessions", list_sessions_parse, NULL, NULL, NULL, NULL, AGG_F_FIRST | AGG_F_NOT_IN_FACET |
	    AGG_F_NOT_IN_LOOKUP},
	{"$search", standalone_parse},
	{"$searchMeta", standalone_parse},
	{"$vectorSearch", standalone_parse},
	{"$shardedDataDistribution", not_built_parse},
	{"$listSampledQueries", not_built_parse},
	{"$querySettings", not_built_parse},
	{"$listClusterCatalog", not_built_parse},
	{NULL},
};
