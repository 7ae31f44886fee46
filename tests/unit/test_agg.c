/*
 * test_agg.c -- aggregation end to end through the embedded API: each stage
 * on small collections, the seeds' pipelines, the aggregate command's
 * arguments and errors, cursors across getMore, explain.
 */
#include "tt.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tt_embedded.h"

static tamga_t *db;
static char *dir;

static bson_t *
run(const char *dbname, const char *json, int *rc)
{
	return tt_run_json(db, dbname, json, rc);
}

static void
exec_ok(const char *json)
{
	int rc;
	bson_t *r = run("test", json, &rc);

	if (rc != 0) {
		char *j = bson_as_relaxed_extended_json(r, NULL);
		fprintf(stderr, "command failed: %s\n  -> %s\n", json, j);
		bson_free(j);
	}
	TT_EQ_INT(rc, 0);
	tt_free_reply(r);
}

/* Load documents (JSON array text) into a fresh collection. */
static void
load(const char *coll, const char *docs)
{
	char *cmd = bson_strdup_printf("{\"drop\": \"%s\"}", coll);
	int rc;
	bson_t *r = run("test", cmd, &rc);

	tt_free_reply(r);
	bson_free(cmd);
	cmd = bson_strdup_printf("{\"insert\": \"%s\", \"documents\": %s}", coll, docs);
	exec_ok(cmd);
	bson_free(cmd);
}

/* Run {aggregate: coll, pipeline, cursor: {}} and return firstBatch as
 * relaxed JSON (caller frees), or "error <code>: <errmsg>". */
static char *
agg(const char *coll, const char *pipeline)
{
	char *cmd;
	bson_t *r;
	int rc;
	char *out;

	if (coll == NULL)
		cmd = bson_strdup_printf("{\"aggregate\": 1, \"pipeline\": %s, \"cursor\": {}}", pipeline);
	else
		cmd = bson_strdup_printf("{\"aggregate\": \"%s\", \"pipeline\": %s, \"cursor\": {}}", coll,
		    pipeline);
	r = run("test", cmd, &rc);
	bson_free(cmd);
	out = tt_batch_text(r, rc, "no firstBatch");
	tt_free_reply(r);
	return out;
}

#define AGG_EQ(coll, pipeline, want) do { char *got_ = agg((coll), (pipeline)); \
	TT_EQ_STR(got_, (want)); bson_free(got_); } while (0)
#define AGG_ERR(coll, pipeline, code) do { char *got_ = agg((coll), (pipeline)); \
	char *want_ = bson_strdup_printf("error %d:", (code)); \
	if (strncmp(got_, want_, strlen(want_)) != 0) TT_FAIL_("%s -> %s (want %s)", (pipeline), got_, want_); \
	bson_free(want_); bson_free(got_); } while (0)

static void
test_match_project(void)
{
	load("c", "[{\"_id\": 1, \"a\": 1, \"b\": {\"c\": 1, \"d\": 2}}, {\"_id\": 2, \"a\": 2, \"b\": {\"c\": 3}},"
	          " {\"_id\": 3, \"a\": 3, \"b\": [{\"c\": 5, \"d\": 6}, 7]}]");
	AGG_EQ("c", "[{\"$match\": {\"a\": {\"$gte\": 2}}}, {\"$project\": {\"a\": 1}}]",
	    "[ { \"_id\" : 2, \"a\" : 2 }, { \"_id\" : 3, \"a\" : 3 } ]");
	AGG_EQ("c", "[{\"$match\": {\"_id\": 1}}, {\"$project\": {\"_id\": 0, \"b.c\": 1}}]",
	    "[ { \"b\" : { \"c\" : 1 } } ]");
	AGG_EQ("c", "[{\"$match\": {\"_id\": 3}}, {\"$project\": {\"b.d\": 0, \"a\": 0}}]",
	    "[ { \"_id\" : 3, \"b\" : [ { \"c\" : 5 }, 7 ] } ]");
	AGG_EQ("c", "[{\"$match\": {\"_id\": 3}}, {\"$project\": {\"b.c\": 1}}]",
	    "[ { \"_id\" : 3, \"b\" : [ { \"c\" : 5 } ] } ]");
	/* computed fields come after the included ones */
	AGG_EQ("c", "[{\"$match\": {\"_id\": 1}}, {\"$project\": {\"x\": {\"$add\": [\"$a\", 10]}, \"a\": 1, \"lit\": \"s\"}}]",
	    "[ { \"_id\" : 1, \"a\" : 1, \"x\" : 11, \"lit\" : \"s\" } ]");
	AGG_EQ("c", "[{\"$match\": {\"_id\": 2}}, {\"$project\": {\"_id\": 0, \"b.e\": \"$a\", \"m\": \"$missing\"}}]",
	    "[ { \"b\" : { \"e\" : 2 } } ]");
	AGG_ERR("c", "[{\"$project\": {\"a\": 1, \"b\": 0}}]", 31254);
	AGG_ERR("c", "[{\"$project\": {\"b\": 0, \"a\": 1}}]", 31253);
	AGG_ERR("c", "[{\"$project\": {}}]", 51272);
	AGG_ERR("c", "[{\"$project\": {\"a\": 1, \"a.b\": 1}}]", 31249);
	AGG_ERR("c", "[{\"$project\": {\"a.$\": 1}}]", 31324);
	AGG_ERR("c", "[{\"$addFields\": {\"$a\": 1}}]", 16410);
	AGG_ERR("c", "[{\"$match\": 5}]", 15959);
	AGG_ERR("c", "[{\"$match\": {\"a\": {\"$bogus\": 1}}}]", 2);
}

static void
test_add_fields_unset(void)
{
	load("c", "[{\"_id\": 1, \"a\": 1, \"b\": {\"c\": 1}}, {\"_id\": 2, \"a\": 2, \"b\": [{\"c\": 1}, 5]}]");
	AGG_EQ("c", "[{\"$addFields\": {\"a\": \"x\", \"z\": {\"$multiply\": [\"$a\", 2]}, \"b.d\": 9}}]",
	    "[ { \"_id\" : 1, \"a\" : \"x\", \"b\" : { \"c\" : 1, \"d\" : 9 }, \"z\" : 2 }, "
	    "{ \"_id\" : 2, \"a\" : \"x\", \"b\" : [ { \"c\" : 1, \"d\" : 9 }, { \"d\" : 9 } ], \"z\" : 4 } ]");
	AGG_EQ("c", "[{\"$set\": {\"a\": \"$$REMOVE\"}}, {\"$unset\": \"b\"}]",
	    "[ { \"_id\" : 1 }, { \"_id\" : 2 } ]");
	AGG_EQ("c", "[{\"$unset\": [\"a\", \"b.c\"]}]",
	    "[ { \"_id\" : 1, \"b\" : {  } }, { \"_id\" : 2, \"b\" : [ {  }, 5 ] } ]");
	AGG_ERR("c", "[{\"$unset\": 1}]", 31002);
}

/* $set keeps the runs of untouched fields as they are, replaces computed
 * ones in place and appends new ones in spec order, whatever the number of
 * fields in the spec (a few, more than 8: the name index, more than 64: the
 * heap array of seen fields). */
static void
test_set_many_fields(void)
{
	bson_string_t *spec = bson_string_new("[{\"$set\": {"), *want = bson_string_new("[ { \"_id\" : 1, ");
	char *got;

	load("m", "[{\"_id\": 1, \"f3\": \"keep\", \"x\": 1, \"f7\": 0, \"y\": {\"z\": 2}, \"f70\": 5}]");
	for (int i = 0; i < 72; i++)
		bson_string_append_printf(spec, "%s\"f%d\": %d", i ? ", " : "", i, i * 10);
	bson_string_append(spec, "}}]");
	/* document order: _id, f3 (replaced), x, f7 (replaced), y, f70 (replaced), then the new ones */
	bson_string_append(want, "\"f3\" : 30, \"x\" : 1, \"f7\" : 70, \"y\" : { \"z\" : 2 }, \"f70\" : 700");
	for (int i = 0; i < 72; i++)
		if (i != 3 && i != 7 && i != 70)
			bson_string_append_printf(want, ", \"f%d\" : %d", i, i * 10);
	bson_string_append(want, " } ]");
	got = agg("m", spec->str);
	TT_EQ_STR(got, want->str);
	bson_free(got);
	/* few fields, computed from the document, a field named like a kid's prefix */
	AGG_EQ("m", "[{\"$set\": {\"x\": {\"$add\": [\"$x\", 1]}, \"f\": \"$y.z\", \"y.w\": \"$f3\"}}]",
	    "[ { \"_id\" : 1, \"f3\" : \"keep\", \"x\" : 2, \"f7\" : 0, \"y\" : { \"z\" : 2, \"w\" : \"keep\" }, "
	    "\"f70\" : 5, \"f\" : 2 } ]");
	bson_string_free(spec, true);
	bson_string_free(want, true);
}

static void
test_limit_skip_count_sort(void)
{
	load("c", "[{\"_id\": 1, \"a\": 3}, {\"_id\": 2, \"a\": [1, 9]}, {\"_id\": 3}, {\"_id\": 4, \"a\": 2}]");
	AGG_EQ("c", "[{\"$sort\": {\"a\": 1}}]",
	    "[ { \"_id\" : 3 }, { \"_id\" : 2, \"a\" : [ 1, 9 ] }, { \"_id\" : 4, \"a\" : 2 }, { \"_id\" : 1, \"a\" : 3 } ]");
	AGG_EQ("c", "[{\"$sort\": {\"a\": -1}}, {\"$limit\": 2}]",
	    "[ { \"_id\" : 2, \"a\" : [ 1, 9 ] }, { \"_id\" : 1, \"a\" : 3 } ]");
	AGG_EQ("c", "[{\"$sort\": {\"_id\": -1}}, {\"$skip\": 1}, {\"$limit\": 1}, {\"$project\": {\"_id\": 1}}]",
	    "[ { \"_id\" : 3 } ]");
	AGG_EQ("c", "[{\"$count\": \"n\"}]", "[ { \"n\" : 4 } ]");
	AGG_EQ("c", "[{\"$match\": {\"zz\": 1}}, {\"$count\": \"n\"}]", "[ ]");
	AGG_ERR("c", "[{\"$limit\": 0}]", 15958);
	/* mongod 9.0: parseIntegerElementToNonNegativeLong (issue 22) */
	AGG_ERR("c", "[{\"$limit\": \"x\"}]", 5107201);
	AGG_ERR("c", "[{\"$limit\": -1}]", 5107201);
	AGG_ERR("c", "[{\"$limit\": 1.5}]", 5107201);
	AGG_ERR("c", "[{\"$skip\": -1}]", 5107200);
	AGG_ERR("c", "[{\"$skip\": 0.5}]", 5107200);
	AGG_ERR("c", "[{\"$skip\": 1e300}]", 5107200);
	AGG_ERR("c", "[{\"$skip\": {\"$numberDecimal\": \"1.5\"}}]", 5107200);
	AGG_EQ("c", "[{\"$sort\": {\"_id\": 1}}, {\"$skip\": -0.0}, {\"$skip\": {\"$numberDecimal\": \"3\"}}, {\"$project\": {\"_id\": 1}}]",
	    "[ { \"_id\" : 4 } ]");
	AGG_ERR("c", "[{\"$count\": \"$n\"}]", 40158);
	AGG_ERR("c", "[{\"$count\": \"a.b\"}]", 40160);
	AGG_ERR("c", "[{\"$sort\": {\"a\": 2}}]", 15975);
	AGG_ERR("c", "[{\"$sort\": {}}]", 15976);
	AGG_ERR("c", "[{\"$sort\": {\"$natural\": 1}}]", 15976);
	AGG_ERR("c", "[{\"$sort\": {\"a\": \"x\"}}]", 15974);
	AGG_ERR("c", "[{\"$project\": {\"a\": 1}}, {\"$sort\": {\"a\": {\"$meta\": \"textScore\"}}}]", 40218);

	/* a $sort that is not pushed down (after $addFields) orders as a pushed
	 * one: an empty array met beside other values is the smallest key
	 * (jstests sort_dotted_paths.js: 2 and 9 first) */
	load("dp", "[{\"_id\": 1, \"a\": {\"b\": 2}}, {\"_id\": 2, \"a\": {\"b\": []}},"
	    " {\"_id\": 3, \"a\": {\"b\": [2, 3]}}, {\"_id\": 4, \"a\": {\"c\": 1}}, {\"_id\": 5, \"a\": []},"
	    " {\"_id\": 6, \"a\": [{\"b\": [5]}]}, {\"_id\": 7, \"a\": [{\"b\": [4, 5]}, {\"b\": 7}]},"
	    " {\"_id\": 8, \"a\": [{\"b\": [1, 3]}, {\"b\": [2, 5]}]}, {\"_id\": 9, \"a\": [{\"b\": []}, {\"b\": [1, 3]}]}]");
	AGG_EQ("dp", "[{\"$sort\": {\"a.b\": 1, \"_id\": 1}}, {\"$project\": {\"_id\": 1}}]",
	    "[ { \"_id\" : 2 }, { \"_id\" : 9 }, { \"_id\" : 4 }, { \"_id\" : 5 }, { \"_id\" : 8 },"
	    " { \"_id\" : 1 }, { \"_id\" : 3 }, { \"_id\" : 7 }, { \"_id\" : 6 } ]");
	AGG_EQ("dp", "[{\"$addFields\": {\"z\": 1}}, {\"$sort\": {\"a.b\": 1, \"_id\": 1}}, {\"$project\": {\"_id\": 1}}]",
	    "[ { \"_id\" : 2 }, { \"_id\" : 9 }, { \"_id\" : 4 }, { \"_id\" : 5 }, { \"_id\" : 8 },"
	    " { \"_id\" : 1 }, { \"_id\" : 3 }, { \"_id\" : 7 }, { \"_id\" : 6 } ]");
	AGG_EQ("dp", "[{\"$addFields\": {\"z\": 1}}, {\"$sort\": {\"a.b\": -1, \"_id\": -1}}, {\"$limit\": 4},"
	    " {\"$project\": {\"_id\": 1}}]",
	    "[ { \"_id\" : 7 }, { \"_id\" : 8 }, { \"_id\" : 6 }, { \"_id\" : 9 } ]");
}

