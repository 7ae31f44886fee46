/*
 * test_scan_batch.c -- the batch lane of a collection scan (issue 23):
 * storage_cursor_next_view (WiredTiger's bytes lent, no copy) must give
 * exactly storage_cursor_next's documents in the same order, forward and
 * backward, on plain and clustered collections, across a commit on the
 * session and a save/restore; plan_exec_next_batch must hand a sink exactly
 * what plan_exec_next returns (filter, skip, limit, projection, sorts and
 * index scans through the per-document path) with the same counters,
 * however often the sink stops it, with save/restore between calls (what
 * getMore does), and pass a sink's failure through untouched; find and
 * getMore through the engine keep their batches, limits and the 16 MiB cut.
 */
#include "tt.h"
#include "tt_embedded.h"

#include "commands/commands_private.h"
#include "common/doc_sink.h"
#include "common/mem.h"
#include "query/keygen.h"
#include "query/plan.h"

static engine_t *eng;
static client_t *cl;

static bson_t *
run(const char *json, int *rc)
{
	bson_t *cmd = tt_json(json);
	bson_t *reply = tm_bson_array_new(1);

	*rc = engine_run_command(eng, cl, "test", cmd, reply, NULL);
	bson_destroy(cmd);
	return reply;
}

static void
ok(const char *json)
{
	int rc;
	bson_t *r = run(json, &rc);

	if (rc != 0) {
		char *j = bson_as_relaxed_extended_json(r, NULL);
		fprintf(stderr, "%s -> %s\n", json, j);
		bson_free(j);
	}
	TT_EQ_INT(rc, 0);
	tt_free_reply(r);
}

/* n documents {_id: i, a: i % 7, s: <i % 50 x's>, arr: [i, i + 1]} into
 * coll, then every 5th removed (gaps in the RecordIds). */
static void
fill(const char *coll, int n)
{
	for (int base = 0; base < n; base += 100) {
		bson_string_t *q = bson_string_new("");
		bson_string_append_printf(q, "{\"insert\": \"%s\", \"documents\": [", coll);
		for (int i = base; i < n && i < base + 100; i++) {
			char s[64];
			memset(s, 'x', (size_t)(i % 50));
			s[i % 50] = '\0';
			bson_string_append_printf(q, "%s{\"_id\": %d, \"a\": %d, \"s\": \"%s\", \"arr\": [%d, %d]}",
			    i > base ? ", " : "", i, i % 7, s, i, i + 1);
		}
		bson_string_append(q, "]}");
		ok(q->str);
		bson_string_free(q, true);
	}
	{
		char q[200];
		snprintf(q, sizeof q, "{\"delete\": \"%s\", \"deletes\": [{\"q\": {\"_id\": {\"$mod\": [5, 0]}}, \"limit\": 0}]}",
		    coll);
		ok(q);
	}
}

/* ---- storage: next_view against next ------------------------------------ */

/* The scan's documents as relaxed JSON joined by '\n', read with next_view
 * when view (else next); with commit_every > 0 the reading runs in a
 * transaction committed (and begun again) every commit_every documents,
 * with save_every > 0 the cursor is saved and restored as often. */
