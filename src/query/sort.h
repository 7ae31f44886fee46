/*
 * sort.h -- sort specifications ({a: 1, "b.c": -1}), sort keys with
 * MongoDB's array semantics, and the in-memory sorter with mongod's 100 MB
 * limit.
 *
 * Sort keys: a path is walked with query semantics (bson/path.h); an array
 * contributes its elements, ascending keys take the smallest candidate and
 * descending keys the largest.  A missing field sorts as null; an empty
 * array sorts before null (MongoDB's "Comparison/Sort Order").  Keys borrow
 * from the document they were extracted from.
 *
 * Used by find, $sort, and $push's $sort modifier.  Not here: index-provided
 * order (the planner decides).
 */
#ifndef TAMGA_QUERY_SORT_H
#define TAMGA_QUERY_SORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <bson/bson.h>

#include "common/error.h"

typedef struct sort_spec sort_spec_t;

/*
 * Parse a sort document.  Returns 0 with *out (caller frees with
 * sort_spec_free), or -1 with MongoDB's error: 15974 "Illegal key in $sort
 * specification: a: \"x\"", 15975 for a direction other than 1/-1, 16410 for
 * a '$'-prefixed path, 15998 for an empty path component, 40218 for
 * {$meta: "textScore"} (no $text exists), 17312 for other objects.  {} is a
 * valid spec with no keys.  {$natural: 1|-1} is recorded as natural order.
 */
int sort_spec_parse(const bson_t *spec, sort_spec_t **out, terr_t *err);
/* As sort_spec_parse; with text_score (the query has a $text) a key
 * {$meta: "textScore"} sorts descending by the field SORT_TEXT_SCORE_FIELD
 * the caller appends to each document it adds (plan.c), as mongod orders
 * by the score metadata. */
int sort_spec_parse_meta(const bson_t *spec, bool text_score, sort_spec_t **out, terr_t *err);
#define SORT_TEXT_SCORE_FIELD "$textScore"
/* Whether some key of s is the textScore one. */
bool sort_spec_has_text_score(const sort_spec_t *s);
void sort_spec_free(sort_spec_t *s);

/* Order strings by a collation (bson/collation.h; NULL = simple, the
 * default); interned, so borrowed forever. */
typedef struct coll coll_t;
void sort_spec_set_collation(sort_spec_t *s, const coll_t *coll);
const coll_t *sort_spec_collation(const sort_spec_t *s);

/* Number of keys (0 for {} and for a pure $natural sort). */
size_t sort_spec_nkeys(const sort_spec_t *s);
/* The i-th key's path (borrowed, lives with s) and direction (1 or -1). */
const char *sort_spec_path(const sort_spec_t *s, size_t i);
int sort_spec_direction(const sort_spec_t *s, size_t i);
/* {$natural: d}: true and *dir = d; false when the spec has no $natural. */
bool sort_spec_natural(const sort_spec_t *s, int *dir);

/*
 * Extract doc's sort key into keys[0..nkeys).  Values borrow from doc
 * (valid while doc is unchanged).  A missing key is null; an empty array
 * key is represented as BSON undefined, which sort_key_compare orders
 * before null.  Does not allocate.
 */
void sort_key_extract(const sort_spec_t *s, const bson_t *doc, bson_value_t *keys);

/* Compare two extracted keys under the spec's directions: <0, 0, >0. */
int sort_key_compare(const sort_spec_t *s, const bson_value_t *a, const bson_value_t *b);

/* Compare two documents under the spec (extracts both keys). */
int sort_compare_docs(const sort_spec_t *s, const bson_t *a, const bson_t *b);

/* ---- the in-memory sorter --------------------------------------------- */

typedef struct sorter sorter_t;

#define SORT_DEFAULT_MEMORY_LIMIT (100ull * 1024 * 1024)

/*
 * A sorter for documents under spec (borrowed: must outlive the sorter).
 * limit > 0 keeps only the first `limit` documents of the order (top-k, so
 * memory stays bounded: once `limit` are held, a document that does not
 * sort before the last of them is dropped without being copied; equal
 * keys keep the order documents were added in, as without a limit).
 * mem_limit 0 means SORT_DEFAULT_MEMORY_LIMIT.
 * Past the memory limit, sorter_add fails with 292
 * (QueryExceededMemoryLimitNoDiskUseAllowed) unless allow_disk_use; then the
 * sorted documents are written to a temporary file in the spill directory
 * (sorter_set_spill_dir) and merged at the end (past 64 runs, the runs are
 * first merged into one, so a tiny limit does not hold a file per run), or,
 * with no spill directory, sorter_add fails with 238.
 */
sorter_t *sorter_new(const sort_spec_t *spec, int64_t limit, bool allow_disk_use,
                     uint64_t mem_limit);
/* Where spilled runs go (e.g. "<dbpath>/_tmp"; must exist).  Files are
 * unlinked as soon as they are created, so nothing is left behind. */
void sorter_set_spill_dir(sorter_t *st, const char *dir);
/* Copy doc into the sorter (or drop it, see top-k above); doc is only read
 * during the call.  Returns 0 or -1 with err set. */
int sorter_add(sorter_t *st, const bson_t *doc, terr_t *err);
/* sorter_add with aux_len bytes of the caller's kept with the document
 * (copied; aux may be NULL when aux_len is 0): counted in the memory limit
 * with it, dropped with it by top-k, and never written to disk -- a
 * document read back from a spilled run has none (the agg $sort keeps a
 * document's field-order slots this way, lost on spilling as mongod's
 * serialised Documents lose them). */
int sorter_add_aux(sorter_t *st, const bson_t *doc, const uint8_t *aux, uint32_t aux_len, terr_t *err);
/* Sort what was added; call once, before sorter_next.  sorter_finish_ex
 * reports I/O errors of a spilled sort (0 or -1 with err set);
 * sorter_finish ignores them (the merge then ends early). */
int sorter_finish_ex(sorter_t *st, terr_t *err);
void sorter_finish(sorter_t *st);
/* The next document in order, or NULL at the end.  Borrowed: valid until
 * the next sorter_next or sorter_free (copy it to keep it). */
const bson_t *sorter_next(sorter_t *st);
/* sorter_next that tells the end from a spilled run that could not be read
 * back (the order then stops there): 1 with *out (borrowed as above), 0 at
 * the end, -1 with err set. */
int sorter_next_ex(sorter_t *st, const bson_t **out, terr_t *err);
/* Bytes currently held (for explain's memory statistics), and whether the
 * sort spilled to disk (explain's usedDisk). */
uint64_t sorter_memory(const sorter_t *st);
bool sorter_spilled(const sorter_t *st);
/* The aux bytes of the document sorter_next returned last (borrowed, valid
 * as that document), with *len; NULL (*len 0) when it had none, when there
 * is no such document, or when the sort spilled (every document then comes
 * back from disk). */
const uint8_t *sorter_last_aux(const sorter_t *st, uint32_t *len);
void sorter_free(sorter_t *st);

#endif
