/*
 * match_private.h -- the compiled filter tree shared by the match_*.c files.
 *
 * A filter compiles to a tree of mnode_t.  Every node kind is one row of the
 * operator table (mop_t): how it evaluates against a whole document
 * (eval_doc) and against one value (eval_value: the value form of
 * $elemMatch and $not use it; path leaves run it on each value the path
 * reaches).  Values borrow from the match_t's private copy of the filter.
 *
 * Not for use outside src/query/.
 */
#ifndef TAMGA_QUERY_MATCH_PRIVATE_H
#define TAMGA_QUERY_MATCH_PRIVATE_H

#include <stdbool.h>
#include <stdint.h>
#include <bson/bson.h>

#include "bson/path.h"
#include "common/error.h"
#include "common/mem.h"
#include "query/match.h"

typedef struct mnode mnode_t;
typedef struct mop mop_t;

/* Kinds: the rows of the operator table, in match.c. */
typedef enum {
	MK_AND, MK_OR, MK_NOR, MK_NOT, MK_TRUE, MK_FALSE, MK_EXPR, MK_SCHEMA,
	MK_EQ, MK_LT, MK_LTE, MK_GT, MK_GTE, MK_IN, MK_EXISTS, MK_TYPE, MK_MOD,
	MK_REGEX, MK_SIZE, MK_ELEM_OBJ, MK_ELEM_VAL,
	MK_BITS_ALL_SET, MK_BITS_ANY_SET, MK_BITS_ALL_CLEAR, MK_BITS_ANY_CLEAR, MK_SAMPLE,
	MK_TEXT, MK_GEO, MK_GEO_NEAR,
	MK_BUCKET_GEO,           /* $_internalBucketGeoWithin (a time-series bucket; path data.<field>) */
	MK__COUNT
} mkind_t;

typedef struct mregex {
	void *code;            /* pcre2_code_8 * */
	const char *pattern;   /* borrowed */
	char *flags;           /* owned copy of the MongoDB flags */
} mregex_t;

struct mnode {
	mkind_t kind;
	bool has_path;
	bpath_t path;            /* path leaves; also $elemMatch */
	bson_value_t val;        /* operand, borrowed from the filter copy */
	const coll_t *coll;      /* comparison leaves: the filter's collation */
	mnode_t **kids;          /* logical nodes, $elemMatch, $not */
	uint32_t nkids, kids_cap; /* kids_cap: slots allocated (match_node_add doubles it) */
	union {
		struct { bson_value_t *sorted; uint32_t n; bool has_null; mregex_t *re; uint32_t nre; } in;
		struct { uint32_t mask[2]; } type;  /* bit per BSON type (0..31), + number/min/max */
		struct { int64_t div, rem; } mod;
		struct { int32_t n; } size;
		/* little-endian byte mask for low positions (and whole BinData
		 * masks), plus a sparse list of large array positions */
		struct { uint8_t *mask; uint32_t len; uint32_t *far; uint32_t nfar; } bits;
		mregex_t re;
		bool exists;
		double rate;             /* $sampleRate */
		bool or_same_path;       /* $or: every branch is a leaf on one path */
		void *expr;              /* expr_t * */
		void *schema;            /* schema_t * */
		/* $text (val: its argument): the parsed parameters, and what
		 * plan_exec binds (match_text_bind): the index spec and query */
		struct {
			const char *search; uint32_t search_len;
			const char *language;    /* NULL: the index's default */
			bool case_sensitive, diacritic_sensitive;
			const void *spec;        /* const text_spec_t * (cached forever) */
			const void *query;       /* const text_query_t * (the binder's) */
		} text;
		/* $geoWithin / $geoIntersects (shape: geo_shape_t *, owned) and
		 * $near / $nearSphere (near: geo_near_t *, owned); val: the operand;
		 * opname borrows from the filter copy.  $_internalBucketGeoWithin:
		 * shape (the withinRegion, owned), opname the measurement field,
		 * val the whole argument */
		struct {
			void *shape;
			void *near;
			int pred;                /* geo_pred_t */
			const char *opname;
		} geo;
	} u;
};

/* Evaluation context threaded through a document evaluation. */
typedef struct mctx {
	const match_t *m;
	const uint8_t *root_data; /* the top-level document */
	uint32_t root_len;
	terr_t *err;
	bool failed;
} mctx_t;