static void
test_group(void)
{
	load("r", "[{\"_id\": 1, \"bookId\": 26, \"rating\": 5}, {\"_id\": 2, \"bookId\": 26, \"rating\": 4},"
	          " {\"_id\": 3, \"bookId\": 7, \"rating\": 3}, {\"_id\": 4, \"bookId\": 26.0, \"rating\": 5}]");
	/* the seed's computed pattern */
	AGG_EQ("r", "[{\"$group\": {\"_id\": \"$bookId\", \"count\": {\"$sum\": 1}, \"sum\": {\"$sum\": \"$rating\"}}}]",
	    "[ { \"_id\" : 26, \"count\" : 3, \"sum\" : 14 }, { \"_id\" : 7, \"count\" : 1, \"sum\" : 3 } ]");
	/* countDocuments as drivers send it */
	AGG_EQ("r", "[{\"$match\": {\"bookId\": 26}}, {\"$skip\": 1}, {\"$group\": {\"_id\": 1, \"n\": {\"$sum\": 1}}}]",
	    "[ { \"_id\" : 1, \"n\" : 2 } ]");
	AGG_EQ("r", "[{\"$group\": {\"_id\": {\"b\": \"$bookId\"}, \"avg\": {\"$avg\": \"$rating\"}, \"r\": {\"$push\": \"$rating\"}}},"
	            " {\"$sort\": {\"_id.b\": 1}}]",
	    "[ { \"_id\" : { \"b\" : 7 }, \"avg\" : 3.0, \"r\" : [ 3 ] }, "
	    "{ \"_id\" : { \"b\" : 26 }, \"avg\" : 4.6666666666666669627, \"r\" : [ 5, 4, 5 ] } ]");
	AGG_EQ("r", "[{\"$sortByCount\": \"$rating\"}, {\"$limit\": 1}]", "[ { \"_id\" : 5, \"count\" : 2 } ]");
	AGG_EQ("r", "[{\"$bucket\": {\"groupBy\": \"$rating\", \"boundaries\": [0, 4, 6]}}]",
	    "[ { \"_id\" : 0, \"count\" : 1 }, { \"_id\" : 4, \"count\" : 3 } ]");
	AGG_EQ("r", "[{\"$match\": {\"nothing\": 1}}, {\"$group\": {\"_id\": null, \"n\": {\"$sum\": 1}}}]", "[ ]");
	AGG_ERR("r", "[{\"$group\": {\"n\": {\"$sum\": 1}}}]", 15955);
	AGG_ERR("r", "[{\"$group\": {\"_id\": 1, \"n\": 5}}]", 40234);
	AGG_ERR("r", "[{\"$group\": {\"_id\": 1, \"n\": {\"$bogus\": 1}}}]", 15952);
	AGG_ERR("r", "[{\"$bucket\": {\"groupBy\": \"$rating\", \"boundaries\": [5, 1]}}]", 40194);
}

static void
test_unwind_replace(void)
{
	load("u", "[{\"_id\": 1, \"a\": [1, 2]}, {\"_id\": 2, \"a\": []}, {\"_id\": 3, \"a\": null}, {\"_id\": 4}, {\"_id\": 5, \"a\": 7}]");
	AGG_EQ("u", "[{\"$unwind\": \"$a\"}]",
	    "[ { \"_id\" : 1, \"a\" : 1 }, { \"_id\" : 1, \"a\" : 2 }, { \"_id\" : 5, \"a\" : 7 } ]");
	AGG_EQ("u", "[{\"$unwind\": {\"path\": \"$a\", \"includeArrayIndex\": \"i\", \"preserveNullAndEmptyArrays\": true}}]",
	    "[ { \"_id\" : 1, \"a\" : 1, \"i\" : 0 }, { \"_id\" : 1, \"a\" : 2, \"i\" : 1 }, { \"_id\" : 2, \"i\" : null }, "
	    "{ \"_id\" : 3, \"a\" : null, \"i\" : null }, { \"_id\" : 4, \"i\" : null }, { \"_id\" : 5, \"a\" : 7, \"i\" : null } ]");
	AGG_EQ("u", "[{\"$match\": {\"_id\": 1}}, {\"$replaceRoot\": {\"newRoot\": {\"x\": \"$a\"}}}]",
	    "[ { \"x\" : [ 1, 2 ] } ]");
	AGG_EQ("u", "[{\"$match\": {\"_id\": 1}}, {\"$replaceWith\": {\"y\": 1}}]", "[ { \"y\" : 1 } ]");
	AGG_ERR("u", "[{\"$replaceWith\": \"$a\"}]", 40228);
	AGG_ERR("u", "[{\"$unwind\": \"a\"}]", 28818);
	AGG_ERR("u", "[{\"$unwind\": {\"path\": \"$a\", \"bogus\": 1}}]", 28811);
}

static void
test_pipeline_errors(void)
{
	bson_string_t *big;
	int i;
	char *got;

	AGG_ERR("c", "[{\"$bogus\": 1}]", 40324);
	AGG_ERR("c", "[{\"$match\": {}, \"$limit\": 1}]", 40323);
	AGG_ERR("c", "[{\"$out\": \"x\"}, {\"$match\": {}}]", 40601);
	AGG_ERR("c", "[{\"$match\": {}}, {\"$documents\": []}]", 40602);
	AGG_ERR("c", "[{\"$facet\": {\"a\": [{\"$facet\": {\"b\": []}}]}}]", 40600);
	AGG_ERR("c", "[{\"$out\": \"system.foo\"}]", 17385);
	AGG_ERR(NULL, "[{\"$match\": {}}]", 73);
	AGG_ERR("c", "[{\"$documents\": [{\"a\": 1}]}]", 73);
	/* 1001 stages */
	big = bson_string_new("[");
	for (i = 0; i < 1001; i++)
		bson_string_append(big, i ? ", {\"$limit\": 5}" : "{\"$limit\": 5}");
	bson_string_append(big, "]");
	got = agg("c", big->str);
	TT_ASSERT(strncmp(got, "error 7749501:", 14) == 0);
	bson_free(got);
	bson_string_free(big, true);
}

static void
test_command_errors(void)
{
	int rc;
	bson_t *r;
	bson_iter_t it;

	r = run("test", "{\"aggregate\": \"c\", \"pipeline\": []}", &rc);
	TT_ASSERT(rc != 0);
	TT_ASSERT(bson_iter_init_find(&it, r, "code") && bson_iter_as_int64(&it) == 9);
	tt_free_reply(r);
	r = run("test", "{\"aggregate\": \"c\", \"pipeline\": {}, \"cursor\": {}}", &rc);
	TT_ASSERT(bson_iter_init_find(&it, r, "code") && bson_iter_as_int64(&it) == 14);
	tt_free_reply(r);
	r = run("test", "{\"aggregate\": \"c\", \"cursor\": {}}", &rc);
	TT_ASSERT(bson_iter_init_find(&it, r, "code") && bson_iter_as_int64(&it) == 40414);
	tt_free_reply(r);
	r = run("test", "{\"aggregate\": \"c\", \"pipeline\": [], \"cursor\": {\"bogus\": 1}}", &rc);
	TT_ASSERT(bson_iter_init_find(&it, r, "code") && bson_iter_as_int64(&it) == 40415);
	tt_free_reply(r);
	r = run("test", "{\"aggregate\": \"c\", \"pipeline\": [], \"cursor\": {}, \"bogus\": 1}", &rc);
	TT_ASSERT(bson_iter_init_find(&it, r, "code") && bson_iter_as_int64(&it) == 40415);
	tt_free_reply(r);
	r = run("test", "{\"aggregate\": \"c\", \"pipeline\": [], \"cursor\": {}, \"collation\": {\"locale\": \"xx\"}}", &rc);
	TT_ASSERT(bson_iter_init_find(&it, r, "code") && bson_iter_as_int64(&it) == 2);
	tt_free_reply(r);
	r = run("test", "{\"aggregate\": \"c\", \"pipeline\": [], \"cursor\": {}, \"collation\": 1}", &rc);
	TT_ASSERT(bson_iter_init_find(&it, r, "code") && bson_iter_as_int64(&it) == 14);
	tt_free_reply(r);
	/* runtime errors carry mongod's prefix */
	{
		char *got = agg("c", "[{\"$project\": {\"x\": {\"$divide\": [1, {\"$subtract\": [\"$_id\", \"$_id\"]}]}}}]");
		TT_ASSERT(strstr(got, "Executor error during aggregate command on namespace: ") != NULL);
		bson_free(got);
	}
}

static void
test_cursor_batches(void)
{
	bson_string_t *docs = bson_string_new("[");
	bson_t *r;
	bson_iter_t it;
	int rc, i;
	int64_t id;
	char *cmd;

	for (i = 0; i < 250; i++)
		bson_string_append_printf(docs, "%s{\"_id\": %d, \"g\": %d}", i ? ", " : "", i, i % 3);
	bson_string_append(docs, "]");
	load("big", docs->str);
	bson_string_free(docs, true);
	r = run("test", "{\"aggregate\": \"big\", \"pipeline\": [{\"$match\": {\"g\": {\"$ne\": 5}}}], \"cursor\": {\"batchSize\": 100}}", &rc);
	TT_EQ_INT(rc, 0);
	TT_ASSERT(bson_iter_init(&it, r) && bson_iter_find_descendant(&it, "cursor.id", &it));
	id = bson_iter_as_int64(&it);
	TT_ASSERT(id != 0);
	tt_free_reply(r);
	cmd = bson_strdup_printf("{\"getMore\": {\"$numberLong\": \"%lld\"}, \"collection\": \"big\"}", (long long)id);
	r = run("test", cmd, &rc);
	bson_free(cmd);
	TT_EQ_INT(rc, 0);
	{
		bson_iter_t f;
		const uint8_t *d;
		uint32_t l;
		bson_t arr;
		TT_ASSERT(bson_iter_init(&it, r) && bson_iter_find_descendant(&it, "cursor.nextBatch", &f));
		bson_iter_array(&f, &l, &d);
		bson_init_static(&arr, d, l);
		TT_EQ_INT(bson_count_keys(&arr), 150);
		TT_ASSERT(bson_iter_init(&it, r) && bson_iter_find_descendant(&it, "cursor.id", &f));
		TT_EQ_INT(bson_iter_as_int64(&f), 0);
	}
	tt_free_reply(r);
	AGG_EQ("big", "[{\"$project\": {\"g\": 1}}, {\"$sort\": {\"g\": -1, \"_id\": 1}}, {\"$limit\": 3}]",
	    "[ { \"_id\" : 2, \"g\" : 2 }, { \"_id\" : 5, \"g\" : 2 }, { \"_id\" : 8, \"g\" : 2 } ]");
	AGG_EQ("big", "[{\"$project\": {\"g\": 1}}, {\"$sort\": {\"g\": 1}}, {\"$limit\": 2}]",
	    "[ { \"_id\" : 0, \"g\" : 0 }, { \"_id\" : 3, \"g\" : 0 } ]");
	AGG_EQ("big", "[{\"$group\": {\"_id\": \"$g\", \"n\": {\"$sum\": 1}}}, {\"$sort\": {\"_id\": 1}}]",
	    "[ { \"_id\" : 0, \"n\" : 84 }, { \"_id\" : 1, \"n\" : 83 }, { \"_id\" : 2, \"n\" : 83 } ]");
}

/* Drain a cursor with getMore; returns the number of documents. */
static int64_t
drain(const char *coll, const char *pipeline, int batch)
{
	char *cmd = bson_strdup_printf("{\"aggregate\": \"%s\", \"pipeline\": %s, \"cursor\": {\"batchSize\": %d}}",
	    coll, pipeline, batch);
	bson_t *r;
	bson_iter_t it, f;
	int64_t id, total = 0;
	int rc;
	const char *which = "cursor.firstBatch";

	r = run("test", cmd, &rc);
	bson_free(cmd);
	for (;;) {
		const uint8_t *d;
		uint32_t l;
		bson_t arr;
		if (rc != 0 || !bson_iter_init(&it, r) || !bson_iter_find_descendant(&it, which, &f)) {
			tt_free_reply(r);
			return -1;
		}
		bson_iter_array(&f, &l, &d);
		bson_init_static(&arr, d, l);
		total += bson_count_keys(&arr);
		bson_iter_init(&it, r);
		bson_iter_find_descendant(&it, "cursor.id", &f);
		id = bson_iter_as_int64(&f);
		tt_free_reply(r);
		if (id == 0)
			return total;
		cmd = bson_strdup_printf("{\"getMore\": {\"$numberLong\": \"%lld\"}, \"collection\": \"%s\", \"batchSize\": %d}",
		    (long long)id, coll, batch);
		r = run("test", cmd, &rc);
		bson_free(cmd);
		which = "cursor.nextBatch";
	}
}

