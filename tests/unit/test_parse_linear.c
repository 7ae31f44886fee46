/*
 * test_parse_linear.c -- parsing a request is linear in its size: a
 * projection, an update's $set, an aggregation $project / $addFields /
 * $group and filters ($in, $or), each with N fields, through the embedded
 * API; and distinct's dedup of N values (one document's array).
 *
 * Timing without flakiness: the cost is the calling thread's CPU time
 * (the embedded API runs the command in it), which other processes on a
 * loaded machine do not inflate the way they inflate wall time.  Each spec
 * runs at N = 25 000 (the smallest of three runs) and N = 100 000 fields
 * (the smaller of two), and the test asserts that four times the fields cost less than 9
 * times the time: linear work gives about 4, quadratic work 16.  A second,
 * loose check bounds the absolute cost (a 100 000-field spec of ~2 MB in
 * under 3 s of CPU under ASan), so a 16 MB request stays in seconds, not
 * the minutes quadratic parsing took.
 */
#include "tt.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/opctx.h"
#include "tt_embedded.h"

static tamga_t *db;
static char *dir;

typedef void (*build_fn)(bson_t *cmd, int n);

static void
fields_doc(bson_t *parent, const char *key, int n, int kind)
{
	bson_t d;
	char name[32];

	bson_append_document_begin(parent, key, -1, &d);
	for (int i = 0; i < n; i++) {
		snprintf(name, sizeof(name), "f%d", i);
		switch (kind) {
		case 0: BSON_APPEND_INT32(&d, name, 1); break;                 /* inclusion */
		case 1: BSON_APPEND_INT32(&d, name, i); break;                 /* values */
		case 2: {                                                       /* sub-paths */
			snprintf(name, sizeof(name), "a%d.b%d", i % 97, i);
			BSON_APPEND_INT32(&d, name, 1);
			break;
		}
		}
	}
	bson_append_document_end(parent, &d);
}

static void
b_find_projection(bson_t *cmd, int n)
{
	BSON_APPEND_UTF8(cmd, "find", "c");
	fields_doc(cmd, "projection", n, 0);
}

static void
b_find_projection_dotted(bson_t *cmd, int n)
{
	BSON_APPEND_UTF8(cmd, "find", "c");
	fields_doc(cmd, "projection", n, 2);
}

static void
b_find_filter(bson_t *cmd, int n)
{
	BSON_APPEND_UTF8(cmd, "find", "c");
	fields_doc(cmd, "filter", n, 1);
}

/* {a: {$in: [0, 1, ..., n-1]}} */
static void
b_find_in(bson_t *cmd, int n)
{
	bson_t f, a, in;
	char key[16];
	const char *k;

	BSON_APPEND_UTF8(cmd, "find", "c");
	bson_append_document_begin(cmd, "filter", -1, &f);
	bson_append_document_begin(&f, "a", -1, &a);
	bson_append_array_begin(&a, "$in", -1, &in);
	for (int i = 0; i < n; i++) {
		bson_uint32_to_string((uint32_t)i, &k, key, sizeof(key));
		BSON_APPEND_INT32(&in, k, i);
	}
	bson_append_array_end(&a, &in);
	bson_append_document_end(&f, &a);
	bson_append_document_end(cmd, &f);
}

/* {$or: [{f0: 0}, {f1: 1}, ...]} */
static void
b_find_or(bson_t *cmd, int n)
{
	bson_t f, arr, br;
	char key[16], name[32];
	const char *k;

	BSON_APPEND_UTF8(cmd, "find", "c");
	bson_append_document_begin(cmd, "filter", -1, &f);
	bson_append_array_begin(&f, "$or", -1, &arr);
	for (int i = 0; i < n; i++) {
		bson_uint32_to_string((uint32_t)i, &k, key, sizeof(key));
		bson_append_document_begin(&arr, k, -1, &br);
		snprintf(name, sizeof(name), "f%d", i);
		BSON_APPEND_INT32(&br, name, i);
		bson_append_document_end(&arr, &br);
	}
	bson_append_array_end(&f, &arr);
	bson_append_document_end(cmd, &f);
}

static void
b_update_set(bson_t *cmd, int n)
{
	bson_t ups, u, q, set;

	BSON_APPEND_UTF8(cmd, "update", "c");
	bson_append_array_begin(cmd, "updates", -1, &ups);
	bson_append_document_begin(&ups, "0", -1, &u);
	bson_append_document_begin(&u, "q", -1, &q);
	BSON_APPEND_INT32(&q, "_id", -1);   /* matches nothing: parsing is measured */
	bson_append_document_end(&u, &q);
	bson_append_document_begin(&u, "u", -1, &set);
	fields_doc(&set, "$set", n, 1);
	bson_append_document_end(&u, &set);
	bson_append_document_end(&ups, &u);
	bson_append_array_end(cmd, &ups);
}

