/*
 * test_projection.c -- find projections: inclusion/exclusion, _id rules,
 * nested paths and arrays, $slice, $elemMatch, positional, and mongod's
 * errors for invalid projections.
 */
#include "tt.h"
#include "query/projection.h"

static char outbuf[1024];

/* Project doc; returns relaxed JSON of the result or "error <code>". */
static const char *
proj(const char *filter, const char *spec, const char *doc)
{
	bson_t *s = tt_json(spec), *d = tt_json(doc), *f = tt_json(filter ? filter : "{}");
	projection_t *p = NULL;
	match_t *m = NULL;
	terr_t err = TERR_INIT;
	bson_t out = BSON_INITIALIZER;
	int pos = -1;

	if (match_compile(f, NULL, &m, &err) != 0) {
		snprintf(outbuf, sizeof outbuf, "bad filter");
		goto done;
	}
	if (projection_compile(s, m, NULL, &p, &err) != 0) {
		snprintf(outbuf, sizeof outbuf, "error %d: %s", err.code, err.msg);
		goto done;
	}
	if (projection_needs_match_pos(p))
		(void)match_eval_pos(m, d, &pos);
	if (projection_apply(p, d, pos, &out, &err) != 0) {
		snprintf(outbuf, sizeof outbuf, "error %d: %s", err.code, err.msg);
		goto done;
	}
	{
		char *j = bson_as_relaxed_extended_json(&out, NULL);
		snprintf(outbuf, sizeof outbuf, "%s", j);
		bson_free(j);
	}
done:
	projection_free(p);
	match_free(m);
	terr_clear(&err);
	bson_destroy(&out);
	bson_destroy(s);
	bson_destroy(d);
	bson_destroy(f);
	return outbuf;
}

static int perr(const char *filter, const char *spec);

#define P(spec, doc, want) TT_EQ_STR(proj(NULL, spec, doc), want)

static void
test_inclusion_exclusion(void)
{
	P("{\"a\": 1}", "{\"_id\": 1, \"a\": 2, \"b\": 3}", "{ \"_id\" : 1, \"a\" : 2 }");
	P("{\"a\": 1, \"_id\": 0}", "{\"_id\": 1, \"a\": 2, \"b\": 3}", "{ \"a\" : 2 }");
	P("{\"b\": true, \"a\": 1}", "{\"_id\": 1, \"a\": 2, \"b\": 3}", "{ \"_id\" : 1, \"a\" : 2, \"b\" : 3 }");
	P("{\"a\": 0}", "{\"_id\": 1, \"a\": 2, \"b\": 3}", "{ \"_id\" : 1, \"b\" : 3 }");
	P("{\"_id\": 0}", "{\"_id\": 1, \"a\": 2}", "{ \"a\" : 2 }");
	P("{\"_id\": 1}", "{\"_id\": 1, \"a\": 2}", "{ \"_id\" : 1 }");
	P("{}", "{\"_id\": 1, \"a\": 2}", "{ \"_id\" : 1, \"a\" : 2 }");
	P("{\"a.b\": 1}", "{\"_id\": 1, \"a\": {\"b\": 1, \"c\": 2}, \"d\": 1}",
	  "{ \"_id\" : 1, \"a\" : { \"b\" : 1 } }");
	P("{\"a\": {\"b\": 1}}", "{\"_id\": 1, \"a\": {\"b\": 1, \"c\": 2}}",
	  "{ \"_id\" : 1, \"a\" : { \"b\" : 1 } }");
	P("{\"a.b\": 1, \"_id\": 0}", "{\"a\": [{\"b\": 1, \"c\": 2}, 5, [{\"b\": 3}], {\"c\": 1}]}",
	  "{ \"a\" : [ { \"b\" : 1 }, [ { \"b\" : 3 } ], {  } ] }");
	P("{\"a.b\": 0}", "{\"a\": [{\"b\": 1, \"c\": 2}, 5]}", "{ \"a\" : [ { \"c\" : 2 }, 5 ] }");
	P("{\"a.b\": 1, \"_id\": 0}", "{\"a\": 5}", "{ }");
	P("{\"a.b\": 0}", "{\"a\": 5}", "{ \"a\" : 5 }");
	P("{\"x\": 1}", "{\"_id\": 1}", "{ \"_id\" : 1 }");
	/* projection_semantics.js */
	P("{\"a.b\": 1, \"_id\": 0}", "{\"a\": [\"scalar\", {}, \"scalar\", {\"c\": 1}]}", "{ \"a\" : [ {  }, {  } ] }");
	P("{\"a.b\": 1, \"_id\": 0}", "{\"a\": [[1, 2, 3]]}", "{ \"a\" : [ [  ] ] }");
	P("{\"a.b\": 1, \"_id\": 0}", "{\"a\": [[], [[], [], [1], [{\"c\": 1}]], {\"b\": 1}]}",
	  "{ \"a\" : [ [  ], [ [  ], [  ], [  ], [ {  } ] ], { \"b\" : 1 } ] }");
	P("{\"a.b\": 1}", "{\"_id\": 1, \"a\": \"scalar\"}", "{ \"_id\" : 1 }");
	P("{\"a.b\": 1}", "{\"_id\": 1, \"a\": {\"b\": \"demo\", \"_id\": \"extra\"}}",
	  "{ \"_id\" : 1, \"a\" : { \"b\" : \"demo\" } }");
	P("{\"a.b\": 1, \"a.c\": 1, \"_id\": 0}", "{\"a\": {\"d\": \"extra\"}}", "{ \"a\" : {  } }");
}

