/*
 * test_toolbelt.c -- issue 20's tools at their corners: rule names from a
 * validator and from an errInfo, the violation counters, validate finding a
 * missing and an extra index entry (a key generator swapped under the
 * storage layer), query shapes and the $queryStats store's bound, the
 * preview's pages and bad input, inference (unions, required, enum, items,
 * ranges, a discriminator), the profiler's levels, slowms, sampleRate and
 * filter.
 */
#include "tt.h"

#include <string.h>

#include "tt_embedded.h"
#include "query/keygen.h"
#include "query/match.h"
#include "query/match_explain.h"
#include "schema/schema_rules.h"
#include "storage/storage.h"
#include "toolbelt/toolbelt.h"

/* ---- rule names ---------------------------------------------------------------- */

typedef struct names {
	char buf[4096];
} names_t;

static void
collect(void *ctx, const char *name)
{
	names_t *n = ctx;
	size_t l = strlen(n->buf);

	snprintf(n->buf + l, sizeof(n->buf) - l, "%s%s", l ? " " : "", name);
}

static const char *review_validator =
    "{\"$jsonSchema\": {\"bsonType\": \"object\", \"required\": [\"bookId\", \"rating\"], \"title\": \"r\", "
    "\"properties\": {\"bookId\": {\"bsonType\": \"int\"}, \"rating\": {\"bsonType\": \"int\", \"minimum\": 1, "
    "\"maximum\": 5}, \"customer\": {\"bsonType\": \"object\", \"required\": [\"name\"], \"properties\": "
    "{\"name\": {\"bsonType\": \"string\", \"minLength\": 1}}}, \"voters\": {\"bsonType\": \"array\", "
    "\"items\": {\"bsonType\": \"int\"}}, \"kind\": {\"anyOf\": [{\"enum\": [\"a\"]}, {\"enum\": [\"b\"]}]}}}}";

static void
test_rules_list(void)
{
	bson_t *v = tt_json(review_validator);
	names_t n = {{0}};
	bson_t *q = tt_json("{\"$and\": [{\"a\": {\"$gte\": 1, \"$lt\": 9}}, {\"b\": 3}], \"$or\": [{\"c\": 1}], "
	    "\"$expr\": {\"$gt\": [\"$a\", 0]}}");
	names_t m = {{0}};

	schema_rules_list(v, collect, &n);
	TT_EQ_STR(n.buf, "bsonType required properties.bookId.bsonType properties.rating.bsonType "
	    "properties.rating.minimum properties.rating.maximum properties.customer.bsonType "
	    "properties.customer.required properties.customer.properties.name.bsonType "
	    "properties.customer.properties.name.minLength properties.voters.bsonType "
	    "properties.voters.items.bsonType properties.kind.anyOf");
	schema_rules_list(q, collect, &m);
	TT_EQ_STR(m.buf, "$and.0.a.$gte $and.0.a.$lt $and.1.b.$eq $or $expr");
	bson_destroy(v);
	bson_destroy(q);
}

/* The names an errInfo gives for doc failing validator. */
static void
failed_names(const char *validator, const char *doc, names_t *n)
{
	bson_t *v = tt_json(validator), *d = tt_json(doc), *info;
	match_t *m = NULL;
	terr_t e = TERR_INIT;

	TT_EQ_INT(match_compile(v, NULL, &m, &e), 0);
	info = match_explain_errinfo(m, d, NULL);
	TT_ASSERT(info != NULL);
	memset(n, 0, sizeof(*n));
	schema_rules_failed(info, collect, n);
	bson_destroy(info);
	match_free(m);
	bson_destroy(v);
	bson_destroy(d);
}

static void
test_rules_failed(void)
{
	names_t n;

	failed_names(review_validator, "{\"_id\": 1, \"bookId\": 1, \"rating\": \"5\"}", &n);
	TT_EQ_STR(n.buf, "properties.rating.bsonType");
	failed_names(review_validator, "{\"_id\": 1, \"rating\": 9, \"customer\": {\"name\": \"\"}, \"voters\": [1, \"x\"]}", &n);
	/* in mongod's errInfo order: properties first, then required */
	TT_EQ_STR(n.buf, "properties.rating.maximum properties.customer.properties.name.minLength "
	    "properties.voters.items.bsonType required");
	failed_names(review_validator, "{\"_id\": 1, \"bookId\": 1, \"rating\": 3, \"kind\": \"z\"}", &n);
	TT_EQ_STR(n.buf, "properties.kind.anyOf");
	failed_names("{\"$and\": [{\"a\": {\"$gte\": 1}}, {\"b\": 3}]}", "{\"_id\": 1, \"a\": 0, \"b\": 3}", &n);
	TT_EQ_STR(n.buf, "$and.0.a.$gte");
	failed_names("{\"a\": {\"$lt\": 5}}", "{\"_id\": 1, \"a\": 7}", &n);
	TT_EQ_STR(n.buf, "a.$lt");
}

static void
test_counters(void)
{
	uint8_t uuid[16] = {1, 2, 3};
	schema_counters_t *c = schema_counters_get(uuid, "t.c");
	bson_t *v = tt_json(review_validator), *d = tt_json("{\"_id\": 1, \"rating\": 0}"), *info, out = BSON_INITIALIZER;
	match_t *m = NULL;
	terr_t e = TERR_INIT;

	TT_ASSERT(schema_counters_get(uuid, "t.c") == c);
	TT_ASSERT(schema_counters_find(uuid) == c);
	TT_EQ_INT(match_compile(v, NULL, &m, &e), 0);
	info = match_explain_errinfo(m, d, NULL);
	schema_counters_passed(c);
	schema_counters_passed(c);
	schema_counters_failed(c, info, false);
	schema_counters_failed(c, info, true);
	schema_counters_append(c, &out);
	TT_EQ_JSON(&out, "{ \"passed\" : 2, \"failed\" : 1, \"warned\" : 1, \"rules\" : { "
	    "\"properties.rating.minimum\" : { \"failed\" : 1, \"warned\" : 1 }, \"required\" : { \"failed\" : 1, "
	    "\"warned\" : 1 } } }");
	bson_destroy(&out);
	bson_init(&out);
	schema_counters_append(NULL, &out);
	TT_EQ_JSON(&out, "{ \"passed\" : 0, \"failed\" : 0, \"warned\" : 0, \"rules\" : {  } }");
	bson_destroy(&out);
	bson_destroy(info);
	match_free(m);
	bson_destroy(v);
	bson_destroy(d);
}

