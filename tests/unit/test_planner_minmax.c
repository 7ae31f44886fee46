/*
 * test_planner_minmax.c -- find's min/max through the executor (the cases
 * of mongod's jstests/core/query/minmax.js: compound ascending and mixed
 * direction indexes, single bounds, scan order, and the 291 / 51174 /
 * 51175 / 51176 errors), and find sorts past the 100 MB limit: 292
 * without allowDiskUse, spilled to the spill directory with it; trial
 * runs among candidate plans (explain's winner and allPlansExecution);
 * count's COUNT_SCAN and distinct's DISTINCT_SCAN; keygen's multikey paths.
 */
#include "tt.h"

#include <sys/stat.h>

#include "bson/path.h"
#include "bson/value.h"
#include "commands/commands_private.h"
#include "common/mem.h"
#include "query/keygen.h"
#include "query/plan.h"

static engine_t *eng;
static client_t *cl;
static char *spill;

static int
run_code(const char *json)
{
	bson_t *cmd = tt_json(json);
	bson_t *reply = tm_bson_array_new(1);
	int rc = engine_run_command(eng, cl, "test", cmd, reply, NULL);

	bson_destroy(cmd);
	bson_destroy(reply);
	bson_free(reply);
	return rc;
}

/* Run find on coll with min/max/hint/sort (JSON or NULL); return the
 * documents' `field` values joined by ',' (numbers), "ERR <code>", and the
 * explain's winning plan stages when stages is not NULL. */
static char *
mm(const char *coll, const char *min, const char *max, const char *hint, const char *sort,
   const char *field, char **stages)
{
	bson_t *bmin = min ? tt_json(min) : NULL, *bmax = max ? tt_json(max) : NULL;
	bson_t *bh = NULL, *bs = sort ? tt_json(sort) : NULL;
	bson_iter_t hit;
	plan_request_t req;
	plan_exec_t *x = NULL;
	terr_t err = TERR_INIT;
	storage_session_t *ss = client_session(cl, &err);
	bson_string_t *out = bson_string_new("");
	bson_t doc;
	int rc;

	memset(&req, 0, sizeof(req));
	storage_coll_get(engine_storage(eng), "test", coll, &req.coll, NULL);
	if (hint != NULL) {
		char *w = bson_strdup_printf("{\"h\": %s}", hint);
		bh = tt_json(w);
		bson_free(w);
		bson_iter_init_find(&hit, bh, "h");
		req.hint = bson_iter_value(&hit);
	}
	req.min = bmin;
	req.max = bmax;
	req.sort = bs;
	if (plan_exec_new(&req, &x, &err) != 0) {
		bson_string_append_printf(out, "ERR %d", err.code);
		goto done;
	}
	while ((rc = plan_exec_next(x, ss, &doc, &err)) == 1) {
		bson_iter_t it;
		if (bson_iter_init_find(&it, &doc, field))
			bson_string_append_printf(out, "%s%g", out->len ? "," : "", bson_iter_as_double(&it));
	}
	if (rc < 0) {
		bson_string_truncate(out, 0);
		bson_string_append_printf(out, "ERR %d", err.code);
	}
	if (stages != NULL) {
		bson_t e = BSON_INITIALIZER;
		plan_exec_explain_append(x, true, &e);
		*stages = bson_as_relaxed_extended_json(&e, NULL);
		bson_destroy(&e);
	}
done:
	plan_exec_free(x);
	terr_clear(&err);
	if (bmin)
		bson_destroy(bmin);
	if (bmax)
		bson_destroy(bmax);
	if (bh)
		bson_destroy(bh);
	if (bs)
		bson_destroy(bs);
	return bson_string_free(out, false);
}

#define MM_EQ(got, want) do { char *g_ = (got); TT_EQ_STR(g_, want); bson_free(g_); } while (0)
#define COUNT_EQ(got, want) do { char *g_ = (got); TT_EQ_INT(count_of(g_), want); bson_free(g_); } while (0)

/* How many values mm() returned (-1 for an error). */
static int
count_of(const char *s)
{
	int n = s[0] ? 1 : 0;

	if (strncmp(s, "ERR", 3) == 0)
		return -1;
	for (; *s; s++)
		n += *s == ',';
	return n;
}

static void
add_data(void)
{
	TT_EQ_INT(run_code("{\"insert\": \"mm\", \"documents\": [{\"a\": 1, \"b\": 1}, {\"a\": 1, \"b\": 2}, "
	    "{\"a\": 2, \"b\": 1}, {\"a\": 2, \"b\": 2}]}"), 0);
}

