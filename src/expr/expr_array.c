/*
 * expr_array.c -- array and set operators: $arrayElemAt $first $last
 * $concatArrays $filter $map $reduce $in $indexOfArray $isArray $range
 * $reverseArray $size $slice $zip $sortArray $allElementsTrue
 * $anyElementTrue, and $setEquals $setIntersection $setUnion $setDifference
 * $setIsSubset.
 *
 * $filter/$map/$reduce bind variables ($$this, $$value or their `as` name)
 * for their body: ids come from the scope at parse time, values are bound in
 * the environment per element.
 */
#include "expr/expr_private.h"

#include <stdlib.h>
#include <string.h>

#include "bson/value.h"


static bool
is_arr(const bson_value_t *v)
{
	return v->value_type == BSON_TYPE_ARRAY;
}

/* Elements of an array value into an arena vector. */
static bson_value_t *
arr_elems(expr_env_t *env, const bson_value_t *v, size_t *n)
{
	bson_iter_t it;
	size_t cnt = expr_array_len(v), i = 0;
	bson_value_t *out = expr_env_alloc(env, (cnt + 1) * sizeof(*out));

	if (expr_iter_init(&it, v)) {
		while (bson_iter_next(&it) && i < cnt)
			out[i++] = *bson_iter_value(&it);
	}
	*n = i;
	return out;
}

static void
set_array(expr_env_t *env, bson_value_t *out, const bson_value_t *vals, size_t n)
{
	bson_t b;
	uint32_t idx = 0;

	bson_init(&b);
	for (size_t i = 0; i < n; i++)
		expr_array_append(&b, &idx, &vals[i]);
	expr_set_doc_from(env, out, &b, true);
}

/*
 * Stable bottom-up merge sort of n items of size bytes (cmp with ctx), with
 * the operation's interrupt check on every item moved: an array of a
 * million elements sorts in O(n log n) and stops at maxTimeMS / killOp.
 * The scratch buffer comes from env's arena.
 */
typedef int (*msort_cmp_fn)(const void *a, const void *b, void *ctx);

static int
msort(expr_env_t *env, void *base, size_t n, size_t size, msort_cmp_fn cmp, void *ctx, terr_t *err)
{
	char *src = base, *dst, *t;

	if (n < 2)
		return 0;
	dst = expr_env_alloc(env, n * size);
	for (size_t w = 1; w < n; w = w * 2) {
		for (size_t lo = 0; lo < n; lo += 2 * w) {
			size_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
			size_t i = lo, j = mid, k = lo;
			while (k < hi) {
				if (j >= hi || (i < mid && cmp(src + i * size, src + j * size, ctx) <= 0))
					memcpy(dst + k++ * size, src + i++ * size, size);
				else
					memcpy(dst + k++ * size, src + j++ * size, size);
				RET(tm_interrupt_check(err));
			}
		}
		t = src;
		src = dst;
		dst = t;
	}
	if (src != base)
		memcpy(base, src, n * size);
	return 0;
}

static int
fail_value(terr_t *err, int code, const char *fmt, const bson_value_t *v)
{
	char *t = bv_to_mongo_string(v);
	terr_set(err, code, fmt, t);
	bson_free(t);
	return -1;
}

static int
eval_elem_at(const expr_t *e, expr_env_t *env, bson_value_t *out, terr_t *err)
{
	bson_value_t a, i;
	int32_t idx;

	RET(expr_eval_arg(e, 0, env, &a, err));
	RET(expr_eval_arg(e, 1, env, &i, err));
	if (expr_is_nullish(&a) || expr_is_nullish(&i)) {
		expr_set_null(out);
		return 0;
	}
	if (!is_arr(&a))
		return terr_set(err, 28689, "$arrayElemAt's first argument must be an array, but is %s", expr_type_name(&a));
	if (!bv_is_number(&i))
		return terr_set(err, 28690, "$arrayElemAt's second argument must be a numeric value, but is %s",
		                expr_type_name(&i));
	if (!expr_num_to_int32_exact(&i, &idx))
		return terr_set(err, 28691, "$arrayElemAt's second argument must be representable as a 32-bit integer: %g",
		                expr_num_to_double(&i));
	size_t n;
	bson_value_t *el = arr_elems(env, &a, &n);
	int64_t k = idx < 0 ? (int64_t)n + idx : idx;
	if (k < 0 || k >= (int64_t)n)
		expr_set_missing(out);
	else
		*out = el[k];
	return 0;
}

static int
first_last(const expr_t *e, expr_env_t *env, bson_value_t *out, terr_t *err, bool last)
{
	bson_value_t a;

	RET(expr_eval_arg(e, 0, env, &a, err));
	if (expr_is_nullish(&a)) {
		expr_set_null(out);
		return 0;
	}
	if (!is_arr(&a))
		return terr_set(err, 28689, "%s's argument must be an array, but is %s", e->op->name, expr_type_name(&a));
	size_t n;
	bson_value_t *el = arr_elems(env, &a, &n);
	if (n == 0)
		expr_set_missing(out);
	else
		*out = el[last ? n - 1 : 0];
	return 0;
}

static int
eval_first(const expr_t *e, expr_env_t *env, bson_value_t *out, terr_t *err)
{
	return first_last(e, env, out, err, false);
}

static int
eval_last(const expr_t *e, expr_env_t *env, bson_value_t *out, terr_t *err)
{
	return first_last(e, env, out, err, true);
}

static int
eval_concat_arrays(const expr_t *e, expr_env_t *env, bson_value_t *out, terr_t *err)
{
	bson_t b;
	uint32_t idx = 0;
	bson_value_t *vals = expr_env_alloc(env, (e->nargs + 1) * sizeof(*vals));

	for (size_t i = 0; i < e->nargs; i++) {
		RET(expr_eval_arg(e, i, env, &vals[i], err));
		if (expr_is_nullish(&vals[i])) {
			expr_set_null(out);
			return 0;
		}
		if (!is_arr(&vals[i]))
			return terr_set(err, 28664, "$concatArrays only supports arrays, not %s", expr_type_name(&vals[i]));
	}
	size_t total = 0;
	for (size_t i = 0; i < e->nargs; i++)
		total += vals[i].value.v_doc.data_len;
	if (total > EXPR_MAX_VALUE_BYTES)
		return expr_too_big(total, err);
	bson_init(&b);
	for (size_t i = 0; i < e->nargs; i++) {
		bson_iter_t it;
		expr_iter_init(&it, &vals[i]);
		while (bson_iter_next(&it)) {
			expr_array_append(&b, &idx, bson_iter_value(&it));
			if (tm_interrupt_check(err) != 0) {
				bson_destroy(&b);
				return -1;
			}
		}
	}
	expr_set_doc_from(env, out, &b, true);
	return 0;
}