/* ---- validate: a missing and an extra index entry ------------------------------------ */

static int skip_id = -1;

/* query_keygen, except that the document {_id: skip_id} gets no key */
static int
lossy_keygen(const storage_index_t *idx, const bson_t *doc, storage_key_add_fn add, void *ctx, uint32_t *mk,
             terr_t *err)
{
	bson_iter_t it;

	if (bson_iter_init_find(&it, doc, "_id") && BSON_ITER_HOLDS_INT32(&it) && bson_iter_int32(&it) == skip_id)
		return 0;
	return query_keygen(idx, doc, add, ctx, mk, err);
}

static int
insert(storage_t *st, storage_session_t *s, storage_coll_t *c, const char *json)
{
	bson_t *d = tt_json(json);
	terr_t e = TERR_INIT;
	int rc = storage_txn_begin(s, &e);

	if (rc == 0 && (rc = storage_doc_insert(s, c, d, NULL, &e)) == 0)
		rc = storage_txn_commit(s, false, &e);
	else
		storage_txn_rollback(s);
	(void)st;
	terr_clear(&e);
	bson_destroy(d);
	return rc;
}

static void
test_validate_finds_index_damage(void)
{
	char *dir = tt_tmpdir("tbvalidate");
	storage_options_t o = {.create = true, .cache_size = "32M"};
	storage_t *st = NULL;
	storage_session_t *s = NULL;
	storage_coll_t *c = NULL;
	terr_t e = TERR_INIT;
	bson_t *spec = tt_json("{\"v\": 2, \"key\": {\"a\": 1}, \"name\": \"a_1\"}"), reply = BSON_INITIALIZER;
	toolbelt_validate_opts_t vo = {0};
	bson_iter_t it;

	TT_EQ_INT(storage_open(dir, &o, &st, &e), 0);
	query_keygen_register(st);
	TT_EQ_INT(storage_session_open(st, &s, &e), 0);
	TT_EQ_INT(storage_coll_create(st, s, "t", "c", NULL, &e), 0);
	TT_EQ_INT(storage_index_create(st, s, "t", "c", spec, &e), 0);
	TT_EQ_INT(storage_coll_get(st, "t", "c", &c, &e), 0);
	TT_EQ_INT(insert(st, s, c, "{\"_id\": 1, \"a\": 1}"), 0);
	TT_EQ_INT(insert(st, s, c, "{\"_id\": 2, \"a\": [2, 3]}"), 0);
	/* clean: every key where it belongs */
	TT_EQ_INT(toolbelt_validate(st, s, c, &vo, &reply, &e), 0);
	TT_ASSERT(bson_iter_init_find(&it, &reply, "valid") && bson_iter_bool(&it));
	TT_EQ_INT(tt_get_i64(&reply, "keysPerIndex.a_1"), 3);
	TT_EQ_INT(tt_get_i64(&reply, "nrecords"), 2);
	bson_reinit(&reply);
	/* a document stored without its a_1 key: one missing entry */
	skip_id = 3;
	storage_set_keygen(st, lossy_keygen);
	TT_EQ_INT(insert(st, s, c, "{\"_id\": 3, \"a\": 4}"), 0);
	storage_set_keygen(st, query_keygen);
	TT_EQ_INT(toolbelt_validate(st, s, c, &vo, &reply, &e), 0);
	TT_ASSERT(bson_iter_init_find(&it, &reply, "valid") && !bson_iter_bool(&it));
	TT_EQ_STR(tt_get_str(&reply, "missingIndexEntries.0.indexName"), "a_1");
	TT_EQ_STR(tt_get_str(&reply, "indexDetails.a_1.errors.0"), "Detected 1 missing index entries");
	TT_EQ_STR(tt_get_str(&reply, "errors.0"), "Found errors in a_1");
	TT_ASSERT(bson_iter_init_find(&it, &reply, "indexDetails") && tt_get(&reply, "indexDetails._id_.valid", &it) &&
	    bson_iter_bool(&it));
	bson_reinit(&reply);
	/* and deleting it with the keygen that does produce the key leaves
	 * nothing behind; deleting {_id: 1} without its key leaves an extra one */
	skip_id = 1;
	{
		bson_t *d = tt_json("{\"_id\": 1, \"a\": 1}");
		bson_value_t id = {.value_type = BSON_TYPE_INT32, .value.v_int32 = 1};
		recid_t rid;
		bson_t cur;
		storage_set_keygen(st, lossy_keygen);
		TT_EQ_INT(storage_doc_find_id(s, c, &id, &rid, &cur, &e), 0);
		TT_EQ_INT(storage_txn_begin(s, &e), 0);
		TT_EQ_INT(storage_doc_delete(s, c, rid, d, &e), 0);
		TT_EQ_INT(storage_txn_commit(s, false, &e), 0);
		storage_set_keygen(st, query_keygen);
		bson_destroy(d);
	}
	TT_EQ_INT(toolbelt_validate(st, s, c, &vo, &reply, &e), 0);
	TT_EQ_INT(tt_get_i64(&reply, "nrecords"), 2);
	TT_EQ_STR(tt_get_str(&reply, "extraIndexEntries.0.indexName"), "a_1");
	TT_EQ_STR(tt_get_str(&reply, "missingIndexEntries.0.indexName"), "a_1");
	TT_EQ_STR(tt_get_str(&reply, "indexDetails.a_1.errors.1"), "Detected 1 extra index entries");
	bson_destroy(&reply);
	bson_destroy(spec);
	storage_coll_release(c);
	storage_session_close(s);
	storage_close(st);
	terr_clear(&e);
	tt_rmdir(dir);
	bson_free(dir);
}

/* ---- query shapes and the store ------------------------------------------------------- */

