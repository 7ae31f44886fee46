/*
 * test_embedded.c -- the embedded API end to end: open a folder, run the
 * commands a driver sends, read mongod-shaped replies, reopen.
 */
#include "tt.h"

#include <sys/wait.h>

#include "tt_embedded.h"

static tamga_t *db;
static char *dir;

/* Run a command given as relaxed extended JSON; returns the reply (caller
 * destroys) and the return code in *rc. */
static bson_t *
run(const char *dbname, const char *json, int *rc)
{
	return tt_run_json(db, dbname, json, rc);
}

static void
test_open_errors(void)
{
	tamga_t *t = NULL;
	tamga_error_t e;
	char *missing = bson_strdup_printf("%s/does-not-exist", dir);

	TT_ASSERT(tamga_open(missing, NULL, &t, &e) != 0);
	TT_EQ_INT(e.code, 29);
	TT_ASSERT(t == NULL);
	TT_ASSERT(tamga_open(dir, "bogus_option", &t, &e) != 0);
	TT_EQ_INT(e.code, 2);
	bson_free(missing);
}

static void
test_insert_find(void)
{
	int rc, i;
	bson_t *r;
	bson_t *cmd = bson_new(), docs;
	bson_t reply;
	tamga_error_t e;
	int64_t id;

	r = run("shop", "{\"insert\": \"items\", \"documents\": [{\"_id\": 1, \"a\": 1}, {\"_id\": 2, \"a\": 2}]}", &rc);
	TT_EQ_INT(rc, 0);
	TT_EQ_JSON(r, "{ \"n\" : 2, \"ok\" : 1.0 }");
	tt_free_reply(r);

	/* duplicate _id: a write error with mongod's message, n counts the rest */
	r = run("shop", "{\"insert\": \"items\", \"documents\": [{\"_id\": 3}, {\"_id\": 1}, {\"_id\": 4}], \"ordered\": true}", &rc);
	TT_EQ_INT(rc, 0);
	TT_EQ_INT(tt_get_i64(r, "n"), 1);
	TT_EQ_INT(tt_get_i64(r, "writeErrors.0.code"), 11000);
	TT_EQ_INT(tt_get_i64(r, "writeErrors.0.index"), 1);
	TT_EQ_STR(tt_get_str(r, "writeErrors.0.errmsg"),
	    "E11000 duplicate key error collection: shop.items index: _id_ dup key: { _id: 1 }");
	tt_free_reply(r);

	r = run("shop", "{\"insert\": \"items\", \"documents\": [{\"_id\": 1}, {\"_id\": 5}], \"ordered\": false}", &rc);
	TT_EQ_INT(tt_get_i64(r, "n"), 1);
	tt_free_reply(r);

	/* _id generated and put first */
	r = run("shop", "{\"insert\": \"gen\", \"documents\": [{\"x\": 1, \"_id\": 7}, {\"y\": 2}]}", &rc);
	TT_EQ_INT(tt_get_i64(r, "n"), 2);
	tt_free_reply(r);
	r = run("shop", "{\"find\": \"gen\", \"filter\": {\"_id\": 7}}", &rc);
	TT_EQ_JSON(r, "{ \"cursor\" : { \"firstBatch\" : [ { \"_id\" : 7, \"x\" : 1 } ], \"id\" : 0, \"ns\" : \"shop.gen\" }, \"ok\" : 1.0 }");
	tt_free_reply(r);

	/* 250 documents: a first batch of 101 then getMore */
	bson_append_utf8(cmd, "insert", -1, "many", -1);
	bson_append_array_begin(cmd, "documents", -1, &docs);
	for (i = 0; i < 250; i++) {
		char k[16];
		bson_t d;
		snprintf(k, sizeof(k), "%d", i);
		bson_append_document_begin(&docs, k, -1, &d);
		BSON_APPEND_INT32(&d, "_id", i);
		BSON_APPEND_INT32(&d, "v", i % 7);
		bson_append_document_end(&docs, &d);
	}
	bson_append_array_end(cmd, &docs);
	TT_EQ_INT(tamga_run_command(db, "shop", cmd, &reply, &e), 0);
	TT_EQ_INT(tt_get_i64(&reply, "n"), 250);
	bson_destroy(&reply);
	bson_destroy(cmd);

	r = run("shop", "{\"find\": \"many\"}", &rc);
	id = tt_get_i64(r, "cursor.id");
	TT_ASSERT(id != 0);
	TT_EQ_INT(tt_get_i64(r, "cursor.firstBatch.100._id"), 100);
	TT_EQ_INT(tt_get_i64(r, "cursor.firstBatch.101._id"), -999);
	tt_free_reply(r);
	{
		char *gm = bson_strdup_printf("{\"getMore\": {\"$numberLong\": \"%lld\"}, \"collection\": \"many\", \"batchSize\": 100}", (long long)id);
		r = run("shop", gm, &rc);
		TT_EQ_INT(rc, 0);
		TT_EQ_INT(tt_get_i64(r, "cursor.nextBatch.0._id"), 101);
		TT_EQ_INT(tt_get_i64(r, "cursor.id"), id);
		tt_free_reply(r);
		r = run("shop", gm, &rc);
		TT_EQ_INT(tt_get_i64(r, "cursor.nextBatch.48._id"), 249);
		TT_EQ_INT(tt_get_i64(r, "cursor.id"), 0);
		tt_free_reply(r);
		/* exhausted cursor is gone */
		r = run("shop", gm, &rc);
		TT_ASSERT(rc != 0);
		TT_EQ_INT(tt_get_i64(r, "code"), 43);
		tt_free_reply(r);
		bson_free(gm);
	}

	r = run("shop", "{\"find\": \"many\", \"filter\": {\"v\": 3}, \"skip\": 2, \"limit\": 5}", &rc);
	TT_EQ_INT(tt_get_i64(r, "cursor.firstBatch.0._id"), 17);
	TT_EQ_INT(tt_get_i64(r, "cursor.firstBatch.4._id"), 45);
	TT_EQ_INT(tt_get_i64(r, "cursor.firstBatch.5._id"), -999);
	TT_EQ_INT(tt_get_i64(r, "cursor.id"), 0);
	tt_free_reply(r);

	/* sort: v descending, then _id ascending; skip and limit after sorting */
	r = run("shop", "{\"find\": \"many\", \"sort\": {\"v\": -1, \"_id\": 1}, \"skip\": 1, \"limit\": 3}", &rc);
	TT_EQ_INT(rc, 0);
	TT_EQ_INT(tt_get_i64(r, "cursor.firstBatch.0._id"), 13);
	TT_EQ_INT(tt_get_i64(r, "cursor.firstBatch.2._id"), 27);
	TT_EQ_INT(tt_get_i64(r, "cursor.firstBatch.3._id"), -999);
	tt_free_reply(r);
	r = run("shop", "{\"find\": \"many\", \"sort\": {\"$natural\": -1}, \"limit\": 1}", &rc);
	TT_EQ_INT(tt_get_i64(r, "cursor.firstBatch.0._id"), 249);
	tt_free_reply(r);
	r = run("shop", "{\"find\": \"many\", \"sort\": {\"v\": 2}}", &rc);
	TT_EQ_INT(tt_get_i64(r, "code"), 15975);
	tt_free_reply(r);

	r = run("shop", "{\"count\": \"many\", \"query\": {\"v\": {\"$lt\": 2}}}", &rc);
	TT_EQ_INT(tt_get_i64(r, "n"), 72);
	tt_free_reply(r);
	r = run("shop", "{\"count\": \"many\"}", &rc);
	TT_EQ_INT(tt_get_i64(r, "n"), 250);
	tt_free_reply(r);
	r = run("shop", "{\"distinct\": \"many\", \"key\": \"v\", \"query\": {\"_id\": {\"$lt\": 10}}}", &rc);
	TT_EQ_JSON(r, "{ \"values\" : [ 0, 1, 2, 3, 4, 5, 6 ], \"ok\" : 1.0 }");
	tt_free_reply(r);

	r = run("shop", "{\"delete\": \"many\", \"deletes\": [{\"q\": {\"v\": 0}, \"limit\": 1}, {\"q\": {\"v\": 1}, \"limit\": 0}]}", &rc);
	TT_EQ_INT(tt_get_i64(r, "n"), 1 + 36);
	tt_free_reply(r);
	r = run("shop", "{\"count\": \"many\"}", &rc);
	TT_EQ_INT(tt_get_i64(r, "n"), 250 - 37);
	tt_free_reply(r);
}

