/*
 * path.c -- dotted paths: exact lookup (bpath_get) and the query walk with
 * implicit array traversal (bpath_walk*), following the classic matcher's
 * ElementIterator: documents are descended until an array or the leaf; an
 * array in the middle hands the rest of the path to each document element,
 * and to the element at a numeric component's position; a leaf array yields
 * its elements and then itself.
 *
 * Not here: writing into documents, aggregation field paths.
 */
#include "bson/path.h"
#include "bson/iter.h"

#include <string.h>

bool
bpath_is_array_index(const char *comp, size_t len, uint32_t *idx)
{
	uint64_t v = 0;

	if (len == 0 || len > 10)
		return false;
	if (len > 1 && comp[0] == '0')
		return false;
	for (size_t i = 0; i < len; i++) {
		if (comp[i] < '0' || comp[i] > '9')
			return false;
		v = v * 10 + (uint64_t)(comp[i] - '0');
	}
	if (v > INT32_MAX)
		return false;
	if (idx != NULL)
		*idx = (uint32_t)v;
	return true;
}

void
bpath_init(bpath_t *p, const char *path)
{
	size_t len = strlen(path);
	uint32_t n = 1, i;
	uint8_t *block;
	char *s;

	for (size_t k = 0; k < len; k++)
		if (path[k] == '.')
			n++;
	/* one block: the components, then str, then full */
	block = bson_malloc(sizeof(bpath_comp_t) * n + 2 * (len + 1));
	p->comp = (bpath_comp_t *)block;
	p->str = (char *)(block + sizeof(bpath_comp_t) * n);
	p->full = p->str + len + 1;
	memcpy(p->str, path, len + 1);
	memcpy(p->full, path, len + 1);
	p->n = n;
	s = p->str;
	for (i = 0; i < n; i++) {
		char *dot = strchr(s, '.');
		uint32_t idx;

		if (dot != NULL)
			*dot = '\0';
		p->comp[i].s = s;
		p->comp[i].len = (uint32_t)strlen(s);
		p->comp[i].idx = bpath_is_array_index(s, p->comp[i].len, &idx) ? (int32_t)idx : -1;
		s = dot != NULL ? dot + 1 : s + p->comp[i].len;
	}
}

void
bpath_destroy(bpath_t *p)
{
	if (p == NULL)
		return;
	bson_free(p->comp);   /* the block str and full live in */
	p->str = p->full = NULL;
	p->comp = NULL;
	p->n = 0;
}

/* Position iter on the first field named comp; false when absent. */
static bool
find_field(bson_iter_t *iter, const char *comp, uint32_t len)
{
	while (bson_iter_next(iter)) {
		if (bson_iter_key_len(iter) == len && memcmp(bson_iter_key(iter), comp, len) == 0)
			return true;
	}
	return false;
}

static bool
find_position(bson_iter_t *iter, uint32_t idx)
{
	uint32_t k = 0;

	while (bson_iter_next(iter)) {
		if (k++ == idx)
			return true;
	}
	return false;
}

/* Exact descent from iter (positioned on a container) through comps. */
static bool
get_exact(bson_iter_t *cur, const char *path, bson_iter_t *out)
{
	const char *s = path;

	for (;;) {
		const char *dot = strchr(s, '.');
		uint32_t len = dot ? (uint32_t)(dot - s) : (uint32_t)strlen(s);
		bson_type_t t = bson_iter_type(cur);
		bson_iter_t child;
		uint32_t idx;

		if (t == BSON_TYPE_DOCUMENT) {
			if (!bson_iter_recurse(cur, &child) || !find_field(&child, s, len))
				return false;
		} else if (t == BSON_TYPE_ARRAY) {
			if (!bpath_is_array_index(s, len, &idx))
				return false;
			if (!bson_iter_recurse(cur, &child) || !find_position(&child, idx))
				return false;
		} else {
			return false;
		}
		*cur = child;
		if (dot == NULL)
			break;
		s = dot + 1;
	}
	*out = *cur;
	return true;
}

bool
bpath_get(const bson_t *doc, const char *path, bson_iter_t *out)
{
	const char *dot = strchr(path, '.');
	uint32_t len = dot ? (uint32_t)(dot - path) : (uint32_t)strlen(path);
	bson_iter_t it;

	if (!bson_iter_init(&it, doc) || !find_field(&it, path, len))
		return false;
	if (dot == NULL) {
		*out = it;
		return true;
	}
	return get_exact(&it, dot + 1, out);
}

bool
bpath_get_value(const bson_value_t *v, const char *path, bson_value_t *out)
{
	bson_iter_t it, child;
	const char *dot;
	uint32_t len, idx;

	if (path[0] == '\0') {
		*out = *v;
		return true;
	}
	if (v->value_type != BSON_TYPE_DOCUMENT && v->value_type != BSON_TYPE_ARRAY)
		return false;
	if (!bson_iter_init_from_data(&it, v->value.v_doc.data, v->value.v_doc.data_len))
		return false;
	dot = strchr(path, '.');
	len = dot ? (uint32_t)(dot - path) : (uint32_t)strlen(path);
	if (v->value_type == BSON_TYPE_DOCUMENT) {
		if (!find_field(&it, path, len))
			return false;
	} else {
		if (!bpath_is_array_index(path, len, &idx) || !find_position(&it, idx))
			return false;
	}
	if (dot != NULL) {
		if (!get_exact(&it, dot + 1, &child))
			return false;
		it = child;
	}
	*out = *bson_iter_value(&it);
	return true;
}

