/*
 * test_sort.c -- sort specs, sort keys with arrays/missing/null, the
 * comparator, and the in-memory sorter (order, top-k, memory limit 292).
 */
#include "tt.h"
#include "query/sort.h"

static int
spec_err(const char *json)
{
	bson_t *b = tt_json(json);
	sort_spec_t *s = NULL;
	terr_t err = TERR_INIT;
	int code = 0;

	if (sort_spec_parse(b, &s, &err) != 0)
		code = err.code;
	sort_spec_free(s);
	terr_clear(&err);
	bson_destroy(b);
	return code;
}

static void
test_spec(void)
{
	bson_t *b = tt_json("{\"a\": 1, \"b.c\": -1.0}");
	sort_spec_t *s = NULL;
	terr_t err = TERR_INIT;
	int dir;

	TT_ASSERT(sort_spec_parse(b, &s, &err) == 0);
	TT_EQ_INT(sort_spec_nkeys(s), 2);
	TT_EQ_STR(sort_spec_path(s, 1), "b.c");
	TT_EQ_INT(sort_spec_direction(s, 1), -1);
	TT_ASSERT(!sort_spec_natural(s, &dir));
	sort_spec_free(s);
	bson_destroy(b);
	b = tt_json("{\"$natural\": -1}");
	TT_ASSERT(sort_spec_parse(b, &s, &err) == 0);
	TT_ASSERT(sort_spec_natural(s, &dir) && dir == -1);
	TT_EQ_INT(sort_spec_nkeys(s), 0);
	sort_spec_free(s);
	bson_destroy(b);
	TT_EQ_INT(spec_err("{}"), 0);
	TT_EQ_INT(spec_err("{\"a\": 2}"), 15975);
	TT_EQ_INT(spec_err("{\"a\": \"x\"}"), 15974);
	TT_EQ_INT(spec_err("{\"$a\": 1}"), 16410);
	TT_EQ_INT(spec_err("{\"a..b\": 1}"), 15998);
	TT_EQ_INT(spec_err("{\"a\": {\"$meta\": \"textScore\"}}"), 40218);
	TT_EQ_INT(spec_err("{\"a\": {\"x\": 1}}"), 17312);
	TT_EQ_INT(spec_err("{\"\": 1}"), 40352);
}

/* Sort docs (JSON array) by spec; return the "_id"s joined by commas. */
static const char *
order(const char *spec, const char *docs_json)
{
	static char buf[256];
	bson_t *sb = tt_json(spec), *docs = tt_json(docs_json);
	sort_spec_t *s = NULL;
	terr_t err = TERR_INIT;
	sorter_t *st;
	bson_iter_t it;
	const bson_t *d;
	size_t n = 0;

	buf[0] = '\0';
	if (sort_spec_parse(sb, &s, &err) != 0)
		return "parse error";
	st = sorter_new(s, 0, false, 0);
	bson_iter_init(&it, docs);
	while (bson_iter_next(&it)) {
		const uint8_t *data;
		uint32_t len;
		bson_t doc;

		bson_iter_document(&it, &len, &data);
		bson_init_static(&doc, data, len);
		TT_ASSERT(sorter_add(st, &doc, &err) == 0);
	}
	sorter_finish(st);
	while ((d = sorter_next(st)) != NULL) {
		bson_iter_t id;

		if (bson_iter_init_find(&id, d, "_id"))
			n += (size_t)snprintf(buf + n, sizeof buf - n, "%s%d", n ? "," : "",
			                      bson_iter_int32(&id));
	}
	sorter_free(st);
	sort_spec_free(s);
	bson_destroy(sb);
	bson_destroy(docs);
	return buf;
}

