/*
 * test_js_commands.c -- server-side JavaScript through the command layer
 * (embedded API): $where (string, code, this/obj, errors, where it is
 * refused), $function and $accumulator (every parse error code, evaluation
 * errors, spill-free results), mapReduce (inline, replace, merge, reduce,
 * options, errors), maxTimeMS on scripts, and scripting switched off
 * (6108304 / 31264, ordinary queries unaffected).
 */
#include "js/js.h"
#include "tt.h"
#include "tt_embedded.h"

static tamga_t *db;

/* Run a command written as relaxed JSON; returns the batch text or
 * "error <code>: <msg>". */
static char *
batch(const char *json)
{
	int rc;
	bson_t *r = tt_run_json(db, "t", json, &rc);
	char *out = tt_batch_text(r, rc, "ok");
	tt_free_reply(r);
	return out;
}

static int
code_of(const char *json)
{
	int rc;
	bson_t *r = tt_run_json(db, "t", json, &rc);
	int c = rc == 0 ? 0 : (int)tt_get_i64(r, "code");
	tt_free_reply(r);
	return c;
}

#define EXPECT_BATCH(json, want) do { char *b_ = batch(json); TT_EQ_STR(b_, want); bson_free(b_); } while (0)
#define EXPECT_CODE(json, want) TT_EQ_INT(code_of(json), want)

static void
setup(void)
{
	int rc;
	bson_t *r = tt_run_json(db, "t",
	    "{\"insert\": \"c\", \"documents\": [{\"_id\": 1, \"a\": 1, \"s\": \"x\"}, {\"_id\": 2, \"a\": 2, \"s\": \"y\"},"
	    " {\"_id\": 3, \"a\": 3, \"s\": \"x\"}]}", &rc);
	TT_EQ_INT(rc, 0);
	tt_free_reply(r);
}

static void
test_where(void)
{
	EXPECT_BATCH("{\"find\": \"c\", \"filter\": {\"$where\": \"this.a > 1\"}, \"sort\": {\"_id\": 1}}",
	             "[ { \"_id\" : 2, \"a\" : 2, \"s\" : \"y\" }, { \"_id\" : 3, \"a\" : 3, \"s\" : \"x\" } ]");
	EXPECT_BATCH("{\"find\": \"c\", \"filter\": {\"$where\": {\"$code\": \"function () { return obj.s == 'y'; }\"}}}",
	             "[ { \"_id\" : 2, \"a\" : 2, \"s\" : \"y\" } ]");
	EXPECT_BATCH("{\"find\": \"c\", \"filter\": {\"s\": \"x\", \"$where\": \"var k = this.a; k == 3\"}}",
	             "[ { \"_id\" : 3, \"a\" : 3, \"s\" : \"x\" } ]");
	EXPECT_BATCH("{\"find\": \"c\", \"filter\": {\"$or\": [{\"$where\": \"this.a == 1\"}, {\"a\": 3}]}, \"sort\": {\"_id\": 1}, \"projection\": {\"_id\": 1}}",
	             "[ { \"_id\" : 1 }, { \"_id\" : 3 } ]");
	{
		/* explain shows the $where as given */
		int rc;
		bson_t *r = tt_run_json(db, "t", "{\"explain\": {\"find\": \"c\", \"filter\": {\"$where\": \"this.a > 1\"}}}", &rc);
		TT_EQ_INT(rc, 0);
		TT_EQ_STR(tt_get_str(r, "queryPlanner.parsedQuery.$where"), "this.a > 1");
		tt_free_reply(r);
	}
	EXPECT_CODE("{\"find\": \"c\", \"filter\": {\"$where\": 1}}", 2);
	EXPECT_CODE("{\"find\": \"c\", \"filter\": {\"$where\": {\"$code\": \"1\", \"$scope\": {}}}}", 4649201);
	EXPECT_CODE("{\"find\": \"c\", \"filter\": {\"$where\": \"throw new Error('x')\"}}", 139);
	EXPECT_CODE("{\"find\": \"c\", \"filter\": {\"$where\": \"this.a >\"}}", 139);
	EXPECT_CODE("{\"aggregate\": \"c\", \"pipeline\": [{\"$match\": {\"$where\": \"true\"}}], \"cursor\": {}}", 2);
	EXPECT_CODE("{\"create\": \"v1\", \"validator\": {\"$where\": \"true\"}}", 2);
	EXPECT_CODE("{\"create\": \"v2\", \"validator\": {\"$expr\": {\"$function\": {\"body\": \"function () { return true; }\", \"args\": [], \"lang\": \"js\"}}}}", 4660800);
	{
		int rc;
		bson_t *r = tt_run_json(db, "t", "{\"count\": \"c\", \"query\": {\"$where\": \"this.s == 'x'\"}}", &rc);
		TT_EQ_INT(rc, 0);
		TT_EQ_INT(tt_get_i64(r, "n"), 2);
		tt_free_reply(r);
		r = tt_run_json(db, "t", "{\"delete\": \"c\", \"deletes\": [{\"q\": {\"$where\": \"this.a == 99\"}, \"limit\": 0}]}", &rc);
		TT_EQ_INT(rc, 0);
		TT_EQ_INT(tt_get_i64(r, "n"), 0);
		tt_free_reply(r);
	}
}

