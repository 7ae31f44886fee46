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

/*
 * Appending to a column without encoding it again (buckets are compressed
 * from their first measurement, as mongod 8.0+ writes them).
 *
 * An append re-encodes only the column's tail -- its last Simple-8b word
 * (or literal) and what comes after -- from the reader's state where the
 * tail starts, which the append before it left in a bsoncolumn_tail_t.
 * The bytes before the tail never change, except the control byte of the
 * block the tail continues (its word count), so a writer stores the
 * change as a few bytes (bsoncolumn_edit_t).  Columns holding objects
 * (interleaved runs) keep their whole run in the tail.
 */
typedef struct bsoncolumn_elem {
	uint8_t type;                /* BSON type; 0: missing */
	const uint8_t *v;            /* the value's bytes as in a BSON element (borrowed) */
	uint32_t vlen;
} bsoncolumn_elem_t;

typedef struct bsoncolumn_tail bsoncolumn_tail_t;

/* What an append changed: the column is its first keep bytes (with the
 * byte at patch_at replaced by patch when patch_at >= 0; patch_at < keep)
 * followed by bytes[0..len) (bson_malloc'd, ending with the EOO byte). */
typedef struct bsoncolumn_edit {
	uint32_t keep;
	int64_t patch_at;
	uint8_t patch;
	uint8_t *bytes;
	uint32_t len;
} bsoncolumn_edit_t;

/*
 * Append v[0..n) to the column col (len bytes holding count elements; NULL
 * and 0: a column that does not exist yet, of count missing elements).
 * prev: the state the append that wrote col left (borrowed; NULL, or one
 * that does not describe col byte for byte: col is decoded and written
 * again whole, keep 0).  On success *edit holds the change (the caller
 * frees edit->bytes) and *next a new state for the next append to the
 * result (the caller frees it with bsoncolumn_tail_free; prev is not
 * changed, so an aborted write keeps using it).  Errors (2): a malformed
 * col, CodeWScope, more than 2^24 elements.
 */
int bsoncolumn_append(const uint8_t *col, uint32_t len, int count, const bsoncolumn_tail_t *prev,
                      const bsoncolumn_elem_t *v, int n, bsoncolumn_edit_t *edit, bsoncolumn_tail_t **next,
                      terr_t *err);
void bsoncolumn_tail_free(bsoncolumn_tail_t *t);
/* Bytes a tail state holds (memory accounting). */
size_t bsoncolumn_tail_size(const bsoncolumn_tail_t *t);

#endif
