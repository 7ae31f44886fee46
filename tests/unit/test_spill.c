/*
 * test_spill.c -- disk use of blocking sorts through the embedded API, as
 * mongod 6.0+ does it: allowDiskUse absent means the server parameter
 * allowDiskUseByDefault (true), so find's sort, an aggregate's pushed-down
 * sort and a $sort stage (also top-k, also in a $lookup) spill past the
 * memory limit; allowDiskUse: false answers 292.  A single update's sort
 * (findAndModify, updateOne) keeps one document, as mongod's limit of 1.
 * $group past internalDocumentSourceGroupMaxMemoryBytes writes partial
 * groups to disk and merges them into the answer it gives in memory;
 * $bucketAuto spills its sort.  The limit is set low
 * with setParameter internalQueryMaxBlockingSortMemoryUsageBytes (as
 * mongod's jstests do), so no test writes 100 MB.  Also setParameter's and
 * getParameter's replies and errors for these parameters.
 */
#include "tt.h"

#include "tt_embedded.h"

static tamga_t *db;
static char *dir;

#define NDOCS 300

static bson_t *
run(const char *dbname, const char *json, int *rc)
{
	return tt_run_json(db, dbname, json, rc);
}

static void
ok(const char *dbname, const char *json)
{
	int rc;
	bson_t *r = run(dbname, json, &rc);

	if (rc != 0) {
		char *s = bson_as_relaxed_extended_json(r, NULL);
		TT_FAIL_("%s -> %s", json, s);
		bson_free(s);
	}
	tt_free_reply(r);
}

/* Run json on db "s"; expect the error code and, when msg is not NULL,
 * that message. */
static void
fails(const char *dbname, const char *json, int code, const char *msg)
{
	int rc;
	bson_t *r = run(dbname, json, &rc);

	TT_ASSERT(rc != 0);
	if (tt_get_i64(r, "code") != code || (msg != NULL && strcmp(tt_get_str(r, "errmsg"), msg) != 0)) {
		char *s = bson_as_relaxed_extended_json(r, NULL);
		TT_FAIL_("%s -> %s, want code %d", json, s, code);
		bson_free(s);
	}
	tt_free_reply(r);
}

/* Run a find or aggregate on db "s" and check its first batch: `want`
 * documents whose k run from `from` by `step`.  Returns the count seen, or
 * -1 when the command failed. */
static int
check_sorted(const char *json, int want, int from, int step)
{
	int rc, n = 0;
	bson_t *r = run("s", json, &rc);
	bson_iter_t f, it;

	if (rc != 0) {
		char *s = bson_as_relaxed_extended_json(r, NULL);
		TT_FAIL_("%s -> %s", json, s);
		bson_free(s);
		tt_free_reply(r);
		return -1;
	}
	TT_ASSERT(tt_get(r, "cursor.firstBatch", &f) && BSON_ITER_HOLDS_ARRAY(&f));
	bson_iter_recurse(&f, &it);
	while (bson_iter_next(&it)) {
		bson_iter_t d, k;
		bson_iter_recurse(&it, &d);
		TT_ASSERT(bson_iter_find(&d, "k"));
		bson_iter_recurse(&it, &k);
		bson_iter_find(&k, "k");
		if (bson_iter_as_int64(&k) != from + (int64_t)n * step) {
			TT_FAIL_("%s: document %d has k %lld, want %d", json, n,
			         (long long)bson_iter_as_int64(&k), from + n * step);
			break;
		}
		n++;
	}
	TT_EQ_INT(n, want);
	tt_free_reply(r);
	return n;
}

