/*
 * test_ts_index.c -- timeseries/ts_index.c on its own: user index specs of
 * a time-series collection translated into bucket index specs as mongod
 * 9.0's createBucketsIndexSpecFromTimeseriesIndexSpec and
 * makeTimeseriesCreateIndexesCommand do (time, meta, measurement keys in
 * both directions, originalSpec, default names), mongod's refusals and
 * codes, listIndexes' view back (originalSpec, reverse mapping, keys that
 * do not map back), and which measurement fields an index lets the bucket
 * filter bound (ts_ix_fields_add, ts_bucket_filter_ix's forms); partial
 * filters in bucket terms (mongod's 5916301 refusals, a randomized check
 * that the forms keep every bucket holding a match, mixed types included),
 * TTL specs; 2dsphere_bucket keys, $_internalBucketGeoWithin and the
 * measurement geo conjuncts over uncompressed and BSONColumn buckets; the
 * 5930501 check of an array in an indexed measurement (decided from
 * control.min/max as mongod, else from the column, both bucket forms).
 */
#include "tt.h"

#include "geo/geo.h"
#include "query/bucket_column.h"
#include "query/keygen.h"
#include "query/match.h"
#include "timeseries/bsoncolumn.h"
#include "timeseries/ts_compress.h"
#include "timeseries/ts_index.h"

static const ts_options_t O = {.time_field = "t", .meta_field = "m"};
static const ts_options_t NOMETA = {.time_field = "t"};

static void
key_is(const ts_options_t *o, const char *in, const char *want, bool want_meas)
{
	bson_t *k = tt_json(in), out = BSON_INITIALIZER;
	terr_t err = TERR_INIT;
	bool meas = !want_meas;

	TT_EQ_INT(ts_index_key_to_buckets(o, k, &out, &meas, &err), 0);
	TT_EQ_JSON(&out, want);
	TT_EQ_INT(meas, want_meas);
	bson_destroy(&out);
	bson_destroy(k);
	terr_clear(&err);
}

static void
key_refused(const ts_options_t *o, const char *in, const char *msg)
{
	bson_t *k = tt_json(in), out = BSON_INITIALIZER;
	terr_t err = TERR_INIT;

	TT_ASSERT(ts_index_key_to_buckets(o, k, &out, NULL, &err) != 0);
	TT_EQ_INT(err.code, 2);
	TT_EQ_STR(err.msg, msg);
	bson_destroy(&out);
	bson_destroy(k);
	terr_clear(&err);
}

static void
test_keys(void)
{
	key_is(&O, "{\"x\": 1}", "{ \"control.min.x\" : 1, \"control.max.x\" : 1 }", true);
	key_is(&O, "{\"x\": -1}", "{ \"control.max.x\" : -1, \"control.min.x\" : -1 }", true);
	key_is(&O, "{\"t\": 1}", "{ \"control.min.t\" : 1, \"control.max.t\" : 1 }", false);
	key_is(&O, "{\"t\": -1}", "{ \"control.max.t\" : -1, \"control.min.t\" : -1 }", false);
	key_is(&O, "{\"m\": 1, \"t\": 1}", "{ \"meta\" : 1, \"control.min.t\" : 1, \"control.max.t\" : 1 }", false);
	key_is(&O, "{\"m.a.b\": -1, \"x.y\": 1}",
	    "{ \"meta.a.b\" : -1, \"control.min.x.y\" : 1, \"control.max.x.y\" : 1 }", true);
	key_is(&O, "{\"loc\": \"2dsphere\"}", "{ \"data.loc\" : \"2dsphere_bucket\" }", true);
	/* "mx" is not a subfield of "m"; without a metaField "m" is a measurement */
	key_is(&O, "{\"mx\": 1}", "{ \"control.min.mx\" : 1, \"control.max.mx\" : 1 }", true);
	key_is(&NOMETA, "{\"m\": 1}", "{ \"control.min.m\" : 1, \"control.max.m\" : 1 }", true);
	key_refused(&O, "{}", "Empty object is not a valid index spec");
	key_refused(&O, "{\"$natural\": 1}",
	    "Invalid index spec (perhaps it's a valid hint, that was incorrectly passed to "
	    "createBucketsSpecFromTimeseriesSpec): { $natural: 1 }");
	key_refused(&O, "{\"t\": \"2d\"}",
	    "Invalid index spec for time-series collection: { t: \"2d\" }. Indexes on the time field must be ascending "
	    "or descending (numbers only): t: \"2d\"");
	key_refused(&O, "{\"x\": \"hashed\"}",
	    "Invalid index spec for time-series collection: { x: \"hashed\" }. Indexes on measurement fields must be "
	    "ascending or descending (numbers only), or '2dsphere': x: \"hashed\"");
}

static int
spec_code(const char *in, const char *want)
{
	bson_t *s = tt_json(in), out = BSON_INITIALIZER;
	terr_t err = TERR_INIT;
	int rc = ts_index_spec_to_buckets(&O, s, &out, &err) == 0 ? 0 : err.code;

	if (rc == 0 && want != NULL)
		TT_EQ_JSON(&out, want);
	if (rc != 0 && want != NULL)
		TT_EQ_STR(err.msg, want);
	bson_destroy(&out);
	bson_destroy(s);
	terr_clear(&err);
	return rc;
}