static void
test_compound(void)
{
	const char *h = "{\"a\": 1, \"b\": 1}";

	run_code("{\"drop\": \"mm\"}");
	TT_EQ_INT(run_code("{\"createIndexes\": \"mm\", \"indexes\": [{\"key\": {\"a\": 1, \"b\": 1}, \"name\": \"a_1_b_1\"}]}"), 0);
	add_data();
	COUNT_EQ(mm("mm", "{\"a\": 1, \"b\": 2}", "{\"a\": 2, \"b\": 1}", h, NULL, "a", NULL), 1);
	COUNT_EQ(mm("mm", "{\"a\": 1, \"b\": 2}", "{\"a\": 2, \"b\": 1.5}", h, NULL, "a", NULL), 2);
	COUNT_EQ(mm("mm", "{\"a\": 1, \"b\": 2}", "{\"a\": 2, \"b\": 2}", h, NULL, "a", NULL), 2);
	COUNT_EQ(mm("mm", "{\"a\": 1, \"b\": 2}", NULL, h, NULL, "a", NULL), 3);
	COUNT_EQ(mm("mm", NULL, "{\"a\": 2, \"b\": 1.5}", h, NULL, "a", NULL), 3);
	COUNT_EQ(mm("mm", "{\"a\": 1, \"b\": 2}", NULL, "\"a_1_b_1\"", NULL, "a", NULL), 3);
	/* a hint is required; $natural is no index */
	MM_EQ(mm("mm", "{\"a\": 1, \"b\": 2}", "{\"a\": 2, \"b\": 1}", NULL, NULL, "a", NULL), "ERR 291");
	MM_EQ(mm("mm", "{\"a\": 1}", NULL, "{\"$natural\": 1}", NULL, "a", NULL), "ERR 291");
	MM_EQ(mm("mm", NULL, "{\"a\": 1}", "{\"$natural\": 1}", NULL, "a", NULL), "ERR 291");
	MM_EQ(mm("mm", "{\"a\": 1}", NULL, "\"nope\"", NULL, "a", NULL), "ERR 2");
	MM_EQ(mm("mm", "{\"a\": 1, \"b\": 2}", "{\"a\": 1, \"b\": 2}", h, NULL, "a", NULL), "ERR 51175");

	run_code("{\"drop\": \"mm\"}");
	TT_EQ_INT(run_code("{\"createIndexes\": \"mm\", \"indexes\": [{\"key\": {\"a\": 1, \"b\": -1}, \"name\": \"a_1_b_-1\"}]}"), 0);
	add_data();
	h = "{\"a\": 1, \"b\": -1}";
	COUNT_EQ(mm("mm", "{\"a\": 1, \"b\": 2}", NULL, h, NULL, "a", NULL), 4);
	COUNT_EQ(mm("mm", NULL, "{\"a\": 2, \"b\": 0.5}", h, NULL, "a", NULL), 4);
	COUNT_EQ(mm("mm", "{\"a\": 2, \"b\": 1}", NULL, h, NULL, "a", NULL), 1);
	COUNT_EQ(mm("mm", NULL, "{\"a\": 1, \"b\": 1.5}", h, NULL, "a", NULL), 1);
	/* shape errors */
	MM_EQ(mm("mm", "{\"a\": 1}", NULL, h, NULL, "a", NULL), "ERR 51174");
	MM_EQ(mm("mm", "{\"b\": 1, \"a\": 1}", NULL, h, NULL, "a", NULL), "ERR 51174");
	MM_EQ(mm("mm", "{\"a\": 1, \"b\": 1}", "{\"a\": 1}", h, NULL, "a", NULL), "ERR 51176");
	MM_EQ(mm("mm", "{\"b\": 1}", "{\"a\": 1, \"b\": 2}", h, NULL, "a", NULL), "ERR 51176");
}

