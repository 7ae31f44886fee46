/*
 * test_find_express.c -- find's express path (issue 23): find {_id: v} with
 * no other argument is answered by one _id lookup without a plan
 * (commands/cmd_crud.c find_express, query/plan.c plan_express_id).  It must
 * answer exactly what the general path answers -- the batch, cursor id 0
 * and ns, numeric equality across types, an empty batch for a missing _id
 * or collection -- and leave the same traces: $indexStats accesses on _id_,
 * the profiler's planSummary / keysExamined / docsExamined, explain's
 * EXPRESS_IXSCAN.  Requests of any other shape (unknown fields, a
 * collation, a projection, a string _id, a view, a clustered or
 * time-series collection, inside a transaction) still get the general
 * path's answers.
 */
#include "tt.h"
#include "tt_embedded.h"

#include "commands/commands_private.h"
#include "common/mem.h"
#include "query/keygen.h"
#include "bson/value.h"
#include "query/plan.h"

static engine_t *eng;
static client_t *cl;

static bson_t *
run(const char *json, int *rc)
{
	bson_t *cmd = tt_json(json);
	bson_t *reply = tm_bson_array_new(1);

	*rc = engine_run_command(eng, cl, "test", cmd, reply, NULL);
	bson_destroy(cmd);
	return reply;
}

static void
ok(const char *json)
{
	int rc;
	bson_t *r = run(json, &rc);

	if (rc != 0) {
		char *j = bson_as_relaxed_extended_json(r, NULL);
		fprintf(stderr, "%s -> %s\n", json, j);
		bson_free(j);
	}
	TT_EQ_INT(rc, 0);
	tt_free_reply(r);
}

/* The reply of a find as relaxed Extended JSON (a new string), ok or not. */
static char *
reply_json(const char *find)
{
	int rc;
	bson_t *r = run(find, &rc);
	char *j = bson_as_relaxed_extended_json(r, NULL);

	tt_free_reply(r);
	return j;
}

static void
expect_reply(const char *find, const char *want)
{
	char *got = reply_json(find);

	if (strcmp(got, want) != 0)
		fprintf(stderr, "%s\n  got  %s\n  want %s\n", find, got, want);
	TT_ASSERT(strcmp(got, want) == 0);
	bson_free(got);
}

static int64_t
id_index_ops(const char *coll)
{
	char cmd[256];
	int rc;
	bson_t *r;
	bson_iter_t it, b;
	int64_t ops = -1;

	snprintf(cmd, sizeof cmd, "{\"aggregate\": \"%s\", \"pipeline\": [{\"$indexStats\": {}}], \"cursor\": {}}", coll);
	r = run(cmd, &rc);
	TT_EQ_INT(rc, 0);
	if (bson_iter_init(&it, r) && bson_iter_find_descendant(&it, "cursor.firstBatch", &b) &&
	    BSON_ITER_HOLDS_ARRAY(&b)) {
		bson_iter_t d;
		bson_iter_recurse(&b, &d);
		while (bson_iter_next(&d)) {
			uint32_t len;
			const uint8_t *data;
			bson_t doc;
			bson_iter_document(&d, &len, &data);
			bson_init_static(&doc, data, len);
			if (tt_get(&doc, "name", &it) && strcmp(bson_iter_utf8(&it, NULL), "_id_") == 0)
				ops = tt_get_i64(&doc, "accesses.ops");
		}
	}
	tt_free_reply(r);
	return ops;
}