/* find {_id: v}: the point lookup without a compiled filter answers as the
 * general path does: numbers equal across types, other scalar types, no
 * match, skip/limit, an empty first batch then getMore, and the values it
 * leaves to the general path (strings, documents, operators). */
static void
test_find_id_point(void)
{
	static const struct {
		const char *filter_and_options;
		const char *reply;
	} cases[] = {
		{"\"filter\": {\"_id\": 1}", "[ { \"_id\" : 1.0, \"t\" : \"double\" } ]"},
		{"\"filter\": {\"_id\": {\"$numberLong\": \"2\"}}", "[ { \"_id\" : 2, \"t\" : \"int\" } ]"},
		{"\"filter\": {\"_id\": {\"$numberDecimal\": \"2.0\"}}", "[ { \"_id\" : 2, \"t\" : \"int\" } ]"},
		{"\"filter\": {\"_id\": 2.5}", "[  ]"},
		{"\"filter\": {\"_id\": {\"$oid\": \"650000000000000000000001\"}}",
		    "[ { \"_id\" : { \"$oid\" : \"650000000000000000000001\" }, \"t\" : \"oid\" } ]"},
		{"\"filter\": {\"_id\": {\"$date\": 86400000}}",
		    "[ { \"_id\" : { \"$date\" : \"1970-01-02T00:00:00Z\" }, \"t\" : \"date\" } ]"},
		{"\"filter\": {\"_id\": true}", "[ { \"_id\" : true, \"t\" : \"bool\" } ]"},
		{"\"filter\": {\"_id\": {\"$binary\": {\"base64\": \"AQI=\", \"subType\": \"00\"}}}",
		    "[ { \"_id\" : { \"$binary\" : { \"base64\" : \"AQI=\", \"subType\" : \"00\" } }, \"t\" : \"bin\" } ]"},
		{"\"filter\": {\"_id\": {\"$binary\": {\"base64\": \"AQI=\", \"subType\": \"05\"}}}", "[  ]"},
		{"\"filter\": {\"_id\": \"s\"}", "[ { \"_id\" : \"s\", \"t\" : \"string\" } ]"},
		{"\"filter\": {\"_id\": {\"a\": 1}}", "[ { \"_id\" : { \"a\" : 1 }, \"t\" : \"doc\" } ]"},
		{"\"filter\": {\"_id\": {\"$gte\": 2, \"$lt\": 3}}", "[ { \"_id\" : 2, \"t\" : \"int\" } ]"},
		{"\"filter\": {\"_id\": 1, \"t\": \"int\"}", "[  ]"},
		{"\"filter\": {\"_id\": 1}, \"skip\": 1", "[  ]"},
		{"\"filter\": {\"_id\": 1}, \"limit\": 1, \"singleBatch\": true", "[ { \"_id\" : 1.0, \"t\" : \"double\" } ]"},
		{"\"filter\": {\"_id\": 99}", "[  ]"},
	};
	int rc;
	bson_t *r;

	r = run("pt", "{\"insert\": \"c\", \"documents\": [{\"_id\": 1.0, \"t\": \"double\"}, {\"_id\": 2, \"t\": \"int\"}, "
	    "{\"_id\": {\"$oid\": \"650000000000000000000001\"}, \"t\": \"oid\"}, {\"_id\": {\"$date\": 86400000}, \"t\": \"date\"}, "
	    "{\"_id\": true, \"t\": \"bool\"}, {\"_id\": {\"$binary\": {\"base64\": \"AQI=\", \"subType\": \"00\"}}, \"t\": \"bin\"}, "
	    "{\"_id\": \"s\", \"t\": \"string\"}, {\"_id\": {\"a\": 1}, \"t\": \"doc\"}]}", &rc);
	TT_EQ_INT(tt_get_i64(r, "n"), 8);
	tt_free_reply(r);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *cmd = bson_strdup_printf("{\"find\": \"c\", %s}", cases[i].filter_and_options);
		char *want = bson_strdup_printf("{ \"cursor\" : { \"firstBatch\" : %s, \"id\" : 0, \"ns\" : \"pt.c\" }, "
		    "\"ok\" : 1.0 }", cases[i].reply);
		r = run("pt", cmd, &rc);
		TT_EQ_INT(rc, 0);
		TT_EQ_JSON(r, want);
		tt_free_reply(r);
		bson_free(cmd);
		bson_free(want);
	}

	/* batchSize 0: an empty first batch, the document comes with getMore */
	r = run("pt", "{\"find\": \"c\", \"filter\": {\"_id\": 2}, \"batchSize\": 0}", &rc);
	TT_EQ_INT(rc, 0);
	TT_EQ_INT(tt_get_i64(r, "cursor.firstBatch.0._id"), -999);
	{
		int64_t id = tt_get_i64(r, "cursor.id");
		char *gm = bson_strdup_printf("{\"getMore\": {\"$numberLong\": \"%lld\"}, \"collection\": \"c\"}", (long long)id);
		TT_ASSERT(id != 0);
		tt_free_reply(r);
		r = run("pt", gm, &rc);
		TT_EQ_INT(rc, 0);
		TT_EQ_JSON(r, "{ \"cursor\" : { \"nextBatch\" : [ { \"_id\" : 2, \"t\" : \"int\" } ], \"id\" : 0, \"ns\" : \"pt.c\" }, "
		    "\"ok\" : 1.0 }");
		bson_free(gm);
	}
	tt_free_reply(r);

	/* a missing collection: no documents, no error */
	r = run("pt", "{\"find\": \"nothere\", \"filter\": {\"_id\": 1}}", &rc);
	TT_EQ_INT(rc, 0);
	TT_EQ_INT(tt_get_i64(r, "cursor.firstBatch.0._id"), -999);
	tt_free_reply(r);

	/* explain still shows mongod's express stage */
	r = run("pt", "{\"explain\": {\"find\": \"c\", \"filter\": {\"_id\": 2}}, \"verbosity\": \"queryPlanner\"}", &rc);
	TT_EQ_INT(rc, 0);
	TT_EQ_STR(tt_get_str(r, "queryPlanner.winningPlan.stage"), "EXPRESS_IXSCAN");
	tt_free_reply(r);
}

