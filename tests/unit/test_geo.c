/*
 * test_geo.c -- geospatial support against mongod's own facts: the S2 cell
 * ids of known points and shapes (mongod's s2keys golden key file), the 2d
 * GeoHash keys (two_d_keys golden file), the distance formulas (S2's
 * angle times 6378.1 km, Euclid, spheredist_deg), GeoJSON validation
 * messages, the predicates, and the whole path through the embedded API:
 * 2dsphere and 2d indexes, $near/$nearSphere ordering and 291, $geoNear's
 * options, covering-bounded $geoWithin explain, and results equal to a
 * collection scan's.
 */
#include <math.h>

#include "tt.h"
#include "tt_embedded.h"

#include "geo/geo.h"
#include "query/keygen.h"

static tamga_t *db;

/* The 2dsphere cells of the value of {"v": ...} under the index spec. */
static size_t
cells_of(const char *spec_json, const char *value_json, uint64_t *out, size_t cap, terr_t *err)
{
	bson_t *spec = tt_json(spec_json), *v = tt_json(value_json);
	geo_s2_params_t p;
	geo_shape_t s;
	bson_iter_t it;
	uint64_t *cells = NULL;
	size_t n = 0;

	bson_iter_init_find(&it, v, "v");
	if (geo_s2_params(spec, &p, err) == 0 && geo_parse_stored("v", bson_iter_value(&it), &s, err) == 0) {
		if (geo_s2_cells(&p, &s, &cells, &n, err) == 0)
			for (size_t i = 0; i < n && i < cap; i++)
				out[i] = cells[i];
		geo_shape_destroy(&s);
	}
	free(cells);
	bson_destroy(spec);
	bson_destroy(v);
	return n;
}

#define V3 "{\"2dsphereIndexVersion\": 3}"

static void
test_cell_ids(void)
{
	uint64_t c[64];
	terr_t err = TERR_INIT;

	/* s2keys.txt: V3_Point, V3_LegacyCoordPair, V3_LegacyEmbeddedCoordObject */
	TT_EQ_INT(cells_of(V3, "{\"v\": {\"type\": \"Point\", \"coordinates\": [40, -73]}}", c, 64, &err), 1);
	TT_EQ_INT((int64_t)c[0], -5691773093605457193LL);
	TT_EQ_INT(cells_of(V3, "{\"v\": [40, -73]}", c, 64, &err), 1);
	TT_EQ_INT((int64_t)c[0], -5691773093605457193LL);
	TT_EQ_INT(cells_of(V3, "{\"v\": {\"x\": 40, \"y\": -73}}", c, 64, &err), 1);
	TT_EQ_INT((int64_t)c[0], -5691773093605457193LL);
	/* (0, 0), (3, 3), (1, 1) */
	cells_of(V3, "{\"v\": {\"type\": \"Point\", \"coordinates\": [0, 0]}}", c, 64, &err);
	TT_EQ_INT((int64_t)c[0], 1152921504606846977LL);
	cells_of(V3, "{\"v\": {\"type\": \"Point\", \"coordinates\": [3, 3]}}", c, 64, &err);
	TT_EQ_INT((int64_t)c[0], 1157514470122841853LL);
	cells_of(V3, "{\"v\": {\"type\": \"Point\", \"coordinates\": [1, 1]}}", c, 64, &err);
	TT_EQ_INT((int64_t)c[0], 1153277837650709461LL);
	/* V3_AmbiguousLegacyAndGeoJSON: a first numeric field makes it a legacy pair */
	cells_of(V3, "{\"v\": {\"x\": 40, \"y\": -70, \"type\": \"Point\", \"coordinates\": [-70, 40]}}", c, 64, &err);
	TT_EQ_INT((int64_t)c[0], -5685310680706645935LL);
	/* V3_MultiPoint: a covering (not leaf cells), three cells */
	TT_EQ_INT(cells_of(V3, "{\"v\": {\"type\": \"MultiPoint\", \"coordinates\": [[0, 0], [1, 0], [1, 1]]}}", c, 64,
	    &err), 3);
	TT_EQ_INT((int64_t)c[0], 1152921504875282432LL);
	TT_EQ_INT((int64_t)c[1], 1153105535097110528LL);
	TT_EQ_INT((int64_t)c[2], 1153277837910736896LL);
	TT_EQ_INT(err.code, 0);
	terr_clear(&err);
}

