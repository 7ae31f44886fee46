/*
 * test_covered.c -- covered finds as mongod plans them (issue 23): which
 * projection shapes are answered from index keys alone (PROJECTION_COVERED,
 * or PROJECTION_DEFAULT over IXSCAN for dotted fields; 0 documents
 * examined), which fetch, and what a covered plan returns for a document
 * missing an indexed field (null: mongod's covered projection copies the key,
 * which holds null for it).  One test per shape: compound prefix, unbounded
 * suffix fields, dotted fields, key order with _id, multikey refusals, null
 * predicates, sparse and partial indexes.
 */
#include "tt.h"
#include "tt_embedded.h"

#include "commands/commands_private.h"
#include "common/mem.h"
#include "query/keygen.h"

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

/* The first batch of a find as relaxed Extended JSON (a new string). */
static char *
batch_json(const char *find)
{
	int rc;
	bson_t *r = run(find, &rc);
	bson_iter_t it, b;
	char *out = NULL;

	TT_EQ_INT(rc, 0);
	if (bson_iter_init(&it, r) && bson_iter_find_descendant(&it, "cursor.firstBatch", &b) &&
	    BSON_ITER_HOLDS_ARRAY(&b)) {
		bson_string_t *s = bson_string_new("[ ");
		bson_iter_t d;
		bool first = true;
		bson_iter_recurse(&b, &d);
		while (bson_iter_next(&d)) {
			uint32_t len;
			const uint8_t *data;
			bson_t doc;
			char *j;
			bson_iter_document(&d, &len, &data);
			bson_init_static(&doc, data, len);
			j = bson_as_relaxed_extended_json(&doc, NULL);
			bson_string_append_printf(s, "%s%s", first ? "" : ", ", j);
			bson_free(j);
			first = false;
		}
		bson_string_append(s, " ]");
		out = bson_string_free(s, false);
	}
	tt_free_reply(r);
	return out != NULL ? out : bson_strdup("?");
}

/* explain executionStats of a find; checks the top stage (NULL: any; the
 * name of a projection over a FETCH is not this file's subject), the one
 * under it and the documents examined. */
static void
expect_plan(const char *find, const char *top, const char *input, int64_t docs_examined)
{
	char *ex = bson_strdup_printf("{\"explain\": %s, \"verbosity\": \"executionStats\"}", find);
	int rc;
	bson_t *r = run(ex, &rc);

	TT_EQ_INT(rc, 0);
	if (top != NULL)
		TT_EQ_STR(tt_get_str(r, "queryPlanner.winningPlan.stage"), top);
	TT_EQ_STR(tt_get_str(r, "queryPlanner.winningPlan.inputStage.stage"), input);
	TT_EQ_INT(tt_get_i64(r, "executionStats.totalDocsExamined"), docs_examined);
	tt_free_reply(r);
	bson_free(ex);
}

#define EXPECT_BATCH(find, json)                          \
	do {                                              \
		char *got_ = batch_json(find);            \
		TT_EQ_STR(got_, json);                    \
		bson_free(got_);                          \
	} while (0)

/* The case, mongod's course example: {city: 1, age: 1}, an equality
 * on the prefix, the suffix unbounded.  A document without age comes back
 * with age: null, as from mongod's covered plan. */
