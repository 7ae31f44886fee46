/*
 * ts_geonear.c -- a $geoNear leading a read of a time-series collection's
 * measurements, rewritten as mongod rewrites it (DocumentSourceGeoNear's
 * splitForTimeseries for a measurement key; DocumentSourceInternalUnpackBucket
 * moving it before the unpack for a metaField key).  One rewrite for every
 * reader: the aggregate command on the collection (commands/cmd_timeseries.c)
 * and the sub-pipelines of $lookup / $unionWith that read it (agg/stage_lookup.c),
 * so a $geoNear answers the same wherever it stands first.  Only the pipeline
 * is rewritten here; the stages it names run in agg/ ($_internalGeoNearDistance
 * in stage_geo.c, the unpack in stage_unpack.c).
 */
#include "timeseries/timeseries.h"

#include <math.h>
#include <string.h>

#include "bson/value.h"
#include "geo/geo.h"

/* {path: {$geoWithin: {<shape>: [[x, y], r]}}} (negated: under $not) as a
 * $match stage, element *n of out. */
static void
gn_within_stage(bson_t *out, int *n, const char *path, const char *shape, double x, double y, double r, bool negated)
{
	bson_t st, m, f, nt, g, arr, pt;
	char key[16];

	bson_snprintf(key, sizeof(key), "%d", (*n)++);
	bson_append_document_begin(out, key, -1, &st);
	bson_append_document_begin(&st, "$match", -1, &m);
	bson_append_document_begin(&m, path, -1, &f);
	if (negated)
		bson_append_document_begin(&f, "$not", -1, &nt);
	bson_append_document_begin(negated ? &nt : &f, "$geoWithin", -1, &g);
	bson_append_array_begin(&g, shape, -1, &arr);
	bson_append_array_begin(&arr, "0", 1, &pt);
	BSON_APPEND_DOUBLE(&pt, "0", x);
	BSON_APPEND_DOUBLE(&pt, "1", y);
	bson_append_array_end(&arr, &pt);
	BSON_APPEND_DOUBLE(&arr, "1", r);
	bson_append_array_end(&g, &arr);
	bson_append_document_end(negated ? &nt : &f, &g);
	if (negated)
		bson_append_document_end(&f, &nt);
	bson_append_document_end(&m, &f);
	bson_append_document_end(&st, &m);
	bson_append_document_end(out, &st);
}

/* {$match: {field: {op: v}}} as element *n of out. */
static void
gn_cmp_stage(bson_t *out, int *n, const char *field, const char *op, double v)
{
	bson_t st, m, f;
	char key[16];

	bson_snprintf(key, sizeof(key), "%d", (*n)++);
	bson_append_document_begin(out, key, -1, &st);
	bson_append_document_begin(&st, "$match", -1, &m);
	bson_append_document_begin(&m, field, -1, &f);
	BSON_APPEND_DOUBLE(&f, op, v);
	bson_append_document_end(&m, &f);
	bson_append_document_end(&st, &m);
	bson_append_document_end(out, &st);
}

static int
gn_number(const bson_iter_t *it, const char *name, double *out, terr_t *err)
{
	if (!BSON_ITER_HOLDS_NUMBER(it))
		return terr_set(err, TERR_TYPE_MISMATCH, "$geoNear requires $%s to evaluate to a number", name);
	*out = bson_iter_as_double(it);
	if (!(*out >= 0))
		return terr_set(err, TERR_BAD_VALUE, "%s must be nonnegative", name);
	return 0;
}

/* A $geoNear output path (distanceField, includeLocs) on the buckets: under
 * the metaField it is the same path under "meta" (each measurement gets the
 * bucket's meta, so it lands where a plain collection puts it); a top-level
 * name other than a bucket's own fields stays, and is named in the unpack's
 * computedMetaProjFields (*computed).  Else 238. */
