/*
 * geo_parse.c -- GeoJSON and legacy geometries into geo_shape_t, with
 * mongod's rules and messages (geoparser.cpp, geometry_container.cpp):
 * stored values, the shapes of $geoWithin / $geoIntersects and the point
 * of $near.  Spherical parts go to S2 through s2_wrap.h; flat shapes
 * ($box, $polygon, $center) stay plain numbers.
 *
 * Not here: predicates and distances (geo_match.c), index keys (geo_index.c).
 */
#include "geo/geo.h"

#include <float.h>
#include <math.h>
#include <string.h>

#include "bson/value.h"

typedef double vec3_t[3];

typedef struct vbuf {
	vec3_t *v;
	size_t n, cap;
} vbuf_t;

static void
vbuf_push(vbuf_t *b, const double p[3])
{
	if (b->n == b->cap) {
		b->cap = b->cap ? b->cap * 2 : 16;
		b->v = bson_realloc(b->v, sizeof(vec3_t) * b->cap);
	}
	memcpy(b->v[b->n++], p, sizeof(vec3_t));
}

static bool
is_num(const bson_value_t *v)
{
	return v->value_type == BSON_TYPE_DOUBLE || v->value_type == BSON_TYPE_INT32 ||
	       v->value_type == BSON_TYPE_INT64 || v->value_type == BSON_TYPE_DECIMAL128;
}

static double
num(const bson_value_t *v)
{
	switch (v->value_type) {
	case BSON_TYPE_DOUBLE: return v->value.v_double;
	case BSON_TYPE_INT32: return v->value.v_int32;
	case BSON_TYPE_INT64: return (double)v->value.v_int64;
	case BSON_TYPE_DECIMAL128: {
		char s[BSON_DECIMAL128_STRING];
		bson_decimal128_to_string(&v->value.v_decimal128, s);
		return strtod(s, NULL);
	}
	default: return 0;
	}
}

static bool
is_obj(const bson_value_t *v)
{
	return v->value_type == BSON_TYPE_DOCUMENT || v->value_type == BSON_TYPE_ARRAY;
}

static bool
sub_iter(const bson_value_t *v, bson_iter_t *it)
{
	return is_obj(v) && bson_iter_init_from_data(it, v->value.v_doc.data, v->value.v_doc.data_len);
}

static int
bad(terr_t *err, const char *prefix, const bson_value_t *v, const char *suffix)
{
	char *s = bv_to_mongo_string(v);
	terr_set(err, TERR_BAD_VALUE, "%s%s%s", prefix, s, suffix ? suffix : "");
	bson_free(s);
	return -1;
}

/* parseFlatPoint */
static int
flat_point(const bson_value_t *v, bool allow_more, double *x, double *y, terr_t *err)
{
	bson_iter_t it;

	if (!sub_iter(v, &it))
		return terr_set(err, TERR_BAD_VALUE, "Point must be an array or object");
	if (!bson_iter_next(&it) || !is_num(bson_iter_value(&it)))
		return terr_set(err, TERR_BAD_VALUE, "Point must only contain numeric elements");
	*x = num(bson_iter_value(&it));
	if (!bson_iter_next(&it) || !is_num(bson_iter_value(&it)))
		return terr_set(err, TERR_BAD_VALUE, "Point must only contain numeric elements");
	*y = num(bson_iter_value(&it));
	if (!allow_more && bson_iter_next(&it))
		return terr_set(err, TERR_BAD_VALUE, "Point must only contain two numeric elements");
	if (!isfinite(*x) || !isfinite(*y))
		return terr_set(err, TERR_BAD_VALUE, "Point coordinates must be finite numbers");
	return 0;
}

static bool
valid_lnglat(double lng, double lat)
{
	return lat >= -90 && lat <= 90 && lng >= -180 && lng <= 180;
}

static int
coord_to_point(double lng, double lat, double out[3], terr_t *err)
{
	if (!valid_lnglat(lng, lat))
		return terr_set(err, TERR_BAD_VALUE,
		                "longitude/latitude is out of bounds, lng: %g lat: %g", lng, lat);
	s2w_point_from_lnglat(lng, lat, out);
	return 0;
}

static int
geojson_coordinate(const bson_value_t *v, double out[3], terr_t *err)
{
	double x, y;

	if (v->value_type != BSON_TYPE_ARRAY)
		return terr_set(err, TERR_BAD_VALUE, "GeoJSON coordinates must be an array");
	if (flat_point(v, true, &x, &y, err) != 0)
		return -1;
	return coord_to_point(x, y, out, err);
}