static void
test_slice_elem_positional(void)
{
	P("{\"a\": {\"$slice\": 2}}", "{\"a\": [1, 2, 3], \"b\": 1}", "{ \"a\" : [ 1, 2 ], \"b\" : 1 }");
	P("{\"a\": {\"$slice\": -2}}", "{\"a\": [1, 2, 3]}", "{ \"a\" : [ 2, 3 ] }");
	P("{\"a\": {\"$slice\": [1, 1]}}", "{\"a\": [1, 2, 3]}", "{ \"a\" : [ 2 ] }");
	P("{\"a\": {\"$slice\": [-1, 5]}}", "{\"a\": [1, 2, 3]}", "{ \"a\" : [ 3 ] }");
	P("{\"a\": {\"$slice\": [5, 5]}}", "{\"a\": [1, 2, 3]}", "{ \"a\" : [  ] }");
	P("{\"a\": {\"$slice\": 1}}", "{\"a\": 7}", "{ \"a\" : 7 }");
	P("{\"a\": {\"$slice\": 1}, \"b\": 1, \"_id\": 0}", "{\"a\": [1, 2], \"b\": 1, \"c\": 1}",
	  "{ \"a\" : [ 1 ], \"b\" : 1 }");
	P("{\"a\": {\"$elemMatch\": {\"b\": {\"$gt\": 1}}}}",
	  "{\"_id\": 1, \"a\": [{\"b\": 1}, {\"b\": 2}, {\"b\": 3}], \"c\": 1}",
	  "{ \"_id\" : 1, \"a\" : [ { \"b\" : 2 } ] }");
	P("{\"a\": {\"$elemMatch\": {\"$gt\": 5}}}", "{\"_id\": 1, \"a\": [1, 2]}", "{ \"_id\" : 1 }");
	/* $elemMatch fields come after the other included fields */
	P("{\"a\": {\"$elemMatch\": {\"$gt\": 1}}, \"b\": 1}", "{\"_id\": 1, \"a\": [1, 2], \"b\": 3}",
	  "{ \"_id\" : 1, \"b\" : 3, \"a\" : [ 2 ] }");
	P("{\"a\": {\"$elemMatch\": {\"$gt\": 1}}, \"b\": 0}", "{\"_id\": 1, \"a\": [1, 2], \"c\": 3}",
	  "{ \"_id\" : 1, \"c\" : 3, \"a\" : [ 2 ] }");
	TT_EQ_STR(proj("{\"a\": {\"$gt\": 1}}", "{\"a.$\": 1}", "{\"_id\": 1, \"a\": [1, 5, 7]}"),
	          "{ \"_id\" : 1, \"a\" : [ 5 ] }");
	TT_EQ_STR(proj("{\"a.b\": 2}", "{\"a.$\": 1, \"_id\": 0}", "{\"a\": [{\"b\": 1}, {\"b\": 2}]}"),
	          "{ \"a\" : [ { \"b\" : 2 } ] }");
	TT_EQ_STR(proj("{\"a.b\": 2}", "{\"a.b.$\": 1, \"_id\": 0}",
	               "{\"a\": [{\"b\": 1, \"c\": 1}, {\"b\": 2, \"c\": 2}]}"),
	          "{ \"a\" : [ { \"b\" : 2 } ] }");
}

