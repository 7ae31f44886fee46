/*
 * test_ts_partial.c -- partial indexes of time-series collections through
 * the command layer: which queries use which partial index (explain's
 * winning plan naming it, as mongod's planner decides with its
 * bucket-level subset rules: jstests/core/timeseries/ddl/
 * timeseries_index_partial.js and the cases around them), a randomized
 * comparison of every answer with a plain collection holding the same
 * measurements while partial indexes on measurement, time and meta fields
 * exist (queries that may and may not use them), and mongod's refusal of a
 * measurement index build on a collection whose buckets mix types.
 */
#include "tt.h"
#include "tt_embedded.h"

#include "commands/commands_private.h"
#include "common/mem.h"
#include "query/keygen.h"
#include "timeseries/ts_index.h"

static engine_t *eng;
static client_t *cl;

static bson_t *
run(const char *json, int *rc)
{
	bson_t *cmd = tt_json(json);
	bson_t *reply = tm_bson_array_new(1);

	*rc = engine_run_command(eng, cl, "tsp", cmd, reply, NULL);
	bson_destroy(cmd);
	return reply;
}

/* json with single quotes for double ones */
static bson_t *
run_sq(const char *sq, int *rc)
{
	char *json = bson_strdup(sq);
	bson_t *r;

	for (char *p = json; *p != '\0'; p++)
		if (*p == '\'')
			*p = '"';
	r = run(json, rc);
	bson_free(json);
	return r;
}

