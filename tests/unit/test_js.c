/*
 * test_js.c -- the js/ layer alone: BSON <-> JavaScript round trips of every
 * BSON type, mongod's helpers in the sandbox, the function maker, the
 * limits (maxTimeMS through the operation context, the heap limit, deep
 * recursion, cycles), that nothing of the shell's host API exists, and that
 * the engine is per thread and reused.
 */
#include <math.h>
#include <pthread.h>

#include "common/opctx.h"
#include "js/script.h"
#include "tt.h"

static js_ctx_t *
ctx_get(void)
{
	js_ctx_t *ctx = NULL;
	terr_t err = TERR_INIT;

	if (js_scope_enter("test", &ctx, &err) != 0) {
		fprintf(stderr, "js_scope_enter: %s\n", err.msg);
		abort();
	}
	return ctx;
}

/* Evaluate src (a function source) with the given args (JSON array or
 * NULL) and this (JSON doc or NULL); returns the {r: ...} result or NULL
 * with *err set. */
static bson_t *
run(const char *src, const char *args_json, const char *this_json, terr_t *err)
{
	js_ctx_t *ctx = ctx_get();
	int mark = js_top(ctx);
	bson_t *args = NULL, *self = NULL, *res = bson_new();
	js_ref_t fn;
	int rc = -1;

	if (args_json != NULL) {
		bson_t *a = tt_json(args_json);   /* {"a": [...]} */
		bson_iter_t it, ch;
		const uint8_t *data;
		uint32_t len;
		bson_iter_init_find(&it, a, "a");
		bson_iter_array(&it, &len, &data);
		args = bson_new_from_data(data, len);
		(void)ch;
		bson_destroy(a);
	}
	if (this_json != NULL)
		self = tt_json(this_json);
	fn = js_function_get(ctx, src, strlen(src), err);
	if (fn >= 0) {
		bson_destroy(res);
		res = bson_new();
		bson_t tmp;
		rc = js_invoke(ctx, fn, self, args, &tmp, err);
		if (rc == 0)
			bson_copy_to_excluding_noinit(&tmp, res, "", NULL);
		bson_destroy(&tmp);
	}
	js_pop_to(ctx, mark);
	if (args)
		bson_destroy(args);
	if (self)
		bson_destroy(self);
	if (rc != 0) {
		bson_destroy(res);
		return NULL;
	}
	return res;
}

#define EXPECT_JSON(src, args, self, want) do { terr_t e_ = TERR_INIT; \
	bson_t *r_ = run((src), (args), (self), &e_); \
	if (r_ == NULL) TT_FAIL_("%s failed: %d %s", (src), e_.code, e_.msg ? e_.msg : ""); \
	else { char *j_ = bson_as_canonical_extended_json(r_, NULL); \
		if (strcmp(j_, (want)) != 0) TT_FAIL_("%s:\n  got  %s\n  want %s", (src), j_, (want)); \
		bson_free(j_); bson_destroy(r_); } terr_clear(&e_); } while (0)

#define EXPECT_ERR(src, args, self, want_code, msgpart) do { terr_t e_ = TERR_INIT; \
	bson_t *r_ = run((src), (args), (self), &e_); \
	if (r_ != NULL) { TT_FAIL_("%s succeeded", (src)); bson_destroy(r_); } \
	else { TT_EQ_INT(e_.code, (want_code)); \
		if (e_.msg == NULL || strstr(e_.msg, (msgpart)) == NULL) TT_FAIL_("message \"%s\" lacks \"%s\"", e_.msg ? e_.msg : "", (msgpart)); } \
	terr_clear(&e_); } while (0)

/* Every BSON type through function (x) { return x; }: what comes back is
 * what mongod gives back (numbers come back as doubles, int64 stays). */
