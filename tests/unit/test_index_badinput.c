/*
 * test_index_badinput.c -- malformed createIndexes / listIndexes /
 * dropIndexes / explain commands and awkward documents under every index
 * kind: each answers an error (or works), never crashes, and leaves the
 * collection usable.
 */
#include "tt.h"

#include "commands/commands.h"
#include "common/mem.h"
#include "query/keygen.h"

static engine_t *eng;
static client_t *cl;

static int
run_code(const char *json)
{
	bson_t *cmd = tt_json(json);
	bson_t *reply = tm_bson_array_new(1);
	int rc = engine_run_command(eng, cl, "test", cmd, reply, NULL);

	bson_destroy(cmd);
	bson_destroy(reply);
	bson_free(reply);
	return rc;
}

static void
test_bad_commands(void)
{
	static const char *const bad[] = {
		"{\"createIndexes\": \"b\"}",
		"{\"createIndexes\": 5, \"indexes\": []}",
		"{\"createIndexes\": \"b\", \"indexes\": 5}",
		"{\"createIndexes\": \"b\", \"indexes\": [5]}",
		"{\"createIndexes\": \"b\", \"indexes\": [{}]}",
		"{\"createIndexes\": \"b\", \"indexes\": [{\"key\": 5, \"name\": \"x\"}]}",
		"{\"createIndexes\": \"b\", \"indexes\": [{\"key\": {\"a\": 1}, \"name\": 5}]}",
		"{\"createIndexes\": \"b\", \"indexes\": [{\"key\": {\"a\": {\"b\": 1}}, \"name\": \"x\"}]}",
		"{\"createIndexes\": \"b\", \"indexes\": [{\"key\": {\"a\": 1, \"a\": -1}, \"name\": \"x\"}]}",
		"{\"createIndexes\": \"b\", \"indexes\": [{\"key\": {\"a..b\": 1}, \"name\": \"x\"}]}",
		"{\"createIndexes\": \"b\", \"indexes\": [{\"key\": {\"a\": 1}, \"name\": \"x\", \"v\": 7}]}",
		"{\"createIndexes\": \"b\", \"indexes\": [{\"key\": {\"a\": 1}, \"name\": \"x\", \"v\": \"2\"}]}",
		"{\"createIndexes\": \"b\", \"indexes\": [{\"key\": {\"a\": 1}, \"name\": \"x\", \"unique\": \"yes\"}]}",
		"{\"createIndexes\": \"b\", \"indexes\": [{\"key\": {\"a\": 1}, \"name\": \"x\", \"partialFilterExpression\": 5}]}",
		"{\"createIndexes\": \"b\", \"indexes\": [{\"key\": {\"a\": 1}, \"name\": \"x\", \"partialFilterExpression\": {\"$expr\": {\"$eq\": [1, 1]}}}]}",
		"{\"createIndexes\": \"b\", \"indexes\": [{\"key\": {\"a\": 1}, \"name\": \"x\", \"partialFilterExpression\": {\"a\": {\"$bogus\": 1}}}]}",
		"{\"createIndexes\": \"b\", \"indexes\": [{\"key\": {\"a\": 1}, \"name\": \"x\", \"expireAfterSeconds\": \"x\"}]}",
		"{\"createIndexes\": \"b\", \"indexes\": [{\"key\": {\"a\": 1}, \"name\": \"x\", \"expireAfterSeconds\": 1e300}]}",
		"{\"createIndexes\": \"b\", \"indexes\": [{\"key\": {\"a\": 1}, \"name\": \"x\", \"collation\": {\"locale\": \"xx\"}}]}",
		"{\"createIndexes\": \"b\", \"indexes\": [{\"key\": {\"a\": 1}, \"name\": \"x\", \"collation\": {\"locale\": \"fr\", \"strength\": 9}}]}",
		"{\"createIndexes\": \"b\", \"indexes\": [{\"key\": {\"a\": \"2dsphere\"}, \"name\": \"x\", \"2dsphereIndexVersion\": 7}]}",
		"{\"createIndexes\": \"b\", \"indexes\": [{\"key\": {\"a\": \"2d\", \"b\": \"2d\"}, \"name\": \"x\"}]}",
		"{\"createIndexes\": \"b\", \"indexes\": [{\"key\": {\"a\": \"2d\"}, \"name\": \"x\", \"min\": 1, \"max\": 0}]}",
		"{\"createIndexes\": \"b\", \"indexes\": [{\"key\": {\"a\": \"hashed\"}, \"name\": \"x\", \"unique\": true}]}",
		"{\"createIndexes\": \"b\", \"indexes\": [{\"key\": {\"$**\": 1, \"b\": 1}, \"name\": \"x\"}]}",
		"{\"createIndexes\": \"b\", \"indexes\": [{\"key\": {\"$**\": 1}, \"name\": \"x\", \"wildcardProjection\": {}}]}",
		"{\"createIndexes\": \"b\", \"indexes\": [{\"key\": {\"$**\": 1}, \"name\": \"x\", \"wildcardProjection\": 3}]}",
		"{\"createIndexes\": \"b\", \"indexes\": [{\"key\": {\"a\": 1}, \"name\": \"x\", \"wildcardProjection\": {\"a\": 1}}]}",
		"{\"listIndexes\": 5}",
		"{\"listIndexes\": \"b\", \"cursor\": 5}",
		"{\"dropIndexes\": \"b\", \"index\": 5}",
		"{\"dropIndexes\": \"b\", \"index\": [5]}",
		"{\"dropIndexes\": \"b\", \"index\": {\"_id\": 1}}",
		"{\"explain\": 1}",
		"{\"explain\": {}}",
		"{\"explain\": {\"find\": 5}}",
		"{\"explain\": {\"nosuch\": \"b\"}}",
		"{\"explain\": {\"find\": \"b\"}, \"verbosity\": \"loud\"}",
		"{\"explain\": {\"find\": \"b\", \"filter\": 5}}",
		"{\"explain\": {\"find\": \"b\", \"filter\": {\"$bogus\": 1}}}",
		"{\"explain\": {\"find\": \"b\", \"hint\": 5}}",
		"{\"explain\": {\"find\": \"b\", \"skip\": -1}}",
		"{\"explain\": {\"update\": \"b\"}}",
		"{\"explain\": {\"update\": \"b\", \"updates\": [1, 2]}}",
		"{\"explain\": {\"delete\": \"b\", \"deletes\": []}}",
		"{\"explain\": {\"distinct\": \"b\"}}",
	};
	size_t i;

	TT_EQ_INT(run_code("{\"insert\": \"b\", \"documents\": [{\"_id\": 1, \"a\": 1}]}"), 0);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int rc = run_code(bad[i]);
		if (rc == 0)
			TT_FAIL_("accepted: %s", bad[i]);
	}
	TT_EQ_INT(run_code("{\"find\": \"b\", \"filter\": {\"a\": 1}}"), 0);
	TT_EQ_INT(run_code("{\"explain\": {\"find\": \"b\", \"filter\": {\"a\": 1}}}"), 0);
	TT_EQ_INT(run_code("{\"explain\": {\"find\": \"nosuch\", \"filter\": {\"a\": 1}}, \"verbosity\": \"executionStats\"}"), 0);
}

