/*
 * test_update_pipeline.c -- pipeline-style updates ($set/$addFields,
 * $unset, $project, $replaceRoot/$replaceWith, let constants) and upsert
 * documents (seeds from the query, $setOnInsert, replacement and pipeline
 * upserts), including the seed article's computed, schema-versioning and
 * bucket examples with their exact results.
 */
#include "test_update_util.h"

static void
test_computed_seed(void)
{
	/* computed pattern: rating {count 5, sum 22, average 4.4} + a 5-star review */
	TU_OK("{\"_id\": 26, \"title\": \"Dune\", \"rating\": {\"count\": 5, \"sum\": 22, \"average\": 4.4}}",
	      "[{\"$set\": {\"rating.count\": {\"$add\": [\"$rating.count\", 1]}, "
	      "\"rating.sum\": {\"$add\": [\"$rating.sum\", 5]}}},"
	      "{\"$set\": {\"rating.average\": {\"$round\": [{\"$divide\": [\"$rating.sum\", "
	      "\"$rating.count\"]}, 2]}}}]",
	      "{ \"_id\" : 26, \"title\" : \"Dune\", \"rating\" : { \"count\" : 6, \"sum\" : 27, "
	      "\"average\" : 4.5 } }");
}

static void
test_schema_versioning_seed(void)
{
	TU_OK("{\"_id\": 2, \"firstName\": \"Alan\", \"city\": \"Berlin\", \"country\": \"DE\", \"x\": 1}",
	      "[{\"$set\": {\"schemaVersion\": 2, \"address\": {\"city\": \"$city\", \"country\": "
	      "\"$country\"}}}, {\"$unset\": [\"city\", \"country\"]}]",
	      "{ \"_id\" : 2, \"firstName\" : \"Alan\", \"x\" : 1, \"schemaVersion\" : 2, "
	      "\"address\" : { \"city\" : \"Berlin\", \"country\" : \"DE\" } }");
	/* running it again on a v2 document: address from missing fields */
	TU_OK("{\"_id\": 3, \"schemaVersion\": 2, \"address\": {\"city\": \"Istanbul\"}}",
	      "[{\"$set\": {\"schemaVersion\": 2}}]",
	      "{ \"_id\" : 3, \"schemaVersion\" : 2, \"address\" : { \"city\" : \"Istanbul\" } }");
	TU_NOOP("{\"_id\": 3, \"schemaVersion\": 2}", "[{\"$set\": {\"schemaVersion\": 2}}]");
}

static void
test_pipeline_stages(void)
{
	TU_OK("{\"_id\": 1, \"a\": 1, \"b\": 2}", "[{\"$project\": {\"a\": 1}}]", "{ \"_id\" : 1, \"a\" : 1 }");
	TU_OK("{\"_id\": 1, \"a\": 1, \"b\": 2}", "[{\"$project\": {\"a\": 0}}]", "{ \"_id\" : 1, \"b\" : 2 }");
	/* _id excluded by the pipeline stays (the old _id is kept) */
	TU_OK("{\"_id\": 1, \"a\": 1, \"b\": 2}", "[{\"$project\": {\"_id\": 0, \"b\": 1}}]",
	      "{ \"_id\" : 1, \"b\" : 2 }");
	TU_OK("{\"_id\": 1, \"a\": {\"b\": 1, \"c\": 2}}", "[{\"$unset\": \"a.b\"}]",
	      "{ \"_id\" : 1, \"a\" : { \"c\" : 2 } }");
	TU_OK("{\"_id\": 1, \"a\": {\"b\": 5}}", "[{\"$replaceWith\": {\"x\": \"$a.b\"}}]",
	      "{ \"_id\" : 1, \"x\" : 5 }");
	TU_OK("{\"_id\": 1, \"a\": {\"b\": 5}}", "[{\"$replaceRoot\": {\"newRoot\": \"$a\"}}]",
	      "{ \"_id\" : 1, \"b\" : 5 }");
	TU_OK("{\"_id\": 1, \"a\": 2}", "[{\"$addFields\": {\"b\": {\"$multiply\": [\"$a\", 10]}}}]",
	      "{ \"_id\" : 1, \"a\" : 2, \"b\" : 20 }");
	/* $$REMOVE drops a field */
	TU_OK("{\"_id\": 1, \"a\": 2, \"b\": 3}", "[{\"$set\": {\"a\": \"$$REMOVE\"}}]",
	      "{ \"_id\" : 1, \"b\" : 3 }");
	/* dotted $set through an array of documents */
	TU_OK("{\"_id\": 1, \"a\": [{\"x\": 1}, {\"x\": 2}]}", "[{\"$set\": {\"a.y\": 0}}]",
	      "{ \"_id\" : 1, \"a\" : [ { \"x\" : 1, \"y\" : 0 }, { \"x\" : 2, \"y\" : 0 } ] }");
	TU_ERR("{\"_id\": 1}", "[{\"$group\": {\"_id\": null}}]", 72,
	       "$group is not allowed to be used within an update");
	TU_ERR("{\"_id\": 1}", "[{\"$foo\": {}}]", 40324, "Unrecognized pipeline stage name: '$foo'");
	TU_ERR("{\"_id\": 1}", "[{\"$set\": {\"_id\": 2}}]", 66,
	       "After applying the update, the (immutable) field '_id' was found to have been "
	       "altered to _id: 2");
	TU_ERR("{\"_id\": 1}", "[{\"$replaceWith\": 5}]", 40228,
	       "'replacement document' must evaluate to an object, but resulting value was: 5. Type "
	       "of resulting value: 'int'. Input document: { _id: 1 }");
	TU_ERR("{\"_id\": 1}", "[{\"$project\": {\"a\": 1, \"b\": 0}}]", 31254,
	       "Invalid $project :: caused by :: Cannot do exclusion on field b in inclusion "
	       "projection");
}

