/*
 * test_ts_bucket.c -- timeseries/ on its own: options normalized (defaults,
 * custom bucketing) and refused; buckets built, appended to and unpacked
 * (sparse columns, measurements without the meta, field order); and the
 * bucket filter a measurement query implies (meta paths, time bounds,
 * $and, what it must leave alone); the byte changes of an append (random
 * buckets: the damages applied to the old bucket give the rewritten bucket
 * byte for byte, and cost the new elements, not the bucket).
 */
#include "tt.h"

#include "bson/damage.h"
#include "common/mem.h"
#include "timeseries/timeseries.h"

static char *
json_of(const bson_t *b)
{
	return bson_as_relaxed_extended_json(b, NULL);
}

static void
expect_options(const char *in, const char *want)
{
	bson_t *h = tt_json(in), out = BSON_INITIALIZER;
	terr_t err = TERR_INIT;

	TT_EQ_INT(ts_options_check(h, &out, &err), 0);
	{
		char *j = json_of(&out);
		TT_EQ_STR(j, want);
		bson_free(j);
	}
	bson_destroy(&out);
	bson_destroy(h);
	terr_clear(&err);
}

static int
options_code(const char *in)
{
	bson_t *h = tt_json(in), out = BSON_INITIALIZER;
	terr_t err = TERR_INIT;
	int code = ts_options_check(h, &out, &err) == 0 ? 0 : err.code;

	bson_destroy(&out);
	bson_destroy(h);
	terr_clear(&err);
	return code;
}

static void
test_options(void)
{
	expect_options("{\"timeseries\": {\"timeField\": \"t\"}}",
	    "{ \"timeseries\" : { \"timeField\" : \"t\", \"granularity\" : \"seconds\", \"bucketMaxSpanSeconds\" : 3600 } }");
	expect_options("{\"timeseries\": {\"timeField\": \"t\", \"metaField\": \"m\", \"granularity\": \"hours\"}}",
	    "{ \"timeseries\" : { \"timeField\" : \"t\", \"metaField\" : \"m\", \"granularity\" : \"hours\", \"bucketMaxSpanSeconds\" : 2592000 } }");
	expect_options("{\"timeseries\": {\"timeField\": \"t\", \"bucketMaxSpanSeconds\": 600, \"bucketRoundingSeconds\": 600}}",
	    "{ \"timeseries\" : { \"timeField\" : \"t\", \"bucketRoundingSeconds\" : 600, \"bucketMaxSpanSeconds\" : 600 } }");
	TT_EQ_INT(options_code("{\"timeseries\": {\"timeField\": \"t\", \"bucketMaxSpanSeconds\": 600, \"bucketRoundingSeconds\": 60}}"), 72);
	TT_EQ_INT(options_code("{\"timeseries\": {\"timeField\": \"t\", \"bucketMaxSpanSeconds\": 0, \"bucketRoundingSeconds\": 0}}"), 2);
	TT_EQ_INT(options_code("{\"timeseries\": {\"timeField\": \"t\", \"granularity\": \"seconds\", \"bucketRoundingSeconds\": 60}}"), 72);
	TT_EQ_INT(options_code("{\"timeseries\": {\"timeField\": \"$t\"}}"), 2);
	TT_EQ_INT(options_code("{\"timeseries\": \"t\"}"), 14);
	TT_EQ_INT(options_code("{\"timeseries\": {\"timeField\": \"t\", \"metaField\": \"m.x\"}}"), 72);
	{
		bson_t *h = tt_json("{\"timeseries\": {\"timeField\": \"t\", \"granularity\": \"minutes\", \"bucketMaxSpanSeconds\": 86400}}");
		ts_options_t o;
		TT_ASSERT(ts_options_get(h, &o));
		TT_EQ_INT(o.max_span, 86400);
		TT_EQ_INT(o.rounding, 3600);
		TT_ASSERT(o.meta_field == NULL);
		bson_destroy(h);
	}
}

typedef struct collected {
	bson_string_t *s;
	int n;
} collected_t;

