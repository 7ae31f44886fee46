/*
 * ts_partial.c -- whether a query on a time-series collection may use a
 * partial index of its buckets, decided as mongod decides it.
 *
 * mongod builds the bucket-level predicate of the query (the loose one that
 * goes before $_internalUnpackBucket, BucketSpec::createPredicatesOnBucketLevelField
 * with the kIgnore policy) and the index's bucket-level partial filter (the same
 * function with kError, assuming no mixed-schema buckets), and its planner takes
 * the index only when the first is a subset of the second
 * (expression::isSubsetOf).  Tamga's own bucket forms are looser (they keep
 * buckets mixing types, ts_index.c), so they cannot be compared to the same
 * effect; this file builds mongod's shapes from the two user-level filters in a
 * small tree of its own and runs mongod's subset rules over it:
 *   - a metaField predicate is itself renamed onto "meta" (comparisons,
 *     $in and $exists with mongod's leaf rules, anything else equal only to
 *     itself);
 *   - a time comparison with a date is $_internalExpr bounds on
 *     control.min/max.<time> (with the bucketMaxSpanSeconds slack mongod adds);
 *   - a measurement comparison is one $_internalExpr bound on control.max
 *     ($gt/$gte) or control.min ($lt/$lte), both for $eq; $in an $or of
 *     those; $exists: true both bounds existing; on a collection flagged for
 *     mixed-schema buckets the query's form is OR-ed with a type check
 *     (mongod's createTypeEqualityPredicate), which implies nothing;
 *   - what has no bucket form drops out of a conjunction and makes a
 *     disjunction have none (always true); Tamga's own: a measurement
 *     subfield ("f.g") has none (its bounds are not promised to bound every
 *     f.g of a bucket, see below), where mongod's has one.
 * The $_internalExpr rules are mongod's, including their strictness: a
 * bound $lte/$gte of the index is implied only by a strictly tighter
 * constant of another operator ({b: {$lt: 12}} does not imply {b: {$lte:
 * 12}} there).
 *
 * Not here: the planner (query/planner.c takes the answer as a mask of
 * usable partial indexes); soundness of the index's contents (ts_index.c's
 * forms keep every bucket holding a measurement matching the filter, so an
 * index this says is implied holds every bucket the query can need).
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "bson/value.h"
#include "common/mem.h"
#include "timeseries/ts_index.h"

#define TP_MAX_NODES 256
#define TP_PATH 200

typedef enum { TP_AND, TP_OR, TP_CMP, TP_ICMP, TP_IN, TP_EXISTS, TP_OPAQUE } tp_kind_t;
typedef enum { TP_EQ, TP_LT, TP_LTE, TP_GT, TP_GTE } tp_op_t;

typedef struct tp_node {
	tp_kind_t kind;
	tp_op_t op;
	char path[TP_PATH];
	bson_value_t v;            /* CMP/ICMP operand, IN array, OPAQUE operand (borrowed, or a date) */
	const char *opname;        /* OPAQUE: the operator ("" for a literal regex) */
	int first, next;           /* children (AND/OR): first child, next sibling; -1 = none */
	int nkids;
} tp_node_t;

typedef struct tp_tree {
	tp_node_t *n;
	int used;
	bool full;                 /* ran out of nodes: the tree is unusable */
	/* some predicate had no form and dropped out (or was cut): fine for
	 * the query (a looser predicate implies less), never for the index's
	 * filter (a looser one would imply more than it holds) */
	bool dropped;
	const ts_options_t *o;
	bool query;                /* the query's side (kIgnore, mixed-schema forms) */
	bool strings_ok;           /* string operands comparable (the query's collation is the collection's) */
	const coll_t *coll;
} tp_tree_t;

static int
tp_new(tp_tree_t *t, tp_kind_t k)
{
	tp_node_t *n;

	if (t->used == TP_MAX_NODES) {
		t->full = true;
		return -1;
	}
	n = &t->n[t->used];
	memset(n, 0, sizeof(*n));
	n->kind = k;
	n->first = n->next = -1;
	return t->used++;
}

static void
tp_add(tp_tree_t *t, int parent, int kid)
{
	tp_node_t *p = &t->n[parent];

	if (p->first < 0) {
		p->first = kid;
	} else {
		int k = p->first;
		while (t->n[k].next >= 0)
			k = t->n[k].next;
		t->n[k].next = kid;
	}
	p->nkids++;
}