static void
test_order_and_explain(void)
{
	char *st = NULL;
	int i;

	run_code("{\"drop\": \"mo\"}");
	TT_EQ_INT(run_code("{\"createIndexes\": \"mo\", \"indexes\": [{\"key\": {\"a\": 1}, \"name\": \"a_1\"}]}"), 0);
	for (i = 0; i < 10; i++) {
		char *cmd = bson_strdup_printf("{\"insert\": \"mo\", \"documents\": [{\"_id\": %d, \"a\": %d}]}", i, i);
		TT_EQ_INT(run_code(cmd), 0);
		bson_free(cmd);
	}
	MM_EQ(mm("mo", "{\"a\": 6}", "{\"a\": 3}", "{\"a\": 1}", "{\"a\": -1}", "a", NULL), "ERR 51175");
	MM_EQ(mm("mo", "{\"a\": 2}", "{\"a\": 2}", "{\"a\": 1}", NULL, "a", NULL), "ERR 51175");
	MM_EQ(mm("mo", "{\"a\": 2}", "{\"a\": 2}", "{\"a\": 1}", "{\"a\": -1}", "a", NULL), "ERR 51175");
	MM_EQ(mm("mo", "{\"a\": 7}", NULL, "{\"a\": 1}", NULL, "a", NULL), "7,8,9");
	MM_EQ(mm("mo", NULL, "{\"a\": 2}", "{\"a\": 1}", NULL, "a", NULL), "0,1");
	/* the index order reversed is a backward scan, no SORT stage */
	MM_EQ(mm("mo", "{\"a\": 3}", "{\"a\": 6}", "{\"a\": 1}", "{\"a\": -1}", "a", &st), "5,4,3");
	TT_ASSERT(strstr(st, "\"SORT\"") == NULL);
	TT_ASSERT(strstr(st, "\"direction\" : \"backward\"") != NULL);
	TT_ASSERT(strstr(st, "\"indexBounds\" : {  }") != NULL);
	TT_ASSERT(strstr(st, "\"keysExamined\" : 3") != NULL);
	bson_free(st);
	/* another sort is a blocking SORT over the range */
	MM_EQ(mm("mo", "{\"a\": 3}", "{\"a\": 6}", "{\"a\": 1}", "{\"_id\": -1}", "a", &st), "5,4,3");
	TT_ASSERT(strstr(st, "\"SORT\"") != NULL);
	bson_free(st);

	run_code("{\"drop\": \"md\"}");
	TT_EQ_INT(run_code("{\"createIndexes\": \"md\", \"indexes\": [{\"key\": {\"a\": -1}, \"name\": \"a_-1\"}]}"), 0);
	TT_EQ_INT(run_code("{\"insert\": \"md\", \"documents\": [{\"a\": 3}, {\"a\": 4}, {\"a\": 5}]}"), 0);
	MM_EQ(mm("md", "{\"a\": 4}", NULL, "{\"a\": -1}", NULL, "a", NULL), "4,3");
	MM_EQ(mm("md", NULL, "{\"a\": 4}", "{\"a\": -1}", NULL, "a", NULL), "5");
	/* no such collection: no results, no planning */
	MM_EQ(mm("nosuch", "{\"a\": 4}", NULL, NULL, NULL, "a", NULL), "");
}

/* A sort over more than 100 MB: 292 without allowDiskUse, in order with. */
static void
test_spill(void)
{
	char *big = bson_malloc(1024 * 1024 + 1);
	bson_t *cmd, *reply;
	int i, rc;
	plan_request_t req;
	plan_exec_t *x = NULL;
	terr_t err = TERR_INIT;
	storage_session_t *ss;
	bson_t *so = tt_json("{\"k\": -1}");
	bson_t doc;
	int64_t n = 0, last = INT64_MAX;
	bool ordered = true;

	memset(big, 'x', 1024 * 1024);
	big[1024 * 1024] = '\0';
	run_code("{\"drop\": \"sp\"}");
	for (i = 0; i < 110; i++) {
		bson_t docs, d;
		cmd = bson_new();
		BSON_APPEND_UTF8(cmd, "insert", "sp");
		BSON_APPEND_ARRAY_BEGIN(cmd, "documents", &docs);
		BSON_APPEND_DOCUMENT_BEGIN(&docs, "0", &d);
		BSON_APPEND_INT32(&d, "k", (i * 37) % 110);
		BSON_APPEND_UTF8(&d, "pad", big);
		bson_append_document_end(&docs, &d);
		bson_append_array_end(cmd, &docs);
		reply = tm_bson_array_new(1);
		rc = engine_run_command(eng, cl, "test", cmd, reply, NULL);
		TT_EQ_INT(rc, 0);
		bson_destroy(reply);
		bson_free(reply);
		bson_destroy(cmd);
	}
	bson_free(big);
	ss = client_session(cl, &err);
	memset(&req, 0, sizeof(req));
	storage_coll_get(engine_storage(eng), "test", "sp", &req.coll, NULL);
	req.sort = so;
	req.spill_dir = spill;
	TT_EQ_INT(plan_exec_new(&req, &x, &err), 0);
	TT_EQ_INT(plan_exec_next(x, ss, &doc, &err), -1);
	TT_EQ_INT(err.code, 292);
	terr_clear(&err);
	plan_exec_free(x);

	memset(&req, 0, sizeof(req));
	storage_coll_get(engine_storage(eng), "test", "sp", &req.coll, NULL);
	req.sort = so;
	req.allow_disk_use = true;
	req.spill_dir = spill;
	TT_EQ_INT(plan_exec_new(&req, &x, &err), 0);
	while ((rc = plan_exec_next(x, ss, &doc, &err)) == 1) {
		bson_iter_t it;
		int64_t k = bson_iter_init_find(&it, &doc, "k") ? bson_iter_as_int64(&it) : -1;
		if (k > last)
			ordered = false;
		last = k;
		n++;
	}
	TT_EQ_INT(rc, 0);
	TT_EQ_INT(n, 110);
	TT_ASSERT(ordered);
	{
		bson_t e = BSON_INITIALIZER;
		char *j;
		plan_exec_explain_append(x, true, &e);
		j = bson_as_relaxed_extended_json(&e, NULL);
		TT_ASSERT(strstr(j, "\"usedDisk\" : true") != NULL);
		bson_free(j);
		bson_destroy(&e);
	}
	plan_exec_free(x);
	bson_destroy(so);
	run_code("{\"drop\": \"sp\"}");
}