static int
array_of_coordinates(const bson_value_t *v, vbuf_t *out, terr_t *err)
{
	bson_iter_t it;

	if (v->value_type != BSON_TYPE_ARRAY || !sub_iter(v, &it))
		return terr_set(err, TERR_BAD_VALUE, "GeoJSON coordinates must be an array of coordinates");
	while (bson_iter_next(&it)) {
		double p[3];
		if (geojson_coordinate(bson_iter_value(&it), p, err) != 0)
			return -1;
		vbuf_push(out, p);
	}
	return 0;
}

static bool
same_point(const double a[3], const double b[3])
{
	return a[0] == b[0] && a[1] == b[1] && a[2] == b[2];
}

static void
erase_duplicates(vbuf_t *b, size_t from)
{
	size_t w = from;

	for (size_t i = from; i < b->n; i++) {
		if (w > from && same_point(b->v[w - 1], b->v[i]))
			continue;
		if (w != i)
			memcpy(b->v[w], b->v[i], sizeof(vec3_t));
		w++;
	}
	b->n = w;
}

static int
polygon_coordinates(const bson_value_t *v, s2w_geom_t *g, terr_t *err)
{
	bson_iter_t it;
	vbuf_t all = {0};
	size_t *lens = NULL, nloops = 0, cap = 0;
	const bson_value_t *first = NULL;
	bson_value_t loopv[64];
	int ret = 0, which = 0;
	char reason[512] = "";
	s2w_status_t st;

	if (v->value_type != BSON_TYPE_ARRAY || !sub_iter(v, &it))
		return terr_set(err, TERR_BAD_VALUE, "Polygon coordinates must be an array");
	while (bson_iter_next(&it)) {
		const bson_value_t *lv = bson_iter_value(&it);
		size_t start = all.n;

		if (first == NULL)
			first = lv;
		if (array_of_coordinates(lv, &all, err) != 0)
			ERR(-1);
		if (all.n == start)
			ERR(bad(err, "Loop has no vertices: ", lv, NULL));
		if (!same_point(all.v[start], all.v[all.n - 1]))
			ERR(bad(err, "Loop is not closed: ", lv, NULL));
		erase_duplicates(&all, start);
		all.n--;   /* the closing vertex */
		if (all.n - start < 3)
			ERR(bad(err, "Loop must have at least 3 different vertices: ", lv, NULL));
		if (nloops == cap) {
			cap = cap ? cap * 2 : 4;
			lens = bson_realloc(lens, sizeof(size_t) * cap);
		}
		if (nloops < 64)
			loopv[nloops] = *lv;
		lens[nloops++] = all.n - start;
	}
	if (nloops == 0)
		ERR(terr_set(err, TERR_BAD_VALUE, "Polygon has no loops."));
	st = s2w_geom_add_polygon(g, nloops, lens, (const double (*)[3])all.v, false, &which, reason,
	                          sizeof reason);
	if (st != S2W_OK) {
		char *whole = bv_to_mongo_string(v);
		char *loop = which >= 0 && which < 64 && (size_t)which < nloops
		             ? bv_to_mongo_string(&loopv[which]) : bson_strdup("");
		char *firsts = bv_to_mongo_string(first);
		switch (st) {
		case S2W_LOOP_INVALID:
			terr_set(err, TERR_BAD_VALUE, "Loop is not valid: %s %s", loop, reason);
			break;
		case S2W_LOOP_NOT_HOLE:
			terr_set(err, TERR_BAD_VALUE,
			         "Secondary loops not contained by first exterior loop - secondary loops must be "
			         "holes: %s first loop: %s", loop, firsts);
			break;
		case S2W_POLYGON_INVALID:
			terr_set(err, TERR_BAD_VALUE, "Polygon isn't valid: %s %s", reason, whole);
			break;
		case S2W_POLYGON_NOT_NORMALIZED:
			terr_set(err, TERR_BAD_VALUE, "%s: %s", reason, whole);
			break;
		case S2W_POLYGON_MANY_SHELLS:
			terr_set(err, TERR_BAD_VALUE, "Only one exterior polygon loop is allowed: %s", whole);
			break;
		default:
			terr_set(err, TERR_BAD_VALUE, "Polygon interior loops cannot be nested: %s", whole);
			break;
		}
		bson_free(whole);
		bson_free(loop);
		bson_free(firsts);
		ERR(-1);
	}
err:
	bson_free(all.v);
	bson_free(lens);
	return ret;
}

