/*
 * cs_token.c -- change-stream resume tokens: mongod's KeyString (V1,
 * ascending) of the token's values, as upper-case hex (see cs_token.h).
 *
 * The KeyString here is mongod's own byte format, not Tamga's index keys
 * (bson/keystring.c): a value is its type byte (mongod's CType) and body;
 * integers are (magnitude << 1) in as few big-endian bytes as they need,
 * after a type byte that says how many; strings escape 0x00 as 00 FF and
 * end with 00; a document is its elements, each the element's generic
 * type byte, its name and 00, then its value, and a closing 00.
 * Non-integral doubles and decimals are written as their integer part
 * (with the fraction bit set) followed by the double's 8 bytes, which sorts
 * them among integers but is not mongod's exact fraction encoding.
 */
#include "repl/cs_token.h"

#include <math.h>
#include <string.h>

#include "common/mem.h"

enum {
	KS_MINKEY = 10, KS_UNDEFINED = 15, KS_NULL = 20, KS_NUMERIC = 30, KS_NUM_NAN = 30,
	KS_NUM_NEG_LARGE = 31, KS_NUM_NEG_8 = 32, KS_NUM_NEG_1 = 39, KS_NUM_NEG_SMALL = 40,
	KS_NUM_ZERO = 41, KS_NUM_POS_SMALL = 42, KS_NUM_POS_1 = 43, KS_NUM_POS_8 = 50,
	KS_NUM_POS_LARGE = 51, KS_STRING = 60, KS_OBJECT = 70, KS_ARRAY = 80, KS_BINDATA = 90,
	KS_OID = 100, KS_FALSE = 110, KS_TRUE = 111, KS_DATE = 120, KS_TIMESTAMP = 130,
	KS_REGEX = 140, KS_DBREF = 150, KS_CODE = 160, KS_CODEWSCOPE = 170, KS_MAXKEY = 240,
	KS_END = 4,
};

#define KS_MAX_DEPTH 200

/* The KeyString and its TypeBits (mongod's key_string::TypeBits: the BSON
 * types the KeyString's values lose -- a bit per string, kString 0 /
 * kSymbol 1; two per number, kInt 0, kLong 1, kDouble 2, high bit first;
 * packed from the low bit of each byte). */
typedef struct buf {
	uint8_t *p;
	size_t len, cap;
	uint8_t tb[127];
	uint32_t tb_n;            /* bits appended */
	bool tb_one;              /* a bit set: the token carries _typeBits */
	bool tb_lost;             /* a value whose type bits are not written (decimals): none */
} buf_t;

static void
tb_bit(buf_t *b, unsigned bit)
{
	if (b->tb_n >= 8 * sizeof(b->tb)) {
		b->tb_lost = true;
		return;
	}
	if (b->tb_n % 8 == 0)
		b->tb[b->tb_n / 8] = (uint8_t)bit;
	else
		b->tb[b->tb_n / 8] |= (uint8_t)(bit << (b->tb_n % 8));
	b->tb_one |= bit != 0;
	b->tb_n++;
}

enum { TB_INT = 0, TB_LONG = 1, TB_DOUBLE = 2 };

static void
tb_num(buf_t *b, unsigned kind)
{
	tb_bit(b, kind >> 1);
	tb_bit(b, kind & 1);
}

static void
put(buf_t *b, const void *d, size_t n)
{
	if (b->len + n > b->cap) {
		size_t cap = b->cap ? b->cap * 2 : 128;
		while (cap < b->len + n)
			cap *= 2;
		b->p = bson_realloc(b->p, cap);
		b->cap = cap;
	}
	memcpy(b->p + b->len, d, n);
	b->len += n;
}

static void
put1(buf_t *b, uint8_t c)
{
	put(b, &c, 1);
}

static void
put_be(buf_t *b, uint64_t v, int n, bool invert)
{
	uint8_t tmp[8];

	for (int i = n - 1; i >= 0; i--) {
		tmp[i] = (uint8_t)(invert ? ~v : v);
		v >>= 8;
	}
	put(b, tmp, (size_t)n);
}

