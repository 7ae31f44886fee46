/*
 * expr.h -- MongoDB's aggregation expression language: parse once, evaluate
 * per document.
 *
 * Used by $expr (query), computed projections (query), pipeline updates
 * (update) and every stage that takes expressions (agg).  A spec such as
 * {$add: ["$a", 1]} is parsed against a scope (which variables exist) into an
 * immutable tree (expr_t); the tree is then evaluated any number of times,
 * from any number of threads, each with its own environment (expr_env_t:
 * $$ROOT/$$CURRENT, $$NOW, variable values, and an arena that owns every
 * value evaluation produces).
 *
 * Values follow MongoDB: a missing field evaluates to "missing", represented
 * as a bson_value_t of type BSON_TYPE_EOD, distinct from null.  $$REMOVE is
 * missing too.  Stages decide what missing means for them (e.g. $project
 * drops the field).
 *
 * Not here: stages, match expressions, update operators, accumulators (those
 * are in accum.h, same folder).  Errors carry mongod's codes and messages
 * (src/mongo/db/pipeline/expression.cpp): 168 for an unknown operator, 16020
 * and friends for argument counts, 17276 for an undefined variable, ...
 */
#ifndef TAMGA_EXPR_EXPR_H
#define TAMGA_EXPR_EXPR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <bson/bson.h>

#include "common/error.h"

typedef struct expr expr_t;             /* parsed expression (immutable) */
typedef struct expr_scope expr_scope_t; /* parse-time variable names */
typedef struct expr_env expr_env_t;     /* evaluation-time state */

/* Ids of the built-in variables; user variables get ids >= EXPR_VAR_FIRST_USER
 * from expr_scope_define().  An id is an index into the environment's
 * variable table. */
enum {
	EXPR_VAR_ROOT = 0,
	EXPR_VAR_CURRENT = 1,
	EXPR_VAR_NOW = 2,
	EXPR_VAR_REMOVE = 3,
	EXPR_VAR_CLUSTER_TIME = 4,
	EXPR_VAR_FIRST_USER = 5,
};

/* ---- scope: which variables a spec may name ---------------------------- */

/* A new scope knowing only the built-in variables (ROOT, CURRENT, NOW,
 * REMOVE, CLUSTER_TIME).  Caller owns it; expr_scope_destroy() frees it.
 * Parsed expressions do not keep a pointer to their scope. */
expr_scope_t *expr_scope_new(void);
void expr_scope_destroy(expr_scope_t *scope);

/* Define a user variable (a command's `let`, $lookup's `let`) in the current
 * level of the scope; a later definition of the same name shadows the
 * earlier one.  The name is checked as mongod checks user variable names
 * (letters, digits, '_', must start with a lowercase letter or a non-ASCII
 * byte; errors 16866-16870 and 16867's wording).  *id receives the variable
 * id to pass to expr_env_set_var().  Returns 0 or -1 with err set. */
int expr_scope_define(expr_scope_t *scope, const char *name, int *id, terr_t *err);

/* Open / close a nested level: names defined after push disappear at the
 * matching pop (ids stay unique for the scope's lifetime).  Used by callers
 * parsing sub-pipelines whose `let` variables must not leak outward. */
void expr_scope_push(expr_scope_t *scope);
void expr_scope_pop(expr_scope_t *scope);

/* The collation (bson/collation.h; NULL = simple) every expression parsed
 * with this scope from now on compares strings by ($eq, $lt, $in,
 * $indexOfArray, $setUnion, $max, ...; accumulators too).  Borrowed:
 * collations are interned and live forever. */
typedef struct coll coll_t;
void expr_scope_set_collation(expr_scope_t *scope, const coll_t *coll);
const coll_t *expr_scope_collation(const expr_scope_t *scope);

/* The scope parses a collection validator: $function is refused there
 * (4660800), as mongod's isParsingCollectionValidator. */
void expr_scope_set_validator(expr_scope_t *scope, bool on);

/* The id of a visible variable ("ROOT", "x"; no "$$"), or -1. */
int expr_scope_lookup(const expr_scope_t *scope, const char *name);

/* ---- parse -------------------------------------------------------------- */

/*
 * Parse any expression value: a literal, "$field.path", "$$var.path",
 * {$op: args}, an expression object {a: <expr>, b: <expr>} or an array of
 * expressions.  The spec is not referenced after the call (constants are
 * copied).  Subtrees that depend on nothing are evaluated here (as mongod's
 * optimize() does), so {$divide: [1, 0]} fails at parse time with the
 * runtime error.  On success *out is a new tree owned by the caller
 * (expr_destroy()).  Returns 0, or -1 with err set (mongod's code and
 * message) and *out untouched.  The scope is used, not kept; it is not
 * thread-safe (parse on one thread, evaluate anywhere).
 */
int expr_parse(const bson_value_t *spec, expr_scope_t *scope, expr_t **out, terr_t *err);

/* Parse a document as an expression object ({a: <expr>, b: {c: <expr>}}),
 * evaluating to a document with those fields in that order (fields whose
 * value is missing are left out).  Same ownership and errors as
 * expr_parse(); a field name starting with '$' fails with 16410 and a dotted
 * one with 16412, as in mongod. */
int expr_parse_object(const bson_t *spec, expr_scope_t *scope, expr_t **out, terr_t *err);

/* Free a tree (NULL is fine). */
void expr_destroy(expr_t *e);

