/*
 * keystring.c -- order-preserving binary encoding of BSON values for index
 * keys (see keystring.h for the contract, README.md for the format).
 *
 * Every encoded value is prefix-free (no encoding is a proper prefix of
 * another), so a compound key compares part by part, and inverting a part's
 * bytes (descending) exactly reverses its order.
 *
 * Value = [type byte][body].  Type bytes follow bv_type_rank(); numbers share
 * one, as do string and symbol.  Numbers: the value rounded toward -inf to a
 * double, as 8 order-preserving bytes, then 0x00 if that double is the exact
 * value, else 0x01 and the exact value in decimal (exponent + digit pairs +
 * terminator, bytes inverted for negatives).  Equal numbers of any types thus
 * give identical bytes.  Strings escape 0x00 as 00 FF and end with 00 00.
 *
 * Not here: comparing values (value.c), choosing which values a document
 * contributes to an index (index key generation, storage/query layers).
 */
#include "bson/keystring.h"
#include "bson/collation.h"
#include "bson/value.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* type bytes, ascending, spaced so future types can slot in */
enum {
	KS_END = 0x00,        /* end of an object/array body */
	KS_MINKEY = 0x0A,
	KS_UNDEFINED = 0x0F,
	KS_NULL = 0x14,
	KS_NUMBER = 0x1E,
	KS_STRING = 0x28,
	KS_OBJECT = 0x32,
	KS_ARRAY = 0x3C,
	KS_BINARY = 0x46,
	KS_OID = 0x50,
	KS_BOOL = 0x5A,
	KS_DATE = 0x64,
	KS_TIMESTAMP = 0x6E,
	KS_REGEX = 0x78,
	KS_DBPOINTER = 0x82,
	KS_CODE = 0x8C,
	KS_CODEWSCOPE = 0x96,
	KS_MAXKEY = 0xF0,
};

#define KS_SENTINEL_MIN 0x00
#define KS_SENTINEL_MAX 0xFF
#define KS_NUM_EXACT 0x00
#define KS_NUM_TAIL 0x01
#define KS_MAX_DEPTH 200

/* type-bits entries */
enum {
	TB_DOUBLE = 'd',
	TB_DOUBLE_NEG0 = 'z',
	TB_DOUBLE_NAN = 'n', /* + 8 bytes: the NaN's bits, little-endian (keeps payloads) */
	TB_INT32 = 'i',
	TB_INT64 = 'l',
	TB_DECIMAL = 'm', /* + 16 bytes: the Decimal128, low then high, little-endian */
	TB_STRING = 's',
	TB_SYMBOL = 'y',
};

void
keystring_init(keystring_t *ks)
{
	ks->buf = ks->inline_buf;
	ks->len = 0;
	ks->cap = sizeof ks->inline_buf;
}

void
keystring_reset(keystring_t *ks)
{
	ks->len = 0;
}

void
keystring_destroy(keystring_t *ks)
{
	if (ks->buf != ks->inline_buf)
		free(ks->buf);
	ks->buf = ks->inline_buf;
	ks->len = 0;
	ks->cap = sizeof ks->inline_buf;
}

static uint8_t *
ks_grow(keystring_t *ks, size_t n)
{
	if (ks->len + n > ks->cap) {
		size_t cap = ks->cap * 2;
		uint8_t *nb;

		while (cap < ks->len + n)
			cap *= 2;
		if (ks->buf == ks->inline_buf) {
			nb = malloc(cap);
			if (nb == NULL)
				abort();
			memcpy(nb, ks->inline_buf, ks->len);
		} else {
			nb = realloc(ks->buf, cap);
			if (nb == NULL)
				abort();
		}
		ks->buf = nb;
		ks->cap = cap;
	}
	ks->len += n;
	return ks->buf + ks->len - n;
}

static void
ks_byte(keystring_t *ks, uint8_t b)
{
	*ks_grow(ks, 1) = b;
}

static void
ks_bytes(keystring_t *ks, const void *p, size_t n)
{
	if (n != 0)
		memcpy(ks_grow(ks, n), p, n);
}

static void
ks_be64(keystring_t *ks, uint64_t v)
{
	uint8_t *p = ks_grow(ks, 8);
	int i;

	for (i = 7; i >= 0; i--) {
		p[i] = (uint8_t)v;
		v >>= 8;
	}
}

