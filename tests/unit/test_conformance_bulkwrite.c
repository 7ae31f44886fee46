/*
 * test_conformance_bulkwrite.c -- the client bulkWrite command and the
 * CRUD-spec behaviours the conformance run found missing, end to end
 * through the embedded API: bulkWrite's cursor reply and summary counts,
 * ordered/unordered errors, errorsOnly, let, upsert and sort; update with
 * sort; findAndModify's fields; a command's let evaluated once; the _id
 * storage rule for '$'-prefixed fields; malformed bulkWrite requests
 * refused before any write; the local session cache ($listLocalSessions).
 */
#include "tt.h"

#include "tt_embedded.h"

static tamga_t *db;

static bson_t *
run_in(const char *dbname, const char *json, int *rc)
{
	return tt_run_json(db, dbname, json, rc);
}

static bson_t *
run(const char *json, int *rc)
{
	return run_in("admin", json, rc);
}

static bool
has(const bson_t *doc, const char *path)
{
	bson_iter_t f;

	return tt_get(doc, path, &f);
}

static void
reset(const char *coll)
{
	char buf[256];
	int rc;

	snprintf(buf, sizeof(buf), "{\"drop\": \"%s\"}", coll);
	tt_free_reply(run_in("bw", buf, &rc));
	snprintf(buf, sizeof(buf),
	    "{\"insert\": \"%s\", \"documents\": [{\"_id\": 1, \"x\": 11}, {\"_id\": 2, \"x\": 22}, {\"_id\": 3, \"x\": 33}]}",
	    coll);
	tt_free_reply(run_in("bw", buf, &rc));
}

static void
test_mixed_ops(void)
{
	int rc;
	bson_t *r;

	reset("c");
	tt_free_reply(run_in("bw2", "{\"drop\": \"d\"}", &rc));
	r = run("{\"bulkWrite\": 1, \"ops\": ["
	    "{\"insert\": 0, \"document\": {\"_id\": 4, \"x\": 44}},"
	    "{\"update\": 0, \"filter\": {\"_id\": 1}, \"updateMods\": {\"$inc\": {\"x\": 1}}},"
	    "{\"update\": 0, \"filter\": {\"_id\": {\"$gt\": 1}}, \"updateMods\": {\"$inc\": {\"x\": 2}}, \"multi\": true},"
	    "{\"update\": 0, \"filter\": {\"_id\": 9}, \"updateMods\": {\"x\": 99}, \"upsert\": true},"
	    "{\"delete\": 0, \"filter\": {\"_id\": 4}},"
	    "{\"insert\": 1, \"document\": {\"_id\": 1}}],"
	    "\"nsInfo\": [{\"ns\": \"bw.c\"}, {\"ns\": \"bw2.d\"}]}", &rc);
	TT_EQ_INT(rc, 0);
	TT_EQ_INT(tt_get_i64(r, "nErrors"), 0);
	TT_EQ_INT(tt_get_i64(r, "nInserted"), 2);
	TT_EQ_INT(tt_get_i64(r, "nMatched"), 4);
	TT_EQ_INT(tt_get_i64(r, "nModified"), 4);
	TT_EQ_INT(tt_get_i64(r, "nUpserted"), 1);
	TT_EQ_INT(tt_get_i64(r, "nDeleted"), 1);
	TT_EQ_INT(tt_get_i64(r, "cursor.id"), 0);
	TT_EQ_STR(tt_get_str(r, "cursor.ns"), "admin.$cmd.bulkWrite");
	TT_EQ_INT(tt_get_i64(r, "cursor.firstBatch.0.idx"), 0);
	TT_EQ_INT(tt_get_i64(r, "cursor.firstBatch.0.n"), 1);
	TT_EQ_INT(tt_get_i64(r, "cursor.firstBatch.2.n"), 3);
	TT_EQ_INT(tt_get_i64(r, "cursor.firstBatch.2.nModified"), 3);
	TT_EQ_INT(tt_get_i64(r, "cursor.firstBatch.3.n"), 1);
	TT_EQ_INT(tt_get_i64(r, "cursor.firstBatch.3.nModified"), 0);
	TT_EQ_INT(tt_get_i64(r, "cursor.firstBatch.3.upserted._id"), 9);
	TT_ASSERT(!has(r, "cursor.firstBatch.4.nModified"));
	TT_EQ_INT(tt_get_i64(r, "cursor.firstBatch.5.idx"), 5);
	tt_free_reply(r);
	/* the second namespace was created by its insert */
	r = run_in("bw2", "{\"count\": \"d\"}", &rc);
	TT_EQ_INT(tt_get_i64(r, "n"), 1);
	tt_free_reply(r);
	r = run_in("bw", "{\"find\": \"c\", \"filter\": {\"_id\": 9}}", &rc);
	TT_EQ_INT(tt_get_i64(r, "cursor.firstBatch.0.x"), 99);
	tt_free_reply(r);
}

