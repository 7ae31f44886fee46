/*
 * test_view.c -- views through the embedded API: definitions survive a
 * reopen, the 20-view depth limit, a view of a missing collection, names a
 * view shares with collections, and dropDatabase.  (mongosh covers the
 * reply shapes end to end: tests/e2e/mongosh/views.js.)
 */
#include "tt.h"

#include "tt_embedded.h"

static tamga_t *db;
static char *dir;

static bson_t *
run(const char *json, int *rc)
{
	return tt_run_json(db, "v", json, rc);
}

/* Run json; expect success. */
static void
ok(const char *json)
{
	int rc;
	bson_t *r = run(json, &rc);

	if (rc != 0) {
		char *s = bson_as_relaxed_extended_json(r, NULL);
		TT_FAIL_("%s -> %s", json, s);
		bson_free(s);
	}
	tt_free_reply(r);
}

/* Run json; expect the error code. */
static void
fails(const char *json, int code)
{
	int rc;
	bson_t *r = run(json, &rc);

	TT_ASSERT(rc != 0);
	if (tt_get_i64(r, "code") != code) {
		char *s = bson_as_relaxed_extended_json(r, NULL);
		TT_FAIL_("%s -> %s, want code %d", json, s, code);
		bson_free(s);
	}
	tt_free_reply(r);
}

/* The errmsg of json's reply ("" when it succeeds); valid until the next
 * call. */
static const char *
errmsg(const char *json)
{
	static char buf[512];
	int rc;
	bson_t *r = run(json, &rc);

	bson_strncpy(buf, rc != 0 ? tt_get_str(r, "errmsg") : "", sizeof(buf));
	tt_free_reply(r);
	return buf;
}

static int64_t
count(const char *coll)
{
	char *json = bson_strdup_printf("{\"count\": \"%s\"}", coll);
	int rc;
	bson_t *r = run(json, &rc);
	int64_t n = rc == 0 ? tt_get_i64(r, "n") : -1;

	tt_free_reply(r);
	bson_free(json);
	return n;
}

static void
test_survives_reopen(void)
{
	tamga_error_t e;

	ok("{\"insert\": \"c\", \"documents\": [{\"_id\": 1, \"a\": 1}, {\"_id\": 2, \"a\": 2}, {\"_id\": 3, \"a\": 3}]}");
	ok("{\"create\": \"odd\", \"viewOn\": \"c\", \"pipeline\": [{\"$match\": {\"a\": {\"$in\": [1, 3]}}}]}");
	ok("{\"create\": \"oddTwo\", \"viewOn\": \"odd\", \"pipeline\": [{\"$match\": {\"a\": {\"$gt\": 1}}}]}");
	TT_EQ_INT(count("odd"), 2);
	TT_EQ_INT(count("oddTwo"), 1);
	tamga_close(db);
	TT_ASSERT(tamga_open(dir, NULL, &db, &e) == 0);
	TT_EQ_INT(count("odd"), 2);
	TT_EQ_INT(count("oddTwo"), 1);
	/* the name stays taken by the view */
	fails("{\"create\": \"odd\"}", 48);
}

static void
test_missing_source(void)
{
	int rc;
	bson_t *r;

	ok("{\"create\": \"ghost\", \"viewOn\": \"nothing\", \"pipeline\": []}");
	r = run("{\"find\": \"ghost\"}", &rc);
	TT_EQ_INT(rc, 0);
	TT_EQ_JSON(r, "{ \"cursor\" : { \"firstBatch\" : [  ], \"id\" : 0, \"ns\" : \"v.ghost\" }, \"ok\" : 1.0 }");
	tt_free_reply(r);
	r = run("{\"distinct\": \"ghost\", \"key\": \"a\"}", &rc);
	TT_EQ_JSON(r, "{ \"values\" : [  ], \"ok\" : 1.0 }");
	tt_free_reply(r);
	/* the source appears later: the view sees it */
	ok("{\"insert\": \"nothing\", \"documents\": [{\"_id\": 1}]}");
	TT_EQ_INT(count("ghost"), 1);
}

/* A chain of 20 views can be made, a 21st level cannot (165, mongod's view
 * graph), neither below the chain, above it, nor through a $lookup.  As on
 * mongod, whose resolution stops after 20 steps, 19 views read and the
 * 20th does not (165, resolveView's message). */
