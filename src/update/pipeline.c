/*
 * pipeline.c -- pipeline-style updates: an array of $set/$addFields,
 * $unset, $project, $replaceRoot/$replaceWith stages run over one document
 * with the expression language (expr/expr.h).
 *
 * Each stage has aggregation's semantics: $set adds or replaces fields
 * (dotted paths and nested objects descend into embedded documents and
 * arrays of them, new fields appended in spec order), $project keeps or
 * drops fields (_id kept unless excluded), $unset drops them,
 * $replaceRoot/$replaceWith substitutes a computed document.  Other
 * aggregation stages are refused as mongod refuses them in an update.
 *
 * Not here: what happens to _id after the pipeline (update.c keeps the old
 * one and refuses changes), operator updates.
 */
#include "update/update_private.h"

#include <string.h>

#include "bson/slots.h"
#include "bson/value.h"
#include "expr/expr.h"
#include "common/nameidx.h"

/* A projection / $set tree: children in spec order. */
typedef struct pnode pnode_t;
struct pnode {
	char **names;
	pnode_t **kids;
	size_t n, cap;
	tm_nameidx_t idx;   /* names' index (common/nameidx.h): linear parsing */
	expr_t *e;          /* computed value (leaf) */
	bool include;       /* inclusion leaf (projection) */
	bool leaf;
	size_t depth;       /* distance from the stage's root */
};

typedef enum { PS_SET, PS_PROJECT_INCL, PS_PROJECT_EXCL, PS_REPLACE } pstage_kind_t;

typedef struct pstage {
	pstage_kind_t kind;
	pnode_t *tree;
	expr_t *root;       /* PS_REPLACE */
	bool is_replace_with;
	bool id_excluded;   /* PS_PROJECT_INCL: _id: 0 */
} pstage_t;

struct upipe {
	pstage_t *st;
	size_t n;
	expr_scope_t *scope;
	int *var_ids;
	bson_t *let;
};

static void
pnode_free(pnode_t *p)
{
	if (p == NULL)
		return;
	for (size_t i = 0; i < p->n; i++) {
		bson_free(p->names[i]);
		pnode_free(p->kids[i]);
	}
	bson_free(p->names);
	bson_free(p->kids);
	tm_nameidx_free(&p->idx);
	expr_destroy(p->e);
	bson_free(p);
}

static const char *
node_name(const void *ctx, uint32_t i, size_t *len)
{
	const pnode_t *p = ctx;

	*len = strlen(p->names[i]);
	return p->names[i];
}

/* The index of the child called name (len bytes), or p->n.  Indexes the
 * children added since the last call: once pnode_index_all ran (at the end
 * of compiling), the node is only read. */
static size_t
pnode_index_of(const pnode_t *p, const char *name, size_t len)
{
	int64_t i = tm_nameidx_find((tm_nameidx_t *)&p->idx, (uint32_t)p->n, name, len, node_name, p);

	return i < 0 ? p->n : (size_t)i;
}

static void
pnode_index_all(pnode_t *p)
{
	if (p == NULL)
		return;
	(void)pnode_index_of(p, "", 0);
	for (size_t i = 0; i < p->n; i++)
		pnode_index_all(p->kids[i]);
}

static pnode_t *
pnode_child(pnode_t *p, const char *name, size_t len, bool create)
{
	size_t i = pnode_index_of(p, name, len);

	if (i < p->n)
		return p->kids[i];
	if (!create)
		return NULL;
	if (p->n == p->cap) {
		p->cap = p->cap ? p->cap * 2 : 4;
		p->names = bson_realloc(p->names, p->cap * sizeof(char *));
		p->kids = bson_realloc(p->kids, p->cap * sizeof(pnode_t *));
	}
	p->names[p->n] = bson_strndup(name, len);
	p->kids[p->n] = bson_malloc0(sizeof(pnode_t));
	return p->kids[p->n++];
}

static pnode_t *
pnode_find(const pnode_t *p, const char *name)
{
	size_t i = pnode_index_of(p, name, strlen(name));

	return i < p->n ? p->kids[i] : NULL;
}

void
update_pipe_free(upipe_t *p)
{
	if (p == NULL)
		return;
	for (size_t i = 0; i < p->n; i++) {
		pnode_free(p->st[i].tree);
		expr_destroy(p->st[i].root);
	}
	bson_free(p->st);
	bson_free(p->var_ids);
	expr_scope_destroy(p->scope);
	if (p->let)
		bson_destroy(p->let);
	bson_free(p);
}

static const char *const not_in_update[] = {
	"$match", "$group", "$sort", "$limit", "$skip", "$lookup", "$unwind", "$count", "$facet",
	"$bucket", "$bucketAuto", "$sortByCount", "$sample", "$out", "$merge", "$graphLookup",
	"$geoNear", "$redact", "$densify", "$setWindowFields", "$unionWith", "$documents",
	"$collStats", "$indexStats", "$currentOp", "$listSessions", "$listLocalSessions",
	"$planCacheStats", "$changeStream", "$search", "$searchMeta", "$vectorSearch",
	"$listSearchIndexes", "$changeStreamSplitLargeEvent", "$querySettings", NULL,
};

