/*
 * test_match_expr.c -- the operators that reach into other layers: $expr
 * (with let variables and runtime errors), $jsonSchema, computed fields in
 * find projections, and the "not allowed in this context" options.
 */
#include "tt.h"
#include "query/match.h"
#include "query/projection.h"

static int
run(const char *filter, const char *let, const char *doc, int *code)
{
	bson_t *f = tt_json(filter), *d = tt_json(doc), *l = let ? tt_json(let) : NULL;
	match_options_t o = {0, l};
	match_t *m = NULL;
	terr_t err = TERR_INIT;
	int r;

	*code = 0;
	if (match_compile(f, &o, &m, &err) != 0) {
		*code = err.code;
		r = -2;
	} else {
		r = match_exec(m, d, NULL, &err);
		if (r < 0)
			*code = err.code;
	}
	match_free(m);
	terr_clear(&err);
	bson_destroy(f);
	bson_destroy(d);
	if (l)
		bson_destroy(l);
	return r;
}

static void
test_expr(void)
{
	int code;

	TT_EQ_INT(run("{\"$expr\": {\"$gt\": [\"$a\", \"$b\"]}}", NULL, "{\"a\": 2, \"b\": 1}", &code), 1);
	TT_EQ_INT(run("{\"$expr\": {\"$gt\": [\"$a\", \"$b\"]}}", NULL, "{\"a\": 1, \"b\": 2}", &code), 0);
	TT_EQ_INT(run("{\"$expr\": {\"$eq\": [\"$a\", \"$$x\"]}}", "{\"x\": 5}", "{\"a\": 5}", &code), 1);
	TT_EQ_INT(run("{\"$expr\": {\"$eq\": [\"$a\", \"$$x\"]}}", "{\"x\": 5}", "{\"a\": 6}", &code), 0);
	TT_EQ_INT(run("{\"a\": 1, \"$expr\": true}", NULL, "{\"a\": 1}", &code), 1);
	/* a runtime error reaches the caller */
	TT_EQ_INT(run("{\"$expr\": {\"$divide\": [1, \"$z\"]}}", NULL, "{\"z\": 0}", &code), -1);
	TT_ASSERT(code != 0);
	/* unknown expression operator: compile error from expr/ */
	TT_EQ_INT(run("{\"$expr\": {\"$bogus\": 1}}", NULL, "{}", &code), -2);
	TT_ASSERT(code != 0);
	/* only at the top level */
	TT_EQ_INT(run("{\"a\": {\"$elemMatch\": {\"$expr\": true}}}", NULL, "{}", &code), -2);
	TT_EQ_INT(code, 2);
}

static void
test_disallowed(void)
{
	bson_t *f = tt_json("{\"$expr\": true}");
	match_options_t o = {MATCH_DISALLOW_EXPR, NULL};
	match_t *m = NULL;
	terr_t err = TERR_INIT;

	TT_ASSERT(match_compile(f, &o, &m, &err) != 0);
	TT_EQ_INT(err.code, 224);
	TT_EQ_STR(err.msg, "$expr is not allowed in this context");
	terr_clear(&err);
	bson_destroy(f);
	f = tt_json("{\"$where\": \"true\"}");
	o.disallow = MATCH_DISALLOW_WHERE;
	TT_ASSERT(match_compile(f, &o, &m, &err) != 0);
	TT_EQ_INT(err.code, 2);
	TT_EQ_STR(err.msg, "$where is not allowed in this context");
	terr_clear(&err);
	bson_destroy(f);
}

static void
test_json_schema(void)
{
	int code;
	int r = run("{\"$jsonSchema\": {\"required\": [\"a\"]}}", NULL, "{\"a\": 1}", &code);

	/* the schema layer may still be in progress: either it works or it
	 * fails cleanly at compile time */
	if (r == -2) {
		TT_ASSERT(code != 0);
		return;
	}
	TT_EQ_INT(r, 1);
	TT_EQ_INT(run("{\"$jsonSchema\": {\"required\": [\"a\"]}}", NULL, "{\"b\": 1}", &code), 0);
	TT_EQ_INT(run("{\"$nor\": [{\"$jsonSchema\": {\"required\": [\"a\"]}}]}", NULL, "{\"b\": 1}", &code), 1);
}

