/*
 * test_ts_geonear_sub.c -- a $geoNear leading a $lookup or $unionWith
 * sub-pipeline whose from/coll is a time-series collection, through the
 * embedded API: the sub-pipeline takes the aggregate command's time-series
 * rewrite (timeseries/ts_geonear.c), so every answer equals the same stages
 * run at top level on the collection (a measurement key, with and without a
 * 2dsphere index; a metaField key on the buckets' meta index; with let
 * variables in the later stages), and the refusals are mongod's
 * (jstests/core/timeseries/geo/timeseries_geonear_lookup.js runs the
 * metaField case; the codes are those of the top-level rewrite: 5892921,
 * 1938439, 5860206, 5860208, 40602 for a $geoNear not first, the buckets'
 * $geoNear without an index as at top level).
 */
#include "tt.h"
#include "tt_embedded.h"

#include <string.h>

static tamga_t *db;

static char *
batch(const char *cmd)
{
	return tt_batch_sq(db, "tgs", cmd);
}

static int
code_of(const char *cmd)
{
	int rc;
	bson_t *r = tt_run_sq(db, "tgs", cmd, &rc);
	int code = rc == 0 ? 0 : (int)tt_get_i64(r, "code");

	tt_free_reply(r);
	return code;
}

/* The same stages (single-quoted JSON array text) at top level on coll, as
 * a $unionWith's sub-pipeline from an empty collection, and as a $lookup's
 * unwound: three equal answers, not empty, not an error. */
static void
same_three_ways(const char *coll, const char *stages)
{
	char *top = bson_strdup_printf("{'aggregate': '%s', 'pipeline': %s, 'cursor': {}}", coll, stages);
	char *uw = bson_strdup_printf("{'aggregate': 'nothing', 'pipeline': [{'$unionWith': {'coll': '%s', "
	    "'pipeline': %s}}], 'cursor': {}}", coll, stages);
	char *lk = bson_strdup_printf("{'aggregate': 'one', 'pipeline': [{'$lookup': {'from': '%s', 'pipeline': %s, "
	    "'as': 'r'}}, {'$unwind': '$r'}, {'$replaceWith': '$r'}], 'cursor': {}}", coll, stages);
	char *a = batch(top), *b = batch(uw), *c = batch(lk);

	TT_ASSERT(strncmp(a, "[ {", 3) == 0);
	TT_EQ_STR(b, a);
	TT_EQ_STR(c, a);
	bson_free(a);
	bson_free(b);
	bson_free(c);
	bson_free(top);
	bson_free(uw);
	bson_free(lk);
}

/* Measurements i = 0..n-1 at distinct points (no two at one distance from
 * the query points), in 4 sites (the meta, each with its own location);
 * a few without a location.  Into the time-series collection coll. */
static void
fill(const char *coll)
{
	bson_string_t *d = bson_string_new("");
	char *cmd;

	for (int i = 0; i < 300; i++) {
		int s = i % 4;
		bson_string_append_printf(d, "%s{'i': %d, 't': {'$date': {'$numberLong': '%lld'}}, "
		    "'m': {'s': %d, 'loc': {'type': 'Point', 'coordinates': [%d.5, %d.25]}}", i ? ", " : "", i,
		    1704067200000LL + (long long)i * 60000, s, s * 7 - 10, s * 3 - 4);
		if (i % 37 != 5)
			bson_string_append_printf(d, ", 'loc': {'type': 'Point', 'coordinates': [%.4f, %.4f]}",
			    -20.0 + (i * 7919 % 4000) / 100.0, -15.0 + (i * 104729 % 3000) / 100.0);
		bson_string_append(d, "}");
	}
	cmd = bson_strdup_printf("{'insert': '%s', 'documents': [%s]}", coll, d->str);
	TT_EQ_INT(code_of(cmd), 0);
	bson_free(cmd);
	bson_string_free(d, true);
}

static void
test_setup(void)
{
	TT_EQ_INT(code_of("{'create': 'w', 'timeseries': {'timeField': 't', 'metaField': 'm'}}"), 0);
	TT_EQ_INT(code_of("{'create': 'wn', 'timeseries': {'timeField': 't', 'metaField': 'm'}}"), 0);
	fill("w");
	fill("wn");
	TT_EQ_INT(code_of("{'createIndexes': 'w', 'indexes': [{'key': {'loc': '2dsphere'}, 'name': 'loc'}, "
	    "{'key': {'m.loc': '2dsphere'}, 'name': 'mloc'}]}"), 0);
	TT_EQ_INT(code_of("{'insert': 'one', 'documents': [{'_id': 1}]}"), 0);
	TT_EQ_INT(code_of("{'insert': 'sites', 'documents': [{'_id': 0, 's': 0, 'max': 1500000}, "
	    "{'_id': 1, 's': 3, 'max': 900000}]}"), 0);
}