static void
test_round_trip_types(void)
{
	const char *id = "function (x) { return x; }";

	EXPECT_JSON(id, "{\"a\": [1.5]}", NULL, "{ \"r\" : { \"$numberDouble\" : \"1.5\" } }");
	EXPECT_JSON(id, "{\"a\": [\"héllo\"]}", NULL, "{ \"r\" : \"héllo\" }");
	EXPECT_JSON(id, "{\"a\": [{\"x\": {\"y\": [1, \"a\"]}}]}", NULL,
	            "{ \"r\" : { \"x\" : { \"y\" : [ { \"$numberDouble\" : \"1.0\" }, \"a\" ] } } }");
	EXPECT_JSON(id, "{\"a\": [{\"$binary\": {\"base64\": \"AQID\", \"subType\": \"05\"}}]}", NULL,
	            "{ \"r\" : { \"$binary\" : { \"base64\" : \"AQID\", \"subType\" : \"05\" } } }");
	EXPECT_JSON(id, "{\"a\": [{\"$binary\": {\"base64\": \"\", \"subType\": \"00\"}}]}", NULL,
	            "{ \"r\" : { \"$binary\" : { \"base64\" : \"\", \"subType\" : \"00\" } } }");
	EXPECT_JSON(id, "{\"a\": [{\"$undefined\": true}]}", NULL, "{ \"r\" : { \"$undefined\" : true } }");
	EXPECT_JSON(id, "{\"a\": [{\"$oid\": \"5f1d7f1e2b3c4d5e6f708192\"}]}", NULL,
	            "{ \"r\" : { \"$oid\" : \"5f1d7f1e2b3c4d5e6f708192\" } }");
	EXPECT_JSON(id, "{\"a\": [true]}", NULL, "{ \"r\" : true }");
	EXPECT_JSON(id, "{\"a\": [{\"$date\": {\"$numberLong\": \"1577836800123\"}}]}", NULL,
	            "{ \"r\" : { \"$date\" : { \"$numberLong\" : \"1577836800123\" } } }");
	EXPECT_JSON(id, "{\"a\": [null]}", NULL, "{ \"r\" : null }");
	EXPECT_JSON(id, "{\"a\": [{\"$regularExpression\": {\"pattern\": \"^a.c\", \"options\": \"mi\"}}]}", NULL,
	            "{ \"r\" : { \"$regularExpression\" : { \"pattern\" : \"^a.c\", \"options\" : \"im\" } } }");
	EXPECT_JSON(id, "{\"a\": [{\"$dbPointer\": {\"$ref\": \"db.c\", \"$id\": {\"$oid\": \"5f1d7f1e2b3c4d5e6f708192\"}}}]}", NULL,
	            "{ \"r\" : { \"$dbPointer\" : { \"$ref\" : \"db.c\", \"$id\" : { \"$oid\" : \"5f1d7f1e2b3c4d5e6f708192\" } } } }");
	EXPECT_JSON(id, "{\"a\": [{\"$code\": \"function () { return 1; }\"}]}", NULL,
	            "{ \"r\" : { \"$code\" : \"function () { return 1; }\" } }");
	EXPECT_JSON(id, "{\"a\": [{\"$code\": \"x\", \"$scope\": {\"a\": 1}}]}", NULL,
	            "{ \"r\" : { \"$code\" : \"x\", \"$scope\" : { \"a\" : { \"$numberDouble\" : \"1.0\" } } } }");
	EXPECT_JSON(id, "{\"a\": [{\"$symbol\": \"sym\"}]}", NULL, "{ \"r\" : \"sym\" }");
	EXPECT_JSON(id, "{\"a\": [{\"$numberInt\": \"7\"}]}", NULL, "{ \"r\" : { \"$numberDouble\" : \"7.0\" } }");
	EXPECT_JSON(id, "{\"a\": [{\"$timestamp\": {\"t\": 4294967295, \"i\": 7}}]}", NULL,
	            "{ \"r\" : { \"$timestamp\" : { \"t\" : 4294967295, \"i\" : 7 } } }");
	EXPECT_JSON(id, "{\"a\": [{\"$numberLong\": \"-9223372036854775808\"}]}", NULL,
	            "{ \"r\" : { \"$numberLong\" : \"-9223372036854775808\" } }");
	EXPECT_JSON(id, "{\"a\": [{\"$numberLong\": \"9223372036854775807\"}]}", NULL,
	            "{ \"r\" : { \"$numberLong\" : \"9223372036854775807\" } }");
	EXPECT_JSON(id, "{\"a\": [{\"$numberDecimal\": \"1.298000000000000000000000000000000\"}]}", NULL,
	            "{ \"r\" : { \"$numberDecimal\" : \"1.298000000000000000000000000000000\" } }");
	EXPECT_JSON(id, "{\"a\": [{\"$minKey\": 1}]}", NULL, "{ \"r\" : { \"$minKey\" : 1 } }");
	EXPECT_JSON(id, "{\"a\": [{\"$maxKey\": 1}]}", NULL, "{ \"r\" : { \"$maxKey\" : 1 } }");
	EXPECT_JSON(id, "{\"a\": [{\"$ref\": \"c\", \"$id\": 5, \"$db\": \"d\"}]}", NULL,
	            "{ \"r\" : { \"$ref\" : \"c\", \"$id\" : { \"$numberDouble\" : \"5.0\" }, \"$db\" : \"d\" } }");
	EXPECT_JSON(id, "{\"a\": [{\"$numberDouble\": \"NaN\"}]}", NULL, "{ \"r\" : { \"$numberDouble\" : \"NaN\" } }");
	EXPECT_JSON(id, "{\"a\": [{\"$numberDouble\": \"-Infinity\"}]}", NULL,
	            "{ \"r\" : { \"$numberDouble\" : \"-Infinity\" } }");
	/* undefined result */
	EXPECT_JSON("function () {}", NULL, NULL, "{ \"r\" : { \"$undefined\" : true } }");
}

