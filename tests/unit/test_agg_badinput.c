/*
 * test_agg_badinput.c -- hostile pipelines: every stage name with values of
 * every shape (and every option name of the stages that take options), run
 * against a small collection.  Passing means: no crash, no leak, no
 * sanitizer report, and every reply is either ok: 1 or an error with a
 * non-zero code and a message.
 */
#include "tt.h"

#include "tt_embedded.h"

static tamga_t *db;
static uint64_t rng = 0x9e3779b97f4a7c15ULL;

static uint32_t
rnd(uint32_t n)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (uint32_t)(rng % n);
}

static const char *const stages[] = {
	"$match", "$project", "$addFields", "$set", "$unset", "$group", "$sort", "$limit", "$skip",
	"$count", "$unwind", "$replaceRoot", "$replaceWith", "$sortByCount", "$lookup", "$merge",
	"$out", "$facet", "$bucket", "$bucketAuto", "$unionWith", "$sample", "$redact", "$documents",
	"$setWindowFields", "$densify", "$fill", "$collStats", "$indexStats", "$graphLookup", "$bogus",
};

static const char *const keys[] = {
	"_id", "a", "b.c", "$a", "", "path", "includeArrayIndex", "preserveNullAndEmptyArrays",
	"newRoot", "from", "localField", "foreignField", "as", "let", "pipeline", "into", "on",
	"whenMatched", "whenNotMatched", "groupBy", "boundaries", "default", "output", "buckets",
	"size", "coll", "partitionBy", "sortBy", "window", "documents", "range", "unit", "field",
	"step", "bounds", "startWith", "connectFromField", "connectToField", "maxDepth", "n",
	"$sum", "$avg", "$push", "$rank", "$shift", "$locf", "method", "value", "count",
	"storageStats", "$add", "$cond", "$literal",
};

/* A random value of depth at most d, as extended JSON. */
static void
value(bson_string_t *s, int d)
{
	int i, n;

	switch (rnd(d > 0 ? 12 : 8)) {
	case 0: bson_string_append_printf(s, "%d", (int)rnd(5) - 1); break;
	case 1: bson_string_append(s, "\"$a\""); break;
	case 2: bson_string_append(s, "\"a\""); break;
	case 3: bson_string_append(s, "null"); break;
	case 4: bson_string_append(s, "true"); break;
	case 5: bson_string_append(s, "1.5"); break;
	case 6: bson_string_append(s, "\"$$KEEP\""); break;
	case 7: bson_string_append(s, "{}"); break;
	case 8:
	case 9:
		n = (int)rnd(4);
		bson_string_append(s, "{");
		for (i = 0; i < n; i++) {
			bson_string_append_printf(s, "%s\"%s\": ", i ? ", " : "", keys[rnd(sizeof(keys) / sizeof(keys[0]))]);
			value(s, d - 1);
		}
		bson_string_append(s, "}");
		break;
	default:
		n = (int)rnd(4);
		bson_string_append(s, "[");
		for (i = 0; i < n; i++) {
			if (i)
				bson_string_append(s, ", ");
			if (rnd(3) == 0) {
				bson_string_append_printf(s, "{\"%s\": ", stages[rnd(sizeof(stages) / sizeof(stages[0]))]);
				value(s, d - 1);
				bson_string_append(s, "}");
			} else {
				value(s, d - 1);
			}
		}
		bson_string_append(s, "]");
		break;
	}
}

static int
run_pipeline(const char *coll, const char *pipeline, bool *ok)
{
	char *json = bson_strdup_printf("{\"aggregate\": \"%s\", \"pipeline\": %s, \"cursor\": {\"batchSize\": 3}}",
	    coll, pipeline);
	bson_error_t be;
	bson_t *cmd = bson_new_from_json((const uint8_t *)json, -1, &be);
	bson_t *reply = tm_bson_array_new(1);
	tamga_error_t e;
	int rc = 0;

	*ok = true;
	if (cmd == NULL) {
		bson_free(json);
		bson_free(reply);
		return 0;   /* our generator made invalid JSON: skip */
	}
	rc = tamga_run_command(db, "bad", cmd, reply, &e);
	if (rc != 0 && (e.code == 0 || e.message[0] == '\0')) {
		fprintf(stderr, "error without code or message: %s\n", json);
		*ok = false;
	}
	bson_destroy(reply);
	bson_free(reply);
	bson_destroy(cmd);
	bson_free(json);
	return rc != 0 ? (e.code != 0 ? e.code : -1) : 0;
}

