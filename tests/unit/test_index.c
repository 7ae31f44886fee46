/*
 * test_index.c -- secondary indexes end to end through the command layer:
 * createIndexes/listIndexes/dropIndexes validation and replies, keygen
 * rules (multikey, parallel arrays, sparse, partial, unique builds), the
 * seed's attribute-pattern query reading one index key, and a randomized
 * check that every index (and hint) returns what the collection scan does.
 */
#include "tt.h"
#include "tt_embedded.h"

#include "commands/commands_private.h"
#include "common/mem.h"
#include "query/keygen.h"
#include "query/plan.h"
#include "query/planner_ttl.h"

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


static int
run_code(const char *json)
{
	int rc;
	bson_t *r = run(json, &rc);

	tt_free_reply(r);
	return rc;
}



static void
test_create_list_drop(void)
{
	int rc;
	bson_t *r;

	run_code("{\"drop\": \"c1\"}");
	r = run("{\"createIndexes\": \"c1\", \"indexes\": [{\"key\": {\"a\": 1}, \"name\": \"a_1\"}]}", &rc);
	TT_EQ_INT(rc, 0);
	TT_EQ_INT(tt_get_i64(r, "numIndexesBefore"), 1);
	TT_EQ_INT(tt_get_i64(r, "numIndexesAfter"), 2);
	TT_EQ_INT(tt_get_i64(r, "createdCollectionAutomatically"), 1);
	tt_free_reply(r);
	r = run("{\"createIndexes\": \"c1\", \"indexes\": [{\"key\": {\"a\": 1}, \"name\": \"a_1\"}]}", &rc);
	TT_EQ_INT(rc, 0);
	TT_EQ_STR(tt_get_str(r, "note"), "all indexes already exist");
	tt_free_reply(r);
	TT_EQ_INT(run_code("{\"createIndexes\": \"c1\", \"indexes\": [{\"key\": {\"a\": -1}, \"name\": \"a_1\"}]}"), 86);
	TT_EQ_INT(run_code("{\"createIndexes\": \"c1\", \"indexes\": [{\"key\": {\"a\": 1}, \"name\": \"x\"}]}"), 85);
	TT_EQ_INT(run_code("{\"createIndexes\": \"c1\", \"indexes\": [{\"key\": {\"a\": 1}, \"name\": \"a_1\", \"unique\": true}]}"), 85);
	TT_EQ_INT(run_code("{\"createIndexes\": \"c1\", \"indexes\": [{\"key\": {}, \"name\": \"e\"}]}"), 67);
	TT_EQ_INT(run_code("{\"createIndexes\": \"c1\", \"indexes\": [{\"key\": {\"a\": 0}, \"name\": \"z\"}]}"), 67);
	TT_EQ_INT(run_code("{\"createIndexes\": \"c1\", \"indexes\": [{\"key\": {\"$a\": 1}, \"name\": \"d\"}]}"), 67);
	TT_EQ_INT(run_code("{\"createIndexes\": \"c1\", \"indexes\": [{\"key\": {\"a\": 1}}]}"), 9);
	TT_EQ_INT(run_code("{\"createIndexes\": \"c1\", \"indexes\": [{\"key\": {\"b\": 1, \"a\": \"2d\"}, \"name\": \"t\"}]}"), 16801);
	TT_EQ_INT(run_code("{\"createIndexes\": \"c1\", \"indexes\": [{\"key\": {\"a\": \"foo\"}, \"name\": \"t\"}]}"), 67);
	TT_EQ_INT(run_code("{\"createIndexes\": \"c1\", \"indexes\": [{\"key\": {\"b\": 1}, \"name\": \"b\", \"bogus\": 1}]}"), 197);
	TT_EQ_INT(run_code("{\"createIndexes\": \"c1\", \"indexes\": []}"), 2);
	r = run("{\"listIndexes\": \"c1\"}", &rc);
	TT_EQ_INT(rc, 0);
	TT_EQ_STR(tt_get_str(r, "cursor.firstBatch.1.name"), "a_1");
	TT_EQ_INT(tt_get_i64(r, "cursor.firstBatch.1.v"), 2);
	TT_EQ_STR(tt_get_str(r, "cursor.ns"), "test.$cmd.listIndexes.c1");
	tt_free_reply(r);
	TT_EQ_INT(run_code("{\"dropIndexes\": \"c1\", \"index\": \"_id_\"}"), 72);
	TT_EQ_INT(run_code("{\"dropIndexes\": \"c1\", \"index\": \"nope\"}"), 27);
	TT_EQ_INT(run_code("{\"dropIndexes\": \"c1\", \"index\": {\"zz\": 1}}"), 27);
	r = run("{\"dropIndexes\": \"c1\", \"index\": {\"a\": 1}}", &rc);
	TT_EQ_INT(rc, 0);
	TT_EQ_INT(tt_get_i64(r, "nIndexesWas"), 2);
	tt_free_reply(r);
	TT_EQ_INT(run_code("{\"listIndexes\": \"nosuch\"}"), 26);
	TT_EQ_INT(run_code("{\"dropIndexes\": \"nosuch\", \"index\": \"*\"}"), 26);
}

static const char *
errmsg_of(const char *json, int *code)
{
	static char buf[1024];
	bson_t *r = run(json, code);

	bson_strncpy(buf, tt_get_str(r, "errmsg"), sizeof(buf));
	tt_free_reply(r);
	return buf;
}

/* mongod's framing of spec errors (codes and messages as mongod answers). */
static void
test_spec_messages(void)
{
	static const struct {
		const char *spec;
		int code;
		const char *msg;
	} cases[] = {
		{"{\"key\": {\"z\": 0}, \"name\": \"z_0\"}", 67,
		 "Error in specification { key: { z: 0 }, name: \"z_0\" } :: caused by :: Values in the index key pattern cannot be 0."},
		{"{\"key\": {\"\": 1}, \"name\": \"ef\"}", 67,
		 "Error in specification { key: { : 1 }, name: \"ef\" } :: caused by :: Index keys cannot be an empty field."},
		{"{\"key\": {\"$x\": 1}, \"name\": \"dx\"}", 67,
		 "Error in specification { key: { $x: 1 }, name: \"dx\" } :: caused by :: Index key contains an illegal field name: field name starts with '$'."},
		{"{\"key\": {\"u\": 1}, \"bogus\": true, \"name\": \"u_1\"}", 197,
		 "Error in specification { key: { u: 1 }, bogus: true, name: \"u_1\" } :: caused by :: The field 'bogus' is not valid for an index specification. Specification: { key: { u: 1 }, bogus: true, name: \"u_1\" }"},
		{"{\"key\": {\"n\": 1}, \"name\": \"\"}", 67,
		 "Error in specification { key: { n: 1 }, name: \"\", v: 2 } :: caused by :: index name cannot be empty"},
		{"{\"key\": {\"s\": 1}, \"name\": \"*\"}", 2, "The index name '*' is not valid."},
		{"{\"key\": {\"_id\": -1}, \"name\": \"_id_-1\"}", 2,
		 "The field 'key' for an _id index must be {_id: 1}, but got { _id: -1 }"},
		{"{\"key\": {\"_id\": 1}, \"name\": \"_id_\", \"sparse\": true}", 197,
		 "The field 'sparse' is not valid for an _id index specification. Specification: { key: { _id: 1 }, name: \"_id_\", sparse: true, v: 2 }"},
		{"{\"key\": {\"w\": 1}, \"expireAfterSeconds\": -1, \"name\": \"w_1\"}", 67,
		 ". Index spec: { key: { w: 1 }, expireAfterSeconds: -1, name: \"w_1\" } :: caused by :: TTL index 'expireAfterSeconds' option cannot be less than 0"},
		{"{\"key\": {\"w\": 1, \"a\": 1}, \"expireAfterSeconds\": 10, \"name\": \"w_1_a_1\"}", 67,
		 "TTL indexes are single-field indexes, compound indexes do not support TTL. Index spec: { key: { w: 1, a: 1 }, expireAfterSeconds: 10, name: \"w_1_a_1\" }"},
		{"{\"key\": {\"p\": 1}, \"sparse\": true, \"partialFilterExpression\": {\"a\": 1}, \"name\": \"p_1\"}", 67,
		 "Error in specification { key: { p: 1 }, sparse: true, partialFilterExpression: { a: 1 }, name: \"p_1\", v: 2 } :: caused by :: cannot mix \"partialFilterExpression\" and \"sparse\" options"},
		{"{\"key\": {\"k\": 1}, \"name\": \"k\", \"partialFilterExpression\": {\"a\": {\"$ne\": 1}}}", 67,
		 "Error in specification { key: { k: 1 }, name: \"k\", partialFilterExpression: { a: { $ne: 1 } }, v: 2 } :: caused by :: Expression not supported in partial index: $not\n    a $eq 1\n"},
		{"{\"key\": {\"k\": 1}, \"name\": \"k\", \"partialFilterExpression\": {\"a\": {\"$exists\": false}}}", 67,
		 "Error in specification { key: { k: 1 }, name: \"k\", partialFilterExpression: { a: { $exists: false } }, v: 2 } :: caused by :: Expression not supported in partial index: $not\n    a exists\n"},
	};
	size_t i;
	int code;
	bson_t *r;

	run_code("{\"drop\": \"m\"}");
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *cmd = bson_strdup_printf("{\"createIndexes\": \"m\", \"indexes\": [%s]}", cases[i].spec);
		const char *msg = errmsg_of(cmd, &code);
		TT_EQ_INT(code, cases[i].code);
		TT_EQ_STR(msg, cases[i].msg);
		bson_free(cmd);
	}
	/* nothing above created the collection */
	TT_EQ_INT(run_code("{\"listIndexes\": \"m\"}"), 26);
	/* the _id index under another name already exists */
	r = run("{\"createIndexes\": \"m\", \"indexes\": [{\"key\": {\"_id\": 1}, \"name\": \"myid\"}]}", &code);
	TT_EQ_INT(code, 0);
	TT_EQ_STR(tt_get_str(r, "note"), "all indexes already exist");
	tt_free_reply(r);
	/* TTL seconds are stored as int32; other TTLs conflict (85) */
	TT_EQ_INT(run_code("{\"createIndexes\": \"m\", \"indexes\": [{\"key\": {\"t\": 1}, \"name\": \"t_1\", \"expireAfterSeconds\": 86400.7}]}"), 0);
	TT_EQ_STR(errmsg_of("{\"createIndexes\": \"m\", \"indexes\": [{\"key\": {\"t\": 1}, \"name\": \"t_1\", \"expireAfterSeconds\": 60}]}", &code),
	    "An equivalent index already exists with the same name but different options. Requested index: { v: 2, key: { t: 1 }, name: \"t_1\", expireAfterSeconds: 60 }, existing index: { v: 2, key: { t: 1 }, name: \"t_1\", expireAfterSeconds: 86400 }");
	TT_EQ_INT(code, 85);
	/* a bad spec after a good one builds neither */
	TT_EQ_INT(run_code("{\"createIndexes\": \"m\", \"indexes\": [{\"key\": {\"a\": 1}, \"name\": \"a_1\"}, {\"key\": {\"z\": 0}, \"name\": \"z_0\"}]}"), 67);
	r = run("{\"listIndexes\": \"m\"}", &code);
	TT_EQ_STR(tt_get_str(r, "cursor.firstBatch.2.name"), "");
	tt_free_reply(r);
	TT_EQ_STR(errmsg_of("{\"dropIndexes\": \"m\", \"index\": [\"t_1\", \"_id_\"]}", &code), "cannot drop _id index");
	TT_EQ_STR(errmsg_of("{\"dropIndexes\": \"m\", \"index\": [\"t_1\", \"nope\"]}", &code), "index not found with name [nope]");
	TT_EQ_STR(errmsg_of("{\"dropIndexes\": \"nosuch\", \"index\": \"*\"}", &code), "ns not found test.nosuch");
	r = run("{\"listIndexes\": \"m\"}", &code);
	TT_EQ_STR(tt_get_str(r, "cursor.firstBatch.1.name"), "t_1");
	tt_free_reply(r);
}