/* Types seen from JavaScript as mongod shows them. */
static void
test_types_in_js(void)
{
	EXPECT_JSON("function (x) { return [typeof x, x instanceof NumberLong, x + 1, x.toString(), tojson(x)]; }",
	            "{\"a\": [{\"$numberLong\": \"41\"}]}", NULL,
	            "{ \"r\" : [ \"object\", true, { \"$numberDouble\" : \"42.0\" }, \"NumberLong(41)\", \"NumberLong(41)\" ] }");
	EXPECT_JSON("function (x) { return tojson(x); }", "{\"a\": [{\"$numberLong\": \"9223372036854775807\"}]}", NULL,
	            "{ \"r\" : \"NumberLong(\\\"9223372036854775807\\\")\" }");
	EXPECT_JSON("function (x) { return [x.str, tojson(x), x.getTimestamp().getTime()]; }",
	            "{\"a\": [{\"$oid\": \"5f1d7f1e2b3c4d5e6f708192\"}]}", NULL,
	            "{ \"r\" : [ \"5f1d7f1e2b3c4d5e6f708192\", \"ObjectId(\\\"5f1d7f1e2b3c4d5e6f708192\\\")\", { \"$numberDouble\" : \"1595768606000.0\" } ] }");
	EXPECT_JSON("function (x) { return [x instanceof Date, tojson(x)]; }",
	            "{\"a\": [{\"$date\": {\"$numberLong\": \"0\"}}]}", NULL,
	            "{ \"r\" : [ true, \"ISODate(\\\"1970-01-01T00:00:00.000Z\\\")\" ] }");
	EXPECT_JSON("function (x) { return [x.t, x.i, tojson(x)]; }",
	            "{\"a\": [{\"$timestamp\": {\"t\": 5, \"i\": 6}}]}", NULL,
	            "{ \"r\" : [ { \"$numberDouble\" : \"5.0\" }, { \"$numberDouble\" : \"6.0\" }, \"Timestamp(5, 6)\" ] }");
	EXPECT_JSON("function (x) { return [x.base64(), x.hex(), x.length(), x.subtype(), tojson(x)]; }",
	            "{\"a\": [{\"$binary\": {\"base64\": \"AQID\", \"subType\": \"00\"}}]}", NULL,
	            "{ \"r\" : [ \"AQID\", \"010203\", { \"$numberDouble\" : \"3.0\" }, { \"$numberDouble\" : \"0.0\" }, \"BinData(0,\\\"AQID\\\")\" ] }");
	EXPECT_JSON("function (x) { return [x.test('ABC'), x.flags]; }",
	            "{\"a\": [{\"$regularExpression\": {\"pattern\": \"^a\", \"options\": \"ix\"}}]}", NULL,
	            "{ \"r\" : [ true, \"i\" ] }");
	EXPECT_JSON("function (x) { return x instanceof DBRef && x.getCollection() == 'c'; }",
	            "{\"a\": [{\"$ref\": \"c\", \"$id\": 5}]}", NULL, "{ \"r\" : true }");
	EXPECT_JSON("function (x) { return typeof x; }", "{\"a\": [{\"$numberInt\": \"3\"}]}", NULL,
	            "{ \"r\" : \"number\" }");
	/* constructors made in JavaScript come back as their BSON types */
	EXPECT_JSON("function () { return {l: NumberLong('-5'), i: NumberInt(7), d: NumberDecimal('1.50'), "
	            "o: ObjectId('5f1d7f1e2b3c4d5e6f708192'), t: Timestamp(1, 2), b: BinData(4, 'AAECAwQFBgcICQoLDA0ODw=='), "
	            "h: HexData(0, 'ff00'), dt: ISODate('2020-01-02T03:04:05.678Z'), mn: MinKey(), mx: MaxKey(), "
	            "re: /x+/g, f: function (a) { return a; }, c: Code('1+1'), u: undefined, n: null}; }",
	            NULL, NULL,
	            "{ \"r\" : { \"l\" : { \"$numberLong\" : \"-5\" }, \"i\" : { \"$numberInt\" : \"7\" }, "
	            "\"d\" : { \"$numberDecimal\" : \"1.50\" }, \"o\" : { \"$oid\" : \"5f1d7f1e2b3c4d5e6f708192\" }, "
	            "\"t\" : { \"$timestamp\" : { \"t\" : 1, \"i\" : 2 } }, "
	            "\"b\" : { \"$binary\" : { \"base64\" : \"AAECAwQFBgcICQoLDA0ODw==\", \"subType\" : \"04\" } }, "
	            "\"h\" : { \"$binary\" : { \"base64\" : \"/wA=\", \"subType\" : \"00\" } }, "
	            "\"dt\" : { \"$date\" : { \"$numberLong\" : \"1577934245678\" } }, \"mn\" : { \"$minKey\" : 1 }, "
	            "\"mx\" : { \"$maxKey\" : 1 }, \"re\" : { \"$regularExpression\" : { \"pattern\" : \"x+\", \"options\" : \"\" } }, "
	            "\"f\" : { \"$code\" : \"function (a) { return a; }\" }, \"c\" : { \"$code\" : \"1+1\" }, "
	            "\"u\" : { \"$undefined\" : true }, \"n\" : null } }");
}