/* NDOCS documents of about 1 KB, k a permutation of 0..NDOCS-1 */
static void
load(void)
{
	bson_t *cmd = bson_new(), docs, d, *reply;
	char pad[1001];
	int rc;

	memset(pad, 'p', 1000);
	pad[1000] = '\0';
	BSON_APPEND_UTF8(cmd, "insert", "c");
	BSON_APPEND_ARRAY_BEGIN(cmd, "documents", &docs);
	for (int i = 0; i < NDOCS; i++) {
		char key[16];
		snprintf(key, sizeof key, "%d", i);
		BSON_APPEND_DOCUMENT_BEGIN(&docs, key, &d);
		BSON_APPEND_INT32(&d, "_id", i);
		BSON_APPEND_INT32(&d, "k", (i * 37) % NDOCS);
		BSON_APPEND_UTF8(&d, "pad", pad);
		bson_append_document_end(&docs, &d);
	}
	bson_append_array_end(cmd, &docs);
	reply = tt_run_bson(db, "s", cmd, &rc);
	TT_EQ_INT(rc, 0);
	tt_free_reply(reply);
	bson_destroy(cmd);
}

/* a find's executor errors carry mongod's context (issue 22) */
#define SORT_292 "Executor error during find command: s.c :: caused by :: Sort exceeded memory limit of 32768 bytes, but did not opt in to external sorting."

/* Under the default (allowDiskUseByDefault true) every sort spills. */
static void
test_default_spills(void)
{
	/* find */
	check_sorted("{\"find\": \"c\", \"sort\": {\"k\": 1}, \"batchSize\": 1000}", NDOCS, 0, 1);
	check_sorted("{\"find\": \"c\", \"sort\": {\"k\": -1}, \"batchSize\": 1000, \"allowDiskUse\": true}",
	             NDOCS, NDOCS - 1, -1);
	check_sorted("{\"find\": \"c\", \"sort\": {\"k\": 1}, \"skip\": 10, \"limit\": 200, \"batchSize\": 1000}",
	             200, 10, 1);
	/* aggregate: the $sort pushed down into the find layer */
	check_sorted("{\"aggregate\": \"c\", \"pipeline\": [{\"$sort\": {\"k\": -1}}], \"cursor\": {\"batchSize\": 1000}}",
	             NDOCS, NDOCS - 1, -1);
	/* the $sort stage itself (after a stage that stays in the pipeline) */
	check_sorted("{\"aggregate\": \"c\", \"pipeline\": [{\"$addFields\": {\"x\": 1}}, {\"$sort\": {\"k\": 1}}],"
	             " \"cursor\": {\"batchSize\": 1000}}", NDOCS, 0, 1);
	/* ... with a top-k that itself holds more than the limit */
	check_sorted("{\"aggregate\": \"c\", \"pipeline\": [{\"$addFields\": {\"x\": 1}}, {\"$sort\": {\"k\": -1}},"
	             " {\"$limit\": 120}], \"cursor\": {\"batchSize\": 1000}}", 120, NDOCS - 1, -1);
	/* ... in a $lookup sub-pipeline */
	check_sorted("{\"aggregate\": \"c\", \"pipeline\": [{\"$match\": {\"_id\": 0}},"
	             " {\"$lookup\": {\"from\": \"c\", \"as\": \"all\", \"pipeline\": [{\"$addFields\": {\"y\": 1}},"
	             " {\"$sort\": {\"k\": 1}}]}}, {\"$unwind\": \"$all\"}, {\"$replaceWith\": \"$all\"}],"
	             " \"cursor\": {\"batchSize\": 1000}}", NDOCS, 0, 1);
	/* explain executionStats of a find reports the disk use */
	{
		int rc;
		bson_t *r = run("s", "{\"explain\": {\"find\": \"c\", \"sort\": {\"k\": 1}}, \"verbosity\": \"executionStats\"}", &rc);
		char *j = bson_as_relaxed_extended_json(r, NULL);
		TT_EQ_INT(rc, 0);
		TT_ASSERT(strstr(j, "\"usedDisk\" : true") != NULL);
		bson_free(j);
		tt_free_reply(r);
	}
	/* findAndModify's sort: the largest k is the one changed; the same
	 * with updateOne's sort and a remove */
	{
		int rc;
		bson_t *r = run("s", "{\"findAndModify\": \"c\", \"query\": {}, \"sort\": {\"k\": -1},"
		                " \"update\": {\"$set\": {\"top\": true}}, \"fields\": {\"k\": 1}}", &rc);
		TT_EQ_INT(rc, 0);
		TT_EQ_INT(tt_get_i64(r, "value.k"), NDOCS - 1);
		tt_free_reply(r);
		ok("s", "{\"update\": \"c\", \"updates\": [{\"q\": {\"top\": true}, \"u\": {\"$unset\": {\"top\": 1}}}]}");
		ok("s", "{\"update\": \"c\", \"updates\": [{\"q\": {\"k\": {\"$gte\": 10}}, \"sort\": {\"k\": 1},"
		   " \"u\": {\"$set\": {\"first\": true}}}]}");
		r = run("s", "{\"find\": \"c\", \"filter\": {\"first\": true}}", &rc);
		TT_EQ_INT(tt_get_i64(r, "cursor.firstBatch.0.k"), 10);
		TT_EQ_INT(tt_get_i64(r, "cursor.firstBatch.1.k"), -999);
		tt_free_reply(r);
		r = run("s", "{\"findAndModify\": \"c\", \"query\": {\"first\": true}, \"sort\": {\"k\": -1},"
		        " \"remove\": true}", &rc);
		TT_EQ_INT(tt_get_i64(r, "value.k"), 10);
		tt_free_reply(r);
		ok("s", "{\"insert\": \"c\", \"documents\": [{\"_id\": 1000, \"k\": 10, \"pad\": \"p\"}]}");
	}
}

