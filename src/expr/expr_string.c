/*
 * expr_string.c -- string operators: $concat $toLower $toUpper $strLenBytes
 * $strLenCP $substr $substrBytes $substrCP $split $trim $ltrim $rtrim
 * $indexOfBytes $indexOfCP $strcasecmp $replaceOne $replaceAll
 * $regexMatch $regexFind $regexFindAll (PCRE2, as mongod).
 *
 * Strings are UTF-8 byte strings; case mapping is ASCII-only, as mongod's
 * $toLower/$toUpper.  Also the string coercion ($toLower of a number, of a
 * date) shared with other families: expr_coerce_to_string().
 */
#include "expr/expr_private.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "bson/value.h"
#include "expr/decimal.h"

int expr_coerce_to_string(expr_env_t *env, const bson_value_t *v, bson_value_t *out, terr_t *err);
void expr_format_double(double d, char *buf, size_t n);

/* mongod's $toString of a double (fmt's "{}"): shortest round-trip digits,
 * fixed notation for decimal exponents -4..15, else d.ddde+XX; "Infinity",
 * "-Infinity", "NaN", "-0". */
void
expr_format_double(double d, char *buf, size_t n)
{
	char sci[40], digits[24];
	int nd = 0, ex;

	if (d != d) {
		snprintf(buf, n, "NaN");
		return;
	}
	if (d == 1.0 / 0.0 || d == -1.0 / 0.0) {
		snprintf(buf, n, "%sInfinity", d < 0 ? "-" : "");
		return;
	}
	if (d == 0) {
		snprintf(buf, n, "%s", signbit(d) ? "-0" : "0");
		return;
	}
	for (int prec = 0; prec <= 16; prec++) {
		snprintf(sci, sizeof(sci), "%.*e", prec, d);
		if (strtod(sci, NULL) == d)
			break;
	}
	for (const char *p = sci; *p && *p != 'e'; p++) {
		if (*p >= '0' && *p <= '9')
			digits[nd++] = *p;
	}
	while (nd > 1 && digits[nd - 1] == '0')
		nd--;
	digits[nd] = 0;
	ex = atoi(strchr(sci, 'e') + 1);
	const char *sign = d < 0 ? "-" : "";
	if (ex < -4 || ex >= 16) {
		snprintf(buf, n, "%s%c%s%s%se%c%02d", sign, digits[0], nd > 1 ? "." : "", digits + 1, "",
		         ex < 0 ? '-' : '+', ex < 0 ? -ex : ex);
	} else if (ex < 0) {
		snprintf(buf, n, "%s0.%0*d%s", sign, -ex - 1, 0, digits);
		if (-ex - 1 == 0)
			snprintf(buf, n, "%s0.%s", sign, digits);
	} else if (nd <= ex + 1) {
		snprintf(buf, n, "%s%s%0*d", sign, digits, ex + 1 - nd, 0);
		if (ex + 1 - nd == 0)
			snprintf(buf, n, "%s%s", sign, digits);
	} else {
		snprintf(buf, n, "%s%.*s.%s", sign, ex + 1, digits, digits + ex + 1);
	}
}

int
expr_coerce_to_string(expr_env_t *env, const bson_value_t *v, bson_value_t *out, terr_t *err)
{
	char buf[64];

	switch (v->value_type) {
	case BSON_TYPE_UTF8:
		*out = *v;
		return 0;
	case BSON_TYPE_SYMBOL:
		expr_set_string(env, out, v->value.v_symbol.symbol, v->value.v_symbol.len);
		return 0;
	case BSON_TYPE_INT32:
		snprintf(buf, sizeof(buf), "%d", v->value.v_int32);
		break;
	case BSON_TYPE_INT64:
		snprintf(buf, sizeof(buf), "%lld", (long long)v->value.v_int64);
		break;
	case BSON_TYPE_DOUBLE:
		/* mongod's StringBuilder prints doubles with %g */
		snprintf(buf, sizeof(buf), "%g", v->value.v_double);
		break;
	case BSON_TYPE_DECIMAL128:
		bson_decimal128_to_string(&v->value.v_decimal128, buf);
		break;
	case BSON_TYPE_DATE_TIME: {
		/* floor division without ms - 999 (which overflows at the
		 * start of the date range) */
		int64_t ms = v->value.v_datetime;
		time_t secs = (time_t)(ms / 1000 - (ms % 1000 < 0));
		int milli = (int)(ms % 1000 < 0 ? ms % 1000 + 1000 : ms % 1000);
		struct tm tm;
		/* mongod formats with %Y, which covers years 0-9999 only */
		if (gmtime_r(&secs, &tm) == NULL || tm.tm_year < -1900 || tm.tm_year > 9999 - 1900)
			return terr_set(err, 18537, "Could not convert date to string: date component was outside the "
			                "supported range of 0-9999: %lld",
			                gmtime_r(&secs, &tm) ? (long long)tm.tm_year + 1900 : (long long)(ms / 31556952000LL + 1970));
		snprintf(buf, sizeof(buf), "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1,
		         tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, milli);
		break;
	}
	case BSON_TYPE_TIMESTAMP:
		snprintf(buf, sizeof(buf), "Timestamp(%u, %u)", v->value.v_timestamp.timestamp,
		         v->value.v_timestamp.increment);
		break;
	case BSON_TYPE_EOD:
	case BSON_TYPE_NULL:
	case BSON_TYPE_UNDEFINED:
		buf[0] = 0;
		break;
	default:
		return terr_set(err, 16007, "can't convert from BSON type %s to String", expr_type_name(v));
	}
	expr_set_string(env, out, buf, strlen(buf));
	return 0;
}