/* A logical node of kids (-1 entries: no bucket form).  AND drops them
 * (-1 when none is left), OR has none when one has none; one kid stands
 * for its node. */
static int
tp_logical(tp_tree_t *t, tp_kind_t k, const int *kids, int nk)
{
	int node, m = 0, last = -1;

	for (int i = 0; i < nk; i++) {
		if (kids[i] < 0) {
			t->dropped = true;
			if (k == TP_OR)
				return -1;
			continue;
		}
		m++;
		last = kids[i];
	}
	if (m == 0)
		return -1;
	if (m == 1)
		return last;
	if ((node = tp_new(t, k)) < 0)
		return -1;
	for (int i = 0; i < nk; i++)
		if (kids[i] >= 0)
			tp_add(t, node, kids[i]);
	return node;
}

static int
tp_leaf(tp_tree_t *t, tp_kind_t k, tp_op_t op, const char *prefix, const char *path, const bson_value_t *v)
{
	int i = tp_new(t, k);

	if (i < 0)
		return -1;
	t->n[i].op = op;
	bson_snprintf(t->n[i].path, TP_PATH, "%s%s", prefix, path);
	if (v != NULL)
		t->n[i].v = *v;
	return i;
}

static bool
meta_path(const ts_options_t *o, const char *p, const char **sub)
{
	return (*sub = ts_meta_suffix(o, p)) != NULL;
}

static const struct {
	const char *name;
	tp_op_t op;
} cmp_ops[] = {{"$eq", TP_EQ}, {"$lt", TP_LT}, {"$lte", TP_LTE}, {"$gt", TP_GT}, {"$gte", TP_GTE}};

static bool
cmp_op(const char *name, tp_op_t *op)
{
	for (size_t i = 0; i < sizeof(cmp_ops) / sizeof(cmp_ops[0]); i++)
		if (strcmp(name, cmp_ops[i].name) == 0) {
			*op = cmp_ops[i].op;
			return true;
		}
	return false;
}

/* A date moved by s seconds (saturating). */
static bson_value_t
date_plus(const bson_value_t *v, int64_t s)
{
	bson_value_t d = *v;
	int64_t ms = s * 1000;

	if (ms > 0 && d.value.v_datetime > INT64_MAX - ms)
		d.value.v_datetime = INT64_MAX;
	else if (ms < 0 && d.value.v_datetime < INT64_MIN - ms)
		d.value.v_datetime = INT64_MIN;
	else
		d.value.v_datetime += ms;
	return d;
}

/* mongod's createComparisonPredicate of {path: {op: v}} on the time or a
 * measurement field; -1 when it has none (checkComparisonPredicateErrors). */
