/*
 * keygen_geo.c -- index keys of 2dsphere and 2d indexes (mongod's
 * s2_key_generator.cpp and 2d_key_generator.cpp).
 *
 * 2dsphere: each geo field's geometries (the values its path reaches, a
 * trailing array kept whole as a legacy pair) become S2 cells
 * (geo/geo.h), each a NumberLong key part; other fields are indexed as
 * btree fields (arrays exploded, collation applied); the keys are the
 * cartesian product.  Version 2+ indexes skip documents without any geo
 * field.  A geometry that does not parse fails the write: 16755 "Can't
 * extract geo keys: <document>  <reason>".
 *
 * 2d: the first field's locations (a point, or an array of points) become
 * 8-byte GeoHash BinData (subtype 128); the other fields their value.
 * Documents without a location are not indexed; a point out of [min,
 * max] fails with 13027.
 *
 * 2dsphere_bucket (a time-series collection's buckets, key data.<field>):
 * the geometries of every measurement in the bucket's column
 * (bucket_column.h: uncompressed or BSONColumn), each covered as a
 * 2dsphere field's would be, all their cells one field's keys (mongod's
 * getS2Keys over extractAllElementsAlongBucketPath); null, undefined, {}
 * and [] are no geometry, a bucket without any has no keys.
 */
#include "query/keygen.h"

#include <stdlib.h>
#include <string.h>

#include "bson/keystring.h"
#include "bson/path.h"
#include "bson/value.h"
#include "geo/geo.h"
#include "query/bucket_column.h"

#define GEO_MAX_KEYS 100000

typedef struct vlist {
	bson_value_t *v;
	uint8_t (*bin)[8];       /* storage for BinData parts */
	size_t n, cap;
	bool owns_bin;           /* BinData parts point into bin (2d hashes) */
} vlist_t;

static bson_value_t *
vlist_push(vlist_t *l)
{
	if (l->n == l->cap) {
		l->cap = l->cap ? l->cap * 2 : 8;
		l->v = bson_realloc(l->v, sizeof(bson_value_t) * l->cap);
		l->bin = bson_realloc(l->bin, 8 * l->cap);
		/* BinData parts point into bin: re-point them */
		for (size_t i = 0; l->owns_bin && i < l->n; i++)
			if (l->v[i].value_type == BSON_TYPE_BINARY)
				l->v[i].value.v_binary.data = l->bin[i];
	}
	memset(&l->v[l->n], 0, sizeof(bson_value_t));
	return &l->v[l->n++];
}

static void
vlist_free(vlist_t *l)
{
	bson_free(l->v);
	bson_free(l->bin);
}

bool
keygen_geo_kind(const storage_index_t *idx, bool *is_2d)
{
	bson_iter_t it;

	if (idx->key == NULL || !bson_iter_init(&it, idx->key))
		return false;
	while (bson_iter_next(&it))
		if (BSON_ITER_HOLDS_UTF8(&it)) {
			const char *s = bson_iter_utf8(&it, NULL);
			if (strcmp(s, "2dsphere") == 0 || strcmp(s, "2d") == 0 || strcmp(s, "2dsphere_bucket") == 0) {
				if (is_2d != NULL)
					*is_2d = strcmp(s, "2d") == 0;
				return true;
			}
		}
	return false;
}

typedef struct collect {
	vlist_t *out;
	bool explode;            /* literal fields: a leaf array's elements */
	bool any;
} collect_t;

static bool
collect_visit(const bpath_hit_t *h, void *ctx)
{
	collect_t *c = ctx;

	if (h->value.value_type == BSON_TYPE_EOD)
		return true;
	c->any = true;
	*vlist_push(c->out) = h->value;
	return true;
}

/* The values a path reaches (intermediate arrays traversed). */
static void
collect_path(const bson_t *doc, const char *path, bool expand_leaf, vlist_t *out, bool *any)
{
	bpath_t p;
	collect_t c = {out, expand_leaf, false};

	bpath_init(&p, path);
	bpath_walk_compiled(doc, &p, false, collect_visit, &c);
	bpath_destroy(&p);
	*any = c.any;
}