static void
test_getmore_stages(void)
{
	TT_EQ_INT(drain("big", "[{\"$match\": {\"g\": 0}}, {\"$unionWith\": \"big\"}]", 10), 84 + 250);
	TT_EQ_INT(drain("big", "[{\"$unionWith\": {\"coll\": \"big\", \"pipeline\": [{\"$match\": {\"g\": 1}}]}}, {\"$project\": {\"g\": 1}}]", 7), 250 + 83);
	TT_EQ_INT(drain("big", "[{\"$sort\": {\"g\": 1, \"_id\": -1}}, {\"$skip\": 5}]", 50), 245);
	TT_EQ_INT(drain("big", "[{\"$lookup\": {\"from\": \"big\", \"localField\": \"_id\", \"foreignField\": \"_id\", \"as\": \"s\"}}, {\"$unwind\": \"$s\"}]", 33), 250);
	/* an error in a later batch carries getMore's context */
	{
		int rc;
		bson_t *r = run("test", "{\"aggregate\": \"big\", \"pipeline\": [{\"$project\": {\"x\": {\"$divide\": [1, {\"$subtract\": [\"$_id\", 200]}]}}}],"
		    " \"cursor\": {\"batchSize\": 10}}", &rc);
		bson_iter_t it;
		int64_t id = 0;
		char *cmd;
		TT_EQ_INT(rc, 0);
		if (bson_iter_init(&it, r) && bson_iter_find_descendant(&it, "cursor.id", &it))
			id = bson_iter_as_int64(&it);
		tt_free_reply(r);
		cmd = bson_strdup_printf("{\"getMore\": {\"$numberLong\": \"%lld\"}, \"collection\": \"big\"}", (long long)id);
		r = run("test", cmd, &rc);
		bson_free(cmd);
		TT_ASSERT(rc != 0);
		TT_ASSERT(bson_iter_init_find(&it, r, "errmsg") &&
		    strcmp(bson_iter_utf8(&it, NULL), "Executor error during getMore :: caused by :: can't $divide by zero") == 0);
		tt_free_reply(r);
	}
}

static void
test_lookup_facet_union(void)
{
	load("orders", "[{\"_id\": 1, \"item\": \"a\", \"qty\": 2}, {\"_id\": 2, \"item\": \"b\", \"qty\": 1}, {\"_id\": 3}]");
	load("items", "[{\"_id\": \"a\", \"price\": 10}, {\"_id\": \"b\", \"price\": 5}, {\"_id\": \"c\", \"price\": 1}]");
	AGG_EQ("orders", "[{\"$lookup\": {\"from\": \"items\", \"localField\": \"item\", \"foreignField\": \"_id\", \"as\": \"i\"}}]",
	    "[ { \"_id\" : 1, \"item\" : \"a\", \"qty\" : 2, \"i\" : [ { \"_id\" : \"a\", \"price\" : 10 } ] }, "
	    "{ \"_id\" : 2, \"item\" : \"b\", \"qty\" : 1, \"i\" : [ { \"_id\" : \"b\", \"price\" : 5 } ] }, "
	    "{ \"_id\" : 3, \"i\" : [  ] } ]");
	AGG_EQ("orders", "[{\"$match\": {\"_id\": 1}}, {\"$lookup\": {\"from\": \"items\", \"let\": {\"q\": \"$qty\"},"
	                 " \"pipeline\": [{\"$match\": {\"$expr\": {\"$gt\": [\"$price\", \"$$q\"]}}}, {\"$project\": {\"_id\": 1}}], \"as\": \"i\"}}]",
	    "[ { \"_id\" : 1, \"item\" : \"a\", \"qty\" : 2, \"i\" : [ { \"_id\" : \"a\" }, { \"_id\" : \"b\" } ] } ]");
	AGG_EQ("orders", "[{\"$facet\": {\"n\": [{\"$count\": \"c\"}], \"ids\": [{\"$project\": {\"_id\": 1}}, {\"$limit\": 1}]}}]",
	    "[ { \"n\" : [ { \"c\" : 3 } ], \"ids\" : [ { \"_id\" : 1 } ] } ]");
	AGG_EQ("orders", "[{\"$project\": {\"_id\": 1}}, {\"$unionWith\": {\"coll\": \"items\", \"pipeline\": [{\"$match\": {\"price\": {\"$lt\": 6}}}]}}]",
	    "[ { \"_id\" : 1 }, { \"_id\" : 2 }, { \"_id\" : 3 }, { \"_id\" : \"b\", \"price\" : 5 }, { \"_id\" : \"c\", \"price\" : 1 } ]");
	AGG_EQ(NULL, "[{\"$documents\": [{\"x\": 1}, {\"x\": 2}]}, {\"$match\": {\"x\": 2}}]", "[ { \"x\" : 2 } ]");
	load("emp", "[{\"_id\": 1, \"name\": \"a\"}, {\"_id\": 2, \"name\": \"b\", \"boss\": \"a\"},"
	    " {\"_id\": 3, \"name\": \"c\", \"boss\": \"b\"}, {\"_id\": 4, \"name\": \"d\", \"boss\": \"c\"}]");
	AGG_EQ("emp", "[{\"$match\": {\"_id\": 4}}, {\"$graphLookup\": {\"from\": \"emp\", \"startWith\": \"$boss\","
	    " \"connectFromField\": \"boss\", \"connectToField\": \"name\", \"as\": \"chain\", \"depthField\": \"d\"}},"
	    " {\"$project\": {\"chain._id\": 1, \"chain.d\": 1}}]",
	    "[ { \"_id\" : 4, \"chain\" : [ { \"_id\" : 3, \"d\" : 0 }, { \"_id\" : 2, \"d\" : 1 }, { \"_id\" : 1, \"d\" : 2 } ] } ]");
	AGG_EQ("emp", "[{\"$match\": {\"_id\": 4}}, {\"$graphLookup\": {\"from\": \"emp\", \"startWith\": \"$boss\","
	    " \"connectFromField\": \"boss\", \"connectToField\": \"name\", \"as\": \"chain\", \"maxDepth\": 0}},"
	    " {\"$project\": {\"chain._id\": 1}}]",
	    "[ { \"_id\" : 4, \"chain\" : [ { \"_id\" : 3 } ] } ]");
	AGG_ERR("emp", "[{\"$graphLookup\": {\"from\": \"emp\", \"startWith\": \"$boss\"}}]", 40105);
	AGG_ERR("emp", "[{\"$graphLookup\": {\"from\": \"emp\", \"maxDepth\": -1}}]", 40101);
	AGG_ERR("orders", "[{\"$lookup\": {\"from\": \"items\", \"as\": \"i\"}}]", 9);
	/* the hash join answers as the per-document query does */
	load("fl", "[{\"_id\": 1, \"k\": 1}, {\"_id\": 2, \"k\": [1, 2]}, {\"_id\": 3}, {\"_id\": 4, \"k\": null},"
	    " {\"_id\": 5, \"k\": [[1, 2], 3]}, {\"_id\": 6, \"k\": 2.0}, {\"_id\": 7, \"k\": {\"x\": 1}}, {\"_id\": 8, \"k\": [{\"x\": 1}]},"
	    " {\"_id\": 9, \"k\": \"1\"}, {\"_id\": 10, \"k\": []}]");
	load("ll", "[{\"_id\": 1, \"l\": 1}, {\"_id\": 2, \"l\": [2, 3]}, {\"_id\": 3}, {\"_id\": 4, \"l\": [[1, 2]]},"
	    " {\"_id\": 5, \"l\": {\"x\": 1}}, {\"_id\": 6, \"l\": null}, {\"_id\": 7, \"l\": []}, {\"_id\": 8, \"l\": {\"$numberDecimal\": \"2.0\"}}]");
	{
		char *hashed = agg("ll", "[{\"$lookup\": {\"from\": \"fl\", \"localField\": \"l\", \"foreignField\": \"k\", \"as\": \"m\"}},"
		    " {\"$project\": {\"m._id\": 1}}]");
		char *queried = agg("ll", "[{\"$lookup\": {\"from\": \"fl\", \"localField\": \"l\", \"foreignField\": \"k\", \"as\": \"m\","
		    " \"pipeline\": [{\"$match\": {}}]}}, {\"$project\": {\"m._id\": 1}}]");
		TT_EQ_STR(hashed, queried);
		TT_ASSERT(strncmp(hashed, "[ { \"_id\" : 1, \"m\" : [ { \"_id\" : 1 }, { \"_id\" : 2 } ] }, "
		    "{ \"_id\" : 2, \"m\" : [ { \"_id\" : 2 }, { \"_id\" : 5 }, { \"_id\" : 6 } ] }",
		    strlen("[ { \"_id\" : 1, \"m\" : [ { \"_id\" : 1 }, { \"_id\" : 2 } ] }, "
		    "{ \"_id\" : 2, \"m\" : [ { \"_id\" : 2 }, { \"_id\" : 5 }, { \"_id\" : 6 } ] }")) == 0);
		bson_free(hashed);
		bson_free(queried);
	}
	AGG_ERR("orders", "[{\"$lookup\": {\"from\": \"items\", \"pipeline\": [{\"$out\": \"z\"}], \"as\": \"i\"}}]", 51047);
}

static void
test_merge_out(void)
{
	load("orders", "[{\"_id\": 1, \"status\": \"Delivered\", \"v\": 1}, {\"_id\": 2, \"status\": \"Open\", \"v\": 2},"
	               " {\"_id\": 3, \"status\": \"Cancelled\", \"v\": 3}]");
	load("archive", "[{\"_id\": 3, \"status\": \"old\"}]");
	/* the seed's archive pattern */
	AGG_EQ("orders", "[{\"$match\": {\"status\": {\"$in\": [\"Delivered\", \"Cancelled\"]}}},"
	                 " {\"$merge\": {\"into\": \"archive\", \"whenMatched\": \"keepExisting\", \"whenNotMatched\": \"insert\"}}]", "[ ]");
	AGG_EQ("archive", "[{\"$sort\": {\"_id\": 1}}]",
	    "[ { \"_id\" : 1, \"status\" : \"Delivered\", \"v\" : 1 }, { \"_id\" : 3, \"status\" : \"old\" } ]");
	AGG_EQ("orders", "[{\"$merge\": {\"into\": \"archive\"}}]", "[ ]");
	AGG_EQ("archive", "[{\"$sort\": {\"_id\": 1}}]",
	    "[ { \"_id\" : 1, \"status\" : \"Delivered\", \"v\" : 1 }, { \"_id\" : 2, \"status\" : \"Open\", \"v\" : 2 }, "
	    "{ \"_id\" : 3, \"status\" : \"Cancelled\", \"v\" : 3 } ]");
	AGG_EQ("orders", "[{\"$project\": {\"v\": 1}}, {\"$merge\": {\"into\": \"archive\", \"whenMatched\": \"replace\"}}]", "[ ]");
	AGG_EQ("archive", "[{\"$match\": {\"_id\": 2}}]", "[ { \"_id\" : 2, \"v\" : 2 } ]");
	AGG_EQ("orders", "[{\"$match\": {\"_id\": 2}}, {\"$merge\": {\"into\": \"archive\", \"whenMatched\": "
	                 "[{\"$set\": {\"n\": {\"$add\": [\"$v\", \"$$new.v\"]}}}]}}]", "[ ]");
	AGG_EQ("archive", "[{\"$match\": {\"_id\": 2}}]", "[ { \"_id\" : 2, \"v\" : 2, \"n\" : 4 } ]");
	AGG_ERR("orders", "[{\"$merge\": {\"into\": \"archive\", \"whenMatched\": \"fail\"}}]", 11000);
	AGG_ERR(NULL, "[{\"$documents\": [{\"_id\": 99}]}, {\"$merge\": {\"into\": \"archive\", \"whenNotMatched\": \"fail\"}}]", 13113);
	AGG_ERR("orders", "[{\"$merge\": {\"into\": \"archive\", \"on\": \"status\"}}]", 51183);
	AGG_ERR("orders", "[{\"$merge\": {\"into\": \"nowhere\", \"on\": [\"status\", \"v\"]}}]", 51183);
	{
		int rc;
		bson_t *r = run("test", "{\"listCollections\": 1, \"filter\": {\"name\": \"nowhere\"}}", &rc);
		bson_iter_t it;
		TT_ASSERT(bson_iter_init(&it, r) && bson_iter_find_descendant(&it, "cursor.firstBatch", &it));
		TT_ASSERT(bson_iter_init(&it, r) && !bson_iter_find_descendant(&it, "cursor.firstBatch.0", &it));
		tt_free_reply(r);
	}
	AGG_ERR("orders", "[{\"$merge\": {\"into\": \"archive\", \"whenMatched\": \"bogus\"}}]", 2);
	/* $out replaces the target */
	AGG_EQ("orders", "[{\"$match\": {\"_id\": {\"$gt\": 1}}}, {\"$project\": {\"v\": 1}}, {\"$out\": \"copy\"}]", "[ ]");
	AGG_EQ("copy", "[]", "[ { \"_id\" : 2, \"v\" : 2 }, { \"_id\" : 3, \"v\" : 3 } ]");
	AGG_EQ("orders", "[{\"$match\": {\"_id\": 1}}, {\"$out\": \"copy\"}]", "[ ]");
	AGG_EQ("copy", "[]", "[ { \"_id\" : 1, \"status\" : \"Delivered\", \"v\" : 1 } ]");
	/* an error leaves the target as it was */
	AGG_ERR("orders", "[{\"$project\": {\"_id\": 0, \"x\": {\"$divide\": [1, {\"$subtract\": [\"$v\", 2]}]}}}, {\"$out\": \"copy\"}]", 2);
	AGG_EQ("copy", "[]", "[ { \"_id\" : 1, \"status\" : \"Delivered\", \"v\" : 1 } ]");
	/* targets are validated like any write, honouring bypassDocumentValidation */
	{
		int rc;
		bson_t *r = run("test", "{\"drop\": \"valid\"}", &rc);
		tt_free_reply(r);
		exec_ok("{\"create\": \"valid\", \"validator\": {\"v\": {\"$type\": \"string\"}}}");
		AGG_ERR("orders", "[{\"$merge\": {\"into\": \"valid\"}}]", 121);
		AGG_EQ("valid", "[{\"$count\": \"n\"}]", "[ ]");
		AGG_ERR("orders", "[{\"$out\": \"valid\"}]", 121);
		exec_ok("{\"aggregate\": \"orders\", \"pipeline\": [{\"$merge\": {\"into\": \"valid\"}}], \"cursor\": {}, \"bypassDocumentValidation\": true}");
		AGG_EQ("valid", "[{\"$count\": \"n\"}]", "[ { \"n\" : 3 } ]");
	}
	/* batchSize 0 still writes */
	exec_ok("{\"aggregate\": \"orders\", \"pipeline\": [{\"$out\": \"copy2\"}], \"cursor\": {\"batchSize\": 0}}");
	AGG_EQ("copy2", "[{\"$count\": \"n\"}]", "[ { \"n\" : 3 } ]");
}