static void
test_unique_build_and_writes(void)
{
	int rc;
	bson_t *r;

	run_code("{\"drop\": \"u\"}");
	TT_EQ_INT(run_code("{\"insert\": \"u\", \"documents\": [{\"_id\": 1, \"a\": 1}, {\"_id\": 2, \"a\": [2, 1]}]}"), 0);
	{
		int code;
		const char *m = errmsg_of("{\"createIndexes\": \"u\", \"indexes\": [{\"key\": {\"a\": 1}, \"name\": \"a_1\", \"unique\": true}]}", &code);
		TT_EQ_INT(code, 11000);
		TT_ASSERT(strncmp(m, "Index build failed: ", 20) == 0);
		TT_ASSERT(strstr(m, ": Collection test.u ( ") != NULL);
		TT_ASSERT(strstr(m, " ) :: caused by :: E11000 duplicate key error collection: test.u index: a_1 dup key: { a: ") != NULL);
	}
	r = run("{\"listIndexes\": \"u\"}", &rc);
	TT_EQ_STR(tt_get_str(r, "cursor.firstBatch.1.name"), "");
	tt_free_reply(r);
	TT_EQ_INT(run_code("{\"delete\": \"u\", \"deletes\": [{\"q\": {\"_id\": 2}, \"limit\": 1}]}"), 0);
	TT_EQ_INT(run_code("{\"createIndexes\": \"u\", \"indexes\": [{\"key\": {\"a\": 1}, \"name\": \"a_1\", \"unique\": true}]}"), 0);
	r = run("{\"insert\": \"u\", \"documents\": [{\"_id\": 3, \"a\": [5, 1]}]}", &rc);
	TT_EQ_INT(tt_get_i64(r, "writeErrors.0.code"), 11000);
	tt_free_reply(r);
	/* the same value twice in one document is not a duplicate */
	r = run("{\"insert\": \"u\", \"documents\": [{\"_id\": 9, \"a\": [3, 3]}]}", &rc);
	TT_EQ_INT(tt_get_i64(r, "n"), 1);
	tt_free_reply(r);
	/* 64 indexes at most */
	{
		int k, code = 0;
		run_code("{\"drop\": \"many\"}");
		for (k = 0; k < 64 && code == 0; k++) {
			char *c = bson_strdup_printf("{\"createIndexes\": \"many\", \"indexes\": [{\"key\": {\"f%d\": 1}, \"name\": \"f%d\"}]}", k, k);
			code = run_code(c);
			bson_free(c);
		}
		TT_EQ_INT(k, 64);
		TT_EQ_INT(code, 67);
		TT_EQ_STR(errmsg_of("{\"createIndexes\": \"many\", \"indexes\": [{\"key\": {\"g\": 1}, \"name\": \"g\"}]}", &code),
		    "add index fails, too many indexes for test.many key:{ g: 1 }");
	}
	/* parallel arrays */
	TT_EQ_INT(run_code("{\"createIndexes\": \"u\", \"indexes\": [{\"key\": {\"p\": 1, \"q\": 1}, \"name\": \"pq\"}]}"), 0);
	r = run("{\"insert\": \"u\", \"documents\": [{\"_id\": 4, \"p\": [1], \"q\": [2]}]}", &rc);
	TT_EQ_INT(tt_get_i64(r, "writeErrors.0.code"), 171);
	TT_EQ_STR(tt_get_str(r, "writeErrors.0.errmsg"), "cannot index parallel arrays [q] [p]");
	tt_free_reply(r);
}

/* The seed's attribute pattern: one key read for the $elemMatch query. */
static void
test_attribute_pattern_explain(void)
{
	int rc;
	bson_t *r;

	run_code("{\"drop\": \"editions\"}");
	TT_EQ_INT(run_code("{\"insert\": \"editions\", \"documents\": ["
	    "{\"_id\": 1, \"format\": \"audiobook\", \"attributes\": [{\"k\": \"narrator\", \"v\": \"Grace Hopper\"}, {\"k\": \"duration\", \"v\": 540}]},"
	    "{\"_id\": 2, \"format\": \"audiobook\", \"attributes\": [{\"k\": \"narrator\", \"v\": \"Ada Lovelace\"}, {\"k\": \"duration\", \"v\": 300}]},"
	    "{\"_id\": 3, \"format\": \"print\", \"attributes\": [{\"k\": \"binding\", \"v\": \"Grace Hopper\"}, {\"k\": \"narrator\", \"v\": \"x\"}]},"
	    "{\"_id\": 4, \"format\": \"ebook\", \"attributes\": [{\"k\": \"drm\", \"v\": false}]}]}"), 0);
	TT_EQ_INT(run_code("{\"createIndexes\": \"editions\", \"indexes\": [{\"key\": {\"attributes.k\": 1, \"attributes.v\": 1}, \"name\": \"attributes.k_1_attributes.v_1\"}]}"), 0);
	r = run("{\"explain\": {\"find\": \"editions\", \"filter\": {\"attributes\": {\"$elemMatch\": {\"k\": \"narrator\", \"v\": \"Grace Hopper\"}}}}, \"verbosity\": \"executionStats\"}", &rc);
	TT_EQ_INT(rc, 0);
	TT_EQ_STR(tt_get_str(r, "queryPlanner.winningPlan.stage"), "FETCH");
	TT_EQ_STR(tt_get_str(r, "queryPlanner.winningPlan.inputStage.stage"), "IXSCAN");
	TT_EQ_STR(tt_get_str(r, "queryPlanner.winningPlan.inputStage.indexName"), "attributes.k_1_attributes.v_1");
	TT_EQ_INT(tt_get_i64(r, "queryPlanner.winningPlan.inputStage.isMultiKey"), 1);
	TT_EQ_STR(tt_get_str(r, "queryPlanner.winningPlan.inputStage.indexBounds.attributes\\.k.0"), "");
	TT_EQ_INT(tt_get_i64(r, "executionStats.nReturned"), 1);
	TT_EQ_INT(tt_get_i64(r, "executionStats.totalKeysExamined"), 1);
	TT_EQ_INT(tt_get_i64(r, "executionStats.totalDocsExamined"), 1);
	TT_EQ_INT(tt_get_i64(r, "executionStats.executionStages.inputStage.keysExamined"), 1);
	TT_EQ_STR(tt_get_str(r, "explainVersion"), "1");
	tt_free_reply(r);
	/* the same path outside $elemMatch must not compound the bounds */
	r = run("{\"explain\": {\"find\": \"editions\", \"filter\": {\"attributes.k\": \"narrator\", \"attributes.v\": \"Grace Hopper\"}}, \"verbosity\": \"executionStats\"}", &rc);
	TT_EQ_INT(rc, 0);
	TT_EQ_INT(tt_get_i64(r, "executionStats.nReturned"), 2);
	TT_EQ_INT(tt_get_i64(r, "executionStats.totalKeysExamined"), 3);
	tt_free_reply(r);
	/* _id point lookups are EXPRESS */
	r = run("{\"explain\": {\"find\": \"editions\", \"filter\": {\"_id\": 2}}, \"verbosity\": \"executionStats\"}", &rc);
	TT_EQ_STR(tt_get_str(r, "queryPlanner.winningPlan.stage"), "EXPRESS_IXSCAN");
	TT_EQ_INT(tt_get_i64(r, "executionStats.nReturned"), 1);
	tt_free_reply(r);
	/* a bad hint */
	TT_EQ_INT(run_code("{\"find\": \"editions\", \"hint\": \"nope\"}"), 2);
	TT_EQ_INT(run_code("{\"explain\": {\"find\": \"editions\", \"hint\": \"nope\"}}"), 2);
}

