/*
 * projection.c -- find projections: parse into a tree of path nodes
 * (mirroring mongod's projection AST), then copy each document through it.
 *
 * Inclusion copies only named fields (in document order; computed fields are
 * appended in spec order); inside arrays, documents are projected and other
 * values dropped.  Exclusion copies everything except named fields; inside
 * arrays, non-documents are kept.  $slice, $elemMatch and "a.$" replace an
 * array by part of it.
 *
 * Not here: the $project stage's richer rules (agg/).
 */
#include "bson/path.h"
#include "query/projection.h"

#include <string.h>
#include <time.h>

#include "bson/value.h"
#include "common/checked.h"
#include "common/mem.h"
#include "expr/expr.h"
#include "common/nameidx.h"
#include "common/opctx.h"


typedef enum {
	PK_INTERNAL, PK_INCLUDE, PK_EXCLUDE, PK_SLICE, PK_ELEM, PK_POSITIONAL, PK_EXPR
} pkind_t;

typedef struct pnode pnode_t;
struct pnode {
	char *name;
	pkind_t kind;
	pnode_t **kids;
	uint32_t n, cap;
	tm_nameidx_t idx;        /* kids by name (common/nameidx.h): linear parsing */
	bool has_skip;
	int32_t skip, limit;     /* $slice */
	match_t *elem;           /* $elemMatch, compiled as {name: {$elemMatch: ...}} */
	expr_t *expr;            /* computed field */
	bool computed_below;     /* internal: a computed field lives under here */
	bool positional_below;   /* internal: the positional "a.b.$" goes through here */
};

struct projection {
	pnode_t root;
	bool inclusion;
	bool positional;
	bool has_expr;
	bson_t *let;
	int *ids;
	int nvars;
	int64_t now_ms;          /* $$NOW, fixed when compiled */
	char **meta;             /* fields set to {$meta: "textScore"} (top-level names) */
	int nmeta;
};

typedef struct pparse {
	projection_t *p;
	const match_t *query;
	expr_scope_t *scope;
	bool id_specified, has_positional, has_elem, has_slice;
	int type;                /* 0 unknown, 1 inclusion, 2 exclusion */
	terr_t *err;
} pparse_t;

static void
pnode_free_kids(pnode_t *n)
{
	for (uint32_t i = 0; i < n->n; i++) {
		pnode_t *k = n->kids[i];

		pnode_free_kids(k);
		bson_free(k->name);
		match_free(k->elem);
		if (k->expr != NULL)
			expr_destroy(k->expr);
		bson_free(k);
	}
	bson_free(n->kids);
	tm_nameidx_free(&n->idx);
	n->kids = NULL;
	n->n = n->cap = 0;
}

static const char *
kid_name(const void *ctx, uint32_t i, size_t *len)
{
	const pnode_t *n = ctx;

	*len = strlen(n->kids[i]->name);
	return n->kids[i]->name;
}

/* The child called name.  Indexes children added since the last call: at
 * run time (after pnode_index_all) the node is only read. */
static pnode_t *
pnode_child(const pnode_t *n, const char *name, size_t len)
{
	int64_t i = tm_nameidx_find((tm_nameidx_t *)&n->idx, n->n, name, len, kid_name, n);

	return i < 0 ? NULL : n->kids[i];
}

/* Index every node's children now, so that evaluation never writes. */
static void
pnode_index_all(pnode_t *n)
{
	(void)pnode_child(n, "", 0);
	for (uint32_t i = 0; i < n->n; i++)
		pnode_index_all(n->kids[i]);
}

static pnode_t *
pnode_add(pnode_t *parent, const char *name, size_t len, pkind_t kind)
{
	pnode_t *k = tm_malloc0(sizeof *k);

	k->name = bson_strndup(name, len);
	k->kind = kind;
	if (parent->n == parent->cap) {
		parent->cap = parent->cap ? parent->cap * 2 : 4;
		parent->kids = bson_realloc(parent->kids, sizeof(pnode_t *) * parent->cap);
	}
	parent->kids[parent->n++] = k;
	return k;
}

