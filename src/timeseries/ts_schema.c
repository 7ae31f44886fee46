/*
 * ts_schema.c -- an open bucket's schema (ts_schema.h says what and why):
 * a small tree of paths, each with the canonical type its values have had.
 * Measurements of one sensor nearly always list their fields in the same
 * order, so a field is looked up at the position it had last first, then
 * by a linear scan (buckets have few fields; mongod switches to a map past
 * 12, which a measurement-sized document does not need).
 */
#include "timeseries/ts_schema.h"

#include <string.h>

#include "bson/value.h"

#define K_OBJ 1000
#define K_ARR 1001

typedef struct snode {
	char *name;          /* NULL: an array position */
	int kind;            /* bv_type_rank of the values, or K_OBJ / K_ARR */
	struct snode *kids;  /* fields (K_OBJ) or positions (K_ARR), in first-seen order */
	int n, cap;
} snode_t;

struct ts_schema {
	snode_t root;        /* kind K_OBJ */
};

static int
kind_of(const bson_iter_t *it)
{
	bson_type_t t = bson_iter_type(it);

	if (t == BSON_TYPE_DOCUMENT)
		return K_OBJ;
	if (t == BSON_TYPE_ARRAY)
		return K_ARR;
	return bv_type_rank(t);
}

static void
node_clear(snode_t *p)
{
	for (int i = 0; i < p->n; i++)
		node_clear(&p->kids[i]);
	bson_free(p->kids);
	bson_free(p->name);
	memset(p, 0, sizeof(*p));
}

static void
node_copy(snode_t *dst, const snode_t *src)
{
	dst->name = src->name != NULL ? bson_strdup(src->name) : NULL;
	dst->kind = src->kind;
	dst->n = dst->cap = src->n;
	dst->kids = src->n > 0 ? bson_malloc(sizeof(snode_t) * (size_t)src->n) : NULL;
	for (int i = 0; i < src->n; i++)
		node_copy(&dst->kids[i], &src->kids[i]);
}

static size_t
node_size(const snode_t *p)
{
	size_t z = sizeof(snode_t) * (size_t)p->cap + (p->name != NULL ? strlen(p->name) + 1 : 0);

	for (int i = 0; i < p->n; i++)
		z += node_size(&p->kids[i]);
	return z;
}

/* p's child for the element at position idx named key (an object's field:
 * looked up at idx first), or NULL. */
static snode_t *
kid_find(const snode_t *p, const char *key, int idx)
{
	if (p->kind == K_ARR)
		return idx < p->n ? &p->kids[idx] : NULL;
	if (idx < p->n && strcmp(p->kids[idx].name, key) == 0)
		return &p->kids[idx];
	for (int i = 0; i < p->n; i++)
		if (strcmp(p->kids[i].name, key) == 0)
			return &p->kids[i];
	return NULL;
}

static snode_t *
kid_add(snode_t *p, const char *key, int kind)
{
	snode_t *k;

	if (p->n == p->cap) {
		p->cap = p->cap ? p->cap * 2 : 4;
		p->kids = bson_realloc(p->kids, sizeof(snode_t) * (size_t)p->cap);
	}
	k = &p->kids[p->n++];
	memset(k, 0, sizeof(*k));
	k->name = p->kind == K_ARR ? NULL : bson_strdup(key);
	k->kind = kind;
	return k;
}

/* Walk the container it iterates (p's values) and check, or also add, every
 * path.  skip: a top-level field left out. */
static bool
walk(snode_t *p, bson_iter_t *it, const char *skip, bool add, bool *fresh)
{
	int idx = 0;

	while (bson_iter_next(it)) {
		const char *key = bson_iter_key(it);
		int kind;
		snode_t *k;

		if (skip != NULL && strcmp(key, skip) == 0)
			continue;
		kind = kind_of(it);
		k = kid_find(p, key, idx);
		idx++;
		if (k == NULL) {
			*fresh = true;
			if (!add)
				continue;   /* a new path fits */
			k = kid_add(p, key, kind);
		} else if (k->kind != kind) {
			return false;
		}
		if (kind == K_OBJ || kind == K_ARR) {
			bson_iter_t sub;
			if (bson_iter_recurse(it, &sub) && !walk(k, &sub, NULL, add, fresh))
				return false;
		}
	}
	return true;
}

ts_schema_t *
ts_schema_new(void)
{
	ts_schema_t *s = bson_malloc0(sizeof(*s));

	s->root.kind = K_OBJ;
	return s;
}

void
ts_schema_free(ts_schema_t *s)
{
	if (s == NULL)
		return;
	node_clear(&s->root);
	bson_free(s);
}

ts_schema_t *
ts_schema_copy(const ts_schema_t *s)
{
	ts_schema_t *c;

	if (s == NULL)
		return NULL;
	c = bson_malloc0(sizeof(*c));
	node_copy(&c->root, &s->root);
	return c;
}

size_t
ts_schema_size(const ts_schema_t *s)
{
	return s == NULL ? 0 : sizeof(*s) + node_size(&s->root) - sizeof(snode_t);
}

int
ts_schema_check(const ts_schema_t *s, const bson_t *m, const char *skip)
{
	bson_iter_t it;
	bool fresh = false;

	if (!bson_iter_init(&it, m))
		return 0;
	/* the walk does not change s when add is false */
	if (!walk((snode_t *)&s->root, &it, skip, false, &fresh))
		return -1;
	return fresh ? 1 : 0;
}

bool
ts_schema_fits(const ts_schema_t *s, const bson_t *m, const char *skip)
{
	return ts_schema_check(s, m, skip) >= 0;
}

bool
ts_schema_add(ts_schema_t *s, const bson_t *m, const char *skip)
{
	bson_iter_t it;
	bool fresh = false;

	return !bson_iter_init(&it, m) || walk(&s->root, &it, skip, true, &fresh);
}

ts_schema_t *
ts_schema_from_bucket(const bson_t *bucket)
{
	static const char *const paths[] = {"control.min", "control.max"};
	ts_schema_t *s = ts_schema_new();

	for (int i = 0; i < 2; i++) {
		bson_iter_t it, sub;
		const uint8_t *d;
		uint32_t l;
		bson_t doc;

		if (!bson_iter_init(&it, bucket) || !bson_iter_find_descendant(&it, paths[i], &sub) ||
		    !BSON_ITER_HOLDS_DOCUMENT(&sub))
			goto fail;
		bson_iter_document(&sub, &l, &d);
		if (!bson_init_static(&doc, d, l) || !ts_schema_add(s, &doc, NULL))
			goto fail;
	}
	return s;
fail:
	ts_schema_free(s);
	return NULL;
}
