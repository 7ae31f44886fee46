/*
 * plan_geo.c -- the geo access paths (see plan_geo.h): the near search by
 * rings over a 2dsphere index, the measured-and-sorted near over a
 * collection scan, and the covering-bounded IXSCAN for $geoWithin /
 * $geoIntersects.  Cells and distances come from geo/.
 */
#include "query/plan_geo.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bson/keystring.h"
#include "bson/path.h"
#include "bson/value.h"
#include "common/mem.h"
#include "common/opctx.h"
#include "geo/geo.h"
#include "query/keygen.h"

typedef enum { GR_NEAR_RINGS, GR_NEAR_SCAN, GR_COVER } gr_mode_t;

typedef struct gr_hit {
	int64_t recid;
	double dist;
} gr_hit_t;

typedef struct ivl {
	int64_t lo, hi;
} ivl_t;

struct geo_run {
	gr_mode_t mode;
	int index;                  /* -1: none (near over a collection scan without a usable index) */
	bool is_2d;
	geo_near_t near;            /* a copy (index_2d set) */
	char *path;                 /* the geo field */
	geo_s2_params_t prm;
	double min_q, max_q;        /* distance bounds in the query's units */
	double to_rad;              /* query units -> radians (rings) */
	/* near: the current ring's results, sorted */
	gr_hit_t *hits;
	size_t nhits, cap, pos;
	double inner, width;        /* ring bounds in query units */
	bool done, scanned;
	double cur_dist;
	bson_value_t cur_loc;
	bool has_loc, loc_known;
	bson_t cur_doc;             /* a view of the current document (valid as plan_exec_next's) */
	/* GR_COVER: the covering intervals, their scan state and the seen set */
	ivl_t *iv;
	size_t niv, ivpos;
	int64_t *seen;
	size_t seen_cap, seen_n;
	const geo_shape_t *shape;
	uint64_t near_bits;         /* the filter's $near conjunct (rings answer it: not re-checked) */
	/* GR_COVER for returnKey (plan_geo_want_keys): per hit, the index entry
	 * that gave it first (its key bytes, then its type bits) */
	bool want_keys;
	struct gr_key {
		uint8_t *bytes;
		size_t klen, tblen;
	} *hkeys;
	size_t hkeys_cap;
};

/* ---- a set of RecordIds (open addressing, 0 = empty) ---------------------- */

static bool
seen_add(geo_run_t *r, int64_t v)
{
	size_t i;

	if ((r->seen_n + 1) * 2 > r->seen_cap) {
		size_t ncap = r->seen_cap ? r->seen_cap * 2 : 256;
		int64_t *ns = tm_malloc0(sizeof(int64_t) * ncap);
		for (i = 0; i < r->seen_cap; i++)
			if (r->seen[i] != 0) {
				size_t j = ((uint64_t)r->seen[i] * 0x9E3779B97F4A7C15ull >> 20) & (ncap - 1);
				while (ns[j] != 0)
					j = (j + 1) & (ncap - 1);
				ns[j] = r->seen[i];
			}
		bson_free(r->seen);
		r->seen = ns;
		r->seen_cap = ncap;
	}
	v = v == 0 ? INT64_MIN : v;
	for (i = ((uint64_t)v * 0x9E3779B97F4A7C15ull >> 20) & (r->seen_cap - 1); r->seen[i] != 0;
	     i = (i + 1) & (r->seen_cap - 1))
		if (r->seen[i] == v)
			return false;
	r->seen[i] = v;
	r->seen_n++;
	return true;
}

static void
seen_clear(geo_run_t *r)
{
	if (r->seen != NULL)
		memset(r->seen, 0, sizeof(int64_t) * r->seen_cap);
	r->seen_n = 0;
}

/* ---- setup ------------------------------------------------------------------ */

/* A 2d / 2dsphere field of ix at path (bucket: a 2dsphere_bucket field
 * instead, for $_internalBucketGeoWithin; the two never answer each other's
 * predicates). */