static void
test_order(void)
{
	TT_EQ_STR(order("{\"a\": 1}", "{\"0\": {\"_id\": 1, \"a\": 3}, \"1\": {\"_id\": 2, \"a\": 1.5},"
	                              " \"2\": {\"_id\": 3, \"a\": \"x\"}, \"3\": {\"_id\": 4}}"),
	          "4,2,1,3");
	TT_EQ_STR(order("{\"a\": -1}", "{\"0\": {\"_id\": 1, \"a\": 3}, \"1\": {\"_id\": 2, \"a\": 1.5},"
	                               " \"2\": {\"_id\": 3, \"a\": \"x\"}, \"3\": {\"_id\": 4}}"),
	          "3,1,2,4");
	/* arrays: ascending by smallest element, descending by largest */
	TT_EQ_STR(order("{\"a\": 1}", "{\"0\": {\"_id\": 1, \"a\": [5, 0]}, \"1\": {\"_id\": 2, \"a\": 2},"
	                              " \"2\": {\"_id\": 3, \"a\": [3, 4]}}"),
	          "1,2,3");
	TT_EQ_STR(order("{\"a\": -1}", "{\"0\": {\"_id\": 1, \"a\": [5, 0]}, \"1\": {\"_id\": 2, \"a\": 2},"
	                               " \"2\": {\"_id\": 3, \"a\": [3, 4]}}"),
	          "1,3,2");
	/* empty array sorts before null and missing */
	TT_EQ_STR(order("{\"a\": 1}", "{\"0\": {\"_id\": 1, \"a\": null}, \"1\": {\"_id\": 2, \"a\": []},"
	                              " \"2\": {\"_id\": 3, \"a\": 0}}"),
	          "2,1,3");
	/* sorta.js: MinKey < [] < null = missing < numbers < MaxKey */
	TT_EQ_STR(order("{\"a\": 1, \"_id\": 1}",
	                "{\"0\": {\"_id\": 8, \"a\": {\"$maxKey\": 1}}, \"1\": {\"_id\": 5, \"a\": null},"
	                " \"2\": {\"_id\": 7, \"a\": [2]}, \"3\": {\"_id\": 4}, \"4\": {\"_id\": 2, \"a\": []},"
	                " \"5\": {\"_id\": 6, \"a\": 1}, \"6\": {\"_id\": 0, \"a\": {\"$minKey\": 1}},"
	                " \"7\": {\"_id\": 3, \"a\": null}, \"8\": {\"_id\": 1, \"a\": []}}"),
	          "0,1,2,3,4,5,6,7,8");
	/* sort8.js / min element: [2, 1] < [2, 3] < [2, 4] */
	TT_EQ_STR(order("{\"a\": 1}", "{\"0\": {\"_id\": 2, \"a\": [2, 3]}, \"1\": {\"_id\": 3, \"a\": [2, 4]},"
	                              " \"2\": {\"_id\": 4, \"a\": [2, 1]}}"),
	          "4,2,3");
	/* dotted through arrays, compound with tie-break */
	TT_EQ_STR(order("{\"a.b\": 1, \"_id\": -1}",
	                "{\"0\": {\"_id\": 1, \"a\": [{\"b\": 2}, {\"b\": 9}]}, \"1\": {\"_id\": 2, \"a\": {\"b\": 2}},"
	                " \"2\": {\"_id\": 3, \"a\": {\"b\": 1}}}"),
	          "3,2,1");
	/* numbers across types */
	TT_EQ_STR(order("{\"a\": 1}", "{\"0\": {\"_id\": 1, \"a\": {\"$numberLong\": \"3\"}},"
	                              " \"1\": {\"_id\": 2, \"a\": 2.5}, \"2\": {\"_id\": 3, \"a\": {\"$numberDecimal\": \"2.6\"}}}"),
	          "2,3,1");
}

static void
test_topk_and_limit(void)
{
	bson_t *spec = tt_json("{\"v\": -1}");
	sort_spec_t *s = NULL;
	terr_t err = TERR_INIT;
	sorter_t *st;
	const bson_t *d;
	int expect = 999, n = 0;

	TT_ASSERT(sort_spec_parse(spec, &s, &err) == 0);
	st = sorter_new(s, 5, false, 0);
	for (int i = 0; i < 1000; i++) {
		bson_t *doc = bson_new();

		BSON_APPEND_INT32(doc, "v", (i * 7919) % 1000);
		TT_ASSERT(sorter_add(st, doc, &err) == 0);
		bson_destroy(doc);
	}
	sorter_finish(st);
	while ((d = sorter_next(st)) != NULL) {
		bson_iter_t it;

		TT_ASSERT(bson_iter_init_find(&it, d, "v") && bson_iter_int32(&it) == expect);
		expect--;
		n++;
	}
	TT_EQ_INT(n, 5);
	sorter_free(st);

	/* memory limit: 292 without allowDiskUse, 238 with */
	for (int disk = 0; disk < 2; disk++) {
		int code = 0;

		st = sorter_new(s, 0, disk, 64 * 1024);
		for (int i = 0; i < 10000 && code == 0; i++) {
			bson_t *doc = bson_new();

			BSON_APPEND_INT32(doc, "v", i);
			BSON_APPEND_UTF8(doc, "pad", "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx");
			if (sorter_add(st, doc, &err) != 0)
				code = err.code;
			bson_destroy(doc);
		}
		TT_EQ_INT(code, disk ? 238 : 292);
		if (!disk)
			TT_EQ_STR(err.msg, "Sort exceeded memory limit of 65536 bytes, but did not opt in "
			                   "to external sorting.");
		terr_clear(&err);
		sorter_free(st);
	}
	sort_spec_free(s);
	bson_destroy(spec);
}

