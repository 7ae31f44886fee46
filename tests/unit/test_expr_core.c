/*
 * test_expr_core.c -- field paths, variables, expression objects/arrays,
 * comparison, boolean and conditional operators, $let, scopes and the env
 * API (let variables, $$NOW, reset), constant folding.
 */
#include "test_expr_util.h"

#include <math.h>

static void
test_paths(void)
{
	TX("\"$a\"", "{\"a\": 1}", RI("1"));
	TX("\"$a.b\"", "{\"a\": {\"b\": \"x\"}}", RS("x"));
	TX("\"$a.b\"", "{\"a\": [{\"b\": 1}, {\"c\": 2}, {\"b\": [3]}, 5, [{\"b\": 9}]]}",
	   RJ("[ { \"$numberInt\" : \"1\" }, [ { \"$numberInt\" : \"3\" } ] ]"));
	TX("\"$a.0\"", "{\"a\": [1, 2]}", RJ("[  ]"));
	TX("\"$a.b.c\"", "{\"a\": [{\"b\": [{\"c\": 1}, {\"c\": 2}]}]}",
	   RJ("[ [ { \"$numberInt\" : \"1\" }, { \"$numberInt\" : \"2\" } ] ]"));
	TX("\"$nope\"", "{\"a\": 1}", "missing");
	TX("\"$a.b\"", "{\"a\": 5}", "missing");
	TX("\"$$ROOT.a\"", "{\"a\": 7}", RI("7"));
	TX("\"$$CURRENT\"", "{\"a\": 7}", RJ("{ \"a\" : { \"$numberInt\" : \"7\" } }"));
	TX("\"$$REMOVE\"", "{}", "missing");
	TXERR("\"$$CLUSTER_TIME\"", "{}", "ERR 51144 Builtin variable '$$CLUSTER_TIME' is not available");
	TX("\"literal\"", NULL, RS("literal"));
	TX("{\"$literal\": \"$a\"}", "{\"a\": 1}", RS("$a"));
	TX("{\"$literal\": {\"$add\": 1}}", NULL, RJ("{ \"$add\" : { \"$numberInt\" : \"1\" } }"));
}

static void
test_objects_arrays(void)
{
	TX("{\"x\": \"$a\", \"y\": {\"z\": {\"$add\": [\"$a\", 1]}}, \"m\": \"$missing\"}", "{\"a\": 1}",
	   RJ("{ \"x\" : { \"$numberInt\" : \"1\" }, \"y\" : { \"z\" : { \"$numberInt\" : \"2\" } } }"));
	TX("[\"$a\", \"$missing\", 3]", "{\"a\": 1}",
	   RJ("[ { \"$numberInt\" : \"1\" }, null, { \"$numberInt\" : \"3\" } ]"));
	TX("{}", NULL, RJ("{  }"));
	TXERR("{\"a\": 1, \"a\": 2}", NULL, "ERR 16406 duplicate field name specified in object literal: { a: 1, a: 2 }");
}

static void
test_compare(void)
{
	TX("{\"$eq\": [1, 1.0]}", NULL, RJ("true"));
	TX("{\"$eq\": [\"$x\", null]}", "{}", RJ("false"));
	TX("{\"$eq\": [\"$x\", \"$y\"]}", "{}", RJ("true"));
	TX("{\"$lt\": [\"$x\", null]}", "{}", RJ("true"));
	TX("{\"$gt\": [\"a\", 5]}", NULL, RJ("true"));
	TX("{\"$cmp\": [1, 2]}", NULL, RI("-1"));
	TX("{\"$cmp\": [\"b\", \"a\"]}", NULL, RI("1"));
	TX("{\"$cmp\": [[1, 2], [1, 2]]}", NULL, RI("0"));
	TX("{\"$ne\": [{\"a\": 1}, {\"a\": 1}]}", NULL, RJ("false"));
	TX("{\"$gte\": [2, 2]}", NULL, RJ("true"));
	TX("{\"$lte\": [3, 2]}", NULL, RJ("false"));
	TXERR("{\"$eq\": [1]}", NULL, "ERR 16020 Expression $eq takes exactly 2 arguments. 1 were passed in.");
}

