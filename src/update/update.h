/*
 * update.h -- the document-transformation engine behind update,
 * findAndModify and upserts: given an update specification and a document,
 * produce the new document (or MongoDB's error).
 *
 * Three kinds of update, as in MongoDB:
 *   - operators:   {$set: {...}, $inc: {...}, $push: {...}, ...}
 *   - replacement: a plain document {a: 1, b: 2} (keeps the old _id)
 *   - pipeline:    [{$set: ...}, {$unset: ...}, {$project: ...},
 *                   {$replaceWith: ...}, ...] evaluated with expr/
 * update_compile() parses once (all parse-time errors, with mongod's codes
 * and messages); update_apply() runs it over any number of documents.  A
 * compiled update_t is immutable and may be applied from several threads.
 *
 * This module does not read or write storage, does not match the query,
 * does not validate against a collection's schema and does not maintain
 * indexes: the command layer does those around these calls.
 */
#ifndef TAMGA_UPDATE_UPDATE_H
#define TAMGA_UPDATE_UPDATE_H

#include <stdbool.h>
#include <stdint.h>
#include <bson/bson.h>

#include "common/error.h"

typedef struct update update_t;

typedef enum {
	UPDATE_KIND_OPERATORS,
	UPDATE_KIND_REPLACEMENT,
	UPDATE_KIND_PIPELINE,
} update_kind_t;

typedef struct coll coll_t;

typedef struct update_options {
	/* The command's arrayFilters: an array (as a BSON document with keys
	 * "0", "1", ...) of filter documents, or NULL.  Borrowed during
	 * update_compile only (compiled and copied).  Every filter must be used
	 * by some $[<identifier>] and every identifier must have a filter, as
	 * mongod requires. */
	const bson_t *array_filters;
	/* Variables for pipeline updates ($$name): the command's `let` / `c`
	 * document, already evaluated to constants.  Borrowed during
	 * update_compile only (copied).  Ignored by operator and replacement
	 * updates. */
	const bson_t *let;
	/* The statement's collation (bson/collation.h; NULL = simple): how
	 * $addToSet, $pull, $pullAll, $min, $max, $push's $sort, arrayFilters
	 * and pipeline stages compare strings.  Interned: no lifetime care. */
	const coll_t *coll;
} update_options_t;

/*
 * Parse an update.  u is a document (operators when its first field starts
 * with '$', else a replacement) or an array (pipeline).  opts may be NULL.
 * Returns 0 with *out set (free with update_free), or -1 with err set, e.g.
 *   9  "Unknown modifier: $foo. Expected a valid update modifier or
 *       pipeline-style update specified as an array"
 *   9  "Modifiers operate on fields but we found type string instead. ..."
 *   40 "Updating the path 'a.b' would create a conflict at 'a'"
 *   2  "No array filter found for identifier 'x' in path 'a.$[x]'"
 *   9  "The array filter for identifier 'x' was not used in the update ..."
 *   9  "arrayFilters may not be specified for pipeline-style updates"
 *   72 "$group is not allowed to be used within an update"
 * An empty operand ({$set: {}}) is accepted, as since MongoDB 5.0.  Any
 * other type of u fails with 9 ("Update argument must be either an object
 * or an array").  Dollar-prefixed top-level fields of a replacement are
 * reported by update_apply (52), as mongod does when a document matches.
 * Neither u nor opts is referenced after the call.
 */
int update_compile(const bson_value_t *u, const update_options_t *opts, update_t **out,
                   terr_t *err);

void update_free(update_t *u);

update_kind_t update_kind(const update_t *u);
bool update_is_replacement(const update_t *u);

/*
 * The paths an operator update names, as written ("a.$[x].b", "a.$"):
 * fn(path, opname, arg, ctx) once per leaf of the update's tree (a $rename
 * gives its source, with opname "$rename" and a NULL arg, and its
 * destination), in the tree's order.  path, opname and arg are borrowed
 * from u.  Returns false, calling nothing, for a replacement or pipeline
 * update (they name no paths).  The oplog's diff follows these paths as
 * mongod's update driver logs them (repl/oplog_diff.h).
 */
