/*
 * expr_misc.c -- the smaller operator families: trigonometry ($sin ... $atan2,
 * $degreesToRadians, $radiansToDegrees), bitwise ($bitAnd $bitOr $bitXor
 * $bitNot), timestamps ($tsSecond $tsIncrement) and sizes ($binarySize
 * $bsonSize).
 *
 * Decimal arguments are computed in decimal (expr/decimal.h) as mongod
 * computes them with Intel's library; the degree conversions multiply by
 * mongod's decimal constants (pi to 34 digits, divided by 180 and back).
 */
#include "expr/expr_private.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "bson/value.h"
#include "expr/decimal.h"
#include "expr/hash.h"

/* ---- trigonometry ------------------------------------------------------ */

typedef struct trig {
	const char *name;
	double (*fn)(double);
	double lo, hi;      /* domain */
	bool lo_open, hi_open;
	const char *bounds; /* as mongod prints it */
	int dfn;            /* expr_dtrig_t, or -1: a degree conversion */
} trig_t;

static double
deg2rad(double d)
{
	return d * (M_PI / 180.0);
}

static double
rad2deg(double r)
{
	return r * (180.0 / M_PI);
}

static const trig_t trigs[] = {
	{"$sin", sin, -INFINITY, INFINITY, true, true, "(-inf,inf)", DT_SIN},
	{"$cos", cos, -INFINITY, INFINITY, true, true, "(-inf,inf)", DT_COS},
	{"$tan", tan, -INFINITY, INFINITY, true, true, "(-inf,inf)", DT_TAN},
	{"$asin", asin, -1, 1, false, false, "[-1,1]", DT_ASIN},
	{"$acos", acos, -1, 1, false, false, "[-1,1]", DT_ACOS},
	{"$atan", atan, -INFINITY, INFINITY, false, false, NULL, DT_ATAN},
	{"$sinh", sinh, -INFINITY, INFINITY, false, false, NULL, DT_SINH},
	{"$cosh", cosh, -INFINITY, INFINITY, false, false, NULL, DT_COSH},
	{"$tanh", tanh, -INFINITY, INFINITY, false, false, NULL, DT_TANH},
	{"$asinh", asinh, -INFINITY, INFINITY, false, false, NULL, DT_ASINH},
	{"$acosh", acosh, 1, INFINITY, false, false, "[1,inf]", DT_ACOSH},
	{"$atanh", atanh, -1, 1, false, false, "[-1,1]", DT_ATANH},
	{"$degreesToRadians", deg2rad, -INFINITY, INFINITY, false, false, NULL, -1},
	{"$radiansToDegrees", rad2deg, -INFINITY, INFINITY, false, false, NULL, -1},
};

/* mongod's Decimal128::kPi (its 50-digit literal rounded to 34 digits) and
 * kPiOver180 = kPi / 180, k180OverPi = 180 / kPi, each rounded once */
static bson_decimal128_t
dec_degree_factor(bool to_radians)
{
	bson_decimal128_t pi, d180;
	/* the 50-digit literal, rounded to 34 digits as Decimal128(string) does */
	bson_decimal128_from_string("3.141592653589793238462643383279503", &pi);
	d180 = expr_decimal_from_int64(180);
	return to_radians ? expr_decimal_div(pi, d180) : expr_decimal_div(d180, pi);
}

/* A decimal argument: bounds as mongod checks them (Decimal128 comparisons
 * against the double bounds, NaN passed through), then the decimal function. */
static int
eval_trig_decimal(const trig_t *t, bson_decimal128_t d, bson_value_t *out, terr_t *err)
{
	bson_decimal128_t r;

	if (t->dfn < 0) {
		r = expr_decimal_is_nan(d) ? d : expr_decimal_mul(d, dec_degree_factor(t->name[1] == 'd'));
	} else {
		if (t->bounds != NULL && !expr_decimal_is_nan(d)) {
			int clo = expr_decimal_cmp(d, expr_decimal_from_double(t->lo));
			int chi = expr_decimal_cmp(d, expr_decimal_from_double(t->hi));
			bool ok = (t->lo_open ? clo > 0 : clo >= 0) && (t->hi_open ? chi < 0 : chi <= 0);
			if (!ok) {
				char s[BSON_DECIMAL128_STRING];
				bson_decimal128_to_string(&d, s);
				return terr_set(err, 50989, "cannot apply %s to %s, value must in %s", t->name, s, t->bounds);
			}
		}
		if (!expr_decimal_trig((expr_dtrig_t)t->dfn, d, &r))
			return terr_set(err, TERR_NOT_IMPLEMENTED,
			                "%s of this decimal is not implemented", t->name);
	}
	out->value_type = BSON_TYPE_DECIMAL128;
	out->value.v_decimal128 = r;
	return 0;
}

static const trig_t *
trig_find(const char *name)
{
	for (size_t i = 0; i < sizeof(trigs) / sizeof(trigs[0]); i++) {
		if (strcmp(trigs[i].name, name) == 0)
			return &trigs[i];
	}
	return &trigs[0];
}