/* ---- the query walk ----------------------------------------------------- */

typedef struct walk {
	const bpath_t *p;
	bool expand;
	bpath_visit_fn fn;
	void *ctx;
} walk_t;

static bool
yield(const walk_t *w, const bson_value_t *v, int32_t pos, bool through, bool leaf_elem)
{
	bpath_hit_t h;

	h.value = *v;
	h.array_pos = pos;
	h.through_array = through;
	h.leaf_element = leaf_elem;
	return w->fn(&h, w->ctx);
}

static bool
yield_missing(const walk_t *w, int32_t pos, bool through)
{
	bson_value_t v;

	memset(&v, 0, sizeof v);
	v.value_type = BSON_TYPE_EOD;
	return yield(w, &v, pos, through, false);
}

static bool walk_array(const walk_t *w, const bson_value_t *arr, uint32_t r, int32_t pos,
                       bool through);

static bool
walk_leaf_array(const walk_t *w, const bson_value_t *arr, int32_t pos, bool through)
{
	biter_t it;
	int32_t k = 0;

	if (w->expand && biter_init_value(&it, arr)) {
		while (biter_next(&it)) {
			bson_value_t e;
			biter_value(&it, &e);
			if (!yield(w, &e, pos < 0 ? k : pos, true, true))
				return false;
			k++;
		}
	}
	return yield(w, arr, pos, through, false);
}

/* Position it on the field named comp; false when absent. */
static bool
bfind_field(biter_t *it, const char *comp, uint32_t len)
{
	return biter_find(it, comp, len);
}

/* Walk components start.. of the path inside one document. */
static bool
walk_doc(const walk_t *w, const uint8_t *data, uint32_t len, uint32_t start, int32_t pos,
         bool through)
{
	const bpath_t *p = w->p;
	biter_t it;
	uint32_t i = start;

	if (!biter_init(&it, data, len))
		return yield_missing(w, pos, through);
	for (;;) {
		bson_value_t v;

		if (!bfind_field(&it, p->comp[i].s, p->comp[i].len))
			return yield_missing(w, pos, through);
		biter_value(&it, &v);
		if (v.value_type == BSON_TYPE_ARRAY) {
			if (i == p->n - 1)
				return walk_leaf_array(w, &v, pos, through);
			return walk_array(w, &v, i + 1, pos, through);
		}
		if (i == p->n - 1)
			return yield(w, &v, pos, through, false);
		if (v.value_type != BSON_TYPE_DOCUMENT)
			return yield_missing(w, pos, through);
		if (!biter_init_value(&it, &v))
			return yield_missing(w, pos, through);
		i++;
	}
}

/* An array met in the middle of the path; r is the first component of the
 * rest (r < n). */
static bool
walk_array(const walk_t *w, const bson_value_t *arr, uint32_t r, int32_t pos, bool through)
{
	const bpath_t *p = w->p;
	const bpath_comp_t *next = &p->comp[r];
	bool entire_rest = (r == p->n - 1);
	biter_t it;
	int32_t k = 0;

	if (!biter_init_value(&it, arr))
		return true;
	while (biter_next(&it)) {
		bson_value_t xv;
		const bson_value_t *x = &xv;
		bool offset = (next->idx == k);

		biter_value(&it, &xv);
		if (x->value_type == BSON_TYPE_DOCUMENT) {
			if (!walk_doc(w, x->value.v_doc.data, x->value.v_doc.data_len, r,
			              pos < 0 ? k : pos, true))
				return false;
			if (offset) {
				if (entire_rest) {
					if (!yield(w, x, pos, through, false))
						return false;
				} else if (!walk_doc(w, x->value.v_doc.data, x->value.v_doc.data_len,
				                     r + 1, pos, through)) {
					return false;
				}
			}
		} else if (offset) {
			if (entire_rest) {
				if (!yield(w, x, pos, through, false))
					return false;
			} else if (x->value_type == BSON_TYPE_ARRAY) {
				if (!walk_array(w, x, r + 1, pos, through))
					return false;
			}
		}
		k++;
	}
	return true;
}

bool
bpath_walk_data(const uint8_t *data, uint32_t len, const bpath_t *p, bool expand_leaf_arrays,
                bpath_visit_fn fn, void *ctx)
{
	walk_t w = {p, expand_leaf_arrays, fn, ctx};

	return walk_doc(&w, data, len, 0, -1, false);
}

bool
bpath_walk_compiled(const bson_t *doc, const bpath_t *p, bool expand_leaf_arrays,
                    bpath_visit_fn fn, void *ctx)
{
	return bpath_walk_data(bson_get_data(doc), doc->len, p, expand_leaf_arrays, fn, ctx);
}

bool
bpath_walk(const bson_t *doc, const char *path, bool expand_leaf_arrays, bpath_visit_fn fn,
           void *ctx)
{
	bpath_t p;
	bool r;

	bpath_init(&p, path);
	r = bpath_walk_compiled(doc, &p, expand_leaf_arrays, fn, ctx);
	bpath_destroy(&p);
	return r;
}

bool
bpath_is_dbref_field(const char *comp, size_t len)
{
	return (len == 3 && (memcmp(comp, "$id", 3) == 0 || memcmp(comp, "$db", 3) == 0)) ||
	    (len == 4 && memcmp(comp, "$ref", 4) == 0);
}
