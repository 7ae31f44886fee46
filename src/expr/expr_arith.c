/*
 * expr_arith.c -- arithmetic operators: $add $subtract $multiply $divide
 * $mod $abs $ceil $floor $round $trunc $exp $ln $log $log10 $pow $sqrt.
 *
 * Numeric results follow mongod: the narrowest type that holds the result
 * (int32 widens to int64, int64 overflow falls back to double), Decimal128
 * whenever an operand is decimal (decimal.c), $divide gives double unless a
 * decimal is involved.  Dates take part in $add and $subtract.  Decimal
 * $pow is not implemented yet (238).
 */
#include "expr/expr_private.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "bson/value.h"
#include "common/checked.h"
#include "expr/decimal.h"

static bool
is_num(const bson_value_t *v)
{
	return v->value_type == BSON_TYPE_INT32 || v->value_type == BSON_TYPE_INT64 ||
	       v->value_type == BSON_TYPE_DOUBLE || v->value_type == BSON_TYPE_DECIMAL128;
}

static enum expr_numtype
num_type(const bson_value_t *v)
{
	switch (v->value_type) {
	case BSON_TYPE_INT32: return EXPR_NUM_INT32;
	case BSON_TYPE_INT64: return EXPR_NUM_INT64;
	case BSON_TYPE_DOUBLE: return EXPR_NUM_DOUBLE;
	default: return EXPR_NUM_DECIMAL;
	}
}

static void
set_int_or_long(bson_value_t *out, int64_t v)
{
	if (v >= INT32_MIN && v <= INT32_MAX)
		expr_set_int32(out, (int32_t)v);
	else
		expr_set_int64(out, v);
}

/* Add a number to a date's milliseconds with mongod's overflow rules. */
static int
date_add_number(int64_t *ms, const bson_value_t *v, bool subtract, const char *what, terr_t *err)
{
	int64_t x;

	switch (v->value_type) {
	case BSON_TYPE_INT32:
	case BSON_TYPE_INT64:
		expr_num_get_int64(v, &x);
		break;
	case BSON_TYPE_DOUBLE: {
		double d = v->value.v_double;
		if (!(d >= -9223372036854775808.0 && d < 9223372036854775808.0))
			return terr_set(err, TERR_OVERFLOW, "%s", what);
		x = llround(d);
		break;
	}
	case BSON_TYPE_DECIMAL128: {
		bson_decimal128_t r = expr_decimal_to_integral(v->value.v_decimal128, 0);
		if (!expr_decimal_to_int64(r, &x))
			return terr_set(err, TERR_OVERFLOW, "%s", what);
		break;
	}
	default:
		return terr_set(err, TERR_OVERFLOW, "%s", what);
	}
	if (subtract ? tm_i64_sub(*ms, x, ms) : tm_i64_add(*ms, x, ms))
		return terr_set(err, TERR_OVERFLOW, "%s", what);
	return 0;
}

static int
eval_add(const expr_t *e, expr_env_t *env, bson_value_t *out, terr_t *err)
{
	expr_sum_t sum;
	bool have_date = false;
	int64_t date_ms = 0;
	bson_value_t v;

	expr_sum_init(&sum);
	for (size_t i = 0; i < e->nargs; i++) {
		RET(expr_eval_arg(e, i, env, &v, err));
		if (expr_is_nullish(&v)) {
			expr_set_null(out);
			return 0;
		}
		if (v.value_type == BSON_TYPE_DATE_TIME) {
			if (have_date)
				return terr_set(err, 16612, "only one date allowed in an $add expression");
			have_date = true;
			date_ms = v.value.v_datetime;
			continue;
		}
		if (!is_num(&v))
			return terr_set(err, TERR_TYPE_MISMATCH, "$add only supports numeric or date types, not %s",
			                expr_type_name(&v));
		if (have_date) {
			RET(date_add_number(&date_ms, &v, false, "date overflow", err));
			continue;
		}
		expr_sum_add(&sum, &v);
	}
	if (have_date) {
		/* the numbers summed before the date join it now */
		bson_value_t s;
		expr_sum_get(&sum, &s);
		RET(date_add_number(&date_ms, &s, false, "date overflow", err));
		expr_set_date(out, date_ms);
		return 0;
	}
	expr_sum_get(&sum, out);
	return 0;
}

