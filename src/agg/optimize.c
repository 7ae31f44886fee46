/*
 * optimize.c -- mongod's pipeline rewrites that change what explain shows
 * (and what the find layer can answer), done on the pipeline's BSON before
 * it is parsed the second time (pipeline.c parses the pipeline as written
 * first, so errors are the ones mongod reports for it):
 *
 *   - $skip + $skip -> one $skip of the sum (unless it would overflow);
 *     $limit + $limit -> the smaller; $match + $match -> {$and: [a, b]};
 *   - $sort + $match -> $match + $sort;
 *   - $match after $project / $addFields / $set / $unset: the parts of the
 *     $match (its top-level conjuncts) that only read fields the stage
 *     leaves unchanged move before it (mongod's DocumentSourceMatch
 *     splitSourceBy); a field the stage sets to "$other" (a rename, both
 *     plain top-level names) is matched as `other` before it.
 *
 * What the rest of the pipeline sees is the same documents in the same
 * order: a conjunct moves only when the stage it passes neither changes nor
 * removes any path it reads.  Not here: $match across $lookup / $unwind /
 * $group, and $limit pushed into $sort (the find layer's top-k does it);
 * $sort + $group with $first as a DISTINCT_SCAN is pipeline.c's (its source).
 */
#include "agg/agg_private.h"

#include <string.h>

#include "bson/value.h"
#include "common/checked.h"

#define OPT_MAX_STAGES 1000
#define OPT_MAX_PASSES 50

/* ---- the stage list ----------------------------------------------------- */

typedef struct ostage {
	char name[32];
	bson_t *spec;       /* {name: value} owned */
} ostage_t;

typedef struct olist {
	ostage_t *s;
	int n;
} olist_t;

static const bson_value_t *
stage_value(const ostage_t *st, bson_iter_t *it)
{
	if (!bson_iter_init(it, st->spec) || !bson_iter_next(it))
		return NULL;
	return bson_iter_value(it);
}

static void
olist_free(olist_t *l)
{
	for (int i = 0; i < l->n; i++)
		bson_destroy(l->s[i].spec);
	bson_free(l->s);
	l->s = NULL;
	l->n = 0;
}

static void
olist_remove(olist_t *l, int i)
{
	bson_destroy(l->s[i].spec);
	memmove(&l->s[i], &l->s[i + 1], (size_t)(l->n - i - 1) * sizeof(ostage_t));
	l->n--;
}

/* Insert a stage {name: doc} at i (doc copied). */
static void
olist_insert_doc(olist_t *l, int i, const char *name, const bson_t *doc)
{
	l->s = bson_realloc(l->s, (size_t)(l->n + 1) * sizeof(ostage_t));
	memmove(&l->s[i + 1], &l->s[i], (size_t)(l->n - i) * sizeof(ostage_t));
	bson_strncpy(l->s[i].name, name, sizeof l->s[i].name);
	l->s[i].spec = bson_new();
	BSON_APPEND_DOCUMENT(l->s[i].spec, name, doc);
	l->n++;
}

static void
olist_set_value(ostage_t *st, const bson_value_t *v)
{
	bson_t *n = bson_new();

	BSON_APPEND_VALUE(n, st->name, v);
	bson_destroy(st->spec);
	st->spec = n;
}

/* ---- $skip / $limit ----------------------------------------------------- */

/* The argument as $skip / $limit accept it (a non-negative integer), or
 * false (the stage is then left as it is). */
static bool
count_arg(const bson_value_t *v, int64_t *n)
{
	if (!bv_is_number(v))
		return false;
	if (v->value_type == BSON_TYPE_DOUBLE) {
		double d = v->value.v_double;

		if (d != d || d >= 9223372036854775808.0 || d < 0 || d != (double)(int64_t)d)
			return false;
		*n = (int64_t)d;
		return true;
	}
	return bv_as_int64_exact(v, n) && *n >= 0;
}

static bool
coalesce_counts(olist_t *l, int i)
{
	bson_iter_t a, b;
	const bson_value_t *va, *vb;
	int64_t x, y, r;
	bson_value_t out = {.value_type = BSON_TYPE_INT64};

	if (i + 1 >= l->n || strcmp(l->s[i].name, l->s[i + 1].name) != 0)
		return false;
	if (strcmp(l->s[i].name, "$skip") != 0 && strcmp(l->s[i].name, "$limit") != 0)
		return false;
	va = stage_value(&l->s[i], &a);
	vb = stage_value(&l->s[i + 1], &b);
	if (va == NULL || vb == NULL || !count_arg(va, &x) || !count_arg(vb, &y))
		return false;
	if (strcmp(l->s[i].name, "$limit") == 0) {
		if (x == 0 || y == 0)
			return false;      /* 15958 stays the parser's to report */
		r = x < y ? x : y;
	} else if (tm_i64_add(x, y, &r)) {
		return false;
	}
	out.value.v_int64 = r;
	olist_set_value(&l->s[i], &out);
	olist_remove(l, i + 1);
	return true;
}

