/*
 * stage_geo.c -- $geoNear (mongod's DocumentSourceGeoNear).
 *
 * The stage is a near query: its options become the filter {query...,
 * key: {$near | $nearSphere: near, $minDistance, $maxDistance}}, which
 * pipeline.c pushes into the find executor as the pipeline's source (the
 * stage must be first), so the near plan of query/plan_geo.c answers it.
 * The stage then writes each document's distance (times
 * distanceMultiplier) at distanceField and, with includeLocs, the
 * location it was measured to.  Without key, the collection's one 2d
 * index (else its one 2dsphere index) names the field.
 *
 * $_internalGeoNearDistance (below) is the distance half of a time-series
 * collection's $geoNear, which has no near plan over buckets.
 */
#include "agg/agg_private.h"

#include <string.h>

#include "agg/agg_doc.h"
#include "bson/path.h"
#include "bson/value.h"
#include "geo/geo.h"
#include "common/mem.h"
#include "query/keygen.h"
#include "query/plan.h"

typedef struct geo_plan {
	bson_t *filter;          /* first: what pipeline.c reads as the source filter */
	char *distance_field;    /* NULL: none (optional since 8.1) */
	char *include_locs;
	double multiplier;
	bool has_multiplier;
} geo_plan_t;

static void
geo_plan_free(void *p)
{
	geo_plan_t *gp = p;

	if (gp == NULL)
		return;
	if (gp->filter != NULL)
		bson_destroy(gp->filter);
	bson_free(gp->distance_field);
	bson_free(gp->include_locs);
	bson_free(gp);
}

/* The geo field when no key is given: the one 2d index, else the one
 * 2dsphere index (mongod's geo near index choice) of the collection the
 * pipeline reads (a sub-pipeline's own). */
static int
infer_key(agg_pctx_t *pc, char **out, terr_t *err)
{
	const agg_host_t *h = pc->host;
	storage_coll_t *coll = NULL;
	const char *f2d = NULL, *fs = NULL;
	int n2d = 0, ns = 0, ret = 0;

	const char *name = pc->coll != NULL ? pc->coll : h != NULL ? h->coll : NULL;

	*out = NULL;
	if (h == NULL || name == NULL || storage_coll_get(h->st, h->db, name, &coll, NULL) != 0 ||
	    coll == NULL)
		return terr_set(err, TERR_INDEX_NOT_FOUND,
		                "$geoNear requires a 2d or 2dsphere index, but none were found");
	for (int i = 0; i < coll->nindexes; i++) {
		bson_iter_t it;
		if (!bson_iter_init(&it, coll->indexes[i].key))
			continue;
		while (bson_iter_next(&it)) {
			if (!BSON_ITER_HOLDS_UTF8(&it))
				continue;
			if (strcmp(bson_iter_utf8(&it, NULL), "2d") == 0) {
				n2d++;
				f2d = bson_iter_key(&it);
			} else if (strcmp(bson_iter_utf8(&it, NULL), "2dsphere") == 0) {
				ns++;
				fs = bson_iter_key(&it);
			}
		}
	}
	if (n2d > 1)
		ret = terr_set(err, TERR_INDEX_NOT_FOUND,
		               "There is more than one 2d index on %s; unsure which to use for $geoNear", coll->ns);
	else if (n2d == 1)
		*out = bson_strdup(f2d);
	else if (ns > 1)
		ret = terr_set(err, TERR_INDEX_NOT_FOUND,
		               "There is more than one 2dsphere index on %s; unsure which to use for $geoNear",
		               coll->ns);
	else if (ns == 1)
		*out = bson_strdup(fs);
	else
		ret = terr_set(err, TERR_INDEX_NOT_FOUND,
		               "$geoNear requires a 2d or 2dsphere index, but none were found");
	storage_coll_release(coll);
	return ret;
}

static int
num_opt(const bson_iter_t *it, const char *name, double *out, terr_t *err)
{
	const bson_value_t *v = bson_iter_value((bson_iter_t *)it);

	if (!bv_is_number(v))
		return terr_set(err, TERR_TYPE_MISMATCH, "%s must be a number", name);
	*out = bv_as_double(v);
	if (!(*out >= 0))
		return terr_set(err, TERR_BAD_VALUE, "%s must be nonnegative", name);
	return 0;
}