/* ---- $filter / $map / $reduce ------------------------------------------ */

typedef struct named {
	const char *name;
	const bson_value_t *v;  /* NULL, or &val */
	bson_value_t val;       /* shallow copy: borrows the spec */
} named_t;

/* Collect named arguments; unknown -> code/fmt with the name. */
static int
collect_named(const bson_value_t *arg, named_t *nv, size_t n, int code, const char *fmt, terr_t *err)
{
	bson_iter_t it;

	expr_iter_init(&it, arg);
	while (bson_iter_next(&it)) {
		const char *k = bson_iter_key(&it);
		size_t i;
		for (i = 0; i < n; i++) {
			if (strcmp(k, nv[i].name) == 0) {
				nv[i].val = *bson_iter_value(&it);
				nv[i].v = &nv[i].val;
				break;
			}
		}
		if (i == n)
			return terr_set(err, code, fmt, k);
	}
	return 0;
}

static int
bind_as(expr_scope_t *scope, const bson_value_t *as, const char *dflt, int *id, terr_t *err)
{
	char *name;
	int ret;

	if (as == NULL)
		return expr_scope_bind(scope, dflt, id, err);
	if (as->value_type != BSON_TYPE_UTF8)
		return expr_scope_bind(scope, "", id, err); /* mongod reads a non-string as "" */
	name = bson_strndup(as->value.v_utf8.str, as->value.v_utf8.len);
	ret = expr_scope_bind(scope, name, id, err);
	bson_free(name);
	return ret;
}

/* $filter's cond and $map's in: parse body in a new scope where `as` (NULL:
 * "this") names the element, its variable id in *var. */
static int
parse_with_as(expr_scope_t *scope, const bson_value_t *as, const bson_value_t *body, int *var, expr_t **out,
              terr_t *err)
{
	int ret;

	expr_scope_push(scope);
	ret = bind_as(scope, as, "this", var, err);
	if (ret == 0)
		ret = expr_parse_sub(body, scope, out, err);
	expr_scope_pop(scope);
	return ret;
}

static int
parse_filter(expr_t *e, const bson_value_t *arg, expr_scope_t *scope, terr_t *err)
{
	named_t nv[] = {{"input", NULL}, {"as", NULL}, {"cond", NULL}, {"limit", NULL}};
	expr_t *parts[3] = {NULL, NULL, NULL};
	int ret = 0;

	if (arg->value_type != BSON_TYPE_DOCUMENT)
		return terr_set(err, 28646, "$filter only supports an object as its argument");
	RET(collect_named(arg, nv, 4, 28647, "Unrecognized parameter to $filter: %s", err));
	if (nv[0].v == NULL)
		return terr_set(err, 28648, "Missing 'input' parameter to $filter");
	if (nv[2].v == NULL)
		return terr_set(err, 28650, "Missing 'cond' parameter to $filter");
	ERR(expr_parse_sub(nv[0].v, scope, &parts[0], err));
	if (nv[3].v != NULL)
		ERR(expr_parse_sub(nv[3].v, scope, &parts[2], err));
	ERR(parse_with_as(scope, nv[1].v, nv[2].v, &e->var, &parts[1], err));
	expr_args_set(e, parts, 3);
	return 0;
err:
	expr_parts_destroy(parts, 3);
	return ret;
}

static int
eval_filter(const expr_t *e, expr_env_t *env, bson_value_t *out, terr_t *err)
{
	bson_value_t in, lim;
	int64_t limit = -1;
	bson_t b;
	uint32_t idx = 0;
	int ret = 0;

	RET(expr_eval_arg(e, 0, env, &in, err));
	if (expr_is_nullish(&in)) {
		expr_set_null(out);
		return 0;
	}
	if (!is_arr(&in))
		return terr_set(err, 28651, "input to $filter must be an array not %s", expr_type_name(&in));
	if (expr_array_len(&in) == 0) {
		*out = in;
		return 0;
	}
	if (e->args[2] != NULL) {
		int32_t l;
		RET(expr_eval_arg(e, 2, env, &lim, err));
		if (!expr_is_nullish(&lim)) {
			if (!bv_is_number(&lim) || !expr_num_to_int32_exact(&lim, &l))
				return fail_value(err, 327391, "$filter: limit must be represented as a 32-bit integral value: %s",
				                  &lim);
			if (l < 1)
				return fail_value(err, 327392, "$filter: limit must be greater than 0: %s", &lim);
			limit = l;
		}
	}
	bson_init(&b);
	bson_iter_t it;
	expr_iter_init(&it, &in);
	while (bson_iter_next(&it) && (limit < 0 || idx < limit)) {
		bson_value_t el = *bson_iter_value(&it);
		bool keep;
		expr_env_bind(env, e->var, &el);
		ERR(tm_interrupt_check(err));
		ERR(expr_eval_bool(e->args[1], env, &keep, err));
		if (keep)
			expr_array_append(&b, &idx, &el);
	}
	expr_set_doc_from(env, out, &b, true);
	return 0;
err:
	bson_destroy(&b);
	return ret;
}

static int
parse_map(expr_t *e, const bson_value_t *arg, expr_scope_t *scope, terr_t *err)
{
	named_t nv[] = {{"input", NULL}, {"as", NULL}, {"in", NULL}};
	expr_t *parts[2] = {NULL, NULL};
	int ret = 0;

	if (arg->value_type != BSON_TYPE_DOCUMENT)
		return terr_set(err, 16878, "$map only supports an object as its argument");
	RET(collect_named(arg, nv, 3, 16879, "Unrecognized parameter to $map: %s", err));
	if (nv[0].v == NULL)
		return terr_set(err, 16880, "Missing 'input' parameter to $map");
	if (nv[2].v == NULL)
		return terr_set(err, 16882, "Missing 'in' parameter to $map");
	ERR(expr_parse_sub(nv[0].v, scope, &parts[0], err));
	ERR(parse_with_as(scope, nv[1].v, nv[2].v, &e->var, &parts[1], err));
	expr_args_set(e, parts, 2);
	return 0;
err:
	expr_parts_destroy(parts, 2);
	return ret;
}

