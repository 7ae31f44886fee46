/*
 * expr_logic.c -- comparison ($cmp $eq $ne $gt $gte $lt $lte), boolean
 * ($and $or $not), conditional ($cond $ifNull $switch), $let and $rand.
 *
 * Comparisons use MongoDB's full value order (bson/value.h), with missing
 * ordered like undefined, below null, as mongod's Value::compare does.
 */
#include "expr/expr_private.h"

#include <string.h>

#include "bson/value.h"

int
expr_compare(const bson_value_t *a, const bson_value_t *b, const coll_t *coll)
{
	bool am = a->value_type == BSON_TYPE_EOD || a->value_type == BSON_TYPE_UNDEFINED;
	bool bm = b->value_type == BSON_TYPE_EOD || b->value_type == BSON_TYPE_UNDEFINED;

	if (am || bm) {
		if (am && bm)
			return 0;
		const bson_value_t *o = am ? b : a;
		int r = o->value_type == BSON_TYPE_MINKEY ? 1 : -1; /* missing vs other */
		return am ? r : -r;
	}
	return coll ? bv_compare_coll(a, b, coll) : bv_compare(a, b);
}

/* ---- comparison ---------------------------------------------------------- */

enum { CMP_CMP, CMP_EQ, CMP_NE, CMP_GT, CMP_GTE, CMP_LT, CMP_LTE };

static int
cmp_kind(const expr_t *e)
{
	static const char *names[] = {"$cmp", "$eq", "$ne", "$gt", "$gte", "$lt", "$lte"};
	for (int i = 0; i < 7; i++) {
		if (strcmp(e->op->name, names[i]) == 0)
			return i;
	}
	return CMP_CMP;
}

static int
eval_compare(const expr_t *e, expr_env_t *env, bson_value_t *out, terr_t *err)
{
	bson_value_t a, b;
	int c;

	RET(expr_eval_arg(e, 0, env, &a, err));
	RET(expr_eval_arg(e, 1, env, &b, err));
	c = expr_compare(&a, &b, e->coll);
	switch (cmp_kind(e)) {
	case CMP_EQ: expr_set_bool(out, c == 0); break;
	case CMP_NE: expr_set_bool(out, c != 0); break;
	case CMP_GT: expr_set_bool(out, c > 0); break;
	case CMP_GTE: expr_set_bool(out, c >= 0); break;
	case CMP_LT: expr_set_bool(out, c < 0); break;
	case CMP_LTE: expr_set_bool(out, c <= 0); break;
	default: expr_set_int32(out, c < 0 ? -1 : (c > 0 ? 1 : 0)); break;
	}
	return 0;
}

/* ---- boolean ------------------------------------------------------------- */

static int
eval_and(const expr_t *e, expr_env_t *env, bson_value_t *out, terr_t *err)
{
	for (size_t i = 0; i < e->nargs; i++) {
		bool b;
		RET(expr_eval_bool(e->args[i], env, &b, err));
		if (!b) {
			expr_set_bool(out, false);
			return 0;
		}
	}
	expr_set_bool(out, true);
	return 0;
}

static int
eval_or(const expr_t *e, expr_env_t *env, bson_value_t *out, terr_t *err)
{
	for (size_t i = 0; i < e->nargs; i++) {
		bool b;
		RET(expr_eval_bool(e->args[i], env, &b, err));
		if (b) {
			expr_set_bool(out, true);
			return 0;
		}
	}
	expr_set_bool(out, false);
	return 0;
}

static int
eval_not(const expr_t *e, expr_env_t *env, bson_value_t *out, terr_t *err)
{
	bool b;

	RET(expr_eval_bool(e->args[0], env, &b, err));
	expr_set_bool(out, !b);
	return 0;
}

/* ---- conditional --------------------------------------------------------- */

static void
push_arg(expr_t *e, expr_t *a)
{
	e->args = bson_realloc(e->args, (e->nargs + 1) * sizeof(*e->args));
	e->args[e->nargs++] = a;
}

/* Parse the operand list of e: each element of an array, or a lone
 * non-array operand; each appended to e's args. */