static bson_t *
run_reply(const char *json, int *rc)
{
	bson_t *cmd = tt_json(json);
	bson_t *reply = tm_bson_array_new(1);

	*rc = engine_run_command(eng, cl, "test", cmd, reply, NULL);
	bson_destroy(cmd);
	return reply;
}

static const char *
str_at(const bson_t *doc, const char *path)
{
	bson_iter_t it, f;

	return bson_iter_init(&it, doc) && bson_iter_find_descendant(&it, path, &f) && BSON_ITER_HOLDS_UTF8(&f) ?
	    bson_iter_utf8(&f, NULL) : "";
}

static int64_t
int_at(const bson_t *doc, const char *path)
{
	bson_iter_t it, f;

	return bson_iter_init(&it, doc) && bson_iter_find_descendant(&it, path, &f) ? bson_iter_as_int64(&f) : -999;
}

/* Trial runs: the equality the cost rule prefers loses to a range that
 * reaches EOF sooner; allPlansExecution shows both candidates. */
static void
test_trial_runs(void)
{
	bson_string_t *ins = bson_string_new("{\"insert\": \"tr\", \"documents\": [");
	bson_t *r;
	int i, rc;

	run_code("{\"drop\": \"tr\"}");
	TT_EQ_INT(run_code("{\"createIndexes\": \"tr\", \"indexes\": [{\"key\": {\"a\": 1}, \"name\": \"a_1\"}, "
	    "{\"key\": {\"b\": 1}, \"name\": \"b_1\"}]}"), 0);
	for (i = 0; i < 300; i++)
		bson_string_append_printf(ins, "%s{\"_id\": %d, \"a\": 1, \"b\": %d}", i ? "," : "", i,
		    i % 150 == 7 ? 5 : -1);
	bson_string_append(ins, "]}");
	TT_EQ_INT(run_code(ins->str), 0);
	bson_string_free(ins, true);
	r = run_reply("{\"explain\": {\"find\": \"tr\", \"filter\": {\"a\": 1, \"b\": {\"$gt\": 0}}}, "
	    "\"verbosity\": \"allPlansExecution\"}", &rc);
	TT_EQ_INT(rc, 0);
	TT_EQ_STR(str_at(r, "queryPlanner.winningPlan.inputStage.indexName"), "b_1");
	TT_EQ_STR(str_at(r, "queryPlanner.rejectedPlans.0.inputStage.indexName"), "a_1");
	TT_EQ_INT(int_at(r, "executionStats.nReturned"), 2);
	TT_EQ_INT(int_at(r, "executionStats.totalKeysExamined"), 2);
	TT_EQ_STR(str_at(r, "executionStats.allPlansExecution.0.executionStages.inputStage.indexName"), "a_1");
	TT_EQ_STR(str_at(r, "executionStats.allPlansExecution.1.executionStages.inputStage.indexName"), "b_1");
	TT_EQ_INT(int_at(r, "executionStats.allPlansExecution.1.nReturned"), 2);
	TT_EQ_INT(int_at(r, "executionStats.allPlansExecution.1.executionStages.isEOF"), 1);
	bson_destroy(r);
	bson_free(r);
	/* queryPlanner verbosity races too */
	r = run_reply("{\"explain\": {\"find\": \"tr\", \"filter\": {\"a\": 1, \"b\": {\"$gt\": 0}}}, "
	    "\"verbosity\": \"queryPlanner\"}", &rc);
	TT_EQ_STR(str_at(r, "queryPlanner.winningPlan.inputStage.indexName"), "b_1");
	bson_destroy(r);
	bson_free(r);
	/* the results are the same whichever plan runs, sorted or not */
	r = run_reply("{\"find\": \"tr\", \"filter\": {\"a\": 1, \"b\": {\"$gt\": 0}}, \"sort\": {\"a\": -1, \"_id\": -1}}", &rc);
	TT_EQ_INT(rc, 0);
	TT_EQ_INT(int_at(r, "cursor.firstBatch.0._id"), 157);
	TT_EQ_INT(int_at(r, "cursor.firstBatch.1._id"), 7);
	bson_destroy(r);
	bson_free(r);
	/* a hint skips the race */
	r = run_reply("{\"explain\": {\"find\": \"tr\", \"filter\": {\"a\": 1, \"b\": {\"$gt\": 0}}, \"hint\": \"a_1\"}, "
	    "\"verbosity\": \"allPlansExecution\"}", &rc);
	TT_EQ_STR(str_at(r, "queryPlanner.winningPlan.inputStage.indexName"), "a_1");
	TT_EQ_INT(int_at(r, "executionStats.totalKeysExamined"), 300);
	bson_destroy(r);
	bson_free(r);
}

