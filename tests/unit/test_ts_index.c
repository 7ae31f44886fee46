/*
 * test_ts_index.c -- timeseries/ts_index.c on its own: user index specs of
 * a time-series collection translated into bucket index specs as mongod
 * 9.0's createBucketsIndexSpecFromTimeseriesIndexSpec and
 * makeTimeseriesCreateIndexesCommand do (time, meta, measurement keys in
 * both directions, originalSpec, default names), mongod's refusals and
 * codes, listIndexes' view back (originalSpec, reverse mapping, keys that
 * do not map back), and which measurement fields an index lets the bucket
 * filter bound (ts_ix_fields_add, ts_bucket_filter_ix's forms).
 */
#include "tt.h"

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
	/* what Tamga does not build: 238, never a wrong index */
	TT_EQ_INT(spec_code("{\"key\": {\"t\": 1}, \"name\": \"u\", \"expireAfterSeconds\": 10, "
	    "\"partialFilterExpression\": {\"m\": 1}}", NULL), 238);
	TT_EQ_INT(spec_code("{\"key\": {\"loc\": \"2dsphere\"}, \"name\": \"g\"}", NULL), 238);
	TT_EQ_INT(spec_code("{\"key\": {\"x\": 1}, \"name\": \"u\", \"partialFilterExpression\": {\"x\": {\"$gt\": 1}}}",
	    NULL), 238);
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

int
main(void)
{
	TT_RUN(test_keys);
	TT_RUN(test_specs);
	TT_RUN(test_views);
	TT_RUN(test_ix_fields);
	return tt_finish();
}