/* allowDiskUse: false answers 292 with mongod's message. */
static void
test_opt_out(void)
{
	fails("s", "{\"find\": \"c\", \"sort\": {\"k\": 1}, \"allowDiskUse\": false}", 292, SORT_292);
	fails("s", "{\"aggregate\": \"c\", \"pipeline\": [{\"$sort\": {\"k\": 1}}], \"cursor\": {},"
	      " \"allowDiskUse\": false}", 292, NULL);
	fails("s", "{\"aggregate\": \"c\", \"pipeline\": [{\"$addFields\": {\"x\": 1}}, {\"$sort\": {\"k\": 1}}],"
	      " \"cursor\": {}, \"allowDiskUse\": false}", 292, NULL);
	/* a top-k that fits needs no disk */
	check_sorted("{\"find\": \"c\", \"sort\": {\"k\": 1}, \"limit\": 5, \"allowDiskUse\": false}", 5, 0, 1);
	/* allowDiskUse is type checked */
	fails("s", "{\"find\": \"c\", \"sort\": {\"k\": 1}, \"allowDiskUse\": \"yes\"}", 14,
	      "BSON field 'find.allowDiskUse' is the wrong type 'string', expected type 'bool'");
}

/* allowDiskUseByDefault false: absent means no, true still opts in. */
static void
test_default_off(void)
{
	int rc;
	bson_t *r = run("admin", "{\"setParameter\": 1, \"allowDiskUseByDefault\": false}", &rc);

	TT_EQ_INT(rc, 0);
	TT_EQ_JSON(r, "{ \"was\" : true, \"ok\" : 1.0 }");
	tt_free_reply(r);
	r = run("admin", "{\"getParameter\": 1, \"allowDiskUseByDefault\": 1}", &rc);
	TT_EQ_JSON(r, "{ \"allowDiskUseByDefault\" : false, \"ok\" : 1.0 }");
	tt_free_reply(r);

	fails("s", "{\"find\": \"c\", \"sort\": {\"k\": 1}}", 292, SORT_292);
	fails("s", "{\"aggregate\": \"c\", \"pipeline\": [{\"$sort\": {\"k\": 1}}], \"cursor\": {}}", 292, NULL);
	fails("s", "{\"aggregate\": \"c\", \"pipeline\": [{\"$addFields\": {\"x\": 1}}, {\"$sort\": {\"k\": 1}}],"
	      " \"cursor\": {}}", 292, NULL);
	/* a single update's sort keeps one document (mongod's limit 1): no disk */
	{
		bson_t *r2 = run("s", "{\"findAndModify\": \"c\", \"query\": {}, \"sort\": {\"k\": 1},"
		                 " \"update\": {\"$set\": {\"low\": true}}, \"new\": true}", &rc);
		TT_EQ_INT(rc, 0);
		TT_EQ_INT(tt_get_i64(r2, "value.k"), 0);
		tt_free_reply(r2);
		ok("s", "{\"update\": \"c\", \"updates\": [{\"q\": {}, \"u\": {\"$unset\": {\"low\": 1}}, \"multi\": true}]}");
	}
	check_sorted("{\"find\": \"c\", \"sort\": {\"k\": 1}, \"batchSize\": 1000, \"allowDiskUse\": true}",
	             NDOCS, 0, 1);
	check_sorted("{\"aggregate\": \"c\", \"pipeline\": [{\"$addFields\": {\"x\": 1}}, {\"$sort\": {\"k\": 1}}],"
	             " \"cursor\": {\"batchSize\": 1000}, \"allowDiskUse\": true}", NDOCS, 0, 1);

	/* any value is read for its truth, as mongod's trueValue */
	r = run("admin", "{\"setParameter\": 1, \"allowDiskUseByDefault\": 1}", &rc);
	TT_EQ_JSON(r, "{ \"was\" : false, \"ok\" : 1.0 }");
	tt_free_reply(r);
	check_sorted("{\"find\": \"c\", \"sort\": {\"k\": 1}, \"batchSize\": 1000}", NDOCS, 0, 1);
}