static void
test_errors(void)
{
	int rc;
	bson_t *r;

	r = run("shop", "{\"frobnicate\": 1}", &rc);
	TT_ASSERT(rc != 0);
	TT_EQ_JSON(r, "{ \"ok\" : 0.0, \"errmsg\" : \"no such command: 'frobnicate'\", \"code\" : 59, \"codeName\" : \"CommandNotFound\" }");
	tt_free_reply(r);
	r = run("shop", "{\"find\": \"items\", \"filter\": {\"a\": {\"$foo\": 1}}}", &rc);
	TT_EQ_INT(tt_get_i64(r, "code"), 2);
	TT_EQ_STR(tt_get_str(r, "errmsg"), "unknown operator: $foo");
	tt_free_reply(r);
	r = run("shop", "{\"insert\": \"items\", \"documents\": [{\"_id\": [1]}]}", &rc);
	TT_EQ_INT(tt_get_i64(r, "writeErrors.0.code"), 53);
	tt_free_reply(r);
	r = run("shop", "{\"find\": \"nothere\"}", &rc);
	TT_EQ_JSON(r, "{ \"cursor\" : { \"firstBatch\" : [  ], \"id\" : 0, \"ns\" : \"shop.nothere\" }, \"ok\" : 1.0 }");
	tt_free_reply(r);
	r = run("shop", "{\"find\": \"items\", \"bogus\": 1}", &rc);
	TT_EQ_INT(tt_get_i64(r, "code"), 40415);
	tt_free_reply(r);
}

