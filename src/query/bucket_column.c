/*
 * bucket_column.c -- one measurement field's values in a time-series bucket
 * (bucket_column.h), from an uncompressed column or through the time-series
 * layer's BSONColumn decoder.
 */
#include "query/bucket_column.h"

#include <stdatomic.h>
#include <string.h>

#include "bson/path.h"

static _Atomic(bucket_column_decode_fn) decoder;

void
bucket_column_set_decoder(bucket_column_decode_fn fn)
{
	atomic_store(&decoder, fn);
}

typedef struct walk {
	bucket_value_fn fn;
	void *ctx;
	bool stopped;
} walk_t;

static bool
sub_visit(const bpath_hit_t *h, void *ctx)
{
	walk_t *w = ctx;

	if (h->value.value_type == BSON_TYPE_EOD)
		return true;
	if (!w->fn(w->ctx, &h->value)) {
		w->stopped = true;
		return false;
	}
	return true;
}

/* Each element of a column object: the value, or what rest reaches in it. */
static void
walk_column(const uint8_t *data, uint32_t len, const bpath_t *rest, walk_t *w)
{
	bson_iter_t it;

	if (!bson_iter_init_from_data(&it, data, len))
		return;
	while (!w->stopped && bson_iter_next(&it)) {
		const bson_value_t *v = bson_iter_value(&it);
		if (rest == NULL) {
			if (!w->fn(w->ctx, v))
				w->stopped = true;
		} else if (v->value_type == BSON_TYPE_DOCUMENT || v->value_type == BSON_TYPE_ARRAY) {
			bpath_walk_data(v->value.v_doc.data, v->value.v_doc.data_len, rest, false, sub_visit, w);
		}
	}
}

int
bucket_column_walk(const bson_t *bucket, const char *field, bucket_value_fn fn, void *ctx, terr_t *err)
{
	bson_iter_t it, col;
	const char *dot = strchr(field, '.');
	size_t clen = dot != NULL ? (size_t)(dot - field) : strlen(field);
	walk_t w = {fn, ctx, false};
	bpath_t rest;
	bool has_rest = dot != NULL && dot[1] != '\0';
	int ret = 0;

	if (!bson_iter_init_find(&it, bucket, "data") || !BSON_ITER_HOLDS_DOCUMENT(&it) || !bson_iter_recurse(&it, &col))
		return 0;
	bool found = false;
	while (!found && bson_iter_next(&col))
		found = strlen(bson_iter_key(&col)) == clen && memcmp(bson_iter_key(&col), field, clen) == 0;
	if (!found)
		return 0;
	if (has_rest)
		bpath_init(&rest, dot + 1);
	if (BSON_ITER_HOLDS_DOCUMENT(&col)) {
		const bson_value_t *v = bson_iter_value(&col);
		walk_column(v->value.v_doc.data, v->value.v_doc.data_len, has_rest ? &rest : NULL, &w);
	} else if (BSON_ITER_HOLDS_BINARY(&col)) {
		bson_subtype_t st;
		uint32_t len;
		const uint8_t *data;
		bucket_column_decode_fn dec = atomic_load(&decoder);
		bson_t out = BSON_INITIALIZER;
		int count = 0;
		bson_iter_binary(&col, &st, &len, &data);
		if (st != 7) {
			/* not a column: no measurement values */
		} else if (dec == NULL) {
			ret = terr_set(err, TERR_NOT_IMPLEMENTED, "no BSONColumn decoder for a compressed bucket");
		} else if (dec(data, len, &out, &count, err) != 0) {
			ret = -1;
		} else {
			walk_column(bson_get_data(&out), out.len, has_rest ? &rest : NULL, &w);
		}
		bson_destroy(&out);
	}
	if (has_rest)
		bpath_destroy(&rest);
	return ret;
}

/* A BSON type as mongod's BSONType numbers it (MinKey is -1; a missing
 * field, EOO, 0) for the decision's comparisons. */
static int
type_num(const bson_iter_t *it)
{
	bson_type_t t = bson_iter_type(it);
	return t == BSON_TYPE_MINKEY ? -1 : (int)t;
}

/* The first field named key[0..klen) of the document or array at data (NULL:
 * none); *it is left on it.  Its type number, 0 when missing. */
static int
get_field(const uint8_t *data, uint32_t len, const char *key, size_t klen, bson_iter_t *it)
{
	if (data == NULL || !bson_iter_init_from_data(it, data, len) || !bson_iter_find_w_len(it, key, (int)klen))
		return 0;
	return type_num(it);
}

static bool
is_obj(int t)
{
	return t == BSON_TYPE_DOCUMENT || t == BSON_TYPE_ARRAY;
}

static void
embedded(const bson_iter_t *it, const uint8_t **data, uint32_t *len)
{
	if (BSON_ITER_HOLDS_DOCUMENT(it))
		bson_iter_document(it, len, data);
	else
		bson_iter_array(it, len, data);
}

/* The rest of the path from a point where control.min's prefix was not an
 * object (below Object) and control.max's was one: max decides alone. */