static int
eval_map(const expr_t *e, expr_env_t *env, bson_value_t *out, terr_t *err)
{
	bson_value_t in;
	bson_t b;
	uint32_t idx = 0;
	int ret = 0;

	RET(expr_eval_arg(e, 0, env, &in, err));
	if (expr_is_nullish(&in)) {
		expr_set_null(out);
		return 0;
	}
	if (!is_arr(&in))
		return terr_set(err, 16883, "input to $map must be an array not %s", expr_type_name(&in));
	bson_init(&b);
	bson_iter_t it;
	expr_iter_init(&it, &in);
	while (bson_iter_next(&it)) {
		bson_value_t el = *bson_iter_value(&it), r;
		expr_env_bind(env, e->var, &el);
		ERR(tm_interrupt_check(err));
		ERR(expr_eval(e->args[1], env, &r, err));
		expr_array_append(&b, &idx, &r);
		if (b.len > EXPR_MAX_VALUE_BYTES) {
			ret = expr_too_big(b.len, err);
			goto err;
		}
	}
	expr_set_doc_from(env, out, &b, true);
	return 0;
err:
	bson_destroy(&b);
	return ret;
}

static int
parse_reduce(expr_t *e, const bson_value_t *arg, expr_scope_t *scope, terr_t *err)
{
	named_t nv[] = {{"input", NULL}, {"initialValue", NULL}, {"in", NULL}};
	expr_t *parts[3] = {NULL, NULL, NULL};
	int ret = 0;

	if (arg->value_type != BSON_TYPE_DOCUMENT)
		return terr_set(err, 40075, "$reduce requires an object as an argument, found: %s", expr_type_name(arg));
	RET(collect_named(arg, nv, 3, 40076, "$reduce found an unknown argument: %s", err));
	if (nv[0].v == NULL)
		return terr_set(err, 40077, "$reduce requires 'input' to be specified");
	if (nv[1].v == NULL)
		return terr_set(err, 40078, "$reduce requires 'initialValue' to be specified");
	if (nv[2].v == NULL)
		return terr_set(err, 40079, "$reduce requires 'in' to be specified");
	ERR(expr_parse_sub(nv[0].v, scope, &parts[0], err));
	ERR(expr_parse_sub(nv[1].v, scope, &parts[1], err));
	expr_scope_push(scope);
	ret = expr_scope_bind(scope, "this", &e->var, err);
	if (ret == 0)
		ret = expr_scope_bind(scope, "value", &e->var2, err);
	if (ret == 0)
		ret = expr_parse_sub(nv[2].v, scope, &parts[2], err);
	expr_scope_pop(scope);
	if (ret != 0)
		goto err;
	expr_args_set(e, parts, 3);
	return 0;
err:
	expr_parts_destroy(parts, 3);
	return ret;
}

static int
eval_reduce(const expr_t *e, expr_env_t *env, bson_value_t *out, terr_t *err)
{
	bson_value_t in, acc;

	RET(expr_eval_arg(e, 0, env, &in, err));
	if (expr_is_nullish(&in)) {
		expr_set_null(out);
		return 0;
	}
	if (!is_arr(&in))
		return fail_value(err, 40080, "$reduce requires that 'input' be an array, found: %s", &in);
	RET(expr_eval_arg(e, 1, env, &acc, err));
	bson_iter_t it;
	expr_iter_init(&it, &in);
	while (bson_iter_next(&it)) {
		bson_value_t el = *bson_iter_value(&it), r;
		expr_env_bind(env, e->var, &el);
		expr_env_bind(env, e->var2, &acc);
		RET(tm_interrupt_check(err));
		RET(expr_eval(e->args[2], env, &r, err));
		acc = r;
	}
	*out = acc;
	return 0;
}

/* ---- search --------------------------------------------------------------- */

static int
eval_in(const expr_t *e, expr_env_t *env, bson_value_t *out, terr_t *err)
{
	bson_value_t x, a;
	bson_iter_t it;

	RET(expr_eval_arg(e, 0, env, &x, err));
	RET(expr_eval_arg(e, 1, env, &a, err));
	if (!is_arr(&a))
		return terr_set(err, 40081, "$in requires an array as a second argument, found: %s", expr_type_name(&a));
	expr_iter_init(&it, &a);
	while (bson_iter_next(&it)) {
		RET(tm_interrupt_check(err));
		if (expr_compare(&x, bson_iter_value(&it), e->coll) == 0) {
			expr_set_bool(out, true);
			return 0;
		}
	}
	expr_set_bool(out, false);
	return 0;
}

static int
eval_index_of_array(const expr_t *e, expr_env_t *env, bson_value_t *out, terr_t *err)
{
	bson_value_t a, x, v;
	int64_t bounds[2] = {0, -1};

	RET(expr_eval_arg(e, 0, env, &a, err));
	if (expr_is_nullish(&a)) {
		expr_set_null(out);
		return 0;
	}
	if (!is_arr(&a))
		return terr_set(err, 40090, "$indexOfArray requires an array as a first argument, found: %s",
		                expr_type_name(&a));
	RET(expr_eval_arg(e, 1, env, &x, err));
	size_t n;
	bson_value_t *el = arr_elems(env, &a, &n);
	bounds[1] = (int64_t)n;
	for (size_t i = 2; i < e->nargs; i++) {
		int64_t k;
		RET(expr_eval_arg(e, i, env, &v, err));
		int32_t k32;
		if (!expr_num_to_int32_exact(&v, &k32)) {
			char *t = bv_to_mongo_string(&v);
			/* sic: no space before "requires", as mongod */
			terr_set(err, 9711600, "$indexOfArrayrequires an integral %s, found a value of type: %s, with value: %s",
			         i == 2 ? "starting index" : "ending index", expr_type_name(&v), t);
			bson_free(t);
			return -1;
		}
		k = k32;
		if (k < 0) {
			char *t = bv_to_mongo_string(&v);
			terr_set(err, 9711601, "$indexOfArray requires a nonnegative %s, found: %s",
			         i == 2 ? "starting index" : "ending index", t);
			bson_free(t);
			return -1;
		}
		bounds[i - 2] = k;
	}
	if (bounds[1] > (int64_t)n)
		bounds[1] = (int64_t)n;
	for (int64_t i = bounds[0]; i < bounds[1]; i++) {
		RET(tm_interrupt_check(err));
		if (expr_compare(&el[i], &x, e->coll) == 0) {
			expr_set_int32(out, (int32_t)i);
			return 0;
		}
	}
	expr_set_int32(out, -1);
	return 0;
}

