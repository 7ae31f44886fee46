/*
 * test_hashed.c -- hashed indexes: mongod's hash64 of known values
 * (hasher.cpp's own startup check, the collation case of jstests'
 * index_key_expression), the number squashing rules, keys and validation
 * through createIndexes (31303, 16764, 16766 with nothing half-written),
 * equality and $in planned on the hashed bounds mongod prints, ranges
 * scanning the collection, and $toHashedIndexKey (mongosh's
 * convertShardKeyToHashed).
 */
#include "tt.h"
#include "tt_embedded.h"

#include "bson/collation.h"
#include "expr/hash.h"
#include "query/keygen.h"

static tamga_t *db;

static int64_t
hash_json(const char *json)
{
	bson_t *d = tt_json(json);
	bson_iter_t it;
	int64_t h;

	bson_iter_init(&it, d);
	bson_iter_next(&it);
	h = expr_hash64(bson_iter_value(&it));
	bson_destroy(d);
	return h;
}

static void
test_known_values(void)
{
	/* hasher.cpp: BSON("check" << 42) hashes to -944302157085130861 */
	TT_EQ_INT(hash_json("{\"check\": 42}"), -944302157085130861LL);
	/* numbers hash as the int64 they truncate to */
	TT_EQ_INT(hash_json("{\"x\": {\"$numberLong\": \"42\"}}"), -944302157085130861LL);
	TT_EQ_INT(hash_json("{\"x\": 42.9}"), -944302157085130861LL);
	TT_EQ_INT(hash_json("{\"x\": {\"$numberDecimal\": \"42.0\"}}"), -944302157085130861LL);
	TT_EQ_INT(hash_json("{\"x\": -0.5}"), hash_json("{\"x\": 0}"));
	TT_EQ_INT(hash_json("{\"x\": {\"$numberDouble\": \"NaN\"}}"), hash_json("{\"x\": 0}"));
	TT_EQ_INT(hash_json("{\"x\": {\"$numberDouble\": \"Infinity\"}}"),
	    hash_json("{\"x\": {\"$numberLong\": \"9223372036854775807\"}}"));
	TT_EQ_INT(hash_json("{\"x\": 9223372036854775808.0}"),
	    hash_json("{\"x\": {\"$numberLong\": \"-9223372036854775808\"}}"));
	/* decimals round half to even */
	TT_EQ_INT(hash_json("{\"x\": {\"$numberDecimal\": \"2.5\"}}"), hash_json("{\"x\": 2}"));
	TT_EQ_INT(hash_json("{\"x\": {\"$numberDecimal\": \"3.5\"}}"), hash_json("{\"x\": 4}"));
	/* strings and symbols share a canonical type; null and missing agree */
	TT_ASSERT(hash_json("{\"x\": \"a\"}") != hash_json("{\"x\": \"b\"}"));
	TT_ASSERT(hash_json("{\"x\": null}") != hash_json("{\"x\": 0}"));
	{
		bson_value_t eod = {.value_type = BSON_TYPE_EOD};
		TT_EQ_INT(expr_hash64(&eod), hash_json("{\"x\": null}"));
	}
	/* documents hash their field names and order */
	TT_ASSERT(hash_json("{\"x\": {\"a\": 1, \"b\": 2}}") != hash_json("{\"x\": {\"b\": 2, \"a\": 1}}"));
	TT_EQ_INT(hash_json("{\"x\": {\"a\": 1}}"), hash_json("{\"x\": {\"a\": 1.5}}"));
	TT_ASSERT(hash_json("{\"x\": [1]}") != hash_json("{\"x\": {\"0\": 1}}"));
}

static void
test_collated_hash(void)
{
	/* jstests index_key_expression: {a: "a"} under {locale: "en"} hashes
	 * to 537359449531599826, the hash of mongod's ICU comparison key of
	 * "a", 29 01 05 01 05.  Debian's ICU 72 gives "a" the primary weight
	 * 2a instead (collation data differs between ICU releases), so the
	 * index hashes whatever key the linked ICU makes. */
	bson_t *spec = tt_json("{\"locale\": \"en\"}");
	const coll_t *coll = NULL;
	terr_t err = TERR_INIT;
	bson_value_t v = {.value_type = BSON_TYPE_UTF8}, k = {.value_type = BSON_TYPE_UTF8};
	uint8_t key[64];
	size_t n;

	k.value.v_utf8.str = "\x29\x01\x05\x01\x05";
	k.value.v_utf8.len = 5;
	TT_EQ_INT(expr_hash64(&k), 537359449531599826LL);
	TT_EQ_INT(coll_parse(spec, "collation", &coll, &err), 0);
	v.value.v_utf8.str = "a";
	v.value.v_utf8.len = 1;
	n = coll_sort_key(coll, "a", 1, key, sizeof(key));
	k.value.v_utf8.str = (char *)key;
	k.value.v_utf8.len = (uint32_t)n;
	TT_EQ_INT(keygen_hash_value(&v, coll), expr_hash64(&k));
	TT_EQ_INT(keygen_hash_value(&v, NULL), expr_hash64(&v));
	bson_destroy(spec);
}