static void
test_s2_params(void)
{
	bson_t *spec = tt_json(V3);
	geo_s2_params_t p;
	terr_t err = TERR_INIT;

	TT_EQ_INT(geo_s2_params(spec, &p, &err), 0);
	/* mongod's defaults for version 3: ~110 m and ~2000 km edges, 20 cells */
	TT_EQ_INT(p.finest, s2w_avg_edge_closest_level(110.0 / GEO_EARTH_RADIUS_M));
	TT_EQ_INT(p.coarsest, s2w_avg_edge_closest_level(2000000.0 / GEO_EARTH_RADIUS_M));
	TT_EQ_INT(p.max_cells, 20);
	TT_ASSERT(p.finest > p.coarsest && p.finest <= 30);
	bson_destroy(spec);
	spec = tt_json("{\"2dsphereIndexVersion\": 3, \"coarsestIndexedLevel\": -1}");
	TT_EQ_INT(geo_s2_params(spec, &p, &err), -1);
	TT_EQ_INT(err.code, 16747);
	terr_clear(&err);
	bson_destroy(spec);
	spec = tt_json("{\"2dsphereIndexVersion\": 3, \"finestIndexedLevel\": 31}");
	TT_EQ_INT(geo_s2_params(spec, &p, &err), -1);
	TT_EQ_INT(err.code, 16748);
	terr_clear(&err);
	bson_destroy(spec);
	spec = tt_json("{\"2dsphereIndexVersion\": 3, \"finestIndexedLevel\": 3, \"coarsestIndexedLevel\": 5}");
	TT_EQ_INT(geo_s2_params(spec, &p, &err), -1);
	TT_EQ_INT(err.code, 16749);
	terr_clear(&err);
	bson_destroy(spec);
	spec = tt_json("{\"2dsphereIndexVersion\": 9}");
	TT_EQ_INT(geo_s2_params(spec, &p, &err), -1);
	TT_EQ_INT(err.code, 17395);
	terr_clear(&err);
	bson_destroy(spec);
}

static void
test_geohash(void)
{
	bson_t *spec = tt_json("{}");
	geo_2d_params_t p;
	terr_t err = TERR_INIT;
	uint64_t h = 0;
	uint8_t b[8];

	TT_EQ_INT(geo_2d_params(spec, &p, &err), 0);
	TT_EQ_INT(p.bits, 26);
	/* two_d_keys.txt */
	TT_EQ_INT(geo_2d_hash(&p, 0, 0, &h), 0);
	TT_EQ_INT(h, 0xc000000000000000ull);
	geo_2d_hash(&p, 5, 10, &h);
	TT_EQ_INT(h, 0xc01f81f81f81f000ull);
	geo_2d_hash(&p, -73.97, 40.77, &h);
	TT_EQ_INT(h, 0x61da7d795da54000ull);
	geo_2d_hash(&p, 179.5, 89.5, &h);
	TT_EQ_INT(h, 0xefffcc30ffcc3000ull);
	geo_2d_hash(&p, -179.99, -89.98999999999999, &h);
	TT_EQ_INT(h, 0x10000003f30c0000ull);
	geo_2d_hash(&p, 1.123456789, 2.987654321, &h);
	TT_EQ_INT(h, 0xc004a1f5d424f000ull);
	geo_2d_hash_bytes(0x61da7d795da54000ull, b);
	TT_EQ_INT(b[0], 0x61);
	TT_EQ_INT(b[7], 0x00);
	/* the max bound hashes inside the box, out of bounds refuses */
	TT_EQ_INT(geo_2d_hash(&p, 180, 180, &h), 0);
	TT_EQ_INT(geo_2d_hash(&p, 180.5, 0, &h), -1);
	bson_destroy(spec);
	spec = tt_json("{\"bits\": 33}");
	TT_EQ_INT(geo_2d_params(spec, &p, &err), -1);
	TT_EQ_INT(err.code, 72);
	TT_EQ_STR(err.msg, "bits for hash must be > 0 and <= 32, but 33 bits were specified");
	terr_clear(&err);
	bson_destroy(spec);
	spec = tt_json("{\"min\": 5, \"max\": 5}");
	TT_EQ_INT(geo_2d_params(spec, &p, &err), -1);
	TT_EQ_STR(err.msg, "region for hash must be valid and have positive area, but [5, 5] was specified");
	terr_clear(&err);
	bson_destroy(spec);
}

static void
test_distances(void)
{
	double a[3], b[3];

	/* a quarter of the equator: pi/2 radians, times mongod's earth radius */
	s2w_point_from_lnglat(0, 0, a);
	s2w_point_from_lnglat(90, 0, b);
	TT_ASSERT(fabs(s2w_angle(a, b) - M_PI / 2) < 1e-15);
	TT_ASSERT(fabs(s2w_angle(a, b) * GEO_EARTH_RADIUS_M - 10018696.0519) < 0.001);
	/* spheredist_deg: the n-vector formula, pole to equator */
	TT_ASSERT(fabs(geo_spheredist_deg(0, 0, 0, 90) - M_PI / 2) < 1e-12);
	TT_ASSERT(geo_spheredist_deg(10, 10, 10, 10) < 1e-7);
	/* S2's angle and the n-vector formula agree far from the ill-conditioned cases */
	s2w_point_from_lnglat(-73.97, 40.77, a);
	s2w_point_from_lnglat(2.35, 48.85, b);
	TT_ASSERT(fabs(s2w_angle(a, b) - geo_spheredist_deg(-73.97, 40.77, 2.35, 48.85)) < 1e-12);
}