static int
eval_subtract(const expr_t *e, expr_env_t *env, bson_value_t *out, terr_t *err)
{
	bson_value_t a, b;

	RET(expr_eval_arg(e, 0, env, &a, err));
	RET(expr_eval_arg(e, 1, env, &b, err));
	if (is_num(&a) && is_num(&b)) {
		enum expr_numtype ta = num_type(&a), tb = num_type(&b), t = ta > tb ? ta : tb;
		if (t == EXPR_NUM_DECIMAL) {
			expr_set_decimal(out, expr_decimal_sub(expr_num_to_decimal(&a), expr_num_to_decimal(&b)));
		} else if (t == EXPR_NUM_DOUBLE) {
			expr_set_double(out, expr_num_to_double(&a) - expr_num_to_double(&b));
		} else {
			int64_t x, y, r;
			expr_num_get_int64(&a, &x);
			expr_num_get_int64(&b, &y);
			if (tm_i64_sub(x, y, &r))
				expr_set_double(out, (double)x - (double)y);
			else if (t == EXPR_NUM_INT64)
				expr_set_int64(out, r);
			else
				set_int_or_long(out, r);
		}
		return 0;
	}
	if (expr_is_nullish(&a) || expr_is_nullish(&b)) {
		expr_set_null(out);
		return 0;
	}
	if (a.value_type == BSON_TYPE_DATE_TIME) {
		if (b.value_type == BSON_TYPE_DATE_TIME) {
			int64_t r;
			if (tm_i64_sub(a.value.v_datetime, b.value.v_datetime, &r))
				r = (int64_t)((uint64_t)a.value.v_datetime - (uint64_t)b.value.v_datetime);
			expr_set_int64(out, r);
			return 0;
		}
		if (is_num(&b)) {
			int64_t ms = a.value.v_datetime;
			RET(date_add_number(&ms, &b, true, "date overflow", err));
			expr_set_date(out, ms);
			return 0;
		}
		return terr_set(err, TERR_TYPE_MISMATCH, "can't $subtract %s from Date", expr_type_name(&b));
	}
	return terr_set(err, TERR_TYPE_MISMATCH, "can't $subtract %s from %s", expr_type_name(&b),
	                expr_type_name(&a));
}

static int
eval_multiply(const expr_t *e, expr_env_t *env, bson_value_t *out, terr_t *err)
{
	enum expr_numtype t = EXPR_NUM_INT32;
	double dprod = 1;
	int64_t lprod = 1;
	bson_decimal128_t dec = expr_decimal_from_int64(1);
	bson_value_t v;

	for (size_t i = 0; i < e->nargs; i++) {
		RET(expr_eval_arg(e, i, env, &v, err));
		if (expr_is_nullish(&v)) {
			expr_set_null(out);
			return 0;
		}
		if (!is_num(&v))
			return terr_set(err, TERR_TYPE_MISMATCH, "$multiply only supports numeric types, not %s",
			                expr_type_name(&v));
		enum expr_numtype old = t, vt = num_type(&v);
		if (vt > t)
			t = vt;
		if (t == EXPR_NUM_DECIMAL) {
			if (old != EXPR_NUM_DECIMAL)
				dec = old == EXPR_NUM_DOUBLE ? expr_decimal_from_double(dprod) : expr_decimal_from_int64(lprod);
			dec = expr_decimal_mul(dec, expr_num_to_decimal(&v));
			continue;
		}
		double dv = expr_num_to_double(&v);
		dprod *= dv;
		if (t != EXPR_NUM_DOUBLE) {
			int64_t x;
			expr_num_get_int64(&v, &x);
			if (tm_i64_mul(lprod, x, &lprod))
				t = EXPR_NUM_DOUBLE;
		}
	}
	switch (t) {
	case EXPR_NUM_DOUBLE: expr_set_double(out, dprod); break;
	case EXPR_NUM_INT64: expr_set_int64(out, lprod); break;
	case EXPR_NUM_INT32: set_int_or_long(out, lprod); break;
	default: expr_set_decimal(out, dec); break;
	}
	return 0;
}

