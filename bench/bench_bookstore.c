/*
 * bench_bookstore.c -- the seed's bookstore queries, the case a user runs
 * first (issue 23): tamgad through the MongoDB C driver against PostgreSQL 15
 * through libpq, one connection each over TCP loopback (TAMGA_URI,
 * BENCH_PG, started by bench/run.sh), with the same data modelled two ways
 * on the PostgreSQL side: relationally (tables and columns, the reviews a
 * table of their own) and as jsonb documents (one `doc jsonb` column per
 * table, expression indexes on the fields the queries use).
 *
 * Size: B = $BENCH_BOOKS books (default $BENCH_N, default 1 000 000), 10 B
 * reviews, 48 hourly view buckets for each of min(B, 20 000) books, B
 * orders.  The indexes are the ones the seed's scripts create.  Cases:
 *   bookstore_book_card     the book page's document by _id, with the subset
 *                           pattern's last three reviews in it (03-subset.js);
 *                           relational: the book row joined with its three
 *                           latest review rows (LATERAL ... LIMIT 3); jsonb:
 *                           the book's document by id.  queries/s
 *   bookstore_last_reviews  find({bookId}).sort({reviewedAt: -1}).limit(3),
 *                           projected (14-recent-reviews.js), index
 *                           {bookId: 1, reviewedAt: -1} / (book_id,
 *                           reviewed_at DESC) / the same on jsonb
 *                           expressions.  queries/s
 *   bookstore_views_chart   one day of a book's hourly buckets (04-bucket.js),
 *                           find({bookId, hour: {$gte, $lt}}).sort({hour: 1}):
 *                           24 documents / rows.  queries/s
 *   bookstore_archive_move  the archive pattern (07-archive.js): closed
 *                           orders before the cutoff (about a fifth) copied
 *                           to orders_archive ($match + $merge / INSERT ...
 *                           SELECT) and deleted (deleteMany / DELETE, in one
 *                           transaction on PostgreSQL).  orders moved/s
 * Each read case: three rounds of the same random books, the sides
 * alternating, best round; each side stops at B/10 queries (at least 2000) or
 * $BENCH_SECONDS (default 10) over the three rounds.  Every answer is
 * checked (three reviews newest first, 24 buckets in order, the moved and
 * remaining counts), a wrong one stops the program.  Lines:
 *   bench <case>: tamga <ops/s>, postgresql <ops/s>, ratio <tamga/postgresql>
 *   bench <case>: tamga <ops/s>, postgresql_jsonb <ops/s>, ratio <...>
 */
#include <mongoc/mongoc.h>

#include "bench_common.h"
#include "bench_pg.h"

#define DB "bookstore"
#define NA -1.0
#define T0 1751328000000LL           /* 2025-07-01T00:00:00Z: the archive cutoff */
#define HOUR 3600000LL
#define VIEW_HOURS 48

static int64_t B, R, V, O;           /* books, reviews, books with views, orders */
static double max_seconds = 10;
static mongoc_client_t *client;
static mongoc_database_t *mdb;
static char tamga_why[300], pg_why[300];

/* ---- the data, from i alone ---------------------------------------------- */

static const char *const names[] = {"Ada Lovelace", "Linus Torvalds", "Margaret Hamilton", "Grace Hopper",
    "Alan Turing"};
static const char *const bodies[] = {"A classic.", "Re-read it after twenty years.", "Slow start, great ending.",
    "Not for me, but well written.", "The best book in the series."};
static const char *const statuses[] = {"Delivered", "Cancelled", "Shipped", "Pending", "Delivered"};

/* review r: book r % B, the 10 reviews of a book 1 to 10 days apart */
static int64_t rv_book(int64_t r) { return r % B; }
static int64_t rv_at(int64_t r) { return T0 - (int64_t)(mix64((uint64_t)r) % (400LL * 24)) * HOUR - r / B * 1000; }
static int32_t rv_rating(int64_t r) { return doc_rating(r); }
static const char *rv_body(int64_t r) { return bodies[(r / 7) % 5]; }
static const char *rv_name(int64_t r) { return names[r % 5]; }
/* order o: ordered 0 to 730 days before T0 + 365 days */
static int64_t ord_at(int64_t o) { return T0 + 365LL * 24 * HOUR - (int64_t)(mix64((uint64_t)o * 3 + 1) % (730LL * 24)) * HOUR; }
static const char *ord_status(int64_t o) { return statuses[mix64((uint64_t)o + 11) % 5]; }
static bool ord_moves(int64_t o)
{
	const char *s = ord_status(o);
	return ord_at(o) < T0 && (strcmp(s, "Delivered") == 0 || strcmp(s, "Cancelled") == 0);
}
static int64_t view_count(int64_t b, int h) { return (int64_t)(mix64((uint64_t)(b * VIEW_HOURS + h)) % 300) + 1; }