static int
extract_error(const bson_t *doc, terr_t *reason, terr_t *err)
{
	char *d = bv_doc_to_mongo_string(doc);

	terr_set(err, 16755, "Can't extract geo keys: %s  %s", d, reason->msg ? reason->msg : "");
	bson_free(d);
	terr_clear(reason);
	return -1;
}

/* A literal (non-geo) field of a 2dsphere index: its values, arrays
 * exploded, an empty array as undefined, missing as null. */
static void
literal_values(const bson_t *doc, const char *path, vlist_t *out)
{
	vlist_t raw = {0};
	bool any;

	collect_path(doc, path, false, &raw, &any);
	for (size_t i = 0; i < raw.n; i++) {
		const bson_value_t *v = &raw.v[i];
		bson_iter_t it;
		bool elems = false;
		if (v->value_type == BSON_TYPE_ARRAY &&
		    bson_iter_init_from_data(&it, v->value.v_doc.data, v->value.v_doc.data_len)) {
			while (bson_iter_next(&it)) {
				*vlist_push(out) = *bson_iter_value(&it);
				elems = true;
			}
			if (!elems)
				vlist_push(out)->value_type = BSON_TYPE_UNDEFINED;
			continue;
		}
		*vlist_push(out) = *v;
	}
	if (out->n == 0)
		vlist_push(out)->value_type = BSON_TYPE_NULL;
	vlist_free(&raw);
}

static int
s2_field_cells(const geo_s2_params_t *prm, const bson_t *doc, const char *path, vlist_t *out,
               bool *any, terr_t *err)
{
	vlist_t raw = {0};
	int ret = 0;

	collect_path(doc, path, false, &raw, any);
	for (size_t i = 0; i < raw.n; i++) {
		geo_shape_t s;
		const bson_value_t *e = &raw.v[i];
		bson_iter_t eit;
		/* null, an empty array or document: no geometry here (mongod indexes nothing) */
		if (e->value_type == BSON_TYPE_NULL || e->value_type == BSON_TYPE_UNDEFINED ||
		    ((e->value_type == BSON_TYPE_ARRAY || e->value_type == BSON_TYPE_DOCUMENT) &&
		     bson_iter_init_from_data(&eit, e->value.v_doc.data, e->value.v_doc.data_len) &&
		     !bson_iter_next(&eit)))
			continue;
		terr_t why = TERR_INIT;
		uint64_t *cells = NULL;
		size_t n = 0;
		const char *last = strrchr(path, '.');

		if (geo_parse_stored(last ? last + 1 : path, &raw.v[i], &s, &why) != 0 ||
		    geo_s2_cells(prm, &s, &cells, &n, &why) != 0) {
			geo_shape_destroy(&s);
			ret = extract_error(doc, &why, err);
			break;
		}
		if (n == 0) {
			char *d = bv_doc_to_mongo_string(doc);
			terr_set(err, 16756, "Unable to generate keys for (likely malformed) geometry: %s", d);
			bson_free(d);
			free(cells);
			geo_shape_destroy(&s);
			ret = -1;
			break;
		}
		for (size_t k = 0; k < n; k++) {
			bson_value_t *v = vlist_push(out);
			v->value_type = BSON_TYPE_INT64;
			v->value.v_int64 = (int64_t)cells[k];
		}
		free(cells);
		geo_shape_destroy(&s);
	}
	vlist_free(&raw);
	return ret;
}

typedef struct bucket_cells {
	const geo_s2_params_t *prm;
	const bson_t *doc;
	const char *field;
	vlist_t *out;
	terr_t *err;
	int ret;
} bucket_cells_t;