static void
test_express_sort_sparse_partial(void)
{
	int rc;
	bson_t *r;

	run_code("{\"drop\": \"e\"}");
	TT_EQ_INT(run_code("{\"insert\": \"e\", \"documents\": [{\"_id\": 1, \"a\": 3, \"b\": 1}, {\"_id\": 2, \"a\": 1, \"b\": 2},"
	    " {\"_id\": 3, \"a\": 2}, {\"_id\": 4, \"c\": 1}, {\"_id\": 5, \"a\": 1, \"b\": 9}]}"), 0);
	TT_EQ_INT(run_code("{\"createIndexes\": \"e\", \"indexes\": [{\"key\": {\"a\": 1, \"b\": 1}, \"name\": \"a_1_b_1\"},"
	    " {\"key\": {\"b\": 1}, \"name\": \"b_1\", \"sparse\": true},"
	    " {\"key\": {\"c\": 1}, \"name\": \"c_1\", \"partialFilterExpression\": {\"c\": {\"$gt\": 0}}}]}"), 0);
	/* limit 1 on a single equality: express */
	r = run("{\"explain\": {\"find\": \"e\", \"filter\": {\"a\": 1}, \"limit\": 1}, \"verbosity\": \"executionStats\"}", &rc);
	TT_EQ_STR(tt_get_str(r, "queryPlanner.winningPlan.stage"), "EXPRESS_IXSCAN");
	TT_EQ_STR(tt_get_str(r, "queryPlanner.winningPlan.keyPattern"), "{ a: 1, b: 1 }");
	TT_EQ_INT(tt_get_i64(r, "executionStats.nReturned"), 1);
	TT_EQ_INT(tt_get_i64(r, "executionStats.totalKeysExamined"), 1);
	tt_free_reply(r);
	/* the same equality as the one member of an $and: still express, as
	 * mongod (it simplifies the $and away) */
	r = run("{\"explain\": {\"find\": \"e\", \"filter\": {\"$and\": [{\"a\": 1}]}, \"limit\": 1}, \"verbosity\": \"executionStats\"}", &rc);
	TT_EQ_STR(tt_get_str(r, "queryPlanner.winningPlan.stage"), "EXPRESS_IXSCAN");
	TT_EQ_INT(tt_get_i64(r, "executionStats.nReturned"), 1);
	TT_EQ_INT(tt_get_i64(r, "executionStats.totalKeysExamined"), 1);
	tt_free_reply(r);
	/* two equalities: not the express shape */
	r = run("{\"explain\": {\"find\": \"e\", \"filter\": {\"a\": 1, \"b\": 2}, \"limit\": 1}, \"verbosity\": \"queryPlanner\"}", &rc);
	TT_ASSERT(strcmp(tt_get_str(r, "queryPlanner.winningPlan.stage"), "EXPRESS_IXSCAN") != 0);
	tt_free_reply(r);
	/* sort satisfied by the index after an equality prefix: no SORT */
	r = run("{\"explain\": {\"find\": \"e\", \"filter\": {\"a\": 1}, \"sort\": {\"b\": -1}}, \"verbosity\": \"executionStats\"}", &rc);
	TT_EQ_STR(tt_get_str(r, "queryPlanner.winningPlan.stage"), "FETCH");
	TT_EQ_STR(tt_get_str(r, "queryPlanner.winningPlan.inputStage.direction"), "backward");
	TT_EQ_STR(tt_get_str(r, "queryPlanner.winningPlan.inputStage.indexBounds.a.0"), "[1, 1]");
	TT_EQ_STR(tt_get_str(r, "queryPlanner.winningPlan.inputStage.indexBounds.b.0"), "[MaxKey, MinKey]");
	TT_EQ_INT(tt_get_i64(r, "executionStats.totalKeysExamined"), 2);
	tt_free_reply(r);
	r = run("{\"find\": \"e\", \"filter\": {\"a\": 1}, \"sort\": {\"b\": -1}}", &rc);
	TT_EQ_INT(tt_get_i64(r, "cursor.firstBatch.0._id"), 5);
	TT_EQ_INT(tt_get_i64(r, "cursor.firstBatch.1._id"), 2);
	tt_free_reply(r);
	/* a range: type-bracketed bounds */
	r = run("{\"explain\": {\"find\": \"e\", \"filter\": {\"a\": {\"$gt\": 1}}}, \"verbosity\": \"queryPlanner\"}", &rc);
	TT_EQ_STR(tt_get_str(r, "queryPlanner.winningPlan.inputStage.indexBounds.a.0"), "(1, inf.0]");
	tt_free_reply(r);
	/* the sparse index is not used where it would miss documents */
	r = run("{\"explain\": {\"find\": \"e\", \"filter\": {\"b\": null}}, \"verbosity\": \"executionStats\"}", &rc);
	TT_EQ_STR(tt_get_str(r, "queryPlanner.winningPlan.stage"), "COLLSCAN");
	TT_EQ_INT(tt_get_i64(r, "executionStats.nReturned"), 2);
	tt_free_reply(r);
	r = run("{\"explain\": {\"find\": \"e\", \"filter\": {\"b\": {\"$gte\": 2}}}, \"verbosity\": \"executionStats\"}", &rc);
	TT_EQ_STR(tt_get_str(r, "queryPlanner.winningPlan.inputStage.indexName"), "b_1");
	TT_EQ_INT(tt_get_i64(r, "executionStats.nReturned"), 2);
	tt_free_reply(r);
	/* the partial index only when the filter implies its filter */
	r = run("{\"explain\": {\"find\": \"e\", \"filter\": {\"c\": {\"$gte\": -5}}}, \"verbosity\": \"queryPlanner\"}", &rc);
	TT_EQ_STR(tt_get_str(r, "queryPlanner.winningPlan.stage"), "COLLSCAN");
	tt_free_reply(r);
	r = run("{\"explain\": {\"find\": \"e\", \"filter\": {\"c\": 1}}, \"verbosity\": \"queryPlanner\"}", &rc);
	TT_EQ_STR(tt_get_str(r, "queryPlanner.winningPlan.inputStage.indexName"), "c_1");
	tt_free_reply(r);
	/* usage counters for $indexStats */
	{
		storage_coll_t *ec = NULL;
		int64_t before, after;
		int k, bi = -1;
		storage_coll_get(engine_storage(eng), "test", "e", &ec, NULL);
		for (k = 0; k < ec->nindexes; k++)
			if (strcmp(ec->indexes[k].name, "b_1") == 0)
				bi = k;
		TT_ASSERT(bi >= 0);
		before = plan_index_ops(ec, &ec->indexes[bi]);
		r = run("{\"find\": \"e\", \"filter\": {\"b\": {\"$gte\": 2}}}", &rc);
		tt_free_reply(r);
		after = plan_index_ops(ec, &ec->indexes[bi]);
		TT_EQ_INT(after, before + 1);
		storage_coll_release(ec);
	}
	/* $in over an index: one scan, the gap between the points costs one key */
	run_code("{\"drop\": \"gap\"}");
	TT_EQ_INT(run_code("{\"insert\": \"gap\", \"documents\": [{\"_id\": 1, \"a\": 1}, {\"_id\": 2, \"a\": 2}, {\"_id\": 3, \"a\": 3}, {\"_id\": 4, \"a\": 4}]}"), 0);
	TT_EQ_INT(run_code("{\"createIndexes\": \"gap\", \"indexes\": [{\"key\": {\"a\": 1}, \"name\": \"a_1\"}]}"), 0);
	r = run("{\"explain\": {\"find\": \"gap\", \"filter\": {\"a\": {\"$in\": [1, 3]}}}, \"verbosity\": \"executionStats\"}", &rc);
	TT_EQ_INT(tt_get_i64(r, "executionStats.nReturned"), 2);
	TT_EQ_INT(tt_get_i64(r, "executionStats.totalKeysExamined"), 3);
	TT_EQ_INT(tt_get_i64(r, "executionStats.totalDocsExamined"), 2);
	TT_EQ_INT(tt_get_i64(r, "executionStats.executionStages.inputStage.seeks"), 2);
	TT_ASSERT(tt_get_str(r, "queryPlanner.winningPlan.filter")[0] == '\0');
	tt_free_reply(r);
	/* the other candidate is a rejected plan */
	r = run("{\"explain\": {\"find\": \"e\", \"filter\": {\"a\": 1, \"b\": {\"$gt\": 0}}}, \"verbosity\": \"queryPlanner\"}", &rc);
	TT_EQ_STR(tt_get_str(r, "queryPlanner.winningPlan.inputStage.indexName"), "a_1_b_1");
	TT_EQ_STR(tt_get_str(r, "queryPlanner.rejectedPlans.0.inputStage.indexName"), "b_1");
	TT_EQ_STR(tt_get_str(r, "queryPlanner.rejectedPlans.0.stage"), "FETCH");
	tt_free_reply(r);
	/* wildcard indexes */
	run_code("{\"drop\": \"w\"}");
	TT_EQ_INT(run_code("{\"insert\": \"w\", \"documents\": [{\"_id\": 1, \"p\": {\"q\": 5}}, {\"_id\": 2, \"p\": [{\"q\": 7}, {\"q\": 5}]},"
	    " {\"_id\": 3, \"p\": 5, \"r\": \"x\"}]}"), 0);
	TT_EQ_INT(run_code("{\"createIndexes\": \"w\", \"indexes\": [{\"key\": {\"$**\": 1}, \"name\": \"$**_1\"}]}"), 0);
	r = run("{\"explain\": {\"find\": \"w\", \"filter\": {\"p.q\": 5}}, \"verbosity\": \"executionStats\"}", &rc);
	TT_EQ_STR(tt_get_str(r, "queryPlanner.winningPlan.inputStage.indexName"), "$**_1");
	TT_EQ_INT(tt_get_i64(r, "queryPlanner.winningPlan.inputStage.keyPattern.$_path"), 1);
	TT_EQ_STR(tt_get_str(r, "queryPlanner.winningPlan.inputStage.indexBounds.$_path.0"), "[\"p.q\", \"p.q\"]");
	TT_EQ_INT(tt_get_i64(r, "executionStats.nReturned"), 2);
	TT_EQ_INT(tt_get_i64(r, "executionStats.totalKeysExamined"), 2);
	tt_free_reply(r);
	TT_EQ_STR(errmsg_of("{\"createIndexes\": \"w\", \"indexes\": [{\"key\": {\"$**\": 1}, \"name\": \"u\", \"unique\": true}]}", &rc),
	    "Error in specification { key: { $**: 1 }, name: \"u\", unique: true, v: 2 } :: caused by :: Index type 'wildcard' does not support the 'unique' option");
	TT_EQ_INT(rc, 67);
	TT_EQ_INT(run_code("{\"createIndexes\": \"w\", \"indexes\": [{\"key\": {\"$**\": 1}, \"name\": \"m\", \"wildcardProjection\": {\"a\": 1, \"b\": 0}}]}"), 31254);
	TT_EQ_INT(run_code("{\"createIndexes\": \"w\", \"indexes\": [{\"key\": {\"a.$**\": 1}, \"name\": \"m\", \"wildcardProjection\": {\"a\": 1}}]}"), 9);
	/* $or: one index per branch */
	r = run("{\"explain\": {\"find\": \"e\", \"filter\": {\"$or\": [{\"a\": 2}, {\"b\": {\"$gte\": 9}}]}}, \"verbosity\": \"executionStats\"}", &rc);
	TT_EQ_STR(tt_get_str(r, "queryPlanner.winningPlan.stage"), "FETCH");
	TT_EQ_STR(tt_get_str(r, "queryPlanner.winningPlan.inputStage.stage"), "OR");
	TT_EQ_STR(tt_get_str(r, "queryPlanner.winningPlan.inputStage.inputStages.0.indexName"), "a_1_b_1");
	TT_EQ_STR(tt_get_str(r, "queryPlanner.winningPlan.inputStage.inputStages.1.indexName"), "b_1");
	TT_EQ_INT(tt_get_i64(r, "executionStats.nReturned"), 2);
	TT_EQ_INT(tt_get_i64(r, "executionStats.totalKeysExamined"), 2);
	tt_free_reply(r);
	/* a branch without an index: the whole $or scans the collection */
	r = run("{\"explain\": {\"find\": \"e\", \"filter\": {\"$or\": [{\"a\": 2}, {\"zz\": 1}]}}, \"verbosity\": \"executionStats\"}", &rc);
	TT_EQ_STR(tt_get_str(r, "queryPlanner.winningPlan.stage"), "COLLSCAN");
	TT_EQ_INT(tt_get_i64(r, "executionStats.nReturned"), 1);
	tt_free_reply(r);
	/* count and delete explain wrap the plan */
	r = run("{\"explain\": {\"count\": \"e\", \"query\": {\"a\": 1}}, \"verbosity\": \"executionStats\"}", &rc);
	TT_EQ_INT(rc, 0);
	TT_EQ_STR(tt_get_str(r, "queryPlanner.winningPlan.stage"), "COUNT");
	TT_EQ_INT(tt_get_i64(r, "executionStats.executionStages.nCounted"), 2);
	tt_free_reply(r);
	r = run("{\"explain\": {\"delete\": \"e\", \"deletes\": [{\"q\": {\"a\": 1}, \"limit\": 0}]}, \"verbosity\": \"executionStats\"}", &rc);
	TT_EQ_INT(rc, 0);
	TT_EQ_STR(tt_get_str(r, "queryPlanner.winningPlan.stage"), "DELETE");
	TT_EQ_INT(tt_get_i64(r, "executionStats.executionStages.nWouldDelete"), 2);
	tt_free_reply(r);
	r = run("{\"explain\": {\"count\": \"e\"}, \"verbosity\": \"executionStats\"}", &rc);
	TT_EQ_STR(tt_get_str(r, "queryPlanner.winningPlan.stage"), "RECORD_STORE_FAST_COUNT");
	TT_EQ_INT(tt_get_i64(r, "executionStats.executionStages.nCounted"), 5);
	TT_EQ_INT(tt_get_i64(r, "executionStats.totalDocsExamined"), 0);
	tt_free_reply(r);
	r = run("{\"count\": \"e\", \"query\": {\"a\": 1}}", &rc);
	TT_EQ_INT(tt_get_i64(r, "n"), 2);
	tt_free_reply(r);
	/* hidden indexes: not planned, not hintable */
	TT_EQ_INT(run_code("{\"createIndexes\": \"e\", \"indexes\": [{\"key\": {\"d\": 1}, \"name\": \"d_1\", \"hidden\": true}]}"), 0);
	TT_EQ_INT(run_code("{\"explain\": {\"find\": \"e\", \"filter\": {\"d\": 1}, \"hint\": \"d_1\"}}"), 2);
	/* _id ranges go through the _id index */
	r = run("{\"find\": \"e\", \"filter\": {\"_id\": {\"$gt\": 3}}}", &rc);
	TT_EQ_INT(tt_get_i64(r, "cursor.firstBatch.0._id"), 4);
	TT_EQ_INT(tt_get_i64(r, "cursor.firstBatch.1._id"), 5);
	TT_EQ_INT(tt_get_i64(r, "cursor.firstBatch.2._id"), -999);
	tt_free_reply(r);
}

/* cmd_index.c: what cmd_collmod.c calls for collMod's index option */
int cmd_index_coll_mod(cmd_t *c, const char *coll_name, const bson_iter_t *index_opt, int other_mods, int mode,
                       bson_t *reply, terr_t *err);

static int
collmod(const char *index_json, bson_t *reply, const char **msg)
{
	static char buf[512];
	bson_t *opt = tt_json(index_json);
	bson_t holder = BSON_INITIALIZER;
	bson_iter_t it;
	cmd_t c;
	terr_t err = TERR_INIT;
	int rc;

	memset(&c, 0, sizeof(c));
	c.engine = eng;
	c.client = cl;
	c.db = "test";
	BSON_APPEND_DOCUMENT(&holder, "index", opt);
	bson_iter_init_find(&it, &holder, "index");
	bson_init(reply);
	rc = cmd_index_coll_mod(&c, "cm", &it, 0, false, reply, &err);
	bson_strncpy(buf, err.msg ? err.msg : "", sizeof(buf));
	*msg = buf;
	rc = rc == 0 ? 0 : err.code;
	terr_clear(&err);
	bson_destroy(&holder);
	bson_destroy(opt);
	return rc;
}

static bool
tt_has(const bson_t *doc, const char *path)
{
	bson_iter_t f;

	return tt_get(doc, path, &f);
}

static int
tt_get_bool(const bson_t *doc, const char *path)
{
	bson_iter_t f;

	return tt_get(doc, path, &f) ? (int)bson_iter_as_bool(&f) : -1;
}

/* The array at path as tt_array_json */
#define TT_EQ_JSON_AT(doc, path, json) do { bson_iter_t f_; const uint8_t *d_; uint32_t l_; bson_t a_; \
	char *j_; TT_ASSERT(tt_get((doc), (path), &f_) && BSON_ITER_HOLDS_ARRAY(&f_)); \
	bson_iter_array(&f_, &l_, &d_); bson_init_static(&a_, d_, l_); j_ = tt_array_json(&a_); \
	TT_EQ_STR(j_, (json)); bson_free(j_); } while (0)

/* reply's code (0 for ok: 1) and, when msg is given, its errmsg */
static int
run_err(const char *json, char *msg, size_t cap)
{
	int rc, code;
	bson_t *r = run(json, &rc);
	bson_iter_t it;

	code = bson_iter_init_find(&it, r, "code") ? (int)bson_iter_as_int64(&it) : 0;
	if (msg != NULL)
		bson_strncpy(msg, bson_iter_init_find(&it, r, "errmsg") ? bson_iter_utf8(&it, NULL) : "", cap);
	tt_free_reply(r);
	return code;
}

/* collMod's unique conversion (mongod 9.0's coll_mod.cpp): prepareUnique
 * refuses new duplicates and keeps the old ones, unique: true scans first
 * (359 with the violations), dryRun only checks, forceNonUnique goes back. */