/* Walk a dotted field name into tree, creating nodes; the final node is
 * returned (error when it conflicts with an earlier path). */
static int
tree_path(pnode_t *tree, const char *stage, const char *path, pnode_t **out, terr_t *err)
{
	const char *s = path;
	pnode_t *cur = tree;

	if (path[0] == '$')
		return terr_set(err, 16410,
		                "Invalid %s :: caused by :: FieldPath field names may not start with '$'. "
		                "Consider using $getField or $setField.", stage);
	if (path[0] == '\0' || path[strlen(path) - 1] == '.' || strstr(path, "..") != NULL)
		return terr_set(err, 15998,
		                "Invalid %s :: caused by :: FieldPath field names may not be empty strings.",
		                stage);
	{
		size_t parts = 1;

		for (const char *c = path; *c; c++)
			parts += *c == '.';
		if (parts > UPDATE_MAX_PATH_PARTS)
			return terr_set(err, TERR_OVERFLOW, "Document exceeds maximum nesting depth of %d",
			                UPDATE_MAX_DEPTH);
	}
	for (;;) {
		const char *dot = strchr(s, '.');
		size_t len = dot ? (size_t)(dot - s) : strlen(s);
		pnode_t *kid;

		if (cur->leaf)
			goto conflict;
		kid = pnode_child(cur, s, len, true);
		kid->depth = cur->depth + 1;
		if (kid->depth > UPDATE_MAX_PATH_PARTS)
			return terr_set(err, TERR_OVERFLOW, "Document exceeds maximum nesting depth of %d",
			                UPDATE_MAX_DEPTH);
		cur = kid;
		if (!dot)
			break;
		s = dot + 1;
	}
	if (cur->leaf || cur->n > 0)
		goto conflict;
	*out = cur;
	return 0;
conflict:
	return terr_set(err, 31250, "Invalid %s :: caused by :: Path collision at %s", stage, path);
}

static bool
is_expression_object(const bson_value_t *v)
{
	bson_t d;
	bson_iter_t it;

	if (v->value_type != BSON_TYPE_DOCUMENT)
		return false;
	bson_init_static(&d, v->value.v_doc.data, v->value.v_doc.data_len);
	if (!bson_iter_init(&it, &d) || !bson_iter_next(&it))
		return true; /* {} is a literal */
	return bson_iter_key(&it)[0] == '$';
}

/* $set / $addFields spec (recursive for nested objects). */
static int
parse_set(pnode_t *tree, const char *stage, const bson_t *spec, upipe_t *p, terr_t *err)
{
	bson_iter_t it;

	bson_iter_init(&it, spec);
	while (bson_iter_next(&it)) {
		const bson_value_t *v = bson_iter_value(&it);
		pnode_t *node;

		RET(tree_path(tree, stage, bson_iter_key(&it), &node, err));
		if (v->value_type == BSON_TYPE_DOCUMENT && !is_expression_object(v)) {
			bson_t sub;

			bson_init_static(&sub, v->value.v_doc.data, v->value.v_doc.data_len);
			RET(parse_set(node, stage, &sub, p, err));
			continue;
		}
		node->leaf = true;
		RET(expr_parse(v, p->scope, &node->e, err));
	}
	return 0;
}

static bool
is_bool_like(const bson_value_t *v, bool *truthy)
{
	if (v->value_type == BSON_TYPE_BOOL) {
		*truthy = v->value.v_bool;
		return true;
	}
	if (bv_is_number(v)) {
		*truthy = bv_as_double(v) != 0 || bv_is_nan(v);
		return true;
	}
	return false;
}

/* $project spec: decide inclusion/exclusion, build the tree. */
static int
parse_project(pstage_t *ps, const char *stage, const bson_t *spec, pnode_t *tree, int *mode,
              bool top, upipe_t *p, terr_t *err)
{
	bson_iter_t it;

	bson_iter_init(&it, spec);
	while (bson_iter_next(&it)) {
		const char *k = bson_iter_key(&it);
		const bson_value_t *v = bson_iter_value(&it);
		bool truthy;
		pnode_t *node;

		if (v->value_type == BSON_TYPE_DOCUMENT && !is_expression_object(v)) {
			bson_t sub;

			RET(tree_path(tree, stage, k, &node, err));
			bson_init_static(&sub, v->value.v_doc.data, v->value.v_doc.data_len);
			RET(parse_project(ps, stage, &sub, node, mode, false, p, err));
			continue;
		}
		if (is_bool_like(v, &truthy)) {
			if (top && strcmp(k, "_id") == 0) {
				if (!truthy) {
					ps->id_excluded = true;
					RET(tree_path(tree, stage, k, &node, err));
					node->leaf = true;
					node->include = false;
					continue;
				}
				RET(tree_path(tree, stage, k, &node, err));
				node->leaf = true;
				node->include = true;
				continue;
			}
			if (truthy) {
				if (*mode == 2)
					return terr_set(err, 31253,
					                "Invalid %s :: caused by :: Cannot do inclusion on field %s "
					                "in exclusion projection", stage, k);
				*mode = 1;
			} else {
				if (*mode == 1)
					return terr_set(err, 31254,
					                "Invalid %s :: caused by :: Cannot do exclusion on field %s "
					                "in inclusion projection", stage, k);
				*mode = 2;
			}
			RET(tree_path(tree, stage, k, &node, err));
			node->leaf = true;
			node->include = truthy;
			continue;
		}
		/* computed field */
		if (*mode == 2)
			return terr_set(err, 31252,
			                "Invalid %s :: caused by :: Cannot use expression other than $meta in "
			                "exclusion projection", stage);
		*mode = 1;
		RET(tree_path(tree, stage, k, &node, err));
		node->leaf = true;
		RET(expr_parse(v, p->scope, &node->e, err));
	}
	return 0;
}

