/*
 * bench_schema.c -- what schema validation costs (issue 6), N = $BENCH_N
 * (default 1M) documents shaped like the reviews of the seed
 * (../shared/seeds/000_b0f4def502d08968.txt), through the embedded API:
 *
 *   insert_validated  batches of 1000 into a collection created with the
 *                     seed's reviewSchema validator (strict, error) against
 *                     the same batches into one without a validator; the
 *                     batches alternate between the two collections so that
 *                     both see the same machine load.  Ratio =
 *                     validated / unvalidated.
 *   constraint_scan   collMod {validationLevel: "constraint"} after
 *                     {prepareConstraintValidationLevel: true} on the
 *                     validated collection (docs checked/s) against a plain
 *                     full scan of the same collection (docs/s); three
 *                     rounds (back to strict in between), best of each.
 */
#include "bench_common.h"

#define DB "bench"
#define NA_RATE -1.0

/* The seed's reviewSchema, verbatim. */
static bson_t *
review_schema(void)
{
	return BCON_NEW("bsonType", "object",
	    "required", "[", "bookId", "customer", "rating", "reviewedAt", "]",
	    "properties", "{",
	    "bookId", "{", "bsonType", "int", "}",
	    "customer", "{", "bsonType", "object", "required", "[", "customerId", "name", "]",
	    "properties", "{", "customerId", "{", "bsonType", "int", "}",
	    "name", "{", "bsonType", "string", "minLength", BCON_INT32(1), "}", "}", "}",
	    "rating", "{", "bsonType", "int", "minimum", BCON_INT32(1), "maximum", BCON_INT32(5), "}",
	    "body", "{", "bsonType", "string", "maxLength", BCON_INT32(1000), "}",
	    "reviewedAt", "{", "bsonType", "date", "}",
	    "helpfulCount", "{", "bsonType", "int", "minimum", BCON_INT32(0), "}",
	    "helpfulVoters", "{", "bsonType", "array", "items", "{", "bsonType", "int", "}", "}",
	    "}");
}

/* A review as the seed writes them: bookId, customer {customerId, name},
 * rating 1..5, body, reviewedAt, helpfulCount, helpfulVoters; no _id (the
 * engine adds an ObjectId, as insertOne does).  About 200 bytes. */
static void
make_review(bson_t *d, int64_t i)
{
	static const char *const names[] = {"Ada Lovelace", "Linus Torvalds", "Margaret Hamilton",
	    "Grace Hopper", "Alan Turing"};
	static const char *const bodies[] = {"A classic.", "Re-read it after twenty years.",
	    "Slow start, great ending.", "Not for me, but well written.", "The best book in the series."};
	bson_t sub;
	char key[8];
	int k, voters = (int)(i % 4);

	bson_init(d);
	BSON_APPEND_INT32(d, "bookId", (int32_t)(i % 5000));
	bson_append_document_begin(d, "customer", -1, &sub);
	BSON_APPEND_INT32(&sub, "customerId", (int32_t)(i % 100000));
	BSON_APPEND_UTF8(&sub, "name", names[i % 5]);
	bson_append_document_end(d, &sub);
	BSON_APPEND_INT32(d, "rating", doc_rating(i));
	BSON_APPEND_UTF8(d, "body", bodies[(i / 5) % 5]);
	BSON_APPEND_DATE_TIME(d, "reviewedAt", BENCH_AT0 + i * 1000);
	BSON_APPEND_INT32(d, "helpfulCount", voters);
	bson_append_array_begin(d, "helpfulVoters", -1, &sub);
	for (k = 0; k < voters; k++) {
		snprintf(key, sizeof(key), "%d", k);
		BSON_APPEND_INT32(&sub, key, (int32_t)((i + k) % 100000));
	}
	bson_append_array_end(d, &sub);
}

