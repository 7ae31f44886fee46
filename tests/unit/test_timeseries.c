/*
 * test_timeseries.c -- time-series collections through the command layer:
 * a randomized comparison of every query's answer on a time-series
 * collection with the same query on a plain collection holding the same
 * measurements (find, aggregate, count, distinct; after deletes and
 * updates with arbitrary filters too), the bucket layout (rawData), bucket
 * limits (1000 measurements, the time span), create's and insert's bad
 * input with mongod's codes (nothing stored half-bucketed), collMod of
 * granularity (coarser only) and TTL of whole buckets.
 */
#include "tt.h"
#include "tt_embedded.h"

#include "commands/cmd_timeseries.h"
#include "commands/commands_private.h"
#include "common/mem.h"
#include "query/keygen.h"
#include "query/planner_ttl.h"
#include "timeseries/ts_compress.h"

static engine_t *eng;
static client_t *cl;

static bson_t *
run(const char *json, int *rc)
{
	bson_t *cmd = tt_json(json);
	bson_t *reply = tm_bson_array_new(1);

	*rc = engine_run_command(eng, cl, "ts", cmd, reply, NULL);
	bson_destroy(cmd);
	return reply;
}

/* run on the admin database (bulkWrite) */
static bson_t *
run_admin(const char *json, int *rc)
{
	bson_t *cmd = tt_json(json);
	bson_t *reply = tm_bson_array_new(1);

	*rc = engine_run_command(eng, cl, "admin", cmd, reply, NULL);
	bson_destroy(cmd);
	return reply;
}

static int
run_err(const char *json)
{
	int rc;
	bson_t *r = run(json, &rc);
	int code = rc == 0 ? 0 : (int)tt_get_i64(r, "code");

	bson_iter_t f;

	if (rc == 0 && tt_get(r, "writeErrors.0.code", &f))
		code = (int)tt_get_i64(r, "writeErrors.0.code");
	tt_free_reply(r);
	return code;
}

static int64_t
run_i64(const char *json, const char *path)
{
	int rc;
	bson_t *r = run(json, &rc);
	int64_t v = rc == 0 ? tt_get_i64(r, path) : -1;

	tt_free_reply(r);
	return v;
}

static char *
batch_text(const char *json)
{
	int rc;
	bson_t *r = run(json, &rc);
	char *t = tt_batch_text(r, rc, "none");

	tt_free_reply(r);
	return t;
}

static uint64_t rng = 99;