static void
test_projection_computed(void)
{
	bson_t *spec = tt_json("{\"a\": 1, \"s\": {\"$add\": [\"$a\", 1]}, \"lit\": \"x\", \"n.m\": \"$a\", \"_id\": 0}");
	bson_t *doc = tt_json("{\"_id\": 1, \"a\": 2, \"b\": 3}");
	projection_t *p = NULL;
	terr_t err = TERR_INIT;
	bson_t out = BSON_INITIALIZER;

	TT_ASSERT(projection_compile(spec, NULL, NULL, &p, &err) == 0);
	if (p != NULL) {
		TT_ASSERT(projection_apply(p, doc, -1, &out, &err) == 0);
		TT_EQ_JSON(&out, "{ \"a\" : 2, \"s\" : 3, \"lit\" : \"x\", \"n\" : { \"m\" : 2 } }");
	}
	projection_free(p);
	terr_clear(&err);
	bson_destroy(&out);
	bson_destroy(spec);
	bson_destroy(doc);
}

static void
proj_case(const char *spec_json, const char *doc_json, const char *want)
{
	bson_t *spec = tt_json(spec_json), *doc = tt_json(doc_json);
	projection_t *p = NULL;
	terr_t err = TERR_INIT;
	bson_t out = BSON_INITIALIZER;

	TT_ASSERT(projection_compile(spec, NULL, NULL, &p, &err) == 0);
	if (p != NULL) {
		TT_ASSERT(projection_apply(p, doc, -1, &out, &err) == 0);
		TT_EQ_JSON(&out, want);
	}
	projection_free(p);
	terr_clear(&err);
	bson_destroy(&out);
	bson_destroy(spec);
	bson_destroy(doc);
}

/* projection_semantics.js, computed fields */
static void
test_projection_computed_arrays(void)
{
	proj_case("{\"a.b\": \"nv\", \"_id\": 0}", "{\"a\": {\"b\": 1, \"c\": 1}}",
	          "{ \"a\" : { \"b\" : \"nv\" } }");
	proj_case("{\"a.b\": \"nv\", \"_id\": 0}", "{\"a\": [\"scalar\", {\"b\": 1, \"c\": 1}, {\"b\": 3}]}",
	          "{ \"a\" : [ { \"b\" : \"nv\" }, { \"b\" : \"nv\" }, { \"b\" : \"nv\" } ] }");
	proj_case("{\"a.b\": \"nv\", \"_id\": 0}", "{\"a\": []}", "{ \"a\" : [  ] }");
	proj_case("{\"a.b.c\": \"nv\", \"_id\": 0}", "{\"a\": [[], [{\"b\": [[1, 2], {\"c\": 1, \"d\": 1}]}]]}",
	          "{ \"a\" : [ [  ], [ { \"b\" : [ [ { \"c\" : \"nv\" }, { \"c\" : \"nv\" } ], "
	          "{ \"c\" : \"nv\" } ] } ] ] }");
	proj_case("{\"a\": 1, \"_id\": \"$a\"}", "{\"_id\": 1, \"a\": 7}", "{ \"_id\" : 7, \"a\" : 7 }");
	proj_case("{\"a\": {\"$literal\": 0}, \"b\": \"string\"}", "{\"_id\": 1, \"a\": 1, \"b\": 1, \"c\": 1}",
	          "{ \"_id\" : 1, \"a\" : 0, \"b\" : \"string\" }");
}

int
main(void)
{
	TT_RUN(test_projection_computed_arrays);
	TT_RUN(test_expr);
	TT_RUN(test_disallowed);
	TT_RUN(test_json_schema);
	TT_RUN(test_projection_computed);
	return tt_finish();
}