static int
line_coordinates(const bson_value_t *v, s2w_geom_t *g, terr_t *err)
{
	vbuf_t pts = {0};
	char reason[512] = "";
	int ret = 0;

	if (array_of_coordinates(v, &pts, err) != 0)
		ERR(-1);
	erase_duplicates(&pts, 0);
	if (pts.n < 2)
		ERR(bad(err, "GeoJSON LineString must have at least 2 vertices: ", v, NULL));
	if (s2w_geom_add_polyline(g, (const double (*)[3])pts.v, pts.n, false, reason, sizeof reason) !=
	    S2W_OK) {
		char *s = bv_to_mongo_string(v);
		terr_set(err, TERR_BAD_VALUE, "GeoJSON LineString is not valid: %s %s", reason, s);
		bson_free(s);
		ERR(-1);
	}
err:
	bson_free(pts.v);
	return ret;
}

/* find a field of a document value */
static bool
field_of(const bson_value_t *doc, const char *name, bson_value_t *out)
{
	bson_iter_t it;

	if (!sub_iter(doc, &it))
		return false;
	while (bson_iter_next(&it))
		if (strcmp(bson_iter_key(&it), name) == 0) {
			*out = *bson_iter_value(&it);
			return true;
		}
	return false;
}

static int
geojson_crs(const bson_value_t *obj, bool allow_strict, geo_crs_t *crs, terr_t *err)
{
	bson_value_t c, t, props, name;
	const char *n;

	*crs = GEO_SPHERE;
	if (!field_of(obj, "crs", &c))
		return 0;
	if (!is_obj(&c))
		return terr_set(err, TERR_BAD_VALUE, "GeoJSON CRS must be an object");
	if (!field_of(&c, "type", &t) || t.value_type != BSON_TYPE_UTF8 || strcmp(t.value.v_utf8.str, "name") != 0)
		return terr_set(err, TERR_BAD_VALUE, "GeoJSON CRS must have field \"type\": \"name\"");
	if (!field_of(&c, "properties", &props) || !is_obj(&props))
		return terr_set(err, TERR_BAD_VALUE, "CRS must have field \"properties\" which is an object");
	if (!field_of(&props, "name", &name) || name.value_type != BSON_TYPE_UTF8)
		return terr_set(err, TERR_BAD_VALUE, "In CRS, \"properties.name\" must be a string");
	n = name.value.v_utf8.str;
	if (strcmp(n, "urn:ogc:def:crs:OGC:1.3:CRS84") == 0 || strcmp(n, "EPSG:4326") == 0)
		return 0;
	if (strcmp(n, "urn:x-mongodb:crs:strictwinding:EPSG:4326") == 0) {
		if (!allow_strict)
			return terr_set(err, TERR_BAD_VALUE, "Strict winding order is only supported by polygon");
		*crs = GEO_STRICT_SPHERE;
		return 0;
	}
	return terr_set(err, TERR_BAD_VALUE, "Unknown CRS name: %s", n);
}

static const struct {
	const char *name;
	geo_kind_t kind;
} geojson_types[] = {
	{"Point", GEO_POINT}, {"LineString", GEO_LINE}, {"Polygon", GEO_POLYGON},
	{"MultiPoint", GEO_MULTIPOINT}, {"MultiLineString", GEO_MULTILINE},
	{"MultiPolygon", GEO_MULTIPOLYGON}, {"GeometryCollection", GEO_COLLECTION},
};

static bool
geojson_type(const bson_value_t *obj, geo_kind_t *kind)
{
	bson_value_t t;

	if (!field_of(obj, "type", &t) || t.value_type != BSON_TYPE_UTF8)
		return false;
	for (size_t i = 0; i < sizeof geojson_types / sizeof geojson_types[0]; i++)
		if (strcmp(geojson_types[i].name, t.value.v_utf8.str) == 0) {
			*kind = geojson_types[i].kind;
			return true;
		}
	return false;
}

static int parse_geojson_into(const bson_value_t *obj, geo_kind_t kind, geo_shape_t *out,
                              s2w_geom_t *g, bool nested, terr_t *err);

