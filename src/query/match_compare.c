/*
 * match_compare.c -- value-level leaves: $eq/$lt/$lte/$gt/$gte with
 * MongoDB's type bracketing, $in, $exists, $type, $mod, $size and the four
 * bit tests; plus the argument parsers these operators need.
 *
 * A comparison only matches values of the same canonical type (numbers of
 * any width together, string with symbol), except that a null operand
 * matches missing, and MinKey/MaxKey operands bound every type.  Since
 * MongoDB 8.0 null does not match undefined.  NaN equals NaN and is neither
 * less nor greater than anything.
 *
 * Not here: walking paths (match.c), regexes (match_regex.c).
 */
#include "query/match_private.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bson/value.h"

/* canonicalizeBSONType: ranks that decide which values are comparable,
 * stored +2 so that 0 marks an unknown type byte. */
static const uint8_t canon_table[256] = {
	[BSON_TYPE_MINKEY] = 1, [BSON_TYPE_EOD] = 2, [BSON_TYPE_UNDEFINED] = 2,
	[BSON_TYPE_NULL] = 7, [BSON_TYPE_DOUBLE] = 12, [BSON_TYPE_INT32] = 12,
	[BSON_TYPE_INT64] = 12, [BSON_TYPE_DECIMAL128] = 12, [BSON_TYPE_UTF8] = 17,
	[BSON_TYPE_SYMBOL] = 17, [BSON_TYPE_DOCUMENT] = 22, [BSON_TYPE_ARRAY] = 27,
	[BSON_TYPE_BINARY] = 32, [BSON_TYPE_OID] = 37, [BSON_TYPE_BOOL] = 42,
	[BSON_TYPE_DATE_TIME] = 47, [BSON_TYPE_TIMESTAMP] = 49, [BSON_TYPE_REGEX] = 52,
	[BSON_TYPE_DBPOINTER] = 57, [BSON_TYPE_CODE] = 62, [BSON_TYPE_CODEWSCOPE] = 67,
	[BSON_TYPE_MAXKEY] = 129,
};

static inline int
canon(bson_type_t t)
{
	uint8_t r = canon_table[(uint8_t)t];

	return r == 0 ? 200 : (int)r - 2;
}

/* Same-type fast paths for the common cases; falls back to bv_compare. */
static inline int
compare_same_rank(const bson_value_t *a, const bson_value_t *b)
{
	if (a->value_type == b->value_type) {
		switch (a->value_type) {
		case BSON_TYPE_INT32:
			return (a->value.v_int32 > b->value.v_int32) - (a->value.v_int32 < b->value.v_int32);
		case BSON_TYPE_INT64:
			return (a->value.v_int64 > b->value.v_int64) - (a->value.v_int64 < b->value.v_int64);
		case BSON_TYPE_UTF8: {
			uint32_t la = a->value.v_utf8.len, lb = b->value.v_utf8.len;
			int c = memcmp(a->value.v_utf8.str, b->value.v_utf8.str, la < lb ? la : lb);

			return c != 0 ? c : (la > lb) - (la < lb);
		}
		default:
			break;
		}
	}
	return bv_compare(a, b);
}

bool
match_cmp_value(const mnode_t *n, const bson_value_t *v)
{
	const bson_value_t *rhs = &n->val;
	mkind_t k = n->kind;
	bool eq_ok = (k == MK_EQ || k == MK_LTE || k == MK_GTE);
	int c;

	if (rhs->value_type == BSON_TYPE_NULL) {
		/* null matches null and missing (not undefined, as of 8.0) */
		if (v->value_type == BSON_TYPE_NULL || v->value_type == BSON_TYPE_EOD)
			return eq_ok;
		if (v->value_type == BSON_TYPE_UNDEFINED)
			return false;
	}
	if (canon(v->value_type) != canon(rhs->value_type)) {
		if (rhs->value_type == BSON_TYPE_MAXKEY)
			return k == MK_LT || k == MK_LTE;
		if (rhs->value_type == BSON_TYPE_MINKEY)
			return k == MK_GT || k == MK_GTE;
		return false;
	}
	if (v->value_type == BSON_TYPE_EOD)
		return false;
	if (canon(v->value_type) == 10) {
		bool a = bv_is_nan(v), b = bv_is_nan(rhs);

		if (a || b)
			return eq_ok && a && b;
	}
	c = n->coll ? bv_compare_coll(v, rhs, n->coll) : compare_same_rank(v, rhs);
	switch (k) {
	case MK_EQ: return c == 0;
	case MK_LT: return c < 0;
	case MK_LTE: return c <= 0;
	case MK_GT: return c > 0;
	case MK_GTE: return c >= 0;
	default: return false;
	}
}