static void
test_random_pipelines(void)
{
	int i, j, errors = 0;
	bool ok;

	for (i = 0; i < 2500; i++) {
		bson_string_t *s = bson_string_new("[");
		int n = 1 + (int)rnd(3);
		for (j = 0; j < n; j++) {
			bson_string_append_printf(s, "%s{\"%s\": ", j ? ", " : "", stages[rnd(sizeof(stages) / sizeof(stages[0]))]);
			value(s, 3);
			bson_string_append(s, "}");
		}
		bson_string_append(s, "]");
		if (run_pipeline(rnd(2) ? "c" : "missing", s->str, &ok) != 0)
			errors++;
		TT_ASSERT(ok);
		bson_string_free(s, true);
	}
	/* most random pipelines are malformed; some are not */
	TT_ASSERT(errors > 100);
	TT_ASSERT(errors < 2500);
}

/* Valid-looking stages with random operands: exercises the run-time paths. */
static const char *const vals[] = {
	"\"$a\"", "\"$b.c\"", "\"$$ROOT\"", "{\"$add\": [\"$a\", 1]}", "1", "-1", "0", "2", "\"x\"", "null",
	"[1, 2]", "{\"$cond\": [{\"$gt\": [\"$a\", 1]}, \"$a\", null]}", "\"$missing\"", "{\"k\": \"$a\"}",
	"true", "{\"$literal\": {\"$a\": 1}}", "\"$b\"", "{\"$size\": \"$a\"}", "\"$$REMOVE\"", "1.5",
};

static const char *const templates[] = {
	"{\"$group\": {\"_id\": V, \"x\": {\"$sum\": V}, \"y\": {\"$push\": V}, \"z\": {\"$max\": V}}}",
	"{\"$project\": {\"a\": V, \"b.c\": V}}",
	"{\"$addFields\": {\"a\": V, \"b.d\": V}}",
	"{\"$unwind\": {\"path\": \"$a\", \"includeArrayIndex\": \"i\", \"preserveNullAndEmptyArrays\": true}}",
	"{\"$unwind\": \"$b.c\"}",
	"{\"$bucket\": {\"groupBy\": \"$a\", \"boundaries\": [0, 5, 10], \"default\": V}}",
	"{\"$bucketAuto\": {\"groupBy\": V, \"buckets\": N}}",
	"{\"$setWindowFields\": {\"partitionBy\": V, \"sortBy\": {\"a\": 1}, \"output\": {\"x\": {\"$sum\": V, \"window\": {\"documents\": [\"unbounded\", N]}}, \"r\": {\"$rank\": {}}}}}",
	"{\"$setWindowFields\": {\"sortBy\": {\"a\": 1}, \"output\": {\"x\": {\"$avg\": V, \"window\": {\"range\": [-1, 1]}}, \"s\": {\"$shift\": {\"output\": V, \"by\": N}}}}}",
	"{\"$setWindowFields\": {\"sortBy\": {\"a\": 1}, \"output\": {\"d\": {\"$derivative\": {\"input\": V}, \"window\": {\"documents\": [-1, 0]}}, \"i\": {\"$integral\": {\"input\": V}}, \"e\": {\"$expMovingAvg\": {\"input\": V, \"N\": 2}}}}}",
	"{\"$densify\": {\"field\": \"a\", \"range\": {\"step\": 1, \"bounds\": \"full\"}}}",
	"{\"$fill\": {\"sortBy\": {\"a\": 1}, \"output\": {\"b\": {\"method\": \"linear\"}, \"c\": {\"method\": \"locf\"}, \"d\": {\"value\": V}}}}",
	"{\"$lookup\": {\"from\": \"c\", \"localField\": \"a\", \"foreignField\": \"b.c\", \"as\": \"j\"}}",
	"{\"$lookup\": {\"from\": \"c\", \"let\": {\"v\": V}, \"pipeline\": [{\"$match\": {\"$expr\": {\"$eq\": [\"$a\", \"$$v\"]}}}], \"as\": \"j\"}}",
	"{\"$graphLookup\": {\"from\": \"c\", \"startWith\": V, \"connectFromField\": \"a\", \"connectToField\": \"_id\", \"as\": \"g\", \"maxDepth\": N}}",
	"{\"$sort\": {\"a\": 1, \"b.c\": -1}}", "{\"$sortByCount\": V}", "{\"$replaceWith\": V}",
	"{\"$redact\": {\"$cond\": [V, \"$$DESCEND\", \"$$PRUNE\"]}}",
	"{\"$facet\": {\"x\": [{\"$group\": {\"_id\": V}}], \"y\": [{\"$limit\": 1}]}}",
	"{\"$merge\": {\"into\": \"out\", \"whenMatched\": [{\"$set\": {\"m\": V}}]}}", "{\"$out\": \"out2\"}",
	/* (a filter that can drop every document before a pushed-down $sort
	 * waits for query/sort.c to accept an empty sort) */
	"{\"$match\": {\"_id\": {\"$ne\": V}}}", "{\"$count\": \"n\"}", "{\"$sample\": {\"size\": 2}}",
	"{\"$project\": {\"x\": {\"$cond\": [{\"$lt\": [V, V]}, V, \"$$REMOVE\"]}}}",
	"{\"$unionWith\": {\"coll\": \"c\", \"pipeline\": [{\"$project\": {\"a\": V}}]}}",
};

