/*
 * planner.h -- choosing an access path for a filter: a collection scan or a
 * scan over one index with bounds.
 *
 * Bounds come from the compiled filter's top-level conjunction: equality, $in, ranges ($gt/$gte/$lt/$lte, type
 * bracketed as mongod does), $regex (mongod's simple-regex prefix, or every
 * string, plus the regex value), null (the null and undefined keys), $ne
 * and $nin (the complement), $exists (every key, or the null one), and
 * predicates inside $elemMatch.  The intervals of the predicates on one
 * field are intersected, as mongod does ({$gt: 1, $ne: 3}: (1, 3), (3,
 * inf.0]); on a multikey path only the first kind (points, ranges, $regex,
 * $ne/$nin, $exists) bounds it, unless the predicates share a value
 * $elemMatch on that path.  The
 * planner only ever builds bounds that hold a superset of the matching
 * documents' keys; the executor still applies the whole filter to every
 * fetched document.  Multikey rules, per the index's multiKeyPaths: two
 * ranges on one field are never intersected when that field's path met an
 * array, and two fields whose shared path prefix holds an array are
 * compounded only when both predicates sit in the same $elemMatch on that
 * prefix (the keygen keeps such fields on one array element); a sort on a
 * multikey field is not provided by the index.
 * Indexes that could miss documents are skipped: hidden ones, sparse ones
 * unless the leading field is bounded and no predicate used matches a
 * missing field (null, $ne, $nin, $exists: false), partial ones unless the
 * filter implies the partial filter ({$exists: true} is implied by any
 * predicate a missing field fails).  hint picks an index (2
 * BadValue "hint provided does not correspond to an existing index" when
 * none matches).  Among candidates the one with the most equality-bounded
 * fields, then one satisfying the sort (a blocking sort loses mongod's trial
 * runs), then more bounded fields, then the smaller key wins; an indexed
 * plan always beats the collection scan, as in mongod.  The losers are kept
 * for explain's rejectedPlans.
 *
 * A top-level $or whose every branch has an indexed plan becomes one index
 * scan per branch (OR), when no index bounds the whole filter.
 *
 * min/max (find's index-key bounds) are planned by planner_plan_minmax: one
 * range of the hinted index from min (inclusive) to max (exclusive) in the
 * index's key order, the filter applied to every fetched document.
 *
 * The order of candidates here is the cost rule; plan.c races them (trial
 * runs) and keeps that order as the tie-break.
 *
 * Covered plans are decided by the executor (plan.c) from the solution's
 * fields (multikey, exact bounds).  Not yet: index intersection.
 */
#ifndef TAMGA_QUERY_PLANNER_H
#define TAMGA_QUERY_PLANNER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <bson/bson.h>

#include "common/error.h"
#include "query/match.h"
#include "storage/storage.h"

/* One value interval of one index field, in the field's scan order
 * (for a descending field lo > hi, as explain prints it).  Values in the
 * plan's region. */
typedef struct planner_interval {
	bson_value_t lo, hi;
	bool lo_incl, hi_incl;
} planner_interval_t;

typedef struct planner_range planner_range_t;

/* Every pointer below is owned by the plan's region (see
 * planner_solution_free). */
typedef struct planner_field {
	char *path;
	bool desc;
	bool bounded;                /* some predicate gave this field bounds */
	bool points;                 /* ... and they are points (equality, $in) */
	bool multikey;               /* the index's multiKeyPaths has an array on this path */
	bool hashed;                 /* a "hashed" field: intervals are points of int64 hashes */
	int n;                       /* intervals, sorted in key order */
	planner_interval_t *iv;
	planner_range_t *enc;        /* iv as this field's KeyString part (n entries) */
} planner_field_t;

/* One contiguous KeyString range to scan (NULL bound = unbounded). */
struct planner_range {
	uint8_t *lo, *hi;            /* in the plan's region */
	size_t lo_len, hi_len;
	bool lo_incl, hi_incl;
};

typedef enum { PLANNER_COLLSCAN, PLANNER_IXSCAN, PLANNER_OR } planner_kind_t;

typedef struct planner_solution planner_solution_t;
struct planner_solution {
	planner_kind_t kind;
	int index;                   /* IXSCAN: position in coll->indexes */
	int nfields;
	planner_field_t *fields;     /* one per key-pattern field (explain's indexBounds) */
	int nranges;
	planner_range_t *ranges;     /* in scan order (already reversed when backward) */
	bool backward;               /* scan direction over the index */
	bool provides_sort;          /* the requested sort needs no SORT stage */
	bool dedup;                  /* multikey: a document may come back more than once */
	bool exact;                  /* the bounds alone decide the filter (explain shows no FETCH filter) */
	/* IXSCAN: the filter's top-level conjuncts the bounds answer
	 * (match_exec_skip's bits): left out of the FETCH filter, as mongod
	 * leaves out what its bounds answer exactly */
	uint64_t exact_mask;
	/* IXSCAN: the conjuncts the index keys decide (a $regex on a
	 * non-multikey field: mongod's IXSCAN filter), checked before fetching;
	 * key_complete: bounds and key filter together answer the filter
	 * (a covered plan needs no document) */
	uint64_t key_mask;
	bool key_complete;
	/* PLANNER_OR: one IXSCAN solution per branch of a top-level $or, scanned
	 * one after the other (documents deduplicated) */
	int nbranches;
	struct planner_solution **branches;
	char *wildcard_path;         /* a wildcard index used for this path (explain's keyPattern {$_path: 1, path: 1}) */
	/* IXSCAN: the index's collation (bson/collation.h), which encoded the
	 * bounds; values the executor seeks to are encoded with it too */
	const coll_t *collation;
	/* the other candidates considered (explain's rejectedPlans) */
	int nrejected;
	struct planner_solution **rejected;
	/* the plan's memory: this solution, its rejected plans and branches
	 * and everything they point to live there (planner.c) */
	struct planner_region *region;
};

