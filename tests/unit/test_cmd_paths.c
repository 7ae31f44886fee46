/*
 * test_cmd_paths.c -- what every command pays on its way through the
 * dispatcher, at the corners the issue-23 rewrites touched: `top`'s
 * per-namespace counters behind the namespace hash (many namespaces, two
 * databases, names sharing prefixes, a getMore counted under its
 * collection), the plan summary built by hand (compound, descending and
 * string key patterns, the express path), and cursor batches written raw
 * (array keys past 9 and 99, a getMore's nextBatch, an empty batch, a
 * batch cut before 16 MiB).
 */
#include "tt.h"

#include <string.h>

#include "tt_embedded.h"

static tamga_t *db;

static void
run_ok(const char *dbname, const char *json)
{
	int rc;
	bson_t *r = tt_run_json(db, dbname, json, &rc);

	if (rc != 0) {
		char *j = bson_as_relaxed_extended_json(r, NULL);
		TT_FAIL_("%s -> %s", json, j);
		bson_free(j);
	}
	tt_free_reply(r);
}

static int64_t
top_count(const bson_t *top, const char *ns, const char *what)
{
	char path[256];
	bson_iter_t it, f;

	snprintf(path, sizeof(path), "%s.count", what);
	/* the namespace holds dots: find it among totals' fields first */
	if (!bson_iter_init(&it, top) || !bson_iter_find_descendant(&it, "totals", &f) ||
	    !BSON_ITER_HOLDS_DOCUMENT(&f) || !bson_iter_recurse(&f, &it) || !bson_iter_find(&it, ns) ||
	    !BSON_ITER_HOLDS_DOCUMENT(&it) || !bson_iter_recurse(&it, &f) || !bson_iter_find_descendant(&f, path, &it))
		return -1;
	return bson_iter_as_int64(&it);
}

/* 60 namespaces in two databases ("a", "ab"; collections "c<i>" and
 * "c<i>x"): each counted on its own row, however many there are */
static void
test_top_many_namespaces(void)
{
	char cmd[256], ns[64];
	bson_t *top;
	int rc;

	for (int i = 0; i < 30; i++) {
		const char *d = i % 2 ? "ab" : "a";
		snprintf(cmd, sizeof(cmd), "{\"insert\": \"c%d\", \"documents\": [{\"_id\": 1}, {\"_id\": 2}, {\"_id\": 3}]}", i);
		run_ok(d, cmd);
		snprintf(cmd, sizeof(cmd), "{\"insert\": \"c%dx\", \"documents\": [{\"_id\": 1}]}", i);
		run_ok(d, cmd);
		for (int k = 0; k <= i % 3; k++) {
			snprintf(cmd, sizeof(cmd), "{\"find\": \"c%d\", \"filter\": {\"_id\": 2}}", i);
			run_ok(d, cmd);
		}
	}
	top = tt_run_json(db, "admin", "{\"top\": 1}", &rc);
	TT_EQ_INT(rc, 0);
	for (int i = 0; i < 30; i++) {
		const char *d = i % 2 ? "ab" : "a";
		snprintf(ns, sizeof(ns), "%s.c%d", d, i);
		TT_EQ_INT(top_count(top, ns, "insert"), 1);
		TT_EQ_INT(top_count(top, ns, "queries"), i % 3 + 1);
		TT_EQ_INT(top_count(top, ns, "total"), i % 3 + 2);
		TT_EQ_INT(top_count(top, ns, "readLock"), i % 3 + 1);
		TT_EQ_INT(top_count(top, ns, "writeLock"), 1);
		snprintf(ns, sizeof(ns), "%s.c%dx", d, i);
		TT_EQ_INT(top_count(top, ns, "insert"), 1);
		TT_EQ_INT(top_count(top, ns, "queries"), 0);
	}
	/* never written: no row */
	TT_EQ_INT(top_count(top, "a.c1", "total"), -1);
	tt_free_reply(top);

	/* a getMore is counted under the collection its cursor reads */
	{
		bson_t *r = tt_run_json(db, "a", "{\"find\": \"c0\", \"batchSize\": 1}", &rc);
		int64_t id = tt_get_i64(r, "cursor.id");

		TT_EQ_INT(rc, 0);
		TT_ASSERT(id != 0);
		tt_free_reply(r);
		snprintf(cmd, sizeof(cmd), "{\"getMore\": {\"$numberLong\": \"%lld\"}, \"collection\": \"c0\"}",
		    (long long)id);
		run_ok("a", cmd);
		top = tt_run_json(db, "admin", "{\"top\": 1}", &rc);
		TT_EQ_INT(top_count(top, "a.c0", "getmore"), 1);
		TT_EQ_INT(top_count(top, "a.c0", "queries"), 2);
		tt_free_reply(top);
	}
}

