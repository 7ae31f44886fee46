/*
 * expr_private.h -- what the files of src/expr/ share and nobody else sees:
 * the tree node, the operator table row, the environment and its arena, and
 * small value helpers the operator families use.
 *
 * Every operator family (expr_arith.c, expr_string.c, ...) exports one table
 * of expr_op_t rows; expr_parse.c looks names up across all tables.
 */
#ifndef TAMGA_EXPR_PRIVATE_H
#define TAMGA_EXPR_PRIVATE_H

#include "common/arena.h"
#include "common/opctx.h"
#include "bson/collation.h"
#include "expr/expr.h"

typedef struct expr_op expr_op_t;

typedef int (*expr_eval_fn)(const expr_t *e, expr_env_t *env, bson_value_t *out, terr_t *err);
/* Custom parse for operators whose argument is not a plain list (named
 * arguments, bound variables).  node->op is set; fill args/names/vars. */
typedef int (*expr_parse_fn)(expr_t *node, const bson_value_t *arg, expr_scope_t *scope, terr_t *err);

struct expr_op {
	const char *name;   /* "$add" */
	int min_args;       /* list-form arity; ignored with a custom parse */
	int max_args;       /* -1 = no upper bound */
	expr_parse_fn parse;/* NULL: arguments are a list (or one bare value) */
	expr_eval_fn eval;
	int flags;          /* EXPR_OP_* */
	const char *alias_of; /* name mongod reports in arity errors, or NULL */
};

#define EXPR_OP_NOFOLD 1   /* never constant-fold ($rand) */

enum expr_kind {
	EXPR_CONST,   /* value */
	EXPR_FIELD,   /* $$CURRENT + path */
	EXPR_VAR,     /* variable var + optional path */
	EXPR_OBJECT,  /* names[i]: args[i] */
	EXPR_ARRAY,   /* args */
	EXPR_OP,      /* op with args */
};

struct expr {
	enum expr_kind kind;
	const expr_op_t *op;
	bson_value_t value;     /* EXPR_CONST: owned deep copy */
	char *path;             /* EXPR_FIELD / EXPR_VAR: dotted rest, or NULL */
	int var;                /* EXPR_VAR id; also the variable an op binds */
	int var2;               /* second bound variable ($reduce $$value) */
	expr_t **args;
	size_t nargs;
	char **names;           /* EXPR_OBJECT field names; named-argument ops */
	void *extra;            /* op-specific parsed state */
	void (*extra_free)(void *);
	bool constant;          /* whole subtree folds to a constant */
	const coll_t *coll;     /* EXPR_OP: the collation its string comparisons use */
};

/* MongoDB's value order for expressions (missing and undefined below null),
 * strings by coll (NULL: simple).  expr_logic.c. */
int expr_compare(const bson_value_t *a, const bson_value_t *b, const coll_t *coll);

/* Operator tables, one per family; terminated by a row with name NULL. */
extern const expr_op_t expr_ops_arith[];
extern const expr_op_t expr_ops_logic[];
extern const expr_op_t expr_ops_string[];
extern const expr_op_t expr_ops_array[];
extern const expr_op_t expr_ops_object[];
extern const expr_op_t expr_ops_type[];
extern const expr_op_t expr_ops_date[];
extern const expr_op_t expr_ops_accum[];
extern const expr_op_t expr_ops_misc[];
extern const expr_op_t expr_ops_js[];      /* $function (expr_js.c) */

/* $accumulator's JavaScript (accum_js.c), called by accum.c.  States are
 * owned bson_values (copies); each call replaces *state / *into. */
typedef struct accum_js accum_js_t;
int accum_js_parse(const bson_value_t *arg, expr_scope_t *scope, accum_js_t **out, terr_t *err);
void accum_js_free(accum_js_t *j);
int accum_js_init(const accum_js_t *j, expr_env_t *env, bson_value_t *state, terr_t *err);
int accum_js_accumulate(const accum_js_t *j, expr_env_t *env, bson_value_t *state, terr_t *err);
int accum_js_merge(const accum_js_t *j, bson_value_t *into, const bson_value_t *from, terr_t *err);
int accum_js_finalize(const accum_js_t *j, const bson_value_t *state, expr_env_t *env,
                      bson_value_t *out, terr_t *err);