static int
eval_is_array(const expr_t *e, expr_env_t *env, bson_value_t *out, terr_t *err)
{
	bson_value_t a;

	RET(expr_eval_arg(e, 0, env, &a, err));
	expr_set_bool(out, is_arr(&a));
	return 0;
}

static int
eval_range(const expr_t *e, expr_env_t *env, bson_value_t *out, terr_t *err)
{
	bson_value_t s, t, st;
	int32_t a, b, step = 1;

	RET(expr_eval_arg(e, 0, env, &s, err));
	RET(expr_eval_arg(e, 1, env, &t, err));
	if (!bv_is_number(&s))
		return terr_set(err, 34443, "$range requires a numeric starting value, found value of type: %s",
		                expr_type_name(&s));
	if (!expr_num_to_int32_exact(&s, &a))
		return fail_value(err, 34444, "$range requires a starting value that can be represented as a 32-bit "
		                  "integer, found value: %s", &s);
	if (!bv_is_number(&t))
		return terr_set(err, 34445, "$range requires a numeric ending value, found value of type: %s",
		                expr_type_name(&t));
	if (!expr_num_to_int32_exact(&t, &b))
		return fail_value(err, 34446, "$range requires an ending value that can be represented as a 32-bit "
		                  "integer, found value: %s", &t);
	if (e->nargs == 3) {
		RET(expr_eval_arg(e, 2, env, &st, err));
		if (!bv_is_number(&st))
			return terr_set(err, 34447, "$range requires a numeric step value, found value of type:%s",
			                expr_type_name(&st));
		if (!expr_num_to_int32_exact(&st, &step))
			return fail_value(err, 34448, "$range requires a step value that can be represented as a 32-bit "
			                  "integer, found value: %s", &st);
		if (step == 0)
			return terr_set(err, 34449, "$range requires a non-zero step value");
	}
	int64_t steps = ((int64_t)b - a) / step;
	int64_t len = steps >= 0 ? 1 + steps : 0;
	int64_t mem = 24 + len * 16;
	if (mem >= 64 * 1024 * 1024)
		return terr_set(err, 146, "$range would use too much memory (%lld bytes) and cannot spill to disk. "
		                "Memory limit: %d bytes", (long long)mem, 64 * 1024 * 1024);
	bson_t arr;
	uint32_t idx = 0;
	bson_init(&arr);
	for (int64_t cur = a; step > 0 ? cur < b : cur > b; cur += step) {
		bson_value_t v;
		expr_set_int32(&v, (int32_t)cur);
		expr_array_append(&arr, &idx, &v);
		if (arr.len > 16 * 1024 * 1024) {
			bson_destroy(&arr);
			return terr_set(err, TERR_BSON_OBJECT_TOO_LARGE, "$range result exceeds the maximum document size");
		}
		if (tm_interrupt_check(err) != 0) {
			bson_destroy(&arr);
			return -1;
		}
	}
	expr_set_doc_from(env, out, &arr, true);
	return 0;
}

static int
eval_reverse(const expr_t *e, expr_env_t *env, bson_value_t *out, terr_t *err)
{
	bson_value_t a;

	RET(expr_eval_arg(e, 0, env, &a, err));
	if (expr_is_nullish(&a)) {
		expr_set_null(out);
		return 0;
	}
	if (!is_arr(&a))
		return terr_set(err, 34435, "The argument to $reverseArray must be an array, but was of type: %s",
		                expr_type_name(&a));
	size_t n;
	bson_value_t *el = arr_elems(env, &a, &n);
	for (size_t i = 0; i < n / 2; i++) {
		bson_value_t t = el[i];
		el[i] = el[n - 1 - i];
		el[n - 1 - i] = t;
	}
	set_array(env, out, el, n);
	return 0;
}

static int
eval_size(const expr_t *e, expr_env_t *env, bson_value_t *out, terr_t *err)
{
	bson_value_t a;

	RET(expr_eval_arg(e, 0, env, &a, err));
	if (!is_arr(&a))
		return terr_set(err, 17124, "The argument to $size must be an array, but was of type: %s",
		                expr_type_name(&a));
	expr_set_int32(out, (int32_t)expr_array_len(&a));
	return 0;
}

static int
eval_slice(const expr_t *e, expr_env_t *env, bson_value_t *out, terr_t *err)
{
	bson_value_t a, p, l;
	int32_t pos, len;

	RET(expr_eval_arg(e, 0, env, &a, err));
	RET(expr_eval_arg(e, 1, env, &p, err));
	if (expr_is_nullish(&a) || expr_is_nullish(&p)) {
		expr_set_null(out);
		return 0;
	}
	if (!is_arr(&a))
		return terr_set(err, 28724, "First argument to $slice must be an array, but is of type: %s",
		                expr_type_name(&a));
	if (!bv_is_number(&p))
		return terr_set(err, 28725, "Second argument to $slice must be a numeric value, but is of type: %s",
		                expr_type_name(&p));
	if (!expr_num_to_int32_exact(&p, &pos))
		return terr_set(err, 28726, "Second argument to $slice can't be represented as a 32-bit integer: %g",
		                expr_num_to_double(&p));
	size_t n;
	bson_value_t *el = arr_elems(env, &a, &n);
	int64_t start, count;
	if (e->nargs == 2) {
		if (pos >= 0) {
			start = 0;
			count = pos;
		} else {
			start = (int64_t)n + pos;
			if (start < 0)
				start = 0;
			count = (int64_t)n - start;
		}
	} else {
		RET(expr_eval_arg(e, 2, env, &l, err));
		if (expr_is_nullish(&l)) {
			expr_set_null(out);
			return 0;
		}
		if (!bv_is_number(&l))
			return terr_set(err, 28727, "Third argument to $slice must be numeric, but is of type: %s",
			                expr_type_name(&l));
		if (!expr_num_to_int32_exact(&l, &len))
			return terr_set(err, 28728, "Third argument to $slice can't be represented as a 32-bit integer: %g",
			                expr_num_to_double(&l));
		if (len <= 0)
			return terr_set(err, 28729, "Third argument to $slice must be positive: %d", len);
		start = pos >= 0 ? pos : (int64_t)n + pos;
		if (start < 0)
			start = 0;
		count = len;
	}
	if (start > (int64_t)n)
		start = (int64_t)n;
	if (start + count > (int64_t)n)
		count = (int64_t)n - start;
	set_array(env, out, el + start, (size_t)count);
	return 0;
}

