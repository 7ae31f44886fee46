/*
 * expr_hash.c -- BSONElementHasher::hash64 (see hash.h for the byte stream
 * it digests).  OpenSSL's MD5 does the digest; the rest is walking values
 * as mongod's recursiveHash walks BSON elements.
 */
#include "expr/hash.h"

#include <math.h>
#include <string.h>
#include <openssl/evp.h>

#include "bson/value.h"
#include "expr/decimal.h"

static int32_t
canonical_type(bson_type_t t)
{
	switch (t) {
	case BSON_TYPE_MINKEY: return -1;
	case BSON_TYPE_MAXKEY: return 127;
	case BSON_TYPE_EOD: case BSON_TYPE_UNDEFINED: return 0;
	case BSON_TYPE_NULL: return 5;
	case BSON_TYPE_DOUBLE: case BSON_TYPE_INT32: case BSON_TYPE_INT64: case BSON_TYPE_DECIMAL128: return 10;
	case BSON_TYPE_UTF8: case BSON_TYPE_SYMBOL: return 15;
	case BSON_TYPE_DOCUMENT: return 20;
	case BSON_TYPE_ARRAY: return 25;
	case BSON_TYPE_BINARY: return 30;
	case BSON_TYPE_OID: return 35;
	case BSON_TYPE_BOOL: return 40;
	case BSON_TYPE_DATE_TIME: return 45;
	case BSON_TYPE_TIMESTAMP: return 47;
	case BSON_TYPE_REGEX: return 50;
	case BSON_TYPE_DBPOINTER: return 55;
	case BSON_TYPE_CODE: return 60;
	case BSON_TYPE_CODEWSCOPE: return 65;
	default: return 0;
	}
}

static void
put_le32(EVP_MD_CTX *h, int32_t v)
{
	uint8_t b[4];
	uint32_t u = (uint32_t)v;

	for (int i = 0; i < 4; i++)
		b[i] = (uint8_t)(u >> (8 * i));
	EVP_DigestUpdate(h, b, 4);
}

static void
put_le64(EVP_MD_CTX *h, int64_t v)
{
	uint8_t b[8];
	uint64_t u = (uint64_t)v;

	for (int i = 0; i < 8; i++)
		b[i] = (uint8_t)(u >> (8 * i));
	EVP_DigestUpdate(h, b, 8);
}

/* safeNumberLongForHash. */
static int64_t
number_for_hash(const bson_iter_t *it)
{
	switch (bson_iter_type(it)) {
	case BSON_TYPE_INT32:
		return bson_iter_int32(it);
	case BSON_TYPE_INT64:
		return bson_iter_int64(it);
	case BSON_TYPE_DOUBLE: {
		double d = bson_iter_double(it);
		if (isnan(d))
			return 0;
		if (d == 9223372036854775808.0)
			return INT64_MIN;   /* the old overflowing cast, kept */
		if (!(d < 9223372036854775808.0))
			return INT64_MAX;
		if (d < -9223372036854775808.0)
			return INT64_MIN;
		return (int64_t)d;
	}
	case BSON_TYPE_DECIMAL128: {
		bson_decimal128_t d;
		int64_t out;
		bson_iter_decimal128(it, &d);
		if (expr_decimal_is_nan(d))
			return 0;
		if (expr_decimal_cmp(d, expr_decimal_from_int64(INT64_MAX)) > 0)
			return INT64_MAX;
		if (expr_decimal_cmp(d, expr_decimal_from_int64(INT64_MIN)) < 0)
			return INT64_MIN;
		/* Decimal128::toLong's default: half to even */
		if (!expr_decimal_to_int64(expr_decimal_to_integral(d, 0), &out))
			return 0;
		return out;
	}
	default:
		return 0;
	}
}

static void hash_element(EVP_MD_CTX *h, const bson_iter_t *it, bool with_name, int depth);

/* Each element of the embedded document at data, then the EOO element. */
static void
hash_members(EVP_MD_CTX *h, const uint8_t *data, uint32_t len, int depth)
{
	bson_iter_t sub;

	if (depth < 200 && bson_iter_init_from_data(&sub, data, len))
		while (bson_iter_next(&sub))
			hash_element(h, &sub, true, depth + 1);
	put_le32(h, 0);   /* EOO: type 0, no name, no value */
}

static void
hash_element(EVP_MD_CTX *h, const bson_iter_t *it, bool with_name, int depth)
{
	bson_type_t t = bson_iter_type(it);
	/* the value follows the type byte and the NUL-terminated name */
	uint32_t voff = it->off + 1 + bson_iter_key_len(it) + 1;
	const uint8_t *value = it->raw + voff;
	uint32_t vlen = it->next_off > voff ? it->next_off - voff : 0;

	put_le32(h, canonical_type(t));
	if (with_name)
		EVP_DigestUpdate(h, bson_iter_key(it), bson_iter_key_len(it) + 1);
	switch (t) {
	case BSON_TYPE_INT32: case BSON_TYPE_INT64: case BSON_TYPE_DOUBLE: case BSON_TYPE_DECIMAL128:
		put_le64(h, number_for_hash(it));
		break;
	case BSON_TYPE_DOCUMENT: case BSON_TYPE_ARRAY: {
		const uint8_t *d;
		uint32_t l;
		if (t == BSON_TYPE_DOCUMENT)
			bson_iter_document(it, &l, &d);
		else
			bson_iter_array(it, &l, &d);
		hash_members(h, d, l, depth);
		break;
	}
	case BSON_TYPE_CODEWSCOPE: {
		uint32_t clen = 0, slen = 0;
		const uint8_t *scope = NULL;
		const char *code = bson_iter_codewscope(it, &clen, &slen, &scope);
		EVP_DigestUpdate(h, code, (size_t)clen + 1);
		hash_members(h, scope, slen, depth);
		break;
	}
	default:
		EVP_DigestUpdate(h, value, vlen);
		break;
	}
}

int64_t
expr_hash64(const bson_value_t *v)
{
	bson_value_t null_v = {.value_type = BSON_TYPE_NULL};
	uint8_t md[EVP_MAX_MD_SIZE];
	unsigned int mdlen = 0;
	EVP_MD_CTX *h;
	bson_t doc;
	bson_iter_t it;
	uint64_t r = 0;

	if (v->value_type == BSON_TYPE_EOD)
		v = &null_v;
	bson_init(&doc);
	bv_append(&doc, "", 0, v);
	h = EVP_MD_CTX_new();
	EVP_DigestInit_ex(h, EVP_md5(), NULL);
	put_le32(h, 0);   /* the seed */
	if (bson_iter_init(&it, &doc) && bson_iter_next(&it))
		hash_element(h, &it, false, 0);
	EVP_DigestFinal_ex(h, md, &mdlen);
	EVP_MD_CTX_free(h);
	bson_destroy(&doc);
	for (int i = 7; i >= 0; i--)
		r = (r << 8) | md[i];
	return (int64_t)r;
}