static bool
is_str(const bson_value_t *v)
{
	return v->value_type == BSON_TYPE_UTF8;
}

static int
eval_concat(const expr_t *e, expr_env_t *env, bson_value_t *out, terr_t *err)
{
	bson_value_t *vals = expr_env_alloc(env, (e->nargs + 1) * sizeof(*vals));
	size_t total = 0;

	for (size_t i = 0; i < e->nargs; i++) {
		RET(expr_eval_arg(e, i, env, &vals[i], err));
		if (expr_is_nullish(&vals[i])) {
			expr_set_null(out);
			return 0;
		}
		if (!is_str(&vals[i]))
			return terr_set(err, 16702, "$concat only supports strings, not %s", expr_type_name(&vals[i]));
		total += vals[i].value.v_utf8.len;
		if (total > EXPR_MAX_VALUE_BYTES)
			return expr_too_big(total, err);
	}
	char *p = expr_env_alloc(env, total + 1);
	size_t off = 0;
	for (size_t i = 0; i < e->nargs; i++) {
		memcpy(p + off, vals[i].value.v_utf8.str, vals[i].value.v_utf8.len);
		off += vals[i].value.v_utf8.len;
	}
	p[total] = 0;
	memset(out, 0, sizeof(*out));
	out->value_type = BSON_TYPE_UTF8;
	out->value.v_utf8.str = p;
	out->value.v_utf8.len = (uint32_t)total;
	return 0;
}

static int
case_map(const expr_t *e, expr_env_t *env, bson_value_t *out, terr_t *err, bool upper)
{
	bson_value_t v, s;

	RET(expr_eval_arg(e, 0, env, &v, err));
	RET(expr_coerce_to_string(env, &v, &s, err));
	expr_set_string(env, out, s.value.v_utf8.str, s.value.v_utf8.len);
	char *p = (char *)out->value.v_utf8.str;
	for (uint32_t i = 0; i < out->value.v_utf8.len; i++) {
		if (upper && p[i] >= 'a' && p[i] <= 'z')
			p[i] = (char)(p[i] - 32);
		else if (!upper && p[i] >= 'A' && p[i] <= 'Z')
			p[i] = (char)(p[i] + 32);
	}
	return 0;
}

static int
eval_tolower(const expr_t *e, expr_env_t *env, bson_value_t *out, terr_t *err)
{
	return case_map(e, env, out, err, false);
}

static int
eval_toupper(const expr_t *e, expr_env_t *env, bson_value_t *out, terr_t *err)
{
	return case_map(e, env, out, err, true);
}

static bool
is_cont(unsigned char c)
{
	return (c & 0xc0) == 0x80;
}

static size_t
cp_count(const char *s, size_t len)
{
	size_t n = 0;
	for (size_t i = 0; i < len; i++) {
		if (!is_cont((unsigned char)s[i]))
			n++;
	}
	return n;
}

/* byte offset of code point cp (or len) */
static size_t
cp_offset(const char *s, size_t len, size_t cp)
{
	size_t i = 0, n = 0;
	while (i < len) {
		if (!is_cont((unsigned char)s[i])) {
			if (n == cp)
				return i;
			n++;
		}
		i++;
	}
	return len;
}

static int
eval_strlen(const expr_t *e, expr_env_t *env, bson_value_t *out, terr_t *err)
{
	bson_value_t v;
	bool cp = strcmp(e->op->name, "$strLenCP") == 0;

	RET(expr_eval_arg(e, 0, env, &v, err));
	if (!is_str(&v))
		return terr_set(err, cp ? 34471 : 34473, "%s requires a string argument, found: %s", e->op->name,
		                expr_type_name(&v));
	expr_set_int32(out, (int32_t)(cp ? cp_count(v.value.v_utf8.str, v.value.v_utf8.len) : v.value.v_utf8.len));
	return 0;
}