static void
ks_be32(keystring_t *ks, uint32_t v)
{
	uint8_t *p = ks_grow(ks, 4);

	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

/* bytes with 00 -> 00 FF, then 00 00 */
static void
ks_string(keystring_t *ks, const char *s, size_t n)
{
	const char *p = s, *end = s + n, *z;

	while (p < end && (z = memchr(p, 0, (size_t)(end - p))) != NULL) {
		ks_bytes(ks, p, (size_t)(z - p));
		ks_byte(ks, 0x00);
		ks_byte(ks, 0xFF);
		p = z + 1;
	}
	ks_bytes(ks, p, (size_t)(end - p));
	ks_byte(ks, 0x00);
	ks_byte(ks, 0x00);
}

/* ---------------------------- numbers ---------------------------- */

static uint64_t
double_order_bits(double d)
{
	uint64_t u;

	if (isnan(d))
		return 0; /* below -inf (0x000FFFFFFFFFFFFF) */
	if (d == 0.0)
		d = 0.0; /* -0 -> +0 */
	memcpy(&u, &d, 8);
	return (u >> 63) ? ~u : (u | ((uint64_t)1 << 63));
}

static double
double_from_order_bits(uint64_t u)
{
	double d;

	if (u == 0)
		return NAN;
	u = (u >> 63) ? (u & ~((uint64_t)1 << 63)) : ~u;
	memcpy(&d, &u, 8);
	return d;
}

/* Exact decimal tail: value = (-1)^neg * 0.D1..Dn * 10^x, n >= 1. */
static void
ks_num_tail(keystring_t *ks, bool neg, int x, const char *digits, int nd)
{
	uint8_t mask = neg ? 0xFF : 0x00;
	uint16_t bx = (uint16_t)(x + 0x8000);
	int i;

	ks_byte(ks, KS_NUM_TAIL);
	ks_byte(ks, (uint8_t)(bx >> 8) ^ mask);
	ks_byte(ks, (uint8_t)bx ^ mask);
	for (i = 0; i < nd; i += 2) {
		int d1 = digits[i] - '0', d2 = i + 1 < nd ? digits[i + 1] - '0' : 0;
		ks_byte(ks, (uint8_t)(d1 * 10 + d2 + 1) ^ mask);
	}
	ks_byte(ks, 0x00 ^ mask);
}

static void
ks_num_int64(keystring_t *ks, int64_t i)
{
	double d;
	char digits[24];
	uint64_t mag;
	int n, len;

	if (i >= -((int64_t)1 << 53) && i <= ((int64_t)1 << 53)) {
		ks_be64(ks, double_order_bits((double)i));
		ks_byte(ks, KS_NUM_EXACT);
		return;
	}
	/* floor to double: (double)i rounds to nearest, step down if above */
	d = (double)i;
	if (d >= 9223372036854775808.0 || (d > -9223372036854775808.0 && (int64_t)d > i))
		d = nextafter(d, -INFINITY);
	if (d >= -9223372036854775808.0 && (int64_t)d == i) {
		ks_be64(ks, double_order_bits(d));
		ks_byte(ks, KS_NUM_EXACT);
		return;
	}
	ks_be64(ks, double_order_bits(d));
	mag = i < 0 ? (uint64_t)0 - (uint64_t)i : (uint64_t)i;
	n = 0;
	{
		char tmp[24];
		while (mag != 0) {
			tmp[n++] = (char)('0' + (int)(mag % 10));
			mag /= 10;
		}
		for (len = 0; len < n; len++)
			digits[len] = tmp[n - 1 - len];
	}
	len = n;
	while (len > 0 && digits[len - 1] == '0')
		len--;
	ks_num_tail(ks, i < 0, n, digits, len);
}

static void
ks_num_decimal(keystring_t *ks, const bson_decimal128_t *dec)
{
	bv_decimal_parts_t parts;
	char digits[48];
	int x, nd;
	bool neg, exact;
	double f = bv_decimal_floor_double(dec, &exact);

	ks_be64(ks, double_order_bits(f));
	if (exact) {
		ks_byte(ks, KS_NUM_EXACT);
		return;
	}
	bv_decimal_normalize(dec, &parts, &neg, &x, digits, &nd);
	ks_num_tail(ks, neg, x, digits, nd);
}

/* ---------------------------- values ----------------------------- */

static void ks_value(keystring_t *ks, keystring_t *tb, const bson_value_t *v, const coll_t *coll);

static uint8_t
ks_type_byte(bson_type_t t)
{
	switch (t) {
	case BSON_TYPE_MINKEY: return KS_MINKEY;
	case BSON_TYPE_EOD:
	case BSON_TYPE_UNDEFINED: return KS_UNDEFINED;
	case BSON_TYPE_NULL: return KS_NULL;
	case BSON_TYPE_DOUBLE:
	case BSON_TYPE_INT32:
	case BSON_TYPE_INT64:
	case BSON_TYPE_DECIMAL128: return KS_NUMBER;
	case BSON_TYPE_UTF8:
	case BSON_TYPE_SYMBOL: return KS_STRING;
	case BSON_TYPE_DOCUMENT: return KS_OBJECT;
	case BSON_TYPE_ARRAY: return KS_ARRAY;
	case BSON_TYPE_BINARY: return KS_BINARY;
	case BSON_TYPE_OID: return KS_OID;
	case BSON_TYPE_BOOL: return KS_BOOL;
	case BSON_TYPE_DATE_TIME: return KS_DATE;
	case BSON_TYPE_TIMESTAMP: return KS_TIMESTAMP;
	case BSON_TYPE_REGEX: return KS_REGEX;
	case BSON_TYPE_DBPOINTER: return KS_DBPOINTER;
	case BSON_TYPE_CODE: return KS_CODE;
	case BSON_TYPE_CODEWSCOPE: return KS_CODEWSCOPE;
	case BSON_TYPE_MAXKEY:
	default: return KS_MAXKEY; /* invalid types never reach stored data */
	}
}

/* object/array body: ([type][name]?[body])* 00 */
static void
ks_doc_body(keystring_t *ks, keystring_t *tb, const uint8_t *data, uint32_t len, bool names,
            const coll_t *coll)
{
	bson_iter_t it;

	if (data != NULL && bson_iter_init_from_data(&it, data, len)) {
		while (bson_iter_next(&it)) {
			const bson_value_t *v = bson_iter_value(&it);
			ks_byte(ks, ks_type_byte(v->value_type));
			if (names)
				ks_string(ks, bson_iter_key(&it), bson_iter_key_len(&it));
			ks_value(ks, tb, v, coll);
		}
	}
	ks_byte(ks, KS_END);
}

/* Type bits, one entry per number or string in encoding order (see
 * keystring_append_value_tb); tb may be NULL. */
static void
tb_note(keystring_t *tb, const bson_value_t *v)
{
	if (tb == NULL)
		return;
	switch (v->value_type) {
	case BSON_TYPE_INT32:
		ks_byte(tb, TB_INT32);
		break;
	case BSON_TYPE_INT64:
		ks_byte(tb, TB_INT64);
		break;
	case BSON_TYPE_DOUBLE:
		if (isnan(v->value.v_double)) {
			uint64_t u;
			uint8_t raw[8];
			int i;
			memcpy(&u, &v->value.v_double, 8);
			for (i = 0; i < 8; i++)
				raw[i] = (uint8_t)(u >> (8 * i));
			ks_byte(tb, TB_DOUBLE_NAN);
			ks_bytes(tb, raw, 8);
		} else
			ks_byte(tb, v->value.v_double == 0.0 && signbit(v->value.v_double) ? TB_DOUBLE_NEG0 : TB_DOUBLE);
		break;
	case BSON_TYPE_DECIMAL128: {
		uint8_t raw[16];
		int i;
		for (i = 0; i < 8; i++) {
			raw[i] = (uint8_t)(v->value.v_decimal128.low >> (8 * i));
			raw[8 + i] = (uint8_t)(v->value.v_decimal128.high >> (8 * i));
		}
		ks_byte(tb, TB_DECIMAL);
		ks_bytes(tb, raw, 16);
		break;
	}
	case BSON_TYPE_UTF8:
		ks_byte(tb, TB_STRING);
		break;
	case BSON_TYPE_SYMBOL:
		ks_byte(tb, TB_SYMBOL);
		break;
	default:
		break;
	}
}

/* A string under a collation: its sort key in place of its bytes (ICU's
 * keys hold no 00, so the string framing keeps them prefix-free). */
static void
ks_collated(keystring_t *ks, const coll_t *coll, const char *s, size_t len)
{
	uint8_t stack[256], *key = stack;
	size_t n = coll_sort_key(coll, s, len, stack, sizeof stack);

	if (n >= sizeof stack) {
		key = malloc(n + 1);
		if (key == NULL)
			abort();
		n = coll_sort_key(coll, s, len, key, n + 1);
	}
	ks_string(ks, (const char *)key, n);
	if (key != stack)
		free(key);
}

/* body of v (its type byte already written) */
static void
ks_value(keystring_t *ks, keystring_t *tb, const bson_value_t *v, const coll_t *coll)
{
	tb_note(tb, v);
	switch (v->value_type) {
	case BSON_TYPE_DOUBLE:
		ks_be64(ks, double_order_bits(v->value.v_double));
		ks_byte(ks, KS_NUM_EXACT);
		break;
	case BSON_TYPE_INT32:
		ks_be64(ks, double_order_bits((double)v->value.v_int32));
		ks_byte(ks, KS_NUM_EXACT);
		break;
	case BSON_TYPE_INT64:
		ks_num_int64(ks, v->value.v_int64);
		break;
	case BSON_TYPE_DECIMAL128:
		ks_num_decimal(ks, &v->value.v_decimal128);
		break;
	case BSON_TYPE_UTF8:
		if (coll)
			ks_collated(ks, coll, v->value.v_utf8.str, v->value.v_utf8.len);
		else
			ks_string(ks, v->value.v_utf8.str, v->value.v_utf8.len);
		break;
	case BSON_TYPE_SYMBOL:
		if (coll)
			ks_collated(ks, coll, v->value.v_symbol.symbol, v->value.v_symbol.len);
		else
			ks_string(ks, v->value.v_symbol.symbol, v->value.v_symbol.len);
		break;
	case BSON_TYPE_CODE:
		ks_string(ks, v->value.v_code.code, v->value.v_code.code_len);
		break;
	case BSON_TYPE_DOCUMENT:
		ks_doc_body(ks, tb, v->value.v_doc.data, v->value.v_doc.data_len, true, coll);
		break;
	case BSON_TYPE_ARRAY:
		ks_doc_body(ks, tb, v->value.v_doc.data, v->value.v_doc.data_len, false, coll);
		break;
	case BSON_TYPE_BINARY:
		/* stored length, as bv_compare: subtype 2 keeps its inner length */
		ks_be32(ks, v->value.v_binary.data_len +
		            (v->value.v_binary.subtype == BSON_SUBTYPE_BINARY_DEPRECATED ? 4 : 0));
		ks_byte(ks, (uint8_t)v->value.v_binary.subtype);
		ks_bytes(ks, v->value.v_binary.data, v->value.v_binary.data_len);
		break;
	case BSON_TYPE_OID:
		ks_bytes(ks, v->value.v_oid.bytes, 12);
		break;
	case BSON_TYPE_BOOL:
		ks_byte(ks, v->value.v_bool ? 1 : 0);
		break;
	case BSON_TYPE_DATE_TIME:
		ks_be64(ks, (uint64_t)v->value.v_datetime ^ ((uint64_t)1 << 63));
		break;
	case BSON_TYPE_TIMESTAMP:
		ks_be32(ks, v->value.v_timestamp.timestamp);
		ks_be32(ks, v->value.v_timestamp.increment);
		break;
	case BSON_TYPE_REGEX: {
		const char *re = v->value.v_regex.regex ? v->value.v_regex.regex : "";
		const char *fl = v->value.v_regex.options ? v->value.v_regex.options : "";
		ks_string(ks, re, strlen(re));
		ks_string(ks, fl, strlen(fl));
		break;
	}
	case BSON_TYPE_DBPOINTER:
		ks_be32(ks, v->value.v_dbpointer.collection_len);
		ks_bytes(ks, v->value.v_dbpointer.collection, v->value.v_dbpointer.collection_len);
		ks_bytes(ks, v->value.v_dbpointer.oid.bytes, 12);
		break;
	case BSON_TYPE_CODEWSCOPE:
		ks_string(ks, v->value.v_codewscope.code, v->value.v_codewscope.code_len);
		ks_doc_body(ks, tb, v->value.v_codewscope.scope_data, v->value.v_codewscope.scope_len, true,
		            NULL);
		break;
	default: /* MinKey, MaxKey, Null, Undefined: the type byte says it all */
		break;
	}
}

void
keystring_append_value_tb(keystring_t *ks, keystring_t *tb, const bson_value_t *v, bool descending)
{
	keystring_append_value_tb_coll(ks, tb, v, descending, NULL);
}

void
keystring_append_value_coll(keystring_t *ks, const bson_value_t *v, bool descending,
                            const coll_t *coll)
{
	keystring_append_value_tb_coll(ks, NULL, v, descending, coll);
}

void
keystring_append_value_tb_coll(keystring_t *ks, keystring_t *tb, const bson_value_t *v,
                               bool descending, const coll_t *coll)
{
	size_t start = ks->len, i;

	ks_byte(ks, ks_type_byte(v->value_type));
	ks_value(ks, tb, v, coll);
	if (descending)
		for (i = start; i < ks->len; i++)
			ks->buf[i] = (uint8_t)~ks->buf[i];
}

static inline void
put_be64(uint8_t *p, uint64_t v)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	v = __builtin_bswap64(v);
	memcpy(p, &v, 8);
#else
	for (int i = 7; i >= 0; i--) {
		p[i] = (uint8_t)v;
		v >>= 8;
	}
#endif
}