static int
collect(void *ctx, const bson_t *m, terr_t *err)
{
	collected_t *c = ctx;
	char *j = json_of(m);

	bson_string_append_printf(c->s, "%s%s", c->n++ ? " | " : "", j);
	bson_free(j);
	return 0;
}

static char *
unpack_text(const ts_options_t *o, const bson_t *bucket, int *n)
{
	collected_t c = {bson_string_new(NULL), 0};
	bson_t scratch = BSON_INITIALIZER;
	terr_t err = TERR_INIT;

	TT_EQ_INT(ts_bucket_unpack(o, bucket, &scratch, collect, &c, &err), 0);
	bson_destroy(&scratch);
	*n = c.n;
	return bson_string_free(c.s, false);
}

static void
test_build_append_unpack(void)
{
	ts_options_t o = {.time_field = "t", .meta_field = "m", .max_span = 3600, .rounding = 60};
	bson_t *a = tt_json("{\"t\": {\"$date\": {\"$numberLong\": \"65000\"}}, \"x\": 1, \"m\": {\"k\": 1}}");
	bson_t *b = tt_json("{\"y\": \"s\", \"t\": {\"$date\": {\"$numberLong\": \"61000\"}}, \"m\": {\"k\": 1}}");
	bson_t *c = tt_json("{\"t\": {\"$date\": {\"$numberLong\": \"70000\"}}, \"x\": -5, \"z\": [1, 2]}");
	const bson_t *ms[2];
	bson_t bucket = BSON_INITIALIZER, grown = BSON_INITIALIZER;
	bson_oid_t id;
	bson_value_t meta;
	bson_iter_t it;
	int n;
	char *t;

	bson_oid_init_from_string(&id, "000000000000000000000001");
	bson_iter_init_find(&it, a, "m");
	meta = *bson_iter_value(&it);
	ms[0] = a;
	ms[1] = b;
	ts_bucket_build(&o, &id, 60000, &meta, ms, 2, &bucket);
	t = json_of(&bucket);
	TT_EQ_STR(t, "{ \"_id\" : { \"$oid\" : \"000000000000000000000001\" }, \"control\" : { \"version\" : 1, "
	    "\"min\" : { \"t\" : { \"$date\" : \"1970-01-01T00:01:00Z\" }, \"x\" : 1, \"y\" : \"s\" }, "
	    "\"max\" : { \"t\" : { \"$date\" : \"1970-01-01T00:01:05Z\" }, \"x\" : 1, \"y\" : \"s\" } }, "
	    "\"meta\" : { \"k\" : 1 }, \"data\" : { \"t\" : { \"0\" : { \"$date\" : \"1970-01-01T00:01:05Z\" }, "
	    "\"1\" : { \"$date\" : \"1970-01-01T00:01:01Z\" } }, \"x\" : { \"0\" : 1 }, \"y\" : { \"1\" : \"s\" } } }");
	bson_free(t);
	TT_EQ_INT(ts_bucket_count(&o, &bucket), 2);
	/* sparse columns come back per measurement: time, meta, the rest */
	t = unpack_text(&o, &bucket, &n);
	TT_EQ_INT(n, 2);
	TT_EQ_STR(t, "{ \"t\" : { \"$date\" : \"1970-01-01T00:01:05Z\" }, \"m\" : { \"k\" : 1 }, \"x\" : 1 } | "
	    "{ \"t\" : { \"$date\" : \"1970-01-01T00:01:01Z\" }, \"m\" : { \"k\" : 1 }, \"y\" : \"s\" }");
	bson_free(t);
	/* appending keeps the old bytes, adds columns, widens bounds */
	ms[0] = c;
	ts_bucket_append(&o, &bucket, ms, 1, &grown);
	TT_EQ_INT(ts_bucket_count(&o, &grown), 3);
	t = unpack_text(&o, &grown, &n);
	TT_EQ_INT(n, 3);
	TT_ASSERT(strstr(t, "\"x\" : -5, \"z\" : [ 1, 2 ] }") != NULL);
	bson_free(t);
	TT_ASSERT(bson_iter_init(&it, &grown) && bson_iter_find_descendant(&it, "control.min.x", &it) &&
	    bson_iter_as_int64(&it) == -5);
	TT_ASSERT(bson_iter_init(&it, &grown) && bson_iter_find_descendant(&it, "control.min.t", &it) &&
	    bson_iter_date_time(&it) == 60000);
	TT_ASSERT(bson_iter_init(&it, &grown) && bson_iter_find_descendant(&it, "control.max.t", &it) &&
	    bson_iter_date_time(&it) == 70000);
	/* not a bucket: nothing */
	{
		bson_t *junk = tt_json("{\"_id\": 1, \"data\": 5}");
		t = unpack_text(&o, junk, &n);
		TT_EQ_INT(n, 0);
		bson_free(t);
		bson_destroy(junk);
	}
	bson_destroy(&bucket);
	bson_destroy(&grown);
	bson_destroy(a);
	bson_destroy(b);
	bson_destroy(c);
}

