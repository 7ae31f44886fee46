/*
 * test_fidelity.c -- issue 22's corners below the end-to-end cases
 * (tests/compat): mongod's pipeline rewrites on the stages' BSON
 * (agg/optimize.c: what moves, what must not, overflow), and through the
 * embedded API dbHash / dataSize / applyOps ($v: 2 diffs), the Stable API
 * checks, collectionUUID, index filters' query shapes, metrics.commands,
 * returnKey, an upsert's top-level $-field and empty Timestamps filled on
 * insert.
 */
#include "tt.h"

#include "tt_embedded.h"

#include <string.h>

#include "agg/agg_private.h"

static tamga_t *db;
static char *dir;

/* ---- rewrites ----------------------------------------------------------- */

/* The pipeline json rewritten (relaxed JSON), or "same" when unchanged. */
static char *
opt(const char *json)
{
	bson_t *in = tt_json(json), out;
	char *s;

	if (!agg_pipeline_optimize(in, &out)) {
		bson_destroy(in);
		return bson_strdup("same");
	}
	s = bson_as_relaxed_extended_json(&out, NULL);
	bson_destroy(&out);
	bson_destroy(in);
	return s;
}

#define OPT_EQ(in, want) do { char *g_ = opt(in); TT_EQ_STR(g_, want); bson_free(g_); } while (0)

static void
test_coalesce(void)
{
	OPT_EQ("[{\"$skip\": 1}, {\"$skip\": 2}, {\"$limit\": 5}, {\"$limit\": 3}]",
	    "{ \"0\" : { \"$skip\" : 3 }, \"1\" : { \"$limit\" : 3 } }");
	/* an overflowing sum, invalid arguments and a zero limit stay for the
	 * parser to answer */
	OPT_EQ("[{\"$skip\": 9223372036854775807}, {\"$skip\": 1}]", "same");
	OPT_EQ("[{\"$skip\": -1}, {\"$skip\": 1}]", "same");
	OPT_EQ("[{\"$limit\": 0}, {\"$limit\": 1}]", "same");
	OPT_EQ("[{\"$skip\": 1.5}, {\"$skip\": 1}]", "same");
	OPT_EQ("[{\"$match\": {\"a\": 1}}, {\"$match\": {\"b\": 2}}]",
	    "{ \"0\" : { \"$match\" : { \"$and\" : [ { \"a\" : 1 }, { \"b\" : 2 } ] } } }");
	OPT_EQ("[{\"$sort\": {\"b\": 1}}, {\"$match\": {\"a\": 1}}]",
	    "{ \"0\" : { \"$match\" : { \"a\" : 1 } }, \"1\" : { \"$sort\" : { \"b\" : 1 } } }");
	/* a stage that is not one key: nothing is rewritten */
	OPT_EQ("[{\"$skip\": 1, \"x\": 1}, {\"$skip\": 2}]", "same");
}

static void
test_match_moves(void)
{
	/* split across $addFields: the unchanged field moves */
	OPT_EQ("[{\"$addFields\": {\"z\": 1}}, {\"$match\": {\"a\": 1, \"z\": 1}}]",
	    "{ \"0\" : { \"$match\" : { \"a\" : 1 } }, \"1\" : { \"$addFields\" : { \"z\" : 1 } }, "
	    "\"2\" : { \"$match\" : { \"z\" : 1 } } }");
	/* a rename: matched by its old name */
	OPT_EQ("[{\"$project\": {\"x\": \"$a\"}}, {\"$match\": {\"x.y\": 1}}]",
	    "{ \"0\" : { \"$match\" : { \"a.y\" : 1 } }, \"1\" : { \"$project\" : { \"x\" : \"$a\" } } }");
	/* inclusion: only included paths pass; _id unless dropped */
	OPT_EQ("[{\"$project\": {\"a\": 1}}, {\"$match\": {\"a.b\": 1, \"_id\": 2, \"c\": 3}}]",
	    "{ \"0\" : { \"$match\" : { \"a.b\" : 1, \"_id\" : 2 } }, \"1\" : { \"$project\" : { \"a\" : 1 } }, "
	    "\"2\" : { \"$match\" : { \"c\" : 3 } } }");
	OPT_EQ("[{\"$project\": {\"a\": 1, \"_id\": 0}}, {\"$match\": {\"_id\": 2}}]", "same");
	/* exclusion and $unset: a path under or above a dropped one stays */
	OPT_EQ("[{\"$project\": {\"a.b\": 0}}, {\"$match\": {\"a\": 1}}]", "same");
	OPT_EQ("[{\"$unset\": [\"a\", \"b\"]}, {\"$match\": {\"b.c\": 1}}]", "same");
	OPT_EQ("[{\"$unset\": \"a\"}, {\"$match\": {\"c\": 1}}]",
	    "{ \"0\" : { \"$match\" : { \"c\" : 1 } }, \"1\" : { \"$unset\" : \"a\" } }");
	/* whole-document operators do not move; $and / $or move whole */
	OPT_EQ("[{\"$addFields\": {\"z\": 1}}, {\"$match\": {\"$expr\": {\"$eq\": [\"$a\", 1]}}}]", "same");
	OPT_EQ("[{\"$addFields\": {\"z\": 1}}, {\"$match\": {\"$or\": [{\"a\": 1}, {\"z\": 1}]}}]", "same");
	OPT_EQ("[{\"$addFields\": {\"z\": 1}}, {\"$match\": {\"$or\": [{\"a\": 1}, {\"b\": 1}]}}]",
	    "{ \"0\" : { \"$match\" : { \"$or\" : [ { \"a\" : 1 }, { \"b\" : 1 } ] } }, "
	    "\"1\" : { \"$addFields\" : { \"z\" : 1 } } }");
	/* a numeric component is an array index to a match: no rename */
	OPT_EQ("[{\"$addFields\": {\"x\": \"$a.0\"}}, {\"$match\": {\"x\": 1}}]", "same");
	/* mixed inclusion / exclusion is the parser's error: left alone */
	OPT_EQ("[{\"$project\": {\"a\": 1, \"b\": 0}}, {\"$match\": {\"a\": 1}}]", "same");
}