static void
test_coll_mod_unique(void)
{
	char msg[512];
	bson_t *r;
	int rc;

	run_code("{\"drop\": \"cu\"}");
	TT_EQ_INT(run_code("{\"insert\": \"cu\", \"documents\": [{\"_id\": 1, \"a\": 1}, {\"_id\": 2, \"a\": 1},"
	    " {\"_id\": 3, \"a\": 2}]}"), 0);
	TT_EQ_INT(run_code("{\"createIndexes\": \"cu\", \"indexes\": [{\"key\": {\"a\": 1}, \"name\": \"a_1\"}]}"), 0);
	TT_EQ_INT(run_err("{\"collMod\": \"cu\", \"index\": {\"keyPattern\": {\"a\": 1}, \"unique\": true}}", msg,
	    sizeof(msg)), 72);
	TT_EQ_STR(msg, "Cannot make index unique with 'prepareUnique=false'. Run collMod to set it first.");
	TT_EQ_INT(run_err("{\"collMod\": \"cu\", \"index\": {\"keyPattern\": {\"a\": 1}, \"unique\": false}}", msg,
	    sizeof(msg)), 2);
	TT_EQ_STR(msg, "Cannot make index non-unique");
	TT_EQ_INT(run_err("{\"collMod\": \"cu\", \"index\": {\"keyPattern\": {\"a\": 1}, \"unique\": \"x\"}}", NULL, 0),
	    14);
	TT_EQ_INT(run_err("{\"collMod\": \"cu\", \"index\": {\"keyPattern\": {\"a\": 1}, \"prepareUnique\": true},"
	    " \"validationLevel\": \"off\"}", msg, sizeof(msg)), 72);
	TT_EQ_STR(msg, "prepareUnique cannot be combined with any other modification.");
	r = run("{\"listCollections\": 1, \"filter\": {\"name\": \"cu\"}}", &rc);
	TT_ASSERT(!tt_has(r, "cursor.firstBatch.0.options.validationLevel"));   /* nothing changed */
	tt_free_reply(r);
	r = run("{\"collMod\": \"cu\", \"index\": {\"keyPattern\": {\"a\": 1}, \"prepareUnique\": true}}", &rc);
	TT_EQ_INT(rc, 0);
	TT_EQ_INT(tt_get_bool(r, "prepareUnique_old"), 0);
	TT_EQ_INT(tt_get_bool(r, "prepareUnique_new"), 1);
	tt_free_reply(r);
	/* new duplicates refused, other keys and the old duplicates kept */
	TT_EQ_INT(run_err("{\"insert\": \"cu\", \"documents\": [{\"_id\": 4, \"a\": 1}]}", NULL, 0), 0);
	r = run("{\"insert\": \"cu\", \"documents\": [{\"_id\": 4, \"a\": 1}]}", &rc);
	TT_EQ_INT(tt_get_i64(r, "writeErrors.0.code"), 11000);
	TT_EQ_STR(tt_get_str(r, "writeErrors.0.errmsg"),
	    "E11000 duplicate key error collection: test.cu index: a_1 dup key: { a: 1 }");
	tt_free_reply(r);
	r = run("{\"update\": \"cu\", \"updates\": [{\"q\": {\"_id\": 3}, \"u\": {\"$set\": {\"a\": 1}}}]}", &rc);
	TT_EQ_INT(tt_get_i64(r, "writeErrors.0.code"), 11000);
	tt_free_reply(r);
	r = run("{\"update\": \"cu\", \"updates\": [{\"q\": {\"_id\": 1}, \"u\": {\"$set\": {\"b\": 1}}}]}", &rc);
	TT_EQ_INT(tt_get_i64(r, "nModified"), 1);
	tt_free_reply(r);
	TT_EQ_INT(run_code("{\"insert\": \"cu\", \"documents\": [{\"_id\": 5, \"a\": 5}]}"), 0);
	/* dry run and the conversion itself see the duplicates */
	TT_EQ_INT(run_err("{\"collMod\": \"cu\", \"index\": {\"keyPattern\": {\"a\": 1}, \"hidden\": true},"
	    " \"dryRun\": true}", msg, sizeof(msg)), 72);
	TT_EQ_STR(msg, "dry run mode requires an index modification with unique: true.");
	TT_EQ_INT(run_err("{\"collMod\": \"cu\", \"validationLevel\": \"off\", \"dryRun\": true}", msg, sizeof(msg)), 72);
	TT_EQ_STR(msg, "dry run mode requires an valid index modification.");
	TT_EQ_INT(run_err("{\"collMod\": \"cu\", \"index\": {\"keyPattern\": {\"a\": 1}, \"unique\": true},"
	    " \"validationLevel\": \"off\", \"dryRun\": true}", msg, sizeof(msg)), 72);
	TT_EQ_STR(msg, "unique: true cannot be combined with any other modification in dry run mode.");
	TT_EQ_INT(run_err("{\"collMod\": \"cu\", \"index\": {\"keyPattern\": {\"a\": 1}, \"unique\": true},"
	    " \"dryRun\": true}", NULL, 0), 359);
	r = run("{\"collMod\": \"cu\", \"index\": {\"name\": \"a_1\", \"unique\": true}}", &rc);
	TT_EQ_INT(tt_get_i64(r, "code"), 359);
	TT_EQ_STR(tt_get_str(r, "codeName"), "CannotConvertIndexToUnique");
	TT_EQ_STR(tt_get_str(r, "errmsg"),
	    "Cannot convert the index to unique. Please resolve conflicting documents before running collMod again.");
	TT_EQ_JSON_AT(r, "violations", "[ { \"ids\" : [ 1, 2 ] } ]");
	tt_free_reply(r);
	TT_EQ_INT(run_code("{\"delete\": \"cu\", \"deletes\": [{\"q\": {\"_id\": 2}, \"limit\": 1}]}"), 0);
	r = run("{\"collMod\": \"cu\", \"index\": {\"keyPattern\": {\"a\": 1}, \"unique\": true}, \"dryRun\": true}", &rc);
	TT_EQ_INT(rc, 0);
	TT_ASSERT(!bson_has_field(r, "unique_new"));
	tt_free_reply(r);
	r = run("{\"listIndexes\": \"cu\"}", &rc);
	TT_EQ_INT(tt_get_bool(r, "cursor.firstBatch.1.prepareUnique"), 1);
	TT_ASSERT(!tt_has(r, "cursor.firstBatch.1.unique"));
	tt_free_reply(r);
	r = run("{\"collMod\": \"cu\", \"index\": {\"keyPattern\": {\"a\": 1}, \"unique\": true}}", &rc);
	TT_EQ_INT(rc, 0);
	TT_EQ_INT(tt_get_bool(r, "unique_new"), 1);
	tt_free_reply(r);
	r = run("{\"listIndexes\": \"cu\"}", &rc);
	TT_EQ_INT(tt_get_bool(r, "cursor.firstBatch.1.unique"), 1);
	TT_ASSERT(!tt_has(r, "cursor.firstBatch.1.prepareUnique"));
	tt_free_reply(r);
	r = run("{\"insert\": \"cu\", \"documents\": [{\"_id\": 6, \"a\": 5}]}", &rc);
	TT_EQ_INT(tt_get_i64(r, "writeErrors.0.code"), 11000);
	tt_free_reply(r);
	/* the converted index still answers queries (its keys end with the RecordId) */
	r = run("{\"find\": \"cu\", \"filter\": {\"a\": {\"$gte\": 1}}, \"hint\": \"a_1\"}", &rc);
	TT_EQ_INT(tt_get_i64(r, "cursor.firstBatch.0._id"), 1);
	TT_EQ_INT(tt_get_i64(r, "cursor.firstBatch.1._id"), 3);
	TT_EQ_INT(tt_get_i64(r, "cursor.firstBatch.2._id"), 5);
	TT_ASSERT(!tt_has(r, "cursor.firstBatch.3"));
	tt_free_reply(r);
	r = run("{\"find\": \"cu\", \"filter\": {\"a\": 5}, \"hint\": \"a_1\"}", &rc);
	TT_EQ_INT(tt_get_i64(r, "cursor.firstBatch.0._id"), 5);
	TT_ASSERT(!tt_has(r, "cursor.firstBatch.1"));
	tt_free_reply(r);
	/* covered from its keys (the values and their types rebuilt from the entries) */
	r = run("{\"find\": \"cu\", \"filter\": {\"a\": {\"$gte\": 2}}, \"projection\": {\"_id\": 0, \"a\": 1},"
	    " \"hint\": \"a_1\"}", &rc);
	TT_EQ_JSON_AT(r, "cursor.firstBatch", "[ { \"a\" : 2 }, { \"a\" : 5 } ]");
	tt_free_reply(r);
	r = run("{\"explain\": {\"find\": \"cu\", \"filter\": {\"a\": 5}, \"projection\": {\"_id\": 0, \"a\": 1}}}",
	    &rc);
	/* an equality on a unique single-field index: mongod's express path */
	TT_EQ_STR(tt_get_str(r, "queryPlanner.winningPlan.stage"), "EXPRESS_IXSCAN");
	tt_free_reply(r);
	r = run("{\"find\": \"cu\", \"filter\": {\"a\": 5}, \"projection\": {\"_id\": 1}}", &rc);
	TT_EQ_JSON_AT(r, "cursor.firstBatch", "[ { \"_id\" : 5 } ]");
	tt_free_reply(r);
	/* unique again: a no-op; back with forceNonUnique */
	r = run("{\"collMod\": \"cu\", \"index\": {\"keyPattern\": {\"a\": 1}, \"unique\": true}}", &rc);
	TT_EQ_INT(rc, 0);
	TT_ASSERT(!bson_has_field(r, "unique_new"));
	tt_free_reply(r);
	TT_EQ_INT(run_err("{\"collMod\": \"cu\", \"index\": {\"keyPattern\": {\"a\": 1}, \"forceNonUnique\": false}}", msg,
	    sizeof(msg)), 2);
	TT_EQ_STR(msg, "'forceNonUnique: false' is not supported");
	r = run("{\"collMod\": \"cu\", \"index\": {\"keyPattern\": {\"a\": 1}, \"forceNonUnique\": true}}", &rc);
	TT_EQ_INT(rc, 0);
	TT_EQ_INT(tt_get_bool(r, "forceNonUnique_new"), 1);
	tt_free_reply(r);
	TT_EQ_INT(run_err("{\"insert\": \"cu\", \"documents\": [{\"_id\": 6, \"a\": 5}]}", NULL, 0), 0);
	r = run("{\"count\": \"cu\", \"query\": {\"a\": 5}, \"hint\": \"a_1\"}", &rc);
	TT_EQ_INT(tt_get_i64(r, "n"), 2);
	tt_free_reply(r);
	TT_EQ_INT(run_err("{\"createIndexes\": \"cu2\", \"indexes\": [{\"key\": {\"a\": 1}, \"name\": \"a_1\","
	    " \"unique\": true, \"prepareUnique\": true}]}", msg, sizeof(msg)), 67);
	TT_ASSERT(strstr(msg, "cannot create an index with the 'unique' option and the 'prepareUnique' option") != NULL);
	/* prepareUnique given at creation is enforced too; a unique index ignores it */
	run_code("{\"drop\": \"cu\"}");
	TT_EQ_INT(run_code("{\"insert\": \"cu\", \"documents\": [{\"_id\": 1, \"a\": 1, \"b\": 1},"
	    " {\"_id\": 2, \"a\": 1, \"b\": 2}]}"), 0);
	TT_EQ_INT(run_code("{\"createIndexes\": \"cu\", \"indexes\": [{\"key\": {\"a\": 1}, \"name\": \"a_1\","
	    " \"prepareUnique\": true}, {\"key\": {\"b\": 1}, \"name\": \"b_1\", \"unique\": true}]}"), 0);
	r = run("{\"insert\": \"cu\", \"documents\": [{\"_id\": 3, \"a\": 1, \"b\": 3}]}", &rc);
	TT_EQ_INT(tt_get_i64(r, "writeErrors.0.code"), 11000);
	tt_free_reply(r);
	r = run("{\"collMod\": \"cu\", \"index\": {\"name\": \"b_1\", \"prepareUnique\": true}}", &rc);
	TT_EQ_INT(rc, 0);
	TT_ASSERT(!bson_has_field(r, "prepareUnique_new"));
	tt_free_reply(r);
	/* created unique: its entries move to the key+RecordId layout */
	r = run("{\"collMod\": \"cu\", \"index\": {\"name\": \"b_1\", \"forceNonUnique\": true}}", &rc);
	TT_EQ_INT(rc, 0);
	TT_EQ_INT(tt_get_bool(r, "forceNonUnique_new"), 1);
	tt_free_reply(r);
	r = run("{\"listIndexes\": \"cu\"}", &rc);
	TT_EQ_STR(tt_get_str(r, "cursor.firstBatch.2.name"), "b_1");
	TT_ASSERT(!tt_has(r, "cursor.firstBatch.2.unique"));
	tt_free_reply(r);
	TT_EQ_INT(run_err("{\"insert\": \"cu\", \"documents\": [{\"_id\": 9, \"a\": 9, \"b\": 2}]}", NULL, 0), 0);
	r = run("{\"find\": \"cu\", \"filter\": {\"b\": {\"$gte\": 1}}, \"projection\": {\"_id\": 1},"
	    " \"hint\": \"b_1\"}", &rc);
	TT_EQ_JSON_AT(r, "cursor.firstBatch", "[ { \"_id\" : 1 }, { \"_id\" : 2 }, { \"_id\" : 9 } ]");
	tt_free_reply(r);
	TT_EQ_INT(run_err("{\"collMod\": \"cu\", \"index\": {\"name\": \"_id_\", \"forceNonUnique\": true}}", NULL,
	    0), 238);
	r = run("{\"collMod\": \"cu\", \"index\": {\"name\": \"a_1\", \"prepareUnique\": false}}", &rc);
	TT_EQ_INT(rc, 0);
	tt_free_reply(r);
	TT_EQ_INT(run_err("{\"insert\": \"cu\", \"documents\": [{\"_id\": 3, \"a\": 1, \"b\": 3}]}", NULL, 0), 0);
	r = run("{\"insert\": \"cu\", \"documents\": [{\"_id\": 4, \"a\": 1, \"b\": 4}]}", &rc);
	TT_ASSERT(!tt_has(r, "writeErrors"));
	tt_free_reply(r);
	run_code("{\"drop\": \"cu\"}");
}