static void
test_compound_prefix_unbounded_suffix(void)
{
	static const char *const q =
	    "{\"find\": \"people\", \"filter\": {\"city\": \"Berlin\"}, \"projection\": {\"_id\": 0, \"city\": 1, \"age\": 1}, "
	    "\"sort\": {\"age\": 1}}";

	run_code("{\"drop\": \"people\"}");
	TT_EQ_INT(run_code("{\"insert\": \"people\", \"documents\": [{\"_id\": 1, \"city\": \"Berlin\", \"age\": 30}, "
	    "{\"_id\": 2, \"city\": \"Berlin\"}, {\"_id\": 3, \"city\": \"Berlin\", \"age\": null}, "
	    "{\"_id\": 4, \"city\": \"Paris\", \"age\": 20}, {\"_id\": 5, \"city\": \"Berlin\", \"age\": 25.5}]}"), 0);
	TT_EQ_INT(run_code("{\"createIndexes\": \"people\", \"indexes\": [{\"key\": {\"city\": 1, \"age\": 1}, "
	    "\"name\": \"city_age\"}]}"), 0);
	expect_plan(q, "PROJECTION_COVERED", "IXSCAN", 0);
	EXPECT_BATCH(q, "[ { \"city\" : \"Berlin\", \"age\" : null }, { \"city\" : \"Berlin\", \"age\" : null }, "
	    "{ \"city\" : \"Berlin\", \"age\" : 25.5 }, { \"city\" : \"Berlin\", \"age\" : 30 } ]");
	/* the prefix alone, and the suffix alone */
	expect_plan("{\"find\": \"people\", \"filter\": {\"city\": \"Berlin\"}, \"projection\": {\"_id\": 0, \"city\": 1}}",
	    "PROJECTION_COVERED", "IXSCAN", 0);
	expect_plan("{\"find\": \"people\", \"filter\": {\"city\": \"Berlin\"}, \"projection\": {\"_id\": 0, \"age\": 1}}",
	    "PROJECTION_COVERED", "IXSCAN", 0);
	/* a range on the suffix: the bounds exclude null, the answer is exact */
	EXPECT_BATCH("{\"find\": \"people\", \"filter\": {\"city\": \"Berlin\", \"age\": {\"$gt\": 26}}, "
	    "\"projection\": {\"_id\": 0, \"age\": 1}}", "[ { \"age\" : 30 } ]");
	/* a field outside the index, or _id not in it: fetch */
	expect_plan("{\"find\": \"people\", \"filter\": {\"city\": \"Berlin\"}, \"projection\": {\"city\": 1, \"age\": 1}}",
	    NULL, "FETCH", 4);
	/* an exclusion needs the whole document */
	expect_plan("{\"find\": \"people\", \"filter\": {\"city\": \"Berlin\"}, \"projection\": {\"_id\": 0}}",
	    NULL, "FETCH", 4);
}

/* mongod fetches when a projected field's own predicate tests null: the
 * null key is a null or a missing field, and the answer must say which
 * (jstests cover_null_queries.js).  $ne only spans null: covered.  (mongod
 * also covers {a: null} when the projection leaves a out, {_id: 1} on an
 * {a: 1, _id: 1} index; we still fetch there: the null bounds are never
 * exact here.) */
static void
test_null_predicates_fetch(void)
{
	run_code("{\"drop\": \"nulls\"}");
	TT_EQ_INT(run_code("{\"insert\": \"nulls\", \"documents\": [{\"_id\": 1, \"a\": 1, \"b\": 1}, "
	    "{\"_id\": 2, \"a\": null, \"b\": 1}, {\"_id\": 3, \"b\": 2}, {\"_id\": 4, \"a\": 2}]}"), 0);
	TT_EQ_INT(run_code("{\"createIndexes\": \"nulls\", \"indexes\": [{\"key\": {\"a\": 1, \"_id\": 1}, "
	    "\"name\": \"a_id\"}]}"), 0);
	/* a projected: fetch, and a missing a stays missing */
	EXPECT_BATCH("{\"find\": \"nulls\", \"filter\": {\"a\": null}, \"projection\": {\"_id\": 0, \"a\": 1}}",
	    "[ { \"a\" : null }, { } ]");
	{
		char *ex = bson_strdup("{\"explain\": {\"find\": \"nulls\", \"filter\": {\"a\": {\"$in\": [null, 2]}}, "
		    "\"projection\": {\"_id\": 0, \"a\": 1}}, \"verbosity\": \"executionStats\"}");
		int rc;
		bson_t *r = run(ex, &rc);
		TT_ASSERT(tt_get_i64(r, "executionStats.totalDocsExamined") > 0);
		tt_free_reply(r);
		bson_free(ex);
	}
	/* $ne: 1 spans null without testing it: covered, a missing a is null */
	expect_plan("{\"find\": \"nulls\", \"filter\": {\"a\": {\"$ne\": 1}}, \"projection\": {\"_id\": 0, \"a\": 1}, "
	    "\"hint\": \"a_id\"}", "PROJECTION_COVERED", "IXSCAN", 0);
	EXPECT_BATCH("{\"find\": \"nulls\", \"filter\": {\"a\": {\"$ne\": 1}}, \"projection\": {\"_id\": 0, \"a\": 1}, "
	    "\"hint\": \"a_id\"}", "[ { \"a\" : null }, { \"a\" : null }, { \"a\" : 2 } ]");
}

