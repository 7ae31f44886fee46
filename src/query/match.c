/*
 * match.c -- the filter parser, the operator table and the public match_*
 * API.  Parsing follows mongod's expression_parser.cpp: a filter document is
 * an implicit $and of its fields; `{path: {$op: ...}}` operator documents
 * become path leaves; `{path: value}` is equality; `$`-prefixed fields at
 * the top are pathless operators ($and, $or, $expr, ...).  Evaluation is the
 * table's job (eval_doc / eval_value per node kind); operator families live
 * in match_compare.c, match_regex.c, match_array.c and match_logical.c.
 *
 * Not here: planning, index bounds, projection.
 */
#include "query/bucket_column.h"
#include "query/match_private.h"
#include "js/js.h"

#include <string.h>
#include <time.h>

#include "bson/value.h"
#include "common/opctx.h"
#include "geo/geo.h"
#include "text/text.h"

#define MATCH_MAX_DEPTH 100

typedef enum { LVL_PREDICATE_TOP, LVL_USER_TOP, LVL_USER_SUB } plevel_t;

typedef struct pctx {
	const match_options_t *opts;
	match_t *m;
	terr_t *err;
} pctx_t;

static int parse_filter(pctx_t *p, const uint8_t *data, uint32_t len, int depth, plevel_t lvl,
                        mnode_t **out);
static int parse_sub(pctx_t *p, const char *path, const bson_value_t *sub, mnode_t *root,
                     int depth, plevel_t lvl);

/* ---- nodes ---------------------------------------------------------------- */

mnode_t *
match_node_new(mkind_t kind)
{
	mnode_t *n = tm_malloc0(sizeof *n);

	n->kind = kind;
	return n;
}

void
match_node_add(mnode_t *parent, mnode_t *kid)
{
	/* doubling: a filter of n fields is n adds, not n reallocations */
	if (parent->nkids == parent->kids_cap) {
		parent->kids_cap = parent->kids_cap ? parent->kids_cap * 2 : 4;
		parent->kids = bson_realloc(parent->kids, sizeof(mnode_t *) * parent->kids_cap);
	}
	parent->kids[parent->nkids++] = kid;
}

void
match_node_free(mnode_t *n)
{
	if (n == NULL)
		return;
	for (uint32_t i = 0; i < n->nkids; i++)
		match_node_free(n->kids[i]);
	bson_free(n->kids);
	if (n->has_path)
		bpath_destroy(&n->path);
	switch (n->kind) {
	case MK_IN:
		bson_free(n->u.in.sorted);
		for (uint32_t i = 0; i < n->u.in.nre; i++)
			match_regex_free(&n->u.in.re[i]);
		bson_free(n->u.in.re);
		break;
	case MK_REGEX:
		match_regex_free(&n->u.re);
		break;
	case MK_BITS_ALL_SET: case MK_BITS_ANY_SET: case MK_BITS_ALL_CLEAR: case MK_BITS_ANY_CLEAR:
		bson_free(n->u.bits.mask);
		bson_free(n->u.bits.far);
		break;
	case MK_EXPR:
		match_expr_free(n);
		break;
	case MK_SCHEMA:
		match_schema_free(n);
		break;
	case MK_GEO: case MK_BUCKET_GEO:
		if (n->u.geo.shape != NULL)
			geo_shape_destroy(n->u.geo.shape);
		bson_free(n->u.geo.shape);
		break;
	case MK_GEO_NEAR:
		bson_free(n->u.geo.near);
		break;
	default:
		break;
	}
	bson_free(n);
}

static mnode_t *
leaf_new(mkind_t kind, const char *path, const bson_value_t *val)
{
	mnode_t *n = match_node_new(kind);

	if (path != NULL) {
		n->has_path = true;
		bpath_init(&n->path, path);
	}
	if (val != NULL)
		n->val = *val;
	return n;
}

char *
match_value_str(const bson_value_t *v)
{
	return bv_to_mongo_string(v);
}

/* ---- evaluation ---------------------------------------------------------- */

typedef struct leafwalk {
	const mnode_t *n;
	bool (*fn)(const mnode_t *, const bson_value_t *);
	bool matched;
	int pos;
} leafwalk_t;

static bool
leaf_visit(const bpath_hit_t *h, void *ctx)
{
	leafwalk_t *w = ctx;

	if (w->fn(w->n, &h->value)) {
		w->matched = true;
		w->pos = h->array_pos;
		return false;
	}
	return true;
}

static bool
eval_leaf_doc(const mnode_t *n, const uint8_t *data, uint32_t len, int *pos, mctx_t *c)
{
	const mop_t *op = &match_ops[n->kind];
	leafwalk_t w = {n, op->eval_value, false, -1};

	bpath_walk_data(data, len, &n->path, op->expand_leaf, leaf_visit, &w);
	if (w.matched && w.pos >= 0 && pos != NULL)
		*pos = w.pos;
	return w.matched;
}

static bool
eval_and_doc(const mnode_t *n, const uint8_t *data, uint32_t len, int *pos, mctx_t *c)
{
	for (uint32_t i = 0; i < n->nkids; i++)
		if (!match_node_eval(n->kids[i], data, len, pos, c))
			return false;
	return true;
}

/* An $or records the positional index only when all its branches test the
 * same path (an $in in disguise), as mongod. */
static bool
eval_or_doc(const mnode_t *n, const uint8_t *data, uint32_t len, int *pos, mctx_t *c)
{
	int *p = n->u.or_same_path ? pos : NULL;

	for (uint32_t i = 0; i < n->nkids; i++)
		if (match_node_eval(n->kids[i], data, len, p, c))
			return true;
	return false;
}

static bool
eval_nor_doc(const mnode_t *n, const uint8_t *data, uint32_t len, int *pos, mctx_t *c)
{
	for (uint32_t i = 0; i < n->nkids; i++)
		if (match_node_eval(n->kids[i], data, len, NULL, c))
			return false;
	return true;
}

static bool
eval_not_doc(const mnode_t *n, const uint8_t *data, uint32_t len, int *pos, mctx_t *c)
{
	return !match_node_eval(n->kids[0], data, len, NULL, c);
}

static bool
eval_true_doc(const mnode_t *n, const uint8_t *data, uint32_t len, int *pos, mctx_t *c)
{
	return true;
}

static bool
eval_false_doc(const mnode_t *n, const uint8_t *data, uint32_t len, int *pos, mctx_t *c)
{
	return false;
}

/* $sampleRate: a per-thread generator; each document is kept with
 * probability `rate`. */
static bool
eval_sample_doc(const mnode_t *n, const uint8_t *data, uint32_t len, int *pos, mctx_t *c)
{
	static _Thread_local uint64_t state;
	double r;

	if (state == 0)
		state = ((uint64_t)(uintptr_t)&state ^ (uint64_t)time(NULL) * 0x9E3779B97F4A7C15ull) | 1;
	state ^= state << 13;
	state ^= state >> 7;
	state ^= state << 17;
	r = (double)(state >> 11) / 9007199254740992.0;
	return r < n->u.rate;
}

static bool
eval_expr_doc(const mnode_t *n, const uint8_t *data, uint32_t len, int *pos, mctx_t *c)
{
	return match_expr_eval(n, c);
}

static bool
eval_schema_doc(const mnode_t *n, const uint8_t *data, uint32_t len, int *pos, mctx_t *c)
{
	return match_schema_eval(n, data, len);
}

typedef struct elemwalk {
	const mnode_t *n;
	mctx_t *c;
	bool matched;
	int pos;
} elemwalk_t;

static bool
elem_visit(const bpath_hit_t *h, void *ctx)
{
	elemwalk_t *w = ctx;
	int inner = -1;
	bool ok;

	if (h->value.value_type != BSON_TYPE_ARRAY)
		return true;
	if (w->n->kind == MK_ELEM_OBJ)
		ok = match_elem_obj_array(w->n, &h->value, &inner, w->c);
	else
		ok = match_elem_val_array(w->n, &h->value, &inner);
	if (!ok)
		return true;
	w->matched = true;
	w->pos = h->array_pos >= 0 ? h->array_pos : inner;
	return false;
}

static bool
eval_elem_doc(const mnode_t *n, const uint8_t *data, uint32_t len, int *pos, mctx_t *c)
{
	elemwalk_t w = {n, c, false, -1};

	bpath_walk_data(data, len, &n->path, false, elem_visit, &w);
	if (w.matched && w.pos >= 0 && pos != NULL)
		*pos = w.pos;
	return w.matched;
}

static bool
eval_and_value(const mnode_t *n, const bson_value_t *v)
{
	for (uint32_t i = 0; i < n->nkids; i++)
		if (!match_node_eval_value(n->kids[i], v))
			return false;
	return true;
}

static bool
eval_or_value(const mnode_t *n, const bson_value_t *v)
{
	for (uint32_t i = 0; i < n->nkids; i++)
		if (match_node_eval_value(n->kids[i], v))
			return true;
	return false;
}

static bool
eval_nor_value(const mnode_t *n, const bson_value_t *v)
{
	return !eval_or_value(n, v);
}

static bool
eval_not_value(const mnode_t *n, const bson_value_t *v)
{
	return !match_node_eval_value(n->kids[0], v);
}

static bool
eval_true_value(const mnode_t *n, const bson_value_t *v)
{
	return true;
}

static bool
eval_false_value(const mnode_t *n, const bson_value_t *v)
{
	return false;
}

/* $text: the bound index spec and query decide (text/text.h's matcher);
 * unbound, the evaluation fails (plan_exec binds every $text it runs). */
