/*
 * expr_type.c -- type operators: $type $isNumber $convert and its
 * shorthands $toInt $toLong $toDouble $toDecimal $toString $toBool $toDate
 * $toObjectId.
 *
 * Conversions are a table indexed by target type; failures are 241
 * ConversionFailure with mongod's wording ("... in $convert with no onError
 * value: ..."), replaced by onError when given.  Supports `base` (number <->
 * string), `format` and `to: {type, subtype}` (string <-> binData: base64,
 * base64url, hex, utf8, uuid, auto).  Numeric <-> binData (`byteOrder`) and
 * array/object <-> binData answer 238.
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

static int convert_value(expr_env_t *env, const bson_value_t *in, bson_type_t to, bson_value_t *out, terr_t *err);

/* ---- $convert options: base, format, subtype (binData) ------------------- */

enum { FMT_NONE = -1, FMT_AUTO, FMT_BASE64, FMT_BASE64URL, FMT_HEX, FMT_UTF8, FMT_UUID };
static const char *const fmt_names[] = {"auto", "base64", "base64url", "hex", "utf8", "uuid"};

typedef struct conv_opts {
	int base;    /* 0 = none, else 2, 8, 10 or 16 */
	int format;  /* FMT_* */
	int subtype; /* target binData subtype */
} conv_opts_t;

static const conv_opts_t no_opts = {0, FMT_NONE, 0};

static const char b64chars[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

static void
b64_encode(bson_string_t *s, const uint8_t *d, size_t n, bool url)
{
	for (size_t i = 0; i < n; i += 3) {
		uint32_t v = (uint32_t)d[i] << 16 | (i + 1 < n ? (uint32_t)d[i + 1] << 8 : 0) | (i + 2 < n ? d[i + 2] : 0);
		size_t out = i + 2 < n ? 4 : i + 1 < n ? 3 : 2;
		for (size_t k = 0; k < 4; k++) {
			if (k < out) {
				char c = b64chars[(v >> (18 - 6 * k)) & 63];
				if (url && c == '+')
					c = '-';
				else if (url && c == '/')
					c = '_';
				bson_string_append_c(s, c);
			} else if (!url) {
				bson_string_append_c(s, '=');
			}
		}
	}
}

/* decoded bytes into *out (arena); false when malformed */
static bool
b64_decode(expr_env_t *env, const char *s, size_t n, bool url, uint8_t **out, size_t *outlen)
{
	uint8_t *buf = expr_env_alloc(env, n * 3 / 4 + 3);
	size_t o = 0, q = 0;
	uint32_t acc = 0;
	size_t pad = 0;

	if (!url && n % 4 != 0)
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		int v;
		if (c == '=' && !url) {
			pad++;
			continue;
		}
		if (pad)
			return false;
		if (c >= 'A' && c <= 'Z') v = c - 'A';
		else if (c >= 'a' && c <= 'z') v = c - 'a' + 26;
		else if (c >= '0' && c <= '9') v = c - '0' + 52;
		else if (c == (url ? '-' : '+')) v = 62;
		else if (c == (url ? '_' : '/')) v = 63;
		else return false;
		acc = acc << 6 | (uint32_t)v;
		if (++q == 4) {
			buf[o++] = (uint8_t)(acc >> 16);
			buf[o++] = (uint8_t)(acc >> 8);
			buf[o++] = (uint8_t)acc;
			q = 0;
			acc = 0;
		}
	}
	if (pad > 2 || q == 1)
		return false;
	if (q == 2)
		buf[o++] = (uint8_t)(acc >> 4);
	else if (q == 3) {
		buf[o++] = (uint8_t)(acc >> 10);
		buf[o++] = (uint8_t)(acc >> 2);
	}
	*out = buf;
	*outlen = o;
	return true;
}

static int
hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

static void
set_binary(expr_env_t *env, bson_value_t *out, const uint8_t *d, size_t n, int subtype)
{
	uint8_t *p = expr_env_alloc(env, n + 1);
	if (n)
		memcpy(p, d, n);
	memset(out, 0, sizeof(*out));
	out->value_type = BSON_TYPE_BINARY;
	out->value.v_binary.subtype = (bson_subtype_t)subtype;
	out->value.v_binary.data = p;
	out->value.v_binary.data_len = (uint32_t)n;
}

