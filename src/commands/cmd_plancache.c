/*
 * cmd_plancache.c -- index filters and the plan cache commands, as mongod
 * answers them: planCacheSetFilter, planCacheListFilters,
 * planCacheClearFilters and planCacheClear.
 *
 * An index filter names the indexes the planner may use for one query
 * shape of a collection: the query's structure (field names, operators, not
 * values), its sort and its projection.  find, count, distinct and
 * aggregate's source (and their explains) look their shape up here
 * (cmd_plan_filter_mask): with a filter set, the planner's candidates are
 * the listed indexes the collection has, raced as usual (a collection scan
 * when none is left), an index hint is ignored as mongod ignores it, and
 * explain reports indexFilterSet: true.  count and distinct look up their
 * query alone (no sort, no projection); aggregate the $match, $sort and
 * projection it pushes down to the scan.  Filters live in memory, as
 * mongod's (a restart drops them).  Tamga keeps no plan cache (every query
 * is planned afresh), so planCacheClear has nothing to drop and
 * $planCacheStats lists nothing.
 */
#include "commands/commands_private.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "bson/value.h"

#define PF_MAX 1024

typedef struct pfilter {
	char *ns;
	char *shape;           /* query shape + sort + projection, as text */
	bson_t *query, *sort, *proj, *indexes;
} pfilter_t;

static pthread_mutex_t pf_lock = PTHREAD_MUTEX_INITIALIZER;
static pfilter_t pf_tab[PF_MAX];
static int pf_n;

/* ---- shapes ------------------------------------------------------------- */

typedef struct sbuf {
	char *s;
	size_t len, cap;
} sbuf_t;

static void
sb_add(sbuf_t *b, const char *t)
{
	size_t n = strlen(t);

	if (b->len + n + 1 > b->cap) {
		b->cap = (b->len + n + 1) * 2;
		b->s = bson_realloc(b->s, b->cap);
	}
	memcpy(b->s + b->len, t, n + 1);
	b->len += n;
}