/* mongod's _appendPreshiftedIntegerPortion. */
static void
put_shifted(buf_t *b, uint64_t value, bool negative)
{
	int bytes = 0;

	for (uint64_t v = value; v != 0; v >>= 8)
		bytes++;
	if (bytes == 0)
		bytes = 1;
	put1(b, (uint8_t)(negative ? KS_NUM_NEG_1 - (bytes - 1) : KS_NUM_POS_1 + (bytes - 1)));
	put_be(b, value, bytes, negative);
}

static void
put_int(buf_t *b, int64_t n)
{
	if (n == 0) {
		put1(b, KS_NUM_ZERO);
		return;
	}
	if (n == INT64_MIN) {
		/* -2^63 has no positive int64 magnitude: its 63 bits shifted */
		put_shifted(b, 0, true);
		put_be(b, UINT64_C(1) << 63, 8, true);
		return;
	}
	put_shifted(b, (uint64_t)(n < 0 ? -n : n) << 1, n < 0);
}

static void
put_double(buf_t *b, double d)
{
	bool neg = d < 0;
	double mag = neg ? -d : d;
	uint64_t bits;

	if (isnan(d)) {
		put1(b, KS_NUM_NAN);
		return;
	}
	if (d == 0) {
		put1(b, KS_NUM_ZERO);
		return;
	}
	if (mag < 9223372036854775808.0 && (double)(uint64_t)mag == mag) {
		put_shifted(b, (uint64_t)mag << 1, neg);
		return;
	}
	if (mag >= 9223372036854775808.0) {
		put1(b, neg ? KS_NUM_NEG_LARGE : KS_NUM_POS_LARGE);
		memcpy(&bits, &mag, 8);
		put_be(b, bits, 8, neg);
		return;
	}
	if ((uint64_t)mag == 0)
		put1(b, neg ? KS_NUM_NEG_SMALL : KS_NUM_POS_SMALL);
	else
		put_shifted(b, ((uint64_t)mag << 1) | 1, neg);
	memcpy(&bits, &mag, 8);
	put_be(b, bits, 8, neg);
}

static void
put_cstring(buf_t *b, const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		put1(b, (uint8_t)s[i]);
		if (s[i] == '\0')
			put1(b, 0xFF);
	}
	put1(b, 0);
}

static uint8_t
generic_type(bson_type_t t)
{
	switch (t) {
	case BSON_TYPE_MINKEY: return KS_MINKEY;
	case BSON_TYPE_MAXKEY: return KS_MAXKEY;
	case BSON_TYPE_NULL: return KS_NULL;
	case BSON_TYPE_UNDEFINED: return KS_UNDEFINED;
	case BSON_TYPE_DOUBLE: case BSON_TYPE_INT32: case BSON_TYPE_INT64: case BSON_TYPE_DECIMAL128:
		return KS_NUMERIC;
	case BSON_TYPE_UTF8: case BSON_TYPE_SYMBOL: return KS_STRING;
	case BSON_TYPE_DOCUMENT: return KS_OBJECT;
	case BSON_TYPE_ARRAY: return KS_ARRAY;
	case BSON_TYPE_BINARY: return KS_BINDATA;
	case BSON_TYPE_OID: return KS_OID;
	case BSON_TYPE_BOOL: return KS_FALSE;
	case BSON_TYPE_DATE_TIME: return KS_DATE;
	case BSON_TYPE_TIMESTAMP: return KS_TIMESTAMP;
	case BSON_TYPE_REGEX: return KS_REGEX;
	case BSON_TYPE_DBPOINTER: return KS_DBREF;
	case BSON_TYPE_CODE: return KS_CODE;
	case BSON_TYPE_CODEWSCOPE: return KS_CODEWSCOPE;
	default: return KS_NULL;
	}
}

static void put_value(buf_t *b, const bson_iter_t *it, int depth);

