/*
 * test_update_embedded.c -- the seed article's update examples end to end
 * through the embedded API (update command over the update engine): the
 * computed pattern's pipeline update, the subset pattern's $push with
 * $each/$sort/$slice, the bucket pattern's 1000 upserts and the schema
 * versioning migration in batches, checked against the printed results.
 */
#include "tt.h"

#include "tt_embedded.h"

static tamga_t *db;

static bson_t *
run(const char *json, int *rc)
{
	return tt_run_json(db, "bookstore", json, rc);
}

static bson_t *
run_bson(const bson_t *cmd, int *rc)
{
	return tt_run_bson(db, "bookstore", cmd, rc);
}

static void
test_computed(void)
{
	int rc;
	bson_t *r;

	r = run("{\"insert\": \"books\", \"documents\": [{\"_id\": 26, \"title\": \"Dune\", \"rating\": "
	        "{\"count\": 5, \"sum\": 22, \"average\": 4.4}}]}", &rc);
	TT_EQ_INT(tt_get_i64(r, "n"), 1);
	tt_free_reply(r);
	r = run("{\"update\": \"books\", \"updates\": [{\"q\": {\"_id\": 26}, \"u\": ["
	        "{\"$set\": {\"rating.count\": {\"$add\": [\"$rating.count\", 1]}, \"rating.sum\": "
	        "{\"$add\": [\"$rating.sum\", 5]}}},"
	        "{\"$set\": {\"rating.average\": {\"$round\": [{\"$divide\": [\"$rating.sum\", "
	        "\"$rating.count\"]}, 2]}}}]}]}", &rc);
	TT_EQ_INT(rc, 0);
	TT_EQ_INT(tt_get_i64(r, "n"), 1);
	TT_EQ_INT(tt_get_i64(r, "nModified"), 1);
	tt_free_reply(r);
	r = run("{\"find\": \"books\", \"filter\": {\"_id\": 26}}", &rc);
	TT_EQ_INT(tt_get_i64(r, "cursor.firstBatch.0.rating.count"), 6);
	TT_EQ_INT(tt_get_i64(r, "cursor.firstBatch.0.rating.sum"), 27);
	TT_ASSERT(tt_get_dbl(r, "cursor.firstBatch.0.rating.average") == 4.5);
	tt_free_reply(r);
}

static void
test_subset(void)
{
	int rc;
	bson_t *r;

	r = run("{\"update\": \"books\", \"updates\": [{\"q\": {\"_id\": 26}, \"u\": {\"$set\": "
	        "{\"recentReviews\": ["
	        "{\"rating\": 5, \"customer\": {\"name\": \"Linus Torvalds\"}, \"reviewedAt\": {\"$date\": \"2026-06-30T10:00:00Z\"}},"
	        "{\"rating\": 4, \"customer\": {\"name\": \"Adele Goldberg\"}, \"reviewedAt\": {\"$date\": \"2026-05-04T01:49:15Z\"}},"
	        "{\"rating\": 3, \"customer\": {\"name\": \"Grace Hopper\"}, \"reviewedAt\": {\"$date\": \"2026-01-02T00:00:00Z\"}}]}}}]}",
	        &rc);
	TT_EQ_INT(tt_get_i64(r, "nModified"), 1);
	tt_free_reply(r);
	r = run("{\"update\": \"books\", \"updates\": [{\"q\": {\"_id\": 26}, \"u\": {\"$push\": "
	        "{\"recentReviews\": {\"$each\": [{\"rating\": 4, \"body\": \"Slow start, great ending.\", "
	        "\"customer\": {\"name\": \"Ada Lovelace\"}, \"reviewedAt\": {\"$date\": \"2026-06-30T12:00:00Z\"}}], "
	        "\"$sort\": {\"reviewedAt\": -1}, \"$slice\": 3}}}}]}", &rc);
	TT_EQ_INT(tt_get_i64(r, "nModified"), 1);
	tt_free_reply(r);
	r = run("{\"find\": \"books\", \"filter\": {\"_id\": 26}}", &rc);
	TT_EQ_STR(tt_get_str(r, "cursor.firstBatch.0.recentReviews.0.customer.name"), "Ada Lovelace");
	TT_EQ_STR(tt_get_str(r, "cursor.firstBatch.0.recentReviews.1.customer.name"), "Linus Torvalds");
	TT_EQ_STR(tt_get_str(r, "cursor.firstBatch.0.recentReviews.2.customer.name"), "Adele Goldberg");
	TT_EQ_STR(tt_get_str(r, "cursor.firstBatch.0.recentReviews.3.customer.name"), "");
	tt_free_reply(r);
}