static int
tp_compare(tp_tree_t *t, const char *path, tp_op_t op, const bson_value_t *v)
{
	char minp[TP_PATH], maxp[TP_PATH];
	bool is_time = strcmp(path, t->o->time_field) == 0;
	int kids[4], r;

	if (v->value_type == BSON_TYPE_DOCUMENT || v->value_type == BSON_TYPE_ARRAY || v->value_type == BSON_TYPE_NULL ||
	    v->value_type == BSON_TYPE_REGEX)
		return -1;
	if (!t->strings_ok && (v->value_type == BSON_TYPE_UTF8 || v->value_type == BSON_TYPE_SYMBOL))
		return -1;
	if (is_time && v->value_type != BSON_TYPE_DATE_TIME)
		return -1;
	if (strlen(path) + 13 >= TP_PATH)
		return -1;
	bson_snprintf(minp, sizeof(minp), "control.min.%s", path);
	bson_snprintf(maxp, sizeof(maxp), "control.max.%s", path);
	if (is_time) {
		/* the bounds and the span slack on the other bound (the query's
		 * _id bound is left out: no partial filter names _id) */
		bson_value_t lo = date_plus(v, -t->o->max_span), hi = date_plus(v, t->o->max_span);
		int n = 0;
		switch (op) {
		case TP_EQ:
			kids[n++] = tp_leaf(t, TP_ICMP, TP_LTE, "", minp, v);
			kids[n++] = tp_leaf(t, TP_ICMP, TP_GTE, "", minp, &lo);
			kids[n++] = tp_leaf(t, TP_ICMP, TP_GTE, "", maxp, v);
			kids[n++] = tp_leaf(t, TP_ICMP, TP_LTE, "", maxp, &hi);
			break;
		case TP_GT: case TP_GTE:
			kids[n++] = tp_leaf(t, TP_ICMP, op, "", maxp, v);
			kids[n++] = tp_leaf(t, TP_ICMP, op, "", minp, &lo);
			break;
		case TP_LT: case TP_LTE:
			kids[n++] = tp_leaf(t, TP_ICMP, op, "", minp, v);
			kids[n++] = tp_leaf(t, TP_ICMP, op, "", maxp, &hi);
			break;
		}
		for (int i = 0; i < n; i++)
			if (kids[i] < 0)
				return -1;
		return tp_logical(t, TP_AND, kids, n);
	}
	/* a measurement subfield: its control.min/max.<f>.<sub> bound it only in
	 * buckets whose bounds are field by field with objects all along the
	 * path, which neither Tamga's partial forms nor older collections
	 * promise: no form here, so it implies nothing (mongod's would) */
	if (strchr(path, '.') != NULL)
		return -1;
	if (op == TP_EQ) {
		kids[0] = tp_leaf(t, TP_ICMP, TP_LTE, "", minp, v);
		kids[1] = tp_leaf(t, TP_ICMP, TP_GTE, "", maxp, v);
		if (kids[0] < 0 || kids[1] < 0)
			return -1;
		r = tp_logical(t, TP_AND, kids, 2);
	} else {
		r = tp_leaf(t, TP_ICMP, op, "", op == TP_GT || op == TP_GTE ? maxp : minp, v);
	}
	if (r >= 0 && t->query && t->o->mixed_schema) {
		/* OR-ed with {$expr: {$ne: [{$type: min}, {$type: max}]}}, which
		 * implies nothing */
		kids[0] = r;
		kids[1] = tp_leaf(t, TP_OPAQUE, TP_EQ, "", "", NULL);
		if (kids[1] < 0)
			return -1;
		t->n[kids[1]].opname = "$expr";
		r = tp_logical(t, TP_OR, kids, 2);
	}
	return r;
}

static int tp_doc(tp_tree_t *t, const bson_t *doc, int depth);