static int
elements_true(const expr_t *e, expr_env_t *env, bson_value_t *out, terr_t *err, bool all)
{
	bson_value_t a;
	bson_iter_t it;

	RET(expr_eval_arg(e, 0, env, &a, err));
	if (!is_arr(&a))
		return terr_set(err, all ? 17040 : 17041, "%s's argument must be an array, but is %s", e->op->name,
		                expr_type_name(&a));
	expr_iter_init(&it, &a);
	while (bson_iter_next(&it)) {
		RET(tm_interrupt_check(err));
		bool t = expr_value_truthy(bson_iter_value(&it));
		if (all && !t) {
			expr_set_bool(out, false);
			return 0;
		}
		if (!all && t) {
			expr_set_bool(out, true);
			return 0;
		}
	}
	expr_set_bool(out, all);
	return 0;
}

static int
eval_all_true(const expr_t *e, expr_env_t *env, bson_value_t *out, terr_t *err)
{
	return elements_true(e, env, out, err, true);
}

static int
eval_any_true(const expr_t *e, expr_env_t *env, bson_value_t *out, terr_t *err)
{
	return elements_true(e, env, out, err, false);
}

/* ---- $zip ------------------------------------------------------------------ */

/* args: inputs (array expression list, parsed as EXPR_ARRAY), defaults|NULL;
 * extra: bool useLongestLength */
static int
parse_zip(expr_t *e, const bson_value_t *arg, expr_scope_t *scope, terr_t *err)
{
	bson_iter_t it;
	expr_t *parts[2] = {NULL, NULL};
	bool longest = false;
	size_t ninputs = 0, ndefaults = 0;
	int ret = 0;

	if (arg->value_type != BSON_TYPE_DOCUMENT)
		return terr_set(err, 34460, "$zip only supports an object as an argument, found %s", expr_type_name(arg));
	expr_iter_init(&it, arg);
	while (bson_iter_next(&it)) {
		const char *k = bson_iter_key(&it);
		const bson_value_t *v = bson_iter_value(&it);
		if (strcmp(k, "inputs") == 0 || strcmp(k, "defaults") == 0) {
			bool inputs = k[0] == 'i';
			if (v->value_type != BSON_TYPE_ARRAY) {
				ret = terr_set(err, inputs ? 34461 : 34462, "%s must be an array of expressions, found %s", k,
				               expr_type_name(v));
				goto err;
			}
			expr_destroy(parts[inputs ? 0 : 1]);
			parts[inputs ? 0 : 1] = NULL;
			ERR(expr_parse_sub(v, scope, &parts[inputs ? 0 : 1], err));
			if (inputs)
				ninputs = expr_array_len(v);
			else
				ndefaults = expr_array_len(v);
		} else if (strcmp(k, "useLongestLength") == 0) {
			if (v->value_type != BSON_TYPE_BOOL) {
				/* sic: mongod names the type of the whole argument */
				ret = terr_set(err, 34463, "useLongestLength must be a bool, found %s", expr_type_name(arg));
				goto err;
			}
			longest = v->value.v_bool;
		} else {
			ret = terr_set(err, 34464, "$zip found an unknown argument: %s", k);
			goto err;
		}
	}
	if (ninputs == 0) {
		ret = terr_set(err, 34465, "$zip requires at least one input array");
		goto err;
	}
	if (!longest && ndefaults > 0) {
		ret = terr_set(err, 34466, "cannot specify defaults unless useLongestLength is true");
		goto err;
	}
	if (ndefaults > 0 && ndefaults != ninputs) {
		ret = terr_set(err, 34467, "defaults and inputs must have the same length");
		goto err;
	}
	expr_args_set(e, parts, 2);
	e->extra = longest ? (void *)e : NULL;
	return 0;
err:
	expr_parts_destroy(parts, 2);
	return ret;
}

static int
eval_zip(const expr_t *e, expr_env_t *env, bson_value_t *out, terr_t *err)
{
	bson_value_t ins, defs;
	size_t n, nd = 0, maxlen = 0, minlen = (size_t)-1;
	bool longest = e->extra != NULL;

	RET(expr_eval_arg(e, 0, env, &ins, err));
	bson_value_t *inputs = arr_elems(env, &ins, &n);
	bson_value_t *dv = NULL;
	bson_value_t **cols = expr_env_alloc(env, (n + 1) * sizeof(*cols));
	size_t *lens = expr_env_alloc(env, (n + 1) * sizeof(*lens));
	for (size_t i = 0; i < n; i++) {
		if (expr_is_nullish(&inputs[i])) {
			expr_set_null(out);
			return 0;
		}
		if (!is_arr(&inputs[i]))
			return fail_value(err, 34468, "$zip found a non-array expression in input: %s", &inputs[i]);
		cols[i] = arr_elems(env, &inputs[i], &lens[i]);
		if (lens[i] > maxlen)
			maxlen = lens[i];
		if (lens[i] < minlen)
			minlen = lens[i];
	}
	if (n == 0)
		minlen = 0;
	if (e->args[1] != NULL && minlen != maxlen) {
		RET(expr_eval_arg(e, 1, env, &defs, err));
		dv = arr_elems(env, &defs, &nd);
	}
	size_t rows = longest ? maxlen : minlen;
	bson_t b;
	uint32_t idx = 0;
	bson_init(&b);
	for (size_t r = 0; r < rows; r++) {
		bson_t row;
		uint32_t ridx = 0;
		bson_init(&row);
		for (size_t c = 0; c < n; c++) {
			bson_value_t v;
			if (r < lens[c])
				v = cols[c][r];
			else if (dv != NULL && c < nd)
				v = dv[c];
			else
				expr_set_null(&v);
			expr_array_append(&row, &ridx, &v);
		}
		if (tm_interrupt_check(err) != 0) {
			bson_destroy(&row);
			bson_destroy(&b);
			return -1;
		}
		char k[16];
		const char *key;
		size_t kl = bson_uint32_to_string(idx++, &key, k, sizeof(k));
		bson_append_array(&b, key, (int)kl, &row);
		bson_destroy(&row);
	}
	expr_set_doc_from(env, out, &b, true);
	return 0;
}