static void
test_specs(void)
{
	/* a measurement key keeps the user's spec; meta/time keys do not */
	TT_EQ_INT(spec_code("{\"key\": {\"x\": 1}, \"name\": \"x_1\"}",
	    "{ \"name\" : \"x_1\", \"key\" : { \"control.min.x\" : 1, \"control.max.x\" : 1 }, "
	    "\"originalSpec\" : { \"key\" : { \"x\" : 1 }, \"name\" : \"x_1\" } }"), 0);
	TT_EQ_INT(spec_code("{\"key\": {\"m.s\": 1, \"t\": -1}}",
	    "{ \"name\" : \"m.s_1_t_-1\", \"key\" : { \"meta.s\" : 1, \"control.max.t\" : -1, \"control.min.t\" : -1 } }"), 0);
	/* default name from the user's key, also in the originalSpec */
	TT_EQ_INT(spec_code("{\"key\": {\"x\": -1, \"m\": 1}}",
	    "{ \"name\" : \"x_-1_m_1\", \"key\" : { \"control.max.x\" : -1, \"control.min.x\" : -1, \"meta\" : 1 }, "
	    "\"originalSpec\" : { \"key\" : { \"x\" : -1, \"m\" : 1 }, \"name\" : \"x_-1_m_1\" } }"), 0);
	/* a meta partial filter: translated, and the user's spec kept */
	TT_EQ_INT(spec_code("{\"key\": {\"t\": 1}, \"name\": \"p\", \"partialFilterExpression\": {\"m.s\": {\"$gt\": 1}}}",
	    "{ \"name\" : \"p\", \"partialFilterExpression\" : { \"meta.s\" : { \"$gt\" : 1 } }, "
	    "\"key\" : { \"control.min.t\" : 1, \"control.max.t\" : 1 }, \"originalSpec\" : { \"key\" : { \"t\" : 1 }, "
	    "\"name\" : \"p\", \"partialFilterExpression\" : { \"m.s\" : { \"$gt\" : 1 } } } }"), 0);
	/* sparse on meta/time passes through; other options pass through */
	TT_EQ_INT(spec_code("{\"key\": {\"m\": 1}, \"name\": \"s\", \"sparse\": true, \"hidden\": true}", NULL), 0);
	TT_EQ_INT(spec_code("{\"key\": {\"x\": 1}, \"name\": \"u\", \"unique\": false}", NULL), 0);
	/* mongod's refusals */
	TT_EQ_INT(spec_code("{\"key\": {\"x\": 1}, \"name\": \"u\", \"unique\": true}",
	    "Unique indexes are not supported on time-series collections"), 72);
	TT_EQ_INT(spec_code("{\"key\": {\"x\": \"text\"}, \"name\": \"u\"}",
	    "Text indexes are not supported on time-series collections"), 72);
	TT_EQ_INT(spec_code("{\"key\": {\"x\": 1}, \"name\": \"u\", \"sparse\": true}",
	    "Sparse indexes are not supported on time-series measurements"), 72);
	TT_EQ_INT(spec_code("{\"key\": {\"x\": \"hashed\"}, \"name\": \"u\"}", NULL), 67);
	TT_EQ_INT(spec_code("{\"key\": {\"m\": 1}, \"name\": \"u\", \"partialFilterExpression\": {\"m\": 1}, "
	    "\"collation\": {\"locale\": \"fr\"}}",
	    "On a time-series collection, partialFilterExpression and collation arguments are incompatible"), 85);
	TT_EQ_INT(spec_code("{\"key\": {\"t\": 1}, \"name\": \"u\", \"expireAfterSeconds\": 10}",
	    "TTL indexes on time-series collections require a partialFilterExpression on the metaField"), 72);
	TT_EQ_INT(spec_code("{\"key\": {\"x\": 1}, \"name\": \"u\", \"expireAfterSeconds\": 10, "
	    "\"partialFilterExpression\": {\"m\": 1}}",
	    "TTL indexes on non-time fields are not supported on time-series collections"), 72);
	TT_EQ_INT(spec_code("{\"key\": {\"t\": 1, \"m\": 1}, \"name\": \"u\", \"expireAfterSeconds\": 10, "
	    "\"partialFilterExpression\": {\"m\": 1}}", NULL), 67);
	/* a TTL index: on the time alone, with a meta-only partial filter, keyed
	 * by control.min.<time> (mongod's convertToTTLTimeField) */
	TT_EQ_INT(spec_code("{\"key\": {\"t\": 1}, \"name\": \"u\", \"expireAfterSeconds\": 10, "
	    "\"partialFilterExpression\": {\"m\": 1}}",
	    "{ \"name\" : \"u\", \"expireAfterSeconds\" : 10, \"partialFilterExpression\" : { \"meta\" : 1 }, "
	    "\"key\" : { \"control.min.t\" : 1 }, \"originalSpec\" : { \"key\" : { \"t\" : 1 }, \"name\" : \"u\", "
	    "\"expireAfterSeconds\" : 10, \"partialFilterExpression\" : { \"m\" : 1 } } }"), 0);
	TT_EQ_INT(spec_code("{\"key\": {\"t\": -1}, \"name\": \"u\", \"expireAfterSeconds\": 0, "
	    "\"partialFilterExpression\": {\"m.a\": {\"$gte\": 2}, \"m.b\": \"x\"}}", NULL), 0);
	/* a partial filter reading the time or a measurement is not a meta one */
	TT_EQ_INT(spec_code("{\"key\": {\"t\": 1}, \"name\": \"u\", \"expireAfterSeconds\": 10, "
	    "\"partialFilterExpression\": {\"m\": 1, \"x\": {\"$gt\": 1}}}",
	    "TTL indexes on time-series collections require a partialFilterExpression on the metaField"), 72);
	TT_EQ_INT(spec_code("{\"key\": {\"t\": 1}, \"name\": \"u\", \"expireAfterSeconds\": 10, "
	    "\"partialFilterExpression\": {\"t\": {\"$gt\": {\"$date\": 0}}}}", NULL), 72);
	/* measurement and time partial filters: translated, the user's spec kept */
	TT_EQ_INT(spec_code("{\"key\": {\"x\": 1}, \"name\": \"u\", \"partialFilterExpression\": "
	    "{\"t\": {\"$gte\": {\"$date\": 1000}}}}",
	    "{ \"name\" : \"u\", \"partialFilterExpression\" : { \"control.max.t\" : { \"$gte\" : { \"$date\" : "
	    "\"1970-01-01T00:00:01Z\" } } }, \"key\" : { \"control.min.x\" : 1, \"control.max.x\" : 1 }, "
	    "\"originalSpec\" : { \"key\" : { \"x\" : 1 }, \"name\" : \"u\", \"partialFilterExpression\" : "
	    "{ \"t\" : { \"$gte\" : { \"$date\" : \"1970-01-01T00:00:01Z\" } } } } }"), 0);
	TT_EQ_INT(spec_code("{\"key\": {\"x\": 1}, \"name\": \"u\", \"partialFilterExpression\": {\"x\": {\"$gt\": 1}}}",
	    NULL), 0);
	TT_EQ_INT(spec_code("{\"key\": {\"x\": 1}, \"name\": \"u\", \"partialFilterExpression\": {\"x\": {\"$ne\": 1}}}",
	    "Error translating non-metadata time-series predicate to operate on buckets: can't handle this "
	    "predicate: { x: { $ne: 1 } }"), 5916301);
	/* what Tamga does not build: 238, never a wrong index */
	TT_EQ_INT(spec_code("{\"key\": {\"loc\": \"2dsphere\"}, \"name\": \"g\"}",
	    "{ \"name\" : \"g\", \"key\" : { \"data.loc\" : \"2dsphere_bucket\" }, \"originalSpec\" : "
	    "{ \"key\" : { \"loc\" : \"2dsphere\" }, \"name\" : \"g\" } }"), 0);
}