/* The predicates of one {field: spec} element. */
static int
tp_field(tp_tree_t *t, bson_iter_t *it)
{
	const char *field = bson_iter_key(it), *sub;
	const bson_value_t *v = bson_iter_value(it);
	bool meta = meta_path(t->o, field, &sub);
	bson_iter_t ops;
	int kids[32], nk = 0;

	if (strlen(field) + 13 >= TP_PATH)
		return -1;
	if (!BSON_ITER_HOLDS_DOCUMENT(it) || !bson_iter_recurse(it, &ops) || !bson_iter_next(&ops) ||
	    bson_iter_key(&ops)[0] != '$') {
		/* {f: v}: equality (a regex literal: a regex match) */
		if (meta) {
			int i;
			if (v->value_type == BSON_TYPE_REGEX) {
				i = tp_leaf(t, TP_OPAQUE, TP_EQ, "meta", sub, v);
				if (i >= 0)
					t->n[i].opname = "";
				return i;
			}
			return tp_leaf(t, TP_CMP, TP_EQ, "meta", sub, v);
		}
		return tp_compare(t, field, TP_EQ, v);
	}
	bson_iter_recurse(it, &ops);
	if (meta && bson_iter_find(&ops, "$regex")) {
		/* {$regex, $options}: one predicate */
		int i = tp_leaf(t, TP_OPAQUE, TP_EQ, "meta", sub, v);
		if (i >= 0)
			t->n[i].opname = "$regex";
		return i;
	}
	bson_iter_recurse(it, &ops);
	while (bson_iter_next(&ops)) {
		if (nk == (int)(sizeof(kids) / sizeof(kids[0]))) {
			t->dropped = true;   /* the rest cut */
			break;
		}
		const char *op = bson_iter_key(&ops);
		const bson_value_t *ov = bson_iter_value(&ops);
		tp_op_t cop;
		int k = -1;
		if (cmp_op(op, &cop)) {
			k = meta ? tp_leaf(t, TP_CMP, cop, "meta", sub, ov) : tp_compare(t, field, cop, ov);
		} else if (strcmp(op, "$in") == 0 && BSON_ITER_HOLDS_ARRAY(&ops)) {
			bson_iter_t e;
			bool bad = false;
			bson_iter_recurse(&ops, &e);
			while (bson_iter_next(&e))
				if (BSON_ITER_HOLDS_REGEX(&e) || BSON_ITER_HOLDS_NULL(&e))
					bad = true;
			if (meta) {
				k = tp_leaf(t, bad ? TP_OPAQUE : TP_IN, TP_EQ, "meta", sub, ov);
				if (k >= 0 && bad)
					t->n[k].opname = "$in";
			} else if (!bad) {
				/* {$in: [X, Y]} is {$or: [{f: X}, {f: Y}]} */
				int ek[64], ne = 0;
				bson_iter_recurse(&ops, &e);
				while (bson_iter_next(&e) && ne < 64)
					ek[ne++] = tp_compare(t, field, TP_EQ, bson_iter_value(&e));
				if (ne < 64 && !bson_iter_next(&e)) {
					bool all = ne > 0;
					for (int i = 0; i < ne; i++)
						all = all && ek[i] >= 0;
					if (all)
						k = tp_logical(t, TP_OR, ek, ne);
				}
			}
		} else if (strcmp(op, "$exists") == 0 && bson_iter_as_bool(&ops)) {
			if (meta) {
				k = tp_leaf(t, TP_EXISTS, TP_EQ, "meta", sub, NULL);
			} else if (!(t->query && t->o->mixed_schema) && strchr(field, '.') == NULL) {
				char p[TP_PATH];
				int ek[2];
				bson_snprintf(p, sizeof(p), "control.min.%s", field);
				ek[0] = tp_leaf(t, TP_EXISTS, TP_EQ, "", p, NULL);
				bson_snprintf(p, sizeof(p), "control.max.%s", field);
				ek[1] = tp_leaf(t, TP_EXISTS, TP_EQ, "", p, NULL);
				if (ek[0] >= 0 && ek[1] >= 0)
					k = tp_logical(t, TP_AND, ek, 2);
			}
		} else if (meta) {
			/* any other operator on the meta: equal only to itself */
			k = tp_leaf(t, TP_OPAQUE, TP_EQ, "meta", sub, ov);
			if (k >= 0)
				t->n[k].opname = op;
		}
		kids[nk++] = k;
	}
	return tp_logical(t, TP_AND, kids, nk);
}

static int
tp_list(tp_tree_t *t, tp_kind_t k, bson_iter_t *it, int depth)
{
	bson_iter_t a;
	int kids[64], nk = 0;

	if (!BSON_ITER_HOLDS_ARRAY(it) || !bson_iter_recurse(it, &a))
		return -1;
	while (bson_iter_next(&a)) {
		const uint8_t *d;
		uint32_t l;
		bson_t sub;
		if (!BSON_ITER_HOLDS_DOCUMENT(&a) || nk == 64)
			return -1;
		bson_iter_document(&a, &l, &d);
		if (!bson_init_static(&sub, d, l))
			return -1;
		kids[nk++] = tp_doc(t, &sub, depth + 1);
	}
	if (nk == 0)
		return -1;
	return tp_logical(t, k, kids, nk);
}

/* A filter document: the conjunction of its elements. */
static int
tp_doc(tp_tree_t *t, const bson_t *doc, int depth)
{
	bson_iter_t it;
	int kids[64], nk = 0;

	if (depth > 20 || !bson_iter_init(&it, doc))
		return -1;
	while (bson_iter_next(&it)) {
		const char *k = bson_iter_key(&it);
		if (nk == 64) {
			t->dropped = true;   /* the rest cut: a looser conjunction */
			break;
		}
		if (strcmp(k, "$and") == 0)
			kids[nk++] = tp_list(t, TP_AND, &it, depth);
		else if (strcmp(k, "$or") == 0)
			kids[nk++] = tp_list(t, TP_OR, &it, depth);
		else if (k[0] == '$')
			kids[nk++] = -1;   /* $nor, $expr, $where, $text, $comment...: no bucket form here */
		else
			kids[nk++] = tp_field(t, &it);
	}
	return tp_logical(t, TP_AND, kids, nk);
}

/* ---- mongod's expression::isSubsetOf ------------------------------------------------ */

static bool
is_string(const bson_value_t *v)
{
	return v->value_type == BSON_TYPE_UTF8 || v->value_type == BSON_TYPE_SYMBOL;
}