static void
test_query_shapes(void)
{
	char a[65], b[65], pa[9], pb[9];
	bson_t *q1 = tt_json("{\"find\": \"c\", \"filter\": {\"x\": 1, \"y\": {\"$in\": [1, 2]}}, \"limit\": 3}");
	bson_t *q2 = tt_json("{\"find\": \"c\", \"filter\": {\"x\": 7, \"y\": {\"$in\": [5]}}, \"limit\": 9}");
	bson_t *q3 = tt_json("{\"find\": \"c\", \"filter\": {\"x\": \"s\", \"y\": {\"$in\": [5]}}, \"limit\": 9}");
	bson_t *q4 = tt_json("{\"find\": \"c\", \"filter\": {\"z\": 7}}");

	toolbelt_query_hashes("t", q1, a, pa);
	toolbelt_query_hashes("t", q2, b, pb);
	TT_EQ_STR(a, b);               /* literals do not count */
	TT_EQ_STR(pa, pb);
	TT_EQ_INT(strlen(a), 64);
	TT_EQ_INT(strlen(pa), 8);
	toolbelt_query_hashes("t", q3, b, pb);
	TT_ASSERT(strcmp(a, b) != 0);  /* their types do */
	toolbelt_query_hashes("t", q4, b, pb);
	TT_ASSERT(strcmp(a, b) != 0 && strcmp(pa, pb) != 0);
	bson_destroy(q1);
	bson_destroy(q2);
	bson_destroy(q3);
	bson_destroy(q4);
}

static int64_t
rows_count(void)
{
	bson_t rows = BSON_INITIALIZER;
	int64_t n = (int64_t)bson_count_keys(&rows);

	toolbelt_qstats_rows(NULL, 0, &rows);
	n = (int64_t)bson_count_keys(&rows);
	bson_destroy(&rows);
	return n;
}

static void
test_qstats_store_bound(void)
{
	terr_t e = TERR_INIT;
	char json[128];

	TT_ASSERT(!toolbelt_qstats_wanted(0));
	TT_ASSERT(toolbelt_qstats_wanted(-1));
	TT_ASSERT(toolbelt_qstats_wanted(1000000));
	TT_EQ_INT(toolbelt_qstats_set_cache_size("64KB", &e), 0);
	for (int i = 0; i < 2000; i++) {
		bson_t *cmd;
		toolbelt_op_t op = {.db = "t", .ns = "t.c", .name = "find", .micros = 10};
		snprintf(json, sizeof(json), "{\"find\": \"c\", \"filter\": {\"f%d\": 1}}", i);
		cmd = tt_json(json);
		op.cmd = cmd;
		toolbelt_qstats_record(&op, NULL);
		bson_destroy(cmd);
	}
	TT_ASSERT(rows_count() > 10);
	TT_ASSERT(rows_count() < 2000);      /* bounded: the oldest were evicted */
	TT_ASSERT(toolbelt_qstats_set_cache_size("lots", &e) != 0);
	TT_EQ_INT(e.code, 2);
	terr_clear(&e);
	TT_ASSERT(toolbelt_qstats_set_cache_size("1%", &e) == 0);
	TT_EQ_STR(toolbelt_qstats_cache_size(), "1%");
}

/* ---- the commands through the embedded API ---------------------------------------------- */

static void
run_ok(tamga_t *db, const char *json)
{
	int rc;
	bson_t *r = tt_run_json(db, "t", json, &rc);

	if (rc != 0)
		fprintf(stderr, "%s -> %s\n", json, tt_get_str(r, "errmsg"));
	TT_EQ_INT(rc, 0);
	tt_free_reply(r);
}

static int
run_code(tamga_t *db, const char *json)
{
	int rc;
	bson_t *r = tt_run_json(db, "t", json, &rc);
	int code = rc == 0 ? 0 : (int)tt_get_i64(r, "code");

	tt_free_reply(r);
	return code;
}

static void
test_preview_pages(tamga_t *db)
{
	int rc;
	bson_t *r;
	bson_iter_t it;

	run_ok(db, "{\"insert\": \"p\", \"documents\": [{\"_id\": 1, \"a\": 1}, {\"_id\": 2, \"a\": \"x\"}, "
	    "{\"_id\": 3, \"a\": 9}, {\"_id\": 4}, {\"_id\": 5, \"a\": \"y\"}]}");
	r = tt_run_json(db, "t", "{\"tamgaValidationPreview\": \"p\", \"validator\": {\"$jsonSchema\": {\"required\": "
	    "[\"a\"], \"properties\": {\"a\": {\"bsonType\": \"int\", \"maximum\": 5}}}}, \"limit\": 3, \"maxIds\": 1}", &rc);
	TT_EQ_INT(rc, 0);
	TT_EQ_INT(tt_get_i64(r, "scanned"), 3);
	TT_EQ_INT(tt_get_i64(r, "failed"), 2);
	TT_EQ_INT(tt_get_i64(r, "resumeAfter"), 3);
	TT_ASSERT(tt_get(r, "complete", &it) && !bson_iter_bool(&it));
	TT_EQ_STR(tt_get_str(r, "rules.1.rule"), "properties.a.bsonType");
	TT_EQ_INT(tt_get_i64(r, "rules.1.failed"), 1);
	TT_EQ_INT(tt_get_i64(r, "rules.1.examples.0._id"), 2);
	TT_EQ_INT(tt_get_i64(r, "rules.1.examples.0.errInfo.failingDocumentId"), 2);
	TT_EQ_STR(tt_get_str(r, "rules.2.rule"), "properties.a.maximum");
	TT_EQ_INT(tt_get_i64(r, "rules.2.examples.0._id"), 3);
	TT_ASSERT(tt_get(r, "levels.constraint.upgradeSucceeds", &it) && !bson_iter_bool(&it));
	tt_free_reply(r);
	r = tt_run_json(db, "t", "{\"tamgaValidationPreview\": \"p\", \"validator\": {\"$jsonSchema\": {\"required\": "
	    "[\"a\"], \"properties\": {\"a\": {\"bsonType\": \"int\", \"maximum\": 5}}}}, \"resumeAfter\": 3, \"maxIds\": 1}", &rc);
	TT_EQ_INT(rc, 0);
	TT_EQ_INT(tt_get_i64(r, "scanned"), 2);
	TT_EQ_INT(tt_get_i64(r, "failed"), 2);
	TT_EQ_STR(tt_get_str(r, "rules.0.rule"), "required");
	TT_EQ_INT(tt_get_i64(r, "rules.0.examples.0._id"), 4);
	TT_EQ_INT(tt_get_i64(r, "rules.1.examples.0._id"), 5);
	TT_ASSERT(tt_get(r, "complete", &it) && bson_iter_bool(&it));
	TT_ASSERT(!tt_get(r, "resumeAfter", &it));
	tt_free_reply(r);
	/* bad input, with mongod's codes where it has one */
	TT_EQ_INT(run_code(db, "{\"tamgaValidationPreview\": \"p\", \"resumeAfter\": 99, \"validator\": {}}"), 2);
	/* after the last document: nothing left, complete */
	r = tt_run_json(db, "t", "{\"tamgaValidationPreview\": \"p\", \"resumeAfter\": 5, \"validator\": {}}", &rc);
	TT_EQ_INT(rc, 0);
	TT_EQ_INT(tt_get_i64(r, "scanned"), 0);
	TT_ASSERT(tt_get(r, "complete", &it) && bson_iter_bool(&it));
	tt_free_reply(r);
	TT_EQ_INT(run_code(db, "{\"tamgaValidationPreview\": \"p\"}"), 2);
	TT_EQ_INT(run_code(db, "{\"tamgaValidationPreview\": \"p\", \"validator\": {\"$where\": \"1\"}}"), 2);
	TT_EQ_INT(run_code(db, "{\"tamgaValidationPreview\": \"nope\", \"validator\": {}}"), 26);
	TT_EQ_INT(run_code(db, "{\"tamgaValidationPreview\": \"p\", \"validator\": {}, \"limit\": 0}"), 51024);
	TT_EQ_INT(run_code(db, "{\"tamgaValidationPreview\": \"p\", \"validator\": {}, \"bogus\": 1}"), 40415);
	TT_EQ_INT(run_code(db, "{\"tamgaValidationPreview\": \"p\", \"validator\": 3}"), 14);
	/* never writes: the collection is as it was */
	r = tt_run_json(db, "t", "{\"count\": \"p\"}", &rc);
	TT_EQ_INT(tt_get_i64(r, "n"), 5);
	tt_free_reply(r);
}