/* One measurement's value of a 2dsphere_bucket field: its cells. */
static bool
bucket_cell_visit(void *ctx, const bson_value_t *e)
{
	bucket_cells_t *b = ctx;
	geo_shape_t s;
	terr_t why = TERR_INIT;
	uint64_t *cells = NULL;
	size_t n = 0;
	bson_iter_t eit;
	const char *last = strrchr(b->field, '.');

	if (e->value_type == BSON_TYPE_NULL || e->value_type == BSON_TYPE_UNDEFINED ||
	    ((e->value_type == BSON_TYPE_ARRAY || e->value_type == BSON_TYPE_DOCUMENT) &&
	     bson_iter_init_from_data(&eit, e->value.v_doc.data, e->value.v_doc.data_len) && !bson_iter_next(&eit)))
		return true;
	if (geo_parse_stored(last ? last + 1 : b->field, e, &s, &why) != 0 ||
	    geo_s2_cells(b->prm, &s, &cells, &n, &why) != 0) {
		geo_shape_destroy(&s);
		b->ret = extract_error(b->doc, &why, b->err);
		return false;
	}
	for (size_t k = 0; k < n; k++) {
		bson_value_t *v = vlist_push(b->out);
		v->value_type = BSON_TYPE_INT64;
		v->value.v_int64 = (int64_t)cells[k];
	}
	free(cells);
	geo_shape_destroy(&s);
	if (b->out->n > GEO_MAX_KEYS) {
		b->ret = terr_set(b->err, 237, "Maximum number of generated keys exceeded.");
		return false;
	}
	return true;
}

static int
cell_cmp(const void *a, const void *b)
{
	int64_t x = ((const bson_value_t *)a)->value.v_int64, y = ((const bson_value_t *)b)->value.v_int64;

	return x < y ? -1 : x > y;
}

/* A 2dsphere_bucket field (data.<field>): the cells of every measurement. */
static int
s2_bucket_cells(const geo_s2_params_t *prm, const bson_t *doc, const char *path, vlist_t *out, terr_t *err)
{
	bucket_cells_t b = {prm, doc, strncmp(path, "data.", 5) == 0 ? path + 5 : path, out, err, 0};

	if (strncmp(path, "data.", 5) != 0)
		return 0;   /* not a bucket column: no geometry */
	RET(bucket_column_walk(doc, b.field, bucket_cell_visit, &b, err));
	if (b.ret == 0 && out->n > 1) {
		/* measurements at one place share cells: each key once */
		size_t w = 1;
		qsort(out->v, out->n, sizeof(bson_value_t), cell_cmp);
		for (size_t i = 1; i < out->n; i++)
			if (out->v[i].value.v_int64 != out->v[w - 1].value.v_int64)
				out->v[w++] = out->v[i];
		out->n = w;
	}
	return b.ret;
}

typedef struct prod {
	vlist_t *lists;
	bool *desc;
	int n;
	const coll_t *coll;
	storage_key_add_fn add;
	void *ctx;
	keystring_t ks, tb;
	size_t emitted;
} prod_t;

static int
product(prod_t *p, int i, const bson_value_t **pick, terr_t *err)
{
	if (i == p->n) {
		if (++p->emitted > GEO_MAX_KEYS)
			return terr_set(err, 237, "Maximum number of generated keys exceeded.");
		keystring_reset(&p->ks);
		keystring_reset(&p->tb);
		for (int k = 0; k < p->n; k++)
			keystring_append_value_tb_coll(&p->ks, &p->tb, pick[k], p->desc[k],
			                               pick[k]->value_type == BSON_TYPE_INT64 ||
			                               pick[k]->value_type == BSON_TYPE_BINARY ? NULL : p->coll);
		p->add(p->ctx, p->ks.buf, p->ks.len, p->tb.buf, p->tb.len);
		return 0;
	}
	for (size_t k = 0; k < p->lists[i].n; k++) {
		pick[i] = &p->lists[i].v[k];
		RET(product(p, i + 1, pick, err));
	}
	return 0;
}

