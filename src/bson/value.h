/*
 * value.h -- BSON values in MongoDB's order.
 *
 * The comparison every other layer sorts, matches and indexes by:
 *   MinKey < Undefined < Null < numbers < Symbol/String < Object <
 *   Array < BinData < ObjectId < Boolean < Date < Timestamp < Regex < DBPointer
 *   < Code < CodeWScope < MaxKey
 * (MongoDB's canonical type order, src/mongo/bson/bsontypes.cpp canonicalizeBSONType).
 * Numbers (int32, int64, double, Decimal128) compare by exact mathematical
 * value across types; NaN equals NaN and sorts below every other number.
 * Strings compare by bytes (simple collation).  Objects compare field by
 * field (type rank, then name, then value), arrays element by element.
 *
 * Values are borrowed bson_value_t (e.g. from bson_iter_value(), which does
 * not copy); nothing here allocates except where stated.
 */
#ifndef TAMGA_BSON_VALUE_H
#define TAMGA_BSON_VALUE_H

#include <stdbool.h>
#include <stdint.h>
#include <bson/bson.h>

/* Rank of a type in MongoDB's canonical order, with MongoDB's numbers
 * (canonicalizeBSONType): MinKey -1, EOD/Undefined 0, Null 5, numbers 10,
 * String/Symbol 15, Object 20, Array 25, BinData 30, ObjectId 35, Bool 40,
 * Date 45, Timestamp 47, Regex 50, DBPointer 55, Code 60, CodeWScope 65,
 * MaxKey 127.  (Undefined sorts below Null, as in mongod.)  Invalid type
 * codes get 200 so corrupt input never crashes. */
int bv_type_rank(bson_type_t t);

/* <0, 0, >0: a before, equal to, after b in MongoDB's order. */
int bv_compare(const bson_value_t *a, const bson_value_t *b);

/* bv_compare under a collation (bson/collation.h; NULL = simple): strings
 * and symbols, also inside documents and arrays, compare by the collation;
 * field names and every other type as bv_compare.  Two different strings
 * may compare equal ("a" and "A" at strength 2). */
typedef struct coll coll_t;
int bv_compare_coll(const bson_value_t *a, const bson_value_t *b, const coll_t *coll);
bool bv_equal_coll(const bson_value_t *a, const bson_value_t *b, const coll_t *coll);

/* Same as bv_compare for two whole documents (field names count). */
int bv_compare_docs(const bson_t *a, const bson_t *b);

/* bv_compare(a, b) == 0 (so 1 == 1.0 == NumberDecimal("1.00")). */
bool bv_equal(const bson_value_t *a, const bson_value_t *b);

/* A 64-bit hash that agrees with bv_compare equality under the simple
 * collation: values that compare equal hash alike (1, 1.0, NumberLong(1),
 * NumberDecimal("1.00"); {a: 1} and {a: 1.0}; "x" and Symbol("x")).  For
 * hash-based $group, $addToSet, distinct.  Computed over the value's
 * keystring, so it costs an encoding (no allocation below 128 bytes). */
uint64_t bv_hash(const bson_value_t *v);
/* The hash that agrees with bv_compare_coll equality (strings hashed by
 * their collation sort key). */
uint64_t bv_hash_coll(const bson_value_t *v, const coll_t *coll);

bool bv_is_number(const bson_value_t *v);
bool bv_is_nan(const bson_value_t *v);

/* Numeric helpers: the value as double (Decimal128 rounded to nearest;
 * 0.0 for non-numbers), and whether the value is an integer that fits int64
 * exactly (out gets it; false for non-numbers, NaN, fractions, overflow). */
double bv_as_double(const bson_value_t *v);
bool bv_as_int64_exact(const bson_value_t *v, int64_t *out);

/* Decimal128 helpers: exact comparison (NaN == NaN, lowest; -0 == 0;
 * 1.0 == 1), from int64 (exact), from double (as mongod: 15 significant
 * digits, see bv_decimal_from_double_digits), to double (nearest). */
int bv_decimal_compare(const bson_decimal128_t *a, const bson_decimal128_t *b);
bson_decimal128_t bv_decimal_from_double(double d);
bson_decimal128_t bv_decimal_from_int64(int64_t i);
double bv_decimal_to_double(const bson_decimal128_t *d);

/* Double -> Decimal128 the way mongod converts by default: rounded
 * (half-even) to exactly 15 significant digits, trailing zeros kept
 * (1.0 -> 1.00000000000000, 0.1 -> 0.100000000000000); 0, -0, inf, NaN map
 * to their decimal counterparts.  bv_decimal_from_double above is this with
 * ndigits = 15; ndigits 34 is mongod's kRoundTo34Digits. */