/* ---- through the embedded API ------------------------------------------- */

static bson_t *
run(const char *dbname, const char *json, int *rc)
{
	return tt_run_json(db, dbname, json, rc);
}

static void
ok_run(const char *dbname, const char *json)
{
	int rc;
	bson_t *r = run(dbname, json, &rc);

	if (rc != 0) {
		char *s = bson_as_relaxed_extended_json(r, NULL);
		TT_FAIL_("%s -> %s", json, s);
		bson_free(s);
	}
	tt_free_reply(r);
}

static void
fails(const char *dbname, const char *json, int code)
{
	int rc;
	bson_t *r = run(dbname, json, &rc);

	if (rc == 0 || tt_get_i64(r, "code") != code) {
		char *s = bson_as_relaxed_extended_json(r, NULL);
		TT_FAIL_("%s -> %s, want code %d", json, s, code);
		bson_free(s);
	}
	tt_free_reply(r);
}

static char *
field_json(const char *dbname, const char *json, const char *path)
{
	int rc;
	bson_t *r = run(dbname, json, &rc);
	bson_iter_t f;
	char *s;

	if (!tt_get(r, path, &f)) {
		s = bson_as_relaxed_extended_json(r, NULL);
		TT_FAIL_("%s: no %s in %s", json, path, s);
		bson_free(s);
		tt_free_reply(r);
		return bson_strdup("");
	}
	{
		bson_t one = BSON_INITIALIZER;

		bson_append_iter(&one, "v", 1, &f);
		s = bson_as_relaxed_extended_json(&one, NULL);
		bson_destroy(&one);
	}
	tt_free_reply(r);
	return s;
}

#define FIELD_EQ(dbn, json, path, want) do { char *g_ = field_json(dbn, json, path); TT_EQ_STR(g_, want); \
	bson_free(g_); } while (0)

static void
test_db_hash_data_size(void)
{
	char *h1, *h2, *h3;

	ok_run("h", "{\"insert\": \"c\", \"documents\": [{\"_id\": 2, \"a\": 2}, {\"_id\": 1, \"a\": 1}]}");
	ok_run("h", "{\"insert\": \"d\", \"documents\": [{\"_id\": 1, \"a\": 1}, {\"_id\": 2, \"a\": 2}]}");
	/* _id order: the same documents inserted in another order hash the same */
	h1 = field_json("h", "{\"dbHash\": 1}", "collections.c");
	h2 = field_json("h", "{\"dbHash\": 1}", "collections.d");
	TT_EQ_STR(h1, h2);
	ok_run("h", "{\"update\": \"d\", \"updates\": [{\"q\": {\"_id\": 1}, \"u\": {\"$set\": {\"a\": 5}}}]}");
	h3 = field_json("h", "{\"dbHash\": 1, \"collections\": [\"d\"]}", "collections.d");
	TT_ASSERT(strcmp(h1, h3) != 0);
	bson_free(h1);
	bson_free(h2);
	bson_free(h3);
	fails("h", "{\"dbHash\": 1, \"collections\": [1]}", 2);
	FIELD_EQ("h", "{\"dataSize\": \"h.c\"}", "numObjects", "{ \"v\" : 2 }");
	FIELD_EQ("h", "{\"dataSize\": \"h.c\"}", "size", "{ \"v\" : 42 }");
	FIELD_EQ("h", "{\"dataSize\": \"h.nope\"}", "size", "{ \"v\" : 0 }");
	fails("h", "{\"dataSize\": \"nodot\"}", 73);
	fails("h", "{\"dataSize\": 1}", 14);
	/* bounds over an index (mongod's CmdDataSize) */
	ok_run("h", "{\"createIndexes\": \"c\", \"indexes\": [{\"key\": {\"_id\": 1, \"zz\": 1}, \"name\": \"idzz\"}]}");
	FIELD_EQ("h", "{\"dataSize\": \"h.c\", \"min\": {\"_id\": 1}, \"max\": {\"_id\": 2}}", "size", "{ \"v\" : 21 }");
	FIELD_EQ("h", "{\"dataSize\": \"h.c\", \"keyPattern\": {\"_id\": 1, \"zz\": 1}, \"min\": {\"_id\": 1}, "
	    "\"max\": {\"_id\": 3}}", "numObjects", "{ \"v\" : 2 }");
	fails("h", "{\"dataSize\": \"h.c\", \"min\": {\"q\": 1}, \"max\": {\"q\": 2}}", 96);
	fails("h", "{\"dataSize\": \"h.c\", \"min\": {\"q\": 1}}", 2);
}

