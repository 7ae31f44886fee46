/*
 * bench_core.c -- the engine on N documents of about 200 bytes against its
 * floor (raw WiredTiger + libbson on the same BSON bytes) and its peers
 * (SQLite storing the same documents as JSON text, PostgreSQL 15 as jsonb),
 * in one run.  N = $BENCH_N, default 1M.
 *
 * Cases (issue in brackets):
 *   insert_single   [2] N/10 documents, one insert command / transaction each
 *   insert_batch    [2] N documents, 1000 per insert command / transaction
 *   id_lookup       [2] N/15 finds by _id per round, random keys (the same
 *                       keys for every engine)
 *   id_lookup_clustered [19] the same finds in a clustered collection
 *                       ({clusteredIndex: {key: {_id: 1}}}, the same N
 *                       documents): one table per lookup, against the
 *                       one-table floor and SQLite
 *   full_scan       [2] read every document (cursor batches of 10000)
 *   filter_scan     [4] {rating: {$gte: 3}, "customer.country": "TR"} over N
 *                       documents (docs scanned/s); floor: a hand-written
 *                       loop with libbson iterators; peer: json_extract
 *   group           [7] $group by customer.country with $sum and $avg
 *                       (docs/s); floor: a hand-written C loop; peer:
 *                       PostgreSQL GROUP BY on jsonb
 *   sort_limit      [7] $sort {score: -1} + $limit 10 without an index
 *                       (docs/s); peer: ORDER BY ... LIMIT 10 on jsonb
 *   index_build     [8] index on {title: 1} over N documents (docs/s);
 *                       floor: filling a WT (title, RecordId) table; peer:
 *                       PostgreSQL CREATE INDEX on ((doc->>'title'))
 *   index_lookup    [8] equality finds on title; floor: raw WT index table,
 *                       then record table; three rounds each, alternating
 *                       with the floor, the best round counting (as reads)
 *   insert_3_indexes [8] batch inserts with three secondary indexes against
 *                       the same batches with none (alternating)
 * Two floors: `wiredtiger` stores each document once, keyed by its _id (the
 * least work that can hold the data); `wiredtiger_layout` does the raw work
 * of Tamga's own storage layout (DESIGN.md): a record table keyed by an
 * int64 RecordId plus a unique _id index table (order-preserving _id key ->
 * RecordId and the key's type bits, empty here), both written in the same
 * transaction, and a lookup that
 * searches the index and then the record table.  Scans read one table in
 * both layouts, so full_scan has the one floor.
 * Writes run in ten chunks per engine, the three engines' order rotating
 * each chunk, each engine's time summed.  Reads run in three rounds after
 * every engine is loaded, the engines' order rotating each round, and the
 * best round of each engine counts.  Either way a burst of load from
 * elsewhere on the machine does not land on one engine alone.
 *
 * Tamga runs through the embedded API (tamga_run_command: command parsing,
 * _id index, validation hooks and all).  Cases whose command is not built
 * yet (code 59 / 238) print "tamga not available yet (...)"; results are
 * checked (counts, group count) so a wrong answer is never timed as a fast
 * one.
 *
 * Fairness: the same cache (1 GB) for Tamga, WiredTiger and SQLite;
 * WiredTiger with Tamga's own connection settings (journal on, no sync per
 * commit); SQLite in WAL with synchronous=NORMAL; PostgreSQL with
 * synchronous_commit=off and its default parallel workers (run.sh); every
 * engine gets the document in its native form (BSON, or JSON text formatted
 * directly) so no one pays for a conversion a client would not do.
 */
#include <sqlite3.h>
#include <wiredtiger.h>

#include "bench_common.h"
#include "bench_floor.h"
#include "bench_pg.h"

#define DB "bench"
#define NA -1.0
#define ROUNDS 3
#define CHUNKS 10

typedef struct result {
	double insert_single, insert_batch, lookup, scan, filter, group, sort_limit;
	double index_build, index_lookup, insert_3idx, insert_0idx;
	double clustered_lookup;   /* issue 19: NA until the clustered collection is loaded */
	char index_why[300], lookup_why[300], idx3_why[300], group_why[300], sort_why[300], clustered_why[300];
} result_t;

static int64_t filter_expected;
static double max_seconds = 10; /* cap on a Tamga case that may run without its index */

static void
init_result(result_t *r)
{
	memset(r, 0, sizeof(*r));
	r->insert_single = r->insert_batch = r->lookup = r->scan = r->filter = NA;
	r->group = r->sort_limit = r->index_build = r->index_lookup = r->insert_3idx = r->insert_0idx = NA;
	r->clustered_lookup = NA;
}