/* Key-pattern order, _id where the key pattern has it (mongod's covered
 * projection walks the key). */
static void
test_key_order_with_id(void)
{
	run_code("{\"drop\": \"ko\"}");
	TT_EQ_INT(run_code("{\"insert\": \"ko\", \"documents\": [{\"_id\": 7, \"x\": 1, \"y\": \"a\"}]}"), 0);
	TT_EQ_INT(run_code("{\"createIndexes\": \"ko\", \"indexes\": [{\"key\": {\"y\": 1, \"_id\": 1, \"x\": -1}, "
	    "\"name\": \"y_id_x\"}]}"), 0);
	expect_plan("{\"find\": \"ko\", \"filter\": {\"y\": \"a\"}, \"projection\": {\"x\": 1, \"_id\": 1, \"y\": 1}}",
	    "PROJECTION_COVERED", "IXSCAN", 0);
	EXPECT_BATCH("{\"find\": \"ko\", \"filter\": {\"y\": \"a\"}, \"projection\": {\"x\": 1, \"_id\": 1, \"y\": 1}}",
	    "[ { \"y\" : \"a\", \"_id\" : 7, \"x\" : 1 } ]");
	EXPECT_BATCH("{\"find\": \"ko\", \"filter\": {\"y\": \"a\"}, \"projection\": {\"x\": 1, \"_id\": 1}}",
	    "[ { \"_id\" : 7, \"x\" : 1 } ]");
}

/* Dotted fields: mongod's default projection over the keys (no FETCH, no
 * document examined), nested documents rebuilt in key order
 * (jstests projection_dotted_paths.js); a missing leaf is null. */
static void
test_dotted_fields(void)
{
	static const char *const q =
	    "{\"find\": \"dot\", \"filter\": {\"a\": 1}, \"projection\": {\"_id\": 0, \"a\": 1, \"b.c\": 1, \"b.d\": 1, "
	    "\"c\": 1}}";

	run_code("{\"drop\": \"dot\"}");
	TT_EQ_INT(run_code("{\"insert\": \"dot\", \"documents\": [{\"_id\": 1, \"a\": 1, \"b\": {\"c\": 1, \"d\": 1, \"e\": 1}, "
	    "\"c\": 1, \"e\": 1}]}"), 0);
	TT_EQ_INT(run_code("{\"createIndexes\": \"dot\", \"indexes\": [{\"key\": {\"a\": 1, \"b.c\": 1, \"b.d\": 1, \"c\": 1}, "
	    "\"name\": \"abcd\"}]}"), 0);
	expect_plan(q, "PROJECTION_DEFAULT", "IXSCAN", 0);
	EXPECT_BATCH(q, "[ { \"a\" : 1, \"b\" : { \"c\" : 1, \"d\" : 1 }, \"c\" : 1 } ]");
	EXPECT_BATCH("{\"find\": \"dot\", \"filter\": {\"a\": 1}, \"projection\": {\"_id\": 0, \"b.c\": 1, \"c\": 1}}",
	    "[ { \"b\" : { \"c\" : 1 }, \"c\" : 1 } ]");
	/* _id included but not indexed: fetch */
	expect_plan("{\"find\": \"dot\", \"filter\": {\"a\": 1}, \"projection\": {\"a\": 1, \"b.c\": 1}}",
	    "PROJECTION_DEFAULT", "FETCH", 1);
	/* a document without b: its keys hold null for b.c and b.d */
	TT_EQ_INT(run_code("{\"insert\": \"dot\", \"documents\": [{\"_id\": 2, \"a\": 1, \"c\": 2}]}"), 0);
	EXPECT_BATCH("{\"find\": \"dot\", \"filter\": {\"a\": 1}, \"projection\": {\"_id\": 0, \"b.c\": 1, \"c\": 1}, "
	    "\"sort\": {\"c\": 1}}", "[ { \"b\" : { \"c\" : 1 }, \"c\" : 1 }, { \"b\" : { \"c\" : null }, \"c\" : 2 } ]");
	/* an index field and a projected sub-path of it are not the same */
	expect_plan("{\"find\": \"dot\", \"filter\": {\"a\": 1}, \"projection\": {\"_id\": 0, \"b\": 1}}",
	    NULL, "FETCH", 2);
}

