/*
 * plan_geo.h -- the geo access paths of a find (query/ only; plan.c calls
 * them): mongod's GEO_NEAR_2DSPHERE / GEO_NEAR_2D for $near and
 * $nearSphere, and an IXSCAN over S2 covering bounds for $geoWithin /
 * $geoIntersects on a 2dsphere index.
 *
 * Near: on a 2dsphere index whose first field is the geo field, rings of
 * growing radius around the point, each covered by S2 cells (mongod's
 * annulus search): the keys of the ring's cells and their ancestors are
 * scanned, each document fetched, its distance computed (the nearest of
 * its geometries at the path), kept when it falls in the ring and passes
 * the filter, and the ring's documents returned nearest first.  Other
 * near plans (a 2d index, a compound 2dsphere index with fields before the
 * geo one) measure every document of a collection scan and sort them
 * (same results, slower).  Whatever the path, documents come out in
 * distance order, ties in RecordId order.
 */
#ifndef TAMGA_QUERY_PLAN_GEO_H
#define TAMGA_QUERY_PLAN_GEO_H

#include <stdbool.h>
#include <bson/bson.h>

#include "common/error.h"
#include "query/match.h"
#include "query/plan.h"
#include "storage/storage.h"

typedef struct geo_run geo_run_t;

/*
 * Look at the filter: 0 with *out NULL when no geo plan applies (no $near,
 * and no 2dsphere index to bound a $geoWithin/$geoIntersects), 0 with *out
 * set to a new run (caller frees with plan_geo_free), or -1 with err:
 * 2 "Too many geoNear expressions", 2 "geoNear must be top-level expr",
 * 2 "geoNear expression not allowed with $natural sort order / hint",
 * 291 "... unable to find index for $geoNear query" (no geo index on the
 * $near path).  coll NULL (no collection): a $near plan over nothing.
 */
int plan_geo_setup(const storage_coll_t *coll, const match_t *m, const plan_request_t *req,
                   geo_run_t **out, terr_t *err);

/* Next document (as plan_exec_next_record): 1 with *recid and a view in
 * *doc, 0 at the end, -1 with err (50 MaxTimeMSExpired...).  m is the
 * whole filter (checked on every fetched document); stats gets keys and
 * documents examined. */
int plan_geo_next(geo_run_t *r, storage_session_t *s, storage_coll_t *coll, const match_t *m,
                  recid_t *recid, bson_t *doc, plan_stats_t *stats, terr_t *err);

/* Whether r is a near plan (results in distance order; a sort on top is
 * still applied by plan.c when the request has one). */
bool plan_geo_is_near(const geo_run_t *r);
/* The current document's distance (near plans) in the query's units, and
 * its nearest location (a view into the current document, valid as it). */
double plan_geo_distance(const geo_run_t *r);
bool plan_geo_location(geo_run_t *r, bson_value_t *loc);

/* returnKey: keep, for a covering scan ($geoWithin / $geoIntersects over a
 * 2dsphere index), the index entry that gave each document first (call
 * before the first plan_geo_next; near plans keep none).
 * plan_geo_cur_key: that entry for the document plan_geo_next returned
 * last (borrowed until the next call; tb NULL when it has no type bits),
 * false when r keeps none. */
void plan_geo_want_keys(geo_run_t *r);
bool plan_geo_cur_key(const geo_run_t *r, const uint8_t **key, size_t *klen, const uint8_t **tb,
                      size_t *tblen);

/* The index it uses (position in coll->indexes, -1 none). */
int plan_geo_index(const geo_run_t *r);

/* True when m has a $geoWithin / $geoIntersects on a field of one of
 * coll's visible 2d / 2dsphere indexes (mongod would scan that index where
 * Tamga may scan the collection: returnKey cannot give mongod's key). */
bool plan_geo_indexed_predicate(const storage_coll_t *coll, const match_t *m);

/* explain: the stage as mongod shows it, as fields of out
 * (GEO_NEAR_2DSPHERE {keyPattern, indexName, indexVersion}, or FETCH over
 * IXSCAN with the covering's indexBounds). */
void plan_geo_explain(const geo_run_t *r, const storage_coll_t *coll, const match_t *m,
                      bool exec_stats, const plan_stats_t *stats, bson_t *out);

void plan_geo_free(geo_run_t *r);

#endif