/* ---- $sortArray -------------------------------------------------------- */

typedef struct sort_key {
	char *path;   /* NULL: sort whole values */
	int dir;
} sort_key_t;

typedef struct sort_spec {
	sort_key_t *keys;
	size_t n;
} sort_spec_t;

static void
sort_spec_free(void *p)
{
	sort_spec_t *s = p;
	for (size_t i = 0; i < s->n; i++)
		bson_free(s->keys[i].path);
	bson_free(s->keys);
	bson_free(s);
}

static int
parse_sort_array(expr_t *e, const bson_value_t *arg, expr_scope_t *scope, terr_t *err)
{
	named_t nv[] = {{"input", NULL}, {"sortBy", NULL}};
	expr_t *in = NULL;
	sort_spec_t *spec;

	if (arg->value_type != BSON_TYPE_DOCUMENT)
		return terr_set(err, 2942500, "$sortArray requires an object as an argument, found: %s",
		                expr_type_name(arg));
	RET(collect_named(arg, nv, 2, 2942501, "$sortArray found an unknown argument: %s", err));
	if (nv[0].v == NULL)
		return terr_set(err, 2942502, "$sortArray requires 'input' to be specified");
	if (nv[1].v == NULL)
		return terr_set(err, 2942503, "$sortArray requires 'sortBy' to be specified");
	spec = bson_malloc0(sizeof(*spec));
	if (bv_is_number(nv[1].v)) {
		double d = bv_as_double(nv[1].v);
		if (d != 1 && d != -1) {
			sort_spec_free(spec);
			return terr_set(err, 2942506, "The $sort element value must be either 1 or -1");
		}
		spec->keys = bson_malloc0(sizeof(sort_key_t));
		spec->keys[0].dir = d > 0 ? 1 : -1;
		spec->n = 1;
	} else if (nv[1].v->value_type == BSON_TYPE_DOCUMENT) {
		bson_iter_t it;
		size_t cnt = expr_array_len(nv[1].v);
		if (cnt == 0) {
			sort_spec_free(spec);
			return terr_set(err, 2942505, "$sort stage must have at least one sort key");
		}
		spec->keys = bson_malloc0(cnt * sizeof(sort_key_t));
		expr_iter_init(&it, nv[1].v);
		while (bson_iter_next(&it)) {
			const bson_value_t *d = bson_iter_value(&it);
			double dir = bv_is_number(d) ? bv_as_double(d) : 0;
			if (dir != 1 && dir != -1) {
				sort_spec_free(spec);
				return terr_set(err, 2942505, "$sort key ordering must be 1 (for ascending) or -1 (for descending)");
			}
			spec->keys[spec->n].path = bson_strdup(bson_iter_key(&it));
			spec->keys[spec->n].dir = dir > 0 ? 1 : -1;
			spec->n++;
		}
	} else {
		sort_spec_free(spec);
		return terr_set(err, 2942507, "The $sort is invalid: use 1/-1 to sort the whole element, or {field:1/-1} "
		                "to sort embedded fields");
	}
	if (expr_parse_sub(nv[0].v, scope, &in, err) != 0) {
		sort_spec_free(spec);
		return -1;
	}
	expr_args_set(e, &in, 1);
	e->extra = spec;
	e->extra_free = sort_spec_free;
	return 0;
}

typedef struct sort_item {
	bson_value_t v;
	bson_value_t *keys;
	size_t pos;
} sort_item_t;

static int
sort_item_cmp(const sort_spec_t *spec, const sort_item_t *a, const sort_item_t *b,
              const coll_t *coll)
{
	for (size_t i = 0; i < spec->n; i++) {
		int c = expr_compare(&a->keys[i], &b->keys[i], coll);
		if (c != 0)
			return c * spec->keys[i].dir;
	}
	return a->pos < b->pos ? -1 : (a->pos > b->pos ? 1 : 0);
}

typedef struct sort_ctx {
	const sort_spec_t *spec;
	const coll_t *coll;
} sort_ctx_t;

static int
sort_item_cmp_ctx(const void *a, const void *b, void *ctx)
{
	const sort_ctx_t *sc = ctx;
	return sort_item_cmp(sc->spec, a, b, sc->coll);
}

static int
eval_sort_array(const expr_t *e, expr_env_t *env, bson_value_t *out, terr_t *err)
{
	const sort_spec_t *spec = e->extra;
	bson_value_t in;
	size_t n;

	RET(expr_eval_arg(e, 0, env, &in, err));
	if (expr_is_nullish(&in)) {
		expr_set_null(out);
		return 0;
	}
	if (!is_arr(&in))
		return fail_value(err, 2942504, "The input argument to $sortArray must be an array, but was of type: %s",
		                  &in);
	bson_value_t *el = arr_elems(env, &in, &n);
	sort_item_t *items = expr_env_alloc(env, (n + 1) * sizeof(*items));
	for (size_t i = 0; i < n; i++) {
		items[i].v = el[i];
		items[i].pos = i;
		items[i].keys = expr_env_alloc(env, spec->n * sizeof(bson_value_t));
		for (size_t k = 0; k < spec->n; k++) {
			if (spec->keys[k].path == NULL)
				items[i].keys[k] = el[i];
			else if (el[i].value_type == BSON_TYPE_DOCUMENT)
				expr_path_eval(env, &el[i], spec->keys[k].path, &items[i].keys[k]);
			else
				expr_set_missing(&items[i].keys[k]);
		}
	}
	{
		sort_ctx_t sc = {spec, e->coll};
		RET(msort(env, items, n, sizeof(*items), sort_item_cmp_ctx, &sc, err));
	}
	for (size_t i = 0; i < n; i++)
		el[i] = items[i].v;
	set_array(env, out, el, n);
	return 0;
}

/* ---- sets -------------------------------------------------------------------- */

/*
 * Sets are sorted vectors (expr_compare under the expression's collation):
 * building one is O(n log n), a membership test a binary search, so set
 * operators over arrays of a million elements stay far from quadratic.
 * Of values comparing equal (1, 1.0, NumberLong(1)) the first occurrence is
 * the one kept, as mongod's value sets keep the first inserted.
 */
typedef struct pos_value {
	bson_value_t v;
	size_t pos;
} pos_value_t;