static int
emit_product(const storage_index_t *idx, vlist_t *lists, bool *desc, int n, storage_key_add_fn add,
             void *ctx, terr_t *err)
{
	prod_t p = {lists, desc, n, idx->collation, add, ctx};
	const bson_value_t *pick[KEYGEN_MAX_FIELDS];
	int ret;

	keystring_init(&p.ks);
	keystring_init(&p.tb);
	ret = product(&p, 0, pick, err);
	keystring_destroy(&p.ks);
	keystring_destroy(&p.tb);
	return ret;
}

static int
s2_keys(const storage_index_t *idx, const bson_t *doc, storage_key_add_fn add, void *ctx, terr_t *err)
{
	vlist_t lists[KEYGEN_MAX_FIELDS];
	bool desc[KEYGEN_MAX_FIELDS];
	geo_s2_params_t prm;
	bson_iter_t it;
	bool have_geo = false;
	int n = 0, ret = 0;

	RET(geo_s2_params(idx->spec, &prm, err));
	memset(lists, 0, sizeof lists);
	bson_iter_init(&it, idx->key);
	while (bson_iter_next(&it) && n < KEYGEN_MAX_FIELDS) {
		const char *path = bson_iter_key(&it);
		desc[n] = false;
		if (BSON_ITER_HOLDS_UTF8(&it) && strcmp(bson_iter_utf8(&it, NULL), "2dsphere_bucket") == 0) {
			if (s2_bucket_cells(&prm, doc, path, &lists[n], err) != 0)
				ERR(-1);
			if (lists[n].n > 0)
				have_geo = true;
			else
				vlist_push(&lists[n])->value_type = BSON_TYPE_NULL;
		} else if (BSON_ITER_HOLDS_UTF8(&it) && strcmp(bson_iter_utf8(&it, NULL), "2dsphere") == 0) {
			bool any = false;
			if (s2_field_cells(&prm, doc, path, &lists[n], &any, err) != 0)
				ERR(-1);
			if (lists[n].n > 0)
				have_geo = true;
			else
				vlist_push(&lists[n])->value_type = BSON_TYPE_NULL;
		} else {
			desc[n] = BSON_ITER_HOLDS_NUMBER(&it) && bson_iter_as_double(&it) < 0;
			literal_values(doc, path, &lists[n]);
		}
		n++;
	}
	/* version 2 and later: no geometry, no keys */
	if (!have_geo && prm.version >= 2)
		goto err;
	ret = emit_product(idx, lists, desc, n, add, ctx, err);
err:
	for (int i = 0; i < KEYGEN_MAX_FIELDS; i++)
		vlist_free(&lists[i]);
	return ret;
}

/* One location of a 2d index (GeoHashConverter::hash(obj, src)). */
static int
hash_location(const geo_2d_params_t *prm, const bson_t *doc, const bson_value_t *loc, vlist_t *out,
              terr_t *err)
{
	bson_iter_t it;
	const bson_value_t *x, *y;
	double dx, dy;
	uint64_t h;
	bson_value_t *v;
	char *d;

	bson_iter_init_from_data(&it, loc->value.v_doc.data, loc->value.v_doc.data_len);
	if (!bson_iter_next(&it)) {
		d = bv_doc_to_mongo_string(doc);
		terr_set(err, 13067, "geo field is empty :: caused by :: %s", d);
		bson_free(d);
		return -1;
	}
	x = bson_iter_value(&it);
	dx = bv_as_double(x);
	if (!bson_iter_next(&it)) {
		d = bv_doc_to_mongo_string(doc);
		terr_set(err, 13068, "geo field only has 1 element :: caused by :: %s", d);
		bson_free(d);
		return -1;
	}
	y = bson_iter_value(&it);
	dy = bv_as_double(y);
	if (!bv_is_number(x) || !bv_is_number(y)) {
		d = bv_doc_to_mongo_string(doc);
		terr_set(err, 13026, "geo values must be 'legacy coordinate pairs' for 2d indexes :: caused by :: %s", d);
		bson_free(d);
		return -1;
	}
	if (geo_2d_hash(prm, dx, dy, &h) != 0) {
		char lo[64], hi[64];
		snprintf(lo, sizeof lo, "%g", prm->min);
		snprintf(hi, sizeof hi, "%g", prm->max);
		d = bv_doc_to_mongo_string(doc);
		terr_set(err, 13027, "point not in interval of [ %s, %s ] :: caused by :: %s", lo, hi, d);
		bson_free(d);
		return -1;
	}
	out->owns_bin = true;
	v = vlist_push(out);
	v->value_type = BSON_TYPE_BINARY;
	v->value.v_binary.subtype = 128;
	v->value.v_binary.data_len = 8;
	geo_2d_hash_bytes(h, out->bin[out->n - 1]);
	v->value.v_binary.data = out->bin[out->n - 1];
	return 0;
}