static void
test_bucket(void)
{
	const int64_t start = 1782810000000LL; /* 2026-06-30T09:00:00Z */
	const char *cc[] = {"TR", "GB", "DE"};
	static const int want[4][4] = {{328, 110, 109, 109}, {327, 109, 109, 109},
	                               {327, 109, 109, 109}, {18, 6, 6, 6}};
	int rc;
	bson_t *r;

	for (int i = 0; i < 1000; i++) {
		int64_t at = start + (int64_t)i * 11 * 1000, hour = at / 3600000 * 3600000;
		char field[32];
		bson_t *cmd = bson_new();

		bson_snprintf(field, sizeof field, "byCountry.%s", cc[i % 3]);
		/* as mongosh's updateOne(..., {upsert: true}) sends it; every 7th
		 * through findAndModify, whose upsert path is separate */
		if (i % 7 == 0)
			BCON_APPEND(cmd, "findAndModify", "book_views",
			            "query", "{", "bookId", BCON_INT32(26), "hour", BCON_DATE_TIME(hour), "}",
			            "update", "{", "$inc", "{", "count", BCON_INT32(1), field, BCON_INT32(1), "}", "}",
			            "upsert", BCON_BOOL(true));
		else
			BCON_APPEND(cmd, "update", "book_views", "updates", "[", "{",
			            "q", "{", "bookId", BCON_INT32(26), "hour", BCON_DATE_TIME(hour), "}",
			            "u", "{", "$inc", "{", "count", BCON_INT32(1), field, BCON_INT32(1), "}", "}",
			            "upsert", BCON_BOOL(true), "}", "]");
		r = run_bson(cmd, &rc);
		if (rc != 0 || tt_get_i64(r, i % 7 == 0 ? "lastErrorObject.n" : "n") != 1) {
			TT_FAIL_("upsert %d failed", i);
			tt_free_reply(r);
			bson_destroy(cmd);
			break;
		}
		tt_free_reply(r);
		bson_destroy(cmd);
	}
	r = run("{\"count\": \"book_views\"}", &rc);
	TT_EQ_INT(tt_get_i64(r, "n"), 4);
	tt_free_reply(r);
	r = run("{\"find\": \"book_views\", \"filter\": {}, \"sort\": {\"hour\": 1}}", &rc);
	for (int d = 0; d < 4; d++) {
		char p[64];

		bson_snprintf(p, sizeof p, "cursor.firstBatch.%d.count", d);
		TT_EQ_INT(tt_get_i64(r, p), want[d][0]);
		for (int k = 0; k < 3; k++) {
			bson_snprintf(p, sizeof p, "cursor.firstBatch.%d.byCountry.%s", d, cc[k]);
			TT_EQ_INT(tt_get_i64(r, p), want[d][k + 1]);
		}
	}
	tt_free_reply(r);
}