/* ---- $in ------------------------------------------------------------------ */

static int
cmp_values_qsort(const void *a, const void *b, void *coll)
{
	return bv_compare_coll(a, b, coll);
}

int
match_in_prepare(mnode_t *n, terr_t *err)
{
	bson_iter_t it;
	uint32_t cap = 0;

	bson_iter_init_from_data(&it, n->val.value.v_doc.data, n->val.value.v_doc.data_len);
	while (bson_iter_next(&it))
		cap++;
	n->u.in.sorted = tm_malloc0(sizeof(bson_value_t) * (cap ? cap : 1));
	bson_iter_init_from_data(&it, n->val.value.v_doc.data, n->val.value.v_doc.data_len);
	while (bson_iter_next(&it)) {
		const bson_value_t *e = bson_iter_value(&it);

		if (e->value_type == BSON_TYPE_REGEX) {
			mregex_t *re;

			n->u.in.re = bson_realloc(n->u.in.re, sizeof(mregex_t) * (n->u.in.nre + 1));
			re = &n->u.in.re[n->u.in.nre];
			memset(re, 0, sizeof *re);
			if (match_regex_compile(re, e->value.v_regex.regex,
			                        (uint32_t)strlen(e->value.v_regex.regex),
			                        e->value.v_regex.options, err) != 0)
				return -1;
			n->u.in.nre++;
			continue;
		}
		if (e->value_type == BSON_TYPE_NULL)
			n->u.in.has_null = true;
		n->u.in.sorted[n->u.in.n++] = *e;
	}
	if (n->u.in.n > 1)
		qsort_r(n->u.in.sorted, n->u.in.n, sizeof(bson_value_t), cmp_values_qsort,
		        (void *)n->coll);
	return 0;
}

bool
match_in_value(const mnode_t *n, const bson_value_t *v)
{
	uint32_t lo = 0, hi = n->u.in.n;

	if (v->value_type == BSON_TYPE_EOD)
		return n->u.in.has_null;
	if (v->value_type != BSON_TYPE_UNDEFINED) {
		while (lo < hi) {
			uint32_t mid = lo + (hi - lo) / 2;
			int c = bv_compare_coll(v, &n->u.in.sorted[mid], n->coll);

			if (c == 0)
				return true;
			if (c < 0)
				hi = mid;
			else
				lo = mid + 1;
		}
	}
	for (uint32_t i = 0; i < n->u.in.nre; i++)
		if (match_regex_test(&n->u.in.re[i], v))
			return true;
	return false;
}

void
match_set_collation(mnode_t *n, const coll_t *coll)
{
	n->coll = coll;
	for (uint32_t i = 0; i < n->nkids; i++)
		match_set_collation(n->kids[i], coll);
	if (n->kind == MK_IN && n->u.in.n > 1)
		qsort_r(n->u.in.sorted, n->u.in.n, sizeof(bson_value_t), cmp_values_qsort,
		        (void *)coll);
}

/* ---- $exists ---------------------------------------------------------------- */

bool
match_exists_value(const mnode_t *n, const bson_value_t *v)
{
	return v->value_type != BSON_TYPE_EOD;
}

/* ---- $type ------------------------------------------------------------------ */

#define TYPE_BIT_NUMBER 20
#define TYPE_BIT_MINKEY 21
#define TYPE_BIT_MAXKEY 22

