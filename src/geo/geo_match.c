/*
 * geo_match.c -- what a parsed geometry means: $geoWithin / $geoIntersects
 * against stored geometries (mongod's GeometryContainer::contains and
 * intersects), the distances of $near and $geoNear (S2's angle on the
 * sphere, Euclid on the plane, spheredist_deg for 2d $nearSphere), the
 * 2dsphere index parameters and cells (s2_common.cpp, s2_key_generator.cpp)
 * and 2d indexes' GeoHash (hash.cpp).
 */
#include "geo/geo.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- flat shapes (legacy $box, $polygon, $center) ------------------------- */

static bool
box_contains(const double b[4], double x, double y)
{
	return x >= b[0] && x <= b[2] && y >= b[1] && y <= b[3];
}

/* On an edge counts as inside, as mongod's Polygon::contains does. */
static bool
flat_polygon_contains(const double *v, size_t n, double x, double y)
{
	bool in = false;

	for (size_t i = 0, j = n - 1; i < n; j = i++) {
		double xi = v[2 * i], yi = v[2 * i + 1], xj = v[2 * j], yj = v[2 * j + 1];
		double cross = (xj - xi) * (y - yi) - (yj - yi) * (x - xi);
		if (cross == 0 && x >= fmin(xi, xj) && x <= fmax(xi, xj) && y >= fmin(yi, yj) &&
		    y <= fmax(yi, yj))
			return true;
		if ((yi > y) != (yj > y) && x < (xj - xi) * (y - yi) / (yj - yi) + xi)
			in = !in;
	}
	return in;
}

static double
flat_distance(double x1, double y1, double x2, double y2)
{
	double a = x1 - x2, b = y1 - y2;

	return sqrt(a * a + b * b);
}

bool
geo_shape_matches(geo_pred_t pred, const geo_shape_t *q, const geo_shape_t *doc)
{
	switch (q->kind) {
	case GEO_BOX:
		return doc->kind == GEO_POINT && box_contains(q->box, doc->x, doc->y);
	case GEO_FLAT_POLYGON:
		return doc->kind == GEO_POINT && flat_polygon_contains(q->poly, q->npoly, doc->x, doc->y);
	case GEO_CENTER:
		return doc->kind == GEO_POINT && flat_distance(q->x, q->y, doc->x, doc->y) <= q->radius;
	default:
		break;
	}
	if (q->s2 == NULL)
		return false;
	if (doc->kind == GEO_POINT && doc->s2 == NULL) {
		if (!doc->sphere_ok)
			return false;
		return pred == GEO_PRED_WITHIN ? s2w_within_point(q->s2, doc->xyz) : s2w_intersects_point(q->s2, doc->xyz);
	}
	if (doc->s2 == NULL)
		return false;
	if (pred == GEO_PRED_WITHIN)
		return s2w_within(q->s2, doc->s2);
	return s2w_intersects(q->s2, doc->s2);
}

/* ---- distances ------------------------------------------------------------ */

static double
deg2rad(double d)
{
	return d * (M_PI / 180.0);
}

double
geo_spheredist_deg(double x1, double y1, double x2, double y2)
{
	double ax = deg2rad(x1), ay = deg2rad(y1), bx = deg2rad(x2), by = deg2rad(y2);
	double cross = cos(ay) * cos(ax) * cos(by) * cos(bx) + cos(ay) * sin(ax) * cos(by) * sin(bx) +
	               sin(ay) * sin(by);

	if (cross >= 1 || cross <= -1)
		return cross > 0 ? 0 : M_PI;
	return acos(cross);
}

bool
geo_near_distance(const geo_near_t *n, const geo_shape_t *doc, double *out)
{
	double rad;

	if (n->flat || (n->index_2d && !n->geojson)) {
		if (doc->kind != GEO_POINT)
			return false;
		if (n->flat)
			*out = flat_distance(n->x, n->y, doc->x, doc->y);
		else
			*out = geo_spheredist_deg(n->x, n->y, doc->x, doc->y);
		return true;
	}
	if (doc->kind == GEO_POINT && doc->s2 == NULL && doc->sphere_ok)
		rad = s2w_angle(n->xyz, doc->xyz);
	else if (doc->s2 == NULL)
		return false;
	else
		rad = s2w_distance(doc->s2, n->xyz);
	if (!isfinite(rad))
		return false;
	*out = n->unit_radians ? rad : rad * GEO_EARTH_RADIUS_M;
	return true;
}

/* ---- a document's least distance ----------------------------------------- */

typedef struct near_walk {
	const geo_near_t *near;
	double best;
	bson_value_t loc;
	bool found;
} near_walk_t;

/* v counts when it is a stored geometry n measures (parseFrom: objects and
 * arrays only); false when it is not a geometry at all. */
static bool
near_walk_try(near_walk_t *w, const bson_value_t *v)
{
	geo_shape_t s;
	double d;

	if (v->value_type != BSON_TYPE_DOCUMENT && v->value_type != BSON_TYPE_ARRAY)
		return false;
	if (geo_parse_stored(NULL, v, &s, NULL) != 0)
		return false;
	if (geo_near_distance(w->near, &s, &d) && (!w->found || d < w->best)) {
		w->best = d;
		w->loc = *v;
		w->found = true;
	}
	geo_shape_destroy(&s);
	return true;
}