static void
test_apply_ops(void)
{
	ok_run("admin", "{\"applyOps\": ["
	    "{\"op\": \"c\", \"ns\": \"ao.$cmd\", \"o\": {\"create\": \"c\"}},"
	    "{\"op\": \"i\", \"ns\": \"ao.c\", \"o\": {\"_id\": 1, \"a\": {\"b\": 1, \"c\": [1, 2, 3]}, \"d\": 1}},"
	    "{\"op\": \"u\", \"ns\": \"ao.c\", \"o2\": {\"_id\": 1}, \"o\": {\"$v\": 2, \"diff\": "
	    "  {\"d\": {\"d\": false}, \"i\": {\"e\": 5}, \"sa\": {\"u\": {\"b\": 2}, \"sc\": {\"a\": true, \"l\": 2, \"u1\": 9}}}}}"
	    "]}");
	/* an insert of an existing _id replaces it (alwaysUpsert) */
	ok_run("admin", "{\"applyOps\": [{\"op\": \"i\", \"ns\": \"ao.c\", \"o\": {\"_id\": 2}}, "
	    "{\"op\": \"i\", \"ns\": \"ao.c\", \"o\": {\"_id\": 2, \"z\": 1}}]}");
	FIELD_EQ("ao", "{\"find\": \"c\", \"filter\": {\"_id\": 1}}", "cursor.firstBatch",
	    "{ \"v\" : [ { \"_id\" : 1, \"a\" : { \"b\" : 2, \"c\" : [ 1, 9 ] }, \"e\" : 5 } ] }");
	FIELD_EQ("ao", "{\"find\": \"c\", \"filter\": {\"_id\": 2}}", "cursor.firstBatch",
	    "{ \"v\" : [ { \"_id\" : 2, \"z\" : 1 } ] }");
	fails("admin", "{\"applyOps\": [{\"op\": \"z\", \"ns\": \"ao.c\", \"o\": {}}]}", 2);
	fails("admin", "{\"applyOps\": [{\"ns\": \"ao.c\", \"o\": {}}]}", 40414);
	fails("admin", "{\"applyOps\": 1}", 9);
	fails("admin", "{\"applyOps\": [{\"op\": \"c\", \"ns\": \"admin.$cmd\", \"o\": {\"applyOps\": []}}]}", 2);
	/* any database (mongod's ApplyOpsCmd is not admin-only) */
	ok_run("ao", "{\"applyOps\": []}");
	/* preCondition: typed (an array of objects) and otherwise ignored, as
	 * 9.0's applyOps no longer reads it */
	ok_run("ao", "{\"create\": \"p\"}");
	ok_run("ao", "{\"applyOps\": [{\"op\": \"i\", \"ns\": \"ao.p\", \"o\": {\"_id\": 1, \"x\": 1}}]}");
	ok_run("ao", "{\"applyOps\": [{\"op\": \"u\", \"ns\": \"ao.p\", \"o2\": {\"_id\": 1}, \"o\": {\"$set\": {\"x\": 2}}}], "
	    "\"preCondition\": [{\"ns\": \"ao.p\", \"q\": {\"_id\": 1}, \"res\": {\"x\": 7}}]}");
	FIELD_EQ("ao", "{\"find\": \"p\"}", "cursor.firstBatch", "{ \"v\" : [ { \"_id\" : 1, \"x\" : 2 } ] }");
	fails("ao", "{\"applyOps\": [], \"preCondition\": 1}", 14);
	fails("ao", "{\"applyOps\": [], \"preCondition\": [1]}", 14);
}

static void
test_api_and_uuid(void)
{
	fails("x", "{\"ping\": 1, \"apiStrict\": false}", 4886600);
	fails("x", "{\"ping\": 1, \"apiVersion\": 1}", 14);
	fails("x", "{\"ping\": 1, \"apiVersion\": \"1\", \"apiStrict\": 1}", 14);
	fails("x", "{\"ping\": 1, \"apiVersion\": \"3\"}", 322);
	fails("x", "{\"collStats\": \"c\", \"apiVersion\": \"1\", \"apiStrict\": true}", 323);
	ok_run("x", "{\"ping\": 1, \"apiVersion\": \"1\", \"apiStrict\": true, \"apiDeprecationErrors\": true}");
	ok_run("x", "{\"insert\": \"c\", \"documents\": [{\"_id\": 1}]}");
	fails("x", "{\"find\": \"c\", \"collectionUUID\": {\"$binary\": {\"base64\": \"AAAAAAAAAAAAAAAAAAAAAA==\", "
	    "\"subType\": \"04\"}}}", 361);
	fails("x", "{\"find\": \"c\", \"collectionUUID\": 1}", 14);
	fails("x", "{\"find\": {\"$binary\": {\"base64\": \"AAAAAAAAAAAAAAAAAAAAAA==\", \"subType\": \"04\"}}}", 26);
}