static void
pf_is(const char *in, const char *want, bool want_metric)
{
	bson_t *f = tt_json(in), out = BSON_INITIALIZER;
	terr_t err = TERR_INIT;
	bool metric = !want_metric;

	TT_EQ_INT(ts_index_partial_to_buckets(&O, f, &out, &metric, &err), 0);
	TT_EQ_JSON(&out, want);
	TT_EQ_INT(metric, want_metric);
	bson_destroy(&out);
	bson_destroy(f);
	terr_clear(&err);
}

static void
pf_refused(const char *in, int code, const char *msg)
{
	bson_t *f = tt_json(in), out = BSON_INITIALIZER;
	terr_t err = TERR_INIT;
	bool metric;

	TT_ASSERT(ts_index_partial_to_buckets(&O, f, &out, &metric, &err) != 0);
	TT_EQ_INT(err.code, code);
	if (msg != NULL)
		TT_EQ_STR(err.msg, msg);
	bson_destroy(&out);
	bson_destroy(f);
	terr_clear(&err);
}

static void
test_partial(void)
{
	/* meta: renamed, exact, any operator */
	pf_is("{\"m.a\": {\"$type\": \"string\"}, \"m\": {\"$exists\": true}}",
	    "{ \"$and\" : [ { \"meta.a\" : { \"$type\" : \"string\" } }, { \"meta\" : { \"$exists\" : true } } ] }",
	    false);
	pf_is("{}", "{ }", false);
	/* time: control.max for a lower bound, control.min (rounded down) for an upper one */
	pf_is("{\"t\": {\"$gt\": {\"$date\": 0}, \"$lte\": {\"$date\": 5000}}}",
	    "{ \"$and\" : [ { \"control.max.t\" : { \"$gt\" : { \"$date\" : \"1970-01-01T00:00:00Z\" } } }, "
	    "{ \"control.min.t\" : { \"$lte\" : { \"$date\" : \"1970-01-01T00:00:05Z\" } } } ] }", true);
	pf_is("{\"t\": {\"$date\": 0}}",
	    "{ \"$and\" : [ { \"control.min.t\" : { \"$lte\" : { \"$date\" : \"1970-01-01T00:00:00Z\" } } }, "
	    "{ \"control.max.t\" : { \"$gte\" : { \"$date\" : \"1970-01-01T00:00:00Z\" } } } ] }", true);
	/* a measurement: the bound, or a bound of a type sorting past the
	 * operand's, or an array (or later) max */
	pf_is("{\"x\": {\"$gt\": 5}}",
	    "{ \"$or\" : [ { \"control.max.x\" : { \"$gt\" : 5 } }, { \"control.max.x\" : { \"$type\" : "
	    "[ 2, 14, 3, 4, 5, 7, 8, 9, 17, 11, 12, 13, 15, 127 ] } } ] }", true);
	pf_is("{\"x\": {\"$lt\": \"b\"}}",
	    "{ \"$or\" : [ { \"control.min.x\" : { \"$lt\" : \"b\" } }, { \"control.min.x\" : { \"$type\" : "
	    "[ -1, 6, 10, 1, 16, 18, 19 ] } }, { \"control.max.x\" : { \"$type\" : "
	    "[ 4, 5, 7, 8, 9, 17, 11, 12, 13, 15, 127 ] } } ] }", true);
	/* $in is an $or of equalities; $or and $and keep their shape */
	pf_is("{\"$or\": [{\"m\": 1}, {\"t\": {\"$in\": [{\"$date\": 0}]}}]}",
	    "{ \"$or\" : [ { \"meta\" : 1 }, { \"$or\" : [ { \"$and\" : [ { \"control.min.t\" : { \"$lte\" : "
	    "{ \"$date\" : \"1970-01-01T00:00:00Z\" } } }, { \"control.max.t\" : { \"$gte\" : { \"$date\" : "
	    "\"1970-01-01T00:00:00Z\" } } } ] } ] } ] }", true);
	pf_is("{\"x\": {\"$exists\": true}}",
	    "{ \"$and\" : [ { \"control.min.x\" : { \"$exists\" : true } }, { \"control.max.x\" : "
	    "{ \"$exists\" : true } } ] }", true);
	/* mongod's refusals (5916301), and what is not built */
	pf_refused("{\"x\": null}", 5916301,
	    "Error translating non-metadata time-series predicate to operate on buckets: can't handle {$eq: null}: "
	    "{ x: { $eq: null } }");
	pf_refused("{\"x\": {\"$gt\": [1]}}", 5916301,
	    "Error translating non-metadata time-series predicate to operate on buckets: operand can't be an object or "
	    "array: { x: { $gt: [ 1 ] } }");
	pf_refused("{\"t\": {\"$gt\": 5}}", 5916301,
	    "Error translating non-metadata time-series predicate to operate on buckets: This predicate will never be "
	    "true, because the time field always contains a Date: { t: { $gt: 5 } }");
	pf_refused("{\"x\": {\"$in\": [1, null]}}", 5916301, NULL);
	pf_refused("{\"x\": {\"$in\": [{\"$regex\": \"a\", \"$options\": \"\"}]}}", 5916301, NULL);
	pf_refused("{\"x\": {\"$exists\": false}}", 5916301, NULL);
	pf_refused("{\"x\": {\"$type\": \"int\"}}", 5916301, NULL);
	pf_refused("{\"$nor\": [{\"x\": 1}]}", 5916301, NULL);
	pf_refused("{\"$or\": [{\"m\": 1}, {\"x\": {\"$size\": 1}}]}", 5916301, NULL);
	/* a geo predicate on a measurement: mongod's $_internalBucketGeoWithin
	 * (a metric filter); $near has no bucket form */
	pf_is("{\"x\": {\"$geoWithin\": {\"$centerSphere\": [[0, 0], 1]}}}",
	    "{ \"$_internalBucketGeoWithin\" : { \"withinRegion\" : { \"$centerSphere\" : [ [ 0, 0 ], 1 ] }, \"field\" : \"x\" } }",
	    true);
	pf_is("{\"m.a\": 1, \"l.p\": {\"$geoIntersects\": {\"$geometry\": {\"type\": \"Point\", \"coordinates\": [1, 2]}}}}",
	    "{ \"$and\" : [ { \"meta.a\" : 1 }, { \"$_internalBucketGeoWithin\" : { \"withinRegion\" : { \"$geometry\" : "
	    "{ \"type\" : \"Point\", \"coordinates\" : [ 1, 2 ] } }, \"field\" : \"l.p\" } } ] }",
	    true);
	pf_refused("{\"x\": {\"$near\": [0, 0]}}", 5916301, NULL);
}