static bool
near_walk_visit(const bpath_hit_t *h, void *ctx)
{
	near_walk_t *w = ctx;
	bson_iter_t it;

	if (near_walk_try(w, &h->value) || h->value.value_type != BSON_TYPE_ARRAY)
		return true;
	/* not a geometry itself: an array of geometries */
	if (!bson_iter_init_from_data(&it, h->value.value.v_doc.data, h->value.value.v_doc.data_len))
		return true;
	while (bson_iter_next(&it))
		near_walk_try(w, bson_iter_value(&it));
	return true;
}

bool
geo_near_doc_distance(const geo_near_t *n, const bson_t *doc, const bpath_t *path, double *dist,
                      bson_value_t *loc)
{
	near_walk_t w = {n, 0, {0}, false};

	bpath_walk_compiled(doc, path, false, near_walk_visit, &w);
	if (!w.found)
		return false;
	*dist = w.best;
	if (loc != NULL)
		*loc = w.loc;
	return true;
}

/* ---- 2dsphere ------------------------------------------------------------- */

/* bsonExtractIntegerFieldWithDefault: a number with an integral value */
static int
int_field(const bson_t *spec, const char *name, long long def, long long *out, terr_t *err)
{
	bson_iter_t it;
	double d;

	*out = def;
	if (spec == NULL || !bson_iter_init_find(&it, spec, name))
		return 0;
	if (!BSON_ITER_HOLDS_NUMBER(&it))
		return terr_set(err, TERR_TYPE_MISMATCH, "%s field must be a number", name);
	d = bson_iter_as_double(&it);
	if (!(d == floor(d)) || fabs(d) > 9.0e15)
		return terr_set(err, TERR_BAD_VALUE, "Expected field \"%s\" to have a value exactly "
		                "representable as a 64-bit integer, but found %s: %g", name, name, d);
	*out = (long long)d;
	return 0;
}

int
geo_s2_params(const bson_t *spec, geo_s2_params_t *out, terr_t *err)
{
	long long v, finest, coarsest, cells;
	long long dfin, dcoarse, dcells;

	RET(int_field(spec, "2dsphereIndexVersion", 1, &v, err));
	if (v < 1 || v > 3)
		return terr_set(err, 17395,
		                "unsupported geo index version { 2dsphereIndexVersion : %lld }, only support "
		                "versions: [1,2,3]", v);
	if (v <= 2) {
		dfin = s2w_avg_edge_closest_level(500.0 / GEO_EARTH_RADIUS_M);
		dcoarse = s2w_avg_edge_closest_level(100.0 * 1000 / GEO_EARTH_RADIUS_M);
		dcells = 50;
	} else {
		dfin = s2w_avg_edge_closest_level(110.0 / GEO_EARTH_RADIUS_M);
		dcoarse = s2w_avg_edge_closest_level(2000 * 1000.0 / GEO_EARTH_RADIUS_M);
		dcells = 20;
	}
	RET(int_field(spec, "finestIndexedLevel", dfin, &finest, err));
	RET(int_field(spec, "coarsestIndexedLevel", dcoarse, &coarsest, err));
	RET(int_field(spec, "maxCellsInCovering", dcells, &cells, err));
	if (coarsest < 0)
		return terr_set(err, 16747, "coarsestIndexedLevel must be >= 0");
	if (finest > 30)
		return terr_set(err, 16748, "finestIndexedLevel must be <= 30");
	if (finest < coarsest)
		return terr_set(err, 16749, "finestIndexedLevel must be >= coarsestIndexedLevel");
	out->version = (int)v;
	out->finest = (int)finest;
	out->coarsest = (int)coarsest;
	out->max_cells = cells < 1 ? 1 : cells > 100000 ? 100000 : (int)cells;
	return 0;
}

int
geo_s2_cells(const geo_s2_params_t *p, const geo_shape_t *s, uint64_t **cells, size_t *n,
             terr_t *err)
{
	int lo = p->coarsest, hi = p->finest;

	if (s->crs == GEO_STRICT_SPHERE)
		return terr_set(err, TERR_BAD_VALUE, "can't index geometry with strict winding order");
	if (p->version == 1 && (s->kind != GEO_POINT && s->kind != GEO_LINE && s->kind != GEO_POLYGON))
		return terr_set(err, TERR_BAD_VALUE, "given geometry can't be indexed in the old index format");
	if (s->kind == GEO_POINT && s->s2 == NULL) {
		s2w_geom_t *g;
		int rc;
		if (!s->sphere_ok)
			return terr_set(err, TERR_BAD_VALUE, "can't project geometry from flat CRS into spherical CRS");
		/* version 3: points at the finest level, one leaf cell */
		if (p->version >= 3) {
			if ((*cells = malloc(sizeof(uint64_t))) == NULL)
				return terr_set(err, TERR_INTERNAL_ERROR, "out of memory");
			(*cells)[0] = s2w_cell_from_point(s->xyz, 30);
			*n = 1;
			return 0;
		}
		if ((g = s2w_geom_new()) == NULL)
			return terr_set(err, TERR_INTERNAL_ERROR, "out of memory");
		s2w_geom_add_point(g, s->xyz);
		rc = s2w_cover(g, lo, hi, p->max_cells, cells, n);
		s2w_geom_free(g);
		return rc != 0 ? terr_set(err, TERR_INTERNAL_ERROR, "out of memory") : 0;
	}
	if (s->s2 == NULL)
		return terr_set(err, TERR_BAD_VALUE, "can't project geometry from flat CRS into spherical CRS");
	if (p->version >= 3 && s2w_geom_is_point(s->s2))
		lo = hi = 30;
	if (s2w_cover(s->s2, lo, hi, p->max_cells, cells, n) != 0)
		return terr_set(err, TERR_INTERNAL_ERROR, "out of memory");
	return 0;
}