/* A whole scan past PREVIEW_SPLIT_MIN documents runs on several threads:
 * the counts and the examples (in natural order) are those of one pass. */
static void
test_preview_split(tamga_t *db)
{
	int rc;
	bson_t *r;
	bson_iter_t it;

	for (int b = 0; b < 60; b++) {
		bson_string_t *js = bson_string_new("{\"insert\": \"big\", \"documents\": [");
		for (int i = 0; i < 1000; i++) {
			int id = b * 1000 + i;
			bson_string_append_printf(js, "%s{\"_id\": %d, \"a\": %s}", i ? ", " : "", id,
			    id % 1000 == 7 ? "\"x\"" : "1");
		}
		bson_string_append(js, "]}");
		run_ok(db, js->str);
		bson_string_free(js, true);
	}
	r = tt_run_json(db, "t", "{\"tamgaValidationPreview\": \"big\", \"validator\": {\"a\": {\"$type\": \"int\"}}, "
	    "\"maxIds\": 3}", &rc);
	TT_EQ_INT(rc, 0);
	TT_EQ_INT(tt_get_i64(r, "scanned"), 60000);
	TT_EQ_INT(tt_get_i64(r, "failed"), 60);
	TT_EQ_STR(tt_get_str(r, "rules.0.rule"), "a.$type");
	TT_EQ_INT(tt_get_i64(r, "rules.0.failed"), 60);
	TT_EQ_INT(tt_get_i64(r, "rules.0.examples.0._id"), 7);
	TT_EQ_INT(tt_get_i64(r, "rules.0.examples.1._id"), 1007);
	TT_EQ_INT(tt_get_i64(r, "rules.0.examples.2._id"), 2007);
	TT_ASSERT(!tt_get(r, "rules.0.examples.3", &it));
	TT_EQ_INT(tt_get_i64(r, "levels.constraint.firstOffendingId"), 7);
	TT_ASSERT(tt_get(r, "complete", &it) && bson_iter_bool(&it));
	tt_free_reply(r);
	/* and from a resume point */
	r = tt_run_json(db, "t", "{\"tamgaValidationPreview\": \"big\", \"validator\": {\"a\": {\"$type\": \"int\"}}, "
	    "\"resumeAfter\": 1007}", &rc);
	TT_EQ_INT(tt_get_i64(r, "scanned"), 60000 - 1008);
	TT_EQ_INT(tt_get_i64(r, "failed"), 58);
	TT_EQ_INT(tt_get_i64(r, "rules.0.examples.0._id"), 2007);
	tt_free_reply(r);
}