static void
put_doc_body(buf_t *b, const uint8_t *data, uint32_t len, bool array, int depth)
{
	bson_t d;
	bson_iter_t it;

	if (depth < KS_MAX_DEPTH && bson_init_static(&d, data, len) && bson_iter_init(&it, &d)) {
		while (bson_iter_next(&it)) {
			if (!array) {
				put1(b, generic_type(bson_iter_type(&it)));
				put(b, bson_iter_key(&it), strlen(bson_iter_key(&it)) + 1);
			}
			put_value(b, &it, depth + 1);
		}
	}
	put1(b, 0);
}

static void
put_value(buf_t *b, const bson_iter_t *it, int depth)
{
	uint32_t len;
	const uint8_t *data;
	const char *s;

	switch (bson_iter_type(it)) {
	case BSON_TYPE_MINKEY: put1(b, KS_MINKEY); break;
	case BSON_TYPE_MAXKEY: put1(b, KS_MAXKEY); break;
	case BSON_TYPE_UNDEFINED: put1(b, KS_UNDEFINED); break;
	case BSON_TYPE_INT32: put_int(b, bson_iter_int32(it)); tb_num(b, TB_INT); break;
	case BSON_TYPE_INT64: put_int(b, bson_iter_int64(it)); tb_num(b, TB_LONG); break;
	case BSON_TYPE_DOUBLE: {
		double d = bson_iter_double(it);
		put_double(b, d);
		if (d == 0 && signbit(d)) {
			/* kV1NegativeDoubleZero, five bits 0b11000 */
			for (int k = 4; k >= 0; k--)
				tb_bit(b, (0x18u >> k) & 1);
		} else {
			tb_num(b, TB_DOUBLE);
		}
		break;
	}
	case BSON_TYPE_DECIMAL128: {
		b->tb_lost = true;
		bson_decimal128_t dec;
		char str[BSON_DECIMAL128_STRING];
		bson_iter_decimal128(it, &dec);
		bson_decimal128_to_string(&dec, str);
		put_double(b, strtod(str, NULL));
		break;
	}
	case BSON_TYPE_UTF8:
		s = bson_iter_utf8(it, &len);
		put1(b, KS_STRING);
		put_cstring(b, s, len);
		tb_bit(b, 0);
		break;
	case BSON_TYPE_SYMBOL:
		s = bson_iter_symbol(it, &len);
		put1(b, KS_STRING);
		put_cstring(b, s, len);
		tb_bit(b, 1);
		break;
	case BSON_TYPE_DOCUMENT:
		bson_iter_document(it, &len, &data);
		put1(b, KS_OBJECT);
		put_doc_body(b, data, len, false, depth);
		break;
	case BSON_TYPE_ARRAY:
		bson_iter_array(it, &len, &data);
		put1(b, KS_ARRAY);
		put_doc_body(b, data, len, true, depth);
		break;
	case BSON_TYPE_BINARY: {
		bson_subtype_t st;
		bson_iter_binary(it, &st, &len, &data);
		put1(b, KS_BINDATA);
		if (len < 0xFF) {
			put1(b, (uint8_t)len);
		} else {
			put1(b, 0xFF);
			put_be(b, len, 4, false);
		}
		put1(b, (uint8_t)st);
		put(b, data, len);
		break;
	}
	case BSON_TYPE_OID:
		put1(b, KS_OID);
		put(b, bson_iter_oid(it)->bytes, 12);
		break;
	case BSON_TYPE_BOOL: put1(b, bson_iter_bool(it) ? KS_TRUE : KS_FALSE); break;
	case BSON_TYPE_DATE_TIME:
		put1(b, KS_DATE);
		put_be(b, (uint64_t)bson_iter_date_time(it) ^ (UINT64_C(1) << 63), 8, false);
		break;
	case BSON_TYPE_TIMESTAMP: {
		uint32_t t, i;
		bson_iter_timestamp(it, &t, &i);
		put1(b, KS_TIMESTAMP);
		put_be(b, ((uint64_t)t << 32) | i, 8, false);
		break;
	}
	case BSON_TYPE_REGEX: {
		const char *opts;
		s = bson_iter_regex(it, &opts);
		put1(b, KS_REGEX);
		put(b, s, strlen(s) + 1);
		put(b, opts, strlen(opts) + 1);
		break;
	}
	case BSON_TYPE_CODE:
		s = bson_iter_code(it, &len);
		put1(b, KS_CODE);
		put_cstring(b, s, len);
		break;
	case BSON_TYPE_CODEWSCOPE: {
		uint32_t slen;
		s = bson_iter_codewscope(it, &len, &slen, &data);
		put1(b, KS_CODEWSCOPE);
		put_cstring(b, s, len);
		put_doc_body(b, data, slen, false, depth);
		break;
	}
	case BSON_TYPE_DBPOINTER: {
		const bson_oid_t *oid;
		bson_iter_dbpointer(it, &len, &s, &oid);
		put1(b, KS_DBREF);
		put_be(b, len, 4, false);
		put(b, s, len);
		put(b, oid->bytes, 12);
		break;
	}
	default:
		put1(b, KS_NULL);
		break;
	}
}