static void
test_errors(void)
{
	int rc;
	bson_t *r;
	static const char *ops =
	    "\"ops\": [{\"insert\": 0, \"document\": {\"_id\": 1}}, {\"insert\": 0, \"document\": {\"_id\": 7}},"
	    "{\"delete\": 0, \"filter\": {\"$expr\": {\"$eq\": [\"$_id\", \"$$nope\"]}}},"
	    "{\"delete\": 0, \"filter\": {\"_id\": 2}}], \"nsInfo\": [{\"ns\": \"bw.c\"}]";
	char buf[1024];

	/* ordered: stops at the duplicate key */
	reset("c");
	snprintf(buf, sizeof(buf), "{\"bulkWrite\": 1, %s}", ops);
	r = run(buf, &rc);
	TT_EQ_INT(rc, 0);
	TT_EQ_INT(tt_get_i64(r, "nErrors"), 1);
	TT_EQ_INT(tt_get_i64(r, "nInserted"), 0);
	TT_EQ_INT(tt_get_i64(r, "cursor.firstBatch.0.ok"), 0);
	TT_EQ_INT(tt_get_i64(r, "cursor.firstBatch.0.idx"), 0);
	TT_EQ_INT(tt_get_i64(r, "cursor.firstBatch.0.code"), 11000);
	TT_ASSERT(has(r, "cursor.firstBatch.0.keyValue"));
	TT_ASSERT(!has(r, "cursor.firstBatch.1"));
	tt_free_reply(r);

	/* unordered: every op runs; errorsOnly lists the two failures only */
	reset("c");
	snprintf(buf, sizeof(buf), "{\"bulkWrite\": 1, %s, \"ordered\": false, \"errorsOnly\": true}", ops);
	r = run(buf, &rc);
	TT_EQ_INT(rc, 0);
	TT_EQ_INT(tt_get_i64(r, "nErrors"), 2);
	TT_EQ_INT(tt_get_i64(r, "nInserted"), 1);
	TT_EQ_INT(tt_get_i64(r, "nDeleted"), 1);
	TT_EQ_INT(tt_get_i64(r, "cursor.firstBatch.0.idx"), 0);
	TT_EQ_INT(tt_get_i64(r, "cursor.firstBatch.1.idx"), 2);
	TT_EQ_INT(tt_get_i64(r, "cursor.firstBatch.1.code"), 17276);
	TT_ASSERT(!has(r, "cursor.firstBatch.2"));
	tt_free_reply(r);

	/* a small cursor batch leaves the rest to getMore */
	reset("c");
	snprintf(buf, sizeof(buf), "{\"bulkWrite\": 1, %s, \"ordered\": false, \"cursor\": {\"batchSize\": 1}}", ops);
	r = run(buf, &rc);
	TT_EQ_INT(rc, 0);
	TT_ASSERT(tt_get_i64(r, "cursor.id") != 0);
	TT_ASSERT(!has(r, "cursor.firstBatch.1"));
	{
		char gm[128];
		bson_t *g;
		snprintf(gm, sizeof(gm), "{\"getMore\": {\"$numberLong\": \"%lld\"}, \"collection\": \"$cmd.bulkWrite\"}",
		    (long long)tt_get_i64(r, "cursor.id"));
		g = run(gm, &rc);
		TT_EQ_INT(rc, 0);
		TT_EQ_INT(tt_get_i64(g, "cursor.nextBatch.0.idx"), 1);
		TT_EQ_INT(tt_get_i64(g, "cursor.nextBatch.2.idx"), 3);
		tt_free_reply(g);
	}
	tt_free_reply(r);
}