static int
check_path(const char *k, terr_t *err)
{
	size_t len = strlen(k);
	const char *c = k;

	if (len == 0)
		return terr_set(err, 40352, "FieldPath cannot be constructed with empty string");
	if (k[len - 1] == '.')
		return terr_set(err, 40353, "FieldPath must not end with a '.'.");
	for (;;) {
		const char *dot = strchr(c, '.');
		size_t l = dot ? (size_t)(dot - c) : strlen(c);

		if (l == 0)
			return terr_set(err, 15998, "FieldPath field names may not be empty strings.");
		if (c[0] == '$' && !bpath_is_dbref_field(c, l))
			return terr_set(err, 16410,
			                "FieldPath field names may not start with '$'. Consider using "
			                "$getField or $setField.");
		if (dot == NULL)
			return 0;
		c = dot + 1;
	}
}

/* Add a leaf of kind at path, with mongod's collision errors; *out gets it. */
static int
add_at_path(pparse_t *pp, const char *path, pkind_t kind, pnode_t **out)
{
	pnode_t *cur = &pp->p->root;
	const char *c = path;

	for (;;) {
		const char *dot = strchr(c, '.');
		size_t l = dot ? (size_t)(dot - c) : strlen(c);
		pnode_t *child = pnode_child(cur, c, l);

		if (dot == NULL) {
			if (child != NULL)
				return terr_set(pp->err, 31250, "Path collision at %s", path);
			*out = pnode_add(cur, c, l, kind);
			return 0;
		}
		if (child == NULL)
			child = pnode_add(cur, c, l, PK_INTERNAL);
		else if (child->kind != PK_INTERNAL)
			return terr_set(pp->err, 31249, "Path collision at %s remaining portion %s", path,
			                dot + 1);
		cur = child;
		c = dot + 1;
	}
}

static void
mark_computed(pnode_t *root, const char *path)
{
	pnode_t *cur = root;
	const char *c = path;

	for (;;) {
		const char *dot = strchr(c, '.');
		size_t l = dot ? (size_t)(dot - c) : strlen(c);

		cur->computed_below = true;
		if (dot == NULL)
			return;
		cur = pnode_child(cur, c, l);
		if (cur == NULL)
			return;
		c = dot + 1;
	}
}

static void
mark_positional(pnode_t *root, const char *path)
{
	pnode_t *cur = root;
	const char *c = path;

	for (;;) {
		const char *dot = strchr(c, '.');
		size_t l = dot ? (size_t)(dot - c) : strlen(c);

		cur = pnode_child(cur, c, l);
		if (cur == NULL || dot == NULL)
			return;
		cur->positional_below = true;
		c = dot + 1;
	}
}

static int
set_type(pparse_t *pp, int type, const char *path)
{
	if (pp->type != 0 && pp->type != type) {
		if (type == 1)
			return terr_set(pp->err, 31253,
			                "Cannot do inclusion on field %s in exclusion projection", path);
		return terr_set(pp->err, 31254,
		                "Cannot do exclusion on field %s in inclusion projection", path);
	}
	pp->type = type;
	return 0;
}

static int
positional_start(const char *path, size_t *begin, size_t *end)
{
	const char *p = strstr(path, ".$.");
	size_t len = strlen(path);

	if (p != NULL) {
		*begin = (size_t)(p - path);
		*end = *begin + 3;
		return 1;
	}
	if (len >= 2 && strcmp(path + len - 2, ".$") == 0) {
		*begin = len - 2;
		*end = len;
		return 1;
	}
	if (strcmp(path, "$") == 0) {
		*begin = 0;
		*end = len;
		return 1;
	}
	return 0;
}

static int parse_elems(pparse_t *pp, const bson_t *spec, const char *prefix);

