/*
 * accum.c -- the accumulators of accum.h, one table row per operator with
 * its parse / add / merge / finalize functions.
 *
 * States keep deep copies (bson_value_copy) of the values they hold; sums use
 * the expression language's widening running sum (expr_sum_t), so $sum of
 * int32s stays int32 until it overflows, as mongod.  The N-variants keep at
 * most n items in a sorted vector (insertion; n is small in practice).
 */
#include "expr/accum.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bson/value.h"
#include "expr/decimal.h"
#include "expr/expr_private.h"


typedef struct accum_op accum_op_t;

typedef struct item {
	bson_value_t v;      /* owned */
	bson_value_t *keys;  /* owned copies, a->nkeys of them ($top...), or NULL */
	uint64_t seq;        /* arrival order (stable ties) */
} item_t;

struct accum_state {
	expr_sum_t sum;
	int64_t count;          /* numbers seen ($avg), values ($count) */
	double mean, m2;        /* Welford ($stdDev*) */
	bool has;
	bson_value_t val;       /* owned ($min $max $first $last $mergeObjects) */
	item_t *items;
	size_t n, cap;
	uint64_t seq;
	size_t mem;
	size_t nkeys;           /* copy of the accum's, to free item keys */
};

enum { SORT_NONE, SORT_KEYS, SORT_VALUE };

struct accum {
	const accum_op_t *op;
	expr_t *arg;            /* the input / output expression */
	int64_t n;              /* N variants; 1 for $top/$bottom */
	char **paths;           /* sortBy paths ($top...) */
	int *dirs;
	size_t nkeys;
	double *ps;             /* $percentile p values */
	size_t nps;
	int method;             /* 0 approximate/discrete, 1 continuous */
	const coll_t *coll;     /* the scope's collation at parse time */
	accum_js_t *js;         /* $accumulator (accum_js.c) */
};

typedef int (*accum_add_fn)(const accum_t *a, accum_state_t *st, const bson_value_t *v, bson_value_t *keys,
                            terr_t *err);
typedef int (*accum_fin_fn)(const accum_t *a, const accum_state_t *st, expr_env_t *env, bson_value_t *out,
                            terr_t *err);
typedef int (*accum_parse_fn)(accum_t *a, const bson_value_t *arg, expr_scope_t *scope, terr_t *err);

struct accum_op {
	const char *name;
	accum_parse_fn parse;
	accum_add_fn add;
	accum_fin_fn finalize;
	int flags;
};

#define ACC_MERGE_BY_ITEMS 1  /* merge = re-add every item of `from` */
#define ACC_KEEP_MISSING 2    /* missing values are added (as null) */

/* ---- helpers ------------------------------------------------------------- */

static void
value_copy(const bson_value_t *src, bson_value_t *dst)
{
	if (src->value_type == BSON_TYPE_EOD) {
		expr_set_null(dst);
		return;
	}
	bson_value_copy(src, dst);
}

static size_t
value_size(const bson_value_t *v)
{
	switch (v->value_type) {
	case BSON_TYPE_UTF8: return 16 + v->value.v_utf8.len;
	case BSON_TYPE_DOCUMENT:
	case BSON_TYPE_ARRAY: return 16 + v->value.v_doc.data_len;
	case BSON_TYPE_BINARY: return 16 + v->value.v_binary.data_len;
	default: return 16;
	}
}

static void
items_push(const accum_t *a, accum_state_t *st, size_t at, const bson_value_t *v, bson_value_t *keys)
{
	if (st->n == st->cap) {
		st->cap = st->cap ? st->cap * 2 : 8;
		st->items = bson_realloc(st->items, st->cap * sizeof(*st->items));
	}
	memmove(&st->items[at + 1], &st->items[at], (st->n - at) * sizeof(*st->items));
	item_t *it = &st->items[at];
	value_copy(v, &it->v);
	it->keys = NULL;
	st->mem += sizeof(*it) + value_size(v);
	if (keys != NULL) {
		it->keys = bson_malloc(a->nkeys * sizeof(bson_value_t));
		for (size_t i = 0; i < a->nkeys; i++)
			value_copy(&keys[i], &it->keys[i]);
	}
	it->seq = st->seq++;
	st->n++;
}

static void
item_free(const accum_t *a, item_t *it)
{
	bson_value_destroy(&it->v);
	if (it->keys != NULL) {
		for (size_t i = 0; i < a->nkeys; i++)
			bson_value_destroy(&it->keys[i]);
		bson_free(it->keys);
	}
}

static void
items_remove(const accum_t *a, accum_state_t *st, size_t at)
{
	item_free(a, &st->items[at]);
	memmove(&st->items[at], &st->items[at + 1], (st->n - at - 1) * sizeof(*st->items));
	st->n--;
}

static void
set_array_from_items(expr_env_t *env, const accum_state_t *st, bson_value_t *out, bool reverse)
{
	bson_t b;
	uint32_t idx = 0;

	bson_init(&b);
	for (size_t i = 0; i < st->n; i++)
		expr_array_append(&b, &idx, &st->items[reverse ? st->n - 1 - i : i].v);
	expr_set_doc_from(env, out, &b, true);
}

/* ---- $sum $avg $count ---------------------------------------------------- */

