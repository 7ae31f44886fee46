/*
 * test_ts_schema.c -- the corners of an open bucket's schema
 * (timeseries/ts_schema.c, mongod's bucket_catalog Schema): canonical types
 * (int/long/double/decimal one type, string and symbol one, null its own),
 * objects field by field, arrays position by position, new and missing
 * paths, the metaField left out, and a stored bucket's schema from its
 * control.min/max (a mixed one gives none).
 */
#include <bson/bson.h>

#include "tt.h"

#include "timeseries/ts_schema.h"

static bson_t *
J(const char *json)
{
	bson_error_t e;
	bson_t *b = bson_new_from_json((const uint8_t *)json, -1, &e);

	if (b == NULL)
		TT_FAIL_("bad json %s: %s", json, e.message);
	return b;
}

/* Whether m fits after the measurements in first[] were added. */
static int
fits_after(const char *const *first, const char *m, const char *skip)
{
	ts_schema_t *s = ts_schema_new();
	int r;

	for (int i = 0; first[i] != NULL; i++) {
		bson_t *d = J(first[i]);
		TT_ASSERT(ts_schema_add(s, d, skip));
		bson_destroy(d);
	}
	{
		bson_t *d = J(m);
		r = ts_schema_check(s, d, skip);
		/* add agrees with check, and a copy answers as the original */
		ts_schema_t *c = ts_schema_copy(s);
		TT_EQ_INT(ts_schema_check(c, d, skip), r);
		TT_EQ_INT(ts_schema_add(c, d, skip), r >= 0);
		ts_schema_free(c);
		bson_destroy(d);
	}
	ts_schema_free(s);
	return r;
}

static void
test_scalars(void)
{
	const char *nums[] = {"{\"a\": 1}", "{\"a\": {\"$numberLong\": \"5\"}}", NULL};
	TT_EQ_INT(fits_after(nums, "{\"a\": 2.5}", NULL), 0);
	TT_EQ_INT(fits_after(nums, "{\"a\": {\"$numberDecimal\": \"1\"}}", NULL), 0);
	TT_EQ_INT(fits_after(nums, "{\"a\": \"x\"}", NULL), -1);
	/* null is a type of its own (canonical 5): null after numbers changes the schema */
	TT_EQ_INT(fits_after(nums, "{\"a\": null}", NULL), -1);
	/* a missing field changes nothing; a new one fits and adds a path */
	TT_EQ_INT(fits_after(nums, "{\"b\": true}", NULL), 1);
	TT_EQ_INT(fits_after(nums, "{}", NULL), 0);
	{
		const char *strs[] = {"{\"a\": \"x\"}", NULL};
		TT_EQ_INT(fits_after(strs, "{\"a\": {\"$symbol\": \"y\"}}", NULL), 0);
		TT_EQ_INT(fits_after(strs, "{\"a\": {\"$date\": {\"$numberLong\": \"1\"}}}", NULL), -1);
	}
	{
		/* the field order of later measurements does not matter */
		const char *ab[] = {"{\"a\": 1, \"b\": \"s\"}", NULL};
		TT_EQ_INT(fits_after(ab, "{\"b\": \"t\", \"a\": 2}", NULL), 0);
		TT_EQ_INT(fits_after(ab, "{\"b\": 3, \"a\": 2}", NULL), -1);
	}
}

static void
test_nested(void)
{
	const char *obj[] = {"{\"o\": {\"x\": 1, \"y\": \"s\"}}", NULL};
	TT_EQ_INT(fits_after(obj, "{\"o\": {\"x\": 2}}", NULL), 0);
	TT_EQ_INT(fits_after(obj, "{\"o\": {\"x\": 2, \"z\": [1]}}", NULL), 1);
	TT_EQ_INT(fits_after(obj, "{\"o\": {\"y\": 2}}", NULL), -1);      /* a subfield's type */
	TT_EQ_INT(fits_after(obj, "{\"o\": 5}", NULL), -1);               /* object -> scalar */
	TT_EQ_INT(fits_after(obj, "{\"o\": [1]}", NULL), -1);             /* object -> array */
	TT_EQ_INT(fits_after(obj, "{\"o\": {}}", NULL), 0);
	{
		const char *arr[] = {"{\"a\": [1, \"s\", {\"k\": true}]}", NULL};
		TT_EQ_INT(fits_after(arr, "{\"a\": [2]}", NULL), 0);          /* shorter */
		TT_EQ_INT(fits_after(arr, "{\"a\": [2, \"t\", {\"k\": false}, 9]}", NULL), 1);  /* longer */
		TT_EQ_INT(fits_after(arr, "{\"a\": [\"s\"]}", NULL), -1);     /* position 0 changed type */
		TT_EQ_INT(fits_after(arr, "{\"a\": [1, \"s\", {\"k\": 1}]}", NULL), -1);
		TT_EQ_INT(fits_after(arr, "{\"a\": {\"0\": 1}}", NULL), -1);  /* array -> object */
		TT_EQ_INT(fits_after(arr, "{\"a\": []}", NULL), 0);
	}
	{
		/* the skipped field (metaField) never counts */
		const char *m[] = {"{\"m\": 1, \"v\": 1}", NULL};
		TT_EQ_INT(fits_after(m, "{\"m\": \"x\", \"v\": 2}", "m"), 0);
		TT_EQ_INT(fits_after(m, "{\"m\": \"x\", \"v\": 2}", NULL), -1);
	}
}