/* The three newest reviews of book b, as review numbers, newest first. */
static void
latest3(int64_t b, int64_t out[3])
{
	int n = 0;

	for (int64_t r = b; r < R; r += B) {
		int64_t at = rv_at(r);
		int pos = n < 3 ? n : 3;
		while (pos > 0 && rv_at(out[pos - 1]) < at) {
			if (pos < 3)
				out[pos] = out[pos - 1];
			pos--;
		}
		if (pos < 3) {
			out[pos] = r;
			if (n < 3)
				n++;
		}
	}
}

static void
review_doc(bson_t *d, int64_t r, bool with_id)
{
	bson_t sub;

	if (with_id)
		BSON_APPEND_INT64(d, "_id", r);
	BSON_APPEND_INT32(d, "bookId", (int32_t)rv_book(r));
	bson_append_document_begin(d, "customer", -1, &sub);
	BSON_APPEND_INT32(&sub, "customerId", (int32_t)(r % 100000));
	BSON_APPEND_UTF8(&sub, "name", rv_name(r));
	bson_append_document_end(d, &sub);
	BSON_APPEND_INT32(d, "rating", rv_rating(r));
	BSON_APPEND_UTF8(d, "body", rv_body(r));
	BSON_APPEND_DATE_TIME(d, "reviewedAt", rv_at(r));
}

static void
book_doc(bson_t *d, int64_t b)
{
	char title[48];
	int64_t l3[3];
	bson_t arr, sub;

	snprintf(title, sizeof(title), "book title %08lld", (long long)b);
	BSON_APPEND_INT64(d, "_id", b);
	BSON_APPEND_UTF8(d, "title", title);
	BSON_APPEND_UTF8(d, "author", names[(b / 5) % 5]);
	BSON_APPEND_DOUBLE(d, "price", (double)(b % 4000) / 100.0 + 5);
	BSON_APPEND_INT32(d, "year", (int32_t)(1900 + b % 125));
	latest3(b, l3);
	bson_append_array_begin(d, "recentReviews", -1, &arr);
	for (int k = 0; k < 3; k++) {
		char key[4];
		snprintf(key, sizeof(key), "%d", k);
		bson_append_document_begin(&arr, key, -1, &sub);
		review_doc(&sub, l3[k], true);
		bson_append_document_end(&arr, &sub);
	}
	bson_append_array_end(d, &arr);
}

/* ---- loading --------------------------------------------------------------- */

typedef void (*make_fn)(bson_t *d, int64_t i);

static void mk_book(bson_t *d, int64_t i) { book_doc(d, i); }
static void mk_review(bson_t *d, int64_t i) { review_doc(d, i, true); }
static void
mk_view(bson_t *d, int64_t i)
{
	int64_t b = i / VIEW_HOURS;
	int h = (int)(i % VIEW_HOURS);
	int64_t c = view_count(b, h);
	bson_t sub;

	BSON_APPEND_INT64(d, "_id", i);
	BSON_APPEND_INT32(d, "bookId", (int32_t)b);
	BSON_APPEND_DATE_TIME(d, "hour", T0 + h * HOUR);
	BSON_APPEND_INT64(d, "count", c);
	bson_append_document_begin(d, "byCountry", -1, &sub);
	BSON_APPEND_INT64(&sub, "TR", c / 2);
	BSON_APPEND_INT64(&sub, "GB", c / 3);
	BSON_APPEND_INT64(&sub, "DE", c - c / 2 - c / 3);
	bson_append_document_end(d, &sub);
}
static void
mk_order(bson_t *d, int64_t o)
{
	BSON_APPEND_INT64(d, "_id", o);
	BSON_APPEND_INT32(d, "customerId", (int32_t)(o % 100000));
	BSON_APPEND_UTF8(d, "status", ord_status(o));
	BSON_APPEND_DATE_TIME(d, "orderedAt", ord_at(o));
	BSON_APPEND_DOUBLE(d, "total", (double)(o % 10000) / 100.0);
}