/* Awkward documents under every index kind. */
static void
test_awkward_documents(void)
{
	bson_t *cmd, arr, d, sub;
	bson_t *reply;
	int i, rc;
	char key[16];
	const char *k;

	run_code("{\"drop\": \"k\"}");
	TT_EQ_INT(run_code("{\"createIndexes\": \"k\", \"indexes\": ["
	    "{\"key\": {\"a\": 1}, \"name\": \"a\"}, {\"key\": {\"a.b.c\": -1, \"z\": 1}, \"name\": \"abc\"},"
	    "{\"key\": {\"$**\": 1}, \"name\": \"all\"}, {\"key\": {\"s\": 1}, \"name\": \"s\", \"sparse\": true},"
	    "{\"key\": {\"p\": 1}, \"name\": \"p\", \"partialFilterExpression\": {\"p\": {\"$exists\": true}}},"
	    "{\"key\": {\"a.0\": 1}, \"name\": \"a0\"}, {\"key\": {\"$**\": \"text\"}, \"name\": \"txt\"},"
	    "{\"key\": {\"x\": \"hashed\"}, \"name\": \"xh\"}]}"), 0);
	/* deep nesting, big arrays, empty names, every type */
	cmd = bson_new();
	BSON_APPEND_UTF8(cmd, "insert", "k");
	BSON_APPEND_ARRAY_BEGIN(cmd, "documents", &arr);
	BSON_APPEND_DOCUMENT_BEGIN(&arr, "0", &d);
	BSON_APPEND_INT32(&d, "_id", 1);
	BSON_APPEND_ARRAY_BEGIN(&d, "a", &sub);
	for (i = 0; i < 2000; i++) {
		bson_uint32_to_string((uint32_t)i, &k, key, sizeof(key));
		BSON_APPEND_INT32(&sub, k, i % 7);
	}
	bson_append_array_end(&d, &sub);
	bson_append_document_end(&arr, &d);
	bson_append_array_end(cmd, &arr);
	reply = tm_bson_array_new(1);
	rc = engine_run_command(eng, cl, "test", cmd, reply, NULL);
	TT_EQ_INT(rc, 0);
	bson_destroy(reply);
	bson_free(reply);
	bson_destroy(cmd);
	TT_EQ_INT(run_code("{\"insert\": \"k\", \"documents\": ["
	    "{\"_id\": 2, \"a\": {\"b\": [{\"c\": [1, [2, 3], {\"d\": 4}]}, {\"c\": []}]}, \"\": 1, \"x\": {\"\": {\"\": 2}}},"
	    "{\"_id\": 3, \"a\": [[], {}, null, {\"$minKey\": 1}, {\"$maxKey\": 1}, {\"$numberDecimal\": \"NaN\"}], \"s\": null},"
	    "{\"_id\": 4, \"a\": {\"b\": {\"c\": {\"$regularExpression\": {\"pattern\": \"x\", \"options\": \"i\"}}}}, \"p\": [1, 2]},"
	    "{\"_id\": 5, \"a\": [{\"b\": 1}, {\"b\": {\"c\": [[[[1]]]]}}], \"z\": [1, 2]}]}"), 0);
	TT_EQ_INT(run_code("{\"find\": \"k\", \"filter\": {\"a\": {\"$in\": [1, null, [], {}]}}}"), 0);
	TT_EQ_INT(run_code("{\"find\": \"k\", \"filter\": {\"$text\": {\"$search\": \"x -y \\\"\\\" - \\\"a\"}},"
	    " \"projection\": {\"s\": {\"$meta\": \"textScore\"}}, \"sort\": {\"s\": {\"$meta\": \"textScore\"}}}"), 0);
	TT_EQ_INT(run_code("{\"find\": \"k\", \"filter\": {\"x\": {\"\": {\"\": 2}}}}"), 0);
	TT_EQ_INT(run_code("{\"find\": \"k\", \"filter\": {\"a.b.c\": {\"$gte\": {\"$minKey\": 1}}}}"), 0);
	TT_EQ_INT(run_code("{\"find\": \"k\", \"filter\": {\"a\": {\"$elemMatch\": {\"$gt\": {\"$numberDecimal\": \"NaN\"}}}}}"), 0);
	TT_EQ_INT(run_code("{\"explain\": {\"find\": \"k\", \"filter\": {\"$or\": [{\"a\": 1}, {\"s\": 2}, {\"p\": 1}]}, \"sort\": {\"z\": -1}}}"), 0);
	TT_EQ_INT(run_code("{\"update\": \"k\", \"updates\": [{\"q\": {\"a\": {\"$gte\": 0}}, \"u\": {\"$set\": {\"a\": 9}}, \"multi\": true}]}"), 0);
	TT_EQ_INT(run_code("{\"delete\": \"k\", \"deletes\": [{\"q\": {\"a\": 9}, \"limit\": 0}]}"), 0);
	TT_EQ_INT(run_code("{\"dropIndexes\": \"k\", \"index\": \"*\"}"), 0);
}

int
main(void)
{
	char *dir = tt_tmpdir("index-bad");
	engine_options_t o;
	terr_t err = TERR_INIT;

	memset(&o, 0, sizeof(o));
	o.storage.create = true;
	o.storage.in_memory = true;
	if (engine_open(dir, &o, &eng, &err) != 0)
		return 1;
	query_keygen_register(engine_storage(eng));
	cl = client_new(eng, NULL);
	TT_RUN(test_bad_commands);
	TT_RUN(test_awkward_documents);
	client_free(cl);
	engine_close(eng);
	tt_rmdir(dir);
	bson_free(dir);
	return tt_finish();
}