static void
test_function(void)
{
	EXPECT_BATCH("{\"aggregate\": \"c\", \"pipeline\": [{\"$match\": {\"_id\": 1}}, {\"$project\": {\"_id\": 0, "
	             "\"v\": {\"$function\": {\"body\": \"function (a, b) { return a + b; }\", \"args\": [\"$a\", 10], \"lang\": \"js\"}},"
	             "\"c\": {\"$function\": {\"body\": \"function () { return NumberInt(4); }\", \"args\": [], \"lang\": \"js\"}}}}], \"cursor\": {}}",
	             "[ { \"v\" : 11.0, \"c\" : 4 } ]");
	EXPECT_CODE("{\"aggregate\": \"c\", \"pipeline\": [{\"$project\": {\"v\": {\"$function\": 1}}}], \"cursor\": {}}", 31260);
	EXPECT_CODE("{\"aggregate\": \"c\", \"pipeline\": [{\"$project\": {\"v\": {\"$function\": {\"args\": [], \"lang\": \"js\"}}}}], \"cursor\": {}}", 31261);
	EXPECT_CODE("{\"aggregate\": \"c\", \"pipeline\": [{\"$project\": {\"v\": {\"$function\": {\"body\": \"$s\", \"args\": [], \"lang\": \"js\"}}}}], \"cursor\": {}}", 31432);
	EXPECT_CODE("{\"aggregate\": \"c\", \"pipeline\": [{\"$project\": {\"v\": {\"$function\": {\"body\": 5, \"args\": [], \"lang\": \"js\"}}}}], \"cursor\": {}}", 31262);
	EXPECT_CODE("{\"aggregate\": \"c\", \"pipeline\": [{\"$project\": {\"v\": {\"$function\": {\"body\": \"f\", \"lang\": \"js\"}}}}], \"cursor\": {}}", 31263);
	EXPECT_CODE("{\"aggregate\": \"c\", \"pipeline\": [{\"$project\": {\"v\": {\"$function\": {\"body\": \"f\", \"args\": []}}}}], \"cursor\": {}}", 31418);
	EXPECT_CODE("{\"aggregate\": \"c\", \"pipeline\": [{\"$project\": {\"v\": {\"$function\": {\"body\": \"f\", \"args\": [], \"lang\": \"c\"}}}}], \"cursor\": {}}", 31419);
	EXPECT_CODE("{\"aggregate\": \"c\", \"pipeline\": [{\"$project\": {\"v\": {\"$function\": {\"body\": \"function () {}\", \"args\": \"$a\", \"lang\": \"js\"}}}}], \"cursor\": {}}", 31266);
	/* in a pipeline update, and with $expr in find */
	EXPECT_BATCH("{\"find\": \"c\", \"filter\": {\"$expr\": {\"$function\": {\"body\": \"function (s) { return s == 'y'; }\", \"args\": [\"$s\"], \"lang\": \"js\"}}}, \"projection\": {\"_id\": 1}}",
	             "[ { \"_id\" : 2 } ]");
}