static int
bin_fail(const bson_value_t *in, const char *why, terr_t *err)
{
	return terr_set(err, CONV_FAIL, "Failed to parse BinData '%s'" NO_ONERR ": %s", in->value.v_utf8.str, why);
}

static int
string_to_bindata(expr_env_t *env, const bson_value_t *in, const conv_opts_t *o, bson_value_t *out, terr_t *err)
{
	const char *s = in->value.v_utf8.str;
	size_t n = in->value.v_utf8.len;
	uint8_t *d = NULL;
	size_t dn = 0;

	if (o->format == FMT_NONE)
		return terr_set(err, 4341115, "Format must be speficied when converting from 'string' to 'binData'");
	if ((o->format == FMT_UUID) != (o->subtype == 4))
		return bin_fail(in, "Only the 'uuid' format is allowed with the UUID subtype", err);
	switch (o->format) {
	case FMT_BASE64:
	case FMT_BASE64URL:
		if (!b64_decode(env, s, n, o->format == FMT_BASE64URL, &d, &dn))
			return bin_fail(in, "Invalid base64 string", err);
		break;
	case FMT_HEX:
		if (n % 2 != 0)
			return bin_fail(in, "Invalid hex string: odd length", err);
		d = expr_env_alloc(env, n / 2 + 1);
		for (size_t i = 0; i < n; i += 2) {
			int hi = hexval(s[i]), lo = hexval(s[i + 1]);
			if (hi < 0 || lo < 0)
				return bin_fail(in, "Invalid hex string", err);
			d[dn++] = (uint8_t)(hi << 4 | lo);
		}
		break;
	case FMT_UTF8:
		if (!bson_utf8_validate(s, n, false))
			return terr_set(err, CONV_FAIL, "Failed to parse BinData '%s'" NO_ONERR ": Invalid UTF-8: %s", s, s);
		d = (uint8_t *)s;
		dn = n;
		break;
	case FMT_UUID: {
		d = expr_env_alloc(env, 17);
		size_t k = 0;
		static const size_t dash[] = {8, 13, 18, 23};
		if (n != 36)
			return bin_fail(in, "Invalid UUID string", err);
		for (size_t i = 0; i < n; i++) {
			if (i == dash[0] || i == dash[1] || i == dash[2] || i == dash[3]) {
				if (s[i] != '-')
					return bin_fail(in, "Invalid UUID string", err);
				continue;
			}
			int hi = hexval(s[i]), lo = i + 1 < n ? hexval(s[i + 1]) : -1;
			if (hi < 0 || lo < 0)
				return bin_fail(in, "Invalid UUID string", err);
			d[k++] = (uint8_t)(hi << 4 | lo);
			i++;
		}
		dn = k;
		break;
	}
	default:
		return bin_fail(in, "Invalid format 'auto'", err);
	}
	set_binary(env, out, d, dn, o->subtype);
	return 0;
}

static int
bindata_to_string(expr_env_t *env, const bson_value_t *in, const conv_opts_t *o, bson_value_t *out, terr_t *err)
{
	const uint8_t *d = in->value.v_binary.data;
	size_t n = in->value.v_binary.data_len;
	bool uuid = in->value.v_binary.subtype == BSON_SUBTYPE_UUID && n == 16;
	int f = o->format;
	bson_string_t *s;

	if (f == FMT_NONE)
		return terr_set(err, 4341115, "Format must be speficied when converting from 'binData' to 'string'");
	if (f == FMT_AUTO)
		f = uuid ? FMT_UUID : FMT_BASE64;
	if ((f == FMT_UTF8 && !bson_utf8_validate((const char *)d, n, false)) || (f == FMT_UUID && !uuid)) {
		char *t = bv_to_mongo_string(in);
		terr_set(err, CONV_FAIL, "Failed to convert '%s' to string" NO_ONERR ": %s", t,
		         f == FMT_UUID ? "BinData does not represent a valid UUID"
		                       : "BinData does not represent a valid UTF-8 string");
		bson_free(t);
		return -1;
	}
	s = bson_string_new(NULL);
	switch (f) {
	case FMT_BASE64:
	case FMT_BASE64URL:
		b64_encode(s, d, n, f == FMT_BASE64URL);
		break;
	case FMT_HEX:
		for (size_t i = 0; i < n; i++)
			bson_string_append_printf(s, "%02X", d[i]);
		break;
	case FMT_UTF8:
		for (size_t i = 0; i < n; i++)
			bson_string_append_c(s, (char)d[i]);
		break;
	default: /* uuid */
		for (size_t i = 0; i < n; i++) {
			if (i == 4 || i == 6 || i == 8 || i == 10)
				bson_string_append_c(s, '-');
			bson_string_append_printf(s, "%02x", d[i]);
		}
		break;
	}
	expr_set_string(env, out, s->str, s->len);
	bson_string_free(s, true);
	return 0;
}