static void
tamga_load(const char *coll_name, int64_t n, make_fn mk)
{
	mongoc_collection_t *coll = mongoc_database_get_collection(mdb, coll_name);
	bson_t *docs[1000];
	bson_error_t err;

	mongoc_collection_drop(coll, NULL);
	for (int64_t i = 0; i < n; i += 1000) {
		size_t k = 0;
		for (; k < 1000 && i + (int64_t)k < n; k++) {
			docs[k] = bson_new();
			mk(docs[k], i + (int64_t)k);
		}
		if (!mongoc_collection_insert_many(coll, (const bson_t **)docs, k, NULL, NULL, &err))
			die("tamga insert_many", err.message);
		for (size_t j = 0; j < k; j++)
			bson_destroy(docs[j]);
	}
	mongoc_collection_destroy(coll);
}

static void
tamga_index(const char *coll, const char *json_key, const char *name)
{
	bson_error_t err;
	bson_t *key = bson_new_from_json((const uint8_t *)json_key, -1, &err);
	bson_t *cmd = BCON_NEW("createIndexes", BCON_UTF8(coll), "indexes", "[", "{", "key", BCON_DOCUMENT(key),
	    "name", BCON_UTF8(name), "}", "]");

	if (!mongoc_database_command_simple(mdb, cmd, NULL, NULL, &err))
		die("tamga createIndexes", err.message);
	bson_destroy(cmd);
	bson_destroy(key);
}

/* COPY rows produced by row(i, buf) for i in [0, n) into table. */
typedef int (*row_fn)(char *buf, size_t size, int64_t i);

static void
pg_copy(PGconn *c, const char *table, int64_t n, row_fn row)
{
	char sql[256], line[2048];
	char *buf = malloc(1 << 20);
	size_t used = 0;
	PGresult *r;

	snprintf(sql, sizeof(sql), "COPY %s FROM STDIN", table);
	r = PQexec(c, sql);
	if (PQresultStatus(r) != PGRES_COPY_IN)
		die("postgresql copy", PQresultErrorMessage(r));
	PQclear(r);
	for (int64_t i = 0; i < n; i++) {
		int len = row(line, sizeof(line) - 1, i);
		line[len++] = '\n';
		if (used + (size_t)len > (1 << 20)) {
			if (PQputCopyData(c, buf, (int)used) != 1)
				die("postgresql copy", PQerrorMessage(c));
			used = 0;
		}
		memcpy(buf + used, line, (size_t)len);
		used += (size_t)len;
	}
	if (used > 0 && PQputCopyData(c, buf, (int)used) != 1)
		die("postgresql copy", PQerrorMessage(c));
	if (PQputCopyEnd(c, NULL) != 1)
		die("postgresql copy end", PQerrorMessage(c));
	while ((r = PQgetResult(c)) != NULL) {
		pg_check(c, r, "postgresql copy");
		PQclear(r);
	}
	free(buf);
}

/* timestamps as epoch milliseconds: to_timestamp(ms / 1000.0) in SQL */
static int
row_book(char *b, size_t n, int64_t i)
{
	return snprintf(b, n, "%lld\tbook title %08lld\t%s\t%.2f\t%d", (long long)i, (long long)i, names[(i / 5) % 5],
	    (double)(i % 4000) / 100.0 + 5, (int)(1900 + i % 125));
}
static int
row_review(char *b, size_t n, int64_t r)
{
	return snprintf(b, n, "%lld\t%lld\t%d\t%s\t%d\t%s\t%lld", (long long)r, (long long)rv_book(r),
	    (int)(r % 100000), rv_name(r), rv_rating(r), rv_body(r), (long long)rv_at(r));
}
static int
row_view(char *b, size_t n, int64_t i)
{
	int64_t bk = i / VIEW_HOURS, c;
	int h = (int)(i % VIEW_HOURS);
	c = view_count(bk, h);
	return snprintf(b, n, "%lld\t%lld\t%lld\t%lld\t%lld\t%lld", (long long)bk, (long long)(T0 + h * HOUR),
	    (long long)c, (long long)(c / 2), (long long)(c / 3), (long long)(c - c / 2 - c / 3));
}
static int
row_order(char *b, size_t n, int64_t o)
{
	return snprintf(b, n, "%lld\t%d\t%s\t%lld\t%.2f", (long long)o, (int)(o % 100000), ord_status(o),
	    (long long)ord_at(o), (double)(o % 10000) / 100.0);
}