static int
parse_expression(pparse_t *pp, const char *path, const bson_value_t *v)
{
	pnode_t *n;

	if (pp->type == 2)
		return terr_set(pp->err, 31252,
		                "Cannot use expression other than $meta in exclusion projection");
	pp->type = 1;
	RET(check_path(path, pp->err));
	RET(add_at_path(pp, path, PK_EXPR, &n));
	RET(expr_parse(v, pp->scope, &n->expr, pp->err));
	mark_computed(&pp->p->root, path);
	pp->p->has_expr = true;
	return 0;
}

static int
parse_object(pparse_t *pp, const char *path, const bson_value_t *v, bool positional)
{
	bson_iter_t it;
	const char *first;
	const bson_value_t *arg;
	pnode_t *n;
	bson_t sub;

	bson_iter_init_from_data(&it, v->value.v_doc.data, v->value.v_doc.data_len);
	if (!bson_iter_next(&it))
		return terr_set(pp->err, 51270,
		                "An empty sub-projection is not a valid value. Found empty object at "
		                "path");
	if (positional)
		return terr_set(pp->err, 31271, "positional projection cannot be used with an expression");
	first = bson_iter_key(&it);
	arg = bson_iter_value(&it);
	if (first[0] != '$') {
		/* nested sub-projection: {a: {b: 1}} is {"a.b": 1} */
		char *prefix = bson_strdup_printf("%s.", path);
		int ret;

		bson_init_static(&sub, v->value.v_doc.data, v->value.v_doc.data_len);
		ret = parse_elems(pp, &sub, prefix);
		bson_free(prefix);
		return ret;
	}
	RET(check_path(path, pp->err));
	if (strcmp(first, "$slice") == 0) {
		RET(add_at_path(pp, path, PK_SLICE, &n));
		if (bv_is_number(arg)) {
			double d = bv_as_double(arg);

			/* mongod: safeNumberInt (NaN is 0) */
			n->limit = tm_double_to_i32_sat(d);
		} else if (arg->value_type == BSON_TYPE_ARRAY) {
			bson_iter_t ai;
			bson_value_t sv, lv;
			int cnt = 0;

			bson_iter_init_from_data(&ai, arg->value.v_doc.data, arg->value.v_doc.data_len);
			while (bson_iter_next(&ai)) {
				if (cnt == 0)
					sv = *bson_iter_value(&ai);
				else if (cnt == 1)
					lv = *bson_iter_value(&ai);
				cnt++;
			}
			if (cnt != 2)
				return terr_set(pp->err, 31272,
				                "$slice array argument should be of form [skip, limit]");
			if (!bv_is_number(&sv))
				return terr_set(pp->err, 31257,
				                "$slice expects the skip argument to be a number, got %s",
				                bv_type_name(sv.value_type));
			if (!bv_is_number(&lv))
				return terr_set(pp->err, 31258,
				                "$slice expects the limit argument to be a number, got %s",
				                bv_type_name(lv.value_type));
			{
				double s = bv_as_double(&sv), l = bv_as_double(&lv);

				n->skip = tm_double_to_i32_sat(s);
				n->limit = tm_double_to_i32_sat(l);
			}
			if (n->limit <= 0)
				return terr_set(pp->err, 31259, "$slice limit must be positive, got %d",
				                n->limit);
			n->has_skip = true;
		} else {
			return terr_set(pp->err, 31273,
			                "$slice only supports numbers and [skip, limit] arrays");
		}
		pp->has_slice = true;
		return 0;
	}
	if (strcmp(first, "$elemMatch") == 0) {
		bson_t filter = BSON_INITIALIZER;
		int ret;

		if (arg->value_type != BSON_TYPE_DOCUMENT)
			return terr_set(pp->err, 31274,
			                "elemMatch: Invalid argument, object required, but got %s",
			                bv_type_name(arg->value_type));
		if (pp->has_positional)
			return terr_set(pp->err, 31255,
			                "Cannot specify positional operator and $elemMatch.");
		if (strchr(path, '.') != NULL)
			return terr_set(pp->err, 31275,
			                "Cannot use $elemMatch projection on a nested field.");
		RET(add_at_path(pp, path, PK_ELEM, &n));
		bson_append_value(&filter, path, -1, v);
		{
			match_options_t mo = {MATCH_DISALLOW_EXPR | MATCH_DISALLOW_TEXT |
			                      MATCH_DISALLOW_WHERE | MATCH_DISALLOW_GEO_NEAR |
			                      MATCH_DISALLOW_JSON_SCHEMA, NULL};
			ret = match_compile(&filter, &mo, &n->elem, pp->err);
		}
		bson_destroy(&filter);
		pp->has_elem = true;
		return ret;
	}
	if (strcmp(first, "$meta") == 0) {
		if (arg->value_type == BSON_TYPE_UTF8 && strcmp(arg->value.v_utf8.str, "textScore") == 0 &&
		    pp->query != NULL && match_has_text(pp->query)) {
			/* appended after the projected fields (replacing a field of
			 * that name), in neither inclusion nor exclusion */
			projection_t *pr = pp->p;
			if (strchr(path, '.') != NULL)
				return terr_set(pp->err, TERR_NOT_IMPLEMENTED,
				                "$meta on a dotted path is not supported by Tamga yet");
			pr->meta = bson_realloc(pr->meta, sizeof(char *) * (size_t)(pr->nmeta + 1));
			pr->meta[pr->nmeta++] = bson_strdup(path);
			return 0;
		}
		if (arg->value_type == BSON_TYPE_UTF8 && strcmp(arg->value.v_utf8.str, "textScore") == 0)
			return terr_set(pp->err, 40218,
			                "query requires text score metadata, but it is not available");
		return terr_set(pp->err, TERR_NOT_IMPLEMENTED, "$meta projections are not supported yet");
	}
	return parse_expression(pp, path, v);
}