/* ---- env ---------------------------------------------------------------- */

struct expr_env {
	bson_value_t *vars;     /* per id; BSON_TYPE_EOD = unset/missing */
	uint8_t **var_owned;    /* heap storage behind vars[i] (set_var) */
	size_t nvars;
	bson_value_t root, current;
	int64_t now;
	uint32_t ct_t, ct_i;
	bool ct_set;            /* $$CLUSTER_TIME available (replica set) */
	bson_value_t meta;      /* $meta fields (document) or missing */
	tm_arena_t arena;       /* owns evaluation results (common/arena.h) */
	int depth;              /* recursion guard */
	uint64_t rand_state;
};

/* ---- scope -------------------------------------------------------------- */

typedef struct expr_scope_var {
	char *name;
	int id;
	int level;
} expr_scope_var_t;

struct expr_scope {
	expr_scope_var_t *v;
	size_t n, cap;
	int next_id;
	int level;
	int depth;      /* parse recursion guard */
	const coll_t *coll; /* the command's collation (NULL: simple); nodes copy it */
	bool in_validator;  /* parsing a collection validator: no $function (4660800) */
};

/* Bind a new variable for an operator's body ($let vars, $map as, ...):
 * checks the name as a user variable and defines it one level in. */
int expr_scope_bind(expr_scope_t *s, const char *name, int *id, terr_t *err);

/* Bind a variable for the duration of an operator's body during evaluation
 * (value borrowed; it must outlive the body's evaluation). */
void expr_env_bind(expr_env_t *env, int id, const bson_value_t *v);
/* The current value of a variable id (missing when unset). */
void expr_env_var(const expr_env_t *env, int id, bson_value_t *out);

/* ---- parse helpers ------------------------------------------------------ */

expr_t *expr_node_new(enum expr_kind kind);
int expr_parse_sub(const bson_value_t *spec, expr_scope_t *scope, expr_t **out, terr_t *err);
/* The end of a custom parse: e takes parts[0..n) as its args (a new array;
 * the parts are e's from then on). */
void expr_args_set(expr_t *e, expr_t **parts, size_t n);
/* The failure path of a custom parse: destroys parts[0..n) (NULLs allowed). */
void expr_parts_destroy(expr_t **parts, size_t n);
/* Parse named arguments from the document `arg` (the caller checked its
 * type): the field named names[i] is sub-parsed into parts[i] (a repeated
 * name keeps the last; parts[] starts all NULL).  Returns 0, or an error
 * with `unknown_code` and `unknown_fmt` -- a format given e's operator name
 * then the field name -- for a name not in names[].  On error parts[] may
 * hold sub-trees: the caller destroys them either way.  The caller checks
 * which parts are required. */
int expr_parse_named(const expr_t *e, const bson_value_t *arg, expr_scope_t *scope, const char *const *names,
                     int n, expr_t **parts, int unknown_code, const char *unknown_fmt, terr_t *err);

/* ---- eval helpers ------------------------------------------------------- */

static inline void
expr_set_missing(bson_value_t *v)
{
	memset(v, 0, sizeof(*v));
	v->value_type = BSON_TYPE_EOD;
}
static inline void
expr_set_null(bson_value_t *v)
{
	memset(v, 0, sizeof(*v));
	v->value_type = BSON_TYPE_NULL;
}
static inline void
expr_set_bool(bson_value_t *v, bool b)
{
	memset(v, 0, sizeof(*v));
	v->value_type = BSON_TYPE_BOOL;
	v->value.v_bool = b;
}
static inline void
expr_set_int32(bson_value_t *v, int32_t i)
{
	memset(v, 0, sizeof(*v));
	v->value_type = BSON_TYPE_INT32;
	v->value.v_int32 = i;
}
static inline void
expr_set_int64(bson_value_t *v, int64_t i)
{
	memset(v, 0, sizeof(*v));
	v->value_type = BSON_TYPE_INT64;
	v->value.v_int64 = i;
}
static inline void
expr_set_double(bson_value_t *v, double d)
{
	memset(v, 0, sizeof(*v));
	v->value_type = BSON_TYPE_DOUBLE;
	v->value.v_double = d;
}
static inline void
expr_set_date(bson_value_t *v, int64_t ms)
{
	memset(v, 0, sizeof(*v));
	v->value_type = BSON_TYPE_DATE_TIME;
	v->value.v_datetime = ms;
}
static inline void
expr_set_decimal(bson_value_t *v, bson_decimal128_t d)
{
	memset(v, 0, sizeof(*v));
	v->value_type = BSON_TYPE_DECIMAL128;
	v->value.v_decimal128 = d;
}
static inline bool
expr_is_nullish(const bson_value_t *v)
{
	return v->value_type == BSON_TYPE_EOD || v->value_type == BSON_TYPE_NULL ||
	       v->value_type == BSON_TYPE_UNDEFINED;
}