/* ---- $match + $match, $sort + $match ------------------------------------ */

static bool
match_doc(const ostage_t *st, bson_t *doc)
{
	bson_iter_t it;
	const bson_value_t *v;

	if (strcmp(st->name, "$match") != 0 || (v = stage_value(st, &it)) == NULL ||
	    v->value_type != BSON_TYPE_DOCUMENT)
		return false;
	return agg_value_doc(v, doc);
}

static bool
coalesce_matches(olist_t *l, int i)
{
	bson_t a, b, both = BSON_INITIALIZER, arr;

	if (i + 1 >= l->n || !match_doc(&l->s[i], &a) || !match_doc(&l->s[i + 1], &b))
		return false;
	BSON_APPEND_ARRAY_BEGIN(&both, "$and", &arr);
	BSON_APPEND_DOCUMENT(&arr, "0", &a);
	BSON_APPEND_DOCUMENT(&arr, "1", &b);
	bson_append_array_end(&both, &arr);
	olist_remove(l, i + 1);
	bson_destroy(l->s[i].spec);
	l->s[i].spec = bson_new();
	BSON_APPEND_DOCUMENT(l->s[i].spec, "$match", &both);
	bson_destroy(&both);
	return true;
}

static bool
swap_sort_match(olist_t *l, int i)
{
	bson_t m;
	ostage_t t;

	if (i + 1 >= l->n || strcmp(l->s[i].name, "$sort") != 0 || !match_doc(&l->s[i + 1], &m))
		return false;
	t = l->s[i];
	l->s[i] = l->s[i + 1];
	l->s[i + 1] = t;
	return true;
}

/* ---- what a stage changes ----------------------------------------------- */

#define OPT_MAX_FIELDS 64

/* The fields a $project / $addFields / $set / $unset leaves or changes:
 * kind KEEP (inclusion: only `keep` paths, and _id unless dropped, pass
 * unchanged), DROP (exclusion / $unset: `paths` are removed), SET
 * ($addFields: `paths` are written).  renames: new top-level name ->
 * old top-level name, for fields set to "$old". */
typedef enum { EFF_KEEP, EFF_DROP, EFF_SET } eff_kind_t;

typedef struct effect {
	eff_kind_t kind;
	const char *paths[OPT_MAX_FIELDS];
	int npaths;
	const char *ren_new[OPT_MAX_FIELDS], *ren_old[OPT_MAX_FIELDS];
	int nren;
	bool id_kept;        /* inclusion: _id passes */
} effect_t;

static bool
plain_name(const char *s)
{
	if (s[0] == '\0' || s[0] == '$' || strchr(s, '.') != NULL)
		return false;
	for (const char *p = s; *p; p++)
		if (*p < '0' || *p > '9')
			return true;
	return false;        /* all digits: an array index to a match path */
}

/* "$name" with a plain top-level name: *old = name. */
static bool
rename_value(const bson_iter_t *it, const char **old)
{
	const char *s;

	if (!BSON_ITER_HOLDS_UTF8(it))
		return false;
	s = bson_iter_utf8(it, NULL);
	if (s[0] != '$' || s[1] == '$' || !plain_name(s + 1))
		return false;
	*old = s + 1;
	return true;
}