/* The point lookup's key without ks_value's dispatch and ks_grow's check
 * per byte (~225 instructions for an int64 _id): the same bytes as the
 * cases of ks_value it covers, which test_keystring compares. */
size_t
keystring_encode_point(uint8_t *out, size_t cap, const bson_value_t *v, const coll_t *coll)
{
	double d;

	switch (v->value_type) {
	case BSON_TYPE_INT32:
		d = (double)v->value.v_int32;
		break;
	case BSON_TYPE_INT64:
		if (v->value.v_int64 < -((int64_t)1 << 53) || v->value.v_int64 > ((int64_t)1 << 53))
			return 0;   /* not exact as a double: the decimal tail */
		d = (double)v->value.v_int64;
		break;
	case BSON_TYPE_DOUBLE:
		d = v->value.v_double;
		break;
	case BSON_TYPE_OID:
		if (cap < 13)
			return 0;
		out[0] = KS_OID;
		memcpy(out + 1, v->value.v_oid.bytes, 12);
		return 13;
	case BSON_TYPE_UTF8: {
		size_t n = v->value.v_utf8.len;

		/* a collation's sort key, or a NUL to escape: the generic encoder */
		if (coll != NULL || n > cap || cap - n < 3 || memchr(v->value.v_utf8.str, 0, n) != NULL)
			return 0;
		out[0] = KS_STRING;
		memcpy(out + 1, v->value.v_utf8.str, n);
		out[n + 1] = 0x00;
		out[n + 2] = 0x00;
		return n + 3;
	}
	default:
		return 0;
	}
	if (cap < 10)
		return 0;
	out[0] = KS_NUMBER;
	put_be64(out + 1, double_order_bits(d));
	out[9] = KS_NUM_EXACT;
	return 10;
}