static bool
is_num(const bson_value_t *v)
{
	return v->value_type == BSON_TYPE_INT32 || v->value_type == BSON_TYPE_INT64 ||
	       v->value_type == BSON_TYPE_DOUBLE || v->value_type == BSON_TYPE_DECIMAL128;
}

static int64_t
coerce_long(const bson_value_t *v)
{
	int64_t i;
	if (expr_num_get_int64(v, &i))
		return i;
	double d = expr_num_to_double(v);
	if (d != d)
		return 0;
	if (d >= 9.2e18)
		return INT64_MAX;
	if (d <= -9.2e18)
		return INT64_MIN;
	return (int64_t)d;
}

static int
eval_substr_bytes(const expr_t *e, expr_env_t *env, bson_value_t *out, terr_t *err)
{
	bson_value_t v, s, lo, ln;
	const char *name = "$substrBytes"; /* $substr parses into $substrBytes in mongod */

	RET(expr_eval_arg(e, 0, env, &v, err));
	RET(expr_eval_arg(e, 1, env, &lo, err));
	RET(expr_eval_arg(e, 2, env, &ln, err));
	RET(expr_coerce_to_string(env, &v, &s, err));
	if (!is_num(&lo))
		return terr_set(err, 16034, "%s:  starting index must be a numeric type (is BSON type %s)", name,
		                expr_type_name(&lo));
	if (!is_num(&ln))
		return terr_set(err, 16035, "%s:  length must be a numeric type (is BSON type %s)", name,
		                expr_type_name(&ln));
	int64_t start = coerce_long(&lo), len = coerce_long(&ln);
	if (start < 0)
		return terr_set(err, 50752, "%s:  starting index must be non-negative (got: %lld)", name,
		                (long long)start);
	const char *str = s.value.v_utf8.str;
	size_t slen = s.value.v_utf8.len;
	size_t lower = (size_t)start;
	if (lower < slen && is_cont((unsigned char)str[lower]))
		return terr_set(err, 28656, "%s:  Invalid range, starting index is a UTF-8 continuation byte.", name);
	if (lower >= slen) {
		expr_set_string(env, out, "", 0);
		return 0;
	}
	size_t length = len < 0 ? slen - lower : (size_t)len;
	if (length > slen - lower)
		length = slen - lower;
	if (lower + length < slen && is_cont((unsigned char)str[lower + length]))
		return terr_set(err, 28657, "%s:  Invalid range, ending index is in the middle of a UTF-8 character.",
		                name);
	expr_set_string(env, out, str + lower, length);
	return 0;
}

static int
eval_substr_cp(const expr_t *e, expr_env_t *env, bson_value_t *out, terr_t *err)
{
	bson_value_t v, s, lo, ln;
	int32_t start, len;

	RET(expr_eval_arg(e, 0, env, &v, err));
	RET(expr_eval_arg(e, 1, env, &lo, err));
	RET(expr_eval_arg(e, 2, env, &ln, err));
	RET(expr_coerce_to_string(env, &v, &s, err));
	if (!is_num(&lo))
		return terr_set(err, 34450, "$substrCP: starting index must be a numeric type (is BSON type %s)",
		                expr_type_name(&lo));
	if (!expr_num_to_int32_exact(&lo, &start)) {
		char *t = bv_to_mongo_string(&lo);
		terr_set(err, 34451, "$substrCP: starting index cannot be represented as a 32-bit integral value: %s", t);
		bson_free(t);
		return -1;
	}
	if (!is_num(&ln))
		return terr_set(err, 34452, "$substrCP: length must be a numeric type (is BSON type %s)",
		                expr_type_name(&ln));
	if (!expr_num_to_int32_exact(&ln, &len)) {
		char *t = bv_to_mongo_string(&ln);
		terr_set(err, 34453, "$substrCP: length cannot be represented as a 32-bit integral value: %s", t);
		bson_free(t);
		return -1;
	}
	if (len < 0)
		return terr_set(err, 34454, "$substrCP: length must be a nonnegative integer.");
	if (start < 0)
		return terr_set(err, 34455, "$substrCP: the starting index must be nonnegative integer.");
	const char *str = s.value.v_utf8.str;
	size_t slen = s.value.v_utf8.len;
	size_t b0 = cp_offset(str, slen, (size_t)start);
	size_t b1 = b0;
	for (int32_t i = 0; i < len && b1 < slen; i++) {
		b1++;
		while (b1 < slen && is_cont((unsigned char)str[b1]))
			b1++;
	}
	expr_set_string(env, out, str + b0, b1 - b0);
	return 0;
}