static int
add_sum(const accum_t *a, accum_state_t *st, const bson_value_t *v, bson_value_t *keys, terr_t *err)
{
	if (bv_is_number(v)) {
		expr_sum_add(&st->sum, v);
		st->count++;
	}
	return 0;
}

static int
fin_sum(const accum_t *a, const accum_state_t *st, expr_env_t *env, bson_value_t *out, terr_t *err)
{
	expr_sum_get(&st->sum, out);
	return 0;
}

static int
fin_avg(const accum_t *a, const accum_state_t *st, expr_env_t *env, bson_value_t *out, terr_t *err)
{
	bson_value_t s;

	if (st->count == 0) {
		expr_set_null(out);
		return 0;
	}
	expr_sum_get(&st->sum, &s);
	if (s.value_type == BSON_TYPE_DECIMAL128)
		expr_set_decimal(out, expr_decimal_div(s.value.v_decimal128, expr_decimal_from_int64(st->count)));
	else if (s.value_type == BSON_TYPE_DOUBLE)
		expr_set_double(out, s.value.v_double / (double)st->count);
	else {
		int64_t i;
		expr_num_get_int64(&s, &i);
		expr_set_double(out, (double)i / (double)st->count);
	}
	return 0;
}

static int
parse_count(accum_t *a, const bson_value_t *arg, expr_scope_t *scope, terr_t *err)
{
	if (arg->value_type != BSON_TYPE_DOCUMENT || expr_array_len(arg) != 0)
		return terr_set(err, TERR_TYPE_MISMATCH, "$count takes no arguments, i.e. $count:{}");
	bson_value_t one;
	expr_set_int32(&one, 1);
	return expr_parse(&one, scope, &a->arg, err);
}

/* ---- $min $max $first $last ---------------------------------------------- */

static int
add_minmax(const accum_t *a, accum_state_t *st, const bson_value_t *v, bson_value_t *keys, terr_t *err)
{
	bool is_max = strcmp(a->op->name, "$max") == 0;

	if (expr_is_nullish(v))
		return 0;
	if (st->has) {
		int c = expr_compare(v, &st->val, a->coll);
		if (is_max ? c <= 0 : c >= 0)
			return 0;
		bson_value_destroy(&st->val);
	}
	value_copy(v, &st->val);
	st->has = true;
	return 0;
}

static int
add_first(const accum_t *a, accum_state_t *st, const bson_value_t *v, bson_value_t *keys, terr_t *err)
{
	if (st->has)
		return 0;
	value_copy(v, &st->val);
	st->has = true;
	return 0;
}

static int
add_last(const accum_t *a, accum_state_t *st, const bson_value_t *v, bson_value_t *keys, terr_t *err)
{
	if (st->has)
		bson_value_destroy(&st->val);
	value_copy(v, &st->val);
	st->has = true;
	return 0;
}

static int
fin_val(const accum_t *a, const accum_state_t *st, expr_env_t *env, bson_value_t *out, terr_t *err)
{
	if (!st->has)
		expr_set_null(out);
	else
		*out = st->val;
	return 0;
}

/* ---- $push $addToSet ---------------------------------------------------- */

#define ACC_MAX_BYTES (100 * 1024 * 1024) /* internalQueryMaxPushBytes / AddToSetBytes */

static int
add_push(const accum_t *a, accum_state_t *st, const bson_value_t *v, bson_value_t *keys, terr_t *err)
{
	if (v->value_type == BSON_TYPE_EOD)
		return 0;
	if (st->mem + value_size(v) > ACC_MAX_BYTES)
		return terr_set(err, 146, "$push used too much memory and cannot spill to disk. Memory limit: %d bytes",
		                ACC_MAX_BYTES);
	items_push(a, st, st->n, v, NULL);
	return 0;
}

static int
add_to_set(const accum_t *a, accum_state_t *st, const bson_value_t *v, bson_value_t *keys, terr_t *err)
{
	if (v->value_type == BSON_TYPE_EOD)
		return 0;
	for (size_t i = 0; i < st->n; i++) {
		if (expr_compare(&st->items[i].v, v, a->coll) == 0)
			return 0;
	}
	if (st->mem + value_size(v) > ACC_MAX_BYTES)
		return terr_set(err, 146, "$addToSet used too much memory and cannot spill to disk. Memory limit: %d "
		                "bytes", ACC_MAX_BYTES);
	items_push(a, st, st->n, v, NULL);
	return 0;
}

static int
fin_items(const accum_t *a, const accum_state_t *st, expr_env_t *env, bson_value_t *out, terr_t *err)
{
	set_array_from_items(env, st, out, false);
	return 0;
}

/* ---- $mergeObjects -------------------------------------------------------- */