/* geo_near_doc_distance from a flat $near at (0, 0) over doc_json's path:
 * the distance (-1 when none) and, in loc_x, the nearest location's first
 * coordinate. */
static double
doc_dist(const char *doc_json, const char *path, double *loc_x)
{
	bson_t *op = tt_json("{\"$near\": [0, 0]}"), *doc = tt_json(doc_json);
	bson_iter_t it;
	bson_value_t opv, loc;
	geo_near_t n;
	terr_t err = TERR_INIT;
	bpath_t p;
	double d = -1;

	opv.value_type = BSON_TYPE_DOCUMENT;
	opv.value.v_doc.data = (uint8_t *)bson_get_data(op);
	opv.value.v_doc.data_len = op->len;
	bson_iter_init_find(&it, op, "$near");
	TT_EQ_INT(geo_near_parse("$near", bson_iter_value(&it), &opv, &n, &err), 0);
	bpath_init(&p, path);
	*loc_x = NAN;
	if (geo_near_doc_distance(&n, doc, &p, &d, &loc)) {
		bson_iter_t li;
		TT_ASSERT(loc.value_type == BSON_TYPE_ARRAY);
		if (bson_iter_init_from_data(&li, loc.value.v_doc.data, loc.value.v_doc.data_len) && bson_iter_next(&li))
			*loc_x = bson_iter_as_double(&li);
	} else {
		TT_ASSERT(d == -1);   /* untouched */
	}
	bpath_destroy(&p);
	bson_destroy(op);
	bson_destroy(doc);
	return d;
}

/* The least-distance walk ($near, $geoNear and time-series
 * $_internalGeoNearDistance): mongod's extractGeometries rules. */
static void
test_doc_distance(void)
{
	double x;

	/* a legacy pair is one geometry */
	TT_ASSERT(doc_dist("{\"loc\": [3, 4]}", "loc", &x) == 5 && x == 3);
	/* an array that is no geometry: each element, the nearest wins, the
	 * first of equals gives the location */
	TT_ASSERT(doc_dist("{\"loc\": [[3, 4], [1, 0], [-9, 0]]}", "loc", &x) == 1 && x == 1);
	TT_ASSERT(doc_dist("{\"loc\": [[0, 1], [1, 0]]}", "loc", &x) == 1 && x == 0);
	/* an array that is a pair (extra elements allowed): its elements are
	 * not geometries of their own */
	TT_ASSERT(doc_dist("{\"loc\": [6, 8, [0, 1]]}", "loc", &x) == 10 && x == 6);
	/* arrays on the way are traversed */
	TT_ASSERT(doc_dist("{\"a\": [{\"p\": [3, 4]}, {\"p\": [[0, 2], [7, 7]]}, {\"q\": 1}]}", "a.p", &x) == 2 && x == 0);
	/* one level only, nothing measurable, nothing there */
	TT_ASSERT(doc_dist("{\"loc\": [[[1, 1]]]}", "loc", &x) == -1);
	TT_ASSERT(doc_dist("{\"loc\": \"here\"}", "loc", &x) == -1);
	TT_ASSERT(doc_dist("{\"other\": [1, 1]}", "loc", &x) == -1);
	/* a flat near measures points only: the polygon is passed over */
	TT_ASSERT(doc_dist("{\"loc\": [{\"type\": \"Polygon\", \"coordinates\": [[[0, 0], [1, 0], [1, 1], [0, 0]]]}, [0, 3]]}",
	                   "loc", &x) == 3 && x == 0);
}

static int
parse_err(const char *json, char **msg)
{
	bson_t *v = tt_json(json);
	bson_iter_t it;
	geo_shape_t s;
	terr_t err = TERR_INIT;
	int code = 0;

	bson_iter_init_find(&it, v, "v");
	if (geo_parse_stored("v", bson_iter_value(&it), &s, &err) == 0)
		geo_shape_destroy(&s);
	else
		code = err.code;
	*msg = err.msg != NULL ? bson_strdup(err.msg) : bson_strdup("");
	terr_clear(&err);
	bson_destroy(v);
	return code;
}

