/*
 * iter.c -- the lean element walk of iter.h: sizes from the type byte and
 * length prefixes, bounds checked against the enclosing document, values
 * decoded for the common types and handed to libbson for the rare ones.
 */
#include "bson/iter.h"

#include <string.h>

static uint32_t
rd32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return BSON_UINT32_FROM_LE(v);
}

static uint64_t
rd64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return BSON_UINT64_FROM_LE(v);
}

bool
biter_init(biter_t *it, const uint8_t *data, uint32_t len)
{
	memset(it, 0, sizeof(*it));
	it->doc = data;
	it->doc_len = len;
	it->next = 4;
	if (data == NULL || len < 5 || rd32(data) != len || data[len - 1] != 0) {
		it->doc_len = 5;   /* nothing to walk */
		it->next = 4;
		return false;
	}
	return true;
}

bool
biter_init_value(biter_t *it, const bson_value_t *v)
{
	if (v->value_type != BSON_TYPE_DOCUMENT && v->value_type != BSON_TYPE_ARRAY) {
		biter_init(it, NULL, 0);
		return false;
	}
	return biter_init(it, v->value.v_doc.data, v->value.v_doc.data_len);
}

/* The first NUL in s[0..n), or NULL: a key ends there.  Keys are short, so
 * eight bytes at a time in a register beats a call to memchr. */
static inline const uint8_t *
find_nul(const uint8_t *s, uint32_t n)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	while (n >= 8) {
		uint64_t w, z;

		memcpy(&w, s, 8);
		/* a high bit set where a byte is 0 (only above a 0 byte otherwise) */
		z = (w - 0x0101010101010101ull) & ~w & 0x8080808080808080ull;
		if (z != 0)
			return s + (__builtin_ctzll(z) >> 3);
		s += 8;
		n -= 8;
	}
	for (; n > 0; s++, n--)
		if (*s == 0)
			return s;
	return NULL;
#else
	return memchr(s, 0, n);
#endif
}

/* Bytes of a string value (int32 length, bytes, NUL) starting at v with
 * avail bytes left; 0 when malformed. */
static uint32_t
string_size(const uint8_t *v, uint32_t avail)
{
	uint32_t l;

	if (avail < 5)
		return 0;
	l = rd32(v);
	if (l < 1 || l > avail - 4 || v[4 + l - 1] != 0)
		return 0;
	return 4 + l;
}

/* 1 + the value size of each fixed-size type; 0 for the types sized by
 * their value and for bytes that are no type. */
static const uint8_t fixed_size1[256] = {
	[BSON_TYPE_DOUBLE] = 9, [BSON_TYPE_UNDEFINED] = 1, [BSON_TYPE_OID] = 13, [BSON_TYPE_BOOL] = 2,
	[BSON_TYPE_DATE_TIME] = 9, [BSON_TYPE_NULL] = 1, [BSON_TYPE_INT32] = 5, [BSON_TYPE_TIMESTAMP] = 9,
	[BSON_TYPE_INT64] = 9, [BSON_TYPE_DECIMAL128] = 17, [BSON_TYPE_MAXKEY] = 1, [BSON_TYPE_MINKEY] = 1,
};

/* biter_next's body, inlined into biter_find's loop so that the walk
 * stays in registers there. */