static void
expand(bson_string_t *s, const char *t)
{
	for (; *t; t++) {
		if (*t == 'V')
			bson_string_append(s, vals[rnd(sizeof(vals) / sizeof(vals[0]))]);
		else if (*t == 'N')
			bson_string_append_printf(s, "%d", (int)rnd(4) - 1);
		else
			bson_string_append_c(s, *t);
	}
}

static void
test_runtime_paths(void)
{
	int i, j, ok_runs = 0;
	bool ok;

	for (i = 0; i < 800; i++) {
		bson_string_t *s = bson_string_new("[");
		int n = 1 + (int)rnd(3);
		const char *last = NULL;
		for (j = 0; j < n; j++) {
			const char *t = templates[rnd(sizeof(templates) / sizeof(templates[0]))];
			if (last != NULL && (strstr(last, "$merge") || strstr(last, "$out")))
				break;
			if (j)
				bson_string_append(s, ", ");
			expand(s, t);
			last = t;
		}
		bson_string_append(s, "]");
		if (run_pipeline("c", s->str, &ok) == 0)
			ok_runs++;
		TT_ASSERT(ok);
		bson_string_free(s, true);
	}
	TT_ASSERT(ok_runs > 200);
}

static void
test_deep_and_long(void)
{
	bson_string_t *s = bson_string_new("[");
	bool ok;
	int i;

	/* 30 nested $facet-free sub-pipelines through $lookup */
	for (i = 0; i < 30; i++)
		bson_string_append(s, "{\"$lookup\": {\"from\": \"c\", \"as\": \"x\", \"pipeline\": [");
	bson_string_append(s, "{\"$limit\": 1}");
	for (i = 0; i < 30; i++)
		bson_string_append(s, "]}}");
	bson_string_append(s, "]");
	TT_EQ_INT(run_pipeline("c", s->str, &ok), 232);
	TT_ASSERT(ok);
	bson_string_free(s, true);
	/* 20 levels are allowed */
	s = bson_string_new("[");
	for (i = 0; i < 20; i++)
		bson_string_append(s, "{\"$lookup\": {\"from\": \"c\", \"as\": \"x\", \"pipeline\": [{\"$limit\": 1}, ");
	bson_string_append(s, "{\"$limit\": 1}");
	for (i = 0; i < 20; i++)
		bson_string_append(s, "]}}");
	bson_string_append(s, ", {\"$limit\": 1}]");
	TT_EQ_INT(run_pipeline("c", s->str, &ok), 0);
	bson_string_free(s, true);
	/* a $project 90 levels deep */
	s = bson_string_new("[{\"$project\": ");
	for (i = 0; i < 90; i++)
		bson_string_append(s, "{\"a\": ");
	bson_string_append(s, "1");
	for (i = 0; i < 90; i++)
		bson_string_append(s, "}");
	bson_string_append(s, "}]");
	run_pipeline("c", s->str, &ok);
	TT_ASSERT(ok);
	bson_string_free(s, true);
}

int
main(void)
{
	tamga_error_t e;
	char *dir = tt_tmpdir("aggbad");
	bson_t *cmd, reply;

	if ((db = tt_open_new(dir)) == NULL)
		return 1;
	cmd = tt_json("{\"insert\": \"c\", \"documents\": [{\"_id\": 1, \"a\": 1, \"b\": {\"c\": [1, 2]}},"
	    " {\"_id\": 2, \"a\": \"x\", \"b\": [{\"c\": 3}]}, {\"_id\": 3, \"a\": [1, {\"d\": 2}]}, {\"_id\": 4},"
	    " {\"_id\": 5, \"a\": 3, \"b\": 7}, {\"_id\": 6, \"a\": 3.5, \"b\": null}, {\"_id\": 7, \"a\": 9, \"c\": \"s\"},"
	    " {\"_id\": 8, \"a\": {\"$date\": \"2026-01-01T00:00:00Z\"}}, {\"_id\": 9, \"a\": null, \"b\": {\"c\": 1}}]}");
	tamga_run_command(db, "bad", cmd, &reply, &e);
	bson_destroy(&reply);
	bson_destroy(cmd);
	TT_RUN(test_random_pipelines);
	TT_RUN(test_runtime_paths);
	TT_RUN(test_deep_and_long);
	tt_close_rm(db, dir);
	return tt_finish();
}
