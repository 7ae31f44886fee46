/*
 * expr_type.c -- type operators: $type $isNumber $convert and its
 * shorthands $toInt $toLong $toDouble $toDecimal $toString $toBool $toDate
 * $toObjectId.
 *
 * Conversions are a table indexed by target type; failures are 241
 * ConversionFailure with mongod's wording ("... in $convert with no onError
 * value: ..."), replaced by onError when given.  BinData conversions and
 * $convert's format/base options are not implemented (238).
 */
#include "expr/expr_private.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bson/value.h"
#include "expr/decimal.h"

int expr_coerce_to_string(expr_env_t *env, const bson_value_t *v, bson_value_t *out, terr_t *err);
void expr_format_double(double d, char *buf, size_t n);
int expr_date_from_string(const char *s, size_t len, int64_t *ms);

#define CONV_FAIL 241
#define NO_ONERR " in $convert with no onError value"

static int
eval_type(const expr_t *e, expr_env_t *env, bson_value_t *out, terr_t *err)
{
	bson_value_t v;

	RET(expr_eval_arg(e, 0, env, &v, err));
	const char *n = bv_type_name(v.value_type);
	expr_set_string(env, out, n, strlen(n));
	return 0;
}

static int
eval_is_number(const expr_t *e, expr_env_t *env, bson_value_t *out, terr_t *err)
{
	bson_value_t v;

	RET(expr_eval_arg(e, 0, env, &v, err));
	expr_set_bool(out, bv_is_number(&v));
	return 0;
}

static int
unsupported(const bson_value_t *in, bson_type_t to, terr_t *err)
{
	return terr_set(err, CONV_FAIL, "Unsupported conversion from %s to %s" NO_ONERR, expr_type_name(in),
	                bv_type_name(to));
}

static int
overflow_fail(const bson_value_t *in, terr_t *err)
{
	char buf[64];
	if (in->value_type == BSON_TYPE_DECIMAL128)
		bson_decimal128_to_string(&in->value.v_decimal128, buf);
	else
		snprintf(buf, sizeof(buf), "%g", expr_num_to_double(in)); /* C++ ostream default */
	return terr_set(err, CONV_FAIL, "Conversion would overflow target type" NO_ONERR ": %s", buf);
}

static int
parse_fail(const bson_value_t *in, const char *why, terr_t *err)
{
	if (in->value.v_utf8.len >= 2 && in->value.v_utf8.str[0] == '0' && in->value.v_utf8.str[1] == 'x')
		return terr_set(err, CONV_FAIL, "Illegal hexadecimal input" NO_ONERR ": %s", in->value.v_utf8.str);
	return terr_set(err, CONV_FAIL, "Failed to parse number '%s'" NO_ONERR ": %s", in->value.v_utf8.str, why);
}

/* number (not decimal/double) parse of a whole string in base 10 */
static int
parse_integer(const bson_value_t *in, int64_t lo, int64_t hi, int64_t *out, terr_t *err)
{
	const char *s = in->value.v_utf8.str;
	char *end;

	if (in->value.v_utf8.len == 0 || memchr(s, 0, in->value.v_utf8.len) != NULL)
		return parse_fail(in, "No digits", err);
	if (s[0] == ' ' || s[0] == '\t' || s[0] == '\n')
		return parse_fail(in, "Did not consume whole string.", err);
	errno = 0;
	long long v = strtoll(s, &end, 10);
	if (end == s)
		return parse_fail(in, "No digits", err);
	if (*end != 0)
		return parse_fail(in, "Did not consume whole string.", err);
	if (errno == ERANGE || v < lo || v > hi)
		return parse_fail(in, "Overflow", err);
	*out = v;
	return 0;
}