/* splitForTimeseries: $geoWithin bounds, the distance, exact bounds, the
 * sort -- after the unpack, with or without an index on the measurement */
static void
test_measurement_key(void)
{
	static const char *const specs[] = {
		"{'near': {'type': 'Point', 'coordinates': [1, 2]}, 'key': 'loc', 'distanceField': 'dist'}",
		"{'near': {'type': 'Point', 'coordinates': [-5, 3]}, 'key': 'loc', 'distanceField': 'dist', "
		"'maxDistance': 900000}",
		"{'near': {'type': 'Point', 'coordinates': [0, 0]}, 'key': 'loc', 'distanceField': 'dist', "
		"'minDistance': 200000, 'maxDistance': 1500000}",
		"{'near': [3, 3], 'key': 'loc', 'distanceField': 'dist', 'spherical': true, 'maxDistance': 0.2, "
		"'distanceMultiplier': 6371}",
		"{'near': [3, 3], 'key': 'loc', 'distanceField': 'dist', 'maxDistance': 6}",
	};
	for (size_t i = 0; i < sizeof(specs) / sizeof(specs[0]); i++) {
		for (int k = 0; k < 2; k++) {
			char *st = bson_strdup_printf("[{'$geoNear': %s}, {'$match': {'m.s': {'$ne': 2}}}, "
			    "{'$project': {'_id': 0, 'i': 1, 'dist': 1}}, {'$limit': 60}]", specs[i]);
			same_three_ways(k == 0 ? "w" : "wn", st);
			bson_free(st);
		}
	}
	/* the distances themselves: a sub-pipeline's first is the nearest */
	{
		char *a = batch("{'aggregate': 'nothing', 'pipeline': [{'$unionWith': {'coll': 'wn', 'pipeline': ["
		    "{'$geoNear': {'near': {'type': 'Point', 'coordinates': [-20, -15]}, 'key': 'loc', 'distanceField': 'd', "
		    "'maxDistance': 1}}, {'$project': {'_id': 0, 'i': 1, 'd': 1}}]}}], 'cursor': {}}");
		TT_EQ_STR(a, "[ { \"i\" : 0, \"d\" : 0.0 } ]");
		bson_free(a);
	}
}

/* a metaField key: the $geoNear runs on the buckets' meta.loc index before
 * the unpack (mongod's timeseries_geonear_lookup.js) */
static void
test_meta_key(void)
{
	same_three_ways("w", "[{'$geoNear': {'near': {'type': 'Point', 'coordinates': [0, 0]}, 'key': 'm.loc', "
	    "'distanceField': 'm.distance'}}, {'$sort': {'m.distance': 1, 'i': 1}}, {'$project': {'_id': 0, 'i': 1, "
	    "'m': 1}}]");
	same_three_ways("w", "[{'$geoNear': {'near': {'type': 'Point', 'coordinates': [2, 1]}, 'key': 'm.loc', "
	    "'distanceField': 'dist', 'includeLocs': 'm.at', 'maxDistance': 1200000}}, "
	    "{'$group': {'_id': '$m.s', 'n': {'$sum': 1}, 'd': {'$min': '$dist'}}}, {'$sort': {'_id': 1}}]");
	/* the jstest's shape: one measurement per lookup result */
	{
		char *a = batch("{'aggregate': 'one', 'pipeline': [{'$lookup': {'from': 'w', 'pipeline': ["
		    "{'$geoNear': {'near': {'type': 'Point', 'coordinates': [0, 0]}, 'key': 'm.loc', "
		    "'distanceField': 'm.distance'}}, {'$count': 'n'}], 'as': 'out'}}], 'cursor': {}}");
		TT_EQ_STR(a, "[ { \"_id\" : 1, \"out\" : [ { \"n\" : 300 } ] } ]");
		bson_free(a);
	}
}

/* let variables of the $lookup read by the stages after the $geoNear: each
 * site's answer is the top-level one with that site's filter */
