/*
 * expr_accexpr.c -- accumulators used as expressions: {$sum: [...]}, $avg,
 * $min, $max, $stdDevPop, $stdDevSamp, $median and $percentile.
 *
 * As mongod's ExpressionFromAccumulator: with one argument that evaluates
 * to an array, every element is accumulated; with one non-array argument,
 * that value; with several arguments, each argument's value.  The
 * accumulator itself is accum.c's, so results match $group exactly.
 *
 * Also the array forms {$firstN|$lastN|$maxN|$minN: {input: <array>, n}}.
 */
#include "expr/expr_private.h"

#include <string.h>

#include "bson/value.h"

#include "expr/accum.h"


static void
accum_free(void *p)
{
	accum_destroy(p);
}

static int
parse_list(expr_t *e, const bson_value_t *arg, expr_scope_t *scope, terr_t *err)
{
	bson_iter_t it;
	size_t n = arg->value_type == BSON_TYPE_ARRAY ? expr_array_len(arg) : 1, i = 0;

	e->args = bson_malloc0((n + 1) * sizeof(*e->args));
	if (arg->value_type != BSON_TYPE_ARRAY) {
		RET(expr_parse_sub(arg, scope, &e->args[0], err));
		e->nargs = 1;
		return 0;
	}
	expr_iter_init(&it, arg);
	while (bson_iter_next(&it) && i < n) {
		RET(expr_parse_sub(bson_iter_value(&it), scope, &e->args[i], err));
		e->nargs = ++i;
	}
	return 0;
}

static int
parse_simple(expr_t *e, const bson_value_t *arg, expr_scope_t *scope, terr_t *err)
{
	accum_t *a = NULL;

	RET(accum_new_for_values(e->op->name, &a, err));
	e->extra = a;
	e->extra_free = accum_free;
	return parse_list(e, arg, scope, err);
}

/* Feed v (each element when it is an array and `spread`) into st. */
static int
feed(const accum_t *a, accum_state_t *st, const bson_value_t *v, bool spread, terr_t *err)
{
	if (spread && v->value_type == BSON_TYPE_ARRAY) {
		bson_iter_t it;
		expr_iter_init(&it, v);
		while (bson_iter_next(&it))
			RET(accum_add(a, st, bson_iter_value(&it), err));
		return 0;
	}
	return accum_add(a, st, v, err);
}

static int
finish(const accum_t *a, accum_state_t *st, expr_env_t *env, bson_value_t *out, terr_t *err)
{
	bson_value_t r;
	int ret = accum_finalize(a, st, env, &r, err);

	if (ret == 0)
		expr_env_copy_value(env, &r, out); /* r may borrow from st */
	accum_state_destroy(st);
	return ret;
}

static int
eval_simple(const expr_t *e, expr_env_t *env, bson_value_t *out, terr_t *err)
{
	const accum_t *a = e->extra;
	accum_state_t *st = accum_state_new(a);
	bson_value_t v;
	int ret = 0;

	for (size_t i = 0; i < e->nargs; i++) {
		ERR(expr_eval(e->args[i], env, &v, err));
		ERR(feed(a, st, &v, e->nargs == 1, err));
	}
	return finish(a, st, env, out, err);
err:
	accum_state_destroy(st);
	return ret;
}

/* $median / $percentile: {input, p, method}; input may be an array */
static int
parse_percentile(expr_t *e, const bson_value_t *arg, expr_scope_t *scope, terr_t *err)
{
	accum_t *a = NULL;

	RET(accum_parse(e->op->name, arg, scope, &a, err));
	e->extra = a;
	e->extra_free = accum_free;
	e->var = EXPR_VAR_CURRENT; /* its input may use the document: never fold blindly */
	return 0;
}

static int
eval_percentile(const expr_t *e, expr_env_t *env, bson_value_t *out, terr_t *err)
{
	const accum_t *a = e->extra;
	accum_state_t *st = accum_state_new(a);
	bson_value_t v;
	int ret = 0;

	ERR(expr_eval(accum_argument(a), env, &v, err));
	ERR(feed(a, st, &v, true, err));
	return finish(a, st, env, out, err);
err:
	accum_state_destroy(st);
	return ret;
}

/* ---- $firstN $lastN $maxN $minN over arrays: args input, n ------------ */