static char *
scan_text(const char *coll, bool backward, bool view, int commit_every, int save_every)
{
	terr_t err = TERR_INIT;
	storage_session_t *s = client_session(cl, &err);
	storage_coll_t *c = NULL;
	storage_cursor_t *cur = NULL;
	bson_string_t *out = bson_string_new("");
	int n = 0, rc;

	TT_EQ_INT(storage_coll_get(engine_storage(eng), "test", coll, &c, &err), 0);
	if (commit_every > 0)
		TT_EQ_INT(storage_txn_begin(s, &err), 0);
	TT_EQ_INT(storage_scan_open(s, c, backward, &cur, &err), 0);
	for (;;) {
		bson_t doc;
		char *j;
		if (view) {
			const uint8_t *data;
			uint32_t len;
			rc = storage_cursor_next_view(cur, &data, &len, &err);
			if (rc == 1)
				TT_ASSERT(bson_init_static(&doc, data, len));
		} else {
			rc = storage_cursor_next(cur, NULL, &doc, NULL, NULL, &err);
		}
		if (rc != 1)
			break;
		j = bson_as_relaxed_extended_json(&doc, NULL);
		bson_string_append_printf(out, "%s\n", j);
		bson_free(j);
		n++;
		if (commit_every > 0 && n % commit_every == 0) {
			TT_EQ_INT(storage_txn_commit(s, false, &err), 0);
			TT_EQ_INT(storage_txn_begin(s, &err), 0);
		}
		if (save_every > 0 && n % save_every == 0) {
			TT_EQ_INT(storage_cursor_save(cur, &err), 0);
			TT_EQ_INT(storage_cursor_restore(cur, s, &err), 0);
		}
	}
	TT_EQ_INT(rc, 0);
	if (rc < 0)
		fprintf(stderr, "scan: %s\n", err.msg);
	/* the end stays the end */
	{
		const uint8_t *data;
		uint32_t len;
		TT_EQ_INT(storage_cursor_next_view(cur, &data, &len, &err), 0);
	}
	storage_cursor_close(cur);
	if (commit_every > 0)
		TT_EQ_INT(storage_txn_commit(s, false, &err), 0);
	storage_coll_release(c);
	terr_clear(&err);
	return bson_string_free(out, false);
}

static void
expect_same_scan(const char *coll, bool backward, int commit_every, int save_every, int want_docs)
{
	char *a = scan_text(coll, backward, false, 0, 0);
	char *b = scan_text(coll, backward, true, commit_every, save_every);
	int lines = 0;

	for (const char *p = a; *p; p++)
		lines += *p == '\n';
	TT_EQ_INT(lines, want_docs);
	if (strcmp(a, b) != 0)
		fprintf(stderr, "next_view differs (%s backward=%d commit=%d save=%d)\n", coll, backward, commit_every,
		    save_every);
	TT_ASSERT(strcmp(a, b) == 0);
	bson_free(a);
	bson_free(b);
}

static void
test_view_equals_next(void)
{
	ok("{\"create\": \"plain\"}");
	fill("plain", 500);
	for (int bw = 0; bw < 2; bw++) {
		expect_same_scan("plain", bw, 0, 0, 400);
		expect_same_scan("plain", bw, 7, 0, 400);    /* a commit resets the cursor: repositioned */
		expect_same_scan("plain", bw, 0, 13, 400);   /* save/restore between documents */
		expect_same_scan("plain", bw, 3, 11, 400);
	}
}

static void
test_view_clustered(void)
{
	ok("{\"create\": \"clu\", \"clusteredIndex\": {\"key\": {\"_id\": 1}, \"unique\": true}}");
	fill("clu", 300);
	for (int bw = 0; bw < 2; bw++) {
		expect_same_scan("clu", bw, 0, 0, 240);
		expect_same_scan("clu", bw, 5, 9, 240);
	}
}

static void
test_view_empty(void)
{
	ok("{\"create\": \"empty\"}");
	expect_same_scan("empty", false, 0, 0, 0);
	expect_same_scan("empty", true, 0, 0, 0);
}

/* ---- the plan: next_batch against next ---------------------------------- */

/* A sink that keeps each document as JSON, stops every stop_every
 * documents (0: never), and fails with code 4242 at document fail_at
 * (0: never). */
typedef struct text_sink {
	doc_sink_t sink;
	bson_string_t *out;
	int n, stop_every, fail_at;
} text_sink_t;

