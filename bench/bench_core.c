/*
 * bench_core.c -- the engine on N documents of about 200 bytes against its
 * floor (raw WiredTiger + libbson on the same BSON bytes) and its peers
 * (SQLite storing the same documents as JSON text, PostgreSQL 15 as jsonb),
 * in one run.  N = $BENCH_N, default 1M.
 *
 * Cases (issue in brackets):
 *   insert_single   [2] N/10 documents, one insert command / transaction each
 *   insert_batch    [2] N documents, 1000 per insert command / transaction
 *   id_lookup       [2] N/5 finds by _id, random keys (same keys everywhere)
 *   full_scan       [2] read every document (cursor batches of 10000)
 *   filter_scan     [4] {rating: {$gte: 3}, "customer.country": "TR"} over N
 *                       documents (docs scanned/s); floor: a hand-written
 *                       loop with libbson iterators; peer: json_extract
 *   group           [7] $group by customer.country with $sum and $avg
 *                       (docs/s); floor: a hand-written C loop; peer:
 *                       PostgreSQL GROUP BY on jsonb
 *   sort_limit      [7] $sort {score: -1} + $limit 10 without an index;
 *                       peer: ORDER BY ... LIMIT 10 on jsonb
 *   index_build     [8] index on {title: 1} over N documents (docs/s);
 *                       floor: filling a WT (title, id) table; peer:
 *                       PostgreSQL CREATE INDEX on (doc->>'title')
 *   index_lookup    [8] N/5 equality finds on title; floor: raw WT index
 *                       table then record table
 *   insert_3_indexes [8] batch insert with three secondary indexes vs none
 * Tamga runs through the embedded API (tamga_run_command: command parsing,
 * _id index, validation hooks and all).  Cases whose command is not built
 * yet (code 59 / 238) print "tamga not available yet (...)".
 *
 * Fairness: the same cache (1 GB) for every engine; WiredTiger with Tamga's
 * own connection settings (journal on, no sync per commit); SQLite in WAL
 * with synchronous=NORMAL; PostgreSQL with synchronous_commit=off (run.sh);
 * every engine gets the document in its native form (BSON, or JSON text
 * formatted directly) so no one pays for a conversion a client would not do.
 */
#include <sqlite3.h>
#include <wiredtiger.h>

#include "bench_common.h"
#include "bench_pg.h"

#define DB "bench"
#define NA -1.0

typedef struct result {
	double insert_single, insert_batch, lookup, scan, filter, group, sort_limit;
	double index_build, index_lookup, insert_3idx, insert_0idx;
	char index_why[300], lookup_why[300], idx3_why[300], group_why[300], sort_why[300];
} result_t;

static int64_t filter_expected;
static double max_seconds = 10; /* cap on a Tamga case that may run without its index */

static void
init_result(result_t *r)
{
	memset(r, 0, sizeof(*r));
	r->insert_single = r->insert_batch = r->lookup = r->scan = r->filter = NA;
	r->group = r->sort_limit = r->index_build = r->index_lookup = r->insert_3idx = r->insert_0idx = NA;
}

/* ---- Tamga --------------------------------------------------------------- */

/* Insert documents [from, to) into coll in commands of 1000.  Returns 0, or
 * -1 with the first write error in why (why NULL: dies instead). */
static int
tamga_insert_range(tamga_t *t, const char *coll, int64_t from, int64_t to, char *why, size_t why_size)
{
	bson_t cmd, docs, d;
	char key[16];
	int64_t i, j;

	for (i = from; i < to; i += 1000) {
		bson_init(&cmd);
		BSON_APPEND_UTF8(&cmd, "insert", coll);
		bson_append_array_begin(&cmd, "documents", -1, &docs);
		for (j = 0; j < 1000 && i + j < to; j++) {
			snprintf(key, sizeof(key), "%d", (int)j);
			make_doc(&d, i + j);
			bson_append_document(&docs, key, -1, &d);
			bson_destroy(&d);
		}
		bson_append_array_end(&cmd, &docs);
		if (twrite(t, DB, &cmd, j, why, why_size) != 0) {
			bson_destroy(&cmd);
			return -1;
		}
		bson_destroy(&cmd);
	}
	return 0;
}