/* The first batch of a command on db "s" as canonical JSON ({"0": ...}),
 * or the reply when it has none; the caller frees it. */
static char *
reply_json(const char *json)
{
	int rc;
	bson_t *r = run("s", json, &rc);
	char *j;
	bson_iter_t f;

	if (rc == 0 && tt_get(r, "cursor.firstBatch", &f)) {
		bson_t arr;
		const uint8_t *d;
		uint32_t l;
		bson_iter_array(&f, &l, &d);
		bson_init_static(&arr, d, l);
		j = bson_as_canonical_extended_json(&arr, NULL);
	} else {
		j = bson_as_relaxed_extended_json(r, NULL);
	}
	tt_free_reply(r);
	return j;
}

static void
set_limit(const char *param, long long n)
{
	char *json = bson_strdup_printf("{\"setParameter\": 1, \"%s\": %lld}", param, n);
	ok("admin", json);
	bson_free(json);
}

/* pipeline (JSON array) on c gives the same answer with the memory limit
 * param at 4096 bytes (spilling) as at 100 MB, and 292 with no_disk_msg
 * under allowDiskUse: false; the limit is left at 100 MB. */
static void
spills_like_memory(const char *pipeline, const char *param, const char *no_disk_msg)
{
	char *cmd = bson_strdup_printf("{\"aggregate\": \"c\", \"pipeline\": %s, \"cursor\": {\"batchSize\": 1000}}",
	                               pipeline);
	char *no_disk = bson_strdup_printf("{\"aggregate\": \"c\", \"pipeline\": %s, \"cursor\": {},"
	                                   " \"allowDiskUse\": false}", pipeline);
	char *want, *got;

	set_limit(param, 100LL * 1024 * 1024);
	want = reply_json(cmd);
	TT_ASSERT(strstr(want, "errmsg") == NULL);
	set_limit(param, 4096);
	got = reply_json(cmd);
	if (strcmp(want, got) != 0) {
		size_t at = 0;
		while (want[at] == got[at])
			at++;
		at = at > 200 ? at - 200 : 0;
		TT_FAIL_("%s: spilled ...%.400s\nin memory ...%.400s", pipeline, got + at, want + at);
	}
	fails("s", no_disk, 292, no_disk_msg);
	set_limit(param, 100LL * 1024 * 1024);
	bson_free(want);
	bson_free(got);
	bson_free(cmd);
	bson_free(no_disk);
}