static void
test_validation(void)
{
	char *m;

	TT_EQ_INT(parse_err("{\"v\": {\"type\": \"Point\", \"coordinates\": [181, 0]}}", &m), 2);
	TT_EQ_STR(m, "longitude/latitude is out of bounds, lng: 181 lat: 0");
	bson_free(m);
	TT_EQ_INT(parse_err("{\"v\": {\"type\": \"Polygon\", \"coordinates\": [[[0, 0], [1, 0], [1, 1]]]}}", &m), 2);
	TT_EQ_STR(m, "Loop is not closed: [ [ 0, 0 ], [ 1, 0 ], [ 1, 1 ] ]");
	bson_free(m);
	TT_EQ_INT(parse_err("{\"v\": {\"type\": \"Polygon\", \"coordinates\": [[[0, 0], [1, 1], [0, 0]]]}}", &m), 2);
	TT_EQ_STR(m, "Loop must have at least 3 different vertices: [ [ 0, 0 ], [ 1, 1 ], [ 0, 0 ] ]");
	bson_free(m);
	TT_EQ_INT(parse_err("{\"v\": {\"type\": \"Polygon\", \"coordinates\": [[[0, 0], [2, 2], [2, 0], [0, 2], [0, 0]]]}}",
	    &m), 2);
	{
		const char *want = "Loop is not valid: [ [ 0, 0 ], [ 2, 2 ], [ 2, 0 ], [ 0, 2 ], [ 0, 0 ] ] Edge ";
		TT_ASSERT(strncmp(m, want, strlen(want)) == 0);
	}
	bson_free(m);
	TT_EQ_INT(parse_err("{\"v\": {\"type\": \"Polygon\", \"coordinates\": [[]]}}", &m), 2);
	TT_EQ_STR(m, "Loop has no vertices: []");
	bson_free(m);
	TT_EQ_INT(parse_err("{\"v\": {\"type\": \"LineString\", \"coordinates\": [[0, 0]]}}", &m), 2);
	TT_EQ_STR(m, "GeoJSON LineString must have at least 2 vertices: [ [ 0, 0 ] ]");
	bson_free(m);
	TT_EQ_INT(parse_err("{\"v\": {\"type\": \"MultiPoint\", \"coordinates\": []}}", &m), 2);
	TT_EQ_STR(m, "MultiPoint coordinates must have at least 1 element");
	bson_free(m);
	TT_EQ_INT(parse_err("{\"v\": {\"type\": \"Hexagon\", \"coordinates\": []}}", &m), 2);
	TT_EQ_STR(m, "unknown GeoJSON type: { type: \"Hexagon\", coordinates: [] }");
	bson_free(m);
	TT_EQ_INT(parse_err("{\"v\": {\"type\": \"GeometryCollection\", \"geometries\": [{\"type\": \"GeometryCollection\", "
	    "\"geometries\": []}]}}", &m), 2);
	TT_ASSERT(strncmp(m, "GeometryCollections cannot be nested: ", 38) == 0);
	bson_free(m);
	TT_EQ_INT(parse_err("{\"v\": 5}", &m), 2);
	TT_EQ_STR(m, "geo element must be an array or object: v: 5");
	bson_free(m);
	/* a polygon with a hole, a collection of every type */
	TT_EQ_INT(parse_err("{\"v\": {\"type\": \"Polygon\", \"coordinates\": [[[0, 0], [10, 0], [10, 10], [0, 10], [0, 0]], "
	    "[[2, 2], [4, 2], [4, 4], [2, 4], [2, 2]]]}}", &m), 0);
	bson_free(m);
	TT_EQ_INT(parse_err("{\"v\": {\"type\": \"GeometryCollection\", \"geometries\": [{\"type\": \"Point\", \"coordinates\": "
	    "[1, 1]}, {\"type\": \"LineString\", \"coordinates\": [[0, 0], [1, 1]]}, {\"type\": \"MultiPolygon\", "
	    "\"coordinates\": [[[[0, 0], [1, 0], [1, 1], [0, 0]]]]}, {\"type\": \"MultiLineString\", \"coordinates\": "
	    "[[[0, 0], [2, 2]]]}, {\"type\": \"MultiPoint\", \"coordinates\": [[3, 3]]}]}}", &m), 0);
	bson_free(m);
}

static bool
q_matches(const char *pred, const char *op_json, const char *doc_json)
{
	bson_t *q = tt_json(op_json), *d = tt_json(doc_json);
	bson_iter_t qi, di;
	geo_shape_t qs, ds;
	terr_t err = TERR_INIT;
	bool ok = false;

	bson_iter_init_find(&qi, q, "q");
	bson_iter_init_find(&di, d, "v");
	if (geo_query_parse(strcmp(pred, "within") == 0 ? GEO_PRED_WITHIN : GEO_PRED_INTERSECTS, bson_iter_value(&qi), &qs,
	    &err) == 0) {
		if (geo_parse_stored("v", bson_iter_value(&di), &ds, &err) == 0) {
			ok = geo_shape_matches(strcmp(pred, "within") == 0 ? GEO_PRED_WITHIN : GEO_PRED_INTERSECTS, &qs, &ds);
			geo_shape_destroy(&ds);
		}
		geo_shape_destroy(&qs);
	}
	terr_clear(&err);
	bson_destroy(q);
	bson_destroy(d);
	return ok;
}