static bucket_array_t
decide_max(const uint8_t *max, uint32_t max_len, const char *field)
{
	const char *dot = strchr(field, '.');
	bson_iter_t it;
	int t;

	t = get_field(max, max_len, field, dot != NULL ? (size_t)(dot - field) : strlen(field), &it);
	if (dot == NULL)
		return t == BSON_TYPE_ARRAY ? BUCKET_ARRAY_YES : t > BSON_TYPE_ARRAY ? BUCKET_ARRAY_MAYBE : BUCKET_ARRAY_NO;
	if (t >= BSON_TYPE_ARRAY)
		return t == BSON_TYPE_ARRAY ? BUCKET_ARRAY_YES : BUCKET_ARRAY_MAYBE;
	if (t < BSON_TYPE_DOCUMENT)
		return BUCKET_ARRAY_NO;
	const uint8_t *d;
	uint32_t l;
	embedded(&it, &d, &l);
	return decide_max(d, l, dot + 1);
}

/* Both prefixes so far were objects: min and max are the documents there. */
static bucket_array_t
decide(const uint8_t *min, uint32_t min_len, const uint8_t *max, uint32_t max_len, const char *field)
{
	const char *dot = strchr(field, '.');
	size_t klen = dot != NULL ? (size_t)(dot - field) : strlen(field);
	bson_iter_t mi, ma;
	int tmin = get_field(min, min_len, field, klen, &mi);
	int tmax = get_field(max, max_len, field, klen, &ma);

	if (dot == NULL && (tmin == 0) != (tmax == 0))
		return BUCKET_ARRAY_MAYBE;   /* mongod: "Malformed control summary" */
	if (dot == NULL && tmin == 0)
		return BUCKET_ARRAY_NO;      /* the field is in no measurement */
	if (tmin <= BSON_TYPE_ARRAY && tmax >= BSON_TYPE_ARRAY)
		return tmin == BSON_TYPE_ARRAY || tmax == BSON_TYPE_ARRAY ? BUCKET_ARRAY_YES : BUCKET_ARRAY_MAYBE;
	if (dot == NULL || (tmin != BSON_TYPE_DOCUMENT && tmax != BSON_TYPE_DOCUMENT))
		return BUCKET_ARRAY_NO;
	/* undecided: one of them is an object */
	const uint8_t *dmin, *dmax;
	uint32_t lmin, lmax;
	if (!is_obj(tmin)) {
		embedded(&ma, &dmax, &lmax);
		return decide_max(dmax, lmax, dot + 1);
	}
	if (!is_obj(tmax))
		return BUCKET_ARRAY_MAYBE;   /* mongod would read a scalar max as an object */
	embedded(&mi, &dmin, &lmin);
	embedded(&ma, &dmax, &lmax);
	return decide(dmin, lmin, dmax, lmax, dot + 1);
}

bucket_array_t
bucket_field_array_decision(const bson_t *bucket, const char *field)
{
	bson_iter_t it, c;
	const uint8_t *min = NULL, *max = NULL;
	uint32_t min_len = 0, max_len = 0;

	if (!bson_iter_init_find(&it, bucket, "control") || !BSON_ITER_HOLDS_DOCUMENT(&it) ||
	    !bson_iter_recurse(&it, &c))
		return BUCKET_ARRAY_MAYBE;
	while (bson_iter_next(&c)) {
		if (!BSON_ITER_HOLDS_DOCUMENT(&c))
			continue;
		if (min == NULL && strcmp(bson_iter_key(&c), "min") == 0)
			bson_iter_document(&c, &min_len, &min);
		else if (max == NULL && strcmp(bson_iter_key(&c), "max") == 0)
			bson_iter_document(&c, &max_len, &max);
	}
	if (min == NULL || max == NULL)
		return BUCKET_ARRAY_MAYBE;
	return decide(min, min_len, max, max_len, field);
}

typedef struct has_array {
	const char *rest;   /* the path after the column's name, NULL when none */
	bool found;
} has_array_t;

/* One measurement's value of the column: an array along the rest of the path? */
static bool
has_array_visit(void *ctx, const bson_value_t *v)
{
	has_array_t *h = ctx;
	const char *p = h->rest;
	bson_iter_t it;
	int t = (int)v->value_type;
	const uint8_t *data = NULL;
	uint32_t len = 0;

	if (is_obj(t)) {
		data = v->value.v_doc.data;
		len = v->value.v_doc.data_len;
	}
	while (p != NULL) {
		const char *dot = strchr(p, '.');
		if (t == BSON_TYPE_ARRAY) {
			h->found = true;
			return false;
		}
		if (t != BSON_TYPE_DOCUMENT)
			return true;
		t = get_field(data, len, p, dot != NULL ? (size_t)(dot - p) : strlen(p), &it);
		if (is_obj(t))
			embedded(&it, &data, &len);
		p = dot != NULL ? dot + 1 : NULL;
	}
	if (t == BSON_TYPE_ARRAY) {
		h->found = true;
		return false;
	}
	return true;
}

int
bucket_column_has_array(const bson_t *bucket, const char *field, bool *found, terr_t *err)
{
	const char *dot = strchr(field, '.');
	char *top = bson_strndup(field, dot != NULL ? (size_t)(dot - field) : strlen(field));
	has_array_t h = {dot != NULL ? dot + 1 : NULL, false};
	int ret = bucket_column_walk(bucket, top, has_array_visit, &h, err);

	bson_free(top);
	*found = h.found;
	return ret;
}