static void
test_explain_let(void)
{
	int rc;
	bson_t *r;
	bson_iter_t it;

	r = run("test", "{\"aggregate\": \"orders\", \"pipeline\": [{\"$match\": {\"v\": 1}}, {\"$sortByCount\": \"$v\"}], \"explain\": true}", &rc);
	TT_EQ_INT(rc, 0);
	TT_ASSERT(bson_iter_init(&it, r) && bson_iter_find_descendant(&it, "stages.0.$cursor.queryPlanner.winningPlan.stage", &it));
	TT_ASSERT(bson_iter_init(&it, r) && bson_iter_find_descendant(&it, "stages.1.$group", &it));
	TT_ASSERT(bson_iter_init(&it, r) && bson_iter_find_descendant(&it, "stages.2.$sort", &it));
	tt_free_reply(r);
	r = run("test", "{\"aggregate\": \"orders\", \"pipeline\": [{\"$sort\": {\"v\": -1}}, {\"$limit\": 2}, {\"$project\": {\"v\": 1}}], \"explain\": true}", &rc);
	TT_EQ_INT(rc, 0);
	/* a plain inclusion $project after the pushed $sort/$limit is pushed too:
	 * the whole pipeline runs in the find layer and explains as a query */
	TT_ASSERT(bson_iter_init(&it, r) && bson_iter_find_descendant(&it, "queryPlanner.winningPlan.stage", &it) &&
	    strcmp(bson_iter_utf8(&it, NULL), "PROJECTION_DEFAULT") == 0);
	TT_ASSERT(bson_iter_init(&it, r) && bson_iter_find_descendant(&it, "queryPlanner.winningPlan.inputStage.limitAmount", &it) &&
	    bson_iter_as_int64(&it) == 2);
	TT_ASSERT(!bson_has_field(r, "stages"));
	tt_free_reply(r);
	/* with an expression it stays a stage of its own */
	r = run("test", "{\"aggregate\": \"orders\", \"pipeline\": [{\"$sort\": {\"v\": -1}}, {\"$limit\": 2}, {\"$project\": {\"w\": \"$v\"}}], \"explain\": true}", &rc);
	TT_EQ_INT(rc, 0);
	TT_ASSERT(bson_iter_init(&it, r) && bson_iter_find_descendant(&it, "stages.0.$cursor.queryPlanner.winningPlan.limitAmount", &it) &&
	    bson_iter_as_int64(&it) == 2);
	TT_ASSERT(bson_iter_init(&it, r) && bson_iter_find_descendant(&it, "stages.1.$project", &it));
	tt_free_reply(r);
	r = run("test", "{\"aggregate\": \"orders\", \"pipeline\": [{\"$match\": {\"v\": 2}}], \"explain\": true}", &rc);
	TT_ASSERT(bson_iter_init(&it, r) && bson_iter_find_descendant(&it, "queryPlanner.winningPlan.stage", &it) &&
	    strcmp(bson_iter_utf8(&it, NULL), "COLLSCAN") == 0);
	TT_ASSERT(!bson_has_field(r, "stages"));
	tt_free_reply(r);
	AGG_EQ("orders", "[{\"$sort\": {\"v\": -1}}, {\"$limit\": 2}, {\"$project\": {\"v\": 1}}]",
	    "[ { \"_id\" : 3, \"v\" : 3 }, { \"_id\" : 2, \"v\" : 2 } ]");
	r = run("test", "{\"aggregate\": \"orders\", \"pipeline\": [{\"$match\": {\"v\": {\"$gte\": 2}}}, {\"$group\": {\"_id\": null, \"n\": {\"$sum\": 1}}}],"
	    " \"explain\": true, \"$_explainVerbosity\": \"executionStats\"}", &rc);
	TT_EQ_INT(rc, 0);
	TT_ASSERT(bson_iter_init(&it, r) && bson_iter_find_descendant(&it, "stages.0.$cursor.executionStats.totalDocsExamined", &it) &&
	    bson_iter_as_int64(&it) == 3);
	TT_ASSERT(bson_iter_init(&it, r) && bson_iter_find_descendant(&it, "stages.0.nReturned", &it) && bson_iter_as_int64(&it) == 2);
	TT_ASSERT(bson_iter_init(&it, r) && bson_iter_find_descendant(&it, "stages.1.nReturned", &it) && bson_iter_as_int64(&it) == 1);
	tt_free_reply(r);
	r = run("test", "{\"explain\": {\"aggregate\": \"orders\", \"pipeline\": [{\"$sortByCount\": \"$v\"}], \"cursor\": {}}}", &rc);
	TT_EQ_INT(rc, 0);
	TT_ASSERT(bson_iter_init(&it, r) && bson_iter_find_descendant(&it, "stages.1.$group", &it));
	tt_free_reply(r);
	r = run("test", "{\"aggregate\": \"orders\", \"pipeline\": [{\"$match\": {\"$expr\": {\"$eq\": [\"$v\", \"$$x\"]}}},"
	                " {\"$project\": {\"y\": \"$$x\"}}], \"let\": {\"x\": 2}, \"cursor\": {}}", &rc);
	TT_EQ_INT(rc, 0);
	TT_ASSERT(bson_iter_init(&it, r) && bson_iter_find_descendant(&it, "cursor.firstBatch.0.y", &it) &&
	    bson_iter_as_int64(&it) == 2);
	tt_free_reply(r);
}

static void
test_index_hint(void)
{
	int rc;
	bson_t *r;
	bson_iter_t it;

	load("ix", "[{\"_id\": 0}]");
	exec_ok("{\"delete\": \"ix\", \"deletes\": [{\"q\": {}, \"limit\": 0}]}");
	exec_ok("{\"createIndexes\": \"ix\", \"indexes\": [{\"key\": {\"v\": 1}, \"name\": \"v_1\"}]}");
	/* (documents with secondary keys cannot be written yet: the plan is what is checked) */
	r = run("test", "{\"aggregate\": \"ix\", \"pipeline\": [{\"$match\": {\"v\": {\"$gte\": 2}}}, {\"$group\": {\"_id\": null, \"n\": {\"$sum\": 1}}}], \"explain\": true}", &rc);
	TT_EQ_INT(rc, 0);
	TT_ASSERT(bson_iter_init(&it, r) && bson_iter_find_descendant(&it, "stages.0.$cursor.queryPlanner.winningPlan.inputStage.stage", &it) &&
	    strcmp(bson_iter_utf8(&it, NULL), "IXSCAN") == 0);
	tt_free_reply(r);
	AGG_EQ("ix", "[{\"$match\": {\"v\": {\"$gte\": 2}}}, {\"$project\": {\"_id\": 1}}]", "[ ]");
	r = run("test", "{\"aggregate\": \"ix\", \"pipeline\": [], \"cursor\": {}, \"hint\": \"nope\"}", &rc);
	TT_ASSERT(rc != 0 && bson_iter_init_find(&it, r, "code") && bson_iter_as_int64(&it) == 2);
	tt_free_reply(r);
	r = run("test", "{\"aggregate\": \"ix\", \"pipeline\": [{\"$match\": {\"v\": 2}}], \"cursor\": {}, \"hint\": {\"v\": 1}}", &rc);
	TT_EQ_INT(rc, 0);
	tt_free_reply(r);
}

static void
test_seed_schema_versions(void)
{
	/* 05 schema versioning: read both shapes at once */
	load("customers", "[{\"_id\": 1, \"firstName\": \"Ada\", \"city\": \"London\"},"
	    " {\"_id\": 2, \"firstName\": \"Alan\", \"city\": \"Berlin\", \"country\": \"DE\"},"
	    " {\"_id\": 3, \"schemaVersion\": 2, \"address\": {\"city\": \"Istanbul\", \"country\": \"TR\"}}]");
	AGG_EQ("customers", "[{\"$match\": {\"_id\": {\"$in\": [2, 3]}}}, {\"$project\": {\"_id\": 1,"
	    " \"schemaVersion\": {\"$ifNull\": [\"$schemaVersion\", 1]}, \"city\": {\"$ifNull\": [\"$address.city\", \"$city\"]}}}]",
	    "[ { \"_id\" : 2, \"schemaVersion\" : 1, \"city\" : \"Berlin\" }, { \"_id\" : 3, \"schemaVersion\" : 2, \"city\" : \"Istanbul\" } ]");
	/* attribute pattern's $objectToArray + $filter, as a read */
	AGG_EQ("customers", "[{\"$match\": {\"_id\": 3}}, {\"$project\": {\"_id\": 0, \"attributes\": {\"$filter\": {"
	    "\"input\": {\"$objectToArray\": \"$$ROOT\"}, \"cond\": {\"$in\": [\"$$this.k\", [\"schemaVersion\"]]}}}}}]",
	    "[ { \"attributes\" : [ { \"k\" : \"schemaVersion\", \"v\" : 2 } ] } ]");
}

static void
test_stats_stages(void)
{
	char *got;

	got = agg("customers", "[{\"$collStats\": {\"count\": {}}}, {\"$project\": {\"count\": 1, \"ns\": 1, \"_id\": 0}}]");
	TT_EQ_STR(got, "[ { \"ns\" : \"test.customers\", \"count\" : 3 } ]");
	bson_free(got);
	AGG_EQ("customers", "[{\"$indexStats\": {}}, {\"$project\": {\"name\": 1, \"key\": 1, \"_id\": 0}}]",
	    "[ { \"name\" : \"_id_\", \"key\" : { \"_id\" : 1 } } ]");
	AGG_ERR("customers", "[{\"$match\": {}}, {\"$collStats\": {}}]", 40602);
	AGG_ERR("customers", "[{\"$geoNear\": {}}]", 5860400);
	AGG_ERR("customers", "[{\"$changeStream\": {}}]", 40573);
	AGG_EQ("customers", "[{\"$planCacheStats\": {}}]", "[ ]");
	AGG_ERR("customers", "[{\"$listSearchIndexes\": {}}]", 115);
	load("red", "[{\"_id\": 1, \"level\": 1, \"a\": {\"level\": 5, \"x\": 1}, \"b\": [{\"level\": 1, \"y\": 2}, {\"level\": 9}, 3]}]");
	AGG_EQ("red", "[{\"$redact\": {\"$cond\": [{\"$lte\": [\"$level\", 3]}, \"$$DESCEND\", \"$$PRUNE\"]}}]",
	    "[ { \"_id\" : 1, \"level\" : 1, \"b\" : [ { \"level\" : 1, \"y\" : 2 }, 3 ] } ]");
	AGG_EQ("red", "[{\"$redact\": \"$$KEEP\"}, {\"$project\": {\"level\": 1}}]", "[ { \"_id\" : 1, \"level\" : 1 } ]");
	AGG_EQ("red", "[{\"$redact\": \"$$PRUNE\"}]", "[ ]");
	AGG_ERR("red", "[{\"$redact\": \"x\"}]", 17053);
}

