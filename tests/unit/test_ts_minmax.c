/*
 * test_ts_minmax.c -- the corners of field-by-field bucket bounds
 * (timeseries/ts_minmax.c, mongod's bucket_catalog MinMax): scalars of one
 * canonical type, mixed types by canonical order, objects field by field
 * (a bound no measurement holds), arrays position by position, objects
 * against arrays, the field order of mongod's lock-step walk, the skipped
 * metaField, and a bucket built and appended to through ts_bucket.c.
 */
#include <bson/bson.h>

#include "tt.h"

#include "bson/damage.h"
#include "timeseries/timeseries.h"
#include "timeseries/ts_compress.h"
#include "timeseries/ts_minmax.h"

/* min and max documents of the measurements (a JSON array) against want. */
static void
check(const char *docs_json, const char *want_min, const char *want_max)
{
	bson_error_t e;
	char *wrapped = bson_strdup_printf("{\"a\": %s}", docs_json);
	bson_t *arr = bson_new_from_json((const uint8_t *)wrapped, -1, &e);
	bson_t docs[16], mn = BSON_INITIALIZER, mx = BSON_INITIALIZER;
	const bson_t *ms[16];
	bson_iter_t it, sub;
	int n = 0;

	TT_ASSERT(arr != NULL);
	if (arr == NULL)
		return;
	bson_iter_init_find(&it, arr, "a");
	bson_iter_recurse(&it, &sub);
	while (bson_iter_next(&sub) && n < 16) {
		const uint8_t *d;
		uint32_t l;
		bson_iter_document(&sub, &l, &d);
		bson_init_static(&docs[n], d, l);
		ms[n] = &docs[n];
		n++;
	}
	ts_minmax_doc(ms, n, "meta", -1, &mn);
	ts_minmax_doc(ms, n, "meta", 1, &mx);
	TT_EQ_JSON(&mn, want_min);
	TT_EQ_JSON(&mx, want_max);
	bson_destroy(&mn);
	bson_destroy(&mx);
	bson_destroy(arr);
	bson_free(wrapped);
}

static void
test_scalars(void)
{
	/* mongod's MinMaxNoUpdatesAfterFullMinMax, the meta left out */
	check("[{\"a\": 2, \"b\": 3, \"meta\": 4}, {\"a\": 1, \"b\": 3, \"meta\": 4}]",
	    "{ \"a\" : 1, \"b\" : 3 }", "{ \"a\" : 2, \"b\" : 3 }");
	/* numbers of every width compare as numbers */
	check("[{\"a\": 2.5}, {\"a\": {\"$numberLong\": \"7\"}}, {\"a\": 1}]", "{ \"a\" : 1 }", "{ \"a\" : 7 }");
	/* mixed scalars: canonical order (null < numbers < strings) */
	check("[{\"a\": \"s\"}, {\"a\": null}, {\"a\": 3}]", "{ \"a\" : null }", "{ \"a\" : \"s\" }");
	/* a field only some measurements have */
	check("[{\"a\": 1}, {\"b\": 2}, {\"a\": 0}]", "{ \"a\" : 0, \"b\" : 2 }", "{ \"a\" : 1, \"b\" : 2 }");
}

static void
test_objects(void)
{
	/* field by field: a max no measurement holds */
	check("[{\"b\": {\"c\": 1, \"d\": 5}}, {\"b\": {\"c\": 3}}]",
	    "{ \"b\" : { \"c\" : 1, \"d\" : 5 } }", "{ \"b\" : { \"c\" : 3, \"d\" : 5 } }");
	/* nested two levels, a subfield of mixed types */
	check("[{\"o\": {\"p\": {\"x\": 1}}}, {\"o\": {\"p\": {\"x\": \"s\", \"y\": 2}}}, {\"o\": {\"p\": {\"x\": 0}}}]",
	    "{ \"o\" : { \"p\" : { \"x\" : 0, \"y\" : 2 } } }", "{ \"o\" : { \"p\" : { \"x\" : \"s\", \"y\" : 2 } } }");
	/* an object against a scalar: the whole value of the lower / higher type */
	check("[{\"a\": {\"x\": 9}}, {\"a\": 5}, {\"a\": {\"x\": 1}}]", "{ \"a\" : 5 }", "{ \"a\" : { \"x\" : 9 } }");
	/* a new field goes where mongod's walk stands: before the field it
	 * precedes in the measurement */
	check("[{\"o\": {\"a\": 1}}, {\"o\": {\"b\": 1, \"a\": 2}}]",
	    "{ \"o\" : { \"b\" : 1, \"a\" : 1 } }", "{ \"o\" : { \"b\" : 1, \"a\" : 2 } }");
	/* another field order: matched by name */
	check("[{\"o\": {\"a\": 1, \"b\": 5}}, {\"o\": {\"b\": 2, \"a\": 3}}]",
	    "{ \"o\" : { \"a\" : 1, \"b\" : 2 } }", "{ \"o\" : { \"a\" : 3, \"b\" : 5 } }");
	/* {} is an object */
	check("[{\"o\": {}}, {\"o\": {\"a\": 1}}]", "{ \"o\" : { \"a\" : 1 } }", "{ \"o\" : { \"a\" : 1 } }");
}