static int
add_unset_path(pnode_t *tree, const char *path, terr_t *err)
{
	pnode_t *node;

	RET(tree_path(tree, "$unset", path, &node, err));
	node->leaf = true;
	node->include = false;
	return 0;
}

typedef int (*stage_parse_fn)(upipe_t *p, const char *name, const bson_value_t *v,
                              pstage_t *ps, terr_t *err);

static int
stage_set(upipe_t *p, const char *name, const bson_value_t *v, pstage_t *ps, terr_t *err)
{
	bson_t spec;

	if (v->value_type != BSON_TYPE_DOCUMENT)
		return terr_set(err, 40272, "%s specification stage must be an object, got %s", name,
		                bv_type_name(v->value_type));
	bson_init_static(&spec, v->value.v_doc.data, v->value.v_doc.data_len);
	ps->kind = PS_SET;
	ps->tree = bson_malloc0(sizeof(pnode_t));
	if (bson_empty(&spec))
		return terr_set(err, 40177,
		                "Invalid %s :: caused by :: specification must have at least one field",
		                name);
	return parse_set(ps->tree, name, &spec, p, err);
}

static int
stage_project(upipe_t *p, const char *name, const bson_value_t *v, pstage_t *ps, terr_t *err)
{
	bson_t spec;
	int mode = 0;

	if (v->value_type != BSON_TYPE_DOCUMENT)
		return terr_set(err, 15969, "$project specification must be an object");
	bson_init_static(&spec, v->value.v_doc.data, v->value.v_doc.data_len);
	ps->tree = bson_malloc0(sizeof(pnode_t));
	if (bson_empty(&spec))
		return terr_set(err, 51272,
		                "Invalid $project :: caused by :: projection specification must have "
		                "at least one field");
	RET(parse_project(ps, name, &spec, ps->tree, &mode, true, p, err));
	if (mode == 0) /* only _id */
		mode = ps->id_excluded ? 2 : 1;
	ps->kind = mode == 2 ? PS_PROJECT_EXCL : PS_PROJECT_INCL;
	return 0;
}

static int
stage_unset(upipe_t *p, const char *name, const bson_value_t *v, pstage_t *ps, terr_t *err)
{
	bson_t spec;
	bson_iter_t it;

	ps->kind = PS_PROJECT_EXCL;
	ps->tree = bson_malloc0(sizeof(pnode_t));
	if (v->value_type == BSON_TYPE_UTF8)
		return add_unset_path(ps->tree, v->value.v_utf8.str, err);
	if (v->value_type != BSON_TYPE_ARRAY)
		return terr_set(err, 31002, "$unset specification must be a string or an array");
	bson_init_static(&spec, v->value.v_doc.data, v->value.v_doc.data_len);
	if (bson_empty(&spec))
		return terr_set(err, 31119,
		                "$unset specification must be a string or an array with at least one "
		                "field");
	bson_iter_init(&it, &spec);
	while (bson_iter_next(&it)) {
		if (!BSON_ITER_HOLDS_UTF8(&it))
			return terr_set(err, 31120,
			                "$unset specification must be a string or an array containing "
			                "only string values");
		RET(add_unset_path(ps->tree, bson_iter_utf8(&it, NULL), err));
	}
	return 0;
}

static int
stage_replace_with(upipe_t *p, const char *name, const bson_value_t *v, pstage_t *ps,
                   terr_t *err)
{
	ps->kind = PS_REPLACE;
	ps->is_replace_with = true;
	return expr_parse(v, p->scope, &ps->root, err);
}

static int
stage_replace_root(upipe_t *p, const char *name, const bson_value_t *v, pstage_t *ps,
                   terr_t *err)
{
	bson_t spec;
	bson_iter_t it;
	bool found = false;

	ps->kind = PS_REPLACE;
	if (v->value_type != BSON_TYPE_DOCUMENT)
		return terr_set(err, TERR_TYPE_MISMATCH,
		                "$replaceRoot requires an object as its argument");
	bson_init_static(&spec, v->value.v_doc.data, v->value.v_doc.data_len);
	bson_iter_init(&it, &spec);
	while (bson_iter_next(&it)) {
		if (strcmp(bson_iter_key(&it), "newRoot") != 0)
			return terr_set(err, 40415, "BSON field '$replaceRoot.%s' is an unknown field.",
			                bson_iter_key(&it));
		found = true;
		RET(expr_parse(bson_iter_value(&it), p->scope, &ps->root, err));
	}
	if (!found)
		return terr_set(err, 40414,
		                "BSON field '$replaceRoot.newRoot' is missing but a required field");
	return 0;
}