static int
parse_multi(const bson_value_t *coords, const char *what, geo_kind_t kind, s2w_geom_t *g, terr_t *err)
{
	bson_iter_t it;
	size_t n = 0;

	if (coords->value_type != BSON_TYPE_ARRAY || !sub_iter(coords, &it))
		return terr_set(err, TERR_BAD_VALUE, "%s coordinates must be an array", what);
	while (bson_iter_next(&it)) {
		n++;
		if (kind == GEO_MULTILINE ? line_coordinates(bson_iter_value(&it), g, err) != 0
		                          : polygon_coordinates(bson_iter_value(&it), g, err) != 0)
			return -1;
	}
	if (n == 0)
		return terr_set(err, TERR_BAD_VALUE, "%s coordinates must have at least 1 element", what);
	return 0;
}

static int
parse_collection(const bson_value_t *obj, geo_shape_t *out, s2w_geom_t *g, terr_t *err)
{
	bson_value_t geoms;
	bson_iter_t it;
	uint32_t i = 0;

	if (!field_of(obj, "geometries", &geoms) || geoms.value_type != BSON_TYPE_ARRAY || !sub_iter(&geoms, &it))
		return terr_set(err, TERR_BAD_VALUE, "GeometryCollection geometries must be an array");
	while (bson_iter_next(&it)) {
		const bson_value_t *e = bson_iter_value(&it);
		geo_kind_t k;
		geo_shape_t tmp = {0};

		if (e->value_type != BSON_TYPE_DOCUMENT)
			return terr_set(err, TERR_BAD_VALUE, "Element %u of \"geometries\" is not an object", i);
		if (!geojson_type(e, &k))
			return bad(err, "Unknown GeoJSON type: ", e, NULL);
		if (k == GEO_COLLECTION)
			return bad(err, "GeometryCollections cannot be nested: ", e, NULL);
		if (parse_geojson_into(e, k, &tmp, g, true, err) != 0)
			return -1;
		i++;
	}
	if (i == 0)
		return terr_set(err, TERR_BAD_VALUE, "GeometryCollection geometries must have at least 1 element");
	return 0;
}

/* One GeoJSON object of a known kind into g (out gets point data). */
static int
parse_geojson_into(const bson_value_t *obj, geo_kind_t kind, geo_shape_t *out, s2w_geom_t *g,
                   bool nested, terr_t *err)
{
	bson_value_t coords = {.value_type = BSON_TYPE_EOD};
	geo_crs_t crs = GEO_SPHERE;

	if (kind != GEO_COLLECTION && geojson_crs(obj, kind == GEO_POLYGON, &crs, err) != 0)
		return -1;
	out->kind = kind;
	out->crs = crs;
	if (crs == GEO_STRICT_SPHERE)
		return terr_set(err, TERR_NOT_IMPLEMENTED,
		                "big polygons (strict winding order CRS) are not supported by Tamga yet");
	field_of(obj, "coordinates", &coords);
	switch (kind) {
	case GEO_POINT: {
		if (flat_point(&coords, true, &out->x, &out->y, err) != 0)
			return -1;
		if (!valid_lnglat(out->x, out->y))
			return terr_set(err, TERR_BAD_VALUE,
			                "longitude/latitude is out of bounds, lng: %g lat: %g", out->x, out->y);
		s2w_point_from_lnglat(out->x, out->y, out->xyz);
		out->sphere_ok = true;
		s2w_geom_add_point(g, out->xyz);
		return 0;
	}
	case GEO_LINE:
		return line_coordinates(&coords, g, err);
	case GEO_POLYGON:
		return polygon_coordinates(&coords, g, err);
	case GEO_MULTIPOINT: {
		vbuf_t pts = {0};
		int ret = array_of_coordinates(&coords, &pts, err);
		if (ret == 0 && pts.n == 0)
			ret = terr_set(err, TERR_BAD_VALUE, "MultiPoint coordinates must have at least 1 element");
		for (size_t i = 0; ret == 0 && i < pts.n; i++)
			s2w_geom_add_point(g, pts.v[i]);
		bson_free(pts.v);
		return ret;
	}
	case GEO_MULTILINE:
		return parse_multi(&coords, "MultiLineString", kind, g, err);
	case GEO_MULTIPOLYGON:
		return parse_multi(&coords, "MultiPolygon", kind, g, err);
	case GEO_COLLECTION:
		return parse_collection(obj, out, g, err);
	default:
		return terr_set(err, TERR_BAD_VALUE, "unknown GeoJSON type");
	}
}

