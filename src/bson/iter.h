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

#endif
