/*
 * bsoncolumn.h -- MongoDB's BSONColumn binary format (BinData subtype 7),
 * the columns of compressed (control.version 2) time-series buckets.
 *
 * A column is a sequence of elements, some of them missing.  The format
 * (mongod's src/mongo/bson/column/): uncompressed literals (a BSON element
 * with an empty name), runs of Simple-8b words behind a control byte
 * (high nibble: 0x8 plain, 0x9-0xD a double's decimal scale 10^0..10^8; low
 * nibble: words - 1) holding zigzag deltas -- or deltas of deltas for
 * dates, timestamps and ObjectIds -- from the value before, missing values
 * as all-ones slots, runs of a repeated slot as RLE words; and interleaved
 * runs of objects (0xF0/0xF1/0xF2, a reference object, then one delta
 * stream per scalar of it, their blocks in the order a reader needs them,
 * closed by an EOO byte).  The column ends with an EOO byte.
 *
 * Not here: which fields of a bucket are columns and the bucket's control
 * document (ts_bucket_v2.c).
 */
#ifndef TAMGA_TIMESERIES_BSONCOLUMN_H
#define TAMGA_TIMESERIES_BSONCOLUMN_H

#include <stdint.h>
#include <bson/bson.h>

#include "common/error.h"

/*
 * Decode the column (data, len: the binary's bytes, borrowed) into out
 * (initialised by the caller): element i, when present, appended under
 * key "i" -- a v1 bucket column.  *count (when not NULL) gets the number
 * of elements, missing ones included.  Malformed input: 2 BadValue
 * ("Invalid BSONColumn encoding ..."), out then holds a prefix.
 */
int bsoncolumn_decode(const uint8_t *data, uint32_t len, bson_t *out, int *count, terr_t *err);

/*
 * Encode n elements into a new BSONColumn binary (*data, bson_malloc'd,
 * the caller frees with bson_free; *len its size).  col is a v1 bucket
 * column: element i is the value under key "i" (keys in increasing order),
 * absent keys are missing elements; values under other keys or past n are
 * an error (2).  Doubles get the smallest decimal scale that represents
 * them exactly (else their bit patterns), objects interleaved runs, every
 * other type deltas when the format has them and literals otherwise.
 */
int bsoncolumn_encode(const bson_t *col, int n, uint8_t **data, uint32_t *len, terr_t *err);

#endif