static void
test_helpers(void)
{
	EXPECT_JSON("function () { return hex_md5('hello'); }", NULL, NULL,
	            "{ \"r\" : \"5d41402abc4b2a76b9719d911017c592\" }");
	EXPECT_JSON("function () { return [isNumber(1), isNumber('1'), isObject({}), isObject(1), isString('s')]; }",
	            NULL, NULL, "{ \"r\" : [ true, false, true, false, true ] }");
	EXPECT_JSON("function () { return [Array.sum([1, 2, 3]), Array.avg([1, 2, 3]), Array.sum([]), "
	            "Array.contains([1, 2], 2), Array.unique([1, 1, 2]).length]; }", NULL, NULL,
	            "{ \"r\" : [ { \"$numberDouble\" : \"6.0\" }, { \"$numberDouble\" : \"2.0\" }, null, true, { \"$numberDouble\" : \"2.0\" } ] }");
	EXPECT_JSON("function () { return tojson({a: 1, b: [1, 'x'], c: {}}); }", NULL, NULL,
	            "{ \"r\" : \"{\\n\\t\\\"a\\\" : 1,\\n\\t\\\"b\\\" : [ 1, \\\"x\\\" ],\\n\\t\\\"c\\\" : { }\\n}\" }");
	EXPECT_JSON("function () { return tojsononeline({a: 1, b: 'x'}); }", NULL, NULL,
	            "{ \"r\" : \"{  \\\"a\\\" : 1,  \\\"b\\\" : \\\"x\\\" }\" }");
	EXPECT_JSON("function () { printjson({a: 1}); print('x', 2); return 1; }", NULL, NULL,
	            "{ \"r\" : { \"$numberDouble\" : \"1.0\" } }");
	EXPECT_JSON("function () { sleep(20); return Object.bsonsize({a: 1}); }", NULL, NULL,
	            "{ \"r\" : { \"$numberDouble\" : \"16.0\" } }");
	EXPECT_JSON("function () { return ObjectId().str.length; }", NULL, NULL,
	            "{ \"r\" : { \"$numberDouble\" : \"24.0\" } }");
}