static void
test_accumulator(void)
{
	const char *acc = "\"init\": \"function (p) { return [p]; }\", \"initArgs\": [\"$s\"], "
	                  "\"accumulate\": \"function (st, a) { st.push(a); return st; }\", \"accumulateArgs\": [\"$a\"], "
	                  "\"merge\": \"function (x, y) { return x.concat(y.slice(1)); }\", "
	                  "\"finalize\": \"function (st) { return st.join('-'); }\", \"lang\": \"js\"";
	char *q = bson_strdup_printf("{\"aggregate\": \"c\", \"pipeline\": [{\"$sort\": {\"_id\": 1}}, {\"$group\": {\"_id\": \"$s\", "
	                             "\"v\": {\"$accumulator\": {%s}}}}, {\"$sort\": {\"_id\": 1}}], \"cursor\": {}}", acc);
	EXPECT_BATCH(q, "[ { \"_id\" : \"x\", \"v\" : \"x-1-3\" }, { \"_id\" : \"y\", \"v\" : \"y-2\" } ]");
	bson_free(q);
	EXPECT_CODE("{\"aggregate\": \"c\", \"pipeline\": [{\"$group\": {\"_id\": 1, \"v\": {\"$accumulator\": 1}}}], \"cursor\": {}}", 4544703);
	EXPECT_CODE("{\"aggregate\": \"c\", \"pipeline\": [{\"$group\": {\"_id\": 1, \"v\": {\"$accumulator\": {\"init\": \"$s\", \"accumulate\": \"f\", \"merge\": \"f\", \"accumulateArgs\": []}}}}], \"cursor\": {}}", 4544701);
	EXPECT_CODE("{\"aggregate\": \"c\", \"pipeline\": [{\"$group\": {\"_id\": 1, \"v\": {\"$accumulator\": {\"init\": 1, \"accumulate\": \"f\", \"merge\": \"f\", \"accumulateArgs\": []}}}}], \"cursor\": {}}", 4544702);
	EXPECT_CODE("{\"aggregate\": \"c\", \"pipeline\": [{\"$group\": {\"_id\": 1, \"v\": {\"$accumulator\": {\"init\": \"f\", \"accumulate\": \"f\", \"merge\": \"f\", \"accumulateArgs\": [], \"lang\": 1}}}}], \"cursor\": {}}", 4544704);
	EXPECT_CODE("{\"aggregate\": \"c\", \"pipeline\": [{\"$group\": {\"_id\": 1, \"v\": {\"$accumulator\": {\"init\": \"f\", \"accumulate\": \"f\", \"merge\": \"f\", \"accumulateArgs\": [], \"lang\": \"py\"}}}}], \"cursor\": {}}", 4544705);
	EXPECT_CODE("{\"aggregate\": \"c\", \"pipeline\": [{\"$group\": {\"_id\": 1, \"v\": {\"$accumulator\": {\"init\": \"f\", \"accumulate\": \"f\", \"merge\": \"f\", \"accumulateArgs\": [], \"other\": 1}}}}], \"cursor\": {}}", 4544706);
	EXPECT_CODE("{\"aggregate\": \"c\", \"pipeline\": [{\"$group\": {\"_id\": 1, \"v\": {\"$accumulator\": {\"accumulate\": \"f\", \"merge\": \"f\", \"accumulateArgs\": []}}}}], \"cursor\": {}}", 4544707);
	EXPECT_CODE("{\"aggregate\": \"c\", \"pipeline\": [{\"$group\": {\"_id\": 1, \"v\": {\"$accumulator\": {\"init\": \"f\", \"merge\": \"f\", \"accumulateArgs\": []}}}}], \"cursor\": {}}", 4544708);
	EXPECT_CODE("{\"aggregate\": \"c\", \"pipeline\": [{\"$group\": {\"_id\": 1, \"v\": {\"$accumulator\": {\"init\": \"f\", \"accumulate\": \"f\", \"accumulateArgs\": []}}}}], \"cursor\": {}}", 4544709);
	EXPECT_CODE("{\"aggregate\": \"c\", \"pipeline\": [{\"$group\": {\"_id\": 1, \"v\": {\"$accumulator\": {\"init\": \"f\", \"accumulate\": \"f\", \"merge\": \"f\"}}}}], \"cursor\": {}}", 4544710);
	EXPECT_CODE("{\"aggregate\": \"c\", \"pipeline\": [{\"$group\": {\"_id\": 1, \"v\": {\"$accumulator\": {\"init\": \"function () { return 0; }\", \"initArgs\": 1, \"accumulate\": \"f\", \"merge\": \"f\", \"accumulateArgs\": []}}}}], \"cursor\": {}}", 4544711);
	EXPECT_CODE("{\"aggregate\": \"c\", \"pipeline\": [{\"$group\": {\"_id\": 1, \"v\": {\"$accumulator\": {\"init\": \"function () { return 0; }\", \"accumulate\": \"f\", \"merge\": \"f\", \"accumulateArgs\": \"$a\"}}}}], \"cursor\": {}}", 4544712);
}