/* ---- 2d: GeoHash ------------------------------------------------------------ */

static int
num_field(const bson_t *spec, const char *name, double def, double *out, terr_t *err)
{
	bson_iter_t it;

	*out = def;
	if (spec == NULL || !bson_iter_init_find(&it, spec, name))
		return 0;
	if (!BSON_ITER_HOLDS_NUMBER(&it))
		return terr_set(err, TERR_INVALID_OPTIONS, "wrong type for field (%s) %s != double", name,
		                "non-number");
	*out = bson_iter_as_double(&it);
	return 0;
}

/* interleave: x bit i (from the top) at hash bit 2i, y at 2i + 1 */
static uint64_t
hash_xy(uint32_t x, uint32_t y, int bits)
{
	uint64_t h = 0;

	for (int i = 0; i < bits; i++) {
		if (x & (1u << (31 - i)))
			h |= 1ull << (63 - 2 * i);
		if (y & (1u << (31 - i)))
			h |= 1ull << (62 - 2 * i);
	}
	return h;
}

int
geo_2d_params(const bson_t *spec, geo_2d_params_t *out, terr_t *err)
{
	double bits, mn, mx, cell;

	int ibits = 26;
	bson_iter_t it;

	RET(num_field(spec, "bits", 26, &bits, err));
	RET(num_field(spec, "max", 180.0, &mx, err));
	RET(num_field(spec, "min", -180.0, &mn, err));
	/* FieldParser::extractNumber into an int: BSONElement::numberInt, a
	 * long keeps its low 32 bits, a double truncates (INT_MIN when out of range) */
	if (spec != NULL && bson_iter_init_find(&it, spec, "bits")) {
		if (BSON_ITER_HOLDS_INT64(&it))
			ibits = (int)(int32_t)(uint32_t)(uint64_t)bson_iter_int64(&it);
		else if (BSON_ITER_HOLDS_INT32(&it))
			ibits = bson_iter_int32(&it);
		else
			ibits = bits >= -2147483648.0 && bits < 2147483648.0 ? (int)bits : INT32_MIN;
	}
	if (ibits < 1 || ibits > 32)
		return terr_set(err, TERR_INVALID_OPTIONS,
		                "bits for hash must be > 0 and <= 32, but %d bits were specified", ibits);
	bits = ibits;
	if (!(mn < mx) || isinf(mn) || isinf(mx))
		return terr_set(err, TERR_INVALID_OPTIONS,
		                "region for hash must be valid and have positive area, but [%g, %g] was "
		                "specified", mn, mx);
	out->bits = (int)bits;
	out->min = mn;
	out->max = mx;
	out->scaling = 4.0 * 1024 * 1024 * 1024 / (mx - mn);
	if (!(out->scaling > 0) || isinf(out->scaling))
		return terr_set(err, TERR_INVALID_OPTIONS, "range [%g, %g] is too small.", mn, mx);
	/* one cell's diagonal (GeoHash(0, 0, bits) moved by (1, 1)) plus 1/1000 of a bucket */
	cell = (double)(1ull << (32 - out->bits)) / out->scaling;
	out->error = sqrt(2 * cell * cell) + 0.001 / out->scaling;
	return 0;
}

static uint32_t
to_hash_scale(const geo_2d_params_t *p, double in)
{
	if (in == p->max)
		in -= p->error / 2;   /* 180 hashes as 179.999..., not as -180 */
	in -= p->min;
	if (in < 0)
		in = 0;
	in *= p->scaling;
	return in >= 4294967295.0 ? UINT32_MAX : (uint32_t)in;
}

int
geo_2d_hash(const geo_2d_params_t *p, double x, double y, uint64_t *out)
{
	if (!(x <= p->max && x >= p->min && y <= p->max && y >= p->min))
		return -1;
	*out = hash_xy(to_hash_scale(p, x), to_hash_scale(p, y), p->bits);
	return 0;
}

void
geo_2d_hash_bytes(uint64_t h, uint8_t out[8])
{
	for (int i = 0; i < 8; i++)
		out[i] = (uint8_t)(h >> (56 - 8 * i));
}
