/*
 * upsert.c -- the document an upsert inserts: the query's equality fields
 * (mongod's pathsupport::extractEqualityMatches + addEqualitiesToDoc),
 * then the update applied as an insert, _id first (generated when absent).
 *
 * Seeded fields are added in path order (mongod keeps them in an ordered
 * map), dotted paths become embedded documents.  Replacement upserts take
 * only _id from the query.
 *
 * Not here: deciding that nothing matched, inserting, reporting upsertedId.
 */
#include "update/update_private.h"

#include <stdlib.h>
#include <string.h>

#include "bson/value.h"
#include "query/match.h"



typedef struct eq {
	const char *path;
	const bson_value_t *v;
	size_t order;
} eq_t;

typedef struct eqs {
	eq_t *e;
	size_t n, cap;
	bool only_id;
	terr_t *err;
	int failed;
} eqs_t;

/* a is a strict path prefix of b */
static bool
strict_prefix(const char *a, const char *b)
{
	size_t la = strlen(a);

	return strncmp(a, b, la) == 0 && b[la] == '.';
}

static bool
collect(const char *path, const bson_value_t *value, void *ctx)
{
	eqs_t *q = ctx;

	if (q->only_id) {
		if (strcmp(path, "_id") != 0 && !strict_prefix("_id", path))
			return true;
		if (strict_prefix("_id", path)) {
			terr_set(q->err, 111 /* NotExactValueField */,
			         "field at '_id' must be exactly specified, field at sub-path '%s'found",
			         path);
			q->failed = 1;
			return false;
		}
	}
	for (size_t i = 0; i < q->n; i++) {
		if (strcmp(q->e[i].path, path) == 0) {
			terr_set(q->err, TERR_NOT_SINGLE_VALUE_FIELD,
			         "cannot infer query fields to set, path '%s' is matched twice", path);
			q->failed = 1;
			return false;
		}
		if (strict_prefix(q->e[i].path, path) || strict_prefix(path, q->e[i].path)) {
			const char *longer = strict_prefix(path, q->e[i].path) ? q->e[i].path : path;
			const char *shorter = longer == path ? q->e[i].path : path;

			terr_set(q->err, TERR_NOT_SINGLE_VALUE_FIELD,
			         "cannot infer query fields to set, both paths '%s' and '%s' are matched",
			         longer, shorter);
			q->failed = 1;
			return false;
		}
	}
	if (q->n == q->cap) {
		q->cap = q->cap ? q->cap * 2 : 8;
		q->e = bson_realloc(q->e, q->cap * sizeof(eq_t));
	}
	q->e[q->n].path = path;
	q->e[q->n].v = value;
	q->e[q->n].order = q->n;
	q->n++;
	return true;
}

static int
eq_cmp(const void *a, const void *b)
{
	return strcmp(((const eq_t *)a)->path, ((const eq_t *)b)->path);
}

/* Append the equalities whose paths start with prefix (at depth) into b,
 * nesting dotted paths.  The array is sorted, so one group is contiguous. */
static void
build_level(bson_t *b, eq_t *e, size_t n, size_t depth_off)
{
	size_t i = 0;

	while (i < n) {
		const char *rest = e[i].path + depth_off;
		const char *dot = strchr(rest, '.');

		if (dot == NULL) {
			bson_append_value(b, rest, -1, e[i].v);
			i++;
			continue;
		}
		{
			size_t clen = (size_t)(dot - rest), j = i;
			bson_t sub;

			while (j < n && strncmp(e[j].path + depth_off, rest, clen) == 0 &&
			       e[j].path[depth_off + clen] == '.')
				j++;
			bson_append_document_begin(b, rest, (int)clen, &sub);
			build_level(&sub, e + i, j - i, depth_off + clen + 1);
			bson_append_document_end(b, &sub);
			i = j;
		}
	}
}

static int
seed(const bson_t *filter, bool only_id, bson_t *out, terr_t *err)
{
	match_options_t mo = {.disallow = MATCH_DISALLOW_EXPR};
	match_t *m = NULL;
	eqs_t q = {0};
	int ret = -1;

	q.only_id = only_id;
	q.err = err;
	if ((ret = match_compile(filter, &mo, &m, err)) != 0) {
		if (err != NULL && err->code == TERR_QUERY_FEATURE_NOT_ALLOWED)
			terr_set(err, TERR_QUERY_FEATURE_NOT_ALLOWED,
			         "$expr is not allowed in the query predicate for an upsert");
		goto err;
	}
	match_equalities(m, collect, &q);
	if (q.failed) {
		ret = -1;
		goto err;
	}
	if (q.n > 1)   /* an empty filter has no equalities (q.e NULL) */
		qsort(q.e, q.n, sizeof(eq_t), eq_cmp);
	bson_init(out);
	build_level(out, q.e, q.n, 0);
	ret = 0;
err:
	bson_free(q.e);
	match_free(m);
	return ret;
}

int
update_build_upsert_seed(const bson_t *filter, bson_t *out, terr_t *err)
{
	bson_t tmp;
	bson_iter_t it;

	RET(seed(filter, false, &tmp, err));
	bson_init(out);
	if (bson_iter_init_find(&it, &tmp, "_id"))
		bson_append_value(out, "_id", 3, bson_iter_value(&it));
	bson_copy_to_excluding_noinit(&tmp, out, "_id", NULL);
	bson_destroy(&tmp);
	return 0;
}

/* _id first, generated when missing, and of a storable type. */
static int
finish(const bson_t *in, bson_t *out, terr_t *err)
{
	bson_iter_t it;

	bson_init(out);
	if (bson_iter_init_find(&it, in, "_id")) {
		bson_type_t t = bson_iter_type(&it);

		if (t == BSON_TYPE_ARRAY || t == BSON_TYPE_REGEX || t == BSON_TYPE_UNDEFINED) {
			bson_destroy(out);
			return terr_set(err, TERR_INVALID_ID_FIELD, "The '_id' value cannot be of type %s",
			                bv_type_name(t));
		}
		bson_append_value(out, "_id", 3, bson_iter_value(&it));
	} else {
		bson_oid_t oid;

		bson_oid_init(&oid, NULL);
		bson_append_oid(out, "_id", 3, &oid);
	}
	bson_copy_to_excluding_noinit(in, out, "_id", NULL);
	if (out->len > UPDATE_MAX_BSON_SIZE) {
		bson_destroy(out);
		return terr_set(err, 17420, "Document to upsert is larger than %d", UPDATE_MAX_BSON_SIZE);
	}
	return 0;
}

int
update_build_upsert_doc(const update_t *u, const bson_t *filter, const update_apply_ctx_t *ctx,
                        bson_t *out, terr_t *err)
{
	update_apply_ctx_t c = UPDATE_APPLY_CTX_INIT;
	bson_t s, r;
	bool modified;
	int ret = -1;

	if (ctx != NULL)
		c = *ctx;
	c.is_insert = true;
	c.matched_pos = -1;
	RET(seed(filter, u->kind == UPDATE_KIND_REPLACEMENT, &s, err));
	if (u->kind == UPDATE_KIND_REPLACEMENT)
		ERR(update_replace_into(&s, u->repl, false, &r, &modified, err));
	else
		ERR(update_apply(u, &s, &c, &r, &modified, err));
	ret = finish(&r, out, err);
	bson_destroy(&r);
err:
	bson_destroy(&s);
	return ret;
}