static int
parse_elem(pparse_t *pp, const char *path, const bson_value_t *v)
{
	size_t pb, pe;
	bool positional = positional_start(path, &pb, &pe);
	pnode_t *n;

	if (strcmp(path, "_id") == 0 || strncmp(path, "_id.", 4) == 0)
		pp->id_specified = true;
	if (v->value_type == BSON_TYPE_DOCUMENT)
		return parse_object(pp, path, v, positional);
	if (v->value_type != BSON_TYPE_BOOL && !bv_is_number(v)) {
		if (positional)
			return terr_set(pp->err, 31271,
			                "positional projection cannot be used with an expression");
		return parse_expression(pp, path, v);
	}
	if (v->value_type == BSON_TYPE_BOOL ? v->value.v_bool
	    : (v->value_type == BSON_TYPE_DECIMAL128 ? bv_as_double(v) != 0
	                                             : bv_as_double(v) != 0 || bv_is_nan(v))) {
		if (!positional) {
			RET(check_path(path, pp->err));
			RET(add_at_path(pp, path, PK_INCLUDE, &n));
		} else {
			char *base;
			size_t tail;

			if (pp->has_positional)
				return terr_set(pp->err, 31276,
				                "Cannot specify more than one positional projection per query.");
			if (pp->has_elem)
				return terr_set(pp->err, 31256,
				                "Cannot specify positional operator and $elemMatch.");
			tail = strlen(path);
			if (tail >= 3 && strcmp(path + tail - 3, ".$.") == 0)
				return terr_set(pp->err, 31270, "Path cannot end with '.$.'");
			{
				size_t b2, e2;

				if (positional_start(path + pe, &b2, &e2))
					return terr_set(pp->err, 31287,
					                "Cannot use positional operator twice: %s", path);
			}
			if (pb == 0)
				return terr_set(pp->err, 5392900, "Projection on field %s is invalid", path);
			base = bson_strndup(path, pb);
			if (check_path(base, pp->err) != 0 || add_at_path(pp, base, PK_POSITIONAL, &n) != 0) {
				bson_free(base);
				return -1;
			}
			mark_positional(&pp->p->root, base);
			bson_free(base);
			pp->has_positional = true;
			pp->p->positional = true;
		}
		return set_type(pp, 1, path);
	}
	RET(check_path(path, pp->err));
	RET(add_at_path(pp, path, PK_EXCLUDE, &n));
	if (strcmp(path, "_id") != 0)
		return set_type(pp, 2, path);
	return 0;
}