static void
test_arrays(void)
{
	/* position by position; the longer array's extra positions kept */
	check("[{\"a\": [1, 5]}, {\"a\": [3]}, {\"a\": [2, 0, 7]}]", "{ \"a\" : [ 1, 0, 7 ] }", "{ \"a\" : [ 3, 5, 7 ] }");
	/* mongod's MinMaxNoUpdatesAfterFullMinMaxNested: objects sort before arrays */
	check("[{\"a\": {\"z\": 1}, \"b\": [{\"z\": 1}, {\"z\": 2}]}, {\"a\": [{\"z\": 1}, {\"z\": 2}], \"b\": {\"z\": 1}}]",
	    "{ \"a\" : { \"z\" : 1 }, \"b\" : { \"z\" : 1 } }",
	    "{ \"a\" : [ { \"z\" : 1 }, { \"z\" : 2 } ], \"b\" : [ { \"z\" : 1 }, { \"z\" : 2 } ] }");
	/* objects inside arrays merge field by field */
	check("[{\"a\": [{\"x\": 1, \"y\": 9}]}, {\"a\": [{\"x\": 4}]}]",
	    "{ \"a\" : [ { \"x\" : 1, \"y\" : 9 } ] }", "{ \"a\" : [ { \"x\" : 4, \"y\" : 9 } ] }");
}

/* A bucket built compressed, appended to, and built as v1: control holds
 * the field-by-field bounds in all three. */
static void
test_buckets(void)
{
	ts_options_t o = {.time_field = "t", .meta_field = "m", .max_span = 3600, .rounding = 3600};
	bson_t *m1 = BCON_NEW("t", BCON_DATE_TIME(1000), "m", BCON_INT32(1), "b", "{", "c", BCON_INT32(1), "d",
	    BCON_INT32(5), "}");
	bson_t *m2 = BCON_NEW("t", BCON_DATE_TIME(2000), "m", BCON_INT32(1), "b", "{", "c", BCON_INT32(3), "}");
	const bson_t *ms[2] = {m1, m2};
	bson_oid_t id;
	bson_value_t meta = {.value_type = BSON_TYPE_INT32, .value.v_int32 = 1};
	bson_t built = BSON_INITIALIZER, appended = BSON_INITIALIZER, v1 = BSON_INITIALIZER;
	ts_colstates_t next = {0};
	terr_t err = TERR_INIT;
	bdamages_t dm;
	bson_iter_t it;

	memset(&dm, 0, sizeof(dm));
	bson_oid_init(&id, NULL);
	TT_EQ_INT(ts_bucket_build_compressed(&o, &id, 0, &meta, ms, 1, &built, &next, &err), 0);
	ts_colstates_clear(&next);
	TT_EQ_INT(ts_bucket_append_compressed(&o, &built, ms + 1, 1, NULL, &appended, &dm, &next, &err), 0);
	ts_colstates_clear(&next);
	TT_ASSERT(bson_iter_init(&it, &appended) && bson_iter_find_descendant(&it, "control.max.b", &it));
	{
		bson_t want = BSON_INITIALIZER, got;
		const uint8_t *d;
		uint32_t l;
		BSON_APPEND_INT32(&want, "c", 3);
		BSON_APPEND_INT32(&want, "d", 5);
		bson_iter_document(&it, &l, &d);
		bson_init_static(&got, d, l);
		TT_ASSERT(bson_equal(&got, &want));
		bson_destroy(&want);
	}
	ts_bucket_build(&o, &id, 0, &meta, ms, 2, &v1);
	TT_ASSERT(bson_iter_init(&it, &v1) && bson_iter_find_descendant(&it, "control.min.b.d", &it) &&
	    bson_iter_as_int64(&it) == 5);
	bdamages_destroy(&dm);
	bson_destroy(&built);
	bson_destroy(&appended);
	bson_destroy(&v1);
	bson_destroy(m1);
	bson_destroy(m2);
	terr_clear(&err);
}

int
main(void)
{
	TT_RUN(test_scalars);
	TT_RUN(test_objects);
	TT_RUN(test_arrays);
	TT_RUN(test_buckets);
	return tt_finish();
}