static void
test_boolean(void)
{
	TX("{\"$and\": [1, \"x\", []]}", NULL, RJ("true"));
	TX("{\"$and\": [1, 0]}", NULL, RJ("false"));
	TX("{\"$and\": []}", NULL, RJ("true"));
	TX("{\"$or\": [null, \"$missing\", 0.0]}", "{}", RJ("false"));
	TX("{\"$or\": [null, {\"$numberDecimal\": \"0.1\"}]}", NULL, RJ("true"));
	TX("{\"$not\": [0]}", NULL, RJ("true"));
	TX("{\"$not\": \"$missing\"}", "{}", RJ("true"));
	/* short circuit: the error is never evaluated */
	TX("{\"$and\": [false, {\"$divide\": [\"$a\", 0]}]}", "{\"a\": 1}", RJ("false"));
	TXERR("{\"$not\": [1, 2]}", NULL, "ERR 16020 Expression $not takes exactly 1 arguments. 2 were passed in.");
}

static void
test_conditional(void)
{
	TX("{\"$cond\": [true, 1, 2]}", NULL, RI("1"));
	TX("{\"$cond\": {\"if\": \"$missing\", \"then\": 1, \"else\": \"no\"}}", "{}", RS("no"));
	TXERR("{\"$cond\": [true, 1]}", NULL, "ERR 16020 Expression $cond takes exactly 3 arguments. 2 were passed in.");
	TXERR("{\"$cond\": {\"if\": true, \"then\": 1}}", NULL, "ERR 17082 Missing 'else' parameter to $cond");
	TXERR("{\"$cond\": {\"if\": true, \"then\": 1, \"else\": 2, \"x\": 1}}", NULL,
	      "ERR 17083 Unrecognized parameter to $cond: x");
	TX("{\"$ifNull\": [\"$a\", \"$b\", \"d\"]}", "{\"b\": 2}", RI("2"));
	TX("{\"$ifNull\": [\"$a\", \"$b\", \"d\"]}", "{\"a\": null}", RS("d"));
	TX("{\"$ifNull\": [\"$a\", \"$b\"]}", "{}", "missing");
	TX("{\"$ifNull\": [false, 1]}", NULL, RJ("false"));
	TXERR("{\"$ifNull\": [1]}", NULL, "ERR 1257300 $ifNull needs at least two arguments, had: 1");
	TX("{\"$switch\": {\"branches\": [{\"case\": {\"$eq\": [\"$a\", 1]}, \"then\": \"one\"}, "
	   "{\"case\": {\"$eq\": [\"$a\", 2]}, \"then\": \"two\"}], \"default\": \"many\"}}", "{\"a\": 2}", RS("two"));
	TX("{\"$switch\": {\"branches\": [{\"case\": false, \"then\": 1}], \"default\": \"d\"}}", NULL, RS("d"));
	TXERR("{\"$switch\": {\"branches\": [{\"case\": \"$x\", \"then\": 1}]}}", "{}",
	      "ERR 40066 $switch could not find a matching branch for an input, and no default was specified.");
	TXERR("{\"$switch\": {\"branches\": [{\"case\": false, \"then\": 1}]}}", NULL,
	      "ERR 40069 One cannot execute a switch statement where all the cases evaluate to false without a default.");
	TXERR("{\"$switch\": {\"branches\": []}}", NULL, "ERR 40068 $switch requires at least one branch.");
	TXERR("{\"$switch\": {\"branches\": [{\"case\": 1}]}}", NULL,
	      "ERR 40065 $switch requires each branch have a 'then' expression.");
	TXERR("{\"$switch\": {\"branches\": [{\"then\": 1}]}}", NULL,
	      "ERR 40064 $switch requires each branch have a 'case' expression");
	TXERR("{\"$switch\": {\"x\": 1}}", NULL, "ERR 40067 $switch found an unknown argument: x");
	TXERR("{\"$switch\": 1}", NULL, "ERR 40060 $switch requires an object as an argument, found: int");
}