static int
eval_divide(const expr_t *e, expr_env_t *env, bson_value_t *out, terr_t *err)
{
	bson_value_t a, b;

	RET(expr_eval_arg(e, 0, env, &a, err));
	RET(expr_eval_arg(e, 1, env, &b, err));
	if (is_num(&a) && is_num(&b)) {
		if (a.value_type == BSON_TYPE_DECIMAL128 || b.value_type == BSON_TYPE_DECIMAL128) {
			bson_decimal128_t d = expr_num_to_decimal(&b);
			if (expr_decimal_is_zero(d))
				return terr_set(err, TERR_BAD_VALUE, "can't $divide by zero");
			expr_set_decimal(out, expr_decimal_div(expr_num_to_decimal(&a), d));
			return 0;
		}
		double d = expr_num_to_double(&b);
		if (d == 0.0)
			return terr_set(err, TERR_BAD_VALUE, "can't $divide by zero");
		expr_set_double(out, expr_num_to_double(&a) / d);
		return 0;
	}
	if (expr_is_nullish(&a) || expr_is_nullish(&b)) {
		expr_set_null(out);
		return 0;
	}
	return terr_set(err, TERR_TYPE_MISMATCH, "$divide only supports numeric types, not %s and %s",
	                expr_type_name(&a), expr_type_name(&b));
}

static int
eval_mod(const expr_t *e, expr_env_t *env, bson_value_t *out, terr_t *err)
{
	bson_value_t a, b;

	RET(expr_eval_arg(e, 0, env, &a, err));
	RET(expr_eval_arg(e, 1, env, &b, err));
	if (is_num(&a) && is_num(&b)) {
		enum expr_numtype ta = num_type(&a), tb = num_type(&b);
		if (ta == EXPR_NUM_DECIMAL || tb == EXPR_NUM_DECIMAL) {
			bson_decimal128_t r = expr_num_to_decimal(&b);
			if (expr_decimal_is_zero(r))
				return terr_set(err, 5733415, "can't $mod by zero");
			expr_set_decimal(out, expr_decimal_mod(expr_num_to_decimal(&a), r));
			return 0;
		}
		double rd = expr_num_to_double(&b);
		if (rd == 0)
			return terr_set(err, 16610, "can't $mod by zero");
		if (ta == EXPR_NUM_DOUBLE || tb == EXPR_NUM_DOUBLE) {
			expr_set_double(out, fmod(expr_num_to_double(&a), rd));
			return 0;
		}
		int64_t x, y;
		expr_num_get_int64(&a, &x);
		expr_num_get_int64(&b, &y);
		int64_t r = y == -1 ? 0 : x % y;
		if (ta == EXPR_NUM_INT64 || tb == EXPR_NUM_INT64)
			expr_set_int64(out, r);
		else
			expr_set_int32(out, (int32_t)r);
		return 0;
	}
	if (expr_is_nullish(&a) || expr_is_nullish(&b)) {
		expr_set_null(out);
		return 0;
	}
	return terr_set(err, 16611, "$mod only supports numeric types, not %s and %s", expr_type_name(&a),
	                expr_type_name(&b));
}

/* ---- single numeric argument ---------------------------------------------- */

/* Evaluate the argument; 1 = result already set (null), 0 = number in v. */
static int
single_numeric(const expr_t *e, expr_env_t *env, bson_value_t *v, bson_value_t *out, terr_t *err)
{
	RET(expr_eval_arg(e, 0, env, v, err));
	if (expr_is_nullish(v)) {
		expr_set_null(out);
		return 1;
	}
	if (!is_num(v))
		return terr_set(err, 28765, "%s only supports numeric types, not %s", e->op->name, expr_type_name(v));
	return 0;
}

#define SINGLE_NUMERIC(e, env, v, out, err) do { \
	int r_ = single_numeric(e, env, v, out, err); \
	if (r_ != 0) return r_ > 0 ? 0 : -1; } while (0)

static int
eval_abs(const expr_t *e, expr_env_t *env, bson_value_t *out, terr_t *err)
{
	bson_value_t v;

	SINGLE_NUMERIC(e, env, &v, out, err);
	switch (v.value_type) {
	case BSON_TYPE_INT32:
		set_int_or_long(out, v.value.v_int32 < 0 ? -(int64_t)v.value.v_int32 : v.value.v_int32);
		break;
	case BSON_TYPE_INT64:
		if (v.value.v_int64 == INT64_MIN)
			return terr_set(err, 28680, "can't take $abs of long long min");
		expr_set_int64(out, v.value.v_int64 < 0 ? -v.value.v_int64 : v.value.v_int64);
		break;
	case BSON_TYPE_DOUBLE:
		expr_set_double(out, fabs(v.value.v_double));
		break;
	default:
		expr_set_decimal(out, expr_decimal_abs(v.value.v_decimal128));
		break;
	}
	return 0;
}

