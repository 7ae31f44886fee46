/*
 * match.h -- query filters ("match expressions"): compile once, evaluate
 * against many documents.
 *
 * One matcher serves find, count, distinct, delete, update, $match and the
 * validator's query form.  match_compile() parses a filter document with
 * MongoDB's rules and error codes/messages (expression_parser.cpp) into a
 * read-only tree; match_eval() walks it over one document without allocating.
 * A compiled match_t is immutable: many threads may evaluate it at once.
 *
 * This module does not plan, does not use indexes and does not project; it
 * answers "does this document match", with the array position the positional
 * $ operator needs, and lets the planner/upsert code read the top-level
 * predicates.
 */
#ifndef TAMGA_QUERY_MATCH_H
#define TAMGA_QUERY_MATCH_H

#include <stdbool.h>
#include <stdint.h>
#include <bson/bson.h>

#include "common/error.h"

typedef struct match match_t;
typedef struct coll coll_t;

/* Features a context may forbid (MongoDB's AllowedFeatures).  0 = everything
 * find allows.  A forbidden operator fails compilation with MongoDB's error
 * for that context. */
enum {
	MATCH_DISALLOW_EXPR = 1u << 0,         /* $expr */
	MATCH_DISALLOW_JSON_SCHEMA = 1u << 1,  /* $jsonSchema */
	MATCH_DISALLOW_TEXT = 1u << 2,         /* $text */
	MATCH_DISALLOW_WHERE = 1u << 3,        /* $where (validators, aggregation $match) */
	MATCH_DISALLOW_GEO_NEAR = 1u << 4,     /* $near, $nearSphere */
	MATCH_DISALLOW_FUNCTION = 1u << 5,     /* $function inside $expr (validators: 4660800) */
};

typedef struct match_options {
	unsigned disallow;      /* MATCH_DISALLOW_* bits */
	/* Variables for $expr ($$name), the command's `let` document, already
	 * evaluated to constants.  Borrowed during match_compile only (copied). */
	const bson_t *let;
	/* The collation strings compare by ($eq, $lt.., $in, $elemMatch,
	 * $expr; never $regex, $type, $size or field names); NULL = simple.
	 * Interned (bson/collation.h), so it needs no lifetime care. */
	const coll_t *coll;
	/* $$NOW for $expr, in ms since the epoch, fixed for the whole command;
	 * 0 = the time of match_compile. */
	int64_t now_ms;
} match_options_t;

/*
 * Parse filter into *out.  opts may be NULL (find defaults).  Returns 0 and
 * sets *out (caller frees with match_free), or -1 with err set to MongoDB's
 * code and message ("unknown operator: $foo", 2 BadValue; "$in needs an
 * array"; 51091 for a bad regex; 238 NotImplemented for $where/$text/geo ...).
 * The filter is copied: it need not outlive the match_t.
 */
int match_compile(const bson_t *filter, const match_options_t *opts, match_t **out,
                  terr_t *err);

void match_free(match_t *m);

/*
 * Evaluate.  Returns 1 when doc matches, 0 when not, -1 on a runtime error
 * (only $expr and $jsonSchema-with-expressions can fail at run time, e.g.
 * "$divide by zero"; err gets MongoDB's code).  When array_pos is not NULL it
 * receives the position, in the first array met along the path of the leaf
 * that decided the match, of the element that matched (the positional $
 * operator of updates and projections), or -1 when no array was involved.
 * Never allocates for filters without $expr; doc is only read.
 */
int match_exec(const match_t *m, const bson_t *doc, int *array_pos, terr_t *err);

/*
 * The filter without some of its top-level conjuncts -- the root's clauses
 * when it is an $and, else the root alone as conjunct 0 -- that the caller
 * answers otherwise (an index scan's exact bounds): skip has bit i set for
 * conjunct i (past 63 nothing is skipped).  match_exec_skip evaluates the
 * rest as match_exec does (no array position); match_to_bson_skip prints
 * it as explain's filter (one conjunct alone, several under $and), NULL
 * when nothing is left.  Caller owns the bson_t.
 */
int match_exec_skip(const match_t *m, uint64_t skip, const bson_t *doc, terr_t *err);
bson_t *match_to_bson_skip(const match_t *m, uint64_t skip);

/* Convenience forms of match_exec: a runtime error counts as "no match".
 * Use match_exec wherever an error must reach the client (find, update). */
bool match_eval(const match_t *m, const bson_t *doc);
bool match_eval_pos(const match_t *m, const bson_t *doc, int *array_pos);

/* True when evaluation may fail at run time (the filter contains $expr);
 * callers that can't report errors may then prefer match_exec. */
bool match_can_fail(const match_t *m);

/* True when the filter matches every document ({} or only $comment /
 * $alwaysTrue), so scans may skip evaluation. */
bool match_is_trivially_true(const match_t *m);

/*
 * {_id: <value>} or {_id: {$eq: <value>}} with a value that is not an array,
 * regex, or operator document, and nothing else in the filter: the id point
 * lookup.  On true, *id borrows from the match_t (valid until match_free).
 */
bool match_is_id_point(const match_t *m, const bson_value_t **id);

/* True when the whole filter is one equality {path: v} (alone, or the one
 * member of an $and): *path and *v borrow from m.  The shape of mongod's
 * single-field express path. */