#define SQUARE "{\"q\": {\"$geometry\": {\"type\": \"Polygon\", \"coordinates\": [[[0, 0], [10, 0], [10, 10], [0, 10], [0, 0]]]}}}"

static void
test_predicates(void)
{
	TT_ASSERT(q_matches("within", SQUARE, "{\"v\": [5, 5]}"));
	TT_ASSERT(!q_matches("within", SQUARE, "{\"v\": [15, 5]}"));
	TT_ASSERT(q_matches("within", SQUARE, "{\"v\": {\"type\": \"LineString\", \"coordinates\": [[1, 1], [2, 2]]}}"));
	TT_ASSERT(!q_matches("within", SQUARE, "{\"v\": {\"type\": \"LineString\", \"coordinates\": [[1, 1], [20, 2]]}}"));
	TT_ASSERT(q_matches("intersects", SQUARE, "{\"v\": {\"type\": \"LineString\", \"coordinates\": [[1, 1], [20, 2]]}}"));
	TT_ASSERT(!q_matches("intersects", SQUARE, "{\"v\": {\"type\": \"LineString\", \"coordinates\": [[11, 1], [20, 2]]}}"));
	/* flat shapes take points only, legacy or GeoJSON */
	TT_ASSERT(q_matches("within", "{\"q\": {\"$box\": [[0, 0], [2, 2]]}}", "{\"v\": [1, 2]}"));
	TT_ASSERT(q_matches("within", "{\"q\": {\"$box\": [[0, 0], [2, 2]]}}",
	    "{\"v\": {\"type\": \"Point\", \"coordinates\": [1, 1]}}"));
	TT_ASSERT(!q_matches("within", "{\"q\": {\"$box\": [[0, 0], [2, 2]]}}", "{\"v\": [3, 1]}"));
	TT_ASSERT(q_matches("within", "{\"q\": {\"$polygon\": [[0, 0], [4, 0], [0, 4]]}}", "{\"v\": [1, 1]}"));
	TT_ASSERT(!q_matches("within", "{\"q\": {\"$polygon\": [[0, 0], [4, 0], [0, 4]]}}", "{\"v\": [3, 3]}"));
	TT_ASSERT(q_matches("within", "{\"q\": {\"$center\": [[0, 0], 5]}}", "{\"v\": [3, 4]}"));
	TT_ASSERT(!q_matches("within", "{\"q\": {\"$center\": [[0, 0], 4.9]}}", "{\"v\": [3, 4]}"));
	/* $centerSphere: radians on the sphere */
	TT_ASSERT(q_matches("within", "{\"q\": {\"$centerSphere\": [[0, 0], 0.1]}}", "{\"v\": [5, 0]}"));
	TT_ASSERT(!q_matches("within", "{\"q\": {\"$centerSphere\": [[0, 0], 0.05]}}", "{\"v\": [5, 0]}"));
	/* $geoWithin takes polygons only; $geoIntersects only $geometry */
	TT_ASSERT(!q_matches("within", "{\"q\": {\"$geometry\": {\"type\": \"Point\", \"coordinates\": [1, 1]}}}", "{\"v\": [1, 1]}"));
	TT_ASSERT(!q_matches("intersects", "{\"q\": {\"$box\": [[0, 0], [2, 2]]}}", "{\"v\": [1, 1]}"));
}

/* ---- through the embedded API ------------------------------------------------ */

static bson_t *
run(const char *json, int *rc)
{
	return tt_run_json(db, "test", json, rc);
}

static void
ok(const char *json)
{
	int rc;
	bson_t *r = run(json, &rc);
	if (rc != 0) {
		char *j = bson_as_relaxed_extended_json(r, NULL);
		TT_FAIL_("command failed: %s -> %s", json, j);
		bson_free(j);
	}
	tt_free_reply(r);
}

static char *
batch(const char *json)
{
	int rc;
	bson_t *r = run(json, &rc);
	char *s = tt_batch_text(r, rc, "none");
	tt_free_reply(r);
	return s;
}

/* the _ids of a find's first batch, "1,2,3" */
static char *
ids(const char *json)
{
	int rc;
	bson_t *r = run(json, &rc);
	bson_string_t *s = bson_string_new("");
	bson_iter_t f, it;

	if (rc != 0) {
		bson_string_append_printf(s, "error %d", (int)tt_get_i64(r, "code"));
	} else if (tt_get(r, "cursor.firstBatch", &f) && bson_iter_recurse(&f, &it)) {
		bool first = true;
		while (bson_iter_next(&it)) {
			bson_iter_t d;
			if (bson_iter_recurse(&it, &d) && bson_iter_find(&d, "_id")) {
				bson_string_append_printf(s, "%s%d", first ? "" : ",", (int)bson_iter_as_int64(&d));
				first = false;
			}
		}
	}
	tt_free_reply(r);
	return bson_string_free(s, false);
}

