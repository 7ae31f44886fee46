/*
 * test_view_tree.c -- views reading views many times over, through the
 * embedded API: the tree of mongod's jstests/core/views/views_validation.js
 * (each of 20 levels reads the next four ways), a wide tree queried from the
 * top (each view resolved and parsed once per query, so the answer comes at
 * once instead of after one parse per path through the tree), mongod's
 * limits on reading views (165 at 20 views on a chain, with the context of
 * the involved-namespace resolution; 232 past 20 nested sub-pipelines, also
 * when a view parsed once is read again deeper) and on their size (195 when
 * the stages of a chain add up to more than 16 000 000 bytes).
 */
#include "tt.h"

#include <string.h>
#include <time.h>

#include "tt_embedded.h"

static tamga_t *db;
static char *dir;

/* Run cmd (single-quoted JSON); the reply, rc in *rc. */
static bson_t *
run(const char *cmd, int *rc)
{
	return tt_run_sq(db, "vt", cmd, rc);
}

/* Run cmd; "ok", or "<code>: <errmsg>" (owned). */
static char *
outcome(const char *cmd)
{
	int rc;
	bson_t *r = run(cmd, &rc);
	char *out = rc == 0 ? bson_strdup("ok") :
	    bson_strdup_printf("%d: %s", (int)tt_get_i64(r, "code"), tt_get_str(r, "errmsg"));

	tt_free_reply(r);
	return out;
}

#define OUTCOME_EQ(cmd, want) do { char *got_ = outcome(cmd); TT_EQ_STR(got_, (want)); bson_free(got_); } while (0)
#define OK(cmd) OUTCOME_EQ(cmd, "ok")

/* The error code of cmd (0 when it succeeds). */
static int
code_of(const char *cmd)
{
	int rc;
	bson_t *r = run(cmd, &rc);
	int code = rc == 0 ? 0 : (int)tt_get_i64(r, "code");

	tt_free_reply(r);
	return code;
}

/* The firstBatch of cmd as relaxed JSON, or "error <code>: <errmsg>". */
static char *
batch(const char *cmd)
{
	return tt_batch_sq(db, "vt", cmd);
}

#define BATCH_EQ(cmd, want) do { char *got_ = batch(cmd); TT_EQ_STR(got_, (want)); bson_free(got_); } while (0)