static void
test_answers(void)
{
	ok("{\"insert\": \"e\", \"documents\": [{\"_id\": 1, \"a\": \"one\"}, {\"_id\": 2.5, \"a\": \"two\"},"
	   " {\"_id\": {\"$oid\": \"65a1b2c3d4e5f60718293a4b\"}, \"a\": \"oid\"}, {\"_id\": \"s\", \"a\": \"str\"},"
	   " {\"_id\": {\"$numberLong\": \"9007199254740993\"}, \"a\": \"big\"}]}");
	expect_reply("{\"find\": \"e\", \"filter\": {\"_id\": 1}}",
	    "{ \"cursor\" : { \"firstBatch\" : [ { \"_id\" : 1, \"a\" : \"one\" } ], \"id\" : 0, \"ns\" : \"test.e\" }, \"ok\" : 1.0 }");
	/* numeric equality across types, as the _id index's KeyString */
	expect_reply("{\"find\": \"e\", \"filter\": {\"_id\": 1.0}}",
	    "{ \"cursor\" : { \"firstBatch\" : [ { \"_id\" : 1, \"a\" : \"one\" } ], \"id\" : 0, \"ns\" : \"test.e\" }, \"ok\" : 1.0 }");
	expect_reply("{\"find\": \"e\", \"filter\": {\"_id\": {\"$numberDecimal\": \"2.50\"}}}",
	    "{ \"cursor\" : { \"firstBatch\" : [ { \"_id\" : 2.5, \"a\" : \"two\" } ], \"id\" : 0, \"ns\" : \"test.e\" }, \"ok\" : 1.0 }");
	expect_reply("{\"find\": \"e\", \"filter\": {\"_id\": {\"$oid\": \"65a1b2c3d4e5f60718293a4b\"}}}",
	    "{ \"cursor\" : { \"firstBatch\" : [ { \"_id\" : { \"$oid\" : \"65a1b2c3d4e5f60718293a4b\" }, \"a\" : \"oid\" } ], \"id\" : 0, \"ns\" : \"test.e\" }, \"ok\" : 1.0 }");
	/* a long that no double equals exactly */
	expect_reply("{\"find\": \"e\", \"filter\": {\"_id\": {\"$numberLong\": \"9007199254740992\"}}}",
	    "{ \"cursor\" : { \"firstBatch\" : [  ], \"id\" : 0, \"ns\" : \"test.e\" }, \"ok\" : 1.0 }");
	expect_reply("{\"find\": \"e\", \"filter\": {\"_id\": {\"$numberLong\": \"9007199254740993\"}}, \"lsid\": {\"id\": {\"$uuid\": \"00112233-4455-6677-8899-aabbccddeeff\"}}}",
	    "{ \"cursor\" : { \"firstBatch\" : [ { \"_id\" : 9007199254740993, \"a\" : \"big\" } ], \"id\" : 0, \"ns\" : \"test.e\" }, \"ok\" : 1.0 }");
	/* missing _id, missing collection: an empty batch */
	expect_reply("{\"find\": \"e\", \"filter\": {\"_id\": 3}}",
	    "{ \"cursor\" : { \"firstBatch\" : [  ], \"id\" : 0, \"ns\" : \"test.e\" }, \"ok\" : 1.0 }");
	expect_reply("{\"find\": \"nope\", \"filter\": {\"_id\": 3}}",
	    "{ \"cursor\" : { \"firstBatch\" : [  ], \"id\" : 0, \"ns\" : \"test.nope\" }, \"ok\" : 1.0 }");
	/* what drivers' findOne sends */
	expect_reply("{\"find\": \"e\", \"filter\": {\"_id\": 1}, \"limit\": 1, \"singleBatch\": true, \"batchSize\": 1}",
	    "{ \"cursor\" : { \"firstBatch\" : [ { \"_id\" : 1, \"a\" : \"one\" } ], \"id\" : 0, \"ns\" : \"test.e\" }, \"ok\" : 1.0 }");
	expect_reply("{\"find\": \"e\", \"filter\": {\"_id\": 1}, \"limit\": {\"$numberLong\": \"1\"}, \"singleBatch\": true}",
	    "{ \"cursor\" : { \"firstBatch\" : [ { \"_id\" : 1, \"a\" : \"one\" } ], \"id\" : 0, \"ns\" : \"test.e\" }, \"ok\" : 1.0 }");
	expect_reply("{\"find\": \"e\", \"filter\": {\"_id\": 8}, \"limit\": 1, \"batchSize\": 1}",
	    "{ \"cursor\" : { \"firstBatch\" : [  ], \"id\" : 0, \"ns\" : \"test.e\" }, \"ok\" : 1.0 }");
	expect_reply("{\"find\": \"e\", \"filter\": {\"_id\": 1}, \"limit\": 0, \"batchSize\": 5}",
	    "{ \"cursor\" : { \"firstBatch\" : [ { \"_id\" : 1, \"a\" : \"one\" } ], \"id\" : 0, \"ns\" : \"test.e\" }, \"ok\" : 1.0 }");
	expect_reply("{\"find\": \"e\", \"filter\": {\"_id\": 1}, \"limit\": -1}",
	    "{ \"ok\" : 0.0, \"errmsg\" : \"BSON field 'limit' value must be >= 0, actual value '-1'\", \"code\" : 51024, \"codeName\" : \"Location51024\" }");
	expect_reply("{\"find\": \"e\", \"filter\": {\"_id\": 1}, \"singleBatch\": \"yes\"}",
	    "{ \"ok\" : 0.0, \"errmsg\" : \"BSON field 'find.singleBatch' is the wrong type 'string', expected type 'bool'\", \"code\" : 14, \"codeName\" : \"TypeMismatch\" }");
	{
		/* batchSize 0: an empty first batch and an open cursor (general path) */
		int rc;
		bson_t *r = run("{\"find\": \"e\", \"filter\": {\"_id\": 1}, \"batchSize\": 0}", &rc);
		TT_EQ_INT(rc, 0);
		TT_ASSERT(tt_get_i64(r, "cursor.id") != 0);
		tt_free_reply(r);
	}
	/* other shapes: the general path */
	expect_reply("{\"find\": \"e\", \"filter\": {\"_id\": \"s\"}}",
	    "{ \"cursor\" : { \"firstBatch\" : [ { \"_id\" : \"s\", \"a\" : \"str\" } ], \"id\" : 0, \"ns\" : \"test.e\" }, \"ok\" : 1.0 }");
	expect_reply("{\"find\": \"e\", \"filter\": {\"_id\": 1}, \"projection\": {\"a\": 0}}",
	    "{ \"cursor\" : { \"firstBatch\" : [ { \"_id\" : 1 } ], \"id\" : 0, \"ns\" : \"test.e\" }, \"ok\" : 1.0 }");
	expect_reply("{\"find\": \"e\", \"filter\": {\"_id\": 1}, \"bogus\": 1}",
	    "{ \"ok\" : 0.0, \"errmsg\" : \"BSON field 'find.bogus' is an unknown field.\", \"code\" : 40415, \"codeName\" : \"Location40415\" }");
	expect_reply("{\"find\": \"e\", \"filter\": {\"_id\": 1}, \"filter\": {\"_id\": 2.5}}",
	    "{ \"cursor\" : { \"firstBatch\" : [ { \"_id\" : 1, \"a\" : \"one\" } ], \"id\" : 0, \"ns\" : \"test.e\" }, \"ok\" : 1.0 }");
	expect_reply("{\"find\": 7, \"filter\": {\"_id\": 1}}",
	    "{ \"ok\" : 0.0, \"errmsg\" : \"collection name has invalid type int\", \"code\" : 73, \"codeName\" : \"InvalidNamespace\" }");
}

