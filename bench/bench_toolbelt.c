/*
 * bench_toolbelt.c -- issue 20's targets, N = $BENCH_N (default 1M) reviews
 * shaped as the seed's (one in 1000 with a string rating):
 *
 *   preview_scan      tamgaValidationPreview with the seed's reviewSchema
 *                     over the collection (docs/s) against a plain full scan
 *                     of it (find {}, drained, docs/s); three rounds, best
 *                     of each.  Target: ratio >= 0.7.
 *   infer_full        tamgaInferSchema over all N documents, docs/s and
 *                     seconds.  Target: 1M in under 2 s.
 *   infer_sample      tamgaInferSchema with sample: BENCH_INFER_PEER_N (the
 *                     first 100 000) against the mongodb-schema npm package
 *                     on the same documents (bench_infer_peer.js, its rate in
 *                     BENCH_INFER_PEER from run.sh), docs/s.
 *   profiler_qstats   through tamgad (TAMGA_URI, libmongoc, one
 *                     connection): find by _id with profiling at level 1,
 *                     slowms 100 and $queryStats on
 *                     (internalQueryStatsRateLimit -1) against the same with
 *                     both off, rounds alternating, ops/s.  Target: ratio
 *                     >= 0.95.
 */
#include <mongoc/mongoc.h>

#include "bench_common.h"

#define DB "bench"

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

static void
make_review(bson_t *d, int64_t i)
{
	static const char *const names[] = {"Ada Lovelace", "Linus Torvalds", "Margaret Hamilton",
	    "Grace Hopper", "Alan Turing"};
	bson_t sub;
	char key[8];
	int voters = (int)(i % 4);

	bson_init(d);
	BSON_APPEND_INT64(d, "_id", i);
	BSON_APPEND_INT32(d, "bookId", (int32_t)(i % 5000));
	bson_append_document_begin(d, "customer", -1, &sub);
	BSON_APPEND_INT32(&sub, "customerId", (int32_t)(i % 100000));
	BSON_APPEND_UTF8(&sub, "name", names[i % 5]);
	bson_append_document_end(d, &sub);
	if (i % 1000 == 7)
		BSON_APPEND_UTF8(d, "rating", "5");     /* the legacy review */
	else
		BSON_APPEND_INT32(d, "rating", (int32_t)(1 + i % 5));
	BSON_APPEND_UTF8(d, "body", "Slow start, great ending.");
	BSON_APPEND_DATE_TIME(d, "reviewedAt", BENCH_AT0 + i * 1000);
	BSON_APPEND_INT32(d, "helpfulCount", voters);
	bson_append_array_begin(d, "helpfulVoters", -1, &sub);
	for (int k = 0; k < voters; k++) {
		snprintf(key, sizeof(key), "%d", k);
		BSON_APPEND_INT32(&sub, key, (int32_t)((i + k) % 100000));
	}
	bson_append_array_end(d, &sub);
}

static void
load(tamga_t *t, const char *coll)
{
	for (int64_t i = 0; i < N; i += 1000) {
		int64_t to = i + 1000 < N ? i + 1000 : N;
		bson_t cmd, docs, d;
		char key[16];
		bson_init(&cmd);
		BSON_APPEND_UTF8(&cmd, "insert", coll);
		bson_append_array_begin(&cmd, "documents", -1, &docs);
		for (int64_t j = i; j < to; j++) {
			snprintf(key, sizeof(key), "%d", (int)(j - i));
			make_review(&d, j);
			bson_append_document(&docs, key, -1, &d);
			bson_destroy(&d);
		}
		bson_append_array_end(&cmd, &docs);
		twrite(t, DB, &cmd, to - i, NULL, 0);
		bson_destroy(&cmd);
	}
}

static void
embedded_cases(const char *workdir)
{
	char path[4096], why[600];
	tamga_t *t;
	tamga_error_t e;
	bson_t *schema, *c, reply;
	double scan = -1, preview = -1, t0, x;
	bson_iter_t it;

	snprintf(path, sizeof(path), "%s/tamga-toolbelt", workdir);
	if (tamga_open(path, "create,cache_size=1G", &t, &e) != 0)
		die("tamga_open", e.message);
	load(t, "reviews");
	schema = review_schema();
	for (int round = 0; round < 3; round++) {
		t0 = now();
		c = BCON_NEW("find", "reviews", "batchSize", BCON_INT32(10000));
		tcmd(t, DB, c, &reply);
		bson_destroy(c);
		if (tdrain(t, DB, "reviews", &reply, 10000) != N)
			die("tamga scan", "wrong count");
		if ((x = (double)N / (now() - t0)) > scan)
			scan = x;
		c = BCON_NEW("tamgaValidationPreview", "reviews", "validator", "{", "$jsonSchema", BCON_DOCUMENT(schema),
		    "}");
		t0 = now();
		if (ttry(t, DB, c, why, sizeof(why)) != 0)
			die("tamgaValidationPreview", why);
		x = (double)N / (now() - t0);
		bson_destroy(c);
		if (x > preview)
			preview = x;
	}
	report("preview_scan", preview, "tamga_full_scan", scan);
	c = BCON_NEW("tamgaInferSchema", "reviews");
	t0 = now();
	tcmd(t, DB, c, &reply);
	x = now() - t0;
	if (!bson_iter_init_find(&it, &reply, "sampled") || bson_iter_as_int64(&it) != N)
		die("tamgaInferSchema", "wrong count");
	bson_destroy(&reply);
	bson_destroy(c);
	fprintf(stderr, "bench_toolbelt: tamgaInferSchema over %lld documents: %.2f s\n", (long long)N, x);
	printf("bench infer_full: tamga %.0f docs/s, %.2f s for %lld documents (target: 1M in under 2 s)\n",
	    (double)N / x, x, (long long)N);
	/* beside mongodb-schema (run.sh ran bench_infer_peer.js on the first
	 * BENCH_INFER_PEER_N documents of the same shape): the same count, sampled
	 * the same way (the first ones) */
	{
		const char *peer = getenv("BENCH_INFER_PEER"), *pn = getenv("BENCH_INFER_PEER_N");
		int64_t sample = pn != NULL ? atoll(pn) : 0;
		if (peer != NULL && sample > 0 && sample <= N) {
			c = BCON_NEW("tamgaInferSchema", "reviews", "sample", BCON_INT64(sample));
			t0 = now();
			tcmd(t, DB, c, &reply);
			x = now() - t0;
			bson_destroy(&reply);
			bson_destroy(c);
			report("infer_sample", (double)sample / x, "mongodb_schema", atof(peer));
		} else {
			report_peer_na("infer_sample", (double)N / x, "mongodb_schema",
			    "bench_infer_peer.js did not run (no node or no mongodb-schema in tests/clients)");
		}
	}
	bson_destroy(schema);
	tamga_close(t);
}