static bool
index_geo_field_kind(const storage_index_t *ix, const char *path, bool bucket, bool *is_2d, int *pos)
{
	bson_iter_t it;
	int i = 0;

	if (!bson_iter_init(&it, ix->key))
		return false;
	while (bson_iter_next(&it)) {
		if (BSON_ITER_HOLDS_UTF8(&it) && strcmp(bson_iter_key(&it), path) == 0) {
			const char *s = bson_iter_utf8(&it, NULL);
			if (bucket ? strcmp(s, "2dsphere_bucket") == 0 : (strcmp(s, "2dsphere") == 0 || strcmp(s, "2d") == 0)) {
				*is_2d = s[1] == 'd' && s[2] == '\0';
				*pos = i;
				return true;
			}
		}
		i++;
	}
	return false;
}

static bool
index_geo_field(const storage_index_t *ix, const char *path, bool *is_2d, int *pos)
{
	return index_geo_field_kind(ix, path, false, is_2d, pos);
}

static bool
hint_names(const bson_value_t *hint, const storage_index_t *ix)
{
	if (hint == NULL)
		return true;
	if (hint->value_type == BSON_TYPE_UTF8)
		return strcmp(hint->value.v_utf8.str, ix->name) == 0;
	if (hint->value_type == BSON_TYPE_DOCUMENT) {
		bson_t h;
		if (!bson_init_static(&h, hint->value.v_doc.data, hint->value.v_doc.data_len))
			return false;
		return bson_equal(&h, ix->key);
	}
	return false;
}

static bool
natural_in(const bson_t *d)
{
	return d != NULL && bson_has_field(d, "$natural");
}

static int
near_setup(const storage_coll_t *coll, const match_geo_info_t *gi, const plan_request_t *req,
           geo_run_t **out, terr_t *err)
{
	const geo_near_t *near = gi->near;
	geo_run_t *r;
	int best = -1, best_pos = 0;
	bool best_2d = false;

	if (natural_in(req->sort))
		return terr_set(err, TERR_BAD_VALUE, "geoNear expression not allowed with $natural sort order");
	if (req->hint != NULL && req->hint->value_type == BSON_TYPE_DOCUMENT) {
		bson_t h;
		if (bson_init_static(&h, req->hint->value.v_doc.data, req->hint->value.v_doc.data_len) &&
		    natural_in(&h))
			return terr_set(err, TERR_BAD_VALUE, "geoNear expression not allowed with $natural hint");
	}
	for (int i = 0; coll != NULL && i < coll->nindexes; i++) {
		const storage_index_t *ix = &coll->indexes[i];
		bool is2d;
		int pos;
		if (!index_geo_field(ix, gi->near_path, &is2d, &pos) || (ix->hidden && req->hint == NULL) ||
		    !hint_names(req->hint, ix))
			continue;
		/* a flat $near needs a 2d index; a 2d index measures legacy points only */
		if (near->flat && !is2d)
			continue;
		if (is2d && near->geojson && !near->is_near_sphere)
			continue;
		if (best < 0 || (best_pos != 0 && pos == 0)) {
			best = i;
			best_pos = pos;
			best_2d = is2d;
		}
	}
	if (best < 0 && coll != NULL) {
		char *s = near->flat ? bson_strdup("0") : bson_strdup("1");
		terr_set(err, 291,
		         "error processing query: ns=%s Tree: GEONEAR  field=%s maxdist=%g isNearSphere=%d\n"
		         "Sort: {}\nProj: {}\n planner returned error :: caused by :: unable to find index for "
		         "$geoNear query",
		         coll->ns, gi->near_path, near->max_dist, near->is_near_sphere ? 1 : 0);
		bson_free(s);
		return -1;
	}
	r = tm_malloc0(sizeof *r);
	r->index = best;
	r->is_2d = best_2d;
	r->near = *near;
	r->near.index_2d = best_2d;
	r->path = bson_strdup(gi->near_path);
	r->min_q = near->min_dist;
	r->max_q = near->max_dist;
	r->to_rad = near->unit_radians || (best_2d && !near->geojson) ? 1.0 : 1.0 / GEO_EARTH_RADIUS_M;
	if (coll != NULL && best >= 0 && !best_2d && best_pos == 0 &&
	    geo_s2_params(coll->indexes[best].spec, &r->prm, err) == 0) {
		r->mode = GR_NEAR_RINGS;
		r->inner = r->min_q;
		/* a first ring of about 100 m, doubled while rings come back (nearly) empty */
		r->width = 100.0 / GEO_EARTH_RADIUS_M / r->to_rad;
	} else {
		terr_clear(err);
		r->mode = GR_NEAR_SCAN;
	}
	*out = r;
	return 0;
}