static int
tamga_create_index(tamga_t *t, const char *coll, const char *field, char *why, size_t size)
{
	bson_t *cmd;
	char name[64];
	int rc;

	snprintf(name, sizeof(name), "%s_1", field);
	cmd = BCON_NEW("createIndexes", BCON_UTF8(coll), "indexes", "[", "{", "key", "{", field, BCON_INT32(1), "}",
	    "name", BCON_UTF8(name), "}", "]");
	rc = ttry(t, DB, cmd, why, size);
	bson_destroy(cmd);
	return rc;
}

/* The number of documents in coll (count command). */
static int64_t
tamga_count(tamga_t *t, const char *coll)
{
	bson_t *c = BCON_NEW("count", BCON_UTF8(coll));
	bson_t reply;
	bson_iter_t it;
	int64_t n = -1;

	tcmd(t, DB, c, &reply);
	if (bson_iter_init_find(&it, &reply, "n") && BSON_ITER_HOLDS_NUMBER(&it))
		n = bson_iter_as_int64(&it);
	bson_destroy(&reply);
	bson_destroy(c);
	return n;
}

/* Does find {title: ...} on coll use an index?  Asks explain; when explain
 * is not there yet, assumes it does (the lookups are time-capped anyway). */
static bool
tamga_uses_index(tamga_t *t, const char *coll, char *why, size_t size)
{
	bson_t *c = BCON_NEW("explain", "{", "find", BCON_UTF8(coll), "filter", "{", "title", "book title 00000001",
	    "}", "}", "verbosity", "queryPlanner");
	tamga_error_t e;
	bson_t reply;
	char *json;
	bool uses = true;

	if (tamga_run_command(t, DB, c, &reply, &e) == 0) {
		json = bson_as_relaxed_extended_json(&reply, NULL);
		if (strstr(json, "COLLSCAN") != NULL) {
			snprintf(why, size, "the planner does not use the index yet: COLLSCAN");
			uses = false;
		}
		bson_free(json);
	}
	bson_destroy(&reply);
	bson_destroy(c);
	return uses;
}