static int
eval_trig(const expr_t *e, expr_env_t *env, bson_value_t *out, terr_t *err)
{
	const trig_t *t = trig_find(e->op->name);
	bson_value_t v;

	RET(expr_eval_arg(e, 0, env, &v, err));
	if (expr_is_nullish(&v)) {
		expr_set_null(out);
		return 0;
	}
	if (!bv_is_number(&v))
		return terr_set(err, 28765, "%s only supports numeric types, not %s", t->name, expr_type_name(&v));
	if (v.value_type == BSON_TYPE_DECIMAL128)
		return eval_trig_decimal(t, v.value.v_decimal128, out, err);
	double d = expr_num_to_double(&v);
	if (t->bounds != NULL && !isnan(d)) {
		bool ok = (t->lo_open ? d > t->lo : d >= t->lo) && (t->hi_open ? d < t->hi : d <= t->hi);
		if (!ok)
			return terr_set(err, 50989, "cannot apply %s to %g, value must in %s", t->name, d, t->bounds);
	}
	expr_set_double(out, t->fn(d));
	return 0;
}

static int
eval_atan2(const expr_t *e, expr_env_t *env, bson_value_t *out, terr_t *err)
{
	bson_value_t y, x;

	RET(expr_eval_arg(e, 0, env, &y, err));
	RET(expr_eval_arg(e, 1, env, &x, err));
	if (expr_is_nullish(&y) || expr_is_nullish(&x)) {
		expr_set_null(out);
		return 0;
	}
	if (!bv_is_number(&y))
		return terr_set(err, 51044, "$atan2 only supports numeric types, not %s", expr_type_name(&y));
	if (!bv_is_number(&x))
		return terr_set(err, 51045, "$atan2 only supports numeric types, not %s", expr_type_name(&x));
	if (y.value_type == BSON_TYPE_DECIMAL128 || x.value_type == BSON_TYPE_DECIMAL128) {
		out->value_type = BSON_TYPE_DECIMAL128;
		out->value.v_decimal128 = expr_decimal_atan2(expr_num_to_decimal(&y), expr_num_to_decimal(&x));
		return 0;
	}
	expr_set_double(out, atan2(expr_num_to_double(&y), expr_num_to_double(&x)));
	return 0;
}

/* ---- bitwise ----------------------------------------------------------- */

static int
eval_bitwise(const expr_t *e, expr_env_t *env, bson_value_t *out, terr_t *err)
{
	char kind = e->op->name[4]; /* $bitAnd / $bitOr / $bitXor / $bitNot */
	bool any_long = false;
	int64_t acc = kind == 'A' ? -1 : 0;

	for (size_t i = 0; i < e->nargs; i++) {
		bson_value_t v;
		int64_t x;
		RET(expr_eval_arg(e, i, env, &v, err));
		if (expr_is_nullish(&v)) {
			expr_set_null(out);
			return 0;
		}
		if (!expr_num_get_int64(&v, &x))
			return terr_set(err, TERR_TYPE_MISMATCH, "%s only supports int and long operands.", e->op->name);
		if (v.value_type == BSON_TYPE_INT64)
			any_long = true;
		switch (kind) {
		case 'A': acc &= x; break;
		case 'O': acc |= x; break;
		case 'X': acc ^= x; break;
		default: acc = ~x; break;
		}
	}
	if (any_long)
		expr_set_int64(out, acc);
	else
		expr_set_int32(out, (int32_t)acc);
	return 0;
}

/* ---- timestamps and sizes ------------------------------------------------ */

static int
eval_ts_part(const expr_t *e, expr_env_t *env, bson_value_t *out, terr_t *err)
{
	bool secs = strcmp(e->op->name, "$tsSecond") == 0;
	bson_value_t v;

	RET(expr_eval_arg(e, 0, env, &v, err));
	if (expr_is_nullish(&v)) {
		expr_set_null(out);
		return 0;
	}
	if (v.value_type != BSON_TYPE_TIMESTAMP) /* sic: leading space, as mongod */
		return terr_set(err, secs ? 5687301 : 5687302, " Argument to %s must be a timestamp, but is %s", e->op->name,
		                expr_type_name(&v));
	expr_set_int64(out, secs ? v.value.v_timestamp.timestamp : v.value.v_timestamp.increment);
	return 0;
}

static int
eval_binary_size(const expr_t *e, expr_env_t *env, bson_value_t *out, terr_t *err)
{
	bson_value_t v;

	RET(expr_eval_arg(e, 0, env, &v, err));
	if (expr_is_nullish(&v)) {
		expr_set_null(out);
		return 0;
	}
	if (v.value_type == BSON_TYPE_UTF8)
		expr_set_int32(out, (int32_t)v.value.v_utf8.len);
	else if (v.value_type == BSON_TYPE_BINARY)
		expr_set_int32(out, (int32_t)v.value.v_binary.data_len);
	else
		return terr_set(err, 51276, "$binarySize requires a string or BinData argument, found: %s",
		                expr_type_name(&v));
	return 0;
}

