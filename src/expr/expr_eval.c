/*
 * expr_eval.c -- evaluating the generic node kinds (constants, field paths,
 * variables, expression objects and arrays), dispatch to operator handlers,
 * and value helpers every family shares (truthiness, aggregation field-path
 * semantics, numeric conversions, the widening running sum).
 *
 * Not here: operator semantics (expr_<family>.c).
 */
#include "expr/expr_private.h"

#include <math.h>
#include <string.h>

#include "bson/iter.h"
#include "bson/value.h"
#include "common/checked.h"
#include "expr/decimal.h"

#define EXPR_MAX_EVAL_DEPTH 400

bool
expr_iter_init(bson_iter_t *it, const bson_value_t *v)
{
	if (v->value_type != BSON_TYPE_DOCUMENT && v->value_type != BSON_TYPE_ARRAY)
		return false;
	return bson_iter_init_from_data(it, v->value.v_doc.data, v->value.v_doc.data_len);
}

uint32_t
expr_array_len(const bson_value_t *v)
{
	bson_iter_t it;
	uint32_t n = 0;

	if (!expr_iter_init(&it, v))
		return 0;
	while (bson_iter_next(&it))
		n++;
	return n;
}

void
expr_array_append(bson_t *arr, uint32_t *idx, const bson_value_t *v)
{
	char buf[16];
	const char *key;
	size_t klen = bson_uint32_to_string((*idx)++, &key, buf, sizeof(buf));

	if (v->value_type == BSON_TYPE_EOD) {
		bson_append_null(arr, key, (int)klen);
		return;
	}
	bson_append_value(arr, key, (int)klen, v);
}

const char *
expr_type_name(const bson_value_t *v)
{
	return bv_type_name(v->value_type);
}

bool
expr_value_truthy(const bson_value_t *v)
{
	switch (v->value_type) {
	case BSON_TYPE_EOD:
	case BSON_TYPE_NULL:
	case BSON_TYPE_UNDEFINED:
		return false;
	case BSON_TYPE_BOOL:
		return v->value.v_bool;
	case BSON_TYPE_INT32:
		return v->value.v_int32 != 0;
	case BSON_TYPE_INT64:
		return v->value.v_int64 != 0;
	case BSON_TYPE_DOUBLE:
		return v->value.v_double != 0;
	case BSON_TYPE_DECIMAL128:
		return !expr_decimal_is_zero(v->value.v_decimal128);
	default:
		return true;
	}
}

/* ---- field paths --------------------------------------------------------- */

static void path_eval(expr_env_t *env, const bson_value_t *base, const char *path, bson_value_t *out);

/* Apply path to each document element of an array; collect non-missing. */
static void
path_eval_array(expr_env_t *env, const bson_value_t *arr, const char *path, bson_value_t *out)
{
	bson_iter_t it;
	bson_t b;
	uint32_t idx = 0;

	bson_init(&b);
	expr_iter_init(&it, arr);
	while (bson_iter_next(&it)) {
		bson_value_t elem, r;
		if (!BSON_ITER_HOLDS_DOCUMENT(&it))
			continue;
		elem = *bson_iter_value(&it);
		path_eval(env, &elem, path, &r);
		if (r.value_type != BSON_TYPE_EOD)
			expr_array_append(&b, &idx, &r);
	}
	expr_set_doc_from(env, out, &b, true);
}

/* Find field key (len bytes) in a document value; *out borrows from it.
 * The lean walk of bson/iter.h: no key strlen, no per-element validation
 * beyond bounds, the value decoded without libbson for the common types. */
static bool
doc_find(const bson_value_t *doc, const char *key, size_t len, bson_value_t *out)
{
	biter_t it;

	if (len > UINT32_MAX || !biter_init_value(&it, doc) || !biter_find(&it, key, (uint32_t)len))
		return false;
	biter_value(&it, out);
	return true;
}

/* base is a document: look up the first component, recurse. */
static void
path_eval(expr_env_t *env, const bson_value_t *base, const char *path, bson_value_t *out)
{
	const char *dot = strchr(path, '.');
	size_t len = dot ? (size_t)(dot - path) : strlen(path);
	bson_value_t v;

	expr_set_missing(out);
	if (base->value_type != BSON_TYPE_DOCUMENT)
		return;
	if (!doc_find(base, path, len, &v))
		return;
	if (dot == NULL) {
		*out = v;
		return;
	}
	if (v.value_type == BSON_TYPE_DOCUMENT)
		path_eval(env, &v, dot + 1, out);
	else if (v.value_type == BSON_TYPE_ARRAY)
		path_eval_array(env, &v, dot + 1, out);
}

void
expr_path_eval(expr_env_t *env, const bson_value_t *base, const char *path, bson_value_t *out)
{
	if (path == NULL || *path == 0) {
		*out = *base;
		return;
	}
	if (base->value_type == BSON_TYPE_DOCUMENT)
		path_eval(env, base, path, out);
	else if (base->value_type == BSON_TYPE_ARRAY)
		path_eval_array(env, base, path, out);
	else
		expr_set_missing(out);
}