static int
stage_not_built(upipe_t *p, const char *name, const bson_value_t *v, pstage_t *ps, terr_t *err)
{
	return terr_set(err, TERR_NOT_IMPLEMENTED, "%s is not supported in update pipelines yet", name);
}

/* The stages an update pipeline may hold. */
static const struct {
	const char *name;
	stage_parse_fn parse;
} update_stages[] = {
	{"$set", stage_set},
	{"$addFields", stage_set},
	{"$project", stage_project},
	{"$unset", stage_unset},
	{"$replaceWith", stage_replace_with},
	{"$replaceRoot", stage_replace_root},
	{"$fill", stage_not_built}, /* allowed by mongod, not built here yet */
};

static int
compile_stage(upipe_t *p, const char *name, const bson_value_t *v, pstage_t *ps, terr_t *err)
{
	for (size_t i = 0; i < sizeof update_stages / sizeof *update_stages; i++)
		if (strcmp(update_stages[i].name, name) == 0)
			return update_stages[i].parse(p, name, v, ps, err);
	for (size_t i = 0; not_in_update[i]; i++)
		if (strcmp(not_in_update[i], name) == 0)
			return terr_set(err, TERR_INVALID_OPTIONS, "%s is not allowed to be used within an update",
			                name);
	return terr_set(err, 40324, "Unrecognized pipeline stage name: '%s'", name);
}

int
update_pipe_compile(const bson_value_t *arr, const bson_t *let, const coll_t *coll, upipe_t **out,
                    terr_t *err)
{
	upipe_t *p = bson_malloc0(sizeof *p);
	bson_t a;
	bson_iter_t it;
	size_t n = 0, nv = 0;
	int ret = -1;

	p->scope = expr_scope_new();
	expr_scope_set_collation(p->scope, coll);
	p->let = bson_new();
	if (let != NULL) {
		bson_concat(p->let, let);
		nv = bson_count_keys(let);
		p->var_ids = bson_malloc0((nv ? nv : 1) * sizeof(int));
		bson_iter_init(&it, let);
		for (size_t i = 0; bson_iter_next(&it); i++)
			ERR(expr_scope_define(p->scope, bson_iter_key(&it), &p->var_ids[i], err));
	}
	bson_init_static(&a, arr->value.v_doc.data, arr->value.v_doc.data_len);
	n = bson_count_keys(&a);
	p->st = bson_malloc0((n ? n : 1) * sizeof(pstage_t));
	bson_iter_init(&it, &a);
	while (bson_iter_next(&it)) {
		bson_t sd;
		bson_iter_t si;

		if (!BSON_ITER_HOLDS_DOCUMENT(&it)) {
			ret = terr_set(err, TERR_TYPE_MISMATCH, "Each element of the 'pipeline' array must "
			               "be an object");
			goto err;
		}
		bson_init_static(&sd, bson_iter_value(&it)->value.v_doc.data,
		                 bson_iter_value(&it)->value.v_doc.data_len);
		if (bson_count_keys(&sd) != 1) {
			ret = terr_set(err, 40323,
			               "A pipeline stage specification object must contain exactly one field.");
			goto err;
		}
		bson_iter_init(&si, &sd);
		bson_iter_next(&si);
		p->n++;
		ERR(compile_stage(p, bson_iter_key(&si), bson_iter_value(&si), &p->st[p->n - 1], err));
		pnode_index_all(p->st[p->n - 1].tree);
	}
	*out = p;
	return 0;
err:
	update_pipe_free(p);
	return ret;
}

/* ------------------------------------------------------------------ */
/* run                                                                 */

typedef struct set_holes set_holes_t;
static int set_value(const pnode_t *t, const bson_value_t *in, expr_env_t *env, bson_value_t *out,
                     bool *own, set_holes_t *holes, terr_t *err);

/* The $set tree's leaves whose value was missing, kept for a later $set
 * (mongod's setField of a missing value leaves a slot, at any depth). */
struct set_holes {
	const pnode_t **nodes;
	size_t n, cap;
};

/* A missing value of leaf k: a null placeholder in its slot, k noted once. */
static void
hole_put(set_holes_t *h, const pnode_t *k, const char *name, int len, bson_t *b)
{
	bson_append_null(b, name, len);
	for (size_t i = 0; i < h->n; i++)
		if (h->nodes[i] == k)
			return;
	if (h->n == h->cap) {
		h->cap = h->cap == 0 ? 8 : h->cap * 2;
		h->nodes = bson_realloc(h->nodes, sizeof(*h->nodes) * h->cap);
	}
	h->nodes[h->n++] = k;
}

/* $set tree over a document (in may be NULL: start from nothing).  holes
 * (NULL: none kept): a missing value leaves a null placeholder in its slot
 * and its node in holes. */