static int
text_take(doc_sink_t *sink, const uint8_t *data, uint32_t len, terr_t *err)
{
	text_sink_t *t = (text_sink_t *)sink;
	bson_t doc;
	char *j;

	TT_ASSERT(bson_init_static(&doc, data, len));
	t->n++;
	if (t->fail_at > 0 && t->n == t->fail_at)
	{
		terr_set(err, 4242, "the sink failed at %d", t->n);
		return DOC_SINK_FAILED;
	}
	j = bson_as_relaxed_extended_json(&doc, NULL);
	bson_string_append_printf(t->out, "%s\n", j);
	bson_free(j);
	return t->stop_every > 0 && t->n % t->stop_every == 0 ? DOC_SINK_FULL : DOC_SINK_MORE;
}

typedef struct q {
	const char *filter, *sort, *proj;
	int64_t skip, limit;
	bool backward;
} q_t;

static plan_exec_t *
plan_for(const char *coll, const q_t *q, bson_t **keep)
{
	plan_request_t req;
	plan_exec_t *x = NULL;
	terr_t err = TERR_INIT;

	memset(&req, 0, sizeof req);
	storage_coll_get(engine_storage(eng), "test", coll, &req.coll, NULL);   /* NULL: no such collection */
	keep[0] = q->filter ? tt_json(q->filter) : NULL;
	keep[1] = q->sort ? tt_json(q->sort) : NULL;
	keep[2] = q->proj ? tt_json(q->proj) : NULL;
	if (keep[0] != NULL)
		TT_EQ_INT(match_compile(keep[0], NULL, &req.match, &err), 0);
	req.filter = keep[0];
	req.sort = keep[1];
	req.projection = keep[2];
	req.skip = q->skip;
	req.limit = q->limit;
	req.natural_backward = q->backward;
	if (plan_exec_new(&req, &x, &err) != 0)
		fprintf(stderr, "plan_exec_new: %s\n", err.msg);
	TT_ASSERT(x != NULL);
	terr_clear(&err);
	return x;
}

static void
keep_free(bson_t **keep)
{
	for (int i = 0; i < 3; i++)
		if (keep[i] != NULL)
			bson_destroy(keep[i]);
}

/* plan_exec_next's results; the counters in *st. */
static char *
by_next(const char *coll, const q_t *q, plan_stats_t *st)
{
	bson_t *keep[3];
	plan_exec_t *x = plan_for(coll, q, keep);
	terr_t err = TERR_INIT;
	storage_session_t *s = client_session(cl, &err);
	bson_string_t *out = bson_string_new("");
	bson_t doc;
	int rc;

	while ((rc = plan_exec_next(x, s, &doc, &err)) == 1) {
		char *j = bson_as_relaxed_extended_json(&doc, NULL);
		bson_string_append_printf(out, "%s\n", j);
		bson_free(j);
	}
	TT_EQ_INT(rc, 0);
	*st = *plan_exec_stats(x);
	plan_exec_free(x);
	keep_free(keep);
	terr_clear(&err);
	return bson_string_free(out, false);
}

/* plan_exec_next_batch's, the sink stopping every stop_every documents
 * and the plan saved and restored between calls when save. */
static char *
by_batch(const char *coll, const q_t *q, int stop_every, bool save, plan_stats_t *st)
{
	bson_t *keep[3];
	plan_exec_t *x = plan_for(coll, q, keep);
	terr_t err = TERR_INIT;
	storage_session_t *s = client_session(cl, &err);
	text_sink_t t = {.sink = {.take = text_take}, .out = bson_string_new(""), .stop_every = stop_every};
	int rc, calls = 0;

	while ((rc = plan_exec_next_batch(x, s, &t.sink, &err)) == DOC_SINK_FULL) {
		calls++;
		if (save) {
			TT_EQ_INT(plan_exec_save(x, &err), 0);
			TT_EQ_INT(plan_exec_restore(x, s, &err), 0);
		}
	}
	TT_EQ_INT(rc, 0);
	/* the end stays the end */
	TT_EQ_INT(plan_exec_next_batch(x, s, &t.sink, &err), 0);
	if (stop_every > 0)
		TT_EQ_INT(calls, t.n / stop_every);
	*st = *plan_exec_stats(x);
	plan_exec_free(x);
	keep_free(keep);
	terr_clear(&err);
	return bson_string_free(t.out, false);
}