static const struct {
	const char *alias;
	int code;
} type_aliases[] = {
	{"double", 1}, {"string", 2}, {"object", 3}, {"array", 4}, {"binData", 5},
	{"undefined", 6}, {"objectId", 7}, {"bool", 8}, {"date", 9}, {"null", 10},
	{"regex", 11}, {"dbPointer", 12}, {"javascript", 13}, {"symbol", 14},
	{"javascriptWithScope", 15}, {"int", 16}, {"timestamp", 17}, {"long", 18},
	{"decimal", 19}, {"minKey", -1}, {"maxKey", 127},
};

static int
type_bit(int code)
{
	if (code == -1)
		return TYPE_BIT_MINKEY;
	if (code == 127)
		return TYPE_BIT_MAXKEY;
	return code;
}

int
match_parse_int_elem(const char *key, const bson_value_t *v, bool nonneg, bool to_int,
                     int64_t *out, terr_t *err)
{
	char *str = match_value_str(v);
	int64_t n = 0;
	int ret = 0;

	switch (v->value_type) {
	case BSON_TYPE_INT32:
		n = v->value.v_int32;
		break;
	case BSON_TYPE_INT64:
		n = v->value.v_int64;
		break;
	case BSON_TYPE_DOUBLE: {
		double d = v->value.v_double;

		if (isnan(d))
			ERR(terr_set(err, TERR_FAILED_TO_PARSE,
			             "Expected an integer, but found NaN in: %s: %s", key, str));
		if (d >= 9223372036854775808.0 || d < -9223372036854775808.0)
			ERR(terr_set(err, TERR_FAILED_TO_PARSE,
			             "Cannot represent as a 64-bit integer: %s: %s", key, str));
		if (d != (double)(int64_t)d)
			ERR(terr_set(err, TERR_FAILED_TO_PARSE, "Expected an integer: %s: %s", key, str));
		n = (int64_t)d;
		break;
	}
	case BSON_TYPE_DECIMAL128:
		if (!bv_as_int64_exact(v, &n))
			ERR(terr_set(err, TERR_FAILED_TO_PARSE,
			             "Cannot represent as a 64-bit integer: %s: %s", key, str));
		break;
	default:
		ERR(terr_set(err, TERR_FAILED_TO_PARSE, "Expected a number in: %s: %s", key, str));
	}
	if (nonneg && n < 0)
		ERR(terr_set(err, TERR_FAILED_TO_PARSE, "Expected a positive number in: %s: %s", key,
		             str));
	if (to_int && (n < INT32_MIN || n > INT32_MAX))
		ERR(terr_set(err, TERR_FAILED_TO_PARSE, "Cannot represent %s: %s in an int", key, str));
	*out = n;
err:
	bson_free(str);
	return ret;
}

/* Re-code err as BadValue with a prefix ("Failed to parse $size. ..."). */
static int
rewrap(terr_t *err, const char *prefix)
{
	char *m;

	if (err == NULL)
		return -1;
	m = bson_strdup_printf("%s%s", prefix, err->msg ? err->msg : "");
	terr_set(err, TERR_BAD_VALUE, "%s", m);
	bson_free(m);
	return -1;
}

static const char *
number_str(const bson_value_t *v, char buf[64])
{
	double d = bv_as_double(v);

	if (v->value_type == BSON_TYPE_INT32 || v->value_type == BSON_TYPE_INT64)
		snprintf(buf, 64, "%lld", (long long)(v->value_type == BSON_TYPE_INT32
		                                      ? v->value.v_int32 : v->value.v_int64));
	else
		snprintf(buf, 64, "%.17g", d);
	return buf;
}