static uint64_t
next_rand(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

#define BASE_MS 1700000000000LL

/* One random measurement with _id i: meta of a few shapes (or none), a
 * time over ten hours, fields sometimes missing or of another type. */
static void
random_measurement(bson_string_t *s, int i)
{
	static const char *const metas[] = {"1", "2", "\"x\"", "{\"site\": \"a\", \"n\": 1}", "{\"site\": \"b\", \"n\": 2}", NULL};
	int mi = (int)(next_rand() % 6);
	long long t = BASE_MS + (long long)(next_rand() % 36000) * 1000;

	bson_string_append_printf(s, "{\"_id\": %d, \"t\": {\"$date\": {\"$numberLong\": \"%lld\"}}", i, t);
	if (metas[mi] != NULL)
		bson_string_append_printf(s, ", \"m\": %s", metas[mi]);
	switch (next_rand() % 7) {
	case 0: break;
	case 1: case 4: bson_string_append_printf(s, ", \"a\": %d", (int)(next_rand() % 100)); break;
	case 2: case 5: bson_string_append_printf(s, ", \"a\": %d.5", (int)(next_rand() % 100)); break;
	case 3: bson_string_append_printf(s, ", \"a\": \"s%d\"", (int)(next_rand() % 10)); break;
	default:
		/* the rarer kinds: null, an array, a long */
		if (next_rand() % 3 == 0)
			bson_string_append(s, ", \"a\": null");
		else if (next_rand() % 2 == 0)
			bson_string_append_printf(s, ", \"a\": [%d, 3]", (int)(next_rand() % 10));
		else
			bson_string_append_printf(s, ", \"a\": {\"$numberLong\": \"%d\"}", (int)(next_rand() % 100));
		break;
	}
	if (next_rand() % 2)
		bson_string_append_printf(s, ", \"b\": {\"c\": %d}", (int)(next_rand() % 5));
	/* x: the measurement-index field -- mostly numbers, mixed with the
	 * types that sort around them (null, strings, objects, dates, NaN) and
	 * no arrays, so its bucket index stays non-multikey and the bucket
	 * filter takes its index form */
	switch (next_rand() % 25) {
	case 0: break;
	case 1: bson_string_append(s, ", \"x\": null"); break;
	case 2: bson_string_append_printf(s, ", \"x\": \"s%d\"", (int)(next_rand() % 10)); break;
	case 3: bson_string_append_printf(s, ", \"x\": {\"k\": %d}", (int)(next_rand() % 10)); break;
	case 4: bson_string_append(s, ", \"x\": {\"$date\": {\"$numberLong\": \"1\"}}"); break;
	case 5: bson_string_append(s, ", \"x\": {\"$numberDouble\": \"NaN\"}"); break;
	case 6: case 7: case 8: bson_string_append_printf(s, ", \"x\": %d.25", (int)(next_rand() % 100)); break;
	default: bson_string_append_printf(s, ", \"x\": %d", (int)(next_rand() % 100)); break;
	}
	{
		/* e: subdocuments of many shapes for the subfield bounds (field by
		 * field control.min/max.e.k, a bucket per schema): numbers, nested
		 * objects, other types, arrays of objects, e itself a scalar or
		 * missing.  Its own generator: the others' sequences stay. */
		static uint64_t es = 88172645463325252ull;
		int k;
		es ^= es << 13;
		es ^= es >> 7;
		es ^= es << 17;
		k = (int)(es % 11);
		switch (k) {
		case 0: break;
		case 1: case 2: case 3: bson_string_append_printf(s, ", \"e\": {\"k\": %d}", (int)(es / 11 % 10)); break;
		case 4: bson_string_append_printf(s, ", \"e\": {\"k\": %d.5, \"j\": 1}", (int)(es / 11 % 10)); break;
		case 5: bson_string_append_printf(s, ", \"e\": {\"k\": {\"z\": %d}}", (int)(es / 11 % 4)); break;
		case 6: bson_string_append(s, ", \"e\": {\"k\": \"s\"}"); break;
		case 7: bson_string_append(s, ", \"e\": {\"k\": null}"); break;
		case 8: bson_string_append_printf(s, ", \"e\": [{\"k\": %d}, {\"k\": 1}]", (int)(es / 11 % 10)); break;
		case 9: bson_string_append_printf(s, ", \"e\": {\"k\": [%d, 2]}", (int)(es / 11 % 10)); break;
		default: bson_string_append(s, ", \"e\": 4"); break;
		}
	}
	bson_string_append(s, "}");
}

/* The same pipeline on both collections, documents normalized to one field
 * order: identical text. */
static void
same_agg(const char *stages)
{
	const char *norm = "{\"$replaceWith\": {\"_id\": \"$_id\", \"t\": \"$t\", \"m\": \"$m\", \"a\": \"$a\", \"b\": \"$b\", \"x\": \"$x\"}}";

	tt_same_batches(batch_text,
	    bson_strdup_printf("{\"aggregate\": \"w\", \"pipeline\": [%s, %s], \"cursor\": {\"batchSize\": 100000}}", stages, norm),
	    bson_strdup_printf("{\"aggregate\": \"p\", \"pipeline\": [%s, %s], \"cursor\": {\"batchSize\": 100000}}", stages, norm),
	    stages);
}

/* The same grouping pipeline on both collections (coll names %s), its
 * groups sorted by _id: identical text, and not empty. */
static void
same_groups_in(const char *ts, const char *plain, const char *stages)
{
	size_t len = tt_same_batches(batch_text,
	    bson_strdup_printf("{\"aggregate\": \"%s\", \"pipeline\": [%s, {\"$sort\": {\"_id\": 1}}], \"cursor\": {\"batchSize\": 100000}}", ts, stages),
	    bson_strdup_printf("{\"aggregate\": \"%s\", \"pipeline\": [%s, {\"$sort\": {\"_id\": 1}}], \"cursor\": {\"batchSize\": 100000}}", plain, stages),
	    stages);

	TT_ASSERT(len > 4);
}

/* Bucket-level shapes: mongod's lastpoint ($sort on meta and time + $group
 * of $first/$last by meta: one bucket per meta unpacked) and groups whose
 * unpack decodes only the fields they read.  Times only from the
 * lastpoint's $first/$last (a tie on the greatest time may pick either
 * measurement, on mongod too). */
static const char *const group_shapes[] = {
	"{\"$sort\": {\"m\": 1, \"t\": -1}}, {\"$group\": {\"_id\": \"$m\", \"t\": {\"$first\": \"$t\"}, \"m\": {\"$first\": \"$m\"}}}",
	"{\"$sort\": {\"t\": -1}}, {\"$group\": {\"_id\": \"$m\", \"t\": {\"$first\": \"$t\"}}}",
	"{\"$sort\": {\"m\": -1, \"t\": 1}}, {\"$group\": {\"_id\": \"$m\", \"t\": {\"$last\": \"$t\"}}}",
	"{\"$sort\": {\"m.site\": 1, \"t\": -1}}, {\"$group\": {\"_id\": \"$m.site\", \"t\": {\"$first\": \"$t\"}, \"n\": {\"$first\": \"$m.n\"}}}",
	"{\"$match\": {\"m\": {\"$in\": [1, 2]}}}, {\"$sort\": {\"m\": 1, \"t\": -1}}, {\"$group\": {\"_id\": \"$m\", \"t\": {\"$first\": \"$t\"}}}",
	/* not lastpoint (time ascending with $first): every bucket unpacked, same answer */
	"{\"$sort\": {\"m\": 1, \"t\": 1}}, {\"$group\": {\"_id\": \"$m\", \"t\": {\"$first\": \"$t\"}}}",
	"{\"$match\": {\"t\": {\"$gte\": {\"$date\": {\"$numberLong\": \"1700005000000\"}}}}}, {\"$group\": {\"_id\": {\"m\": \"$m\", \"h\": {\"$dateTrunc\": {\"date\": \"$t\", \"unit\": \"hour\"}}}, \"avg\": {\"$avg\": \"$a\"}, \"n\": {\"$sum\": 1}}}",
	"{\"$group\": {\"_id\": \"$b.c\", \"n\": {\"$sum\": 1}, \"mx\": {\"$max\": \"$a\"}, \"mn\": {\"$min\": \"$t\"}}}",
	"{\"$match\": {\"a\": {\"$gte\": 50}}}, {\"$group\": {\"_id\": null, \"n\": {\"$sum\": 1}}}",
	"{\"$group\": {\"_id\": \"$m\", \"n\": {\"$count\": {}}}}",
	"{\"$match\": {\"$expr\": {\"$lt\": [\"$b.c\", 3]}}}, {\"$group\": {\"_id\": \"$m\", \"s\": {\"$push\": \"$_id\"}}}, {\"$project\": {\"n\": {\"$size\": \"$s\"}}}",
	"{\"$group\": {\"_id\": \"$m\", \"d\": {\"$max\": \"$$ROOT.a\"}}}",
	/* the column path ($group right after the unpack, an event filter of
	 * times only or none): every accumulator it feeds, _id by meta, meta
	 * subfields, constants, time bins, the time itself */
	"{\"$group\": {\"_id\": \"$m\", \"s\": {\"$sum\": \"$a\"}, \"v\": {\"$avg\": \"$a\"}, \"lo\": {\"$min\": \"$a\"}, \"hi\": {\"$max\": \"$a\"}, \"n\": {\"$count\": {}}, \"sd\": {\"$stdDevPop\": \"$a\"}}}, {\"$set\": {\"sd\": {\"$round\": [\"$sd\", 6]}}}",
	"{\"$group\": {\"_id\": {\"site\": \"$m.site\", \"k\": \"const\"}, \"mx\": {\"$max\": \"$t\"}, \"mn\": {\"$min\": \"$t\"}, \"ms\": {\"$addToSet\": \"$m\"}, \"bs\": {\"$max\": \"$b\"}}}, {\"$set\": {\"ms\": {\"$sortArray\": {\"input\": \"$ms\", \"sortBy\": 1}}}}",
	"{\"$match\": {\"t\": {\"$gt\": {\"$date\": {\"$numberLong\": \"1700003000000\"}}, \"$lte\": {\"$date\": {\"$numberLong\": \"1700020000000\"}}}}}, {\"$group\": {\"_id\": {\"$dateTrunc\": {\"date\": \"$t\", \"unit\": \"minute\"}}, \"n\": {\"$sum\": 1}, \"hi\": {\"$max\": \"$a\"}, \"sd\": {\"$stdDevSamp\": \"$a\"}}}, {\"$set\": {\"sd\": {\"$round\": [\"$sd\", 6]}}}",
	"{\"$match\": {\"t\": {\"$lt\": {\"$date\": {\"$numberLong\": \"1700009000000\"}}}, \"m\": {\"$in\": [1, \"x\"]}}}, {\"$group\": {\"_id\": {\"m\": \"$m\", \"d\": {\"$dateTrunc\": {\"date\": \"$t\", \"unit\": \"hour\", \"binSize\": 2}}}, \"v\": {\"$avg\": \"$a\"}, \"ids\": {\"$push\": \"$_id\"}}}, {\"$set\": {\"ids\": {\"$sortArray\": {\"input\": \"$ids\", \"sortBy\": 1}}}}",
	"{\"$group\": {\"_id\": {\"$dateTrunc\": {\"date\": \"$t\", \"unit\": \"day\", \"timezone\": \"UTC\"}}, \"f\": {\"$sum\": 2.5}, \"a\": {\"$push\": \"$a\"}}}, {\"$set\": {\"a\": {\"$sortArray\": {\"input\": \"$a\", \"sortBy\": 1}}}}",
	"{\"$group\": {\"_id\": \"$t\", \"n\": {\"$sum\": 1}, \"x\": {\"$max\": \"$a\"}}}",
	"{\"$match\": {\"t\": {\"$gte\": {\"$date\": {\"$numberLong\": \"1700001000000\"}}, \"$lte\": {\"$date\": {\"$numberLong\": \"1700001600000\"}}}}}, {\"$group\": {\"_id\": null, \"n\": {\"$sum\": 1}}}",
	"{\"$match\": {\"t\": {\"$gte\": {\"$date\": {\"$numberLong\": \"1700006000000\"}}}, \"a\": {\"$type\": \"number\"}}}, {\"$group\": {\"_id\": \"$m\", \"s\": {\"$sum\": \"$a\"}}}",
	"{\"$match\": {\"$or\": [{\"m\": 2}, {\"t\": {\"$lt\": {\"$date\": {\"$numberLong\": \"1700004000000\"}}}}]}}, {\"$group\": {\"_id\": \"$m\", \"n\": {\"$sum\": 1}}}",
	/* mongod's $group on the buckets (control.max, meta, counts) */
	"{\"$group\": {\"_id\": \"$m\", \"mx\": {\"$max\": \"$a\"}, \"n\": {\"$count\": {}}, \"tm\": {\"$max\": \"$t\"}, \"bm\": {\"$max\": \"$b\"}}}",
	"{\"$group\": {\"_id\": null, \"n\": {\"$sum\": 1}, \"lo\": {\"$min\": \"$m\"}, \"hi\": {\"$max\": \"$m.n\"}}}",
	/* {$sum: 1.0} is a count on the buckets: an int on mongod, a double unpacked */
	"{\"$match\": {\"m.site\": {\"$exists\": true}}}, {\"$group\": {\"_id\": {\"s\": \"$m.site\", \"k\": 1}, \"mx\": {\"$max\": \"$a\"}, \"n\": {\"$sum\": 1}, \"d\": {\"$sum\": 1.0}}}, {\"$set\": {\"d\": {\"$toDouble\": \"$d\"}}}",
	/* _id expressions over the meta only; counts of 1 of every numeric type */
	"{\"$group\": {\"_id\": {\"k\": {\"$type\": \"$m\"}, \"s\": {\"$ifNull\": [\"$m.site\", \"$m\"]}}, \"n\": {\"$sum\": {\"$numberLong\": \"1\"}}, \"hi\": {\"$max\": \"$a\"}, \"mb\": {\"$max\": \"$b\"}}}, {\"$set\": {\"n\": {\"$toInt\": \"$n\"}}}",
	"{\"$group\": {\"_id\": {\"a\": [{\"$type\": \"$m\"}, \"$m.n\"]}, \"c\": {\"$count\": {}}, \"d\": {\"$sum\": {\"$numberDecimal\": \"1.0\"}}, \"lo\": {\"$min\": \"$m.site\"}, \"tm\": {\"$max\": \"$t\"}}}, {\"$set\": {\"d\": {\"$toInt\": \"$d\"}}}",
	"{\"$group\": {\"_id\": {\"$cond\": [{\"$eq\": [\"$m\", 1]}, \"one\", {\"$literal\": \"$other\"}]}, \"n\": {\"$sum\": {\"$literal\": 1}}, \"x\": {\"$max\": \"$a\"}, \"mm\": {\"$max\": \"$m\"}}}",
	/* not rewritten (a measurement in the _id; $min of a measurement; a sum of 2): unpacked */
	"{\"$group\": {\"_id\": {\"$ifNull\": [\"$m.site\", \"$b.c\"]}, \"n\": {\"$sum\": 1}, \"lo\": {\"$min\": \"$a\"}, \"s\": {\"$sum\": 2}}}",
};

static void
same_count(const char *filter)
{
	char *q1 = bson_strdup_printf("{\"count\": \"w\", \"query\": %s}", filter);
	char *q2 = bson_strdup_printf("{\"count\": \"p\", \"query\": %s}", filter);
	int64_t a = run_i64(q1, "n"), b = run_i64(q2, "n");

	if (a != b)
		TT_FAIL_("count %s: ts %lld, plain %lld", filter, (long long)a, (long long)b);
	bson_free(q1);
	bson_free(q2);
}

static const char *const filters[] = {
	"{}",
	"{\"m\": 1}",
	"{\"m\": \"x\"}",
	"{\"m.site\": \"a\"}",
	"{\"m\": {\"$exists\": false}}",
	"{\"m\": {\"$in\": [2, \"x\"]}}",
	"{\"t\": {\"$gte\": {\"$date\": {\"$numberLong\": \"1700010000000\"}}}}",
	"{\"t\": {\"$lt\": {\"$date\": {\"$numberLong\": \"1700005000000\"}}}, \"m\": 2}",
	"{\"t\": {\"$gt\": {\"$date\": {\"$numberLong\": \"1700003000000\"}}, \"$lte\": {\"$date\": {\"$numberLong\": \"1700020000000\"}}}}",
	"{\"a\": {\"$gte\": 50}}",
	"{\"a\": {\"$type\": \"string\"}}",
	"{\"a\": {\"$lt\": 20.5}}",
	"{\"a\": {\"$gt\": 90, \"$lte\": 99}}",
	"{\"a\": {\"$gte\": 10}, \"m\": {\"$in\": [1, \"x\"]}}",
	"{\"b.c\": {\"$gte\": 2}}",
	/* subfields through field-by-field bounds (e: many shapes) */
	"{\"e.k\": {\"$gt\": 6}}",
	"{\"e.k\": {\"$lte\": 1}}",
	"{\"e.k\": {\"$gte\": 2, \"$lt\": 4}}",
	"{\"e.k.z\": {\"$gte\": 2}}",
	"{\"e.0.k\": {\"$lt\": 3}}",
	"{\"e.k\": {\"$lt\": 0}}",
	"{\"b.c\": {\"$lt\": 1}, \"e.k\": {\"$gte\": 5}}",
	"{\"b.c\": 3, \"m.n\": {\"$gte\": 1}}",
	"{\"$or\": [{\"m\": 1}, {\"a\": {\"$lt\": 10}}]}",
	"{\"$and\": [{\"m.site\": {\"$ne\": \"b\"}}, {\"t\": {\"$gte\": {\"$date\": {\"$numberLong\": \"1700020000000\"}}}}]}",
	/* measurement-index field (bounded through {x: 1} / {x: -1} once built) */
	"{\"x\": {\"$gt\": 90}}",
	"{\"x\": {\"$gte\": 99}}",
	"{\"x\": {\"$lt\": 5}}",
	"{\"x\": {\"$lte\": 0}}",
	"{\"x\": {\"$gte\": 40.25, \"$lt\": 41}}",
	"{\"x\": {\"$lt\": -1}}",
	"{\"x\": {\"$gt\": 20}, \"m\": 2}",
	"{\"x\": {\"$lte\": 10}, \"t\": {\"$gte\": {\"$date\": {\"$numberLong\": \"1700010000000\"}}}}",
	"{\"x\": {\"$gt\": 95}, \"a\": {\"$lt\": 50}}",
	"{\"x\": {\"$gt\": 1e308}}",
	"{\"x\": {\"$lt\": {\"$numberDecimal\": \"-Infinity\"}}}",
};

static bool indexed;   /* w has its measurement indexes: hinted finds compare too */

/* find on w with a hint (a user key pattern or name) against the plain
 * answer: the same _ids in the same order. */
static void
same_hinted(const char *filter, const char *hint)
{
	char *q1 = bson_strdup_printf("{\"find\": \"w\", \"filter\": %s, \"hint\": %s, \"sort\": {\"_id\": 1}, "
	    "\"projection\": {\"_id\": 1}, \"batchSize\": 100000}", filter, hint);
	char *q2 = bson_strdup_printf("{\"find\": \"p\", \"filter\": %s, \"sort\": {\"_id\": 1}, "
	    "\"projection\": {\"_id\": 1}, \"batchSize\": 100000}", filter);
	char *a = batch_text(q1), *b = batch_text(q2);

	if (strcmp(a, b) != 0)
		TT_FAIL_("hinted %s %s differs:\n ts:    %.300s\n plain: %.300s", filter, hint, a, b);
	bson_free(a);
	bson_free(b);
	bson_free(q1);
	bson_free(q2);
}

static void
compare_all(void)
{
	for (size_t f = 0; indexed && f < sizeof(filters) / sizeof(filters[0]); f++)
		if (strstr(filters[f], "\"x\"") != NULL) {
			same_hinted(filters[f], "{\"x\": 1}");
			same_hinted(filters[f], "\"x_desc\"");
		}
	for (size_t f = 0; f < sizeof(filters) / sizeof(filters[0]); f++) {
		char *st = bson_strdup_printf("{\"$match\": %s}, {\"$sort\": {\"_id\": 1}}", filters[f]);
		same_agg(st);
		bson_free(st);
		same_count(filters[f]);
	}
	for (size_t g = 0; g < sizeof(group_shapes) / sizeof(group_shapes[0]); g++)
		same_groups_in("w", "p", group_shapes[g]);
	same_agg("{\"$sort\": {\"t\": -1, \"_id\": 1}}, {\"$limit\": 25}");
	same_agg("{\"$match\": {\"m\": 1}}, {\"$sort\": {\"t\": 1, \"_id\": 1}}, {\"$skip\": 3}, {\"$limit\": 7}");
	{
		/* $group on meta and hourly windows */
		const char *g = "{\"aggregate\": \"%s\", \"pipeline\": [{\"$group\": {\"_id\": {\"m\": \"$m\", \"h\": {\"$dateTrunc\": {\"date\": \"$t\", \"unit\": \"hour\"}}}, \"n\": {\"$sum\": 1}, \"s\": {\"$sum\": {\"$cond\": [{\"$isNumber\": \"$a\"}, \"$a\", 0]}}}}, {\"$sort\": {\"_id.h\": 1, \"_id.m\": 1}}], \"cursor\": {\"batchSize\": 100000}}";
		char *q1 = bson_strdup_printf(g, "w"), *q2 = bson_strdup_printf(g, "p");
		char *a = batch_text(q1), *b = batch_text(q2);
		TT_EQ_STR(a, b);
		bson_free(a);
		bson_free(b);
		bson_free(q1);
		bson_free(q2);
	}
	{
		/* find and distinct straight */
		char *a = batch_text("{\"find\": \"w\", \"filter\": {\"m\": 2}, \"sort\": {\"_id\": 1}, \"projection\": {\"_id\": 1}, \"batchSize\": 100000}");
		char *b = batch_text("{\"find\": \"p\", \"filter\": {\"m\": 2}, \"sort\": {\"_id\": 1}, \"projection\": {\"_id\": 1}, \"batchSize\": 100000}");
		TT_EQ_STR(a, b);
		bson_free(a);
		bson_free(b);
	}
	{
		int rc;
		bson_t *r1 = run("{\"distinct\": \"w\", \"key\": \"b.c\"}", &rc), *r2 = run("{\"distinct\": \"p\", \"key\": \"b.c\"}", &rc);
		bson_iter_t i1, i2;
		int n1 = 0, n2 = 0;
		if (tt_get(r1, "values", &i1) && tt_get(r2, "values", &i2)) {
			bson_iter_t a, b;
			bson_iter_recurse(&i1, &a);
			bson_iter_recurse(&i2, &b);
			while (bson_iter_next(&a))
				n1++;
			while (bson_iter_next(&b))
				n2++;
		}
		TT_EQ_INT(n1, n2);
		TT_ASSERT(n1 > 0);
		tt_free_reply(r1);
		tt_free_reply(r2);
	}
}

static void
test_random_equivalence(void)
{
	int id = 0;

	run_err("{\"drop\": \"w\"}");
	run_err("{\"drop\": \"p\"}");
	TT_EQ_INT(run_err("{\"create\": \"w\", \"timeseries\": {\"timeField\": \"t\", \"metaField\": \"m\"}}"), 0);
	TT_EQ_INT(run_err("{\"create\": \"p\"}"), 0);
	for (int batch = 0; batch < 12; batch++) {
		int n = 1 + (int)(next_rand() % 150);
		bson_string_t *a = bson_string_new("{\"insert\": \"w\", \"documents\": [");
		bson_string_t *b = bson_string_new("{\"insert\": \"p\", \"documents\": [");
		for (int i = 0; i < n; i++, id++) {
			bson_string_t *m = bson_string_new("");
			random_measurement(m, id);
			bson_string_append_printf(a, "%s%s", i ? ", " : "", m->str);
			bson_string_append_printf(b, "%s%s", i ? ", " : "", m->str);
			bson_string_free(m, true);
		}
		bson_string_append(a, "]}");
		bson_string_append(b, "]}");
		TT_EQ_INT(run_i64(a->str, "n"), n);
		TT_EQ_INT(run_i64(b->str, "n"), n);
		bson_string_free(a, true);
		bson_string_free(b, true);
	}
	compare_all();
	{
		/* after a restart (the catalog forgets its buckets) more
		 * out-of-order measurements go back into stored buckets whose span
		 * holds them (query-based reopening) and answers stay equal */
		int64_t buckets = run_i64("{\"count\": \"w\", \"rawData\": true}", "n"), added = 0;
		cmd_ts_catalog_forget_buckets();
		for (int batch = 0; batch < 6; batch++) {
			int n = 1 + (int)(next_rand() % 150);
			bson_string_t *a = bson_string_new("{\"insert\": \"w\", \"documents\": [");
			bson_string_t *b = bson_string_new("{\"insert\": \"p\", \"documents\": [");
			for (int i = 0; i < n; i++, id++) {
				bson_string_t *m = bson_string_new("");
				random_measurement(m, id);
				bson_string_append_printf(a, "%s%s", i ? ", " : "", m->str);
				bson_string_append_printf(b, "%s%s", i ? ", " : "", m->str);
				bson_string_free(m, true);
			}
			bson_string_append(a, "]}");
			bson_string_append(b, "]}");
			TT_EQ_INT(run_i64(a->str, "n"), n);
			TT_EQ_INT(run_i64(b->str, "n"), n);
			added += n;
			bson_string_free(a, true);
			bson_string_free(b, true);
			if (batch == 2)
				cmd_ts_catalog_forget_buckets();
		}
		/* many of them joined stored buckets (random_measurement mixes
		 * types, and a type change closes a bucket: fewer than before
		 * Tamga closed buckets on a schema change) */
		TT_ASSERT(run_i64("{\"count\": \"w\", \"rawData\": true}", "n") < buckets + added);
		TT_ASSERT(run_i64("{\"collStats\": \"w\"}", "timeseries.numBucketsClosedDueToSchemaChange") > 0);
		TT_ASSERT(run_i64("{\"collStats\": \"w\"}", "timeseries.numBucketsReopened") > 0);
		compare_all();
	}
	/* user indexes on the measurement field x (both directions) and on meta
	 * and time: every answer stays the plain one, and the x ranges scan the
	 * bucket index.  (Not on a: some buckets hold arrays there, which
	 * mongod's validateDocumentCommon refuses with 5930501.) */
	TT_EQ_INT(run_err("{\"createIndexes\": \"w\", \"indexes\": [{\"key\": {\"x\": 1}, \"name\": \"x_1\"}, "
	    "{\"key\": {\"x\": -1}, \"name\": \"x_desc\"}, "
	    "{\"key\": {\"m.site\": 1, \"t\": 1}, \"name\": \"site_t\"}]}"), 0);
	indexed = true;
	{
		static const char *const scans[] = {"{\"x\": {\"$lt\": 5}}", "{\"x\": {\"$gt\": 90}}"};
		for (size_t k = 0; k < 2; k++) {
			char *q = bson_strdup_printf("{\"explain\": {\"find\": \"w\", \"filter\": %s}}", scans[k]);
			int rc;
			bson_t *r = run(q, &rc);
			char *txt = bson_as_relaxed_extended_json(r, NULL);
			TT_EQ_INT(rc, 0);
			TT_ASSERT(strstr(txt, "\"IXSCAN\"") != NULL);
			TT_ASSERT(strstr(txt, "$_internalUnpackBucket") != NULL);
			bson_free(txt);
			tt_free_reply(r);
			bson_free(q);
		}
	}
	compare_all();
	/* every bucket is compressed from its first measurement (mongod 8.0+), open ones too */
	TT_ASSERT(run_i64("{\"count\": \"w\", \"rawData\": true, \"query\": {\"control.version\": {\"$in\": [2, 3]}}}", "n") ==
	    run_i64("{\"count\": \"w\", \"rawData\": true}", "n"));
	TT_EQ_INT(run_i64("{\"count\": \"w\", \"rawData\": true, \"query\": {\"control.version\": 1}}", "n"), 0);
	/* fewer buckets than measurements (out-of-order times open new ones) */
	TT_ASSERT(run_i64("{\"count\": \"w\", \"rawData\": true}", "n") < id);
	TT_EQ_INT(run_i64("{\"count\": \"w\"}", "n"), id);
	/* deletes and updates with filters on any field */
	TT_EQ_INT(run_err("{\"delete\": \"w\", \"deletes\": [{\"q\": {\"a\": {\"$lt\": 30}}, \"limit\": 0}]}"), 0);
	TT_EQ_INT(run_err("{\"delete\": \"p\", \"deletes\": [{\"q\": {\"a\": {\"$lt\": 30}}, \"limit\": 0}]}"), 0);
	TT_EQ_INT(run_err("{\"update\": \"w\", \"updates\": [{\"q\": {\"m.site\": \"a\"}, \"u\": {\"$inc\": {\"m.n\": 10}, \"$set\": {\"b\": 7}}, \"multi\": true}]}"), 0);
	TT_EQ_INT(run_err("{\"update\": \"p\", \"updates\": [{\"q\": {\"m.site\": \"a\"}, \"u\": {\"$inc\": {\"m.n\": 10}, \"$set\": {\"b\": 7}}, \"multi\": true}]}"), 0);
	TT_EQ_INT(run_err("{\"update\": \"w\", \"updates\": [{\"q\": {\"a\": {\"$type\": \"string\"}}, \"u\": {\"$set\": {\"t\": {\"$date\": {\"$numberLong\": \"1700040000000\"}}}}, \"multi\": true}]}"), 0);
	TT_EQ_INT(run_err("{\"update\": \"p\", \"updates\": [{\"q\": {\"a\": {\"$type\": \"string\"}}, \"u\": {\"$set\": {\"t\": {\"$date\": {\"$numberLong\": \"1700040000000\"}}}}, \"multi\": true}]}"), 0);
	TT_EQ_INT(run_err("{\"delete\": \"w\", \"deletes\": [{\"q\": {\"m\": 1}, \"limit\": 1}]}"), 0);
	TT_EQ_INT(run_i64("{\"count\": \"w\", \"query\": {\"m\": 1}}", "n") + 1, run_i64("{\"count\": \"p\", \"query\": {\"m\": 1}}", "n"));
	TT_EQ_INT(run_err("{\"delete\": \"p\", \"deletes\": [{\"q\": {\"m\": 1}, \"limit\": 0}]}"), 0);
	TT_EQ_INT(run_err("{\"delete\": \"w\", \"deletes\": [{\"q\": {\"m\": 1}, \"limit\": 0}]}"), 0);
	compare_all();
	{
		/* an update leaving a measurement without its time field fails
		 * whole (the measurements it took out are not lost), and more
		 * inserts after the rewrites go on comparing equal */
		int64_t before = run_i64("{\"count\": \"w\"}", "n");
		TT_EQ_INT(run_err("{\"update\": \"w\", \"updates\": [{\"q\": {\"m\": 2}, \"u\": {\"$unset\": {\"t\": 1}}, \"multi\": true}]}"), 2);
		TT_EQ_INT(run_i64("{\"count\": \"w\"}", "n"), before);
		for (int batch = 0; batch < 4; batch++) {
			int n = 1 + (int)(next_rand() % 150);
			bson_string_t *a = bson_string_new("{\"insert\": \"w\", \"documents\": [");
			bson_string_t *b = bson_string_new("{\"insert\": \"p\", \"documents\": [");
			for (int i = 0; i < n; i++, id++) {
				bson_string_t *m = bson_string_new("");
				random_measurement(m, id);
				bson_string_append_printf(a, "%s%s", i ? ", " : "", m->str);
				bson_string_append_printf(b, "%s%s", i ? ", " : "", m->str);
				bson_string_free(m, true);
			}
			bson_string_append(a, "]}");
			bson_string_append(b, "]}");
			TT_EQ_INT(run_i64(a->str, "n"), n);
			TT_EQ_INT(run_i64(b->str, "n"), n);
			bson_string_free(a, true);
			bson_string_free(b, true);
		}
		TT_EQ_INT(run_err("{\"update\": \"w\", \"updates\": [{\"q\": {\"b.c\": {\"$gte\": 3}}, \"u\": {\"$set\": {\"m\": 2}}, \"multi\": true}]}"), 0);
		TT_EQ_INT(run_err("{\"update\": \"p\", \"updates\": [{\"q\": {\"b.c\": {\"$gte\": 3}}, \"u\": {\"$set\": {\"m\": 2}}, \"multi\": true}]}"), 0);
		compare_all();
	}
	{
		/* upserts (mongod 8.0+): nothing matched inserts the upsert
		 * document as a measurement; one that matches updates; one whose
		 * document has no time field fails with 2 and stores nothing */
		const char *up = "{\"update\": \"%s\", \"updates\": [{\"q\": {\"_id\": 100000, \"m\": 9}, \"u\": {\"$set\": "
		    "{\"a\": 1, \"t\": {\"$date\": {\"$numberLong\": \"1700001000000\"}}}}, \"upsert\": true}]}";
		char *qw = bson_strdup_printf(up, "w"), *qp = bson_strdup_printf(up, "p");
		int rc;
		bson_t *r = run(qw, &rc);
		TT_EQ_INT(rc, 0);
		TT_EQ_INT(tt_get_i64(r, "n"), 1);
		TT_EQ_INT(tt_get_i64(r, "nModified"), 0);
		TT_EQ_INT(tt_get_i64(r, "upserted.0.index"), 0);
		TT_EQ_INT(tt_get_i64(r, "upserted.0._id"), 100000);
		tt_free_reply(r);
		TT_EQ_INT(run_err(qp), 0);
		compare_all();
		/* the same statement again matches the measurement now */
		r = run(qw, &rc);
		TT_EQ_INT(rc, 0);
		TT_EQ_INT(tt_get_i64(r, "n"), 1);
		{
			bson_iter_t f;
			TT_ASSERT(!tt_get(r, "upserted", &f));
		}
		tt_free_reply(r);
		TT_EQ_INT(run_err(qp), 0);
		compare_all();
		bson_free(qw);
		bson_free(qp);
		{
			int64_t before = run_i64("{\"count\": \"w\"}", "n");
			TT_EQ_INT(run_err("{\"update\": \"w\", \"updates\": [{\"q\": {\"m\": 77}, \"u\": {\"$set\": {\"a\": 1}}, \"upsert\": true}]}"), 2);
			TT_EQ_INT(run_i64("{\"count\": \"w\"}", "n"), before);
		}
	}
	{
		/* findAndModify on measurements (no sort): the same statements on
		 * both collections give the same values and leave the same data */
		static const char *const fams[] = {
			"{\"findAndModify\": \"%s\", \"query\": {\"_id\": 100000}, \"update\": {\"$set\": {\"a\": 5}}, \"new\": true}",
			"{\"findAndModify\": \"%s\", \"query\": {\"_id\": 100000}, \"update\": {\"$inc\": {\"a\": 1}}, \"fields\": {\"a\": 1}}",
			"{\"findAndModify\": \"%s\", \"query\": {\"_id\": 100001, \"t\": {\"$date\": {\"$numberLong\": \"1700002000000\"}}}, "
			    "\"update\": {\"$set\": {\"a\": 1}}, \"upsert\": true, \"new\": true}",
			"{\"findAndModify\": \"%s\", \"query\": {\"_id\": 100002, \"t\": {\"$date\": {\"$numberLong\": \"1700002000000\"}}}, "
			    "\"update\": {\"$set\": {\"a\": 1}}, \"upsert\": true}",
			"{\"findAndModify\": \"%s\", \"query\": {\"_id\": 100001}, \"remove\": true}",
			"{\"findAndModify\": \"%s\", \"query\": {\"_id\": 424242}, \"remove\": true}",
		};
		for (size_t k = 0; k < sizeof(fams) / sizeof(fams[0]); k++) {
			char *qw = bson_strdup_printf(fams[k], "w"), *qp = bson_strdup_printf(fams[k], "p");
			int rc1, rc2;
			bson_t *r1 = run(qw, &rc1), *r2 = run(qp, &rc2);
			bson_iter_t v1, v2;
			TT_EQ_INT(rc1, 0);
			TT_EQ_INT(rc2, 0);
			TT_EQ_INT(tt_get_i64(r1, "lastErrorObject.n"), tt_get_i64(r2, "lastErrorObject.n"));
			TT_ASSERT(tt_get(r1, "value", &v1) && tt_get(r2, "value", &v2));
			if (BSON_ITER_HOLDS_DOCUMENT(&v1) && BSON_ITER_HOLDS_DOCUMENT(&v2)) {
				/* field order differs (time and meta first in a measurement) */
				bson_iter_t a1, a2;
				TT_EQ_INT(tt_get(r1, "value._id", &a1), tt_get(r2, "value._id", &a2));
				TT_EQ_INT(tt_get_i64(r1, "value._id"), tt_get_i64(r2, "value._id"));
				TT_EQ_INT(tt_get_i64(r1, "value.a"), tt_get_i64(r2, "value.a"));
			} else {
				TT_EQ_INT(bson_iter_type(&v1), bson_iter_type(&v2));
			}
			tt_free_reply(r1);
			tt_free_reply(r2);
			bson_free(qw);
			bson_free(qp);
		}
		compare_all();
		/* a sort is refused as mongod 9.0 does (InvalidOptions); an empty one is no sort */
		TT_EQ_INT(run_err("{\"findAndModify\": \"w\", \"query\": {}, \"sort\": {\"t\": 1}, \"remove\": true}"), 72);
		TT_EQ_INT(run_err("{\"findAndModify\": \"w\", \"query\": {\"a\": 1}, \"sort\": {\"t\": 1}, \"update\": {\"$set\": {\"x\": 1}}}"), 72);
		TT_EQ_INT(run_err("{\"update\": \"w\", \"updates\": [{\"q\": {}, \"u\": {\"$set\": {\"x\": 1}}, \"sort\": {\"t\": 1}}]}"), 72);
		TT_EQ_INT(run_err("{\"findAndModify\": \"w\", \"query\": {\"_id\": 424242}, \"sort\": {}, \"remove\": true}"), 0);
		TT_EQ_INT(run_err("{\"findAndModify\": \"w\", \"query\": {}, \"sort\": {\"_id\": 1}, \"remove\": true, \"rawData\": true}"), 0);
		{
			/* the raw remove took a whole bucket: drop its measurements from the plain one too */
			run_err("{\"drop\": \"p\"}");
			TT_EQ_INT(run_err("{\"aggregate\": \"w\", \"pipeline\": [{\"$out\": \"p\"}], \"cursor\": {}}"), 0);
			TT_EQ_INT(run_i64("{\"count\": \"w\"}", "n"), run_i64("{\"count\": \"p\"}", "n"));
		}
		{
			/* bulkWrite (8.0's cluster-level command) on measurements: inserts
			 * routed into buckets, updates and deletes rewrite them, a missing
			 * time field fails its op alone (2); the same ops on the plain
			 * collection leave the same data */
			const char *bw = "{\"bulkWrite\": 1, \"ordered\": false, \"nsInfo\": [{\"ns\": \"ts.%s\"}], \"ops\": ["
			    "{\"insert\": 0, \"document\": {\"_id\": 200000, \"m\": 4, \"t\": {\"$date\": {\"$numberLong\": \"1700003000000\"}}, \"a\": 7}},"
			    "{\"insert\": 0, \"document\": {\"_id\": 200001, \"m\": 4}},"
			    "{\"insert\": 0, \"document\": {\"_id\": 200002, \"m\": 4, \"t\": {\"$date\": {\"$numberLong\": \"1700001000000\"}}, \"a\": 8}},"
			    "{\"update\": 0, \"filter\": {\"_id\": 200000}, \"updateMods\": {\"$inc\": {\"a\": 100}}},"
			    "{\"update\": 0, \"filter\": {\"a\": {\"$gte\": 90}}, \"updateMods\": {\"$set\": {\"big\": true}}, \"multi\": true},"
			    "{\"delete\": 0, \"filter\": {\"_id\": 200002}},"
			    "{\"delete\": 0, \"filter\": {\"a\": {\"$lt\": 3}}, \"multi\": true}]}";
			char *qw = bson_strdup_printf(bw, "w"), *qp = bson_strdup_printf(bw, "p");
			int rc1, rc2;
			bson_t *r1 = run_admin(qw, &rc1), *r2 = run_admin(qp, &rc2);
			TT_EQ_INT(rc1, 0);
			TT_EQ_INT(rc2, 0);
			TT_EQ_INT(tt_get_i64(r1, "nErrors"), 1);
			TT_EQ_INT(tt_get_i64(r1, "nInserted"), 2);
			TT_EQ_INT(tt_get_i64(r1, "cursor.firstBatch.1.code"), 2);
			TT_EQ_INT(tt_get_i64(r2, "nInserted"), 3);   /* a plain collection takes it */
			TT_EQ_INT(tt_get_i64(r1, "nMatched"), tt_get_i64(r2, "nMatched"));
			TT_EQ_INT(tt_get_i64(r1, "nModified"), tt_get_i64(r2, "nModified"));
			TT_ASSERT(tt_get_i64(r1, "nDeleted") > 1);
			TT_EQ_INT(tt_get_i64(r1, "nDeleted"), tt_get_i64(r2, "nDeleted"));
			tt_free_reply(r1);
			tt_free_reply(r2);
			bson_free(qw);
			bson_free(qp);
			TT_EQ_INT(run_err("{\"delete\": \"p\", \"deletes\": [{\"q\": {\"_id\": 200001}, \"limit\": 1}]}"), 0);
			TT_EQ_INT(run_i64("{\"count\": \"w\", \"query\": {\"big\": true}}", "n"),
			    run_i64("{\"count\": \"p\", \"query\": {\"big\": true}}", "n"));
			TT_ASSERT(run_i64("{\"count\": \"w\", \"query\": {\"big\": true}}", "n") > 0);
			compare_all();
		}
		/* a statement's collation reaches the measurements' filter and update */
		{
			const char *st[] = {
				"{\"update\": \"%s\", \"updates\": [{\"q\": {\"a\": \"S3\"}, \"u\": {\"$set\": {\"b\": 9}}, \"multi\": true, "
				    "\"collation\": {\"locale\": \"en\", \"strength\": 2}}]}",
				"{\"delete\": \"%s\", \"deletes\": [{\"q\": {\"a\": {\"$in\": [\"S4\", \"s5\"]}}, \"limit\": 0, "
				    "\"collation\": {\"locale\": \"en\", \"strength\": 2}}]}",
			};
			int64_t b9 = run_i64("{\"count\": \"p\", \"query\": {\"b\": 9}}", "n");
			for (size_t k = 0; k < 2; k++) {
				char *qw = bson_strdup_printf(st[k], "w"), *qp = bson_strdup_printf(st[k], "p");
				TT_EQ_INT(run_err(qw), 0);
				TT_EQ_INT(run_err(qp), 0);
				bson_free(qw);
				bson_free(qp);
			}
			TT_ASSERT(run_i64("{\"count\": \"p\", \"query\": {\"b\": 9}}", "n") > b9);   /* it matched something */
			compare_all();
		}
		{
			/* let and arrayFilters reach an update of measurements */
			const char *st = "{\"update\": \"%s\", \"updates\": [{\"q\": {\"$expr\": {\"$eq\": [\"$b.c\", \"$$two\"]}}, "
			    "\"u\": {\"$set\": {\"arr\": [1, 5, 9]}}, \"multi\": true}, "
			    "{\"q\": {\"arr\": {\"$exists\": true}}, \"u\": {\"$set\": {\"arr.$[big]\": 0}}, \"multi\": true, "
			    "\"arrayFilters\": [{\"big\": {\"$gt\": 4}}]}], \"let\": {\"two\": 2}}";
			char *qw = bson_strdup_printf(st, "w"), *qp = bson_strdup_printf(st, "p");
			TT_EQ_INT(run_err(qw), 0);
			TT_EQ_INT(run_err(qp), 0);
			TT_ASSERT(run_i64("{\"count\": \"w\", \"query\": {\"arr\": [1, 0, 0]}}", "n") > 0);
			TT_EQ_INT(run_i64("{\"count\": \"w\", \"query\": {\"arr\": [1, 0, 0]}}", "n"),
			    run_i64("{\"count\": \"p\", \"query\": {\"arr\": [1, 0, 0]}}", "n"));
			bson_free(qw);
			bson_free(qp);
			compare_all();
		}
	}
}

/* Insert the same measurements (JSON array body) into both collections. */
static void
insert_both(const char *ts, const char *plain, const char *docs)
{
	char *a = bson_strdup_printf("{\"insert\": \"%s\", \"documents\": [%s]}", ts, docs);
	char *b = bson_strdup_printf("{\"insert\": \"%s\", \"documents\": [%s]}", plain, docs);

	TT_EQ_INT(run_err(a), 0);
	TT_EQ_INT(run_err(b), 0);
	bson_free(a);
	bson_free(b);
}

/* The lastpoint rewrite against the plain answer where it is delicate:
 * ties on the greatest time inside a bucket and across two buckets of a
 * meta (tied measurements carry the same compared values), a missing and a
 * null meta (one group, as on a plain collection), several buckets per meta
 * (times going backward open new ones and close the old, compressed: v1
 * and v2 buckets both read); and its explain in mongod's shape. */
static void
test_lastpoint(void)
{
	static const char *const lp_shapes[] = {
		"{\"$sort\": {\"m\": 1, \"t\": -1}}, {\"$group\": {\"_id\": \"$m\", \"t\": {\"$first\": \"$t\"}, \"a\": {\"$first\": \"$a\"}, \"m\": {\"$first\": \"$m\"}}}",
		"{\"$sort\": {\"m\": -1, \"t\": -1}}, {\"$group\": {\"_id\": \"$m\", \"a\": {\"$first\": \"$a\"}}}",
		"{\"$sort\": {\"t\": 1}}, {\"$group\": {\"_id\": \"$m\", \"t\": {\"$last\": \"$t\"}, \"a\": {\"$last\": \"$a\"}}}",
		"{\"$sort\": {\"m.k\": 1, \"t\": -1}}, {\"$group\": {\"_id\": \"$m.k\", \"a\": {\"$first\": \"$a\"}}}",
		"{\"$match\": {\"m\": {\"$ne\": 2}}}, {\"$sort\": {\"m\": 1, \"t\": -1}}, {\"$group\": {\"_id\": \"$m\", \"a\": {\"$first\": \"$a\"}}}",
		"{\"$sort\": {\"m\": 1, \"t\": -1}}, {\"$group\": {\"_id\": \"$m\", \"r\": {\"$first\": \"$$ROOT.a\"}}}",
	};
	char docs[8192];
	int rc;
	bson_t *r;

	run_err("{\"drop\": \"lw\"}");
	run_err("{\"drop\": \"lp\"}");
	TT_EQ_INT(run_err("{\"create\": \"lw\", \"timeseries\": {\"timeField\": \"t\", \"metaField\": \"m\"}}"), 0);
	TT_EQ_INT(run_err("{\"create\": \"lp\"}"), 0);
	/* round 0 fills a bucket per meta up to 50 s; round 1 goes back in
	 * time (a new bucket, the first closed and compressed) and reaches the
	 * same greatest time 50 s with the same values: a tie across buckets;
	 * round 2 goes back again and stays below (a third bucket) */
	for (int round = 0; round < 3; round++) {
		static const char *const metas[] = {"\"m\": 1, ", "\"m\": 2, ", "", "\"m\": null, ", "\"m\": {\"k\": \"a\"}, ",
		    "\"m\": {\"k\": \"b\"}, "};
		size_t at = 0;
		for (int mi = 0; mi < 6; mi++)
			for (int k = 0; k < 6; k++) {
				long long sec = round == 0 ? 40 + 2 * k : round == 1 ? 5 + 9 * k : -100 + k;
				int a = sec == 50 ? 1000 + (mi == 3 ? 2 : mi) : (int)(sec * 7 + mi);   /* null and missing meta: one group */
				/* a second measurement at the greatest time, in the same bucket */
				at += (size_t)bson_snprintf(docs + at, sizeof(docs) - at,
				    "%s{\"_id\": %d, %s\"t\": {\"$date\": {\"$numberLong\": \"%lld\"}}, \"a\": %d}",
				    at ? ", " : "", round * 1000 + mi * 10 + k, metas[mi], 1700000000000LL + sec * 1000, a);
				if (sec == 50 && round == 0)
					at += (size_t)bson_snprintf(docs + at, sizeof(docs) - at,
					    ", {\"_id\": %d, %s\"t\": {\"$date\": {\"$numberLong\": \"%lld\"}}, \"a\": %d}",
					    5000 + mi, metas[mi], 1700000000000LL + sec * 1000, a);
			}
		insert_both("lw", "lp", docs);
	}
	TT_ASSERT(run_i64("{\"count\": \"lw\", \"rawData\": true, \"query\": {\"control.version\": 2}}", "n") > 0);
	TT_EQ_INT(run_i64("{\"count\": \"lw\", \"rawData\": true, \"query\": {\"control.version\": 1}}", "n"), 0);
	TT_ASSERT(run_i64("{\"count\": \"lw\", \"rawData\": true, \"query\": {\"meta\": 1}}", "n") >= 3);
	for (size_t g = 0; g < sizeof(lp_shapes) / sizeof(lp_shapes[0]); g++)
		same_groups_in("lw", "lp", lp_shapes[g]);
	/* explain: the bucket-level $sort and $group of mongod's lastpoint, then
	 * the unpack of only the fields the pipeline reads, then the user's stages */
	r = run("{\"explain\": {\"aggregate\": \"lw\", \"pipeline\": [{\"$sort\": {\"m\": 1, \"t\": -1}}, {\"$group\": "
	    "{\"_id\": \"$m\", \"a\": {\"$first\": \"$a\"}}}], \"cursor\": {}}}", &rc);
	TT_EQ_INT(rc, 0);
	{
		char *t = bson_as_relaxed_extended_json(r, NULL);
		bson_iter_t f;
		TT_ASSERT(tt_get(r, "stages", &f));
		TT_EQ_INT(tt_get_i64(r, "stages.0.$cursor.queryPlanner.winningPlan.sortPattern.meta"), 1);
		TT_ASSERT(strstr(t, "\"sortPattern\" : { \"meta\" : 1, \"control.max.t\" : -1, \"control.min.t\" : -1 }") != NULL);
		TT_EQ_STR(tt_get_str(r, "stages.1.$group._id"), "$meta");
		TT_EQ_STR(tt_get_str(r, "stages.1.$group.data.$first"), "$data");
		/* mongod's order: its sorted field set, then the metaField */
		TT_EQ_STR(tt_get_str(r, "stages.2.$_internalUnpackBucket.include.0"), "a");
		TT_EQ_STR(tt_get_str(r, "stages.2.$_internalUnpackBucket.include.1"), "t");
		TT_EQ_STR(tt_get_str(r, "stages.2.$_internalUnpackBucket.include.2"), "m");
		TT_EQ_INT(tt_get_i64(r, "stages.3.$sort.m"), 1);
		TT_EQ_INT(tt_get_i64(r, "stages.2.nReturned"), 10);   /* the ties of the 5 groups' last buckets, not 108 */
		bson_free(t);
	}
	tt_free_reply(r);
	/* a group's unpack names what it reads */
	r = run("{\"explain\": {\"aggregate\": \"lw\", \"pipeline\": [{\"$group\": {\"_id\": \"$m\", \"s\": {\"$avg\": \"$a\"}}}], \"cursor\": {}}}", &rc);
	TT_EQ_INT(rc, 0);
	TT_EQ_STR(tt_get_str(r, "stages.1.$_internalUnpackBucket.include.0"), "a");
	TT_EQ_STR(tt_get_str(r, "stages.1.$_internalUnpackBucket.include.1"), "m");
	tt_free_reply(r);
	r = run("{\"explain\": {\"aggregate\": \"lw\", \"pipeline\": [{\"$project\": {\"a\": 1}}], \"cursor\": {}}}", &rc);
	TT_EQ_INT(rc, 0);
	TT_ASSERT(tt_get(r, "stages.1.$_internalUnpackBucket.exclude", &(bson_iter_t){0}));
	tt_free_reply(r);
	/* a $match after the unpack: its meta part on the buckets, the rest the
	 * unpack's eventFilter, a time range also its wholeBucketFilter */
	r = run("{\"explain\": {\"aggregate\": \"lw\", \"pipeline\": [{\"$match\": {\"m\": 1, \"t\": {\"$gte\": "
	    "{\"$date\": {\"$numberLong\": \"1700001000000\"}}}}}, {\"$group\": {\"_id\": {\"$dateTrunc\": {\"date\": \"$t\", "
	    "\"unit\": \"hour\"}}, \"v\": {\"$avg\": \"$a\"}}}], \"cursor\": {}}}", &rc);
	TT_EQ_INT(rc, 0);
	{
		char *t = bson_as_relaxed_extended_json(r, NULL);
		TT_ASSERT(strstr(t, "\"wholeBucketFilter\" : { \"control.min.t\" : { \"$gte\" : { \"$date\" : \"2023-11-14T22:30:00Z\" } } }, "
		    "\"eventFilter\" : { \"t\" : { \"$gte\" : { \"$date\" : \"2023-11-14T22:30:00Z\" } } } }") != NULL);
		TT_EQ_STR(tt_get_str(r, "stages.1.$_internalUnpackBucket.include.0"), "a");
		TT_EQ_STR(tt_get_str(r, "stages.1.$_internalUnpackBucket.include.1"), "t");
		TT_ASSERT(tt_get(r, "stages.2.$group", &(bson_iter_t){0}));
		TT_ASSERT(!tt_get(r, "stages.3", &(bson_iter_t){0}));   /* no $match stage left after the unpack */
		bson_free(t);
	}
	tt_free_reply(r);
	/* mongod's rewriteGroupStage: no unpack, a $group on control and meta */
	r = run("{\"explain\": {\"aggregate\": \"lw\", \"pipeline\": [{\"$match\": {\"m\": 1}}, {\"$group\": {\"_id\": \"$m\", "
	    "\"hi\": {\"$max\": \"$a\"}, \"n\": {\"$count\": {}}}}], \"cursor\": {}}}", &rc);
	TT_EQ_INT(rc, 0);
	TT_EQ_STR(tt_get_str(r, "stages.1.$group._id"), "$meta");
	TT_EQ_STR(tt_get_str(r, "stages.1.$group.hi.$max"), "$control.max.a");
	TT_EQ_STR(tt_get_str(r, "stages.1.$group.n.$sum.$cond.1"), "$control.count");
	TT_ASSERT(!tt_get(r, "stages.2", &(bson_iter_t){0}));
	tt_free_reply(r);
	/* an _id expression over the meta is renamed onto "meta"; a 1 of any
	 * numeric type is the bucket count, an int (as mongod) */
	r = run("{\"explain\": {\"aggregate\": \"lw\", \"pipeline\": [{\"$group\": {\"_id\": {\"$ifNull\": [\"$m.site\", "
	    "{\"$literal\": \"$m\"}]}, \"n\": {\"$sum\": 1.0}, \"d\": {\"$sum\": {\"$numberDecimal\": \"10E-1\"}}}}], \"cursor\": {}}}", &rc);
	TT_EQ_INT(rc, 0);
	TT_EQ_STR(tt_get_str(r, "stages.1.$group._id.$ifNull.0"), "$meta.site");
	TT_EQ_STR(tt_get_str(r, "stages.1.$group._id.$ifNull.1.$literal"), "$m");
	TT_EQ_STR(tt_get_str(r, "stages.1.$group.n.$sum.$cond.1"), "$control.count");
	TT_EQ_STR(tt_get_str(r, "stages.1.$group.d.$sum.$cond.1"), "$control.count");
	TT_ASSERT(!tt_get(r, "stages.2", &(bson_iter_t){0}));
	tt_free_reply(r);
	r = run("{\"aggregate\": \"lw\", \"pipeline\": [{\"$group\": {\"_id\": null, \"n\": {\"$sum\": 1.0}}}], \"cursor\": {}}", &rc);
	TT_EQ_INT(rc, 0);
	{
		bson_iter_t n;
		TT_ASSERT(tt_get(r, "cursor.firstBatch.0.n", &n) && BSON_ITER_HOLDS_INT32(&n) && bson_iter_int32(&n) > 0);
	}
	tt_free_reply(r);
	/* refused: $$ROOT, a variable-binding operator, a measurement in the _id, a sum of 2 */
	{
		static const char *const unpacked[] = {
			"{\"_id\": \"$$ROOT.m\", \"n\": {\"$sum\": 1}}",
			"{\"_id\": {\"$let\": {\"vars\": {\"v\": \"$m\"}, \"in\": \"$$v\"}}, \"n\": {\"$sum\": 1}}",
			"{\"_id\": {\"$concat\": [\"$m.site\", \"$a\"]}, \"n\": {\"$sum\": 1}}",
			"{\"_id\": \"$m\", \"n\": {\"$sum\": 2}}",
			"{\"_id\": \"$m\", \"n\": {\"$sum\": {\"$numberDecimal\": \"1.000000000000000000000000000000001\"}}}",
		};
		for (size_t i = 0; i < sizeof(unpacked) / sizeof(unpacked[0]); i++) {
			char *q = bson_strdup_printf("{\"explain\": {\"aggregate\": \"lw\", \"pipeline\": [{\"$group\": %s}], \"cursor\": {}}}", unpacked[i]);
			r = run(q, &rc);
			TT_EQ_INT(rc, 0);
			if (!tt_get(r, "stages.1.$_internalUnpackBucket", &(bson_iter_t){0}))
				TT_FAIL_("%s was rewritten onto the buckets", unpacked[i]);
			tt_free_reply(r);
			bson_free(q);
		}
	}
	/* $min of a measurement is taken from control.min (field-by-field bounds,
	 * one type per bucket: a null sits in a bucket of nulls), as mongod's
	 * rewriteMinMaxGroupAccm; $min of the time is not (rounded down) */
	r = run("{\"explain\": {\"aggregate\": \"lw\", \"pipeline\": [{\"$group\": {\"_id\": \"$m\", "
	    "\"lo\": {\"$min\": \"$a\"}}}], \"cursor\": {}}}", &rc);
	TT_EQ_INT(rc, 0);
	TT_ASSERT(!tt_get(r, "stages.1.$_internalUnpackBucket", &(bson_iter_t){0}));
	{
		bson_iter_t lo;
		TT_ASSERT(tt_get(r, "stages.1.$group.lo.$min", &lo) && BSON_ITER_HOLDS_UTF8(&lo) &&
		    strcmp(bson_iter_utf8(&lo, NULL), "$control.min.a") == 0);
	}
	tt_free_reply(r);
	r = run("{\"explain\": {\"aggregate\": \"lw\", \"pipeline\": [{\"$group\": {\"_id\": \"$m\", "
	    "\"lo\": {\"$min\": \"$t\"}}}], \"cursor\": {}}}", &rc);
	TT_EQ_INT(rc, 0);
	TT_ASSERT(tt_get(r, "stages.1.$_internalUnpackBucket", &(bson_iter_t){0}));
	tt_free_reply(r);
	/* nor under a collation */
	r = run("{\"explain\": {\"aggregate\": \"lw\", \"pipeline\": [{\"$group\": {\"_id\": \"$m\", "
	    "\"hi\": {\"$max\": \"$a\"}}}], \"collation\": {\"locale\": \"en\"}, \"cursor\": {}}}", &rc);
	TT_EQ_INT(rc, 0);
	TT_ASSERT(tt_get(r, "stages.1.$_internalUnpackBucket", &(bson_iter_t){0}));
	tt_free_reply(r);
}

static void
test_buckets_and_limits(void)
{
	bson_string_t *s = bson_string_new("{\"insert\": \"lim\", \"documents\": [");
	int rc;
	bson_t *r;

	run_err("{\"drop\": \"lim\"}");
	TT_EQ_INT(run_err("{\"create\": \"lim\", \"timeseries\": {\"timeField\": \"t\", \"metaField\": \"m\", \"granularity\": \"seconds\"}}"), 0);
	/* 2500 measurements one second apart with one meta: count limit (1000)
	 * and span (3600 s) both close buckets */
	for (int i = 0; i < 2500; i++)
		bson_string_append_printf(s, "%s{\"t\": {\"$date\": {\"$numberLong\": \"%lld\"}}, \"m\": \"s\", \"v\": %d}", i ? ", " : "",
		    BASE_MS + (long long)i * 2000, i);
	bson_string_append(s, "]}");
	TT_EQ_INT(run_i64(s->str, "n"), 2500);
	bson_string_free(s, true);
	TT_EQ_INT(run_i64("{\"count\": \"lim\"}", "n"), 2500);
	TT_EQ_INT(run_i64("{\"count\": \"lim\", \"rawData\": true}", "n"), 3);
	r = run("{\"find\": \"lim\", \"rawData\": true, \"sort\": {\"_id\": 1}, \"limit\": 1}", &rc);
	/* the first bucket closed full: compressed, as control.version 2 with its count */
	TT_EQ_INT(tt_get_i64(r, "cursor.firstBatch.0.control.version"), 2);
	TT_EQ_INT(tt_get_i64(r, "cursor.firstBatch.0.control.count"), 1000);
	TT_EQ_STR(tt_get_str(r, "cursor.firstBatch.0.meta"), "s");
	{
		bson_iter_t col;
		TT_ASSERT(tt_get(r, "cursor.firstBatch.0.data.v", &col) && BSON_ITER_HOLDS_BINARY(&col));
		if (BSON_ITER_HOLDS_BINARY(&col)) {
			bson_subtype_t st;
			uint32_t bl;
			const uint8_t *bin;
			bson_iter_binary(&col, &st, &bl, &bin);
			TT_EQ_INT(st, BSON_SUBTYPE_COLUMN);
			TT_ASSERT(bl < 200);   /* 1,000 ints 0..999: deltas of 1 */
		}
	}
	tt_free_reply(r);
	/* the open (third) bucket is compressed too: 500 measurements appended to its columns */
	r = run("{\"find\": \"lim\", \"rawData\": true, \"sort\": {\"_id\": -1}, \"limit\": 1}", &rc);
	TT_EQ_INT(tt_get_i64(r, "cursor.firstBatch.0.control.version"), 2);
	TT_EQ_INT(tt_get_i64(r, "cursor.firstBatch.0.control.count"), 500);
	TT_ASSERT(tt_get(r, "cursor.firstBatch.0.data.v", &(bson_iter_t){0}));
	tt_free_reply(r);
	/* measurements of compressed buckets read back, with their values */
	TT_EQ_INT(run_i64("{\"count\": \"lim\", \"query\": {\"v\": {\"$gte\": 990, \"$lt\": 1010}}}", "n"), 20);
	r = run("{\"find\": \"lim\", \"filter\": {\"v\": 1500}, \"projection\": {\"_id\": 0, \"v\": 1, \"m\": 1}}", &rc);
	{
		char *t = tt_batch_text(r, rc, "none");
		TT_EQ_STR(t, "[ { \"m\" : \"s\", \"v\" : 1500 } ]");
		bson_free(t);
	}
	tt_free_reply(r);
	r = run("{\"collStats\": \"lim\"}", &rc);
	TT_EQ_INT(tt_get_i64(r, "timeseries.bucketCount"), 3);
	/* 1000 per bucket: the span (3600 s = 1800 measurements) never closes one */
	TT_EQ_INT(tt_get_i64(r, "timeseries.numBucketsClosedDueToCount"), 2);
	TT_EQ_INT(tt_get_i64(r, "timeseries.numBucketsClosedDueToTimeForward"), 0);
	tt_free_reply(r);
	/* later inserts continue the open bucket: one bucket updated */
	TT_EQ_INT(run_i64("{\"insert\": \"lim\", \"documents\": [{\"t\": {\"$date\": {\"$numberLong\": \"1700004990000\"}}, \"m\": \"s\"}]}", "n"), 1);
	TT_EQ_INT(run_i64("{\"count\": \"lim\", \"rawData\": true}", "n"), 3);
	r = run("{\"collStats\": \"lim\"}", &rc);
	TT_EQ_INT(tt_get_i64(r, "timeseries.numBucketUpdates"), 1);
	tt_free_reply(r);
	/* two hours later (time forward: the open bucket closes, a new one
	 * opens), and then back: time backward archives the new bucket and a
	 * query finds the stored bucket whose span holds the time (mongod's
	 * query-based reopening): no bucket is added */
	TT_EQ_INT(run_i64("{\"insert\": \"lim\", \"documents\": [{\"t\": {\"$date\": {\"$numberLong\": \"1700012000000\"}}, \"m\": \"s\"}]}", "n"), 1);
	TT_EQ_INT(run_i64("{\"insert\": \"lim\", \"documents\": [{\"t\": {\"$date\": {\"$numberLong\": \"1700006000000\"}}, \"m\": \"s\"}]}", "n"), 1);
	r = run("{\"collStats\": \"lim\"}", &rc);
	TT_EQ_INT(tt_get_i64(r, "timeseries.numBucketsClosedDueToTimeForward"), 1);
	TT_EQ_INT(tt_get_i64(r, "timeseries.numBucketsArchivedDueToTimeBackward"), 1);
	TT_EQ_INT(tt_get_i64(r, "timeseries.numBucketsQueried"), 1);
	TT_EQ_INT(tt_get_i64(r, "timeseries.numBucketsReopened"), 1);
	TT_EQ_INT(tt_get_i64(r, "timeseries.numBucketsOpenedDueToMetadata"), 1);
	TT_EQ_INT(tt_get_i64(r, "timeseries.bucketCount"), 4);
	/* open: the reopened one; archived: the two-hours-later one */
	TT_EQ_INT(tt_get_i64(r, "timeseries.numActiveBuckets"), 2);
	tt_free_reply(r);
	/* two hours later again: the reopened bucket rolls forward, and the
	 * archived one is found in memory and fetched (no query, no new bucket) */
	TT_EQ_INT(run_i64("{\"insert\": \"lim\", \"documents\": [{\"t\": {\"$date\": {\"$numberLong\": \"1700012005000\"}}, \"m\": \"s\"}]}", "n"), 1);
	r = run("{\"collStats\": \"lim\"}", &rc);
	TT_EQ_INT(tt_get_i64(r, "timeseries.numBucketsClosedDueToTimeForward"), 2);
	TT_EQ_INT(tt_get_i64(r, "timeseries.numBucketsFetched"), 1);
	TT_EQ_INT(tt_get_i64(r, "timeseries.numBucketsQueried"), 1);
	TT_EQ_INT(tt_get_i64(r, "timeseries.numBucketsReopened"), 2);
	TT_EQ_INT(tt_get_i64(r, "timeseries.bucketCount"), 4);
	tt_free_reply(r);
	TT_EQ_INT(run_i64("{\"count\": \"lim\"}", "n"), 2504);
	/* a delete rewrites buckets (a compressed one stays compressed) and the
	 * catalog forgets them: the next insert queries for the stored bucket
	 * of its meta whose span holds its time, compressed or not */
	TT_EQ_INT(run_err("{\"delete\": \"lim\", \"deletes\": [{\"q\": {\"v\": 0}, \"limit\": 1}]}"), 0);
	r = run("{\"find\": \"lim\", \"rawData\": true, \"sort\": {\"_id\": 1}, \"limit\": 1}", &rc);
	TT_EQ_INT(tt_get_i64(r, "cursor.firstBatch.0.control.version"), 2);
	TT_EQ_INT(tt_get_i64(r, "cursor.firstBatch.0.control.count"), 999);
	tt_free_reply(r);
	TT_EQ_INT(run_i64("{\"count\": \"lim\", \"query\": {\"v\": {\"$lt\": 1000}}}", "n"), 999);
	TT_EQ_INT(run_err("{\"update\": \"lim\", \"updates\": [{\"q\": {\"v\": 5}, \"u\": {\"$set\": {\"w\": 1}}}]}"), 0);
	TT_EQ_INT(run_i64("{\"count\": \"lim\", \"query\": {\"w\": 1, \"v\": 5}}", "n"), 1);
	TT_EQ_INT(run_i64("{\"insert\": \"lim\", \"documents\": [{\"t\": {\"$date\": {\"$numberLong\": \"1700012001000\"}}, \"m\": \"s\"}]}", "n"), 1);
	/* 5: the updated measurement was routed again (a new bucket); the insert
	 * joined the two-hours-later bucket */
	TT_EQ_INT(run_i64("{\"count\": \"lim\", \"rawData\": true}", "n"), 5);
	TT_EQ_INT(run_i64("{\"count\": \"lim\"}", "n"), 2504);
	/* drop forgets the collection's catalog rows; a new one starts at zero */
	TT_EQ_INT(run_err("{\"drop\": \"lim\"}"), 0);
	TT_EQ_INT(run_err("{\"create\": \"lim\", \"timeseries\": {\"timeField\": \"t\", \"metaField\": \"m\"}}"), 0);
	r = run("{\"collStats\": \"lim\"}", &rc);
	TT_EQ_INT(tt_get_i64(r, "timeseries.numBucketInserts"), 0);
	tt_free_reply(r);
	/* the explain shows the unpack stage and the bucket filter */
	r = run("{\"explain\": {\"aggregate\": \"lim\", \"pipeline\": [{\"$match\": {\"m\": \"s\"}}], \"cursor\": {}}}", &rc);
	TT_EQ_INT(rc, 0);
	TT_ASSERT(tt_get(r, "stages.1.$_internalUnpackBucket", &(bson_iter_t){0}));
	TT_EQ_STR(tt_get_str(r, "stages.0.$cursor.queryPlanner.winningPlan.inputStage.indexName"), "m_1_t_1");
	tt_free_reply(r);
	/* listIndexes in measurement terms, rawData in bucket terms */
	r = run("{\"listIndexes\": \"lim\"}", &rc);
	{
		char *t = tt_batch_text(r, rc, "none");
		TT_EQ_STR(t, "[ { \"v\" : 2, \"key\" : { \"m\" : 1, \"t\" : 1 }, \"name\" : \"m_1_t_1\" } ]");
		bson_free(t);
	}
	tt_free_reply(r);
}

/* Late measurements after a restart go into the stored buckets of their
 * time range: no bucket is added, the answers equal a plain collection's. */
static void
test_reopening(void)
{
	bson_string_t *a = bson_string_new(""), *late = bson_string_new("");
	char *cmd;
	int rc;
	bson_t *r;

	run_err("{\"drop\": \"ro\"}");
	run_err("{\"drop\": \"rop\"}");
	TT_EQ_INT(run_err("{\"create\": \"ro\", \"timeseries\": {\"timeField\": \"t\", \"metaField\": \"m\", \"granularity\": \"seconds\"}}"), 0);
	TT_EQ_INT(run_err("{\"create\": \"rop\"}"), 0);
	/* 10 sensors, 4 hours, one reading every 40 s: 90 per sensor and hour */
	for (int i = 0; i < 360; i++)
		for (int m = 0; m < 10; m++)
			bson_string_append_printf(a, "%s{\"t\": {\"$date\": {\"$numberLong\": \"%lld\"}}, \"m\": %d, \"v\": %d}",
			    a->len ? ", " : "", BASE_MS + (long long)i * 40000 + m * 1000, m, i);
	insert_both("ro", "rop", a->str);
	TT_EQ_INT(run_i64("{\"count\": \"ro\", \"rawData\": true}", "n"), 40);
	cmd_ts_catalog_forget_buckets();
	/* late readings of every sensor, in the gaps, newest first */
	for (int i = 359; i >= 0; i -= 7)
		for (int m = 0; m < 10; m++)
			bson_string_append_printf(late, "%s{\"t\": {\"$date\": {\"$numberLong\": \"%lld\"}}, \"m\": %d, \"v\": -%d}",
			    late->len ? ", " : "", BASE_MS + (long long)i * 40000 + m * 1000 + 500, m, i);
	insert_both("ro", "rop", late->str);
	TT_EQ_INT(run_i64("{\"count\": \"ro\", \"rawData\": true}", "n"), 40);
	TT_EQ_INT(run_i64("{\"count\": \"ro\"}", "n"), run_i64("{\"count\": \"rop\"}", "n"));
	r = run("{\"collStats\": \"ro\"}", &rc);
	TT_EQ_INT(rc, 0);
	/* one query per sensor after the restart, then (newest first) each
	 * older hour archives the current bucket and queries again */
	TT_EQ_INT(tt_get_i64(r, "timeseries.numBucketsQueried"), 40);
	TT_EQ_INT(tt_get_i64(r, "timeseries.numBucketsReopened"), 40);
	TT_EQ_INT(tt_get_i64(r, "timeseries.numBucketsArchivedDueToTimeBackward"), 30);
	/* the first ingest queried once per new sensor, finding nothing */
	TT_EQ_INT(tt_get_i64(r, "timeseries.numBucketQueriesFailed"), 10);
	TT_EQ_INT(tt_get_i64(r, "timeseries.numBucketsOpenedDueToMetadata"), 10);
	tt_free_reply(r);
	/* answers equal: readings per sensor and hour, sorted */
	same_groups_in("ro", "rop", "{\"$group\": {\"_id\": {\"m\": \"$m\", \"h\": {\"$dateTrunc\": {\"date\": \"$t\", \"unit\": \"hour\"}}}, "
	    "\"n\": {\"$sum\": 1}, \"s\": {\"$sum\": \"$v\"}, \"lo\": {\"$min\": \"$t\"}, \"hi\": {\"$max\": \"$t\"}}}");
	{
		char *t1 = batch_text("{\"find\": \"ro\", \"filter\": {\"m\": 3}, \"sort\": {\"t\": 1}, \"projection\": {\"_id\": 0, \"t\": 1, \"v\": 1}}");
		char *t2 = batch_text("{\"find\": \"rop\", \"filter\": {\"m\": 3}, \"sort\": {\"t\": 1}, \"projection\": {\"_id\": 0, \"t\": 1, \"v\": 1}}");
		TT_EQ_STR(t1, t2);
		bson_free(t1);
		bson_free(t2);
	}
	/* forward again after going back: the archived bucket is fetched */
	cmd = bson_strdup_printf("{\"insert\": \"ro\", \"documents\": [{\"t\": {\"$date\": {\"$numberLong\": \"%lld\"}}, \"m\": 0}]}",
	    BASE_MS + 359LL * 40000 + 100);
	TT_EQ_INT(run_i64(cmd, "n"), 1);
	bson_free(cmd);
	r = run("{\"collStats\": \"ro\"}", &rc);
	TT_EQ_INT(tt_get_i64(r, "timeseries.numBucketsFetched"), 1);
	TT_EQ_INT(tt_get_i64(r, "timeseries.bucketCount"), 40);
	tt_free_reply(r);
	bson_string_free(a, true);
	bson_string_free(late, true);
}

/* The archived set's bookkeeping (ts_archive.c). */
static void
test_archive_set(void)
{
	ts_archived_t *arch = NULL;
	int n = 0, cap = 0;
	bson_oid_t id;

	bson_oid_init(&id, NULL);
	TT_EQ_INT(ts_archive_find(arch, n, 5, 10), -1);
	TT_EQ_INT(ts_archive_add(&arch, &n, &cap, 4, &id, 100, NULL), 1);
	TT_EQ_INT(ts_archive_add(&arch, &n, &cap, 4, &id, 300, NULL), 1);
	TT_EQ_INT(ts_archive_add(&arch, &n, &cap, 4, &id, 200, NULL), 1);
	TT_EQ_INT(ts_archive_add(&arch, &n, &cap, 4, &id, 200, NULL), 0);   /* same start: the first stays */
	TT_EQ_INT(n, 3);
	TT_EQ_INT(arch[0].start_ms, 100);
	TT_EQ_INT(arch[1].start_ms, 200);
	TT_EQ_INT(arch[2].start_ms, 300);
	TT_EQ_INT(ts_archive_find(arch, n, 99, 50), -1);    /* before every start */
	TT_EQ_INT(ts_archive_find(arch, n, 100, 50), 0);
	TT_EQ_INT(ts_archive_find(arch, n, 149, 50), 0);
	TT_EQ_INT(ts_archive_find(arch, n, 150, 50), -1);   /* past its span, before the next */
	TT_EQ_INT(ts_archive_find(arch, n, 250, 100), 1);
	TT_EQ_INT(ts_archive_find(arch, n, 1000, 1000), 2);
	TT_EQ_INT(ts_archive_add(&arch, &n, &cap, 4, &id, 50, NULL), 1);
	TT_EQ_INT(n, 4);
	/* full: the oldest start goes, or the new one when it is the oldest */
	TT_EQ_INT(ts_archive_add(&arch, &n, &cap, 4, &id, 10, NULL), 0);
	TT_EQ_INT(ts_archive_add(&arch, &n, &cap, 4, &id, 250, NULL), 1);
	TT_EQ_INT(n, 4);
	TT_EQ_INT(arch[0].start_ms, 100);
	TT_EQ_INT(arch[1].start_ms, 200);
	TT_EQ_INT(arch[2].start_ms, 250);
	TT_EQ_INT(arch[3].start_ms, 300);
	TT_EQ_INT(ts_archive_add(&arch, &n, &cap, 4, &id, 400, NULL), 1);
	TT_EQ_INT(arch[0].start_ms, 200);
	TT_EQ_INT(arch[3].start_ms, 400);
	ts_archive_take(arch, &n, 1, NULL);
	TT_EQ_INT(n, 3);
	TT_EQ_INT(arch[1].start_ms, 300);
	ts_archive_free(&arch, &n);
	TT_ASSERT(arch == NULL && n == 0);
}

static void
test_bad_input(void)
{
	int rc;
	bson_t *r;

	run_err("{\"drop\": \"bad\"}");
	TT_EQ_INT(run_err("{\"create\": \"bad\", \"timeseries\": {\"timeField\": \"t\", \"metaField\": \"_id\"}}"), 72);
	TT_EQ_INT(run_err("{\"create\": \"bad\", \"timeseries\": {\"timeField\": \"t\", \"metaField\": \"t\"}}"), 72);
	TT_EQ_INT(run_err("{\"create\": \"bad\", \"timeseries\": {\"timeField\": \"a.b\"}}"), 72);
	TT_EQ_INT(run_err("{\"create\": \"bad\", \"timeseries\": {\"metaField\": \"m\"}}"), 40414);
	TT_EQ_INT(run_err("{\"create\": \"bad\", \"timeseries\": {\"timeField\": 1}}"), 14);
	TT_EQ_INT(run_err("{\"create\": \"bad\", \"timeseries\": {\"timeField\": \"t\", \"x\": 1}}"), 40415);
	TT_EQ_INT(run_err("{\"create\": \"bad\", \"timeseries\": {\"timeField\": \"t\", \"granularity\": \"days\"}}"), 2);
	TT_EQ_INT(run_err("{\"create\": \"bad\", \"timeseries\": {\"timeField\": \"t\", \"granularity\": \"minutes\", \"bucketMaxSpanSeconds\": 3600}}"), 72);
	TT_EQ_INT(run_err("{\"create\": \"bad\", \"timeseries\": {\"timeField\": \"t\", \"bucketMaxSpanSeconds\": 10}}"), 72);
	TT_EQ_INT(run_err("{\"create\": \"bad\", \"timeseries\": {\"timeField\": \"t\"}, \"capped\": true, \"size\": 100}"), 72);
	TT_EQ_INT(run_err("{\"create\": \"bad\", \"timeseries\": {\"timeField\": \"t\"}, \"clusteredIndex\": true}"), 72);
	TT_EQ_INT(run_err("{\"create\": \"bad\", \"timeseries\": {\"timeField\": \"t\"}, \"expireAfterSeconds\": -1}"), 72);
	TT_EQ_INT(run_err("{\"create\": \"bad\", \"timeseries\": {\"timeField\": \"t\"}, \"validator\": {}}"), 72);
	r = run("{\"listCollections\": 1, \"filter\": {\"name\": \"bad\"}}", &rc);
	TT_ASSERT(!tt_get(r, "cursor.firstBatch.0", &(bson_iter_t){0}));
	tt_free_reply(r);
	/* timeseries on an existing plain collection */
	run_err("{\"drop\": \"plain\"}");
	TT_EQ_INT(run_err("{\"create\": \"plain\"}"), 0);
	TT_EQ_INT(run_err("{\"create\": \"plain\", \"timeseries\": {\"timeField\": \"t\"}}"), 48);
	/* measurements without a date time: 2, nothing stored (ordered stops) */
	TT_EQ_INT(run_err("{\"create\": \"bad\", \"timeseries\": {\"timeField\": \"t\"}}"), 0);
	TT_EQ_INT(run_err("{\"insert\": \"bad\", \"documents\": [{\"x\": 1}]}"), 2);
	TT_EQ_INT(run_err("{\"insert\": \"bad\", \"documents\": [{\"t\": 5}]}"), 2);
	r = run("{\"insert\": \"bad\", \"documents\": [{\"t\": {\"$date\": {\"$numberLong\": \"1000\"}}}, {\"t\": \"no\"}, {\"t\": {\"$date\": {\"$numberLong\": \"2000\"}}}], \"ordered\": false}", &rc);
	TT_EQ_INT(tt_get_i64(r, "n"), 2);
	TT_EQ_INT(tt_get_i64(r, "writeErrors.0.index"), 1);
	TT_EQ_STR(tt_get_str(r, "writeErrors.0.errmsg"), "'t' must be present and contain a valid BSON UTC datetime value");
	tt_free_reply(r);
	TT_EQ_INT(run_i64("{\"count\": \"bad\"}", "n"), 2);
	/* collMod: granularity only coarser */
	TT_EQ_INT(run_err("{\"collMod\": \"bad\", \"timeseries\": {\"granularity\": \"minutes\"}}"), 0);
	TT_EQ_INT(run_err("{\"collMod\": \"bad\", \"timeseries\": {\"granularity\": \"seconds\"}}"), 72);
	r = run("{\"listCollections\": 1, \"filter\": {\"name\": \"bad\"}}", &rc);
	TT_EQ_STR(tt_get_str(r, "cursor.firstBatch.0.options.timeseries.granularity"), "minutes");
	TT_EQ_INT(tt_get_i64(r, "cursor.firstBatch.0.options.timeseries.bucketMaxSpanSeconds"), 86400);
	TT_EQ_STR(tt_get_str(r, "cursor.firstBatch.0.type"), "timeseries");
	tt_free_reply(r);
}

static void
test_ttl(void)
{
	terr_t err = TERR_INIT;
	int64_t deleted = 0;

	run_err("{\"drop\": \"ttl\"}");
	TT_EQ_INT(run_err("{\"create\": \"ttl\", \"timeseries\": {\"timeField\": \"t\", \"metaField\": \"m\"}, \"expireAfterSeconds\": 60}"), 0);
	TT_EQ_INT(run_i64("{\"insert\": \"ttl\", \"documents\": ["
	    "{\"t\": {\"$date\": {\"$numberLong\": \"1000\"}}, \"m\": 1},"
	    "{\"t\": {\"$date\": {\"$numberLong\": \"2000\"}}, \"m\": 1},"
	    "{\"t\": {\"$date\": {\"$numberLong\": \"99000000\"}}, \"m\": 2},"
	    "{\"t\": {\"$date\": {\"$numberLong\": \"99990000\"}}, \"m\": 2}]}", "n"), 4);
	/* now = 100000 s: the m=1 bucket is all expired, m=2's newest is not */
	TT_EQ_INT(ttl_pass(engine_storage(eng), 100000000, &deleted, &err), 0);
	TT_EQ_INT(deleted, 1);
	TT_EQ_INT(run_i64("{\"count\": \"ttl\"}", "n"), 2);
	TT_EQ_INT(run_err("{\"collMod\": \"ttl\", \"expireAfterSeconds\": \"off\"}"), 0);
	terr_clear(&err);
}

/* Measurement indexes where the bucket's control.min/max hide what its
 * column holds: an array between a number min and a date max (the index
 * stays non-multikey), a NaN min, a bucket of arrays (multikey: the
 * type-checking bucket filter); every count equals the plain one, with and
 * without a hint.  Tamga's routing no longer mixes types in a bucket (a
 * schema change closes it), so the mixed buckets are written raw, as v1
 * buckets stored before that change are: the bounds must stay sound for them. */
static void
test_index_hidden_values(void)
{
	static const char *const docs =
	    "{\"_id\": 1, \"t\": {\"$date\": {\"$numberLong\": \"1700000001000\"}}, \"m\": 1, \"y\": 7}, "
	    "{\"_id\": 2, \"t\": {\"$date\": {\"$numberLong\": \"1700000002000\"}}, \"m\": 1, \"y\": [1]}, "
	    "{\"_id\": 3, \"t\": {\"$date\": {\"$numberLong\": \"1700000003000\"}}, \"m\": 1, \"y\": {\"$date\": {\"$numberLong\": \"5\"}}}, "
	    "{\"_id\": 4, \"t\": {\"$date\": {\"$numberLong\": \"1700000004000\"}}, \"m\": 2, \"y\": {\"$numberDouble\": \"NaN\"}}, "
	    "{\"_id\": 5, \"t\": {\"$date\": {\"$numberLong\": \"1700000005000\"}}, \"m\": 2, \"y\": 2}, "
	    "{\"_id\": 6, \"t\": {\"$date\": {\"$numberLong\": \"1700000006000\"}}, \"m\": 3, \"y\": \"s\"}, "
	    "{\"_id\": 7, \"t\": {\"$date\": {\"$numberLong\": \"1700000007000\"}}, \"m\": 3, \"y\": 9}";
	static const char *const qs[] = {
	    "{\"y\": {\"$lt\": 5}}", "{\"y\": {\"$lte\": 1}}", "{\"y\": {\"$gt\": 5}}", "{\"y\": {\"$gte\": 9}}",
	    "{\"y\": {\"$gt\": 0, \"$lt\": 3}}",
	};

	run_err("{\"drop\": \"hx\"}");
	run_err("{\"drop\": \"hp\"}");
	TT_EQ_INT(run_err("{\"create\": \"hx\", \"timeseries\": {\"timeField\": \"t\", \"metaField\": \"m\"}}"), 0);
	/* mixed buckets written raw need mongod's flag (else 408) */
	TT_EQ_INT(run_err("{\"collMod\": \"hx\", \"timeseriesBucketsMayHaveMixedSchemaData\": true}"), 0);
	TT_EQ_INT(run_err("{\"createIndexes\": \"hx\", \"indexes\": [{\"key\": {\"y\": 1}, \"name\": \"y_1\"}]}"), 0);
	{
		char *a = bson_strdup_printf("{\"insert\": \"hx\", \"rawData\": true, \"documents\": [%s]}", "{\"_id\": {\"$oid\": \"6553f0ec0000000000000001\"}, \"control\": {\"version\": 1, \"min\": {\"_id\": 1, \"t\": {\"$date\": {\"$numberLong\": \"1699999980000\"}}, \"y\": 7}, \"max\": {\"_id\": 3, \"t\": {\"$date\": {\"$numberLong\": \"1700000003000\"}}, \"y\": {\"$date\": {\"$numberLong\": \"5\"}}}}, \"meta\": 1, \"data\": {\"_id\": {\"0\": 1, \"1\": 2, \"2\": 3}, \"t\": {\"0\": {\"$date\": {\"$numberLong\": \"1700000001000\"}}, \"1\": {\"$date\": {\"$numberLong\": \"1700000002000\"}}, \"2\": {\"$date\": {\"$numberLong\": \"1700000003000\"}}}, \"y\": {\"0\": 7, \"1\": [1], \"2\": {\"$date\": {\"$numberLong\": \"5\"}}}}}, {\"_id\": {\"$oid\": \"6553f0ec0000000000000002\"}, \"control\": {\"version\": 1, \"min\": {\"_id\": 4, \"t\": {\"$date\": {\"$numberLong\": \"1699999980000\"}}, \"y\": {\"$numberDouble\": \"NaN\"}}, \"max\": {\"_id\": 5, \"t\": {\"$date\": {\"$numberLong\": \"1700000005000\"}}, \"y\": 2}}, \"meta\": 2, \"data\": {\"_id\": {\"0\": 4, \"1\": 5}, \"t\": {\"0\": {\"$date\": {\"$numberLong\": \"1700000004000\"}}, \"1\": {\"$date\": {\"$numberLong\": \"1700000005000\"}}}, \"y\": {\"0\": {\"$numberDouble\": \"NaN\"}, \"1\": 2}}}, {\"_id\": {\"$oid\": \"6553f0ec0000000000000003\"}, \"control\": {\"version\": 1, \"min\": {\"_id\": 6, \"t\": {\"$date\": {\"$numberLong\": \"1699999980000\"}}, \"y\": 9}, \"max\": {\"_id\": 7, \"t\": {\"$date\": {\"$numberLong\": \"1700000007000\"}}, \"y\": \"s\"}}, \"meta\": 3, \"data\": {\"_id\": {\"0\": 6, \"1\": 7}, \"t\": {\"0\": {\"$date\": {\"$numberLong\": \"1700000006000\"}}, \"1\": {\"$date\": {\"$numberLong\": \"1700000007000\"}}}, \"y\": {\"0\": \"s\", \"1\": 9}}}");
		char *b = bson_strdup_printf("{\"insert\": \"hp\", \"documents\": [%s]}", docs);
		TT_EQ_INT(run_err(a), 0);
		TT_EQ_INT(run_err(b), 0);
		bson_free(a);
		bson_free(b);
	}
	for (int round = 0; round < 2; round++) {
		for (size_t k = 0; k < sizeof(qs) / sizeof(qs[0]); k++) {
			char *a = bson_strdup_printf("{\"count\": \"hx\", \"query\": %s}", qs[k]);
			char *h = bson_strdup_printf("{\"count\": \"hx\", \"query\": %s, \"hint\": {\"y\": 1}}", qs[k]);
			char *b = bson_strdup_printf("{\"count\": \"hp\", \"query\": %s}", qs[k]);
			int64_t want = run_i64(b, "n");
			TT_ASSERT(want > 0);
			if (run_i64(a, "n") != want || run_i64(h, "n") != want)
				TT_FAIL_("%s: ts %lld, hinted %lld, plain %lld", qs[k], (long long)run_i64(a, "n"),
				    (long long)run_i64(h, "n"), (long long)want);
			bson_free(a);
			bson_free(h);
			bson_free(b);
		}
		/* then a bucket whose control.max is an array: mongod refuses it
		 * (5930501, validateDocumentCommon) unless its min is an int32,
		 * whose BSON type number (16) passes Array's in mongod's rule; that
		 * one goes in and the index becomes multikey: the type-checking
		 * form again */
		if (round == 0) {
			static const char *const bucket4 = "{\"insert\": \"hx\", \"rawData\": true, \"documents\": [{\"_id\": {\"$oid\": \"6553f0ec0000000000000004\"}, \"control\": {\"version\": 1, \"min\": {\"_id\": 8, \"t\": {\"$date\": {\"$numberLong\": \"1699999980000\"}}, \"y\": %s}, \"max\": {\"_id\": 9, \"t\": {\"$date\": {\"$numberLong\": \"1700000009000\"}}, \"y\": [0, 8]}}, \"meta\": 4, \"data\": {\"_id\": {\"0\": 8, \"1\": 9}, \"t\": {\"0\": {\"$date\": {\"$numberLong\": \"1700000008000\"}}, \"1\": {\"$date\": {\"$numberLong\": \"1700000009000\"}}}, \"y\": {\"0\": [0, 8], \"1\": %s}}}]}";
			char *a = bson_strdup_printf(bucket4, "\"z\"", "\"z\"");
			TT_EQ_INT(run_err(a), 5930501);
			bson_free(a);
			a = bson_strdup_printf(bucket4, "3", "3");
			TT_EQ_INT(run_err(a), 0);
			bson_free(a);
			TT_EQ_INT(run_err("{\"insert\": \"hp\", \"documents\": ["
		    "{\"_id\": 8, \"t\": {\"$date\": {\"$numberLong\": \"1700000008000\"}}, \"m\": 4, \"y\": [0, 8]}, "
		    "{\"_id\": 9, \"t\": {\"$date\": {\"$numberLong\": \"1700000009000\"}}, \"m\": 4, \"y\": 3}]}"), 0);
		}
	}
}


/* Whether the explain of pipeline (JSON text) on coll names needle. */
static bool
explain_has(const char *coll, const char *pipeline, const char *needle)
{
	char *q = bson_strdup_printf("{\"explain\": {\"aggregate\": \"%s\", \"pipeline\": %s, \"cursor\": {}}, "
	                             "\"verbosity\": \"queryPlanner\"}", coll, pipeline);
	int rc;
	bson_t *r = run(q, &rc);
	char *j = bson_as_relaxed_extended_json(r, NULL);
	bool has = rc == 0 && strstr(j, needle) != NULL;

	bson_free(j);
	tt_free_reply(r);
	bson_free(q);
	return has;
}

/*
 * mongod's fixed-bucket $group rewrite (handleDateTruncRewrite): in a
 * collection whose bucketRoundingSeconds equals bucketMaxSpanSeconds a
 * $group by $dateTrunc of the time (alone, or a field of the _id) whose
 * accumulators the bucket-level $group takes runs on the buckets, grouped
 * by $dateTrunc of control.min.<time>.  Random measurements (times over
 * three days, milliseconds, a few before 1970) in collections of several
 * spans, random units/binSizes/timezones: every answer equals the plain
 * collection's, and explain shows the rewrite exactly when the bins align
 * with the buckets (the rule restated here on its own).
 */
static void
test_fixed_buckets_group(void)
{
	static const int64_t spans[] = {60, 1800, 3600, 86400, 18000, 7};
	static const struct {
		const char *name;
		int64_t s;   /* 0: not of fixed length */
	} units[] = {{"second", 1}, {"minute", 60}, {"hour", 3600}, {"day", 86400}, {"week", 604800}, {"month", 0},
	             {"millisecond", 0}};
	static const int bins[] = {0, 1, 2, 5, 7, 60};
	static const struct {
		const char *tz;   /* NULL: none */
		bool fixed;
		int64_t off;
	} tzs[] = {{NULL, true, 0}, {"UTC", true, 0}, {"+01:00", true, 3600}, {"+05:30", true, 19800},
	           {"-0200", true, -7200}, {"Europe/Berlin", false, 0}};
	int rewritten = 0, unpacked = 0;

	run_err("{\"drop\": \"fp\"}");
	TT_EQ_INT(run_err("{\"create\": \"fp\"}"), 0);
	for (size_t si = 0; si < sizeof(spans) / sizeof(spans[0]); si++) {
		char name[32], *q;
		snprintf(name, sizeof(name), "fx%lld", (long long)spans[si]);
		q = bson_strdup_printf("{\"drop\": \"%s\"}", name);
		run_err(q);
		bson_free(q);
		q = bson_strdup_printf("{\"create\": \"%s\", \"timeseries\": {\"timeField\": \"t\", \"metaField\": \"m\", "
		                       "\"bucketMaxSpanSeconds\": %lld, \"bucketRoundingSeconds\": %lld}}", name,
		                       (long long)spans[si], (long long)spans[si]);
		TT_EQ_INT(run_err(q), 0);
		bson_free(q);
	}
	for (int batch = 0, id = 0; batch < 4; batch++) {
		bson_string_t *docs = bson_string_new("");
		for (int i = 0; i < 250; i++, id++) {
			long long t = BASE_MS + (long long)(next_rand() % (3 * 86400)) * 1000 + (long long)(next_rand() % 1000);
			if (next_rand() % 40 == 0)
				t = -86400000LL * (long long)(1 + next_rand() % 400) + (long long)(next_rand() % 86400000);
			bson_string_append_printf(docs, "%s{\"_id\": %d, \"t\": {\"$date\": {\"$numberLong\": \"%lld\"}}, "
			                          "\"m\": %d, \"x\": %d}", i ? ", " : "", id, t, (int)(next_rand() % 3),
			                          (int)(next_rand() % 1000));
		}
		for (size_t si = 0; si <= sizeof(spans) / sizeof(spans[0]); si++) {
			char name[32], *q;
			if (si == sizeof(spans) / sizeof(spans[0]))
				snprintf(name, sizeof(name), "fp");
			else
				snprintf(name, sizeof(name), "fx%lld", (long long)spans[si]);
			q = bson_strdup_printf("{\"insert\": \"%s\", \"documents\": [%s]}", name, docs->str);
			TT_EQ_INT(run_i64(q, "n"), 250);
			bson_free(q);
		}
		bson_string_free(docs, true);
	}
	for (int k = 0; k < 160; k++) {
		size_t si = next_rand() % (sizeof(spans) / sizeof(spans[0]));
		size_t ui = next_rand() % (sizeof(units) / sizeof(units[0]));
		size_t bi = next_rand() % (sizeof(bins) / sizeof(bins[0]));
		size_t zi = next_rand() % (sizeof(tzs) / sizeof(tzs[0]));
		bool obj = next_rand() % 2 == 0;
		int64_t span = spans[si], unit = units[ui].s, bin = bins[bi] ? bins[bi] : 1;
		char name[32], tr[256], stages[768], pipe[800];
		bool expect;

		snprintf(name, sizeof(name), "fx%lld", (long long)span);
		snprintf(tr, sizeof(tr), "{\"$dateTrunc\": {\"date\": \"$t\", \"unit\": \"%s\"%s%.*d%s%s%s}}", units[ui].name,
		         bins[bi] ? ", \"binSize\": " : "", bins[bi] ? 1 : 0, bins[bi], tzs[zi].tz ? ", \"timezone\": \"" : "",
		         tzs[zi].tz ? tzs[zi].tz : "", tzs[zi].tz ? "\"" : "");
		snprintf(stages, sizeof(stages), "{\"$group\": {\"_id\": %s%s%s, \"n\": {\"$sum\": 1}, \"c\": {\"$count\": {}}, "
		         "\"hi\": {\"$max\": \"$x\"}, \"lo\": {\"$min\": \"$x\"}, \"mm\": {\"$max\": \"$m\"}}}",
		         obj ? "{\"m\": \"$m\", \"d\": " : "", tr, obj ? "}" : "");
		same_groups_in(name, "fp", stages);
		snprintf(pipe, sizeof(pipe), "[%s]", stages);
		/* the rule: mongod's conditions, and bins aligned with the buckets */
		expect = unit > 0 && span <= 86400 && (unit * bin) % span == 0 && 946684800 % span == 0 &&
		    (unit < 86400 || 86400 % span == 0) &&
		    (tzs[zi].tz == NULL || (tzs[zi].fixed && span <= 3600 && tzs[zi].off % span == 0));
		if (explain_has(name, pipe, "$control.min.t") != expect)
			TT_FAIL_("%s on span %lld: rewrite expected %d", stages, (long long)span, (int)expect);
		TT_ASSERT(explain_has(name, pipe, "$_internalUnpackBucket") == !expect);
		if (expect)
			rewritten++;
		else
			unpacked++;
	}
	TT_ASSERT(rewritten > 10 && unpacked > 10);
	/* spans whose buckets do not start on the bins' reference point
	 * (2000-01-01 is not a multiple of 5 hours, nor of 7 s): mongod's rule
	 * takes them, the per-bucket answer would be wrong; unpacked */
	same_groups_in("fx18000", "fp", "{\"$group\": {\"_id\": {\"$dateTrunc\": {\"date\": \"$t\", \"unit\": \"hour\", "
	                                "\"binSize\": 5}}, \"n\": {\"$sum\": 1}, \"hi\": {\"$max\": \"$x\"}}}");
	same_groups_in("fx7", "fp", "{\"$group\": {\"_id\": {\"$dateTrunc\": {\"date\": \"$t\", \"unit\": \"second\", "
	                            "\"binSize\": 7}}, \"n\": {\"$sum\": 1}}}");
	same_groups_in("fx3600", "fp", "{\"$group\": {\"_id\": {\"$dateTrunc\": {\"date\": \"$t\", \"unit\": \"hour\", "
	                               "\"binSize\": 5}}, \"n\": {\"$sum\": 1}, \"lo\": {\"$min\": \"$x\"}}}");
	/* not fixed (granularity): unpacked; an accumulator the bucket $group
	 * does not take: unpacked; a $dateTrunc nested in an expression: as
	 * mongod, unpacked */
	run_err("{\"drop\": \"fg\"}");
	TT_EQ_INT(run_err("{\"create\": \"fg\", \"timeseries\": {\"timeField\": \"t\", \"granularity\": \"hours\"}}"), 0);
	TT_ASSERT(!explain_has("fg", "[{\"$group\": {\"_id\": {\"$dateTrunc\": {\"date\": \"$t\", \"unit\": \"day\"}}, "
	                             "\"n\": {\"$sum\": 1}}}]", "$control.min.t"));
	TT_ASSERT(!explain_has("fx3600", "[{\"$group\": {\"_id\": {\"$dateTrunc\": {\"date\": \"$t\", \"unit\": \"hour\"}}, "
	                                 "\"s\": {\"$sum\": \"$x\"}}}]", "$control.min.t"));
	TT_ASSERT(!explain_has("fx3600", "[{\"$group\": {\"_id\": {\"$toString\": {\"$dateTrunc\": {\"date\": \"$t\", "
	                                 "\"unit\": \"hour\"}}}, \"n\": {\"$sum\": 1}}}]", "$control.min.t"));
	same_groups_in("fx3600", "fp", "{\"$group\": {\"_id\": {\"$toString\": {\"$dateTrunc\": {\"date\": \"$t\", "
	                               "\"unit\": \"hour\"}}}, \"n\": {\"$sum\": 1}, \"s\": {\"$sum\": \"$x\"}}}");
	/* startOfWeek a constant: rewritten; read from a measurement: unpacked */
	TT_ASSERT(explain_has("fx3600", "[{\"$group\": {\"_id\": {\"$dateTrunc\": {\"date\": \"$t\", \"unit\": \"week\", "
	                                "\"startOfWeek\": \"monday\"}}, \"n\": {\"$sum\": 1}}}]", "$control.min.t"));
	TT_ASSERT(!explain_has("fx3600", "[{\"$group\": {\"_id\": {\"$dateTrunc\": {\"date\": \"$t\", \"unit\": \"week\", "
	                                 "\"startOfWeek\": \"$w\"}}, \"n\": {\"$sum\": 1}}}]", "$control.min.t"));
	same_groups_in("fx3600", "fp", "{\"$group\": {\"_id\": {\"$dateTrunc\": {\"date\": \"$t\", \"unit\": \"week\", "
	                               "\"startOfWeek\": \"Mon\"}}, \"n\": {\"$sum\": 1}, \"hi\": {\"$max\": \"$x\"}}}");
}

int
main(void)
{
	char *dir = tt_tmpdir("timeseries");
	engine_options_t o;
	terr_t err = TERR_INIT;

	memset(&o, 0, sizeof(o));
	o.storage.create = true;
	o.storage.in_memory = true;
	if (engine_open(dir, &o, &eng, &err) != 0) {
		fprintf(stderr, "engine_open: %s\n", err.msg);
		return 1;
	}
	query_keygen_register(engine_storage(eng));
	cl = client_new(eng, NULL);
	TT_RUN(test_random_equivalence);
	TT_RUN(test_lastpoint);
	TT_RUN(test_buckets_and_limits);
	TT_RUN(test_reopening);
	TT_RUN(test_archive_set);
	TT_RUN(test_bad_input);
	TT_RUN(test_ttl);
	TT_RUN(test_index_hidden_values);
	TT_RUN(test_fixed_buckets_group);
	client_free(cl);
	engine_close(eng);
	tt_rmdir(dir);
	bson_free(dir);
	return tt_finish();
}