/* The same documents as JSON text for the jsonb tables (dates as
 * {"$date": ms}, as the other jsonb cases store them). */
static int
json_review(char *b, size_t n, int64_t r)
{
	return snprintf(b, n, "{\"_id\":%lld,\"bookId\":%lld,\"customer\":{\"customerId\":%d,\"name\":\"%s\"},"
	    "\"rating\":%d,\"body\":\"%s\",\"reviewedAt\":{\"$date\":%lld}}", (long long)r, (long long)rv_book(r),
	    (int)(r % 100000), rv_name(r), rv_rating(r), rv_body(r), (long long)rv_at(r));
}
static int
row_review_j(char *b, size_t n, int64_t r)
{
	int len = snprintf(b, n, "%lld\t", (long long)r);
	return len + json_review(b + len, n - (size_t)len, r);
}
static int
row_book_j(char *b, size_t n, int64_t i)
{
	int64_t l3[3];
	int len;

	latest3(i, l3);
	len = snprintf(b, n, "%lld\t{\"_id\":%lld,\"title\":\"book title %08lld\",\"author\":\"%s\",\"price\":%.2f,"
	    "\"year\":%d,\"recentReviews\":[", (long long)i, (long long)i, (long long)i, names[(i / 5) % 5],
	    (double)(i % 4000) / 100.0 + 5, (int)(1900 + i % 125));
	for (int k = 0; k < 3; k++) {
		len += json_review(b + len, n - (size_t)len, l3[k]);
		if (k < 2)
			b[len++] = ',';
	}
	return len + snprintf(b + len, n - (size_t)len, "]}");
}
static int
row_view_j(char *b, size_t n, int64_t i)
{
	int64_t bk = i / VIEW_HOURS, c;
	int h = (int)(i % VIEW_HOURS);
	c = view_count(bk, h);
	return snprintf(b, n, "%lld\t{\"_id\":%lld,\"bookId\":%lld,\"hour\":{\"$date\":%lld},\"count\":%lld,"
	    "\"byCountry\":{\"TR\":%lld,\"GB\":%lld,\"DE\":%lld}}", (long long)i, (long long)i, (long long)bk,
	    (long long)(T0 + h * HOUR), (long long)c, (long long)(c / 2), (long long)(c / 3),
	    (long long)(c - c / 2 - c / 3));
}
static int
row_order_j(char *b, size_t n, int64_t o)
{
	return snprintf(b, n, "%lld\t{\"_id\":%lld,\"customerId\":%d,\"status\":\"%s\",\"orderedAt\":{\"$date\":%lld},"
	    "\"total\":%.2f}", (long long)o, (long long)o, (int)(o % 100000), ord_status(o), (long long)ord_at(o),
	    (double)(o % 10000) / 100.0);
}