/* Soundness of the measurement forms on buckets that mix types, hold
 * arrays, NaN and missing values: a bucket holding a measurement the
 * user's predicate matches always matches the bucket form. */
static uint64_t rnd_state = 0x9e3779b97f4a7c15ULL;
static uint64_t
rnd(void)
{
	rnd_state ^= rnd_state << 13;
	rnd_state ^= rnd_state >> 7;
	rnd_state ^= rnd_state << 17;
	return rnd_state;
}

static const char *const vals[] = {
	"1", "5", "-3", "7.5", "{\"$numberDouble\": \"NaN\"}", "{\"$numberLong\": \"5\"}", "\"a\"", "\"b\"",
	"\"zz\"", "true", "false", "[1]", "[9, \"c\"]", "[]", "{\"k\": 1}", "{\"$date\": 1000}",
	"{\"$minKey\": 1}", "{\"$maxKey\": 1}", "{\"$oid\": \"000000000000000000000001\"}", "[[5]]",
};
static const char *const ops[] = {"$gt", "$gte", "$lt", "$lte", "$eq"};
static const char *const operands[] = {
	"5", "1", "7.5", "-10", "{\"$numberDouble\": \"NaN\"}", "\"b\"", "true", "{\"$date\": 500}",
	"{\"$minKey\": 1}", "{\"$maxKey\": 1}", "{\"$oid\": \"000000000000000000000001\"}",
};

static void
test_partial_sound(void)
{
	int checked = 0, kept = 0;

	for (int round = 0; round < 3000; round++) {
		int n = 1 + (int)(rnd() % 5);
		bson_t *ms[5], bucket = BSON_INITIALIZER, bf = BSON_INITIALIZER;
		bson_oid_t id;
		char q[256], *b;
		bson_t *qf;
		match_t *um = NULL, *bm = NULL;
		bool metric, any = false;
		terr_t err = TERR_INIT;

		for (int i = 0; i < n; i++) {
			char d[256];
			if (rnd() % 6 == 0)
				bson_snprintf(d, sizeof(d), "{\"t\": {\"$date\": %d}}", i * 1000);
			else
				bson_snprintf(d, sizeof(d), "{\"t\": {\"$date\": %d}, \"x\": %s}", i * 1000,
				    vals[rnd() % (sizeof(vals) / sizeof(vals[0]))]);
			ms[i] = tt_json(d);
		}
		bson_oid_init_from_string(&id, "000000000000000000000000");
		ts_bucket_build(&O, &id, 0, NULL, (const bson_t *const *)ms, n, &bucket);
		if (rnd() % 4 == 0)
			bson_snprintf(q, sizeof(q), "{\"x\": {\"$in\": [%s, %s]}}",
			    operands[rnd() % (sizeof(operands) / sizeof(operands[0]))],
			    operands[rnd() % (sizeof(operands) / sizeof(operands[0]))]);
		else
			bson_snprintf(q, sizeof(q), "{\"x\": {\"%s\": %s}}", ops[rnd() % 5],
			    operands[rnd() % (sizeof(operands) / sizeof(operands[0]))]);
		qf = tt_json(q);
		TT_EQ_INT(ts_index_partial_to_buckets(&O, qf, &bf, &metric, &err), 0);
		TT_EQ_INT(match_compile(qf, NULL, &um, &err), 0);
		TT_EQ_INT(match_compile(&bf, NULL, &bm, &err), 0);
		for (int i = 0; i < n; i++)
			any = any || match_eval(um, ms[i]);
		if (any) {
			checked++;
			if (!match_eval(bm, &bucket)) {
				b = bson_as_relaxed_extended_json(&bucket, NULL);
				fprintf(stderr, "unsound: %s on bucket %s\n", q, b);
				bson_free(b);
				TT_ASSERT(false);
			}
		} else if (match_eval(bm, &bucket)) {
			kept++;   /* loose: kept without a match (allowed) */
		}
		match_free(um);
		match_free(bm);
		bson_destroy(qf);
		bson_destroy(&bf);
		bson_destroy(&bucket);
		for (int i = 0; i < n; i++)
			bson_destroy(ms[i]);
		terr_clear(&err);
	}
	TT_ASSERT(checked > 500);
	fprintf(stderr, "partial forms: %d buckets with a match kept, %d others kept loosely\n", checked, kept);
}

static void
view_is(const char *bucket_spec, const char *want)
{
	bson_t *s = tt_json(bucket_spec), out = BSON_INITIALIZER;
	bool shown = ts_index_spec_from_buckets(&O, s, &out);

	TT_EQ_INT(shown, want != NULL);
	if (want != NULL)
		TT_EQ_JSON(&out, want);
	bson_destroy(&out);
	bson_destroy(s);
}