static int
geonear_stage_parse(agg_pctx_t *pc, const bson_value_t *spec, terr_t *err)
{
	geo_plan_t *gp;
	bson_iter_t it;
	bson_value_t near = {.value_type = BSON_TYPE_EOD};
	bson_t query = BSON_INITIALIZER, nearop;
	double maxd = 0, mind = 0;
	bool has_max = false, has_min = false, spherical = false, has_query = false;
	char *key = NULL;
	int ret = 0;

	if (spec->value_type != BSON_TYPE_DOCUMENT)
		return terr_set(err, TERR_FAILED_TO_PARSE, "$geoNear must take a nested object but found: %s",
		                "a non-object");
	gp = tm_malloc0(sizeof *gp);
	bson_iter_init_from_data(&it, spec->value.v_doc.data, spec->value.v_doc.data_len);
	while (bson_iter_next(&it)) {
		const char *k = bson_iter_key(&it);
		if (!strcmp(k, "collation"))
			ERR(terr_set(err, 40227, "$geoNear does not accept the 'collation' parameter. Instead, specify a "
			             "collation for the entire aggregation command."));
		if (!strcmp(k, "limit"))
			ERR(terr_set(err, 50858, "$geoNear no longer supports the 'limit' parameter. Use a $limit stage "
			             "instead."));
		if (!strcmp(k, "num"))
			ERR(terr_set(err, 50857, "$geoNear no longer supports the 'num' parameter. Use a $limit stage "
			             "instead."));
		if (!strcmp(k, "start"))
			ERR(terr_set(err, 50856, "$geoNear no longer supports the 'start' argument."));
	}
	bson_iter_init_from_data(&it, spec->value.v_doc.data, spec->value.v_doc.data_len);
	while (bson_iter_next(&it)) {
		const char *k = bson_iter_key(&it);
		if (!strcmp(k, "near")) {
			near = *bson_iter_value(&it);
		} else if (!strcmp(k, "distanceField")) {
			if (!BSON_ITER_HOLDS_UTF8(&it))
				ERR(terr_set(err, 16606, "$geoNear requires a 'distanceField' option as a String"));
			gp->distance_field = bson_strdup(bson_iter_utf8(&it, NULL));
		} else if (!strcmp(k, "maxDistance")) {
			ERR(num_opt(&it, "maxDistance", &maxd, err));
			has_max = true;
		} else if (!strcmp(k, "minDistance")) {
			ERR(num_opt(&it, "minDistance", &mind, err));
			has_min = true;
		} else if (!strcmp(k, "distanceMultiplier")) {
			ERR(num_opt(&it, "distanceMultiplier", &gp->multiplier, err));
			gp->has_multiplier = true;
		} else if (!strcmp(k, "query")) {
			const uint8_t *d;
			uint32_t l;
			bson_t q;
			if (!BSON_ITER_HOLDS_DOCUMENT(&it))
				ERR(terr_set(err, TERR_TYPE_MISMATCH, "query must be an object"));
			bson_iter_document(&it, &l, &d);
			bson_init_static(&q, d, l);
			bson_concat(&query, &q);
			has_query = true;
		} else if (!strcmp(k, "spherical")) {
			spherical = bson_iter_as_bool(&it);
		} else if (!strcmp(k, "includeLocs")) {
			if (!BSON_ITER_HOLDS_UTF8(&it))
				ERR(terr_set(err, 16607, "$geoNear requires that 'includeLocs' option is a String"));
			gp->include_locs = bson_strdup(bson_iter_utf8(&it, NULL));
		} else if (!strcmp(k, "key")) {
			if (!BSON_ITER_HOLDS_UTF8(&it))
				ERR(terr_set(err, TERR_TYPE_MISMATCH,
				             "$geoNear parameter 'key' must be of type string but found type: %s",
				             bv_type_name(bson_iter_type(&it))));
			if (bson_iter_utf8(&it, NULL)[0] == '\0')
				ERR(terr_set(err, TERR_BAD_VALUE, "$geoNear parameter 'key' cannot be the empty string"));
			key = bson_strdup(bson_iter_utf8(&it, NULL));
		} else if (!strcmp(k, "uniqueDocs")) {
			continue;
		} else {
			ERR(terr_set(err, TERR_FAILED_TO_PARSE, "unknown argument to $geoNear: %s", k));
		}
	}
	if (near.value_type == BSON_TYPE_EOD)
		ERR(terr_set(err, 5860400, "$geoNear requires a 'near' argument"));
	if (near.value_type != BSON_TYPE_DOCUMENT && near.value_type != BSON_TYPE_ARRAY)
		ERR(terr_set(err, 5860401,
		             "$geoNear requires near argument to be a GeoJSON object or a legacy point(array)"));
	if (key == NULL && infer_key(pc, &key, err) != 0)
		ERR(-1);
	(void)has_query;
	/* asNearQuery: {query..., key: {$near|$nearSphere: near, $minDistance, $maxDistance}} */
	gp->filter = bson_new();
	bson_concat(gp->filter, &query);
	bson_append_document_begin(gp->filter, key, -1, &nearop);
	bv_append(&nearop, spherical ? "$nearSphere" : "$near", -1, &near);
	if (has_min)
		BSON_APPEND_DOUBLE(&nearop, "$minDistance", mind);
	if (has_max)
		BSON_APPEND_DOUBLE(&nearop, "$maxDistance", maxd);
	bson_append_document_end(gp->filter, &nearop);
	agg_pctx_add(pc, &agg_stages_geo[0], gp, agg_explain_doc("$geoNear", spec));
	gp = NULL;
err:
	bson_destroy(&query);
	bson_free(key);
	geo_plan_free(gp);
	return ret;
}