static void
test_let(void)
{
	TX("{\"$let\": {\"vars\": {\"x\": 2, \"y\": \"$a\"}, \"in\": {\"$multiply\": [\"$$x\", \"$$y\"]}}}", "{\"a\": 5}",
	   RI("10"));
	TX("{\"$let\": {\"vars\": {\"x\": 1}, \"in\": {\"$let\": {\"vars\": {\"x\": {\"$add\": [\"$$x\", 1]}}, "
	   "\"in\": \"$$x\"}}}}", NULL, RI("2"));
	TX("{\"$let\": {\"vars\": {\"d\": {\"a\": {\"b\": 3}}}, \"in\": \"$$d.a.b\"}}", NULL, RI("3"));
	/* rebinding CURRENT is lexical: field paths inside use it, siblings do not */
	TX("[{\"$let\": {\"vars\": {\"CURRENT\": \"$o\"}, \"in\": \"$x\"}}, \"$x\", \"$$ROOT.x\"]",
	   "{\"x\": 1, \"o\": {\"x\": 2}}", RJ("[ { \"$numberInt\" : \"2\" }, { \"$numberInt\" : \"1\" }, { \"$numberInt\" : \"1\" } ]"));
	TX("{\"$map\": {\"input\": [{\"x\": 5}], \"as\": \"CURRENT\", \"in\": \"$x\"}}", "{\"x\": 1}",
	   RJ("[ { \"$numberInt\" : \"5\" } ]"));
	TXERR("{\"$let\": {\"vars\": {\"x\": 1}, \"in\": \"$$y\"}}", NULL, "ERR 17276 Use of undefined variable: y");
	TXERR("{\"$let\": {\"vars\": {\"X\": 1}, \"in\": 1}}", NULL,
	      "ERR 16867 'X' starts with an invalid character for a user variable name");
	TXERR("{\"$let\": {\"vars\": {\"a-b\": 1}, \"in\": 1}}", NULL,
	      "ERR 16868 'a-b' contains an invalid character for a variable name: '-'");
	TXERR("{\"$let\": {\"in\": 1}}", NULL, "ERR 16876 Missing 'vars' parameter to $let");
	TXERR("{\"$let\": {\"vars\": {}}}", NULL, "ERR 16877 Missing 'in' parameter to $let");
	TXERR("{\"$let\": {\"vars\": {}, \"in\": 1, \"z\": 1}}", NULL, "ERR 16875 Unrecognized parameter to $let: z");
	/* a variable bound by $let is not visible outside it */
	TXERR("[{\"$let\": {\"vars\": {\"x\": 1}, \"in\": \"$$x\"}}, \"$$x\"]", NULL,
	      "ERR 17276 Use of undefined variable: x");
}