static int
pos_value_cmp(const void *a, const void *b, void *coll)
{
	const pos_value_t *x = a, *y = b;
	int c = expr_compare(&x->v, &y->v, coll);

	if (c != 0)
		return c;
	return x->pos < y->pos ? -1 : (x->pos > y->pos ? 1 : 0);
}

static int
pos_only_cmp(const void *a, const void *b, void *ctx)
{
	const pos_value_t *x = a, *y = b;

	(void)ctx;
	return x->pos < y->pos ? -1 : (x->pos > y->pos ? 1 : 0);
}

/* The n values of vals as a set: *out sorted and distinct (first
 * occurrences), or in their first occurrences' order when keep_order. */
static int
set_build(expr_env_t *env, const bson_value_t *vals, size_t n, bool keep_order, const coll_t *coll,
          bson_value_t **out, size_t *nout, terr_t *err)
{
	pos_value_t *pv = expr_env_alloc(env, (n + 1) * sizeof(*pv));
	bson_value_t *res = expr_env_alloc(env, (n + 1) * sizeof(*res));
	size_t k = 0;

	for (size_t i = 0; i < n; i++) {
		pv[i].v = vals[i];
		pv[i].pos = i;
	}
	RET(msort(env, pv, n, sizeof(*pv), pos_value_cmp, (void *)coll, err));
	for (size_t i = 0; i < n; i++)
		if (i == 0 || expr_compare(&pv[i - 1].v, &pv[i].v, coll) != 0)
			pv[k++] = pv[i];
	if (keep_order)
		RET(msort(env, pv, k, sizeof(*pv), pos_only_cmp, NULL, err));
	for (size_t i = 0; i < k; i++)
		res[i] = pv[i].v;
	*out = res;
	*nout = k;
	return 0;
}

/* Distinct values of an array value (see set_build). */
static int
distinct(expr_env_t *env, const bson_value_t *a, bool keep_order, const coll_t *coll, bson_value_t **out,
         size_t *n, terr_t *err)
{
	size_t cnt;
	bson_value_t *el = arr_elems(env, a, &cnt);

	return set_build(env, el, cnt, keep_order, coll, out, n, err);
}

/* Binary search in a sorted set. */
static bool
contains(const bson_value_t *set, size_t n, const bson_value_t *v, const coll_t *coll)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = expr_compare(&set[mid], v, coll);
		if (c == 0)
			return true;
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return false;
}

/* plain argument list into e (as the generic parser does) */
static int
parse_list(expr_t *e, const bson_value_t *arg, expr_scope_t *scope, terr_t *err)
{
	bson_iter_t it;
	expr_t *sub = NULL;

	if (arg->value_type != BSON_TYPE_ARRAY) {
		RET(expr_parse_sub(arg, scope, &sub, err));
		expr_args_set(e, &sub, 1);
		return 0;
	}
	size_t n = expr_array_len(arg), i = 0;
	e->args = bson_malloc0((n + 1) * sizeof(*e->args));
	expr_iter_init(&it, arg);
	while (bson_iter_next(&it)) {
		RET(expr_parse_sub(bson_iter_value(&it), scope, &e->args[i], err));
		e->nargs = ++i;
	}
	return 0;
}

static int
parse_set_equals(expr_t *e, const bson_value_t *arg, expr_scope_t *scope, terr_t *err)
{
	RET(parse_list(e, arg, scope, err));
	if (e->nargs < 2)
		return terr_set(err, 17045, "$setEquals needs at least two arguments had: %zu", e->nargs);
	for (size_t i = 0; i < e->nargs; i++) {
		const bson_value_t *c;
		if (expr_is_constant(e->args[i], &c) && c->value_type != BSON_TYPE_ARRAY)
			return terr_set(err, 5887502, "All operands of $setEquals must be arrays. %zu-th argument is of "
			                "type: %s", i + 1, expr_type_name(c));
	}
	return 0;
}

/* extra != NULL when the right-hand side is constant (mongod's optimized
 * form, which reports a non-array left-hand side as 17310) */
static int
parse_set_is_subset(expr_t *e, const bson_value_t *arg, expr_scope_t *scope, terr_t *err)
{
	const bson_value_t *c;

	RET(parse_list(e, arg, scope, err));
	if (e->nargs != 2)
		return terr_set(err, 16020, "Expression $setIsSubset takes exactly 2 arguments. %zu were passed in.",
		                e->nargs);
	if (expr_is_constant(e->args[1], &c)) {
		if (expr_is_constant(e->args[0], NULL))
			return 0; /* folded as a whole */
		if (c->value_type != BSON_TYPE_ARRAY)
			return terr_set(err, 17311, "both operands of $setIsSubset must be arrays. Second argument is of "
			                "type: %s", expr_type_name(c));
		e->extra = e;
	}
	return 0;
}

static int
eval_set_equals(const expr_t *e, expr_env_t *env, bson_value_t *out, terr_t *err)
{
	bson_value_t *first = NULL;
	size_t nfirst = 0;

	for (size_t i = 0; i < e->nargs; i++) {
		bson_value_t a;
		size_t n;
		RET(expr_eval_arg(e, i, env, &a, err));
		if (!is_arr(&a))
			return terr_set(err, 17044, "All operands of $setEquals must be arrays. %zu-th argument is of type: %s",
			                i + 1, expr_type_name(&a));
		bson_value_t *s;
		RET(distinct(env, &a, false, e->coll, &s, &n, err));
		if (i == 0) {
			first = s;
			nfirst = n;
			continue;
		}
		/* two sorted distinct vectors: equal sets iff equal elementwise */
		bool eq = n == nfirst;
		for (size_t k = 0; k < n && eq; k++)
			eq = expr_compare(&first[k], &s[k], e->coll) == 0;
		if (!eq) {
			expr_set_bool(out, false);
			return 0;
		}
	}
	expr_set_bool(out, true);
	return 0;
}