static int
set_doc(const pnode_t *t, const bson_t *in, expr_env_t *env, bson_t *b, set_holes_t *holes, terr_t *err)
{
	bson_iter_t it;
	bool *seen = bson_malloc0(t->n + 1);
	int ret = -1;

	if (in != NULL && bson_iter_init(&it, in)) {
		while (bson_iter_next(&it)) {
			const char *k = bson_iter_key(&it);
			size_t idx = pnode_index_of(t, k, bson_iter_key_len(&it));

			if (idx == t->n || seen[idx]) {
				bson_append_value(b, k, (int)bson_iter_key_len(&it), bson_iter_value(&it));
				continue;
			}
			seen[idx] = true;
			{
				bson_value_t v;
				bool own = false;

				ERR(set_value(t->kids[idx], bson_iter_value(&it), env, &v, &own, holes, err));
				if (v.value_type != BSON_TYPE_EOD)
					bson_append_value(b, k, (int)bson_iter_key_len(&it), &v);
				else if (holes != NULL && t->kids[idx]->leaf)
					hole_put(holes, t->kids[idx], k, (int)bson_iter_key_len(&it), b);
				if (own)
					bson_value_destroy(&v);
			}
		}
	}
	for (size_t i = 0; i < t->n; i++) {
		bson_value_t v;
		bool own = false;

		if (seen[i])
			continue;
		ERR(set_value(t->kids[i], NULL, env, &v, &own, holes, err));
		if (v.value_type != BSON_TYPE_EOD)
			bson_append_value(b, t->names[i], -1, &v);
		else if (holes != NULL && t->kids[i]->leaf)
			hole_put(holes, t->kids[i], t->names[i], -1, b);
		if (own)
			bson_value_destroy(&v);
	}
	ret = 0;
err:
	bson_free(seen);
	return ret;
}

static void
steal_into(bson_t *b, bool is_array, bson_value_t *out)
{
	uint8_t *buf = bson_malloc(b->len);

	memcpy(buf, bson_get_data(b), b->len);
	out->value_type = is_array ? BSON_TYPE_ARRAY : BSON_TYPE_DOCUMENT;
	out->value.v_doc.data = buf;
	out->value.v_doc.data_len = b->len;
	bson_destroy(b);
}

/* The new value of one field under a $set tree node. */
static int
set_value(const pnode_t *t, const bson_value_t *in, expr_env_t *env, bson_value_t *out, bool *own,
          set_holes_t *holes, terr_t *err)
{
	bson_t b, sub;
	bson_iter_t it;

	*own = false;
	if (t->leaf) {
		bson_value_t r;

		RET(expr_eval(t->e, env, &r, err));
		if (r.value_type == BSON_TYPE_EOD) {
			out->value_type = BSON_TYPE_EOD;
			return 0;
		}
		bson_value_copy(&r, out);
		*own = true;
		return 0;
	}
	bson_init(&b);
	if (in != NULL && in->value_type == BSON_TYPE_DOCUMENT) {
		bson_init_static(&sub, in->value.v_doc.data, in->value.v_doc.data_len);
		if (set_doc(t, &sub, env, &b, holes, err) != 0) {
			bson_destroy(&b);
			return -1;
		}
		steal_into(&b, false, out);
	} else if (in != NULL && in->value_type == BSON_TYPE_ARRAY) {
		uint32_t i = 0;

		bson_init_static(&sub, in->value.v_doc.data, in->value.v_doc.data_len);
		bson_iter_init(&it, &sub);
		while (bson_iter_next(&it)) {
			char key[16];
			const char *kp;
			bson_value_t v;
			bool o = false;

			bson_uint32_to_string(i++, &kp, key, sizeof key);
			if (set_value(t, bson_iter_value(&it), env, &v, &o, holes, err) != 0) {
				bson_destroy(&b);
				return -1;
			}
			bson_append_value(&b, kp, -1, &v);
			if (o)
				bson_value_destroy(&v);
		}
		steal_into(&b, true, out);
	} else {
		if (set_doc(t, NULL, env, &b, holes, err) != 0) {
			bson_destroy(&b);
			return -1;
		}
		steal_into(&b, false, out);
	}
	*own = true;
	return 0;
}

/* Exclusion: copy all but the excluded paths. */
static void
excl_doc(const pnode_t *t, const bson_t *in, bson_t *b);

static void
excl_value(const pnode_t *t, const bson_value_t *v, const char *k, int klen, bson_t *b)
{
	bson_t sub, nb;
	bson_iter_t it;

	if (v->value_type == BSON_TYPE_DOCUMENT) {
		bson_init_static(&sub, v->value.v_doc.data, v->value.v_doc.data_len);
		bson_append_document_begin(b, k, klen, &nb);
		excl_doc(t, &sub, &nb);
		bson_append_document_end(b, &nb);
	} else if (v->value_type == BSON_TYPE_ARRAY) {
		uint32_t i = 0;

		bson_init_static(&sub, v->value.v_doc.data, v->value.v_doc.data_len);
		bson_append_array_begin(b, k, klen, &nb);
		bson_iter_init(&it, &sub);
		while (bson_iter_next(&it)) {
			char key[16];
			const char *kp;

			bson_uint32_to_string(i++, &kp, key, sizeof key);
			excl_value(t, bson_iter_value(&it), kp, -1, &nb);
		}
		bson_append_array_end(b, &nb);
	} else {
		bson_append_value(b, k, klen, v);
	}
}