static void
pg_load(PGconn *c)
{
	pg_exec(c, "DROP TABLE IF EXISTS bs_books, bs_reviews, bs_views, bs_orders, bs_orders_archive, "
	    "bj_books, bj_reviews, bj_views, bj_orders, bj_orders_archive");
	/* relational */
	pg_exec(c, "CREATE TABLE bs_books (id bigint PRIMARY KEY, title text NOT NULL, author text NOT NULL, "
	    "price float8 NOT NULL, year int NOT NULL)");
	pg_exec(c, "CREATE TABLE bs_reviews (id bigint PRIMARY KEY, book_id bigint NOT NULL, customer_id int NOT NULL, "
	    "customer_name text NOT NULL, rating int NOT NULL, body text NOT NULL, reviewed_at bigint NOT NULL)");
	pg_exec(c, "CREATE TABLE bs_views (book_id bigint NOT NULL, hour bigint NOT NULL, count bigint NOT NULL, "
	    "by_tr bigint NOT NULL, by_gb bigint NOT NULL, by_de bigint NOT NULL, PRIMARY KEY (book_id, hour))");
	pg_exec(c, "CREATE TABLE bs_orders (id bigint PRIMARY KEY, customer_id int NOT NULL, status text NOT NULL, "
	    "ordered_at bigint NOT NULL, total float8 NOT NULL)");
	pg_exec(c, "CREATE TABLE bs_orders_archive (LIKE bs_orders INCLUDING ALL)");
	pg_copy(c, "bs_books", B, row_book);
	pg_copy(c, "bs_reviews", R, row_review);
	pg_copy(c, "bs_views", V * VIEW_HOURS, row_view);
	pg_copy(c, "bs_orders", O, row_order);
	pg_exec(c, "CREATE INDEX ON bs_reviews (book_id, reviewed_at DESC)");
	pg_exec(c, "CREATE INDEX ON bs_orders (ordered_at)");
	/* jsonb */
	pg_exec(c, "CREATE TABLE bj_books (id bigint PRIMARY KEY, doc jsonb NOT NULL)");
	pg_exec(c, "CREATE TABLE bj_reviews (id bigint PRIMARY KEY, doc jsonb NOT NULL)");
	pg_exec(c, "CREATE TABLE bj_views (id bigint PRIMARY KEY, doc jsonb NOT NULL)");
	pg_exec(c, "CREATE TABLE bj_orders (id bigint PRIMARY KEY, doc jsonb NOT NULL)");
	pg_exec(c, "CREATE TABLE bj_orders_archive (LIKE bj_orders INCLUDING ALL)");
	pg_copy(c, "bj_books", B, row_book_j);
	pg_copy(c, "bj_reviews", R, row_review_j);
	pg_copy(c, "bj_views", V * VIEW_HOURS, row_view_j);
	pg_copy(c, "bj_orders", O, row_order_j);
	pg_exec(c, "CREATE INDEX ON bj_reviews (((doc->>'bookId')::bigint), ((doc->'reviewedAt'->>'$date')::bigint) DESC)");
	pg_exec(c, "CREATE INDEX ON bj_views (((doc->>'bookId')::bigint), ((doc->'hour'->>'$date')::bigint))");
	pg_exec(c, "CREATE INDEX ON bj_orders (((doc->'orderedAt'->>'$date')::bigint))");
	pg_exec(c, "VACUUM ANALYZE");
	pg_exec(c, "CHECKPOINT");
}

/* ---- the read cases ------------------------------------------------------- */

typedef enum { Q_CARD, Q_REVIEWS, Q_CHART } query_t;
typedef enum { S_TAMGA, S_PG, S_PGJ } side_t;

/* One query for book b on side s; dies on a wrong answer. */
static void
tamga_query(query_t q, int64_t b)
{
	mongoc_collection_t *coll;
	mongoc_cursor_t *cur;
	const bson_t *doc;
	bson_t *filter, *opts;
	bson_error_t err;
	bson_iter_t it;
	int n = 0;
	int64_t l3[3];

	switch (q) {
	case Q_CARD:
		coll = mongoc_database_get_collection(mdb, "books");
		filter = BCON_NEW("_id", BCON_INT64(b));
		opts = BCON_NEW("limit", BCON_INT64(1), "singleBatch", BCON_BOOL(true));
		break;
	case Q_REVIEWS:
		coll = mongoc_database_get_collection(mdb, "reviews");
		filter = BCON_NEW("bookId", BCON_INT32((int32_t)b));
		opts = BCON_NEW("projection", "{", "_id", BCON_INT32(0), "rating", BCON_INT32(1), "body", BCON_INT32(1),
		    "customer.name", BCON_INT32(1), "reviewedAt", BCON_INT32(1), "}", "sort", "{", "reviewedAt",
		    BCON_INT32(-1), "}", "limit", BCON_INT64(3), "singleBatch", BCON_BOOL(true));
		latest3(b, l3);
		break;
	default:
		coll = mongoc_database_get_collection(mdb, "book_views");
		filter = BCON_NEW("bookId", BCON_INT32((int32_t)b), "hour", "{", "$gte", BCON_DATE_TIME(T0), "$lt",
		    BCON_DATE_TIME(T0 + 24 * HOUR), "}");
		opts = BCON_NEW("sort", "{", "hour", BCON_INT32(1), "}");
		break;
	}
	cur = mongoc_collection_find_with_opts(coll, filter, opts, NULL);
	while (mongoc_cursor_next(cur, &doc)) {
		if (q == Q_REVIEWS) {
			if (n >= 3 || !bson_iter_init_find(&it, doc, "reviewedAt") ||
			    bson_iter_date_time(&it) != rv_at(l3[n]))
				die("tamga last_reviews", "not the three newest reviews");
		} else if (q == Q_CHART) {
			if (!bson_iter_init_find(&it, doc, "hour") || bson_iter_date_time(&it) != T0 + n * HOUR)
				die("tamga views_chart", "buckets out of order");
		}
		n++;
	}
	if (mongoc_cursor_error(cur, &err))
		die("tamga find", err.message);
	if (n != (q == Q_CARD ? 1 : q == Q_REVIEWS ? 3 : (b < V ? 24 : 0)))
		die("tamga find", "wrong number of documents");
	mongoc_cursor_destroy(cur);
	bson_destroy(filter);
	bson_destroy(opts);
	mongoc_collection_destroy(coll);
}