static bool
eval_text_doc(const mnode_t *n, const uint8_t *data, uint32_t len, int *pos, mctx_t *c)
{
	bson_t doc;
	int rc;

	if (n->u.text.spec == NULL || n->u.text.query == NULL) {
		if (!c->failed)
			terr_set(c->err, TERR_INDEX_NOT_FOUND, "text index required for $text query");
		c->failed = true;
		return false;
	}
	if (!bson_init_static(&doc, data, len))
		return false;
	rc = text_query_matches(n->u.text.spec, n->u.text.query, &doc, c->err);
	if (rc < 0)
		c->failed = true;
	return rc == 1;
}

/* $geoWithin / $geoIntersects on one value the path reaches: a value that
 * is no geometry does not match (GeoMatchExpression). */
static bool
eval_geo_value(const mnode_t *n, const bson_value_t *v)
{
	geo_shape_t s;
	bool ok;

	if (v->value_type != BSON_TYPE_DOCUMENT && v->value_type != BSON_TYPE_ARRAY)
		return false;
	if (geo_parse_stored(NULL, v, &s, NULL) != 0)
		return false;
	ok = geo_shape_matches((geo_pred_t)n->u.geo.pred, n->u.geo.shape, &s);
	geo_shape_destroy(&s);
	return ok;
}

typedef struct bucket_geo {
	const geo_shape_t *region;
	bool found;
} bucket_geo_t;

static bool
bucket_geo_visit(void *ctx, const bson_value_t *v)
{
	bucket_geo_t *b = ctx;
	geo_shape_t s;

	if (v->value_type != BSON_TYPE_DOCUMENT && v->value_type != BSON_TYPE_ARRAY)
		return true;
	if (geo_parse_stored(NULL, v, &s, NULL) != 0)
		return true;
	/* intersecting the region: kept by $geoWithin and $geoIntersects alike
	 * (within implies intersects; flat regions test containment) */
	b->found = geo_shape_matches(GEO_PRED_INTERSECTS, b->region, &s);
	geo_shape_destroy(&s);
	return !b->found;
}

/* $_internalBucketGeoWithin on a time-series bucket: some measurement's
 * geometry of the field meets the region.  mongod tests the bounding box
 * of control.min/max (field by field there); Tamga's control.min/max are
 * whole values, so the column itself is read (bucket_column.h) -- as
 * loose as mongod's for the unpacked filter that follows, and tighter. */
static bool
eval_bucket_geo_doc(const mnode_t *n, const uint8_t *data, uint32_t len, int *pos, mctx_t *c)
{
	bson_t doc;
	bucket_geo_t b = {n->u.geo.shape, false};
	terr_t e = TERR_INIT;

	(void)pos;
	if (!bson_init_static(&doc, data, len))
		return false;
	if (bucket_column_walk(&doc, n->u.geo.opname, bucket_geo_visit, &b, &e) != 0) {
		if (!c->failed && c->err != NULL)
			terr_set(c->err, e.code, "%s", e.msg ? e.msg : "");
		c->failed = true;
		terr_clear(&e);
		return false;
	}
	return b.found;
}

/* $near / $nearSphere outside the near stage: a geometry within
 * [$minDistance, $maxDistance] (the order is the near plan's job). */
static bool
eval_geo_near_value(const mnode_t *n, const bson_value_t *v)
{
	const geo_near_t *near = n->u.geo.near;
	geo_shape_t s;
	double d;
	bool ok;

	if (v->value_type != BSON_TYPE_DOCUMENT && v->value_type != BSON_TYPE_ARRAY)
		return false;
	if (geo_parse_stored(NULL, v, &s, NULL) != 0)
		return false;
	ok = geo_near_distance(near, &s, &d) && d >= near->min_dist && d <= near->max_dist;
	geo_shape_destroy(&s);
	return ok;
}

/* The operator table: one row per node kind. */
const mop_t match_ops[MK__COUNT] = {
	[MK_AND] = {"$and", MK_AND, false, eval_and_doc, eval_and_value},
	[MK_OR] = {"$or", MK_OR, false, eval_or_doc, eval_or_value},
	[MK_NOR] = {"$nor", MK_NOR, false, eval_nor_doc, eval_nor_value},
	[MK_NOT] = {"$not", MK_NOT, false, eval_not_doc, eval_not_value},
	[MK_TRUE] = {"$alwaysTrue", MK_TRUE, false, eval_true_doc, eval_true_value},
	[MK_FALSE] = {"$alwaysFalse", MK_FALSE, false, eval_false_doc, eval_false_value},
	[MK_EXPR] = {"$expr", MK_EXPR, false, eval_expr_doc, NULL},
	[MK_SCHEMA] = {"$jsonSchema", MK_SCHEMA, false, eval_schema_doc, NULL},
	[MK_EQ] = {"$eq", MK_EQ, true, eval_leaf_doc, match_cmp_value},
	[MK_LT] = {"$lt", MK_LT, true, eval_leaf_doc, match_cmp_value},
	[MK_LTE] = {"$lte", MK_LTE, true, eval_leaf_doc, match_cmp_value},
	[MK_GT] = {"$gt", MK_GT, true, eval_leaf_doc, match_cmp_value},
	[MK_GTE] = {"$gte", MK_GTE, true, eval_leaf_doc, match_cmp_value},
	[MK_IN] = {"$in", MK_IN, true, eval_leaf_doc, match_in_value},
	[MK_EXISTS] = {"$exists", MK_EXISTS, true, eval_leaf_doc, match_exists_value},
	[MK_TYPE] = {"$type", MK_TYPE, true, eval_leaf_doc, match_type_value},
	[MK_MOD] = {"$mod", MK_MOD, true, eval_leaf_doc, match_mod_value},
	[MK_REGEX] = {"$regex", MK_REGEX, true, eval_leaf_doc, match_regex_value},
	[MK_SIZE] = {"$size", MK_SIZE, false, eval_leaf_doc, match_size_value},
	[MK_ELEM_OBJ] = {"$elemMatch", MK_ELEM_OBJ, false, eval_elem_doc, match_elem_value},
	[MK_ELEM_VAL] = {"$elemMatch", MK_ELEM_VAL, false, eval_elem_doc, match_elem_value},
	[MK_BITS_ALL_SET] = {"$bitsAllSet", MK_BITS_ALL_SET, true, eval_leaf_doc, match_bits_value},
	[MK_BITS_ANY_SET] = {"$bitsAnySet", MK_BITS_ANY_SET, true, eval_leaf_doc, match_bits_value},
	[MK_BITS_ALL_CLEAR] = {"$bitsAllClear", MK_BITS_ALL_CLEAR, true, eval_leaf_doc,
	                       match_bits_value},
	[MK_BITS_ANY_CLEAR] = {"$bitsAnyClear", MK_BITS_ANY_CLEAR, true, eval_leaf_doc,
	                       match_bits_value},
	[MK_SAMPLE] = {"$sampleRate", MK_SAMPLE, false, eval_sample_doc, NULL},
	[MK_TEXT] = {"$text", MK_TEXT, false, eval_text_doc, NULL},
	[MK_GEO] = {"$geoWithin", MK_GEO, true, eval_leaf_doc, eval_geo_value},
	[MK_GEO_NEAR] = {"$near", MK_GEO_NEAR, true, eval_leaf_doc, eval_geo_near_value},
	[MK_BUCKET_GEO] = {"$_internalBucketGeoWithin", MK_BUCKET_GEO, false, eval_bucket_geo_doc, NULL},
};

bool
match_node_eval(const mnode_t *n, const uint8_t *data, uint32_t len, int *pos, mctx_t *c)
{
	return match_ops[n->kind].eval_doc(n, data, len, pos, c);
}

bool
match_node_eval_value(const mnode_t *n, const bson_value_t *v)
{
	const mop_t *op = &match_ops[n->kind];

	return op->eval_value != NULL ? op->eval_value(n, v) : false;
}

/* ---- parsing: helpers ------------------------------------------------------ */

static bool
is_operator_doc(const bson_value_t *v, bool allow_incomplete_dbref)
{
	bson_iter_t it;
	bool has_ref = false, has_id = false, has_db = false, first = true, dollar = false;

	if (v->value_type != BSON_TYPE_DOCUMENT)
		return false;
	if (!bson_iter_init_from_data(&it, v->value.v_doc.data, v->value.v_doc.data_len))
		return false;
	while (bson_iter_next(&it)) {
		const char *k = bson_iter_key(&it);

		if (first) {
			dollar = (k[0] == '$');
			first = false;
		}
		if (strcmp(k, "$ref") == 0)
			has_ref = true;
		else if (strcmp(k, "$id") == 0)
			has_id = true;
		else if (strcmp(k, "$db") == 0)
			has_db = true;
	}
	if (first || !dollar)
		return false;
	if (allow_incomplete_dbref ? (has_ref || has_id || has_db) : (has_ref && has_id))
		return false;
	return true;
}

static int
depth_error(pctx_t *p, const uint8_t *data, uint32_t len)
{
	bson_t b;
	char *s = NULL;

	if (bson_init_static(&b, data, len))
		s = bv_doc_to_mongo_string(&b);
	terr_set(p->err, TERR_BAD_VALUE, "exceeded maximum query tree depth of %d at %s",
	         MATCH_MAX_DEPTH, s ? s : "{}");
	bson_free(s);
	return -1;
}

static int
cmp_leaf(pctx_t *p, mkind_t kind, const char *path, const bson_value_t *v, mnode_t **out)
{
	if (kind != MK_EQ && v->value_type == BSON_TYPE_REGEX)
		return terr_set(p->err, TERR_BAD_VALUE,
		                "Can't have RegEx as arg to predicate over field '%s'.", path);
	if (v->value_type == BSON_TYPE_UNDEFINED)
		return terr_set(p->err, TERR_BAD_VALUE, "cannot compare to undefined");
	*out = leaf_new(kind, path, v);
	return 0;
}