static int
add_merge_objects(const accum_t *a, accum_state_t *st, const bson_value_t *v, bson_value_t *keys, terr_t *err)
{
	bson_t b, cur;
	bson_iter_t it, nit;

	if (expr_is_nullish(v))
		return 0;
	if (v->value_type != BSON_TYPE_DOCUMENT) {
		char *t = bv_to_mongo_string(v);
		terr_set(err, 40400, "$mergeObjects requires object inputs, but input %s is of type %s", t,
		         expr_type_name(v));
		bson_free(t);
		return -1;
	}
	bson_init(&b);
	if (st->has) {
		/* existing fields in place (replaced when v has them), then v's new ones */
		bson_init_static(&cur, st->val.value.v_doc.data, st->val.value.v_doc.data_len);
		bson_iter_init(&it, &cur);
		while (bson_iter_next(&it)) {
			const bson_value_t *use = bson_iter_value(&it);
			expr_iter_init(&nit, v);
			while (bson_iter_next(&nit)) {
				if (strcmp(bson_iter_key(&nit), bson_iter_key(&it)) == 0) {
					use = bson_iter_value(&nit);
					break;
				}
			}
			bson_append_value(&b, bson_iter_key(&it), -1, use);
		}
		expr_iter_init(&nit, v);
		while (bson_iter_next(&nit)) {
			if (!bson_has_field(&cur, bson_iter_key(&nit)) || strchr(bson_iter_key(&nit), '.') != NULL) {
				bson_iter_t chk;
				bool found = false;
				bson_iter_init(&chk, &cur);
				while (bson_iter_next(&chk) && !found)
					found = strcmp(bson_iter_key(&chk), bson_iter_key(&nit)) == 0;
				if (!found)
					bson_append_value(&b, bson_iter_key(&nit), -1, bson_iter_value(&nit));
			}
		}
		bson_value_destroy(&st->val);
	} else {
		expr_iter_init(&nit, v);
		while (bson_iter_next(&nit))
			bson_append_value(&b, bson_iter_key(&nit), -1, bson_iter_value(&nit));
	}
	memset(&st->val, 0, sizeof(st->val));
	st->val.value_type = BSON_TYPE_DOCUMENT;
	st->val.value.v_doc.data_len = b.len;
	st->val.value.v_doc.data = bson_malloc(b.len);
	memcpy(st->val.value.v_doc.data, bson_get_data(&b), b.len);
	st->mem = b.len;
	bson_destroy(&b);
	st->has = true;
	return 0;
}

static int
fin_merge_objects(const accum_t *a, const accum_state_t *st, expr_env_t *env, bson_value_t *out, terr_t *err)
{
	if (!st->has) {
		bson_t b;
		bson_init(&b);
		expr_set_doc_from(env, out, &b, false);
		return 0;
	}
	*out = st->val;
	return 0;
}

/* ---- $stdDevPop / $stdDevSamp ------------------------------------------- */

static int
add_stddev(const accum_t *a, accum_state_t *st, const bson_value_t *v, bson_value_t *keys, terr_t *err)
{
	if (!bv_is_number(v))
		return 0;
	double x = expr_num_to_double(v);
	st->count++;
	double d = x - st->mean;
	st->mean += d / (double)st->count;
	st->m2 += d * (x - st->mean);
	return 0;
}

static int
fin_stddev(const accum_t *a, const accum_state_t *st, expr_env_t *env, bson_value_t *out, terr_t *err)
{
	bool samp = strcmp(a->op->name, "$stdDevSamp") == 0;
	int64_t n = st->count - (samp ? 1 : 0);

	if (n <= 0) {
		expr_set_null(out);
		return 0;
	}
	expr_set_double(out, sqrt(st->m2 / (double)n));
	return 0;
}

/* ---- N variants, $top/$bottom --------------------------------------------- */

static int
parse_n_value(accum_t *a, const bson_value_t *nv, expr_scope_t *scope, terr_t *err)
{
	expr_t *ne = NULL;
	const bson_value_t *c;
	int64_t n;

	RET(expr_parse(nv, scope, &ne, err));
	if (!expr_is_constant(ne, &c)) {
		expr_destroy(ne);
		return terr_set(err, TERR_NOT_IMPLEMENTED, "a non-constant 'n' for %s is not implemented yet", a->op->name);
	}
	if (!bv_is_number(c) || !expr_num_to_int64_exact(c, &n)) {
		char *t = bv_to_mongo_string(c);
		terr_set(err, 5787902, "Value for 'n' must be of integral type, but found %s", t);
		bson_free(t);
		expr_destroy(ne);
		return -1;
	}
	expr_destroy(ne);
	if (n <= 0)
		return terr_set(err, 5787908, "'n' must be greater than 0, found %lld", (long long)n);
	a->n = n;
	return 0;
}

static int
parse_sort_by(accum_t *a, const bson_value_t *sb, terr_t *err)
{
	bson_iter_t it;

	if (sb->value_type != BSON_TYPE_DOCUMENT)
		return terr_set(err, 5788001, "expected an object for 'sortBy', found %s", expr_type_name(sb));
	size_t cnt = expr_array_len(sb);
	if (cnt == 0)
		return terr_set(err, 15976, "$sort stage must have at least one sort key");
	a->paths = bson_malloc0(cnt * sizeof(char *));
	a->dirs = bson_malloc0(cnt * sizeof(int));
	expr_iter_init(&it, sb);
	while (bson_iter_next(&it)) {
		const bson_value_t *d = bson_iter_value(&it);
		double dir = bv_is_number(d) ? bv_as_double(d) : 0;
		if (dir != 1 && dir != -1)
			return terr_set(err, 15975, "$sort key ordering must be 1 (for ascending) or -1 (for descending)");
		a->paths[a->nkeys] = bson_strdup(bson_iter_key(&it));
		a->dirs[a->nkeys] = dir > 0 ? 1 : -1;
		a->nkeys++;
	}
	return 0;
}