typedef struct geo_state {
	bson_t out;
	bson_t tmp;
} geo_state_t;

static int
geo_near_open(agg_rt_t *rt, terr_t *err)
{
	geo_state_t *s = tm_alloc0(sizeof(*s));

	bson_init(&s->out);
	bson_init(&s->tmp);
	rt->state = s;
	return 0;
}

static int
geo_near_next(agg_rt_t *rt, const bson_t **out, terr_t *err)
{
	const geo_plan_t *gp = rt->st->plan;
	geo_state_t *s = rt->state;
	const bson_t *doc;
	double dist = 0;
	bson_value_t loc, dv = {.value_type = BSON_TYPE_DOUBLE};
	bool has_loc = false;
	int rc;

	if ((rc = agg_rt_pull(rt, &doc, err)) != 1)
		return rc;
	/* only a pipeline reading a collection has the near plan as its source */
	if (rt->x->plan == NULL || !plan_exec_geo_distance(rt->x->plan, &dist, &loc, &has_loc))
		return terr_set(err, TERR_NOT_IMPLEMENTED,
		                "$geoNear is supported by Tamga only as the first stage of a pipeline reading a collection");
	if (gp->has_multiplier)
		dist *= gp->multiplier;
	dv.value.v_double = dist;
	bson_reinit(&s->out);
	if (gp->distance_field != NULL) {
		agg_doc_set_path(doc, gp->distance_field, &dv, &s->out);
	} else {
		bson_concat(&s->out, doc);
	}
	if (gp->include_locs != NULL && has_loc) {
		bson_value_t copy;
		bson_value_copy(&loc, &copy);   /* loc views doc, which out replaces */
		bson_reinit(&s->tmp);
		bson_concat(&s->tmp, &s->out);
		bson_reinit(&s->out);
		agg_doc_set_path(&s->tmp, gp->include_locs, &copy, &s->out);
		bson_value_destroy(&copy);
	}
	*out = &s->out;
	return 1;
}

static void
geo_near_close(agg_rt_t *rt)
{
	geo_state_t *s = rt->state;

	if (s == NULL)
		return;
	bson_destroy(&s->out);
	bson_destroy(&s->tmp);
	bson_free(s);
	rt->state = NULL;
}

/* ---- $_internalGeoNearDistance ---------------------------------------------------------
 *
 * mongod's DocumentSourceInternalGeoNearDistance, what a time-series
 * $geoNear becomes after the unpack (commands/cmd_timeseries.c, as mongod's
 * splitForTimeseries): {near: <a GeoJSON point (metres on the sphere) or a
 * legacy pair (flat)>, key, distanceField, distanceMultiplier}.  Each
 * document gets at distanceField the least distance from near to the
 * geometries at key (those near can measure), times distanceMultiplier;
 * -1 times it when there is none, as mongod. */