static int
parse_elems(pparse_t *pp, const bson_t *spec, const char *prefix)
{
	bson_iter_t it;

	if (!bson_iter_init(&it, spec))
		return terr_set(pp->err, TERR_INVALID_BSON, "invalid BSON in projection");
	while (bson_iter_next(&it)) {
		RET(tm_interrupt_check(pp->err));
		char *path = bson_strdup_printf("%s%s", prefix, bson_iter_key(&it));
		int ret = parse_elem(pp, path, bson_iter_value(&it));

		bson_free(path);
		RET(ret);
	}
	return 0;
}

int
projection_compile(const bson_t *spec, const match_t *query, const bson_t *let,
                   projection_t **out, terr_t *err)
{
	projection_t *p = tm_malloc0(sizeof *p);
	pparse_t pp;
	bson_iter_t it;
	pnode_t *n;
	int ret = 0;

	memset(&pp, 0, sizeof pp);
	pp.p = p;
	pp.query = query;
	pp.err = err;
	*out = NULL;
	pp.scope = expr_scope_new();
	{
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		p->now_ms = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
	}
	if (let != NULL) {
		p->let = bson_copy(let);
		p->ids = tm_malloc0(sizeof(int) * (bson_count_keys(let) + 1));
		bson_iter_init(&it, p->let);
		while (bson_iter_next(&it)) {
			ERR(expr_scope_define(pp.scope, bson_iter_key(&it), &p->ids[p->nvars], err));
			p->nvars++;
		}
	}
	ERR(parse_elems(&pp, spec, ""));
	if (pp.type == 0)
		pp.type = pp.has_slice ? 2 : pp.has_elem ? 1 : 2;
	p->inclusion = pp.type == 1;
	if (!pp.id_specified && p->inclusion)
		ERR(add_at_path(&pp, "_id", PK_INCLUDE, &n));
	pnode_index_all(&p->root);
	*out = p;
	p = NULL;
err:
	if (pp.scope != NULL)
		expr_scope_destroy(pp.scope);
	projection_free(p);
	return ret;
}

void
projection_free(projection_t *p)
{
	if (p == NULL)
		return;
	pnode_free_kids(&p->root);
	for (int i = 0; i < p->nmeta; i++)
		bson_free(p->meta[i]);
	bson_free(p->meta);
	if (p->let != NULL)
		bson_destroy(p->let);
	bson_free(p->ids);
	bson_free(p);
}

bool
projection_needs_match_pos(const projection_t *p)
{
	return p->positional;
}

bool
projection_is_inclusion(const projection_t *p)
{
	return p->inclusion;
}

/* ---- apply -------------------------------------------------------------------- */

typedef struct papply {
	const projection_t *p;
	const bson_t *doc;
	int match_pos;
	expr_env_t *env;
	terr_t *err;
	bool pos_used;           /* the positional array was already narrowed */
} papply_t;

static int apply_doc(papply_t *a, const pnode_t *node, const uint8_t *data, uint32_t len,
                     bson_t *out);
static int apply_array(papply_t *a, const pnode_t *node, const bson_value_t *arr, bson_t *out);