/* ComparisonMatchExpression/InMatchExpression::equivalent and the logical
 * nodes' (children in order). */
static bool
tp_equivalent(const tp_tree_t *lt, int l, const tp_tree_t *rt, int r)
{
	const tp_node_t *a = &lt->n[l], *b = &rt->n[r];

	if (a->kind != b->kind)
		return false;
	if (a->kind == TP_AND || a->kind == TP_OR) {
		int x = a->first, y = b->first;
		if (a->nkids != b->nkids)
			return false;
		for (; x >= 0 && y >= 0; x = lt->n[x].next, y = rt->n[y].next)
			if (!tp_equivalent(lt, x, rt, y))
				return false;
		return true;
	}
	if (strcmp(a->path, b->path) != 0 || a->op != b->op)
		return false;
	switch (a->kind) {
	case TP_EXISTS:
		return true;
	case TP_OPAQUE:
		if (strcmp(a->opname, b->opname) != 0 || strcmp(a->opname, "$expr") == 0)
			return false;
		/* fallthrough */
	case TP_CMP: case TP_ICMP: case TP_IN:
		return a->v.value_type == b->v.value_type && bv_compare_coll(&a->v, &b->v, lt->coll) == 0;
	default:
		return false;
	}
}

static bool
supports_equality(tp_op_t op)
{
	return op == TP_LTE || op == TP_EQ || op == TP_GTE;
}

/* mongod's _isSubsetOf(ComparisonMatchExpression, ComparisonMatchExpression) */
static bool
cmp_subset(const tp_tree_t *t, tp_op_t lop, const bson_value_t *lv, tp_op_t rop, const bson_value_t *rv)
{
	int cmp;

	if (bv_type_rank(lv->value_type) != bv_type_rank(rv->value_type))
		return false;
	if (bv_is_nan(lv) || bv_is_nan(rv)) {
		if (supports_equality(lop) && supports_equality(rop))
			return bv_is_nan(lv) && bv_is_nan(rv);
		return false;
	}
	if (!t->strings_ok && is_string(lv))
		return false;
	cmp = bv_compare_coll(lv, rv, t->coll);
	if (lop == rop && cmp == 0)
		return true;
	switch (rop) {
	case TP_LT: case TP_LTE:
		if (lop != TP_LT && lop != TP_LTE && lop != TP_EQ)
			return false;
		return rop == TP_LTE ? cmp <= 0 : cmp < 0;
	case TP_GT: case TP_GTE:
		if (lop != TP_GT && lop != TP_GTE && lop != TP_EQ)
			return false;
		return rop == TP_GTE ? cmp >= 0 : cmp > 0;
	default:
		return false;
	}
}

/* mongod's _isSubsetOfInternalExpr: BSON order across types, and its
 * strict test whatever the bound's inclusiveness */
static bool
icmp_subset(const tp_tree_t *t, tp_op_t lop, const bson_value_t *lv, tp_op_t rop, const bson_value_t *rv)
{
	int cmp;

	if (!t->strings_ok && is_string(lv))
		return false;
	cmp = bv_compare_coll(lv, rv, t->coll);
	if (lop == rop && cmp == 0)
		return true;
	switch (rop) {
	case TP_LT: case TP_LTE:
		return (lop == TP_LT || lop == TP_LTE || lop == TP_EQ) && cmp < 0;
	case TP_GT: case TP_GTE:
		return (lop == TP_GT || lop == TP_GTE || lop == TP_EQ) && cmp > 0;
	default:
		return false;
	}
}

/* Every element of an $in (no regex, no null: else it is opaque) an
 * equality that passes rv. */
static bool
in_each_subset(const tp_tree_t *t, const bson_value_t *arr, tp_op_t rop, const bson_value_t *rv)
{
	bson_t a;
	bson_iter_t e;

	if (arr->value_type != BSON_TYPE_ARRAY || !bson_init_static(&a, arr->value.v_doc.data, arr->value.v_doc.data_len) ||
	    !bson_iter_init(&e, &a))
		return false;
	while (bson_iter_next(&e))
		if (!cmp_subset(t, TP_EQ, bson_iter_value(&e), rop, rv))
			return false;
	return true;
}

static bool tp_subset(const tp_tree_t *lt, int l, const tp_tree_t *rt, int r);