static void
test_plan_filters(void)
{
	ok_run("pf", "{\"insert\": \"c\", \"documents\": [{\"_id\": 1, \"a\": 1, \"b\": 1}]}");
	ok_run("pf", "{\"createIndexes\": \"c\", \"indexes\": [{\"key\": {\"a\": 1}, \"name\": \"a_1\"}, "
	    "{\"key\": {\"b\": 1}, \"name\": \"b_1\"}]}");
	ok_run("pf", "{\"planCacheSetFilter\": \"c\", \"query\": {\"a\": 1, \"b\": {\"$gt\": 1}}, \"indexes\": [\"b_1\"]}");
	/* the same shape: other values, other field order */
	FIELD_EQ("pf", "{\"explain\": {\"find\": \"c\", \"filter\": {\"b\": {\"$gt\": 7}, \"a\": 5}}, \"verbosity\": \"queryPlanner\"}",
	    "queryPlanner.indexFilterSet", "{ \"v\" : true }");
	/* another operator: another shape */
	FIELD_EQ("pf", "{\"explain\": {\"find\": \"c\", \"filter\": {\"a\": 5, \"b\": {\"$lt\": 7}}}, \"verbosity\": \"queryPlanner\"}",
	    "queryPlanner.indexFilterSet", "{ \"v\" : false }");
	fails("pf", "{\"planCacheSetFilter\": \"c\", \"query\": {\"a\": 1}, \"indexes\": []}", 2);
	fails("pf", "{\"planCacheSetFilter\": \"c\", \"query\": {\"a\": 1}}", 2);
	fails("pf", "{\"planCacheClearFilters\": \"c\", \"sort\": {\"a\": 1}}", 2);
	ok_run("pf", "{\"planCacheClearFilters\": \"c\"}");
	FIELD_EQ("pf", "{\"planCacheListFilters\": \"c\"}", "filters", "{ \"v\" : [  ] }");
}

/* A find whose batch reaches its limit ends the cursor (id 0: mongod's
 * executor is EOF once its LIMIT is met); one that stops before the limit
 * (batchSize) keeps it, and its getMore ends at the limit. */
static void
test_limit_ends_cursor(void)
{
	ok_run("lim", "{\"insert\": \"c\", \"documents\": [{\"_id\": 1}, {\"_id\": 2}, {\"_id\": 3}, {\"_id\": 4}]}");
	FIELD_EQ("lim", "{\"find\": \"c\", \"filter\": {\"_id\": {\"$gte\": 1}}, \"limit\": 1, \"batchSize\": 1}",
	    "cursor.id", "{ \"v\" : 0 }");
	FIELD_EQ("lim", "{\"find\": \"c\", \"filter\": {\"_id\": {\"$gte\": 1}}, \"limit\": 2, \"batchSize\": 2}",
	    "cursor.id", "{ \"v\" : 0 }");
	FIELD_EQ("lim", "{\"find\": \"c\", \"limit\": 4, \"batchSize\": 4}", "cursor.id", "{ \"v\" : 0 }");
	FIELD_EQ("lim", "{\"find\": \"c\", \"sort\": {\"_id\": -1}, \"limit\": 2, \"batchSize\": 2}",
	    "cursor.firstBatch", "{ \"v\" : [ { \"_id\" : 4 }, { \"_id\" : 3 } ] }");
	{
		int rc;
		bson_t *r = run("lim", "{\"find\": \"c\", \"limit\": 3, \"batchSize\": 2}", &rc);
		bson_iter_t f;
		int64_t id;
		char cmd[160];

		TT_EQ_INT(rc, 0);
		TT_ASSERT(tt_get(r, "cursor.id", &f));
		id = bson_iter_as_int64(&f);
		TT_ASSERT(id != 0);
		tt_free_reply(r);
		snprintf(cmd, sizeof cmd, "{\"getMore\": {\"$numberLong\": \"%lld\"}, \"collection\": \"c\", \"batchSize\": 5}",
		    (long long)id);
		r = run("lim", cmd, &rc);
		TT_EQ_INT(rc, 0);
		TT_ASSERT(tt_get(r, "cursor.id", &f) && bson_iter_as_int64(&f) == 0);
		TT_ASSERT(tt_get(r, "cursor.nextBatch.0._id", &f) && bson_iter_as_int64(&f) == 3);
		TT_ASSERT(!tt_get(r, "cursor.nextBatch.1", &f));
		tt_free_reply(r);
	}
}

/* returnKey over $text and geo plans: a text result keeps the key of the
 * first term (sorted) whose scan met it, prefix and suffix values with
 * their types; a geo result its one key; a document with several geo keys
 * (a polygon's cells) 238, and a collection scan of an indexed geo field
 * 238 too, never a key mongod would not give. */