static void
bench_tamga(const char *dir, result_t *r)
{
	tamga_t *t;
	tamga_error_t e;
	bson_t cmd, docs, d, filter, reply, *c;
	bson_iter_t it;
	double t0;
	int64_t i, single = N / 10, seen;
	rng_t rg;
	char buf[64];

	if (tamga_open(dir, "create,cache_size=1G", &t, &e) != 0)
		die("tamga_open", e.message);

	/* insert_single: N/10 one-document commands into their own collection */
	t0 = now();
	for (i = 0; i < single; i++) {
		bson_init(&cmd);
		BSON_APPEND_UTF8(&cmd, "insert", "single");
		bson_append_array_begin(&cmd, "documents", -1, &docs);
		make_doc(&d, i);
		bson_append_document(&docs, "0", 1, &d);
		bson_destroy(&d);
		bson_append_array_end(&cmd, &docs);
		twrite(t, DB, &cmd, 1, NULL, 0);
		bson_destroy(&cmd);
	}
	r->insert_single = (double)single / (now() - t0);

	t0 = now();
	tamga_insert_range(t, "docs", 0, N, NULL, 0);
	r->insert_batch = (double)N / (now() - t0);

	rnd_reset(&rg, 0);
	t0 = now();
	for (i = 0; i < N / 5; i++) {
		bson_init(&cmd);
		BSON_APPEND_UTF8(&cmd, "find", "docs");
		bson_append_document_begin(&cmd, "filter", -1, &filter);
		BSON_APPEND_INT64(&filter, "_id", rnd(&rg, N));
		bson_append_document_end(&cmd, &filter);
		tcmd(t, DB, &cmd, &reply);
		if (tdrain(t, DB, "docs", &reply, 10000) != 1)
			die("tamga lookup", "not exactly one document");
		bson_destroy(&cmd);
	}
	r->lookup = (double)(N / 5) / (now() - t0);

	t0 = now();
	c = BCON_NEW("find", "docs", "batchSize", BCON_INT32(10000));
	tcmd(t, DB, c, &reply);
	bson_destroy(c);
	if (tdrain(t, DB, "docs", &reply, 10000) != N)
		die("tamga scan", "wrong count");
	r->scan = (double)N / (now() - t0);

	t0 = now();
	c = BCON_NEW("find", "docs", "filter", "{", "rating", "{", "$gte", BCON_INT32(3), "}",
	    "customer.country", "TR", "}", "batchSize", BCON_INT32(10000));
	tcmd(t, DB, c, &reply);
	bson_destroy(c);
	if ((seen = tdrain(t, DB, "docs", &reply, 10000)) != filter_expected) {
		fprintf(stderr, "tamga filter: %lld documents, expected %lld\n", (long long)seen,
		    (long long)filter_expected);
		die("tamga filter scan", "wrong count");
	}
	r->filter = (double)N / (now() - t0);

	/* group: the aggregate command may not be built (59) or lack $group (238) */
	c = BCON_NEW("aggregate", "docs", "pipeline", "[", "{", "$group", "{", "_id", "$customer.country",
	    "total", "{", "$sum", "$score", "}", "avgRating", "{", "$avg", "$rating", "}", "}", "}", "]",
	    "cursor", "{", "}");
	t0 = now();
	{
		tamga_error_t ge;
		if (tamga_run_command(t, DB, c, &reply, &ge) == 0) {
			if ((seen = tdrain(t, DB, "docs", &reply, 10000)) != 4)
				die("tamga $group", "expected 4 groups");
			r->group = (double)N / (now() - t0);
		} else {
			snprintf(r->group_why, sizeof(r->group_why), "aggregate $group: code %d, %s", ge.code, ge.message);
			bson_destroy(&reply);
		}
	}
	bson_destroy(c);

	c = BCON_NEW("aggregate", "docs", "pipeline", "[", "{", "$sort", "{", "score", BCON_INT32(-1), "_id",
	    BCON_INT32(1), "}", "}", "{", "$limit", BCON_INT32(10), "}", "]", "cursor", "{", "}");
	t0 = now();
	{
		tamga_error_t ge;
		if (tamga_run_command(t, DB, c, &reply, &ge) == 0) {
			if (tdrain(t, DB, "docs", &reply, 10000) != 10)
				die("tamga $sort+$limit", "expected 10 documents");
			r->sort_limit = (double)N / (now() - t0);
		} else {
			snprintf(r->sort_why, sizeof(r->sort_why), "aggregate $sort+$limit: code %d, %s", ge.code,
			    ge.message);
			bson_destroy(&reply);
		}
	}
	bson_destroy(c);

	/* secondary indexes: measured as soon as createIndexes works.  The
	 * build over existing documents may come after indexes on empty
	 * collections; the lookup then runs on a collection that had its index
	 * from the start. */
	{
		const char *lookup_coll = NULL;
		char why2[300];
		t0 = now();
		if (tamga_create_index(t, "docs", "title", r->index_why, sizeof(r->index_why)) == 0) {
			r->index_build = (double)N / (now() - t0);
			lookup_coll = "docs";
		} else if (tamga_create_index(t, "docs_ti", "title", why2, sizeof(why2)) == 0) {
			if (tamga_insert_range(t, "docs_ti", 0, N, r->lookup_why, sizeof(r->lookup_why)) == 0)
				lookup_coll = "docs_ti";
		} else {
			snprintf(r->lookup_why, sizeof(r->lookup_why), "%s", why2);
		}
		if (lookup_coll != NULL && tamga_uses_index(t, lookup_coll, r->lookup_why, sizeof(r->lookup_why))) {
			double deadline;
			rnd_reset(&rg, 7);
			t0 = now();
			deadline = t0 + max_seconds;
			for (i = 0; i < N / 5 && now() < deadline; i++) {
				snprintf(buf, sizeof(buf), "book title %08lld", (long long)rnd(&rg, N));
				c = BCON_NEW("find", lookup_coll, "filter", "{", "title", BCON_UTF8(buf), "}");
				tcmd(t, DB, c, &reply);
				bson_destroy(c);
				if ((seen = tdrain(t, DB, lookup_coll, &reply, 10000)) != 1)
					break;
			}
			r->index_lookup = (double)i / (now() - t0);
			if (seen != 1) {
				snprintf(r->lookup_why, sizeof(r->lookup_why), "wrong result: find {title: \"%s\"} "
				    "returned %lld documents, not 1", buf, (long long)seen);
				r->index_lookup = NA;
			}
			/* without explain: a lookup that costs half a collection scan
			 * or more did not use the index */
			if (r->index_lookup >= 0 && r->index_lookup < 2.0 * r->scan / (double)N) {
				snprintf(r->lookup_why, sizeof(r->lookup_why), "the planner does not use the index yet: "
				    "%.1f lookups/s, as slow as a collection scan", r->index_lookup);
				r->index_lookup = NA;
			}
		}

		/* three secondary indexes against none, batches alternating */
		if (tamga_create_index(t, "idx3", "title", r->idx3_why, sizeof(r->idx3_why)) == 0 &&
		    tamga_create_index(t, "idx3", "customer.name", r->idx3_why, sizeof(r->idx3_why)) == 0 &&
		    tamga_create_index(t, "idx3", "score", r->idx3_why, sizeof(r->idx3_why)) == 0) {
			double t_none = 0, t_three = 0;
			for (i = 0; i < N / 10; i += 1000) {
				int64_t to = i + 1000 < N / 10 ? i + 1000 : N / 10;
				t0 = now();
				if (tamga_insert_range(t, "idx3", i, to, r->idx3_why, sizeof(r->idx3_why)) != 0)
					break;
				t_three += now() - t0;
				t0 = now();
				tamga_insert_range(t, "noidx", i, to, NULL, 0);
				t_none += now() - t0;
			}
			r->insert_3idx = (double)(N / 10) / t_three;
			r->insert_0idx = (double)(N / 10) / t_none;
			if (i < N / 10)
				r->insert_3idx = NA;
			else if ((seen = tamga_count(t, "idx3")) != N / 10) {
				snprintf(r->idx3_why, sizeof(r->idx3_why), "wrong result: %lld documents stored, not %lld",
				    (long long)seen, (long long)(N / 10));
				r->insert_3idx = NA;
			}
		}
	}
	(void)it;
	tamga_close(t);
}