static int
parse_operands(expr_t *e, const bson_value_t *arg, expr_scope_t *scope, terr_t *err)
{
	bson_iter_t it;
	expr_t *sub;

	if (arg->value_type != BSON_TYPE_ARRAY) {
		sub = NULL;
		RET(expr_parse_sub(arg, scope, &sub, err));
		push_arg(e, sub);
		return 0;
	}
	expr_iter_init(&it, arg);
	while (bson_iter_next(&it)) {
		sub = NULL;
		RET(expr_parse_sub(bson_iter_value(&it), scope, &sub, err));
		push_arg(e, sub);
	}
	return 0;
}

static int
parse_cond(expr_t *e, const bson_value_t *arg, expr_scope_t *scope, terr_t *err)
{
	if (arg->value_type == BSON_TYPE_DOCUMENT) {
		expr_t *parts[3] = {NULL, NULL, NULL};
		static const char *names[] = {"if", "then", "else"};
		int ret = 0;

		ERR(expr_parse_named(e, arg, scope, names, 3, parts, 17083, "Unrecognized parameter to %s: %s", err));
		for (int i = 0; i < 3; i++) {
			if (parts[i] == NULL) {
				ret = terr_set(err, 17080 + i, "Missing '%s' parameter to $cond", names[i]);
				goto err;
			}
		}
		expr_args_set(e, parts, 3);
		return 0;
	err:
		expr_parts_destroy(parts, 3);
		return ret;
	}
	RET(parse_operands(e, arg, scope, err));
	if (e->nargs != 3)
		return terr_set(err, 16020, "Expression $cond takes exactly 3 arguments. %zu were passed in.", e->nargs);
	return 0;
}

static int
eval_cond(const expr_t *e, expr_env_t *env, bson_value_t *out, terr_t *err)
{
	bool b;

	RET(expr_eval_bool(e->args[0], env, &b, err));
	return expr_eval(e->args[b ? 1 : 2], env, out, err);
}

static int
parse_ifnull(expr_t *e, const bson_value_t *arg, expr_scope_t *scope, terr_t *err)
{
	RET(parse_operands(e, arg, scope, err));
	if (e->nargs < 2)
		return terr_set(err, 1257300, "$ifNull needs at least two arguments, had: %zu", e->nargs);
	return 0;
}

static int
eval_ifnull(const expr_t *e, expr_env_t *env, bson_value_t *out, terr_t *err)
{
	for (size_t i = 0; i + 1 < e->nargs; i++) {
		RET(expr_eval_arg(e, i, env, out, err));
		if (!expr_is_nullish(out))
			return 0;
	}
	return expr_eval_arg(e, e->nargs - 1, env, out, err);
}

/* $switch: args = case0, then0, case1, then1, ..., [default]; extra != NULL
 * (a non-NULL marker) when a default exists. */
