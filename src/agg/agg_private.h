/*
 * agg_private.h -- what the files of src/agg/ share: the stage table row,
 * the parsed stage, the per-run stage state, and helpers stages use to build
 * documents.
 *
 * Every stage family (stage_basic.c, stage_project.c, stage_group.c, ...)
 * exports one table of agg_stage_def_t rows; pipeline.c looks names up
 * across all tables.  A stage's parse turns its spec into a read-only plan
 * (and may add several stages: $sortByCount is $group + $sort); its open /
 * next / close run one instance of it, pulling from the stage before.
 */
#ifndef TAMGA_AGG_PRIVATE_H
#define TAMGA_AGG_PRIVATE_H

#include "agg/pipeline.h"
#include "expr/expr.h"
#include "common/opctx.h"
#include "query/match.h"

typedef struct agg_stage agg_stage_t;
typedef struct agg_rt agg_rt_t;
typedef struct agg_pctx agg_pctx_t;

/* Where a stage may stand (mongod's StageConstraints). */
enum {
	AGG_F_FIRST = 1u << 0,        /* only as the first stage (40602) */
	AGG_F_LAST = 1u << 1,         /* only as the last stage (40601) */
	AGG_F_NO_COLL = 1u << 2,      /* runs without a collection ({aggregate: 1}) */
	AGG_F_NOT_IN_FACET = 1u << 3, /* refused inside $facet (40600) */
	AGG_F_NOT_IN_LOOKUP = 1u << 4,/* refused inside $lookup/$unionWith pipelines (51047) */
	AGG_F_WRITES = 1u << 5,       /* $out, $merge */
};

typedef struct agg_stage_def {
	const char *name;             /* "$match" */
	/* Parse spec and add one or more stages with agg_pctx_add. */
	int (*parse)(agg_pctx_t *pc, const bson_value_t *spec, terr_t *err);
	/* Runtime: open allocates rt->state; next returns 1 with *out (owned by
	 * the stage, valid until its next call), 0 at the end, -1 with err. */
	int (*open)(agg_rt_t *rt, terr_t *err);
	int (*next)(agg_rt_t *rt, const bson_t **out, terr_t *err);
	void (*close)(agg_rt_t *rt);
	void (*free_plan)(void *plan);
	unsigned flags;
	/* Stages holding storage cursors across batches ($unionWith). */
	int (*save)(agg_rt_t *rt, terr_t *err);
	int (*restore)(agg_rt_t *rt, storage_session_t *s, terr_t *err);
} agg_stage_def_t;

/* One parsed stage. */
struct agg_stage {
	const agg_stage_def_t *def;
	void *plan;                   /* def-specific, read-only after parse */
	bson_t *explain;              /* {"$name": spec} as explain shows it (owned) */
};

/* The parsed pipeline. */
struct agg_pipeline {
	agg_stage_t *stages;
	int nstages, cap;
	const agg_host_t *host;       /* borrowed */
	expr_scope_t *scope;          /* owned by the top-level pipeline only */
	bool owns_scope;
	/* values of the variables known when the pipeline runs (command let):
	 * ids and values, set in every stage's environment */
	int *var_ids;
	char **var_names;             /* owned */
	bson_value_t *var_vals;       /* owned copies */
	int nvars;
	bson_t *let_doc;              /* {name: value} of the same, for $expr in $match */
	/* the source: a leading $match pushed into the find executor */
	bson_t *source_filter;        /* owned or NULL */
	bson_t *source_sort;          /* a leading $sort pushed down too (owned or NULL) */
	int64_t source_skip;          /* then a $skip */
	int64_t source_limit;         /* and a $limit (0 = none) */
	bson_t *source_project;       /* then a plain inclusion $project, the find projection (owned or NULL) */
	/* a $sort {k: 1} followed by a $group on "$k" with only $first
	 * accumulators: the source may be a DISTINCT_SCAN on k (the first
	 * document of each k in sort order, mongod's rewrite), owned or NULL */
	char *source_distinct;
	int first_stage;              /* index of the first stage run on top of the source */
	bool source_text_score;       /* the source appends "$textScore" (stages read {$meta: "textScore"}) */
	bool facet;                   /* a $facet sub-pipeline (no source) */
	bool sub;                     /* a $lookup/$unionWith sub-pipeline */
	/* the deepest nesting of $lookup / $unionWith pipelines inside this one
	 * (0: none), for mongod's limit of 20 when a parsed view is reused */
	int nest;
	/* the top-level pipeline only: the views its stages read, each
	 * resolved and parsed once (agg/view.c) */
	struct agg_view_ref **views;
	int nviews;
};