static void
set_group_limit(long long n)
{
	set_limit("internalDocumentSourceGroupMaxMemoryBytes", n);
}

/* $group past its memory limit writes partial groups to disk and merges
 * them: the same answer as in memory, for every accumulator, mixed-type
 * keys (1, 1.0, NumberLong(1): one group, first spelling), array and
 * document keys; 292 when disk use is not allowed. */
static void
test_group_spills(void)
{
	static const char *const pipelines[] = {
		"[{\"$group\": {\"_id\": {\"$cond\": [{\"$eq\": [{\"$mod\": [\"$_id\", 3]}, 0]},"
		" {\"$toLong\": {\"$mod\": [\"$k\", 40]}}, {\"$mod\": [\"$k\", 40]}]},"
		" \"sum\": {\"$sum\": \"$k\"}, \"fsum\": {\"$sum\": {\"$multiply\": [\"$k\", 0.1]}},"
		" \"avg\": {\"$avg\": \"$k\"}, \"n\": {\"$count\": {}}, \"min\": {\"$min\": \"$_id\"},"
		" \"max\": {\"$max\": \"$_id\"}, \"first\": {\"$first\": \"$_id\"}, \"last\": {\"$last\": \"$_id\"},"
		" \"push\": {\"$push\": \"$_id\"}, \"set\": {\"$addToSet\": {\"$mod\": [\"$_id\", 7]}},"
		" \"mo\": {\"$mergeObjects\": {\"$arrayToObject\": [[[{\"$toString\": {\"$mod\": [\"$_id\", 4]}}, \"$_id\"]]]}},"
		" \"sdp\": {\"$stdDevPop\": \"$k\"}, \"sds\": {\"$stdDevSamp\": \"$_id\"},"
		" \"fn\": {\"$firstN\": {\"input\": \"$_id\", \"n\": 3}}, \"ln\": {\"$lastN\": {\"input\": \"$_id\", \"n\": 3}},"
		" \"mxn\": {\"$maxN\": {\"input\": \"$_id\", \"n\": 2}}, \"mnn\": {\"$minN\": {\"input\": \"$_id\", \"n\": 2}},"
		" \"top\": {\"$top\": {\"sortBy\": {\"k\": -1}, \"output\": \"$_id\"}},"
		" \"bot\": {\"$bottom\": {\"sortBy\": {\"k\": -1}, \"output\": [\"$_id\", \"$k\"]}},"
		" \"topn\": {\"$topN\": {\"sortBy\": {\"_id\": 1}, \"output\": \"$k\", \"n\": 2}},"
		" \"botn\": {\"$bottomN\": {\"sortBy\": {\"_id\": 1}, \"output\": \"$k\", \"n\": 2}},"
		" \"med\": {\"$median\": {\"input\": \"$k\", \"method\": \"approximate\"}},"
		" \"pct\": {\"$percentile\": {\"input\": \"$_id\", \"p\": [0.1, 0.9], \"method\": \"approximate\"}}}},"
		/* partial variances merge with rounding in the last bits */
		" {\"$set\": {\"sdp\": {\"$round\": [\"$sdp\", 9]}, \"sds\": {\"$round\": [\"$sds\", 9]}}},"
		" {\"$sort\": {\"_id\": 1}}]",
		/* array and document keys, a missing key (null) */
		"[{\"$group\": {\"_id\": [{\"$mod\": [\"$_id\", 5]}, {\"a\": {\"$mod\": [\"$k\", 3]}}],"
		" \"ids\": {\"$push\": \"$_id\"}}}, {\"$sort\": {\"ids\": 1}}]",
		"[{\"$group\": {\"_id\": \"$nosuch\", \"ids\": {\"$push\": \"$_id\"}, \"n\": {\"$sum\": 1}}}]",
	};

	for (size_t i = 0; i < sizeof pipelines / sizeof pipelines[0]; i++)
		spills_like_memory(pipelines[i], "internalDocumentSourceGroupMaxMemoryBytes",
		    "Executor error during aggregate command on namespace: s.c :: caused by :: Exceeded memory limit for $group, but "
		    "didn't allow external sort. Pass allowDiskUse:true to opt in.");
	/* spilled output comes in key order; the first spelling of a key wins */
	set_group_limit(4096);
	{
		char *got = reply_json("{\"aggregate\": \"c\", \"pipeline\": [{\"$group\": {\"_id\": {\"$cond\": [{\"$lt\": [\"$_id\", 150]},"
		                       " {\"$toDouble\": {\"$mod\": [\"$k\", 5]}}, {\"$mod\": [\"$k\", 5]}]}, \"n\": {\"$sum\": 1},"
		                       " \"p\": {\"$push\": \"$pad\"}}}, {\"$project\": {\"n\": 1}}], \"cursor\": {}}");
		TT_EQ_STR(got, "{ \"0\" : { \"_id\" : { \"$numberDouble\" : \"0.0\" }, \"n\" : { \"$numberInt\" : \"60\" } }, "
		               "\"1\" : { \"_id\" : { \"$numberDouble\" : \"1.0\" }, \"n\" : { \"$numberInt\" : \"60\" } }, "
		               "\"2\" : { \"_id\" : { \"$numberDouble\" : \"2.0\" }, \"n\" : { \"$numberInt\" : \"60\" } }, "
		               "\"3\" : { \"_id\" : { \"$numberDouble\" : \"3.0\" }, \"n\" : { \"$numberInt\" : \"60\" } }, "
		               "\"4\" : { \"_id\" : { \"$numberDouble\" : \"4.0\" }, \"n\" : { \"$numberInt\" : \"60\" } } }");
		bson_free(got);
	}
	set_group_limit(100LL * 1024 * 1024);
}