void
keystring_append_value(keystring_t *ks, const bson_value_t *v, bool descending)
{
	keystring_append_value_tb(ks, NULL, v, descending);
}

void
keystring_append_recid(keystring_t *ks, int64_t recid)
{
	ks_be64(ks, (uint64_t)recid ^ ((uint64_t)1 << 63));
}

int64_t
keystring_read_recid(const uint8_t *key, size_t len)
{
	uint64_t v = 0;
	size_t i;

	if (len < 8)
		return 0;
	for (i = len - 8; i < len; i++)
		v = (v << 8) | key[i];
	return (int64_t)(v ^ ((uint64_t)1 << 63));
}

void
keystring_append_min(keystring_t *ks)
{
	ks_byte(ks, KS_SENTINEL_MIN);
}

void
keystring_append_max(keystring_t *ks)
{
	ks_byte(ks, KS_SENTINEL_MAX);
}

/* ---------------------------- decoding --------------------------- */

typedef struct rd {
	const uint8_t *p, *end;
	uint8_t mask; /* 0xFF while reading a descending part */
	const uint8_t *tp, *tend; /* type bits, or NULL */
} rd_t;

static bool
tb_byte(rd_t *r, uint8_t *out)
{
	if (r->tp == NULL || r->tp >= r->tend)
		return false;
	*out = *r->tp++;
	return true;
}