/* integer in base 2/8/10/16 as fmt does ({:b} {:o} {:d} {:X}) */
static void
format_base(expr_env_t *env, int64_t v, int base, bson_value_t *out)
{
	char buf[80];
	size_t i = sizeof(buf);
	uint64_t m = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;

	buf[--i] = 0;
	do {
		buf[--i] = "0123456789ABCDEF"[m % (uint64_t)base];
		m /= (uint64_t)base;
	} while (m);
	if (v < 0)
		buf[--i] = '-';
	expr_set_string(env, out, buf + i, sizeof(buf) - 1 - i);
}

static int
number_to_string_base(expr_env_t *env, const bson_value_t *in, int base, bson_value_t *out, terr_t *err)
{
	int64_t v;

	if (in->value_type == BSON_TYPE_INT32 || in->value_type == BSON_TYPE_INT64) {
		expr_num_get_int64(in, &v);
	} else {
		int32_t i32;
		bool integral = in->value_type == BSON_TYPE_DOUBLE
		                    ? (isfinite(in->value.v_double) && in->value.v_double == trunc(in->value.v_double))
		                    : expr_decimal_is_integral(in->value.v_decimal128);
		(void)i32;
		if (!integral)
			return terr_set(err, CONV_FAIL, "Base conversion is not supported for non-integers" NO_ONERR ": ");
		if (!expr_num_to_int64_exact(in, &v))
			return terr_set(err, CONV_FAIL, "Magnitude of the number provided for base conversion is too large"
			                NO_ONERR ": ");
	}
	format_base(env, v, base, out);
	return 0;
}

static int
string_to_number_base(const bson_value_t *in, bson_type_t to, int base, bson_value_t *out, terr_t *err)
{
	const char *s = in->value.v_utf8.str;
	char *end;

	if (in->value.v_utf8.len >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
		return terr_set(err, CONV_FAIL, "Illegal hexadecimal input" NO_ONERR ": %s", s);
	if (in->value.v_utf8.len == 0 || s[0] == ' ' || s[0] == '\t' || s[0] == '+')
		return parse_fail(in, "Did not consume whole string.", err);
	errno = 0;
	long long v = strtoll(s, &end, base);
	if (end == s)
		return parse_fail(in, "No digits", err);
	if (*end != 0 || (size_t)(end - s) != in->value.v_utf8.len)
		return parse_fail(in, "Did not consume whole string.", err);
	if (errno == ERANGE)
		return parse_fail(in, "Overflow", err);
	switch (to) {
	case BSON_TYPE_INT32:
		if (v < INT32_MIN || v > INT32_MAX)
			return terr_set(err, CONV_FAIL, "Conversion would overflow target type" NO_ONERR ": ");
		expr_set_int32(out, (int32_t)v);
		return 0;
	case BSON_TYPE_INT64:
		expr_set_int64(out, v);
		return 0;
	case BSON_TYPE_DOUBLE:
		expr_set_double(out, (double)v);
		return 0;
	default:
		expr_set_decimal(out, expr_decimal_from_int64(v));
		return 0;
	}
}

static int
convert_value_opts(expr_env_t *env, const bson_value_t *in, bson_type_t to, const conv_opts_t *o, bson_value_t *out,
                   terr_t *err)
{
	bool num_in = in->value_type == BSON_TYPE_INT32 || in->value_type == BSON_TYPE_INT64 ||
	              in->value_type == BSON_TYPE_DOUBLE || in->value_type == BSON_TYPE_DECIMAL128;

	if (to == BSON_TYPE_BINARY) {
		if (in->value_type == BSON_TYPE_UTF8)
			return string_to_bindata(env, in, o, out, err);
		if (in->value_type == BSON_TYPE_BINARY) {
			if ((int)in->value.v_binary.subtype != o->subtype)
				return terr_set(err, CONV_FAIL, "Conversions between different BinData subtypes are not supported");
			*out = *in;
			return 0;
		}
		if (num_in || in->value_type == BSON_TYPE_ARRAY || in->value_type == BSON_TYPE_DOCUMENT)
			return terr_set(err, TERR_NOT_IMPLEMENTED, "$convert from %s to binData is not implemented yet",
			                expr_type_name(in));
		return unsupported(in, to, err);
	}
	if (in->value_type == BSON_TYPE_BINARY) {
		if (to == BSON_TYPE_UTF8)
			return bindata_to_string(env, in, o, out, err);
		if (to == BSON_TYPE_INT32 || to == BSON_TYPE_INT64 || to == BSON_TYPE_DOUBLE || to == BSON_TYPE_ARRAY)
			return terr_set(err, TERR_NOT_IMPLEMENTED, "$convert from binData to %s is not implemented yet",
			                bv_type_name(to));
	}
	if (o->base != 0) {
		if (to == BSON_TYPE_UTF8 && num_in)
			return number_to_string_base(env, in, o->base, out, err);
		if (in->value_type == BSON_TYPE_UTF8 && (to == BSON_TYPE_INT32 || to == BSON_TYPE_INT64 ||
		                                         to == BSON_TYPE_DOUBLE || to == BSON_TYPE_DECIMAL128))
			return string_to_number_base(in, to, o->base, out, err);
	}
	return convert_value(env, in, to, out, err);
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
	default:
		return unsupported(in, to, err);
	}
}