/* Multikey: a projected field whose path met an array is never covered
 * (its keys are elements, not the array); the other fields still are. */
static void
test_multikey_refusals(void)
{
	run_code("{\"drop\": \"mk\"}");
	TT_EQ_INT(run_code("{\"insert\": \"mk\", \"documents\": [{\"_id\": 1, \"a\": 1, \"t\": [\"x\", \"y\"], "
	    "\"s\": {\"u\": [1, 2]}}, {\"_id\": 2, \"a\": 2, \"t\": \"z\", \"s\": {\"u\": 3}}]}"), 0);
	TT_EQ_INT(run_code("{\"createIndexes\": \"mk\", \"indexes\": [{\"key\": {\"a\": 1, \"t\": 1}, \"name\": \"a_t\"}, "
	    "{\"key\": {\"a\": 1, \"s.u\": 1}, \"name\": \"a_su\"}]}"), 0);
	expect_plan("{\"find\": \"mk\", \"filter\": {\"a\": {\"$gte\": 1}}, \"projection\": {\"_id\": 0, \"t\": 1}, "
	    "\"hint\": \"a_t\"}", NULL, "FETCH", 2);
	EXPECT_BATCH("{\"find\": \"mk\", \"filter\": {\"a\": {\"$gte\": 1}}, \"projection\": {\"_id\": 0, \"t\": 1}, "
	    "\"hint\": \"a_t\"}", "[ { \"t\" : [ \"x\", \"y\" ] }, { \"t\" : \"z\" } ]");
	expect_plan("{\"find\": \"mk\", \"filter\": {\"a\": {\"$gte\": 1}}, \"projection\": {\"_id\": 0, \"a\": 1}, "
	    "\"hint\": \"a_t\"}", "PROJECTION_COVERED", "IXSCAN", 0);
	/* a multikey component below the top: s.u */
	expect_plan("{\"find\": \"mk\", \"filter\": {\"a\": {\"$gte\": 1}}, \"projection\": {\"_id\": 0, \"s.u\": 1}, "
	    "\"hint\": \"a_su\"}", "PROJECTION_DEFAULT", "FETCH", 2);
	EXPECT_BATCH("{\"find\": \"mk\", \"filter\": {\"a\": {\"$gte\": 1}}, \"projection\": {\"_id\": 0, \"a\": 1}, "
	    "\"hint\": \"a_su\"}", "[ { \"a\" : 1 }, { \"a\" : 2 } ]");
	/* a sort on the multikey field is a blocking sort over documents */
	expect_plan("{\"find\": \"mk\", \"filter\": {\"a\": {\"$gte\": 1}}, \"projection\": {\"_id\": 0, \"a\": 1}, "
	    "\"sort\": {\"t\": 1}, \"hint\": \"a_t\"}", NULL, "SORT", 2);
}

/* Sparse: a one-field sparse index holds no missing field, so its null keys
 * are nulls and even a null test is covered; a compound sparse index keeps
 * documents missing some fields, whose keys hold null.  Partial: used (and
 * covering) only when the filter implies its filter. */