/* count's COUNT_SCAN and distinct's DISTINCT_SCAN (through explain; the
 * count and distinct commands use them once they pass count/distinct_key). */
static void
test_count_distinct_scans(void)
{
	bson_t *r;
	int rc;

	run_code("{\"drop\": \"cs\"}");
	TT_EQ_INT(run_code("{\"createIndexes\": \"cs\", \"indexes\": [{\"key\": {\"a\": 1}, \"name\": \"a_1\"}, "
	    "{\"key\": {\"c\": 1, \"d\": -1}, \"name\": \"c_1_d_-1\"}, {\"key\": {\"m\": 1}, \"name\": \"m_1\"}]}"), 0);
	TT_EQ_INT(run_code("{\"insert\": \"cs\", \"documents\": ["
	    "{\"_id\": 1, \"a\": 1, \"c\": 1, \"d\": 1, \"m\": [1, 2]}, {\"_id\": 2, \"a\": 1, \"c\": 1, \"d\": 2, \"m\": 3},"
	    "{\"_id\": 3, \"a\": 2, \"c\": 2, \"d\": 1}, {\"_id\": 4, \"a\": 3.5, \"c\": 1, \"d\": 3},"
	    "{\"_id\": 5, \"a\": \"x\", \"c\": 2, \"d\": 2}, {\"_id\": 6, \"a\": 1, \"c\": 3}]}"), 0);
	/* an equality: COUNT over COUNT_SCAN, no document read */
	r = run_reply("{\"explain\": {\"count\": \"cs\", \"query\": {\"a\": 1}}, \"verbosity\": \"executionStats\"}", &rc);
	TT_EQ_INT(rc, 0);
	TT_EQ_STR(str_at(r, "queryPlanner.winningPlan.stage"), "COUNT");
	TT_EQ_STR(str_at(r, "queryPlanner.winningPlan.inputStage.stage"), "COUNT_SCAN");
	TT_EQ_INT(int_at(r, "queryPlanner.winningPlan.inputStage.indexBounds.startKey.a"), 1);
	TT_EQ_INT(int_at(r, "queryPlanner.winningPlan.inputStage.indexBounds.startKeyInclusive"), 1);
	TT_EQ_INT(int_at(r, "executionStats.executionStages.nCounted"), 3);
	TT_EQ_INT(int_at(r, "executionStats.totalKeysExamined"), 3);
	TT_EQ_INT(int_at(r, "executionStats.totalDocsExamined"), 0);
	TT_EQ_INT(int_at(r, "executionStats.executionStages.inputStage.keysExamined"), 3);
	bson_destroy(r);
	bson_free(r);
	/* a range, with skip and limit applied by COUNT */
	r = run_reply("{\"explain\": {\"count\": \"cs\", \"query\": {\"a\": {\"$gt\": 1}}, \"skip\": 1, \"limit\": 5}, \"verbosity\": \"executionStats\"}", &rc);
	TT_EQ_STR(str_at(r, "queryPlanner.winningPlan.inputStage.stage"), "COUNT_SCAN");
	TT_EQ_INT(int_at(r, "queryPlanner.winningPlan.inputStage.indexBounds.startKeyInclusive"), 0);
	TT_EQ_INT(int_at(r, "executionStats.executionStages.nCounted"), 1);
	bson_destroy(r);
	bson_free(r);
	/* a compound prefix: trailing field from MinKey to MaxKey (descending) */
	r = run_reply("{\"explain\": {\"count\": \"cs\", \"query\": {\"c\": 1}}, \"verbosity\": \"executionStats\"}", &rc);
	TT_EQ_STR(str_at(r, "queryPlanner.winningPlan.inputStage.stage"), "COUNT_SCAN");
	TT_EQ_STR(str_at(r, "queryPlanner.winningPlan.inputStage.indexName"), "c_1_d_-1");
	TT_EQ_INT(int_at(r, "executionStats.executionStages.nCounted"), 3);
	bson_destroy(r);
	bson_free(r);
	/* a filter the bounds do not answer reads the documents */
	r = run_reply("{\"explain\": {\"count\": \"cs\", \"query\": {\"a\": 1, \"d\": {\"$exists\": false}}}, \"verbosity\": \"executionStats\"}", &rc);
	TT_EQ_STR(str_at(r, "queryPlanner.winningPlan.inputStage.stage"), "FETCH");
	TT_EQ_INT(int_at(r, "executionStats.executionStages.nCounted"), 1);
	bson_destroy(r);
	bson_free(r);
	/* an _id equality is counted on the _id index too */
	r = run_reply("{\"explain\": {\"count\": \"cs\", \"query\": {\"_id\": 3}}, \"verbosity\": \"executionStats\"}", &rc);
	TT_EQ_STR(str_at(r, "queryPlanner.winningPlan.inputStage.stage"), "COUNT_SCAN");
	TT_EQ_INT(int_at(r, "executionStats.executionStages.nCounted"), 1);
	bson_destroy(r);
	bson_free(r);

	/* distinct over an index led by the key: one key per value */
	r = run_reply("{\"explain\": {\"distinct\": \"cs\", \"key\": \"a\"}, \"verbosity\": \"executionStats\"}", &rc);
	TT_EQ_INT(rc, 0);
	TT_EQ_STR(str_at(r, "queryPlanner.winningPlan.stage"), "FETCH");
	TT_EQ_STR(str_at(r, "queryPlanner.winningPlan.inputStage.stage"), "DISTINCT_SCAN");
	TT_EQ_INT(int_at(r, "executionStats.nReturned"), 4);
	TT_EQ_INT(int_at(r, "executionStats.totalKeysExamined"), 4);
	bson_destroy(r);
	bson_free(r);
	/* after an equality prefix */
	r = run_reply("{\"explain\": {\"distinct\": \"cs\", \"key\": \"d\", \"query\": {\"c\": 1}}, \"verbosity\": \"executionStats\"}", &rc);
	TT_EQ_STR(str_at(r, "queryPlanner.winningPlan.inputStage.stage"), "DISTINCT_SCAN");
	TT_EQ_INT(int_at(r, "executionStats.nReturned"), 3);
	bson_destroy(r);
	bson_free(r);
	/* null keys (missing or null fields) are all read */
	TT_EQ_INT(run_code("{\"insert\": \"cs\", \"documents\": [{\"_id\": 7}, {\"_id\": 8, \"a\": null}]}"), 0);
	r = run_reply("{\"explain\": {\"distinct\": \"cs\", \"key\": \"a\"}, \"verbosity\": \"executionStats\"}", &rc);
	TT_EQ_STR(str_at(r, "queryPlanner.winningPlan.inputStage.stage"), "DISTINCT_SCAN");
	TT_EQ_INT(int_at(r, "executionStats.nReturned"), 6);
	bson_destroy(r);
	bson_free(r);
	/* multikey: not a distinct scan */
	r = run_reply("{\"explain\": {\"distinct\": \"cs\", \"key\": \"m\"}, \"verbosity\": \"executionStats\"}", &rc);
	TT_EQ_STR(str_at(r, "queryPlanner.winningPlan.stage"), "COLLSCAN");
	bson_destroy(r);
	bson_free(r);
}