static void
excl_doc(const pnode_t *t, const bson_t *in, bson_t *b)
{
	bson_iter_t it;

	if (!bson_iter_init(&it, in))
		return;
	while (bson_iter_next(&it)) {
		const pnode_t *kid = pnode_find(t, bson_iter_key(&it));

		if (kid == NULL)
			bson_append_value(b, bson_iter_key(&it), (int)bson_iter_key_len(&it),
			                  bson_iter_value(&it));
		else if (!kid->leaf)
			excl_value(kid, bson_iter_value(&it), bson_iter_key(&it),
			           (int)bson_iter_key_len(&it), b);
	}
}

/* Inclusion: keep included paths, then computed fields in spec order. */
static int incl_doc(const pnode_t *t, const bson_t *in, bool top, bool id_excluded,
                    expr_env_t *env, bson_t *b, terr_t *err);

static int
incl_value(const pnode_t *t, const bson_value_t *v, const char *k, int klen, expr_env_t *env,
           bson_t *b, terr_t *err)
{
	bson_t sub, nb;
	bson_iter_t it;

	if (v->value_type == BSON_TYPE_DOCUMENT) {
		bson_init_static(&sub, v->value.v_doc.data, v->value.v_doc.data_len);
		bson_append_document_begin(b, k, klen, &nb);
		if (incl_doc(t, &sub, false, false, env, &nb, err) != 0) {
			bson_append_document_end(b, &nb);
			return -1;
		}
		bson_append_document_end(b, &nb);
	} else if (v->value_type == BSON_TYPE_ARRAY) {
		uint32_t i = 0;

		bson_init_static(&sub, v->value.v_doc.data, v->value.v_doc.data_len);
		bson_append_array_begin(b, k, klen, &nb);
		bson_iter_init(&it, &sub);
		while (bson_iter_next(&it)) {
			char key[16];
			const char *kp;
			const bson_value_t *ev = bson_iter_value(&it);

			if (ev->value_type != BSON_TYPE_DOCUMENT && ev->value_type != BSON_TYPE_ARRAY)
				continue;
			bson_uint32_to_string(i++, &kp, key, sizeof key);
			if (incl_value(t, ev, kp, -1, env, &nb, err) != 0) {
				bson_append_array_end(b, &nb);
				return -1;
			}
		}
		bson_append_array_end(b, &nb);
	}
	return 0;
}

static bool
has_computed(const pnode_t *t)
{
	if (t->leaf)
		return t->e != NULL;
	for (size_t i = 0; i < t->n; i++)
		if (has_computed(t->kids[i]))
			return true;
	return false;
}

static int
incl_doc(const pnode_t *t, const bson_t *in, bool top, bool id_excluded, expr_env_t *env,
         bson_t *b, terr_t *err)
{
	bson_iter_t it;

	if (in != NULL && bson_iter_init(&it, in)) {
		while (bson_iter_next(&it)) {
			const char *k = bson_iter_key(&it);
			const pnode_t *kid = pnode_find(t, k);

			if (top && strcmp(k, "_id") == 0 && kid == NULL) {
				if (!id_excluded)
					bson_append_value(b, k, 3, bson_iter_value(&it));
				continue;
			}
			if (kid == NULL || (kid->leaf && (kid->e != NULL || !kid->include)))
				continue;
			if (kid->leaf) {
				bson_append_value(b, k, (int)bson_iter_key_len(&it), bson_iter_value(&it));
				continue;
			}
			RET(incl_value(kid, bson_iter_value(&it), k, (int)bson_iter_key_len(&it), env, b,
			               err));
		}
	}
	/* computed fields (and sub-trees holding them) appended in spec order */
	for (size_t i = 0; i < t->n; i++) {
		const pnode_t *kid = t->kids[i];

		if (kid->leaf && kid->e != NULL) {
			bson_value_t r;

			RET(expr_eval(kid->e, env, &r, err));
			if (r.value_type != BSON_TYPE_EOD)
				bson_append_value(b, t->names[i], -1, &r);
		} else if (!kid->leaf && has_computed(kid)) {
			bson_iter_t f;

			if (in != NULL && bson_iter_init_find(&f, in, t->names[i]))
				continue; /* handled in the pass above */
			{
				bson_t nb;

				bson_append_document_begin(b, t->names[i], -1, &nb);
				if (incl_doc(kid, NULL, false, false, env, &nb, err) != 0) {
					bson_append_document_end(b, &nb);
					return -1;
				}
				bson_append_document_end(b, &nb);
			}
		}
	}
	return 0;
}

/* ---- slots of excluded fields ----------------------------------------------
 * mongod runs an update pipeline on its Document, which keeps a removed
 * field's slot: a field $unset / an exclusion $project removes and the next
 * $set / $addFields sets again comes back at its old position (excluding a
 * field the document lacks leaves no slot).  Same rule as agg/stage_project.c. */

static bool
slots_meet(const pnode_t *excl, const pnode_t *set)
{
	for (size_t i = 0; i < set->n; i++) {
		const pnode_t *k = pnode_find(excl, set->names[i]);
		if (k == NULL)
			continue;
		if (k->leaf)
			return true;
		if (!set->kids[i]->leaf && slots_meet(k, set->kids[i]))
			return true;
	}
	return false;
}