/* plan_filter_id_point reads the common {_id: scalar} from its bytes: the
 * value must be libbson's for every type, and any other shape refused as
 * before (query/plan.c id_point_fast) */
static void
test_id_point(void)
{
	static const char *yes[] = {
		"{\"_id\": 7}", "{\"_id\": {\"$numberLong\": \"-9007199254740993\"}}", "{\"_id\": 2.5}",
		"{\"_id\": {\"$numberDecimal\": \"2.50\"}}", "{\"_id\": {\"$oid\": \"65a1b2c3d4e5f60718293a4b\"}}",
		"{\"_id\": {\"$date\": {\"$numberLong\": \"1700000000123\"}}}",
		"{\"_id\": {\"$timestamp\": {\"t\": 1700000000, \"i\": 42}}}", "{\"_id\": true}",
		"{\"_id\": {\"$binary\": {\"base64\": \"AAEC\", \"subType\": \"00\"}}}",
	};
	static const char *no[] = {
		"{}", "{\"_id\": \"s\"}", "{\"_id\": 1, \"a\": 2}", "{\"a\": 1}", "{\"_idx\": 1}", "{\"_i\": 1}",
		"{\"_id\": null}", "{\"_id\": {\"$gt\": 1}}", "{\"a\": 1, \"_id\": 1}",
	};

	for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
		bson_t *f = tt_json(yes[i]);
		bson_value_t got, want;
		bson_iter_t it;

		memset(&got, 0xa5, sizeof(got));
		TT_ASSERT(bson_iter_init_find(&it, f, "_id"));
		want = *bson_iter_value(&it);
		TT_ASSERT(plan_filter_id_point(f, &got));
		TT_EQ_INT(got.value_type, want.value_type);
		TT_ASSERT(bv_equal(&got, &want));
		if (want.value_type == BSON_TYPE_TIMESTAMP) {
			TT_EQ_INT(got.value.v_timestamp.timestamp, 1700000000);
			TT_EQ_INT(got.value.v_timestamp.increment, 42);
		}
		if (want.value_type == BSON_TYPE_DECIMAL128)
			TT_ASSERT(got.value.v_decimal128.low == want.value.v_decimal128.low &&
			          got.value.v_decimal128.high == want.value.v_decimal128.high);
		bson_destroy(f);
	}
	for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++) {
		bson_t *f = tt_json(no[i]);
		bson_value_t got;

		TT_ASSERT(!plan_filter_id_point(f, &got));
		bson_destroy(f);
	}
}

