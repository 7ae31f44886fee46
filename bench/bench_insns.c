/*
 * bench_insns.c -- instruction counts per operation of the core cases, for
 * callgrind (bench/insns.sh runs it): the numbers docs/benchmarks.md records
 * so that a regression shows as a number, whatever the load of the machine.
 *
 *   valgrind --tool=callgrind --collect-atstart=no bench_insns WORKDIR CASE
 *
 * Each case sets its data up with collection off, then runs its measured
 * loop between two CALLGRIND_TOGGLE_COLLECT()s (the commands are built
 * before it, so the loop is the engine's work plus reading the replies) and
 * prints "ops <n> <unit>" on stdout: insns.sh divides callgrind's total by
 * n.  Cases: insert_single, insert_batch, insert_3_indexes, id_lookup, id_lookup_clustered,
 * id_lookup_toolbelt (profiler level 1 + $queryStats on every query),
 * full_scan, filter_scan, constraint_scan, preview_scan, set_stage,
 * addfields_stage, sort_set_stage ($sort then $set: what a field-order
 * slot carried through a sort costs a pipeline that removes nothing),
 * unset_sort_set_stage ($unset, $sort, $set of the removed field: the
 * slot carried), covered_find; and the floors of issue 23 (raw WiredTiger
 * in Tamga's layout, bench_floor.h, in a connection of their own):
 * floor_insert_batch, floor_insert_3_indexes, floor_id_lookup, floor_scan.  BENCH_N (default 20000) sizes the collections.  Without
 * valgrind the program runs the same loops (the toggles do nothing).
 */
#include <valgrind/callgrind.h>

#include "bench_common.h"
#include "bench_floor.h"

#define DB "bench"

static tamga_t *t;

static void
fill(const char *coll, int64_t n)
{
	bson_t cmd, docs, d;
	char key[16];

	for (int64_t i = 0; i < n; i += 1000) {
		int64_t j;
		bson_init(&cmd);
		BSON_APPEND_UTF8(&cmd, "insert", coll);
		bson_append_array_begin(&cmd, "documents", -1, &docs);
		for (j = 0; j < 1000 && i + j < n; j++) {
			snprintf(key, sizeof(key), "%d", (int)j);
			make_doc(&d, i + j);
			bson_append_document(&docs, key, -1, &d);
			bson_destroy(&d);
		}
		bson_append_array_end(&cmd, &docs);
		twrite(t, DB, &cmd, j, NULL, 0);
		bson_destroy(&cmd);
	}
}

/* n insert commands of `per` documents each, built first, then run
 * measured; documents numbered from base. */
static void
inserts(const char *coll, int64_t n, int per, int64_t base)
{
	bson_t **cmds = calloc((size_t)n, sizeof(bson_t *));
	char key[16];

	for (int64_t i = 0; i < n; i++) {
		bson_t docs, d;
		cmds[i] = bson_new();
		BSON_APPEND_UTF8(cmds[i], "insert", coll);
		bson_append_array_begin(cmds[i], "documents", -1, &docs);
		for (int j = 0; j < per; j++) {
			snprintf(key, sizeof(key), "%d", j);
			make_doc(&d, base + i * per + j);
			bson_append_document(&docs, key, -1, &d);
			bson_destroy(&d);
		}
		bson_append_array_end(cmds[i], &docs);
	}
	CALLGRIND_TOGGLE_COLLECT;
	for (int64_t i = 0; i < n; i++)
		twrite(t, DB, cmds[i], per, NULL, 0);
	CALLGRIND_TOGGLE_COLLECT;
	for (int64_t i = 0; i < n; i++)
		bson_destroy(cmds[i]);
	free(cmds);
	printf("ops %lld documents\n", (long long)(n * per));
}

static void
index_on(const char *coll, const char *field, const char *name)
{
	bson_t *c = BCON_NEW("createIndexes", BCON_UTF8(coll), "indexes", "[", "{", "key", "{", field, BCON_INT32(1),
	    "}", "name", BCON_UTF8(name), "}", "]");
	tcmd0(t, DB, c);
	bson_destroy(c);
}