static int
run_err(const char *sq)
{
	int rc;
	bson_t *r = run_sq(sq, &rc);
	int code = rc == 0 ? 0 : (int)tt_get_i64(r, "code");

	tt_free_reply(r);
	return code;
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

/* The index names explain's winning plan (rejected: and its rejected
 * plans) scans for find(filter) on coll ("" for none), comma separated in
 * plan order, each once. */
static char *
plan_indexes(const char *coll, const char *filter, bool rejected)
{
	char *q = bson_strdup_printf("{\"explain\": {\"find\": \"%s\", \"filter\": %s}}", coll, filter);
	int rc;
	bson_t *r = run(q, &rc);
	char *txt = bson_as_relaxed_extended_json(r, NULL), *w, *end;
	bson_string_t *out = bson_string_new("");

	w = strstr(txt, "\"winningPlan\"");
	end = w != NULL ? strstr(w, rejected ? "\"executionStats\"" : "\"rejectedPlans\"") : NULL;
	if (rc != 0 || w == NULL) {
		bson_string_append_printf(out, "error: %.300s", txt);
	} else {
		if (end != NULL)
			*end = '\0';
		for (char *p = w; (p = strstr(p, "\"indexName\" : \"")) != NULL;) {
			char *e;
			p += strlen("\"indexName\" : \"");
			e = strchr(p, '"');
			if (e == NULL)
				break;
			char *name = bson_strndup(p, (size_t)(e - p)), *have = bson_strdup_printf(",%s,", out->str),
			     *item = bson_strdup_printf(",%s,", name);
			if (strstr(have, item) == NULL)   /* each index once (an OR of two scans of one index) */
				bson_string_append_printf(out, "%s%s", out->len ? "," : "", name);
			bson_free(name);
			bson_free(have);
			bson_free(item);
			p = e;
		}
	}
	bson_free(txt);
	tt_free_reply(r);
	bson_free(q);
	return bson_string_free(out, false);
}

static char *
winning_indexes(const char *coll, const char *filter)
{
	return plan_indexes(coll, filter, false);
}

/* find(filter) on ts and on plain: the same _ids */
static void
same_answer(const char *ts, const char *plain, const char *filter)
{
	tt_same_batches(batch_text,
	    bson_strdup_printf("{\"find\": \"%s\", \"filter\": %s, \"sort\": {\"_id\": 1}, "
	        "\"projection\": {\"_id\": 1}, \"batchSize\": 100000}", ts, filter),
	    bson_strdup_printf("{\"find\": \"%s\", \"filter\": %s, \"sort\": {\"_id\": 1}, "
	        "\"projection\": {\"_id\": 1}, \"batchSize\": 100000}", plain, filter),
	    filter);
}

static char *
sq(const char *s)
{
	char *j = bson_strdup(s);

	for (char *p = j; *p != '\0'; p++)
		if (*p == '\'')
			*p = '"';
	return j;
}

#define T0 "{'$date': '2000-01-01T00:00:00Z'}"
#define T1 "{'$date': '2000-01-01T00:00:01Z'}"
#define T2 "{'$date': '2000-01-01T00:00:02Z'}"

/* One partial filter and the queries that do (use 1) and do not (use 0)
 * take its {a: 1} index on mongod.  use 2: the index may be used, but a
 * time predicate also bounds the buckets' clustered _id, and that scan
 * may win the trial (mongod's test accepts the index among the rejected
 * plans too): the index is among the plans explain lists. */
static const struct {
	const char *partial;
	const char *query;
	int use;
} cases[] = {
	/* measurement comparisons: $_internalExpr bounds, mongod's strict rule
	 * for another operator on the same constant */
	{"{'b': {'$lt': 12}}", "{'a': {'$lt': 999}, 'b': {'$lt': 12}}", true},
	{"{'b': {'$lt': 12}}", "{'a': {'$lt': 999}, 'b': {'$lt': 11}}", true},
	{"{'b': {'$lt': 12}}", "{'a': {'$lt': 999}, 'b': {'$lte': 11}}", true},
	{"{'b': {'$lt': 12}}", "{'a': {'$lt': 999}, 'b': 5}", true},
	{"{'b': {'$lt': 12}}", "{'a': {'$lt': 999}, 'b': {'$in': [1, 5]}}", true},
	{"{'b': {'$lt': 12}}", "{'a': {'$lt': 999}, '$or': [{'b': 1}, {'b': {'$lt': 3}}]}", true},
	{"{'b': {'$lt': 12}}", "{'a': {'$lt': 999}, 'b': {'$lt': 13}}", false},
	{"{'b': {'$lt': 12}}", "{'a': {'$lt': 999}, 'b': {'$lte': 12}}", false},
	{"{'b': {'$lt': 12}}", "{'a': {'$lt': 999}, 'b': {'$in': [1, 15]}}", false},
	{"{'b': {'$lt': 12}}", "{'a': {'$lt': 999}}", false},
	{"{'b': {'$lt': 12}}", "{'a': {'$lt': 999}, '$or': [{'b': 1}, {'c': 1}]}", false},
	{"{'b': {'$lt': 12}}", "{'a': {'$lt': 999}, 'b': {'$ne': 20}}", false},
	{"{'b': {'$lte': 12}}", "{'a': {'$lt': 999}, 'b': {'$lte': 12}}", true},
	{"{'b': {'$lte': 12}}", "{'a': {'$lt': 999}, 'b': {'$lte': 11}}", true},
	{"{'b': {'$lte': 12}}", "{'a': {'$lt': 999}, 'b': {'$lt': 12}}", false},
	{"{'b': {'$lte': 12}}", "{'a': {'$lt': 999}, 'b': 12}", true},
	{"{'b': {'$gt': 12}}", "{'a': {'$lt': 999}, 'b': {'$gt': 12}}", true},
	{"{'b': {'$gt': 12}}", "{'a': {'$lt': 999}, 'b': {'$gt': 13}}", true},
	{"{'b': {'$gt': 12}}", "{'a': {'$lt': 999}, 'b': {'$gte': 12}}", false},
	{"{'b': {'$gte': 12}}", "{'a': {'$lt': 999}, 'b': {'$gte': 12}}", true},
	{"{'b': {'$gte': 12}}", "{'a': {'$lt': 999}, 'b': {'$gte': 13}}", true},
	{"{'b': {'$gte': 12}}", "{'a': {'$lt': 999}, 'b': {'$gt': 12}}", false},
	{"{'b': {'$exists': true}}", "{'a': {'$lt': 999}, 'b': {'$exists': true}}", true},
	{"{'b': {'$exists': true}}", "{'a': {'$lt': 999}, 'b': {'$lt': 5}}", false},
	{"{'b': {'$in': [0, 4]}}", "{'a': {'$lt': 999}, 'b': 4}", true},
	/* mongod tries the index's $or before the query's conjunction: the
	 * query's own $in, one conjunct among others, implies none of the $or's
	 * branches alone */
	{"{'b': {'$in': [0, 4]}}", "{'a': {'$lt': 999}, 'b': {'$in': [0, 4]}}", false},
	{"{'b': {'$in': [0, 4]}}", "{'a': {'$lt': 999}, 'b': 8}", false},
	/* the time field: bounds on control.min/max and the span's slack */
	{"{'time': {'$lt': " T1 "}}", "{'a': {'$lt': 999}, 'time': {'$lt': " T1 "}}", 2},
	{"{'time': {'$lt': " T1 "}}", "{'a': {'$lt': 999}, 'time': {'$lt': " T0 "}}", 2},
	{"{'time': {'$lt': " T1 "}}", "{'a': {'$lt': 999}, 'time': {'$lte': " T1 "}}", false},
	{"{'time': {'$lte': " T1 "}}", "{'a': {'$lt': 999}, 'time': {'$lte': " T1 "}}", 2},
	{"{'time': {'$lte': " T1 "}}", "{'a': {'$lt': 999}, 'time': {'$lte': " T0 "}}", 2},
	{"{'time': {'$gt': " T1 "}}", "{'a': {'$lt': 999}, 'time': {'$gt': " T1 "}}", 2},
	{"{'time': {'$gt': " T1 "}}", "{'a': {'$lt': 999}, 'time': {'$gt': " T2 "}}", 2},
	{"{'time': {'$gt': " T1 "}}", "{'a': {'$lt': 999}, 'time': {'$gt': " T0 "}}", false},
	{"{'time': {'$gte': " T1 "}}", "{'a': {'$lt': 999}, 'time': {'$gte': " T1 "}}", 2},
	{"{'time': {'$gte': " T1 "}}", "{'a': {'$lt': 999}, 'time': {'$gte': " T2 "}}", 2},
	{"{'time': {'$gte': " T1 "}}", "{'a': {'$lt': 999}, 'time': " T2 "}", 2},
	/* the metaField: the predicate itself on meta */
	{"{'m.bucket': {'$gte': 'B'}}", "{'a': {'$lt': 999}, 'm.bucket': 'C'}", true},
	{"{'m.bucket': {'$gte': 'B'}}", "{'a': {'$lt': 999}, 'm.bucket': {'$in': ['B', 'C']}}", true},
	{"{'m.bucket': {'$gte': 'B'}}", "{'a': {'$lt': 999}, 'm.bucket': 'A'}", false},
	{"{'m.bucket': {'$gte': 'B'}}", "{'a': {'$lt': 999}, 'm.bucket': {'$gte': 'A'}}", false},
	{"{'m.bucket': {'$exists': true}}", "{'a': {'$lt': 999}, 'm.bucket': 'A'}", true},
	/* all three (timeseries_index_partial.js's mixed filter) */
	{"{'$and': [{'time': {'$gt': " T0 "}}, {'m.bucket': {'$gte': 'B'}}, {'b': {'$gte': 0}}]}",
	 "{'a': {'$lt': 999}, 'time': {'$gt': " T1 "}, 'm.bucket': 'C', 'b': {'$gte': 1}}", 2},
	{"{'$and': [{'time': {'$gt': " T0 "}}, {'m.bucket': {'$gte': 'B'}}, {'b': {'$gte': 0}}]}",
	 "{'a': {'$lt': 999}, 'm.bucket': 'C', 'b': {'$gte': 1}}", false},
	/* an $or partial filter: some branch holds the query */
	{"{'$or': [{'b': {'$lt': 2}}, {'m.bucket': 'C'}]}", "{'a': {'$lt': 999}, 'm.bucket': 'C'}", true},
	{"{'$or': [{'b': {'$lt': 2}}, {'m.bucket': 'C'}]}", "{'a': {'$lt': 999}, 'b': {'$lt': 1}}", true},
	{"{'$or': [{'b': {'$lt': 2}}, {'m.bucket': 'C'}]}", "{'a': {'$lt': 999}, 'b': {'$lt': 3}}", false},
};

/* timeseries_index_partial.js's collection: in bucket A some
 * measurements match b < 12, in B none, in C all. */
static void
load_abc(const char *ts, const char *plain)
{
	bson_string_t *d = bson_string_new("");
	static const char *const names[] = {"A", "B", "C"};
	char *cmd;

	for (int k = 0; k < 3; k++)
		for (int i = 0; i < 5; i++) {
			int b = k == 0 ? 20 - 4 * i : k == 1 ? 99 : 0;
			bson_string_append_printf(d, "%s{\"_id\": %d, \"time\": {\"$date\": \"2000-01-01T00:00:0%dZ\"}, "
			    "\"m\": {\"bucket\": \"%s\"}, \"a\": %d, \"b\": %d}", d->len ? ", " : "", k * 5 + i, i, names[k],
			    k * 5 + i, b);
		}
	cmd = bson_strdup_printf("{\"insert\": \"%s\", \"documents\": [%s]}", ts, d->str);
	TT_EQ_INT(run_err(cmd), 0);
	bson_free(cmd);
	cmd = bson_strdup_printf("{\"insert\": \"%s\", \"documents\": [%s]}", plain, d->str);
	TT_EQ_INT(run_err(cmd), 0);
	bson_free(cmd);
	bson_string_free(d, true);
}

static void
test_choices(void)
{
	run_err("{'drop': 'pi'}");
	run_err("{'drop': 'pp'}");
	TT_EQ_INT(run_err("{'create': 'pi', 'timeseries': {'timeField': 'time', 'metaField': 'm'}}"), 0);
	TT_EQ_INT(run_err("{'create': 'pp'}"), 0);
	load_abc("pi", "pp");
	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		char *pf = sq(cases[k].partial), *q = sq(cases[k].query);
		char *ci = bson_strdup_printf("{\"createIndexes\": \"pi\", \"indexes\": [{\"key\": {\"a\": 1}, \"name\": \"a_1\", "
		    "\"partialFilterExpression\": %s}]}", pf);
		char *w;
		int rc;
		bson_t *r = run(ci, &rc);
		TT_EQ_INT(rc, 0);
		tt_free_reply(r);
		w = winning_indexes("pi", q);
		{
			/* every plan considered: a_1 among them when implied (and
			 * the winner, unless the clustered _id range a time bound
			 * gives won the race), nowhere otherwise */
			char *all = plan_indexes("pi", q, true);
			bool in_all = strstr(all, "a_1") != NULL;
			if (cases[k].use == 2 ? !in_all || (strcmp(w, "a_1") != 0 && strcmp(w, "") != 0)
			                      : (strcmp(w, "a_1") == 0) != (cases[k].use == 1) || in_all != (cases[k].use == 1))
				TT_FAIL_("partial %s, query %s: winning plan scans \"%s\" (all plans \"%s\"), mongod %s a_1",
				    cases[k].partial, cases[k].query, w, all, cases[k].use ? "scans" : "does not scan");
			bson_free(all);
		}
		same_answer("pi", "pp", q);
		TT_EQ_INT(run_err("{'dropIndexes': 'pi', 'index': 'a_1'}"), 0);
		bson_free(w);
		bson_free(ci);
		bson_free(pf);
		bson_free(q);
	}
	/* a collection flagged for mixed-schema buckets: mongod's query form
	 * holds a type check there, so no measurement partial filter is
	 * implied (meta and time ones still are) */
	TT_EQ_INT(run_err("{'collMod': 'pi', 'timeseriesBucketsMayHaveMixedSchemaData': true}"), 0);
	TT_EQ_INT(run_err("{'createIndexes': 'pi', 'indexes': [{'key': {'a': 1}, 'name': 'a_1', "
	    "'partialFilterExpression': {'b': {'$lt': 12}}}, {'key': {'a': 1, 'b': 1}, 'name': 'ab_meta', "
	    "'partialFilterExpression': {'m.bucket': {'$gte': 'B'}}}]}"), 0);
	{
		char *q = sq("{'a': {'$lt': 999}, 'b': {'$lt': 11}}"), *w = winning_indexes("pi", q);
		TT_EQ_STR(w, "");
		same_answer("pi", "pp", q);
		bson_free(w);
		bson_free(q);
		q = sq("{'a': {'$lt': 999}, 'b': {'$lt': 11}, 'm.bucket': 'C'}");
		w = winning_indexes("pi", q);
		TT_EQ_STR(w, "ab_meta");
		same_answer("pi", "pp", q);
		bson_free(w);
		bson_free(q);
	}
}