static void
test_infer(tamga_t *db)
{
	int rc;
	bson_t *r;

	run_ok(db, "{\"insert\": \"i\", \"documents\": [{\"_id\": 1, \"n\": 1, \"s\": \"red\", \"o\": {\"k\": 1}, "
	    "\"arr\": [1, 2]}, {\"_id\": 2, \"n\": 2.5, \"s\": \"red\", \"o\": {\"k\": 2, \"j\": true}, \"arr\": []}, "
	    "{\"_id\": 3, \"n\": 3, \"s\": \"blue\", \"o\": {\"k\": 3}}, {\"_id\": 4, \"n\": 4, \"s\": \"red\", "
	    "\"o\": {\"k\": 4}}]}");
	r = tt_run_json(db, "t", "{\"tamgaInferSchema\": \"i\", \"ranges\": true}", &rc);
	TT_EQ_INT(rc, 0);
	TT_EQ_JSON(r, "{ \"ns\" : \"t.i\", \"sampled\" : 4, \"validator\" : { \"$jsonSchema\" : { \"bsonType\" : "
	    "\"object\", \"required\" : [ \"n\", \"s\", \"o\" ], \"properties\" : { \"n\" : { \"bsonType\" : "
	    "[ \"double\", \"int\" ], \"minimum\" : 1, \"maximum\" : 4 }, \"s\" : { \"bsonType\" : \"string\", "
	    "\"enum\" : [ \"red\", \"blue\" ], \"minLength\" : 3, \"maxLength\" : 4 }, \"o\" : { \"bsonType\" : "
	    "\"object\", \"required\" : [ \"k\" ], \"properties\" : { \"k\" : { \"bsonType\" : \"int\", \"minimum\" "
	    ": 1, \"maximum\" : 4 }, \"j\" : { \"bsonType\" : \"bool\" } } }, \"arr\" : { \"bsonType\" : \"array\", "
	    "\"items\" : { \"bsonType\" : \"int\", \"minimum\" : 1, \"maximum\" : 2 }, \"minItems\" : 0, \"maxItems\" "
	    ": 2 } } } }, \"fields\" : [ { \"path\" : \"_id\", \"count\" : 4, \"probability\" : 1.0, \"types\" : [ { "
	    "\"bsonType\" : \"int\", \"count\" : 4, \"probability\" : 1.0 } ] }, { \"path\" : \"n\", \"count\" : 4, "
	    "\"probability\" : 1.0, \"types\" : [ { \"bsonType\" : \"double\", \"count\" : 1, \"probability\" : 0.25 }, "
	    "{ \"bsonType\" : \"int\", \"count\" : 3, \"probability\" : 0.75 } ] }, { \"path\" : \"s\", \"count\" : 4, "
	    "\"probability\" : 1.0, \"types\" : [ { \"bsonType\" : \"string\", \"count\" : 4, \"probability\" : 1.0 } ], "
	    "\"distinctStrings\" : 2 }, { \"path\" : \"o\", \"count\" : 4, \"probability\" : 1.0, \"types\" : [ { "
	    "\"bsonType\" : \"object\", \"count\" : 4, \"probability\" : 1.0 } ] }, { \"path\" : \"o.k\", \"count\" : 4, "
	    "\"probability\" : 1.0, \"types\" : [ { \"bsonType\" : \"int\", \"count\" : 4, \"probability\" : 1.0 } ] }, "
	    "{ \"path\" : \"o.j\", \"count\" : 1, \"probability\" : 0.25, \"types\" : [ { \"bsonType\" : \"bool\", "
	    "\"count\" : 1, \"probability\" : 1.0 } ] }, { \"path\" : \"arr\", \"count\" : 2, \"probability\" : 0.5, "
	    "\"types\" : [ { \"bsonType\" : \"array\", \"count\" : 2, \"probability\" : 1.0 } ], \"minItems\" : 0, "
	    "\"maxItems\" : 2 }, { \"path\" : \"arr[]\", \"count\" : 2, \"probability\" : 1.0, \"types\" : [ { "
	    "\"bsonType\" : \"int\", \"count\" : 2, \"probability\" : 1.0 } ] } ], \"ok\" : 1.0 }");
	tt_free_reply(r);
	/* a threshold: o.j is in a quarter of the documents */
	r = tt_run_json(db, "t", "{\"tamgaInferSchema\": \"i\", \"requiredThreshold\": 0.25, \"enumMax\": 0}", &rc);
	TT_EQ_INT(rc, 0);
	TT_EQ_STR(tt_get_str(r, "validator.$jsonSchema.properties.o.required.1"), "j");
	TT_EQ_STR(tt_get_str(r, "validator.$jsonSchema.required.3"), "arr");
	TT_ASSERT(!tt_get(r, "validator.$jsonSchema.properties.s.enum", &(bson_iter_t){0}));
	tt_free_reply(r);
	/* a document with 3000 distinct keys: the first 1000 analysed, said so */
	{
		bson_string_t *js = bson_string_new("{\"insert\": \"wide\", \"documents\": [{");
		bson_iter_t it;
		for (int i = 0; i < 3000; i++)
			bson_string_append_printf(js, "%s\"f%d\": %d", i ? ", " : "", i, i);
		bson_string_append(js, "}]}");
		run_ok(db, js->str);
		bson_string_free(js, true);
		r = tt_run_json(db, "t", "{\"tamgaInferSchema\": \"wide\"}", &rc);
		TT_EQ_INT(rc, 0);
		TT_ASSERT(tt_get(r, "fieldsTruncated", &it) && bson_iter_bool(&it));
		TT_EQ_STR(tt_get_str(r, "validator.$jsonSchema.properties.f998.bsonType"), "int");
		tt_free_reply(r);
	}
	/* bad input */
	TT_EQ_INT(run_code(db, "{\"tamgaInferSchema\": \"i\", \"sample\": 0}"), 51024);
	TT_EQ_INT(run_code(db, "{\"tamgaInferSchema\": \"i\", \"sample\": 5}"), 2);
	TT_EQ_INT(run_code(db, "{\"tamgaInferSchema\": \"i\", \"requiredThreshold\": 2}"), 2);
	TT_EQ_INT(run_code(db, "{\"tamgaInferSchema\": \"i\", \"discriminator\": \"a.b\"}"), 2);
	TT_EQ_INT(run_code(db, "{\"tamgaInferSchema\": \"none\"}"), 26);
}

static int64_t
profile_count(tamga_t *db)
{
	int rc;
	bson_t *r = tt_run_json(db, "t", "{\"count\": \"system.profile\"}", &rc);
	int64_t n = rc == 0 ? tt_get_i64(r, "n") : -1;

	tt_free_reply(r);
	return n;
}