static void
test_views(void)
{
	view_is("{\"v\": 2, \"key\": {\"control.min.x\": 1, \"control.max.x\": 1}, \"name\": \"x_1\", "
	    "\"originalSpec\": {\"key\": {\"x\": 1}, \"name\": \"x_1\"}}",
	    "{ \"v\" : 2, \"key\" : { \"x\" : 1 }, \"name\" : \"x_1\" }");
	view_is("{\"v\": 2, \"key\": {\"meta.s\": 1, \"control.max.t\": -1, \"control.min.t\": -1}, \"name\": \"a\"}",
	    "{ \"v\" : 2, \"key\" : { \"m.s\" : 1, \"t\" : -1 }, \"name\" : \"a\" }");
	view_is("{\"v\": 2, \"key\": {\"meta\": 1, \"control.min.t\": 1, \"control.max.t\": 1}, \"name\": \"m_1_t_1\"}",
	    "{ \"v\" : 2, \"key\" : { \"m\" : 1, \"t\" : 1 }, \"name\" : \"m_1_t_1\" }");
	/* a measurement pair without originalSpec (raw-created) maps back too */
	view_is("{\"v\": 2, \"key\": {\"control.max.y\": -1, \"control.min.y\": -1}, \"name\": \"y\"}",
	    "{ \"v\" : 2, \"key\" : { \"y\" : -1 }, \"name\" : \"y\" }");
	view_is("{\"v\": 2, \"key\": {\"data.loc\": \"2dsphere_bucket\"}, \"name\": \"g\"}",
	    "{ \"v\" : 2, \"key\" : { \"loc\" : \"2dsphere\" }, \"name\" : \"g\" }");
	/* collMod's changes to the bucket index show through its originalSpec */
	view_is("{\"v\": 2, \"key\": {\"control.min.t\": 1}, \"name\": \"ttl\", \"expireAfterSeconds\": 10, "
	    "\"hidden\": true, \"originalSpec\": {\"key\": {\"t\": 1}, \"name\": \"ttl\", \"expireAfterSeconds\": 100, "
	    "\"partialFilterExpression\": {\"m\": 1}}}",
	    "{ \"v\" : 2, \"key\" : { \"t\" : 1 }, \"name\" : \"ttl\", \"expireAfterSeconds\" : 10, "
	    "\"partialFilterExpression\" : { \"m\" : 1 }, \"hidden\" : true }");
	view_is("{\"v\": 2, \"key\": {\"control.min.x\": 1, \"control.max.x\": 1}, \"name\": \"x\", "
	    "\"originalSpec\": {\"key\": {\"x\": 1}, \"name\": \"x\", \"hidden\": true}}",
	    "{ \"v\" : 2, \"key\" : { \"x\" : 1 }, \"name\" : \"x\" }");
	/* keys that do not map back are not shown (mongod hides them) */
	view_is("{\"v\": 2, \"key\": {\"control.min.y\": 1}, \"name\": \"h\"}", NULL);
	view_is("{\"v\": 2, \"key\": {\"control.min.y\": 1, \"control.max.y\": -1}, \"name\": \"h\"}", NULL);
	view_is("{\"v\": 2, \"key\": {\"control.max.y\": 1, \"control.min.y\": 1}, \"name\": \"h\"}", NULL);
	view_is("{\"v\": 2, \"key\": {\"data.y\": 1}, \"name\": \"h\"}", NULL);
	view_is("{\"v\": 2, \"key\": {\"control.min.x\": 1, \"control.max.z\": 1}, \"name\": \"h\"}", NULL);
}

static void
filter_is(const ts_ix_fields_t *fs, const char *q, const char *want)
{
	bson_t *f = tt_json(q), out = BSON_INITIALIZER;

	TT_ASSERT(ts_bucket_filter_ix(&O, f, fs, &out));
	TT_EQ_JSON(&out, want);
	bson_destroy(&out);
	bson_destroy(f);
}

static void
test_ix_fields(void)
{
	ts_ix_fields_t fs = {0}, arr = {0};
	bson_t *k1 = tt_json("{\"control.min.x\": 1, \"control.max.x\": 1}");
	bson_t *k2 = tt_json("{\"meta\": 1, \"control.min.t\": 1, \"control.max.t\": 1}");
	bool none[3] = {false, false, false}, second[2] = {false, true};

	ts_ix_fields_add(&fs, &O, k1, none);
	ts_ix_fields_add(&fs, &O, k2, none);   /* time and meta: not measurement fields */
	TT_EQ_INT(fs.n, 1);
	TT_EQ_STR(fs.f[0].name, "x");
	TT_ASSERT(fs.f[0].has_min && fs.f[0].has_max && !fs.f[0].min_array && !fs.f[0].max_array);
	ts_ix_fields_add(&arr, &O, k1, second);
	TT_ASSERT(!arr.f[0].min_array && arr.f[0].max_array);
	/* index forms: $gt/$gte on control.max, $lt/$lte on control.min with
	 * the non-number max clause */
	filter_is(&fs, "{\"x\": {\"$gt\": 5}}", "{ \"$and\" : [ { \"control.max.x\" : { \"$not\" : { \"$lte\" : 5 } } } ] }");
	filter_is(&fs, "{\"x\": {\"$gte\": 5}}", "{ \"$and\" : [ { \"control.max.x\" : { \"$not\" : { \"$lt\" : 5 } } } ] }");
	filter_is(&fs, "{\"x\": {\"$lt\": 5}}",
	    "{ \"$and\" : [ { \"$or\" : [ { \"control.min.x\" : { \"$not\" : { \"$gte\" : 5 } } }, "
	    "{ \"control.min.x\" : { \"$gte\" : 5 }, \"control.max.x\" : { \"$not\" : { \"$lte\" : { \"$numberDouble\" : \"Infinity\" } } } } ] } ] }");
	/* an array once in control.max (or no index): the type-checking form */
	filter_is(&arr, "{\"x\": {\"$gt\": 5}}",
	    "{ \"$and\" : [ { \"$or\" : [ { \"control.max.x\" : { \"$gt\" : 5 } }, { \"control.min.x\" : { \"$not\" : "
	    "{ \"$type\" : \"number\" } } }, { \"control.max.x\" : { \"$not\" : { \"$type\" : \"number\" } } }, "
	    "{ \"control.max.x\" : { \"$type\" : \"array\" } }, { \"control.min.x\" : { \"$numberDouble\" : \"NaN\" } } ] } ] }");
	filter_is(NULL, "{\"x\": {\"$lt\": 5}, \"m\": 1}",
	    "{ \"$and\" : [ { \"$or\" : [ { \"control.min.x\" : { \"$lt\" : 5 } }, { \"control.min.x\" : { \"$not\" : "
	    "{ \"$type\" : \"number\" } } }, { \"control.max.x\" : { \"$not\" : { \"$type\" : \"number\" } } }, "
	    "{ \"control.max.x\" : { \"$type\" : \"array\" } }, { \"control.min.x\" : { \"$numberDouble\" : \"NaN\" } } ] }, { \"meta\" : 1 } ] }");
	bson_destroy(k1);
	bson_destroy(k2);
}

/* ---- 2dsphere_bucket keys and $_internalBucketGeoWithin over both bucket forms ---------- */

static const char *const geo_ms[] = {
	"{\"t\": {\"$date\": 0}, \"loc\": {\"type\": \"Point\", \"coordinates\": [1, 1]}}",
	"{\"t\": {\"$date\": 1000}, \"loc\": null}",
	"{\"t\": {\"$date\": 2000}}",
	"{\"t\": {\"$date\": 3000}, \"loc\": [10, 10], \"a\": {\"b\": {\"type\": \"Point\", \"coordinates\": [5, 5]}}}",
	"{\"t\": {\"$date\": 4000}, \"loc\": {\"type\": \"Point\", \"coordinates\": [1, 1]}}",
	"{\"t\": {\"$date\": 5000}, \"loc\": {}}",
};