/* The collation field f's bounds are encoded with in an index of collation
 * `collation`: that one, except for a wildcard index's $_path (field names
 * never collate). */
const coll_t *planner_field_collation(const planner_field_t *f, const coll_t *collation);

/*
 * Plan a query on coll.  m may be NULL (everything).  collation is the
 * query's (NULL = simple): an index with the same collation is used as
 * usual, its bounds encoded by it; an index with another one only when no
 * predicate on its fields compares strings, documents or arrays, and never
 * for the sort (hinted, it is scanned whole).  sort (NULL or {})
 * and hint (NULL, or the hint value: a name string or a key pattern
 * document; {$natural: d} forces a collection scan) are borrowed.  On
 * success *out is owned by the caller (planner_solution_free).  Errors: 2
 * BadValue for a hint naming no usable index.
 */
int planner_plan(const storage_coll_t *coll, const match_t *m, const bson_t *sort,
                 const bson_value_t *hint, const coll_t *collation, planner_solution_t **out,
                 terr_t *err);

/*
 * planner_plan under an index filter (planCacheSetFilter): only the indexes
 * whose positions in coll->indexes are set in allowed (bit i: index i) are
 * candidates, and they compete as usual; an index hint is the caller's to
 * drop (mongod ignores it under a filter), {$natural: d} still applies.
 * PLANNER_ALL_INDEXES: no filter.
 */
#define PLANNER_ALL_INDEXES UINT64_MAX
int planner_plan_filtered(const storage_coll_t *coll, const match_t *m, const bson_t *sort,
                          const bson_value_t *hint, const coll_t *collation, uint64_t allowed,
                          planner_solution_t **out, terr_t *err);

/*
 * planner_plan_filtered with the partial indexes the query may use decided
 * by the caller (partial_set: bit i of partial_ok for index i; a partial
 * index without its bit is no candidate unless hinted), instead of the
 * planner's own test that the filter's conjunction implies the partial
 * filter.  A time-series read decides it on the measurements' filter as
 * mongod does (timeseries/ts_partial.c), which the buckets' filter, in
 * Tamga's own forms, does not show.  With partial_set, a top-level $or of
 * the filter whose branches all have index scans is also kept as a
 * candidate (a rejected plan the trial runs race) when a single index
 * bounds the filter: the bucket forms of an indexed measurement range are
 * such an $or, and mongod races its one index scan against the clustered
 * _id range of a time predicate.
 */
int planner_plan_partial(const storage_coll_t *coll, const match_t *m, const bson_t *sort,
                         const bson_value_t *hint, const coll_t *collation, uint64_t allowed,
                         bool partial_set, uint64_t partial_ok, planner_solution_t **out, terr_t *err);

/*
 * find's min/max: min and max (borrowed; NULL or {} = unbounded on that
 * side, not both) are index keys {field: value, ...} naming the hinted
 * index's fields in order.  The solution is an IXSCAN over [min, max) with
 * no per-field bounds (explain's indexBounds is {}), backward when the sort
 * is the index order reversed.  Errors, as mongod's planner: 291
 * NoQueryExecutionPlans "When using min()/max() a hint of which index to
 * use must be provided" (no hint; "min and max are incompatible with
 * $natural" for {$natural: d}), 2 for a hint naming no
 * index, 51174 "The index chosen is not compatible with min/max" (fields
 * differ from the key pattern, wildcard index), 51175 "The value provided
 * for min() does not come before the value provided for max() in the
 * hinted index".  The 51176 check (min and max with different field
 * names) is planner_minmax_check's.
 */
int planner_plan_minmax(const storage_coll_t *coll, const bson_t *min, const bson_t *max,
                        const bson_t *sort, const bson_value_t *hint, planner_solution_t **out,
                        terr_t *err);

/* find's request check: when both min and max are non-empty they must name
 * the same fields in the same order, else 51176 "min and max must have the
 * same field names".  Returns 0 or -1 with err. */
int planner_minmax_check(const bson_t *min, const bson_t *max, terr_t *err);

/* Free a plan: s and every solution planned with it (rejected plans,
 * branches), all of which share one region.  Any of them may be passed --
 * the trial runs may have made a rejected plan the winner -- but only one,
 * once. */
void planner_solution_free(planner_solution_t *s);

/* explain's indexBounds for an IXSCAN solution: {field: ["[1, 1]", ...]}
 * appended as fields of out. */
void planner_bounds_append(const planner_solution_t *s, bson_t *out);

/* One interval as mongod prints it: "[1, 1]", "(5, inf.0]", "[MinKey,
 * MaxKey]", "[\"a\", {})".  Caller bson_free()s. */
char *planner_interval_string(const planner_interval_t *iv);

#endif