static inline __attribute__((always_inline)) bool
step(biter_t *it)
{
	const uint8_t *d = it->doc, *z, *z2;
	uint32_t end = it->doc_len - 1, p = it->next, k, v, avail, n, l;
	bson_type_t t;

	if (p >= end)
		return false;
	t = (bson_type_t)d[p];
	if ((z = find_nul(d + p + 1, end - (p + 1))) == NULL)
		goto bad;
	k = (uint32_t)(z - d);
	v = k + 1;
	avail = end - v;
	if (fixed_size1[t] != 0) {
		n = fixed_size1[t] - 1u;
		if (t == BSON_TYPE_BOOL && avail >= 1 && d[v] > 1)
			goto bad;   /* libbson refuses a bool byte other than 0 or 1 */
		goto done;
	}
	switch ((int)t) {
	case BSON_TYPE_UTF8: case BSON_TYPE_CODE: case BSON_TYPE_SYMBOL:
		if ((n = string_size(d + v, avail)) == 0)
			goto bad;
		break;
	case BSON_TYPE_DOCUMENT: case BSON_TYPE_ARRAY:
		if (avail < 5)
			goto bad;
		l = rd32(d + v);
		if (l < 5 || l > avail || d[v + l - 1] != 0)
			goto bad;
		n = l;
		break;
	case BSON_TYPE_BINARY:
		if (avail < 5)
			goto bad;
		l = rd32(d + v);
		if (l > avail - 5)
			goto bad;
		/* the old binary subtype repeats the length inside */
		if (d[v + 4] == BSON_SUBTYPE_BINARY_DEPRECATED && (l < 4 || rd32(d + v + 5) != l - 4))
			goto bad;
		n = 5 + l;
		break;
	case BSON_TYPE_REGEX:
		if ((z2 = memchr(d + v, 0, avail)) == NULL)
			goto bad;
		if ((z2 = memchr(z2 + 1, 0, (size_t)(d + end - (z2 + 1)))) == NULL)
			goto bad;
		n = (uint32_t)(z2 - (d + v)) + 1;
		break;
	case BSON_TYPE_DBPOINTER:
		if ((n = string_size(d + v, avail)) == 0 || avail - n < 12)
			goto bad;
		n += 12;
		break;
	case BSON_TYPE_CODEWSCOPE:
		if (avail < 14)
			goto bad;
		l = rd32(d + v);
		if (l < 14 || l > avail)
			goto bad;
		{
			/* total, code string, scope document: the parts must fill it */
			uint32_t sl = rd32(d + v + 4), dl;
			if (sl < 1 || sl > l - 13 || d[v + 8 + sl - 1] != 0)
				goto bad;
			dl = rd32(d + v + 8 + sl);
			if (dl < 5 || 8 + sl + dl != l || d[v + l - 1] != 0)
				goto bad;
		}
		n = l;
		break;
	default:
		goto bad;
	}
done:
	if (n > avail)
		goto bad;
	it->type = t;
	it->key = (const char *)(d + p + 1);
	it->key_len = k - (p + 1);
	it->off = p;
	it->val = d + v;
	it->val_len = n;
	it->next = v + n;
	return true;
bad:
	it->next = end;
	return false;
}

bool
biter_next(biter_t *it)
{
	return step(it);
}

bool
biter_find(biter_t *it, const char *key, uint32_t key_len)
{
	biter_t c = *it;

	while (step(&c)) {
		if (c.key_len == key_len && (key_len == 0 || c.key[0] == key[0]) &&
		    memcmp(c.key, key, key_len) == 0) {
			*it = c;
			return true;
		}
	}
	*it = c;
	return false;
}

void
biter_value(const biter_t *it, bson_value_t *out)
{
	const uint8_t *v = it->val;
	uint64_t u;

	memset(out, 0, sizeof(*out));
	out->value_type = it->type;
	switch ((int)it->type) {
	case BSON_TYPE_DOUBLE:
		u = rd64(v);
		memcpy(&out->value.v_double, &u, 8);
		return;
	case BSON_TYPE_UTF8:
		out->value.v_utf8.str = (char *)(v + 4);
		out->value.v_utf8.len = rd32(v) - 1;
		return;
	case BSON_TYPE_DOCUMENT: case BSON_TYPE_ARRAY:
		out->value.v_doc.data = (uint8_t *)v;
		out->value.v_doc.data_len = it->val_len;
		return;
	case BSON_TYPE_OID:
		memcpy(out->value.v_oid.bytes, v, 12);
		return;
	case BSON_TYPE_BOOL:
		out->value.v_bool = v[0] != 0;
		return;
	case BSON_TYPE_DATE_TIME:
		out->value.v_datetime = (int64_t)rd64(v);
		return;
	case BSON_TYPE_INT32:
		out->value.v_int32 = (int32_t)rd32(v);
		return;
	case BSON_TYPE_INT64:
		out->value.v_int64 = (int64_t)rd64(v);
		return;
	case BSON_TYPE_NULL: case BSON_TYPE_UNDEFINED: case BSON_TYPE_MINKEY: case BSON_TYPE_MAXKEY:
		return;
	default: {
		/* the rare types, as libbson decodes them */
		bson_iter_t bi;
		if (bson_iter_init_from_data_at_offset(&bi, it->doc, it->doc_len, it->off, it->key_len))
			*out = *bson_iter_value(&bi);
		else
			out->value_type = BSON_TYPE_EOD;
		return;
	}
	}
}