static void
test_pipeline_let(void)
{
	bson_t *d = tt_json("{\"_id\": 1, \"a\": 1}");
	bson_t *u = tt_json("{\"u\": [{\"$set\": {\"b\": \"$$k\", \"n\": \"$$NOW\"}}]}");
	bson_t *let = tt_json("{\"k\": 42}");
	bson_iter_t it;
	update_options_t opts = {NULL, let};
	update_apply_ctx_t ctx = UPDATE_APPLY_CTX_INIT;
	update_t *up = NULL;
	bson_t out;
	bool mod;
	terr_t err = TERR_INIT;

	ctx.now_ms = 1782813600000LL;
	bson_iter_init_find(&it, u, "u");
	TT_ASSERT(update_compile(bson_iter_value(&it), &opts, &up, &err) == 0);
	if (up != NULL && update_apply(up, d, &ctx, &out, &mod, &err) == 0) {
		TT_EQ_JSON(&out, "{ \"_id\" : 1, \"a\" : 1, \"b\" : 42, \"n\" : { \"$date\" : "
		                 "\"2026-06-30T10:00:00Z\" } }");
		TT_ASSERT(mod);
		bson_destroy(&out);
	} else {
		TT_FAIL_("apply: %s", err.msg ? err.msg : "?");
	}
	terr_clear(&err);
	update_free(up);
	bson_destroy(d);
	bson_destroy(u);
	bson_destroy(let);
}

/* upsert helper: returns relaxed JSON or NULL (error in *code/msg) */
static char *
upsert(const char *filter, const char *u, int *code, char *msg)
{
	char *wrapped = bson_strdup_printf("{\"u\": %s}", u);
	bson_t *w = tt_json(wrapped), *f = tt_json(filter), out;
	bson_iter_t it;
	update_t *up = NULL;
	update_apply_ctx_t ctx = UPDATE_APPLY_CTX_INIT;
	terr_t err = TERR_INIT;
	char *res = NULL;

	ctx.now_ms = 1782813600000LL;
	*code = 0;
	bson_iter_init_find(&it, w, "u");
	if (update_compile(bson_iter_value(&it), NULL, &up, &err) == 0 &&
	    update_build_upsert_doc(up, f, &ctx, &out, &err) == 0) {
		res = bson_as_relaxed_extended_json(&out, NULL);
		bson_destroy(&out);
	} else {
		*code = err.code;
		bson_strncpy(msg, err.msg ? err.msg : "", 512);
	}
	terr_clear(&err);
	update_free(up);
	bson_destroy(w);
	bson_destroy(f);
	bson_free(wrapped);
	return res;
}

#define UPSERT_OK(f, u, want) do { int c_; char m_[512]; char *j_ = upsert((f), (u), &c_, m_); \
	if (j_ == NULL) TT_FAIL_("upsert %s %s: %d %s", (f), (u), c_, m_); \
	else { TT_EQ_STR(j_, (want)); } bson_free(j_); } while (0)