/* Is leaf k one of the holes a $set left? */
static bool
is_hole(const set_holes_t *h, const pnode_t *k)
{
	for (size_t i = 0; h != NULL && k != NULL && i < h->n; i++)
		if (h->nodes[i] == k)
			return true;
	return false;
}

/* Is k1 (a node of the exclusion, or of the earlier $set when holes) a slot? */
static bool
is_slot(const pnode_t *k1, const set_holes_t *holes)
{
	return k1 != NULL && (holes != NULL ? is_hole(holes, k1) : k1->leaf);
}

/* Does `set` set a field `src` (an earlier $set) computes? */
static bool
holes_meet(const pnode_t *src, const pnode_t *set)
{
	for (size_t i = 0; i < set->n; i++) {
		const pnode_t *k = pnode_find(src, set->names[i]);
		if (k == NULL)
			continue;
		if (k->leaf)
			return true;
		if (!set->kids[i]->leaf && holes_meet(k, set->kids[i]))
			return true;
	}
	return false;
}

static void holes_drop(const bson_t *in, const pnode_t *t, const set_holes_t *h, bson_t *out);

/* it's value under t (a $set sub-tree) without h's placeholders. */
static void
holes_drop_value(bson_t *out, const bson_iter_t *it, const pnode_t *t, const set_holes_t *h)
{
	const bson_value_t *v;
	bson_t sub, child;
	bson_iter_t ai;

	if (!BSON_ITER_HOLDS_DOCUMENT(it) && !BSON_ITER_HOLDS_ARRAY(it)) {
		bson_append_iter(out, NULL, 0, it);
		return;
	}
	v = bson_iter_value((bson_iter_t *)it);
	bson_init_static(&sub, v->value.v_doc.data, v->value.v_doc.data_len);
	if (BSON_ITER_HOLDS_DOCUMENT(it)) {
		bson_append_document_begin(out, bson_iter_key(it), (int)bson_iter_key_len(it), &child);
		holes_drop(&sub, t, h, &child);
		bson_append_document_end(out, &child);
		return;
	}
	bson_append_array_begin(out, bson_iter_key(it), (int)bson_iter_key_len(it), &child);
	bson_iter_init(&ai, &sub);
	while (bson_iter_next(&ai))
		holes_drop_value(&child, &ai, t, h);
	bson_append_array_end(out, &child);
}

/* Copy in to out without the null placeholders of h's holes (t: the $set's
 * node at this level). */
static void
holes_drop(const bson_t *in, const pnode_t *t, const set_holes_t *h, bson_t *out)
{
	bson_iter_t it;

	bson_iter_init(&it, in);
	while (bson_iter_next(&it)) {
		const pnode_t *k = pnode_find(t, bson_iter_key(&it));
		if (k != NULL && k->leaf && BSON_ITER_HOLDS_NULL(&it) && is_hole(h, k))
			continue;
		if (k == NULL || k->leaf)
			bson_append_iter(out, NULL, 0, &it);
		else
			holes_drop_value(out, &it, k, h);
	}
}

/* bson/slots.h's view of the trees: an exclusion's, or an earlier $set's
 * whose holes (ctx, non-NULL) are its slots. */
static const void *
slot_child(const void *node, const char *name, uint32_t len)
{
	const pnode_t *p = node;
	size_t i = pnode_index_of(p, name, len);

	return i < p->n ? p->kids[i] : NULL;
}

static bool
slot_has_kids(const void *node)
{
	return !((const pnode_t *)node)->leaf;
}

static bool
slot_is_slot(const void *ctx, const void *node)
{
	return is_slot(node, ctx);
}

static const bslots_nodes_t slot_nodes = {slot_child, slot_has_kids, slot_is_slot};

/* res = out laid out after ref, the exclusion's input (bslots_reorder):
 * a removed field set again in its old slot.  set: the $set's tree. */
static void
slots_reorder(const bson_t *out, const bson_t *ref, const pnode_t *excl, const pnode_t *set, const set_holes_t *holes,
              bson_t *res)
{
	bslots_reorder(out, ref, excl, set, &slot_nodes, holes, res);
}


