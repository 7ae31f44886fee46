/*
 * projection.h -- find()'s projection: compile a projection document once,
 * apply it to each result document.
 *
 * Supports inclusion ({a: 1, "b.c": 1}), exclusion ({a: 0}), the _id rules
 * (included unless {_id: 0}), nested sub-projections ({a: {b: 1}}), $slice
 * (n and [skip, limit]), $elemMatch, the positional "a.$" (given the array
 * position the filter matched, from match_eval_pos), and computed fields
 * (aggregation expressions and literals, through expr/).  Errors are
 * mongod's: 31253/31254 for mixing inclusion and exclusion, 31249/31250 for
 * path collisions, 31252 for expressions in exclusion projections, 3127x for
 * $slice/$elemMatch/positional misuse, 51270 for an empty sub-projection.
 *
 * Not here: $project/$addFields stages (agg/), $meta (rejected: no text or
 * search scores exist).
 */
#ifndef TAMGA_QUERY_PROJECTION_H
#define TAMGA_QUERY_PROJECTION_H

#include <stdbool.h>
#include <bson/bson.h>

#include "common/error.h"
#include "query/match.h"

typedef struct projection projection_t;

/*
 * Compile spec.  query is the find's compiled filter (may be NULL; kept in
 * the signature for positional checks).  let holds the command's
 * `let` variables as constants (may be NULL; copied).  Returns 0 with *out
 * (caller frees with projection_free), or -1 with err set.
 */
int projection_compile(const bson_t *spec, const match_t *query, const bson_t *let,
                       projection_t **out, terr_t *err);
void projection_free(projection_t *p);

/* True when the projection uses "a.$": then pass the filter's matched array
 * position (match_eval_pos) to projection_apply. */
bool projection_needs_match_pos(const projection_t *p);

/* True for inclusion projections (the result holds only named fields). */
bool projection_is_inclusion(const projection_t *p);

/*
 * Write doc projected into out (an initialized, empty bson_t the caller
 * owns).  match_pos is the positional array index (or -1).  A positional
 * projection narrows the first array met on its path to the element at
 * match_pos; a path without an array is copied unchanged, a missing one left
 * out.  Returns 0, or -1 with err set: 51246 when the path has an array but
 * the filter recorded no position, or an expression's runtime error.  Thread-safe for one p.
 */
int projection_apply(const projection_t *p, const bson_t *doc, int match_pos, bson_t *out,
                     terr_t *err);

/* Fields set to {$meta: "textScore"} (compiled only when the query has a
 * $text; else 40218) are left to projection_apply_meta, which appends each
 * as the document's score (text_score; NULL: left out) after the other
 * projected fields, replacing a field of the same name.  A projection
 * holding nothing else keeps every field. */
bool projection_wants_text_score(const projection_t *p);
int projection_apply_meta(const projection_t *p, const bson_t *doc, int match_pos, const double *text_score,
                          bson_t *out, terr_t *err);

#endif