static int
eval_bson_size(const expr_t *e, expr_env_t *env, bson_value_t *out, terr_t *err)
{
	bson_value_t v;

	RET(expr_eval_arg(e, 0, env, &v, err));
	if (expr_is_nullish(&v)) {
		expr_set_null(out);
		return 0;
	}
	if (v.value_type != BSON_TYPE_DOCUMENT)
		return terr_set(err, 31393, "$bsonSize requires a document input, found: %s", expr_type_name(&v));
	expr_set_int32(out, (int32_t)v.value.v_doc.data_len);
	return 0;
}

/* ---- $meta -------------------------------------------------------------- */

static const char *const meta_names[] = {"textScore", "randVal", "searchScore", "searchHighlights",
	"geoNearDistance", "geoNearPoint", "recordId", "indexKey", "sortKey", "searchScoreDetails",
	"timeseriesBucketMinTime", "timeseriesBucketMaxTime", "vectorSearchScore", "score", "scoreDetails",
	"searchSequenceToken"};

static int
parse_meta(expr_t *e, const bson_value_t *arg, expr_scope_t *scope, terr_t *err)
{
	if (arg->value_type != BSON_TYPE_UTF8)
		return terr_set(err, 17307, "$meta only supports string arguments");
	for (size_t i = 0; i < sizeof(meta_names) / sizeof(meta_names[0]); i++) {
		if (strcmp(arg->value.v_utf8.str, meta_names[i]) == 0) {
			e->extra = (void *)meta_names[i];
			e->var = EXPR_VAR_CURRENT; /* depends on the document: never fold */
			return 0;
		}
	}
	return terr_set(err, 17308, "Unsupported argument to $meta: %s", arg->value.v_utf8.str);
}

static int
eval_meta(const expr_t *e, expr_env_t *env, bson_value_t *out, terr_t *err)
{
	expr_path_eval(env, &env->meta, (const char *)e->extra, out);
	/* an aggregation over $text carries the score as the document's
	 * trailing "$textScore" field (query/plan.h keep_text_score) */
	if (out->value_type == BSON_TYPE_EOD && strcmp((const char *)e->extra, "textScore") == 0 &&
	    env->root.value_type == BSON_TYPE_DOCUMENT) {
		bson_iter_t it;
		if (bson_iter_init_from_data(&it, env->root.value.v_doc.data, env->root.value.v_doc.data_len) &&
		    bson_iter_find(&it, "$textScore"))
			*out = *bson_iter_value(&it);
	}
	return 0;
}

/* ---- $toHashedIndexKey ---------------------------------------------------- */

/* The operand is one expression, an array literal included (mongod's
 * parseOperand), so no list-form arity. */
static int
parse_hashed_key(expr_t *e, const bson_value_t *arg, expr_scope_t *scope, terr_t *err)
{
	expr_t *part = NULL;

	RET(expr_parse_sub(arg, scope, &part, err));
	expr_args_set(e, &part, 1);
	return 0;
}

static int
eval_hashed_key(const expr_t *e, expr_env_t *env, bson_value_t *out, terr_t *err)
{
	bson_value_t v;

	RET(expr_eval_arg(e, 0, env, &v, err));
	expr_set_int64(out, expr_hash64(&v));   /* missing hashes as null */
	return 0;
}

const expr_op_t expr_ops_misc[] = {
	{"$meta", 0, -1, parse_meta, eval_meta, EXPR_OP_NOFOLD},
	{"$toHashedIndexKey", 0, -1, parse_hashed_key, eval_hashed_key, 0},
	{"$sin", 1, 1, NULL, eval_trig, 0},
	{"$cos", 1, 1, NULL, eval_trig, 0},
	{"$tan", 1, 1, NULL, eval_trig, 0},
	{"$asin", 1, 1, NULL, eval_trig, 0},
	{"$acos", 1, 1, NULL, eval_trig, 0},
	{"$atan", 1, 1, NULL, eval_trig, 0},
	{"$sinh", 1, 1, NULL, eval_trig, 0},
	{"$cosh", 1, 1, NULL, eval_trig, 0},
	{"$tanh", 1, 1, NULL, eval_trig, 0},
	{"$asinh", 1, 1, NULL, eval_trig, 0},
	{"$acosh", 1, 1, NULL, eval_trig, 0},
	{"$atanh", 1, 1, NULL, eval_trig, 0},
	{"$degreesToRadians", 1, 1, NULL, eval_trig, 0},
	{"$radiansToDegrees", 1, 1, NULL, eval_trig, 0},
	{"$atan2", 2, 2, NULL, eval_atan2, 0},
	{"$bitAnd", 0, -1, NULL, eval_bitwise, 0},
	{"$bitOr", 0, -1, NULL, eval_bitwise, 0},
	{"$bitXor", 0, -1, NULL, eval_bitwise, 0},
	{"$bitNot", 1, 1, NULL, eval_bitwise, 0},
	{"$tsSecond", 1, 1, NULL, eval_ts_part, 0},
	{"$tsIncrement", 1, 1, NULL, eval_ts_part, 0},
	{"$binarySize", 1, 1, NULL, eval_binary_size, 0},
	{"$bsonSize", 1, 1, NULL, eval_bson_size, 0},
	{NULL, 0, 0, NULL, NULL, 0},
};