/* Parse state handed to each stage's parse. */
struct agg_pctx {
	agg_pipeline_t *p;
	const agg_host_t *host;
	expr_scope_t *scope;
	const char *name;             /* the stage name being parsed */
	int depth;                    /* sub-pipeline nesting */
	agg_pipeline_t *root;         /* the top-level pipeline being parsed */
	const bson_t *let_doc;        /* the command's let values (for $match's $expr) */
	bool in_facet, in_lookup;
	/* the collection the pipeline being parsed reads (in the host's
	 * database; NULL: the host's own), and the one the next $lookup /
	 * $unionWith sub-pipeline parsed from this context reads (set by those
	 * stages around agg_pipeline_parse_sub): $geoNear's default key comes
	 * from the indexes of the collection its pipeline reads */
	const char *coll, *sub_coll;
};

/* Add a stage (steals plan and explain; explain may be NULL = {name: {}}). */
void agg_pctx_add(agg_pctx_t *pc, const agg_stage_def_t *def, void *plan, bson_t *explain);

/* Parse a nested pipeline (for $facet, $lookup, $unionWith) sharing the
 * scope.  in_facet / in_lookup mark which stages are refused. */
int agg_pipeline_parse_sub(agg_pctx_t *pc, const bson_t *stages, bool in_facet, bool in_lookup,
                           agg_pipeline_t **out, terr_t *err);
/* mongod's internalMaxSubPipelineViewDepth: $lookup / $unionWith pipelines
 * nest 20 deep at most; past it, 232 MaxSubPipelineDepthExceeded
 * "Maximum number of nested sub-pipelines exceeded. Limit is 20" (set in
 * err by agg_sub_depth_exceeded, which returns -1). */
#define AGG_MAX_SUB_DEPTH 20
int agg_sub_depth_exceeded(terr_t *err);

/* optimize.c: mongod's rewrites of a pipeline ($skip/$limit/$match
 * coalescing, $match moved before $sort and split across $project /
 * $addFields / $set / $unset): true with *out (initialised; the caller
 * destroys it) the rewritten stages array, false when nothing changes
 * (out untouched). */
bool agg_pipeline_optimize(const bson_t *stages, bson_t *out);
/* agg_pipeline_parse without the rewrites (pipeline.c). */
int agg_pipeline_parse_as_is(const bson_t *stages, const bson_t *let, const agg_host_t *host,
                             agg_pipeline_t **out, terr_t *err);

/*
 * Views read by $lookup / $unionWith / $graphLookup (agg/view.c).  A query
 * resolves each view once and parses its stages once, whatever the number
 * of stages reading it: the root pipeline keeps one row per namespace asked
 * for, and every reader borrows the row's parsed stages, so a tree of views
 * each reading the one below several times costs one parse per view, not
 * one per path through the tree.
 */
typedef struct agg_view_ref {
	char *db, *name;
	char *base;                   /* the collection under it; NULL: not a view */
	bson_t stages;                /* the chain's stages, innermost first (a view) */
	/* a time-series collection read as a view of its buckets (stages: the
	 * unpack): a copy of its options, for the reader's $geoNear rewrite
	 * (ts_geonear_rewrite); NULL otherwise.  Owned. */
	bson_t *ts_options;
	agg_pipeline_t *pipe;         /* stages parsed on first use (owned; NULL before) */
	bool parsing;                 /* its parse is under way (a view reading itself) */
} agg_view_ref_t;

/* db.name as the pipeline pc belongs to reads it: 0 with *ref (borrowed
 * until the root pipeline is freed; ref->base NULL when db.name is no
 * view); -1 with err: 165 past 20 views on its viewOn chain, 195 when its
 * stages exceed 16 000 000 bytes (agg_view_resolve). */
int agg_view_ref(agg_pctx_t *pc, const char *db, const char *name, agg_view_ref_t **ref, terr_t *err);
/* The stages of view ref parsed as a sub-pipeline of pc ($lookup level):
 * parsed on the first call, then the same pipeline for every reader (*pipe
 * borrowed from ref).  -1 with err: the stages' parse errors, 232
 * MaxSubPipelineDepthExceeded when reading them here nests past 20. */
int agg_view_ref_pipe(agg_pctx_t *pc, agg_view_ref_t *ref, agg_pipeline_t **pipe, terr_t *err);
/* Free the root pipeline's rows (after its stages, which borrow them). */
void agg_view_refs_free(agg_pipeline_t *p);