static int
type_one(mnode_t *n, const bson_value_t *e, const char *opname, terr_t *err)
{
	char buf[64];
	int64_t code;
	terr_t tmp = TERR_INIT;

	if (e->value_type == BSON_TYPE_UTF8) {
		if (strcmp(e->value.v_utf8.str, "number") == 0) {
			n->u.type.mask[0] |= 1u << TYPE_BIT_NUMBER;
			return 0;
		}
		for (size_t i = 0; i < sizeof type_aliases / sizeof type_aliases[0]; i++) {
			if (strcmp(type_aliases[i].alias, e->value.v_utf8.str) == 0) {
				n->u.type.mask[0] |= 1u << type_bit(type_aliases[i].code);
				return 0;
			}
		}
		if (strcmp(e->value.v_utf8.str, "missing") == 0)
			return terr_set(err, TERR_BAD_VALUE,
			                "'missing' is not a legal type name. To query for non-existence "
			                "of a field, use {$exists:false}.");
		return terr_set(err, TERR_BAD_VALUE, "Unknown type name alias: %s",
		                e->value.v_utf8.str);
	}
	if (!bv_is_number(e))
		return terr_set(err, TERR_TYPE_MISMATCH,
		                "type must be represented as a number or a string");
	if (match_parse_int_elem(opname, e, false, true, &code, &tmp) != 0) {
		terr_clear(&tmp);
		return terr_set(err, TERR_BAD_VALUE, "Invalid numerical type code: %s",
		                number_str(e, buf));
	}
	if (code == 0)
		return terr_set(err, TERR_BAD_VALUE,
		                "Invalid numerical type code: %s. Instead use {$exists:false}.",
		                number_str(e, buf));
	if (!(code == -1 || code == 127 || (code >= 1 && code <= 19)))
		return terr_set(err, TERR_BAD_VALUE, "Invalid numerical type code: %s",
		                number_str(e, buf));
	n->u.type.mask[0] |= 1u << type_bit((int)code);
	return 0;
}

int
match_type_parse(mnode_t *n, const bson_value_t *arg, const char *opname, terr_t *err)
{
	bson_iter_t it;

	if (arg->value_type != BSON_TYPE_ARRAY)
		return type_one(n, arg, opname, err);
	bson_iter_init_from_data(&it, arg->value.v_doc.data, arg->value.v_doc.data_len);
	while (bson_iter_next(&it))
		RET(type_one(n, bson_iter_value(&it), opname, err));
	if (n->u.type.mask[0] == 0)
		return terr_set(err, TERR_FAILED_TO_PARSE, "%s must match at least one type", opname);
	return 0;
}

bool
match_type_value(const mnode_t *n, const bson_value_t *v)
{
	uint32_t m = n->u.type.mask[0];
	bson_type_t t = v->value_type;

	if (t == BSON_TYPE_EOD)
		return false;
	if ((m & (1u << TYPE_BIT_NUMBER)) && bv_is_number(v))
		return true;
	if (t == BSON_TYPE_MINKEY)
		return (m & (1u << TYPE_BIT_MINKEY)) != 0;
	if (t == BSON_TYPE_MAXKEY)
		return (m & (1u << TYPE_BIT_MAXKEY)) != 0;
	return (int)t >= 1 && (int)t <= 19 && (m & (1u << (int)t)) != 0;
}

/* ---- $mod ------------------------------------------------------------------- */

/* Truncate a finite number to int64, saturating; false for NaN/Inf. */
static bool
trunc_int64(const bson_value_t *v, int64_t *out)
{
	double d;

	switch (v->value_type) {
	case BSON_TYPE_INT32:
		*out = v->value.v_int32;
		return true;
	case BSON_TYPE_INT64:
		*out = v->value.v_int64;
		return true;
	case BSON_TYPE_DOUBLE:
	case BSON_TYPE_DECIMAL128:
		d = bv_as_double(v);
		if (isnan(d) || isinf(d))
			return false;
		if (d >= 9223372036854775807.0)
			*out = INT64_MAX;
		else if (d <= -9223372036854775808.0)
			*out = INT64_MIN;
		else
			*out = (int64_t)d;
		return true;
	default:
		return false;
	}
}

/* BSONElement::tryCoerce: truncate toward zero; NaN/Inf and values outside
 * int64 are errors. */
static int
coerce_int64(const bson_value_t *v, const char *what, int64_t *out, terr_t *err)
{
	double d;

	if (v->value_type == BSON_TYPE_INT32 || v->value_type == BSON_TYPE_INT64)
		return trunc_int64(v, out) ? 0 : -1;
	d = bv_as_double(v);
	if (isnan(d) || isinf(d))
		return terr_set(err, TERR_BAD_VALUE,
		                "malformed mod, %s value is invalid :: caused by :: Unable to coerce "
		                "NaN/Inf to integral type", what);
	d = trunc(d);
	if (d >= 9223372036854775808.0 || d < -9223372036854775808.0)
		return terr_set(err, TERR_BAD_VALUE,
		                "malformed mod, %s value is invalid :: caused by :: Out of bounds "
		                "coercing to integral value", what);
	*out = (int64_t)d;
	return 0;
}