static void
test_window(void)
{
	load("w", "[{\"_id\": 1, \"s\": \"a\", \"t\": 1, \"v\": 10}, {\"_id\": 2, \"s\": \"a\", \"t\": 2, \"v\": 20},"
	    " {\"_id\": 3, \"s\": \"a\", \"t\": 3, \"v\": null}, {\"_id\": 4, \"s\": \"b\", \"t\": 1, \"v\": 5},"
	    " {\"_id\": 5, \"s\": \"a\", \"t\": 4, \"v\": 40}]");
	AGG_EQ("w", "[{\"$setWindowFields\": {\"partitionBy\": \"$s\", \"sortBy\": {\"t\": 1}, \"output\": {"
	    "\"run\": {\"$sum\": \"$v\", \"window\": {\"documents\": [\"unbounded\", \"current\"]}},"
	    " \"total\": {\"$sum\": \"$v\"}, \"n\": {\"$documentNumber\": {}},"
	    " \"prev\": {\"$shift\": {\"output\": \"$v\", \"by\": -1, \"default\": 0}}}}},"
	    " {\"$project\": {\"run\": 1, \"total\": 1, \"n\": 1, \"prev\": 1}}]",
	    "[ { \"_id\" : 1, \"run\" : 10, \"total\" : 70, \"n\" : 1, \"prev\" : 0 }, "
	    "{ \"_id\" : 2, \"run\" : 30, \"total\" : 70, \"n\" : 2, \"prev\" : 10 }, "
	    "{ \"_id\" : 3, \"run\" : 30, \"total\" : 70, \"n\" : 3, \"prev\" : 20 }, "
	    "{ \"_id\" : 5, \"run\" : 70, \"total\" : 70, \"n\" : 4, \"prev\" : null }, "
	    "{ \"_id\" : 4, \"run\" : 5, \"total\" : 5, \"n\" : 1, \"prev\" : 0 } ]");
	AGG_EQ("w", "[{\"$setWindowFields\": {\"partitionBy\": \"$s\", \"sortBy\": {\"t\": 1}, \"output\": {"
	    "\"m\": {\"$avg\": \"$v\", \"window\": {\"range\": [-1, 1]}}, \"d\": {\"$documentNumber\": {}}}}},"
	    " {\"$project\": {\"_id\": 1, \"m\": 1}}]",
	    "[ { \"_id\" : 1, \"m\" : 15.0 }, { \"_id\" : 2, \"m\" : 15.0 }, { \"_id\" : 3, \"m\" : 30.0 }, "
	    "{ \"_id\" : 5, \"m\" : 40.0 }, { \"_id\" : 4, \"m\" : 5.0 } ]");
	AGG_EQ("w", "[{\"$setWindowFields\": {\"sortBy\": {\"s\": 1}, \"output\": {\"r\": {\"$rank\": {}}, \"dr\": {\"$denseRank\": {}}}}},"
	    " {\"$project\": {\"_id\": 1, \"r\": 1, \"dr\": 1}}]",
	    "[ { \"_id\" : 1, \"r\" : 1, \"dr\" : 1 }, { \"_id\" : 2, \"r\" : 1, \"dr\" : 1 }, { \"_id\" : 3, \"r\" : 1, \"dr\" : 1 }, "
	    "{ \"_id\" : 5, \"r\" : 1, \"dr\" : 1 }, { \"_id\" : 4, \"r\" : 5, \"dr\" : 2 } ]");
	AGG_EQ("w", "[{\"$fill\": {\"partitionBy\": \"$s\", \"sortBy\": {\"t\": 1}, \"output\": {\"v\": {\"method\": \"locf\"}}}},"
	    " {\"$match\": {\"_id\": 3}}]",
	    "[ { \"_id\" : 3, \"s\" : \"a\", \"t\" : 3, \"v\" : 20 } ]");
	AGG_EQ("w", "[{\"$fill\": {\"partitionBy\": \"$s\", \"sortBy\": {\"t\": 1}, \"output\": {\"v\": {\"method\": \"linear\"}}}},"
	    " {\"$match\": {\"_id\": 3}}]",
	    "[ { \"_id\" : 3, \"s\" : \"a\", \"t\" : 3, \"v\" : 30.0 } ]");
	AGG_EQ("w", "[{\"$fill\": {\"output\": {\"v\": {\"value\": 0}}}}, {\"$match\": {\"_id\": 3}}]",
	    "[ { \"_id\" : 3, \"s\" : \"a\", \"t\" : 3, \"v\" : 0 } ]");
	AGG_ERR("w", "[{\"$setWindowFields\": {\"output\": {\"r\": {\"$rank\": {}}}}}]", 5371602);
	AGG_ERR("w", "[{\"$setWindowFields\": {\"output\": {\"x\": {\"$sum\": 1, \"window\": {\"documents\": [-1, 0]}}}}}]", 5339901);
	AGG_ERR("w", "[{\"$setWindowFields\": {\"sortBy\": {\"t\": 1}, \"output\": {\"x\": {\"$sum\": 1, \"window\": {\"documents\": [1, 0]}}}}}]", 5339900);
}

static void
test_bucket_auto_densify(void)
{
	AGG_EQ("w", "[{\"$bucketAuto\": {\"groupBy\": \"$v\", \"buckets\": 2}}]",
	    "[ { \"_id\" : { \"min\" : null, \"max\" : 20 }, \"count\" : 3 }, { \"_id\" : { \"min\" : 20, \"max\" : 40 }, \"count\" : 2 } ]");
	AGG_EQ("w", "[{\"$bucketAuto\": {\"groupBy\": \"$s\", \"buckets\": 5, \"output\": {\"ids\": {\"$push\": \"$_id\"}}}}]",
	    "[ { \"_id\" : { \"min\" : \"a\", \"max\" : \"b\" }, \"ids\" : [ 1, 2, 3, 5 ] }, { \"_id\" : { \"min\" : \"b\", \"max\" : \"b\" }, \"ids\" : [ 4 ] } ]");
	AGG_ERR("w", "[{\"$bucketAuto\": {\"groupBy\": \"$v\", \"buckets\": 0}}]", 40243);
	load("dn", "[{\"_id\": 1, \"p\": \"x\", \"t\": 1}, {\"_id\": 2, \"p\": \"x\", \"t\": 4}, {\"_id\": 3, \"p\": \"y\", \"t\": 2}]");
	AGG_EQ("dn", "[{\"$densify\": {\"field\": \"t\", \"range\": {\"step\": 1, \"bounds\": \"full\"}}}, {\"$project\": {\"_id\": 1, \"t\": 1}}]",
	    "[ { \"_id\" : 1, \"t\" : 1 }, { \"_id\" : 3, \"t\" : 2 }, { \"t\" : 3 }, { \"_id\" : 2, \"t\" : 4 } ]");
	AGG_EQ("dn", "[{\"$densify\": {\"field\": \"t\", \"partitionByFields\": [\"p\"], \"range\": {\"step\": 1, \"bounds\": \"full\"}}}]",
	    "[ { \"_id\" : 1, \"p\" : \"x\", \"t\" : 1 }, { \"p\" : \"x\", \"t\" : 2 }, { \"p\" : \"x\", \"t\" : 3 }, "
	    "{ \"_id\" : 2, \"p\" : \"x\", \"t\" : 4 }, { \"p\" : \"y\", \"t\" : 1 }, { \"_id\" : 3, \"p\" : \"y\", \"t\" : 2 }, "
	    "{ \"p\" : \"y\", \"t\" : 3 }, { \"p\" : \"y\", \"t\" : 4 } ]");
	AGG_EQ("dn", "[{\"$densify\": {\"field\": \"t\", \"range\": {\"step\": 2, \"bounds\": [0, 4]}}}, {\"$project\": {\"_id\": 1, \"t\": 1}}]",
	    "[ { \"t\" : 0 }, { \"_id\" : 1, \"t\" : 1 }, { \"_id\" : 3, \"t\" : 2 }, { \"_id\" : 2, \"t\" : 4 } ]");
	AGG_ERR("dn", "[{\"$densify\": {\"field\": \"t\", \"range\": {\"step\": -1, \"bounds\": \"full\"}}}]", 5733401);
}

/* A computed field left missing ($$REMOVE, a missing path) leaves a slot (a
 * missing Value in mongod's Document), which the stages that hold or
 * promote Documents keep: an in-memory $sort (top-k too; a spilled one
 * writes BSON and loses it), a $facet branch, $replaceRoot/$replaceWith. */
static void
test_slots_holes_carried(void)
{
	load("holes", "[{\"_id\": 1, \"b\": 1, \"a\": 2, \"s\": {\"x\": 1, \"y\": 2}},"
	              " {\"_id\": 2, \"a\": 1, \"s\": {\"y\": 3}}, {\"_id\": 3, \"a\": 0, \"b\": 3, \"s\": [{\"x\": 1, \"y\": 1}]}]");
	/* $sort: b back in place where it was; appended (its hole at the end) where absent */
	AGG_EQ("holes", "[{\"$set\": {\"b\": \"$$REMOVE\"}}, {\"$sort\": {\"a\": 1}}, {\"$set\": {\"b\": 5}}]",
	    "[ { \"_id\" : 3, \"a\" : 0, \"b\" : 5, \"s\" : [ { \"x\" : 1, \"y\" : 1 } ] }, "
	    "{ \"_id\" : 2, \"a\" : 1, \"s\" : { \"y\" : 3 }, \"b\" : 5 }, "
	    "{ \"_id\" : 1, \"b\" : 5, \"a\" : 2, \"s\" : { \"x\" : 1, \"y\" : 2 } } ]");
	/* a hole of an absent field stays before a later field, through top-k and two sorts */
	AGG_EQ("holes", "[{\"$set\": {\"z\": \"$$REMOVE\"}}, {\"$set\": {\"n\": 1}}, {\"$sort\": {\"a\": -1}}, {\"$limit\": 1},"
	    " {\"$sort\": {\"_id\": 1}}, {\"$project\": {\"s\": 0}}, {\"$set\": {\"z\": 2}}]",
	    "[ { \"_id\" : 1, \"b\" : 1, \"a\" : 2, \"z\" : 2, \"n\" : 1 } ]");
	/* nested holes, in a document and in array elements, through a sort */
	AGG_EQ("holes", "[{\"$set\": {\"s.x\": \"$$REMOVE\"}}, {\"$sort\": {\"_id\": -1}}, {\"$set\": {\"s.x\": 7}}, {\"$project\": {\"s\": 1}}]",
	    "[ { \"_id\" : 3, \"s\" : [ { \"x\" : 7, \"y\" : 1 } ] }, { \"_id\" : 2, \"s\" : { \"y\" : 3, \"x\" : 7 } }, "
	    "{ \"_id\" : 1, \"s\" : { \"x\" : 7, \"y\" : 2 } } ]");
	/* a $facet branch, with and without a sort in it */
	AGG_EQ("holes", "[{\"$match\": {\"_id\": 1}}, {\"$set\": {\"b\": \"$$REMOVE\"}}, {\"$facet\": {\"c\": [{\"$count\": \"n\"}],"
	    " \"o\": [{\"$set\": {\"b\": 5}}], \"p\": [{\"$sort\": {\"a\": 1}}, {\"$set\": {\"b\": 6}}]}}, {\"$project\": {\"o.s\": 0, \"p.s\": 0}}]",
	    "[ { \"c\" : [ { \"n\" : 1 } ], \"o\" : [ { \"_id\" : 1, \"b\" : 5, \"a\" : 2 } ], \"p\" : [ { \"_id\" : 1, \"b\" : 6, \"a\" : 2 } ] } ]");
	/* inside the document $replaceWith / $replaceRoot promote, across a sort */
	AGG_EQ("holes", "[{\"$match\": {\"_id\": 1}}, {\"$set\": {\"s.x\": \"$$REMOVE\"}}, {\"$replaceWith\": \"$s\"}, {\"$set\": {\"x\": 0}}]",
	    "[ { \"x\" : 0, \"y\" : 2 } ]");
	AGG_EQ("holes", "[{\"$match\": {\"_id\": 1}}, {\"$set\": {\"s.x\": \"$$REMOVE\"}}, {\"$sort\": {\"a\": 1}},"
	    " {\"$replaceRoot\": {\"newRoot\": \"$s\"}}, {\"$sort\": {\"y\": 1}}, {\"$set\": {\"x\": 0}}]",
	    "[ { \"x\" : 0, \"y\" : 2 } ]");
	/* a stage that rebuilds the document ends it: $group */
	AGG_EQ("holes", "[{\"$match\": {\"_id\": 1}}, {\"$set\": {\"b\": \"$$REMOVE\"}}, {\"$group\": {\"_id\": \"$_id\", \"a\": {\"$first\": \"$a\"}}},"
	    " {\"$set\": {\"b\": 1}}]",
	    "[ { \"_id\" : 1, \"a\" : 2, \"b\" : 1 } ]");
}

/* A classic $group's $first / $last of $$ROOT keeps the input Document,
 * slots included (9.0 runs it classic when a stage it does not push into
 * SBE comes first, or inside a $facet branch); after a leading exclusion
 * SBE runs it on BSON: no slot. */