static void
test_schema_versioning(void)
{
	int rc, migrated = 0, batches[8], nb = 0;
	bson_t *r, *cmd = bson_new(), arr;

	/* 40 customers; customer 3 already on v2 */
	bson_append_utf8(cmd, "insert", -1, "customers", -1);
	bson_append_array_begin(cmd, "documents", -1, &arr);
	for (int i = 1; i <= 40; i++) {
		char key[16];
		bson_t d;

		bson_snprintf(key, sizeof key, "%d", i - 1);
		bson_append_document_begin(&arr, key, -1, &d);
		bson_append_int32(&d, "_id", -1, i);
		bson_append_utf8(&d, "firstName", -1, i == 2 ? "Alan" : "X", -1);
		if (i == 3) {
			bson_t a;

			bson_append_int32(&d, "schemaVersion", -1, 2);
			bson_append_document_begin(&d, "address", -1, &a);
			bson_append_utf8(&a, "city", -1, "Istanbul", -1);
			bson_append_utf8(&a, "country", -1, "TR", -1);
			bson_append_document_end(&d, &a);
		} else {
			bson_append_utf8(&d, "city", -1, i == 2 ? "Berlin" : "Paris", -1);
			bson_append_utf8(&d, "country", -1, i == 2 ? "DE" : "FR", -1);
		}
		bson_append_document_end(&arr, &d);
	}
	bson_append_array_end(cmd, &arr);
	r = run_bson(cmd, &rc);
	TT_EQ_INT(tt_get_i64(r, "n"), 40);
	tt_free_reply(r);
	bson_destroy(cmd);
	for (;;) {
		bson_iter_t it, b;
		bson_t ids, *u;
		int n = 0;

		r = run("{\"find\": \"customers\", \"filter\": {\"schemaVersion\": {\"$exists\": false}}, "
		        "\"projection\": {\"_id\": 1}, \"limit\": 15}", &rc);
		bson_init(&ids);
		if (tt_get(r, "cursor.firstBatch", &it) && bson_iter_recurse(&it, &b)) {
			while (bson_iter_next(&b)) {
				bson_iter_t id;
				char key[16];

				bson_iter_recurse(&b, &id);
				bson_iter_find(&id, "_id");
				bson_snprintf(key, sizeof key, "%d", n++);
				bson_append_value(&ids, key, -1, bson_iter_value(&id));
			}
		}
		tt_free_reply(r);
		if (n == 0 || nb == 8) {
			bson_destroy(&ids);
			break;
		}
		u = BCON_NEW("update", "customers", "updates", "[", "{",
		             "q", "{", "_id", "{", "$in", BCON_ARRAY(&ids), "}",
		             "schemaVersion", "{", "$exists", BCON_BOOL(false), "}", "}",
		             "u", "[",
		             "{", "$set", "{", "schemaVersion", BCON_INT32(2), "address", "{",
		             "city", BCON_UTF8("$city"), "country", BCON_UTF8("$country"), "}", "}", "}",
		             "{", "$unset", "[", BCON_UTF8("city"), BCON_UTF8("country"), "]", "}",
		             "]", "multi", BCON_BOOL(true), "}", "]");
		r = run_bson(u, &rc);
		batches[nb++] = (int)tt_get_i64(r, "nModified");
		migrated += batches[nb - 1];
		tt_free_reply(r);
		bson_destroy(u);
		bson_destroy(&ids);
	}
	TT_EQ_INT(nb, 3);
	if (nb == 3) {
		TT_EQ_INT(batches[0], 15);
		TT_EQ_INT(batches[1], 15);
		TT_EQ_INT(batches[2], 9);
	}
	TT_EQ_INT(migrated, 39);
	r = run("{\"find\": \"customers\", \"filter\": {\"_id\": 2}}", &rc);
	TT_EQ_STR(tt_get_str(r, "cursor.firstBatch.0.firstName"), "Alan");
	TT_EQ_INT(tt_get_i64(r, "cursor.firstBatch.0.schemaVersion"), 2);
	TT_EQ_STR(tt_get_str(r, "cursor.firstBatch.0.address.city"), "Berlin");
	TT_EQ_STR(tt_get_str(r, "cursor.firstBatch.0.address.country"), "DE");
	TT_EQ_STR(tt_get_str(r, "cursor.firstBatch.0.city"), "");
	tt_free_reply(r);
}

static void
test_errors_leave_documents(void)
{
	int rc;
	bson_t *r;

	r = run("{\"insert\": \"e\", \"documents\": [{\"_id\": 1, \"a\": \"x\", \"n\": 1}]}", &rc);
	tt_free_reply(r);
	r = run("{\"update\": \"e\", \"updates\": [{\"q\": {\"_id\": 1}, \"u\": {\"$inc\": {\"n\": 1, \"a\": 1}}}]}",
	        &rc);
	TT_EQ_INT(tt_get_i64(r, "writeErrors.0.code"), 14);
	TT_EQ_INT(tt_get_i64(r, "nModified"), 0);
	tt_free_reply(r);
	r = run("{\"update\": \"e\", \"updates\": [{\"q\": {\"_id\": 1}, \"u\": {\"$set\": {\"_id\": 2}}}]}", &rc);
	TT_EQ_INT(tt_get_i64(r, "writeErrors.0.code"), 66);
	tt_free_reply(r);
	r = run("{\"update\": \"e\", \"updates\": [{\"q\": {\"_id\": 1}, \"u\": {\"$bogus\": {\"n\": 1}}}]}", &rc);
	TT_EQ_INT(tt_get_i64(r, "writeErrors.0.code"), 9);
	tt_free_reply(r);
	r = run("{\"find\": \"e\", \"filter\": {\"_id\": 1}}", &rc);
	TT_EQ_INT(tt_get_i64(r, "cursor.firstBatch.0.n"), 1);
	TT_EQ_STR(tt_get_str(r, "cursor.firstBatch.0.a"), "x");
	tt_free_reply(r);
}

int
main(void)
{
	char *dir = tt_tmpdir("update-embedded");

	if ((db = tt_open_new(dir)) == NULL)
		return 1;
	TT_RUN(test_computed);
	TT_RUN(test_subset);
	TT_RUN(test_bucket);
	TT_RUN(test_schema_versioning);
	TT_RUN(test_errors_leave_documents);
	tt_close_rm(db, dir);
	return tt_finish();
}