static void
expect_same_plan(const char *coll, const q_t *q, int want)
{
	plan_stats_t a, b;
	char *one = by_next(coll, q, &a);
	int lines = 0;

	for (const char *p = one; *p; p++)
		lines += *p == '\n';
	if (want >= 0)
		TT_EQ_INT(lines, want);
	for (int stop = 0; stop <= 64; stop = stop == 0 ? 1 : stop * 8) {
		for (int save = 0; save < 2; save++) {
			char *two = by_batch(coll, q, stop, save, &b);
			if (strcmp(one, two) != 0)
				fprintf(stderr, "batch differs: filter %s sort %s proj %s skip %lld limit %lld stop %d save %d\n",
				    q->filter ? q->filter : "-", q->sort ? q->sort : "-", q->proj ? q->proj : "-",
				    (long long)q->skip, (long long)q->limit, stop, save);
			TT_ASSERT(strcmp(one, two) == 0);
			TT_EQ_INT(a.docs_examined, b.docs_examined);
			TT_EQ_INT(a.keys_examined, b.keys_examined);
			TT_EQ_INT(a.returned, b.returned);
			TT_EQ_INT(a.access_returned, b.access_returned);
			TT_EQ_STR(a.stage, b.stage);
			bson_free(two);
		}
	}
	bson_free(one);
}

static void
test_batch_equals_next(void)
{
	static const q_t qs[] = {
		{0},
		{.backward = true},
		{.filter = "{\"a\": 3}"},
		{.filter = "{\"a\": {\"$gte\": 2}, \"s\": {\"$regex\": \"^xx\"}}", .backward = true},
		{.skip = 5, .limit = 10},
		{.filter = "{\"a\": {\"$ne\": 1}}", .skip = 17, .limit = 0},
		{.limit = 1},
		{.skip = 1000},
		{.proj = "{\"a\": 1}"},
		{.proj = "{\"s\": 0, \"arr\": 0}", .filter = "{\"a\": 4}", .limit = 9},
		{.proj = "{\"arr.$\": 1}", .filter = "{\"arr\": {\"$gte\": 100}}"},   /* positional: the match's position */
		{.proj = "{\"x\": {\"$add\": [\"$a\", 1]}}", .skip = 3},
		{.sort = "{\"a\": -1, \"_id\": 1}", .limit = 20},            /* a blocking sort: per document inside */
		{.sort = "{\"a\": 1, \"_id\": 1}", .filter = "{\"a\": {\"$lt\": 3}}", .proj = "{\"_id\": 1}"},
	};
	ok("{\"create\": \"pl\"}");
	fill("pl", 400);
	for (size_t i = 0; i < sizeof qs / sizeof qs[0]; i++)
		expect_same_plan("pl", &qs[i], -1);
	{
		q_t all = {0};
		expect_same_plan("pl", &all, 320);
	}
	/* an index scan: the per-document path inside, the same answers */
	ok("{\"createIndexes\": \"pl\", \"indexes\": [{\"key\": {\"a\": 1}, \"name\": \"a_1\"}]}");
	{
		q_t ix = {.filter = "{\"a\": 5}"};
		q_t range = {.filter = "{\"a\": {\"$gt\": 4}}", .skip = 2, .limit = 30};
		expect_same_plan("pl", &ix, -1);
		expect_same_plan("pl", &range, -1);
	}
	/* a collection that does not exist: nothing, at once */
	{
		q_t none = {0};
		expect_same_plan("nosuch", &none, 0);
	}
}

static void
test_batch_clustered(void)
{
	q_t all = {0}, f = {.filter = "{\"a\": 2}", .backward = true, .limit = 11};

	ok("{\"create\": \"pclu\", \"clusteredIndex\": {\"key\": {\"_id\": 1}, \"unique\": true}}");
	fill("pclu", 250);
	expect_same_plan("pclu", &all, 200);
	expect_same_plan("pclu", &f, 11);
}