/* {input, n} for $firstN $lastN $maxN $minN; {output, sortBy[, n]} for
 * $top(N) $bottom(N). */
static int
parse_n(accum_t *a, const bson_value_t *arg, expr_scope_t *scope, terr_t *err)
{
	bool topbottom = strncmp(a->op->name, "$top", 4) == 0 || strncmp(a->op->name, "$bottom", 7) == 0;
	bool single = strcmp(a->op->name, "$top") == 0 || strcmp(a->op->name, "$bottom") == 0;
	const char *vname = topbottom ? "output" : "input";
	bson_value_t input, nv, sb;
	bool have_in = false, have_n = false, have_sb = false;
	bson_iter_t it;

	if (arg->value_type != BSON_TYPE_DOCUMENT)
		return terr_set(err, 5787801, "specification must be an object; found %s", expr_type_name(arg));
	expr_iter_init(&it, arg);
	while (bson_iter_next(&it)) {
		const char *k = bson_iter_key(&it);
		if (strcmp(k, vname) == 0) {
			input = *bson_iter_value(&it);
			have_in = true;
		} else if (strcmp(k, "n") == 0 && !single) {
			nv = *bson_iter_value(&it);
			have_n = true;
		} else if (strcmp(k, "sortBy") == 0 && topbottom) {
			sb = *bson_iter_value(&it);
			have_sb = true;
		} else if (topbottom) {
			return terr_set(err, 5788002, "Unknown argument to %s '%s'", a->op->name, k);
		} else {
			return terr_set(err, 5787901, "Unknown argument for 'n' operator: %s", k);
		}
	}
	if (!single && !have_n)
		return terr_set(err, topbottom ? 5788003 : 5787906, "Missing value for 'n'");
	if (!have_in)
		return terr_set(err, topbottom ? 5788004 : 5787907, "Missing value for '%s'", vname);
	if (topbottom && !have_sb)
		return terr_set(err, 5788005, "Missing value for 'sortBy'");
	a->n = 1;
	if (have_n)
		RET(parse_n_value(a, &nv, scope, err));
	if (have_sb)
		RET(parse_sort_by(a, &sb, err));
	return expr_parse(&input, scope, &a->arg, err);
}

static int
cmp_keys(const accum_t *a, const bson_value_t *x, const bson_value_t *y)
{
	for (size_t i = 0; i < a->nkeys; i++) {
		int c = expr_compare(&x[i], &y[i], a->coll);
		if (c != 0)
			return c * a->dirs[i];
	}
	return 0;
}

static int
add_first_n(const accum_t *a, accum_state_t *st, const bson_value_t *v, bson_value_t *keys, terr_t *err)
{
	if ((int64_t)st->n < a->n)
		items_push(a, st, st->n, v, NULL);
	return 0;
}

static int
add_last_n(const accum_t *a, accum_state_t *st, const bson_value_t *v, bson_value_t *keys, terr_t *err)
{
	if ((int64_t)st->n >= a->n)
		items_remove(a, st, 0);
	items_push(a, st, st->n, v, NULL);
	return 0;
}

/* $maxN/$minN: nulls and missing ignored; items kept best-first */
static int
add_minmax_n(const accum_t *a, accum_state_t *st, const bson_value_t *v, bson_value_t *keys, terr_t *err)
{
	bool is_max = strcmp(a->op->name, "$maxN") == 0;
	size_t at = st->n;

	if (expr_is_nullish(v))
		return 0;
	for (size_t i = 0; i < st->n; i++) {
		int c = expr_compare(v, &st->items[i].v, a->coll);
		if (is_max ? c > 0 : c < 0) {
			at = i;
			break;
		}
	}
	if ((int64_t)at >= a->n)
		return 0;
	items_push(a, st, at, v, NULL);
	if ((int64_t)st->n > a->n)
		items_remove(a, st, st->n - 1);
	return 0;
}

/* $top(N): the first n in sortBy order; $bottom(N): the last n (kept in
 * sortBy order too).  Ties keep arrival order. */
static int
add_top_bottom(const accum_t *a, accum_state_t *st, const bson_value_t *v, bson_value_t *keys, terr_t *err)
{
	bool bottom = strncmp(a->op->name, "$bottom", 7) == 0;
	size_t at = st->n;

	for (size_t i = 0; i < st->n; i++) {
		int c = cmp_keys(a, keys, st->items[i].keys);
		if (c < 0) {
			at = i;
			break;
		}
	}
	if (!bottom) {
		if ((int64_t)at >= a->n)
			return 0;
		items_push(a, st, at, v, keys);
		if ((int64_t)st->n > a->n)
			items_remove(a, st, st->n - 1);
	} else {
		if ((int64_t)st->n >= a->n && at == 0)
			return 0;
		items_push(a, st, at, v, keys);
		if ((int64_t)st->n > a->n)
			items_remove(a, st, 0);
	}
	return 0;
}

static int
fin_single_item(const accum_t *a, const accum_state_t *st, expr_env_t *env, bson_value_t *out, terr_t *err)
{
	if (st->n == 0)
		expr_set_null(out);
	else
		*out = st->items[0].v;
	return 0;
}

/* ---- $median / $percentile ---------------------------------------------- */