static void
test_map_reduce(void)
{
	const char *mr = "\"map\": \"function () { emit(this.s, this.a); }\", \"reduce\": \"function (k, v) { return Array.sum(v); }\"";
	char *q;
	int rc;
	bson_t *r;

	q = bson_strdup_printf("{\"mapReduce\": \"c\", %s, \"out\": {\"inline\": 1}}", mr);
	r = tt_run_json(db, "t", q, &rc);
	TT_EQ_INT(rc, 0);
	{
		bson_iter_t f;
		TT_ASSERT(tt_get(r, "results", &f) && BSON_ITER_HOLDS_ARRAY(&f));
		const uint8_t *d;
		uint32_t l;
		bson_t arr;
		bson_iter_array(&f, &l, &d);
		bson_init_static(&arr, d, l);
		char *j = tt_array_json(&arr);
		TT_EQ_STR(j, "[ { \"_id\" : \"x\", \"value\" : 4.0 }, { \"_id\" : \"y\", \"value\" : 2.0 } ]");
		bson_free(j);
	}
	tt_free_reply(r);
	bson_free(q);
	q = bson_strdup_printf("{\"mapreduce\": \"c\", %s, \"out\": \"o\", \"finalize\": \"function (k, v) { return v * m; }\", \"scope\": {\"m\": 2}}", mr);
	r = tt_run_json(db, "t", q, &rc);
	TT_EQ_INT(rc, 0);
	TT_EQ_STR(tt_get_str(r, "result"), "o");
	tt_free_reply(r);
	bson_free(q);
	EXPECT_BATCH("{\"find\": \"o\", \"sort\": {\"_id\": 1}}",
	             "[ { \"_id\" : \"x\", \"value\" : 8.0 }, { \"_id\" : \"y\", \"value\" : 4.0 } ]");
	q = bson_strdup_printf("{\"mapReduce\": \"c\", %s, \"out\": {\"reduce\": \"o\"}, \"query\": {\"_id\": 1}}", mr);
	EXPECT_CODE(q, 0);
	bson_free(q);
	EXPECT_BATCH("{\"find\": \"o\", \"sort\": {\"_id\": 1}}",
	             "[ { \"_id\" : \"x\", \"value\" : 9.0 }, { \"_id\" : \"y\", \"value\" : 4.0 } ]");
	q = bson_strdup_printf("{\"mapReduce\": \"c\", %s, \"out\": {\"merge\": \"o\"}, \"query\": {\"_id\": 3}}", mr);
	EXPECT_CODE(q, 0);
	bson_free(q);
	EXPECT_BATCH("{\"find\": \"o\", \"sort\": {\"_id\": 1}}",
	             "[ { \"_id\" : \"x\", \"value\" : 3.0 }, { \"_id\" : \"y\", \"value\" : 4.0 } ]");
	q = bson_strdup_printf("{\"mapReduce\": \"c\", %s, \"out\": {\"replace\": \"o\"}, \"query\": {\"_id\": 2}, \"sort\": {\"_id\": -1}, \"limit\": 5}", mr);
	EXPECT_CODE(q, 0);
	bson_free(q);
	EXPECT_BATCH("{\"find\": \"o\"}", "[ { \"_id\" : \"y\", \"value\" : 2.0 } ]");
	EXPECT_CODE("{\"mapReduce\": \"c\", \"reduce\": \"f\", \"out\": {\"inline\": 1}}", 40414);
	EXPECT_CODE("{\"mapReduce\": \"c\", \"map\": \"f\", \"out\": {\"inline\": 1}}", 40414);
	EXPECT_CODE("{\"mapReduce\": \"c\", \"map\": \"f\", \"reduce\": \"f\"}", 40414);
	EXPECT_CODE("{\"mapReduce\": \"c\", \"map\": 1, \"reduce\": \"f\", \"out\": {\"inline\": 1}}", 14);
	EXPECT_CODE("{\"mapReduce\": \"c\", \"map\": \"f\", \"reduce\": \"f\", \"out\": {\"merge\": \"x\", \"db\": \"admin\"}}", 115);
	EXPECT_CODE("{\"mapReduce\": \"c\", \"map\": \"function () { emit(1); }\", \"reduce\": \"f\", \"out\": {\"inline\": 1}}", 139);
	EXPECT_CODE("{\"mapReduce\": \"c\", \"map\": \"function () { while (true) {} }\", \"reduce\": \"f\", \"out\": {\"inline\": 1}, \"maxTimeMS\": 100}", 50);
	/* emit outside mapReduce */
	EXPECT_CODE("{\"find\": \"c\", \"filter\": {\"$where\": \"emit(1, 1)\"}}", 139);
	/* no temporary collection is left behind */
	EXPECT_BATCH("{\"listCollections\": 1, \"filter\": {\"name\": {\"$regex\": \"^tmp\"}}}", "[ ]");
}