static int
err_code(const char *json)
{
	int rc;
	bson_t *r = run(json, &rc);
	int code = rc != 0 ? (int)tt_get_i64(r, "code") : 0;
	if (code == -999)
		code = (int)tt_get_i64(r, "writeErrors.0.code");
	if (rc == 0 && code == 0 && tt_get_i64(r, "writeErrors.0.code") != -999)
		code = (int)tt_get_i64(r, "writeErrors.0.code");
	tt_free_reply(r);
	return code;
}

static void
seed_shops(void)
{
	ok("{\"drop\": \"shops\"}");
	ok("{\"createIndexes\": \"shops\", \"indexes\": [{\"key\": {\"loc\": \"2dsphere\"}, \"name\": \"loc_2dsphere\"}]}");
	ok("{\"insert\": \"shops\", \"documents\": ["
	   "{\"_id\": 1, \"loc\": {\"type\": \"Point\", \"coordinates\": [13.4050, 52.5200]}},"
	   "{\"_id\": 2, \"loc\": {\"type\": \"Point\", \"coordinates\": [13.4100, 52.5230]}},"
	   "{\"_id\": 3, \"loc\": [13.50, 52.60]},"
	   "{\"_id\": 4, \"loc\": {\"type\": \"Polygon\", \"coordinates\": [[[13.3, 52.4], [13.35, 52.4], [13.35, 52.45], [13.3, 52.45], [13.3, 52.4]]]}},"
	   "{\"_id\": 5, \"loc\": {\"type\": \"Point\", \"coordinates\": [2.35, 48.85]}},"
	   "{\"_id\": 6}]}");
}

static void
test_index_and_near(void)
{
	char *s;

	seed_shops();
	/* the spec gains its version */
	s = batch("{\"listIndexes\": \"shops\"}");
	TT_ASSERT(strstr(s, "\"2dsphereIndexVersion\" : 3") != NULL);
	bson_free(s);
	/* nothing half-indexed: a bad geometry fails the insert */
	TT_EQ_INT(err_code("{\"insert\": \"shops\", \"documents\": [{\"_id\": 7, \"loc\": {\"type\": \"Point\", \"coordinates\": [200, 0]}}]}"),
	    16755);
	s = ids("{\"find\": \"shops\", \"filter\": {\"_id\": 7}}");
	TT_EQ_STR(s, "");
	bson_free(s);
	/* nearest first, $maxDistance in metres */
	s = ids("{\"find\": \"shops\", \"filter\": {\"loc\": {\"$near\": {\"$geometry\": {\"type\": \"Point\", \"coordinates\": [13.4, 52.52]}}}}}");
	TT_EQ_STR(s, "1,2,4,3,5");
	bson_free(s);
	s = ids("{\"find\": \"shops\", \"filter\": {\"loc\": {\"$near\": {\"$geometry\": {\"type\": \"Point\", \"coordinates\": [13.4, 52.52]}, \"$maxDistance\": 1000}}}}");
	TT_EQ_STR(s, "1,2");
	bson_free(s);
	s = ids("{\"find\": \"shops\", \"filter\": {\"loc\": {\"$near\": {\"$geometry\": {\"type\": \"Point\", \"coordinates\": [13.4, 52.52]}, \"$minDistance\": 500, \"$maxDistance\": 10000}}}}");
	TT_EQ_STR(s, "2,4");
	bson_free(s);
	/* legacy $nearSphere: radians */
	s = ids("{\"find\": \"shops\", \"filter\": {\"loc\": {\"$nearSphere\": [13.4, 52.52], \"$maxDistance\": 0.0002}}}");
	TT_EQ_STR(s, "1,2");
	bson_free(s);
	s = ids("{\"find\": \"shops\", \"filter\": {\"_id\": {\"$gt\": 1}, \"loc\": {\"$near\": {\"$geometry\": {\"type\": \"Point\", \"coordinates\": [13.4, 52.52]}}}}, \"limit\": 2}");
	TT_EQ_STR(s, "2,4");
	bson_free(s);
	/* mongod's placement errors */
	TT_EQ_INT(err_code("{\"find\": \"shops\", \"filter\": {\"$or\": [{\"loc\": {\"$near\": [0, 0]}}, {\"_id\": 1}]}}"), 2);
	TT_EQ_INT(err_code("{\"find\": \"shops\", \"filter\": {\"loc\": {\"$nearSphere\": [0, 0]}}, \"sort\": {\"$natural\": 1}}"), 2);
	/* a flat $near needs a 2d index */
	TT_EQ_INT(err_code("{\"find\": \"shops\", \"filter\": {\"loc\": {\"$near\": [0, 0]}}}"), 291);
	TT_EQ_INT(err_code("{\"find\": \"shops\", \"filter\": {\"other\": {\"$nearSphere\": [0, 0]}}}"), 291);
}