static int
parse_percentile(accum_t *a, const bson_value_t *arg, expr_scope_t *scope, terr_t *err)
{
	bool median = strcmp(a->op->name, "$median") == 0;
	bson_value_t input, p, method;
	bool have_in = false, have_p = false, have_m = false;
	bson_iter_t it;

	if (arg->value_type != BSON_TYPE_DOCUMENT)
		return terr_set(err, TERR_FAILED_TO_PARSE, "specification must be an object; found %s",
		                expr_type_name(arg));
	expr_iter_init(&it, arg);
	while (bson_iter_next(&it)) {
		const char *k = bson_iter_key(&it);
		if (strcmp(k, "input") == 0) {
			input = *bson_iter_value(&it);
			have_in = true;
		} else if (strcmp(k, "p") == 0 && !median) {
			p = *bson_iter_value(&it);
			have_p = true;
		} else if (strcmp(k, "method") == 0) {
			method = *bson_iter_value(&it);
			have_m = true;
		} else {
			return terr_set(err, 40415, "BSON field '%s.%s' is an unknown field.", median ? "$median" : "$percentile",
			                k);
		}
	}
	if (!have_in)
		return terr_set(err, 40414, "BSON field '%s.input' is missing but a required field",
		                median ? "$median" : "$percentile");
	if (!median && !have_p)
		return terr_set(err, 40414, "BSON field '$percentile.p' is missing but a required field");
	if (!have_m)
		return terr_set(err, 40414, "BSON field '%s.method' is missing but a required field",
		                median ? "$median" : "$percentile");
	if (method.value_type != BSON_TYPE_UTF8)
		return terr_set(err, TERR_TYPE_MISMATCH, "BSON field '%s.method' is the wrong type '%s', expected type 'string'",
		                median ? "$median" : "$percentile", expr_type_name(&method));
	if (strcmp(method.value.v_utf8.str, "approximate") == 0 || strcmp(method.value.v_utf8.str, "discrete") == 0)
		a->method = 0;
	else if (strcmp(method.value.v_utf8.str, "continuous") == 0)
		a->method = 1;
	else
		return terr_set(err, TERR_BAD_VALUE, "Currently only 'approximate', 'discrete', and 'continuous' can be "
		                "used as percentile 'method'.");
	if (median) {
		a->ps = bson_malloc(sizeof(double));
		a->ps[0] = 0.5;
		a->nps = 1;
	} else {
		if (p.value_type != BSON_TYPE_ARRAY || expr_array_len(&p) == 0) {
			char *t = bv_to_mongo_string(&p);
			terr_set(err, 7750301, "The 'p' field for $percentile must be a non-empty array of numbers from "
			         "[0.0, 1.0], but found: %s", t);
			bson_free(t);
			return -1;
		}
		a->ps = bson_malloc(expr_array_len(&p) * sizeof(double));
		expr_iter_init(&it, &p);
		while (bson_iter_next(&it)) {
			const bson_value_t *x = bson_iter_value(&it);
			double d = bv_is_number(x) ? bv_as_double(x) : -1;
			if (!(d >= 0 && d <= 1)) {
				char *t = bv_to_mongo_string(x);
				terr_set(err, 7750302, "The 'p' field for $percentile must be an array of numbers from [0.0, "
				         "1.0], but found: %s", t);
				bson_free(t);
				return -1;
			}
			a->ps[a->nps++] = d;
		}
	}
	return expr_parse(&input, scope, &a->arg, err);
}

static int
add_number_item(const accum_t *a, accum_state_t *st, const bson_value_t *v, bson_value_t *keys, terr_t *err)
{
	bson_value_t d;

	if (!bv_is_number(v))
		return 0;
	expr_set_double(&d, expr_num_to_double(v));
	items_push(a, st, st->n, &d, NULL);
	return 0;
}

static int
cmp_double(const void *x, const void *y)
{
	double a = *(const double *)x, b = *(const double *)y;
	if (isnan(a) || isnan(b))
		return isnan(a) ? (isnan(b) ? 0 : -1) : 1;
	return a < b ? -1 : (a > b ? 1 : 0);
}

static int
fin_percentile(const accum_t *a, const accum_state_t *st, expr_env_t *env, bson_value_t *out, terr_t *err)
{
	bool median = strcmp(a->op->name, "$median") == 0;
	double *xs = expr_env_alloc(env, (st->n + 1) * sizeof(double));
	bson_t b;
	uint32_t idx = 0;

	for (size_t i = 0; i < st->n; i++)
		xs[i] = st->items[i].v.value.v_double;
	qsort(xs, st->n, sizeof(double), cmp_double);
	bson_init(&b);
	for (size_t k = 0; k < a->nps; k++) {
		bson_value_t r;
		double p = a->ps[k];
		if (st->n == 0) {
			expr_set_null(&r);
		} else if (a->method == 1) {
			double rank = p * (double)(st->n - 1);
			size_t lo = (size_t)floor(rank), hi = (size_t)ceil(rank);
			expr_set_double(&r, xs[lo] + (rank - (double)lo) * (xs[hi] - xs[lo]));
		} else {
			double rank = ceil(p * (double)st->n) - 1;
			size_t i = rank < 0 ? 0 : (size_t)rank;
			if (i >= st->n)
				i = st->n - 1;
			expr_set_double(&r, xs[i]);
		}
		if (median) {
			bson_destroy(&b);
			*out = r;
			return 0;
		}
		expr_array_append(&b, &idx, &r);
	}
	expr_set_doc_from(env, out, &b, true);
	return 0;
}