static void
test_return_key_special(void)
{
	ok_run("rk", "{\"insert\": \"t\", \"documents\": [{\"_id\": 1, \"a\": 1, \"t\": \"zebra apple\", \"s\": 2.5}, "
	    "{\"_id\": 2, \"a\": 1, \"t\": \"zebra\", \"s\": {\"$numberLong\": \"9\"}}]}");
	ok_run("rk", "{\"createIndexes\": \"t\", \"indexes\": [{\"key\": {\"a\": 1, \"t\": \"text\", \"s\": 1}, \"name\": \"ats\"}]}");
	FIELD_EQ("rk", "{\"find\": \"t\", \"filter\": {\"a\": 1, \"$text\": {\"$search\": \"zebra apple\"}}, \"returnKey\": true, "
	    "\"sort\": {\"_id\": 1}}", "cursor.firstBatch",
	    "{ \"v\" : [ { \"a\" : 1, \"_fts\" : \"appl\", \"_ftsx\" : 0.75, \"s\" : 2.5 }, "
	    "{ \"a\" : 1, \"_fts\" : \"zebra\", \"_ftsx\" : 1.1000000000000000888, \"s\" : 9 } ] }");
	ok_run("rk", "{\"insert\": \"g\", \"documents\": [{\"_id\": 1, \"g\": {\"type\": \"Point\", \"coordinates\": [1, 1]}, "
	    "\"p\": [1, 1]}]}");
	ok_run("rk", "{\"createIndexes\": \"g\", \"indexes\": [{\"key\": {\"g\": \"2dsphere\"}, \"name\": \"g_s\"}, "
	    "{\"key\": {\"p\": \"2d\"}, \"name\": \"p_2d\"}]}");
	FIELD_EQ("rk", "{\"find\": \"g\", \"filter\": {\"p\": {\"$near\": [1, 1]}}, \"returnKey\": true}",
	    "cursor.firstBatch", "{ \"v\" : [ { \"p\" : { \"$binary\" : { \"base64\" : \"wADPPADPMAA=\", \"subType\" : \"80\" } } } ] }");
	fails("rk", "{\"find\": \"g\", \"filter\": {\"p\": {\"$geoWithin\": {\"$box\": [[0, 0], [2, 2]]}}}, \"returnKey\": true}",
	    238);
	ok_run("rk", "{\"insert\": \"g\", \"documents\": [{\"_id\": 2, \"g\": {\"type\": \"Polygon\", "
	    "\"coordinates\": [[[0, 0], [3, 0], [3, 3], [0, 0]]]}}]}");
	/* the polygon's key a covering scan meets first: for a point query, the
	 * polygon's one cell that contains the point's leaf cell (read from a
	 * point document at the same place through a whole-index scan) */
	ok_run("rk", "{\"insert\": \"g\", \"documents\": [{\"_id\": 3, \"g\": {\"type\": \"Point\", "
	    "\"coordinates\": [2, 1]}}]}");
	{
		int rc1, rc2;
		bson_t *a = run("rk", "{\"find\": \"g\", \"filter\": {\"_id\": 2, \"g\": {\"$geoIntersects\": {\"$geometry\": "
		    "{\"type\": \"Point\", \"coordinates\": [2, 1]}}}}, \"returnKey\": true}", &rc1);
		bson_t *b = run("rk", "{\"find\": \"g\", \"filter\": {\"_id\": 3}, \"hint\": \"g_s\", \"returnKey\": true}", &rc2);
		bson_iter_t ka, kb;
		TT_ASSERT(rc1 == 0 && rc2 == 0 && tt_get(a, "cursor.firstBatch.0.g", &ka) && tt_get(b, "cursor.firstBatch.0.g", &kb) &&
		    BSON_ITER_HOLDS_INT64(&ka) && BSON_ITER_HOLDS_INT64(&kb));
		if (!tt_cur_failed) {
			uint64_t cell = (uint64_t)bson_iter_int64(&ka), leaf = (uint64_t)bson_iter_int64(&kb);
			uint64_t lsb = cell & (~cell + 1);
			TT_ASSERT(leaf & 1);                        /* a level-30 cell */
			TT_ASSERT(!(cell & 1));                     /* the polygon's cell is coarser */
			TT_ASSERT(cell - (lsb - 1) <= leaf && leaf <= cell + (lsb - 1));
		}
		tt_free_reply(a);
		tt_free_reply(b);
	}
	/* a near search's order is its annuli's: 238 for a document with several keys */
	fails("rk", "{\"find\": \"g\", \"filter\": {\"_id\": 2, \"g\": {\"$near\": {\"$geometry\": {\"type\": \"Point\", "
	    "\"coordinates\": [2, 1]}}}}, \"returnKey\": true}", 238);
}