int
match_mod_parse(mnode_t *n, const bson_value_t *arg, terr_t *err)
{
	bson_iter_t it;
	const bson_value_t *d, *r;
	bson_value_t dv, rv;

	if (arg->value_type != BSON_TYPE_ARRAY)
		return terr_set(err, TERR_BAD_VALUE, "malformed mod, needs to be an array");
	bson_iter_init_from_data(&it, arg->value.v_doc.data, arg->value.v_doc.data_len);
	if (!bson_iter_next(&it))
		return terr_set(err, TERR_BAD_VALUE, "malformed mod, not enough elements");
	dv = *bson_iter_value(&it);
	d = &dv;
	if (!bv_is_number(d))
		return terr_set(err, TERR_BAD_VALUE, "malformed mod, divisor not a number");
	if (!bson_iter_next(&it))
		return terr_set(err, TERR_BAD_VALUE, "malformed mod, not enough elements");
	rv = *bson_iter_value(&it);
	r = &rv;
	if (!bv_is_number(r))
		return terr_set(err, TERR_BAD_VALUE, "malformed mod, remainder not a number");
	if (bson_iter_next(&it))
		return terr_set(err, TERR_BAD_VALUE, "malformed mod, too many elements");
	RET(coerce_int64(d, "divisor", &n->u.mod.div, err));
	RET(coerce_int64(r, "remainder", &n->u.mod.rem, err));
	if (n->u.mod.div == 0)
		return terr_set(err, TERR_BAD_VALUE, "divisor cannot be 0");
	return 0;
}

bool
match_mod_value(const mnode_t *n, const bson_value_t *v)
{
	int64_t x, m;

	if (!bv_is_number(v))
		return false;
	if (v->value_type == BSON_TYPE_DOUBLE || v->value_type == BSON_TYPE_DECIMAL128) {
		/* truncated; NaN, infinities and values outside int64 never match
		 * (mod_special_values.js) */
		double d = trunc(bv_as_double(v));

		if (isnan(d) || d >= 9223372036854775808.0 || d < -9223372036854775808.0)
			return false;
		x = (int64_t)d;
	} else if (!trunc_int64(v, &x)) {
		return false;
	}
	m = n->u.mod.div == -1 ? 0 : x % n->u.mod.div;
	return m == n->u.mod.rem;
}

/* ---- $size ------------------------------------------------------------------ */

int
match_size_parse(mnode_t *n, const bson_value_t *arg, terr_t *err)
{
	int64_t i;

	if (match_parse_int_elem("$size", arg, true, true, &i, err) != 0)
		return rewrap(err, "Failed to parse $size. ");
	n->u.size.n = (int32_t)i;
	return 0;
}

bool
match_size_value(const mnode_t *n, const bson_value_t *v)
{
	bson_iter_t it;
	int32_t k = 0;

	if (v->value_type != BSON_TYPE_ARRAY)
		return false;
	if (!bson_iter_init_from_data(&it, v->value.v_doc.data, v->value.v_doc.data_len))
		return false;
	while (bson_iter_next(&it))
		if (++k > n->u.size.n)
			return false;
	return k == n->u.size.n;
}

/* ---- bit tests ----------------------------------------------------------- */

/* Positions at or past this go to the sparse list, so {$bitsAllSet:
 * [2147483647]} does not allocate a 256 MB mask. */
#define BITS_DENSE_LIMIT 65536u

/* The mask is kept as bytes, little-endian (bit p is byte p/8, bit p%8). */
static void
mask_set_dense(mnode_t *n, uint32_t pos)
{
	uint32_t need = pos / 8 + 1;

	if (need > n->u.bits.len) {
		n->u.bits.mask = bson_realloc(n->u.bits.mask, need);
		memset(n->u.bits.mask + n->u.bits.len, 0, need - n->u.bits.len);
		n->u.bits.len = need;
	}
	n->u.bits.mask[pos / 8] |= (uint8_t)(1u << (pos % 8));
}