int
plan_geo_setup(const storage_coll_t *coll, const match_t *m, const plan_request_t *req,
               geo_run_t **out, terr_t *err)
{
	match_geo_info_t gi;
	geo_run_t *r;

	*out = NULL;
	if (m == NULL)
		return 0;
	match_geo_info(m, &gi);
	if (gi.nnear > 1)
		return terr_set(err, TERR_BAD_VALUE, "Too many geoNear expressions");
	if (gi.nnear == 1) {
		if (!gi.near_top_level)
			return terr_set(err, TERR_BAD_VALUE, "geoNear must be top-level expr");
		if (match_has_text(m))
			return terr_set(err, TERR_BAD_VALUE, "text and geoNear not allowed in same query");
		if (near_setup(coll, &gi, req, out, err) != 0)
			return -1;
		(*out)->near_bits = match_geo_near_conjuncts(m);
		return 0;
	}
	/* $geoWithin / $geoIntersects on the first field of a 2dsphere index */
	if (gi.geo_path == NULL || coll == NULL || req->min != NULL || req->max != NULL)
		return 0;
	if (req->hint != NULL && !(req->hint->value_type == BSON_TYPE_UTF8 ||
	                           req->hint->value_type == BSON_TYPE_DOCUMENT))
		return 0;
	for (int i = 0; i < coll->nindexes; i++) {
		const storage_index_t *ix = &coll->indexes[i];
		const geo_shape_t *shape = gi.geo_shape;
		bool is2d;
		int pos;
		if (!index_geo_field_kind(ix, gi.geo_path, gi.geo_bucket, &is2d, &pos) || is2d || pos != 0 || ix->partial ||
		    (ix->hidden && req->hint == NULL) || !hint_names(req->hint, ix))
			continue;
		if (shape->s2 == NULL)
			continue;   /* flat shapes ($box...) are not answered by a 2dsphere index */
		r = tm_malloc0(sizeof *r);
		r->mode = GR_COVER;
		r->index = i;
		r->path = bson_strdup(gi.geo_path);
		r->shape = shape;
		if (geo_s2_params(ix->spec, &r->prm, err) != 0) {
			plan_geo_free(r);
			return -1;
		}
		*out = r;
		return 0;
	}
	return 0;
}

/* ---- covering intervals ------------------------------------------------------- */

