/*
 * test_expr_fuzz.c -- bad input never crashes: every registered operator is
 * parsed and evaluated with a battery of argument shapes (scalars of every
 * type, arrays, objects, nested garbage) against a few documents, under
 * ASan/UBSan.  Results are not checked, only that parse/eval return cleanly
 * (0, or -1 with an error code and message set) and leak nothing.
 */
#include "tt.h"
#include "expr/expr_private.h"
#include "expr/accum.h"

static const expr_op_t *const tables[] = {
	expr_ops_arith, expr_ops_logic, expr_ops_string, expr_ops_array, expr_ops_object,
	expr_ops_type, expr_ops_date, expr_ops_accum, expr_ops_misc,
};

static const char *const args[] = {
	"null", "1", "-1", "0", "2147483647", "{\"$numberLong\": \"-9223372036854775808\"}", "1.5", "-0.0",
	"{\"$numberDouble\": \"NaN\"}", "{\"$numberDouble\": \"Infinity\"}", "{\"$numberDecimal\": \"1E+6000\"}",
	"{\"$numberDecimal\": \"-0.000001\"}", "\"\"", "\"abc\"", "\"$a\"", "\"$$ROOT\"", "\"$$NOW\"", "\"$arr\"",
	"true", "{\"$date\": {\"$numberLong\": \"-62135596800001\"}}", "{\"$oid\": \"507f1f77bcf86cd799439011\"}",
	"{\"$timestamp\": {\"t\": 1, \"i\": 2}}", "{\"$regularExpression\": {\"pattern\": \"a(\", \"options\": \"z\"}}",
	"{\"$binary\": {\"base64\": \"AAEC\", \"subType\": \"00\"}}", "{\"$minKey\": 1}", "{\"$maxKey\": 1}",
	"[]", "[1]", "[1, 2]", "[1, 2, 3]", "[1, 2, 3, 4]", "[\"a\", \"b\"]", "[null, null]", "[[1, 2], [3]]",
	"[\"$a\", \"$b\", \"$c\"]", "[{\"$numberDecimal\": \"3\"}, 0]", "[\"abc\", -1, 5]", "[\"abc\", 1, -5]",
	"[\"\\u00e9\\u00e9\", 1, 1]", "[{\"$date\": {\"$numberLong\": \"0\"}}, 1]", "[[1, 2], 99999999999]",
	"{}", "{\"a\": 1}", "{\"input\": \"$arr\"}", "{\"input\": \"$arr\", \"as\": \"x\", \"in\": \"$$x\"}",
	"{\"input\": [1, 2], \"cond\": \"$$this\", \"limit\": -1}", "{\"input\": \"abc\", \"chars\": 5}",
	"{\"input\": \"abc\", \"regex\": \"(\", \"options\": \"q\"}", "{\"input\": \"x\", \"find\": \"\", \"replacement\": \"$a\"}",
	"{\"input\": 1, \"to\": \"int\", \"onError\": \"$$REMOVE\"}", "{\"input\": \"1\", \"to\": {\"type\": 1}}",
	"{\"date\": \"$d\", \"timezone\": \"Europe/Paris\", \"format\": \"%%\"}", "{\"date\": \"$d\", \"unit\": \"week\", "
	"\"binSize\": 3, \"startOfWeek\": \"xx\"}", "{\"startDate\": \"$d\", \"unit\": \"month\", \"amount\": "
	"{\"$numberLong\": \"9223372036854775807\"}}", "{\"startDate\": \"$d\", \"endDate\": 5, \"unit\": \"year\"}",
	"{\"year\": 2020, \"month\": -40000}", "{\"dateString\": \"2020-13-45T99:99:99Z\", \"format\": \"%Y\"}",
	"{\"branches\": [{\"case\": \"$a\", \"then\": 1}], \"default\": 2}", "{\"vars\": {\"a\": 1}, \"in\": \"$$a\"}",
	"{\"if\": 1, \"then\": 2, \"else\": 3}", "{\"field\": \"a\", \"input\": \"$$ROOT\", \"value\": 1}",
	"{\"inputs\": [\"$arr\", [1]], \"useLongestLength\": true, \"defaults\": [0, 0]}", "{\"sortBy\": {\"a\": 1}, "
	"\"input\": \"$objs\"}", "{\"input\": \"$arr\", \"n\": 2}", "{\"input\": \"$arr\", \"p\": [0.5], \"method\": \"approximate\"}",
	"{\"$add\": [1, \"x\"]}", "{\"$literal\": \"$x\"}", "[{\"$foo\": 1}]", "{\"a\": {\"$bar\": 1}}",
};