static void
test_catalog(void)
{
	int rc;
	bson_t *r;

	r = run("cat", "{\"create\": \"a\"}", &rc);
	TT_EQ_INT(rc, 0);
	tt_free_reply(r);
	r = run("cat", "{\"create\": \"a\"}", &rc);
	TT_EQ_INT(rc, 0);   /* same options: ok */
	tt_free_reply(r);
	r = run("cat", "{\"create\": \"a\", \"validator\": {\"x\": 1}}", &rc);
	TT_EQ_INT(tt_get_i64(r, "code"), 48);
	tt_free_reply(r);
	r = run("cat", "{\"create\": \"v\", \"validator\": {\"$jsonSchema\": {\"required\": [\"x\"]}}, \"validationLevel\": \"strict\"}", &rc);
	TT_EQ_INT(rc, 0);
	tt_free_reply(r);
	r = run("cat", "{\"listCollections\": 1, \"filter\": {\"name\": \"v\"}}", &rc);
	TT_EQ_STR(tt_get_str(r, "cursor.firstBatch.0.name"), "v");
	TT_EQ_STR(tt_get_str(r, "cursor.firstBatch.0.options.validationLevel"), "strict");
	TT_EQ_STR(tt_get_str(r, "cursor.firstBatch.0.idIndex.name"), "_id_");
	tt_free_reply(r);
	/* validation on insert: 121 with errInfo */
	r = run("cat", "{\"insert\": \"v\", \"documents\": [{\"_id\": 1, \"y\": 1}]}", &rc);
	TT_EQ_INT(tt_get_i64(r, "n"), 0);
	TT_EQ_INT(tt_get_i64(r, "writeErrors.0.code"), 121);
	TT_EQ_STR(tt_get_str(r, "writeErrors.0.errmsg"), "Document failed validation");
	TT_EQ_INT(tt_get_i64(r, "writeErrors.0.errInfo.failingDocumentId"), 1);
	TT_EQ_STR(tt_get_str(r, "writeErrors.0.errInfo.details.operatorName"), "$jsonSchema");
	tt_free_reply(r);
	r = run("cat", "{\"insert\": \"v\", \"documents\": [{\"_id\": 1, \"y\": 1}], \"bypassDocumentValidation\": true}", &rc);
	TT_EQ_INT(tt_get_i64(r, "n"), 1);
	tt_free_reply(r);
	r = run("cat", "{\"renameCollection\": \"cat.a\", \"to\": \"cat.b\"}", &rc);
	TT_EQ_INT(tt_get_i64(r, "code"), 13);   /* admin only */
	tt_free_reply(r);
	r = run("admin", "{\"renameCollection\": \"cat.a\", \"to\": \"cat.b\"}", &rc);
	TT_EQ_INT(rc, 0);
	tt_free_reply(r);
	r = run("admin", "{\"listDatabases\": 1, \"nameOnly\": true}", &rc);
	TT_EQ_INT(rc, 0);
	tt_free_reply(r);
	r = run("cat", "{\"drop\": \"b\"}", &rc);
	TT_EQ_INT(rc, 0);
	TT_EQ_STR(tt_get_str(r, "ns"), "cat.b");
	tt_free_reply(r);
	r = run("cat", "{\"drop\": \"b\"}", &rc);
	TT_EQ_INT(rc, 0);   /* dropping what is gone succeeds */
	tt_free_reply(r);
	r = run("cat", "{\"dropDatabase\": 1}", &rc);
	TT_EQ_INT(rc, 0);
	tt_free_reply(r);
}