static bool
tp_subset(const tp_tree_t *lt, int l, const tp_tree_t *rt, int r)
{
	const tp_node_t *a = &lt->n[l], *b = &rt->n[r];

	if (tp_equivalent(lt, l, rt, r))
		return true;
	if (b->kind == TP_OR) {
		for (int k = b->first; k >= 0; k = rt->n[k].next)
			if (tp_subset(lt, l, rt, k))
				return true;
		return false;
	}
	if (b->kind == TP_AND) {
		for (int k = b->first; k >= 0; k = rt->n[k].next)
			if (!tp_subset(lt, l, rt, k))
				return false;
		return true;
	}
	if (a->kind == TP_AND) {
		for (int k = a->first; k >= 0; k = lt->n[k].next)
			if (tp_subset(lt, k, rt, r))
				return true;
		return false;
	}
	if (a->kind == TP_OR) {
		for (int k = a->first; k >= 0; k = lt->n[k].next)
			if (!tp_subset(lt, k, rt, r))
				return false;
		return true;
	}
	if (strcmp(a->path, b->path) != 0)
		return false;
	switch (b->kind) {
	case TP_CMP:
		if (a->kind == TP_CMP)
			return cmp_subset(lt, a->op, &a->v, b->op, &b->v);
		if (a->kind == TP_IN)
			return in_each_subset(lt, &a->v, b->op, &b->v);
		return false;
	case TP_ICMP:
		return a->kind == TP_ICMP && icmp_subset(lt, a->op, &a->v, b->op, &b->v);
	case TP_EXISTS:
		if (a->kind == TP_CMP)
			return a->v.value_type != BSON_TYPE_NULL;
		if (a->kind == TP_EXISTS)
			return true;
		if (a->kind == TP_IN) {
			bson_t arr;
			bson_iter_t e;
			if (!bson_init_static(&arr, a->v.value.v_doc.data, a->v.value.v_doc.data_len) || !bson_iter_init(&e, &arr))
				return false;
			while (bson_iter_next(&e))
				if (BSON_ITER_HOLDS_NULL(&e))
					return false;
			return true;
		}
		/* $elemMatch, $mod, $regex, $size, $type (and a regex literal)
		 * never match a missing field */
		return a->kind == TP_OPAQUE && (strcmp(a->opname, "$elemMatch") == 0 || strcmp(a->opname, "$mod") == 0 ||
		    strcmp(a->opname, "$regex") == 0 || strcmp(a->opname, "") == 0 || strcmp(a->opname, "$size") == 0 ||
		    strcmp(a->opname, "$type") == 0);
	case TP_IN: {
		/* some equality of the index's $in holds the query */
		bson_t arr;
		bson_iter_t e;
		if (!bson_init_static(&arr, b->v.value.v_doc.data, b->v.value.v_doc.data_len) || !bson_iter_init(&e, &arr))
			return false;
		while (bson_iter_next(&e)) {
			if (a->kind == TP_CMP && cmp_subset(lt, a->op, &a->v, TP_EQ, bson_iter_value(&e)))
				return true;
			if (a->kind == TP_IN && in_each_subset(lt, &a->v, TP_EQ, bson_iter_value(&e)))
				return true;
		}
		return false;
	}
	default:
		return false;
	}
}

bool
ts_partial_implied(const ts_options_t *o, const bson_t *query, const bson_t *partial, bool same_collation,
                   const coll_t *coll)
{
	tp_tree_t q = {0}, p = {0};
	int qr, pr;
	bool ok = false;

	if (query == NULL || partial == NULL)
		return false;
	q.n = bson_malloc(sizeof(tp_node_t) * TP_MAX_NODES);
	p.n = bson_malloc(sizeof(tp_node_t) * TP_MAX_NODES);
	q.o = p.o = o;
	q.query = true;
	q.strings_ok = same_collation;
	p.strings_ok = true;
	q.coll = p.coll = coll;
	qr = tp_doc(&q, query, 0);
	pr = tp_doc(&p, partial, 0);
	/* the query's side under the index's collation rules: strings compare
	 * only when the two collations are one */
	if (qr >= 0 && pr >= 0 && !q.full && !p.full && !p.dropped)
		ok = tp_subset(&q, qr, &p, pr);
	bson_free(q.n);
	bson_free(p.n);
	return ok;
}