static int
parse_switch(expr_t *e, const bson_value_t *arg, expr_scope_t *scope, terr_t *err)
{
	bson_iter_t it, bit, cit;
	expr_t *def = NULL;
	bool have_branches = false;
	int ret = 0;

	if (arg->value_type != BSON_TYPE_DOCUMENT)
		return terr_set(err, 40060, "$switch requires an object as an argument, found: %s", expr_type_name(arg));
	expr_iter_init(&it, arg);
	while (bson_iter_next(&it)) {
		const char *k = bson_iter_key(&it);
		if (strcmp(k, "branches") == 0) {
			if (!BSON_ITER_HOLDS_ARRAY(&it)) {
				ret = terr_set(err, 40061, "$switch expected an array for 'branches', found: %s",
				               expr_type_name(bson_iter_value(&it)));
				goto err;
			}
			have_branches = true;
			expr_iter_init(&bit, bson_iter_value(&it));
			while (bson_iter_next(&bit)) {
				expr_t *c = NULL, *t = NULL;
				if (!BSON_ITER_HOLDS_DOCUMENT(&bit)) {
					ret = terr_set(err, 40062, "$switch expected each branch to be an object, found: %s",
					               expr_type_name(bson_iter_value(&bit)));
					goto err;
				}
				expr_iter_init(&cit, bson_iter_value(&bit));
				while (bson_iter_next(&cit)) {
					const char *bk = bson_iter_key(&cit);
					expr_t **slot;
					if (strcmp(bk, "case") == 0) {
						slot = &c;
					} else if (strcmp(bk, "then") == 0) {
						slot = &t;
					} else {
						expr_destroy(c);
						expr_destroy(t);
						ret = terr_set(err, 40063, "$switch found an unknown argument to a branch: %s", bk);
						goto err;
					}
					expr_destroy(*slot);
					*slot = NULL;
					if ((ret = expr_parse_sub(bson_iter_value(&cit), scope, slot, err)) != 0) {
						expr_destroy(c);
						expr_destroy(t);
						goto err;
					}
				}
				if (c == NULL) {
					expr_destroy(t);
					ret = terr_set(err, 40064, "$switch requires each branch have a 'case' expression");
					goto err;
				}
				if (t == NULL) {
					expr_destroy(c);
					ret = terr_set(err, 40065, "$switch requires each branch have a 'then' expression.");
					goto err;
				}
				push_arg(e, c);
				push_arg(e, t);
			}
		} else if (strcmp(k, "default") == 0) {
			expr_destroy(def);
			def = NULL;
			ERR(expr_parse_sub(bson_iter_value(&it), scope, &def, err));
		} else {
			ret = terr_set(err, 40067, "$switch found an unknown argument: %s", k);
			goto err;
		}
	}
	if (!have_branches || e->nargs == 0) {
		ret = terr_set(err, 40068, "$switch requires at least one branch.");
		goto err;
	}
	/* mongod's optimize(): constant-false cases drop out; none left and no
	 * default is an error at parse time */
	{
		bool all_const_false = true;
		for (size_t i = 0; i < e->nargs; i += 2) {
			const bson_value_t *c;
			if (!expr_is_constant(e->args[i], &c) || expr_value_truthy(c)) {
				all_const_false = false;
				break;
			}
		}
		if (all_const_false && def == NULL) {
			ret = terr_set(err, 40069, "One cannot execute a switch statement where all the cases evaluate to "
			               "false without a default.");
			goto err;
		}
	}
	if (def != NULL) {
		push_arg(e, def);
		e->extra = e; /* marker: has default (not freed) */
		e->extra_free = NULL;
	}
	return 0;
err:
	expr_destroy(def);
	return ret;
}

static int
eval_switch(const expr_t *e, expr_env_t *env, bson_value_t *out, terr_t *err)
{
	size_t nbranch = (e->nargs - (e->extra ? 1 : 0)) / 2;

	for (size_t i = 0; i < nbranch; i++) {
		bool b;
		RET(expr_eval_bool(e->args[2 * i], env, &b, err));
		if (b)
			return expr_eval(e->args[2 * i + 1], env, out, err);
	}
	if (e->extra == NULL)
		return terr_set(err, 40066, "$switch could not find a matching branch for an input, and no default "
		                "was specified.");
	return expr_eval(e->args[e->nargs - 1], env, out, err);
}

/* ---- $let ---------------------------------------------------------------- */