/* Sources as mongod takes them: a function, an expression, a body. */
static void
test_function_maker(void)
{
	EXPECT_JSON("this.a > 1", NULL, "{\"a\": 2}", "{ \"r\" : true }");
	EXPECT_JSON("return this.a == 3;", NULL, "{\"a\": 3}", "{ \"r\" : true }");
	EXPECT_JSON("var x = 2;\nx * this.a", NULL, "{\"a\": 3}", "{ \"r\" : { \"$numberDouble\" : \"6.0\" } }");
	EXPECT_JSON("var y = this.a; y == 3;", NULL, "{\"a\": 3}", "{ \"r\" : true }");
	EXPECT_JSON("if (this.a) { 1 } else { 2 }", NULL, "{\"a\": 3}", "{ \"r\" : { \"$undefined\" : true } }");
	EXPECT_JSON("function () { return this.a; }", NULL, "{\"a\": \"x\"}", "{ \"r\" : \"x\" }");
	EXPECT_JSON("  function named(a, b) { return a + b }  ", "{\"a\": [1, 2]}", NULL,
	            "{ \"r\" : { \"$numberDouble\" : \"3.0\" } }");
	EXPECT_ERR("function ( { ", NULL, NULL, 139, "SyntaxError");
	EXPECT_ERR("function () { throw new Error('boom'); }", NULL, NULL, 139, "Error: boom");
	EXPECT_ERR("function () { return nosuch + 1; }", NULL, NULL, 139, "ReferenceError: nosuch is not defined :\n@:1:");
	EXPECT_ERR("this.a.b.c", NULL, "{\"a\": 1}", 139, "TypeError: this.a.b is undefined :\nanonymous@:");
	EXPECT_ERR("function () { throw 'plain'; }", NULL, NULL, 139, "plain");
}

/* No host functions: files, network, processes are out of reach. */
static void
test_sandbox(void)
{
	EXPECT_JSON("function () { return [typeof load, typeof run, typeof runProgram, typeof readFile, "
	            "typeof cat, typeof ls, typeof Mongo, typeof db, typeof connect, typeof quit, typeof os, "
	            "typeof _rand, typeof removeFile, typeof writeFile, typeof require, typeof process, "
	            "typeof XMLHttpRequest, typeof fetch, typeof import_, typeof snarf, typeof system]; }",
	            NULL, NULL,
	            "{ \"r\" : [ \"undefined\", \"undefined\", \"undefined\", \"undefined\", \"undefined\", "
	            "\"undefined\", \"undefined\", \"undefined\", \"undefined\", \"undefined\", \"undefined\", "
	            "\"undefined\", \"undefined\", \"undefined\", \"undefined\", \"undefined\", \"undefined\", "
	            "\"undefined\", \"undefined\", \"undefined\", \"undefined\" ] }");
	EXPECT_ERR("function () { return load('/etc/passwd'); }", NULL, NULL, 139, "load is not defined");
	/* scripts cannot reach the compiled-function cache or the function maker */
	EXPECT_JSON("function () { __tm_makefn = null; return [typeof __tm_fn, typeof __tm_makefn]; }", NULL, NULL,
	            "{ \"r\" : [ \"undefined\", \"function\" ] }");
	EXPECT_JSON("function () { return 'still compiles'; }", NULL, NULL, "{ \"r\" : \"still compiles\" }");
	EXPECT_ERR("function () { return readFile('/etc/passwd'); }", NULL, NULL, 139, "readFile is not defined");
	EXPECT_ERR("function () { return new Mongo('localhost'); }", NULL, NULL, 139, "Mongo is not defined");
	EXPECT_ERR("function () { return run('ls'); }", NULL, NULL, 139, "run is not defined");
}

