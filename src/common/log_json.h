/*
 * log_json.h -- the JSON encoding of log lines' attributes, as mongod's logv2
 * writes them (relaxed extended JSON v2.0.0, compact, as its
 * ExtendedRelaxedV200Generator).
 *
 * It differs from libbson's relaxed extended JSON where mongod's does:
 * a BinData of subtype 4 (UUID) of 16 bytes is {"$uuid":"8-4-4-4-12 hex"},
 * other BinData {"$binary":{"base64":...,"subType":"<hex, no padding>"}};
 * a finite double is its shortest round-trip digits without a forced ".0"
 * (fmt's "{}"), NaN/Infinity {"$numberDouble":...}; a date from 1970 to
 * 9999 is {"$date":"YYYY-MM-DDTHH:MM:SS.mmmZ"} (milliseconds always), any
 * other {"$date":{"$numberLong":...}}; a DBPointer {"$ref":...,"$id":...};
 * strings escaped as mongod's str::escapeForJSON (control bytes and C1
 * controls as \u00hh, invalid UTF-8 as \ufffd); no whitespace.
 */
#ifndef TAMGA_COMMON_LOG_JSON_H
#define TAMGA_COMMON_LOG_JSON_H

#include <bson/bson.h>

/* Append doc (borrowed; as an object, or as an array when is_array) to s.
 * A document that cannot be iterated appends "{}". */
void tlog_json_doc(bson_string_t *s, const bson_t *doc, bool is_array);

/* Append the JSON string of the len bytes at v (quoted and escaped). */
void tlog_json_str(bson_string_t *s, const char *v, size_t len);

#endif
