/*
 * accum.h -- accumulators for $group (and later $setWindowFields, $bucket):
 * $sum $avg $min $max $first $last $push $addToSet $count $mergeObjects
 * $stdDevPop $stdDevSamp $top $bottom $topN $bottomN $firstN $lastN $maxN
 * $minN $median $percentile.
 *
 * An accumulator spec ({$sum: "$qty"}) is parsed once into an accum_t (its
 * argument expressions and options), then each group gets an accum_state_t:
 * accum_process() evaluates the argument against the environment's current
 * document and folds it in, accum_finalize() produces the group's value.
 * States hold their own copies of the values they keep, so the caller may
 * expr_env_reset() between documents.
 *
 * Partial states can be written out and read back (accum_state_save /
 * accum_state_load) for a $group that spills, then combined (accum_merge).
 *
 * Not here: grouping itself, the spill files, window frames (no removal
 * yet).
 */
#ifndef TAMGA_EXPR_ACCUM_H
#define TAMGA_EXPR_ACCUM_H

#include <stdbool.h>
#include <stddef.h>
#include <bson/bson.h>

#include "common/error.h"
#include "expr/expr.h"

typedef struct accum accum_t;
typedef struct accum_state accum_state_t;

/*
 * Parse one accumulator: name is the operator ("$sum"), arg its value.
 * Unknown names fail with 15952 "unknown group operator '<name>'"; argument
 * errors carry mongod's codes.  On success *out is owned by the caller
 * (accum_destroy()).  scope is used to parse the argument expressions and is
 * not kept.
 */
int accum_parse(const char *name, const bson_value_t *arg, expr_scope_t *scope, accum_t **out, terr_t *err);
void accum_destroy(accum_t *a);

/* An accumulator with no argument expression, fed only through
 * accum_add() (the expression forms {$sum: [...]}, window functions).
 * Only for accumulators whose spec is a plain expression ($sum $avg $min
 * $max $first $last $push $addToSet $mergeObjects $stdDevPop $stdDevSamp);
 * others fail with 2 BadValue.  Owned by the caller (accum_destroy()). */
int accum_new_for_values(const char *name, accum_t **out, terr_t *err);

/* The accumulator's argument expression (its `input` / `output`), borrowed
 * from a; NULL for accum_new_for_values() accumulators. */
const expr_t *accum_argument(const accum_t *a);

/* The accumulator's operator name ("$sum"; "$accumulator" for
 * JavaScript ones), static. */
const char *accum_op_name(const accum_t *a);

/* $top / $bottom: whether the value st keeps is the one the latest
 * accum_process / accum_add folded in (false: an earlier one, or none);
 * false for every other accumulator. */
bool accum_holds_latest(const accum_t *a, const accum_state_t *st);

/* Accumulators whose result is the array of the values they keep, in the
 * order kept ($push $addToSet $firstN $lastN $topN $bottomN $maxN $minN):
 * accum_kept_count is how many st keeps (-1 for every other accumulator),
 * accum_kept_seq the arrival ordinal of the j-th of them (the count of
 * values folded into st before it: 0 for the first; -1 when j is out of
 * range), accum_kept_latest whether one of them is the value the latest
 * accum_process / accum_add folded in, and accum_folded the count of
 * values folded so far (kept or not).  Ordinals are those of this state's
 * own folds: a merged state's are not the inputs'. */
int64_t accum_kept_count(const accum_t *a, const accum_state_t *st);
int64_t accum_kept_seq(const accum_t *a, const accum_state_t *st, int64_t j);
bool accum_kept_latest(const accum_t *a, const accum_state_t *st);
uint64_t accum_folded(const accum_state_t *st);

/* Is name an accumulator this module knows? */
bool accum_is_known(const char *name);

/* A fresh state for one group (never NULL; aborts on OOM).  Owned by the
 * caller; free with accum_state_destroy(). */
accum_state_t *accum_state_new(const accum_t *a);
void accum_state_destroy(accum_state_t *st);

/* Evaluate a's argument(s) against env's $$CURRENT and fold the result in.
 * Returns 0 or -1 with err set (expression errors, $mergeObjects of a
 * non-object, ...). */
int accum_process(const accum_t *a, accum_state_t *st, expr_env_t *env, terr_t *err);

/* Fold an already computed value in (for accumulators with one argument;
 * v is borrowed and copied if kept). */
int accum_add(const accum_t *a, accum_state_t *st, const bson_value_t *v, terr_t *err);

/* Fold the partial state `from` into `into` (same accum_t), as if every
 * value added to `from` had been added to `into` after its own. */
int accum_merge(const accum_t *a, accum_state_t *into, const accum_state_t *from, terr_t *err);

/*
 * The group's result.  *out borrows from st or from env's arena: valid until
 * the state is changed or destroyed, or the env reset.  Missing results ($first
 * of nothing) come back as null, as $group reports them.
 */
int accum_finalize(const accum_t *a, const accum_state_t *st, expr_env_t *env, bson_value_t *out, terr_t *err);

/* A partial state as BSON, for a $group that spills to disk: append st to
 * out (a document being built) under key.  accum_state_load reads such a
 * value back into a new state (owned by the caller) equal to st, to be
 * merged with accum_merge.  The numeric part is raw bytes: only the process
 * that saved a state reads it back.  Load fails with 1 InternalError on a
 * value that is not a saved state. */
void accum_state_save(const accum_t *a, const accum_state_t *st, bson_t *out, const char *key);
int accum_state_load(const accum_t *a, const bson_value_t *saved, accum_state_t **out, terr_t *err);

/* Approximate bytes held by the state (for the 100 MB $group limit). */
size_t accum_state_mem(const accum_state_t *st);

#endif