static bool
rd_byte(rd_t *r, uint8_t *out)
{
	if (r->p >= r->end)
		return false;
	*out = *r->p++ ^ r->mask;
	return true;
}

static bool
rd_peek(rd_t *r, uint8_t *out)
{
	if (r->p >= r->end)
		return false;
	*out = *r->p ^ r->mask;
	return true;
}

static bool
rd_bytes(rd_t *r, uint8_t *out, size_t n)
{
	size_t i;

	if ((size_t)(r->end - r->p) < n)
		return false;
	for (i = 0; i < n; i++)
		out[i] = r->p[i] ^ r->mask;
	r->p += n;
	return true;
}

static bool
rd_be64(rd_t *r, uint64_t *out)
{
	uint8_t b[8];
	int i;

	if (!rd_bytes(r, b, 8))
		return false;
	*out = 0;
	for (i = 0; i < 8; i++)
		*out = (*out << 8) | b[i];
	return true;
}

static bool
rd_be32(rd_t *r, uint32_t *out)
{
	uint8_t b[4];

	if (!rd_bytes(r, b, 4))
		return false;
	*out = ((uint32_t)b[0] << 24) | ((uint32_t)b[1] << 16) | ((uint32_t)b[2] << 8) | b[3];
	return true;
}

/* Unescape a string; *out is malloc'd (NUL-terminated for convenience). */
static bool
rd_string(rd_t *r, char **out, size_t *outlen)
{
	size_t cap = 32, len = 0;
	char *s = malloc(cap);
	uint8_t b, n;

	if (s == NULL)
		abort();
	for (;;) {
		if (!rd_byte(r, &b))
			goto err;
		if (b == 0x00) {
			if (!rd_byte(r, &n))
				goto err;
			if (n == 0x00)
				break;
			if (n != 0xFF)
				goto err;
		}
		if (len + 2 > cap) {
			cap *= 2;
			s = realloc(s, cap);
			if (s == NULL)
				abort();
		}
		s[len++] = (char)b;
	}
	s[len] = '\0';
	*out = s;
	*outlen = len;
	return true;
err:
	free(s);
	return false;
}