static void
test_let_and_sort(void)
{
	int rc;
	bson_t *r;

	reset("c");
	/* let variables are expressions, evaluated once */
	r = run("{\"bulkWrite\": 1, \"ops\": [{\"update\": 0, \"filter\": {\"$expr\": {\"$eq\": [\"$_id\", \"$$id\"]}},"
	    "\"updateMods\": [{\"$set\": {\"y\": \"$$y\"}}]}], \"nsInfo\": [{\"ns\": \"bw.c\"}],"
	    "\"let\": {\"id\": 2, \"y\": {\"$literal\": \"$bar\"}}}", &rc);
	TT_EQ_INT(tt_get_i64(r, "nModified"), 1);
	tt_free_reply(r);
	r = run_in("bw", "{\"find\": \"c\", \"filter\": {\"_id\": 2}}", &rc);
	TT_EQ_STR(tt_get_str(r, "cursor.firstBatch.0.y"), "$bar");
	tt_free_reply(r);

	/* sort picks the document an updateOne changes */
	r = run("{\"bulkWrite\": 1, \"ops\": [{\"update\": 0, \"filter\": {\"_id\": {\"$gt\": 1}},"
	    "\"sort\": {\"_id\": -1}, \"updateMods\": {\"$inc\": {\"x\": 1}}}], \"nsInfo\": [{\"ns\": \"bw.c\"}]}", &rc);
	TT_EQ_INT(tt_get_i64(r, "nModified"), 1);
	tt_free_reply(r);
	r = run_in("bw", "{\"find\": \"c\", \"filter\": {\"_id\": 3}}", &rc);
	TT_EQ_INT(tt_get_i64(r, "cursor.firstBatch.0.x"), 34);
	tt_free_reply(r);

	/* the update command: sort, and sort with multi refused */
	r = run_in("bw", "{\"update\": \"c\", \"updates\": [{\"q\": {}, \"sort\": {\"x\": 1}, \"u\": {\"$set\": {\"s\": 1}}}]}",
	    &rc);
	TT_EQ_INT(tt_get_i64(r, "nModified"), 1);
	tt_free_reply(r);
	r = run_in("bw", "{\"find\": \"c\", \"filter\": {\"s\": 1}}", &rc);
	TT_EQ_INT(tt_get_i64(r, "cursor.firstBatch.0._id"), 1);
	tt_free_reply(r);
	r = run_in("bw", "{\"update\": \"c\", \"updates\": [{\"q\": {}, \"sort\": {\"x\": 1}, \"multi\": true,"
	    "\"u\": {\"$set\": {\"s\": 2}}}]}", &rc);
	TT_EQ_INT(tt_get_i64(r, "code"), 9);
	TT_EQ_STR(tt_get_str(r, "errmsg"), "Cannot specify sort with multi=true");
	tt_free_reply(r);
}

static void
test_find_and_modify_fields(void)
{
	int rc;
	bson_t *r;

	reset("c");
	r = run_in("bw", "{\"findAndModify\": \"c\", \"query\": {\"_id\": 2}, \"update\": {\"$inc\": {\"x\": 1}},"
	    "\"new\": true, \"fields\": {\"_id\": 0, \"x\": 1}}", &rc);
	TT_EQ_INT(rc, 0);
	TT_EQ_INT(tt_get_i64(r, "value.x"), 23);
	TT_ASSERT(!has(r, "value._id"));
	tt_free_reply(r);
	r = run_in("bw", "{\"findAndModify\": \"c\", \"query\": {\"_id\": 3}, \"remove\": true, \"fields\": {\"x\": 0}}", &rc);
	TT_EQ_INT(tt_get_i64(r, "value._id"), 3);
	TT_ASSERT(!has(r, "value.x"));
	tt_free_reply(r);
}

