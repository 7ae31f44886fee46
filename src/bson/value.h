/*
 * value.h -- BSON values in MongoDB's order.
 *
 * The comparison every other layer sorts, matches and indexes by:
 *   MinKey < Undefined(=Null rank) < Null < numbers < Symbol/String < Object <
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

/* Rank of a type in MongoDB's canonical order (numbers share one rank, as do
 * string and symbol; null and undefined share one).  MinKey lowest. */
int bv_type_rank(bson_type_t t);

/* <0, 0, >0: a before, equal to, after b in MongoDB's order. */
int bv_compare(const bson_value_t *a, const bson_value_t *b);

/* Same as bv_compare for two whole documents (field names count). */
int bv_compare_docs(const bson_t *a, const bson_t *b);

/* Compare without looking at field names of top-level object (used by sort
 * keys); equivalent to bv_compare for non-documents. */
bool bv_equal(const bson_value_t *a, const bson_value_t *b);

bool bv_is_number(const bson_value_t *v);
bool bv_is_nan(const bson_value_t *v);

/* Numeric helpers: the value as double (Decimal128 rounded), and whether an
 * integral number fits in int64 exactly (out gets it). */
double bv_as_double(const bson_value_t *v);
bool bv_as_int64_exact(const bson_value_t *v, int64_t *out);

/* Decimal128 <-> double/int64, exact where possible (used by comparison and
 * by arithmetic in higher layers). */
int bv_decimal_compare(const bson_decimal128_t *a, const bson_decimal128_t *b);
bson_decimal128_t bv_decimal_from_double(double d);
bson_decimal128_t bv_decimal_from_int64(int64_t i);
double bv_decimal_to_double(const bson_decimal128_t *d);

/* MongoDB's type name for $type and errors: "double", "string", "object",
 * "array", "binData", "undefined", "objectId", "bool", "date", "null",
 * "regex", "dbPointer", "javascript", "symbol", "javascriptWithScope", "int",
 * "timestamp", "long", "decimal", "minKey", "maxKey"; "missing" for EOD. */
const char *bv_type_name(bson_type_t t);
/* Inverse of bv_type_name; returns false for unknown names. */
bool bv_type_from_name(const char *name, bson_type_t *out);

/* Append v to doc under key (any type, including documents and arrays). */
bool bv_append(bson_t *doc, const char *key, int keylen, const bson_value_t *v);

/* Render a value the way mongod prints one inside error messages
 * ({ _id: 1 }, "abc", ObjectId('...'), ...).  Caller bson_free()s. */
char *bv_to_mongo_string(const bson_value_t *v);
/* Same for a whole document: "{ a: 1, b: \"x\" }". */
char *bv_doc_to_mongo_string(const bson_t *doc);

#endif