static bool
effect_of(const ostage_t *st, effect_t *e)
{
	bson_iter_t it, f;
	const bson_value_t *v;
	bool any_incl = false, any_excl = false;

	memset(e, 0, sizeof *e);
	if ((v = stage_value(st, &it)) == NULL)
		return false;
	if (strcmp(st->name, "$unset") == 0) {
		e->kind = EFF_DROP;
		if (v->value_type == BSON_TYPE_UTF8) {
			e->paths[e->npaths++] = v->value.v_utf8.str;
			return true;
		}
		if (v->value_type != BSON_TYPE_ARRAY || !bson_iter_recurse(&it, &f))
			return false;
		while (bson_iter_next(&f)) {
			if (!BSON_ITER_HOLDS_UTF8(&f) || e->npaths == OPT_MAX_FIELDS)
				return false;
			e->paths[e->npaths++] = bson_iter_utf8(&f, NULL);
		}
		return true;
	}
	if (v->value_type != BSON_TYPE_DOCUMENT || !bson_iter_recurse(&it, &f))
		return false;
	if (strcmp(st->name, "$addFields") == 0 || strcmp(st->name, "$set") == 0) {
		e->kind = EFF_SET;
		while (bson_iter_next(&f)) {
			const char *k = bson_iter_key(&f), *old;

			if (e->npaths == OPT_MAX_FIELDS)
				return false;
			if (plain_name(k) && rename_value(&f, &old) && e->nren < OPT_MAX_FIELDS) {
				e->ren_new[e->nren] = k;
				e->ren_old[e->nren++] = old;
			}
			e->paths[e->npaths++] = k;
		}
		return true;
	}
	if (strcmp(st->name, "$project") != 0)
		return false;
	/* inclusion (1/true, computed fields) or exclusion (0/false) */
	e->id_kept = true;
	while (bson_iter_next(&f)) {
		const char *k = bson_iter_key(&f), *old;

		if (e->npaths == OPT_MAX_FIELDS)
			return false;
		if (BSON_ITER_HOLDS_DOCUMENT(&f) || BSON_ITER_HOLDS_UTF8(&f) || BSON_ITER_HOLDS_ARRAY(&f)) {
			/* a computed field: modified (or a rename) */
			if (strcmp(k, "_id") == 0)
				e->id_kept = false;
			any_incl = true;
			if (plain_name(k) && rename_value(&f, &old) && e->nren < OPT_MAX_FIELDS) {
				e->ren_new[e->nren] = k;
				e->ren_old[e->nren++] = old;
			}
			continue;
		}
		if (!BSON_ITER_HOLDS_NUMBER(&f) && !BSON_ITER_HOLDS_BOOL(&f))
			return false;
		if (strcmp(k, "_id") == 0) {
			e->id_kept = bson_iter_as_bool(&f);
			if (!e->id_kept)
				e->paths[e->npaths++] = k;    /* dropped, for an exclusion */
			continue;
		}
		if (bson_iter_as_bool(&f)) {
			any_incl = true;
			e->paths[e->npaths++] = k;
		} else {
			any_excl = true;
			e->paths[e->npaths++] = k;
		}
	}
	if (any_incl && any_excl)
		return false;
	e->kind = any_incl ? EFF_KEEP : EFF_DROP;
	if (e->kind == EFF_KEEP) {
		/* paths[] must hold only the kept ones: drop an "_id" put there
		 * by _id: 0 */
		int j = 0;

		for (int i = 0; i < e->npaths; i++)
			if (strcmp(e->paths[i], "_id") != 0)
				e->paths[j++] = e->paths[i];
		e->npaths = j;
		if (e->id_kept)
			e->paths[e->npaths++] = "_id";
	}
	return true;
}

/* a is b or a prefix of it by components ("a" of "a.b", not of "ab") */
static bool
path_prefix(const char *a, const char *b)
{
	size_t la = strlen(a);

	return strncmp(a, b, la) == 0 && (b[la] == '\0' || b[la] == '.');
}

/* Is path unchanged by the stage (and, when it reads a renamed field, its
 * name before the stage into out, else path itself)? */
static bool
path_passes(const effect_t *e, const char *path, char *out, size_t outlen)
{
	for (int i = 0; i < e->nren; i++)
		if (path_prefix(e->ren_new[i], path)) {
			size_t ln = strlen(e->ren_new[i]);
			size_t lo = strlen(e->ren_old[i]);
			size_t lt = strlen(path + ln);

			if (lo + lt + 1 > outlen)
				return false;
			memcpy(out, e->ren_old[i], lo);
			memcpy(out + lo, path + ln, lt + 1);
			return true;
		}
	if (strlen(path) + 1 > outlen)
		return false;
	strcpy(out, path);
	switch (e->kind) {
	case EFF_KEEP:
		for (int i = 0; i < e->npaths; i++)
			if (path_prefix(e->paths[i], path))
				return true;
		return false;
	case EFF_DROP:
	case EFF_SET:
		for (int i = 0; i < e->npaths; i++)
			if (path_prefix(e->paths[i], path) || path_prefix(path, e->paths[i]))
				return false;
		return true;
	}
	return false;
}

/* ---- a conjunct's paths ------------------------------------------------- */

/* Does the match expression d read only paths the stage leaves unchanged,
 * and with no renamed one (renames are applied to top-level conjuncts
 * only)?  Operators that read the whole document ($expr, $where, $text,
 * $jsonSchema, geo near) do not move. */