/* positional_projection.js */
static void
test_positional_js(void)
{
#define PJ(q, p, d, want) TT_EQ_STR(proj(q, p, d), want)
	PJ("{\"x.a\": 2}", "{\"x.$\": 1, \"_id\": 0}",
	   "{\"x\": [{\"a\": 1, \"b\": 2}, {\"a\": 2, \"c\": 3}], \"y\": [1]}",
	   "{ \"x\" : [ { \"a\" : 2, \"c\" : 3 } ] }");
	PJ("{\"x.y.a\": 1}", "{\"x.y.$\": 1, \"_id\": 0}",
	   "{\"x\": {\"y\": [{\"a\": 1, \"b\": 1}, {\"a\": 1, \"b\": 2}]}}",
	   "{ \"x\" : { \"y\" : [ { \"a\" : 1, \"b\" : 1 } ] } }");
	PJ("{}", "{\"g.$\": 1, \"_id\": 0}", "{\"x\": [1]}", "{ }");
	PJ("{\"x\": 1}", "{\"a.$\": 1, \"_id\": 0}", "{\"x\": 1}", "{ }");
	PJ("{\"x\": {\"$gt\": 0}}", "{\"a.b.c.$\": 1, \"_id\": 0}",
	   "{\"x\": [-1, 1, 2], \"a\": {\"b\": {\"d\": [1, 2, 3], \"f\": 456}, \"e\": 123}}",
	   "{ \"a\" : { \"b\" : {  } } }");
	PJ("{\"x\": 1}", "{\"a.b.c.$\": 1, \"_id\": 0}",
	   "{\"x\": [1], \"a\": [{\"b\": [[[{\"c\": 1, \"d\": 2}]]]}]}",
	   "{ \"a\" : [ { \"b\" : [ [ [ { \"c\" : 1 } ] ] ] } ] }");
	PJ("{\"x\": {\"$gt\": 0}}", "{\"a.b.c.$\": 1, \"_id\": 0}",
	   "{\"x\": [-1, 1, 2], \"a\": {\"b\": {\"c\": 123}}}", "{ \"a\" : { \"b\" : { \"c\" : 123 } } }");
	PJ("{\"x.y.z\": 1}", "{\"a.b.c.$\": 1, \"_id\": 0}",
	   "{\"x\": {\"y\": {\"z\": [0, 1, 2]}}, \"a\": [{\"b\": {\"c\": [1, 2]}}, {\"b\": {\"c\": [4, 5]}}]}",
	   "{ \"a\" : [ { \"b\" : { \"c\" : [ 4, 5 ] } } ] }");
	PJ("{\"x.y.z\": 1}", "{\"a.b.c.$\": 1, \"_id\": 0}",
	   "{\"x\": {\"y\": {\"z\": [0, 1, 2]}}, \"a\": {\"b\": {\"c\": [1, 2, 3]}}}",
	   "{ \"a\" : { \"b\" : { \"c\" : [ 2 ] } } }");
	PJ("{\"x\": {\"$elemMatch\": {\"$gt\": 1, \"$lt\": 3}}}", "{\"x.$\": 1, \"_id\": 0}",
	   "{\"x\": [1, 2, 3]}", "{ \"x\" : [ 2 ] }");
	PJ("{\"a\": {\"$elemMatch\": {\"$elemMatch\": {\"$eq\": 3}}}}", "{\"b.$\": 1, \"_id\": 0}",
	   "{\"a\": [[1, 2], [3, 4]], \"b\": [[5, 6], [7, 8]]}", "{ \"b\" : [ [ 7, 8 ] ] }");
	PJ("{\"a\": {\"$elemMatch\": {\"q\": {\"$elemMatch\": {\"$eq\": 7}}}}}", "{\"b.$\": 1, \"_id\": 0}",
	   "{\"a\": [{\"p\": [1, 2], \"q\": [3, 4]}, {\"p\": [5, 6], \"q\": [7, 8]}], \"b\": [11, 12]}",
	   "{ \"b\" : [ 12 ] }");
	PJ("{\"$and\": [{\"a\": 1}, {\"a\": 2}, {\"a\": 3}]}", "{\"b.$\": 1, \"_id\": 0}",
	   "{\"a\": [1, 2, 3], \"b\": [4, 5, 6]}", "{ \"b\" : [ 6 ] }");
	PJ("{\"$and\": [{\"a\": 3}, {\"a\": 2}, {\"a\": 1}]}", "{\"b.$\": 1, \"_id\": 0}",
	   "{\"a\": [1, 2, 3], \"b\": [4, 5, 6]}", "{ \"b\" : [ 4 ] }");
	PJ("{\"a\": {\"$in\": [2, 3]}}", "{\"b.$\": 1, \"_id\": 0}",
	   "{\"a\": [1, 2, 3], \"b\": [4, 5, 6]}", "{ \"b\" : [ 5 ] }");
	PJ("{\"$or\": [{\"a\": 2}, {\"a\": 3}]}", "{\"b.$\": 1, \"_id\": 0}",
	   "{\"a\": [1, 2, 3], \"b\": [4, 5, 6]}", "{ \"b\" : [ 5 ] }");
	PJ("{\"a\": {\"$elemMatch\": {\"y\": {\"$exists\": true}}}}", "{\"a.$\": 1, \"_id\": 0}",
	   "{\"a\": [{\"y\": 1}, {\"y\": 2}]}", "{ \"a\" : [ { \"y\" : 1 } ] }");
	/* no position recorded */
	TT_ASSERT(strncmp(proj("{}", "{\"x.$\": 1}", "{\"x\": [1]}"), "error 51246", 11) == 0);
	TT_ASSERT(strncmp(proj("{\"b\": [4, 5, 6]}", "{\"c.$\": 1}", "{\"b\": [4, 5, 6], \"c\": [7, 8, 9]}"),
	                  "error 51246", 11) == 0);
	TT_ASSERT(strncmp(proj("{\"$or\": [{\"a\": 1}, {\"b\": 5}]}", "{\"a.$\": 1}",
	                       "{\"a\": [1, 2, 3], \"b\": [4, 5, 6]}"), "error 51246", 11) == 0);
	TT_ASSERT(strncmp(proj("{\"$nor\": [{\"a\": -1}]}", "{\"a.$\": 1}", "{\"a\": [1, 2, 3]}"),
	                  "error 51246", 11) == 0);
	TT_ASSERT(strncmp(proj("{\"a\": {\"$not\": {\"$elemMatch\": {\"$eq\": 100}}}}", "{\"a.$\": 1}",
	                       "{\"a\": [1, 2, 3]}"), "error 51246", 11) == 0);
	TT_EQ_INT(perr("{\"x\": 1}", "{\"x.$\": {\"$slice\": 1}}"), 31271);
	TT_EQ_INT(perr("{\"x.a\": 2}", "{\"x.$\": 1, \"y\": 0}"), 31254);
}