/* One command drained, measured; returns the documents seen. */
static int64_t
drained(const bson_t *cmd, const char *coll)
{
	bson_t reply;
	int64_t seen;

	CALLGRIND_TOGGLE_COLLECT;
	tcmd(t, DB, cmd, &reply);
	seen = tdrain(t, DB, coll, &reply, 10000);
	CALLGRIND_TOGGLE_COLLECT;
	return seen;
}

/* toolbelt: the profiler at level 1 (slowms 100) and $queryStats on every
 * query (internalQueryStatsRateLimit -1), issue 20's overhead target. */
static void
case_lookup(bool toolbelt, bool clustered)
{
	int64_t ops = N / 4 < 5000 ? N / 4 : 5000;
	bson_t **cmds = calloc((size_t)ops, sizeof(bson_t *));
	rng_t rg;

	if (clustered) {
		/* issue 19: the same finds in a clustered collection */
		bson_t *c = BCON_NEW("create", "docs", "clusteredIndex", "{", "key", "{", "_id", BCON_INT32(1), "}",
		    "unique", BCON_BOOL(true), "}");
		tcmd0(t, DB, c);
		bson_destroy(c);
	}
	fill("docs", N);
	if (toolbelt) {
		bson_t *c = BCON_NEW("profile", BCON_INT32(1), "slowms", BCON_INT32(100));
		tcmd0(t, DB, c);
		bson_destroy(c);
		c = BCON_NEW("setParameter", BCON_INT32(1), "internalQueryStatsRateLimit", BCON_INT32(-1));
		tcmd0(t, "admin", c);
		bson_destroy(c);
	}
	rnd_reset(&rg, 7);
	for (int64_t i = 0; i < ops; i++)
		cmds[i] = BCON_NEW("find", "docs", "filter", "{", "_id", BCON_INT64(rnd(&rg, N)), "}");
	CALLGRIND_TOGGLE_COLLECT;
	for (int64_t i = 0; i < ops; i++) {
		bson_t reply;
		tcmd(t, DB, cmds[i], &reply);
		if (tdrain(t, DB, "docs", &reply, 10000) != 1)
			die("id_lookup", "not one document");
	}
	CALLGRIND_TOGGLE_COLLECT;
	for (int64_t i = 0; i < ops; i++)
		bson_destroy(cmds[i]);
	free(cmds);
	printf("ops %lld finds\n", (long long)ops);
}

static void
case_scan(bool filtered)
{
	bson_t *c;
	int64_t seen;

	fill("docs", N);
	if (filtered)
		c = BCON_NEW("find", "docs", "filter", "{", "rating", "{", "$gte", BCON_INT32(3), "}",
		    "customer.country", "TR", "}", "batchSize", BCON_INT32(10000));
	else
		c = BCON_NEW("find", "docs", "batchSize", BCON_INT32(10000));
	seen = drained(c, "docs");
	if (!filtered && seen != N)
		die("full_scan", "wrong count");
	bson_destroy(c);
	printf("ops %lld documents\n", (long long)N);
}

/* The seed's reviewSchema on the bench documents' shape would reject them;
 * this one accepts them and checks as many fields as the review schema
 * does (types, required fields, a nested object, bounds, an array).
 * preview: the same validator through tamgaValidationPreview (one thread
 * below 50 000 documents), the collection created without it. */