static int
geonear_out_path(const ts_options_t *o, const char *arg, const char *path, char *buf, size_t size, bool *computed,
                 terr_t *err)
{
	static const char *const bucket_fields[] = {"_id", "control", "meta", "data"};

	*computed = false;
	if (ts_meta_bucket_path(o, path, buf, size))
		return 0;
	if (strchr(path, '.') == NULL && path[0] != '$' && strlen(path) < size) {
		bool own = false;
		for (size_t i = 0; i < sizeof(bucket_fields) / sizeof(bucket_fields[0]); i++)
			own = own || strcmp(path, bucket_fields[i]) == 0;
		if (!own) {
			bson_snprintf(buf, size, "%s", path);
			*computed = true;
			return 0;
		}
	}
	return terr_set(err, TERR_NOT_IMPLEMENTED,
	    "$geoNear on the metaField of a time-series collection: a %s of '%s' (a dotted path outside the "
	    "metaField, or a bucket's own field name) is not supported by Tamga yet", arg, path);
}

/*
 * mongod's $geoNear keyed on the metaField (DocumentSourceInternalUnpackBucket
 * doOptimizeAt): the stage moves before the unpack and runs on the buckets,
 * its key renamed onto "meta" (so a 2dsphere index on a meta subfield, whose
 * bucket form is on meta.<sub>, serves it as on a plain collection), every
 * other argument as given ('query' refused before: 1938439).  The distance
 * (and includeLocs' location) is a bucket's, shared by its measurements:
 * geonear_out_path says where it is written so that the unpack hands it to
 * each of them (mongod writes the field on the bucket and its unpacking keeps
 * only the bucket's data and meta, so a distanceField outside the meta is
 * lost there; Tamga keeps it, as the same query on a plain collection
 * answers).  out gets the whole pipeline: [$geoNear, $_internalUnpackBucket,
 * the user's later stages] (no other bucket-level rewrite: the later stages
 * may read the distance, which no bucket bound describes).  Returns 2.
 */
static int
geonear_on_meta(const ts_options_t *o, const bson_t *user, bson_t *out, terr_t *err)
{
	bson_iter_t it, st, f;
	bson_t stage, body, spec, arr;
	char kbuf[512], dbuf[512], lbuf[512], k[16];
	const char *computed[2];
	int nc = 0, n = 0;
	bool c;

	bson_iter_init(&it, user);
	bson_iter_next(&it);
	bson_iter_recurse(&it, &st);
	bson_iter_next(&st);
	bson_iter_recurse(&st, &f);
	bson_append_document_begin(out, "0", 1, &stage);
	bson_append_document_begin(&stage, "$geoNear", -1, &body);
	while (bson_iter_next(&f)) {
		const char *a = bson_iter_key(&f);
		if (!strcmp(a, "key")) {
			ts_meta_bucket_path(o, bson_iter_utf8(&f, NULL), kbuf, sizeof(kbuf));
			BSON_APPEND_UTF8(&body, "key", kbuf);
		} else if ((!strcmp(a, "distanceField") || !strcmp(a, "includeLocs")) && BSON_ITER_HOLDS_UTF8(&f)) {
			char *buf = a[0] == 'd' ? dbuf : lbuf;
			if (geonear_out_path(o, a, bson_iter_utf8(&f, NULL), buf, sizeof(dbuf), &c, err) != 0) {
				bson_append_document_end(&stage, &body);
				bson_append_document_end(out, &stage);
				return -1;
			}
			BSON_APPEND_UTF8(&body, a, buf);
			if (c && (nc == 0 || strcmp(computed[0], buf) != 0))
				computed[nc++] = buf;
		} else
			bson_append_iter(&body, a, -1, &f);
	}
	bson_append_document_end(&stage, &body);
	bson_append_document_end(out, &stage);
	n = 1;
	bson_snprintf(k, sizeof(k), "%d", n++);
	bson_append_document_begin(out, k, -1, &stage);
	bson_append_document_begin(&stage, "$_internalUnpackBucket", -1, &spec);
	ts_unpack_spec(o, &spec);
	if (o->mixed_schema)
		BSON_APPEND_BOOL(&spec, "assumeNoMixedSchemaData", false);
	if (nc > 0) {
		bson_append_array_begin(&spec, "computedMetaProjFields", -1, &arr);
		for (int i = 0; i < nc; i++) {
			char ak[4];
			bson_snprintf(ak, sizeof(ak), "%d", i);
			BSON_APPEND_UTF8(&arr, ak, computed[i]);
		}
		bson_append_array_end(&spec, &arr);
	}
	bson_append_document_end(&stage, &spec);
	bson_append_document_end(out, &stage);
	while (bson_iter_next(&it)) {
		bson_snprintf(k, sizeof(k), "%d", n++);
		bson_append_iter(out, k, -1, &it);
	}
	return 2;
}