static void
test_let(void)
{
	char *a = batch("{'aggregate': 'sites', 'pipeline': [{'$lookup': {'from': 'w', 'let': {'s': '$s', 'mx': '$max'}, "
	    "'pipeline': [{'$geoNear': {'near': {'type': 'Point', 'coordinates': [1, 1]}, 'key': 'loc', "
	    "'distanceField': 'dist', 'maxDistance': 1500000}}, {'$match': {'$expr': {'$and': [{'$eq': ['$m.s', '$$s']}, "
	    "{'$lte': ['$dist', '$$mx']}]}}}, {'$project': {'_id': 0, 'i': 1, 'dist': 1}}], 'as': 'r'}}, "
	    "{'$project': {'r': 1}}, {'$sort': {'_id': 1}}], 'cursor': {}}");
	char *b0 = batch("{'aggregate': 'w', 'pipeline': [{'$geoNear': {'near': {'type': 'Point', 'coordinates': [1, 1]}, "
	    "'key': 'loc', 'distanceField': 'dist', 'maxDistance': 1500000}}, {'$match': {'m.s': 0}}, "
	    "{'$project': {'_id': 0, 'i': 1, 'dist': 1}}], 'cursor': {}}");
	char *b1 = batch("{'aggregate': 'w', 'pipeline': [{'$geoNear': {'near': {'type': 'Point', 'coordinates': [1, 1]}, "
	    "'key': 'loc', 'distanceField': 'dist', 'maxDistance': 900000}}, {'$match': {'m.s': 3}}, "
	    "{'$project': {'_id': 0, 'i': 1, 'dist': 1}}], 'cursor': {}}");
	char *want = bson_strdup_printf("[ { \"_id\" : 0, \"r\" : %s }, { \"_id\" : 1, \"r\" : %s } ]", b0, b1);

	TT_ASSERT(strncmp(b0, "[ {", 3) == 0 && strncmp(b1, "[ {", 3) == 0);
	TT_EQ_STR(a, want);
	bson_free(a);
	bson_free(b0);
	bson_free(b1);
	bson_free(want);
}

/* mongod's refusals, the same in a sub-pipeline as at top level */
static void
test_errors(void)
{
	static const struct {
		const char *stages;
		int code;
	} cases[] = {
		{"[{'$geoNear': {'near': [0, 0], 'distanceField': 'd'}}]", 5892921},
		{"[{'$geoNear': {'near': [0, 0], 'key': 'loc', 'distanceField': 'd', 'query': {'i': 1}}}]", 1938439},
		{"[{'$geoNear': {'near': [0, 0], 'key': 'loc'}}]", 5860206},
		{"[{'$geoNear': {'near': [0, 0], 'key': 'loc', 'distanceField': 'd', 'includeLocs': 'l'}}]", 5860208},
		{"[{'$geoNear': {'near': [0, 0], 'key': 'loc', 'distanceField': 'd', 'maxDistance': -1}}]", 2},
		{"[{'$match': {'i': 1}}, {'$geoNear': {'near': [0, 0], 'key': 'loc', 'distanceField': 'd'}}]", 40602},
		{"[{'$geoNear': {'near': [0, 0], 'key': 'm.loc', 'distanceField': 'data'}}]", 238},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *top = bson_strdup_printf("{'aggregate': 'w', 'pipeline': %s, 'cursor': {}}", cases[i].stages);
		char *uw = bson_strdup_printf("{'aggregate': 'one', 'pipeline': [{'$unionWith': {'coll': 'w', "
		    "'pipeline': %s}}], 'cursor': {}}", cases[i].stages);
		char *lk = bson_strdup_printf("{'aggregate': 'one', 'pipeline': [{'$lookup': {'from': 'w', "
		    "'pipeline': %s, 'as': 'r'}}], 'cursor': {}}", cases[i].stages);
		TT_EQ_INT(code_of(top), cases[i].code);
		TT_EQ_INT(code_of(uw), cases[i].code);
		TT_EQ_INT(code_of(lk), cases[i].code);
		bson_free(top);
		bson_free(uw);
		bson_free(lk);
	}
	/* localField/foreignField with a pipeline: mongod runs the join's $match
	 * before the user's stages, so a $geoNear there is not first (when a
	 * document is joined: no input, no error) */
	TT_EQ_INT(code_of("{'aggregate': 'one', 'pipeline': [{'$lookup': {'from': 'w', 'localField': '_id', "
	    "'foreignField': 'i', 'as': 'r', 'pipeline': [{'$geoNear': {'near': [0, 0], 'key': 'loc', "
	    "'distanceField': 'd'}}]}}], 'cursor': {}}"), 40602);
	TT_EQ_INT(code_of("{'aggregate': 'one', 'pipeline': [{'$lookup': {'from': 'from', 'localField': '_id', "
	    "'foreignField': '_id', 'as': 'r', 'pipeline': [{'$geoNear': {'near': [0, 0], 'key': 'geo', "
	    "'distanceField': 'd'}}]}}], 'cursor': {}}"), 40602);
	TT_EQ_INT(code_of("{'aggregate': 'nothing', 'pipeline': [{'$lookup': {'from': 'w', 'localField': '_id', "
	    "'foreignField': 'i', 'as': 'r', 'pipeline': [{'$geoNear': {'near': [0, 0], 'key': 'loc', "
	    "'distanceField': 'd'}}]}}], 'cursor': {}}"), 0);
	/* a metaField key without the buckets' index: the $geoNear on the
	 * buckets answers as at top level (a $geoNear needs an index) */
	{
		const char *st = "[{'$geoNear': {'near': [0, 0], 'key': 'm.loc', 'distanceField': 'd'}}]";
		char *top = bson_strdup_printf("{'aggregate': 'wn', 'pipeline': %s, 'cursor': {}}", st);
		char *lk = bson_strdup_printf("{'aggregate': 'one', 'pipeline': [{'$lookup': {'from': 'wn', "
		    "'pipeline': %s, 'as': 'r'}}], 'cursor': {}}", st);
		int want = code_of(top);
		TT_ASSERT(want != 0);
		TT_EQ_INT(code_of(lk), want);
		bson_free(top);
		bson_free(lk);
	}
}