/* ---- raw WiredTiger ------------------------------------------------------ */

static void
wt_check(int rc, const char *what)
{
	if (rc != 0)
		die(what, wiredtiger_strerror(rc));
}

/* One group of the hand-written $group. */
typedef struct group_acc {
	char key[16];
	int64_t n, rating_sum;
	double score_sum;
} group_acc_t;

static void
bench_wt(const char *dir, result_t *r)
{
	WT_CONNECTION *conn;
	WT_SESSION *s;
	WT_CURSOR *c, *ic;
	WT_ITEM item;
	bson_t d;
	double t0;
	int64_t i, j, single = N / 10;
	rng_t rg;

	mkdir(dir, 0755);
	wt_check(wiredtiger_open(dir, NULL, BENCH_WT_CONFIG("1G"), &conn), "wt open");
	wt_check(conn->open_session(conn, NULL, "isolation=snapshot", &s), "session");
	wt_check(s->create(s, "table:single", BENCH_WT_TABLE), "create");
	wt_check(s->create(s, "table:docs", BENCH_WT_TABLE), "create");
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
	r->insert_single = (double)single / (now() - t0);
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
	r->insert_batch = (double)N / (now() - t0);

	/* the same work a client gets: the document's bytes copied out */
	rnd_reset(&rg, 0);
	t0 = now();
	for (i = 0; i < N / 5; i++) {
		bson_t v, *copy;
		c->set_key(c, rnd(&rg, N));
		wt_check(c->search(c), "search");
		wt_check(c->get_value(c, &item), "value");
		bson_init_static(&v, item.data, item.size);
		copy = bson_copy(&v);
		bson_destroy(copy);
		c->reset(c);
	}
	r->lookup = (double)(N / 5) / (now() - t0);

	/* full scan: every document copied into a reply-sized batch */
	t0 = now();
	{
		int64_t seen = 0;
		bson_t batch = BSON_INITIALIZER;
		while (c->next(c) == 0) {
			bson_t v;
			wt_check(c->get_value(c, &item), "value");
			bson_init_static(&v, item.data, item.size);
			bson_append_document(&batch, "0", 1, &v);
			if (++seen % 10000 == 0)
				bson_reinit(&batch);
		}
		bson_destroy(&batch);
		c->reset(c);
		if (seen != N)
			die("wt scan", "wrong count");
	}
	r->scan = (double)N / (now() - t0);

	/* filter scan: libbson iterators on each document, matches copied out */
	t0 = now();
	{
		int64_t seen = 0;
		bson_t batch = BSON_INITIALIZER;
		bson_iter_t it, f;
		while (c->next(c) == 0) {
			bson_t v;
			wt_check(c->get_value(c, &item), "value");
			bson_init_static(&v, item.data, item.size);
			if (!bson_iter_init_find(&it, &v, "rating") || !BSON_ITER_HOLDS_NUMBER(&it) ||
			    bson_iter_as_double(&it) < 3)
				continue;
			if (!bson_iter_init(&it, &v) || !bson_iter_find_descendant(&it, "customer.country", &f) ||
			    !BSON_ITER_HOLDS_UTF8(&f) || strcmp(bson_iter_utf8(&f, NULL), "TR") != 0)
				continue;
			bson_append_document(&batch, "0", 1, &v);
			if (++seen % 10000 == 0)
				bson_reinit(&batch);
		}
		bson_destroy(&batch);
		c->reset(c);
		if (seen != filter_expected)
			die("wt filter scan", "wrong count");
	}
	r->filter = (double)N / (now() - t0);

	/* group: sum of score and average rating per customer.country */
	t0 = now();
	{
		group_acc_t g[16];
		int ng = 0, k;
		bson_iter_t it, f;
		while (c->next(c) == 0) {
			bson_t v;
			const char *country = "";
			wt_check(c->get_value(c, &item), "value");
			bson_init_static(&v, item.data, item.size);
			if (bson_iter_init(&it, &v) && bson_iter_find_descendant(&it, "customer.country", &f) &&
			    BSON_ITER_HOLDS_UTF8(&f))
				country = bson_iter_utf8(&f, NULL);
			for (k = 0; k < ng && strcmp(g[k].key, country) != 0; k++)
				;
			if (k == ng) {
				if (ng == 16)
					die("wt group", "too many groups");
				memset(&g[ng], 0, sizeof(g[ng]));
				snprintf(g[ng].key, sizeof(g[ng].key), "%s", country);
				ng++;
			}
			g[k].n++;
			if (bson_iter_init_find(&it, &v, "score") && BSON_ITER_HOLDS_NUMBER(&it))
				g[k].score_sum += bson_iter_as_double(&it);
			if (bson_iter_init_find(&it, &v, "rating") && BSON_ITER_HOLDS_NUMBER(&it))
				g[k].rating_sum += bson_iter_as_int64(&it);
		}
		c->reset(c);
		if (ng != 4)
			die("wt group", "expected 4 groups");
	}
	r->group = (double)N / (now() - t0);

	/* index build floor: a (title, RecordId) table filled from the records */
	wt_check(s->create(s, "table:idx_title", "key_format=Sq,value_format=u"), "create");
	wt_check(s->open_cursor(s, "table:idx_title", NULL, NULL, &ic), "cursor");
	t0 = now();
	{
		bson_iter_t it;
		WT_ITEM empty = {0};
		int64_t id, n = 0;
		wt_check(s->begin_transaction(s, NULL), "begin");
		while (c->next(c) == 0) {
			bson_t v;
			wt_check(c->get_key(c, &id), "key");
			wt_check(c->get_value(c, &item), "value");
			bson_init_static(&v, item.data, item.size);
			if (!bson_iter_init_find(&it, &v, "title") || !BSON_ITER_HOLDS_UTF8(&it))
				die("wt index", "no title");
			ic->set_key(ic, bson_iter_utf8(&it, NULL), id);
			ic->set_value(ic, &empty);
			wt_check(ic->insert(ic), "index insert");
			if (++n % 1000 == 0) {
				wt_check(s->commit_transaction(s, NULL), "commit");
				wt_check(s->begin_transaction(s, NULL), "begin");
			}
		}
		wt_check(s->commit_transaction(s, NULL), "commit");
		c->reset(c);
	}
	r->index_build = (double)N / (now() - t0);

	/* index lookup floor: index table (search_near on the prefix), then record */
	rnd_reset(&rg, 7);
	t0 = now();
	for (i = 0; i < N / 5; i++) {
		char want[64];
		const char *title;
		int64_t id;
		int exact;
		bson_t v, *copy;
		snprintf(want, sizeof(want), "book title %08lld", (long long)rnd(&rg, N));
		ic->set_key(ic, want, INT64_MIN);
		wt_check(ic->search_near(ic, &exact), "index search");
		if (exact < 0)
			wt_check(ic->next(ic), "index next");
		wt_check(ic->get_key(ic, &title, &id), "index key");
		if (strcmp(title, want) != 0)
			die("wt index lookup", "missing key");
		c->set_key(c, id);
		wt_check(c->search(c), "search");
		wt_check(c->get_value(c, &item), "value");
		bson_init_static(&v, item.data, item.size);
		copy = bson_copy(&v);
		bson_destroy(copy);
		c->reset(c);
		ic->reset(ic);
	}
	r->index_lookup = (double)(N / 5) / (now() - t0);

	ic->close(ic);
	c->close(c);
	conn->close(conn, NULL);
}