static char *
sq(const char *cmd)
{
	return tt_batch_sq(db, "test", cmd);
}

static int
sq_code(const char *cmd, char **msg)
{
	int rc;
	bson_t *r = tt_run_sq(db, "test", cmd, &rc);

	int code = rc == 0 ? 0 : (int)tt_get_i64(r, "code");

	if (msg != NULL)
		*msg = bson_strdup(tt_get_str(r, "errmsg"));
	tt_free_reply(r);
	return code;
}

static void
test_create_validation(void)
{
	char *m = NULL;
	int rc;
	bson_t *r;

	TT_EQ_INT(sq_code("{'createIndexes': 'h', 'indexes': [{'key': {'a': 'hashed', 'b': 'hashed'}, 'name': 'x'}]}", &m),
	    31303);
	TT_EQ_STR(m, "A maximum of one index field is allowed to be hashed but found 2 for 'key' { a: \"hashed\", b: \"hashed\" }");
	bson_free(m);
	TT_EQ_INT(sq_code("{'createIndexes': 'h', 'indexes': [{'key': {'a': 'hashed'}, 'name': 'x', 'unique': true}]}", &m),
	    16764);
	TT_EQ_STR(m, "Currently hashed indexes cannot guarantee uniqueness. Use a regular index.");
	bson_free(m);
	TT_EQ_INT(sq_code("{'createIndexes': 'h', 'indexes': [{'key': {'a': 'hashed', 'b': 'text'}, 'name': 'x'}]}", NULL),
	    67);
	/* arrays already there fail the build, leaving no index */
	TT_EQ_INT(sq_code("{'insert': 'h', 'documents': [{'_id': 1, 'a': {'b': [1]}}]}", NULL), 0);
	TT_EQ_INT(sq_code("{'createIndexes': 'h', 'indexes': [{'key': {'a.b': 'hashed'}, 'name': 'x'}]}", &m), 16766);
	TT_EQ_STR(m, "Error: hashed indexes do not currently support array values. Found array at path: a.b");
	bson_free(m);
	r = tt_run_sq(db, "test", "{'listIndexes': 'h'}", &rc);
	TT_EQ_STR(tt_get_str(r, "cursor.firstBatch.1.name"), "");
	tt_free_reply(r);
	TT_EQ_INT(sq_code("{'drop': 'h'}", NULL), 0);
}