static void
test_update(void)
{
	int rc;
	bson_t *r;

	r = run("up", "{\"insert\": \"c\", \"documents\": [{\"_id\": 1, \"a\": 1, \"tags\": [\"x\"]}, {\"_id\": 2, \"a\": 2}]}", &rc);
	tt_free_reply(r);
	r = run("up", "{\"update\": \"c\", \"updates\": [{\"q\": {}, \"u\": {\"$inc\": {\"a\": 10}}, \"multi\": true}]}", &rc);
	TT_EQ_JSON(r, "{ \"n\" : 2, \"nModified\" : 2, \"ok\" : 1.0 }");
	tt_free_reply(r);
	/* a $set to the same value matches but does not modify */
	r = run("up", "{\"update\": \"c\", \"updates\": [{\"q\": {\"_id\": 1}, \"u\": {\"$set\": {\"a\": 11}}}]}", &rc);
	TT_EQ_JSON(r, "{ \"n\" : 1, \"nModified\" : 0, \"ok\" : 1.0 }");
	tt_free_reply(r);
	r = run("up", "{\"update\": \"c\", \"updates\": [{\"q\": {\"_id\": 9, \"k\": \"v\"}, \"u\": {\"$inc\": {\"n\": 1}}, \"upsert\": true}]}", &rc);
	TT_EQ_JSON(r, "{ \"n\" : 1, \"nModified\" : 0, \"upserted\" : [ { \"index\" : 0, \"_id\" : 9 } ], \"ok\" : 1.0 }");
	tt_free_reply(r);
	r = run("up", "{\"find\": \"c\", \"filter\": {\"_id\": 9}}", &rc);
	TT_EQ_STR(tt_get_str(r, "cursor.firstBatch.0.k"), "v");
	TT_EQ_INT(tt_get_i64(r, "cursor.firstBatch.0.n"), 1);
	tt_free_reply(r);
	/* $inc on a string: a write error, the document unchanged */
	r = run("up", "{\"update\": \"c\", \"updates\": [{\"q\": {\"_id\": 9}, \"u\": {\"$inc\": {\"k\": 1}}}]}", &rc);
	TT_EQ_INT(tt_get_i64(r, "writeErrors.0.code"), 14);
	tt_free_reply(r);
	r = run("up", "{\"findAndModify\": \"c\", \"query\": {\"_id\": 2}, \"update\": {\"$set\": {\"b\": 1}}, \"new\": true}", &rc);
	TT_EQ_INT(rc, 0);
	TT_EQ_INT(tt_get_i64(r, "value.b"), 1);
	TT_EQ_INT(tt_get_i64(r, "lastErrorObject.n"), 1);
	tt_free_reply(r);
	r = run("up", "{\"findAndModify\": \"c\", \"query\": {\"_id\": 2}, \"remove\": true}", &rc);
	TT_EQ_INT(tt_get_i64(r, "value._id"), 2);
	tt_free_reply(r);
	r = run("up", "{\"count\": \"c\"}", &rc);
	TT_EQ_INT(tt_get_i64(r, "n"), 2);
	tt_free_reply(r);
}