static void
test_find_and_writes(void)
{
	int64_t before, after;
	int rc;
	bson_t *r;

	ok_run("fw", "{\"insert\": \"c\", \"documents\": [{\"_id\": 1, \"k\": [3, 4], \"x\": 1}]}");
	ok_run("fw", "{\"createIndexes\": \"c\", \"indexes\": [{\"key\": {\"k\": 1}, \"name\": \"k_1\"}]}");
	FIELD_EQ("fw", "{\"find\": \"c\", \"filter\": {\"k\": 3}, \"returnKey\": true, \"hint\": \"k_1\", "
	    "\"projection\": {\"x\": 1}}", "cursor.firstBatch", "{ \"v\" : [ { \"k\" : 3 } ] }");
	FIELD_EQ("fw", "{\"find\": \"c\", \"filter\": {\"_id\": 1}, \"showRecordId\": true, \"projection\": {\"x\": 1}}",
	    "cursor.firstBatch", "{ \"v\" : [ { \"_id\" : 1, \"x\" : 1, \"$recordId\" : 1 } ] }");
	FIELD_EQ("fw", "{\"find\": \"c\", \"filter\": {\"k\": 3}, \"hint\": \"k_1\", \"showRecordId\": true, \"returnKey\": true}",
	    "cursor.firstBatch", "{ \"v\" : [ { \"k\" : 3, \"$recordId\" : 1 } ] }");
	/* resumable scans: the token of the last returned document */
	FIELD_EQ("fw", "{\"find\": \"c\", \"hint\": {\"$natural\": 1}, \"batchSize\": 1, \"$_requestResumeToken\": true}",
	    "cursor.postBatchResumeToken", "{ \"v\" : { \"$recordId\" : 1 } }");
	FIELD_EQ("fw", "{\"find\": \"c\", \"hint\": {\"$natural\": 1}, \"$_requestResumeToken\": true, "
	    "\"$_resumeAfter\": {\"$recordId\": {\"$numberLong\": \"1\"}}, \"projection\": {\"_id\": 1}}",
	    "cursor", "{ \"v\" : { \"firstBatch\" : [  ], \"postBatchResumeToken\" : { \"$recordId\" : null }, \"id\" : 0, \"ns\" : \"fw.c\" } }");
	fails("fw", "{\"find\": \"c\", \"hint\": {\"$natural\": 1}, \"$_requestResumeToken\": true, "
	    "\"$_resumeAfter\": {\"$recordId\": {\"$numberLong\": \"7\"}}}", 211);
	/* an int32 RecordId is malformed (mongod: NumberLong, BinData or null) */
	fails("fw", "{\"find\": \"c\", \"hint\": {\"$natural\": 1}, \"$_requestResumeToken\": true, "
	    "\"$_resumeAfter\": {\"$recordId\": 7}}", 2);
	/* $_startAt: past the RecordId when it is there (mongod's CollectionScan
	 * seeks it exactly, then advances), at the next one when it is not */
	FIELD_EQ("fw", "{\"find\": \"c\", \"hint\": {\"$natural\": 1}, \"$_requestResumeToken\": true, "
	    "\"$_startAt\": {\"$recordId\": {\"$numberLong\": \"1\"}}, \"projection\": {\"_id\": 1}}",
	    "cursor.firstBatch", "{ \"v\" : [  ] }");
	FIELD_EQ("fw", "{\"find\": \"c\", \"hint\": {\"$natural\": 1}, \"$_requestResumeToken\": true, "
	    "\"$_startAt\": {\"$recordId\": {\"$numberLong\": \"0\"}}, \"projection\": {\"_id\": 1}}",
	    "cursor.firstBatch", "{ \"v\" : [ { \"_id\" : 1 } ] }");
	/* returnKey of a multikey field: the element the scan met, not the first */
	FIELD_EQ("fw", "{\"find\": \"c\", \"filter\": {\"k\": 4}, \"returnKey\": true, \"hint\": \"k_1\"}",
	    "cursor.firstBatch", "{ \"v\" : [ { \"k\" : 4 } ] }");
	fails("fw", "{\"find\": \"c\", \"$_resumeAfter\": {\"$recordId\": 1}}", 2);
	fails("fw", "{\"find\": \"c\", \"hint\": {\"$natural\": 1}, \"$_requestResumeToken\": true, "
	    "\"$_resumeAfter\": {\"$recordId\": \"x\"}}", 2);
	/* through a blocking sort the RecordId (and returnKey's key) travel too */
	FIELD_EQ("fw", "{\"find\": \"c\", \"sort\": {\"x\": 1}, \"showRecordId\": true, \"projection\": {\"x\": 1}}",
	    "cursor.firstBatch", "{ \"v\" : [ { \"_id\" : 1, \"x\" : 1, \"$recordId\" : 1 } ] }");
	FIELD_EQ("fw", "{\"find\": \"c\", \"filter\": {\"k\": 4}, \"sort\": {\"x\": 1}, \"hint\": \"k_1\", "
	    "\"showRecordId\": true, \"returnKey\": true}",
	    "cursor.firstBatch", "{ \"v\" : [ { \"k\" : 4, \"$recordId\" : 1 } ] }");
	/* an upsert may create a top-level $-field; an update of a stored one may not */
	ok_run("fw", "{\"update\": \"c\", \"updates\": [{\"q\": {\"_id\": 5}, \"u\": {\"$set\": {\"$k\": 1}}, \"upsert\": true}]}");
	FIELD_EQ("fw", "{\"find\": \"c\", \"filter\": {\"_id\": 5}}", "cursor.firstBatch", "{ \"v\" : [ { \"_id\" : 5, \"$k\" : 1 } ] }");
	FIELD_EQ("fw", "{\"update\": \"c\", \"updates\": [{\"q\": {\"_id\": 1}, \"u\": {\"$set\": {\"$k\": 1}}}]}",
	    "writeErrors.0.code", "{ \"v\" : 52 }");
	/* empty top-level Timestamps are filled, nested ones and _id kept */
	ok_run("fw", "{\"insert\": \"t\", \"documents\": [{\"_id\": 1, \"t\": {\"$timestamp\": {\"t\": 0, \"i\": 0}}, "
	    "\"s\": {\"t\": {\"$timestamp\": {\"t\": 0, \"i\": 0}}}}]}");
	r = run("fw", "{\"find\": \"t\"}", &rc);
	{
		bson_iter_t f;
		uint32_t t = 0, i = 0;

		TT_ASSERT(tt_get(r, "cursor.firstBatch.0.t", &f) && BSON_ITER_HOLDS_TIMESTAMP(&f));
		bson_iter_timestamp(&f, &t, &i);
		TT_ASSERT(t > 0 && i > 0);
		TT_ASSERT(tt_get(r, "cursor.firstBatch.0.s.t", &f));
		bson_iter_timestamp(&f, &t, &i);
		TT_ASSERT(t == 0 && i == 0);
	}
	tt_free_reply(r);
	/* metrics.commands counts each run and each failure */
	r = run("admin", "{\"serverStatus\": 1}", &rc);
	before = tt_get_i64(r, "metrics.commands.distinct.failed");
	tt_free_reply(r);
	fails("fw", "{\"distinct\": \"c\", \"key\": 1}", 14);
	r = run("admin", "{\"serverStatus\": 1}", &rc);
	after = tt_get_i64(r, "metrics.commands.distinct.failed");
	tt_free_reply(r);
	TT_ASSERT(after == before + 1);
	/* top and metrics.commands through namespaces that alternate (the
	 * recorder's per-thread last-namespace cache misses and hits) */
	{
		int64_t finds0, finds1;

		r = run("admin", "{\"serverStatus\": 1}", &rc);
		finds0 = tt_get_i64(r, "metrics.commands.find.total");
		tt_free_reply(r);
		ok_run("fw2", "{\"insert\": \"topA\", \"documents\": [{\"_id\": 1}]}");
		for (int i = 0; i < 5; i++) {
			ok_run("fw", "{\"find\": \"topA\", \"filter\": {\"_id\": 1}}");
			ok_run("fw", "{\"find\": \"topA\"}");
			ok_run("fw2", "{\"find\": \"topA\"}");
			/* names that share a prefix with the cached one, both ways */
			ok_run("fw", "{\"find\": \"topAB\"}");
			ok_run("fw", "{\"find\": \"top\"}");
		}
		r = run("admin", "{\"top\": 1}", &rc);
		TT_EQ_INT(rc, 0);
		{
			bson_iter_t tot, ns, cnt;

			TT_ASSERT(tt_get(r, "totals", &tot) && bson_iter_recurse(&tot, &ns) &&
			    bson_iter_find(&ns, "fw.topA") && bson_iter_recurse(&ns, &cnt) &&
			    bson_iter_find_descendant(&cnt, "queries.count", &tot));
			TT_EQ_INT(bson_iter_as_int64(&tot), 10);
			/* total (not stored: readLock + writeLock) counts the same 10 */
			TT_ASSERT(bson_iter_recurse(&ns, &cnt) && bson_iter_find_descendant(&cnt, "total.count", &tot));
			TT_EQ_INT(bson_iter_as_int64(&tot), 10);
			TT_ASSERT(bson_iter_recurse(&ns, &cnt) && bson_iter_find_descendant(&cnt, "readLock.count", &tot));
			TT_EQ_INT(bson_iter_as_int64(&tot), 10);
			TT_ASSERT(tt_get(r, "totals", &tot) && bson_iter_recurse(&tot, &ns) &&
			    bson_iter_find(&ns, "fw.topAB") && bson_iter_recurse(&ns, &cnt) &&
			    bson_iter_find_descendant(&cnt, "queries.count", &tot));
			TT_EQ_INT(bson_iter_as_int64(&tot), 5);
			TT_ASSERT(tt_get(r, "totals", &tot) && bson_iter_recurse(&tot, &ns) &&
			    bson_iter_find(&ns, "fw.top") && bson_iter_recurse(&ns, &cnt) &&
			    bson_iter_find_descendant(&cnt, "queries.count", &tot));
			TT_EQ_INT(bson_iter_as_int64(&tot), 5);
		}
		tt_free_reply(r);
		r = run("admin", "{\"serverStatus\": 1}", &rc);
		finds1 = tt_get_i64(r, "metrics.commands.find.total");
		tt_free_reply(r);
		TT_ASSERT(finds1 == finds0 + 25);
		r = run("fw2", "{\"aggregate\": \"topA\", \"pipeline\": [{\"$collStats\": {\"latencyStats\": {}}}], \"cursor\": {}}", &rc);
		TT_EQ_INT(rc, 0);
		TT_EQ_INT(tt_get_i64(r, "cursor.firstBatch.0.latencyStats.reads.ops"), 5);
		tt_free_reply(r);
	}
}