static void
b_update_set_dotted(bson_t *cmd, int n)
{
	bson_t ups, u, q, set;

	BSON_APPEND_UTF8(cmd, "update", "c");
	bson_append_array_begin(cmd, "updates", -1, &ups);
	bson_append_document_begin(&ups, "0", -1, &u);
	bson_append_document_begin(&u, "q", -1, &q);
	BSON_APPEND_INT32(&q, "_id", -2);
	bson_append_document_end(&u, &q);
	bson_append_document_begin(&u, "u", -1, &set);
	fields_doc(&set, "$set", n, 2);
	bson_append_document_end(&u, &set);
	bson_append_document_end(&ups, &u);
	bson_append_array_end(cmd, &ups);
}

static void
agg_one_stage(bson_t *cmd, const char *stage, int n, int kind)
{
	bson_t p, s;

	BSON_APPEND_UTF8(cmd, "aggregate", "c");
	bson_append_array_begin(cmd, "pipeline", -1, &p);
	bson_append_document_begin(&p, "0", -1, &s);
	fields_doc(&s, stage, n, kind);
	bson_append_document_end(&p, &s);
	bson_append_array_end(cmd, &p);
	{
		bson_t cur;
		bson_append_document_begin(cmd, "cursor", -1, &cur);
		bson_append_document_end(cmd, &cur);
	}
}

static void
b_agg_project(bson_t *cmd, int n)
{
	agg_one_stage(cmd, "$project", n, 0);
}

static void
b_agg_add_fields(bson_t *cmd, int n)
{
	agg_one_stage(cmd, "$addFields", n, 1);
}

static void
b_agg_match(bson_t *cmd, int n)
{
	agg_one_stage(cmd, "$match", n, 1);
}

static void
b_agg_group(bson_t *cmd, int n)
{
	bson_t p, s, g, acc;
	char name[32];

	BSON_APPEND_UTF8(cmd, "aggregate", "c");
	bson_append_array_begin(cmd, "pipeline", -1, &p);
	bson_append_document_begin(&p, "0", -1, &s);
	bson_append_document_begin(&s, "$group", -1, &g);
	BSON_APPEND_NULL(&g, "_id");
	for (int i = 0; i < n; i++) {
		snprintf(name, sizeof(name), "s%d", i);
		bson_append_document_begin(&g, name, -1, &acc);
		BSON_APPEND_INT32(&acc, "$sum", 1);
		bson_append_document_end(&g, &acc);
	}
	bson_append_document_end(&s, &g);
	bson_append_document_end(&p, &s);
	bson_append_array_end(cmd, &p);
	bson_append_document_begin(cmd, "cursor", -1, &acc);
	bson_append_document_end(cmd, &acc);
}

static const struct {
	const char *what;
	build_fn build;
} specs[] = {
	{"find projection", b_find_projection},
	{"find projection, dotted paths", b_find_projection_dotted},
	{"find filter", b_find_filter},
	{"find filter, $in", b_find_in},
	{"find filter, $or", b_find_or},
	{"update $set", b_update_set},
	{"update $set, dotted paths", b_update_set_dotted},
	{"aggregate $project", b_agg_project},
	{"aggregate $addFields", b_agg_add_fields},
	{"aggregate $match", b_agg_match},
	{"aggregate $group", b_agg_group},
};

static int64_t
thread_cpu_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* The smallest of `runs` runs of spec at n fields, in CPU microseconds. */
static int64_t
cost(build_fn build, int n, int runs, const char *what)
{
	int64_t best = INT64_MAX;
	bson_t *cmd = tm_bson_array_new(1);

	bson_init(cmd);
	build(cmd, n);
	for (int r = 0; r < runs; r++) {
		int rc;
		int64_t t0 = thread_cpu_us();
		bson_t *reply = tt_run_bson(db, "pl", cmd, &rc);
		int64_t us = thread_cpu_us() - t0;
		if (rc != 0 && r == 0 && n < 1000)
			TT_FAIL_("%s at %d fields: %s", what, n, tt_get_str(reply, "errmsg"));
		tt_free_reply(reply);
		if (us < best)
			best = us;
	}
	bson_destroy(cmd);
	bson_free(cmd);
	return best;
}

static void
test_linear(void)
{
	/* PARSE_LINEAR_SMALL=n: a quicker probe at n and 4n fields (by hand) */
	const char *env = getenv("PARSE_LINEAR_SMALL");
	const int small = env != NULL ? atoi(env) : 25000, big = 4 * small;

	const char *only = getenv("PARSE_LINEAR_ONLY");   /* one spec by its index (profiling) */

	for (size_t i = 0; i < sizeof(specs) / sizeof(specs[0]); i++) {
		int64_t t0, t1;
		if (only != NULL && (size_t)atoi(only) != i)
			continue;
		(void)cost(specs[i].build, 10, 1, specs[i].what);   /* the spec is valid at all */
		t0 = cost(specs[i].build, small, 3, specs[i].what);
		t1 = cost(specs[i].build, big, 2, specs[i].what);
		printf("  %-32s %7.1f ms at %d, %7.1f ms at %d (x%.1f)\n", specs[i].what, t0 / 1000.0, small,
		    t1 / 1000.0, big, (double)t1 / (double)(t0 > 0 ? t0 : 1));
		fflush(stdout);
		/* 1 ms of slack: tiny costs are all noise */
		if (t1 > 9 * t0 + 1000)
			TT_FAIL_("%s: %lld us at %d fields, %lld us at %d: not linear", specs[i].what, (long long)t0,
			    small, (long long)t1, big);
		if (t1 > 3000000)
			TT_FAIL_("%s: %lld us at %d fields", specs[i].what, (long long)t1, big);
	}
}