/* The sink's failure comes back as it is (DOC_SINK_FAILED, its code and
 * message), not as the plan's. */
static void
test_sink_failure(void)
{
	q_t q = {.filter = "{\"a\": {\"$gte\": 0}}"}, srt = {.sort = "{\"a\": 1}"};
	const q_t *both[] = {&q, &srt};

	for (int k = 0; k < 2; k++) {
		bson_t *keep[3];
		plan_exec_t *x = plan_for("pl", both[k], keep);
		terr_t err = TERR_INIT;
		storage_session_t *s = client_session(cl, &err);
		text_sink_t t = {.sink = {.take = text_take}, .out = bson_string_new(""), .fail_at = 4};

		TT_EQ_INT(plan_exec_next_batch(x, s, &t.sink, &err), DOC_SINK_FAILED);
		TT_EQ_INT(err.code, 4242);
		TT_EQ_STR(err.msg, "the sink failed at 4");
		TT_EQ_INT(t.n, 4);
		plan_exec_free(x);
		keep_free(keep);
		terr_clear(&err);
		bson_string_free(t.out, true);
	}
}

/* ---- find and getMore through the engine --------------------------------- */

/* Every document of a find (batchSize bs, limit lim) through its getMores:
 * how many, and the sum of their _ids; the number of batches in *batches. */
static int64_t
drain(const char *coll, int bs, int lim, int64_t *id_sum, int *batches)
{
	char q[300];
	int rc;
	bson_t *r;
	int64_t n = 0, id = 0;

	*id_sum = 0;
	*batches = 0;
	if (lim > 0)
		snprintf(q, sizeof q, "{\"find\": \"%s\", \"batchSize\": %d, \"limit\": %d}", coll, bs, lim);
	else
		snprintf(q, sizeof q, "{\"find\": \"%s\", \"batchSize\": %d}", coll, bs);
	r = run(q, &rc);
	TT_EQ_INT(rc, 0);
	for (;;) {
		bson_iter_t it, b, d;
		const char *name = n == 0 && *batches == 0 ? "cursor.firstBatch" : "cursor.nextBatch";
		(*batches)++;
		TT_ASSERT(bson_iter_init(&it, r) && bson_iter_find_descendant(&it, name, &b) &&
		    bson_iter_recurse(&b, &d));
		while (bson_iter_next(&d)) {
			bson_iter_t f;
			n++;
			if (BSON_ITER_HOLDS_DOCUMENT(&d) && bson_iter_recurse(&d, &f) && bson_iter_find(&f, "_id"))
				*id_sum += bson_iter_as_int64(&f);
		}
		TT_ASSERT(bson_iter_init(&it, r) && bson_iter_find_descendant(&it, "cursor.id", &b));
		id = bson_iter_as_int64(&b);
		tt_free_reply(r);
		if (id == 0)
			break;
		snprintf(q, sizeof q, "{\"getMore\": %lld, \"collection\": \"%s\", \"batchSize\": %d}", (long long)id, coll,
		    bs);
		r = run(q, &rc);
		TT_EQ_INT(rc, 0);
	}
	return n;
}