static const char *
last_plan_summary(const char *dbname, bson_t **keep)
{
	int rc;

	*keep = tt_run_json(db, dbname,
	    "{\"find\": \"system.profile\", \"filter\": {\"op\": \"query\"}, \"sort\": {\"$natural\": -1}, \"limit\": 1}",
	    &rc);
	return tt_get_str(*keep, "cursor.firstBatch.0.planSummary");
}

/* the profiler's planSummary: mongod's "IXSCAN { a: 1, b: -1 }" */
static void
test_plan_summary(void)
{
	bson_t *r;

	run_ok("p", "{\"insert\": \"q\", \"documents\": [{\"_id\": 1, \"a\": 1, \"b\": 2, \"t\": \"x\"}]}");
	run_ok("p", "{\"createIndexes\": \"q\", \"indexes\": [{\"key\": {\"a\": 1, \"b\": -1}, \"name\": \"ab\"}, "
	    "{\"key\": {\"t\": \"hashed\"}, \"name\": \"th\"}]}");
	run_ok("p", "{\"profile\": 2}");
	run_ok("p", "{\"find\": \"q\", \"filter\": {\"a\": 1, \"b\": 2}}");
	TT_EQ_STR(last_plan_summary("p", &r), "IXSCAN { a: 1, b: -1 }");
	tt_free_reply(r);
	run_ok("p", "{\"find\": \"q\", \"filter\": {\"t\": \"x\"}}");
	TT_EQ_STR(last_plan_summary("p", &r), "IXSCAN { t: \"hashed\" }");
	tt_free_reply(r);
	run_ok("p", "{\"find\": \"q\", \"filter\": {\"_id\": 1}}");
	TT_EQ_STR(last_plan_summary("p", &r), "EXPRESS_IXSCAN { _id: 1 }");
	tt_free_reply(r);
	run_ok("p", "{\"find\": \"q\", \"filter\": {\"zz\": 1}}");
	TT_EQ_STR(last_plan_summary("p", &r), "COLLSCAN");
	tt_free_reply(r);
	run_ok("p", "{\"profile\": 0}");
}

/* Every element of arr has the key "<i>" in order and holds {_id: first + i}. */
static int
check_batch(const bson_t *reply, const char *which, int first)
{
	bson_iter_t it, a;
	char key[16];
	int n = 0;

	if (!bson_iter_init(&it, reply) || !bson_iter_find_descendant(&it, which, &a) || !BSON_ITER_HOLDS_ARRAY(&a) ||
	    !bson_iter_recurse(&a, &it))
		return -1;
	while (bson_iter_next(&it)) {
		bson_iter_t d;
		snprintf(key, sizeof(key), "%d", n);
		if (strcmp(bson_iter_key(&it), key) != 0 || !BSON_ITER_HOLDS_DOCUMENT(&it) || !bson_iter_recurse(&it, &d) ||
		    !bson_iter_find(&d, "_id") || bson_iter_as_int64(&d) != first + n)
			return -1;
		n++;
	}
	return n;
}