static void
test_coll_mod_index(void)
{
	bson_t *reply = tm_bson_array_new(1), *r;
	const char *msg;
	int rc;

	run_code("{\"drop\": \"cm\"}");
	TT_EQ_INT(run_code("{\"insert\": \"cm\", \"documents\": [{\"_id\": 1, \"a\": 5}]}"), 0);
	TT_EQ_INT(run_code("{\"createIndexes\": \"cm\", \"indexes\": [{\"key\": {\"a\": 1}, \"name\": \"a_1\"},"
	    " {\"key\": {\"w\": 1}, \"name\": \"w_1\", \"expireAfterSeconds\": 3600}, {\"key\": {\"p\": 1, \"q\": 1}, \"name\": \"pq\"}]}"), 0);
	TT_EQ_INT(collmod("{\"name\": \"a_1\", \"hidden\": true}", reply, &msg), 0);
	TT_EQ_JSON(reply, "{ \"hidden_old\" : false, \"hidden_new\" : true }");
	bson_destroy(reply);
	r = run("{\"explain\": {\"find\": \"cm\", \"filter\": {\"a\": 5}}}", &rc);
	TT_EQ_STR(tt_get_str(r, "queryPlanner.winningPlan.stage"), "COLLSCAN");
	tt_free_reply(r);
	TT_EQ_INT(collmod("{\"name\": \"a_1\", \"hidden\": true}", reply, &msg), 0);
	TT_EQ_JSON(reply, "{ }");
	bson_destroy(reply);
	TT_EQ_INT(collmod("{\"keyPattern\": {\"a\": 1}, \"hidden\": false}", reply, &msg), 0);
	TT_EQ_JSON(reply, "{ \"hidden_old\" : true, \"hidden_new\" : false }");
	bson_destroy(reply);
	r = run("{\"explain\": {\"find\": \"cm\", \"filter\": {\"a\": 5}}, \"verbosity\": \"executionStats\"}", &rc);
	TT_EQ_STR(tt_get_str(r, "queryPlanner.winningPlan.inputStage.stage"), "IXSCAN");
	TT_EQ_INT(tt_get_i64(r, "executionStats.nReturned"), 1);
	tt_free_reply(r);
	TT_EQ_INT(collmod("{\"name\": \"w_1\", \"expireAfterSeconds\": 60}", reply, &msg), 0);
	TT_EQ_JSON(reply, "{ \"expireAfterSeconds_old\" : 3600, \"expireAfterSeconds_new\" : 60 }");
	bson_destroy(reply);
	TT_EQ_INT(collmod("{\"name\": \"a_1\", \"expireAfterSeconds\": 60}", reply, &msg), 0);
	TT_EQ_JSON(reply, "{ \"expireAfterSeconds_new\" : 60 }");
	bson_destroy(reply);
	TT_EQ_INT(collmod("{\"name\": \"_id_\", \"hidden\": true}", reply, &msg), 2);
	TT_EQ_STR(msg, "can't hide _id index");
	bson_destroy(reply);
	TT_EQ_INT(collmod("{\"name\": \"nope\", \"hidden\": true}", reply, &msg), 27);
	TT_EQ_STR(msg, "cannot find index nope for ns test.cm");
	bson_destroy(reply);
	TT_EQ_INT(collmod("{\"hidden\": true}", reply, &msg), 72);
	TT_EQ_STR(msg, "Must specify either index name or key pattern.");
	bson_destroy(reply);
	TT_EQ_INT(collmod("{\"name\": \"a_1\"}", reply, &msg), 72);
	TT_EQ_STR(msg, "no expireAfterSeconds, hidden, unique, or prepareUnique field");
	bson_destroy(reply);
	TT_EQ_INT(collmod("{\"name\": \"a_1\", \"expireAfterSeconds\": -1}", reply, &msg), 72);
	bson_destroy(reply);
	TT_EQ_INT(collmod("{\"name\": \"a_1\", \"expireAfterSeconds\": \"60\"}", reply, &msg), 14);
	TT_EQ_STR(msg, "BSON field 'collMod.index.expireAfterSeconds' is the wrong type 'string', expected types '[long, int, decimal, double]'");
	bson_destroy(reply);
	TT_EQ_INT(collmod("{\"name\": \"pq\", \"expireAfterSeconds\": 60}", reply, &msg), 72);
	TT_EQ_STR(msg, "TTL indexes are single-field indexes, compound indexes do not support TTL");
	bson_destroy(reply);
	TT_EQ_INT(collmod("{\"name\": \"_id_\", \"expireAfterSeconds\": 60}", reply, &msg), 72);
	TT_EQ_STR(msg, "the _id field does not support TTL indexes");
	bson_destroy(reply);
	TT_EQ_INT(collmod("{\"name\": \"w_1\", \"expireAfterSeconds\": {\"$numberLong\": \"2147483648\"}}", reply, &msg), 0);
	TT_EQ_INT(tt_get_i64(reply, "expireAfterSeconds_new"), 2147483647);
	bson_destroy(reply);
	r = run("{\"listIndexes\": \"cm\"}", &rc);
	{
		char *j = bson_as_relaxed_extended_json(r, NULL);
		TT_ASSERT(strstr(j, "\"a_1\"") != NULL);
		TT_ASSERT(strstr(j, "hidden") == NULL);
		bson_free(j);
	}
	tt_free_reply(r);
	bson_free(reply);
}

/* TTL passes remove documents whose date is past expireAfterSeconds. */
static void
test_ttl_pass(void)
{
	terr_t err = TERR_INIT;
	int64_t deleted = 0;
	int rc;
	bson_t *r;

	run_code("{\"drop\": \"ttl\"}");
	TT_EQ_INT(run_code("{\"insert\": \"ttl\", \"documents\": ["
	    "{\"_id\": 1, \"at\": {\"$date\": {\"$numberLong\": \"1000\"}}},"
	    "{\"_id\": 2, \"at\": {\"$date\": {\"$numberLong\": \"100000000\"}}},"
	    "{\"_id\": 3, \"at\": [{\"$date\": {\"$numberLong\": \"99000000\"}}, {\"$date\": {\"$numberLong\": \"5000\"}}]},"
	    "{\"_id\": 4, \"at\": \"not a date\"}, {\"_id\": 5}]}"), 0);
	TT_EQ_INT(run_code("{\"createIndexes\": \"ttl\", \"indexes\": [{\"key\": {\"at\": -1}, \"name\": \"at_-1\", \"expireAfterSeconds\": 60}]}"), 0);
	/* now = 100000 s: cutoff 99940000 ms */
	TT_EQ_INT(ttl_pass(engine_storage(eng), 100000000, &deleted, &err), 0);
	TT_EQ_INT(deleted, 2);
	{
		ttl_stats_t st;
		ttl_stats_get(&st);
		TT_ASSERT(st.passes >= 1);
		TT_ASSERT(st.deleted_documents >= 2);
	}
	r = run("{\"count\": \"ttl\"}", &rc);
	TT_EQ_INT(tt_get_i64(r, "n"), 3);
	tt_free_reply(r);
	{
		ttl_monitor_t *m = NULL;
		TT_EQ_INT(ttl_monitor_start(engine_storage(eng), NULL, NULL, &m, &err), 0);
		ttl_monitor_stop(m);
	}
	terr_clear(&err);
}

/* ---- covered finds and multiKeyPaths -------------------------------------------- */

/* The BSON type of the first batch's document i, field f (0 when absent). */
static int
batch_type(const bson_t *r, int i, const char *f)
{
	char path[64];
	bson_iter_t it, d;

	bson_snprintf(path, sizeof(path), "cursor.firstBatch.%d.%s", i, f);
	if (!bson_iter_init(&it, r) || !bson_iter_find_descendant(&it, path, &d))
		return 0;
	return (int)bson_iter_type(&d);
}

static void
test_covered_and_multikey_paths(void)
{
	static const char *const find =
	    "{\"find\": \"cov\", \"filter\": {\"a\": {\"$gte\": 0}, \"b\": {\"$gte\": 0}}, "
	    "\"projection\": {\"a\": 1, \"b\": 1, \"_id\": 0}, \"sort\": {\"a\": 1}}";
	char *ex = bson_strdup_printf("{\"explain\": %s, \"verbosity\": \"executionStats\"}", find);
	bson_t *r;
	int rc;

	run_code("{\"drop\": \"cov\"}");
	TT_EQ_INT(run_code("{\"insert\": \"cov\", \"documents\": [{\"_id\": 1, \"a\": 1, \"b\": {\"$numberLong\": \"2\"}}, "
	    "{\"_id\": 2, \"a\": 2.5, \"b\": {\"$numberDecimal\": \"1.50\"}}, {\"_id\": 3, \"a\": 3, \"b\": -0.0}]}"), 0);
	TT_EQ_INT(run_code("{\"createIndexes\": \"cov\", \"indexes\": [{\"key\": {\"a\": 1, \"b\": 1}, \"name\": \"a_b\"}]}"), 0);

	/* PROJECTION_COVERED over IXSCAN, nothing fetched */
	r = run(ex, &rc);
	TT_EQ_INT(rc, 0);
	TT_EQ_STR(tt_get_str(r, "queryPlanner.winningPlan.stage"), "PROJECTION_COVERED");
	TT_EQ_STR(tt_get_str(r, "queryPlanner.winningPlan.inputStage.stage"), "IXSCAN");
	TT_EQ_INT(tt_get_i64(r, "executionStats.totalDocsExamined"), 0);
	TT_EQ_INT(tt_get_i64(r, "executionStats.totalKeysExamined"), 3);
	TT_EQ_INT(tt_get_i64(r, "executionStats.nReturned"), 3);
	tt_free_reply(r);

	/* the values come back with their own types */
	r = run(find, &rc);
	TT_EQ_INT(rc, 0);
	TT_EQ_INT(batch_type(r, 0, "a"), BSON_TYPE_INT32);
	TT_EQ_INT(batch_type(r, 0, "b"), BSON_TYPE_INT64);
	TT_EQ_INT(batch_type(r, 1, "a"), BSON_TYPE_DOUBLE);
	TT_EQ_INT(batch_type(r, 1, "b"), BSON_TYPE_DECIMAL128);
	TT_EQ_INT(batch_type(r, 2, "b"), BSON_TYPE_DOUBLE);
	tt_free_reply(r);

	/* an update that changes only a type rewrites the entry's type bits */
	TT_EQ_INT(run_code("{\"update\": \"cov\", \"updates\": [{\"q\": {\"_id\": 1}, \"u\": {\"$set\": {\"b\": 2.0}}}]}"), 0);
	r = run(find, &rc);
	TT_EQ_INT(batch_type(r, 0, "b"), BSON_TYPE_DOUBLE);
	tt_free_reply(r);

	/* multiKeyPaths per field; a not multikey field stays coverable */
	r = run(ex, &rc);
	TT_EQ_INT(tt_get_i64(r, "queryPlanner.winningPlan.inputStage.isMultiKey"), 0);
	tt_free_reply(r);
	TT_EQ_INT(run_code("{\"insert\": \"cov\", \"documents\": [{\"_id\": 4, \"a\": [5, 6], \"b\": 1}]}"), 0);
	r = run(ex, &rc);
	TT_EQ_STR(tt_get_str(r, "queryPlanner.winningPlan.stage"), "PROJECTION_DEFAULT");
	TT_EQ_INT(tt_get_i64(r, "executionStats.totalDocsExamined"), 4);
	tt_free_reply(r);
	r = run("{\"explain\": {\"find\": \"cov\", \"filter\": {\"a\": {\"$gte\": 0}, \"b\": {\"$gte\": 0}}, "
	    "\"projection\": {\"b\": 1, \"_id\": 0}}, \"verbosity\": \"executionStats\"}", &rc);
	TT_EQ_STR(tt_get_str(r, "queryPlanner.winningPlan.stage"), "PROJECTION_COVERED");
	TT_EQ_INT(tt_get_i64(r, "queryPlanner.winningPlan.inputStage.isMultiKey"), 1);
	TT_EQ_STR(tt_get_str(r, "queryPlanner.winningPlan.inputStage.multiKeyPaths.a.0"), "a");
	TT_EQ_INT(tt_get_i64(r, "queryPlanner.winningPlan.inputStage.multiKeyPaths.b.0"), -999);
	TT_EQ_INT(tt_get_i64(r, "executionStats.totalDocsExamined"), 0);
	TT_EQ_INT(tt_get_i64(r, "executionStats.totalKeysExamined"), 5);
	TT_EQ_INT(tt_get_i64(r, "executionStats.nReturned"), 4);   /* each document once */
	tt_free_reply(r);

	/* a build over arrays records the paths too */
	TT_EQ_INT(run_code("{\"insert\": \"cov\", \"documents\": [{\"_id\": 5, \"c\": {\"d\": [1, 2]}}]}"), 0);
	TT_EQ_INT(run_code("{\"createIndexes\": \"cov\", \"indexes\": [{\"key\": {\"c.d\": 1, \"a\": 1}, \"name\": \"cd_a\"}]}"), 0);
	r = run("{\"explain\": {\"find\": \"cov\", \"filter\": {\"c.d\": 1}, \"hint\": \"cd_a\"}}", &rc);
	{
		bson_iter_t it, mk;
		uint32_t len;
		const uint8_t *data;
		bson_t paths;
		char *j;
		TT_ASSERT(bson_iter_init(&it, r) &&
		    bson_iter_find_descendant(&it, "queryPlanner.winningPlan.inputStage.multiKeyPaths", &mk));
		bson_iter_document(&mk, &len, &data);
		TT_ASSERT(bson_init_static(&paths, data, len));
		j = bson_as_relaxed_extended_json(&paths, NULL);
		TT_EQ_STR(j, "{ \"c.d\" : [ \"c.d\" ], \"a\" : [ \"a\" ] }");
		bson_free(j);
	}
	tt_free_reply(r);
	bson_free(ex);
}

/* A build over enough documents to be scanned in two parts (two threads)
 * and merged: every entry there once, duplicates found across the parts,
 * multikey paths from either part. */