static int
to_integral(const bson_value_t *in, bson_type_t to, bson_value_t *out, terr_t *err)
{
	int64_t lo = to == BSON_TYPE_INT32 ? INT32_MIN : INT64_MIN, hi = to == BSON_TYPE_INT32 ? INT32_MAX : INT64_MAX;
	int64_t r;

	switch (in->value_type) {
	case BSON_TYPE_INT32:
	case BSON_TYPE_INT64:
		expr_num_get_int64(in, &r);
		if (r < lo || r > hi) /* sic: mongod prints no value here */
			return terr_set(err, CONV_FAIL, "Conversion would overflow target type" NO_ONERR ": ");
		break;
	case BSON_TYPE_DOUBLE: {
		double d = in->value.v_double;
		if (isnan(d) || isinf(d))
			return terr_set(err, CONV_FAIL, "Attempt to convert %s value to integer type" NO_ONERR,
			                isnan(d) ? "NaN" : "infinity");
		if (to == BSON_TYPE_INT32 ? !(d >= (double)INT32_MIN && d <= (double)INT32_MAX)
		                          : !(d >= -9223372036854775808.0 && d < 9223372036854775808.0))
			return overflow_fail(in, err);
		r = (int64_t)d;
		break;
	}
	case BSON_TYPE_DECIMAL128:
		if (expr_decimal_is_nan(in->value.v_decimal128) || expr_decimal_is_inf(in->value.v_decimal128))
			return terr_set(err, CONV_FAIL, "Attempt to convert %s value to integer type" NO_ONERR,
			                expr_decimal_is_nan(in->value.v_decimal128) ? "NaN" : "infinity");
		if (!expr_decimal_to_int64(in->value.v_decimal128, &r) || r < lo || r > hi)
			return overflow_fail(in, err);
		break;
	case BSON_TYPE_BOOL:
		r = in->value.v_bool ? 1 : 0;
		break;
	case BSON_TYPE_UTF8:
		RET(parse_integer(in, lo, hi, &r, err));
		break;
	case BSON_TYPE_DATE_TIME:
		if (to == BSON_TYPE_INT64) {
			r = in->value.v_datetime;
			break;
		}
		return unsupported(in, to, err);
	default:
		return unsupported(in, to, err);
	}
	if (to == BSON_TYPE_INT32)
		expr_set_int32(out, (int32_t)r);
	else
		expr_set_int64(out, r);
	return 0;
}

static int
to_double(const bson_value_t *in, bson_value_t *out, terr_t *err)
{
	switch (in->value_type) {
	case BSON_TYPE_INT32:
	case BSON_TYPE_INT64:
	case BSON_TYPE_DOUBLE:
		expr_set_double(out, expr_num_to_double(in));
		return 0;
	case BSON_TYPE_DECIMAL128: {
		bson_decimal128_t d = in->value.v_decimal128;
		double r = expr_decimal_to_double(d);
		if (isinf(r) && !expr_decimal_is_inf(d))
			return overflow_fail(in, err);
		expr_set_double(out, r);
		return 0;
	}
	case BSON_TYPE_BOOL:
		expr_set_double(out, in->value.v_bool ? 1.0 : 0.0);
		return 0;
	case BSON_TYPE_DATE_TIME:
		expr_set_double(out, (double)in->value.v_datetime);
		return 0;
	case BSON_TYPE_UTF8: {
		const char *s = in->value.v_utf8.str;
		char *end;
		if (in->value.v_utf8.len == 0 || memchr(s, 0, in->value.v_utf8.len) != NULL)
			return parse_fail(in, "No digits", err);
		if (s[0] == ' ' || s[0] == '\t')
			return parse_fail(in, "Did not consume whole string.", err);
		/* mongod accepts "Infinity"/"-Infinity"/"NaN" spellings, not hex */
		if (strlen(s) > 1 && (s[0] == '0' || s[1] == '0') && (strchr(s, 'x') || strchr(s, 'X')))
			return parse_fail(in, "Did not consume whole string.", err);
		errno = 0;
		double d = strtod(s, &end);
		if (end == s)
			return parse_fail(in, "No digits", err);
		if (*end != 0)
			return parse_fail(in, "Did not consume whole string.", err);
		if (errno == ERANGE && isinf(d))
			return parse_fail(in, "Out of range", err);
		expr_set_double(out, d);
		return 0;
	}
	default:
		return unsupported(in, BSON_TYPE_DOUBLE, err);
	}
}

static int
to_decimal(const bson_value_t *in, bson_value_t *out, terr_t *err)
{
	switch (in->value_type) {
	case BSON_TYPE_INT32:
	case BSON_TYPE_INT64:
	case BSON_TYPE_DOUBLE:
	case BSON_TYPE_DECIMAL128:
		expr_set_decimal(out, expr_num_to_decimal(in));
		return 0;
	case BSON_TYPE_BOOL:
		expr_set_decimal(out, expr_decimal_from_int64(in->value.v_bool ? 1 : 0));
		return 0;
	case BSON_TYPE_DATE_TIME:
		expr_set_decimal(out, expr_decimal_from_int64(in->value.v_datetime));
		return 0;
	case BSON_TYPE_UTF8: {
		bson_decimal128_t d;
		if (in->value.v_utf8.len == 0 || !bson_decimal128_from_string(in->value.v_utf8.str, &d))
			return parse_fail(in, "Failed to parse string to decimal", err);
		expr_set_decimal(out, d);
		return 0;
	}
	default:
		return unsupported(in, BSON_TYPE_DECIMAL128, err);
	}
}