/* Encode t into b (its KeyString and type bits). */
static void
encode(const cs_token_t *t, buf_t *b)
{
	put1(b, KS_TIMESTAMP);
	put_be(b, t->ts, 8, false);
	put_int(b, t->version);
	tb_num(b, TB_INT);
	put_int(b, t->type);
	tb_num(b, TB_INT);
	put_int(b, t->txn_op_index);
	tb_num(b, TB_INT);
	put1(b, t->from_invalidate ? KS_TRUE : KS_FALSE);
	if (t->has_uuid) {
		put1(b, KS_BINDATA);
		put1(b, 16);
		put1(b, BSON_SUBTYPE_UUID);
		put(b, t->uuid, 16);
	} else {
		put1(b, KS_NULL);
	}
	if (t->event_id != NULL) {
		put1(b, KS_OBJECT);
		put_doc_body(b, bson_get_data(t->event_id), t->event_id->len, false, 0);
	}
	if (t->fragment >= 0) {
		put_int(b, t->fragment);
		tb_num(b, TB_INT);
	}
	put1(b, KS_END);
}

static char *
to_hex(const uint8_t *p, size_t n)
{
	static const char hexd[] = "0123456789ABCDEF";
	char *out = bson_malloc(n * 2 + 1);

	for (size_t i = 0; i < n; i++) {
		out[2 * i] = hexd[p[i] >> 4];
		out[2 * i + 1] = hexd[p[i] & 15];
	}
	out[n * 2] = '\0';
	return out;
}

char *
cs_token_hex(const cs_token_t *t)
{
	buf_t b = {0};
	char *out;

	encode(t, &b);
	out = to_hex(b.p, b.len);
	bson_free(b.p);
	return out;
}

char *
cs_token_append_id(bson_t *out, const char *key, const cs_token_t *t)
{
	buf_t b = {0};
	bson_t d;
	char *hex;

	encode(t, &b);
	hex = to_hex(b.p, b.len);
	bson_append_document_begin(out, key, -1, &d);
	bson_append_utf8(&d, "_data", 5, hex, -1);
	if (b.tb_one && !b.tb_lost) {
		/* mongod's TypeBits::getBuffer: one data byte alone when its high
		 * bit is clear, else a size byte (0x80 | count) before them */
		uint8_t buf[1 + sizeof(b.tb)];
		uint32_t n = (b.tb_n + 7) / 8;
		size_t len;
		if (n == 1 && !(b.tb[0] & 0x80)) {
			buf[0] = b.tb[0];
			len = 1;
		} else {
			buf[0] = (uint8_t)(0x80 | n);
			memcpy(buf + 1, b.tb, n);
			len = n + 1;
		}
		bson_append_binary(&d, "_typeBits", 9, BSON_SUBTYPE_BINARY, buf, (uint32_t)len);
	}
	bson_append_document_end(out, &d);
	bson_free(b.p);
	return hex;
}

