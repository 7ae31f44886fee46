/*
 * geo.h -- geospatial values as mongod reads them (src/mongo/db/geo/):
 * stored geometries (GeoJSON and legacy coordinate pairs), the query
 * shapes of $geoWithin / $geoIntersects ($geometry, $box, $polygon,
 * $center, $centerSphere), the point of $near / $nearSphere / $geoNear,
 * their distance formulas, the 2dsphere index parameters and cells, and
 * 2d indexes' GeoHash.
 *
 * Below query/ and above bson/ and common/.  Spherical geometry is S2's,
 * reached through geo/s2_wrap.h; this layer owns the BSON, the rules and
 * mongod's messages.  No index scan, plan or match tree here.
 */
#ifndef TAMGA_GEO_GEO_H
#define TAMGA_GEO_GEO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <bson/bson.h>

#include "bson/path.h"
#include "common/error.h"
#include "geo/s2_wrap.h"

/* mongod's kRadiusOfEarthInMeters (6378.1 km): $near / $geoNear metres. */
#define GEO_EARTH_RADIUS_M (6378.1 * 1000.0)

typedef enum { GEO_FLAT, GEO_SPHERE, GEO_STRICT_SPHERE } geo_crs_t;

typedef enum {
	GEO_POINT, GEO_LINE, GEO_POLYGON, GEO_MULTIPOINT, GEO_MULTILINE, GEO_MULTIPOLYGON,
	GEO_COLLECTION,
	GEO_BOX, GEO_FLAT_POLYGON, GEO_CENTER, GEO_CENTER_SPHERE,  /* query shapes only */
} geo_kind_t;

/* A parsed geometry.  Zero-initialise, fill with a geo_*_parse, release
 * with geo_shape_destroy.  Read-only once parsed (threads may share it). */
typedef struct geo_shape {
	geo_kind_t kind;
	geo_crs_t crs;
	double x, y;             /* POINT: the coordinates as given (lng, lat); CENTER*: the center */
	bool sphere_ok;          /* POINT: x, y are a valid lng/lat (it projects onto the sphere) */
	double xyz[3];           /* POINT with sphere_ok: the unit vector */
	double radius;           /* CENTER (flat units), CENTER_SPHERE (radians) */
	double box[4];           /* BOX: min x, min y, max x, max y */
	double *poly;            /* FLAT_POLYGON: x, y pairs (owned) */
	size_t npoly;
	s2w_geom_t *s2;          /* the spherical form; NULL for flat shapes and for a stored point (xyz is enough) */
} geo_shape_t;

void geo_shape_destroy(geo_shape_t *s);

/*
 * A stored value (GeometryContainer::parseFromStorage): an array or an
 * object whose first field is a number is a legacy point (extra fields
 * allowed), anything else GeoJSON by its "type".  Returns 0, or -1 with
 * err 2 BadValue and mongod's reason ("geo element must be an array or
 * object: loc: 5", "unknown GeoJSON type: { ... }", "Loop is not closed:
 * ...", "longitude/latitude is out of bounds, lng: 200 lat: 0", ...).
 * field names the element in the first message.
 */
int geo_parse_stored(const char *field, const bson_value_t *v, geo_shape_t *out, terr_t *err);

/* The predicates. */
typedef enum { GEO_PRED_WITHIN, GEO_PRED_INTERSECTS } geo_pred_t;

/*
 * The operand of $geoWithin / $within ({$geometry: Polygon|MultiPolygon},
 * {$box: [[x, y], [x, y]]}, {$polygon: [[x, y] ...]}, {$center: [[x, y],
 * r]}, {$centerSphere: [[lng, lat], radians]}) or of $geoIntersects
 * ({$geometry: any GeoJSON}).  Errors are mongod's (2 BadValue).
 */
int geo_query_parse(geo_pred_t pred, const bson_value_t *arg, geo_shape_t *out, terr_t *err);

/* Does a stored geometry satisfy the predicate against the query shape
 * (GeometryContainer::contains / intersects, in the query's CRS: flat
 * shapes only take points)? */
bool geo_shape_matches(geo_pred_t pred, const geo_shape_t *query, const geo_shape_t *doc);

/*
 * $near / $nearSphere / $geoNear's point.  unit_radians: distances in
 * radians on the sphere (a legacy point with $nearSphere or spherical);
 * flat: Euclidean distances on the plane (legacy $near); otherwise metres
 * on the sphere (a GeoJSON point).  max_dist = DBL_MAX when none.
 */