static int
ceil_floor(const expr_t *e, expr_env_t *env, bson_value_t *out, terr_t *err, bool ceiling)
{
	bson_value_t v;

	SINGLE_NUMERIC(e, env, &v, out, err);
	if (v.value_type == BSON_TYPE_DOUBLE)
		expr_set_double(out, ceiling ? ceil(v.value.v_double) : floor(v.value.v_double));
	else if (v.value_type == BSON_TYPE_DECIMAL128)
		expr_set_decimal(out, expr_decimal_to_integral(v.value.v_decimal128, ceiling ? 2 : 1));
	else
		*out = v;
	return 0;
}

static int
eval_ceil(const expr_t *e, expr_env_t *env, bson_value_t *out, terr_t *err)
{
	return ceil_floor(e, env, out, err, true);
}

static int
eval_floor(const expr_t *e, expr_env_t *env, bson_value_t *out, terr_t *err)
{
	return ceil_floor(e, env, out, err, false);
}

/* C++ stream formatting of a double in messages */
static void
fmt_double(char *buf, size_t n, double d)
{
	snprintf(buf, n, "%g", d);
}

static int
eval_exp(const expr_t *e, expr_env_t *env, bson_value_t *out, terr_t *err)
{
	bson_value_t v;

	SINGLE_NUMERIC(e, env, &v, out, err);
	if (v.value_type == BSON_TYPE_DECIMAL128) {
		expr_set_decimal(out, expr_decimal_exp(v.value.v_decimal128));
		return 0;
	}
	expr_set_double(out, exp(expr_num_to_double(&v)));
	return 0;
}

/* $ln and $log10: the logarithm of a positive number (a positive decimal
 * stays decimal); `code` is the error for any other argument. */
static int
eval_log_of(const expr_t *e, expr_env_t *env, bson_value_t *out, bson_decimal128_t (*dec_fn)(bson_decimal128_t),
            double (*dbl_fn)(double), int code, terr_t *err)
{
	bson_value_t v;
	char buf[64];

	SINGLE_NUMERIC(e, env, &v, out, err);
	if (v.value_type == BSON_TYPE_DECIMAL128 && !expr_decimal_is_negative(v.value.v_decimal128) &&
	    !expr_decimal_is_zero(v.value.v_decimal128) && !expr_decimal_is_nan(v.value.v_decimal128)) {
		expr_set_decimal(out, dec_fn(v.value.v_decimal128));
		return 0;
	}
	double d = expr_num_to_double(&v);
	if (!(d > 0 || isnan(d))) {
		fmt_double(buf, sizeof(buf), d);
		return terr_set(err, code, "%s's argument must be a positive number, but is %s", e->op->name, buf);
	}
	expr_set_double(out, dbl_fn(d));
	return 0;
}

static int
eval_ln(const expr_t *e, expr_env_t *env, bson_value_t *out, terr_t *err)
{
	return eval_log_of(e, env, out, expr_decimal_ln, log, 28766, err);
}

static int
eval_log10(const expr_t *e, expr_env_t *env, bson_value_t *out, terr_t *err)
{
	return eval_log_of(e, env, out, expr_decimal_log10, log10, 28761, err);
}

static int
eval_sqrt(const expr_t *e, expr_env_t *env, bson_value_t *out, terr_t *err)
{
	bson_value_t v;

	SINGLE_NUMERIC(e, env, &v, out, err);
	if (v.value_type == BSON_TYPE_DECIMAL128) {
		if (expr_decimal_is_negative(v.value.v_decimal128))
			return terr_set(err, 28714, "$sqrt's argument must be greater than or equal to 0");
		expr_set_decimal(out, expr_decimal_sqrt(v.value.v_decimal128));
		return 0;
	}
	double d = expr_num_to_double(&v);
	if (!(d >= 0 || isnan(d)))
		return terr_set(err, 28714, "$sqrt's argument must be greater than or equal to 0");
	expr_set_double(out, sqrt(d));
	return 0;
}

