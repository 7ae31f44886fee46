/*
 * op_array.c -- the array operators: $push (with $each, $slice, $sort,
 * $position), $addToSet (with $each), $pop, $pull, $pullAll.
 *
 * Parsing follows mongod's push_node.cpp, addtoset_node.cpp, pop_node.cpp,
 * pull_node.cpp and pullall_node.cpp (messages word for word); $pull
 * conditions use the query matcher (query/match.h) on each element.
 *
 * Not here: positional paths and array filters (update.c), field operators.
 */
#include "update/update_private.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bson/path.h"
#include "bson/value.h"
#include "query/match.h"

/* ------------------------------------------------------------------ */
/* helpers                                                             */

typedef struct vec {
	bson_value_t *v;   /* borrowed values */
	size_t n, cap;
} vec_t;

static void
vec_push(vec_t *a, const bson_value_t *v)
{
	if (a->n == a->cap) {
		a->cap = a->cap ? a->cap * 2 : 8;
		a->v = bson_realloc(a->v, a->cap * sizeof(bson_value_t));
	}
	a->v[a->n++] = *v;
}

/* Elements of an array value (borrowed). */
static void
vec_from_array(vec_t *a, const bson_value_t *arr)
{
	bson_t d;
	bson_iter_t it;

	bson_init_static(&d, arr->value.v_doc.data, arr->value.v_doc.data_len);
	if (!bson_iter_init(&it, &d))
		return;
	while (bson_iter_next(&it))
		vec_push(a, bson_iter_value(&it));
}

static void
res_array(ures_t *out, const bson_value_t *v, size_t n)
{
	bson_t b;

	bson_init(&b);
	for (size_t i = 0; i < n; i++) {
		char key[16];
		const char *kp;

		bson_uint32_to_string((uint32_t)i, &kp, key, sizeof key);
		bson_append_value(&b, kp, -1, &v[i]);
	}
	update_res_set_steal_doc(out, &b, true);
}

/* mongod's parseIntegerElementToLong. */
static bool
integer_arg(const bson_value_t *v, int64_t *out)
{
	switch (v->value_type) {
	case BSON_TYPE_INT32:
		*out = v->value.v_int32;
		return true;
	case BSON_TYPE_INT64:
		*out = v->value.v_int64;
		return true;
	case BSON_TYPE_DOUBLE:
	case BSON_TYPE_DECIMAL128:
		return bv_as_int64_exact(v, out);
	default:
		return false;
	}
}

/* ------------------------------------------------------------------ */
/* $push                                                               */

typedef struct push {
	vec_t vals;
	int64_t slice;          /* INT64_MAX: none */
	int64_t position;       /* INT64_MAX: append */
	int sort;               /* 0 none, 1 whole value, 2 pattern */
	int whole_dir;
	bson_t *pattern;        /* sort pattern (owned) */
	const coll_t *coll;     /* the update's collation, for $sort */
} push_t;

static void
push_free(void *p)
{
	push_t *ps = p;

	bson_free(ps->vals.v);
	bson_destroy(ps->pattern);
	bson_free(ps);
}