/* args: input, to, onError, onNull, format, base, byteOrder (absent: NULL) */
static int
parse_convert(expr_t *e, const bson_value_t *arg, expr_scope_t *scope, terr_t *err)
{
	static const char *names[] = {"input", "to", "onError", "onNull", "format", "base", "byteOrder"};
	expr_t *parts[7] = {NULL, NULL, NULL, NULL, NULL, NULL, NULL};
	int ret = 0;

	if (arg->value_type != BSON_TYPE_DOCUMENT)
		return terr_set(err, TERR_FAILED_TO_PARSE, "$convert expects an object of named arguments but found: %s",
		                expr_type_name(arg));
	ERR(expr_parse_named(e, arg, scope, names, 7, parts, TERR_FAILED_TO_PARSE, "%s found an unknown argument: %s",
	                     err));
	if (parts[0] == NULL) {
		ret = terr_set(err, TERR_FAILED_TO_PARSE, "Missing 'input' parameter to $convert");
		goto err;
	}
	if (parts[1] == NULL) {
		ret = terr_set(err, TERR_FAILED_TO_PARSE, "Missing 'to' parameter to $convert");
		goto err;
	}
	expr_args_set(e, parts, 7);
	return 0;
err:
	expr_parts_destroy(parts, 7);
	return ret;
}

static int
target_type_code(const bson_value_t *to, bson_type_t *t, terr_t *err)
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
	return terr_set(err, TERR_FAILED_TO_PARSE, "$convert's 'to' argument must be a string or number, but is %s",
	                expr_type_name(to));
}

