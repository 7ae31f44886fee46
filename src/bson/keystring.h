/*
 * keystring.h -- order-preserving binary keys (MongoDB's KeyString idea).
 *
 * keystring_append_value() encodes a BSON value so that memcmp() order of the
 * encodings equals bv_compare() order of the values (and equal values, e.g.
 * int32 1 and double 1.0, encode to identical bytes).  A compound key is the
 * concatenation of its parts; a descending part is encoded with every byte
 * inverted.  WiredTiger tables keyed with these bytes (key_format=u) therefore
 * iterate in MongoDB's order.  A RecordId may be appended for non-unique
 * indexes (keystring_append_recid) and read back from the end of a key.
 *
 * The encoding is not meant to be decoded back to BSON except where covered
 * queries need it (keystring_decode_value); it is stable on disk: changing it
 * is a format change.
 */
#ifndef TAMGA_BSON_KEYSTRING_H
#define TAMGA_BSON_KEYSTRING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <bson/bson.h>

/* buf points into inline_buf until the key outgrows it, so a keystring_t
 * must not be copied by value (copy ks.buf[0..len) instead). */
typedef struct keystring {
	uint8_t *buf;   /* owned; grows as needed */
	size_t len;
	size_t cap;
	uint8_t inline_buf[128];
} keystring_t;

void keystring_init(keystring_t *ks);
void keystring_reset(keystring_t *ks);      /* len = 0, keeps memory */
void keystring_destroy(keystring_t *ks);

/* Append one value; descending inverts its bytes. */
void keystring_append_value(keystring_t *ks, const bson_value_t *v, bool descending);
/* Append a RecordId (int64, order-preserving, fixed 8 bytes big-endian with sign flipped). */
void keystring_append_recid(keystring_t *ks, int64_t recid);
/* Read the RecordId appended last to key of len bytes. */
int64_t keystring_read_recid(const uint8_t *key, size_t len);

/* Bounds helpers for range scans: one byte (0x00 / 0xFF) that sorts before /
 * after every encoded value, ascending or descending, in the same position;
 * so prefix+min <= prefix+value+... <= prefix+max. */
void keystring_append_min(keystring_t *ks);
void keystring_append_max(keystring_t *ks);

/*
 * Decode the nparts values at the start of key back into BSON (appended to
 * out under keys "0","1",...; descending flags as encoded).  Every type
 * decodes; the result compares equal (bv_compare) to what was encoded and
 * re-encodes to the same bytes.  Numbers lose their BSON type (equal numbers
 * share one encoding): a value a double holds exactly decodes as a double,
 * other integers in int64 range as int64, the rest as Decimal128 (with
 * trailing zeros dropped: 1.50 -> 1.5).  Symbols decode as strings; the
 * _tb variant below restores both exactly.  Array field names are not kept
 * ("0","1",... come back).  Returns false on a malformed key (out may then
 * hold a partial result).
 */
bool keystring_decode_values(const uint8_t *key, size_t len, int nparts,
                             const bool *descending, bson_t *out);

/*
 * Type bits: what a key leaves out so that equal values share one encoding,
 * namely each number's BSON type (int32/int64/double, a double's -0, a
 * decimal's exact digits and exponent) and string vs symbol.  MongoDB keeps
 * the same information next to its KeyStrings for covered queries.  NaN
 * payloads are kept too.
 *
 * keystring_append_value_tb does what keystring_append_value does and also
 * appends the value's type bits to tb (a separate buffer, never part of the
 * key; tb may be NULL).  Store tb next to the key (for example in the index
 * entry's value).  keystring_decode_values_tb then gives back the exact
 * original values: same types, 1.50 stays 1.50, -0.0 stays -0.0.  It
 * returns false for a malformed key, or when tb does not belong to the key
 * or is not used up.  tb is always read forwards: descending parts do not
 * invert it.
 */
void keystring_append_value_tb(keystring_t *ks, keystring_t *tb, const bson_value_t *v,
                               bool descending);
/*
 * Under a collation (bson/collation.h; NULL = the functions above): strings
 * and symbols, also inside documents and arrays, are encoded as the
 * collation's sort key, so memcmp order equals bv_compare_coll order and
 * strings the collation finds equal encode alike (MongoDB's collation-aware
 * index keys).  Such strings cannot be decoded back: a key with collated
 * strings gives their sort-key bytes, never the original text, so covered
 * reads must not return string fields from a collated index.
 */
typedef struct coll coll_t;
void keystring_append_value_coll(keystring_t *ks, const bson_value_t *v, bool descending,
                                 const coll_t *coll);
/*
 * The key of one scalar as keystring_append_value_coll(ks, v, false, coll)
 * writes it, into out (cap bytes) without the generic encoder: the point
 * lookup's fast path (an _id equality).  Covers int32, int64 within +-2^53,
 * doubles, ObjectIds, and strings without a NUL when no collation
 * applies (coll NULL).  Returns the key's length, or 0 -- nothing written
 * that counts -- for anything else (a collated string, a large int64, other
 * types, too small a buffer): the caller then uses the generic
 * encoder, which gives the same bytes for what is covered.
 */
size_t keystring_encode_point(uint8_t *out, size_t cap, const bson_value_t *v, const coll_t *coll);
void keystring_append_value_tb_coll(keystring_t *ks, keystring_t *tb, const bson_value_t *v,
                                    bool descending, const coll_t *coll);
bool keystring_decode_values_tb(const uint8_t *key, size_t len, const uint8_t *tb, size_t tblen,
                                int nparts, const bool *descending, bson_t *out);

#endif