static int
eval_set_intersection(const expr_t *e, expr_env_t *env, bson_value_t *out, terr_t *err)
{
	bson_value_t *cur = NULL;
	size_t ncur = 0;
	bool null = false;

	for (size_t i = 0; i < e->nargs; i++) {
		bson_value_t a;
		size_t n;
		RET(expr_eval_arg(e, i, env, &a, err));
		if (expr_is_nullish(&a)) {
			expr_set_null(out);
			return 0;
		}
		if (!is_arr(&a))
			return terr_set(err, 17047,
			                "All operands of $setIntersection must be arrays. One argument is of type: %s",
			                expr_type_name(&a));
		bson_value_t *s;
		RET(distinct(env, &a, false, e->coll, &s, &n, err));
		if (cur == NULL && i == 0) {
			cur = s;
			ncur = n;
			continue;
		}
		if (cur == NULL) {
			cur = s;
			ncur = n;
			continue;
		}
		size_t k = 0;
		for (size_t j = 0; j < ncur; j++) {
			RET(tm_interrupt_check(err));
			if (contains(s, n, &cur[j], e->coll))
				cur[k++] = cur[j];
		}
		ncur = k;
	}
	(void)null;
	/* cur is sorted: the first argument's set, filtered */
	set_array(env, out, cur, ncur);
	return 0;
}

static int
eval_set_union(const expr_t *e, expr_env_t *env, bson_value_t *out, terr_t *err)
{
	bson_value_t *acc;
	size_t nacc = 0, cap = 0;
	bool null = false;

	for (size_t i = 0; i < e->nargs; i++) {
		bson_value_t a;
		RET(expr_eval_arg(e, i, env, &a, err));
		if (expr_is_nullish(&a)) {
			expr_set_null(out);
			return 0;
		}
		if (!is_arr(&a))
			return terr_set(err, 17043, "All operands of $setUnion must be arrays. One argument is of type: %s",
			                expr_type_name(&a));
		cap += expr_array_len(&a);
	}
	(void)null;
	acc = expr_env_alloc(env, (cap + 1) * sizeof(*acc));
	for (size_t i = 0; i < e->nargs; i++) {
		bson_value_t a;
		size_t n;
		RET(expr_eval_arg(e, i, env, &a, err));
		bson_value_t *el = arr_elems(env, &a, &n);
		for (size_t k = 0; k < n && nacc < cap; k++)
			acc[nacc++] = el[k];
	}
	{
		bson_value_t *set;
		size_t nset;
		RET(set_build(env, acc, nacc, false, e->coll, &set, &nset, err));
		set_array(env, out, set, nset);
	}
	return 0;
}

static int
eval_set_difference(const expr_t *e, expr_env_t *env, bson_value_t *out, terr_t *err)
{
	bson_value_t a, b;
	size_t na, nb;

	RET(expr_eval_arg(e, 0, env, &a, err));
	RET(expr_eval_arg(e, 1, env, &b, err));
	if (expr_is_nullish(&a) || expr_is_nullish(&b)) {
		expr_set_null(out);
		return 0;
	}
	if (!is_arr(&a))
		return terr_set(err, 17048, "both operands of $setDifference must be arrays. First argument is of type: %s",
		                expr_type_name(&a));
	if (!is_arr(&b))
		return terr_set(err, 17049, "both operands of $setDifference must be arrays. Second argument is of type: %s",
		                expr_type_name(&b));
	bson_value_t *sa, *sb;
	RET(distinct(env, &a, true, e->coll, &sa, &na, err));
	RET(distinct(env, &b, false, e->coll, &sb, &nb, err));
	size_t k = 0;
	for (size_t i = 0; i < na; i++) {
		RET(tm_interrupt_check(err));
		if (!contains(sb, nb, &sa[i], e->coll))
			sa[k++] = sa[i];
	}
	set_array(env, out, sa, k);
	return 0;
}

static int
eval_set_is_subset(const expr_t *e, expr_env_t *env, bson_value_t *out, terr_t *err)
{
	bson_value_t a, b;
	size_t na, nb;

	RET(expr_eval_arg(e, 0, env, &a, err));
	RET(expr_eval_arg(e, 1, env, &b, err));
	if (!is_arr(&a))
		return terr_set(err, e->extra ? 17310 : 17046,
		                "both operands of $setIsSubset must be arrays. First argument is of type: %s",
		                expr_type_name(&a));
	if (!is_arr(&b))
		return terr_set(err, 17042, "both operands of $setIsSubset must be arrays. Second argument is of type: %s",
		                expr_type_name(&b));
	bson_value_t *sa = arr_elems(env, &a, &na), *sb;
	RET(distinct(env, &b, false, e->coll, &sb, &nb, err));
	for (size_t i = 0; i < na; i++) {
		RET(tm_interrupt_check(err));
		if (!contains(sb, nb, &sa[i], e->coll)) {
			expr_set_bool(out, false);
			return 0;
		}
	}
	expr_set_bool(out, true);
	return 0;
}

const expr_op_t expr_ops_array[] = {
	{"$arrayElemAt", 2, 2, NULL, eval_elem_at, 0},
	{"$first", 1, 1, NULL, eval_first, 0},
	{"$last", 1, 1, NULL, eval_last, 0},
	{"$concatArrays", 0, -1, NULL, eval_concat_arrays, 0},
	{"$filter", 0, -1, parse_filter, eval_filter, 0},
	{"$map", 0, -1, parse_map, eval_map, 0},
	{"$reduce", 0, -1, parse_reduce, eval_reduce, 0},
	{"$in", 2, 2, NULL, eval_in, 0},
	{"$indexOfArray", 2, 4, NULL, eval_index_of_array, 0},
	{"$isArray", 1, 1, NULL, eval_is_array, 0},
	{"$range", 2, 3, NULL, eval_range, 0},
	{"$reverseArray", 1, 1, NULL, eval_reverse, 0},
	{"$size", 1, 1, NULL, eval_size, 0},
	{"$slice", 2, 3, NULL, eval_slice, 0},
	{"$zip", 0, -1, parse_zip, eval_zip, 0},
	{"$sortArray", 0, -1, parse_sort_array, eval_sort_array, 0},
	{"$allElementsTrue", 1, 1, NULL, eval_all_true, 0},
	{"$anyElementTrue", 1, 1, NULL, eval_any_true, 0},
	{"$setEquals", 0, -1, parse_set_equals, eval_set_equals, 0},
	{"$setIntersection", 0, -1, NULL, eval_set_intersection, 0},
	{"$setUnion", 0, -1, NULL, eval_set_union, 0},
	{"$setDifference", 2, 2, NULL, eval_set_difference, 0},
	{"$setIsSubset", 0, -1, parse_set_is_subset, eval_set_is_subset, 0},
	{NULL, 0, 0, NULL, NULL, 0},
};