int
ts_geonear_rewrite(const ts_options_t *o, const bson_t *user, bson_t *out, terr_t *err)
{
	bson_iter_t it, st, f;
	const bson_value_t *near = NULL;
	const char *key = NULL, *dfield = NULL;
	char mbuf[512];
	double maxd = 0, mind = 0, mult = 1.0;
	bool has_max = false, has_min = false, spherical = false, locs = false, query = false;
	geo_near_t g;
	bson_t op = BSON_INITIALIZER, stage, body, pt, arr;
	bson_value_t opv;
	char k[16];
	int n = 0, ret = 0;

	bson_init(out);
	if (!bson_iter_init(&it, user) || !bson_iter_next(&it) ||
	    !BSON_ITER_HOLDS_DOCUMENT(&it) || !bson_iter_recurse(&it, &st) || !bson_iter_next(&st) ||
	    strcmp(bson_iter_key(&st), "$geoNear") != 0 || !BSON_ITER_HOLDS_DOCUMENT(&st))
		return 0;
	bson_iter_recurse(&st, &f);
	while (bson_iter_next(&f)) {
		const char *a = bson_iter_key(&f);
		if (!strcmp(a, "near"))
			near = bson_iter_value(&f);
		else if (!strcmp(a, "key") && BSON_ITER_HOLDS_UTF8(&f))
			key = bson_iter_utf8(&f, NULL);
		else if (!strcmp(a, "distanceField") && BSON_ITER_HOLDS_UTF8(&f))
			dfield = bson_iter_utf8(&f, NULL);
		else if (!strcmp(a, "maxDistance"))
			has_max = true, ret = gn_number(&f, "maxDistance", &maxd, err);
		else if (!strcmp(a, "minDistance"))
			has_min = true, ret = gn_number(&f, "minDistance", &mind, err);
		else if (!strcmp(a, "distanceMultiplier"))
			ret = gn_number(&f, "distanceMultiplier", &mult, err);
		else if (!strcmp(a, "spherical"))
			spherical = bson_iter_as_bool(&f);
		else if (!strcmp(a, "includeLocs"))
			locs = true;
		else if (!strcmp(a, "query"))
			query = !BSON_ITER_HOLDS_DOCUMENT(&f);   /* an empty one is allowed (below) */
		else if (strcmp(a, "uniqueDocs") != 0 && strcmp(a, "key") != 0 && strcmp(a, "distanceField") != 0)
			return 0;   /* the $geoNear stage's own parse answers what it refuses */
		if (ret != 0)
			return -1;
		if (!strcmp(a, "query") && BSON_ITER_HOLDS_DOCUMENT(&f)) {
			uint32_t l;
			const uint8_t *d;
			bson_iter_document(&f, &l, &d);
			query = l > 5;
		}
	}
	if (key == NULL || near == NULL ||
	    (near->value_type != BSON_TYPE_DOCUMENT && near->value_type != BSON_TYPE_ARRAY)) {
		if (key == NULL && near != NULL)
			return terr_set(err, 5892921, "Must specify 'key' option for $geoNear on a time-series collection");
		return 0;   /* the stage's parse: 'near' missing or not a point, key not a string */
	}
	if (query)
		return terr_set(err, 1938439,
		    "Must not specify 'query' for $geoNear on a time-series collection; use $match instead");
	if (ts_meta_bucket_path(o, key, mbuf, sizeof(mbuf)))
		return geonear_on_meta(o, user, out, err);
	if (dfield == NULL)
		return terr_set(err, 5860206, "$geoNear distanceField is required for time-series queries");
	if (locs)
		return terr_set(err, 5860208, "$geoNear 'includeLocs' is not supported on time-series metrics");
	/* GeoNearExpression's reading of the point: GeoJSON is spherical (metres), a
	 * legacy pair spherical (radians) with spherical: true, else flat */
	bv_append(&op, spherical ? "$nearSphere" : "$near", -1, near);
	opv.value_type = BSON_TYPE_DOCUMENT;
	opv.value.v_doc.data = (uint8_t *)bson_get_data(&op);
	opv.value.v_doc.data_len = op.len;
	if (geo_near_parse(spherical ? "$nearSphere" : "$near", near, &opv, &g, err) != 0) {
		bson_destroy(&op);
		return -1;
	}
	bson_destroy(&op);
	/* 1. a $geoWithin that bounds the buckets (maxDistance), and the
	 * inside-out one for minDistance (imprecise: 3. decides) */
	if (!g.flat) {
		double rmax = g.unit_radians ? maxd : maxd / GEO_EARTH_RADIUS_M;
		if (has_max)
			gn_within_stage(out, &n, key, "$centerSphere", g.x, g.y, rmax, false);
		if (has_min) {
			double in = M_PI - (g.unit_radians ? mind : mind / GEO_EARTH_RADIUS_M);
			if (in > 0)
				gn_within_stage(out, &n, key, "$centerSphere", g.x < 0 ? g.x + 180 : g.x - 180, -g.y, in,
				    false);
		}
	} else {
		if (has_max)
			gn_within_stage(out, &n, key, "$center", g.x, g.y, maxd, false);
		if (has_min && isnormal(mind))
			gn_within_stage(out, &n, key, "$center", g.x, g.y, 0.99 * mind, true);
	}
	/* 2. the distance */
	bson_snprintf(k, sizeof(k), "%d", n++);
	bson_append_document_begin(out, k, -1, &stage);
	bson_append_document_begin(&stage, "$_internalGeoNearDistance", -1, &body);
	if (!g.flat) {
		bson_append_document_begin(&body, "near", -1, &pt);
		BSON_APPEND_UTF8(&pt, "type", "Point");
		bson_append_array_begin(&pt, "coordinates", -1, &arr);
		BSON_APPEND_DOUBLE(&arr, "0", g.x);
		BSON_APPEND_DOUBLE(&arr, "1", g.y);
		bson_append_array_end(&pt, &arr);
		bson_append_document_end(&body, &pt);
	} else {
		bson_append_array_begin(&body, "near", -1, &arr);
		BSON_APPEND_DOUBLE(&arr, "0", g.x);
		BSON_APPEND_DOUBLE(&arr, "1", g.y);
		bson_append_array_end(&body, &arr);
	}
	BSON_APPEND_UTF8(&body, "key", key);
	BSON_APPEND_UTF8(&body, "distanceField", dfield);
	/* metres on the sphere; radians when the point asked for them */
	BSON_APPEND_DOUBLE(&body, "distanceMultiplier", g.unit_radians ? mult / GEO_EARTH_RADIUS_M : mult);
	bson_append_document_end(&stage, &body);
	bson_append_document_end(out, &stage);
	/* 3. the exact bounds, 4. the order */
	if (has_min)
		gn_cmp_stage(out, &n, dfield, "$gte", mind * mult);
	if (has_max)
		gn_cmp_stage(out, &n, dfield, "$lte", maxd * mult);
	{
		bson_t srt;
		bson_snprintf(k, sizeof(k), "%d", n++);
		bson_append_document_begin(out, k, -1, &stage);
		bson_append_document_begin(&stage, "$sort", -1, &srt);
		BSON_APPEND_INT32(&srt, dfield, 1);
		bson_append_document_end(&stage, &srt);
		bson_append_document_end(out, &stage);
	}
	while (bson_iter_next(&it)) {
		bson_snprintf(k, sizeof(k), "%d", n++);
		bson_append_iter(out, k, -1, &it);
	}
	return 1;
}
