/*
 * bench_core.c -- the engine against its floor and a peer, in one run.
 *
 * Cases (N documents of about 200 bytes, N = $BENCH_N, default 1M):
 *   insert_single   one document per insert command / transaction
 *   insert_batch    1000 documents per insert command / transaction
 *   id_lookup       find by _id, random keys
 *   full_scan       read every document
 * Tamga runs through the embedded API (tamga_run_command: command parsing,
 * _id index, validation hooks and all).  The floor is raw WiredTiger storing
 * the same BSON bytes keyed by the integer _id; the peer is SQLite storing
 * the same documents as JSON text in a table with an INTEGER PRIMARY KEY
 * (WAL, synchronous=NORMAL: like Tamga's default, no fsync per commit).
 * Each case prints one line per comparison:
 *   bench <case>: tamga <ops/s>, <peer> <ops/s>, ratio <tamga/peer>
 */
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <wiredtiger.h>

#include "tamga/tamga.h"

static int64_t N = 1000000;

static double
now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void
die(const char *what, const char *detail)
{
	fprintf(stderr, "bench: %s: %s\n", what, detail ? detail : "");
	exit(1);
}

/* The i-th document: {_id: i, name, city, country, rating, tags[], at}. */
static void
make_doc(bson_t *d, int64_t i)
{
	static const char *const cities[] = {"Istanbul", "Berlin", "London", "Paris", "Ankara"};
	static const char *const countries[] = {"TR", "DE", "GB", "FR", "TR"};
	char name[40];
	bson_t tags;

	bson_init(d);
	BSON_APPEND_INT64(d, "_id", i);
	snprintf(name, sizeof(name), "customer number %08lld", (long long)i);
	BSON_APPEND_UTF8(d, "name", name);
	BSON_APPEND_UTF8(d, "city", cities[i % 5]);
	BSON_APPEND_UTF8(d, "country", countries[i % 5]);
	BSON_APPEND_INT32(d, "rating", (int32_t)(i % 5) + 1);
	BSON_APPEND_DOUBLE(d, "score", (double)(i % 1000) / 10.0);
	bson_append_array_begin(d, "tags", -1, &tags);
	BSON_APPEND_UTF8(&tags, "0", "books");
	BSON_APPEND_UTF8(&tags, "1", i % 2 ? "scifi" : "history");
	bson_append_array_end(d, &tags);
	BSON_APPEND_DATE_TIME(d, "at", 1751328000000LL + i * 1000);
	BSON_APPEND_BOOL(d, "active", i % 3 != 0);
}

static uint64_t rng = 88172645463325252ULL;
static int64_t
rnd(int64_t n)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (int64_t)(rng % (uint64_t)n);
}

static void
report(const char *name, double tamga, const char *peer, double other)
{
	printf("bench %s: tamga %.0f, %s %.0f, ratio %.2f\n", name, tamga, peer, other,
	    other > 0 ? tamga / other : 0);
	fflush(stdout);
}

/* ---- Tamga --------------------------------------------------------------- */

typedef struct result {
	double insert_single, insert_batch, lookup, scan;
} result_t;

static void
tamga_cmd(tamga_t *t, const bson_t *cmd, bson_t *reply)
{
	tamga_error_t e;

	if (tamga_run_command(t, "bench", cmd, reply, &e) != 0)
		die("tamga command", e.message);
}