char *
cs_token_hwm_hex(repl_ts_t ts)
{
	cs_token_t t = {.ts = ts, .version = CS_TOKEN_VERSION, .type = CS_TOKEN_HWM, .fragment = -1};

	return cs_token_hex(&t);
}

/* The hex of fragment number n's KeyString value followed by the end byte. */
static char *
fragment_suffix(int32_t n)
{
	static const char hexd[] = "0123456789ABCDEF";
	buf_t b = {0};
	char *out;

	put_int(&b, n);
	put1(&b, KS_END);
	out = bson_malloc(b.len * 2 + 1);
	for (size_t i = 0; i < b.len; i++) {
		out[2 * i] = hexd[b.p[i] >> 4];
		out[2 * i + 1] = hexd[b.p[i] & 15];
	}
	out[b.len * 2] = '\0';
	bson_free(b.p);
	return out;
}

char *
cs_token_hex_fragment(const char *hex, int32_t n)
{
	size_t len = strlen(hex);
	char *suf, *out;

	if (len < 2 || n < 0)
		return NULL;
	suf = fragment_suffix(n);
	out = bson_malloc(len - 2 + strlen(suf) + 1);
	memcpy(out, hex, len - 2);
	strcpy(out + len - 2, suf);
	bson_free(suf);
	return out;
}

char *
cs_token_hex_unfragment(const char *hex, int32_t n)
{
	size_t len = strlen(hex), sl;
	char *suf, *out = NULL;

	if (n < 0)
		return NULL;
	suf = fragment_suffix(n);
	sl = strlen(suf);
	if (len > sl && strcmp(hex + len - sl, suf) == 0) {
		out = bson_malloc(len - sl + 3);
		memcpy(out, hex, len - sl);
		strcpy(out + len - sl, "04");
	}
	bson_free(suf);
	return out;
}

void
cs_token_append(bson_t *out, const char *key, const char *hex)
{
	bson_t d;

	bson_append_document_begin(out, key, -1, &d);
	bson_append_utf8(&d, "_data", 5, hex, -1);
	bson_append_document_end(out, &d);
}

/* ---- parsing ------------------------------------------------------------- */

typedef struct rd {
	const uint8_t *p, *end;
} rd_t;

/* The kind of the next value read by read_value. */
enum { V_BAD = -1, V_INT, V_OTHER_NUM, V_TS, V_BOOL, V_UUID, V_BIN, V_NULL, V_OBJECT, V_END, V_OTHER };

static bool
skip_cstring(rd_t *r, bool escaped)
{
	while (r->p < r->end) {
		uint8_t c = *r->p++;
		if (c == 0) {
			if (escaped && r->p < r->end && *r->p == 0xFF) {
				r->p++;
				continue;
			}
			return true;
		}
	}
	return false;
}

static bool
need(rd_t *r, size_t n)
{
	return (size_t)(r->end - r->p) >= n;
}

static int skip_body(rd_t *r, uint8_t type, int depth, int64_t *ival, bool *bval, uint8_t *uuid);

/* The body of a document or array (after its type byte), up to its 00. */
static bool
skip_elements(rd_t *r, bool named, int depth)
{
	if (depth > KS_MAX_DEPTH)
		return false;
	while (need(r, 1)) {
		uint8_t t = *r->p++;
		if (t == 0)
			return true;
		if (named) {
			/* generic type, name, then the value with its own type */
			if (!skip_cstring(r, false) || !need(r, 1))
				return false;
			t = *r->p++;
		}
		if (skip_body(r, t, depth + 1, NULL, NULL, NULL) == V_BAD)
			return false;
	}
	return false;
}