/* keygen's multikey paths for explain's multiKeyPaths. */
static void
test_multikey_paths(void)
{
	storage_index_t ix;
	bson_t *doc;
	uint32_t masks[KEYGEN_MAX_FIELDS];
	terr_t err = TERR_INIT;
	bson_t out = BSON_INITIALIZER;
	char *j;

	memset(&ix, 0, sizeof(ix));
	ix.name = (char *)"ab_c";
	ix.key = tt_json("{\"a.b\": 1, \"c\": -1, \"d.e\": 1}");
	ix.spec = tt_json("{\"v\": 2}");
	doc = tt_json("{\"a\": [{\"b\": [1, 2]}, {\"b\": 3}], \"c\": 1, \"d\": {\"e\": 5}}");
	TT_EQ_INT(keygen_multikey_paths(&ix, doc, masks, &err), 3);
	TT_EQ_INT(masks[0], 3);
	TT_EQ_INT(masks[1], 0);
	TT_EQ_INT(masks[2], 0);
	keygen_multikey_paths_append(ix.key, masks, &out);
	j = bson_as_relaxed_extended_json(&out, NULL);
	TT_EQ_STR(j, "{ \"a.b\" : [ \"a\", \"a.b\" ], \"c\" : [  ], \"d.e\" : [  ] }");
	bson_free(j);
	bson_destroy(doc);
	bson_reinit(&out);
	/* an empty array counts; a document path without arrays does not */
	doc = tt_json("{\"a\": {\"b\": 1}, \"c\": 1, \"d\": {\"e\": []}}");
	TT_EQ_INT(keygen_multikey_paths(&ix, doc, masks, &err), 3);
	keygen_multikey_paths_append(ix.key, masks, &out);
	j = bson_as_relaxed_extended_json(&out, NULL);
	TT_EQ_STR(j, "{ \"a.b\" : [  ], \"c\" : [  ], \"d.e\" : [ \"d.e\" ] }");
	bson_free(j);
	bson_destroy(doc);
	/* parallel arrays fail as the key generator does */
	doc = tt_json("{\"a\": [{\"b\": 1}], \"c\": [1, 2]}");
	TT_EQ_INT(keygen_multikey_paths(&ix, doc, masks, &err), -1);
	TT_EQ_INT(err.code, 171);
	terr_clear(&err);
	bson_destroy(doc);
	bson_destroy(&out);
	bson_destroy(ix.key);
	bson_destroy(ix.spec);
}