static void
append_slice(const pnode_t *n, const char *key, int klen, const bson_value_t *v, bson_t *out)
{
	bson_iter_t it;
	int32_t len = 0, start, count, k = 0, i = 0;
	bson_t arr;

	if (v->value_type != BSON_TYPE_ARRAY) {
		bv_append(out, key, klen, v);
		return;
	}
	bson_iter_init_from_data(&it, v->value.v_doc.data, v->value.v_doc.data_len);
	while (bson_iter_next(&it))
		len++;
	if (!n->has_skip) {
		if (n->limit >= 0) {
			start = 0;
			count = n->limit;
		} else {
			start = len + n->limit < 0 ? 0 : len + n->limit;
			count = len;
		}
	} else {
		if (n->skip < 0)
			start = len + n->skip < 0 ? 0 : len + n->skip;
		else
			start = n->skip > len ? len : n->skip;
		count = n->limit;
	}
	bson_append_array_begin(out, key, klen, &arr);
	bson_iter_init_from_data(&it, v->value.v_doc.data, v->value.v_doc.data_len);
	while (bson_iter_next(&it)) {
		if (i >= start && k < count) {
			char kb[16];
			const char *ks;
			size_t kl = bson_uint32_to_string((uint32_t)k, &ks, kb, sizeof kb);

			bv_append(&arr, ks, (int)kl, bson_iter_value(&it));
			k++;
		}
		i++;
	}
	bson_append_array_end(out, &arr);
}

/* Append [element at pos] of v under key; false when there is none. */
static bool
append_element(const char *key, int klen, const bson_value_t *v, int pos, bson_t *out)
{
	bson_iter_t it;
	int i = 0;

	if (v->value_type != BSON_TYPE_ARRAY || pos < 0)
		return false;
	bson_iter_init_from_data(&it, v->value.v_doc.data, v->value.v_doc.data_len);
	while (bson_iter_next(&it)) {
		if (i++ == pos) {
			bson_t arr;

			bson_append_array_begin(out, key, klen, &arr);
			bv_append(&arr, "0", 1, bson_iter_value(&it));
			bson_append_array_end(out, &arr);
			return true;
		}
	}
	return false;
}

static int
positional_error(papply_t *a)
{
	return terr_set(a->err, 51246,
	                "positional operator '.$' couldn't find a matching element in the array");
}

static bool
element_at(const bson_value_t *arr, int pos, bson_value_t *out)
{
	bson_iter_t it;
	int i = 0;

	if (pos < 0 ||
	    !bson_iter_init_from_data(&it, arr->value.v_doc.data, arr->value.v_doc.data_len))
		return false;
	while (bson_iter_next(&it)) {
		if (i++ == pos) {
			*out = *bson_iter_value(&it);
			return true;
		}
	}
	return false;
}