static bool rd_value(rd_t *r, uint8_t type, bson_t *out, const char *key, int depth);

/* The number in the key as double (exact), int64 (other integers) or
 * decimal (the rest). */
static bool
rd_number_key(rd_t *r, bson_value_t *v)
{
	uint64_t bits;
	uint8_t flag, b0, b1, pair;
	char digits[48];
	int nd = 0, x;
	bool neg;
	double d;

	if (!rd_be64(r, &bits) || !rd_byte(r, &flag))
		return false;
	d = double_from_order_bits(bits);
	if (flag == KS_NUM_EXACT) {
		v->value_type = BSON_TYPE_DOUBLE;
		v->value.v_double = d;
		return true;
	}
	if (flag != KS_NUM_TAIL)
		return false;
	neg = d < 0;
	{
		uint8_t m = neg ? 0xFF : 0x00;
		if (!rd_byte(r, &b0) || !rd_byte(r, &b1))
			return false;
		x = (int)(((uint16_t)((b0 ^ m) << 8) | (uint8_t)(b1 ^ m))) - 0x8000;
		for (;;) {
			if (!rd_byte(r, &pair))
				return false;
			pair ^= m;
			if (pair == 0)
				break;
			if (pair > 100 || nd + 2 > 40)
				return false;
			pair--;
			digits[nd++] = (char)('0' + pair / 10);
			digits[nd++] = (char)('0' + pair % 10);
		}
	}
	while (nd > 0 && digits[nd - 1] == '0')
		nd--;
	if (nd == 0 || nd > 34)
		return false;
	/* "fold-down": a large exponent gives trailing zeros back to the
	 * coefficient (1E+6144 is 1000...0E+6111) */
	while (x - nd > 6111 && nd < 34)
		digits[nd++] = '0';
	{
		unsigned __int128 c = 0;
		int i, exp = x - nd;

		for (i = 0; i < nd; i++)
			c = c * 10 + (unsigned)(digits[i] - '0');
		/* integers that fit int64 (only int64 values and integral decimals
		 * land here) come back as int64 */
		if (exp >= 0 && x <= 19) {
			unsigned __int128 iv = c;
			for (i = 0; i < exp; i++)
				iv *= 10;
			if ((!neg && iv <= (unsigned __int128)INT64_MAX) ||
			    (neg && iv <= ((unsigned __int128)1 << 63))) {
				v->value_type = BSON_TYPE_INT64;
				v->value.v_int64 = neg ? (int64_t)(0 - (uint64_t)iv) : (int64_t)iv;
				return true;
			}
		}
		if (exp < -6176 || exp > 6111)
			return false;
		v->value_type = BSON_TYPE_DECIMAL128;
		v->value.v_decimal128 = bv_decimal_make(neg, (uint64_t)(c >> 64), (uint64_t)c, exp);
		return true;
	}
}

/* Apply the number's type bits to the value read from the key; false when
 * they do not fit it (wrong or truncated type bits). */
