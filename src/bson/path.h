/*
 * path.h -- dotted paths ("a.b.0.c") over BSON documents.
 *
 * Two ways to walk a path, because MongoDB has two meanings:
 *
 * bpath_get: exact lookup.  Each component names a field of a document or,
 *   when numeric, a position in an array.  No implicit array traversal.  Used
 *   by updates, projections of a single value, $-field paths' first step.
 *
 * bpath_walk: MongoDB's query semantics (the classic matcher's
 *   ElementIterator, src/mongo/db/matcher/path.cpp): when a component meets an
 *   array, the rest of the path is applied to each element that is a
 *   document (elements that are not documents, including nested arrays, are
 *   skipped); a numeric component that is a valid position in that array
 *   also selects that element, with the rest of the path applied to it.  An
 *   array found at the end of the path is yielded element by element (when
 *   expand_leaf_arrays) and then as a whole.  Where a document lacks the
 *   component (or a scalar sits in the middle of the path) the walk reports
 *   "missing" (a value of type BSON_TYPE_EOD): {a: [{}, {b: 1}]} at "a.b"
 *   yields missing and 1, {a: [5]} at "a.b" yields nothing at all, {a: 5}
 *   at "a.b" yields missing.  Used by the matcher, index keys and sort keys.
 *
 * Not here: aggregation field paths ($a.b in expressions: see expr.h), and
 * modifying documents (update/).
 */
#ifndef TAMGA_BSON_PATH_H
#define TAMGA_BSON_PATH_H

#include <stdbool.h>
#include <stdint.h>
#include <bson/bson.h>

/* Find the value at path in doc (exact semantics).  On success *out borrows
 * from doc (valid while doc is unchanged) and true is returned. */
bool bpath_get(const bson_t *doc, const char *path, bson_iter_t *out);

/* Same, over a value: a document or array (other types find nothing unless
 * path is empty, which finds v itself -- *out then borrows v).  Returns
 * false when nothing is there. */
bool bpath_get_value(const bson_value_t *v, const char *path, bson_value_t *out);

/* Whether comp[0..len) is one of the DBRef fields ($ref, $id, $db): the
 * $-prefixed names mongod's FieldPath accepts as path components. */
bool bpath_is_dbref_field(const char *comp, size_t len);

/* Whether comp[0..len) is an array position: a non-negative decimal integer
 * without leading zeros (or "0") that fits in int32; *idx receives it. */
bool bpath_is_array_index(const char *comp, size_t len, uint32_t *idx);

/* A path split once into components, for walking many documents without
 * re-parsing.  comp[i].s points into the owned copy `str` (NUL-terminated
 * per component); idx is the array position the component denotes, or -1. */
typedef struct bpath_comp {
	const char *s;
	uint32_t len;
	int32_t idx;
} bpath_comp_t;

typedef struct bpath {
	char *str;            /* the path with '.' replaced by NULs (in comp's block) */
	char *full;           /* the path as given (in comp's block) */
	uint32_t n;           /* number of components, >= 1 */
	bpath_comp_t *comp;   /* owned, n entries; one allocation holding str and full too */
} bpath_t;

/* Split path (any string, empty components allowed -- "a..b" has three) into
 * p.  Never fails (aborts on out-of-memory like bson_malloc).  Free with
 * bpath_destroy. */
void bpath_init(bpath_t *p, const char *path);
void bpath_destroy(bpath_t *p);

/* What bpath_walk reports for each value it reaches. */
typedef struct bpath_hit {
	bson_value_t value;   /* borrowed from the document; EOD = missing here */
	int32_t array_pos;    /* position in the first array traversed, or -1 */
	bool through_array;   /* an array was traversed to get here */
	bool leaf_element;    /* an element of the leaf array (expansion) */
} bpath_hit_t;

/* Return true to continue, false to stop the walk. */
typedef bool (*bpath_visit_fn)(const bpath_hit_t *hit, void *ctx);

/* Walk a compiled path over a document's bytes (a whole document or an
 * embedded one), calling fn for each value reached, including missing ones
 * (see above).  Returns false if fn stopped the walk.  Does not allocate;
 * recursion depth is bounded by the path's length and BSON nesting. */
bool bpath_walk_data(const uint8_t *data, uint32_t len, const bpath_t *p,
                     bool expand_leaf_arrays, bpath_visit_fn fn, void *ctx);

/* The same over a bson_t. */
bool bpath_walk_compiled(const bson_t *doc, const bpath_t *p, bool expand_leaf_arrays,
                         bpath_visit_fn fn, void *ctx);

/* Convenience: split path and walk it (allocates for the split). */
bool bpath_walk(const bson_t *doc, const char *path, bool expand_leaf_arrays,
                bpath_visit_fn fn, void *ctx);

#endif
