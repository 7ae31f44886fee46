/*
 * oplog_diff.h -- mongod's `$v: 2` update diffs (doc_diff): the smallest
 * description of how an update changed a document, as the oplog stores it.
 *
 * Shape (mongod's doc_diff.h): a document diff is
 *   {d: {<field>: false, ...}, u: {<field>: <new value>, ...},
 *    i: {<field>: <value>, ...}, s<field>: <sub diff>, ...}
 * (sections only when not empty, in that order); an array's sub diff is
 *   {a: true, [l: <new length>,] u<index>: <new value>, s<index>: <sub diff>}.
 * Fields are compared in order: once the old and new documents' field
 * orders part, every later field of the new document is an insert (an
 * insert appends, so the order comes out right) and the old fields it no
 * longer has are deletes.  A sub diff is used for a nested document or array
 * only when it is smaller than the new value itself.
 *
 * An operator update's diff (repl_diff_compute_update) is shaped by the
 * update's paths as mongod's update driver logs it: sub diffs all the way
 * down each path ("a.0.b" gives {sa: {a: true, s0: {u: {b: ...}}}} whatever
 * the sizes), the path's end logged whole (u, or i when created, d when
 * unset), the elements a $push/$addToSet appended as u<index> entries.
 *
 * What it does not do: apply diffs (a secondary or a change stream would).
 */
#ifndef TAMGA_REPL_OPLOG_DIFF_H
#define TAMGA_REPL_OPLOG_DIFF_H

#include <stdbool.h>
#include <bson/bson.h>

#include "update/update.h"

/*
 * Compute the diff turning pre into post into out (initialised by the
 * caller, the diff's fields appended at its top level).  Returns false (out
 * then holds a partial diff the caller discards) when the diff would be
 * larger than post plus padding bytes: mongod then logs the whole new
 * document instead.  An unchanged document gives an empty diff.
 */
bool repl_diff_compute(const bson_t *pre, const bson_t *post, size_t padding, bson_t *out);

/*
 * The oplog diff of an update: operator updates follow u's paths (above);
 * a pipeline or replacement update gets repl_diff_compute's shape, with no
 * size limit.  u is borrowed for the call.
 */
void repl_diff_compute_update(const bson_t *pre, const bson_t *post, const update_t *u, bson_t *out);

#endif