/* ---- table ------------------------------------------------------------------ */

static const accum_op_t accum_ops[] = {
	{"$sum", NULL, add_sum, fin_sum, 0},
	{"$avg", NULL, add_sum, fin_avg, 0},
	{"$count", parse_count, add_sum, fin_sum, 0},
	{"$min", NULL, add_minmax, fin_val, 0},
	{"$max", NULL, add_minmax, fin_val, 0},
	{"$first", NULL, add_first, fin_val, ACC_KEEP_MISSING},
	{"$last", NULL, add_last, fin_val, ACC_KEEP_MISSING},
	{"$push", NULL, add_push, fin_items, ACC_MERGE_BY_ITEMS},
	{"$addToSet", NULL, add_to_set, fin_items, ACC_MERGE_BY_ITEMS},
	{"$mergeObjects", NULL, add_merge_objects, fin_merge_objects, 0},
	{"$stdDevPop", NULL, add_stddev, fin_stddev, 0},
	{"$stdDevSamp", NULL, add_stddev, fin_stddev, 0},
	{"$firstN", parse_n, add_first_n, fin_items, ACC_MERGE_BY_ITEMS | ACC_KEEP_MISSING},
	{"$lastN", parse_n, add_last_n, fin_items, ACC_MERGE_BY_ITEMS | ACC_KEEP_MISSING},
	{"$maxN", parse_n, add_minmax_n, fin_items, ACC_MERGE_BY_ITEMS},
	{"$minN", parse_n, add_minmax_n, fin_items, ACC_MERGE_BY_ITEMS},
	{"$top", parse_n, add_top_bottom, fin_single_item, ACC_MERGE_BY_ITEMS | ACC_KEEP_MISSING},
	{"$bottom", parse_n, add_top_bottom, fin_single_item, ACC_MERGE_BY_ITEMS | ACC_KEEP_MISSING},
	{"$topN", parse_n, add_top_bottom, fin_items, ACC_MERGE_BY_ITEMS | ACC_KEEP_MISSING},
	{"$bottomN", parse_n, add_top_bottom, fin_items, ACC_MERGE_BY_ITEMS | ACC_KEEP_MISSING},
	{"$median", parse_percentile, add_number_item, fin_percentile, ACC_MERGE_BY_ITEMS},
	{"$percentile", parse_percentile, add_number_item, fin_percentile, ACC_MERGE_BY_ITEMS},
	{NULL, NULL, NULL, NULL, 0},
};

/* ---- $accumulator (the JavaScript is in accum_js.c) --------------------- */

static int
parse_js(accum_t *a, const bson_value_t *arg, expr_scope_t *scope, terr_t *err)
{
	return accum_js_parse(arg, scope, &a->js, err);
}

static int
add_js(const accum_t *a, accum_state_t *st, const bson_value_t *v, bson_value_t *keys, terr_t *err)
{
	return terr_set(err, TERR_BAD_VALUE, "$accumulator needs the whole document");
}

static int
fin_js(const accum_t *a, const accum_state_t *st, expr_env_t *env, bson_value_t *out, terr_t *err)
{
	if (!st->has) {
		expr_set_null(out);
		return 0;
	}
	return accum_js_finalize(a->js, &st->val, env, out, err);
}

static const accum_op_t accum_op_js = {"$accumulator", parse_js, add_js, fin_js, 0};

static const accum_op_t *
accum_find(const char *name)
{
	for (const accum_op_t *op = accum_ops; op->name != NULL; op++) {
		if (strcmp(op->name, name) == 0)
			return op;
	}
	if (strcmp(name, accum_op_js.name) == 0)
		return &accum_op_js;
	return NULL;
}

bool
accum_is_known(const char *name)
{
	return accum_find(name) != NULL;
}

int
accum_parse(const char *name, const bson_value_t *arg, expr_scope_t *scope, accum_t **out, terr_t *err)
{
	const accum_op_t *op = accum_find(name);
	accum_t *a;
	int ret = 0;

	if (op == NULL)
		return terr_set(err, 15952, "unknown group operator '%s'", name);
	a = bson_malloc0(sizeof(*a));
	a->op = op;
	a->coll = scope ? scope->coll : NULL;
	if (op->parse != NULL) {
		ERR(op->parse(a, arg, scope, err));
	} else {
		if (arg->value_type == BSON_TYPE_ARRAY) {
			ret = terr_set(err, 40237, "The %s accumulator is a unary operator", name);
			goto err;
		}
		ERR(expr_parse(arg, scope, &a->arg, err));
	}
	*out = a;
	return 0;
err:
	accum_destroy(a);
	return ret;
}

int
accum_new_for_values(const char *name, accum_t **out, terr_t *err)
{
	const accum_op_t *op = accum_find(name);

	if (op == NULL || op->parse != NULL)
		return terr_set(err, TERR_BAD_VALUE, "%s cannot be fed values directly", name);
	accum_t *a = bson_malloc0(sizeof(*a));
	a->op = op;
	*out = a;
	return 0;
}