/* Bad input: cycles, deep nesting, NUL in names, runaway recursion. */
static void
test_bad_values(void)
{
	EXPECT_ERR("function () { var a = {}; a.self = a; return a; }", NULL, NULL, 17279,
	           "Exceeded depth limit of 150 when converting js object to BSON. Do you have a cycle?");
	EXPECT_ERR("function () { var o = {}; o['a\\u0000b'] = 1; return o; }", NULL, NULL, 16985,
	           "contains a null char");
	EXPECT_ERR("function () { return 10n; }", NULL, NULL, 16662,
	           "unable to convert JavaScript property to mongo element r");
	EXPECT_ERR("function f() { return f() + 1; }", NULL, NULL, 139, "too much recursion");
	EXPECT_ERR("function () { return NumberLong('abc'); }", NULL, NULL, 139, "could not convert");
	EXPECT_ERR("function () { return 'x'.repeat(17 * 1024 * 1024); }", NULL, NULL, 10334, "BSONObj size");
}

/* maxTimeMS reaches scripts through the operation context. */
static void
test_deadline(void)
{
	tm_opctx_t op;
	terr_t err = TERR_INIT;
	bson_t *r;
	int64_t t0;

	memset(&op, 0, sizeof(op));
	tm_opctx_begin(&op, NULL);
	tm_opctx_set_deadline(tm_now_us() + 100000);
	t0 = tm_now_us();
	r = run("function () { while (true) {} }", NULL, NULL, &err);
	TT_ASSERT(r == NULL);
	TT_EQ_INT(err.code, 50);
	TT_EQ_STR(err.msg, "operation exceeded time limit");
	TT_ASSERT(tm_now_us() - t0 < 2000000);
	terr_clear(&err);
	tm_opctx_end(&op);

	/* try/catch cannot swallow it */
	memset(&op, 0, sizeof(op));
	tm_opctx_begin(&op, NULL);
	tm_opctx_set_deadline(tm_now_us() + 50000);
	r = run("function () { for (;;) { try { while (true) {} } catch (e) {} } }", NULL, NULL, &err);
	TT_ASSERT(r == NULL);
	TT_EQ_INT(err.code, 50);
	terr_clear(&err);
	tm_opctx_end(&op);

	/* sleep() honours it too */
	memset(&op, 0, sizeof(op));
	tm_opctx_begin(&op, NULL);
	tm_opctx_set_deadline(tm_now_us() + 50000);
	t0 = tm_now_us();
	r = run("function () { try { sleep(100000); } catch (e) {} return 1; }", NULL, NULL, &err);
	TT_ASSERT(r == NULL);
	TT_EQ_INT(err.code, 50);
	TT_ASSERT(tm_now_us() - t0 < 2000000);
	terr_clear(&err);
	tm_opctx_end(&op);

	/* killOp */
	memset(&op, 0, sizeof(op));
	tm_opctx_begin(&op, NULL);
	tm_opctx_kill(op.opid);
	r = run("function () { while (true) {} }", NULL, NULL, &err);
	TT_ASSERT(r == NULL);
	TT_EQ_INT(err.code, 11601);
	terr_clear(&err);
	tm_opctx_end(&op);

	/* and the context still works afterwards */
	EXPECT_JSON("function () { return 1 + 1; }", NULL, NULL, "{ \"r\" : { \"$numberDouble\" : \"2.0\" } }");
}

/* The heap limit: unbounded allocation ends with 139 "Out of memory" and
 * the thread's engine keeps working. */