int
update_pipe_run(const upipe_t *p, const bson_t *doc, const update_apply_ctx_t *ctx, bson_t *out,
                terr_t *err)
{
	expr_env_t *env = expr_env_new();
	bson_t *cur = bson_copy(doc), *next = NULL;
	/* the inputs of the exclusions before the current stage, whose slots
	 * a $set may fill (a chain of exclusions and $set stages), oldest
	 * first */
	bson_t *slot_ref[8];
	const pnode_t *slot_excl[8];      /* the exclusion's tree, or the $set's */
	set_holes_t slot_holes[8];        /* the $set's holes (nodes NULL: an exclusion) */
	size_t nslots = 0;
	bson_iter_t it;
	int ret = -1;

	if (ctx->now_ms != 0)
		expr_env_set_now(env, ctx->now_ms);
	if (ctx->ts_t != 0 || ctx->ts_i != 0)
		expr_env_set_cluster_time(env, ctx->ts_t, ctx->ts_i);
	if (p->var_ids != NULL) {
		bson_iter_init(&it, p->let);
		for (size_t i = 0; bson_iter_next(&it); i++)
			ERR(expr_env_set_var(env, p->var_ids[i], bson_iter_value(&it), err));
	}
	ret = -1; /* until every stage ran */
	for (size_t i = 0; i < p->n; i++) {
		const pstage_t *ps = &p->st[i];
		/* an exclusion followed by $set stages, one of which may fill its
		 * slots: keep the exclusion's input for them (mongod's Document
		 * keeps the slots through every $set) */
		bool keep_ref = false;
		if (ps->kind == PS_PROJECT_EXCL && nslots < 8) {
			for (size_t j = i + 1; j < p->n && (p->st[j].kind == PS_SET || p->st[j].kind == PS_PROJECT_EXCL) &&
			                       !keep_ref; j++)
				keep_ref = p->st[j].kind == PS_SET && slots_meet(ps->tree, p->st[j].tree);
		}
		/* a $set whose missing values a later $set may set again */
		bool keep_holes = false;
		if (ps->kind == PS_SET && nslots < 8) {
			for (size_t j = i + 1; j < p->n && (p->st[j].kind == PS_SET || p->st[j].kind == PS_PROJECT_EXCL) &&
			                       !keep_holes; j++)
				keep_holes = p->st[j].kind == PS_SET && holes_meet(ps->tree, p->st[j].tree);
		}
		set_holes_t holes = {NULL, 0, 0};

		expr_env_set_root(env, cur);
		next = bson_new();
		switch (ps->kind) {
		case PS_SET:
			if (set_doc(ps->tree, cur, env, next, keep_holes ? &holes : NULL, err) != 0) {
				bson_free(holes.nodes);
				goto err;
			}
			/* each exclusion's (and earlier $set's holes') slots, nearest first */
			for (size_t k = nslots; k-- > 0;) {
				bson_t *fused = bson_new();
				slots_reorder(next, slot_ref[k], slot_excl[k], ps->tree,
				              slot_holes[k].nodes != NULL ? &slot_holes[k] : NULL, fused);
				bson_destroy(next);
				next = fused;
			}
			/* this $set's own holes: kept laid out for a later $set, dropped
			 * from what it hands on */
			if (holes.n > 0) {
				bson_t *handed = bson_new();
				holes_drop(next, ps->tree, &holes, handed);
				slot_ref[nslots] = next;
				slot_excl[nslots] = ps->tree;
				slot_holes[nslots++] = holes;
				holes.nodes = NULL;
				next = handed;
			}
			bson_free(holes.nodes);
			break;
		case PS_PROJECT_EXCL:
			excl_doc(ps->tree, cur, next);
			break;
		case PS_PROJECT_INCL:
			if (incl_doc(ps->tree, cur, true, ps->id_excluded, env, next, err) != 0)
				goto err;
			break;
		case PS_REPLACE: {
			bson_value_t r;
			bson_t rd;

			if (expr_eval(ps->root, env, &r, err) != 0)
				goto err;
			if (r.value_type != BSON_TYPE_DOCUMENT) {
				char *v = r.value_type == BSON_TYPE_EOD ? bson_strdup("MISSING")
				                                        : bv_to_mongo_string(&r);
				char *d = bv_doc_to_mongo_string(cur);

				terr_set(err, 40228,
				         "'%s' must evaluate to an object, but resulting value was: %s. Type of "
				         "resulting value: '%s'. Input document: %s",
				         ps->is_replace_with ? "replacement document" : "newRoot", v,
				         bv_type_name(r.value_type), d);
				bson_free(v);
				bson_free(d);
				goto err;
			}
			bson_init_static(&rd, r.value.v_doc.data, r.value.v_doc.data_len);
			bson_concat(next, &rd);
			break;
		}
		}
		expr_env_reset(env);
		expr_env_set_root(env, NULL);
		/* the slots last while exclusions and $set stages follow */
		if (ps->kind != PS_SET && ps->kind != PS_PROJECT_EXCL) {
			while (nslots > 0) {
				bson_destroy(slot_ref[--nslots]);
				bson_free(slot_holes[nslots].nodes);
			}
		}
		if (keep_ref && nslots < 8) {
			slot_ref[nslots] = cur;
			slot_holes[nslots] = (set_holes_t){NULL, 0, 0};
			slot_excl[nslots++] = ps->tree;
		} else {
			bson_destroy(cur);
		}
		cur = next;
		next = NULL;
		if (cur->len > UPDATE_MAX_BSON_SIZE) {
			terr_set(err, TERR_BSON_OBJECT_TOO_LARGE, "Resulting document after update is larger than %d",
			         UPDATE_MAX_BSON_SIZE);
			goto err;
		}
	}
	bson_copy_to(cur, out);
	ret = 0;
err:
	if (next != NULL)
		bson_destroy(next);
	while (nslots > 0) {
		bson_destroy(slot_ref[--nslots]);
		bson_free(slot_holes[nslots].nodes);
	}
	bson_destroy(cur);
	expr_env_destroy(env);
	return ret;
}