/* ---- generic node kinds -------------------------------------------------- */

static int
eval_object(const expr_t *e, expr_env_t *env, bson_value_t *out, terr_t *err)
{
	bson_t b;
	int ret = 0;

	bson_init(&b);
	for (size_t i = 0; i < e->nargs; i++) {
		bson_value_t v;
		ERR(expr_eval(e->args[i], env, &v, err));
		if (v.value_type == BSON_TYPE_EOD)
			continue;
		bson_append_value(&b, e->names[i], -1, &v);
	}
	expr_set_doc_from(env, out, &b, false);
	return 0;
err:
	bson_destroy(&b);
	return ret;
}

static int
eval_array(const expr_t *e, expr_env_t *env, bson_value_t *out, terr_t *err)
{
	bson_t b;
	uint32_t idx = 0;
	int ret = 0;

	bson_init(&b);
	for (size_t i = 0; i < e->nargs; i++) {
		bson_value_t v;
		ERR(expr_eval(e->args[i], env, &v, err));
		expr_array_append(&b, &idx, &v);
	}
	expr_set_doc_from(env, out, &b, true);
	return 0;
err:
	bson_destroy(&b);
	return ret;
}

int
expr_eval(const expr_t *e, expr_env_t *env, bson_value_t *out, terr_t *err)
{
	int ret = 0;

	/* every node evaluated is a unit of work for maxTimeMS / killOp */
	if (tm_interrupt_check(err) != 0)
		return -1;
	switch (e->kind) {
	case EXPR_CONST:
		*out = e->value;
		return 0;
	case EXPR_FIELD:
		expr_path_eval(env, &env->current, e->path, out);
		return 0;
	case EXPR_VAR: {
		bson_value_t v;
		if (e->var == EXPR_VAR_CLUSTER_TIME && !env->ct_set)
			return terr_set(err, 51144, "Builtin variable '$$CLUSTER_TIME' is not available");
		expr_env_var(env, e->var, &v);
		if (e->path == NULL) {
			*out = v;
			return 0;
		}
		expr_path_eval(env, &v, e->path, out);
		return 0;
	}
	default:
		break;
	}
	if (++env->depth > EXPR_MAX_EVAL_DEPTH) {
		env->depth--;
		return terr_set(err, TERR_BAD_VALUE, "expression evaluation nested too deeply");
	}
	switch (e->kind) {
	case EXPR_OBJECT:
		ret = eval_object(e, env, out, err);
		break;
	case EXPR_ARRAY:
		ret = eval_array(e, env, out, err);
		break;
	default:
		ret = e->op->eval(e, env, out, err);
		break;
	}
	env->depth--;
	return ret;
}

int
expr_eval_bool(const expr_t *e, expr_env_t *env, bool *out, terr_t *err)
{
	bson_value_t v;

	RET(expr_eval(e, env, &v, err));
	*out = expr_value_truthy(&v);
	return 0;
}

/* ---- numbers ------------------------------------------------------------- */

bool
expr_num_get_int64(const bson_value_t *v, int64_t *out)
{
	if (v->value_type == BSON_TYPE_INT32) {
		*out = v->value.v_int32;
		return true;
	}
	if (v->value_type == BSON_TYPE_INT64) {
		*out = v->value.v_int64;
		return true;
	}
	return false;
}

bson_decimal128_t
expr_num_to_decimal(const bson_value_t *v)
{
	switch (v->value_type) {
	case BSON_TYPE_INT32: return expr_decimal_from_int64(v->value.v_int32);
	case BSON_TYPE_INT64: return expr_decimal_from_int64(v->value.v_int64);
	case BSON_TYPE_DOUBLE: return expr_decimal_from_double(v->value.v_double);
	case BSON_TYPE_DECIMAL128: return v->value.v_decimal128;
	default: return expr_decimal_from_int64(0);
	}
}

double
expr_num_to_double(const bson_value_t *v)
{
	switch (v->value_type) {
	case BSON_TYPE_INT32: return v->value.v_int32;
	case BSON_TYPE_INT64: return (double)v->value.v_int64;
	case BSON_TYPE_DOUBLE: return v->value.v_double;
	case BSON_TYPE_DECIMAL128: return expr_decimal_to_double(v->value.v_decimal128);
	default: return 0;
	}
}

bool
expr_num_to_int64_exact(const bson_value_t *v, int64_t *out)
{
	switch (v->value_type) {
	case BSON_TYPE_INT32:
	case BSON_TYPE_INT64:
		return expr_num_get_int64(v, out);
	case BSON_TYPE_DOUBLE: {
		double d = v->value.v_double;
		if (!(d >= -9223372036854775808.0 && d < 9223372036854775808.0) || d != trunc(d))
			return false;
		*out = (int64_t)d;
		return true;
	}
	case BSON_TYPE_DECIMAL128:
		if (!expr_decimal_is_integral(v->value.v_decimal128))
			return false;
		return expr_decimal_to_int64(v->value.v_decimal128, out);
	default:
		return false;
	}
}