static void
test_memory_limit(void)
{
	terr_t err = TERR_INIT;
	bson_t *r;
	tm_opctx_t op;
	int64_t t0 = tm_now_us();

	/* a generous deadline only so that a broken limit fails the test
	 * instead of hanging it */
	memset(&op, 0, sizeof(op));
	tm_opctx_begin(&op, NULL);
	tm_opctx_set_deadline(tm_now_us() + 60000000);
	r = run("function () { var a = []; while (true) a.push({x: a.length, s: 'abc' + a.length}); }",
	        NULL, NULL, &err);
	fprintf(stderr, "memory: %d %s after %lld ms\n", err.code, err.msg ? err.msg : "",
	        (long long)(tm_now_us() - t0) / 1000);
	TT_ASSERT(r == NULL);
	TT_EQ_INT(err.code, 139);
	TT_ASSERT(err.msg != NULL && (strstr(err.msg, "Out of memory") != NULL ||
	                              strstr(err.msg, "out of memory") != NULL));
	terr_clear(&err);
	/* numbers only: the elements are malloc'd, outside the GC heap */
	t0 = tm_now_us();
	r = run("function () { var a = []; while (true) a.push(a.length); }", NULL, NULL, &err);
	fprintf(stderr, "memory (elements): %d %s after %lld ms\n", err.code, err.msg ? err.msg : "",
	        (long long)(tm_now_us() - t0) / 1000);
	TT_ASSERT(r == NULL);
	TT_EQ_INT(err.code, 139);
	terr_clear(&err);
	r = run("function () { var s = 'x'; while (true) s += s; }", NULL, NULL, &err);
	TT_ASSERT(r == NULL);
	TT_EQ_INT(err.code, 139);
	terr_clear(&err);
	tm_opctx_end(&op);
	EXPECT_JSON("function () { return [1, 2].length; }", NULL, NULL, "{ \"r\" : { \"$numberDouble\" : \"2.0\" } }");
}

static void *
thread_body(void *arg)
{
	uint64_t *created = arg;
	uint64_t before = js_contexts_created();

	for (int i = 0; i < 50; i++)
		EXPECT_JSON("function (a) { return a * 2; }", "{\"a\": [21]}", NULL,
		            "{ \"r\" : { \"$numberDouble\" : \"42.0\" } }");
	*created = js_contexts_created() - before;
	js_thread_release();
	return NULL;
}

/* One engine per thread, reused across calls; globals per key. */
static void
test_per_thread(void)
{
	uint64_t before = js_contexts_created(), c1 = 0, c2 = 0;
	pthread_t t1, t2;
	js_ctx_t *a, *b;
	terr_t err = TERR_INIT;

	for (int i = 0; i < 100; i++)
		EXPECT_JSON("function () { return 1; }", NULL, NULL, "{ \"r\" : { \"$numberDouble\" : \"1.0\" } }");
	TT_ASSERT(js_contexts_created() - before <= 1);
	pthread_create(&t1, NULL, thread_body, &c1);
	pthread_create(&t2, NULL, thread_body, &c2);
	pthread_join(t1, NULL);
	pthread_join(t2, NULL);
	TT_ASSERT(js_contexts_created() - before <= 3);

	/* a global set under one key is not seen under another */
	TT_ASSERT(js_scope_enter("k1", &a, &err) == 0);
	{
		js_ref_t r = js_eval(a, "globalThis.leak = 1; 1", 20, "t", &err);
		TT_ASSERT(r >= 0);
	}
	TT_ASSERT(js_scope_enter("k2", &b, &err) == 0);
	{
		js_ref_t r = js_eval(b, "typeof leak", 11, "t", &err);
		char *s = NULL;
		size_t n;
		TT_ASSERT(r >= 0 && js_to_string(b, r, &s, &n) == 0);
		TT_EQ_STR(s, "undefined");
		free(s);
		js_pop_to(b, 0);
	}
	TT_ASSERT(a == b);
	terr_clear(&err);
}

static void
test_disabled_flag(void)
{
	TT_ASSERT(js_enabled());
	js_set_enabled(false);
	TT_ASSERT(!js_enabled());
	js_set_enabled(true);
	TT_ASSERT(js_enabled());
}

int
main(void)
{
	js_set_heap_limit_mb(16);
	TT_RUN(test_round_trip_types);
	TT_RUN(test_types_in_js);
	TT_RUN(test_helpers);
	TT_RUN(test_function_maker);
	TT_RUN(test_sandbox);
	TT_RUN(test_bad_values);
	TT_RUN(test_deadline);
	TT_RUN(test_memory_limit);
	TT_RUN(test_per_thread);
	TT_RUN(test_disabled_flag);
	js_thread_release();
	return tt_finish();
}