static int
eval_log(const expr_t *e, expr_env_t *env, bson_value_t *out, terr_t *err)
{
	bson_value_t a, b;
	char buf[64];

	RET(expr_eval_arg(e, 0, env, &a, err));
	RET(expr_eval_arg(e, 1, env, &b, err));
	if (expr_is_nullish(&a) || expr_is_nullish(&b)) {
		expr_set_null(out);
		return 0;
	}
	if (!is_num(&a))
		return terr_set(err, 28756, "$log's argument must be numeric, not %s", expr_type_name(&a));
	if (!is_num(&b))
		return terr_set(err, 28757, "$log's base must be numeric, not %s", expr_type_name(&b));
	double x = expr_num_to_double(&a), base = expr_num_to_double(&b);
	if (a.value_type == BSON_TYPE_DECIMAL128 || b.value_type == BSON_TYPE_DECIMAL128) {
		bson_decimal128_t xa = expr_num_to_decimal(&a), xb = expr_num_to_decimal(&b);
		if (!expr_decimal_is_negative(xa) && !expr_decimal_is_zero(xa) && !expr_decimal_is_nan(xa) &&
		    !expr_decimal_is_negative(xb) && !expr_decimal_is_zero(xb) && !expr_decimal_is_nan(xb) &&
		    expr_decimal_cmp(xb, expr_decimal_from_int64(1)) != 0) {
			/* mongod: log(A) / log(B), each rounded to 34 digits */
			expr_set_decimal(out, expr_decimal_div(expr_decimal_ln(xa), expr_decimal_ln(xb)));
			return 0;
		}
	}
	if (!(x > 0 || isnan(x))) {
		fmt_double(buf, sizeof(buf), x);
		return terr_set(err, 28758, "$log's argument must be a positive number, but is %s", buf);
	}
	if (!((base > 0 && base != 1) || isnan(base))) {
		fmt_double(buf, sizeof(buf), base);
		return terr_set(err, 28759, "$log's base must be a positive number not equal to 1, but is %s", buf);
	}
	expr_set_double(out, log(x) / log(base));
	return 0;
}

static int
eval_pow(const expr_t *e, expr_env_t *env, bson_value_t *out, terr_t *err)
{
	bson_value_t a, b;

	RET(expr_eval_arg(e, 0, env, &a, err));
	RET(expr_eval_arg(e, 1, env, &b, err));
	if (expr_is_nullish(&a) || expr_is_nullish(&b)) {
		expr_set_null(out);
		return 0;
	}
	if (!is_num(&a))
		return terr_set(err, 28762, "$pow's base must be numeric, not %s", expr_type_name(&a));
	if (!is_num(&b))
		return terr_set(err, 28763, "$pow's exponent must be numeric, not %s", expr_type_name(&b));
	double base = expr_num_to_double(&a), ex = expr_num_to_double(&b);
	if (base == 0 && ex < 0)
		return terr_set(err, 28764, "$pow cannot take a base of 0 and a negative exponent");
	if (a.value_type == BSON_TYPE_DECIMAL128 || b.value_type == BSON_TYPE_DECIMAL128) {
		expr_set_decimal(out, expr_decimal_pow(expr_num_to_decimal(&a), expr_num_to_decimal(&b)));
		return 0;
	}
	if (a.value_type == BSON_TYPE_DOUBLE || b.value_type == BSON_TYPE_DOUBLE) {
		expr_set_double(out, pow(base, ex));
		return 0;
	}
	int64_t bl, el, r = 1;
	expr_num_get_int64(&a, &bl);
	expr_num_get_int64(&b, &el);
	if (bl == 1 || bl == -1) {
		r = (bl == 1 || el % 2 == 0) ? 1 : -1;
	} else if (el < 0) {
		expr_set_double(out, pow((double)bl, (double)el));
		return 0;
	} else {
		int64_t bb = bl, ee = el;
		bool ovf = false;
		while (ee > 0 && !ovf) {
			if (ee & 1)
				ovf |= tm_i64_mul(r, bb, &r);
			ee >>= 1;
			if (ee > 0)
				ovf |= tm_i64_mul(bb, bb, &bb);
		}
		if (ovf) {
			expr_set_double(out, pow((double)bl, (double)el));
			return 0;
		}
	}
	if (a.value_type == BSON_TYPE_INT64 || b.value_type == BSON_TYPE_INT64)
		expr_set_int64(out, r);
	else
		set_int_or_long(out, r);
	return 0;
}