static bool
is_obj(const bson_value_t *v)
{
	return v->value_type == BSON_TYPE_DOCUMENT || v->value_type == BSON_TYPE_ARRAY;
}

static int
twod_keys(const storage_index_t *idx, const bson_t *doc, storage_key_add_fn add, void *ctx, terr_t *err)
{
	vlist_t lists[KEYGEN_MAX_FIELDS];
	bool desc[KEYGEN_MAX_FIELDS];
	geo_2d_params_t prm;
	bson_iter_t it;
	int n = 0, ret = 0;

	RET(geo_2d_params(idx->spec, &prm, err));
	memset(lists, 0, sizeof lists);
	bson_iter_init(&it, idx->key);
	while (bson_iter_next(&it) && n < KEYGEN_MAX_FIELDS) {
		const char *path = bson_iter_key(&it);
		vlist_t raw = {0};
		bool any;
		desc[n] = false;
		collect_path(doc, path, false, &raw, &any);
		if (n == 0) {
			for (size_t i = 0; i < raw.n && ret == 0; i++) {
				bson_iter_t e;
				const bson_value_t *loc = &raw.v[i];
				if (!is_obj(loc))
					continue;
				/* an array (or object) of locations when its first element is one */
				if (bson_iter_init_from_data(&e, loc->value.v_doc.data, loc->value.v_doc.data_len) &&
				    bson_iter_next(&e) && is_obj(bson_iter_value(&e))) {
					bson_iter_init_from_data(&e, loc->value.v_doc.data, loc->value.v_doc.data_len);
					while (ret == 0 && bson_iter_next(&e)) {
						const bson_value_t *sub = bson_iter_value(&e);
						if (!is_obj(sub)) {
							char *d = bv_doc_to_mongo_string(doc);
							ret = terr_set(err, 16804, "location object expected, location array not in correct format :: caused by :: %s", d);
							bson_free(d);
							break;
						}
						ret = hash_location(&prm, doc, sub, &lists[0], err);
					}
				} else {
					ret = hash_location(&prm, doc, loc, &lists[0], err);
				}
			}
			vlist_free(&raw);
			if (ret != 0)
				goto err;
			if (lists[0].n == 0)
				goto err;   /* no location: not indexed */
		} else {
			desc[n] = BSON_ITER_HOLDS_NUMBER(&it) && bson_iter_as_double(&it) < 0;
			if (raw.n > 0)
				*vlist_push(&lists[n]) = raw.v[0];
			else
				vlist_push(&lists[n])->value_type = BSON_TYPE_NULL;
			vlist_free(&raw);
		}
		n++;
	}
	ret = emit_product(idx, lists, desc, n, add, ctx, err);
err:
	for (int i = 0; i < KEYGEN_MAX_FIELDS; i++)
		vlist_free(&lists[i]);
	return ret;
}

int
keygen_geo_keys(const storage_index_t *idx, const bson_t *doc, storage_key_add_fn add, void *ctx,
                terr_t *err)
{
	bool is_2d = false;

	if (!keygen_geo_kind(idx, &is_2d))
		return terr_set(err, TERR_INTERNAL_ERROR, "not a geo index");
	return is_2d ? twod_keys(idx, doc, add, ctx, err) : s2_keys(idx, doc, add, ctx, err);
}
