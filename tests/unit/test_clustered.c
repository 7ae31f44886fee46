/*
 * test_clustered.c -- clustered collections (create {clusteredIndex}) end to
 * end through the command layer on a folder on disk: the catalog's view
 * (listCollections / listIndexes), writes through the clustered layout, a
 * randomized comparison of every query on a clustered collection with the
 * same query on a plain one, secondary index builds over the clustered
 * table (one and two threads), TTL by _id date, collMod of
 * expireAfterSeconds, explain's clustered stages, and the layout and
 * counters surviving a close and reopen.
 */
#include "tt.h"
#include "tt_embedded.h"

#include "commands/commands_private.h"
#include "common/mem.h"
#include "query/keygen.h"
#include "query/planner_ttl.h"

static engine_t *eng;
static client_t *cl;
static char *dir;

static bson_t *
run(const char *json, int *rc)
{
	bson_t *cmd = tt_json(json);
	bson_t *reply = tm_bson_array_new(1);

	*rc = engine_run_command(eng, cl, "cl", cmd, reply, NULL);
	bson_destroy(cmd);
	return reply;
}

static bool
tt_has(const bson_t *doc, const char *path)
{
	bson_iter_t f;

	return tt_get(doc, path, &f);
}

static int
run_code(const char *json)
{
	int rc;
	bson_t *r = run(json, &rc);

	tt_free_reply(r);
	return rc;
}

static int
run_err(const char *json)
{
	int rc;
	bson_t *r = run(json, &rc);
	int code = rc == 0 ? 0 : (int)tt_get_i64(r, "code");

	tt_free_reply(r);
	return code;
}

/* The whole result of a find (one batch: batchSize large) as JSON text. */
static char *
find_text(const char *coll, const char *rest)
{
	int rc;
	char *json = bson_strdup_printf("{\"find\": \"%s\", \"batchSize\": 100000%s%s}", coll, rest[0] ? ", " : "", rest);
	bson_t *r = run(json, &rc);
	char *t = tt_batch_text(r, rc, "none");

	tt_free_reply(r);
	bson_free(json);
	return t;
}

static void
open_engine(void)
{
	engine_options_t o;
	terr_t err = TERR_INIT;

	memset(&o, 0, sizeof(o));
	o.storage.create = true;
	if (engine_open(dir, &o, &eng, &err) != 0) {
		fprintf(stderr, "engine_open: %s\n", err.msg);
		exit(1);
	}
	query_keygen_register(engine_storage(eng));
	cl = client_new(eng, NULL);
}

static void
close_engine(void)
{
	client_free(cl);
	engine_close(eng);
}