/* ---- SQLite -------------------------------------------------------------- */

static void
sq_check(sqlite3 *db, int rc, const char *what)
{
	if (rc != SQLITE_OK && rc != SQLITE_DONE && rc != SQLITE_ROW)
		die(what, db ? sqlite3_errmsg(db) : "open");
}

static void
bench_sqlite(const char *path, result_t *r)
{
	sqlite3 *db;
	sqlite3_stmt *ins, *ins1, *get, *scan, *filt;
	double t0;
	int64_t i, j, single = N / 10;
	char json[600];
	int len;
	rng_t rg;

	sq_check(NULL, sqlite3_open(path, &db), "open");
	sq_check(db, sqlite3_exec(db, "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA cache_size=-1000000;"
	    "CREATE TABLE single (id INTEGER PRIMARY KEY, doc TEXT NOT NULL);"
	    "CREATE TABLE docs (id INTEGER PRIMARY KEY, doc TEXT NOT NULL);", NULL, NULL, NULL), "schema");
	sq_check(db, sqlite3_prepare_v2(db, "INSERT INTO single (id, doc) VALUES (?, json(?))", -1, &ins1, NULL), "prep");
	sq_check(db, sqlite3_prepare_v2(db, "INSERT INTO docs (id, doc) VALUES (?, json(?))", -1, &ins, NULL), "prep");
	t0 = now();
	for (i = 0; i < single; i++) {
		len = make_json(json, sizeof(json), i);
		sqlite3_bind_int64(ins1, 1, i);
		sqlite3_bind_text(ins1, 2, json, len, SQLITE_STATIC);
		sq_check(db, sqlite3_step(ins1), "insert");
		sqlite3_reset(ins1);
	}
	r->insert_single = (double)single / (now() - t0);

	t0 = now();
	for (i = 0; i < N; i += 1000) {
		sq_check(db, sqlite3_exec(db, "BEGIN", NULL, NULL, NULL), "begin");
		for (j = 0; j < 1000 && i + j < N; j++) {
			len = make_json(json, sizeof(json), i + j);
			sqlite3_bind_int64(ins, 1, i + j);
			sqlite3_bind_text(ins, 2, json, len, SQLITE_STATIC);
			sq_check(db, sqlite3_step(ins), "insert");
			sqlite3_reset(ins);
		}
		sq_check(db, sqlite3_exec(db, "COMMIT", NULL, NULL, NULL), "commit");
	}
	r->insert_batch = (double)N / (now() - t0);

	sq_check(db, sqlite3_prepare_v2(db, "SELECT doc FROM docs WHERE id = ?", -1, &get, NULL), "prep");
	rnd_reset(&rg, 0);
	t0 = now();
	for (i = 0; i < N / 5; i++) {
		sqlite3_bind_int64(get, 1, rnd(&rg, N));
		if (sqlite3_step(get) != SQLITE_ROW)
			die("sqlite lookup", "missing row");
		(void)sqlite3_column_text(get, 0);
		sqlite3_reset(get);
	}
	r->lookup = (double)(N / 5) / (now() - t0);

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
	r->scan = (double)N / (now() - t0);

	sq_check(db, sqlite3_prepare_v2(db, "SELECT doc FROM docs WHERE json_extract(doc, '$.rating') >= 3 AND "
	    "json_extract(doc, '$.customer.country') = 'TR'", -1, &filt, NULL), "prep");
	t0 = now();
	{
		int64_t seen = 0;
		while (sqlite3_step(filt) == SQLITE_ROW) {
			(void)sqlite3_column_text(filt, 0);
			seen++;
		}
		if (seen != filter_expected)
			die("sqlite filter scan", "wrong count");
	}
	r->filter = (double)N / (now() - t0);

	sqlite3_finalize(ins);
	sqlite3_finalize(ins1);
	sqlite3_finalize(get);
	sqlite3_finalize(scan);
	sqlite3_finalize(filt);
	sqlite3_close(db);
}