static void
test_geo_near_stage(void)
{
	int rc;
	bson_t *r;
	double d;

	seed_shops();
	r = run("{\"aggregate\": \"shops\", \"pipeline\": [{\"$geoNear\": {\"near\": {\"type\": \"Point\", \"coordinates\": [13.4, 52.52]}, "
	        "\"distanceField\": \"dist.m\", \"includeLocs\": \"where\", \"distanceMultiplier\": 0.001, \"query\": {\"_id\": {\"$lte\": 3}}}}], \"cursor\": {}}", &rc);
	TT_EQ_INT(rc, 0);
	TT_EQ_INT(tt_get_i64(r, "cursor.firstBatch.0._id"), 1);
	TT_EQ_INT(tt_get_i64(r, "cursor.firstBatch.2._id"), 3);
	TT_EQ_INT(tt_get_i64(r, "cursor.firstBatch.3._id"), -999);
	/* S2's angle times 6378.1 km (mongod's kRadiusOfEarthInMeters), in km here */
	{
		double a[3], b[3];
		s2w_point_from_lnglat(13.4, 52.52, a);
		s2w_point_from_lnglat(13.4050, 52.5200, b);
		d = tt_get_dbl(r, "cursor.firstBatch.0.dist.m");
		TT_ASSERT(fabs(d - s2w_angle(a, b) * GEO_EARTH_RADIUS_M * 0.001) <= 1e-9 * d);
	}
	TT_EQ_STR(tt_get_str(r, "cursor.firstBatch.0.where.type"), "Point");
	tt_free_reply(r);
	/* option errors, word for word */
	TT_EQ_INT(err_code("{\"aggregate\": \"shops\", \"pipeline\": [{\"$geoNear\": {}}], \"cursor\": {}}"), 5860400);
	TT_EQ_INT(err_code("{\"aggregate\": \"shops\", \"pipeline\": [{\"$geoNear\": {\"near\": [0, 0], \"distanceField\": 1}}], \"cursor\": {}}"), 16606);
	TT_EQ_INT(err_code("{\"aggregate\": \"shops\", \"pipeline\": [{\"$geoNear\": {\"near\": [0, 0], \"limit\": 1}}], \"cursor\": {}}"), 50858);
	TT_EQ_INT(err_code("{\"aggregate\": \"shops\", \"pipeline\": [{\"$geoNear\": {\"near\": [0, 0], \"maxDistance\": -1}}], \"cursor\": {}}"), 2);
	TT_EQ_INT(err_code("{\"aggregate\": \"shops\", \"pipeline\": [{\"$match\": {}}, {\"$geoNear\": {\"near\": [0, 0]}}], \"cursor\": {}}"), 40602);
	TT_EQ_INT(err_code("{\"aggregate\": \"nogeo\", \"pipeline\": [{\"$geoNear\": {\"near\": [0, 0], \"distanceField\": \"d\"}}], \"cursor\": {}}"), 27);
	/* spherical with a legacy point: radians */
	r = run("{\"aggregate\": \"shops\", \"pipeline\": [{\"$geoNear\": {\"near\": [0, 0], \"distanceField\": \"d\", \"spherical\": true, \"key\": \"loc\"}}, {\"$limit\": 1}], \"cursor\": {}}", &rc);
	TT_EQ_INT(rc, 0);
	TT_EQ_INT(tt_get_i64(r, "cursor.firstBatch.0._id"), 5);
	d = tt_get_dbl(r, "cursor.firstBatch.0.d");
	TT_ASSERT(d > 0.5 && d < 1.0);
	tt_free_reply(r);
}

static void
test_within_indexed(void)
{
	int rc;
	bson_t *r;
	char *a, *b;

	seed_shops();
	/* the covering-bounded scan returns what the collection scan returns */
	a = ids("{\"find\": \"shops\", \"filter\": {\"loc\": {\"$geoWithin\": {\"$geometry\": {\"type\": \"Polygon\", \"coordinates\": [[[13, 52], [14, 52], [14, 53], [13, 53], [13, 52]]]}}}}, \"sort\": {\"_id\": 1}}");
	b = ids("{\"find\": \"shops\", \"filter\": {\"loc\": {\"$geoWithin\": {\"$geometry\": {\"type\": \"Polygon\", \"coordinates\": [[[13, 52], [14, 52], [14, 53], [13, 53], [13, 52]]]}}}}, \"sort\": {\"_id\": 1}, \"hint\": {\"$natural\": 1}}");
	TT_EQ_STR(a, "1,2,3,4");
	TT_EQ_STR(a, b);
	bson_free(a);
	bson_free(b);
	a = ids("{\"find\": \"shops\", \"filter\": {\"loc\": {\"$geoIntersects\": {\"$geometry\": {\"type\": \"LineString\", \"coordinates\": [[13.32, 52.3], [13.32, 52.5]]}}}}}");
	TT_EQ_STR(a, "4");
	bson_free(a);
	a = ids("{\"find\": \"shops\", \"filter\": {\"loc\": {\"$geoWithin\": {\"$centerSphere\": [[13.4, 52.52], 0.0002]}}}, \"sort\": {\"_id\": 1}}");
	TT_EQ_STR(a, "1,2");
	bson_free(a);
	r = run("{\"explain\": {\"find\": \"shops\", \"filter\": {\"loc\": {\"$geoWithin\": {\"$centerSphere\": [[13.4, 52.52], 0.0002]}}}}}", &rc);
	TT_EQ_INT(rc, 0);
	TT_EQ_STR(tt_get_str(r, "queryPlanner.winningPlan.inputStage.stage"), "IXSCAN");
	TT_ASSERT(tt_get_str(r, "queryPlanner.winningPlan.inputStage.indexBounds.loc.0")[0] == '[');
	tt_free_reply(r);
	r = run("{\"explain\": {\"find\": \"shops\", \"filter\": {\"loc\": {\"$nearSphere\": [13.4, 52.52]}}}}", &rc);
	TT_EQ_STR(tt_get_str(r, "queryPlanner.winningPlan.stage"), "GEO_NEAR_2DSPHERE");
	TT_EQ_STR(tt_get_str(r, "queryPlanner.winningPlan.indexName"), "loc_2dsphere");
	tt_free_reply(r);
}

