/*
 * iter.h -- a lean forward iterator over the elements of one BSON document
 * or array, for the hot loops (validators, matchers) that visit every
 * element of every document.
 *
 * libbson's bson_iter_next re-validates each element as it goes, which
 * costs several times the walk itself.  biter checks what keeps it inside
 * the buffer (every element's size against the bytes that remain, key
 * terminators, the length prefixes of strings, documents and binaries, and a
 * nested document's final NUL) and bool bytes; a malformed element ends the
 * walk (biter_next returns false).  It never hands out an element libbson's
 * walk would refuse (it may stop earlier on damaged bytes); the values are
 * the same bson_value_t libbson produces, borrowed from the buffer.  For
 * documents validated on the way in, which is every stored one, both walks
 * see the same elements.
 */
#ifndef TAMGA_BSON_ITER_H
#define TAMGA_BSON_ITER_H

#include <stdbool.h>
#include <stdint.h>
#include <bson/bson.h>

typedef struct biter {
	const uint8_t *doc;       /* the document (its length prefix) */
	uint32_t doc_len;
	uint32_t next;            /* offset of the next element */
	/* the current element */
	bson_type_t type;
	const char *key;          /* NUL-terminated, inside the buffer */
	uint32_t key_len;
	uint32_t off;             /* offset of the element (its type byte) */
	const uint8_t *val;       /* the value bytes */
	uint32_t val_len;
} biter_t;

/* Start before the first element of the document at data (len bytes,
 * length prefix included).  False when the buffer cannot be a document
 * (then biter_next returns false at once). */
bool biter_init(biter_t *it, const uint8_t *data, uint32_t len);

/* The document or array a bson_value_t holds (false for other types). */
bool biter_init_value(biter_t *it, const bson_value_t *v);

/* Advance; false at the end or at a malformed element. */
bool biter_next(biter_t *it);

/* Advance to the next element named key (key_len bytes): what calling
 * biter_next until its key matches does, in one call (the path walks and
 * sort keys look fields up this way).  False when no later element has
 * that name (the walk is then at its end). */
bool biter_find(biter_t *it, const char *key, uint32_t key_len);

/* The current element's value, as bson_iter_value would give it (borrowed
 * from the buffer). */
void biter_value(const biter_t *it, bson_value_t *out);

/* ---- the walk's body, for biter_next_inline (not part of the API) ---- */

#include <string.h>

/* 1 + the value size of each fixed-size type; 0 for the types sized by
 * their value and for bytes that are no type (iter.c). */
extern const uint8_t biter_fixed_size1[256];

static inline uint32_t
biter_rd32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return BSON_UINT32_FROM_LE(v);
}

/* The first NUL in s[0..n), or NULL: a key ends there.  Keys are short, so
 * eight bytes at a time in a register beats a call to memchr. */
static inline const uint8_t *
biter_find_nul(const uint8_t *s, uint32_t n)
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
static inline uint32_t
biter_string_size(const uint8_t *v, uint32_t avail)
{
	uint32_t l;

	if (avail < 5)
		return 0;
	l = biter_rd32(v);
	if (l < 1 || l > avail - 4 || v[4 + l - 1] != 0)
		return 0;
	return 4 + l;
}

/* biter_next_inline, also giving the key's first bytes as one word: the
 * first min(key_len, 8) bytes copied into a zeroed uint64_t (memcpy order),
 * which the search for the key's end has loaded anyway.  Lookups by name
 * (the $jsonSchema properties) hash and compare that word instead of
 * reading the key again.  Same contract as biter_next. */
static inline __attribute__((always_inline)) bool
biter_next_kw(biter_t *it, uint64_t *kw)
{
	const uint8_t *d = it->doc, *z, *z2, *s;
	uint32_t end = it->doc_len - 1, p = it->next, k, v, avail, n, l, rem;
	bson_type_t t;

	if (p >= end)
		return false;
	t = (bson_type_t)d[p];
	s = d + p + 1;
	rem = end - (p + 1);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	if (rem >= 8) {
		uint64_t w, zz;

		memcpy(&w, s, 8);
		zz = (w - 0x0101010101010101ull) & ~w & 0x8080808080808080ull;
		if (zz != 0) {
			/* the lowest flag is the first NUL exactly; keep the bytes below it */
			z = s + (__builtin_ctzll(zz) >> 3);
			*kw = w & ((zz ^ (zz - 1)) >> 8);
		} else {
			*kw = w;
			if ((z = biter_find_nul(s + 8, rem - 8)) == NULL)
				goto bad;
		}
	} else
#endif
	{
		if ((z = biter_find_nul(s, rem)) == NULL)
			goto bad;
		*kw = 0;
		memcpy(kw, s, (size_t)(z - s) < 8 ? (size_t)(z - s) : 8);
	}
	k = (uint32_t)(z - d);
	v = k + 1;
	avail = end - v;
	if (biter_fixed_size1[t] != 0) {
		n = biter_fixed_size1[t] - 1u;
		if (t == BSON_TYPE_BOOL && avail >= 1 && d[v] > 1)
			goto bad;   /* libbson refuses a bool byte other than 0 or 1 */
		goto done;
	}
	switch ((int)t) {
	case BSON_TYPE_UTF8: case BSON_TYPE_CODE: case BSON_TYPE_SYMBOL:
		if ((n = biter_string_size(d + v, avail)) == 0)
			goto bad;
		break;
	case BSON_TYPE_DOCUMENT: case BSON_TYPE_ARRAY:
		if (avail < 5)
			goto bad;
		l = biter_rd32(d + v);
		if (l < 5 || l > avail || d[v + l - 1] != 0)
			goto bad;
		n = l;
		break;
	case BSON_TYPE_BINARY:
		if (avail < 5)
			goto bad;
		l = biter_rd32(d + v);
		if (l > avail - 5)
			goto bad;
		/* the old binary subtype repeats the length inside */
		if (d[v + 4] == BSON_SUBTYPE_BINARY_DEPRECATED && (l < 4 || biter_rd32(d + v + 5) != l - 4))
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
		if ((n = biter_string_size(d + v, avail)) == 0 || avail - n < 12)
			goto bad;
		n += 12;
		break;
	case BSON_TYPE_CODEWSCOPE:
		if (avail < 14)
			goto bad;
		l = biter_rd32(d + v);
		if (l < 14 || l > avail)
			goto bad;
		{
			/* total, code string, scope document: the parts must fill it */
			uint32_t sl = biter_rd32(d + v + 4), dl;
			if (sl < 1 || sl > l - 13 || d[v + 8 + sl - 1] != 0)
				goto bad;
			dl = biter_rd32(d + v + 8 + sl);
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

/* biter_next, inlined: for the loops that visit every element of every
 * document (biter_find, the $jsonSchema matcher), where the walk should
 * stay in registers.  Same contract as biter_next. */
static inline __attribute__((always_inline)) bool
biter_next_inline(biter_t *it)
{
	uint64_t unused;

	return biter_next_kw(it, &unused);
}

/* biter_init, inlined (same contract). */
static inline __attribute__((always_inline)) bool
biter_init_inline(biter_t *it, const uint8_t *data, uint32_t len)
{
	it->doc = data;
	it->doc_len = len;
	it->next = 4;
	if (data == NULL || len < 5 || biter_rd32(data) != len || data[len - 1] != 0) {
		it->doc_len = 5;   /* nothing to walk */
		return false;
	}
	return true;
}

#endif