/* ---- PostgreSQL ---------------------------------------------------------- */

static bool
bench_pg(result_t *r, char *why, size_t why_size)
{
	PGconn *c = pg_connect(why, why_size);
	PGresult *res;
	double t0;

	if (c == NULL)
		return false;
	fprintf(stderr, "bench_core: postgresql COPY of %lld documents: %.0f docs/s\n", (long long)N,
	    pg_load_docs(c, "docs", N));

	t0 = now();
	res = pg_check(c, PQexec(c, "SELECT doc->'customer'->>'country', sum((doc->>'score')::float8), "
	    "avg((doc->>'rating')::int) FROM docs GROUP BY 1"), "postgresql group");
	if (PQntuples(res) != 4)
		die("postgresql group", "expected 4 groups");
	PQclear(res);
	r->group = (double)N / (now() - t0);

	t0 = now();
	res = pg_check(c, PQexec(c, "SELECT doc FROM docs ORDER BY (doc->>'score')::float8 DESC, id LIMIT 10"),
	    "postgresql sort");
	if (PQntuples(res) != 10)
		die("postgresql sort", "expected 10 rows");
	PQclear(res);
	r->sort_limit = (double)N / (now() - t0);

	t0 = now();
	pg_exec(c, "CREATE INDEX docs_title ON docs ((doc->>'title'))");
	r->index_build = (double)N / (now() - t0);

	pg_exec(c, "DROP TABLE docs");
	PQfinish(c);
	return true;
}