static const char *const docs[] = {
	"{}",
	"{\"a\": 1, \"b\": \"x\", \"c\": null, \"arr\": [3, 1, 2], \"d\": {\"$date\": {\"$numberLong\": \"1614834367089\"}},"
	" \"objs\": [{\"a\": 2}, {\"a\": 1}, 5]}",
	"{\"a\": [{\"b\": 1}, {\"b\": [2, 3]}], \"arr\": \"notarray\", \"d\": 5, \"objs\": {}}",
};

static int n_ok, n_err;

static void
try_one(const char *name, const char *arg, expr_scope_t *scope, expr_env_t *env, bson_t **docv)
{
	char *json = bson_strdup_printf("{\"e\": {\"%s\": %s}}", name, arg);
	bson_error_t berr;
	bson_t *spec = bson_new_from_json((const uint8_t *)json, -1, &berr);
	bson_iter_t it;
	expr_t *e = NULL;
	terr_t err = TERR_INIT;

	if (spec == NULL) {
		bson_free(json);
		return;
	}
	bson_iter_init_find(&it, spec, "e");
	if (expr_parse(bson_iter_value(&it), scope, &e, &err) != 0) {
		TT_ASSERT(err.code != 0 && err.msg != NULL);
		n_err++;
		terr_clear(&err);
	} else {
		for (size_t d = 0; d < sizeof(docs) / sizeof(docs[0]); d++) {
			bson_value_t out;
			expr_env_set_root(env, docv[d]);
			if (expr_eval(e, env, &out, &err) != 0) {
				TT_ASSERT(err.code != 0 && err.msg != NULL);
				n_err++;
				terr_clear(&err);
			} else {
				/* the result must be appendable BSON */
				bson_t tmp = BSON_INITIALIZER;
				if (out.value_type != BSON_TYPE_EOD)
					TT_ASSERT(bson_append_value(&tmp, "r", 1, &out));
				bson_destroy(&tmp);
				n_ok++;
			}
			expr_env_reset(env);
		}
		expr_destroy(e);
	}
	bson_destroy(spec);
	bson_free(json);
}

static void
test_every_operator(void)
{
	expr_scope_t *scope = expr_scope_new();
	expr_env_t *env = expr_env_new();
	bson_t *docv[sizeof(docs) / sizeof(docs[0])];
	int id;
	terr_t err = TERR_INIT;

	for (size_t d = 0; d < sizeof(docs) / sizeof(docs[0]); d++)
		docv[d] = tt_json(docs[d]);
	TT_EQ_INT(expr_scope_define(scope, "x", &id, &err), 0);
	for (size_t t = 0; t < sizeof(tables) / sizeof(tables[0]); t++) {
		for (const expr_op_t *op = tables[t]; op->name != NULL; op++) {
			for (size_t a = 0; a < sizeof(args) / sizeof(args[0]); a++)
				try_one(op->name, args[a], scope, env, docv);
		}
	}
	TT_ASSERT(n_ok > 1000);
	TT_ASSERT(n_err > 1000);
	fprintf(stderr, "fuzz: %d evaluations ok, %d clean errors\n", n_ok, n_err);
	for (size_t d = 0; d < sizeof(docs) / sizeof(docs[0]); d++)
		bson_destroy(docv[d]);
	expr_env_destroy(env);
	expr_scope_destroy(scope);
}

static void
test_nesting(void)
{
	/* nested operators 300 deep: parse fails cleanly, no stack overflow */
	expr_scope_t *scope = expr_scope_new();
	terr_t err = TERR_INIT;
	expr_t *e = NULL;
	bson_t *inner = bson_new();
	bson_t *cur;

	BSON_APPEND_INT32(inner, "$abs", 1);
	for (int i = 0; i < 300; i++) {
		cur = bson_new();
		bson_t arr;
		bson_append_array_begin(cur, "$not", -1, &arr);
		bson_append_document(&arr, "0", 1, inner);
		bson_append_array_end(cur, &arr);
		bson_destroy(inner);
		inner = cur;
	}
	bson_value_t v;
	v.value_type = BSON_TYPE_DOCUMENT;
	v.value.v_doc.data = (uint8_t *)bson_get_data(inner);
	v.value.v_doc.data_len = inner->len;
	TT_ASSERT(expr_parse(&v, scope, &e, &err) != 0);
	TT_EQ_INT(err.code, TERR_BAD_VALUE);
	terr_clear(&err);
	bson_destroy(inner);
	expr_scope_destroy(scope);
}