/* $bucketAuto sorts on the same sorter: past
 * internalDocumentSourceBucketAutoMaxMemoryBytes it spills, with the
 * buckets it makes in memory; 292 without disk use. */
static void
test_bucket_auto_spills(void)
{
	static const char *const pipelines[] = {
		"[{\"$bucketAuto\": {\"groupBy\": {\"$mod\": [\"$k\", 50]}, \"buckets\": 7,"
		" \"output\": {\"ids\": {\"$push\": \"$_id\"}, \"first\": {\"$first\": \"$_id\"}, \"n\": {\"$sum\": 1}}}}]",
		"[{\"$bucketAuto\": {\"groupBy\": \"$k\", \"buckets\": 1000}}]",
		"[{\"$bucketAuto\": {\"groupBy\": \"$nosuch\", \"buckets\": 3}}]",
	};

	for (size_t i = 0; i < sizeof pipelines / sizeof pipelines[0]; i++)
		spills_like_memory(pipelines[i], "internalDocumentSourceBucketAutoMaxMemoryBytes",
		    "Executor error during aggregate command on namespace: s.c :: caused by :: Sort exceeded memory limit of 4096 bytes, "
		    "but did not opt in to external sorting.");
}

/* setParameter's errors, as mongod's */
static void
test_set_parameter_errors(void)
{
	int rc;
	bson_t *r;

	fails("admin", "{\"setParameter\": 1, \"noSuchThing\": 1}", 72,
	      "attempted to set unrecognized parameter [noSuchThing], use help:true to see options ");
	fails("admin", "{\"setParameter\": 1}", 72, "no option found to set, use help:true to see options ");
	fails("admin", "{\"setParameter\": 1, \"authenticationMechanisms\": \"SCRAM-SHA-256\"}", 20,
	      "not allowed to change [authenticationMechanisms] at runtime");
	fails("admin", "{\"setParameter\": 1, \"quiet\": true}", 238, NULL);
	fails("admin", "{\"setParameter\": 1, \"internalQueryMaxBlockingSortMemoryUsageBytes\": -1}", 2,
	      "Invalid value for parameter internalQueryMaxBlockingSortMemoryUsageBytes: -1 is not greater "
	      "than or equal to 0");
	fails("admin", "{\"setParameter\": 1, \"internalQueryMaxBlockingSortMemoryUsageBytes\": \"a\"}", 2,
	      "Failed validating internalQueryMaxBlockingSortMemoryUsageBytes: Unable to coerce value to "
	      "integral type");
	fails("admin", "{\"setParameter\": 1, \"internalDocumentSourceGroupMaxMemoryBytes\": 0}", 2,
	      "Invalid value for parameter internalDocumentSourceGroupMaxMemoryBytes: 0 is not greater than 0");
	fails("admin", "{\"setParameter\": 1, \"internalQueryMaxBlockingSortMemoryUsageBytes\": 1e12}", 2,
	      "Failed validating internalQueryMaxBlockingSortMemoryUsageBytes: Out of bounds coercing to "
	      "integral value");
	/* an unknown name among known ones: nothing is set */
	fails("admin", "{\"setParameter\": 1, \"allowDiskUseByDefault\": false, \"noSuchThing\": 1}", 72, NULL);
	r = run("admin", "{\"getParameter\": 1, \"allowDiskUseByDefault\": 1, "
	        "\"internalQueryMaxBlockingSortMemoryUsageBytes\": 1}", &rc);
	TT_EQ_JSON(r, "{ \"allowDiskUseByDefault\" : true, \"internalQueryMaxBlockingSortMemoryUsageBytes\" : 32768, \"ok\" : 1.0 }");
	tt_free_reply(r);
	/* a long long parameter answers a NumberLong, an int one an int */
	r = run("admin", "{\"getParameter\": 1, \"internalDocumentSourceGroupMaxMemoryBytes\": 1}", &rc);
	TT_EQ_INT(rc, 0);
	{
		bson_iter_t f;
		TT_ASSERT(tt_get(r, "internalDocumentSourceGroupMaxMemoryBytes", &f) && BSON_ITER_HOLDS_INT64(&f));
	}
	tt_free_reply(r);
	/* only on admin */
	fails("s", "{\"setParameter\": 1, \"allowDiskUseByDefault\": true}", 13, NULL);
}

