/*
 * collation.h -- MongoDB collations on ICU: parse a collation document,
 * compare strings by it, and make the sort keys index entries hold.
 *
 * A collation is what `{locale: "fr", strength: 2, ...}` asks for.  The
 * simple collation (`{locale: "simple"}`, or none at all) is the NULL
 * pointer everywhere: byte order, as bv_compare does without one.
 *
 * coll_parse() checks a document with mongod's rules, codes and messages
 * (collator_factory_icu.cpp, the Collation IDL) and returns an *interned*
 * collation: one immutable object per normalized spec, alive until the
 * process exits.  So a coll_t pointer is never freed, may be shared by any
 * number of threads and structures, and two collations are equal exactly
 * when their pointers are.  ICU's collators are read-only once set up, so
 * comparisons need no lock.
 *
 * What does not live here: which commands take a collation, inheritance
 * from a collection's default (commands/), index bounds (query/).
 */
#ifndef TAMGA_BSON_COLLATION_H
#define TAMGA_BSON_COLLATION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <bson/bson.h>

#include "common/error.h"

typedef struct coll coll_t;

/* The collator version mongod 9.0 reports in every normalized spec and
 * accepts in `version` (its bundled ICU). */
#define COLL_MONGOD_VERSION "57.1"

/*
 * Parse a collation document.  path names the field in type errors
 * ("collation" for find/aggregate/..., "create.collation" for create).
 * Returns 0 and sets *out to the interned collation, or to NULL for the
 * simple collation ({locale: "simple"}, and {} which mongod reads as "no
 * collation"); -1 with mongod's code and message otherwise: 40415 unknown
 * field, 14 wrong type, 40414 missing locale, 2 bad enum/range/locale,
 * 9 "simple" with other fields, 161 another version.
 */
int coll_parse(const bson_t *spec, const char *path, const coll_t **out, terr_t *err);

/* Same, for a value that must be an object first (the `collation` field of
 * a command): anything else fails with 14 "BSON field '<path>' is the wrong
 * type '<t>', expected type 'object'". */
int coll_parse_value(const bson_value_t *v, const char *path, const coll_t **out, terr_t *err);

/* The normalized spec mongod reports (listCollections, listIndexes,
 * explain): locale, caseLevel, caseFirst, strength, numericOrdering,
 * alternate, maxVariable, normalization, backwards, version.  Borrowed,
 * valid forever.  coll must not be NULL. */
const bson_t *coll_spec(const coll_t *coll);

/* Append the spec under key; NULL appends {locale: "simple"}. */
void coll_append_spec(bson_t *doc, const char *key, const coll_t *coll);

/* The locale as given ("en_US"). */
const char *coll_locale(const coll_t *coll);

/* <0, 0, >0 comparing two UTF-8 strings by the collation (NULL: bytes).
 * Invalid UTF-8 is compared as U+FFFD, as ICU does. */
int coll_compare(const coll_t *coll, const char *a, size_t alen, const char *b, size_t blen);

/*
 * The collation's sort key of a string: bytes whose memcmp order is the
 * collation's order and which are equal exactly when the strings compare
 * equal.  ICU's keys hold no 00 byte; the terminating 00 is not counted.
 * Writes at most cap bytes to buf and returns the full length, so callers
 * retry with a larger buffer when the result exceeds cap.
 */
size_t coll_sort_key(const coll_t *coll, const char *s, size_t len, uint8_t *buf, size_t cap);

#endif