static void
expect_filter_fb(const char *filter, const char *want, bool field_bounds)
{
	ts_options_t o = {.time_field = "t", .meta_field = "m", .max_span = 3600, .rounding = 60,
	    .field_bounds = field_bounds};
	bson_t *f = tt_json(filter), out = BSON_INITIALIZER;
	bool any = ts_bucket_filter(&o, f, &out);
	char *j = any ? json_of(&out) : bson_strdup("none");

	TT_EQ_STR(j, want);
	bson_free(j);
	bson_destroy(&out);
	bson_destroy(f);
}

static void
expect_filter(const char *filter, const char *want)
{
	expect_filter_fb(filter, want, false);
}

static void
test_bucket_filter(void)
{
	/* subfields: only when every bucket's bounds are field by field (a
	 * collection created since), OR-ed with "a prefix is not a plain
	 * object in control.min or control.max" */
	expect_filter_fb("{\"x.y\": {\"$lt\": 5}}", "{ \"$and\" : [ { \"$or\" : [ { \"$or\" : [ "
	    "{ \"control.min.x.y\" : { \"$lt\" : 5 } }, "
	    "{ \"control.min.x.y\" : { \"$not\" : { \"$type\" : \"number\" } } }, "
	    "{ \"control.max.x.y\" : { \"$not\" : { \"$type\" : \"number\" } } }, "
	    "{ \"control.max.x.y\" : { \"$type\" : \"array\" } }, "
	    "{ \"control.min.x.y\" : { \"$numberDouble\" : \"NaN\" } } ] }, "
	    "{ \"control.min.x\" : { \"$not\" : { \"$type\" : \"object\" } } }, "
	    "{ \"control.min.x\" : { \"$type\" : \"array\" } }, "
	    "{ \"control.max.x\" : { \"$not\" : { \"$type\" : \"object\" } } }, "
	    "{ \"control.max.x\" : { \"$type\" : \"array\" } } ] } ] }", true);
	expect_filter_fb("{\"x.y\": {\"$lt\": \"s\"}}", "none", true);   /* not a number */
	expect_filter("{\"m\": 3}", "{ \"$and\" : [ { \"meta\" : 3 } ] }");
	expect_filter("{\"m.a.b\": {\"$gt\": 1}}", "{ \"$and\" : [ { \"meta.a.b\" : { \"$gt\" : 1 } } ] }");
	expect_filter("{\"mx\": 1}", "none");                 /* a field that only starts like the meta */
	/* a measurement field: only buckets whose bounds are both numbers (and
	 * whose min is not NaN, below every number) can go */
	expect_filter("{\"x\": {\"$gte\": 5}}", "{ \"$and\" : [ { \"$or\" : [ { \"control.max.x\" : { \"$gte\" : 5 } }, "
	    "{ \"control.min.x\" : { \"$not\" : { \"$type\" : \"number\" } } }, "
	    "{ \"control.max.x\" : { \"$not\" : { \"$type\" : \"number\" } } }, "
	    "{ \"control.max.x\" : { \"$type\" : \"array\" } }, "
	    "{ \"control.min.x\" : { \"$numberDouble\" : \"NaN\" } } ] } ] }");
	expect_filter("{\"x\": {\"$gte\": \"s\"}}", "none");  /* not a number */
	expect_filter("{\"x.y\": {\"$lt\": 5}}", "none");      /* subfields, older collections: whole-value bounds */
	expect_filter("{\"x\": 5}", "none");                    /* equality: not pushed */
	expect_filter("{\"t\": {\"$gte\": {\"$date\": {\"$numberLong\": \"1000\"}}}}",
	    "{ \"$and\" : [ { \"control.max.t\" : { \"$gte\" : { \"$date\" : \"1970-01-01T00:00:01Z\" } } } ] }");
	expect_filter("{\"t\": {\"$lt\": {\"$date\": {\"$numberLong\": \"1000\"}}, \"$ne\": 5}}",
	    "{ \"$and\" : [ { \"control.min.t\" : { \"$lt\" : { \"$date\" : \"1970-01-01T00:00:01Z\" } }, "
	    "\"_id\" : { \"$lte\" : { \"$oid\" : \"00000001ffffffffffffffff\" } } } ] }");
	expect_filter("{\"t\": {\"$date\": {\"$numberLong\": \"1000\"}}}",
	    "{ \"$and\" : [ { \"control.min.t\" : { \"$lte\" : { \"$date\" : \"1970-01-01T00:00:01Z\" } }, "
	    "\"control.max.t\" : { \"$gte\" : { \"$date\" : \"1970-01-01T00:00:01Z\" } }, "
	    "\"_id\" : { \"$lte\" : { \"$oid\" : \"00000001ffffffffffffffff\" } } } ] }");
	/* the bucket _id's start seconds bound the scan: from (time - bucketMaxSpanSeconds) to time */
	expect_filter("{\"t\": {\"$gte\": {\"$date\": {\"$numberLong\": \"1700000000000\"}}, \"$lt\": {\"$date\": {\"$numberLong\": \"1700086400000\"}}}}",
	    "{ \"$and\" : [ { \"control.max.t\" : { \"$gte\" : { \"$date\" : \"2023-11-14T22:13:20Z\" } }, "
	    "\"control.min.t\" : { \"$lt\" : { \"$date\" : \"2023-11-15T22:13:20Z\" } }, "
	    "\"_id\" : { \"$gte\" : { \"$oid\" : \"6553e2f00000000000000000\" }, \"$lte\" : { \"$oid\" : \"65554280ffffffffffffffff\" } } } ] }");
	expect_filter("{\"t\": {\"$gte\": 5}}", "none");      /* not a date: no bound */
	expect_filter("{\"$and\": [{\"m\": 1}, {\"x\": 2}]}", "{ \"$and\" : [ { \"meta\" : 1 } ] }");
	expect_filter("{\"$or\": [{\"m\": 1}, {\"x\": 2}]}", "none");
	expect_filter("{\"x\": 1, \"m\": {\"$in\": [1, 2]}}", "{ \"$and\" : [ { \"meta\" : { \"$in\" : [ 1, 2 ] } } ] }");
}