static void
test_parallel_build(void)
{
	bson_t *r;
	int rc, i;
	bson_string_t *cmd;

	run_code("{\"drop\": \"big\"}");
	for (i = 0; i < 6000; i += 1000) {
		cmd = bson_string_new("{\"insert\": \"big\", \"documents\": [");
		for (int j = i; j < i + 1000; j++)
			bson_string_append_printf(cmd, "%s{\"_id\": %d, \"v\": %d, \"w\": %d, \"arr\": %s}", j > i ? ", " : "",
			    j, j, j % 7, j == 5500 ? "[1, 2]" : "1");
		bson_string_append(cmd, "]}");
		TT_EQ_INT(run_code(cmd->str), 0);
		bson_string_free(cmd, true);
	}
	TT_EQ_INT(run_code("{\"createIndexes\": \"big\", \"indexes\": [{\"key\": {\"w\": 1, \"v\": -1}, \"name\": \"wv\"}, "
	    "{\"key\": {\"v\": 1}, \"name\": \"v_u\", \"unique\": true}, {\"key\": {\"arr\": 1}, \"name\": \"arr\"}]}"), 0);
	r = run("{\"explain\": {\"find\": \"big\", \"filter\": {\"w\": 3}, \"projection\": {\"_id\": 0, \"w\": 1}, \"hint\": \"wv\"}, "
	    "\"verbosity\": \"executionStats\"}", &rc);
	TT_EQ_INT(tt_get_i64(r, "executionStats.nReturned"), 857);          /* 3, 10, ..., 5994 */
	TT_EQ_INT(tt_get_i64(r, "executionStats.totalKeysExamined"), 857);
	tt_free_reply(r);
	r = run("{\"count\": \"big\", \"query\": {\"v\": {\"$gte\": 0}}, \"hint\": \"v_u\"}", &rc);
	TT_EQ_INT(tt_get_i64(r, "n"), 6000);
	tt_free_reply(r);
	r = run("{\"explain\": {\"find\": \"big\", \"filter\": {\"arr\": 2}}}", &rc);
	TT_EQ_INT(tt_get_i64(r, "queryPlanner.winningPlan.inputStage.isMultiKey"), 1);
	TT_EQ_STR(tt_get_str(r, "queryPlanner.winningPlan.inputStage.multiKeyPaths.arr.0"), "arr");
	tt_free_reply(r);
	/* a duplicate whose two documents fall in different parts */
	TT_EQ_INT(run_code("{\"insert\": \"big\", \"documents\": [{\"_id\": 9000, \"v2\": 17}]}"), 0);
	TT_EQ_INT(run_code("{\"update\": \"big\", \"updates\": [{\"q\": {\"_id\": 17}, \"u\": {\"$set\": {\"v2\": 17}}}]}"), 0);
	r = run("{\"createIndexes\": \"big\", \"indexes\": [{\"key\": {\"v2\": 1}, \"name\": \"v2_u\", \"unique\": true, "
	    "\"partialFilterExpression\": {\"v2\": {\"$exists\": true}}}]}", &rc);
	TT_EQ_INT(rc, 11000);
	TT_ASSERT(strstr(tt_get_str(r, "errmsg"), "dup key: { v2: 17 }") != NULL);
	tt_free_reply(r);
	r = run("{\"listIndexes\": \"big\"}", &rc);
	TT_ASSERT(!tt_get(r, "cursor.firstBatch.4", &(bson_iter_t){0}));
	tt_free_reply(r);
}

/* ---- randomized: every index and hint returns what COLLSCAN returns -------- */

static uint64_t rng = 88172645463325252ull;

static unsigned
rnd(unsigned n)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (unsigned)(rng % n);
}

static bool no_array;
static bool in_elem;   /* rand_value is writing an element of an array */
/* the built-in seeds must reach covered plans often enough to test them;
 * a seed given by hand only reports how often it did */
static int min_covered = 10;

static void
rand_value(bson_t *d, const char *k, int depth)
{
	bson_t sub;

	unsigned kinds = depth >= 2 ? 7 : depth == 1 ? 9 : 9;

	switch (rnd(kinds)) {
	case 0: BSON_APPEND_INT32(d, k, (int32_t)rnd(6)); break;
	case 1: BSON_APPEND_DOUBLE(d, k, rnd(6) + 0.5); break;
	case 2: {
		/* one or two letters, now and then a regex value (which a $regex
		 * with the same pattern and flags matches) */
		char s[3] = {(char)('a' + rnd(4)), rnd(2) ? (char)('a' + rnd(4)) : 0, 0};
		if (rnd(8) == 0)
			BSON_APPEND_REGEX(d, k, "^a", "");
		else
			BSON_APPEND_UTF8(d, k, s);
		break;
	}
	case 3: BSON_APPEND_NULL(d, k); break;
	case 4: BSON_APPEND_BOOL(d, k, rnd(2)); break;
	case 5: BSON_APPEND_INT64(d, k, (int64_t)rnd(6)); break;
	case 6: BSON_APPEND_DATE_TIME(d, k, (int64_t)rnd(4) * 1000); break;
	case 7: {
		int n = (int)rnd(4), i;
		if (no_array) {
			BSON_APPEND_INT32(d, k, 7);
			break;
		}
		if (depth == 1) {
			/* an element of an outer array: now and then an empty
			 * array (its key is [] itself, where a top-level [] is
			 * keyed undefined); inside a document a scalar (two
			 * arrays under a.x and a.y would be parallel: 171) */
			if (n == 0 && in_elem) {
				BSON_APPEND_ARRAY_BEGIN(d, k, &sub);
				bson_append_array_end(d, &sub);
			} else {
				BSON_APPEND_INT32(d, k, 7);
			}
			break;
		}
		BSON_APPEND_ARRAY_BEGIN(d, k, &sub);
		for (i = 0; i < n; i++) {
			char key[4];
			bson_snprintf(key, sizeof(key), "%d", i);
			in_elem = true;
			rand_value(&sub, key, depth + 1);
			in_elem = false;
		}
		bson_append_array_end(d, &sub);
		break;
	}
	default: {
		BSON_APPEND_DOCUMENT_BEGIN(d, k, &sub);
		if (rnd(2))
			rand_value(&sub, "x", depth + 1);
		if (rnd(2))
			rand_value(&sub, "y", depth + 1);
		bson_append_document_end(d, &sub);
	}
	}
}

static char *
rand_operand(void)
{
	switch (rnd(8)) {
	/* arrays: mongod's bounds for an array A are [A, A] and its first
	 * element, or undefined for [] */
	case 7: return rnd(2) ? bson_strdup("[]") : bson_strdup("[[]]");
	case 6: return rnd(2) ? bson_strdup_printf("[%u]", rnd(6)) : bson_strdup_printf("[%u, \"a\"]", rnd(6));
	case 5: return rnd(2) ? bson_strdup_printf("{\"x\": %u}", rnd(6)) : bson_strdup("{}");
	case 0: return bson_strdup_printf("%u", rnd(6));
	case 1: return bson_strdup_printf("%u.5", rnd(6));
	case 2: return bson_strdup_printf("\"%c\"", 'a' + rnd(4));
	case 3: return bson_strdup(rnd(2) ? "true" : "null");
	default: return bson_strdup_printf("{\"$date\": {\"$numberLong\": \"%u\"}}", rnd(4) * 1000);
	}
}

static char *
rand_leaf(const char *path)
{
	static const char *const ops[] = {"$eq", "$gt", "$gte", "$lt", "$lte", "$in", "$ne", "$regex", "$nin",
		"$exists", "$inre", "$mod"};
	static const char *const regexes[] = {
		"{\"$regex\": \"^a\"}", "{\"$regex\": \"^ab\"}", "{\"$regex\": \"b\"}", "{\"$regex\": \"^a.\"}",
		"{\"$regex\": \"^[ab]\"}", "{\"$regex\": \"^a|c\"}", "{\"$regex\": \"^A\", \"$options\": \"i\"}",
		"{\"$regex\": \"^ab?\"}", "{\"$regex\": \"^ab{0}\"}",
	};
	const char *op = ops[rnd(12)];
	char *v = rand_operand(), *s;

	if (strcmp(op, "$mod") == 0) {
		s = bson_strdup_printf("{\"%s\": {\"$mod\": [%u, %u]}}", path, 2 + rnd(2), rnd(2));
	} else if (strcmp(op, "$inre") == 0) {
		/* a $in listing a regex beside a value */
		s = bson_strdup_printf("{\"%s\": {\"$in\": [%s, %s]}}", path, regexes[rnd(9)], v);
	} else if (strcmp(op, "$exists") == 0) {
		s = bson_strdup_printf("{\"%s\": {\"$exists\": %s}}", path, rnd(2) ? "true" : "false");
	} else if (strcmp(op, "$regex") == 0) {
		s = bson_strdup_printf("{\"%s\": %s}", path, regexes[rnd(9)]);
	} else if (strcmp(op, "$in") == 0 || strcmp(op, "$nin") == 0) {
		char *w = rand_operand();
		s = bson_strdup_printf("{\"%s\": {\"%s\": [%s, %s]}}", path, op, v, w);
		bson_free(w);
	} else {
		s = bson_strdup_printf("{\"%s\": {\"%s\": %s}}", path, op, v);
	}
	bson_free(v);
	return s;
}

static char *
rand_filter(void)
{
	static const char *const paths[] = {"a", "b", "a.x", "a.y", "b.x"};
	char *l1 = rand_leaf(paths[rnd(5)]), *l2 = rand_leaf(paths[rnd(5)]), *s;

	switch (rnd(6)) {
	case 5: {
		char *x = rand_operand(), *y = rand_operand();
		s = bson_strdup_printf("{\"a\": {\"$elemMatch\": {\"$gte\": %s, \"$lt\": %s}}}", x, y);
		bson_free(x);
		bson_free(y);
		break;
	}
	case 4: s = bson_strdup_printf("{\"$or\": [%s, %s]}", l1, l2); break;
	case 0: s = bson_strdup(l1); break;
	case 1: s = bson_strdup_printf("{\"$and\": [%s, %s]}", l1, l2); break;
	case 2: {
		char *x = rand_operand(), *y = rand_operand();
		s = bson_strdup_printf("{\"a\": {\"$elemMatch\": {\"x\": {\"$gte\": %s}, \"y\": %s}}}", x, y);
		bson_free(x);
		bson_free(y);
		break;
	}
	default: s = bson_strdup_printf("{\"$and\": [%s, {\"b\": {\"$gt\": %u}}]}", l1, rnd(5)); break;
	}
	bson_free(l1);
	bson_free(l2);
	return s;
}

/* The same through the executor directly, where hint is honoured. */
static char *
ids_plan(const char *filter, const char *hint, const char *sort)
{
	bson_t *f = tt_json(filter), *h = NULL, *so = NULL;
	bson_t hw;
	bson_iter_t hit;
	plan_request_t req;
	plan_exec_t *x = NULL;
	terr_t err = TERR_INIT;
	storage_session_t *ss = client_session(cl, &err);
	char *out = bson_strdup("");
	int ids[2000], n = 0, i, j, rc;
	bson_t doc;

	memset(&req, 0, sizeof(req));
	storage_coll_get(engine_storage(eng), "test", "rnd", &req.coll, NULL);
	if (match_compile(f, NULL, &req.match, &err) != 0)
		goto done;
	if (hint != NULL) {
		char *w = bson_strdup_printf("{\"h\": %s}", hint);
		h = tt_json(w);
		bson_free(w);
		bson_iter_init_find(&hit, h, "h");
		req.hint = bson_iter_value(&hit);
	}
	if (sort != NULL) {
		so = tt_json(sort);
		req.sort = so;
	}
	(void)hw;
	if (plan_exec_new(&req, &x, &err) != 0) {
		bson_free(out);
		out = bson_strdup("ERR");
		goto done;
	}
	while ((rc = plan_exec_next(x, ss, &doc, &err)) == 1 && n < 2000) {
		bson_iter_t d;
		bson_iter_init_find(&d, &doc, "_id");
		ids[n++] = bson_iter_int32(&d);
	}
	if (rc < 0) {
		bson_free(out);
		out = bson_strdup("ERR");
		goto done;
	}
	if (sort == NULL)
		for (i = 1; i < n; i++)
			for (j = i; j > 0 && ids[j - 1] > ids[j]; j--) {
				int t = ids[j];
				ids[j] = ids[j - 1];
				ids[j - 1] = t;
			}
	for (i = 0; i < n; i++) {
		char *o = bson_strdup_printf("%s%d,", out, ids[i]);
		bson_free(out);
		out = o;
	}
done:
	plan_exec_free(x);
	terr_clear(&err);
	bson_destroy(f);
	if (h != NULL)
		bson_destroy(h);
	if (so != NULL)
		bson_destroy(so);
	return out;
}

/* _ids the query returns, as a canonical string. */
static char *
ids_of(const char *filter, const char *hint, const char *sort)
{
	char *cmd = bson_strdup_printf("{\"find\": \"rnd\", \"filter\": %s, \"batchSize\": 100000, \"projection\": {\"_id\": 1}%s%s%s%s}",
	    filter, hint ? ", \"hint\": " : "", hint ? hint : "", sort ? ", \"sort\": " : "", sort ? sort : "");
	int rc;
	bson_t *r = run(cmd, &rc);
	bson_iter_t it, arr;
	char *out = bson_strdup(rc == 0 ? "" : "ERR");
	int ids[2000], n = 0, i, j;

	if (rc == 0 && bson_iter_init(&it, r) && bson_iter_find_descendant(&it, "cursor.firstBatch", &arr) &&
	    bson_iter_recurse(&arr, &it)) {
		while (bson_iter_next(&it) && n < 2000) {
			bson_iter_t d;
			bson_iter_recurse(&it, &d);
			bson_iter_find(&d, "_id");
			ids[n++] = bson_iter_int32(&d);
		}
	}
	if (sort == NULL)
		for (i = 1; i < n; i++)
			for (j = i; j > 0 && ids[j - 1] > ids[j]; j--) {
				int t = ids[j];
				ids[j] = ids[j - 1];
				ids[j - 1] = t;
			}
	for (i = 0; i < n; i++) {
		char *o = bson_strdup_printf("%s%d,", out, ids[i]);
		bson_free(out);
		out = o;
	}
	tt_free_reply(r);
	bson_free(cmd);
	return out;
}