static void
test_id_storage_rule(void)
{
	int rc;
	bson_t *r;

	r = run_in("bw", "{\"insert\": \"c\", \"documents\": [{\"_id\": {\"$a\": 1}}]}", &rc);
	TT_EQ_INT(tt_get_i64(r, "writeErrors.0.code"), 52);
	TT_EQ_STR(tt_get_str(r, "writeErrors.0.errmsg"),
	    "_id fields may not contain '$'-prefixed fields: $a is not valid for storage.");
	tt_free_reply(r);
	/* a DBRef is fine, and a top-level $-prefixed field too (5.0+) */
	r = run_in("bw", "{\"insert\": \"c\", \"documents\": [{\"_id\": {\"$ref\": \"a\", \"$id\": 1, \"$db\": \"b\"}},"
	    "{\"_id\": 77, \"$x\": 1}]}", &rc);
	TT_EQ_INT(tt_get_i64(r, "n"), 2);
	tt_free_reply(r);
}

static void
test_bad_requests(void)
{
	static const char *bad[][2] = {
		{"{\"bulkWrite\": 1, \"nsInfo\": [{\"ns\": \"bw.c\"}]}", "40414"},
		{"{\"bulkWrite\": 1, \"ops\": [], \"nsInfo\": [{\"ns\": \"bw.c\"}]}", "16"},
		{"{\"bulkWrite\": 1, \"ops\": [{\"insert\": 1, \"document\": {}}], \"nsInfo\": [{\"ns\": \"bw.c\"}]}", "2"},
		{"{\"bulkWrite\": 1, \"ops\": [{\"insert\": -1, \"document\": {}}], \"nsInfo\": [{\"ns\": \"bw.c\"}]}", "51024"},
		{"{\"bulkWrite\": 1, \"ops\": [{\"insert\": \"0\", \"document\": {}}], \"nsInfo\": [{\"ns\": \"bw.c\"}]}", "14"},
		{"{\"bulkWrite\": 1, \"ops\": [{\"insert\": 0}], \"nsInfo\": [{\"ns\": \"bw.c\"}]}", "40414"},
		{"{\"bulkWrite\": 1, \"ops\": [{\"update\": 0, \"filter\": {}}], \"nsInfo\": [{\"ns\": \"bw.c\"}]}", "40414"},
		{"{\"bulkWrite\": 1, \"ops\": [{\"delete\": 0, \"filter\": 1}], \"nsInfo\": [{\"ns\": \"bw.c\"}]}", "14"},
		{"{\"bulkWrite\": 1, \"ops\": [{\"delete\": 0, \"filter\": {}, \"bogus\": 1}], \"nsInfo\": [{\"ns\": \"bw.c\"}]}", "40415"},
		{"{\"bulkWrite\": 1, \"ops\": [{\"replace\": 0}], \"nsInfo\": [{\"ns\": \"bw.c\"}]}", "40415"},
		{"{\"bulkWrite\": 1, \"ops\": [{}], \"nsInfo\": [{\"ns\": \"bw.c\"}]}", "9"},
		{"{\"bulkWrite\": 1, \"ops\": [1], \"nsInfo\": [{\"ns\": \"bw.c\"}]}", "14"},
		{"{\"bulkWrite\": 1, \"ops\": [{\"insert\": 0, \"document\": {}}], \"nsInfo\": [{\"ns\": \"nodot\"}]}", "73"},
		{"{\"bulkWrite\": 1, \"ops\": [{\"insert\": 0, \"document\": {}}], \"nsInfo\": [{\"ns\": 5}]}", "14"},
		{"{\"bulkWrite\": 1, \"ops\": [{\"insert\": 0, \"document\": {}}], \"nsInfo\": [{}]}", "40414"},
		{"{\"bulkWrite\": 1, \"ops\": [{\"insert\": 0, \"document\": {}}], \"nsInfo\": [{\"ns\": \"bw.c\"}], \"let\": {\"Bad\": 1}}", "16867"},
		{"{\"bulkWrite\": 1, \"ops\": [{\"insert\": 0, \"document\": {}}], \"nsInfo\": [{\"ns\": \"bw.c\"}], \"x\": 1}", "40415"},
	};
	size_t i;
	int rc;
	bson_t *r;

	reset("c");
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		r = run(bad[i][0], &rc);
		if (tt_get_i64(r, "code") != atoi(bad[i][1])) {
			char *j = bson_as_relaxed_extended_json(r, NULL);
			TT_FAIL_("%s -> %s, expected code %s", bad[i][0], j, bad[i][1]);
			bson_free(j);
		}
		tt_free_reply(r);
	}
	/* nothing was written by any of them */
	r = run_in("bw", "{\"count\": \"c\"}", &rc);
	TT_EQ_INT(tt_get_i64(r, "n"), 3);
	tt_free_reply(r);
	/* only on admin */
	r = run_in("bw", "{\"bulkWrite\": 1, \"ops\": [{\"insert\": 0, \"document\": {}}], \"nsInfo\": [{\"ns\": \"bw.c\"}]}", &rc);
	TT_EQ_INT(tt_get_i64(r, "code"), 13);
	tt_free_reply(r);
}