static void
case_constraint(bool preview)
{
	bson_t *c;
	char why[600];

	if (preview) {
		tcmd0(t, DB, (c = BCON_NEW("create", "docs")));
		bson_destroy(c);
		fill("docs", N);
	}
	c = BCON_NEW(preview ? "tamgaValidationPreview" : "create", "docs", "validator", "{", "$jsonSchema", "{",
	    "bsonType", "object",
	    "required", "[", "title", "customer", "rating", "at", "]",
	    "properties", "{",
	    "title", "{", "bsonType", "string", "minLength", BCON_INT32(1), "}",
	    "customer", "{", "bsonType", "object", "required", "[", "name", "country", "]",
	    "properties", "{", "name", "{", "bsonType", "string", "}", "country", "{", "bsonType", "string",
	    "maxLength", BCON_INT32(2), "}", "}", "}",
	    "rating", "{", "bsonType", "int", "minimum", BCON_INT32(1), "maximum", BCON_INT32(5), "}",
	    "score", "{", "bsonType", "double", "}",
	    "at", "{", "bsonType", "date", "}",
	    "tags", "{", "bsonType", "array", "items", "{", "bsonType", "string", "}", "}",
	    "}", "}", "}", "validationLevel", "strict", "validationAction", "error");
	if (preview) {
		bson_t reply;
		bson_iter_t it;
		/* validationLevel/Action are create's: the preview is given the
		 * validator alone */
		bson_t *v = bson_new();
		bson_iter_init(&it, c);
		while (bson_iter_next(&it))
			if (strcmp(bson_iter_key(&it), "validationLevel") != 0 &&
			    strcmp(bson_iter_key(&it), "validationAction") != 0)
				bson_append_iter(v, NULL, 0, &it);
		CALLGRIND_TOGGLE_COLLECT;
		tcmd(t, DB, v, &reply);
		CALLGRIND_TOGGLE_COLLECT;
		if (!bson_iter_init_find(&it, &reply, "scanned") || bson_iter_as_int64(&it) != N)
			die("tamgaValidationPreview", "wrong count");
		bson_destroy(&reply);
		bson_destroy(v);
		bson_destroy(c);
		printf("ops %lld documents\n", (long long)N);
		return;
	}
	tcmd0(t, DB, c);
	bson_destroy(c);
	fill("docs", N);
	c = BCON_NEW("collMod", "docs", "prepareConstraintValidationLevel", BCON_BOOL(true));
	if (ttry(t, DB, c, why, sizeof(why)) != 0)
		die("collMod prepare", why);
	bson_destroy(c);
	c = BCON_NEW("collMod", "docs", "validationLevel", "constraint", "validationAction", "error");
	CALLGRIND_TOGGLE_COLLECT;
	if (ttry(t, DB, c, why, sizeof(why)) != 0)
		die("collMod constraint", why);
	CALLGRIND_TOGGLE_COLLECT;
	bson_destroy(c);
	printf("ops %lld documents\n", (long long)N);
}

static void
case_stage(const char *stage)
{
	bson_t *c;

	fill("docs", N);
	c = BCON_NEW("aggregate", "docs", "pipeline", "[", "{", stage, "{", "bonus", "{", "$add", "[", "$score",
	    BCON_INT32(1), "]", "}", "country", "$customer.country", "}", "}", "]", "cursor", "{", "batchSize",
	    BCON_INT32(10000), "}");
	if (drained(c, "docs") != N)
		die(stage, "wrong count");
	bson_destroy(c);
	printf("ops %lld documents\n", (long long)N);
}

/* A $sort (in memory, not pushed into the planner: a stage before it)
 * between $unset or $set and a $set; per document. */
static void
case_sort_set(bool unset)
{
	const char *json = unset
	    ? "{\"aggregate\": \"docs\", \"pipeline\": [{\"$unset\": \"score\"}, {\"$sort\": {\"rating\": -1}},"
	      " {\"$set\": {\"score\": 1, \"country\": \"$customer.country\"}}], \"cursor\": {\"batchSize\": 10000}}"
	    : "{\"aggregate\": \"docs\", \"pipeline\": [{\"$set\": {\"n\": 1}}, {\"$sort\": {\"rating\": -1}},"
	      " {\"$set\": {\"bonus\": {\"$add\": [\"$score\", 1]}, \"country\": \"$customer.country\"}}],"
	      " \"cursor\": {\"batchSize\": 10000}}";
	bson_t *c = bson_new_from_json((const uint8_t *)json, -1, NULL);

	fill("docs", N);
	if (c == NULL || drained(c, "docs") != N)
		die("sort_set", "wrong count");
	bson_destroy(c);
	printf("ops %lld documents\n", (long long)N);
}