static int
regex_leaf(pctx_t *p, const char *path, const char *pattern, uint32_t plen, const char *flags,
           const bson_value_t *val, mnode_t **out)
{
	mnode_t *n = leaf_new(MK_REGEX, path, val);

	if (match_regex_compile(&n->u.re, pattern, plen, flags, p->err) != 0) {
		match_node_free(n);
		return -1;
	}
	*out = n;
	return 0;
}

static int
regex_from_value(pctx_t *p, const char *path, const bson_value_t *v, mnode_t **out)
{
	const char *pat = v->value.v_regex.regex;

	return regex_leaf(p, path, pat, (uint32_t)strlen(pat), v->value.v_regex.options, v, out);
}

/* Wrap kid in NOT, or return the error. */
static mnode_t *
not_of(mnode_t *kid)
{
	mnode_t *n = match_node_new(MK_NOT);

	match_node_add(n, kid);
	return n;
}

/* Collapse a one-kid AND into its kid. */
static mnode_t *
simplify_and(mnode_t *and)
{
	mnode_t *kid;

	if (and->kind != MK_AND || and->nkids != 1)
		return and;
	kid = and->kids[0];
	and->nkids = 0;
	match_node_free(and);
	return kid;
}

/* ---- parsing: path operators ------------------------------------------------ */

typedef int (*path_parse_fn)(pctx_t *p, const char *path, const char *opname,
                             const bson_value_t *arg, const bson_value_t *sub, mnode_t *root,
                             int depth, plevel_t lvl);

static int
p_cmp(pctx_t *p, const char *path, const char *opname, const bson_value_t *arg,
      const bson_value_t *sub, mnode_t *root, int depth, plevel_t lvl)
{
	static const struct { const char *name; mkind_t kind; } rows[] = {
		{"$eq", MK_EQ}, {"$lt", MK_LT}, {"$lte", MK_LTE}, {"$gt", MK_GT}, {"$gte", MK_GTE},
	};
	mnode_t *n = NULL;

	for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
		if (strcmp(rows[i].name, opname) != 0)
			continue;
		RET(cmp_leaf(p, rows[i].kind, path, arg, &n));
		match_node_add(root, n);
		return 0;
	}
	return terr_set(p->err, TERR_INTERNAL_ERROR, "no comparison %s", opname);
}

static int
p_ne(pctx_t *p, const char *path, const char *opname, const bson_value_t *arg,
     const bson_value_t *sub, mnode_t *root, int depth, plevel_t lvl)
{
	mnode_t *n = NULL;

	if (arg->value_type == BSON_TYPE_REGEX)
		return terr_set(p->err, TERR_BAD_VALUE, "Can't have regex as arg to $ne.");
	RET(cmp_leaf(p, MK_EQ, path, arg, &n));
	match_node_add(root, not_of(n));
	return 0;
}

static int
parse_in(pctx_t *p, const char *path, const char *opname, const bson_value_t *arg,
         mnode_t **out)
{
	mnode_t *n;
	bson_iter_t it;

	if (arg->value_type != BSON_TYPE_ARRAY)
		return terr_set(p->err, TERR_BAD_VALUE, "%s needs an array", opname);
	n = leaf_new(MK_IN, path, arg);
	if (!bson_iter_init_from_data(&it, arg->value.v_doc.data, arg->value.v_doc.data_len)) {
		match_node_free(n);
		return terr_set(p->err, TERR_INVALID_BSON, "invalid BSON in %s", opname);
	}
	while (bson_iter_next(&it)) {
		const bson_value_t *e = bson_iter_value(&it);

		if (is_operator_doc(e, false)) {
			match_node_free(n);
			return terr_set(p->err, TERR_BAD_VALUE, "cannot nest $ under %s", opname);
		}
		if (e->value_type == BSON_TYPE_UNDEFINED) {
			match_node_free(n);
			return terr_set(p->err, TERR_BAD_VALUE,
			                "InMatchExpression equality cannot be undefined");
		}
	}
	if (match_in_prepare(n, p->err) != 0) {
		match_node_free(n);
		return -1;
	}
	*out = n;
	return 0;
}

static int
p_in(pctx_t *p, const char *path, const char *opname, const bson_value_t *arg,
     const bson_value_t *sub, mnode_t *root, int depth, plevel_t lvl)
{
	mnode_t *n = NULL;

	RET(parse_in(p, path, opname, arg, &n));
	match_node_add(root, strcmp(opname, "$nin") == 0 ? not_of(n) : n);
	return 0;
}

static int
p_exists(pctx_t *p, const char *path, const char *opname, const bson_value_t *arg,
         const bson_value_t *sub, mnode_t *root, int depth, plevel_t lvl)
{
	mnode_t *n = leaf_new(MK_EXISTS, path, arg);
	bson_iter_t it;
	bson_t tmp = BSON_INITIALIZER;

	/* trueValue(): a one-field document lets libbson decide truthiness */
	bson_append_value(&tmp, "v", 1, arg);
	n->u.exists = bson_iter_init_find(&it, &tmp, "v") && bson_iter_as_bool(&it);
	if (arg->value_type == BSON_TYPE_DECIMAL128) {
		bson_decimal128_t z = {0, 0};
		n->u.exists = bv_decimal_compare(&arg->value.v_decimal128, &z) != 0;
	}
	bson_destroy(&tmp);
	if (n->u.exists) {
		match_node_add(root, n);
	} else {
		n->u.exists = true;
		match_node_add(root, not_of(n));
	}
	return 0;
}

static int
p_type(pctx_t *p, const char *path, const char *opname, const bson_value_t *arg,
       const bson_value_t *sub, mnode_t *root, int depth, plevel_t lvl)
{
	mnode_t *n = leaf_new(MK_TYPE, path, arg);

	if (match_type_parse(n, arg, opname, p->err) != 0) {
		match_node_free(n);
		return -1;
	}
	match_node_add(root, n);
	return 0;
}

static int
p_mod(pctx_t *p, const char *path, const char *opname, const bson_value_t *arg,
      const bson_value_t *sub, mnode_t *root, int depth, plevel_t lvl)
{
	mnode_t *n = leaf_new(MK_MOD, path, arg);

	if (match_mod_parse(n, arg, p->err) != 0) {
		match_node_free(n);
		return -1;
	}
	match_node_add(root, n);
	return 0;
}

static int
p_size(pctx_t *p, const char *path, const char *opname, const bson_value_t *arg,
       const bson_value_t *sub, mnode_t *root, int depth, plevel_t lvl)
{
	mnode_t *n = leaf_new(MK_SIZE, path, arg);

	if (match_size_parse(n, arg, p->err) != 0) {
		match_node_free(n);
		return -1;
	}
	match_node_add(root, n);
	return 0;
}

static int
p_bits(pctx_t *p, const char *path, const char *opname, const bson_value_t *arg,
       const bson_value_t *sub, mnode_t *root, int depth, plevel_t lvl)
{
	static const struct { const char *name; mkind_t kind; } rows[] = {
		{"$bitsAllSet", MK_BITS_ALL_SET}, {"$bitsAnySet", MK_BITS_ANY_SET},
		{"$bitsAllClear", MK_BITS_ALL_CLEAR}, {"$bitsAnyClear", MK_BITS_ANY_CLEAR},
	};
	mnode_t *n = NULL;

	for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
		if (strcmp(rows[i].name, opname) == 0)
			n = leaf_new(rows[i].kind, path, arg);
	if (n == NULL)
		return terr_set(p->err, TERR_INTERNAL_ERROR, "no bit test %s", opname);
	if (match_bits_parse(n, opname, arg, p->err) != 0) {
		match_node_free(n);
		return -1;
	}
	match_node_add(root, n);
	return 0;
}

/* $regex and $options together, found anywhere in the operator document. */
static int
p_regex(pctx_t *p, const char *path, const char *opname, const bson_value_t *arg,
        const bson_value_t *sub, mnode_t *root, int depth, plevel_t lvl)
{
	bson_iter_t it;
	const char *pattern = NULL, *options = NULL;
	uint32_t plen = 0;
	const bson_value_t *re_val = NULL;
	char *flags;
	mnode_t *n;
	int ret;

	if (strcmp(opname, "$options") == 0) {
		/* handled with $regex; alone it is an error */
		bson_iter_init_from_data(&it, sub->value.v_doc.data, sub->value.v_doc.data_len);
		while (bson_iter_next(&it))
			if (strcmp(bson_iter_key(&it), "$regex") == 0)
				return 0;
		return terr_set(p->err, TERR_BAD_VALUE, "$options needs a $regex");
	}
	bson_iter_init_from_data(&it, sub->value.v_doc.data, sub->value.v_doc.data_len);
	while (bson_iter_next(&it)) {
		const char *k = bson_iter_key(&it);
		const bson_value_t *e = bson_iter_value(&it);

		if (strcmp(k, "$regex") == 0) {
			if (e->value_type == BSON_TYPE_UTF8) {
				pattern = e->value.v_utf8.str;
				plen = e->value.v_utf8.len;
			} else if (e->value_type == BSON_TYPE_REGEX) {
				pattern = e->value.v_regex.regex;
				plen = (uint32_t)strlen(pattern);
				re_val = e;
				if (e->value.v_regex.options[0] != '\0') {
					if (options != NULL)
						return terr_set(p->err, 51074,
						                "options set in both $regex and $options");
					options = e->value.v_regex.options;
				}
			} else {
				return terr_set(p->err, TERR_BAD_VALUE, "$regex has to be a string");
			}
		} else if (strcmp(k, "$options") == 0) {
			if (e->value_type != BSON_TYPE_UTF8)
				return terr_set(p->err, TERR_BAD_VALUE, "$options has to be a string");
			if (options != NULL)
				return terr_set(p->err, 51075, "options set in both $regex and $options");
			options = e->value.v_utf8.str;
			if (strlen(options) != e->value.v_utf8.len)
				return terr_set(p->err, 51110,
				                "Regular expression options string cannot contain an "
				                "embedded null byte");
		}
	}
	flags = bson_strdup(options ? options : "");
	ret = regex_leaf(p, path, pattern, plen, flags, re_val, &n);
	bson_free(flags);
	if (ret != 0)
		return ret;
	if (re_val == NULL) {
		/* remember the pattern as a value for introspection */
		n->val.value_type = BSON_TYPE_UTF8;
		n->val.value.v_utf8.str = (char *)pattern;
		n->val.value.v_utf8.len = plen;
	}
	match_node_add(root, n);
	return 0;
}