/* A bucket grown one measurement at a time past the 1-, 2- and 3-digit key
 * boundaries: the count (read from the time column's length) and the
 * values (old columns copied whole) stay right at every step, and a time
 * column that is not dates under 0..n-1 is still counted by walking it. */
/* A $match after the unpack split as mongod splits it: the meta conjuncts
 * left to the bucket filter, the rest the eventFilter, and the
 * wholeBucketFilter only when every event conjunct is a time range. */
static void
expect_split(const char *filter, bool ok, const char *event, const char *whole)
{
	ts_options_t o = {.time_field = "t", .meta_field = "m", .max_span = 3600, .rounding = 60};
	bson_t *f = tt_json(filter), ev = BSON_INITIALIZER, wh = BSON_INITIALIZER;
	bool got = ts_event_split(&o, f, &ev, &wh);
	char *je = bson_empty(&ev) ? bson_strdup("none") : json_of(&ev);
	char *jw = bson_empty(&wh) ? bson_strdup("none") : json_of(&wh);

	TT_EQ_INT(got, ok);
	TT_EQ_STR(je, event);
	TT_EQ_STR(jw, whole);
	bson_free(je);
	bson_free(jw);
	bson_destroy(&ev);
	bson_destroy(&wh);
	bson_destroy(f);
}