static int
to_bool(const bson_value_t *in, bson_value_t *out, terr_t *err)
{
	switch (in->value_type) {
	case BSON_TYPE_INT32:
	case BSON_TYPE_INT64:
	case BSON_TYPE_DOUBLE:
	case BSON_TYPE_DECIMAL128:
	case BSON_TYPE_BOOL:
		expr_set_bool(out, expr_value_truthy(in));
		return 0;
	case BSON_TYPE_UTF8:
	case BSON_TYPE_OID:
	case BSON_TYPE_DATE_TIME:
	case BSON_TYPE_DOCUMENT:
	case BSON_TYPE_ARRAY:
	case BSON_TYPE_BINARY:
	case BSON_TYPE_REGEX:
	case BSON_TYPE_TIMESTAMP:
	case BSON_TYPE_CODE:
	case BSON_TYPE_CODEWSCOPE:
	case BSON_TYPE_SYMBOL:
	case BSON_TYPE_MINKEY:
	case BSON_TYPE_MAXKEY:
	case BSON_TYPE_DBPOINTER:
		expr_set_bool(out, true);
		return 0;
	default:
		return unsupported(in, BSON_TYPE_BOOL, err);
	}
}

static int
to_string(expr_env_t *env, const bson_value_t *in, bson_value_t *out, terr_t *err)
{
	switch (in->value_type) {
	case BSON_TYPE_BOOL:
		expr_set_string(env, out, in->value.v_bool ? "true" : "false", in->value.v_bool ? 4 : 5);
		return 0;
	case BSON_TYPE_OID: {
		char hex[25];
		bson_oid_to_string(&in->value.v_oid, hex);
		expr_set_string(env, out, hex, 24);
		return 0;
	}
	case BSON_TYPE_DOUBLE: {
		char buf[64];
		expr_format_double(in->value.v_double, buf, sizeof(buf));
		expr_set_string(env, out, buf, strlen(buf));
		return 0;
	}
	case BSON_TYPE_UTF8:
	case BSON_TYPE_INT32:
	case BSON_TYPE_INT64:
	case BSON_TYPE_DECIMAL128:
	case BSON_TYPE_DATE_TIME:
		return expr_coerce_to_string(env, in, out, err);
	default:
		return unsupported(in, BSON_TYPE_UTF8, err);
	}
}

static int
to_date(const bson_value_t *in, bson_value_t *out, terr_t *err)
{
	switch (in->value_type) {
	case BSON_TYPE_DATE_TIME:
		*out = *in;
		return 0;
	case BSON_TYPE_INT64:
		expr_set_date(out, in->value.v_int64);
		return 0;
	case BSON_TYPE_DOUBLE: {
		double d = in->value.v_double;
		if (isnan(d) || isinf(d) || !(d >= -9223372036854775808.0 && d < 9223372036854775808.0))
			return terr_set(err, CONV_FAIL, "Conversion would overflow target type" NO_ONERR ": %g", d);
		expr_set_date(out, (int64_t)d);
		return 0;
	}
	case BSON_TYPE_DECIMAL128: {
		int64_t ms;
		if (!expr_decimal_to_int64(in->value.v_decimal128, &ms))
			return overflow_fail(in, err);
		expr_set_date(out, ms);
		return 0;
	}
	case BSON_TYPE_OID:
		expr_set_date(out, (int64_t)bson_oid_get_time_t(&in->value.v_oid) * 1000);
		return 0;
	case BSON_TYPE_TIMESTAMP:
		expr_set_date(out, (int64_t)in->value.v_timestamp.timestamp * 1000);
		return 0;
	case BSON_TYPE_UTF8: {
		int64_t ms;
		if (expr_date_from_string(in->value.v_utf8.str, in->value.v_utf8.len, &ms) != 0)
			return terr_set(err, CONV_FAIL, "Error parsing date string '%s'" NO_ONERR, in->value.v_utf8.str);
		expr_set_date(out, ms);
		return 0;
	}
	default:
		return unsupported(in, BSON_TYPE_DATE_TIME, err);
	}
}