/*
 * Random pipelines of the stages the rewrites touch, each run as written
 * and with {$skip: 0} between every two stages (which no rewrite crosses):
 * the same documents in the same order.
 */
static const char *const rnd_stages[] = {
	"{\"$match\": {\"a\": {\"$gte\": 2}}}", "{\"$match\": {\"b\": 3, \"a\": {\"$lt\": 4}}}",
	"{\"$match\": {\"c.d\": 1}}", "{\"$match\": {\"x\": {\"$in\": [1, 2]}}}",
	"{\"$match\": {\"z\": {\"$gt\": 2}}}", "{\"$match\": {\"e\": 1}}",
	"{\"$match\": {\"$or\": [{\"a\": 1}, {\"b\": 2}]}}", "{\"$match\": {\"c\": {\"$exists\": false}}}",
	"{\"$project\": {\"a\": 1, \"b\": 1, \"c\": 1, \"e\": 1}}", "{\"$project\": {\"x\": \"$a\", \"b\": 1, \"z\": 1}}",
	"{\"$project\": {\"b\": 0}}", "{\"$project\": {\"c.d\": 0}}", "{\"$project\": {\"_id\": 0, \"a\": 1, \"x\": 1}}",
	"{\"$addFields\": {\"z\": {\"$add\": [\"$a\", 1]}}}", "{\"$addFields\": {\"a\": \"$b\"}}",
	"{\"$addFields\": {\"x\": \"$b\"}}", "{\"$set\": {\"c.d\": 5}}", "{\"$unset\": \"c\"}",
	"{\"$unset\": [\"a\", \"x\"]}", "{\"$sort\": {\"a\": 1, \"_id\": 1}}", "{\"$sort\": {\"b\": -1, \"_id\": 1}}",
	"{\"$skip\": 3}", "{\"$limit\": 20}", "{\"$limit\": 7}", "{\"$skip\": 1}",
};