static bool
rd_number_typed(rd_t *r, bson_value_t *v)
{
	uint8_t t, raw[16];
	int64_t i;
	int k;
	bson_value_t dec;

	if (!tb_byte(r, &t))
		return false;
	switch (t) {
	case TB_DOUBLE:
		return v->value_type == BSON_TYPE_DOUBLE;
	case TB_DOUBLE_NEG0:
		if (v->value_type != BSON_TYPE_DOUBLE || v->value.v_double != 0.0)
			return false;
		v->value.v_double = -0.0;
		return true;
	case TB_DOUBLE_NAN: {
		uint64_t u = 0;
		if (v->value_type != BSON_TYPE_DOUBLE || !isnan(v->value.v_double) || r->tend - r->tp < 8)
			return false;
		for (k = 7; k >= 0; k--)
			u = (u << 8) | r->tp[k];
		r->tp += 8;
		memcpy(&v->value.v_double, &u, 8);
		return isnan(v->value.v_double);
	}
	case TB_INT32:
	case TB_INT64:
		if (!bv_as_int64_exact(v, &i) || (t == TB_INT32 && (i < INT32_MIN || i > INT32_MAX)))
			return false;
		if (t == TB_INT32) {
			v->value_type = BSON_TYPE_INT32;
			v->value.v_int32 = (int32_t)i;
		} else {
			v->value_type = BSON_TYPE_INT64;
			v->value.v_int64 = i;
		}
		return true;
	case TB_DECIMAL:
		if (r->tend - r->tp < 16)
			return false;
		memcpy(raw, r->tp, 16);
		r->tp += 16;
		dec.value_type = BSON_TYPE_DECIMAL128;
		dec.value.v_decimal128.low = 0;
		dec.value.v_decimal128.high = 0;
		for (k = 7; k >= 0; k--) {
			dec.value.v_decimal128.low = (dec.value.v_decimal128.low << 8) | raw[k];
			dec.value.v_decimal128.high = (dec.value.v_decimal128.high << 8) | raw[8 + k];
		}
		if (bv_compare(&dec, v) != 0)
			return false;
		*v = dec;
		return true;
	default:
		return false;
	}
}

static bool
rd_number(rd_t *r, bson_t *out, const char *key)
{
	bson_value_t v;

	if (!rd_number_key(r, &v))
		return false;
	if (r->tp != NULL && !rd_number_typed(r, &v))
		return false;
	return bv_append(out, key, -1, &v);
}

static bool
rd_doc_body(rd_t *r, bson_t *out, bool names, int depth)
{
	uint8_t t;
	uint32_t idx = 0;

	for (;;) {
		char *name = NULL;
		size_t nlen;
		char ibuf[16];
		const char *key;
		bool ok;

		if (!rd_byte(r, &t))
			return false;
		if (t == KS_END)
			return true;
		if (names) {
			if (!rd_string(r, &name, &nlen))
				return false;
			if (memchr(name, 0, nlen) != NULL) {
				free(name);
				return false;
			}
			key = name;
		} else {
			bson_uint32_to_string(idx, &key, ibuf, sizeof ibuf);
		}
		idx++;
		ok = rd_value(r, t, out, key, depth + 1);
		free(name);
		if (!ok)
			return false;
	}
}