/* batches past 10 and 100 documents, a nextBatch, an empty batch */
static void
test_batches_raw(void)
{
	char cmd[256];
	bson_t *r;
	int rc;
	int64_t id;

	for (int i = 0; i < 250; i += 50) {
		bson_t *ins = bson_new(), docs, d;
		char k[16];
		BSON_APPEND_UTF8(ins, "insert", "b");
		bson_append_array_begin(ins, "documents", -1, &docs);
		for (int j = 0; j < 50; j++) {
			snprintf(k, sizeof(k), "%d", j);
			bson_append_document_begin(&docs, k, -1, &d);
			BSON_APPEND_INT32(&d, "_id", i + j);
			BSON_APPEND_UTF8(&d, "pad", j % 2 ? "x" : "a longer string to vary the sizes");
			bson_append_document_end(&docs, &d);
		}
		bson_append_array_end(ins, &docs);
		bson_t *rep = tt_run_bson(db, "bt", ins, &rc);
		TT_EQ_INT(rc, 0);
		tt_free_reply(rep);
		bson_destroy(ins);
	}
	r = tt_run_json(db, "bt", "{\"find\": \"b\", \"sort\": {\"_id\": 1}, \"batchSize\": 120}", &rc);
	TT_EQ_INT(rc, 0);
	TT_EQ_INT(check_batch(r, "cursor.firstBatch", 0), 120);
	id = tt_get_i64(r, "cursor.id");
	TT_EQ_STR(tt_get_str(r, "cursor.ns"), "bt.b");
	tt_free_reply(r);
	snprintf(cmd, sizeof(cmd), "{\"getMore\": {\"$numberLong\": \"%lld\"}, \"collection\": \"b\"}", (long long)id);
	r = tt_run_json(db, "bt", cmd, &rc);
	TT_EQ_INT(rc, 0);
	TT_EQ_INT(check_batch(r, "cursor.nextBatch", 120), 130);
	TT_EQ_INT(tt_get_i64(r, "cursor.id"), 0);
	tt_free_reply(r);
	r = tt_run_json(db, "bt", "{\"find\": \"b\", \"filter\": {\"_id\": -1}}", &rc);
	TT_EQ_INT(rc, 0);
	TT_EQ_INT(check_batch(r, "cursor.firstBatch", 0), 0);
	TT_ASSERT(bson_validate(r, BSON_VALIDATE_NONE, NULL));
	tt_free_reply(r);
}

/* 20 documents of 1 MB: the first batch stops before 16 MiB, the document
 * that did not fit starts the next batch */
static void
test_batches_16mb(void)
{
	char *big = bson_malloc(1000001);
	char cmd[256];
	bson_t *r;
	int rc, n1, n2;
	int64_t id;

	memset(big, 'x', 1000000);
	big[1000000] = '\0';
	for (int i = 0; i < 20; i++) {
		bson_t *ins = bson_new(), docs, d;
		BSON_APPEND_UTF8(ins, "insert", "big");
		bson_append_array_begin(ins, "documents", -1, &docs);
		bson_append_document_begin(&docs, "0", -1, &d);
		BSON_APPEND_INT32(&d, "_id", i);
		BSON_APPEND_UTF8(&d, "pad", big);
		bson_append_document_end(&docs, &d);
		bson_append_array_end(ins, &docs);
		bson_t *rep = tt_run_bson(db, "bt", ins, &rc);
		TT_EQ_INT(rc, 0);
		tt_free_reply(rep);
		bson_destroy(ins);
	}
	bson_free(big);
	r = tt_run_json(db, "bt", "{\"find\": \"big\", \"sort\": {\"_id\": 1}}", &rc);
	TT_EQ_INT(rc, 0);
	n1 = check_batch(r, "cursor.firstBatch", 0);
	TT_ASSERT(n1 >= 10 && n1 < 17);
	TT_ASSERT(r->len <= 16 * 1024 * 1024 + 16 * 1024);
	id = tt_get_i64(r, "cursor.id");
	tt_free_reply(r);
	snprintf(cmd, sizeof(cmd), "{\"getMore\": {\"$numberLong\": \"%lld\"}, \"collection\": \"big\"}", (long long)id);
	r = tt_run_json(db, "bt", cmd, &rc);
	TT_EQ_INT(rc, 0);
	n2 = check_batch(r, "cursor.nextBatch", n1);
	TT_EQ_INT(n1 + n2, 20);
	tt_free_reply(r);
}

int
main(void)
{
	char *dir = tt_tmpdir("cmd_paths");

	if ((db = tt_open_new(dir)) == NULL)
		return 1;
	TT_RUN(test_top_many_namespaces);
	TT_RUN(test_plan_summary);
	TT_RUN(test_batches_raw);
	TT_RUN(test_batches_16mb);
	tt_close_rm(db, dir);
	return tt_finish();
}