static void
test_limits(void)
{
	EXPECT_CODE("{\"find\": \"c\", \"filter\": {\"$where\": \"while (true) {}\"}, \"maxTimeMS\": 100}", 50);
	EXPECT_CODE("{\"find\": \"c\", \"filter\": {\"$where\": \"sleep(100000)\"}, \"maxTimeMS\": 100}", 50);
	EXPECT_CODE("{\"aggregate\": \"c\", \"pipeline\": [{\"$project\": {\"v\": {\"$function\": {\"body\": \"function () { for (;;) {} }\", \"args\": [], \"lang\": \"js\"}}}}], \"cursor\": {}, \"maxTimeMS\": 100}", 50);
	EXPECT_CODE("{\"find\": \"c\", \"filter\": {\"$where\": \"var a = []; for (;;) a.push({i: a.length});\"}}", 139);
	EXPECT_BATCH("{\"find\": \"c\", \"filter\": {\"$where\": \"this._id == 1\"}, \"projection\": {\"_id\": 1}}", "[ { \"_id\" : 1 } ]");
}

/* Randomised: $where and $function agree with the same predicate written
 * as a query operator, over int32 / int64 / double / missing / string
 * values (NumberLong compares through valueOf, as in mongod). */
static void
test_random_agree(void)
{
	uint64_t x = 88172645463325252ULL;
	int rc;
	bson_t cmd = BSON_INITIALIZER, docs, d;

	BSON_APPEND_UTF8(&cmd, "insert", "r");
	BSON_APPEND_ARRAY_BEGIN(&cmd, "documents", &docs);
	for (int i = 0; i < 300; i++) {
		char k[16];
		x ^= x << 13; x ^= x >> 7; x ^= x << 17;
		snprintf(k, sizeof k, "%d", i);
		BSON_APPEND_DOCUMENT_BEGIN(&docs, k, &d);
		BSON_APPEND_INT32(&d, "_id", i);
		switch (x % 5) {
		case 0: BSON_APPEND_INT32(&d, "v", (int32_t)(x % 200) - 100); break;
		case 1: BSON_APPEND_INT64(&d, "v", (int64_t)(x % 200) - 100); break;
		case 2: BSON_APPEND_DOUBLE(&d, "v", (double)(x % 2000) / 10.0 - 100.0); break;
		case 3: break;   /* missing */
		default: BSON_APPEND_UTF8(&d, "v", "str"); break;
		}
		bson_append_document_end(&docs, &d);
	}
	bson_append_array_end(&cmd, &docs);
	tt_free_reply(tt_run_bson(db, "t", &cmd, &rc));
	bson_destroy(&cmd);
	TT_EQ_INT(rc, 0);
	for (int t = 0; t < 25; t++) {
		char q[512];
		int k;
		bson_t *r;
		int64_t n_op, n_where, n_fn;
		x ^= x << 13; x ^= x >> 7; x ^= x << 17;
		k = (int)(x % 220) - 110;
		snprintf(q, sizeof q, "{\"count\": \"r\", \"query\": {\"v\": {\"$gt\": %d, \"$type\": \"number\"}}}", k);
		r = tt_run_json(db, "t", q, &rc);
		n_op = tt_get_i64(r, "n");
		tt_free_reply(r);
		snprintf(q, sizeof q, "{\"count\": \"r\", \"query\": {\"$where\": \"typeof this.v == 'number' || this.v instanceof NumberLong ? this.v > %d : false\"}}", k);
		r = tt_run_json(db, "t", q, &rc);
		TT_EQ_INT(rc, 0);
		n_where = tt_get_i64(r, "n");
		tt_free_reply(r);
		snprintf(q, sizeof q, "{\"count\": \"r\", \"query\": {\"$expr\": {\"$function\": {\"lang\": \"js\", \"args\": [\"$v\", %d], "
		         "\"body\": \"function (v, k) { return (typeof v == 'number' || v instanceof NumberLong) && v > k; }\"}}}}", k);
		r = tt_run_json(db, "t", q, &rc);
		TT_EQ_INT(rc, 0);
		n_fn = tt_get_i64(r, "n");
		tt_free_reply(r);
		TT_EQ_INT(n_where, n_op);
		TT_EQ_INT(n_fn, n_op);
	}
}