/* The covered query: {city: 1, age: 1}, find({city: "Berlin"},
 * {_id: 0, city: 1, age: 1}); per document returned. */
static void
case_covered(void)
{
	bson_t *c;
	int64_t seen;

	fill("docs", N);
	index_on("docs", "customer.city", "city_1");
	c = BCON_NEW("find", "docs", "filter", "{", "customer.city", "Berlin", "}", "projection", "{", "_id",
	    BCON_INT32(0), "customer.city", BCON_INT32(1), "}", "batchSize", BCON_INT32(10000));
	seen = drained(c, "docs");
	bson_destroy(c);
	printf("ops %lld documents\n", (long long)seen);
}

/* Issue 23's floors: the same work as insert_batch / insert_3_indexes /
 * id_lookup done by raw WiredTiger in Tamga's layout (bench_floor.h), with
 * Tamga's connection settings, in its own folder; the documents are built
 * before the measured loop, as the commands of the Tamga cases are. */
static void
case_floor(const char *dir, const char *k)
{
	WT_CONNECTION *conn;
	WT_SESSION *s;
	floor_coll_t fc;
	char path[4096];
	int nsec = strcmp(k, "floor_insert_3_indexes") == 0 ? 3 : 0;
	bool scan = strcmp(k, "floor_scan") == 0;
	bool lookup = scan || strcmp(k, "floor_id_lookup") == 0;
	int64_t n = lookup ? N : N + 1000, ops = N / 4 < 5000 ? N / 4 : 5000;
	bson_t *docs = calloc((size_t)n, sizeof(bson_t));
	rng_t rg;

	snprintf(path, sizeof(path), "%s/floor-%s", dir, k);
	mkdir(path, 0755);
	if (wiredtiger_open(path, NULL, BENCH_WT_CONFIG("1G"), &conn) != 0 ||
	    conn->open_session(conn, NULL, "isolation=snapshot", &s) != 0 || floor_open(s, "docs", nsec, &fc) != 0)
		die(k, "wiredtiger open");
	for (int64_t i = 0; i < n; i++)
		make_doc(&docs[i], i);
	/* the first 1000 (or, for lookups, all N) unmeasured, as fill() */
	for (int64_t i = 0; i < (lookup ? N : 1000); i += 1000) {
		s->begin_transaction(s, NULL);
		for (int64_t j = i; j < i + 1000 && j < n; j++)
			if (floor_insert(&fc, &docs[j], j) != 0)
				die(k, "insert");
		s->commit_transaction(s, NULL);
	}
	if (scan) {
		/* full_scan's floor (bench_core's wt_scan): walk the record
		 * table, copy each document into a batch of 10000 */
		WT_ITEM item;
		bson_t batch = BSON_INITIALIZER, v;
		int64_t seen = 0, in_batch = 0;

		CALLGRIND_TOGGLE_COLLECT;
		while (fc.rec->next(fc.rec) == 0) {
			if (fc.rec->get_value(fc.rec, &item) != 0 || !bson_init_static(&v, item.data, item.size))
				die(k, "value");
			bson_append_document(&batch, "0", 1, &v);
			if (++in_batch == 10000) {   /* read through as tdrain reads a reply */
				seen += batch_count(&batch);
				in_batch = 0;
				bson_reinit(&batch);
			}
		}
		seen += batch_count(&batch);
		CALLGRIND_TOGGLE_COLLECT;
		bson_destroy(&batch);
		fc.rec->reset(fc.rec);
		if (seen != N)
			die(k, "wrong count");
		printf("ops %lld documents\n", (long long)seen);
	} else if (lookup) {
		rnd_reset(&rg, 7);
		CALLGRIND_TOGGLE_COLLECT;
		for (int64_t i = 0; i < ops; i++)
			if (floor_lookup(&fc, rnd(&rg, N)) != 0)
				die(k, "lookup");
		CALLGRIND_TOGGLE_COLLECT;
		printf("ops %lld finds\n", (long long)ops);
	} else {
		CALLGRIND_TOGGLE_COLLECT;
		for (int64_t i = 1000; i < n; i += 1000) {
			s->begin_transaction(s, NULL);
			for (int64_t j = i; j < i + 1000 && j < n; j++)
				if (floor_insert(&fc, &docs[j], j) != 0)
					die(k, "insert");
			s->commit_transaction(s, NULL);
		}
		CALLGRIND_TOGGLE_COLLECT;
		printf("ops %lld documents\n", (long long)(n - 1000));
	}
	for (int64_t i = 0; i < n; i++)
		bson_destroy(&docs[i]);
	free(docs);
	floor_close(&fc);
	conn->close(conn, NULL);
}