/* allowDiskUse with a spill directory: many small runs merged in order,
 * limit honoured, equal keys stay in insertion order. */
static void
test_spill(void)
{
	bson_t *spec = tt_json("{\"v\": 1}");
	sort_spec_t *s = NULL;
	terr_t err = TERR_INIT;
	char *dir = tt_tmpdir("sort");
	sorter_t *st;
	const bson_t *d;
	int prev_v = -1, prev_i = -1, n = 0, ok = 1;

	TT_ASSERT(sort_spec_parse(spec, &s, &err) == 0);
	st = sorter_new(s, 0, true, 16 * 1024);
	sorter_set_spill_dir(st, dir);
	for (int i = 0; i < 3000; i++) {
		bson_t *doc = bson_new();

		BSON_APPEND_INT32(doc, "v", (i * 7919) % 500);
		BSON_APPEND_INT32(doc, "i", i);
		if (sorter_add(st, doc, &err) != 0)
			ok = 0;
		bson_destroy(doc);
	}
	TT_ASSERT(ok);
	TT_ASSERT(sorter_spilled(st));
	TT_ASSERT(sorter_finish_ex(st, &err) == 0);
	while ((d = sorter_next(st)) != NULL) {
		bson_iter_t it;
		int v, i;

		bson_iter_init_find(&it, d, "v");
		v = bson_iter_int32(&it);
		bson_iter_init_find(&it, d, "i");
		i = bson_iter_int32(&it);
		if (v < prev_v || (v == prev_v && i < prev_i))
			ok = 0;
		prev_v = v;
		prev_i = i;
		n++;
	}
	TT_ASSERT(ok);
	TT_EQ_INT(n, 3000);
	sorter_free(st);

	/* with a limit */
	st = sorter_new(s, 0, true, 8 * 1024);
	sorter_set_spill_dir(st, dir);
	for (int i = 0; i < 1000; i++) {
		bson_t *doc = bson_new();

		BSON_APPEND_INT32(doc, "v", 1000 - i);
		TT_ASSERT(sorter_add(st, doc, &err) == 0);
		bson_destroy(doc);
	}
	TT_ASSERT(sorter_finish_ex(st, &err) == 0);
	d = sorter_next(st);
	TT_ASSERT(d != NULL);
	if (d != NULL) {
		bson_iter_t it;

		TT_ASSERT(bson_iter_init_find(&it, d, "v") && bson_iter_int32(&it) == 1);
	}
	sorter_free(st);
	sort_spec_free(s);
	bson_destroy(spec);
	tt_rmdir(dir);
	bson_free(dir);
}

static void
test_compare_docs(void)
{
	bson_t *spec = tt_json("{\"a\": 1}");
	bson_t *x = tt_json("{\"a\": [1, 10]}"), *y = tt_json("{\"a\": 5}");
	sort_spec_t *s = NULL;
	terr_t err = TERR_INIT;

	TT_ASSERT(sort_spec_parse(spec, &s, &err) == 0);
	TT_ASSERT(sort_compare_docs(s, x, y) < 0);
	TT_ASSERT(sort_compare_docs(s, y, x) > 0);
	TT_ASSERT(sort_compare_docs(s, x, x) == 0);
	sort_spec_free(s);
	bson_destroy(spec);
	bson_destroy(x);
	bson_destroy(y);
}

int
main(void)
{
	TT_RUN(test_spec);
	TT_RUN(test_order);
	TT_RUN(test_topk_and_limit);
	TT_RUN(test_compare_docs);
	TT_RUN(test_spill);
	return tt_finish();
}
