/*
 * path.h -- dotted paths ("a.b.0.c") over BSON documents.
 *
 * Two ways to walk a path, because MongoDB has two meanings:
 *
 * bpath_get: exact lookup.  Each component names a field of a document or,
 *   when numeric, a position in an array.  No implicit array traversal.  Used
 *   by updates, projections of a single value, $-field paths' first step.
 *
 * bpath_walk: MongoDB's query semantics (ElementPath with implicit array
 *   traversal): when a component meets an array and is not a valid position
 *   in it, the rest of the path is applied to each element; a numeric
 *   component that is a valid array position also matches that element, and
 *   an array found at the end of the path is yielded itself and then (when
 *   expand_leaf_arrays) element by element.  Used by the matcher, index key
 *   generation and sort keys.
 */
#ifndef TAMGA_BSON_PATH_H
#define TAMGA_BSON_PATH_H

#include <stdbool.h>
#include <bson/bson.h>

/* Find the value at path in doc (exact semantics).  On success *out borrows
 * from doc (valid while doc is unchanged) and true is returned. */
bool bpath_get(const bson_t *doc, const char *path, bson_iter_t *out);

/* Split helper: the number of components and whether each is a non-negative
 * decimal integer without leading zeros (an array position). */
bool bpath_is_array_index(const char *comp, size_t len, uint32_t *idx);

/*
 * Visit every value the path reaches under query semantics.  fn is called
 * with each value (borrowed from doc); it returns true to continue, false to
 * stop.  A path that reaches nothing calls missing_fn once (if not NULL) so
 * callers can tell "missing" from "no match".  through_array is true when
 * the value was reached by traversing at least one array (multikey).
 * Returns false if fn stopped the walk.
 */
typedef bool (*bpath_visit_fn)(const bson_value_t *v, bool through_array, void *ctx);
bool bpath_walk(const bson_t *doc, const char *path, bool expand_leaf_arrays,
                bpath_visit_fn fn, void *ctx);

#endif