bson_decimal128_t bv_decimal_from_double_digits(double d, int ndigits);

/* Decoded Decimal128 (IEEE 754-2008 BID as libbson stores it).  For FINITE,
 * value = (-1)^negative * coef * 10^exponent with coef = coef_hi:coef_lo
 * (< 10^34; non-canonical coefficients decode as 0, per the spec). */
typedef enum { BV_DEC_FINITE, BV_DEC_NAN, BV_DEC_POS_INF, BV_DEC_NEG_INF } bv_dec_kind_t;
typedef struct bv_decimal_parts {
	bv_dec_kind_t kind;
	bool negative;
	int exponent;      /* -6176 .. 6111 */
	uint64_t coef_hi;  /* high 49 bits used */
	uint64_t coef_lo;
} bv_decimal_parts_t;
void bv_decimal_decode(const bson_decimal128_t *d, bv_decimal_parts_t *out);
/* Build a finite Decimal128; coef must be < 10^34, exponent in range. */
bson_decimal128_t bv_decimal_make(bool negative, uint64_t coef_hi, uint64_t coef_lo, int exponent);
/* The largest double <= d (round toward -inf), exactly computed; *exact is
 * true when that double equals d.  NaN/inf map to NaN/inf (exact); values
 * beyond the double range give +-DBL_MAX or -inf accordingly (-1e400 -> -inf,
 * inexact), tiny positives give 0.0 (inexact). */
double bv_decimal_floor_double(const bson_decimal128_t *d, bool *exact);
/* Normal form of a finite decimal: value = (-1)^neg * 0.D1D2..Dn * 10^x with
 * digits "D1..Dn" (no leading/trailing zeros, NUL-terminated, buffer >= 40
 * bytes), ndigits = 0 for zero.  parts receives the decoded form; for
 * non-finite values ndigits = 0 and parts->kind says which. */
void bv_decimal_normalize(const bson_decimal128_t *d, bv_decimal_parts_t *parts,
                          bool *negative, int *x, char *digits, int *ndigits);

/* MongoDB's type name for $type and errors: "double", "string", "object",
 * "array", "binData", "undefined", "objectId", "bool", "date", "null",
 * "regex", "dbPointer", "javascript", "symbol", "javascriptWithScope", "int",
 * "timestamp", "long", "decimal", "minKey", "maxKey"; "missing" for EOD. */
const char *bv_type_name(bson_type_t t);
/* Inverse of bv_type_name; false for unknown names (and for "missing" and
 * "number", which are not single types: callers handle those aliases). */
bool bv_type_from_name(const char *name, bson_type_t *out);

/* Append v to doc under key (keylen -1: NUL-terminated); any type, including
 * documents and arrays, and Code/CodeWScope/DBPointer strings with embedded
 * NUL bytes (which bson_append_value would cut).  Returns false when libbson
 * refuses (key with a NUL, document too large). */
bool bv_append(bson_t *doc, const char *key, int keylen, const bson_value_t *v);

/* Append n bytes of encoded elements (a run of whole elements cut from a
 * valid document: type byte, key, value, ...) to doc as they are: one copy
 * instead of one append per field.  doc may be a child being built
 * (bson_append_document_begin); then the bytes take one more copy.  False
 * when doc would pass 2 GB. */
bool bv_append_raw(bson_t *doc, const uint8_t *elems, uint32_t n);

/* The array key of position i ("0", "1", ... "4294967295") written to buf
 * (at least 11 bytes, NUL-terminated); returns its length.  What
 * bson_uint32_to_string gives, without the snprintf it uses past 999 (a
 * third of the cost of copying a 200-byte document into a batch). */
size_t bv_array_key(uint32_t i, char *buf);

/* Render a value the way mongod prints one inside error messages
 * (BSONElement::toString, non-full form): 1, 1.5, 2.0, 1e+20.0 (sic), long as
 * plain digits, decimals as their string, "abc" (not escaped; longer than 159
 * bytes cut to 150 + ...), ObjectId('hex'), new Date(ms), Timestamp(s, i),
 * /re/flags, BinData(sub, HEX) / UUID("..."), true, null, undefined, MinKey,
 * { a: 1 }, [ 1, 2 ], {} and [].  Nesting deeper than 100 prints "...".
 * Caller bson_free()s. */
char *bv_to_mongo_string(const bson_value_t *v);
/* Same for a whole document: "{ a: 1, b: \"x\" }". */
char *bv_doc_to_mongo_string(const bson_t *doc);

#endif