static int
parse_geojson_point(const bson_value_t *obj, geo_shape_t *out, terr_t *err)
{
	bson_value_t coords = {.value_type = BSON_TYPE_EOD};
	geo_crs_t crs;

	if (geojson_crs(obj, false, &crs, err) != 0)
		return -1;
	out->kind = GEO_POINT;
	out->crs = crs;
	field_of(obj, "coordinates", &coords);
	if (flat_point(&coords, true, &out->x, &out->y, err) != 0)
		return -1;
	if (!valid_lnglat(out->x, out->y))
		return terr_set(err, TERR_BAD_VALUE, "longitude/latitude is out of bounds, lng: %g lat: %g", out->x,
		                out->y);
	s2w_point_from_lnglat(out->x, out->y, out->xyz);
	out->sphere_ok = true;
	return 0;
}

static int
parse_geojson(const bson_value_t *obj, geo_shape_t *out, terr_t *err)
{
	geo_kind_t kind;

	if (!geojson_type(obj, &kind))
		return bad(err, "unknown GeoJSON type: ", obj, NULL);
	/* a point needs no S2 geometry (geo_shape_matches and the distances
	 * use its unit vector); a collection's points do */
	if (kind == GEO_POINT)
		return parse_geojson_point(obj, out, err);
	if ((out->s2 = s2w_geom_new()) == NULL)
		return terr_set(err, TERR_INTERNAL_ERROR, "out of memory");
	if (parse_geojson_into(obj, kind, out, out->s2, false, err) != 0) {
		geo_shape_destroy(out);
		return -1;
	}
	return 0;
}

void
geo_shape_destroy(geo_shape_t *s)
{
	if (s == NULL)
		return;
	s2w_geom_free(s->s2);
	bson_free(s->poly);
	memset(s, 0, sizeof *s);
}

static bool
first_is_number(const bson_value_t *v)
{
	bson_iter_t it;

	return sub_iter(v, &it) && bson_iter_next(&it) && is_num(bson_iter_value(&it));
}

/* A legacy point: flat, and on the sphere when it is a valid lng/lat. */
static int
legacy_point(const bson_value_t *v, bool allow_more, geo_shape_t *out, terr_t *err)
{
	memset(out, 0, sizeof *out);
	out->kind = GEO_POINT;
	out->crs = GEO_FLAT;
	if (flat_point(v, allow_more, &out->x, &out->y, err) != 0)
		return -1;
	if (valid_lnglat(out->x, out->y)) {
		out->sphere_ok = true;
		s2w_point_from_lnglat(out->x, out->y, out->xyz);
	}
	return 0;
}

int
geo_parse_stored(const char *field, const bson_value_t *v, geo_shape_t *out, terr_t *err)
{
	memset(out, 0, sizeof *out);
	if (!is_obj(v)) {
		char *s = bv_to_mongo_string(v);
		terr_set(err, TERR_BAD_VALUE, "geo element must be an array or object: %s: %s", field ? field : "", s);
		bson_free(s);
		return -1;
	}
	if (v->value_type == BSON_TYPE_ARRAY || first_is_number(v))
		return legacy_point(v, true, out, err);
	return parse_geojson(v, out, err);
}

/* ---- query shapes -------------------------------------------------------- */

static int
parse_box(const bson_value_t *arg, geo_shape_t *out, terr_t *err)
{
	bson_iter_t it;
	double x1, y1, x2, y2;

	if (!sub_iter(arg, &it) || !bson_iter_next(&it))
		return terr_set(err, TERR_BAD_VALUE, "Point must be an array or object");
	if (flat_point(bson_iter_value(&it), false, &x1, &y1, err) != 0)
		return -1;
	if (!bson_iter_next(&it))
		return terr_set(err, TERR_BAD_VALUE, "Point must be an array or object");
	if (flat_point(bson_iter_value(&it), false, &x2, &y2, err) != 0)
		return -1;
	out->kind = GEO_BOX;
	out->crs = GEO_FLAT;
	out->box[0] = fmin(x1, x2);
	out->box[1] = fmin(y1, y2);
	out->box[2] = fmax(x1, x2);
	out->box[3] = fmax(y1, y2);
	return 0;
}