/* args = var values..., in; extra = int ids[] (one per var). */
static int
parse_let(expr_t *e, const bson_value_t *arg, expr_scope_t *scope, terr_t *err)
{
	bson_iter_t it, vit;
	const bson_value_t *vars = NULL, *in = NULL;
	bson_value_t vars_v, in_v;
	expr_t *body = NULL;
	int *ids = NULL;
	size_t n = 0;
	int ret = 0;

	if (arg->value_type != BSON_TYPE_DOCUMENT)
		return terr_set(err, 16874, "$let only supports an object as its argument");
	expr_iter_init(&it, arg);
	while (bson_iter_next(&it)) {
		const char *k = bson_iter_key(&it);
		if (strcmp(k, "vars") == 0)
			vars = (vars_v = *bson_iter_value(&it), &vars_v);
		else if (strcmp(k, "in") == 0)
			in = (in_v = *bson_iter_value(&it), &in_v);
		else
			return terr_set(err, 16875, "Unrecognized parameter to $let: %s", k);
	}
	if (vars == NULL)
		return terr_set(err, 16876, "Missing 'vars' parameter to $let");
	if (in == NULL)
		return terr_set(err, 16877, "Missing 'in' parameter to $let");
	if (vars->value_type != BSON_TYPE_DOCUMENT)
		return terr_set(err, 10065, "invalid parameter: expected an object (vars)");
	/* values are parsed in the outer scope */
	expr_iter_init(&vit, vars);
	while (bson_iter_next(&vit)) {
		expr_t *sub = NULL;
		RET(expr_parse_sub(bson_iter_value(&vit), scope, &sub, err));
		push_arg(e, sub);
		n++;
	}
	ids = bson_malloc0((n + 1) * sizeof(int));
	e->extra = ids;
	e->extra_free = bson_free;
	expr_scope_push(scope);
	expr_iter_init(&vit, vars);
	for (size_t i = 0; bson_iter_next(&vit); i++)
		ERR(expr_scope_bind(scope, bson_iter_key(&vit), &ids[i], err));
	ERR(expr_parse_sub(in, scope, &body, err));
	push_arg(e, body);
	e->var = ids[0] >= 0 && n > 0 ? ids[0] : EXPR_VAR_FIRST_USER; /* marks "binds variables" */
err:
	expr_scope_pop(scope);
	return ret;
}

static int
eval_let(const expr_t *e, expr_env_t *env, bson_value_t *out, terr_t *err)
{
	const int *ids = e->extra;
	size_t n = e->nargs - 1;
	bson_value_t *vals;

	vals = expr_env_alloc(env, (n + 1) * sizeof(*vals));
	for (size_t i = 0; i < n; i++)
		RET(expr_eval_arg(e, i, env, &vals[i], err));
	for (size_t i = 0; i < n; i++)
		expr_env_bind(env, ids[i], &vals[i]);
	return expr_eval(e->args[n], env, out, err);
}

/* ---- $rand --------------------------------------------------------------- */

static int
parse_rand(expr_t *e, const bson_value_t *arg, expr_scope_t *scope, terr_t *err)
{
	bson_iter_t it;

	if (arg->value_type == BSON_TYPE_DOCUMENT && expr_iter_init(&it, arg) && !bson_iter_next(&it))
		return 0;
	if (arg->value_type == BSON_TYPE_ARRAY && expr_array_len(arg) == 0)
		return 0;
	return terr_set(err, 3040501, "$rand does not currently accept arguments");
}

static int
eval_rand(const expr_t *e, expr_env_t *env, bson_value_t *out, terr_t *err)
{
	/* xorshift64*: per-env state, [0, 1) with 53 random bits */
	uint64_t x = env->rand_state;
	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	env->rand_state = x;
	uint64_t r = x * 0x2545F4914F6CDD1DULL;
	expr_set_double(out, (double)(r >> 11) / 9007199254740992.0);
	return 0;
}

const expr_op_t expr_ops_logic[] = {
	{"$cmp", 2, 2, NULL, eval_compare, 0},
	{"$eq", 2, 2, NULL, eval_compare, 0},
	{"$ne", 2, 2, NULL, eval_compare, 0},
	{"$gt", 2, 2, NULL, eval_compare, 0},
	{"$gte", 2, 2, NULL, eval_compare, 0},
	{"$lt", 2, 2, NULL, eval_compare, 0},
	{"$lte", 2, 2, NULL, eval_compare, 0},
	{"$and", 0, -1, NULL, eval_and, 0},
	{"$or", 0, -1, NULL, eval_or, 0},
	{"$not", 1, 1, NULL, eval_not, 0},
	{"$cond", 3, 3, parse_cond, eval_cond, 0},
	{"$ifNull", 2, -1, parse_ifnull, eval_ifnull, 0},
	{"$switch", 0, -1, parse_switch, eval_switch, 0},
	{"$let", 0, -1, parse_let, eval_let, 0},
	{"$rand", 0, 0, parse_rand, eval_rand, EXPR_OP_NOFOLD},
	{NULL, 0, 0, NULL, NULL, 0},
};