static const char *const pg_sql[2][3] = {
	{"SELECT b.title, b.author, b.price, b.year, r.id, r.rating, r.body, r.customer_name, r.reviewed_at "
	 "FROM bs_books b LEFT JOIN LATERAL (SELECT id, rating, body, customer_name, reviewed_at FROM bs_reviews "
	 "WHERE book_id = b.id ORDER BY reviewed_at DESC LIMIT 3) r ON true WHERE b.id = $1",
	 "SELECT rating, body, customer_name, reviewed_at FROM bs_reviews WHERE book_id = $1 "
	 "ORDER BY reviewed_at DESC LIMIT 3",
	 "SELECT hour, count, by_tr, by_gb, by_de FROM bs_views WHERE book_id = $1 AND hour >= $2 AND hour < $3 "
	 "ORDER BY hour"},
	{"SELECT doc FROM bj_books WHERE id = $1",
	 "SELECT jsonb_build_object('rating', doc->'rating', 'body', doc->'body', 'customer', "
	 "jsonb_build_object('name', doc->'customer'->'name'), 'reviewedAt', doc->'reviewedAt') FROM bj_reviews "
	 "WHERE (doc->>'bookId')::bigint = $1 ORDER BY (doc->'reviewedAt'->>'$date')::bigint DESC LIMIT 3",
	 "SELECT doc FROM bj_views WHERE (doc->>'bookId')::bigint = $1 AND (doc->'hour'->>'$date')::bigint >= $2 "
	 "AND (doc->'hour'->>'$date')::bigint < $3 ORDER BY (doc->'hour'->>'$date')::bigint"},
};

static void
pg_prepare_all(PGconn *c)
{
	char name[16];

	for (int m = 0; m < 2; m++)
		for (int q = 0; q < 3; q++) {
			snprintf(name, sizeof(name), "q%d%d", m, q);
			PQclear(pg_check(c, PQprepare(c, name, pg_sql[m][q], 0, NULL), pg_sql[m][q]));
		}
}

static void
pg_query(PGconn *c, side_t s, query_t q, int64_t b)
{
	char name[16], kb[24], lo[24], hi[24];
	const char *params[3] = {kb, lo, hi};
	PGresult *r;
	int n;

	snprintf(name, sizeof(name), "q%d%d", s == S_PG ? 0 : 1, (int)q);
	snprintf(kb, sizeof(kb), "%lld", (long long)b);
	snprintf(lo, sizeof(lo), "%lld", (long long)T0);
	snprintf(hi, sizeof(hi), "%lld", (long long)(T0 + 24 * HOUR));
	r = pg_check(c, PQexecPrepared(c, name, q == Q_CHART ? 3 : 1, params, NULL, NULL, 0), name);
	n = PQntuples(r);
	if (n != (q == Q_CARD ? (s == S_PG ? 3 : 1) : q == Q_REVIEWS ? 3 : (b < V ? 24 : 0)))
		die("postgresql query", "wrong number of rows");
	if (q == Q_REVIEWS && s == S_PG) {
		int64_t l3[3];
		latest3(b, l3);
		for (int i = 0; i < 3; i++)
			if (atoll(PQgetvalue(r, i, 3)) != rv_at(l3[i]))
				die("postgresql last_reviews", "not the three newest reviews");
	}
	PQclear(r);
}

/* Queries of one round on one side: ops random books (the same for every
 * side in a round), stopping at the time cap; returns queries/s. */
static double
run_round(side_t s, PGconn *c, query_t q, int64_t ops, uint64_t seed, double cap)
{
	rng_t rg;
	double t0 = now();
	int64_t i;

	rnd_reset(&rg, seed);
	for (i = 0; i < ops; i++) {
		int64_t b = rnd(&rg, q == Q_CHART ? V : B);
		if (s == S_TAMGA)
			tamga_query(q, b);
		else
			pg_query(c, s, q, b);
		if ((i & 63) == 63 && now() - t0 > cap)
			break;
	}
	return (double)i / (now() - t0);
}