static int
parse_flat_polygon(const bson_value_t *arg, geo_shape_t *out, terr_t *err)
{
	bson_iter_t it;
	size_t cap = 0;

	out->kind = GEO_FLAT_POLYGON;
	out->crs = GEO_FLAT;
	if (!sub_iter(arg, &it))
		return terr_set(err, TERR_BAD_VALUE, "Polygon must have at least 3 points");
	while (bson_iter_next(&it)) {
		double x, y;
		if (flat_point(bson_iter_value(&it), false, &x, &y, err) != 0)
			return -1;
		if (out->npoly == cap) {
			cap = cap ? cap * 2 : 8;
			out->poly = bson_realloc(out->poly, sizeof(double) * 2 * cap);
		}
		out->poly[2 * out->npoly] = x;
		out->poly[2 * out->npoly + 1] = y;
		out->npoly++;
	}
	if (out->npoly < 3)
		return terr_set(err, TERR_BAD_VALUE, "Polygon must have at least 3 points");
	return 0;
}

static int
parse_center(const bson_value_t *arg, bool sphere, geo_shape_t *out, terr_t *err)
{
	bson_iter_t it;
	const bson_value_t *r;

	if (!sub_iter(arg, &it) || !bson_iter_next(&it))
		return terr_set(err, TERR_BAD_VALUE, "Point must be an array or object");
	if (flat_point(bson_iter_value(&it), false, &out->x, &out->y, err) != 0)
		return -1;
	if (sphere && coord_to_point(out->x, out->y, out->xyz, err) != 0)
		return -1;
	if (!bson_iter_next(&it) || !is_num(r = bson_iter_value(&it)) || !(num(r) >= 0))
		return terr_set(err, TERR_BAD_VALUE, "radius must be a non-negative number");
	if (bson_iter_next(&it))
		return terr_set(err, TERR_BAD_VALUE, "Only 2 fields allowed for circular region");
	out->radius = num(r);
	out->kind = sphere ? GEO_CENTER_SPHERE : GEO_CENTER;
	out->crs = sphere ? GEO_SPHERE : GEO_FLAT;
	if (sphere) {
		if ((out->s2 = s2w_geom_new()) == NULL)
			return terr_set(err, TERR_INTERNAL_ERROR, "out of memory");
		s2w_geom_set_cap(out->s2, out->xyz, out->radius);
	}
	return 0;
}

int
geo_query_parse(geo_pred_t pred, const bson_value_t *arg, geo_shape_t *out, terr_t *err)
{
	bson_iter_t it;
	const char *k;
	const bson_value_t *v;
	int rc;

	memset(out, 0, sizeof *out);
	if (arg->value_type != BSON_TYPE_DOCUMENT || !sub_iter(arg, &it) || !bson_iter_next(&it))
		return bad(err, "geometry must be an object: ", arg, NULL);
	k = bson_iter_key(&it);
	v = bson_iter_value(&it);
	if (strcmp(k, "$geometry") == 0) {
		if (v->value_type != BSON_TYPE_DOCUMENT)
			return bad(err, "geometry must be an object: ", arg, NULL);
		if ((rc = parse_geojson(v, out, err)) != 0)
			return rc;
		if (out->s2 == NULL && out->kind == GEO_POINT) {
			if ((out->s2 = s2w_geom_new()) == NULL)
				return terr_set(err, TERR_INTERNAL_ERROR, "out of memory");
			s2w_geom_add_point(out->s2, out->xyz);
		}
		if (pred == GEO_PRED_WITHIN && out->kind != GEO_POLYGON && out->kind != GEO_MULTIPOLYGON) {
			geo_shape_destroy(out);
			return bad(err, "$geoWithin not supported with provided geometry: ", arg, NULL);
		}
		return 0;
	}
	if (pred == GEO_PRED_INTERSECTS)
		return bad(err, "$geoIntersect not supported with provided geometry: ", arg, NULL);
	if (!is_obj(v))
		return bad(err, "unknown geo specifier: ", arg, NULL);
	if (strcmp(k, "$box") == 0)
		rc = parse_box(v, out, err);
	else if (strcmp(k, "$polygon") == 0)
		rc = parse_flat_polygon(v, out, err);
	else if (strcmp(k, "$center") == 0)
		rc = parse_center(v, false, out, err);
	else if (strcmp(k, "$centerSphere") == 0)
		rc = parse_center(v, true, out, err);
	else
		return bad(err, "unknown geo specifier: ", arg, NULL);
	if (rc != 0)
		geo_shape_destroy(out);
	return rc;
}