static void
test_event_split(void)
{
	expect_split("{\"m\": 1}", true, "none", "none");
	expect_split("{\"t\": {\"$gte\": {\"$date\": 1000}, \"$lt\": {\"$date\": 5000}}, \"m\": 2}", true,
	    "{ \"t\" : { \"$gte\" : { \"$date\" : \"1970-01-01T00:00:01Z\" }, \"$lt\" : { \"$date\" : \"1970-01-01T00:00:05Z\" } } }",
	    "{ \"$and\" : [ { \"control.min.t\" : { \"$gte\" : { \"$date\" : \"1970-01-01T00:00:01Z\" } } }, "
	    "{ \"control.max.t\" : { \"$lt\" : { \"$date\" : \"1970-01-01T00:00:05Z\" } } } ] }");
	expect_split("{\"t\": {\"$lte\": {\"$date\": 7}}}", true, "{ \"t\" : { \"$lte\" : { \"$date\" : \"1970-01-01T00:00:00.007Z\" } } }",
	    "{ \"control.max.t\" : { \"$lte\" : { \"$date\" : \"1970-01-01T00:00:00.007Z\" } } }");
	expect_split("{\"t\": {\"$date\": 7}}", true, "{ \"t\" : { \"$date\" : \"1970-01-01T00:00:00.007Z\" } }",
	    "{ \"$and\" : [ { \"control.min.t\" : { \"$eq\" : { \"$date\" : \"1970-01-01T00:00:00.007Z\" } } }, "
	    "{ \"control.max.t\" : { \"$eq\" : { \"$date\" : \"1970-01-01T00:00:00.007Z\" } } } ] }");
	/* another field: no tight form (its values may be missing in some measurements) */
	expect_split("{\"$and\": [{\"m.x\": 1}, {\"t\": {\"$gt\": {\"$date\": 1}}}, {\"a\": {\"$gt\": 1}}]}", true,
	    "{ \"$and\" : [ { \"t\" : { \"$gt\" : { \"$date\" : \"1970-01-01T00:00:00.001Z\" } } }, { \"a\" : { \"$gt\" : 1 } } ] }", "none");
	expect_split("{\"t\": {\"$gt\": 5}}", true, "{ \"t\" : { \"$gt\" : 5 } }", "none");   /* not a date */
	expect_split("{\"$or\": [{\"m\": 1}, {\"a\": 2}]}", true, "{ \"$or\" : [ { \"m\" : 1 }, { \"a\" : 2 } ] }", "none");
	/* operators the stage does not take: the $match stays a stage */
	expect_split("{\"$expr\": {\"$gt\": [\"$a\", 1]}}", false, "none", "none");
	expect_split("{\"a\": {\"$elemMatch\": {\"$where\": \"1\"}}}", false, "none", "none");
}