static int
to_oid(const bson_value_t *in, bson_value_t *out, terr_t *err)
{
	if (in->value_type == BSON_TYPE_OID) {
		*out = *in;
		return 0;
	}
	if (in->value_type != BSON_TYPE_UTF8)
		return unsupported(in, BSON_TYPE_OID, err);
	const char *s = in->value.v_utf8.str;
	if (in->value.v_utf8.len != 24)
		return terr_set(err, CONV_FAIL, "Failed to parse objectId '%s'" NO_ONERR ": Invalid string length for "
		                "parsing to OID, expected 24 but found %u", s, in->value.v_utf8.len);
	for (int i = 0; i < 24; i++) {
		char c = s[i];
		if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')))
			return terr_set(err, CONV_FAIL, "Failed to parse objectId '%s'" NO_ONERR ": Invalid character found "
			                "in hex string: '%c'", s, c);
	}
	memset(out, 0, sizeof(*out));
	out->value_type = BSON_TYPE_OID;
	bson_oid_init_from_string(&out->value.v_oid, s);
	return 0;
}

static int
convert_value(expr_env_t *env, const bson_value_t *in, bson_type_t to, bson_value_t *out, terr_t *err)
{
	switch (to) {
	case BSON_TYPE_INT32:
	case BSON_TYPE_INT64:
		return to_integral(in, to, out, err);
	case BSON_TYPE_DOUBLE:
		return to_double(in, out, err);
	case BSON_TYPE_DECIMAL128:
		return to_decimal(in, out, err);
	case BSON_TYPE_BOOL:
		return to_bool(in, out, err);
	case BSON_TYPE_UTF8:
		return to_string(env, in, out, err);
	case BSON_TYPE_DATE_TIME:
		return to_date(in, out, err);
	case BSON_TYPE_OID:
		return to_oid(in, out, err);
	case BSON_TYPE_BINARY:
		return terr_set(err, TERR_NOT_IMPLEMENTED, "$convert to binData is not implemented yet");
	default:
		return unsupported(in, to, err);
	}
}

/* args: input, to, onError|NULL, onNull|NULL.  For the shorthands, args[1]
 * is a constant with the target type name. */
static int
parse_convert(expr_t *e, const bson_value_t *arg, expr_scope_t *scope, terr_t *err)
{
	static const char *names[] = {"input", "to", "onError", "onNull"};
	expr_t *parts[4] = {NULL, NULL, NULL, NULL};
	bson_iter_t it;
	int ret = 0;

	if (arg->value_type != BSON_TYPE_DOCUMENT)
		return terr_set(err, TERR_FAILED_TO_PARSE, "$convert expects an object of named arguments but found: %s",
		                expr_type_name(arg));
	expr_iter_init(&it, arg);
	while (bson_iter_next(&it)) {
		const char *k = bson_iter_key(&it);
		int idx = -1;
		for (int i = 0; i < 4; i++) {
			if (strcmp(k, names[i]) == 0)
				idx = i;
		}
		if (idx < 0) {
			if (strcmp(k, "format") == 0 || strcmp(k, "base") == 0 || strcmp(k, "byteOrder") == 0 ||
			    strcmp(k, "subtype") == 0) {
				ret = terr_set(err, TERR_NOT_IMPLEMENTED, "$convert's '%s' option is not implemented yet", k);
				goto err;
			}
			ret = terr_set(err, TERR_FAILED_TO_PARSE, "$convert found an unknown argument: %s", k);
			goto err;
		}
		expr_destroy(parts[idx]);
		parts[idx] = NULL;
		ERR(expr_parse_sub(bson_iter_value(&it), scope, &parts[idx], err));
	}
	if (parts[0] == NULL) {
		ret = terr_set(err, TERR_FAILED_TO_PARSE, "Missing 'input' parameter to $convert");
		goto err;
	}
	if (parts[1] == NULL) {
		ret = terr_set(err, TERR_FAILED_TO_PARSE, "Missing 'to' parameter to $convert");
		goto err;
	}
	e->args = bson_malloc(4 * sizeof(*e->args));
	memcpy(e->args, parts, sizeof(parts));
	e->nargs = 4;
	return 0;
err:
	for (int i = 0; i < 4; i++)
		expr_destroy(parts[i]);
	return ret;
}

static int
target_type(const bson_value_t *to, bson_type_t *t, terr_t *err)
{
	if (to->value_type == BSON_TYPE_UTF8) {
		if (strcmp(to->value.v_utf8.str, "missing") == 0) {
			*t = BSON_TYPE_EOD;
			return 0;
		}
		if (!bv_type_from_name(to->value.v_utf8.str, t))
			return terr_set(err, TERR_BAD_VALUE, "Unknown type name: %s", to->value.v_utf8.str);
		return 0;
	}
	if (bv_is_number(to)) {
		int32_t code;
		if (!expr_num_to_int32_exact(to, &code))
			return terr_set(err, TERR_FAILED_TO_PARSE,
			                "In $convert, numeric 'to' argument is not an integer");
		if (!((code >= 0 && code <= 19) || code == -1 || code == 127))
			return terr_set(err, TERR_FAILED_TO_PARSE, "In $convert, numeric value for 'to' does not correspond "
			                "to a BSON type: %d", code);
		*t = code == -1 ? BSON_TYPE_MINKEY : (bson_type_t)code;
		return 0;
	}
	if (to->value_type == BSON_TYPE_DOCUMENT)
		return terr_set(err, TERR_NOT_IMPLEMENTED, "$convert with a 'to' document is not implemented yet");
	return terr_set(err, TERR_FAILED_TO_PARSE, "$convert's 'to' argument must be a string or number, but is %s",
	                expr_type_name(to));
}