static int
push_parse(unode_t *leaf, const bson_value_t *arg, terr_t *err)
{
	push_t *ps = bson_malloc0(sizeof *ps);

	ps->coll = leaf->coll;
	bson_t d;
	bson_iter_t it;
	bool has_each = false;
	const bson_value_t *each = NULL, *slice = NULL, *sort = NULL, *pos = NULL;
	bson_value_t vs[4];

	ps->slice = INT64_MAX;
	ps->position = INT64_MAX;
	ps->pattern = bson_new();
	leaf->priv = ps;
	if (arg->value_type == BSON_TYPE_DOCUMENT) {
		bson_init_static(&d, arg->value.v_doc.data, arg->value.v_doc.data_len);
		has_each = bson_iter_init_find(&it, &d, "$each");
	}
	if (!has_each) {
		vec_push(&ps->vals, arg);
		return 0;
	}
	bson_iter_init(&it, &d);
	while (bson_iter_next(&it)) {
		const char *k = bson_iter_key(&it);
		const bson_value_t **slot;
		int si;

		if (strcmp(k, "$each") == 0)
			slot = &each, si = 0;
		else if (strcmp(k, "$slice") == 0)
			slot = &slice, si = 1;
		else if (strcmp(k, "$sort") == 0)
			slot = &sort, si = 2;
		else if (strcmp(k, "$position") == 0)
			slot = &pos, si = 3;
		else
			return terr_set(err, TERR_BAD_VALUE, "Unrecognized clause in $push: %s", k);
		if (*slot != NULL)
			return terr_set(err, TERR_BAD_VALUE, "Only one %s is supported.", k);
		vs[si] = *bson_iter_value(&it);
		*slot = &vs[si];
	}
	if (each->value_type != BSON_TYPE_ARRAY)
		return terr_set(err, TERR_BAD_VALUE,
		                "The argument to $each in $push must be an array but it was of type: %s",
		                bv_type_name(each->value_type));
	vec_from_array(&ps->vals, each);
	if (slice != NULL && !integer_arg(slice, &ps->slice))
		return terr_set(err, TERR_BAD_VALUE,
		                "The value for $slice must be an integer value but was given type: %s",
		                bv_type_name(slice->value_type));
	if (sort != NULL) {
		if (sort->value_type == BSON_TYPE_DOCUMENT) {
			bson_t sd;
			bson_iter_t si;

			bson_init_static(&sd, sort->value.v_doc.data, sort->value.v_doc.data_len);
			if (bson_empty(&sd))
				return terr_set(err, TERR_BAD_VALUE,
				                "The $sort pattern is empty when it should be a set of fields.");
			bson_iter_init(&si, &sd);
			while (bson_iter_next(&si)) {
				const bson_value_t *dv = bson_iter_value(&si);
				double dir = bv_is_number(dv) ? bv_as_double(dv) : 0;
				const char *f = bson_iter_key(&si);
				size_t fl = strlen(f);

				if (dir != 1 && dir != -1)
					return terr_set(err, TERR_BAD_VALUE,
					                "The $sort element value must be either 1 or -1");
				if (fl == 0)
					return terr_set(err, TERR_BAD_VALUE, "The $sort field cannot be empty");
				if (f[0] == '.' || f[fl - 1] == '.' || strstr(f, "..") != NULL)
					return terr_set(err, TERR_BAD_VALUE,
					                "The $sort field is a dotted field but has an empty part: %s",
					                f);
			}
			bson_concat(ps->pattern, &sd);
			ps->sort = 2;
		} else if (bv_is_number(sort)) {
			double dir = bv_as_double(sort);

			if (dir != 1 && dir != -1)
				return terr_set(err, TERR_BAD_VALUE,
				                "The $sort element value must be either 1 or -1");
			ps->sort = 1;
			ps->whole_dir = dir < 0 ? -1 : 1;
		} else {
			return terr_set(err, TERR_BAD_VALUE,
			                "The $sort is invalid: use 1/-1 to sort the whole element, or "
			                "{field:1/-1} to sort embedded fields");
		}
	}
	if (pos != NULL && !integer_arg(pos, &ps->position))
		return terr_set(err, TERR_BAD_VALUE,
		                "The value for $position must be an integer value, not of type: %s",
		                bv_type_name(pos->value_type));
	return 0;
}

static const bson_value_t null_value = {.value_type = BSON_TYPE_NULL};

/* Sort key field of an element: the value at the pattern's path in a
 * document element, null otherwise or when missing. */
static void
sort_key(const bson_value_t *elem, const char *path, bson_value_t *out)
{
	if (elem->value_type != BSON_TYPE_DOCUMENT || !bpath_get_value(elem, path, out) ||
	    out->value_type == BSON_TYPE_EOD)
		*out = null_value;
}

static int
push_cmp(const push_t *ps, const bson_value_t *a, const bson_value_t *b)
{
	bson_iter_t it;

	if (ps->sort == 1)
		return ps->whole_dir * bv_compare_coll(a, b, ps->coll);
	bson_iter_init(&it, ps->pattern);
	while (bson_iter_next(&it)) {
		bson_value_t ka, kb;
		int c, dir = bv_as_double(bson_iter_value(&it)) < 0 ? -1 : 1;

		sort_key(a, bson_iter_key(&it), &ka);
		sort_key(b, bson_iter_key(&it), &kb);
		c = bv_compare_coll(&ka, &kb, ps->coll);
		if (c != 0)
			return dir * c;
	}
	return 0;
}