static int
perr(const char *filter, const char *spec)
{
	const char *r = proj(filter, spec, "{}");

	if (strncmp(r, "error ", 6) != 0)
		return 0;
	return atoi(r + 6);
}

static void
test_errors(void)
{
	TT_EQ_INT(perr(NULL, "{\"a\": 1, \"b\": 0}"), 31254);
	TT_EQ_STR(outbuf, "error 31254: Cannot do exclusion on field b in inclusion projection");
	TT_EQ_INT(perr(NULL, "{\"a\": 0, \"b\": 1}"), 31253);
	TT_EQ_STR(outbuf, "error 31253: Cannot do inclusion on field b in exclusion projection");
	TT_EQ_INT(perr(NULL, "{\"a\": 1, \"a.b\": 1}"), 31249);
	TT_EQ_STR(outbuf, "error 31249: Path collision at a.b remaining portion b");
	TT_EQ_INT(perr(NULL, "{\"a.b\": 1, \"a\": 1}"), 31250);
	TT_EQ_STR(outbuf, "error 31250: Path collision at a");
	TT_EQ_INT(perr(NULL, "{\"a\": {\"$slice\": \"x\"}}"), 31273);
	TT_EQ_INT(perr(NULL, "{\"a\": {\"$slice\": [1]}}"), 31272);
	TT_EQ_INT(perr(NULL, "{\"a\": {\"$slice\": [1, 0]}}"), 31259);
	TT_EQ_INT(perr(NULL, "{\"a\": {\"$elemMatch\": 1}}"), 31274);
	TT_EQ_INT(perr(NULL, "{\"a.b\": {\"$elemMatch\": {\"x\": 1}}}"), 31275);
	TT_EQ_INT(perr(NULL, "{\".$\": 1}"), 5392900);
	TT_EQ_INT(perr("{\"a\": 1}", "{\"a.$\": 1, \"b.$\": 1}"), 31276);
	TT_EQ_INT(perr("{\"a\": 1}", "{\"a.$\": 0}"), 16410);
	TT_EQ_INT(perr(NULL, "{\"a\": {}}"), 51270);
	TT_EQ_INT(perr(NULL, "{\"$a\": 1}"), 16410);
	TT_EQ_INT(perr(NULL, "{\"a..b\": 1}"), 15998);
	TT_EQ_INT(perr(NULL, "{\"a\": {\"$meta\": \"textScore\"}}"), 40218);
	TT_EQ_INT(perr(NULL, "{\"a\": 0, \"b\": {\"$add\": [1, 2]}}"), 31252);
}