static void
line3(const char *name, bool have_t, double t, bool have_p, double p, double pj)
{
	if (!have_t) {
		report_na(name, tamga_why, "postgresql", have_p ? p : -1);
		return;
	}
	if (!have_p) {
		report_peer_na(name, t, "postgresql", pg_why);
		return;
	}
	report(name, t, "postgresql", p);
	report(name, t, "postgresql_jsonb", pj);
}

static void
read_case(const char *name, query_t q, PGconn *c, bool have_t, bool have_p)
{
	double best[3] = {0, 0, 0}, cap = max_seconds / 3;
	int64_t ops = B / 10 > 2000 ? B / 10 : 2000;

	for (int round = 0; round < 3; round++)
		for (int k = 0; k < 3; k++) {
			side_t s = (side_t)((k + round) % 3);
			double x;
			if ((s == S_TAMGA && !have_t) || (s != S_TAMGA && !have_p))
				continue;
			x = run_round(s, c, q, ops, (uint64_t)round * 7919 + 17, cap);
			if (x > best[s])
				best[s] = x;
		}
	line3(name, have_t, best[S_TAMGA], have_p, best[S_PG], best[S_PGJ]);
}

/* ---- the archive move ------------------------------------------------------- */

static double
tamga_archive(int64_t expect)
{
	mongoc_collection_t *orders = mongoc_database_get_collection(mdb, "orders");
	bson_t *pipeline, *filter, reply;
	bson_error_t err;
	mongoc_cursor_t *cur;
	const bson_t *doc;
	bson_iter_t it;
	double t0;
	int64_t moved = -1;

	filter = BCON_NEW("status", "{", "$in", "[", "Delivered", "Cancelled", "]", "}", "orderedAt", "{", "$lt",
	    BCON_DATE_TIME(T0), "}");
	pipeline = BCON_NEW("pipeline", "[", "{", "$match", BCON_DOCUMENT(filter), "}", "{", "$merge", "{", "into",
	    "orders_archive", "whenMatched", "keepExisting", "whenNotMatched", "insert", "}", "}", "]");
	t0 = now();
	cur = mongoc_collection_aggregate(orders, MONGOC_QUERY_NONE, pipeline, NULL, NULL);
	while (mongoc_cursor_next(cur, &doc))
		;
	if (mongoc_cursor_error(cur, &err))
		die("tamga archive $merge", err.message);
	mongoc_cursor_destroy(cur);
	if (!mongoc_collection_delete_many(orders, filter, NULL, &reply, &err))
		die("tamga archive deleteMany", err.message);
	t0 = now() - t0;
	if (bson_iter_init_find(&it, &reply, "deletedCount"))
		moved = bson_iter_as_int64(&it);
	bson_destroy(&reply);
	if (moved != expect)
		die("tamga archive", "wrong number of orders moved");
	{
		mongoc_collection_t *arch = mongoc_database_get_collection(mdb, "orders_archive");
		bson_t empty = BSON_INITIALIZER;
		if (mongoc_collection_count_documents(arch, &empty, NULL, NULL, NULL, &err) != expect ||
		    mongoc_collection_count_documents(orders, &empty, NULL, NULL, NULL, &err) != O - expect)
			die("tamga archive", "wrong counts after the move");
		mongoc_collection_destroy(arch);
	}
	bson_destroy(pipeline);
	bson_destroy(filter);
	mongoc_collection_destroy(orders);
	return (double)expect / t0;
}

static double
pg_archive(PGconn *c, bool jsonb, int64_t expect)
{
	char sql[900];
	const char *pred = jsonb ?
	    "doc->>'status' IN ('Delivered', 'Cancelled') AND (doc->'orderedAt'->>'$date')::bigint < %lld" :
	    "status IN ('Delivered', 'Cancelled') AND ordered_at < %lld";
	const char *t = jsonb ? "bj_orders" : "bs_orders";
	char where[300];
	PGresult *r;
	double t0;

	snprintf(where, sizeof(where), pred, (long long)T0);
	t0 = now();
	pg_exec(c, "BEGIN");
	snprintf(sql, sizeof(sql), "INSERT INTO %s_archive SELECT * FROM %s WHERE %s ON CONFLICT DO NOTHING", t, t,
	    where);
	pg_exec(c, sql);
	snprintf(sql, sizeof(sql), "DELETE FROM %s WHERE %s", t, where);
	r = pg_check(c, PQexec(c, sql), sql);
	if (atoll(PQcmdTuples(r)) != expect)
		die("postgresql archive", "wrong number of rows moved");
	PQclear(r);
	pg_exec(c, "COMMIT");
	return (double)expect / (now() - t0);
}