static void
test_create_and_catalog(void)
{
	int rc;
	bson_t *r;

	TT_EQ_INT(run_code("{\"create\": \"c\", \"clusteredIndex\": {\"key\": {\"_id\": 1}, \"unique\": true}}"), 0);
	r = run("{\"listCollections\": 1, \"filter\": {\"name\": \"c\"}}", &rc);
	TT_EQ_INT(rc, 0);
	TT_EQ_STR(tt_get_str(r, "cursor.firstBatch.0.options.clusteredIndex.name"), "_id_");
	TT_EQ_INT(tt_get_i64(r, "cursor.firstBatch.0.options.clusteredIndex.v"), 2);
	TT_ASSERT(!tt_has(r, "cursor.firstBatch.0.idIndex"));
	tt_free_reply(r);
	r = run("{\"listIndexes\": \"c\"}", &rc);
	TT_EQ_INT(rc, 0);
	{
		char *t = tt_batch_text(r, rc, "none");
		TT_EQ_STR(t, "[ { \"v\" : 2, \"key\" : { \"_id\" : 1 }, \"name\" : \"_id_\", \"unique\" : true, \"clustered\" : true } ]");
		bson_free(t);
	}
	tt_free_reply(r);
	/* the same create again succeeds; other options collide */
	TT_EQ_INT(run_code("{\"create\": \"c\", \"clusteredIndex\": {\"key\": {\"_id\": 1}, \"unique\": true}}"), 0);
	TT_EQ_INT(run_err("{\"create\": \"c\"}"), 48);
	TT_EQ_INT(run_err("{\"create\": \"x\", \"clusteredIndex\": {\"key\": {\"_id\": 1}, \"unique\": false}}"), 5979700);
	TT_EQ_INT(run_err("{\"create\": \"x\", \"clusteredIndex\": {\"key\": {\"_id\": -1}, \"unique\": true}}"), 197);
	TT_EQ_INT(run_err("{\"create\": \"x\", \"clusteredIndex\": {\"key\": {\"_id\": 1, \"a\": 1}, \"unique\": true}}"), 197);
	TT_EQ_INT(run_err("{\"create\": \"x\", \"clusteredIndex\": {\"unique\": true}}"), 40414);
	TT_EQ_INT(run_err("{\"create\": \"x\", \"clusteredIndex\": {\"key\": 1, \"unique\": true}}"), 14);
	TT_EQ_INT(run_err("{\"create\": \"x\", \"clusteredIndex\": {\"key\": {\"_id\": 1}, \"unique\": true}, \"capped\": true}"), 6127800);
	TT_EQ_INT(run_err("{\"create\": \"x\", \"clusteredIndex\": {\"key\": {\"_id\": 1}, \"unique\": true}, \"idIndex\": {\"key\": {\"_id\": 1}, \"name\": \"_id_\"}}"), 72);
	TT_EQ_INT(run_err("{\"create\": \"x\", \"clusteredIndex\": {\"key\": {\"_id\": 1}, \"unique\": true}, \"expireAfterSeconds\": \"x\"}"), 14);
	r = run("{\"listCollections\": 1, \"filter\": {\"name\": \"x\"}}", &rc);
	TT_ASSERT(!tt_has(r, "cursor.firstBatch.0"));
	tt_free_reply(r);
}

static uint64_t rng = 12345;