static double
seconds(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* ---- views_validation.js's tree ---------------------------------------- */

static char *
stage_lookup(const char *from)
{
	return bson_strdup_printf("{'$lookup': {'from': '%s', 'as': 'as', 'localField': 'localField',"
	    " 'foreignField': 'foreignField'}}", from);
}

static void
test_validation_tree(void)
{
	char cmd[2048], *lk;

	OK("{'dropDatabase': 1}");
	/* view i reads view i+1 four ways; v21 is no view */
	for (int i = 1; i <= 20; i++) {
		char next[16];
		bson_snprintf(next, sizeof(next), "v%d", i + 1);
		lk = stage_lookup(next);
		bson_snprintf(cmd, sizeof(cmd), "{'create': 'v%d', 'viewOn': '%s', 'pipeline': [%s,"
		    " {'$graphLookup': {'from': '%s', 'as': 'as', 'startWith': 'startWith',"
		    " 'connectFromField': 'connectFromField', 'connectToField': 'connectToField'}},"
		    " {'$facet': {'Facet Key': [%s]}}, {'$unionWith': '%s'}]}", i, next, lk, next, lk, next);
		OK(cmd);
		bson_free(lk);
	}
	/* a 21st level, below or above */
	TT_EQ_INT(code_of("{'create': 'v21', 'viewOn': 'v22'}"), 165);
	TT_EQ_INT(code_of("{'create': 'v0', 'viewOn': 'v1'}"), 165);
	lk = stage_lookup("v1");
	bson_snprintf(cmd, sizeof(cmd), "{'create': 'v0', 'viewOn': 'ok', 'pipeline': [%s]}", lk);
	OUTCOME_EQ(cmd, "165: View depth limit exceeded; maximum depth is 20");
	TT_EQ_INT(code_of("{'create': 'v0', 'viewOn': 'ok', 'pipeline': [{'$unionWith': 'v1'}]}"), 165);
	/* reading v1 resolves a chain of 20 views: refused as mongod does,
	 * before anything is parsed */
	OUTCOME_EQ("{'aggregate': 'v10', 'pipeline': [{'$unionWith': 'v1'}], 'cursor': {}}",
	    "165: Failed to resolve view 'vt.v1 :: caused by :: View depth too deep or view cycle detected; "
	    "maximum depth is 20");
	bson_snprintf(cmd, sizeof(cmd), "{'aggregate': 'v10', 'pipeline': [%s], 'cursor': {}}", lk);
	OUTCOME_EQ(cmd, "165: Failed to resolve view 'vt.v1 :: caused by :: View depth too deep or view cycle "
	    "detected; maximum depth is 20");
	OUTCOME_EQ("{'aggregate': 'v1', 'pipeline': [], 'cursor': {}}",
	    "165: View depth too deep or view cycle detected; maximum depth is 20");
	bson_free(lk);
	/* the lower levels answer: the $facet makes one document from none,
	 * the $lookup in it finds the level below (a missing localField
	 * matches a missing foreignField), $unionWith adds the level below */
	BATCH_EQ("{'aggregate': 'v20', 'pipeline': [], 'cursor': {}}", "[ { \"Facet Key\" : [  ] } ]");
	BATCH_EQ("{'aggregate': 'v19', 'pipeline': [], 'cursor': {}}",
	    "[ { \"Facet Key\" : [ { \"Facet Key\" : [  ], \"as\" : [ { \"Facet Key\" : [  ] } ] } ] }, "
	    "{ \"Facet Key\" : [  ] } ]");
	BATCH_EQ("{'aggregate': 'v18', 'pipeline': [{'$project': {'_id': 0, 'n': {'$size': '$Facet Key'}}}],"
	         " 'cursor': {}}", "[ { \"n\" : 2 }, { \"n\" : 1 }, { \"n\" : 0 } ]");
	/* adding to the middle is fine */
	OK("{'create': 'vMid', 'viewOn': 'v10'}");
}

/* ---- a wide tree read from the top ------------------------------------- */

/* w1 .. w19 on the collection none, each reading the next (w20 is none
 * itself) five ways: $unionWith, $lookup by fields and by pipeline,
 * $graphLookup and a $lookup in a $facet.  Read from the top, that is 5^19
 * paths through the tree: the query answers at once only if each view is
 * parsed once. */
static void
test_wide_tree(void)
{
	char cmd[4096];
	double t0;

	OK("{'dropDatabase': 1}");
	OK("{'insert': 'top', 'documents': [{'_id': 1, 'k': 'a'}, {'_id': 2}]}");
	OK("{'create': 'none'}");
	for (int i = 19; i >= 1; i--) {
		char next[16];
		if (i == 19)
			bson_strncpy(next, "none", sizeof(next));
		else
			bson_snprintf(next, sizeof(next), "w%d", i + 1);
		bson_snprintf(cmd, sizeof(cmd), "{'create': 'w%d', 'viewOn': 'none', 'pipeline': ["
		    "{'$unionWith': {'coll': '%s', 'pipeline': [{'$set': {'d': {'$add': [{'$ifNull': ['$d', 0]}, 1]}}}]}},"
		    "{'$lookup': {'from': '%s', 'localField': 'k', 'foreignField': 'k', 'as': 'l1'}},"
		    "{'$lookup': {'from': '%s', 'let': {'k': '$k'}, 'pipeline': [{'$match': {'$expr': {'$eq': ['$k', '$$k']}}}],"
		    " 'as': 'l2'}},"
		    "{'$graphLookup': {'from': '%s', 'startWith': '$k', 'connectFromField': 'k', 'connectToField': 'k',"
		    " 'as': 'g1'}},"
		    "{'$facet': {'f': [{'$lookup': {'from': '%s', 'pipeline': [{'$count': 'n'}], 'as': 'l3'}}]}},"
		    "{'$unwind': '$f'}, {'$replaceRoot': {'newRoot': '$f'}}]}",
		    i, next, next, next, next, next);
		OK(cmd);
	}
	t0 = seconds();
	BATCH_EQ("{'aggregate': 'w1', 'pipeline': [], 'cursor': {}}", "[ ]");
	BATCH_EQ("{'aggregate': 'top', 'pipeline': [{'$unionWith': 'w1'},"
	         " {'$lookup': {'from': 'w1', 'localField': 'k', 'foreignField': 'k', 'as': 'a'}},"
	         " {'$lookup': {'from': 'w1', 'pipeline': [{'$count': 'n'}], 'as': 'b'}},"
	         " {'$graphLookup': {'from': 'w1', 'startWith': '$k', 'connectFromField': 'k',"
	         " 'connectToField': 'k', 'as': 'c'}}], 'cursor': {}}",
	    "[ { \"_id\" : 1, \"k\" : \"a\", \"a\" : [  ], \"b\" : [  ], \"c\" : [  ] }, "
	    "{ \"_id\" : 2, \"a\" : [  ], \"b\" : [  ], \"c\" : [  ] } ]");
	/* find and count on a view are aggregations too */
	BATCH_EQ("{'find': 'w1', 'filter': {'k': 'a'}}", "[ ]");
	OK("{'count': 'w1'}");
	/* seconds at most, sanitizers included (one parse per path: hours) */
	TT_ASSERT(seconds() - t0 < 20.0);
	/* with a document at the bottom: w19 has it twice (once through its
	 * $unionWith, d counting the levels it came up), w18 three times;
	 * $graphLookup keeps one document per _id; the inclusions keep their
	 * place, the computed fields follow */
	OK("{'insert': 'none', 'documents': [{'_id': 1, 'k': 'a'}]}");
	BATCH_EQ("{'aggregate': 'w19', 'pipeline': [{'$project': {'d': 1, 'l1': {'$size': '$l1'},"
	         " 'l2': {'$size': '$l2'}, 'g1': {'$size': '$g1'}, 'l3': 1}}], 'cursor': {}}",
	    "[ { \"_id\" : 1, \"l3\" : [ { \"n\" : 1 } ], \"l1\" : 1, \"l2\" : 1, \"g1\" : 1 }, "
	    "{ \"_id\" : 1, \"d\" : 1, \"l3\" : [ { \"n\" : 1 } ], \"l1\" : 1, \"l2\" : 1, \"g1\" : 1 } ]");
	BATCH_EQ("{'aggregate': 'w18', 'pipeline': [{'$project': {'d': 1, 'l1': {'$size': '$l1'},"
	         " 'l2': {'$size': '$l2'}, 'g1': {'$size': '$g1'}, 'l3': 1}}], 'cursor': {}}",
	    "[ { \"_id\" : 1, \"l3\" : [ { \"n\" : 2 } ], \"l1\" : 2, \"l2\" : 2, \"g1\" : 1 }, "
	    "{ \"_id\" : 1, \"l3\" : [ { \"n\" : 2 } ], \"d\" : 1, \"l1\" : 2, \"l2\" : 2, \"g1\" : 1 }, "
	    "{ \"_id\" : 1, \"d\" : 2, \"l3\" : [ { \"n\" : 2 } ], \"l1\" : 2, \"l2\" : 2, \"g1\" : 1 } ]");
}

/* ---- nested sub-pipelines through views: 232 --------------------------- */

/* n $lookups from `from`, each in the pipeline of the one before, the
 * innermost with the pipeline inner (a JSON array); owned. */
static char *
wrap(const char *from, int n, const char *inner)
{
	char *p = bson_strdup(inner);

	for (int i = 0; i < n; i++) {
		char *q = bson_strdup_printf("[{'$lookup': {'from': '%s', 'pipeline': %s, 'as': 'same'}}]", from, p);
		bson_free(p);
		p = q;
	}
	return p;
}

/* Run {aggregate: coll, pipeline: the stages of the arrays a then b}. */
static char *
aggregate2(const char *coll, const char *a, const char *b)
{
	/* the arrays without their brackets, joined */
	char *cmd = bson_strdup_printf("{'aggregate': '%s', 'pipeline': [%.*s, %.*s], 'cursor': {}}", coll,
	    (int)strlen(a) - 2, a + 1, (int)strlen(b) - 2, b + 1);
	char *out = outcome(cmd);

	bson_free(cmd);
	return out;
}

static void
test_nested_depth(void)
{
	static const char *const limit = "232: Maximum number of nested sub-pipelines exceeded. Limit is 20";
	char *p, *cmd, *got;
	char *shallow = bson_strdup("[{'$lookup': {'from': 'view1', 'pipeline': [], 'as': 'shallow'}}]");

	OK("{'dropDatabase': 1}");
	OK("{'insert': 'lookup', 'documents': [{'_id': 1}]}");
	/* 20 nested pipelines are fine, 21 are not */
	p = wrap("lookup", 20, "[]");
	cmd = bson_strdup_printf("{'aggregate': 'lookup', 'pipeline': %s, 'cursor': {}}", p);
	OK(cmd);
	bson_free(cmd);
	bson_free(p);
	p = wrap("lookup", 21, "[]");
	cmd = bson_strdup_printf("{'aggregate': 'lookup', 'pipeline': %s, 'cursor': {}}", p);
	OUTCOME_EQ(cmd, limit);
	bson_free(cmd);
	bson_free(p);
	/* views whose stages nest (lookup.js): 10 + 10 is fine, one more is not */
	p = wrap("lookup", 10, "[]");
	cmd = bson_strdup_printf("{'create': 'view1', 'viewOn': 'lookup', 'pipeline': %s}", p);
	OK(cmd);
	bson_free(cmd);
	bson_free(p);
	p = wrap("view1", 10, "[]");
	cmd = bson_strdup_printf("{'create': 'view2', 'viewOn': 'view1', 'pipeline': %s}", p);
	OK(cmd);
	bson_free(cmd);
	bson_free(p);
	OK("{'aggregate': 'view2', 'pipeline': [], 'cursor': {}}");
	OK("{'create': 'view3', 'viewOn': 'view2', 'pipeline': [{'$lookup': {'from': 'view2', 'pipeline': [],"
	   " 'as': 'same'}}]}");
	OUTCOME_EQ("{'aggregate': 'view3', 'pipeline': [], 'cursor': {}}", limit);
	/* view1 read shallow first (parsed there: 11 deep), then under 10
	 * levels, where its stages would reach 21: refused all the same */
	p = wrap("lookup", 10, shallow);
	got = aggregate2("lookup", shallow, p);
	TT_EQ_STR(got, limit);
	bson_free(got);
	bson_free(p);
	/* under 9 levels it is fine, read deep first or shallow first */
	p = wrap("lookup", 9, shallow);
	got = aggregate2("lookup", p, shallow);
	TT_EQ_STR(got, "ok");
	bson_free(got);
	got = aggregate2("lookup", shallow, p);
	TT_EQ_STR(got, "ok");
	bson_free(got);
	bson_free(p);
	bson_free(shallow);
}

/* ---- the bytes of a chain's stages: 195 -------------------------------- */

/* {'create': name, 'viewOn': on, 'pipeline': [a stage of exactly 1 000 000
 * bytes]} as BSON. */
static bson_t *
big_view(const char *name, const char *on)
{
	/* {$match: {s: <L chars>}} is L + 26 bytes */
	size_t len = 1000000 - 26;
	char *s = bson_malloc(len + 1);
	bson_t *cmd = bson_new(), pipe, stage, match;

	memset(s, 'x', len);
	s[len] = '\0';
	BSON_APPEND_UTF8(cmd, "create", name);
	BSON_APPEND_UTF8(cmd, "viewOn", on);
	bson_append_array_begin(cmd, "pipeline", -1, &pipe);
	bson_append_document_begin(&pipe, "0", -1, &stage);
	bson_append_document_begin(&stage, "$match", -1, &match);
	BSON_APPEND_UTF8(&match, "s", s);
	bson_append_document_end(&stage, &match);
	bson_append_document_end(&pipe, &stage);
	bson_append_array_end(cmd, &pipe);
	bson_free(s);
	return cmd;
}

static int
run_big(const char *name, const char *on, char *msg, size_t msglen)
{
	bson_t *cmd = big_view(name, on), *r;
	int rc, code;

	r = tt_run_bson(db, "vt", cmd, &rc);
	code = rc == 0 ? 0 : (int)tt_get_i64(r, "code");
	bson_strncpy(msg, rc == 0 ? "" : tt_get_str(r, "errmsg"), msglen);
	tt_free_reply(r);
	bson_destroy(cmd);
	return code;
}

static void
test_pipeline_size(void)
{
	char name[16], on[16], msg[256];

	OK("{'dropDatabase': 1}");
	OK("{'insert': 'base', 'documents': [{'_id': 1, 's': 'y'}]}");
	/* 16 stages of 1 000 000 bytes on one chain: exactly the limit */
	for (int i = 1; i <= 16; i++) {
		bson_snprintf(name, sizeof(name), "s%d", i);
		if (i == 1)
			bson_strncpy(on, "mid", sizeof(on));   /* no view yet */
		else
			bson_snprintf(on, sizeof(on), "s%d", i - 1);
		TT_EQ_INT(run_big(name, on, msg, sizeof(msg)), 0);
	}
	BATCH_EQ("{'aggregate': 's16', 'pipeline': [], 'cursor': {}}", "[ ]");
	/* a 17th below it */
	TT_EQ_INT(run_big("s17", "s16", msg, sizeof(msg)), 195);
	TT_EQ_STR(msg, "Operation would result in a resolved view pipeline that exceeds the maximum size of "
	    "16000000 bytes");
	/* or above it: the chain over mid grows past the limit */
	TT_EQ_INT(run_big("mid", "base", msg, sizeof(msg)), 195);
	TT_EQ_STR(msg, "View pipeline is too large and exceeds the maximum size of 16000000 bytes");
	/* a small view there is fine */
	OK("{'create': 'mid', 'viewOn': 'base'}");
	BATCH_EQ("{'aggregate': 's16', 'pipeline': [], 'cursor': {}}", "[ ]");
	OK("{'dropDatabase': 1}");
}

int
main(void)
{
	dir = tt_tmpdir("view_tree");
	if ((db = tt_open_new(dir)) == NULL)
		return 1;
	TT_RUN(test_validation_tree);
	TT_RUN(test_wide_tree);
	TT_RUN(test_nested_depth);
	TT_RUN(test_pipeline_size);
	tt_close_rm(db, dir);
	return tt_finish();
}