int
main(int argc, char **argv)
{
	const char *env = getenv("BENCH_SECONDS"), *uri = getenv("TAMGA_URI"), *nb = getenv("BENCH_BOOKS");
	PGconn *pc;
	bool have_t = false, have_p;
	int64_t moved = 0;
	double t0;

	(void)argc;
	(void)argv;
	bench_read_n("bench_bookstore");
	if (env != NULL && atof(env) > 0)
		max_seconds = atof(env);
	B = nb != NULL && atoll(nb) > 0 ? atoll(nb) : N;
	R = 10 * B;
	V = B < 20000 ? B : 20000;
	O = B;
	for (int64_t o = 0; o < O; o++)
		moved += ord_moves(o);
	fprintf(stderr, "bench_bookstore: %lld books, %lld reviews, %lld view buckets, %lld orders (%lld to archive)\n",
	    (long long)B, (long long)R, (long long)(V * VIEW_HOURS), (long long)O, (long long)moved);
	mongoc_init();
	if (uri != NULL && uri[0] != '\0') {
		bson_error_t err;
		bson_t *ping = BCON_NEW("ping", BCON_INT32(1));
		client = mongoc_client_new(uri);
		if (client != NULL) {
			mongoc_client_set_error_api(client, MONGOC_ERROR_API_VERSION_2);
			have_t = mongoc_client_command_simple(client, "admin", ping, NULL, NULL, &err);
			if (!have_t)
				snprintf(tamga_why, sizeof(tamga_why), "tamgad does not answer ping: %s", err.message);
		}
		bson_destroy(ping);
	} else {
		snprintf(tamga_why, sizeof(tamga_why), "tamgad was not started");
	}
	pc = pg_connect(pg_why, sizeof(pg_why));
	have_p = pc != NULL;
	if (!have_t && !have_p)
		return 0;
	if (have_t) {
		mdb = mongoc_client_get_database(client, DB);
		t0 = now();
		tamga_load("books", B, mk_book);
		tamga_load("reviews", R, mk_review);
		tamga_load("book_views", V * VIEW_HOURS, mk_view);
		tamga_load("orders", O, mk_order);
		{
			mongoc_collection_t *a = mongoc_database_get_collection(mdb, "orders_archive");
			mongoc_collection_drop(a, NULL);
			mongoc_collection_destroy(a);
		}
		tamga_index("reviews", "{\"bookId\": 1, \"reviewedAt\": -1}", "bookId_1_reviewedAt_-1");
		tamga_index("book_views", "{\"bookId\": 1, \"hour\": 1}", "bookId_1_hour_1");
		tamga_index("orders", "{\"orderedAt\": 1}", "orderedAt_1");
		fprintf(stderr, "bench_bookstore: tamga loaded in %.1f s\n", now() - t0);
	}
	if (have_p) {
		t0 = now();
		pg_load(pc);
		pg_prepare_all(pc);
		fprintf(stderr, "bench_bookstore: postgresql loaded in %.1f s\n", now() - t0);
	}
	read_case("bookstore_book_card", Q_CARD, pc, have_t, have_p);
	read_case("bookstore_last_reviews", Q_REVIEWS, pc, have_t, have_p);
	read_case("bookstore_views_chart", Q_CHART, pc, have_t, have_p);
	{
		double t = have_t ? tamga_archive(moved) : NA;
		double p = have_p ? pg_archive(pc, false, moved) : NA;
		double pj = have_p ? pg_archive(pc, true, moved) : NA;
		line3("bookstore_archive_move", have_t, t, have_p, p, pj);
	}
	if (have_p) {
		pg_exec(pc, "DROP TABLE IF EXISTS bs_books, bs_reviews, bs_views, bs_orders, bs_orders_archive, "
		    "bj_books, bj_reviews, bj_views, bj_orders, bj_orders_archive");
		PQfinish(pc);
	}
	if (have_t) {
		bson_error_t err;
		mongoc_database_drop(mdb, &err);
		mongoc_database_destroy(mdb);
		mongoc_client_destroy(client);
	}
	mongoc_cleanup();
	return 0;
}