static void
test_append_many(void)
{
	ts_options_t o = {.time_field = "t", .meta_field = "m", .max_span = 3600, .rounding = 60};
	bson_t bucket = BSON_INITIALIZER;
	bson_oid_t id;
	int n;

	bson_oid_init_from_string(&id, "000000000000000000000002");
	for (int i = 0; i < 1005; i++) {
		bson_t m = BSON_INITIALIZER, next = BSON_INITIALIZER;
		const bson_t *ms[1] = {&m};
		BSON_APPEND_DATE_TIME(&m, "t", 60000 + i);
		BSON_APPEND_INT32(&m, "v", i);
		if (i == 0) {
			ts_bucket_build(&o, &id, 60000, NULL, ms, 1, &next);
		} else {
			TT_EQ_INT(ts_bucket_count(&o, &bucket), i);
			ts_bucket_append(&o, &bucket, ms, 1, &next);
		}
		bson_destroy(&bucket);
		bson_steal(&bucket, &next);
		bson_destroy(&m);
	}
	TT_EQ_INT(ts_bucket_count(&o, &bucket), 1005);
	{
		char *t = unpack_text(&o, &bucket, &n);
		TT_EQ_INT(n, 1005);
		TT_ASSERT(strstr(t, "\"v\" : 999 } | ") != NULL);
		TT_ASSERT(strstr(t, "\"v\" : 1004 }") != NULL);
		bson_free(t);
	}
	bson_destroy(&bucket);
	{
		/* keys not 0..n-1 (a raw write): counted by walking */
		bson_t *odd = tt_json("{\"data\": {\"t\": {\"0\": {\"$date\": 1}, \"7\": {\"$date\": 2}, \"1\": 5}}}");
		TT_EQ_INT(ts_bucket_count(&o, odd), 3);
		bson_destroy(odd);
		odd = tt_json("{\"data\": {\"t\": {\"0\": {\"$date\": 1}, \"5\": {\"$date\": 2}}}}");
		TT_EQ_INT(ts_bucket_count(&o, odd), 2);
		bson_destroy(odd);
	}
}

static uint64_t drng = 88172645463325252ull;

static uint32_t
drnd(uint32_t n)
{
	drng ^= drng << 13;
	drng ^= drng >> 7;
	drng ^= drng << 17;
	return (uint32_t)(drng % n);
}

/* A random measurement at time t_ms: some of the fields a..e (sparse), of
 * random types and sizes (min/max change size and type), meta m. */
static void
random_measurement(bson_t *m, int64_t t_ms)
{
	static const char *const fields[] = {"a", "b", "c", "d", "e"};
	char s[48];

	if (drnd(2))
		BSON_APPEND_INT32(m, "m", (int32_t)drnd(3));
	BSON_APPEND_DATE_TIME(m, "t", t_ms);
	for (int f = 0; f < 5; f++) {
		if (drnd(3) == 0)
			continue;
		switch (drnd(4)) {
		case 0:
			BSON_APPEND_DOUBLE(m, fields[f], drnd(100000) / 13.0);
			break;
		case 1:
			BSON_APPEND_INT32(m, fields[f], (int32_t)drnd(1000) - 500);
			break;
		case 2: {
			uint32_t n = drnd(40);
			memset(s, 'a' + (int)drnd(26), n);
			s[n] = 0;
			BSON_APPEND_UTF8(m, fields[f], s);
			break;
		}
		default:
			BSON_APPEND_INT64(m, fields[f], (int64_t)drnd(1u << 31) * 1000);
		}
	}
}

/* Random buckets grown by random batches: bdamages_compute(old, appended)
 * applied to old is the appended bucket, byte for byte, and a one-measurement
 * append to a bucket of hundreds costs well under a tenth of its bytes. */