static int
parse_n_expr(expr_t *e, const bson_value_t *arg, expr_scope_t *scope, terr_t *err)
{
	bson_iter_t it;
	bson_value_t input, n;
	bool have_in = false, have_n = false;

	if (arg->value_type != BSON_TYPE_DOCUMENT)
		return terr_set(err, 5787801, "specification must be an object; found %s", expr_type_name(arg));
	expr_iter_init(&it, arg);
	while (bson_iter_next(&it)) {
		const char *k = bson_iter_key(&it);
		if (strcmp(k, "input") == 0) {
			input = *bson_iter_value(&it);
			have_in = true;
		} else if (strcmp(k, "n") == 0) {
			n = *bson_iter_value(&it);
			have_n = true;
		} else {
			return terr_set(err, 5787901, "Unknown argument for 'n' operator: %s", k);
		}
	}
	if (!have_n)
		return terr_set(err, 5787906, "Missing value for 'n'");
	if (!have_in)
		return terr_set(err, 5787907, "Missing value for 'input'");
	e->args = bson_malloc0(2 * sizeof(*e->args));
	e->nargs = 2;
	RET(expr_parse_sub(&input, scope, &e->args[0], err));
	return expr_parse_sub(&n, scope, &e->args[1], err);
}

static int
eval_n_expr(const expr_t *e, expr_env_t *env, bson_value_t *out, terr_t *err)
{
	char kind = e->op->name[1]; /* f(irst) l(ast) m(ax|in) */
	bool is_max = strcmp(e->op->name, "$maxN") == 0;
	bson_value_t in, nv;
	int64_t n;

	RET(expr_eval(e->args[1], env, &nv, err));
	if (!bv_is_number(&nv) || !expr_num_to_int64_exact(&nv, &n)) {
		char *t = bv_to_mongo_string(&nv);
		terr_set(err, 5787902, "Value for 'n' must be of integral type, but found %s", t);
		bson_free(t);
		return -1;
	}
	if (n <= 0)
		return terr_set(err, 5787908, "'n' must be greater than 0, found %lld", (long long)n);
	RET(expr_eval(e->args[0], env, &in, err));
	if (expr_is_nullish(&in)) {
		expr_set_null(out);
		return 0;
	}
	if (in.value_type != BSON_TYPE_ARRAY)
		return terr_set(err, 5788200, "Input must be an array");
	size_t cnt = expr_array_len(&in), k = 0;
	bson_value_t *el = expr_env_alloc(env, (cnt + 1) * sizeof(*el));
	bson_iter_t it;
	expr_iter_init(&it, &in);
	while (bson_iter_next(&it) && k < cnt) {
		const bson_value_t *v = bson_iter_value(&it);
		if (kind == 'm' && expr_is_nullish(v))
			continue; /* $maxN/$minN skip null and missing */
		el[k++] = *v;
	}
	size_t from = 0, take = k < (size_t)n ? k : (size_t)n;
	if (kind == 'l')
		from = k - take;
	if (kind == 'm') {
		/* stable insertion sort, best first */
		for (size_t i = 1; i < k; i++) {
			bson_value_t t = el[i];
			size_t j = i;
			while (j > 0) {
				int c = expr_compare(&el[j - 1], &t, e->coll);
				if (is_max ? c >= 0 : c <= 0)
					break;
				el[j] = el[j - 1];
				j--;
			}
			el[j] = t;
		}
	}
	bson_t b;
	uint32_t idx = 0;
	bson_init(&b);
	for (size_t i = 0; i < take; i++)
		expr_array_append(&b, &idx, &el[from + i]);
	expr_set_doc_from(env, out, &b, true);
	return 0;
}

const expr_op_t expr_ops_accum[] = {
	{"$sum", 0, -1, parse_simple, eval_simple, 0},
	{"$avg", 0, -1, parse_simple, eval_simple, 0},
	{"$min", 0, -1, parse_simple, eval_simple, 0},
	{"$max", 0, -1, parse_simple, eval_simple, 0},
	{"$stdDevPop", 0, -1, parse_simple, eval_simple, 0},
	{"$stdDevSamp", 0, -1, parse_simple, eval_simple, 0},
	{"$median", 0, -1, parse_percentile, eval_percentile, 0},
	{"$percentile", 0, -1, parse_percentile, eval_percentile, 0},
	{"$firstN", 0, -1, parse_n_expr, eval_n_expr, 0},
	{"$lastN", 0, -1, parse_n_expr, eval_n_expr, 0},
	{"$maxN", 0, -1, parse_n_expr, eval_n_expr, 0},
	{"$minN", 0, -1, parse_n_expr, eval_n_expr, 0},
	{NULL, 0, 0, NULL, NULL, 0},
};