static int
skip_body(rd_t *r, uint8_t type, int depth, int64_t *ival, bool *bval, uint8_t *uuid)
{
	if (type >= KS_NUM_NEG_8 && type <= KS_NUM_POS_8 && type != KS_NUM_NEG_SMALL && type != KS_NUM_ZERO &&
	    type != KS_NUM_POS_SMALL) {
		bool neg = type < KS_NUM_ZERO;
		int n = neg ? KS_NUM_NEG_1 - type + 1 : type - KS_NUM_POS_1 + 1;
		uint64_t v = 0;
		if (!need(r, (size_t)n))
			return V_BAD;
		for (int i = 0; i < n; i++)
			v = (v << 8) | (uint8_t)(neg ? ~r->p[i] : r->p[i]);
		r->p += n;
		if (v & 1) {
			/* a fraction follows (this encoder's form) */
			if (!need(r, 8))
				return V_BAD;
			r->p += 8;
			return V_OTHER_NUM;
		}
		if (ival != NULL)
			*ival = neg ? -(int64_t)(v >> 1) : (int64_t)(v >> 1);
		return V_INT;
	}
	switch (type) {
	case KS_NUM_ZERO:
		if (ival != NULL)
			*ival = 0;
		return V_INT;
	case KS_NUM_NAN:
		return V_OTHER_NUM;
	case KS_NUM_NEG_LARGE: case KS_NUM_POS_LARGE: case KS_NUM_NEG_SMALL: case KS_NUM_POS_SMALL:
		if (!need(r, 8))
			return V_BAD;
		r->p += 8;
		return V_OTHER_NUM;
	case KS_MINKEY: case KS_MAXKEY: case KS_UNDEFINED:
		return V_OTHER;
	case KS_NULL:
		return V_NULL;
	case KS_FALSE: case KS_TRUE:
		if (bval != NULL)
			*bval = type == KS_TRUE;
		return V_BOOL;
	case KS_STRING: case KS_CODE:
		return skip_cstring(r, true) ? V_OTHER : V_BAD;
	case KS_OBJECT:
		return skip_elements(r, true, depth) ? V_OBJECT : V_BAD;
	case KS_ARRAY:
		return skip_elements(r, false, depth) ? V_OTHER : V_BAD;
	case KS_BINDATA: {
		uint32_t len;
		uint8_t st;
		if (!need(r, 1))
			return V_BAD;
		len = *r->p++;
		if (len == 0xFF) {
			if (!need(r, 4))
				return V_BAD;
			len = ((uint32_t)r->p[0] << 24) | ((uint32_t)r->p[1] << 16) | ((uint32_t)r->p[2] << 8) | r->p[3];
			r->p += 4;
		}
		if (!need(r, 1))
			return V_BAD;
		st = *r->p++;
		if (!need(r, len))
			return V_BAD;
		if (st == BSON_SUBTYPE_UUID && len == 16) {
			if (uuid != NULL)
				memcpy(uuid, r->p, 16);
			r->p += len;
			return V_UUID;
		}
		r->p += len;
		return V_BIN;
	}
	case KS_OID:
		if (!need(r, 12))
			return V_BAD;
		r->p += 12;
		return V_OTHER;
	case KS_DATE:
		if (!need(r, 8))
			return V_BAD;
		r->p += 8;
		return V_OTHER;
	case KS_TIMESTAMP:
		if (!need(r, 8))
			return V_BAD;
		if (ival != NULL) {
			uint64_t v = 0;
			for (int i = 0; i < 8; i++)
				v = (v << 8) | r->p[i];
			*ival = (int64_t)v;
		}
		r->p += 8;
		return V_TS;
	case KS_REGEX:
		return skip_cstring(r, false) && skip_cstring(r, false) ? V_OTHER : V_BAD;
	case KS_CODEWSCOPE:
		return skip_cstring(r, true) && skip_elements(r, true, depth) ? V_OTHER : V_BAD;
	case KS_DBREF: {
		uint32_t len;
		if (!need(r, 4))
			return V_BAD;
		len = ((uint32_t)r->p[0] << 24) | ((uint32_t)r->p[1] << 16) | ((uint32_t)r->p[2] << 8) | r->p[3];
		r->p += 4;
		if (!need(r, (size_t)len + 12))
			return V_BAD;
		r->p += len + 12;
		return V_OTHER;
	}
	case KS_END:
		return V_END;
	default:
		return V_BAD;
	}
}