/* The seed's validation walk-through, in miniature: moderate vs strict on a
 * legacy document, then the constraint upgrade refused and accepted. */
static void
test_validation_levels(void)
{
	int rc;
	bson_t *r;
	const char *schema = "{\"bsonType\": \"object\", \"required\": [\"rating\"], \"properties\": {\"rating\": {\"bsonType\": \"int\", \"minimum\": 1, \"maximum\": 5}}}";
	char *cmd;

	r = run("val", "{\"insert\": \"reviews\", \"documents\": [{\"_id\": 1, \"rating\": \"5\"}, {\"_id\": 2, \"rating\": 4}]}", &rc);
	tt_free_reply(r);
	cmd = bson_strdup_printf("{\"collMod\": \"reviews\", \"validator\": {\"$jsonSchema\": %s}, \"validationLevel\": \"moderate\"}", schema);
	r = run("val", cmd, &rc);
	TT_EQ_INT(rc, 0);
	tt_free_reply(r);
	bson_free(cmd);
	r = run("val", "{\"update\": \"reviews\", \"updates\": [{\"q\": {\"_id\": 1}, \"u\": {\"$set\": {\"body\": \"m\"}}}]}", &rc);
	TT_EQ_INT(tt_get_i64(r, "nModified"), 1);
	tt_free_reply(r);
	r = run("val", "{\"collMod\": \"reviews\", \"validationLevel\": \"strict\"}", &rc);
	tt_free_reply(r);
	r = run("val", "{\"update\": \"reviews\", \"updates\": [{\"q\": {\"_id\": 1}, \"u\": {\"$set\": {\"body\": \"s\"}}}]}", &rc);
	TT_EQ_INT(tt_get_i64(r, "writeErrors.0.code"), 121);
	TT_EQ_STR(tt_get_str(r, "writeErrors.0.errmsg"), "Plan executor error during update :: caused by :: Document failed validation");
	tt_free_reply(r);
	r = run("val", "{\"insert\": \"reviews\", \"documents\": [{\"_id\": 3, \"rating\": 6}]}", &rc);
	TT_EQ_STR(tt_get_str(r, "writeErrors.0.errInfo.details.schemaRulesNotSatisfied.0.operatorName"), "properties");
	tt_free_reply(r);
	r = run("val", "{\"collMod\": \"reviews\", \"validationLevel\": \"constraint\"}", &rc);
	TT_EQ_INT(tt_get_i64(r, "code"), 2);
	TT_EQ_STR(tt_get_str(r, "errmsg"), "Failed to set validation options :: caused by :: Cannot upgrade validationLevel to 'constraint' without first setting prepareConstraintValidationLevel to true");
	tt_free_reply(r);
	r = run("val", "{\"collMod\": \"reviews\", \"prepareConstraintValidationLevel\": true}", &rc);
	TT_EQ_INT(rc, 0);
	tt_free_reply(r);
	r = run("val", "{\"collMod\": \"reviews\", \"validationLevel\": \"constraint\", \"validationAction\": \"error\"}", &rc);
	TT_EQ_INT(tt_get_i64(r, "code"), 12370902);
	TT_ASSERT(strstr(tt_get_str(r, "errmsg"), "First offending document _id: 1 Run db.reviews.find({\"$nor\": [{ $jsonSchema: { bsonType: \"object\"") != NULL);
	tt_free_reply(r);
	r = run("val", "{\"update\": \"reviews\", \"updates\": [{\"q\": {\"_id\": 1}, \"u\": {\"$set\": {\"rating\": 5}}}]}", &rc);
	TT_EQ_INT(tt_get_i64(r, "nModified"), 1);
	tt_free_reply(r);
	r = run("val", "{\"collMod\": \"reviews\", \"validationLevel\": \"constraint\", \"validationAction\": \"error\"}", &rc);
	TT_EQ_INT(rc, 0);
	tt_free_reply(r);
	r = run("val", "{\"insert\": \"reviews\", \"bypassDocumentValidation\": true, \"documents\": [{\"rating\": 6}]}", &rc);
	TT_EQ_INT(tt_get_i64(r, "n"), 0);
	TT_EQ_INT(tt_get_i64(r, "writeErrors.0.code"), 2);
	TT_EQ_STR(tt_get_str(r, "writeErrors.0.errmsg"), "bypassDocumentValidation is not permitted with 'constraint' validationLevel");
	tt_free_reply(r);
	r = run("val", "{\"collMod\": \"reviews\", \"validator\": {\"$jsonSchema\": {\"bsonType\": \"object\"}}}", &rc);
	TT_EQ_STR(tt_get_str(r, "errmsg"), "Failed to set validation options :: caused by :: Validator cannot be changed when Validation level is 'constraint'");
	tt_free_reply(r);
	r = run("val", "{\"listCollections\": 1, \"filter\": {\"name\": \"reviews\"}}", &rc);
	TT_EQ_STR(tt_get_str(r, "cursor.firstBatch.0.options.validationLevel"), "constraint");
	TT_EQ_STR(tt_get_str(r, "cursor.firstBatch.0.options.validationAction"), "error");
	tt_free_reply(r);
	r = run("val", "{\"collMod\": \"reviews\", \"validationLevel\": \"strict\"}", &rc);
	TT_EQ_INT(rc, 0);
	tt_free_reply(r);
}