const expr_t *
accum_argument(const accum_t *a)
{
	return a->arg;
}

const char *
accum_op_name(const accum_t *a)
{
	return a->js != NULL ? "$accumulator" : a->op->name;
}

void
accum_destroy(accum_t *a)
{
	if (a == NULL)
		return;
	expr_destroy(a->arg);
	for (size_t i = 0; i < a->nkeys; i++)
		bson_free(a->paths[i]);
	bson_free(a->paths);
	bson_free(a->dirs);
	bson_free(a->ps);
	accum_js_free(a->js);
	bson_free(a);
}

accum_state_t *
accum_state_new(const accum_t *a)
{
	accum_state_t *st = bson_malloc0(sizeof(*st));
	expr_sum_init(&st->sum);
	st->sum.exact = true;
	st->nkeys = a->nkeys;
	return st;
}

void
accum_state_destroy(accum_state_t *st)
{
	if (st == NULL)
		return;
	if (st->has)
		bson_value_destroy(&st->val);
	for (size_t i = 0; i < st->n; i++) {
		bson_value_destroy(&st->items[i].v);
		if (st->items[i].keys != NULL) {
			for (size_t k = 0; k < st->nkeys; k++)
				bson_value_destroy(&st->items[i].keys[k]);
			bson_free(st->items[i].keys);
		}
	}
	bson_free(st->items);
	bson_free(st);
}

static int
add_value(const accum_t *a, accum_state_t *st, const bson_value_t *v, bson_value_t *keys, terr_t *err)
{
	bson_value_t nv;

	if (v->value_type == BSON_TYPE_EOD && (a->op->flags & ACC_KEEP_MISSING)) {
		expr_set_null(&nv);
		v = &nv;
	}
	/* every value folded in advances seq (kept or not): an item holds the
	 * latest one when its seq is the last (accum_holds_latest) */
	uint64_t seq = st->seq;
	int rc = a->op->add(a, st, v, keys, err);
	if (st->seq == seq)
		st->seq++;
	return rc;
}

int
accum_add(const accum_t *a, accum_state_t *st, const bson_value_t *v, terr_t *err)
{
	if (a->nkeys > 0)
		return terr_set(err, TERR_BAD_VALUE, "%s needs the whole document: use accum_process", a->op->name);
	return add_value(a, st, v, NULL, err);
}

bool
accum_holds_latest(const accum_t *a, const accum_state_t *st)
{
	return a->op->finalize == fin_single_item && st->n > 0 && st->items[0].seq + 1 == st->seq;
}

int64_t
accum_kept_count(const accum_t *a, const accum_state_t *st)
{
	return a->js == NULL && a->op->finalize == fin_items ? (int64_t)st->n : -1;
}

int64_t
accum_kept_seq(const accum_t *a, const accum_state_t *st, int64_t j)
{
	if (j < 0 || j >= accum_kept_count(a, st))
		return -1;
	return (int64_t)st->items[j].seq;
}

bool
accum_kept_latest(const accum_t *a, const accum_state_t *st)
{
	if (accum_kept_count(a, st) <= 0 || st->seq == 0)
		return false;
	/* $push, $addToSet, $firstN, $lastN append: only the last item can be */
	if (a->op->add != add_top_bottom && a->op->add != add_minmax_n)
		return st->items[st->n - 1].seq + 1 == st->seq;
	for (size_t i = st->n; i-- > 0;)
		if (st->items[i].seq + 1 == st->seq)
			return true;
	return false;
}

uint64_t
accum_folded(const accum_state_t *st)
{
	return st->seq;
}

int
accum_process(const accum_t *a, accum_state_t *st, expr_env_t *env, terr_t *err)
{
	bson_value_t v, *keys = NULL;

	if (a->js != NULL) {
		if (!st->has) {
			RET(accum_js_init(a->js, env, &st->val, err));
			st->has = true;
		}
		RET(accum_js_accumulate(a->js, env, &st->val, err));
		st->mem = value_size(&st->val);
		return 0;
	}
	RET(expr_eval(a->arg, env, &v, err));
	if (a->nkeys > 0) {
		keys = expr_env_alloc(env, a->nkeys * sizeof(*keys));
		for (size_t i = 0; i < a->nkeys; i++) {
			expr_path_eval(env, &env->current, a->paths[i], &keys[i]);
			if (keys[i].value_type == BSON_TYPE_EOD)
				expr_set_null(&keys[i]);
		}
	}
	return add_value(a, st, &v, keys, err);
}

int
accum_merge(const accum_t *a, accum_state_t *into, const accum_state_t *from, terr_t *err)
{
	const accum_op_t *op = a->op;

	if (a->js != NULL) {
		if (!from->has)
			return 0;
		if (!into->has) {
			bson_value_copy(&from->val, &into->val);
			into->has = true;
			return 0;
		}
		return accum_js_merge(a->js, &into->val, &from->val, err);
	}
	if (op->flags & ACC_MERGE_BY_ITEMS) {
		for (size_t i = 0; i < from->n; i++)
			RET(op->add(a, into, &from->items[i].v, from->items[i].keys, err));
		return 0;
	}
	if (op->add == add_sum) {
		bson_value_t s;
		expr_sum_get(&from->sum, &s);
		if (from->count > 0 || op->parse == parse_count)
			expr_sum_add(&into->sum, &s);
		into->count += from->count;
		return 0;
	}
	if (op->add == add_stddev) {
		/* Chan et al. parallel variance */
		if (from->count == 0)
			return 0;
		int64_t n = into->count + from->count;
		double d = from->mean - into->mean;
		into->m2 += from->m2 + d * d * (double)into->count * (double)from->count / (double)n;
		into->mean += d * (double)from->count / (double)n;
		into->count = n;
		return 0;
	}
	if (!from->has)
		return 0;
	if (op->add == add_first && into->has)
		return 0;
	return op->add(a, into, &from->val, NULL, err);
}

