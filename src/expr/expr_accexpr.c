/*
 * expr_accexpr.c -- accumulators used as expressions: {$sum: [...]}, $avg,
 * $min, $max, $stdDevPop, $stdDevSamp, $median and $percentile.
 *
 * As mongod's ExpressionFromAccumulator: with one argument that evaluates
 * to an array, every element is accumulated; with one non-array argument,
 * that value; with several arguments, each argument's value.  The
 * accumulator itself is accum.c's, so results match $group exactly.
 *
 * Not here: $firstN/$lastN/$maxN/$minN as expressions (238 for now).
 */
#include "expr/expr_private.h"

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

static int
parse_not_yet(expr_t *e, const bson_value_t *arg, expr_scope_t *scope, terr_t *err)
{
	return terr_set(err, TERR_NOT_IMPLEMENTED, "%s is not implemented as an expression yet", e->op->name);
}

static int
eval_not_yet(const expr_t *e, expr_env_t *env, bson_value_t *out, terr_t *err)
{
	return terr_set(err, TERR_NOT_IMPLEMENTED, "%s is not implemented as an expression yet", e->op->name);
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
	{"$firstN", 0, -1, parse_not_yet, eval_not_yet, 0},
	{"$lastN", 0, -1, parse_not_yet, eval_not_yet, 0},
	{"$maxN", 0, -1, parse_not_yet, eval_not_yet, 0},
	{"$minN", 0, -1, parse_not_yet, eval_not_yet, 0},
	{NULL, 0, 0, NULL, NULL, 0},
};