static void
keep_best(double *best, double x)
{
	if (x > *best)
		*best = x;
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
 * is not there yet, assumes it does (the lookups are checked afterwards). */
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

static tamga_t *
tamga_start(const char *dir)
{
	tamga_t *t;
	tamga_error_t e;

	if (tamga_open(dir, "create,cache_size=1G", &t, &e) != 0)
		die("tamga_open", e.message);
	return t;
}

/* documents [from, to): one insert command each into "single", or commands
 * of 1000 into "docs"; returns the seconds taken */
static double
tamga_insert(tamga_t *t, bool batch, int64_t from, int64_t to)
{
	bson_t cmd, docs, d;
	double t0 = now();
	int64_t i;

	if (batch) {
		tamga_insert_range(t, "docs", from, to, NULL, 0);
		return now() - t0;
	}
	for (i = from; i < to; i++) {
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
	return now() - t0;
}

static double
tamga_lookup(tamga_t *t, const char *coll, int64_t ops, uint64_t seed)
{
	bson_t cmd, filter, reply;
	double t0 = now();
	int64_t i;
	rng_t rg;

	rnd_reset(&rg, seed);
	for (i = 0; i < ops; i++) {
		bson_init(&cmd);
		BSON_APPEND_UTF8(&cmd, "find", coll);
		bson_append_document_begin(&cmd, "filter", -1, &filter);
		BSON_APPEND_INT64(&filter, "_id", rnd(&rg, N));
		bson_append_document_end(&cmd, &filter);
		tcmd(t, DB, &cmd, &reply);
		if (tdrain(t, DB, coll, &reply, 10000) != 1)
			die("tamga lookup", "not exactly one document");
		bson_destroy(&cmd);
	}
	return (double)ops / (now() - t0);
}

/* The calling thread's CPU time, seconds: a scan runs in it whatever the
 * engine, so documents per CPU second barely move with the machine's load,
 * unlike the wall-clock rate. */
static double
cpu_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* One round's rate, printed (stderr) so that the spread between rounds and
 * runs shows next to the best round that counts; with the rate per CPU
 * second of the calling thread since cpu0 (cpu_now before the round). */
static double
round_rate(const char *what, const char *engine, double rate, double cpu0)
{
	fprintf(stderr, "bench_core: round %s %s %.0f cpu %.0f\n", what, engine, rate, (double)N / (cpu_now() - cpu0));
	return rate;
}

static double
tamga_scan(tamga_t *t, bool filtered)
{
	bson_t *c, reply;
	double t0 = now();
	int64_t seen;

	if (filtered)
		c = BCON_NEW("find", "docs", "filter", "{", "rating", "{", "$gte", BCON_INT32(3), "}",
		    "customer.country", "TR", "}", "batchSize", BCON_INT32(10000));
	else
		c = BCON_NEW("find", "docs", "batchSize", BCON_INT32(10000));
	tcmd(t, DB, c, &reply);
	bson_destroy(c);
	seen = tdrain(t, DB, "docs", &reply, 10000);
	if (seen != (filtered ? filter_expected : N)) {
		fprintf(stderr, "tamga scan: %lld documents, expected %lld\n", (long long)seen,
		    (long long)(filtered ? filter_expected : N));
		die("tamga scan", "wrong count");
	}
	return (double)N / (now() - t0);
}

/* An aggregate that may not be built yet: docs/s, or NA with why. */
static double
tamga_agg(tamga_t *t, bson_t *pipeline_cmd, int64_t expect, const char *what, char *why, size_t size)
{
	tamga_error_t e;
	bson_t reply;
	double t0 = now();
	int64_t seen;

	if (tamga_run_command(t, DB, pipeline_cmd, &reply, &e) != 0) {
		snprintf(why, size, "%s: code %d, %s", what, e.code, e.message);
		bson_destroy(&reply);
		return NA;
	}
	if ((seen = tdrain(t, DB, "docs", &reply, 10000)) != expect) {
		snprintf(why, size, "%s: wrong result, %lld documents instead of %lld", what, (long long)seen,
		    (long long)expect);
		return NA;
	}
	return (double)N / (now() - t0);
}

static void
tamga_reads(tamga_t *t, result_t *r, int round)
{
	bson_t *c;
	double cpu0;

	keep_best(&r->lookup, tamga_lookup(t, "docs", N / 5 / ROUNDS, (uint64_t)round + 1));
	/* >>> issue 19: _id lookups in a clustered collection (the same documents) */
	if (r->clustered_lookup > NA)
		keep_best(&r->clustered_lookup, tamga_lookup(t, "cdocs", N / 5 / ROUNDS, (uint64_t)round + 1));
	/* <<< issue 19 */
	cpu0 = cpu_now();
	keep_best(&r->scan, round_rate("full_scan", "tamga", tamga_scan(t, false), cpu0));
	keep_best(&r->filter, tamga_scan(t, true));
	if (round == 0 || r->group >= 0) {
		c = BCON_NEW("aggregate", "docs", "pipeline", "[", "{", "$group", "{", "_id", "$customer.country",
		    "total", "{", "$sum", "$score", "}", "avgRating", "{", "$avg", "$rating", "}", "}", "}", "]",
		    "cursor", "{", "}");
		keep_best(&r->group, tamga_agg(t, c, 4, "aggregate $group", r->group_why, sizeof(r->group_why)));
		bson_destroy(c);
	}
	if (round == 0 || r->sort_limit >= 0) {
		c = BCON_NEW("aggregate", "docs", "pipeline", "[", "{", "$sort", "{", "score", BCON_INT32(-1), "_id",
		    BCON_INT32(1), "}", "}", "{", "$limit", BCON_INT32(10), "}", "]", "cursor", "{", "}");
		keep_best(&r->sort_limit, tamga_agg(t, c, 10, "aggregate $sort+$limit", r->sort_why,
		    sizeof(r->sort_why)));
		bson_destroy(c);
	}
}

/* Secondary indexes, measured as soon as createIndexes works.  The build
 * over existing documents may come after indexes on empty collections; the
 * lookups then run on a collection that had its index from the start.
 * Returns the collection to look up in (NULL: none, why in lookup_why). */
static const char *
tamga_index_build(tamga_t *t, result_t *r)
{
	const char *lookup_coll = NULL;
	char why2[300];
	double t0;

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
	if (lookup_coll != NULL && !tamga_uses_index(t, lookup_coll, r->lookup_why, sizeof(r->lookup_why)))
		lookup_coll = NULL;
	return lookup_coll;
}

/* One round of ops equality finds on title (the same keys as the floor's
 * round with this seed); keeps the best rate in r->index_lookup, or NA with
 * the reason when a result is wrong or the index is not used. */
static void
tamga_index_lookups(tamga_t *t, const char *coll, int64_t ops, uint64_t seed, result_t *r)
{
	char buf[64];
	bson_t *c, reply;
	double t0, deadline, rate;
	int64_t i, seen = 1;
	rng_t rg;

	if (coll == NULL || r->lookup_why[0] != '\0')
		return;
	rnd_reset(&rg, seed);
	t0 = now();
	deadline = t0 + max_seconds;
	for (i = 0; i < ops && now() < deadline; i++) {
		snprintf(buf, sizeof(buf), "book title %08lld", (long long)rnd(&rg, N));
		c = BCON_NEW("find", coll, "filter", "{", "title", BCON_UTF8(buf), "}");
		tcmd(t, DB, c, &reply);
		bson_destroy(c);
		if ((seen = tdrain(t, DB, coll, &reply, 10000)) != 1)
			break;
	}
	rate = (double)i / (now() - t0);
	if (seen != 1) {
		snprintf(r->lookup_why, sizeof(r->lookup_why), "wrong result: find {title: \"%s\"} "
		    "returned %lld documents, not 1", buf, (long long)seen);
		r->index_lookup = NA;
		return;
	}
	/* without explain: a lookup that costs half a collection scan or
	 * more did not use the index */
	if (rate < 2.0 * r->scan / (double)N) {
		snprintf(r->lookup_why, sizeof(r->lookup_why), "the planner does not use the index yet: "
		    "%.1f lookups/s, as slow as a collection scan", rate);
		r->index_lookup = NA;
		return;
	}
	keep_best(&r->index_lookup, rate);
}

/* Inserts into a collection with three secondary indexes against none. */
static void
tamga_index_inserts(tamga_t *t, result_t *r)
{
	double t0;
	int64_t i, seen;

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
		if (i >= N / 10) {
			r->insert_3idx = (double)(N / 10) / t_three;
			r->insert_0idx = (double)(N / 10) / t_none;
			if ((seen = tamga_count(t, "idx3")) != N / 10) {
				snprintf(r->idx3_why, sizeof(r->idx3_why), "wrong result: %lld documents stored, not %lld",
				    (long long)seen, (long long)(N / 10));
				r->insert_3idx = NA;
			}
		}
	}
}

/* ---- raw WiredTiger ------------------------------------------------------ */

typedef struct wt {
	WT_CONNECTION *conn;
	WT_SESSION *s;
	WT_CURSOR *c;  /* table:docs */
	WT_CURSOR *c1; /* table:single */
	bool layout;   /* Tamga's layout: c, c1 keyed by RecordId, plus ... */
	WT_CURSOR *ix;  /* table:docs_id: _id key -> RecordId */
	WT_CURSOR *ix1; /* table:single_id */
	WT_CURSOR *ix_title; /* table:idx_title, once built */
	int64_t next_recid;
} wt_t;

static void
wt_check(int rc, const char *what)
{
	if (rc != 0)
		die(what, wiredtiger_strerror(rc));
}

/* A WiredTiger floor in its own folder and connection (Tamga's settings,
 * 1 GB cache); layout: Tamga's record + _id index tables instead of one
 * table keyed by _id. */
static void
wt_start(const char *dir, wt_t *w, bool layout)
{
	WT_SESSION *s;

	mkdir(dir, 0755);
	wt_check(wiredtiger_open(dir, NULL, BENCH_WT_CONFIG("1G"), &w->conn), "wt open");
	wt_check(w->conn->open_session(w->conn, NULL, "isolation=snapshot", &w->s), "session");
	s = w->s;
	w->layout = layout;
	wt_check(s->create(s, "table:single", BENCH_WT_TABLE), "create");
	wt_check(s->create(s, "table:docs", BENCH_WT_TABLE), "create");
	wt_check(s->open_cursor(s, "table:single", NULL, "overwrite=false", &w->c1), "cursor");
	wt_check(s->open_cursor(s, "table:docs", NULL, "overwrite=false", &w->c), "cursor");
	if (layout) {
		wt_check(s->create(s, "table:single_id", BENCH_WT_ID_INDEX), "create");
		wt_check(s->create(s, "table:docs_id", BENCH_WT_ID_INDEX), "create");
		wt_check(s->open_cursor(s, "table:single_id", NULL, "overwrite=false", &w->ix1), "cursor");
		wt_check(s->open_cursor(s, "table:docs_id", NULL, "overwrite=false", &w->ix), "cursor");
	}
}

static void
wt_stop(wt_t *w)
{
	w->c->close(w->c);
	w->c1->close(w->c1);
	if (w->layout) {
		w->ix->close(w->ix);
		w->ix1->close(w->ix1);
	}
	if (w->ix_title != NULL)
		w->ix_title->close(w->ix_title);
	w->conn->close(w->conn, NULL);
}

/* documents [from, to): one transaction each into table:single, or
 * transactions of 1000 into table:docs (layout: the record under the next
 * RecordId, then its _id index entry, in the same transaction); returns the
 * seconds taken */
static double
wt_insert(wt_t *w, bool batch, int64_t from, int64_t to)
{
	WT_SESSION *s = w->s;
	WT_CURSOR *c = batch ? w->c : w->c1, *ix = batch ? w->ix : w->ix1;
	WT_ITEM item, key, no_typebits = {0};
	uint8_t kbuf[10];
	bson_t d;
	double t0 = now();
	int64_t i, j, per = batch ? 1000 : 1;

	for (i = from; i < to; i += per) {
		wt_check(s->begin_transaction(s, NULL), "begin");
		for (j = 0; j < per && i + j < to; j++) {
			make_doc(&d, i + j);
			item.data = bson_get_data(&d);
			item.size = d.len;
			if (w->layout) {
				int64_t rid = ++w->next_recid;
				c->set_key(c, rid);
				c->set_value(c, &item);
				wt_check(c->insert(c), "insert");
				key.data = kbuf;
				key.size = floor_id_key(kbuf, i + j);
				ix->set_key(ix, &key);
				ix->set_value(ix, rid, &no_typebits);
				wt_check(ix->insert(ix), "index insert");
			} else {
				c->set_key(c, i + j);
				c->set_value(c, &item);
				wt_check(c->insert(c), "insert");
			}
			bson_destroy(&d);
		}
		wt_check(s->commit_transaction(s, NULL), "commit");
	}
	return now() - t0;
}

/* Issue 23's floor of insert_3_indexes: the layout's raw writes (bench_floor.h)
 * of the same batches into a collection with three secondary index tables
 * and one with none, alternating as tamga_index_inserts does; make_doc runs
 * inside the timed loop on both sides, as in tamga_insert_range. */
static void
wt_index_inserts(wt_t *w, result_t *r)
{
	floor_coll_t f3, f0;
	double t_three = 0, t_none = 0;
	bson_t d;

	wt_check(floor_open(w->s, "f3", 3, &f3), "floor tables");
	wt_check(floor_open(w->s, "f0", 0, &f0), "floor tables");
	for (int64_t i = 0; i < N / 10; i += 1000) {
		int64_t to = i + 1000 < N / 10 ? i + 1000 : N / 10;
		for (int side = 0; side < 2; side++) {
			floor_coll_t *fc = side == 0 ? &f3 : &f0;
			double t0 = now();
			wt_check(w->s->begin_transaction(w->s, NULL), "begin");
			for (int64_t j = i; j < to; j++) {
				make_doc(&d, j);
				wt_check(floor_insert(fc, &d, j), "floor insert");
				bson_destroy(&d);
			}
			wt_check(w->s->commit_transaction(w->s, NULL), "commit");
			*(side == 0 ? &t_three : &t_none) += now() - t0;
		}
	}
	floor_close(&f3);
	floor_close(&f0);
	r->insert_3idx = (double)(N / 10) / t_three;
	r->insert_0idx = (double)(N / 10) / t_none;
}

/* the same work a client gets: the document's bytes copied out */
static double
wt_lookup(wt_t *w, int64_t ops, uint64_t seed)
{
	WT_CURSOR *c = w->c;
	WT_ITEM item;
	double t0 = now();
	int64_t i;
	rng_t rg;

	rnd_reset(&rg, seed);
	for (i = 0; i < ops; i++) {
		bson_t v, *copy;
		if (w->layout) {
			WT_ITEM key, typebits;
			uint8_t kbuf[10];
			int64_t rid;
			key.data = kbuf;
			key.size = floor_id_key(kbuf, rnd(&rg, N));
			w->ix->set_key(w->ix, &key);
			wt_check(w->ix->search(w->ix), "index search");
			wt_check(w->ix->get_value(w->ix, &rid, &typebits), "index value");
			w->ix->reset(w->ix);
			c->set_key(c, rid);
		} else {
			c->set_key(c, rnd(&rg, N));
		}
		wt_check(c->search(c), "search");
		wt_check(c->get_value(c, &item), "value");
		bson_init_static(&v, item.data, item.size);
		copy = bson_copy(&v);
		bson_destroy(copy);
		c->reset(c);
	}
	return (double)ops / (now() - t0);
}

/* full scan (every document copied into a reply-sized batch), or the filter
 * scan with libbson iterators on each document, matches copied out; each
 * batch is then read through (batch_count) as tdrain reads Tamga's replies */
static double
wt_scan(wt_t *w, bool filtered)
{
	WT_CURSOR *c = w->c;
	WT_ITEM item;
	bson_t batch = BSON_INITIALIZER;
	bson_iter_t it, f;
	double t0 = now();
	int64_t seen = 0, in_batch = 0;

	while (c->next(c) == 0) {
		bson_t v;
		wt_check(c->get_value(c, &item), "value");
		bson_init_static(&v, item.data, item.size);
		if (filtered) {
			if (!bson_iter_init_find(&it, &v, "rating") || !BSON_ITER_HOLDS_NUMBER(&it) ||
			    bson_iter_as_double(&it) < 3)
				continue;
			if (!bson_iter_init(&it, &v) || !bson_iter_find_descendant(&it, "customer.country", &f) ||
			    !BSON_ITER_HOLDS_UTF8(&f) || strcmp(bson_iter_utf8(&f, NULL), "TR") != 0)
				continue;
		}
		bson_append_document(&batch, "0", 1, &v);
		if (++in_batch == 10000) {   /* handed over: counted as tdrain counts */
			seen += batch_count(&batch);
			in_batch = 0;
			bson_reinit(&batch);
		}
	}
	seen += batch_count(&batch);
	bson_destroy(&batch);
	c->reset(c);
	if (seen != (filtered ? filter_expected : N))
		die("wt scan", "wrong count");
	return (double)N / (now() - t0);
}

/* One group of the hand-written $group. */
typedef struct group_acc {
	char key[16];
	int64_t n, rating_sum;
	double score_sum;
} group_acc_t;

/* group: sum of score and average rating per customer.country */
static double
wt_group(wt_t *w)
{
	WT_CURSOR *c = w->c;
	WT_ITEM item;
	group_acc_t g[16];
	int ng = 0, k;
	bson_iter_t it, f;
	double t0 = now(), avg = 0;

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
	for (k = 0; k < ng; k++) /* the $avg, as the result documents would carry it */
		avg += (double)g[k].rating_sum / (double)g[k].n;
	if (avg <= 0)
		die("wt group", "no ratings");
	return (double)N / (now() - t0);
}

static void
wt_reads(wt_t *w, result_t *r, int round)
{
	keep_best(&r->lookup, wt_lookup(w, N / 5 / ROUNDS, (uint64_t)round + 1));
	double cpu0 = cpu_now();

	keep_best(&r->scan, round_rate("full_scan", "wiredtiger", wt_scan(w, false), cpu0));
	keep_best(&r->filter, wt_scan(w, true));
	keep_best(&r->group, wt_group(w));
}

/* index build floor: a (title, RecordId) table filled from the records;
 * index lookup floor: index table (search_near on the prefix), then record */
static void
wt_index_build(wt_t *w, result_t *r)
{
	WT_SESSION *s = w->s;
	WT_CURSOR *c = w->c, *ic;
	WT_ITEM item, empty = {0};
	bson_iter_t it;
	double t0;
	int64_t id, n = 0;

	wt_check(s->create(s, "table:idx_title", "key_format=Sq,value_format=u"), "create");
	wt_check(s->open_cursor(s, "table:idx_title", NULL, NULL, &ic), "cursor");
	t0 = now();
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
	r->index_build = (double)N / (now() - t0);
	w->ix_title = ic;
}

/* One round of ops lookups: the index table, then the record table (the
 * document copied out, as a reader would); keeps the best rate. */
static void
wt_index_lookups(wt_t *w, int64_t ops, uint64_t seed, result_t *r)
{
	WT_CURSOR *c = w->c, *ic = w->ix_title;
	WT_ITEM item;
	double t0;
	int64_t i, id;
	rng_t rg;

	rnd_reset(&rg, seed);
	t0 = now();
	for (i = 0; i < ops; i++) {
		char want[64];
		const char *title;
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
	keep_best(&r->index_lookup, (double)ops / (now() - t0));
}

/* ---- SQLite -------------------------------------------------------------- */

static void
sq_check(sqlite3 *db, int rc, const char *what)
{
	if (rc != SQLITE_OK && rc != SQLITE_DONE && rc != SQLITE_ROW)
		die(what, db ? sqlite3_errmsg(db) : "open");
}

static sqlite3 *
sq_start(const char *path)
{
	sqlite3 *db;

	sq_check(NULL, sqlite3_open(path, &db), "open");
	sq_check(db, sqlite3_exec(db, "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA cache_size=-1000000;"
	    "CREATE TABLE single (id INTEGER PRIMARY KEY, doc TEXT NOT NULL);"
	    "CREATE TABLE docs (id INTEGER PRIMARY KEY, doc TEXT NOT NULL);", NULL, NULL, NULL), "schema");
	return db;
}

/* documents [from, to): autocommit inserts into single, or transactions
 * of 1000 into docs; returns the seconds taken */
static double
sq_insert(sqlite3 *db, bool batch, int64_t from, int64_t to)
{
	sqlite3_stmt *ins;
	double t0 = now();
	int64_t i, j, per = batch ? 1000 : 1;
	char json[600];
	int len;

	sq_check(db, sqlite3_prepare_v2(db, batch ? "INSERT INTO docs (id, doc) VALUES (?, json(?))" :
	    "INSERT INTO single (id, doc) VALUES (?, json(?))", -1, &ins, NULL), "prep");
	for (i = from; i < to; i += per) {
		if (batch)
			sq_check(db, sqlite3_exec(db, "BEGIN", NULL, NULL, NULL), "begin");
		for (j = 0; j < per && i + j < to; j++) {
			len = make_json(json, sizeof(json), i + j);
			sqlite3_bind_int64(ins, 1, i + j);
			sqlite3_bind_text(ins, 2, json, len, SQLITE_STATIC);
			sq_check(db, sqlite3_step(ins), "insert");
			sqlite3_reset(ins);
		}
		if (batch)
			sq_check(db, sqlite3_exec(db, "COMMIT", NULL, NULL, NULL), "commit");
	}
	sqlite3_finalize(ins);
	return now() - t0;
}

static double
sq_lookup(sqlite3 *db, int64_t ops, uint64_t seed)
{
	sqlite3_stmt *get;
	double t0;
	int64_t i;
	rng_t rg;

	sq_check(db, sqlite3_prepare_v2(db, "SELECT doc FROM docs WHERE id = ?", -1, &get, NULL), "prep");
	rnd_reset(&rg, seed);
	t0 = now();
	for (i = 0; i < ops; i++) {
		sqlite3_bind_int64(get, 1, rnd(&rg, N));
		if (sqlite3_step(get) != SQLITE_ROW)
			die("sqlite lookup", "missing row");
		(void)sqlite3_column_text(get, 0);
		sqlite3_reset(get);
	}
	t0 = (double)ops / (now() - t0);
	sqlite3_finalize(get);
	return t0;
}

static double
sq_scan(sqlite3 *db, bool filtered)
{
	sqlite3_stmt *q;
	double t0;
	int64_t seen = 0;

	sq_check(db, sqlite3_prepare_v2(db, filtered ? "SELECT doc FROM docs WHERE json_extract(doc, '$.rating') >= 3 "
	    "AND json_extract(doc, '$.customer.country') = 'TR'" : "SELECT doc FROM docs", -1, &q, NULL), "prep");
	t0 = now();
	while (sqlite3_step(q) == SQLITE_ROW) {
		(void)sqlite3_column_text(q, 0);
		seen++;
	}
	t0 = (double)N / (now() - t0);
	sqlite3_finalize(q);
	if (seen != (filtered ? filter_expected : N))
		die("sqlite scan", "wrong count");
	return t0;
}

static void
sq_reads(sqlite3 *db, result_t *r, int round)
{
	double cpu0;

	keep_best(&r->lookup, sq_lookup(db, N / 5 / ROUNDS, (uint64_t)round + 1));
	cpu0 = cpu_now();
	keep_best(&r->scan, round_rate("full_scan", "sqlite", sq_scan(db, false), cpu0));
	keep_best(&r->filter, sq_scan(db, true));
}

/* ---- PostgreSQL ---------------------------------------------------------- */

static void
pg_reads(PGconn *c, result_t *r, int round)
{
	PGresult *res;
	double t0;

	(void)round;
	t0 = now();
	res = pg_check(c, PQexec(c, "SELECT doc->'customer'->>'country', sum((doc->>'score')::float8), "
	    "avg((doc->>'rating')::int) FROM docs GROUP BY 1"), "postgresql group");
	if (PQntuples(res) != 4)
		die("postgresql group", "expected 4 groups");
	PQclear(res);
	keep_best(&r->group, (double)N / (now() - t0));

	t0 = now();
	res = pg_check(c, PQexec(c, "SELECT doc FROM docs ORDER BY (doc->>'score')::float8 DESC, id LIMIT 10"),
	    "postgresql sort");
	if (PQntuples(res) != 10)
		die("postgresql sort", "expected 10 rows");
	PQclear(res);
	keep_best(&r->sort_limit, (double)N / (now() - t0));
}

static void
pg_indexes(PGconn *c, result_t *r)
{
	double t0 = now();

	pg_exec(c, "CREATE INDEX docs_title ON docs ((doc->>'title'))");
	r->index_build = (double)N / (now() - t0);
}

/* ---- the run ------------------------------------------------------------- */

/* One comparison whose Tamga side (tv < 0: not available, why) or peer side
 * (have false: peer_why) may be missing. */
static void
line(const char *name, double tv, const char *why, const char *peer, bool have, double pv, const char *peer_why)
{
	if (tv < 0)
		report_na(name, why, peer, have ? pv : NA);
	else if (!have)
		report_peer_na(name, tv, peer, peer_why);
	else
		report(name, tv, peer, pv);
}

int
main(int argc, char **argv)
{
	char path[4096], pg_why[300];
	result_t t, w, l, s, p;
	tamga_t *tg;
	wt_t wt = {0}, wl = {0};
	sqlite3 *sq;
	PGconn *pc;
	int64_t i;
	int round, k, e, batch;

	if (argc < 2)
		die("usage", "bench_core WORKDIR");
	bench_read_n("bench_core");
	if (getenv("BENCH_SECONDS") != NULL && atof(getenv("BENCH_SECONDS")) > 0)
		max_seconds = atof(getenv("BENCH_SECONDS"));
	for (i = 0; i < N; i++)
		filter_expected += doc_matches_filter(i);
	init_result(&t);
	init_result(&w);
	init_result(&l);
	init_result(&s);
	init_result(&p);

	/* writes: all four engines open, CHUNKS chunks each, the engines'
	 * order rotating per chunk, each engine's time summed */
	snprintf(path, sizeof(path), "%s/tamga", argv[1]);
	tg = tamga_start(path);
	snprintf(path, sizeof(path), "%s/wt", argv[1]);
	wt_start(path, &wt, false);
	snprintf(path, sizeof(path), "%s/wt_layout", argv[1]);
	wt_start(path, &wl, true);
	snprintf(path, sizeof(path), "%s/sqlite.db", argv[1]);
	sq = sq_start(path);
	for (batch = 0; batch < 2; batch++) {
		int64_t total = batch ? N : N / 10, from = 0, to;
		double secs[4] = {0, 0, 0, 0};
		for (k = 0; k < CHUNKS; k++, from = to) {
			to = total * (k + 1) / CHUNKS;
			for (e = 0; e < 4; e++)
				switch ((k + e) % 4) {
				case 0:
					secs[0] += tamga_insert(tg, batch, from, to);
					break;
				case 1:
					secs[1] += wt_insert(&wt, batch, from, to);
					break;
				case 2:
					secs[2] += sq_insert(sq, batch, from, to);
					break;
				default:
					secs[3] += wt_insert(&wl, batch, from, to);
				}
		}
		*(batch ? &t.insert_batch : &t.insert_single) = (double)total / secs[0];
		*(batch ? &w.insert_batch : &w.insert_single) = (double)total / secs[1];
		*(batch ? &s.insert_batch : &s.insert_single) = (double)total / secs[2];
		*(batch ? &l.insert_batch : &l.insert_single) = (double)total / secs[3];
	}
	/* >>> issue 19: the same N documents in a clustered collection (not timed) */
	{
		bson_t *c = BCON_NEW("create", "cdocs", "clusteredIndex", "{", "key", "{", "_id", BCON_INT32(1), "}",
		    "unique", BCON_BOOL(true), "}");
		bson_t reply;
		tamga_error_t te;
		if (tamga_run_command(tg, DB, c, &reply, &te) != 0)
			snprintf(t.clustered_why, sizeof(t.clustered_why), "clustered create: %s", te.message);
		else if (tamga_insert_range(tg, "cdocs", 0, N, t.clustered_why, sizeof(t.clustered_why)) == 0)
			t.clustered_lookup = 0;
		bson_destroy(&reply);
		bson_destroy(c);
	}
	/* <<< issue 19 */
	if ((pc = pg_connect(pg_why, sizeof(pg_why))) != NULL)
		fprintf(stderr, "bench_core: postgresql COPY of %lld documents: %.0f docs/s\n", (long long)N,
		    pg_load_docs(pc, "docs", N));
	else
		fprintf(stderr, "bench_core: postgresql not available: %s\n", pg_why);

	/* reads, in rounds, the engines' order rotating */
	for (round = 0; round < ROUNDS; round++) {
		fprintf(stderr, "bench_core: read round %d\n", round + 1);
		for (k = 0; k < 5; k++)
			switch ((round + k) % 5) {
			case 0:
				tamga_reads(tg, &t, round);
				break;
			case 1:
				wt_reads(&wt, &w, round);
				break;
			case 2:
				sq_reads(sq, &s, round);
				break;
			case 3: /* the layout floor differs from the other one in lookups,
				 * and in its scan only by where its records sit in memory
				 * (written interleaved with their _id entries, as Tamga's) */
				keep_best(&l.lookup, wt_lookup(&wl, N / 5 / ROUNDS, (uint64_t)round + 1));
				double cpu0 = cpu_now();
				keep_best(&l.scan, round_rate("full_scan", "wiredtiger_layout", wt_scan(&wl, false), cpu0));
				break;
			default:
				if (pc != NULL)
					pg_reads(pc, &p, round);
			}
	}
	sqlite3_close(sq);

	/* indexes last: they change the collections.  Lookups in rounds, the
	 * two engines' order alternating, the best round of each counting. */
	{
		const char *lookup_coll = tamga_index_build(tg, &t);
		wt_index_build(&wt, &w);
		for (round = 0; round < ROUNDS; round++) {
			for (k = 0; k < 2; k++) {
				if ((round + k) % 2 == 0)
					tamga_index_lookups(tg, lookup_coll, N / 5 / ROUNDS, (uint64_t)round + 7, &t);
				else
					wt_index_lookups(&wt, N / 5 / ROUNDS, (uint64_t)round + 7, &w);
			}
		}
		tamga_index_inserts(tg, &t);
		wt_index_inserts(&wl, &l);
	}
	tamga_close(tg);
	wt_stop(&wt);
	wt_stop(&wl);
	if (pc != NULL) {
		pg_indexes(pc, &p);
		pg_exec(pc, "DROP TABLE docs");
		PQfinish(pc);
	}

	report("insert_single", t.insert_single, "wiredtiger", w.insert_single);
	report("insert_single", t.insert_single, "wiredtiger_layout", l.insert_single);
	report("insert_single", t.insert_single, "sqlite", s.insert_single);
	report("insert_batch", t.insert_batch, "wiredtiger", w.insert_batch);
	report("insert_batch", t.insert_batch, "wiredtiger_layout", l.insert_batch);
	report("insert_batch", t.insert_batch, "sqlite", s.insert_batch);
	report("id_lookup", t.lookup, "wiredtiger", w.lookup);
	report("id_lookup", t.lookup, "wiredtiger_layout", l.lookup);
	report("id_lookup", t.lookup, "sqlite", s.lookup);
	/* >>> issue 19 */
	line("id_lookup_clustered", t.clustered_lookup > 0 ? t.clustered_lookup : NA, t.clustered_why, "wiredtiger",
	    true, w.lookup, NULL);
	line("id_lookup_clustered", t.clustered_lookup > 0 ? t.clustered_lookup : NA, t.clustered_why, "sqlite", true,
	    s.lookup, NULL);
	/* <<< issue 19 */
	report("full_scan", t.scan, "wiredtiger", w.scan);
	report("full_scan", t.scan, "wiredtiger_layout", l.scan);
	report("full_scan", t.scan, "sqlite", s.scan);
	report("filter_scan", t.filter, "wiredtiger", w.filter);
	report("filter_scan", t.filter, "sqlite", s.filter);
	line("group", t.group, t.group_why, "wiredtiger", true, w.group, NULL);
	line("group", t.group, t.group_why, "postgresql", pc != NULL, p.group, pg_why);
	line("sort_limit", t.sort_limit, t.sort_why, "postgresql", pc != NULL, p.sort_limit, pg_why);
	line("index_build", t.index_build, t.index_why, "wiredtiger", true, w.index_build, NULL);
	line("index_build", t.index_build, t.index_why, "postgresql", pc != NULL, p.index_build, pg_why);
	line("index_lookup", t.index_lookup, t.lookup_why[0] ? t.lookup_why : t.index_why, "wiredtiger", true,
	    w.index_lookup, NULL);
	if (t.insert_3idx >= 0)
		report("insert_3_indexes", t.insert_3idx, "tamga_no_index", t.insert_0idx);
	else
		report_na("insert_3_indexes", t.idx3_why, NULL, NA);
	/* the same ratio of raw WiredTiger in Tamga's layout (not a tamga line) */
	printf("bench insert_3_indexes: floor wiredtiger_layout %.0f, wiredtiger_layout_no_index %.0f, ratio %.2f\n",
	    l.insert_3idx, l.insert_0idx, l.insert_0idx > 0 ? l.insert_3idx / l.insert_0idx : 0);
	return 0;
}