/* a found document larger than any fixed buffer of the reply's builder */
static void
test_big_document(void)
{
	char *big = bson_malloc(70000), *cmd = bson_malloc(70100), *want = bson_malloc(70200);

	memset(big, 'x', 69999);
	big[69999] = '\0';
	snprintf(cmd, 70100, "{\"insert\": \"big\", \"documents\": [{\"_id\": 1, \"s\": \"%s\"}]}", big);
	ok(cmd);
	snprintf(want, 70200,
	    "{ \"cursor\" : { \"firstBatch\" : [ { \"_id\" : 1, \"s\" : \"%s\" } ], \"id\" : 0, \"ns\" : \"test.big\" }, \"ok\" : 1.0 }",
	    big);
	expect_reply("{\"find\": \"big\", \"filter\": {\"_id\": 1}}", want);
	bson_free(big);
	bson_free(cmd);
	bson_free(want);
}

/* the found document's _id compared by its bytes when the types match
 * (query/plan.c id_bytes_equal), by value otherwise: each type finds its
 * document, a NaN or a -0.0 too */
static void
test_found_types(void)
{
	static const char *ids[] = {
		"{\"$date\": {\"$numberLong\": \"1700000000123\"}}", "{\"$timestamp\": {\"t\": 1700000000, \"i\": 42}}",
		"{\"$numberLong\": \"77\"}", "{\"$numberDouble\": \"NaN\"}", "{\"$numberDouble\": \"-0.0\"}", "3.25",
		"{\"$oid\": \"65a1b2c3d4e5f60718293a4c\"}", "{\"$numberInt\": \"-5\"}",
	};
	char cmd[512];

	for (size_t i = 0; i < sizeof(ids) / sizeof(ids[0]); i++) {
		char *got;
		snprintf(cmd, sizeof cmd, "{\"insert\": \"types\", \"documents\": [{\"_id\": %s, \"k\": %zu}]}", ids[i], i);
		ok(cmd);
		snprintf(cmd, sizeof cmd, "{\"find\": \"types\", \"filter\": {\"_id\": %s}}", ids[i]);
		got = reply_json(cmd);
		snprintf(cmd, sizeof cmd, "\"k\" : %zu }", i);
		if (strstr(got, cmd) == NULL)
			fprintf(stderr, "%s: %s\n", ids[i], got);
		TT_ASSERT(strstr(got, cmd) != NULL);
		bson_free(got);
	}
	/* -0.0 and 0 are the same _id; another timestamp is not */
	expect_reply("{\"find\": \"types\", \"filter\": {\"_id\": 0}}",
	    "{ \"cursor\" : { \"firstBatch\" : [ { \"_id\" : -0.0, \"k\" : 4 } ], \"id\" : 0, \"ns\" : \"test.types\" }, \"ok\" : 1.0 }");
	expect_reply("{\"find\": \"types\", \"filter\": {\"_id\": {\"$timestamp\": {\"t\": 1700000000, \"i\": 43}}}}",
	    "{ \"cursor\" : { \"firstBatch\" : [  ], \"id\" : 0, \"ns\" : \"test.types\" }, \"ok\" : 1.0 }");
}