/* startSession puts a session in the local cache, $listLocalSessions lists
 * it with the unauthenticated uid (SHA-256 of ""), endSessions drops it. */
static void
test_local_sessions(void)
{
	int rc;
	bson_t *r, *l;
	bson_iter_t f;
	const uint8_t *id;
	uint32_t len;
	bson_subtype_t st;
	char cmd[256];
	int i, found = 0;

	r = run_in("bw", "{\"startSession\": 1}", &rc);
	TT_EQ_INT(rc, 0);
	TT_ASSERT(tt_get(r, "id.id", &f) && BSON_ITER_HOLDS_BINARY(&f));
	bson_iter_binary(&f, &st, &len, &id);
	l = run_in("bw", "{\"aggregate\": 1, \"pipeline\": [{\"$listLocalSessions\": {}}], \"cursor\": {}}", &rc);
	TT_EQ_INT(rc, 0);
	for (i = 0; i < 100; i++) {
		char path[64];
		bson_iter_t g;
		const uint8_t *gid;
		uint32_t glen;
		snprintf(path, sizeof(path), "cursor.firstBatch.%d._id.id", i);
		if (!tt_get(l, path, &g))
			break;
		bson_iter_binary(&g, &st, &glen, &gid);
		if (glen == 16 && memcmp(gid, id, 16) == 0) {
			bson_iter_t u;
			found++;
			snprintf(path, sizeof(path), "cursor.firstBatch.%d._id.uid", i);
			TT_ASSERT(tt_get(l, path, &u) && BSON_ITER_HOLDS_BINARY(&u));
		}
	}
	TT_EQ_INT(found, 1);
	tt_free_reply(l);
	{
		bson_t *e = bson_new();
		bson_t arr, d;
		bson_t *rep = tm_bson_array_new(1);
		tamga_error_t te;
		BSON_APPEND_ARRAY_BEGIN(e, "endSessions", &arr);
		BSON_APPEND_DOCUMENT_BEGIN(&arr, "0", &d);
		bson_append_binary(&d, "id", 2, BSON_SUBTYPE_UUID, id, 16);
		bson_append_document_end(&arr, &d);
		bson_append_array_end(e, &arr);
		rc = tamga_run_command(db, "admin", e, rep, &te);
		TT_EQ_INT(rc, 0);
		bson_destroy(rep);
		bson_free(rep);
		bson_destroy(e);
	}
	tt_free_reply(r);
	l = run_in("bw", "{\"aggregate\": 1, \"pipeline\": [{\"$listLocalSessions\": {\"allUsers\": true}}], \"cursor\": {}}", &rc);
	TT_EQ_INT(rc, 0);
	TT_ASSERT(!has(l, "cursor.firstBatch.0"));
	tt_free_reply(l);
	snprintf(cmd, sizeof(cmd), "{\"aggregate\": \"c\", \"pipeline\": [{\"$listLocalSessions\": {}}], \"cursor\": {}}");
	l = run_in("bw", cmd, &rc);
	TT_EQ_INT(tt_get_i64(l, "code"), 73);
	tt_free_reply(l);
}

