/*
 * slots.h -- mongod's field order after a removed field is set again.
 *
 * mongod's Document keeps a removed field's slot (Document::remove leaves a
 * missing value in place), so a field an exclusion removed and a later
 * stage sets again comes back where it was (SERVER-37791).  Both places
 * that build such documents -- the aggregation stages (agg/stage_project.c)
 * and pipeline updates (update/pipeline.c) -- lay their result out after
 * the exclusion's input with bslots_reorder; each walks its own tree of
 * paths, reached through bslots_nodes_t.
 *
 * Not here: deciding which exclusion a stage reads through (the callers).
 */
#ifndef TAMGA_BSON_SLOTS_H
#define TAMGA_BSON_SLOTS_H

#include <stdbool.h>
#include <stdint.h>
#include <bson/bson.h>

/* A caller's path tree, seen through three functions (node pointers are
 * the caller's, borrowed; NULL is "no node").  child: node's child called
 * name (len bytes, NUL-terminated), or NULL.  has_kids: node has paths
 * below it (false for a leaf).  is_slot: the field node names was removed
 * here, leaving a slot (an excluded leaf, or a hole the caller noted in
 * ctx). */
typedef struct bslots_nodes {
	const void *(*child)(const void *node, const char *name, uint32_t len);
	bool (*has_kids)(const void *node);
	bool (*is_slot)(const void *ctx, const void *node);
} bslots_nodes_t;

/*
 * Append to res the fields of out in mongod's order: the fields of ref
 * (the exclusion's input, or a reduced copy of it holding its names in
 * order and its values below excl's sub-trees) in ref's order -- a field
 * excl removed and a later stage set again takes its old slot --, then the
 * fields new to ref in out's order.  out holds ref's kept fields in ref's
 * order (values updated in place; a slot an earlier stage filled is found
 * in place too), then the appended ones.  Below a field where excl has
 * paths and the setting stage (set: its node at this level, NULL: none)
 * did not replace it whole, documents are laid out the same way field by
 * field and arrays element by element.  Reads out and ref only.
 */
void bslots_reorder(const bson_t *out, const bson_t *ref, const void *excl, const void *set,
                    const bslots_nodes_t *nodes, const void *ctx, bson_t *res);

#endif