static void
test_env_api(void)
{
	expr_scope_t *scope = expr_scope_new();
	expr_env_t *env = expr_env_new();
	terr_t err = TERR_INIT;
	int id = -1;
	expr_t *e = NULL;
	bson_value_t out, v;
	bson_t *spec = tt_json("{\"e\": {\"$concat\": [\"$$greeting\", \", \", \"$name\"]}}");
	bson_t *doc = tt_json("{\"name\": \"Ada\"}");
	bson_iter_t it;

	TT_EQ_INT(expr_scope_define(scope, "greeting", &id, &err), 0);
	TT_ASSERT(id >= EXPR_VAR_FIRST_USER);
	TT_EQ_INT(expr_scope_lookup(scope, "greeting"), id);
	TT_EQ_INT(expr_scope_lookup(scope, "NOW"), EXPR_VAR_NOW);
	TT_EQ_INT(expr_scope_lookup(scope, "nope"), -1);
	TT_ASSERT(expr_scope_define(scope, "_bad", &id, &err) != 0);
	TT_EQ_INT(err.code, 16867);
	terr_clear(&err);
	bson_iter_init_find(&it, spec, "e");
	TT_EQ_INT(expr_parse(bson_iter_value(&it), scope, &e, &err), 0);
	{
		char *s = bson_strdup("hello");
		v.value_type = BSON_TYPE_UTF8;
		v.value.v_utf8.str = s;
		v.value.v_utf8.len = 5;
		TT_EQ_INT(expr_env_set_var(env, expr_scope_lookup(scope, "greeting"), &v, &err), 0);
		bson_free(s); /* the env copied it */
	}
	expr_env_set_root(env, doc);
	for (int round = 0; round < 3; round++) {
		TT_EQ_INT(expr_eval(e, env, &out, &err), 0);
		TT_ASSERT(out.value_type == BSON_TYPE_UTF8);
		if (out.value_type == BSON_TYPE_UTF8)
			TT_EQ_STR(out.value.v_utf8.str, "hello, Ada");
		expr_env_reset(env);
	}
	expr_destroy(e);
	e = NULL;

	/* $$NOW is fixed per env */
	bson_t *nowspec = tt_json("{\"e\": \"$$NOW\"}");
	bson_iter_init_find(&it, nowspec, "e");
	TT_EQ_INT(expr_parse(bson_iter_value(&it), scope, &e, &err), 0);
	expr_env_set_now(env, 1234567);
	TT_EQ_INT(expr_eval(e, env, &out, &err), 0);
	TT_ASSERT(out.value_type == BSON_TYPE_DATE_TIME && out.value.v_datetime == 1234567);
	expr_destroy(e);
	e = NULL;

	/* constants fold; field paths are recognised */
	bson_t *cs = tt_json("{\"c\": {\"$add\": [1, 2]}, \"f\": \"$a.b\", \"o\": {\"x\": \"$a\", \"y\": 1}}");
	const bson_value_t *cv = NULL;
	const char *path = NULL;
	bson_iter_init_find(&it, cs, "c");
	TT_EQ_INT(expr_parse(bson_iter_value(&it), scope, &e, &err), 0);
	TT_ASSERT(expr_is_constant(e, &cv) && cv->value_type == BSON_TYPE_INT32 && cv->value.v_int32 == 3);
	expr_destroy(e);
	bson_iter_init_find(&it, cs, "f");
	TT_EQ_INT(expr_parse(bson_iter_value(&it), scope, &e, &err), 0);
	TT_ASSERT(expr_is_field_path(e, &path));
	TT_EQ_STR(path, "a.b");
	expr_destroy(e);
	bson_iter_init_find(&it, cs, "o");
	{
		bson_t sub;
		const uint8_t *data;
		uint32_t len;
		bson_iter_document(&it, &len, &data);
		bson_init_static(&sub, data, len);
		TT_EQ_INT(expr_parse_object(&sub, scope, &e, &err), 0);
		TT_EQ_INT(expr_object_nfields(e), 2);
		const char *name;
		const expr_t *f;
		expr_object_field(e, 1, &name, &f);
		TT_EQ_STR(name, "y");
		TT_ASSERT(expr_is_constant(f, NULL));
		expr_destroy(e);
	}
	/* folding surfaces errors at parse time, as mongod's optimize() */
	bson_t *bad = tt_json("{\"e\": {\"$divide\": [1, 0]}}");
	bson_iter_init_find(&it, bad, "e");
	TT_ASSERT(expr_parse(bson_iter_value(&it), scope, &e, &err) != 0);
	TT_EQ_INT(err.code, 2);
	terr_clear(&err);

	/* push/pop */
	expr_scope_push(scope);
	TT_EQ_INT(expr_scope_define(scope, "inner", &id, &err), 0);
	TT_ASSERT(expr_scope_lookup(scope, "inner") >= 0);
	expr_scope_pop(scope);
	TT_EQ_INT(expr_scope_lookup(scope, "inner"), -1);
	TT_ASSERT(expr_scope_lookup(scope, "greeting") >= 0);

	bson_destroy(bad);
	bson_destroy(cs);
	bson_destroy(nowspec);
	bson_destroy(spec);
	bson_destroy(doc);
	expr_env_destroy(env);
	expr_scope_destroy(scope);
}