int
main(int argc, char **argv)
{
	char path[4096];
	tamga_error_t e;
	const char *k;
	const char *env = getenv("BENCH_N");

	if (argc < 3)
		die("usage", "bench_insns WORKDIR CASE");
	N = env != NULL && atoll(env) > 0 ? atoll(env) : 20000;
	k = argv[2];
	if (strncmp(k, "floor_", 6) == 0) {
		case_floor(argv[1], k);
		return 0;
	}
	snprintf(path, sizeof(path), "%s/tamga-insns-%s", argv[1], k);
	if (tamga_open(path, "create,cache_size=1G", &t, &e) != 0)
		die("tamga_open", e.message);
	/* callgrind runs ~50x slower: with mongod's default slowms (100) the
	 * slow-operation log would fire on commands that take well under a
	 * millisecond natively, and count its own work (and OpenSSL's start)
	 * into the case.  The profiler stays off, as in a real run. */
	{
		bson_t *c = BCON_NEW("profile", BCON_INT32(0), "slowms", BCON_INT32(1000000));
		tcmd0(t, DB, c);
		bson_destroy(c);
	}
	/* one command of each kind first: the catalog and cursor caches warm */
	fill("warm", 10);
	if (strcmp(k, "insert_single") == 0) {
		fill("single", 10);
		inserts("single", N / 10, 1, 1000);
	} else if (strcmp(k, "insert_batch") == 0) {
		fill("docs", 1000);
		inserts("docs", N / 1000, 1000, 1000);
	} else if (strcmp(k, "insert_3_indexes") == 0) {
		fill("docs", 1000);
		index_on("docs", "title", "title_1");
		index_on("docs", "customer.city", "city_1");
		index_on("docs", "score", "score_1");
		inserts("docs", N / 1000, 1000, 1000);
	} else if (strcmp(k, "id_lookup") == 0) {
		case_lookup(false, false);
	} else if (strcmp(k, "id_lookup_clustered") == 0) {
		case_lookup(false, true);
	} else if (strcmp(k, "id_lookup_toolbelt") == 0) {
		case_lookup(true, false);
	} else if (strcmp(k, "full_scan") == 0) {
		case_scan(false);
	} else if (strcmp(k, "filter_scan") == 0) {
		case_scan(true);
	} else if (strcmp(k, "constraint_scan") == 0) {
		case_constraint(false);
	} else if (strcmp(k, "preview_scan") == 0) {
		case_constraint(true);
	} else if (strcmp(k, "set_stage") == 0) {
		case_stage("$set");
	} else if (strcmp(k, "addfields_stage") == 0) {
		case_stage("$addFields");
	} else if (strcmp(k, "sort_set_stage") == 0) {
		case_sort_set(false);
	} else if (strcmp(k, "unset_sort_set_stage") == 0) {
		case_sort_set(true);
	} else if (strcmp(k, "covered_find") == 0) {
		case_covered();
	} else {
		die("unknown case", k);
	}
	tamga_close(t);
	return 0;
}