static void
test_depth_limit(void)
{
	char json[256];

	ok("{\"insert\": \"base\", \"documents\": [{\"_id\": 1}]}");
	snprintf(json, sizeof(json), "{\"create\": \"d1\", \"viewOn\": \"base\"}");
	ok(json);
	for (int i = 2; i <= 20; i++) {
		snprintf(json, sizeof(json), "{\"create\": \"d%d\", \"viewOn\": \"d%d\"}", i, i - 1);
		ok(json);
	}
	TT_EQ_INT(count("d19"), 1);
	fails("{\"count\": \"d20\"}", 165);
	TT_EQ_STR(errmsg("{\"aggregate\": \"d20\", \"pipeline\": [], \"cursor\": {}}"),
	    "View depth too deep or view cycle detected; maximum depth is 20");
	/* read by a stage: mongod's resolution of the involved namespaces */
	TT_EQ_STR(errmsg("{\"aggregate\": \"base\", \"pipeline\": [{\"$unionWith\": \"d20\"}], \"cursor\": {}}"),
	    "Failed to resolve view 'v.d20 :: caused by :: View depth too deep or view cycle detected; "
	    "maximum depth is 20");
	fails("{\"create\": \"d21\", \"viewOn\": \"d20\"}", 165);
	fails("{\"create\": \"d21\", \"viewOn\": \"base\", \"pipeline\": [{\"$unionWith\": \"d20\"}]}", 165);
	/* base becoming a view would put 21 views on one chain */
	ok("{\"create\": \"other\", \"viewOn\": \"nothing\"}");
	fails("{\"collMod\": \"d1\", \"viewOn\": \"other\"}", 165);
	TT_EQ_INT(count("d21"), 0);
}

/* No view may come back to itself, by viewOn or by what its pipeline reads:
 * create and collMod fail with 5 GraphContainsCycle. */
static void
test_cycle(void)
{
	int rc;
	bson_t *r;

	ok("{\"create\": \"x1\", \"viewOn\": \"c\"}");
	ok("{\"create\": \"x2\", \"viewOn\": \"x1\"}");
	r = run("{\"collMod\": \"x1\", \"viewOn\": \"x2\", \"pipeline\": []}", &rc);
	TT_EQ_INT(tt_get_i64(r, "code"), 5);
	TT_EQ_STR(tt_get_str(r, "errmsg"), "View cycle detected: v.x1 => v.x1 => v.x2 => v.x1");
	tt_free_reply(r);
	fails("{\"collMod\": \"x1\", \"viewOn\": \"x1\", \"pipeline\": []}", 5);
	fails("{\"create\": \"self\", \"viewOn\": \"self\"}", 5);
	fails("{\"create\": \"x3\", \"viewOn\": \"c\", \"pipeline\": [{\"$lookup\": {\"from\": \"x3\","
	      " \"localField\": \"a\", \"foreignField\": \"a\", \"as\": \"r\"}}]}", 5);
	/* x3 reads x2 deep inside its pipeline: fine, until x1 reads x3 */
	ok("{\"create\": \"x3\", \"viewOn\": \"c\", \"pipeline\": [{\"$facet\": {\"f\": [{\"$unionWith\":"
	   " {\"coll\": \"c\", \"pipeline\": [{\"$graphLookup\": {\"from\": \"x2\", \"startWith\": 1,"
	   " \"connectFromField\": \"a\", \"connectToField\": \"a\", \"as\": \"r\"}}]}}]}}]}");
	fails("{\"collMod\": \"x1\", \"viewOn\": \"x3\"}", 5);
	fails("{\"collMod\": \"x1\", \"pipeline\": [{\"$unionWith\": \"x3\"}]}", 5);
	ok("{\"drop\": \"x3\"}");
	/* a pipeline change alone keeps viewOn */
	ok("{\"collMod\": \"x1\", \"pipeline\": [{\"$match\": {\"a\": 2}}]}");
	TT_EQ_INT(count("x2"), 1);
}

static void
test_drop_database(void)
{
	int rc;
	bson_t *r;

	ok("{\"dropDatabase\": 1}");
	r = run("{\"listCollections\": 1}", &rc);
	TT_EQ_INT(tt_get_i64(r, "cursor.firstBatch.0"), -999);
	tt_free_reply(r);
	/* the names are free again */
	ok("{\"create\": \"odd\"}");
	TT_EQ_INT(count("odd"), 0);
}

int
main(void)
{
	dir = tt_tmpdir("view");
	if ((db = tt_open_new(dir)) == NULL)
		return 1;
	TT_RUN(test_survives_reopen);
	TT_RUN(test_missing_source);
	TT_RUN(test_depth_limit);
	TT_RUN(test_cycle);
	TT_RUN(test_drop_database);
	tt_close_rm(db, dir);
	return tt_finish();
}
