/*
 * bench_text.c -- $text over N = $BENCH_N (default 1M) short review bodies
 * (issue 18's target), through the embedded API, next to PostgreSQL's
 * tsvector + GIN on the same texts:
 *
 *   text_search_top10  a two-word search, the 10 best by relevance: Tamga
 *                      find({$text: {$search: "a b"}}, {score: {$meta:
 *                      "textScore"}}).sort({score: {$meta: "textScore"}})
 *                      .limit(10) on a {body: "text"} index; PostgreSQL
 *                      SELECT ... WHERE tsv @@ to_tsquery('english', 'a | b')
 *                      ORDER BY ts_rank(tsv, q) DESC LIMIT 10 on a GIN index
 *                      of to_tsvector('english', body).  Queries/s over
 *                      BENCH_SECONDS (default 10) per side, the same word
 *                      pairs in the same order.
 *
 * Bodies are 4 to 9 words drawn (skewed) from a 3000-word vocabulary plus
 * English stop words, so each query word is in a few thousand documents.
 */
#include <libpq-fe.h>

#include "bench_common.h"
#include "bench_pg.h"

#define DB "bench"
#define VOCAB 3000

static const char *const stop[] = {"the", "a", "and", "of", "but", "it", "was", "very", "too", "in"};

static void
word(char *out, size_t cap, int64_t k)
{
	/* letters only, so both stemmers keep them apart */
	static const char *const syl[] = {"ka", "lo", "mi", "ru", "te", "sa", "vo", "ni", "pe", "zu"};
	snprintf(out, cap, "%s%s%s", syl[k % 10], syl[(k / 10) % 10], syl[(k / 100) % 10 + 0]);
	if (k >= 1000) {
		size_t n = strlen(out);
		snprintf(out + n, cap - n, "%s", syl[(k / 1000) % 10]);
	}
}

static int64_t
skewed(rng_t *r)
{
	int64_t a = rnd(r, VOCAB), b = rnd(r, VOCAB);
	return a < b ? a : b;   /* small ranks more often */
}

static void
make_body(char *out, size_t cap, int64_t i)
{
	rng_t r;
	int n, k;
	size_t len = 0;

	rnd_reset(&r, mix64((uint64_t)i + 1));
	n = 4 + (int)rnd(&r, 6);
	out[0] = '\0';
	for (k = 0; k < n && len + 16 < cap; k++) {
		char w[16];
		if (rnd(&r, 4) == 0)
			snprintf(w, sizeof(w), "%s", stop[rnd(&r, 10)]);
		else
			word(w, sizeof(w), skewed(&r));
		len += (size_t)snprintf(out + len, cap - len, "%s%s", k ? " " : "", w);
	}
	if (len + 2 < cap)
		strcat(out, ".");
}

static void
load_tamga(tamga_t *t)
{
	int64_t i, j;
	char body[160], key[16];

	for (i = 0; i < N; i += 1000) {
		bson_t cmd, docs, d;
		bson_init(&cmd);
		BSON_APPEND_UTF8(&cmd, "insert", "reviews");
		bson_append_array_begin(&cmd, "documents", -1, &docs);
		for (j = i; j < i + 1000 && j < N; j++) {
			make_body(body, sizeof(body), j);
			snprintf(key, sizeof(key), "%d", (int)(j - i));
			bson_init(&d);
			BSON_APPEND_INT64(&d, "_id", j);
			BSON_APPEND_UTF8(&d, "body", body);
			bson_append_document(&docs, key, -1, &d);
			bson_destroy(&d);
		}
		bson_append_array_end(&cmd, &docs);
		twrite(t, DB, &cmd, (j - i), NULL, 0);
		bson_destroy(&cmd);
	}
	{
		bson_t *c = BCON_NEW("createIndexes", "reviews", "indexes", "[", "{", "key", "{", "body", "text", "}",
		    "name", "body_text", "}", "]");
		tcmd0(t, DB, c);
		bson_destroy(c);
	}
}