/* ---- through tamgad -------------------------------------------------------------- */

static bool
admin_cmd(mongoc_client_t *cl, bson_t *cmd)
{
	bson_error_t err;
	bool ok = mongoc_client_command_simple(cl, "admin", cmd, NULL, NULL, &err);

	if (!ok)
		fprintf(stderr, "bench_toolbelt: %s\n", err.message);
	bson_destroy(cmd);
	return ok;
}

static double
find_ids(mongoc_collection_t *coll, int64_t keys, double seconds)
{
	rng_t r;
	int64_t n = 0;
	double t0 = now(), end = t0 + seconds;

	rnd_reset(&r, 42);
	while (now() < end) {
		for (int k = 0; k < 200; k++) {
			bson_t *f = BCON_NEW("_id", BCON_INT64(rnd(&r, keys)));
			mongoc_cursor_t *cur = mongoc_collection_find_with_opts(coll, f, NULL, NULL);
			const bson_t *doc;
			while (mongoc_cursor_next(cur, &doc))
				;
			mongoc_cursor_destroy(cur);
			bson_destroy(f);
			n++;
		}
	}
	return (double)n / (now() - t0);
}

static void
wire_case(void)
{
	const char *uri_s = getenv("TAMGA_URI");
	mongoc_client_t *cl;
	mongoc_collection_t *coll;
	bson_error_t err;
	int64_t keys = N / 10 > 10000 ? N / 10 : 10000;
	double on = -1, off = -1, secs = 3;

	if (uri_s == NULL) {
		report_na("profiler_qstats", "no TAMGA_URI", NULL, -1);
		return;
	}
	mongoc_init();
	cl = mongoc_client_new(uri_s);
	coll = mongoc_client_get_collection(cl, DB, "toolbelt_ids");
	mongoc_collection_drop(coll, NULL);
	for (int64_t i = 0; i < keys; i += 1000) {
		bson_t *docs[1000];
		int n = 0;
		for (int64_t j = i; j < i + 1000 && j < keys; j++) {
			docs[n] = bson_new();
			BSON_APPEND_INT64(docs[n], "_id", j);
			BSON_APPEND_UTF8(docs[n], "v", "a value of some twenty bytes");
			n++;
		}
		if (!mongoc_collection_insert_many(coll, (const bson_t **)docs, (size_t)n, NULL, NULL, &err))
			die("insert_many", err.message);
		for (int k = 0; k < n; k++)
			bson_destroy(docs[k]);
	}
	/* six rounds, the side that goes first alternating (background work
	 * such as the journal flush must not favour one side), best of each */
	for (int round = 0; round < 6; round++) {
		for (int side = 0; side < 2; side++) {
			bool turn_on = (side == 0) == (round % 2 == 0);
			/* BENCH_TOOLBELT_ON=profiler or qstats: only that one on (to
			 * tell their costs apart); default both */
			const char *which = getenv("BENCH_TOOLBELT_ON");
			bool none = which != NULL && strcmp(which, "none") == 0;   /* the noise floor */
			bool prof_on = turn_on && !none && !(which != NULL && strcmp(which, "qstats") == 0);
			bool qs_on = turn_on && !none && !(which != NULL && strcmp(which, "profiler") == 0);
			double x;
			bson_t *c = BCON_NEW("profile", BCON_INT32(prof_on ? 1 : 0), "slowms", BCON_INT32(100));
			mongoc_client_command_simple(cl, DB, c, NULL, NULL, &err);
			bson_destroy(c);
			admin_cmd(cl, BCON_NEW("setParameter", BCON_INT32(1), "internalQueryStatsRateLimit",
			    BCON_INT32(qs_on ? -1 : 0)));
			x = find_ids(coll, keys, secs / 2);
			if (turn_on && x > on)
				on = x;
			if (!turn_on && x > off)
				off = x;
		}
	}
	report("profiler_qstats", on, "tamga_profiler_off", off);
	mongoc_collection_drop(coll, NULL);
	mongoc_collection_destroy(coll);
	mongoc_client_destroy(cl);
	mongoc_cleanup();
}

int
main(int argc, char **argv)
{
	if (argc < 2)
		die("usage", "bench_toolbelt WORKDIR");
	bench_read_n("bench_toolbelt");
	embedded_cases(argv[1]);
	wire_case();
	return 0;
}