/* A string copied into the arena (len bytes, NUL added). */
void expr_set_string(expr_env_t *env, bson_value_t *v, const char *s, size_t len);
/* Finish a document/array built in b: copy its bytes into the arena and
 * destroy b (must be a stack bson_t initialised with bson_init). */
void expr_set_doc_from(expr_env_t *env, bson_value_t *v, bson_t *b, bool array);

/* Values built by operators stay below mongod's buffer limit (64 MB); past
 * it, operators fail with 13548 as mongod's BufBuilder does. */
#define EXPR_MAX_VALUE_BYTES (64u * 1024 * 1024)
static inline int
expr_too_big(size_t n, terr_t *err)
{
	return terr_set(err, 13548, "BufBuilder attempted to grow() to %zu bytes, past the 64MB limit.", n);
}

/* Evaluate argument i. */
static inline int
expr_eval_arg(const expr_t *e, size_t i, expr_env_t *env, bson_value_t *out, terr_t *err)
{
	return expr_eval(e->args[i], env, out, err);
}

/* Type name for messages ("missing" for EOD). */
const char *expr_type_name(const bson_value_t *v);

/* Append v to an array builder with the next index; missing is skipped by
 * callers that must, not here (appends null... no: appends nothing). */
void expr_array_append(bson_t *arr, uint32_t *idx, const bson_value_t *v);

/* Iterate a document/array value. */
bool expr_iter_init(bson_iter_t *it, const bson_value_t *v);
uint32_t expr_array_len(const bson_value_t *v);

/* Numbers: widest-type promotion helpers shared by arith, type, accum. */
enum expr_numtype { EXPR_NUM_INT32, EXPR_NUM_INT64, EXPR_NUM_DOUBLE, EXPR_NUM_DECIMAL };
bool expr_num_get_int64(const bson_value_t *v, int64_t *out);  /* int32/int64 only */
bson_decimal128_t expr_num_to_decimal(const bson_value_t *v);
double expr_num_to_double(const bson_value_t *v);
/* Exact integral value of any number fitting int64 (doubles/decimals must
 * be whole). */
bool expr_num_to_int64_exact(const bson_value_t *v, int64_t *out);
/* Whether a number is an integral value representable as int32 (MongoDB's
 * "integral" check for positions, places, ...). */
bool expr_num_to_int32_exact(const bson_value_t *v, int32_t *out);

/* Arithmetic shared with accumulators ($sum/$avg): a running sum with
 * MongoDB's widening (int32 -> int64 -> double; decimal absorbs). */
typedef struct expr_sum {
	enum expr_numtype type;
	int64_t i;                 /* exact while type <= INT64 */
	double d;                  /* double sum (Kahan) */
	double dc;                 /* compensation */
	bson_decimal128_t dec;
	bool have_dec;
	bool exact;                /* $sum accumulator: integers summed exactly
	                            * (128-bit), as mongod's DoubleDoubleSummation;
	                            * $add instead falls back to double on int64
	                            * overflow */
	__int128 wide;
} expr_sum_t;
void expr_sum_init(expr_sum_t *s);
void expr_sum_add(expr_sum_t *s, const bson_value_t *v); /* v must be a number */
void expr_sum_get(const expr_sum_t *s, bson_value_t *out);

/* Regex helpers (expr_string.c). */

/* Date helpers (expr_date.c). */

#endif
