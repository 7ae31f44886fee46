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

/* bv_type_rank of the common scalar types without a call (a measurement's
 * fields are mostly these); the others ask bv_type_rank. */
static int
kind_of(uint8_t t)
{
	switch (t) {
	case BSON_TYPE_DOCUMENT: return K_OBJ;
	case BSON_TYPE_ARRAY: return K_ARR;
	case BSON_TYPE_DOUBLE: case BSON_TYPE_INT32: case BSON_TYPE_INT64: case BSON_TYPE_DECIMAL128: return 10;
	default: return bv_type_rank((bson_type_t)t);
	}
}

/* strcmp(a, b) == 0 without a call: field names are short */
static bool
streq(const char *a, const char *b)
{
	while (*a != '\0' && *a == *b) {
		a++;
		b++;
	}
	return *a == *b;
}

static uint32_t
rd32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* The size of the value of type t at p (at most avail bytes), or -1 when it
 * does not fit (a malformed document: the walk stops). */
static int64_t
value_size(uint8_t t, const uint8_t *p, size_t avail)
{
	int64_t z;

	switch (t) {
	case BSON_TYPE_DOUBLE: case BSON_TYPE_DATE_TIME: case BSON_TYPE_INT64: case BSON_TYPE_TIMESTAMP:
		z = 8; break;
	case BSON_TYPE_INT32: z = 4; break;
	case BSON_TYPE_BOOL: z = 1; break;
	case BSON_TYPE_NULL: case BSON_TYPE_UNDEFINED: case BSON_TYPE_MINKEY: case BSON_TYPE_MAXKEY: z = 0; break;
	case BSON_TYPE_OID: z = 12; break;
	case BSON_TYPE_DECIMAL128: z = 16; break;
	case BSON_TYPE_UTF8: case BSON_TYPE_SYMBOL: case BSON_TYPE_CODE:
		z = avail < 4 ? -1 : 4 + (int64_t)rd32(p); break;
	case BSON_TYPE_DOCUMENT: case BSON_TYPE_ARRAY: case BSON_TYPE_CODEWSCOPE:
		z = avail < 4 ? -1 : (int64_t)rd32(p); break;
	case BSON_TYPE_BINARY: z = avail < 4 ? -1 : 5 + (int64_t)rd32(p); break;
	case BSON_TYPE_DBPOINTER: z = avail < 4 ? -1 : 4 + (int64_t)rd32(p) + 12; break;
	case BSON_TYPE_REGEX: {
		const uint8_t *a = memchr(p, 0, avail), *b;
		if (a == NULL || (b = memchr(a + 1, 0, avail - (size_t)(a + 1 - p))) == NULL)
			return -1;
		z = b + 1 - p;
		break;
	}
	default: return -1;
	}
	return z < 0 || (uint64_t)z > avail ? -1 : z;
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
	if (idx < p->n && streq(p->kids[idx].name, key))
		return &p->kids[idx];
	for (int i = 0; i < p->n; i++)
		if (streq(p->kids[i].name, key))
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

/* Walk the document or array of len bytes at d (p's values) and check, or
 * also add, every path.  skip: a top-level field left out.  The bytes are
 * read directly (a measurement was validated when it was received): a few
 * instructions per field where bson_iter_next re-validates each one. */
static bool
walk(snode_t *p, const uint8_t *d, uint32_t len, const char *skip, bool add, bool *fresh)
{
	const uint8_t *q = d + 4, *end = d + len - 1;
	int idx = 0;

	if (len < 5)
		return true;
	while (q < end) {
		uint8_t t = *q++;
		const char *key = (const char *)q;
		const uint8_t *nul = memchr(q, 0, (size_t)(end - q));
		int64_t vz;
		int kind;
		snode_t *k;

		if (t == 0 || nul == NULL)
			break;
		q = nul + 1;
		if ((vz = value_size(t, q, (size_t)(end - q))) < 0)
			break;
		q += vz;
		if (skip != NULL && key[0] == skip[0] && streq(key, skip))
			continue;
		kind = kind_of(t);
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
		if ((kind == K_OBJ || kind == K_ARR) && !walk(k, q - vz, (uint32_t)vz, NULL, add, fresh))
			return false;
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
	bool fresh = false;

	/* the walk does not change s when add is false */
	if (!walk((snode_t *)&s->root, bson_get_data(m), m->len, skip, false, &fresh))
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
	bool fresh = false;

	return walk(&s->root, bson_get_data(m), m->len, skip, true, &fresh);
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

/* Whether bounds min and max (control.min / control.max, or one of their
 * objects or arrays) give a field of both another canonical type; objects
 * and arrays compared inside.  A field one side lacks is passed over (Tamga
 * keeps min and max apart, so their field orders may differ: looked up by
 * name after the same position). */
static bool
bounds_mixed(const bson_t *min, const bson_t *max, bool array, int depth)
{
	bson_iter_t a, b;
	bool have_b;

	if (depth > 100)
		return true;   /* deeper than BSON nesting allows: not ours to trust */
	if (!bson_iter_init(&a, min) || !bson_iter_init(&b, max))
		return false;
	have_b = true;
	while (bson_iter_next(&a)) {
		bson_iter_t m;
		int ka, kb;
		have_b = have_b && bson_iter_next(&b);
		if (have_b && strcmp(bson_iter_key(&a), bson_iter_key(&b)) == 0)
			m = b;
		else if (array || !bson_iter_init_find(&m, max, bson_iter_key(&a)))
			continue;
		ka = kind_of((uint8_t)bson_iter_type(&a));
		kb = kind_of((uint8_t)bson_iter_type(&m));
		if (ka != kb)
			return true;
		if (ka == K_OBJ || ka == K_ARR) {
			const uint8_t *d1, *d2;
			uint32_t l1, l2;
			bson_t x, y;
			if (ka == K_OBJ) {
				bson_iter_document(&a, &l1, &d1);
				bson_iter_document(&m, &l2, &d2);
			} else {
				bson_iter_array(&a, &l1, &d1);
				bson_iter_array(&m, &l2, &d2);
			}
			if (bson_init_static(&x, d1, l1) && bson_init_static(&y, d2, l2) &&
			    bounds_mixed(&x, &y, ka == K_ARR, depth + 1))
				return true;
		}
	}
	return false;
}

bool
ts_bucket_mixed_schema(const bson_t *bucket)
{
	bson_iter_t it, mn, mx;
	const uint8_t *d1, *d2;
	uint32_t l1, l2;
	bson_t min, max;

	if (!bson_iter_init(&it, bucket) || !bson_iter_find_descendant(&it, "control.min", &mn) ||
	    !BSON_ITER_HOLDS_DOCUMENT(&mn) || !bson_iter_init(&it, bucket) ||
	    !bson_iter_find_descendant(&it, "control.max", &mx) || !BSON_ITER_HOLDS_DOCUMENT(&mx))
		return false;
	bson_iter_document(&mn, &l1, &d1);
	bson_iter_document(&mx, &l2, &d2);
	if (!bson_init_static(&min, d1, l1) || !bson_init_static(&max, d2, l2))
		return false;
	return bounds_mixed(&min, &max, false, 0);
}