#define UPSERT_ERR(f, u, wc, wm) do { int c_; char m_[512]; char *j_ = upsert((f), (u), &c_, m_); \
	if (j_ != NULL) { TT_FAIL_("upsert %s: want error, got %s", (u), j_); bson_free(j_); } \
	else { TT_EQ_INT(c_, (wc)); TT_EQ_STR(m_, (wm)); } } while (0)

static void
test_upsert_bucket_seed(void)
{
	/* bucket pattern: {bookId, hour} + $inc with computed names */
	UPSERT_OK("{\"bookId\": 26, \"hour\": {\"$date\": \"2026-06-30T09:00:00Z\"}, \"_id\": 7}",
	          "{\"$inc\": {\"count\": 1, \"byCountry.TR\": 1}}",
	          "{ \"_id\" : 7, \"bookId\" : 26, \"hour\" : { \"$date\" : \"2026-06-30T09:00:00Z\" }, "
	          "\"byCountry\" : { \"TR\" : 1 }, \"count\" : 1 }");
}

/* The bucket loop of the seed: 1000 views, one every 11 s from 09:00, into
 * hourly documents by upsert; the printed counts are MongoDB's. */
static void
test_bucket_loop(void)
{
	bson_t *docs[8];
	size_t ndocs = 0;
	const int64_t start = 1782810000000LL; /* 2026-06-30T09:00:00Z */
	const char *cc[] = {"TR", "GB", "DE"};
	update_t *ups[3];
	static const int want[4][4] = {{328, 110, 109, 109}, {327, 109, 109, 109},
	                               {327, 109, 109, 109}, {18, 6, 6, 6}};

	for (int k = 0; k < 3; k++) {
		char *j = bson_strdup_printf("{\"u\": {\"$inc\": {\"count\": 1, \"byCountry.%s\": 1}}}", cc[k]);
		bson_t *w = tt_json(j);
		bson_iter_t it;
		terr_t err = TERR_INIT;

		bson_iter_init_find(&it, w, "u");
		TT_ASSERT(update_compile(bson_iter_value(&it), NULL, &ups[k], &err) == 0);
		bson_destroy(w);
		bson_free(j);
	}
	for (int i = 0; i < 1000; i++) {
		int64_t at = start + (int64_t)i * 11 * 1000, hour = at / 3600000 * 3600000;
		bson_t filter, *hit = NULL, out;
		terr_t err = TERR_INIT;
		bool mod;
		size_t d;

		for (d = 0; d < ndocs; d++) {
			bson_iter_t it;

			if (bson_iter_init_find(&it, docs[d], "hour") && bson_iter_date_time(&it) == hour) {
				hit = docs[d];
				break;
			}
		}
		if (hit != NULL) {
			TT_ASSERT(update_apply(ups[i % 3], hit, NULL, &out, &mod, &err) == 0 && mod);
			bson_destroy(hit);
			docs[d] = bson_copy(&out);
			bson_destroy(&out);
		} else {
			bson_init(&filter);
			bson_append_int32(&filter, "bookId", -1, 26);
			bson_append_date_time(&filter, "hour", -1, hour);
			TT_ASSERT(update_build_upsert_doc(ups[i % 3], &filter, NULL, &out, &err) == 0);
			TT_ASSERT(ndocs < 8);
			docs[ndocs++] = bson_copy(&out);
			bson_destroy(&out);
			bson_destroy(&filter);
		}
	}
	TT_EQ_INT(ndocs, 4);
	for (size_t d = 0; d < ndocs && d < 4; d++) {
		bson_iter_t it;

		TT_ASSERT(bson_iter_init_find(&it, docs[d], "count") && bson_iter_int32(&it) == want[d][0]);
		for (int k = 0; k < 3; k++) {
			char path[32];

			bson_snprintf(path, sizeof path, "byCountry.%s", cc[k]);
			TT_ASSERT(bson_iter_init(&it, docs[d]) && bson_iter_find_descendant(&it, path, &it) &&
			          bson_iter_int32(&it) == want[d][k + 1]);
		}
		/* field order: _id, bookId, hour, then the $inc fields */
		{
			const char *order[] = {"_id", "bookId", "hour", "byCountry", "count"};
			int n = 0;

			bson_iter_init(&it, docs[d]);
			while (bson_iter_next(&it) && n < 5)
				TT_EQ_STR(bson_iter_key(&it), order[n++]);
		}
	}
	for (size_t d = 0; d < ndocs; d++)
		bson_destroy(docs[d]);
	for (int k = 0; k < 3; k++)
		update_free(ups[k]);
}