/* ts_partial_implied itself: the time cases (explain may show the
 * clustered scan) and the rules' corners. */
static void
test_implied(void)
{
	ts_options_t o = {.time_field = "time", .meta_field = "m", .max_span = 3600, .rounding = 3600};
	ts_options_t mixed = o;

	mixed.mixed_schema = true;
	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		char *pf = sq(cases[k].partial), *q = sq(cases[k].query);
		bson_t *pb = tt_json(pf), *qb = tt_json(q);
		bool want = cases[k].use != 0;
		if (ts_partial_implied(&o, qb, pb, true, NULL) != want)
			TT_FAIL_("partial %s, query %s: implied should be %d", cases[k].partial, cases[k].query, want);
		/* mixed-schema buckets: only meta and time predicates still imply */
		if (ts_partial_implied(&mixed, qb, pb, true, NULL) &&
		    (strstr(cases[k].partial, "'b'") != NULL && strstr(cases[k].partial, "$or") == NULL))
			TT_FAIL_("mixed: partial %s, query %s implied", cases[k].partial, cases[k].query);
		bson_destroy(pb);
		bson_destroy(qb);
		bson_free(pf);
		bson_free(q);
	}
	{
		static const struct {
			const char *p, *q;
			bool same_coll, want;
		} more[] = {
			/* strings compare only under the collection's collation */
			{"{'b': {'$gt': 'k'}}", "{'b': {'$gt': 'm'}}", true, true},
			{"{'b': {'$gt': 'k'}}", "{'b': {'$gt': 'm'}}", false, false},
			{"{'m.s': {'$gt': 'k'}}", "{'m.s': 'm'}", false, false},
			/* $_internalExpr bounds compare in BSON order across types */
			{"{'b': {'$gt': 5}}", "{'b': {'$gt': 'a'}}", true, true},
			{"{'b': {'$lt': 5}}", "{'b': {'$lt': 'a'}}", true, false},
			/* meta comparisons keep their canonical types */
			{"{'m.s': {'$gt': 5}}", "{'m.s': {'$gt': 'a'}}", true, false},
			/* NaN implies only NaN */
			{"{'m.s': {'$gte': {'$numberDouble': 'NaN'}}}", "{'m.s': {'$numberDouble': 'NaN'}}", true, true},
			{"{'m.s': {'$lt': 5}}", "{'m.s': {'$numberDouble': 'NaN'}}", true, false},
			/* opaque meta predicates: equal to themselves only */
			{"{'m.s': {'$type': 'string'}}", "{'m.s': {'$type': 'string'}}", true, true},
			{"{'m.s': {'$exists': true}}", "{'m.s': {'$regex': '^a'}}", true, true},
			{"{'m.s': {'$exists': true}}", "{'m.s': null}", true, false},
			/* no bucket form: nothing implied */
			{"{'b': {'$gt': 5}}", "{'b': {'$not': {'$lte': 5}}}", true, false},
			{"{'b': {'$gt': 5}}", "{'$expr': {'$gt': ['$b', 5]}}", true, false},
			{"{'b': {'$gt': 5}}", "{}", true, false},
			/* a measurement subfield implies nothing (Tamga's own) */
			{"{'b.c': {'$gt': 5}}", "{'b.c': {'$gt': 6}}", true, false},
			{"{'b.c': {'$exists': true}}", "{'b.c': {'$exists': true}}", true, false},
			/* ... nor does an index filter holding one, whatever else it holds */
			{"{'m.s': 'C', 'b.c': {'$lt': 5}}", "{'m.s': 'C'}", true, false},
			{"{'m.s': 'C', 'b.c': {'$lt': 5}}", "{'m.s': 'C', 'b.c': {'$lt': 4}}", true, false},
			/* a time bound's span slack on the other bound */
			{"{'time': {'$gte': {'$date': '2000-01-01T00:00:00Z'}}}", "{'time': {'$gte': {'$date': '2000-01-01T00:00:00Z'}}}", true, true},
			{"{'time': {'$gte': {'$date': '2000-01-01T00:00:00Z'}}}", "{'time': {'$gt': {'$date': '2000-01-01T00:00:00Z'}}}", true, false},
			{"{'time': {'$lt': {'$date': '2000-01-01T00:00:00Z'}}}", "{'time': {'$eq': {'$date': '1999-12-31T23:00:00Z'}}}", true, true},
		};
		for (size_t k = 0; k < sizeof(more) / sizeof(more[0]); k++) {
			char *pf = sq(more[k].p), *q = sq(more[k].q);
			bson_t *pb = tt_json(pf), *qb = tt_json(q);
			if (ts_partial_implied(&o, qb, pb, more[k].same_coll, NULL) != more[k].want)
				TT_FAIL_("partial %s, query %s: implied should be %d", more[k].p, more[k].q, more[k].want);
			bson_destroy(pb);
			bson_destroy(qb);
			bson_free(pf);
			bson_free(q);
		}
	}
}