static void
test_find_getmore(void)
{
	int64_t sum, want_sum = 0;
	int batches;

	for (int i = 0; i < 400; i++)
		if (i % 5 != 0)
			want_sum += i;
	TT_EQ_INT(drain("pl", 7, 0, &sum, &batches), 320);
	TT_EQ_INT(sum, want_sum);
	TT_EQ_INT(batches, 46);                   /* 45 full batches of 7, then 5 and the end */
	TT_EQ_INT(drain("pl", 100, 250, &sum, &batches), 250);
	TT_EQ_INT(batches, 3);                    /* the limit ends the cursor with its last batch */
	TT_EQ_INT(drain("pl", 320, 0, &sum, &batches), 320);
	TT_EQ_INT(batches, 2);                    /* a full batch does not know it was the last */
	TT_EQ_INT(drain("pl", 1000, 0, &sum, &batches), 320);
	TT_EQ_INT(batches, 1);
	/* the smallest documents a batch takes ({}: 5 bytes, after one-digit
	 * to three-digit indexes): the index's 8-byte store stays inside the
	 * room the document and the array's end leave (ASan watches) */
	for (int bs = 1; bs <= 1000; bs = bs * 10) {
		char q[200];
		int rc;
		bson_t *r;
		bson_iter_t it, b;
		uint32_t len = 0;
		const uint8_t *arr;
		snprintf(q, sizeof q, "{\"find\": \"pl\", \"projection\": {\"_id\": 0, \"zz\": 1}, \"batchSize\": %d}", bs);
		r = run(q, &rc);
		TT_EQ_INT(rc, 0);
		TT_ASSERT(bson_iter_init(&it, r) && bson_iter_find_descendant(&it, "cursor.firstBatch", &b));
		bson_iter_array(&b, &len, &arr);
		/* 5 bytes of array, then per document type + key + NUL + 5 */
		{
			uint32_t want = 5;
			for (int i = 0; i < bs && i < 320; i++)
				want += 1 + (i < 10 ? 1 : i < 100 ? 2 : 3) + 1 + 5;
			TT_EQ_INT(len, want);
		}
		tt_free_reply(r);
	}
}

/* Documents of ~3 MiB: a batch stops before 16 MiB, the document that did
 * not fit starts the next one. */
static void
test_find_16mb_cut(void)
{
	size_t big = 3 * 1024 * 1024;
	char *s = bson_malloc(big + 1);
	int64_t sum;
	int batches;

	memset(s, 'y', big);
	s[big] = '\0';
	ok("{\"create\": \"big\"}");
	for (int i = 0; i < 12; i++) {
		bson_t *cmd = bson_new(), arr, d;
		bson_t *reply = tm_bson_array_new(1);
		BSON_APPEND_UTF8(cmd, "insert", "big");
		BSON_APPEND_ARRAY_BEGIN(cmd, "documents", &arr);
		BSON_APPEND_DOCUMENT_BEGIN(&arr, "0", &d);
		BSON_APPEND_INT32(&d, "_id", i);
		BSON_APPEND_UTF8(&d, "s", s);
		bson_append_document_end(&arr, &d);
		bson_append_array_end(cmd, &arr);
		TT_EQ_INT(engine_run_command(eng, cl, "test", cmd, reply, NULL), 0);
		bson_destroy(cmd);
		tt_free_reply(reply);
	}
	/* 5 documents of 3 MiB fit under 16 MiB, not 6: 5 + 5 + 2 */
	TT_EQ_INT(drain("big", 100, 0, &sum, &batches), 12);
	TT_EQ_INT(sum, 66);
	TT_EQ_INT(batches, 3);
	TT_EQ_INT(drain("big", 100, 7, &sum, &batches), 7);
	TT_EQ_INT(batches, 2);
	bson_free(s);
}

int
main(void)
{
	char *dir = tt_tmpdir("scanbatch");
	engine_options_t o;
	terr_t err = TERR_INIT;

	memset(&o, 0, sizeof(o));
	o.storage.create = true;
	if (engine_open(dir, &o, &eng, &err) != 0) {
		fprintf(stderr, "engine_open: %s\n", err.msg);
		return 1;
	}
	query_keygen_register(engine_storage(eng));
	cl = client_new(eng, NULL);
	TT_RUN(test_view_equals_next);
	TT_RUN(test_view_clustered);
	TT_RUN(test_view_empty);
	TT_RUN(test_batch_equals_next);
	TT_RUN(test_batch_clustered);
	TT_RUN(test_sink_failure);
	TT_RUN(test_find_getmore);
	TT_RUN(test_find_16mb_cut);
	client_free(cl);
	engine_close(eng);
	tt_rmdir(dir);
	bson_free(dir);
	return tt_finish();
}