static void
geo_buckets(bson_t *v1, bson_t *v2)
{
	bson_t *ms[6];
	bson_oid_t id;
	terr_t err = TERR_INIT;

	for (int i = 0; i < 6; i++)
		ms[i] = tt_json(geo_ms[i]);
	bson_oid_init_from_string(&id, "000000000000000000000000");
	bson_init(v1);
	ts_bucket_build(&O, &id, 0, NULL, (const bson_t *const *)ms, 6, v1);
	bson_init(v2);
	ts_colstates_t cs = {0};
	TT_EQ_INT(ts_bucket_build_compressed(&O, &id, 0, NULL, (const bson_t *const *)ms, 6, v2, &cs, &err), 0);
	ts_colstates_clear(&cs);
	TT_ASSERT(ts_bucket_is_compressed(v2));
	for (int i = 0; i < 6; i++)
		bson_destroy(ms[i]);
	terr_clear(&err);
}

typedef struct seen {
	int n;
	char kinds[16];
} seen_t;

static bool
seen_value(void *ctx, const bson_value_t *v)
{
	seen_t *s = ctx;

	if (s->n < 15)
		s->kinds[s->n] = v->value_type == BSON_TYPE_DOCUMENT ? 'd' : v->value_type == BSON_TYPE_ARRAY ? 'a' :
		    v->value_type == BSON_TYPE_NULL ? 'n' : '?';
	s->n++;
	return true;
}

typedef struct keys {
	int n;
} keys_t;

static void
count_key(void *ctx, const uint8_t *key, size_t len, const uint8_t *tb, size_t tblen)
{
	(void)key, (void)len, (void)tb, (void)tblen;
	((keys_t *)ctx)->n++;
}

static void
test_bucket_geo(void)
{
	bson_t v1, v2, *spec = tt_json("{\"v\": 2, \"key\": {\"data.loc\": \"2dsphere_bucket\"}, \"name\": \"g\", "
	    "\"2dsphereIndexVersion\": 3}");
	bson_t *key = tt_json("{\"data.loc\": \"2dsphere_bucket\"}");
	storage_index_t ix = {.name = "g", .spec = spec, .key = key, .nfields = 1};
	terr_t err = TERR_INIT;
	bool is_2d = true;

	bucket_column_set_decoder(bsoncolumn_decode);
	geo_buckets(&v1, &v2);
	/* the column's values, in both forms: the point, null, the pair, the
	 * point, {} (the missing measurement has none) */
	for (int f = 0; f < 2; f++) {
		seen_t s = {0};
		TT_EQ_INT(bucket_column_walk(f ? &v2 : &v1, "loc", seen_value, &s, &err), 0);
		TT_EQ_INT(s.n, 5);
		TT_EQ_STR(s.kinds, "dnadd");
		memset(&s, 0, sizeof s);
		TT_EQ_INT(bucket_column_walk(f ? &v2 : &v1, "a.b", seen_value, &s, &err), 0);
		TT_EQ_INT(s.n, 1);
		memset(&s, 0, sizeof s);
		TT_EQ_INT(bucket_column_walk(f ? &v2 : &v1, "nope", seen_value, &s, &err), 0);
		TT_EQ_INT(s.n, 0);
	}
	/* keys: one cell per distinct point (the two [1, 1] share theirs) */
	TT_ASSERT(keygen_geo_kind(&ix, &is_2d) && !is_2d);
	for (int f = 0; f < 2; f++) {
		keys_t k = {0};
		TT_EQ_INT(keygen_geo_keys(&ix, f ? &v2 : &v1, count_key, &k, &err), 0);
		TT_EQ_INT(k.n, 2);
	}
	/* the predicate: some measurement's geometry meets the region */
	{
		static const struct {
			const char *q;
			bool want;
		} cases[] = {
			{"{\"$_internalBucketGeoWithin\": {\"withinRegion\": {\"$centerSphere\": [[1, 1], 0.01]}, "
			 "\"field\": \"loc\"}}", true},
			{"{\"$_internalBucketGeoWithin\": {\"withinRegion\": {\"$centerSphere\": [[50, 50], 0.01]}, "
			 "\"field\": \"loc\"}}", false},
			{"{\"$_internalBucketGeoWithin\": {\"withinRegion\": {\"$box\": [[9, 9], [11, 11]]}, "
			 "\"field\": \"loc\"}}", true},
			{"{\"$_internalBucketGeoWithin\": {\"withinRegion\": {\"$geometry\": {\"type\": \"Polygon\", "
			 "\"coordinates\": [[[4, 4], [6, 4], [6, 6], [4, 6], [4, 4]]]}}, \"field\": \"a.b\"}}", true},
			{"{\"$_internalBucketGeoWithin\": {\"withinRegion\": {\"$geometry\": {\"type\": \"Polygon\", "
			 "\"coordinates\": [[[4, 4], [6, 4], [6, 6], [4, 6], [4, 4]]]}}, \"field\": \"loc\"}}", false},
			/* a $geoIntersects region (not a $geoWithin one) */
			{"{\"$_internalBucketGeoWithin\": {\"withinRegion\": {\"$geometry\": {\"type\": \"MultiPoint\", "
			 "\"coordinates\": [[7, 7], [1, 1]]}}, \"field\": \"loc\"}}", true},
		};
		for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
			for (int f = 0; f < 2; f++) {
				bson_t *q = tt_json(cases[i].q), back = BSON_INITIALIZER;
				match_t *m = NULL;
				TT_EQ_INT(match_compile(q, NULL, &m, &err), 0);
				TT_EQ_INT(match_eval(m, f ? &v2 : &v1), cases[i].want);
				/* serialized as given (explain) */
				bson_t *ser = match_to_bson(m);
				TT_EQ_INT(bson_equal(ser, q), true);
				bson_destroy(ser);
				match_free(m);
				bson_destroy(q);
				bson_destroy(&back);
			}
	}
	{
		bson_t *q = tt_json("{\"a\": {\"$_internalBucketGeoWithin\": {}}}");
		bson_t *q2 = tt_json("{\"$_internalBucketGeoWithin\": {\"withinRegion\": {}, \"field\": \"loc\"}}");
		bson_t *q3 = tt_json("{\"$_internalBucketGeoWithin\": {\"field\": \"loc\"}}");
		match_t *m = NULL;
		TT_ASSERT(match_compile(q, NULL, &m, &err) != 0);
		terr_clear(&err);
		TT_ASSERT(match_compile(q2, NULL, &m, &err) != 0);
		terr_clear(&err);
		TT_ASSERT(match_compile(q3, NULL, &m, &err) != 0);
		bson_destroy(q);
		bson_destroy(q2);
		bson_destroy(q3);
	}
	/* the query side: measurement geo conjuncts become the bucket form */
	{
		bson_t *f = tt_json("{\"m\": 1, \"loc\": {\"$geoWithin\": {\"$box\": [[0, 0], [1, 1]]}}, "
		    "\"$and\": [{\"a.b\": {\"$geoIntersects\": {\"$geometry\": {\"type\": \"Point\", \"coordinates\": [1, 2]}}}}], "
		    "\"m.x\": {\"$geoWithin\": {\"$box\": [[0, 0], [1, 1]]}}}");
		bson_t out = BSON_INITIALIZER;
		TT_ASSERT(ts_bucket_geo_filter(&O, f, &out));
		TT_EQ_JSON(&out, "{ \"$and\" : [ { \"$_internalBucketGeoWithin\" : { \"withinRegion\" : { \"$box\" : "
		    "[ [ 0, 0 ], [ 1, 1 ] ] }, \"field\" : \"loc\" } }, { \"$_internalBucketGeoWithin\" : { "
		    "\"withinRegion\" : { \"$geometry\" : { \"type\" : \"Point\", \"coordinates\" : [ 1, 2 ] } }, "
		    "\"field\" : \"a.b\" } } ] }");
		bson_destroy(&out);
		bson_destroy(f);
	}
	bson_destroy(&v1);
	bson_destroy(&v2);
	bson_destroy(spec);
	bson_destroy(key);
	terr_clear(&err);
}

