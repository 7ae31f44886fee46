/*
 * s2_wrap.h -- the C interface to S2 (Google's s2geometry, libs2-dev), the
 * spherical geometry library mongod's 2dsphere indexes are built on.
 *
 * S2 is C++; s2_wrap.cc is the only C++ file of Tamga's geo support and the
 * only one that includes S2.  It knows nothing about BSON, GeoJSON or
 * MongoDB's messages: geo/ parses documents and queries into unit vectors
 * and loops, hands them here, and formats mongod's errors from the short
 * reasons returned.  Every function is safe to call from many threads on
 * distinct objects; a built s2w_geom_t is read-only afterwards (queries
 * on it may run concurrently).  No function throws or aborts on bad input:
 * invalid loops and lines are reported through the return value.
 */
#ifndef TAMGA_GEO_S2_WRAP_H
#define TAMGA_GEO_S2_WRAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The unit vector of (lng, lat) in degrees: S2LatLng::FromDegrees(lat,
 * lng).Normalized().ToPoint(), as mongod's coordToPoint. */
void s2w_point_from_lnglat(double lng, double lat, double out[3]);
/* S1Angle(a, b).radians(): mongod's S2Distance::distanceRad. */
double s2w_angle(const double a[3], const double b[3]);
/* S2CellId of the point at level (0..30). */
uint64_t s2w_cell_from_point(const double p[3], int level);
/* The leaf-cell range of a cell: range_min()..range_max(). */
void s2w_cell_range(uint64_t id, uint64_t *lo, uint64_t *hi);
/* parent(level) and level() of a valid cell id. */
uint64_t s2w_cell_parent(uint64_t id, int level);
int s2w_cell_level(uint64_t id);
/* S2::kAvgEdge.GetClosestLevel(radians): how mongod derives index levels. */
int s2w_avg_edge_closest_level(double radians);

/* A geometry: points, polylines and polygons (a GeoJSON geometry or
 * collection), optionally one cap ($centerSphere / $near's disc).  Built
 * with the add calls, then queried.  Caller frees with s2w_geom_free. */
typedef struct s2w_geom s2w_geom_t;

s2w_geom_t *s2w_geom_new(void);
void s2w_geom_free(s2w_geom_t *g);

void s2w_geom_add_point(s2w_geom_t *g, const double p[3]);

/* Why a loop, line or polygon was refused (geo/ words mongod's message;
 * reason gets S2's own explanation where mongod prints one). */
typedef enum {
	S2W_OK = 0,
	S2W_LINE_INVALID,          /* "GeoJSON LineString is not valid: <reason> <coords>" */
	S2W_LOOP_INVALID,          /* "Loop is not valid: <loop> <reason>" (loop index in *which) */
	S2W_LOOP_NOT_HOLE,         /* "Secondary loops not contained by first exterior loop ..." */
	S2W_POLYGON_INVALID,       /* "Polygon isn't valid: <reason> <coords>" */
	S2W_POLYGON_NOT_NORMALIZED,/* "<reason>: <coords>" */
	S2W_POLYGON_MANY_SHELLS,   /* "Only one exterior polygon loop is allowed: <coords>" */
	S2W_POLYGON_NESTED,        /* "Polygon interior loops cannot be nested: <coords>" */
} s2w_status_t;

/* Add a line of n vertices (duplicates already erased, n >= 2).  Invalid
 * lines (antipodal adjacent vertices...) are refused unless skip_validation. */
s2w_status_t s2w_geom_add_polyline(s2w_geom_t *g, const double (*v)[3], size_t n,
                                   bool skip_validation, char *reason, size_t reason_len);

/* Add a polygon: nloops loops, loop i has lens[i] vertices (closing vertex
 * dropped, >= 3 each) stored one after the other in v.  mongod's checks in
 * order: each loop valid, normalized (at most a hemisphere), contained in
 * the first; the loops a valid nested polygon; normalized; one shell;
 * nesting depth at most 1.  *which: the failing loop's index. */
s2w_status_t s2w_geom_add_polygon(s2w_geom_t *g, size_t nloops, const size_t *lens,
                                  const double (*v)[3], bool skip_validation, int *which,
                                  char *reason, size_t reason_len);

/* Set the geometry's cap: the points within `radians` of center. */
void s2w_geom_set_cap(s2w_geom_t *g, const double center[3], double radians);

/* Predicates.  region: a geometry of polygons only, or a cap alone.
 * s2w_within: every part of g lies in region (a MultiPolygon region: each
 * part in one of its polygons, as mongod's GeometryContainer::contains).
 * s2w_intersects: some part of a touches b (either may be a cap). */
bool s2w_within(const s2w_geom_t *region, const s2w_geom_t *g);
bool s2w_intersects(const s2w_geom_t *a, const s2w_geom_t *b);

/* s2w_within / s2w_intersects for a single point p as the second
 * geometry, without building one. */
bool s2w_within_point(const s2w_geom_t *region, const double p[3]);
bool s2w_intersects_point(const s2w_geom_t *a, const double p[3]);

/* Smallest angle in radians from p to g (0 inside a polygon). */
double s2w_distance(const s2w_geom_t *g, const double p[3]);

/* The cell covering of g (or of its cap) with S2RegionCoverer(min_level,
 * max_level, max_cells); *n cells written to a new array *out the caller
 * frees with free().  Returns 0, or -1 when out of memory. */
int s2w_cover(const s2w_geom_t *g, int min_level, int max_level, int max_cells, uint64_t **out,
              size_t *n);

/* The covering of the annulus inner <= d(center, x) <= outer (radians;
 * inner 0: the disc), as mongod's near stage covers each ring. */
int s2w_cover_annulus(const double center[3], double inner, double outer, int min_level,
                      int max_level, int max_cells, uint64_t **out, size_t *n);

/* Whether g holds exactly one point (mongod's isPoint: indexed at level 30). */
bool s2w_geom_is_point(const s2w_geom_t *g);
/* The number of parts (points, lines, polygons). */
size_t s2w_geom_parts(const s2w_geom_t *g);

#ifdef __cplusplus
}
#endif

#endif
