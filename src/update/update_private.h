/*
 * update_private.h -- what the update/ files share and nobody else sees.
 *
 * An operator update compiles into a tree shaped like MongoDB's update
 * tree: object nodes (children by field name, plus an optional positional
 * "$" child), array nodes ($[] and $[<id>] children) and leaves (one
 * operator row of the table in op_*.c with its parsed argument).
 * Applying walks the document and the tree together and builds the new
 * document bottom-up; untouched subtrees are copied byte for byte.
 *
 * Not here: pipeline internals (pipeline.c keeps its own), upsert seeding.
 */
#ifndef TAMGA_UPDATE_PRIVATE_H
#define TAMGA_UPDATE_PRIVATE_H

#include <stdbool.h>
#include <stdint.h>
#include <bson/bson.h>

#include "common/error.h"
#include "common/nameidx.h"
#include "update/update.h"

#define UPDATE_MAX_BSON_SIZE (16 * 1024 * 1024)
#define UPDATE_MAX_DEPTH 180   /* BSONDepth::getMaxDepthForUserStorage() */
#define UPDATE_MAX_PADDING 1500000
/* Paths longer than this can neither exist in a stored document nor be
 * created (they would pass the depth limit); refusing them at compile time
 * bounds every recursion over update trees. */
#define UPDATE_MAX_PATH_PARTS 200

typedef struct unode unode_t;
typedef struct uop uop_t;
typedef struct uapply uapply_t;
typedef struct upipe upipe_t;
typedef struct match match_t;

typedef enum { UNODE_OBJECT, UNODE_ARRAY, UNODE_LEAF } unode_kind_t;

struct unode {
	unode_kind_t kind;
	/* object: field names (sorted as MongoDB: numeric names numerically);
	 * array: identifiers ("" for $[]), in first-use order */
	char **names;
	uint32_t *lens;           /* strlen of each name */
	uint8_t first[32];        /* bitmap of the names' first bytes */
	unode_t **kids;
	size_t n, cap;
	/* while compiling, children are appended (in request order) and found
	 * through idx; compiling ends by sorting them (node_sort_all), after
	 * which lookups are binary searches and the node is only read */
	bool unsorted;
	tm_nameidx_t idx;
	unode_t *positional;      /* object: the "$" child */
	/* leaf */
	const uop_t *op;
	bson_value_t arg;         /* owned copy of the operator's argument */
	char *path;               /* owned: the path as written ("a.$[x].b") */
	char *from;               /* $rename destination: owned source path */
	void *priv;               /* operator's parsed form, freed by op->free */
	const coll_t *coll;       /* the update's collation ($addToSet, $pull, $min, $max, $push $sort) */
};

/* What applying a node to a value produced. */
typedef enum { UR_KEEP, UR_SET, UR_REMOVE } ures_kind_t;
typedef struct ures {
	ures_kind_t kind;
	bson_value_t val;         /* UR_SET: owned (bson_value_destroy) */
} ures_t;

/* One operator: a row of the table in op_field.c / op_array.c. */
struct uop {
	const char *name;                 /* "$set" */
	/* Parse the argument into leaf->priv (may be NULL).  Returns 0 or -1. */
	int (*parse)(unode_t *leaf, const bson_value_t *arg, terr_t *err);
	/* Apply to cur (NULL: the path does not exist).  Sets *out; returns 0
	 * or -1 with err set. */
	int (*apply)(const unode_t *leaf, const bson_value_t *cur, uapply_t *st, ures_t *out,
	             terr_t *err);
	void (*free)(void *priv);
};

/* Filters of the command's arrayFilters, by identifier. */
typedef struct ufilter {
	char *id;
	match_t *m;
	bool used;
} ufilter_t;

struct update {
	update_kind_t kind;
	unode_t *root;            /* operators */
	bson_t *repl;             /* replacement (owned) */
	upipe_t *pipe;            /* pipeline */
	ufilter_t *filters;
	size_t nfilters;
	bool positional;
	const coll_t *coll;       /* update_options_t.coll */
};

/* Apply-time state. */
struct uapply {
	const update_t *u;
	const bson_t *root;       /* the original document */
	const update_apply_ctx_t *ctx;
	bool has_id;              /* the original document has an _id */
	/* path taken so far, for messages; borrowed names (field names of the
	 * document, tree names, index strings on the callers' stacks), valid
	 * while the walk is below them */
	const char **comp;
	size_t ncomp, capcomp;
	/* an operator that mongod always counts as a modification ran ($push
	 * with $sort, $currentDate), even if the bytes came out the same */
	bool force_modified;
	size_t missing_at;        /* first path component that does not exist,
	                             or SIZE_MAX while the path exists */
	int64_t now_ms;           /* ctx->now_ms, or the clock read once */
	char scratch[32];
};

/* ---- update.c: tree and helpers shared by the operators ---- */
const uop_t *update_op_find(const char *name);
/* "a.b.c" of the path taken so far plus last (if not NULL); caller frees. */
char *update_path_str(const uapply_t *st, const char *last);
/* "_id: 1" for messages; "no id" style fallback given. Caller frees. */
char *update_id_str(const uapply_t *st, const char *missing);
/* Owned copy into a ures SET. */
void update_res_set_copy(ures_t *r, const bson_value_t *v);
void update_res_set_steal_doc(ures_t *r, bson_t *doc, bool is_array);
/* Same type and same bytes (MongoDB's binaryEqualValues). */
bool update_value_identical(const bson_value_t *a, const bson_value_t *b);
/* Nesting levels of elements inside a value (scalar 0, {} 0, {a: 1} 1,
 * {a: {b: 1}} 2), as mongod counts for the storage depth limit. */
int update_value_depth(const bson_value_t *v);

/* ---- op tables ---- */
extern const uop_t update_ops_field[];   /* terminated by name == NULL */
extern const uop_t update_ops_array[];
/* Placeholder leaf on the source path of a $rename. */
extern const uop_t update_op_rename_from;

/* arrayFilters evaluation (update.c) */
int update_filter_matches(const uapply_t *st, const char *id, const bson_value_t *elem,
                          bool *out, terr_t *err);

/* $pull / arrayFilters matchers: {"x": elem} wrapped against a filter.  */
int update_match_value(const match_t *m, const char *wrap, const bson_value_t *elem, bool *out,
                       terr_t *err);

/* Replacement semantics shared by replacement and pipeline updates and by
 * upserts: old's _id kept when repl has none, a changed _id refused (66),
 * _id first.  *out initialised on success only. */
int update_replace_into(const bson_t *old, const bson_t *repl, bool allow_top_dollar,
                        bson_t *out, bool *modified, terr_t *err);

/* ---- pipeline.c ---- */
int update_pipe_compile(const bson_value_t *arr, const bson_t *let, const coll_t *coll, upipe_t **out,
                        terr_t *err);
void update_pipe_free(upipe_t *p);
/* Run the pipeline over doc; *out initialised on success. */
int update_pipe_run(const upipe_t *p, const bson_t *doc, const update_apply_ctx_t *ctx,
                    bson_t *out, terr_t *err);

/* ---- arithmetic (op_field.c) ---- */
typedef enum { UNUM_ADD, UNUM_MUL } unum_op_t;
/* a op b as MongoDB's SafeNum; false on int64 overflow (invalid). */
bool update_num_arith(unum_op_t op, const bson_value_t *a, const bson_value_t *b,
                      bson_value_t *out);
/* mongod's debugString of a number: "(NumberLong)9223372036854775807". */
char *update_num_debug(const bson_value_t *v);

#endif