static result_t
bench_tamga(const char *dir)
{
	result_t r;
	tamga_t *t;
	tamga_error_t e;
	bson_t cmd, reply, docs, d;
	double t0;
	int64_t i, j, single = N / 10;
	char key[16];

	if (tamga_open(dir, "create,cache_size=1G", &t, &e) != 0)
		die("tamga_open", e.message);
	/* single inserts: N/10 of them into their own collection */
	t0 = now();
	for (i = 0; i < single; i++) {
		bson_init(&cmd);
		BSON_APPEND_UTF8(&cmd, "insert", "single");
		bson_append_array_begin(&cmd, "documents", -1, &docs);
		make_doc(&d, i);
		bson_append_document(&docs, "0", 1, &d);
		bson_destroy(&d);
		bson_append_array_end(&cmd, &docs);
		tamga_cmd(t, &cmd, &reply);
		bson_destroy(&reply);
		bson_destroy(&cmd);
	}
	r.insert_single = (double)single / (now() - t0);

	t0 = now();
	for (i = 0; i < N; i += 1000) {
		bson_init(&cmd);
		BSON_APPEND_UTF8(&cmd, "insert", "docs");
		bson_append_array_begin(&cmd, "documents", -1, &docs);
		for (j = 0; j < 1000 && i + j < N; j++) {
			snprintf(key, sizeof(key), "%d", (int)j);
			make_doc(&d, i + j);
			bson_append_document(&docs, key, -1, &d);
			bson_destroy(&d);
		}
		bson_append_array_end(&cmd, &docs);
		tamga_cmd(t, &cmd, &reply);
		bson_destroy(&reply);
		bson_destroy(&cmd);
	}
	r.insert_batch = (double)N / (now() - t0);

	t0 = now();
	for (i = 0; i < N / 5; i++) {
		bson_t filter;
		bson_init(&cmd);
		BSON_APPEND_UTF8(&cmd, "find", "docs");
		bson_append_document_begin(&cmd, "filter", -1, &filter);
		BSON_APPEND_INT64(&filter, "_id", rnd(N));
		bson_append_document_end(&cmd, &filter);
		tamga_cmd(t, &cmd, &reply);
		bson_destroy(&reply);
		bson_destroy(&cmd);
	}
	r.lookup = (double)(N / 5) / (now() - t0);

	t0 = now();
	{
		int64_t seen = 0, id;
		bson_iter_t it, cur;
		bson_init(&cmd);
		BSON_APPEND_UTF8(&cmd, "find", "docs");
		BSON_APPEND_INT32(&cmd, "batchSize", 10000);
		tamga_cmd(t, &cmd, &reply);
		bson_destroy(&cmd);
		for (;;) {
			id = 0;
			if (bson_iter_init_find(&it, &reply, "cursor") && bson_iter_recurse(&it, &cur)) {
				while (bson_iter_next(&cur)) {
					if (strcmp(bson_iter_key(&cur), "id") == 0)
						id = bson_iter_int64(&cur);
					else if (BSON_ITER_HOLDS_ARRAY(&cur)) {
						bson_iter_t b;
						bson_iter_recurse(&cur, &b);
						while (bson_iter_next(&b))
							seen++;
					}
				}
			}
			bson_destroy(&reply);
			if (id == 0)
				break;
			bson_init(&cmd);
			BSON_APPEND_INT64(&cmd, "getMore", id);
			BSON_APPEND_UTF8(&cmd, "collection", "docs");
			BSON_APPEND_INT32(&cmd, "batchSize", 10000);
			tamga_cmd(t, &cmd, &reply);
			bson_destroy(&cmd);
		}
		if (seen != N)
			die("tamga scan", "wrong count");
	}
	r.scan = (double)N / (now() - t0);
	tamga_close(t);
	return r;
}

/* ---- raw WiredTiger ------------------------------------------------------ */

static void
wt_check(int rc, const char *what)
{
	if (rc != 0)
		die(what, wiredtiger_strerror(rc));
}