static int
eval_split(const expr_t *e, expr_env_t *env, bson_value_t *out, terr_t *err)
{
	bson_value_t s, d;
	bson_t b;
	uint32_t idx = 0;

	RET(expr_eval_arg(e, 0, env, &s, err));
	RET(expr_eval_arg(e, 1, env, &d, err));
	if (expr_is_nullish(&s) || expr_is_nullish(&d)) {
		expr_set_null(out);
		return 0;
	}
	if (!is_str(&s))
		return terr_set(err, 40085, "$split requires an expression that evaluates to a string as a first "
		                "argument, found: %s", expr_type_name(&s));
	if (!is_str(&d))
		return terr_set(err, 40086, "$split requires an expression that evaluates to a string as a second "
		                "argument, found: %s", expr_type_name(&d));
	if (d.value.v_utf8.len == 0)
		return terr_set(err, 40087, "$split requires a non-empty separator");
	bson_init(&b);
	const char *p = s.value.v_utf8.str, *end = p + s.value.v_utf8.len;
	size_t dl = d.value.v_utf8.len;
	for (;;) {
		const char *q = (size_t)(end - p) >= dl ? memmem(p, (size_t)(end - p), d.value.v_utf8.str, dl) : NULL;
		bson_value_t piece;
		memset(&piece, 0, sizeof(piece));
		piece.value_type = BSON_TYPE_UTF8;
		piece.value.v_utf8.str = (char *)p;
		piece.value.v_utf8.len = (uint32_t)((q ? q : end) - p);
		expr_array_append(&b, &idx, &piece);
		if (q == NULL)
			break;
		p = q + dl;
	}
	expr_set_doc_from(env, out, &b, true);
	return 0;
}

/* ---- $trim family (named arguments: args[0] input, args[1] chars|NULL) --- */

static int
parse_trim(expr_t *e, const bson_value_t *arg, expr_scope_t *scope, terr_t *err)
{
	bson_iter_t it;
	expr_t *in = NULL, *chars = NULL;
	int ret = 0;

	if (arg->value_type != BSON_TYPE_DOCUMENT)
		return terr_set(err, 50696, "%s only supports an object as an argument, found %s", e->op->name,
		                expr_type_name(arg));
	expr_iter_init(&it, arg);
	while (bson_iter_next(&it)) {
		const char *k = bson_iter_key(&it);
		expr_t **slot;
		if (strcmp(k, "input") == 0)
			slot = &in;
		else if (strcmp(k, "chars") == 0)
			slot = &chars;
		else {
			ret = terr_set(err, 50694, "%s found an unknown argument: %s", e->op->name, k);
			goto err;
		}
		expr_destroy(*slot);
		*slot = NULL;
		ERR(expr_parse_sub(bson_iter_value(&it), scope, slot, err));
	}
	if (in == NULL) {
		ret = terr_set(err, 50695, "%s requires an 'input' field", e->op->name);
		goto err;
	}
	e->args = bson_malloc(2 * sizeof(*e->args));
	e->args[0] = in;
	e->args[1] = chars;
	e->nargs = 2;
	return 0;
err:
	expr_destroy(in);
	expr_destroy(chars);
	return ret;
}

/* does the UTF-8 char at s (len n bytes) appear among chars? */
static bool
char_in(const char *s, size_t n, const bson_value_t *chars)
{
	if (chars == NULL) {
		/* mongod's default set: \0 space \t \n \v \f \r, U+00A0, U+1680, U+2000-U+200A */
		if (n == 1)
			return s[0] == 0 || s[0] == ' ' || (s[0] >= '\t' && s[0] <= '\r');
		if (n == 2)
			return (unsigned char)s[0] == 0xc2 && (unsigned char)s[1] == 0xa0;
		if (n == 3) {
			unsigned c = ((unsigned)(s[0] & 0x0f) << 12) | ((unsigned)(s[1] & 0x3f) << 6) | (unsigned)(s[2] & 0x3f);
			return c == 0x1680 || (c >= 0x2000 && c <= 0x200a);
		}
		return false;
	}
	const char *p = chars->value.v_utf8.str, *end = p + chars->value.v_utf8.len;
	while (p < end) {
		size_t l = 1;
		while (p + l < end && is_cont((unsigned char)p[l]))
			l++;
		if (l == n && memcmp(p, s, n) == 0)
			return true;
		p += l;
	}
	return false;
}