static uint64_t rs = 0x9E3779B97F4A7C15ull;

static uint32_t
rnd(uint32_t n)
{
	rs ^= rs << 13;
	rs ^= rs >> 7;
	rs ^= rs << 17;
	return (uint32_t)(rs % n);
}

static const char *junk_keys[] = {"a", "b", "a.b", "a.$", "_id", "$slice", "$elemMatch", "$meta",
                                  "a.b.c", "", "$add", "c.$", "x..y", "$literal", "b.0"};

static void
junk(bson_t *b, const char *k, int depth)
{
	bson_t sub;

	switch (rnd(depth > 2 ? 7 : 10)) {
	case 0: BSON_APPEND_INT32(b, k, (int32_t)rnd(3) - 1); break;
	case 1: BSON_APPEND_BOOL(b, k, rnd(2)); break;
	case 2: BSON_APPEND_UTF8(b, k, "$a"); break;
	case 3: BSON_APPEND_DOUBLE(b, k, 0.5); break;
	case 4: BSON_APPEND_NULL(b, k); break;
	case 5: BSON_APPEND_INT32(b, k, 1); break;
	case 6: BSON_APPEND_UTF8(b, k, "textScore"); break;
	case 7:
		bson_append_array_begin(b, k, -1, &sub);
		for (uint32_t i = 0, n = rnd(3); i < n; i++)
			junk(&sub, i ? "1" : "0", depth + 1);
		bson_append_array_end(b, &sub);
		break;
	default:
		bson_append_document_begin(b, k, -1, &sub);
		for (uint32_t i = 0, n = rnd(3); i < n; i++) {
			const char *kk = junk_keys[rnd(sizeof junk_keys / sizeof junk_keys[0])];
			junk(&sub, kk, depth + 1);
		}
		bson_append_document_end(b, &sub);
		break;
	}
}

/* Random projection specs: compile succeeds or fails with a code; applying
 * never crashes. */
static void
test_random_specs(void)
{
	bson_t *doc = tt_json("{\"_id\": 1, \"a\": [{\"b\": [1, {\"c\": 2}]}, 3, [4]], \"b\": {\"0\": 1},"
	                      " \"c\": [1, 2, 3]}");
	bson_t *f = tt_json("{\"c\": 2}");
	match_t *m = NULL;
	terr_t err = TERR_INIT;
	int compiled = 0;

	TT_ASSERT(match_compile(f, NULL, &m, &err) == 0);
	for (int k = 0; k < 2000; k++) {
		bson_t *spec = bson_new();
		projection_t *p = NULL;

		for (uint32_t i = 0, n = 1 + rnd(3); i < n; i++) {
			const char *kk = junk_keys[rnd(sizeof junk_keys / sizeof junk_keys[0])];
			junk(spec, kk, 0);
		}
		if (projection_compile(spec, m, NULL, &p, &err) == 0) {
			bson_t out = BSON_INITIALIZER;
			int pos = -1;

			compiled++;
			(void)match_eval_pos(m, doc, &pos);
			(void)projection_apply(p, doc, pos, &out, &err);
			bson_destroy(&out);
		} else {
			TT_ASSERT(err.code != 0);
		}
		terr_clear(&err);
		projection_free(p);
		bson_destroy(spec);
	}
	TT_ASSERT(compiled > 0);
	match_free(m);
	bson_destroy(f);
	bson_destroy(doc);
}

int
main(void)
{
	TT_RUN(test_random_specs);
	TT_RUN(test_inclusion_exclusion);
	TT_RUN(test_slice_elem_positional);
	TT_RUN(test_errors);
	TT_RUN(test_positional_js);
	return tt_finish();
}