int
accum_finalize(const accum_t *a, const accum_state_t *st, expr_env_t *env, bson_value_t *out, terr_t *err)
{
	return a->op->finalize(a, st, env, out, err);
}

/* ---- spilling: a partial state as BSON ----------------------------------- */

/* The numeric part of a state, kept as raw bytes: a spill file is read back
 * by the process that wrote it, and the running sum's exact parts (128-bit
 * integer, Kahan compensation, decimal) survive unchanged. */
typedef struct state_pod {
	expr_sum_t sum;
	int64_t count;
	double mean, m2;
	bool has;
	uint64_t seq;
} state_pod_t;

void
accum_state_save(const accum_t *a, const accum_state_t *st, bson_t *out, const char *key)
{
	state_pod_t pod;
	bson_t d, items, item;
	char k[24];

	memset(&pod, 0, sizeof pod);
	pod.sum = st->sum;
	pod.count = st->count;
	pod.mean = st->mean;
	pod.m2 = st->m2;
	pod.has = st->has;
	pod.seq = st->seq;
	bson_append_document_begin(out, key, -1, &d);
	bson_append_binary(&d, "p", 1, BSON_SUBTYPE_BINARY, (const uint8_t *)&pod, sizeof pod);
	if (st->has)
		bv_append(&d, "v", 1, &st->val);
	bson_append_array_begin(&d, "i", 1, &items);
	for (size_t i = 0; i < st->n; i++) {
		snprintf(k, sizeof k, "%zu", i);
		bson_append_array_begin(&items, k, -1, &item);
		bv_append(&item, "0", 1, &st->items[i].v);
		for (size_t j = 0; st->items[i].keys != NULL && j < a->nkeys; j++) {
			snprintf(k, sizeof k, "%zu", j + 1);
			bv_append(&item, k, -1, &st->items[i].keys[j]);
		}
		bson_append_array_end(&items, &item);
	}
	bson_append_array_end(&d, &items);
	bson_append_document_end(out, &d);
}

int
accum_state_load(const accum_t *a, const bson_value_t *saved, accum_state_t **out, terr_t *err)
{
	accum_state_t *st = accum_state_new(a);
	bson_t d, item;
	bson_iter_t it, ii, ki;
	const uint8_t *bytes = NULL;
	uint32_t len = 0;
	bson_subtype_t sub;
	state_pod_t pod;
	bson_value_t keys[32];

	*out = NULL;
	if (saved->value_type != BSON_TYPE_DOCUMENT ||
	    !bson_init_static(&d, saved->value.v_doc.data, saved->value.v_doc.data_len) ||
	    !bson_iter_init_find(&it, &d, "p") || !BSON_ITER_HOLDS_BINARY(&it))
		goto corrupt;
	bson_iter_binary(&it, &sub, &len, &bytes);
	if (len != sizeof pod || a->nkeys > 32)
		goto corrupt;
	memcpy(&pod, bytes, sizeof pod);
	st->sum = pod.sum;
	st->count = pod.count;
	st->mean = pod.mean;
	st->m2 = pod.m2;
	if (pod.has) {
		if (!bson_iter_init_find(&it, &d, "v"))
			goto corrupt;
		value_copy(bson_iter_value(&it), &st->val);
		st->has = true;
	}
	if (!bson_iter_init_find(&it, &d, "i") || !BSON_ITER_HOLDS_ARRAY(&it) || !bson_iter_recurse(&it, &ii))
		goto corrupt;
	while (bson_iter_next(&ii)) {
		size_t nk = 0;
		const uint8_t *data;
		uint32_t dlen;

		if (!BSON_ITER_HOLDS_ARRAY(&ii))
			goto corrupt;
		bson_iter_array(&ii, &dlen, &data);
		if (!bson_init_static(&item, data, dlen) || !bson_iter_init(&ki, &item) || !bson_iter_next(&ki))
			goto corrupt;
		bson_value_t v = *bson_iter_value(&ki);
		while (bson_iter_next(&ki) && nk < a->nkeys)
			keys[nk++] = *bson_iter_value(&ki);
		items_push(a, st, st->n, &v, nk > 0 ? keys : NULL);
	}
	st->seq = pod.seq > st->seq ? pod.seq : st->seq;
	*out = st;
	return 0;
corrupt:
	accum_state_destroy(st);
	return terr_set(err, TERR_INTERNAL_ERROR, "$group spill file holds a damaged accumulator state");
}

size_t
accum_state_mem(const accum_state_t *st)
{
	return sizeof(*st) + st->mem + (st->has ? value_size(&st->val) : 0);
}