/* The context of errors a constant subtree raises when expr_parse evaluates
 * it (mongod evaluates those in optimize(): an aggregation's
 * "Failed to optimize pipeline" wraps them), for the calling thread;
 * NULL (the default) leaves them as they are.  Returns the previous one,
 * for the caller to put back. */
const char *expr_fold_context_set(const char *context);

/* Introspection for planners and stages.  expr_is_constant: true when the
 * expression does not depend on the document or variables (then *v, if not
 * NULL, borrows the value, valid while e lives).  expr_is_field_path: true
 * for "$a.b" (then *path borrows "a.b").  expr_object_*: the fields of an
 * expression object, in order (n = 0 for other expressions); *name and *sub
 * borrow from e. */
bool expr_is_constant(const expr_t *e, const bson_value_t **v);
bool expr_is_field_path(const expr_t *e, const char **path);
/* expr_is_root_path: true for "$a.b" and for $$ROOT / $$CURRENT (not
 * rebound) with or without a path: the value at *path of the document a
 * stage evaluates against (*path borrows, NULL for the whole document). */
bool expr_is_root_path(const expr_t *e, const char **path);
size_t expr_object_nfields(const expr_t *e);
void expr_object_field(const expr_t *e, size_t i, const char **name, const expr_t **sub);

/* ---- environment -------------------------------------------------------- */

/* A new environment: no document (ROOT and CURRENT missing), $$NOW = the
 * current time (fixed for the env's life unless set), no user variables.
 * Owned by the caller; one thread at a time. */
expr_env_t *expr_env_new(void);
void expr_env_destroy(expr_env_t *env);

/* Set $$ROOT and $$CURRENT to doc (borrowed: it must outlive every
 * evaluation and every value those evaluations returned).  NULL = missing. */
void expr_env_set_root(expr_env_t *env, const bson_t *doc);
/* Set $$CURRENT alone (borrowed, as above). */
void expr_env_set_current(expr_env_t *env, const bson_t *doc);
/* $$NOW (milliseconds since the epoch) and $$CLUSTER_TIME (until set,
 * referencing $$CLUSTER_TIME fails with 51144, as on a standalone mongod). */
void expr_env_set_now(expr_env_t *env, int64_t ms);
void expr_env_set_cluster_time(expr_env_t *env, uint32_t t, uint32_t i);

/* Document metadata for $meta ({textScore: 1.5, randVal: 0.3, searchScore:
 * .., indexKey: {..}, sortKey: .., recordId: .., geoNearDistance: ..,
 * geoNearPoint: ..}); borrowed like a root document; NULL = none (every
 * $meta is then missing). */
void expr_env_set_meta(expr_env_t *env, const bson_t *meta);

/* Give variable id (from expr_scope_define) a value.  The value is copied
 * into storage owned by env that survives expr_env_reset(); it is replaced
 * by the next set of the same id and freed with env.  Returns 0 or -1 with
 * err set (bad id). */
int expr_env_set_var(expr_env_t *env, int id, const bson_value_t *v, terr_t *err);

/* Free every value evaluations produced since the last reset (the arena).
 * Call between documents; results of earlier expr_eval calls become
 * invalid. */
void expr_env_reset(expr_env_t *env);

/* Arena allocation for callers that build values alongside evaluation
 * (stages, accumulators): freed by expr_env_reset/destroy, never by the
 * caller.  expr_env_alloc aborts on out-of-memory, as bson_malloc. */
void *expr_env_alloc(expr_env_t *env, size_t n);
/* Deep-copy v into the arena (strings, documents, binary...); *out borrows
 * the arena until the next reset. */
void expr_env_copy_value(expr_env_t *env, const bson_value_t *v, bson_value_t *out);

/* ---- evaluate ----------------------------------------------------------- */

/*
 * Evaluate e.  On success *out is the result: it may borrow from the
 * documents set as ROOT/CURRENT, from variable values, from e's constants,
 * or from env's arena; it stays valid until expr_env_reset(), the next
 * set of a variable it came from, or the document changing -- copy it
 * (bson_value_copy / bv_append) to keep it.  BSON_TYPE_EOD means missing.
 * Returns 0, or -1 with err set (mongod's code and message).
 */
int expr_eval(const expr_t *e, expr_env_t *env, bson_value_t *out, terr_t *err);

/* A command's `let` document as constants: each variable's expression is
 * evaluated once, in order (a later variable may use an earlier one), with
 * mongod's variable-name checks.  out is initialised here and owned by the
 * caller (bson_destroy), also on error.  Returns 0 or -1 with err set. */
int expr_let_eval(const bson_t *let, bson_t *out, terr_t *err);

/* Evaluate and coerce to bool as $expr, $cond and $filter do. */
int expr_eval_bool(const expr_t *e, expr_env_t *env, bool *out, terr_t *err);

/* MongoDB's truthiness: false, null, undefined, missing and numeric zero are
 * false; everything else (NaN, "", [], {}) is true. */
bool expr_value_truthy(const bson_value_t *v);

/*
 * Aggregation field-path semantics over a value: each component selects a
 * field of a document; on an array the rest of the path is applied to every
 * element and the results (skipping missing ones and non-documents) form a
 * new array ({a: [{b: 1}, {c: 2}, {b: [3]}]} at "a.b" gives [1, [3]]).
 * Numeric components are field names, never positions.  *out is missing when
 * nothing is found; it borrows from base or from env's arena.
 */
void expr_path_eval(expr_env_t *env, const bson_value_t *base, const char *path,
                    bson_value_t *out);

#endif