static void
load_pg(PGconn *c)
{
	char line[200], body[160];
	PGresult *r;
	int64_t i;

	pg_exec(c, "DROP TABLE IF EXISTS reviews; CREATE TABLE reviews (id bigint PRIMARY KEY, body text NOT NULL, "
	    "tsv tsvector GENERATED ALWAYS AS (to_tsvector('english', body)) STORED)");
	r = PQexec(c, "COPY reviews (id, body) FROM STDIN");
	if (PQresultStatus(r) != PGRES_COPY_IN)
		die("postgresql copy", PQresultErrorMessage(r));
	PQclear(r);
	for (i = 0; i < N; i++) {
		int len;
		make_body(body, sizeof(body), i);
		len = snprintf(line, sizeof(line), "%lld\t%s\n", (long long)i, body);
		if (PQputCopyData(c, line, len) != 1)
			die("postgresql copy", PQerrorMessage(c));
	}
	if (PQputCopyEnd(c, NULL) != 1)
		die("postgresql copy end", PQerrorMessage(c));
	while ((r = PQgetResult(c)) != NULL) {
		pg_check(c, r, "postgresql copy");
		PQclear(r);
	}
	pg_exec(c, "CREATE INDEX reviews_tsv ON reviews USING gin (tsv)");
	pg_exec(c, "VACUUM ANALYZE reviews");
	pg_exec(c, "CHECKPOINT");
}

static double
seconds(void)
{
	const char *s = getenv("BENCH_SECONDS");
	return s != NULL && atof(s) > 0 ? atof(s) : 10;
}

/* The k-th query's two words. */
static void
query_words(int64_t k, char *a, char *b)
{
	rng_t r;

	rnd_reset(&r, mix64((uint64_t)k + 77));
	word(a, 16, 100 + rnd(&r, 400));
	word(b, 16, 100 + rnd(&r, 400));
}

static double
run_tamga(tamga_t *t, double limit)
{
	double t0 = now();
	int64_t k = 0;

	while (now() - t0 < limit) {
		char a[16], b[16], q[40];
		bson_t *c, reply;
		query_words(k++, a, b);
		snprintf(q, sizeof(q), "%s %s", a, b);
		c = BCON_NEW("find", "reviews", "filter", "{", "$text", "{", "$search", BCON_UTF8(q), "}", "}",
		    "projection", "{", "score", "{", "$meta", "textScore", "}", "}",
		    "sort", "{", "score", "{", "$meta", "textScore", "}", "}", "limit", BCON_INT32(10));
		tcmd(t, DB, c, &reply);
		if (tdrain(t, DB, "reviews", &reply, 10) > 10)
			die("tamga", "more than 10 results");
		bson_destroy(c);
	}
	return (double)k / (now() - t0);
}

static double
run_pg(PGconn *c, double limit)
{
	double t0 = now();
	int64_t k = 0;
	PGresult *r = PQprepare(c, "q", "SELECT id, ts_rank(tsv, q) AS rank FROM reviews, to_tsquery('english', $1) q "
	    "WHERE tsv @@ q ORDER BY rank DESC LIMIT 10", 1, NULL);

	pg_check(c, r, "postgresql prepare");
	PQclear(r);
	while (now() - t0 < limit) {
		char a[16], b[16], q[40];
		const char *params[1] = {q};
		query_words(k++, a, b);
		snprintf(q, sizeof(q), "%s | %s", a, b);
		r = PQexecPrepared(c, "q", 1, params, NULL, NULL, 0);
		pg_check(c, r, "postgresql query");
		PQclear(r);
	}
	return (double)k / (now() - t0);
}

int
main(int argc, char **argv)
{
	char path[4096], why[600];
	tamga_t *t;
	tamga_error_t e;
	PGconn *pc;
	double lim = seconds(), tq, pq = -1;

	if (argc < 2)
		die("usage", "bench_text WORKDIR");
	bench_read_n("bench_text");
	snprintf(path, sizeof(path), "%s/tamga-text", argv[1]);
	if (tamga_open(path, "create,cache_size=1G", &t, &e) != 0)
		die("tamga_open", e.message);
	load_tamga(t);
	tq = run_tamga(t, lim);
	tamga_close(t);
	if ((pc = pg_connect(why, sizeof(why))) != NULL) {
		load_pg(pc);
		pq = run_pg(pc, lim);
		PQfinish(pc);
		report("text_search_top10", tq, "postgresql_tsvector_gin", pq);
	} else {
		printf("bench text_search_top10: tamga %.0f, postgresql not available (%s)\n", tq, why);
	}
	return 0;
}
