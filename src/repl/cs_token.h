/*
 * cs_token.h -- change-stream resume tokens in mongod's form.
 *
 * A resume token is {_data: "<hex>"} where the hex string is mongod's
 * KeyString (version 1, ascending) of the values
 *   clusterTime (Timestamp), version (int), tokenType (int: 0 high-water
 *   mark, 128 event), txnOpIndex (int), fromInvalidate (bool),
 *   uuid (BinData 4, or null from version 2), eventIdentifier (document,
 *   events only), fragmentNum (int, $changeStreamSplitLargeEvent only)
 * followed by the KeyString end byte (4).  The encoding sorts as the
 * values do, so tokens compare by their hex strings (upper case): a later
 * event's token is greater, and a high-water mark at ts sorts before every
 * event at ts.  Tokens this module writes are version 2 (mongod 7.0+'s
 * default): eventIdentifier is {operationType, documentKey} for CRUD
 * events and {operationType, operationDescription} for DDL events.
 *
 * Only what the token's own prefix holds is decoded (the eventIdentifier
 * is compared as bytes, never rebuilt): cs_token_parse checks the whole
 * KeyString structure for the types it knows (every BSON type but
 * non-integral doubles and decimals, which the encoder writes in a form of
 * its own: see README) and answers mongod's codes for a malformed token.
 * mongod's `_typeBits` (the BSON types of numbers inside documentKey,
 * other than int32) are written with events' tokens (cs_token_append_id)
 * but for decimals, whose KeyString is not mongod's; a `_typeBits` given
 * back is checked for its type and ignored (tokens compare by _data).
 */
#ifndef TAMGA_REPL_CS_TOKEN_H
#define TAMGA_REPL_CS_TOKEN_H

#include <stdbool.h>
#include <stdint.h>
#include <bson/bson.h>

#include "common/error.h"
#include "repl/clock.h"

#define CS_TOKEN_HWM 0
#define CS_TOKEN_EVENT 128
#define CS_TOKEN_VERSION 2

typedef struct cs_token {
	repl_ts_t ts;
	int version;
	int type;                 /* CS_TOKEN_HWM or CS_TOKEN_EVENT */
	int32_t txn_op_index;
	bool from_invalidate;
	bool has_uuid;
	uint8_t uuid[16];
	const bson_t *event_id;   /* encode: borrowed, may be NULL; parse: NULL */
	bool has_event_id;        /* parse: an eventIdentifier was present */
	int32_t fragment;         /* < 0: none */
} cs_token_t;

/* Encode t into the upper-case hex string of its KeyString (owned,
 * bson_free). */
char *cs_token_hex(const cs_token_t *t);
/* Append {_data: hex} as the document key to out. */
void cs_token_append(bson_t *out, const char *key, const char *hex);
/* Append t's token as the document key to out: {_data: hex[, _typeBits:
 * BinData 0]}, with mongod's _typeBits when the KeyString loses a type
 * (int64s, doubles, symbols in the eventIdentifier); returns its hex
 * (owned). */
char *cs_token_append_id(bson_t *out, const char *key, const cs_token_t *t);
/* A high-water-mark token at ts (owned hex). */
char *cs_token_hwm_hex(repl_ts_t ts);
/* $changeStreamSplitLargeEvent: the token of fragment n (0-based) of the
 * event whose token is hex (an event token without a fragment), and back:
 * the event's token from its fragment n's token (NULL when hex does not
 * end with fragment n).  Owned hex, bson_free. */
char *cs_token_hex_fragment(const char *hex, int32_t n);
char *cs_token_hex_unfragment(const char *hex, int32_t n);

/*
 * Parse a resume token document ({_data: string[, _typeBits: BinData 0]}):
 * 0 with *t filled and *hex (owned, upper case) set; -1 with mongod's
 * errors: 40647 "Bad resume token: _data of missing or of wrong type...",
 * 40648 for _typeBits of another type, 9 FailedToParse "resume token
 * string was not a valid hex string", 40649/50796/50854/50795/51055/51056/
 * 51057/50793/50855/50794/50872/50870/6189500/6189504/6189501/6189503/
 * 7182501/40646 for a KeyString that does not hold a token's values, and
 * 50811 "KeyString format error" for bytes that are no KeyString at all.
 */
int cs_token_parse(const bson_t *doc, cs_token_t *t, char **hex, terr_t *err);

#endif