/* The runtime of one stage. */
struct agg_rt {
	const agg_stage_t *st;
	agg_rt_t *input;              /* the stage before; NULL = the exec's source */
	agg_exec_t *x;
	expr_env_t *env;              /* this stage's environment (own arena) */
	void *state;
	int64_t nreturned;
};

/* Pull the next document from the stage before (or the source). */
int agg_rt_pull(agg_rt_t *rt, const bson_t **doc, terr_t *err);

/*
 * The column path between $_internalUnpackBucket and the $group right
 * after it (stage_unpack.c, stage_group.c): instead of building each
 * measurement as a document, the unpack stage hands the group one bucket
 * at a time as columns -- the times and the values of the fields the
 * group's accumulators read -- of the measurements that pass its event
 * filter (or all of them, under the wholeBucketFilter), in the order the
 * unpack would emit them.
 */
#define TS_BLOCK_MAX_FIELDS 32
typedef struct agg_ts_block {
	int n;                        /* measurements kept */
	const int64_t *times;         /* times[i]: measurement i's time */
	const bson_value_t *vals;     /* vals[f * stride + i]: field f of measurement i (EOD: missing) */
	int stride;
	const bson_value_t *meta;     /* the bucket's meta (NULL: none) */
	const bson_t *bucket;         /* the bucket (its v1 form when it was compressed) */
	bool whole;                   /* no measurement of the bucket was filtered out */
} agg_ts_block_t;
/* Whether rt is an unpack stage marked by the command layer for a $group
 * run on columns (and its event filter, if any, is a time interval):
 * *bin is how the group's _id reads the time (-1 not at all, > 0 bins of
 * that width from 2000-01-01, 0 otherwise); the names borrow from its plan. */
bool agg_unpack_block_ok(const agg_rt_t *rt, int64_t *bin, const char **time_field, const char **meta_field);
/* The next bucket of unpack stage rt as columns of fields[0..nfields)
 * (nfields <= TS_BLOCK_MAX_FIELDS; neither the time nor the meta field):
 * 1 with *b (borrowed from rt's state and the bucket: valid until the next
 * call), 0 at the end, -1 with err (a compressed column that does not
 * decode, a time that is not a date). */
int agg_unpack_next_block(agg_rt_t *rt, const char *const *fields, int nfields, agg_ts_block_t *b, terr_t *err);

/* Defines `static int fn(agg_rt_t *rt, terr_t *err)`, the open of a stage
 * whose state (a `state_t`, zeroed, from tm_alloc0) holds a `bson_t out` for
 * the documents it builds: initialises `out` and hangs the state on
 * rt->state.  The stage's close destroys `out` and frees the state.  The
 * file using it includes common/mem.h. */
#define AGG_DEFINE_OPEN_WITH_OUT(fn, state_t) \
	static int fn(agg_rt_t *rt, terr_t *err) \
	{ \
		state_t *s_ = tm_alloc0(sizeof(*s_)); \
		bson_init(&s_->out); \
		rt->state = s_; \
		return 0; \
	}

/* The runtime shared by the stages of one run. */
struct agg_exec {
	const agg_pipeline_t *p;
	agg_rt_t *rts;
	int nrts;
	storage_session_t *s;         /* set on each agg_exec_next */
	int64_t now_ms;               /* $$NOW for the whole run */
	/* the source */
	void *plan;                   /* plan_exec_t * over the collection, or NULL */
	bool source_done;
	/* a sub-pipeline fed by its caller ($facet input, $lookup source) */
	int (*feed)(void *ctx, const bson_t **doc, terr_t *err);
	void *feed_ctx;
	/* the $facet whose branch this is: it hands each document of its
	 * input on, slots included (stage_project.c walks on into its input) */
	const agg_rt_t *feeder;
	bool top;                     /* the command's own run (not a sub-run) */
	const char *error_context;    /* prefix for runtime errors (static string) or NULL */
	bool done;
	bson_t result;                /* copy of the last result (stable view) */
	bson_t stripped;              /* a result without its "$textScore" (source_text_score) */
	bool stripped_init;
	/* variable values set on every stage's env (command let, $lookup let) */
	int *var_ids;
	char **var_names;             /* owned */
	bson_value_t *var_vals;       /* owned copies */
	int nvars;
};