static void
mask_set(mnode_t *n, uint32_t pos)
{
	if (pos < BITS_DENSE_LIMIT) {
		mask_set_dense(n, pos);
		return;
	}
	n->u.bits.far = bson_realloc(n->u.bits.far, sizeof(uint32_t) * (n->u.bits.nfar + 1));
	n->u.bits.far[n->u.bits.nfar++] = pos;
}

int
match_bits_parse(mnode_t *n, const char *opname, const bson_value_t *arg, terr_t *err)
{
	char *s = NULL;
	int64_t v;
	int ret = 0;

	if (arg->value_type == BSON_TYPE_ARRAY) {
		bson_iter_t it;

		bson_iter_init_from_data(&it, arg->value.v_doc.data, arg->value.v_doc.data_len);
		while (bson_iter_next(&it)) {
			if (match_parse_int_elem(bson_iter_key(&it), bson_iter_value(&it), true, true, &v,
			                         err) != 0)
				return rewrap(err, "Failed to parse bit position. ");
			mask_set(n, (uint32_t)v);
		}
	} else if (bv_is_number(arg)) {
		RET(match_parse_int_elem(opname, arg, true, false, &v, err));
		for (uint32_t b = 0; b < 63; b++)
			if (v & ((int64_t)1 << b))
				mask_set(n, b);
	} else if (arg->value_type == BSON_TYPE_BINARY) {
		/* the mask's own bytes: as large as the filter, never larger */
		if (arg->value.v_binary.data_len > 0) {
			n->u.bits.len = arg->value.v_binary.data_len;
			n->u.bits.mask = bson_malloc(n->u.bits.len);
			memcpy(n->u.bits.mask, arg->value.v_binary.data, n->u.bits.len);
		}
	} else {
		s = match_value_str(arg);
		ret = terr_set(err, TERR_BAD_VALUE,
		               "%s takes an Array, a number, or a BinData but received: %s: %s",
		               opname, opname, s);
	}
	bson_free(s);
	return ret;
}

bool
match_bits_value(const mnode_t *n, const bson_value_t *v)
{
	const uint8_t *data;
	uint32_t len;
	uint8_t num[8];
	bool negative = false;
	bool want_set = (n->kind == MK_BITS_ALL_SET || n->kind == MK_BITS_ANY_SET);
	bool all = (n->kind == MK_BITS_ALL_SET || n->kind == MK_BITS_ALL_CLEAR);

	if (v->value_type == BSON_TYPE_BINARY) {
		data = v->value.v_binary.data;
		len = v->value.v_binary.data_len;
	} else if (bv_is_number(v)) {
		int64_t x;
		uint64_t u;

		if (v->value_type == BSON_TYPE_INT32) {
			x = v->value.v_int32;
		} else if (v->value_type == BSON_TYPE_INT64) {
			x = v->value.v_int64;
		} else if (v->value_type == BSON_TYPE_DOUBLE) {
			double d = v->value.v_double;

			if (isnan(d) || d != floor(d) || d >= 9223372036854775808.0 ||
			    d < -9223372036854775808.0)
				return false;
			x = (int64_t)d;
		} else {
			/* Decimal128 values never match bit tests (bittest.js) */
			return false;
		}
		negative = x < 0;
		u = (uint64_t)x;
		for (int i = 0; i < 8; i++)
			num[i] = (uint8_t)(u >> (8 * i));
		data = num;
		len = 8;
	} else {
		return false;
	}
	for (uint32_t i = 0; i < n->u.bits.nfar; i++) {
		uint32_t p = n->u.bits.far[i];
		bool set = p / 8 < len ? (data[p / 8] >> (p % 8)) & 1 : negative;

		if (all ? set != want_set : set == want_set)
			return !all;
	}
	for (uint32_t i = 0; i < n->u.bits.len; i++) {
		uint8_t m = n->u.bits.mask[i];
		uint8_t b = i < len ? data[i] : (negative ? 0xff : 0);

		if (m == 0)
			continue;
		if (all) {
			if (want_set ? (b & m) != m : (b & m) != 0)
				return false;
		} else {
			if (want_set ? (b & m) != 0 : (b & m) != m)
				return true;
		}
	}
	return all;
}