static void
test_sparse_and_partial(void)
{
	run_code("{\"drop\": \"sp\"}");
	TT_EQ_INT(run_code("{\"insert\": \"sp\", \"documents\": [{\"_id\": 1, \"s\": \"x\", \"q\": 5}, {\"_id\": 2, \"s\": null}, "
	    "{\"_id\": 3, \"q\": 1}, {\"_id\": 4, \"s\": \"y\", \"q\": 9}]}"), 0);
	TT_EQ_INT(run_code("{\"createIndexes\": \"sp\", \"indexes\": [{\"key\": {\"s\": 1}, \"name\": \"s_sparse\", "
	    "\"sparse\": true}, {\"key\": {\"q\": 1, \"s\": 1}, \"name\": \"q_s_sparse\", \"sparse\": true}, "
	    "{\"key\": {\"q\": -1}, \"name\": \"q_partial\", \"partialFilterExpression\": {\"q\": {\"$gt\": 2}}}]}"), 0);
	expect_plan("{\"find\": \"sp\", \"filter\": {}, \"projection\": {\"_id\": 0, \"s\": 1}, \"hint\": \"s_sparse\"}",
	    "PROJECTION_COVERED", "IXSCAN", 0);
	EXPECT_BATCH("{\"find\": \"sp\", \"filter\": {}, \"projection\": {\"_id\": 0, \"s\": 1}, \"hint\": \"s_sparse\"}",
	    "[ { \"s\" : null }, { \"s\" : \"x\" }, { \"s\" : \"y\" } ]");
	/* compound sparse, the second field unbounded: null for the missing s */
	expect_plan("{\"find\": \"sp\", \"filter\": {\"q\": {\"$gte\": 1}}, \"projection\": {\"_id\": 0, \"q\": 1, \"s\": 1}, "
	    "\"hint\": \"q_s_sparse\"}", "PROJECTION_COVERED", "IXSCAN", 0);
	EXPECT_BATCH("{\"find\": \"sp\", \"filter\": {\"q\": {\"$gte\": 1}}, \"projection\": {\"_id\": 0, \"q\": 1, \"s\": 1}, "
	    "\"hint\": \"q_s_sparse\"}", "[ { \"q\" : 1, \"s\" : null }, { \"q\" : 5, \"s\" : \"x\" }, "
	    "{ \"q\" : 9, \"s\" : \"y\" } ]");
	/* partial: the filter implies q > 2, the keys answer */
	expect_plan("{\"find\": \"sp\", \"filter\": {\"q\": {\"$gt\": 4}}, \"projection\": {\"_id\": 0, \"q\": 1}, "
	    "\"hint\": \"q_partial\"}", "PROJECTION_COVERED", "IXSCAN", 0);
	EXPECT_BATCH("{\"find\": \"sp\", \"filter\": {\"q\": {\"$gt\": 4}}, \"projection\": {\"_id\": 0, \"q\": 1}, "
	    "\"hint\": \"q_partial\"}", "[ { \"q\" : 9 }, { \"q\" : 5 } ]");
	/* one that does not imply it never picks the partial index */
	{
		int rc;
		bson_t *r = run("{\"explain\": {\"find\": \"sp\", \"filter\": {\"q\": {\"$gt\": 0}}, "
		    "\"projection\": {\"_id\": 0, \"q\": 1}}}", &rc);
		TT_EQ_INT(rc, 0);
		TT_ASSERT(strcmp(tt_get_str(r, "queryPlanner.winningPlan.inputStage.indexName"), "q_partial") != 0);
		tt_free_reply(r);
	}
}

int
main(void)
{
	char *dir = tt_tmpdir("covered");
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
	TT_RUN(test_compound_prefix_unbounded_suffix);
	TT_RUN(test_null_predicates_fetch);
	TT_RUN(test_key_order_with_id);
	TT_RUN(test_dotted_fields);
	TT_RUN(test_multikey_refusals);
	TT_RUN(test_sparse_and_partial);
	client_free(cl);
	engine_close(eng);
	tt_rmdir(dir);
	bson_free(dir);
	return tt_finish();
}