int
main(int argc, char **argv)
{
	char path[4096], pg_why[300];
	result_t t, w, s, p;
	bool have_pg;
	int64_t i;

	if (argc < 2)
		die("usage", "bench_core WORKDIR");
	bench_read_n("bench_core");
	if (getenv("BENCH_SECONDS") != NULL && atof(getenv("BENCH_SECONDS")) > 0)
		max_seconds = atof(getenv("BENCH_SECONDS"));
	for (i = 0; i < N; i++)
		filter_expected += doc_matches_filter(i);
	init_result(&t);
	init_result(&w);
	init_result(&s);
	init_result(&p);
	snprintf(path, sizeof(path), "%s/tamga", argv[1]);
	bench_tamga(path, &t);
	snprintf(path, sizeof(path), "%s/wt", argv[1]);
	bench_wt(path, &w);
	snprintf(path, sizeof(path), "%s/sqlite.db", argv[1]);
	bench_sqlite(path, &s);
	have_pg = bench_pg(&p, pg_why, sizeof(pg_why));

	report("insert_single", t.insert_single, "wiredtiger", w.insert_single);
	report("insert_single", t.insert_single, "sqlite", s.insert_single);
	report("insert_batch", t.insert_batch, "wiredtiger", w.insert_batch);
	report("insert_batch", t.insert_batch, "sqlite", s.insert_batch);
	report("id_lookup", t.lookup, "wiredtiger", w.lookup);
	report("id_lookup", t.lookup, "sqlite", s.lookup);
	report("full_scan", t.scan, "wiredtiger", w.scan);
	report("full_scan", t.scan, "sqlite", s.scan);
	report("filter_scan", t.filter, "wiredtiger", w.filter);
	report("filter_scan", t.filter, "sqlite", s.filter);

	if (t.group >= 0) {
		report("group", t.group, "wiredtiger", w.group);
		if (have_pg)
			report("group", t.group, "postgresql", p.group);
		else
			report_peer_na("group", t.group, "postgresql", pg_why);
	} else {
		report_na("group", t.group_why, "wiredtiger", w.group);
		report_na("group", t.group_why, "postgresql", have_pg ? p.group : NA);
	}
	if (t.sort_limit >= 0) {
		if (have_pg)
			report("sort_limit", t.sort_limit, "postgresql", p.sort_limit);
		else
			report_peer_na("sort_limit", t.sort_limit, "postgresql", pg_why);
	} else {
		report_na("sort_limit", t.sort_why, "postgresql", have_pg ? p.sort_limit : NA);
	}
	if (t.index_build >= 0) {
		report("index_build", t.index_build, "wiredtiger", w.index_build);
		if (have_pg)
			report("index_build", t.index_build, "postgresql", p.index_build);
		else
			report_peer_na("index_build", t.index_build, "postgresql", pg_why);
	} else {
		report_na("index_build", t.index_why, "wiredtiger", w.index_build);
		report_na("index_build", t.index_why, "postgresql", have_pg ? p.index_build : NA);
	}
	if (t.index_lookup >= 0)
		report("index_lookup", t.index_lookup, "wiredtiger", w.index_lookup);
	else
		report_na("index_lookup", t.lookup_why[0] ? t.lookup_why : t.index_why, "wiredtiger", w.index_lookup);
	if (t.insert_3idx >= 0)
		report("insert_3_indexes", t.insert_3idx, "tamga_no_index", t.insert_0idx);
	else
		report_na("insert_3_indexes", t.idx3_why, NULL, NA);
	if (!have_pg)
		fprintf(stderr, "bench_core: postgresql not available: %s\n", pg_why);
	return 0;
}