static int
apply_field(papply_t *a, const pnode_t *k, const char *key, int klen, const bson_value_t *v,
            bson_t *out)
{
	bool incl = a->p->inclusion;

	switch (k->kind) {
	case PK_INCLUDE:
		bv_append(out, key, klen, v);
		return 0;
	case PK_EXCLUDE:
	case PK_EXPR:
		return 0;
	case PK_SLICE:
		append_slice(k, key, klen, v, out);
		return 0;
	case PK_ELEM:
		/* appended after the other fields (apply_doc), as mongod does since 4.4 */
		return 0;
	case PK_POSITIONAL:
		if (a->pos_used || v->value_type != BSON_TYPE_ARRAY) {
			bv_append(out, key, klen, v);
			return 0;
		}
		if (a->match_pos < 0)
			return positional_error(a);
		append_element(key, klen, v, a->match_pos, out);
		return 0;
	case PK_INTERNAL:
		if (v->value_type == BSON_TYPE_DOCUMENT) {
			bson_t sub;

			bson_append_document_begin(out, key, klen, &sub);
			RET(apply_doc(a, k, v->value.v_doc.data, v->value.v_doc.data_len, &sub));
			bson_append_document_end(out, &sub);
		} else if (v->value_type == BSON_TYPE_ARRAY && k->positional_below && !a->pos_used) {
			/* the first array on a positional path keeps only the matched element */
			bson_value_t one;
			bson_t sub;
			int ret;

			if (a->match_pos < 0)
				return positional_error(a);
			if (!element_at(v, a->match_pos, &one))
				return 0;
			bson_append_array_begin(out, key, klen, &sub);
			a->pos_used = true;
			if (one.value_type == BSON_TYPE_DOCUMENT) {
				bson_t elem;

				bson_append_document_begin(&sub, "0", 1, &elem);
				ret = apply_doc(a, k, one.value.v_doc.data, one.value.v_doc.data_len, &elem);
				bson_append_document_end(&sub, &elem);
			} else {
				ret = 0;
			}
			a->pos_used = false;
			bson_append_array_end(out, &sub);
			RET(ret);
		} else if (v->value_type == BSON_TYPE_ARRAY) {
			bson_t sub;

			bson_append_array_begin(out, key, klen, &sub);
			RET(apply_array(a, k, v, &sub));
			bson_append_array_end(out, &sub);
		} else if (!incl) {
			bv_append(out, key, klen, v);
		} else if (k->computed_below) {
			bson_t sub;

			bson_append_document_begin(out, key, klen, &sub);
			RET(apply_doc(a, k, NULL, 0, &sub));
			bson_append_document_end(out, &sub);
		}
		return 0;
	}
	return 0;
}

static int
apply_array(papply_t *a, const pnode_t *node, const bson_value_t *arr, bson_t *out)
{
	bson_iter_t it;
	uint32_t k = 0;

	bson_iter_init_from_data(&it, arr->value.v_doc.data, arr->value.v_doc.data_len);
	while (bson_iter_next(&it)) {
		const bson_value_t *e = bson_iter_value(&it);
		char kb[16];
		const char *ks;
		size_t kl = bson_uint32_to_string(k, &ks, kb, sizeof kb);
		bson_t sub;

		if (e->value_type == BSON_TYPE_DOCUMENT) {
			bson_append_document_begin(out, ks, (int)kl, &sub);
			RET(apply_doc(a, node, e->value.v_doc.data, e->value.v_doc.data_len, &sub));
			bson_append_document_end(out, &sub);
		} else if (e->value_type == BSON_TYPE_ARRAY) {
			bson_append_array_begin(out, ks, (int)kl, &sub);
			RET(apply_array(a, node, e, &sub));
			bson_append_array_end(out, &sub);
		} else if (!a->p->inclusion) {
			bv_append(out, ks, (int)kl, e);
		} else if (node->computed_below) {
			bson_append_document_begin(out, ks, (int)kl, &sub);
			RET(apply_doc(a, node, NULL, 0, &sub));
			bson_append_document_end(out, &sub);
		} else {
			continue;
		}
		k++;
	}
	return 0;
}