bool match_single_eq(const match_t *m, const char **path, const bson_value_t **v);

/*
 * Top-level equality predicates, as upsert seeds its new document and the
 * planner uses for point bounds: `{a: v}`, `{a: {$eq: v}}`, `{a: {$in: [v]}}`
 * (one element, not a regex), and the same inside top-level `$and` (nested)
 * and single-clause `$or`/`$and`; never inside `$or` with several clauses,
 * `$nor`, `$not` or `$elemMatch`.  fn is called for each (path, value) in
 * filter order; both borrow from the match_t.  Return false from fn to stop.
 * Paths can repeat ({$and: [{a: 1}, {a: 2}]}); the caller decides.
 * Returns false when fn stopped the enumeration.
 */
typedef bool (*match_eq_fn)(const char *path, const bson_value_t *value, void *ctx);
bool match_equalities(const match_t *m, match_eq_fn fn, void *ctx);

/*
 * Top-level conjunctive leaf predicates for index bounds: every leaf reached
 * from the root through $and only.  op is one of MATCH_PRED_*; value is the
 * operand ($in: the array; $exists: the boolean; regex: the regex value).
 * Borrowed from the match_t.  Leaves under $or/$nor/$not/$elemMatch and
 * $expr are not reported (the planner must still evaluate the whole filter).
 */
typedef enum {
	MATCH_PRED_EQ,
	MATCH_PRED_LT,
	MATCH_PRED_LTE,
	MATCH_PRED_GT,
	MATCH_PRED_GTE,
	MATCH_PRED_IN,
	MATCH_PRED_EXISTS,
	MATCH_PRED_REGEX,
	MATCH_PRED_NE,          /* the planner's $ne, $nin, $mod (match_predicates reports none) */
	MATCH_PRED_NIN,
	MATCH_PRED_MOD,
	MATCH_PRED_NOT_RANGE,   /* the planner's $not of one $lt/$lte/$gt/$gte (the complement) */
	MATCH_PRED_OTHER,       /* any other leaf ($type, $size, ...) */
} match_pred_t;
typedef bool (*match_pred_fn)(const char *path, match_pred_t op, const bson_value_t *value,
                              void *ctx);
bool match_predicates(const match_t *m, match_pred_fn fn, void *ctx);

/* True when some leaf of the filter (under any logical operator, not inside
 * $elemMatch's sub-filter) has a path whose first component is `field`: the
 * check find's positional projection ("a.$") makes (error 31277). */
bool match_references_field(const match_t *m, const char *field);

/* The filter as parsed, for explain's parsedQuery, in mongod's normalized
 * shape: {a: {$eq: 1}}, {$and: [...]}, $ne as {a: {$not: {$eq: 1}}}, $in
 * values sorted.  A new document the caller destroys. */
bson_t *match_to_bson(const match_t *m);

/*
 * $text.  match_compile parses {$text: {$search, $language,
 * $caseSensitive, $diacriticSensitive}} (mongod's messages: "$search
 * requires a string value", "extra fields in $text", ...) into a node that
 * cannot be evaluated until plan_exec binds it to the collection's text
 * index (its language and tokenizer).  match_text_info reports where the
 * $text nodes are: *count of them, *bad_place set when one sits under $or,
 * $nor or $not (where Tamga does not run it), and the parameters of the
 * first (borrowed from m: search/len, language NULL when not given).
 */
typedef struct match_text_params {
	const char *search;
	uint32_t search_len;
	const char *language;
	bool case_sensitive, diacritic_sensitive;
	bool under_nor;              /* some $text sits under $nor */
	bool under_or;               /* ... under $or or $not */
} match_text_params_t;
int match_text_info(const match_t *m, match_text_params_t *out);
/* Bind every $text node to spec (a const text_spec_t *, cached forever)
 * and query (a const text_query_t * that must outlive m's evaluations). */
void match_text_bind(match_t *m, const void *spec, const void *query);
/* The top-level conjuncts (bits as match_exec_skip's) that are $text. */
uint64_t match_text_conjuncts(const match_t *m);
/* Whether m holds a $text. */
bool match_has_text(const match_t *m);

/*
 * Geo predicates.  match_compile parses $geoWithin/$within and
 * $geoIntersects into leaves evaluated with geo/geo.h (no index needed),
 * and $near/$nearSphere into a leaf that matches a geometry within
 * [$minDistance, $maxDistance]; ordering by distance is the near plan's
 * (query/plan_geo.c).  match_geo_info reports the $near leaves: how many
 * (nnear), whether the one there is a top-level conjunct (mongod's
 * "geoNear must be top-level expr"), its path and parsed point (a const
 * geo_near_t *, borrowed from m); and the first top-level $geoWithin /
 * $geoIntersects (geo_shape: a const geo_shape_t *, geo_pred a
 * geo_pred_t).  Returns nnear.
 */
typedef struct match_geo_info {
	int nnear;
	bool near_top_level;
	const char *near_path;
	const void *near;
	const char *geo_path;
	const void *geo_shape;
	int geo_pred;
	bool geo_bucket;          /* the first is $_internalBucketGeoWithin (geo_path data.<field>) */
} match_geo_info_t;
int match_geo_info(const match_t *m, match_geo_info_t *out);
/* The top-level conjuncts (match_exec_skip's bits) that are $near. */
uint64_t match_geo_near_conjuncts(const match_t *m);

#endif