static int
eval_trim(const expr_t *e, expr_env_t *env, bson_value_t *out, terr_t *err)
{
	bson_value_t in, ch;
	bool left = strcmp(e->op->name, "$rtrim") != 0, right = strcmp(e->op->name, "$ltrim") != 0;
	const bson_value_t *chars = NULL;

	RET(expr_eval(e->args[0], env, &in, err));
	if (expr_is_nullish(&in)) {
		expr_set_null(out);
		return 0;
	}
	if (!is_str(&in)) {
		char *t = bv_to_mongo_string(&in);
		terr_set(err, 50699, "%s requires its input to be a string, got %s (of type %s) instead.", e->op->name, t,
		         expr_type_name(&in));
		bson_free(t);
		return -1;
	}
	if (e->args[1] != NULL) {
		RET(expr_eval(e->args[1], env, &ch, err));
		if (expr_is_nullish(&ch)) {
			expr_set_null(out);
			return 0;
		}
		if (!is_str(&ch)) {
			char *t = bv_to_mongo_string(&ch);
			terr_set(err, 50700, "%s requires 'chars' to be a string, got %s (of type %s) instead.", e->op->name,
			         t, expr_type_name(&ch));
			bson_free(t);
			return -1;
		}
		chars = &ch;
	}
	const char *s = in.value.v_utf8.str;
	size_t b = 0, end = in.value.v_utf8.len;
	while (left && b < end) {
		size_t l = 1;
		while (b + l < end && is_cont((unsigned char)s[b + l]))
			l++;
		if (!char_in(s + b, l, chars))
			break;
		b += l;
	}
	while (right && end > b) {
		size_t st = end - 1;
		while (st > b && is_cont((unsigned char)s[st]))
			st--;
		if (!char_in(s + st, end - st, chars))
			break;
		end = st;
	}
	expr_set_string(env, out, s + b, end - b);
	return 0;
}

static int
eval_indexof(const expr_t *e, expr_env_t *env, bson_value_t *out, terr_t *err)
{
	bson_value_t s, sub, v;
	bool cp = strcmp(e->op->name, "$indexOfCP") == 0;
	const char *name = e->op->name;
	int64_t bounds[2] = {0, -1};

	RET(expr_eval_arg(e, 0, env, &s, err));
	if (expr_is_nullish(&s)) {
		expr_set_null(out);
		return 0;
	}
	if (!is_str(&s))
		return terr_set(err, cp ? 40093 : 40091, "%s requires a string as the first argument, found: %s", name,
		                expr_type_name(&s));
	RET(expr_eval_arg(e, 1, env, &sub, err));
	if (!is_str(&sub))
		return terr_set(err, cp ? 40094 : 40092, "%s requires a string as the second argument, found: %s", name,
		                expr_type_name(&sub));
	size_t total = cp ? cp_count(s.value.v_utf8.str, s.value.v_utf8.len) : s.value.v_utf8.len;
	bounds[1] = (int64_t)total;
	for (size_t i = 2; i < e->nargs; i++) {
		int32_t x;
		const char *what = i == 2 ? "starting index" : "ending index";
		RET(expr_eval_arg(e, i, env, &v, err));
		if (!expr_num_to_int32_exact(&v, &x)) {
			char *t = bv_to_mongo_string(&v);
			/* sic: no space before "requires", as mongod */
			terr_set(err, 40096, "%srequires an integral %s, found a value of type: %s, with value: %s", name, what,
			         expr_type_name(&v), t);
			bson_free(t);
			return -1;
		}
		if (x < 0) {
			char *t = bv_to_mongo_string(&v);
			terr_set(err, 40097, "%s requires a nonnegative %s, found: %s", name, what, t);
			bson_free(t);
			return -1;
		}
		bounds[i - 2] = x;
	}
	if (bounds[1] > (int64_t)total)
		bounds[1] = (int64_t)total;
	if (bounds[0] > bounds[1] || bounds[0] > (int64_t)total) {
		expr_set_int32(out, -1);
		return 0;
	}
	const char *str = s.value.v_utf8.str;
	size_t slen = s.value.v_utf8.len;
	size_t b0 = cp ? cp_offset(str, slen, (size_t)bounds[0]) : (size_t)bounds[0];
	size_t b1 = cp ? cp_offset(str, slen, (size_t)bounds[1]) : (size_t)bounds[1];
	size_t nl = sub.value.v_utf8.len;
	for (size_t i = b0; i + nl <= b1; i++) {
		RET(tm_interrupt_check(err));
		if (cp && i < slen && is_cont((unsigned char)str[i]))
			continue;
		if (memcmp(str + i, sub.value.v_utf8.str, nl) == 0) {
			expr_set_int32(out, (int32_t)(cp ? cp_count(str, i) : i));
			return 0;
		}
	}
	expr_set_int32(out, -1);
	return 0;
}