static int
str_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* d without its null fields, and without the documents that leaves empty,
 * at every level, into out (initialised by the caller).  A covered plan
 * answers a missing indexed field as null (mongod copies the key, which
 * holds null for it), so a covered answer equals the scan's once both are
 * stripped. */
static void
strip_nulls(const bson_t *d, bson_t *out)
{
	bson_iter_t f;

	bson_iter_init(&f, d);
	while (bson_iter_next(&f)) {
		if (BSON_ITER_HOLDS_NULL(&f))
			continue;
		if (BSON_ITER_HOLDS_DOCUMENT(&f)) {
			uint32_t len;
			const uint8_t *data;
			bson_t sub, child = BSON_INITIALIZER;
			bson_iter_document(&f, &len, &data);
			bson_init_static(&sub, data, len);
			strip_nulls(&sub, &child);
			if (!bson_empty(&child))
				bson_append_document(out, bson_iter_key(&f), -1, &child);
			bson_destroy(&child);
			continue;
		}
		bson_append_value(out, bson_iter_key(&f), -1, bson_iter_value(&f));
	}
}

/* The documents a projected find returns, each as canonical Extended JSON
 * (types show), sorted: the same multiset whatever the plan (with strip,
 * null fields left out: strip_nulls).  *covered is set when explain shows
 * PROJECTION_COVERED or, for dotted fields, PROJECTION_DEFAULT over IXSCAN
 * with no document examined. */
static char *
docs_of(const char *filter, const char *proj, const char *hint, bool *covered, bool strip)
{
	char *cmd = bson_strdup_printf("{\"find\": \"rnd\", \"filter\": %s, \"batchSize\": 100000, \"projection\": %s%s%s}",
	    filter, proj, hint ? ", \"hint\": " : "", hint ? hint : "");
	char *ex = bson_strdup_printf("{\"explain\": %s, \"verbosity\": \"executionStats\"}", cmd);
	int rc, n = 0;
	bson_t *r = run(cmd, &rc);
	bson_iter_t it, arr;
	char *lines[2000];
	bson_string_t *out = bson_string_new(rc == 0 ? "" : "ERR");

	if (rc == 0 && bson_iter_init(&it, r) && bson_iter_find_descendant(&it, "cursor.firstBatch", &arr) &&
	    bson_iter_recurse(&arr, &it)) {
		while (bson_iter_next(&it) && n < 2000) {
			uint32_t len;
			const uint8_t *data;
			bson_t d0, d = BSON_INITIALIZER;
			bson_iter_t f;
			bson_string_t *line = bson_string_new("");
			char *fields[64];
			int nf = 0;
			bson_iter_document(&it, &len, &data);
			bson_init_static(&d0, data, len);
			if (strip)
				strip_nulls(&d0, &d);
			else
				bson_concat(&d, &d0);
			/* top-level fields sorted: a covered plan gives them in key
			 * order, a fetch in document order */
			bson_iter_init(&f, &d);
			while (bson_iter_next(&f) && nf < 64) {
				bson_t one = BSON_INITIALIZER;
				bson_append_value(&one, bson_iter_key(&f), -1, bson_iter_value(&f));
				fields[nf++] = bson_as_canonical_extended_json(&one, NULL);
				bson_destroy(&one);
			}
			qsort(fields, (size_t)nf, sizeof(char *), str_cmp);
			for (int k = 0; k < nf; k++) {
				bson_string_append(line, fields[k]);
				bson_free(fields[k]);
			}
			bson_destroy(&d);
			lines[n++] = bson_string_free(line, false);
		}
	}
	qsort(lines, (size_t)n, sizeof(char *), str_cmp);
	for (int i = 0; i < n; i++) {
		bson_string_append(out, lines[i]);
		bson_string_append(out, "\n");
		bson_free(lines[i]);
	}
	tt_free_reply(r);
	r = run(ex, &rc);
	*covered = rc == 0 && (strcmp(tt_get_str(r, "queryPlanner.winningPlan.stage"), "PROJECTION_COVERED") == 0 ||
	    (strcmp(tt_get_str(r, "queryPlanner.winningPlan.stage"), "PROJECTION_DEFAULT") == 0 &&
	     strcmp(tt_get_str(r, "queryPlanner.winningPlan.inputStage.stage"), "IXSCAN") == 0));
	if (*covered && tt_get_i64(r, "executionStats.totalDocsExamined") != 0)
		TT_FAIL_("covered %s %s examined documents", filter, proj);
	tt_free_reply(r);
	bson_free(ex);
	bson_free(cmd);
	return bson_string_free(out, false);
}

/* Projections an index of random_round can cover: the results must be the
 * documents the collection scan gives, types included. */
static int
random_projections(const char *f)
{
	static const char *const projs[] = {"{\"b\": 1, \"_id\": 0}", "{\"b\": 1}", "{\"_id\": 1}",
		"{\"a.x\": 1, \"a.y\": 1, \"_id\": 0}", "{\"b\": 1, \"a\": 1, \"_id\": 0}"};
	static const char *const hints[] = {NULL, "\"b_id\"", "\"b_-1_a_1\"", "\"ax_ay\""};
	int ncov = 0;

	for (int p = 0; p < 5; p++) {
		bool cov, cov2;
		char *base = docs_of(f, projs[p], "{\"$natural\": 1}", &cov, false);
		char *sbase = docs_of(f, projs[p], "{\"$natural\": 1}", &cov2, true);
		for (int h = 0; h < 4; h++) {
			char *got = docs_of(f, projs[p], hints[h], &cov, false);
			if (cov) {
				/* a missing field comes back null from the keys */
				bson_free(got);
				got = docs_of(f, projs[p], hints[h], &cov2, true);
			}
			if (strcmp(cov ? sbase : base, got) != 0)
				TT_FAIL_("filter %s projection %s hint %s:\n%s!= scan\n%s", f, projs[p],
				    hints[h] ? hints[h] : "none", got, base);
			ncov += cov;
			bson_free(got);
		}
		bson_free(base);
		bson_free(sbase);
	}
	return ncov;
}

static void
random_round(void)
{
	static const char *const indexes[] = {
		"{\"key\": {\"a\": 1}, \"name\": \"a_1\"}",
		"{\"key\": {\"b\": -1, \"a\": 1}, \"name\": \"b_-1_a_1\"}",
		"{\"key\": {\"a.x\": 1, \"a.y\": 1}, \"name\": \"ax_ay\"}",
		"{\"key\": {\"b.x\": 1}, \"name\": \"bx_sparse\", \"sparse\": true}",
		"{\"key\": {\"a\": 1, \"b\": 1}, \"name\": \"a_b_partial\", \"partialFilterExpression\": {\"b\": {\"$gt\": 2}}}",
		"{\"key\": {\"$**\": 1}, \"name\": \"all\", \"wildcardProjection\": {\"a.x\": 1, \"b\": 1}}",
		"{\"key\": {\"a.$**\": 1}, \"name\": \"a_sub\"}",
		"{\"key\": {\"b\": 1, \"_id\": 1}, \"name\": \"b_id\"}",
		/* b never holds an array: a hashed index on it takes every document */
		"{\"key\": {\"b\": \"hashed\"}, \"name\": \"b_hashed\"}",
	};
	static const char *const hints[] = {"\"a_1\"", "\"b_-1_a_1\"", "\"ax_ay\"", "\"bx_sparse\"", "{\"a\": 1, \"b\": 1}", "{\"$natural\": -1}", "\"all\"", "\"a_sub\"", "\"b_hashed\""};
	const int nindexes = (int)(sizeof(indexes) / sizeof(indexes[0])), nhints = (int)(sizeof(hints) / sizeof(hints[0]));
	int i, h, q, rc, nix = 0, ncov = 0;

	run_code("{\"drop\": \"rnd\"}");
	for (i = 0; i < 300; i++) {
		bson_t *cmd = bson_new(), arr, doc;
		bson_t *reply = tm_bson_array_new(1);
		BSON_APPEND_UTF8(cmd, "insert", "rnd");
		BSON_APPEND_ARRAY_BEGIN(cmd, "documents", &arr);
		BSON_APPEND_DOCUMENT_BEGIN(&arr, "0", &doc);
		BSON_APPEND_INT32(&doc, "_id", i);
		if (rnd(5))
			rand_value(&doc, "a", 0);
		if (rnd(5)) {
			no_array = true;
			rand_value(&doc, "b", 0);
			no_array = false;
		}
		bson_append_document_end(&arr, &doc);
		bson_append_array_end(cmd, &arr);
		rc = engine_run_command(eng, cl, "test", cmd, reply, NULL);
		TT_EQ_INT(rc, 0);
		bson_destroy(cmd);
		tt_free_reply(reply);
		if (i == 150)
			for (h = 0; h < nindexes; h++) {
				char *c = bson_strdup_printf("{\"createIndexes\": \"rnd\", \"indexes\": [%s]}", indexes[h]);
				int code = run_code(c);
				/* parallel arrays may refuse a.x/a.y or a/b: fine, skip */
				TT_EQ_INT(code, 0);
				bson_free(c);
			}
	}
	for (q = 0; q < 300; q++) {
		char *f = rand_filter();
		char *base = ids_of(f, "{\"$natural\": 1}", NULL);
		char *plain = ids_of(f, NULL, NULL);
		if (strcmp(base, plain) != 0)
			TT_FAIL_("filter %s: planned %s != scan %s", f, plain, base);
		for (h = 0; h < nhints; h++) {
			char *hinted = ids_plan(f, hints[h], NULL);
			/* hinted sparse/partial indexes may legitimately miss documents */
			if (h != 3 && h != 4 && strcmp(base, hinted) != 0)
				TT_FAIL_("filter %s hint %s: %s != scan %s", f, hints[h], hinted, base);
			bson_free(hinted);
		}
		{
			char *s1 = ids_of(f, NULL, "{\"b\": -1, \"a\": 1, \"_id\": 1}");
			char *s2 = ids_of(f, "{\"$natural\": 1}", "{\"b\": -1, \"a\": 1, \"_id\": 1}");
			if (strcmp(s1, s2) != 0)
				TT_FAIL_("sorted filter %s: %s != %s", f, s1, s2);
			bson_free(s1);
			bson_free(s2);
		}
		{
			char *e = bson_strdup_printf("{\"explain\": {\"find\": \"rnd\", \"filter\": %s}, \"verbosity\": \"queryPlanner\"}", f);
			bson_t *r = run(e, &rc);
			if (strcmp(tt_get_str(r, "queryPlanner.winningPlan.stage"), "FETCH") == 0)
				nix++;
			tt_free_reply(r);
			bson_free(e);
		}
		if (q % 3 == 0)
			ncov += random_projections(f);
		bson_free(base);
		bson_free(plain);
		bson_free(f);
	}
	fprintf(stderr, "  %d of 300 random filters used an index, %d projected finds were covered (seed %llu)\n",
	    nix, ncov, (unsigned long long)rng);
	TT_ASSERT(nix > 50);
	TT_ASSERT(ncov > min_covered);
	/* updates through an index never revisit a moved document */
	{
		bson_t *r = run("{\"count\": \"rnd\", \"query\": {\"b\": {\"$gte\": 0}}}", &rc);
		int64_t n = tt_get_i64(r, "n");
		tt_free_reply(r);
		TT_ASSERT(n > 0);
		r = run("{\"update\": \"rnd\", \"updates\": [{\"q\": {\"b\": {\"$gte\": 0}}, \"u\": {\"$inc\": {\"b\": 10}}, \"multi\": true}]}", &rc);
		TT_EQ_INT(rc, 0);
		TT_EQ_INT(tt_get_i64(r, "nModified"), n);
		tt_free_reply(r);
		r = run("{\"delete\": \"rnd\", \"deletes\": [{\"q\": {\"b\": {\"$gte\": 10}}, \"limit\": 0}]}", &rc);
		TT_EQ_INT(tt_get_i64(r, "n"), n);
		tt_free_reply(r);
	}
}

/* (a,b) pairs in the order the executor returns them. */
static char *
pairs_plan(const char *filter, const char *sort, bool natural)
{
	bson_t *f = tt_json(filter), *so = tt_json(sort), *h = tt_json("{\"h\": {\"$natural\": 1}}");
	bson_iter_t hit;
	plan_request_t req;
	plan_exec_t *x = NULL;
	terr_t err = TERR_INIT;
	storage_session_t *ss = client_session(cl, &err);
	bson_string_t *out = bson_string_new("");
	bson_t doc;
	int rc;

	memset(&req, 0, sizeof(req));
	storage_coll_get(engine_storage(eng), "test", "srt", &req.coll, NULL);
	if (match_compile(f, NULL, &req.match, &err) != 0)
		abort();
	req.sort = so;
	if (natural) {
		bson_iter_init_find(&hit, h, "h");
		req.hint = bson_iter_value(&hit);
	}
	if (plan_exec_new(&req, &x, &err) == 0) {
		while ((rc = plan_exec_next(x, ss, &doc, &err)) == 1) {
			bson_iter_t k;
			/* only the sort keys: ties may come in any order */
			bson_iter_init(&k, so);
			while (bson_iter_next(&k))
				bson_string_append_printf(out, "%lld:", (long long)tt_get_i64(&doc, bson_iter_key(&k)));
			bson_string_append(out, ",");
		}
		if (rc < 0)
			bson_string_append(out, "ERR");
	} else {
		bson_string_append(out, "ERR");
	}
	plan_exec_free(x);
	terr_clear(&err);
	bson_destroy(f);
	bson_destroy(so);
	bson_destroy(h);
	return bson_string_free(out, false);
}