/* Both forms of a bucket of the given measurements (v1 as ts_bucket_build
 * makes it, v2 compressed). */
static void
buckets_of(const char *const *ms_json, int n, bson_t *v1, bson_t *v2)
{
	bson_t *ms[8];
	bson_oid_t id;
	terr_t err = TERR_INIT;
	ts_colstates_t cs = {0};

	for (int i = 0; i < n; i++)
		ms[i] = tt_json(ms_json[i]);
	bson_oid_init_from_string(&id, "000000000000000000000000");
	bson_init(v1);
	ts_bucket_build(&O, &id, 0, NULL, (const bson_t *const *)ms, n, v1);
	bson_init(v2);
	TT_EQ_INT(ts_bucket_build_compressed(&O, &id, 0, NULL, (const bson_t *const *)ms, n, v2, &cs, &err), 0);
	ts_colstates_clear(&cs);
	for (int i = 0; i < n; i++)
		bson_destroy(ms[i]);
}

static void
no_key(void *ctx, const uint8_t *key, size_t len, const uint8_t *tb, size_t tblen)
{
	(void)ctx, (void)key, (void)len, (void)tb, (void)tblen;
}

/* The keys of a bucket index {control.min.x, control.max.x, ...} over b: 0,
 * or the error's code. */
static int
bucket_keys(const char *key_json, const bson_t *b)
{
	bson_t *key = tt_json(key_json);
	bson_t *spec = bson_new();
	storage_index_t ix = {.name = "i", .spec = spec, .key = key, .nfields = (int)bson_count_keys(key),
	                      .plain_btree = true, .ts_time_field = (char *)"t"};
	terr_t err = TERR_INIT;
	int rc, code;

	BSON_APPEND_DOCUMENT(spec, "key", key);
	rc = query_keygen(&ix, b, no_key, NULL, NULL, &err);
	code = rc == 0 ? 0 : err.code;
	if (code == 5930501)
		TT_EQ_STR(err.msg, "Indexed measurement field contains an array value");
	terr_clear(&err);
	bson_destroy(key);
	bson_destroy(spec);
	return code;
}

/* mongod's validateDocumentCommon: an indexed measurement field holding an
 * array refuses the bucket (5930501), decided from control.min/max (No /
 * Maybe / Yes) and, on Maybe, from the column itself, compressed or not. */