struct mop {
	const char *name;        /* "$eq", ... for explain/errors; NULL for internal */
	mkind_t kind;
	bool expand_leaf;        /* path leaves: walk expands leaf arrays */
	/* the node against a whole document (or an embedded one) */
	bool (*eval_doc)(const mnode_t *n, const uint8_t *data, uint32_t len, int *pos,
	                 mctx_t *c);
	/* one value (EOD = missing); NULL for nodes that only see documents */
	bool (*eval_value)(const mnode_t *n, const bson_value_t *v);
};

struct match {
	uint8_t *filter_data;    /* copy of the filter's bytes, in the match_t's own
	                          * allocation; node values borrow from it */
	uint32_t filter_len;
	mnode_t *root;
	bool can_fail;
	void *scope_vars;        /* $expr let values (bson_t *) */
};

extern const mop_t match_ops[MK__COUNT];

/* Document-level evaluation of any node over doc bytes (data,len); *pos gets
 * the positional array index when a leaf sets it. */
bool match_node_eval(const mnode_t *n, const uint8_t *data, uint32_t len, int *pos, mctx_t *c);
/* Value-level evaluation (elemMatch value form, $not inside it). */
bool match_node_eval_value(const mnode_t *n, const bson_value_t *v);

mnode_t *match_node_new(mkind_t kind);
void match_node_free(mnode_t *n);
void match_node_add(mnode_t *parent, mnode_t *kid);

/* match_compare.c: comparisons, $in, $exists, $type, $mod, $size, bits */
bool match_cmp_value(const mnode_t *n, const bson_value_t *v);
/* Give every node of the tree the collation and re-sort $in lists by it. */
void match_set_collation(mnode_t *n, const coll_t *coll);
bool match_in_value(const mnode_t *n, const bson_value_t *v);
bool match_exists_value(const mnode_t *n, const bson_value_t *v);
bool match_type_value(const mnode_t *n, const bson_value_t *v);
bool match_mod_value(const mnode_t *n, const bson_value_t *v);
bool match_size_value(const mnode_t *n, const bson_value_t *v);
bool match_bits_value(const mnode_t *n, const bson_value_t *v);
int match_in_prepare(mnode_t *n, terr_t *err);
int match_type_parse(mnode_t *n, const bson_value_t *arg, const char *opname, terr_t *err);
int match_mod_parse(mnode_t *n, const bson_value_t *arg, terr_t *err);
int match_size_parse(mnode_t *n, const bson_value_t *arg, terr_t *err);
int match_bits_parse(mnode_t *n, const char *opname, const bson_value_t *arg, terr_t *err);
/* BSONElement::parseIntegerElementTo{Long,NonNegativeLong,Int}: key names the
 * element in messages ("$size: 1.5"); errors are 9 FailedToParse. */
int match_parse_int_elem(const char *key, const bson_value_t *v, bool nonneg, bool to_int,
                         int64_t *out, terr_t *err);

/* match_regex.c */
int match_regex_compile(mregex_t *re, const char *pattern, uint32_t plen, const char *flags,
                        terr_t *err);
void match_regex_free(mregex_t *re);
bool match_regex_value(const mnode_t *n, const bson_value_t *v);
bool match_regex_test(const mregex_t *re, const bson_value_t *v);

/* match_array.c: $elemMatch */
bool match_elem_obj_array(const mnode_t *n, const bson_value_t *arr, int *pos, mctx_t *c);
bool match_elem_val_array(const mnode_t *n, const bson_value_t *arr, int *pos);
bool match_elem_value(const mnode_t *n, const bson_value_t *v);

/* match_logical.c: $expr / $jsonSchema hooks */
/* $where as mongod desugars it: fn_spec is {$function: {...}} (copied and
 * kept by the node, which serialises as {$expr: fn_spec}). */
int match_where_compile(mnode_t *n, const bson_t *fn_spec, const match_options_t *opts,
                        terr_t *err);
/* True for a $where node: *out borrows its code (from the node). */
bool match_where_body(const mnode_t *n, bson_value_t *out);
int match_expr_compile(mnode_t *n, const bson_value_t *arg, const match_options_t *opts,
                       terr_t *err);
bool match_expr_eval(const mnode_t *n, mctx_t *c);
void match_expr_free(mnode_t *n);
int match_schema_compile(mnode_t *n, const bson_value_t *arg, terr_t *err);
bool match_schema_eval(const mnode_t *n, const uint8_t *data, uint32_t len);
void match_schema_free(mnode_t *n);

/* A mongod-style rendering of one element ("$in: 5") for messages; caller
 * bson_free()s. */
char *match_value_str(const bson_value_t *v);

#endif