/* ---- randomized: answers with partial indexes equal the plain ones ------------------- */

static uint64_t rng = 4242;

static uint64_t
next_rand(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

/* A measurement: a (the index key) numbers; b of mixed kinds (numbers,
 * strings, null, arrays, missing: arrays match by an element while a
 * bucket's bounds are whole values, the partial forms' hard case); meta of
 * a few shapes; times over a few hours. */
static void
measurement(bson_string_t *s, int id)
{
	static const char *const metas[] = {"{\"s\": \"A\"}", "{\"s\": \"B\"}", "{\"s\": \"C\", \"n\": 1}", "2", NULL};
	int mi = (int)(next_rand() % 5);
	long long t = 946684800000LL + (long long)(next_rand() % 14400) * 1000;

	bson_string_append_printf(s, "{\"_id\": %d, \"time\": {\"$date\": {\"$numberLong\": \"%lld\"}}", id, t);
	if (metas[mi] != NULL)
		bson_string_append_printf(s, ", \"m\": %s", metas[mi]);
	if (next_rand() % 8 != 0)
		bson_string_append_printf(s, ", \"a\": %d", (int)(next_rand() % 100));
	switch (next_rand() % 10) {
	case 0: break;
	case 1: bson_string_append(s, ", \"b\": null"); break;
	case 2: bson_string_append_printf(s, ", \"b\": \"s%d\"", (int)(next_rand() % 5)); break;
	case 3: bson_string_append_printf(s, ", \"b\": [%d, 50]", (int)(next_rand() % 30)); break;
	case 4: bson_string_append_printf(s, ", \"b\": %d.5", (int)(next_rand() % 30)); break;
	default: bson_string_append_printf(s, ", \"b\": %d", (int)(next_rand() % 30)); break;
	}
	bson_string_append(s, "}");
}

static void
insert_random(const char *ts, const char *plain, int *id, int batches)
{
	for (int batch = 0; batch < batches; batch++) {
		int n = 1 + (int)(next_rand() % 120);
		bson_string_t *a = bson_string_new("");
		char *c1, *c2;
		for (int i = 0; i < n; i++, (*id)++) {
			if (i)
				bson_string_append(a, ", ");
			measurement(a, *id);
		}
		c1 = bson_strdup_printf("{\"insert\": \"%s\", \"documents\": [%s]}", ts, a->str);
		c2 = bson_strdup_printf("{\"insert\": \"%s\", \"documents\": [%s]}", plain, a->str);
		TT_EQ_INT(run_err(c1), 0);
		TT_EQ_INT(run_err(c2), 0);
		bson_free(c1);
		bson_free(c2);
		bson_string_free(a, true);
	}
}

static const char *const rpartials[] = {
	"{'b': {'$lt': 12}}",
	"{'b': {'$gte': 10}}",
	"{'b': {'$in': [3, 7, 's1']}}",
	"{'b': {'$exists': true}}",
	"{'b': {'$gt': 's1'}}",
	"{'time': {'$lt': {'$date': '2000-01-01T02:00:00Z'}}}",
	"{'m.s': {'$in': ['A', 'C']}}",
	"{'$or': [{'b': {'$lte': 4}}, {'m.s': 'B'}]}",
	"{'$and': [{'b': {'$gt': 2}}, {'time': {'$gte': {'$date': '2000-01-01T01:00:00Z'}}}]}",
};

static const char *const rqueries[] = {
	"{'a': {'$lt': 60}, 'b': {'$lt': 12}}",
	"{'a': {'$lt': 60}, 'b': {'$lt': 5}}",
	"{'a': {'$lt': 90}, 'b': {'$lte': 12}}",
	"{'a': {'$lt': 60}, 'b': 7}",
	"{'a': {'$lt': 60}, 'b': {'$in': [3, 7]}}",
	"{'a': {'$lt': 60}, 'b': {'$gte': 10}}",
	"{'a': {'$lt': 60}, 'b': {'$gt': 20}}",
	"{'a': {'$lt': 60}, 'b': {'$gt': 's2'}}",
	"{'a': {'$lt': 60}, 'b': {'$gte': 's1'}}",
	"{'a': {'$lt': 60}, 'b': 's1'}",
	"{'a': {'$lt': 60}, 'b': {'$exists': true}}",
	"{'a': {'$lt': 60}, 'b': null}",
	"{'a': {'$lt': 60}}",
	"{'a': {'$lte': 30}, 'time': {'$lt': {'$date': '2000-01-01T01:30:00Z'}}}",
	"{'a': {'$lt': 60}, 'time': {'$gte': {'$date': '2000-01-01T02:30:00Z'}}, 'b': {'$gt': 4}}",
	"{'a': {'$lt': 60}, 'm.s': 'A'}",
	"{'a': {'$lt': 60}, 'm.s': 'B', 'b': {'$lte': 2}}",
	"{'a': {'$lt': 60}, '$or': [{'b': {'$lt': 1}}, {'m.s': 'B'}]}",
	"{'a': {'$lt': 60}, 'b': {'$elemMatch': {'$lt': 5}}}",
	"{'a': {'$gt': 10}, 'b': {'$lt': 12}}",
};

static void
test_random_partial(void)
{
	int id = 0;

	run_err("{'drop': 'rw'}");
	run_err("{'drop': 'rp'}");
	TT_EQ_INT(run_err("{'create': 'rw', 'timeseries': {'timeField': 'time', 'metaField': 'm'}}"), 0);
	TT_EQ_INT(run_err("{'create': 'rp'}"), 0);
	insert_random("rw", "rp", &id, 8);
	for (size_t k = 0; k < sizeof(rpartials) / sizeof(rpartials[0]); k++) {
		char *pf = sq(rpartials[k]);
		char *ci = bson_strdup_printf("{\"createIndexes\": \"rw\", \"indexes\": [{\"key\": {\"a\": 1}, \"name\": \"pa\", "
		    "\"partialFilterExpression\": %s}]}", pf);
		int used = 0;
		TT_EQ_INT(run_err(ci), 0);
		/* measurements written after the build keep the index up to date */
		insert_random("rw", "rp", &id, 2);
		for (size_t q = 0; q < sizeof(rqueries) / sizeof(rqueries[0]); q++) {
			char *qq = sq(rqueries[q]), *w = winning_indexes("rw", qq);
			used += strcmp(w, "pa") == 0;
			same_answer("rw", "rp", qq);
			{
				/* count and an aggregate $group read the same way */
				char *c1 = bson_strdup_printf("{\"count\": \"rw\", \"query\": %s}", qq);
				char *c2 = bson_strdup_printf("{\"count\": \"rp\", \"query\": %s}", qq);
				char *g1 = bson_strdup_printf("{\"aggregate\": \"rw\", \"pipeline\": [{\"$match\": %s}, "
				    "{\"$group\": {\"_id\": null, \"s\": {\"$sum\": \"$a\"}, \"n\": {\"$sum\": 1}}}], \"cursor\": {}}", qq);
				char *g2 = bson_strdup_printf("{\"aggregate\": \"rp\", \"pipeline\": [{\"$match\": %s}, "
				    "{\"$group\": {\"_id\": null, \"s\": {\"$sum\": \"$a\"}, \"n\": {\"$sum\": 1}}}], \"cursor\": {}}", qq);
				int rc1, rc2;
				bson_t *r1 = run(c1, &rc1), *r2 = run(c2, &rc2);
				char *a = batch_text(g1), *b = batch_text(g2);
				TT_EQ_INT(rc1, 0);
				if (tt_get_i64(r1, "n") != tt_get_i64(r2, "n"))
					TT_FAIL_("count %s: ts %lld, plain %lld", qq, (long long)tt_get_i64(r1, "n"), (long long)tt_get_i64(r2, "n"));
				if (strcmp(a, b) != 0)
					TT_FAIL_("$group after %s:\n ts:    %.200s\n plain: %.200s", qq, a, b);
				tt_free_reply(r1);
				tt_free_reply(r2);
				bson_free(a);
				bson_free(b);
				bson_free(c1);
				bson_free(c2);
				bson_free(g1);
				bson_free(g2);
			}
			bson_free(w);
			bson_free(qq);
		}
		/* each partial filter has queries that use it (a time one: the
		 * clustered _id scan its time bound allows may win) */
		if (used == 0 && strstr(rpartials[k], "time") == NULL)
			TT_FAIL_("no query used the partial index %s", rpartials[k]);
		TT_EQ_INT(run_err("{'dropIndexes': 'rw', 'index': 'pa'}"), 0);
		bson_free(ci);
		bson_free(pf);
	}
}

/* ---- a measurement index on buckets that mix types: refused ------------------------- */

static void
test_mixed_schema_build(void)
{
	int rc;
	bson_t *r;
	char uuid[64];

	run_err("{'drop': 'mx'}");
	TT_EQ_INT(run_err("{'create': 'mx', 'timeseries': {'timeField': 't', 'metaField': 'm'}}"), 0);
	TT_EQ_INT(run_err("{'insert': 'mx', 'documents': [{'t': {'$date': '2024-01-01T00:00:00Z'}, 'm': 1, 'a': 1}, "
	    "{'t': {'$date': '2024-01-01T00:00:01Z'}, 'm': 1, 'a': 2}]}"), 0);
	/* buckets of one type each: built, also on a flagged collection */
	TT_EQ_INT(run_err("{'collMod': 'mx', 'timeseriesBucketsMayHaveMixedSchemaData': true}"), 0);
	TT_EQ_INT(run_err("{'createIndexes': 'mx', 'indexes': [{'key': {'a': 1}, 'name': 'a_1'}]}"), 0);
	TT_EQ_INT(run_err("{'dropIndexes': 'mx', 'index': 'a_1'}"), 0);
	/* a raw bucket mixing a number and a string in a (allowed: flagged) */
	TT_EQ_INT(run_err("{'insert': 'mx', 'rawData': true, 'documents': [{'_id': {'$oid': '65920e90aaaaaaaaaaaaaaaa'}, "
	    "'control': {'version': 1, 'min': {'_id': 1, 't': {'$date': '2024-01-01T01:00:00Z'}, 'a': 3}, "
	    "'max': {'_id': 2, 't': {'$date': '2024-01-01T01:00:01Z'}, 'a': 'x'}}, 'meta': 2, "
	    "'data': {'_id': {'0': 1, '1': 2}, 't': {'0': {'$date': '2024-01-01T01:00:00Z'}, '1': {'$date': '2024-01-01T01:00:01Z'}}, "
	    "'a': {'0': 3, '1': 'x'}}}]}"), 0);
	r = run_sq("{'createIndexes': 'mx', 'indexes': [{'key': {'a': 1}, 'name': 'a_1'}]}", &rc);
	TT_ASSERT(rc != 0);
	TT_EQ_INT(tt_get_i64(r, "code"), 67);
	{
		bson_t *lc = run_sq("{'listCollections': 1, 'filter': {'name': 'mx'}}", &rc);
		bson_iter_t f;
		const bson_value_t *v;
		TT_ASSERT(tt_get(lc, "cursor.firstBatch.0.info.uuid", &f));
		v = bson_iter_value(&f);
		{
			const uint8_t *u = v->value.v_binary.data;
			bson_snprintf(uuid, sizeof(uuid), "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
			    u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13], u[14], u[15]);
		}
		tt_free_reply(lc);
	}
	{
		char *want = bson_strdup_printf("Index build on collection 'tsp.mx' (%s) failed due to the detection of "
		    "mixed-schema data in the time-series buckets collection. Starting as of v5.2, time-series measurement "
		    "bucketing has been modified to ensure that newly created time-series buckets do not contain "
		    "mixed-schema data. For details, see: https://www.mongodb.com/docs/manual/core/timeseries/timeseries-limitations/",
		    uuid);
		TT_EQ_STR(tt_get_str(r, "errmsg"), want);
		bson_free(want);
	}
	tt_free_reply(r);
	/* nothing built */
	TT_EQ_INT(run_err("{'dropIndexes': 'mx', 'index': 'a_1'}"), 27);
	/* a partial filter on a measurement reads it too; rawData builds too */
	TT_EQ_INT(run_err("{'createIndexes': 'mx', 'indexes': [{'key': {'m': 1}, 'name': 'm_b', "
	    "'partialFilterExpression': {'b': {'$gt': 0}}}]}"), 67);
	TT_EQ_INT(run_err("{'createIndexes': 'mx', 'rawData': true, 'indexes': [{'key': {'control.max.a': 1}, 'name': 'raw_a'}]}"), 67);
	/* meta and time indexes do not */
	TT_EQ_INT(run_err("{'createIndexes': 'mx', 'indexes': [{'key': {'m': 1, 't': -1}, 'name': 'm_t'}, "
	    "{'key': {'t': 1}, 'name': 't_m', 'partialFilterExpression': {'m': {'$gt': 0}}}]}"), 0);
	/* the check over the buckets honours maxTimeMS: 3,000 buckets scanned
	 * before the mixed one (its _id an hour later), 1 ms */
	{
		bson_string_t *d = bson_string_new("");
		char *c;
		for (int i = 0; i < 3000; i++)
			bson_string_append_printf(d, "%s{'t': {'$date': {'$numberLong': '%lld'}}, 'm': %d, 'a': %d}", i ? ", " : "",
			    1704067200000LL + i, 1000 + i, i);
		c = bson_strdup_printf("{'insert': 'mx', 'documents': [%s]}", d->str);
		TT_EQ_INT(run_err(c), 0);
		bson_free(c);
		bson_string_free(d, true);
	}
	TT_EQ_INT(run_err("{'createIndexes': 'mx', 'indexes': [{'key': {'a': 1}, 'name': 'a_1'}], 'maxTimeMS': 1}"), 50);
	TT_EQ_INT(run_err("{'createIndexes': 'mx', 'indexes': [{'key': {'a': 1}, 'name': 'a_1'}]}"), 67);
	/* without the mixed bucket the build goes through */
	TT_EQ_INT(run_err("{'delete': 'mx', 'rawData': true, 'deletes': [{'q': {'_id': {'$oid': '65920e90aaaaaaaaaaaaaaaa'}}, 'limit': 1}]}"), 0);
	TT_EQ_INT(run_err("{'createIndexes': 'mx', 'indexes': [{'key': {'a': 1}, 'name': 'a_1'}]}"), 0);
}

int
main(void)
{
	char *dir = tt_tmpdir("ts_partial");
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
	TT_RUN(test_implied);
	TT_RUN(test_choices);
	TT_RUN(test_random_partial);
	TT_RUN(test_mixed_schema_build);
	client_free(cl);
	engine_close(eng);
	tt_rmdir(dir);
	bson_free(dir);
	return tt_finish();
}