static int
p_not(pctx_t *p, const char *path, const char *opname, const bson_value_t *arg,
      const bson_value_t *sub, mnode_t *root, int depth, plevel_t lvl)
{
	mnode_t *and, *n;
	bson_iter_t it;

	if (arg->value_type == BSON_TYPE_REGEX) {
		RET(regex_from_value(p, path, arg, &n));
		match_node_add(root, not_of(n));
		return 0;
	}
	if (arg->value_type != BSON_TYPE_DOCUMENT)
		return terr_set(p->err, TERR_BAD_VALUE, "$not needs a regex or a document");
	if (!bson_iter_init_from_data(&it, arg->value.v_doc.data, arg->value.v_doc.data_len) ||
	    !bson_iter_next(&it))
		return terr_set(p->err, TERR_BAD_VALUE, "$not cannot be empty");
	and = match_node_new(MK_AND);
	if (parse_sub(p, path, arg, and, depth + 1, lvl) != 0) {
		match_node_free(and);
		return -1;
	}
	match_node_add(root, not_of(simplify_and(and)));
	return 0;
}

static bool is_pathless_operator(const char *name);

static int
parse_elem_match(pctx_t *p, const char *path, const bson_value_t *arg, int depth,
                 mnode_t **out)
{
	bson_iter_t it;
	mnode_t *n, *kid = NULL;
	bool value_form = false;

	if (arg->value_type != BSON_TYPE_DOCUMENT)
		return terr_set(p->err, TERR_BAD_VALUE, "$elemMatch needs an Object");
	if (is_operator_doc(arg, true) &&
	    bson_iter_init_from_data(&it, arg->value.v_doc.data, arg->value.v_doc.data_len) &&
	    bson_iter_next(&it))
		value_form = !is_pathless_operator(bson_iter_key(&it));
	if (value_form) {
		n = leaf_new(MK_ELEM_VAL, path, arg);
		if (parse_sub(p, "", arg, n, depth + 1, LVL_USER_SUB) != 0) {
			match_node_free(n);
			return -1;
		}
		*out = n;
		return 0;
	}
	if (parse_filter(p, arg->value.v_doc.data, arg->value.v_doc.data_len, depth + 1,
	                 LVL_USER_SUB, &kid) != 0)
		return -1;
	n = leaf_new(MK_ELEM_OBJ, path, arg);
	match_node_add(n, kid);
	*out = n;
	return 0;
}

static int
p_elem_match(pctx_t *p, const char *path, const char *opname, const bson_value_t *arg,
             const bson_value_t *sub, mnode_t *root, int depth, plevel_t lvl)
{
	mnode_t *n;

	RET(parse_elem_match(p, path, arg, depth, &n));
	match_node_add(root, n);
	return 0;
}

static bool is_path_operator(const char *name);

/* An object whose first field is a known path operator ({$gt: 1}). */
static bool
is_path_operator_doc(const bson_value_t *v)
{
	bson_iter_t it;

	return v->value_type == BSON_TYPE_DOCUMENT &&
	       bson_iter_init_from_data(&it, v->value.v_doc.data, v->value.v_doc.data_len) &&
	       bson_iter_next(&it) && is_path_operator(bson_iter_key(&it));
}

static int
p_all(pctx_t *p, const char *path, const char *opname, const bson_value_t *arg,
      const bson_value_t *sub, mnode_t *root, int depth, plevel_t lvl)
{
	bson_iter_t it;
	bool first = true, elem_form = false;
	mnode_t *n;

	if (arg->value_type != BSON_TYPE_ARRAY)
		return terr_set(p->err, TERR_BAD_VALUE, "$all needs an array");
	bson_iter_init_from_data(&it, arg->value.v_doc.data, arg->value.v_doc.data_len);
	while (bson_iter_next(&it)) {
		const bson_value_t *e = bson_iter_value(&it);
		bson_iter_t sit;
		bool is_elem = false;
		const bson_value_t *inner = NULL;

		if (e->value_type == BSON_TYPE_DOCUMENT &&
		    bson_iter_init_from_data(&sit, e->value.v_doc.data, e->value.v_doc.data_len) &&
		    bson_iter_next(&sit) && strcmp(bson_iter_key(&sit), "$elemMatch") == 0) {
			is_elem = true;
			inner = bson_iter_value(&sit);
		}
		if (first) {
			elem_form = is_elem;
			first = false;
		}
		if (elem_form) {
			if (!is_elem)
				return terr_set(p->err, TERR_BAD_VALUE,
				                "$all/$elemMatch has to be consistent");
			RET(parse_elem_match(p, path, inner, depth, &n));
		} else if (e->value_type == BSON_TYPE_REGEX) {
			RET(regex_from_value(p, path, e, &n));
		} else if (is_path_operator_doc(e)) {
			return terr_set(p->err, TERR_BAD_VALUE, "no $ expressions in $all");
		} else {
			RET(cmp_leaf(p, MK_EQ, path, e, &n));
		}
		match_node_add(root, n);
	}
	if (first)
		match_node_add(root, match_node_new(MK_FALSE));
	return 0;
}

static int
p_geo(pctx_t *p, const char *path, const char *opname, const bson_value_t *arg,
      const bson_value_t *sub, mnode_t *root, int depth, plevel_t lvl)
{
	bool near = strcmp(opname, "$near") == 0 || strcmp(opname, "$nearSphere") == 0 ||
	            strcmp(opname, "$geoNear") == 0;
	mnode_t *n;

	if (near && p->opts != NULL && (p->opts->disallow & MATCH_DISALLOW_GEO_NEAR))
		return terr_set(p->err, 5626500,
		                "$geoNear, $near, and $nearSphere are not allowed in this context, as these "
		                "operators require sorting geospatial data. If you do not need sort, consider "
		                "using $geoWithin instead. Check out "
		                "https://dochub.mongodb.org/core/near-sort-operation and "
		                "https://dochub.mongodb.org/core/nearSphere-sort-operationfor more details.");
	if (near) {
		geo_near_t *g = tm_malloc0(sizeof *g);
		if (geo_near_parse(strcmp(opname, "$nearSphere") == 0 ? "$nearSphere" : "$near", arg, sub, g,
		                   p->err) != 0) {
			bson_free(g);
			return -1;
		}
		n = leaf_new(MK_GEO_NEAR, path, arg);
		n->u.geo.near = g;
	} else {
		geo_shape_t *s = tm_malloc0(sizeof *s);
		geo_pred_t pred = strcmp(opname, "$geoIntersects") == 0 ? GEO_PRED_INTERSECTS : GEO_PRED_WITHIN;
		if (geo_query_parse(pred, arg, s, p->err) != 0) {
			bson_free(s);
			return -1;
		}
		n = leaf_new(MK_GEO, path, arg);
		n->u.geo.shape = s;
		n->u.geo.pred = (int)pred;
	}
	n->u.geo.opname = opname;
	match_node_add(root, n);
	return 0;
}

static const struct {
	const char *name;
	path_parse_fn fn;
} path_ops[] = {
	{"$eq", p_cmp}, {"$lt", p_cmp}, {"$lte", p_cmp}, {"$gt", p_cmp}, {"$gte", p_cmp},
	{"$ne", p_ne}, {"$in", p_in}, {"$nin", p_in}, {"$exists", p_exists}, {"$type", p_type},
	{"$mod", p_mod}, {"$regex", p_regex}, {"$options", p_regex}, {"$size", p_size},
	{"$all", p_all}, {"$elemMatch", p_elem_match}, {"$not", p_not},
	{"$bitsAllSet", p_bits}, {"$bitsAnySet", p_bits}, {"$bitsAllClear", p_bits},
	{"$bitsAnyClear", p_bits},
	{"$near", p_geo}, {"$nearSphere", p_geo}, {"$geoWithin", p_geo}, {"$within", p_geo},
	{"$geoIntersects", p_geo}, {"$geoNear", p_geo},
};

static bool
is_path_operator(const char *name)
{
	for (size_t i = 0; i < sizeof path_ops / sizeof path_ops[0]; i++)
		if (strcmp(path_ops[i].name, name) == 0)
			return true;
	return false;
}