/* Stable merge sort. */
static void
msort(const push_t *ps, bson_value_t *v, bson_value_t *tmp, size_t n)
{
	size_t mid, i, j, k;

	if (n < 2)
		return;
	mid = n / 2;
	msort(ps, v, tmp, mid);
	msort(ps, v + mid, tmp, n - mid);
	i = 0;
	j = mid;
	k = 0;
	while (i < mid && j < n)
		tmp[k++] = push_cmp(ps, &v[j], &v[i]) < 0 ? v[j++] : v[i++];
	while (i < mid)
		tmp[k++] = v[i++];
	while (j < n)
		tmp[k++] = v[j++];
	memcpy(v, tmp, n * sizeof *v);
}

static int
push_apply(const unode_t *leaf, const bson_value_t *cur, uapply_t *st, ures_t *out, terr_t *err)
{
	const push_t *ps = leaf->priv;
	vec_t a = {0};
	bson_value_t *res;
	size_t n, at, start = 0, cnt;
	int64_t size;

	if (cur != NULL && cur->value_type != BSON_TYPE_ARRAY) {
		char *p = update_path_str(st, NULL), *id = update_id_str(st, "no id");

		terr_set(err, TERR_BAD_VALUE,
		         "The field '%s' must be an array but is of type %s in document {%s}", p,
		         bv_type_name(cur->value_type), id);
		bson_free(p);
		bson_free(id);
		return -1;
	}
	if (cur != NULL)
		vec_from_array(&a, cur);
	size = (int64_t)a.n;
	if (size == 0 || ps->position > size)
		at = a.n;
	else if (ps->position >= 0)
		at = (size_t)ps->position;
	else if (ps->position > -size)   /* (not -position: INT64_MIN) */
		at = (size_t)(size + ps->position);
	else
		at = 0;
	n = a.n + ps->vals.n;
	res = bson_malloc((n ? n : 1) * sizeof *res);
	if (at > 0)
		memcpy(res, a.v, at * sizeof *res);
	if (ps->vals.n > 0)
		memcpy(res + at, ps->vals.v, ps->vals.n * sizeof *res);
	if (a.n > at)
		memcpy(res + at + ps->vals.n, a.v + at, (a.n - at) * sizeof *res);
	if (ps->sort) {
		bson_value_t *tmp = bson_malloc((n ? n : 1) * sizeof *tmp);

		msort(ps, res, tmp, n);
		bson_free(tmp);
	}
	cnt = n;
	if (ps->slice != INT64_MAX) {
		uint64_t lim = ps->slice < 0 ? (uint64_t)(-(ps->slice + 1)) + 1 : (uint64_t)ps->slice;

		if (cnt > lim) {
			if (ps->slice < 0)
				start = cnt - (size_t)lim;
			cnt = (size_t)lim;
		}
	}
	res_array(out, res + start, cnt);
	if (ps->sort && cur != NULL) {
		/* mongod counts a sorted push as a modification even when the
		 * array comes out the same */
		st->force_modified = true;
	} else if (cur != NULL && update_value_identical(&out->val, cur)) {
		bson_value_destroy(&out->val);
		out->kind = UR_KEEP;
	}
	bson_free(res);
	bson_free(a.v);
	return 0;
}

/* ------------------------------------------------------------------ */
/* $addToSet                                                           */

static void
vec_free(void *p)
{
	vec_t *v = p;

	bson_free(v->v);
	bson_free(v);
}

static bool
vec_contains(const vec_t *a, const bson_value_t *v, const coll_t *coll)
{
	for (size_t i = 0; i < a->n; i++)
		if (bv_compare_coll(&a->v[i], v, coll) == 0)
			return true;
	return false;
}

static int
add_to_set_parse(unode_t *leaf, const bson_value_t *arg, terr_t *err)
{
	vec_t *vals = bson_malloc0(sizeof *vals), all = {0};

	leaf->priv = vals;
	if (arg->value_type == BSON_TYPE_DOCUMENT) {
		bson_t d;
		bson_iter_t it;

		bson_init_static(&d, arg->value.v_doc.data, arg->value.v_doc.data_len);
		if (bson_iter_init(&it, &d) && bson_iter_next(&it) &&
		    strcmp(bson_iter_key(&it), "$each") == 0) {
			if (!BSON_ITER_HOLDS_ARRAY(&it))
				return terr_set(err, TERR_TYPE_MISMATCH,
				                "The argument to $each in $addToSet must be an array but it was "
				                "of type %s", bv_type_name(bson_iter_type(&it)));
			if (bson_count_keys(&d) > 1) {
				char *s = bv_doc_to_mongo_string(&d);

				terr_set(err, TERR_BAD_VALUE, "Found unexpected fields after $each in $addToSet: %s",
				         s);
				bson_free(s);
				return -1;
			}
			vec_from_array(&all, bson_iter_value(&it));
			for (size_t i = 0; i < all.n; i++)
				if (!vec_contains(vals, &all.v[i], leaf->coll))
					vec_push(vals, &all.v[i]);
			bson_free(all.v);
			return 0;
		}
	}
	vec_push(vals, arg);
	return 0;
}