/* the same path on a plain collection (mongod's
 * jstests/aggregation/sources/lookup/lookup_subpipeline_geonear.js): the
 * sub-pipeline reads through the near plan, its default key from the
 * foreign collection's own 2dsphere index */
static void
test_plain_collection(void)
{
	char *a;

	TT_EQ_INT(code_of("{'insert': 'lk', 'documents': [{'_id': 4, 'x': 4}]}"), 0);
	TT_EQ_INT(code_of("{'createIndexes': 'from', 'indexes': [{'key': {'geo': '2dsphere'}, 'name': 'geo'}]}"), 0);
	TT_EQ_INT(code_of("{'insert': 'from', 'documents': [{'_id': 1, 'geo': [0, 0]}, {'_id': 2, 'geo': [0, 1]}]}"), 0);
	a = batch("{'aggregate': 'lk', 'pipeline': [{'$lookup': {'from': 'from', 'as': 'c', 'pipeline': ["
	    "{'$geoNear': {'near': [0, 0], 'distanceField': 'distance', 'spherical': true}}, {'$limit': 1}]}}], "
	    "'cursor': {}}");
	TT_EQ_STR(a, "[ { \"_id\" : 4, \"x\" : 4, \"c\" : [ { \"_id\" : 1, \"geo\" : [ 0, 0 ], \"distance\" : 0.0 } ] } ]");
	bson_free(a);
	a = batch("{'aggregate': 'lk', 'pipeline': [{'$unionWith': {'coll': 'from', 'pipeline': ["
	    "{'$geoNear': {'near': [0, 1], 'distanceField': 'd', 'spherical': true}}, {'$project': {'d': 1}}]}}], "
	    "'cursor': {}}");
	TT_EQ_STR(a, "[ { \"_id\" : 4, \"x\" : 4 }, { \"_id\" : 2, \"d\" : 0.0 }, "
	    "{ \"_id\" : 1, \"d\" : 0.017453292519943295474 } ]");
	bson_free(a);
}

int
main(void)
{
	char *dir = tt_tmpdir("ts_geonear_sub");

	db = tt_open_new(dir);
	if (db == NULL)
		return 1;
	TT_RUN(test_setup);
	TT_RUN(test_measurement_key);
	TT_RUN(test_meta_key);
	TT_RUN(test_let);
	TT_RUN(test_errors);
	TT_RUN(test_plain_collection);
	tamga_close(db);
	tt_rmdir(dir);
	bson_free(dir);
	return tt_finish();
}