/* ---- random trees ------------------------------------------------------- */

static uint64_t rng = 0x9e3779b97f4a7c15ULL;

static uint32_t
rnd(uint32_t n)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (uint32_t)(rng % n);
}

static const expr_op_t *
random_op(void)
{
	size_t nt = sizeof(tables) / sizeof(tables[0]);
	const expr_op_t *t = tables[rnd((uint32_t)nt)];
	size_t n = 0;
	while (t[n].name != NULL)
		n++;
	return &t[rnd((uint32_t)n)];
}

static const char *const keys[] = {"input", "as", "in", "cond", "limit", "initialValue", "vars", "if", "then",
	"else", "branches", "default", "case", "find", "replacement", "regex", "options", "chars", "to", "onError",
	"onNull", "date", "timezone", "format", "unit", "amount", "startDate", "endDate", "binSize", "field", "value",
	"inputs", "defaults", "useLongestLength", "sortBy", "n", "p", "method", "year", "month", "day", "iso8601",
	"dateString", "a"};

static const char *const strs[] = {"$a", "$arr", "$$this", "$$value", "$$x", "$$ROOT", "$d", "$objs.a", "x",
	"", "week", "day", "int", "string", "approximate", "UTC", "+01:00", "Asia/Tokyo", "%Y-%m-%d", "\\d+", "$"};

static void
random_value(bson_t *b, const char *k, int depth)
{
	switch (rnd(depth > 3 ? 6 : 10)) {
	case 0: bson_append_int32(b, k, -1, (int32_t)rnd(7) - 3); break;
	case 1: bson_append_double(b, k, -1, (double)rnd(1000) / 7.0 - 50); break;
	case 2: bson_append_utf8(b, k, -1, strs[rnd(sizeof(strs) / sizeof(strs[0]))], -1); break;
	case 3: bson_append_null(b, k, -1); break;
	case 4: bson_append_bool(b, k, -1, rnd(2)); break;
	case 5: bson_append_date_time(b, k, -1, (int64_t)rnd(2000000) * 1000000 - 500000000000LL); break;
	case 6:
	case 7: {
		bson_t arr;
		char ik[16];
		int n = (int)rnd(4);
		bson_append_array_begin(b, k, -1, &arr);
		for (int i = 0; i < n; i++) {
			snprintf(ik, sizeof(ik), "%d", i);
			random_value(&arr, ik, depth + 1);
		}
		bson_append_array_end(b, &arr);
		break;
	}
	case 8: {
		bson_t sub;
		bson_append_document_begin(b, k, -1, &sub);
		random_value(&sub, random_op()->name, depth + 1);
		bson_append_document_end(b, &sub);
		break;
	}
	default: {
		bson_t sub;
		int n = (int)rnd(4);
		bson_append_document_begin(b, k, -1, &sub);
		for (int i = 0; i < n; i++)
			random_value(&sub, keys[rnd(sizeof(keys) / sizeof(keys[0]))], depth + 1);
		bson_append_document_end(b, &sub);
		break;
	}
	}
}

static void
test_random_trees(void)
{
	expr_scope_t *scope = expr_scope_new();
	expr_env_t *env = expr_env_new();
	bson_t *docv[sizeof(docs) / sizeof(docs[0])];
	terr_t err = TERR_INIT;
	int id, ok = 0, bad = 0;

	for (size_t d = 0; d < sizeof(docs) / sizeof(docs[0]); d++)
		docv[d] = tt_json(docs[d]);
	expr_scope_define(scope, "x", &id, &err);
	for (int iter = 0; iter < 20000; iter++) {
		bson_t spec = BSON_INITIALIZER, sub;
		bson_iter_t it;
		expr_t *e = NULL;

		bson_append_document_begin(&spec, "e", 1, &sub);
		random_value(&sub, random_op()->name, 0);
		bson_append_document_end(&spec, &sub);
		bson_iter_init_find(&it, &spec, "e");
		if (expr_parse(bson_iter_value(&it), scope, &e, &err) != 0) {
			TT_ASSERT(err.code != 0);
			terr_clear(&err);
			bad++;
		} else {
			for (size_t d = 0; d < sizeof(docs) / sizeof(docs[0]); d++) {
				bson_value_t out;
				expr_env_set_root(env, docv[d]);
				if (expr_eval(e, env, &out, &err) != 0) {
					TT_ASSERT(err.code != 0);
					terr_clear(&err);
				} else {
					ok++;
				}
				expr_env_reset(env);
			}
			expr_destroy(e);
		}
		bson_destroy(&spec);
	}
	fprintf(stderr, "random: %d evaluations ok, %d parse errors\n", ok, bad);
	TT_ASSERT(ok > 1000);
	for (size_t d = 0; d < sizeof(docs) / sizeof(docs[0]); d++)
		bson_destroy(docv[d]);
	expr_env_destroy(env);
	expr_scope_destroy(scope);
}