/* Distinct values under MongoDB equality, sorted (what cmd_distinct keeps). */
typedef struct vset {
	bson_value_t v[512];
	int n;
} vset_t;

static bool
vset_add(const bpath_hit_t *hit, void *ctx)
{
	vset_t *d = ctx;
	int i;

	if (hit->value.value_type == BSON_TYPE_ARRAY || hit->value.value_type == BSON_TYPE_EOD)
		return true;
	for (i = 0; i < d->n; i++)
		if (bv_compare(&d->v[i], &hit->value) == 0)
			return true;
	if (d->n < 512)
		bson_value_copy(&hit->value, &d->v[d->n++]);
	return true;
}

/* Run filter on coll rnd2 as count (count_mode) or distinct on key; the
 * count, or -1 on error; distinct values into out. */
static int64_t
run_mode(const char *filter, bool count_mode, const char *key, const char *hint, vset_t *out, const char **stage)
{
	bson_t *f = tt_json(filter), *h = NULL;
	bson_iter_t hit;
	plan_request_t req;
	plan_exec_t *x = NULL;
	terr_t err = TERR_INIT;
	storage_session_t *ss = client_session(cl, &err);
	int64_t n = 0;
	bson_t doc;
	int rc;

	memset(&req, 0, sizeof(req));
	storage_coll_get(engine_storage(eng), "test", "rnd2", &req.coll, NULL);
	if (match_compile(f, NULL, &req.match, &err) != 0) {
		n = -1;
		goto done;
	}
	if (hint != NULL) {
		char *w = bson_strdup_printf("{\"h\": %s}", hint);
		h = tt_json(w);
		bson_free(w);
		bson_iter_init_find(&hit, h, "h");
		req.hint = bson_iter_value(&hit);
	}
	req.count = count_mode;
	req.distinct_key = key;
	if (plan_exec_new(&req, &x, &err) != 0) {
		n = -1;
		goto done;
	}
	while ((rc = plan_exec_next(x, ss, &doc, &err)) == 1) {
		n++;
		if (out != NULL && key != NULL)
			bpath_walk(&doc, key, true, vset_add, out);
	}
	if (rc < 0)
		n = -1;
	if (stage != NULL)
		*stage = plan_exec_stats(x)->stage;
done:
	plan_exec_free(x);
	terr_clear(&err);
	bson_destroy(f);
	if (h != NULL)
		bson_destroy(h);
	return n;
}

static void
vset_clear(vset_t *d)
{
	int i;

	for (i = 0; i < d->n; i++)
		bson_value_destroy(&d->v[i]);
	d->n = 0;
}

