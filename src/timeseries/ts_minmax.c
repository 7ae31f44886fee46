/*
 * ts_minmax.c -- field-by-field bucket bounds (ts_minmax.h says what and
 * why).  Two documents merge by mongod's lock-step walk over the bound's
 * fields (flat_bson.cpp's _updateObj: a field of the new value that is not
 * where the walk stands is searched forward, then among the fields skipped
 * over; one found nowhere is inserted where the walk stands).  Min and max
 * are kept apart here (mongod shares one field list between them), so a
 * bound whose type switched back and forth may list its fields in another
 * order than mongod's; the values are the same.
 */
#include "timeseries/ts_minmax.h"

#include <string.h>

#include "bson/value.h"

static bool
nested(bson_type_t t)
{
	return t == BSON_TYPE_DOCUMENT || t == BSON_TYPE_ARRAY;
}

static void merge_val(bson_t *out, const char *key, const bson_value_t *a, const bson_value_t *b, int dir);

typedef struct ent {
	const char *k;
	bson_value_t va, vb;
	bool ha, hb;
} ent_t;

static int
ent_find(const ent_t *e, int from, int to, const char *k)
{
	for (int i = from; i < to; i++)
		if (strcmp(e[i].k, k) == 0)
			return i;
	return to;
}

static void
ent_insert(ent_t **e, int *n, int *cap, int at, const char *k)
{
	if (*n == *cap) {
		*cap = *cap ? *cap * 2 : 8;
		*e = bson_realloc(*e, sizeof(ent_t) * (size_t)*cap);
	}
	memmove(&(*e)[at + 1], &(*e)[at], sizeof(ent_t) * (size_t)(*n - at));
	memset(&(*e)[at], 0, sizeof(ent_t));
	(*e)[at].k = k;
	(*n)++;
}

static bool
doc_of(const bson_value_t *v, bson_t *d)
{
	return bson_init_static(d, v->value.v_doc.data, v->value.v_doc.data_len);
}

/* Two documents, field by field. */
static void
merge_docs(bson_t *out, const char *key, const bson_value_t *a, const bson_value_t *b, int dir)
{
	bson_t da, db, sub;
	bson_iter_t it;
	ent_t *e = NULL;
	int n = 0, cap = 0, at = 0, handled = 0;
	bool skipped = false;

	if (!doc_of(a, &da) || !doc_of(b, &db)) {
		bv_append(out, key, -1, a);
		return;
	}
	if (bson_iter_init(&it, &da))
		while (bson_iter_next(&it)) {
			ent_insert(&e, &n, &cap, n, bson_iter_key(&it));
			e[n - 1].va = *bson_iter_value(&it);
			e[n - 1].ha = true;
		}
	if (bson_iter_init(&it, &db))
		while (bson_iter_next(&it)) {
			const char *k = bson_iter_key(&it);
			if (at == n && skipped)
				at = ent_find(e, handled, n, k);
			if (at == n) {
				ent_insert(&e, &n, &cap, at, k);
			} else if (strcmp(e[at].k, k) != 0) {
				int found = ent_find(e, at + 1, n, k);
				if (found == n) {
					if (skipped && (found = ent_find(e, handled, at, k)) != at)
						at = found;
					else
						ent_insert(&e, &n, &cap, at, k);
				} else {
					at = found;
					skipped = true;
				}
			}
			if (!e[at].hb) {
				e[at].vb = *bson_iter_value(&it);
				e[at].hb = true;
			}
			at++;
			if (!skipped)
				handled++;
		}
	bson_append_document_begin(out, key, -1, &sub);
	for (int i = 0; i < n; i++)
		merge_val(&sub, e[i].k, e[i].ha ? &e[i].va : NULL, e[i].hb ? &e[i].vb : NULL, dir);
	bson_append_document_end(out, &sub);
	bson_free(e);
}