static void
test_reopen_and_lock(void)
{
	tamga_error_t e;
	int rc, status;
	bson_t *r;
	pid_t pid;

	/* another process may not open the folder while we hold it */
	pid = fork();
	if (pid == 0) {
		tamga_t *t2 = NULL;
		int code = tamga_open(dir, NULL, &t2, &e) == 0 ? 0 : e.code;
		_exit(code == 98 ? 0 : 1);
	}
	waitpid(pid, &status, 0);
	TT_ASSERT(WIFEXITED(status) && WEXITSTATUS(status) == 0);

	tamga_close(db);
	db = NULL;
	TT_EQ_INT(tamga_open(dir, NULL, &db, &e), 0);
	r = run("shop", "{\"count\": \"items\"}", &rc);
	TT_EQ_INT(tt_get_i64(r, "n"), 4);
	tt_free_reply(r);
}

int
main(void)
{
	dir = tt_tmpdir("embedded");
	TT_RUN(test_open_errors);
	if ((db = tt_open_new(dir)) == NULL)
		return 1;
	TT_RUN(test_insert_find);
	TT_RUN(test_find_id_point);
	TT_RUN(test_errors);
	TT_RUN(test_catalog);
	TT_RUN(test_update);
	TT_RUN(test_validation_levels);
	TT_RUN(test_reopen_and_lock);
	tt_close_rm(db, dir);
	return tt_finish();
}
