/*
 * test_agg_badinput.c -- hostile pipelines: every stage name with values of
 * every shape (and every option name of the stages that take options), run
 * against a small collection.  Passing means: no crash, no leak, no
 * sanitizer report, and every reply is either ok: 1 or an error with a
 * non-zero code and a message.
 */
#include "tt.h"

#include "common/mem.h"
#include "tamga/tamga.h"

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

	if (tamga_open(dir, "create", &db, &e) != 0) {
		fprintf(stderr, "open: %s\n", e.message);
		return 1;
	}
	cmd = tt_json("{\"insert\": \"c\", \"documents\": [{\"_id\": 1, \"a\": 1, \"b\": {\"c\": [1, 2]}},"
	    " {\"_id\": 2, \"a\": \"x\", \"b\": [{\"c\": 3}]}, {\"_id\": 3, \"a\": [1, {\"d\": 2}]}, {\"_id\": 4}]}");
	tamga_run_command(db, "bad", cmd, &reply, &e);
	bson_destroy(&reply);
	bson_destroy(cmd);
	TT_RUN(test_random_pipelines);
	TT_RUN(test_deep_and_long);
	tamga_close(db);
	tt_rmdir(dir);
	bson_free(dir);
	return tt_finish();
}