/* Sub-runs: a $facet branch or a $lookup pipeline, knowing the parent's
 * variables.  Its input is x->feed when set, or the collection opened with
 * agg_exec_open_source, or nothing. */
int agg_exec_new_sub(const agg_pipeline_t *p, agg_exec_t *parent, agg_exec_t **out, terr_t *err);
/* agg_exec_new_sub for a $facet branch fed by the $facet feeder (set
 * before the stages open, so they can see past it). */
int agg_exec_new_branch(const agg_pipeline_t *p, agg_exec_t *parent, const agg_rt_t *feeder, agg_exec_t **out,
                        terr_t *err);
/* Read coll (borrowed; a reference is taken; NULL = empty) through the find
 * executor with filter (may be NULL), compiled with x's variables as let.
 * Replaces any source x had (so a $lookup re-runs one exec per document). */
int agg_exec_open_source(agg_exec_t *x, storage_coll_t *coll, const bson_t *filter, terr_t *err);
/* Set a variable in every stage's environment of x (copied; inherited by sub-runs). */
int agg_exec_set_var(agg_exec_t *x, int id, const char *name, const bson_value_t *v,
                     terr_t *err);
/* {name: value} of every variable x knows (new document, caller destroys). */
bson_t *agg_exec_let_doc(const agg_exec_t *x);
/* Pull from a sub-run: 1 with *doc (valid until the next call), 0, -1. */
int agg_exec_pull(agg_exec_t *x, const bson_t **doc, terr_t *err);


/* ---- stage tables (one per family) -------------------------------------- */
/* Removed fields' slots across $sort (see stage_project.c's head comment).
 * agg_sort_carry_slots: a $addFields / $set, at its open, asks the $sort
 * sort_rt it reads through to keep, with each document it holds in memory,
 * the slots of the exclusion excl (upstream of the sort) and to hand them
 * back to excl as the document leaves (false: it cannot -- too many
 * exclusions, or already running; the chain then ends there).
 * agg_is_sort_stage: rt runs $sort.
 * agg_proj_slot_skeleton (stage_project.c): appends to out excl's input of
 * its last document reduced to what reordering reads (its field names in
 * order, values only below the exclusion's sub-paths; a few bytes per
 * field), and returns whether that document had a field excl removed (a
 * slot; false: nothing to keep).  agg_proj_slot_set: excl's input of the
 * current document becomes ref (borrowed: the caller keeps it valid until
 * it sets another or the pipeline closes; NULL: the document has no slot).
 * excl may also be a $addFields / $set whose missing computed values leave
 * slots (holes): its skeleton is its last output's, each hole's value
 * undefined (false: no hole), and agg_proj_slot_set reads the holes back
 * from ref (copied; NULL: none). */
bool agg_sort_carry_slots(const agg_rt_t *sort_rt, const agg_rt_t *excl);
/* agg_group_carry_slots (stage_group.c): the $group group_rt, whose output
 * field `path` (its first field: a promotion may go deeper, "d.s") is a
 * $first / $last / $top / $bottom of $$ROOT, keeps excl's slots with the
 * document that accumulator holds and hands them back as it outputs the
 * group (false: it cannot -- another field, another accumulator, already
 * running, or a $group 9.0 runs in SBE, agg_classic_group_input).
 * agg_is_group_stage: rt is a $group.  agg_classic_group_input
 * (stage_project.c): whether mongod 9.0 runs group_rt as a classic
 * DocumentSource on Documents that still hold excl's slots -- excl is a
 * $addFields, or a stage other than $match / $sort / $limit / $skip comes
 * before it (under 9.0's default trySbeRestricted only a prefix of $group /
 * $lookup after what the find layer absorbs goes into SBE, which hands on
 * BSON), or the $group is in a $facet branch. */
bool agg_group_carry_slots(const agg_rt_t *group_rt, const agg_rt_t *excl, const char *path);
/* agg_group_root_field: whether output field name (len bytes) of the
 * $group group_rt keeps $$ROOT's Document: 0 no, 1 one Document ($first /
 * $last / $top / $bottom), 2 an array of them ($push / $addToSet /
 * $firstN / $lastN / $topN / $bottomN / $maxN / $minN: AccumulatorPush and
 * AccumulatorN keep each input Value).  For 2, agg_group_carry_slots keeps
 * the slots of each document the accumulator takes, and hands none back as
 * it outputs a group: agg_group_slot_element hands back those of element j
 * of the group's last output (j < 0, or an element without: none). */