static void
test_keys_and_plans(void)
{
	char *s;
	int rc;
	bson_t *r;
	char want[128];

	TT_EQ_INT(sq_code("{'createIndexes': 'k', 'indexes': [{'key': {'a': 'hashed'}, 'name': 'a_hashed'}]}", NULL), 0);
	TT_EQ_INT(sq_code("{'insert': 'k', 'documents': [{'_id': 1, 'a': 5}, {'_id': 2, 'a': 5.5}, {'_id': 3, 'a': 'x'},"
	    " {'_id': 4}, {'_id': 5, 'a': null}, {'_id': 6, 'a': {'b': 1}}]}", NULL), 0);
	/* an array is refused and nothing is written */
	r = tt_run_sq(db, "test", "{'insert': 'k', 'documents': [{'_id': 7, 'a': [1, 2]}]}", &rc);
	TT_EQ_INT(tt_get_i64(r, "writeErrors.0.code"), 16766);
	TT_EQ_STR(tt_get_str(r, "writeErrors.0.errmsg"),
	    "Error: hashed indexes do not currently support array values. Found array at path: a");
	tt_free_reply(r);
	s = sq("{'find': 'k', 'filter': {'_id': 7}}");
	TT_EQ_STR(s, "[ ]");
	bson_free(s);
	/* 5 and 5.5 share a hash: the fetch filter tells them apart */
	s = sq("{'find': 'k', 'filter': {'a': 5}}");
	TT_EQ_STR(s, "[ { \"_id\" : 1, \"a\" : 5 } ]");
	bson_free(s);
	s = sq("{'find': 'k', 'filter': {'a': {'$in': ['x', 5.5, {'b': 1}]}}, 'sort': {'_id': 1}}");
	TT_EQ_STR(s, "[ { \"_id\" : 2, \"a\" : 5.5 }, { \"_id\" : 3, \"a\" : \"x\" }, { \"_id\" : 6, \"a\" : { \"b\" : 1 } } ]");
	bson_free(s);
	s = sq("{'find': 'k', 'filter': {'a': null}, 'sort': {'_id': 1}}");
	TT_EQ_STR(s, "[ { \"_id\" : 4 }, { \"_id\" : 5, \"a\" : null } ]");
	bson_free(s);
	s = sq("{'find': 'k', 'filter': {'a': {'$gt': 4}}, 'sort': {'_id': 1}}");
	TT_EQ_STR(s, "[ { \"_id\" : 1, \"a\" : 5 }, { \"_id\" : 2, \"a\" : 5.5 } ]");
	bson_free(s);
	/* a projection of the hashed field is never covered */
	s = sq("{'find': 'k', 'filter': {'a': 5}, 'projection': {'a': 1, '_id': 0}}");
	TT_EQ_STR(s, "[ { \"a\" : 5 } ]");
	bson_free(s);
	s = sq("{'distinct': 'k', 'key': 'a', 'hint': {'a': 'hashed'}}");
	bson_free(s);
	r = tt_run_sq(db, "test", "{'distinct': 'k', 'key': 'a', 'hint': {'a': 'hashed'}}", &rc);
	TT_EQ_INT(rc, 0);
	{
		/* the values themselves, not their hashes */
		char *j = bson_as_relaxed_extended_json(r, NULL);
		TT_ASSERT(strstr(j, "\"values\" : [ null, 5, 5.5, \"x\", { \"b\" : 1 } ]") != NULL);
		bson_free(j);
	}
	tt_free_reply(r);

	/* explain: IXSCAN with the hash as a point, the equality kept on FETCH */
	r = tt_run_sq(db, "test", "{'explain': {'find': 'k', 'filter': {'a': 5}}}", &rc);
	TT_EQ_INT(rc, 0);
	TT_EQ_STR(tt_get_str(r, "queryPlanner.winningPlan.stage"), "FETCH");
	TT_EQ_STR(tt_get_str(r, "queryPlanner.winningPlan.inputStage.stage"), "IXSCAN");
	TT_EQ_STR(tt_get_str(r, "queryPlanner.winningPlan.inputStage.indexName"), "a_hashed");
	TT_EQ_STR(tt_get_str(r, "queryPlanner.winningPlan.inputStage.keyPattern.a"), "hashed");
	{
		bson_value_t five = {.value_type = BSON_TYPE_INT32};
		long long h;
		five.value.v_int32 = 5;
		h = (long long)expr_hash64(&five);
		bson_snprintf(want, sizeof(want), "[%lld, %lld]", h, h);
	}
	TT_EQ_STR(tt_get_str(r, "queryPlanner.winningPlan.inputStage.indexBounds.a.0"), want);
	TT_EQ_INT(tt_get_i64(r, "queryPlanner.winningPlan.filter.a.$eq"), 5);
	tt_free_reply(r);
	r = tt_run_sq(db, "test", "{'explain': {'find': 'k', 'filter': {'a': {'$in': [1, 2, 1.5]}}}}", &rc);
	TT_EQ_STR(tt_get_str(r, "queryPlanner.winningPlan.inputStage.stage"), "IXSCAN");
	/* 1 and 1.5 hash alike: two points */
	TT_EQ_STR(tt_get_str(r, "queryPlanner.winningPlan.inputStage.indexBounds.a.2"), "");
	TT_ASSERT(tt_get_str(r, "queryPlanner.winningPlan.inputStage.indexBounds.a.1")[0] == '[');
	tt_free_reply(r);
	r = tt_run_sq(db, "test", "{'explain': {'find': 'k', 'filter': {'a': {'$gt': 4}}}}", &rc);
	TT_EQ_STR(tt_get_str(r, "queryPlanner.winningPlan.stage"), "COLLSCAN");
	tt_free_reply(r);
	/* an update into an array is refused too */
	r = tt_run_sq(db, "test", "{'update': 'k', 'updates': [{'q': {'_id': 1}, 'u': {'$set': {'a': [3]}}}]}", &rc);
	TT_EQ_INT(tt_get_i64(r, "writeErrors.0.code"), 16766);
	tt_free_reply(r);
	s = sq("{'find': 'k', 'filter': {'_id': 1}}");
	TT_EQ_STR(s, "[ { \"_id\" : 1, \"a\" : 5 } ]");
	bson_free(s);
	TT_EQ_INT(sq_code("{'drop': 'k'}", NULL), 0);
}