static int
eval_strcasecmp(const expr_t *e, expr_env_t *env, bson_value_t *out, terr_t *err)
{
	bson_value_t a, b, sa, sb;

	RET(expr_eval_arg(e, 0, env, &a, err));
	RET(expr_eval_arg(e, 1, env, &b, err));
	RET(expr_coerce_to_string(env, &a, &sa, err));
	RET(expr_coerce_to_string(env, &b, &sb, err));
	size_t la = sa.value.v_utf8.len, lb = sb.value.v_utf8.len, n = la < lb ? la : lb;
	int c = 0;
	for (size_t i = 0; i < n && c == 0; i++) {
		int x = (unsigned char)sa.value.v_utf8.str[i], y = (unsigned char)sb.value.v_utf8.str[i];
		if (x >= 'a' && x <= 'z')
			x -= 32;
		if (y >= 'a' && y <= 'z')
			y -= 32;
		c = x - y;
	}
	if (c == 0)
		c = la < lb ? -1 : (la > lb ? 1 : 0);
	expr_set_int32(out, c < 0 ? -1 : (c > 0 ? 1 : 0));
	return 0;
}

/* ---- $replaceOne / $replaceAll: args input, find, replacement ------------ */

static int
parse_replace(expr_t *e, const bson_value_t *arg, expr_scope_t *scope, terr_t *err)
{
	static const char *names[] = {"input", "find", "replacement"};
	expr_t *parts[3] = {NULL, NULL, NULL};
	int ret = 0;

	if (arg->value_type != BSON_TYPE_DOCUMENT)
		return terr_set(err, 51751, "%s requires an object as an argument, found: %s", e->op->name,
		                expr_type_name(arg));
	ERR(expr_parse_named(e, arg, scope, names, 3, parts, 51750, "%s found an unknown argument: %s", err));
	for (int i = 0; i < 3; i++) {
		if (parts[i] == NULL) {
			ret = terr_set(err, 51749 - i, "%s requires '%s' to be specified", e->op->name, names[i]);
			goto err;
		}
	}
	expr_args_set(e, parts, 3);
	return 0;
err:
	expr_parts_destroy(parts, 3);
	return ret;
}

static int
eval_replace(const expr_t *e, expr_env_t *env, bson_value_t *out, terr_t *err)
{
	static const char *names[] = {"input", "find", "replacement"};
	bson_value_t v[3];
	bool all = strcmp(e->op->name, "$replaceAll") == 0;
	bool null = false;

	for (int i = 0; i < 3; i++) {
		RET(expr_eval_arg(e, (size_t)i, env, &v[i], err));
		if (expr_is_nullish(&v[i])) {
			null = true;
			continue;
		}
		if (!is_str(&v[i])) {
			char *t = bv_to_mongo_string(&v[i]);
			terr_set(err, 51746 - i, "%s requires that '%s' be a string, found: %s", e->op->name, names[i], t);
			bson_free(t);
			return -1;
		}
	}
	if (null) {
		expr_set_null(out);
		return 0;
	}
	const char *in = v[0].value.v_utf8.str, *find = v[1].value.v_utf8.str, *rep = v[2].value.v_utf8.str;
	size_t il = v[0].value.v_utf8.len, fl = v[1].value.v_utf8.len, rl = v[2].value.v_utf8.len;
	bson_string_t *s = bson_string_new(NULL);
#define APPEND(p, n) do { for (size_t q_ = 0; q_ < (n); q_++) bson_string_append_c(s, (p)[q_]); } while (0)
	if (fl == 0) {
		/* empty find matches at every byte position, as mongod */
		if (all) {
			for (size_t i = 0; i < il; i++) {
				APPEND(rep, rl);
				bson_string_append_c(s, in[i]);
				if (s->len > EXPR_MAX_VALUE_BYTES || tm_interrupt_check(err) != 0)
					break;
			}
			APPEND(rep, rl);
		} else {
			APPEND(rep, rl);
			APPEND(in, il);
		}
	} else {
		size_t pos = 0;
		for (;;) {
			const char *q = il - pos >= fl ? memmem(in + pos, il - pos, find, fl) : NULL;
			if (q == NULL) {
				APPEND(in + pos, il - pos);
				break;
			}
			APPEND(in + pos, (size_t)(q - (in + pos)));
			APPEND(rep, rl);
			pos = (size_t)(q - in) + fl;
			if (s->len > EXPR_MAX_VALUE_BYTES || tm_interrupt_check(err) != 0)
				break;
			if (!all) {
				APPEND(in + pos, il - pos);
				break;
			}
		}
	}
#undef APPEND
	if (terr_is_set(err)) {
		bson_string_free(s, true);
		return -1;
	}
	if (s->len > EXPR_MAX_VALUE_BYTES) {
		size_t n = s->len;
		bson_string_free(s, true);
		return expr_too_big(n, err);
	}
	expr_set_string(env, out, s->str, s->len);
	bson_string_free(s, true);
	return 0;
}

/* ---- regex ----------------------------------------------------------------- */