static void
test_slots_group_root(void)
{
	const char *tail = "{\"$sort\": {\"_id\": 1}}, {\"$replaceWith\": \"$d\"}, {\"$set\": {\"b\": 5}}, {\"$project\": {\"s\": 0}}";
	char p[1024];

	load("gslots", "[{\"_id\": 1, \"b\": 1, \"a\": 2, \"s\": {\"x\": 1}}, {\"_id\": 2, \"a\": 1},"
	               " {\"_id\": 3, \"a\": 0, \"b\": 3}]");
	snprintf(p, sizeof p, "[{\"$set\": {\"n\": 1}}, {\"$unset\": \"b\"}, {\"$group\": {\"_id\": \"$_id\","
	         " \"d\": {\"$first\": \"$$ROOT\"}}}, %s]", tail);
	AGG_EQ("gslots", p, "[ { \"_id\" : 1, \"b\" : 5, \"a\" : 2, \"n\" : 1 }, { \"_id\" : 2, \"a\" : 1, \"n\" : 1, \"b\" : 5 }, "
	    "{ \"_id\" : 3, \"a\" : 0, \"b\" : 5, \"n\" : 1 } ]");
	/* $last, one group: the last document's slots */
	snprintf(p, sizeof p, "[{\"$set\": {\"b\": \"$$REMOVE\"}}, {\"$group\": {\"_id\": null,"
	         " \"d\": {\"$last\": \"$$ROOT\"}}}, %s]", tail);
	AGG_EQ("gslots", p, "[ { \"_id\" : 3, \"a\" : 0, \"b\" : 5 } ]");
	/* in a $facet branch */
	snprintf(p, sizeof p, "[{\"$set\": {\"n\": 1}}, {\"$unset\": \"b\"}, {\"$facet\": {\"o\": [{\"$group\": {\"_id\": \"$_id\","
	         " \"d\": {\"$first\": \"$$ROOT\"}}}, %s]}}, {\"$unwind\": \"$o\"}, {\"$replaceWith\": \"$o\"}]", tail);
	AGG_EQ("gslots", p, "[ { \"_id\" : 1, \"b\" : 5, \"a\" : 2, \"n\" : 1 }, { \"_id\" : 2, \"a\" : 1, \"n\" : 1, \"b\" : 5 }, "
	    "{ \"_id\" : 3, \"a\" : 0, \"b\" : 5, \"n\" : 1 } ]");
	/* SBE's $group after a leading exclusion, and an accumulator of something else: appended */
	snprintf(p, sizeof p, "[{\"$unset\": \"b\"}, {\"$group\": {\"_id\": \"$_id\", \"d\": {\"$first\": \"$$ROOT\"}}}, %s]", tail);
	AGG_EQ("gslots", p, "[ { \"_id\" : 1, \"a\" : 2, \"b\" : 5 }, { \"_id\" : 2, \"a\" : 1, \"b\" : 5 }, "
	    "{ \"_id\" : 3, \"a\" : 0, \"b\" : 5 } ]");
	snprintf(p, sizeof p, "[{\"$set\": {\"n\": 1}}, {\"$unset\": \"b\"}, {\"$group\": {\"_id\": \"$_id\","
	         " \"d\": {\"$first\": {\"$mergeObjects\": \"$$ROOT\"}}}}, %s]", tail);
	AGG_EQ("gslots", p, "[ { \"_id\" : 1, \"a\" : 2, \"n\" : 1, \"b\" : 5 }, { \"_id\" : 2, \"a\" : 1, \"n\" : 1, \"b\" : 5 }, "
	    "{ \"_id\" : 3, \"a\" : 0, \"n\" : 1, \"b\" : 5 } ]");

	/* $top / $bottom of $$ROOT keep the slots of the document they took
	 * (AccumulatorTopBottomN keeps its {output, sortFields} object's
	 * output Value): not the first or last one seen */
	snprintf(p, sizeof p, "[{\"$set\": {\"n\": 1}}, {\"$unset\": \"b\"}, {\"$group\": {\"_id\": null,"
	         " \"d\": {\"$top\": {\"output\": \"$$ROOT\", \"sortBy\": {\"a\": 1}}}}}, %s]", tail);
	AGG_EQ("gslots", p, "[ { \"_id\" : 3, \"a\" : 0, \"b\" : 5, \"n\" : 1 } ]");
	snprintf(p, sizeof p, "[{\"$set\": {\"n\": 1}}, {\"$unset\": \"b\"}, {\"$group\": {\"_id\": null,"
	         " \"d\": {\"$bottom\": {\"output\": \"$$ROOT\", \"sortBy\": {\"a\": -1}}}}}, %s]", tail);
	AGG_EQ("gslots", p, "[ { \"_id\" : 3, \"a\" : 0, \"b\" : 5, \"n\" : 1 } ]");
	snprintf(p, sizeof p, "[{\"$set\": {\"n\": 1}}, {\"$unset\": \"b\"}, {\"$group\": {\"_id\": null,"
	         " \"d\": {\"$top\": {\"output\": \"$$ROOT\", \"sortBy\": {\"a\": -1}}}}}, %s]", tail);
	AGG_EQ("gslots", p, "[ { \"_id\" : 1, \"b\" : 5, \"a\" : 2, \"n\" : 1 } ]");
	/* a later document without the slot replaces the one taken: appended */
	snprintf(p, sizeof p, "[{\"$set\": {\"n\": 1}}, {\"$unset\": \"b\"}, {\"$match\": {\"a\": {\"$gt\": 0}}},"
	         " {\"$group\": {\"_id\": null, \"d\": {\"$top\": {\"output\": \"$$ROOT\", \"sortBy\": {\"a\": 1}}}}}, %s]", tail);
	AGG_EQ("gslots", p, "[ { \"_id\" : 2, \"a\" : 1, \"n\" : 1, \"b\" : 5 } ]");
	/* a deeper promotion ("$d.s", or "$d" then "$s") takes the document
	 * inside the kept one, its slots included */
	load("gdeep", "[{\"_id\": 1, \"k\": 1, \"s\": {\"x\": 1, \"y\": 2}}]");
	AGG_EQ("gdeep", "[{\"$set\": {\"n\": 1}}, {\"$unset\": \"s.x\"}, {\"$group\": {\"_id\": \"$k\","
	    " \"d\": {\"$first\": \"$$ROOT\"}}}, {\"$replaceWith\": \"$d.s\"}, {\"$set\": {\"x\": 5}}]",
	    "[ { \"x\" : 5, \"y\" : 2 } ]");
	AGG_EQ("gdeep", "[{\"$set\": {\"n\": 1}}, {\"$unset\": \"s.x\"}, {\"$group\": {\"_id\": \"$k\","
	    " \"d\": {\"$top\": {\"output\": \"$$ROOT\", \"sortBy\": {\"k\": 1}}}}}, {\"$replaceRoot\": {\"newRoot\": \"$d.s\"}},"
	    " {\"$set\": {\"x\": 5}}]", "[ { \"x\" : 5, \"y\" : 2 } ]");
	/* another field of the same name's prefix is not the kept one */
	AGG_EQ("gdeep", "[{\"$set\": {\"n\": 1}}, {\"$unset\": \"s.x\"}, {\"$group\": {\"_id\": \"$k\","
	    " \"d\": {\"$first\": \"$$ROOT\"}, \"dd\": {\"$first\": \"$$ROOT\"}}}, {\"$replaceWith\": \"$dd.s\"},"
	    " {\"$set\": {\"x\": 5}}]", "[ { \"x\" : 5, \"y\" : 2 } ]");
}

/* The array accumulators of $$ROOT ($push, $addToSet, $firstN, $lastN,
 * $topN, $bottomN) keep each input Document, slots included, in the array a
 * classic $group outputs: an $unwind of it hands each element's on, and a
 * $set inside the field right after the $group (or after the $unwind) fills
 * them; so does one inside a $first's Document. */
static void
test_slots_group_items(void)
{
	const char *pre = "{\"$set\": {\"n\": 1}}, {\"$unset\": \"b\"}";
	const char *unwound = "[ { \"_id\" : 1, \"k\" : 1, \"b\" : 5, \"a\" : 2, \"n\" : 1 }, "
	                      "{ \"_id\" : 2, \"k\" : 1, \"a\" : 3, \"b\" : 5, \"n\" : 1 }, "
	                      "{ \"_id\" : 3, \"k\" : 1, \"a\" : 1, \"n\" : 1, \"b\" : 5 } ]";
	char p[1024], want[1024];

	load("gitems", "[{\"_id\": 1, \"k\": 1, \"b\": 1, \"a\": 2}, {\"_id\": 2, \"k\": 1, \"a\": 3, \"b\": 2},"
	               " {\"_id\": 3, \"k\": 1, \"a\": 1}]");
	/* $unwind + $replaceWith + $set: each element's own slots */
	snprintf(p, sizeof p, "[%s, {\"$group\": {\"_id\": \"$k\", \"d\": {\"$push\": \"$$ROOT\"}}}, {\"$unwind\": \"$d\"},"
	         " {\"$replaceWith\": \"$d\"}, {\"$set\": {\"b\": 5}}]", pre);
	AGG_EQ("gitems", p, unwound);
	snprintf(p, sizeof p, "[%s, {\"$group\": {\"_id\": \"$k\", \"d\": {\"$addToSet\": \"$$ROOT\"}}},"
	         " {\"$unwind\": {\"path\": \"$d\", \"includeArrayIndex\": \"i\"}}, {\"$replaceRoot\": {\"newRoot\": \"$d\"}},"
	         " {\"$set\": {\"b\": 5}}]", pre);
	AGG_EQ("gitems", p, unwound);
	/* a $set inside the array right after the $group: element by element */
	snprintf(p, sizeof p, "[%s, {\"$group\": {\"_id\": \"$k\", \"d\": {\"$push\": \"$$ROOT\"}}}, {\"$set\": {\"d.b\": 5}}]",
	         pre);
	snprintf(want, sizeof want, "[ { \"_id\" : 1, \"d\" : %s } ]", unwound);
	AGG_EQ("gitems", p, want);
	/* after the $unwind, inside the element; then promoted */
	snprintf(p, sizeof p, "[%s, {\"$group\": {\"_id\": \"$k\", \"d\": {\"$push\": \"$$ROOT\"}}}, {\"$unwind\": \"$d\"},"
	         " {\"$set\": {\"d.b\": 5}}, {\"$replaceWith\": \"$d\"}]", pre);
	AGG_EQ("gitems", p, unwound);
	/* $firstN / $lastN / $topN / $bottomN: the documents kept, evicted ones' slots dropped */
	snprintf(p, sizeof p, "[%s, {\"$group\": {\"_id\": \"$k\", \"d\": {\"$lastN\": {\"n\": 2, \"input\": \"$$ROOT\"}}}},"
	         " {\"$set\": {\"d.b\": 5}}]", pre);
	AGG_EQ("gitems", p, "[ { \"_id\" : 1, \"d\" : [ { \"_id\" : 2, \"k\" : 1, \"a\" : 3, \"b\" : 5, \"n\" : 1 }, "
	    "{ \"_id\" : 3, \"k\" : 1, \"a\" : 1, \"n\" : 1, \"b\" : 5 } ] } ]");
	snprintf(p, sizeof p, "[%s, {\"$group\": {\"_id\": \"$k\", \"d\": {\"$firstN\": {\"n\": 2, \"input\": \"$$ROOT\"}}}},"
	         " {\"$unwind\": \"$d\"}, {\"$replaceWith\": \"$d\"}, {\"$set\": {\"b\": 5}}]", pre);
	AGG_EQ("gitems", p, "[ { \"_id\" : 1, \"k\" : 1, \"b\" : 5, \"a\" : 2, \"n\" : 1 }, "
	    "{ \"_id\" : 2, \"k\" : 1, \"a\" : 3, \"b\" : 5, \"n\" : 1 } ]");
	snprintf(p, sizeof p, "[%s, {\"$group\": {\"_id\": \"$k\", \"d\": {\"$topN\": {\"n\": 2, \"output\": \"$$ROOT\","
	         " \"sortBy\": {\"a\": 1}}}}}, {\"$unwind\": \"$d\"}, {\"$replaceWith\": \"$d\"}, {\"$set\": {\"b\": 5}}]", pre);
	AGG_EQ("gitems", p, "[ { \"_id\" : 3, \"k\" : 1, \"a\" : 1, \"n\" : 1, \"b\" : 5 }, "
	    "{ \"_id\" : 1, \"k\" : 1, \"b\" : 5, \"a\" : 2, \"n\" : 1 } ]");
	snprintf(p, sizeof p, "[%s, {\"$group\": {\"_id\": \"$k\", \"d\": {\"$bottomN\": {\"n\": 2, \"output\": \"$$ROOT\","
	         " \"sortBy\": {\"a\": -1}}}}}, {\"$set\": {\"d.b\": 5}}]", pre);
	AGG_EQ("gitems", p, "[ { \"_id\" : 1, \"d\" : [ { \"_id\" : 1, \"k\" : 1, \"b\" : 5, \"a\" : 2, \"n\" : 1 }, "
	    "{ \"_id\" : 3, \"k\" : 1, \"a\" : 1, \"n\" : 1, \"b\" : 5 } ] } ]");
	/* $$REMOVE holes too */
	AGG_EQ("gitems", "[{\"$set\": {\"b\": \"$$REMOVE\"}}, {\"$group\": {\"_id\": \"$k\", \"d\": {\"$push\": \"$$ROOT\"}}},"
	    " {\"$unwind\": \"$d\"}, {\"$replaceWith\": \"$d\"}, {\"$set\": {\"b\": 5}}]",
	    "[ { \"_id\" : 1, \"k\" : 1, \"b\" : 5, \"a\" : 2 }, { \"_id\" : 2, \"k\" : 1, \"a\" : 3, \"b\" : 5 }, "
	    "{ \"_id\" : 3, \"k\" : 1, \"a\" : 1, \"b\" : 5 } ]");
	/* a $first's Document, written inside with no promotion */
	snprintf(p, sizeof p, "[%s, {\"$group\": {\"_id\": \"$k\", \"d\": {\"$first\": \"$$ROOT\"}}}, {\"$sort\": {\"_id\": 1}},"
	         " {\"$set\": {\"d.b\": 5}}]", pre);
	AGG_EQ("gitems", p, "[ { \"_id\" : 1, \"d\" : { \"_id\" : 1, \"k\" : 1, \"b\" : 5, \"a\" : 2, \"n\" : 1 } } ]");
	/* SBE's $group after a leading exclusion (BSON), a field replaced
	 * between, an array reversed between: appended */
	AGG_EQ("gitems", "[{\"$unset\": \"b\"}, {\"$group\": {\"_id\": \"$k\", \"d\": {\"$push\": \"$$ROOT\"}}}, {\"$unwind\": \"$d\"},"
	    " {\"$replaceWith\": \"$d\"}, {\"$set\": {\"b\": 5}}]",
	    "[ { \"_id\" : 1, \"k\" : 1, \"a\" : 2, \"b\" : 5 }, { \"_id\" : 2, \"k\" : 1, \"a\" : 3, \"b\" : 5 }, "
	    "{ \"_id\" : 3, \"k\" : 1, \"a\" : 1, \"b\" : 5 } ]");
	snprintf(p, sizeof p, "[%s, {\"$group\": {\"_id\": \"$k\", \"d\": {\"$push\": \"$$ROOT\"}}},"
	         " {\"$set\": {\"d\": {\"$literal\": [{\"b\": 1, \"_id\": 9}]}}}, {\"$unset\": \"d.b\"}, {\"$set\": {\"d.b\": 5}}]", pre);
	AGG_EQ("gitems", p, "[ { \"_id\" : 1, \"d\" : [ { \"b\" : 5, \"_id\" : 9 } ] } ]");
	snprintf(p, sizeof p, "[%s, {\"$group\": {\"_id\": \"$k\", \"d\": {\"$push\": \"$$ROOT\"}}},"
	         " {\"$set\": {\"d\": {\"$literal\": [{\"_id\": 9}]}}}, {\"$set\": {\"d.b\": 5}}]", pre);
	AGG_EQ("gitems", p, "[ { \"_id\" : 1, \"d\" : [ { \"_id\" : 9, \"b\" : 5 } ] } ]");

	/* in a $facet branch (classic), the exclusion before the $facet */
	snprintf(p, sizeof p, "[%s, {\"$facet\": {\"o\": [{\"$group\": {\"_id\": \"$k\", \"d\": {\"$push\": \"$$ROOT\"}}},"
	         " {\"$unwind\": \"$d\"}, {\"$replaceWith\": \"$d\"}, {\"$set\": {\"b\": 5}}]}}, {\"$unwind\": \"$o\"},"
	         " {\"$replaceWith\": \"$o\"}]", pre);
	AGG_EQ("gitems", p, unwound);
	/* a $lookup between whose `as` is the field: its own documents */
	snprintf(p, sizeof p, "[%s, {\"$group\": {\"_id\": \"$k\", \"d\": {\"$push\": \"$$ROOT\"}}},"
	         " {\"$lookup\": {\"from\": \"gitems\", \"pipeline\": [{\"$limit\": 1}, {\"$project\": {\"_id\": 1}}], \"as\": \"d\"}},"
	         " {\"$set\": {\"d.b\": 5}}]", pre);
	AGG_EQ("gitems", p, "[ { \"_id\" : 1, \"d\" : [ { \"_id\" : 1, \"b\" : 5 } ] } ]");
	snprintf(p, sizeof p, "[%s, {\"$group\": {\"_id\": \"$k\", \"d\": {\"$push\": \"$$ROOT\"}}},"
	         " {\"$lookup\": {\"from\": \"gitems\", \"pipeline\": [{\"$limit\": 1}], \"as\": \"e\"}},"
	         " {\"$set\": {\"d.b\": 5}}, {\"$project\": {\"e\": 0}}]", pre);
	AGG_EQ("gitems", p, want);
	/* an in-memory $sort between keeps each document's group */
	load("gsorted", "[{\"_id\": 1, \"k\": 2, \"b\": 1, \"a\": 2}, {\"_id\": 2, \"k\": 1, \"a\": 3, \"b\": 2},"
	                " {\"_id\": 3, \"k\": 2, \"a\": 1}]");
	snprintf(p, sizeof p, "[%s, {\"$group\": {\"_id\": \"$k\", \"d\": {\"$push\": \"$$ROOT\"}}}, {\"$sort\": {\"_id\": 1}},"
	         " {\"$unwind\": \"$d\"}, {\"$sort\": {\"d.a\": -1}}, {\"$replaceWith\": \"$d\"}, {\"$set\": {\"b\": 5}}]", pre);
	AGG_EQ("gsorted", p, "[ { \"_id\" : 2, \"k\" : 1, \"a\" : 3, \"b\" : 5, \"n\" : 1 }, "
	    "{ \"_id\" : 1, \"k\" : 2, \"b\" : 5, \"a\" : 2, \"n\" : 1 }, { \"_id\" : 3, \"k\" : 2, \"a\" : 1, \"n\" : 1, \"b\" : 5 } ]");
	snprintf(p, sizeof p, "[%s, {\"$group\": {\"_id\": \"$k\", \"d\": {\"$push\": \"$$ROOT\"}}}, {\"$sort\": {\"_id\": -1}},"
	         " {\"$set\": {\"d.b\": 5}}]", pre);
	AGG_EQ("gsorted", p, "[ { \"_id\" : 2, \"d\" : [ { \"_id\" : 1, \"k\" : 2, \"b\" : 5, \"a\" : 2, \"n\" : 1 }, "
	    "{ \"_id\" : 3, \"k\" : 2, \"a\" : 1, \"n\" : 1, \"b\" : 5 } ] }, "
	    "{ \"_id\" : 1, \"d\" : [ { \"_id\" : 2, \"k\" : 1, \"a\" : 3, \"b\" : 5, \"n\" : 1 } ] } ]");

	/* many documents through a $lastN: the slots of evicted ones pruned */
	{
		char docs[4096];
		size_t off = 0;
		off += (size_t)snprintf(docs + off, sizeof docs - off, "[");
		for (int i = 0; i < 60; i++)
			off += (size_t)snprintf(docs + off, sizeof docs - off, "%s{\"_id\": %d, \"k\": 1, %s}", i ? ", " : "", i,
			                        i % 2 ? "\"b\": 1, \"a\": 1" : "\"a\": 1");
		snprintf(docs + off, sizeof docs - off, "]");
		load("gprune", docs);
		snprintf(p, sizeof p, "[%s, {\"$group\": {\"_id\": \"$k\", \"d\": {\"$lastN\": {\"n\": 2, \"input\": \"$$ROOT\"}}}},"
		         " {\"$unwind\": \"$d\"}, {\"$replaceWith\": \"$d\"}, {\"$set\": {\"b\": 5}}]", pre);
		AGG_EQ("gprune", p, "[ { \"_id\" : 58, \"k\" : 1, \"a\" : 1, \"n\" : 1, \"b\" : 5 }, "
		    "{ \"_id\" : 59, \"k\" : 1, \"b\" : 5, \"a\" : 1, \"n\" : 1 } ]");
	}
}