static void
test_profiler(tamga_t *db)
{
	int rc;
	bson_t *r;
	int64_t n0;

	run_ok(db, "{\"insert\": \"q\", \"documents\": [{\"_id\": 1}]}");
	r = tt_run_json(db, "t", "{\"profile\": -1}", &rc);
	TT_EQ_INT(rc, 0);
	TT_EQ_INT(tt_get_i64(r, "was"), 0);
	TT_EQ_INT(tt_get_i64(r, "slowms"), 100);
	tt_free_reply(r);
	TT_EQ_INT(profile_count(db), 0);
	/* level 1 with slowms 100: a fast find is not profiled */
	run_ok(db, "{\"profile\": 1}");
	run_ok(db, "{\"find\": \"q\", \"filter\": {\"_id\": 1}}");
	TT_EQ_INT(profile_count(db), 0);
	/* level 2: everything (but reads of system.profile itself) */
	run_ok(db, "{\"profile\": 2}");
	run_ok(db, "{\"find\": \"q\", \"filter\": {\"_id\": 1}}");
	n0 = profile_count(db);
	TT_ASSERT(n0 >= 2);     /* the profile command and the find */
	r = tt_run_json(db, "t", "{\"find\": \"system.profile\", \"filter\": {\"op\": \"query\"}}", &rc);
	TT_EQ_STR(tt_get_str(r, "cursor.firstBatch.0.ns"), "t.q");
	TT_EQ_INT(tt_get_i64(r, "cursor.firstBatch.0.nreturned"), 1);
	TT_EQ_INT(tt_get_i64(r, "cursor.firstBatch.0.keysExamined"), 1);
	TT_EQ_STR(tt_get_str(r, "cursor.firstBatch.0.planSummary"), "EXPRESS_IXSCAN { _id: 1 }");
	TT_EQ_INT(strlen(tt_get_str(r, "cursor.firstBatch.0.queryShapeHash")), 64);
	tt_free_reply(r);
	/* sampleRate 0: nothing more */
	run_ok(db, "{\"profile\": 2, \"sampleRate\": 0.0}");
	n0 = profile_count(db);
	run_ok(db, "{\"find\": \"q\"}");
	TT_EQ_INT(profile_count(db), n0);
	/* a filter replaces slowms and sampleRate */
	r = tt_run_json(db, "t", "{\"profile\": 1, \"filter\": {\"op\": \"insert\"}, \"sampleRate\": 1.0}", &rc);
	TT_EQ_INT(rc, 0);
	TT_EQ_INT(tt_get_i64(r, "was"), 2);
	TT_ASSERT(strstr(tt_get_str(r, "note"), "filter expression") != NULL);
	tt_free_reply(r);
	n0 = profile_count(db);
	run_ok(db, "{\"find\": \"q\"}");
	run_ok(db, "{\"insert\": \"q\", \"documents\": [{\"_id\": 2}]}");
	TT_EQ_INT(profile_count(db), n0 + 1);
	r = tt_run_json(db, "t", "{\"profile\": 0, \"filter\": \"unset\"}", &rc);
	TT_EQ_INT(rc, 0);
	TT_EQ_STR(tt_get_str(r, "filter.op"), "insert");
	tt_free_reply(r);
	n0 = profile_count(db);
	run_ok(db, "{\"insert\": \"q\", \"documents\": [{\"_id\": 3}]}");
	TT_EQ_INT(profile_count(db), n0);
	/* bad input */
	TT_EQ_INT(run_code(db, "{\"profile\": 1, \"sampleRate\": 1.5}"), 2);
	TT_EQ_INT(run_code(db, "{\"profile\": \"x\"}"), 14);
	TT_EQ_INT(run_code(db, "{\"profile\": 1, \"filter\": 3}"), 2);
	TT_EQ_INT(run_code(db, "{\"profile\": 1, \"filter\": {\"$bogus\": 1}}"), 2);
	TT_EQ_INT(run_code(db, "{\"profile\": 1, \"nope\": 1}"), 40415);
	/* validate on the capped, _id-less system.profile */
	r = tt_run_json(db, "t", "{\"validate\": \"system.profile\"}", &rc);
	TT_EQ_INT(rc, 0);
	TT_EQ_INT(tt_get_i64(r, "nIndexes"), 0);
	tt_free_reply(r);
}

static void
test_validate_command(tamga_t *db)
{
	TT_EQ_INT(run_code(db, "{\"validate\": \"nope\"}"), 26);
	TT_EQ_INT(run_code(db, "{\"validate\": \"q\", \"repair\": true}"), 238);
	/* options read as mongod's trueValue, other fields ignored (no IDL) */
	TT_EQ_INT(run_code(db, "{\"validate\": \"q\", \"full\": \"yes\"}"), 0);
	TT_EQ_INT(run_code(db, "{\"validate\": \"q\", \"what\": 1, \"scandata\": true}"), 0);
	TT_EQ_INT(run_code(db, "{\"validate\": \"q\", \"full\": 1, \"background\": \"x\"}"), 72);
	run_ok(db, "{\"create\": \"qv\", \"viewOn\": \"q\", \"pipeline\": []}");
	TT_EQ_INT(run_code(db, "{\"validate\": \"qv\"}"), 166);
	TT_EQ_INT(run_code(db, "{\"tamgaInferSchema\": \"qv\"}"), 166);
	TT_EQ_INT(run_code(db, "{\"tamgaSchemaAdvice\": \"qv\"}"), 166);
	TT_EQ_INT(run_code(db, "{\"tamgaSchemaAdvice\": true}"), 14);
	run_ok(db, "{\"validate\": \"q\", \"full\": true}");
	/* {metadata: true}: the catalog entry only, and every kind of stored
	 * index spec passes createIndexes' checks again (no warning) */
	{
		bson_t *r;
		int rc;
		bson_iter_t f;
		run_ok(db, "{\"create\": \"qm\", \"validator\": {\"$jsonSchema\": {\"required\": [\"a\"]}}}");
		run_ok(db, "{\"insert\": \"qm\", \"documents\": [{\"a\": 1, \"t\": \"some words\", "
		    "\"g\": {\"type\": \"Point\", \"coordinates\": [1, 2]}, \"at\": {\"$date\": 0}}]}");
		run_ok(db, "{\"createIndexes\": \"qm\", \"indexes\": ["
		    "{\"key\": {\"t\": \"text\"}, \"name\": \"t_text\", \"weights\": {\"t\": 2}},"
		    "{\"key\": {\"g\": \"2dsphere\"}, \"name\": \"g_2dsphere\"},"
		    "{\"key\": {\"a\": \"hashed\"}, \"name\": \"a_hashed\"},"
		    "{\"key\": {\"$**\": 1}, \"name\": \"all\", \"wildcardProjection\": {\"t\": 0}},"
		    "{\"key\": {\"a\": 1}, \"name\": \"a_1\", \"unique\": true, "
		    "\"partialFilterExpression\": {\"a\": {\"$gt\": 0}}},"
		    "{\"key\": {\"at\": 1}, \"name\": \"at_1\", \"expireAfterSeconds\": 3600, \"hidden\": true}]}");
		r = tt_run_json(db, "t", "{\"validate\": \"qm\", \"metadata\": true}", &rc);
		TT_EQ_INT(rc, 0);
		TT_ASSERT(tt_get(r, "valid", &f) && bson_iter_as_bool(&f));
		TT_ASSERT(!tt_get(r, "warnings.0", &f));
		TT_ASSERT(!tt_get(r, "errors.0", &f));
		TT_EQ_INT(tt_get_i64(r, "nIndexes"), 7);
		TT_EQ_INT(tt_get_i64(r, "keysPerIndex.a_hashed"), 0);
		TT_ASSERT(tt_get(r, "indexDetails.t_text.valid", &f) && bson_iter_as_bool(&f));
		TT_ASSERT(!tt_get(r, "nrecords", &f));
		TT_ASSERT(!tt_get(r, "nInvalidDocuments", &f));
		TT_EQ_STR(tt_get_str(r, "ns"), "t.qm");
		tt_free_reply(r);
		/* the whole validation still counts what metadata does not */
		r = tt_run_json(db, "t", "{\"validate\": \"qm\"}", &rc);
		TT_EQ_INT(tt_get_i64(r, "nrecords"), 1);
		TT_EQ_INT(tt_get_i64(r, "keysPerIndex.a_hashed"), 1);
		tt_free_reply(r);
		r = tt_run_json(db, "t", "{\"validate\": \"qm\", \"metadata\": true, \"full\": true}", &rc);
		TT_EQ_INT(tt_get_i64(r, "code"), 72);
		TT_EQ_STR(tt_get_str(r, "errmsg"),
		    "Running the validate command with { metadata: true } is not supported with any other options");
		tt_free_reply(r);
		TT_EQ_INT(run_code(db, "{\"validate\": \"qm\", \"metadata\": true, \"checkBSONConformance\": true}"), 72);
		TT_EQ_INT(run_code(db, "{\"validate\": \"qm\", \"metadata\": true, \"repair\": true}"), 72);
		TT_EQ_INT(run_code(db, "{\"validate\": \"qm\", \"background\": true, \"full\": true}"), 72);
		TT_EQ_INT(run_code(db, "{\"validate\": \"qm\", \"metadata\": false}"), 0);
	}
}