static void
test_traces(void)
{
	int64_t before, after;
	int rc;
	bson_t *r;
	char *j;

	ok("{\"insert\": \"t\", \"documents\": [{\"_id\": 1}, {\"_id\": 2}]}");
	before = id_index_ops("t");
	ok("{\"find\": \"t\", \"filter\": {\"_id\": 1}}");
	ok("{\"find\": \"t\", \"filter\": {\"_id\": 5}}");
	after = id_index_ops("t");
	TT_EQ_INT(after - before, 2);   /* $indexStats counts express lookups */

	/* the profiler sees the plan of the general path */
	ok("{\"profile\": 2}");
	ok("{\"find\": \"t\", \"filter\": {\"_id\": 2}}");
	ok("{\"find\": \"t\", \"filter\": {\"_id\": 7}}");
	ok("{\"profile\": 0}");
	r = run("{\"find\": \"system.profile\", \"filter\": {\"ns\": \"test.t\", \"op\": \"query\"},"
	        " \"projection\": {\"_id\": 0, \"planSummary\": 1, \"keysExamined\": 1, \"docsExamined\": 1, \"nreturned\": 1}}",
	    &rc);
	TT_EQ_INT(rc, 0);
	j = bson_as_relaxed_extended_json(r, NULL);
	TT_ASSERT(strstr(j, "{ \"keysExamined\" : 1, \"docsExamined\" : 1, \"nreturned\" : 1, \"planSummary\" : \"EXPRESS_IXSCAN { _id: 1 }\" }") != NULL ||
	    strstr(j, "\"planSummary\" : \"EXPRESS_IXSCAN { _id: 1 }\"") != NULL);
	TT_ASSERT(strstr(j, "\"docsExamined\" : 0") != NULL);   /* the missing _id */
	bson_free(j);
	tt_free_reply(r);

	/* explain shows mongod's express stage */
	r = run("{\"explain\": {\"find\": \"t\", \"filter\": {\"_id\": 1}}, \"verbosity\": \"executionStats\"}", &rc);
	TT_EQ_INT(rc, 0);
	j = bson_as_relaxed_extended_json(r, NULL);
	TT_ASSERT(strstr(j, "\"stage\" : \"EXPRESS_IXSCAN\"") != NULL);
	TT_ASSERT(strstr(j, "\"totalKeysExamined\" : 1") != NULL);
	bson_free(j);
	tt_free_reply(r);
}