static void
test_append_damages(void)
{
	ts_options_t o = {.time_field = "t", .meta_field = "m", .max_span = 3600, .rounding = 60};
	bdamages_t dm = {0}, dm2 = {0};

	for (int round = 0; round < 60; round++) {
		bson_t bucket = BSON_INITIALIZER;
		bson_oid_t id;
		int64_t t = 60000;
		int steps = 1 + (int)drnd(round % 4 == 0 ? 400 : 40);

		bson_oid_init_from_string(&id, "000000000000000000000003");
		for (int step = 0; step < steps; step++) {
			bson_t ms_[8], next = BSON_INITIALIZER;
			const bson_t *ms[8];
			int n = 1 + (int)drnd(step == 0 ? 8 : 3);
			for (int i = 0; i < n; i++) {
				bson_init(&ms_[i]);
				random_measurement(&ms_[i], t);
				t += 1 + (int64_t)drnd(3000);
				ms[i] = &ms_[i];
			}
			if (step == 0) {
				ts_bucket_build(&o, &id, 60000, NULL, ms, n, &next);
			} else {
				uint8_t *got;
				uint32_t len = 0;
				bson_t full = BSON_INITIALIZER;
				/* the full rewrite is the reference */
				ts_bucket_append(&o, &bucket, ms, n, &full);
				TT_ASSERT(ts_bucket_append_damages(&o, &bucket, ms, n, &next, &dm));
				TT_ASSERT(next.len == full.len && memcmp(bson_get_data(&next), bson_get_data(&full), full.len) == 0);
				got = bdamages_apply(bson_get_data(&bucket), bucket.len, bson_get_data(&full), full.len, &dm, &len);
				TT_ASSERT(got != NULL && len == full.len && memcmp(got, bson_get_data(&full), len) == 0);
				bson_free(got);
				/* the generic comparison agrees */
				TT_ASSERT(bdamages_compute(bson_get_data(&bucket), bucket.len, bson_get_data(&full), full.len,
				    &dm2));
				got = bdamages_apply(bson_get_data(&bucket), bucket.len, bson_get_data(&full), full.len, &dm2, &len);
				TT_ASSERT(got != NULL && len == full.len && memcmp(got, bson_get_data(&full), len) == 0);
				bson_free(got);
				if (ts_bucket_count(&o, &bucket) >= 200 && n == 1)
					TT_ASSERT(bdamages_bytes(&dm) < next.len / 10);
				bson_destroy(&full);
			}
			for (int i = 0; i < n; i++)
				bson_destroy(&ms_[i]);
			bson_destroy(&bucket);
			bson_steal(&bucket, &next);
		}
		bson_destroy(&bucket);
	}
	/* buckets of other layouts (written raw): the append falls back to a
	 * rewrite and a comparison, still byte-exact */
	{
		static const char *const raw[] = {
		    "{\"_id\": 1, \"control\": {\"version\": 1, \"min\": {\"t\": {\"$date\": 60000}}, \"max\": "
		    "{\"t\": {\"$date\": 60000}}, \"count\": 1}, \"data\": {\"t\": {\"0\": {\"$date\": 60000}}}}",
		    "{\"control\": {\"version\": 1, \"min\": {\"t\": {\"$date\": 60000}}, \"max\": {\"t\": {\"$date\": "
		    "60000}}}, \"_id\": 2, \"data\": {\"t\": {\"0\": {\"$date\": 60000}}}, \"extra\": true}",
		    "{\"_id\": 3, \"control\": {\"version\": 1, \"min\": {\"t\": {\"$date\": 60000}}, \"max\": "
		    "{\"t\": {\"$date\": 60000}}}, \"data\": {\"t\": {\"0\": {\"$date\": 60000}}, \"x\": 5}}",
		};
		for (size_t r = 0; r < sizeof(raw) / sizeof(raw[0]); r++) {
			bson_t *old = tt_json(raw[r]), m = BSON_INITIALIZER, next = BSON_INITIALIZER, full = BSON_INITIALIZER;
			const bson_t *ms[1] = {&m};
			uint8_t *got;
			uint32_t len = 0;
			BSON_APPEND_DATE_TIME(&m, "t", 61000);
			BSON_APPEND_INT32(&m, "a", 7);
			ts_bucket_append(&o, old, ms, 1, &full);
			TT_ASSERT(ts_bucket_append_damages(&o, old, ms, 1, &next, &dm));
			TT_ASSERT(next.len == full.len && memcmp(bson_get_data(&next), bson_get_data(&full), full.len) == 0);
			got = bdamages_apply(bson_get_data(old), old->len, bson_get_data(&full), full.len, &dm, &len);
			TT_ASSERT(got != NULL && len == full.len && memcmp(got, bson_get_data(&full), len) == 0);
			bson_free(got);
			bson_destroy(&m);
			bson_destroy(&next);
			bson_destroy(&full);
			bson_destroy(old);
		}
	}
	bdamages_destroy(&dm);
	bdamages_destroy(&dm2);
}

int
main(void)
{
	TT_RUN(test_options);
	TT_RUN(test_build_append_unpack);
	TT_RUN(test_bucket_filter);
	TT_RUN(test_event_split);
	TT_RUN(test_append_many);
	TT_RUN(test_append_damages);
	return tt_finish();
}