/* ---- accumulators over random documents, with and without merging ------ */

static void
test_accumulators(void)
{
	static const char *const specs[] = {
		"{\"$sum\": \"$a\"}", "{\"$avg\": \"$a\"}", "{\"$min\": \"$a\"}", "{\"$max\": \"$a\"}",
		"{\"$first\": \"$a\"}", "{\"$last\": \"$a\"}", "{\"$push\": \"$a\"}", "{\"$addToSet\": \"$a\"}",
		"{\"$count\": {}}", "{\"$mergeObjects\": \"$o\"}", "{\"$stdDevPop\": \"$a\"}",
		"{\"$stdDevSamp\": \"$a\"}", "{\"$firstN\": {\"input\": \"$a\", \"n\": 3}}",
		"{\"$lastN\": {\"input\": \"$a\", \"n\": 3}}", "{\"$maxN\": {\"input\": \"$a\", \"n\": 3}}",
		"{\"$minN\": {\"input\": \"$a\", \"n\": 3}}",
		"{\"$top\": {\"output\": \"$a\", \"sortBy\": {\"a\": 1, \"o.x\": -1}}}",
		"{\"$bottomN\": {\"output\": [\"$a\", \"$o\"], \"sortBy\": {\"a\": -1}, \"n\": 2}}",
		"{\"$median\": {\"input\": \"$a\", \"method\": \"continuous\"}}",
		"{\"$percentile\": {\"input\": \"$a\", \"p\": [0, 0.5, 1], \"method\": \"approximate\"}}",
	};
	expr_scope_t *scope = expr_scope_new();
	expr_env_t *env = expr_env_new();
	terr_t err = TERR_INIT;

	for (size_t s = 0; s < sizeof(specs) / sizeof(specs[0]); s++) {
		bson_t *spec = tt_json(specs[s]);
		bson_iter_t it;
		accum_t *a = NULL;
		bson_iter_init(&it, spec);
		bson_iter_next(&it);
		TT_EQ_INT(accum_parse(bson_iter_key(&it), bson_iter_value(&it), scope, &a, &err), 0);
		if (a == NULL) {
			terr_clear(&err);
			bson_destroy(spec);
			continue;
		}
		for (int round = 0; round < 20; round++) {
			accum_state_t *st1 = accum_state_new(a), *st2 = accum_state_new(a);
			for (int i = 0; i < 50; i++) {
				bson_t doc = BSON_INITIALIZER;
				random_value(&doc, "a", 2);
				if (rnd(2)) {
					bson_t o;
					bson_append_document_begin(&doc, "o", 1, &o);
					random_value(&o, rnd(2) ? "x" : "y", 3);
					bson_append_document_end(&doc, &o);
				} else {
					random_value(&doc, "o", 3);
				}
				expr_env_set_root(env, &doc);
				if (accum_process(a, rnd(2) ? st1 : st2, env, &err) != 0) {
					TT_ASSERT(err.code != 0);
					terr_clear(&err);
				}
				expr_env_reset(env);
				bson_destroy(&doc);
			}
			if (accum_merge(a, st1, st2, &err) != 0) {
				TT_ASSERT(err.code != 0);
				terr_clear(&err);
			}
			bson_value_t out;
			if (accum_finalize(a, st1, env, &out, &err) == 0) {
				bson_t tmp = BSON_INITIALIZER;
				TT_ASSERT(bson_append_value(&tmp, "r", 1, &out));
				bson_destroy(&tmp);
			} else {
				terr_clear(&err);
			}
			TT_ASSERT(accum_state_mem(st1) > 0);
			expr_env_reset(env);
			accum_state_destroy(st1);
			accum_state_destroy(st2);
		}
		accum_destroy(a);
		bson_destroy(spec);
	}
	expr_env_destroy(env);
	expr_scope_destroy(scope);
}

int
main(void)
{
	TT_RUN(test_accumulators);
	TT_RUN(test_every_operator);
	TT_RUN(test_random_trees);
	TT_RUN(test_nesting);
	return tt_finish();
}