/* Two arrays, position by position. */
static void
merge_arrays(bson_t *out, const char *key, const bson_value_t *a, const bson_value_t *b, int dir)
{
	bson_t da, db, sub;
	bson_iter_t ia, ib;
	bool more_a, more_b;
	char buf[16];
	const char *k;

	if (!doc_of(a, &da) || !doc_of(b, &db) || !bson_iter_init(&ia, &da) || !bson_iter_init(&ib, &db)) {
		bv_append(out, key, -1, a);
		return;
	}
	bson_append_array_begin(out, key, -1, &sub);
	more_a = bson_iter_next(&ia);
	more_b = bson_iter_next(&ib);
	for (uint32_t i = 0; more_a || more_b; i++) {
		bson_uint32_to_string(i, &k, buf, sizeof(buf));
		merge_val(&sub, k, more_a ? bson_iter_value(&ia) : NULL, more_b ? bson_iter_value(&ib) : NULL, dir);
		if (more_a)
			more_a = bson_iter_next(&ia);
		if (more_b)
			more_b = bson_iter_next(&ib);
	}
	bson_append_array_end(out, &sub);
}

/* Append under key the bound (dir) of a and b (either may be NULL: absent). */
static void
merge_val(bson_t *out, const char *key, const bson_value_t *a, const bson_value_t *b, int dir)
{
	int ra, rb;

	if (a == NULL || b == NULL) {
		bv_append(out, key, -1, a != NULL ? a : b);
		return;
	}
	if (!nested(a->value_type) && !nested(b->value_type)) {
		int c = bv_compare(b, a);
		bv_append(out, key, -1, (dir < 0 ? c < 0 : c > 0) ? b : a);
		return;
	}
	ra = bv_type_rank(a->value_type);
	rb = bv_type_rank(b->value_type);
	if (ra != rb)
		bv_append(out, key, -1, (dir < 0 ? rb < ra : rb > ra) ? b : a);
	else if (a->value_type == BSON_TYPE_DOCUMENT)
		merge_docs(out, key, a, b, dir);
	else
		merge_arrays(out, key, a, b, dir);
}

void
ts_minmax_widen(bson_value_t *bound, bool *any, bson_t **own, const bson_value_t *v, int dir)
{
	bson_t *n;
	bson_iter_t it;
	int ra, rv;

	if (!*any) {
		*bound = *v;
		*any = true;
		return;
	}
	if (!nested(bound->value_type) && !nested(v->value_type)) {
		int c = bv_compare(v, bound);
		if (dir < 0 ? c < 0 : c > 0)
			*bound = *v;
		return;
	}
	ra = bv_type_rank(bound->value_type);
	rv = bv_type_rank(v->value_type);
	if (ra != rv) {
		if (dir < 0 ? rv < ra : rv > ra)
			*bound = *v;
		return;
	}
	/* two documents or two arrays: merged into a new buffer (the old one
	 * may hold *bound: freed only after) */
	n = bson_new();
	merge_val(n, "v", bound, v, dir);
	if (!bson_iter_init_find(&it, n, "v")) {
		bson_destroy(n);
		return;
	}
	*bound = *bson_iter_value(&it);
	if (*own != NULL)
		bson_destroy(*own);
	*own = n;
}

void
ts_minmax_doc(const bson_t *const *ms, int n, const char *skip, int dir, bson_t *out)
{
	struct col {
		const char *name;
		bson_value_t b;
		bool any;
		bson_t *own;
	} *cols = NULL;
	int nc = 0, cap = 0;

	for (int i = 0; i < n; i++) {
		bson_iter_t it;
		if (!bson_iter_init(&it, ms[i]))
			continue;
		while (bson_iter_next(&it)) {
			const char *k = bson_iter_key(&it);
			int c;
			if (skip != NULL && strcmp(k, skip) == 0)
				continue;
			for (c = 0; c < nc && strcmp(cols[c].name, k) != 0; c++)
				;
			if (c == nc) {
				if (nc == cap) {
					cap = cap ? cap * 2 : 8;
					cols = bson_realloc(cols, sizeof(*cols) * (size_t)cap);
				}
				memset(&cols[nc], 0, sizeof(cols[nc]));
				cols[nc++].name = k;
			}
			ts_minmax_widen(&cols[c].b, &cols[c].any, &cols[c].own, bson_iter_value(&it), dir);
		}
	}
	for (int c = 0; c < nc; c++) {
		bv_append(out, cols[c].name, -1, &cols[c].b);
		if (cols[c].own != NULL)
			bson_destroy(cols[c].own);
	}
	bson_free(cols);
}