/* 'to': a type name/number, or {type, subtype} */
static int
target_type(const bson_value_t *to, bson_type_t *t, int *subtype, terr_t *err)
{
	*subtype = 0;
	if (to->value_type != BSON_TYPE_DOCUMENT)
		return target_type_code(to, t, err);
	bson_iter_t it;
	bson_value_t type, sub;
	bool have_type = false, have_sub = false;
	expr_iter_init(&it, to);
	while (bson_iter_next(&it)) {
		if (strcmp(bson_iter_key(&it), "type") == 0) {
			type = *bson_iter_value(&it);
			have_type = true;
		} else if (strcmp(bson_iter_key(&it), "subtype") == 0) {
			sub = *bson_iter_value(&it);
			have_sub = true;
		} else {
			return terr_set(err, TERR_FAILED_TO_PARSE, "$convert found an unknown argument in 'to': %s",
			                bson_iter_key(&it));
		}
	}
	if (!have_type)
		return terr_set(err, TERR_FAILED_TO_PARSE, "Missing 'type' in the 'to' argument of $convert");
	RET(target_type_code(&type, t, err));
	if (have_sub && !expr_is_nullish(&sub)) {
		int32_t code;
		if (!bv_is_number(&sub))
			return terr_set(err, 4341108, "For BinData, $convert's 'subtype' argument must be a number, but is %s",
			                expr_type_name(&sub));
		if (!expr_num_to_int32_exact(&sub, &code))
			return terr_set(err, 4341106, "In $convert, numeric 'subtype' argument is not an integer");
		if (!((code >= 0 && code <= 8) || (code >= 128 && code <= 255)))
			return terr_set(err, 4341107, "In $convert, numeric value for 'subtype' does not correspond to a "
			                "BinData type: %d", code);
		*subtype = code;
	}
	return 0;
}

static int
parse_opts(const bson_value_t *base, const bson_value_t *format, const bson_value_t *order, conv_opts_t *o,
           terr_t *err)
{
	*o = no_opts;
	if (base != NULL && !expr_is_nullish(base)) {
		int32_t b;
		if (!bv_is_number(base) || !expr_num_to_int32_exact(base, &b))
			return terr_set(err, 3501300, "In $convert, 'base' argument is not an integer");
		if (b != 2 && b != 8 && b != 10 && b != 16)
			return terr_set(err, 3501301, "In $convert, 'base' argument is not a valid base");
		o->base = b;
	}
	if (format != NULL && !expr_is_nullish(format)) {
		if (format->value_type != BSON_TYPE_UTF8) {
			char *t = bv_to_mongo_string(format);
			terr_set(err, 4341114, "$convert requires that 'format' be a string, found: %s with value %s",
			         expr_type_name(format), t);
			bson_free(t);
			return -1;
		}
		for (int i = 0; i < (int)(sizeof(fmt_names) / sizeof(fmt_names[0])); i++) {
			if (strcmp(format->value.v_utf8.str, fmt_names[i]) == 0)
				o->format = i;
		}
		if (o->format == FMT_NONE)
			return terr_set(err, 4341125, "Invalid 'format' argument for $convert: %s", format->value.v_utf8.str);
	}
	if (order != NULL && !expr_is_nullish(order)) {
		if (order->value_type != BSON_TYPE_UTF8) {
			char *t = bv_to_mongo_string(order);
			terr_set(err, 9130001, "$convert requires that 'byteOrder' be a string, found: %s with value %s",
			         expr_type_name(order), t);
			bson_free(t);
			return -1;
		}
		if (strcmp(order->value.v_utf8.str, "little") != 0 && strcmp(order->value.v_utf8.str, "big") != 0)
			return terr_set(err, 9130002, "Invalid 'byteOrder' argument for $convert: %s", order->value.v_utf8.str);
	}
	return 0;
}

static int
eval_convert(const expr_t *e, expr_env_t *env, bson_value_t *out, terr_t *err)
{
	bson_value_t in, to, extra[3];
	bson_type_t t = BSON_TYPE_NULL;
	int subtype = 0;
	conv_opts_t opts;
	terr_t cerr = TERR_INIT;

	RET(expr_eval_arg(e, 1, env, &to, err));
	RET(expr_eval_arg(e, 0, env, &in, err));
	for (int i = 0; i < 3; i++) {
		if (e->args[4 + i] != NULL)
			RET(expr_eval_arg(e, (size_t)(4 + i), env, &extra[i], err));
		else
			expr_set_missing(&extra[i]);
	}
	if (!expr_is_nullish(&to))
		RET(target_type(&to, &t, &subtype, err));
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
	RET(parse_opts(&extra[1], &extra[0], &extra[2], &opts, err));
	opts.subtype = subtype;
	if (convert_value_opts(env, &in, t, &opts, out, &cerr) == 0)
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
	conv_opts_t o = no_opts;
	if (t == BSON_TYPE_UTF8)
		o.format = FMT_AUTO; /* $toString renders binData as mongod 8+ */
	return convert_value_opts(env, &in, t, &o, out, err);
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