static int
add_to_set_apply(const unode_t *leaf, const bson_value_t *cur, uapply_t *st, ures_t *out,
                 terr_t *err)
{
	const vec_t *vals = leaf->priv;
	vec_t a = {0};
	size_t before;

	if (cur != NULL && cur->value_type != BSON_TYPE_ARRAY)
		return terr_set(err, TERR_BAD_VALUE,
		                "Cannot apply $addToSet to non-array field. Field named '%s' has non-array "
		                "type %s", st->ncomp ? st->comp[st->ncomp - 1] : "",
		                bv_type_name(cur->value_type));
	if (cur != NULL)
		vec_from_array(&a, cur);
	before = a.n;
	for (size_t i = 0; i < vals->n; i++) {
		bool present = false;

		for (size_t k = 0; k < before && !present; k++)
			present = bv_compare_coll(&a.v[k], &vals->v[i], leaf->coll) == 0;
		if (!present)
			vec_push(&a, &vals->v[i]);
	}
	if (cur == NULL || a.n != before)
		res_array(out, a.v, a.n);
	bson_free(a.v);
	return 0;
}

/* ------------------------------------------------------------------ */
/* $pop                                                                */

static int
pop_parse(unode_t *leaf, const bson_value_t *arg, terr_t *err)
{
	int64_t v;
	char *s;

	if (!bv_is_number(arg)) {
		s = bv_to_mongo_string(arg);
		terr_set(err, TERR_FAILED_TO_PARSE, "Expected a number in: %s: %s", leaf->path, s);
		bson_free(s);
		return -1;
	}
	if (!integer_arg(arg, &v)) {
		s = bv_to_mongo_string(arg);
		terr_set(err, TERR_FAILED_TO_PARSE, "Expected an integer: %s: %s", leaf->path, s);
		bson_free(s);
		return -1;
	}
	if (v != 1 && v != -1)
		return terr_set(err, TERR_FAILED_TO_PARSE, "$pop expects 1 or -1, found: %lld",
		                (long long)v);
	leaf->priv = v == -1 ? (void *)1 : NULL;
	return 0;
}

static int
pop_apply(const unode_t *leaf, const bson_value_t *cur, uapply_t *st, ures_t *out, terr_t *err)
{
	vec_t a = {0};

	if (cur == NULL)
		return 0;
	if (cur->value_type != BSON_TYPE_ARRAY) {
		char *p = update_path_str(st, NULL);

		terr_set(err, TERR_TYPE_MISMATCH, "Path '%s' contains an element of non-array type '%s'",
		         p, bv_type_name(cur->value_type));
		bson_free(p);
		return -1;
	}
	vec_from_array(&a, cur);
	if (a.n > 0)
		res_array(out, leaf->priv ? a.v + 1 : a.v, a.n - 1);
	bson_free(a.v);
	return 0;
}

/* ------------------------------------------------------------------ */
/* $pull, $pullAll                                                     */

typedef struct pull {
	int kind;               /* 0 equality, 1 wrapped condition, 2 object query */
	match_t *m;
} pull_t;

static void
pull_free(void *p)
{
	pull_t *pl = p;

	match_free(pl->m);
	bson_free(pl);
}

static const char *const path_keywords[] = {
	"$eq", "$ne", "$gt", "$gte", "$lt", "$lte", "$in", "$nin", "$exists", "$type", "$mod",
	"$regex", "$options", "$size", "$all", "$elemMatch", "$not", "$bitsAllSet",
	"$bitsAllClear", "$bitsAnySet", "$bitsAnyClear", "$geoWithin", "$geoIntersects", "$near",
	"$nearSphere", "$within", "$geoNear", "$maxDistance", "$minDistance", "$box", "$center",
	"$centerSphere", "$polygon", "$geometry", NULL,
};

