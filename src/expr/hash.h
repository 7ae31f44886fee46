/*
 * hash.h -- mongod's 64-bit hash of one BSON value (BSONElementHasher::hash64
 * with seed 0): what a hashed index stores as its key, what the planner
 * bounds a hashed field with, and what $toHashedIndexKey (mongosh's
 * convertShardKeyToHashed) returns.
 *
 * The hash is MD5 over: the seed (int32, little-endian), then the value's
 * canonical type (int32: numbers 10, strings and symbols 15, ...), then for a
 * number the int64 it truncates to (NaN 0, clamped at the int64 range,
 * 2^63 as double -2^63, decimals rounded half to even), for a document,
 * array or code-with-scope each element (canonical type, field name with its
 * NUL, value, recursively) and a closing end-of-object type 0, for anything
 * else the element's raw value bytes; the result is the digest's first 8
 * bytes read little-endian.  It lives in expr/ because $toHashedIndexKey
 * needs it and query/ (keygen, planner) sits above expr/.
 */
#ifndef TAMGA_EXPR_HASH_H
#define TAMGA_EXPR_HASH_H

#include <stdint.h>
#include <bson/bson.h>

/* The hash of v (missing: hash it as null, as mongod's keys do).  Never
 * fails; v is borrowed. */
int64_t expr_hash64(const bson_value_t *v);

#endif