static int
parse_sub(pctx_t *p, const char *path, const bson_value_t *sub, mnode_t *root, int depth,
          plevel_t lvl)
{
	bson_iter_t it;
	bool regex_done = false;

	if (depth > MATCH_MAX_DEPTH)
		return depth_error(p, sub->value.v_doc.data, sub->value.v_doc.data_len);
	if (!bson_iter_init_from_data(&it, sub->value.v_doc.data, sub->value.v_doc.data_len))
		return terr_set(p->err, TERR_INVALID_BSON, "invalid BSON in filter");
	while (bson_iter_next(&it)) {
		const char *k = bson_iter_key(&it);
		size_t i;

		for (i = 0; i < sizeof path_ops / sizeof path_ops[0]; i++)
			if (strcmp(path_ops[i].name, k) == 0)
				break;
		if (i == sizeof path_ops / sizeof path_ops[0] &&
		    (strcmp(k, "$maxDistance") == 0 || strcmp(k, "$minDistance") == 0) &&
		    sub->value_type == BSON_TYPE_DOCUMENT) {
			bson_iter_t nit;
			bool has_near = false;
			bson_iter_init_from_data(&nit, sub->value.v_doc.data, sub->value.v_doc.data_len);
			while (bson_iter_next(&nit))
				if (!strcmp(bson_iter_key(&nit), "$near") || !strcmp(bson_iter_key(&nit), "$nearSphere"))
					has_near = true;
			if (has_near)
				continue;
		}
		if (i == sizeof path_ops / sizeof path_ops[0]) {
			if (strcmp(k, "$where") == 0)
				return terr_set(p->err, TERR_BAD_VALUE, "$where cannot be applied to a field");
			return terr_set(p->err, TERR_BAD_VALUE, "unknown operator: %s", k);
		}
		if (path_ops[i].fn == p_regex) {
			if (regex_done)
				continue;
			if (strcmp(k, "$regex") == 0)
				regex_done = true;
		}
		RET(path_ops[i].fn(p, path, k, bson_iter_value(&it), sub, root, depth, lvl));
	}
	return 0;
}

/* ---- parsing: pathless (top-level) operators ------------------------------- */

typedef int (*top_parse_fn)(pctx_t *p, const char *name, const bson_value_t *arg, int depth,
                            plevel_t lvl, mnode_t **out);

static int
t_tree(pctx_t *p, const char *name, const bson_value_t *arg, int depth, plevel_t lvl,
       mnode_t **out)
{
	mkind_t kind = strcmp(name, "$and") == 0 ? MK_AND : strcmp(name, "$or") == 0 ? MK_OR : MK_NOR;
	bson_iter_t it;
	mnode_t *n;
	bool any = false;

	if (arg->value_type != BSON_TYPE_ARRAY)
		return terr_set(p->err, TERR_BAD_VALUE, "%s must be an array", name);
	n = match_node_new(kind);
	bson_iter_init_from_data(&it, arg->value.v_doc.data, arg->value.v_doc.data_len);
	while (bson_iter_next(&it)) {
		const bson_value_t *e = bson_iter_value(&it);
		mnode_t *kid;

		any = true;
		if (e->value_type != BSON_TYPE_DOCUMENT) {
			match_node_free(n);
			return terr_set(p->err, TERR_BAD_VALUE,
			                "$or/$and/$nor entries need to be full objects");
		}
		if (parse_filter(p, e->value.v_doc.data, e->value.v_doc.data_len, depth + 1, lvl,
		                 &kid) != 0) {
			match_node_free(n);
			return -1;
		}
		match_node_add(n, kid);
	}
	if (!any) {
		match_node_free(n);
		return terr_set(p->err, TERR_BAD_VALUE, "$and/$or/$nor must be a nonempty array");
	}
	if (kind == MK_OR) {
		n->u.or_same_path = n->kids[0]->has_path;
		for (uint32_t i = 1; i < n->nkids && n->u.or_same_path; i++)
			if (!n->kids[i]->has_path ||
			    strcmp(n->kids[i]->path.full, n->kids[0]->path.full) != 0)
				n->u.or_same_path = false;
	}
	*out = n;
	return 0;
}

static int
t_comment(pctx_t *p, const char *name, const bson_value_t *arg, int depth, plevel_t lvl,
          mnode_t **out)
{
	*out = NULL;
	return 0;
}

static int
t_always(pctx_t *p, const char *name, const bson_value_t *arg, int depth, plevel_t lvl,
         mnode_t **out)
{
	int64_t v;

	RET(match_parse_int_elem(name, arg, false, false, &v, p->err));
	if (v != 1)
		return terr_set(p->err, TERR_FAILED_TO_PARSE, "%s must be an integer value of 1",
		                name);
	*out = match_node_new(strcmp(name, "$alwaysTrue") == 0 ? MK_TRUE : MK_FALSE);
	return 0;
}

static int
t_expr(pctx_t *p, const char *name, const bson_value_t *arg, int depth, plevel_t lvl,
       mnode_t **out)
{
	mnode_t *n;

	if (lvl == LVL_USER_SUB)
		return terr_set(p->err, TERR_BAD_VALUE,
		                "$expr can only be applied to the top-level document");
	if (p->opts != NULL && (p->opts->disallow & MATCH_DISALLOW_EXPR))
		return terr_set(p->err, TERR_QUERY_FEATURE_NOT_ALLOWED,
		                "$expr is not allowed in this context");
	n = match_node_new(MK_EXPR);
	n->val = *arg;
	if (match_expr_compile(n, arg, p->opts, p->err) != 0) {
		match_node_free(n);
		return -1;
	}
	p->m->can_fail = true;
	*out = n;
	return 0;
}

static int
t_schema(pctx_t *p, const char *name, const bson_value_t *arg, int depth, plevel_t lvl,
         mnode_t **out)
{
	mnode_t *n;

	if (p->opts != NULL && (p->opts->disallow & MATCH_DISALLOW_JSON_SCHEMA))
		return terr_set(p->err, TERR_QUERY_FEATURE_NOT_ALLOWED,
		                "$jsonSchema is not allowed in this context");
	if (arg->value_type != BSON_TYPE_DOCUMENT)
		return terr_set(p->err, TERR_TYPE_MISMATCH, "$jsonSchema must be an object");
	n = match_node_new(MK_SCHEMA);
	n->val = *arg;
	if (match_schema_compile(n, arg, p->err) != 0) {
		match_node_free(n);
		return -1;
	}
	*out = n;
	return 0;
}

/* $where desugars as mongod's does: {$expr: {$function: {body, args:
 * ["$$CURRENT"], lang: "js", _internalSetObjToThis: true}}} (expr/expr_js.c
 * runs it; `this` and `obj` are the document). */
static int
t_where(pctx_t *p, const char *name, const bson_value_t *arg, int depth, plevel_t lvl,
        mnode_t **out)
{
	bson_t spec = BSON_INITIALIZER, fn, args;
	int rc;

	if (p->opts != NULL && (p->opts->disallow & MATCH_DISALLOW_WHERE))
		return terr_set(p->err, TERR_BAD_VALUE, "$where is not allowed in this context");
	if (lvl == LVL_USER_SUB)
		return terr_set(p->err, TERR_BAD_VALUE,
		                "$where can only be applied to the top-level document");
	if (!js_enabled())
		return terr_set(p->err, 6108304, "no globalScriptEngine in $where parsing");
	if (arg->value_type == BSON_TYPE_CODEWSCOPE)
		return terr_set(p->err, 4649201, "$where no longer supports deprecated BSON type CodeWScope");
	if (arg->value_type != BSON_TYPE_UTF8 && arg->value_type != BSON_TYPE_CODE)
		return terr_set(p->err, TERR_BAD_VALUE, "$where got bad type");
	BSON_APPEND_DOCUMENT_BEGIN(&spec, "$function", &fn);
	bson_append_value(&fn, "body", 4, arg);
	BSON_APPEND_ARRAY_BEGIN(&fn, "args", &args);
	BSON_APPEND_UTF8(&args, "0", "$$CURRENT");
	bson_append_array_end(&fn, &args);
	BSON_APPEND_UTF8(&fn, "lang", "js");
	BSON_APPEND_BOOL(&fn, "_internalSetObjToThis", true);
	bson_append_document_end(&spec, &fn);
	{
		mnode_t *n = match_node_new(MK_EXPR);
		rc = match_where_compile(n, &spec, p->opts, p->err);
		if (rc != 0)
			match_node_free(n);
		else {
			p->m->can_fail = true;
			*out = n;
		}
	}
	bson_destroy(&spec);
	return rc;
}

static int
t_text(pctx_t *p, const char *name, const bson_value_t *arg, int depth, plevel_t lvl,
       mnode_t **out)
{
	bson_iter_t it;
	mnode_t *n;
	int expected = 1, nfields = 0;

	if (p->opts != NULL && (p->opts->disallow & MATCH_DISALLOW_TEXT))
		return terr_set(p->err, TERR_BAD_VALUE, "$text is not allowed in this context");
	if (lvl == LVL_USER_SUB)
		return terr_set(p->err, TERR_BAD_VALUE,
		                "$text can only be applied to the top-level document");
	if (arg->value_type != BSON_TYPE_DOCUMENT)
		return terr_set(p->err, TERR_BAD_VALUE, "$text expects an object");
	n = match_node_new(MK_TEXT);
	n->val = *arg;
	bson_iter_init_from_data(&it, arg->value.v_doc.data, arg->value.v_doc.data_len);
	while (bson_iter_next(&it))
		nfields++;
	if (!bson_iter_init_from_data(&it, arg->value.v_doc.data, arg->value.v_doc.data_len) ||
	    !bson_iter_find(&it, "$search") || !BSON_ITER_HOLDS_UTF8(&it)) {
		match_node_free(n);
		return terr_set(p->err, TERR_TYPE_MISMATCH, "$search requires a string value");
	}
	n->u.text.search = bson_iter_utf8(&it, &n->u.text.search_len);
	bson_iter_init_from_data(&it, arg->value.v_doc.data, arg->value.v_doc.data_len);
	if (bson_iter_find(&it, "$language")) {
		expected++;
		if (!BSON_ITER_HOLDS_UTF8(&it)) {
			match_node_free(n);
			return terr_set(p->err, TERR_TYPE_MISMATCH, "$language requires a string value");
		}
		n->u.text.language = bson_iter_utf8(&it, NULL);
		if (*n->u.text.language == '\0')
			n->u.text.language = "none";
	}
	bson_iter_init_from_data(&it, arg->value.v_doc.data, arg->value.v_doc.data_len);
	if (bson_iter_find(&it, "$caseSensitive")) {
		expected++;
		if (!BSON_ITER_HOLDS_BOOL(&it)) {
			match_node_free(n);
			return terr_set(p->err, TERR_TYPE_MISMATCH, "$caseSensitive requires a boolean value");
		}
		n->u.text.case_sensitive = bson_iter_bool(&it);
	}
	bson_iter_init_from_data(&it, arg->value.v_doc.data, arg->value.v_doc.data_len);
	if (bson_iter_find(&it, "$diacriticSensitive")) {
		expected++;
		if (!BSON_ITER_HOLDS_BOOL(&it)) {
			match_node_free(n);
			return terr_set(p->err, TERR_TYPE_MISMATCH, "$diacriticSensitive requires a boolean value");
		}
		n->u.text.diacritic_sensitive = bson_iter_bool(&it);
	}
	if (nfields != expected) {
		match_node_free(n);
		return terr_set(p->err, TERR_BAD_VALUE, "extra fields in $text");
	}
	p->m->can_fail = true;
	*out = n;
	return 0;
}