static void
test_from_bucket(void)
{
	bson_t *b = J("{\"control\": {\"version\": 2, \"min\": {\"t\": {\"$date\": {\"$numberLong\": \"0\"}}, \"a\": 1, "
	              "\"o\": {\"x\": 1}}, \"max\": {\"t\": {\"$date\": {\"$numberLong\": \"9\"}}, \"a\": 7.5, "
	              "\"o\": {\"x\": 3, \"y\": \"s\"}}}}");
	ts_schema_t *s = ts_schema_from_bucket(b);
	bson_t *m;

	TT_ASSERT(s != NULL);
	TT_ASSERT(ts_schema_size(s) > 0);
	m = J("{\"t\": {\"$date\": {\"$numberLong\": \"5\"}}, \"a\": 3, \"o\": {\"y\": \"z\"}}");
	TT_EQ_INT(ts_schema_check(s, m, NULL), 0);
	bson_destroy(m);
	m = J("{\"a\": \"3\"}");
	TT_EQ_INT(ts_schema_check(s, m, NULL), -1);
	bson_destroy(m);
	ts_schema_free(s);
	bson_destroy(b);
	/* whole-value min/max of a mixed bucket (Tamga before schema changes
	 * closed buckets, or a raw write): no schema, the bucket is not reopened */
	b = J("{\"control\": {\"min\": {\"a\": 1}, \"max\": {\"a\": \"s\"}}}");
	TT_ASSERT(ts_schema_from_bucket(b) == NULL);
	bson_destroy(b);
	b = J("{\"control\": {\"min\": {\"a\": 1}}}");
	TT_ASSERT(ts_schema_from_bucket(b) == NULL);
	bson_destroy(b);
	ts_schema_free(NULL);
	TT_ASSERT(ts_schema_copy(NULL) == NULL);
}

/* mongod's doesMinMaxHaveMixedSchemaData: control.min against control.max */
static void
test_mixed(void)
{
	static const struct {
		const char *bucket;
		bool mixed;
	} cases[] = {
		{"{\"control\": {\"min\": {\"a\": 1}, \"max\": {\"a\": \"s\"}}}", true},
		{"{\"control\": {\"min\": {\"a\": 1}, \"max\": {\"a\": 2.5}}}", false},   /* numbers: one type */
		{"{\"control\": {\"min\": {\"a\": null}, \"max\": {\"a\": 2}}}", true},
		{"{\"control\": {\"min\": {\"o\": {\"x\": 1, \"y\": \"a\"}}, \"max\": {\"o\": {\"x\": 2, \"y\": 3}}}}", true},
		{"{\"control\": {\"min\": {\"o\": {\"x\": 1}}, \"max\": {\"o\": 5}}}", true},
		/* fields in another order (Tamga keeps min and max apart): by name */
		{"{\"control\": {\"min\": {\"o\": {\"x\": 1, \"y\": 2}}, \"max\": {\"o\": {\"y\": 3, \"x\": \"s\"}}}}", true},
		{"{\"control\": {\"min\": {\"o\": {\"x\": 1, \"y\": 2}}, \"max\": {\"o\": {\"y\": 3, \"x\": 4}}}}", false},
		{"{\"control\": {\"min\": {\"r\": [1, \"a\"]}, \"max\": {\"r\": [2, \"b\"]}}}", false},
		{"{\"control\": {\"min\": {\"r\": [1, \"a\"]}, \"max\": {\"r\": [2, 3]}}}", true},
		{"{\"control\": {\"min\": {\"r\": [1]}, \"max\": {\"r\": [2, 3]}}}", false},
		{"{\"control\": {\"min\": {\"a\": 1}}}", false},   /* no max: nothing to compare (mongod) */
		{"{\"meta\": 1}", false},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		bson_t *b = J(cases[i].bucket);
		TT_ASSERT(ts_bucket_mixed_schema(b) == cases[i].mixed);
		bson_destroy(b);
	}
}

int
main(void)
{
	TT_RUN(test_mixed);
	TT_RUN(test_scalars);
	TT_RUN(test_nested);
	TT_RUN(test_from_bucket);
	return tt_finish();
}