static uint64_t
next_rand(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

/* A random _id of a few types (ints, doubles, strings, dates) so the
 * clustered order is the KeyString order across types. */
static char *
random_id(int i)
{
	switch (next_rand() % 4) {
	case 0: return bson_strdup_printf("%d", (int)(next_rand() % 100000) * 10 + i % 10);
	case 1: return bson_strdup_printf("%d.5", (int)(next_rand() % 1000));
	case 2: return bson_strdup_printf("\"s%06d_%d\"", (int)(next_rand() % 100000), i);
	default: return bson_strdup_printf("{\"$date\": {\"$numberLong\": \"%lld\"}}", (long long)(next_rand() % 1000000) * 1000 + i);
	}
}

/* Same documents in a clustered and a plain collection: every query
 * answers the same, in the same order where the query sorts. */
static void
test_random_equivalence(void)
{
	int i, n = 600;

	run_code("{\"drop\": \"rc\"}");
	run_code("{\"drop\": \"rp\"}");
	TT_EQ_INT(run_code("{\"create\": \"rc\", \"clusteredIndex\": {\"key\": {\"_id\": 1}, \"unique\": true}}"), 0);
	TT_EQ_INT(run_code("{\"create\": \"rp\"}"), 0);
	TT_EQ_INT(run_code("{\"createIndexes\": \"rc\", \"indexes\": [{\"key\": {\"g\": 1}, \"name\": \"g_1\"}]}"), 0);
	for (i = 0; i < n; i++) {
		char *id = random_id(i);
		int g = (int)(next_rand() % 20);
		char *a = bson_strdup_printf("{\"insert\": \"rc\", \"documents\": [{\"_id\": %s, \"g\": %d, \"i\": %d}]}", id, g, i);
		char *b = bson_strdup_printf("{\"insert\": \"rp\", \"documents\": [{\"_id\": %s, \"g\": %d, \"i\": %d}]}", id, g, i);
		int ra = run_err(a), rb = run_err(b);
		TT_EQ_INT(ra, rb);   /* a duplicate random _id fails both ways */
		bson_free(a);
		bson_free(b);
		bson_free(id);
	}
	/* updates and deletes */
	TT_EQ_INT(run_code("{\"update\": \"rc\", \"updates\": [{\"q\": {\"g\": {\"$lt\": 5}}, \"u\": {\"$inc\": {\"g\": 100}}, \"multi\": true}]}"), 0);
	TT_EQ_INT(run_code("{\"update\": \"rp\", \"updates\": [{\"q\": {\"g\": {\"$lt\": 5}}, \"u\": {\"$inc\": {\"g\": 100}}, \"multi\": true}]}"), 0);
	TT_EQ_INT(run_code("{\"delete\": \"rc\", \"deletes\": [{\"q\": {\"g\": 7}, \"limit\": 0}]}"), 0);
	TT_EQ_INT(run_code("{\"delete\": \"rp\", \"deletes\": [{\"q\": {\"g\": 7}, \"limit\": 0}]}"), 0);
	{
		static const char *const queries[] = {
			"\"sort\": {\"_id\": 1}",
			"\"sort\": {\"_id\": -1}",
			"\"filter\": {\"_id\": {\"$gte\": 5000, \"$lt\": 600000}}, \"sort\": {\"_id\": 1}",
			"\"filter\": {\"_id\": {\"$gt\": \"s050000\"}}, \"sort\": {\"_id\": -1}",
			"\"filter\": {\"_id\": {\"$lt\": {\"$date\": {\"$numberLong\": \"500000000\"}}}}, \"sort\": {\"_id\": 1}",
			"\"filter\": {\"g\": {\"$gte\": 100}}, \"sort\": {\"_id\": 1}",
			"\"filter\": {\"g\": 3}, \"sort\": {\"_id\": 1}",
			"\"filter\": {\"g\": {\"$in\": [8, 9, 104]}}, \"sort\": {\"i\": 1}",
			"\"filter\": {\"$or\": [{\"_id\": {\"$lt\": 100}}, {\"g\": 12}]}, \"sort\": {\"i\": 1}",
			"\"filter\": {\"i\": {\"$mod\": [7, 0]}}, \"sort\": {\"_id\": 1}, \"skip\": 3, \"limit\": 20",
			"\"filter\": {\"_id\": {\"$type\": \"string\"}}, \"sort\": {\"_id\": 1}, \"projection\": {\"g\": 1}",
		};
		for (size_t q = 0; q < sizeof(queries) / sizeof(queries[0]); q++) {
			char *a = find_text("rc", queries[q]), *b = find_text("rp", queries[q]);
			if (strcmp(a, b) != 0)
				TT_FAIL_("query %s differs", queries[q]);
			bson_free(a);
			bson_free(b);
		}
	}
	/* natural order is _id order on the clustered collection */
	{
		char *a = find_text("rc", ""), *b = find_text("rp", "\"sort\": {\"_id\": 1}");
		TT_EQ_STR(a, b);
		bson_free(a);
		bson_free(b);
	}
	/* point lookups */
	for (i = 0; i < 50; i++) {
		char *q = bson_strdup_printf("\"filter\": {\"i\": %d}", i * 7);
		char *a = find_text("rc", q), *b = find_text("rp", q);
		TT_EQ_STR(a, b);
		bson_free(a);
		bson_free(b);
		bson_free(q);
	}
}

/* An index created on a filled clustered collection: both the sorted
 * (two threads past 4096 documents) and the explain of its use. */
static void
test_index_build(void)
{
	bson_string_t *s = bson_string_new("{\"insert\": \"big\", \"documents\": [");
	int rc, i;
	bson_t *r;

	run_code("{\"drop\": \"big\"}");
	TT_EQ_INT(run_code("{\"create\": \"big\", \"clusteredIndex\": {\"key\": {\"_id\": 1}, \"unique\": true, \"name\": \"cid\"}}"), 0);
	for (i = 0; i < 5000; i++)
		bson_string_append_printf(s, "%s{\"_id\": %d, \"k\": %d}", i ? ", " : "", 5000 - i, i % 97);
	bson_string_append(s, "]}");
	TT_EQ_INT(run_code(s->str), 0);
	bson_string_free(s, true);
	TT_EQ_INT(run_code("{\"createIndexes\": \"big\", \"indexes\": [{\"key\": {\"k\": 1}, \"name\": \"k_1\"}]}"), 0);
	r = run("{\"count\": \"big\", \"query\": {\"k\": 5}}", &rc);
	TT_EQ_INT(tt_get_i64(r, "n"), 52);
	tt_free_reply(r);
	r = run("{\"explain\": {\"find\": \"big\", \"filter\": {\"k\": 5}}}", &rc);
	TT_EQ_STR(tt_get_str(r, "queryPlanner.winningPlan.stage"), "FETCH");
	TT_EQ_STR(tt_get_str(r, "queryPlanner.winningPlan.inputStage.indexName"), "k_1");
	tt_free_reply(r);
	r = run("{\"explain\": {\"find\": \"big\", \"filter\": {\"_id\": {\"$gt\": 10, \"$lte\": 20}}}, \"verbosity\": \"executionStats\"}", &rc);
	TT_EQ_STR(tt_get_str(r, "queryPlanner.winningPlan.stage"), "CLUSTERED_IXSCAN");
	TT_EQ_INT(tt_get_i64(r, "queryPlanner.winningPlan.minRecord"), 10);
	TT_EQ_INT(tt_get_i64(r, "queryPlanner.winningPlan.maxRecord"), 20);
	TT_EQ_INT(tt_get_i64(r, "executionStats.nReturned"), 10);
	tt_free_reply(r);
	r = run("{\"explain\": {\"find\": \"big\", \"filter\": {\"_id\": 42}}}", &rc);
	TT_EQ_STR(tt_get_str(r, "queryPlanner.winningPlan.stage"), "EXPRESS_CLUSTERED_IXSCAN");
	tt_free_reply(r);
	/* the clustered index stays */
	TT_EQ_INT(run_err("{\"dropIndexes\": \"big\", \"index\": \"cid\"}"), 5979800);
	TT_EQ_INT(run_err("{\"dropIndexes\": \"big\", \"index\": {\"_id\": 1}}"), 5979800);
	TT_EQ_INT(run_code("{\"dropIndexes\": \"big\", \"index\": \"*\"}"), 0);
	r = run("{\"find\": \"big\", \"filter\": {\"_id\": 4999}}", &rc);
	TT_EQ_INT(tt_get_i64(r, "cursor.firstBatch.0.k"), 1);
	tt_free_reply(r);
}

/* expireAfterSeconds: documents whose _id is an older date go; other _id
 * types stay.  collMod changes and turns it off. */
static void
test_ttl(void)
{
	terr_t err = TERR_INIT;
	int64_t deleted = 0;
	int rc;
	bson_t *r;

	run_code("{\"drop\": \"t\"}");
	TT_EQ_INT(run_code("{\"create\": \"t\", \"clusteredIndex\": {\"key\": {\"_id\": 1}, \"unique\": true}, \"expireAfterSeconds\": 60}"), 0);
	TT_EQ_INT(run_code("{\"insert\": \"t\", \"documents\": ["
	    "{\"_id\": {\"$date\": {\"$numberLong\": \"1000\"}}},"
	    "{\"_id\": {\"$date\": {\"$numberLong\": \"99000000\"}}},"
	    "{\"_id\": {\"$date\": {\"$numberLong\": \"100000000\"}}},"
	    "{\"_id\": 5}, {\"_id\": \"x\"}]}"), 0);
	r = run("{\"listIndexes\": \"t\"}", &rc);
	TT_EQ_INT(tt_get_i64(r, "cursor.firstBatch.0.expireAfterSeconds"), 60);
	tt_free_reply(r);
	/* now = 100000 s: cutoff 99940000 ms */
	TT_EQ_INT(ttl_pass(engine_storage(eng), 100000000, &deleted, &err), 0);
	TT_EQ_INT(deleted, 2);
	r = run("{\"count\": \"t\"}", &rc);
	TT_EQ_INT(tt_get_i64(r, "n"), 3);
	tt_free_reply(r);
	TT_EQ_INT(run_code("{\"collMod\": \"t\", \"expireAfterSeconds\": \"off\"}"), 0);
	deleted = 0;
	TT_EQ_INT(ttl_pass(engine_storage(eng), 200000000, &deleted, &err), 0);
	TT_EQ_INT(deleted, 0);
	r = run("{\"listIndexes\": \"t\"}", &rc);
	TT_ASSERT(!tt_has(r, "cursor.firstBatch.0.expireAfterSeconds"));
	tt_free_reply(r);
	TT_EQ_INT(run_code("{\"collMod\": \"t\", \"expireAfterSeconds\": 10}"), 0);
	TT_EQ_INT(ttl_pass(engine_storage(eng), 200000000, &deleted, &err), 0);
	TT_EQ_INT(deleted, 1);
	TT_EQ_INT(run_err("{\"collMod\": \"t\", \"expireAfterSeconds\": -5}"), 72);
	TT_EQ_INT(run_err("{\"collMod\": \"t\", \"expireAfterSeconds\": \"on\"}"), 72);
	TT_EQ_INT(run_err("{\"collMod\": \"rp\", \"expireAfterSeconds\": 5}"), 72);
	/* the largest expireAfterSeconds: nothing expires, nothing overflows */
	TT_EQ_INT(run_code("{\"collMod\": \"t\", \"expireAfterSeconds\": {\"$numberLong\": \"9223372036854775807\"}}"), 0);
	deleted = 0;
	TT_EQ_INT(ttl_pass(engine_storage(eng), 200000000, &deleted, &err), 0);
	TT_EQ_INT(deleted, 0);
	terr_clear(&err);
}

/* Close and reopen: the clustered layout, its counts (saved sizes and, for
 * the crash path, counted from the clustered table) and its secondary
 * index are there. */
static void
test_reopen(void)
{
	char *before = find_text("rc", "\"filter\": {\"g\": {\"$gte\": 100}}");
	char *after;
	int rc;
	bson_t *r;

	close_engine();
	open_engine();
	after = find_text("rc", "\"filter\": {\"g\": {\"$gte\": 100}}");
	TT_EQ_STR(after, before);
	bson_free(before);
	bson_free(after);
	r = run("{\"count\": \"big\"}", &rc);
	TT_EQ_INT(tt_get_i64(r, "n"), 5000);
	tt_free_reply(r);
	r = run("{\"collStats\": \"big\"}", &rc);
	TT_EQ_INT(rc, 0);
	TT_EQ_INT(tt_get_i64(r, "count"), 5000);
	TT_ASSERT(tt_get_i64(r, "size") > 5000 * 20);
	tt_free_reply(r);
	r = run("{\"find\": \"big\", \"filter\": {\"_id\": 1}}", &rc);
	TT_EQ_INT(tt_get_i64(r, "cursor.firstBatch.0.k"), 4999 % 97);
	tt_free_reply(r);
}

int
main(void)
{
	dir = tt_tmpdir("clustered");
	open_engine();
	TT_RUN(test_create_and_catalog);
	TT_RUN(test_random_equivalence);
	TT_RUN(test_index_build);
	TT_RUN(test_ttl);
	TT_RUN(test_reopen);
	close_engine();
	tt_rmdir(dir);
	bson_free(dir);
	return tt_finish();
}
