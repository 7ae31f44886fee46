/*
 * bench_js.c -- server-side JavaScript (issue 22's target): a $where over
 * 100k documents next to the same filter as $expr, through the embedded
 * API (one thread, so the JavaScript engine is the thread's, created once
 * and reused by every run).  Prints
 *   bench where_100k: tamga <docs/s scanned by $where>, expr <docs/s by $expr>, ratio <where/expr>
 * and the count each side matched (they must agree).
 */
#include "bench_common.h"

#define DB "bench_js"

static int64_t
count(tamga_t *t, const bson_t *query)
{
	bson_t cmd = BSON_INITIALIZER, reply;
	tamga_error_t e;
	bson_iter_t it;
	int64_t n = -1;

	BSON_APPEND_UTF8(&cmd, "count", "docs");
	BSON_APPEND_DOCUMENT(&cmd, "query", query);
	if (tamga_run_command(t, DB, &cmd, &reply, &e) != 0)
		die("count", e.message);
	if (bson_iter_init_find(&it, &reply, "n"))
		n = bson_iter_as_int64(&it);
	bson_destroy(&reply);
	bson_destroy(&cmd);
	return n;
}

/* best of three runs, in documents scanned per second */
static double
rate(tamga_t *t, const bson_t *query, int64_t n, int64_t *matched)
{
	double best = 0;

	for (int r = 0; r < 3; r++) {
		double t0 = now();
		*matched = count(t, query);
		double dt = now() - t0;
		if (dt > 0 && (double)n / dt > best)
			best = (double)n / dt;
	}
	return best;
}

int
main(int argc, char **argv)
{
	char path[4096];
	tamga_t *t;
	tamga_error_t e;
	int64_t n, i, j, mw = 0, me = 0;
	double where, expr;

	if (argc < 2)
		die("usage", "bench_js WORKDIR");
	bench_read_n("bench_js");
	n = N < 100000 ? N : 100000;
	snprintf(path, sizeof(path), "%s/tamga-js", argv[1]);
	if (tamga_open(path, "create,cache_size=1G", &t, &e) != 0)
		die("tamga_open", e.message);
	for (i = 0; i < n; i += 1000) {
		bson_t cmd, docs, d;
		char key[16];
		bson_init(&cmd);
		BSON_APPEND_UTF8(&cmd, "insert", "docs");
		bson_append_array_begin(&cmd, "documents", -1, &docs);
		for (j = i; j < i + 1000 && j < n; j++) {
			snprintf(key, sizeof(key), "%d", (int)(j - i));
			bson_append_document_begin(&docs, key, -1, &d);
			BSON_APPEND_INT64(&d, "_id", j);
			BSON_APPEND_INT32(&d, "rating", doc_rating(j));
			BSON_APPEND_UTF8(&d, "country", bench_countries[j % 5]);
			BSON_APPEND_DOUBLE(&d, "score", doc_score(j));
			BSON_APPEND_UTF8(&d, "title", "a title of some thirty bytes..");
			bson_append_document_end(&docs, &d);
		}
		bson_append_array_end(&cmd, &docs);
		twrite(t, DB, &cmd, j - i, NULL, 0);
		bson_destroy(&cmd);
	}
	{
		bson_t *w = BCON_NEW("$where", BCON_UTF8("this.rating >= 3 && this.country == 'TR'"));
		bson_t *x = BCON_NEW("$expr", "{", "$and", "[",
		    "{", "$gte", "[", BCON_UTF8("$rating"), BCON_INT32(3), "]", "}",
		    "{", "$eq", "[", BCON_UTF8("$country"), BCON_UTF8("TR"), "]", "}", "]", "}");
		where = rate(t, w, n, &mw);
		expr = rate(t, x, n, &me);
		bson_destroy(w);
		bson_destroy(x);
	}
	if (mw != me)
		fprintf(stderr, "bench_js: $where matched %lld, $expr %lld\n", (long long)mw, (long long)me);
	fprintf(stderr, "bench_js: %lld documents, %lld matched\n", (long long)n, (long long)mw);
	report("where_100k", where, "expr", expr);
	tamga_close(t);
	return mw == me ? 0 : 1;
}