static void
test_2d_index(void)
{
	char *s;
	int rc;
	bson_t *r;

	ok("{\"drop\": \"flat\"}");
	ok("{\"createIndexes\": \"flat\", \"indexes\": [{\"key\": {\"loc\": \"2d\"}, \"name\": \"loc_2d\", \"min\": -50, \"max\": 50, \"bits\": 20}]}");
	ok("{\"insert\": \"flat\", \"documents\": [{\"_id\": 1, \"loc\": [0, 0]}, {\"_id\": 2, \"loc\": [3, 4]}, {\"_id\": 3, \"loc\": [1, 1]}, "
	   "{\"_id\": 4, \"loc\": [[10, 10], [0.5, 0]]}, {\"_id\": 5}]}");
	TT_EQ_INT(err_code("{\"insert\": \"flat\", \"documents\": [{\"_id\": 6, \"loc\": [60, 0]}]}"), 13027);
	TT_EQ_INT(err_code("{\"createIndexes\": \"flat\", \"indexes\": [{\"key\": {\"a\": 1, \"loc\": \"2d\"}, \"name\": \"x\"}]}"), 16801);
	TT_EQ_INT(err_code("{\"createIndexes\": \"flat\", \"indexes\": [{\"key\": {\"z\": \"2d\"}, \"name\": \"y\", \"bits\": 0}]}"), 72);
	s = ids("{\"find\": \"flat\", \"filter\": {\"loc\": {\"$near\": [0, 0]}}}");
	TT_EQ_STR(s, "1,4,3,2");
	bson_free(s);
	s = ids("{\"find\": \"flat\", \"filter\": {\"loc\": {\"$near\": [0, 0], \"$maxDistance\": 2}}}");
	TT_EQ_STR(s, "1,4,3");
	bson_free(s);
	s = ids("{\"find\": \"flat\", \"filter\": {\"loc\": {\"$geoWithin\": {\"$box\": [[0.5, 0.5], [5, 5]]}}}, \"sort\": {\"_id\": 1}}");
	TT_EQ_STR(s, "2,3");
	bson_free(s);
	r = run("{\"aggregate\": \"flat\", \"pipeline\": [{\"$geoNear\": {\"near\": [0, 0], \"distanceField\": \"d\"}}], \"cursor\": {}}", &rc);
	TT_EQ_INT(rc, 0);
	TT_ASSERT(tt_get_dbl(r, "cursor.firstBatch.3.d") == 5.0);
	TT_ASSERT(fabs(tt_get_dbl(r, "cursor.firstBatch.2.d") - sqrt(2)) < 1e-15);
	tt_free_reply(r);
	r = run("{\"explain\": {\"find\": \"flat\", \"filter\": {\"loc\": {\"$near\": [0, 0]}}}}", &rc);
	TT_EQ_STR(tt_get_str(r, "queryPlanner.winningPlan.stage"), "GEO_NEAR_2D");
	tt_free_reply(r);
}

int
main(void)
{
	char *dir = tt_tmpdir("geo");

	TT_RUN(test_cell_ids);
	TT_RUN(test_s2_params);
	TT_RUN(test_geohash);
	TT_RUN(test_distances);
	TT_RUN(test_doc_distance);
	TT_RUN(test_validation);
	TT_RUN(test_predicates);
	if ((db = tt_open_new(dir)) == NULL)
		return 1;
	TT_RUN(test_index_and_near);
	TT_RUN(test_geo_near_stage);
	TT_RUN(test_within_indexed);
	TT_RUN(test_2d_index);
	tt_close_rm(db, dir);
	return tt_finish();
}