static int
t_sample(pctx_t *p, const char *name, const bson_value_t *arg, int depth, plevel_t lvl,
         mnode_t **out)
{
	double x;

	if (lvl == LVL_USER_SUB)
		return terr_set(p->err, TERR_BAD_VALUE,
		                "$sampleRate can only be applied to the top-level document");
	if (!bv_is_number(arg))
		return terr_set(p->err, TERR_BAD_VALUE, "argument to $sampleRate must be a numeric type");
	x = bv_as_double(arg);
	if (!(x >= 0.0 && x <= 1.0))
		return terr_set(p->err, TERR_BAD_VALUE,
		                "numeric argument to $sampleRate must be in [0, 1]");
	if (x == 0.0 || x == 1.0) {
		*out = match_node_new(x == 0.0 ? MK_FALSE : MK_TRUE);
		return 0;
	}
	*out = match_node_new(MK_SAMPLE);
	(*out)->u.rate = x;
	return 0;
}

/* {$_internalBucketGeoWithin: {withinRegion: <a $geoWithin operand, or a
 * $geoIntersects $geometry>, field: <measurement path>}}: mongod's
 * bucket-level form of a measurement's $geoWithin / $geoIntersects. */
static int
t_bucket_geo(pctx_t *p, const char *name, const bson_value_t *arg, int depth, plevel_t lvl,
             mnode_t **out)
{
	bson_iter_t it;
	const bson_value_t *region = NULL;
	const char *field = NULL;
	geo_shape_t *s;
	mnode_t *n;
	char path[600];
	int nf = 0;

	(void)name;
	(void)depth;
	if (lvl == LVL_USER_SUB)
		return terr_set(p->err, TERR_BAD_VALUE,
		                "$_internalBucketGeoWithin can only be applied to the top-level document");
	if (arg->value_type != BSON_TYPE_DOCUMENT)
		return terr_set(p->err, TERR_BAD_VALUE, "$_internalBucketGeoWithin argument must be an object");
	bson_iter_init_from_data(&it, arg->value.v_doc.data, arg->value.v_doc.data_len);
	while (bson_iter_next(&it)) {
		nf++;
		if (strcmp(bson_iter_key(&it), "withinRegion") == 0 && BSON_ITER_HOLDS_DOCUMENT(&it))
			region = bson_iter_value(&it);
		else if (strcmp(bson_iter_key(&it), "field") == 0 && BSON_ITER_HOLDS_UTF8(&it))
			field = bson_iter_utf8(&it, NULL);
	}
	if (region == NULL || field == NULL || nf != 2 || *field == '\0' || strlen(field) > sizeof path - 8)
		return terr_set(p->err, TERR_BAD_VALUE,
		                "$_internalBucketGeoWithin requires exactly 'withinRegion' (an object) and 'field' "
		                "(a non-empty string)");
	s = tm_malloc0(sizeof *s);
	if (geo_query_parse(GEO_PRED_WITHIN, region, s, NULL) != 0) {
		/* a $geoIntersects region ($geometry of any type) */
		geo_shape_destroy(s);
		if (geo_query_parse(GEO_PRED_INTERSECTS, region, s, p->err) != 0) {
			geo_shape_destroy(s);
			bson_free(s);
			return -1;
		}
	}
	n = match_node_new(MK_BUCKET_GEO);
	n->val = *arg;
	bson_snprintf(path, sizeof path, "data.%s", field);
	bpath_init(&n->path, path);
	n->has_path = true;
	n->u.geo.shape = s;
	n->u.geo.pred = (int)GEO_PRED_INTERSECTS;
	n->u.geo.opname = field;
	*out = n;
	return 0;
}

/* Top-level $id / $ref / $db are DBRef fields: plain equality on that name. */
static int
t_dbref(pctx_t *p, const char *name, const bson_value_t *arg, int depth, plevel_t lvl,
        mnode_t **out)
{
	return cmp_leaf(p, MK_EQ, name, arg, out);
}

static const struct {
	const char *name;
	top_parse_fn fn;
} top_ops[] = {
	{"$and", t_tree}, {"$or", t_tree}, {"$nor", t_tree}, {"$comment", t_comment},
	{"$alwaysTrue", t_always}, {"$alwaysFalse", t_always}, {"$expr", t_expr},
	{"$jsonSchema", t_schema}, {"$where", t_where}, {"$text", t_text},
	{"$sampleRate", t_sample}, {"$id", t_dbref}, {"$ref", t_dbref}, {"$db", t_dbref},
	{"$_internalBucketGeoWithin", t_bucket_geo},
};

static top_parse_fn
top_lookup(const char *name)
{
	for (size_t i = 0; i < sizeof top_ops / sizeof top_ops[0]; i++)
		if (strcmp(top_ops[i].name, name) == 0)
			return top_ops[i].fn;
	return NULL;
}

static bool
is_pathless_operator(const char *name)
{
	return top_lookup(name) != NULL;
}

static int
parse_filter(pctx_t *p, const uint8_t *data, uint32_t len, int depth, plevel_t lvl,
             mnode_t **out)
{
	bson_iter_t it;
	mnode_t *root, *n;
	plevel_t next = lvl == LVL_PREDICATE_TOP ? LVL_USER_TOP : lvl;
	int ret = 0;

	if (depth > MATCH_MAX_DEPTH)
		return depth_error(p, data, len);
	if (!bson_iter_init_from_data(&it, data, len))
		return terr_set(p->err, TERR_INVALID_BSON, "invalid BSON in filter");
	root = match_node_new(MK_AND);
	while (bson_iter_next(&it)) {
		const char *k = bson_iter_key(&it);
		const bson_value_t *e = bson_iter_value(&it);

		n = NULL;
		ERR(tm_interrupt_check(p->err));
		if (k[0] == '$') {
			top_parse_fn fn = top_lookup(k);

			if (fn == NULL && strcmp(k, "$not") == 0)
				ERR(terr_set(p->err, TERR_BAD_VALUE,
				             "unknown top level operator: $not. If you are trying to negate "
				             "an entire expression, use $nor."));
			if (fn == NULL)
				ERR(terr_set(p->err, TERR_BAD_VALUE,
				             "unknown top level operator: %s. If you have a field name "
				             "that starts with a '$' symbol, consider using $getField "
				             "or $setField.", k));
			ERR(fn(p, k, e, depth, lvl, &n));
			if (n != NULL)
				match_node_add(root, n);
			continue;
		}
		if (is_operator_doc(e, false)) {
			ERR(parse_sub(p, k, e, root, depth + 1, next));
			continue;
		}
		if (e->value_type == BSON_TYPE_REGEX)
			ERR(regex_from_value(p, k, e, &n));
		else
			ERR(cmp_leaf(p, MK_EQ, k, e, &n));
		match_node_add(root, n);
	}
	*out = simplify_and(root);
	return 0;
err:
	match_node_free(root);
	return ret;
}

/* ---- public API ------------------------------------------------------------ */

int
match_compile(const bson_t *filter, const match_options_t *opts, match_t **out, terr_t *err)
{
	/* one block: the match_t, then its copy of the filter's bytes */
	match_t *m = tm_malloc0(sizeof *m + filter->len);
	pctx_t p = {opts, m, err};
	int ret = 0;

	*out = NULL;
	m->filter_data = (uint8_t *)(m + 1);
	m->filter_len = filter->len;
	memcpy(m->filter_data, bson_get_data(filter), filter->len);
	ERR(parse_filter(&p, m->filter_data, m->filter_len, 0, LVL_PREDICATE_TOP, &m->root));
	if (opts != NULL && opts->coll != NULL)
		match_set_collation(m->root, opts->coll);
	*out = m;
	return 0;
err:
	match_free(m);
	return ret;
}

void
match_free(match_t *m)
{
	if (m == NULL)
		return;
	match_node_free(m->root);
	if (m->scope_vars != NULL)
		bson_destroy(m->scope_vars);
	bson_free(m);
}

int
match_exec(const match_t *m, const bson_t *doc, int *array_pos, terr_t *err)
{
	mctx_t c;
	int pos = -1;
	bool r;

	c.m = m;
	c.root_data = bson_get_data(doc);
	c.root_len = doc->len;
	c.err = err;
	c.failed = false;
	r = match_node_eval(m->root, c.root_data, c.root_len, &pos, &c);
	if (array_pos != NULL)
		*array_pos = r ? pos : -1;
	if (c.failed)
		return -1;
	return r ? 1 : 0;
}

bool
match_eval(const match_t *m, const bson_t *doc)
{
	terr_t e = TERR_INIT;
	int r = match_exec(m, doc, NULL, m->can_fail ? &e : NULL);

	terr_clear(&e);
	return r == 1;
}

bool
match_eval_pos(const match_t *m, const bson_t *doc, int *array_pos)
{
	terr_t e = TERR_INIT;
	int r = match_exec(m, doc, array_pos, m->can_fail ? &e : NULL);

	terr_clear(&e);
	return r == 1;
}