static void
test_qstats_parameters(tamga_t *db)
{
	int rc;
	bson_t *r;

	r = tt_run_json(db, "admin", "{\"setParameter\": 1, \"internalQueryStatsCacheSize\": \"2MB\"}", &rc);
	TT_EQ_INT(rc, 0);
	TT_EQ_STR(tt_get_str(r, "was"), "1%");
	tt_free_reply(r);
	r = tt_run_json(db, "admin", "{\"getParameter\": 1, \"internalQueryStatsCacheSize\": 1, "
	    "\"internalQueryStatsRateLimit\": 1}", &rc);
	TT_EQ_STR(tt_get_str(r, "internalQueryStatsCacheSize"), "2MB");
	TT_EQ_INT(tt_get_i64(r, "internalQueryStatsRateLimit"), 0);
	tt_free_reply(r);
	r = tt_run_json(db, "admin", "{\"setParameter\": 1, \"internalQueryStatsCacheSize\": \"much\"}", &rc);
	TT_EQ_INT(tt_get_i64(r, "code"), 2);
	tt_free_reply(r);
	r = tt_run_json(db, "admin", "{\"setParameter\": 1, \"internalQueryStatsRateLimit\": -2}", &rc);
	TT_EQ_INT(tt_get_i64(r, "code"), 2);
	tt_free_reply(r);
	/* on: a find is recorded, $queryStats shows it */
	r = tt_run_json(db, "admin", "{\"setParameter\": 1, \"internalQueryStatsRateLimit\": -1}", &rc);
	tt_free_reply(r);
	run_ok(db, "{\"find\": \"q\", \"filter\": {\"zz\": {\"$gt\": 3}}}");
	r = tt_run_json(db, "admin", "{\"aggregate\": 1, \"pipeline\": [{\"$queryStats\": {}}, {\"$match\": "
	    "{\"key.queryShape.filter.zz\": {\"$exists\": true}}}], \"cursor\": {}}", &rc);
	TT_EQ_INT(rc, 0);
	TT_EQ_STR(tt_get_str(r, "cursor.firstBatch.0.key.queryShape.filter.zz.$gt"), "?number");
	TT_EQ_INT(tt_get_i64(r, "cursor.firstBatch.0.metrics.execCount"), 1);
	tt_free_reply(r);
	/* a cursor's getMores add to their query's entry: one execution, every document */
	{
		int64_t id;
		char json[160];
		r = tt_run_json(db, "t", "{\"find\": \"q\", \"filter\": {\"yy\": {\"$exists\": false}}, \"batchSize\": 1}",
		    &rc);
		TT_EQ_INT(rc, 0);
		id = tt_get_i64(r, "cursor.id");
		TT_ASSERT(id != 0);
		tt_free_reply(r);
		snprintf(json, sizeof(json), "{\"getMore\": {\"$numberLong\": \"%lld\"}, \"collection\": \"q\"}",
		    (long long)id);
		run_ok(db, json);
		r = tt_run_json(db, "admin", "{\"aggregate\": 1, \"pipeline\": [{\"$queryStats\": {}}, {\"$match\": "
		    "{\"key.queryShape.filter.yy\": {\"$exists\": true}}}], \"cursor\": {}}", &rc);
		TT_EQ_INT(tt_get_i64(r, "cursor.firstBatch.0.metrics.execCount"), 1);
		TT_EQ_INT(tt_get_i64(r, "cursor.firstBatch.0.metrics.docsReturned.sum"), 3);
		TT_ASSERT(tt_get_i64(r, "cursor.firstBatch.0.metrics.totalExecMicros.sum") >=
		    tt_get_i64(r, "cursor.firstBatch.0.metrics.firstResponseExecMicros.sum"));
		tt_free_reply(r);
	}
	/* the fast path (a query seen before, its shape not rebuilt): equal
	 * material counts on the entry; an int then a long are one shape
	 * ("?number"), a string another; the counts stay the slow path's */
	run_ok(db, "{\"find\": \"q\", \"filter\": {\"ww\": 1}}");
	run_ok(db, "{\"find\": \"q\", \"filter\": {\"ww\": 2}}");
	run_ok(db, "{\"find\": \"q\", \"filter\": {\"ww\": 3}, \"batchSize\": 5}");
	run_ok(db, "{\"find\": \"q\", \"filter\": {\"ww\": {\"$numberLong\": \"4\"}}}");
	run_ok(db, "{\"find\": \"q\", \"filter\": {\"ww\": \"x\"}}");
	run_ok(db, "{\"find\": \"q\", \"filter\": {\"ww\": \"y\"}}");
	r = tt_run_json(db, "admin", "{\"aggregate\": 1, \"pipeline\": [{\"$queryStats\": {}}, {\"$match\": "
	    "{\"key.queryShape.filter.ww.$eq\": \"?number\", \"key.batchSize\": {\"$exists\": false}}}], "
	    "\"cursor\": {}}", &rc);
	TT_EQ_INT(tt_get_i64(r, "cursor.firstBatch.0.metrics.execCount"), 3);
	{ bson_iter_t f_; TT_ASSERT(!tt_get(r, "cursor.firstBatch.1", &f_)); }
	tt_free_reply(r);
	r = tt_run_json(db, "admin", "{\"aggregate\": 1, \"pipeline\": [{\"$queryStats\": {}}, {\"$match\": "
	    "{\"key.queryShape.filter.ww.$eq\": \"?string\"}}], \"cursor\": {}}", &rc);
	TT_EQ_INT(tt_get_i64(r, "cursor.firstBatch.0.metrics.execCount"), 2);
	{ bson_iter_t f_; TT_ASSERT(!tt_get(r, "cursor.firstBatch.1", &f_)); }
	tt_free_reply(r);
	r = tt_run_json(db, "admin", "{\"aggregate\": 1, \"pipeline\": [{\"$queryStats\": {}}, {\"$match\": "
	    "{\"key.queryShape.filter.ww.$eq\": \"?number\", \"key.batchSize\": \"?number\"}}], "
	    "\"cursor\": {}}", &rc);
	TT_EQ_INT(tt_get_i64(r, "cursor.firstBatch.0.metrics.execCount"), 1);
	tt_free_reply(r);
	/* docsReturned exact whether the first batch's own count is used (a
	 * find, an aggregate: the reply is that batch) or the reply is walked
	 * (a view's find, rewritten into an aggregate; distinct's values) --
	 * each run twice, the second on the fast path */
	run_ok(db, "{\"insert\": \"nr\", \"documents\": [{\"k\": 0}, {\"k\": 1}, {\"k\": 2}, {\"k\": 3}, "
	    "{\"k\": 4}, {\"k\": 5}, {\"k\": 6}]}");
	run_ok(db, "{\"create\": \"nrv\", \"viewOn\": \"nr\", \"pipeline\": [{\"$match\": {\"k\": {\"$lt\": 4}}}]}");
	for (int i = 0; i < 2; i++) {
		run_ok(db, "{\"find\": \"nr\", \"filter\": {\"k\": {\"$gte\": 0}}, \"batchSize\": 3}");
		run_ok(db, "{\"find\": \"nr\", \"filter\": {\"k\": {\"$gte\": 2}}, \"limit\": 2}");
		run_ok(db, "{\"aggregate\": \"nr\", \"pipeline\": [{\"$match\": {\"k\": {\"$gte\": 2}}}], \"cursor\": {}}");
		run_ok(db, "{\"find\": \"nrv\", \"filter\": {\"k\": {\"$gte\": 1}}}");
		run_ok(db, "{\"distinct\": \"nr\", \"key\": \"k\"}");
	}
	{
		static const struct { const char *match; int64_t sum; } nr[] = {
			{"\"key.queryShape.cmdNs.coll\": \"nr\", \"key.batchSize\": \"?number\"", 6},
			{"\"key.queryShape.cmdNs.coll\": \"nr\", \"key.queryShape.limit\": {\"$exists\": true}", 4},
			{"\"key.queryShape.cmdNs.coll\": \"nr\", \"key.queryShape.command\": \"aggregate\"", 10},
			{"\"key.queryShape.cmdNs.coll\": \"nrv\"", 6},
			{"\"key.queryShape.cmdNs.coll\": \"nr\", \"key.queryShape.command\": \"distinct\"", 14},
		};
		for (size_t i = 0; i < sizeof(nr) / sizeof(nr[0]); i++) {
			char json[400];
			snprintf(json, sizeof(json), "{\"aggregate\": 1, \"pipeline\": [{\"$queryStats\": {}}, "
			    "{\"$match\": {%s}}], \"cursor\": {}}", nr[i].match);
			r = tt_run_json(db, "admin", json, &rc);
			TT_EQ_INT(rc, 0);
			if (tt_get_i64(r, "cursor.firstBatch.0.metrics.docsReturned.sum") != nr[i].sum)
				fprintf(stderr, "%s\n", json);
			TT_EQ_INT(tt_get_i64(r, "cursor.firstBatch.0.metrics.execCount"), 2);
			TT_EQ_INT(tt_get_i64(r, "cursor.firstBatch.0.metrics.docsReturned.sum"), nr[i].sum);
			{ bson_iter_t f_; TT_ASSERT(!tt_get(r, "cursor.firstBatch.1", &f_)); }
			tt_free_reply(r);
		}
	}
	r = tt_run_json(db, "admin", "{\"setParameter\": 1, \"internalQueryStatsRateLimit\": 0, "
	    "\"internalQueryStatsCacheSize\": \"1%\"}", &rc);
	TT_EQ_INT(rc, 0);
	tt_free_reply(r);
}