int agg_group_root_field(const agg_rt_t *group_rt, const char *name, size_t len);
void agg_group_slot_element(const agg_rt_t *group_rt, int64_t j);
/* agg_group_current: the index of the group the $group group_rt output
 * last (-1: none, or not carrying); agg_group_set_current: a carrier ($sort)
 * handing on a document that $group emitted earlier sets it back (the
 * groups stay in memory until the pipeline closes), so
 * agg_group_slot_element answers for that group. */
int64_t agg_group_current(const agg_rt_t *group_rt);
void agg_group_set_current(const agg_rt_t *group_rt, int64_t i);
bool agg_is_group_stage(const agg_rt_t *rt);
bool agg_classic_group_input(const agg_rt_t *group_rt, const agg_rt_t *excl);
bool agg_is_sort_stage(const agg_rt_t *rt);
/* agg_replace_root_path (stage_basic.c): rt is a $replaceRoot /
 * $replaceWith promoting the document at *path of its input ("$a.b";
 * NULL: $$ROOT itself), whose Document -- slots included -- it hands on
 * (ReplaceRootTransformation builds its output on newRoot's Document). */
bool agg_replace_root_path(const agg_rt_t *rt, const char **path);
/* agg_unwind_current (stage_basic.c): rt is an $unwind of *path; *index:
 * the array element its last output holds in place of the array (-1: that
 * output held no element -- a scalar, null, missing or empty array).  The
 * element is the Value mongod's $unwind sets, a Document with its slots. */
bool agg_unwind_current(const agg_rt_t *rt, const char **path, int64_t *index);
/* agg_unwind_set_current: a carrier ($sort, $facet) handing on a document
 * the $unwind rt emitted earlier sets back the element it held (rt has
 * finished running by then). */
void agg_unwind_set_current(const agg_rt_t *rt, int64_t index);
bool agg_proj_slot_skeleton(const agg_rt_t *excl, bson_t *out);
void agg_proj_slot_set(const agg_rt_t *excl, const bson_t *ref);
/* The slots a carrier keeps with one document, as bytes: agg_proj_slots_pack
 * writes into *buf (grown as needed, *cap its size; scratch a bson_t the
 * caller owns) one skeleton per exclusion of srcs[0..n) (an empty document
 * where it has none; for an $unwind among srcs, {i: its current element})
 * and returns their length, 0 when the document has no slot anywhere (keep
 * nothing).  agg_proj_slots_unpack hands them back:
 * each srcs[j] gets views[j] (static over aux, so aux must stay valid as
 * long as the document) or NULL (aux NULL or len 0: none at all); an
 * $unwind gets its element back (agg_unwind_set_current).
 * agg_proj_slot_candidates: the exclusions (and the $addFields / $set,
 * which then keep their holes) upstream of `from` (itself included) whose
 * slots a stage after it may fill, into out[0..max),
 * nearest first; returns how many (a $facet carries those for its branches).
 * agg_facet_carry_slots (stage_lookup.c): whether the $facet facet_rt
 * carries excl's slots to its branches (decided at its open). */
size_t agg_proj_slots_pack(const agg_rt_t *const *srcs, int n, bson_t *scratch, uint8_t **buf, size_t *cap);
/* agg_carry_add: a carrier ($sort, a classic $group) asked to carry the
 * slots of src, not yet in its list *srcs[0..*n), appends it (the list
 * grown with *views, both owned by the carrier and freed with bson_free;
 * *cap their size).  False past AGG_CARRY_MAX sources (each costs every
 * document it holds a skeleton): the asking chain then ends there. */
#define AGG_CARRY_MAX 64
bool agg_carry_add(const agg_rt_t ***srcs, bson_t **views, int *n, int *cap, const agg_rt_t *src);
void agg_proj_slots_unpack(const agg_rt_t *const *srcs, int n, const uint8_t *aux, uint32_t len, bson_t *views);
int agg_proj_slot_candidates(const agg_rt_t *from, const agg_rt_t **out, int max);
bool agg_facet_carry_slots(const agg_rt_t *facet_rt, const agg_rt_t *excl);
/* agg_lookup_as (stage_lookup.c): the `as` path of the $lookup rt
 * (borrowed from its plan; NULL for another stage). */
