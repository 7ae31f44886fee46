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
 * What it does not do: apply diffs (a secondary or a change stream would).
 */
#ifndef TAMGA_REPL_OPLOG_DIFF_H
#define TAMGA_REPL_OPLOG_DIFF_H

#include <stdbool.h>
#include <bson/bson.h>

/*
 * Compute the diff turning pre into post into out (initialised by the
 * caller, the diff's fields appended at its top level).  Returns false (out
 * then holds a partial diff the caller discards) when the diff would be
 * larger than post plus padding bytes: mongod then logs the whole new
 * document instead.  An unchanged document gives an empty diff.
 */
bool repl_diff_compute(const bson_t *pre, const bson_t *post, size_t padding, bson_t *out);

#endif