static bool
is_path_keyword(const char *k)
{
	for (size_t i = 0; path_keywords[i]; i++)
		if (strcmp(path_keywords[i], k) == 0)
			return true;
	return false;
}

static int
pull_parse(unode_t *leaf, const bson_value_t *arg, terr_t *err)
{
	pull_t *pl = bson_malloc0(sizeof *pl);
	bson_t q;

	leaf->priv = pl;
	if (arg->value_type == BSON_TYPE_DOCUMENT) {
		bson_t d;
		bson_iter_t it;
		bool keyword = false;

		bson_init_static(&d, arg->value.v_doc.data, arg->value.v_doc.data_len);
		if (bson_iter_init(&it, &d) && bson_iter_next(&it))
			keyword = is_path_keyword(bson_iter_key(&it));
		if (!keyword) {
			match_options_t mo = {0};

			mo.coll = leaf->coll;
			pl->kind = 2;
			return match_compile(&d, &mo, &pl->m, err);
		}
	}
	if (arg->value_type == BSON_TYPE_DOCUMENT || arg->value_type == BSON_TYPE_REGEX) {
		int r;

		match_options_t mo = {0};

		mo.coll = leaf->coll;
		pl->kind = 1;
		bson_init(&q);
		bson_append_value(&q, "x", 1, arg);
		r = match_compile(&q, &mo, &pl->m, err);
		bson_destroy(&q);
		return r;
	}
	pl->kind = 0;
	return 0;
}

static int
pull_matches(const unode_t *leaf, const bson_value_t *elem, bool *hit, terr_t *err)
{
	const pull_t *pl = leaf->priv;

	switch (pl->kind) {
	case 0:
		*hit = bv_compare_coll(elem, &leaf->arg, leaf->coll) == 0;
		return 0;
	case 1:
		return update_match_value(pl->m, "x", elem, hit, err);
	default: {
		bson_t d;
		int r;

		*hit = false;
		if (elem->value_type != BSON_TYPE_DOCUMENT)
			return 0;
		bson_init_static(&d, elem->value.v_doc.data, elem->value.v_doc.data_len);
		r = match_exec(pl->m, &d, NULL, err);
		if (r < 0)
			return -1;
		*hit = r == 1;
		return 0;
	}
	}
}

static int
pull_all_parse(unode_t *leaf, const bson_value_t *arg, terr_t *err)
{
	if (arg->value_type != BSON_TYPE_ARRAY)
		return terr_set(err, TERR_BAD_VALUE,
		                "$pullAll requires an array argument but was given a %s",
		                bv_type_name(arg->value_type));
	return 0;
}

static int
cull_apply(const unode_t *leaf, const bson_value_t *cur, uapply_t *st, ures_t *out, terr_t *err)
{
	bool all = strcmp(leaf->op->name, "$pullAll") == 0;
	vec_t a = {0}, keep = {0}, vals = {0};
	int ret = -1;

	if (cur == NULL)
		return 0;
	if (cur->value_type != BSON_TYPE_ARRAY)
		return terr_set(err, TERR_BAD_VALUE, "Cannot apply $pull to a non-array value");
	vec_from_array(&a, cur);
	if (all)
		vec_from_array(&vals, &leaf->arg);
	for (size_t i = 0; i < a.n; i++) {
		bool hit = false;

		if (all)
			hit = vec_contains(&vals, &a.v[i], leaf->coll);
		else if (pull_matches(leaf, &a.v[i], &hit, err) != 0)
			goto err;
		if (!hit)
			vec_push(&keep, &a.v[i]);
	}
	if (keep.n != a.n)
		res_array(out, keep.v, keep.n);
	ret = 0;
err:
	bson_free(a.v);
	bson_free(keep.v);
	bson_free(vals.v);
	return ret;
}

const uop_t update_ops_array[] = {
	{"$push", push_parse, push_apply, push_free},
	{"$addToSet", add_to_set_parse, add_to_set_apply, vec_free},
	{"$pop", pop_parse, pop_apply, NULL},
	{"$pull", pull_parse, cull_apply, pull_free},
	{"$pullAll", pull_all_parse, cull_apply, NULL},
	{NULL, NULL, NULL, NULL},
};