/* A carrier keeps every source of slots it is asked for: the two seeds of
 * the randomized check below (1796642882, 1013) shrunk.  The $sort after
 * the $group was asked for five (the $unwind of d, the $group, both
 * $unwind of r and the $set leaving the hole), kept four and ended the
 * chain: the hole's field came back appended.  mongod keeps the missing
 * Value in the Document through every stage here (DocumentStorage::clone
 * keeps each field's position; the second $unwind of a non-array hands
 * the input Document on; $topN keeps the Value): the field is filled in
 * place.  Past a $group handing back each element's slots itself, the
 * carriers after it keep only the group and the element. */
static void
test_slots_carrier_sources(void)
{
	const char *chain = "{\"$unwind\": \"$r\"}, {\"$unwind\": \"$r\"}, {\"$group\": {\"_id\": \"$_id\", \"d\": {\"$topN\":"
	                    " {\"n\": 1, \"output\": \"$$ROOT\", \"sortBy\": {\"k\": 1}}}}}, {\"$unwind\": \"$d\"},"
	                    " {\"$sort\": {\"_id\": 1}}, {\"$replaceWith\": \"$d\"}";
	char p[1024];

	/* seed 1796642882: a hole filled by a $set, alone and in a $facet branch */
	load("carry1", "[{\"_id\": 9, \"d\": 92, \"r\": [{}]}]");
	snprintf(p, sizeof p, "[{\"$set\": {\"d\": \"$$REMOVE\"}}, %s, {\"$set\": {\"d\": 901}}]", chain);
	AGG_EQ("carry1", p, "[ { \"_id\" : 9, \"d\" : 901, \"r\" : {  } } ]");
	snprintf(p, sizeof p, "[{\"$set\": {\"d\": \"$$REMOVE\"}}, {\"$facet\": {\"o\": [%s, {\"$set\": {\"d\": 901}}]}}]", chain);
	AGG_EQ("carry1", p, "[ { \"o\" : [ { \"_id\" : 9, \"d\" : 901, \"r\" : {  } } ] } ]");
	/* the same chain after an exclusion (a leading $set keeps 9.0's $group classic) */
	snprintf(p, sizeof p, "[{\"$set\": {\"g0\": 1}}, {\"$unset\": \"d\"}, %s, {\"$set\": {\"d\": 901}}]", chain);
	AGG_EQ("carry1", p, "[ { \"_id\" : 9, \"d\" : 901, \"r\" : {  }, \"g0\" : 1 } ]");
	/* seed 1013: a nested hole filled by a $lookup's `as` */
	load("carry2", "[{\"_id\": 6, \"s\": {\"z\": 602, \"x\": 603}, \"r\": [{}]}]");
	snprintf(p, sizeof p, "[{\"$set\": {\"s.z\": \"$$REMOVE\"}}, %s, {\"$lookup\": {\"from\": \"carry2\","
	         " \"pipeline\": [{\"$project\": {\"_id\": 1}}], \"as\": \"s.z\"}}]", chain);
	AGG_EQ("carry2", p, "[ { \"_id\" : 6, \"s\" : { \"z\" : [ { \"_id\" : 6 } ], \"x\" : 603 }, \"r\" : {  } } ]");
	/* no $group: a $sort asked for four $unwind and the hole */
	load("carry3", "[{\"_id\": 1, \"a\": 1, \"b\": 2, \"c\": 3, \"r\": [1], \"t\": [2], \"u\": [3], \"v\": [4]}]");
	AGG_EQ("carry3", "[{\"$set\": {\"b\": \"$$REMOVE\"}}, {\"$unwind\": \"$r\"}, {\"$unwind\": \"$t\"}, {\"$unwind\": \"$u\"},"
	    " {\"$unwind\": \"$v\"}, {\"$sort\": {\"_id\": 1}}, {\"$set\": {\"b\": 901}}]",
	    "[ { \"_id\" : 1, \"a\" : 1, \"b\" : 901, \"c\" : 3, \"r\" : 1, \"t\" : 2, \"u\" : 3, \"v\" : 4 } ]");

	/* longer chains than the walk once followed (eight of each): ten
	 * $unwind then a $sort, ten $sort, ten $set leaving a hole each */
	{
		char docs[512], want[512], q[2048];
		size_t o = 0, w = 0, l;
		o += (size_t)snprintf(docs + o, sizeof docs - o, "[{\"_id\": 1, \"a\": 1, \"b\": 2");
		w += (size_t)snprintf(want + w, sizeof want - w, "[ { \"_id\" : 1, \"a\" : 1, \"b\" : 901");
		for (int i = 0; i < 10; i++) {
			o += (size_t)snprintf(docs + o, sizeof docs - o, ", \"u%d\": [%d]", i, i);
			w += (size_t)snprintf(want + w, sizeof want - w, ", \"u%d\" : %d", i, i);
		}
		snprintf(docs + o, sizeof docs - o, "}]");
		snprintf(want + w, sizeof want - w, " } ]");
		load("carry4", docs);
		l = (size_t)snprintf(q, sizeof q, "[{\"$set\": {\"b\": \"$$REMOVE\"}}");
		for (int i = 0; i < 10; i++)
			l += (size_t)snprintf(q + l, sizeof q - l, ", {\"$unwind\": \"$u%d\"}", i);
		snprintf(q + l, sizeof q - l, ", {\"$sort\": {\"_id\": 1}}, {\"$set\": {\"b\": 901}}]");
		AGG_EQ("carry4", q, want);

		load("carry5", "[{\"_id\": 1, \"a\": 1, \"b\": 2, \"c\": 3}]");
		l = (size_t)snprintf(q, sizeof q, "[{\"$set\": {\"b\": \"$$REMOVE\"}}");
		for (int i = 0; i < 10; i++)
			l += (size_t)snprintf(q + l, sizeof q - l, ", {\"$sort\": {\"c\": %d}}, {\"$match\": {\"a\": 1}}",
			                      i % 2 ? 1 : -1);
		snprintf(q + l, sizeof q - l, ", {\"$set\": {\"b\": 901}}]");
		AGG_EQ("carry5", q, "[ { \"_id\" : 1, \"a\" : 1, \"b\" : 901, \"c\" : 3 } ]");

		/* holes of fields the document lacked: appended in the order they
		 * were left, each filled in place */
		l = (size_t)snprintf(q, sizeof q, "[");
		for (int i = 9; i >= 0; i--)
			l += (size_t)snprintf(q + l, sizeof q - l, "{\"$set\": {\"f%d\": \"$$REMOVE\"}}, ", i);
		l += (size_t)snprintf(q + l, sizeof q - l, "{\"$set\": {");
		for (int i = 0; i < 10; i++)
			l += (size_t)snprintf(q + l, sizeof q - l, "%s\"f%d\": %d", i ? ", " : "", i, i);
		snprintf(q + l, sizeof q - l, "}}]");
		AGG_EQ("carry5", q, "[ { \"_id\" : 1, \"a\" : 1, \"b\" : 2, \"c\" : 3, \"f9\" : 9, \"f8\" : 8, \"f7\" : 7, "
		    "\"f6\" : 6, \"f5\" : 5, \"f4\" : 4, \"f3\" : 3, \"f2\" : 2, \"f1\" : 1, \"f0\" : 0 } ]");
	}
}

/* ---- field-order slots, randomized --------------------------------------
 * Removing a field and setting it again later must leave it where setting it
 * in place would (mongod's Document keeps the removed field's slot,
 * SERVER-37791): for random documents, a random set F of fields (top-level
 * and inside "s") and random stages between, the pipeline
 *   [$unset F, <between>, $set F]  must answer exactly what
 *   [<between>, $set F]  answers (fields present: in place; absent:
 * appended in spec order, in both).  <between>: $match, $sort (with or
 * without a $limit: top-k), a $set of another field, and at most one
 * $replaceWith "$s" (then F is taken inside s); and sometimes all of it in
 * a $facet branch.  F's first field may be set by a $lookup `as` or an
 * $unwind includeArrayIndex instead (both set a field on their input's
 * Document, filling its slot).  "r" is an array of documents: F may take
 * fields inside its elements, and an $unwind of it may stand between.
 * <between> may also hand each document through a classic $group of
 * $$ROOT and back ($push / $lastN / $topN + $unwind, or $first, and a
 * promotion; a leading $set then keeps 9.0's $group out of SBE).
 * Half the runs leave holes instead: [$set F: $$REMOVE, <between>, $set F]
 * must answer what [$set F: 0, <between>, $set F] does (the hole, a missing
 * Value, keeps the field's place, or the end for a field the document
 * lacked, through every stage between). */
static uint64_t slot_rng;

