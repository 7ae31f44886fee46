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
 * documents not matching partialFilterExpression.  An index of a time-series
 * collection's buckets (storage_index_t.ts_time_field) refuses a bucket whose
 * indexed measurement field holds an array (5930501 "Indexed measurement
 * field contains an array value", mongod's validateDocumentCommon) before
 * any key is made.
 *
 * The storage layer calls this through storage_set_keygen; it computes the
 * key diffs, uniqueness and the multikey flag itself.  Geo indexes (2d,
 * 2dsphere) are keyed by keygen_geo.c (below).
 *
 * Hashed indexes ({a: "hashed"}, compound with one hashed field): one key per
 * document, the hashed field's part the int64 expr_hash64 of its value (a
 * collated index hashes a string's comparison key), the other fields their
 * values; an array on any field's path is refused (16766 "Error: hashed
 * indexes do not currently support array values. Found array at path:
 * a.b"), so these indexes are never multikey.
 */
#ifndef TAMGA_QUERY_KEYGEN_H
#define TAMGA_QUERY_KEYGEN_H

#include "storage/storage.h"

/* Install query_keygen as st's key generator.  Call once, right after
 * storage_open and before any write (engine_open does). */
void query_keygen_register(storage_t *st);

/* The storage_keygen_fn: calls add(ctx, key, len, tb, tb_len) for each key
 * doc has in idx (duplicates possible; tb: the key's type bits), ORs the
 * multikey paths into mkpaths when not NULL (as keygen_multikey_paths,
 * nothing for wildcard indexes).  Returns 0, or -1 with err (171 parallel
 * arrays, 5930501 an array in an indexed bucket measurement, 238 special
 * index types, errors compiling a partial filter). */
int query_keygen(const storage_index_t *idx, const bson_t *doc, storage_key_add_fn add, void *ctx,
                 uint32_t *mkpaths, terr_t *err);

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

/*
 * explain's multiKeyPaths: masks[i] (one per key-pattern field, at most
 * KEYGEN_MAX_FIELDS, zeroed first) gets bit k set when field i's path met
 * an array (empty or not) as the value of its (k+1)-th component in doc
 * ({a: [{b: 1}]} under "a.b": bit 0, i.e. "a").  A document the index
 * skips (sparse, partial) sets nothing.  Returns the number of fields
 * (0 for wildcard indexes), or -1 with err as query_keygen.  The storage
 * layer ORs them into the index's multiKeyPaths (storage_index_t.mkpaths).
 */
int keygen_multikey_paths(const storage_index_t *idx, const bson_t *doc, uint32_t *masks, terr_t *err);

/* Append {field: ["a", "a.b"], ...} for the masks of key_pattern's fields
 * (what explain prints under multiKeyPaths) as fields of out. */
void keygen_multikey_paths_append(const bson_t *key_pattern, const uint32_t *masks, bson_t *out);

/* True when idx's key pattern has a "hashed" field. */
bool keygen_is_hashed(const storage_index_t *idx);
/* The int64 a hashed index keys v as (coll: the index's collation, NULL =
 * simple); the planner bounds equalities with it. */
int64_t keygen_hash_value(const bson_value_t *v, const coll_t *coll);

/*
 * Text indexes (key {prefix..., _fts: "text", _ftsx: 1, suffix...}, spec
 * fixed by text_spec_fix): one key per distinct term of the document
 * (text/text.h's scores): prefix values, the term, its score (double),
 * suffix values.  An array on a prefix or suffix path is refused (201
 * "Field 'a' of text index contains an array in document: { ... }").
 * multiKeyPaths are not tracked for them.
 */
bool keygen_is_text(const storage_index_t *idx);
/* The term as a key of textIndexVersion `version` holds it: itself up to
 * 224 bytes (version 2: 32), else its first 224 bytes and the hex MD5 of
 * the whole (version 2: 32 bytes and the hex MurmurHash3 x64-128, seed 0),
 * in buf.  Returns term or buf; *out_len its length. */
#define KEYGEN_TEXT_TERM_MAX 256
const char *keygen_text_term(const char *term, size_t len, int version, char buf[KEYGEN_TEXT_TERM_MAX + 1],
                             size_t *out_len);

/*
 * Geo indexes (keygen_geo.c).  2dsphere: each geometry of a "2dsphere"
 * field becomes its S2 cells (geo/geo.h's geo_s2_cells), one NumberLong
 * key part each (the cell id cast to int64, as mongod's version 3); other
 * fields as btree fields; the cartesian product of all; version 2+ skips
 * documents with no geometry; a bad geometry fails with 16755 "Can't
 * extract geo keys: <doc>  <reason>".  2d (first field): each location's
 * GeoHash as BinData(128, 8 big-endian bytes), the other fields' values;
 * no location, no key; 13027 for a point out of [min, max], 13026/13067/
 * 13068 for malformed pairs.  multiKeyPaths are not tracked for them.
 */
/* True when idx has a "2dsphere" or "2d" field; *is_2d says which. */
bool keygen_geo_kind(const storage_index_t *idx, bool *is_2d);
int keygen_geo_keys(const storage_index_t *idx, const bson_t *doc, storage_key_add_fn add, void *ctx,
                    terr_t *err);

/* Maximum number of fields in a compound key pattern (mongod's 32). */
#define KEYGEN_MAX_FIELDS 32

#endif