static double
insert_batch(tamga_t *t, const char *coll, int64_t from, int64_t to)
{
	bson_t cmd, docs, d;
	char key[16];
	double t0 = now();
	int64_t j;

	bson_init(&cmd);
	BSON_APPEND_UTF8(&cmd, "insert", coll);
	bson_append_array_begin(&cmd, "documents", -1, &docs);
	for (j = from; j < to; j++) {
		snprintf(key, sizeof(key), "%d", (int)(j - from));
		make_review(&d, j);
		bson_append_document(&docs, key, -1, &d);
		bson_destroy(&d);
	}
	bson_append_array_end(&cmd, &docs);
	twrite(t, DB, &cmd, to - from, NULL, 0);
	bson_destroy(&cmd);
	return now() - t0;
}

int
main(int argc, char **argv)
{
	char path[4096], why[600];
	tamga_t *t;
	tamga_error_t e;
	bson_t *schema, *c, reply;
	double t_plain = 0, t_valid = 0, t0, scan, constraint;
	int64_t i, seen;
	int rc = 0, round;

	if (argc < 2)
		die("usage", "bench_schema WORKDIR");
	bench_read_n("bench_schema");
	snprintf(path, sizeof(path), "%s/tamga-schema", argv[1]);
	if (tamga_open(path, "create,cache_size=1G", &t, &e) != 0)
		die("tamga_open", e.message);

	schema = review_schema();
	c = BCON_NEW("create", "validated", "validator", "{", "$jsonSchema", BCON_DOCUMENT(schema), "}",
	    "validationLevel", "strict", "validationAction", "error");
	tcmd0(t, DB, c);
	bson_destroy(c);
	c = BCON_NEW("create", "plain");
	tcmd0(t, DB, c);
	bson_destroy(c);

	for (i = 0; i < N; i += 1000) {
		int64_t to = i + 1000 < N ? i + 1000 : N;
		if ((i / 1000) % 2 == 0) {
			t_plain += insert_batch(t, "plain", i, to);
			t_valid += insert_batch(t, "validated", i, to);
		} else {
			t_valid += insert_batch(t, "validated", i, to);
			t_plain += insert_batch(t, "plain", i, to);
		}
	}
	report("insert_validated", (double)N / t_valid, "tamga_no_validator", (double)N / t_plain);

	/* the constraint upgrade scan against a plain scan of the same data:
	 * three rounds (back to strict, prepare, upgrade), best of each */
	scan = constraint = NA_RATE;
	why[0] = '\0';
	for (round = 0; round < 3; round++) {
		double x;
		t0 = now();
		c = BCON_NEW("find", "validated", "batchSize", BCON_INT32(10000));
		tcmd(t, DB, c, &reply);
		bson_destroy(c);
		if ((seen = tdrain(t, DB, "validated", &reply, 10000)) != N)
			die("tamga scan", "wrong count");
		if ((x = (double)N / (now() - t0)) > scan)
			scan = x;

		if (round > 0) {
			c = BCON_NEW("collMod", "validated", "validationLevel", "strict");
			rc = ttry(t, DB, c, why, sizeof(why));
			bson_destroy(c);
			if (rc != 0)
				break;
		}
		c = BCON_NEW("collMod", "validated", "prepareConstraintValidationLevel", BCON_BOOL(true));
		rc = ttry(t, DB, c, why, sizeof(why));
		bson_destroy(c);
		if (rc != 0)
			break;
		c = BCON_NEW("collMod", "validated", "validationLevel", "constraint", "validationAction", "error");
		t0 = now();
		rc = ttry(t, DB, c, why, sizeof(why));
		x = (double)N / (now() - t0);
		bson_destroy(c);
		if (rc != 0)
			break;
		if (x > constraint)
			constraint = x;
	}
	if (constraint > 0)
		report("constraint_scan", constraint, "tamga_full_scan", scan);
	else
		report_na("constraint_scan", why, "tamga_full_scan", scan);
	if (rc != 0 && constraint > 0)
		fprintf(stderr, "bench_schema: constraint round %d: %s\n", round + 1, why);
	bson_destroy(schema);
	tamga_close(t);
	return 0;
}