bool
match_can_fail(const match_t *m)
{
	return m->can_fail;
}

bool
match_is_trivially_true(const match_t *m)
{
	const mnode_t *r = m->root;

	if (r->kind == MK_TRUE)
		return true;
	if (r->kind != MK_AND)
		return false;
	for (uint32_t i = 0; i < r->nkids; i++)
		if (r->kids[i]->kind != MK_TRUE)
			return false;
	return true;
}

bool
match_is_id_point(const match_t *m, const bson_value_t **id)
{
	const mnode_t *r = m->root;
	bson_type_t t;

	if (r->kind != MK_EQ || !r->has_path || strcmp(r->path.full, "_id") != 0)
		return false;
	t = r->val.value_type;
	if (t == BSON_TYPE_ARRAY || t == BSON_TYPE_REGEX || t == BSON_TYPE_NULL ||
	    t == BSON_TYPE_UNDEFINED)
		return false;
	if (t == BSON_TYPE_DOCUMENT && is_operator_doc(&r->val, true))
		return false;
	if (id != NULL)
		*id = &r->val;
	return true;
}

bool
match_single_eq(const match_t *m, const char **path, const bson_value_t **v)
{
	const mnode_t *n = m->root;

	while (n->kind == MK_AND && n->nkids == 1)
		n = n->kids[0];
	if (n->kind != MK_EQ || !n->has_path)
		return false;
	*path = n->path.full;
	*v = &n->val;
	return true;
}

static bool
eq_walk(const mnode_t *n, match_eq_fn fn, void *ctx)
{
	switch (n->kind) {
	case MK_AND:
		for (uint32_t i = 0; i < n->nkids; i++)
			if (!eq_walk(n->kids[i], fn, ctx))
				return false;
		return true;
	case MK_OR:
		return n->nkids == 1 ? eq_walk(n->kids[0], fn, ctx) : true;
	case MK_EQ:
		return n->has_path ? fn(n->path.full, &n->val, ctx) : true;
	case MK_IN:
		if (n->has_path && n->u.in.n == 1 && n->u.in.nre == 0)
			return fn(n->path.full, &n->u.in.sorted[0], ctx);
		return true;
	default:
		return true;
	}
}

bool
match_equalities(const match_t *m, match_eq_fn fn, void *ctx)
{
	return eq_walk(m->root, fn, ctx);
}

static bool
pred_walk(const mnode_t *n, match_pred_fn fn, void *ctx)
{
	static const struct { mkind_t kind; match_pred_t op; } rows[] = {
		{MK_EQ, MATCH_PRED_EQ}, {MK_LT, MATCH_PRED_LT}, {MK_LTE, MATCH_PRED_LTE},
		{MK_GT, MATCH_PRED_GT}, {MK_GTE, MATCH_PRED_GTE}, {MK_IN, MATCH_PRED_IN},
		{MK_EXISTS, MATCH_PRED_EXISTS}, {MK_REGEX, MATCH_PRED_REGEX},
	};
	match_pred_t op = MATCH_PRED_OTHER;

	if (n->kind == MK_AND) {
		for (uint32_t i = 0; i < n->nkids; i++)
			if (!pred_walk(n->kids[i], fn, ctx))
				return false;
		return true;
	}
	if (!n->has_path || n->kind == MK_ELEM_OBJ || n->kind == MK_ELEM_VAL)
		return true;
	for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
		if (rows[i].kind == n->kind)
			op = rows[i].op;
	if (n->kind == MK_EXISTS) {
		bson_value_t t;

		t.value_type = BSON_TYPE_BOOL;
		t.value.v_bool = true;
		return fn(n->path.full, op, &t, ctx);
	}
	return fn(n->path.full, op, &n->val, ctx);
}

bool
match_predicates(const match_t *m, match_pred_fn fn, void *ctx)
{
	return pred_walk(m->root, fn, ctx);
}

static bool
refs_walk(const mnode_t *n, const char *field, size_t flen)
{
	if (n->kind == MK_AND || n->kind == MK_OR || n->kind == MK_NOR || n->kind == MK_NOT) {
		for (uint32_t i = 0; i < n->nkids; i++)
			if (refs_walk(n->kids[i], field, flen))
				return true;
		return false;
	}
	if (!n->has_path)
		return false;
	return n->path.comp[0].len == flen && memcmp(n->path.comp[0].s, field, flen) == 0;
}

bool
match_references_field(const match_t *m, const char *field)
{
	return refs_walk(m->root, field, strlen(field));
}

/* ---- serialization (explain's parsedQuery) ---------------------------------- */

static void node_to_bson(const mnode_t *n, bson_t *out);

/* Append the operator part ({$gt: 5}) of a path leaf into op_doc. */
static void
leaf_ops(const mnode_t *n, bson_t *op_doc)
{
	const char *name = match_ops[n->kind].name;
	bson_t arr, sub;
	char kb[16];
	const char *ks;
	uint32_t k = 0;

	switch (n->kind) {
	case MK_EQ: case MK_LT: case MK_LTE: case MK_GT: case MK_GTE:
		bv_append(op_doc, name, -1, &n->val);
		break;
	case MK_IN:
		bson_append_array_begin(op_doc, "$in", -1, &arr);
		for (uint32_t i = 0; i < n->u.in.n; i++, k++) {
			size_t kl = bson_uint32_to_string(k, &ks, kb, sizeof kb);
			bv_append(&arr, ks, (int)kl, &n->u.in.sorted[i]);
		}
		for (uint32_t i = 0; i < n->u.in.nre; i++, k++) {
			size_t kl = bson_uint32_to_string(k, &ks, kb, sizeof kb);
			bson_append_regex(&arr, ks, (int)kl, n->u.in.re[i].pattern, n->u.in.re[i].flags);
		}
		bson_append_array_end(op_doc, &arr);
		break;
	case MK_EXISTS:
		BSON_APPEND_BOOL(op_doc, "$exists", true);
		break;
	case MK_TYPE:
		bson_append_array_begin(op_doc, "$type", -1, &arr);
		if (n->u.type.mask[0] & (1u << 20)) {
			size_t kl = bson_uint32_to_string(k++, &ks, kb, sizeof kb);
			bson_append_utf8(&arr, ks, (int)kl, "number", -1);
		}
		for (int t = 1; t <= 22; t++) {
			int code = t <= 19 ? t : t == 21 ? -1 : t == 22 ? 127 : 0;

			if (code == 0 || !(n->u.type.mask[0] & (1u << t)))
				continue;
			size_t kl = bson_uint32_to_string(k++, &ks, kb, sizeof kb);
			bson_append_int32(&arr, ks, (int)kl, code);
		}
		bson_append_array_end(op_doc, &arr);
		break;
	case MK_MOD:
		bson_append_array_begin(op_doc, "$mod", -1, &arr);
		BSON_APPEND_INT64(&arr, "0", n->u.mod.div);
		BSON_APPEND_INT64(&arr, "1", n->u.mod.rem);
		bson_append_array_end(op_doc, &arr);
		break;
	case MK_REGEX:
		BSON_APPEND_UTF8(op_doc, "$regex", n->u.re.pattern ? n->u.re.pattern : "");
		if (n->u.re.flags != NULL && n->u.re.flags[0] != '\0')
			BSON_APPEND_UTF8(op_doc, "$options", n->u.re.flags);
		break;
	case MK_SIZE:
		BSON_APPEND_INT32(op_doc, "$size", n->u.size.n);
		break;
	case MK_BITS_ALL_SET: case MK_BITS_ANY_SET: case MK_BITS_ALL_CLEAR: case MK_BITS_ANY_CLEAR:
		bson_append_array_begin(op_doc, name, -1, &arr);
		for (uint32_t b = 0; b < n->u.bits.len * 8; b++) {
			if (!(n->u.bits.mask[b / 8] & (1u << (b % 8))))
				continue;
			size_t kl = bson_uint32_to_string(k++, &ks, kb, sizeof kb);
			bson_append_int32(&arr, ks, (int)kl, (int32_t)b);
		}
		for (uint32_t i = 0; i < n->u.bits.nfar; i++) {
			size_t kl = bson_uint32_to_string(k++, &ks, kb, sizeof kb);
			bson_append_int32(&arr, ks, (int)kl, (int32_t)n->u.bits.far[i]);
		}
		bson_append_array_end(op_doc, &arr);
		break;
	case MK_ELEM_OBJ:
		bson_append_document_begin(op_doc, "$elemMatch", -1, &sub);
		node_to_bson(n->kids[0], &sub);
		bson_append_document_end(op_doc, &sub);
		break;
	case MK_ELEM_VAL:
		bson_append_document_begin(op_doc, "$elemMatch", -1, &sub);
		for (uint32_t i = 0; i < n->nkids; i++)
			leaf_ops(n->kids[i], &sub);
		bson_append_document_end(op_doc, &sub);
		break;
	case MK_GEO: case MK_GEO_NEAR:
		bv_append(op_doc, n->u.geo.opname, -1, &n->val);
		break;
	case MK_NOT:
		bson_append_document_begin(op_doc, "$not", -1, &sub);
		if (n->kids[0]->kind == MK_AND)
			for (uint32_t i = 0; i < n->kids[0]->nkids; i++)
				leaf_ops(n->kids[0]->kids[i], &sub);
		else
			leaf_ops(n->kids[0], &sub);
		bson_append_document_end(op_doc, &sub);
		break;
	default:
		break;
	}
}