static bool
rd_value(rd_t *r, uint8_t type, bson_t *out, const char *key, int depth)
{
	char *s = NULL, *s2 = NULL;
	size_t n, n2;
	uint8_t b, buf[12];
	uint32_t u32, u32b;
	uint64_t u64;
	bson_t child;
	bool ok = false;

	if (depth > KS_MAX_DEPTH)
		return false;
	switch (type) {
	case KS_MINKEY:
		return bson_append_minkey(out, key, -1);
	case KS_MAXKEY:
		return bson_append_maxkey(out, key, -1);
	case KS_UNDEFINED:
		return bson_append_undefined(out, key, -1);
	case KS_NULL:
		return bson_append_null(out, key, -1);
	case KS_NUMBER:
		return rd_number(r, out, key);
	case KS_STRING:
		if (!rd_string(r, &s, &n))
			return false;
		b = TB_STRING;
		if (r->tp != NULL && (!tb_byte(r, &b) || (b != TB_STRING && b != TB_SYMBOL))) {
			ok = false;
			break;
		}
		ok = b == TB_SYMBOL ? bson_append_symbol(out, key, -1, s, (int)n)
		                    : bson_append_utf8(out, key, -1, s, (int)n);
		break;
	case KS_CODE: {
		bson_value_t cv;
		if (!rd_string(r, &s, &n) || n > INT32_MAX)
			return false;
		cv.value_type = BSON_TYPE_CODE;
		cv.value.v_code.code = s;
		cv.value.v_code.code_len = (uint32_t)n;
		ok = bv_append(out, key, -1, &cv); /* keeps NUL bytes */
		break;
	}
	case KS_OBJECT:
		if (!bson_append_document_begin(out, key, -1, &child))
			return false;
		ok = rd_doc_body(r, &child, true, depth);
		return bson_append_document_end(out, &child) && ok;
	case KS_ARRAY:
		if (!bson_append_array_begin(out, key, -1, &child))
			return false;
		ok = rd_doc_body(r, &child, false, depth);
		return bson_append_array_end(out, &child) && ok;
	case KS_BINARY:
		if (!rd_be32(r, &u32) || !rd_byte(r, &b))
			return false;
		if (b == BSON_SUBTYPE_BINARY_DEPRECATED) {
			if (u32 < 4)
				return false;
			u32 -= 4;
		}
		if ((size_t)(r->end - r->p) < u32)
			return false;
		s = malloc(u32 ? u32 : 1);
		if (s == NULL)
			abort();
		rd_bytes(r, (uint8_t *)s, u32);
		ok = bson_append_binary(out, key, -1, (bson_subtype_t)b, (uint8_t *)s, u32);
		break;
	case KS_OID:
		if (!rd_bytes(r, buf, 12))
			return false;
		return bson_append_oid(out, key, -1, (const bson_oid_t *)buf);
	case KS_BOOL:
		if (!rd_byte(r, &b) || b > 1)
			return false;
		return bson_append_bool(out, key, -1, b != 0);
	case KS_DATE:
		if (!rd_be64(r, &u64))
			return false;
		return bson_append_date_time(out, key, -1, (int64_t)(u64 ^ ((uint64_t)1 << 63)));
	case KS_TIMESTAMP:
		if (!rd_be32(r, &u32) || !rd_be32(r, &u32b))
			return false;
		return bson_append_timestamp(out, key, -1, u32, u32b);
	case KS_REGEX:
		if (!rd_string(r, &s, &n) || !rd_string(r, &s2, &n2))
			break;
		ok = memchr(s, 0, n) == NULL && memchr(s2, 0, n2) == NULL &&
		     bson_append_regex(out, key, -1, s, s2);
		break;
	case KS_DBPOINTER:
		if (!rd_be32(r, &u32) || (size_t)(r->end - r->p) < (size_t)u32 + 12)
			return false;
		s = malloc((size_t)u32 + 1);
		if (s == NULL)
			abort();
		rd_bytes(r, (uint8_t *)s, u32);
		s[u32] = '\0';
		rd_bytes(r, buf, 12);
		{
			bson_value_t pv;
			pv.value_type = BSON_TYPE_DBPOINTER;
			pv.value.v_dbpointer.collection = s;
			pv.value.v_dbpointer.collection_len = u32;
			memcpy(pv.value.v_dbpointer.oid.bytes, buf, 12);
			ok = bv_append(out, key, -1, &pv);
		}
		break;
	case KS_CODEWSCOPE: {
		bson_t scope = BSON_INITIALIZER;
		if (!rd_string(r, &s, &n)) {
			bson_destroy(&scope);
			return false;
		}
		ok = n <= INT32_MAX && rd_doc_body(r, &scope, true, depth);
		if (ok) {
			bson_value_t wv;
			wv.value_type = BSON_TYPE_CODEWSCOPE;
			wv.value.v_codewscope.code = s;
			wv.value.v_codewscope.code_len = (uint32_t)n;
			wv.value.v_codewscope.scope_data = (uint8_t *)bson_get_data(&scope);
			wv.value.v_codewscope.scope_len = scope.len;
			ok = bv_append(out, key, -1, &wv);
		}
		bson_destroy(&scope);
		break;
	}
	default:
		return false;
	}
	free(s);
	free(s2);
	return ok;
}

bool
keystring_decode_values_tb(const uint8_t *key, size_t len, const uint8_t *tb, size_t tblen,
                           int nparts, const bool *descending, bson_t *out)
{
	rd_t r = {key, key + len, 0, tb, tb != NULL ? tb + tblen : NULL};
	int i;

	for (i = 0; i < nparts; i++) {
		char ibuf[16];
		const char *k;
		uint8_t t;

		r.mask = (descending != NULL && descending[i]) ? 0xFF : 0x00;
		if (!rd_peek(&r, &t))
			return false;
		r.p++;
		bson_uint32_to_string((uint32_t)i, &k, ibuf, sizeof ibuf);
		if (!rd_value(&r, t, out, k, 0))
			return false;
	}
	return r.tp == r.tend; /* every type-bits entry used */
}

bool
keystring_decode_values(const uint8_t *key, size_t len, int nparts,
                        const bool *descending, bson_t *out)
{
	return keystring_decode_values_tb(key, len, NULL, 0, nparts, descending, out);
}