/* COUNT_SCAN and DISTINCT_SCAN answer what the fetching plans answer. */
static void
test_random_count_distinct(void)
{
	static const char *const vals[] = {"1", "2", "{\"$numberLong\": \"2\"}", "2.5", "-1", "\"x\"", "\"y\"",
		"null", "true", "{\"$numberDecimal\": \"3\"}", "[1, 2]", "[]"};
	static const char *const filters[] = {
		"{}", "{\"a\": 1}", "{\"a\": 2}", "{\"a\": {\"$gt\": 1}}", "{\"a\": {\"$gte\": 2, \"$lt\": 3}}",
		"{\"a\": {\"$in\": [1, \"x\"]}}", "{\"a\": null}", "{\"a\": 1, \"b\": {\"$gt\": 1}}",
		"{\"b\": 2}", "{\"b\": {\"$lte\": 2}}", "{\"a\": {\"$lt\": \"y\"}}", "{\"b\": 1, \"a\": {\"$gt\": 0}}",
		"{\"a\": 2, \"b\": 2}", "{\"c\": 1}", "{\"a\": {\"$exists\": true}}",
		"{\"e\": {\"$gte\": 1}}", "{\"e\": \"x\", \"c\": 1}", "{\"e\": null}", "{\"e\": {\"$in\": [2, true]}}",
	};
	static const char *const keys[] = {"a", "b", "c", "e"};
	static const char *const hints[] = {NULL, "\"a_1\"", "\"b_1_a_1\"", "\"c_1\"", "\"e_1_c_1\""};
	bson_string_t *ins = bson_string_new("{\"insert\": \"rnd2\", \"documents\": [");
	unsigned seed = 12345;
	vset_t *d1 = bson_malloc0(sizeof(*d1)), *d2 = bson_malloc0(sizeof(*d2));
	size_t fi, ki, hi;
	int i, ncount_scans = 0, ndistinct_scans = 0;

	run_code("{\"drop\": \"rnd2\"}");
	TT_EQ_INT(run_code("{\"createIndexes\": \"rnd2\", \"indexes\": [{\"key\": {\"a\": 1}, \"name\": \"a_1\"}, "
	    "{\"key\": {\"b\": 1, \"a\": 1}, \"name\": \"b_1_a_1\"}, {\"key\": {\"c\": -1}, \"name\": \"c_1\"}, "
	    "{\"key\": {\"e\": 1, \"c\": 1}, \"name\": \"e_1_c_1\"}]}"), 0);
	for (i = 0; i < 200; i++) {
		int r = (int)((seed = seed * 1103515245u + 12345u) >> 8);
		int av = r % 13, bv = (r >> 5) % 4, cv = (r >> 9) % 3;
		bson_string_append_printf(ins, "%s{\"_id\": %d", i ? "," : "", i);
		if (av < 12)
			bson_string_append_printf(ins, ", \"a\": %s", vals[av]);
		if (bv > 0)
			bson_string_append_printf(ins, ", \"b\": %s", bv == 3 ? "2.0" : (bv == 1 ? "1" : "2"));
		if (cv > 0)
			bson_string_append_printf(ins, ", \"c\": %s", cv == 1 ? "1" : "\"s\"");
		if ((r >> 13) % 11 < 10)
			bson_string_append_printf(ins, ", \"e\": %s", vals[(r >> 13) % 11 % 10]);
		bson_string_append(ins, "}");
	}
	bson_string_append(ins, "]}");
	TT_EQ_INT(run_code(ins->str), 0);
	bson_string_free(ins, true);
	for (fi = 0; fi < sizeof(filters) / sizeof(filters[0]); fi++) {
		for (hi = 0; hi < sizeof(hints) / sizeof(hints[0]); hi++) {
			int64_t want = run_mode(filters[fi], false, NULL, hints[hi], NULL, NULL);
			const char *st = "";
			int64_t got = run_mode(filters[fi], true, NULL, hints[hi], NULL, &st);
			ncount_scans += strcmp(st, "COUNT_SCAN") == 0;
			if (got != want)
				fprintf(stderr, "count %s hint %s: %lld != %lld\n", filters[fi], hints[hi] ? hints[hi] : "-",
				    (long long)got, (long long)want);
			TT_EQ_INT(got, want);
			for (ki = 0; ki < sizeof(keys) / sizeof(keys[0]); ki++) {
				int j;
				vset_clear(d1);
				vset_clear(d2);
				/* reference: a collection scan */
				run_mode(filters[fi], false, keys[ki], "{\"$natural\": 1}", d1, NULL);
				run_mode(filters[fi], false, keys[ki], hints[hi], d2, &st);
				ndistinct_scans += strcmp(st, "DISTINCT_SCAN") == 0;
				if (d1->n != d2->n)
					fprintf(stderr, "distinct %s on %s hint %s: %d != %d values\n", keys[ki], filters[fi],
					    hints[hi] ? hints[hi] : "-", d2->n, d1->n);
				TT_EQ_INT(d2->n, d1->n);
				for (j = 0; j < d1->n && j < d2->n; j++) {
					int k, found = 0;
					for (k = 0; k < d2->n; k++)
						if (bv_compare(&d1->v[j], &d2->v[k]) == 0)
							found = 1;
					TT_ASSERT(found);
				}
			}
		}
	}
	TT_ASSERT(ncount_scans >= 10);
	if (ndistinct_scans < 5) fprintf(stderr, "count scans %d, distinct scans %d\n", ncount_scans, ndistinct_scans);
	TT_ASSERT(ndistinct_scans >= 5);
	vset_clear(d1);
	vset_clear(d2);
	bson_free(d1);
	bson_free(d2);
}

int
main(void)
{
	char *dir = tt_tmpdir("minmax");
	engine_options_t o;
	terr_t err = TERR_INIT;

	memset(&o, 0, sizeof(o));
	o.storage.create = true;
	if (engine_open(dir, &o, &eng, &err) != 0) {
		fprintf(stderr, "engine_open: %s\n", err.msg);
		return 1;
	}
	query_keygen_register(engine_storage(eng));
	spill = bson_strdup_printf("%s/_tmp", dir);
	mkdir(spill, 0700);
	cl = client_new(eng, NULL);
	TT_RUN(test_compound);
	TT_RUN(test_order_and_explain);
	TT_RUN(test_spill);
	TT_RUN(test_trial_runs);
	TT_RUN(test_count_distinct_scans);
	TT_RUN(test_multikey_paths);
	TT_RUN(test_random_count_distinct);
	client_free(cl);
	engine_close(eng);
	tt_rmdir(dir);
	bson_free(spill);
	bson_free(dir);
	return tt_finish();
}