static int
round_trunc(const expr_t *e, expr_env_t *env, bson_value_t *out, terr_t *err, bool trunc_mode)
{
	bson_value_t v, p;
	int64_t places = 0;

	RET(expr_eval_arg(e, 0, env, &v, err));
	if (expr_is_nullish(&v)) {
		expr_set_null(out);
		return 0;
	}
	if (!is_num(&v))
		return terr_set(err, 51081, "%s only supports numeric types, not %s", e->op->name, expr_type_name(&v));
	if (e->nargs > 1) {
		RET(expr_eval_arg(e, 1, env, &p, err));
		if (expr_is_nullish(&p)) {
			expr_set_null(out);
			return 0;
		}
		if (!is_num(&p)) {
			return terr_set(err, 16004, "can't convert from BSON type %s to long", expr_type_name(&p));
		}
		if (!expr_num_to_int64_exact(&p, &places) ||
		    (p.value_type != BSON_TYPE_INT32 && p.value_type != BSON_TYPE_INT64 &&
		     (places < INT32_MIN || places > INT32_MAX)))
			return terr_set(err, 51082, "precision argument to  %s must be a integral value", e->op->name);
		if (places < -20 || places > 100)
			return terr_set(err, 51083, "cannot apply %s with precision value %lld value must be in [-20, 100]",
			                e->op->name, (long long)places);
	}
	switch (v.value_type) {
	case BSON_TYPE_DECIMAL128:
		if (expr_decimal_is_inf(v.value.v_decimal128)) {
			*out = v;
			return 0;
		}
		expr_set_decimal(out, expr_decimal_round(v.value.v_decimal128, (int)places, trunc_mode));
		return 0;
	case BSON_TYPE_DOUBLE: {
		if (isinf(v.value.v_double)) {
			*out = v;
			return 0;
		}
		bson_decimal128_t d = expr_decimal_from_double_digits(v.value.v_double, 34);
		expr_set_double(out, expr_decimal_to_double(expr_decimal_round(d, (int)places, trunc_mode)));
		return 0;
	}
	default: {
		int64_t x, r;
		if (places >= 0) {
			*out = v;
			return 0;
		}
		expr_num_get_int64(&v, &x);
		bson_decimal128_t d = expr_decimal_round(expr_decimal_from_int64(x), (int)places, trunc_mode);
		if (!expr_decimal_to_int64(d, &r))
			return terr_set(err, 51080,
			                "invalid conversion from Decimal128 result in %s resulting from arguments: [%lld, %lld]",
			                e->op->name, (long long)x, (long long)places);
		if (v.value_type == BSON_TYPE_INT64 || r > INT32_MAX)
			expr_set_int64(out, r);
		else
			expr_set_int32(out, (int32_t)r);
		return 0;
	}
	}
}

static int
eval_round(const expr_t *e, expr_env_t *env, bson_value_t *out, terr_t *err)
{
	return round_trunc(e, env, out, err, false);
}

static int
eval_trunc(const expr_t *e, expr_env_t *env, bson_value_t *out, terr_t *err)
{
	return round_trunc(e, env, out, err, true);
}

const expr_op_t expr_ops_arith[] = {
	{"$add", 0, -1, NULL, eval_add, 0},
	{"$subtract", 2, 2, NULL, eval_subtract, 0},
	{"$multiply", 0, -1, NULL, eval_multiply, 0},
	{"$divide", 2, 2, NULL, eval_divide, 0},
	{"$mod", 2, 2, NULL, eval_mod, 0},
	{"$abs", 1, 1, NULL, eval_abs, 0},
	{"$ceil", 1, 1, NULL, eval_ceil, 0},
	{"$floor", 1, 1, NULL, eval_floor, 0},
	{"$exp", 1, 1, NULL, eval_exp, 0},
	{"$ln", 1, 1, NULL, eval_ln, 0},
	{"$log10", 1, 1, NULL, eval_log10, 0},
	{"$sqrt", 1, 1, NULL, eval_sqrt, 0},
	{"$log", 2, 2, NULL, eval_log, 0},
	{"$pow", 2, 2, NULL, eval_pow, 0},
	{"$round", 1, 2, NULL, eval_round, 0},
	{"$trunc", 1, 2, NULL, eval_trunc, 0},
	{NULL, 0, 0, NULL, NULL, 0},
};