bool
expr_num_to_int32_exact(const bson_value_t *v, int32_t *out)
{
	int64_t i;

	if (!expr_num_to_int64_exact(v, &i) || i < INT32_MIN || i > INT32_MAX)
		return false;
	*out = (int32_t)i;
	return true;
}

/* ---- running sum (MongoDB's $add/$sum widening) -------------------------- */

void
expr_sum_init(expr_sum_t *s)
{
	memset(s, 0, sizeof(*s));
	s->type = EXPR_NUM_INT32;
}

static void
sum_add_double(expr_sum_t *s, double d)
{
	/* Kahan-Babuska summation, as MongoDB's DoubleDoubleSummation spirit */
	double t = s->d + d;
	if (fabs(s->d) >= fabs(d))
		s->dc += (s->d - t) + d;
	else
		s->dc += (d - t) + s->d;
	s->d = t;
}

void
expr_sum_add(expr_sum_t *s, const bson_value_t *v)
{
	switch (v->value_type) {
	case BSON_TYPE_INT32:
	case BSON_TYPE_INT64: {
		int64_t x = v->value_type == BSON_TYPE_INT32 ? v->value.v_int32 : v->value.v_int64;
		if (v->value_type == BSON_TYPE_INT64 && s->type == EXPR_NUM_INT32)
			s->type = EXPR_NUM_INT64;
		if (s->exact && s->type <= EXPR_NUM_INT64) {
			s->wide += x;
			break;
		}
		if (s->type <= EXPR_NUM_INT64) {
			int64_t r;
			if (!tm_i64_add(s->i, x, &r)) {
				s->i = r;
				if (s->type == EXPR_NUM_INT32 && (r < INT32_MIN || r > INT32_MAX))
					s->type = EXPR_NUM_INT64;
				break;
			}
			/* overflow: continue in double */
			s->type = EXPR_NUM_DOUBLE;
			s->d = (double)s->i;
			s->dc = 0;
			sum_add_double(s, (double)x);
			break;
		}
		if (s->type == EXPR_NUM_DOUBLE)
			sum_add_double(s, (double)x);
		else
			s->dec = expr_decimal_add(s->dec, expr_decimal_from_int64(x));
		break;
	}
	case BSON_TYPE_DOUBLE:
		if (s->type <= EXPR_NUM_INT64) {
			s->type = EXPR_NUM_DOUBLE;
			s->d = s->exact ? (double)s->wide : (double)s->i;
			s->dc = s->exact ? (double)(s->wide - (__int128)s->d) : 0;
		}
		if (s->type == EXPR_NUM_DOUBLE)
			sum_add_double(s, v->value.v_double);
		else
			s->dec = expr_decimal_add(s->dec, expr_decimal_from_double(v->value.v_double));
		break;
	case BSON_TYPE_DECIMAL128:
		if (s->type != EXPR_NUM_DECIMAL) {
			if (s->type == EXPR_NUM_DOUBLE) {
				s->dec = expr_decimal_from_double(s->d + s->dc);
			} else if (s->exact) {
				/* exact 128-bit integer into decimal: high and low halves */
				__int128 w = s->wide;
				int64_t hi = (int64_t)(w / 1000000000000000000LL), lo = (int64_t)(w % 1000000000000000000LL);
				s->dec = expr_decimal_add(expr_decimal_mul(expr_decimal_from_int64(hi),
				                                           expr_decimal_from_int64(1000000000000000000LL)),
				                          expr_decimal_from_int64(lo));
			} else {
				s->dec = expr_decimal_from_int64(s->i);
			}
			s->type = EXPR_NUM_DECIMAL;
		}
		s->dec = expr_decimal_add(s->dec, v->value.v_decimal128);
		break;
	default:
		break;
	}
}

void
expr_sum_get(const expr_sum_t *s, bson_value_t *out)
{
	if (s->exact && s->type <= EXPR_NUM_INT64) {
		if (s->wide >= INT64_MIN && s->wide <= INT64_MAX) {
			int64_t v = (int64_t)s->wide;
			if (s->type == EXPR_NUM_INT32 && v >= INT32_MIN && v <= INT32_MAX)
				expr_set_int32(out, (int32_t)v);
			else
				expr_set_int64(out, v);
		} else {
			expr_set_double(out, (double)s->wide);
		}
		return;
	}
	switch (s->type) {
	case EXPR_NUM_INT32: expr_set_int32(out, (int32_t)s->i); break;
	case EXPR_NUM_INT64: expr_set_int64(out, s->i); break;
	case EXPR_NUM_DOUBLE: {
		double r = s->d + s->dc;
		if (isnan(r) && !isnan(s->d))
			r = s->d; /* inf - inf in the compensation */
		expr_set_double(out, r);
		break;
	}
	default: expr_set_decimal(out, s->dec); break;
	}
}
