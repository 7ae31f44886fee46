/*
 * keygen.h -- secondary index keys, MongoDB's rules (btree_key_generator).
 *
 * For each document and index, the KeyString keys the index holds: one part
 * per key-pattern field (descending parts inverted), a missing field (or a
 * path running into a scalar) indexed as null, arrays expanded element by
 * element (multikey) with every field that reaches the same array taking the
 * same element (so {"a.k": 1, "a.v": 1} over {a: [{k, v}, ...]} holds one key
 * per element: what $elemMatch bounds rely on), an empty array indexed as
 * undefined, and two different arrays met by two fields refused (171
 * CannotIndexParallelArrays "cannot index parallel arrays [b] [a]").  Sparse
 * indexes skip documents lacking every indexed field; partial indexes skip
 * documents not matching partialFilterExpression.
 *
 * The storage layer calls this through storage_set_keygen; it computes the
 * key diffs, uniqueness and the multikey flag itself.  Special index types
 * (text, 2dsphere, hashed, wildcard) are refused at creation
 * (commands/cmd_index.c) and fail here with 238 should one ever appear.
 */
#ifndef TAMGA_QUERY_KEYGEN_H
#define TAMGA_QUERY_KEYGEN_H

#include "storage/storage.h"

/* Install query_keygen as st's key generator.  Call once, right after
 * storage_open and before any write (engine_open does). */
void query_keygen_register(storage_t *st);

/* The storage_keygen_fn: calls add(ctx, key, len) for each key doc has in
 * idx (duplicates possible).  Returns 0, or -1 with err (171 parallel
 * arrays, 238 special index types, errors compiling a partial filter). */
int query_keygen(const storage_index_t *idx, const bson_t *doc, storage_key_add_fn add, void *ctx,
                 terr_t *err);

/*
 * Wildcard indexes ({"$**": 1}, {"a.$**": 1}, with an optional
 * wildcardProjection): one key per leaf value reached under the indexed
 * paths, arrays traversed (nested arrays kept whole), each key the path as
 * a string then the value: what the planner bounds as {$_path: [p, p],
 * p: [...]}.  Numeric path components are not indexed specially.
 */
/* True when idx's key pattern is a wildcard one. */
bool keygen_is_wildcard(const storage_index_t *idx);
/* True when a query on dotted path lies in idx's wildcard scope (its
 * subtree and projection; _id only when projected in). */
bool keygen_wildcard_covers(const storage_index_t *idx, const char *path);

/* Maximum number of fields in a compound key pattern (mongod's 32). */
#define KEYGEN_MAX_FIELDS 32

#endif