/* One document {a: [n distinct values, shuffled, each twice, half as
 * doubles]} in collection coll. */
static void
insert_values(const char *coll, int n)
{
	bson_t *cmd = tm_bson_array_new(1), docs, d, a;
	bson_t *r;
	unsigned seed = 7;
	int *perm = bson_malloc(sizeof(int) * (size_t)n), rc;
	char key[16];
	const char *k;

	for (int i = 0; i < n; i++)
		perm[i] = i;
	for (int i = n - 1; i > 0; i--) {
		int j = (int)(rand_r(&seed) % (unsigned)(i + 1)), t = perm[i];
		perm[i] = perm[j];
		perm[j] = t;
	}
	bson_init(cmd);
	BSON_APPEND_UTF8(cmd, "insert", coll);
	bson_append_array_begin(cmd, "documents", -1, &docs);
	bson_append_document_begin(&docs, "0", -1, &d);
	bson_append_array_begin(&d, "a", -1, &a);
	for (int i = 0; i < 2 * n; i++) {
		int v = perm[i % n];
		bson_uint32_to_string((uint32_t)i, &k, key, sizeof(key));
		if (i >= n && v % 2 == 0)
			BSON_APPEND_DOUBLE(&a, k, (double)v);    /* 4.0 is 4: the same value */
		else
			BSON_APPEND_INT32(&a, k, v);
	}
	bson_append_array_end(&d, &a);
	bson_append_document_end(&docs, &d);
	bson_append_array_end(cmd, &docs);
	r = tt_run_bson(db, "pl", cmd, &rc);
	TT_EQ_INT(rc, 0);
	tt_free_reply(r);
	bson_destroy(cmd);
	bson_free(cmd);
	bson_free(perm);
}

static int64_t
distinct_cost(const char *coll, int n)
{
	char cmd[128];
	int64_t best = INT64_MAX;

	snprintf(cmd, sizeof(cmd), "{'distinct': '%s', 'key': 'a'}", coll);
	for (int r = 0; r < 2; r++) {
		int rc;
		int64_t t0 = thread_cpu_us();
		bson_t *reply = tt_run_sq(db, "pl", cmd, &rc);
		int64_t us = thread_cpu_us() - t0;
		bson_iter_t it, v;
		int i = 0;
		bool sorted = true;
		TT_EQ_INT(rc, 0);
		/* n values, in order, each once */
		if (tt_get(reply, "values", &it) && bson_iter_recurse(&it, &v))
			while (bson_iter_next(&v)) {
				if (bson_iter_as_int64(&v) != i)
					sorted = false;
				i++;
			}
		TT_EQ_INT(i, n);
		TT_ASSERT(sorted);
		tt_free_reply(reply);
		if (us < best)
			best = us;
	}
	return best;
}

/* distinct dedups n values in O(n log^2 n) (sorted runs), not by sorted
 * insertion (O(n^2) moves: minutes for a million values) */
static void
test_distinct_linear(void)
{
	int64_t t0, t1;

	insert_values("d_small", 25000);
	insert_values("d_big", 100000);
	t0 = distinct_cost("d_small", 25000);
	t1 = distinct_cost("d_big", 100000);
	printf("  %-32s %7.1f ms at %d, %7.1f ms at %d (x%.1f)\n", "distinct values", t0 / 1000.0, 25000,
	    t1 / 1000.0, 100000, (double)t1 / (double)(t0 > 0 ? t0 : 1));
	if (t1 > 9 * t0 + 1000)
		TT_FAIL_("distinct: %lld us at 25000 values, %lld us at 100000", (long long)t0, (long long)t1);
}

int
main(void)
{
	int rc;
	bson_t *r;

	dir = tt_tmpdir("parse_linear");
	db = tt_open_new(dir);
	if (db == NULL)
		return 1;
	r = tt_run_sq(db, "pl", "{'insert': 'c', 'documents': [{'_id': 1}, {'_id': 2}]}", &rc);
	TT_EQ_INT(rc, 0);
	tt_free_reply(r);
	TT_RUN(test_linear);
	TT_RUN(test_distinct_linear);
	tt_close_rm(db, dir);
	return tt_finish();
}