static void
test_upsert_seed_rules(void)
{
	UPSERT_OK("{\"_id\": 1, \"b\": 2, \"a\": {\"$eq\": 3}, \"c\": {\"$gt\": 1}}",
	          "{\"$set\": {\"z\": 1}}", "{ \"_id\" : 1, \"a\" : 3, \"b\" : 2, \"z\" : 1 }");
	UPSERT_OK("{\"_id\": 1, \"x.y\": 2, \"$and\": [{\"x.z\": 3}]}", "{\"$set\": {\"k\": 1}}",
	          "{ \"_id\" : 1, \"x\" : { \"y\" : 2, \"z\" : 3 }, \"k\" : 1 }");
	UPSERT_OK("{\"_id\": 1, \"$or\": [{\"a\": 1}, {\"a\": 2}]}", "{\"$set\": {\"k\": 1}}",
	          "{ \"_id\" : 1, \"k\" : 1 }");
	UPSERT_OK("{\"_id\": 1, \"a\": 1}", "{\"$setOnInsert\": {\"s\": 1}}",
	          "{ \"_id\" : 1, \"a\" : 1, \"s\" : 1 }");
	UPSERT_ERR("{\"a\": 1, \"$and\": [{\"a\": 2}]}", "{\"$set\": {\"k\": 1}}", 54,
	           "cannot infer query fields to set, path 'a' is matched twice");
	UPSERT_ERR("{\"a\": 1, \"a.b\": 2}", "{\"$set\": {\"k\": 1}}", 54,
	           "cannot infer query fields to set, both paths 'a.b' and 'a' are matched");
	UPSERT_ERR("{\"_id\": 1}", "{\"$set\": {\"_id\": 2}}", 66,
	           "Performing an update on the path '_id' would modify the immutable field '_id'");
	/* replacement upserts take only _id from the query */
	UPSERT_OK("{\"_id\": 5, \"a\": 1}", "{\"b\": 2}", "{ \"_id\" : 5, \"b\" : 2 }");
	UPSERT_ERR("{\"_id.x\": 5}", "{\"b\": 2}", 111,
	           "field at '_id' must be exactly specified, field at sub-path '_id.x'found");
	UPSERT_ERR("{\"_id\": 5}", "{\"_id\": 6}", 66,
	           "After applying the update, the (immutable) field '_id' was found to have been "
	           "altered to _id: 6");
	/* pipeline upserts */
	UPSERT_OK("{\"_id\": 5, \"a\": 2}", "[{\"$set\": {\"b\": {\"$add\": [\"$a\", 1]}}}]",
	          "{ \"_id\" : 5, \"a\" : 2, \"b\" : 3 }");
	{
		/* no _id anywhere: an ObjectId is generated first */
		int c;
		char m[512];
		char *j = upsert("{\"a\": 1}", "{\"$set\": {\"b\": 1}}", &c, m);

		TT_ASSERT(j != NULL && strncmp(j, "{ \"_id\" : { \"$oid\" : ", 21) == 0);
		bson_free(j);
	}
	UPSERT_ERR("{\"a\": 1}", "{\"$set\": {\"_id\": [1]}}", 53, "The '_id' value cannot be of type array");
	UPSERT_ERR("{\"$expr\": {\"$eq\": [\"$a\", 1]}}", "{\"$set\": {\"b\": 1}}", 224,
	           "$expr is not allowed in the query predicate for an upsert");
}

static void
test_upsert_seed_only(void)
{
	bson_t *f = tt_json("{\"b.c\": 1, \"_id\": 3, \"a\": {\"$in\": [2]}}");
	bson_t out;
	terr_t err = TERR_INIT;

	TT_ASSERT(update_build_upsert_seed(f, &out, &err) == 0);
	if (!terr_is_set(&err)) {
		TT_EQ_JSON(&out, "{ \"_id\" : 3, \"a\" : 2, \"b\" : { \"c\" : 1 } }");
		bson_destroy(&out);
	}
	terr_clear(&err);
	bson_destroy(f);
}

int
main(void)
{
	TT_RUN(test_computed_seed);
	TT_RUN(test_schema_versioning_seed);
	TT_RUN(test_pipeline_stages);
	TT_RUN(test_pipeline_let);
	TT_RUN(test_upsert_bucket_seed);
	TT_RUN(test_bucket_loop);
	TT_RUN(test_upsert_seed_rules);
	TT_RUN(test_upsert_seed_only);
	return tt_finish();
}