static int
eval_convert(const expr_t *e, expr_env_t *env, bson_value_t *out, terr_t *err)
{
	bson_value_t in, to;
	bson_type_t t;
	terr_t cerr = TERR_INIT;

	RET(expr_eval_arg(e, 1, env, &to, err));
	RET(expr_eval_arg(e, 0, env, &in, err));
	if (!expr_is_nullish(&to))
		RET(target_type(&to, &t, err));
	if (expr_is_nullish(&in)) {
		if (e->args[3] != NULL)
			return expr_eval(e->args[3], env, out, err);
		expr_set_null(out);
		return 0;
	}
	if (expr_is_nullish(&to)) {
		expr_set_null(out);
		return 0;
	}
	if (convert_value(env, &in, t, out, &cerr) == 0)
		return 0;
	if (e->args[2] != NULL && cerr.code == CONV_FAIL) {
		terr_clear(&cerr);
		return expr_eval(e->args[2], env, out, err);
	}
	terr_move(err, &cerr);
	return -1;
}

/* $toInt etc.: one argument, target fixed by the operator. */
static const struct {
	const char *op;
	bson_type_t to;
} shorthand[] = {
	{"$toInt", BSON_TYPE_INT32}, {"$toLong", BSON_TYPE_INT64}, {"$toDouble", BSON_TYPE_DOUBLE},
	{"$toDecimal", BSON_TYPE_DECIMAL128}, {"$toString", BSON_TYPE_UTF8}, {"$toBool", BSON_TYPE_BOOL},
	{"$toDate", BSON_TYPE_DATE_TIME}, {"$toObjectId", BSON_TYPE_OID},
};

static int
parse_to(expr_t *e, const bson_value_t *arg, expr_scope_t *scope, terr_t *err)
{
	bson_iter_t it;
	size_t n = arg->value_type == BSON_TYPE_ARRAY ? expr_array_len(arg) : 1;

	if (n != 1)
		return terr_set(err, 50723, "%s requires a single argument, got %zu", e->op->name, n);
	e->args = bson_malloc0(sizeof(*e->args));
	if (arg->value_type == BSON_TYPE_ARRAY) {
		expr_iter_init(&it, arg);
		bson_iter_next(&it);
		RET(expr_parse_sub(bson_iter_value(&it), scope, &e->args[0], err));
	} else {
		RET(expr_parse_sub(arg, scope, &e->args[0], err));
	}
	e->nargs = 1;
	return 0;
}

static int
eval_to(const expr_t *e, expr_env_t *env, bson_value_t *out, terr_t *err)
{
	bson_value_t in;
	bson_type_t t = BSON_TYPE_NULL;

	for (size_t i = 0; i < sizeof(shorthand) / sizeof(shorthand[0]); i++) {
		if (strcmp(shorthand[i].op, e->op->name) == 0)
			t = shorthand[i].to;
	}
	RET(expr_eval_arg(e, 0, env, &in, err));
	if (expr_is_nullish(&in)) {
		expr_set_null(out);
		return 0;
	}
	return convert_value(env, &in, t, out, err);
}

const expr_op_t expr_ops_type[] = {
	{"$type", 1, 1, NULL, eval_type, 0},
	{"$isNumber", 1, 1, NULL, eval_is_number, 0},
	{"$convert", 0, -1, parse_convert, eval_convert, 0},
	{"$toInt", 0, -1, parse_to, eval_to, 0},
	{"$toLong", 0, -1, parse_to, eval_to, 0},
	{"$toDouble", 0, -1, parse_to, eval_to, 0},
	{"$toDecimal", 0, -1, parse_to, eval_to, 0},
	{"$toString", 0, -1, parse_to, eval_to, 0},
	{"$toBool", 0, -1, parse_to, eval_to, 0},
	{"$toDate", 0, -1, parse_to, eval_to, 0},
	{"$toObjectId", 0, -1, parse_to, eval_to, 0},
	{NULL, 0, 0, NULL, NULL, 0},
};