/* ---- hostile input: valid commands with values swapped for odd ones ---- */

static uint64_t rng = 0x9e3779b97f4a7c15ULL;

static uint32_t
rnd(uint32_t n)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (uint32_t)(rng % n);
}

static void
append_odd(bson_t *b, const char *k)
{
	bson_t sub;

	switch (rnd(14)) {
	case 0: BSON_APPEND_INT32(b, k, -1); break;
	case 1: BSON_APPEND_INT64(b, k, INT64_MAX); break;
	case 2: BSON_APPEND_DOUBLE(b, k, 0.0 / 0.0); break;
	case 3: BSON_APPEND_DOUBLE(b, k, 1e300); break;
	case 4: BSON_APPEND_UTF8(b, k, "$x"); break;
	case 5: BSON_APPEND_NULL(b, k); break;
	case 6: BSON_APPEND_BOOL(b, k, true); break;
	case 7: bson_append_array_begin(b, k, -1, &sub); bson_append_array_end(b, &sub); break;
	case 8: bson_append_document_begin(b, k, -1, &sub); bson_append_document_end(b, &sub); break;
	case 9:
		bson_append_document_begin(b, k, -1, &sub);
		BSON_APPEND_INT32(&sub, "$bogus", 1);
		bson_append_document_end(b, &sub);
		break;
	case 10: BSON_APPEND_INT32(b, k, 1); break;
	case 11: BSON_APPEND_UTF8(b, k, "bw.c"); break;
	case 12:
		bson_append_array_begin(b, k, -1, &sub);
		BSON_APPEND_INT32(&sub, "0", 0);
		bson_append_array_end(b, &sub);
		break;
	default: BSON_APPEND_UNDEFINED(b, k); break;
	}
}

/* Copy src into dst, replacing values (or dropping/adding fields) at random. */
static void
mutate(const bson_t *src, bson_t *dst, int depth)
{
	bson_iter_t it;

	bson_iter_init(&it, src);
	while (bson_iter_next(&it)) {
		const char *k = bson_iter_key(&it);
		uint32_t r = rnd(20);

		if (r == 0)
			continue;
		if (r == 1 || depth > 6) {
			append_odd(dst, k);
			continue;
		}
		if (BSON_ITER_HOLDS_DOCUMENT(&it) || BSON_ITER_HOLDS_ARRAY(&it)) {
			const uint8_t *data;
			uint32_t len;
			bson_t in, out;
			bool arr = BSON_ITER_HOLDS_ARRAY(&it);
			if (arr)
				bson_iter_array(&it, &len, &data);
			else
				bson_iter_document(&it, &len, &data);
			bson_init_static(&in, data, len);
			if (arr)
				bson_append_array_begin(dst, k, -1, &out);
			else
				bson_append_document_begin(dst, k, -1, &out);
			mutate(&in, &out, depth + 1);
			if (rnd(10) == 0)
				append_odd(&out, arr ? "7" : "filter");
			if (arr)
				bson_append_array_end(dst, &out);
			else
				bson_append_document_end(dst, &out);
			continue;
		}
		bson_append_iter(dst, k, -1, &it);
	}
}