/* args: input, regex, options|NULL */
static int
parse_regex(expr_t *e, const bson_value_t *arg, expr_scope_t *scope, terr_t *err)
{
	static const char *names[] = {"input", "regex", "options"};
	expr_t *parts[3] = {NULL, NULL, NULL};
	int ret = 0;

	if (arg->value_type != BSON_TYPE_DOCUMENT)
		return terr_set(err, 51103, "%s expects an object of named arguments but found: %s", e->op->name,
		                expr_type_name(arg));
	ERR(expr_parse_named(e, arg, scope, names, 3, parts, 31024, "%s found an unknown argument: %s", err));
	if (parts[0] == NULL) {
		ret = terr_set(err, 31022, "%s requires 'input' parameter", e->op->name);
		goto err;
	}
	if (parts[1] == NULL) {
		ret = terr_set(err, 31023, "%s requires 'regex' parameter", e->op->name);
		goto err;
	}
	expr_args_set(e, parts, 3);
	return 0;
err:
	expr_parts_destroy(parts, 3);
	return ret;
}

enum { RX_MATCH, RX_FIND, RX_FINDALL };

static int
eval_regex(const expr_t *e, expr_env_t *env, bson_value_t *out, terr_t *err)
{
	bson_value_t in, rx, opt;
	const char *pattern = NULL, *flags = "";
	size_t plen = 0;
	int mode = strcmp(e->op->name, "$regexMatch") == 0 ? RX_MATCH :
	           strcmp(e->op->name, "$regexFind") == 0 ? RX_FIND : RX_FINDALL;
	const char *name = e->op->name;
	pcre2_code *code = NULL;
	pcre2_match_data *md = NULL;
	int ret = 0;

	RET(expr_eval_arg(e, 0, env, &in, err));
	RET(expr_eval_arg(e, 1, env, &rx, err));
	expr_set_missing(&opt);
	if (e->args[2] != NULL)
		RET(expr_eval_arg(e, 2, env, &opt, err));
	if (!expr_is_nullish(&in) && in.value_type != BSON_TYPE_UTF8)
		return terr_set(err, 51104, "%s needs 'input' to be of type string", name);
	if (!expr_is_nullish(&rx) && rx.value_type != BSON_TYPE_UTF8 && rx.value_type != BSON_TYPE_REGEX)
		return terr_set(err, 51105, "%s needs 'regex' to be of type string or regex", name);
	if (!expr_is_nullish(&opt) && opt.value_type != BSON_TYPE_UTF8)
		return terr_set(err, 51106, "%s needs 'options' to be of type string", name);
	if (rx.value_type == BSON_TYPE_REGEX) {
		pattern = rx.value.v_regex.regex;
		plen = strlen(pattern);
		flags = rx.value.v_regex.options;
		if (!expr_is_nullish(&opt) && flags[0] != 0)
			return terr_set(err, 51107, "%s: found regex option(s) specified in both 'regex' and 'option' "
			                "fields", name);
	} else if (rx.value_type == BSON_TYPE_UTF8) {
		pattern = rx.value.v_utf8.str;
		plen = rx.value.v_utf8.len;
	} else if (!expr_is_nullish(&rx)) {
		return terr_set(err, 51105, "%s needs 'regex' to be of type string or regex", name);
	}
	if (opt.value_type == BSON_TYPE_UTF8) {
		if (memchr(opt.value.v_utf8.str, 0, opt.value.v_utf8.len) != NULL)
			return terr_set(err, 51110, "%s: regular expression options cannot contain an embedded null byte",
			                name);
		flags = opt.value.v_utf8.str;
	} else if (!expr_is_nullish(&opt)) {
		return terr_set(err, 51106, "%s needs 'options' to be of type string", name);
	}
	if (expr_is_nullish(&in) || pattern == NULL) {
		if (mode == RX_MATCH)
			expr_set_bool(out, false);
		else if (mode == RX_FIND)
			expr_set_null(out);
		else {
			bson_t b;
			bson_init(&b);
			expr_set_doc_from(env, out, &b, true);
		}
		return 0;
	}
	if (memchr(pattern, 0, plen) != NULL)
		return terr_set(err, 51109, "%s: regular expression cannot contain an embedded null byte", name);
	uint32_t o = PCRE2_UTF;
	for (const char *f = flags; *f; f++) {
		switch (*f) {
		case 'i': o |= PCRE2_CASELESS; break;
		case 'm': o |= PCRE2_MULTILINE; break;
		case 's': o |= PCRE2_DOTALL; break;
		case 'x': o |= PCRE2_EXTENDED; break;
		case 'u': break;
		default:
			return terr_set(err, 51108, "%s invalid flag in regex options: %c", name, *f);
		}
	}
	int ecode;
	PCRE2_SIZE eoff;
	code = pcre2_compile((PCRE2_SPTR)pattern, plen, o, &ecode, &eoff, NULL);
	if (code == NULL) {
		PCRE2_UCHAR msg[256];
		pcre2_get_error_message(ecode, msg, sizeof(msg));
		return terr_set(err, 51111, "Invalid Regex in %s: %s", name, (char *)msg);
	}
	md = pcre2_match_data_create_from_pattern(code, NULL);
	const char *subj = in.value.v_utf8.str;
	size_t slen = in.value.v_utf8.len, pos = 0;
	/* code points before byte cp_at: each match's idx counts on from the
	 * last one (matches only move forward), not from the start again */
	size_t cp_at = 0, cp_n = 0;
	bson_t all;
	uint32_t aidx = 0;
	bson_init(&all);
	for (;;) {
		ERR(tm_interrupt_check(err));
		int rc = pcre2_match(code, (PCRE2_SPTR)subj, slen, pos, 0, md, NULL);
		if (rc == PCRE2_ERROR_NOMATCH)
			break;
		if (rc < 0) {
			ret = terr_set(err, 51156, "Error occurred while executing the regular expression in %s. Result "
			               "code: %d", name, rc);
			goto err;
		}
		if (mode == RX_MATCH) {
			expr_set_bool(out, true);
			goto done;
		}
		PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
		uint32_t ncap = pcre2_get_ovector_count(md);
		bson_t m, caps;
		uint32_t cidx = 0;
		bson_init(&m);
		bson_append_utf8(&m, "match", 5, subj + ov[0], (int)(ov[1] - ov[0]));
		cp_n += cp_count(subj + cp_at, ov[0] - cp_at);
		cp_at = ov[0];
		bson_append_int32(&m, "idx", 3, (int32_t)cp_n);
		bson_append_array_begin(&m, "captures", 8, &caps);
		for (uint32_t c = 1; c < ncap; c++) {
			char k[16];
			const char *key;
			size_t kl = bson_uint32_to_string(cidx++, &key, k, sizeof(k));
			if (ov[2 * c] == PCRE2_UNSET)
				bson_append_null(&caps, key, (int)kl);
			else
				bson_append_utf8(&caps, key, (int)kl, subj + ov[2 * c], (int)(ov[2 * c + 1] - ov[2 * c]));
		}
		bson_append_array_end(&m, &caps);
		if (mode == RX_FIND) {
			expr_set_doc_from(env, out, &m, false);
			goto done;
		}
		char k[16];
		const char *key;
		size_t kl = bson_uint32_to_string(aidx++, &key, k, sizeof(k));
		bson_append_document(&all, key, (int)kl, &m);
		bson_destroy(&m);
		if (ov[1] == ov[0]) {
			/* empty match: step one character */
			pos = ov[1] + 1;
			while (pos < slen && is_cont((unsigned char)subj[pos]))
				pos++;
		} else {
			pos = ov[1];
		}
		if (pos >= slen) /* as mongod's do-while: no attempt at the very end */
			break;
	}
	if (mode == RX_MATCH)
		expr_set_bool(out, false);
	else if (mode == RX_FIND)
		expr_set_null(out);
	else {
		expr_set_doc_from(env, out, &all, true);
		bson_init(&all);
	}
done:
err:
	bson_destroy(&all);
	pcre2_match_data_free(md);
	pcre2_code_free(code);
	return ret;
}