typedef struct geo_near {
	bool flat;
	bool unit_radians;
	bool is_near_sphere;     /* $nearSphere (explain's isNearSphere) */
	bool geojson;            /* the point was GeoJSON */
	double x, y;
	double xyz[3];           /* valid unless flat */
	double min_dist, max_dist;
	bool has_min, has_max;
	/* set by the executor: answered by a 2d index, whose $nearSphere
	 * measures with spheredist_deg instead of S2 */
	bool index_2d;
} geo_near_t;

/* Parse {$near: ...} / {$nearSphere: ...}: opname and arg its value, op
 * the whole operator document (for sibling $maxDistance / $minDistance).
 * mongod's GeoNearExpression::parseFrom rules and messages. */
int geo_near_parse(const char *opname, const bson_value_t *arg, const bson_value_t *op,
                   geo_near_t *out, terr_t *err);

/* The distance from n's point to a stored geometry in n's units (the
 * nearest of its parts); returns false when n cannot measure it (a flat
 * near and a non-point, an off-sphere point on the sphere). */
bool geo_near_distance(const geo_near_t *n, const geo_shape_t *doc, double *out);

/*
 * A document's distance from n's point: the least geo_near_distance over
 * the geometries doc holds at path, as mongod's StoredGeometry::
 * extractGeometries and minDistance gather them for $near, $nearSphere,
 * $geoNear and time-series $_internalGeoNearDistance.  path is walked
 * without expanding a leaf array (bson/path.h's query walk: arrays met on
 * the way are traversed); each value reached that parses as a stored
 * geometry (geo_parse_stored) counts, and a value that does not but is an
 * array counts each element that does (an array of points or of GeoJSON
 * objects), one level deep.  Values that do not parse, and geometries n
 * cannot measure, are passed over.  Returns true with *dist (n's units)
 * and, when loc is not NULL, *loc set to the nearest geometry (the first
 * of equals; borrowed: points into doc's bytes); false when doc holds no
 * measurable geometry there (*dist and *loc untouched).  Allocates only
 * what parsing a non-point geometry takes, freed before it returns.
 */
bool geo_near_doc_distance(const geo_near_t *n, const bson_t *doc, const bpath_t *path, double *dist,
                           bson_value_t *loc);

/* mongod's spheredist_deg: the great-circle angle in radians between two
 * (lng, lat) points in degrees (2d indexes' $nearSphere). */
double geo_spheredist_deg(double x1, double y1, double x2, double y2);

/* ---- 2dsphere indexes ---------------------------------------------------- */

typedef struct geo_s2_params {
	int version;             /* 2dsphereIndexVersion (1..3, default 3) */
	int finest, coarsest;    /* levels for non-points (points: 30 in version 3) */
	int max_cells;           /* maxCellsInCovering */
} geo_s2_params_t;

/* The params of a 2dsphere index spec (initialize2dsphereParams): 16747,
 * 16748, 16749 for bad levels, 17395 for an unknown version. */
int geo_s2_params(const bson_t *spec, geo_s2_params_t *out, terr_t *err);

/* The index cells of a stored geometry: *cells (caller frees with free())
 * of *n ids.  Errors: 2 (can't project geometry into spherical CRS,
 * strict winding), with mongod's reason. */
int geo_s2_cells(const geo_s2_params_t *p, const geo_shape_t *s, uint64_t **cells, size_t *n,
                 terr_t *err);

/* ---- 2d indexes: GeoHash (mongod's hash.cpp) ----------------------------- */

typedef struct geo_2d_params {
	int bits;                /* 1..32, default 26 */
	double min, max;         /* default [-180, 180] */
	double scaling;          /* 2^32 / (max - min) */
	double error;            /* one diagonal cell plus epsilon */
} geo_2d_params_t;

/* From a 2d index spec (GeoHashConverter::createFromDoc): 67 InvalidOptions... */
int geo_2d_params(const bson_t *spec, geo_2d_params_t *out, terr_t *err);
/* The 64-bit GeoHash of (x, y): x bits on even positions from the top, y
 * on odd ones, the low 64 - 2 * bits zero.  -1 when out of [min, max]. */
int geo_2d_hash(const geo_2d_params_t *p, double x, double y, uint64_t *out);
/* The 8-byte key form mongod stores (BinData subtype 128): big-endian. */
void geo_2d_hash_bytes(uint64_t h, uint8_t out[8]);

#endif