static void
test_hostile(void)
{
	static const char *const seeds[] = {
		"{\"bulkWrite\": 1, \"ops\": [{\"insert\": 0, \"document\": {\"_id\": 5, \"a\": [1, {\"b\": 2}]}},"
		"{\"update\": 0, \"filter\": {\"_id\": 5}, \"updateMods\": {\"$set\": {\"a.$[e].b\": 3}},"
		"\"arrayFilters\": [{\"e.b\": 2}], \"upsert\": true, \"sort\": {\"a\": 1}, \"hint\": {\"_id\": 1},"
		"\"constants\": {\"k\": 1}, \"collation\": {\"locale\": \"simple\"}, \"multi\": false},"
		"{\"delete\": 0, \"filter\": {\"_id\": {\"$gt\": 3}}, \"multi\": true, \"hint\": \"_id_\"}],"
		"\"nsInfo\": [{\"ns\": \"bw.h\"}], \"ordered\": false, \"errorsOnly\": false,"
		"\"let\": {\"v\": {\"$add\": [1, 2]}}, \"cursor\": {\"batchSize\": 2}, \"bypassDocumentValidation\": true}",
		"{\"bulkWrite\": 1, \"ops\": [{\"update\": 1, \"filter\": {\"$expr\": {\"$eq\": [\"$_id\", \"$$v\"]}},"
		"\"updateMods\": [{\"$set\": {\"x\": \"$$v\"}}]}, {\"insert\": 1, \"document\": {}}],"
		"\"nsInfo\": [{\"ns\": \"bw.h\"}, {\"ns\": \"bw3.h\"}], \"let\": {\"v\": 3}}",
		"{\"update\": \"h\", \"updates\": [{\"q\": {}, \"u\": {\"$inc\": {\"n\": 1}}, \"sort\": {\"n\": -1},"
		"\"upsert\": true}], \"let\": {\"z\": {\"$literal\": 1}}}",
		"{\"findAndModify\": \"h\", \"query\": {\"a\": 1}, \"update\": {\"$set\": {\"a.$\": 2}},"
		"\"fields\": {\"a.$\": 1, \"x\": {\"$add\": [1, 2]}}, \"new\": true, \"upsert\": true}",
	};
	int i, rc, nok = 0, nerr = 0;

	for (i = 0; i < 3000; i++) {
		bson_t *seed = tt_json(seeds[rnd(sizeof(seeds) / sizeof(seeds[0]))]);
		bson_t *cmd = bson_new();
		bson_t *reply = tm_bson_array_new(1);
		tamga_error_t e;
		bson_iter_t it;

		bson_iter_init(&it, seed);
		bson_iter_next(&it);
		bson_append_iter(cmd, bson_iter_key(&it), -1, &it);   /* the command name stays first */
		{
			bson_t rest;
			bson_init(&rest);
			bson_copy_to_excluding_noinit(seed, &rest, bson_iter_key(&it), NULL);
			mutate(&rest, cmd, 0);
			bson_destroy(&rest);
		}
		rc = tamga_run_command(db, strncmp(bson_iter_key(&it), "bulkWrite", 9) == 0 ? "admin" : "bw", cmd,
		    reply, &e);
		if (rc == 0)
			nok++;
		else
			nerr++;
		if (rc != 0 && (tt_get_i64(reply, "code") <= 0 || tt_get_str(reply, "errmsg")[0] == '\0')) {
			char *j = bson_as_relaxed_extended_json(cmd, NULL);
			TT_FAIL_("error without code or message for %s", j);
			bson_free(j);
		}
		bson_destroy(reply);
		bson_free(reply);
		bson_destroy(cmd);
		bson_destroy(seed);
	}
	/* both paths are exercised: some mutants run, some are refused */
	TT_ASSERT(nok > 300);
	TT_ASSERT(nerr > 300);
}

int
main(void)
{
	char *dir = tt_tmpdir("conformance-bulkwrite");

	if ((db = tt_open_new(dir)) == NULL)
		return 1;
	TT_RUN(test_mixed_ops);
	TT_RUN(test_errors);
	TT_RUN(test_let_and_sort);
	TT_RUN(test_find_and_modify_fields);
	TT_RUN(test_id_storage_rule);
	TT_RUN(test_bad_requests);
	TT_RUN(test_local_sessions);
	TT_RUN(test_hostile);
	tt_close_rm(db, dir);
	return tt_finish();
}