static result_t
bench_wt(const char *dir)
{
	result_t r;
	WT_CONNECTION *conn;
	WT_SESSION *s;
	WT_CURSOR *c;
	WT_ITEM item;
	bson_t d;
	double t0;
	int64_t i, j, single = N / 10;

	mkdir(dir, 0755);
	wt_check(wiredtiger_open(dir, NULL, "create,cache_size=1G,log=(enabled=true)", &conn), "wt open");
	wt_check(conn->open_session(conn, NULL, NULL, &s), "session");
	wt_check(s->create(s, "table:single", "key_format=q,value_format=u"), "create");
	wt_check(s->create(s, "table:docs", "key_format=q,value_format=u"), "create");
	wt_check(s->open_cursor(s, "table:single", NULL, "overwrite=false", &c), "cursor");
	t0 = now();
	for (i = 0; i < single; i++) {
		make_doc(&d, i);
		wt_check(s->begin_transaction(s, NULL), "begin");
		c->set_key(c, i);
		item.data = bson_get_data(&d);
		item.size = d.len;
		c->set_value(c, &item);
		wt_check(c->insert(c), "insert");
		wt_check(s->commit_transaction(s, NULL), "commit");
		bson_destroy(&d);
	}
	r.insert_single = (double)single / (now() - t0);
	c->close(c);

	wt_check(s->open_cursor(s, "table:docs", NULL, "overwrite=false", &c), "cursor");
	t0 = now();
	for (i = 0; i < N; i += 1000) {
		wt_check(s->begin_transaction(s, NULL), "begin");
		for (j = 0; j < 1000 && i + j < N; j++) {
			make_doc(&d, i + j);
			c->set_key(c, i + j);
			item.data = bson_get_data(&d);
			item.size = d.len;
			c->set_value(c, &item);
			wt_check(c->insert(c), "insert");
			bson_destroy(&d);
		}
		wt_check(s->commit_transaction(s, NULL), "commit");
	}
	r.insert_batch = (double)N / (now() - t0);

	t0 = now();
	for (i = 0; i < N / 5; i++) {
		bson_t v;
		c->set_key(c, rnd(N));
		wt_check(c->search(c), "search");
		wt_check(c->get_value(c, &item), "value");
		/* same work a client gets: the document's bytes copied out */
		bson_init_static(&v, item.data, item.size);
		{
			bson_t *copy = bson_copy(&v);
			bson_destroy(copy);
		}
		c->reset(c);
	}
	r.lookup = (double)(N / 5) / (now() - t0);

	t0 = now();
	{
		int64_t seen = 0;
		bson_t batch = BSON_INITIALIZER;
		while (c->next(c) == 0) {
			bson_t v;
			wt_check(c->get_value(c, &item), "value");
			bson_init_static(&v, item.data, item.size);
			bson_append_document(&batch, "0", 1, &v);  /* copy into a reply batch */
			if (++seen % 10000 == 0)
				bson_reinit(&batch);
		}
		bson_destroy(&batch);
		if (seen != N)
			die("wt scan", "wrong count");
	}
	r.scan = (double)N / (now() - t0);
	c->close(c);
	conn->close(conn, NULL);
	return r;
}

/* ---- SQLite -------------------------------------------------------------- */

static void
sq_check(sqlite3 *db, int rc, const char *what)
{
	if (rc != SQLITE_OK && rc != SQLITE_DONE && rc != SQLITE_ROW)
		die(what, sqlite3_errmsg(db));
}