static void
test_other_collections(void)
{
	/* a view: the general path's aggregation */
	ok("{\"insert\": \"base\", \"documents\": [{\"_id\": 1, \"k\": 1}, {\"_id\": 2, \"k\": 2}]}");
	ok("{\"create\": \"v\", \"viewOn\": \"base\", \"pipeline\": [{\"$match\": {\"k\": 2}}]}");
	expect_reply("{\"find\": \"v\", \"filter\": {\"_id\": 2}}",
	    "{ \"cursor\" : { \"firstBatch\" : [ { \"_id\" : 2, \"k\" : 2 } ], \"id\" : 0, \"ns\" : \"test.v\" }, \"ok\" : 1.0 }");
	expect_reply("{\"find\": \"v\", \"filter\": {\"_id\": 1}}",
	    "{ \"cursor\" : { \"firstBatch\" : [  ], \"id\" : 0, \"ns\" : \"test.v\" }, \"ok\" : 1.0 }");
	/* a clustered collection: one lookup in the clustered table */
	ok("{\"create\": \"cl\", \"clusteredIndex\": {\"key\": {\"_id\": 1}, \"unique\": true}}");
	ok("{\"insert\": \"cl\", \"documents\": [{\"_id\": 4, \"c\": 1}, {\"_id\": 5, \"c\": 2}]}");
	expect_reply("{\"find\": \"cl\", \"filter\": {\"_id\": 5}}",
	    "{ \"cursor\" : { \"firstBatch\" : [ { \"_id\" : 5, \"c\" : 2 } ], \"id\" : 0, \"ns\" : \"test.cl\" }, \"ok\" : 1.0 }");
	/* a collection with a default collation: numbers do not depend on it */
	ok("{\"create\": \"co\", \"collation\": {\"locale\": \"fr\", \"strength\": 1}}");
	ok("{\"insert\": \"co\", \"documents\": [{\"_id\": 1, \"x\": \"a\"}, {\"_id\": \"E\", \"x\": \"b\"}]}");
	expect_reply("{\"find\": \"co\", \"filter\": {\"_id\": 1}}",
	    "{ \"cursor\" : { \"firstBatch\" : [ { \"_id\" : 1, \"x\" : \"a\" } ], \"id\" : 0, \"ns\" : \"test.co\" }, \"ok\" : 1.0 }");
	expect_reply("{\"find\": \"co\", \"filter\": {\"_id\": \"e\"}}",
	    "{ \"cursor\" : { \"firstBatch\" : [ { \"_id\" : \"E\", \"x\" : \"b\" } ], \"id\" : 0, \"ns\" : \"test.co\" }, \"ok\" : 1.0 }");
}

/* The _id lookup's key (storage_doc_find_id): ints, doubles and ObjectIds,
 * and strings under the simple collation, take keystring_encode_point; a
 * string holding a NUL, one longer than its buffer, an int64 past 2^53 and
 * every string under a collation take the generic encoder.  Each must find
 * its document, and a collation must never meet a binary comparison. */