/* The next top-level value; V_END at the end byte or the end of the key. */
static int
next_value(rd_t *r, int64_t *ival, bool *bval, uint8_t *uuid, uint8_t *type)
{
	if (!need(r, 1))
		return V_END;
	*type = *r->p++;
	return skip_body(r, *type, 0, ival, bval, uuid);
}

#define BAD_KS() terr_set(err, 50811, "KeyString format error: Unknown type: %u", (unsigned)type)

int
cs_token_parse(const bson_t *doc, cs_token_t *t, char **hex, terr_t *err)
{
	bson_iter_t it;
	const char *s;
	uint32_t len;
	uint8_t *bytes = NULL, type = 0;
	char *str = NULL;
	rd_t r;
	int64_t iv = 0;
	bool bv = false;
	int k, ret = -1;

	memset(t, 0, sizeof(*t));
	t->fragment = -1;
	*hex = NULL;
	if (!bson_iter_init_find(&it, doc, "_data") || !BSON_ITER_HOLDS_UTF8(&it)) {
		char *j = bson_as_relaxed_extended_json(doc, NULL);
		terr_set(err, 40647, "Bad resume token: _data of missing or of wrong type. Expected string, got %s",
		    j != NULL ? j : "{}");
		bson_free(j);
		return -1;
	}
	s = bson_iter_utf8(&it, &len);
	if (bson_iter_init_find(&it, doc, "_typeBits")) {
		bson_subtype_t st = BSON_SUBTYPE_BINARY;
		uint32_t bl;
		const uint8_t *bd;
		if (BSON_ITER_HOLDS_BINARY(&it))
			bson_iter_binary(&it, &st, &bl, &bd);
		if (!BSON_ITER_HOLDS_BINARY(&it) || st != BSON_SUBTYPE_BINARY) {
			char *j = bson_as_relaxed_extended_json(doc, NULL);
			terr_set(err, 40648, "Bad resume token: _typeBits of wrong type %s", j != NULL ? j : "{}");
			bson_free(j);
			return -1;
		}
	}
	if (len % 2 != 0)
		return terr_set(err, TERR_FAILED_TO_PARSE, "resume token string was not a valid hex string");
	bytes = bson_malloc(len / 2 + 1);
	str = bson_malloc(len + 1);
	for (uint32_t i = 0; i < len; i++) {
		char c = s[i];
		int v = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 :
		    c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
		if (v < 0) {
			ret = terr_set(err, TERR_FAILED_TO_PARSE, "resume token string was not a valid hex string");
			goto err;
		}
		str[i] = "0123456789ABCDEF"[v];
		if (i % 2 == 0)
			bytes[i / 2] = (uint8_t)(v << 4);
		else
			bytes[i / 2] |= (uint8_t)v;
	}
	str[len] = '\0';
	r.p = bytes;
	r.end = bytes + len / 2;

	/* clusterTime */
	k = next_value(&r, &iv, NULL, NULL, &type);
	if (k == V_END) {
		ret = terr_set(err, 40649, "invalid empty resume token");
		goto err;
	}
	if (k == V_BAD) {
		ret = BAD_KS();
		goto err;
	}
	t->ts = k == V_TS ? (repl_ts_t)iv : 0;
	/* version */
	k = next_value(&r, &iv, NULL, NULL, &type);
	if (k == V_END) {
		ret = terr_set(err, 50796, "Resume Token does not contain version");
		goto err;
	}
	if (k == V_BAD) {
		ret = BAD_KS();
		goto err;
	}
	if (k != V_INT || iv < INT32_MIN || iv > INT32_MAX) {
		ret = terr_set(err, 50854, "Invalid resume token: wrong type for version");
		goto err;
	}
	if (iv < 0 || iv > 2) {
		ret = terr_set(err, 50795, "Invalid Resume Token: only supports version 0, 1 and 2");
		goto err;
	}
	t->version = (int)iv;
	t->type = CS_TOKEN_EVENT;
	if (t->version >= 1) {
		k = next_value(&r, &iv, NULL, NULL, &type);
		if (k == V_END) {
			ret = terr_set(err, 51055, "Resume Token does not contain tokenType");
			goto err;
		}
		if (k == V_BAD) {
			ret = BAD_KS();
			goto err;
		}
		if (k != V_INT || iv < INT32_MIN || iv > INT32_MAX) {
			ret = terr_set(err, 51056, "Resume Token tokenType is not an int.");
			goto err;
		}
		if (iv != CS_TOKEN_EVENT && iv != CS_TOKEN_HWM) {
			ret = terr_set(err, 51057, "Token type %d not recognized", (int)iv);
			goto err;
		}
		t->type = (int)iv;
	}
	k = next_value(&r, &iv, NULL, NULL, &type);
	if (k == V_END) {
		ret = terr_set(err, 50793, "Resume Token does not contain txnOpIndex");
		goto err;
	}
	if (k == V_BAD) {
		ret = BAD_KS();
		goto err;
	}
	if (k != V_INT || iv < INT32_MIN || iv > INT32_MAX) {
		ret = terr_set(err, 50855, "Resume Token txnOpIndex is not an integer");
		goto err;
	}
	if (iv < 0) {
		ret = terr_set(err, 50794, "Invalid Resume Token: txnOpIndex should be non-negative");
		goto err;
	}
	t->txn_op_index = (int32_t)iv;
	if (t->version >= 1) {
		k = next_value(&r, NULL, &bv, NULL, &type);
		if (k == V_END) {
			ret = terr_set(err, 50872, "Resume Token does not contain fromInvalidate");
			goto err;
		}
		if (k == V_BAD) {
			ret = BAD_KS();
			goto err;
		}
		if (k != V_BOOL) {
			ret = terr_set(err, 50870, "Resume Token fromInvalidate is not a boolean.");
			goto err;
		}
		t->from_invalidate = bv;
	}
	k = next_value(&r, NULL, NULL, t->uuid, &type);
	if (k == V_BAD) {
		ret = BAD_KS();
		goto err;
	}
	if (k == V_END) {
		if (t->version > 1) {
			ret = terr_set(err, 6189500, "Expected UUID or null");
			goto err;
		}
		goto done;
	}
	if (k == V_UUID) {
		t->has_uuid = true;
	} else if (k != V_NULL) {
		ret = terr_set(err, TERR_BAD_VALUE, "Invalid UUID");
		goto err;
	}
	k = next_value(&r, &iv, NULL, NULL, &type);
	if (k == V_BAD) {
		ret = BAD_KS();
		goto err;
	}
	if (t->type == CS_TOKEN_HWM && k != V_END) {
		ret = terr_set(err, 6189504, "Invalid high water mark token");
		goto err;
	}
	if (k == V_END) {
		if (t->type == CS_TOKEN_EVENT && t->version >= 2) {
			ret = terr_set(err, 6189501, "Expected an eventIdentifier for an event resume token");
			goto err;
		}
		goto done;
	}
	if (k != V_OBJECT) {
		ret = terr_set(err, 6189503, "Resume Token eventIdentifier is not an object");
		goto err;
	}
	t->has_event_id = true;
	k = next_value(&r, &iv, NULL, NULL, &type);
	if (k == V_BAD) {
		ret = BAD_KS();
		goto err;
	}
	if (k != V_END && t->version >= 2) {
		if (k != V_INT || iv < 0 || iv > INT32_MAX) {
			ret = terr_set(err, 7182501, "Resume token 'fragmentNum' must be a non-negative integer.");
			goto err;
		}
		t->fragment = (int32_t)iv;
		k = next_value(&r, &iv, NULL, NULL, &type);
	}
	if (k != V_END) {
		ret = terr_set(err, 40646, "invalid oversized resume token");
		goto err;
	}
done:
	*hex = str;
	str = NULL;
	ret = 0;
err:
	bson_free(bytes);
	bson_free(str);
	return ret;
}