static result_t
bench_sqlite(const char *path)
{
	result_t r;
	sqlite3 *db;
	sqlite3_stmt *ins, *ins1, *get, *scan;
	bson_t d;
	double t0;
	int64_t i, j, single = N / 10;

	sq_check(NULL, sqlite3_open(path, &db), "open");
	sq_check(db, sqlite3_exec(db, "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA cache_size=-1000000;"
	    "CREATE TABLE single (id INTEGER PRIMARY KEY, doc TEXT NOT NULL);"
	    "CREATE TABLE docs (id INTEGER PRIMARY KEY, doc TEXT NOT NULL);", NULL, NULL, NULL), "schema");
	sq_check(db, sqlite3_prepare_v2(db, "INSERT INTO single (id, doc) VALUES (?, json(?))", -1, &ins1, NULL), "prep");
	sq_check(db, sqlite3_prepare_v2(db, "INSERT INTO docs (id, doc) VALUES (?, json(?))", -1, &ins, NULL), "prep");
	t0 = now();
	for (i = 0; i < single; i++) {
		char *json;
		make_doc(&d, i);
		json = bson_as_relaxed_extended_json(&d, NULL);
		sqlite3_bind_int64(ins1, 1, i);
		sqlite3_bind_text(ins1, 2, json, -1, SQLITE_TRANSIENT);
		sq_check(db, sqlite3_step(ins1), "insert");
		sqlite3_reset(ins1);
		bson_free(json);
		bson_destroy(&d);
	}
	r.insert_single = (double)single / (now() - t0);

	t0 = now();
	for (i = 0; i < N; i += 1000) {
		sq_check(db, sqlite3_exec(db, "BEGIN", NULL, NULL, NULL), "begin");
		for (j = 0; j < 1000 && i + j < N; j++) {
			char *json;
			make_doc(&d, i + j);
			json = bson_as_relaxed_extended_json(&d, NULL);
			sqlite3_bind_int64(ins, 1, i + j);
			sqlite3_bind_text(ins, 2, json, -1, SQLITE_TRANSIENT);
			sq_check(db, sqlite3_step(ins), "insert");
			sqlite3_reset(ins);
			bson_free(json);
			bson_destroy(&d);
		}
		sq_check(db, sqlite3_exec(db, "COMMIT", NULL, NULL, NULL), "commit");
	}
	r.insert_batch = (double)N / (now() - t0);

	sq_check(db, sqlite3_prepare_v2(db, "SELECT doc FROM docs WHERE id = ?", -1, &get, NULL), "prep");
	t0 = now();
	for (i = 0; i < N / 5; i++) {
		sqlite3_bind_int64(get, 1, rnd(N));
		if (sqlite3_step(get) != SQLITE_ROW)
			die("sqlite lookup", "missing row");
		(void)sqlite3_column_text(get, 0);
		sqlite3_reset(get);
	}
	r.lookup = (double)(N / 5) / (now() - t0);

	sq_check(db, sqlite3_prepare_v2(db, "SELECT doc FROM docs", -1, &scan, NULL), "prep");
	t0 = now();
	{
		int64_t seen = 0;
		while (sqlite3_step(scan) == SQLITE_ROW) {
			(void)sqlite3_column_text(scan, 0);
			seen++;
		}
		if (seen != N)
			die("sqlite scan", "wrong count");
	}
	r.scan = (double)N / (now() - t0);
	sqlite3_finalize(ins);
	sqlite3_finalize(ins1);
	sqlite3_finalize(get);
	sqlite3_finalize(scan);
	sqlite3_close(db);
	return r;
}

int
main(int argc, char **argv)
{
	char path[4096];
	result_t t, w, s;
	const char *env = getenv("BENCH_N");

	if (argc < 2)
		die("usage", "bench_core WORKDIR");
	if (env != NULL && atoll(env) > 0)
		N = atoll(env);
	fprintf(stderr, "bench_core: %lld documents\n", (long long)N);
	snprintf(path, sizeof(path), "%s/tamga", argv[1]);
	t = bench_tamga(path);
	snprintf(path, sizeof(path), "%s/wt", argv[1]);
	w = bench_wt(path);
	snprintf(path, sizeof(path), "%s/sqlite.db", argv[1]);
	s = bench_sqlite(path);
	report("insert_single", t.insert_single, "wiredtiger", w.insert_single);
	report("insert_single", t.insert_single, "sqlite", s.insert_single);
	report("insert_batch", t.insert_batch, "wiredtiger", w.insert_batch);
	report("insert_batch", t.insert_batch, "sqlite", s.insert_batch);
	report("id_lookup", t.lookup, "wiredtiger", w.lookup);
	report("id_lookup", t.lookup, "sqlite", s.lookup);
	report("full_scan", t.scan, "wiredtiger", w.scan);
	report("full_scan", t.scan, "sqlite", s.scan);
	return 0;
}