static int
apply_doc(papply_t *a, const pnode_t *node, const uint8_t *data, uint32_t len, bson_t *out)
{
	bson_iter_t it;
	const pnode_t *computed_id = NULL;

	/* a computed _id stays the first field of the result */
	if (node == &a->p->root) {
		computed_id = pnode_child(node, "_id", 3);
		if (computed_id != NULL && computed_id->kind == PK_EXPR) {
			bson_value_t v;

			if (expr_eval(computed_id->expr, a->env, &v, a->err) != 0)
				return -1;
			if (v.value_type != BSON_TYPE_EOD)
				bv_append(out, "_id", 3, &v);
		} else {
			computed_id = NULL;
		}
	}
	if (data != NULL && bson_iter_init_from_data(&it, data, len)) {
		while (bson_iter_next(&it)) {
			const char *key = bson_iter_key(&it);
			int klen = (int)bson_iter_key_len(&it);
			const pnode_t *k = pnode_child(node, key, (size_t)klen);

			if (k == NULL) {
				if (!a->p->inclusion)
					bv_append(out, key, klen, bson_iter_value(&it));
				continue;
			}
			RET(apply_field(a, k, key, klen, bson_iter_value(&it), out));
		}
	}
	/* $elemMatch results, then computed fields, in spec order */
	for (uint32_t i = 0; i < node->n; i++) {
		const pnode_t *k = node->kids[i];
		bson_iter_t f;
		int pos = -1;

		if (k->kind != PK_ELEM || data == NULL || !bson_iter_init_from_data(&f, data, len) ||
		    !bson_iter_find_w_len(&f, k->name, (int)strlen(k->name)))
			continue;
		if (BSON_ITER_HOLDS_ARRAY(&f) && match_eval_pos(k->elem, a->doc, &pos))
			append_element(k->name, -1, bson_iter_value(&f), pos, out);
	}
	for (uint32_t i = 0; i < node->n; i++) {
		const pnode_t *k = node->kids[i];

		if (k->kind == PK_EXPR && k != computed_id) {
			bson_value_t v;

			if (expr_eval(k->expr, a->env, &v, a->err) != 0)
				return -1;
			if (v.value_type != BSON_TYPE_EOD)
				bv_append(out, k->name, -1, &v);
		} else if (k->kind == PK_INTERNAL && k->computed_below) {
			bson_iter_t f;

			if (data != NULL && bson_iter_init_from_data(&f, data, len) &&
			    bson_iter_find_w_len(&f, k->name, (int)strlen(k->name)))
				continue;
			if (a->p->inclusion) {
				bson_t sub;

				bson_append_document_begin(out, k->name, -1, &sub);
				RET(apply_doc(a, k, NULL, 0, &sub));
				bson_append_document_end(out, &sub);
			}
		}
	}
	return 0;
}

int
projection_apply(const projection_t *p, const bson_t *doc, int match_pos, bson_t *out,
                 terr_t *err)
{
	papply_t a = {p, doc, match_pos, NULL, err, false};
	int ret = 0;

	if (p->has_expr) {
		bson_iter_t it;
		int i = 0;

		a.env = expr_env_new();
		expr_env_set_now(a.env, p->now_ms);
		expr_env_set_root(a.env, doc);
		if (p->let != NULL) {
			bson_iter_init(&it, p->let);
			while (bson_iter_next(&it) && i < p->nvars)
				ERR(expr_env_set_var(a.env, p->ids[i++], bson_iter_value(&it), err));
		}
	}
	ret = apply_doc(&a, &p->root, bson_get_data(doc), doc->len, out);
err:
	if (a.env != NULL)
		expr_env_destroy(a.env);
	return ret;
}

bool
projection_wants_text_score(const projection_t *p)
{
	return p != NULL && p->nmeta > 0;
}

int
projection_apply_meta(const projection_t *p, const bson_t *doc, int match_pos, const double *text_score,
                      bson_t *out, terr_t *err)
{
	bson_t tmp;
	bson_iter_t it;
	int i;

	if (p->nmeta == 0)
		return projection_apply(p, doc, match_pos, out, err);
	bson_init(&tmp);
	if (projection_apply(p, doc, match_pos, &tmp, err) != 0) {
		bson_destroy(&tmp);
		return -1;
	}
	bson_iter_init(&it, &tmp);
	while (bson_iter_next(&it)) {
		for (i = 0; i < p->nmeta; i++)
			if (strcmp(bson_iter_key(&it), p->meta[i]) == 0)
				break;
		if (i == p->nmeta)
			bson_append_iter(out, NULL, 0, &it);
	}
	if (text_score != NULL)
		for (i = 0; i < p->nmeta; i++)
			BSON_APPEND_DOUBLE(out, p->meta[i], *text_score);
	bson_destroy(&tmp);
	return 0;
}