typedef void (*update_path_fn)(const char *path, const char *opname, const bson_value_t *arg, void *ctx);
bool update_for_each_path(const update_t *u, update_path_fn fn, void *ctx);

/* True when the update uses the positional $ operator, so the caller must
 * pass the matched array position (match_exec's array_pos) in the ctx. */
bool update_uses_positional(const update_t *u);

typedef struct update_apply_ctx {
	/* Position the query matched in the first array along the path
	 * (match_exec's array_pos), for the positional $ operator; -1 when
	 * none.  Using $ without a position fails with 2 BadValue "The
	 * positional operator did not find the match needed from the query." */
	int matched_pos;
	/* The document is being inserted by an upsert: $setOnInsert applies. */
	bool is_insert;
	/* $$NOW and $currentDate's date, in ms since the epoch; 0 = now.
	 * Callers updating many documents in one command pass one value so
	 * that every document gets the same time, as mongod does. */
	int64_t now_ms;
	/* $currentDate {$type: "timestamp"} and $$CLUSTER_TIME; 0/0 = derived
	 * from now_ms (seconds, increment 1). */
	uint32_t ts_t, ts_i;
} update_apply_ctx_t;

/* Default ctx: matched_pos -1, not an insert, now. */
#define UPDATE_APPLY_CTX_INIT {-1, false, 0, 0, 0}

/*
 * Apply u to doc.  ctx may be NULL (defaults above).  On success returns 0,
 * *out_new_doc is initialised by this call (bson_init semantics: the caller
 * bson_destroy()s it) to the new document, and *modified says whether
 * mongod would count the document as modified (nModified): for operators,
 * false when the result is byte-identical to doc (e.g. $set to the same
 * value of the same type), except that a $push with $sort and $currentDate
 * always modify; for replacements and pipelines, false when the
 * replacement (the pipeline's output) as given is byte-identical to doc.
 * When false, *out_new_doc equals doc.  On
 * error returns -1, err is set (mongod's code and message), *out_new_doc is
 * left uninitialised and nothing needs freeing.
 * Errors include 66 (changing _id), 14 ($inc on a non-number), 28 (path not
 * viable), 10334 (result larger than 16 MiB), 15 (nesting deeper than 180),
 * 52 ($-prefixed top-level field in a replacement) and each operator's own.
 * Replacement and pipeline results keep doc's _id when they have none and
 * put _id first.  doc is only read; it may be the same bytes the caller
 * later frees (nothing of it is kept).
 */
int update_apply(const update_t *u, const bson_t *doc, const update_apply_ctx_t *ctx,
                 bson_t *out_new_doc, bool *modified, terr_t *err);

/*
 * The document an upsert inserts when nothing matched, in one call: the seed
 * from filter's equalities (update_build_upsert_seed), then u applied with
 * is_insert (operators, pipelines) or u itself with the query's _id
 * (replacement).  _id is always the first field; when neither the filter
 * nor the update gives one, a new ObjectId is generated.  *out is
 * initialised by this call on success only (caller bson_destroy()s).
 * ctx may be NULL; its is_insert is forced true and matched_pos to -1.
 * Errors: the seed's (below), update_apply's, 53 for an _id of type
 * array/regex/undefined, 17420 "Document to upsert is larger than 16777216".
 */
int update_build_upsert_doc(const update_t *u, const bson_t *filter,
                            const update_apply_ctx_t *ctx, bson_t *out, terr_t *err);

/*
 * The seed of an upsert: the filter's equality fields ({a: 1}, {a: {$eq: 1}},
 * {"a.b": 1} -> {a: {b: 1}}, $and of those; not $or with several clauses),
 * _id first when present.  Errors as mongod: 54 NotSingleValueField
 * ("cannot infer query fields to set, path 'a' is matched twice", "...
 * both paths 'a' and 'a.b' are matched"), and the filter's own parse
 * errors.  *out is initialised by this call on success only.
 */
int update_build_upsert_seed(const bson_t *filter, bson_t *out, terr_t *err);

#endif