static void
test_point_keys(void)
{
	char longs[200], cmd[512], *got;
	static const char *ids[] = {
		"\"abc\"", "\"ABC\"", "\"a\\u0000b\"", "\"\"", "7", "{\"$numberLong\": \"-7\"}", "2.5",
		"{\"$numberLong\": \"9007199254740993\"}", "{\"$numberLong\": \"9007199254740992\"}",
		"{\"$oid\": \"65a1b2c3d4e5f60718293a4d\"}", NULL,
	};

	memset(longs, 'q', 120);
	longs[0] = '"';
	longs[119] = '"';
	longs[120] = '\0';
	ids[sizeof(ids) / sizeof(ids[0]) - 1] = longs;
	for (size_t i = 0; i < sizeof(ids) / sizeof(ids[0]); i++) {
		snprintf(cmd, sizeof cmd, "{\"insert\": \"pk\", \"documents\": [{\"_id\": %s, \"k\": %zu}]}", ids[i], i);
		ok(cmd);
	}
	for (size_t i = 0; i < sizeof(ids) / sizeof(ids[0]); i++) {
		snprintf(cmd, sizeof cmd, "{\"find\": \"pk\", \"filter\": {\"_id\": %s}}", ids[i]);
		got = reply_json(cmd);
		snprintf(cmd, sizeof cmd, "\"k\" : %zu }", i);
		if (strstr(got, cmd) == NULL || strstr(got, "}, {") != NULL)
			fprintf(stderr, "%s: %s\n", ids[i], got);
		TT_ASSERT(strstr(got, cmd) != NULL && strstr(got, "}, {") == NULL);
		bson_free(got);
	}
	/* the simple collation compares bytes: "Abc" is none of them */
	expect_reply("{\"find\": \"pk\", \"filter\": {\"_id\": \"Abc\"}}",
	    "{ \"cursor\" : { \"firstBatch\" : [  ], \"id\" : 0, \"ns\" : \"test.pk\" }, \"ok\" : 1.0 }");
	/* 7 as a double and as an int64 are the same _id */
	expect_reply("{\"find\": \"pk\", \"filter\": {\"_id\": {\"$numberDouble\": \"7.0\"}}}",
	    "{ \"cursor\" : { \"firstBatch\" : [ { \"_id\" : 7, \"k\" : 4 } ], \"id\" : 0, \"ns\" : \"test.pk\" }, \"ok\" : 1.0 }");
	/* a query collation: both cases, never the binary key */
	expect_reply("{\"find\": \"pk\", \"filter\": {\"_id\": \"aBc\"}, \"sort\": {\"k\": 1}, "
	    "\"collation\": {\"locale\": \"en\", \"strength\": 2}}",
	    "{ \"cursor\" : { \"firstBatch\" : [ { \"_id\" : \"abc\", \"k\" : 0 }, { \"_id\" : \"ABC\", \"k\" : 1 } ], "
	    "\"id\" : 0, \"ns\" : \"test.pk\" }, \"ok\" : 1.0 }");
	/* a collection collation: its _id index holds sort keys */
	ok("{\"create\": \"pkc\", \"collation\": {\"locale\": \"en\", \"strength\": 2}}");
	ok("{\"insert\": \"pkc\", \"documents\": [{\"_id\": \"Straße\", \"k\": 1}, {\"_id\": 3, \"k\": 2}]}");
	expect_reply("{\"find\": \"pkc\", \"filter\": {\"_id\": \"STRAßE\"}}",
	    "{ \"cursor\" : { \"firstBatch\" : [ { \"_id\" : \"Straße\", \"k\" : 1 } ], \"id\" : 0, \"ns\" : \"test.pkc\" }, \"ok\" : 1.0 }");
	expect_reply("{\"find\": \"pkc\", \"filter\": {\"_id\": \"straße\"}}",
	    "{ \"cursor\" : { \"firstBatch\" : [ { \"_id\" : \"Straße\", \"k\" : 1 } ], \"id\" : 0, \"ns\" : \"test.pkc\" }, \"ok\" : 1.0 }");
	expect_reply("{\"find\": \"pkc\", \"filter\": {\"_id\": {\"$numberLong\": \"3\"}}}",
	    "{ \"cursor\" : { \"firstBatch\" : [ { \"_id\" : 3, \"k\" : 2 } ], \"id\" : 0, \"ns\" : \"test.pkc\" }, \"ok\" : 1.0 }");
	/* the same key twice is a duplicate, through either encoder */
	{
		int rc;
		bson_t *r = run("{\"insert\": \"pkc\", \"documents\": [{\"_id\": \"STRAßE\"}]}", &rc);
		char *j = bson_as_relaxed_extended_json(r, NULL);

		TT_ASSERT(strstr(j, "11000") != NULL);
		bson_free(j);
		tt_free_reply(r);
	}
}

int
main(void)
{
	char *dir = tt_tmpdir("express");
	engine_options_t o;
	terr_t err = TERR_INIT;

	memset(&o, 0, sizeof(o));
	o.storage.create = true;
	if (engine_open(dir, &o, &eng, &err) != 0) {
		fprintf(stderr, "engine_open: %s\n", err.msg);
		return 1;
	}
	query_keygen_register(engine_storage(eng));
	cl = client_new(eng, NULL);
	TT_RUN(test_answers);
	TT_RUN(test_id_point);
	TT_RUN(test_big_document);
	TT_RUN(test_found_types);
	TT_RUN(test_traces);
	TT_RUN(test_other_collections);
	TT_RUN(test_point_keys);
	client_free(cl);
	engine_close(eng);
	tt_rmdir(dir);
	bson_free(dir);
	return tt_finish();
}