typedef struct gnd_plan {
	geo_near_t near;
	char *key;
	char *field;
	double mult;
} gnd_plan_t;

static void
gnd_plan_free(void *p)
{
	gnd_plan_t *g = p;

	if (g == NULL)
		return;
	bson_free(g->key);
	bson_free(g->field);
	bson_free(g);
}

static int
gnd_parse(agg_pctx_t *pc, const bson_value_t *spec, terr_t *err)
{
	bson_iter_t it;
	const bson_value_t *near = NULL;
	gnd_plan_t *g;
	bson_t op = BSON_INITIALIZER;
	bson_value_t opv;
	int ret = 0;

	if (spec->value_type != BSON_TYPE_DOCUMENT)
		return terr_set(err, TERR_FAILED_TO_PARSE, "$_internalGeoNearDistance must take a nested object");
	g = tm_malloc0(sizeof *g);
	g->mult = 1.0;
	bson_iter_init_from_data(&it, spec->value.v_doc.data, spec->value.v_doc.data_len);
	while (bson_iter_next(&it)) {
		const char *k = bson_iter_key(&it);
		if (!strcmp(k, "near") && (BSON_ITER_HOLDS_DOCUMENT(&it) || BSON_ITER_HOLDS_ARRAY(&it)))
			near = bson_iter_value(&it);
		else if (!strcmp(k, "key") && BSON_ITER_HOLDS_UTF8(&it) && bson_iter_utf8(&it, NULL)[0] != '\0')
			g->key = bson_strdup(bson_iter_utf8(&it, NULL));
		else if (!strcmp(k, "distanceField") && BSON_ITER_HOLDS_UTF8(&it) && bson_iter_utf8(&it, NULL)[0] != '\0')
			g->field = bson_strdup(bson_iter_utf8(&it, NULL));
		else if (!strcmp(k, "distanceMultiplier") && BSON_ITER_HOLDS_NUMBER(&it))
			g->mult = bson_iter_as_double(&it);
		else
			ERR(terr_set(err, TERR_FAILED_TO_PARSE, "$_internalGeoNearDistance: unknown or malformed '%s'", k));
	}
	if (near == NULL || g->key == NULL || g->field == NULL)
		ERR(terr_set(err, TERR_FAILED_TO_PARSE,
		             "$_internalGeoNearDistance requires 'near', 'key', 'distanceField' and 'distanceMultiplier'"));
	/* a GeoJSON point measures on the sphere in metres, a legacy pair on the plane */
	bv_append(&op, "$near", -1, near);
	opv.value_type = BSON_TYPE_DOCUMENT;
	opv.value.v_doc.data = (uint8_t *)bson_get_data(&op);
	opv.value.v_doc.data_len = op.len;
	ERR(geo_near_parse("$near", near, &opv, &g->near, err));
	agg_pctx_add(pc, &agg_stages_geo[1], g, agg_explain_doc("$_internalGeoNearDistance", spec));
	g = NULL;
err:
	bson_destroy(&op);
	gnd_plan_free(g);
	return ret;
}

static int
gnd_next(agg_rt_t *rt, const bson_t **out, terr_t *err)
{
	const gnd_plan_t *g = rt->st->plan;
	geo_state_t *s = rt->state;
	const bson_t *doc;
	bpath_t key;
	double best = -1;     /* mongod's minDistance when no geometry is measured */
	bson_value_t dv = {.value_type = BSON_TYPE_DOUBLE};
	int rc;

	if ((rc = agg_rt_pull(rt, &doc, err)) != 1)
		return rc;
	bpath_init(&key, g->key);
	geo_near_doc_distance(&g->near, doc, &key, &best, NULL);
	bpath_destroy(&key);
	dv.value.v_double = best * g->mult;
	bson_reinit(&s->out);
	agg_doc_set_path(doc, g->field, &dv, &s->out);
	*out = &s->out;
	return 1;
}

const agg_stage_def_t agg_stages_geo[] = {
	{"$geoNear", geonear_stage_parse, geo_near_open, geo_near_next, geo_near_close, geo_plan_free,
	    AGG_F_FIRST | AGG_F_NOT_IN_FACET},
	{"$_internalGeoNearDistance", gnd_parse, geo_near_open, gnd_next, geo_near_close, gnd_plan_free, 0},
	{NULL},
};