static uint32_t
slot_rand(void)
{
	slot_rng ^= slot_rng << 13;
	slot_rng ^= slot_rng >> 7;
	slot_rng ^= slot_rng << 17;
	return (uint32_t)(slot_rng >> 11);
}

/* Append the fields of names[0..n) in a random order, each with probability
 * 3/4, as "name": value. */
static void
slot_fields(char *buf, size_t cap, const char *const *names, int n, int base)
{
	int order[8];

	for (int i = 0; i < n; i++)
		order[i] = i;
	for (int i = n - 1; i > 0; i--) {
		int j = (int)(slot_rand() % (uint32_t)(i + 1)), t = order[i];
		order[i] = order[j];
		order[j] = t;
	}
	for (int i = 0; i < n; i++) {
		if (slot_rand() % 4 == 0)
			continue;
		size_t l = strlen(buf);
		snprintf(buf + l, cap - l, ", \"%s\": %d", names[order[i]], base + i);
	}
}

static void
slots_random_round(uint64_t seed)
{
	static const char *const top[] = {"a", "b", "c", "d", "e"};
	static const char *const in_s[] = {"x", "y", "z", "w"};
	int runs = 0;

	slot_rng = seed * 2654435761u + 1;
	printf("# test_slots_randomized seed %llu (TAMGA_TEST_SEED)\n", (unsigned long long)seed);
	for (int iter = 0; iter < 240; iter++) {
		char docs[8192] = "[", unset[256] = "", setf[256] = "", between[512] = "", rest[256] = "", first[16] = "";
		char holes[256] = "", zeros[256] = "", remover[300], oracle[300];
		bool promote = slot_rand() % 3 == 0, hole = slot_rand() % 2 == 0;
		int ndocs = 1 + (int)(slot_rand() % 12);

		for (int i = 0; i < ndocs; i++) {
			char d[1024], sd[256] = "";
			snprintf(d, sizeof(d), "{\"_id\": %d, \"k\": %d, \"u\": [7, 8]", i, (int)(slot_rand() % 5));
			slot_fields(d, sizeof(d), top, 5, 10 * i);
			slot_fields(sd, sizeof(sd), in_s, 4, 100 * i);
			size_t l = strlen(d);
			/* s: a document (always, when promoted), somewhere among the fields */
			snprintf(d + l, sizeof(d) - l, ", \"s\": {\"sk\": %d%s}, \"r\": [", i, sd);
			/* r: 0-2 documents with p and q in either order, each maybe absent */
			int nr = (int)(slot_rand() % 3);
			for (int e = 0; e < nr; e++) {
				bool pq = slot_rand() % 2 == 0;
				const char *f1 = pq ? "p" : "q", *f2 = pq ? "q" : "p";
				l = strlen(d);
				snprintf(d + l, sizeof(d) - l, "%s{", e > 0 ? ", " : "");
				if (slot_rand() % 4 != 0) {
					l = strlen(d);
					snprintf(d + l, sizeof(d) - l, "\"%s\": %d", f1, e);
				}
				if (slot_rand() % 4 != 0) {
					l = strlen(d);
					snprintf(d + l, sizeof(d) - l, "%s\"%s\": %d", d[strlen(d) - 1] == '{' ? "" : ", ", f2, 10 + e);
				}
				strcat(d, "}");
			}
			strcat(d, "]}");
			l = strlen(docs);
			snprintf(docs + l, sizeof(docs) - l, "%s%s", i > 0 ? ", " : "", d);
		}
		strcat(docs, "]");
		/* F: 1-3 fields, top-level or inside s ("s.x"; only these when promoted) */
		int nf = 1 + (int)(slot_rand() % 3);
		for (int i = 0; i < nf; i++) {
			bool nested = promote || slot_rand() % 2 == 0;
			bool in_r = !promote && slot_rand() % 4 == 0;
			const char *f = in_r ? (slot_rand() % 2 ? "p" : "q") : nested ? in_s[slot_rand() % 4] : top[slot_rand() % 5];
			char path[16];
			snprintf(path, sizeof(path), "%s%s", in_r ? "r." : nested ? "s." : "", f);
			if (strstr(unset, path) != NULL)
				continue;
			size_t l = strlen(unset);
			snprintf(unset + l, sizeof(unset) - l, "%s\"%s\"", unset[0] ? ", " : "", path);
			l = strlen(holes);
			snprintf(holes + l, sizeof(holes) - l, "%s\"%s\": \"$$REMOVE\"", holes[0] ? ", " : "", path);
			l = strlen(zeros);
			snprintf(zeros + l, sizeof(zeros) - l, "%s\"%s\": 0", zeros[0] ? ", " : "", path);
			l = strlen(setf);
			snprintf(setf + l, sizeof(setf) - l, "%s\"%s\": %d", setf[0] ? ", " : "", promote ? f : path,
			         900 + i);
			if (first[0] == '\0') {
				snprintf(first, sizeof(first), "%s", promote ? f : path);
			} else {
				l = strlen(rest);
				snprintf(rest + l, sizeof(rest) - l, "%s\"%s\": %d", rest[0] ? ", " : "", promote ? f : path, 900 + i);
			}
		}
		/* what sets F: a $set, or a $set of the rest then a $lookup `as` or an
		 * $unwind includeArrayIndex setting the first (both fill its slot) */
		char setter[512];
		int how = (int)(slot_rand() % 6);
		if ((how == 0 || how == 1) && strncmp(first, "r.", 2) != 0) {
			size_t l = 0;
			setter[0] = '\0';
			if (rest[0] != '\0')
				l = (size_t)snprintf(setter, sizeof(setter), "{\"$set\": {%s}}, ", rest);
			if (how == 0)
				snprintf(setter + l, sizeof(setter) - l,
				         "{\"$lookup\": {\"from\": \"slotsr\", \"pipeline\": [{\"$limit\": 1}, {\"$project\": {\"_id\": 1}}],"
				         " \"as\": \"%s\"}}", first);
			else
				snprintf(setter + l, sizeof(setter) - l,
				         "{\"$unwind\": {\"path\": \"$u\", \"includeArrayIndex\": \"%s\", \"preserveNullAndEmptyArrays\": true}}",
				         first);
		} else {
			snprintf(setter, sizeof(setter), "{\"$set\": {%s}}", setf);
		}
		/* the stages between, in a random order of a few kinds */
		int nb = (int)(slot_rand() % 4);
		bool promoted = false, grouped = false;
		for (int i = 0; i < nb + (promote ? 1 : 0); i++) {
			const char *st;
			int kind = (int)(slot_rand() % 7);
			if (promote && !promoted && (i == nb || slot_rand() % 2 == 0)) {
				st = "{\"$replaceWith\": \"$s\"}";
				promoted = true;
			} else if (kind == 0) {
				st = promoted ? "{\"$match\": {\"sk\": {\"$gte\": 1}}}" : "{\"$match\": {\"_id\": {\"$gte\": 1}}}";
			} else if (kind == 1) {
				st = promoted ? "{\"$sort\": {\"sk\": -1}}" : "{\"$sort\": {\"k\": 1, \"_id\": -1}}";
			} else if (kind == 2) {
				st = promoted ? "{\"$sort\": {\"sk\": 1}}, {\"$limit\": 3}"
				              : "{\"$sort\": {\"k\": -1, \"_id\": 1}}, {\"$limit\": 4}";
			} else if (kind == 3) {
				st = "{\"$set\": {\"n\": 1}}";
			} else if (kind == 5 && !promoted) {
				st = "{\"$unwind\": \"$r\"}";
			} else if (kind == 6 && !promoted && !grouped) {
				/* a classic $group of one document per group handing it
				 * back: each kept Document with its slots */
				static const char *const rounds[] = {
				    "{\"$group\": {\"_id\": \"$_id\", \"d\": {\"$push\": \"$$ROOT\"}}}, {\"$unwind\": \"$d\"},"
				    " {\"$replaceWith\": \"$d\"}",
				    "{\"$group\": {\"_id\": \"$_id\", \"d\": {\"$lastN\": {\"n\": 2, \"input\": \"$$ROOT\"}}}},"
				    " {\"$sort\": {\"_id\": -1}}, {\"$unwind\": \"$d\"}, {\"$replaceRoot\": {\"newRoot\": \"$d\"}}",
				    "{\"$group\": {\"_id\": \"$_id\", \"d\": {\"$first\": \"$$ROOT\"}}}, {\"$replaceWith\": \"$d\"}",
				    "{\"$group\": {\"_id\": \"$_id\", \"d\": {\"$topN\": {\"n\": 1, \"output\": \"$$ROOT\","
				    " \"sortBy\": {\"k\": 1}}}}}, {\"$unwind\": \"$d\"}, {\"$sort\": {\"d.k\": 1, \"_id\": 1}},"
				    " {\"$replaceWith\": \"$d\"}",
				};
				st = rounds[slot_rand() % 4];
				grouped = true;
			} else {
				st = promoted ? "{\"$sort\": {\"sk\": 1}}" : "{\"$sort\": {\"_id\": 1}}";
			}
			size_t l = strlen(between);
			snprintf(between + l, sizeof(between) - l, "%s, ", st);
		}
		/* F removed by $unset (answers as if never there), or left missing by
		 * a $set of $$REMOVE: a hole, answering as if F had been set to 0
		 * there (in place, or appended for a field the document lacked) */
		if (hole) {
			snprintf(remover, sizeof(remover), "{\"$set\": {%s}}", holes);
			snprintf(oracle, sizeof(oracle), "{\"$set\": {%s}}, ", zeros);
		} else {
			snprintf(remover, sizeof(remover), "{\"$unset\": [%s]}", unset);
			oracle[0] = '\0';
		}
		char *p1, *p2;
		/* a leading stage 9.0 does not push into SBE: the $group runs
		 * classic (after a leading exclusion alone it runs in SBE) */
		const char *lead = grouped ? "{\"$set\": {\"g0\": 1}}, " : "";
		if (slot_rand() % 3 == 0) {
			/* the stages between and the $set in a $facet branch */
			const char *tail = "]}}, {\"$unwind\": \"$o\"}, {\"$replaceWith\": \"$o\"}]";
			p1 = bson_strdup_printf("[%s%s, {\"$facet\": {\"c\": [{\"$count\": \"n\"}], \"o\": [%s%s%s",
			                        lead, remover, between, setter, tail);
			p2 = bson_strdup_printf("[%s%s{\"$facet\": {\"c\": [{\"$count\": \"n\"}], \"o\": [%s%s%s", lead, oracle,
			                        between, setter, tail);
		} else {
			p1 = bson_strdup_printf("[%s%s, %s%s]", lead, remover, between, setter);
			p2 = bson_strdup_printf("[%s%s%s%s]", lead, oracle, between, setter);
		}
		load("slotsr", docs);
		char *g1 = agg("slotsr", p1), *g2 = agg("slotsr", p2);
		if (strcmp(g1, g2) != 0)
			TT_FAIL_("seed %llu iter %d\n  docs %s\n  %s\n  -> %s\n  %s\n  -> %s", (unsigned long long)seed, iter,
			         docs, p1, g1, p2, g2);
		runs += strncmp(g1, "error", 5) != 0;
		bson_free(g1);
		bson_free(g2);
		bson_free(p1);
		bson_free(p2);
	}
	TT_ASSERT(runs > 120);
}

/* The randomized slot check over fixed seeds, so `make test` is repeatable
 * (41 is one of the seeds a carrier's four sources failed, twice).
 * TAMGA_TEST_SEED=<n> runs that seed's round alone, =<a>-<b> every seed
 * from a to b (exploration: each failing seed prints its shrinkable case).
 * Seeds 1013 and 1796642882 failed until session 13 (a carrier's four
 * sources: test_slots_carrier_sources). */
static void
test_slots_randomized(void)
{
	static const uint64_t seeds[] = {1000, 1001, 1002, 41};
	const char *seed_env = getenv("TAMGA_TEST_SEED");

	if (seed_env != NULL) {
		char *end;
		uint64_t a = strtoull(seed_env, &end, 10), b = *end == '-' ? strtoull(end + 1, NULL, 10) : a;
		for (uint64_t s = a; s <= b; s++)
			slots_random_round(s);
		return;
	}
	for (size_t i = 0; i < sizeof(seeds) / sizeof(seeds[0]); i++)
		slots_random_round(seeds[i]);
}

int
main(void)
{
	dir = tt_tmpdir("agg");
	if ((db = tt_open_new(dir)) == NULL)
		return 1;
	if (getenv("TAMGA_TEST_SEED") != NULL) {
		/* exploring seeds: the randomized check alone */
		TT_RUN(test_slots_randomized);
		tt_close_rm(db, dir);
		return tt_finish();
	}
	TT_RUN(test_match_project);
	TT_RUN(test_add_fields_unset);
	TT_RUN(test_set_many_fields);
	TT_RUN(test_limit_skip_count_sort);
	TT_RUN(test_group);
	TT_RUN(test_unwind_replace);
	TT_RUN(test_pipeline_errors);
	TT_RUN(test_command_errors);
	TT_RUN(test_cursor_batches);
	TT_RUN(test_getmore_stages);
	TT_RUN(test_lookup_facet_union);
	TT_RUN(test_merge_out);
	TT_RUN(test_explain_let);
	TT_RUN(test_index_hint);
	TT_RUN(test_seed_schema_versions);
	TT_RUN(test_stats_stages);
	TT_RUN(test_window);
	TT_RUN(test_bucket_auto_densify);
	TT_RUN(test_slots_holes_carried);
	TT_RUN(test_slots_group_root);
	TT_RUN(test_slots_group_items);
	TT_RUN(test_slots_carrier_sources);
	TT_RUN(test_slots_randomized);
	tt_close_rm(db, dir);
	return tt_finish();
}