int
main(void)
{
	char *dir = tt_tmpdir("toolbelt");
	tamga_t *db;

	TT_RUN(test_rules_list);
	TT_RUN(test_rules_failed);
	TT_RUN(test_counters);
	TT_RUN(test_validate_finds_index_damage);
	TT_RUN(test_query_shapes);
	TT_RUN(test_qstats_store_bound);
	db = tt_open_new(dir);
	TT_ASSERT(db != NULL);
	{
		tamga_t *d = db;
		tt_cur_name = "test_preview_pages"; tt_cur_failed = 0; test_preview_pages(d);
		if (tt_cur_failed) { tt_failed++; fprintf(stderr, "not ok - test_preview_pages\n"); }
		else { tt_passed++; fprintf(stderr, "ok - test_preview_pages\n"); }
		tt_cur_name = "test_preview_split"; tt_cur_failed = 0; test_preview_split(d);
		if (tt_cur_failed) { tt_failed++; fprintf(stderr, "not ok - test_preview_split\n"); }
		else { tt_passed++; fprintf(stderr, "ok - test_preview_split\n"); }
		tt_cur_name = "test_infer"; tt_cur_failed = 0; test_infer(d);
		if (tt_cur_failed) { tt_failed++; fprintf(stderr, "not ok - test_infer\n"); }
		else { tt_passed++; fprintf(stderr, "ok - test_infer\n"); }
		tt_cur_name = "test_profiler"; tt_cur_failed = 0; test_profiler(d);
		if (tt_cur_failed) { tt_failed++; fprintf(stderr, "not ok - test_profiler\n"); }
		else { tt_passed++; fprintf(stderr, "ok - test_profiler\n"); }
		tt_cur_name = "test_qstats_parameters"; tt_cur_failed = 0; test_qstats_parameters(d);
		if (tt_cur_failed) { tt_failed++; fprintf(stderr, "not ok - test_qstats_parameters\n"); }
		else { tt_passed++; fprintf(stderr, "ok - test_qstats_parameters\n"); }
		tt_cur_name = "test_validate_command"; tt_cur_failed = 0; test_validate_command(d);
		if (tt_cur_failed) { tt_failed++; fprintf(stderr, "not ok - test_validate_command\n"); }
		else { tt_passed++; fprintf(stderr, "ok - test_validate_command\n"); }
	}
	tamga_close(db);
	tt_rmdir(dir);
	bson_free(dir);
	return tt_finish();
}