static void
test_meta(void)
{
	expr_scope_t *scope = expr_scope_new();
	expr_env_t *env = expr_env_new();
	terr_t err = TERR_INIT;
	expr_t *e = NULL;
	bson_value_t out;
	bson_t *spec = tt_json("{\"e\": {\"$meta\": \"textScore\"}, \"bad\": {\"$meta\": \"nope\"}, \"num\": {\"$meta\": 1}}");
	bson_t *meta = tt_json("{\"textScore\": 2.5}");
	bson_iter_t it;

	bson_iter_init_find(&it, spec, "e");
	TT_EQ_INT(expr_parse(bson_iter_value(&it), scope, &e, &err), 0);
	TT_EQ_INT(expr_eval(e, env, &out, &err), 0);
	TT_ASSERT(out.value_type == BSON_TYPE_EOD);
	expr_env_set_meta(env, meta);
	TT_EQ_INT(expr_eval(e, env, &out, &err), 0);
	TT_ASSERT(out.value_type == BSON_TYPE_DOUBLE && out.value.v_double == 2.5);
	expr_destroy(e);
	e = NULL;
	bson_iter_init_find(&it, spec, "bad");
	TT_ASSERT(expr_parse(bson_iter_value(&it), scope, &e, &err) != 0);
	TT_EQ_INT(err.code, 17308);
	TT_EQ_STR(err.msg, "Unsupported argument to $meta: nope");
	terr_clear(&err);
	bson_iter_init_find(&it, spec, "num");
	TT_ASSERT(expr_parse(bson_iter_value(&it), scope, &e, &err) != 0);
	TT_EQ_INT(err.code, 17307);
	terr_clear(&err);
	bson_destroy(meta);
	bson_destroy(spec);
	expr_env_destroy(env);
	expr_scope_destroy(scope);
}

static void
test_path_api(void)
{
	expr_env_t *env = expr_env_new();
	bson_t *doc = tt_json("{\"a\": [{\"b\": 1}, {\"b\": 2}]}");
	bson_value_t base, out;

	base.value_type = BSON_TYPE_DOCUMENT;
	base.value.v_doc.data = (uint8_t *)bson_get_data(doc);
	base.value.v_doc.data_len = doc->len;
	expr_path_eval(env, &base, "a.b", &out);
	TT_ASSERT(out.value_type == BSON_TYPE_ARRAY);
	bson_t arr;
	bson_init_static(&arr, out.value.v_doc.data, out.value.v_doc.data_len);
	TT_EQ_JSON(&arr, "{ \"0\" : 1, \"1\" : 2 }");
	expr_path_eval(env, &base, "z", &out);
	TT_ASSERT(out.value_type == BSON_TYPE_EOD);
	TT_ASSERT(!expr_value_truthy(&out));
	expr_env_destroy(env);
	bson_destroy(doc);
}

static void
test_deep_nesting(void)
{
	/* deeply nested specs fail cleanly instead of overflowing the stack */
	bson_string_t *s = bson_string_new(NULL);
	for (int i = 0; i < 40; i++)
		bson_string_append(s, "{\"$add\": [1, ");
	bson_string_append(s, "\"$a\"");
	for (int i = 0; i < 40; i++)
		bson_string_append(s, "]}");
	TX(s->str, "{\"a\": 1}", RI("41"));
	bson_string_free(s, true);
	TX("{\"$rand\": {}}", NULL, tx_buf); /* just runs */
	TXERR("{\"$rand\": {\"a\": 1}}", NULL, "ERR 3040501 $rand does not currently accept arguments");
}

int
main(void)
{
	TT_RUN(test_paths);
	TT_RUN(test_objects_arrays);
	TT_RUN(test_compare);
	TT_RUN(test_boolean);
	TT_RUN(test_conditional);
	TT_RUN(test_let);
	TT_RUN(test_env_api);
	TT_RUN(test_path_api);
	TT_RUN(test_meta);
	TT_RUN(test_deep_nesting);
	return tt_finish();
}