static int
key_cmp(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static void shape_doc(sbuf_t *b, const bson_t *d, int depth);

/* A predicate's value: operators by name (their arguments' shapes for the
 * logical ones), equality to a literal as "eq". */
static void
shape_value(sbuf_t *b, const bson_iter_t *v, int depth)
{
	bson_iter_t it;

	if (depth > 50) {
		sb_add(b, "...");
		return;
	}
	if (BSON_ITER_HOLDS_DOCUMENT(v) && bson_iter_recurse(v, &it) && bson_iter_next(&it) &&
	    bson_iter_key(&it)[0] == '$') {
		bson_iter_recurse(v, &it);
		sb_add(b, "{");
		while (bson_iter_next(&it)) {
			sb_add(b, bson_iter_key(&it));
			if (BSON_ITER_HOLDS_DOCUMENT(&it) &&
			    (strcmp(bson_iter_key(&it), "$elemMatch") == 0 || strcmp(bson_iter_key(&it), "$not") == 0)) {
				bson_t sub;
				const uint8_t *d;
				uint32_t l;

				bson_iter_document(&it, &l, &d);
				bson_init_static(&sub, d, l);
				sb_add(b, "(");
				shape_doc(b, &sub, depth + 1);
				sb_add(b, ")");
			}
			sb_add(b, ",");
		}
		sb_add(b, "}");
		return;
	}
	sb_add(b, BSON_ITER_HOLDS_REGEX(v) ? "regex" : "eq");
}

static void
shape_doc(sbuf_t *b, const bson_t *d, int depth)
{
	bson_iter_t it;
	const char *keys[64];
	int n = 0;

	if (!bson_iter_init(&it, d))
		return;
	while (bson_iter_next(&it) && n < 64)
		keys[n++] = bson_iter_key(&it);
	qsort(keys, (size_t)n, sizeof keys[0], key_cmp);
	sb_add(b, "{");
	for (int i = 0; i < n; i++) {
		bson_iter_t v;

		bson_iter_init_find(&v, d, keys[i]);
		sb_add(b, keys[i]);
		sb_add(b, ":");
		if ((strcmp(keys[i], "$and") == 0 || strcmp(keys[i], "$or") == 0 || strcmp(keys[i], "$nor") == 0) &&
		    BSON_ITER_HOLDS_ARRAY(&v)) {
			bson_iter_t a;

			bson_iter_recurse(&v, &a);
			sb_add(b, "[");
			while (bson_iter_next(&a)) {
				if (BSON_ITER_HOLDS_DOCUMENT(&a)) {
					bson_t sub;
					const uint8_t *dd;
					uint32_t l;

					bson_iter_document(&a, &l, &dd);
					bson_init_static(&sub, dd, l);
					shape_doc(b, &sub, depth + 1);
				}
				sb_add(b, ",");
			}
			sb_add(b, "]");
		} else {
			shape_value(b, &v, depth + 1);
		}
		sb_add(b, ",");
	}
	sb_add(b, "}");
}

/* The shape of (query, sort, projection) as text (caller frees). */
static char *
shape_of(const bson_t *query, const bson_t *sort, const bson_t *proj)
{
	sbuf_t b = {0};
	char *t;

	sb_add(&b, "q");
	if (query != NULL)
		shape_doc(&b, query, 0);
	sb_add(&b, "|s");
	if (sort != NULL && !bson_empty(sort)) {
		t = bson_as_canonical_extended_json(sort, NULL);
		sb_add(&b, t);
		bson_free(t);
	}
	sb_add(&b, "|p");
	if (proj != NULL && !bson_empty(proj)) {
		t = bson_as_canonical_extended_json(proj, NULL);
		sb_add(&b, t);
		bson_free(t);
	}
	return b.s;
}

static void
pf_free(pfilter_t *f)
{
	bson_free(f->ns);
	bson_free(f->shape);
	bson_destroy(f->query);
	bson_destroy(f->sort);
	bson_destroy(f->proj);
	bson_destroy(f->indexes);
	memset(f, 0, sizeof *f);
}

static void
pf_remove(int i)
{
	pf_free(&pf_tab[i]);
	memmove(&pf_tab[i], &pf_tab[i + 1], (size_t)(pf_n - i - 1) * sizeof pf_tab[0]);
	__atomic_store_n(&pf_n, pf_n - 1, __ATOMIC_RELEASE);
}

/* ---- commands ----------------------------------------------------------- */

static int
opt_doc(cmd_t *c, const char *f, bson_t *out, bool *found, terr_t *err)
{
	return cmd_get_doc(c, f, out, found, err);
}

CMD_HANDLER(cmd_plan_cache_set_filter)
{
	static const char *const fields[] = {"query", "sort", "projection", "collation", "indexes", NULL};
	const char *name;
	bson_t q, s, p, idx;
	bool hq, hs, hp, hi;
	char ns[512];
	char *shape;
	bson_iter_t it;

	RET(cmd_collection_arg(c, &name, err));
	RET(cmd_check_fields(c, fields, err));
	RET(opt_doc(c, "query", &q, &hq, err));
	RET(opt_doc(c, "sort", &s, &hs, err));
	RET(opt_doc(c, "projection", &p, &hp, err));
	if (!cmd_find_field(c, "indexes", &it))
		return terr_set(err, TERR_BAD_VALUE, "required field indexes missing");
	RET(cmd_get_array(c, "indexes", &idx, &hi, err));
	if (bson_empty(&idx))
		return terr_set(err, TERR_BAD_VALUE, "\"indexes\" cannot be empty");
	bson_iter_init(&it, &idx);
	while (bson_iter_next(&it))
		if (!BSON_ITER_HOLDS_DOCUMENT(&it) && !BSON_ITER_HOLDS_UTF8(&it))
			return terr_set(err, TERR_BAD_VALUE,
			    "each item in \"indexes\" must be an object or string");
	if (!hq)
		return terr_set(err, TERR_BAD_VALUE, "required field query missing");
	cmd_ns(ns, sizeof ns, c->db, name);
	shape = shape_of(&q, hs ? &s : NULL, hp ? &p : NULL);
	pthread_mutex_lock(&pf_lock);
	for (int i = 0; i < pf_n; i++)
		if (strcmp(pf_tab[i].ns, ns) == 0 && strcmp(pf_tab[i].shape, shape) == 0) {
			pf_remove(i);
			break;
		}
	if (pf_n == PF_MAX) {
		pthread_mutex_unlock(&pf_lock);
		bson_free(shape);
		return terr_set(err, TERR_BAD_VALUE, "too many index filters (%d)", PF_MAX);
	}
	pf_tab[pf_n].ns = bson_strdup(ns);
	pf_tab[pf_n].shape = shape;
	pf_tab[pf_n].query = bson_copy(&q);
	pf_tab[pf_n].sort = hs ? bson_copy(&s) : bson_new();
	pf_tab[pf_n].proj = hp ? bson_copy(&p) : bson_new();
	pf_tab[pf_n].indexes = bson_copy(&idx);
	__atomic_store_n(&pf_n, pf_n + 1, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&pf_lock);
	return 0;
}

CMD_HANDLER(cmd_plan_cache_list_filters)
{
	const char *name;
	char ns[512], key[16];
	bson_t arr, one;
	uint32_t n = 0;

	RET(cmd_collection_arg(c, &name, err));
	cmd_ns(ns, sizeof ns, c->db, name);
	BSON_APPEND_ARRAY_BEGIN(c->reply, "filters", &arr);
	pthread_mutex_lock(&pf_lock);
	for (int i = 0; i < pf_n; i++) {
		if (strcmp(pf_tab[i].ns, ns) != 0)
			continue;
		bv_array_key(n++, key);
		BSON_APPEND_DOCUMENT_BEGIN(&arr, key, &one);
		BSON_APPEND_DOCUMENT(&one, "query", pf_tab[i].query);
		BSON_APPEND_DOCUMENT(&one, "sort", pf_tab[i].sort);
		BSON_APPEND_DOCUMENT(&one, "projection", pf_tab[i].proj);
		BSON_APPEND_ARRAY(&one, "indexes", pf_tab[i].indexes);
		bson_append_document_end(&arr, &one);
	}
	pthread_mutex_unlock(&pf_lock);
	bson_append_array_end(c->reply, &arr);
	return 0;
}

CMD_HANDLER(cmd_plan_cache_clear_filters)
{
	static const char *const fields[] = {"query", "sort", "projection", "collation", NULL};
	const char *name;
	bson_t q, s, p;
	bool hq, hs, hp;
	char ns[512];
	char *shape = NULL;

	RET(cmd_collection_arg(c, &name, err));
	RET(cmd_check_fields(c, fields, err));
	RET(opt_doc(c, "query", &q, &hq, err));
	RET(opt_doc(c, "sort", &s, &hs, err));
	RET(opt_doc(c, "projection", &p, &hp, err));
	if (!hq && (hs || hp))
		return terr_set(err, TERR_BAD_VALUE, "sort or projection provided without query");
	cmd_ns(ns, sizeof ns, c->db, name);
	if (hq)
		shape = shape_of(&q, hs ? &s : NULL, hp ? &p : NULL);
	pthread_mutex_lock(&pf_lock);
	for (int i = pf_n - 1; i >= 0; i--)
		if (strcmp(pf_tab[i].ns, ns) == 0 && (shape == NULL || strcmp(pf_tab[i].shape, shape) == 0))
			pf_remove(i);
	pthread_mutex_unlock(&pf_lock);
	bson_free(shape);
	return 0;
}

CMD_HANDLER(cmd_plan_cache_clear)
{
	static const char *const fields[] = {"query", "sort", "projection", "collation", NULL};
	const char *name;

	/* no plan cache: nothing cached to drop */
	RET(cmd_collection_arg(c, &name, err));
	RET(cmd_check_fields(c, fields, err));
	return 0;
}

bool
cmd_plan_filter_mask(cmd_t *c, const storage_coll_t *coll, const bson_t *query, const bson_t *sort,
                     const bson_t *proj, uint64_t *allowed)
{
	char ns[512];
	char *shape;
	bool found = false;

	*allowed = 0;
	if (coll == NULL)
		return false;
	/* no filter at all (the common case): no lock per query; pf_n only
	 * changes under pf_lock, with atomic stores */
	if (__atomic_load_n(&pf_n, __ATOMIC_ACQUIRE) == 0)
		return false;
	cmd_ns(ns, sizeof ns, c->db, coll->name);
	shape = shape_of(query, sort, proj);
	pthread_mutex_lock(&pf_lock);
	for (int i = 0; i < pf_n && !found; i++) {
		bson_iter_t it;

		if (strcmp(pf_tab[i].ns, ns) != 0 || strcmp(pf_tab[i].shape, shape) != 0)
			continue;
		found = true;
		bson_iter_init(&it, pf_tab[i].indexes);
		while (bson_iter_next(&it)) {
			for (int j = 0; j < coll->nindexes && j < 64; j++) {
				const storage_index_t *ix = &coll->indexes[j];
				bool same = BSON_ITER_HOLDS_UTF8(&it) ? strcmp(bson_iter_utf8(&it, NULL), ix->name) == 0 : false;

				if (BSON_ITER_HOLDS_DOCUMENT(&it)) {
					bson_t kp;
					const uint8_t *d;
					uint32_t l;

					bson_iter_document(&it, &l, &d);
					bson_init_static(&kp, d, l);
					same = bson_equal(&kp, ix->key);
				}
				if (same)
					*allowed |= 1ull << j;
			}
		}
	}
	pthread_mutex_unlock(&pf_lock);
	bson_free(shape);
	return found;
}

const bson_value_t *
cmd_plan_filter_keep_hint(const bson_value_t *hint)
{
	bson_iter_t it;
	bson_t h;

	if (hint == NULL || hint->value_type != BSON_TYPE_DOCUMENT)
		return NULL;
	if (!bson_init_static(&h, hint->value.v_doc.data, hint->value.v_doc.data_len))
		return NULL;
	return bson_iter_init_find(&it, &h, "$natural") ? hint : NULL;
}