static void
test_bucket_arrays(void)
{
	static const struct {
		const char *bucket;
		const char *field;
		bucket_array_t want;
	} dec[] = {
		{"{\"control\": {\"min\": {\"x\": 1.5}, \"max\": {\"x\": 9.5}}}", "x", BUCKET_ARRAY_NO},
		{"{\"control\": {\"min\": {\"x\": [1]}, \"max\": {\"x\": [9, \"c\"]}}}", "x", BUCKET_ARRAY_YES},
		{"{\"control\": {\"min\": {\"x\": 2.5}, \"max\": {\"x\": [1]}}}", "x", BUCKET_ARRAY_YES},
		/* whole-value bounds of mixed types: an array may hide between */
		{"{\"control\": {\"min\": {\"x\": 1.5}, \"max\": {\"x\": true}}}", "x", BUCKET_ARRAY_MAYBE},
		{"{\"control\": {\"min\": {\"x\": {\"$minKey\": 1}}, \"max\": {\"x\": \"s\"}}}", "x", BUCKET_ARRAY_NO},
		{"{\"control\": {\"min\": {\"x\": {\"$minKey\": 1}}, \"max\": {\"x\": true}}}", "x", BUCKET_ARRAY_MAYBE},
		/* mongod compares BSON type numbers: an int32 min (16) is past Array's 4 */
		{"{\"control\": {\"min\": {\"x\": 1}, \"max\": {\"x\": true}}}", "x", BUCKET_ARRAY_NO},
		{"{\"control\": {\"min\": {\"x\": 3}, \"max\": {\"x\": [1]}}}", "x", BUCKET_ARRAY_NO},
		{"{\"control\": {\"min\": {}, \"max\": {}}}", "x", BUCKET_ARRAY_NO},
		{"{\"control\": {\"min\": {\"x\": 1.5}, \"max\": {}}}", "x", BUCKET_ARRAY_MAYBE},
		{"{\"control\": {\"min\": {\"x\": 1.5}}}", "x", BUCKET_ARRAY_MAYBE},
		{"{\"control\": {\"min\": {\"a\": {\"b\": 1.5}}, \"max\": {\"a\": {\"b\": 2.5}}}}", "a.b", BUCKET_ARRAY_NO},
		{"{\"control\": {\"min\": {\"a\": {\"b\": [1]}}, \"max\": {\"a\": {\"b\": [2]}}}}", "a.b", BUCKET_ARRAY_YES},
		{"{\"control\": {\"min\": {\"a\": 1.5}, \"max\": {\"a\": {\"b\": true}}}}", "a.b", BUCKET_ARRAY_MAYBE},
		{"{\"control\": {\"min\": {\"a\": 1.5}, \"max\": {\"a\": {\"b\": 3.5}}}}", "a.b", BUCKET_ARRAY_NO},
		{"{\"control\": {\"min\": {\"a\": 1.5}, \"max\": {\"a\": {\"b\": [3]}}}}", "a.b", BUCKET_ARRAY_YES},
		{"{\"control\": {\"min\": {\"a\": \"s\"}, \"max\": {\"a\": [1]}}}", "a.b", BUCKET_ARRAY_YES},
		{"{\"control\": {\"min\": {\"a\": 1.5}, \"max\": {\"a\": 2.5}}}", "a.b", BUCKET_ARRAY_NO},
		{"{\"control\": {\"min\": {\"a\": {\"c\": 1.5}}, \"max\": {\"a\": {\"c\": 2.5}}}}", "a.b", BUCKET_ARRAY_NO},
	};
	static const char *const plain_ms[] = {
		"{\"t\": {\"$date\": 0}, \"x\": 1, \"a\": {\"b\": 1}, \"z\": [1]}",
		"{\"t\": {\"$date\": 1000}, \"x\": 2, \"a\": {\"c\": [1]}}",
	};
	static const char *const arr_ms[] = {
		"{\"t\": {\"$date\": 0}, \"x\": [1]}",
		"{\"t\": {\"$date\": 1000}, \"x\": [3, 4], \"a\": [{\"b\": 1}]}",
	};
	static const char *const deep_ms[] = {
		"{\"t\": {\"$date\": 0}, \"a\": {\"b\": [2]}}",
	};
	terr_t err = TERR_INIT;
	bson_t v1, v2;
	bool found;

	bucket_column_set_decoder(bsoncolumn_decode);
	for (size_t i = 0; i < sizeof dec / sizeof dec[0]; i++) {
		bson_t *b = tt_json(dec[i].bucket);
		TT_EQ_INT(bucket_field_array_decision(b, dec[i].field), dec[i].want);
		bson_destroy(b);
	}
	/* the columns, both forms */
	buckets_of(plain_ms, 2, &v1, &v2);
	for (int f = 0; f < 2; f++) {
		const bson_t *b = f ? &v2 : &v1;
		TT_EQ_INT(bucket_column_has_array(b, "x", &found, &err), 0);
		TT_ASSERT(!found);
		TT_EQ_INT(bucket_column_has_array(b, "a.b", &found, &err), 0);
		TT_ASSERT(!found);
		TT_EQ_INT(bucket_column_has_array(b, "z", &found, &err), 0);
		TT_ASSERT(found);
		TT_EQ_INT(bucket_column_has_array(b, "nope.q", &found, &err), 0);
		TT_ASSERT(!found);
		/* indexed x, a.b, t: fine; z (an array) refused; the time field is never checked */
		TT_EQ_INT(bucket_keys("{\"control.min.x\": 1, \"control.max.x\": 1}", b), 0);
		TT_EQ_INT(bucket_keys("{\"control.max.a.b\": -1, \"control.min.a.b\": -1}", b), 0);
		TT_EQ_INT(bucket_keys("{\"control.min.t\": 1, \"control.max.t\": 1}", b), 0);
		TT_EQ_INT(bucket_keys("{\"control.min.x\": 1, \"control.max.x\": 1, \"control.min.z\": 1}", b), 5930501);
	}
	bson_destroy(&v1);
	bson_destroy(&v2);
	buckets_of(arr_ms, 2, &v1, &v2);
	for (int f = 0; f < 2; f++) {
		const bson_t *b = f ? &v2 : &v1;
		TT_EQ_INT(bucket_column_has_array(b, "x", &found, &err), 0);
		TT_ASSERT(found);
		TT_EQ_INT(bucket_column_has_array(b, "a.b", &found, &err), 0);
		TT_ASSERT(found);   /* an array on the way */
		TT_EQ_INT(bucket_keys("{\"control.min.x\": 1, \"control.max.x\": 1}", b), 5930501);
		TT_EQ_INT(bucket_keys("{\"meta.s\": 1, \"control.min.t\": 1}", b), 0);
	}
	bson_destroy(&v1);
	bson_destroy(&v2);
	buckets_of(deep_ms, 1, &v1, &v2);
	for (int f = 0; f < 2; f++) {
		TT_EQ_INT(bucket_column_has_array(f ? &v2 : &v1, "a.b", &found, &err), 0);
		TT_ASSERT(found);
	}
	bson_destroy(&v1);
	bson_destroy(&v2);
	/* Maybe (whole-value bounds 1.5 .. true): the column decides, v1 and BSONColumn */
	for (int arr = 0; arr < 2; arr++)
		for (int f = 0; f < 2; f++) {
			bson_t *col = tt_json(arr ? "{\"0\": 1.5, \"1\": [1], \"2\": true}" : "{\"0\": 1.5, \"1\": 7.5, \"2\": true}");
			bson_t *b = tt_json("{\"control\": {\"version\": 1, \"min\": {\"x\": 1.5}, \"max\": {\"x\": true}}}");
			bson_t data;
			uint8_t *bin = NULL;
			uint32_t len = 0;
			bson_append_document_begin(b, "data", -1, &data);
			if (f) {
				TT_EQ_INT(bsoncolumn_encode(col, 3, &bin, &len, &err), 0);
				bson_append_binary(&data, "x", -1, (bson_subtype_t)7, bin, len);
				bson_free(bin);
			} else {
				BSON_APPEND_DOCUMENT(&data, "x", col);
			}
			bson_append_document_end(b, &data);
			TT_EQ_INT(bucket_keys("{\"control.min.x\": 1, \"control.max.x\": 1}", b), arr ? 5930501 : 0);
			bson_destroy(col);
			bson_destroy(b);
		}
	terr_clear(&err);
}

int
main(void)
{
	TT_RUN(test_keys);
	TT_RUN(test_specs);
	TT_RUN(test_partial);
	TT_RUN(test_partial_sound);
	TT_RUN(test_bucket_geo);
	TT_RUN(test_bucket_arrays);
	TT_RUN(test_views);
	TT_RUN(test_ix_fields);
	return tt_finish();
}