static void
test_disabled(void)
{
	js_set_enabled(false);
	EXPECT_CODE("{\"find\": \"c\", \"filter\": {\"$where\": \"true\"}}", 6108304);
	EXPECT_CODE("{\"aggregate\": \"c\", \"pipeline\": [{\"$project\": {\"v\": {\"$function\": {\"body\": \"function () {}\", \"args\": [], \"lang\": \"js\"}}}}], \"cursor\": {}}", 31264);
	EXPECT_CODE("{\"aggregate\": \"c\", \"pipeline\": [{\"$group\": {\"_id\": 1, \"v\": {\"$accumulator\": {\"init\": \"f\", \"accumulate\": \"f\", \"merge\": \"f\", \"accumulateArgs\": []}}}}], \"cursor\": {}}", 31264);
	EXPECT_CODE("{\"mapReduce\": \"c\", \"map\": \"f\", \"reduce\": \"f\", \"out\": {\"inline\": 1}}", 31264);
	EXPECT_BATCH("{\"find\": \"c\", \"filter\": {\"a\": 2}, \"projection\": {\"_id\": 1}}", "[ { \"_id\" : 2 } ]");
	js_set_enabled(true);
	EXPECT_BATCH("{\"find\": \"c\", \"filter\": {\"$where\": \"this.a == 2\"}, \"projection\": {\"_id\": 1}}", "[ { \"_id\" : 2 } ]");
}

int
main(void)
{
	char *dir = tt_tmpdir("jscmd");

	js_set_heap_limit_mb(16);
	db = tt_open_new(dir);
	setup();
	TT_RUN(test_where);
	TT_RUN(test_function);
	TT_RUN(test_accumulator);
	TT_RUN(test_map_reduce);
	TT_RUN(test_limits);
	TT_RUN(test_random_agree);
	TT_RUN(test_disabled);
	tt_close_rm(db, dir);
	js_thread_release();
	return tt_finish();
}