int
main(void)
{
	int rc;
	bson_t *r;

	dir = tt_tmpdir("spill");
	if ((db = tt_open_new(dir)) == NULL)
		return 1;
	load();
	/* mongod's default, and the knob its own spilling jstests turn */
	r = run("admin", "{\"getParameter\": 1, \"allowDiskUseByDefault\": 1, "
	        "\"internalQueryMaxBlockingSortMemoryUsageBytes\": 1}", &rc);
	TT_EQ_JSON(r, "{ \"allowDiskUseByDefault\" : true, \"internalQueryMaxBlockingSortMemoryUsageBytes\" : 104857600, \"ok\" : 1.0 }");
	tt_free_reply(r);
	r = run("admin", "{\"setParameter\": 1, \"internalQueryMaxBlockingSortMemoryUsageBytes\": 32768}", &rc);
	TT_EQ_JSON(r, "{ \"was\" : 104857600, \"ok\" : 1.0 }");
	tt_free_reply(r);
	TT_RUN(test_default_spills);
	TT_RUN(test_opt_out);
	TT_RUN(test_default_off);
	TT_RUN(test_set_parameter_errors);
	TT_RUN(test_group_spills);
	TT_RUN(test_bucket_auto_spills);
	tt_close_rm(db, dir);
	return tt_finish();
}