/* The path a NOT refers to when it negates path leaves only, else NULL. */
static const char *
not_path(const mnode_t *n)
{
	const mnode_t *k = n->kids[0];

	if (k->has_path)
		return k->path.full;
	if (k->kind == MK_AND && k->nkids > 0 && k->kids[0]->has_path) {
		for (uint32_t i = 1; i < k->nkids; i++)
			if (!k->kids[i]->has_path || strcmp(k->kids[i]->path.full, k->kids[0]->path.full))
				return NULL;
		return k->kids[0]->path.full;
	}
	return NULL;
}

static void
list_to_bson(const char *op, const mnode_t *n, bson_t *out)
{
	bson_t arr, sub;
	char kb[16];
	const char *ks;

	bson_append_array_begin(out, op, -1, &arr);
	for (uint32_t i = 0; i < n->nkids; i++) {
		size_t kl = bson_uint32_to_string(i, &ks, kb, sizeof kb);

		bson_append_document_begin(&arr, ks, (int)kl, &sub);
		node_to_bson(n->kids[i], &sub);
		bson_append_document_end(&arr, &sub);
	}
	bson_append_array_end(out, &arr);
}

static void
node_to_bson(const mnode_t *n, bson_t *out)
{
	bson_t ops;
	const char *path;

	switch (n->kind) {
	case MK_AND:
		if (n->nkids > 0)
			list_to_bson("$and", n, out);
		return;
	case MK_OR:
		list_to_bson("$or", n, out);
		return;
	case MK_NOR:
		list_to_bson("$nor", n, out);
		return;
	case MK_TRUE:
	case MK_FALSE:
		BSON_APPEND_INT32(out, match_ops[n->kind].name, 1);
		return;
	case MK_EXPR: {
		bson_value_t code;
		if (match_where_body(n, &code)) {   /* shown as given, as mongod */
			bv_append(out, "$where", -1, &code);
			return;
		}
		bv_append(out, match_ops[n->kind].name, -1, &n->val);
		return;
	}
	case MK_SCHEMA:
		bv_append(out, match_ops[n->kind].name, -1, &n->val);
		return;
	case MK_TEXT: {
		/* as mongod prints a parsed $text */
		bson_t t;
		bson_append_document_begin(out, "$text", -1, &t);
		bson_append_utf8(&t, "$search", -1, n->u.text.search, (int)n->u.text.search_len);
		BSON_APPEND_UTF8(&t, "$language", n->u.text.language != NULL ? n->u.text.language :
		    n->u.text.spec != NULL ? text_lang_name(text_spec_default_lang(n->u.text.spec)) : "english");
		BSON_APPEND_BOOL(&t, "$caseSensitive", n->u.text.case_sensitive);
		BSON_APPEND_BOOL(&t, "$diacriticSensitive", n->u.text.diacritic_sensitive);
		bson_append_document_end(out, &t);
		return;
	}
	case MK_SAMPLE:
		BSON_APPEND_DOUBLE(out, "$sampleRate", n->u.rate);
		return;
	case MK_BUCKET_GEO:
		bv_append(out, "$_internalBucketGeoWithin", -1, &n->val);
		return;
	case MK_NOT:
		path = not_path(n);
		if (path == NULL) {
			list_to_bson("$nor", n, out);
			return;
		}
		bson_append_document_begin(out, path, -1, &ops);
		leaf_ops(n, &ops);
		bson_append_document_end(out, &ops);
		return;
	default:
		if (!n->has_path)
			return;
		bson_append_document_begin(out, n->path.full, -1, &ops);
		leaf_ops(n, &ops);
		bson_append_document_end(out, &ops);
		return;
	}
}

static void
text_walk(const mnode_t *n, bool nor, bool or_not, match_text_params_t *out, int *count)
{
	if (n->kind == MK_TEXT) {
		if (*count == 0) {
			out->search = n->u.text.search;
			out->search_len = n->u.text.search_len;
			out->language = n->u.text.language;
			out->case_sensitive = n->u.text.case_sensitive;
			out->diacritic_sensitive = n->u.text.diacritic_sensitive;
		}
		out->under_nor = out->under_nor || nor;
		out->under_or = out->under_or || or_not;
		(*count)++;
		return;
	}
	if (n->kind == MK_ELEM_OBJ || n->kind == MK_ELEM_VAL)
		return;
	for (uint32_t i = 0; i < n->nkids; i++)
		text_walk(n->kids[i], nor || n->kind == MK_NOR, or_not || n->kind == MK_OR || n->kind == MK_NOT, out,
		    count);
}

int
match_text_info(const match_t *m, match_text_params_t *out)
{
	int count = 0;

	memset(out, 0, sizeof(*out));
	if (m != NULL && m->root != NULL)
		text_walk(m->root, false, false, out, &count);
	return count;
}

bool
match_has_text(const match_t *m)
{
	match_text_params_t p;

	return match_text_info(m, &p) > 0;
}

static void
text_bind(mnode_t *n, const void *spec, const void *query)
{
	if (n->kind == MK_TEXT) {
		n->u.text.spec = spec;
		n->u.text.query = query;
		return;
	}
	for (uint32_t i = 0; i < n->nkids; i++)
		text_bind(n->kids[i], spec, query);
}

void
match_text_bind(match_t *m, const void *spec, const void *query)
{
	if (m != NULL && m->root != NULL)
		text_bind(m->root, spec, query);
}

bson_t *
match_to_bson(const match_t *m)
{
	bson_t *out = bson_new();

	node_to_bson(m->root, out);
	return out;
}

/* Conjunct i of the root (the root itself when it is not an $and), or
 * NULL past the last. */
static const mnode_t *
conjunct(const match_t *m, uint32_t i)
{
	if (m->root->kind == MK_AND)
		return i < m->root->nkids ? m->root->kids[i] : NULL;
	return i == 0 ? m->root : NULL;
}

static bool
skipped(uint64_t skip, uint32_t i)
{
	return i < 64 && (skip >> i & 1) != 0;
}

int
match_exec_skip(const match_t *m, uint64_t skip, const bson_t *doc, terr_t *err)
{
	const mnode_t *n;
	mctx_t c;
	bool r = true;

	if (skip == 0)
		return match_exec(m, doc, NULL, err);
	c.m = m;
	c.root_data = bson_get_data(doc);
	c.root_len = doc->len;
	c.err = err;
	c.failed = false;
	for (uint32_t i = 0; r && (n = conjunct(m, i)) != NULL; i++)
		if (!skipped(skip, i))
			r = match_node_eval(n, c.root_data, c.root_len, NULL, &c);
	if (c.failed)
		return -1;
	return r ? 1 : 0;
}

uint64_t
match_text_conjuncts(const match_t *m)
{
	const mnode_t *n;
	uint64_t mask = 0;

	for (uint32_t i = 0; i < 64 && (n = conjunct(m, i)) != NULL; i++)
		if (n->kind == MK_TEXT)
			mask |= 1ull << i;
	return mask;
}

bson_t *
match_to_bson_skip(const match_t *m, uint64_t skip)
{
	const mnode_t *n, *only = NULL;
	uint32_t i, left = 0;
	bson_t *out, arr, sub;

	for (i = 0; (n = conjunct(m, i)) != NULL; i++)
		if (!skipped(skip, i)) {
			left++;
			only = n;
		}
	if (left == 0)
		return NULL;
	out = bson_new();
	if (left == 1) {
		node_to_bson(only, out);
		return out;
	}
	bson_append_array_begin(out, "$and", 4, &arr);
	for (i = 0, left = 0; (n = conjunct(m, i)) != NULL; i++) {
		char kb[16];
		const char *ks;
		size_t kl;
		if (skipped(skip, i))
			continue;
		kl = bson_uint32_to_string(left++, &ks, kb, sizeof kb);
		bson_append_document_begin(&arr, ks, (int)kl, &sub);
		node_to_bson(n, &sub);
		bson_append_document_end(&arr, &sub);
	}
	bson_append_array_end(out, &arr);
	return out;
}

/* ---- geo ------------------------------------------------------------------ */

static void
geo_walk(const mnode_t *n, bool top, int *count, int *top_count, const mnode_t **first_near,
         const mnode_t **first_geo)
{
	if (n->kind == MK_GEO_NEAR) {
		(*count)++;
		if (top)
			(*top_count)++;
		if (*first_near == NULL)
			*first_near = n;
		return;
	}
	if (n->kind == MK_GEO || n->kind == MK_BUCKET_GEO) {
		if (top && *first_geo == NULL)
			*first_geo = n;
		return;
	}
	for (uint32_t i = 0; i < n->nkids; i++)
		geo_walk(n->kids[i], top && n->kind == MK_AND, count, top_count, first_near, first_geo);
}

int
match_geo_info(const match_t *m, match_geo_info_t *out)
{
	int count = 0, top = 0;
	const mnode_t *near = NULL, *geo = NULL;

	memset(out, 0, sizeof(*out));
	if (m == NULL || m->root == NULL)
		return 0;
	geo_walk(m->root, true, &count, &top, &near, &geo);
	out->nnear = count;
	out->near_top_level = count == 1 && top == 1;
	if (near != NULL) {
		out->near_path = near->path.full;
		out->near = near->u.geo.near;
	}
	if (geo != NULL) {
		out->geo_path = geo->path.full;
		out->geo_shape = geo->u.geo.shape;
		out->geo_pred = geo->u.geo.pred;
		out->geo_bucket = geo->kind == MK_BUCKET_GEO;
	}
	return count;
}

uint64_t
match_geo_near_conjuncts(const match_t *m)
{
	uint64_t bits = 0;

	if (m == NULL || m->root == NULL)
		return 0;
	if (m->root->kind == MK_GEO_NEAR)
		return 1;
	if (m->root->kind != MK_AND)
		return 0;
	for (uint32_t i = 0; i < m->root->nkids && i < 64; i++)
		if (m->root->kids[i]->kind == MK_GEO_NEAR)
			bits |= 1ull << i;
	return bits;
}