static int
ivl_cmp(const void *a, const void *b)
{
	const ivl_t *x = a, *y = b;

	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/* Cells to int64 intervals: each cell's leaf range, plus its ancestors down
 * to the coarsest indexed level as points; sorted and merged. */
static void
cells_to_intervals(const geo_s2_params_t *p, const uint64_t *cells, size_t n, ivl_t **out, size_t *nout)
{
	size_t cap = n * 4 + 8, k = 0;
	ivl_t *iv = bson_malloc(sizeof(ivl_t) * cap);

	for (size_t i = 0; i < n; i++) {
		uint64_t lo, hi;
		int level = s2w_cell_level(cells[i]);
		s2w_cell_range(cells[i], &lo, &hi);
		if (k + 32 > cap) {
			cap = cap * 2 + 64;
			iv = bson_realloc(iv, sizeof(ivl_t) * cap);
		}
		iv[k].lo = (int64_t)lo;
		iv[k].hi = (int64_t)hi;
		k++;
		for (int l = level - 1; l >= p->coarsest && l >= 0; l--) {
			uint64_t a = s2w_cell_parent(cells[i], l);
			iv[k].lo = iv[k].hi = (int64_t)a;
			k++;
		}
	}
	qsort(iv, k, sizeof(ivl_t), ivl_cmp);
	{
		size_t w = 0;
		for (size_t i = 0; i < k; i++) {
			/* overlapping or adjacent (a parent's id sits between its
			 * second and third children's ranges): one interval */
			if (w > 0 && (iv[i].lo <= iv[w - 1].hi || (iv[w - 1].hi < INT64_MAX && iv[i].lo == iv[w - 1].hi + 1))) {
				if (iv[i].hi > iv[w - 1].hi)
					iv[w - 1].hi = iv[i].hi;
				continue;
			}
			iv[w++] = iv[i];
		}
		k = w;
	}
	*out = iv;
	*nout = k;
}

static int
open_interval(storage_session_t *s, storage_coll_t *coll, const storage_index_t *ix, const ivl_t *v,
              storage_cursor_t **cur, terr_t *err)
{
	keystring_t lo, hi;
	bson_value_t a = {.value_type = BSON_TYPE_INT64}, b = a;
	int rc;

	a.value.v_int64 = v->lo;
	b.value.v_int64 = v->hi;
	keystring_init(&lo);
	keystring_init(&hi);
	keystring_append_value(&lo, &a, false);
	keystring_append_value(&hi, &b, false);
	keystring_append_max(&hi);
	rc = storage_index_scan_open(s, coll, ix, lo.buf, lo.len, true, hi.buf, hi.len, true, false, cur, err);
	keystring_destroy(&lo);
	keystring_destroy(&hi);
	return rc;
}

/* ---- a document's distance ------------------------------------------------------ */

/* geo/'s least-distance walk over r's field (the location too when loc is
 * not NULL, borrowed from doc's bytes). */
static bool
doc_distance(const geo_run_t *r, const bson_t *doc, double *d, bson_value_t *loc)
{
	bpath_t p;
	bool found;

	bpath_init(&p, r->path);
	found = geo_near_doc_distance(&r->near, doc, &p, d, loc);
	bpath_destroy(&p);
	return found;
}

static int
hit_cmp(const void *a, const void *b)
{
	const gr_hit_t *x = a, *y = b;

	if (x->dist != y->dist)
		return x->dist < y->dist ? -1 : 1;
	return x->recid < y->recid ? -1 : x->recid > y->recid;
}

static void
hit_add(geo_run_t *r, int64_t recid, double d)
{
	if (r->nhits == r->cap) {
		r->cap = r->cap ? r->cap * 2 : 64;
		r->hits = bson_realloc(r->hits, sizeof(gr_hit_t) * r->cap);
	}
	r->hits[r->nhits].recid = recid;
	r->hits[r->nhits].dist = d;
	r->nhits++;
}

/* A fetched document: in [lo, hi) (hi inclusive when last) and matching? */
static int
consider(geo_run_t *r, const bson_t *doc, const match_t *m, int64_t recid, double lo, double hi,
         bool last, terr_t *err)
{
	double d;
	int rc;

	if (!doc_distance(r, doc, &d, NULL))
		return 0;
	if (d < lo || d < r->min_q || d > r->max_q || (last ? d > hi : d >= hi))
		return 0;
	if ((rc = match_exec_skip(m, r->near_bits, doc, err)) < 0)
		return -1;
	if (rc == 1)
		hit_add(r, recid, d);
	return 0;
}

/* The whole collection, measured and sorted (2d and compound near plans). */
static int
scan_all(geo_run_t *r, storage_session_t *s, storage_coll_t *coll, const match_t *m, plan_stats_t *st,
         terr_t *err)
{
	storage_cursor_t *cur = NULL;
	recid_t recid;
	bson_t doc;
	int rc, ret = 0;

	if (storage_scan_open(s, coll, false, &cur, err) != 0)
		return -1;
	while ((rc = storage_cursor_next(cur, &recid, &doc, NULL, NULL, err)) == 1) {
		st->docs_examined++;
		if (tm_interrupt_check(err) != 0)
			ERR(-1);
		if (consider(r, &doc, m, recid, -INFINITY, INFINITY, true, err) != 0)
			ERR(-1);
	}
	if (rc < 0)
		ERR(-1);
	if (r->nhits > 1)
		qsort(r->hits, r->nhits, sizeof(gr_hit_t), hit_cmp);
	r->done = true;
err:
	storage_cursor_close(cur);
	return ret;
}

/* One ring [inner, inner + width) over the index. */
static int
scan_ring(geo_run_t *r, storage_session_t *s, storage_coll_t *coll, const match_t *m, plan_stats_t *st,
          terr_t *err)
{
	const storage_index_t *ix = &coll->indexes[r->index];
	double outer = r->inner + r->width, lo = r->inner;
	bool last = false;
	uint64_t *cells = NULL;
	size_t ncells = 0, niv = 0;
	ivl_t *iv = NULL;
	int ret = 0;

	if (outer >= r->max_q || outer * r->to_rad >= M_PI) {
		outer = fmin(r->max_q, M_PI / r->to_rad);
		last = true;
	}
	if (s2w_cover_annulus(r->near.xyz, lo * r->to_rad, outer * r->to_rad, r->prm.coarsest,
	                      r->prm.finest, r->prm.max_cells, &cells, &ncells) != 0)
		return terr_set(err, TERR_INTERNAL_ERROR, "out of memory");
	cells_to_intervals(&r->prm, cells, ncells, &iv, &niv);
	free(cells);
	seen_clear(r);
	r->nhits = r->pos = 0;
	for (size_t i = 0; i < niv; i++) {
		storage_cursor_t *cur = NULL;
		recid_t recid;
		const uint8_t *key;
		size_t klen;
		bson_t unused;
		int rc;
		if (open_interval(s, coll, ix, &iv[i], &cur, err) != 0)
			ERR(-1);
		while ((rc = storage_cursor_next(cur, &recid, &unused, &key, &klen, err)) == 1) {
			bson_t doc;
			st->keys_examined++;
			if (tm_interrupt_check(err) != 0) {
				rc = -1;
				break;
			}
			if (!seen_add(r, recid))
				continue;
			if ((rc = storage_doc_get(s, coll, recid, &doc, err)) < 0)
				break;
			if (rc == 1) {
				rc = 1;
				continue;
			}
			st->docs_examined++;
			if (consider(r, &doc, m, recid, lo, outer, last, err) != 0) {
				rc = -1;
				break;
			}
			rc = 1;
		}
		storage_cursor_close(cur);
		if (rc < 0)
			ERR(-1);
	}
	if (r->nhits > 1)
		qsort(r->hits, r->nhits, sizeof(gr_hit_t), hit_cmp);
	if (r->nhits < 8)
		r->width *= 2;
	r->inner = outer;
	if (last)
		r->done = true;
err:
	bson_free(iv);
	return ret;
}

/* returnKey: the entry of the hit just added (the first of its document
 * the scan met: mongod's IXSCAN keeps that one when it deduplicates) */
static int
hkey_add(geo_run_t *r, storage_cursor_t *cur, const uint8_t *key, size_t klen, terr_t *err)
{
	const uint8_t *tb = NULL;
	size_t tblen = 0, i = r->nhits - 1;
	struct gr_key *k;

	if (storage_cursor_typebits(cur, &tb, &tblen, err) != 0)
		return -1;
	if (r->hkeys_cap < r->cap) {
		r->hkeys = bson_realloc(r->hkeys, sizeof(*r->hkeys) * r->cap);
		r->hkeys_cap = r->cap;
	}
	k = &r->hkeys[i];
	k->bytes = bson_malloc(klen + tblen + 1);
	memcpy(k->bytes, key, klen);
	if (tblen > 0)
		memcpy(k->bytes + klen, tb, tblen);
	k->klen = klen;
	k->tblen = tblen;
	return 0;
}

/* $geoWithin / $geoIntersects: the covering's keys, each document once,
 * collected first (nothing held between batches), then fetched and
 * filtered one by one. */
static int
cover_scan(geo_run_t *r, storage_session_t *s, storage_coll_t *coll, plan_stats_t *st, terr_t *err)
{
	const storage_index_t *ix = &coll->indexes[r->index];
	uint64_t *cells = NULL;
	size_t n = 0;

	if (s2w_cover(r->shape->s2, r->prm.coarsest, r->prm.finest, r->prm.max_cells, &cells, &n) != 0)
		return terr_set(err, TERR_INTERNAL_ERROR, "out of memory");
	cells_to_intervals(&r->prm, cells, n, &r->iv, &r->niv);
	free(cells);
	r->scanned = true;
	for (size_t i = 0; i < r->niv; i++) {
		storage_cursor_t *cur = NULL;
		recid_t recid;
		const uint8_t *key;
		size_t klen;
		bson_t unused;
		int rc;
		if (open_interval(s, coll, ix, &r->iv[i], &cur, err) != 0)
			return -1;
		while ((rc = storage_cursor_next(cur, &recid, &unused, &key, &klen, err)) == 1) {
			st->keys_examined++;
			if (tm_interrupt_check(err) != 0) {
				rc = -1;
				break;
			}
			if (!seen_add(r, recid)) {
				st->dups_dropped++;
				continue;
			}
			hit_add(r, recid, 0);
			if (r->want_keys && hkey_add(r, cur, key, klen, err) != 0) {
				rc = -1;
				break;
			}
		}
		storage_cursor_close(cur);
		if (rc < 0)
			return -1;
	}
	return 0;
}

static int
cover_next(geo_run_t *r, storage_session_t *s, storage_coll_t *coll, const match_t *m, recid_t *recid,
           bson_t *doc, plan_stats_t *st, terr_t *err)
{
	int rc;

	if (!r->scanned && cover_scan(r, s, coll, st, err) != 0)
		return -1;
	while (r->pos < r->nhits) {
		*recid = r->hits[r->pos++].recid;
		if ((rc = storage_doc_get(s, coll, *recid, doc, err)) < 0)
			return -1;
		if (rc == 1)
			continue;
		st->docs_examined++;
		if (tm_interrupt_check(err) != 0)
			return -1;
		if ((rc = match_exec(m, doc, NULL, err)) < 0)
			return -1;
		if (rc == 1) {
			st->access_returned++;
			return 1;
		}
	}
	return 0;
}

int
plan_geo_next(geo_run_t *r, storage_session_t *s, storage_coll_t *coll, const match_t *m, recid_t *recid,
              bson_t *doc, plan_stats_t *st, terr_t *err)
{
	int rc;

	if (coll == NULL)
		return 0;
	if (r->mode == GR_COVER)
		return cover_next(r, s, coll, m, recid, doc, st, err);
	for (;;) {
		while (r->pos < r->nhits) {
			gr_hit_t *h = &r->hits[r->pos++];
			if ((rc = storage_doc_get(s, coll, h->recid, doc, err)) < 0)
				return -1;
			if (rc == 1)
				continue;
			*recid = h->recid;
			r->cur_dist = h->dist;
			/* the location is measured again only when asked for (includeLocs) */
			r->cur_doc = *doc;
			r->loc_known = false;
			st->access_returned++;
			return 1;
		}
		if (r->done)
			return 0;
		if (r->mode == GR_NEAR_SCAN) {
			r->nhits = r->pos = 0;
			if (scan_all(r, s, coll, m, st, err) != 0)
				return -1;
		} else if (scan_ring(r, s, coll, m, st, err) != 0) {
			return -1;
		}
	}
}

void
plan_geo_want_keys(geo_run_t *r)
{
	if (r != NULL && !r->scanned)
		r->want_keys = true;
}

bool
plan_geo_cur_key(const geo_run_t *r, const uint8_t **key, size_t *klen, const uint8_t **tb, size_t *tblen)
{
	const struct gr_key *k;

	if (r == NULL || r->mode != GR_COVER || !r->want_keys || r->hkeys == NULL || r->pos == 0 ||
	    r->pos > r->nhits)
		return false;
	k = &r->hkeys[r->pos - 1];
	*key = k->bytes;
	*klen = k->klen;
	*tb = k->tblen > 0 ? k->bytes + k->klen : NULL;
	*tblen = k->tblen;
	return true;
}

bool
plan_geo_is_near(const geo_run_t *r)
{
	return r->mode != GR_COVER;
}

double
plan_geo_distance(const geo_run_t *r)
{
	return r->cur_dist;
}

bool
plan_geo_location(geo_run_t *r, bson_value_t *loc)
{
	if (!r->loc_known) {
		double d;
		r->has_loc = doc_distance(r, &r->cur_doc, &d, &r->cur_loc);
		r->loc_known = true;
	}
	if (!r->has_loc)
		return false;
	*loc = r->cur_loc;
	return true;
}

bool
plan_geo_indexed_predicate(const storage_coll_t *coll, const match_t *m)
{
	match_geo_info_t gi;

	if (coll == NULL || m == NULL)
		return false;
	match_geo_info(m, &gi);
	if (gi.geo_path == NULL)
		return false;
	for (int i = 0; i < coll->nindexes; i++) {
		bool is2d;
		int pos;
		if (!coll->indexes[i].hidden &&
		    index_geo_field_kind(&coll->indexes[i], gi.geo_path, gi.geo_bucket, &is2d, &pos))
			return true;
	}
	return false;
}

int
plan_geo_index(const geo_run_t *r)
{
	return r->index;
}

static void
append_i64(bson_t *out, const char *k, int64_t v)
{
	if (v >= INT32_MIN && v <= INT32_MAX)
		BSON_APPEND_INT32(out, k, (int32_t)v);
	else
		BSON_APPEND_INT64(out, k, v);
}

void
plan_geo_explain(const geo_run_t *r, const storage_coll_t *coll, const match_t *m, bool exec_stats,
                 const plan_stats_t *st, bson_t *out)
{
	const storage_index_t *ix = coll != NULL && r->index >= 0 && r->index < coll->nindexes
	                            ? &coll->indexes[r->index] : NULL;

	if (r->mode != GR_COVER) {
		BSON_APPEND_UTF8(out, "stage", r->is_2d ? "GEO_NEAR_2D" : "GEO_NEAR_2DSPHERE");
		if (exec_stats) {
			append_i64(out, "nReturned", st->returned);
			BSON_APPEND_INT32(out, "executionTimeMillisEstimate", (int32_t)(st->time_us / 1000));
		}
		if (ix != NULL) {
			BSON_APPEND_DOCUMENT(out, "keyPattern", ix->key);
			BSON_APPEND_UTF8(out, "indexName", ix->name);
			BSON_APPEND_INT32(out, "indexVersion", 2);
		}
		if (exec_stats) {
			append_i64(out, "keysExamined", st->keys_examined);
			append_i64(out, "docsExamined", st->docs_examined);
		}
		return;
	}
	{
		bson_t in, b, arr;
		bson_t *rest = match_to_bson(m);
		uint32_t k = 0;
		BSON_APPEND_UTF8(out, "stage", "FETCH");
		if (rest != NULL) {
			BSON_APPEND_DOCUMENT(out, "filter", rest);
			bson_destroy(rest);
		}
		if (exec_stats) {
			append_i64(out, "nReturned", st->returned);
			append_i64(out, "docsExamined", st->docs_examined);
		}
		BSON_APPEND_DOCUMENT_BEGIN(out, "inputStage", &in);
		BSON_APPEND_UTF8(&in, "stage", "IXSCAN");
		if (exec_stats)
			append_i64(&in, "keysExamined", st->keys_examined);
		if (ix != NULL) {
			BSON_APPEND_DOCUMENT(&in, "keyPattern", ix->key);
			BSON_APPEND_UTF8(&in, "indexName", ix->name);
			BSON_APPEND_BOOL(&in, "isMultiKey", ix->multikey);
			{
				uint32_t masks[KEYGEN_MAX_FIELDS] = {0};
				bson_t mk;
				BSON_APPEND_DOCUMENT_BEGIN(&in, "multiKeyPaths", &mk);
				keygen_multikey_paths_append(ix->key, masks, &mk);
				bson_append_document_end(&in, &mk);
			}
			BSON_APPEND_BOOL(&in, "isUnique", false);
			BSON_APPEND_BOOL(&in, "isSparse", false);
			BSON_APPEND_BOOL(&in, "isPartial", false);
			BSON_APPEND_INT32(&in, "indexVersion", 2);
			BSON_APPEND_UTF8(&in, "direction", "forward");
		}
		BSON_APPEND_DOCUMENT_BEGIN(&in, "indexBounds", &b);
		bson_append_array_begin(&b, r->path, -1, &arr);
		{
			ivl_t *iv = r->iv;
			size_t niv = r->niv;
			bool own = false;
			if (!r->scanned) {
				uint64_t *cells = NULL;
				size_t n = 0;
				if (s2w_cover(r->shape->s2, r->prm.coarsest, r->prm.finest, r->prm.max_cells, &cells,
				              &n) == 0) {
					cells_to_intervals(&r->prm, cells, n, &iv, &niv);
					own = true;
				}
				free(cells);
			}
			for (size_t i = 0; i < niv; i++) {
				char key[16], s[80];
				const char *kk;
				bson_uint32_to_string(k++, &kk, key, sizeof key);
				snprintf(s, sizeof s, "[%lld, %lld]", (long long)iv[i].lo, (long long)iv[i].hi);
				bson_append_utf8(&arr, kk, -1, s, -1);
			}
			if (own)
				bson_free(iv);
		}
		bson_append_array_end(&b, &arr);
		bson_append_document_end(&in, &b);
		bson_append_document_end(out, &in);
	}
}

void
plan_geo_free(geo_run_t *r)
{
	if (r == NULL)
		return;
	bson_free(r->path);
	if (r->hkeys != NULL)
		for (size_t i = 0; i < r->nhits; i++)
			bson_free(r->hkeys[i].bytes);
	bson_free(r->hkeys);
	bson_free(r->hits);
	bson_free(r->iv);
	bson_free(r->seen);
	bson_free(r);
}