static char *
agg_result(const char *pipeline)
{
	char cmd[4096];
	int rc;
	bson_t *r;
	bson_iter_t f;
	char *s;

	snprintf(cmd, sizeof cmd, "{\"aggregate\": \"r\", \"pipeline\": %s, \"cursor\": {\"batchSize\": 1000}}",
	    pipeline);
	r = run("rnd", cmd, &rc);
	if (rc == 0 && tt_get(r, "cursor.firstBatch", &f)) {
		bson_t one = BSON_INITIALIZER;

		bson_append_iter(&one, "v", 1, &f);
		s = bson_as_relaxed_extended_json(&one, NULL);
		bson_destroy(&one);
	} else {
		s = bson_as_relaxed_extended_json(r, NULL);
	}
	tt_free_reply(r);
	return s;
}

static void
test_random_rewrites(void)
{
	uint32_t seed = 22;
	size_t ns = sizeof rnd_stages / sizeof rnd_stages[0];
	int rewritten = 0;

	for (int i = 0; i < 60; i++) {
		char doc[256];

		snprintf(doc, sizeof doc,
		    "{\"insert\": \"r\", \"documents\": [{\"_id\": %d, \"a\": %d, \"b\": %d, \"c\": {\"d\": %d}, "
		    "\"e\": [%d, %d], \"x\": %d}]}", i, i % 5, i % 7, i % 3, i % 2, i % 4, i % 6);
		ok_run("rnd", doc);
	}
	for (int t = 0; t < 300; t++) {
		char plain[4096] = "[", guarded[4096] = "[";
		int n;
		char *a, *b;

		seed = seed * 1103515245u + 12345u;
		n = 1 + (int)((seed >> 16) % 5);
		for (int k = 0; k < n; k++) {
			const char *st;

			seed = seed * 1103515245u + 12345u;
			st = rnd_stages[(seed >> 16) % ns];
			if (k > 0) {
				strcat(plain, ", ");
				strcat(guarded, ", {\"$skip\": 0}, ");
			}
			strcat(plain, st);
			strcat(guarded, st);
		}
		strcat(plain, "]");
		strcat(guarded, "]");
		{
			char *o = opt(plain);

			rewritten += strcmp(o, "same") != 0;
			bson_free(o);
		}
		a = agg_result(plain);
		b = agg_result(guarded);
		if (strcmp(a, b) != 0)
			TT_FAIL_("%s\n  rewritten: %s\n  as written: %s", plain, a, b);
		bson_free(a);
		bson_free(b);
	}
	/* the shapes do reach the rewrites */
	TT_ASSERT(rewritten > 60);
}

int
main(void)
{
	TT_RUN(test_coalesce);
	TT_RUN(test_match_moves);
	dir = tt_tmpdir("fidelity");
	if ((db = tt_open_new(dir)) == NULL)
		return 1;
	TT_RUN(test_db_hash_data_size);
	TT_RUN(test_apply_ops);
	TT_RUN(test_api_and_uuid);
	TT_RUN(test_plan_filters);
	TT_RUN(test_find_and_writes);
	TT_RUN(test_return_key_special);
	TT_RUN(test_limit_ends_cursor);
	TT_RUN(test_random_rewrites);
	tt_close_rm(db, dir);
	return tt_finish();
}