const char *agg_lookup_as(const agg_rt_t *rt);
/* A stage other than $addFields / $set that sets the field at a dotted
 * path on its input's Document -- $lookup's `as`, $unwind's
 * includeArrayIndex: mongod's MutableDocument::setNestedField on the input
 * -- fills that field's slot as $addFields does.  agg_slot_filler_new, at
 * the stage rt's open: NULL when no stage upstream may leave a slot there
 * (nothing to do per document), else a filler the stage frees with
 * agg_slot_filler_free.  agg_slot_filler_apply: the stage's output `out`
 * for the current document, laid out with the path in its slot (out
 * itself, or a document the filler owns, valid until its next call). */
typedef struct agg_slot_filler agg_slot_filler_t;
agg_slot_filler_t *agg_slot_filler_new(const agg_rt_t *rt, const char *path);
const bson_t *agg_slot_filler_apply(agg_slot_filler_t *f, const bson_t *out);
void agg_slot_filler_free(agg_slot_filler_t *f);

extern const agg_stage_def_t agg_stages_basic[];
extern const agg_stage_def_t agg_stages_project[];
extern const agg_stage_def_t agg_stages_group[];
extern const agg_stage_def_t agg_stages_sort[];
extern const agg_stage_def_t agg_stages_lookup[];
extern const agg_stage_def_t agg_stages_geo[];
extern const agg_stage_def_t agg_stages_write[];
extern const agg_stage_def_t agg_stages_stats[];
extern const agg_stage_def_t agg_stages_window[];
extern const agg_stage_def_t agg_stages_densify[];
extern const agg_stage_def_t agg_stages_changestream[];
/* stage_changestream.c: after parsing a top-level pipeline, mongod's rules
 * for what may follow $changeStream (20 "<stage> is not permitted in a
 * $changeStream pipeline"), $changeStreamSplitLargeEvent only in a change
 * stream; hands a $match right after $changeStream to the reader. */
int agg_change_stream_check(agg_pipeline_t *p, terr_t *err);
extern const agg_stage_def_t agg_stages_qstats[];     /* stage_querystats.c */
extern const agg_stage_def_t agg_stages_unpack[];   /* $_internalUnpackBucket (time-series) */

/* Look up a stage by name across the tables (NULL when unknown). */
const agg_stage_def_t *agg_stage_lookup(const char *name);

/* ---- helpers ------------------------------------------------------------ */

/* {name: spec} as a new document for explain. */
bson_t *agg_explain_doc(const char *name, const bson_value_t *spec);

/* Evaluate e with $$ROOT = $$CURRENT = doc in rt's env (reset first when
 * reset is true).  The result borrows from doc or the env. */
int agg_eval(agg_rt_t *rt, const expr_t *e, const bson_t *doc, bool reset, bson_value_t *out,
             terr_t *err);

/* A hash consistent with bv_equal (numbers of equal value hash alike):
 * $group keys, $lookup's hash join. */
uint64_t agg_value_hash(const bson_value_t *v, const coll_t *coll);

/* The pipeline's collation (agg_host_t.collation; NULL host: simple). */
static inline const coll_t *
agg_host_collation(const agg_host_t *host)
{
	return host != NULL ? host->collation : NULL;
}

/* A view of a document/array value as a bson_t. */
bool agg_value_doc(const bson_value_t *v, bson_t *out);

/* Sorting: a compiled sort pattern {a: 1, b: -1} and the key extraction
 * MongoDB uses (array fields sort by their smallest element ascending,
 * largest descending; missing sorts as null). */
typedef struct agg_sort_key {
	char *path;
	int dir;                      /* 1 or -1 */
	bool meta;                    /* {$meta: ...}: refused */
} agg_sort_key_t;
typedef struct agg_sort_spec {
	agg_sort_key_t *keys;
	int nkeys;
	const coll_t *coll;           /* strings order by it (set by the stage) */
} agg_sort_spec_t;
int agg_sort_spec_parse(const bson_t *spec, agg_sort_spec_t *out, terr_t *err);
/* stage_basic.c: whether p's first stage is a $match holding a $text. */
bool agg_first_is_text_match(const agg_pipeline_t *p);
void agg_sort_spec_destroy(agg_sort_spec_t *s);
/* Fill vals[i] (borrowed from doc) with the sort key of doc for key i. */
void agg_sort_key_values(const agg_sort_spec_t *s, const bson_t *doc, bson_value_t *vals);
/* Compare two documents by the spec (stable sorts add their own tiebreak). */
int agg_sort_compare_values(const agg_sort_spec_t *s, const bson_value_t *a, const bson_value_t *b);
/* A $limit right after a $sort: the sort keeps only the first limit. */
void agg_sort_set_limit(agg_stage_t *st, int64_t limit);

#endif