const expr_op_t expr_ops_string[] = {
	{"$concat", 0, -1, NULL, eval_concat, 0},
	{"$toLower", 1, 1, NULL, eval_tolower, 0},
	{"$toUpper", 1, 1, NULL, eval_toupper, 0},
	{"$strLenBytes", 1, 1, NULL, eval_strlen, 0},
	{"$strLenCP", 1, 1, NULL, eval_strlen, 0},
	{"$substr", 3, 3, NULL, eval_substr_bytes, 0, "$substrBytes"},
	{"$substrBytes", 3, 3, NULL, eval_substr_bytes, 0},
	{"$substrCP", 3, 3, NULL, eval_substr_cp, 0},
	{"$split", 2, 2, NULL, eval_split, 0},
	{"$trim", 0, -1, parse_trim, eval_trim, 0},
	{"$ltrim", 0, -1, parse_trim, eval_trim, 0},
	{"$rtrim", 0, -1, parse_trim, eval_trim, 0},
	{"$indexOfBytes", 2, 4, NULL, eval_indexof, 0},
	{"$indexOfCP", 2, 4, NULL, eval_indexof, 0},
	{"$strcasecmp", 2, 2, NULL, eval_strcasecmp, 0},
	{"$replaceOne", 0, -1, parse_replace, eval_replace, 0},
	{"$replaceAll", 0, -1, parse_replace, eval_replace, 0},
	{"$regexMatch", 0, -1, parse_regex, eval_regex, 0},
	{"$regexFind", 0, -1, parse_regex, eval_regex, 0},
	{"$regexFindAll", 0, -1, parse_regex, eval_regex, 0},
	{NULL, 0, 0, NULL, NULL, 0},
};