static void
test_compound_and_sparse(void)
{
	char *s;
	int rc;
	bson_t *r;

	TT_EQ_INT(sq_code("{'createIndexes': 'c', 'indexes': [{'key': {'g': 1, 'a': 'hashed'}, 'name': 'g_1_a_hashed'},"
	    " {'key': {'s': 'hashed'}, 'name': 's_h', 'sparse': true}]}", NULL), 0);
	TT_EQ_INT(sq_code("{'insert': 'c', 'documents': [{'_id': 1, 'g': 1, 'a': 1}, {'_id': 2, 'g': 1, 'a': 2},"
	    " {'_id': 3, 'g': 2, 'a': 1, 's': 1}]}", NULL), 0);
	s = sq("{'find': 'c', 'filter': {'g': 1, 'a': 2}}");
	TT_EQ_STR(s, "[ { \"_id\" : 2, \"g\" : 1, \"a\" : 2 } ]");
	bson_free(s);
	r = tt_run_sq(db, "test", "{'explain': {'find': 'c', 'filter': {'g': 1, 'a': 2}}}", &rc);
	TT_EQ_STR(tt_get_str(r, "queryPlanner.winningPlan.inputStage.indexName"), "g_1_a_hashed");
	TT_EQ_STR(tt_get_str(r, "queryPlanner.winningPlan.inputStage.indexBounds.g.0"), "[1, 1]");
	tt_free_reply(r);
	/* an array on the non-hashed field is refused as well */
	r = tt_run_sq(db, "test", "{'insert': 'c', 'documents': [{'_id': 9, 'g': [1]}]}", &rc);
	TT_EQ_INT(tt_get_i64(r, "writeErrors.0.code"), 16766);
	TT_EQ_STR(tt_get_str(r, "writeErrors.0.errmsg"),
	    "Error: hashed indexes do not currently support array values. Found array at path: g");
	tt_free_reply(r);
	/* the sparse one is not used for null, which it cannot answer */
	r = tt_run_sq(db, "test", "{'explain': {'find': 'c', 'filter': {'s': null}}}", &rc);
	TT_EQ_STR(tt_get_str(r, "queryPlanner.winningPlan.stage"), "COLLSCAN");
	tt_free_reply(r);
	s = sq("{'find': 'c', 'filter': {'s': 1}, 'hint': 's_h'}");
	TT_EQ_STR(s, "[ { \"_id\" : 3, \"g\" : 2, \"a\" : 1, \"s\" : 1 } ]");
	bson_free(s);
	/* {_id: "hashed"}: the classic hashed shard key, a secondary index */
	TT_EQ_INT(sq_code("{'createIndexes': 'c', 'indexes': [{'key': {'_id': 'hashed'}, 'name': '_id_hashed'}]}", NULL), 0);
	s = sq("{'find': 'c', 'filter': {'_id': {'$in': [2, 3]}}, 'hint': '_id_hashed', 'sort': {'_id': 1}, 'projection': {'_id': 1}}");
	TT_EQ_STR(s, "[ { \"_id\" : 2 }, { \"_id\" : 3 } ]");
	bson_free(s);
	TT_EQ_INT(sq_code("{'drop': 'c'}", NULL), 0);
}

static void
test_to_hashed_index_key(void)
{
	int rc;
	bson_t *r = tt_run_sq(db, "test", "{'aggregate': 1, 'pipeline': [{'$documents': [{}]},"
	    " {'$project': {'_id': {'$toHashedIndexKey': {'$literal': 42}}, 'n': {'$toHashedIndexKey': '$nope'},"
	    " 'arr': {'$toHashedIndexKey': [1, 2]}}}], 'cursor': {}}", &rc);
	bson_value_t null_v = {.value_type = BSON_TYPE_NULL};
	bson_iter_t f;

	TT_EQ_INT(rc, 0);
	TT_EQ_INT(tt_get_i64(r, "cursor.firstBatch.0._id"), -944302157085130861LL);
	TT_ASSERT(tt_get(r, "cursor.firstBatch.0._id", &f) && BSON_ITER_HOLDS_INT64(&f));
	TT_EQ_INT(tt_get_i64(r, "cursor.firstBatch.0.n"), expr_hash64(&null_v));
	TT_EQ_INT(tt_get_i64(r, "cursor.firstBatch.0.arr"), hash_json("{\"x\": [1, 2]}"));
	tt_free_reply(r);
}

int
main(void)
{
	char *dir = tt_tmpdir("hashed");

	if ((db = tt_open_new(dir)) == NULL)
		return 1;
	TT_RUN(test_known_values);
	TT_RUN(test_collated_hash);
	TT_RUN(test_create_validation);
	TT_RUN(test_keys_and_plans);
	TT_RUN(test_compound_and_sparse);
	TT_RUN(test_to_hashed_index_key);
	tt_close_rm(db, dir);
	return tt_finish();
}