/* Sorts given by an index (forward and backward) equal blocking sorts. */
static void
test_random_sorted(void)
{
	static const char *const sorts[] = {"{\"a\": 1, \"b\": -1}", "{\"a\": -1, \"b\": 1}", "{\"b\": -1}",
		"{\"b\": 1}", "{\"a\": 1}"};
	int i, q;

	rng = 12345;
	run_code("{\"drop\": \"srt\"}");
	TT_EQ_INT(run_code("{\"createIndexes\": \"srt\", \"indexes\": [{\"key\": {\"a\": 1, \"b\": -1}, \"name\": \"a_1_b_-1\"}]}"), 0);
	for (i = 0; i < 200; i++) {
		char *cmd = bson_strdup_printf("{\"insert\": \"srt\", \"documents\": [{\"_id\": %d, \"a\": %u, \"b\": %u}]}",
		    i, rnd(5), rnd(6));
		TT_EQ_INT(run_code(cmd), 0);
		bson_free(cmd);
	}
	for (q = 0; q < 200; q++) {
		char *f;
		const char *so = sorts[rnd(5)];
		char *p1, *p2;
		switch (rnd(4)) {
		case 0: f = bson_strdup_printf("{\"a\": %u}", rnd(5)); break;
		case 1: f = bson_strdup_printf("{\"a\": {\"$in\": [%u, %u]}, \"b\": {\"$lte\": %u}}", rnd(5), rnd(5), rnd(6)); break;
		case 2: f = bson_strdup_printf("{\"a\": {\"$gte\": %u}, \"b\": {\"$in\": [%u, %u, 9]}}", rnd(5), rnd(6), rnd(6)); break;
		default: f = bson_strdup_printf("{\"a\": %u, \"b\": {\"$gt\": %u, \"$lt\": %u}}", rnd(5), rnd(6), rnd(6)); break;
		}
		p1 = pairs_plan(f, so, false);
		p2 = pairs_plan(f, so, true);
		if (strcmp(p1, p2) != 0)
			TT_FAIL_("filter %s sort %s: index %s != scan %s", f, so, p1, p2);
		bson_free(p1);
		bson_free(p2);
		bson_free(f);
	}
}


/* ---- randomized geo: 2dsphere/2d plans return what the scan returns ----------- */

/* _ids of a find on rgeo, in the order returned ("ERR" on error). */
static char *
geo_ids(const char *filter, const char *hint, bool keep_order)
{
	char *cmd = bson_strdup_printf("{\"find\": \"rgeo\", \"filter\": %s, \"batchSize\": 100000, \"projection\": {\"_id\": 1}%s%s}",
	    filter, hint ? ", \"hint\": " : "", hint ? hint : "");
	int rc, ids[2000], n = 0, i, j;
	bson_t *r = run(cmd, &rc);
	bson_iter_t it, arr;
	bson_string_t *out = bson_string_new(rc == 0 ? "" : "ERR");

	if (rc == 0 && bson_iter_init(&it, r) && bson_iter_find_descendant(&it, "cursor.firstBatch", &arr) &&
	    bson_iter_recurse(&arr, &it))
		while (bson_iter_next(&it) && n < 2000) {
			bson_iter_t d;
			bson_iter_recurse(&it, &d);
			bson_iter_find(&d, "_id");
			ids[n++] = bson_iter_int32(&d);
		}
	if (!keep_order)
		for (i = 1; i < n; i++)
			for (j = i; j > 0 && ids[j - 1] > ids[j]; j--) {
				int t = ids[j];
				ids[j] = ids[j - 1];
				ids[j - 1] = t;
			}
	for (i = 0; i < n; i++)
		bson_string_append_printf(out, "%d,", ids[i]);
	tt_free_reply(r);
	bson_free(cmd);
	return bson_string_free(out, false);
}

static double
rcoord(double lo, double span)
{
	return lo + (double)rnd(100000) / 100000.0 * span;
}

/* A random geo leaf on g (2dsphere) or p (2d). */
static char *
rand_geo_leaf(void)
{
	double x = rcoord(10, 2), y = rcoord(50, 2), w = rcoord(0.05, 0.8), h = rcoord(0.05, 0.8);

	switch (rnd(6)) {
	case 0:
		return bson_strdup_printf("{\"g\": {\"$geoWithin\": {\"$geometry\": {\"type\": \"Polygon\", \"coordinates\": "
		    "[[[%.5f, %.5f], [%.5f, %.5f], [%.5f, %.5f], [%.5f, %.5f], [%.5f, %.5f]]]}}}}",
		    x, y, x + w, y, x + w, y + h, x, y + h, x, y);
	case 1:
		return bson_strdup_printf("{\"g\": {\"$geoWithin\": {\"$centerSphere\": [[%.5f, %.5f], %.6f]}}}", x, y, w / 100);
	case 2:
		return bson_strdup_printf("{\"g\": {\"$geoIntersects\": {\"$geometry\": {\"type\": \"LineString\", "
		    "\"coordinates\": [[%.5f, %.5f], [%.5f, %.5f]]}}}}", x, y, x + w, y + h);
	case 3:
		return bson_strdup_printf("{\"g\": {\"$geoIntersects\": {\"$geometry\": {\"type\": \"Polygon\", \"coordinates\": "
		    "[[[%.5f, %.5f], [%.5f, %.5f], [%.5f, %.5f], [%.5f, %.5f]]]}}}}", x, y, x + w, y, x, y + h, x, y);
	case 4:
		return bson_strdup_printf("{\"p\": {\"$geoWithin\": {\"$box\": [[%.5f, %.5f], [%.5f, %.5f]]}}}", x, y, x + w, y + h);
	default:
		return bson_strdup_printf("{\"g\": {\"$geoWithin\": {\"$box\": [[%.5f, %.5f], [%.5f, %.5f]]}}}", x, y, x + w, y + h);
	}
}

static void
test_random_geo(void)
{
	int i, q, nix = 0;

	rng = 4242;
	run_code("{\"drop\": \"rgeo\"}");
	TT_EQ_INT(run_code("{\"createIndexes\": \"rgeo\", \"indexes\": [{\"key\": {\"g\": \"2dsphere\"}, \"name\": \"g_2dsphere\"}, "
	    "{\"key\": {\"p\": \"2d\"}, \"name\": \"p_2d\"}]}"), 0);
	for (i = 0; i < 300; i++) {
		double x = rcoord(10, 2), y = rcoord(50, 2), d = rcoord(0.001, 0.2);
		char *g, *cmd;
		switch (rnd(6)) {
		case 0:
			g = bson_strdup_printf("{\"type\": \"LineString\", \"coordinates\": [[%.5f, %.5f], [%.5f, %.5f]]}", x, y, x + d, y + d);
			break;
		case 1:
			g = bson_strdup_printf("{\"type\": \"Polygon\", \"coordinates\": [[[%.5f, %.5f], [%.5f, %.5f], [%.5f, %.5f], [%.5f, %.5f]]]}",
			    x, y, x + d, y, x, y + d, x, y);
			break;
		case 2:
			g = bson_strdup_printf("[%.5f, %.5f]", x, y);
			break;
		case 3:
			g = bson_strdup_printf("{\"type\": \"MultiPoint\", \"coordinates\": [[%.5f, %.5f], [%.5f, %.5f]]}", x, y, x + d, y);
			break;
		default:
			g = bson_strdup_printf("{\"type\": \"Point\", \"coordinates\": [%.5f, %.5f]}", x, y);
			break;
		}
		if (rnd(8) != 0)
			cmd = bson_strdup_printf("{\"insert\": \"rgeo\", \"documents\": [{\"_id\": %d, \"a\": %u, \"g\": %s, \"p\": [%.5f, %.5f]}]}",
			    i, rnd(4), g, y - 40, x);
		else
			cmd = bson_strdup_printf("{\"insert\": \"rgeo\", \"documents\": [{\"_id\": %d, \"a\": %u, \"p\": [%.5f, %.5f]}]}", i,
			    rnd(4), y - 40, x);
		TT_EQ_INT(run_code(cmd), 0);
		bson_free(cmd);
		bson_free(g);
	}
	for (q = 0; q < 150; q++) {
		char *leaf = rand_geo_leaf(), *f, *base, *plain;
		switch (rnd(3)) {
		case 0: f = bson_strdup(leaf); break;
		case 1: f = bson_strdup_printf("{\"$and\": [%s, {\"a\": {\"$lte\": %u}}]}", leaf, rnd(4)); break;
		default: f = bson_strdup_printf("{\"$or\": [%s, {\"a\": %u}]}", leaf, rnd(4)); break;
		}
		base = geo_ids(f, "{\"$natural\": 1}", false);
		plain = geo_ids(f, NULL, false);
		if (strcmp(base, plain) != 0)
			TT_FAIL_("geo filter %s: planned %s != scan %s", f, plain, base);
		if (strcmp(base, "ERR") == 0)
			TT_FAIL_("geo filter %s failed", f);
		{
			char *e = bson_strdup_printf("{\"explain\": {\"find\": \"rgeo\", \"filter\": %s}, \"verbosity\": \"queryPlanner\"}", f);
			int rc;
			bson_t *r = run(e, &rc);
			if (strcmp(tt_get_str(r, "queryPlanner.winningPlan.inputStage.stage"), "IXSCAN") == 0)
				nix++;
			tt_free_reply(r);
			bson_free(e);
		}
		bson_free(base);
		bson_free(plain);
		bson_free(f);
		bson_free(leaf);
	}
	TT_ASSERT(nix > 20);
	/* $near over points: the set of $geoWithin $centerSphere (same metres), nearest first */
	for (q = 0; q < 40; q++) {
		double x = rcoord(10, 2), y = rcoord(50, 2), m = rcoord(1000, 40000);
		char *near = bson_strdup_printf("{\"$and\": [{\"g.type\": \"Point\"}, {\"g\": {\"$near\": {\"$geometry\": {\"type\": \"Point\", "
		    "\"coordinates\": [%.5f, %.5f]}, \"$maxDistance\": %.3f}}}]}", x, y, m);
		char *within = bson_strdup_printf("{\"g.type\": \"Point\", \"g\": {\"$geoWithin\": {\"$centerSphere\": [[%.5f, %.5f], %.17g]}}}",
		    x, y, m / 6378100.0);
		char *a = geo_ids(near, NULL, false), *b = geo_ids(within, "{\"$natural\": 1}", false);
		char *n2d = bson_strdup_printf("{\"p\": {\"$near\": [%.5f, %.5f], \"$maxDistance\": %.4f}}", y - 40, x, m / 20000);
		char *w2d = bson_strdup_printf("{\"p\": {\"$geoWithin\": {\"$center\": [[%.5f, %.5f], %.4f]}}}", y - 40, x, m / 20000);
		char *c = geo_ids(n2d, NULL, false), *d = geo_ids(w2d, NULL, false);
		if (strcmp(a, b) != 0)
			TT_FAIL_("near %s: %s != within %s", near, a, b);
		if (strcmp(c, d) != 0)
			TT_FAIL_("2d near %s: %s != within %s", n2d, c, d);
		bson_free(a);
		bson_free(b);
		bson_free(c);
		bson_free(d);
		bson_free(near);
		bson_free(within);
		bson_free(n2d);
		bson_free(w2d);
	}
}

static void
test_random_equivalence(void)
{
	static const uint64_t seeds[] = {1234567ull, 2463534242ull, 0x9E3779B97F4A7C15ull};
	size_t i;
	const char *env = getenv("TAMGA_TEST_SEED");

	if (env != NULL) {
		rng = strtoull(env, NULL, 0);
		min_covered = -1;
		random_round();
		return;
	}
	for (i = 0; i < sizeof(seeds) / sizeof(seeds[0]); i++) {
		rng = seeds[i];
		random_round();
	}
}

int
main(void)
{
	char *dir = tt_tmpdir("index");
	engine_options_t o;
	terr_t err = TERR_INIT;

	memset(&o, 0, sizeof(o));
	o.storage.create = true;
	o.storage.in_memory = true;
	if (engine_open(dir, &o, &eng, &err) != 0) {
		fprintf(stderr, "engine_open: %s\n", err.msg);
		return 1;
	}
	query_keygen_register(engine_storage(eng));
	cl = client_new(eng, NULL);
	TT_RUN(test_create_list_drop);
	TT_RUN(test_spec_messages);
	TT_RUN(test_unique_build_and_writes);
	TT_RUN(test_attribute_pattern_explain);
	TT_RUN(test_express_sort_sparse_partial);
	TT_RUN(test_coll_mod_index);
	TT_RUN(test_coll_mod_unique);
	TT_RUN(test_ttl_pass);
	TT_RUN(test_covered_and_multikey_paths);
	TT_RUN(test_parallel_build);
	TT_RUN(test_random_equivalence);
	TT_RUN(test_random_sorted);
	TT_RUN(test_random_geo);
	client_free(cl);
	engine_close(eng);
	tt_rmdir(dir);
	bson_free(dir);
	return tt_finish();
}