static bool
expr_passes(const effect_t *e, const bson_t *d, int depth)
{
	bson_iter_t it, a;

	if (depth > 50 || !bson_iter_init(&it, d))
		return false;
	while (bson_iter_next(&it)) {
		const char *k = bson_iter_key(&it);
		char tmp[512];

		if (k[0] == '$') {
			if (strcmp(k, "$and") != 0 && strcmp(k, "$or") != 0 && strcmp(k, "$nor") != 0) {
				if (strcmp(k, "$comment") == 0)
					continue;
				return false;
			}
			if (!BSON_ITER_HOLDS_ARRAY(&it) || !bson_iter_recurse(&it, &a))
				return false;
			while (bson_iter_next(&a)) {
				bson_t sub;
				const uint8_t *data;
				uint32_t len;

				if (!BSON_ITER_HOLDS_DOCUMENT(&a))
					return false;
				bson_iter_document(&a, &len, &data);
				bson_init_static(&sub, data, len);
				if (!expr_passes(e, &sub, depth + 1))
					return false;
			}
			continue;
		}
		if (!path_passes(e, k, tmp, sizeof tmp) || strcmp(tmp, k) != 0)
			return false;
	}
	return true;
}

/*
 * Split the $match at i + 1 across the stage at i: the conjuncts that pass
 * go into a new $match before it.  True when anything moved.
 */
static bool
split_match(olist_t *l, int i)
{
	effect_t e;
	bson_t m, before = BSON_INITIALIZER, after = BSON_INITIALIZER;
	bson_iter_t it;
	bool moved = false;

	if (i + 1 >= l->n || !match_doc(&l->s[i + 1], &m) || !effect_of(&l->s[i], &e))
		return false;
	if (!bson_iter_init(&it, &m))
		return false;
	while (bson_iter_next(&it)) {
		const char *k = bson_iter_key(&it);
		char path[512];
		bool ok;

		if (k[0] == '$') {
			bson_t one = BSON_INITIALIZER;

			bson_append_iter(&one, k, -1, &it);
			ok = strcmp(k, "$comment") != 0 && expr_passes(&e, &one, 0);
			bson_destroy(&one);
			if (ok && !bson_has_field(&before, k)) {
				bson_append_iter(&before, k, -1, &it);
				moved = true;
			} else {
				bson_append_iter(&after, k, -1, &it);
			}
			continue;
		}
		ok = path_passes(&e, k, path, sizeof path);
		/* a renamed path whose old name is already matched stays after */
		if (ok && !bson_has_field(&before, path)) {
			bson_append_iter(&before, path, -1, &it);
			moved = true;
		} else {
			bson_append_iter(&after, k, -1, &it);
		}
	}
	if (moved) {
		olist_remove(l, i + 1);
		if (!bson_empty(&after))
			olist_insert_doc(l, i + 1, "$match", &after);
		olist_insert_doc(l, i, "$match", &before);
	}
	bson_destroy(&before);
	bson_destroy(&after);
	return moved;
}

/* ---- driver ------------------------------------------------------------- */

bool
agg_pipeline_optimize(const bson_t *stages, bson_t *out)
{
	olist_t l = {0};
	bson_iter_t it, s;
	bool changed = false, again = true;
	int passes = 0;

	if (!bson_iter_init(&it, stages))
		return false;
	while (bson_iter_next(&it)) {
		if (!BSON_ITER_HOLDS_DOCUMENT(&it) || !bson_iter_recurse(&it, &s) || !bson_iter_next(&s) ||
		    strlen(bson_iter_key(&s)) >= sizeof l.s[0].name || l.n >= OPT_MAX_STAGES) {
			olist_free(&l);
			return false;
		}
		l.s = bson_realloc(l.s, (size_t)(l.n + 1) * sizeof(ostage_t));
		bson_strncpy(l.s[l.n].name, bson_iter_key(&s), sizeof l.s[l.n].name);
		l.s[l.n].spec = bson_new();
		bson_append_iter(l.s[l.n].spec, bson_iter_key(&s), -1, &s);
		if (bson_iter_next(&s)) {       /* two keys: not a stage; leave it all */
			l.n++;
			olist_free(&l);
			return false;
		}
		l.n++;
	}
	while (again && passes++ < OPT_MAX_PASSES) {
		again = false;
		for (int i = 0; i < l.n; i++) {
			if (coalesce_counts(&l, i) || coalesce_matches(&l, i) || swap_sort_match(&l, i) ||
			    split_match(&l, i)) {
				again = changed = true;
				break;
			}
		}
	}
	if (changed) {
		char key[16];

		bson_init(out);
		for (int i = 0; i < l.n; i++) {
			bv_array_key((uint32_t)i, key);
			BSON_APPEND_DOCUMENT(out, key, l.s[i].spec);
		}
	}
	olist_free(&l);
	return changed;
}