/* ---- $near --------------------------------------------------------------- */

static int
dist_value(const char *name, const bson_value_t *v, double *out, terr_t *err)
{
	if (!is_num(v))
		return terr_set(err, TERR_BAD_VALUE, "%s must be a number", name);
	*out = num(v);
	if (!(*out >= 0))
		return terr_set(err, TERR_BAD_VALUE, "%s must be non-negative", name);
	return 0;
}

int
geo_near_parse(const char *opname, const bson_value_t *arg, const bson_value_t *op,
               geo_near_t *out, terr_t *err)
{
	bson_iter_t it;
	bson_value_t g;
	bool sphere = strcmp(opname, "$nearSphere") == 0;

	memset(out, 0, sizeof *out);
	out->max_dist = DBL_MAX;
	out->is_near_sphere = sphere;
	if (!is_obj(arg)) {
		char *v = bv_to_mongo_string(arg);
		terr_set(err, TERR_BAD_VALUE, "near must be first in: { %s: %s }", opname, v);
		bson_free(v);
		return -1;
	}
	/* {$geometry: point, $maxDistance...}, or the GeoJSON point itself
	 * ($geoNear's near: {type: "Point", coordinates: [...]}) */
	if (arg->value_type == BSON_TYPE_DOCUMENT && !field_of(arg, "$geometry", &g) && field_of(arg, "type", &g))
		g = *arg;
	else if (arg->value_type == BSON_TYPE_DOCUMENT && !field_of(arg, "$geometry", &g))
		g.value_type = BSON_TYPE_EOD;
	if (arg->value_type == BSON_TYPE_DOCUMENT && g.value_type != BSON_TYPE_EOD) {
		geo_shape_t s = {0};
		bson_value_t t;
		if (!is_obj(&g) || !field_of(&g, "type", &t) || t.value_type != BSON_TYPE_UTF8 ||
		    strcmp(t.value.v_utf8.str, "Point") != 0)
			return bad(err, "invalid point in geo near query $geometry argument: ", &g, NULL);
		if (parse_geojson(&g, &s, err) != 0)
			return -1;
		out->geojson = true;
		out->x = s.x;
		out->y = s.y;
		memcpy(out->xyz, s.xyz, sizeof out->xyz);
		geo_shape_destroy(&s);
		/* $maxDistance / $minDistance inside the $near document */
		sub_iter(arg, &it);
		while (bson_iter_next(&it)) {
			const char *k = bson_iter_key(&it);
			if (strcmp(k, "$maxDistance") == 0) {
				if (dist_value("$maxDistance", bson_iter_value(&it), &out->max_dist, err) != 0)
					return -1;
				out->has_max = true;
			} else if (strcmp(k, "$minDistance") == 0) {
				if (dist_value("$minDistance", bson_iter_value(&it), &out->min_dist, err) != 0)
					return -1;
				out->has_min = true;
			}
		}
	} else {
		geo_shape_t s = {0};
		if (legacy_point(arg, false, &s, err) != 0) {
			geo_shape_destroy(&s);
			return -1;
		}
		out->x = s.x;
		out->y = s.y;
		if (sphere) {
			if (!s.sphere_ok) {
				geo_shape_destroy(&s);
				return terr_set(err, 17444, "Legacy point is out of bounds for spherical query");
			}
			memcpy(out->xyz, s.xyz, sizeof out->xyz);
			out->unit_radians = true;
		} else {
			out->flat = true;
			if (s.sphere_ok)
				memcpy(out->xyz, s.xyz, sizeof out->xyz);
		}
		geo_shape_destroy(&s);
	}
	/* siblings in the operator document */
	if (op != NULL && sub_iter(op, &it)) {
		while (bson_iter_next(&it)) {
			const char *k = bson_iter_key(&it);
			if (strcmp(k, "$maxDistance") == 0) {
				if (dist_value("$maxDistance", bson_iter_value(&it), &out->max_dist, err) != 0)
					return -1;
				out->has_max = true;
			} else if (strcmp(k, "$minDistance") == 0) {
				if (dist_value("$minDistance", bson_iter_value(&it), &out->min_dist, err) != 0)
					return -1;
				out->has_min = true;
			}
		}
	}
	return 0;
}
